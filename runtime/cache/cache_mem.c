/*
 * cache_mem.c: the in-process level of the kernel cache: (request, device)
 * -> loaded module and functions, shared by every model of the process.
 * A hit is a hash of the request and a scan under a mutex (microseconds);
 * a miss goes to a bundle, the disk cache or NVRTC without holding the lock.
 */
#define _GNU_SOURCE
#include "runtime/cache/cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifdef RT_HAVE_CUDA_H

typedef struct mem_entry {
    rt_cache_key key;
    int device;
    bool hit_logged; /* RNNC_LOG=info reports the first memory hit only */
    CUmodule module;
    CUfunction fn[RT_MAX_KERNELS];
    int n;
} mem_entry;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_entry *g_tab;
static size_t g_n, g_cap;

static mem_entry *find(rt_cache_key k, int device)
{
    for (size_t i = 0; i < g_n; i++)
        if (g_tab[i].key.lo == k.lo && g_tab[i].key.hi == k.hi && g_tab[i].device == device)
            return &g_tab[i];
    return NULL;
}

static void fill_out(const mem_entry *e, rt_kernel *out)
{
    out->module = e->module;
    out->n = e->n;
    memcpy(out->fn, e->fn, sizeof e->fn);
}

/* True on a hit (out filled); says whether this hit should be logged. */
static bool lookup(rt_cache_key k, int device, rt_kernel *out, bool *log_it)
{
    pthread_mutex_lock(&g_lock);
    mem_entry *e = find(k, device);
    if (e) {
        fill_out(e, out);
        *log_it = !e->hit_logged;
        e->hit_logged = true;
    }
    pthread_mutex_unlock(&g_lock);
    return e != NULL;
}

/* Another thread may have loaded the same request meanwhile: keep theirs. */
static rnnc_status insert(const mem_entry *fresh, rt_kernel *out)
{
    rnnc_status s = RNNC_OK;
    pthread_mutex_lock(&g_lock);
    mem_entry *e = find(fresh->key, fresh->device);
    if (e) {
        fill_out(e, out);
        rt_cu()->ModuleUnload(fresh->module);
        goto unlock;
    }
    if (g_n == g_cap) {
        size_t cap = g_cap ? 2 * g_cap : 32;
        mem_entry *t = realloc(g_tab, cap * sizeof *t);
        if (!t) {
            rt_cu()->ModuleUnload(fresh->module);
            s = err_fail(RNNC_ERR_OUT_OF_MEMORY, "kernel cache table");
            goto unlock;
        }
        g_tab = t;
        g_cap = cap;
    }
    g_tab[g_n++] = *fresh;
    fill_out(fresh, out);
unlock:
    pthread_mutex_unlock(&g_lock);
    return s;
}

static rnnc_status load_module(const rt_kernel_req *req, const void *cubin, mem_entry *e)
{
    const rt_cuda_api *cu = rt_cu();
    rnnc_status s = rt_cuda_check(cu->ModuleLoadData(&e->module, cubin), "cuModuleLoadData");
    if (s != RNNC_OK) {
        err_fail_append("kernel %s for sm_%d", req->name ? req->name : "?", req->sm);
        return s;
    }
    for (int i = 0; i < req->n_kernels; i++) {
        s = rt_cuda_check(cu->ModuleGetFunction(&e->fn[i], e->module, req->kernels[i]),
                          "cuModuleGetFunction");
        if (s != RNNC_OK) {
            err_fail_append("no __global__ \"%s\" in %s (declared extern \"C\"?)",
                            req->kernels[i], req->name ? req->name : "?");
            cu->ModuleUnload(e->module);
            return s;
        }
    }
    e->n = req->n_kernels;
    return RNNC_OK;
}

/* A bundle first (it needs no NVRTC), then the disk cache or NVRTC. */
static rnnc_status find_cubin(const rt_kernel_req *req, void **cubin, size_t *size,
                              rt_origin *origin)
{
    double t0 = cm_now_ms();
    if (rt_bundle_lookup(req, req->sm, cubin, size)) {
        *origin = RT_FROM_BUNDLE;
        rt_cache_log(req, req->sm, RT_FROM_BUNDLE, cm_now_ms() - t0);
        return RNNC_OK;
    }
    char archs[128];
    if (!rt_nvrtc_available() && rt_bundle_other_arch(req, req->sm, archs, sizeof archs))
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "kernel %s: the loaded bundle holds %s, this device is sm_%d, and "
                        "NVRTC is not available to compile for it",
                        req->name ? req->name : "?", archs, req->sm);
    rnnc_status s = rt_cubin_get(req, cubin, size, origin);
    if (s != RNNC_OK && !rt_nvrtc_available() && rt_bundle_registered_kernels()) {
        rt_bundle_registered_archs(archs, sizeof archs);
        err_fail_append("kernel %s (sm_%d) is not in the loaded bundle (%s): rebuild the "
                        "bundle with `rnnc compile` for this shape and arch",
                        req->name ? req->name : "?", req->sm, archs);
    }
    return s;
}

static rnnc_status build(const rt_kernel_req *req, int device, rt_cache_key k, rt_kernel *out)
{
    void *cubin = NULL;
    size_t size = 0;
    rt_origin origin = RT_FROM_COMPILE;
    rnnc_status s = find_cubin(req, &cubin, &size, &origin);
    if (s != RNNC_OK)
        return s;
    mem_entry e = {.key = k, .device = device};
    s = load_module(req, cubin, &e);
    free(cubin);
    if (s == RNNC_OK)
        s = insert(&e, out);
    out->origin = origin;
    return s;
}

rnnc_status rt_kernel_get(const rt_kernel_req *req, int device, rt_kernel *out)
{
    double t0 = cm_now_ms();
    if (!req || !out)
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_kernel_get: NULL argument");
    rnnc_status s = rt_cuda_context(device);
    rt_kernel_req r = *req;
    if (s == RNNC_OK && r.sm == 0)
        s = rt_cuda_arch(device, &r.sm);
    rt_cache_key k;
    if (s == RNNC_OK)
        s = rt_cache_mem_key(&r, r.sm, &k);
    if (s != RNNC_OK)
        return s;
    bool log_it = false;
    if (lookup(k, device, out, &log_it)) {
        out->origin = RT_FROM_MEMORY;
        out->ms = cm_now_ms() - t0;
        if (log_it)
            rt_cache_log(&r, r.sm, RT_FROM_MEMORY, out->ms);
        return RNNC_OK;
    }
    s = build(&r, device, k, out);
    out->ms = cm_now_ms() - t0;
    return s;
}

void rt_kernel_cache_clear(void)
{
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_n; i++)
        if (rt_cuda_context(g_tab[i].device) == RNNC_OK)
            rt_cu()->ModuleUnload(g_tab[i].module);
    free(g_tab);
    g_tab = NULL;
    g_n = g_cap = 0;
    pthread_mutex_unlock(&g_lock);
}

#endif /* RT_HAVE_CUDA_H */
