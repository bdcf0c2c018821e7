/*
 * gpu_cudnn_conv.c: every convolution entry point against a direct convolution
 * written plainly here (double), over a grid of shapes: 1/2/3-D, NCHW and
 * NHWC, stride 1/2, padding 0/1, dilation 1/2, groups 1/2/depthwise; fp32
 * FFMA within 1e-5 relative.  Then fused against unfused and the
 * reference, and the caches.  Prints every failure with its shape and keeps
 * going, so one run shows all of them.  Exits 77 without a GPU or cuDNN.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "cudnn_fallback/fallback.h"

static uint64_t rng;
static int failures;

/* ---------------------------------------------------------------- the reference */

/* Offset of element (n, c, s[3]) of a tensor [N, C, S[3]] (missing leading
 * spatial dims are 1) in the layout. */
static size_t off(rnnc_conv_layout l, int64_t n, int64_t c, const int64_t s[3], int64_t C,
                  const int64_t S[3])
{
    int64_t sp = (s[0] * S[1] + s[1]) * S[2] + s[2];
    int64_t vol = S[0] * S[1] * S[2];
    if (l == RNNC_CONV_NCHW)
        return (size_t)((n * C + c) * vol + sp);
    return (size_t)((n * vol + sp) * C + c);
}

typedef enum { REF_FWD, REF_BWD_DATA, REF_BWD_FILTER } ref_mode;

/* The descriptor's sizes lifted to 3 spatial dims (leading 1s). */
typedef struct dims3 {
    int64_t S[3], R[3], P[3], st[3], pad[3], dil[3];
} dims3;

static dims3 lift(const rnnc_conv *c)
{
    const rnnc_conv_desc *d = rnnc_conv_get_desc(c);
    int64_t x[5], w[5], y[5];
    int rank;
    rnnc_conv_shapes(c, x, w, y, &rank);
    dims3 o;
    int lead = 3 - d->spatial_dims;
    for (int i = 0; i < 3; i++) {
        int k = i - lead;
        bool real = k >= 0;
        int at = d->layout == RNNC_CONV_NCHW ? 2 + k : 1 + k;
        o.S[i] = real ? x[at] : 1;
        o.R[i] = real ? w[at] : 1;
        o.P[i] = real ? y[at] : 1;
        o.st[i] = real ? d->stride[k] : 1;
        o.pad[i] = real ? d->padding[k] : 0;
        o.dil[i] = real ? d->dilation[k] : 1;
    }
    return o;
}

/* Visits every product x * w that contributes to y: forward sums into y,
 * backward data into x (from y = dy), backward filter into w. */
static void reference(const rnnc_conv *c, ref_mode m, double *x, double *w, double *y)
{
    const rnnc_conv_desc *d = rnnc_conv_get_desc(c);
    dims3 z = lift(c);
    int64_t G = d->groups, Cg = d->in_channels / G, Kg = d->out_channels / G;
    for (int64_t n = 0; n < d->batch; n++)
        for (int64_t k = 0; k < d->out_channels; k++)
            for (int64_t p0 = 0; p0 < z.P[0]; p0++)
                for (int64_t p1 = 0; p1 < z.P[1]; p1++)
                    for (int64_t p2 = 0; p2 < z.P[2]; p2++) {
                        int64_t p[3] = {p0, p1, p2};
                        size_t yi = off(d->layout, n, k, p, d->out_channels, z.P);
                        for (int64_t cg = 0; cg < Cg; cg++)
                            for (int64_t r0 = 0; r0 < z.R[0]; r0++)
                                for (int64_t r1 = 0; r1 < z.R[1]; r1++)
                                    for (int64_t r2 = 0; r2 < z.R[2]; r2++) {
                                        int64_t r[3] = {r0, r1, r2}, s[3];
                                        bool in = true;
                                        for (int i = 0; i < 3; i++) {
                                            s[i] = p[i] * z.st[i] + r[i] * z.dil[i] - z.pad[i];
                                            in = in && s[i] >= 0 && s[i] < z.S[i];
                                        }
                                        if (!in)
                                            continue;
                                        size_t xi = off(d->layout, n, (k / Kg) * Cg + cg, s,
                                                        d->in_channels, z.S);
                                        size_t wi = off(d->layout, k, cg, r, Cg, z.R);
                                        if (m == REF_FWD)
                                            y[yi] += x[xi] * w[wi];
                                        else if (m == REF_BWD_DATA)
                                            x[xi] += y[yi] * w[wi];
                                        else
                                            w[wi] += x[xi] * y[yi];
                                    }
                    }
}

