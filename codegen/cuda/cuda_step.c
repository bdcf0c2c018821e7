/*
 * cuda_step.c: the persistent step kernel.  One cooperative launch runs all
 * T steps.  Each block owns UT hidden units (all their slices s*H + u) and
 * BT batch rows; its weight slices stay in shared memory for the whole
 * sequence.  A step is a series of phases (from the schedule): each stages
 * the whole vectors its linears read (cuda_stage.c), multiplies them in
 * shared memory (cuda_mma_step.c, cuda_ffma.c),
 * evaluates the cell's element-wise work for the block's (unit, row)
 * elements, and ends with a barrier of the block's batch group (rows never
 * exchange data, so only the blocks owning the same rows wait for each
 * other), or, for single-phase cells at small batch, with no barrier at all
 * (cuda_ll.c).  Feature-axis reductions over a value made in the step
 * exchange per-block partial statistics through global memory (Chan's
 * parallel mean/variance), so no block needs more than its own elements.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

static bool is_reduce(const ir_node *n)
{
    return (ir_ops[n->op].flags & IR_F_REDUCE) != 0;
}

static bool distributed(const cu_ctx *c, int32_t v)
{
    return c->role[v] == CU_STEP_ELEM || c->role[v] == CU_STEP_LINEAR;
}

static void emit_prelude(const cu_ctx *c, cu_text *t)
{
    cu_printf(t,
              "#define B %lld\n#define H %lld\n#define UT %d\n#define BT %d\n#define BTP %d\n"
              "#define NUB %d\n#define NT %d\n#define E (UT * BTP)\n#define STF %lld\n",
              (long long)c->B, (long long)c->H, c->UT, c->BT, c->BTP, c->NUB, c->NT,
              (long long)c->plan->state_floats);
    if (c->NP > 1)
        cu_printf(t, "#define NP %d /* batch passes: a block's rows are NP tiles of BT */\n", c->NP);
    /* Row gb at step s reads and writes time TR(gb, s): s forward; from its
     * own end backward (rev), and past its end (s >= LEN) time s, so every
     * time of every row is written once (zeros past the end). */
    cu_printf(t,
              "#define ROWT(gb, tt) (%s)\n#define LEN(gb) (len ? len[gb] : T)\n"
              "#define TR(gb, s) ((rev && (s) < LEN(gb)) ? LEN(gb) - 1 - (s) : (s))\n"
              "#define ROW(gb) ROWT(gb, TR(gb, t))\n#define YLD %lld\n"
              "#define FIN (st + 2 * (size_t)STF)\n",
              c->cfg.batch_first ? "(size_t)(gb) * T + (tt)" : "(size_t)(tt) * B + (gb)",
              (long long)(c->cfg.y_ld > 0 ? c->cfg.y_ld : c->cols[c->f->output]));
    if (cu_l2_prefetches(c))
        cu_printf(t, "__device__ __forceinline__ void rnnc_pfl2(const void *p)\n{\n"
                     "    asm volatile(\"prefetch.global.L2 [%%0];\" : : \"l\"(p));\n}\n");
    /* The barrier of a batch group (the NUB blocks that own its rows: rows
     * never exchange data): one counter word per group, to which each block
     * adds 1 with a release reduction (one thread, after the block barrier
     * that orders its threads' stores before it); one lane polls the word
     * with acquire loads until every block of the group has arrived (epoch
     * x NUB, compared modulo 2^32).  On the H100 this took the LSTM at I = H
     * = 64, B = 64 from 3.09 to 2.43 us a step and B = 128, I = H = 512
     * from 1.898 to 1.764 ms, against a flag per block polled by a warp
     * with relaxed loads and one acquire fence after (NUB loads a round and
     * a fence; bench/results/h100/barrier/). */
    cu_printf(t,
              "__device__ __forceinline__ void rnnc_arrive(unsigned *n)\n{\n"
              "    asm volatile(\"red.release.gpu.global.add.u32 [%%0], 1;\" : : \"l\"(n) : "
              "\"memory\");\n}\n"
              "__device__ __forceinline__ void rnnc_wait(const unsigned *n, unsigned v)\n{\n"
              "    if ((threadIdx.x & 31) == 0) {\n"
              "        unsigned a;\n"
              "        do asm volatile(\"ld.acquire.gpu.global.u32 %%0, [%%1];\" : \"=r\"(a) : "
              "\"l\"(n) : \"memory\");\n"
              "        while ((int)(a - v) < 0);\n"
              "    }\n"
              "    __syncwarp();\n}\n");
    cu_printf(t,
              "__device__ __forceinline__ void rnnc_chan(float &n, float &m, float &q, float nb, "
              "float mb, float qb)\n{\n"
              "    const float nn = n + nb;\n"
              "    if (nn == 0.f) return;\n"
              "    const float d = mb - m, f = nb / nn;\n"
              "    m += d * f;\n    q += qb + d * d * n * f;\n    n = nn;\n}\n");
}

