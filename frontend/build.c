/*
 * build.c: the public C builder API (rnnc_cell_*, rnnc_<op>), thin wrappers
 * over ir/'s typed builder (ir/build.c).  What they add is the user's side:
 * NULL checks naming the call, and dims as text ("4H", "H+I") parsed into
 * ir_dim.  Data flows one way: frontend calls ir, never the reverse, so ir/
 * and the stages below build cells through ir_decl_* and never through here.
 */
#include "frontend/frontend.h"

/* The dim text of the public API as an ir_dim. */
static rnnc_status parse_dim(const char *text, ir_dim *d)
{
    if (!ir_dim_parse(text, d))
        return err_fail(RNNC_ERR_SHAPE, "'%s' is not a size (write e.g. 4H, I, H+I, 2*H, 1)",
                        text ? text : "(null)");
    return RNNC_OK;
}

rnnc_status rnnc_cell_input(rnnc_cell *c, const char *name, const char *dim, rnnc_value *out)
{
    ir_dim d;
    rnnc_status s;
    if (!c || !out)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_input: NULL argument");
    if ((s = ir_check_decl_name(c, name)) || (s = parse_dim(dim, &d)))
        return s;
    return ir_decl_input(c, name, d, out);
}

rnnc_status rnnc_cell_state(rnnc_cell *c, const char *name, const char *dim, rnnc_value *out)
{
    ir_dim d;
    rnnc_status s;
    if (!c || !out)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_state: NULL argument");
    if ((s = ir_check_decl_name(c, name)) || (s = parse_dim(dim, &d)))
        return s;
    return ir_decl_state(c, name, d, out);
}

static rnnc_status declare_param(rnnc_cell *c, const char *name, const char *rows,
                                 const char *cols, bool optional, rnnc_value *out)
{
    ir_dim r, d;
    rnnc_status s;
    if (!c || !out)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_param: NULL argument");
    if ((s = ir_check_decl_name(c, name)) || (rows && (s = parse_dim(rows, &r))) ||
        (s = parse_dim(cols, &d)))
        return s;
    return ir_decl_param(c, name, rows ? &r : NULL, d, optional, out);
}

rnnc_status rnnc_cell_param(rnnc_cell *c, const char *name, const char *rows, const char *cols,
                            rnnc_value *out)
{
    return declare_param(c, name, rows, cols, false, out);
}

rnnc_status rnnc_cell_param_optional(rnnc_cell *c, const char *name, const char *rows,
                                     const char *cols, rnnc_value *out)
{
    return declare_param(c, name, rows, cols, true, out);
}

rnnc_status rnnc_cell_const(rnnc_cell *c, double v, rnnc_value *out)
{
    if (!c || !out)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_const: NULL argument");
    return ir_emit_const(c, v, out);
}

/* Shape-checks and appends an op node. */
static rnnc_status emit_op(rnnc_cell *c, ir_node n, rnnc_value *out)
{
    if (!c || !out)
        return err_fail(RNNC_ERR_INVALID_ARG, "%s: NULL argument", ir_ops[n.op].name);
    return ir_emit_node(c, &n, out);
}

static rnnc_status op1(rnnc_cell *c, int op, rnnc_value a, rnnc_value *out)
{
    return emit_op(c, (ir_node){.op = (uint8_t)op, .a = {a, -1, -1}}, out);
}

static rnnc_status op2(rnnc_cell *c, int op, rnnc_value a, rnnc_value b, rnnc_value *out)
{
    return emit_op(c, (ir_node){.op = (uint8_t)op, .a = {a, b, -1}}, out);
}

