"""rnnc modules inside torch.compile with fullgraph=True, and torch.export: the
call is one custom operator (rnnc::rnn, python/rnnc/_ops.py), so the graph
around it stays whole.  Against the same model in float64 on the CPU
(outputs 1e-5, gradients 1e-4), or bit for bit against the eager call where
both run the same library call (dropout masks, autocast, training loops in
the default and "reduce-overhead" modes); an exported program saved and run
in a new process.

Exits 77 without PyTorch (run_gpu.sh) or without a GPU."""
import os
import subprocess
import sys
import tempfile
import time

import torch  # noqa: F401  (before rnnc, so rnnc's modules are torch modules)

import rnnc
from torch_checks import fused_gpu, package_path

torch, checks, dev = fused_gpu()
PACKAGE_PATH = package_path()
LOAD_AND_RUN = """
import os, sys, torch
import rnnc  # registers rnnc::rnn before the program is loaded
tmp = sys.argv[1]
ep = torch.export.load(os.path.join(tmp, "net.pt2"))
with torch.no_grad():
    y, _ = ep.module()(torch.load(os.path.join(tmp, "x.pt")).cuda())
torch.save(y.cpu(), os.path.join(tmp, "y.pt"))
"""


class Net(torch.nn.Module):
    """A projection in, a recurrent stack, a projection out."""

    def __init__(self, rnn, out):
        super().__init__()
        self.inp, self.rnn, self.out = torch.nn.Linear(8, 16), rnn, torch.nn.Linear(out, 4)

    def forward(self, x, h0=None):
        y, h = self.rnn(torch.tanh(self.inp(x)), h0)
        return self.out(y), h


def nets(kind, out, **kw):
    """The net on rnnc (fused) on the GPU and the same weights on torch.nn in float64 on the CPU."""
    ref = Net(getattr(torch.nn, kind)(**kw), out)
    mine = Net(getattr(rnnc, kind)(**kw, backend="fused"), out)
    mine.load_state_dict(ref.state_dict())
    return mine.to(dev), ref.double()


def grads(net):
    return {n: p.grad.detach().clone() for n, p in net.named_parameters()}


def step(name, compiled, mine, ref, x, h0=None):
    """One forward and backward of the compiled net against the reference."""
    x = x.requires_grad_()
    y, h = compiled(x, h0)
    gy = torch.randn_like(y)
    loss = (y * gy).sum() + sum(s.sum() for s in (h if isinstance(h, tuple) else (h,)))
    loss.backward()
    x64 = x.detach().double().cpu().requires_grad_()
    h64 = None if h0 is None else h0.detach().double().cpu().requires_grad_()
    y64, hr = ref(x64, h64)
    loss64 = (y64 * gy.double().cpu()).sum() + \
        sum(s.sum() for s in (hr if isinstance(hr, tuple) else (hr,)))
    loss64.backward()
    checks.close(f"{name}: y", y, y64, 1e-5)
    checks.close(f"{name}: dx", x.grad, x64.grad, 1e-4)
    if h0 is not None:
        checks.close(f"{name}: dh0", h0.grad, h64.grad, 1e-4)
        h0.grad = None
    g, g64 = grads(mine), grads(ref)
    for n in g64:
        checks.close(f"{name}: grad {n}", g[n], g64[n], 1e-4)
    mine.zero_grad()
    ref.zero_grad()


# fullgraph: a graph break would raise.  The third call changes T, which
# recompiles with a dynamic length (the operator's fake shapes are symbolic).
mine, ref = nets("LSTM", 64, input_size=16, hidden_size=32, num_layers=2, bidirectional=True)
compiled = torch.compile(mine, fullgraph=True)
for k, t in enumerate((12, 12, 20)):
    step(f"fullgraph LSTM call {k} (T={t})", compiled, mine, ref,
         torch.randn(t, 3, 8, device=dev))
checks.true("the LSTM ran on fused", mine.rnn.backend_name == "fused")

