/*
 * fused_grad_setup.c: the fused backward's preparation: the check (the
 * split of the backward step and a trial generation of both cells, once
 * per model), the host copy of the weights, the kernel sets for a batch
 * size, and the weight arenas they read (the recurrence cell's holds the
 * transposed matrices, W^T, of its linear_t terms).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/fused_grad/fused_grad.h"

#ifdef RT_HAVE_CUDA_H

int64_t fg_at(const rt_fgrad *g, int dirs, int p, const int64_t n[2])
{
    (void)g;
    return p <= dirs ? p * n[0] : dirs * n[0] + (p - dirs) * n[1];
}

rnnc_status fg_grow(fg_buf *b, size_t n)
{
    if (n < 16)
        n = 16;
    if (b->n >= n)
        return RNNC_OK;
    rt_dev_free(b->p);
    b->p = 0;
    b->n = 0;
    rnnc_status st = rt_dev_alloc(&b->p, n);
    if (st == RNNC_OK)
        b->n = n;
    return st;
}

/* Training keeps the directions side by side where the forward's shape
 * rule would not (rt_fused_share_at): an LSTM at I = H = 1024, B = 64
 * trained in 23.18 ms so against 25.41 one after the other, while its
 * forward lost 5% (H200, bench/results/h200/share/). */
static int sides_of(const rt_fused *m)
{
    return m->spec.dirs == 2 && m->share_base > 1 ? 2 : 1;
}

static rnnc_status new_state(rt_fused *m)
{
    if (m->grad)
        return RNNC_OK;
    rt_fgrad *g = calloc(1, sizeof *g);
    if (!g || !(g->arena = ir_arena_create())) {
        free(g);
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused backward: out of memory");
    }
    g->np = m->spec.layers * m->spec.dirs;
    g->npar = m->spec.fn[0]->n_params;
    g->sm_count = m->sm_count;
    g->sides = sides_of(m);
    m->grad = g;
    return RNNC_OK;
}

static void config(rt_fused *m, int k, int64_t batch, cg_cuda_config *cfg)
{
    rt_fused_config_kind(m, k, batch, false, cfg);
    /* Each kernel has the SMs of its side: all of them where the training
     * runs one pseudo-layer at a time (a stack's layers: the forward's
     * wavefront of two layers on half the SMs each does not carry over),
     * half where the two directions of a layer run side by side.  Sized
     * for half and run one at a time, the H200's training steps at B = 64,
     * I = H = 512 took 9.42 ms for one bidirectional layer and 9.39 for two
     * layers against 3.24 for one. */
    cfg->sm_count = m->sm_count / m->grad->sides;
    cfg->batch_first = false; /* the training path keeps everything [T, B, *] */
    cfg->tma = false;         /* its launcher passes no tensor maps */
    cfg->y_ld = 0;
    cfg->cluster = 1; /* the training kernels' steps keep one block's K whole */
    /* a half model trains in fp32: its x, weights and states are converted
     * at the edges (fused_grad.c fg_edge), its weights rounded to the dtype
     * already (api/weights.c), so the training sees the forward's values */
    cfg->dtype = RNNC_F32;
}

/* The recurrence cell's: the record cell's, with fg_bwd_batch_tile's rows
 * where it gives some. */
static void bwd_config(rt_fused *m, int k, int64_t batch, cg_cuda_config *cfg)
{
    config(m, k, batch, cfg);
    int rows = fg_bwd_batch_tile(batch);
    if (rows)
        cfg->batch_tile = rows;
}

/* The split and one generation of each cell at B = 1 (the row cell's
 * with its parameters at offset 0: where they lie changes no refusal). */
static rnnc_status check_once(rt_fused *m, rt_fgrad *g)
{
    rnnc_status st = RNNC_OK;
    g->n_kinds = m->spec.layers > 1 ? 2 : 1;
    for (int k = 0; st == RNNC_OK && k < g->n_kinds; k++)
        st = fg_kind_build(m->spec.fn[k], m->spec.sizes[k], g->arena, &g->kind[k]);
    for (int k = 0; st == RNNC_OK && k < g->n_kinds; k++) {
        cg_cuda_config cfg;
        cg_cuda_plan plan;
        char *src = NULL;
        config(m, k, 1, &cfg);
        st = cg_cuda_generate(&g->kind[k].rec_sched, &cfg, &src, &plan);
        free(src);
        src = NULL;
        if (st == RNNC_OK)
            st = cg_cuda_generate(&g->kind[k].bwd_sched, &cfg, &src, &plan);
        free(src);
        src = NULL;
        if (st == RNNC_OK && g->kind[k].row) {
            int64_t zero[FG_MAX] = {0};
            unsigned smem;
            st = g->kind[k].row->n_params > FG_MAX
                     ? err_fail(RNNC_ERR_UNSUPPORTED, "fused backward: too many parameters")
                     : fg_rows_source(&g->kind[k], m->spec.sizes[k], zero, &src, &smem);
            free(src);
        }
    }
    return st;
}

