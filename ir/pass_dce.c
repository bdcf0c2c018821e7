/*
 * pass_dce: dead code.
 * Requires: a verified cell.  Keeps: declarations (they are the cell's
 * interface: weights are named after params even if unused), every node
 * that a next value or the output reaches.  Index order is topological, so
 * liveness is one backward sweep.
 */
#include <stdlib.h>

#include "ir/ir.h"

static rnnc_status dce_cb(ir_fn *dst, const ir_fn *src, int32_t i, ir_node *n,
                          const int32_t *map, void *ctx, int32_t *out)
{
    const uint8_t *live = ctx;
    (void)map;
    if (ir_ops[n->op].flags & IR_F_LEAF && n->op != IR_CONST)
        return RNNC_OK; /* keep declarations */
    if (!live[i]) {
        *out = -1;
        return RNNC_OK;
    }
    (void)src;
    return ir_emit_node(dst, n, out);
}

rnnc_status pass_dce(ir_fn *f)
{
    uint8_t *live = calloc((size_t)f->n + 1, 1);
    if (!live)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "dce: out of memory");
    ir_mark_live(f, live);
    rnnc_status s = ir_rewrite(f, dce_cb, live);
    free(live);
    return s;
}
