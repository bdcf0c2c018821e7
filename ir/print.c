/*
 * print.c: canonical .cell text of a cell.  Nodes are printed in index
 * order, declarations where their leaf stands, so parsing the text back
 * rebuilds the same node array (the round-trip tests rely on it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

typedef struct out {
    char *buf;
    size_t len, cap;
    bool oom;
} out;

static void put(out *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        size_t room = o->cap - o->len;
        va_start(ap, fmt);
        int w = o->buf ? vsnprintf(o->buf + o->len, room, fmt, ap) : -2;
        va_end(ap);
        if (w >= 0 && (size_t)w < room) {
            o->len += (size_t)w;
            return;
        }
        size_t cap = o->cap ? o->cap * 2 : 4096;
        if (w >= 0 && cap < o->len + (size_t)w + 1)
            cap = o->len + (size_t)w + 1;
        char *p = realloc(o->buf, cap);
        if (!p) {
            o->oom = true;
            return;
        }
        o->buf = p;
        o->cap = cap;
    }
}

/* Unnamed intermediates are t<N>, unless a declared name already looks like that. */
static const char *temp_prefix(const ir_fn *f)
{
    static const char *const choices[] = {"t", "tmp", "v", "_t"};
    for (size_t c = 0; c < sizeof choices / sizeof *choices; c++) {
        size_t k = strlen(choices[c]);
        bool clash = false;
        for (int32_t i = 0; i < f->n && !clash; i++) {
            const char *nm = NULL;
            const ir_node *n = &f->nodes[i];
            if (n->op == IR_INPUT) nm = f->inputs[n->i0].name;
            if (n->op == IR_STATE) nm = f->states[n->i0].name;
            if (n->op == IR_PARAM) nm = f->params[n->i0].name;
            if (nm && strncmp(nm, choices[c], k) == 0 && nm[k] >= '0' && nm[k] <= '9')
                clash = true;
        }
        if (!clash)
            return choices[c];
    }
    return "_tmp";
}

/* The name node i's value is printed under: the cell's own where it gave
 * one that is unique and clashes with nothing, else <pfx><i>. */
static bool name_usable(const ir_fn *f, const char *pfx, int32_t i)
{
    const char *nm = ir_value_name(f, i);
    size_t k = strlen(pfx);
    if (!nm || (strncmp(nm, pfx, k) == 0 && nm[k] >= '0' && nm[k] <= '9') ||
        ir_find_decl(f, nm) >= 0)
        return false;
    for (int32_t j = 0; j < f->n; j++) {
        const char *other = j != i ? ir_value_name(f, j) : NULL;
        if (other && strcmp(other, nm) == 0)
            return false;
    }
    return true;
}

static void put_ref(out *o, const ir_fn *f, const char *pfx, int32_t i)
{
    const ir_node *n = &f->nodes[i];
    switch (n->op) {
    case IR_INPUT: put(o, "%s", f->inputs[n->i0].name); break;
    case IR_STATE: put(o, "%s", f->states[n->i0].name); break;
    case IR_PARAM: put(o, "%s", f->params[n->i0].name); break;
    default:
        if (name_usable(f, pfx, i))
            put(o, "%s", ir_value_name(f, i));
        else
            put(o, "%s%d", pfx, (int)i);
        break;
    }
}

static void print_decl(out *o, const ir_fn *f, const ir_node *n)
{
    char b1[48], b2[48];
    if (n->op == IR_INPUT)
        put(o, "    input %s[%s]\n", f->inputs[n->i0].name, ir_dim_str(n->cols, b1, sizeof b1));
    else if (n->op == IR_STATE)
        put(o, "    state %s[%s]\n", f->states[n->i0].name, ir_dim_str(n->cols, b1, sizeof b1));
    else if (n->kind == IR_MAT)
        put(o, "    param %s[%s, %s]%s\n", f->params[n->i0].name,
            ir_dim_str(n->rows, b1, sizeof b1), ir_dim_str(n->cols, b2, sizeof b2),
            f->params[n->i0].optional ? " optional" : "");
    else
        put(o, "    param %s[%s]%s\n", f->params[n->i0].name, ir_dim_str(n->cols, b1, sizeof b1),
            f->params[n->i0].optional ? " optional" : "");
}

static void print_op(out *o, const ir_fn *f, const char *pfx, int32_t i)
{
    const ir_node *n = &f->nodes[i];
    char b1[48], b2[48];
    put(o, "    ");
    put_ref(o, f, pfx, i);
    put(o, " = ");
    if (n->op == IR_CONST) {
        put(o, "%.17g\n", n->f);
        return;
    }
    put(o, "%s(", ir_ops[n->op].name);
    put_ref(o, f, pfx, n->a[0]);
    switch (n->op) {
    case IR_CHUNK: put(o, ", %d, %d", n->i0, n->i1); break;
    case IR_DROPOUT: put(o, ", %.17g", n->f); break;
    case IR_SLICE:
        put(o, ", %s, %s", ir_dim_str(n->rows, b1, sizeof b1), ir_dim_str(n->cols, b2, sizeof b2));
        break;
    case IR_EXPAND: put(o, ", %s", ir_dim_str(n->cols, b1, sizeof b1)); break;
    case IR_LAYERNORM:
        put(o, ", %.17g", n->f);
        if (n->a[1] >= 0 || n->a[2] >= 0) {
            put(o, ", ");
            n->a[1] >= 0 ? put_ref(o, f, pfx, n->a[1]) : put(o, "none");
        }
        if (n->a[2] >= 0) {
            put(o, ", ");
            put_ref(o, f, pfx, n->a[2]);
        }
        break;
    default:
        if (ir_ops[n->op].arity == 2) {
            put(o, ", ");
            put_ref(o, f, pfx, n->a[1]);
        }
        break;
    }
    put(o, ")\n");
}

rnnc_status ir_print(const ir_fn *f, char **text)
{
    return ir_print_results(f, NULL, NULL, 0, text);
}

rnnc_status ir_print_results(const ir_fn *f, const char *const *labels, const int32_t *nodes,
                             int n_results, char **text)
{
    out o = {0};
    const char *pfx = temp_prefix(f);
    put(&o, "cell %s {\n", f->name);
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        if (n->op == IR_INPUT || n->op == IR_STATE || n->op == IR_PARAM)
            print_decl(&o, f, n);
        else
            print_op(&o, f, pfx, i);
    }
    for (int s = 0; s < f->n_states; s++) {
        if (f->states[s].next < 0)
            continue;
        put(&o, "    next %s = ", f->states[s].name);
        put_ref(&o, f, pfx, f->states[s].next);
        put(&o, "\n");
    }
    if (f->output >= 0) {
        put(&o, "    output ");
        put_ref(&o, f, pfx, f->output);
        put(&o, "\n");
    }
    for (int k = 0; k < n_results; k++) {
        put(&o, "    %s = ", labels[k]);
        put_ref(&o, f, pfx, nodes[k]);
        put(&o, "\n");
    }
    put(&o, "}\n");
    if (o.oom) {
        free(o.buf);
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "printing cell '%s': out of memory", f->name);
    }
    *text = o.buf;
    return RNNC_OK;
}

rnnc_status rnnc_cell_print(const rnnc_cell *c, char **text)
{
    if (!c || !text)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_print: NULL argument");
    return ir_print(c, text);
}
