/*
 * pass_fold: lists the parameter-only values the other parts read.
 * Requires: s->hoist filled by pass_hoist.  Keeps: the cell unchanged.
 * Each listed node (a vector such as bias_ih + bias_hh, or a single
 * parameter vector) is computed once at weight binding and read as a
 * buffer; matrices are read in place by linear, constants are inlined.
 */
#include "ir/ir.h"

static bool read_outside_fold(const ir_fn *f, const uint8_t *part, int32_t v)
{
    for (int32_t i = v + 1; i < f->n; i++) {
        if (part[i] != IR_PART_HOIST && part[i] != IR_PART_STEP)
            continue;
        for (int k = 0; k < 3; k++)
            if (f->nodes[i].a[k] == v)
                return true;
    }
    return false;
}

rnnc_status pass_fold(const ir_fn *f, ir_schedule *s, ir_arena *a)
{
    const uint8_t *part = s->hoist.part;
    s->fold_out = ir_arena_alloc(a, sizeof(int32_t) * ((size_t)f->n + 1));
    if (!s->fold_out)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fold: out of memory");
    s->n_fold_out = 0;
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        if (part[i] == IR_PART_FOLD && n->kind == IR_VEC && read_outside_fold(f, part, i))
            s->fold_out[s->n_fold_out++] = i;
    }
    return RNNC_OK;
}
