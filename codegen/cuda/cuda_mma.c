/*
 * cuda_mma.c: tensor-core (mma.sync m16n8k8, TF32 operands, fp32
 * accumulation) code for the fp32 math modes tf32 and 3xtf32, in the
 * persistent step kernel's linears and in the hoisted GEMMs.
 *
 * tf32 rounds each operand to TF32 (cvt.rna, as cuDNN's TF32 mode) and
 * takes one product.  3xtf32 splits each operand a into hi = tf32(a) and
 * lo = tf32(a - hi) and sums lo*hi + hi*lo + hi*hi (the small terms first):
 * the lost lo*lo term is about 2^-22 relative, so the result keeps about
 * fp32 accuracy on tensor cores.
 *
 * Fragment layout of m16n8k8 (PTX ISA, "Matrix fragments for mma.m16n8k8"
 * with .tf32), lane = 4 g + q: A (16 x 8, row-major) a0 = (g, q),
 * a1 = (g + 8, q), a2 = (g, q + 4), a3 = (g + 8, q + 4); B (8 x 8) b0 =
 * (k q, n g), b1 = (k q + 4, n g); C/D (16 x 8) c0 = (g, 2q), c1 = (g,
 * 2q + 1), c2 = (g + 8, 2q), c3 = (g + 8, 2q + 1).  In the step the A
 * operand is the block's W slice (rows of W are rows of A, K contiguous)
 * and the B operand is the staged x (batch row n, K contiguous: B in
 * "col" layout); shared rows padded to 4 mod 32 floats make both loads
 * free of bank conflicts.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

/* Tiles a warp takes at most in the step (accumulators: 8 per tile). */
#define MMA_MAX_TILES_PER_WARP 4

static int32_t slices(const cu_ctx *c, int32_t v)
{
    return c->k[v] < 1 ? 1 : c->k[v];
}

void cu_emit_mma_helpers(const cu_ctx *c, cu_text *t)
{
    if (c->cfg.math == 0)
        return;
    cu_printf(t,
              "#define RNNC_MATH %d\n"
              "__device__ __forceinline__ unsigned rnnc_tf32(float x)\n{\n"
              "    unsigned r;\n"
              "    asm(\"cvt.rna.tf32.f32 %%0, %%1;\" : \"=r\"(r) : \"f\"(x));\n"
              "    return r;\n}\n"
              "/* hi and (3xtf32) lo TF32 parts of x */\n"
              "__device__ __forceinline__ void rnnc_sp(float x, unsigned &h, unsigned &l)\n{\n"
              "    h = rnnc_tf32(x);\n"
              "#if RNNC_MATH == 2\n"
              "    l = rnnc_tf32(x - __uint_as_float(h));\n"
              "#else\n"
              "    l = 0u;\n"
              "#endif\n}\n"
              "__device__ __forceinline__ void rnnc_mma8(float &d0, float &d1, float &d2, float &d3, "
              "unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1)\n{\n"
              "    asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
              "{%%0, %%1, %%2, %%3}, {%%4, %%5, %%6, %%7}, {%%8, %%9}, {%%0, %%1, %%2, %%3};\"\n"
              "                 : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3)\n"
              "                 : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n}\n"
              "/* d += a b in the math mode: a (4) and b (2) as hi and lo parts */\n"
              "__device__ __forceinline__ void rnnc_mma3(float &d0, float &d1, float &d2, float &d3, "
              "const unsigned *ah, const unsigned *al, const unsigned *bh, const unsigned *bl)\n{\n"
              "#if RNNC_MATH == 2\n"
              "    rnnc_mma8(d0, d1, d2, d3, al[0], al[1], al[2], al[3], bh[0], bh[1]);\n"
              "    rnnc_mma8(d0, d1, d2, d3, ah[0], ah[1], ah[2], ah[3], bl[0], bl[1]);\n"
              "#else\n"
              "    (void)al; (void)bl;\n"
              "#endif\n"
              "    rnnc_mma8(d0, d1, d2, d3, ah[0], ah[1], ah[2], ah[3], bh[0], bh[1]);\n}\n",
              c->cfg.math);
}

/* ---------------------------------------------------------------- step */

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t step_tiles(const cu_ctx *c, int32_t lin)
{
    return cdiv((int64_t)slices(c, lin) * c->UT, 16) * cdiv(c->BTP, 8);
}

/* Whether linear lin of the step runs on tensor cores when x is staged
 * `chunk` columns at a time: a TF32 math mode or a half model, weights on chip, K and the
 * chunk whole numbers of two k-steps, and enough tiles for at least half
 * the warps (at small batches the step is latency-bound and FFMA, more
 * accurate, is as fast). */
