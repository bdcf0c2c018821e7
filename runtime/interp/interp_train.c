/*
 * interp_train.c: training on the interp backend.  A training forward
 * keeps its inputs (in double); rnnc_model_backward runs the oracle
 * (rt_interp_grad, which runs that forward again, recording) and keeps the
 * weight gradients for rnnc_model_weight_grad.  As on cudnn: one backward
 * per training forward, and weight gradients only after a backward.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/interp/interp.h"

struct rt_interp_train {
    bool valid; /* a training forward not yet differentiated */
    int64_t T, B;
    double *x, **init; /* init: n_states entries, NULL = zeros */
    int64_t *lengths;
    int n_states;
    double **dw; /* [pseudo * n_params], after a backward */
    int n_dw, n_params;
    bool have_grad;
};

bool rt_interp_train_shape(const rt_interp_train *t, int64_t *T, int64_t *B)
{
    if (!t || !t->valid)
        return false;
    *T = t->T, *B = t->B;
    return true;
}

static void forget_inputs(rt_interp_train *t)
{
    for (int k = 0; t->init && k < t->n_states; k++)
        free(t->init[k]);
    free(t->init);
    free(t->x);
    free(t->lengths);
    t->init = NULL;
    t->x = NULL;
    t->lengths = NULL;
    t->valid = false;
}

void rt_interp_train_free(rt_interp_train *t)
{
    if (!t)
        return;
    forget_inputs(t);
    for (int i = 0; t->dw && i < t->n_dw; i++)
        free(t->dw[i]);
    free(t->dw);
    free(t);
}

static double *dup_f64(const float *src, int64_t n)
{
    double *d = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; d && i < n; i++)
        d[i] = src[i];
    return d;
}

static int64_t state_numel(const rt_spec *s, int k, int64_t B)
{
    const ir_fn *f = s->fn[0];
    return (int64_t)s->layers * s->dirs * B *
           ir_dim_eval(f->nodes[f->states[k].node].cols, s->sizes[0]);
}

static rnnc_status keep_inputs(rt_interp_train *t, const rt_spec *s, const rnnc_forward_args *a)
{
    t->T = a->seq_len;
    t->B = a->batch;
    t->n_states = s->fn[0]->n_states;
    t->x = dup_f64(a->x, a->seq_len * a->batch * s->sizes[0].I);
    t->init = calloc((size_t)t->n_states + 1, sizeof *t->init);
    if (!t->x || !t->init)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory keeping the forward");
    for (int k = 0; k < t->n_states; k++)
        if (a->init && a->init[k] &&
            !(t->init[k] = dup_f64(a->init[k], state_numel(s, k, a->batch))))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory keeping the forward");
    if (a->lengths) {
        if (!(t->lengths = malloc(sizeof(int64_t) * (size_t)a->batch)))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory keeping the forward");
        memcpy(t->lengths, a->lengths, sizeof(int64_t) * (size_t)a->batch);
    }
    t->valid = true;
    return RNNC_OK;
}

rnnc_status rt_interp_train_keep(rt_interp_train **tp, const rt_spec *s,
                                 const rnnc_forward_args *a)
{
    if (!*tp && !(*tp = calloc(1, sizeof **tp)))
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
    rt_interp_train *t = *tp;
    forget_inputs(t);
    if (!a->training)
        return RNNC_OK;
    rnnc_status st = keep_inputs(t, s, a);
    if (st != RNNC_OK)
        forget_inputs(t);
    return st;
}

static int64_t param_numel(const rt_spec *s, int p, int k)
{
    const ir_fn *f = rt_spec_fn(s, p / s->dirs);
    const ir_node *nd = &f->nodes[f->params[k].node];
    ir_sizes sz = rt_spec_sizes(s, p / s->dirs);
    return ir_dim_eval(nd->cols, sz) * (nd->kind == IR_MAT ? ir_dim_eval(nd->rows, sz) : 1);
}

/* Weight gradient arrays, sized as the weights (rt_interp_grad zeroes them). */
static rnnc_status grad_arrays(rt_interp_train *t, const rt_spec *s, const rt_weights_f64 *w)
{
    int n = w->pseudo_layers * w->n_params;
    if (!t->dw) {
        if (!(t->dw = calloc((size_t)n + 1, sizeof *t->dw)))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for gradients");
        t->n_dw = n;
        t->n_params = w->n_params;
    }
    for (int p = 0; p < w->pseudo_layers; p++)
        for (int k = 0; k < w->n_params; k++) {
            int64_t m = param_numel(s, p, k);
            double **slot = &t->dw[p * w->n_params + k];
            if (!*slot && !(*slot = malloc(sizeof(double) * (size_t)m)))
                return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for gradients");
        }
    return RNNC_OK;
}