rnnc_status rnnc_linear(rnnc_cell *c, rnnc_value x, rnnc_value w, rnnc_value *out) { return op2(c, IR_LINEAR, x, w, out); }
rnnc_status rnnc_add(rnnc_cell *c, rnnc_value a, rnnc_value b, rnnc_value *out) { return op2(c, IR_ADD, a, b, out); }
rnnc_status rnnc_sub(rnnc_cell *c, rnnc_value a, rnnc_value b, rnnc_value *out) { return op2(c, IR_SUB, a, b, out); }
rnnc_status rnnc_mul(rnnc_cell *c, rnnc_value a, rnnc_value b, rnnc_value *out) { return op2(c, IR_MUL, a, b, out); }
rnnc_status rnnc_div(rnnc_cell *c, rnnc_value a, rnnc_value b, rnnc_value *out) { return op2(c, IR_DIV, a, b, out); }
rnnc_status rnnc_concat(rnnc_cell *c, rnnc_value a, rnnc_value b, rnnc_value *out) { return op2(c, IR_CONCAT, a, b, out); }
rnnc_status rnnc_neg(rnnc_cell *c, rnnc_value a, rnnc_value *out) { return op1(c, IR_NEG, a, out); }
rnnc_status rnnc_sigmoid(rnnc_cell *c, rnnc_value a, rnnc_value *out) { return op1(c, IR_SIGMOID, a, out); }
rnnc_status rnnc_tanh(rnnc_cell *c, rnnc_value a, rnnc_value *out) { return op1(c, IR_TANH, a, out); }
rnnc_status rnnc_relu(rnnc_cell *c, rnnc_value a, rnnc_value *out) { return op1(c, IR_RELU, a, out); }
rnnc_status rnnc_exp(rnnc_cell *c, rnnc_value a, rnnc_value *out) { return op1(c, IR_EXP, a, out); }
rnnc_status rnnc_log(rnnc_cell *c, rnnc_value a, rnnc_value *out) { return op1(c, IR_LOG, a, out); }
rnnc_status rnnc_sqrt(rnnc_cell *c, rnnc_value a, rnnc_value *out) { return op1(c, IR_SQRT, a, out); }
rnnc_status rnnc_rsqrt(rnnc_cell *c, rnnc_value a, rnnc_value *out) { return op1(c, IR_RSQRT, a, out); }
rnnc_status rnnc_sum(rnnc_cell *c, rnnc_value x, rnnc_value *out) { return op1(c, IR_SUM, x, out); }
rnnc_status rnnc_mean(rnnc_cell *c, rnnc_value x, rnnc_value *out) { return op1(c, IR_MEAN, x, out); }

rnnc_status rnnc_chunk(rnnc_cell *c, rnnc_value x, int parts, int index, rnnc_value *out)
{
    return emit_op(c, (ir_node){.op = IR_CHUNK, .a = {x, -1, -1}, .i0 = parts, .i1 = index}, out);
}

rnnc_status rnnc_layernorm(rnnc_cell *c, rnnc_value x, double eps, rnnc_value gamma,
                           rnnc_value beta, rnnc_value *out)
{
    ir_node n = {.op = IR_LAYERNORM, .a = {x, gamma < 0 ? -1 : gamma, beta < 0 ? -1 : beta},
                 .f = eps};
    return emit_op(c, n, out);
}

rnnc_status rnnc_dropout(rnnc_cell *c, rnnc_value x, double p, rnnc_value *out)
{
    if (!c)
        return err_fail(RNNC_ERR_INVALID_ARG, "dropout: NULL cell");
    if (!out)
        return err_fail(RNNC_ERR_INVALID_ARG, "%s: NULL argument", ir_ops[IR_DROPOUT].name);
    return ir_emit_dropout(c, x, p, out);
}

rnnc_status rnnc_cell_set_next(rnnc_cell *c, rnnc_value state, rnnc_value next)
{
    if (!c)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_set_next: NULL cell");
    return ir_set_next(c, state, next);
}

rnnc_status rnnc_cell_set_output(rnnc_cell *c, rnnc_value out)
{
    if (!c)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_set_output: NULL cell");
    return ir_set_output(c, out);
}

rnnc_status rnnc_cell_verify(const rnnc_cell *c)
{
    if (!c)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_verify: NULL cell");
    return ir_verify(c);
}
