/*
 * gpu_cudnn_paths.c: issue 14's cuDNN paths on a GPU, through the public
 * API, each against the reference interpreter on the same weights
 * (max|out - ref| / max|ref| <= 1e-5, fp32 with FFMA):
 *   - every cuDNN algorithm on shapes it accepts (a refusal is printed,
 *     but at least one persistent algorithm must run), and AUTO's timing;
 *   - bias=False LSTM, GRU and RNN; and PyTorch's own bias=False files when
 *     scripts/torch_reference.py has written them (skipped, saying so, if not);
 *   - packed input against padded input, on host and device pointers;
 *   - weights from device memory, and a flat device weight buffer with its
 *     gradients against host weights;
 *   - simulated workspace allocation failures: the retry paths and the report.
 * Every failure says which case, algorithm and error.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

static uint64_t rng;

typedef struct cfg {
    const char *cell;
    int64_t I, H;
    int layers;
    bool bidir, no_bias;
    rnnc_cudnn_algo algo;
} cfg;

static rnnc_model *make(const cfg *c, rnnc_backend be)
{
    rnnc_cell *cell = NULL;
    assert_ok(rnnc_cell_builtin(&cell, c->cell, NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = c->I;
    d.hidden_size = c->H;
    d.num_layers = c->layers;
    d.bidirectional = c->bidir;
    d.no_bias = c->no_bias;
    d.cudnn_algo = c->algo;
    d.backend = be;
    rnnc_model *m = NULL;
    rnnc_status s = rnnc_model_create(&m, &d);
    rnnc_cell_destroy(cell);
    if (s != RNNC_OK)
        fail_msg("%s on %s (algo %s): %s", c->cell, rnnc_backend_name(be),
                 rnnc_cudnn_algo_name(c->algo), rnnc_last_error());
    return m;
}

static double rel_err(const float *out, const float *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)out[i] - (double)ref[i]);
        num = d > num || isnan(d) ? d : num;
        den = fabs((double)ref[i]) > den ? fabs((double)ref[i]) : den;
    }
    return den > 0 ? num / den : num;
}

/* One call's host buffers: x, y and the final h (and c). */
typedef struct io {
    int64_t T, B, rows, fy, nst[2];
    int n_states;
    float *x, *y, *fin[2];
    int64_t *lengths, *batch_sizes;
} io;

static void io_init(io *b, rnnc_model *m, int64_t T, int64_t B, int64_t I, bool ragged)
{
    memset(b, 0, sizeof *b);
    b->T = T, b->B = B, b->rows = T * B;
    assert_ok(rnnc_model_output_size(m, &b->fy));
    for (int s = 0; s < 2 && rnnc_model_state_size(m, s, &b->nst[s]) == RNNC_OK; s++)
        b->n_states = s + 1;
    rnnc_clear_error();
    b->x = malloc(sizeof(float) * (size_t)(T * B * I));
    tu_fill_f32(b->x, (size_t)(T * B * I), &rng, -1, 1);
    if (ragged) {
        b->lengths = malloc(sizeof(int64_t) * (size_t)B);
        b->batch_sizes = malloc(sizeof(int64_t) * (size_t)T);
        /* sorted longest first, so the same lengths also make a packed batch */
        for (int64_t i = 0; i < B; i++)
            b->lengths[i] = i == 0 ? T : 1 + (int64_t)tu_uniform(&rng, 0, (double)b->lengths[i - 1]);
        for (int64_t t = 0; t < T; t++) {
            b->batch_sizes[t] = 0;
            for (int64_t i = 0; i < B; i++)
                b->batch_sizes[t] += b->lengths[i] > t;
        }
    }
}

static void io_outputs(io *b, int64_t D, int64_t pseudo)
{
    b->fy *= D;
    b->y = malloc(sizeof(float) * (size_t)(b->T * b->B * b->fy));
    tu_poison_f32(b->y, (size_t)(b->T * b->B * b->fy));
    for (int s = 0; s < b->n_states; s++) {
        b->nst[s] *= pseudo * b->B;
        b->fin[s] = malloc(sizeof(float) * (size_t)b->nst[s]);
        tu_poison_f32(b->fin[s], (size_t)b->nst[s]);
    }
}

