/*
 * build.c: the C builder API.  Each call checks its operands and shapes and
 * appends a node through the hash-consing ir_emit, so a cell under
 * construction is always well formed up to its missing results.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

static bool valid_name(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

static rnnc_status check_new_name(rnnc_cell *c, const char *name)
{
    if (!valid_name(name))
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "'%s' is not a valid name", name ? name : "(null)");
    if (ir_find_decl(c, name) >= 0)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "'%s' is declared twice in cell '%s'", name, c->name);
    return RNNC_OK;
}

static rnnc_status parse_dim(const char *text, ir_dim *d)
{
    if (!ir_dim_parse(text, d))
        return rnnc_fail(RNNC_ERR_SHAPE, "'%s' is not a size (write e.g. 4H, I, H+I, 2*H, 1)",
                         text ? text : "(null)");
    return RNNC_OK;
}

/* Grows a declaration array of `size`-byte elements to hold one more. */
static rnnc_status grow(void **arr, int32_t *cap, int32_t n, size_t size)
{
    if (n < *cap)
        return RNNC_OK;
    int32_t nc = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, size * (size_t)nc);
    if (!p)
        return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    *arr = p;
    *cap = nc;
    return RNNC_OK;
}

/* Appends a leaf node of `op` whose slot is `slot`. */
static rnnc_status emit_leaf(rnnc_cell *c, int op, int kind, ir_dim rows, ir_dim cols, int slot,
                             int32_t *out)
{
    ir_node n = {.op = (uint8_t)op, .kind = (uint8_t)kind, .a = {-1, -1, -1}, .rows = rows,
                 .cols = cols, .i0 = slot};
    return ir_emit(c, &n, out);
}

rnnc_status rnnc_cell_input(rnnc_cell *c, const char *name, const char *dim, rnnc_value *out)
{
    ir_dim d;
    rnnc_status s;
    if (!c || !out)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_input: NULL argument");
    if ((s = check_new_name(c, name)) || (s = parse_dim(dim, &d)) ||
        (s = grow((void **)&c->inputs, &c->cap_inputs, c->n_inputs, sizeof *c->inputs)))
        return s;
    char *copy = strdup(name);
    if (!copy)
        return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    if ((s = emit_leaf(c, IR_INPUT, IR_ROW, ir_dim_const(0), d, c->n_inputs, out))) {
        free(copy);
        return s;
    }
    c->inputs[c->n_inputs++] = (ir_input){*out, copy};
    return ir_index_decl(c, *out);
}

rnnc_status rnnc_cell_state(rnnc_cell *c, const char *name, const char *dim, rnnc_value *out)
{
    ir_dim d;
    rnnc_status s;
    if (!c || !out)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_state: NULL argument");
    if ((s = check_new_name(c, name)) || (s = parse_dim(dim, &d)) ||
        (s = grow((void **)&c->states, &c->cap_states, c->n_states, sizeof *c->states)))
        return s;
    char *copy = strdup(name);
    if (!copy)
        return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    if ((s = emit_leaf(c, IR_STATE, IR_ROW, ir_dim_const(0), d, c->n_states, out))) {
        free(copy);
        return s;
    }
    c->states[c->n_states++] = (ir_state){*out, -1, copy};
    return ir_index_decl(c, *out);
}

static rnnc_status declare_param(rnnc_cell *c, const char *name, const char *rows,
                                 const char *cols, bool optional, rnnc_value *out)
{
    ir_dim r = ir_dim_const(0), d;
    rnnc_status s;
    if (!c || !out)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_param: NULL argument");
    if ((s = check_new_name(c, name)) || (rows && (s = parse_dim(rows, &r))) ||
        (s = parse_dim(cols, &d)) ||
        (s = grow((void **)&c->params, &c->cap_params, c->n_params, sizeof *c->params)))
        return s;
    char *copy = strdup(name);
    if (!copy)
        return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    if ((s = emit_leaf(c, IR_PARAM, rows ? IR_MAT : IR_VEC, r, d, c->n_params, out))) {
        free(copy);
        return s;
    }
    c->params[c->n_params++] = (ir_param){*out, optional, copy};
    return ir_index_decl(c, *out);
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
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_const: NULL argument");
    if (v != v || v - v != 0)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "constants must be finite");
    ir_node n = {.op = IR_CONST, .kind = IR_SCALAR, .a = {-1, -1, -1}, .f = v};
    return ir_emit(c, &n, out);
}

/* Shape-checks and appends an op node. */
static rnnc_status emit_op(rnnc_cell *c, ir_node n, rnnc_value *out)
{
    if (!c || !out)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "%s: NULL argument", ir_ops[n.op].name);
    rnnc_status s = ir_infer_node(c, &n);
    if (s != RNNC_OK)
        return s;
    return ir_emit(c, &n, out);
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
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "dropout: NULL cell");
    /* Each dropout site draws its own mask, so sites never merge. */
    ir_node n = {.op = IR_DROPOUT, .a = {x, -1, -1}, .f = p, .i1 = c->n_dropout};
    rnnc_status s = emit_op(c, n, out);
    if (s == RNNC_OK)
        c->n_dropout++;
    return s;
}

rnnc_status rnnc_cell_set_next(rnnc_cell *c, rnnc_value state, rnnc_value next)
{
    if (!c)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_set_next: NULL cell");
    int s = state >= 0 && state < c->n ? ir_state_of(c, state) : -1;
    if (s < 0)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "set_next: value %d is not a state of cell '%s'",
                         state, c->name);
    if (next < 0 || next >= c->n)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "set_next: value %d is not in cell '%s'", next,
                         c->name);
    if (c->states[s].next >= 0)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "state '%s' is given its next value twice",
                         c->states[s].name);
    const ir_node *n = &c->nodes[next], *st = &c->nodes[state];
    if (n->kind != IR_ROW || !ir_dim_eq(n->cols, st->cols)) {
        char b1[48], b2[48];
        return rnnc_fail(RNNC_ERR_SHAPE, "next value of state '%s' must be a row of [%s], got [%s]",
                         c->states[s].name, ir_dim_str(st->cols, b1, sizeof b1),
                         ir_dim_str(n->cols, b2, sizeof b2));
    }
    c->states[s].next = next;
    return RNNC_OK;
}

rnnc_status rnnc_cell_set_output(rnnc_cell *c, rnnc_value out)
{
    if (!c)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_set_output: NULL cell");
    if (out < 0 || out >= c->n || c->nodes[out].kind != IR_ROW)
        return rnnc_fail(RNNC_ERR_SHAPE, "the output of cell '%s' must be a row value", c->name);
    if (c->output >= 0)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "the output of cell '%s' is set twice", c->name);
    c->output = out;
    return RNNC_OK;
}

rnnc_status rnnc_cell_verify(const rnnc_cell *c)
{
    if (!c)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_verify: NULL cell");
    return ir_verify(c);
}
