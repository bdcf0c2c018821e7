/*
 * eval_frame.c: evaluates the nodes of one step of a cell in double
 * precision, plainly, op by op in index order.  This is the reference every
 * backend is tested against, so it favours obviousness over speed.
 *
 * An absent optional parameter has no value (val == NULL) and acts as the
 * identity of the op that reads it (linear(x, W) = x, x + b = x, x * g = x).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/eval/eval.h"

static int64_t node_rows(const rt_frame *fr, int32_t i)
{
    return fr->f->nodes[i].kind == IR_ROW ? fr->batch : 1;
}

/* The number of doubles a node's value holds per row (a MAT: all of it). */
static rnnc_status node_width(const ir_fn *f, ir_sizes sz, int32_t i, int64_t *out)
{
    const ir_node *n = &f->nodes[i];
    int64_t w;
    switch (n->kind) {
    case IR_SCALAR:
        w = 1;
        break;
    case IR_MAT: {
        int64_t r = ir_dim_eval(n->rows, sz), c = ir_dim_eval(n->cols, sz);
        if (r <= 0 || c <= 0 || r > INT32_MAX || c > INT32_MAX)
            return err_fail(RNNC_ERR_SHAPE, "interp: node %d: matrix of %lld x %lld", i,
                            (long long)r, (long long)c);
        w = r * c;
        break;
    }
    default:
        w = ir_dim_eval(n->cols, sz);
        if (w <= 0 || w > INT32_MAX)
            return err_fail(RNNC_ERR_SHAPE, "interp: node %d: feature size %lld", i,
                            (long long)w);
    }
    *out = w;
    return RNNC_OK;
}

static rnnc_status bind_param(rt_frame *fr, int32_t i)
{
    const ir_node *n = &fr->f->nodes[i];
    if (n->i0 < 0 || n->i0 >= fr->f->n_params)
        return err_fail(RNNC_ERR_INTERNAL, "interp: node %d: param slot %d", i, n->i0);
    const ir_param *p = &fr->f->params[n->i0];
    fr->val[i] = fr->w ? fr->w[n->i0] : NULL;
    if (!fr->val[i] && !p->optional)
        return err_fail(RNNC_ERR_NOT_FOUND, "interp: no weight for parameter '%s'", p->name);
    return RNNC_OK;
}

rnnc_status rt_frame_init(rt_frame *fr, const ir_fn *f, ir_sizes sz, int64_t batch,
                          const double *const *w)
{
    memset(fr, 0, sizeof *fr);
    if (!f || batch <= 0 || f->n <= 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: empty cell or batch %lld",
                        (long long)batch);
    fr->f = f;
    fr->sz = sz;
    fr->batch = batch;
    fr->rows_total = batch;
    fr->w = w;
    size_t n = (size_t)f->n;
    fr->val = calloc(n, sizeof *fr->val);
    fr->buf = calloc(n, sizeof *fr->buf);
    fr->cols = calloc(n, sizeof *fr->cols);
    if (!fr->val || !fr->buf || !fr->cols)
        goto fail_oom;
    for (int32_t i = 0; i < f->n; i++) {
        rnnc_status st = node_width(f, sz, i, &fr->cols[i]);
        if (st != RNNC_OK) {
            rt_frame_free(fr);
            return st;
        }
        if (f->nodes[i].op == IR_PARAM) {
            st = bind_param(fr, i);
            if (st != RNNC_OK) {
                rt_frame_free(fr);
                return st;
            }
            continue;
        }
        int64_t rows = node_rows(fr, i);
        if (fr->cols[i] > (INT64_MAX / 8) / rows)
            goto fail_oom;
        fr->buf[i] = calloc((size_t)(rows * fr->cols[i]), sizeof(double));
        if (!fr->buf[i])
            goto fail_oom;
        fr->val[i] = fr->buf[i];
    }
    return RNNC_OK;
fail_oom:
    rt_frame_free(fr);
    return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for the step's values");
}

void rt_frame_free(rt_frame *fr)
{
    if (!fr)
        return;
    if (fr->buf && fr->f)
        for (int32_t i = 0; i < fr->f->n; i++)
            free(fr->buf[i]);
    free(fr->buf);
    free(fr->val);
    free(fr->cols);
    fr->buf = NULL;
    fr->val = NULL;
    fr->cols = NULL;
}

