/* gpu_fused_model.c (label gpu): whole models on the fused backend against
 * the interpreter: every built-in cell and two .cell cells of this file x
 * layers {1, 2, 4} x {uni, bi} x {padded, random lengths} x dropout {0,
 * 0.3} (training, between layers) x proj_size {0, P} (the LSTM cells), and
 * batch_first on every other case; four cells with dropout ops of their
 * own (tests/data/cells/), in training.  y and the final states of every
 * pseudo-layer, poisoned before the run, must agree to max|out-ref| /
 * max|ref| <= 1e-5.  Dropout is drawn from the same Philox stream by both:
 * one mask bit that differed would zero (or keep) a value of layer l's
 * output that layer l+1 reads, an error of the size of the values
 * themselves, far above the tolerance.  Exits 77 without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/spec/spec.h"
#include "testutil.h"

#define TOL 1e-5
#define MAX_STATES 4

/* Minimal gated unit: two phases (f, then f * h through a second linear). */
static const char k_mgu[] =
    "cell mgu {\n"
    "    input x[I]\n    state h[H]\n"
    "    param weight_ih[2H, I]\n    param weight_hf[H, H]\n    param weight_hn[H, H]\n"
    "    param bias[2H]\n"
    "    gi = linear(x, weight_ih) + bias\n"
    "    i_f, i_n = chunk(gi, 2)\n"
    "    f = sigmoid(i_f + linear(h, weight_hf))\n"
    "    n = tanh(i_n + linear(f * h, weight_hn))\n"
    "    h_next = (1 - f) * h + f * n\n"
    "    next h = h_next\n    output h_next\n}\n";

/* LSTM with coupled input and forget gates. */
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

typedef struct mcase {
    const char *cell; /* built-in name, or one of this file's */
    int64_t T, B, I, H, P;
    int layers;
    bool bi, lengths, batch_first;
    double dropout;
} mcase;

static const struct {
    const char *name, *text;
} k_files[] = {{"mgu", k_mgu}, {"cifg", k_cifg}};

/* Cells with dropout ops of their own (tests/data/cells/): on step
 * elements, on a state a linear reads, on a hoisted GEMM's epilogue, on a
 * value of the row kernel, on the input (masked by the runtime). */
static const char *const k_drop_cells[] = {"semd", "hdrop", "lnd", "xdrop"};
/* Cells whose hoisted linears read something other than x, made for every
 * row in an earlier round (codegen/cuda/cuda_rounds.c). */
static const char *const k_round_cells[] = {"preln", "chain", "twice"};

static rnnc_cell *load_cell(const char *name)
{
    rnnc_cell *c = NULL;
    for (size_t i = 0; i < sizeof k_files / sizeof k_files[0]; i++)
        if (strcmp(name, k_files[i].name) == 0) {
            const char *t = k_files[i].text;
            assert_ok(rnnc_cell_parse(&c, t, strlen(t), name, NULL, NULL));
            return c;
        }
    for (size_t i = 0; i < sizeof k_drop_cells / sizeof k_drop_cells[0]; i++)
        if (strcmp(name, k_drop_cells[i]) == 0)
            return tu_data_cell(name);
    for (size_t i = 0; i < sizeof k_round_cells / sizeof k_round_cells[0]; i++)
        if (strcmp(name, k_round_cells[i]) == 0)
            return tu_data_cell(name);
    assert_ok(rnnc_cell_builtin(&c, name, NULL));
    return c;
}

static rnnc_model *make(const mcase *mc, rnnc_backend be)
{
    rnnc_cell *cell = load_cell(mc->cell);
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = mc->I;
    d.hidden_size = mc->H;
    d.proj_size = mc->P;
    d.num_layers = mc->layers;
    d.bidirectional = mc->bi;
    d.batch_first = mc->batch_first;
    d.dropout = mc->dropout;
    d.seed = 0x5eed0000u + (uint64_t)mc->layers;
    d.backend = be;
    rnnc_model *m = NULL;
    rnnc_status st = rnnc_model_create(&m, &d);
    if (st)
        fail_msg("%s: %s model: %s", mc->cell, be == RNNC_BACKEND_FUSED ? "fused" : "interp",
                 rnnc_last_error());
    rnnc_cell_destroy(cell);
    return m;
}

static double rel_err(const float *out, const float *ref, size_t n)
{
    double *r = malloc(n * sizeof *r);
    assert_non_null(r);
    for (size_t i = 0; i < n; i++)
        r[i] = ref[i];
    double e = tu_rel_err_f32(out, r, n);
    free(r);
    return e;
}

