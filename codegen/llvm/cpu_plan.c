/*
 * cpu_plan.c: lays a schedule out in CPU memory for the LLVM generator and
 * the CPU runtime (the contract is cg_cpu_plan in codegen.h).
 *
 * Requires a schedule from pass_fuse.  Decides, per part (hoisted, step):
 *  - stages: a linear whose input is computed in the same part starts a
 *    later stage, so every GEMM reads a finished buffer;
 *  - blocks: consecutive element-wise nodes of one width share one column
 *    loop (values in registers); a layernorm starts a loop of its own
 *    after its statistics, sum/mean and concat are blocks of their own;
 *  - slots: which values are stored: GEMM outputs, reductions, concats,
 *    anything read outside its own loop, through a chunk view, by the
 *    other part, or as a next state or the output.  Chunks are views.
 */
#include <stdio.h>
#include <string.h>

#include "codegen/llvm/llvm_gen.h"

typedef struct plan_ctx {
    const ir_schedule *s;
    const ir_fn *f;
    cg_cpu_plan *p;
    ir_arena *a;
    int64_t *cols;
    int8_t *seg;    /* 0 hoisted, 1 step, -1 neither (leaf, fold, dead) */
    int32_t *stage;
    bool *need;     /* stored in a slot of its own */
    int32_t cur;    /* the block being filled, -1 none */
} plan_ctx;

static int micro_rows(int vw)
{
    return vw >= 16 ? 8 : vw >= 8 ? 6 : 4;
}

void cg_cpu_ew_name(char *buf, size_t n, const char *pfx, int part, int stage)
{
    snprintf(buf, n, "%s_ew%c%d", pfx, part ? 's' : 'h', stage);
}

void cg_cpu_mk_name(char *buf, size_t n, const char *pfx, int32_t g, int mr)
{
    snprintf(buf, n, "%s_mk%d_%d", pfx, (int)g, mr);
}

static bool is_leaf(const ir_node *n)
{
    return (ir_ops[n->op].flags & IR_F_LEAF) != 0;
}

/* The non-chunk node a chunk chain views, and the column offset into it. */
static int32_t chunk_base(const plan_ctx *c, int32_t n, int64_t *off)
{
    *off = 0;
    while (c->f->nodes[n].op == IR_CHUNK && c->seg[n] >= 0) {
        *off += c->f->nodes[n].i1 * c->cols[n];
        n = c->f->nodes[n].a[0];
    }
    return n;
}

static rnnc_status classify(plan_ctx *c)
{
    const ir_fn *f = c->f;
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        c->cols[i] = n->kind == IR_SCALAR ? 1 : ir_dim_eval(n->cols, c->p->sizes);
        int part = c->s->hoist.part[i];
        c->seg[i] = -1;
        if (is_leaf(n) || part == IR_PART_DEAD || part == IR_PART_FOLD)
            continue;
        if (n->kind != IR_ROW)
            return err_fail(RNNC_ERR_UNSUPPORTED, "cpu: node %d (%s) is a %s value outside the "
                            "fold part", i, ir_ops[n->op].name, n->kind == IR_MAT ? "matrix" : "vector");
        c->seg[i] = part == IR_PART_HOIST ? 0 : 1;
        int32_t st = 0;
        for (int k = 0; k < ir_ops[n->op].arity; k++) {
            int32_t a = n->a[k];
            if (a < 0 || c->seg[a] != c->seg[i])
                continue;
            int32_t sa = c->stage[a] + (n->op == IR_LINEAR && k == 0);
            st = sa > st ? sa : st;
        }
        if (st >= CG_MAX_STAGES)
            return err_fail(RNNC_ERR_UNSUPPORTED, "cpu: more than %d chained linears in one step",
                            CG_MAX_STAGES);
        c->stage[i] = st;
    }
    return RNNC_OK;
}

static bool is_ew(const ir_node *n)
{
    return n->op != IR_LINEAR && n->op != IR_CHUNK;
}

