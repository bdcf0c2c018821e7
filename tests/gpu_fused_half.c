/* gpu_fused_half.c (label gpu): F16 and BF16 models on the fused backend
 * against the interpreter on the same rounded weights, inputs and initial
 * states (the interpreter converts them to fp32 and computes in double; the
 * fused kernels keep x, y, weights and the outputs between layers in 16 bits
 * and compute in fp32), T = 100: every built-in cell and one .cell cell, 1
 * and 2 layers; bidirectional with lengths; device pointers (the states
 * converted on the device; x also at an odd offset); B = 4; the benchmark width; the step linears
 * on FFMA and on tensor cores (mma.sync m16n8k16).  max|out-ref|/max|ref| of
 * y and of the final states: bf16 <= 2e-2, f16 <= 5e-3.  Outputs start
 * poisoned (NaN).  Training a half model is refused.  Exits 77 without a
 * GPU. */
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

/* Training a half model on the fused backend says why it cannot. */
static void test_training_refused(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    hcase hc = {"lstm", 4, 2, 8, 8, 1, false, false, false, RNNC_BF16, 0};
    rnnc_model *f = make(&hc, RNNC_BACKEND_FUSED);
    tu_set_random_weights_on(&f, 1, &rng, -0.3, 0.3);
    bufs b;
    make_bufs(&hc, f, &rng, &b);
    rnnc_forward_args a = {.seq_len = hc.T, .batch = hc.B, .x = b.x, .y = b.y, .training = true};
    assert_int_equal(rnnc_model_forward(f, &a), RNNC_ERR_UNSUPPORTED);
    assert_non_null(strstr(rnnc_last_error(), "training a BF16 model"));
    free_bufs(&b);
    rnnc_model_destroy(f);
}

int main(void)
{
    tu_require_gpu();
    setenv("RNNC_AUTOTUNE", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_training_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
