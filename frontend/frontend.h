/*
 * frontend.h: the internal header of frontend/: the public C builder API
 * (build.c, wrappers that turn dim text into ir/'s typed builder calls), the
 * .cell text parser and the built-in cells.  All of them produce an ir_fn.
 * May use: ir/ and common/; nothing below calls back into frontend/.
 */
#ifndef RNNC_FRONTEND_H
#define RNNC_FRONTEND_H

#include "ir/ir.h"
#include "rnnc.h"

/* Built-in cell texts, generated from the .cell files in frontend/cells at build time. */
typedef struct fe_builtin {
    const char *name;
    const char *text;
    size_t len;
} fe_builtin;

/* ---------------------------------------------------------------- .cell parser (lex.c, parse*.c, builtin.c) */

/* NULL-terminated, in file-name order (generated builtin_cells.c). */
extern const fe_builtin rnnc_builtin_cells[];
extern const char *const rnnc_builtin_cell_names[];

/* Token kinds; punctuation tokens use their own character as kind. */
enum { FE_T_EOF = 0, FE_T_NEWLINE = 1, FE_T_NAME = 2, FE_T_NUMBER = 3 };

#define FE_MAX_NAME 256   /* longest identifier */
#define FE_MAX_DEPTH 200  /* deepest expression nesting (the parser recurses) */

typedef struct fe_tok {
    int kind;
    size_t off, len; /* bytes of the text */
    int32_t line, col;
    double num; /* FE_T_NUMBER */
} fe_tok;

/* A one-token-lookahead lexer over text that need not be NUL-terminated.
 * Newlines end statements except inside () and []. */
typedef struct fe_lexer {
    const char *text;
    size_t len;
    const char *file;
    size_t pos, line_start;
    int32_t line;
    int depth;
    fe_tok tok, peek;
} fe_lexer;

/* Checks the text is UTF-8 without NUL bytes, then reads two tokens. */
rnnc_status fe_lex_init(fe_lexer *lx, const char *text, size_t len, const char *file);
rnnc_status fe_lex_next(fe_lexer *lx);
bool fe_tok_is(const fe_lexer *lx, const fe_tok *t, const char *word);
/* The token for a message: its quoted text, or "end of line" / "end of file". */
const char *fe_tok_text(const fe_lexer *lx, const fe_tok *t, char *buf, size_t n);
/* Fails unless the current token has that kind; `what` names it for the message. */
rnnc_status fe_expect(fe_lexer *lx, int kind, const char *what);
/* Records "file:line:col: <message>" with err_fail and returns s. */
rnnc_status fe_error_at(const fe_lexer *lx, int32_t line, int32_t col, rnnc_status s,
                        const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* Printable, length-capped copy of text[off, off+len) for error messages. */
const char *fe_quote(const fe_lexer *lx, size_t off, size_t len, char *buf, size_t n);

/* Names of one cell (parse_sym.c): an xxHash open-addressing table. */
typedef enum fe_sym_kind { FE_SYM_VALUE = 0, FE_SYM_NUMBER = 1, FE_SYM_STATE = 2 } fe_sym_kind;

typedef struct fe_sym {
    const char *name; /* into the text; NULL marks an empty slot */
    uint32_t len;
    uint8_t kind;     /* fe_sym_kind */
    bool next_set;    /* FE_SYM_STATE: `next` seen */
    rnnc_value v;
    double num;       /* FE_SYM_NUMBER */
    int32_t line, col;
} fe_sym;

typedef struct fe_symtab {
    fe_sym *slots;
    uint32_t cap, n;
} fe_symtab;

void fe_symtab_free(fe_symtab *t);
fe_sym *fe_sym_find(const fe_symtab *t, const char *name, uint32_t len);
/* Inserts a fresh entry (the caller checked it is absent); NULL on OOM. */
fe_sym *fe_sym_add(fe_symtab *t, const char *name, uint32_t len);

/* `attrs` overrides ("eps=0,foo=2"), parsed once per cell. */
typedef struct fe_attr_override {
    char *name;
    double value;
    bool used;
} fe_attr_override;

rnnc_status fe_overrides_parse(const char *attrs, fe_attr_override **out, int *n);
void fe_overrides_free(fe_attr_override *o, int n);

/* The state of parsing one cell. */
typedef struct fe_parser {
    fe_lexer lx;
    rnnc_cell *cell;
    fe_symtab syms;
    fe_attr_override *over;
    int n_over;
    int depth;       /* expression nesting */
    bool has_output;
} fe_parser;

/* An expression's value: a node, a number not yet made a constant node, or
 * a chunk call waiting for its `[k]` or a tuple assignment. */
typedef struct fe_val {
    rnnc_value v;
    bool is_num;
    double num;
    int chunk_parts; /* > 0: pending chunk of v */
    bool is_none;    /* the word `none` (an absent layernorm gamma) */
    size_t off, end; /* source span, for messages */
    int32_t line, col;
} fe_val;

rnnc_status fe_parse_expr(fe_parser *p, fe_val *out);
/* The node of a value, making a constant node of a number. */
rnnc_status fe_val_node(fe_parser *p, const fe_val *val, rnnc_value *out);
/* Prefixes the builder's detail (rnnc_last_error) with the span's location. */
rnnc_status fe_builder_error(fe_parser *p, rnnc_status s, const fe_val *span);
/* Whether the .cell text has a function of that name (every non-leaf IR op does). */
bool fe_has_function(const char *name);

#endif /* RNNC_FRONTEND_H */