typedef struct bufs {
    int ns;
    size_t nx, ny, nst[MAX_STATES];
    float *x, *y, *yr, *init[MAX_STATES], *fin[MAX_STATES], *finr[MAX_STATES];
    int64_t *len;
} bufs;

static void alloc_bufs(const mcase *mc, rnnc_model *m, uint64_t *rng, bufs *b)
{
    int64_t hout = 0, D = mc->bi ? 2 : 1;
    assert_ok(rnnc_model_output_size(m, &hout));
    b->ns = 0;
    while (b->ns < MAX_STATES) {
        int64_t n = 0;
        if (rnnc_model_state_size(m, b->ns, &n) != RNNC_OK)
            break;
        b->nst[b->ns++] = (size_t)(mc->layers * D * mc->B * n);
    }
    b->nx = (size_t)(mc->T * mc->B * mc->I);
    b->ny = (size_t)(mc->T * mc->B * D * hout);
    b->x = malloc(b->nx * 4);
    b->y = malloc(b->ny * 4);
    b->yr = malloc(b->ny * 4);
    tu_fill_f32(b->x, b->nx, rng, -1, 1);
    tu_poison_f32(b->y, b->ny);
    tu_poison_f32(b->yr, b->ny);
    for (int s = 0; s < b->ns; s++) {
        b->init[s] = malloc(b->nst[s] * 4);
        b->fin[s] = malloc(b->nst[s] * 4);
        b->finr[s] = malloc(b->nst[s] * 4);
        tu_fill_f32(b->init[s], b->nst[s], rng, -0.5, 0.5);
        tu_poison_f32(b->fin[s], b->nst[s]);
        tu_poison_f32(b->finr[s], b->nst[s]);
    }
    b->len = NULL;
    if (mc->lengths) {
        b->len = malloc((size_t)mc->B * sizeof *b->len);
        for (int64_t i = 0; i < mc->B; i++)
            b->len[i] = 1 + (int64_t)(tu_uniform(rng, 0, 1) * (double)mc->T) % mc->T;
        b->len[0] = mc->T; /* the longest row is T (any order) */
    }
}

static void free_bufs(bufs *b)
{
    free(b->x);
    free(b->y);
    free(b->yr);
    free(b->len);
    for (int s = 0; s < b->ns; s++) {
        free(b->init[s]);
        free(b->fin[s]);
        free(b->finr[s]);
    }
}

static void *dev_copy(const float *h, size_t n)
{
    void *d = NULL;
    assert_ok(rnnc_device_alloc(0, n * 4, &d));
    assert_ok(rnnc_device_upload(d, h, n * 4));
    return d;
}

/* The fused forward of a on device copies of its buffers (dev = 1), the
 * final states written over the initial ones (dev = 2); results back in
 * b->y and b->fin. */
static rnnc_status forward_dev(rnnc_model *f, const rnnc_forward_args *a, bufs *b, int dev)
{
    void *dx = dev_copy(b->x, b->nx), *dy = dev_copy(b->y, b->ny), *out[MAX_STATES];
    const void *in[MAX_STATES];
    for (int s = 0; s < b->ns; s++) {
        in[s] = dev_copy(b->init[s], b->nst[s]);
        out[s] = dev == 2 ? (void *)in[s] : dev_copy(b->fin[s], b->nst[s]);
    }
    rnnc_forward_args d = *a;
    d.x = dx;
    d.y = dy;
    d.init = in;
    d.final = out;
    d.device_pointers = true;
    rnnc_status st = rnnc_model_forward(f, &d);
    assert_ok(rnnc_device_sync(NULL));
    if (st == RNNC_OK)
        assert_ok(rnnc_device_download(b->y, dy, b->ny * 4));
    for (int s = 0; st == RNNC_OK && s < b->ns; s++)
        assert_ok(rnnc_device_download(b->fin[s], out[s], b->nst[s] * 4));
    rnnc_device_free(dx);
    rnnc_device_free(dy);
    for (int s = 0; s < b->ns; s++) {
        rnnc_device_free((void *)in[s]);
        if (dev != 2)
            rnnc_device_free(out[s]);
    }
    return st;
}

/* train: a training call even without dropout between layers (a cell's
 * own dropout ops drop then). */
