/*
 * cuda_text.c: the growable text the CUDA generator writes into, float
 * literals that read back to the same fp32 value, and the names comments
 * give nodes.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cuda_gen.h"

void cu_printf(cu_text *t, const char *fmt, ...)
{
    if (t->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = t->cap - t->n;
        int w = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? room : 0, fmt, ap);
        va_end(ap);
        if (w < 0) {
            t->oom = true;
            return;
        }
        if (t->p && (size_t)w < room) {
            t->n += (size_t)w;
            return;
        }
        size_t cap = t->cap ? t->cap * 2 : 16384;
        while (cap < t->n + (size_t)w + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->oom = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
}

const char *cu_float_lit(double v, char *buf, size_t n)
{
    if (isnan(v))
        snprintf(buf, n, "__int_as_float(0x7fc00000)");
    else if (isinf(v))
        snprintf(buf, n, "%s__int_as_float(0x7f800000)", v < 0 ? "-" : "");
    else
        snprintf(buf, n, "(%.9ef)", (double)(float)v);
    return buf;
}

/* Where the operands are rounded to 11 mantissa bits or fewer (TF32, f16,
 * bf16), the sigmoid takes the fast exponential and division (ex2.approx
 * and div.approx, about 2^-20 off against the rounding's 2^-11): the
 * element phase of the TF32 LSTM at I = H = 1024, B = 256 spent about
 * 0.8 us of a 16 us step in the accurate forms' range reduction and IEEE
 * division (2.40 -> 2.32 ms, bench/results/h100/sigmoid/).  fp32 models in
 * FFMA and 3xTF32 keep the accurate forms, PyTorch's.  tanhf is already
 * ex2.approx and rcp.approx past |x| = 0.6 and a polynomial below; the
 * fast form there gained under 0.5% and loses relative accuracy near 0. */
const char *cu_unary_fmt(const cu_ctx *c, int op)
{
    const bool fast = c->half || c->cfg.math == RNNC_MATH_TF32;
    switch (op) {
    case IR_NEG: return "-(%s)";
    case IR_SIGMOID:
        return fast ? "__fdividef(1.f, 1.f + __expf(-(%s)))" : "1.f / (1.f + expf(-(%s)))";
    case IR_TANH: return "tanhf(%s)";
    case IR_RELU: return "fmaxf(%s, 0.f)";
    case IR_STEP: return "((%s) > 0.f ? 1.f : 0.f)"; /* relu', made by autodiff */
    case IR_EXP: return "expf(%s)";
    case IR_LOG: return "logf(%s)";
    case IR_SQRT: return "sqrtf(%s)";
    case IR_RSQRT: return "rsqrtf(%s)";
    case IR_DROPOUT: return "(%s)"; /* inference: identity */
    default: return NULL;
    }
}

const char *cu_binary_op(int op)
{
    switch (op) {
    case IR_ADD: return "+";
    case IR_SUB: return "-";
    case IR_MUL: return "*";
    case IR_DIV: return "/";
    default: return NULL;
    }
}

/* A node as a comment names it: its declared or given name, else %v. */
static const char *node_name(const ir_fn *f, int32_t v, char *buf, size_t n)
{
    const ir_node *nd = &f->nodes[v];
    const char *name = NULL;
    if (nd->op == IR_CONST) {
        snprintf(buf, n, "%g", nd->f);
        return buf;
    }
    if (nd->op == IR_INPUT && nd->i0 >= 0 && nd->i0 < f->n_inputs)
        name = f->inputs[nd->i0].name;
    else if (nd->op == IR_STATE && nd->i0 >= 0 && nd->i0 < f->n_states)
        name = f->states[nd->i0].name;
    else if (nd->op == IR_PARAM && nd->i0 >= 0 && nd->i0 < f->n_params)
        name = f->params[nd->i0].name;
    else
        name = ir_value_name(f, v);
    if (name)
        snprintf(buf, n, "%s", name);
    else
        snprintf(buf, n, "%%%d", (int)v);
    return buf;
}

const char *cu_describe(const cu_ctx *c, int32_t v, char *buf, size_t n)
{
    const ir_fn *f = c->f;
    const ir_node *nd = &f->nodes[v];
    const char *given = ir_value_name(f, v);
    char a[64];
    size_t at = (size_t)snprintf(buf, n, "%%%d %s%s%s(", (int)v, given ? given : "",
                                 given ? " = " : "", ir_ops[nd->op].name);
    for (int k = 0; k < ir_ops[nd->op].arity && at < n; k++)
        if (nd->a[k] >= 0)
            at += (size_t)snprintf(buf + at, n - at, "%s%s", k ? ", " : "",
                                   node_name(f, nd->a[k], a, sizeof a));
    if (nd->op == IR_CHUNK && at < n)
        at += (size_t)snprintf(buf + at, n - at, ", %d, %d", (int)nd->i0, (int)nd->i1);
    if (nd->op == IR_SLICE && at < n)
        at += (size_t)snprintf(buf + at, n - at, ", %lld, %lld",
                               (long long)ir_dim_eval(nd->rows, c->cfg.sizes),
                               (long long)ir_dim_eval(nd->cols, c->cfg.sizes));
    if (at < n)
        snprintf(buf + at, n - at, ")");
    return buf;
}

