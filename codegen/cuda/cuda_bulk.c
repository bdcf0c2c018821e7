/*
 * cuda_bulk.c: bulk staging of a chunked state for the fp32 step on sm_90
 * (tensor cores or FFMA).
 * Requires: cu_choose_tiles (c->bulk, bulk_ns, bulk_lin, bulk_state and the
 * shared layout: the chunk buffers at 0, the linear's result over them,
 * the mbarriers at bulk_mb); keeps every other part of the step as it is.
 *
 * Why.  At B = 256, I = H = 1024 a TF32 block keeps its 32 rows of W_hh
 * (131 KB) on chip and stages h in 32-column chunks, each fetched into
 * registers one chunk ahead by every thread and stored after the chunk
 * before is multiplied: one chunk in flight, two block barriers a chunk,
 * and the latency of each fetch exposed (Nsight Compute on the H100: the
 * staging and its barriers 29% of the step's samples, the multiply 44%).
 * FFMA streamed W_hh there instead, its chunks staged that way costing
 * more than the 16.8 MB read from L2 every step.
 * Here the element phase also writes the state's next value into a
 * chunk-major copy, where chunk ch of batch group bb is one contiguous run
 * of BT x KC floats; each step after the first, thread 0 starts bulk
 * copies (cp.async.bulk, the TMA's linear form) of the first NS chunks
 * into NS shared buffers, each completing on its own mbarrier, and
 * refills a buffer with chunk ch + NS as soon as every warp is past chunk
 * ch (a second mbarrier a buffer, one arrival a warp; in FFMA steps the
 * last warp past it starts the refill, last_refill).  Every thread waits
 * on the buffer's first mbarrier (parity by use), so a chunk costs no
 * block barrier and up to NS of them are in flight.
 *
 * Layout.  Element (gb, k) of chunk ch = k / KC sits at ((ch * B + gb) *
 * KC) + 4 BSW(gb, k % KC / 4) + k % 4: rows of KC floats without padding,
 * their 16-byte groups permuted by the row (BSW), so the words one
 * shared-memory phase reads fall on distinct banks (tensor cores: the
 * eight rows of an ldmatrix phase, one logical group; FFMA: KS groups of
 * 8 / KS rows); a copy lands that layout in shared memory unchanged (BT a
 * multiple of 8).  Step 0 reads the caller's state row-major and stores it
 * permuted the same way.
 * Two copies by step parity, as the fp32 states: a block overwrites copy
 * t & 1 at step t + 1 only after every block of its group has passed the
 * barrier of step t, so after their last copy out of it completed.  The
 * writers' stores are ordinary (generic proxy); the barrier's acquire and
 * a proxy fence before the copies order them before the async proxy's
 * reads.
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/cuda_gen.h"

/* The one step linear of a one-phase fp32 step on sm_90 whose x is a
 * state staged in chunks of 32, 64 or 128 columns dividing K, with
 * weights on chip (or streamed, cuda_wstream.c) and batch groups of a
 * multiple of 8 rows: group bb's rows start at row b0 of a chunk, and the
 * swizzle of row b0 + r is that of row r in the buffer.  One batch group
 * (b0 = 0) of the streamed step may take any rows. */
int32_t cu_bulk_linear(const cu_ctx *c)
{
    const ir_fn *f = c->f;
    int32_t lin = -1;
    bool any_rows = c->wstream && c->NBB == 1;
    if (c->cfg.sm < 90 || c->half || c->stream || c->s->n_phases != 1 || (c->BT % 8 && !any_rows))
        return -1;
    for (int32_t i = 0; i < f->n; i++) {
        if (c->role[i] != CU_STEP_LINEAR)
            continue;
        if (lin >= 0)
            return -1;
        lin = i;
    }
    if (lin < 0 || c->role[f->nodes[lin].a[0]] != CU_LEAF_STATE)
        return -1;
    int64_t K = cu_kdim(c, lin), KC = c->kc[lin];
    if (KC >= K || (KC != 32 && KC != 64 && KC != 128) || K % KC)
        return -1;
    return lin;
}