static void run_mode(const mcase *mc, uint64_t *rng, int dev, bool train)
{
    rnnc_model *f = make(mc, RNNC_BACKEND_FUSED), *r = make(mc, RNNC_BACKEND_INTERP);
    rnnc_model *both[2] = {f, r};
    /* PyTorch's init range: larger weights make the recurrence chaotic at
     * large H (fp32 rounding grows every step, whoever computes it) */
    double k = 1.0 / sqrt((double)mc->H);
    tu_set_random_weights_on(both, 2, rng, -k, k);
    bufs b;
    alloc_bufs(mc, f, rng, &b);
    rnnc_forward_args a = {.seq_len = mc->T, .batch = mc->B, .x = b.x, .y = b.yr,
                           .init = (const void *const *)b.init, .lengths = b.len,
                           .final = (void *const *)b.finr,
                           .training = mc->dropout > 0 || train};
    assert_ok(rnnc_model_forward(r, &a));
    a.y = b.y;
    a.final = (void *const *)b.fin;
    if (dev ? forward_dev(f, &a, &b, dev) : rnnc_model_forward(f, &a))
        fail_msg("%s L=%d bi=%d: fused forward: %s", mc->cell, mc->layers, mc->bi,
                 rnnc_last_error());
    double ey = rel_err(b.y, b.yr, b.ny), ef = 0;
    for (int s = 0; s < b.ns; s++) {
        double e = rel_err(b.fin[s], b.finr[s], b.nst[s]);
        ef = e > ef || e != e ? e : ef;
    }
    printf("  %-15s T=%lld L=%d D=%d P=%-3lld len=%d bf=%d drop=%.1f train=%d dev=%d  y %.2e  "
           "final %.2e\n",
           mc->cell, (long long)mc->T, mc->layers, mc->bi ? 2 : 1, (long long)mc->P, mc->lengths,
           mc->batch_first, mc->dropout, a.training, dev, ey, ef);
    fflush(stdout);
    if (!(ey <= TOL) || !(ef <= TOL))
        fail_msg("%s L=%d bi=%d P=%lld lengths=%d dropout=%.1f: rel err y %.3g final %.3g > %g",
                 mc->cell, mc->layers, mc->bi, (long long)mc->P, mc->lengths, mc->dropout, ey,
                 ef, TOL);
    /* a cell's own dropout ops must have dropped something: the same call
     * in inference (the ops the identity) gives another y */
    if (train && mc->dropout == 0 && !dev) {
        a.training = false;
        assert_ok(rnnc_model_forward(f, &a));
        double d = rel_err(b.yr, b.y, b.ny);
        if (!(d > 1e-2))
            fail_msg("%s: training and inference differ by only %.3g", mc->cell, d);
    }
    free_bufs(&b);
    rnnc_model_destroy(f);
    rnnc_model_destroy(r);
}

static void run_case(const mcase *mc, uint64_t *rng)
{
    run_mode(mc, rng, 0, false);
}

static bool has_proj(const char *cell)
{
    return strcmp(cell, "lstm") == 0 || strcmp(cell, "dropout_lstm") == 0;
}

/* The grid for one cell; small shapes keep the kernels quick to run. */
static void grid(const char *cell, uint64_t *rng)
{
    static const int layers[] = {1, 2, 4};
    int n = 0;
    for (int pi = 0; pi < (has_proj(cell) ? 2 : 1); pi++)
        for (size_t li = 0; li < 3; li++)
            for (int bi = 0; bi < 2; bi++)
                for (int len = 0; len < 2; len++)
                    for (int dr = 0; dr < 2; dr++) {
                        mcase mc = {cell, 9, 5, 12, 16, pi ? 8 : 0, layers[li], bi, len,
                                    (n++ & 1) != 0, dr ? 0.3 : 0.0};
                        run_case(&mc, rng);
                    }
}

static void test_builtin_grid(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const char *const *names = rnnc_cell_builtin_names();
    for (int c = 0; names[c]; c++)
        grid(names[c], &rng);
}

static void test_cell_files_grid(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    grid("mgu", &rng);
    grid("cifg", &rng);
}

/* Larger shapes: several batch groups (rows of different groups end at
 * different steps), a projection, the fastrnns width, unidirectional
 * stacks (which run as a wavefront of chunks: RNNC_FUSED_CHUNK=3 makes
 * many, scripts/gpu-fused-check.sh runs the test with it too). */
