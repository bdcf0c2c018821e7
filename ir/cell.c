/*
 * cell.c: the IR function of one step (struct rnnc_cell): its node array,
 * its declarations, and hash-consing.  Every node enters through ir_emit,
 * which returns an existing equal node instead of a copy: CSE comes free.
 */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "ir/ir.h"

const ir_op_info ir_ops[IR_NUM_OPS] = {
#define OP(id, name, arity, flags) {name, arity, flags},
#include "ir/ops.def"
#undef OP
};

rnnc_status rnnc_cell_create(rnnc_cell **out, const char *name)
{
    if (!out || !name || !*name)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_create: a cell needs a name");
    rnnc_cell *c = calloc(1, sizeof *c);
    if (!c)
        goto fail_cell;
    c->name = strdup(name);
    if (!c->name)
        goto fail_name;
    c->output = -1;
    *out = c;
    return RNNC_OK;
fail_name:
    free(c);
fail_cell:
    return err_fail(RNNC_ERR_OUT_OF_MEMORY, "rnnc_cell_create: out of memory");
}

void rnnc_cell_destroy(rnnc_cell *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n_inputs; i++)
        free(c->inputs[i].name);
    for (int i = 0; i < c->n_states; i++)
        free(c->states[i].name);
    for (int i = 0; i < c->n_params; i++)
        free(c->params[i].name);
    free(c->inputs);
    free(c->states);
    free(c->params);
    ir_names_free(c);
    free(c->nodes);
    free(c->htab);
    free(c->ntab);
    free(c->name);
    free(c);
}

const char *rnnc_cell_name(const rnnc_cell *c)
{
    return c ? c->name : NULL;
}

/* ---------------------------------------------------------------- hashing */

static uint64_t node_hash(const ir_node *n)
{
    /* Hash the fields that identify a value; kind/rows/cols follow from them. */
    struct {
        int32_t op, a0, a1, a2, i0, i1;
        double f;
    } key = {n->op, n->a[0], n->a[1], n->a[2], n->i0, n->i1, n->f};
    return XXH3_64bits(&key, sizeof key);
}

static bool node_same(const ir_node *x, const ir_node *y)
{
    return x->op == y->op && x->a[0] == y->a[0] && x->a[1] == y->a[1] && x->a[2] == y->a[2] &&
           x->i0 == y->i0 && x->i1 == y->i1 && memcmp(&x->f, &y->f, sizeof x->f) == 0 &&
           x->kind == y->kind && ir_dim_eq(x->rows, y->rows) && ir_dim_eq(x->cols, y->cols);
}

static void htab_insert(rnnc_cell *c, int32_t idx)
{
    uint64_t mask = (uint64_t)c->hcap - 1;
    for (uint64_t h = node_hash(&c->nodes[idx]) & mask;; h = (h + 1) & mask) {
        if (c->htab[h] < 0) {
            c->htab[h] = idx;
            return;
        }
    }
}

/* The smallest power of two that keeps `count` entries at most half full,
 * and is larger than `at_least`. */
static int32_t table_size(int32_t count, int32_t at_least)
{
    int32_t cap = 32;
    while (cap <= at_least || cap < 2 * (count + 1))
        cap *= 2;
    return cap;
}

static rnnc_status htab_grow(rnnc_cell *c)
{
    int32_t cap = table_size(c->n, c->hcap);
    int32_t *t = malloc(sizeof(int32_t) * (size_t)cap);
    if (!t)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cell '%s': out of memory", c->name);
    free(c->htab);
    c->htab = t;
    c->hcap = cap;
    memset(t, 0xff, sizeof(int32_t) * (size_t)cap);
    for (int32_t i = 0; i < c->n; i++)
        htab_insert(c, i);
    return RNNC_OK;
}

rnnc_status ir_rehash(ir_fn *f)
{
    f->hcap = 0; /* rebuilt at the size the node count needs */
    return htab_grow(f);
}

static int32_t htab_find(const rnnc_cell *c, const ir_node *n)
{
    if (!c->hcap)
        return -1;
    uint64_t mask = (uint64_t)c->hcap - 1;
    for (uint64_t h = node_hash(n) & mask;; h = (h + 1) & mask) {
        int32_t i = c->htab[h];
        if (i < 0)
            return -1;
        if (node_same(&c->nodes[i], n))
            return i;
    }
}