/* ---------------------------------------------------------------- device helpers */

static float *rand_host(int64_t n, double **as_double)
{
    float *f = malloc((size_t)n * sizeof *f);
    *as_double = malloc((size_t)n * sizeof **as_double);
    assert_non_null(f);
    assert_non_null(*as_double);
    tu_fill_f32(f, (size_t)n, &rng, -1.0, 1.0);
    for (int64_t i = 0; i < n; i++)
        (*as_double)[i] = f[i];
    return f;
}

static void *upload(const float *h, int64_t n)
{
    void *d = NULL;
    assert_ok(rnnc_device_alloc(0, (size_t)n * 4, &d));
    assert_ok(rnnc_device_upload(d, h, (size_t)n * 4));
    return d;
}

/* A device buffer of n floats filled with NaN, so an unwritten output fails. */
static void *poisoned(int64_t n)
{
    float *h = malloc((size_t)n * 4);
    assert_non_null(h);
    tu_poison_f32(h, (size_t)n);
    void *d = upload(h, n);
    free(h);
    return d;
}

static double download_err(const void *dev, const double *ref, int64_t n)
{
    float *h = malloc((size_t)n * 4);
    assert_non_null(h);
    assert_ok(rnnc_device_download(h, dev, (size_t)n * 4));
    double e = tu_rel_err_f32(h, ref, (size_t)n);
    free(h);
    return e;
}

static void describe(const rnnc_conv *c, char *buf, size_t n)
{
    const rnnc_conv_desc *d = rnnc_conv_get_desc(c);
    int64_t x[5], w[5], y[5];
    int rank;
    rnnc_conv_shapes(c, x, w, y, &rank);
    int at = snprintf(buf, n, "%dD %s x[", d->spatial_dims,
                      d->layout == RNNC_CONV_NHWC ? "NHWC" : "NCHW");
    for (int i = 0; i < rank; i++)
        at += snprintf(buf + at, n - (size_t)at, "%s%lld", i ? "," : "", (long long)x[i]);
    at += snprintf(buf + at, n - (size_t)at, "] w[");
    for (int i = 0; i < rank; i++)
        at += snprintf(buf + at, n - (size_t)at, "%s%lld", i ? "," : "", (long long)w[i]);
    snprintf(buf + at, n - (size_t)at, "] stride %lld pad %lld dil %lld groups %lld",
             (long long)d->stride[0], (long long)d->padding[0], (long long)d->dilation[0],
             (long long)d->groups);
}

static void report(const rnnc_conv *c, const char *what, rnnc_status s, double err, double tol,
                   const char *algo)
{
    char buf[256];
    describe(c, buf, sizeof buf);
    bool bad = s != RNNC_OK || !(err <= tol);
    if (bad) {
        failures++;
        if (s != RNNC_OK)
            printf("FAIL %-12s %s: %s: %s\n", what, buf, rnnc_status_string(s), rnnc_last_error());
        else
            printf("FAIL %-12s %s: max rel err %.3g > %.1g (%s)\n", what, buf, err, tol, algo);
    } else {
        printf("ok   %-12s %s: err %.2e  %s\n", what, buf, err, algo);
    }
}

/* ---------------------------------------------------------------- the grid */

typedef struct grid_case {
    int64_t stride, pad, dil, groups; /* groups 0: depthwise */
} grid_case;

