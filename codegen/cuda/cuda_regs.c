/*
 * cuda_regs.c: what the step kernel keeps in registers and how it moves
 * memory in bulk.  The leaves an element reads (folds, hoisted values, x,
 * states) live in registers: folds are loaded once, states are carried
 * from step to step (written where the next state is made), and the
 * hoisted values and x of step t+1 are loaded while the block waits at the
 * last barrier of step t, so no step waits on global memory for its own
 * element's inputs.  A thread that owns several elements (E > NT) keeps
 * arrays of them, indexed in unrolled loops, where the registers allow
 * (cache_fits); where they do not, step t+1's hoisted values are
 * prefetched into L2 at that barrier instead.  Bulk
 * copies to shared memory issue up to 8 16-byte loads per thread before the
 * first store, so a copy costs about one memory latency, not one per word.
 * The weights: each block's slices copied to shared memory once, and the
 * FFMA loops' reads of them (16-bit in a half model, widened to fp32).
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/cuda_gen.h"

bool cu_in_regs(const cu_ctx *c, int32_t v)
{
    return c->pf && cu_slices(c, v) <= 32;
}

static bool is_elem(const cu_ctx *c, int32_t v)
{
    return v >= 0 && c->role[v] == CU_STEP_ELEM;
}

bool cu_slice_live(const cu_ctx *c, int32_t v, int sl)
{
    return sl >= 64 || (c->live[v] >> sl & 1);
}

/* Which slices of the step's element values something reads.  Read are:
 * what the stores take (values kept for later phases or exchanged, next
 * states, the output), whatever a node other than an element reads, the
 * whole operand of a reduction or layernorm (its row statistics), and what
 * a live slice reads.  A slice nobody reads is neither emitted nor given
 * registers: the backward of a GRU chunks one slice out of a 3H sum, and
 * NVRTC warns on the other two, computed and never used. */
void cu_mark_live(cu_ctx *c)
{
    const ir_fn *f = c->f;
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *nd = &f->nodes[i];
        bool whole = !is_elem(c, i) || (ir_ops[nd->op].flags & IR_F_REDUCE) ||
                     nd->op == IR_LAYERNORM;
        if (is_elem(c, i) && (c->need[i] & (CU_NEED_XP | CU_NEED_XB)))
            c->live[i] = ~0ull;
        for (int k = 0; whole && k < 3; k++)
            if (nd->a[k] >= 0)
                c->live[nd->a[k]] = ~0ull;
    }
    for (int s = 0; s < f->n_states; s++)
        c->live[f->states[s].next] = ~0ull;
    c->live[f->output] = ~0ull;
    for (int32_t i = f->n - 1; i >= 0; i--) {
        if (!is_elem(c, i))
            continue;
        for (int sl = 0; sl < cu_slices(c, i); sl++) {
            int32_t o[3];
            int os[3];
            if (!cu_slice_live(c, i, sl) || cu_slice_operands(c, i, sl, o, os) != RNNC_OK)
                continue;
            for (int k = 0; k < 3; k++)
                if (is_elem(c, o[k]))
                    c->live[o[k]] |= os[k] >= 64 ? 0 : 1ull << (c->k[o[k]] < 1 ? 0 : os[k]);
        }
    }
}

/* Marks the leaf slices an element reads through v (the walk of
 * cu_elem_expr). */
static void mark_read(cu_ctx *c, int32_t v, int sl)
{
    int32_t o;
    int os;
    if (c->k[v] < 1)
        sl = 0;
    switch (c->role[v]) {
    case CU_LEAF_FOLD:
    case CU_LEAF_INPUT:
    case CU_LEAF_STATE:
    case CU_HOIST_BUF:
        if (cu_in_regs(c, v))
            c->pfuse[v] |= 1u << sl;
        return;
    case CU_HOIST_VIEW:
        cu_view_slice(c, v, sl, &o, &os);
        mark_read(c, o, os);
        return;
    default:
        return;
    }
}