/* The regions of a step block's shared memory, named by node (floats). */
/* SM_<kind><v> at float `at`, or, with a copy a batch pass, `stride`
 * floats on for each (pass_ in scope wherever it is used). */
static void emit_smem_name(cu_text *t, const char *kind, int32_t v, int64_t at, int64_t stride,
                           const char *desc, const char *what)
{
    if (stride)
        cu_printf(t, "#define SM_%s%d (%lld + pass_ * %lld) /* %s: %s */\n", kind, (int)v,
                  (long long)at, (long long)stride, desc, what);
    else
        cu_printf(t, "#define SM_%s%d %lld /* %s: %s */\n", kind, (int)v, (long long)at, desc, what);
}

static void emit_smem_names(const cu_ctx *c, cu_text *t)
{
    const ir_fn *f = c->f;
    char d[256];
    cu_printf(t, "/* shared memory of a step block (floats): x of the step's linears, staged at 0 */\n");
    for (int32_t i = 0; i < f->n; i++) {
        cu_describe(c, i, d, sizeof d);
        if (c->role[i] == CU_STEP_LINEAR && !c->stream && !c->wstream)
            cu_printf(t, "#define SM_W%d %lld /* %s: weight slice */\n", (int)i,
                      (long long)c->wsm[i], d);
        if (c->role[i] == CU_STEP_LINEAR && c->stream && c->kr[i])
            cu_printf(t, "#define SM_W%d %lld /* %s: columns 0 .. %d of the weight slice */\n",
                      (int)i, (long long)c->wsm[i], d, c->kr[i] - 1);
        if (c->role[i] == CU_STEP_LINEAR)
            emit_smem_name(t, "L", i, c->sm[i],
                           cu_lin_copies(c, i) > 1 ? cu_slices(c, i) * c->UT * (c->BTP + 1) : 0, d,
                           cu_lin_copies(c, i) > 1 ? "result, a copy a pass" : "result");
        if (c->xg[i] >= 0)
            cu_printf(t, "/* %s: kept for a later phase at xb + %lld (global memory) */\n", d,
                      (long long)c->xg[i]);
        if (c->xp[i] >= 0)
            emit_smem_name(t, "V", i, c->xp[i],
                           c->NP > 1 ? (int64_t)cu_slices(c, i) * c->UT * c->BTP : 0, d,
                           "kept for a later phase");
        if (c->role[i] == CU_STEP_ELEM && (ir_ops[f->nodes[i].op].flags & IR_F_REDUCE))
            cu_printf(t, "#define SM_S%d %lld /* %s: row statistics */\n", (int)i,
                      (long long)c->sm[i], d);
    }
}

/* Stage (cuda_stage.c) and multiply, on tensor cores or FFMA
 * (cuda_mma_step.c, cuda_ffma.c). */
