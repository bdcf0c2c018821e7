/*
 * cuda_mma.c: tensor-core (mma.sync m16n8k8, TF32 operands, fp32
 * accumulation) helpers for the fp32 math modes tf32 and 3xtf32, and the
 * hoisted GEMMs' slices on tensor cores (both kinds; the step's linears
 * are cuda_mma_step.c).
 *
 * tf32 rounds each operand to TF32 and takes one product: to nearest even
 * on sm_90 (cvt.rn.tf32, one F2FP instruction there), which is what
 * cuDNN's TF32 mode computes (half the difference from it that cvt.rna
 * left: 1.9e-5 against 4.05e-5 on the LSTM at B = 64,
 * bench/results/h100/x3split/); sm_80 has only cvt.rna (ties away).
 * 3xtf32 splits each operand a into hi = tf32(a) and lo = a - hi (exact
 * in fp32), and sums lo*hi + hi*lo + hi*hi (the small terms first).  The
 * tensor cores read a .tf32 operand's top 19 bits and ignore the rest, so
 * lo goes to them as it is (truncated there by at most its last bit,
 * about 2^-23 relative; the lost lo*lo term is about 2^-22), and the
 * result keeps about fp32 accuracy.  So a split is two instructions on
 * sm_90 (on sm_80 hi is a's top 19 bits, a mask: lo then loses up to two
 * bits); rounding both parts with cvt.rna, about three integer and
 * compare instructions each, made the LSTM at B = 64 0.92 ms against
 * 0.76 with the mask (bench/results/h100/x3split/).
 *
 * Fragment layout of m16n8k8 (PTX ISA, "Matrix fragments for mma.m16n8k8"
 * with .tf32), lane = 4 g + q: A (16 x 8, row-major) a0 = (g, q),
 * a1 = (g + 8, q), a2 = (g, q + 4), a3 = (g + 8, q + 4); B (8 x 8) b0 =
 * (k q, n g), b1 = (k q + 4, n g); C/D (16 x 8) c0 = (g, 2q), c1 = (g,
 * 2q + 1), c2 = (g + 8, 2q), c3 = (g + 8, 2q + 1).
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

void cu_emit_ldsm_helpers(cu_text *t)
{
    cu_printf(t,
              "__device__ __forceinline__ void rnnc_ldsm4(unsigned *r, const void *p)\n{\n"
              "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
              "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%%0, %%1, %%2, %%3}, [%%4];\"\n"
              "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n}\n"
              "__device__ __forceinline__ void rnnc_ldsm2(unsigned *r, const void *p)\n{\n"
              "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
              "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%%0, %%1}, [%%2];\"\n"
              "                 : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(a));\n}\n");
}

void cu_emit_mma_helpers(const cu_ctx *c, cu_text *t)
{
    if (c->cfg.math == 0)
        return;
    if (!c->half) /* (a half model's helpers have them) */
        cu_emit_ldsm_helpers(t);
    bool rn = c->cfg.sm >= 90; /* cvt.rn.tf32 needs sm_90 */
    cu_printf(t,
              "#define RNNC_MATH %d\n"
              "__device__ __forceinline__ unsigned rnnc_tf32(float x)\n{\n"
              "    unsigned r;\n"
              "    asm(\"cvt.%s.tf32.f32 %%0, %%1;\" : \"=r\"(r) : \"f\"(x));\n"
              "    return r;\n}\n"
              "/* hi and (3xtf32) lo TF32 parts of x: lo keeps bits the tensor cores ignore */\n"
              "__device__ __forceinline__ void rnnc_sp(float x, unsigned &h, unsigned &l)\n{\n"
              "#if RNNC_MATH == 2\n"
              "    h = %s;\n"
              "    l = __float_as_uint(__fsub_rn(x, __uint_as_float(h)));\n"
              "#else\n"
              "    h = rnnc_tf32(x);\n"
              "    l = 0u;\n"
              "#endif\n}\n"
              "/* x rounded to TF32 before (the TF32 mode's step operands): as it is */\n"
              "__device__ __forceinline__ void rnnc_sp0(float x, unsigned &h, unsigned &l)\n{\n"
              "    h = __float_as_uint(x);\n"
              "    l = 0u;\n}\n"
              "__device__ __forceinline__ void rnnc_mma8(float &d0, float &d1, float &d2, float &d3, "
              "unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1)\n{\n"
              "    asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
              "{%%0, %%1, %%2, %%3}, {%%4, %%5, %%6, %%7}, {%%8, %%9}, {%%0, %%1, %%2, %%3};\"\n"
              "                 : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3)\n"
              "                 : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n}\n"
              "/* d += a b in the math mode: a (4) and b (2) as hi and lo parts.  3xtf32 */\n"
              "/* sums the k-step's three products from zero and adds them to d in fp32: */\n"
              "/* the tensor cores' adds truncate, so a GEMM adding every k-step */\n"
              "/* straight into d drifted by 1e-5 at K = 1024 */\n"
              "__device__ __forceinline__ void rnnc_mma3(float &d0, float &d1, float &d2, float &d3, "
              "const unsigned *ah, const unsigned *al, const unsigned *bh, const unsigned *bl)\n{\n"
              "#if RNNC_MATH == 2\n"
              "    float e0 = 0.f, e1 = 0.f, e2 = 0.f, e3 = 0.f;\n"
              "    rnnc_mma8(e0, e1, e2, e3, al[0], al[1], al[2], al[3], bh[0], bh[1]);\n"
              "    rnnc_mma8(e0, e1, e2, e3, ah[0], ah[1], ah[2], ah[3], bl[0], bl[1]);\n"
              "    rnnc_mma8(e0, e1, e2, e3, ah[0], ah[1], ah[2], ah[3], bh[0], bh[1]);\n"
              "    d0 += e0; d1 += e1; d2 += e2; d3 += e3;\n"
              "#else\n"
              "    (void)al; (void)bl;\n"
              "    rnnc_mma8(d0, d1, d2, d3, ah[0], ah[1], ah[2], ah[3], bh[0], bh[1]);\n"
              "#endif\n}\n",
              c->cfg.math, rn ? "rn" : "rna", rn ? "rnnc_tf32(x)" : "__float_as_uint(x) & 0xffffe000u");
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

bool cu_tensor_cores(const cu_ctx *c)
{
    return c->cfg.math != 0 || (c->half && c->cfg.sm >= 80);
}

bool cu_mma_gemm(const cu_ctx *c, int bm, int bn, int bk)
{
    int wm, mtw, ntw;
    gemm_warps(bm, bn, &wm, &mtw, &ntw);
    return cu_tensor_cores(c) && bk % 8 == 0 && mtw >= 1 && ntw >= 1;
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
