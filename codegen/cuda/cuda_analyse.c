/*
 * cuda_analyse.c: places every node of a schedule for the CUDA generator.
 * Requires: a schedule from pass_fuse over an optimised cell.  Decides, per
 * node, where its value lives (a literal, the fold arena, the hoisted
 * buffers, shared memory of the step kernel, the exchange buffers), which
 * hoisted work fuses into a GEMM epilogue, the step kernel's tiling, how
 * its blocks exchange states, which leaves it keeps in registers, and the
 * launches.  Keeps: the emitters need nothing else and write nothing here.
 * Nothing is decided by cell name: only ops, shapes and the schedule count.
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/cuda_gen.h"

static int64_t round4(int64_t v)
{
    return (v + 3) & ~(int64_t)3;
}

static rnnc_status unsupported(const cu_ctx *c, int32_t v, const char *why)
{
    char b[48];
    const ir_node *n = &c->f->nodes[v];
    return err_fail(RNNC_ERR_UNSUPPORTED, "fused backend: %s (node %d, op %s [%s]) in cell '%s'",
                    why, v, ir_ops[n->op].name, ir_dim_str(n->cols, b, sizeof b), c->f->name);
}

static bool is_result(const ir_fn *f, int32_t v)
{
    if (f->output == v)
        return true;
    for (int s = 0; s < f->n_states; s++)
        if (f->states[s].next == v)
            return true;
    return false;
}

static bool is_pointwise(const ir_node *n)
{
    return (ir_ops[n->op].flags & IR_F_POINTWISE) != 0;
}

static int64_t slices_of(int64_t cols, int64_t H)
{
    if (cols == 1 && H != 1)
        return 0;
    return cols % H == 0 ? cols / H : -1;
}

/* The hoisted linear a buffer's per-column expression rests on, or -1. */
static int32_t fuse_linear(const cu_ctx *c, int32_t v)
{
    const ir_node *n = &c->f->nodes[v];
    const uint8_t *part = c->s->hoist.part;
    if (n->op == IR_LINEAR)
        return v;
    if (!is_pointwise(n))
        return -1;
    int32_t lin = -1;
    for (int k = 0; k < ir_ops[n->op].arity; k++) {
        int32_t o = n->a[k];
        if (part[o] == IR_PART_FOLD)
            continue;
        if (part[o] != IR_PART_HOIST || c->cols[o] != c->cols[v])
            return -1;
        int32_t l = fuse_linear(c, o);
        if (l < 0 || (lin >= 0 && l != lin))
            return -1;
        lin = l;
    }
    return lin;
}

static rnnc_status place_fold(cu_ctx *c, int32_t v)
{
    const ir_node *n = &c->f->nodes[v];
    if (n->op == IR_CONST) {
        c->role[v] = CU_LEAF_CONST;
        return RNNC_OK;
    }
    if (n->kind == IR_MAT || c->role[v] == CU_LEAF_FOLD)
        return RNNC_OK;
    cg_cuda_plan *p = c->plan;
    if (p->n_fold >= CG_CUDA_MAX_ITEMS)
        return unsupported(c, v, "too many folded values");
    c->role[v] = CU_LEAF_FOLD;
    c->off[v] = p->fold_floats;
    p->fold[p->n_fold++] = (cg_cuda_slot){v, p->fold_floats, c->cols[v], CG_CUDA_AS_IS};
    p->fold_floats += round4(c->cols[v]);
    return RNNC_OK;
}

static rnnc_status place_weight(cu_ctx *c, int32_t w)
{
    const ir_node *n = &c->f->nodes[w];
    int param = ir_param_of(c->f, w);
    if (n->op != IR_PARAM || param < 0)
        return unsupported(c, w, "a linear's matrix must be a parameter");
    int64_t off;
    rnnc_status st = cu_place_weight_as(c, w, CG_CUDA_AS_IS, &off);
    c->off[w] = off;
    return st;
}

int64_t cu_weight_at(const cu_ctx *c, int32_t w, int derive)
{
    const cg_cuda_plan *p = c->plan;
    int param = ir_param_of(c->f, w);
    for (int i = 0; i < p->n_wts; i++)
        if (p->wts[i].id == param && p->wts[i].derive == derive)
            return p->wts[i].offset;
    return -1;
}