static void io_free(io *b)
{
    free(b->x), free(b->y), free(b->fin[0]), free(b->fin[1]);
    free(b->lengths), free(b->batch_sizes);
}

static rnnc_status forward(rnnc_model *m, io *b, bool training)
{
    void *fin[2] = {b->fin[0], b->fin[1]};
    rnnc_forward_args a = {.seq_len = b->T, .batch = b->B, .x = b->x, .y = b->y,
                           .final = fin, .lengths = b->lengths, .training = training};
    return rnnc_model_forward(m, &a);
}

/* Worst relative error of y and the final states of b against ref. */
static double io_err(const io *b, const io *ref)
{
    double e = rel_err(b->y, ref->y, (size_t)(b->T * b->B * b->fy));
    for (int s = 0; s < b->n_states; s++) {
        double es = rel_err(b->fin[s], ref->fin[s], (size_t)b->nst[s]);
        e = es > e ? es : e;
    }
    return e;
}

/* Runs c on cudnn and on the interpreter with the same weights and inputs:
 * RNNC_OK and *err, or cuDNN's refusal (printed). */
static rnnc_status against_interp(const cfg *c, int64_t T, int64_t B, bool ragged, double *err,
                                  rnnc_cudnn_algo *ran)
{
    rnnc_model *mc = make(c, RNNC_BACKEND_CUDNN), *mi = make(c, RNNC_BACKEND_INTERP);
    rnnc_model *both[2] = {mc, mi};
    tu_set_random_weights_on(both, 2, &rng, -0.3, 0.3);
    int64_t D = c->bidir ? 2 : 1;
    io bc, bi;
    io_init(&bc, mc, T, B, c->I, ragged);
    io_init(&bi, mi, T, B, c->I, false);
    memcpy(bi.x, bc.x, sizeof(float) * (size_t)(T * B * c->I));
    bi.lengths = bc.lengths ? malloc(sizeof(int64_t) * (size_t)B) : NULL;
    if (bi.lengths)
        memcpy(bi.lengths, bc.lengths, sizeof(int64_t) * (size_t)B);
    io_outputs(&bc, D, c->layers * D);
    io_outputs(&bi, D, c->layers * D);
    rnnc_status s = forward(mc, &bc, false);
    if (s == RNNC_OK) {
        assert_ok(forward(mi, &bi, false));
        *err = io_err(&bc, &bi);
        assert_ok(rnnc_model_cudnn_algo(mc, ran));
    } else {
        fprintf(stderr, "  cuDNN refused %s algo %s T=%lld B=%lld I=%lld H=%lld: %s: %s\n", c->cell,
                rnnc_cudnn_algo_name(c->algo), (long long)T, (long long)B, (long long)c->I,
                (long long)c->H, rnnc_status_string(s), rnnc_last_error());
    }
    io_free(&bc);
    io_free(&bi);
    rnnc_model_destroy(mi);
    rnnc_model_destroy(mc);
    return s;
}

/* ---------------------------------------------------------------- algorithms */