bool cu_mma_fits(const cu_ctx *c, int32_t lin, int64_t chunk)
{
    int64_t K = c->cols[c->f->nodes[lin].a[0]], tiles = step_tiles(c, lin), nw = c->NT / 32;
    /* 16-bit mma.sync m16n8k16 (and bf16 at all) needs sm_80 */
    if ((c->cfg.math == 0 && !c->half) || (c->half && c->cfg.sm < 80) || c->stream || K % 16 ||
        chunk % 16)
        return false;
    return tiles * 2 >= nw && tiles <= nw * MMA_MAX_TILES_PER_WARP;
}

/* The fragment loads, splits and products of one k-step of 8 columns at
 * x column `k` (weight column `kk`), accumulator set s. */
static void emit_kstep(cu_text *t, int tpw, const char *k, const char *kk, int s)
{
    for (int j = 0; j < tpw; j++)
        cu_printf(t,
                  "            {\n"
                  "                unsigned ah[4], al[4], bh[2], bl[2];\n"
                  "                rnnc_sp(wa%d_[%s], ah[0], al[0]); rnnc_sp(wb%d_[%s], ah[1], al[1]);\n"
                  "                rnnc_sp(wa%d_[%s + 4], ah[2], al[2]); rnnc_sp(wb%d_[%s + 4], ah[3], al[3]);\n"
                  "                rnnc_sp(xa%d_[%s], bh[0], bl[0]); rnnc_sp(xa%d_[%s + 4], bh[1], bl[1]);\n"
                  "                rnnc_mma3(d%d_[%d][0], d%d_[%d][1], d%d_[%d][2], d%d_[%d][3], ah, al, bh, bl);\n"
                  "            }\n",
                  j, kk, j, kk, j, kk, j, kk, j, k, j, k, j, s, j, s, j, s, j, s);
}

/* Each tile's sum of its na accumulator sets into the linear's result
 * rows in shared memory (SM_L). */
void cu_emit_mma_results(const cu_ctx *c, int32_t lin, int tpw, int tiles, int na, int R,
                         cu_text *t)
{
    int nw = c->NT / 32;
    for (int j = 0; j < tpw; j++) {
        cu_printf(t,
                  "        if (wp_ + %d < %d) {\n"
                  "            const int r_ = mt%d_ * 16 + g_, n_ = nt%d_ * 8 + 2 * q_;\n"
                  "            float *const o_ = sm_ + SM_L%d;\n"
                  "            for (int h_ = 0; h_ < 2; ++h_)\n"
                  "                for (int e_ = 0; e_ < 2; ++e_)\n"
                  "                    if (r_ + 8 * h_ < %d && n_ + e_ < BTP)\n"
                  "                        o_[(r_ + 8 * h_) * (BTP + 1) + n_ + e_] = ",
                  j * nw, tiles, j, j, (int)lin, R);
        for (int a = 0; a < na; a++)
            cu_printf(t, "%sd%d_[%d][2 * h_ + e_]", a ? " + " : "", j, a);
        cu_printf(t, ";\n        }\n");
    }
}

rnnc_status cu_emit_mma_kloop(const cu_ctx *c, int32_t lin, const cu_mma_kloop *l, cu_text *t)
{
    long long K = (long long)c->cols[c->f->nodes[lin].a[0]], KC = c->kc[lin];
    bool chunked = KC < K;
    rnnc_status st;
    if (chunked)
        cu_printf(t, "    for (int ch_ = 0; ch_ < %lld; ++ch_) {\n", (K + KC - 1) / KC);
    if ((st = l->stage(c, lin, chunked, t)))
        return st;
    if (chunked)
        cu_printf(t,
                  "        const int kn_ = min(%lld, %lld - ch_ * %lld), k0_ = ch_ * %lld;\n"
                  "#pragma unroll 2\n        for (int k = 0; k < kn_; k += %d) {\n"
                  "            const int kk = k0_ + k;\n",
                  KC, K, KC, KC, l->kw * l->na);
    else
        cu_printf(t, "#pragma unroll 2\n        for (int k = 0; k < %lld; k += %d) {\n"
                     "            const int kk = k;\n", K, l->kw * l->na);
    for (int a = 0; a < l->na; a++) {
        char k[48], kk[48];
        snprintf(k, sizeof k, l->col, "k", 8 * a);
        snprintf(kk, sizeof kk, l->col, "kk", 8 * a);
        l->kstep(t, l->tpw, k, kk, a);
    }
    cu_printf(t, "        }\n");
    if (chunked)
        cu_printf(t, "        __syncthreads();\n    }\n");
    return RNNC_OK;
}

/* The step linear lin on tensor cores: warp w owns tiles w, w + NW, ...
 * (16 weight rows x 8 batch rows each) over all of K; two accumulator
 * sets (even and odd k-steps) keep two products in flight per tile. */
