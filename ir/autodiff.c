/*
 * autodiff.c: reverse-mode differentiation of one step of a cell.
 * Requires: a verified forward function, specialised for a model (no absent
 * params left), made of ops of the .cell format.
 * Keeps: nothing of the forward; builds a new IR function, the backward
 * step (ir_grad in ir.h), whose adjoints are summed in reverse index order.
 *
 * Every op's derivative rule is one function of the table `rules`, keyed by
 * op.  A rule reads the forward values it needs through fwd_value(), which
 * decides, once per value, whether the forward saves it or the backward
 * recomputes it from what it has (see plan_costs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

typedef struct ad {
    const ir_fn *f;     /* forward */
    ir_fn *b;           /* backward */
    ir_grad *g;
    rnnc_status st;     /* sticky: emitters do nothing after a failure */
    int32_t *fwd;       /* [f->n] node of b holding the forward value, -1 = not yet */
    int32_t *adj;       /* [f->n] summed adjoint, -1 = none */
    int32_t **piece;    /* [f->n] adjoints of chunk pieces, NULL = none */
    int32_t *parts;     /* [f->n] how many pieces piece[] holds */
    double *cost;       /* [f->n] storage per row to have the value in the backward */
    uint8_t *save;      /* [f->n] 1: the forward saves it */
    uint8_t *wants;     /* [f->n] depends on an input, state or param */
    int32_t cap_in;
} ad;

/* ---------------------------------------------------------------- emitters */

static int32_t emit(ad *c, ir_node n)
{
    int32_t out = -1;
    for (int k = 0; k < 3; k++)
        if (c->st == RNNC_OK && n.a[k] < -1)
            c->st = err_fail(RNNC_ERR_INTERNAL, "autodiff: a missing operand");
    if (c->st == RNNC_OK)
        c->st = ir_emit_node(c->b, &n, &out);
    return c->st == RNNC_OK ? out : -2;
}

static int32_t op2(ad *c, int op, int32_t a, int32_t b)
{
    if (a < 0 || b < 0)
        return -2;
    return emit(c, (ir_node){.op = (uint8_t)op, .a = {a, b, -1}});
}

static int32_t op1(ad *c, int op, int32_t a)
{
    if (a < 0)
        return -2;
    return emit(c, (ir_node){.op = (uint8_t)op, .a = {a, -1, -1}});
}

static int32_t cst(ad *c, double v)
{
    int32_t out = -2;
    if (c->st == RNNC_OK)
        c->st = ir_emit_const(c->b, v, &out);
    return c->st == RNNC_OK ? out : -2;
}

/* x with one feature (or a constant) repeated over `cols` features. */
static int32_t expand(ad *c, int32_t x, ir_dim cols)
{
    if (x < 0)
        return -2;
    return emit(c, (ir_node){.op = IR_EXPAND, .a = {x, -1, -1}, .cols = cols});
}

/* Features [off, off + cols) of x. */
static int32_t slice(ad *c, int32_t x, ir_dim off, ir_dim cols)
{
    if (x < 0)
        return -2;
    return emit(c, (ir_node){.op = IR_SLICE, .a = {x, -1, -1}, .rows = off, .cols = cols});
}

static ir_dim dim_sub(ir_dim a, ir_dim b)
{
    return (ir_dim){a.c - b.c, a.i - b.i, a.h - b.h, a.p - b.p};
}

/* A row of zeros of `cols` features (like x, a row value). */
static int32_t zeros_like_row(ad *c, int32_t x, ir_dim cols)
{
    return expand(c, op2(c, IR_MUL, cst(c, 0.0), op1(c, IR_SUM, x)), cols);
}

/* ---------------------------------------------------------------- saving or recomputing */

/* Storage of a value per batch row, at a nominal size of every dim. */
static double width(const ir_node *n)
{
    if (n->kind != IR_ROW)
        return 0.0; /* parameters only: the backward recomputes it once */
    return n->cols.c + 256.0 * (n->cols.i + n->cols.h + n->cols.p);
}

static bool is_next(const ir_fn *f, int32_t v)
{
    for (int s = 0; s < f->n_states; s++)
        if (f->states[s].next == v)
            return true;
    return false;
}

/*
 * cost[v]: what the forward must store per row so that the backward has v.
 * Leaves, parameter-only values and next states (the state sequence) are
 * free; a contraction or reduction is stored; anything else is recomputed
 * from its operands unless storing it is smaller.  A chunk costs its share
 * of its source, since the other pieces are usually needed too.
 */
