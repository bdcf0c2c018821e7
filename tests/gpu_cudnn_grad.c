/*
 * gpu_cudnn_grad.c: the cudnn backend's backward against central
 * differences of the interpreter in double precision (tiny sizes): dx,
 * dhx, dcx and every weight gradient within 1e-3 relative, for every mode,
 * 2 layers, bidirectional, with lengths, and LSTM with proj_size.  Then
 * the call-order and argument checks, dropout, fp16 and TF32.
 * Exits 77 without a GPU.
 */
#include "gpu_cudnn_fixture.h"

static uint64_t rng;

/* The loss whose gradient is checked: sum(y * gy) + sum_k sum(final_k * gf_k). */
typedef struct loss {
    float *gy, *gf[FX_MAX_STATES];
} loss;

static double loss_value(const fx_model *m, fx_data *d, const loss *l)
{
    fx_reference(m, d, true);
    double v = 0;
    for (int64_t i = 0; i < d->ny; i++)
        v += d->yd[i] * l->gy[i];
    for (int k = 0; k < d->n_states; k++)
        for (int64_t i = 0; i < d->ns[k]; i++)
            v += d->finald[k][i] * l->gf[k][i];
    return v;
}

/* Central difference of the loss in each element of v[n]. */
static void numeric_grad(const fx_model *m, fx_data *d, const loss *l, double *v, int64_t n,
                         double *g)
{
    const double eps = 1e-6;
    for (int64_t i = 0; i < n; i++) {
        double keep = v[i];
        v[i] = keep + eps;
        double up = loss_value(m, d, l);
        v[i] = keep - eps;
        double down = loss_value(m, d, l);
        v[i] = keep;
        g[i] = (up - down) / (2 * eps);
    }
}

static double check_grad(const char *what, const fx_model *m, fx_data *d, const loss *l,
                         double *v, int64_t n, const float *got)
{
    double *num = fx_alloc((size_t)n * sizeof(double));
    numeric_grad(m, d, l, v, n, num);
    double err = tu_rel_err_f32(got, num, (size_t)n);
    if (err > 1e-3)
        fail_msg("%s: relative error %.3e > 1e-3 (got[0] %g, numeric[0] %g)", what, err,
                 (double)got[0], num[0]);
    free(num);
    return err;
}

static double check_weight_grads(void *st, const fx_model *m, fx_data *d, const loss *l)
{
    double worst = 0;
    for (int p = 0; p < m->pseudo; p++)
        for (int i = 0; i < m->n_params; i++) {
            int j = p * m->n_params + i;
            float *g = fx_alloc((size_t)m->numel[j] * sizeof(float));
            tu_poison_f32(g, (size_t)m->numel[j]);
            assert_ok(fb_backend_cudnn.weight_grad(st, p, i, g, m->numel[j]));
            char what[128];
            snprintf(what, sizeof what, "d %s pseudo-layer %d", m->fn->params[i].name, p);
            worst = fmax(worst, check_grad(what, m, d, l, m->wd[j], m->numel[j], g));
            free(g);
        }
    return worst;
}

