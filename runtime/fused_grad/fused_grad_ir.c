/*
 * fused_grad_ir.c: splits the backward step of a cell for the fused GPU
 * backward (fused_grad.h): the record cell, the recurrence cell and the
 * post ops.  Only ops, shapes and the autodiff pass's description decide;
 * nothing depends on the cell's name.  Widths of everything the generator
 * places must be sums of H and P (the projection's width): the generator's
 * slices are gcd(H, P) wide, and the recurrence reads its pieces of `bin`
 * as slices at their offsets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/fused_grad/fused_grad.h"

static rnnc_status unsupported(const char *what, const char *cell)
{
    return err_fail(RNNC_ERR_UNSUPPORTED, "fused backward: %s (cell '%s')", what, cell);
}

/* Whether the cell reads its input other than through one dropout op.
 * Through one op, the forward's kernels read x dropped by the runtime, the
 * weight gradients' GEMMs read x dropped the same way (FG_XD) and dx goes
 * back through the mask; x read both dropped and not would need dx
 * through a row kernel, which the post ops have not. */
static bool drops_input_and_more(const ir_fn *f)
{
    int drops = 0, reads = 0;
    for (int32_t i = 0; i < f->n; i++)
        for (int k = 0; k < 3; k++)
            if (f->nodes[i].a[k] >= 0 && f->nodes[f->nodes[i].a[k]].op == IR_INPUT) {
                reads++;
                drops += f->nodes[i].op == IR_DROPOUT;
            }
    return drops > 0 && (drops > 1 || reads > 1);
}

static int64_t cols_of(const ir_fn *f, int32_t v, ir_sizes s)
{
    return ir_dim_eval(f->nodes[v].cols, s);
}

/* ---------------------------------------------------------------- record */

static rnnc_status concat_into(ir_fn *f, int32_t *acc, int32_t v)
{
    if (*acc < 0) {
        *acc = v;
        return RNNC_OK;
    }
    ir_node n = {.op = IR_CONCAT, .a = {*acc, v, -1}};
    return ir_emit_node(f, &n, acc);
}

static rnnc_status build_record(const ir_fn *f, ir_sizes s, fg_kind *k)
{
    rnnc_status st = rnnc_cell_clone(&k->rec, f);
    int32_t out = -1;
    int64_t at = 0;
    if (st == RNNC_OK)
        st = concat_into(k->rec, &out, f->output);
    at += cols_of(f, f->output, s);
    for (int i = 0; st == RNNC_OK && i < f->n_states; i++) {
        k->next_off[i] = at;
        at += cols_of(f, f->states[i].next, s);
        st = concat_into(k->rec, &out, f->states[i].next);
    }
    for (int i = 0; st == RNNC_OK && i < k->g.n_saved; i++) {
        k->saved_off[i] = -1;
        if (fg_recomputed(f, k->g.saved[i]))
            continue; /* the row cell makes it again from x */
        k->saved_off[i] = at;
        at += cols_of(f, k->g.saved[i], s);
        st = concat_into(k->rec, &out, k->g.saved[i]);
    }
    if (st != RNNC_OK)
        return st;
    k->rec->output = out;
    k->rec_cols = at;
    return ir_verify(k->rec);
}

/* ---------------------------------------------------------------- operands */

typedef struct split {
    const ir_fn *gf; /* the backward step */
    const ir_fn *f;  /* the forward */
    ir_sizes s;
    fg_kind *k;
    uint8_t *piece;  /* [gf->n] input node read from G */
    uint8_t *export_; /* [gf->n] value the recurrence cell writes per step */
    uint8_t *rowdep; /* [gf->n] row work: the row cell's (mark_rowdep) */
    uint8_t *rowout; /* [gf->n] a row cell output (R) */
    int64_t *doff;   /* [gf->n] a linear_t product made into D: its column, else -1 */
    int64_t *off;    /* [gf->n] its column in G, DG or R */
} split;

static int input_slot(const ir_fn *gf, int32_t v)
{
    return gf->nodes[v].op == IR_INPUT ? gf->nodes[v].i0 : -1;
}

/* The layer input's slot where v is that input, else -1. */
static int layer_input(const split *p, int32_t v)
{
    int in = input_slot(p->gf, v);
    return in >= 0 && p->k->g.in[in].src == IR_GSRC_INPUT ? in : -1;
}