# A GRU, batch_first, with an initial state that wants its gradient.
mine, ref = nets("GRU", 32, input_size=16, hidden_size=32, batch_first=True)
compiled = torch.compile(mine, fullgraph=True)
for k in range(2):
    h0 = torch.randn(1, 5, 32, device=dev, requires_grad=True)
    step(f"fullgraph GRU h0 call {k}", compiled, mine, ref, torch.randn(5, 9, 8, device=dev), h0)

# Dropout between layers and autocast: the compiled call is the eager one, bit for bit
# (the masks' seed drawn from torch's generator at the same point).
lstm = rnnc.LSTM(16, 32, num_layers=2, dropout=0.3, backend="fused").to(dev)
f = torch.compile(lambda x: lstm(x)[0], fullgraph=True)
x = torch.randn(10, 4, 16, device=dev)
for k in range(2):
    torch.manual_seed(100 + k)
    yc = f(x)
    torch.manual_seed(100 + k)
    ye = lstm(x)[0]
    checks.true(f"dropout call {k}: compiled == eager, bit for bit", torch.equal(yc, ye))
lstm.eval()
with torch.autocast("cuda"):
    yc, ye = f(x), lstm(x)[0]
checks.true(f"autocast: compiled {yc.dtype} == eager {ye.dtype}, bit for bit",
            yc.dtype == torch.float16 and torch.equal(yc, ye))

# torch.export: the exported program holds the operator and runs in this process.
mine, ref = nets("LSTM", 64, input_size=16, hidden_size=32, num_layers=2, bidirectional=True)
mine.eval()
x = torch.randn(12, 3, 8, device=dev)
ep = torch.export.export(mine, (x,))
checks.true("export: the graph calls rnnc.rnn", "rnnc.rnn" in str(ep.graph))
with torch.no_grad():
    y, _ = ep.module()(torch.randn(12, 3, 8, device=dev))
    x2 = torch.randn(12, 3, 8, device=dev)
    y, _ = ep.module()(x2)
    y64, _ = ref(x2.double().cpu())
checks.close("export: y", y, y64, 1e-5)

# Saved and loaded in a new process: no module there has the graph's id, so one made
# from the module's description runs the call on the saved weights.
with tempfile.TemporaryDirectory() as tmp:
    torch.export.save(ep, os.path.join(tmp, "net.pt2"))
    torch.save(x2.cpu(), os.path.join(tmp, "x.pt"))
    run = subprocess.run([sys.executable, "-c", LOAD_AND_RUN, tmp], capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=PACKAGE_PATH))
    print(run.stdout + run.stderr)
    checks.true("export: loaded and run in a new process", run.returncode == 0)
    if run.returncode == 0:
        checks.close("export, new process: y", torch.load(os.path.join(tmp, "y.pt")), y64, 1e-5)

# Two layers of one description (same cell, sizes and options, their own weights), trained
# through a loaded program in a new process: each keeps a module of its own there, so both
# backwards find their forwards (one module a description had raised StateError at the
# first layer's backward) and y, dx and every weight's gradient match float64.
TRAIN_LOADED = """
import os, sys, torch
import rnnc
tmp = sys.argv[1]
net = torch.export.load(os.path.join(tmp, "two.pt2")).module()
x = torch.load(os.path.join(tmp, "x.pt")).cuda().requires_grad_()
gy = torch.load(os.path.join(tmp, "gy.pt")).cuda()
for k in range(2):  # the second call finds both made modules
    x.grad = None
    for p in net.parameters():
        p.grad = None
    y = net(x)
    (y * gy).sum().backward()
out = {"y": y.detach().cpu(), "dx": x.grad.cpu()}
out.update({n: p.grad.cpu() for n, p in net.named_parameters()})
torch.save(out, os.path.join(tmp, "out.pt"))
"""