static rnnc_status emit_linear(const cu_ctx *c, int32_t lin, cu_text *t)
{
    if (c->wgstep && lin == c->bulk_lin)
        return cu_emit_wgstep_linear(c, lin, t, cu_emit_chunk_open);
    if (c->mma)
        return cu_emit_mma_linear(c, lin, t, cu_emit_chunk_open);
    if (c->outer && lin == c->bulk_lin)
        return cu_emit_outer_linear(c, lin, t, cu_emit_chunk_open);
    return cu_emit_ffma_linear(c, lin, t, cu_emit_chunk_open);
}

/* Row statistics of reduction r read directly from a whole vector. */
static rnnc_status emit_direct_stats(const cu_ctx *c, int32_t r, cu_text *t)
{
    const ir_node *n = &c->f->nodes[r];
    int32_t xv = n->a[0];
    char g[4096], eps[64];
    if (!cu_gather_expr(c, xv, "cx", g, sizeof g))
        return RNNC_ERR_UNSUPPORTED;
    long long K = (long long)c->cols[xv];
    cu_printf(t,
              "    for (int b = tid >> 5; b < BT; b += NT / 32) {\n"
              "        const int l = tid & 31, gb = b0 + b;\n"
              "        if (gb >= B) continue;\n"
              "        const size_t row = ROW(gb); (void)row;\n"
              "        float s = 0.f, q = 0.f;\n"
              "        for (int cx = l; cx < %lld; cx += 32) s += %s;\n"
              "        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);\n"
              "        const float m = s / %lld.f;\n"
              "        for (int cx = l; cx < %lld; cx += 32) { const float d = %s - m; q += d * d; }\n"
              "        for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);\n",
              K, g, K, K, g);
    if (n->op == IR_LAYERNORM)
        cu_printf(t, "        if (l == 0) { sm_[SM_S%d + 2 * b] = m; sm_[SM_S%d + 2 * b + 1] = rsqrtf(q / %lld.f + %s); }\n",
                  (int)r, (int)r, K, cu_float_lit(n->f, eps, sizeof eps));
    else
        cu_printf(t, "        if (l == 0) { sm_[SM_S%d + 2 * b] = m; sm_[SM_S%d + 2 * b + 1] = s; }\n",
                  (int)r, (int)r);
    cu_printf(t, "    }\n");
    return RNNC_OK;
}

/* Row statistics of reduction r from every block's partials. */
static void emit_combine(const cu_ctx *c, int32_t r, cu_text *t)
{
    const ir_node *n = &c->f->nodes[r];
    int32_t xv = n->a[0];
    char eps[64];
    cu_printf(t,
              "    for (int b = tid >> 5; b < BT; b += NT / 32) {\n"
              "        const int l = tid & 31, gb = b0 + b;\n"
              "        if (gb >= B) continue;\n"
              "        float n = 0.f, m = 0.f, q = 0.f;\n"
              "        for (int j = l; j < NUB; j += 32) {\n"
              "            const float nb = (float)(%d * min(UT, H - j * UT));\n"
              "            rnnc_chan(n, m, q, nb, __ldcg(part + %lld + ((size_t)gb * NUB + j) * 2), "
              "__ldcg(part + %lld + ((size_t)gb * NUB + j) * 2 + 1));\n"
              "        }\n"
              "        for (int o = 16; o > 0; o >>= 1) {\n"
              "            const float nb = __shfl_xor_sync(0xffffffffu, n, o), mb = "
              "__shfl_xor_sync(0xffffffffu, m, o), qb = __shfl_xor_sync(0xffffffffu, q, o);\n"
              "            rnnc_chan(n, m, q, nb, mb, qb);\n"
              "        }\n",
              cu_slices(c, xv), (long long)c->pt[r], (long long)c->pt[r]);
    if (n->op == IR_LAYERNORM)
        cu_printf(t, "        if (l == 0) { sm_[SM_S%d + 2 * b] = m; sm_[SM_S%d + 2 * b + 1] = rsqrtf(q / n + %s); }\n",
                  (int)r, (int)r, cu_float_lit(n->f, eps, sizeof eps));
    else
        cu_printf(t, "        if (l == 0) { sm_[SM_S%d + 2 * b] = m; sm_[SM_S%d + 2 * b + 1] = m * n; }\n",
                  (int)r, (int)r);
    cu_printf(t, "    }\n");
}