rnnc_status ir_emit(ir_fn *f, const ir_node *n, int32_t *out)
{
    ir_node key = *n;
    if ((ir_ops[key.op].flags & IR_F_COMMUTE) && key.a[0] > key.a[1]) {
        int32_t t = key.a[0];
        key.a[0] = key.a[1];
        key.a[1] = t;
    }
    int32_t found = htab_find(f, &key);
    if (found >= 0) {
        *out = found;
        return RNNC_OK;
    }
    if (f->n == INT32_MAX / 2)
        return err_fail(RNNC_ERR_INVALID_ARG, "cell '%s': too many nodes", f->name);
    if (f->n == f->cap) {
        int32_t cap = f->cap ? f->cap * 2 : 32;
        ir_node *p = realloc(f->nodes, sizeof(ir_node) * (size_t)cap);
        if (!p)
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cell '%s': out of memory", f->name);
        f->nodes = p;
        f->cap = cap;
    }
    if ((f->n + 1) * 2 > f->hcap) {
        rnnc_status s = htab_grow(f);
        if (s != RNNC_OK)
            return s;
    }
    f->nodes[f->n] = key;
    htab_insert(f, f->n);
    *out = f->n++;
    return RNNC_OK;
}

/* ---------------------------------------------------------------- lookups */

int ir_state_of(const ir_fn *f, int32_t node)
{
    for (int i = 0; i < f->n_states; i++)
        if (f->states[i].node == node)
            return i;
    return -1;
}

int ir_param_of(const ir_fn *f, int32_t node)
{
    for (int i = 0; i < f->n_params; i++)
        if (f->params[i].node == node)
            return i;
    return -1;
}

/* The name a leaf was declared with (NULL for other nodes). */
static const char *decl_name(const rnnc_cell *c, int32_t node)
{
    const ir_node *n = &c->nodes[node];
    switch (n->op) {
    case IR_INPUT: return c->inputs[n->i0].name;
    case IR_STATE: return c->states[n->i0].name;
    case IR_PARAM: return c->params[n->i0].name;
    default: return NULL;
    }
}

static void ntab_insert(rnnc_cell *c, int32_t node)
{
    const char *name = decl_name(c, node);
    uint64_t mask = (uint64_t)c->ncap - 1;
    for (uint64_t h = XXH3_64bits(name, strlen(name)) & mask;; h = (h + 1) & mask)
        if (c->ntab[h] < 0) {
            c->ntab[h] = node;
            return;
        }
}

/* Rebuilds the name index at twice the room (declarations are few, so a
 * rebuild from the three lists is cheap and keeps one code path). */
static rnnc_status ntab_grow(rnnc_cell *c)
{
    int32_t cap = table_size(c->n_inputs + c->n_states + c->n_params, c->ncap);
    int32_t *t = malloc(sizeof(int32_t) * (size_t)cap);
    if (!t)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cell '%s': out of memory", c->name);
    free(c->ntab);
    c->ntab = t;
    c->ncap = cap;
    memset(t, 0xff, sizeof(int32_t) * (size_t)cap);
    for (int i = 0; i < c->n_inputs; i++)
        ntab_insert(c, c->inputs[i].node);
    for (int i = 0; i < c->n_states; i++)
        ntab_insert(c, c->states[i].node);
    for (int i = 0; i < c->n_params; i++)
        ntab_insert(c, c->params[i].node);
    return RNNC_OK;
}

rnnc_status ir_index_decl(ir_fn *f, int32_t node)
{
    int32_t n_decl = f->n_inputs + f->n_states + f->n_params;
    if (n_decl * 2 > f->ncap)
        return ntab_grow(f); /* the rebuild indexes the new declaration too */
    ntab_insert(f, node);
    return RNNC_OK;
}

int32_t ir_find_decl(const ir_fn *f, const char *name)
{
    if (!f->ncap)
        return -1;
    uint64_t mask = (uint64_t)f->ncap - 1;
    for (uint64_t h = XXH3_64bits(name, strlen(name)) & mask;; h = (h + 1) & mask) {
        int32_t node = f->ntab[h];
        if (node < 0)
            return -1;
        if (strcmp(decl_name(f, node), name) == 0)
            return node;
    }
}