rnnc_status cu_emit_mma_linear(const cu_ctx *c, int32_t lin, cu_text *t,
                               rnnc_status (*stage)(const cu_ctx *, int32_t, bool, cu_text *))
{
    long long K = (long long)c->cols[c->f->nodes[lin].a[0]], KC = c->kc[lin];
    int R = slices(c, lin) * c->UT, NTN = (int)cdiv(c->BTP, 8), nw = c->NT / 32;
    int tiles = (int)step_tiles(c, lin), tpw = (int)cdiv(tiles, nw);
    /* independent accumulator sets per tile (k-steps round robin): a warp
     * owns few tiles, so its products form chains of mma latency */
    int na = K % 32 == 0 && KC % 32 == 0 ? 4 : 2;
    cu_mma_kloop loop = {.na = na, .kw = 8, .tpw = tpw, .col = "%s + %d", .stage = stage,
                         .kstep = emit_kstep};
    rnnc_status st;
    cu_printf(t, "    {\n        const int wp_ = tid >> 5, g_ = (tid & 31) >> 2, q_ = tid & 3;\n");
    for (int j = 0; j < tpw; j++)
        cu_printf(t,
                  "        const int tl%d_ = min(wp_ + %d, %d), mt%d_ = tl%d_ / %d, nt%d_ = tl%d_ %% %d;\n"
                  "        const float *const wa%d_ = sm_ + SM_W%d + min(mt%d_ * 16 + g_, %d) * %d + q_;\n"
                  "        const float *const wb%d_ = sm_ + SM_W%d + min(mt%d_ * 16 + g_ + 8, %d) * %d + q_;\n"
                  "        const float *const xa%d_ = sm_ + min(nt%d_ * 8 + g_, BTP - 1) * %d + q_;\n"
                  "        float d%d_[%d][4] = {};\n",
                  j, j * nw, tiles - 1, j, j, NTN, j, j, NTN, j, (int)lin, j, R - 1,
                  c->kp[lin], j, (int)lin, j, R - 1, c->kp[lin], j, j, c->xkp[lin],
                  j, na);
    if ((st = cu_emit_mma_kloop(c, lin, &loop, t)))
        return st;
    cu_emit_mma_results(c, lin, tpw, tiles, na, R, t);
    cu_printf(t, "    }\n    __syncthreads();\n");
    return RNNC_OK;
}

/* ---------------------------------------------------------------- hoist */

/* Warps of a hoisted GEMM tile (8 of 256 threads): 4 x 2 for 128 rows,
 * else 2 x 4; each warp owns a (bm / wm) x (bn / wn) sub-tile of 16 x 8
 * mma tiles. */
static void gemm_warps(int bm, int bn, int *wm, int *mtw, int *ntw)
{
    *wm = bm >= 128 ? 4 : 2;
    *mtw = bm / *wm / 16;
    *ntw = bn / (8 / *wm) / 8;
}

bool cu_mma_gemm(const cu_ctx *c, int bm, int bn, int bk)
{
    int wm, mtw, ntw;
    gemm_warps(bm, bn, &wm, &mtw, &ntw);
    return (c->cfg.math != 0 || (c->half && c->cfg.sm >= 80)) && bk % 8 == 0 && mtw >= 1 &&
           ntw >= 1;
}

/* The accumulators c_[2 mtw][2 ntw]: element (i, j) is row (i >> 1) * 16 +
 * (i & 1) * 8 + g and column (j >> 1) * 8 + 2 q + (j & 1) of the warp's
 * sub-tile.  Writes the tile-row and tile-column expressions. */
void cu_mma_gemm_layout(int bm, int bn, int *tm, int *tn, char *ri, char *ci, size_t n)
{
    int wm, mtw, ntw;
    gemm_warps(bm, bn, &wm, &mtw, &ntw);
    *tm = 2 * mtw;
    *tn = 2 * ntw;
    snprintf(ri, n, "(tid >> 5) / %d * %d + (i >> 1) * 16 + (i & 1) * 8 + ((tid & 31) >> 2)",
             8 / wm, mtw * 16);
    snprintf(ci, n, "(tid >> 5) %% %d * %d + (j >> 1) * 8 + 2 * (tid & 3) + (j & 1)", 8 / wm,
             ntw * 8);
}

/* The start of a GEMM slice on tensor cores, both dtypes: the lane's
 * fragment coordinates, the warp's corner of the tile, the loop over the
 * slice's k-steps of 8. */
static void emit_slice_head(cu_text *t, int wm, int mtw, int ntw, int bk)
{
    cu_printf(t,
              "        {\n"
              "        const int g_ = (tid & 31) >> 2, q_ = tid & 3;\n"
              "        const int wr_ = (tid >> 5) / %d * %d, wc_ = (tid >> 5) %% %d * %d;\n"
              "#pragma unroll\n"
              "        for (int kk = 0; kk < %d; kk += 8) {\n",
              8 / wm, mtw * 16, 8 / wm, ntw * 8, bk);
}

