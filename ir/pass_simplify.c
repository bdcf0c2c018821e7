/*
 * pass_simplify: local algebra, and the reassociation that makes hoisting
 * pay.
 * Requires: a verified cell.  Keeps: its values (up to float rounding of
 * reassociated sums) and every declaration.
 *  - constants fold: op(const, const) -> const; neg(neg x) -> x;
 *  - identities: x*1, 1*x, x/1, x+0, 0+x, x-0 -> x;
 *  - a chain of single-use adds is regrouped by what its terms depend on:
 *    (state terms) + ((input terms) + (parameter terms)).  So the LSTM's
 *    x W_ih^T + b_ih + h W_hh^T + b_hh leaves x W_ih^T + (b_ih + b_hh) as one
 *    state-free subtree for hoist, and b_ih + b_hh as one foldable vector.
 */
#include <math.h>
#include <stdlib.h>

#include "ir/ir.h"

typedef struct ctx {
    uint8_t *dep;   /* per source node */
    int32_t *uses;  /* per source node */
    const int32_t *map; /* source -> dst: the driver's */
} ctx;

static bool is_const(const ir_fn *f, int32_t i, double v)
{
    return i >= 0 && f->nodes[i].op == IR_CONST && f->nodes[i].f == v;
}

static rnnc_status emit_const(ir_fn *dst, double v, int32_t *out)
{
    return ir_emit_const(dst, v, out);
}

static bool fold_value(int op, double a, double b, double *r)
{
    switch (op) {
    case IR_ADD: *r = a + b; break;
    case IR_SUB: *r = a - b; break;
    case IR_MUL: *r = a * b; break;
    case IR_DIV: *r = a / b; break;
    case IR_NEG: *r = -a; break;
    case IR_SIGMOID: *r = 1 / (1 + exp(-a)); break;
    case IR_TANH: *r = tanh(a); break;
    case IR_RELU: *r = a > 0 ? a : 0; break;
    case IR_EXP: *r = exp(a); break;
    case IR_LOG: *r = log(a); break;
    case IR_SQRT: *r = sqrt(a); break;
    case IR_RSQRT: *r = 1 / sqrt(a); break;
    default: return false;
    }
    return isfinite(*r);
}

/* Folds or simplifies *n (operands in dst); false if nothing applies. */
static bool simplify_local(ir_fn *dst, const ir_node *n, int32_t *out, rnnc_status *s)
{
    int32_t a = n->a[0], b = n->a[1];
    const ir_node *na = a >= 0 ? &dst->nodes[a] : NULL, *nb = b >= 0 ? &dst->nodes[b] : NULL;
    unsigned fl = ir_ops[n->op].flags;
    double r;
    if ((fl & IR_F_UNARY) && na->op == IR_CONST && fold_value(n->op, na->f, 0, &r))
        return *s = emit_const(dst, r, out), true;
    if ((fl & IR_F_BINARY) && na->op == IR_CONST && nb->op == IR_CONST &&
        fold_value(n->op, na->f, nb->f, &r))
        return *s = emit_const(dst, r, out), true;
    if (n->op == IR_NEG && na->op == IR_NEG)
        return *out = na->a[0], *s = RNNC_OK, true;
    /* An identity may only drop an operand whose shape the result keeps. */
    bool keep_a = na && (n->kind == na->kind && ir_dim_eq(n->cols, na->cols));
    bool keep_b = nb && (n->kind == nb->kind && ir_dim_eq(n->cols, nb->cols));
    if (keep_a && ((n->op == IR_MUL || n->op == IR_DIV) && is_const(dst, b, 1)))
        return *out = a, *s = RNNC_OK, true;
    if (keep_a && ((n->op == IR_ADD || n->op == IR_SUB) && is_const(dst, b, 0)))
        return *out = a, *s = RNNC_OK, true;
    if (keep_b && ((n->op == IR_MUL && is_const(dst, a, 1)) || (n->op == IR_ADD && is_const(dst, a, 0))))
        return *out = b, *s = RNNC_OK, true;
    return false;
}