static void plan_costs(ad *c)
{
    const ir_fn *f = c->f;
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        unsigned fl = ir_ops[n->op].flags;
        double w = width(n), sum = 0.0;
        c->save[i] = 0;
        if ((fl & IR_F_LEAF) || w == 0.0 || is_next(f, i)) {
            c->cost[i] = 0.0;
            continue;
        }
        if (fl & (IR_F_CONTRACT | IR_F_REDUCE)) {
            c->cost[i] = w;
            c->save[i] = 1;
            continue;
        }
        for (int k = 0; k < 3; k++)
            if (n->a[k] >= 0)
                sum += c->cost[n->a[k]];
        if (n->op == IR_CHUNK)
            sum /= n->i0;
        c->cost[i] = w < sum ? w : sum;
        c->save[i] = w < sum;
    }
}

static const char *state_name(const ir_fn *f, int s)
{
    return f->states[s].name;
}

/* Declares an input of the backward holding a forward value. */
static int32_t declare_in(ad *c, ir_grad_src src, int32_t ref, const char *name, ir_dim cols)
{
    int32_t out = -2;
    if (c->st != RNNC_OK)
        return -2;
    if (c->b->n_inputs == c->cap_in) {
        int32_t cap = c->cap_in ? 2 * c->cap_in : 8;
        ir_grad_in *p = realloc(c->g->in, sizeof *p * (size_t)cap);
        if (!p) {
            c->st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "autodiff: out of memory");
            return -2;
        }
        c->g->in = p;
        c->cap_in = cap;
    }
    c->st = ir_decl_input(c->b, name, cols, &out);
    if (c->st != RNNC_OK)
        return -2;
    c->g->in[c->b->n_inputs - 1] = (ir_grad_in){src, ref};
    return out;
}

static int32_t declare_leaf(ad *c, int32_t v)
{
    const ir_fn *f = c->f;
    const ir_node *n = &f->nodes[v];
    char name[64];
    switch (n->op) {
    case IR_INPUT: return declare_in(c, IR_GSRC_INPUT, n->i0, f->inputs[n->i0].name, n->cols);
    case IR_STATE: return declare_in(c, IR_GSRC_STATE, n->i0, state_name(f, n->i0), n->cols);
    case IR_PARAM: return c->b->params[n->i0].node;
    default: return cst(c, n->f);
    }
    (void)name;
}

/* The backward's node for forward value v: a leaf, the state leaving the
 * step, a saved value, or a recomputation from the operands. */
static int32_t fwd_value(ad *c, int32_t v)
{
    if (v < 0 || c->st != RNNC_OK)
        return -2;
    if (c->fwd[v] >= 0)
        return c->fwd[v];
    const ir_fn *f = c->f;
    const ir_node *n = &f->nodes[v];
    char name[80];
    int32_t out;
    if (ir_ops[n->op].flags & IR_F_LEAF) {
        out = declare_leaf(c, v);
    } else if (n->kind == IR_ROW && is_next(f, v)) {
        int s = 0;
        while (f->states[s].next != v)
            s++;
        snprintf(name, sizeof name, "next_%s", state_name(f, s));
        out = declare_in(c, IR_GSRC_NEXT, s, name, n->cols);
    } else if (c->save[v]) {
        /* saved_<name> after the cell's name of the value, else its opt-dump number */
        const char *given = ir_value_name(f, v);
        if (given && strlen(given) < sizeof name - 8)
            snprintf(name, sizeof name, "saved_%s", given);
        else
            snprintf(name, sizeof name, "saved_t%d", (int)v);
        if (ir_find_decl(c->b, name) >= 0) /* a declaration already has that name */
            snprintf(name, sizeof name, "saved_t%d", (int)v);
        out = declare_in(c, IR_GSRC_SAVED, v, name, n->cols);
    } else {
        ir_node m = *n;
        for (int k = 0; k < 3; k++)
            if (n->a[k] >= 0)
                m.a[k] = fwd_value(c, n->a[k]);
        out = emit(c, m);
        if (c->st == RNNC_OK && out >= 0 && ir_value_name(f, v)) /* recomputed: same name */
            c->st = ir_name_value(c->b, out, ir_value_name(f, v));
    }
    c->fwd[v] = out;
    return out;
}

/* ---------------------------------------------------------------- adjoints */

/* Adds contribution d (shaped as the user's value) to the adjoint of
 * forward value v, undoing the user's broadcasts of v. */
