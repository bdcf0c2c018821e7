/*
 * interp_backend.c: the reference interpreter behind the model API (fp32 in
 * and out, double inside; training in interp_train.c), and rt_interp_fold, which the other backends use
 * to compute parameter-only vectors once at weight binding.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

typedef struct interp_model {
    rt_spec spec;
    double **w; /* [pseudo_layers * n_params], NULL for absent params */
    int n_params;
    int pseudo_layers;
    rt_interp_train *train; /* what a training forward keeps for backward */
} interp_model;

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

static double *to_f64(const float *src, int64_t n)
{
    double *d = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    for (int64_t i = 0; d && i < n; i++)
        d[i] = src[i];
    return d;
}

static void free_weights(double **w, int n)
{
    for (int i = 0; w && i < n; i++)
        free(w[i]);
    free(w);
}

/* Double copies of the fp32 weights of the pseudo-layers [p0, p1). */
static rnnc_status weights_f64(const rt_spec *s, const ir_fn *f0, ir_sizes sz0,
                               const rt_weights *w, int p0, int p1, double ***out)
{
    size_t n = (size_t)(p1 - p0) * (size_t)w->n_params;
    double **d = calloc(n ? n : 1, sizeof *d);
    if (!d)
        return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for weights");
    for (int p = p0; p < p1; p++) {
        const ir_fn *f = s ? rt_spec_fn(s, p / s->dirs) : f0;
        ir_sizes sz = s ? rt_spec_sizes(s, p / s->dirs) : sz0;
        for (int i = 0; i < w->n_params; i++) {
            const float *src = rt_weight(w, p, i);
            if (!src)
                continue;
            double **slot = &d[(size_t)(p - p0) * (size_t)w->n_params + (size_t)i];
            *slot = to_f64(src, param_numel(f, sz, i));
            if (!*slot) {
                free_weights(d, (int)n);
                return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for weights");
            }
        }
    }
    *out = d;
    return RNNC_OK;
}

static rnnc_status interp_create(const rt_spec *s, void **state)
{
    if (!s || !state || !s->fn[0])
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "interp: NULL spec");
    interp_model *m = calloc(1, sizeof *m);
    if (!m)
        return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
    m->spec = *s;
    *state = m;
    return RNNC_OK;
}

static rnnc_status interp_bind(void *state, const rt_weights *w)
{
    interp_model *m = state;
    if (!w || w->pseudo_layers != m->spec.layers * m->spec.dirs ||
        w->n_params != m->spec.fn[0]->n_params)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "interp: weights do not match the model");
    double **d;
    rnnc_status st = weights_f64(&m->spec, NULL, m->spec.sizes[0], w, 0, w->pseudo_layers, &d);
    if (st != RNNC_OK)
        return st;
    free_weights(m->w, m->n_params * m->pseudo_layers);
    m->w = d;
    m->n_params = w->n_params;
    m->pseudo_layers = w->pseudo_layers;
    return RNNC_OK;
}

/* Host double copies of one forward's arrays. */
typedef struct interp_io {
    rt_seq_f64 q;
    int n_states;
    int64_t in_n, y_n, *state_n;
    double *x, *y, **init, **final;
} interp_io;

static void io_free(interp_io *io)
{
    for (int k = 0; k < io->n_states; k++) {
        if (io->init)
            free(io->init[k]);
        if (io->final)
            free(io->final[k]);
    }
    free(io->init);
    free(io->final);
    free(io->state_n);
    free(io->x);
    free(io->y);
}

static rnnc_status io_sizes(const rt_spec *s, const rnnc_forward_args *a, interp_io *io)
{
    const ir_fn *f = s->fn[0];
    int64_t T = a->seq_len, B = a->batch;
    io->n_states = f->n_states;
    io->in_n = T * B * s->sizes[0].I;
    io->y_n = T * B * s->dirs * s->hout;
    io->state_n = calloc((size_t)f->n_states + 1, sizeof(int64_t));
    io->init = calloc((size_t)f->n_states + 1, sizeof(double *));
    io->final = calloc((size_t)f->n_states + 1, sizeof(double *));
    if (!io->state_n || !io->init || !io->final)
        return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
    for (int k = 0; k < f->n_states; k++)
        io->state_n[k] = (int64_t)s->layers * s->dirs * B *
                         ir_dim_eval(f->nodes[f->states[k].node].cols, s->sizes[0]);
    return RNNC_OK;
}

