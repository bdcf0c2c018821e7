/*
 * cuda_expr.c: C expressions for a node's value inside the generated step
 * kernel: per element (hidden unit gu of slice s, batch row gb) for the
 * cell's pointwise work, or per (row, column) for staging a linear's x.
 * Chunks, slices and concats of placed values are read through, never copied.
 * cu_slice_operands is the one walk of what a slice of a step element
 * reads, shared by the step's emitter and the register analysis.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

static bool expr_fail(const cu_ctx *c, int32_t v, const char *where)
{
    const ir_node *n = &c->f->nodes[v];
    err_fail(RNNC_ERR_UNSUPPORTED, "fused backend: node %d (op %s) of cell '%s' cannot be read %s",
             v, ir_ops[n->op].name, c->f->name, where);
    return false;
}

/* Column of slice sl at this element: one value per row when 1 wide. */
static void elem_col(const cu_ctx *c, int32_t v, int sl, char *buf, size_t n)
{
    if (c->cols[v] == 1)
        snprintf(buf, n, "0");
    else
        snprintf(buf, n, "%lld + gu", (long long)(sl * c->H));
}

/* Row r (an expression) of step linear v's result, batch row b, where the
 * element phase reads it: the linear's rows of BTP + 1 floats, a K
 * split's own and partner's partial sums (cuda_ksplit.c), or the streamed
 * step's rows in the same layout (cuda_wstream.c). */
void cu_lin_result(const cu_ctx *c, int32_t v, const char *r, char *buf, size_t n)
{
    if (c->ksplit)
        cu_ksplit_result(c, v, r, buf, n);
    else if (c->wstream)
        cu_wstream_result(c, v, r, buf, n);
    else
        snprintf(buf, n, "sm_[SM_L%d + (%s) * (BTP + 1) + b]", (int)v, r);
}

/* Where column col (an expression) of batch row gb of kept value v lives
 * in global memory (c->gkeep, cu_place_keeps). */
void cu_keep_at(const cu_ctx *c, int32_t v, const char *col, char *buf, size_t n)
{
    snprintf(buf, n, "xb + %lld + (size_t)gb * %lld + %s", (long long)c->xg[v],
             (long long)c->cols[v], col);
}

/* Where slice sl of kept value v lives at this element (gb, gu). */
void cu_keep_elem(const cu_ctx *c, int32_t v, int sl, char *buf, size_t n)
{
    char col[64];
    elem_col(c, v, sl, col, sizeof col);
    cu_keep_at(c, v, col, buf, n);
}

static void keep_load(const cu_ctx *c, int32_t v, int sl, char *buf, size_t n)
{
    char at[192];
    cu_keep_elem(c, v, sl, at, sizeof at);
    snprintf(buf, n, "__ldcg(%s)", at);
}

/* State leaf v is read through s<k>_: its copy of this step (cuda_step.c). */
static int state_k(const cu_ctx *c, int32_t v)
{
    return ir_state_of(c->f, v);
}

bool cu_leaf_addr(const cu_ctx *c, int32_t v, int sl, char *buf, size_t n)
{
    char col[64];
    if (c->k[v] < 1)
        sl = 0;
    elem_col(c, v, sl, col, sizeof col);
    long long cols = (long long)c->cols[v];
    switch (c->role[v]) {
    case CU_LEAF_INPUT:
        snprintf(buf, n, "x + row * %lld + %s", cols, col);
        return true;
    case CU_HOIST_BUF:
        snprintf(buf, n, "hz + (size_t)%lld * TB + row * %lld + %s", (long long)c->off[v], cols,
                 col);
        return true;
    default:
        return false;
    }
}

