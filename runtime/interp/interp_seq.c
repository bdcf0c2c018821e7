/*
 * interp_seq.c: the reference interpreter's sequence driver: layers,
 * directions, per-sequence lengths and dropout between layers, with
 * PyTorch's semantics (docs/interpreter.md).
 *
 * Lengths follow packed sequences: a row whose sequence has ended (t >=
 * len[b]) neither writes output (y stays zero) nor updates its states, so
 * the final states are those of its own last step, and the reverse
 * direction, walking t = T-1 .. 0, first touches a row at t = len[b]-1.
 *
 * Batch rows never meet (every op is per row), so each direction of each
 * layer splits its rows over threads (RNNC_THREADS, default the cores
 * online): every row is computed by the same code in the same order as in
 * one thread, so the result is bit for bit the serial one.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/interp/interp.h"

#define MAX_THREADS 64

typedef struct run_ctx {
    const rt_spec *s;
    const rt_weights_f64 *w;
    const rt_seq_f64 *q;
    int64_t T, B;  /* B: the whole batch */
    int64_t width; /* D * Hout: a layer's output features */
    int64_t b0, nb; /* the rows this context runs: [b0, b0 + nb) */
} run_ctx;

/* Row b of the context's own rows. */
static int64_t seq_len_of(const run_ctx *c, int64_t b)
{
    return c->q->lengths ? c->q->lengths[c->b0 + b] : c->T;
}

/* The features of node `node` of the fn of `layer`, evaluated. */
static int64_t fn_width(const rt_spec *s, int layer, int32_t node)
{
    return ir_dim_eval(rt_spec_fn(s, layer)->nodes[node].cols, rt_spec_sizes(s, layer));
}

static rnnc_status check_fn(const rt_spec *s, int layer, int64_t in_width, int n_params)
{
    const ir_fn *f = rt_spec_fn(s, layer);
    if (!f)
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: no cell for layer %d", layer);
    if (f->n_inputs != 1 || f->output < 0)
        return err_fail(RNNC_ERR_UNSUPPORTED, "interp: cell '%s' needs one input and an output "
                        "(has %d inputs)", f->name, f->n_inputs);
    if (f->n_params != n_params || f->n_states != s->fn[0]->n_states)
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: the cells of layer 0 and %d differ", layer);
    int64_t iw = fn_width(s, layer, f->inputs[0].node), ow = fn_width(s, layer, f->output);
    if (iw != in_width || ow != s->hout)
        return err_fail(RNNC_ERR_SHAPE, "interp: layer %d takes %lld features (want %lld) and "
                        "gives %lld (want %lld)", layer, (long long)iw, (long long)in_width,
                        (long long)ow, (long long)s->hout);
    for (int k = 0; k < f->n_states; k++)
        if (fn_width(s, layer, f->states[k].node) != fn_width(s, 0, s->fn[0]->states[k].node))
            return err_fail(RNNC_ERR_SHAPE, "interp: state '%s' changes size across layers",
                            f->states[k].name);
    return RNNC_OK;
}

static rnnc_status check_run(const rt_spec *s, const rt_weights_f64 *w, const rt_seq_f64 *q)
{
    if (!s || !w || !q || !q->x || !q->y || !s->fn[0])
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: NULL spec, weights, cell, x or y");
    if (s->layers < 1 || (s->dirs != 1 && s->dirs != 2) || s->hout <= 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: %d layers, %d directions, Hout %lld",
                        s->layers, s->dirs, (long long)s->hout);
    if (q->seq_len < 1 || q->batch < 1)
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: T=%lld B=%lld", (long long)q->seq_len,
                        (long long)q->batch);
    if (w->pseudo_layers < s->layers * s->dirs || w->n_params != s->fn[0]->n_params)
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: weights for %d pseudo-layers of %d params "
                        "(want %d of %d)", w->pseudo_layers, w->n_params, s->layers * s->dirs,
                        s->fn[0]->n_params);
    for (int64_t b = 0; q->lengths && b < q->batch; b++)
        if (q->lengths[b] < 1 || q->lengths[b] > q->seq_len)
            return err_fail(RNNC_ERR_INVALID_ARG, "interp: lengths[%lld] = %lld not in [1, %lld]",
                            (long long)b, (long long)q->lengths[b], (long long)q->seq_len);
    for (int l = 0; l < s->layers && l < 2; l++) {
        int64_t in_width = l == 0 ? s->sizes[0].I : s->dirs * s->hout;
        rnnc_status st = check_fn(s, l, in_width, w->n_params);
        if (st != RNNC_OK)
            return st;
    }
    return RNNC_OK;
}