/* Whether v is the cell's dropout of the layer input (the forward's x_site
 * and p, which the backward's op repeats). */
static bool dropped_input(const split *p, int32_t v)
{
    const ir_node *n = &p->gf->nodes[v];
    return n->op == IR_DROPOUT && layer_input(p, n->a[0]) >= 0 && n->f > 0.0 &&
           n->i1 == p->k->x_site;
}

/* A linear_t product of the input's width (dx's, or what the row work
 * reads): a post GEMM's, never the recurrence's. */
static bool input_product(const split *p, int32_t v)
{
    const ir_node *n = &p->gf->nodes[v];
    return n->op == IR_LINEAR_T && !fg_in_units(n->cols);
}

/* Row work: values made by row ops from the layer input, a recomputed
 * saved value (fg_recomputed) or an input product, which the row cell
 * makes once the post GEMMs have made the products.  x and the products
 * are its leaves; the post ops' own nodes are not row work. */
static void mark_rowdep(split *p)
{
    const ir_fn *gf = p->gf;
    for (int32_t v = 0; v < gf->n; v++) {
        const ir_node *n = &gf->nodes[v];
        int in = input_slot(gf, v);
        if (in >= 0) {
            const ir_grad_in *gi = &p->k->g.in[in];
            p->rowdep[v] = gi->src == IR_GSRC_SAVED && fg_recomputed(p->f, gi->ref);
            continue;
        }
        if (n->op == IR_LINEAR_T || n->op == IR_OUTER || n->op == IR_ROWSUM)
            continue;
        for (int j = 0; j < 3; j++)
            if (n->a[j] >= 0 && (p->rowdep[n->a[j]] || layer_input(p, n->a[j]) >= 0 ||
                                 input_product(p, n->a[j])))
                p->rowdep[v] = 1;
    }
}

/* Marks (pass 0) or resolves (pass 1) a row operand of a post op. */
static fg_operand operand(split *p, int32_t v, int pass)
{
    int in = input_slot(p->gf, v);
    fg_operand o = {FG_DG, 0, cols_of(p->gf, v, p->s)};
    if (layer_input(p, v) >= 0 || dropped_input(p, v)) {
        o.where = layer_input(p, v) >= 0 ? FG_X : FG_XD;
        return o;
    }
    if (p->rowdep[v] || input_product(p, v)) {
        if (pass == 0 && p->rowdep[v])
            p->rowout[v] = 1;
        else if (pass == 0)
            p->doff[v] = 0; /* placed by place_rows */
        o.where = p->rowdep[v] ? FG_R : FG_D;
        o.off = p->rowdep[v] ? p->off[v] : p->doff[v];
        return o;
    }
    if (pass == 0)
        (in >= 0 ? p->piece : p->export_)[v] = 1;
    o.where = in >= 0 ? FG_G : FG_DG;
    o.off = p->off[v];
    return o;
}

static rnnc_status add_op(split *p, fg_op op, int pass)
{
    if (pass == 0)
        return RNNC_OK;
    if (p->k->n_ops >= FG_MAX)
        return unsupported("too many weight-gradient terms", p->f->name);
    p->k->op[p->k->n_ops++] = op;
    return RNNC_OK;
}

/* A post tree: sums of outer, rowsum and (for dx) linear_t of row values,
 * dx's terms under the cell's dropout of x where `drop`. */
static rnnc_status walk_post(split *p, int32_t v, int param, bool drop, int pass)
{
    const ir_node *n = &p->gf->nodes[v];
    fg_op op = {.param = param, .wparam = -1, .drop = drop, .d_off = -1};
    rnnc_status st;
    switch (n->op) {
    case IR_ADD:
        if ((st = walk_post(p, n->a[0], param, drop, pass)))
            return st;
        return walk_post(p, n->a[1], param, drop, pass);
    case IR_DROPOUT: /* dx through the forward's mask of x: the same op */
        if (param >= 0 || drop || n->i1 != p->k->x_site || n->f <= 0.0)
            break;
        return walk_post(p, n->a[0], param, true, pass);
    case IR_OUTER:
        if (param < 0)
            break;
        op.kind = FG_OUTER;
        op.a = operand(p, n->a[0], pass);
        op.b = operand(p, n->a[1], pass);
        return add_op(p, op, pass);
    case IR_ROWSUM:
        if (param < 0)
            break;
        op.kind = FG_ROWSUM;
        op.a = operand(p, n->a[0], pass);
        return add_op(p, op, pass);
    case IR_LINEAR_T:
        if (param >= 0)
            break;
        op.kind = FG_LINT;
        op.wparam = ir_param_of(p->gf, n->a[1]);
        op.a = operand(p, n->a[0], pass);
        return op.wparam < 0 ? unsupported("dx through a non-parameter matrix", p->f->name)
                             : add_op(p, op, pass);
    default:
        if (param >= 0 || drop || !p->rowdep[v])
            break;
        /* a term of dx the row cell makes (a layernorm's backward) */
        if (p->k->x_site >= 0)
            return unsupported("row work on an input the cell drops", p->f->name);
        op.kind = FG_ROWDX;
        op.a = operand(p, v, pass);
        return add_op(p, op, pass);
    }
    return unsupported(param < 0 ? "dx is neither linear_t terms nor row work"
                                 : "a weight gradient is not a sum of outer/rowsum terms",
                       p->f->name);
}

