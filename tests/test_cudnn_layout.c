/*
 * test_cudnn_layout.c: the host side of the cudnn backend, on every
 * machine: PyTorch parameters to cuDNN linear layers, which cells cuDNN
 * runs, the state slots, fp16 conversion, and the checks create makes
 * before it needs a device.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_fallback/fallback.h"

static uint64_t rng;

static int64_t rand_size(int64_t lo, int64_t hi)
{
    return lo + (int64_t)tu_uniform(&rng, 0, (double)(hi - lo + 1));
}

/* ---------------------------------------------------------------- layout */

static void check_gate_pieces(fb_rnn_mode m, const char *name, fb_rnn_dims d, int first_lin,
                              bool bias, int64_t cols)
{
    fb_rnn_piece pc[FB_MAX_GATES];
    int gates = fb_rnn_gates(m);
    assert_int_equal(fb_rnn_pieces(m, name, d, pc), gates);
    for (int g = 0; g < gates; g++) {
        assert_int_equal(pc[g].lin_id, first_lin + g);
        assert_int_equal(pc[g].bias, bias);
        assert_int_equal(pc[g].rows, d.hidden);
        assert_int_equal(pc[g].cols, cols);
        /* Gate g is rows g*H.. of the PyTorch tensor, in PyTorch's gate order. */
        assert_int_equal(pc[g].offset, (int64_t)g * d.hidden * cols);
    }
    assert_int_equal(fb_rnn_param_numel(m, name, d), gates * d.hidden * cols);
}

static void test_lstm_layout(void **state)
{
    (void)state;
    fb_rnn_dims d = {.in = rand_size(1, 40), .hidden = rand_size(2, 40), .proj = 0};
    fprintf(stderr, "lstm I=%lld H=%lld\n", (long long)d.in, (long long)d.hidden);
    check_gate_pieces(FB_LSTM, "weight_ih", d, 0, false, d.in);
    check_gate_pieces(FB_LSTM, "weight_hh", d, 4, false, d.hidden);
    check_gate_pieces(FB_LSTM, "bias_ih", d, 0, true, 1);
    check_gate_pieces(FB_LSTM, "bias_hh", d, 4, true, 1);
    fb_rnn_piece pc[FB_MAX_GATES];
    assert_int_equal(fb_rnn_pieces(FB_LSTM, "weight_hr", d, pc), 0); /* absent without P */
    assert_int_equal(fb_rnn_lin_layers(FB_LSTM, false), 8);
    assert_int_equal(fb_rnn_state_count(FB_LSTM), 2);
}

static void test_lstm_projection_layout(void **state)
{
    (void)state;
    int64_t h = rand_size(3, 40);
    fb_rnn_dims d = {.in = rand_size(1, 40), .hidden = h, .proj = rand_size(1, h - 1)};
    /* The recurrent matrices read h, which the projection makes P wide. */
    check_gate_pieces(FB_LSTM, "weight_hh", d, 4, false, d.proj);
    check_gate_pieces(FB_LSTM, "weight_ih", d, 0, false, d.in);
    fb_rnn_piece pc[FB_MAX_GATES];
    assert_int_equal(fb_rnn_pieces(FB_LSTM, "weight_hr", d, pc), 1);
    assert_int_equal(pc[0].lin_id, 8);
    assert_false(pc[0].bias);
    assert_int_equal(pc[0].rows, d.proj);
    assert_int_equal(pc[0].cols, d.hidden);
    assert_int_equal(pc[0].offset, 0);
    assert_int_equal(fb_rnn_lin_layers(FB_LSTM, true), 9);
}