/* Makes node i show the value of node src (an identity); shapes must agree. */
static rnnc_status alias(rt_frame *fr, int32_t i, int32_t src)
{
    if (fr->val[src] && (fr->cols[src] != fr->cols[i] || node_rows(fr, src) != node_rows(fr, i)))
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "interp: node %d: identity of an absent parameter changes the shape", i);
    fr->val[i] = fr->val[src];
    return RNNC_OK;
}

static double unary(int op, double a)
{
    switch (op) {
    case IR_NEG: return -a;
    case IR_SIGMOID: return 1.0 / (1.0 + exp(-a));
    case IR_TANH: return tanh(a);
    case IR_RELU: return a > 0.0 ? a : 0.0;
    case IR_EXP: return exp(a);
    case IR_LOG: return log(a);
    case IR_SQRT: return sqrt(a);
    default: return 1.0 / sqrt(a); /* IR_RSQRT */
    }
}

static double binary(int op, double a, double b)
{
    switch (op) {
    case IR_ADD: return a + b;
    case IR_SUB: return a - b;
    case IR_MUL: return a * b;
    default: return a / b; /* IR_DIV */
    }
}

/* Strides that broadcast operand a over the node's [rows, cols]. */
static rnnc_status bcast(const rt_frame *fr, int32_t i, int32_t a, int64_t *rs, int64_t *cs)
{
    if (fr->cols[a] != fr->cols[i] && fr->cols[a] != 1)
        return err_fail(RNNC_ERR_SHAPE, "interp: node %d: operand %d has %lld features, not %lld",
                        i, a, (long long)fr->cols[a], (long long)fr->cols[i]);
    *cs = fr->cols[a] == 1 ? 0 : 1;
    *rs = fr->f->nodes[a].kind == IR_ROW ? fr->cols[a] : 0;
    return RNNC_OK;
}

static rnnc_status eval_unary(rt_frame *fr, int32_t i)
{
    const ir_node *n = &fr->f->nodes[i];
    const double *a = fr->val[n->a[0]];
    if (!a)
        return err_fail(RNNC_ERR_UNSUPPORTED, "interp: node %d: %s of an absent parameter", i,
                        ir_ops[n->op].name);
    int64_t m = node_rows(fr, i) * fr->cols[i];
    for (int64_t k = 0; k < m; k++)
        fr->buf[i][k] = unary(n->op, a[k]);
    fr->val[i] = fr->buf[i];
    return RNNC_OK;
}

static rnnc_status eval_binary(rt_frame *fr, int32_t i)
{
    const ir_node *n = &fr->f->nodes[i];
    int32_t ia = n->a[0], ib = n->a[1];
    if (!fr->val[ib])
        return alias(fr, i, ia);
    if (!fr->val[ia]) {
        if (n->op == IR_SUB || n->op == IR_DIV)
            return err_fail(RNNC_ERR_UNSUPPORTED, "interp: node %d: absent left operand of %s",
                            i, ir_ops[n->op].name);
        return alias(fr, i, ib);
    }
    int64_t ars = 0, acs = 0, brs = 0, bcs = 0; /* set by bcast on success */
    rnnc_status st = bcast(fr, i, ia, &ars, &acs);
    if (st == RNNC_OK)
        st = bcast(fr, i, ib, &brs, &bcs);
    if (st != RNNC_OK)
        return st;
    const double *a = fr->val[ia], *b = fr->val[ib];
    int64_t rows = node_rows(fr, i), cols = fr->cols[i];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++)
            fr->buf[i][r * cols + j] = binary(n->op, a[r * ars + j * acs], b[r * brs + j * bcs]);
    fr->val[i] = fr->buf[i];
    return RNNC_OK;
}

static rnnc_status eval_linear(rt_frame *fr, int32_t i)
{
    const ir_node *n = &fr->f->nodes[i];
    int32_t ix = n->a[0], iw = n->a[1];
    if (!fr->val[iw])
        return alias(fr, i, ix);
    if (!fr->val[ix])
        return err_fail(RNNC_ERR_UNSUPPORTED, "interp: node %d: linear of an absent value", i);
    const ir_node *wn = &fr->f->nodes[iw];
    int64_t nout = ir_dim_eval(wn->rows, fr->sz), k = ir_dim_eval(wn->cols, fr->sz);
    if (k != fr->cols[ix] || nout != fr->cols[i])
        return err_fail(RNNC_ERR_SHAPE, "interp: node %d: linear of %lld features by [%lld, %lld]",
                        i, (long long)fr->cols[ix], (long long)nout, (long long)k);
    const double *x = fr->val[ix], *w = fr->val[iw];
    int64_t rows = node_rows(fr, i), xrs = fr->f->nodes[ix].kind == IR_ROW ? k : 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < nout; o++) {
            double acc = 0.0;
            for (int64_t c = 0; c < k; c++)
                acc += x[r * xrs + c] * w[o * k + c];
            fr->buf[i][r * nout + o] = acc;
        }
    fr->val[i] = fr->buf[i];
    return RNNC_OK;
}

