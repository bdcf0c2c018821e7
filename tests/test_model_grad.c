/*
 * test_model_grad.c: rnnc_model_backward and rnnc_model_weight_grad on the
 * interp backend.  The gradients through the public API equal the double
 * oracle's on the same weights (1e-6: only the fp32 rounding differs), and
 * each named weight's gradient is that weight's (central differences of
 * the public forward at sampled elements); the call order is checked as on
 * cudnn (a training forward first, one backward per forward, gradients
 * only after a backward), and the CPU backend refuses backward.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "runtime/interp/interp.h"
#include "testutil.h"

typedef struct fixture {
    rnnc_model *m;
    int64_t T, B, I, ny, ns[2];
    int n_states;
    float *x, *y, *dy, *dx, *init[2], *final[2], *dfinal[2], *dinit[2];
    int64_t len[3];
} fixture;

static void fixture_init(fixture *f, rnnc_backend be, uint64_t *rng)
{
    rnnc_cell *cell;
    rnnc_model_desc d;
    assert_ok(rnnc_cell_builtin(&cell, "lstm", NULL));
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = 3;
    d.hidden_size = 4;
    d.proj_size = 2;
    d.num_layers = 2;
    d.bidirectional = true;
    d.batch_first = true;
    d.dropout = 0.25;
    d.seed = 99;
    d.backend = be;
    memset(f, 0, sizeof *f);
    assert_ok(rnnc_model_create(&f->m, &d));
    rnnc_cell_destroy(cell);
    tu_set_random_weights(f->m, rng, -0.5, 0.5);
    f->T = 5, f->B = 3, f->I = 3, f->n_states = 2;
    int64_t hout;
    assert_ok(rnnc_model_output_size(f->m, &hout));
    f->ny = f->T * f->B * 2 * hout;
    f->x = malloc(sizeof(float) * (size_t)(f->T * f->B * f->I));
    f->dx = malloc(sizeof(float) * (size_t)(f->T * f->B * f->I));
    f->y = malloc(sizeof(float) * (size_t)f->ny);
    f->dy = malloc(sizeof(float) * (size_t)f->ny);
    tu_fill_f32(f->x, (size_t)(f->T * f->B * f->I), rng, -1, 1);
    tu_fill_f32(f->dy, (size_t)f->ny, rng, -1, 1);
    for (int k = 0; k < 2; k++) {
        int64_t n;
        assert_ok(rnnc_model_state_size(f->m, k, &n));
        f->ns[k] = 4 * f->B * n;
        f->init[k] = malloc(sizeof(float) * (size_t)f->ns[k]);
        f->final[k] = malloc(sizeof(float) * (size_t)f->ns[k]);
        f->dfinal[k] = malloc(sizeof(float) * (size_t)f->ns[k]);
        f->dinit[k] = malloc(sizeof(float) * (size_t)f->ns[k]);
        tu_fill_f32(f->init[k], (size_t)f->ns[k], rng, -1, 1);
        tu_fill_f32(f->dfinal[k], (size_t)f->ns[k], rng, -1, 1);
    }
    int64_t lens[3] = {5, 2, 4};
    memcpy(f->len, lens, sizeof lens);
}

static void fixture_free(fixture *f)
{
    free(f->x), free(f->dx), free(f->y), free(f->dy);
    for (int k = 0; k < 2; k++)
        free(f->init[k]), free(f->final[k]), free(f->dfinal[k]), free(f->dinit[k]);
    rnnc_model_destroy(f->m);
}

static rnnc_status forward(fixture *f, bool training)
{
    const void *init[2] = {f->init[0], f->init[1]};
    void *final[2] = {f->final[0], f->final[1]};
    rnnc_forward_args a = {.seq_len = f->T, .batch = f->B, .x = f->x, .init = init,
                           .lengths = f->len, .y = f->y, .final = final, .training = training};
    return rnnc_model_forward(f->m, &a);
}

static rnnc_status backward(fixture *f)
{
    const void *dfinal[2] = {f->dfinal[0], f->dfinal[1]};
    void *dinit[2] = {f->dinit[0], f->dinit[1]};
    rnnc_backward_args b = {.dy = f->dy, .dfinal = dfinal, .dx = f->dx, .dinit = dinit};
    tu_poison_f32(f->dx, (size_t)(f->T * f->B * f->I));
    for (int k = 0; k < 2; k++)
        tu_poison_f32(f->dinit[k], (size_t)f->ns[k]);
    return rnnc_model_backward(f->m, &b);
}

static double *widen(const float *p, int64_t n)
{
    double *d = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        d[i] = p[i];
    return d;
}

/* The same gradients from the oracle, in double, on the model's weights. */
static void test_matches_oracle(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    fixture f;
    fixture_init(&f, RNNC_BACKEND_INTERP, &rng);
    assert_ok(forward(&f, true));
    assert_ok(backward(&f));
    rnnc_model *m = f.m;
    int nw = m->n_weights;
    double **w = calloc((size_t)nw, sizeof *w), **dw = calloc((size_t)nw, sizeof *dw);
    for (int i = 0; i < nw; i++) { /* api weights are pseudo-major, as rt_weights */
        w[i] = widen(m->weights[i].data, m->weights[i].count);
        dw[i] = malloc(sizeof(double) * (size_t)m->weights[i].count);
    }
    double *x = widen(f.x, f.T * f.B * f.I), *dy = widen(f.dy, f.ny);
    double *init[2], *dfinal[2], *dinit[2], *dx = malloc(sizeof(double) * (size_t)(f.T * f.B * f.I));
    for (int k = 0; k < 2; k++) {
        init[k] = widen(f.init[k], f.ns[k]);
        dfinal[k] = widen(f.dfinal[k], f.ns[k]);
        dinit[k] = malloc(sizeof(double) * (size_t)f.ns[k]);
    }
    rt_weights_f64 wf = {(const double *const *)w, m->spec.fn[0]->n_params, 4};
    rt_seq_f64 q = {f.T, f.B, x, (const double *const *)init, f.len, NULL, NULL, true};
    rt_grad_f64 g = {dy, (const double *const *)dfinal, dx, dinit, dw};
    assert_ok(rt_interp_grad(&m->spec, &wf, &q, &g));
    if (tu_rel_err_f32(f.dx, dx, (size_t)(f.T * f.B * f.I)) > 1e-6)
        fail_msg("dx differs from the oracle");
    for (int k = 0; k < 2; k++)
        if (tu_rel_err_f32(f.dinit[k], dinit[k], (size_t)f.ns[k]) > 1e-6)
            fail_msg("dinit[%d] differs from the oracle", k);
    for (int i = 0; i < nw; i++) {
        float *got = malloc(sizeof(float) * (size_t)m->weights[i].count);
        tu_poison_f32(got, (size_t)m->weights[i].count);
        assert_ok(rnnc_model_weight_grad(m, m->weights[i].name, got, m->weights[i].count));
        if (tu_rel_err_f32(got, dw[i], (size_t)m->weights[i].count) > 1e-6)
            fail_msg("gradient of %s differs from the oracle", m->weights[i].name);
        free(got);
        free(w[i]), free(dw[i]);
    }
    for (int k = 0; k < 2; k++)
        free(init[k]), free(dfinal[k]), free(dinit[k]);
    free(w), free(dw), free(x), free(dy), free(dx);
    fixture_free(&f);
}

