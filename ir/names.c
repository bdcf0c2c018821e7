/*
 * names.c: the names a cell's text gives its values (`gates`, `c_next`),
 * so that dumps print them instead of numbering every value.  Names are
 * only labels: they take no part in hashing, equality or code generation,
 * and a rewrite carries each to the node its value maps to.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static bool is_decl(const ir_node *n)
{
    return n->op == IR_INPUT || n->op == IR_STATE || n->op == IR_PARAM;
}

/* vnames covers nodes [0, need). */
static rnnc_status reserve(ir_fn *f, int32_t need)
{
    if (need <= f->n_vnames)
        return RNNC_OK;
    int32_t cap = f->n_vnames ? f->n_vnames : 32;
    while (cap < need)
        cap *= 2;
    char **p = realloc(f->vnames, sizeof *p * (size_t)cap);
    if (!p)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cell '%s': out of memory", f->name);
    memset(p + f->n_vnames, 0, sizeof *p * (size_t)(cap - f->n_vnames));
    f->vnames = p;
    f->n_vnames = cap;
    return RNNC_OK;
}

rnnc_status ir_name_value(ir_fn *f, int32_t v, const char *name)
{
    if (v < 0 || v >= f->n || is_decl(&f->nodes[v]) || ir_value_name(f, v))
        return RNNC_OK;
    rnnc_status s = reserve(f, v + 1);
    if (s != RNNC_OK)
        return s;
    f->vnames[v] = strdup(name);
    return f->vnames[v] ? RNNC_OK
                        : err_fail(RNNC_ERR_OUT_OF_MEMORY, "cell '%s': out of memory", f->name);
}

const char *ir_value_name(const ir_fn *f, int32_t v)
{
    return v >= 0 && v < f->n_vnames ? f->vnames[v] : NULL;
}

rnnc_status ir_names_carry(ir_fn *dst, const ir_fn *src, const int32_t *map)
{
    rnnc_status s = RNNC_OK;
    for (int32_t i = 0; s == RNNC_OK && i < src->n && i < src->n_vnames; i++)
        if (src->vnames[i] && map[i] >= 0)
            s = ir_name_value(dst, map[i], src->vnames[i]);
    return s;
}

rnnc_status ir_names_copy(ir_fn *dst, const ir_fn *src)
{
    int32_t *id = malloc(sizeof *id * ((size_t)src->n + 1));
    if (!id)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cell '%s': out of memory", src->name);
    for (int32_t i = 0; i < src->n; i++)
        id[i] = i;
    rnnc_status s = ir_names_carry(dst, src, id);
    free(id);
    return s;
}

void ir_names_free(ir_fn *f)
{
    for (int32_t i = 0; i < f->n_vnames; i++)
        free(f->vnames[i]);
    free(f->vnames);
    f->vnames = NULL;
    f->n_vnames = 0;
}