static void test_each_algorithm(void **state)
{
    (void)state;
    static const char *const cells[] = {"lstm", "gru", "rnn_tanh"};
    static const rnnc_cudnn_algo algos[] = {
        RNNC_CUDNN_ALGO_STANDARD, RNNC_CUDNN_ALGO_PERSIST_STATIC,
        RNNC_CUDNN_ALGO_PERSIST_STATIC_SMALL_H, RNNC_CUDNN_ALGO_PERSIST_DYNAMIC};
    int persistent_ran = 0, failures = 0;
    for (size_t k = 0; k < 3; k++) {
        for (size_t a = 0; a < 4; a++) {
            cfg c = {.cell = cells[k], .I = 64, .H = 128, .layers = 1, .algo = algos[a]};
            double err = 0;
            rnnc_cudnn_algo ran = RNNC_CUDNN_ALGO_AUTO;
            rnnc_status s = against_interp(&c, 20, 8, false, &err, &ran);
            if (s != RNNC_OK) {
                if (algos[a] == RNNC_CUDNN_ALGO_STANDARD)
                    failures++;
                continue;
            }
            fprintf(stderr, "  %s %s: rel err %.3e\n", cells[k], rnnc_cudnn_algo_name(ran), err);
            if (err > 1e-5 || ran != algos[a]) {
                fprintf(stderr, "FAIL: %s with algo %s ran %s, rel err %.3e (> 1e-5?)\n",
                        cells[k], rnnc_cudnn_algo_name(algos[a]), rnnc_cudnn_algo_name(ran), err);
                failures++;
            }
            persistent_ran += algos[a] != RNNC_CUDNN_ALGO_STANDARD;
        }
    }
    if (persistent_ran == 0)
        fprintf(stderr, "FAIL: no persistent algorithm ran at all (see the refusals above)\n");
    assert_int_equal(failures, 0);
    assert_true(persistent_ran > 0);
}

/* AUTO with timing picks an eligible algorithm and records it. */
static void test_auto_timed(void **state)
{
    (void)state;
    setenv("RNNC_AUTOTUNE", "1", 1);
    cfg c = {.cell = "lstm", .I = 128, .H = 128, .layers = 1, .algo = RNNC_CUDNN_ALGO_AUTO};
    double err = 0;
    rnnc_cudnn_algo ran = RNNC_CUDNN_ALGO_AUTO;
    assert_ok(against_interp(&c, 30, 16, false, &err, &ran));
    fprintf(stderr, "  auto (timed) chose %s, rel err %.3e\n", rnnc_cudnn_algo_name(ran), err);
    assert_true(ran != RNNC_CUDNN_ALGO_AUTO);
    assert_true(err <= 1e-5);
    /* ragged lengths leave only STANDARD */
    assert_ok(against_interp(&c, 30, 16, true, &err, &ran));
    if (ran != RNNC_CUDNN_ALGO_STANDARD || err > 1e-5)
        fail_msg("auto with ragged lengths ran %s, rel err %.3e", rnnc_cudnn_algo_name(ran), err);
    setenv("RNNC_AUTOTUNE", "0", 1);
}

/* ---------------------------------------------------------------- bias=False */

static void test_no_bias(void **state)
{
    (void)state;
    static const char *const cells[] = {"lstm", "gru", "rnn_tanh", "rnn_relu"};
    for (size_t k = 0; k < 4; k++) {
        cfg c = {.cell = cells[k], .I = 5, .H = 7, .layers = 2, .bidir = true, .no_bias = true};
        double err = 0;
        rnnc_cudnn_algo ran;
        assert_ok(against_interp(&c, 6, 4, true, &err, &ran));
        fprintf(stderr, "  %s bias=False: rel err %.3e\n", cells[k], err);
        if (err > 1e-5)
            fail_msg("%s bias=False on cudnn: rel err %.3e against the interpreter", cells[k], err);
    }
}

