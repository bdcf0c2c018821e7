/*
 * fused_grad.c: training on the fused backend (fused_grad.h).  A training
 * forward runs the record cell per (layer, direction; a bidirectional
 * layer's two side by side where it has two sides), keeping its rows
 * [T, B, y | next states | saved]; the backward walks the layers down and,
 * per direction, gathers each step's inputs (dy, saved values, the states
 * entering and leaving), runs the recurrence cell in the opposite time
 * order from the final states' gradients, then the weight gradients and
 * dx as GEMMs over all T*B rows.  Everything is [T, B, *] inside; batch
 * first tensors are permuted at the edges.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/fused_grad/fused_grad.h"

#ifdef RT_HAVE_CUDA_H

CUstream fg_side_stream(const rt_fused *m, int d, CUstream s)
{
    return m->grad->sides > 1 ? rt_fused_dir_stream(m, d) : s;
}

rnnc_status fg_launch_set(const rt_fused *m, fg_side *sd, const fg_set *set, int p,
                          CUdeviceptr x, CUdeviceptr y, CUdeviceptr wts, CUdeviceptr fold,
                          int rev, CUstream s)
{
    const rt_fgrad *g = m->grad;
    const cg_cuda_plan *pl = &set->plan;
    CUdeviceptr xx = x, yy = y, st = sd->st.p, hz = sd->hz.p, xb = sd->xb.p, part = sd->part.p;
    CUdeviceptr bar = sd->bar.p, len = g->has_len ? g->dlen.p : 0;
    int r = rev, T = (int)g->T;
    /* states through st: the backward reads its copies; the record and
     * the recurrence cells' dropout ops at the forward's sites and times */
    cg_cuda_io io = {.seed = m->spec.seed, .site = rt_dropout_site_cell(p, 0), .drop = 1};
    void *args[] = {&xx, &yy, &st, &hz, &fold, &wts, &xb, &part, &bar, &T, &len, &r, &io};
    if (rt_fused_bar_bytes(pl) > RT_FUSED_BAR_BYTES)
        return err_fail(RNNC_ERR_UNSUPPORTED, "fused backward: persistent grid too large");
    rnnc_status e = pl->xb_zero_floats > 0 ? rt_dev_zero(xb, (size_t)pl->xb_zero_floats * 4, s)
                                           : rt_dev_zero(bar, rt_fused_bar_bytes(pl), s);
    size_t TB = (size_t)T * (size_t)g->B;
    for (int i = 0; e == RNNC_OK && i < pl->n_launch; i++) {
        const cg_cuda_launch *l = &pl->launch[i];
        /* a hoisted GEMM has tiles for long and for short sequences: one runs */
        if (!cg_cuda_launch_runs(l, TB))
            continue;
        unsigned grid[3] = {l->rows_per_block
                                ? (unsigned)((TB + l->rows_per_block - 1) / l->rows_per_block)
                                : l->grid,
                            l->grid_y ? l->grid_y : 1, 1};
        unsigned block[3] = {l->threads, 1, 1};
        e = rt_launch_ex(set->kern.fn[i], grid, block, l->smem, s, args,
                         l->cooperative ? RT_LAUNCH_COOPERATIVE | RT_LAUNCH_CLUSTER(l->cluster)
                                        : 0);
    }
    return e;
}

/* ---------------------------------------------------------------- small kernels */

rnnc_status fg_launch1(rt_fgrad *g, int k, long long n, void **args, CUstream s)
{
    unsigned grid[3] = {(unsigned)((n + 255) / 256), 1, 1}, block[3] = {256, 1, 1};
    return n > 0 ? rt_launch(g->util.fn[k], grid, block, 0, s, args, false) : RNNC_OK;
}

rnnc_status fg_copy_cols(rt_fgrad *g, CUdeviceptr dst, int ldd, CUdeviceptr src, int lds,
                         long long rows, int cols, bool add, CUstream s)
{
    int a = add;
    void *args[] = {&dst, &ldd, &src, &lds, &rows, &cols, &a};
    return fg_launch1(g, FG_K_COPY_COLS, rows * cols, args, s);
}