bool cu_leaf_load(const cu_ctx *c, int32_t v, int sl, char *buf, size_t n)
{
    char col[64], at[192];
    if (c->k[v] < 1)
        sl = 0;
    elem_col(c, v, sl, col, sizeof col);
    long long cols = (long long)c->cols[v];
    switch (c->role[v]) {
    case CU_LEAF_FOLD:
        snprintf(buf, n, "fold[%lld + %s]", (long long)c->off[v], col);
        return true;
    case CU_LEAF_INPUT:
    case CU_HOIST_BUF:
        cu_leaf_addr(c, v, sl, at, sizeof at);
        snprintf(buf, n, c->half && c->role[v] == CU_LEAF_INPUT ? "rnnc_h2f(__ldg(%s))" : "__ldg(%s)",
                 at);
        return true;
    case CU_LEAF_STATE:
        snprintf(buf, n, "__ldcg(s%d_ + gb * %lld + %s)", state_k(c, v), cols, col);
        return true;
    default:
        return false;
    }
}

bool cu_is_view_op(int op)
{
    return op == IR_CHUNK || op == IR_SLICE;
}

int64_t cu_view_at(const ir_node *nd, int64_t cols, ir_sizes s)
{
    return nd->op == IR_CHUNK ? nd->i1 * cols : ir_dim_eval(nd->rows, s);
}

int64_t cu_view_col(const cu_ctx *c, int32_t v)
{
    return cu_view_at(&c->f->nodes[v], c->cols[v], c->cfg.sizes);
}

void cu_view_slice(const cu_ctx *c, int32_t v, int sl, int32_t *o, int *osl)
{
    const ir_node *nd = &c->f->nodes[v];
    int32_t ka = c->k[nd->a[0]];
    if (cu_is_view_op(nd->op))
        *o = nd->a[0], *osl = (int)(cu_view_col(c, v) / c->H) + sl;
    else if (sl < ka)
        *o = nd->a[0], *osl = sl;
    else
        *o = nd->a[1], *osl = sl - ka;
}

bool cu_elem_expr(const cu_ctx *c, int32_t v, int sl, int cur_phase, char *buf, size_t n)
{
    const ir_node *nd = &c->f->nodes[v];
    if (c->k[v] < 1)
        sl = 0;
    switch (c->role[v]) {
    case CU_LEAF_CONST:
        cu_float_lit(nd->f, buf, n);
        return true;
    case CU_LEAF_FOLD:
    case CU_LEAF_INPUT:
    case CU_LEAF_STATE:
    case CU_HOIST_BUF:
        if (!cu_in_regs(c, v))
            return cu_leaf_load(c, v, sl, buf, n);
        cu_reg_name(c, v, sl, buf, n);
        return true;
    case CU_HOIST_VIEW: {
        int32_t o;
        int os;
        cu_view_slice(c, v, sl, &o, &os);
        return cu_elem_expr(c, o, os, cur_phase, buf, n);
    }
    case CU_STEP_LINEAR: {
        char r[32];
        snprintf(r, sizeof r, "%d * UT + u", sl);
        if (c->xg[v] >= 0 && cur_phase > c->phase[v])
            keep_load(c, v, sl, buf, n);
        else
            cu_lin_result(c, v, r, buf, n);
        return true;
    }
    case CU_STEP_ELEM:
        if (c->phase[v] == cur_phase)
            snprintf(buf, n, "v%d_%d", (int)v, sl);
        else if (c->xg[v] >= 0)
            keep_load(c, v, sl, buf, n);
        else if (c->xp[v] >= 0)
            snprintf(buf, n, "sm_[SM_V%d + %d * E + e]", (int)v, sl);
        else
            return expr_fail(c, v, "in a later phase");
        return true;
    default:
        return expr_fail(c, v, "per element in the step");
    }
}

