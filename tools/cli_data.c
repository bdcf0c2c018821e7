/*
 * cli_data.c: the buffers of one forward, sized from a model, and the
 * seeded random weights and inputs that `rnnc random`, `compare` and `demo`
 * make.  The stream is splitmix64 so the same seed gives the same data on
 * every machine.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

double cli_uniform(cli_rng *r, double lo, double hi)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return lo + (hi - lo) * (double)(z >> 11) * 0x1.0p-53;
}

void cli_fill(cli_rng *r, float *p, int64_t n, double lo, double hi)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)cli_uniform(r, lo, hi);
}

rnnc_status cli_weight_shape(const rnnc_model *m, int i, const char **name, int64_t shape[2],
                             int *rank, int64_t *numel)
{
    shape[0] = shape[1] = 1;
    rnnc_status s = rnnc_model_weight_info(m, i, name, 2, shape, rank);
    if (s == RNNC_OK)
        *numel = shape[0] * (*rank == 2 ? shape[1] : 1);
    return s;
}

rnnc_status cli_random_weights(const rnnc_model *m, int64_t hidden, cli_rng *r, rnnc_tensors *ts)
{
    double k = 1.0 / sqrt((double)hidden);
    for (int i = 0; i < rnnc_model_weight_count(m); i++) {
        const char *name;
        int64_t shape[2], n;
        int rank;
        rnnc_status s = cli_weight_shape(m, i, &name, shape, &rank, &n);
        if (s != RNNC_OK)
            return s;
        float *w = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
        if (!w)
            return cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory for weight '%s'", name);
        cli_fill(r, w, n, -k, k);
        s = rnnc_tensors_add(ts, name, RNNC_F32, rank, shape, w);
        free(w);
        if (s != RNNC_OK)
            return s;
    }
    return RNNC_OK;
}

int64_t cli_x_numel(const cli_io *io)
{
    return io->T * io->B * io->I;
}

int64_t cli_y_numel(const cli_io *io)
{
    return io->T * io->B * io->y_feat;
}

int64_t cli_state_numel(const cli_io *io, int s)
{
    return io->rows * io->B * io->state_feat[s];
}

static float *alloc_f32(int64_t n, bool poison)
{
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; p && poison && i < n; i++)
        p[i] = NAN;
    return p;
}

static rnnc_status io_sizes(cli_io *io, const rnnc_model *m, const rnnc_cell *cell,
                            const cli_model_opts *o)
{
    int64_t hout;
    rnnc_status s = rnnc_model_output_size(m, &hout);
    if (s != RNNC_OK)
        return s;
    int dirs = o->bidirectional ? 2 : 1;
    io->rows = (o->layers > 0 ? o->layers : 1) * dirs;
    io->y_feat = dirs * hout;
    io->n_states = rnnc_cell_state_count(cell);
    if (io->n_states > CLI_MAX_STATES)
        return cli_error(RNNC_ERR_UNSUPPORTED, "cell has %d states; rnnc handles up to %d",
                         io->n_states, CLI_MAX_STATES);
    for (int i = 0; i < io->n_states && s == RNNC_OK; i++)
        s = rnnc_model_state_size(m, i, &io->state_feat[i]);
    return s;
}

rnnc_status cli_io_alloc(cli_io *io, const rnnc_model *m, const rnnc_cell *cell,
                         const cli_model_opts *o, int64_t T, int64_t B)
{
    memset(io, 0, sizeof *io);
    io->T = T, io->B = B, io->I = o->input_size;
    io->batch_first = o->batch_first;
    rnnc_status s = io_sizes(io, m, cell, o);
    if (s != RNNC_OK)
        return s;
    io->x = alloc_f32(cli_x_numel(io), false);
    io->y = alloc_f32(cli_y_numel(io), true);
    io->lengths = malloc(sizeof(int64_t) * (size_t)B);
    bool ok = io->x && io->y && io->lengths;
    for (int i = 0; i < io->n_states; i++) {
        io->init[i] = alloc_f32(cli_state_numel(io, i), false);
        io->final[i] = alloc_f32(cli_state_numel(io, i), true);
        ok = ok && io->init[i] && io->final[i];
    }
    io->dtype = o->dtype;
    if (ok && io->dtype != RNNC_F32) {
        size_t es = rnnc_dtype_size(io->dtype);
        ok = (io->hx = malloc(es * (size_t)cli_x_numel(io) + 1)) &&
             (io->hy = malloc(es * (size_t)cli_y_numel(io) + 1));
        for (int i = 0; ok && i < io->n_states; i++)
            ok = (io->hinit[i] = malloc(es * (size_t)cli_state_numel(io, i) + 1)) &&
                 (io->hfinal[i] = malloc(es * (size_t)cli_state_numel(io, i) + 1));
    }
    return ok ? RNNC_OK : cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory for the data");
}

void cli_io_free(cli_io *io)
{
    free(io->x);
    free(io->y);
    free(io->hx);
    free(io->hy);
    free(io->lengths);
    for (int i = 0; i < CLI_MAX_STATES; i++) {
        free(io->init[i]);
        free(io->final[i]);
        free(io->hinit[i]);
        free(io->hfinal[i]);
    }
    memset(io, 0, sizeof *io);
}

rnnc_forward_args cli_io_args(cli_io *io, bool training)
{
    for (int i = 0; i < io->n_states; i++) {
        io->init_ptr[i] = io->has_init[i] ? io->init[i] : NULL;
        io->final_ptr[i] = io->final[i];
    }
    rnnc_forward_args a = {
        .seq_len = io->T,
        .batch = io->B,
        .x = io->x,
        .init = io->n_states ? io->init_ptr : NULL,
        .lengths = io->has_lengths ? io->lengths : NULL,
        .y = io->y,
        .final = io->n_states ? io->final_ptr : NULL,
        .training = training,
    };
    if (io->dtype == RNNC_F32)
        return a;
    /* the fp32 data rounded to the model's dtype (conversions of valid
     * buffers between float dtypes cannot fail) */
    (void)rnnc_convert(io->hx, io->dtype, io->x, RNNC_F32, cli_x_numel(io));
    a.x = io->hx;
    a.y = io->hy;
    for (int i = 0; i < io->n_states; i++) {
        if (io->has_init[i]) {
            (void)rnnc_convert(io->hinit[i], io->dtype, io->init[i], RNNC_F32,
                               cli_state_numel(io, i));
            io->init_ptr[i] = io->hinit[i];
        }
        io->final_ptr[i] = io->hfinal[i];
    }
    return a;
}

