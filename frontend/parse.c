/*
 * parse.c: the .cell text format (docs/cell-format.md): files of cells,
 * declarations and statements, and rnnc_cell_parse.  Expressions are in
 * parse_expr.c; every value goes through the public builder, whose shape
 * errors come back prefixed with the file:line:col of the text that made them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

/* Copies a token's text into a NUL-terminated buffer of FE_MAX_NAME + 1. */
static const char *tok_str(const fe_lexer *lx, const fe_tok *t, char *buf)
{
    size_t n = t->len > FE_MAX_NAME ? FE_MAX_NAME : t->len;
    memcpy(buf, lx->text + t->off, n);
    buf[n] = 0;
    return buf;
}

/* Enters a new name, failing if it is already defined. */
static rnnc_status define(fe_parser *p, const fe_tok *t, fe_sym **out)
{
    fe_lexer *lx = &p->lx;
    char q[80];
    const char *name = lx->text + t->off;
    fe_sym *old = fe_sym_find(&p->syms, name, (uint32_t)t->len);
    if (old)
        return fe_error_at(lx, t->line, t->col, RNNC_ERR_PARSE,
                           "'%s' is defined twice (first at line %d, column %d); names are "
                           "single-assignment",
                           fe_quote(lx, t->off, t->len, q, sizeof q), (int)old->line,
                           (int)old->col);
    *out = fe_sym_add(&p->syms, name, (uint32_t)t->len);
    if (!*out)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "parser: out of memory");
    (*out)->line = t->line;
    (*out)->col = t->col;
    return RNNC_OK;
}

/* The text of one dimension inside [...], up to ',' or ']'; a shape stays
 * on the line of its '['. */
static rnnc_status parse_dim(fe_parser *p, const fe_tok *open, char *buf, size_t n)
{
    fe_lexer *lx = &p->lx;
    fe_tok first = lx->tok;
    size_t end = first.off;
    char q[96];
    rnnc_status s;
    while (lx->tok.kind != ',' && lx->tok.kind != ']') {
        if (lx->tok.kind == FE_T_EOF || lx->tok.line != open->line)
            return fe_error_at(lx, open->line, open->col, RNNC_ERR_PARSE,
                               "unterminated '[': no ']' on its line before %s",
                               fe_tok_text(lx, &lx->tok, q, sizeof q));
        end = lx->tok.off + lx->tok.len;
        if ((s = fe_lex_next(lx)) != RNNC_OK)
            return s;
    }
    if (end == first.off)
        return fe_error_at(lx, first.line, first.col, RNNC_ERR_PARSE, "empty dimension");
    if (end - first.off >= n)
        return fe_error_at(lx, first.line, first.col, RNNC_ERR_PARSE, "dimension too long: '%s'",
                           fe_quote(lx, first.off, end - first.off, q, sizeof q));
    memcpy(buf, lx->text + first.off, end - first.off);
    buf[end - first.off] = 0;
    return RNNC_OK;
}

/* The builder call of a declaration (`rows` NULL for a vector or a row). */
static rnnc_status emit_decl(fe_parser *p, const fe_tok *kw, const char *name, const char *rows,
                             const char *cols, bool optional, fe_sym *sym)
{
    const fe_lexer *lx = &p->lx;
    sym->kind = fe_tok_is(lx, kw, "state") ? FE_SYM_STATE : FE_SYM_VALUE;
    if (fe_tok_is(lx, kw, "input"))
        return rnnc_cell_input(p->cell, name, cols, &sym->v);
    if (fe_tok_is(lx, kw, "state"))
        return rnnc_cell_state(p->cell, name, cols, &sym->v);
    if (optional)
        return rnnc_cell_param_optional(p->cell, name, rows, cols, &sym->v);
    return rnnc_cell_param(p->cell, name, rows, cols, &sym->v);
}

