#!/usr/bin/env python3
"""step_probe.py: marks for bench/step_probe.cu in a dumped FFMA step kernel.

Usage: step_probe.py KERNEL.cu VARIANT > OUT.cu, where KERNEL.cu is
`rnnc dump --stage cuda` of a one-phase FFMA step, with bulk staging
(cuda_bulk.c), or with x staged whole (then not the variants of the
chunks' copies: norel, pure, puredbuf, mod, fused), and VARIANT is one of
  marks    the marks alone
  nobar    no wait at the grid barrier (the data race is harmless to timing)
  noelem   no element phase after the multiply
  nomul    no multiply-adds (the chunks are still copied and waited for)
  norel    the refill of a buffer not waiting for every warp to be past it
           (thread 0's warp waits for the slowest each chunk)
  pure     no copies and no waits for them in steps after the first: the
           chunk loop's multiply-adds over whatever the buffers hold
  dbuf     the k loop's shared-memory operands loaded one k step ahead into
           a second set of registers; xahead, wahead: only the state's
           rows or only the weights' (any kernel); puredbuf: dbuf with pure
  jorder   the k loop's FFMAs of each k by state row, then weight row (the
           generator's order is weight row, then state row)
  wbcast, xbcast, bcast  the k loop's weight (w), state (x) or all
           operand loads at lane ks = 0's columns, so the lanes of a K
           split read alike (what a layout whose lanes share columns
           would cost in shared-memory wavefronts; the sums are wrong)
  unroll8  the k loop unrolled 8 deep rather than 4
  halfcopy each chunk's copy half its bytes (the rest of the buffer as it
           was): whether the copies' bytes or their latency bound the loop
  mod      the chunk's columns as fused computes them (ptxas allocates
           registers differently), to compare fused with
  fused    a stand-in for the input projection inside the step: the chunk
           loop runs twice over K (the first pass for x W_ih, here h again
           against W_hh, so without the cost of streaming W_ih), and the
           grid barrier is waited for by thread 0 just before it copies
           the second pass's first chunk, so the first pass hides it
           (K = 1024 kernels)
Every variant keeps the marks.  A text the instrumenter expects and does not
find is an error: the generator changed, and the probe must follow it.
"""
import re
import sys

STEP_TOP = "    for (int t = 0; t < tend_; ++t) {\n"
CHUNK0 = "                    ph_ ^= 1u << (ch_ % NSB);\n"
REFILL = "rnnc_bulk_get(sm_ + xo_"
KANY = re.compile(r"( *)for \(int k = (ks \* 4); k < ([^;]+); k \+= (\d+)\) \{\n")
LOOP_END = "            __syncthreads();\n"
ELEM = "        for (int e = tid; e < E; e += NT) {\n"
ELEM_END = "        if (t + 1 < tend_) {\n"
ARRIVE = "            if (tid == 0) rnnc_arrive(bar + bb);\n"
WAIT = "            if (tid >= NT - 32) rnnc_wait(bar + bb, epoch * NUB);\n            __syncthreads();\n"


def once(src, old, new):
    if src.count(old) < 1:
        sys.exit(f"step_probe.py: not found: {old!r}")
    return src.replace(old, new, 1)


def k_loop(src, at=0):
    """The first k loop from `at`: its header's match (indent, first k,
    limit, step) and where its closing brace's line starts, less one."""
    m = KANY.search(src, at)
    if not m:
        sys.exit("step_probe.py: no k loop")
    return m, src.find("\n" + m.group(1) + "}\n", m.end())


def no_copies(src):
    src = once(src, "                    rnnc_mb_wait(mb_ + ch_ % NSB, (ph_ >> (ch_ % NSB)) & 1u);\n", "")
    src = once(src, "rnnc_bulk_get(sm_ + s_ * CHF, BSRC(t & 1, s_), bn_, mb_ + s_);", ";")
    # (the last warp done with a buffer refills it without waiting)
    src = src.replace("rnnc_mb_wait(mb_ + NSB + ch_ % NSB, (eph_ >> (ch_ % NSB)) & 1u);", "", 1)
    return once(src, "rnnc_bulk_get(sm_ + xo_, BSRC(t & 1, ch_ + NSB), bn_, mb_ + ch_ % NSB);", ";")


