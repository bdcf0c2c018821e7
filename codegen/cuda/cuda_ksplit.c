/*
 * cuda_ksplit.c: the wgmma step's linear split along K across a cluster of
 * two blocks (sm_90a).
 * Requires: cuda_wgstep.c's step chosen (bulk staging of h in chunks of 32
 * floats, TF32 operands rounded before), a block slice of R = 32 rows
 * (an LSTM's 8 units) or 24 (a GRU's), all of a batch of 256, 128 or 64
 * rows (two threads a row), an even number of blocks over the units
 * (blocks ub and ub ^ 1 form a cluster, rank ub & 1), three chunk
 * buffers.  Keeps the element phase as it is: it reads the linear's result
 * through cu_ksplit_result.
 *
 * Why.  At B = 256, I = H = 1024 each of 128 blocks holds 32 rows of W_hh
 * over all of K (128 KB) and streams all of h through it every step: 128 MB
 * a step out of L2, and products on wgmma m64n32k8, whose narrow N keeps
 * them near 276 multiply-adds a cycle an SM.  A cluster of two holds 64
 * rows over half of K a block (again 128 KB): each block streams half of h
 * and multiplies with the weights as A (m64) against 128 batch rows as B,
 * near 930 a cycle.  On the H100 a probe of the step
 * (bench/ksplit_probe.cu, bench/results/h100/ksplit-probe/) took 17.2 us a
 * step in the generated layout and 11.7 split, of which 1.7 the exchange
 * below.  A GRU's 8 units are 24 rows a block: the cluster's 48 are
 * padded with zero rows to wgmma's 64, a quarter of the products spent
 * on nothing, against the unsplit step's N = 24.
 *
 * The step.  Warpgroups 0 .. KSNW - 1 multiply (chunk ch of the block's
 * half over its 64-row column block of the slice, 4 k-steps); the others
 * wait.  The 64 x BTP partial sums go over the chunk buffers (KSP: rows of
 * BTP floats whose groups of four are XORed with the row's low bits, so
 * the accumulators' stores and the element phase's loads are free of bank
 * conflicts); after a cluster barrier thread 0 sends the partner's R rows
 * into its shared memory (SM_KR) with one bulk copy that completes on the
 * partner's third mbarrier, and every thread waits for its own.  The
 * partials' owner reads row r as its own partial plus the partner's.
 * Step 0 stages from the chunk-major copy too: before it the blocks of a
 * batch group write the caller's state there (a group barrier), so the
 * chunk loop never needs every warp of the block.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

/* wgmma's M: the cluster's rows of W_hh, real or zero */
#define KS_ROWS 64

bool cu_ksplit_fits(const cu_ctx *c)
{
    if (!c->wgstep || c->cfg.cluster == 1 || c->bulk_ns != 3 || c->NUB % 2)
        return false;
    int32_t lin = c->bulk_lin;
    int64_t R = cu_slice_rows(c, lin), K = cu_kdim(c, lin);
    /* wgmma's A is the cluster's 2R rows padded to 64; the partials and
     * the partner's rows fit the three buffers */
    bool rows = R == 32 || R == 24, batch = c->BT == 256 || c->BT == 128 || c->BT == 64;
    return rows && batch && c->BTP == c->BT && c->NT == 2 * c->BT && K % 64 == 0 &&
           3 * R * c->BTP <= c->xs_floats;
}

