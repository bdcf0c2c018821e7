/* test_ir.c: the builder, hash-consing, shapes, verifier, printer and passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "testutil.h"

/* nn.LSTM's step, written the way PyTorch's code reads. */
static rnnc_cell *build_lstm(bool proj)
{
    rnnc_cell *c;
    rnnc_value x, h, cs, wih, whh, bih, bhh, whr, t1, t2, t3, g, gi, gf, gg, go, a, b, cn, hn, th;
    assert_ok(rnnc_cell_create(&c, "lstm"));
    assert_ok(rnnc_cell_input(c, "x", "I", &x));
    assert_ok(rnnc_cell_state(c, "h", "P", &h));
    assert_ok(rnnc_cell_state(c, "c", "H", &cs));
    assert_ok(rnnc_cell_param(c, "weight_ih", "4H", "I", &wih));
    assert_ok(rnnc_cell_param(c, "weight_hh", "4H", "P", &whh));
    assert_ok(rnnc_cell_param(c, "bias_ih", NULL, "4H", &bih));
    assert_ok(rnnc_cell_param(c, "bias_hh", NULL, "4H", &bhh));
    assert_ok(rnnc_cell_param_optional(c, "weight_hr", "P", "H", &whr));
    assert_ok(rnnc_linear(c, x, wih, &t1));
    assert_ok(rnnc_add(c, t1, bih, &t2));
    assert_ok(rnnc_linear(c, h, whh, &t3));
    assert_ok(rnnc_add(c, t2, t3, &g));
    assert_ok(rnnc_add(c, g, bhh, &g));
    assert_ok(rnnc_chunk(c, g, 4, 0, &gi));
    assert_ok(rnnc_chunk(c, g, 4, 1, &gf));
    assert_ok(rnnc_chunk(c, g, 4, 2, &gg));
    assert_ok(rnnc_chunk(c, g, 4, 3, &go));
    assert_ok(rnnc_sigmoid(c, gi, &gi));
    assert_ok(rnnc_sigmoid(c, gf, &gf));
    assert_ok(rnnc_tanh(c, gg, &gg));
    assert_ok(rnnc_sigmoid(c, go, &go));
    assert_ok(rnnc_mul(c, gf, cs, &a));
    assert_ok(rnnc_mul(c, gi, gg, &b));
    assert_ok(rnnc_add(c, a, b, &cn));
    assert_ok(rnnc_tanh(c, cn, &th));
    assert_ok(rnnc_mul(c, go, th, &hn));
    assert_ok(rnnc_linear(c, hn, whr, &hn));
    assert_ok(rnnc_cell_set_next(c, h, hn));
    assert_ok(rnnc_cell_set_next(c, cs, cn));
    assert_ok(rnnc_cell_set_output(c, hn));
    (void)proj;
    return c;
}

static void test_hash_consing(void **st)
{
    (void)st;
    rnnc_cell *c;
    rnnc_value x, w, a, b, s1, s2;
    assert_ok(rnnc_cell_create(&c, "t"));
    assert_ok(rnnc_cell_input(c, "x", "I", &x));
    assert_ok(rnnc_cell_param(c, "w", "H", "I", &w));
    assert_ok(rnnc_linear(c, x, w, &a));
    assert_ok(rnnc_linear(c, x, w, &b));
    assert_int_equal(a, b);
    assert_ok(rnnc_tanh(c, a, &s1));
    assert_ok(rnnc_add(c, s1, a, &s1));
    assert_ok(rnnc_add(c, a, b == a ? s1 - 1 : a, &s2)); /* a + tanh(a): commuted operands */
    assert_int_equal(s1, s2);
    rnnc_cell_destroy(c);
}

static void test_shape_errors(void **st)
{
    (void)st;
    rnnc_cell *c;
    rnnc_value x, h, w, v, out;
    assert_ok(rnnc_cell_create(&c, "t"));
    assert_ok(rnnc_cell_input(c, "x", "I", &x));
    assert_ok(rnnc_cell_state(c, "h", "H", &h));
    assert_ok(rnnc_cell_param(c, "w", "4H", "H", &w));
    assert_status(rnnc_linear(c, x, w, &out), RNNC_ERR_SHAPE);
    assert_non_null(strstr(rnnc_last_error(), "linear"));
    assert_status(rnnc_add(c, x, h, &out), RNNC_ERR_SHAPE);
    assert_status(rnnc_chunk(c, h, 3, 0, &out), RNNC_ERR_SHAPE);
    assert_status(rnnc_add(c, w, h, &out), RNNC_ERR_SHAPE);
    assert_status(rnnc_cell_input(c, "x", "I", &v), RNNC_ERR_INVALID_ARG);
    assert_status(rnnc_cell_param(c, "q", "4Q", "H", &v), RNNC_ERR_SHAPE);
    assert_status(rnnc_cell_verify(c), RNNC_ERR_SHAPE); /* h never updated */
    assert_non_null(strstr(rnnc_last_error(), "'h'"));
    rnnc_cell_destroy(c);
}