/* An operand of an element of phase p: a value made in p is a local. */
static void mark_operand(cu_ctx *c, int32_t o, int sl, int p)
{
    if (c->role[o] != CU_STEP_ELEM || c->phase[o] != p)
        mark_read(c, o, sl);
}

/* Several elements a thread: the cache takes EPT registers a leaf slice,
 * live across the multiply, so only where the multiply leaves room: 256
 * threads or fewer (255 registers a thread) and register tiles under 64
 * accumulators (8 x 8 tiles use about 254 already).  H100, LSTM I = H =
 * 1024, B = 64 (2 elements a thread, 4 x 4 and 8 x 4 tiles: 128 -> 156
 * registers, no spills): 3.41 -> 3.32-3.34 ms, the autotuner's pick moving
 * from streamed W_hh to W_hh on chip; 512-thread tilings (the stacks, B =
 * 128, 256) are unchanged (bench/results/h100/ept/), and the mma.sync
 * step's spilled there (rejected/mma-regcache/).  The wgmma step's
 * multiply needs fewer registers (87 at B = 256, I = H = 1024, 120 with
 * the cache, no spills): 3.50 / 3.55 -> 3.33 / 3.33 ms
 * (bench/results/h100/wgstep/). */
#define CACHE_REGS_MAX 32

static bool cache_fits(const cu_ctx *c)
{
    /* passes (c->NP) would need a cache each */
    if (c->NP > 1)
        return false;
    if (c->EPT == 1)
        return true;
    if (c->EPT > 4 || (c->NT > 256 && !c->wgstep) || (!c->mma && c->RR * c->BB >= 64))
        return false;
    int64_t regs = 0;
    for (int32_t v = 0; v < c->f->n; v++)
        for (uint32_t m = c->pfuse[v]; m; m &= m - 1)
            regs += c->EPT;
    return regs <= CACHE_REGS_MAX;
}

/* Every read of the step's element code (cuda_step.c: the slices of each
 * phase's elements, then the next states, the current states they may
 * keep and the output in the last phase). */
void cu_place_regs(cu_ctx *c)
{
    const ir_fn *f = c->f;
    int last = c->s->n_phases - 1;
    int64_t E = (int64_t)c->UT * c->BTP;
    c->EPT = (int)((E + c->NT - 1) / c->NT);
    c->pf = true; /* (marks every leaf slice read: cu_in_regs) */
    for (int32_t i = 0; i < f->n; i++) {
        if (c->role[i] != CU_STEP_ELEM || c->phase[i] < 0 || c->phase[i] > last)
            continue;
        for (int sl = 0; sl < cu_slices(c, i); sl++) {
            int32_t o[3];
            int os[3];
            if (!cu_slice_live(c, i, sl) || cu_slice_operands(c, i, sl, o, os) != RNNC_OK)
                continue; /* the emitter reports it */
            for (int k = 0; k < 3; k++)
                if (o[k] >= 0)
                    mark_operand(c, o[k], os[k], c->phase[i]);
        }
    }
    for (int s = 0; s < f->n_states; s++) {
        int32_t nx = f->states[s].next, sv = f->states[s].node;
        for (int sl = 0; sl < cu_slices(c, nx); sl++) {
            mark_operand(c, nx, sl, last);
            mark_read(c, sv, c->k[sv] < 1 ? 0 : sl);
        }
    }
    for (int sl = 0; sl < cu_slices(c, f->output); sl++)
        mark_operand(c, f->output, sl, last);
    if (c->EPT <= 4 && cache_fits(c))
        return;
    c->pf = false;
    c->EPT = 1;
    memcpy(c->pl2, c->pfuse, (size_t)f->n * sizeof *c->pfuse);
    memset(c->pfuse, 0, (size_t)f->n * sizeof *c->pfuse);
}

