/*
 * fused_grad_rows.c: the fused backward's row cell (fused_grad.h,
 * docs/training.md): the part of the backward step that is row work on the
 * layer input, such as a pre-LN layernorm's backward through x's row
 * statistics.  It runs after the post GEMMs, over all T*B rows at once,
 * with no state: its inputs are x (in0) and D (in1), the linear_t
 * products of the input's width it reads; saved values of the input row
 * (layernorm(x)) are made again from x rather than recorded, as they are
 * I wide and the record's columns must be H and P wide.  The CUDA
 * generator writes its kernel (codegen/cuda/cuda_rowcell.c).
 * Requires: fused_grad_ir.c's split (k->row_src, k->row_off, the D leaves).
 * Keeps: the backward step and the forward cell unchanged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/fused_grad/fused_grad.h"

bool fg_in_units(ir_dim d)
{
    return d.c == 0 && d.i == 0 && d.h >= 0 && d.p >= 0 && d.h + d.p > 0;
}

bool fg_recomputed(const ir_fn *f, int32_t v)
{
    if (f->nodes[v].kind != IR_ROW || fg_in_units(f->nodes[v].cols))
        return false;
    uint8_t *need = calloc((size_t)v + 1, 1);
    bool ok = need != NULL;
    if (ok)
        need[v] = 1;
    for (int32_t u = v; ok && u >= 0; u--) {
        const ir_node *n = &f->nodes[u];
        if (!need[u])
            continue;
        ok = n->op != IR_STATE && n->op != IR_LINEAR && n->op != IR_DROPOUT;
        for (int j = 0; j < 3; j++)
            if (n->a[j] >= 0)
                need[n->a[j]] = 1;
    }
    free(need);
    return ok;
}

static rnnc_status copy_node(ir_fn *dst, const ir_node *src, const int32_t *map, int32_t *out)
{
    ir_node n = *src;
    for (int j = 0; j < 3; j++)
        if (n.a[j] >= 0 && (n.a[j] = map[n.a[j]]) < 0)
            return err_fail(RNNC_ERR_INTERNAL, "row cell: an operand not made yet");
    if (n.op == IR_CONST)
        return ir_emit_const(dst, n.f, out);
    return ir_emit_node(dst, &n, out);
}

/* Forward node v of f in the row cell: its subgraph over x, parameters and
 * constants copied (fmap: f's nodes there; x and the parameters set). */
static rnnc_status recompute(const ir_fn *f, int32_t v, ir_fn *dst, int32_t *fmap)
{
    uint8_t *need = calloc((size_t)v + 1, 1);
    if (!need)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "row cell: out of memory");
    need[v] = 1;
    for (int32_t u = v; u >= 0; u--)
        for (int j = 0; need[u] && j < 3; j++)
            if (f->nodes[u].a[j] >= 0)
                need[f->nodes[u].a[j]] = 1;
    rnnc_status st = RNNC_OK;
    for (int32_t u = 0; st == RNNC_OK && u <= v; u++)
        if (need[u] && fmap[u] < 0)
            st = copy_node(dst, &f->nodes[u], fmap, &fmap[u]);
    free(need);
    return st;
}

/* The declarations: every parameter of the backward step (the forward's,
 * same order), x as in0 and D as in1. */
static rnnc_status declare(const ir_fn *f, const ir_fn *gf, const int64_t *doff, ir_fn *dst,
                           int32_t *map, int32_t *fmap, int32_t *d)
{
    rnnc_status st = RNNC_OK;
    for (int i = 0; st == RNNC_OK && i < gf->n_params; i++) {
        const ir_node *n = &gf->nodes[gf->params[i].node];
        st = ir_decl_param(dst, gf->params[i].name, n->kind == IR_MAT ? &n->rows : NULL, n->cols,
                           false, &map[gf->params[i].node]);
        if (st == RNNC_OK && i < f->n_params)
            fmap[f->params[i].node] = map[gf->params[i].node];
    }
    int32_t x = f->inputs[0].node;
    ir_dim w = ir_dim_const(0);
    for (int32_t v = 0; v < gf->n; v++)
        if (doff[v] >= 0)
            w = ir_dim_add(w, gf->nodes[v].cols);
    if (st == RNNC_OK)
        st = ir_decl_input(dst, "x", f->nodes[x].cols, &fmap[x]);
    if (st == RNNC_OK)
        st = ir_decl_input(dst, "d", w, d);
    return st;
}

