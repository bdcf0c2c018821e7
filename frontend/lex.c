/*
 * lex.c: the tokens of the .cell text format (docs/cell-format.md) and the
 * located error messages every parser error goes through.
 *
 * The lexer is one pass, linear in the text, with one token of lookahead.
 * The whole text is checked for UTF-8 first, so everything after can treat
 * non-ASCII bytes as "only allowed inside comments".
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

#define MAX_NUMBER 64 /* longest numeric literal */

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is not one. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return c ? 1 : 0;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    unsigned cp = c & (0x3F >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

static void locate(const char *text, size_t off, int32_t *line, int32_t *col)
{
    int32_t l = 1;
    size_t start = 0;
    for (size_t i = 0; i < off; i++)
        if (text[i] == '\n')
            l++, start = i + 1;
    *line = l;
    *col = (int32_t)(off - start + 1);
}

static rnnc_status check_encoding(const fe_lexer *lx)
{
    const unsigned char *s = (const unsigned char *)lx->text;
    size_t i = 0;
    while (i < lx->len) {
        size_t k = utf8_seq(s + i, lx->len - i);
        if (k == 0) {
            int32_t line, col;
            locate(lx->text, i, &line, &col);
            if (s[i] == 0)
                return fe_error_at(lx, line, col, RNNC_ERR_PARSE, "NUL byte at byte offset %zu",
                                   i);
            return fe_error_at(lx, line, col, RNNC_ERR_PARSE,
                               "invalid UTF-8 byte 0x%02x at byte offset %zu", s[i], i);
        }
        i += k;
    }
    return RNNC_OK;
}

rnnc_status fe_error_at(const fe_lexer *lx, int32_t line, int32_t col, rnnc_status s,
                        const char *fmt, ...)
{
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return err_fail(s, "%s:%d:%d: %s", lx->file, (int)line, (int)col, msg);
}

const char *fe_quote(const fe_lexer *lx, size_t off, size_t len, char *buf, size_t n)
{
    const size_t cap = n > 64 ? 60 : n - 4;
    bool cut = len > cap;
    size_t k = cut ? cap : len;
    /* Never end inside a UTF-8 sequence. */
    while (cut && k > 0 && ((unsigned char)lx->text[off + k] & 0xC0) == 0x80)
        k--;
    for (size_t i = 0; i < k; i++) {
        unsigned char c = (unsigned char)lx->text[off + i];
        buf[i] = c < 0x20 ? ' ' : (char)c;
    }
    strcpy(buf + k, cut ? "..." : "");
    return buf;
}

bool fe_tok_is(const fe_lexer *lx, const fe_tok *t, const char *word)
{
    size_t n = strlen(word);
    return t->kind == FE_T_NAME && t->len == n && memcmp(lx->text + t->off, word, n) == 0;
}

static bool is_alpha(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int at(const fe_lexer *lx, size_t i)
{
    return i < lx->len ? (unsigned char)lx->text[i] : -1;
}

static rnnc_status scan_number(fe_lexer *lx, fe_tok *t)
{
    size_t i = lx->pos;
    while (is_digit(at(lx, i)))
        i++;
    if (at(lx, i) == '.')
        for (i++; is_digit(at(lx, i));)
            i++;
    if ((at(lx, i) == 'e' || at(lx, i) == 'E')) {
        size_t j = i + 1;
        if (at(lx, j) == '+' || at(lx, j) == '-')
            j++;
        if (is_digit(at(lx, j)))
            for (i = j; is_digit(at(lx, i));)
                i++;
    }
    t->kind = FE_T_NUMBER;
    t->len = i - lx->pos;
    char buf[MAX_NUMBER + 1], q[80];
    if (t->len > MAX_NUMBER)
        return fe_error_at(lx, t->line, t->col, RNNC_ERR_PARSE, "number too long: '%s'",
                           fe_quote(lx, t->off, t->len, q, sizeof q));
    memcpy(buf, lx->text + t->off, t->len);
    buf[t->len] = 0;
    t->num = strtod(buf, NULL);
    if (!isfinite(t->num))
        return fe_error_at(lx, t->line, t->col, RNNC_ERR_PARSE, "number out of range: '%s'",
                           buf);
    lx->pos = i;
    return RNNC_OK;
}

static rnnc_status scan_name(fe_lexer *lx, fe_tok *t)
{
    size_t i = lx->pos;
    while (is_alpha(at(lx, i)) || is_digit(at(lx, i)))
        i++;
    t->kind = FE_T_NAME;
    t->len = i - lx->pos;
    lx->pos = i;
    if (t->len > FE_MAX_NAME) {
        char q[80];
        return fe_error_at(lx, t->line, t->col, RNNC_ERR_PARSE,
                           "name longer than %d characters: '%s'", FE_MAX_NAME,
                           fe_quote(lx, t->off, t->len, q, sizeof q));
    }
    return RNNC_OK;
}

static rnnc_status scan_punct(fe_lexer *lx, fe_tok *t, int c)
{
    if (!strchr("()[]{},=+-*/;", c)) {
        char q[80];
        size_t n = utf8_seq((const unsigned char *)lx->text + lx->pos, lx->len - lx->pos);
        return fe_error_at(lx, t->line, t->col, RNNC_ERR_PARSE, "unexpected character '%s'",
                           fe_quote(lx, t->off, n ? n : 1, q, sizeof q));
    }
    if (c == '(' || c == '[')
        lx->depth++;
    else if ((c == ')' || c == ']') && lx->depth > 0)
        lx->depth--;
    t->kind = c;
    t->len = 1;
    lx->pos++;
    return RNNC_OK;
}

/* Skips blanks, comments and (inside brackets) newlines. */
static void skip_space(fe_lexer *lx)
{
    for (;;) {
        int c = at(lx, lx->pos);
        if (c == ' ' || c == '\t' || c == '\r') {
            lx->pos++;
        } else if (c == '#') {
            const char *nl = memchr(lx->text + lx->pos, '\n', lx->len - lx->pos);
            lx->pos = nl ? (size_t)(nl - lx->text) : lx->len;
        } else if (c == '\n' && lx->depth > 0) {
            lx->pos++;
            lx->line++;
            lx->line_start = lx->pos;
        } else {
            return;
        }
    }
}

static rnnc_status scan(fe_lexer *lx, fe_tok *t)
{
    skip_space(lx);
    memset(t, 0, sizeof *t);
    t->off = lx->pos;
    t->line = lx->line;
    t->col = (int32_t)(lx->pos - lx->line_start + 1);
    int c = at(lx, lx->pos);
    if (c < 0) {
        t->kind = FE_T_EOF;
        return RNNC_OK;
    }
    if (c == '\n') {
        t->kind = FE_T_NEWLINE;
        t->len = 1;
        lx->pos++;
        lx->line++;
        lx->line_start = lx->pos;
        return RNNC_OK;
    }
    if (is_digit(c) || (c == '.' && is_digit(at(lx, lx->pos + 1))))
        return scan_number(lx, t);
    if (is_alpha(c))
        return scan_name(lx, t);
    return scan_punct(lx, t, c);
}

rnnc_status fe_lex_init(fe_lexer *lx, const char *text, size_t len, const char *file)
{
    memset(lx, 0, sizeof *lx);
    lx->text = text;
    lx->len = len;
    lx->file = file;
    lx->line = 1;
    rnnc_status s = check_encoding(lx);
    if (s != RNNC_OK)
        return s;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        lx->pos = lx->line_start = 3; /* a byte-order mark */
    s = scan(lx, &lx->tok);
    if (s == RNNC_OK)
        s = scan(lx, &lx->peek);
    return s;
}

rnnc_status fe_lex_next(fe_lexer *lx)
{
    lx->tok = lx->peek;
    if (lx->tok.kind == FE_T_EOF)
        return RNNC_OK;
    return scan(lx, &lx->peek);
}

const char *fe_tok_text(const fe_lexer *lx, const fe_tok *t, char *buf, size_t n)
{
    if (t->kind == FE_T_EOF)
        return "end of file";
    if (t->kind == FE_T_NEWLINE)
        return "end of line";
    char q[80];
    snprintf(buf, n, "'%s'", fe_quote(lx, t->off, t->len, q, sizeof q));
    return buf;
}

rnnc_status fe_expect(fe_lexer *lx, int kind, const char *what)
{
    if (lx->tok.kind == kind)
        return RNNC_OK;
    char q[96];
    return fe_error_at(lx, lx->tok.line, lx->tok.col, RNNC_ERR_PARSE, "expected %s, got %s", what,
                       fe_tok_text(lx, &lx->tok, q, sizeof q));
}
