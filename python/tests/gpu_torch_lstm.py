"""rnnc.LSTM / GRU against torch.nn.LSTM / GRU on the same state_dict, on CUDA
tensors, for the fused and cudnn backends: outputs to 1e-5 and, where the
backend has a backward, gradients of the input, the initial states and every
weight to 1e-4 (through loss.backward()).  Also: a non-default stream,
PackedSequence input, a custom cell (a pre-LN LSTM) trained on the fused
backward, and torch CPU tensors on the interpreter.

Exits 77 without PyTorch (run_gpu.sh) or without a GPU."""
import torch  # noqa: F401  (before rnnc, so rnnc's modules are torch modules)

import copy
import os

import rnnc
from torch_checks import Checks, need_gpu, rel_err, skip

torch = need_gpu()
checks = Checks()
dev = torch.device("cuda", torch.cuda.current_device())
gpu_backends = [b for b in ("fused", "cudnn") if rnnc.backend_available(b)]
if not gpu_backends:
    skip("librnnc has neither the fused nor the cudnn backend usable here")

CONFIGS = [
    # name, nn class, rnnc class, kwargs, T, B
    ("lstm", "LSTM", dict(input_size=32, hidden_size=64), 20, 8),
    ("lstm_2l_bi", "LSTM", dict(input_size=16, hidden_size=32, num_layers=2, bidirectional=True),
     12, 4),
    ("lstm_bf", "LSTM", dict(input_size=16, hidden_size=32, batch_first=True), 10, 5),
    ("lstm_b1", "LSTM", dict(input_size=64, hidden_size=64), 30, 1),
    ("gru_2l", "GRU", dict(input_size=16, hidden_size=32, num_layers=2), 12, 4),
]


def make(kind, kw, backend):
    ref = getattr(torch.nn, kind)(**kw).to(dev)
    mine = getattr(rnnc, kind)(**kw, backend=backend).to(dev)
    mine.load_state_dict(ref.state_dict())
    return ref, mine


def inputs(kind, kw, T, B, grad):
    D = 2 if kw.get("bidirectional") else 1
    L, H = kw.get("num_layers", 1), kw["hidden_size"]
    shape = (B, T, kw["input_size"]) if kw.get("batch_first") else (T, B, kw["input_size"])
    x = torch.randn(shape, device=dev, requires_grad=grad)
    h0 = torch.randn(L * D, B, H, device=dev, requires_grad=grad)
    if kind == "LSTM":
        return x, (h0, torch.randn(L * D, B, H, device=dev, requires_grad=grad))
    return x, h0


def flat(h):
    return list(h) if isinstance(h, tuple) else [h]


def exact(ref, x, hx):
    """What PyTorch computes, in float64 on the CPU: two fp32 GPU results
    (torch's cuDNN call and rnnc's) each differ from it by their own rounding,
    so each is checked against it rather than against the other."""
    ref64 = copy.deepcopy(ref).double().cpu()
    hx64 = tuple(t.double().cpu() for t in flat(hx))
    y, h = ref64(x.double().cpu(), hx64 if len(hx64) > 1 else hx64[0])
    return y, h


def check_forward(name, backend, kind, kw, T, B):
    ref, mine = make(kind, kw, backend)
    x, hx = inputs(kind, kw, T, B, grad=False)
    with torch.no_grad():
        yr, hr = exact(ref, x, hx)
        y, h = mine(x, hx)
        yt, _ = ref(x, hx)
    print(f"     torch's own {name} on {dev}: rel err {rel_err(yt, yr):.3g} from float64")
    checks.true(f"{backend} {name}: ran on {mine.backend_name}", mine.backend_name == backend)
    checks.true(f"{backend} {name}: outputs are CUDA tensors",
                y.is_cuda and all(t.is_cuda for t in flat(h)))
    checks.close(f"{backend} {name} y", y, yr, 1e-5)
    for i, (a, b) in enumerate(zip(flat(h), flat(hr))):
        checks.close(f"{backend} {name} final state {i}", a, b, 1e-5)


def check_gradients(name, backend, kind, kw, T, B):
    ref, mine = make(kind, kw, backend)
    x, hx = inputs(kind, kw, T, B, grad=True)
    gy = None
    outs = {}
    for tag, mod in (("ref", ref), ("rnnc", mine)):
        y, h = mod(x, hx)
        if gy is None:
            gy = torch.randn_like(y)
            gh = [torch.randn_like(t) for t in flat(h)]
        loss = (y * gy).sum() + sum((t * g).sum() for t, g in zip(flat(h), gh))
        x.grad = None
        for t in flat(hx):
            t.grad = None
        mod.zero_grad()
        try:
            loss.backward()
        except rnnc.UnsupportedError as e:
            print(f"--   {backend} {name}: no backward on this backend ({e.detail})")
            return
        outs[tag] = [x.grad.clone()] + [t.grad.clone() for t in flat(hx)] + \
                    [p.grad.clone() for _, p in sorted(mod.named_parameters())]
    names = ["dx"] + [f"dh{i}" for i in range(len(flat(hx)))] + \
            [n for n, _ in sorted(ref.named_parameters())]
    for n, a, b in zip(names, outs["rnnc"], outs["ref"]):
        checks.close(f"{backend} {name} grad {n}", a, b, 1e-4)


