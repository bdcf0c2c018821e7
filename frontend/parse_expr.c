/*
 * parse_expr.c: expressions of the .cell format: + - * / with the usual
 * precedence, unary minus, parentheses, numbers, names and calls of the IR
 * ops, each mapped onto the public builder (so the parser knows no IR
 * internals).  Numbers stay numbers until an op needs a node, so `eps` or a
 * chunk count can be read as a value at parse time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

typedef rnnc_status (*fe_unary_fn)(rnnc_cell *, rnnc_value, rnnc_value *);
typedef rnnc_status (*fe_binary_fn)(rnnc_cell *, rnnc_value, rnnc_value, rnnc_value *);

typedef enum fe_fkind { F_UNARY, F_BINARY, F_CONCAT, F_CHUNK, F_LAYERNORM, F_DROPOUT } fe_fkind;

typedef struct fe_func {
    const char *name;
    fe_fkind kind;
    fe_unary_fn un;
    fe_binary_fn bin;
} fe_func;

static const fe_func funcs[] = {
    {"linear", F_BINARY, NULL, rnnc_linear},   {"add", F_BINARY, NULL, rnnc_add},
    {"sub", F_BINARY, NULL, rnnc_sub},         {"mul", F_BINARY, NULL, rnnc_mul},
    {"div", F_BINARY, NULL, rnnc_div},         {"neg", F_UNARY, rnnc_neg, NULL},
    {"sigmoid", F_UNARY, rnnc_sigmoid, NULL},  {"tanh", F_UNARY, rnnc_tanh, NULL},
    {"relu", F_UNARY, rnnc_relu, NULL},        {"exp", F_UNARY, rnnc_exp, NULL},
    {"log", F_UNARY, rnnc_log, NULL},          {"sqrt", F_UNARY, rnnc_sqrt, NULL},
    {"rsqrt", F_UNARY, rnnc_rsqrt, NULL},      {"sum", F_UNARY, rnnc_sum, NULL},
    {"mean", F_UNARY, rnnc_mean, NULL},        {"chunk", F_CHUNK, NULL, NULL},
    {"concat", F_CONCAT, NULL, rnnc_concat},   {"layernorm", F_LAYERNORM, NULL, NULL},
    {"dropout", F_DROPOUT, NULL, NULL},
};
#define N_FUNCS (sizeof funcs / sizeof funcs[0])

static const fe_func *find_func(const char *name, size_t len)
{
    for (size_t i = 0; i < N_FUNCS; i++)
        if (strlen(funcs[i].name) == len && memcmp(funcs[i].name, name, len) == 0)
            return &funcs[i];
    return NULL;
}

bool fe_has_function(const char *name)
{
    return name && find_func(name, strlen(name)) != NULL;
}

static rnnc_status parse_unary(fe_parser *p, fe_val *out);

static void span_from_tok(fe_val *v, const fe_tok *t)
{
    v->off = t->off;
    v->end = t->off + t->len;
    v->line = t->line;
    v->col = t->col;
}

/* The span from a's start to b's end. */
static fe_val join(const fe_val *a, const fe_val *b)
{
    fe_val v = *a;
    v.end = b->end;
    v.is_num = false;
    v.chunk_parts = 0;
    v.v = RNNC_NONE;
    return v;
}

rnnc_status fe_builder_error(fe_parser *p, rnnc_status s, const fe_val *span)
{
    char q[80];
    if (s == RNNC_ERR_INVALID_ARG)
        s = RNNC_ERR_PARSE; /* in text, a bad operand is a parse error */
    return fe_error_at(&p->lx, span->line, span->col, s, "in '%s': %s",
                       fe_quote(&p->lx, span->off, span->end - span->off, q, sizeof q),
                       rnnc_last_error());
}

rnnc_status fe_val_node(fe_parser *p, const fe_val *val, rnnc_value *out)
{
    char q[80];
    if (val->is_none)
        return fe_error_at(&p->lx, val->line, val->col, RNNC_ERR_PARSE,
                           "'none' stands only for layernorm's absent gamma or beta");
    if (val->chunk_parts > 0)
        return fe_error_at(&p->lx, val->line, val->col, RNNC_ERR_PARSE,
                           "'%s' gives %d values: unpack them (a, b = chunk(x, 2)) or pick one "
                           "(chunk(x, 2)[0])",
                           fe_quote(&p->lx, val->off, val->end - val->off, q, sizeof q),
                           val->chunk_parts);
    if (!val->is_num) {
        *out = val->v;
        return RNNC_OK;
    }
    rnnc_status s = rnnc_cell_const(p->cell, val->num, out);
    return s == RNNC_OK ? s : fe_builder_error(p, s, val);
}

