/* gpu_fused_large.c (label gpu): the shapes whose W_hh does not fit the
 * old one-tile-per-block layout: LSTM and GRU at H in {1024, 2048} and B in
 * {1, 64, 256}, fused against cuDNN on the same weights (fp32 FFMA on both
 * sides), and against the interpreter at B = 1; batches whose blocks take
 * their rows in passes (B x H over about 2M).  H = 2048 streams W_hh from
 * L2/HBM every step; H = 1024 keeps it on chip with x staged in chunks.
 * max|out-ref| / max|ref| <= 1e-5.  Exits 77 without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/spec/spec.h"
#include "testutil.h"

#define TOL 1e-5

static rnnc_model *make(const char *cell, int64_t I, int64_t H, rnnc_backend be)
{
    rnnc_cell *c = NULL;
    assert_ok(rnnc_cell_builtin(&c, cell, NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = c;
    d.input_size = I;
    d.hidden_size = H;
    d.backend = be;
    rnnc_model *m = NULL;
    if (rnnc_model_create(&m, &d))
        fail_msg("%s H=%lld backend %d: %s", cell, (long long)H, be, rnnc_last_error());
    rnnc_cell_destroy(c);
    return m;
}

static double rel(const float *out, const float *ref, size_t n)
{
    double *r = malloc(n * sizeof *r);
    assert_non_null(r);
    for (size_t i = 0; i < n; i++)
        r[i] = ref[i];
    double e = tu_rel_err_f32(out, r, n);
    free(r);
    return e;
}

static void one(const char *cell, int64_t H, int64_t B, uint64_t *rng)
{
    const int64_t T = B > 256 ? 4 : 6, I = 256;
    bool interp = B == 1;
    rnnc_model *ms[3] = {make(cell, I, H, RNNC_BACKEND_FUSED), make(cell, I, H, RNNC_BACKEND_CUDNN),
                         interp ? make(cell, I, H, RNNC_BACKEND_INTERP) : NULL};
    double k = 1.0 / __builtin_sqrt((double)H);
    tu_set_random_weights_on(ms, interp ? 3 : 2, rng, -k, k);
    size_t nx = (size_t)(T * B * I), ny = (size_t)(T * B * H), nh = (size_t)(B * H);
    float *x = malloc(nx * 4), *y[3], *h[3];
    tu_fill_f32(x, nx, rng, -1, 1);
    for (int i = 0; i < 3; i++) {
        y[i] = malloc(ny * 4);
        h[i] = malloc(nh * 4);
        tu_poison_f32(y[i], ny);
        tu_poison_f32(h[i], nh);
    }
    for (int i = 0; i < (interp ? 3 : 2); i++) {
        void *fin[2] = {h[i], NULL};
        rnnc_forward_args a = {.seq_len = T, .batch = B, .x = x, .y = y[i],
                               .final = (void *const *)fin};
        if (rnnc_model_forward(ms[i], &a))
            fail_msg("%s H=%lld B=%lld backend %d: %s", cell, (long long)H, (long long)B, i,
                     rnnc_last_error());
    }
    double ec = rel(y[0], y[1], ny), ehc = rel(h[0], h[1], nh);
    double ei = interp ? rel(y[0], y[2], ny) : 0, ehi = interp ? rel(h[0], h[2], nh) : 0;
    printf("  %-5s H=%-5lld B=%-4lld vs cudnn y %.2e h %.2e", cell, (long long)H, (long long)B,
           ec, ehc);
    if (interp)
        printf("  vs interp y %.2e h %.2e", ei, ehi);
    printf("\n");
    fflush(stdout);
    if (!(ec <= TOL) || !(ehc <= TOL) || !(ei <= TOL) || !(ehi <= TOL))
        fail_msg("%s H=%lld B=%lld: rel err over %g", cell, (long long)H, (long long)B, TOL);
    free(x);
    for (int i = 0; i < 3; i++) {
        free(y[i]);
        free(h[i]);
        rnnc_model_destroy(ms[i]);
    }
}

static bool both_backends(void)
{
    return rnnc_backend_available(RNNC_BACKEND_CUDNN) && rnnc_backend_available(RNNC_BACKEND_FUSED);
}

static void test_large(void **state)
{
    (void)state;
    if (!both_backends()) {
        skip();
        return;
    }
    uint64_t rng = tu_seed();
    static const char *cells[] = {"lstm", "gru"};
    static const int64_t Hs[] = {1024, 2048}, Bs[] = {1, 64, 256};
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                one(cells[c], Hs[i], Bs[j], &rng);
}

/* Batches that no tiling of one pass fits (a block's rows in passes,
 * codegen/cuda/cuda_passes.c): cuDNN runs them, so must the fused backend. */
static void test_passes(void **state)
{
    (void)state;
    if (!both_backends()) {
        skip();
        return;
    }
    uint64_t rng = tu_seed();
    one("lstm", 2048, 1024, &rng);
    one("lstm", 1024, 2048, &rng);
    one("gru", 2048, 2048, &rng);
    one("lstm", 256, 16384, &rng);
}

int main(void)
{
    tu_require_gpu();
    setenv("RNNC_AUTOTUNE", "0", 1);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_large), cmocka_unit_test(test_passes)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
