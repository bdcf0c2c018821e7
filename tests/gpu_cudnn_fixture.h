/*
 * gpu_cudnn_fixture.h: what the gpu_cudnn*.c tests share: a model spec built
 * from a built-in cell the way the model API builds it, random weights in
 * fp32 (for cuDNN) and the same values in double (for the interpreter), and
 * random inputs.  Static functions: each test program includes it once.
 */
#ifndef GPU_CUDNN_FIXTURE_H
#define GPU_CUDNN_FIXTURE_H

#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_fallback/fallback.h"
#include "runtime/interp/interp.h"

typedef struct fx_model {
    rt_spec s;
    rnnc_cell *fn; /* specialised once; symbolic in I, so it serves every layer */
    int n_params, pseudo;
    int64_t *numel; /* [pseudo * n_params] */
    float **wf;     /* [pseudo * n_params] */
    double **wd;
    rt_weights w;
    rt_weights_f64 w64;
} fx_model;

typedef struct fx_cfg {
    const char *cell;
    int64_t I, H, P; /* P 0: no projection */
    int layers, dirs;
    bool batch_first;
    double dropout;
    uint64_t seed;
} fx_cfg;

static int64_t fx_param_numel(const fx_model *m, int layer, int i)
{
    const ir_node *n = &m->fn->nodes[m->fn->params[i].node];
    ir_sizes sz = rt_spec_sizes(&m->s, layer);
    int64_t cols = ir_dim_eval(n->cols, sz);
    return n->kind == IR_MAT ? ir_dim_eval(n->rows, sz) * cols : cols;
}

static void fx_weights(fx_model *m, uint64_t *rng)
{
    size_t n = (size_t)(m->pseudo * m->n_params);
    m->numel = calloc(n, sizeof *m->numel);
    m->wf = calloc(n, sizeof *m->wf);
    m->wd = calloc(n, sizeof *m->wd);
    assert_true(m->numel && m->wf && m->wd);
    double k = 1.0 / sqrt((double)m->s.sizes[0].H); /* PyTorch's init range */
    for (int p = 0; p < m->pseudo; p++) {
        for (int i = 0; i < m->n_params; i++) {
            size_t j = (size_t)(p * m->n_params + i);
            m->numel[j] = fx_param_numel(m, p / m->s.dirs, i);
            m->wf[j] = malloc((size_t)m->numel[j] * sizeof(float));
            m->wd[j] = malloc((size_t)m->numel[j] * sizeof(double));
            assert_true(m->wf[j] && m->wd[j]);
            tu_fill_f32(m->wf[j], (size_t)m->numel[j], rng, -k, k);
            for (int64_t e = 0; e < m->numel[j]; e++)
                m->wd[j][e] = m->wf[j][e];
        }
    }
    m->w = (rt_weights){.w = (const float *const *)m->wf, .n_params = m->n_params,
                        .pseudo_layers = m->pseudo};
    m->w64 = (rt_weights_f64){.w = (const double *const *)m->wd, .n_params = m->n_params,
                              .pseudo_layers = m->pseudo};
}

static void fx_model_init(fx_model *m, const fx_cfg *c, uint64_t *rng)
{
    memset(m, 0, sizeof *m);
    assert_ok(rnnc_cell_builtin(&m->fn, c->cell, NULL));
    assert_ok(ir_optimise(m->fn, c->P > 0));
    int64_t hout = c->P > 0 ? c->P : c->H;
    m->s.fn[0] = m->s.fn[1] = m->fn;
    m->s.sizes[0] = (ir_sizes){.I = c->I, .H = c->H, .P = hout};
    m->s.sizes[1] = (ir_sizes){.I = c->dirs * hout, .H = c->H, .P = hout};
    m->s.layers = c->layers;
    m->s.dirs = c->dirs;
    m->s.batch_first = c->batch_first;
    m->s.dropout = c->dropout;
    m->s.seed = c->seed;
    m->s.hoist = RNNC_HOIST_ALL;
    m->s.math = RNNC_MATH_FFMA;
    /* The 1e-5 these tests hold cuDNN to is FFMA's, which only STANDARD
     * keeps: AUTO with autotuning on (the default outside ctest) times the
     * persistent algorithms too, whose own error is about 1e-5 a step
     * (docs/cudnn.md "Accuracy of the algorithms"; 58 of 60 seeds failed
     * that way), and gpu_cudnn_algos holds each to its own bound. */
    m->s.cudnn_algo = RNNC_CUDNN_ALGO_STANDARD;
    m->s.dtype = RNNC_F32;
    m->s.device = 0;
    m->s.hout = hout;
    m->n_params = m->fn->n_params;
    m->pseudo = c->layers * c->dirs;
    fx_weights(m, rng);
}