static void test_gru_rnn_layout(void **state)
{
    (void)state;
    fb_rnn_dims d = {.in = rand_size(1, 40), .hidden = rand_size(1, 40), .proj = 0};
    check_gate_pieces(FB_GRU, "weight_ih", d, 0, false, d.in); /* r, z, n */
    check_gate_pieces(FB_GRU, "weight_hh", d, 3, false, d.hidden);
    check_gate_pieces(FB_GRU, "bias_ih", d, 0, true, 1);
    check_gate_pieces(FB_GRU, "bias_hh", d, 3, true, 1);
    assert_int_equal(fb_rnn_lin_layers(FB_GRU, false), 6);
    assert_int_equal(fb_rnn_state_count(FB_GRU), 1);
    for (fb_rnn_mode m = FB_RNN_RELU; m <= FB_RNN_TANH; m++) {
        check_gate_pieces(m, "weight_ih", d, 0, false, d.in);
        check_gate_pieces(m, "weight_hh", d, 1, false, d.hidden);
        check_gate_pieces(m, "bias_ih", d, 0, true, 1);
        check_gate_pieces(m, "bias_hh", d, 1, true, 1);
        assert_int_equal(fb_rnn_lin_layers(m, false), 2);
        assert_int_equal(fb_rnn_state_count(m), 1);
    }
}

static void test_unknown_params(void **state)
{
    (void)state;
    fb_rnn_dims d = {.in = 3, .hidden = 4, .proj = 2};
    fb_rnn_piece pc[FB_MAX_GATES];
    assert_int_equal(fb_rnn_pieces(FB_LSTM, "ln_gamma", d, pc), -1);
    assert_int_equal(fb_rnn_pieces(FB_LSTM, NULL, d, pc), -1);
    assert_int_equal(fb_rnn_pieces(FB_GRU, "weight_hr", d, pc), -1); /* projection is LSTM only */
    assert_int_equal(fb_rnn_pieces(FB_RNN_TANH, "weight_hr", d, pc), -1);
    assert_int_equal(fb_rnn_param_numel(FB_LSTM, "weight_ih_l0", d), -1); /* no suffixes */
}

/* Every matrix and bias of every linear layer comes from exactly one
 * piece, and the pieces of a parameter tile it without overlap. */
static void check_cover(fb_rnn_mode m, fb_rnn_dims d)
{
    static const char *names[] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"};
    int mats[FB_MAX_LIN_LAYERS] = {0}, biases[FB_MAX_LIN_LAYERS] = {0};
    int nlin = fb_rnn_lin_layers(m, d.proj > 0);
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        fb_rnn_piece pc[FB_MAX_GATES];
        int n = fb_rnn_pieces(m, names[k], d, pc);
        int64_t next = 0;
        for (int i = 0; i < n; i++) {
            assert_in_range(pc[i].lin_id, 0, nlin - 1);
            (pc[i].bias ? biases : mats)[pc[i].lin_id]++;
            assert_int_equal(pc[i].offset, next);
            next += pc[i].rows * pc[i].cols;
        }
        if (n > 0)
            assert_int_equal(next, fb_rnn_param_numel(m, names[k], d));
    }
    for (int lin = 0; lin < nlin; lin++) {
        assert_int_equal(mats[lin], 1);
        assert_int_equal(biases[lin], lin < 2 * fb_rnn_gates(m) ? 1 : 0); /* projection: none */
    }
}

static void test_layout_covers_all(void **state)
{
    (void)state;
    for (fb_rnn_mode m = FB_RNN_RELU; m <= FB_GRU; m++) {
        fb_rnn_dims d = {.in = rand_size(1, 20), .hidden = rand_size(2, 20), .proj = 0};
        check_cover(m, d);
        assert_string_not_equal(fb_rnn_mode_name(m), "?");
    }
    fb_rnn_dims d = {.in = rand_size(1, 20), .hidden = 9, .proj = rand_size(1, 8)};
    check_cover(FB_LSTM, d);
}

/* ---------------------------------------------------------------- fp16 */