rnnc_status rt_fgrad_check(rt_fused *m)
{
    rnnc_status st = new_state(m);
    if (st != RNNC_OK)
        return st;
    rt_fgrad *g = m->grad;
    if (!g->checked) {
        g->status = check_once(m, g);
        snprintf(g->why, sizeof g->why, "%s", g->status ? rnnc_last_error() : "");
        g->checked = true;
    }
    if (g->status != RNNC_OK)
        return err_fail(g->status, "%s", g->why);
    return RNNC_OK;
}

rnnc_status rt_fgrad_can_train(void *state)
{
    return rt_fgrad_check(state);
}

bool rt_fgrad_takes_passes(rt_fused *m, int64_t batch)
{
    if (rt_fgrad_check(m) != RNNC_OK)
        return false;
    rt_fgrad *g = m->grad;
    if (g->passes_batch == batch)
        return g->passes;
    g->passes = false;
    for (int k = 0; k < g->n_kinds && !g->passes; k++) {
        cg_cuda_config cfg;
        bwd_config(m, k, batch, &cfg);
        g->passes = cg_cuda_takes_passes(&g->kind[k].bwd_sched, &cfg);
    }
    g->passes_batch = batch;
    return g->passes;
}

/* ---------------------------------------------------------------- weights */

static int64_t param_count(const rt_fused *m, int p, int i)
{
    int k = p >= m->spec.dirs;
    const ir_fn *f = m->spec.fn[k];
    const ir_node *n = &f->nodes[f->params[i].node];
    int64_t c = ir_dim_eval(n->cols, m->spec.sizes[k]);
    return n->kind == IR_MAT ? c * ir_dim_eval(n->rows, m->spec.sizes[k]) : c;
}

rnnc_status rt_fgrad_bind(rt_fused *m, const rt_weights *w)
{
    rnnc_status st = new_state(m);
    if (st != RNNC_OK)
        return st;
    rt_fgrad *g = m->grad;
    size_t n = (size_t)(g->np * g->npar) + 1;
    if (!g->hw_off && (!(g->hw_off = calloc(n, sizeof *g->hw_off)) ||
                       !(g->hw_cnt = calloc(n, sizeof *g->hw_cnt))))
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused backward: out of memory");
    int64_t at = 0;
    for (int p = 0; p < g->np; p++) {
        int k = p >= m->spec.dirs, i0 = p * g->npar;
        int64_t n = fg_param_offsets(m->spec.fn[k], m->spec.sizes[k], g->hw_off + i0);
        for (int i = 0; i < g->npar; i++) {
            g->hw_off[i0 + i] += at;
            g->hw_cnt[i0 + i] = param_count(m, p, i);
        }
        at += n;
    }
    float *hw = realloc(g->hw, sizeof(float) * (size_t)(at + 4));
    if (!hw)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused backward: out of memory for weights");
    g->hw = hw;
    g->hw_floats = at;
    for (int p = 0; p < g->np; p++)
        for (int i = 0; i < g->npar; i++) {
            const float *src = rt_weight(w, p, i);
            float *dst = g->hw + g->hw_off[p * g->npar + i];
            if (src)
                memcpy(dst, src, sizeof(float) * (size_t)g->hw_cnt[p * g->npar + i]);
            else
                memset(dst, 0, sizeof(float) * (size_t)g->hw_cnt[p * g->npar + i]);
        }
    g->bound = true;
    g->arenas_ok = false;
    return RNNC_OK;
}