static void run_case(rnnc_conv_handle *h, int dims, rnnc_conv_layout layout, grid_case gc)
{
    rnnc_conv_desc d;
    rnnc_conv_desc_init(&d);
    d.spatial_dims = dims;
    d.layout = layout;
    d.batch = 2;
    d.in_channels = 4;
    d.out_channels = gc.groups ? 6 : 8;
    d.groups = gc.groups ? gc.groups : 4;
    static const int64_t sizes[3][3] = {{13}, {9, 8}, {6, 5, 7}};
    for (int i = 0; i < dims; i++) {
        d.input[i] = sizes[dims - 1][i];
        d.kernel[i] = 3;
        d.stride[i] = gc.stride;
        d.padding[i] = gc.pad;
        d.dilation[i] = gc.dil;
    }
    rnnc_conv *c;
    rnnc_status s = rnnc_conv_create(&c, &d);
    if (s != RNNC_OK) {
        failures++;
        printf("FAIL create %dD: %s\n", dims, rnnc_last_error());
        return;
    }
    int64_t nx, nw, ny;
    rnnc_conv_numels(c, &nx, &nw, &ny);
    double *xd, *wd, *yd;
    float *xh = rand_host(nx, &xd), *wh = rand_host(nw, &wd), *yh = rand_host(ny, &yd);
    void *x = upload(xh, nx), *w = upload(wh, nw), *dy = upload(yh, ny);

    /* forward */
    double *ref = calloc((size_t)ny, sizeof *ref);
    reference(c, REF_FWD, xd, wd, ref);
    void *y = poisoned(ny);
    s = rnnc_conv_forward(h, c, x, w, y, NULL);
    report(c, "forward", s, s == RNNC_OK ? download_err(y, ref, ny) : 0, 1e-5,
           rnnc_conv_handle_last_algo(h));
    free(ref);

    /* backward data, and the transposed convolution (the same call) */
    ref = calloc((size_t)nx, sizeof *ref);
    reference(c, REF_BWD_DATA, ref, wd, yd);
    void *dx = poisoned(nx);
    s = rnnc_conv_backward_data(h, c, dy, w, dx, NULL);
    report(c, "bwd_data", s, s == RNNC_OK ? download_err(dx, ref, nx) : 0, 1e-5,
           rnnc_conv_handle_last_algo(h));
    rnnc_device_free(dx);
    dx = poisoned(nx);
    s = rnnc_conv_transposed(h, c, dy, w, dx, NULL);
    report(c, "transposed", s, s == RNNC_OK ? download_err(dx, ref, nx) : 0, 1e-5,
           rnnc_conv_handle_last_algo(h));
    free(ref);

    /* backward filter */
    ref = calloc((size_t)nw, sizeof *ref);
    reference(c, REF_BWD_FILTER, xd, ref, yd);
    void *dw = poisoned(nw);
    s = rnnc_conv_backward_filter(h, c, x, dy, dw, NULL);
    report(c, "bwd_filter", s, s == RNNC_OK ? download_err(dw, ref, nw) : 0, 1e-5,
           rnnc_conv_handle_last_algo(h));
    free(ref);

    rnnc_device_free(x), rnnc_device_free(w), rnnc_device_free(y), rnnc_device_free(dy);
    rnnc_device_free(dx), rnnc_device_free(dw);
    free(xh), free(wh), free(yh), free(xd), free(wd), free(yd);
    rnnc_conv_destroy(c);
}

static void test_grid(void **st)
{
    rnnc_conv_handle *h = *st;
    const grid_case cases[] = {{1, 0, 1, 1}, {2, 1, 1, 1}, {1, 1, 2, 1}, {2, 0, 2, 1},
                               {1, 1, 1, 2}, {2, 1, 1, 0}, {1, 1, 2, 0}};
    int before = failures;
    for (int dims = 1; dims <= 3; dims++)
        for (int l = 0; l < 2; l++)
            for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
                run_case(h, dims, (rnnc_conv_layout)l, cases[i]);
    printf("grid: %d failure(s)\n", failures - before);
    assert_int_equal(failures, before);
}

