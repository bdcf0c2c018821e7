/*
 * pass_hoist: decides where each node is computed.
 * Requires: an optimised cell (simplify has grouped state-free terms).
 * Keeps: the cell unchanged; fills ir_hoist.part.
 *  - FOLD:  no input, no state: computed once when weights are bound;
 *  - HOIST: the input but no state: one time-parallel pass over all T;
 *  - STEP:  a state: inside the time loop.
 * The setting bounds HOIST: ALL takes every state-free row value, MATMUL
 * only products of the input (x W^T), NONE only the input itself.
 */
#include "ir/ir.h"

void ir_compute_deps(const ir_fn *f, uint8_t *dep)
{
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        dep[i] = n->op == IR_STATE ? IR_DEP_STATE : n->op == IR_INPUT ? IR_DEP_INPUT : IR_DEP_NONE;
        for (int k = 0; k < 3; k++)
            if (n->a[k] >= 0 && dep[n->a[k]] > dep[i])
                dep[i] = dep[n->a[k]];
    }
}

static bool may_hoist(const ir_fn *f, const uint8_t *part, int32_t i, rnnc_hoist setting)
{
    const ir_node *n = &f->nodes[i];
    if (n->op == IR_INPUT || setting == RNNC_HOIST_ALL)
        return true;
    return setting == RNNC_HOIST_MATMUL && n->op == IR_LINEAR && part[n->a[0]] == IR_PART_HOIST;
}

rnnc_status pass_hoist(const ir_fn *f, rnnc_hoist setting, ir_arena *a, ir_hoist *out)
{
    uint8_t *dep = ir_arena_alloc(a, (size_t)f->n + 1);
    uint8_t *live = ir_arena_alloc(a, (size_t)f->n + 1);
    uint8_t *part = ir_arena_alloc(a, (size_t)f->n + 1);
    if (!dep || !live || !part)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "hoist: out of memory");
    ir_compute_deps(f, dep);
    ir_mark_live(f, live);
    for (int32_t i = 0; i < f->n; i++) {
        if (!live[i])
            part[i] = IR_PART_DEAD;
        else if (dep[i] == IR_DEP_NONE)
            part[i] = IR_PART_FOLD;
        else if (dep[i] == IR_DEP_INPUT && may_hoist(f, part, i, setting))
            part[i] = IR_PART_HOIST;
        else
            part[i] = IR_PART_STEP;
    }
    out->part = part;
    return RNNC_OK;
}