static rnnc_status need_number(fe_parser *p, const fe_val *val, const char *what, double *out)
{
    char q[80];
    if (!val->is_num)
        return fe_error_at(&p->lx, val->line, val->col, RNNC_ERR_PARSE,
                           "%s must be a number or an attr, got '%s'", what,
                           fe_quote(&p->lx, val->off, val->end - val->off, q, sizeof q));
    *out = val->num;
    return RNNC_OK;
}

static rnnc_status need_count(fe_parser *p, const fe_val *val, const char *what, int lo, int *out)
{
    double d = 0;
    rnnc_status s = need_number(p, val, what, &d);
    if (s != RNNC_OK)
        return s;
    if (d != floor(d) || d < lo || d > (1 << 20))
        return fe_error_at(&p->lx, val->line, val->col, RNNC_ERR_PARSE,
                           "%s must be a whole number from %d, got %g", what, lo, d);
    *out = (int)d;
    return RNNC_OK;
}

static rnnc_status apply_binary(fe_parser *p, fe_binary_fn fn, const fe_val *a, const fe_val *b,
                                fe_val *out)
{
    rnnc_value x, y;
    rnnc_status s = fe_val_node(p, a, &x);
    if (s == RNNC_OK)
        s = fe_val_node(p, b, &y);
    if (s != RNNC_OK)
        return s;
    fe_val r = join(a, b);
    s = fn(p->cell, x, y, &r.v);
    if (s != RNNC_OK)
        return fe_builder_error(p, s, &r);
    *out = r;
    return RNNC_OK;
}

static rnnc_status arity_error(fe_parser *p, const fe_val *span, const char *name,
                               const char *want, int got)
{
    return fe_error_at(&p->lx, span->line, span->col, RNNC_ERR_PARSE,
                       "%s takes %s, got %d", name, want, got);
}

/* Applies a call whose arguments are parsed; `r` holds the call's span. */
static rnnc_status apply_call(fe_parser *p, const fe_func *f, fe_val *args, int n, fe_val *r)
{
    rnnc_value x, y, g = RNNC_NONE, b = RNNC_NONE;
    rnnc_status s = RNNC_OK;
    double d = 0;
    int k;
    switch (f->kind) {
    case F_UNARY:
        if (n != 1)
            return arity_error(p, r, f->name, "1 argument", n);
        if ((s = fe_val_node(p, &args[0], &x)) != RNNC_OK)
            return s;
        s = f->un(p->cell, x, &r->v);
        break;
    case F_BINARY:
        if (n != 2)
            return arity_error(p, r, f->name, "2 arguments", n);
        if ((s = fe_val_node(p, &args[0], &x)) != RNNC_OK ||
            (s = fe_val_node(p, &args[1], &y)) != RNNC_OK)
            return s;
        s = f->bin(p->cell, x, y, &r->v);
        break;
    case F_CONCAT:
        if (n < 2)
            return arity_error(p, r, f->name, "2 or more arguments", n);
        if ((s = fe_val_node(p, &args[0], &x)) != RNNC_OK)
            return s;
        for (int i = 1; i < n && s == RNNC_OK; i++) {
            if ((s = fe_val_node(p, &args[i], &y)) != RNNC_OK)
                return s;
            s = rnnc_concat(p->cell, x, y, &x);
        }
        r->v = x;
        break;
    case F_CHUNK:
        if (n != 2 && n != 3)
            return arity_error(p, r, f->name, "2 or 3 arguments (x, count[, index])", n);
        if ((s = fe_val_node(p, &args[0], &x)) != RNNC_OK ||
            (s = need_count(p, &args[1], "chunk's count", 1, &r->chunk_parts)) != RNNC_OK)
            return s;
        r->v = x;
        if (n == 2)
            return RNNC_OK; /* pending: `[k]` or a tuple assignment picks the pieces */
        if ((s = need_count(p, &args[2], "chunk's index", 0, &k)) != RNNC_OK)
            return s;
        s = rnnc_chunk(p->cell, x, r->chunk_parts, k, &r->v);
        r->chunk_parts = 0;
        break;
    case F_LAYERNORM:
        if (n < 2 || n > 4)
            return arity_error(p, r, f->name, "2 to 4 arguments (x, eps[, gamma[, beta]])", n);
        if ((s = fe_val_node(p, &args[0], &x)) != RNNC_OK ||
            (s = need_number(p, &args[1], "layernorm's eps", &d)) != RNNC_OK ||
            (n > 2 && !args[2].is_none && (s = fe_val_node(p, &args[2], &g)) != RNNC_OK) ||
            (n > 3 && !args[3].is_none && (s = fe_val_node(p, &args[3], &b)) != RNNC_OK))
            return s;
        s = rnnc_layernorm(p->cell, x, d, g, b, &r->v);
        break;
    case F_DROPOUT:
        if (n != 2)
            return arity_error(p, r, f->name, "2 arguments (x, p)", n);
        if ((s = fe_val_node(p, &args[0], &x)) != RNNC_OK ||
            (s = need_number(p, &args[1], "dropout's p", &d)) != RNNC_OK)
            return s;
        s = rnnc_dropout(p->cell, x, d, &r->v);
        break;
    }
    return s == RNNC_OK ? s : fe_builder_error(p, s, r);
}

