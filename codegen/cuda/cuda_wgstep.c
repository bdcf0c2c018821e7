/*
 * cuda_wgstep.c: the TF32 step's bulk-staged linear on warpgroup MMA
 * (wgmma.mma_async, sm_90a), both operands read from shared memory.
 * Requires: cuda_tile.c's bulk staging chosen (cuda_bulk.c: h in chunks of
 * 32 floats, rows of 128 bytes whose 16-byte groups are XORed with the
 * row's low three bits, which is the tensor cores' 128-byte swizzle); the
 * TF32 mode's operands rounded before (cuda_mma_step.c's
 * cu_emit_mma_round, the chunk copy of h).  Keeps the result where the
 * mma.sync path puts it (SM_L, rows of BTP + 1 over the chunk buffers), so
 * the element phase is the same.
 *
 * Why.  At B = 256, I = H = 1024 the TF32 step spent 19 of its 26 us a
 * step in the chunk loop, about 33 000 cycles of it multiplying: 8.4 M
 * multiply-adds a block, 254 a cycle, the rate of mma.sync's TF32 tiles
 * on the H100; with the multiply switched off the loop took 11 us
 * (bench/results/h100/step-b256/).  wgmma runs TF32 at up to four times
 * that, but not at this instruction's small N (the block's 32 rows of
 * W_hh): its products take about 950 cycles a chunk against mma.sync's
 * 1050, and the forward went 3.79 -> 3.55 ms (bench/results/h100/wgstep/).
 *
 * Layout.  Warpgroup wg_ takes batch rows 64 wg_ .. 64 wg_ + 63 of the
 * block (A: m64, K-major, from the chunk buffer) against all R rows of the
 * block's W slice (B: nR, K-major).  The slice is kept chunk-major for it:
 * column block c (32 floats) of row r at SM_W + (c R + r) 32 floats, its
 * 16-byte groups swizzled as the chunks of h are, so both descriptors
 * step 32 bytes a k-step inside a 1024-byte-aligned swizzle atom.  The
 * accumulators, R / 2 a thread, hold row 16 w + g (+ 8) of the warp's 16
 * and columns 8 j + 2 q (+ 1), as mma.sync's C fragments do.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

/* The shape the warpgroups need: whole 64-row groups of batch rows, one
 * a warpgroup, and 8 to 128 weight rows (wgmma's N; R / 2 accumulators a
 * thread). */
static bool shape_ok(const cu_ctx *c, int64_t R, int64_t K)
{
    return c->BT == c->BTP && c->BT % 64 == 0 && (int64_t)c->NT * 64 == (int64_t)c->BT * 128 &&
           R % 8 == 0 && R >= 8 && R <= 128 && K % 32 == 0;
}

bool cu_wgstep_fits(const cu_ctx *c)
{
    /* wgmma is sm_90a's alone */
    if (!c->bulk || !c->cfg.tma || c->cfg.sm != 90 || !cu_tf32_rounded(c))
        return false;
    int32_t lin = c->bulk_lin;
    return c->kc[lin] == 32 && shape_ok(c, cu_slice_rows(c, lin), cu_kdim(c, lin));
}

/* Where 16-byte group k4 (of K / 4) of slice row r lies, in floats from
 * SM_W: cuda_regs.c's weight copy writes there. */
void cu_wgstep_weight_at(const cu_ctx *c, int32_t lin, char *buf, size_t n)
{
    long long R = (long long)cu_slice_rows(c, lin);
    snprintf(buf, n, "SM_W%d + ((k4 >> 3) * %lld + r) * 32 + (((k4 & 7) ^ (r & 7)) << 2)",
             (int)lin, R);
}

/* rnnc_wgs<R>: d[R / 2] += a b, m64nRk8, both by descriptor. */
void cu_emit_wgstep_helpers(const cu_ctx *c, cu_text *t)
{
    if (!c->wgstep)
        return;
    /* N: the slice's rows, or a K split's batch rows a warpgroup */
    int R = c->ksplit    ? cu_ksplit_n(c)
            : c->wstream ? c->BTP
                         : (int)cu_slice_rows(c, c->bulk_lin),
        nd = R / 2;
    cu_printf(t,
              "__device__ __forceinline__ void rnnc_wgs(float *d, unsigned long long da, "
              "unsigned long long db)\n{\n"
              "    asm volatile(\"wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32 {",
              R);
    for (int i = 0; i < nd; i++)
        cu_printf(t, "%s%%%d", i ? ", " : "", i);
    cu_printf(t, "}, %%%d, %%%d, 1, 1, 1;\"\n                 : ", nd, nd + 1);
    for (int i = 0; i < nd; i++)
        cu_printf(t, "%s\"+f\"(d[%d])", i ? ", " : "", i);
    cu_printf(t, "\n                 : \"l\"(da), \"l\"(db));\n}\n");
}

/* The four k-steps of a chunk's products, a_ and b_ at the chunk's
 * operands, left in flight but for the group before (indent: the
 * emitted lines' own). */
void cu_emit_wgs_products(cu_text *t, const char *ind)
{
    cu_printf(t,
              "%sasm volatile(\"wgmma.fence.sync.aligned;\" : : : \"memory\");\n"
              "#pragma unroll\n"
              "%sfor (int ks = 0; ks < 4; ++ks) rnnc_wgs(d_, rnnc_wdesc(a_ + ks * 8), "
              "rnnc_wdesc(b_ + ks * 8));\n"
              "%sasm volatile(\"wgmma.commit_group.sync.aligned;\" : : : \"memory\");\n"
              "%sasm volatile(\"wgmma.wait_group.sync.aligned 1;\" : : : \"memory\");\n",
              ind, ind, ind, ind);
}

