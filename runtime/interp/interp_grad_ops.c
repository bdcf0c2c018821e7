/*
 * interp_grad_ops.c: the interpreter's evaluation of the backward-only ops
 * of ir/ops.def (IR_F_GRAD: linear_t, outer, rowsum, step, slice, expand),
 * in double, and the evaluation order of a backward step: nodes that depend
 * on no input or state once, the rest at every step.  Every other op is the
 * forward's (runtime/eval).
 */
#include <string.h>

#include "runtime/interp/interp.h"

static int64_t rows_of(const rt_frame *fr, int32_t i)
{
    return fr->f->nodes[i].kind == IR_ROW ? fr->batch : 1;
}

/* Row stride of operand a: 0 when it is broadcast (not a row value). */
static int64_t stride(const rt_frame *fr, int32_t a)
{
    return fr->f->nodes[a].kind == IR_ROW ? fr->cols[a] : 0;
}

static void eval_linear_t(rt_frame *fr, int32_t i)
{
    const ir_node *n = &fr->f->nodes[i];
    const ir_node *wn = &fr->f->nodes[n->a[1]];
    const double *d = fr->val[n->a[0]], *w = fr->val[n->a[1]];
    int64_t nout = ir_dim_eval(wn->rows, fr->sz), k = ir_dim_eval(wn->cols, fr->sz);
    int64_t drs = stride(fr, n->a[0]);
    for (int64_t r = 0; r < rows_of(fr, i); r++) {
        double *o = fr->buf[i] + r * k;
        memset(o, 0, (size_t)k * sizeof(double));
        for (int64_t a = 0; a < nout; a++) {
            double v = d[r * drs + a];
            for (int64_t c = 0; c < k; c++)
                o[c] += v * w[a * k + c];
        }
    }
}

static void eval_outer(rt_frame *fr, int32_t i)
{
    const ir_node *n = &fr->f->nodes[i];
    int32_t ia = n->a[0], ib = n->a[1];
    const double *a = fr->val[ia], *b = fr->val[ib];
    int64_t na = fr->cols[ia], nb = fr->cols[ib];
    memset(fr->buf[i], 0, (size_t)(na * nb) * sizeof(double));
    for (int64_t r = 0; r < rows_of(fr, ia); r++)
        for (int64_t x = 0; x < na; x++) {
            double v = a[r * stride(fr, ia) + x];
            for (int64_t y = 0; y < nb; y++)
                fr->buf[i][x * nb + y] += v * b[r * stride(fr, ib) + y];
        }
}

static void eval_rowsum(rt_frame *fr, int32_t i)
{
    int32_t ia = fr->f->nodes[i].a[0];
    int64_t m = fr->cols[i];
    memset(fr->buf[i], 0, (size_t)m * sizeof(double));
    for (int64_t r = 0; r < rows_of(fr, ia); r++)
        for (int64_t j = 0; j < m; j++)
            fr->buf[i][j] += fr->val[ia][r * stride(fr, ia) + j];
}

static void eval_step_op(rt_frame *fr, int32_t i)
{
    int32_t ia = fr->f->nodes[i].a[0];
    int64_t m = rows_of(fr, i) * fr->cols[i];
    for (int64_t k = 0; k < m; k++)
        fr->buf[i][k] = fr->val[ia][k] > 0.0 ? 1.0 : 0.0;
}

static void eval_slice(rt_frame *fr, int32_t i)
{
    const ir_node *n = &fr->f->nodes[i];
    int32_t ia = n->a[0];
    int64_t off = ir_dim_eval(n->rows, fr->sz), m = fr->cols[i];
    for (int64_t r = 0; r < rows_of(fr, i); r++)
        memcpy(fr->buf[i] + r * m, fr->val[ia] + r * stride(fr, ia) + off,
               (size_t)m * sizeof(double));
}

static void eval_expand(rt_frame *fr, int32_t i)
{
    int32_t ia = fr->f->nodes[i].a[0];
    int64_t m = fr->cols[i], rs = fr->f->nodes[ia].kind == IR_ROW ? 1 : 0;
    for (int64_t r = 0; r < rows_of(fr, i); r++)
        for (int64_t j = 0; j < m; j++)
            fr->buf[i][r * m + j] = fr->val[ia][r * rs];
}

static rnnc_status eval_grad_node(rt_frame *fr, int32_t i, int64_t t)
{
    const ir_node *n = &fr->f->nodes[i];
    if (!(ir_ops[n->op].flags & IR_F_GRAD))
        return rt_frame_eval_node(fr, i, t);
    for (int k = 0; k < ir_ops[n->op].arity; k++)
        if (!fr->val[n->a[k]])
            return err_fail(RNNC_ERR_UNSUPPORTED, "interp: node %d: %s of an absent value", i,
                            ir_ops[n->op].name);
    switch (n->op) {
    case IR_LINEAR_T: eval_linear_t(fr, i); break;
    case IR_OUTER: eval_outer(fr, i); break;
    case IR_ROWSUM: eval_rowsum(fr, i); break;
    case IR_STEP: eval_step_op(fr, i); break;
    case IR_SLICE: eval_slice(fr, i); break;
    default: eval_expand(fr, i); break;
    }
    fr->val[i] = fr->buf[i];
    return RNNC_OK;
}

rnnc_status rt_grad_frame_eval(rt_frame *fr, const uint8_t *dep, bool fixed, int64_t t)
{
    for (int32_t i = 0; i < fr->f->n; i++) {
        if ((dep[i] == IR_DEP_NONE) != fixed)
            continue;
        rnnc_status st = eval_grad_node(fr, i, t);
        if (st != RNNC_OK)
            return st;
    }
    return RNNC_OK;
}
