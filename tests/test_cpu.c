/*
 * test_cpu.c: the CPU backend (LLVM JIT) against the interpreter on the
 * same weights and inputs: every built-in cell, a builder cell using every
 * op, and the model options (layers, bidirectional, batch_first,
 * proj_size, lengths, dropout, hoist settings) at awkward shapes (B=1,
 * odd H, I != H, T=1, long T), with both ways of sharing the step between
 * threads.  Outputs are poisoned before each run.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

typedef struct cfg {
    int64_t I, H, P, T, B;
    int L;
    bool bi, bf, lengths, init, training;
    double dropout;
    rnnc_hoist hoist;
} cfg;

static uint64_t g_rng;

static const cfg base_cfg = {.I = 5, .H = 7, .T = 4, .B = 3, .L = 1, .init = true};

static rnnc_model *make(const rnnc_cell *cell, const cfg *c, rnnc_backend be)
{
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = c->I;
    d.hidden_size = c->H;
    d.proj_size = c->P;
    d.num_layers = c->L;
    d.bidirectional = c->bi;
    d.batch_first = c->bf;
    d.dropout = c->dropout;
    d.seed = 1234;
    d.hoist = c->hoist;
    d.backend = be;
    rnnc_model *m = NULL;
    assert_ok(rnnc_model_create(&m, &d));
    return m;
}

/* Random weights, the same for both models. */
static void set_weights(rnnc_model *a, rnnc_model *b)
{
    rnnc_model *const both[] = {a, b};
    tu_set_random_weights_on(both, 2, &g_rng, -0.6, 0.6);
}

static int64_t state_width(const rnnc_cell *cell, int k, const cfg *c)
{
    bool h = strcmp(rnnc_cell_state_name(cell, k), "h") == 0;
    return h && c->P > 0 ? c->P : c->H;
}

static void check_close(const float *out, const float *ref, size_t n, const char *what)
{
    double *r = malloc(n * sizeof(double));
    assert_non_null(r);
    for (size_t i = 0; i < n; i++)
        r[i] = ref[i];
    double err = tu_rel_err_f32(out, r, n);
    free(r);
    if (!(err <= 1e-5))
        fail_msg("%s: relative error %g", what, err);
}

typedef struct bufs {
    float *x, *y[2], *init[4], *fin[2][4];
    int64_t len[256];
    const void *init_p[4];
    void *fin_p[2][4];
} bufs;

static void run_compare(const rnnc_cell *cell, const cfg *c)
{
    rnnc_model *cpu = make(cell, c, RNNC_BACKEND_CPU), *ref = make(cell, c, RNNC_BACKEND_INTERP);
    assert_int_equal(rnnc_model_backend(cpu), RNNC_BACKEND_CPU);
    set_weights(cpu, ref);
    int D = c->bi ? 2 : 1, ns = rnnc_cell_state_count(cell);
    int64_t hout = c->P > 0 ? c->P : c->H, ny = c->T * c->B * D * hout;
    bufs b = {0};
    b.x = malloc((size_t)(c->T * c->B * c->I) * sizeof(float));
    tu_fill_f32(b.x, (size_t)(c->T * c->B * c->I), &g_rng, -1.0, 1.0);
    for (int k = 0; k < 2; k++) {
        b.y[k] = malloc((size_t)ny * sizeof(float));
        tu_poison_f32(b.y[k], (size_t)ny);
    }
    assert_true(ns <= 4 && c->B <= 256);
    for (int s = 0; s < ns; s++) {
        size_t n = (size_t)(c->L * D * c->B * state_width(cell, s, c));
        b.init[s] = malloc(n * sizeof(float));
        tu_fill_f32(b.init[s], n, &g_rng, -0.5, 0.5);
        b.init_p[s] = b.init[s];
        for (int k = 0; k < 2; k++) {
            b.fin[k][s] = malloc(n * sizeof(float));
            tu_poison_f32(b.fin[k][s], n);
            b.fin_p[k][s] = b.fin[k][s];
        }
    }
    for (int64_t i = 0; i < c->B; i++)
        b.len[i] = c->lengths ? 1 + (int64_t)tu_uniform(&g_rng, 0, (double)c->T) : c->T;
    if (c->lengths)
        b.len[c->B / 2] = c->T;
    rnnc_forward_args a = {.seq_len = c->T, .batch = c->B, .x = b.x,
                           .init = c->init ? b.init_p : NULL,
                           .lengths = c->lengths ? b.len : NULL, .training = c->training};
    for (int k = 0; k < 2; k++) {
        a.y = b.y[k];
        a.final = b.fin_p[k];
        assert_ok(rnnc_model_forward(k ? ref : cpu, &a));
    }
    check_close(b.y[0], b.y[1], (size_t)ny, "y");
    for (int s = 0; s < ns; s++)
        check_close(b.fin[0][s], b.fin[1][s], (size_t)(c->L * D * c->B * state_width(cell, s, c)),
                    rnnc_cell_state_name(cell, s));
    free(b.x);
    for (int k = 0; k < 2; k++)
        free(b.y[k]);
    for (int s = 0; s < ns; s++) {
        free(b.init[s]);
        free(b.fin[0][s]);
        free(b.fin[1][s]);
    }
    rnnc_model_destroy(cpu);
    rnnc_model_destroy(ref);
}