/* The recurrence cell's weights: the forward's, then W^T of each linear_t. */
static rnnc_status bwd_weights(rt_fused *m, rt_fgrad *g, int k, int p, float **tbuf,
                               const float **ptr)
{
    const fg_kind *kd = &g->kind[k];
    const ir_fn *f = m->spec.fn[k];
    ir_sizes sz = m->spec.sizes[k];
    for (int i = 0; i < g->npar; i++)
        ptr[i] = g->hw + g->hw_off[p * g->npar + i];
    for (int j = 0; j < kd->n_t; j++) {
        int q = kd->t_of[j];
        const ir_node *n = &f->nodes[f->params[q].node];
        int64_t r = ir_dim_eval(n->rows, sz), c = ir_dim_eval(n->cols, sz);
        float *t = malloc(sizeof(float) * (size_t)(r * c));
        if (!t)
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused backward: out of memory");
        const float *w = g->hw + g->hw_off[p * g->npar + q];
        for (int64_t a = 0; a < r; a++)
            for (int64_t b = 0; b < c; b++)
                t[b * r + a] = w[a * c + b];
        tbuf[j] = t;
        ptr[g->npar + j] = t;
    }
    return RNNC_OK;
}

/* One pseudo-layer's matrices and folds for a plan of cell f. */
static rnnc_status fill(const ir_fn *f, ir_sizes sz, const cg_cuda_plan *pl,
                        const float *const *ptr, int n_params, float *wts, float *fold)
{
    rt_weights w = {ptr, n_params, 1};
    for (int i = 0; i < pl->n_wts; i++)
        cg_cuda_slot_fill(&pl->wts[i], ptr[pl->wts[i].id], wts + pl->wts[i].offset);
    for (int i = 0; i < pl->n_fold; i++) {
        rnnc_status st = rt_eval_fold(f, sz, &w, 0, pl->fold[i].id, fold + pl->fold[i].offset);
        if (st != RNNC_OK)
            return st;
    }
    return RNNC_OK;
}

static rnnc_status upload(CUdeviceptr *dst, const float *src, int64_t n)
{
    rt_dev_free(*dst);
    *dst = 0;
    rnnc_status st = rt_dev_alloc(dst, (size_t)(n + 4) * 4);
    return st ? st : rt_dev_upload(*dst, src, (size_t)n * 4, NULL);
}

static rnnc_status fill_pseudo(rt_fused *m, rt_fgrad *g, int p, float *rw, float *rf, float *bw,
                               float *bf)
{
    int k = p >= m->spec.dirs;
    const fg_kind *kd = &g->kind[k];
    const float *ptr[2 * FG_MAX + 8];
    float *tbuf[FG_MAX] = {0};
    if (g->npar + kd->n_t > 2 * FG_MAX + 8)
        return err_fail(RNNC_ERR_UNSUPPORTED, "fused backward: too many parameters");
    rnnc_status st = bwd_weights(m, g, k, p, tbuf, ptr);
    if (st == RNNC_OK)
        st = fill(kd->rec, m->spec.sizes[k], &g->rec[k].plan, ptr, g->npar, rw, rf);
    if (st == RNNC_OK)
        st = fill(kd->bwd, m->spec.sizes[k], &g->bwd[k].plan, ptr, g->npar + kd->n_t, bw, bf);
    for (int j = 0; j < kd->n_t; j++)
        free(tbuf[j]);
    return st;
}

static rnnc_status fill_arenas(rt_fused *m, rt_fgrad *g)
{
    int d = m->spec.dirs;
    for (int k = 0; k < g->n_kinds; k++) {
        g->rec_w[k] = g->rec[k].plan.wts_floats + 4, g->rec_f[k] = g->rec[k].plan.fold_floats + 4;
        g->bwd_w[k] = g->bwd[k].plan.wts_floats + 4, g->bwd_f[k] = g->bwd[k].plan.fold_floats + 4;
    }
    int64_t nrw = fg_at(g, d, g->np, g->rec_w), nrf = fg_at(g, d, g->np, g->rec_f);
    int64_t nbw = fg_at(g, d, g->np, g->bwd_w), nbf = fg_at(g, d, g->np, g->bwd_f);
    float *rw = calloc((size_t)nrw, 4), *rf = calloc((size_t)nrf, 4);
    float *bw = calloc((size_t)nbw, 4), *bf = calloc((size_t)nbf, 4);
    rnnc_status st = rw && rf && bw && bf
                         ? RNNC_OK
                         : err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused backward: out of memory");
    for (int p = 0; st == RNNC_OK && p < g->np; p++)
        st = fill_pseudo(m, g, p, rw + fg_at(g, d, p, g->rec_w), rf + fg_at(g, d, p, g->rec_f),
                         bw + fg_at(g, d, p, g->bwd_w), bf + fg_at(g, d, p, g->bwd_f));
    if (st == RNNC_OK && !(st = upload(&g->rwts, rw, nrw)) && !(st = upload(&g->rfold, rf, nrf)) &&
        !(st = upload(&g->bwts, bw, nbw)) && !(st = upload(&g->bfold, bf, nbf)) &&
        !(st = upload(&g->plain, g->hw, g->hw_floats)))
        st = rt_dev_sync(NULL);
    free(rw), free(rf), free(bw), free(bf);
    g->arenas_ok = st == RNNC_OK;
    return st;
}