/* PyTorch's own bias=False outputs (scripts/torch_reference.py). */
static void test_no_bias_torch_files(void **state)
{
    (void)state;
    static const struct {
        const char *name, *cell;
        int layers;
        bool bidir;
    } cases[] = {{"lstm_nobias", "lstm", 2, true},
                 {"gru_nobias", "gru", 2, false},
                 {"rnn_tanh_nobias", "rnn_tanh", 1, false}};
    for (size_t k = 0; k < 3; k++) {
        char wpath[4096], iopath[4096];
        snprintf(wpath, sizeof wpath, "%s/%s.weights.safetensors", getenv("RNNC_TEST_DATA"),
                 cases[k].name);
        snprintf(iopath, sizeof iopath, "%s/%s.io.safetensors", getenv("RNNC_TEST_DATA"),
                 cases[k].name);
        rnnc_tensors *w = NULL, *iot = NULL;
        if (rnnc_tensors_load(&w, wpath) != RNNC_OK || rnnc_tensors_load(&iot, iopath) != RNNC_OK) {
            fprintf(stderr,
                    "  SKIPPED %s: %s is missing; write it where PyTorch is with\n"
                    "    python3 scripts/torch_reference.py tests/data\n",
                    cases[k].name, wpath);
            rnnc_tensors_destroy(w);
            continue;
        }
        const rnnc_tensor *x = rnnc_tensors_get(iot, "x");
        const rnnc_tensor *wih = rnnc_tensors_get(w, "weight_ih_l0");
        assert_non_null(x);
        assert_non_null(wih);
        cfg c = {.cell = cases[k].cell, .I = x->shape[2], .layers = cases[k].layers,
                 .bidir = cases[k].bidir, .no_bias = true};
        c.H = wih->shape[0] / (strcmp(c.cell, "lstm") == 0 ? 4 : strcmp(c.cell, "gru") == 0 ? 3 : 1);
        rnnc_model *m = make(&c, RNNC_BACKEND_CUDNN);
        assert_ok(rnnc_model_set_weights(m, w));
        int64_t T = x->shape[0], B = x->shape[1], D = c.bidir ? 2 : 1;
        const rnnc_tensor *len = rnnc_tensors_get(iot, "lengths");
        const rnnc_tensor *h0 = rnnc_tensors_get(iot, "h0"), *c0 = rnnc_tensors_get(iot, "c0");
        const rnnc_tensor *ry = rnnc_tensors_get(iot, "y"), *rh = rnnc_tensors_get(iot, "hy");
        size_t ny = (size_t)(T * B * D * c.H), nh = (size_t)(c.layers * D * B * c.H);
        float *y = malloc(sizeof(float) * ny), *hy = malloc(sizeof(float) * nh);
        float *cy = malloc(sizeof(float) * nh);
        tu_poison_f32(y, ny), tu_poison_f32(hy, nh), tu_poison_f32(cy, nh);
        const void *init[2] = {h0 ? h0->data : NULL, c0 ? c0->data : NULL};
        void *fin[2] = {hy, cy};
        rnnc_forward_args a = {.seq_len = T, .batch = B, .x = x->data, .y = y, .init = init,
                               .final = fin, .lengths = len ? len->data : NULL};
        assert_ok(rnnc_model_forward(m, &a));
        double e;
        float *fy = malloc(sizeof(float) * ny), *fh = malloc(sizeof(float) * nh);
        assert_ok(rt_tensor_to_f32(ry, fy));
        assert_ok(rt_tensor_to_f32(rh, fh));
        e = rel_err(y, fy, ny);
        double eh = rel_err(hy, fh, nh);
        fprintf(stderr, "  %s vs PyTorch: y %.3e, hy %.3e\n", cases[k].name, e, eh);
        if (e > 1e-5 || eh > 1e-5)
            fail_msg("%s: cudnn against PyTorch's file: y %.3e hy %.3e", cases[k].name, e, eh);
        free(fh), free(fy), free(cy), free(hy), free(y);
        rnnc_model_destroy(m);
        rnnc_tensors_destroy(iot);
        rnnc_tensors_destroy(w);
    }
}

/* ---------------------------------------------------------------- packed */