static void acc(ad *c, int32_t v, int32_t d)
{
    if (v < 0 || !c->wants[v] || d < 0 || c->st != RNNC_OK)
        return;
    const ir_node *n = &c->f->nodes[v];
    if (ir_dim_is_const(n->cols, 1) && !ir_dim_is_const(c->b->nodes[d].cols, 1))
        d = op1(c, IR_SUM, d);
    if (n->kind == IR_VEC && c->b->nodes[d].kind == IR_ROW)
        d = op1(c, IR_ROWSUM, d);
    c->adj[v] = c->adj[v] < 0 ? d : op2(c, IR_ADD, c->adj[v], d);
}

/* The adjoint of piece `index` of chunk(v, parts): kept until v is reached,
 * so the pieces of one split become one concat. */
static void acc_piece(ad *c, int32_t v, int parts, int index, int32_t d)
{
    if (!c->wants[v] || d < 0 || c->st != RNNC_OK)
        return;
    if (!c->piece[v]) {
        c->piece[v] = malloc(sizeof(int32_t) * (size_t)parts);
        if (!c->piece[v]) {
            c->st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "autodiff: out of memory");
            return;
        }
        for (int k = 0; k < parts; k++)
            c->piece[v][k] = -1;
        c->parts[v] = parts;
    }
    if (c->parts[v] != parts) { /* another split of v: a full-width term now */
        int32_t zero = op2(c, IR_MUL, cst(c, 0.0), d), cat = -1;
        for (int k = 0; k < parts; k++)
            cat = cat < 0 ? (k == index ? d : zero)
                          : op2(c, IR_CONCAT, cat, k == index ? d : zero);
        acc(c, v, cat);
        return;
    }
    int32_t *p = &c->piece[v][index];
    *p = *p < 0 ? d : op2(c, IR_ADD, *p, d);
}

/* The whole adjoint of v, once every user has contributed. */
static int32_t adjoint(ad *c, int32_t v)
{
    if (!c->piece[v])
        return c->adj[v];
    int32_t any = -1, cat = -1, zero = -1;
    for (int k = 0; k < c->parts[v]; k++)
        if (c->piece[v][k] >= 0)
            any = c->piece[v][k];
    for (int k = 0; k < c->parts[v]; k++) {
        if (c->piece[v][k] < 0 && zero < 0)
            zero = op2(c, IR_MUL, cst(c, 0.0), any);
        int32_t p = c->piece[v][k] >= 0 ? c->piece[v][k] : zero;
        cat = cat < 0 ? p : op2(c, IR_CONCAT, cat, p);
    }
    return c->adj[v] < 0 ? cat : op2(c, IR_ADD, c->adj[v], cat);
}

/* ---------------------------------------------------------------- derivative rules */

typedef void (*rule_fn)(ad *c, const ir_node *n, int32_t i, int32_t dy);

#define X(k) (n->a[k])
#define WANT(k) (n->a[k] >= 0 && c->wants[n->a[k]])
#define V(k) fwd_value(c, n->a[k])
#define OUT fwd_value(c, i)

static void d_linear(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    if (WANT(0))
        acc(c, X(0), op2(c, IR_LINEAR_T, dy, V(1)));
    if (WANT(1))
        acc(c, X(1), op2(c, IR_OUTER, dy, V(0)));
}

static void d_linear_t(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    if (WANT(0))
        acc(c, X(0), op2(c, IR_LINEAR, dy, V(1)));
    if (WANT(1))
        acc(c, X(1), op2(c, IR_OUTER, V(0), dy));
}

static void d_outer(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    if (WANT(0))
        acc(c, X(0), op2(c, IR_LINEAR, V(1), dy));
    if (WANT(1))
        acc(c, X(1), op2(c, IR_LINEAR_T, V(0), dy));
}

static void d_add(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    acc(c, X(0), dy);
    acc(c, X(1), n->op == IR_SUB ? op1(c, IR_NEG, dy) : dy);
}

static void d_mul(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    if (WANT(0))
        acc(c, X(0), op2(c, IR_MUL, dy, V(1)));
    if (WANT(1))
        acc(c, X(1), op2(c, IR_MUL, dy, V(0)));
}

static void d_div(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    if (WANT(0))
        acc(c, X(0), op2(c, IR_DIV, dy, V(1)));
    if (WANT(1)) /* d(a/b)/db = -(a/b)/b */
        acc(c, X(1), op1(c, IR_NEG, op2(c, IR_DIV, op2(c, IR_MUL, dy, OUT), V(1))));
}

