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

static rnnc_status add_set(rt_fused *m, int64_t batch, rt_bundle *b)
{
    const char *names[2][CG_CUDA_MAX_LAUNCH];
    char label[2][64], key[512], text[64];
    rt_kernel_req req[2];
    const rt_kernel_req *reqs[2] = {&req[0], &req[1]};
    void *cubin[2] = {NULL, NULL};
    size_t size[2] = {0, 0};
    /* layer 0's kernels, and those of the layers above, compiled at once */
    int n = m->spec.layers > 1 ? 2 : 1;
    for (int k = 0; k < n; k++)
        rt_fused_request(m, k ? m->up.src : m->src, k ? &m->up.plan : &m->plan, batch,
                         names[k], label[k], &req[k]);
    rnnc_status st = rt_cubin_get_all(reqs, n, cubin, size);
    for (int k = 0; k < n; k++) {
        if (st == RNNC_OK)
            st = rt_bundle_add(b, &req[k], cubin[k], size[k]);
        free(cubin[k]);
    }
    if (st)
        return st;
    rt_fused_shape_key(m, batch, key, sizeof key);
    rt_fused_tuning_text(m->tuning, text, sizeof text);
    return rt_bundle_add_tuning(b, key, text);
}

rnnc_status rt_fused_aot_add(const rt_spec *s, int64_t batch, int sm, int sm_count,
                             rt_bundle *b, const char **from)
{
    if (!s || !b || batch < 1 || sm < 1 || sm_count < 1)
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_fused_aot_add: bad argument");
    rt_fused *m = calloc(1, sizeof *m);
    if (!m)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused: out of memory");
    rnnc_status st = rt_fused_init(m, s, sm, sm_count);
    if (st == RNNC_OK)
        st = rt_fused_prepare(m, batch);
    if (st == RNNC_OK)
        st = add_set(m, batch, b);
    if (st == RNNC_OK && from)
        *from = m->tuning_from;
    rt_fused_free(m);
    return st;
}

#endif /* RT_HAVE_CUDA_H */
