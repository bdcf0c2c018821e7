/* gpu_fused_half.c (label gpu): F16 and BF16 models on the fused backend
 * against the interpreter on the same rounded weights, inputs and initial
 * states (the interpreter converts them to fp32 and computes in double; the
 * fused kernels keep x, y, weights and the outputs between layers in 16 bits
 * and compute in fp32), T = 100: every built-in cell and one .cell cell, 1
 * and 2 layers; bidirectional with lengths; device pointers (the states
 * converted on the device; x also at an odd offset); B = 4; the benchmark width; the step linears
 * on FFMA and on tensor cores (mma.sync m16n8k16).  max|out-ref|/max|ref| of
 * y and of the final states: bf16 <= 2e-2, f16 <= 5e-3.  Outputs start
 * poisoned (NaN).  Training (test_training): the fused backward in fp32 on
 * the half model's values.  Exits 77 without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device/device.h"
#include "testutil.h"

#define MAX_STATES 4

static const char k_cifg[] =
    "cell cifg {\n"
    "    input x[I]\n    state h[H]\n    state c[H]\n"
    "    param weight_ih[3H, I]\n    param weight_hh[3H, H]\n    param bias[3H]\n"
    "    gates = linear(x, weight_ih) + linear(h, weight_hh) + bias\n"
    "    f, g, o = chunk(gates, 3)\n"
    "    fs = sigmoid(f)\n"
    "    c_next = fs * c + (1 - fs) * tanh(g)\n"
    "    h_next = sigmoid(o) * tanh(c_next)\n"
    "    next h = h_next\n    next c = c_next\n    output h_next\n}\n";

typedef struct hcase {
    const char *cell;
    int64_t T, B, I, H;
    int layers;
    bool bi, lengths, dev;
    rnnc_dtype dt;
    int xoff; /* dev: x this many elements past a 256-byte aligned allocation */
} hcase;