static double api_loss(fixture *f)
{
    assert_ok(forward(f, true));
    double l = 0;
    for (int64_t i = 0; i < f->ny; i++)
        l += (double)f->y[i] * f->dy[i];
    for (int k = 0; k < 2; k++)
        for (int64_t i = 0; i < f->ns[k]; i++)
            l += (double)f->final[k][i] * f->dfinal[k][i];
    return l;
}

/* Each name's gradient is that weight's: central differences of the
 * public fp32 forward at a few elements of every weight. */
static void test_names(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    fixture f;
    fixture_init(&f, RNNC_BACKEND_INTERP, &rng);
    assert_ok(forward(&f, true));
    assert_ok(backward(&f));
    for (int i = 0; i < rnnc_model_weight_count(f.m); i++) {
        const api_weight *aw = &f.m->weights[i];
        float *g = malloc(sizeof(float) * (size_t)aw->count);
        float *w = malloc(sizeof(float) * (size_t)aw->count);
        assert_ok(rnnc_model_weight_grad(f.m, aw->name, g, aw->count));
        memcpy(w, aw->data, sizeof(float) * (size_t)aw->count);
        double gmax = 0;
        for (int64_t e = 0; e < aw->count; e++)
            gmax = fmax(gmax, fabs(g[e]));
        for (int s = 0; s < 3; s++) {
            int64_t e = (int64_t)(tu_uniform(&rng, 0, 1) * (double)aw->count) % aw->count;
            const float h = 1e-2f, keep = w[e];
            w[e] = keep + h;
            assert_ok(rnnc_model_set_weight(f.m, aw->name, w, aw->count));
            double up = api_loss(&f);
            w[e] = keep - h;
            assert_ok(rnnc_model_set_weight(f.m, aw->name, w, aw->count));
            double down = api_loss(&f);
            w[e] = keep;
            assert_ok(rnnc_model_set_weight(f.m, aw->name, w, aw->count));
            double num = (up - down) / (2 * (double)h);
            if (fabs(num - g[e]) > 2e-3 * fmax(gmax, 1.0))
                fail_msg("%s[%lld]: gradient %g, central difference %g", aw->name,
                         (long long)e, (double)g[e], num);
        }
        free(g), free(w);
    }
    fixture_free(&f);
}

