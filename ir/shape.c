/*
 * shape.c: shape rules, one per op family.  Every node's kind and feature
 * size follow from its operands; the builder runs these before a node
 * enters the cell, so a cell never holds an ill-shaped node.
 */
#include <float.h>
#include <stdio.h>

#include "ir/ir.h"

static const char *kind_name(int k)
{
    static const char *const names[] = {"row", "vector", "matrix", "scalar"};
    return names[k & 3];
}

static rnnc_status shape_fail(const ir_node *n, const char *what, const ir_node *x,
                              const ir_node *y)
{
    char b1[48], b2[48];
    if (!y)
        return err_fail(RNNC_ERR_SHAPE, "%s: %s (operand: %s [%s])", ir_ops[n->op].name, what,
                        kind_name(x->kind), ir_dim_str(x->cols, b1, sizeof b1));
    return err_fail(RNNC_ERR_SHAPE, "%s: %s (operands: %s [%s] and %s [%s])", ir_ops[n->op].name,
                    what, kind_name(x->kind), ir_dim_str(x->cols, b1, sizeof b1),
                    kind_name(y->kind), ir_dim_str(y->cols, b2, sizeof b2));
}

static rnnc_status infer_linear(ir_node *n, const ir_node *x, const ir_node *w)
{
    if (w->kind != IR_MAT)
        return shape_fail(n, "the second operand must be a matrix parameter", x, w);
    if (x->kind != IR_ROW && x->kind != IR_VEC)
        return shape_fail(n, "the first operand must be a row value", x, w);
    if (!ir_dim_eq(x->cols, w->cols)) {
        char b1[48], b2[48], b3[48];
        return err_fail(RNNC_ERR_SHAPE, "linear: x has %s features but the matrix is [%s, %s]",
                        ir_dim_str(x->cols, b1, sizeof b1), ir_dim_str(w->rows, b2, sizeof b2),
                        ir_dim_str(w->cols, b3, sizeof b3));
    }
    n->kind = x->kind;
    n->cols = w->rows;
    return RNNC_OK;
}

static rnnc_status infer_binary(ir_node *n, const ir_node *x, const ir_node *y)
{
    if (x->kind == IR_MAT || y->kind == IR_MAT)
        return shape_fail(n, "a matrix parameter can only be used by linear", x, y);
    n->kind = x->kind < y->kind ? x->kind : y->kind; /* ROW < VEC < SCALAR */
    if (x->kind == IR_SCALAR) {
        n->cols = y->cols;
    } else if (y->kind == IR_SCALAR || ir_dim_eq(x->cols, y->cols) || ir_dim_is_const(y->cols, 1)) {
        n->cols = x->cols;
    } else if (ir_dim_is_const(x->cols, 1)) {
        n->cols = y->cols;
    } else {
        return shape_fail(n, "feature sizes differ", x, y);
    }
    return RNNC_OK;
}

static rnnc_status infer_chunk(ir_node *n, const ir_node *x)
{
    if (x->kind != IR_ROW && x->kind != IR_VEC)
        return shape_fail(n, "chunk needs a row or vector value", x, NULL);
    if (n->i0 < 1 || n->i1 < 0 || n->i1 >= n->i0)
        return err_fail(RNNC_ERR_SHAPE, "chunk: piece %d of %d does not exist", n->i1, n->i0);
    if (!ir_dim_div(x->cols, n->i0, &n->cols)) {
        char b[48];
        return err_fail(RNNC_ERR_SHAPE, "chunk: %d pieces do not divide [%s] evenly", n->i0,
                        ir_dim_str(x->cols, b, sizeof b));
    }
    n->kind = x->kind;
    return RNNC_OK;
}

static rnnc_status infer_layernorm(const ir_fn *f, ir_node *n, const ir_node *x)
{
    if (x->kind != IR_ROW && x->kind != IR_VEC)
        return shape_fail(n, "layernorm needs a row or vector value", x, NULL);
    if (!(n->f >= 0 && n->f <= DBL_MAX)) /* an argument, not a shape: NaN and inf too */
        return err_fail(RNNC_ERR_INVALID_ARG, "layernorm: eps must be finite and >= 0, got %g",
                        n->f);
    for (int k = 1; k < 3; k++) {
        if (n->a[k] < 0)
            continue;
        const ir_node *g = &f->nodes[n->a[k]];
        if (g->kind != IR_VEC || !ir_dim_eq(g->cols, x->cols))
            return shape_fail(n, k == 1 ? "gamma must be a vector of the normalised size"
                                        : "beta must be a vector of the normalised size",
                              x, g);
    }
    n->kind = x->kind;
    n->cols = x->cols;
    return RNNC_OK;
}

/* The backward-only ops of the autodiff pass; slice and expand arrive with
 * their feature size (and slice with its offset in rows) already set. */