void cu_reg_name(const cu_ctx *c, int32_t v, int sl, char *buf, size_t n)
{
    snprintf(buf, n, c->EPT > 1 ? "r%d_%d[j_]" : "r%d_%d", (int)v, sl);
}

/* With arrays, e = tid + j_ NT in a loop the compiler unrolls, so every
 * index into them is a constant. */
void cu_emit_elem_loop(const cu_ctx *c, cu_text *t)
{
    if (c->EPT > 1)
        cu_printf(t,
                  "#pragma unroll\n"
                  "    for (int j_ = 0; j_ < %d; ++j_) {\n"
                  "        const int e = tid + j_ * NT;\n"
                  "        if (e >= E) continue;\n",
                  c->EPT);
    else
        cu_printf(t, "    for (int e = tid; e < E; e += NT) {\n");
}

void cu_emit_reg_decls(const cu_ctx *c, cu_text *t)
{
    char d[256];
    for (int32_t v = 0; v < c->f->n; v++) {
        bool first = true;
        for (int sl = 0; sl < 32; sl++) {
            if (!(c->pfuse[v] & (1u << sl)))
                continue;
            if (c->EPT > 1)
                cu_printf(t, "    float r%d_%d[%d] = {};", (int)v, sl, c->EPT);
            else
                cu_printf(t, "    float r%d_%d = 0.f;", (int)v, sl);
            if (first)
                cu_printf(t, " /* %s */", cu_leaf_describe(c, v, d, sizeof d));
            cu_printf(t, "\n");
            first = false;
        }
    }
}

/* Where each state enters step 0 (si<k>_) and where the final state goes
 * (so<k>_): the caller's buffers of io where given, else copies 0 and 2 of
 * st (cg_cuda_io). */
void cu_emit_state_io(const cu_ctx *c, cu_text *t)
{
    const ir_fn *f = c->f;
    for (int s = 0; s < f->n_states; s++) {
        long long at = (long long)c->plan->state[s].offset;
        if (s < CG_CUDA_IO)
            cu_printf(t,
                      "    const float *const si%d_ = io.in[%d] ? io.in[%d] : st + %lld; /* state %s */\n"
                      "    float *const so%d_ = io.out[%d] ? io.out[%d] : FIN + %lld;\n",
                      s, s, s, at, f->states[s].name, s, s, s, at);
        else
            cu_printf(t,
                      "    const float *const si%d_ = st + %lld; /* state %s */\n"
                      "    float *const so%d_ = FIN + %lld;\n",
                      s, at, f->states[s].name, s, at);
        cu_printf(t, "    (void)si%d_; (void)so%d_;\n", s, s);
    }
}

/* first: every register at t = 0 (states from copy 0); else the hoisted
 * values and x of step t + 1. */
void cu_emit_reg_loads(const cu_ctx *c, cu_text *t, bool first)
{
    bool any = false, states = false;
    for (int32_t v = 0; v < c->f->n; v++) {
        any |= c->pfuse[v] && (first || c->role[v] == CU_HOIST_BUF || c->role[v] == CU_LEAF_INPUT);
        states |= c->pfuse[v] && c->role[v] == CU_LEAF_STATE;
    }
    if (!any)
        return;
    if (c->EPT > 1) {
        cu_emit_elem_loop(c, t);
        cu_printf(t, "        const int u = e %% UT, b = e / UT, gu = u0 + u, gb = b0 + b;\n");
    } else {
        /* the golden sources (tests/golden) keep this form */
        cu_printf(t, "    if (tid < E) {\n"
                     "        const int e = tid, u = e %% UT, b = e / UT, gu = u0 + u, gb = b0 + b;\n");
    }
    cu_printf(t,
              "        if (b < BT && gu < H && gb < B) {\n"
              "            const size_t row = ROWT(gb, %s);\n"
              "            (void)row; (void)u;\n",
              first ? "TR(gb, 0)" : "TR(gb, t + 1)");
    for (int s = 0; first && states && s < c->f->n_states; s++)
        cu_printf(t, "            const float *const s%d_ = si%d_; (void)s%d_;\n", s, s, s);
    char ld[1024];
    for (int32_t v = 0; v < c->f->n; v++) {
        if (!c->pfuse[v])
            continue;
        if (!first && c->role[v] != CU_HOIST_BUF && c->role[v] != CU_LEAF_INPUT)
            continue;
        for (int sl = 0; sl < 32; sl++) {
            char r[64];
            cu_reg_name(c, v, sl, r, sizeof r);
            if ((c->pfuse[v] & (1u << sl)) && cu_leaf_load(c, v, sl, ld, sizeof ld))
                cu_printf(t, "            %s = %s;\n", r, ld);
        }
    }
    cu_printf(t, "        }\n    }\n");
}