static rnnc_status fg_permute(rt_fgrad *g, CUdeviceptr dst, CUdeviceptr src, int W, int to_tmajor,
                           CUstream s)
{
    int T = (int)g->T, B = (int)g->B;
    void *args[] = {&dst, &src, &T, &B, &W, &to_tmajor};
    return fg_launch1(g, FG_K_PERMUTE, (long long)T * B * W, args, s);
}

/* The K split of a GEMM with `tiles` output tiles: the fewest slices that
 * fill the device's block slots (two blocks an SM) as well as more would,
 * each slice at least 256 deep. */
static unsigned gemm_split(const rt_fgrad *g, unsigned tiles, int K)
{
    unsigned slots = 2 * (unsigned)g->sm_count, best = 1;
    double best_t = 0;
    for (unsigned split = 1; split <= 16 && (split == 1 || (unsigned)K / split >= 256); split *= 2) {
        /* waves of blocks times the depth of each */
        double t = (double)((tiles * split + slots - 1) / slots) * ((double)K / split);
        if (split == 1 || t < best_t * 0.97)
            best = split, best_t = t;
    }
    return best;
}

static bool aligned16(CUdeviceptr p, long long ld)
{
    return p % 16 == 0 && ld % 4 == 0;
}

/* C (+)= A B over strided views (fg_gemm); K split when the tiles are few.
 * The weight gradients (A along m) and dx (A along k) of real sizes, with
 * B along n, take the 128x128 kernels; the rest the 64x64 one. */
rnnc_status fg_gemm(rt_fgrad *g, CUdeviceptr C, int ldc, CUdeviceptr A, long long sam,
                        long long sak, CUdeviceptr Bm, long long sbk, long long sbn, int M, int N,
                        int K, CUstream s)
{
    bool big = M >= 128 && N >= 128 && sbn == 1 && (sam == 1 || sak == 1);
    int tile = big ? 128 : 64;
    unsigned gx = (unsigned)((N + tile - 1) / tile), gy = (unsigned)((M + tile - 1) / tile);
    unsigned split = gemm_split(g, gx * gy, K);
    int kchunk = (int)(((unsigned)K + split - 1) / split + 15) / 16 * 16;
    unsigned grid[3] = {gx, gy, split}, block[3] = {256, 1, 1};
    if (!big) {
        void *args[] = {&C, &ldc, &A, &sam, &sak, &Bm, &sbk, &sbn, &M, &N, &K, &kchunk};
        return rt_launch(g->util.fn[FG_K_GEMM], grid, block, 0, s, args, false);
    }
    long long lda = sam == 1 ? sak : sam;
    int vec = aligned16(A, lda) && aligned16(Bm, sbk) && aligned16(C, ldc);
    void *args[] = {&C, &ldc, &A, &lda, &Bm, &sbk, &M, &N, &K, &kchunk, &vec};
    return rt_launch(g->util.fn[sam == 1 ? FG_K_GEMM128_AM : FG_K_GEMM128_AK], grid, block, 0, s,
                     args, false);
}

rnnc_status fg_colsum(rt_fgrad *g, CUdeviceptr out, CUdeviceptr A, int lda, int R, int N,
                          CUstream s)
{
    unsigned grid[3] = {(unsigned)((N + 127) / 128), (unsigned)(R >= 2048 ? 64 : 1), 1};
    unsigned block[3] = {128, 1, 1};
    void *args[] = {&out, &A, &lda, &R, &N};
    return rt_launch(g->util.fn[FG_K_COLSUM], grid, block, 0, s, args, false);
}

/* ---------------------------------------------------------------- buffers */

static rnnc_status fg_move(CUdeviceptr dev, const void *user, size_t n, bool user_dev, bool in,
                        CUstream s)
{
    if (user_dev)
        return in ? rt_dev_copy(dev, (CUdeviceptr)(uintptr_t)user, n, s)
                  : rt_dev_copy((CUdeviceptr)(uintptr_t)user, dev, n, s);
    return in ? rt_dev_upload(dev, user, n, s) : rt_dev_download((void *)user, dev, n, s);
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Side i's buffers: the kernels' states, hoisted values, staging,
 * partials and barrier, G and DG, the row cell's D and R (the widest kind's
 * columns of each in cols[]). */
