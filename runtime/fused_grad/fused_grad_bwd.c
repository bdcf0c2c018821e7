/*
 * fused_grad_bwd.c: the fused backend's backward (fused_grad.h), its
 * weight gradients and its training timer.  Per layer, last first, and
 * direction: gather the step inputs into G, run the recurrence cell
 * backwards in time (d_states from dfinal; the reverse direction's
 * backward walks forward), then the post ops over all T*B rows: dW +=
 * A^T B, db += colsum, and dx += D W into the layer's input gradient,
 * which both directions share and the layer below reads as its dy.  The
 * two directions run side by side where the model has two sides
 * (rt_fgrad.sides), their dx terms after both are done.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/fused_grad/fused_grad.h"

#ifdef RT_HAVE_CUDA_H

typedef struct view {
    CUdeviceptr p;
    int ld;
} view;

static view where(const rt_fgrad *g, const fg_side *sd, int k, CUdeviceptr x, int ldx,
                  const fg_operand *o)
{
    switch (o->where) {
    case FG_X: return (view){x + (CUdeviceptr)o->off * 4, ldx};
    case FG_XD: return (view){sd->xd.p + (CUdeviceptr)o->off * 4, ldx};
    case FG_G: return (view){sd->g.p + (CUdeviceptr)o->off * 4, (int)g->kind[k].g_cols};
    case FG_D: return (view){sd->d.p + (CUdeviceptr)o->off * 4, (int)g->kind[k].d_cols};
    case FG_R: return (view){sd->r.p + (CUdeviceptr)o->off * 4, (int)g->kind[k].row_cols};
    default: return (view){sd->dg.p + (CUdeviceptr)o->off * 4, (int)g->bwd[k].plan.out_cols};
    }
}

/* An earlier column sum of op i's operand, or -1. */
static int same_rowsum(const fg_kind *kd, int i)
{
    const fg_operand *a = &kd->op[i].a;
    for (int j = 0; j < i; j++) {
        const fg_op *o = &kd->op[j];
        if (o->kind == FG_ROWSUM && o->a.where == a->where && o->a.off == a->off &&
            o->a.cols == a->cols)
            return j;
    }
    return -1;
}

/* dx += mask(D W): the term in tmp, then added under the mask the forward
 * drew for pseudo-layer p's input (both directions add into dx on one
 * stream, one after the other, so tmp is free). */
static rnnc_status masked_dx(rt_fused *m, rt_fgrad *g, int k, int p, view a, CUdeviceptr w,
                             int n, CUstream s)
{
    int R = (int)(g->T * g->B), I = (int)m->spec.sizes[k].I;
    rt_fused_mask_job j = {.dst = g->dxl.p, .src = g->tmp.p, .T = g->T, .B = g->B, .W = I,
                           .add = true, .site = rt_dropout_site_cell(p, g->kind[k].x_site),
                           .p = g->kind[k].x_p};
    rnnc_status st = rt_dev_zero(g->tmp.p, (size_t)R * (size_t)I * 4, s);
    if (st == RNNC_OK)
        st = fg_gemm(g, g->tmp.p, I, a.p, a.ld, 1, w, I, 1, R, I, n, s);
    return st ? st : rt_fused_mask(m, &j, s);
}