const char *cu_leaf_describe(const cu_ctx *c, int32_t v, char *buf, size_t n)
{
    const ir_node *nd = &c->f->nodes[v];
    char a[64];
    node_name(c->f, v, a, sizeof a);
    switch (nd->op) {
    case IR_INPUT: snprintf(buf, n, "input %s", a); return buf;
    case IR_STATE: snprintf(buf, n, "state %s", a); return buf;
    case IR_PARAM: snprintf(buf, n, "param %s", a); return buf;
    default: return cu_describe(c, v, buf, n);
    }
}

/* ---------------------------------------------------------------- layout */

/* The emitters write each piece of code at the indentation of its own
 * function; one pass over the finished source sets every line's
 * indentation from the block structure, so the kernel reads as one piece.
 * Only leading white space changes (and blank lines go): the tokens are
 * the emitters'. */
typedef struct indent_state {
    int stack[64]; /* the level of each open brace's line */
    int depth;
    int cont;      /* level of the next line when the last one left a statement open, -1 */
    int stmt;      /* level of the line that opened the statement */
    bool in_define;
} indent_state;

/* Updates the brace stack over one line (strings, characters and comments
 * skipped); writes the last code character, 0 when the line has none. */
static void scan_braces(indent_state *s, const char *p, const char *end, int level, char *last)
{
    *last = 0;
    for (; p < end; p++) {
        if (*p == '/' && p + 1 < end && p[1] == '*') {
            const char *q = strstr(p + 2, "*/");
            if (!q || q >= end)
                return;
            p = q + 1;
            continue;
        }
        if (*p == '"' || *p == '\'') {
            char quote = *p;
            for (p++; p < end && *p != quote; p++)
                if (*p == '\\')
                    p++;
            *last = quote;
            continue;
        }
        if (*p == '{' && s->depth < 64)
            s->stack[s->depth++] = level;
        else if (*p == '}' && s->depth > 0)
            s->depth--;
        if (*p != ' ' && *p != '\t')
            *last = *p;
    }
}

static bool is_control(const char *p)
{
    static const char *const kw[] = {"for", "if", "else", "while", "do"};
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++) {
        size_t n = strlen(kw[i]);
        if (!strncmp(p, kw[i], n) && (p[n] == ' ' || p[n] == '(' || p[n] == '\n' || !p[n]))
            return true;
    }
    return false;
}

/* The level of code line p and the state after it. */
static int line_level(indent_state *s, const char *p, const char *end)
{
    int level = s->depth ? s->stack[s->depth - 1] + 1 : 0;
    if (*p == '}' && s->depth)
        level = s->stack[s->depth - 1];
    else if (*p == '{' && s->cont >= 0)
        level = s->stmt;
    else if (s->cont >= 0)
        level = s->cont;
    char last;
    scan_braces(s, p, end, level, &last);
    if (!last || (p[0] == '/' && p[1] == '*'))
        return level; /* a comment leaves the statement as it was */
    if (last == ';' || last == '{' || last == '}') {
        s->cont = -1;
    } else if (is_control(p)) {
        s->stmt = level;
        s->cont = level + 1;
    } else if (s->cont < 0) {
        s->stmt = level;
        s->cont = level + 1;
    }
    return level;
}

void cu_reindent(cu_text *t)
{
    if (t->oom || !t->p)
        return;
    cu_text out = {0};
    indent_state s = {.depth = 0, .cont = -1, .stmt = 0, .in_define = false};
    for (const char *p = t->p; *p;) {
        const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
        const char *q = p;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        bool define_line = s.in_define || *q == '#';
        if (define_line) /* preprocessor lines, a #define's continued lines too, as written */
            cu_printf(&out, "%.*s\n", (int)(end - p), p);
        else if (q < end)
            cu_printf(&out, "%*s%.*s\n", 4 * line_level(&s, q, end), "", (int)(end - q), q);
        s.in_define = define_line && end > p && end[-1] == '\\';
        p = nl ? nl + 1 : end;
    }
    if (out.oom) {
        free(out.p);
        t->oom = true;
        return;
    }
    free(t->p);
    *t = out;
}
