/*
 * cuda_wstream.c: the TF32 wgmma step over weights streamed from L2, for
 * shapes whose W_hh does not fit on chip (sm_90a).
 * Requires: cuda_tile.c's try_wstream (one bulk-staged step linear over a
 * state in chunks of 32 floats, c->wstream with wgstep and bulk; units a
 * block UT a multiple of 8, batch rows BT padded to BTP, a multiple of
 * 32 up to 128 (one batch group of any rows, or groups of a multiple of
 * 8), NT at least 128 a 64-row tile of the slice); the runtime's tensor map
 * over the linear's weights rounded to TF32 (CG_CUDA_TF32_RN, boxes of
 * 32 floats x UT rows, 128-byte swizzle; cuda_analyse.c's launch).  Keeps
 * the element phase as it is: it reads the result through
 * cu_wstream_result, as a K split's (cuda_ksplit.c) is laid out.
 *
 * Why.  Where W_hh does not fit on chip once per batch group (TF32 LSTM
 * I = H = 1024 at B = 512: 16.8 MB per copy, four groups; any model at H =
 * 2048: 67 MB), the step streamed its weights on FFMA, a quarter of
 * cuDNN's speed on the H100 (15.9 ms against 4.4 at B = 512; 30.2 against
 * 7.7 at H = 2048, B = 256; bench/results/h100/ksplit-gru/survey-large.txt).
 * Here each chunk buffer takes, beside the 32 columns of h that the bulk
 * staging brings (cuda_bulk.c), the same 32 columns of the block's rows of
 * W: one box of UT rows a gate from the tensor memory accelerator, which
 * lays them out in the 128-byte swizzle wgmma reads, all counted by the
 * buffer's mbarrier.  A block of R rows and BT batch rows reads (R + BT)
 * K floats a step: square tiles (128 x 128 at B = 512) read the fewest.
 *
 * The step.  Warpgroup wg_ multiplies rows 64 wg_ .. 64 wg_ + 63 of the
 * block's slice (A, from the buffer; a GRU's 96 rows are two tiles whose
 * last 32 rows are whatever the buffer holds, their products never
 * stored) against all BT batch rows (B: m64nBTk8), chunk after chunk as
 * the K split's warpgroups do (cu_emit_wgs_loop).  The accumulators go
 * over the buffers in the K split's layout (KSP), read by the element
 * phase after a block barrier.  Step 0 stages from the chunk-major copy
 * too (cu_emit_bulk_prologue writes the caller's state there).
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

/* wgmma's M: a warpgroup's rows of the slice */
#define WS_M 64

bool cu_wstream_possible(const cu_ctx *c)
{
    return c->cfg.sm == 90 && c->cfg.tma && !c->half && c->cfg.math == 1;
}

/* The weight copy the streamed step reads, W rounded to TF32, placed in
 * every plan of a model that may take the step: the runtime lays out the
 * weight arena once, from a trial generation at B = 1, and the tiling
 * (so whether the weights stream) depends on the batch. */
rnnc_status cu_wstream_place(cu_ctx *c)
{
    if (!cu_wstream_possible(c) || c->s->n_phases != 1)
        return RNNC_OK;
    for (int32_t i = 0; i < c->f->n; i++) {
        const ir_node *n = &c->f->nodes[i];
        int64_t off;
        if (c->role[i] != CU_STEP_LINEAR || c->role[n->a[0]] != CU_LEAF_STATE)
            continue;
        rnnc_status st = cu_place_weight_as(c, n->a[1], CG_CUDA_TF32_RN, &off);
        if (st)
            return st;
    }
    return RNNC_OK;
}

/* Rows of W a chunk buffer holds: the slice's, up to whole 64-row tiles. */
int64_t cu_wstream_rows(const cu_ctx *c)
{
    int64_t R = cu_slice_rows(c, c->bulk_lin);
    return (R + WS_M - 1) / WS_M * WS_M;
}

bool cu_wstream_fits(const cu_ctx *c)
{
    int32_t lin = c->bulk_lin;
    if (lin < 0 || !cu_wstream_possible(c))
        return false;
    int64_t R = cu_slice_rows(c, lin), K = cu_kdim(c, lin), tiles = cu_wstream_rows(c) / WS_M;
    /* each gate's box starts a 1024-byte swizzle atom (8 rows of 128
     * bytes); a box has at most 256 rows; wgmma's N is BTP, the batch
     * rows padded to a multiple of 32: the result's layout (KSP) XORs a
     * column with up to 28, inside its row only there (at 104 it wrote
     * into the next row: bench/results/h100/wstream/pad-batch.diff);
     * batch groups after the first start at a multiple of 8 rows
     * (cu_bulk_linear).  Under 8 rows FFMA streaming is faster: LSTM
     * I = H = 2048, T = 100, B = 1 2.66 ms against 3.14 here, B = 8 3.70
     * against 3.44 (H100, bench/results/h100/passes/variants-small-b.txt) */
    bool rows = c->BTP % 32 == 0 && c->BTP <= 128 && c->BTP - c->BT < 32 && c->BT >= 8 &&
                (c->BT % 8 == 0 || c->NBB == 1);
    return c->UT % 8 == 0 && c->UT <= 256 && rows && R <= 4 * WS_M && K % 32 == 0 &&
           c->kc[lin] == 32 && c->NT >= 128 * tiles;
}

