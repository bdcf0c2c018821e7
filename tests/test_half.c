/* test_half.c: half-precision models on the host backends.  rnnc_convert
 * rounds to nearest even (checked at ties, limits and every f16 value); a
 * F16 or BF16 model on the interpreter (and the CPU backend where built)
 * computes exactly what an fp32 model computes on the weights and inputs
 * rounded to the dtype, with its outputs rounded; AUTO runs such models;
 * the interpreter trains them (gradients in the dtype at the edges). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static uint16_t to16(rnnc_dtype t, float f)
{
    uint16_t h;
    assert_ok(rnnc_convert(&h, t, &f, RNNC_F32, 1));
    return h;
}

static float from16(rnnc_dtype t, uint16_t h)
{
    float f;
    assert_ok(rnnc_convert(&f, RNNC_F32, &h, t, 1));
    return f;
}

static void test_convert_rounding(void **state)
{
    (void)state;
    assert_int_equal(to16(RNNC_F16, 1.0f), 0x3c00);
    assert_int_equal(to16(RNNC_F16, -2.0f), 0xc000);
    assert_int_equal(to16(RNNC_F16, 65504.0f), 0x7bff);
    assert_int_equal(to16(RNNC_F16, 65519.0f), 0x7bff);
    assert_int_equal(to16(RNNC_F16, 65520.0f), 0x7c00); /* rounds to infinity */
    assert_int_equal(to16(RNNC_F16, 0x1p-24f), 0x0001);
    assert_int_equal(to16(RNNC_F16, 0x1p-25f), 0x0000);        /* tie to even (0) */
    assert_int_equal(to16(RNNC_F16, 3 * 0x1p-25f), 0x0002);    /* tie to even (2) */
    assert_int_equal(to16(RNNC_F16, 1.0f + 0x1p-11f), 0x3c00); /* tie to even */
    assert_int_equal(to16(RNNC_F16, 1.0f + 3 * 0x1p-11f), 0x3c02);
    assert_int_equal(to16(RNNC_F16, 0x1p-14f - 0x1p-25f), 0x0400); /* up into the normals */
    assert_true(isnan(from16(RNNC_F16, to16(RNNC_F16, NAN))));
    assert_int_equal(to16(RNNC_BF16, 1.0f), 0x3f80);
    assert_int_equal(to16(RNNC_BF16, 1.0f + 0x1p-8f), 0x3f80); /* tie to even */
    assert_int_equal(to16(RNNC_BF16, 1.0f + 3 * 0x1p-8f), 0x3f82);
    assert_int_equal(to16(RNNC_BF16, -0x1p-130f), 0x8008); /* a float subnormal */
    assert_true(isnan(from16(RNNC_BF16, to16(RNNC_BF16, NAN))));
    /* every f16 value survives f16 -> f32 -> f16 (NaNs stay NaNs) */
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float f = from16(RNNC_F16, (uint16_t)h);
        if (isnan(f))
            continue;
        assert_int_equal(to16(RNNC_F16, f), h);
        assert_int_equal(to16(RNNC_BF16, from16(RNNC_BF16, (uint16_t)h)), h);
    }
    double d = 0.1;
    float f;
    assert_ok(rnnc_convert(&f, RNNC_F32, &d, RNNC_F64, 1));
    assert_true(f == 0.1f);
    assert_status(rnnc_convert(&f, RNNC_I32, &d, RNNC_F64, 1), RNNC_ERR_INVALID_ARG);
}

