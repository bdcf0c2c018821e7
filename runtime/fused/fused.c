/*
 * fused.c: the fused GPU backend's object: checks what the fused path can
 * run, builds the schedule once, keeps the weights (host copies and the
 * device arenas the generated kernels read) and one compiled kernel set
 * for the batch size last used; the request that names that set in the
 * kernel cache (also what `rnnc compile` puts in a bundle).  fused_run.c
 * runs a forward, fused_tune.c picks the tuning, fused_aot.c builds
 * bundles; the backend's table, with training, is runtime/fused_grad's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "runtime/fused/fused.h"

#ifdef RT_HAVE_CUDA_H

size_t rt_fused_esz(const rt_fused *m)
{
    return rt_dtype_is_half(m->spec.dtype) ? 2 : 4;
}

static rnnc_status check_spec(const rt_spec *s)
{
    if (s->dtype != RNNC_F32 && !rt_dtype_is_half(s->dtype))
        return err_fail(RNNC_ERR_UNSUPPORTED, "fused backend: %s models (f32, f16 or bf16)",
                        rnnc_dtype_name(s->dtype));
    if (s->layers < 1 || (s->dirs != 1 && s->dirs != 2))
        return err_fail(RNNC_ERR_INVALID_ARG, "fused backend: %d layers, %d directions",
                        s->layers, s->dirs);
    return RNNC_OK;
}

void rt_fused_config_kind(rt_fused *m, int k, int64_t batch, bool tuned, cg_cuda_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->sizes = m->spec.sizes[k];
    cfg->batch = batch;
    cfg->sm = m->sm;
    int share = rt_fused_share_at(m, batch);
    cfg->sm_count = m->sm_count / share;
    cfg->batch_first = m->spec.batch_first;
    cfg->y_ld = m->spec.dirs * m->spec.hout;
    cfg->math = (int)m->spec.math;
    /* rt_fused_launch passes the tensor maps; RNNC_FUSED_TMA=0 keeps the
     * mma.sync tiles (measurements) */
    const char *tma = getenv("RNNC_FUSED_TMA");
    cfg->tma = !(tma && strcmp(tma, "0") == 0);
    cfg->dtype = (int)m->spec.dtype;
    cfg->cluster = share == 1 ? m->cluster : 1;
    if (tuned)
        rt_fused_tuning_apply(m->tuning, cfg);
}

void rt_fused_tuning_apply(rt_fused_tuning t, cg_cuda_config *cfg)
{
    cfg->unit_tile = t.unit_tile;
    cfg->batch_tile = t.batch_tile;
    cfg->threads = t.threads;
    cfg->reg_rows = t.reg_rows;
    cfg->reg_batch = t.reg_batch;
    if (t.exchange)
        cfg->exchange = t.exchange;
    cfg->outer = t.outer != 0;
}

void rt_fused_config(rt_fused *m, int64_t batch, bool tuned, cg_cuda_config *cfg)
{
    if (tuned)
        rt_fused_choose(m, batch, &m->tuning, &m->tuning_from);
    rt_fused_config_kind(m, 0, batch, tuned, cfg);
}

/* The cell as printed names it exactly: its hash keys the tuning records. */
static rnnc_status hash_cell(rt_fused *m)
{
    char *text = NULL;
    rnnc_status st = ir_print(m->spec.fn[0], &text);
    if (st)
        return st;
    m->cell_hash = XXH3_64bits(text, strlen(text));
    free(text);
    return RNNC_OK;
}

/* A trial generation (default tiles) of layer kind k, so that a cell the
 * generator cannot place fails at create; it also fixes the weight and
 * fold arena layout, which depends on neither the batch nor the tiles. */
static rnnc_status trial(rt_fused *m, int k, const ir_schedule *sched, cg_cuda_plan *plan)
{
    cg_cuda_config cfg;
    char *src = NULL;
    rt_fused_config_kind(m, k, 1, false, &cfg);
    rnnc_status st = cg_cuda_generate(sched, &cfg, &src, plan);
    free(src);
    if (st == RNNC_OK) {
        /* a pseudo-layer's weights past the last's, 16 bytes on (4 floats,
         * 8 of a half model's 16-bit values): the wgmma tiles' TMA boxes
         * start on 16-byte boundaries */
        m->arena_wts[k] = plan->wts_floats + (rt_dtype_is_half(m->spec.dtype) ? 8 : 4);
        m->arena_fold[k] = plan->fold_floats + 4;
    }
    return st;
}