/* Backward step node v in the row cell. */
static rnnc_status emit_row_node(const ir_fn *f, const fg_kind *k, const int64_t *doff, int32_t v,
                                 int32_t d, ir_dim *at, ir_fn *dst, int32_t *map, int32_t *fmap)
{
    const ir_fn *gf = k->g.fn;
    const ir_node *n = &gf->nodes[v];
    if (doff[v] >= 0) { /* an input product: its columns of D */
        ir_node sl = {.op = IR_SLICE, .a = {d, -1, -1}, .rows = *at, .cols = n->cols};
        *at = ir_dim_add(*at, n->cols);
        return ir_emit_node(dst, &sl, &map[v]);
    }
    if (n->op == IR_PARAM)
        return RNNC_OK;
    if (n->op != IR_INPUT)
        return copy_node(dst, n, map, &map[v]);
    const ir_grad_in *gi = &k->g.in[n->i0];
    if (gi->src == IR_GSRC_INPUT) {
        map[v] = fmap[f->inputs[0].node];
        return RNNC_OK;
    }
    if (gi->src != IR_GSRC_SAVED || !fg_recomputed(f, gi->ref))
        return err_fail(RNNC_ERR_INTERNAL, "row cell: reads step input %d", (int)n->i0);
    rnnc_status st = recompute(f, gi->ref, dst, fmap);
    map[v] = fmap[gi->ref];
    return st;
}

rnnc_status fg_rows_build(const ir_fn *f, const int64_t *doff, fg_kind *k)
{
    const ir_fn *gf = k->g.fn;
    size_t n = (size_t)gf->n + (size_t)f->n + 1;
    int32_t *map = malloc(n * sizeof *map), *fmap = map ? map + gf->n : NULL, d = -1;
    uint8_t *need = calloc((size_t)gf->n + 1, 1);
    ir_dim at = ir_dim_const(0);
    char name[160];
    rnnc_status st = RNNC_OK;
    if (!map || !need) {
        st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "row cell: out of memory");
        goto free_maps;
    }
    for (size_t i = 0; i < n; i++)
        map[i] = -1;
    snprintf(name, sizeof name, "%s_rows", f->name);
    if ((st = rnnc_cell_create(&k->row, name)) ||
        (st = declare(f, gf, doff, k->row, map, fmap, &d)))
        goto free_maps;
    for (int i = 0; i < k->n_row; i++)
        need[k->row_src[i]] = 1;
    /* the products are D's leaves, every one a slice in node order */
    for (int32_t v = gf->n - 1; v >= 0; v--)
        for (int j = 0; need[v] && doff[v] < 0 && gf->nodes[v].op != IR_INPUT && j < 3; j++)
            if (gf->nodes[v].a[j] >= 0)
                need[gf->nodes[v].a[j]] = 1;
    for (int32_t v = 0; st == RNNC_OK && v < gf->n; v++) {
        if (doff[v] >= 0 && !need[v]) /* a product only a weight gradient reads */
            at = ir_dim_add(at, gf->nodes[v].cols);
        else if (need[v])
            st = emit_row_node(f, k, doff, v, d, &at, k->row, map, fmap);
    }
    for (int i = 0; st == RNNC_OK && i < k->n_row; i++)
        k->row_node[i] = map[k->row_src[i]];
free_maps:
    free(need);
    free(map);
    return st;
}

int64_t fg_param_offsets(const ir_fn *f, ir_sizes s, int64_t *off)
{
    int64_t at = 0;
    for (int i = 0; i < f->n_params; i++) {
        const ir_node *n = &f->nodes[f->params[i].node];
        int64_t c = ir_dim_eval(n->cols, s) * (n->kind == IR_MAT ? ir_dim_eval(n->rows, s) : 1);
        off[i] = at;
        at += (c + 3) & ~(int64_t)3;
    }
    return at;
}

rnnc_status fg_rows_source(const fg_kind *k, ir_sizes s, const int64_t *param_off, char **src,
                           unsigned *smem)
{
    cg_cuda_rowcell rc = {k->row, s, param_off, k->row_node, k->row_off, k->n_row, k->row_cols};
    return cg_cuda_rowcell_source(&rc, src, smem);
}