static rnnc_model *make(const char *cell, rnnc_dtype dt, rnnc_backend be, int layers)
{
    rnnc_cell *c = NULL;
    assert_ok(rnnc_cell_builtin(&c, cell, NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = c;
    d.input_size = 12;
    d.hidden_size = 16;
    d.num_layers = layers;
    d.dtype = dt;
    d.backend = be;
    rnnc_model *m = NULL;
    if (rnnc_model_create(&m, &d))
        fail_msg("%s %s: %s", cell, rnnc_dtype_name(dt), rnnc_last_error());
    rnnc_cell_destroy(c);
    return m;
}

/* fp32 values rounded to dtype t, in place. */
static void round_to(rnnc_dtype t, float *p, size_t n)
{
    uint16_t *h = malloc(2 * n);
    assert_ok(rnnc_convert(h, t, p, RNNC_F32, (int64_t)n));
    assert_ok(rnnc_convert(p, RNNC_F32, h, t, (int64_t)n));
    free(h);
}

/* 16-bit values (sign and magnitude) as ordered integers: neighbours
 * differ by one. */
static int ordered16(uint16_t v)
{
    return v & 0x8000 ? -(int)(v & 0x7fff) : (int)v;
}

/* The interpreter computes in double on both sides, so the half model's
 * bits are the rounded fp32 model's exactly; another backend computes in
 * fp32, which may land a value on the other side of a rounding boundary:
 * at most one unit in the last place apart. */
static void assert_rounded(rnnc_model *h, const uint16_t *want, const uint16_t *got, size_t n)
{
    if (rnnc_model_backend(h) == RNNC_BACKEND_INTERP) {
        assert_memory_equal(want, got, n * 2);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        int d = ordered16(want[i]) - ordered16(got[i]);
        if (d < -1 || d > 1)
            fail_msg("value %zu: 0x%04x, want 0x%04x (one ulp at most)", i, got[i], want[i]);
    }
}

/* The half model against an fp32 model on the rounded data: equal bits
 * (assert_rounded). */
static void check_exact(const char *cell, rnnc_dtype dt, rnnc_backend be, int layers)
{
    enum { T = 7, B = 3, I = 12, H = 16 };
    uint64_t rng = tu_seed();
    rnnc_model *h = make(cell, dt, be, layers), *f = make(cell, RNNC_F32, RNNC_BACKEND_INTERP, layers);
    /* the same random weights; the fp32 model gets them rounded as the half
     * model keeps them */
    for (int i = 0; i < rnnc_model_weight_count(f); i++) {
        const char *name;
        int64_t shape[RNNC_MAX_RANK];
        int rank;
        assert_ok(rnnc_model_weight_info(f, i, &name, RNNC_MAX_RANK, shape, &rank));
        int64_t n = 1;
        for (int k = 0; k < rank; k++)
            n *= shape[k];
        float *w = malloc((size_t)n * 4);
        tu_fill_f32(w, (size_t)n, &rng, -0.25, 0.25);
        assert_ok(rnnc_model_set_weight(h, name, w, n));
        round_to(dt, w, (size_t)n);
        assert_ok(rnnc_model_set_weight(f, name, w, n));
        free(w);
    }
    int ns = strcmp(cell, "gru") == 0 ? 1 : 2;
    size_t nx = T * B * I, ny = T * B * H, nst = (size_t)layers * B * H;
    float x[T * B * I], y[T * B * H], init[2][8 * B * H], fin[2][8 * B * H];
    uint16_t hx[T * B * I], hy[T * B * H], hinit[2][8 * B * H], hfin[2][8 * B * H];
    tu_fill_f32(x, nx, &rng, -1, 1);
    round_to(dt, x, nx);
    assert_ok(rnnc_convert(hx, dt, x, RNNC_F32, (int64_t)nx));
    const void *in[2], *hin[2];
    void *out[2], *hout[2];
    for (int s = 0; s < ns; s++) {
        tu_fill_f32(init[s], nst, &rng, -0.5, 0.5);
        round_to(dt, init[s], nst);
        assert_ok(rnnc_convert(hinit[s], dt, init[s], RNNC_F32, (int64_t)nst));
        memset(hfin[s], 0xff, sizeof hfin[s]); /* NaN in both halves */
        in[s] = init[s], hin[s] = hinit[s], out[s] = fin[s], hout[s] = hfin[s];
    }
    memset(hy, 0xff, sizeof hy);
    rnnc_forward_args a = {.seq_len = T, .batch = B, .x = x, .y = y, .init = in, .final = out};
    assert_ok(rnnc_model_forward(f, &a));
    rnnc_forward_args ha = {.seq_len = T, .batch = B, .x = hx, .y = hy, .init = hin, .final = hout};
    if (rnnc_model_forward(h, &ha))
        fail_msg("%s %s: %s", cell, rnnc_dtype_name(dt), rnnc_last_error());
    uint16_t want[T * B * H];
    assert_ok(rnnc_convert(want, dt, y, RNNC_F32, (int64_t)ny));
    assert_rounded(h, want, hy, ny);
    for (int s = 0; s < ns; s++) {
        assert_ok(rnnc_convert(want, dt, fin[s], RNNC_F32, (int64_t)nst));
        assert_rounded(h, want, hfin[s], nst);
    }
    printf("  %s %s on %s, %d layer(s): the fp32 result on rounded data, %s\n", cell,
           rnnc_dtype_name(dt), rnnc_backend_name(rnnc_model_backend(h)), layers,
           rnnc_model_backend(h) == RNNC_BACKEND_INTERP ? "bit for bit" : "within an ulp");
    rnnc_model_destroy(h);
    rnnc_model_destroy(f);
}

static void test_interp_half(void **state)
{
    (void)state;
    check_exact("lstm", RNNC_F16, RNNC_BACKEND_INTERP, 1);
    check_exact("gru", RNNC_BF16, RNNC_BACKEND_INTERP, 2);
    check_exact("layernorm_lstm", RNNC_BF16, RNNC_BACKEND_INTERP, 1);
}

/* AUTO runs a bf16 model where it can: the fused backend with a GPU,
 * else a host backend (cudnn has no bf16 RNN). */
static void test_auto_half(void **state)
{
    (void)state;
    check_exact("lstm", RNNC_BF16, RNNC_BACKEND_AUTO, 1);
}

static void test_cpu_half(void **state)
{
    (void)state;
    if (!rnnc_backend_built(RNNC_BACKEND_CPU)) {
        skip();
        return;
    }
    enum { T = 5, B = 2, I = 12, H = 16 };
    uint64_t rng = tu_seed();
    rnnc_model *c = make("lstm", RNNC_F16, RNNC_BACKEND_CPU, 2);
    rnnc_model *r = make("lstm", RNNC_F16, RNNC_BACKEND_INTERP, 2);
    rnnc_model *both[2] = {c, r};
    tu_set_random_weights_on(both, 2, &rng, -0.25, 0.25);
    float x[T * B * I], y[2][T * B * H];
    uint16_t hx[T * B * I], hy[2][T * B * H];
    tu_fill_f32(x, T * B * I, &rng, -1, 1);
    assert_ok(rnnc_convert(hx, RNNC_F16, x, RNNC_F32, T * B * I));
    for (int k = 0; k < 2; k++) {
        memset(hy[k], 0xff, sizeof hy[k]);
        rnnc_forward_args a = {.seq_len = T, .batch = B, .x = hx, .y = hy[k]};
        assert_ok(rnnc_model_forward(k ? r : c, &a));
        assert_ok(rnnc_convert(y[k], RNNC_F32, hy[k], RNNC_F16, T * B * H));
    }
    double ref[T * B * H];
    for (int i = 0; i < T * B * H; i++)
        ref[i] = y[1][i];
    /* both round the same fp32-accurate values to f16: at most an ulp apart */
    double e = tu_rel_err_f32(y[0], ref, T * B * H);
    printf("  lstm f16 cpu vs interp: %.2e\n", e);
    assert_true(e <= 2e-3);
    rnnc_model_destroy(c);
    rnnc_model_destroy(r);
}

/* Math modes are for fp32 models. */
static void test_half_refusals(void **state)
{
    (void)state;
    rnnc_cell *c = NULL;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = c;
    d.input_size = 4;
    d.hidden_size = 4;
    d.dtype = RNNC_BF16;
    d.math = RNNC_MATH_TF32;
    rnnc_model *m = NULL;
    assert_status(rnnc_model_create(&m, &d), RNNC_ERR_INVALID_ARG);
    rnnc_cell_destroy(c);
}

/* fp32 copies of n 16-bit values. */
static float *widen(rnnc_dtype dt, const uint16_t *h, size_t n)
{
    float *f = malloc(n * 4 + 4);
    assert_ok(rnnc_convert(f, RNNC_F32, h, dt, (int64_t)n));
    return f;
}

/* n random 16-bit values of dt. */
static uint16_t *random16(rnnc_dtype dt, size_t n, uint64_t *rng)
{
    float *f = malloc(n * 4 + 4);
    uint16_t *h = malloc(n * 2 + 2);
    tu_fill_f32(f, n, rng, -1, 1);
    assert_ok(rnnc_convert(h, dt, f, RNNC_F32, (int64_t)n));
    free(f);
    return h;
}

/* A training step of a half model on the interpreter: its gradients in the
 * dtype at the edges (runtime/spec/half.c rt_backward_half), so dx and
 * dinit are the fp32 model's on the rounded data, rounded, bit for bit, and
 * every weight gradient is the fp32 model's exactly (a gru: one state). */
static void test_interp_half_training(void **state)
{
    (void)state;
    enum { T = 6, B = 3, I = 12, H = 16, L = 2 };
    const rnnc_dtype dt = RNNC_BF16;
    uint64_t rng = tu_seed();
    rnnc_model *h = make("gru", dt, RNNC_BACKEND_INTERP, L);
    rnnc_model *f = make("gru", RNNC_F32, RNNC_BACKEND_INTERP, L);
    rnnc_model *both[2] = {h, f};
    tu_set_rounded_weights_on(both, 2, dt, &rng, -0.25, 0.25);
    size_t nx = T * B * I, ny = T * B * H, ns = (size_t)L * B * H;
    uint16_t *hx = random16(dt, nx, &rng), *hdy = random16(dt, ny, &rng);
    uint16_t *hdf = random16(dt, ns, &rng), hdx[T * B * I], hdi[L * B * H], hy[T * B * H];
    float *x = widen(dt, hx, nx), *dy = widen(dt, hdy, ny), *df = widen(dt, hdf, ns);
    float y[T * B * H], dx[T * B * I], di[L * B * H];
    const void *hdfin[1] = {hdf}, *dfin[1] = {df};
    void *hdini[1] = {hdi}, *dini[1] = {di};
    rnnc_forward_args ha = {.seq_len = T, .batch = B, .x = hx, .y = hy, .training = true};
    rnnc_forward_args fa = {.seq_len = T, .batch = B, .x = x, .y = y, .training = true};
    rnnc_backward_args hb = {hdy, hdfin, hdx, hdini}, fb = {dy, dfin, dx, dini};
    assert_ok(rnnc_model_forward(h, &ha));
    assert_ok(rnnc_model_backward(h, &hb));
    assert_ok(rnnc_model_forward(f, &fa));
    assert_ok(rnnc_model_backward(f, &fb));
    uint16_t want[T * B * (I > H ? I : H)];
    assert_ok(rnnc_convert(want, dt, y, RNNC_F32, (int64_t)ny));
    assert_memory_equal(want, hy, ny * 2);
    assert_ok(rnnc_convert(want, dt, dx, RNNC_F32, (int64_t)nx));
    assert_memory_equal(want, hdx, nx * 2);
    assert_ok(rnnc_convert(want, dt, di, RNNC_F32, (int64_t)ns));
    assert_memory_equal(want, hdi, ns * 2);
    assert_true(tu_weight_grad_err(h, f) == 0.0); /* both in double on equal values */
    free(hx), free(hdy), free(hdf), free(x), free(dy), free(df);
    rnnc_model_destroy(h);
    rnnc_model_destroy(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convert_rounding),
        cmocka_unit_test(test_interp_half),
        cmocka_unit_test(test_auto_half),
        cmocka_unit_test(test_cpu_half),
        cmocka_unit_test(test_half_refusals),
        cmocka_unit_test(test_interp_half_training),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