/* Unary ops: dy times the derivative, written with the output where that
 * is what the forward has (the output is often a next state, so free). */
static void d_unary(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    int32_t g;
    switch (n->op) {
    case IR_NEG: g = op1(c, IR_NEG, dy); break;
    case IR_SIGMOID: g = op2(c, IR_MUL, dy, op2(c, IR_MUL, OUT, op2(c, IR_SUB, cst(c, 1), OUT))); break;
    case IR_TANH: g = op2(c, IR_MUL, dy, op2(c, IR_SUB, cst(c, 1), op2(c, IR_MUL, OUT, OUT))); break;
    case IR_RELU: g = op2(c, IR_MUL, dy, op1(c, IR_STEP, OUT)); break;
    case IR_EXP: g = op2(c, IR_MUL, dy, OUT); break;
    case IR_LOG: g = op2(c, IR_DIV, dy, V(0)); break;
    case IR_SQRT: g = op2(c, IR_DIV, op2(c, IR_MUL, dy, cst(c, 0.5)), OUT); break;
    default: /* IR_RSQRT: -x^(-3/2) / 2 */
        g = op2(c, IR_MUL, dy,
                op2(c, IR_MUL, cst(c, -0.5), op2(c, IR_MUL, OUT, op2(c, IR_MUL, OUT, OUT))));
        break;
    }
    acc(c, X(0), g);
}

static void d_step(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)c, (void)n, (void)i, (void)dy; /* zero almost everywhere */
}

static void d_chunk(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    acc_piece(c, X(0), n->i0, n->i1, dy);
}

static void d_concat(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    ir_dim wa = c->f->nodes[X(0)].cols, wb = c->f->nodes[X(1)].cols;
    if (WANT(0))
        acc(c, X(0), slice(c, dy, ir_dim_const(0), wa));
    if (WANT(1))
        acc(c, X(1), slice(c, dy, wa, wb));
}

static void d_slice(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    ir_dim total = c->f->nodes[X(0)].cols, after = dim_sub(total, ir_dim_add(n->rows, n->cols));
    int32_t d = dy;
    if (!ir_dim_is_const(n->rows, 0))
        d = op2(c, IR_CONCAT, zeros_like_row(c, dy, n->rows), d);
    if (!ir_dim_is_const(after, 0))
        d = op2(c, IR_CONCAT, d, zeros_like_row(c, dy, after));
    acc(c, X(0), d);
}

static void d_expand(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    acc(c, X(0), op1(c, IR_SUM, dy));
}

static void d_rowsum(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    acc(c, X(0), dy); /* a vector, broadcast over the rows */
}

static void d_reduce(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    ir_dim m = c->f->nodes[X(0)].cols;
    int32_t d = dy;
    if (n->op == IR_MEAN) /* the count m as a value: the sum of m ones */
        d = op2(c, IR_DIV, dy, op1(c, IR_SUM, expand(c, cst(c, 1), m)));
    acc(c, X(0), expand(c, d, m));
}

/*
 * y = xhat * g + b with xhat = (x - mean) * rstd: the statistics are
 * recomputed from x; dx = rstd * (dxh - mean(dxh) - xhat * mean(dxh * xhat))
 * where dxh = dy * g.
 */
static void d_layernorm(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    int32_t x = V(0);
    int32_t xc = op2(c, IR_SUB, x, op1(c, IR_MEAN, x));
    int32_t var = op1(c, IR_MEAN, op2(c, IR_MUL, xc, xc));
    int32_t rstd = op1(c, IR_RSQRT, op2(c, IR_ADD, var, cst(c, n->f)));
    int32_t xhat = op2(c, IR_MUL, xc, rstd);
    if (WANT(1))
        acc(c, X(1), op2(c, IR_MUL, dy, xhat));
    if (WANT(2))
        acc(c, X(2), dy);
    if (!WANT(0))
        return;
    int32_t dxh = X(1) >= 0 ? op2(c, IR_MUL, dy, V(1)) : dy;
    int32_t proj = op1(c, IR_MEAN, op2(c, IR_MUL, dxh, xhat));
    int32_t centred = op2(c, IR_SUB, dxh, op1(c, IR_MEAN, dxh));
    acc(c, X(0), op2(c, IR_MUL, rstd, op2(c, IR_SUB, centred, op2(c, IR_MUL, xhat, proj))));
}

/* The mask is the forward's: same site, same draw at the same step. */
static void d_dropout(ad *c, const ir_node *n, int32_t i, int32_t dy)
{
    (void)i;
    ir_node m = *n;
    m.a[0] = dy;
    acc(c, X(0), dy < 0 ? -2 : emit(c, m));
}