static void compare_builtin(const char *name, const cfg *c)
{
    rnnc_cell *cell;
    assert_ok(rnnc_cell_builtin(&cell, name, NULL));
    run_compare(cell, c);
    rnnc_cell_destroy(cell);
}

/* Both ways of sharing the step between threads. */
static void compare_both_splits(const char *name, const cfg *c)
{
    setenv("RNNC_CPU_SPLIT", "rows", 1);
    compare_builtin(name, c);
    setenv("RNNC_CPU_SPLIT", "cols", 1);
    compare_builtin(name, c);
    unsetenv("RNNC_CPU_SPLIT");
}

static void test_builtin_cells(void **st)
{
    (void)st;
    const char *const *names = rnnc_cell_builtin_names();
    for (int i = 0; names[i]; i++) {
        cfg c = base_cfg;
        compare_both_splits(names[i], &c);
        c.bi = true, c.L = 2, c.lengths = true, c.I = 9, c.H = 17, c.B = 5, c.T = 6;
        compare_builtin(names[i], &c);
    }
}

static void test_lstm_options(void **st)
{
    (void)st;
    cfg c = base_cfg;
    c.L = 2, c.bi = true, c.bf = true;
    compare_both_splits("lstm", &c);
    c = base_cfg;
    c.P = 3, c.L = 2, c.bi = true, c.lengths = true;
    compare_both_splits("lstm", &c);
    c = base_cfg;
    c.B = 1, c.T = 1, c.init = false;
    compare_both_splits("lstm", &c);
    c = base_cfg;
    c.T = 60, c.H = 33, c.I = 20, c.B = 2, c.lengths = true;
    compare_both_splits("lstm", &c);
    c = base_cfg;
    c.H = 40, c.I = 70, c.B = 37, c.T = 3; /* several panels and row tiles */
    compare_both_splits("gru", &c);
}

static void test_hoist_settings(void **st)
{
    (void)st;
    const char *cells[] = {"lstm", "layernorm_lstm", "gru"};
    for (int i = 0; i < 3; i++)
        for (int h = RNNC_HOIST_ALL; h <= RNNC_HOIST_NONE; h++) {
            cfg c = base_cfg;
            c.hoist = (rnnc_hoist)h, c.bi = true, c.lengths = true;
            compare_builtin(cells[i], &c);
        }
}

static void test_dropout_between_layers(void **st)
{
    (void)st;
    cfg c = base_cfg;
    c.L = 3, c.dropout = 0.4, c.training = true, c.bi = true, c.H = 12;
    compare_builtin("dropout_lstm", &c);
    c.training = false;
    compare_builtin("dropout_lstm", &c);
}

static rnnc_value op1(rnnc_status (*f)(rnnc_cell *, rnnc_value, rnnc_value *), rnnc_cell *c,
                      rnnc_value a)
{
    rnnc_value v = RNNC_NONE;
    assert_ok(f(c, a, &v));
    return v;
}

static rnnc_value op2(rnnc_status (*f)(rnnc_cell *, rnnc_value, rnnc_value, rnnc_value *),
                      rnnc_cell *c, rnnc_value a, rnnc_value b)
{
    rnnc_value v = RNNC_NONE;
    assert_ok(f(c, a, b, &v));
    return v;
}

static rnnc_value cst(rnnc_cell *c, double v)
{
    rnnc_value out;
    assert_ok(rnnc_cell_const(c, v, &out));
    return out;
}