for backend in gpu_backends:
    for name, kind, kw, T, B in CONFIGS:
        check_forward(name, backend, kind, kw, T, B)
        check_gradients(name, backend, kind, kw, T, B)

# Work is queued on torch's current stream: a side stream gives the same numbers.
for backend in gpu_backends:
    ref, mine = make("LSTM", dict(input_size=16, hidden_size=32), backend)
    s = torch.cuda.Stream()
    x = torch.randn(15, 3, 16, device=dev)
    with torch.no_grad():
        yr, _ = copy.deepcopy(ref).double().cpu()(x.double().cpu())
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            y, _ = mine(x)
        torch.cuda.current_stream().wait_stream(s)
    checks.close(f"{backend} on a side stream", y, yr, 1e-5)

# The prepared call of a module (rnnc/_plan.py): T = 1 steps carrying the state give what
# one call over the sequence gives; a plan made on one stream serves another, and sees
# weights changed in place after it was made.
for backend in gpu_backends:
    ref, mine = make("LSTM", dict(input_size=16, hidden_size=32, num_layers=2), backend)
    mine.eval()
    x = torch.randn(7, 3, 16, device=dev)
    with torch.no_grad():
        yr, (hr, cr) = copy.deepcopy(ref).double().cpu()(x.double().cpu())
        y_all, _ = mine(x)
        hx, ys = None, []
        for t in range(x.shape[0]):
            y, hx = mine(x[t:t + 1], hx)
            ys.append(y)
    checks.close(f"{backend} one call, eval mode", y_all, yr, 1e-5)
    checks.close(f"{backend} T=1 steps y", torch.cat(ys), yr, 1e-5)
    checks.close(f"{backend} T=1 steps h", hx[0], hr, 1e-5)
    checks.close(f"{backend} T=1 steps c", hx[1], cr, 1e-5)
    s = torch.cuda.Stream()
    with torch.no_grad():
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            y, _ = mine(x[:1])
        torch.cuda.current_stream().wait_stream(s)
    checks.close(f"{backend} T=1 on a side stream", y, yr[:1], 1e-5)
    with torch.no_grad():
        ref.weight_hh_l1.mul_(0.5)
        mine.weight_hh_l1.mul_(0.5)
        yr, _ = copy.deepcopy(ref).double().cpu()(x.double().cpu())
        y, _ = mine(x)
    checks.close(f"{backend} weights changed in place", y, yr, 1e-5)

# PackedSequence in, PackedSequence out, as nn.LSTM.
pack = torch.nn.utils.rnn.pack_padded_sequence
ref, mine = make("LSTM", dict(input_size=8, hidden_size=16, num_layers=2, bidirectional=True),
                 gpu_backends[-1])
x = torch.randn(9, 4, 8, device=dev)
lengths = torch.tensor([5, 9, 2, 7])
with torch.no_grad():
    pr, (hr, cr) = copy.deepcopy(ref).double().cpu()(
        pack(x.double().cpu(), lengths, enforce_sorted=False))
    p, (h, c) = mine(pack(x, lengths, enforce_sorted=False))
checks.true("packed: a PackedSequence comes back", isinstance(p, type(pr)))
checks.close("packed y", p.data, pr.data, 1e-5)
checks.close("packed h", h, hr, 1e-5)
checks.close("packed c", c, cr, 1e-5)

# Training on a PackedSequence, on each backend with a backward: the gradients of x (through
# the packing), the initial states and every weight against float64 PyTorch.
for backend in gpu_backends:
    ref, mine = make("LSTM", dict(input_size=8, hidden_size=16, num_layers=2,
                                  bidirectional=True), backend)
    ref64 = copy.deepcopy(ref).double().cpu()
    xs = [torch.randn(9, 4, 8, device=dev, requires_grad=True)]
    xs.append(xs[0].detach().double().cpu().requires_grad_())
    gys, outs = None, []
    for mod, x in ((mine, xs[0]), (ref64, xs[1])):
        p, (h, c) = mod(pack(x, lengths, enforce_sorted=False))
        if gys is None:
            gys = [torch.randn_like(p.data), torch.randn_like(h), torch.randn_like(c)]
        loss = sum((a * g.to(a)).sum() for a, g in zip((p.data, h, c), gys))
        try:
            loss.backward()
        except rnnc.UnsupportedError as e:
            print(f"--   {backend} packed training: no backward here ({e.detail})")
            break
        outs.append([x.grad] + [q.grad for _, q in sorted(mod.named_parameters())])
    if len(outs) == 2:
        names = ["dx"] + [n for n, _ in sorted(ref.named_parameters())]
        for n, a, b in zip(names, outs[0], outs[1]):
            checks.close(f"{backend} packed training grad {n}", a, b, 1e-4)