/* Post op i of pseudo-layer p from side sd's buffers. */
static rnnc_status post_op(rt_fused *m, rt_fgrad *g, const fg_side *sd, int k, int p, int i,
                           CUdeviceptr x, CUstream s)
{
    const fg_kind *kd = &g->kind[k];
    const fg_op *op = &kd->op[i];
    int R = (int)(g->T * g->B), I = (int)m->spec.sizes[k].I;
    view a = where(g, sd, k, x, I, &op->a), b = where(g, sd, k, x, I, &op->b);
    int64_t at = op->param >= 0 ? g->hw_off[p * g->npar + op->param] : 0;
    CUdeviceptr dw = g->dw + (CUdeviceptr)at * 4;
    switch (op->kind) {
    case FG_OUTER: /* dW[M = a cols, N = b cols] += A^T B */
        return fg_gemm(g, dw, (int)op->b.cols, a.p, 1, a.ld, b.p, b.ld, 1, (int)op->a.cols,
                       (int)op->b.cols, R, s);
    case FG_ROWSUM: {
        /* two biases of one sum (an LSTM's b_ih and b_hh) have one gradient */
        int j = same_rowsum(kd, i);
        int64_t at_j = j < 0 ? 0 : g->hw_off[p * g->npar + kd->op[j].param];
        CUdeviceptr done = g->dw + (CUdeviceptr)at_j * 4;
        return j < 0 ? fg_colsum(g, dw, a.p, a.ld, R, (int)op->a.cols, s)
                     : rt_dev_copy(dw, done, (size_t)op->a.cols * 4, s);
    }
    case FG_ROWDX: /* dx += the row cell's term */
        return fg_copy_cols(g, g->dxl.p, I, a.p, a.ld, R, (int)op->a.cols, true, s);
    default: break;
    }
    /* [R, N] += D[R, n] W[n, N]: into dx (through the mask of x's dropout)
     * or, for the row cell, into D */
    const ir_node *wn = &m->spec.fn[k]->nodes[m->spec.fn[k]->params[op->wparam].node];
    int N = (int)ir_dim_eval(wn->cols, m->spec.sizes[k]);
    CUdeviceptr w = g->plain + (CUdeviceptr)g->hw_off[p * g->npar + op->wparam] * 4;
    if (op->d_off >= 0)
        return fg_gemm(g, sd->d.p + (CUdeviceptr)op->d_off * 4, (int)kd->d_cols, a.p, a.ld, 1, w,
                       N, 1, R, N, (int)op->a.cols, s);
    return op->drop ? masked_dx(m, g, k, p, a, w, (int)op->a.cols, s)
                    : fg_gemm(g, g->dxl.p, I, a.p, a.ld, 1, w, I, 1, R, I, (int)op->a.cols, s);
}

/* When an op runs: the row cell's products before its kernel (row_cell),
 * the weight gradients after it, dx's terms once both directions are done. */
enum { FG_FOR_ROWS, FG_FOR_DW, FG_FOR_DX };

static int when(const fg_op *op)
{
    if (op->kind == FG_LINT)
        return op->d_off >= 0 ? FG_FOR_ROWS : FG_FOR_DX;
    return op->kind == FG_ROWDX ? FG_FOR_DX : FG_FOR_DW;
}

/* The row cell of pseudo-layer p over all T*B rows: D's products first,
 * then its kernel, which writes R. */
static rnnc_status row_cell(rt_fused *m, rt_fgrad *g, const fg_side *sd, int k, int p,
                            CUdeviceptr x, CUstream s)
{
    const fg_kind *kd = &g->kind[k];
    long long rows = g->T * g->B;
    rnnc_status st = rt_dev_zero(sd->d.p, (size_t)rows * (size_t)kd->d_cols * 4, s);
    for (int i = 0; st == RNNC_OK && i < kd->n_ops; i++)
        if (when(&kd->op[i]) == FG_FOR_ROWS)
            st = post_op(m, g, sd, k, p, i, x, s);
    CUdeviceptr d = sd->d.p, w = g->plain + (CUdeviceptr)g->hw_off[p * g->npar] * 4, r = sd->r.p;
    void *args[] = {&x, &d, &w, &r, &rows};
    unsigned grid[3] = {(unsigned)rows, 1, 1}, block[3] = {256, 1, 1};
    return st ? st : rt_launch(g->row[k].fn[0], grid, block, g->row_smem[k], s, args, false);
}

/* Pseudo-layer p's post ops from side sd's buffers: the weight gradients
 * (dx false; the row cell first where there is one) or its terms of dx
 * (true), which both directions add into one buffer, so they run on one
 * stream. */