static rnnc_status side_scratch(fg_side *sd, size_t TB, int64_t stf, int64_t hz, int64_t xb,
                                int64_t part, const int64_t cols[4])
{
    rnnc_status st;
    if ((st = fg_grow(&sd->st, (size_t)stf * 12)) || (st = fg_grow(&sd->hz, TB * (size_t)hz * 4)) ||
        (st = fg_grow(&sd->xb, (size_t)xb * 4)) || (st = fg_grow(&sd->part, (size_t)part * 4)) ||
        (st = fg_grow(&sd->bar, RT_FUSED_BAR_BYTES)) ||
        (st = fg_grow(&sd->g, TB * (size_t)cols[0] * 4)) ||
        (st = fg_grow(&sd->dg, TB * (size_t)cols[1] * 4)) ||
        (st = fg_grow(&sd->d, TB * (size_t)cols[2] * 4)))
        return st;
    return fg_grow(&sd->r, TB * (size_t)cols[3] * 4);
}

static rnnc_status scratch(rt_fused *m, rt_fgrad *g)
{
    size_t TB = (size_t)(g->T * g->B), B = (size_t)g->B;
    int64_t stf = 0, hz = 0, xb = 0, part = 0, rec = 0, init = 0, cols[4] = {0};
    for (int k = 0; k < g->n_kinds; k++)
        for (int j = 0; j < 2; j++) {
            const cg_cuda_plan *p = j ? &g->bwd[k].plan : &g->rec[k].plan;
            const fg_kind *kd = &g->kind[k];
            stf = max64(stf, p->state_floats), hz = max64(hz, p->hz_cols);
            xb = max64(xb, p->xb_floats), part = max64(part, p->part_floats);
            rec = max64(rec, kd->rec_cols), cols[0] = max64(cols[0], kd->g_cols);
            g->rec_stride = rec;
            cols[1] = max64(cols[1], g->bwd[k].plan.out_cols), init = max64(init, kd->init_cols);
            cols[2] = max64(cols[2], kd->d_cols), cols[3] = max64(cols[3], kd->row_cols);
        }
    int64_t width = m->spec.dirs * m->spec.hout, wide = max64(width, m->spec.sizes[0].I);
    rnnc_status st = RNNC_OK;
    for (int i = 0; st == RNNC_OK && i < g->sides; i++)
        st = side_scratch(&g->side[i], TB, stf, hz, xb, part, cols);
    /* x dropped by the cell (fg_drop_input), at the widest input: grown
     * here, never while a kernel may read it */
    for (int i = 0; st == RNNC_OK && g->kind[0].x_site >= 0 && i < g->sides; i++)
        st = fg_grow(&g->side[i].xd, TB * (size_t)wide * 4);
    /* a half model's 16-bit staging: the widest sequence, then every
     * pseudo-layer's states (fg_edge) */
    g->stf = stf;
    g->h16_seq = TB * (size_t)wide * 2;
    if (st == RNNC_OK && rt_dtype_is_half(m->spec.dtype))
        st = fg_grow(&g->h16, g->h16_seq + (size_t)(g->np * stf) * 2);
    if (st || (st = fg_grow(&g->dlen, B * 4)) ||
        (st = fg_grow(&g->xt, TB * (size_t)m->spec.sizes[0].I * 4)) ||
        (st = fg_grow(&g->tmp, TB * (size_t)wide * 4)) ||
        (st = fg_grow(&g->recb, TB * (size_t)(rec * g->np) * 4)) ||
        (st = fg_grow(&g->out, TB * (size_t)(width * m->spec.layers) * 4)) ||
        (st = fg_grow(&g->init, B * (size_t)(init * g->np) * 4)) ||
        (st = fg_grow(&g->din, TB * (size_t)wide * 4)) || (st = fg_grow(&g->dxl, TB * (size_t)wide * 4)))
        return st;
    if (!g->dw && (st = rt_dev_alloc(&g->dw, (size_t)(g->hw_floats + 4) * 4)))
        return st;
    return RNNC_OK;
}

