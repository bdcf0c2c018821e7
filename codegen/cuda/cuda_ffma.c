/*
 * cuda_ffma.c: a step linear on the FFMA pipes.  Requires: cu_choose_tiles
 * has laid out the lanes (RR weight rows x BB batch rows a lane, K split
 * over KS adjacent lanes, ks[lin]) and x is staged by the caller's stage
 * function; keeps: the result in SM_L<lin> ([row][BTP + 1]), where the
 * element phase reads it.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

static int ilog2(int v)
{
    int l = 0;
    while ((1 << (l + 1)) <= v)
        l++;
    return l;
}

/* The accumulator at position p of the lane's RR x BB tile (row-major). */
static const char *acc(const cu_ctx *c, int p, char *buf, size_t n)
{
    snprintf(buf, n, "a%d_%d", p / c->BB, p % c->BB);
    return buf;
}

/* Sums the lane's RR BB values over the KS lanes that split K (adjacent
 * lanes, xor offsets KS/2 .. 1).  While a lane holds more than one value
 * the levels reduce-scatter: each keeps half (the upper half where its bit
 * of the offset is set) and adds its partner's copy of that half, RR BB
 * (1 - 1/KS) shuffles a lane in all; the rest are plain butterflies.
 * A butterfly per value (emit_butterflies) takes RR BB log2(KS) shuffles a
 * lane and leaves the sums to one lane in KS to store. */
static void emit_ksum(const cu_ctx *c, int KS, cu_text *t)
{
    char a[32], b[32];
    int n = c->RR * c->BB, o = KS / 2;
    for (; o > 0 && n > 1; o /= 2, n /= 2) {
        cu_printf(t, "        {\n            const bool hi_ = (ks & %d) != 0;\n", o);
        for (int p = 0; p < n / 2; p++) {
            acc(c, p, a, sizeof a);
            acc(c, p + n / 2, b, sizeof b);
            cu_printf(t,
                      "            { const float s_ = hi_ ? %s : %s; %s = (hi_ ? %s : %s) + "
                      "__shfl_xor_sync(0xffffffffu, s_, %d); }\n",
                      a, b, a, b, a, o);
        }
        cu_printf(t, "        }\n");
    }
    for (; o > 0; o /= 2)
        cu_printf(t, "        a0_0 += __shfl_xor_sync(0xffffffffu, a0_0, %d);\n", o);
}

/* Each lane stores the sums it was left: positions 0 .. per-1 of its
 * values, which are tile positions blk * per + p, blk the top bits of ks
 * that the reduce-scatter used; lanes differing only in the lower bits
 * hold the same sums and the first stores them. */
static void emit_put(const cu_ctx *c, int32_t lin, int KS, cu_text *t)
{
    int n = c->RR * c->BB, lk = ilog2(KS), ln = ilog2(n);
    int levels = lk < ln ? lk : ln, per = n >> levels, low = lk - levels;
    int NTR = cu_slices(c, lin) * c->UT / c->RR, NTB = c->BTP / c->BB;
    char a[32];
    cu_printf(t, "        if (tr0 < %d && (ks & %d) == 0) {\n"
                 "            const int v0_ = (ks >> %d) * %d; (void)v0_;\n",
              NTR, (1 << low) - 1, low, per);
    for (int p = 0; p < per; p++)
        cu_printf(t,
                  "            { const int v = v0_ + %d; sm_[SM_L%d + (tr + v / %d * %d) * (BTP + 1) "
                  "+ tb + v %% %d * %d] = %s; }\n",
                  p, (int)lin, c->BB, NTR, c->BB, NTB, acc(c, p, a, sizeof a));
    cu_printf(t, "        }\n");
}

/* One k step of 4 of the FFMA multiply (k, kk in scope): RR weight and BB
 * x words, 4 RR BB FMAs; kept: the weights from a streamed linear's
 * leading columns in shared memory. */
static void emit_kstep(const cu_ctx *c, int32_t lin, bool kept, cu_text *t)
{
    static const char *q[4] = {"x", "y", "z", "w"};
    int NTB = c->BTP / c->BB;
    for (int i = 0; i < c->RR; i++)
        cu_emit_wload(c, lin, i, kept, t);
    for (int j = 0; j < c->BB; j++)
        if (cu_bulk_staged(c, lin)) /* (cuda_bulk.c) */
            cu_printf(t,
                      "            const float4 x%d = *(const float4 *)&sm_[xo_ + (tb + %d) * KCB + "
                      "(BSW(tb + %d, k >> 2) << 2)];\n",
                      j, j * NTB, j * NTB);
        else
            cu_printf(t, "            const float4 x%d = *(const float4 *)&sm_[(tb + %d) * %d + k];\n",
                      j, j * NTB, c->xkp[lin]);
    for (int e = 0; e < 4; e++)
        for (int i = 0; i < c->RR; i++)
            for (int j = 0; j < c->BB; j++)
                cu_printf(t, "            a%d_%d = fmaf(w%d.%s, x%d.%s, a%d_%d);\n", i, j, i, q[e],
                          j, q[e], i, j);
    cu_printf(t, "        }\n");
}

