/*
 * test_cudnn_paths.c: the host side of issue 14's cuDNN paths, on every
 * machine: the packed-sequence conversion (and packed forward on the
 * interpreter against the padded one), the flat weight buffer's offsets,
 * cuDNN's algorithm limits and names, and bias=False models on the
 * interpreter.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

static uint64_t rng;

static int64_t rand_int(int64_t lo, int64_t hi)
{
    return lo + (int64_t)tu_uniform(&rng, 0, (double)(hi - lo + 1));
}

/* Random non-increasing batch sizes starting at B. */
static void random_batch_sizes(int64_t T, int64_t B, int64_t *bs)
{
    bs[0] = B;
    for (int64_t t = 1; t < T; t++)
        bs[t] = rand_int(1, bs[t - 1]);
}

/* ---------------------------------------------------------------- packed */

static void test_packed_round_trip(void **state)
{
    (void)state;
    for (int bf = 0; bf < 2; bf++) {
        int64_t T = rand_int(1, 9), B = rand_int(1, 6), F = rand_int(1, 5);
        int64_t bs[9], len[6];
        random_batch_sizes(T, B, bs);
        int64_t rows = api_packed_rows(bs, T);
        float *packed = malloc(sizeof(float) * (size_t)(rows * F));
        float *padded = malloc(sizeof(float) * (size_t)(T * B * F));
        float *back = malloc(sizeof(float) * (size_t)(rows * F));
        tu_fill_f32(packed, (size_t)(rows * F), &rng, -1, 1);
        tu_poison_f32(padded, (size_t)(T * B * F));
        tu_poison_f32(back, (size_t)(rows * F));
        api_packed_lengths(bs, T, B, len);
        api_unpack(packed, bs, T, B, F, sizeof(float), bf, padded);
        /* Row r of the packed tensor is step t, sequence b, in order. */
        int64_t r = 0;
        for (int64_t t = 0; t < T; t++)
            for (int64_t b = 0; b < B; b++) {
                const float *cell = padded + (bf ? b * T + t : t * B + b) * F;
                for (int64_t f = 0; f < F; f++) {
                    if (b < bs[t])
                        assert_true(cell[f] == packed[(r + b) * F + f]);
                    else
                        assert_true(cell[f] == 0.0f); /* padding is zero, not poison */
                }
                if (b == B - 1)
                    r += bs[t];
            }
        for (int64_t b = 0; b < B; b++) {
            int64_t want = 0;
            for (int64_t t = 0; t < T; t++)
                want += bs[t] > b;
            assert_int_equal(len[b], want);
        }
        api_pack(padded, bs, T, B, F, sizeof(float), bf, back);
        assert_memory_equal(back, packed, sizeof(float) * (size_t)(rows * F));
        free(back);
        free(padded);
        free(packed);
    }
}