static rnnc_status walk_all(split *p, int pass)
{
    rnnc_status st = RNNC_OK;
    for (int i = 0; st == RNNC_OK && i < p->f->n_params; i++)
        if (p->k->g.param_grad[i] >= 0)
            st = walk_post(p, p->k->g.param_grad[i], i, false, pass);
    if (st == RNNC_OK && p->gf->output >= 0)
        st = walk_post(p, p->gf->output, -1, false, pass);
    return st;
}

/* The pieces of G and the columns of DG; live[] gets what the recurrence
 * cell computes. */
static rnnc_status place(split *p, uint8_t *live)
{
    const ir_fn *gf = p->gf;
    fg_kind *k = p->k;
    for (int s = 0; s < gf->n_states; s++)
        live[gf->states[s].next] = 1;
    for (int32_t v = 0; v < gf->n; v++)
        live[v] |= p->export_[v];
    for (int32_t i = gf->n - 1; i >= 0; i--)
        for (int j = 0; live[i] && j < 3; j++)
            if (gf->nodes[i].a[j] >= 0)
                live[gf->nodes[i].a[j]] = 1;
    for (int j = 0; j < gf->n_inputs; j++) {
        int32_t v = gf->inputs[j].node;
        if (!live[v] && !p->piece[v])
            continue;
        const ir_grad_in *gi = &k->g.in[j];
        if (gi->src == IR_GSRC_INPUT)
            return unsupported("the backward recurrence reads the layer input", p->f->name);
        if (!fg_in_units(gf->nodes[v].cols) || k->n_pieces >= FG_MAX)
            return unsupported("a step input is not a sum of H and P wide", p->f->name);
        fg_piece *pc = &k->piece[k->n_pieces++];
        *pc = (fg_piece){gi->src, gi->ref, k->g_cols, cols_of(gf, v, p->s), 0, 0};
        if (gi->src == IR_GSRC_NEXT || gi->src == IR_GSRC_STATE) {
            pc->rec_off = k->next_off[gi->ref];
            pc->init_off = k->init_off[gi->ref];
        }
        for (int i = 0; gi->src == IR_GSRC_SAVED && i < k->g.n_saved; i++)
            if (k->g.saved[i] == gi->ref)
                pc->rec_off = k->saved_off[i];
        if (pc->rec_off < 0)
            return unsupported("the backward recurrence reads a value of the input row",
                               p->f->name);
        p->piece[v] = 1;
        p->off[v] = k->g_cols;
        k->g_cols += pc->cols;
    }
    for (int32_t v = 0; v < gf->n; v++) {
        if (!p->export_[v])
            continue;
        if (!fg_in_units(gf->nodes[v].cols))
            return unsupported("a gradient operand is not a sum of H and P wide", p->f->name);
        p->off[v] = k->dg_cols;
        k->dg_cols += cols_of(gf, v, p->s);
    }
    return RNNC_OK;
}

/* ---------------------------------------------------------------- row cell */

/* What the row outputs read, back to the row cell's leaves: x, parameters,
 * constants, recomputed saved values and input products, which become D
 * columns made by post GEMMs from their operands (marked here as other
 * post operands are).  Anything else is the recurrence's. */