/* Both directions of a layer run at once, as do two layers of a
 * unidirectional model (a wavefront of chunks, fused_model.c); each kernel
 * then gets half the SMs.  batch_first rows of a time chunk are not
 * contiguous, so such a model runs its layers one after another, on all
 * the SMs.  RNNC_FUSED_SHARE=1 turns the overlap off, =2 keeps it at every
 * batch size (measurements: rt_fused_share_at). */
int rt_fused_share(const rt_spec *s)
{
    if (cm_env_is("RNNC_FUSED_SHARE", "1"))
        return 1;
    return s->dirs == 2 || (s->layers > 1 && !s->batch_first) ? 2 : 1;
}

/* A batch row's multiply-adds in one step: the step's linears' weights. */
static int64_t step_macs(const ir_schedule *s, ir_sizes sz)
{
    int64_t n = 0;
    for (int32_t i = 0; i < s->n_step; i++) {
        const ir_node *nd = &s->fn->nodes[s->step[i]];
        const ir_node *w = nd->op == IR_LINEAR ? &s->fn->nodes[nd->a[1]] : NULL;
        if (w)
            n += ir_dim_eval(w->rows, sz) * ir_dim_eval(w->cols, sz);
    }
    return n;
}

/* Two kernels at once on half the SMs each pay while a step is bound by
 * its latency more than by its multiply-adds; past that, each step takes
 * about twice as long on half the SMs (or streams its weights, which no
 * longer fit on chip) and one kernel at a time on all of them is faster.
 * Measured in FFMA on the H200 (T = 100, bench/results/h200/share/), the
 * multiply-adds a step per SM of the half (B * step_macs / (SMs / 2)):
 * stacks gained at 1.0 M (I = H = 512, B = 64) and lost 7% at 2.3 M (H =
 * 768) and 15-17% at 4.1 M and 16 M (H = 1024, B = 64 and 256; level at B
 * = 1); bidirectional layers gained 13-14% at 2.3 M (H = 768) and 3.1 M
 * (a GRU at H = 1024), lost 5% at 4.1 M and 10% at 16 M (LSTM, H = 1024).
 * bf16 models (tensor cores, 16-bit weights) fall on the same sides: a
 * stack gained 24% at 1.0 M and lost 18-20% at 4.1 M and 16 M, a
 * bidirectional layer lost 10% at 4.1 M.  TF32 models gained at 4.1 M
 * (4% a stack, 15% a bidirectional layer) and were level at 16 M: they
 * keep the model's sizing.  A stack of two layers has less to overlap (its
 * wavefront of 4 chunks is 5 chunk-times of half the SMs, against 8 of all
 * of them one layer after another): on the H200 at I = H = 512 it gained
 * 2-14% up to 0.57 M (B from 1 to 128) and lost 3% at 1.0 M (B = 64), where
 * three and four layers still gained 3-4% (bench/results/h200/share/
 * layers/); fp32 only.  16-bit stacks (bench/results/h200/share/half/) gain
 * from two at once further: two layers at I = H = 512 gained 18-20% at 0.5 M
 * and 1.0 M and 6-8% at 2.0 M (B = 128, bf16 and f16; four layers 14%), were
 * level at 2.3 M (I = H = 768) and lost 6% at 3.0 M (B = 192). */
int rt_fused_share_at(const rt_fused *m, int64_t batch)
{
    int base = m->share_base;
    if (base == 1 || m->spec.math != RNNC_MATH_FFMA || cm_env_is("RNNC_FUSED_SHARE", "2"))
        return base;
    double per_sm = (double)batch * (double)m->step_macs / (m->sm_count / 2.0);
    bool half = m->spec.dtype != RNNC_F32;
    double limit = m->spec.dirs == 2 ? 3.5e6 : half ? 2.2e6 : m->spec.layers == 2 ? 0.75e6 : 1.5e6;
    return per_sm <= limit ? base : 1;
}

