/*
 * gpu_cudnn_pair.h: what gpu_cudnn_paths.c and gpu_cudnn_algos.c share: a
 * cudnn model and an interpreter model of one configuration, given the same
 * weights and inputs through the public API, run and compared
 * (max|out - ref| / max|ref| over y and every final state).  Static inline
 * functions: each test program includes it once and uses what it needs.
 */
#ifndef GPU_CUDNN_PAIR_H
#define GPU_CUDNN_PAIR_H

#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

typedef struct pair_cfg {
    const char *cell;
    int64_t I, H;
    int layers;
    bool bidir, no_bias;
    rnnc_cudnn_algo algo;
    rnnc_math math; /* the cudnn model's (the interpreter computes in double) */
} pair_cfg;

static inline rnnc_status pair_try_make(const pair_cfg *c, rnnc_backend be, rnnc_model **m)
{
    rnnc_cell *cell = NULL;
    assert_ok(rnnc_cell_builtin(&cell, c->cell, NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = c->I;
    d.hidden_size = c->H;
    d.num_layers = c->layers;
    d.bidirectional = c->bidir;
    d.no_bias = c->no_bias;
    d.cudnn_algo = c->algo;
    d.math = be == RNNC_BACKEND_CUDNN ? c->math : RNNC_MATH_FFMA;
    d.backend = be;
    *m = NULL;
    rnnc_status s = rnnc_model_create(m, &d);
    rnnc_cell_destroy(cell);
    return s;
}

static inline rnnc_model *pair_make(const pair_cfg *c, rnnc_backend be)
{
    rnnc_model *m = NULL;
    if (pair_try_make(c, be, &m) != RNNC_OK)
        fail_msg("%s on %s (algo %s): %s", c->cell, rnnc_backend_name(be),
                 rnnc_cudnn_algo_name(c->algo), rnnc_last_error());
    return m;
}

static inline double pair_rel_err(const float *out, const float *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)out[i] - (double)ref[i]);
        num = d > num || isnan(d) ? d : num;
        den = fabs((double)ref[i]) > den ? fabs((double)ref[i]) : den;
    }
    return den > 0 ? num / den : num;
}

/* A value with TF32's 10 mantissa bits (the low 13 cleared): products of
 * two such values are exact in fp32, so TF32 tensor cores lose nothing. */
static inline float pair_tf32_exact(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u &= ~(uint32_t)0x1fff;
    memcpy(&v, &u, sizeof v);
    return v;
}

static inline void pair_fill(float *p, size_t n, uint64_t *rng, double lo, double hi, bool tf32)
{
    tu_fill_f32(p, n, rng, lo, hi);
    for (size_t i = 0; tf32 && i < n; i++)
        p[i] = pair_tf32_exact(p[i]);
}

/* One call's host buffers: x, y, the initial and final states. */
typedef struct pair_io {
    int64_t T, B, fy, nst[2];
    int n_states;
    float *x, *y, *init[2], *fin[2];
    int64_t *lengths, *batch_sizes;
} pair_io;

/* How a call is made. */
typedef struct pair_run {
    int64_t T, B;
    bool ragged;     /* lengths sorted longest first (also a packed batch) */
    bool init;       /* random initial states, else zeros */
    bool tf32_exact; /* every input and weight TF32-exact */
} pair_run;

static inline void pair_io_init(pair_io *b, rnnc_model *m, const pair_cfg *c, const pair_run *o,
                                uint64_t *rng)
{
    memset(b, 0, sizeof *b);
    int64_t T = o->T, B = o->B, D = c->bidir ? 2 : 1;
    b->T = T, b->B = B;
    assert_ok(rnnc_model_output_size(m, &b->fy));
    b->fy *= D;
    for (int s = 0; s < 2 && rnnc_model_state_size(m, s, &b->nst[s]) == RNNC_OK; s++)
        b->n_states = s + 1;
    err_clear();
    b->x = malloc(sizeof(float) * (size_t)(T * B * c->I));
    pair_fill(b->x, (size_t)(T * B * c->I), rng, -1, 1, o->tf32_exact);
    b->y = malloc(sizeof(float) * (size_t)(T * B * b->fy));
    tu_poison_f32(b->y, (size_t)(T * B * b->fy));
    for (int s = 0; s < b->n_states; s++) {
        b->nst[s] *= c->layers * D * B;
        b->fin[s] = malloc(sizeof(float) * (size_t)b->nst[s]);
        tu_poison_f32(b->fin[s], (size_t)b->nst[s]);
        if (o->init) {
            b->init[s] = malloc(sizeof(float) * (size_t)b->nst[s]);
            pair_fill(b->init[s], (size_t)b->nst[s], rng, -0.5, 0.5, o->tf32_exact);
        }
    }
    if (o->ragged) {
        b->lengths = malloc(sizeof(int64_t) * (size_t)B);
        b->batch_sizes = malloc(sizeof(int64_t) * (size_t)T);
        for (int64_t i = 0; i < B; i++)
            b->lengths[i] = i == 0 ? T : 1 + (int64_t)tu_uniform(rng, 0, (double)b->lengths[i - 1]);
        for (int64_t t = 0; t < T; t++) {
            b->batch_sizes[t] = 0;
            for (int64_t i = 0; i < B; i++)
                b->batch_sizes[t] += b->lengths[i] > t;
        }
    }
}

