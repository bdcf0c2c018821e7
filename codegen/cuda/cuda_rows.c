/*
 * cuda_rows.c: the row kernels.  Hoisted values that no GEMM epilogue can
 * make (a layernorm over the gates, sums and means over a row, chunks of
 * mixed values) are made by one block per row of T*B after the GEMMs of
 * their round (cuda_rounds.c), each value in a slot of shared memory, node
 * by node with a block barrier between; chunks and concats are read
 * through, not copied.  Values of earlier rounds are read from hz.
 * Requires: the rounds placed (c->round, c->gemm, c->role); keeps: every
 * hoisted buffer in hz at its offset, as the step and later rounds read it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "codegen/cuda/cuda_gen.h"

/* Value of hoisted node v at column `col` inside the row kernel of round r. */
static bool row_expr(const cu_ctx *c, int r, int32_t v, const char *col, char *buf, size_t n);

/* A chunk, slice or concat the row kernel only reads through: its consumers read
 * its operands at the shifted column instead of a copy in shared memory
 * (no pass, no barrier, no slot). */
static bool row_inline(const cu_ctx *c, int32_t v)
{
    int op = c->f->nodes[v].op;
    return c->role[v] == CU_HOIST_TMP && (cu_is_view_op(op) || op == IR_CONCAT);
}

/* A chunk, slice or concat at column `col`, read through to its operands. */
static bool row_view(const cu_ctx *c, int r, int32_t v, const char *col, char *buf, size_t n)
{
    const ir_node *nd = &c->f->nodes[v];
    long long cols = (long long)c->cols[v];
    char inner[512], a[2048], b[2048];
    if (cols == 1)
        col = "0";
    if (cu_is_view_op(nd->op)) {
        snprintf(inner, sizeof inner, "(%s) + %lld", col, (long long)cu_view_col(c, v));
        return row_expr(c, r, nd->a[0], inner, buf, n);
    }
    long long ca = (long long)c->cols[nd->a[0]];
    snprintf(inner, sizeof inner, "(%s) - %lld", col, ca);
    if (!row_expr(c, r, nd->a[0], col, a, sizeof a) || !row_expr(c, r, nd->a[1], inner, b, sizeof b))
        return false;
    snprintf(buf, n, "((%s) < %lld ? %s : %s)", col, ca, a, b);
    return true;
}

static bool row_expr(const cu_ctx *c, int r, int32_t v, const char *col, char *buf, size_t n)
{
    const ir_node *nd = &c->f->nodes[v];
    long long cols = (long long)c->cols[v];
    if (cols == 1)
        col = "0";
    switch (c->role[v]) {
    case CU_LEAF_CONST:
        return cu_float_lit(nd->f, buf, n) != NULL;
    case CU_LEAF_FOLD:
        snprintf(buf, n, "fold[%lld + (%s)]", (long long)c->off[v], col);
        return true;
    case CU_LEAF_INPUT:
        snprintf(buf, n, c->half ? "rnnc_h2f(__ldg(x + row * %lld + (%s)))"
                                 : "__ldg(x + row * %lld + (%s))", cols, col);
        return true;
    case CU_HOIST_BUF:
        if (c->gemm[v] >= 0 || c->round[v] < r) {
            snprintf(buf, n, "hz[(size_t)%lld * TB + row * %lld + (%s)]", (long long)c->off[v],
                     cols, col);
            return true;
        }
        /* computed here, kept in shared memory */
        __attribute__((fallthrough));
    case CU_HOIST_TMP:
        if (row_inline(c, v))
            return row_view(c, r, v, col, buf, n);
        if (c->sm[v] < 0)
            return cu_hoist_fail(c, v, "hoisted value read before it is made");
        snprintf(buf, n, "sm_[SM_R%d + (%s)]", (int)v, col);
        return true;
    case CU_HOIST_VIEW:
        return row_view(c, r, v, col, buf, n);
    default:
        return cu_hoist_fail(c, v, "no hoisted value for this node");
    }
}