static void grad_case(const char *cell, int64_t P, int dirs, bool lengths)
{
    fx_cfg c = {.cell = cell, .I = 3, .H = 4, .P = P, .layers = 2, .dirs = dirs};
    fx_model m;
    fx_model_init(&m, &c, &rng);
    fx_data d;
    fx_data_init(&d, &m, 4, 3, lengths, &rng);
    loss l = {0};
    float *dinit[FX_MAX_STATES] = {0};
    l.gy = fx_alloc((size_t)d.ny * sizeof(float));
    tu_fill_f32(l.gy, (size_t)d.ny, &rng, -1, 1);
    for (int k = 0; k < d.n_states; k++) {
        l.gf[k] = fx_alloc((size_t)d.ns[k] * sizeof(float));
        tu_fill_f32(l.gf[k], (size_t)d.ns[k], &rng, -1, 1);
        dinit[k] = fx_alloc((size_t)d.ns[k] * sizeof(float));
        tu_poison_f32(dinit[k], (size_t)d.ns[k]);
    }
    float *dx = fx_alloc((size_t)d.nx * sizeof(float));
    tu_poison_f32(dx, (size_t)d.nx);

    void *st = fx_cudnn(&m);
    rnnc_forward_args a = fx_args(&d, true);
    assert_ok(fb_backend_cudnn.forward(st, &a));
    rnnc_backward_args b = {.dy = l.gy, .dfinal = (const void *const *)l.gf, .dx = dx,
                            .dinit = (void *const *)dinit};
    assert_ok(fb_backend_cudnn.backward(st, &b));

    double ex = check_grad("dx", &m, &d, &l, d.xd, d.nx, dx), es = 0;
    for (int k = 0; k < d.n_states; k++)
        es = fmax(es, check_grad(m.fn->states[k].name, &m, &d, &l, d.initd[k], d.ns[k],
                                 dinit[k]));
    double ew = check_weight_grads(st, &m, &d, &l);
    printf("%-8s P=%lld L=2 D=%d %-8s  dx %.2e  dstate %.2e  dweights %.2e\n", cell,
           (long long)P, dirs, lengths ? "lengths" : "padded", ex, es, ew);

    fb_backend_cudnn.destroy(st);
    for (int k = 0; k < d.n_states; k++) {
        free(l.gf[k]);
        free(dinit[k]);
    }
    free(l.gy);
    free(dx);
    fx_data_free(&d);
    fx_model_free(&m);
}

static void test_gradients(void **state)
{
    (void)state;
    static const char *cells[] = {"lstm", "gru", "rnn_tanh", "rnn_relu"};
    for (size_t k = 0; k < 4; k++) {
        grad_case(cells[k], 0, 2, true);
        grad_case(cells[k], 0, 1, false);
    }
    grad_case("lstm", 2, 2, true);
}

/* ---------------------------------------------------------------- checks */

static void test_call_order(void **state)
{
    (void)state;
    fx_cfg c = {.cell = "lstm", .I = 3, .H = 4, .layers = 1, .dirs = 1};
    fx_model m;
    fx_model_init(&m, &c, &rng);
    fx_data d;
    fx_data_init(&d, &m, 4, 2, false, &rng);
    void *st = fx_cudnn(&m);
    float *dy = fx_alloc((size_t)d.ny * sizeof(float)), g[64];
    tu_fill_f32(dy, (size_t)d.ny, &rng, -1, 1);
    rnnc_backward_args b = {.dy = dy};

    assert_status(fb_backend_cudnn.backward(st, &b), RNNC_ERR_STATE);
    assert_status(fb_backend_cudnn.weight_grad(st, 0, 0, g, m.numel[0]), RNNC_ERR_STATE);
    rnnc_forward_args a = fx_args(&d, false);
    assert_ok(fb_backend_cudnn.forward(st, &a));
    assert_status(fb_backend_cudnn.backward(st, &b), RNNC_ERR_STATE);
    printf("backward after inference: %s\n", rnnc_last_error());
    assert_non_null(strstr(rnnc_last_error(), "backward needs a training forward first"));

    a = fx_args(&d, true);
    assert_ok(fb_backend_cudnn.forward(st, &a));
    b.dy = NULL;
    assert_status(fb_backend_cudnn.backward(st, &b), RNNC_ERR_INVALID_ARG);
    b.dy = dy;
    assert_ok(fb_backend_cudnn.backward(st, &b));
    assert_status(fb_backend_cudnn.backward(st, &b), RNNC_ERR_STATE); /* reserve is spent */
    assert_status(fb_backend_cudnn.weight_grad(st, 0, 0, g, m.numel[0] + 1), RNNC_ERR_SHAPE);
    assert_status(fb_backend_cudnn.weight_grad(st, 5, 0, g, m.numel[0]), RNNC_ERR_INVALID_ARG);
    fb_backend_cudnn.destroy(st);
    free(dy);
    fx_data_free(&d);
    fx_model_free(&m);
}

static void test_bad_lengths(void **state)
{
    (void)state;
    fx_cfg c = {.cell = "gru", .I = 3, .H = 4, .layers = 1, .dirs = 2};
    fx_model m;
    fx_model_init(&m, &c, &rng);
    fx_data d;
    fx_data_init(&d, &m, 5, 3, true, &rng);
    void *st = fx_cudnn(&m);
    const int64_t bad[] = {0, 6, -1};
    for (size_t i = 0; i < 3; i++) {
        d.lengths[1] = bad[i];
        rnnc_forward_args a = fx_args(&d, false);
        assert_status(fb_backend_cudnn.forward(st, &a), RNNC_ERR_SHAPE);
        printf("length %lld: %s\n", (long long)bad[i], rnnc_last_error());
    }
    fb_backend_cudnn.destroy(st);
    fx_data_free(&d);
    fx_model_free(&m);
}