/* Per-block partial statistics of step value xv for reduction r. */
static void emit_partials(const cu_ctx *c, int32_t r, cu_text *t)
{
    int32_t xv = c->f->nodes[r].a[0];
    char val[224], at[192];
    if (c->role[xv] == CU_STEP_LINEAR) {
        cu_lin_result(c, xv, "sl * UT + u", val, sizeof val);
    } else if (c->xg[xv] >= 0) {
        cu_keep_at(c, xv, c->cols[xv] == 1 ? "0" : "sl * H + u0 + u", at, sizeof at);
        snprintf(val, sizeof val, "__ldcg(%s)", at);
    } else {
        snprintf(val, sizeof val, "sm_[SM_V%d + sl * E + b * UT + u]", (int)xv);
    }
    /* a warp per batch row, lanes over the block's elements of that row */
    cu_printf(t,
              "    for (int b = tid >> 5; b < BT; b += NT / 32) {\n"
              "        const int l = tid & 31, gb = b0 + b, nu = min(UT, H - u0), ne = %d * nu;\n"
              "        if (gb >= B) continue;\n"
              "        float s = 0.f, q = 0.f;\n"
              "        for (int i = l; i < ne; i += 32) { const int sl = i / nu, u = i %% nu; s += %s; }\n"
              "        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);\n"
              "        const float m = s / (float)ne;\n"
              "        for (int i = l; i < ne; i += 32) { const int sl = i / nu, u = i %% nu; const float d = %s - m; q += d * d; }\n"
              "        for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);\n"
              "        if (l == 0) {\n"
              "            __stcg(part + %lld + ((size_t)gb * NUB + ub) * 2, m);\n"
              "            __stcg(part + %lld + ((size_t)gb * NUB + ub) * 2 + 1, q);\n        }\n    }\n",
              cu_slices(c, xv), val, val, (long long)c->pt[r], (long long)c->pt[r]);
}


static bool opnd(const cu_ctx *c, int32_t o, int sl, int p, char *buf, size_t n)
{
    if (c->role[o] == CU_STEP_ELEM && c->phase[o] == p) {
        snprintf(buf, n, "v%d_%d", (int)o, c->k[o] < 1 ? 0 : sl);
        return true;
    }
    return cu_elem_expr(c, o, sl, p, buf, n);
}

/* One slice of step value v, given its operands' expressions. */
static rnnc_status slice_expr(const cu_ctx *c, int32_t v, int sl, int p, char *out, size_t n)
{
    const ir_node *nd = &c->f->nodes[v];
    char a[3][1024];
    int32_t o[3];
    int os[3];
    rnnc_status st = cu_slice_operands(c, v, sl, o, os);
    if (st)
        return st;
    for (int k = 0; k < 3; k++)
        if (o[k] >= 0 && !opnd(c, o[k], os[k], p, a[k], sizeof a[k]))
            return RNNC_ERR_UNSUPPORTED;
    const char *uf = cu_unary_fmt(c, nd->op), *bo = cu_binary_op(nd->op);
    if (nd->op == IR_DROPOUT) {
        if (!cu_dropout_step(c, v, sl, a[0], out, n))
            return err_fail(RNNC_ERR_UNSUPPORTED, "fused backend: dropout node %d: expression "
                            "too long", (int)v);
    } else if (uf)
        snprintf(out, n, uf, a[0]);
    else if (bo)
        snprintf(out, n, "(%s) %s (%s)", a[0], bo, a[1]);
    else if (cu_is_view_op(nd->op) || nd->op == IR_CONCAT)
        snprintf(out, n, "%s", o[0] >= 0 ? a[0] : a[1]);
    else if (nd->op == IR_LAYERNORM)
        snprintf(out, n, "((%s) - sm_[SM_S%d + 2 * b]) * sm_[SM_S%d + 2 * b + 1] * (%s) + (%s)",
                 a[0], (int)v, (int)v, o[1] >= 0 ? a[1] : "1.f", o[2] >= 0 ? a[2] : "0.f");
    else
        snprintf(out, n, "sm_[SM_S%d + 2 * b%s]", (int)v, nd->op == IR_SUM ? " + 1" : "");
    return RNNC_OK;
}