/* Row (t, b) of a layer's input: x for layer 0, else the previous layer's [T, B, width]. */
static const double *input_row(const run_ctx *c, const double *in, bool batch_first,
                               int64_t in_width, int64_t t, int64_t b)
{
    b += c->b0;
    int64_t r = batch_first ? b * c->T + t : t * c->B + b;
    return in + r * in_width;
}

/* States are [L*D, B, n]: pseudo-layer p's rows b0.. are contiguous. */
static size_t state_offset(const run_ctx *c, int p, int64_t n)
{
    return (size_t)(p * c->B * n + c->b0 * n);
}

static void load_states(const run_ctx *c, rt_frame *fr, int p)
{
    const ir_fn *f = fr->f;
    for (int k = 0; k < f->n_states; k++) {
        int32_t node = f->states[k].node;
        size_t m = (size_t)(c->nb * fr->cols[node]);
        if (c->q->init && c->q->init[k])
            memcpy(fr->buf[node], c->q->init[k] + state_offset(c, p, fr->cols[node]),
                   m * sizeof(double));
        else
            memset(fr->buf[node], 0, m * sizeof(double));
    }
}

static void save_states(const run_ctx *c, const rt_frame *fr, int p)
{
    const ir_fn *f = fr->f;
    for (int k = 0; k < f->n_states; k++) {
        int32_t node = f->states[k].node;
        size_t m = (size_t)(c->nb * fr->cols[node]);
        if (c->q->final && c->q->final[k])
            memcpy(c->q->final[k] + state_offset(c, p, fr->cols[node]), fr->buf[node],
                   m * sizeof(double));
    }
}

/* Copies the step's output and next states of the rows still inside their
 * sequence at time t; next states go through `stage` because a next value
 * may be another state's current one. */
static rnnc_status commit_step(const run_ctx *c, rt_frame *fr, int64_t t, int dir, double *out,
                               double *stage)
{
    const ir_fn *f = fr->f;
    int64_t hout = c->s->hout;
    const double *y = fr->val[f->output];
    if (!y)
        return err_fail(RNNC_ERR_UNSUPPORTED, "interp: the output is an absent parameter");
    int64_t yrs = f->nodes[f->output].kind == IR_ROW ? hout : 0;
    for (int64_t b = 0; b < c->nb; b++)
        if (t < seq_len_of(c, b))
            memcpy(out + (t * c->B + c->b0 + b) * c->width + dir * hout, y + b * yrs,
                   (size_t)hout * sizeof(double));
    double *sp = stage;
    for (int k = 0; k < f->n_states; k++) {
        int32_t next = f->states[k].next;
        if (next < 0 || !fr->val[next])
            return err_fail(RNNC_ERR_INVALID_ARG, "interp: state '%s' has no next value",
                            f->states[k].name);
        int64_t n = fr->cols[f->states[k].node];
        int64_t nrs = f->nodes[next].kind == IR_ROW ? n : 0;
        for (int64_t b = 0; b < c->nb; b++)
            memcpy(sp + b * n, fr->val[next] + b * nrs, (size_t)n * sizeof(double));
        sp += c->nb * n;
    }
    sp = stage;
    for (int k = 0; k < f->n_states; k++) {
        int32_t node = f->states[k].node;
        int64_t n = fr->cols[node];
        for (int64_t b = 0; b < c->nb; b++)
            if (t < seq_len_of(c, b))
                memcpy(fr->buf[node] + b * n, sp + b * n, (size_t)n * sizeof(double));
        sp += c->nb * n;
    }
    return RNNC_OK;
}

