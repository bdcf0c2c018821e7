#!/usr/bin/env python3
"""conv_torch.py: PyTorch's cuDNN convolution with cudnn.benchmark=True on the
shapes bench/conv_bench.c times (bench/resnet50_convs.txt, batch 32): fp32
with TF32 off in NCHW, fp16 in channels_last (NHWC), timed as conv_bench.c
times rnnc: random inputs, 3 warm-up calls (the first runs cuDNN's search),
then --iters repetitions of 10 calls between two CUDA events, the median per
call.

    python3 bench/conv_torch.py [--json OUT] [--iters N] [--rnnc bench_conv_bench.json]

With --rnnc, prints rnnc's time over PyTorch's per layer and in total.
Exits 77 when torch or a GPU is missing."""
import argparse
import json
import os
import statistics
import sys

BATCH = 32
INNER = 10  # calls between two events


def read_layers():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "resnet50_convs.txt")
    layers = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            name, hw, c, k, kern, stride, pad = parts[0], *map(int, parts[1:7])
            layers.append(dict(name=name, hw=hw, c=c, k=k, kernel=kern, stride=stride, pad=pad))
    return layers


def time_layer(torch, layer, dtype, channels_last, iters):
    x = torch.randn(BATCH, layer["c"], layer["hw"], layer["hw"], device="cuda", dtype=dtype)
    w = torch.randn(layer["k"], layer["c"], layer["kernel"], layer["kernel"], device="cuda",
                    dtype=dtype)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
        w = w.to(memory_format=torch.channels_last)
    conv = torch.nn.functional.conv2d
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    with torch.no_grad():
        for _ in range(3):  # the first call runs cuDNN's search
            conv(x, w, stride=layer["stride"], padding=layer["pad"])
        for _ in range(iters):
            start.record()
            for _ in range(INNER):
                conv(x, w, stride=layer["stride"], padding=layer["pad"])
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / INNER)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rnnc", help="bench_conv_bench's JSON, to compare with")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch is not installed: skipped")
        return 77
    if not torch.cuda.is_available():
        print("no GPU: skipped")
        return 77
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False  # fp32 with FFMA, as rnnc's default
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name(0)}")
    rows = []
    for dtype, name, cl in ((torch.float32, "fp32", False), (torch.float16, "fp16", True)):
        for layer in read_layers():
            ms = time_layer(torch, layer, dtype, cl, a.iters)
            rows.append(dict(name=layer["name"], dtype=name, layout="NHWC" if cl else "NCHW", ms=ms))
            print(f"{layer['name']:<10} {name:<5} {rows[-1]['layout']:<4} {ms:10.4f}")
    out = dict(batch=BATCH, torch=torch.__version__, cudnn=torch.backends.cudnn.version(),
               forward=rows)
    for dt in ("fp32", "fp16"):
        out[dt + "_total_ms"] = sum(r["ms"] for r in rows if r["dtype"] == dt)
    if a.rnnc:
        compare(out, a.rnnc)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


def compare(torch_out, rnnc_path):
    with open(rnnc_path) as f:
        rn = json.load(f)
    theirs = {(r["name"], r["dtype"]): r["ms"] for r in torch_out["forward"]}
    print(f"\n{'layer':<10} {'dtype':<5} {'rnnc ms':>10} {'torch ms':>10} {'rnnc/torch':>10}")
    for r in rn.get("forward", []):
        t = theirs.get((r["name"], r["dtype"]))
        if t and r["ms"] > 0:
            print(f"{r['name']:<10} {r['dtype']:<5} {r['ms']:10.4f} {t:10.4f} {r['ms'] / t:10.3f}")
    for dt in ("fp32", "fp16"):
        ours, th = rn.get(dt + "_total_ms", 0), torch_out[dt + "_total_ms"]
        if ours and th:
            verdict = "within 5%" if ours <= th * 1.05 else "NOT within 5%"
            print(f"total {dt}: rnnc {ours:.3f} ms, torch {th:.3f} ms, ratio {ours / th:.3f} "
                  f"({verdict})")
    torch_out["rnnc_vs_torch"] = {dt: rn.get(dt + "_total_ms", 0) / torch_out[dt + "_total_ms"]
                                  for dt in ("fp32", "fp16") if torch_out[dt + "_total_ms"]}


if __name__ == "__main__":
    sys.exit(main())