/* Device helpers after the bulk staging's (they use its macros): the
 * multiplying warpgroups, the result's layout, and a buffer's refill. */
void cu_emit_wstream_helpers(const cu_ctx *c, cu_text *t)
{
    if (!c->wstream)
        return;
    int32_t lin = c->bulk_lin;
    long long R = (long long)cu_slice_rows(c, lin);
    cu_printf(t,
              "/* streamed weights (cuda_wstream.c): WSNW warpgroups multiply; result (r, b) of the "
              "block's rows, groups of four XORed with the row's low bits */\n"
              "#define WSNW %d\n",
              (int)(cu_wstream_rows(c) / WS_M));
    cu_emit_ksp(t);
    cu_printf(t,
              "/* chunk ch into the buffer at dst: h's (bytes from src) and the block's rows of W\n"
              " * (a box of UT rows a gate from map m), all counted by mbarrier mb */\n"
              "__device__ __forceinline__ void rnnc_ws_get(float *dst, const float *src, unsigned bytes, "
              "unsigned long long *mb, const rnnc_tmap *m, int ch, int u0)\n{\n"
              "    const unsigned d = (unsigned)__cvta_generic_to_shared(dst), b = "
              "(unsigned)__cvta_generic_to_shared(mb);\n"
              "    asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%%0], %%1;\" : : "
              "\"r\"(b), \"r\"(bytes + %lldu) : \"memory\");\n"
              "    asm volatile(\"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
              "[%%0], [%%1], %%2, [%%3];\" : : \"r\"(d), \"l\"(src), \"r\"(bytes), \"r\"(b) : "
              "\"memory\");\n"
              "#pragma unroll\n"
              "    for (int s = 0; s < %d; ++s)\n"
              "        rnnc_tma2d(dst + BTP * KCB + s * UT * KCB, m, ch * KCB, s * H + u0, mb);\n"
              "}\n",
              R * 32 * 4, (int)cu_slices(c, lin));
}

/* The refill of the buffer at float offset buf with chunk ch (expressions). */
void cu_wstream_get(const char *buf, const char *ch, char *out, size_t n)
{
    snprintf(out, n, "rnnc_ws_get(sm_ + %s, BSRC(t & 1, %s), bn_, mb_ + (%s) %% NSB, &tw_, %s, u0)",
             buf, ch, ch, ch);
}

rnnc_status cu_emit_wstream_linear(const cu_ctx *c, int32_t lin, cu_text *t)
{
    long long R = (long long)cu_slice_rows(c, lin);
    int n = c->BTP;
    char d[256];
    cu_printf(t,
              "    /* %s: weights streamed (cuda_wstream.c), wgmma m64n%dk8: rows 64 wg_ .. 64 wg_ "
              "+ 63 of the block's %lld against its %d batch rows */\n"
              "    {\n"
              "        const int wg_ = tid >> 7, w4_ = (tid >> 5) & 3, g_ = (tid & 31) >> 2, q_ = tid & 3;\n"
              "        float d_[%d];\n"
              "#pragma unroll\n"
              "        for (int i = 0; i < %d; ++i) d_[i] = 0.f;\n",
              cu_describe(c, lin, d, sizeof d), n, R, n, n / 2, n / 2);
    char a[96];
    snprintf(a, sizeof a, "sm_ + ch_ %% NSB * CHF + BTP * KCB + wg_ * %d", WS_M * 32);
    cu_emit_wgs_loop(c, "WSNW", a, "sm_ + ch_ % NSB * CHF", t);
    /* every warpgroup is past the buffers: the result goes over them, but
     * for the rows past the slice */
    cu_printf(t,
              "        __syncthreads();\n"
              "        if (wg_ < WSNW) {\n"
              "#pragma unroll\n"
              "            for (int j = 0; j < %d; ++j)\n"
              "#pragma unroll\n"
              "                for (int e_ = 0; e_ < 4; ++e_) {\n"
              "                    const int r_ = 64 * wg_ + 16 * w4_ + g_ + 8 * (e_ >> 1);\n"
              "                    if (r_ < %lld)\n"
              "                        sm_[SM_L%d + KSP(r_, 8 * j + 2 * q_ + (e_ & 1))] = d_[4 * j + e_];\n"
              "                }\n"
              "        }\n"
              "        __syncthreads();\n"
              "    }\n",
              n / 8, R, (int)lin);
    return RNNC_OK;
}

void cu_wstream_result(const cu_ctx *c, int32_t lin, const char *r, char *buf, size_t n)
{
    (void)c;
    snprintf(buf, n, "sm_[SM_L%d + KSP(%s, b)]", (int)lin, r);
}