static bool row_node(const cu_ctx *c, int r, int32_t v, cu_text *t)
{
    const ir_node *nd = &c->f->nodes[v];
    long long cols = (long long)c->cols[v];
    char a[2048], b[2048], g[2048], be[2048], e[8192];
    const char *uf = cu_unary_fmt(c, nd->op), *bo = cu_binary_op(nd->op);
    cu_printf(t, "    /* %s */\n", cu_describe(c, v, e, sizeof e));
    if (ir_ops[nd->op].flags & IR_F_REDUCE) {
        char dst[32];
        snprintf(g, sizeof g, "1.f");
        snprintf(be, sizeof be, "0.f");
        snprintf(dst, sizeof dst, "SM_R%d", (int)v);
        if (!row_expr(c, r, nd->a[0], "cx", a, sizeof a) ||
            (nd->a[1] >= 0 && !row_expr(c, r, nd->a[1], "cx", g, sizeof g)) ||
            (nd->a[2] >= 0 && !row_expr(c, r, nd->a[2], "cx", be, sizeof be)))
            return false;
        cu_emit_row_reduce(t, nd, (long long)c->cols[nd->a[0]], cols, a, g, be, dst);
    } else {
        if (nd->op == IR_DROPOUT) {
            if (!row_expr(c, r, nd->a[0], "cx", a, sizeof a) ||
                !cu_dropout_row(c, v, a, "row", "cx", e, sizeof e))
                return cu_hoist_fail(c, v, "no hoisted code for this dropout");
        } else if (uf && row_expr(c, r, nd->a[0], "cx", a, sizeof a))
            snprintf(e, sizeof e, uf, a);
        else if (bo && row_expr(c, r, nd->a[0], "cx", a, sizeof a) &&
                 row_expr(c, r, nd->a[1], "cx", b, sizeof b))
            snprintf(e, sizeof e, "(%s) %s (%s)", a, bo, b);
        else if (cu_is_view_op(nd->op) || nd->op == IR_CONCAT) {
            if (!row_view(c, r, v, "cx", e, sizeof e))
                return false;
        } else
            return cu_hoist_fail(c, v, "no hoisted code for this op");
        cu_printf(t, "    for (int cx = tid; cx < %lld; cx += 256) sm_[SM_R%d + cx] = %s;\n", cols, (int)v, e);
    }
    cu_printf(t, "    __syncthreads();\n");
    if (c->role[v] == CU_HOIST_BUF)
        cu_printf(t, "    for (int cx = tid; cx < %lld; cx += 256) hz[(size_t)%lld * TB + row * %lld + cx] = sm_[SM_R%d + cx];\n",
                  cols, (long long)c->off[v], cols, (int)v);
    return true;
}

void cu_emit_row_reduce(cu_text *t, const ir_node *nd, long long K, long long cols,
                        const char *a, const char *g, const char *b, const char *dst)
{
    char e[64];
    bool ln = nd->op == IR_LAYERNORM;
    cu_printf(t, "    {\n        float s_ = 0.f%s;\n"
                 "        for (int cx = tid; cx < %lld; cx += 256) s_ += %s;\n"
                 "        s_ = rnnc_block_sum(s_, red_);\n",
              ln ? ", q_ = 0.f" : "", K, a);
    if (!ln) {
        if (nd->op == IR_MEAN)
            snprintf(e, sizeof e, " / %lld.f", K);
        cu_printf(t, "        if (tid == 0) sm_[%s] = s_%s;\n    }\n", dst, nd->op == IR_MEAN ? e : "");
        return;
    }
    cu_printf(t,
              "        const float m_ = s_ / %lld.f;\n"
              "        for (int cx = tid; cx < %lld; cx += 256) { const float d_ = %s - m_; q_ += d_ * d_; }\n"
              "        q_ = rnnc_block_sum(q_, red_);\n"
              "        const float r_ = rsqrtf(q_ / %lld.f + %s);\n"
              "        for (int cx = tid; cx < %lld; cx += 256) sm_[%s + cx] = (%s - m_) * r_ * (%s) + (%s);\n    }\n",
              K, K, a, K, cu_float_lit(nd->f, e, sizeof e), cols, dst, a, g, b);
}

