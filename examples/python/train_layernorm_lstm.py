#!/usr/bin/env python3
"""Training a custom cell from PyTorch: a LayerNorm LSTM written as a .cell
file, as a drop-in torch module, trained with torch.optim.SGD and
loss.backward() -- next to the same cell written in PyTorch, from the same
weights and data.  Their losses agree step by step.

    PYTHONPATH=build/python python3 examples/python/train_layernorm_lstm.py [--device cuda]

rnnc's side is four lines (make the module, load the weights, call it,
train as usual); the rest is the PyTorch reference.  Exits 77 when no
backend of this librnnc has a backward for this cell on this device."""
import argparse
import os
import sys

import torch

import rnnc

CELL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "frontend", "cells",
                    "layernorm_lstm.cell")


class TorchLayerNormLSTM(torch.nn.Module):
    """The same cell in PyTorch (fastrnns' LayerNormLSTMCell), one layer."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        k = hidden_size ** -0.5
        self.weight_ih = torch.nn.Parameter(torch.empty(4 * hidden_size, input_size).uniform_(-k, k))
        self.weight_hh = torch.nn.Parameter(torch.empty(4 * hidden_size, hidden_size).uniform_(-k, k))
        self.layernorm_i = torch.nn.LayerNorm(4 * hidden_size)
        self.layernorm_h = torch.nn.LayerNorm(4 * hidden_size)
        self.layernorm_c = torch.nn.LayerNorm(hidden_size)

    def forward(self, x, state):
        h, c = state
        ys = []
        for xt in x:
            gates = self.layernorm_i(xt @ self.weight_ih.t()) + self.layernorm_h(h @ self.weight_hh.t())
            i, f, g, o = gates.chunk(4, 1)
            c = self.layernorm_c(torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g))
            h = torch.sigmoid(o) * torch.tanh(c)
            ys.append(h)
        return torch.stack(ys), (h, c)


def rnnc_names(torch_state_dict):
    """PyTorch's names to the .cell's: layernorm_i.weight -> layernorm_i_weight_l0."""
    return {k.replace(".", "_") + "_l0": v.float() for k, v in torch_state_dict.items()}


def pick_backend(device, I, H):
    """The first backend here whose backward runs this cell on this device."""
    order = ["fused", "cudnn", "cpu", "interp"] if device.type == "cuda" else ["cpu", "interp"]
    why = []
    for b in order:
        if not rnnc.backend_available(b):
            continue
        try:
            m = rnnc.CellRNN(CELL, I, H, backend=b).to(device)
            y, _ = m(torch.randn(2, 1, I, device=device))
            y.sum().backward()
            return b
        except (rnnc.UnsupportedError, rnnc.StateError) as e:
            why.append(f"{b}: {e.detail}")
    print("SKIP: no backend here has a backward for layernorm_lstm yet (" + "; ".join(why) + ")")
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--backend", default=None, help="default: the first with a backward")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--tol", type=float, default=1e-4)
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device(args.device)
    T, B, I, H = 12, 4, 16, 32
    backend = args.backend or pick_backend(device, I, H)
    if backend is None:
        return 77

    torch.manual_seed(0)
    ref = TorchLayerNormLSTM(I, H).double().to(device)
    with torch.no_grad():  # LayerNorm starts at 1 and 0: spread them so every parameter counts
        for p in ref.parameters():
            if p.dim() == 1:
                p.add_(0.3 * torch.randn_like(p))
    # The rnnc side: the module, PyTorch's weights, and the usual training loop.
    mine = rnnc.CellRNN(CELL, I, H, backend=backend).to(device)
    mine.load_state_dict(rnnc_names(ref.state_dict()))

    x = torch.randn(T, B, I, device=device)
    target = torch.randn(T, B, H, device=device)
    zeros = torch.zeros(B, H, device=device, dtype=torch.float64)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=args.lr)
    opt_mine = torch.optim.SGD(mine.parameters(), lr=args.lr)
    print(f"LayerNorm LSTM, T={T} B={B} I={I} H={H}, rnnc backend {backend} on {device}")
    print(f"{'step':>4} {'PyTorch loss':>14} {'rnnc loss':>14} {'rel diff':>9}")
    worst = 0.0
    for step in range(args.steps):
        y_ref, _ = ref(x.double(), (zeros, zeros))
        loss_ref = ((y_ref - target.double()) ** 2).mean()
        y, (h, c) = mine(x)
        loss = ((y - target) ** 2).mean()
        for opt, lo in ((opt_ref, loss_ref), (opt_mine, loss)):
            opt.zero_grad()
            lo.backward()
            opt.step()
        diff = abs(loss.item() - loss_ref.item()) / abs(loss_ref.item())
        worst = max(worst, diff)
        print(f"{step:>4} {loss_ref.item():>14.8f} {loss.item():>14.8f} {diff:>9.2g}")
    ok = worst <= args.tol
    print(f"{'ok' if ok else 'FAIL'}: worst relative loss difference {worst:.3g} (tol {args.tol:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
