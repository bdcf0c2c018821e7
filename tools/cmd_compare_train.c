/*
 * cmd_compare_train.c: `rnnc compare --training`, the training step of
 * each backend: the time of a training forward plus its backward
 * (rnnc_model_time_training) on the same seeded dy and final-state
 * gradients, and the agreement of the gradients (dx, the initial states'
 * and every weight's) with the interpreter's and cuDNN's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmd_compare.h"

void cli_grads_free(cli_grads *g)
{
    free(g->dy);
    free(g->dx);
    free(g->dw);
    free(g->w_count);
    for (int k = 0; k < CLI_MAX_STATES; k++)
        free(g->dfinal[k]), free(g->dinit[k]);
    memset(g, 0, sizeof *g);
}

static float *alloc_f32(int64_t n)
{
    return malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
}

rnnc_status cli_train_inputs(cli_compare *c, const cli_io *in, cli_rng *r)
{
    cli_grads *g = &c->grad_in;
    if (!(g->dy = alloc_f32(cli_y_numel(in))))
        return cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory for dy");
    cli_fill(r, g->dy, cli_y_numel(in), -1, 1);
    for (int k = 0; k < in->n_states; k++) {
        if (!(g->dfinal[k] = alloc_f32(cli_state_numel(in, k))))
            return cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory for dfinal");
        cli_fill(r, g->dfinal[k], cli_state_numel(in, k), -1, 1);
    }
    return RNNC_OK;
}

/* The row's output buffers, poisoned: a gradient not written shows as NaN. */
static rnnc_status alloc_outputs(const rnnc_model *m, const cli_io *io, cli_grads *g)
{
    if (!(g->dx = alloc_f32(cli_x_numel(io))))
        return cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory for dx");
    for (int64_t i = 0; i < cli_x_numel(io); i++)
        g->dx[i] = NAN;
    for (int k = 0; k < io->n_states; k++) {
        if (!(g->dinit[k] = alloc_f32(cli_state_numel(io, k))))
            return cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory for dinit");
        for (int64_t i = 0; i < cli_state_numel(io, k); i++)
            g->dinit[k][i] = NAN;
    }
    g->n_weights = rnnc_model_weight_count(m);
    if (!(g->w_count = calloc((size_t)g->n_weights + 1, sizeof *g->w_count)))
        return cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    g->n_dw = 0;
    for (int i = 0; i < g->n_weights; i++) {
        const char *name;
        int64_t shape[2];
        int rank;
        rnnc_status s = cli_weight_shape(m, i, &name, shape, &rank, &g->w_count[i]);
        if (s != RNNC_OK)
            return s;
        g->n_dw += g->w_count[i];
    }
    if (!(g->dw = alloc_f32(g->n_dw)))
        return cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory for the weight gradients");
    return RNNC_OK;
}

static rnnc_status read_weight_grads(rnnc_model *m, cli_grads *g)
{
    float *p = g->dw;
    for (int i = 0; i < g->n_weights; i++) {
        const char *name;
        int64_t shape[2];
        int rank;
        rnnc_status s = rnnc_model_weight_info(m, i, &name, 2, shape, &rank);
        if (s == RNNC_OK)
            s = rnnc_model_weight_grad(m, name, p, g->w_count[i]);
        if (s != RNNC_OK)
            return s;
        p += g->w_count[i];
    }
    return RNNC_OK;
}

/* The interpreter is timed on one step (it is slow), the others on --iters. */
rnnc_status cli_train_row(const cli_compare *c, rnnc_model *m, cli_compare_row *r)
{
    cli_grads *g = &r->grad;
    rnnc_status s = alloc_outputs(m, &r->io, g);
    if (s != RNNC_OK)
        return s;
    const void *dfinal[CLI_MAX_STATES];
    void *dinit[CLI_MAX_STATES];
    for (int k = 0; k < r->io.n_states; k++)
        dfinal[k] = c->grad_in.dfinal[k], dinit[k] = g->dinit[k];
    rnnc_forward_args a = cli_io_args(&r->io, true);
    rnnc_backward_args b = {c->grad_in.dy, dfinal, g->dx, dinit};
    cli_half_grads h = {0};
    rnnc_dtype dt = r->io.dtype;
    if (dt != RNNC_F32 && (s = cli_half_grads_in(&h, &r->io, &b, dfinal, dinit)) != RNNC_OK)
        goto free_half;
    bool interp = r->backend == RNNC_BACKEND_INTERP;
    r->runs = interp ? 1 : c->iters;
    s = rnnc_model_time_training(m, &a, &b, interp ? 0 : c->warmup, r->runs, &r->ms);
    if (s == RNNC_OK)
        s = read_weight_grads(m, g);
    if (s == RNNC_OK && dt != RNNC_F32) {
        cli_half_grads_out(&h, &r->io, g->dx, g->dinit);
        cli_io_finish(&r->io); /* y and the final states, for the err columns */
    }
free_half:
    cli_half_grads_free(&h);
    return s;
}

static double worse(double a, double b)
{
    return b > a || !(b == b) ? b : a;
}

double cli_train_rel_err(const cli_compare *c, const cli_compare_row *out,
                         const cli_compare_row *ref)
{
    (void)c;
    const cli_grads *o = &out->grad, *g = &ref->grad;
    double e = cli_rel_err(o->dx, g->dx, cli_x_numel(&ref->io));
    for (int k = 0; k < ref->io.n_states; k++)
        e = worse(e, cli_rel_err(o->dinit[k], g->dinit[k], cli_state_numel(&ref->io, k)));
    const float *po = o->dw, *pg = g->dw;
    for (int i = 0; i < g->n_weights; i++) { /* each weight against its own scale */
        e = worse(e, cli_rel_err(po, pg, g->w_count[i]));
        po += g->w_count[i], pg += g->w_count[i];
    }
    return e;
}
