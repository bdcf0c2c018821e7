/*
 * gpu_cudnn.c: the cudnn backend's forward against the interpreter (double
 * precision) on the same weights, for every mode x layers {1, 3} x {uni,
 * bi} x {padded, lengths} x {seq-major, batch_first}, and LSTM with
 * proj_size; fp32 with FFMA, max |out - ref| / max |ref| <= 1e-5 for y and
 * every final state.  Also: training-mode forward, device pointers, timing.
 * Exits 77 without a GPU.
 */
#include "gpu_cudnn_fixture.h"

static uint64_t rng;

static const struct {
    const char *cell;
    int64_t P;
} cells[] = {{"lstm", 0}, {"lstm", 5}, {"gru", 0}, {"rnn_tanh", 0}, {"rnn_relu", 0}};

static double compare(const fx_data *d)
{
    double err = tu_rel_err_f32(d->y, d->yd, (size_t)d->ny);
    for (int k = 0; k < d->n_states; k++)
        err = fmax(err, tu_rel_err_f32(d->final[k], d->finald[k], (size_t)d->ns[k]));
    return err;
}

/* Outputs past a sequence's length are exactly zero. */
static void check_padding_zero(const fx_model *m, const fx_data *d)
{
    if (!d->lengths)
        return;
    int64_t w = m->s.dirs * m->s.hout;
    for (int64_t t = 0; t < d->T; t++)
        for (int64_t b = 0; b < d->B; b++) {
            if (t < d->lengths[b])
                continue;
            int64_t row = m->s.batch_first ? b * d->T + t : t * d->B + b;
            for (int64_t j = 0; j < w; j++)
                if (d->y[row * w + j] != 0.0f)
                    fail_msg("y[t=%lld, b=%lld] past length %lld is %g", (long long)t,
                             (long long)b, (long long)d->lengths[b],
                             (double)d->y[row * w + j]);
        }
}

static void run_case(const fx_cfg *c, bool lengths)
{
    fx_model m;
    fx_model_init(&m, c, &rng);
    fx_data d;
    fx_data_init(&d, &m, 7, 5, lengths, &rng);
    void *st = fx_cudnn(&m);
    double err[2];
    for (int training = 0; training < 2; training++) {
        rnnc_forward_args a = fx_args(&d, training);
        assert_ok(fb_backend_cudnn.forward(st, &a));
        fx_reference(&m, &d, training);
        check_padding_zero(&m, &d);
        err[training] = compare(&d);
    }
    printf("%-8s P=%lld L=%d D=%d %-9s %-12s  inference %.2e  training %.2e\n", c->cell,
           (long long)c->P, c->layers, c->dirs, lengths ? "lengths" : "padded",
           c->batch_first ? "batch_first" : "seq_major", err[0], err[1]);
    if (err[0] > 1e-5 || err[1] > 1e-5)
        fail_msg("%s: relative error %.3e / %.3e > 1e-5", c->cell, err[0], err[1]);
    fb_backend_cudnn.destroy(st);
    fx_data_free(&d);
    fx_model_free(&m);
}

static void test_forward_matrix(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof cells / sizeof cells[0]; k++)
        for (int layers = 1; layers <= 3; layers += 2)
            for (int dirs = 1; dirs <= 2; dirs++)
                for (int lengths = 0; lengths < 2; lengths++)
                    for (int bf = 0; bf < 2; bf++) {
                        fx_cfg c = {.cell = cells[k].cell, .I = 6, .H = 8, .P = cells[k].P,
                                    .layers = layers, .dirs = dirs, .batch_first = bf};
                        run_case(&c, lengths);
                    }
}

/* Device pointers give the same result as host pointers, and nothing is
 * copied back to the host behind the caller's back. */