/* ---------------------------------------------------------------- fused */

/* relu(alpha1 * conv + alpha2 * z + bias) in double, fp32 FFMA on the GPU,
 * through the graph and through the unfused calls. */
static void fused_case(rnnc_conv_handle *h, rnnc_conv_layout layout, bool with_z, bool relu)
{
    rnnc_conv_desc d;
    rnnc_conv_desc_init(&d);
    d.layout = layout;
    d.batch = 2;
    d.in_channels = 8;
    d.out_channels = 16;
    d.input[0] = 10;
    d.input[1] = 12;
    d.kernel[0] = d.kernel[1] = 3;
    d.padding[0] = d.padding[1] = 1;
    rnnc_conv *c;
    assert_ok(rnnc_conv_create(&c, &d));
    int64_t nx, nw, ny;
    rnnc_conv_numels(c, &nx, &nw, &ny);
    double *xd, *wd, *zd, *bd;
    float *xh = rand_host(nx, &xd), *wh = rand_host(nw, &wd), *zh = rand_host(ny, &zd),
          *bh = rand_host(16, &bd);
    void *x = upload(xh, nx), *w = upload(wh, nw), *z = upload(zh, ny), *b = upload(bh, 16);
    double *ref = calloc((size_t)ny, sizeof *ref);
    reference(c, REF_FWD, xd, wd, ref);
    rnnc_conv_epilogue e;
    rnnc_conv_epilogue_init(&e);
    e.alpha1 = 0.75f;
    e.alpha2 = with_z ? 0.5f : 1.0f;
    e.z = with_z ? z : NULL;
    e.bias = b;
    e.relu = relu;
    for (int64_t i = 0; i < ny; i++) {
        int64_t k = layout == RNNC_CONV_NCHW ? (i / (10 * 12)) % 16 : i % 16;
        double v = e.alpha1 * ref[i] + (with_z ? e.alpha2 * zd[i] : 0) + bd[k];
        ref[i] = relu && v < 0 ? 0 : v;
    }
    for (int unf = 0; unf < 2; unf++) {
        e.unfused = unf;
        void *y = poisoned(ny);
        rnnc_status s = rnnc_conv_fused(h, c, &e, x, w, y, NULL);
        char what[32];
        snprintf(what, sizeof what, "%s%s%s", unf ? "unfused" : "fused", with_z ? "+z" : "",
                 relu ? "+relu" : "");
        report(c, what, s, s == RNNC_OK ? download_err(y, ref, ny) : 0, 1e-5,
               rnnc_conv_handle_last_algo(h));
        rnnc_device_free(y);
    }
    rnnc_device_free(x), rnnc_device_free(w), rnnc_device_free(z), rnnc_device_free(b);
    free(xh), free(wh), free(zh), free(bh), free(xd), free(wd), free(zd), free(bd), free(ref);
    rnnc_conv_destroy(c);
}

static void test_fused(void **st)
{
    rnnc_conv_handle *h = *st;
    int before = failures;
    for (int l = 0; l < 2; l++) {
        fused_case(h, (rnnc_conv_layout)l, true, true);
        fused_case(h, (rnnc_conv_layout)l, false, true);
        fused_case(h, (rnnc_conv_layout)l, true, false);
    }
    printf("plans cached: %d\n", rnnc_conv_handle_plan_count(h));
    assert_int_equal(failures, before);
}

/* ---------------------------------------------------------------- caches */

