/*
 * eval_fold.c: the fp32 weights of a model in double for the evaluator, and
 * the fold: a parameter-only vector (e.g. bias_ih + bias_hh) evaluated once
 * when weights are bound, which the fused and cpu backends read instead of
 * computing it every step.  Requires a verified, specialised cell; keeps
 * the interpreter's rounding (double inside, fp32 out).
 */
#include <stdlib.h>

#include "runtime/eval/eval.h"

/* Elements of parameter `param` of f at sizes sz (0 if the pass dropped it). */
static int64_t param_numel(const ir_fn *f, ir_sizes sz, int param)
{
    int32_t node = f->params[param].node;
    if (node < 0 || node >= f->n)
        return 0;
    const ir_node *n = &f->nodes[node];
    int64_t c = ir_dim_eval(n->cols, sz);
    return n->kind == IR_MAT ? c * ir_dim_eval(n->rows, sz) : c;
}

double *rt_eval_to_f64(const float *src, int64_t n)
{
    double *d = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    for (int64_t i = 0; d && i < n; i++)
        d[i] = src[i];
    return d;
}

void rt_eval_weights_free(double **w, int n)
{
    for (int i = 0; w && i < n; i++)
        free(w[i]);
    free(w);
}

rnnc_status rt_eval_weights(const rt_spec *s, const ir_fn *f0, ir_sizes sz0,
                            const rt_weights *w, int p0, int p1, double ***out)
{
    size_t n = (size_t)(p1 - p0) * (size_t)w->n_params;
    double **d = calloc(n ? n : 1, sizeof *d);
    if (!d)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for weights");
    for (int p = p0; p < p1; p++) {
        const ir_fn *f = s ? rt_spec_fn(s, p / s->dirs) : f0;
        ir_sizes sz = s ? rt_spec_sizes(s, p / s->dirs) : sz0;
        for (int i = 0; i < w->n_params; i++) {
            const float *src = rt_weight(w, p, i);
            if (!src)
                continue;
            double **slot = &d[(size_t)(p - p0) * (size_t)w->n_params + (size_t)i];
            *slot = rt_eval_to_f64(src, param_numel(f, sz, i));
            if (!*slot) {
                rt_eval_weights_free(d, (int)n);
                return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for weights");
            }
        }
    }
    *out = d;
    return RNNC_OK;
}

void rt_eval_to_f32(float *dst, const double *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)src[i];
}

/* The nodes `node` reads, directly or not (index order is topological). */
static bool *reads_of(const ir_fn *f, int32_t node)
{
    bool *need = calloc((size_t)f->n, sizeof *need);
    if (!need)
        return NULL;
    need[node] = true;
    for (int32_t i = node; i >= 0; i--)
        for (int k = 0; need[i] && k < 3; k++)
            if (f->nodes[i].a[k] >= 0 && f->nodes[i].a[k] < i)
                need[f->nodes[i].a[k]] = true;
    return need;
}

/* Double copies of the parameters a fold reads; the others are bound to a
 * placeholder the fold never evaluates.  Converting every weight instead
 * (an LSTM's two matrices, 16 MB at I = H = 512) was most of a cpu model's
 * first forward. */
static double k_unread[1];

static rnnc_status fold_weights(const ir_fn *f, ir_sizes sz, const rt_weights *w, int pseudo,
                                const bool *need, double **d)
{
    for (int i = 0; i < f->n_params; i++) {
        const float *src = rt_weight(w, pseudo, i);
        int32_t node = f->params[i].node;
        if (!src)
            continue;
        if (node < 0 || node >= f->n || !need[node]) {
            d[i] = k_unread;
            continue;
        }
        if (!(d[i] = rt_eval_to_f64(src, param_numel(f, sz, i))))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for weights");
    }
    return RNNC_OK;
}

static void fold_weights_free(const ir_fn *f, double **d)
{
    for (int i = 0; d && i < f->n_params; i++)
        if (d[i] != k_unread)
            free(d[i]);
    free(d);
}

rnnc_status rt_eval_fold(const ir_fn *f, ir_sizes sz, const rt_weights *w, int pseudo,
                         int32_t node, float *out)
{
    if (!f || !w || !out || node < 0 || node >= f->n || pseudo < 0 ||
        pseudo >= w->pseudo_layers || w->n_params != f->n_params)
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: fold of node %d, pseudo-layer %d", node,
                        pseudo);
    if (f->nodes[node].kind != IR_VEC && f->nodes[node].kind != IR_SCALAR)
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: fold of node %d, which is not a vector",
                        node);
    bool *need = reads_of(f, node);
    double **d = calloc((size_t)f->n_params + 1, sizeof *d);
    rnnc_status st = need && d ? fold_weights(f, sz, w, pseudo, need, d)
                               : err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
    rt_frame fr;
    if (st != RNNC_OK || (st = rt_frame_init(&fr, f, sz, 1, (const double *const *)d)))
        goto free_weights;
    for (int32_t i = 0; i <= node && st == RNNC_OK; i++)
        if (need[i] && f->nodes[i].kind != IR_ROW)
            st = rt_frame_eval_node(&fr, i, 0);
    if (st == RNNC_OK && !fr.val[node])
        st = err_fail(RNNC_ERR_UNSUPPORTED, "interp: fold of node %d: an absent parameter", node);
    if (st == RNNC_OK)
        rt_eval_to_f32(out, fr.val[node], fr.cols[node]);
    rt_frame_free(&fr);
free_weights:
    fold_weights_free(f, d);
    free(need);
    return st;
}