/* Without the caches, each element's hoisted values (and x) come from
 * memory after the multiply; the hoisted values were written by the GEMM
 * long before and no longer sit in L2 (100 MB a layer at B = 256, H =
 * 1024), so the element phase waited on HBM (10% of the bf16 step's
 * samples there).  Prefetched into L2 at the barrier of the step before,
 * they arrive while the next step stages h and multiplies. */
bool cu_l2_prefetches(const cu_ctx *c)
{
    bool any = false;
    for (int32_t v = 0; v < c->f->n; v++)
        any |= c->pl2[v] && (c->role[v] == CU_HOIST_BUF || c->role[v] == CU_LEAF_INPUT);
    return !c->pf && !c->ll && c->NP == 1 && any;
}

void cu_emit_l2_prefetch(const cu_ctx *c, cu_text *t)
{
    char at[192];
    if (!cu_l2_prefetches(c))
        return;
    cu_printf(t,
              "        for (int e = tid; e < E; e += NT) {\n"
              "            const int u = e %% UT, b = e / UT, gu = u0 + u, gb = b0 + b;\n"
              "            if (b >= BT || gu >= H || gb >= B) continue;\n"
              "            const size_t row = ROWT(gb, TR(gb, t + 1));\n"
              "            (void)row;\n");
    for (int32_t v = 0; v < c->f->n; v++)
        for (int sl = 0; sl < 32; sl++)
            if ((c->pl2[v] & (1u << sl)) && cu_leaf_addr(c, v, sl, at, sizeof at))
                cu_printf(t, "            rnnc_pfl2(%s);\n", at);
    cu_printf(t, "        }\n");
}

static void copy_vec(cu_text *t, long long n4, const char *idx, const char *cond, const char *src,
                     const char *dst, bool cached, const char *vt, const char *zero,
                     const char *svt);

/* copy_vec's strings for the slice of linear i (weight w, K columns) in
 * words of 4 columns, q words a row in shared memory of which the first
 * `cols` columns are read (the rest zeroed): word i of the loop is row r,
 * columns 4 k4 .. 4 k4 + 3. */
typedef struct slice_words {
    char idx[256], cond[64], src[128];
} slice_words;

static void slice_words_of(const cu_ctx *c, int32_t w, long long K, long long cols, int q,
                           slice_words *s)
{
    snprintf(s->idx, sizeof s->idx,
             "const int r = i / %d, k4 = i %% %d, s = r / UT, gu = u0 + r %% UT; "
             "(void)k4; (void)s; (void)gu;", q, q);
    snprintf(s->cond, sizeof s->cond, "gu < H && k4 * 4 < %lld", cols);
    snprintf(s->src, sizeof s->src, "wts + %lld + (size_t)(s * H + gu) * %lld + k4 * 4",
             (long long)c->off[w], K);
}

/* A half model's slice of linear i (weight w): 16-bit values, in units of
 * 4 (8 bytes) when K allows. */