rnnc_status cu_place_weight_as(cu_ctx *c, int32_t w, int derive, int64_t *off)
{
    cg_cuda_plan *p = c->plan;
    const ir_node *n = &c->f->nodes[w];
    int param = ir_param_of(c->f, w);
    if ((*off = cu_weight_at(c, w, derive)) >= 0)
        return RNNC_OK;
    if (p->n_wts >= CG_CUDA_MAX_ITEMS)
        return unsupported(c, w, "too many matrices");
    int64_t cnt = ir_dim_eval(n->rows, c->cfg.sizes) * c->cols[w];
    *off = p->wts_floats;
    p->wts[p->n_wts++] = (cg_cuda_slot){param, p->wts_floats, cnt, derive};
    /* slots 16-byte aligned (4 floats, or 8 of a half model's 16-bit
     * values): the TMA's boxes of the wgmma tiles start on them, and so do
     * the pseudo-layers' arenas, each a sum of slots */
    p->wts_floats += c->half ? (cnt + 7) / 8 * 8 : round4(cnt);
    return RNNC_OK;
}

static rnnc_status place_hoist_buf(cu_ctx *c, int32_t v);

/* A hoisted value the step or a result reads: a view, or a buffer. */
static rnnc_status place_hoist_read(cu_ctx *c, int32_t v)
{
    const ir_node *n = &c->f->nodes[v];
    const uint8_t *part = c->s->hoist.part;
    if (c->role[v] == CU_LEAF_INPUT || c->role[v] == CU_HOIST_BUF || c->role[v] == CU_HOIST_VIEW)
        return RNNC_OK;
    bool view = false;
    if (cu_is_view_op(n->op) && c->k[v] >= 1 && c->k[n->a[0]] >= 1 &&
        cu_view_col(c, v) % c->H == 0 && part[n->a[0]] == IR_PART_HOIST &&
        c->role[n->a[0]] != CU_LEAF_INPUT)
        view = true;
    if (n->op == IR_CONCAT && c->k[n->a[0]] >= 1 && c->k[n->a[1]] >= 1 &&
        part[n->a[0]] == IR_PART_HOIST && part[n->a[1]] == IR_PART_HOIST &&
        c->role[n->a[0]] != CU_LEAF_INPUT && c->role[n->a[1]] != CU_LEAF_INPUT)
        view = true;
    if (!view)
        return place_hoist_buf(c, v);
    c->role[v] = CU_HOIST_VIEW;
    for (int k = 0; k < ir_ops[n->op].arity; k++) {
        rnnc_status st = place_hoist_read(c, n->a[k]);
        if (st)
            return st;
    }
    return RNNC_OK;
}

/* Marks what the row kernel needs to compute v. */
static rnnc_status place_hoist_tmp(cu_ctx *c, int32_t v)
{
    const ir_node *n = &c->f->nodes[v];
    const uint8_t *part = c->s->hoist.part;
    for (int k = 0; k < ir_ops[n->op].arity; k++) {
        int32_t o = n->a[k];
        if (o < 0)
            continue;
        if (part[o] == IR_PART_FOLD) {
            rnnc_status st = place_fold(c, o);
            if (st)
                return st;
            continue;
        }
        const ir_node *on = &c->f->nodes[o];
        if (c->role[o] == CU_LEAF_INPUT || c->role[o] == CU_HOIST_BUF)
            continue;
        rnnc_status st;
        if (on->op == IR_LINEAR) {
            c->need[o] |= CU_NEED_ROWS;
            st = place_hoist_buf(c, o);
        } else if (c->role[o] != CU_NONE) {
            continue;
        } else {
            c->role[o] = CU_HOIST_TMP;
            st = place_hoist_tmp(c, o);
        }
        if (st)
            return st;
    }
    return RNNC_OK;
}

/* The matrix of hoisted linear lin and its x: the input, or a hoisted
 * value stored in hz for it (an earlier round makes it, cuda_rounds.c). */
static rnnc_status place_gemm_operands(cu_ctx *c, int32_t lin)
{
    const ir_node *n = &c->f->nodes[lin];
    rnnc_status st = place_weight(c, n->a[1]);
    if (st || c->role[n->a[0]] == CU_LEAF_INPUT)
        return st;
    return place_hoist_buf(c, n->a[0]);
}