/* Whether the row kernel of round r makes v in shared memory. */
static bool row_made(const cu_ctx *c, int r, int32_t v)
{
    bool here = c->role[v] == CU_HOIST_TMP || (c->role[v] == CU_HOIST_BUF && c->gemm[v] < 0);
    return here && c->round[v] == r && c->f->nodes[v].op != IR_LINEAR && !row_inline(c, v);
}

/* Whether a value of round r's row kernel reduces over its row (needs red_). */
static bool reduces(const cu_ctx *c, int r)
{
    for (int32_t v = 0; v < c->f->n; v++) {
        int op = c->f->nodes[v].op;
        if (row_made(c, r, v) && (op == IR_LAYERNORM || op == IR_SUM || op == IR_MEAN))
            return true;
    }
    return false;
}

/* last[o] = u for the values of round r that u reads, through the chunks
 * and concats it reads through. */
static void mark_row_reads(const cu_ctx *c, int r, int32_t v, int32_t u, int32_t *last)
{
    for (int k = 0; k < 3; k++) {
        int32_t o = c->f->nodes[v].a[k];
        if (o < 0)
            continue;
        if (row_made(c, r, o))
            last[o] = u > last[o] ? u : last[o];
        else if (row_inline(c, o) || c->role[o] == CU_HOIST_VIEW)
            mark_row_reads(c, r, o, u, last);
    }
}

/* A slot of n floats: the first free one that holds it, else a new one at
 * the end.  A slot is free once the value in it is dead. */
static int64_t take_slot(int64_t *off, int64_t *len, bool *used, int *n_slots, int64_t *top,
                         int64_t need)
{
    for (int i = 0; i < *n_slots; i++)
        if (!used[i] && len[i] >= need) {
            used[i] = true;
            return off[i];
        }
    off[*n_slots] = *top, len[*n_slots] = need, used[*n_slots] = true;
    (*n_slots)++;
    *top += need;
    return off[*n_slots - 1];
}

/* The shared slots of round r's row values, in floats.  Values are made in
 * node order with a block barrier after each, so a value's slot is reused
 * once the last node that reads it is made (the row kernel of a backward
 * cell holds dozens of 4H-wide values, and the smaller its shared memory,
 * the more rows an SM runs at once). */
static int64_t place_slots(cu_ctx *c, int r, int32_t *last, int64_t *off, int64_t *len,
                           bool *used, int32_t *slot_of)
{
    int32_t n = c->f->n;
    int64_t at = 0;
    int n_slots = 0;
    for (int32_t v = 0; v < n; v++)
        last[v] = v;
    for (int32_t v = 0; v < n; v++)
        if (row_made(c, r, v))
            mark_row_reads(c, r, v, v, last);
    for (int32_t v = 0; v < n; v++) {
        if (!row_made(c, r, v))
            continue;
        for (int32_t d = 0; d < v; d++) /* free the slots of values read for the last time */
            if (row_made(c, r, d) && last[d] < v && last[d] >= 0) {
                used[slot_of[d]] = false;
                last[d] = -1;
            }
        c->sm[v] = take_slot(off, len, used, &n_slots, &at, (c->cols[v] + 3) / 4 * 4);
        for (int i = 0; i < n_slots; i++)
            if (off[i] == c->sm[v])
                slot_of[v] = i;
    }
    return at;
}

/* The launch of round r's row kernel, when it makes anything.  A cell of one
 * round keeps the name rnnc_rows. */