static rnnc_status eval_chunk(rt_frame *fr, int32_t i)
{
    const ir_node *n = &fr->f->nodes[i];
    int32_t ia = n->a[0];
    if (!fr->val[ia])
        return alias(fr, i, ia);
    int64_t src = fr->cols[ia], m = fr->cols[i];
    if (n->i0 <= 0 || n->i1 < 0 || n->i1 >= n->i0 || m * n->i0 != src)
        return err_fail(RNNC_ERR_SHAPE, "interp: node %d: chunk %d of %d of %lld features", i,
                        n->i1, n->i0, (long long)src);
    int64_t rows = node_rows(fr, i);
    for (int64_t r = 0; r < rows; r++)
        memcpy(fr->buf[i] + r * m, fr->val[ia] + r * src + (int64_t)n->i1 * m,
               (size_t)m * sizeof(double));
    fr->val[i] = fr->buf[i];
    return RNNC_OK;
}

static rnnc_status eval_concat(rt_frame *fr, int32_t i)
{
    const ir_node *n = &fr->f->nodes[i];
    int32_t ia = n->a[0], ib = n->a[1];
    if (!fr->val[ia] || !fr->val[ib])
        return err_fail(RNNC_ERR_UNSUPPORTED, "interp: node %d: concat of an absent value", i);
    int64_t ca = fr->cols[ia], cb = fr->cols[ib], m = fr->cols[i];
    if (ca + cb != m)
        return err_fail(RNNC_ERR_SHAPE, "interp: node %d: concat of %lld and %lld features", i,
                        (long long)ca, (long long)cb);
    int64_t ars = fr->f->nodes[ia].kind == IR_ROW ? ca : 0;
    int64_t brs = fr->f->nodes[ib].kind == IR_ROW ? cb : 0;
    for (int64_t r = 0; r < node_rows(fr, i); r++) {
        memcpy(fr->buf[i] + r * m, fr->val[ia] + r * ars, (size_t)ca * sizeof(double));
        memcpy(fr->buf[i] + r * m + ca, fr->val[ib] + r * brs, (size_t)cb * sizeof(double));
    }
    fr->val[i] = fr->buf[i];
    return RNNC_OK;
}

/* An optional operand of layernorm: its value and strides, or NULL. */
static rnnc_status ln_operand(const rt_frame *fr, int32_t i, int32_t a, const double **v,
                              int64_t *rs, int64_t *cs)
{
    *v = a >= 0 ? fr->val[a] : NULL;
    if (!*v)
        return RNNC_OK;
    return bcast(fr, i, a, rs, cs);
}