/* ---------------------------------------------------------------- kernel sets */

/* RNNC_FGRAD_TILE="REC|BWD": tilings for the record and the recurrence
 * kernels, each as `rnnc dump --tuning` takes one (either may be empty),
 * in place of the heuristic's (measurements; a text that is not a tuning
 * changes nothing). */
static void env_tuning(bool bwd, cg_cuda_config *cfg)
{
    const char *e = getenv("RNNC_FGRAD_TILE"), *bar = e ? strchr(e, '|') : NULL;
    char text[128];
    rt_fused_tuning t;
    if (!bar)
        return;
    const char *from = bwd ? bar + 1 : e;
    size_t n = bwd ? strlen(bar + 1) : (size_t)(bar - e);
    if (n == 0 || n >= sizeof text)
        return;
    memcpy(text, from, n);
    text[n] = '\0';
    if (rt_fused_tuning_parse_loose(text, &t))
        rt_fused_tuning_apply(t, cfg);
}

/* A set's source and plan for batch (nothing loaded yet). */
static rnnc_status make_set(rt_fused *m, const ir_schedule *sched, bool bwd, int k, int64_t batch,
                            fg_set *set)
{
    cg_cuda_config cfg;
    (bwd ? bwd_config : config)(m, k, batch, &cfg);
    env_tuning(bwd, &cfg);
    free(set->src);
    set->src = NULL;
    set->loaded = false;
    return cg_cuda_generate(sched, &cfg, &set->src, &set->plan);
}

/* The kernel request of a made set. */
static void request(const rt_fused *m, const fg_set *set, const char *what, int k, int64_t batch,
                    rt_fused_req *r)
{
    for (int i = 0; i < set->plan.n_launch; i++)
        r->names[i] = set->plan.launch[i].name;
    snprintf(r->label, sizeof r->label, "fg%s_%s_k%d_b%lld", what, m->spec.fn[0]->name, k,
             (long long)batch);
    r->req = (rt_kernel_req){.source = set->src, .name = r->label, .kernels = r->names,
                             .n_kernels = set->plan.n_launch, .sm = 0,
                             .tuning = set->plan.tuning};
}

/* Kind k's row cell kernel (fg_kind.row), reading its parameters where the
 * plain arena holds a pseudo-layer's (fg_param_offsets). */
static rnnc_status row_request(rt_fused *m, rt_fgrad *g, int k, rt_fused_req *r)
{
    const ir_fn *f = m->spec.fn[k];
    int64_t *off = malloc(sizeof(int64_t) * ((size_t)f->n_params + 1));
    if (!off)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused backward: out of memory");
    fg_param_offsets(f, m->spec.sizes[k], off);
    free(g->row_src[k]);
    g->row_src[k] = NULL;
    rnnc_status st = fg_rows_source(&g->kind[k], m->spec.sizes[k], off, &g->row_src[k],
                                    &g->row_smem[k]);
    free(off);
    r->names[0] = "rnnc_row_cell";
    snprintf(r->label, sizeof r->label, "fgrow_%s_k%d", f->name, k);
    r->req = (rt_kernel_req){.source = g->row_src[k], .name = r->label, .kernels = r->names,
                             .n_kernels = 1};
    return st;
}

/* Every kind's record and backward sets for batch, and the utility
 * kernels, loaded together: those not in a cache compile at once
 * (rt_kernel_get_all), a two-layer model's four sets in about the time
 * of one. */