/* input NAME[dim] | state NAME[dim] | param NAME[dim(, dim)] [optional] */
static rnnc_status parse_decl(fe_parser *p)
{
    fe_lexer *lx = &p->lx;
    fe_tok kw = lx->tok, name;
    char nb[FE_MAX_NAME + 1], d0[128], d1[128];
    int ndims = 0;
    bool optional = false, is_param = fe_tok_is(lx, &kw, "param");
    fe_sym *sym;
    rnnc_status s;
    if ((s = fe_lex_next(lx)) != RNNC_OK || (s = fe_expect(lx, FE_T_NAME, "a name")) != RNNC_OK)
        return s;
    name = lx->tok;
    if ((s = define(p, &name, &sym)) != RNNC_OK || (s = fe_lex_next(lx)) != RNNC_OK ||
        (s = fe_expect(lx, '[', "'[' and the shape")) != RNNC_OK)
        return s;
    fe_tok open = lx->tok;
    do {
        if ((s = fe_lex_next(lx)) != RNNC_OK ||
            (s = parse_dim(p, &open, ndims ? d1 : d0, 128)) != RNNC_OK)
            return s;
        ndims++;
    } while (lx->tok.kind == ',' && ndims < 2);
    if ((s = fe_expect(lx, ']', is_param ? "']' (a param has 1 or 2 dims)" : "']' (one dim)")) !=
        RNNC_OK)
        return s;
    size_t end = lx->tok.off + 1;
    if ((s = fe_lex_next(lx)) != RNNC_OK)
        return s;
    if (!is_param && ndims != 1)
        return fe_error_at(lx, name.line, name.col, RNNC_ERR_PARSE, "%s '%s' takes one dim",
                           fe_tok_is(lx, &kw, "input") ? "input" : "state",
                           tok_str(lx, &name, nb));
    if (is_param && fe_tok_is(lx, &lx->tok, "optional")) {
        optional = true;
        end = lx->tok.off + lx->tok.len;
        if ((s = fe_lex_next(lx)) != RNNC_OK)
            return s;
    }
    s = emit_decl(p, &kw, tok_str(lx, &name, nb), ndims == 2 ? d0 : NULL, ndims == 2 ? d1 : d0,
                  optional, sym);
    if (s != RNNC_OK) {
        fe_val span = {.off = kw.off, .end = end, .line = kw.line, .col = kw.col};
        return fe_builder_error(p, s, &span);
    }
    return RNNC_OK;
}

/* attr NAME = [-]NUMBER, overridable through `attrs`. */
static rnnc_status parse_attr(fe_parser *p)
{
    fe_lexer *lx = &p->lx;
    fe_sym *sym;
    fe_tok name;
    double sign = 1;
    rnnc_status s;
    if ((s = fe_lex_next(lx)) != RNNC_OK || (s = fe_expect(lx, FE_T_NAME, "a name")) != RNNC_OK)
        return s;
    name = lx->tok;
    if ((s = define(p, &name, &sym)) != RNNC_OK || (s = fe_lex_next(lx)) != RNNC_OK ||
        (s = fe_expect(lx, '=', "'='")) != RNNC_OK || (s = fe_lex_next(lx)) != RNNC_OK)
        return s;
    if (lx->tok.kind == '-') {
        sign = -1;
        if ((s = fe_lex_next(lx)) != RNNC_OK)
            return s;
    }
    if ((s = fe_expect(lx, FE_T_NUMBER, "a number (an attr's default)")) != RNNC_OK)
        return s;
    sym->kind = FE_SYM_NUMBER;
    sym->num = sign * lx->tok.num;
    for (int i = 0; i < p->n_over; i++)
        if (strlen(p->over[i].name) == name.len &&
            memcmp(p->over[i].name, lx->text + name.off, name.len) == 0) {
            sym->num = p->over[i].value;
            p->over[i].used = true;
        }
    return fe_lex_next(lx);
}