void cu_emit_ksplit_helpers(const cu_ctx *c, cu_text *t)
{
    if (!c->ksplit)
        return;
    int32_t lin = c->bulk_lin;
    long long R = (long long)cu_slice_rows(c, lin);
    cu_printf(t,
              "/* the K split (cuda_ksplit.c): KSNW warpgroups multiply; partial sum (r, b) of "
              "the cluster's rows; the partner's rows for this block at SM_KR */\n"
              "#define KSNW %d\n",
              c->BTP / cu_ksplit_n(c));
    cu_emit_ksp(t);
    cu_printf(t,
              "#define SM_KR %lld\n"
              "__device__ __forceinline__ void rnnc_cluster_sync(void)\n{\n"
              "    asm volatile(\"barrier.cluster.arrive.release.aligned;\\n"
              "barrier.cluster.wait.acquire.aligned;\" : : : \"memory\");\n}\n"
              "/* both blocks past their reads of the buffers the partials take: a relaxed arrival,\n"
              " * since the reads are done (wgmma waited for) and the copies that follow are the\n"
              " * async proxy's, fenced by the sender (a release arrival is a GPU-wide fence) */\n"
              "__device__ __forceinline__ void rnnc_cluster_free(void)\n{\n"
              "    asm volatile(\"barrier.cluster.arrive.relaxed.aligned;\\n"
              "barrier.cluster.wait.aligned;\" : : : \"memory\");\n}\n"
              "/* the partner's address of p (distributed shared memory) */\n"
              "__device__ __forceinline__ unsigned rnnc_mapa(const void *p, unsigned rank)\n{\n"
              "    unsigned r;\n"
              "    asm volatile(\"mapa.shared::cluster.u32 %%0, %%1, %%2;\" : \"=r\"(r) : "
              "\"r\"((unsigned)__cvta_generic_to_shared(p)), \"r\"(rank));\n"
              "    return r;\n}\n"
              "/* bytes of this block's shared memory into the partner's, completing on its "
              "mbarrier mb */\n"
              "__device__ __forceinline__ void rnnc_bulk_put(const float *src, const float *dst, "
              "unsigned bytes, unsigned long long *mb, unsigned rank)\n{\n"
              "    asm volatile(\"cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::"
              "bytes [%%0], [%%1], %%2, [%%3];\" : : \"r\"(rnnc_mapa(dst, rank)), "
              "\"r\"((unsigned)__cvta_generic_to_shared(src)), \"r\"(bytes), "
              "\"r\"(rnnc_mapa(mb, rank)) : \"memory\");\n}\n",
              2 * R * c->BTP);
}

/* KSP(r, b): where row r, batch row b of the split's partial sums (and of
 * the streamed step's result, cuda_wstream.c) lie: rows of BTP floats
 * whose groups of four are XORed with the row's low bits, inside the row
 * only where BTP is a multiple of 32. */
void cu_emit_ksp(cu_text *t)
{
    cu_printf(t, "#define KSP(r, b) ((r) * BTP + ((b) ^ (((r) & 7) << 2)))\n");
}

/* wgmma's N: the batch rows a multiplying warpgroup takes. */
int cu_ksplit_n(const cu_ctx *c)
{
    return c->BTP < 128 ? c->BTP : 128;
}

/* Floats of shared memory the cluster's rows over half of K take. */
int64_t cu_ksplit_weight_floats(const cu_ctx *c, int32_t lin)
{
    return KS_ROWS * cu_kdim(c, lin) / 2;
}

/* In the kernel's head: the block's rank, the parity of the partials'
 * mbarrier. */
void cu_emit_ksplit_head(const cu_ctx *c, cu_text *t)
{
    if (c->ksplit)
        cu_printf(t, "    const int cr_ = ub & 1; /* rank in the cluster: the half of K multiplied */\n"
                     "    unsigned xph_ = 0u;\n");
}

/* The cluster's 2R rows over this block's half of K, chunk-major and
 * swizzled as cuda_wgstep.c keeps its slice (row r: half r / R, the units
 * of block (ub & ~1) + r / R), then zero rows up to KS_ROWS. */
void cu_emit_ksplit_weights(const cu_ctx *c, int32_t lin, cu_text *t)
{
    int32_t w = c->f->nodes[lin].a[1];
    long long R = (long long)cu_slice_rows(c, lin), K = (long long)cu_kdim(c, lin), q = K / 8;
    char pad[32] = "";
    if (2 * R < KS_ROWS)
        snprintf(pad, sizeof pad, "r < %lld && ", 2 * R);
    cu_printf(t,
              "    for (int i = tid; i < %lld; i += NT) {\n"
              "        const int r = i / %lld, k4 = i %% %lld, rr = r %% %lld, s = rr / UT;\n"
              "        const int gu = ((ub & ~1) + r / %lld) * UT + rr %% UT;\n"
              "        const bool ok = %sgu < H;\n"
              "        rnnc_cp16(&sm_[SM_W%d + ((k4 >> 3) * %d + r) * 32 + (((k4 & 7) ^ (r & 7)) << 2)], "
              "ok ? wts + %lld + (size_t)(s * H + gu) * %lld + cr_ * %lld + k4 * 4 : wts, ok);\n"
              "    }\n",
              KS_ROWS * q, q, q, R, R, pad, (int)lin, KS_ROWS, (long long)c->off[w], K, K / 2);
}