static rnnc_status mark_row_leaves(split *p)
{
    const ir_fn *gf = p->gf;
    uint8_t *need = p->rowout;
    for (int32_t v = gf->n - 1; v >= 0; v--) {
        if (!need[v] || input_slot(gf, v) >= 0)
            continue;
        for (int j = 0; j < 3; j++) {
            int32_t a = gf->nodes[v].a[j], op = a >= 0 ? gf->nodes[a].op : -1;
            if (a < 0 || layer_input(p, a) >= 0 || op == IR_PARAM || op == IR_CONST)
                continue;
            if (p->rowdep[a] && !need[a])
                need[a] = 2; /* read by row work, not an output */
            else if (input_product(p, a) && p->doff[a] < 0) {
                p->doff[a] = 0;
                (void)operand(p, gf->nodes[a].a[0], 0);
            } else if (!p->rowdep[a] && !input_product(p, a))
                return unsupported("row work reads the backward recurrence's values",
                                   p->f->name);
        }
    }
    return RNNC_OK;
}

/* D's columns (the products, in node order) and R's (the outputs, need 1). */
static rnnc_status place_rows(split *p)
{
    fg_kind *k = p->k;
    for (int32_t v = 0; v < p->gf->n; v++) {
        if (p->doff[v] >= 0) {
            p->doff[v] = k->d_cols;
            k->d_cols += cols_of(p->gf, v, p->s);
        }
        if (p->rowout[v] != 1)
            continue;
        if (k->n_row >= FG_MAX)
            return unsupported("too many row values", p->f->name);
        p->off[v] = k->row_cols;
        k->row_src[k->n_row] = v;
        k->row_off[k->n_row++] = k->row_cols;
        k->row_cols += cols_of(p->gf, v, p->s);
    }
    return RNNC_OK;
}

/* The products' GEMMs, which post_ops runs before the row cell. */
static rnnc_status add_products(split *p)
{
    rnnc_status st = RNNC_OK;
    for (int32_t v = 0; st == RNNC_OK && v < p->gf->n; v++) {
        const ir_node *n = &p->gf->nodes[v];
        if (p->doff[v] < 0)
            continue;
        fg_op op = {.kind = FG_LINT, .param = -1, .wparam = ir_param_of(p->gf, n->a[1]),
                    .d_off = p->doff[v], .a = operand(p, n->a[0], 1)};
        st = op.wparam < 0 ? unsupported("linear_t of a non-parameter matrix", p->f->name)
                           : add_op(p, op, 1);
    }
    return st;
}

/* ---------------------------------------------------------------- recurrence cell */

static rnnc_status declare_like(ir_fn *dst, const ir_fn *src, int32_t v, const char *name,
                                bool transpose, int32_t *out)
{
    const ir_node *n = &src->nodes[v];
    ir_dim rows = transpose ? n->cols : n->rows, cols = transpose ? n->rows : n->cols;
    if (n->op == IR_STATE)
        return ir_decl_state(dst, name, cols, out);
    return ir_decl_param(dst, name, n->kind == IR_MAT ? &rows : NULL, cols, false, out);
}


static rnnc_status transposed(split *p, ir_fn *dst, int32_t w, int32_t *out)
{
    fg_kind *k = p->k;
    int param = ir_param_of(p->gf, w);
    for (int j = 0; j < k->n_t; j++)
        if (k->t_of[j] == param) {
            *out = dst->params[k->n_fwd_params + j].node;
            return RNNC_OK;
        }
    if (param < 0 || k->n_t >= FG_MAX)
        return unsupported("linear_t of a non-parameter matrix", p->f->name);
    char name[160];
    snprintf(name, sizeof name, "%s_T", p->gf->params[param].name);
    k->t_of[k->n_t++] = param;
    return declare_like(dst, p->gf, w, name, true, out);
}

static rnnc_status emit_body(split *p, ir_fn *dst, const uint8_t *live, int32_t *map)
{
    const ir_fn *gf = p->gf;
    for (int32_t i = 0; i < gf->n; i++) {
        ir_node n = gf->nodes[i];
        if (!live[i] || map[i] >= 0)
            continue;
        for (int j = 0; j < 3; j++)
            if (n.a[j] >= 0)
                n.a[j] = map[n.a[j]];
        rnnc_status st;
        if (n.op == IR_LINEAR_T) {
            int32_t wt;
            if ((st = transposed(p, dst, gf->nodes[i].a[1], &wt)) ||
                (st = ir_emit_node(dst, &(ir_node){.op = IR_LINEAR, .a = {n.a[0], wt, -1}},
                                   &map[i])))
                return st;
            continue;
        }
        if (n.op == IR_INPUT || n.op == IR_STATE || n.op == IR_PARAM)
            return err_fail(RNNC_ERR_INTERNAL, "fused backward: undeclared leaf %d", i);
        if ((st = ir_emit_node(dst, &n, &map[i])))
            return st;
    }
    return RNNC_OK;
}