static rnnc_status parse_args(fe_parser *p, fe_val **args, int *n)
{
    fe_lexer *lx = &p->lx;
    int cap = 0;
    rnnc_status s;
    *args = NULL;
    *n = 0;
    if (lx->tok.kind == ')')
        return RNNC_OK;
    for (;;) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 4;
            fe_val *more = realloc(*args, (size_t)cap * sizeof *more);
            if (!more)
                return err_fail(RNNC_ERR_OUT_OF_MEMORY, "parser: out of memory");
            *args = more;
        }
        if ((s = fe_parse_expr(p, &(*args)[*n])) != RNNC_OK)
            return s;
        (*n)++;
        if (lx->tok.kind != ',')
            return fe_expect(lx, ')', "',' or ')'");
        if ((s = fe_lex_next(lx)) != RNNC_OK)
            return s;
    }
}

static rnnc_status parse_call(fe_parser *p, fe_val *out)
{
    fe_lexer *lx = &p->lx;
    fe_tok name = lx->tok;
    char q[80];
    const fe_func *f = find_func(lx->text + name.off, name.len);
    if (!f)
        return fe_error_at(lx, name.line, name.col, RNNC_ERR_PARSE,
                           "unknown op '%s' (ops: linear, add, sub, mul, div, neg, sigmoid, tanh, "
                           "relu, exp, log, sqrt, rsqrt, chunk, concat, layernorm, sum, mean, "
                           "dropout)",
                           fe_quote(lx, name.off, name.len, q, sizeof q));
    rnnc_status s = fe_lex_next(lx); /* onto '(' */
    if (s == RNNC_OK)
        s = fe_lex_next(lx);
    fe_val *args = NULL;
    int n = 0;
    if (s == RNNC_OK)
        s = parse_args(p, &args, &n);
    if (s == RNNC_OK) {
        span_from_tok(out, &name);
        out->end = lx->tok.off + 1;
        s = fe_lex_next(lx); /* past ')' */
    }
    if (s == RNNC_OK)
        s = apply_call(p, f, args, n, out);
    free(args);
    return s;
}

static rnnc_status parse_name(fe_parser *p, fe_val *out)
{
    fe_lexer *lx = &p->lx;
    fe_tok t = lx->tok;
    char q[80];
    span_from_tok(out, &t);
    const fe_sym *sym = fe_sym_find(&p->syms, lx->text + t.off, (uint32_t)t.len);
    if (!sym && fe_tok_is(lx, &t, "none")) {
        out->is_none = true;
        return fe_lex_next(lx);
    }
    if (!sym)
        return fe_error_at(lx, t.line, t.col, RNNC_ERR_PARSE, "undefined name '%s'",
                           fe_quote(lx, t.off, t.len, q, sizeof q));
    if (sym->kind == FE_SYM_NUMBER) {
        out->is_num = true;
        out->num = sym->num;
    } else if (sym->v == RNNC_NONE) {
        return fe_error_at(lx, t.line, t.col, RNNC_ERR_PARSE, "'%s' is used in its own definition",
                           fe_quote(lx, t.off, t.len, q, sizeof q));
    } else {
        out->v = sym->v;
    }
    return fe_lex_next(lx);
}

static rnnc_status parse_paren(fe_parser *p, fe_val *out)
{
    fe_lexer *lx = &p->lx;
    fe_tok open = lx->tok;
    rnnc_status s = fe_lex_next(lx);
    if (s == RNNC_OK)
        s = fe_parse_expr(p, out);
    if (s == RNNC_OK)
        s = fe_expect(lx, ')', "')'");
    if (s != RNNC_OK)
        return s;
    span_from_tok(out, &open);
    out->end = lx->tok.off + 1;
    return fe_lex_next(lx);
}