static void test_packed_vs_padded(void **state)
{
    (void)state;
    cfg c = {.cell = "lstm", .I = 6, .H = 9, .layers = 2, .bidir = true};
    rnnc_model *m = make(&c, RNNC_BACKEND_CUDNN);
    tu_set_random_weights(m, &rng, -0.3, 0.3);
    int64_t T = 8, B = 5, F = 2 * c.H;
    io pad;
    io_init(&pad, m, T, B, c.I, true);
    io_outputs(&pad, 2, 4);
    assert_ok(forward(m, &pad, false));
    int64_t rows = api_packed_rows(pad.batch_sizes, T);
    float *xp = malloc(sizeof(float) * (size_t)(rows * c.I)), *yp = malloc(sizeof(float) * (size_t)(rows * F));
    float *ywant = malloc(sizeof(float) * (size_t)(rows * F)), *hp = malloc(sizeof(float) * (size_t)pad.nst[0]);
    api_pack(pad.x, pad.batch_sizes, T, B, c.I, sizeof(float), false, xp);
    api_pack(pad.y, pad.batch_sizes, T, B, F, sizeof(float), false, ywant);
    tu_poison_f32(yp, (size_t)(rows * F));
    tu_poison_f32(hp, (size_t)pad.nst[0]);
    void *fin[2] = {hp, NULL};
    rnnc_forward_args a = {.seq_len = T, .batch = B, .x = xp, .y = yp, .final = fin,
                           .batch_sizes = pad.batch_sizes};
    rnnc_status s = rnnc_model_forward(m, &a);
    if (s != RNNC_OK)
        fail_msg("packed forward on cudnn: %s", rnnc_last_error());
    double ey = rel_err(yp, ywant, (size_t)(rows * F)), eh = rel_err(hp, pad.fin[0], (size_t)pad.nst[0]);
    fprintf(stderr, "  packed vs padded (host): y %.3e h %.3e\n", ey, eh);
    assert_true(ey <= 1e-6 && eh <= 1e-6);
    /* the same from device pointers */
    CUdeviceptr dx = 0, dy = 0;
    assert_ok(rt_cuda_context(0));
    assert_ok(rt_dev_alloc(&dx, sizeof(float) * (size_t)(rows * c.I)));
    assert_ok(rt_dev_alloc(&dy, sizeof(float) * (size_t)(rows * F)));
    assert_ok(rt_dev_upload(dx, xp, sizeof(float) * (size_t)(rows * c.I), NULL));
    rnnc_forward_args ad = {.seq_len = T, .batch = B, .x = (void *)(uintptr_t)dx,
                            .y = (void *)(uintptr_t)dy, .batch_sizes = pad.batch_sizes,
                            .device_pointers = true};
    assert_ok(rnnc_model_forward(m, &ad));
    tu_poison_f32(yp, (size_t)(rows * F));
    assert_ok(rt_dev_download(yp, dy, sizeof(float) * (size_t)(rows * F), NULL));
    assert_ok(rt_dev_sync(NULL));
    ey = rel_err(yp, ywant, (size_t)(rows * F));
    fprintf(stderr, "  packed vs padded (device): y %.3e\n", ey);
    assert_true(ey <= 1e-6);
    rt_dev_free(dy), rt_dev_free(dx);
    free(hp), free(ywant), free(yp), free(xp);
    io_free(&pad);
    rnnc_model_destroy(m);
}

/* ---------------------------------------------------------------- device weights */

static CUdeviceptr upload(const void *p, size_t n)
{
    CUdeviceptr d = 0;
    assert_ok(rt_dev_alloc(&d, n));
    assert_ok(rt_dev_upload(d, p, n, NULL));
    assert_ok(rt_dev_sync(NULL));
    return d;
}