static rnnc_status walk_time(const run_ctx *c, rt_frame *fr, int dir, const double *in,
                             bool in_bf, double *out, double *stage)
{
    int32_t in_node = fr->f->inputs[0].node;
    int64_t in_width = fr->cols[in_node];
    for (int64_t step = 0; step < c->T; step++) {
        int64_t t = dir ? c->T - 1 - step : step;
        for (int64_t b = 0; b < c->nb; b++)
            memcpy(fr->buf[in_node] + b * in_width, input_row(c, in, in_bf, in_width, t, b),
                   (size_t)in_width * sizeof(double));
        rnnc_status st = rt_frame_eval_step(fr, t);
        if (st == RNNC_OK)
            st = commit_step(c, fr, t, dir, out, stage);
        if (st != RNNC_OK)
            return st;
    }
    return RNNC_OK;
}

rnnc_status rt_interp_frame(rt_frame *fr, const rt_spec *s, const rt_weights_f64 *w, int layer,
                            int dir, int64_t rows, bool training, int64_t *state_n)
{
    int p = layer * s->dirs + dir;
    rnnc_status st = rt_frame_init(fr, rt_spec_fn(s, layer), rt_spec_sizes(s, layer), rows,
                                   w->w + (size_t)p * (size_t)w->n_params);
    if (st != RNNC_OK)
        return st;
    fr->training = training;
    fr->seed = s->seed;
    fr->pseudo = p;
    *state_n = 0;
    for (int k = 0; k < fr->f->n_states; k++)
        *state_n += rows * fr->cols[fr->f->states[k].node];
    return RNNC_OK;
}

/* One direction of one layer over the context's rows: reads `in`, writes
 * their columns of `out` [T, B, width]. */
static rnnc_status run_rows(const run_ctx *c, int layer, int dir, const double *in, bool in_bf,
                            double *out)
{
    int p = layer * c->s->dirs + dir;
    rt_frame fr;
    int64_t stage_n;
    rnnc_status st = rt_interp_frame(&fr, c->s, c->w, layer, dir, c->nb, c->q->training, &stage_n);
    if (st != RNNC_OK)
        return st;
    fr.row0 = c->b0;
    fr.rows_total = c->B;
    double *stage = malloc((size_t)(stage_n > 0 ? stage_n : 1) * sizeof(double));
    if (!stage) {
        st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for the states");
        goto free_frame;
    }
    st = rt_frame_eval_fixed(&fr);
    if (st != RNNC_OK)
        goto free_stage;
    load_states(c, &fr, p);
    st = walk_time(c, &fr, dir, in, in_bf, out, stage);
    if (st == RNNC_OK)
        save_states(c, &fr, p);
free_stage:
    free(stage);
free_frame:
    rt_frame_free(&fr);
    return st;
}

/* RNNC_THREADS, else the cores online; at most one thread per row. */
static int thread_count(int64_t rows)
{
    long n = cm_env_long("RNNC_THREADS", sysconf(_SC_NPROCESSORS_ONLN));
    n = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
    return (int)(n < rows ? n : rows);
}

typedef struct rows_job {
    run_ctx c;
    int layer, dir;
    const double *in;
    bool in_bf;
    double *out;
    rnnc_status st;
    char err[512]; /* the worker's rnnc_last_error, which is per thread */
} rows_job;

static void *rows_thread(void *arg)
{
    rows_job *j = arg;
    j->st = run_rows(&j->c, j->layer, j->dir, j->in, j->in_bf, j->out);
    if (j->st != RNNC_OK)
        snprintf(j->err, sizeof j->err, "%s", rnnc_last_error());
    return NULL;
}