class Two(torch.nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.a, self.b = a, b

    def forward(self, x):
        return self.b(self.a(x)[0])[0]


ref = Two(torch.nn.LSTM(16, 16), torch.nn.LSTM(16, 16)).double()
mine = Two(rnnc.LSTM(16, 16, backend="fused"), rnnc.LSTM(16, 16, backend="fused"))
mine.load_state_dict(ref.state_dict())
mine = mine.to(dev)
x, gy = torch.randn(9, 3, 16), torch.randn(9, 3, 16)
ep = torch.export.export(mine, (x.to(dev),))
x64 = x.double().requires_grad_()
y64 = ref(x64)
(y64 * gy.double()).sum().backward()
with tempfile.TemporaryDirectory() as tmp:
    torch.export.save(ep, os.path.join(tmp, "two.pt2"))
    torch.save(x, os.path.join(tmp, "x.pt"))
    torch.save(gy, os.path.join(tmp, "gy.pt"))
    run = subprocess.run([sys.executable, "-c", TRAIN_LOADED, tmp], capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=PACKAGE_PATH))
    print(run.stdout + run.stderr)
    checks.true("export, two layers of one description: trained in a new process",
                run.returncode == 0)
    if run.returncode == 0:
        got = torch.load(os.path.join(tmp, "out.pt"))
        checks.close("export, two layers, new process: y", got["y"], y64, 1e-5)
        checks.close("export, two layers, new process: dx", got["dx"], x64.grad, 1e-4)
        for n, p in ref.named_parameters():
            checks.true(f"export, two layers, new process: grad {n} came back", n in got)
            if n in got:
                checks.close(f"export, two layers, new process: grad {n}", got[n], p.grad, 1e-4)


def per_call_us(fn, x, n=200):
    for _ in range(10):
        fn(x)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


# Training loops, compiled (default and "reduce-overhead", which must not replay a stale
# call in a CUDA graph) against eager, from the same start: every step's y and every
# parameter after the optimiser's in-place updates bit for bit; and the weights go to the
# library once a step (the parameters' version counters), not on every call.
uploads = [0]
set_weight = rnnc.Model.set_weight


def counting_set_weight(self, name, value):
    uploads[0] += 1
    return set_weight(self, name, value)


rnnc.Model.set_weight = counting_set_weight
for mode in ("default", "reduce-overhead"):
    torch.manual_seed(7)
    pair = [rnnc.LSTM(16, 32, num_layers=2, backend="fused").to(dev) for _ in range(2)]
    pair[1].load_state_dict(pair[0].state_dict())
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in pair]
    f = torch.compile(lambda x: pair[0](x)[0], fullgraph=True, mode=mode)
    same, counts = True, []
    for step in range(4):
        x = torch.randn(10, 4, 16, device=dev)
        gy = torch.randn(10, 4, 32, device=dev)
        before = uploads[0]
        ys = [f(x), pair[1](x)[0]]
        counts.append(uploads[0] - before)
        for y, opt in zip(ys, opts):
            opt.zero_grad()
            (y * gy).sum().backward()
            opt.step()
        same &= torch.equal(ys[0], ys[1])
        same &= all(torch.equal(a, b) for a, b in zip(pair[0].parameters(), pair[1].parameters()))
    checks.true(f"training loop, {mode}: compiled == eager, bit for bit, 4 steps", same)
    # each call after the first: both modules' 8 changed weights, no more
    checks.true(f"training loop, {mode}: weights sent once a step ({counts})",
                all(c == 16 for c in counts[1:]))
rnnc.Model.set_weight = set_weight

# What the operator costs a call (printed, not checked): T = 1, where the call is overhead.
lstm = rnnc.LSTM(256, 256, backend="fused").to(dev).eval()
x = torch.randn(1, 8, 256, device=dev)
with torch.no_grad():
    eager = per_call_us(lambda v: lstm(v), x)
    comp = per_call_us(torch.compile(lambda v: lstm(v), fullgraph=True), x)
    ws = lstm._live_weights()
    op = per_call_us(lambda v: torch.ops.rnnc.rnn(lstm._op_id, lstm._op_spec, False, False,
                                                  v, [], ws, None), x)
print(f"info: T=1 B=8 H=256 inference: eager {eager:.1f} us a call, compiled {comp:.1f} us, "
      f"the operator called directly {op:.1f} us")

checks.exit()
