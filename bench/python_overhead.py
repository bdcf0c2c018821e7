#!/usr/bin/env python3
"""python_overhead.py: what the Python package adds to one forward call.

Times, per call, (a) the module call `lstm(x)` and (b) rnnc_model_forward
called straight through ctypes on buffers prepared once, on the same model
and the same input (T=1, so the work itself is as small as it gets); then the
same pair with initial states, `lstm(x, (h, c))`, as a decoder steps.  Each
call is followed by a synchronisation on a GPU, so both include the same GPU
work and their difference is the Python overhead: argument checks, output
allocation, the stream look-up, the weight-version checks.  Target: <= 30 us
on the GPU machine.

    PYTHONPATH=build/python python3 bench/python_overhead.py [--device cuda|cpu]
        [--backend B] [--batch 64] [--hidden 512] [--iters 2000] [--json out.json]

Without PyTorch (or with --numpy) the input is a NumPy array on a host backend."""
import argparse
import ctypes
import json
import statistics
import sys
import time


def median_us(fn, sync, iters, warmup=50):
    for _ in range(warmup):
        fn()
    sync()
    t = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        sync()
        t.append(time.perf_counter() - t0)
    return statistics.median(t) * 1e6


def main():
    ap = argparse.ArgumentParser(description="Python overhead per forward call of rnnc")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda if there)")
    ap.add_argument("--backend", default=None)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--input-size", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--seq", type=int, default=1)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--numpy", action="store_true", help="NumPy input (host backends)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    try:
        if a.numpy:
            raise ImportError
        import torch
    except ImportError:
        torch = None
    import rnnc
    from rnnc._lib import ForwardArgs, c_void_p, lib

    use_torch = torch is not None
    device = a.device or ("cuda" if use_torch and torch.cuda.is_available() else "cpu")
    T, B, I, H = a.seq, a.batch, a.input_size, a.hidden
    m = rnnc.LSTM(I, H, backend=a.backend)
    if use_torch:
        torch.set_grad_enabled(False)
        m = m.to(device)
        x = torch.randn(T, B, I, device=device)
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    else:
        import numpy as np
        x = np.random.default_rng(0).standard_normal((T, B, I)).astype(np.float32)
        sync = lambda: None  # noqa: E731
    m.eval()
    y, (h, c) = m(x)  # makes the model and binds the weights
    model = m._models[next(reversed(m._models))]

    # The bare C call on buffers made once, with what the module would pass.
    from rnnc.model import _Buffers
    buf = _Buffers(x, model.dtype, model.gpu, model.device)
    y2, h2, c2 = buf.empty(y.shape), buf.empty(h.shape), buf.empty(c.shape)
    fin = (c_void_p * 2)(buf.ptr(h2), buf.ptr(c2))
    args = ForwardArgs(T, B, buf.ptr(x), None, None, buf.ptr(y2), fin, False, buf.dev,
                       buf.stream)
    # ... and with initial states, as a step-by-step decoder calls it: lstm(x, (h, c))
    init = (c_void_p * 2)(buf.ptr(h), buf.ptr(c))
    args_hx = ForwardArgs(T, B, buf.ptr(x), init, None, buf.ptr(y2), fin, False, buf.dev,
                          buf.stream)
    fwd, handle = lib.rnnc_model_forward, model._h

    def bare(ref):
        def call():
            if fwd(handle, ref) != 0:
                raise rnnc.Error(rnnc._lib.text(lib.rnnc_last_error()))
        return call

    t_c = median_us(bare(ctypes.byref(args)), sync, a.iters)
    t_py = median_us(lambda: m(x), sync, a.iters)
    t_c_hx = median_us(bare(ctypes.byref(args_hx)), sync, a.iters)
    t_py_hx = median_us(lambda: m(x, (h, c)), sync, a.iters)
    res = dict(backend=model.backend, device=device, framework="torch" if use_torch else "numpy",
               T=T, B=B, I=I, H=H, c_call_us=t_c, module_call_us=t_py,
               overhead_us=t_py - t_c, c_call_hx_us=t_c_hx, module_call_hx_us=t_py_hx,
               overhead_hx_us=t_py_hx - t_c_hx, target_us=30.0)
    print(f"rnnc.LSTM({I}, {H}) T={T} B={B} on {model.backend} ({device}, "
          f"{res['framework']} input)")
    print(f"  rnnc_model_forward through ctypes: {t_c:9.1f} us")
    print(f"  module call lstm(x):               {t_py:9.1f} us")
    print(f"  Python overhead per call:          {t_py - t_c:9.1f} us (target <= 30 us)")
    print(f"  with initial states: C {t_c_hx:.1f} us, lstm(x, (h, c)) {t_py_hx:.1f} us, "
          f"overhead {t_py_hx - t_c_hx:.1f} us")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
