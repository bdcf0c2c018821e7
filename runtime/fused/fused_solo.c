/*
 * fused_solo.c: kernel sets tiled for every SM, for the chunks of a
 * wavefront that run alone.  A stack's layers run as a wavefront of time
 * chunks, two kernels at once on half the SMs each (fused_model.c); its
 * first chunk (layer 0's, which every other waits for) and its last (the
 * top layer's, after the layer below has finished) have nothing beside
 * them, and on half the SMs they take about 1.7 times what they would on
 * all of them.  These sets are the same schedules generated for all the
 * SMs, with the generator's tiling (the tuned one is for half of them);
 * they read the same arenas, so they run only where their plans lay the
 * weights, folds, states and hoisted values out as the shared sets do.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/fused/fused.h"

#ifdef RT_HAVE_CUDA_H

/* Whether plans a and b read the same arenas and buffers the same way. */
static bool same_layout(const cg_cuda_plan *a, const cg_cuda_plan *b)
{
    if (a->n_wts != b->n_wts || a->n_fold != b->n_fold || a->n_states != b->n_states ||
        a->wts_floats != b->wts_floats || a->fold_floats != b->fold_floats ||
        a->state_floats != b->state_floats || a->hz_cols != b->hz_cols ||
        a->x_drop_site != b->x_drop_site)
        return false;
    for (int i = 0; i < a->n_wts; i++)
        if (a->wts[i].id != b->wts[i].id || a->wts[i].offset != b->wts[i].offset ||
            a->wts[i].derive != b->wts[i].derive)
            return false;
    for (int i = 0; i < a->n_fold; i++)
        if (a->fold[i].id != b->fold[i].id || a->fold[i].offset != b->fold[i].offset)
            return false;
    for (int i = 0; i < a->n_states; i++)
        if (a->state[i].offset != b->state[i].offset)
            return false;
    return true;
}

/* Kind k's set for every SM at `batch`: generated, laid out as the shared
 * one (else *ok false), loaded. */
static rnnc_status make_set(rt_fused *m, int k, int64_t batch, bool *ok)
{
    rt_fused_upper *u = &m->solo[k];
    const cg_cuda_plan *shared = k ? &m->up.plan : &m->plan;
    cg_cuda_config cfg;
    rt_fused_config_kind(m, k, batch, false, &cfg);
    cfg.sm_count = m->sm_count;
    free(u->src);
    u->src = NULL;
    u->loaded = false;
    rnnc_status st = cg_cuda_generate(k ? &m->up.sched : &m->sched, &cfg, &u->src, &u->plan);
    if (st != RNNC_OK || !(*ok = same_layout(&u->plan, shared)))
        return st;
    const char *names[CG_CUDA_MAX_LAUNCH];
    char label[64];
    rt_kernel_req req;
    rt_fused_request(m, u->src, &u->plan, batch, names, label, &req);
    strncat(label, "_solo", sizeof label - strlen(label) - 1);
    st = rt_kernel_get(&req, m->spec.device, &u->kern);
    u->loaded = st == RNNC_OK;
    return st;
}

/* The slots' scratch for the sets' launches too. */
static rnnc_status fit_slots(rt_fused *m, const rnnc_forward_args *a)
{
    rnnc_status st = RNNC_OK;
    for (int k = 0; st == RNNC_OK && k < 2; k++) {
        const cg_cuda_plan *p = &m->solo[k].plan;
        if (rt_fused_bar_bytes(p) > RT_FUSED_BAR_BYTES)
            return err_fail(RNNC_ERR_UNSUPPORTED, "fused backend: persistent grid too large");
        for (int i = 0; st == RNNC_OK && i < 2; i++) {
            rt_fused_slot *sl = &m->slot[i];
            size_t TB = (size_t)a->seq_len * (size_t)a->batch;
            if ((st = rt_fused_grow(&sl->hz, &sl->hz_n, TB * (size_t)p->hz_cols * 4)) ||
                (st = rt_fused_grow(&sl->xb, &sl->xb_n, (size_t)p->xb_floats * 4)))
                break;
            st = rt_fused_grow(&sl->part, &sl->part_n, (size_t)p->part_floats * 4);
        }
    }
    return st;
}

rnnc_status rt_fused_solo_prepare(rt_fused *m, const rnnc_forward_args *a)
{
    if (cm_env_is("RNNC_FUSED_SOLO", "0") || m->spec.layers < 2) {
        m->solo_ok = false;
        return RNNC_OK;
    }
    rnnc_status st = RNNC_OK;
    if (m->solo_batch != a->batch) {
        bool ok = true;
        for (int k = 0; st == RNNC_OK && ok && k < 2; k++)
            st = make_set(m, k, a->batch, &ok);
        m->solo_ok = st == RNNC_OK && ok;
        m->solo_batch = st == RNNC_OK ? a->batch : 0;
    }
    return m->solo_ok ? fit_slots(m, a) : st;
}

#endif /* RT_HAVE_CUDA_H */
