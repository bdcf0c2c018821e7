/*
 * gpu_cudnn_api.c: the cudnn backend behind the public model API: the same
 * weights (set by state_dict name) and inputs on RNNC_BACKEND_INTERP and
 * RNNC_BACKEND_CUDNN agree within 1e-5; backward and weight gradients are
 * reachable by name; a non-standard cell is refused with a message naming
 * the backends that can run it.  Exits 77 without a GPU.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng;

typedef struct pair {
    rnnc_cell *cell;
    rnnc_model *ref, *dnn;
} pair;

static void desc_for(rnnc_model_desc *d, const rnnc_cell *cell, rnnc_backend b, int64_t P)
{
    rnnc_model_desc_init(d);
    d->cell = cell;
    d->input_size = 5;
    d->hidden_size = 6;
    d->proj_size = P;
    d->num_layers = 2;
    d->bidirectional = true;
    d->backend = b;
}

/* Both models get every weight, by name, with the same random values. */
static void pair_make(pair *p, const char *cell, int64_t P)
{
    rnnc_model_desc d;
    assert_ok(rnnc_cell_builtin(&p->cell, cell, NULL));
    desc_for(&d, p->cell, RNNC_BACKEND_INTERP, P);
    assert_ok(rnnc_model_create(&p->ref, &d));
    desc_for(&d, p->cell, RNNC_BACKEND_CUDNN, P);
    assert_ok(rnnc_model_create(&p->dnn, &d));
    assert_int_equal(rnnc_model_backend(p->dnn), RNNC_BACKEND_CUDNN);
    int n = rnnc_model_weight_count(p->ref);
    assert_int_equal(n, rnnc_model_weight_count(p->dnn));
    rnnc_model *const both[] = {p->ref, p->dnn};
    tu_set_random_weights_on(both, 2, &rng, -0.4, 0.4);
}

static void pair_free(pair *p)
{
    rnnc_model_destroy(p->dnn);
    rnnc_model_destroy(p->ref);
    rnnc_cell_destroy(p->cell);
}