rnnc_status cu_place_rows(cu_ctx *c, int r)
{
    int32_t n = c->f->n, *last = malloc(sizeof(int32_t) * (size_t)(n + 1)), *slot_of = NULL;
    int64_t *off = malloc(sizeof(int64_t) * (size_t)(n + 1)), *len = NULL;
    bool *used = calloc((size_t)n + 1, sizeof(bool));
    if (!last || !off || !used || !(len = malloc(sizeof(int64_t) * (size_t)(n + 1))) ||
        !(slot_of = malloc(sizeof(int32_t) * (size_t)(n + 1)))) {
        free(last), free(off), free(len), free(used), free(slot_of);
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused backend: out of memory");
    }
    int64_t at = place_slots(c, r, last, off, len, used, slot_of);
    free(last), free(off), free(len), free(used), free(slot_of);
    if (!at)
        return RNNC_OK;
    if (at > c->rows_floats)
        c->rows_floats = at;
    cu_tile row = {.lin = -1, .row_round = r};
    cg_cuda_launch *l = cu_new_launch(c, &row);
    if (!l)
        return RNNC_ERR_INTERNAL;
    if (c->n_rounds > 1)
        snprintf(l->name, sizeof l->name, "rnnc_rows_r%d", r);
    else
        snprintf(l->name, sizeof l->name, "rnnc_rows");
    l->rows_per_block = 1;
    l->grid_y = 1;
    l->threads = 256;
    l->smem = (unsigned)(at * 4);
    return RNNC_OK;
}

const char cu_block_sum_src[] =
    "__device__ float rnnc_block_sum(float v, float *red)\n{\n"
    "    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
    "    __syncthreads();\n"
    "    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;\n"
    "    __syncthreads();\n"
    "    float s = 0.f;\n"
    "    for (int w = 0; w < 8; ++w) s += red[w];\n"
    "    return s;\n}\n";

/* What every row kernel shares: the slots' names and the block sum. */
static void emit_rows_head(const cu_ctx *c, cu_text *t)
{
    char d[256];
    cu_printf(t, "/* row kernel: one block per row of T*B; its values in shared memory (floats) */\n");
    for (int32_t v = 0; v < c->f->n; v++)
        if (c->sm[v] >= 0 && (c->role[v] == CU_HOIST_TMP || c->role[v] == CU_HOIST_BUF))
            cu_printf(t, "#define SM_R%d %lld /* %s */\n", (int)v, (long long)c->sm[v],
                      cu_describe(c, v, d, sizeof d));
    cu_printf(t, "%s", cu_block_sum_src);
}

/* Launch i's row kernel (c->tile[i].row_round); the shared head before the first. */
bool cu_emit_rows(const cu_ctx *c, int i, cu_text *t)
{
    int r = c->tile[i].row_round;
    if (c->rows_floats * 4 > 200 * 1024)
        return cu_hoist_fail(c, c->f->output, "hoisted values too wide for one row in shared memory");
    bool first = true;
    for (int j = 0; j < i; j++)
        first &= c->tile[j].row_round == 0;
    if (first)
        emit_rows_head(c, t);
    if (c->n_rounds > 1)
        cu_printf(t, "/* round %d: after the GEMMs of this round, before those of the next */\n", r);
    cu_printf(t,
              "extern \"C\" __global__ void __launch_bounds__(256) %s(%s)\n{\n"
              "    extern __shared__ float4 smem4_[];\n"
              "    float *sm_ = (float *)smem4_;\n"
              "%s"
              "    rnnc_pdl();\n"
              "    const int tid = threadIdx.x;\n"
              "    const size_t row = blockIdx.x, TB = (size_t)T * %lld;\n"
              "    (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)wts; (void)TB;\n",
              c->plan->launch[i].name, cu_args(c), reduces(c, r) ? "    __shared__ float red_[8];\n" : "",
              (long long)c->B);
    for (int32_t v = 0; v < c->f->n; v++)
        if (row_made(c, r, v) && !row_node(c, r, v, t))
            return false;
    cu_printf(t, "}\n");
    return true;
}
