/*
 * build.c: the typed builder every stage uses to make a cell: declarations
 * whose dims are ir_dim values, constant and dropout nodes, shape-checked op
 * nodes, and the step's results.  Every node goes through the hash-consing
 * ir_emit, so a cell under construction is always well formed up to its
 * missing results.
 *
 * Requires: a cell from rnnc_cell_create and non-NULL pointers (the public
 * builder, frontend/build.c, checks what a user passes and turns its dim
 * text into ir_dim before it calls here).  Keeps: declarations in slot
 * order, names unique within a cell.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static bool valid_name(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

rnnc_status ir_check_decl_name(const ir_fn *f, const char *name)
{
    if (!valid_name(name))
        return err_fail(RNNC_ERR_INVALID_ARG, "'%s' is not a valid name", name ? name : "(null)");
    if (ir_find_decl(f, name) >= 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "'%s' is declared twice in cell '%s'", name, f->name);
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
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    *arr = p;
    *cap = nc;
    return RNNC_OK;
}

/* A copy of the name for a declaration list, made before the node so a
 * failed allocation leaves the cell as it was. */
static rnnc_status copy_name(const char *name, char **out)
{
    *out = strdup(name);
    return *out ? RNNC_OK : err_fail(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
}

/* Appends a leaf node of `op` whose slot is `slot`. */
static rnnc_status emit_leaf(ir_fn *f, int op, int kind, ir_dim rows, ir_dim cols, int slot,
                             int32_t *out)
{
    ir_node n = {.op = (uint8_t)op, .kind = (uint8_t)kind, .a = {-1, -1, -1}, .rows = rows,
                 .cols = cols, .i0 = slot};
    return ir_emit(f, &n, out);
}

rnnc_status ir_decl_input(ir_fn *f, const char *name, ir_dim cols, int32_t *out)
{
    char *copy;
    rnnc_status s;
    if ((s = ir_check_decl_name(f, name)) ||
        (s = grow((void **)&f->inputs, &f->cap_inputs, f->n_inputs, sizeof *f->inputs)) ||
        (s = copy_name(name, &copy)))
        return s;
    if ((s = emit_leaf(f, IR_INPUT, IR_ROW, ir_dim_const(0), cols, f->n_inputs, out))) {
        free(copy);
        return s;
    }
    f->inputs[f->n_inputs++] = (ir_input){*out, copy};
    return ir_index_decl(f, *out);
}

rnnc_status ir_decl_state(ir_fn *f, const char *name, ir_dim cols, int32_t *out)
{
    char *copy;
    rnnc_status s;
    if ((s = ir_check_decl_name(f, name)) ||
        (s = grow((void **)&f->states, &f->cap_states, f->n_states, sizeof *f->states)) ||
        (s = copy_name(name, &copy)))
        return s;
    if ((s = emit_leaf(f, IR_STATE, IR_ROW, ir_dim_const(0), cols, f->n_states, out))) {
        free(copy);
        return s;
    }
    f->states[f->n_states++] = (ir_state){*out, -1, copy};
    return ir_index_decl(f, *out);
}

rnnc_status ir_decl_param(ir_fn *f, const char *name, const ir_dim *rows, ir_dim cols,
                          bool optional, int32_t *out)
{
    char *copy;
    rnnc_status s;
    if ((s = ir_check_decl_name(f, name)) ||
        (s = grow((void **)&f->params, &f->cap_params, f->n_params, sizeof *f->params)) ||
        (s = copy_name(name, &copy)))
        return s;
    if ((s = emit_leaf(f, IR_PARAM, rows ? IR_MAT : IR_VEC, rows ? *rows : ir_dim_const(0), cols,
                       f->n_params, out))) {
        free(copy);
        return s;
    }
    f->params[f->n_params++] = (ir_param){*out, optional, copy};
    return ir_index_decl(f, *out);
}

rnnc_status ir_emit_const(ir_fn *f, double v, int32_t *out)
{
    if (v != v || v - v != 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "constants must be finite");
    ir_node n = {.op = IR_CONST, .kind = IR_SCALAR, .a = {-1, -1, -1}, .f = v};
    return ir_emit(f, &n, out);
}

rnnc_status ir_emit_node(ir_fn *f, ir_node *n, int32_t *out)
{
    rnnc_status s = ir_infer_node(f, n);
    return s != RNNC_OK ? s : ir_emit(f, n, out);
}

rnnc_status ir_emit_dropout(ir_fn *f, int32_t x, double p, int32_t *out)
{
    /* Each dropout site draws its own mask, so sites never merge. */
    ir_node n = {.op = IR_DROPOUT, .a = {x, -1, -1}, .f = p, .i1 = f->n_dropout};
    rnnc_status s = ir_emit_node(f, &n, out);
    if (s == RNNC_OK)
        f->n_dropout++;
    return s;
}

rnnc_status ir_set_next(ir_fn *f, int32_t state, int32_t next)
{
    int s = state >= 0 && state < f->n ? ir_state_of(f, state) : -1;
    if (s < 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "set_next: value %d is not a state of cell '%s'",
                        state, f->name);
    if (next < 0 || next >= f->n)
        return err_fail(RNNC_ERR_INVALID_ARG, "set_next: value %d is not in cell '%s'", next,
                        f->name);
    if (f->states[s].next >= 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "state '%s' is given its next value twice",
                        f->states[s].name);
    const ir_node *n = &f->nodes[next], *st = &f->nodes[state];
    if (n->kind != IR_ROW || !ir_dim_eq(n->cols, st->cols)) {
        char b1[48], b2[48];
        return err_fail(RNNC_ERR_SHAPE, "next value of state '%s' must be a row of [%s], got [%s]",
                        f->states[s].name, ir_dim_str(st->cols, b1, sizeof b1),
                        ir_dim_str(n->cols, b2, sizeof b2));
    }
    f->states[s].next = next;
    return RNNC_OK;
}

rnnc_status ir_set_output(ir_fn *f, int32_t out)
{
    if (out < 0 || out >= f->n || f->nodes[out].kind != IR_ROW)
        return err_fail(RNNC_ERR_SHAPE, "the output of cell '%s' must be a row value", f->name);
    if (f->output >= 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "the output of cell '%s' is set twice", f->name);
    f->output = out;
    return RNNC_OK;
}