def dbuf(src, which="wx"):
    """The k loop's operands named in `which` (w: weight rows, x: state rows)
    loaded one k step ahead into a second set of registers."""
    m, end = k_loop(src)
    ind, first, limit, step = m.groups()
    body = src[m.end():end + 1].splitlines(keepends=True)
    loads = [l for l in body if l.strip().startswith("const float4 ") and l.strip()[13] in which]
    rest = [l for l in body if l not in loads]
    names = [l.split("=")[0].split()[-1] for l in loads]
    exprs = [l.split("=", 1)[1].strip().rstrip(";") for l in loads]
    kk = [l for l in body if l.strip().startswith("const int kk =")][0].split("=", 1)[1].strip().rstrip(";")
    out = [ind + "float4 " + ", ".join(names) + ";\n", ind + "{\n",
           ind + f"    const int k = {first}, kk = {kk};\n"]
    out += [ind + f"    {n} = {e};\n" for n, e in zip(names, exprs)]
    out += [ind + "}\n", m.group(0)]
    for l in rest:
        if "fmaf(" in l:
            for n in names:
                l = l.replace(f"({n}.", f"(c{n}.").replace(f" {n}.", f" c{n}.")
        out.append(l)
        if l.strip().startswith("const int kk ="):
            out += [ind + f"    const float4 c{n} = {n};\n" for n in names]
            out += [ind + f"    if (k + {step} < {limit}) {{\n",
                    ind + f"        const int k_ = k + {step};\n",
                    ind + f"        const int kn2_ = {kk.replace('k', 'k_') if kk == 'k' else kk.replace('+ k', '+ k_')};\n"]
            out += [ind + "        " + f"{n} = " + re.sub(r"\bk\b", "k_", e.replace("kk", "kn2_")) + ";\n"
                    for n, e in zip(names, exprs)]
            out += [ind + "    }\n"]
    # the loop's own pragma stays on the loop
    at = m.start()
    pragma = re.search(r"#pragma unroll \d*\n$", src[:at])
    if pragma:
        at = pragma.start()
        out.insert(out.index(m.group(0)), pragma.group(0))
    return src[:at] + "".join(out) + src[end + 1:]


def bcast(src, which):
    m, end = k_loop(src)
    out = []
    for l in src[m.end():end + 1].splitlines(keepends=True):
        t = l.strip()
        if t.startswith("const float4 ") and t[13] in which:
            l = re.sub(r"\+ (kk|k)\]", r"+ \1 - ks * 4]", l)
            l = re.sub(r", k >> 2\)", ", (k - ks * 4) >> 2)", l)
        out.append(l)
    return src[:m.end()] + "".join(out) + src[end + 1:]


def jorder(src):
    """Each k's run of FFMAs a{i}_{j} = fmaf(w{i}.c, x{j}.c, ...) sorted by
    (j, i) instead of (i, j)."""
    m, end = k_loop(src)
    lines = src[m.end():end + 1].splitlines(keepends=True)
    key = re.compile(r"a(\d+)_(\d+) = fmaf\(\w+\.(\w), ")
    out, run = [], []
    for l in lines + [""]:
        k = key.search(l)
        if k and (not run or key.search(run[0]).group(3) == k.group(3)):
            run.append(l)
            continue
        run.sort(key=lambda r: (int(key.search(r).group(2)), int(key.search(r).group(1))))
        out += run
        run = [l] if k else []
        if not k:
            out.append(l)
    return src[:m.end()] + "".join(out) + src[end + 1:]


def fused(src):
    src = once(src, "for (int ch_ = 0; ch_ < NCHB; ++ch_) {", "for (int ch_ = 0; ch_ < 2 * NCHB; ++ch_) {")
    src = once(src, "(size_t)gb * 1024 + ch_ * KCB + c4 * 4", "(size_t)gb * 1024 + (ch_ % NCHB) * KCB + c4 * 4")
    src = once(src, "const int kn_ = min(32, 1024 - ch_ * 32), k0_ = ch_ * 32;",
               "const int kn_ = 32, k0_ = (ch_ & (NCHB - 1)) * 32;")
    src = once(src, "                        if (ch_ + NSB < NCHB) {\n",
               "                        if (ch_ + NSB < 2 * NCHB) {\n"
               "                            if (ch_ + NSB == NCHB && t > 0) {\n"
               "                                unsigned a_;\n"
               "                                do asm volatile(\"ld.acquire.gpu.global.u32 %0, [%1];\" : \"=r\"(a_) : \"l\"(bar + bb) : \"memory\");\n"
               "                                while ((int)(a_ - epoch * NUB) < 0);\n"
               "                                asm volatile(\"fence.proxy.async.global;\" : : : \"memory\");\n"
               "                            }\n")
    src = once(src, "BSRC(t & 1, ch_ + NSB)", "BSRC(t & 1, (ch_ + NSB) % NCHB)")
    src = once(src, CHUNK0, CHUNK0 + "                    if (ch_ == NCHB) TS(7);\n")
    return once(src, "            if (tid >= NT - 32) rnnc_wait(bar + bb, epoch * NUB);\n", "")