CUdeviceptr fg_rec_at(const rt_fgrad *g, int p)
{
    return g->recb.p + (CUdeviceptr)((size_t)(g->T * g->B) * (size_t)g->rec_stride * (size_t)p * 4);
}

CUdeviceptr fg_init_at(const rt_fgrad *g, int p)
{
    return g->init.p + (CUdeviceptr)((size_t)g->B * (size_t)g->kind[0].init_cols * (size_t)p * 4);
}

CUdeviceptr fg_out_at(const rt_fused *m, const rt_fgrad *g, int l)
{
    return g->out.p + (CUdeviceptr)((size_t)(g->T * g->B) *
                                    (size_t)(m->spec.dirs * m->spec.hout) * (size_t)l * 4);
}

/* n values between the caller's buffer (host or device, the model's dtype)
 * and fp32 device memory dev.  A half model's are converted on the device
 * (its training runs in fp32: docs/training.md); from the host they go
 * through the 16-bit staging h16 at byte `at`, a region of their own in
 * the call (the call ends with a synchronisation before the next). */
static rnnc_status fg_edge(rt_fused *m, rt_fgrad *g, CUdeviceptr dev, const void *user, size_t n,
                           size_t at, bool in, CUstream s)
{
    if (!rt_dtype_is_half(m->spec.dtype))
        return fg_move(dev, user, n * 4, g->dev, in, s);
    CUdeviceptr u = g->dev ? (CUdeviceptr)(uintptr_t)user : g->h16.p + at;
    rnnc_status st = RNNC_OK;
    if (in) {
        if (!g->dev)
            st = rt_dev_upload(u, user, n * 2, s);
        return st ? st : rt_fused_convert(m, true, u, dev, n, s);
    }
    st = rt_fused_convert(m, false, dev, u, n, s);
    return st || g->dev ? st : rt_dev_download((void *)user, u, n * 2, s);
}

/* Where pseudo-layer p's state at float offset `off` of a copy stages (h16). */
static size_t state_stage(const rt_fgrad *g, int p, int64_t off)
{
    return g->h16_seq + (size_t)((int64_t)p * g->stf + off) * 2;
}

/* Pseudo-layer p's states (user array arr, [L*D, B, n]) into copy 0 of st. */
rnnc_status fg_states_in(rt_fused *m, rt_fgrad *g, fg_side *sd, const cg_cuda_plan *pl,
                         const void *const *arr, int p, CUstream s)
{
    size_t es = rt_fused_esz(m);
    for (int i = 0; i < pl->n_states; i++) {
        CUdeviceptr dst = sd->st.p + (CUdeviceptr)pl->state[i].offset * 4;
        size_t n = (size_t)(g->B * pl->state[i].count);
        const void *src = arr ? arr[i] : NULL;
        rnnc_status st = src ? fg_edge(m, g, dst, (const char *)src + (size_t)p * n * es, n,
                                       state_stage(g, p, pl->state[i].offset), true, s)
                             : rt_dev_zero(dst, n * 4, s);
        if (st)
            return st;
    }
    return RNNC_OK;
}

rnnc_status fg_states_out(rt_fused *m, rt_fgrad *g, fg_side *sd, const cg_cuda_plan *pl,
                          void *const *arr, int p, CUstream s)
{
    CUdeviceptr fin = sd->st.p + (CUdeviceptr)(2 * pl->state_floats * 4);
    size_t es = rt_fused_esz(m);
    for (int i = 0; arr && i < pl->n_states; i++) {
        if (!arr[i])
            continue;
        size_t n = (size_t)(g->B * pl->state[i].count);
        rnnc_status st = fg_edge(m, g, fin + (CUdeviceptr)pl->state[i].offset * 4,
                                 (char *)arr[i] + (size_t)p * n * es, n,
                                 state_stage(g, p, pl->state[i].offset), false, s);
        if (st)
            return st;
    }
    return RNNC_OK;
}