static rnnc_status emit_stores(const cu_ctx *c, int p, bool last, cu_text *t)
{
    const ir_fn *f = c->f;
    char v[1024];
    for (int32_t i = 0; i < f->n; i++) {
        if (c->phase[i] != p || !distributed(c, i))
            continue;
        for (int sl = 0; sl < cu_slices(c, i); sl++) {
            if (!opnd(c, i, sl, p, v, sizeof v))
                return RNNC_ERR_UNSUPPORTED;
            char at[192];
            if (c->xg[i] >= 0 && c->xg[i] != c->xb[i]) {
                cu_keep_elem(c, i, sl, at, sizeof at);
                cu_printf(t, "        __stcg(%s, %s);\n", at, v);
            } else if ((c->need[i] & CU_NEED_XP) && c->role[i] == CU_STEP_ELEM && c->xg[i] < 0)
                cu_printf(t, "        sm_[SM_V%d + %d * E + e] = %s;\n", (int)i, sl, v);
            if (c->need[i] & CU_NEED_XB)
                cu_printf(t, "        __stcg(xb + %lld + (size_t)gb * %lld + %lld + gu, %s);\n",
                          (long long)c->xb[i], (long long)c->cols[i], (long long)(sl * c->H), v);
        }
    }
    if (!last)
        return RNNC_OK;
    /* every next value first (a next state may read another state's
     * register), then the stores; a state only its own element reads lives in
     * registers and reaches memory at the last step only */
    char cur[1024];
    for (int s = 0; s < f->n_states; s++) {
        int32_t nx = f->states[s].next, sv = f->states[s].node;
        for (int sl = 0; sl < cu_slices(c, nx); sl++) {
            /* a row past its end keeps its state */
            if (!opnd(c, nx, sl, p, v, sizeof v) ||
                !cu_elem_expr(c, sv, c->k[sv] < 1 ? 0 : sl, p, cur, sizeof cur))
                return RNNC_ERR_UNSUPPORTED;
            cu_printf(t, "        const float n%d_%d = act_ ? (%s) : (%s);", s, sl, v, cur);
            if (sl == 0)
                cu_printf(t, " /* next %s */", f->states[s].name);
            cu_printf(t, "\n");
        }
    }
    for (int s = 0; s < f->n_states; s++) {
        int32_t nx = f->states[s].next, sv = f->states[s].node;
        bool reg = cu_in_regs(c, sv), ll = (c->ll || c->h16) && c->xb[sv] >= 0;
        bool bulk = c->bulk && s == c->bulk_state;
        /* the fp32 copy: for the elements (not in registers) and the linears
         * (unless they read a tagged, 16-bit or chunk-major copy) */
        bool whole = !reg || (!ll && !bulk && (c->need[sv] & CU_NEED_WHOLE));
        for (int sl = 0; sl < cu_slices(c, nx); sl++) {
            long long at = (long long)c->plan->state[s].offset, C = (long long)c->cols[nx],
                      so = (long long)(sl * c->H);
            if (ll)
                cu_emit_ll_put(c, sv, s, sl, t);
            if (bulk)
                cu_emit_bulk_put(c, s, sl, t);
            if (whole)
                cu_printf(t, "        __stcg(nxt + %lld + (size_t)gb * %lld + %lld + gu, n%d_%d);\n",
                          at, C, so, s, sl);
            cu_printf(t, "        if (t == tend_ - 1) __stcg(so%d_ + (size_t)gb * %lld + %lld + gu, n%d_%d);\n",
                      s, C, so, s, sl);
            if (reg && (c->pfuse[sv] & (1u << sl))) {
                char r[64];
                cu_reg_name(c, sv, sl, r, sizeof r);
                cu_printf(t, "        %s = n%d_%d;\n", r, s, sl);
            }
        }
    }
    for (int sl = 0; sl < cu_slices(c, f->output); sl++) {
        if (!opnd(c, f->output, sl, p, v, sizeof v))
            return RNNC_ERR_UNSUPPORTED;
        cu_printf(t, c->half ? "        y[ROW(gb) * YLD + %lld + gu] = rnnc_f2h(act_ ? (%s) : 0.f);\n"
                             : "        y[ROW(gb) * YLD + %lld + gu] = act_ ? (%s) : 0.f;\n",
                  (long long)(sl * c->H), v);
    }
    return RNNC_OK;
}

