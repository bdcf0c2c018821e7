/*
 * gpu_cudnn_paths.c: issue 14's cuDNN paths on a GPU, through the public
 * API, each against the reference interpreter or PyTorch on the same
 * weights (max|out - ref| / max|ref| <= 1e-5, fp32 with FFMA, the standard
 * algorithm):
 *   - bias=False LSTM, GRU and RNN; and PyTorch's own bias=False files when
 *     scripts/torch_reference.py has written them (skipped, saying so, if not);
 *   - packed input against padded input, on host and device pointers;
 *   - weights from device memory, and a flat device weight buffer with its
 *     gradients against host weights;
 *   - cuDNN's placement of every matrix and bias against the documented
 *     layout, on each algorithm.
 * The algorithms themselves are gpu_cudnn_algos.c's.  Every failure says
 * which case and error.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_cudnn_pair.h"

static uint64_t rng;

/* ---------------------------------------------------------------- bias=False */

static void test_no_bias(void **state)
{
    (void)state;
    static const char *const cells[] = {"lstm", "gru", "rnn_tanh", "rnn_relu"};
    for (size_t k = 0; k < 4; k++) {
        pair_cfg c = {.cell = cells[k], .I = 5, .H = 7, .layers = 2, .bidir = true,
                      .no_bias = true};
        pair_run o = {.T = 6, .B = 4, .ragged = true, .init = true};
        double err = 0;
        rnnc_cudnn_algo ran;
        assert_ok(pair_against_interp(&c, &o, &rng, &err, &ran));
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
        pair_cfg c = {.cell = cases[k].cell, .I = x->shape[2], .layers = cases[k].layers,
                 .bidir = cases[k].bidir, .no_bias = true};
        int64_t gates = strcmp(c.cell, "lstm") == 0 ? 4 : strcmp(c.cell, "gru") == 0 ? 3 : 1;
        c.H = wih->shape[0] / gates;
        rnnc_model *m = pair_make(&c, RNNC_BACKEND_CUDNN);
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
        e = pair_rel_err(y, fy, ny);
        double eh = pair_rel_err(hy, fh, nh);
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
    pair_cfg c = {.cell = "lstm", .I = 6, .H = 9, .layers = 2, .bidir = true};
    rnnc_model *m = pair_make(&c, RNNC_BACKEND_CUDNN);
    tu_set_random_weights(m, &rng, -0.3, 0.3);
    int64_t T = 8, B = 5, F = 2 * c.H;
    pair_io pad;
    pair_io_init(&pad, m, &c, &(pair_run){.T = T, .B = B, .ragged = true}, &rng);
    assert_ok(pair_forward(m, &pad, false));
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
    double ey = pair_rel_err(yp, ywant, (size_t)(rows * F));
    double eh = pair_rel_err(hp, pad.fin[0], (size_t)pad.nst[0]);
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
    ey = pair_rel_err(yp, ywant, (size_t)(rows * F));
    fprintf(stderr, "  packed vs padded (device): y %.3e\n", ey);
    assert_true(ey <= 1e-6);
    rt_dev_free(dy), rt_dev_free(dx);
    free(hp), free(ywant), free(yp), free(xp);
    pair_io_free(&pad);
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
    pair_cfg c = {.cell = "gru", .I = 7, .H = 6, .layers = 2, .bidir = true};
    rnnc_model *host = pair_make(&c, RNNC_BACKEND_CUDNN), *dev = pair_make(&c, RNNC_BACKEND_CUDNN);
    rnnc_model *flat = pair_make(&c, RNNC_BACKEND_CUDNN);
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
    pair_io b[3];
    for (int k = 0; k < 3; k++) {
        pair_io_init(&b[k], ms[k], &c, &(pair_run){.T = 5, .B = 3}, &rng);
        if (k)
            memcpy(b[k].x, b[0].x, sizeof(float) * (size_t)(5 * 3 * c.I));
        if (pair_forward(ms[k], &b[k], true) != RNNC_OK)
            fail_msg("model %d (host, device, flat): %s", k, rnnc_last_error());
    }
    double e1 = pair_io_err(&b[1], &b[0]), e2 = pair_io_err(&b[2], &b[0]);
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
        double e =
            pair_rel_err((const float *)(const void *)(gh + off[i]), want, (size_t)hw[i].count);
        if (e != 0)
            fail_msg("gradient of %s in the flat buffer: rel err %.3e", hw[i].name, e);
        free(want);
    }
    /* unbinding keeps the buffer's weights */
    assert_ok(rnnc_model_bind_weight_buffer(flat, NULL, NULL, 0));
    tu_poison_f32(b[2].y, ny);
    assert_ok(pair_forward(flat, &b[2], true));
    assert_true(pair_io_err(&b[2], &b[0]) == 0);
    free(gh), free(dy);
    for (int k = 0; k < 3; k++)
        pair_io_free(&b[k]);
    rt_dev_free(gbuf), rt_dev_free(wbuf);
    free(hbuf), free(off);
    rnnc_model_destroy(flat), rnnc_model_destroy(dev), rnnc_model_destroy(host);
}