# A custom cell trained through autograd on the fused backward: a pre-LN LSTM
# (tests/data/cells/preln.cell, layernorm(x) before W_ih; its layernorm's gradients come
# from the fused backward's row cell), 2 layers bidirectional, against nn.LayerNorm +
# nn.LSTM per layer in float64.  Each direction of the .cell model has its own ln_g and
# ln_b, given the shared LayerNorm's values: their two gradients add up to PyTorch's.
if "fused" in gpu_backends:
    cell = os.path.join(os.environ["RNNC_TEST_DATA"], "cells", "preln.cell")
    I, H, L, T, B = 12, 16, 2, 9, 4
    widths = [I] + [2 * H] * (L - 1)
    lns = [torch.nn.LayerNorm(w).double() for w in widths]
    lstms = [torch.nn.LSTM(w, H, bidirectional=True).double() for w in widths]
    mine = rnnc.CellRNN(cell, I, H, num_layers=L, bidirectional=True, backend="fused").to(dev)
    sd = {}
    with torch.no_grad():
        for l, (ln, r) in enumerate(zip(lns, lstms)):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.2, 0.2)
            for sfx in ("", "_reverse"):
                sd[f"weight_ih_l{l}{sfx}"] = getattr(r, f"weight_ih_l0{sfx}")
                sd[f"weight_hh_l{l}{sfx}"] = getattr(r, f"weight_hh_l0{sfx}")
                sd[f"bias_l{l}{sfx}"] = getattr(r, f"bias_ih_l0{sfx}") + getattr(r, f"bias_hh_l0{sfx}")
                sd[f"ln_g_l{l}{sfx}"], sd[f"ln_b_l{l}{sfx}"] = ln.weight, ln.bias
    mine.load_state_dict({k: v.float() for k, v in sd.items()})
    x = torch.randn(T, B, I, device=dev, requires_grad=True)
    x64 = x.detach().double().cpu().requires_grad_()
    y, _ = mine(x)
    y64 = x64
    for ln, r in zip(lns, lstms):
        y64 = r(ln(y64))[0]
    gy = torch.randn_like(y)
    (y * gy).sum().backward()
    (y64 * gy.double().cpu()).sum().backward()
    checks.close("fused preln y", y, y64, 1e-5)
    checks.close("fused preln grad dx", x.grad, x64.grad, 1e-4)
    got = dict(mine.named_parameters())
    for l, (ln, r) in enumerate(zip(lns, lstms)):
        for sfx in ("", "_reverse"):
            for n in ("weight_ih", "weight_hh"):
                checks.close(f"fused preln grad {n}_l{l}{sfx}", got[f"{n}_l{l}{sfx}"].grad,
                             getattr(r, f"{n}_l0{sfx}").grad, 1e-4)
            checks.close(f"fused preln grad bias_l{l}{sfx}", got[f"bias_l{l}{sfx}"].grad,
                         getattr(r, f"bias_ih_l0{sfx}").grad, 1e-4)
        for n, p in (("ln_g", ln.weight), ("ln_b", ln.bias)):
            both = got[f"{n}_l{l}"].grad + got[f"{n}_l{l}_reverse"].grad
            checks.close(f"fused preln grad {n}_l{l} (both directions)", both, p.grad, 1e-4)

# torch CPU tensors on the interpreter, and a CUDA module on a host backend.
ref = torch.nn.LSTM(8, 12, num_layers=2).double()
mine = rnnc.LSTM(8, 12, num_layers=2, backend="interp")
mine.load_state_dict({k: v.float() for k, v in ref.state_dict().items()})
x = torch.randn(6, 3, 8)
with torch.no_grad():
    y, (h, c) = mine(x)
    yr, (hr, cr) = ref(x.double())
checks.true("cpu tensors: CPU float32 tensors come back", y.device.type == "cpu" and
            y.dtype == torch.float32)
checks.close("cpu tensors on interp y", y, yr, 1e-6)
checks.close("cpu tensors on interp c", c, cr, 1e-6)
with torch.no_grad():
    y2, _ = mine.to(dev)(x.to(dev))
checks.true("interp with CUDA tensors returns CUDA tensors", y2.is_cuda)
checks.close("interp with CUDA tensors y", y2, yr, 1e-6)

checks.exit()
