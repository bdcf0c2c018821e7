/* test_auto.c: the AUTO backend picks per call.  Each case is a call that
 * some backend refuses (lengths, projections, layers, both directions,
 * training, a large shape): AUTO must run it on a backend that can, agree
 * with the interpreter on the same weights, and name the backend that ran.
 * On a machine without a GPU the cases run on the CPU backends; on a GPU
 * machine they exercise fused -> cudnn -> cpu fallbacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

typedef struct auto_case {
    const char *name, *cell;
    int64_t T, B, I, H, P;
    int layers;
    bool bidirectional, lengths, training;
    double dropout;
} auto_case;

static rnnc_model *make(rnnc_cell *c, const auto_case *k, rnnc_backend be)
{
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = c;
    d.input_size = k->I;
    d.hidden_size = k->H;
    d.proj_size = k->P;
    d.num_layers = k->layers;
    d.bidirectional = k->bidirectional;
    d.dropout = k->dropout;
    d.backend = be;
    rnnc_model *m = NULL;
    assert_ok(rnnc_model_create(&m, &d));
    return m;
}

static void run_case(const auto_case *k)
{
    rnnc_cell *c;
    assert_ok(rnnc_cell_builtin(&c, k->cell, NULL));
    rnnc_model *ms[2] = {make(c, k, RNNC_BACKEND_AUTO), make(c, k, RNNC_BACKEND_INTERP)};
    uint64_t seed = tu_seed();
    tu_set_random_weights_on(ms, 2, &seed, -0.3, 0.3);
    int64_t hout = 0, D = k->bidirectional ? 2 : 1;
    assert_ok(rnnc_model_output_size(ms[0], &hout));
    size_t nx = (size_t)(k->T * k->B * k->I), ny = (size_t)(k->T * k->B * D * hout);
    float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y), *yr = malloc(ny * sizeof *yr);
    int64_t *len = malloc((size_t)k->B * sizeof *len);
    tu_fill_f32(x, nx, &seed, -1, 1);
    for (int64_t b = 0; b < k->B; b++) /* non-increasing, the longest first, as PyTorch packs */
        len[b] = k->T - (b * (k->T - 1)) / (k->B > 1 ? k->B - 1 : 1);
    tu_poison_f32(y, ny);
    tu_poison_f32(yr, ny);
    rnnc_forward_args a = {.seq_len = k->T, .batch = k->B, .x = x, .y = y,
                           .lengths = k->lengths ? len : NULL, .training = k->training};
    assert_ok(rnnc_model_forward(ms[0], &a));
    rnnc_backend ran = rnnc_model_backend(ms[0]);
    fprintf(stderr, "%-26s ran on %s\n", k->name, rnnc_backend_name(ran));
    assert_true(ran != RNNC_BACKEND_AUTO && rnnc_backend_available(ran));
    if (k->dropout == 0 || !k->training) { /* dropout masks differ between backends */
        a.y = yr;
        assert_ok(rnnc_model_forward(ms[1], &a));
        double *ref = malloc(ny * sizeof *ref);
        for (size_t i = 0; i < ny; i++)
            ref[i] = yr[i];
        double err = tu_rel_err_f32(y, ref, ny);
        fprintf(stderr, "%-26s error vs interp %.2e\n", k->name, err);
        assert_true(err <= 2e-5);
        free(ref);
    }
    rnnc_model_destroy(ms[0]);
    rnnc_model_destroy(ms[1]);
    rnnc_cell_destroy(c);
    free(x), free(y), free(yr), free(len);
}

static const auto_case cases[] = {
    {"lstm lengths", "lstm", 7, 5, 6, 8, 0, 1, false, true, false, 0},
    {"lstm proj", "lstm", 6, 3, 5, 8, 4, 1, false, false, false, 0},
    {"gru 2 layers", "gru", 6, 3, 5, 8, 0, 2, false, false, false, 0},
    {"lstm bidirectional lengths", "lstm", 6, 4, 5, 8, 0, 2, true, true, false, 0},
    {"lstm training dropout", "lstm", 5, 3, 5, 8, 0, 2, false, false, true, 0.3},
    {"rnn_tanh training", "rnn_tanh", 5, 3, 5, 8, 0, 1, true, false, true, 0},
    {"layernorm_lstm lengths", "layernorm_lstm", 6, 4, 5, 8, 0, 1, false, true, false, 0},
};

static void test_cases(void **st)
{
    (void)st;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
}

/* A large shape (H = 2048, B = 64) that the fused kernel may refuse: AUTO
 * still runs it, on a GPU only (the interpreter would take minutes). */
static void test_large_shape(void **st)
{
    (void)st;
    if (!rnnc_backend_available(RNNC_BACKEND_FUSED) && !rnnc_backend_available(RNNC_BACKEND_CUDNN))
        skip();
    rnnc_cell *c;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    auto_case k = {"lstm H=2048 B=64", "lstm", 3, 64, 256, 2048, 0, 1, false, false, false, 0};
    rnnc_model *m = make(c, &k, RNNC_BACKEND_AUTO);
    uint64_t seed = tu_seed();
    tu_set_random_weights(m, &seed, -0.02, 0.02);
    size_t nx = (size_t)(k.T * k.B * k.I), ny = (size_t)(k.T * k.B * k.H);
    float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y);
    tu_fill_f32(x, nx, &seed, -1, 1);
    tu_poison_f32(y, ny);
    rnnc_forward_args a = {.seq_len = k.T, .batch = k.B, .x = x, .y = y};
    assert_ok(rnnc_model_forward(m, &a));
    fprintf(stderr, "%-26s ran on %s\n", k.name, rnnc_backend_name(rnnc_model_backend(m)));
    for (size_t i = 0; i < ny; i++)
        assert_true(y[i] > -1 && y[i] < 1);
    rnnc_model_destroy(m);
    rnnc_cell_destroy(c);
    free(x), free(y);
}

/* Device pointers on a machine where no device backend runs: a clear
 * refusal, not a host backend reading device addresses. */
static void test_device_pointers_without_gpu(void **st)
{
    (void)st;
    if (rnnc_backend_available(RNNC_BACKEND_FUSED) || rnnc_backend_available(RNNC_BACKEND_CUDNN))
        skip();
    rnnc_cell *c;
    assert_ok(rnnc_cell_builtin(&c, "gru", NULL));
    auto_case k = {"gru", "gru", 2, 2, 3, 4, 0, 1, false, false, false, 0};
    rnnc_model *m = make(c, &k, RNNC_BACKEND_AUTO);
    uint64_t seed = tu_seed();
    tu_set_random_weights(m, &seed, -0.3, 0.3);
    float x[12] = {0.5f}, y[16];
    rnnc_forward_args a = {.seq_len = 2, .batch = 2, .x = x, .y = y, .device_pointers = true};
    /* Built with CUDA: the driver is missing; without: no backend takes device memory. */
    rnnc_status s = rnnc_model_forward(m, &a);
    assert_true(s == RNNC_ERR_NO_DEVICE || s == RNNC_ERR_UNSUPPORTED);
    fprintf(stderr, "device pointers without a GPU: %s\n", rnnc_last_error());
    rnnc_model_destroy(m);
    rnnc_cell_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_large_shape),
        cmocka_unit_test(test_device_pointers_without_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
