"""rnnc.LSTM / GRU with dtype torch.bfloat16 and torch.float16 on CUDA tensors:
the fused backend (and cudnn for float16) against PyTorch in float64 on the same
values (weights, inputs and output gradients rounded to the dtype first), forward
and, through loss.backward(), the gradients of the input, the initial states and
every weight.  A 16-bit model's outputs are rounded to its dtype and its
recurrent product reads h in 16 bits, so the measure is the dtype's: eight of
its epsilons.  PyTorch's own module in the same dtype is printed beside it.

Exits 77 without PyTorch (run_gpu.sh) or without a GPU."""
import torch  # noqa: F401  (before rnnc, so rnnc's modules are torch modules)

import copy

import rnnc
from torch_checks import fused_gpu, rel_err

torch, checks, dev = fused_gpu()

DTYPES = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}  # epsilon: half an ulp at 1
CONFIGS = [
    # name, nn class, kwargs, T, B
    ("lstm", "LSTM", dict(input_size=32, hidden_size=64), 20, 8),
    ("lstm_2l_bi", "LSTM", dict(input_size=16, hidden_size=32, num_layers=2, bidirectional=True),
     12, 4),
    ("gru_bf", "GRU", dict(input_size=16, hidden_size=32, batch_first=True), 10, 5),
]


def rounded(t, dt):
    return t.detach().to(dt).double()


def make(kind, kw, backend, dt):
    ref = getattr(torch.nn, kind)(**kw).to(dev)
    mine = getattr(rnnc, kind)(**kw, backend=backend, dtype=dt).to(dev)
    mine.load_state_dict(ref.state_dict())
    ref64 = copy.deepcopy(ref).double()
    with torch.no_grad():
        for p in ref64.parameters():
            p.copy_(rounded(p, dt))  # what the model binds: its weights rounded to dt
    return ref, mine, ref64


def inputs(kind, kw, T, B, dt):
    D = 2 if kw.get("bidirectional") else 1
    L, H = kw.get("num_layers", 1), kw["hidden_size"]
    shape = (B, T, kw["input_size"]) if kw.get("batch_first") else (T, B, kw["input_size"])
    x = torch.randn(shape, device=dev).to(dt).requires_grad_()
    hx = [torch.randn(L * D, B, H, device=dev).to(dt).requires_grad_()
          for _ in range(2 if kind == "LSTM" else 1)]
    return x, hx


def pack(hx):
    return tuple(hx) if len(hx) > 1 else hx[0]


def flat(h):
    return list(h) if isinstance(h, tuple) else [h]


def run(mod, x, hx, gy, gh):
    """Outputs and the gradients of x, the initial states and the parameters for
    loss = sum(y gy) + sum(h_n gh)."""
    y, h = mod(x, pack(hx))
    loss = (y.double() * gy).sum() + sum((t.double() * g).sum() for t, g in zip(flat(h), gh))
    for t in [x] + hx + list(mod.parameters()):
        t.grad = None
    loss.backward()
    grads = [x.grad] + [t.grad for t in hx] + [p.grad for _, p in sorted(mod.named_parameters())]
    return [y] + flat(h), grads


def check(name, backend, kind, kw, T, B, dt):
    tol = 8 * DTYPES[dt]
    tag = f"{backend} {str(dt)[6:]} {name}"
    ref, mine, ref64 = make(kind, kw, backend, dt)
    x, hx = inputs(kind, kw, T, B, dt)
    x64 = x.detach().double().requires_grad_()
    hx64 = [t.detach().double().requires_grad_() for t in hx]
    with torch.no_grad():
        y, h = ref64(x64, pack(hx64))
    gy = torch.randn_like(y).to(dt).double()  # what rnnc's backward receives: dy in dt
    gh = [torch.randn_like(t).to(dt).double() for t in flat(h)]
    outs, grads = run(mine, x, hx, gy, gh)
    routs, rgrads = run(ref64, x64, hx64, gy, gh)
    checks.true(f"{tag}: ran on {mine.backend_name}", mine.backend_name == backend)
    checks.true(f"{tag}: outputs are {dt} on {dev}",
                all(o.dtype == dt and o.is_cuda for o in outs))
    for n, a, b in zip(["y"] + [f"h_n{i}" for i in range(len(outs) - 1)], outs, routs):
        checks.close(f"{tag} {n}", a, b, tol)
    names = ["dx"] + [f"dh0_{i}" for i in range(len(hx))] + \
            [n for n, _ in sorted(ref64.named_parameters())]
    checks.true(f"{tag}: dx and dh0 are {dt}", all(g.dtype == dt for g in grads[:1 + len(hx)]))
    for n, a, b in zip(names, grads, rgrads):
        checks.close(f"{tag} grad {n}", a, b, tol)
    own = copy.deepcopy(ref).to(dt)  # PyTorch's module in the same dtype, for comparison
    try:
        with torch.no_grad():
            yo, _ = own(x, pack(hx))
        print(f"     torch's own {name} in {dt}: y rel err {rel_err(yo, routs[0]):.3g}")
    except RuntimeError as e:
        print(f"     torch's own {name} in {dt}: does not run ({str(e).splitlines()[0]})")