/* 8 x 8 tiles (64 values, 256 threads) sum each value over the KS lanes
 * by a butterfly and the first lane stores them all: the reduce-scatter
 * lost there on the H100 (I = H = 1024 B = 64 3.43 -> 3.46 ms, B = 256
 * 12.38 -> 12.61; bench/results/h100/ksum/), while with 32 values it
 * won (B = 64 8 x 4 at 512 threads 1.070 -> 0.970, B = 128 1.751 ->
 * 1.703). */
static void emit_butterflies(const cu_ctx *c, int32_t lin, int KS, cu_text *t)
{
    int NTR = cu_slices(c, lin) * c->UT / c->RR, NTB = c->BTP / c->BB;
    for (int i = 0; i < c->RR; i++)
        for (int j = 0; j < c->BB && KS > 1; j++)
            cu_printf(t,
                      "        for (int o = %d; o > 0; o >>= 1) a%d_%d += "
                      "__shfl_xor_sync(0xffffffffu, a%d_%d, o);\n",
                      KS / 2, i, j, i, j);
    cu_printf(t, "        if (ks == 0 && tr0 < %d) {\n", NTR);
    for (int i = 0; i < c->RR; i++)
        for (int j = 0; j < c->BB; j++)
            cu_printf(t, "            sm_[SM_L%d + (tr + %d) * (BTP + 1) + tb + %d] = a%d_%d;\n",
                      (int)lin, i * NTR, j * NTB, i, j);
    cu_printf(t, "        }\n");
}

rnnc_status cu_emit_ffma_linear(const cu_ctx *c, int32_t lin, cu_text *t,
                                rnnc_status (*stage)(const cu_ctx *, int32_t, bool, cu_text *))
{
    long long K4 = (c->cols[c->f->nodes[lin].a[0]] + 3) / 4 * 4, KC = c->kc[lin];
    int R = cu_slices(c, lin) * c->UT, NTR = R / c->RR, NTB = c->BTP / c->BB, KS = c->ks[lin];
    bool chunked = KC < K4;
    rnnc_status st;
    char d[256];
    cu_printf(t, "    /* %s: lanes own %d x %d outputs, K split %d ways */\n",
              cu_describe(c, lin, d, sizeof d), c->RR, c->BB, KS);
    cu_printf(t,
              "    {\n        const int ks = tid %% %d, cell = tid / %d, tb = cell %% %d, tr0 = "
              "cell / %d;\n        const int tr = tr0 < %d ? tr0 : %d;\n",
              KS, KS, NTB, NTB, NTR, NTR - 1);
    cu_emit_wrows(c, lin, t);
    for (int i = 0; i < c->RR; i++)
        for (int j = 0; j < c->BB; j++)
            cu_printf(t, "        float a%d_%d = 0.f;\n", i, j);
    if ((st = stage(c, lin, chunked, t)))
        return st;
    if (chunked) {
        cu_printf(t,
                  "        const int kn_ = min(%lld, %lld - ch_ * %lld), k0_ = ch_ * %lld;\n"
                  "#pragma unroll 4\n        for (int k = ks * 4; k < kn_; k += %d) {\n"
                  "            const int kk = k0_ + k;\n",
                  KC, K4, KC, KC, 4 * KS);
        emit_kstep(c, lin, false, t);
    } else {
        long long KR = c->stream ? c->kr[lin] : 0;
        if (KR) {
            cu_printf(t, "#pragma unroll 4\n        for (int k = ks * 4; k < %lld; k += %d) {\n"
                         "            const int kk = k;\n", KR, 4 * KS);
            emit_kstep(c, lin, true, t);
        }
        char k0[32] = "";
        if (KR)
            snprintf(k0, sizeof k0, "%lld + ", KR);
        cu_printf(t, "#pragma unroll 4\n        for (int k = %sks * 4; k < %lld; k += %d) {\n"
                     "            const int kk = k;\n", k0, K4, 4 * KS);
        emit_kstep(c, lin, false, t);
    }
    if (chunked && cu_bulk_staged(c, lin)) {
        cu_emit_bulk_chunk_end(c, t, "ch_");
        /* every warp past the buffers: the result goes over them */
        cu_printf(t, "    }\n    __syncthreads();\n");
    } else if (chunked) {
        cu_printf(t, "        __syncthreads();\n    }\n");
    }
    if (c->RR * c->BB <= 32) {
        emit_ksum(c, KS, t);
        emit_put(c, lin, KS, t);
    } else {
        emit_butterflies(c, lin, KS, t);
    }
    cu_printf(t, "    }\n    __syncthreads();\n");
    return RNNC_OK;
}