static rnnc_status place_hoist_buf(cu_ctx *c, int32_t v)
{
    const ir_node *n = &c->f->nodes[v];
    cg_cuda_plan *p = c->plan;
    if (c->role[v] == CU_HOIST_BUF)
        return RNNC_OK;
    c->role[v] = CU_HOIST_BUF; /* (a row-kernel temporary is promoted: it is also stored) */
    c->off[v] = p->hz_cols;
    p->hz_cols += round4(c->cols[v]);
    if (n->op == IR_LINEAR) {
        c->gemm[v] = v;
        return place_gemm_operands(c, v);
    }
    int32_t lin = fuse_linear(c, v);
    if (lin >= 0 && c->cols[v] == c->cols[lin]) {
        c->gemm[v] = lin;
        rnnc_status st = place_gemm_operands(c, lin);
        if (st)
            return st;
        if (c->role[lin] == CU_NONE)
            c->role[lin] = CU_HOIST_TMP; /* the GEMM runs, only the epilogue is stored */
        /* folds in the epilogue */
        for (int32_t i = lin + 1; i <= v; i++)
            for (int k = 0; k < 3; k++)
                if (c->f->nodes[i].a[k] >= 0 && c->s->hoist.part[c->f->nodes[i].a[k]] == IR_PART_FOLD &&
                    c->s->hoist.part[i] == IR_PART_HOIST) {
                    rnnc_status st2 = place_fold(c, c->f->nodes[i].a[k]);
                    if (st2)
                        return st2;
                }
        return RNNC_OK;
    }
    c->gemm[v] = -1;
    return place_hoist_tmp(c, v);
}

/* Step chunk/slice/concat nodes read only as (part of) a linear's x are gathered, not computed. */
static void mark_gathers(cu_ctx *c)
{
    const ir_fn *f = c->f;
    for (int32_t i = f->n - 1; i >= 0; i--) {
        if (c->role[i] != CU_STEP_ELEM)
            continue;
        const ir_node *n = &f->nodes[i];
        if ((!cu_is_view_op(n->op) && n->op != IR_CONCAT) || is_result(f, i))
            continue;
        bool only_x = true, used = false;
        for (int32_t j = i + 1; j < f->n && only_x; j++) {
            const ir_node *m = &f->nodes[j];
            if (c->s->hoist.part[j] == IR_PART_DEAD)
                continue;
            for (int k = 0; k < 3; k++)
                if (m->a[k] == i) {
                    used = true;
                    bool as_x = (m->op == IR_LINEAR && k == 0) || c->role[j] == CU_STEP_GATHER;
                    if (!as_x)
                        only_x = false;
                }
        }
        if (used && only_x)
            c->role[i] = CU_STEP_GATHER;
    }
}

/* The dropout op that is the only live reader of the input, or -1: the
 * kernels read x as its value (the runtime drops x in training), so a
 * hoisted linear of dropout(x) stays one GEMM over x. */
static int32_t input_dropout(const cu_ctx *c)
{
    const ir_fn *f = c->f;
    const uint8_t *part = c->s->hoist.part;
    int32_t only = -1;
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        if (part[i] == IR_PART_DEAD)
            continue;
        for (int k = 0; k < 3; k++) {
            if (n->a[k] < 0 || f->nodes[n->a[k]].op != IR_INPUT)
                continue;
            if (n->op != IR_DROPOUT || only >= 0)
                return -1;
            only = i;
        }
    }
    return only;
}

static rnnc_status classify(cu_ctx *c)
{
    const ir_fn *f = c->f;
    const uint8_t *part = c->s->hoist.part;
    int32_t xd = input_dropout(c);
    c->plan->x_drop_site = -1;
    if (xd >= 0 && f->nodes[xd].f > 0.0) {
        c->plan->x_drop_site = f->nodes[xd].i1;
        c->plan->x_drop_p = f->nodes[xd].f;
    }
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        c->gemm[i] = -1;
        c->phase[i] = c->s->phase ? c->s->phase[i] : -1;
        c->cols[i] = ir_dim_eval(n->cols, c->cfg.sizes);
        c->k[i] = (int32_t)slices_of(c->cols[i], c->H);
        if (part[i] == IR_PART_DEAD)
            continue;
        if (n->op == IR_INPUT || i == xd)
            c->role[i] = CU_LEAF_INPUT;
        else if (n->op == IR_STATE)
            c->role[i] = CU_LEAF_STATE;
        else if (part[i] == IR_PART_STEP)
            c->role[i] = n->op == IR_LINEAR ? CU_STEP_LINEAR : CU_STEP_ELEM;
    }
    mark_gathers(c);
    return RNNC_OK;
}