static void test_model_shapes(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const mcase cases[] = {
        {"lstm", 30, 64, 64, 128, 0, 2, true, true, false, 0.3},
        {"lstm", 20, 37, 40, 96, 32, 3, true, true, true, 0.0},
        {"gru", 25, 64, 512, 512, 0, 2, true, true, false, 0.0},
        {"layernorm_lstm", 12, 48, 64, 128, 0, 2, true, true, false, 0.2},
        {"lstm", 50, 3, 64, 256, 128, 2, false, true, false, 0.0},
        /* the wavefront of time chunks: several groups, rows ending mid-chunk */
        {"lstm", 40, 64, 512, 512, 0, 4, false, true, false, 0.0},
        {"gru", 37, 32, 64, 256, 0, 3, false, false, false, 0.0},
        /* one layer over 1024 rows and more: the large GEMM tiles (128
         * rows) cut steps at B = 48, rows end early, a projection makes
         * two phases */
        {"lstm", 60, 64, 256, 256, 0, 1, false, true, false, 0.0},
        {"gru", 33, 48, 128, 192, 0, 1, false, true, false, 0.0},
        {"lstm", 45, 40, 96, 160, 32, 1, false, false, false, 0.0},
        /* two elements a thread (16 units x 32 rows at 256 threads): the
         * register arrays across the layernorm cell's three phases, rows
         * ending early */
        {"layernorm_lstm", 12, 128, 512, 512, 0, 1, false, true, false, 0.0},
        /* batches no tiling of one pass fits (cuda_passes.c):
         * a block's rows in two or more passes a step; both directions,
         * lengths, a projection's two phases, a .cell cell over two
         * layers, batch_first */
        {"lstm", 3, 32768, 64, 64, 0, 1, true, true, false, 0.0},
        {"lstm", 3, 16384, 64, 128, 32, 1, false, true, false, 0.0},
        {"cifg", 3, 32768, 32, 64, 0, 2, false, true, true, 0.0},
        {"gru", 3, 65536, 32, 32, 0, 1, true, false, false, 0.0},
        /* the values crossing a layernorm LSTM's three phases kept in
         * global memory (a copy a pass would be all of the group's) */
        {"layernorm_lstm", 3, 16384, 64, 128, 0, 2, true, true, false, 0.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], &rng);
}

/* The cells' own dropout ops in training, masks drawn in the kernels:
 * layers {1, 2, 4} (unidirectional stacks run as a wavefront of time
 * chunks, each chunk's steps at their true times) x {uni, bi} x {padded,
 * lengths}, batch_first on every other case, dropout between layers on
 * every third; then larger shapes (other step tilings, several batch
 * groups) and inference, where the ops are the identity. */
static void test_cell_dropout(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const int layers[] = {1, 2, 4};
    int n = 0;
    for (size_t c = 0; c < sizeof k_drop_cells / sizeof k_drop_cells[0]; c++)
        for (size_t li = 0; li < 3; li++)
            for (int bi = 0; bi < 2; bi++)
                for (int len = 0; len < 2; len++, n++) {
                    mcase mc = {k_drop_cells[c], 20, 5, 12, 16, 0, layers[li], bi, len,
                                (n & 1) != 0, n % 3 == 0 ? 0.3 : 0.0};
                    run_mode(&mc, &rng, 0, true);
                }
    static const mcase cases[] = {
        {"semd", 30, 64, 512, 512, 0, 2, false, true, false, 0.0},
        {"semd", 12, 256, 1024, 1024, 0, 1, true, false, false, 0.0},
        {"hdrop", 25, 64, 256, 512, 0, 1, true, true, true, 0.0},
        {"lnd", 16, 96, 128, 256, 0, 2, false, true, false, 0.0},
        {"xdrop", 40, 64, 512, 512, 0, 4, false, true, false, 0.0},
        {"xdrop", 20, 48, 96, 128, 0, 2, true, true, true, 0.0},
        {"semd", 9, 5, 12, 16, 0, 2, true, true, false, 0.0},
    };
    size_t nc = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < nc; i++)
        run_mode(&cases[i], &rng, 0, i + 1 < nc); /* the last in inference */
}

/* Hoisted work in rounds: layers {1, 2, 4} x {uni, bi} x {padded,
 * lengths}, batch_first and dropout between layers mixed in, in training
 * and in inference (twice drops x in the first round's row kernel); then
 * the GEMM tiers over hz (large tiles with a tail at 6400 rows, small at
 * B = 1, I = H = 1024 at B = 256). */