static void test_call_order(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    fixture f;
    fixture_init(&f, RNNC_BACKEND_INTERP, &rng);
    float g[64];
    assert_status(backward(&f), RNNC_ERR_STATE);
    assert_status(rnnc_model_weight_grad(f.m, "bias_ih_l0", g, 16), RNNC_ERR_STATE);
    assert_ok(forward(&f, false));
    assert_status(backward(&f), RNNC_ERR_STATE);
    assert_ok(forward(&f, true));
    rnnc_backward_args none = {0};
    assert_status(rnnc_model_backward(f.m, &none), RNNC_ERR_INVALID_ARG);
    assert_ok(backward(&f));
    assert_status(backward(&f), RNNC_ERR_STATE); /* one backward per forward */
    assert_ok(rnnc_model_weight_grad(f.m, "bias_ih_l0", g, 16));
    assert_status(rnnc_model_weight_grad(f.m, "bias_ih_l0", g, 15), RNNC_ERR_SHAPE);
    assert_status(rnnc_model_weight_grad(f.m, "no_such_l0", g, 16), RNNC_ERR_NOT_FOUND);
    fixture_free(&f);
}

/* max|a - b| / max|b| over two fp32 arrays (+inf on a NaN). */
static double rel_err_ff(const float *a, const float *b, size_t n)
{
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]))
            return INFINITY;
        d = fmax(d, fabs((double)a[i] - b[i]));
        r = fmax(r, fabs((double)b[i]));
    }
    return r > 0 ? d / r : d;
}

/* Packed input (PyTorch's PackedSequence) through the backward: the
 * interp runs it on a padded copy, so dx comes back packed and every
 * gradient equals the padded call's with the same lengths. */
