/*
 * fused_aot.c: the fused backend's kernels ahead of time, for a bundle
 * (`rnnc compile`).  No GPU is involved: the target's sm and SM count are
 * given, the source comes from the same path a forward takes
 * (rt_fused_init, rt_fused_prepare, rt_fused_request), so the bundle entry
 * has exactly the key the forward will look up, and the tuning is the one
 * the forward would choose without timing (a tuning record, else the
 * heuristic), stored with the cubin so that the forward chooses it again.
 */
#include <stdlib.h>

#include "runtime/fused/fused.h"

#ifdef RT_HAVE_CUDA_H

/* A target's model, made and prepared as the forward would make it. */
static rnnc_status make(const rt_spec *s, const rt_fused_aot_target *t, rt_fused **out)
{
    if (t->batch < 1 || t->sm < 1 || t->sm_count < 1)
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_fused_aot_add_all: bad target");
    rt_fused *m = calloc(1, sizeof *m);
    if (!m)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused: out of memory");
    rnnc_status st = rt_fused_init(m, s, t->sm, t->sm_count);
    if (st == RNNC_OK)
        st = rt_fused_prepare(m, t->batch);
    if (st != RNNC_OK) {
        rt_fused_free(m);
        m = NULL;
    }
    *out = m;
    return st;
}

/* Compiles the requests of models[0..n) (at most eight) at once and adds
 * them, with each target's tuning record, to b in target order. */
static rnnc_status add_group(rt_fused *const *models, const rt_fused_aot_target *t, int n,
                             rt_bundle *b)
{
    rt_fused_req r[8];
    const rt_kernel_req *reqs[8];
    void *cubin[8] = {NULL};
    size_t size[8] = {0};
    int at[9] = {0}, nr = 0;
    /* layer 0's set of each model, and that of the layers above */
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < (models[i]->spec.layers > 1 ? 2 : 1); k++)
            rt_fused_request_kind(models[i], k, t[i].batch, &r[nr++]);
        at[i + 1] = nr;
    }
    for (int i = 0; i < nr; i++)
        reqs[i] = &r[i].req;
    rnnc_status st = rt_cubin_get_all(reqs, nr, cubin, size);
    for (int i = 0; st == RNNC_OK && i < n; i++) {
        char key[512], text[64];
        for (int j = at[i]; st == RNNC_OK && j < at[i + 1]; j++)
            st = rt_bundle_add(b, &r[j].req, cubin[j], size[j]);
        rt_fused_shape_key(models[i], t[i].batch, key, sizeof key);
        rt_fused_tuning_text(models[i]->tuning, text, sizeof text);
        if (st == RNNC_OK)
            st = rt_bundle_add_tuning(b, key, text);
    }
    for (int i = 0; i < nr; i++)
        free(cubin[i]);
    return st;
}

/* Targets are made one after the other (the generator is cheap) and
 * compiled in groups of eight kernel sets, a thread a set
 * (rt_cubin_get_all): eight targets of a single layer, four of a stack.
 * A bundle of several batch sizes and archs thus costs a few compiles'
 * time, not their sum. */
rnnc_status rt_fused_aot_add_all(const rt_spec *s, rt_fused_aot_target *t, int n, rt_bundle *b)
{
    if (!s || !t || !b || n < 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_fused_aot_add_all: bad argument");
    rnnc_status st = RNNC_OK;
    int per = s->layers > 1 ? 4 : 8;
    for (int g = 0; st == RNNC_OK && g < n; g += per) {
        rt_fused *models[8] = {NULL};
        int k = n - g < per ? n - g : per, made = 0;
        for (; made < k; made++) {
            if ((st = make(s, &t[g + made], &models[made]))) {
                err_fail_append("bundle: B=%lld for sm_%d", (long long)t[g + made].batch,
                                t[g + made].sm);
                break;
            }
            t[g + made].from = models[made]->tuning_from;
        }
        if (st == RNNC_OK && (st = add_group(models, &t[g], k, b)))
            err_fail_append("bundle: B=%lld to B=%lld for sm_%d to sm_%d",
                            (long long)t[g].batch, (long long)t[g + k - 1].batch, t[g].sm,
                            t[g + k - 1].sm);
        for (int i = 0; i < made; i++)
            rt_fused_free(models[i]);
    }
    return st;
}

#endif /* RT_HAVE_CUDA_H */
