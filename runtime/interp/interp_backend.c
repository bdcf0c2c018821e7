/*
 * interp_backend.c: the reference interpreter behind the model API (fp32 in
 * and out, double inside; training in interp_train.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "runtime/interp/interp.h"

typedef struct interp_model {
    rt_spec spec;
    double **w; /* [pseudo_layers * n_params], NULL for absent params */
    int n_params;
    int pseudo_layers;
    rt_interp_train *train; /* what a training forward keeps for backward */
} interp_model;

static rnnc_status interp_create(const rt_spec *s, void **state)
{
    if (!s || !state || !s->fn[0])
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: NULL spec");
    interp_model *m = calloc(1, sizeof *m);
    if (!m)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
    m->spec = *s;
    *state = m;
    return RNNC_OK;
}

static rnnc_status interp_bind(void *state, const rt_weights *w)
{
    interp_model *m = state;
    if (!w || w->pseudo_layers != m->spec.layers * m->spec.dirs ||
        w->n_params != m->spec.fn[0]->n_params)
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: weights do not match the model");
    double **d;
    rnnc_status st = rt_eval_weights(&m->spec, NULL, m->spec.sizes[0], w, 0, w->pseudo_layers, &d);
    if (st != RNNC_OK)
        return st;
    rt_eval_weights_free(m->w, m->n_params * m->pseudo_layers);
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
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
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
    io->x = rt_eval_to_f64(a->x, io->in_n);
    io->y = malloc((size_t)io->y_n * sizeof(double));
    if (!io->x || !io->y)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
    for (int k = 0; k < io->n_states; k++) {
        if (a->init && a->init[k] && !(io->init[k] = rt_eval_to_f64(a->init[k], io->state_n[k])))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
        if (a->final && a->final[k] &&
            !(io->final[k] = malloc((size_t)io->state_n[k] * sizeof(double))))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
    }
    io->q = (rt_seq_f64){a->seq_len, a->batch, io->x, (const double *const *)io->init,
                         a->lengths, io->y, io->final, a->training};
    return RNNC_OK;
}

static rnnc_status interp_forward_f32(void *state, const rnnc_forward_args *a)
{
    interp_model *m = state;
    rnnc_status st = rt_check_forward(&m->spec, a);
    if (st != RNNC_OK)
        return st;
    if (a->device_pointers)
        return err_fail(RNNC_ERR_UNSUPPORTED, "interp: runs on host pointers only");
    if (!m->w)
        return err_fail(RNNC_ERR_STATE, "interp: forward before weights were bound");
    interp_io io = {0};
    st = io_in(&m->spec, a, &io);
    if (st != RNNC_OK)
        goto free_io;
    rt_weights_f64 w = {(const double *const *)m->w, m->n_params, m->pseudo_layers};
    st = rt_interp_run(&m->spec, &w, &io.q);
    if (st != RNNC_OK)
        goto free_io;
    rt_eval_to_f32(a->y, io.y, io.y_n);
    for (int k = 0; k < io.n_states; k++)
        if (io.final[k])
            rt_eval_to_f32(a->final[k], io.final[k], io.state_n[k]);
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
    rt_eval_weights_free(m->w, m->n_params * m->pseudo_layers);
    rt_interp_train_free(m->train);
    free(m);
}

static rnnc_status interp_backward_f32(void *state, const rnnc_backward_args *a)
{
    interp_model *m = state;
    rt_weights_f64 w = {(const double *const *)m->w, m->n_params, m->pseudo_layers};
    return rt_interp_train_backward(m->train, &m->spec, &w, a);
}

/* A half model's backward: its gradients in the dtype at the edges, as its
 * forward (rt_backward_half); without a kept forward the fp32 path says why. */
static rnnc_status interp_backward(void *state, const rnnc_backward_args *a)
{
    interp_model *m = state;
    int64_t T, B;
    if (rt_dtype_is_half(m->spec.dtype) && rt_interp_train_shape(m->train, &T, &B))
        return rt_backward_half(&m->spec, T, B, a, interp_backward_f32, state);
    return interp_backward_f32(state, a);
}

static rnnc_status interp_weight_grad(void *state, int pseudo, int param, float *out,
                                      int64_t count)
{
    interp_model *m = state;
    return rt_interp_train_weight_grad(m->train, &m->spec, pseudo, param, out, count);
}

static void interp_set_seed(void *state, uint64_t seed)
{
    ((interp_model *)state)->spec.seed = seed;
}

const rt_backend rt_backend_interp = {
    .name = "interp",
    .create = interp_create,
    .bind = interp_bind,
    .forward = interp_forward,
    .time_forward = NULL, /* the model API times it on the host clock */
    .backward = interp_backward,
    .weight_grad = interp_weight_grad,
    .set_seed = interp_set_seed,
    .destroy = interp_destroy,
};
