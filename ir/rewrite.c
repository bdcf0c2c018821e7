/*
 * rewrite.c: the one driver all rewriting passes share.  It walks the
 * source function in index order, maps operands, lets the pass decide each
 * node, and swaps the rebuilt function into place.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

int32_t *ir_use_counts(const ir_fn *f)
{
    int32_t *uses = calloc((size_t)f->n + 1, sizeof *uses);
    if (!uses)
        return NULL;
    for (int32_t i = 0; i < f->n; i++)
        for (int k = 0; k < 3; k++)
            if (f->nodes[i].a[k] >= 0)
                uses[f->nodes[i].a[k]]++;
    for (int s = 0; s < f->n_states; s++)
        if (f->states[s].next >= 0)
            uses[f->states[s].next]++;
    if (f->output >= 0)
        uses[f->output]++;
    return uses;
}

void ir_mark_live(const ir_fn *f, uint8_t *live)
{
    for (int s = 0; s < f->n_states; s++)
        if (f->states[s].next >= 0)
            live[f->states[s].next] = 1;
    if (f->output >= 0)
        live[f->output] = 1;
    for (int32_t i = f->n - 1; i >= 0; i--)
        if (live[i])
            for (int k = 0; k < 3; k++)
                if (f->nodes[i].a[k] >= 0)
                    live[f->nodes[i].a[k]] = 1;
}

bool ir_is_result(const ir_fn *f, int32_t v)
{
    if (f->output == v)
        return true;
    for (int s = 0; s < f->n_states; s++)
        if (f->states[s].next == v)
            return true;
    return false;
}

/* Re-declares a leaf of src in dst under a fresh slot. */
static rnnc_status copy_leaf(ir_fn *dst, const ir_fn *src, const ir_node *n, int32_t *out)
{
    switch (n->op) {
    case IR_INPUT:
        return ir_decl_input(dst, src->inputs[n->i0].name, n->cols, out);
    case IR_STATE:
        return ir_decl_state(dst, src->states[n->i0].name, n->cols, out);
    case IR_PARAM:
        return ir_decl_param(dst, src->params[n->i0].name, n->kind == IR_MAT ? &n->rows : NULL,
                             n->cols, src->params[n->i0].optional, out);
    default:
        return ir_emit(dst, n, out);
    }
}

static rnnc_status rebuild(ir_fn *dst, const ir_fn *src, int32_t *map, ir_rewrite_cb cb,
                           void *ctx)
{
    for (int32_t i = 0; i < src->n; i++) {
        ir_node n = src->nodes[i];
        for (int k = 0; k < 3; k++)
            if (n.a[k] >= 0)
                n.a[k] = map[n.a[k]]; /* -1 if dropped: ir_emit_node refuses it */
        rnnc_status s;
        int32_t out = -2;
        if (ir_ops[n.op].flags & IR_F_LEAF && n.op != IR_CONST) {
            s = cb ? cb(dst, src, i, &n, map, ctx, &out) : RNNC_OK;
            if (s == RNNC_OK && out == -2)
                s = copy_leaf(dst, src, &n, &out);
        } else {
            s = cb ? cb(dst, src, i, &n, map, ctx, &out) : ir_emit_node(dst, &n, &out);
        }
        if (s != RNNC_OK)
            return s;
        map[i] = out;
    }
    return RNNC_OK;
}

static rnnc_status finish(ir_fn *dst, const ir_fn *src, const int32_t *map)
{
    for (int s = 0; s < src->n_states; s++) {
        int32_t st = map[src->states[s].node];
        int32_t nx = src->states[s].next >= 0 ? map[src->states[s].next] : -1;
        int k = st >= 0 ? ir_state_of(dst, st) : -1;
        if (k < 0 || (src->states[s].next >= 0 && nx < 0))
            return err_fail(RNNC_ERR_INTERNAL, "cell '%s': a pass dropped state '%s'",
                            src->name, src->states[s].name);
        dst->states[k].next = nx;
    }
    dst->output = src->output >= 0 ? map[src->output] : -1;
    if (src->output >= 0 && dst->output < 0)
        return err_fail(RNNC_ERR_INTERNAL, "cell '%s': a pass dropped the output", src->name);
    dst->n_dropout = src->n_dropout;
    return ir_names_carry(dst, src, map);
}

/* A callback leaves *out at -2 to keep a declaration (leaf) as it is. */
rnnc_status ir_rewrite(ir_fn *f, ir_rewrite_cb cb, void *ctx)
{
    ir_fn *dst = NULL;
    int32_t *map = malloc(sizeof(int32_t) * ((size_t)f->n + 1));
    rnnc_status s = map ? rnnc_cell_create(&dst, f->name)
                        : err_fail(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    if (s != RNNC_OK)
        goto out_map;
    if ((s = rebuild(dst, f, map, cb, ctx)) != RNNC_OK || (s = finish(dst, f, map)) != RNNC_OK)
        goto out_dst;
    /* Swap the bodies: the caller's handle now holds the rebuilt function. */
    ir_fn tmp = *f;
    *f = *dst;
    *dst = tmp;
out_dst:
    rnnc_cell_destroy(dst);
out_map:
    free(map);
    return s;
}