bool cu_gather_expr(const cu_ctx *c, int32_t v, const char *col, char *buf, size_t n)
{
    const ir_node *nd = &c->f->nodes[v];
    long long cols = (long long)c->cols[v];
    char inner[1024], a[2048], b[2048];
    switch (c->role[v]) {
    case CU_LEAF_STATE:
        snprintf(buf, n, "__ldcg(s%d_ + gb * %lld + (%s))", state_k(c, v), cols, col);
        return true;
    case CU_LEAF_INPUT:
        snprintf(buf, n, c->half ? "rnnc_h2f(__ldg(x + row * %lld + (%s)))"
                                 : "__ldg(x + row * %lld + (%s))", cols, col);
        return true;
    case CU_LEAF_FOLD:
        snprintf(buf, n, "fold[%lld + (%s)]", (long long)c->off[v], col);
        return true;
    case CU_HOIST_BUF:
        snprintf(buf, n, "__ldg(hz + (size_t)%lld * TB + row * %lld + (%s))",
                 (long long)c->off[v], cols, col);
        return true;
    case CU_STEP_ELEM:
    case CU_STEP_LINEAR:
        if (c->xb[v] < 0)
            return expr_fail(c, v, "as a whole vector");
        snprintf(buf, n, "__ldcg(xb + %lld + gb * %lld + (%s))", (long long)c->xb[v], cols, col);
        return true;
    case CU_HOIST_VIEW:
    case CU_STEP_GATHER:
        if (cu_is_view_op(nd->op)) {
            snprintf(inner, sizeof inner, "(%s) + %lld", col, (long long)cu_view_col(c, v));
            return cu_gather_expr(c, nd->a[0], inner, buf, n);
        }
        if (nd->op == IR_CONCAT) {
            long long ca = (long long)c->cols[nd->a[0]];
            snprintf(inner, sizeof inner, "(%s) - %lld", col, ca);
            if (!cu_gather_expr(c, nd->a[0], col, a, sizeof a) ||
                !cu_gather_expr(c, nd->a[1], inner, b, sizeof b))
                return false;
            snprintf(buf, n, "((%s) < %lld ? %s : %s)", col, ca, a, b);
            return true;
        }
        return expr_fail(c, v, "as a whole vector");
    default:
        return expr_fail(c, v, "as a whole vector in the step");
    }
}

static rnnc_status node_fail(const cu_ctx *c, int32_t v, const char *why)
{
    return err_fail(RNNC_ERR_UNSUPPORTED, "fused backend: %s (node %d, op %s) in cell '%s'", why,
                    v, ir_ops[c->f->nodes[v].op].name, c->f->name);
}

rnnc_status cu_slice_operands(const cu_ctx *c, int32_t v, int sl, int32_t ops[3], int sls[3])
{
    const ir_node *nd = &c->f->nodes[v];
    int32_t ka = nd->a[0] >= 0 ? c->k[nd->a[0]] : 0;
    ops[0] = ops[1] = ops[2] = -1;
    sls[0] = sls[1] = sls[2] = sl;
    if (cu_unary_fmt(c, nd->op)) {
        ops[0] = nd->a[0];
        return RNNC_OK;
    }
    if (cu_binary_op(nd->op)) {
        ops[0] = nd->a[0];
        ops[1] = nd->a[1];
        return RNNC_OK;
    }
    switch (nd->op) {
    case IR_CHUNK:
    case IR_SLICE:
        if (ka < 1 || c->k[v] < 1 || cu_view_col(c, v) % c->H)
            return node_fail(c, v, "a chunk or slice in the step must take whole slices");
        cu_view_slice(c, v, sl, &ops[0], &sls[0]);
        return RNNC_OK;
    case IR_CONCAT:
        if (ka < 1 || c->k[nd->a[1]] < 1)
            return node_fail(c, v, "a concat in the step must join whole multiples of H");
        if (sl < ka)
            ops[0] = nd->a[0];
        else
            ops[1] = nd->a[1], sls[1] = sl - ka;
        return RNNC_OK;
    case IR_LAYERNORM:
        for (int k = 0; k < 3; k++)
            ops[k] = nd->a[k];
        return RNNC_OK;
    case IR_SUM:
    case IR_MEAN:
        return RNNC_OK;
    default:
        return node_fail(c, v, "no per-element code for this op in the step");
    }
}