static rnnc_model *make(const hcase *hc, rnnc_backend be)
{
    rnnc_cell *c = NULL;
    if (strcmp(hc->cell, "cifg") == 0)
        assert_ok(rnnc_cell_parse(&c, k_cifg, strlen(k_cifg), "cifg.cell", NULL, NULL));
    else if (strcmp(hc->cell, "preln") == 0 || strcmp(hc->cell, "chain") == 0)
        c = tu_data_cell(hc->cell);
    else
        assert_ok(rnnc_cell_builtin(&c, hc->cell, NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = c;
    d.input_size = hc->I;
    d.hidden_size = hc->H;
    d.num_layers = hc->layers;
    d.bidirectional = hc->bi;
    d.dtype = hc->dt;
    d.backend = be;
    rnnc_model *m = NULL;
    if (rnnc_model_create(&m, &d))
        fail_msg("%s %s: model: %s", hc->cell, rnnc_dtype_name(hc->dt), rnnc_last_error());
    rnnc_cell_destroy(c);
    return m;
}

/* n random values in [lo, hi) rounded to dt, as 16-bit words. */
static uint16_t *random_half(size_t n, rnnc_dtype dt, uint64_t *rng, double lo, double hi)
{
    float *f = malloc(n * 4 + 4);
    uint16_t *h = malloc(n * 2 + 2);
    assert_true(f && h);
    tu_fill_f32(f, n, rng, lo, hi);
    assert_ok(rnnc_convert(h, dt, f, RNNC_F32, (int64_t)n));
    free(f);
    return h;
}

/* n 16-bit NaNs (0xffff is a NaN in f16 and bf16). */
static uint16_t *poison_half(size_t n)
{
    uint16_t *h = malloc(n * 2 + 2);
    assert_non_null(h);
    memset(h, 0xff, n * 2 + 2);
    return h;
}

static double rel_err_half(const uint16_t *out, const uint16_t *ref, size_t n, rnnc_dtype dt)
{
    float *o = malloc(n * 4 + 4);
    double *r = malloc(n * 8 + 8);
    assert_true(o && r);
    assert_ok(rnnc_convert(o, RNNC_F32, out, dt, (int64_t)n));
    assert_ok(rnnc_convert(r, RNNC_F64, ref, dt, (int64_t)n));
    double e = tu_rel_err_f32(o, r, n);
    free(o);
    free(r);
    return e;
}

typedef struct bufs {
    size_t nx, ny, nst[MAX_STATES];
    int ns;
    uint16_t *x, *y, *yr, *init[MAX_STATES], *fin[MAX_STATES], *finr[MAX_STATES];
    int64_t *len;
} bufs;

static void make_bufs(const hcase *hc, rnnc_model *f, uint64_t *rng, bufs *b)
{
    int64_t hout = 0;
    assert_ok(rnnc_model_output_size(f, &hout));
    int D = hc->bi ? 2 : 1;
    b->nx = (size_t)(hc->T * hc->B * hc->I);
    b->ny = (size_t)(hc->T * hc->B * D * hout);
    b->x = random_half(b->nx, hc->dt, rng, -1, 1);
    b->y = poison_half(b->ny);
    b->yr = poison_half(b->ny);
    b->ns = 0;
    for (int64_t n = 0; b->ns < MAX_STATES && rnnc_model_state_size(f, b->ns, &n) == RNNC_OK;
         b->ns++) {
        int s = b->ns;
        b->nst[s] = (size_t)(hc->layers * D * hc->B * n);
        b->init[s] = random_half(b->nst[s], hc->dt, rng, -0.5, 0.5);
        b->fin[s] = poison_half(b->nst[s]);
        b->finr[s] = poison_half(b->nst[s]);
    }
    b->len = NULL;
    if (hc->lengths) {
        b->len = malloc((size_t)hc->B * sizeof *b->len);
        for (int64_t i = 0; i < hc->B; i++)
            b->len[i] = 1 + (int64_t)(tu_uniform(rng, 0, 1) * (double)hc->T) % hc->T;
        b->len[0] = hc->T;
    }
}

static void free_bufs(bufs *b)
{
    for (int s = 0; s < b->ns; s++) {
        free(b->init[s]);
        free(b->fin[s]);
        free(b->finr[s]);
    }
    free(b->x);
    free(b->y);
    free(b->yr);
    free(b->len);
}

/* The fused forward from device buffers: x, the states in, y and the
 * final states out, all 16-bit on the device. */
static void forward_dev(rnnc_model *f, const hcase *hc, bufs *b)
{
    CUdeviceptr dx = 0, dy = 0, di[MAX_STATES] = {0}, df[MAX_STATES] = {0};
    size_t off = (size_t)hc->xoff * 2;
    assert_ok(rt_dev_alloc(&dx, b->nx * 2 + off));
    assert_ok(rt_dev_alloc(&dy, b->ny * 2));
    assert_ok(rt_dev_upload(dx + off, b->x, b->nx * 2, NULL));
    assert_ok(rt_dev_upload(dy, b->y, b->ny * 2, NULL)); /* poisoned */
    const void *in[MAX_STATES] = {0};
    void *out[MAX_STATES] = {0};
    for (int s = 0; s < b->ns; s++) {
        assert_ok(rt_dev_alloc(&di[s], b->nst[s] * 2));
        assert_ok(rt_dev_alloc(&df[s], b->nst[s] * 2));
        assert_ok(rt_dev_upload(di[s], b->init[s], b->nst[s] * 2, NULL));
        assert_ok(rt_dev_upload(df[s], b->fin[s], b->nst[s] * 2, NULL));
        in[s] = (const void *)(uintptr_t)di[s];
        out[s] = (void *)(uintptr_t)df[s];
    }
    assert_ok(rt_dev_sync(NULL));
    rnnc_forward_args a = {.seq_len = hc->T, .batch = hc->B, .x = (const void *)(uintptr_t)(dx + off),
                           .y = (void *)(uintptr_t)dy, .init = in, .final = out,
                           .lengths = b->len, .device_pointers = true};
    if (rnnc_model_forward(f, &a))
        fail_msg("%s: fused forward (device): %s", hc->cell, rnnc_last_error());
    assert_ok(rt_dev_sync(NULL));
    assert_ok(rt_dev_download(b->y, dy, b->ny * 2, NULL));
    for (int s = 0; s < b->ns; s++)
        assert_ok(rt_dev_download(b->fin[s], df[s], b->nst[s] * 2, NULL));
    assert_ok(rt_dev_sync(NULL));
    rt_dev_free(dx);
    rt_dev_free(dy);
    for (int s = 0; s < b->ns; s++) {
        rt_dev_free(di[s]);
        rt_dev_free(df[s]);
    }
}

static void run_case(const hcase *hc, uint64_t *rng)
{
    double tol = hc->dt == RNNC_BF16 ? 2e-2 : 5e-3;
    rnnc_model *f = make(hc, RNNC_BACKEND_FUSED), *r = make(hc, RNNC_BACKEND_INTERP);
    rnnc_model *both[2] = {f, r};
    double k = 1.0 / sqrt((double)hc->H);
    tu_set_random_weights_on(both, 2, rng, -k, k);
    bufs b;
    make_bufs(hc, f, rng, &b);
    rnnc_forward_args a = {.seq_len = hc->T, .batch = hc->B, .x = b.x, .y = b.yr,
                           .init = (const void *const *)b.init, .final = (void *const *)b.finr,
                           .lengths = b.len};
    assert_ok(rnnc_model_forward(r, &a));
    if (hc->dev) {
        forward_dev(f, hc, &b);
    } else {
        a.y = b.y;
        a.final = (void *const *)b.fin;
        if (rnnc_model_forward(f, &a))
            fail_msg("%s: fused forward: %s", hc->cell, rnnc_last_error());
    }
    double ey = rel_err_half(b.y, b.yr, b.ny, hc->dt), ef = 0;
    for (int s = 0; s < b.ns; s++) {
        double e = rel_err_half(b.fin[s], b.finr[s], b.nst[s], hc->dt);
        ef = e > ef || e != e ? e : ef;
    }
    printf("  %-15s %-4s L=%d%s%s%s%s B=%lld H=%lld  y %.2e  final %.2e\n", hc->cell,
           rnnc_dtype_name(hc->dt), hc->layers, hc->bi ? " bi" : "", hc->lengths ? " lengths" : "",
           hc->dev ? " device" : "", hc->xoff ? " x-odd" : "", (long long)hc->B, (long long)hc->H,
           ey, ef);
    fflush(stdout);
    if (!(ey <= tol) || !(ef <= tol))
        fail_msg("%s %s L=%d: rel err y %.3g final %.3g > %g", hc->cell, rnnc_dtype_name(hc->dt),
                 hc->layers, ey, ef, tol);
    free_bufs(&b);
    rnnc_model_destroy(f);
    rnnc_model_destroy(r);
}

/* Every cell, 1 and 2 layers, and the .cell cell, with the step's
 * linears on FFMA (default tiles at H = 128: too few mma tiles), then on
 * tensor cores (8 units x 16 rows, 4 warps: 2 to 4 tiles of 16 x 8 a
 * linear); bidirectional, lengths, device pointers, B = 4 (the tagged
 * exchange), the benchmark width (default tiles, tensor cores), and H =
 * 1024 at B = 128, whose step stages h in chunks. */
static void each_case(rnnc_dtype dt)
{
    uint64_t rng = tu_seed();
    const char *const *names = rnnc_cell_builtin_names();
    for (int tiles = 0; tiles < 2; tiles++) {
        printf(" %s step linears\n", tiles ? "tensor-core (RNNC_FUSED_TILE=8,16,128)" : "FFMA");
        if (tiles)
            setenv("RNNC_FUSED_TILE", "8,16,128", 1);
        for (int i = 0; names[i]; i++)
            for (int layers = 1; layers <= 2; layers++) {
                hcase hc = {names[i], 100, 32, 128, 128, layers, false, false, false, dt, 0};
                run_case(&hc, &rng);
            }
        for (int layers = 1; layers <= 2; layers++) {
            hcase hc = {"cifg", 100, 32, 128, 128, layers, false, false, false, dt, 0};
            run_case(&hc, &rng);
        }
        unsetenv("RNNC_FUSED_TILE");
    }
    static const hcase more[] = {
        {"lstm", 100, 32, 128, 128, 2, true, true, false, 0, 0},
        {"gru", 100, 32, 128, 128, 1, true, false, true, 0, 0},
        {"lstm", 100, 32, 128, 128, 2, false, true, true, 0, 0},
        {"lstm", 100, 4, 128, 128, 1, false, false, false, 0, 0},
        {"lstm", 20, 64, 512, 512, 1, false, false, true, 0, 0},
        /* x at an odd offset (a tensor view): the runtime copies it */
        {"lstm", 20, 64, 512, 512, 1, false, false, true, 0, 1},
        /* H = 1024, B = 128: h staged in chunks from its 16-bit copy */
        {"lstm", 6, 128, 1024, 1024, 1, false, true, false, 0, 0},
        {"gru", 4, 128, 1024, 1024, 1, false, false, false, 0, 0},
        /* 3H = 2880 columns: the wgmma GEMM's last column tile half past them */
        {"gru", 6, 256, 64, 960, 1, false, false, false, 0, 0},
        /* hoisted work in rounds: the GEMM over an fp32 buffer of hz
         * (tests/data/cells; the mma tiles round it to 16 bits) */
        {"preln", 50, 32, 128, 128, 2, false, false, false, 0, 0},
        {"chain", 40, 64, 256, 256, 1, true, true, false, 0, 0},
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        hcase hc = more[i];
        hc.dt = dt;
        run_case(&hc, &rng);
    }
}

static void test_f16(void **state)
{
    (void)state;
    each_case(RNNC_F16);
}

static void test_bf16(void **state)
{
    (void)state;
    each_case(RNNC_BF16);
}

/* ---------------------------------------------------------------- training */

static float *to_f32(const uint16_t *h, size_t n, rnnc_dtype dt)
{
    float *f = malloc(n * 4 + 4);
    assert_ok(rnnc_convert(f, RNNC_F32, h, dt, (int64_t)n));
    return f;
}

/* max|out - ref| / max|ref| of a 16-bit output against an fp32 one. */
static double err_vs_f32(const uint16_t *out, const float *ref, size_t n, rnnc_dtype dt)
{
    float *o = to_f32(out, n, dt);
    double *r = malloc(n * 8 + 8);
    for (size_t i = 0; i < n; i++)
        r[i] = ref[i];
    double e = tu_rel_err_f32(o, r, n);
    free(o);
    free(r);
    return e;
}

/* A device copy of n bytes at h (dev), else h itself. */
static void *on_dev(const void *h, size_t n, bool dev)
{
    CUdeviceptr d = 0;
    if (!dev)
        return (void *)h;
    assert_ok(rt_dev_alloc(&d, n));
    assert_ok(rt_dev_upload(d, h, n, NULL));
    assert_ok(rt_dev_sync(NULL));
    return (void *)(uintptr_t)d;
}

/* Back from on_dev: the n bytes into h, the device copy freed. */
static void off_dev(void *h, void *d, size_t n, bool dev)
{
    if (!dev)
        return;
    assert_ok(rt_dev_download(h, (CUdeviceptr)(uintptr_t)d, n, NULL));
    assert_ok(rt_dev_sync(NULL));
    rt_dev_free((CUdeviceptr)(uintptr_t)d);
}

/* One training step of the half model f (16-bit buffers, on the device
 * where hc->dev) and of the fp32 reference r on the same values. */
static void train_case(const hcase *hc, uint64_t *rng)
{
    double tol = hc->dt == RNNC_BF16 ? 2e-2 : 5e-3;
    hcase h32 = *hc;
    h32.dt = RNNC_F32;
    rnnc_model *f = make(hc, RNNC_BACKEND_FUSED), *r = make(&h32, RNNC_BACKEND_INTERP);
    rnnc_model *both[2] = {f, r};
    tu_set_rounded_weights_on(both, 2, hc->dt, rng, -1.0 / sqrt((double)hc->H),
                              1.0 / sqrt((double)hc->H));
    bufs b;
    make_bufs(hc, f, rng, &b);
    uint16_t *dy = random_half(b.ny, hc->dt, rng, -1, 1), *dx = poison_half(b.nx);
    uint16_t *dfin[MAX_STATES], *dini[MAX_STATES];
    float *xf = to_f32(b.x, b.nx, hc->dt), *dyf = to_f32(dy, b.ny, hc->dt), *yf = malloc(b.ny * 4);
    float *dxf = malloc(b.nx * 4), *inif[MAX_STATES], *finf[MAX_STATES], *dfinf[MAX_STATES],
          *dinif[MAX_STATES];
    void *d_init[MAX_STATES], *d_fin[MAX_STATES], *d_dfin[MAX_STATES], *d_dini[MAX_STATES];
    for (int s = 0; s < b.ns; s++) {
        size_t n = b.nst[s];
        dfin[s] = random_half(n, hc->dt, rng, -1, 1);
        dini[s] = poison_half(n);
        inif[s] = to_f32(b.init[s], n, hc->dt), dfinf[s] = to_f32(dfin[s], n, hc->dt);
        finf[s] = malloc(n * 4), dinif[s] = malloc(n * 4);
        d_init[s] = on_dev(b.init[s], n * 2, hc->dev), d_fin[s] = on_dev(b.fin[s], n * 2, hc->dev);
        d_dfin[s] = on_dev(dfin[s], n * 2, hc->dev), d_dini[s] = on_dev(dini[s], n * 2, hc->dev);
    }
    rnnc_forward_args ra = {.seq_len = hc->T, .batch = hc->B, .x = xf, .y = yf,
                            .init = (const void *const *)inif, .final = (void *const *)finf,
                            .lengths = b.len, .training = true};
    rnnc_backward_args rb = {.dy = dyf, .dfinal = (const void *const *)dfinf, .dx = dxf,
                             .dinit = (void *const *)dinif};
    assert_ok(rnnc_model_forward(r, &ra));
    assert_ok(rnnc_model_backward(r, &rb));
    void *d_x = on_dev(b.x, b.nx * 2, hc->dev), *d_y = on_dev(b.y, b.ny * 2, hc->dev);
    void *d_dy = on_dev(dy, b.ny * 2, hc->dev), *d_dx = on_dev(dx, b.nx * 2, hc->dev);
    rnnc_forward_args fa = {.seq_len = hc->T, .batch = hc->B, .x = d_x, .y = d_y,
                            .init = (const void *const *)d_init, .final = (void *const *)d_fin,
                            .lengths = b.len, .training = true, .device_pointers = hc->dev};
    rnnc_backward_args fb = {.dy = d_dy, .dfinal = (const void *const *)d_dfin, .dx = d_dx,
                             .dinit = (void *const *)d_dini};
    if (rnnc_model_forward(f, &fa) || rnnc_model_backward(f, &fb))
        fail_msg("%s %s: fused training: %s", hc->cell, rnnc_dtype_name(hc->dt), rnnc_last_error());
    off_dev(b.y, d_y, b.ny * 2, hc->dev);
    off_dev(dx, d_dx, b.nx * 2, hc->dev);
    if (hc->dev) {
        rt_dev_free((CUdeviceptr)(uintptr_t)d_x);
        rt_dev_free((CUdeviceptr)(uintptr_t)d_dy);
    }
    double ey = err_vs_f32(b.y, yf, b.ny, hc->dt), ex = err_vs_f32(dx, dxf, b.nx, hc->dt);
    double es = 0, ew = 0;
    for (int s = 0; s < b.ns; s++) {
        off_dev(b.fin[s], d_fin[s], b.nst[s] * 2, hc->dev);
        off_dev(dini[s], d_dini[s], b.nst[s] * 2, hc->dev);
        if (hc->dev) {
            rt_dev_free((CUdeviceptr)(uintptr_t)d_init[s]);
            rt_dev_free((CUdeviceptr)(uintptr_t)d_dfin[s]);
        }
        es = fmax(es, fmax(err_vs_f32(b.fin[s], finf[s], b.nst[s], hc->dt),
                           err_vs_f32(dini[s], dinif[s], b.nst[s], hc->dt)));
    }
    ew = tu_weight_grad_err(f, r);
    printf("  train %-5s %s L=%d bi=%d len=%d dev=%d  y %.2e  dx %.2e  states %.2e  dW %.2e\n",
           hc->cell, rnnc_dtype_name(hc->dt), hc->layers, hc->bi, hc->lengths, hc->dev, ey, ex,
           es, ew);
    if (!(ey <= tol) || !(ex <= tol) || !(es <= tol) || !(ew <= 1e-3))
        fail_msg("%s %s: training off the fp32 reference", hc->cell, rnnc_dtype_name(hc->dt));
    for (int s = 0; s < b.ns; s++) {
        free(dfin[s]), free(dini[s]), free(inif[s]), free(finf[s]), free(dfinf[s]);
        free(dinif[s]);
    }
    free(dy), free(dx), free(xf), free(dyf), free(yf), free(dxf);
    free_bufs(&b);
    rnnc_model_destroy(f);
    rnnc_model_destroy(r);
}

/* Training a half model on the fused backend: fp32 inside, the caller's
 * buffers in the dtype (docs/training.md), against an fp32 interpreter
 * model on the same rounded weights, x, initial states, dy and dfinal: y,
 * the final states, dx and dinit within the forward's tolerance (they are
 * rounded to the dtype), every weight gradient within 1e-3; layers,
 * both directions, lengths, device pointers, .cell cells. */
static void test_training(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const hcase cases[] = {
        {"lstm", 20, 5, 24, 32, 2, true, true, false, RNNC_BF16, 0},
        {"lstm", 20, 5, 24, 32, 2, true, true, false, RNNC_F16, 0},
        {"gru", 30, 64, 128, 128, 1, false, false, true, RNNC_BF16, 0},
        {"cifg", 25, 16, 64, 64, 2, false, true, true, RNNC_F16, 0},
        {"lstm", 50, 64, 256, 256, 1, true, false, false, RNNC_BF16, 0},
        /* layernorm(x) before W_ih: the fused backward's row cell */
        {"preln", 20, 8, 40, 32, 2, true, true, false, RNNC_F16, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        train_case(&cases[i], &rng);
}

int main(void)
{
    tu_require_gpu();
    setenv("RNNC_AUTOTUNE", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_training),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
