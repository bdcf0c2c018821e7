/*
 * bundle.c: the public face of ahead-of-time bundles.  rnnc_bundle_compile
 * specialises the cell exactly as rnnc_model_create does (through a model
 * on the interpreter, which needs no device) and hands the spec to the
 * fused backend's AOT path; rnnc_bundle_load registers a bundle with the
 * kernel cache for the rest of the process.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/api.h"
#include "runtime/fused/fused.h"

#ifdef RT_HAVE_CUDA_H

/* The SM count of each arch's datacenter part: A100, H100 SXM, B200. */
static int default_sm_count(int sm)
{
    switch (sm) {
    case 80: return 108;
    case 90: return 132;
    case 100: return 148;
    default: return 0;
    }
}

static rnnc_status check_args(const int64_t *batches, int n_batches, const int *archs,
                              int n_archs, int sm_count, const char *path)
{
    if (!batches || n_batches < 1 || !archs || n_archs < 1 || !path || sm_count < 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_bundle_compile: no batch, arch or path");
    for (int i = 0; i < n_batches; i++)
        if (batches[i] < 1)
            return err_fail(RNNC_ERR_INVALID_ARG, "bundle: batch sizes must be >= 1");
    for (int i = 0; i < n_archs; i++) {
        if (archs[i] < 50 || archs[i] > 199)
            return err_fail(RNNC_ERR_INVALID_ARG, "bundle: sm_%d is not a CUDA arch", archs[i]);
        if (!sm_count && !default_sm_count(archs[i]))
            return err_fail(RNNC_ERR_INVALID_ARG,
                            "bundle: no default SM count for sm_%d: give the target devices' "
                            "SM count (--sm-count)", archs[i]);
    }
    return RNNC_OK;
}

static rnnc_status fill(rt_bundle *b, const rt_spec *s, const int64_t *batches, int n_batches,
                        const int *archs, int n_archs, int sm_count)
{
    int n = n_archs * n_batches;
    rt_fused_aot_target *t = calloc((size_t)n, sizeof *t);
    if (!t)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "bundle: out of memory");
    for (int a = 0; a < n_archs; a++)
        for (int i = 0; i < n_batches; i++)
            t[a * n_batches + i] = (rt_fused_aot_target){
                .batch = batches[i], .sm = archs[a],
                .sm_count = sm_count ? sm_count : default_sm_count(archs[a])};
    rnnc_status st = rt_fused_aot_add_all(s, t, n, b);
    for (int i = 0; st == RNNC_OK && i < n && cm_log_enabled("info"); i++)
        fprintf(stderr, "rnnc: bundle: B=%lld sm_%d (%d SMs), tuning from %s\n",
                (long long)t[i].batch, t[i].sm, t[i].sm_count, t[i].from);
    free(t);
    return st;
}

rnnc_status rnnc_bundle_compile(const rnnc_model_desc *d, const int64_t *batches, int n_batches,
                                const int *archs, int n_archs, int sm_count, const char *path)
{
    if (!d)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_bundle_compile: NULL description");
    rnnc_status st = check_args(batches, n_batches, archs, n_archs, sm_count, path);
    if (st)
        return st;
    rnnc_model_desc dd = *d;
    dd.backend = RNNC_BACKEND_INTERP;
    rnnc_model *m = NULL;
    rt_bundle *b = NULL;
    if ((st = rnnc_model_create(&m, &dd)))
        return st;
    if ((st = rt_bundle_create(&b)))
        goto destroy_model;
    st = fill(b, &m->spec, batches, n_batches, archs, n_archs, sm_count);
    if (st == RNNC_OK)
        st = rt_bundle_save(b, path);
    rt_bundle_destroy(b);
destroy_model:
    rnnc_model_destroy(m);
    return st;
}

#else

rnnc_status rnnc_bundle_compile(const rnnc_model_desc *d, const int64_t *batches, int n_batches,
                                const int *archs, int n_archs, int sm_count, const char *path)
{
    (void)d, (void)batches, (void)n_batches, (void)archs, (void)n_archs, (void)sm_count,
        (void)path;
    return err_fail(RNNC_ERR_NOT_BUILT, "bundles: rnnc was built without CUDA");
}

#endif

/* Loaded bundles live until rnnc_bundle_unload_all: the kernel cache reads
 * them whenever a model needs a kernel. */
#define MAX_LOADED 16
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_bundle *g_loaded[MAX_LOADED];

static rnnc_status keep(rt_bundle *b)
{
    rnnc_status st = err_fail(RNNC_ERR_UNSUPPORTED, "more than %d bundles loaded", MAX_LOADED);
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < MAX_LOADED; i++)
        if (!g_loaded[i]) {
            st = rt_bundle_register(b);
            if (st == RNNC_OK)
                g_loaded[i] = b;
            break;
        }
    pthread_mutex_unlock(&g_lock);
    return st;
}

rnnc_status rnnc_bundle_load(const char *path)
{
    if (!path)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_bundle_load: NULL path");
    rt_bundle *b = NULL;
    rnnc_status st = rt_bundle_load(&b, path);
    if (st)
        return st;
    if ((st = keep(b))) {
        rt_bundle_destroy(b);
        return st;
    }
    if (cm_log_enabled("info")) {
        char archs[128];
        rt_bundle_archs(b, archs, sizeof archs);
        fprintf(stderr, "rnnc: bundle %s: %d kernel sets for %s\n", path, rt_bundle_count(b),
                archs);
    }
    return RNNC_OK;
}

void rnnc_bundle_unload_all(void)
{
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < MAX_LOADED; i++) {
        rt_bundle_destroy(g_loaded[i]); /* unregisters it */
        g_loaded[i] = NULL;
    }
    pthread_mutex_unlock(&g_lock);
}