/* A [T, B, W] tensor of the caller's (batch first or not) into dst. */
rnnc_status fg_seq_in(rt_fused *m, rt_fgrad *g, CUdeviceptr dst, const void *src, int W,
                      CUstream s)
{
    size_t n = (size_t)(g->T * g->B * W);
    if (!m->spec.batch_first)
        return fg_edge(m, g, dst, src, n, 0, true, s);
    bool direct = g->dev && !rt_dtype_is_half(m->spec.dtype);
    CUdeviceptr from = direct ? (CUdeviceptr)(uintptr_t)src : g->tmp.p;
    rnnc_status st = direct ? RNNC_OK : fg_edge(m, g, g->tmp.p, src, n, 0, true, s);
    return st ? st : fg_permute(g, dst, from, W, 1, s);
}

rnnc_status fg_seq_out(rt_fused *m, rt_fgrad *g, void *dst, CUdeviceptr src, int W,
                       CUstream s)
{
    size_t n = (size_t)(g->T * g->B * W);
    if (!m->spec.batch_first)
        return fg_edge(m, g, src, dst, n, 0, false, s);
    if (g->dev && !rt_dtype_is_half(m->spec.dtype))
        return fg_permute(g, (CUdeviceptr)(uintptr_t)dst, src, W, 0, s);
    rnnc_status st = fg_permute(g, g->tmp.p, src, W, 0, s);
    return st ? st : fg_edge(m, g, g->tmp.p, dst, n, 0, false, s);
}

/* ---------------------------------------------------------------- forward */

static rnnc_status lengths_in(rt_fgrad *g, const rnnc_forward_args *a, CUstream s)
{
    g->has_len = a->lengths != NULL;
    if (!a->lengths)
        return RNNC_OK;
    int *h = realloc(g->hlen, sizeof(int) * (size_t)a->batch);
    if (!h)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused backward: out of memory");
    g->hlen = h;
    for (int64_t b = 0; b < a->batch; b++)
        h[b] = (int)a->lengths[b];
    rnnc_status st = rt_dev_upload(g->dlen.p, h, sizeof(int) * (size_t)a->batch, s);
    return st ? st : rt_dev_sync(s);
}

rnnc_status fg_drop_input(rt_fused *m, rt_fgrad *g, fg_side *sd, int k, int p, CUdeviceptr x,
                          CUstream s)
{
    const fg_kind *kd = &g->kind[k];
    int64_t I = m->spec.sizes[k].I;
    rt_fused_mask_job j = {.dst = sd->xd.p, .src = x, .T = g->T, .B = g->B, .W = I,
                           .site = rt_dropout_site_cell(p, kd->x_site), .p = kd->x_p};
    return rt_fused_mask(m, &j, s); /* (sd->xd grown by scratch) */
}

/* Direction d of layer l on stream s: its initial states (kept for the
 * backward), its record rows (from x dropped by the cell where its kernels
 * read it so), and its columns of the layer output. */