#undef X
#undef WANT
#undef V
#undef OUT

static const rule_fn rules[IR_NUM_OPS] = {
    [IR_LINEAR] = d_linear,   [IR_ADD] = d_add,         [IR_SUB] = d_add,
    [IR_MUL] = d_mul,         [IR_DIV] = d_div,         [IR_NEG] = d_unary,
    [IR_SIGMOID] = d_unary,   [IR_TANH] = d_unary,      [IR_RELU] = d_unary,
    [IR_EXP] = d_unary,       [IR_LOG] = d_unary,       [IR_SQRT] = d_unary,
    [IR_RSQRT] = d_unary,     [IR_CHUNK] = d_chunk,     [IR_CONCAT] = d_concat,
    [IR_LAYERNORM] = d_layernorm, [IR_SUM] = d_reduce,  [IR_MEAN] = d_reduce,
    [IR_DROPOUT] = d_dropout, [IR_LINEAR_T] = d_linear_t, [IR_OUTER] = d_outer,
    [IR_ROWSUM] = d_rowsum,   [IR_STEP] = d_step,       [IR_SLICE] = d_slice,
    [IR_EXPAND] = d_expand,
};

bool ir_has_derivative(int op)
{
    if (op < 0 || op >= IR_NUM_OPS)
        return false;
    return (ir_ops[op].flags & IR_F_LEAF) || rules[op] != NULL;
}

/* ---------------------------------------------------------------- the pass */

static rnnc_status declare_decls(ad *c)
{
    const ir_fn *f = c->f;
    char name[80];
    int32_t out;
    for (int k = 0; k < f->n_params && c->st == RNNC_OK; k++) {
        const ir_node *n = &f->nodes[f->params[k].node];
        c->st = ir_decl_param(c->b, f->params[k].name, n->kind == IR_MAT ? &n->rows : NULL,
                              n->cols, false, &out);
    }
    int32_t dout = declare_in(c, IR_GSRC_DOUT, 0, "d_output", f->nodes[f->output].cols);
    acc(c, f->output, dout);
    for (int s = 0; s < f->n_states && c->st == RNNC_OK; s++) {
        snprintf(name, sizeof name, "d_%s", f->states[s].name);
        c->st = ir_decl_state(c->b, name, f->nodes[f->states[s].node].cols, &out);
        if (c->st == RNNC_OK)
            acc(c, f->states[s].next, out);
    }
    return c->st;
}

/* A leaf's adjoint is a result of the backward step. */
static void take_result(ad *c, int32_t v, int32_t d)
{
    const ir_node *n = &c->f->nodes[v];
    if (n->op == IR_INPUT && n->i0 == 0)
        c->b->output = d;
    else if (n->op == IR_STATE)
        c->b->states[n->i0].next = d;
    else if (n->op == IR_PARAM)
        c->g->param_grad[n->i0] = d;
}

static rnnc_status sweep(ad *c)
{
    const ir_fn *f = c->f;
    for (int32_t i = f->n - 1; i >= 0 && c->st == RNNC_OK; i--) {
        int32_t d = adjoint(c, i);
        const ir_node *n = &f->nodes[i];
        if (d < 0)
            continue;
        if (ir_ops[n->op].flags & IR_F_LEAF) {
            take_result(c, i, d);
            continue;
        }
        if (!rules[n->op])
            return err_fail(RNNC_ERR_INTERNAL, "autodiff: op %s has no derivative rule",
                            ir_ops[n->op].name);
        rules[n->op](c, n, i, d);
    }
    if (c->st != RNNC_OK)
        return c->st;
    /* what nothing reached has a zero gradient */
    ir_fn *b = c->b;
    if (b->output < 0)
        b->output = op2(c, IR_MUL, cst(c, 0.0), fwd_value(c, f->inputs[0].node));
    for (int s = 0; s < b->n_states; s++)
        if (b->states[s].next < 0)
            b->states[s].next = op2(c, IR_MUL, cst(c, 0.0), b->states[s].node);
    return c->st;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static rnnc_status list_saved(ad *c)
{
    ir_grad *g = c->g;
    g->saved = malloc(sizeof(int32_t) * ((size_t)c->b->n_inputs + 1));
    if (!g->saved)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "autodiff: out of memory");
    for (int k = 0; k < c->b->n_inputs; k++)
        if (g->in[k].src == IR_GSRC_SAVED)
            g->saved[g->n_saved++] = g->in[k].ref;
    qsort(g->saved, (size_t)g->n_saved, sizeof *g->saved, cmp_i32);
    return RNNC_OK;
}