/* Dropout acts between layers in training only. */
static void test_dropout(void **state)
{
    (void)state;
    fx_cfg c = {.cell = "lstm", .I = 6, .H = 8, .layers = 3, .dirs = 1, .dropout = 0.5,
                .seed = 1234};
    fx_model m;
    fx_model_init(&m, &c, &rng);
    fx_data d;
    fx_data_init(&d, &m, 6, 4, false, &rng);
    void *st = fx_cudnn(&m);
    rnnc_forward_args a = fx_args(&d, false);
    assert_ok(fb_backend_cudnn.forward(st, &a));
    fx_reference(&m, &d, false);
    double e = tu_rel_err_f32(d.y, d.yd, (size_t)d.ny);
    a = fx_args(&d, true);
    assert_ok(fb_backend_cudnn.forward(st, &a));
    double diff = tu_rel_err_f32(d.y, d.yd, (size_t)d.ny);
    printf("dropout 0.5: inference rel err %.2e, training differs by %.2e\n", e, diff);
    assert_true(e <= 1e-5);
    assert_true(diff > 1e-3 && isfinite(diff));
    fb_backend_cudnn.destroy(st);
    fx_data_free(&d);
    fx_model_free(&m);
}

static void to_f16(const float *src, uint16_t *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = fb_f32_to_f16(src[i]);
}

/* fp16 data on tensor cores (computing in fp32), and TF32 math. */
static void test_f16_and_tf32(void **state)
{
    (void)state;
    fx_cfg c = {.cell = "lstm", .I = 16, .H = 16, .layers = 2, .dirs = 2};
    fx_model m;
    fx_model_init(&m, &c, &rng);
    fx_data d;
    fx_data_init(&d, &m, 5, 8, true, &rng);
    fx_reference(&m, &d, false);

    m.s.math = RNNC_MATH_TF32;
    void *st = fx_cudnn(&m);
    rnnc_forward_args a = fx_args(&d, false);
    assert_ok(fb_backend_cudnn.forward(st, &a));
    double e32 = tu_rel_err_f32(d.y, d.yd, (size_t)d.ny);
    fb_backend_cudnn.destroy(st);

    m.s.math = RNNC_MATH_FFMA;
    m.s.dtype = RNNC_F16;
    /* Host data in the model's dtype; cuDNN also rounds the weights to fp16. */
    uint16_t *xh = fx_alloc((size_t)d.nx * 2), *yh = fx_alloc((size_t)d.ny * 2);
    uint16_t *ih[FX_MAX_STATES] = {0};
    to_f16(d.x, xh, d.nx);
    for (int k = 0; k < d.n_states; k++) {
        ih[k] = fx_alloc((size_t)d.ns[k] * 2);
        to_f16(d.init[k], ih[k], d.ns[k]);
    }
    st = fx_cudnn(&m);
    rnnc_forward_args h = {.seq_len = d.T, .batch = d.B, .x = xh,
                           .init = (const void *const *)ih, .lengths = d.lengths, .y = yh};
    assert_ok(fb_backend_cudnn.forward(st, &h));
    for (int64_t i = 0; i < d.ny; i++)
        d.y[i] = fb_f16_to_f32(yh[i]);
    double e16 = tu_rel_err_f32(d.y, d.yd, (size_t)d.ny);
    for (int k = 0; k < d.n_states; k++)
        free(ih[k]);
    printf("tf32 rel err %.2e, fp16 rel err %.2e\n", e32, e16);
    assert_true(e32 <= 1e-2);
    assert_true(e16 <= 5e-2);
    fb_backend_cudnn.destroy(st);
    free(xh);
    free(yh);
    fx_data_free(&d);
    fx_model_free(&m);
}

int main(void)
{
    tu_require_gpu();
    rng = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_call_order),
        cmocka_unit_test(test_bad_lengths),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_f16_and_tf32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