static rnnc_status emit_bwd(split *p, ir_fn *dst, const uint8_t *live, int32_t *map)
{
    const ir_fn *gf = p->gf;
    rnnc_status st = RNNC_OK;
    for (int i = 0; st == RNNC_OK && i < gf->n_params; i++)
        st = declare_like(dst, gf, gf->params[i].node, gf->params[i].name, false,
                          &map[gf->params[i].node]);
    for (int i = 0; st == RNNC_OK && i < gf->n_states; i++)
        st = declare_like(dst, gf, gf->states[i].node, gf->states[i].name, false,
                          &map[gf->states[i].node]);
    /* bin holds the pieces place() laid out, in its order; each live one
     * is read as a slice at its offset. */
    ir_dim w = ir_dim_const(0), at = ir_dim_const(0);
    for (int j = 0; j < gf->n_inputs; j++)
        if (p->piece[gf->inputs[j].node])
            w = ir_dim_add(w, gf->nodes[gf->inputs[j].node].cols);
    int32_t bin = -1;
    if (st == RNNC_OK)
        st = ir_decl_input(dst, "bin", w, &bin);
    for (int j = 0; st == RNNC_OK && j < gf->n_inputs; j++) {
        int32_t v = gf->inputs[j].node;
        if (!p->piece[v])
            continue;
        ir_node n = {.op = IR_SLICE, .a = {bin, -1, -1}, .rows = at, .cols = gf->nodes[v].cols};
        if (live[v])
            st = ir_emit_node(dst, &n, &map[v]);
        at = ir_dim_add(at, n.cols);
    }
    if (st == RNNC_OK)
        st = emit_body(p, dst, live, map);
    int32_t out = -1;
    for (int32_t v = 0; st == RNNC_OK && v < gf->n; v++)
        if (p->export_[v])
            st = concat_into(dst, &out, map[v]);
    if (st != RNNC_OK)
        return st;
    for (int i = 0; i < gf->n_states; i++)
        dst->states[i].next = map[gf->states[i].next];
    dst->output = out >= 0 ? out : dst->states[0].next;
    return ir_verify(dst);
}

static rnnc_status build_bwd(const ir_fn *f, ir_sizes s, fg_kind *k)
{
    const ir_fn *gf = k->g.fn;
    size_t n = (size_t)gf->n + 1;
    split p = {gf, f, s, k, calloc(n, 1), calloc(n, 1), calloc(n, 1), calloc(n, 1),
               malloc(n * sizeof(int64_t)), calloc(n, sizeof(int64_t))};
    uint8_t *live = calloc(n, 1);
    int32_t *map = malloc(n * sizeof *map);
    rnnc_status st = RNNC_OK;
    if (!p.piece || !p.export_ || !p.rowdep || !p.rowout || !p.doff || !p.off || !live || !map) {
        st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused backward: out of memory");
        goto free_all;
    }
    for (size_t i = 0; i < n; i++)
        map[i] = -1, p.doff[i] = -1;
    k->n_fwd_params = gf->n_params;
    mark_rowdep(&p);
    char name[160];
    snprintf(name, sizeof name, "%s_backward", f->name);
    if ((st = walk_all(&p, 0)) || (st = mark_row_leaves(&p)) || (st = place(&p, live)) ||
        (st = place_rows(&p)) || (st = walk_all(&p, 1)) || (st = add_products(&p)) ||
        (st = rnnc_cell_create(&k->bwd, name)))
        goto free_all;
    st = emit_bwd(&p, k->bwd, live, map);
    if (st == RNNC_OK && k->n_row > 0)
        st = fg_rows_build(f, p.doff, k);
free_all:
    free(map);
    free(live);
    free(p.off);
    free(p.doff);
    free(p.rowout);
    free(p.rowdep);
    free(p.export_);
    free(p.piece);
    return st;
}