static rnnc_status ad_init(ad *c, const ir_fn *f, ir_grad *g)
{
    size_t n = (size_t)f->n + 1;
    char name[300];
    memset(c, 0, sizeof *c);
    c->f = f;
    c->g = g;
    c->fwd = malloc(n * sizeof *c->fwd);
    c->adj = malloc(n * sizeof *c->adj);
    c->piece = calloc(n, sizeof *c->piece);
    c->parts = calloc(n, sizeof *c->parts);
    c->cost = calloc(n, sizeof *c->cost);
    c->save = calloc(n, 1);
    c->wants = calloc(n, 1);
    g->param_grad = malloc(sizeof(int32_t) * ((size_t)f->n_params + 1));
    if (!c->fwd || !c->adj || !c->piece || !c->parts || !c->cost || !c->save || !c->wants ||
        !g->param_grad)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "autodiff: out of memory");
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *nd = &f->nodes[i];
        c->fwd[i] = c->adj[i] = -1;
        c->wants[i] = nd->op == IR_INPUT || nd->op == IR_STATE || nd->op == IR_PARAM;
        for (int k = 0; k < 3; k++)
            if (nd->a[k] >= 0 && c->wants[nd->a[k]])
                c->wants[i] = 1;
    }
    for (int k = 0; k < f->n_params; k++)
        g->param_grad[k] = -1;
    snprintf(name, sizeof name, "%s_backward", f->name);
    return rnnc_cell_create(&g->fn, name);
}

static void ad_free(ad *c)
{
    for (int32_t i = 0; c->piece && i < c->f->n; i++)
        free(c->piece[i]);
    free(c->piece);
    free(c->parts);
    free(c->fwd);
    free(c->adj);
    free(c->cost);
    free(c->save);
    free(c->wants);
}

rnnc_status ir_autodiff(const ir_fn *f, ir_grad *out)
{
    if (!f || !out)
        return err_fail(RNNC_ERR_INVALID_ARG, "autodiff: NULL argument");
    memset(out, 0, sizeof *out);
    if (f->n_inputs != 1 || f->output < 0)
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "autodiff: cell '%s' needs exactly one input and an output", f->name);
    ad c;
    rnnc_status s = ad_init(&c, f, out);
    if (s == RNNC_OK) {
        c.b = out->fn;
        plan_costs(&c);
        s = declare_decls(&c);
    }
    if (s == RNNC_OK)
        s = sweep(&c);
    if (s == RNNC_OK)
        s = list_saved(&c);
    if (s == RNNC_OK)
        s = ir_verify(out->fn);
    c.b = NULL;
    ad_free(&c);
    if (s != RNNC_OK)
        ir_grad_free(out);
    return s;
}

void ir_grad_free(ir_grad *g)
{
    if (!g)
        return;
    rnnc_cell_destroy(g->fn);
    free(g->in);
    free(g->param_grad);
    free(g->saved);
    memset(g, 0, sizeof *g);
}

rnnc_status ir_grad_print(const ir_fn *f, const ir_grad *g, char **text)
{
    int n = 0;
    const char **labels = calloc((size_t)f->n_params + 1, sizeof *labels);
    char **names = calloc((size_t)f->n_params + 1, sizeof *names);
    int32_t *nodes = calloc((size_t)f->n_params + 1, sizeof *nodes);
    rnnc_status s = RNNC_OK;
    if (!labels || !names || !nodes) {
        s = err_fail(RNNC_ERR_OUT_OF_MEMORY, "autodiff: out of memory");
        goto free_lists;
    }
    for (int k = 0; k < f->n_params; k++) {
        if (g->param_grad[k] < 0)
            continue;
        size_t len = strlen(f->params[k].name) + 8;
        if (!(names[n] = malloc(len))) {
            s = err_fail(RNNC_ERR_OUT_OF_MEMORY, "autodiff: out of memory");
            goto free_lists;
        }
        snprintf(names[n], len, "grad %s", f->params[k].name);
        labels[n] = names[n];
        nodes[n++] = g->param_grad[k];
    }
    s = ir_print_results(g->fn, labels, nodes, n, text);
free_lists:
    for (int k = 0; names && k < n; k++)
        free(names[k]);
    free(names);
    free(labels);
    free(nodes);
    return s;
}