static void test_device_weights(void **state)
{
    (void)state;
    cfg c = {.cell = "gru", .I = 7, .H = 6, .layers = 2, .bidir = true};
    rnnc_model *host = make(&c, RNNC_BACKEND_CUDNN), *dev = make(&c, RNNC_BACKEND_CUDNN);
    rnnc_model *flat = make(&c, RNNC_BACKEND_CUDNN);
    tu_set_random_weights(host, &rng, -0.3, 0.3);
    assert_ok(rt_cuda_context(0));
    int n = rnnc_model_weight_count(host);
    size_t bytes = 0, *off = malloc(sizeof(size_t) * (size_t)n);
    assert_ok(rnnc_model_weight_buffer(flat, &bytes, off));
    char *hbuf = calloc(1, bytes);
    api_weight *hw = host->weights;
    for (int i = 0; i < n; i++) {
        /* rnnc_model_set_weight_device from a device copy of each weight */
        CUdeviceptr d = upload(hw[i].data, sizeof(float) * (size_t)hw[i].count);
        assert_ok(rnnc_model_set_weight_device(dev, hw[i].name, (void *)(uintptr_t)d, hw[i].count));
        rt_dev_free(d);
        assert_true(off[i] + sizeof(float) * (size_t)hw[i].count <= bytes);
        memcpy(hbuf + off[i], hw[i].data, sizeof(float) * (size_t)hw[i].count);
    }
    CUdeviceptr wbuf = upload(hbuf, bytes), gbuf = 0;
    assert_ok(rt_dev_alloc(&gbuf, bytes));
    assert_ok(rnnc_model_bind_weight_buffer(flat, (void *)(uintptr_t)wbuf, (void *)(uintptr_t)gbuf,
                                            bytes));
    float one = 1;
    assert_int_equal(rnnc_model_set_weight(flat, hw[0].name, &one, 1), RNNC_ERR_STATE);
    rnnc_model *ms[3] = {host, dev, flat};
    io b[3];
    for (int k = 0; k < 3; k++) {
        io_init(&b[k], ms[k], 5, 3, c.I, false);
        if (k)
            memcpy(b[k].x, b[0].x, sizeof(float) * (size_t)(5 * 3 * c.I));
        io_outputs(&b[k], 2, 4);
        if (forward(ms[k], &b[k], true) != RNNC_OK)
            fail_msg("model %d (host, device, flat): %s", k, rnnc_last_error());
    }
    double e1 = io_err(&b[1], &b[0]), e2 = io_err(&b[2], &b[0]);
    fprintf(stderr, "  device weights %.3e, flat buffer %.3e against host weights\n", e1, e2);
    assert_true(e1 == 0 && e2 == 0);
    /* gradients land in the flat buffer at the weights' offsets */
    size_t ny = (size_t)(5 * 3 * 2 * c.H);
    float *dy = malloc(sizeof(float) * ny);
    tu_fill_f32(dy, ny, &rng, -1, 1);
    rnnc_backward_args g = {.dy = dy};
    assert_ok(rnnc_model_backward(host, &g));
    assert_ok(rnnc_model_backward(flat, &g));
    char *gh = malloc(bytes);
    assert_ok(rt_dev_download(gh, gbuf, bytes, NULL));
    assert_ok(rt_dev_sync(NULL));
    for (int i = 0; i < n; i++) {
        float *want = malloc(sizeof(float) * (size_t)hw[i].count);
        assert_ok(rnnc_model_weight_grad(host, hw[i].name, want, hw[i].count));
        double e = rel_err((const float *)(const void *)(gh + off[i]), want, (size_t)hw[i].count);
        if (e != 0)
            fail_msg("gradient of %s in the flat buffer: rel err %.3e", hw[i].name, e);
        free(want);
    }
    /* unbinding keeps the buffer's weights */
    assert_ok(rnnc_model_bind_weight_buffer(flat, NULL, NULL, 0));
    tu_poison_f32(b[2].y, ny);
    assert_ok(forward(flat, &b[2], true));
    assert_true(io_err(&b[2], &b[0]) == 0);
    free(gh), free(dy);
    for (int k = 0; k < 3; k++)
        io_free(&b[k]);
    rt_dev_free(gbuf), rt_dev_free(wbuf);
    free(hbuf), free(off);
    rnnc_model_destroy(flat), rnnc_model_destroy(dev), rnnc_model_destroy(host);
}