/* The same inputs as src, fresh (poisoned) outputs. */
static inline void pair_io_copy(pair_io *b, const pair_io *src, int64_t I)
{
    *b = *src;
    size_t nx = (size_t)(b->T * b->B * I), ny = (size_t)(b->T * b->B * b->fy);
    b->x = malloc(sizeof(float) * nx);
    memcpy(b->x, src->x, sizeof(float) * nx);
    b->y = malloc(sizeof(float) * ny);
    tu_poison_f32(b->y, ny);
    for (int s = 0; s < b->n_states; s++) {
        b->fin[s] = malloc(sizeof(float) * (size_t)b->nst[s]);
        tu_poison_f32(b->fin[s], (size_t)b->nst[s]);
        b->init[s] = NULL;
        if (src->init[s]) {
            b->init[s] = malloc(sizeof(float) * (size_t)b->nst[s]);
            memcpy(b->init[s], src->init[s], sizeof(float) * (size_t)b->nst[s]);
        }
    }
    b->lengths = NULL, b->batch_sizes = NULL;
    if (src->lengths) {
        b->lengths = malloc(sizeof(int64_t) * (size_t)b->B);
        memcpy(b->lengths, src->lengths, sizeof(int64_t) * (size_t)b->B);
    }
}

static inline void pair_io_free(pair_io *b)
{
    free(b->x), free(b->y);
    for (int s = 0; s < 2; s++)
        free(b->init[s]), free(b->fin[s]);
    free(b->lengths), free(b->batch_sizes);
}

static inline rnnc_status pair_forward(rnnc_model *m, pair_io *b, bool training)
{
    const void *init[2] = {b->init[0], b->init[1]};
    void *fin[2] = {b->fin[0], b->fin[1]};
    rnnc_forward_args a = {.seq_len = b->T, .batch = b->B, .x = b->x, .y = b->y,
                           .init = init, .final = fin, .lengths = b->lengths,
                           .training = training};
    return rnnc_model_forward(m, &a);
}

/* Worst relative error of y and the final states of b against ref. */
static inline double pair_io_err(const pair_io *b, const pair_io *ref)
{
    double e = pair_rel_err(b->y, ref->y, (size_t)(b->T * b->B * b->fy));
    for (int s = 0; s < b->n_states; s++) {
        double es = pair_rel_err(b->fin[s], ref->fin[s], (size_t)b->nst[s]);
        e = es > e ? es : e;
    }
    return e;
}

/* The same random weights (TF32-exact if asked) on every model. */
static inline void pair_weights(rnnc_model *const *ms, int n, uint64_t *rng, bool tf32)
{
    for (int i = 0; i < rnnc_model_weight_count(ms[0]); i++) {
        const char *name;
        int64_t shape[RNNC_MAX_RANK], count = 1;
        int rank;
        assert_ok(rnnc_model_weight_info(ms[0], i, &name, RNNC_MAX_RANK, shape, &rank));
        for (int k = 0; k < rank; k++)
            count *= shape[k];
        float *w = malloc(sizeof(float) * (size_t)count);
        pair_fill(w, (size_t)count, rng, -0.3, 0.3, tf32);
        for (int k = 0; k < n; k++)
            assert_ok(rnnc_model_set_weight(ms[k], name, w, count));
        free(w);
    }
}

/* Runs c on cudnn and on the interpreter with the same weights and inputs:
 * RNNC_OK with *err and the algorithm cuDNN ran, or cuDNN's refusal
 * (printed, returned). */
static inline rnnc_status pair_against_interp(const pair_cfg *c, const pair_run *o, uint64_t *rng,
                                              double *err, rnnc_cudnn_algo *ran)
{
    rnnc_model *mc = pair_make(c, RNNC_BACKEND_CUDNN), *mi = pair_make(c, RNNC_BACKEND_INTERP);
    rnnc_model *both[2] = {mc, mi};
    pair_weights(both, 2, rng, o->tf32_exact);
    pair_io bc, bi;
    pair_io_init(&bc, mc, c, o, rng);
    pair_io_copy(&bi, &bc, c->I);
    rnnc_status s = pair_forward(mc, &bc, false);
    if (s == RNNC_OK) {
        assert_ok(pair_forward(mi, &bi, false));
        *err = pair_io_err(&bc, &bi);
        assert_ok(rnnc_model_cudnn_algo(mc, ran));
    } else {
        fprintf(stderr, "  cuDNN refused %s algo %s T=%lld B=%lld I=%lld H=%lld: %s: %s\n", c->cell,
                rnnc_cudnn_algo_name(c->algo), (long long)o->T, (long long)o->B, (long long)c->I,
                (long long)c->H, rnnc_status_string(s), rnnc_last_error());
    }
    pair_io_free(&bc);
    pair_io_free(&bi);
    rnnc_model_destroy(mi);
    rnnc_model_destroy(mc);
    return s;
}

#endif /* GPU_CUDNN_PAIR_H */