static rnnc_status eval_layernorm(rt_frame *fr, int32_t i)
{
    const ir_node *n = &fr->f->nodes[i];
    const double *x = fr->val[n->a[0]], *g, *b;
    int64_t grs = 0, gcs = 0, brs = 0, bcs = 0;
    if (!x)
        return err_fail(RNNC_ERR_UNSUPPORTED, "interp: node %d: layernorm of an absent value", i);
    rnnc_status st = ln_operand(fr, i, n->a[1], &g, &grs, &gcs);
    if (st == RNNC_OK)
        st = ln_operand(fr, i, n->a[2], &b, &brs, &bcs);
    if (st != RNNC_OK)
        return st;
    int64_t m = fr->cols[i];
    for (int64_t r = 0; r < node_rows(fr, i); r++) {
        const double *xr = x + r * m;
        double mean = 0.0, var = 0.0;
        for (int64_t j = 0; j < m; j++)
            mean += xr[j];
        mean /= (double)m;
        for (int64_t j = 0; j < m; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        var /= (double)m; /* biased, as PyTorch's layer_norm */
        double inv = 1.0 / sqrt(var + n->f);
        for (int64_t j = 0; j < m; j++) {
            double v = (xr[j] - mean) * inv;
            if (g)
                v *= g[r * grs + j * gcs];
            if (b)
                v += b[r * brs + j * bcs];
            fr->buf[i][r * m + j] = v;
        }
    }
    fr->val[i] = fr->buf[i];
    return RNNC_OK;
}

static rnnc_status eval_reduce(rt_frame *fr, int32_t i)
{
    const ir_node *n = &fr->f->nodes[i];
    int32_t ia = n->a[0];
    if (!fr->val[ia])
        return err_fail(RNNC_ERR_UNSUPPORTED, "interp: node %d: %s of an absent value", i,
                        ir_ops[n->op].name);
    int64_t m = fr->cols[ia], ars = fr->f->nodes[ia].kind == IR_ROW ? m : 0;
    for (int64_t r = 0; r < node_rows(fr, i); r++) {
        double acc = 0.0;
        for (int64_t j = 0; j < m; j++)
            acc += fr->val[ia][r * ars + j];
        fr->buf[i][r] = n->op == IR_MEAN ? acc / (double)m : acc;
    }
    fr->val[i] = fr->buf[i];
    return RNNC_OK;
}

/* Element (t, b, j) of the site's [T, B, n] tensor draws index (t*B + b)*n + j,
 * with b and B the row in the whole batch (row0 + r, rows_total). */
static rnnc_status eval_dropout(rt_frame *fr, int32_t i, int64_t t)
{
    const ir_node *n = &fr->f->nodes[i];
    int32_t ia = n->a[0];
    if (!fr->training || n->f <= 0.0 || !fr->val[ia])
        return alias(fr, i, ia);
    if (n->kind != IR_ROW)
        return err_fail(RNNC_ERR_UNSUPPORTED, "interp: node %d: dropout of a parameter", i);
    if (n->i1 < 0 || n->i1 > 255)
        return err_fail(RNNC_ERR_UNSUPPORTED, "interp: node %d: dropout site %d past 255", i,
                        n->i1);
    uint64_t site = rt_dropout_site_cell(fr->pseudo, n->i1);
    double scale = cm_dropout_scale(n->f);
    int64_t m = fr->cols[i], rows = fr->batch;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < m; j++) {
            uint64_t idx = (uint64_t)((t * fr->rows_total + fr->row0 + r) * m + j);
            double v = fr->val[ia][r * m + j];
            fr->buf[i][r * m + j] = cm_dropout_keep(fr->seed, site, idx, n->f) ? v * scale : 0.0;
        }
    fr->val[i] = fr->buf[i];
    return RNNC_OK;
}

static rnnc_status eval_node(rt_frame *fr, int32_t i, int64_t t)
{
    const ir_node *n = &fr->f->nodes[i];
    unsigned flags = ir_ops[n->op].flags;
    if (flags & IR_F_UNARY)
        return eval_unary(fr, i);
    if (flags & IR_F_BINARY)
        return eval_binary(fr, i);
    switch (n->op) {
    case IR_INPUT:
    case IR_STATE:
    case IR_PARAM:
        return RNNC_OK; /* written by the driver, or bound at init */
    case IR_CONST:
        fr->buf[i][0] = n->f;
        return RNNC_OK;
    case IR_LINEAR: return eval_linear(fr, i);
    case IR_CHUNK: return eval_chunk(fr, i);
    case IR_CONCAT: return eval_concat(fr, i);
    case IR_LAYERNORM: return eval_layernorm(fr, i);
    case IR_SUM:
    case IR_MEAN: return eval_reduce(fr, i);
    case IR_DROPOUT: return eval_dropout(fr, i, t);
    default:
        return err_fail(RNNC_ERR_UNSUPPORTED, "interp: node %d: op %d", i, n->op);
    }
}

rnnc_status rt_frame_eval_node(rt_frame *fr, int32_t i, int64_t t)
{
    return eval_node(fr, i, t);
}

rnnc_status rt_frame_eval_fixed(rt_frame *fr)
{
    for (int32_t i = 0; i < fr->f->n; i++) {
        if (fr->f->nodes[i].kind == IR_ROW)
            continue;
        rnnc_status st = eval_node(fr, i, 0);
        if (st != RNNC_OK)
            return st;
    }
    return RNNC_OK;
}

rnnc_status rt_frame_eval_step(rt_frame *fr, int64_t t)
{
    for (int32_t i = 0; i < fr->f->n; i++) {
        if (fr->f->nodes[i].kind != IR_ROW)
            continue;
        rnnc_status st = eval_node(fr, i, t);
        if (st != RNNC_OK)
            return st;
    }
    return RNNC_OK;
}