/* A cell that uses every op, in the hoisted part and in the step. */
static rnnc_cell *every_op_cell(void)
{
    rnnc_cell *c;
    rnnc_value x, h, s, w, w2, g, bb, v;
    assert_ok(rnnc_cell_create(&c, "every_op"));
    assert_ok(rnnc_cell_input(c, "x", "I", &x));
    assert_ok(rnnc_cell_state(c, "h", "H", &h));
    assert_ok(rnnc_cell_state(c, "s", "H", &s));
    assert_ok(rnnc_cell_param(c, "w", "H", "I+H", &w));
    assert_ok(rnnc_cell_param(c, "w2", "H", "I", &w2));
    assert_ok(rnnc_cell_param(c, "g", NULL, "H", &g));
    assert_ok(rnnc_cell_param(c, "bb", NULL, "2H", &bb));
    /* hoisted: dropout and layernorm of x, then a product */
    rnnc_value dx, xn, px, z, z2, mn, sm, a, bq, e, lg, ln, dr, b2, hn, sn;
    assert_ok(rnnc_dropout(c, x, 0.3, &dx));
    assert_ok(rnnc_layernorm(c, dx, 1e-3, RNNC_NONE, RNNC_NONE, &xn));
    px = op2(rnnc_linear, c, op1(rnnc_relu, c, xn), w2);
    /* step: concat, reductions with broadcast, every unary op */
    z = op2(rnnc_linear, c, op2(rnnc_concat, c, x, h), w);
    z2 = op1(rnnc_tanh, c, op2(rnnc_add, c, z, px));
    mn = op1(rnnc_mean, c, z2);
    sm = op1(rnnc_sum, c, op2(rnnc_mul, c, z2, z2));
    a = op2(rnnc_sub, c, z2, mn);
    bq = op2(rnnc_div, c, a, op1(rnnc_sqrt, c, op2(rnnc_add, c, sm, cst(c, 1.0))));
    e = op1(rnnc_rsqrt, c, op2(rnnc_add, c, op1(rnnc_exp, c, op1(rnnc_neg, c, op1(rnnc_relu, c, bq))),
                              cst(c, 1.0)));
    lg = op1(rnnc_log, c, op2(rnnc_add, c, e, cst(c, 2.0)));
    /* (lg alone varies too little for a layernorm to be well conditioned in fp32) */
    assert_ok(rnnc_layernorm(c, op2(rnnc_add, c, lg, z2), 1e-5, RNNC_NONE, RNNC_NONE, &ln));
    assert_ok(rnnc_dropout(c, ln, 0.25, &dr));
    assert_ok(rnnc_chunk(c, bb, 2, 1, &b2));
    hn = op1(rnnc_sigmoid, c, op2(rnnc_add, c, op2(rnnc_mul, c, dr, g), b2));
    v = op2(rnnc_mul, c, s, cst(c, 0.5));
    sn = op2(rnnc_add, c, v, op2(rnnc_sub, c, hn, bq));
    assert_ok(rnnc_cell_set_next(c, h, hn));
    assert_ok(rnnc_cell_set_next(c, s, sn));
    assert_ok(rnnc_cell_set_output(c, hn));
    return c;
}

static void test_every_op(void **st)
{
    (void)st;
    rnnc_cell *cell = every_op_cell();
    for (int h = RNNC_HOIST_ALL; h <= RNNC_HOIST_NONE; h += 2)
        for (int tr = 0; tr < 2; tr++) {
            cfg c = base_cfg;
            c.I = 6, c.H = 19, c.T = 5, c.B = 4, c.L = 2, c.bi = true, c.lengths = true;
            c.hoist = (rnnc_hoist)h, c.training = tr, c.dropout = 0.2;
            setenv("RNNC_CPU_SPLIT", tr ? "cols" : "rows", 1);
            run_compare(cell, &c);
        }
    unsetenv("RNNC_CPU_SPLIT");
    rnnc_cell_destroy(cell);
}

static void test_unsupported(void **st)
{
    (void)st;
    rnnc_cell *cell;
    assert_ok(rnnc_cell_builtin(&cell, "gru", NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = 4;
    d.hidden_size = 4;
    d.backend = RNNC_BACKEND_CPU;
    d.dtype = RNNC_F64;
    rnnc_model *m = NULL;
    assert_status(rnnc_model_create(&m, &d), RNNC_ERR_UNSUPPORTED);
    assert_non_null(strstr(rnnc_last_error(), "F64"));
    d.dtype = RNNC_F32;
    assert_ok(rnnc_model_create(&m, &d));
    rnnc_model *ref = make(cell, &(cfg){.I = 4, .H = 4, .L = 1}, RNNC_BACKEND_INTERP);
    set_weights(m, ref);
    float x[8], y[8];
    tu_fill_f32(x, 8, &g_rng, -1, 1);
    rnnc_forward_args a = {.seq_len = 2, .batch = 1, .x = x, .y = y, .device_pointers = true};
    assert_status(rnnc_model_forward(m, &a), RNNC_ERR_UNSUPPORTED);
    assert_non_null(strstr(rnnc_last_error(), "host"));
    rnnc_model_destroy(m);
    rnnc_model_destroy(ref);
    rnnc_cell_destroy(cell);
}

int main(void)
{
    g_rng = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_cells),     cmocka_unit_test(test_lstm_options),
        cmocka_unit_test(test_hoist_settings),    cmocka_unit_test(test_dropout_between_layers),
        cmocka_unit_test(test_every_op),          cmocka_unit_test(test_unsupported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