static rnnc_status io_in(const rt_spec *s, const rnnc_forward_args *a, interp_io *io)
{
    rnnc_status st = io_sizes(s, a, io);
    if (st != RNNC_OK)
        return st;
    io->x = to_f64(a->x, io->in_n);
    io->y = malloc((size_t)io->y_n * sizeof(double));
    if (!io->x || !io->y)
        return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
    for (int k = 0; k < io->n_states; k++) {
        if (a->init && a->init[k] && !(io->init[k] = to_f64(a->init[k], io->state_n[k])))
            return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
        if (a->final && a->final[k] &&
            !(io->final[k] = malloc((size_t)io->state_n[k] * sizeof(double))))
            return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
    }
    io->q = (rt_seq_f64){a->seq_len, a->batch, io->x, (const double *const *)io->init,
                         a->lengths, io->y, io->final, a->training};
    return RNNC_OK;
}

static void out_f32(float *dst, const double *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)src[i];
}

static rnnc_status interp_forward_f32(void *state, const rnnc_forward_args *a)
{
    interp_model *m = state;
    rnnc_status st = rt_check_forward(&m->spec, a);
    if (st != RNNC_OK)
        return st;
    if (a->device_pointers)
        return rnnc_fail(RNNC_ERR_UNSUPPORTED, "interp: runs on host pointers only");
    if (!m->w)
        return rnnc_fail(RNNC_ERR_STATE, "interp: forward before weights were bound");
    interp_io io = {0};
    st = io_in(&m->spec, a, &io);
    if (st != RNNC_OK)
        goto free_io;
    rt_weights_f64 w = {(const double *const *)m->w, m->n_params, m->pseudo_layers};
    st = rt_interp_run(&m->spec, &w, &io.q);
    if (st != RNNC_OK)
        goto free_io;
    out_f32(a->y, io.y, io.y_n);
    for (int k = 0; k < io.n_states; k++)
        if (io.final[k])
            out_f32(a->final[k], io.final[k], io.state_n[k]);
    st = rt_interp_train_keep(&m->train, &m->spec, a);
free_io:
    io_free(&io);
    return st;
}

static rnnc_status interp_forward(void *state, const rnnc_forward_args *a)
{
    interp_model *m = state;
    if (rt_dtype_is_half(m->spec.dtype))
        return rt_forward_half(&m->spec, a, interp_forward_f32, state);
    return interp_forward_f32(state, a);
}

static void interp_destroy(void *state)
{
    interp_model *m = state;
    if (!m)
        return;
    free_weights(m->w, m->n_params * m->pseudo_layers);
    rt_interp_train_free(m->train);
    free(m);
}

static rnnc_status interp_backward(void *state, const rnnc_backward_args *a)
{
    interp_model *m = state;
    rt_weights_f64 w = {(const double *const *)m->w, m->n_params, m->pseudo_layers};
    return rt_interp_train_backward(m->train, &m->spec, &w, a);
}

static rnnc_status interp_weight_grad(void *state, int pseudo, int param, float *out,
                                      int64_t count)
{
    interp_model *m = state;
    return rt_interp_train_weight_grad(m->train, &m->spec, pseudo, param, out, count);
}

const rt_backend rt_backend_interp = {
    .name = "interp",
    .create = interp_create,
    .bind = interp_bind,
    .forward = interp_forward,
    .time_forward = NULL, /* the model API times it on the host clock */
    .backward = interp_backward,
    .weight_grad = interp_weight_grad,
    .destroy = interp_destroy,
};

rnnc_status rt_interp_fold(const ir_fn *f, ir_sizes sz, const rt_weights *w, int pseudo,
                           int32_t node, float *out)
{
    if (!f || !w || !out || node < 0 || node >= f->n || pseudo < 0 ||
        pseudo >= w->pseudo_layers || w->n_params != f->n_params)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "interp: fold of node %d, pseudo-layer %d", node,
                         pseudo);
    if (f->nodes[node].kind != IR_VEC && f->nodes[node].kind != IR_SCALAR)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "interp: fold of node %d, which is not a vector",
                         node);
    double **d;
    rnnc_status st = weights_f64(NULL, f, sz, w, pseudo, pseudo + 1, &d);
    if (st != RNNC_OK)
        return st;
    rt_frame fr;
    st = rt_frame_init(&fr, f, sz, 1, (const double *const *)d);
    if (st != RNNC_OK)
        goto free_d;
    st = rt_frame_eval_fixed(&fr);
    if (st == RNNC_OK && !fr.val[node])
        st = rnnc_fail(RNNC_ERR_UNSUPPORTED, "interp: fold of node %d: an absent parameter", node);
    if (st == RNNC_OK)
        out_f32(out, fr.val[node], fr.cols[node]);
    rt_frame_free(&fr);
free_d:
    free_weights(d, f->n_params);
    return st;
}