void cli_io_finish(cli_io *io)
{
    if (io->dtype == RNNC_F32)
        return;
    (void)rnnc_convert(io->y, RNNC_F32, io->hy, io->dtype, cli_y_numel(io));
    for (int i = 0; i < io->n_states; i++)
        (void)rnnc_convert(io->final[i], RNNC_F32, io->hfinal[i], io->dtype,
                           cli_state_numel(io, i));
}

rnnc_status cli_half_grads_in(cli_half_grads *h, const cli_io *io, rnnc_backward_args *b,
                              const void **dfinal, void **dinit)
{
    rnnc_dtype dt = io->dtype;
    size_t es = rnnc_dtype_size(dt);
    bool ok = (h->dy = malloc(es * (size_t)cli_y_numel(io) + 1)) &&
              (h->dx = malloc(es * (size_t)cli_x_numel(io) + 1));
    for (int k = 0; ok && k < io->n_states; k++)
        ok = (h->dfinal[k] = malloc(es * (size_t)cli_state_numel(io, k) + 1)) &&
             (h->dinit[k] = malloc(es * (size_t)cli_state_numel(io, k) + 1));
    if (!ok)
        return cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory for the gradients");
    /* conversions of valid float buffers cannot fail */
    (void)rnnc_convert(h->dy, dt, b->dy, RNNC_F32, cli_y_numel(io));
    for (int k = 0; k < io->n_states; k++) {
        if (dfinal[k]) {
            (void)rnnc_convert(h->dfinal[k], dt, dfinal[k], RNNC_F32, cli_state_numel(io, k));
            dfinal[k] = h->dfinal[k];
        }
        dinit[k] = h->dinit[k];
    }
    b->dy = h->dy, b->dx = h->dx;
    return RNNC_OK;
}