static void test_caches(void **st)
{
    rnnc_conv_handle *h = *st;
    rnnc_conv_algo_cache_clear();
    rnnc_conv_desc d;
    rnnc_conv_desc_init(&d);
    d.batch = 4;
    d.in_channels = d.out_channels = 16;
    d.input[0] = d.input[1] = 14;
    d.kernel[0] = d.kernel[1] = 3;
    rnnc_conv *c1, *c2, *c3;
    assert_ok(rnnc_conv_create(&c1, &d));
    d.stride[0] = d.stride[1] = 2; /* one parameter changed */
    assert_ok(rnnc_conv_create(&c2, &d));
    d.stride[0] = d.stride[1] = 1;
    d.algo_mode = RNNC_CONV_BENCHMARK;
    assert_ok(rnnc_conv_create(&c3, &d));
    int64_t nx, nw, ny;
    rnnc_conv_numels(c1, &nx, &nw, &ny);
    double *xd, *wd;
    float *xh = rand_host(nx, &xd), *wh = rand_host(nw, &wd);
    void *x = upload(xh, nx), *w = upload(wh, nw), *y = poisoned(ny);
    assert_ok(rnnc_conv_forward(h, c1, x, w, y, NULL));
    assert_int_equal(rnnc_conv_algo_cache_size(), 1);
    char first[160];
    snprintf(first, sizeof first, "%s", rnnc_conv_handle_last_algo(h));
    assert_ok(rnnc_conv_forward(h, c1, x, w, y, NULL));
    assert_int_equal(rnnc_conv_algo_cache_size(), 1); /* the same key: found, not added */
    assert_string_equal(first, rnnc_conv_handle_last_algo(h));
    assert_ok(rnnc_conv_forward(h, c2, x, w, y, NULL));
    assert_int_equal(rnnc_conv_algo_cache_size(), 2); /* stride changed: a new search */
    assert_ok(rnnc_conv_forward(h, c3, x, w, y, NULL));
    assert_int_equal(rnnc_conv_algo_cache_size(), 3); /* benchmark mode is its own key */
    printf("heuristic: %s; benchmark: %s\n", first, rnnc_conv_handle_last_algo(h));
    double *ref = calloc((size_t)ny, sizeof *ref);
    reference(c3, REF_FWD, xd, wd, ref);
    double err = download_err(y, ref, ny);
    printf("benchmark-mode forward err %.2e\n", err);
    assert_true(err <= 1e-5);

    /* The plan LRU keeps at most its capacity. */
    assert_ok(rnnc_conv_handle_set_plan_cache(h, 1));
    rnnc_conv_epilogue e;
    rnnc_conv_epilogue_init(&e);
    assert_ok(rnnc_conv_fused(h, c1, &e, x, w, y, NULL));
    assert_ok(rnnc_conv_fused(h, c2, &e, x, w, y, NULL));
    printf("plans with capacity 1: %d (%s)\n", rnnc_conv_handle_plan_count(h),
           rnnc_conv_handle_last_algo(h));
    assert_true(rnnc_conv_handle_plan_count(h) <= 1);

    /* timing every algorithm */
    rnnc_conv_algo_perf perf[16];
    int n = 0;
    assert_ok(rnnc_conv_time_algos(h, c1, RNNC_CONV_FORWARD, x, w, y, perf, 16, &n));
    assert_true(n >= 1);
    for (int i = 0; i < n; i++)
        printf("  %-24s %8.4f ms  ws %zu\n", perf[i].name, (double)perf[i].ms, perf[i].workspace);
    rnnc_device_free(x), rnnc_device_free(w), rnnc_device_free(y);
    free(xh), free(wh), free(xd), free(wd), free(ref);
    rnnc_conv_destroy(c1), rnnc_conv_destroy(c2), rnnc_conv_destroy(c3);
}

static int setup(void **st)
{
    rnnc_conv_handle *h = NULL;
    if (rnnc_conv_handle_create(&h, 0) != RNNC_OK) {
        printf("handle: %s\n", rnnc_last_error());
        return -1;
    }
    *st = h;
    return 0;
}

static int teardown(void **st)
{
    rnnc_conv_handle_destroy(*st);
    return 0;
}

int main(void)
{
    tu_require_gpu();
    if (fb_cudnn_load() != RNNC_OK) {
        printf("SKIP: %s\n", rnnc_last_error());
        return TU_SKIP;
    }
    rng = tu_seed();
    printf("cuDNN %zu\n", cudnnGetVersion());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_grid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_caches, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