/* Rows of a chunk-major copy: B, or with outer products (k-major chunks
 * of a batch group's BTP rows) NBB BTP. */
static int64_t copy_rows(const cu_ctx *c)
{
    return c->outer ? (int64_t)c->NBB * c->BTP : c->B;
}

/* The state's two chunk-major copies in the exchange buffer (16-byte
 * aligned, as the copies need). */
void cu_bulk_place(cu_ctx *c)
{
    if (!c->bulk)
        return;
    int32_t sv = c->f->states[c->bulk_state].node;
    cg_cuda_plan *p = c->plan;
    p->xb_floats = (p->xb_floats + 3) / 4 * 4;
    c->xb[sv] = p->xb_floats;
    p->xb_floats += 2 * copy_rows(c) * c->cols[sv];
}

/* FFMA steps: the last warp done with a buffer refills it (last_refill).
 * (The wgmma step, its K split and its streamed weights are all tensor
 * cores.) */
static bool last_refills(const cu_ctx *c)
{
    return !c->mma;
}

/* The copies' macros: the state's chunk-major copy cp, chunk ch of this
 * block's rows (BSRC), and the place of (gb, cc) (BPUT).  Rows of KC
 * floats, chunk after chunk; with outer products (cuda_outer.c) the chunk
 * of a batch group is k-major, [KC][BTP], one run of CHF floats. */
static void emit_copy_macros(const cu_ctx *c, cu_text *t)
{
    int32_t sv = c->f->states[c->bulk_state].node;
    long long K = (long long)cu_kdim(c, c->bulk_lin), at = (long long)c->xb[sv];
    if (c->outer) {
        long long copy = (long long)copy_rows(c) * K;
        cu_printf(t,
                  "#define BSRC(cp, ch) (xb + %lld + (size_t)(cp) * %lld + ((size_t)(ch) * %d + bb) * CHF)\n"
                  "#define BPUT(cp, gb, cc) (xb + %lld + (size_t)(cp) * %lld + (((size_t)((cc) / KCB) * "
                  "%d + (gb) / BT) * KCB + (cc) %% KCB) * BTP + (gb) %% BT)\n",
                  at, copy, c->NBB, at, copy, c->NBB);
        return;
    }
    cu_printf(t,
              "#define BSRC(cp, ch) (xb + %lld + (size_t)(cp) * B * %lld + ((size_t)(%s) * B + b0) * KCB)\n"
              "#define BPUT(cp, gb, cc) (xb + %lld + (size_t)(cp) * B * %lld + ((size_t)((cc) / KCB) * B + "
              "(gb)) * KCB + (BSW(gb, ((cc) %% KCB) >> 2) << 2) + ((cc) & 3))\n",
              at, K,
              /* a K split's block copies its half of the chunks (cuda_ksplit.c) */
              c->ksplit ? "(ch) + NCHB * cr_" : "ch", at, K);
}