static rnnc_status post_ops(rt_fused *m, rt_fgrad *g, const fg_side *sd, int k, int p, bool dx,
                            CUdeviceptr x, CUstream s)
{
    const fg_kind *kd = &g->kind[k];
    rnnc_status st = !dx && kd->row ? row_cell(m, g, sd, k, p, x, s) : RNNC_OK;
    for (int i = 0; st == RNNC_OK && i < kd->n_ops; i++)
        if (when(&kd->op[i]) == (dx ? FG_FOR_DX : FG_FOR_DW))
            st = post_op(m, g, sd, k, p, i, x, s);
    return st;
}

static rnnc_status gather(rt_fused *m, rt_fgrad *g, fg_side *sd, int k, int p, int d, CUstream s)
{
    const fg_kind *kd = &g->kind[k];
    CUdeviceptr G = sd->g.p, rec = fg_rec_at(g, p), din = g->din.p, init = fg_init_at(g, p);
    CUdeviceptr len = g->has_len ? g->dlen.p : 0, desc = g->ddesc[k].p;
    int gc = (int)kd->g_cols, rc = (int)kd->rec_cols, dld = (int)(m->spec.dirs * m->spec.hout);
    int doff = d * (int)m->spec.hout, T = (int)g->T, B = (int)g->B, rev = d;
    void *args[] = {&G, &gc, &rec, &rc, &din, &dld, &doff, &init, &len, &T, &B, &rev, &desc};
    if (kd->n_pieces == 0)
        return RNNC_OK;
    /* a warp per row and piece, 8 rows a block */
    unsigned grid[3] = {(unsigned)(((long long)T * B + 7) / 8), (unsigned)kd->n_pieces, 1};
    unsigned block[3] = {256, 1, 1};
    return rt_launch(g->util.fn[FG_K_GATHER], grid, block, 0, s, args, false);
}

/* Direction d of layer l on stream s: gather its step inputs, walk the
 * recurrence cell backwards in time from dfinal, then the weight
 * gradients. */
static rnnc_status dir_back(rt_fused *m, rt_fgrad *g, const rnnc_backward_args *b, int l, int d,
                            CUstream s)
{
    int k = l > 0, D = m->spec.dirs, p = l * D + d;
    const fg_set *set = &g->bwd[k];
    fg_side *sd = &g->side[d % g->sides];
    CUdeviceptr x = l ? fg_out_at(m, g, l - 1) : g->xt.p;
    CUdeviceptr wts = g->bwts + (CUdeviceptr)fg_at(g, D, p, g->bwd_w) * 4;
    CUdeviceptr fold = g->bfold + (CUdeviceptr)fg_at(g, D, p, g->bwd_f) * 4;
    rnnc_status st;
    if ((st = gather(m, g, sd, k, p, d, s)) ||
        (st = fg_states_in(m, g, sd, &set->plan, b->dfinal, p, s)) ||
        (st = fg_launch_set(m, sd, set, p, sd->g.p, sd->dg.p, wts, fold, !d, s)))
        return st;
    /* the weight gradients over x dropped read the forward's mask again
     * (the side's copy belongs to the pseudo-layer recorded last) */
    if (g->kind[k].x_site >= 0 && (st = fg_drop_input(m, g, sd, k, p, x, s)))
        return st;
    return post_ops(m, g, sd, k, p, false, x, s);
}

static rnnc_status dinit_out(rt_fused *m, rt_fgrad *g, const rnnc_backward_args *b, int l,
                             int d, CUstream s)
{
    return fg_states_out(m, g, &g->side[d % g->sides], &g->bwd[l > 0].plan, b->dinit,
                         l * m->spec.dirs + d, s);
}

/* Direction d's terms of dx, which both directions add into one buffer. */
static rnnc_status dx_terms(rt_fused *m, rt_fgrad *g, int l, int d, CUstream s)
{
    CUdeviceptr x = l ? fg_out_at(m, g, l - 1) : g->xt.p;
    return post_ops(m, g, &g->side[d % g->sides], l > 0, l * m->spec.dirs + d, true, x, s);
}