void cli_half_grads_out(const cli_half_grads *h, const cli_io *io, float *dx,
                        float *const *dinit)
{
    (void)rnnc_convert(dx, RNNC_F32, h->dx, io->dtype, cli_x_numel(io));
    for (int k = 0; k < io->n_states; k++)
        (void)rnnc_convert(dinit[k], RNNC_F32, h->dinit[k], io->dtype, cli_state_numel(io, k));
}

void cli_half_grads_free(cli_half_grads *h)
{
    free(h->dy), free(h->dx);
    for (int k = 0; k < CLI_MAX_STATES; k++)
        free(h->dfinal[k]), free(h->dinit[k]);
}

rnnc_status cli_random_inputs(cli_io *io, const rnnc_cell *cell, cli_rng *r, bool zero_states,
                              int64_t min_length, rnnc_tensors *ts)
{
    int64_t shape[3];
    cli_fill(r, io->x, cli_x_numel(io), -1, 1);
    cli_seq_shape(io, io->I, shape);
    rnnc_status s = ts ? rnnc_tensors_add(ts, "x", RNNC_F32, 3, shape, io->x) : RNNC_OK;
    for (int i = 0; i < io->n_states && !zero_states && s == RNNC_OK; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s0", rnnc_cell_state_name(cell, i));
        cli_fill(r, io->init[i], cli_state_numel(io, i), -1, 1);
        io->has_init[i] = true;
        cli_state_shape(io, i, shape);
        s = ts ? rnnc_tensors_add(ts, name, RNNC_F32, 3, shape, io->init[i]) : RNNC_OK;
    }
    if (min_length > 0 && s == RNNC_OK) {
        int64_t lo = min_length < io->T ? min_length : io->T;
        for (int64_t b = 0; b < io->B; b++)
            io->lengths[b] = lo + (int64_t)cli_uniform(r, 0, (double)(io->T - lo + 1));
        io->has_lengths = true;
        s = ts ? rnnc_tensors_add(ts, "lengths", RNNC_I64, 1, &io->B, io->lengths) : RNNC_OK;
    }
    return s;
}

double cli_rel_err(const float *out, const float *ref, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)out[i] - (double)ref[i]);
        if (!(d == d))
            return INFINITY;
        num = d > num ? d : num;
        den = fabs((double)ref[i]) > den ? fabs((double)ref[i]) : den;
    }
    return den > 0 ? num / den : num;
}

double cli_io_rel_err(const cli_io *out, const cli_io *ref)
{
    double e = cli_rel_err(out->y, ref->y, cli_y_numel(ref));
    for (int s = 0; s < ref->n_states; s++) {
        double es = cli_rel_err(out->final[s], ref->final[s], cli_state_numel(ref, s));
        e = es > e || !(es == es) ? es : e;
    }
    return e;
}

void cli_io_copy_inputs(cli_io *dst, const cli_io *src)
{
    memcpy(dst->x, src->x, sizeof(float) * (size_t)cli_x_numel(src));
    for (int s = 0; s < src->n_states; s++) {
        memcpy(dst->init[s], src->init[s], sizeof(float) * (size_t)cli_state_numel(src, s));
        dst->has_init[s] = src->has_init[s];
    }
    memcpy(dst->lengths, src->lengths, sizeof(int64_t) * (size_t)src->B);
    dst->has_lengths = src->has_lengths;
}