static void emit_weights_half(const cu_ctx *c, int32_t i, int32_t w, long long K, long long R,
                              cu_text *t)
{
    if (K % 4 == 0) {
        slice_words s;
        char dst[96];
        slice_words_of(c, w, K, K, c->kp[i] / 4, &s);
        snprintf(dst, sizeof dst, "&smh_[2 * SM_W%d + r * %d + k4 * 4]", (int)i, c->kp[i]);
        copy_vec(t, R * (c->kp[i] / 4), s.idx, s.cond, s.src, dst, true, "uint2",
                 "make_uint2(0u, 0u)", NULL);
        return;
    }
    cu_printf(t,
              "    for (int i = tid; i < %lld; i += NT) {\n"
              "        const int r = i / %d, kk = i %% %d, s = r / UT, gu = u0 + r %% UT;\n"
              "        smh_[2 * SM_W%d + i] = (gu < H && kk < %lld) ? wts[%lld + (size_t)(s * H + gu) "
              "* %lld + kk] : (rnnc_h)0;\n    }\n",
              R * c->kp[i], c->kp[i], c->kp[i], (int)i, K, (long long)c->off[w], K);
}

/* The first `cols` columns of linear i's fp32 rows (K a multiple of 4)
 * into SM_W<i>, rows ld floats apart: every copy in flight at once with
 * cp.async on sm_80+ (no registers; the kernel waits for them before the
 * barrier ahead of step 0), else batched 16-byte loads.  The whole slice
 * on chip, or a streamed linear's kept columns. */
static void emit_slice_copy(const cu_ctx *c, int32_t i, long long cols, int ld, cu_text *t)
{
    int32_t w = c->f->nodes[i].a[1];
    long long K = (long long)c->cols[c->f->nodes[i].a[0]];
    long long R = (long long)cu_slices(c, i) * c->UT;
    int q = ld / 4;
    char at[160];
    if (c->ksplit && i == c->bulk_lin) {
        cu_emit_ksplit_weights(c, i, t);
        return;
    }
    /* the wgmma step reads its slice column block by column block
     * (cuda_wgstep.c) */
    if (c->wgstep && i == c->bulk_lin)
        cu_wgstep_weight_at(c, i, at, sizeof at);
    else
        snprintf(at, sizeof at, "SM_W%d + r * %d + k4 * 4", (int)i, ld);
    if (c->cfg.sm >= 80) {
        cu_printf(t,
                  "    for (int i = tid; i < %lld; i += NT) {\n"
                  "        const int r = i / %d, k4 = i %% %d, s = r / UT, gu = u0 + r %% UT;\n"
                  "        const bool ok = gu < H && k4 * 4 < %lld;\n"
                  "        rnnc_cp16(&sm_[%s], ok ? wts + %lld + "
                  "(size_t)(s * H + gu) * %lld + k4 * 4 : wts, ok);\n"
                  "    }\n",
                  R * q, q, q, cols, at, (long long)c->off[w], K);
        return;
    }
    slice_words s;
    char dst[96];
    slice_words_of(c, w, K, cols, q, &s);
    snprintf(dst, sizeof dst, "&sm_[SM_W%d + r * %d + k4 * 4]", (int)i, ld);
    cu_emit_copy4(t, R * q, s.idx, s.cond, s.src, dst, true);
}

/* Each block's rows of every step linear's matrix into shared memory, once. */
void cu_emit_weights(const cu_ctx *c, cu_text *t)
{
    for (int32_t i = 0; i < c->f->n; i++) {
        /* (the streamed wgmma step's come with each chunk, cuda_wstream.c) */
        if (c->role[i] != CU_STEP_LINEAR || c->wstream)
            continue;
        if (c->stream) {
            /* read from global memory every step, but for the leading
             * columns kept on chip */
            if (c->kr[i])
                emit_slice_copy(c, i, c->kr[i], cu_kr_stride(c, i), t);
            continue;
        }
        int32_t w = c->f->nodes[i].a[1];
        long long K = (long long)c->cols[c->f->nodes[i].a[0]];
        long long R = (long long)cu_slices(c, i) * c->UT;
        if (c->half) {
            emit_weights_half(c, i, w, K, R, t);
            continue;
        }
        if (c->outer && i == c->bulk_lin) {
            cu_emit_outer_weights(c, i, t);
            continue;
        }
        if (K % 4 == 0) {
            emit_slice_copy(c, i, K, c->kp[i], t);
            continue;
        }
        cu_printf(t,
                  "    for (int i = tid; i < %lld; i += NT) {\n"
                  "        const int r = i / %d, kk = i %% %d, s = r / UT, gu = u0 + r %% UT;\n"
                  "        sm_[SM_W%d + i] = (gu < H && kk < %lld) ? wts[%lld + (size_t)(s * H + gu) "
                  "* %lld + kk] : 0.f;\n    }\n",
                  R * c->kp[i], c->kp[i], c->kp[i], (int)i, K, (long long)c->off[w],
                  K);
    }
}