void rt_fused_set_share(rt_fused *m, int64_t batch)
{
    m->share = rt_fused_share_at(m, batch);
    /* Each kernel may start while the one before it runs (it waits itself,
     * rnnc_pdl in the source), except where kernels run beside each other on
     * shares of the SMs: a kernel started early would hold SMs the other
     * stream's persistent kernel is waiting for.  RNNC_FUSED_PDL=0: off. */
    m->pdl = m->sm >= 90 && m->share == 1 && !cm_env_is("RNNC_FUSED_PDL", "0");
}

rnnc_status rt_fused_init(rt_fused *m, const rt_spec *s, int sm, int sm_count)
{
    rnnc_status st = check_spec(s);
    if (st)
        return st;
    m->spec = *s;
    m->sm = sm;
    m->sm_count = sm_count;
    m->share = m->share_base = rt_fused_share(s);
    m->pdl = false; /* rt_fused_set_share, for a batch */
    /* 0: the generator's choice; 1: no clusters (measurements) */
    const char *cl = getenv("RNNC_FUSED_CLUSTER");
    m->cluster = cl ? atoi(cl) : 0;
    m->arena = ir_arena_create();
    if (!m->arena)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused: out of memory");
    if ((st = pass_fuse(s->fn[0], s->hoist, m->arena, &m->sched)) || (st = hash_cell(m)))
        return st;
    m->step_macs = step_macs(&m->sched, s->sizes[0]);
    if ((st = trial(m, 0, &m->sched, &m->plan)))
        return st;
    if (s->layers > 1 && ((st = pass_fuse(s->fn[1], s->hoist, m->arena, &m->up.sched)) ||
                          (st = trial(m, 1, &m->up.sched, &m->up.plan))))
        return st;
    return RNNC_OK;
}

/* Without NVRTC every kernel must come from a registered bundle: say so at
 * create, not at the first forward, when none holds this model for this
 * device. */
static rnnc_status check_bundles(const rt_fused *m)
{
    if (rt_nvrtc_available() || !rt_bundle_registered_kernels())
        return RNNC_OK;
    char model[384], prefix[448], archs[128];
    rt_fused_model_key(m, model, sizeof model);
    snprintf(prefix, sizeof prefix, "%s sm_%d sms=%d B=", model, m->sm, m->sm_count);
    if (rt_bundle_has_tuning_prefix(prefix))
        return RNNC_OK;
    rt_bundle_registered_archs(archs, sizeof archs);
    snprintf(prefix, sizeof prefix, "%s ", model);
    if (rt_bundle_has_tuning_prefix(prefix))
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "fused backend: the loaded bundle holds this model for %s, but this "
                        "device is sm_%d with %d SMs and NVRTC is not available to compile "
                        "for it; rebuild the bundle with `rnnc compile --arch sm_%d "
                        "--sm-count %d`",
                        archs, m->sm, m->sm_count, m->sm, m->sm_count);
    return err_fail(RNNC_ERR_UNSUPPORTED,
                    "fused backend: no loaded bundle (%s) holds this model (%s), and NVRTC "
                    "is not available to compile it",
                    archs, model);
}

rnnc_status rt_fused_create(const rt_spec *s, void **state)
{
    if (!s || !state || !s->fn[0])
        return err_fail(RNNC_ERR_INVALID_ARG, "fused: NULL spec");
    rnnc_status st = check_spec(s);
    if (st)
        return st;
    rt_fused *m = calloc(1, sizeof *m);
    if (!m)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused: out of memory");
    m->spec = *s;
    int sm = 0, sm_count = 0;
    if ((st = rt_cuda_context(s->device)) || (st = rt_cuda_arch(s->device, &sm)) ||
        (st = rt_cuda_sm_count(s->device, &sm_count)) ||
        (st = rt_fused_init(m, s, sm, sm_count)) || (st = check_bundles(m)))
        goto fail;
    *state = m;
    return RNNC_OK;
fail:
    rt_fused_free(m);
    return st;
}