/* One direction of one layer, its rows split over threads (the calling one
 * takes the first share); a failure is reported as its thread saw it. */
static rnnc_status run_direction(const run_ctx *c, int layer, int dir, const double *in,
                                 bool in_bf, double *out)
{
    rows_job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    int n = thread_count(c->B);
    for (int k = 0; k < n; k++) {
        jobs[k] = (rows_job){*c, layer, dir, in, in_bf, out, RNNC_OK, ""};
        jobs[k].c.b0 = c->B * k / n;
        jobs[k].c.nb = c->B * (k + 1) / n - jobs[k].c.b0;
    }
    for (int k = 1; k < n; k++)
        started[k] = pthread_create(&tid[k], NULL, rows_thread, &jobs[k]) == 0;
    for (int k = 0; k < n; k++)
        if (k == 0 || !started[k]) /* here, when a thread could not be had */
            rows_thread(&jobs[k]);
    for (int k = 1; k < n; k++)
        if (started[k])
            pthread_join(tid[k], NULL);
    for (int k = 0; k < n; k++)
        if (jobs[k].st != RNNC_OK)
            return err_fail(jobs[k].st, "%s", jobs[k].err);
    return RNNC_OK;
}

/* Inverted dropout on a layer's output before the next layer reads it. */
static void dropout_between(const run_ctx *c, int layer, double *buf)
{
    uint64_t site = rt_dropout_site_layer(layer);
    double p = c->s->dropout, scale = cm_dropout_scale(p);
    int64_t n = c->T * c->B * c->width;
    for (int64_t i = 0; i < n; i++)
        buf[i] = cm_dropout_keep(c->s->seed, site, (uint64_t)i, p) ? buf[i] * scale : 0.0;
}

static void write_y(const run_ctx *c, const double *out)
{
    for (int64_t t = 0; t < c->T; t++)
        for (int64_t b = 0; b < c->B; b++) {
            int64_t r = c->s->batch_first ? b * c->T + t : t * c->B + b;
            memcpy(c->q->y + r * c->width, out + (t * c->B + b) * c->width,
                   (size_t)c->width * sizeof(double));
        }
}

static rnnc_status run_layers(const run_ctx *c, double *bufs[2])
{
    const double *in = c->q->x;
    bool in_bf = c->s->batch_first;
    size_t n = (size_t)(c->T * c->B * c->width);
    for (int l = 0; l < c->s->layers; l++) {
        double *out = bufs[l & 1];
        memset(out, 0, n * sizeof(double)); /* rows past their length stay zero */
        for (int d = 0; d < c->s->dirs; d++) {
            rnnc_status st = run_direction(c, l, d, in, in_bf, out);
            if (st != RNNC_OK)
                return st;
        }
        if (c->q->training && c->s->dropout > 0.0 && l + 1 < c->s->layers)
            dropout_between(c, l, out);
        in = out;
        in_bf = false;
    }
    write_y(c, bufs[(c->s->layers - 1) & 1]);
    return RNNC_OK;
}

rnnc_status rt_interp_run(const rt_spec *s, const rt_weights_f64 *w, const rt_seq_f64 *q)
{
    rnnc_status st = check_run(s, w, q);
    if (st != RNNC_OK)
        return st;
    run_ctx c = {s, w, q, q->seq_len, q->batch, s->dirs * s->hout, 0, q->batch};
    if (c.width > (INT64_MAX / 8) / c.T / c.B)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: output too large");
    size_t n = (size_t)(c.T * c.B * c.width);
    double *bufs[2] = {malloc(n * sizeof(double)), malloc(n * sizeof(double))};
    if (!bufs[0] || !bufs[1]) {
        st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for layer outputs");
        goto free_bufs;
    }
    st = run_layers(&c, bufs);
free_bufs:
    free(bufs[0]);
    free(bufs[1]);
    return st;
}
