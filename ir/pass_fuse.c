/*
 * pass_fuse: the schedule a code generator consumes.
 * Requires: an optimised, verified cell.  Keeps: the cell unchanged.
 * The hoisted part becomes one time-parallel computation whose results
 * (hoist_out) the step reads; the step becomes one fused computation per
 * time step, cut into phases only where a node needs a whole vector made
 * earlier in the same step (the x of a linear, or a feature-axis
 * reduction): in a persistent kernel each cut is a grid-wide exchange,
 * everything between cuts stays in the block that owns the hidden units.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ir/ir.h"

static rnnc_status list_hoist_out(const ir_fn *f, ir_schedule *s, ir_arena *a)
{
    const uint8_t *part = s->hoist.part;
    uint8_t *read = ir_arena_alloc(a, (size_t)f->n + 1);
    s->hoist_out = ir_arena_alloc(a, sizeof(int32_t) * ((size_t)f->n + 1));
    if (!read || !s->hoist_out)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fuse: out of memory");
    for (int32_t i = 0; i < f->n; i++)
        if (part[i] == IR_PART_STEP)
            for (int k = 0; k < 3; k++)
                if (f->nodes[i].a[k] >= 0)
                    read[f->nodes[i].a[k]] = 1;
    s->n_hoist_out = 0;
    for (int32_t i = 0; i < f->n; i++)
        if (part[i] == IR_PART_HOIST && (read[i] || ir_is_result(f, i)))
            s->hoist_out[s->n_hoist_out++] = i;
    return RNNC_OK;
}

/* A dim made of H and P only: its values are whole slices of the hidden
 * units (the generator's unit of work), so a concat of such values is
 * slice-local and needs no exchange. */
static bool slice_aligned(ir_dim d)
{
    return d.c == 0 && d.i == 0;
}

/* True when node n reads operand k as a whole vector. */
static bool needs_whole(const ir_fn *f, const ir_node *n, int k)
{
    if (n->op == IR_CONCAT)
        return !slice_aligned(f->nodes[n->a[0]].cols) || !slice_aligned(f->nodes[n->a[1]].cols);
    if (k != 0)
        return false;
    return n->op == IR_LINEAR || (ir_ops[n->op].flags & IR_F_REDUCE);
}

static rnnc_status assign_phases(const ir_fn *f, ir_schedule *s, ir_arena *a)
{
    const uint8_t *part = s->hoist.part;
    s->step = ir_arena_alloc(a, sizeof(int32_t) * ((size_t)f->n + 1));
    s->phase = ir_arena_alloc(a, sizeof(int32_t) * ((size_t)f->n + 1));
    if (!s->step || !s->phase)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fuse: out of memory");
    s->n_step = 0;
    s->n_phases = 1;
    for (int32_t i = 0; i < f->n; i++) {
        s->phase[i] = -1;
        if (part[i] != IR_PART_STEP || f->nodes[i].op == IR_STATE)
            continue;
        const ir_node *n = &f->nodes[i];
        int32_t ph = 0;
        for (int k = 0; k < 3; k++) {
            int32_t o = n->a[k];
            if (o < 0 || part[o] != IR_PART_STEP || f->nodes[o].op == IR_STATE)
                continue;
            int32_t need = s->phase[o] + needs_whole(f, n, k);
            if (need > ph)
                ph = need;
        }
        s->phase[i] = ph;
        if (ph + 1 > s->n_phases)
            s->n_phases = ph + 1;
        s->step[s->n_step++] = i;
    }
    return RNNC_OK;
}

rnnc_status pass_fuse(const ir_fn *f, rnnc_hoist setting, ir_arena *a, ir_schedule *out)
{
    ir_schedule s = {.fn = f, .setting = setting};
    rnnc_status st;
    if ((st = ir_verify(f)) || (st = pass_hoist(f, setting, a, &s.hoist)) ||
        (st = pass_fold(f, &s, a)) || (st = list_hoist_out(f, &s, a)) ||
        (st = assign_phases(f, &s, a)))
        return st;
    *out = s;
    if (ir_dump_enabled("schedule")) {
        char *text = NULL;
        if (ir_schedule_print(&s, &text) == RNNC_OK)
            fprintf(stderr, "# RNNC_DUMP=schedule: cell %s\n%s", f->name, text);
        free(text);
    }
    return RNNC_OK;
}