static rnnc_status parse_primary(fe_parser *p, fe_val *out)
{
    fe_lexer *lx = &p->lx;
    fe_tok t = lx->tok;
    char q[96];
    memset(out, 0, sizeof *out);
    out->v = RNNC_NONE;
    span_from_tok(out, &t);
    if (t.kind == FE_T_NUMBER) {
        out->is_num = true;
        out->num = t.num;
        return fe_lex_next(lx);
    }
    if (t.kind == '(')
        return parse_paren(p, out);
    if (t.kind == FE_T_NAME)
        return lx->peek.kind == '(' ? parse_call(p, out) : parse_name(p, out);
    return fe_error_at(lx, t.line, t.col, RNNC_ERR_PARSE, "expected an expression, got %s",
                       fe_tok_text(lx, &t, q, sizeof q));
}

/* primary, then `[k]` to pick one piece of a chunk. */
static rnnc_status parse_postfix(fe_parser *p, fe_val *out)
{
    fe_lexer *lx = &p->lx;
    rnnc_status s = parse_primary(p, out);
    if (s != RNNC_OK || lx->tok.kind != '[')
        return s;
    if (out->chunk_parts == 0)
        return fe_error_at(lx, lx->tok.line, lx->tok.col, RNNC_ERR_PARSE,
                           "only chunk(...) can be indexed with [k]");
    fe_val idx;
    int k;
    if ((s = fe_lex_next(lx)) != RNNC_OK || (s = fe_parse_expr(p, &idx)) != RNNC_OK ||
        (s = need_count(p, &idx, "a chunk index", 0, &k)) != RNNC_OK ||
        (s = fe_expect(lx, ']', "']'")) != RNNC_OK)
        return s;
    if (k >= out->chunk_parts)
        return fe_error_at(lx, idx.line, idx.col, RNNC_ERR_PARSE,
                           "chunk index %d out of range: the chunk has %d pieces", k,
                           out->chunk_parts);
    s = rnnc_chunk(p->cell, out->v, out->chunk_parts, k, &out->v);
    if (s != RNNC_OK)
        return fe_builder_error(p, s, out);
    out->chunk_parts = 0;
    out->end = lx->tok.off + 1;
    return fe_lex_next(lx);
}

static rnnc_status parse_neg(fe_parser *p, fe_val *out)
{
    fe_tok minus = p->lx.tok;
    rnnc_status s = fe_lex_next(&p->lx);
    if (s == RNNC_OK)
        s = parse_unary(p, out);
    if (s != RNNC_OK)
        return s;
    fe_val operand = *out;
    span_from_tok(out, &minus);
    out->end = operand.end;
    if (operand.is_num) {
        out->num = -operand.num; /* -1 is the constant -1, not neg(1) */
        return RNNC_OK;
    }
    rnnc_value x;
    if ((s = fe_val_node(p, &operand, &x)) != RNNC_OK)
        return s;
    s = rnnc_neg(p->cell, x, &out->v);
    return s == RNNC_OK ? s : fe_builder_error(p, s, out);
}

static rnnc_status parse_unary(fe_parser *p, fe_val *out)
{
    if (++p->depth > FE_MAX_DEPTH) {
        fe_tok t = p->lx.tok;
        return fe_error_at(&p->lx, t.line, t.col, RNNC_ERR_PARSE,
                           "expression nested more than %d deep", FE_MAX_DEPTH);
    }
    rnnc_status s = p->lx.tok.kind == '-' ? parse_neg(p, out) : parse_postfix(p, out);
    p->depth--;
    return s;
}

static rnnc_status parse_term(fe_parser *p, fe_val *out)
{
    fe_lexer *lx = &p->lx;
    rnnc_status s = parse_unary(p, out);
    while (s == RNNC_OK && (lx->tok.kind == '*' || lx->tok.kind == '/')) {
        fe_binary_fn fn = lx->tok.kind == '*' ? rnnc_mul : rnnc_div;
        fe_val rhs;
        if ((s = fe_lex_next(lx)) == RNNC_OK && (s = parse_unary(p, &rhs)) == RNNC_OK)
            s = apply_binary(p, fn, out, &rhs, out);
    }
    return s;
}

rnnc_status fe_parse_expr(fe_parser *p, fe_val *out)
{
    fe_lexer *lx = &p->lx;
    rnnc_status s = parse_term(p, out);
    while (s == RNNC_OK && (lx->tok.kind == '+' || lx->tok.kind == '-')) {
        fe_binary_fn fn = lx->tok.kind == '+' ? rnnc_add : rnnc_sub;
        fe_val rhs;
        if ((s = fe_lex_next(lx)) == RNNC_OK && (s = parse_term(p, &rhs)) == RNNC_OK)
            s = apply_binary(p, fn, out, &rhs, out);
    }
    return s;
}
