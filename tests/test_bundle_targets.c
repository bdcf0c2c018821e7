/* test_bundle_targets.c: rnnc_bundle_compile_targets on every build: the
 * targets by name (sm_XX, cpu, cpu:<x86-64 level>) and its refusals (no
 * target, an unknown one, CUDA archs without batch sizes, a cpu target of
 * an rnnc without LLVM); with the cpu backend, a bundle of cpu code alone
 * made without batch sizes loads, and a model made then takes both its
 * cells' code from it and agrees with the interpreter (cli_cpu_bundle.sh
 * compares it with compiled code, bit for bit, across processes). */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cache/cache.h" /* rt_cache_origin_count */

static rnnc_model_desc desc(rnnc_cell **cell)
{
    assert_ok(rnnc_cell_builtin(cell, "gru", NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = *cell;
    d.input_size = 6;
    d.hidden_size = 10;
    d.num_layers = 2;
    return d;
}

static void expect(rnnc_status got, rnnc_status want, const char *why)
{
    assert_status(got, want);
    if (!strstr(rnnc_last_error(), why))
        fail_msg("want \"%s\" in: %s", why, rnnc_last_error());
}

static void test_refusals(void **state)
{
    (void)state;
    rnnc_cell *cell;
    rnnc_model_desc d = desc(&cell);
    const int64_t b[] = {4};
    const char *none[] = {NULL}, *hopper[] = {"hopper"}, *sm[] = {"cpu", "sm_90"};
    expect(rnnc_bundle_compile_targets(&d, b, 1, none, 0, 0, "x.rnncpkg"),
           RNNC_ERR_INVALID_ARG, "targets");
    expect(rnnc_bundle_compile_targets(&d, b, 1, hopper, 1, 0, "x.rnncpkg"),
           RNNC_ERR_INVALID_ARG, "target 'hopper' is neither a CUDA arch");
    expect(rnnc_bundle_compile_targets(&d, NULL, 0, sm, 2, 0, "x.rnncpkg"),
           RNNC_ERR_INVALID_ARG, "want batch sizes");
    assert_int_equal(access("x.rnncpkg", F_OK), -1);
    rnnc_cell_destroy(cell);
}

/* y of a forward of the model d on backend be (weights and x fixed). */
static void run(rnnc_model_desc d, rnnc_backend be, float *y)
{
    rnnc_model *m;
    d.backend = be;
    assert_ok(rnnc_model_create(&m, &d));
    for (int i = 0; i < rnnc_model_weight_count(m); i++) {
        const char *name;
        int64_t shape[4], n = 1;
        int rank;
        assert_ok(rnnc_model_weight_info(m, i, &name, 4, shape, &rank));
        for (int r = 0; r < rank; r++)
            n *= shape[r];
        float *w = malloc((size_t)n * sizeof *w);
        for (int64_t k = 0; k < n; k++)
            w[k] = (float)((k * 37 + i * 11) % 23) / 23.0f - 0.5f;
        assert_ok(rnnc_model_set_weight(m, name, w, n));
        free(w);
    }
    float x[3 * 2 * 6];
    for (int k = 0; k < 36; k++)
        x[k] = (float)(k % 7) / 7.0f - 0.4f;
    for (int k = 0; k < 3 * 2 * 10; k++)
        y[k] = NAN; /* poisoned */
    rnnc_forward_args a = {.seq_len = 3, .batch = 2, .x = x, .y = y};
    assert_ok(rnnc_model_forward(m, &a));
    rnnc_model_destroy(m);
}

static void test_cpu_code(void **state)
{
    (void)state;
    rnnc_cell *cell;
    rnnc_model_desc d = desc(&cell);
    char *dir = tu_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/gru.rnncpkg", dir);
    const char *cpu[] = {"cpu"};
    rnnc_status st = rnnc_bundle_compile_targets(&d, NULL, 0, cpu, 1, 0, path);
    if (!rnnc_backend_built(RNNC_BACKEND_CPU)) {
        expect(st, RNNC_ERR_NOT_BUILT, "built without LLVM");
    } else {
        assert_ok(st);
        float ref[60], y[60];
        setenv("RNNC_CACHE", "0", 1);
        assert_ok(rnnc_bundle_load(path));
        unsigned long before = rt_cache_origin_count(RT_FROM_BUNDLE);
        run(d, RNNC_BACKEND_CPU, y);
        assert_int_equal(rt_cache_origin_count(RT_FROM_BUNDLE), before + 2); /* both cells */
        rnnc_bundle_unload_all();
        unsetenv("RNNC_CACHE");
        run(d, RNNC_BACKEND_INTERP, ref);
        double err = 0, top = 0;
        for (int k = 0; k < 60; k++) {
            err = fmax(err, fabs((double)y[k] - ref[k]));
            top = fmax(top, fabs((double)ref[k]));
        }
        assert_true(top > 0.01 && err / top <= 1e-5);
    }
    tu_rmtree(dir);
    free(dir);
    rnnc_cell_destroy(cell);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_cpu_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