/* Double copies of dy and dfinal; double outputs for dx and dinit. */
typedef struct grad_io {
    double *dy, **dfinal, *dx, **dinit;
    int n;
} grad_io;

static void grad_io_free(grad_io *g)
{
    for (int k = 0; k < g->n; k++) {
        if (g->dfinal)
            free(g->dfinal[k]);
        if (g->dinit)
            free(g->dinit[k]);
    }
    free(g->dfinal), free(g->dinit), free(g->dy), free(g->dx);
}

static rnnc_status grad_io_in(grad_io *g, const rt_interp_train *t, const rt_spec *s,
                              const rnnc_backward_args *a)
{
    g->n = t->n_states;
    g->dy = dup_f64(a->dy, t->T * t->B * s->dirs * s->hout);
    g->dfinal = calloc((size_t)g->n + 1, sizeof *g->dfinal);
    g->dinit = calloc((size_t)g->n + 1, sizeof *g->dinit);
    g->dx = a->dx ? malloc(sizeof(double) * (size_t)(t->T * t->B * s->sizes[0].I)) : NULL;
    if (!g->dy || !g->dfinal || !g->dinit || (a->dx && !g->dx))
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for gradients");
    for (int k = 0; k < g->n; k++) {
        int64_t m = state_numel(s, k, t->B);
        if (a->dfinal && a->dfinal[k] && !(g->dfinal[k] = dup_f64(a->dfinal[k], m)))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for gradients");
        if (a->dinit && a->dinit[k] && !(g->dinit[k] = malloc(sizeof(double) * (size_t)m)))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for gradients");
    }
    return RNNC_OK;
}

static void to_f32(float *dst, const double *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)src[i];
}

rnnc_status rt_interp_train_backward(rt_interp_train *t, const rt_spec *s,
                                     const rt_weights_f64 *w, const rnnc_backward_args *a)
{
    if (!t || !t->valid)
        return err_fail(RNNC_ERR_STATE, "backward needs a training forward first%s",
                        t ? " (the last forward was inference, or was already differentiated)"
                          : "");
    if (!a->dy)
        return err_fail(RNNC_ERR_INVALID_ARG, "interp backward needs dy");
    grad_io g = {0};
    t->have_grad = false;
    rnnc_status st = grad_arrays(t, s, w);
    if (st == RNNC_OK)
        st = grad_io_in(&g, t, s, a);
    if (st == RNNC_OK) {
        rt_seq_f64 q = {t->T, t->B, t->x, (const double *const *)t->init, t->lengths, NULL, NULL,
                        true};
        rt_grad_f64 gr = {g.dy, (const double *const *)g.dfinal, g.dx, g.dinit, t->dw};
        st = rt_interp_grad(s, w, &q, &gr);
    }
    if (st == RNNC_OK) {
        t->have_grad = true;
        t->valid = false; /* one backward per forward, as on cudnn */
        if (a->dx)
            to_f32(a->dx, g.dx, t->T * t->B * s->sizes[0].I);
        for (int k = 0; k < g.n; k++)
            if (a->dinit && a->dinit[k])
                to_f32(a->dinit[k], g.dinit[k], state_numel(s, k, t->B));
    }
    grad_io_free(&g);
    return st;
}

rnnc_status rt_interp_train_weight_grad(const rt_interp_train *t, const rt_spec *s, int pseudo,
                                        int param, float *out, int64_t count)
{
    if (!t || !t->have_grad)
        return err_fail(RNNC_ERR_STATE,
                        "no weight gradients yet: call backward after a training forward");
    if (pseudo < 0 || param < 0 || param >= t->n_params || pseudo * t->n_params >= t->n_dw)
        return err_fail(RNNC_ERR_INVALID_ARG, "weight (%d, %d) out of range", pseudo, param);
    int64_t numel = param_numel(s, pseudo, param);
    if (count != numel)
        return err_fail(RNNC_ERR_SHAPE, "weight gradient: %lld elements asked, it has %lld",
                        (long long)count, (long long)numel);
    to_f32(out, t->dw[pseudo * t->n_params + param], count);
    return RNNC_OK;
}
