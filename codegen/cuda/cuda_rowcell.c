/*
 * cuda_rowcell.c: a stateless cell over rows as one kernel, for the fused
 * backward's row cell (runtime/fused_grad/fused_grad_rows.c): the
 * gradient of row work between x and the first GEMM (a pre-LN layernorm)
 * once the post GEMMs have made D = linear_t(gates', W_ih) for every row.
 * One block of 256 threads a row of T*B, as the hoisted row kernels
 * (cuda_rows.c): each value in a slot of shared memory, node by node with
 * a block barrier between, chunks, slices, concats and expands read
 * through; a slot is reused once its value is dead (a layernorm's backward
 * holds a dozen I-wide values, and the less shared memory a block takes
 * the more rows an SM runs at once).
 * Requires: at most two inputs (the kernel's in0, in1, each [rows, its
 * width]), vector parameters, no state read, no linear, no dropout.
 * Keeps: nothing; the outputs land at their columns of `out`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cuda_gen.h"

typedef struct rc_ctx {
    const cg_cuda_rowcell *rc;
    const ir_fn *f;
    int64_t *cols;  /* [n] */
    int64_t *slot;  /* [n] float offset in shared memory, -1: not made in a slot */
    int32_t *last;  /* [n] the last node (or f->n: an output) reading it */
    uint8_t *need;  /* [n] */
} rc_ctx;

static rnnc_status rc_fail(const rc_ctx *c, int32_t v, const char *why)
{
    return err_fail(RNNC_ERR_UNSUPPORTED, "row cell of '%s': %s (node %d, %s)", c->f->name, why,
                    (int)v, ir_ops[c->f->nodes[v].op].name);
}

/* Values read through rather than made: leaves and views. */
static bool read_through(int op)
{
    return op == IR_INPUT || op == IR_PARAM || op == IR_CONST || cu_is_view_op(op) ||
           op == IR_CONCAT || op == IR_EXPAND;
}

static bool made(const rc_ctx *c, int32_t v)
{
    return c->need[v] && !read_through(c->f->nodes[v].op);
}

static bool expr(const rc_ctx *c, int32_t v, const char *col, char *buf, size_t n);

/* A view, concat or expand at column `col`, read through to its operands. */
static bool view_expr(const rc_ctx *c, int32_t v, const char *col, char *buf, size_t n)
{
    const ir_node *nd = &c->f->nodes[v];
    char inner[512], a[2048], b[2048];
    if (nd->op == IR_EXPAND)
        return expr(c, nd->a[0], "0", buf, n);
    if (cu_is_view_op(nd->op)) {
        snprintf(inner, sizeof inner, "(%s) + %lld", col,
                 (long long)cu_view_at(nd, c->cols[v], c->rc->sizes));
        return expr(c, nd->a[0], inner, buf, n);
    }
    long long ca = (long long)c->cols[nd->a[0]];
    snprintf(inner, sizeof inner, "(%s) - %lld", col, ca);
    if (!expr(c, nd->a[0], col, a, sizeof a) || !expr(c, nd->a[1], inner, b, sizeof b))
        return false;
    snprintf(buf, n, "((%s) < %lld ? %s : %s)", col, ca, a, b);
    return true;
}

/* Value of v at column `col` (a one-feature value at column 0, whatever
 * the column: broadcast). */
static bool expr(const rc_ctx *c, int32_t v, const char *col, char *buf, size_t n)
{
    const ir_node *nd = &c->f->nodes[v];
    if (c->cols[v] == 1)
        col = "0";
    switch (nd->op) {
    case IR_INPUT:
        snprintf(buf, n, "in%d[row * %lldll + (%s)]", (int)nd->i0, (long long)c->cols[v], col);
        return nd->i0 < 2;
    case IR_PARAM: {
        int p = ir_param_of(c->f, v);
        if (p < 0 || c->rc->param_off[p] < 0)
            return false;
        snprintf(buf, n, "w[%lld + (%s)]", (long long)c->rc->param_off[p], col);
        return true;
    }
    case IR_CONST: return cu_float_lit(nd->f, buf, n) != NULL;
    default: break;
    }
    if (read_through(nd->op))
        return view_expr(c, v, col, buf, n);
    if (c->slot[v] < 0)
        return false;
    snprintf(buf, n, "sm_[%lld + (%s)]", (long long)c->slot[v], col);
    return true;
}