static rnnc_status infer_grad(ir_node *n, const ir_node *x, const ir_node *y)
{
    ir_dim end;
    switch (n->op) {
    case IR_LINEAR_T:
        if (y->kind != IR_MAT || (x->kind != IR_ROW && x->kind != IR_VEC) ||
            !ir_dim_eq(x->cols, y->rows))
            return shape_fail(n, "needs a row value of the matrix's rows and a matrix", x, y);
        n->kind = x->kind;
        n->cols = y->cols;
        return RNNC_OK;
    case IR_OUTER:
        if ((x->kind != IR_ROW && x->kind != IR_VEC) || x->kind != y->kind)
            return shape_fail(n, "needs two row (or two vector) values", x, y);
        n->kind = IR_MAT;
        n->rows = x->cols;
        n->cols = y->cols;
        return RNNC_OK;
    case IR_ROWSUM:
        if (x->kind != IR_ROW)
            return shape_fail(n, "rowsum needs a row value", x, NULL);
        n->kind = IR_VEC;
        n->cols = x->cols;
        return RNNC_OK;
    case IR_SLICE:
        end = ir_dim_add(n->rows, n->cols);
        if ((x->kind != IR_ROW && x->kind != IR_VEC) || end.c > x->cols.c || end.i > x->cols.i ||
            end.h > x->cols.h || end.p > x->cols.p)
            return shape_fail(n, "the slice is not inside the value", x, NULL);
        n->kind = x->kind;
        return RNNC_OK;
    default: /* IR_EXPAND: a constant becomes a vector */
        if (x->kind == IR_MAT || (x->kind != IR_SCALAR && !ir_dim_is_const(x->cols, 1)))
            return shape_fail(n, "expand needs a one-feature value or a constant", x, NULL);
        n->kind = x->kind == IR_SCALAR ? IR_VEC : x->kind;
        return RNNC_OK;
    }
}

static rnnc_status infer_other(const ir_fn *f, ir_node *n, const ir_node *x, const ir_node *y)
{
    switch (n->op) {
    case IR_LINEAR: return infer_linear(n, x, y);
    case IR_CHUNK: return infer_chunk(n, x);
    case IR_LAYERNORM: return infer_layernorm(f, n, x);
    case IR_CONCAT:
        if (x->kind != y->kind || (x->kind != IR_ROW && x->kind != IR_VEC))
            return shape_fail(n, "concat needs two row (or two vector) values", x, y);
        n->kind = x->kind;
        n->cols = ir_dim_add(x->cols, y->cols);
        return RNNC_OK;
    case IR_SUM:
    case IR_MEAN:
        if (x->kind != IR_ROW && x->kind != IR_VEC)
            return shape_fail(n, "needs a row or vector value", x, NULL);
        n->kind = x->kind;
        n->cols = ir_dim_const(1);
        return RNNC_OK;
    case IR_DROPOUT:
        if (x->kind != IR_ROW)
            return shape_fail(n, "dropout applies to row values", x, NULL);
        if (!(n->f >= 0 && n->f < 1))
            return err_fail(RNNC_ERR_INVALID_ARG, "dropout: p must be in [0, 1), got %g", n->f);
        n->kind = IR_ROW;
        n->cols = x->cols;
        return RNNC_OK;
    default:
        return err_fail(RNNC_ERR_INTERNAL, "no shape rule for op %d", n->op);
    }
}

rnnc_status ir_infer_node(const ir_fn *f, ir_node *n)
{
    unsigned flags = ir_ops[n->op].flags;
    if (flags & IR_F_LEAF)
        return RNNC_OK; /* declared with its shape */
    for (int k = 0; k < ir_ops[n->op].arity; k++) {
        bool optional = n->op == IR_LAYERNORM && k > 0;
        if (n->a[k] < 0 ? !optional : n->a[k] >= f->n)
            return err_fail(RNNC_ERR_INVALID_ARG, "%s: operand %d is not a value of cell '%s'",
                            ir_ops[n->op].name, k + 1, f->name);
    }
    const ir_node *x = &f->nodes[n->a[0]];
    const ir_node *y = n->a[1] >= 0 ? &f->nodes[n->a[1]] : NULL;
    if (n->op != IR_SLICE)
        n->rows = ir_dim_const(0);
    if ((flags & IR_F_GRAD) && n->op != IR_STEP)
        return infer_grad(n, x, y);
    if (flags & IR_F_UNARY) {
        if (x->kind == IR_MAT)
            return shape_fail(n, "a matrix parameter can only be used by linear", x, NULL);
        n->kind = x->kind;
        n->cols = x->cols;
        return RNNC_OK;
    }
    if (flags & IR_F_BINARY)
        return infer_binary(n, x, y);
    return infer_other(f, n, x, y);
}