/* The chunk loop of warpgroups 0 .. nw - 1 (nw names a macro) where every
 * chunk comes by copies (the K split, streamed weights): thread 0 puts the
 * first NSB in flight; each chunk's products (operands a_ and b_, the
 * expressions a and b of ch_) stay in flight while the chunk before is
 * waited for and its buffer given back. */
void cu_emit_wgs_loop(const cu_ctx *c, const char *nw, const char *a, const char *b, cu_text *t)
{
    char get[256];
    if (c->wstream)
        cu_wstream_get("s_ * CHF", "s_", get, sizeof get);
    else
        snprintf(get, sizeof get, "rnnc_bulk_get(sm_ + s_ * CHF, BSRC(t & 1, s_), bn_, mb_ + s_)");
    cu_printf(t,
              "        if (wg_ < %s) {\n"
              "            if (tid == 0) {\n"
              "                asm volatile(\"fence.proxy.async.shared::cta;\\nfence.proxy.async.global;\" "
              ": : : \"memory\");\n"
              "                for (int s_ = 0; s_ < min(NSB, NCHB); ++s_)\n"
              "                    %s;\n"
              "            }\n"
              "            for (int ch_ = 0; ch_ < NCHB; ++ch_) {\n"
              "                rnnc_mb_wait(mb_ + ch_ %% NSB, (ph_ >> (ch_ %% NSB)) & 1u);\n"
              "                ph_ ^= 1u << (ch_ %% NSB);\n"
              "                const float *a_ = %s, *b_ = %s;\n",
              nw, get, a, b);
    cu_emit_wgs_products(t, "                ");
    cu_printf(t,
              "                if (ch_ > 0) {\n"
              "                    const int cq_ = ch_ - 1;\n");
    cu_emit_bulk_release(c, t, "cq_");
    cu_printf(t,
              "                }\n"
              "            }\n"
              "            asm volatile(\"wgmma.wait_group.sync.aligned 0;\" : : : \"memory\");\n"
              "            const int cq_ = NCHB - 1;\n");
    cu_emit_bulk_release(c, t, "cq_");
    cu_printf(t, "        }\n");
}

/* A chunk's products: the warpgroup's 64 rows of the buffer against the
 * slice's column block ch_, four k-steps, left in flight while the chunk
 * before is waited for and its buffer given back (the copy of chunk ch_ -
 * 1 + NSB lands on it), so the tensor cores have the next chunk's work
 * while thread 0 refills.  On the H100 (TF32 LSTM I = H = 1024, B = 256)
 * 3.587 / 3.578 ms waiting for each chunk's own products, 3.537 / 3.554
 * so (bench/results/h100/wgstep/). */
static void emit_chunk(const cu_ctx *c, int32_t lin, long long R, cu_text *t)
{
    cu_printf(t,
              "        {\n"
              "            const float *a_ = sm_ + xo_ + wg_ * 64 * KCB, *b_ = sm_ + SM_W%d + ch_ * %lld;\n",
              (int)lin, R * 32);
    cu_emit_wgs_products(t, "            ");
    cu_printf(t,
              "        }\n"
              "        if (ch_ > 0) {\n"
              "        const int cq_ = ch_ - 1;\n");
    cu_emit_bulk_chunk_end(c, t, "cq_");
    cu_printf(t, "        }\n");
}

rnnc_status cu_emit_wgstep_linear(const cu_ctx *c, int32_t lin, cu_text *t,
                                  rnnc_status (*stage)(const cu_ctx *, int32_t, bool, cu_text *))
{
    long long R = (long long)cu_slice_rows(c, lin);
    char d[256];
    rnnc_status st;
    if (c->ksplit)
        return cu_emit_ksplit_linear(c, lin, t);
    if (c->wstream)
        return cu_emit_wstream_linear(c, lin, t);
    cu_printf(t,
              "    /* %s: wgmma m64n%lldk8 (cuda_wgstep.c), warpgroup wg_ on batch rows 64 wg_ .. "
              "64 wg_ + 63 */\n"
              "    {\n"
              "        const int wg_ = tid >> 7, w4_ = (tid >> 5) & 3, g_ = (tid & 31) >> 2, q_ = tid & 3;\n"
              "        float d_[%lld];\n"
              "#pragma unroll\n"
              "        for (int i = 0; i < %lld; ++i) d_[i] = 0.f;\n",
              cu_describe(c, lin, d, sizeof d), R, R / 2, R / 2);
    if ((st = stage(c, lin, true, t)))
        return st;
    emit_chunk(c, lin, R, t);
    /* the last chunk: its products, then its buffer (its arrivals keep the
     * free mbarriers' phases in step with the next step's uses) */
    cu_printf(t, "    }\n"
                 "    asm volatile(\"wgmma.wait_group.sync.aligned 0;\" : : : \"memory\");\n"
                 "    {\n        const int cq_ = NCHB - 1;\n");
    cu_emit_bulk_chunk_end(c, t, "cq_");
    cu_printf(t, "    }\n");
    /* every warpgroup's products are complete: the result goes over the
     * buffers */
    cu_printf(t,
              "    __syncthreads();\n"
              "#pragma unroll\n"
              "        for (int j = 0; j < %lld; ++j)\n"
              "#pragma unroll\n"
              "            for (int e_ = 0; e_ < 4; ++e_)\n"
              "                sm_[SM_L%d + (8 * j + 2 * q_ + (e_ & 1)) * (BTP + 1) + wg_ * 64 + w4_ * 16 + "
              "g_ + 8 * (e_ >> 1)] = d_[4 * j + e_];\n"
              "    }\n"
              "    __syncthreads();\n",
              R / 8, (int)lin);
    return RNNC_OK;
}