/* next STATE = expr */
static rnnc_status parse_next(fe_parser *p)
{
    fe_lexer *lx = &p->lx;
    fe_tok kw = lx->tok, name;
    char q[80];
    fe_val val;
    rnnc_value v;
    rnnc_status s;
    if ((s = fe_lex_next(lx)) != RNNC_OK || (s = fe_expect(lx, FE_T_NAME, "a state name")) != RNNC_OK)
        return s;
    name = lx->tok;
    fe_sym *sym = fe_sym_find(&p->syms, lx->text + name.off, (uint32_t)name.len);
    fe_quote(lx, name.off, name.len, q, sizeof q);
    if (!sym)
        return fe_error_at(lx, name.line, name.col, RNNC_ERR_PARSE, "undefined name '%s'", q);
    if (sym->kind != FE_SYM_STATE)
        return fe_error_at(lx, name.line, name.col, RNNC_ERR_PARSE,
                           "'%s' is not a state (declare it with 'state %s[...]')", q, q);
    if (sym->next_set)
        return fe_error_at(lx, name.line, name.col, RNNC_ERR_PARSE,
                           "'next %s' is given twice", q);
    if ((s = fe_lex_next(lx)) != RNNC_OK || (s = fe_expect(lx, '=', "'='")) != RNNC_OK ||
        (s = fe_lex_next(lx)) != RNNC_OK || (s = fe_parse_expr(p, &val)) != RNNC_OK ||
        (s = fe_val_node(p, &val, &v)) != RNNC_OK)
        return s;
    sym->next_set = true;
    if ((s = rnnc_cell_set_next(p->cell, sym->v, v)) != RNNC_OK) {
        fe_val span = {.off = kw.off, .end = val.end, .line = kw.line, .col = kw.col};
        return fe_builder_error(p, s, &span);
    }
    return RNNC_OK;
}

/* output expr */
static rnnc_status parse_output(fe_parser *p)
{
    fe_lexer *lx = &p->lx;
    fe_tok kw = lx->tok;
    fe_val val;
    rnnc_value v;
    rnnc_status s;
    if (p->has_output)
        return fe_error_at(lx, kw.line, kw.col, RNNC_ERR_PARSE, "'output' is given twice");
    if ((s = fe_lex_next(lx)) != RNNC_OK || (s = fe_parse_expr(p, &val)) != RNNC_OK ||
        (s = fe_val_node(p, &val, &v)) != RNNC_OK)
        return s;
    p->has_output = true;
    if ((s = rnnc_cell_set_output(p->cell, v)) != RNNC_OK) {
        fe_val span = {.off = kw.off, .end = val.end, .line = kw.line, .col = kw.col};
        return fe_builder_error(p, s, &span);
    }
    return RNNC_OK;
}

/* The entry of a name entered by parse_assign (NULL for `_`).  Looked up
 * again because entering names may have moved the table. */
static fe_sym *sym_of(fe_parser *p, const fe_tok *t)
{
    if (fe_tok_is(&p->lx, t, "_"))
        return NULL;
    return fe_sym_find(&p->syms, p->lx.text + t->off, (uint32_t)t->len);
}

/* The value keeps the name the text gave it, for dumps (ir/names.c). */
static rnnc_status name_value(fe_parser *p, const fe_tok *t, rnnc_value v)
{
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)t->len, p->lx.text + t->off);
    return ir_name_value(p->cell, v, name);
}

/* Binds the names of `a, b, _, d = chunk(x, 4)` to the pieces. */
static rnnc_status bind_tuple(fe_parser *p, const fe_tok *names, int n, const fe_val *val)
{
    char q[80];
    if (val->chunk_parts == 0)
        return fe_error_at(&p->lx, val->line, val->col, RNNC_ERR_PARSE,
                           "%d names but '%s' gives one value (only chunk(x, n) gives several)",
                           n, fe_quote(&p->lx, val->off, val->end - val->off, q, sizeof q));
    if (val->chunk_parts != n)
        return fe_error_at(&p->lx, val->line, val->col, RNNC_ERR_PARSE,
                           "%d names but '%s' gives %d values", n,
                           fe_quote(&p->lx, val->off, val->end - val->off, q, sizeof q),
                           val->chunk_parts);
    for (int k = 0; k < n; k++) {
        fe_sym *sym = sym_of(p, &names[k]);
        if (!sym)
            continue; /* `_` */
        rnnc_status s = rnnc_chunk(p->cell, val->v, n, k, &sym->v);
        if (s != RNNC_OK)
            return fe_builder_error(p, s, val);
        if ((s = name_value(p, &names[k], sym->v)) != RNNC_OK)
            return s;
    }
    return RNNC_OK;
}