int rnnc_cell_state_count(const rnnc_cell *c)
{
    return c ? c->n_states : 0;
}

const char *rnnc_cell_state_name(const rnnc_cell *c, int i)
{
    return (c && i >= 0 && i < c->n_states) ? c->states[i].name : NULL;
}

int rnnc_cell_param_count(const rnnc_cell *c)
{
    return c ? c->n_params : 0;
}

const char *rnnc_cell_param_name(const rnnc_cell *c, int i)
{
    return (c && i >= 0 && i < c->n_params) ? c->params[i].name : NULL;
}

/* ---------------------------------------------------------------- equality */

bool rnnc_cell_equal(const rnnc_cell *a, const rnnc_cell *b)
{
    if (!a || !b || a->n != b->n || a->output != b->output || a->n_inputs != b->n_inputs ||
        a->n_states != b->n_states || a->n_params != b->n_params)
        return false;
    for (int32_t i = 0; i < a->n; i++)
        if (!node_same(&a->nodes[i], &b->nodes[i]))
            return false;
    for (int i = 0; i < a->n_inputs; i++)
        if (a->inputs[i].node != b->inputs[i].node || strcmp(a->inputs[i].name, b->inputs[i].name))
            return false;
    for (int i = 0; i < a->n_states; i++)
        if (a->states[i].node != b->states[i].node || a->states[i].next != b->states[i].next ||
            strcmp(a->states[i].name, b->states[i].name))
            return false;
    for (int i = 0; i < a->n_params; i++)
        if (a->params[i].node != b->params[i].node ||
            a->params[i].optional != b->params[i].optional ||
            strcmp(a->params[i].name, b->params[i].name))
            return false;
    return true;
}

/* ---------------------------------------------------------------- copying */

static char *dup_or_null(const char *s, bool *ok)
{
    char *d = strdup(s);
    if (!d)
        *ok = false;
    return d;
}

rnnc_status rnnc_cell_clone(rnnc_cell **out, const rnnc_cell *c)
{
    if (!out || !c)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_clone: NULL argument");
    rnnc_cell *d = calloc(1, sizeof *d);
    if (!d)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    bool ok = true;
    *d = *c;
    d->nodes = NULL, d->htab = NULL, d->inputs = NULL, d->states = NULL, d->params = NULL;
    d->ntab = NULL, d->ncap = 0;
    d->vnames = NULL, d->n_vnames = 0;
    d->name = dup_or_null(c->name, &ok);
    d->nodes = malloc(sizeof(ir_node) * (size_t)(c->cap ? c->cap : 1));
    d->inputs = calloc((size_t)c->cap_inputs + 1, sizeof *d->inputs);
    d->states = calloc((size_t)c->cap_states + 1, sizeof *d->states);
    d->params = calloc((size_t)c->cap_params + 1, sizeof *d->params);
    d->hcap = 0;
    if (!ok || !d->nodes || !d->inputs || !d->states || !d->params) {
        d->n_inputs = d->n_states = d->n_params = 0; /* none of their names is copied yet */
        goto fail;
    }
    memcpy(d->nodes, c->nodes, sizeof(ir_node) * (size_t)c->n);
    for (int i = 0; i < c->n_inputs; i++)
        d->inputs[i] = (ir_input){c->inputs[i].node, dup_or_null(c->inputs[i].name, &ok)};
    for (int i = 0; i < c->n_states; i++)
        d->states[i] = (ir_state){c->states[i].node, c->states[i].next,
                                  dup_or_null(c->states[i].name, &ok)};
    for (int i = 0; i < c->n_params; i++)
        d->params[i] = (ir_param){c->params[i].node, c->params[i].optional,
                                  dup_or_null(c->params[i].name, &ok)};
    if (!ok || htab_grow(d) != RNNC_OK || ntab_grow(d) != RNNC_OK ||
        ir_names_copy(d, c) != RNNC_OK)
        goto fail;
    *out = d;
    return RNNC_OK;
fail:
    rnnc_cell_destroy(d);
    return err_fail(RNNC_ERR_OUT_OF_MEMORY, "rnnc_cell_clone: out of memory");
}