/* last[o] = u for what u reads, through what it reads through. */
static void mark_reads(rc_ctx *c, int32_t v, int32_t u)
{
    for (int k = 0; k < 3; k++) {
        int32_t o = c->f->nodes[v].a[k];
        if (o < 0)
            continue;
        if (made(c, o))
            c->last[o] = u > c->last[o] ? u : c->last[o];
        else
            mark_reads(c, o, u);
    }
}

/* Slots of the made values in node order, each freed after its last
 * reader; returns the floats of shared memory. */
static int64_t place_slots(rc_ctx *c)
{
    int32_t n = c->f->n;
    int64_t top = 0, *off = calloc((size_t)n + 1, sizeof *off), *len = calloc((size_t)n + 1, sizeof *len);
    int32_t *owner = malloc(sizeof(int32_t) * ((size_t)n + 1));
    int n_slots = 0;
    if (!off || !len || !owner) {
        free(off), free(len), free(owner);
        return -1;
    }
    for (int32_t v = 0; v < n; v++)
        if (made(c, v))
            mark_reads(c, v, v);
    for (int i = 0; i < c->rc->n_out; i++) {
        int32_t o = c->rc->out[i];
        if (made(c, o))
            c->last[o] = n;
        else
            mark_reads(c, o, n);
    }
    for (int32_t v = 0; v < n; v++) {
        if (!made(c, v))
            continue;
        int64_t need = (c->cols[v] + 3) / 4 * 4;
        int s = -1;
        for (int i = 0; i < n_slots && s < 0; i++) /* a slot whose value is dead */
            if ((owner[i] < 0 || c->last[owner[i]] < v) && len[i] >= need)
                s = i;
        if (s < 0) {
            s = n_slots++;
            off[s] = top, len[s] = need;
            top += need;
        }
        owner[s] = v;
        c->slot[v] = off[s];
    }
    free(off), free(len), free(owner);
    return top;
}

/* A reduction over the row: mean, sum or layernorm (as the hoisted row
 * kernels make them). */
static bool emit_reduce(const rc_ctx *c, int32_t v, cu_text *t)
{
    const ir_node *nd = &c->f->nodes[v];
    char a[2048], g[2048] = "1.f", b[2048] = "0.f", dst[32];
    if (!expr(c, nd->a[0], "cx", a, sizeof a) ||
        (nd->a[1] >= 0 && !expr(c, nd->a[1], "cx", g, sizeof g)) ||
        (nd->a[2] >= 0 && !expr(c, nd->a[2], "cx", b, sizeof b)))
        return false;
    snprintf(dst, sizeof dst, "%lld", (long long)c->slot[v]);
    cu_emit_row_reduce(t, nd, (long long)c->cols[nd->a[0]], (long long)c->cols[v], a, g, b, dst);
    return true;
}

static rnnc_status emit_node(const rc_ctx *c, int32_t v, cu_text *t)
{
    static const cu_ctx plain; /* FFMA, fp32: the accurate sigmoid */
    const ir_node *nd = &c->f->nodes[v];
    const char *uf = cu_unary_fmt(&plain, nd->op), *bo = cu_binary_op(nd->op);
    char a[2048], b[2048], e[8192];
    if (nd->op == IR_LINEAR || nd->op == IR_STATE || nd->op == IR_DROPOUT)
        return rc_fail(c, v, "a row cell runs no linear, state or dropout");
    if (ir_ops[nd->op].flags & IR_F_REDUCE) {
        if (!emit_reduce(c, v, t))
            return rc_fail(c, v, "an operand the row cell cannot read");
    } else {
        if (uf && expr(c, nd->a[0], "cx", a, sizeof a))
            snprintf(e, sizeof e, uf, a);
        else if (bo && expr(c, nd->a[0], "cx", a, sizeof a) && expr(c, nd->a[1], "cx", b, sizeof b))
            snprintf(e, sizeof e, "(%s) %s (%s)", a, bo, b);
        else
            return rc_fail(c, v, "no row code for this op");
        cu_printf(t, "    for (int cx = tid; cx < %lld; cx += 256) sm_[%lld + cx] = %s;\n",
                  (long long)c->cols[v], (long long)c->slot[v], e);
    }
    cu_printf(t, "    __syncthreads();\n");
    return RNNC_OK;
}