rnnc_status cu_emit_ksplit_linear(const cu_ctx *c, int32_t lin, cu_text *t)
{
    long long R = (long long)cu_slice_rows(c, lin);
    int n = cu_ksplit_n(c);
    char d[256];
    cu_printf(t,
              "    /* %s: K split over the cluster (cuda_ksplit.c), wgmma m64n%dk8: the "
              "cluster's %lld rows against batch rows %d wg_ .. %d wg_ + %d over this "
              "block's half of K */\n"
              "    {\n"
              "        const int wg_ = tid >> 7, w4_ = (tid >> 5) & 3, g_ = (tid & 31) >> 2, q_ = tid & 3;\n"
              "        float d_[%d];\n"
              "#pragma unroll\n"
              "        for (int i = 0; i < %d; ++i) d_[i] = 0.f;\n",
              cu_describe(c, lin, d, sizeof d), n, 2 * R, n, n, n - 1, n / 2, n / 2);
    char a[64], b[64];
    snprintf(a, sizeof a, "sm_ + SM_W%d + ch_ * %lld", (int)lin, (long long)KS_ROWS * 32);
    snprintf(b, sizeof b, "sm_ + ch_ %% NSB * CHF + wg_ * %d * KCB", n);
    cu_emit_wgs_loop(c, "KSNW", a, b, t);
    /* every warpgroup is past the buffers: the partials go over them (a
     * warp's 16 rows, but for the zero rows' warps), then the partner's
     * rows to it */
    char real[32] = "";
    if (2 * R < KS_ROWS)
        snprintf(real, sizeof real, " && w4_ < %lld", 2 * R / 16);
    cu_printf(t,
              "        __syncthreads();\n"
              "        if (wg_ < KSNW%s) {\n"
              "#pragma unroll\n"
              "            for (int j = 0; j < %d; ++j)\n"
              "#pragma unroll\n"
              "                for (int e_ = 0; e_ < 4; ++e_)\n"
              "                    sm_[SM_L%d + KSP(16 * w4_ + g_ + 8 * (e_ >> 1), wg_ * %d + 8 * j + "
              "2 * q_ + (e_ & 1))] = d_[4 * j + e_];\n"
              "        }\n"
              "        __syncthreads();\n"
              "        if (tid == 0)\n"
              "            asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%%0], %%1;\" : : "
              "\"r\"((unsigned)__cvta_generic_to_shared(mb_ + 2 * NSB)), \"r\"(%lldu) : \"memory\");\n"
              "        rnnc_cluster_free(); /* both blocks' partials are written, their buffers free */\n"
              "        if (tid == 0) {\n"
              "            asm volatile(\"fence.proxy.async.shared::cta;\" : : : \"memory\");\n"
              "            rnnc_bulk_put(sm_ + SM_L%d + KSP(%lld * (cr_ ^ 1), 0), sm_ + SM_KR, %lldu, "
              "mb_ + 2 * NSB, cr_ ^ 1);\n"
              "        }\n"
              "        rnnc_mb_wait(mb_ + 2 * NSB, xph_);\n"
              "        xph_ ^= 1u;\n"
              "    }\n",
              real, n / 8, (int)lin, n, R * c->BTP * 4, (int)lin, R, R * c->BTP * 4);
    return RNNC_OK;
}

/* Row r of the block's rows (r an expression), batch row b: its partial
 * sum and the partner's. */
void cu_ksplit_result(const cu_ctx *c, int32_t lin, const char *r, char *buf, size_t n)
{
    snprintf(buf, n, "(sm_[SM_L%d + KSP(%lld * cr_ + %s, b)] + sm_[SM_KR + KSP(%s, b)])", (int)lin,
             (long long)cu_slice_rows(c, lin), r, r);
}

/* Before the kernel ends: the partner may still be copying into, or out
 * of, this block's shared memory. */
void cu_emit_ksplit_end(const cu_ctx *c, cu_text *t)
{
    if (c->ksplit)
        cu_printf(t, "    rnnc_cluster_sync();\n");
}