/* Folds, weights, hoisted buffers and exchange needs, from every reader. */
static rnnc_status place_reads(cu_ctx *c)
{
    const ir_fn *f = c->f;
    const uint8_t *part = c->s->hoist.part;
    rnnc_status st;
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        if (part[i] != IR_PART_STEP || n->op == IR_STATE)
            continue;
        if (c->role[i] == CU_STEP_ELEM && c->k[i] < 0)
            return unsupported(c, i, "a step value must be a whole multiple of H wide (or 1)");
        if (n->op == IR_LINEAR) {
            int64_t rows = ir_dim_eval(f->nodes[n->a[1]].rows, c->cfg.sizes);
            if (rows % c->H)
                return unsupported(c, i, "a step linear's rows must be a multiple of H");
            if ((st = place_weight(c, n->a[1])))
                return st;
        }
        for (int k = 0; k < 3; k++) {
            int32_t o = n->a[k];
            if (o < 0 || (n->op == IR_LINEAR && k == 1))
                continue;
            if (part[o] == IR_PART_FOLD && (st = place_fold(c, o)))
                return st;
            if (part[o] == IR_PART_HOIST && (st = place_hoist_read(c, o)))
                return st;
        }
    }
    int32_t res[CG_CUDA_MAX_ITEMS + 1];
    int nres = 0;
    res[nres++] = f->output;
    for (int s = 0; s < f->n_states && nres <= CG_CUDA_MAX_ITEMS; s++)
        res[nres++] = f->states[s].next;
    for (int r = 0; r < nres; r++) {
        int32_t v = res[r];
        if (part[v] == IR_PART_FOLD && (st = place_fold(c, v)))
            return st;
        if (part[v] == IR_PART_HOIST && (st = place_hoist_read(c, v)))
            return st;
        if (c->k[v] < 1)
            return unsupported(c, v, "a state or the output must be a whole multiple of H wide");
    }
    return RNNC_OK;
}

/* Marks a step value some later phase reads whole (the x of a linear). */
static void need_whole(cu_ctx *c, int32_t v)
{
    const ir_node *n = &c->f->nodes[v];
    if (c->role[v] == CU_STEP_GATHER) {
        for (int k = 0; k < ir_ops[n->op].arity; k++)
            need_whole(c, n->a[k]);
    } else if (c->role[v] == CU_STEP_ELEM || c->role[v] == CU_STEP_LINEAR) {
        c->need[v] |= CU_NEED_XB;
    }
}

static void mark_needs(cu_ctx *c)
{
    const ir_fn *f = c->f;
    int last = c->s->n_phases - 1;
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        if (c->role[i] == CU_STEP_LINEAR) {
            need_whole(c, n->a[0]);
            continue;
        }
        if (c->role[i] != CU_STEP_ELEM)
            continue;
        bool reduce = (ir_ops[n->op].flags & IR_F_REDUCE) != 0;
        for (int k = 0; k < 3; k++) {
            int32_t o = n->a[k];
            if (o < 0)
                continue;
            if (reduce && k == 0 && (c->role[o] == CU_STEP_ELEM || c->role[o] == CU_STEP_LINEAR)) {
                c->need[o] |= CU_NEED_PART;
                if (c->role[o] == CU_STEP_ELEM)
                    c->need[o] |= CU_NEED_XP;
            }
            if (c->role[o] == CU_STEP_ELEM && c->phase[o] < c->phase[i])
                c->need[o] |= CU_NEED_XP;
        }
    }
    int32_t res[CG_CUDA_MAX_ITEMS + 1];
    int nres = 0;
    res[nres++] = f->output;
    for (int s = 0; s < f->n_states && nres <= CG_CUDA_MAX_ITEMS; s++)
        res[nres++] = f->states[s].next;
    for (int r = 0; r < nres; r++)
        if (c->role[res[r]] == CU_STEP_ELEM && c->phase[res[r]] < last)
            c->need[res[r]] |= CU_NEED_XP;
}

/* Global exchange buffers and state copies (offsets in floats). */
static void place_global(cu_ctx *c)
{
    const ir_fn *f = c->f;
    cg_cuda_plan *p = c->plan;
    for (int s = 0; s < f->n_states && s < CG_CUDA_MAX_ITEMS; s++) {
        int64_t cols = c->cols[f->states[s].node];
        p->state[s] = (cg_cuda_slot){s, p->state_floats, cols, CG_CUDA_AS_IS};
        p->state_floats += round4(c->B * cols);
    }
    p->n_states = f->n_states;
    for (int32_t i = 0; i < f->n; i++) {
        if (c->need[i] & CU_NEED_XB) {
            c->xb[i] = p->xb_floats;
            p->xb_floats += round4(c->B * c->cols[i]);
        }
    }
    p->out_cols = c->cols[f->output];
    p->in_cols = c->I;
}