static rnnc_status emit_elems(const cu_ctx *c, int p, bool last, cu_text *t)
{
    const ir_fn *f = c->f;
    char v[4096];
    cu_emit_elem_loop(c, t);
    cu_printf(t,
              "        const int u = e %% UT, b = e / UT, gu = u0 + u, gb = b0 + b;\n"
              "        if (b >= BT || gu >= H || gb >= B) continue;\n"
              "        const size_t row = ROW(gb);\n"
              "        const bool act_ = t < LEN(gb);\n"
              "        (void)row; (void)u; (void)act_;\n");
    for (int32_t i = 0; i < f->n; i++) {
        if (c->role[i] != CU_STEP_ELEM || c->phase[i] != p)
            continue;
        bool named = false;
        for (int sl = 0; sl < cu_slices(c, i); sl++) {
            if (!cu_slice_live(c, i, sl))
                continue;
            rnnc_status st = slice_expr(c, i, sl, p, v, sizeof v);
            if (st)
                return st;
            char d[256];
            cu_printf(t, "        const float v%d_%d = %s;", (int)i, sl, v);
            if (!named)
                cu_printf(t, " /* %s */", cu_describe(c, i, d, sizeof d));
            named = true;
            cu_printf(t, "\n");
        }
    }
    rnnc_status st = emit_stores(c, p, last, t);
    cu_printf(t, "    }\n");
    return st;
}