void cu_emit_bulk_helpers(const cu_ctx *c, cu_text *t)
{
    if (!c->bulk)
        return;
    int32_t lin = c->bulk_lin;
    long long K = (long long)cu_kdim(c, lin), KC = c->kc[lin];
    cu_printf(t,
              "/* bulk staging (cuda_bulk.c): %lld chunks of %lld columns, %d buffers; the "
              "state's chunk-major copy cp, chunk ch of this block's rows, and the place of "
              "(gb, cc) */\n"
              "#define NSB %d\n#define KCB %lld\n#define NCHB %lld\n#define CHF %lld\n"
              "#define SM_MB %lld\n",
              K / KC, KC, c->bulk_ns, c->bulk_ns, KC, K / KC / (c->ksplit ? 2 : 1),
              /* streamed weights: each buffer also takes the chunk's rows of W */
              (long long)(c->BTP + (c->wstream ? cu_wstream_rows(c) : 0)) * KC,
              (long long)c->bulk_mb);
    emit_copy_macros(c, t);
    /* where the 16-byte group g of row r lies: ldmatrix reads one group of
     * 8 consecutive rows, so the tensor cores XOR it with the row's low
     * bits; the FFMA lanes of a quarter warp read KS consecutive groups of
     * 8 / KS rows, so their rows rotate by KS groups */
    if (c->mma)
        cu_printf(t, "#define BSW(r, g) ((g) ^ ((r) & 7))\n");
    else
        cu_printf(t, "#define BSW(r, g) (((g) + (r) * %d) & %lld)\n", c->ks[lin], KC / 4 - 1);
    cu_printf(t,
              "__device__ __forceinline__ void rnnc_mb_init(unsigned long long *mb, unsigned n)\n{\n"
              "    asm volatile(\"mbarrier.init.shared::cta.b64 [%%0], %%1;\" : : "
              "\"r\"((unsigned)__cvta_generic_to_shared(mb)), \"r\"(n) : \"memory\");\n}\n"
              "/* bytes from global to shared memory, completing on mbarrier mb (one arrival "
              "that expects them) */\n"
              "__device__ __forceinline__ void rnnc_bulk_get(float *dst, const float *src, "
              "unsigned bytes, unsigned long long *mb)\n{\n"
              "    const unsigned d = (unsigned)__cvta_generic_to_shared(dst), m = "
              "(unsigned)__cvta_generic_to_shared(mb);\n"
              "    asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%%0], %%1;\" : : "
              "\"r\"(m), \"r\"(bytes) : \"memory\");\n"
              "    asm volatile(\"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
              "[%%0], [%%1], %%2, [%%3];\" : : \"r\"(d), \"l\"(src), \"r\"(bytes), \"r\"(m) : "
              "\"memory\");\n}\n"
              "__device__ __forceinline__ void rnnc_mb_arrive(unsigned long long *mb)\n{\n"
              "    asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%%0];\" : : "
              "\"r\"((unsigned)__cvta_generic_to_shared(mb)) : \"memory\");\n}\n"
              "__device__ __forceinline__ void rnnc_mb_wait(unsigned long long *mb, unsigned ph)\n{\n"
              "    const unsigned m = (unsigned)__cvta_generic_to_shared(mb);\n"
              "    unsigned ok;\n"
              "    do asm volatile(\"{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, "
              "[%%1], %%2;\\nselp.u32 %%0, 1, 0, p;\\n}\" : \"=r\"(ok) : \"r\"(m), \"r\"(ph) : "
              "\"memory\");\n"
              "    while (!ok);\n}\n");
    if (last_refills(c))
        cu_printf(t,
                  "/* one more on the count at n; the count before (acquire and release) */\n"
                  "__device__ __forceinline__ unsigned rnnc_count(unsigned *n)\n{\n"
                  "    unsigned v;\n"
                  "    asm volatile(\"atom.acq_rel.cta.shared::cta.add.u32 %%0, [%%1], 1;\" : \"=r\"(v) : "
                  "\"r\"((unsigned)__cvta_generic_to_shared(n)) : \"memory\");\n"
                  "    return v;\n}\n");
    if (cu_tf32_rounded(c))
        cu_printf(t, "__device__ __forceinline__ float4 rnnc_tf32x4(float4 v)\n{\n"
                     "    return make_float4(__uint_as_float(rnnc_tf32(v.x)), "
                     "__uint_as_float(rnnc_tf32(v.y)),\n"
                     "                       __uint_as_float(rnnc_tf32(v.z)), "
                     "__uint_as_float(rnnc_tf32(v.w)));\n}\n");
}

