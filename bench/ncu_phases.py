#!/usr/bin/env python3
"""Where a step kernel's time goes, from Nsight Compute's SASS source page
(`ncu -i REP --page source --csv --print-source sass`, scripts/gpu-ncu.sh).

Warp-state samples are taken at a fixed rate per warp, so a region's share
of the samples is its share of the kernel's warp time; between
__syncthreads every warp of a block is in the same phase, so that is also
about its share of the step.  The multiply is the span of instructions
dense in FFMA (or HMMA, on tensor cores); before it is the staging of x,
after it the reduction, the element phase and the barrier.

Usage: ncu_phases.py FILE.sass.csv...
"""
import collections
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"


def load(path):
    rows = list(csv.reader(open(path, newline="")))
    # the first row names the kernel, the second holds the column names
    head = rows[1]
    col = {h: i for i, h in enumerate(head)}
    data = [r for r in rows[2:] if len(r) == len(head)]
    return head, col, data


def opcode(sass):
    words = sass.split()
    word = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    return word.split(".")[0]


def multiply_span(ops, window=40, dense=18):
    """First and last instruction inside a window that is mostly FFMA/HMMA."""
    hot = [1 if o in ("FFMA", "HMMA") else 0 for o in ops]
    inside = [sum(hot[max(0, i - window // 2):i + window // 2]) >= dense
              for i in range(len(ops))]
    if True not in inside:
        return None
    return inside.index(True), len(inside) - 1 - inside[::-1].index(True)


def report(path):
    head, col, data = load(path)
    samples = [int(r[col[SAMPLES]] or 0) for r in data]
    total = sum(samples) or 1
    ops = [opcode(r[col["Source"]]) for r in data]
    reasons = collections.Counter()
    for r in data:
        for h in head:
            if h.startswith("stall_") and "Not Issued" not in h:
                reasons[h[6:]] += int(r[col[h]] or 0)
    print(f"== {path}: {total} samples")
    print("  stalls: " + ", ".join(f"{k} {100 * v / total:.1f}%"
                                  for k, v in reasons.most_common(8)))
    span = multiply_span(ops)
    if span:
        a, b = span
        share = [100 * sum(samples[i:j]) / total for i, j in ((0, a), (a, b + 1), (b + 1, len(data)))]
        print(f"  before the multiply {share[0]:.1f}%, multiply {share[1]:.1f}%, "
              f"after {share[2]:.1f}%")
    top = sorted(range(len(data)), key=lambda i: -samples[i])[:8]
    for i in top:
        print(f"  {100 * samples[i] / total:5.1f}%  {data[i][col['Source']].strip()[:64]}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        report(p)