static rnnc_status emit(rc_ctx *c, cu_text *t)
{
    const cg_cuda_rowcell *rc = c->rc;
    char e[8192];
    cu_printf(t, "/* rnnc row cell '%s': one block per row, its values in shared memory */\n"
                 "%s"
                 "extern \"C\" __global__ void __launch_bounds__(256) rnnc_row_cell(\n"
                 "    const float *__restrict__ in0, const float *__restrict__ in1,\n"
                 "    const float *__restrict__ w, float *__restrict__ out, long long rows)\n{\n"
                 "    extern __shared__ float4 smem4_[];\n"
                 "    float *sm_ = (float *)smem4_;\n"
                 "    __shared__ float red_[8];\n"
                 "    const int tid = threadIdx.x;\n"
                 "    const long long row = blockIdx.x;\n"
                 "    (void)in0; (void)in1; (void)w; (void)sm_; (void)red_;\n"
                 "    if (row >= rows) return;\n",
              c->f->name, cu_block_sum_src);
    for (int32_t v = 0; v < c->f->n; v++) {
        rnnc_status st = made(c, v) ? emit_node(c, v, t) : RNNC_OK;
        if (st != RNNC_OK)
            return st;
    }
    for (int i = 0; i < rc->n_out; i++) {
        int32_t o = rc->out[i];
        if (!expr(c, o, "cx", e, sizeof e))
            return rc_fail(c, o, "an output the row cell cannot read");
        cu_printf(t, "    for (int cx = tid; cx < %lld; cx += 256) out[row * %lldll + %lld + cx] = %s;\n",
                  (long long)c->cols[o], (long long)rc->out_ld, (long long)rc->out_col[i], e);
    }
    cu_printf(t, "}\n");
    return t->oom ? err_fail(RNNC_ERR_OUT_OF_MEMORY, "row cell: out of memory") : RNNC_OK;
}

/* need[] from the outputs back through every operand. */
static void mark_need(rc_ctx *c)
{
    for (int i = 0; i < c->rc->n_out; i++)
        c->need[c->rc->out[i]] = 1;
    for (int32_t v = c->f->n - 1; v >= 0; v--)
        for (int k = 0; c->need[v] && k < 3; k++)
            if (c->f->nodes[v].a[k] >= 0)
                c->need[c->f->nodes[v].a[k]] = 1;
}

rnnc_status cg_cuda_rowcell_source(const cg_cuda_rowcell *rc, char **src, unsigned *smem)
{
    const ir_fn *f = rc->f;
    size_t n = (size_t)f->n + 1;
    rc_ctx c = {rc, f, calloc(n, sizeof(int64_t)), malloc(n * sizeof(int64_t)),
                malloc(n * sizeof(int32_t)), calloc(n, 1)};
    cu_text t = {0};
    rnnc_status st = RNNC_OK;
    *src = NULL;
    if (!c.cols || !c.slot || !c.last || !c.need) {
        st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "row cell: out of memory");
        goto free_ctx;
    }
    for (int32_t v = 0; v < f->n; v++) {
        c.cols[v] = ir_dim_eval(f->nodes[v].cols, rc->sizes);
        c.slot[v] = -1;
        c.last[v] = -1;
    }
    mark_need(&c);
    int64_t floats = place_slots(&c);
    if (floats < 0) {
        st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "row cell: out of memory");
        goto free_ctx;
    }
    if (floats * 4 > 200 * 1024) {
        st = err_fail(RNNC_ERR_UNSUPPORTED, "row cell of '%s': its values need %lld KiB of "
                      "shared memory a row (200 at most)", f->name, (long long)(floats / 256));
        goto free_ctx;
    }
    if ((st = emit(&c, &t)) != RNNC_OK)
        goto free_text;
    cu_reindent(&t);
    *src = t.p;
    *smem = (unsigned)(floats * 4);
    t.p = NULL;
free_text:
    free(t.p);
free_ctx:
    free(c.need), free(c.last), free(c.slot), free(c.cols);
    return st;
}