/* In the kernel's head: the buffers' mbarriers, full (one arrival: the
 * copying thread's) and free (one a warp; FFMA: the counters of
 * last_refill), the bytes of a chunk, the parity of each buffer's next use
 * (bit s of ph_; of eph_ for the free ones, thread 0's). */
void cu_emit_bulk_init(const cu_ctx *c, cu_text *t)
{
    if (!c->bulk)
        return;
    cu_printf(t,
              "    unsigned long long *const mb_ = (unsigned long long *)(sm_ + SM_MB);\n"
              "    const unsigned bn_ = (unsigned)(%s * KCB * 4);\n"
              "    unsigned ph_ = 0u%s;\n"
              "    (void)bn_; (void)ph_;%s\n"
              "    if (tid == 0) {\n"
              "        for (int s_ = 0; s_ < NSB; ++s_) rnnc_mb_init(mb_ + s_, 1);\n"
              "        for (int s_ = 0; s_ < NSB; ++s_) %s;\n"
              "%s"
              "        asm volatile(\"fence.mbarrier_init.release.cluster;\" : : : \"memory\");\n"
              "    }\n",
              c->outer ? "BTP" : "min(BT, B - b0)",
              /* the free mbarriers' parity (last_refill counts instead) */
              last_refills(c) ? "" : ", eph_ = 0u", last_refills(c) ? "" : " (void)eph_;",
              /* a K split's warps that multiply free the buffers (so do
               * the streamed step's); its third mbarrier takes the
               * partner's partial sums */
              last_refills(c) ? "mb_[NSB + s_] = 0ull"
              : c->ksplit     ? "rnnc_mb_init(mb_ + NSB + s_, KSNW * 4)"
              : c->wstream    ? "rnnc_mb_init(mb_ + NSB + s_, WSNW * 4)"
                              : "rnnc_mb_init(mb_ + NSB + s_, NT / 32)",
              c->ksplit ? "        rnnc_mb_init(mb_ + 2 * NSB, 1);\n" : "");
}

/* Step 0's chunk ch_ from the caller's state (row-major), laid out as
 * the copies lay it: rows permuted by BSW, or k-major for outer products
 * (16-byte loads along a row, four words down a column; consecutive
 * threads take consecutive rows, so their stores fall on distinct
 * banks). */
static void emit_stage0(const cu_ctx *c, int32_t lin, cu_text *t)
{
    long long K = (long long)cu_kdim(c, lin);
    char src[160];
    snprintf(src, sizeof src, "(const float4 *)(s%d_ + (size_t)gb * %lld + ch_ * KCB + c4 * 4)",
             c->bulk_state, K);
    if (c->outer) {
        cu_printf(t,
                  "            for (int i = tid; i < BTP * (KCB / 4); i += NT) {\n"
                  "                const int b = i %% BTP, c4 = i / BTP, gb = b0 + b;\n"
                  "                float4 v_ = make_float4(0.f, 0.f, 0.f, 0.f);\n"
                  "                if (b < BT && gb < B) v_ = __ldcg(%s);\n"
                  "                float *const d_ = &sm_[xo_ + c4 * 4 * BTP + b];\n"
                  "                d_[0] = v_.x; d_[BTP] = v_.y; d_[2 * BTP] = v_.z; d_[3 * BTP] = v_.w;\n"
                  "            }\n",
                  src);
        return;
    }
    cu_printf(t,
              "            for (int i = tid; i < BTP * (KCB / 4); i += NT) {\n"
              "                const int b = i / (KCB / 4), c4 = i %% (KCB / 4), gb = b0 + b;\n"
              "                float4 v_ = make_float4(0.f, 0.f, 0.f, 0.f);\n"
              "                if (b < BT && gb < B)\n"
              "                    v_ = __ldcg(%s);\n"
              "                *(float4 *)&sm_[xo_ + b * KCB + (BSW(b, c4) << 2)] = %s;\n"
              "            }\n",
              src, cu_tf32_rounded(c) ? "rnnc_tf32x4(v_)" : "v_");
}