static void test_device_pointers(void **state)
{
    (void)state;
    fx_cfg c = {.cell = "lstm", .I = 6, .H = 8, .layers = 2, .dirs = 2};
    fx_model m;
    fx_model_init(&m, &c, &rng);
    fx_data d;
    fx_data_init(&d, &m, 9, 4, true, &rng);
    void *st = fx_cudnn(&m);
    rnnc_forward_args a = fx_args(&d, false);
    assert_ok(fb_backend_cudnn.forward(st, &a));
    fx_reference(&m, &d, false);
    CUdeviceptr x, y, h0, c0, h1, c1;
    size_t xb = (size_t)d.nx * 4, yb = (size_t)d.ny * 4;
    size_t s0 = (size_t)d.ns[0] * 4, s1 = (size_t)d.ns[1] * 4;
    assert_ok(rt_dev_alloc(&x, xb));
    assert_ok(rt_dev_alloc(&y, yb));
    assert_ok(rt_dev_alloc(&h0, s0));
    assert_ok(rt_dev_alloc(&c0, s1));
    assert_ok(rt_dev_alloc(&h1, s0));
    assert_ok(rt_dev_alloc(&c1, s1));
    assert_ok(rt_dev_upload(x, d.x, xb, NULL));
    assert_ok(rt_dev_upload(h0, d.init[0], s0, NULL));
    assert_ok(rt_dev_upload(c0, d.init[1], s1, NULL));
    const void *init[2] = {(void *)(uintptr_t)h0, (void *)(uintptr_t)c0};
    void *final[2] = {(void *)(uintptr_t)h1, (void *)(uintptr_t)c1};
    rnnc_forward_args b = {.seq_len = d.T, .batch = d.B, .x = (void *)(uintptr_t)x,
                           .init = init, .lengths = d.lengths, .y = (void *)(uintptr_t)y,
                           .final = final, .device_pointers = true};
    assert_ok(fb_backend_cudnn.forward(st, &b));
    tu_poison_f32(d.y, (size_t)d.ny);
    tu_poison_f32(d.final[1], (size_t)d.ns[1]);
    assert_ok(rt_dev_download(d.y, y, yb, NULL));
    assert_ok(rt_dev_download(d.final[1], c1, s1, NULL));
    assert_ok(rt_dev_sync(NULL));
    double e = fmax(tu_rel_err_f32(d.y, d.yd, (size_t)d.ny),
                    tu_rel_err_f32(d.final[1], d.finald[1], (size_t)d.ns[1]));
    printf("device pointers: rel err %.2e\n", e);
    assert_true(e <= 1e-5);
    CUdeviceptr bufs[] = {x, y, h0, c0, h1, c1};
    for (size_t i = 0; i < 6; i++)
        rt_dev_free(bufs[i]);
    fb_backend_cudnn.destroy(st);
    fx_data_free(&d);
    fx_model_free(&m);
}

/* Shapes change between calls: buffers grow, results stay right. */
static void test_shape_changes(void **state)
{
    (void)state;
    fx_cfg c = {.cell = "gru", .I = 5, .H = 6, .layers = 2, .dirs = 2};
    fx_model m;
    fx_model_init(&m, &c, &rng);
    void *st = fx_cudnn(&m);
    const int64_t shapes[][2] = {{3, 2}, {11, 6}, {2, 1}, {11, 6}};
    for (size_t i = 0; i < 4; i++) {
        fx_data d;
        fx_data_init(&d, &m, shapes[i][0], shapes[i][1], i & 1, &rng);
        rnnc_forward_args a = fx_args(&d, false);
        assert_ok(fb_backend_cudnn.forward(st, &a));
        fx_reference(&m, &d, false);
        double e = compare(&d);
        printf("gru T=%lld B=%lld: rel err %.2e\n", (long long)d.T, (long long)d.B, e);
        assert_true(e <= 1e-5);
        fx_data_free(&d);
    }
    fb_backend_cudnn.destroy(st);
    fx_model_free(&m);
}

static void test_time_forward(void **state)
{
    (void)state;
    fx_cfg c = {.cell = "lstm", .I = 64, .H = 64, .layers = 1, .dirs = 1};
    fx_model m;
    fx_model_init(&m, &c, &rng);
    fx_data d;
    fx_data_init(&d, &m, 20, 8, false, &rng);
    void *st = fx_cudnn(&m);
    rnnc_forward_args a = fx_args(&d, false);
    double ms = -1;
    assert_ok(fb_backend_cudnn.time_forward(st, &a, 2, 10, &ms));
    printf("lstm T=20 B=8 I=H=64 forward: %.4f ms\n", ms);
    assert_true(ms > 0 && ms < 1000);
    fx_reference(&m, &d, false);
    assert_true(compare(&d) <= 1e-5); /* the timed call's buffers hold the answer too */
    fb_backend_cudnn.destroy(st);
    fx_data_free(&d);
    fx_model_free(&m);
}

int main(void)
{
    tu_require_gpu();
    rng = tu_seed();
    if (fb_cudnn_load() != RNNC_OK) {
        printf("SKIP: %s\n", rnnc_last_error());
        return 77;
    }
    printf("cuDNN %zu\n", cudnnGetVersion());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_matrix),
        cmocka_unit_test(test_device_pointers),
        cmocka_unit_test(test_shape_changes),
        cmocka_unit_test(test_time_forward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
