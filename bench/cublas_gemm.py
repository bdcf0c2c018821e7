"""cuBLAS (through PyTorch) on the hoisted input GEMMs of the issue-9 shapes.

The fused path's hoisted GEMM is x (T*B x I) times W_ih^T (I x G*H); this
times the same product in cuBLAS, fp32 with TF32 off (FFMA, as rnnc's ffma
math) and with TF32 on, so rnnc's own GEMM can be put beside the library's
best on the same GPU.  CUDA events, median of 50 after 10; prints one JSON
line a shape.  Needs PyTorch with CUDA (the GPU machine only).
"""
import json
import statistics
import sys

import torch

SHAPES = [  # name, M = T*B, N = 4H (LSTM gates), K = I
    ("lstm_b64_h512", 6400, 2048, 512),
    ("lstm_b128_h512", 12800, 2048, 512),
    ("lstm_b64_h1024", 6400, 4096, 1024),
    ("lstm_b256_h1024", 25600, 4096, 1024),
    ("lstm_bi_l2_b64_h512", 6400, 2048, 1024),
]


def time_gemm(m, n, k, tf32, warmup=10, iters=50):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(m, k, device="cuda", generator=g)
    w = torch.randn(n, k, device="cuda", generator=g)
    out = torch.empty(m, n, device="cuda")
    for _ in range(warmup):
        torch.matmul(x, w.t(), out=out)
    times = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        torch.matmul(x, w.t(), out=out)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    for name, m, n, k in SHAPES:
        for tf32 in (False, True):
            ms = time_gemm(m, n, k, tf32)
            print(json.dumps({"shape": name, "m": m, "n": n, "k": k,
                              "math": "tf32" if tf32 else "ffma", "ms": round(ms, 4),
                              "tflops": round(2.0 * m * n * k / ms / 1e9, 1)}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