static rnnc_status emit_phase(const cu_ctx *c, int p, cu_text *t)
{
    const ir_fn *f = c->f;
    rnnc_status st;
    char d[256];
    bool stats = false;
    /* batch passes: the block's tiles of rows in turn, each phase (its row
     * statistics in SM_S, its values for later phases in SM_V, one copy a
     * pass) */
    if (c->NP > 1)
        cu_printf(t, "    for (int pass_ = 0; pass_ < NP; ++pass_) {\n"
                     "    const int b0 = bb * NP * BT + pass_ * BT; /* this pass's rows */\n");
    for (int32_t r = 0; r < f->n; r++) {
        if (c->role[r] != CU_STEP_ELEM || c->phase[r] != p || !is_reduce(&f->nodes[r]))
            continue;
        stats = true;
        cu_printf(t, "    /* %s: row statistics%s */\n", cu_describe(c, r, d, sizeof d),
                  distributed(c, f->nodes[r].a[0]) ? " from every block's partials" : "");
        if (distributed(c, f->nodes[r].a[0]))
            emit_combine(c, r, t);
        else if ((st = emit_direct_stats(c, r, t)))
            return st;
    }
    if (stats)
        cu_printf(t, "    __syncthreads();\n");
    for (int32_t i = 0; i < f->n; i++) {
        if (c->role[i] != CU_STEP_LINEAR || c->phase[i] != p)
            continue;
        if ((st = emit_linear(c, i, t)))
            return st;
    }
    if ((st = emit_elems(c, p, p == c->s->n_phases - 1, t)))
        return st;
    bool synced = false;
    for (int32_t r = 0; r < f->n; r++) {
        if (c->role[r] != CU_STEP_ELEM || !is_reduce(&f->nodes[r]) || c->pt[r] < 0 ||
            c->phase[f->nodes[r].a[0]] != p)
            continue;
        if (!synced)
            cu_printf(t, "    __syncthreads();\n");
        synced = true;
        cu_printf(t, "    /* %s: this block's partial statistics */\n", cu_describe(c, r, d, sizeof d));
        emit_partials(c, r, t);
    }
    if (c->NP > 1)
        cu_printf(t, "    __syncthreads(); /* the next pass stages over this one's */\n    }\n");
    /* the kernel's end is the last step's barrier; the last phase's barrier
     * hides the loads of step t+1's own values behind the wait */
    bool last = p == c->s->n_phases - 1;
    if (c->ll) {
        /* no barrier: the next step's staging waits for its data's tags */
        cu_printf(t, "    if (t + 1 < tend_) {\n");
        cu_emit_reg_loads(c, t, false);
        cu_printf(t, "    }\n");
        return RNNC_OK;
    }
    cu_printf(t, "    %s{\n", last ? "if (t + 1 < tend_) " : "");
    cu_emit_group_arrive(t, "        ");
    if (last) {
        cu_emit_reg_loads(c, t, false);
        cu_emit_l2_prefetch(c, t);
    }
    cu_emit_group_wait(t, "        ");
    cu_printf(t, "        __syncthreads();\n    }\n");
    return RNNC_OK;
}

/* The batch group's barrier in two halves, so that loads can go between
 * them: the block's arrival once its threads' writes are done, and the
 * wait (the last warp polls: it has no prefetch loads in flight when E <=
 * NT - 32).  indent: the emitted lines' own. */
void cu_emit_group_arrive(cu_text *t, const char *ind)
{
    cu_printf(t, "%s__syncthreads();\n%s++epoch;\n%sif (tid == 0) rnnc_arrive(bar + bb);\n", ind,
              ind, ind);
}

void cu_emit_group_wait(cu_text *t, const char *ind)
{
    cu_printf(t, "%sif (tid >= NT - 32) rnnc_wait(bar + bb, epoch * NUB);\n", ind);
}

static rnnc_status emit_steps(const cu_ctx *c, cu_text *t)
{
    for (int p = 0; p < c->s->n_phases; p++) {
        cu_printf(t, "    /* phase %d */\n", p);
        rnnc_status st = emit_phase(c, p, t);
        if (st)
            return st;
    }
    return RNNC_OK;
}