/* Batched vector copies global -> shared of type vt (float4; uint2 or
 * uint4: 4 or 8 16-bit values), zero: its zero value; svt NULL, or
 * "uint2": a float4 stored as 4 16-bit values (rnnc_pack4, the
 * tensor-core x of a half model). */
static void copy_vec(cu_text *t, long long n4, const char *idx, const char *cond, const char *src,
                     const char *dst, bool cached, const char *vt, const char *zero,
                     const char *svt)
{
    char store[200];
    snprintf(store, sizeof store, svt ? "*(%s *)(%s) = rnnc_pack4(v_[j_]);"
                                      : "*(%s *)(%s) = v_[j_];", svt ? svt : vt, dst);
    /* up to 32 registers of loads in flight per thread (8 float4s; 16
     * uint2s up to 512 threads: a 16-bit x of 32 rows of 1024 in one
     * round), 8 at 1024 threads (64 registers a thread); NT is a macro of
     * the kernel */
    const char *cap = strcmp(vt, "uint2") == 0 ? "(NT > 512 ? 8 : 16)" : "8";
    cu_printf(t,
              "    {\n"
              "        enum { N4_ = %lld, U_ = (N4_ + NT - 1) / NT < %s ? (N4_ + NT - 1) / NT : %s };\n"
              "        for (int i0_ = 0; i0_ < N4_; i0_ += U_ * NT) {\n"
              "            %s v_[U_];\n"
              "#pragma unroll\n"
              "            for (int j_ = 0; j_ < U_; ++j_) {\n"
              "                const int i = i0_ + j_ * NT + tid;\n"
              "                v_[j_] = %s;\n"
              "                if (i < N4_) {\n"
              "                    %s\n"
              "                    if (%s) v_[j_] = %s((const %s *)(%s));\n"
              "                }\n"
              "            }\n"
              "#pragma unroll\n"
              "            for (int j_ = 0; j_ < U_; ++j_) {\n"
              "                const int i = i0_ + j_ * NT + tid;\n"
              "                if (i < N4_) {\n"
              "                    %s\n"
              "                    %s\n"
              "                }\n"
              "            }\n"
              "        }\n"
              "    }\n",
              n4, cap, cap, vt, zero, idx, cond, cached ? "__ldg" : "__ldcg", vt, src, idx, store);
}

void cu_emit_copy4(cu_text *t, long long n4, const char *idx, const char *cond,
                   const char *src, const char *dst, bool cached)
{
    copy_vec(t, n4, idx, cond, src, dst, cached, "float4", "make_float4(0.f, 0.f, 0.f, 0.f)", NULL);
}

void cu_emit_copy4hh(cu_text *t, long long n4, const char *idx, const char *cond,
                     const char *src, const char *dst)
{
    copy_vec(t, n4, idx, cond, src, dst, false, "uint2", "make_uint2(0u, 0u)", NULL);
}

void cu_emit_copy8hh(cu_text *t, long long n8, const char *idx, const char *cond,
                     const char *src, const char *dst)
{
    copy_vec(t, n8, idx, cond, src, dst, false, "uint4", "make_uint4(0u, 0u, 0u, 0u)", NULL);
}