static void test_f16_values(void **state)
{
    (void)state;
    assert_int_equal(fb_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(fb_f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(fb_f32_to_f16(0.1f), 0x2e66);
    assert_int_equal(fb_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(fb_f32_to_f16(65519.0f), 0x7bff);
    assert_int_equal(fb_f32_to_f16(65520.0f), 0x7c00); /* ties to even: inf */
    assert_int_equal(fb_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
    assert_int_equal(fb_f32_to_f16(ldexpf(1.0f, -26)), 0x0000);
    assert_int_equal(fb_f32_to_f16(ldexpf(3.0f, -26)), 0x0001);
    assert_int_equal(fb_f32_to_f16(ldexpf(1.0f, -14)), 0x0400);
    /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even (1) wins. */
    assert_int_equal(fb_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
    assert_int_equal(fb_f32_to_f16(1.0f + ldexpf(3.0f, -11)), 0x3c02);
    assert_int_equal(fb_f32_to_f16(INFINITY), 0x7c00);
    assert_true((fb_f32_to_f16(NAN) & 0x7fff) > 0x7c00);
}

static void test_f16_round_trip(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) /* NaN */
            continue;
        float f = fb_f16_to_f32((uint16_t)h);
        if (fb_f32_to_f16(f) != h)
            fail_msg("half 0x%04x -> %g -> 0x%04x", h, (double)f, fb_f32_to_f16(f));
    }
    assert_true(fb_f16_to_f32(0x3555) > 0.333f && fb_f16_to_f32(0x3555) < 0.3334f);
}

/* ---------------------------------------------------------------- matching */

typedef struct spec_fx {
    rt_spec s;
    rnnc_cell *fn;
} spec_fx;

/* A one-layer spec for a built-in, specialised as the model API does. */
static void spec_make(spec_fx *x, const char *cell, int64_t I, int64_t H, int64_t P)
{
    memset(x, 0, sizeof *x);
    assert_ok(rnnc_cell_builtin(&x->fn, cell, NULL));
    assert_ok(ir_optimise(x->fn, P > 0));
    int64_t hout = P > 0 ? P : H;
    x->s.fn[0] = x->s.fn[1] = x->fn;
    x->s.sizes[0] = (ir_sizes){.I = I, .H = H, .P = hout};
    x->s.sizes[1] = (ir_sizes){.I = hout, .H = H, .P = hout};
    x->s.layers = 1;
    x->s.dirs = 1;
    x->s.dtype = RNNC_F32;
    x->s.math = RNNC_MATH_FFMA;
    x->s.hout = hout;
}

static void spec_free(spec_fx *x)
{
    rnnc_cell_destroy(x->fn);
}

static void expect_mode(const char *cell, int64_t P, fb_rnn_mode want)
{
    spec_fx x;
    spec_make(&x, cell, 5, 7, P);
    fb_rnn_mode m = (fb_rnn_mode)-1;
    double p = -1;
    rnnc_status st = fb_rnn_match(&x.s, &m, &p);
    if (st != RNNC_OK)
        fail_msg("%s: %s: %s", cell, rnnc_status_string(st), rnnc_last_error());
    assert_int_equal(m, want);
    assert_true(p == 0.0);
    int h = -2, c = -2;
    assert_ok(fb_rnn_state_slots(x.fn, m, &h, &c));
    assert_string_equal(rnnc_cell_state_name(x.fn, h), "h");
    if (want == FB_LSTM)
        assert_string_equal(rnnc_cell_state_name(x.fn, c), "c");
    else
        assert_int_equal(c, -1);
    /* Every parameter of the cell has a place in cuDNN's weight space. */
    fb_rnn_dims d = {.in = 5, .hidden = 7, .proj = P};
    for (int i = 0; i < rnnc_cell_param_count(x.fn); i++) {
        fb_rnn_piece pc[FB_MAX_GATES];
        const char *name = rnnc_cell_param_name(x.fn, i);
        if (fb_rnn_pieces(m, name, d, pc) <= 0)
            fail_msg("%s: parameter %s has no cuDNN place", cell, name);
    }
    fprintf(stderr, "%s (P=%lld) runs as cuDNN %s\n", cell, (long long)P, fb_rnn_mode_name(m));
    spec_free(&x);
}

static void test_standard_cells_match(void **state)
{
    (void)state;
    expect_mode("lstm", 0, FB_LSTM);
    expect_mode("lstm", 3, FB_LSTM);
    expect_mode("gru", 0, FB_GRU);
    expect_mode("rnn_tanh", 0, FB_RNN_TANH);
    expect_mode("rnn_relu", 0, FB_RNN_RELU);
    expect_mode("dropout_lstm", 0, FB_LSTM); /* its dropout is the model's, between layers */
}

static void expect_unsupported(const char *cell)
{
    spec_fx x;
    spec_make(&x, cell, 5, 7, 0);
    fb_rnn_mode m;
    double p;
    assert_status(fb_rnn_match(&x.s, &m, &p), RNNC_ERR_UNSUPPORTED);
    const char *msg = rnnc_last_error();
    fprintf(stderr, "%s: %s\n", cell, msg);
    assert_non_null(strstr(msg, cell));
    assert_non_null(strstr(msg, "not a standard cell"));
    assert_non_null(strstr(msg, "fused, cpu or interp"));
    /* create refuses it the same way before it looks for a device */
    void *st = NULL;
    assert_status(fb_backend_cudnn.create(&x.s, &st), RNNC_ERR_UNSUPPORTED);
    assert_null(st);
    assert_non_null(strstr(rnnc_last_error(), "not a standard cell"));
    spec_free(&x);
}

static void test_other_cells_unsupported(void **state)
{
    (void)state;
    expect_unsupported("layernorm_lstm");
    expect_unsupported("peephole_lstm");
    expect_unsupported("milstm");
}

/* cx for a cell with no cell state, and the reverse, are refused. */
static void test_state_count_checks(void **state)
{
    (void)state;
    spec_fx gru, lstm;
    spec_make(&gru, "gru", 4, 6, 0);
    spec_make(&lstm, "lstm", 4, 6, 0);
    int h, c;
    assert_status(fb_rnn_state_slots(gru.fn, FB_LSTM, &h, &c), RNNC_ERR_INVALID_ARG);
    assert_status(fb_rnn_state_slots(lstm.fn, FB_GRU, &h, &c), RNNC_ERR_INVALID_ARG);
    assert_non_null(strstr(rnnc_last_error(), "cx is only for lstm"));
    spec_free(&lstm);
    spec_free(&gru);
}

/* Create's own checks that need no device; on a GPU machine the valid
 * spec is created (and destroyed), elsewhere it says there is no device. */
static void test_create_checks(void **state)
{
    (void)state;
    spec_fx x;
    spec_make(&x, "lstm", 4, 6, 0);
    void *st = NULL;
    x.s.dtype = RNNC_F64;
    assert_status(fb_backend_cudnn.create(&x.s, &st), RNNC_ERR_UNSUPPORTED);
    assert_non_null(strstr(rnnc_last_error(), "f32 and f16"));
    x.s.dtype = RNNC_F32;
    rnnc_status s = fb_backend_cudnn.create(&x.s, &st);
    fprintf(stderr, "cudnn create without weights: %s %s\n", rnnc_status_string(s),
            rnnc_last_error());
    if (s == RNNC_OK) {
        assert_non_null(st);
        /* forward before bind is a call-order error */
        float xin[4 * 2 * 4], y[4 * 2 * 6];
        tu_fill_f32(xin, 32, &rng, -1, 1);
        rnnc_forward_args a = {.seq_len = 4, .batch = 2, .x = xin, .y = y};
        assert_status(fb_backend_cudnn.forward(st, &a), RNNC_ERR_STATE);
        fb_backend_cudnn.destroy(st);
    } else {
        assert_true(s == RNNC_ERR_NO_DEVICE || s == RNNC_ERR_CUDA);
        assert_true(strlen(rnnc_last_error()) > 0);
    }
    fb_backend_cudnn.destroy(NULL);
    spec_free(&x);
}

int main(void)
{
    rng = tu_seed();
    /* What api/ does before it opens cudnn (the matcher never calls the parser). */
    fb_rnn_set_cell_source(rnnc_cell_builtin);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lstm_layout),
        cmocka_unit_test(test_lstm_projection_layout),
        cmocka_unit_test(test_gru_rnn_layout),
        cmocka_unit_test(test_unknown_params),
        cmocka_unit_test(test_layout_covers_all),
        cmocka_unit_test(test_f16_values),
        cmocka_unit_test(test_f16_round_trip),
        cmocka_unit_test(test_standard_cells_match),
        cmocka_unit_test(test_other_cells_unsupported),
        cmocka_unit_test(test_state_count_checks),
        cmocka_unit_test(test_create_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