static void test_packed(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    fixture f;
    fixture_init(&f, RNNC_BACKEND_INTERP, &rng);
    int64_t T = f.T, B = f.B, I = f.I, fy = f.ny / (T * B);
    int64_t sorted[3] = {5, 4, 2}, bs[5];
    memcpy(f.len, sorted, sizeof sorted);
    for (int64_t t = 0; t < T; t++)
        bs[t] = (sorted[0] > t) + (sorted[1] > t) + (sorted[2] > t);
    assert_ok(forward(&f, true));
    assert_ok(backward(&f));
    int nw = rnnc_model_weight_count(f.m);
    float **dw = calloc((size_t)nw, sizeof *dw);
    for (int i = 0; i < nw; i++) {
        dw[i] = malloc(sizeof(float) * (size_t)f.m->weights[i].count);
        assert_ok(rnnc_model_weight_grad(f.m, f.m->weights[i].name, dw[i], f.m->weights[i].count));
    }
    int64_t rows = api_packed_rows(bs, T);
    float *xp = malloc(sizeof(float) * (size_t)(rows * I)), *yp = malloc(sizeof(float) * (size_t)(rows * fy));
    float *dyp = malloc(sizeof(float) * (size_t)(rows * fy)), *dxp = malloc(sizeof(float) * (size_t)(rows * I));
    float *dxwant = malloc(sizeof(float) * (size_t)(rows * I)), *dinit[2], *g = NULL;
    api_pack(f.x, bs, T, B, I, sizeof(float), true, xp); /* the fixture is batch_first */
    api_pack(f.dy, bs, T, B, fy, sizeof(float), true, dyp);
    api_pack(f.dx, bs, T, B, I, sizeof(float), true, dxwant);
    for (int k = 0; k < 2; k++) {
        dinit[k] = f.dinit[k];
        f.dinit[k] = malloc(sizeof(float) * (size_t)f.ns[k]);
    }
    const void *init[2] = {f.init[0], f.init[1]};
    rnnc_forward_args a = {.seq_len = T, .batch = B, .x = xp, .init = init, .y = yp,
                           .training = true, .batch_sizes = bs};
    assert_ok(rnnc_model_forward(f.m, &a));
    const void *dfinal[2] = {f.dfinal[0], f.dfinal[1]};
    void *dinit_out[2] = {f.dinit[0], f.dinit[1]};
    tu_poison_f32(dxp, (size_t)(rows * I));
    rnnc_backward_args b = {.dy = dyp, .dfinal = dfinal, .dx = dxp, .dinit = dinit_out};
    assert_ok(rnnc_model_backward(f.m, &b));
    if (rel_err_ff(dxp, dxwant, (size_t)(rows * I)) > 1e-6)
        fail_msg("packed dx differs from the padded call's");
    for (int k = 0; k < 2; k++)
        if (rel_err_ff(f.dinit[k], dinit[k], (size_t)f.ns[k]) > 1e-6)
            fail_msg("packed dinit[%d] differs from the padded call's", k);
    for (int i = 0; i < nw; i++) {
        int64_t n = f.m->weights[i].count;
        g = realloc(g, sizeof(float) * (size_t)n);
        tu_poison_f32(g, (size_t)n);
        assert_ok(rnnc_model_weight_grad(f.m, f.m->weights[i].name, g, n));
        if (rel_err_ff(g, dw[i], (size_t)n) > 1e-6)
            fail_msg("packed gradient of %s differs", f.m->weights[i].name);
        free(dw[i]);
    }
    for (int k = 0; k < 2; k++)
        free(dinit[k]);
    free(g), free(dw), free(xp), free(yp), free(dyp), free(dxp), free(dxwant);
    fixture_free(&f);
}

static void test_cpu_refuses(void **st)
{
    (void)st;
    if (!rnnc_backend_available(RNNC_BACKEND_CPU))
        skip();
    uint64_t rng = tu_seed();
    fixture f;
    fixture_init(&f, RNNC_BACKEND_CPU, &rng);
    assert_ok(forward(&f, true));
    assert_status(backward(&f), RNNC_ERR_UNSUPPORTED);
    assert_non_null(strstr(rnnc_last_error(), "cpu"));
    float g[16];
    assert_status(rnnc_model_weight_grad(f.m, "bias_ih_l0", g, 16), RNNC_ERR_UNSUPPORTED);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_oracle),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_call_order),
        cmocka_unit_test(test_packed),
        cmocka_unit_test(test_cpu_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