static void test_api_agrees(void **state)
{
    (void)state;
    static const struct {
        const char *cell;
        int64_t P;
    } cases[] = {{"lstm", 0}, {"lstm", 4}, {"gru", 0}, {"rnn_tanh", 0}, {"rnn_relu", 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        pair p;
        pair_make(&p, cases[c].cell, cases[c].P);
        const int64_t T = 6, B = 4, L2 = 4, hout = cases[c].P ? cases[c].P : 6;
        int ns = rnnc_cell_state_count(p.cell);
        size_t nx = (size_t)(T * B * 5), ny = (size_t)(T * B * 2 * hout);
        float *x = malloc(nx * 4), *y = malloc(ny * 4), *yr = malloc(ny * 4);
        float *init[2] = {0}, *fin[2] = {0}, *finr[2] = {0};
        size_t sn[2];
        for (int k = 0; k < ns; k++) {
            sn[k] = (size_t)(L2 * B * (k == 0 ? hout : 6)); /* h then c */
            init[k] = malloc(sn[k] * 4);
            fin[k] = malloc(sn[k] * 4);
            finr[k] = malloc(sn[k] * 4);
            tu_fill_f32(init[k], sn[k], &rng, -1, 1);
        }
        tu_fill_f32(x, nx, &rng, -1, 1);
        int64_t lengths[4] = {6, 3, 1, 5};
        rnnc_forward_args a = {.seq_len = T, .batch = B, .x = x, .init = (const void **)init,
                               .lengths = lengths, .y = yr, .final = (void **)finr};
        tu_poison_f32(yr, ny);
        assert_ok(rnnc_model_forward(p.ref, &a));
        a.y = y;
        a.final = (void **)fin;
        tu_poison_f32(y, ny);
        assert_ok(rnnc_model_forward(p.dnn, &a));
        double *ref = malloc(ny * sizeof(double));
        for (size_t i = 0; i < ny; i++)
            ref[i] = yr[i];
        double e = tu_rel_err_f32(y, ref, ny);
        for (int k = 0; k < ns; k++) {
            double *rs = malloc(sn[k] * sizeof(double));
            for (size_t i = 0; i < sn[k]; i++)
                rs[i] = finr[k][i];
            e = fmax(e, tu_rel_err_f32(fin[k], rs, sn[k]));
            free(rs);
        }
        printf("api %-8s P=%lld L=2 bi lengths: cudnn vs interp rel err %.2e\n", cases[c].cell,
               (long long)cases[c].P, e);
        assert_true(e <= 1e-5);
        free(ref);
        free(x);
        free(y);
        free(yr);
        for (int k = 0; k < ns; k++) {
            free(init[k]);
            free(fin[k]);
            free(finr[k]);
        }
        pair_free(&p);
    }
}

static void test_api_backward(void **state)
{
    (void)state;
    pair p;
    pair_make(&p, "lstm", 0);
    const int64_t T = 5, B = 3;
    size_t nx = (size_t)(T * B * 5), ny = (size_t)(T * B * 12);
    float *x = malloc(nx * 4), *y = malloc(ny * 4), *dy = malloc(ny * 4), *dx = malloc(nx * 4);
    tu_fill_f32(x, nx, &rng, -1, 1);
    tu_fill_f32(dy, ny, &rng, -1, 1);
    tu_poison_f32(dx, nx);
    rnnc_forward_args a = {.seq_len = T, .batch = B, .x = x, .y = y, .training = true};
    rnnc_backward_args b = {.dy = dy, .dx = dx};
    /* The interpreter's backward (float64 inside) is the reference for cuDNN's dx. */
    assert_ok(rnnc_model_forward(p.ref, &a));
    assert_ok(rnnc_model_backward(p.ref, &b));
    double *dx_ref = malloc(nx * sizeof *dx_ref);
    for (size_t i = 0; i < nx; i++)
        dx_ref[i] = dx[i];
    tu_poison_f32(dx, nx);
    assert_ok(rnnc_model_forward(p.dnn, &a));
    assert_ok(rnnc_model_backward(p.dnn, &b));
    double e = tu_rel_err_f32(dx, dx_ref, nx);
    printf("api backward: cudnn dx vs interp rel err %.3g\n", e);
    assert_true(e <= 1e-4);
    free(dx_ref);
    float g[4 * 6 * 5];
    tu_poison_f32(g, 120);
    assert_ok(rnnc_model_weight_grad(p.dnn, "weight_ih_l0", g, 120));
    double mx = 0;
    for (int i = 0; i < 120; i++)
        mx = fmax(mx, fabs(g[i]));
    assert_true(isfinite(mx) && mx > 0);
    assert_status(rnnc_model_weight_grad(p.dnn, "weight_ih_l0", g, 119), RNNC_ERR_SHAPE);
    double ms = 0;
    a.training = false;
    assert_ok(rnnc_model_time_forward(p.dnn, &a, 1, 5, &ms));
    printf("api backward ok; max |d weight_ih_l0| %.3g; forward %.4f ms\n", mx, ms);
    assert_true(ms > 0);
    assert_status(rnnc_model_backward(p.dnn, &b), RNNC_ERR_STATE); /* last forward: inference */
    free(x);
    free(y);
    free(dy);
    free(dx);
    pair_free(&p);
}

static void test_api_refuses_custom_cell(void **state)
{
    (void)state;
    rnnc_cell *cell;
    assert_ok(rnnc_cell_builtin(&cell, "layernorm_lstm", NULL));
    rnnc_model_desc d;
    desc_for(&d, cell, RNNC_BACKEND_CUDNN, 0);
    rnnc_model *m = NULL;
    assert_status(rnnc_model_create(&m, &d), RNNC_ERR_UNSUPPORTED);
    printf("layernorm_lstm on cudnn: %s\n", rnnc_last_error());
    assert_non_null(strstr(rnnc_last_error(), "not a standard cell"));
    assert_non_null(strstr(rnnc_last_error(), "fused, cpu or interp"));
    assert_null(m);
    rnnc_cell_destroy(cell);
}

int main(void)
{
    tu_require_gpu();
    rng = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_agrees),
        cmocka_unit_test(test_api_backward),
        cmocka_unit_test(test_api_refuses_custom_cell),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