static rnnc_status bind(fe_parser *p, const fe_tok *names, int n, const fe_val *val)
{
    if (n > 1)
        return bind_tuple(p, names, n, val);
    fe_sym *sym = sym_of(p, &names[0]);
    if (!sym)
        return fe_error_at(&p->lx, val->line, val->col, RNNC_ERR_PARSE,
                           "'_' only discards chunk pieces");
    if (val->is_num) {
        /* Still a number where one is needed (a chunk count), but also a
         * constant node here, in text order, as the printer writes it. */
        sym->kind = FE_SYM_NUMBER;
        sym->num = val->num;
    }
    rnnc_status s = fe_val_node(p, val, &sym->v);
    return s == RNNC_OK ? name_value(p, &names[0], sym->v) : s;
}

/* NAME {, NAME} = expr.  The names are entered first (unset), so using one
 * in its own definition is caught. */
static rnnc_status parse_assign(fe_parser *p)
{
    fe_lexer *lx = &p->lx;
    fe_tok *names = NULL;
    int n = 0, cap = 0;
    fe_sym *sym;
    fe_val val;
    rnnc_status s;
    for (;;) {
        if ((s = fe_expect(lx, FE_T_NAME, "a name")) != RNNC_OK)
            goto free_names;
        if (n == cap) {
            cap = cap ? 2 * cap : 4;
            fe_tok *more = realloc(names, (size_t)cap * sizeof *more);
            if (!more) {
                s = err_fail(RNNC_ERR_OUT_OF_MEMORY, "parser: out of memory");
                goto free_names;
            }
            names = more;
        }
        names[n] = lx->tok;
        if (!fe_tok_is(lx, &lx->tok, "_") && (s = define(p, &lx->tok, &sym)) != RNNC_OK)
            goto free_names;
        n++;
        if ((s = fe_lex_next(lx)) != RNNC_OK)
            goto free_names;
        if (lx->tok.kind != ',')
            break;
        if ((s = fe_lex_next(lx)) != RNNC_OK)
            goto free_names;
    }
    if ((s = fe_expect(lx, '=', n > 1 ? "'='" : "'=' (a statement is NAME = expression)")) !=
            RNNC_OK ||
        (s = fe_lex_next(lx)) != RNNC_OK || (s = fe_parse_expr(p, &val)) != RNNC_OK)
        goto free_names;
    s = bind(p, names, n, &val);
free_names:
    free(names);
    return s;
}

static rnnc_status parse_stmt(fe_parser *p, const char *cell_name)
{
    fe_lexer *lx = &p->lx;
    fe_tok t = lx->tok;
    char q[96];
    if (t.kind != FE_T_NAME)
        return fe_error_at(lx, t.line, t.col, RNNC_ERR_PARSE, "expected a statement, got %s",
                           fe_tok_text(lx, &t, q, sizeof q));
    /* Keywords are keywords unless assigned to. */
    bool kw = lx->peek.kind != '=' && lx->peek.kind != ',';
    if (kw && (fe_tok_is(lx, &t, "input") || fe_tok_is(lx, &t, "state") ||
               fe_tok_is(lx, &t, "param")))
        return parse_decl(p);
    if (kw && fe_tok_is(lx, &t, "attr"))
        return parse_attr(p);
    if (kw && fe_tok_is(lx, &t, "next"))
        return parse_next(p);
    if (kw && fe_tok_is(lx, &t, "output"))
        return parse_output(p);
    if (kw && fe_tok_is(lx, &t, "cell"))
        return fe_error_at(lx, t.line, t.col, RNNC_ERR_PARSE,
                           "'cell' inside cell '%s': is a '}' missing?", cell_name);
    return parse_assign(p);
}