static void fx_model_free(fx_model *m)
{
    for (int j = 0; m->wf && j < m->pseudo * m->n_params; j++) {
        free(m->wf[j]);
        free(m->wd[j]);
    }
    free(m->wf);
    free(m->wd);
    free(m->numel);
    rnnc_cell_destroy(m->fn);
}

/* Width of state k (cell order) and the element count of its [L*D, B, n] tensor. */
static int64_t fx_state_numel(const fx_model *m, int k, int64_t batch)
{
    const ir_node *n = &m->fn->nodes[m->fn->states[k].node];
    return m->pseudo * batch * ir_dim_eval(n->cols, m->s.sizes[0]);
}

/* Host data of one forward, in fp32 and the same values in double. */
#define FX_MAX_STATES 4
typedef struct fx_data {
    int64_t T, B, n_states;
    int64_t nx, ny, ns[FX_MAX_STATES];
    float *x, *y, *init[FX_MAX_STATES], *final[FX_MAX_STATES];
    double *xd, *yd, *initd[FX_MAX_STATES], *finald[FX_MAX_STATES];
    int64_t *lengths; /* NULL: all T */
} fx_data;

static void *fx_alloc(size_t n)
{
    void *p = calloc(n ? n : 1, 1);
    assert_non_null(p);
    return p;
}

static void fx_rand_pair(float **f, double **d, int64_t n, uint64_t *rng)
{
    *f = fx_alloc((size_t)n * sizeof(float));
    *d = fx_alloc((size_t)n * sizeof(double));
    tu_fill_f32(*f, (size_t)n, rng, -1, 1);
    for (int64_t i = 0; i < n; i++)
        (*d)[i] = (*f)[i];
}

static void fx_data_init(fx_data *d, const fx_model *m, int64_t T, int64_t B, bool lengths,
                         uint64_t *rng)
{
    memset(d, 0, sizeof *d);
    d->T = T;
    d->B = B;
    d->n_states = m->fn->n_states;
    assert_true(d->n_states <= FX_MAX_STATES);
    d->nx = T * B * m->s.sizes[0].I;
    d->ny = T * B * m->s.dirs * m->s.hout;
    fx_rand_pair(&d->x, &d->xd, d->nx, rng);
    d->y = fx_alloc((size_t)d->ny * sizeof(float));
    d->yd = fx_alloc((size_t)d->ny * sizeof(double));
    for (int k = 0; k < d->n_states; k++) {
        d->ns[k] = fx_state_numel(m, k, B);
        fx_rand_pair(&d->init[k], &d->initd[k], d->ns[k], rng);
        d->final[k] = fx_alloc((size_t)d->ns[k] * sizeof(float));
        d->finald[k] = fx_alloc((size_t)d->ns[k] * sizeof(double));
    }
    if (lengths) {
        d->lengths = fx_alloc((size_t)B * sizeof(int64_t));
        for (int64_t b = 0; b < B; b++)
            d->lengths[b] = 1 + (int64_t)tu_uniform(rng, 0, (double)T);
        d->lengths[0] = T; /* both extremes present */
        if (B > 1)
            d->lengths[B - 1] = 1;
    }
}

static void fx_data_free(fx_data *d)
{
    free(d->x);
    free(d->xd);
    free(d->y);
    free(d->yd);
    for (int k = 0; k < d->n_states; k++) {
        free(d->init[k]);
        free(d->initd[k]);
        free(d->final[k]);
        free(d->finald[k]);
    }
    free(d->lengths);
}

/* Forward args over d's fp32 host buffers (outputs poisoned first). */
static rnnc_forward_args fx_args(fx_data *d, bool training)
{
    tu_poison_f32(d->y, (size_t)d->ny);
    for (int k = 0; k < d->n_states; k++)
        tu_poison_f32(d->final[k], (size_t)d->ns[k]);
    return (rnnc_forward_args){.seq_len = d->T,
                               .batch = d->B,
                               .x = d->x,
                               .init = (const void *const *)d->init,
                               .lengths = d->lengths,
                               .y = d->y,
                               .final = (void *const *)d->final,
                               .training = training};
}

/* The reference: the interpreter in double on the same values. */
static void fx_reference(const fx_model *m, fx_data *d, bool training)
{
    rt_seq_f64 q = {.seq_len = d->T,
                    .batch = d->B,
                    .x = d->xd,
                    .init = (const double *const *)d->initd,
                    .lengths = d->lengths,
                    .y = d->yd,
                    .final = (double *const *)d->finald,
                    .training = training};
    assert_ok(rt_interp_run(&m->s, &m->w64, &q));
}

/* A cudnn backend state with m's weights bound. */
static void *fx_cudnn(const fx_model *m)
{
    void *st = NULL;
    fb_rnn_set_cell_source(rnnc_cell_builtin); /* as api/ does before it opens cudnn */
    assert_ok(fb_backend_cudnn.create(&m->s, &st));
    assert_ok(fb_backend_cudnn.bind(st, &m->w));
    return st;
}

#endif
