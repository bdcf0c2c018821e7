#!/usr/bin/env python3
"""profile_kernels.py: where the device time of one rnnc call goes, kernel by kernel.

Runs a few models through the Python package on a GPU under torch.profiler
(CUPTI sees the library's Driver API launches, memsets and copies as it sees
torch's) and prints, per case, each kernel's device time per call and the span
of one call from its first device activity to its last.  A tool for deciding
what to speed up, not a benchmark: `rnnc compare` and bench/ give the figures.

    PYTHONPATH=build/python python3 bench/profile_kernels.py [--cases a,b] [--trace DIR]
        [--backend fused|cudnn]

With --backend cudnn the same models run on rnnc's cuDNN path (LSTM and GRU), so the
gaps between cuDNN's kernels show whether the host's launch rate bounds it.
"""
import argparse
import collections
import os
import sys

CASES = {
    # name: (cell, layers, bidirectional, T, B, H, training)
    "lstm_t1_b64": ("lstm", 1, False, 1, 64, 512, False),
    "lstm_t1_b1": ("lstm", 1, False, 1, 1, 512, False),
    "lstm_t8_b64": ("lstm", 1, False, 8, 64, 512, False),
    "lstm_l2_t1_b64": ("lstm", 2, False, 1, 64, 512, False),
    "lstm_b64": ("lstm", 1, False, 100, 64, 512, False),
    "lstm_b64_train": ("lstm", 1, False, 100, 64, 512, True),
    "lnlstm_b64_train": ("layernorm_lstm", 1, False, 100, 64, 512, True),
    "lstm_l4_b64": ("lstm", 4, False, 100, 64, 512, False),
    "lstm_l2_bi_b64": ("lstm", 2, True, 100, 64, 512, False),
    "lstm_h512_b128": ("lstm", 1, False, 100, 128, 512, False),
    "lstm_h1024_b64": ("lstm", 1, False, 100, 64, 1024, False),
    "lstm_h1024_b256": ("lstm", 1, False, 100, 256, 1024, False),
    "lstm_h1024_b512": ("lstm", 1, False, 100, 512, 1024, False),
    "lstm_h2048_b256": ("lstm", 1, False, 100, 256, 2048, False),
}


def make(torch, rnnc, cell, layers, bi, H, math, backend):
    if cell == "lstm":
        return rnnc.LSTM(H, H, num_layers=layers, bidirectional=bi, backend=backend,
                         math=math).cuda()
    return rnnc.CellRNN(cell, H, H, num_layers=layers, bidirectional=bi, backend=backend,
                        math=math).cuda()


def one_call(torch, m, x, hx, training):
    if not training:
        with torch.no_grad():
            return m(x, hx)
    y, _ = m(x, hx)
    y.sum().backward()
    return y


def profile_case(torch, rnnc, name, spec, iters, math, trace_dir, backend):
    from torch.profiler import profile, ProfilerActivity
    cell, layers, bi, T, B, H, training = spec
    m = make(torch, rnnc, cell, layers, bi, H, math, backend)
    m.train(training)
    D = 2 if bi else 1
    x = torch.randn(T, B, H, device="cuda", requires_grad=training)
    hx = (torch.randn(layers * D, B, H, device="cuda"), torch.randn(layers * D, B, H, device="cuda"))
    for _ in range(5):
        one_call(torch, m, x, hx, training)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            one_call(torch, m, x, hx, training)
            torch.cuda.synchronize()
    if trace_dir:
        prof.export_chrome_trace(os.path.join(trace_dir, f"trace_{name}_{backend}.json"))
    per = collections.OrderedDict()
    spans = []
    events = [e for e in prof.events() if e.device_type.name == "CUDA"]
    events.sort(key=lambda e: e.time_range.start)
    # One call's span: consecutive calls are separated by a host synchronisation,
    # so cut the timeline at gaps far longer than any launch gap inside a call.
    start = prev_end = None
    for e in events:
        k = e.name[:70]
        c = per.setdefault(k, [0, 0.0])
        c[0] += 1
        c[1] += e.time_range.elapsed_us()
        if start is None:
            start = e.time_range.start
        elif e.time_range.start - prev_end > 200:
            spans.append(prev_end - start)
            start = e.time_range.start
        prev_end = max(prev_end or 0, e.time_range.end)
    if start is not None:
        spans.append(prev_end - start)
    spans.sort()
    print(f"== {name} ({backend}, math {math}): {len(spans)} calls, span median "
          f"{spans[len(spans) // 2] if spans else 0:.1f} us")
    busy = sum(v[1] for v in per.values()) / iters
    for k, (n, us) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        print(f"  {us / iters:9.1f} us  x{n / iters:5.1f}  {k}")
    print(f"  {busy:9.1f} us  device busy per call")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--math", default="ffma")
    ap.add_argument("--trace", default=None, help="folder for chrome traces")
    ap.add_argument("--backend", default="fused", choices=("fused", "cudnn"))
    a = ap.parse_args()
    import torch
    import rnnc
    for name in a.cases.split(","):
        try:
            profile_case(torch, rnnc, name, CASES[name], a.iters, a.math, a.trace, a.backend)
        except Exception as exc:  # one case failing should not hide the others
            print(f"== {name}: failed: {exc!r}")


if __name__ == "__main__":
    main()
