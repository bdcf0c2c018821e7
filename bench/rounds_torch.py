#!/usr/bin/env python3
"""rounds_torch.py: cells whose hoisted linear reads more than x, on the fused
path against what a PyTorch user runs for them today.

preln (tests/data/cells/preln.cell) is an LSTM over layernorm(x): in PyTorch
nn.LayerNorm then nn.LSTM (cuDNN).  chain is a GRU over tanh(x W1^T + b1):
nn.Linear, tanh, nn.GRU.  Both sides in fp32 without TF32, on the same
weights and input; the fused model's output is checked against PyTorch's
(max |out - ref| / max |ref|) and both are timed with CUDA events (median
of --iters after --warmup), each call through its Python API.  With
--training each side runs a training step instead (the forward and the
backward of a seeded dy), and dx and every weight's gradient are compared
too (the fused backward's row cell makes preln's, docs/training.md).

    PYTHONPATH=build-gpu/python python3 bench/rounds_torch.py [--training] [--json out.json]"""
import argparse
import json
import os
import statistics
import sys

import torch

import rnnc

CELLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "cells")


def median_ms(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def preln(I, H):
    """The fused model, the PyTorch function, and each rnnc weight's gradient
    in PyTorch's terms (after a backward through it)."""
    ln, rnn = torch.nn.LayerNorm(I).cuda(), torch.nn.LSTM(I, H).cuda()
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.1, 0.1)
    m = rnnc.Model(os.path.join(CELLS, "preln.cell"), I, H, backend="fused")
    m.set_weights({"weight_ih_l0": rnn.weight_ih_l0, "weight_hh_l0": rnn.weight_hh_l0,
                   "bias_l0": rnn.bias_ih_l0 + rnn.bias_hh_l0, "ln_g_l0": ln.weight,
                   "ln_b_l0": ln.bias})
    grads = {"weight_ih_l0": lambda: rnn.weight_ih_l0.grad,
             "weight_hh_l0": lambda: rnn.weight_hh_l0.grad,
             "bias_l0": lambda: rnn.bias_ih_l0.grad, "ln_g_l0": lambda: ln.weight.grad,
             "ln_b_l0": lambda: ln.bias.grad}
    return m, lambda x: rnn(ln(x))[0], grads


def chain(I, H):
    lin, rnn = torch.nn.Linear(I, H).cuda(), torch.nn.GRU(H, H).cuda()
    m = rnnc.Model(os.path.join(CELLS, "chain.cell"), I, H, backend="fused")
    m.set_weights({"w1_l0": lin.weight, "b1_l0": lin.bias, "weight_ih_l0": rnn.weight_ih_l0,
                   "weight_hh_l0": rnn.weight_hh_l0, "bias_ih_l0": rnn.bias_ih_l0,
                   "bias_hh_l0": rnn.bias_hh_l0})
    grads = {"w1_l0": lambda: lin.weight.grad, "b1_l0": lambda: lin.bias.grad,
             "weight_ih_l0": lambda: rnn.weight_ih_l0.grad,
             "weight_hh_l0": lambda: rnn.weight_hh_l0.grad,
             "bias_ih_l0": lambda: rnn.bias_ih_l0.grad, "bias_hh_l0": lambda: rnn.bias_hh_l0.grad}
    return m, lambda x: rnn(torch.tanh(lin(x)))[0], grads


def rel(got, want):
    return ((got.float().cpu() - want.float().cpu()).abs().max() /
            want.float().cpu().abs().max()).item()


def forward_case(m, ref, x, a):
    with torch.no_grad():
        want = ref(x)
        err = rel(m.forward(x)[0], want)
        t_torch = median_ms(lambda: ref(x), a.warmup, a.iters)
        t_fused = median_ms(lambda: m.forward(x), a.warmup, a.iters)
    return t_fused, t_torch, err


def training_case(m, ref, grads, x, a):
    """A training step on each side; the largest error over y, dx and the
    weights' gradients."""
    dy = torch.empty_like(ref(x)).uniform_(-1, 1)
    xr = x.clone().requires_grad_(True)
    y = ref(xr)
    y.backward(dy)
    got_y = m.forward(x, training=True)[0]
    dx = m.backward(dy)[0]
    err = max(rel(got_y, y.detach()), rel(dx, xr.grad),
              *(rel(torch.from_numpy(m.weight_grad(n)), g()) for n, g in grads.items()))

    def torch_step():
        ref(xr).backward(dy)

    def fused_step():
        m.forward(x, training=True)
        m.backward(dy)
    return median_ms(fused_step, a.warmup, a.iters), median_ms(torch_step, a.warmup, a.iters), err


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json", default=None)
    ap.add_argument("--training", action="store_true", help="time training steps")
    a = ap.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    rows = []
    for name, make in (("preln", preln), ("chain", chain)):
        for T, B, I, H in ((100, 64, 512, 512), (100, 1, 512, 512), (100, 64, 1024, 1024)):
            m, ref, grads = make(I, H)
            x = torch.empty(T, B, I, device="cuda").uniform_(-1, 1)
            t_fused, t_torch, err = (training_case(m, ref, grads, x, a) if a.training
                                     else forward_case(m, ref, x, a))
            r = {"cell": name, "training": a.training, "T": T, "B": B, "I": I, "H": H,
                 "fused_ms": t_fused,
                 "torch_ms": t_torch, "speedup": t_torch / t_fused, "rel_err": err}
            rows.append(r)
            print(f"{name:6s} T={T} B={B:3d} I={I:4d} H={H:4d}  fused {t_fused:7.3f} ms  "
                  f"torch {t_torch:7.3f} ms  x{t_torch / t_fused:5.2f}  err {err:.2e}", flush=True)
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(), "rows": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(info, f, indent=1)
    return 0 if all(r["rel_err"] <= 1e-4 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