/* Whether pointwise node i can join the loop being filled. */
static bool joins(const plan_ctx *c, int32_t i)
{
    const cg_cpu_plan *p = c->p;
    const ir_node *n = &c->f->nodes[i];
    if (c->cur < 0 || p->blocks[c->cur].kind != CG_BLOCK_LOOP || n->op == IR_LAYERNORM ||
        p->blocks[c->cur].cols != c->cols[i])
        return false;
    for (int k = 0; k < ir_ops[n->op].arity; k++) {
        int64_t off;
        if (n->a[k] >= 0 && c->f->nodes[n->a[k]].op == IR_CHUNK &&
            p->block_of[chunk_base(c, n->a[k], &off)] == c->cur)
            return false;
    }
    return true;
}

static void add_to_block(plan_ctx *c, int32_t i, int kind)
{
    cg_cpu_plan *p = c->p;
    if (kind != CG_BLOCK_LOOP || !joins(c, i)) {
        c->cur = p->n_blocks++;
        p->blocks[c->cur] = (cg_block){kind, c->cols[i], 0, 0};
    }
    cg_block *b = &p->blocks[c->cur];
    int32_t at = 0;
    for (int32_t k = 0; k < c->cur; k++)
        at += p->blocks[k].count;
    b->first = at;
    p->ew_nodes[at + b->count++] = i;
    p->block_of[i] = c->cur;
}

static void build_stages(plan_ctx *c)
{
    cg_cpu_plan *p = c->p;
    const ir_fn *f = c->f;
    for (int part = 0; part < 2; part++) {
        int32_t top = -1;
        for (int32_t i = 0; i < f->n; i++)
            if (c->seg[i] == part && c->stage[i] > top)
                top = c->stage[i];
        p->n_stages[part] = top + 1;
        for (int32_t st = 0; st <= top; st++) {
            cg_stage *sg = &p->stages[part][st];
            sg->first_gemm = p->n_gemms;
            sg->first_block = p->n_blocks;
            c->cur = -1;
            for (int32_t i = 0; i < f->n; i++) {
                const ir_node *n = &f->nodes[i];
                if (c->seg[i] != part || c->stage[i] != st)
                    continue;
                if (n->op == IR_LINEAR)
                    p->gemms[p->n_gemms++] = (cg_gemm){.node = i, .part = part ? IR_PART_STEP
                                                                               : IR_PART_HOIST,
                                                       .stage = st};
                else if (n->op == IR_SUM || n->op == IR_MEAN)
                    add_to_block(c, i, CG_BLOCK_REDUCE);
                else if (n->op == IR_CONCAT)
                    add_to_block(c, i, CG_BLOCK_COPY);
                else if (is_ew(n))
                    add_to_block(c, i, CG_BLOCK_LOOP);
            }
            sg->n_gemms = p->n_gemms - sg->first_gemm;
            sg->n_blocks = p->n_blocks - sg->first_block;
        }
    }
}

/* Marks the value operand `a` of node i (or what its chunk views) as stored when needed. */
static void need_operand(plan_ctx *c, int32_t i, int k)
{
    const ir_node *n = &c->f->nodes[i];
    int32_t a = n->a[k];
    if (a < 0 || c->seg[a] < 0)
        return;
    int64_t off;
    int32_t b = chunk_base(c, a, &off);
    if (c->seg[b] < 0)
        return;
    bool whole = n->op == IR_LINEAR || n->op == IR_CONCAT || n->op == IR_SUM ||
                 n->op == IR_MEAN || n->op == IR_LAYERNORM;
    if (b != a || whole || c->seg[a] != c->seg[i] || c->p->block_of[a] != c->p->block_of[i])
        c->need[b] = true;
}

static void need_root(plan_ctx *c, int32_t n)
{
    int64_t off;
    if (n >= 0 && c->seg[n] >= 0)
        c->need[chunk_base(c, n, &off)] = true;
}