/* Opens the chunk loop: after step 0 the first copies start (the barrier
 * before this step acquired the data), and each chunk waits for its
 * buffer; step 0 stages the caller's state itself. */
void cu_emit_bulk_open(const cu_ctx *c, int32_t lin, cu_text *t)
{
    /* where any warp may start a refill (last_refill), each orders the
     * data the barrier acquired before its copies */
    if (last_refills(c))
        cu_printf(t, "    if (t > 0 && (tid & 31) == 0) asm volatile(\"fence.proxy.async.global;\" : : : \"memory\");\n");
    cu_printf(t,
              "    if (t > 0 && tid == 0) {\n"
              "%s"
              "        for (int s_ = 0; s_ < min(NSB, NCHB); ++s_)\n"
              "            rnnc_bulk_get(sm_ + s_ * CHF, BSRC(t & 1, s_), bn_, mb_ + s_);\n"
              "    }\n"
              "    for (int ch_ = 0; ch_ < NCHB; ++ch_) {\n"
              "        const int xo_ = ch_ %% NSB * CHF;\n"
              "        if (t == 0) {\n",
              last_refills(c) ? "" : "        asm volatile(\"fence.proxy.async.global;\" : : : \"memory\");\n");
    emit_stage0(c, lin, t);
    cu_printf(t,
              "%s"
              "            __syncthreads();\n"
              "        } else {\n"
              "            rnnc_mb_wait(mb_ + ch_ %% NSB, (ph_ >> (ch_ %% NSB)) & 1u);\n"
              "            ph_ ^= 1u << (ch_ %% NSB);\n"
              "        }\n",
              /* the wgmma step's tensor cores read the buffer through the
               * async proxy */
              c->wgstep ? "            asm volatile(\"fence.proxy.async.shared::cta;\" : : : \"memory\");\n"
                        : "");
}

/* The end of chunk `ch` (a variable: ch_, or the wgmma step's chunk
 * before it): its buffer takes chunk ch + NSB once every warp is done
 * with it.  Step 0 (the threads fill the buffers) takes a block barrier;
 * later steps let each warp go on to the next chunk: it arrives on the
 * buffer's second mbarrier (NT / 32 arrivals a use), which thread 0 waits
 * for before the refill.  Against a block barrier a chunk on the H100
 * (heuristic tiles, bench/results/h100/bulk/warp/): TF32 LSTM I = H =
 * 1024, B = 256 5.21 -> 5.01 ms, FFMA 12.92 -> 12.55, the GRUs level. */
void cu_emit_bulk_chunk_end(const cu_ctx *c, cu_text *t, const char *ch)
{
    cu_printf(t, "        if (t == 0) {\n"
                 "            __syncthreads();\n"
                 "        } else {\n");
    cu_emit_bulk_release(c, t, ch);
    cu_printf(t, "        }\n");
}

/* The end of chunk ch without waiting: each warp counts itself on the
 * buffer's counter (where the free mbarrier would be), and the warp that
 * makes the count NT / 32 resets it and starts the refill.  With thread 0
 * waiting for every warp before its refill, warp 0 started each chunk
 * behind the slowest warp of the one before, and so was the slowest warp
 * of the next: H200, LSTM I = H = 1024, B = 256, the step 121.6 K ->
 * 117.8 K cycles with outer products, 133.2 K -> 130.9 K with 8 x 4 tiles
 * (bench/results/h200/outer/).  The count's release and acquire
 * (rnnc_count) order the warps' reads of the buffer before the copy that
 * overwrites it, as the mbarrier's did. */