static rnnc_model *make_model(const char *cell_name, int64_t I, int64_t H, int layers, bool bidir,
                              bool batch_first, bool no_bias, rnnc_backend be)
{
    rnnc_cell *cell = NULL;
    assert_ok(rnnc_cell_builtin(&cell, cell_name, NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = I;
    d.hidden_size = H;
    d.num_layers = layers;
    d.bidirectional = bidir;
    d.batch_first = batch_first;
    d.no_bias = no_bias;
    d.backend = be;
    rnnc_model *m = NULL;
    assert_ok(rnnc_model_create(&m, &d));
    rnnc_cell_destroy(cell);
    return m;
}

/* A packed forward gives the padded forward's y, packed, and its states. */
static void test_packed_forward_interp(void **state)
{
    (void)state;
    int64_t T = rand_int(2, 7), B = rand_int(2, 5), I = rand_int(1, 6), H = rand_int(1, 6);
    bool bf = rand_int(0, 1);
    rnnc_model *m = make_model("lstm", I, H, 2, true, bf, false, RNNC_BACKEND_INTERP);
    tu_set_random_weights(m, &rng, -0.5, 0.5);
    int64_t bs[7], len[5], Y = 2 * H;
    random_batch_sizes(T, B, bs);
    api_packed_lengths(bs, T, B, len);
    int64_t rows = api_packed_rows(bs, T);
    size_t nst = (size_t)(4 * B * H);
    float *xp = malloc(sizeof(float) * (size_t)(rows * I)), *x = malloc(sizeof(float) * (size_t)(T * B * I));
    float *yp = malloc(sizeof(float) * (size_t)(rows * Y)), *y = malloc(sizeof(float) * (size_t)(T * B * Y));
    float *yback = malloc(sizeof(float) * (size_t)(rows * Y));
    float *hp = malloc(sizeof(float) * nst), *h = malloc(sizeof(float) * nst);
    tu_fill_f32(xp, (size_t)(rows * I), &rng, -1, 1);
    api_unpack(xp, bs, T, B, I, sizeof(float), bf, x);
    tu_poison_f32(yp, (size_t)(rows * Y));
    tu_poison_f32(y, (size_t)(T * B * Y));
    tu_poison_f32(hp, nst);
    tu_poison_f32(h, nst);
    void *fin_p[2] = {hp, NULL}, *fin[2] = {h, NULL};
    rnnc_forward_args a = {.seq_len = T, .batch = B, .x = xp, .y = yp, .final = fin_p,
                           .batch_sizes = bs};
    assert_ok(rnnc_model_forward(m, &a));
    rnnc_forward_args q = {.seq_len = T, .batch = B, .x = x, .y = y, .final = fin, .lengths = len};
    assert_ok(rnnc_model_forward(m, &q));
    api_pack(y, bs, T, B, Y, sizeof(float), bf, yback);
    assert_memory_equal(yp, yback, sizeof(float) * (size_t)(rows * Y));
    assert_memory_equal(hp, h, sizeof(float) * nst);
    /* batch_sizes that are not sorted longest first are refused */
    if (T > 1) {
        bs[1] = B + 1;
        assert_int_equal(rnnc_model_forward(m, &a), RNNC_ERR_SHAPE);
    }
    a.lengths = len;
    assert_int_equal(rnnc_model_forward(m, &a), RNNC_ERR_INVALID_ARG);
    free(h), free(hp), free(yback), free(y), free(yp), free(x), free(xp);
    rnnc_model_destroy(m);
}

/* ---------------------------------------------------------------- bias=False */

static void test_no_bias_models(void **state)
{
    (void)state;
    static const char *const cells[] = {"lstm", "gru", "rnn_tanh", "rnn_relu", "dropout_lstm"};
    for (size_t k = 0; k < sizeof cells / sizeof cells[0]; k++) {
        rnnc_model *m = make_model(cells[k], 3, 4, 2, true, false, true, RNNC_BACKEND_INTERP);
        int n = rnnc_model_weight_count(m);
        assert_int_equal(n, 2 * 2 * 2); /* weight_ih, weight_hh per pseudo-layer */
        for (int i = 0; i < n; i++) {
            const char *name;
            assert_ok(rnnc_model_weight_info(m, i, &name, 0, NULL, NULL));
            assert_null(strstr(name, "bias"));
        }
        rnnc_model_destroy(m);
    }
    /* a cell whose biases are mandatory cannot drop them */
    rnnc_cell *cell = NULL;
    assert_ok(rnnc_cell_builtin(&cell, "layernorm_lstm", NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell, d.input_size = 3, d.hidden_size = 4, d.no_bias = true;
    d.backend = RNNC_BACKEND_INTERP;
    rnnc_model *m = NULL;
    assert_int_equal(rnnc_model_create(&m, &d), RNNC_ERR_UNSUPPORTED);
    assert_non_null(strstr(rnnc_last_error(), "no optional bias"));
    rnnc_cell_destroy(cell);
}

/* bias=False equals bias=True with zero biases (the interpreter, in double). */
static void test_no_bias_is_zero_bias(void **state)
{
    (void)state;
    static const char *const cells[] = {"lstm", "gru", "rnn_tanh", "rnn_relu"};
    for (size_t k = 0; k < sizeof cells / sizeof cells[0]; k++) {
        int64_t T = 5, B = 3, I = 4, H = 6, Y = H;
        rnnc_model *nb = make_model(cells[k], I, H, 1, false, false, true, RNNC_BACKEND_INTERP);
        rnnc_model *zb = make_model(cells[k], I, H, 1, false, false, false, RNNC_BACKEND_INTERP);
        for (int i = 0; i < rnnc_model_weight_count(zb); i++) {
            const char *name;
            int64_t shape[2] = {1, 1};
            int rank;
            assert_ok(rnnc_model_weight_info(zb, i, &name, 2, shape, &rank));
            int64_t n = shape[0] * (rank == 2 ? shape[1] : 1);
            float *w = malloc(sizeof(float) * (size_t)n);
            tu_fill_f32(w, (size_t)n, &rng, -0.5, 0.5);
            if (strstr(name, "bias"))
                memset(w, 0, sizeof(float) * (size_t)n);
            else
                assert_ok(rnnc_model_set_weight(nb, name, w, n));
            assert_ok(rnnc_model_set_weight(zb, name, w, n));
            free(w);
        }
        float *x = malloc(sizeof(float) * (size_t)(T * B * I));
        float *y0 = malloc(sizeof(float) * (size_t)(T * B * Y)), *y1 = malloc(sizeof(float) * (size_t)(T * B * Y));
        tu_fill_f32(x, (size_t)(T * B * I), &rng, -1, 1);
        tu_poison_f32(y0, (size_t)(T * B * Y));
        tu_poison_f32(y1, (size_t)(T * B * Y));
        rnnc_forward_args a = {.seq_len = T, .batch = B, .x = x, .y = y0};
        assert_ok(rnnc_model_forward(nb, &a));
        a.y = y1;
        assert_ok(rnnc_model_forward(zb, &a));
        assert_memory_equal(y0, y1, sizeof(float) * (size_t)(T * B * Y));
        free(y1), free(y0), free(x);
        rnnc_model_destroy(zb);
        rnnc_model_destroy(nb);
    }
}

/* ---------------------------------------------------------------- flat buffer */

/* Offsets from cuDNN's layout: each PyTorch weight one contiguous tensor;
 * the matrices of every pseudo-layer (weight_ih, weight_hh, weight_hr) come
 * first, one pseudo-layer after another, then every pseudo-layer's biases
 * (bias_ih, bias_hh) in the same order. */
static void test_weight_buffer_offsets(void **state)
{
    (void)state;
    static const fb_rnn_mode modes[] = {FB_LSTM, FB_GRU, FB_RNN_TANH};
    static const char *const names[] = {"weight_ih", "weight_hh", "weight_hr", "bias_ih",
                                        "bias_hh"};
    for (size_t k = 0; k < 3; k++) {
        for (int bias = 0; bias < 2; bias++) {
            fb_rnn_mode m = modes[k];
            int layers = (int)rand_int(1, 3), dirs = (int)rand_int(1, 2);
            int64_t H = rand_int(2, 9), P = m == FB_LSTM && rand_int(0, 1) ? rand_int(1, H - 1) : 0;
            int64_t hout = P ? P : H;
            fb_rnn_dims d[2] = {{.in = rand_int(1, 9), .hidden = H, .proj = P},
                                {.in = dirs * hout, .hidden = H, .proj = P}};
            size_t esz = rand_int(0, 1) ? 2 : 4;
            int n_lin = fb_rnn_lin_layers(m, P > 0), G = fb_rnn_gates(m);
            fb_lin_slot *slots = calloc((size_t)(layers * dirs * n_lin), sizeof *slots);
            size_t total = fb_rnn_expected_slots(m, layers, dirs, d, bias, esz, slots);
            size_t at = 0;
            for (int part = 0; part < 2; part++) { /* 0: matrices, 1: biases */
                for (int p = 0; p < layers * dirs; p++) {
                    fb_rnn_dims pd = d[p / dirs > 0];
                    for (int i = part ? 3 : 0; i < (part ? 5 : 3); i++) {
                        int64_t numel = fb_rnn_param_numel(m, names[i], pd);
                        size_t off = 0;
                        rnnc_status st =
                            fb_rnn_param_offset(m, names[i], pd, &slots[p * n_lin], esz, &off);
                        bool present = numel > 0 && (bias || i < 3);
                        if (!present) {
                            assert_int_not_equal(st, RNNC_OK);
                            continue;
                        }
                        assert_ok(st);
                        assert_int_equal(off, at); /* the next weight follows the last */
                        at += (size_t)numel * esz;
                    }
                }
            }
            assert_int_equal(at, total);
            (void)G;
            /* pieces that are not contiguous are refused, naming the gap */
            if (G > 1) {
                slots[1].mat_off += esz;
                size_t off;
                assert_int_equal(fb_rnn_param_offset(m, "weight_ih", d[0], slots, esz, &off),
                                 RNNC_ERR_UNSUPPORTED);
                assert_non_null(strstr(rnnc_last_error(), "not contiguous"));
            }
            free(slots);
        }
    }
}

/* ---------------------------------------------------------------- algorithms */

static void test_algo_names(void **state)
{
    (void)state;
    for (int a = RNNC_CUDNN_ALGO_AUTO; a <= RNNC_CUDNN_ALGO_PERSIST_DYNAMIC; a++) {
        rnnc_cudnn_algo back;
        assert_ok(rnnc_cudnn_algo_from_name(rnnc_cudnn_algo_name((rnnc_cudnn_algo)a), &back));
        assert_int_equal(back, a);
    }
    rnnc_cudnn_algo x;
    assert_ok(rnnc_cudnn_algo_from_name("Persist_Static", &x));
    assert_int_equal(x, RNNC_CUDNN_ALGO_PERSIST_STATIC);
    assert_int_equal(rnnc_cudnn_algo_from_name("fastest", &x), RNNC_ERR_INVALID_ARG);
    assert_non_null(strstr(rnnc_last_error(), "persist_dynamic"));
    rnnc_cell *cell = NULL;
    assert_ok(rnnc_cell_builtin(&cell, "lstm", NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    assert_int_equal(d.cudnn_algo, RNNC_CUDNN_ALGO_AUTO);
    assert_false(d.no_bias);
    d.cell = cell, d.input_size = 2, d.hidden_size = 3, d.cudnn_algo = (rnnc_cudnn_algo)9;
    rnnc_model *m = NULL;
    assert_int_equal(rnnc_model_create(&m, &d), RNNC_ERR_INVALID_ARG);
    rnnc_cell_destroy(cell);
}

static void test_algo_limits(void **state)
{
    (void)state;
    fb_algo_query q = {.mode = FB_LSTM, .in = 256, .hidden = 256, .layers = 1, .dirs = 1,
                       .batch = 64, .sm = 90, .sm_count = 132};
    rnnc_cudnn_algo c[4];
    /* H = 256: everything but small_h */
    assert_int_equal(fb_algo_candidates(&q, c), 3);
    assert_int_equal(c[0], RNNC_CUDNN_ALGO_STANDARD);
    assert_non_null(fb_algo_refusal(RNNC_CUDNN_ALGO_PERSIST_STATIC_SMALL_H, &q));
    q.hidden = 192;
    assert_null(fb_algo_refusal(RNNC_CUDNN_ALGO_PERSIST_STATIC_SMALL_H, &q));
    q.training = true; /* backward's limit is 128 */
    assert_non_null(fb_algo_refusal(RNNC_CUDNN_ALGO_PERSIST_STATIC_SMALL_H, &q));
    q.mode = FB_RNN_TANH; /* 256 for rnn */
    assert_null(fb_algo_refusal(RNNC_CUDNN_ALGO_PERSIST_STATIC_SMALL_H, &q));
    q.mode = FB_LSTM, q.training = false;
    q.ragged = true;
    assert_int_equal(fb_algo_candidates(&q, c), 1);
    q.ragged = false, q.no_bias = true; /* cuDNN 9 refuses NO_BIAS with them */
    assert_int_equal(fb_algo_candidates(&q, c), 1);
    assert_non_null(strstr(fb_algo_refusal(RNNC_CUDNN_ALGO_PERSIST_STATIC, &q), "bias=False"));
    q.no_bias = false, q.proj = 64;
    assert_int_equal(fb_algo_candidates(&q, c), 1);
    assert_non_null(strstr(fb_algo_refusal(RNNC_CUDNN_ALGO_PERSIST_DYNAMIC, &q), "projection"));
    q.proj = 0, q.sm = 52;
    assert_int_equal(fb_algo_candidates(&q, c), 1);
    /* the heuristic: PyTorch's fp16 conditions */
    q = (fb_algo_query){.mode = FB_LSTM, .in = 512, .hidden = 512, .layers = 1, .dirs = 1,
                        .batch = 64, .half = true, .sm = 90, .sm_count = 132};
    assert_int_equal(fb_algo_heuristic(&q), RNNC_CUDNN_ALGO_PERSIST_STATIC);
    q.batch = 65;
    assert_int_equal(fb_algo_heuristic(&q), RNNC_CUDNN_ALGO_STANDARD);
    q.batch = 64, q.half = false;
    assert_int_equal(fb_algo_heuristic(&q), RNNC_CUDNN_ALGO_STANDARD);
    q.half = true, q.hidden = 500;
    assert_int_equal(fb_algo_heuristic(&q), RNNC_CUDNN_ALGO_STANDARD);
    q.hidden = 512, q.layers = 2;
    assert_int_equal(fb_algo_heuristic(&q), RNNC_CUDNN_ALGO_STANDARD);
    q.layers = 1, q.no_bias = true;
    assert_int_equal(fb_algo_heuristic(&q), RNNC_CUDNN_ALGO_STANDARD);
}

int main(void)
{
    rng = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packed_round_trip),
        cmocka_unit_test(test_packed_forward_interp),
        cmocka_unit_test(test_no_bias_models),
        cmocka_unit_test(test_no_bias_is_zero_bias),
        cmocka_unit_test(test_weight_buffer_offsets),
        cmocka_unit_test(test_algo_names),
        cmocka_unit_test(test_algo_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