static void mark_needs(plan_ctx *c)
{
    const ir_fn *f = c->f;
    for (int32_t i = 0; i < f->n; i++) {
        if (c->seg[i] < 0)
            continue;
        const ir_node *n = &f->nodes[i];
        if (n->op == IR_LINEAR || n->op == IR_CONCAT || n->op == IR_SUM || n->op == IR_MEAN)
            c->need[i] = true;
        if (n->op == IR_CHUNK)
            continue;
        for (int k = 0; k < ir_ops[n->op].arity; k++)
            if (!(n->op == IR_LINEAR && k == 1))
                need_operand(c, i, k);
    }
    for (int32_t k = 0; k < c->s->n_hoist_out; k++)
        need_root(c, c->s->hoist_out[k]);
    for (int32_t k = 0; k < f->n_states; k++)
        need_root(c, f->states[k].next);
    need_root(c, f->output);
}

static int32_t add_slot(cg_cpu_plan *p, int kind, int part, int32_t index, int64_t cols)
{
    int64_t ld = (cols + p->nr - 1) / p->nr * p->nr;
    p->slots[p->n_slots] = (cg_slot){kind, part, index, cols, ld > 0 ? ld : p->nr, false};
    return p->n_slots++;
}

/* A fold value (vector or computed scalar) read by the hoisted part or the step. */
static bool fold_read(const plan_ctx *c, int32_t n)
{
    const ir_node *nd = &c->f->nodes[n];
    if (c->s->hoist.part[n] != IR_PART_FOLD || nd->kind == IR_MAT || nd->op == IR_CONST)
        return false;
    for (int32_t i = n + 1; i < c->f->n; i++)
        for (int k = 0; c->seg[i] >= 0 && k < ir_ops[c->f->nodes[i].op].arity; k++)
            if (c->f->nodes[i].a[k] == n)
                return true;
    return false;
}

static void assign_slots(plan_ctx *c)
{
    cg_cpu_plan *p = c->p;
    const ir_fn *f = c->f;
    p->input_slot = add_slot(p, CG_SLOT_INPUT, IR_PART_HOIST, 0, c->cols[f->inputs[0].node]);
    p->node_slot[f->inputs[0].node] = p->input_slot;
    for (int32_t k = 0; k < f->n_states; k++) {
        int32_t n = f->states[k].node;
        p->state_slot[k] = add_slot(p, CG_SLOT_STATE, IR_PART_STEP, k, c->cols[n]);
        p->node_slot[n] = p->state_slot[k];
    }
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        int part = c->seg[i] == 1 ? IR_PART_STEP : IR_PART_HOIST;
        if (c->need[i])
            p->node_slot[i] = add_slot(p, CG_SLOT_NODE, part, i, c->cols[i]);
        else if (fold_read(c, i))
            p->node_slot[i] = add_slot(p, CG_SLOT_FOLD, IR_PART_FOLD, i, c->cols[i]);
        else if (n->op == IR_CHUNK && c->seg[i] >= 0 && p->node_slot[n->a[0]] >= 0) {
            p->node_slot[i] = p->node_slot[n->a[0]];
            p->node_off[i] = p->node_off[n->a[0]] + n->i1 * c->cols[i];
        }
        if (n->op == IR_DROPOUT && c->seg[i] >= 0 && n->f > 0.0)
            add_slot(p, CG_SLOT_MASK, part, i, c->cols[i]);
    }
}

int32_t lv_mask_slot(const cg_cpu_plan *p, int32_t node)
{
    for (int32_t k = 0; k < p->n_slots; k++)
        if (p->slots[k].kind == CG_SLOT_MASK && p->slots[k].index == node)
            return k;
    return -1;
}