/* States the step reads as whole vectors: staged as a linear's x (through
 * gathers and views) or read directly by a reduction.  A state read only
 * at its own elements can stay in registers from step to step. */
static void mark_whole(cu_ctx *c, int32_t v)
{
    const ir_node *n = &c->f->nodes[v];
    if (c->role[v] == CU_LEAF_STATE) {
        c->need[v] |= CU_NEED_WHOLE;
    } else if ((c->role[v] == CU_HOIST_VIEW || c->role[v] == CU_STEP_GATHER) &&
               (cu_is_view_op(n->op) || n->op == IR_CONCAT)) {
        mark_whole(c, n->a[0]);
        if (n->op == IR_CONCAT)
            mark_whole(c, n->a[1]);
    }
}

static void mark_whole_reads(cu_ctx *c)
{
    const ir_fn *f = c->f;
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        if (c->phase[i] < 0 || c->phase[i] >= c->s->n_phases)
            continue;
        bool direct = c->role[i] == CU_STEP_ELEM && (ir_ops[n->op].flags & IR_F_REDUCE) &&
                      c->role[n->a[0]] != CU_STEP_ELEM && c->role[n->a[0]] != CU_STEP_LINEAR;
        if (c->role[i] == CU_STEP_LINEAR || direct)
            mark_whole(c, n->a[0]);
    }
}

cg_cuda_launch *cu_new_launch(cu_ctx *c, const cu_tile *g)
{
    cg_cuda_plan *pl = c->plan;
    if (pl->n_launch >= CG_CUDA_MAX_LAUNCH) {
        err_fail(RNNC_ERR_INTERNAL, "fused backend: too many kernels");
        return NULL;
    }
    if (g)
        c->tile[pl->n_launch] = *g;
    else
        c->tile[pl->n_launch].lin = -1;
    cg_cuda_launch *l = &pl->launch[pl->n_launch++];
    memset(l, 0, sizeof *l);
    return l;
}

/* The step kernel: the last launch, cooperative (all blocks resident). */
static rnnc_status place_step_launch(cu_ctx *c)
{
    cg_cuda_launch *l = cu_new_launch(c, NULL);
    if (!l)
        return RNNC_ERR_INTERNAL;
    snprintf(l->name, sizeof l->name, "rnnc_step");
    l->grid = (unsigned)(c->NUB * c->NBB);
    l->grid_y = 1;
    l->threads = (unsigned)c->NT;
    l->smem = (unsigned)(c->smem_floats * 4);
    l->cooperative = true;
    l->cluster = c->ksplit ? 2 : 0;
    if (!c->wstream)
        return RNNC_OK;
    /* streamed weights (cuda_wstream.c): boxes of UT rows of the linear's
     * weights rounded to TF32 (the tensor cores would truncate them), the
     * copy cu_wstream_place put in every plan: one placed only here would
     * lie past the arena the runtime laid out from another plan */
    int32_t lin = c->bulk_lin;
    int64_t off = cu_weight_at(c, c->f->nodes[lin].a[1], CG_CUDA_TF32_RN);
    if (off < 0)
        return err_fail(RNNC_ERR_INTERNAL, "fused backend: no rounded copy of the streamed weights");
    l->tma = true;
    l->tma_k = (unsigned)cu_kdim(c, lin);
    l->tma_n = (unsigned)c->cols[lin];
    l->tma_es = 4;
    l->tma_w = l->tma_l = off;
    l->tma_box = (unsigned)c->UT;
    return RNNC_OK;
}

rnnc_status cu_analyse(cu_ctx *c)
{
    const ir_fn *f = c->f;
    rnnc_status st;
    if (f->n_states > CG_CUDA_MAX_ITEMS || f->n_inputs != 1)
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "fused backend: cell '%s' needs exactly one input and at most %d states",
                        f->name, CG_CUDA_MAX_ITEMS);
    for (int32_t i = 0; i < f->n; i++)
        c->off[i] = c->xb[i] = c->xp[i] = c->xg[i] = c->sm[i] = c->wsm[i] = c->pt[i] = -1;
    if ((st = classify(c)) || (st = place_reads(c)))
        return st;
    mark_needs(c);
    place_global(c);
    if ((st = cu_wstream_place(c)) || (st = cu_choose_tiles(c)))
        return st;
    cu_place_keeps(c);
    cu_ll_choose(c);
    mark_whole_reads(c);
    cu_mark_live(c);
    cu_place_regs(c);
    cu_ll_place(c);
    cu_bulk_place(c);
    if ((st = cu_place_hoist(c)))
        return st;
    return place_step_launch(c);
}
