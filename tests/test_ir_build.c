/*
 * test_ir_build.c: ir/'s typed builder (ir_decl_*, ir_emit_*, ir_set_*),
 * which the passes and the stages below use, against the public text
 * builder (rnnc_cell_*), which is now a wrapper over it: the same calls give
 * equal cells and the same refusals with the same words; a dim that text
 * spells one way arrives as one value however it is written.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "testutil.h"

static const ir_dim k_I = {.i = 1}, k_P = {.p = 1}, k_H = {.h = 1}, k_4H = {.h = 4};

/* nn.RNN(tanh) with a projection-shaped state, by ir_* calls. */
static rnnc_cell *typed_cell(void)
{
    rnnc_cell *c = NULL;
    int32_t x, h, wih, whh, b, t1, t2, s, hn, one;
    assert_ok(rnnc_cell_create(&c, "t"));
    assert_ok(ir_decl_input(c, "x", k_I, &x));
    assert_ok(ir_decl_state(c, "h", k_H, &h));
    assert_ok(ir_decl_param(c, "weight_ih", &k_H, k_I, false, &wih));
    assert_ok(ir_decl_param(c, "weight_hh", &k_H, k_H, false, &whh));
    assert_ok(ir_decl_param(c, "bias", NULL, k_H, true, &b));
    assert_ok(ir_emit_node(c, &(ir_node){.op = IR_LINEAR, .a = {x, wih, -1}}, &t1));
    assert_ok(ir_emit_node(c, &(ir_node){.op = IR_LINEAR, .a = {h, whh, -1}}, &t2));
    assert_ok(ir_emit_node(c, &(ir_node){.op = IR_ADD, .a = {t1, t2, -1}}, &s));
    assert_ok(ir_emit_node(c, &(ir_node){.op = IR_ADD, .a = {s, b, -1}}, &s));
    assert_ok(ir_emit_const(c, 1.0, &one));
    assert_ok(ir_emit_node(c, &(ir_node){.op = IR_MUL, .a = {s, one, -1}}, &s));
    assert_ok(ir_emit_node(c, &(ir_node){.op = IR_TANH, .a = {s, -1, -1}}, &hn));
    assert_ok(ir_emit_dropout(c, hn, 0.25, &hn));
    assert_ok(ir_set_next(c, h, hn));
    assert_ok(ir_set_output(c, hn));
    return c;
}

/* The same cell through the public builder, dims as text. */
static rnnc_cell *text_cell(void)
{
    rnnc_cell *c = NULL;
    rnnc_value x, h, wih, whh, b, t1, t2, s, hn, one;
    assert_ok(rnnc_cell_create(&c, "t"));
    assert_ok(rnnc_cell_input(c, "x", "I", &x));
    assert_ok(rnnc_cell_state(c, "h", "1*H", &h)); /* spelt otherwise, the same dim */
    assert_ok(rnnc_cell_param(c, "weight_ih", "H", "I", &wih));
    assert_ok(rnnc_cell_param(c, "weight_hh", "H", "H", &whh));
    assert_ok(rnnc_cell_param_optional(c, "bias", NULL, "H", &b));
    assert_ok(rnnc_linear(c, x, wih, &t1));
    assert_ok(rnnc_linear(c, h, whh, &t2));
    assert_ok(rnnc_add(c, t1, t2, &s));
    assert_ok(rnnc_add(c, s, b, &s));
    assert_ok(rnnc_cell_const(c, 1.0, &one));
    assert_ok(rnnc_mul(c, s, one, &s));
    assert_ok(rnnc_tanh(c, s, &hn));
    assert_ok(rnnc_dropout(c, hn, 0.25, &hn));
    assert_ok(rnnc_cell_set_next(c, h, hn));
    assert_ok(rnnc_cell_set_output(c, hn));
    return c;
}

static void test_typed_equals_text(void **state)
{
    (void)state;
    rnnc_cell *a = typed_cell(), *b = text_cell();
    assert_ok(rnnc_cell_verify(a));
    assert_true(rnnc_cell_equal(a, b));
    char *ta = NULL, *tb = NULL;
    assert_ok(rnnc_cell_print(a, &ta));
    assert_ok(rnnc_cell_print(b, &tb));
    assert_string_equal(ta, tb);
    assert_non_null(strstr(ta, "param bias[H] optional"));
    rnnc_free(ta);
    rnnc_free(tb);
    /* both survive the passes, which re-declare every leaf through ir_decl_* */
    assert_ok(ir_optimise(a, false));
    assert_ok(ir_optimise(b, false));
    assert_true(rnnc_cell_equal(a, b));
    assert_int_equal(a->n_dropout, 1);
    rnnc_cell_destroy(a);
    rnnc_cell_destroy(b);
}

/* A refusal reads the same whichever builder was called. */
static void expect_same_refusal(rnnc_status typed, rnnc_status text, rnnc_status want,
                                const char *words)
{
    assert_int_equal(typed, want);
    assert_int_equal(text, want);
    assert_non_null(strstr(rnnc_last_error(), words));
}

static void test_refusals(void **state)
{
    (void)state;
    rnnc_cell *c = NULL;
    int32_t x, h, v;
    assert_ok(rnnc_cell_create(&c, "r"));
    assert_ok(ir_decl_input(c, "x", k_I, &x));
    assert_ok(ir_decl_state(c, "h", k_P, &h));
    rnnc_status s = ir_decl_state(c, "x", k_H, &v);
    expect_same_refusal(s, rnnc_cell_state(c, "x", "H", &v), RNNC_ERR_INVALID_ARG,
                        "'x' is declared twice in cell 'r'");
    s = ir_decl_param(c, "9w", NULL, k_4H, false, &v);
    expect_same_refusal(s, rnnc_cell_param(c, "9w", NULL, "4H", &v), RNNC_ERR_INVALID_ARG,
                        "'9w' is not a valid name");
    s = ir_emit_const(c, INFINITY, &v);
    expect_same_refusal(s, rnnc_cell_const(c, INFINITY, &v), RNNC_ERR_INVALID_ARG,
                        "constants must be finite");
    /* x is [I], h is [P]: not its own next value */
    s = ir_set_next(c, h, x);
    expect_same_refusal(s, rnnc_cell_set_next(c, h, x), RNNC_ERR_SHAPE,
                        "next value of state 'h' must be a row of [P], got [I]");
    s = ir_set_next(c, x, x);
    expect_same_refusal(s, rnnc_cell_set_next(c, x, x), RNNC_ERR_INVALID_ARG,
                        "is not a state of cell 'r'");
    assert_ok(ir_set_output(c, x));
    s = ir_set_output(c, x);
    expect_same_refusal(s, rnnc_cell_set_output(c, x), RNNC_ERR_INVALID_ARG, "set twice");
    /* what only the text builder can get wrong */
    assert_status(rnnc_cell_input(c, "y", "4Q", &v), RNNC_ERR_SHAPE);
    assert_non_null(strstr(rnnc_last_error(), "'4Q' is not a size"));
    assert_status(rnnc_cell_input(c, "y", "I", NULL), RNNC_ERR_INVALID_ARG);
    assert_non_null(strstr(rnnc_last_error(), "rnnc_cell_input: NULL argument"));
    assert_int_equal(c->n_inputs, 1); /* no refusal left a declaration behind */
    assert_int_equal(c->n_states, 1);
    assert_int_equal(c->n_params, 0);
    rnnc_cell_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typed_equals_text),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