static bool hoists_reduction(const ir_fn *f, const ir_schedule *s)
{
    for (int32_t i = 0; i < f->n; i++)
        if (s->hoist.part[i] == IR_PART_HOIST &&
            ((ir_ops[f->nodes[i].op].flags & IR_F_REDUCE) || f->nodes[i].op == IR_LAYERNORM))
            return true;
    return false;
}

/* The backward cell's schedule.  Its hoisted work is element-wise values of
 * the step inputs (the gates' derivatives): computed in the step they cost
 * the same, where a hoisted row kernel adds a pass over every row and a
 * buffer (238 of ~4000 us at LSTM 512, B=64), so only matmuls are hoisted
 * -- unless a reduction is hoisted (layernorm_lstm's statistics of the
 * saved pre-activations), which every block of the step would otherwise
 * recompute over whole rows at every step. */
static rnnc_status bwd_schedule(fg_kind *k, ir_arena *a)
{
    rnnc_status st = pass_fuse(k->bwd, RNNC_HOIST_ALL, a, &k->bwd_sched);
    if (st == RNNC_OK && !hoists_reduction(k->bwd, &k->bwd_sched))
        st = pass_fuse(k->bwd, RNNC_HOIST_MATMUL, a, &k->bwd_sched);
    return st;
}

/* The recurrence cell's step multiplies the 4H-wide gate gradients (an
 * LSTM's) by W_hh^T, so the heuristic's tiling stages 4 times the columns
 * of the forward's in chunks of them.  Batch tiles of 8 rows put more
 * units in a block, stream W_hh^T from L2 instead and stage a block's 8
 * rows whole, one barrier a step: training LSTM I = H = 512 at B = 32, 64,
 * 128, 256 9%, 2%, 9%, 13% faster, I = H = 1024 at B = 64 and 256 21% and
 * 19%, a GRU at B = 256 11%, a bidirectional LSTM 17%, the layernorm LSTM
 * 8% (H200, bench/results/h200/training/bt8/).  Measured from B = 32 to
 * 256; elsewhere the heuristic's (0). */
int fg_bwd_batch_tile(int64_t batch)
{
    return batch >= 32 && batch <= 256 ? 8 : 0;
}

/* The site and p of the cell's dropout of its input where that op is the
 * input's only reader (as the forward's kernels take it), else -1. */
static void input_dropout(const ir_fn *f, fg_kind *k)
{
    int reads = 0;
    k->x_site = -1;
    for (int32_t i = 0; i < f->n; i++)
        for (int j = 0; j < 3; j++)
            if (f->nodes[i].a[j] >= 0 && f->nodes[f->nodes[i].a[j]].op == IR_INPUT) {
                reads++;
                if (f->nodes[i].op == IR_DROPOUT && f->nodes[i].f > 0.0) {
                    k->x_site = f->nodes[i].i1;
                    k->x_p = f->nodes[i].f;
                }
            }
    if (reads != 1)
        k->x_site = -1;
}

rnnc_status fg_kind_build(const ir_fn *f, ir_sizes s, ir_arena *a, fg_kind *k)
{
    memset(k, 0, sizeof *k);
    if (drops_input_and_more(f))
        return unsupported("the cell's input read both dropped and otherwise", f->name);
    input_dropout(f, k);
    if (f->n_states > FG_MAX)
        return unsupported("too many states", f->name);
    for (int i = 0; i < f->n_states; i++) {
        k->init_off[i] = k->init_cols;
        k->init_cols += cols_of(f, f->states[i].node, s);
    }
    rnnc_status st = ir_autodiff(f, &k->g);
    if (st == RNNC_OK && k->g.n_saved > FG_MAX)
        st = unsupported("too many saved values", f->name);
    if (st == RNNC_OK)
        st = build_record(f, s, k);
    if (st == RNNC_OK)
        st = build_bwd(f, s, k);
    if (st == RNNC_OK)
        st = pass_fuse(k->rec, RNNC_HOIST_ALL, a, &k->rec_sched);
    if (st == RNNC_OK)
        st = bwd_schedule(k, a);
    return st;
}

void fg_kind_free(fg_kind *k)
{
    if (!k)
        return;
    rnnc_cell_destroy(k->rec);
    rnnc_cell_destroy(k->bwd);
    rnnc_cell_destroy(k->row);
    if (k->g.fn)
        ir_grad_free(&k->g);
    memset(k, 0, sizeof *k);
}