/* After the body: every state updated, an output, a cell that verifies. */
static rnnc_status finish_cell(fe_parser *p, const fe_tok *close, const char *cell_name)
{
    fe_lexer *lx = &p->lx;
    int n = rnnc_cell_state_count(p->cell);
    for (int i = 0; i < n; i++) {
        const char *name = rnnc_cell_state_name(p->cell, i);
        const fe_sym *sym = name ? fe_sym_find(&p->syms, name, (uint32_t)strlen(name)) : NULL;
        if (sym && !sym->next_set)
            return fe_error_at(lx, sym->line, sym->col, RNNC_ERR_PARSE,
                               "state '%s' is never updated (add 'next %s = ...')", name, name);
    }
    if (!p->has_output)
        return fe_error_at(lx, close->line, close->col, RNNC_ERR_PARSE,
                           "cell '%s' has no 'output' statement", cell_name);
    rnnc_status s = rnnc_cell_verify(p->cell);
    if (s != RNNC_OK)
        return fe_error_at(lx, close->line, close->col, s, "cell '%s': %s", cell_name,
                           rnnc_last_error());
    return RNNC_OK;
}

static rnnc_status skip_newlines(fe_lexer *lx)
{
    rnnc_status s = RNNC_OK;
    while (s == RNNC_OK && (lx->tok.kind == FE_T_NEWLINE || lx->tok.kind == ';'))
        s = fe_lex_next(lx);
    return s;
}

/* The statements between '{' and '}'; the current token is '{'. */
static rnnc_status parse_body(fe_parser *p, const fe_tok *head, const char *cell_name)
{
    fe_lexer *lx = &p->lx;
    char q[96];
    rnnc_status s;
    if ((s = fe_lex_next(lx)) != RNNC_OK)
        return s;
    for (;;) {
        if ((s = skip_newlines(lx)) != RNNC_OK)
            return s;
        if (lx->tok.kind == FE_T_EOF)
            return fe_error_at(lx, head->line, head->col, RNNC_ERR_PARSE,
                               "unterminated block: cell '%s' has no closing '}' before the end "
                               "of the file",
                               cell_name);
        if (lx->tok.kind == '}')
            break;
        if ((s = parse_stmt(p, cell_name)) != RNNC_OK)
            return s;
        int k = lx->tok.kind;
        if (k != FE_T_NEWLINE && k != ';' && k != '}' && k != FE_T_EOF)
            return fe_error_at(lx, lx->tok.line, lx->tok.col, RNNC_ERR_PARSE,
                               "unexpected %s after the statement",
                               fe_tok_text(lx, &lx->tok, q, sizeof q));
    }
    fe_tok close = lx->tok;
    if ((s = fe_lex_next(lx)) != RNNC_OK)
        return s;
    if (lx->tok.kind != FE_T_NEWLINE && lx->tok.kind != FE_T_EOF)
        return fe_error_at(lx, lx->tok.line, lx->tok.col, RNNC_ERR_PARSE,
                           "unexpected %s after the cell's '}'",
                           fe_tok_text(lx, &lx->tok, q, sizeof q));
    return finish_cell(p, &close, cell_name);
}

/* `cell NAME {` ... `}`; `want` says whether the overrides apply. */
static rnnc_status parse_cell(fe_parser *p, const char *want, rnnc_cell **out, bool *chosen,
                              fe_tok *name_tok)
{
    fe_lexer *lx = &p->lx;
    fe_tok head = lx->tok;
    char name[FE_MAX_NAME + 1], q[96];
    rnnc_status s;
    if (!fe_tok_is(lx, &head, "cell"))
        return fe_error_at(lx, head.line, head.col, RNNC_ERR_PARSE,
                           "expected 'cell NAME {', got %s", fe_tok_text(lx, &head, q, sizeof q));
    if ((s = fe_lex_next(lx)) != RNNC_OK || (s = fe_expect(lx, FE_T_NAME, "the cell's name")) != RNNC_OK)
        return s;
    *name_tok = lx->tok;
    tok_str(lx, &lx->tok, name);
    if ((s = fe_lex_next(lx)) != RNNC_OK || (s = skip_newlines(lx)) != RNNC_OK ||
        (s = fe_expect(lx, '{', "'{'")) != RNNC_OK)
        return s;
    *chosen = want ? strcmp(want, name) == 0 : true;
    int n_over = p->n_over;
    if (!*chosen)
        p->n_over = 0; /* overrides are for the chosen cell only */
    s = rnnc_cell_create(&p->cell, name);
    if (s == RNNC_OK)
        s = parse_body(p, &head, name);
    p->n_over = n_over;
    fe_symtab_free(&p->syms);
    p->has_output = false;
    p->depth = 0;
    if (s != RNNC_OK) {
        rnnc_cell_destroy(p->cell);
        p->cell = NULL;
        return s;
    }
    *out = p->cell;
    p->cell = NULL;
    return RNNC_OK;
}