void cu_emit_copy4h(cu_text *t, long long n4, const char *idx, const char *cond, const char *src,
                    const char *dst)
{
    copy_vec(t, n4, idx, cond, src, dst, false, "float4", "make_float4(0.f, 0.f, 0.f, 0.f)",
             "uint2");
}

/* The weights of row i of the lane's register tile: shared memory, or
 * (streamed) a pointer to the matrix row in global memory. */
void cu_emit_wrows(const cu_ctx *c, int32_t lin, cu_text *t)
{
    if (!c->stream)
        return;
    int32_t w = c->f->nodes[lin].a[1];
    long long K = (long long)c->cols[c->f->nodes[lin].a[0]];
    int NTR = cu_slices(c, lin) * c->UT / c->RR;
    for (int i = 0; i < c->RR; i++)
        cu_printf(t,
                  "        const %s *__restrict__ wg%d = wts + %lld + (size_t)(((tr + %d) / UT) "
                  "* H + min(u0 + (tr + %d) %% UT, H - 1)) * %lld;\n",
                  c->half ? "rnnc_h" : "float", i, (long long)c->off[w], i * NTR, i * NTR, K);
}

/* A half model's weights: 4 16-bit values (8 bytes) widened to a float4. */
static void emit_wload_half(const cu_ctx *c, int32_t lin, int i, cu_text *t)
{
    long long K = (long long)c->cols[c->f->nodes[lin].a[0]];
    int NTR = cu_slices(c, lin) * c->UT / c->RR;
    if (!c->stream)
        cu_printf(t, "            const float4 w%d = rnnc_h4(*(const uint2 *)&smh_[2 * SM_W%d + (tr + %d) * %d + kk]);\n",
                  i, (int)lin, i * NTR, c->kp[lin]);
    else if (K % 4 == 0)
        cu_printf(t, "            const float4 w%d = rnnc_h4(__ldg((const uint2 *)(wg%d + kk)));\n", i, i);
    else
        cu_printf(t,
                  "            const float4 w%d = make_float4(kk < %lld ? rnnc_h2f(__ldg(wg%d + kk)) : 0.f, "
                  "kk + 1 < %lld ? rnnc_h2f(__ldg(wg%d + kk + 1)) : 0.f, kk + 2 < %lld ? "
                  "rnnc_h2f(__ldg(wg%d + kk + 2)) : 0.f, kk + 3 < %lld ? rnnc_h2f(__ldg(wg%d + kk + 3)) : 0.f);\n",
                  i, K, i, K, i, K, i, K, i);
}

void cu_emit_wload(const cu_ctx *c, int32_t lin, int i, bool kept, cu_text *t)
{
    long long K = (long long)c->cols[c->f->nodes[lin].a[0]];
    int NTR = cu_slices(c, lin) * c->UT / c->RR;
    if (kept || (!c->half && !c->stream)) {
        cu_printf(t, "            const float4 w%d = *(const float4 *)&sm_[SM_W%d + (tr + %d) * %d + kk];\n",
                  i, (int)lin, i * NTR, kept ? cu_kr_stride(c, lin) : c->kp[lin]);
    } else if (c->half) {
        emit_wload_half(c, lin, i, t);
    } else if (K % 4 == 0) {
        cu_printf(t, "            const float4 w%d = __ldg((const float4 *)(wg%d + kk));\n", i, i);
    } else {
        cu_printf(t,
                  "            const float4 w%d = make_float4(kk < %lld ? __ldg(wg%d + kk) : 0.f, "
                  "kk + 1 < %lld ? __ldg(wg%d + kk + 1) : 0.f, kk + 2 < %lld ? __ldg(wg%d + kk + 2) "
                  ": 0.f, kk + 3 < %lld ? __ldg(wg%d + kk + 3) : 0.f);\n",
                  i, K, i, K, i, K, i, K, i);
    }
}