/* Prints cuDNN's whole placement, so a layout that differs from the
 * documented one can be read off the log. */
static void print_slots(const fb_rnn *r, const fb_lin_slot *want)
{
    for (int i = 0; i < r->pseudo * r->n_lin; i++)
        fprintf(stderr,
                "  pseudo %d lin %d: cuDNN matrix %zu (%zu) bias %zu (%zu); documented %zu (%zu) "
                "%zu (%zu)%s\n",
                i / r->n_lin, i % r->n_lin, r->slots[i].mat_off, r->slots[i].mat_n,
                r->slots[i].bias_off, r->slots[i].bias_n, want[i].mat_off, want[i].mat_n,
                want[i].bias_off, want[i].bias_n,
                memcmp(&want[i], &r->slots[i], sizeof want[i]) ? "  <-- differs" : "");
}

/* cuDNN's own placement (cudnnGetRNNWeightParams, which the backend and
 * rnnc_model_weight_buffer use) agrees with the layout rnnc documents
 * (fb_rnn_expected_slots), with and without biases, on every algorithm. */
static void test_layout_matches_cudnn(void **state)
{
    (void)state;
    static const rnnc_cudnn_algo algos[] = {
        RNNC_CUDNN_ALGO_STANDARD, RNNC_CUDNN_ALGO_PERSIST_STATIC, RNNC_CUDNN_ALGO_PERSIST_DYNAMIC};
    int bad = 0;
    for (int k = 0; k < 3; k++) {
        for (int nb = 0; nb < 2; nb++) {
            pair_cfg c = {.cell = "lstm", .I = 5, .H = 8, .layers = 2, .bidir = true,
                          .no_bias = nb, .algo = algos[k]};
            rnnc_model *m = NULL;
            if (k == 0) {
                m = pair_make(&c, RNNC_BACKEND_CUDNN);
            } else if (pair_try_make(&c, RNNC_BACKEND_CUDNN, &m) != RNNC_OK) {
                fprintf(stderr, "  %s: cuDNN refused the model: %s\n",
                        rnnc_cudnn_algo_name(algos[k]), rnnc_last_error());
                continue;
            }
            const fb_rnn *r = m->slot[RNNC_BACKEND_CUDNN].state;
            fb_rnn_dims d[2] = {{.in = 5, .hidden = 8}, {.in = 16, .hidden = 8}};
            fb_lin_slot *want = calloc((size_t)(r->pseudo * r->n_lin), sizeof *want);
            size_t total = fb_rnn_expected_slots(FB_LSTM, 2, 2, d, !nb, sizeof(float), want);
            bool same = total == r->wsize;
            for (int i = 0; i < r->pseudo * r->n_lin; i++)
                same = same && memcmp(&want[i], &r->slots[i], sizeof want[i]) == 0;
            fprintf(stderr, "  %s bias=%d: weight space %zu bytes (documented %zu): %s\n",
                    rnnc_cudnn_algo_name(algos[k]), !nb, r->wsize, total,
                    same ? "same placement" : "DIFFERS");
            if (!same)
                print_slots(r, want), bad++;
            free(want);
            rnnc_model_destroy(m);
        }
    }
    assert_int_equal(bad, 0);
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
        cmocka_unit_test(test_no_bias),
        cmocka_unit_test(test_no_bias_torch_files),
        cmocka_unit_test(test_packed_vs_padded),
        cmocka_unit_test(test_device_weights),
        cmocka_unit_test(test_layout_matches_cudnn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