static rnnc_status note_cell_name(const fe_lexer *lx, fe_symtab *names, const fe_tok *t)
{
    char q[80];
    const fe_sym *old = fe_sym_find(names, lx->text + t->off, (uint32_t)t->len);
    if (old)
        return fe_error_at(lx, t->line, t->col, RNNC_ERR_PARSE,
                           "cell '%s' is defined twice (first at line %d)",
                           fe_quote(lx, t->off, t->len, q, sizeof q), (int)old->line);
    fe_sym *sym = fe_sym_add(names, lx->text + t->off, (uint32_t)t->len);
    if (!sym)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "parser: out of memory");
    sym->line = t->line;
    return RNNC_OK;
}

/* Every cell of the file is parsed (so any error in the file is reported);
 * the chosen one is kept. */
static rnnc_status parse_file(fe_parser *p, const char *want, rnnc_cell **out)
{
    fe_lexer *lx = &p->lx;
    rnnc_cell *found = NULL;
    fe_symtab names = {0};
    int n_cells = 0;
    rnnc_status s = skip_newlines(lx);
    while (s == RNNC_OK && lx->tok.kind != FE_T_EOF) {
        rnnc_cell *c = NULL;
        bool chosen = false;
        fe_tok name = {0};
        if ((s = parse_cell(p, found ? "" : want, &c, &chosen, &name)) != RNNC_OK)
            break;
        n_cells++;
        if (chosen && !found)
            found = c;
        else
            rnnc_cell_destroy(c);
        s = note_cell_name(lx, &names, &name);
        if (s == RNNC_OK)
            s = skip_newlines(lx);
    }
    fe_symtab_free(&names);
    if (s == RNNC_OK && n_cells == 0)
        s = fe_error_at(lx, lx->tok.line, lx->tok.col, RNNC_ERR_PARSE,
                        "no cell in the text (expected 'cell NAME { ... }')");
    if (s == RNNC_OK && !found)
        s = err_fail(RNNC_ERR_NOT_FOUND, "%s: no cell named '%s'", lx->file, want);
    for (int i = 0; s == RNNC_OK && i < p->n_over; i++)
        if (!p->over[i].used)
            s = err_fail(RNNC_ERR_INVALID_ARG, "attrs: cell '%s' has no attribute '%s'",
                         rnnc_cell_name(found), p->over[i].name);
    if (s != RNNC_OK) {
        rnnc_cell_destroy(found);
        return s;
    }
    *out = found;
    return RNNC_OK;
}

rnnc_status rnnc_cell_parse(rnnc_cell **out, const char *text, size_t len, const char *file_label,
                            const char *cell_name, const char *attrs)
{
    if (!out)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_parse: out is NULL");
    *out = NULL;
    if (!text && len)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_parse: text is NULL");
    fe_parser p;
    memset(&p, 0, sizeof p);
    rnnc_status s = fe_overrides_parse(attrs, &p.over, &p.n_over);
    if (s != RNNC_OK)
        return s;
    s = fe_lex_init(&p.lx, text ? text : "", len, file_label ? file_label : "<text>");
    if (s == RNNC_OK)
        s = parse_file(&p, cell_name, out);
    fe_overrides_free(p.over, p.n_over);
    return s;
}