/* Fills in the GEMMs' operands and the step's reads of hoisted slots. */
static rnnc_status finish(plan_ctx *c)
{
    cg_cpu_plan *p = c->p;
    const ir_fn *f = c->f;
    for (int32_t g = 0; g < p->n_gemms; g++) {
        cg_gemm *gm = &p->gemms[g];
        const ir_node *n = &f->nodes[gm->node];
        gm->param = ir_param_of(f, n->a[1]);
        gm->a_slot = p->node_slot[n->a[0]];
        gm->a_off = p->node_off[n->a[0]];
        gm->c_slot = p->node_slot[gm->node];
        gm->k = c->cols[n->a[0]];
        gm->n = c->cols[gm->node];
        if (gm->param < 0 || gm->a_slot < 0 || f->nodes[n->a[1]].kind != IR_MAT)
            return err_fail(RNNC_ERR_UNSUPPORTED, "cpu: linear node %d needs a matrix parameter "
                            "and a row input", gm->node);
    }
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        if (c->seg[i] != 1 || n->op == IR_CHUNK)
            continue;
        for (int k = 0; k < ir_ops[n->op].arity; k++) {
            int32_t a = n->a[k];
            if (a >= 0 && p->node_slot[a] >= 0 && p->slots[p->node_slot[a]].part == IR_PART_HOIST)
                p->slots[p->node_slot[a]].step_reads = true;
        }
    }
    int32_t roots[1 + 64];
    int nr = 0;
    roots[nr++] = f->output;
    for (int32_t k = 0; k < f->n_states && nr < 65; k++)
        roots[nr++] = f->states[k].next;
    for (int k = 0; k < nr; k++) {
        int32_t r = roots[k];
        if (r < 0 || p->node_slot[r] < 0 || f->nodes[r].kind != IR_ROW)
            return err_fail(RNNC_ERR_UNSUPPORTED, "cpu: the output and next states must be row "
                            "values (node %d is not)", r);
        if (p->slots[p->node_slot[r]].part == IR_PART_HOIST)
            p->slots[p->node_slot[r]].step_reads = true;
    }
    return RNNC_OK;
}

static rnnc_status alloc_plan(plan_ctx *c)
{
    cg_cpu_plan *p = c->p;
    ir_arena *a = c->a;
    size_t n = (size_t)c->f->n;
    size_t ns = 2 * n + (size_t)c->f->n_states + 2;
    c->cols = ir_arena_alloc(a, n * sizeof(int64_t));
    c->seg = ir_arena_alloc(a, n);
    c->stage = ir_arena_alloc(a, n * sizeof(int32_t));
    c->need = ir_arena_alloc(a, n * sizeof(bool));
    p->slots = ir_arena_alloc(a, ns * sizeof(cg_slot));
    p->node_slot = ir_arena_alloc(a, n * sizeof(int32_t));
    p->node_off = ir_arena_alloc(a, n * sizeof(int64_t));
    p->block_of = ir_arena_alloc(a, n * sizeof(int32_t));
    p->state_slot = ir_arena_alloc(a, ((size_t)c->f->n_states + 1) * sizeof(int32_t));
    p->gemms = ir_arena_alloc(a, n * sizeof(cg_gemm));
    p->ew_nodes = ir_arena_alloc(a, n * sizeof(int32_t));
    p->blocks = ir_arena_alloc(a, n * sizeof(cg_block));
    if (!c->cols || !c->seg || !c->stage || !c->need || !p->slots || !p->node_slot ||
        !p->node_off || !p->block_of || !p->state_slot || !p->gemms || !p->ew_nodes || !p->blocks)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory for the plan");
    for (size_t i = 0; i < n; i++)
        p->node_slot[i] = p->block_of[i] = -1;
    return RNNC_OK;
}

rnnc_status cg_cpu_plan_build(const ir_schedule *s, ir_sizes sz, int vw, ir_arena *a,
                              cg_cpu_plan *out)
{
    if (!s || !s->fn || !a || !out || (vw != 4 && vw != 8 && vw != 16))
        return err_fail(RNNC_ERR_INVALID_ARG, "cpu: bad plan arguments (vector width %d)", vw);
    const ir_fn *f = s->fn;
    if (f->n_inputs != 1 || f->output < 0 || f->n_states > 64)
        return err_fail(RNNC_ERR_UNSUPPORTED, "cpu: cell '%s' needs one input, an output and at "
                        "most 64 states", f->name);
    memset(out, 0, sizeof *out);
    *out = (cg_cpu_plan){.sched = s, .fn = f, .sizes = sz, .vw = vw, .mr = micro_rows(vw),
                         .nr = 2 * vw};
    plan_ctx c = {.s = s, .f = f, .p = out, .a = a, .cur = -1};
    rnnc_status st = alloc_plan(&c);
    if (st == RNNC_OK)
        st = classify(&c);
    if (st != RNNC_OK)
        return st;
    build_stages(&c);
    mark_needs(&c);
    assign_slots(&c);
    return finish(&c);
}