static rnnc_status make_sets(rt_fused *m, rt_fgrad *g, int64_t batch)
{
    rt_fused_req r[7];
    const rt_kernel_req *reqs[7];
    rt_kernel *outs[7];
    int n = 0;
    for (int k = 0; k < g->n_kinds; k++) {
        rnnc_status st = make_set(m, &g->kind[k].rec_sched, false, k, batch, &g->rec[k]);
        if (st || (st = make_set(m, &g->kind[k].bwd_sched, true, k, batch, &g->bwd[k])))
            return st;
        request(m, &g->rec[k], "rec", k, batch, &r[n]);
        outs[n++] = &g->rec[k].kern;
        request(m, &g->bwd[k], "bwd", k, batch, &r[n]);
        outs[n++] = &g->bwd[k].kern;
        /* the row cell's kernel knows no batch: made once */
        if (!g->kind[k].row || g->row[k].module)
            continue;
        if ((st = row_request(m, g, k, &r[n])))
            return st;
        outs[n++] = &g->row[k];
    }
    if (!g->util_loaded) {
        r[n].req = (rt_kernel_req){.source = fg_util_src, .name = "fused_grad_util",
                                   .kernels = fg_util_names, .n_kernels = FG_N_UTIL};
        outs[n++] = &g->util;
    }
    for (int i = 0; i < n; i++)
        reqs[i] = &r[i].req;
    rnnc_status st = rt_kernel_get_all(reqs, n, m->spec.device, outs);
    if (st != RNNC_OK)
        return st;
    for (int k = 0; k < g->n_kinds; k++)
        g->rec[k].loaded = g->bwd[k].loaded = true;
    g->util_loaded = true;
    return RNNC_OK;
}

static rnnc_status make_desc(rt_fgrad *g, int k)
{
    const fg_kind *kd = &g->kind[k];
    free(g->desc[k]);
    g->desc[k] = malloc(sizeof(int) * (size_t)(5 * kd->n_pieces + 5));
    if (!g->desc[k])
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused backward: out of memory");
    for (int i = 0; i < kd->n_pieces; i++) {
        const fg_piece *pc = &kd->piece[i];
        int *d = g->desc[k] + 5 * i;
        d[0] = pc->src, d[1] = (int)pc->off, d[2] = (int)pc->cols;
        d[3] = (int)pc->rec_off, d[4] = (int)pc->init_off;
    }
    rnnc_status st = fg_grow(&g->ddesc[k], sizeof(int) * (size_t)(5 * kd->n_pieces + 5));
    return st ? st : rt_dev_upload(g->ddesc[k].p, g->desc[k], sizeof(int) * (size_t)(5 * kd->n_pieces), NULL);
}

rnnc_status fg_prepare(rt_fused *m, int64_t batch)
{
    rt_fgrad *g = m->grad;
    rnnc_status st = RNNC_OK;
    if (!g->bound)
        return err_fail(RNNC_ERR_STATE, "fused backend: forward before weights were set");
    if (g->batch != batch) {
        g->batch = 0;
        st = make_sets(m, g, batch);
        for (int k = 0; st == RNNC_OK && k < g->n_kinds; k++)
            st = make_desc(g, k);
        if (st != RNNC_OK)
            return st;
        g->batch = batch;
        g->arenas_ok = false;
    }
    return g->arenas_ok ? RNNC_OK : fill_arenas(m, g);
}

void rt_fgrad_forget(rt_fgrad *g)
{
    g->valid = false;
}

void rt_fgrad_free(rt_fgrad *g)
{
    if (!g)
        return;
    fg_buf *bufs[] = {&g->dlen, &g->xt, &g->tmp, &g->recb, &g->out, &g->init,
                      &g->din, &g->dxl, &g->ddesc[0], &g->ddesc[1], &g->h16};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        rt_dev_free(bufs[i]->p);
    for (int i = 0; i < 2; i++) {
        fg_side *sd = &g->side[i];
        fg_buf *side[] = {&sd->st, &sd->hz, &sd->xb, &sd->part, &sd->bar, &sd->g, &sd->dg, &sd->xd,
                          &sd->d, &sd->r};
        for (size_t j = 0; j < sizeof side / sizeof side[0]; j++)
            rt_dev_free(side[j]->p);
    }
    CUdeviceptr arenas[] = {g->rwts, g->rfold, g->bwts, g->bfold, g->plain, g->dw};
    for (size_t i = 0; i < sizeof arenas / sizeof arenas[0]; i++)
        rt_dev_free(arenas[i]);
    for (int k = 0; k < 2; k++) {
        free(g->rec[k].src);
        free(g->bwd[k].src);
        free(g->row_src[k]);
        free(g->desc[k]);
        fg_kind_free(&g->kind[k]);
    }
    free(g->hw), free(g->hw_off), free(g->hw_cnt), free(g->dw_host), free(g->hlen);
    ir_arena_destroy(g->arena);
    free(g);
}

#endif /* RT_HAVE_CUDA_H */