void rt_fused_request(const rt_fused *m, const char *src, const cg_cuda_plan *plan,
                      int64_t batch, const char **names, char *label, rt_kernel_req *req)
{
    for (int i = 0; i < plan->n_launch; i++)
        names[i] = plan->launch[i].name;
    snprintf(label, 64, "fused_%s_b%lld", m->spec.fn[0]->name, (long long)batch);
    *req = (rt_kernel_req){.source = src, .name = label, .kernels = names,
                           .n_kernels = plan->n_launch, .sm = m->sm, .tuning = plan->tuning};
}

void rt_fused_request_kind(const rt_fused *m, int k, int64_t batch, rt_fused_req *r)
{
    rt_fused_request(m, k ? m->up.src : m->src, k ? &m->up.plan : &m->plan, batch, r->names,
                     r->label, &r->req);
}

/* Elements of parameter i of the cell of layer kind k. */
static int64_t param_numel(const rt_fused *m, int k, int i)
{
    const ir_fn *f = m->spec.fn[k];
    int32_t node = f->params[i].node;
    if (node < 0 || node >= f->n)
        return 0;
    const ir_node *n = &f->nodes[node];
    int64_t c = ir_dim_eval(n->cols, m->spec.sizes[k]);
    return n->kind == IR_MAT ? c * ir_dim_eval(n->rows, m->spec.sizes[k]) : c;
}

/* Pseudo-layer p's matrices (by offset) and folds (computed) into the host arenas. */
static rnnc_status fill_pseudo(rt_fused *m, const rt_weights *w, int p, float *wts, float *fold)
{
    int k = p >= m->spec.dirs;
    const cg_cuda_plan *pl = k ? &m->up.plan : &m->plan;
    for (int i = 0; i < pl->n_wts; i++) {
        const float *src = rt_weight(w, p, pl->wts[i].id);
        if (!src)
            return err_fail(RNNC_ERR_STATE, "fused: weight '%s' of pseudo-layer %d missing",
                            m->spec.fn[k]->params[pl->wts[i].id].name, p);
        if (param_numel(m, k, pl->wts[i].id) != pl->wts[i].count)
            return err_fail(RNNC_ERR_INTERNAL, "fused: weight size mismatch");
        cg_cuda_slot_fill(&pl->wts[i], src, wts + pl->wts[i].offset);
    }
    for (int i = 0; i < pl->n_fold; i++) {
        rnnc_status st = rt_eval_fold(m->spec.fn[k], m->spec.sizes[k], w, p, pl->fold[i].id,
                                      fold + pl->fold[i].offset);
        if (st)
            return st;
    }
    return RNNC_OK;
}

rnnc_status rt_fused_bind(rt_fused *m, const rt_weights *w)
{
    if (!m || !w)
        return err_fail(RNNC_ERR_INVALID_ARG, "fused: NULL weights");
    int np = m->spec.layers * m->spec.dirs;
    if (w->pseudo_layers < np)
        return err_fail(RNNC_ERR_INVALID_ARG, "fused: weights for %d pseudo-layers (want %d)",
                        w->pseudo_layers, np);
    int64_t nw = rt_fused_wts_at(m, np), nf = rt_fused_fold_at(m, np);
    float *wts = calloc((size_t)nw, sizeof(float)), *fold = calloc((size_t)nf, sizeof(float));
    rnnc_status st = wts && fold ? RNNC_OK
                                 : err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused: out of memory for weights");
    for (int p = 0; st == RNNC_OK && p < np; p++)
        st = fill_pseudo(m, w, p, wts + rt_fused_wts_at(m, p), fold + rt_fused_fold_at(m, p));
    if (st == RNNC_OK)
        st = rt_cuda_context(m->spec.device);
    /* a half model's arena holds the (already rounded) weights in 16 bits */
    if (st == RNNC_OK && rt_dtype_is_half(m->spec.dtype))
        st = rnnc_convert(wts, m->spec.dtype, wts, RNNC_F32, nw);
    if (st == RNNC_OK)
        st = rt_fused_upload_weights(m, wts, fold, nw, nf);
    free(wts);
    free(fold);
    return st;
}

#endif