/* A layer's directions, side by side where there are two sides: then
 * dinit goes out once both have launched (a download into host memory
 * returns when its kernel is done) and dx once both are done; with one
 * side the next direction reuses the buffers, so each finishes first. */
static rnnc_status layer_back(rt_fused *m, rt_fgrad *g, const rnnc_backward_args *b, int l,
                              CUstream s)
{
    int D = m->spec.dirs;
    bool both = g->sides > 1;
    rnnc_status st = rt_dev_zero(g->dxl.p, (size_t)(g->T * g->B * m->spec.sizes[l > 0].I) * 4, s);
    if (st == RNNC_OK && both)
        st = rt_fused_fork(m, s);
    for (int d = 0; st == RNNC_OK && d < D; d++) {
        st = dir_back(m, g, b, l, d, fg_side_stream(m, d, s));
        if (st == RNNC_OK && !both && (st = dinit_out(m, g, b, l, d, s)) == RNNC_OK)
            st = dx_terms(m, g, l, d, s);
    }
    if (st != RNNC_OK || !both)
        return st;
    for (int d = 0; st == RNNC_OK && d < D; d++)
        st = dinit_out(m, g, b, l, d, fg_side_stream(m, d, s));
    if (st == RNNC_OK)
        st = rt_fused_join(m, s);
    for (int d = 0; st == RNNC_OK && d < D; d++)
        st = dx_terms(m, g, l, d, s);
    return st;
}

rnnc_status rt_fgrad_backward(void *state, const rnnc_backward_args *b)
{
    rt_fused *m = state;
    rt_fgrad *g = m->grad;
    if (!b)
        return err_fail(RNNC_ERR_INVALID_ARG, "fused backward: NULL arguments");
    if (g && g->checked && g->status != RNNC_OK)
        return err_fail(g->status, "%s", g->why);
    if (!g || !g->valid)
        return err_fail(RNNC_ERR_STATE, "backward needs a training forward first (the last "
                                        "forward was inference, or was already differentiated)");
    CUstream s = g->stream;
    int W = (int)(m->spec.dirs * m->spec.hout);
    g->valid = false;
    g->have_grad = false;
    g->dw_host_valid = false;
    rnnc_status st = rt_cuda_context(m->spec.device);
    if (st == RNNC_OK)
        st = b->dy ? fg_seq_in(m, g, g->din.p, b->dy, W, s)
                   : rt_dev_zero(g->din.p, (size_t)(g->T * g->B * W) * 4, s);
    if (st == RNNC_OK)
        st = rt_dev_zero(g->dw, (size_t)g->hw_floats * 4, s);
    for (int l = m->spec.layers - 1; st == RNNC_OK && l >= 0; l--) {
        st = layer_back(m, g, b, l, s);
        fg_buf t = g->din; /* this layer's dx is the dy of the layer below */
        g->din = g->dxl;
        g->dxl = t;
        /* ... through the same dropout mask and scale as the forward's */
        if (st == RNNC_OK && l > 0 && m->spec.dropout > 0)
            st = rt_fused_dropout(m, l - 1, g->din.p, g->T, g->B, false, s);
    }
    if (st == RNNC_OK && b->dx)
        st = fg_seq_out(m, g, b->dx, g->din.p, (int)m->spec.sizes[0].I, s);
    if (st == RNNC_OK && !g->dev)
        st = rt_dev_sync(s);
    g->have_grad = st == RNNC_OK;
    return st;
}