static void last_refill(const char *buf, const char *ch, cu_text *t)
{
    cu_printf(t,
              "            __syncwarp();\n"
              "            if ((tid & 31) == 0) {\n"
              "                unsigned *const n_ = (unsigned *)(mb_ + NSB + %s %% NSB);\n"
              "                if (rnnc_count(n_) == NT / 32 - 1) {\n"
              "                    *n_ = 0u;\n"
              "                    if (%s + NSB < NCHB)\n"
              "                        rnnc_bulk_get(sm_ + %s, BSRC(t & 1, %s + NSB), bn_, mb_ + %s %% NSB);\n"
              "                }\n"
              "            }\n",
              ch, ch, buf, ch, ch);
}

/* The warp's arrival on chunk ch's free mbarrier, and thread 0's refill of
 * its buffer once every warp arrived: the end of a chunk in a step whose
 * buffers the copies fill. */
void cu_emit_bulk_release(const cu_ctx *c, cu_text *t, const char *ch)
{
    char buf[64], next[64], get[256];
    /* the buffer's offset: xo_ where ch is the loop's own chunk */
    if (strcmp(ch, "ch_") == 0)
        snprintf(buf, sizeof buf, "xo_");
    else
        snprintf(buf, sizeof buf, "%s %% NSB * CHF", ch);
    if (last_refills(c)) {
        last_refill(buf, ch, t);
        return;
    }
    snprintf(next, sizeof next, "%s + NSB", ch);
    if (c->wstream)
        cu_wstream_get(buf, next, get, sizeof get);
    else
        snprintf(get, sizeof get, "rnnc_bulk_get(sm_ + %s, BSRC(t & 1, %s), bn_, mb_ + %s %% NSB)",
                 buf, next, ch);
    cu_printf(t,
              "            __syncwarp();\n"
              "            if ((tid & 31) == 0) rnnc_mb_arrive(mb_ + NSB + %s %% NSB);\n"
              "            if (tid == 0) {\n"
              "                if (%s + NSB < NCHB) {\n"
              "                    rnnc_mb_wait(mb_ + NSB + %s %% NSB, (eph_ >> (%s %% NSB)) & 1u);\n"
              "                    %s;\n"
              "                }\n"
              "                eph_ ^= 1u << (%s %% NSB);\n"
              "            }\n",
              ch, ch, ch, ch, get, ch);
}

void cu_emit_bulk_put(const cu_ctx *c, int s, int sl, cu_text *t)
{
    cu_printf(t, "        __stcg(BPUT((t + 1) & 1, gb, %lld + gu), %sn%d_%d%s);\n",
              (long long)(sl * c->H), cu_tf32_rounded(c) ? "__uint_as_float(rnnc_tf32(" : "", s, sl,
              cu_tf32_rounded(c) ? "))" : "");
}

/* Before step 0 of a step whose every chunk comes by copies (the K split,
 * cuda_ksplit.c; streamed weights, cuda_wstream.c): the caller's state
 * into chunk-major copy 0, its columns spread over the batch group's
 * blocks, then the group's barrier, and a K split's cluster barrier (the
 * partner's mbarriers are initialised). */
void cu_emit_bulk_prologue(const cu_ctx *c, cu_text *t)
{
    if (!c->ksplit && !c->wstream)
        return;
    long long K = (long long)cu_kdim(c, c->bulk_lin), per = (K + c->NUB - 1) / c->NUB;
    cu_printf(t,
              "    for (int i = tid; i < BT * %lld; i += NT) {\n"
              "        const int b = i / %lld, cc = ub * %lld + i %% %lld, gb = b0 + b;\n"
              "        if (gb < B && cc < %lld)\n"
              "            __stcg(BPUT(0, gb, cc), __uint_as_float(rnnc_tf32(__ldcg(si%d_ + (size_t)gb * "
              "%lld + cc))));\n"
              "    }\n",
              per, per, per, per, K, c->bulk_state, K);
    cu_emit_group_arrive(t, "    ");
    cu_emit_group_wait(t, "    ");
    if (c->ksplit)
        cu_printf(t, "    rnnc_cluster_sync();\n");
    else
        cu_printf(t, "    __syncthreads();\n");
}