rnnc_status cu_emit_step(const cu_ctx *c, cu_text *t)
{
    rnnc_status st;
    cu_printf(t, "/* the step kernel: all T steps in one cooperative launch; a block owns UT hidden "
                 "units x BT batch rows; blocks exchange states through %s */\n",
              c->ll ? "tagged words (no barrier)" : "global memory and a barrier per phase");
    emit_prelude(c, t);
    emit_smem_names(c, t);
    if (c->ll)
        cu_emit_ll_prelude(c, t);
    cu_emit_bulk_helpers(c, t);
    cu_emit_wstream_helpers(c, t);
    cu_printf(t,
              "extern \"C\" __global__ void __launch_bounds__(NT, 1) %srnnc_step(%s%s)\n{\n"
              "    extern __shared__ %sfloat4 smem4_[];\n"
              "    float *sm_ = (float *)smem4_;\n"
              "    const int tid = threadIdx.x, ub = blockIdx.x %% NUB, bb = blockIdx.x / NUB;\n"
              "    const int u0 = ub * UT, b0 = bb * %sBT;\n"
              "    const size_t TB = (size_t)T * B;\n"
              "    (void)x; (void)y; (void)hz; (void)fold; (void)wts; (void)xb; (void)part; "
              "(void)TB; (void)ub; (void)len; (void)rev;\n",
              c->ksplit ? "__cluster_dims__(2, 1, 1) " : "", cu_args(c),
              /* streamed weights: the runtime's tensor map over them */
              c->wstream ? ", const __grid_constant__ rnnc_tmap tw_" : "",
              /* wgmma's 128-byte swizzle atoms are 1024-byte aligned */
              c->wgstep ? "__align__(1024) " : "",
              /* a batch group of NP passes starts there (emit_phase) */
              c->NP > 1 ? "NP * " : "");
    cu_emit_ksplit_head(c, t);
    cu_emit_state_io(c, t);
    if (c->half)
        cu_printf(t, "    rnnc_h *const smh_ = (rnnc_h *)smem4_; /* the 16-bit weight slices */\n"
                     "    (void)smh_;\n");
    cu_emit_reg_decls(c, t);
    /* the weights are the model's, written before any forward: in flight
     * while the kernel before this one finishes */
    cu_emit_weights(c, t);
    cu_emit_bulk_init(c, t);
    cu_printf(t, "    rnnc_pdl();\n");
    cu_emit_reg_loads(c, t, true);
    if (c->ll)
        cu_emit_ll_publish(c, t);
    /* the batch group stops at its longest row: rows never exchange data,
     * so a group whose rows have all ended does no more work */
    cu_printf(t,
              "    int tend_ = 0;\n"
              "    for (int b = 0; b < %sBT && b0 + b < B; ++b) tend_ = max(tend_, LEN(b0 + b));\n"
              "%s"
              "    __syncthreads();\n",
              c->NP > 1 ? "NP * " : "",
              c->cfg.sm >= 80 ? "    asm volatile(\"cp.async.wait_all;\" : : : \"memory\"); /* the weights */\n" : "");
    cu_emit_mma_round(c, t);
    if (!c->ll)
        cu_printf(t, "    unsigned epoch = 0;\n");
    cu_emit_bulk_prologue(c, t);
    cu_printf(t, "    for (int t = 0; t < tend_; ++t) {\n"
                 "    const float *const cur = st + (size_t)(t & 1) * STF;\n"
                 "    float *const nxt = st + (size_t)((t + 1) & 1) * STF;\n"
                 "    (void)cur; (void)nxt;\n");
    for (int s = 0; s < c->f->n_states; s++)
        cu_printf(t, "    const float *const s%d_ = t == 0 ? si%d_ : cur + %lld; (void)s%d_;\n", s,
                  s, (long long)c->plan->state[s].offset, s);
    if ((st = emit_steps(c, t)))
        return st;
    cu_printf(t, "    }\n");
    cu_emit_ksplit_end(c, t);
    /* The counters clean up after themselves, so no memset runs before
     * the next launch (one node less in a captured graph): the last block
     * to finish (a count in word gridDim.x) zeroes the groups' counters
     * (words 0 .. NBB - 1) and the count; every other block has passed its
     * last wait by then. */
    if (!c->ll)
        cu_printf(t, "    __syncthreads();\n"
                     "    if (tid == 0) {\n"
                     "        __threadfence();\n"
                     "        if (atomicAdd(bar + gridDim.x, 1u) == gridDim.x - 1) {\n"
                     "            __threadfence();\n"
                     "            for (unsigned i = 0; i < gridDim.x / NUB; ++i) bar[i] = 0u;\n"
                     "            bar[gridDim.x] = 0u;\n"
                     "        }\n"
                     "    }\n");
    cu_printf(t, "}\n");
    return RNNC_OK;
}