/* Collects the terms of the single-use add chain rooted at source node i. */
static int collect_terms(const ir_fn *src, const ctx *c, int32_t i, bool root, int32_t *terms,
                         int n, int cap)
{
    const ir_node *x = &src->nodes[i];
    if (x->op == IR_ADD && (root || c->uses[i] == 1) && x->kind == IR_ROW) {
        n = collect_terms(src, c, x->a[0], false, terms, n, cap);
        return collect_terms(src, c, x->a[1], false, terms, n, cap);
    }
    if (n < cap)
        terms[n] = i;
    return n + 1;
}

/* Sums the terms of one dependence class in dst; -1 if there are none. */
static rnnc_status sum_class(ir_fn *dst, const ir_fn *src, const ctx *c, const int32_t *terms,
                             int n, int dep, int32_t *acc)
{
    *acc = -1;
    for (int k = 0; k < n; k++) {
        if (c->dep[terms[k]] != dep)
            continue;
        int32_t t = c->map[terms[k]];
        if (*acc < 0) {
            *acc = t;
            continue;
        }
        ir_node add = {.op = IR_ADD, .a = {*acc, t, -1}};
        rnnc_status s = ir_emit_node(dst, &add, acc);
        if (s != RNNC_OK)
            return s;
    }
    (void)src;
    return RNNC_OK;
}

static rnnc_status add_opt(ir_fn *dst, int32_t x, int32_t y, int32_t *out)
{
    if (x < 0 || y < 0) {
        *out = x < 0 ? y : x;
        return RNNC_OK;
    }
    ir_node add = {.op = IR_ADD, .a = {x, y, -1}};
    return ir_emit_node(dst, &add, out);
}

static rnnc_status regroup(ir_fn *dst, const ir_fn *src, const ctx *c, int32_t i, int32_t *out)
{
    int32_t terms[64];
    int n = collect_terms(src, c, i, true, terms, 0, 64);
    if (n > 64 || n < 3)
        return RNNC_ERR_STATE; /* not worth it: caller emits as is */
    int32_t s_state, s_input, s_param, hoisted;
    rnnc_status s;
    if ((s = sum_class(dst, src, c, terms, n, IR_DEP_STATE, &s_state)) ||
        (s = sum_class(dst, src, c, terms, n, IR_DEP_INPUT, &s_input)) ||
        (s = sum_class(dst, src, c, terms, n, IR_DEP_NONE, &s_param)) ||
        (s = add_opt(dst, s_input, s_param, &hoisted)))
        return s;
    return add_opt(dst, s_state, hoisted, out);
}

static rnnc_status simplify_cb(ir_fn *dst, const ir_fn *src, int32_t i, ir_node *n,
                               const int32_t *map, void *vctx, int32_t *out)
{
    ctx *c = vctx;
    c->map = map;
    rnnc_status s = RNNC_OK;
    if (ir_ops[n->op].flags & IR_F_LEAF && n->op != IR_CONST)
        return RNNC_OK; /* keep */
    if ((s = ir_infer_node(dst, n)) != RNNC_OK)
        return s;
    if (!simplify_local(dst, n, out, &s)) {
        s = n->op == IR_ADD && n->kind == IR_ROW ? regroup(dst, src, c, i, out) : RNNC_ERR_STATE;
        if (s == RNNC_ERR_STATE)
            s = ir_emit(dst, n, out);
    }
    return s;
}

rnnc_status pass_simplify(ir_fn *f)
{
    ctx c = {malloc((size_t)f->n + 1), ir_use_counts(f), NULL};
    rnnc_status s = RNNC_OK;
    if (!c.dep || !c.uses) {
        s = err_fail(RNNC_ERR_OUT_OF_MEMORY, "simplify: out of memory");
        goto out;
    }
    ir_compute_deps(f, c.dep);
    s = ir_rewrite(f, simplify_cb, &c);
out:
    free(c.dep);
    free(c.uses);
    return s;
}