static void test_dims(void **st)
{
    (void)st;
    ir_dim d;
    char buf[48];
    assert_true(ir_dim_parse("4H", &d));
    assert_string_equal(ir_dim_str(d, buf, sizeof buf), "4H");
    assert_true(ir_dim_parse("2 * H + I", &d));
    assert_string_equal(ir_dim_str(d, buf, sizeof buf), "I+2H");
    assert_int_equal(ir_dim_eval(d, (ir_sizes){3, 5, 7}), 13);
    assert_true(ir_dim_parse("H*3+1", &d));
    assert_int_equal(ir_dim_eval(d, (ir_sizes){3, 5, 7}), 16);
    assert_false(ir_dim_parse("", &d));
    assert_false(ir_dim_parse("4Q", &d));
    assert_false(ir_dim_parse("H+", &d));
    assert_false(ir_dim_parse("0", &d));
}

static void test_optimise_and_schedule(void **st)
{
    (void)st;
    for (int proj = 0; proj < 2; proj++) {
        rnnc_cell *c = build_lstm(proj);
        assert_ok(rnnc_cell_verify(c));
        assert_ok(ir_optimise(c, proj));
        assert_int_equal(c->n_params, proj ? 5 : 4);
        ir_arena *a = ir_arena_create();
        ir_schedule s;
        assert_ok(pass_fuse(c, RNNC_HOIST_ALL, a, &s));
        /* x W_ih^T + (b_ih + b_hh) is hoisted as one value; the biases fold. */
        assert_int_equal(s.n_hoist_out, 1);
        const ir_node *ho = &c->nodes[s.hoist_out[0]];
        assert_int_equal(ho->op, IR_ADD);
        assert_int_equal(s.n_fold_out, 1);
        assert_int_equal(c->nodes[s.fold_out[0]].op, IR_ADD);
        assert_int_equal(s.n_phases, proj ? 2 : 1);
        assert_ok(pass_fuse(c, RNNC_HOIST_MATMUL, a, &s));
        assert_int_equal(c->nodes[s.hoist_out[0]].op, IR_LINEAR);
        assert_ok(pass_fuse(c, RNNC_HOIST_NONE, a, &s));
        assert_int_equal(c->nodes[s.hoist_out[0]].op, IR_INPUT);
        char *text;
        assert_ok(ir_schedule_print(&s, &text));
        assert_non_null(strstr(text, "hoist_out"));
        free(text);
        ir_arena_destroy(a);
        rnnc_cell_destroy(c);
    }
}

static void test_print_clone_equal(void **st)
{
    (void)st;
    rnnc_cell *c = build_lstm(false), *d;
    char *text;
    assert_ok(rnnc_cell_print(c, &text));
    assert_non_null(strstr(text, "param weight_hr[P, H] optional"));
    assert_non_null(strstr(text, "next h = "));
    free(text);
    assert_ok(rnnc_cell_clone(&d, c));
    assert_true(rnnc_cell_equal(c, d));
    assert_ok(ir_optimise(d, false));
    assert_false(rnnc_cell_equal(c, d));
    rnnc_cell_destroy(c);
    rnnc_cell_destroy(d);
}

static void test_simplify(void **st)
{
    (void)st;
    rnnc_cell *c;
    rnnc_value x, h, one, zero, t, u;
    assert_ok(rnnc_cell_create(&c, "s"));
    assert_ok(rnnc_cell_input(c, "x", "H", &x));
    assert_ok(rnnc_cell_state(c, "h", "H", &h));
    assert_ok(rnnc_cell_const(c, 1, &one));
    assert_ok(rnnc_cell_const(c, 0, &zero));
    assert_ok(rnnc_mul(c, h, one, &t));
    assert_ok(rnnc_add(c, t, zero, &t));
    assert_ok(rnnc_neg(c, t, &u));
    assert_ok(rnnc_neg(c, u, &u));
    assert_ok(rnnc_add(c, u, x, &u));
    assert_ok(rnnc_cell_set_next(c, h, u));
    assert_ok(rnnc_cell_set_output(c, u));
    assert_ok(ir_optimise(c, false));
    /* x, h, add(h, x): everything else simplified away */
    assert_int_equal(c->n, 3);
    assert_int_equal(c->nodes[c->output].op, IR_ADD);
    rnnc_cell_destroy(c);
}

/* Declarations are found by a hash of their names: many of them stay cheap,
 * and a repeated name is still refused. */
static void test_many_declarations(void **st)
{
    (void)st;
    rnnc_cell *c, *d;
    rnnc_value v;
    char name[32];
    assert_ok(rnnc_cell_create(&c, "wide"));
    for (int i = 0; i < 20000; i++) {
        snprintf(name, sizeof name, "p%d", i);
        assert_ok(rnnc_cell_param(c, name, NULL, "H", &v));
    }
    assert_status(rnnc_cell_param(c, "p12345", NULL, "H", &v), RNNC_ERR_INVALID_ARG);
    assert_int_equal(ir_find_decl(c, "p19999"), c->params[19999].node);
    assert_int_equal(ir_find_decl(c, "q"), -1);
    assert_ok(rnnc_cell_clone(&d, c));
    assert_int_equal(ir_find_decl(d, "p7"), d->params[7].node);
    rnnc_cell_destroy(d);
    rnnc_cell_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_consing),
        cmocka_unit_test(test_shape_errors),
        cmocka_unit_test(test_dims),
        cmocka_unit_test(test_optimise_and_schedule),
        cmocka_unit_test(test_print_clone_equal),
        cmocka_unit_test(test_simplify),
        cmocka_unit_test(test_many_declarations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