/* The same for a half model: m16n8k8 with 16-bit operands (PTX
 * "Matrix fragments for mma.m16n8k8" with .f16/.bf16: a0 = (g, k 2q..2q+1),
 * a1 = (g + 8, k 2q..), b0 = (k 2q.., n g)); the tiles hold the 16-bit
 * inputs widened to fp32, so packing two of them back is exact. */
static void emit_gemm_slice_half(cu_text *t, int wm, int mtw, int ntw, int bk)
{
    emit_slice_head(t, wm, mtw, ntw, bk);
    cu_printf(t,
              "            unsigned a_[%d][2], b_[%d];\n"
              "#pragma unroll\n"
              "            for (int i = 0; i < %d; ++i) {\n"
              "                a_[i][0] = rnnc_pk2(As[cb][kk + 2 * q_][wr_ + i * 16 + g_], "
              "As[cb][kk + 2 * q_ + 1][wr_ + i * 16 + g_]);\n"
              "                a_[i][1] = rnnc_pk2(As[cb][kk + 2 * q_][wr_ + i * 16 + g_ + 8], "
              "As[cb][kk + 2 * q_ + 1][wr_ + i * 16 + g_ + 8]);\n"
              "            }\n"
              "#pragma unroll\n"
              "            for (int j = 0; j < %d; ++j)\n"
              "                b_[j] = rnnc_pk2(Ws[cb][kk + 2 * q_][wc_ + j * 8 + g_], "
              "Ws[cb][kk + 2 * q_ + 1][wc_ + j * 8 + g_]);\n"
              "#pragma unroll\n"
              "            for (int i = 0; i < %d; ++i)\n"
              "#pragma unroll\n"
              "                for (int j = 0; j < %d; ++j)\n"
              "                    rnnc_mma8h(c_[2 * i][2 * j], c_[2 * i][2 * j + 1], c_[2 * i + 1][2 * j], "
              "c_[2 * i + 1][2 * j + 1], a_[i][0], a_[i][1], b_[j]);\n"
              "        }\n"
              "        }\n",
              mtw, ntw, mtw, ntw, mtw, ntw);
}

/* One slice (bk columns of K) of the GEMM tile on tensor cores: As[cb][k][m]
 * and Ws[cb][k][n] hold the slice (k-major). */
void cu_emit_mma_gemm_slice(cu_text *t, int bm, int bn, int bk, bool half)
{
    int wm, mtw, ntw;
    gemm_warps(bm, bn, &wm, &mtw, &ntw);
    if (half) {
        emit_gemm_slice_half(t, wm, mtw, ntw, bk);
        return;
    }
    emit_slice_head(t, wm, mtw, ntw, bk);
    cu_printf(t,
              "            unsigned ah[%d][4], al[%d][4], bh[%d][2], bl[%d][2];\n"
              "#pragma unroll\n"
              "            for (int i = 0; i < %d; ++i) {\n"
              "                rnnc_sp(As[cb][kk + q_][wr_ + i * 16 + g_], ah[i][0], al[i][0]);\n"
              "                rnnc_sp(As[cb][kk + q_][wr_ + i * 16 + g_ + 8], ah[i][1], al[i][1]);\n"
              "                rnnc_sp(As[cb][kk + q_ + 4][wr_ + i * 16 + g_], ah[i][2], al[i][2]);\n"
              "                rnnc_sp(As[cb][kk + q_ + 4][wr_ + i * 16 + g_ + 8], ah[i][3], al[i][3]);\n"
              "            }\n"
              "#pragma unroll\n"
              "            for (int j = 0; j < %d; ++j) {\n"
              "                rnnc_sp(Ws[cb][kk + q_][wc_ + j * 8 + g_], bh[j][0], bl[j][0]);\n"
              "                rnnc_sp(Ws[cb][kk + q_ + 4][wc_ + j * 8 + g_], bh[j][1], bl[j][1]);\n"
              "            }\n"
              "#pragma unroll\n"
              "            for (int i = 0; i < %d; ++i)\n"
              "#pragma unroll\n"
              "                for (int j = 0; j < %d; ++j)\n"
              "                    rnnc_mma3(c_[2 * i][2 * j], c_[2 * i][2 * j + 1], c_[2 * i + 1][2 * j], "
              "c_[2 * i + 1][2 * j + 1], ah[i], al[i], bh[j], bl[j]);\n"
              "        }\n"
              "        }\n",
              mtw, mtw, ntw, ntw, mtw, ntw, mtw, ntw);
}