def main():
    src = open(sys.argv[1]).read()
    variant = sys.argv[2]
    # the marks
    src = once(src, STEP_TOP, STEP_TOP + "        TS(0);\n")
    if CHUNK0 in src:
        src = once(src, CHUNK0, CHUNK0 + "                    if (ch_ == 0) TS(1);\n")
        # the chunk loop ends at the first block barrier after the refill
        at = src.find(LOOP_END, src.find(REFILL))
        if src.find(REFILL) < 0 or at < 0:
            sys.exit("step_probe.py: no chunk loop end")
        src = src[:at] + "            TS(2);\n" + src[at:]
    else:
        # x staged whole: its barrier, then one k loop
        top = src.find(STEP_TOP)
        at = src.find(LOOP_END, top) + len(LOOP_END)
        src = src[:at] + "            TS(1);\n" + src[at:]
        m, end = k_loop(src, at)
        close = end + len(m.group(1)) + 3
        src = src[:close] + m.group(1) + "TS(2);\n" + src[close:]
    src = once(src, ELEM, "        TS(3);\n" + ELEM)
    src = once(src, ELEM_END, "        TS(4);\n" + ELEM_END)
    src = once(src, ARRIVE, ARRIVE + "            TS(5);\n")
    src = once(src, WAIT, WAIT + "            TS(6);\n")
    if variant == "nobar":
        src = once(src, "            if (tid >= NT - 32) rnnc_wait(bar + bb, epoch * NUB);\n", "")
    elif variant == "noelem":
        src = once(src, "        TS(3);\n" + ELEM,
                   "        TS(3);\n        for (int e = tid; e < 0 * E; e += NT) {\n")
    elif variant == "nomul":
        m, _ = k_loop(src)
        src = src[:m.start(3)] + "0 * " + src[m.start(3):]
    elif variant == "norel":
        src = once(src, "                            rnnc_mb_wait(mb_ + NSB + ch_ % NSB, (eph_ >> (ch_ % NSB)) & 1u);\n", "")
    elif variant == "pure":
        src = no_copies(src)
    elif variant == "dbuf":
        src = dbuf(src)
    elif variant == "xahead":
        src = dbuf(src, "x")
    elif variant == "wahead":
        src = dbuf(src, "w")
    elif variant == "puredbuf":
        src = dbuf(no_copies(src))
    elif variant in ("wbcast", "xbcast", "bcast"):
        src = bcast(src, {"wbcast": "w", "xbcast": "x", "bcast": "wx"}[variant])
    elif variant == "jorder":
        src = jorder(src)
    elif variant == "unroll8":
        m, _ = k_loop(src)
        pre = src.rfind("#pragma unroll 4\n", 0, m.start())
        if pre < 0:
            sys.exit("step_probe.py: no k loop")
        src = src[:pre] + "#pragma unroll 8\n" + src[pre + len("#pragma unroll 4\n"):]
    elif variant == "halfcopy":
        src = once(src, "BSRC(t & 1, s_), bn_, mb_", "BSRC(t & 1, s_), bn_ / 2, mb_")
        src = once(src, "BSRC(t & 1, ch_ + NSB), bn_, mb_", "BSRC(t & 1, ch_ + NSB), bn_ / 2, mb_")
    elif variant == "mod":
        src = once(src, "const int kn_ = min(32, 1024 - ch_ * 32), k0_ = ch_ * 32;",
                   "const int kn_ = 32, k0_ = (ch_ & (NCHB - 1)) * 32;")
    elif variant == "fused":
        src = fused(src)
    elif variant != "marks":
        sys.exit(f"step_probe.py: no variant {variant}")
    sys.stdout.write(src)


if __name__ == "__main__":
    main()