for dt in DTYPES:
    backends = ["fused"] + (["cudnn"] if dt == torch.float16 and
                            rnnc.backend_available("cudnn") else [])
    for backend in backends:
        for name, kind, kw, T, B in CONFIGS:
            check(name, backend, kind, kw, T, B, dt)

# .half() and .to(torch.bfloat16) as on nn.LSTM: the module's dtype follows its parameters'.
ref = torch.nn.LSTM(16, 32, num_layers=2).to(dev)
x = torch.randn(10, 4, 16, device=dev)
for convert, dt in ((lambda m: m.half(), torch.float16),
                    (lambda m: m.to(torch.bfloat16), torch.bfloat16)):
    mine = rnnc.LSTM(16, 32, num_layers=2, backend="fused").to(dev)
    want = rnnc.LSTM(16, 32, num_layers=2, backend="fused", dtype=dt).to(dev)
    mine.load_state_dict(ref.state_dict())
    want.load_state_dict(ref.state_dict())
    with torch.no_grad():
        y, _ = convert(mine)(x.to(dt))
        yw, _ = want(x.to(dt))
    checks.true(f"{str(dt)[6:]} by conversion: outputs {dt}", y.dtype == dt)
    checks.true(f"{str(dt)[6:]} by conversion: the dtype=... module's outputs bit for bit",
                torch.equal(y, yw))

# Under torch.autocast a float32 module runs in float16, as nn.LSTM does there (float16
# under either autocast dtype: PyTorch's RNNs have no bfloat16 path in cuDNN).
ref = torch.nn.LSTM(16, 32, num_layers=2).to(dev)
mine = rnnc.LSTM(16, 32, num_layers=2, backend="fused").to(dev)
half = rnnc.LSTM(16, 32, num_layers=2, backend="fused", dtype=torch.float16).to(dev)
mine.load_state_dict(ref.state_dict())
half.load_state_dict(ref.state_dict())
for amp in (torch.float16, torch.bfloat16):
    tag = f"autocast {str(amp)[6:]}"
    x = torch.randn(10, 4, 16, device=dev, requires_grad=True)
    with torch.autocast("cuda", dtype=amp):
        y, (h, c) = mine(x)
        yt, _ = ref(x)
    # a training forward, as mine's is (a 16-bit model's runs in fp32 inside; a call no
    # backward can follow is an inference forward, on its tensor cores: other bits)
    yh, _ = half(x.detach().half().requires_grad_())
    checks.true(f"{tag}: float16 out as torch's ({yt.dtype})", y.dtype == yt.dtype == torch.float16)
    checks.true(f"{tag}: the float16 module's outputs bit for bit", torch.equal(y, yh))
    (y.float() * torch.randn_like(y, dtype=torch.float32)).sum().backward()
    checks.true(f"{tag}: x's gradient float32 and finite",
                x.grad.dtype == torch.float32 and bool(x.grad.isfinite().all()))
    checks.true(f"{tag}: weight gradients float32",
                all(p.grad is not None and p.grad.dtype == torch.float32
                    for p in mine.parameters()))
    mine.zero_grad()
with torch.no_grad():
    checks.true("after autocast: float32 again", mine(x)[0].dtype == torch.float32)

checks.exit()