/* cuDNN's own placement agrees with the layout rnnc documents. */
static void test_layout_matches_cudnn(void **state)
{
    (void)state;
    cfg c = {.cell = "lstm", .I = 5, .H = 8, .layers = 2, .bidir = true};
    for (int nb = 0; nb < 2; nb++) {
        c.no_bias = nb;
        rnnc_model *m = make(&c, RNNC_BACKEND_CUDNN);
        const fb_rnn *r = m->slot[RNNC_BACKEND_CUDNN].state;
        fb_rnn_dims d[2] = {{.in = 5, .hidden = 8}, {.in = 16, .hidden = 8}};
        fb_lin_slot *want = calloc((size_t)(r->pseudo * r->n_lin), sizeof *want);
        size_t total = fb_rnn_expected_slots(FB_LSTM, 2, 2, d, !nb, sizeof(float), want);
        if (total != r->wsize)
            fail_msg("bias=%d: cuDNN's weight space is %zu bytes, the documented layout %zu", !nb,
                     r->wsize, total);
        for (int i = 0; i < r->pseudo * r->n_lin; i++)
            if (memcmp(&want[i], &r->slots[i], sizeof want[i]) != 0)
                fail_msg("bias=%d: linear layer %d of pseudo-layer %d: cuDNN at %zu/%zu (bias "
                         "%zu/%zu), documented %zu/%zu (%zu/%zu)",
                         !nb, i % r->n_lin, i / r->n_lin, r->slots[i].mat_off, r->slots[i].mat_n,
                         r->slots[i].bias_off, r->slots[i].bias_n, want[i].mat_off,
                         want[i].mat_n, want[i].bias_off, want[i].bias_n);
        free(want);
        rnnc_model_destroy(m);
    }
}

/* ---------------------------------------------------------------- out of memory */

static void test_alloc_failure_retry(void **state)
{
    (void)state;
    cfg c = {.cell = "lstm", .I = 64, .H = 128, .layers = 1};
    double err = 0;
    rnnc_cudnn_algo ran;
    /* one failure: freeing cached buffers and trying again succeeds */
    fb_rnn_fail_allocs(1);
    rnnc_status s = against_interp(&c, 12, 8, false, &err, &ran);
    if (s != RNNC_OK || err > 1e-5)
        fail_msg("after one simulated allocation failure: %s (rel err %.3e)",
                 rnnc_last_error(), err);
    /* two: AUTO moves to another eligible algorithm */
    fb_rnn_fail_allocs(2);
    s = against_interp(&c, 12, 8, false, &err, &ran);
    if (s != RNNC_OK || err > 1e-5)
        fail_msg("after two simulated failures (auto): %s (rel err %.3e)", rnnc_last_error(), err);
    fprintf(stderr, "  after two failures auto ran %s\n", rnnc_cudnn_algo_name(ran));
    assert_true(ran != RNNC_CUDNN_ALGO_STANDARD); /* STANDARD was the one that failed twice */
    /* always: reported with the sizes asked for; the model works afterwards */
    rnnc_model *m = make(&c, RNNC_BACKEND_CUDNN);
    tu_set_random_weights(m, &rng, -0.3, 0.3);
    io b;
    io_init(&b, m, 12, 8, c.I, false);
    io_outputs(&b, 1, 1);
    fb_rnn_fail_allocs(1000);
    s = forward(m, &b, false);
    fb_rnn_fail_allocs(0);
    fprintf(stderr, "  reported: %s\n", rnnc_last_error());
    assert_int_equal(s, RNNC_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(rnnc_last_error(), "workspace"));
    const fb_rnn *r = m->slot[RNNC_BACKEND_CUDNN].state;
    assert_true(r->oom_retries >= 2);
    assert_ok(forward(m, &b, false));
    io_free(&b);
    rnnc_model_destroy(m);
}

int main(void)
{
    tu_require_gpu();
    if (!rnnc_backend_available(RNNC_BACKEND_CUDNN)) {
        fprintf(stderr, "cudnn is not usable here: skipped\n");
        return TU_SKIP;
    }
    rng = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_algorithm),
        cmocka_unit_test(test_auto_timed),
        cmocka_unit_test(test_no_bias),
        cmocka_unit_test(test_no_bias_torch_files),
        cmocka_unit_test(test_packed_vs_padded),
        cmocka_unit_test(test_device_weights),
        cmocka_unit_test(test_layout_matches_cudnn),
        cmocka_unit_test(test_alloc_failure_retry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