rnnc_status rt_fgrad_weight_grad(void *state, int pseudo, int param, float *out, int64_t count)
{
    rt_fused *m = state;
    rt_fgrad *g = m->grad;
    if (!g || !g->have_grad)
        return err_fail(RNNC_ERR_STATE, "no weight gradients yet: call backward after a "
                                        "training forward");
    if (pseudo < 0 || pseudo >= g->np || param < 0 || param >= g->npar ||
        count != g->hw_cnt[pseudo * g->npar + param])
        return err_fail(RNNC_ERR_INVALID_ARG, "fused weight_grad: bad weight or count");
    if (!g->dw_host_valid) {
        float *h = realloc(g->dw_host, sizeof(float) * (size_t)(g->hw_floats + 4));
        if (!h)
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused backward: out of memory");
        g->dw_host = h;
        rnnc_status st = rt_cuda_context(m->spec.device);
        if (st == RNNC_OK)
            st = rt_dev_download(h, g->dw, (size_t)g->hw_floats * 4, g->stream);
        if (st == RNNC_OK)
            st = rt_dev_sync(g->stream);
        if (st != RNNC_OK)
            return st;
        g->dw_host_valid = true;
    }
    memcpy(out, g->dw_host + g->hw_off[pseudo * g->npar + param], sizeof(float) * (size_t)count);
    return RNNC_OK;
}

/* ---------------------------------------------------------------- timing */

typedef struct train_call {
    rt_fused *m;
    rnnc_forward_args f;
    rnnc_backward_args b;
} train_call;

static rnnc_status train_once(void *ctx, CUstream s)
{
    train_call *c = ctx;
    c->f.stream = s;
    rnnc_status st = rt_fgrad_forward(c->m, &c->f);
    return st ? st : rt_fgrad_backward(c->m, &c->b);
}

/* Device copies of x, y, dy, dx: the timed steps run on the device alone,
 * as cudnn's timing does (zero initial states, no final ones). */
rnnc_status rt_fgrad_time_training(void *state, const rnnc_forward_args *f,
                                   const rnnc_backward_args *b, int warmup, int iters,
                                   double *median_ms)
{
    rt_fused *m = state;
    rnnc_status st = rt_fgrad_check(m);
    if (st == RNNC_OK)
        st = rt_fgrad_forward(m, f);
    if (st == RNNC_OK)
        st = rt_fgrad_backward(m, b);
    if (st != RNNC_OK || f->device_pointers)
        return st ? st : rt_time_ms(train_once, &(train_call){m, *f, *b}, (CUstream)f->stream,
                                    warmup, iters, median_ms);
    /* the caller's elements: 16-bit in a half model */
    size_t TB = (size_t)(f->seq_len * f->batch), es = rt_fused_esz(m);
    size_t nx = TB * (size_t)m->spec.sizes[0].I * es, ny = TB * (size_t)(m->spec.dirs * m->spec.hout) * es;
    CUdeviceptr x = 0, y = 0, dy = 0, dx = 0;
    if ((st = rt_dev_alloc(&x, nx)) || (st = rt_dev_alloc(&y, ny)) || (st = rt_dev_alloc(&dy, ny)) ||
        (st = rt_dev_alloc(&dx, nx)) || (st = rt_dev_upload(x, f->x, nx, NULL)) ||
        (st = (b->dy ? rt_dev_upload(dy, b->dy, ny, NULL) : rt_dev_zero(dy, ny, NULL))))
        goto free_bufs;
    train_call c = {m, *f, {(const void *)(uintptr_t)dy, NULL, (void *)(uintptr_t)dx, NULL}};
    c.f.device_pointers = true;
    c.f.x = (const void *)(uintptr_t)x;
    c.f.y = (void *)(uintptr_t)y;
    c.f.init = NULL, c.f.final = NULL;
    st = rt_time_ms(train_once, &c, (CUstream)f->stream, warmup, iters, median_ms);
    /* the caller's outputs and gradients are those of its own buffers */
    if (st == RNNC_OK && (st = rt_fgrad_forward(m, f)) == RNNC_OK)
        st = rt_fgrad_backward(m, b);
free_bufs:
    rt_dev_free(x), rt_dev_free(y), rt_dev_free(dy), rt_dev_free(dx);
    return st;
}

#endif /* RT_HAVE_CUDA_H */