static void test_round_cells(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const int layers[] = {1, 2, 4};
    int n = 0;
    for (size_t c = 0; c < sizeof k_round_cells / sizeof k_round_cells[0]; c++)
        for (size_t li = 0; li < 3; li++)
            for (int bi = 0; bi < 2; bi++)
                for (int len = 0; len < 2; len++, n++) {
                    mcase mc = {k_round_cells[c], 20, 5, 12, 16, 0, layers[li], bi, len,
                                (n & 1) != 0, n % 3 == 0 ? 0.3 : 0.0};
                    /* a training call of twice drops inside (run_mode checks it
                     * differs from inference: the others drop nothing) */
                    run_mode(&mc, &rng, 0, c == 2 && (n & 2) != 0);
                }
    static const mcase cases[] = {
        {"preln", 100, 64, 512, 512, 0, 2, false, true, false, 0.3},
        {"chain", 30, 1, 256, 512, 0, 1, true, false, false, 0.0},
        {"twice", 40, 64, 512, 512, 0, 4, false, true, false, 0.0},
        {"preln", 12, 256, 1024, 1024, 0, 1, false, false, true, 0.0},
        {"chain", 25, 48, 96, 128, 0, 2, true, true, true, 0.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_mode(&cases[i], &rng, 0, strcmp(cases[i].cell, "twice") == 0);
}

/* rnnc_model_set_seed reaches the kernels: after a new seed on both
 * models the fused training forward (a cell's own dropout ops and dropout
 * between layers) still equals the interpreter's, and differs from the
 * first seed's. */
static void test_set_seed(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    mcase mc = {"semd", 12, 8, 16, 32, 0, 2, true, true, false, 0.3};
    rnnc_model *f = make(&mc, RNNC_BACKEND_FUSED), *r = make(&mc, RNNC_BACKEND_INTERP);
    rnnc_model *both[2] = {f, r};
    tu_set_random_weights_on(both, 2, &rng, -0.25, 0.25);
    bufs b;
    alloc_bufs(&mc, f, &rng, &b);
    float *y0 = malloc(b.ny * 4);
    rnnc_forward_args a = {.seq_len = mc.T, .batch = mc.B, .x = b.x, .y = y0,
                           .lengths = b.len, .training = true};
    assert_ok(rnnc_model_forward(f, &a));
    for (int k = 0; k < 2; k++)
        assert_ok(rnnc_model_set_seed(both[k], 0xfeedu));
    a.y = b.yr;
    assert_ok(rnnc_model_forward(r, &a));
    a.y = b.y;
    assert_ok(rnnc_model_forward(f, &a));
    double e = rel_err(b.y, b.yr, b.ny), d = rel_err(y0, b.yr, b.ny);
    printf("  set_seed: fused against interp %.2e, against the first seed's %.2e\n", e, d);
    if (!(e <= TOL) || !(d > 1e-2))
        fail_msg("set_seed: rel err %.3g (want <= %g), first seed's %.3g (want > 1e-2)", e, TOL,
                 d);
    free(y0);
    free_bufs(&b);
    rnnc_model_destroy(f);
    rnnc_model_destroy(r);
}

/* Device pointers: the step kernels read the initial states from the
 * caller's buffers and write the final ones there (no copies; in the
 * wavefront of a unidirectional stack the first chunk reads them and the
 * last writes them, and the chunks between start from FIN in place, but
 * with lengths it copies), also when the final states overwrite the
 * initial ones (T = 1 then goes through the third copy); single steps run
 * the K-split GEMM. */
static void test_device_states(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const mcase cases[] = {
        {"lstm", 9, 5, 12, 16, 0, 2, true, true, false, 0.0},
        {"lstm", 1, 64, 512, 512, 0, 1, false, false, false, 0.0},
        {"lstm", 1, 5, 12, 16, 8, 2, true, false, true, 0.0},
        {"gru", 4, 33, 64, 128, 0, 3, false, true, false, 0.0},
        {"lstm", 20, 16, 32, 64, 0, 3, false, true, false, 0.0}, /* a wavefront: copies */
        {"lstm", 20, 16, 32, 64, 0, 3, false, false, false, 0.0}, /* a wavefront: in place */
        {"gru", 30, 24, 48, 64, 0, 2, false, false, false, 0.0},
        {"cifg", 6, 17, 24, 32, 0, 1, true, true, true, 0.0},
        {"layernorm_lstm", 1, 64, 128, 128, 0, 2, false, false, false, 0.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int dev = 1; dev <= 2; dev++)
            run_mode(&cases[i], &rng, dev, false);
}

int main(void)
{
    tu_require_gpu();
    setenv("RNNC_AUTOTUNE", "0", 1); /* the heuristic tiles: no timing in a test */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_shapes),
        cmocka_unit_test(test_device_states),
        cmocka_unit_test(test_builtin_grid),
        cmocka_unit_test(test_cell_files_grid),
        cmocka_unit_test(test_cell_dropout),
        cmocka_unit_test(test_round_cells),
        cmocka_unit_test(test_set_seed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