static rnnc_status record_dir(rt_fused *m, rt_fgrad *g, const rnnc_forward_args *a, int l, int d,
                              CUdeviceptr in, CUstream s)
{
    int k = l > 0, W = (int)(m->spec.dirs * m->spec.hout), p = l * m->spec.dirs + d;
    const fg_set *set = &g->rec[k];
    const fg_kind *kd = &g->kind[k];
    fg_side *sd = &g->side[d % g->sides];
    CUdeviceptr wts = g->rwts + (CUdeviceptr)fg_at(g, m->spec.dirs, p, g->rec_w) * 4;
    CUdeviceptr fold = g->rfold + (CUdeviceptr)fg_at(g, m->spec.dirs, p, g->rec_f) * 4;
    rnnc_status st = fg_states_in(m, g, sd, &set->plan, a->init, p, s);
    for (int i = 0; st == RNNC_OK && i < set->plan.n_states; i++)
        st = rt_dev_copy(fg_init_at(g, p) + (CUdeviceptr)(g->B * kd->init_off[i] * 4),
                         sd->st.p + (CUdeviceptr)set->plan.state[i].offset * 4,
                         (size_t)(g->B * set->plan.state[i].count) * 4, s);
    if (st == RNNC_OK && set->plan.x_drop_site >= 0 && (st = fg_drop_input(m, g, sd, k, p, in, s)) == RNNC_OK)
        in = sd->xd.p;
    if (st || (st = fg_launch_set(m, sd, set, p, in, fg_rec_at(g, p), wts, fold, d, s)))
        return st;
    return fg_copy_cols(g, fg_out_at(m, g, l) + (CUdeviceptr)(d * m->spec.hout * 4), W,
                        fg_rec_at(g, p), (int)kd->rec_cols, g->T * g->B, (int)m->spec.hout, false, s);
}

static rnnc_status final_out(rt_fused *m, rt_fgrad *g, const rnnc_forward_args *a, int l, int d,
                             CUstream s)
{
    return fg_states_out(m, g, &g->side[d % g->sides], &g->rec[l > 0].plan, a->final,
                         l * m->spec.dirs + d, s);
}

/* A layer's directions, side by side where there are two sides.  Their
 * final states go out after both have launched: a download into host
 * memory returns once its kernel is done, which would hold back the other
 * direction's launches; with one side the next direction overwrites them. */
static rnnc_status record_layer(rt_fused *m, rt_fgrad *g, const rnnc_forward_args *a, int l,
                                CUdeviceptr in, CUstream s)
{
    bool both = g->sides > 1;
    rnnc_status st = both ? rt_fused_fork(m, s) : RNNC_OK;
    for (int d = 0; st == RNNC_OK && d < m->spec.dirs; d++) {
        st = record_dir(m, g, a, l, d, in, fg_side_stream(m, d, s));
        if (st == RNNC_OK && !both)
            st = final_out(m, g, a, l, d, s);
    }
    for (int d = 0; st == RNNC_OK && both && d < m->spec.dirs; d++)
        st = final_out(m, g, a, l, d, fg_side_stream(m, d, s));
    return st == RNNC_OK && both ? rt_fused_join(m, s) : st;
}

rnnc_status rt_fgrad_forward(rt_fused *m, const rnnc_forward_args *a)
{
    rt_fgrad *g = m->grad;
    CUstream s = (CUstream)a->stream;
    rnnc_status st = rt_check_forward(&m->spec, a);
    g->valid = false;
    if (st || (st = rt_cuda_context(m->spec.device)) || (st = fg_prepare(m, a->batch)))
        return st;
    g->T = a->seq_len, g->B = a->batch, g->dev = a->device_pointers, g->stream = s;
    if ((st = scratch(m, g)) || (st = lengths_in(g, a, s)) ||
        (g->sides > 1 && (st = rt_fused_streams(m, true, 3))) ||
        (st = fg_seq_in(m, g, g->xt.p, a->x, (int)m->spec.sizes[0].I, s)))
        return st;
    for (int l = 0; st == RNNC_OK && l < m->spec.layers; l++) {
        st = record_layer(m, g, a, l, l ? fg_out_at(m, g, l - 1) : g->xt.p, s);
        /* the layer above reads (and its weight gradients use) the dropped output */
        if (st == RNNC_OK && m->spec.dropout > 0 && l + 1 < m->spec.layers)
            st = rt_fused_dropout(m, l, fg_out_at(m, g, l), g->T, g->B, false, s);
    }
    if (st == RNNC_OK)
        st = fg_seq_out(m, g, a->y, fg_out_at(m, g, m->spec.layers - 1),
                     (int)(m->spec.dirs * m->spec.hout), s);
    if (st == RNNC_OK && !g->dev)
        st = rt_dev_sync(s);
    g->valid = st == RNNC_OK;
    return st;
}
#endif /* RT_HAVE_CUDA_H */
