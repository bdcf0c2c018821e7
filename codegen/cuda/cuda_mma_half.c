/*
 * cuda_mma_half.c: the step's linears of a half-precision model (F16,
 * BF16) on tensor cores: mma.sync m16n8k16 with 16-bit operands and fp32
 * accumulators, the structure of the TF32 version (cuda_mma.c).
 *
 * Fragment layout of m16n8k16 with .f16/.bf16 (PTX ISA, "Matrix fragments
 * for mma.m16n8k16"), lane = 4 g + q, each register two 16-bit values at
 * consecutive k: A (16 x 16, row-major) a0 = (g, 2q..2q+1), a1 = (g + 8,
 * 2q..), a2 = (g, 2q+8..), a3 = (g + 8, 2q+8..); B (16 x 8) b0 = (k 2q..2q+1,
 * n g), b1 = (k 2q+8.., n g); C/D as m16n8k8.  A is the block's W slice
 * (16-bit in shared memory, K contiguous), B the staged x, which a half
 * model's tensor-core step stages as 16-bit values (its fp32 h rounded to
 * the dtype for the product only: the states themselves stay fp32).  Rows
 * padded to 8 mod 64 halves (4 mod 32 words) make both 32-bit fragment
 * loads free of bank conflicts.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* One k-step of 16 columns for every tile of the warp: x word `k`, weight
 * word `kk` (32-bit words: pairs of 16-bit values), accumulator set s. */
static void emit_kstep(cu_text *t, int tpw, const char *k, const char *kk, int s)
{
    for (int j = 0; j < tpw; j++)
        cu_printf(t,
                  "            rnnc_mma16(d%d_[%d][0], d%d_[%d][1], d%d_[%d][2], d%d_[%d][3], "
                  "wa%d_[%s], wb%d_[%s], wa%d_[%s + 4], wb%d_[%s + 4], xa%d_[%s], xa%d_[%s + 4]);\n",
                  j, s, j, s, j, s, j, s, j, kk, j, kk, j, kk, j, kk, j, k, j, k);
}

/* Warp w owns tiles w, w + NW, ... (16 weight rows x 8 batch rows) over
 * all of K, with na accumulator sets (k-steps round robin). */
rnnc_status cu_emit_mma_linear_half(const cu_ctx *c, int32_t lin, cu_text *t,
                                    rnnc_status (*stage)(const cu_ctx *, int32_t, bool, cu_text *))
{
    int R = (c->k[lin] < 1 ? 1 : c->k[lin]) * c->UT, NTN = (int)cdiv(c->BTP, 8), nw = c->NT / 32;
    long long K = (long long)c->cols[c->f->nodes[lin].a[0]], KC = c->kc[lin];
    int tiles = (int)(cdiv(R, 16) * NTN), tpw = (int)cdiv(tiles, nw);
    int na = K % 64 == 0 && KC % 64 == 0 ? 4 : K % 32 == 0 && KC % 32 == 0 ? 2 : 1;
    /* 32-bit words of x and W hold pairs of k: word (k >> 1) */
    cu_mma_kloop loop = {.na = na, .kw = 16, .tpw = tpw, .col = "(%s >> 1) + %d", .stage = stage,
                         .kstep = emit_kstep};
    char d[256];
    rnnc_status st;
    cu_printf(t, "    /* %s: tensor cores, %d tiles of 16 x 8 over %d warps */\n",
              cu_describe(c, lin, d, sizeof d), tiles, nw);
    cu_printf(t, "    {\n        const int wp_ = tid >> 5, g_ = (tid & 31) >> 2, q_ = tid & 3;\n");
    for (int j = 0; j < tpw; j++)
        cu_printf(t,
                  "        const int tl%d_ = min(wp_ + %d, %d), mt%d_ = tl%d_ / %d, nt%d_ = tl%d_ %% %d;\n"
                  "        const unsigned *const wa%d_ = (const unsigned *)(smh_ + 2 * SM_W%d + "
                  "min(mt%d_ * 16 + g_, %d) * %d) + q_;\n"
                  "        const unsigned *const wb%d_ = (const unsigned *)(smh_ + 2 * SM_W%d + "
                  "min(mt%d_ * 16 + g_ + 8, %d) * %d) + q_;\n"
                  "        const unsigned *const xa%d_ = (const unsigned *)(smh_ + min(nt%d_ * 8 + g_, "
                  "BTP - 1) * %d) + q_;\n"
                  "        float d%d_[%d][4] = {};\n",
                  j, j * nw, tiles - 1, j, j, NTN, j, j, NTN, j, (int)lin, j, R - 1, c->kp[lin], j,
                  (int)lin, j, R - 1, c->kp[lin], j, j, c->xkp[lin], j, na);
    if ((st = cu_emit_mma_kloop(c, lin, &loop, t)))
        return st;
    cu_emit_mma_results(c, lin, tpw, tiles, na, R, t);
    cu_printf(t, "    }\n    __syncthreads();\n");
    return RNNC_OK;
}
