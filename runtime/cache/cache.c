/*
 * cache.c: the kernel cache's key and its cubin level: a request becomes a
 * cubin from the disk cache or, failing that, from NVRTC (then stored).
 * Needs no GPU.  The loaded-module level is cache_mem.c; docs/cache.md.
 */
#define _GNU_SOURCE
#include "runtime/cache/cache.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

const char *rt_origin_name(rt_origin o)
{
    switch (o) {
    case RT_FROM_MEMORY:
        return "memory";
    case RT_FROM_DISK:
        return "disk";
    case RT_FROM_BUNDLE:
        return "bundle";
    case RT_FROM_COMPILE:
        return "compile";
    }
    return "?";
}

void rt_cache_key_hex(rt_cache_key k, char hex[33])
{
    snprintf(hex, 33, "%016llx%016llx", (unsigned long long)k.hi, (unsigned long long)k.lo);
}

/* Every field is length-prefixed, so no two different requests can hash
 * the same byte stream ("ab" + "c" vs "a" + "bc"). */
static void put_str(XXH3_state_t *st, const char *s)
{
    uint64_t n = s ? strlen(s) : UINT64_MAX;
    XXH3_128bits_update(st, &n, sizeof n);
    if (s)
        XXH3_128bits_update(st, s, (size_t)n);
}

static void put_int(XXH3_state_t *st, int64_t v)
{
    XXH3_128bits_update(st, &v, sizeof v);
}

static rnnc_status check_req(const rt_kernel_req *req)
{
    if (!req || !req->source)
        return err_fail(RNNC_ERR_INVALID_ARG, "kernel request without source");
    if (req->n_opts < 0 || (req->n_opts > 0 && !req->opts))
        return err_fail(RNNC_ERR_INVALID_ARG, "kernel request %s: bad option list",
                        req->name ? req->name : "?");
    if (req->n_kernels < 0 || req->n_kernels > RT_MAX_KERNELS ||
        (req->n_kernels > 0 && !req->kernels))
        return err_fail(RNNC_ERR_INVALID_ARG, "kernel request %s: %d kernels (at most %d)",
                        req->name ? req->name : "?", req->n_kernels, RT_MAX_KERNELS);
    return RNNC_OK;
}

/* What the compiler sees, less NVRTC's own version (see rt_cache_key_of). */
static void hash_req(XXH3_state_t *st, const rt_kernel_req *req, int sm)
{
    put_str(st, "rnnc kernel");
    put_int(st, RT_CODEGEN_VERSION);
    put_int(st, sm);
    const char *const *base = rt_nvrtc_base_options();
    for (int i = 0; base[i]; i++)
        put_str(st, base[i]);
    put_int(st, req->n_opts);
    for (int i = 0; i < req->n_opts; i++)
        put_str(st, req->opts[i]);
    put_str(st, req->tuning);
    put_str(st, req->source);
}

rnnc_status rt_cache_key_of(const rt_kernel_req *req, int sm, rt_cache_key *out)
{
    rnnc_status s = check_req(req);
    int major = 0, minor = 0;
    if (s == RNNC_OK)
        s = rt_nvrtc_version(&major, &minor);
    if (s != RNNC_OK)
        return s;
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    hash_req(&st, req, sm);
    put_int(&st, major);
    put_int(&st, minor);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    out->lo = h.low64;
    out->hi = h.high64;
    return RNNC_OK;
}

rnnc_status rt_cache_mem_key(const rt_kernel_req *req, int sm, rt_cache_key *out)
{
    rnnc_status s = check_req(req);
    if (s != RNNC_OK)
        return s;
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    hash_req(&st, req, sm);
    put_int(&st, req->n_kernels);
    for (int i = 0; i < req->n_kernels; i++)
        put_str(&st, req->kernels[i]);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    out->lo = h.low64;
    out->hi = h.high64;
    return RNNC_OK;
}

void rt_cache_key_host(const char *const *texts, int n, rt_cache_key *out)
{
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    put_str(&st, "rnnc host object");
    put_int(&st, n);
    for (int i = 0; i < n; i++)
        put_str(&st, texts[i]);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    out->lo = h.low64;
    out->hi = h.high64;
}

static _Atomic unsigned long origin_count[RT_FROM_COMPILE + 1];

unsigned long rt_cache_origin_count(rt_origin o)
{
    return (unsigned)o <= RT_FROM_COMPILE ? origin_count[o] : 0;
}

void rt_cache_note_origin(rt_origin o)
{
    if ((unsigned)o <= RT_FROM_COMPILE)
        origin_count[o]++;
}

void rt_cache_log(const rt_kernel_req *req, int sm, rt_origin o, double ms)
{
    rt_cache_note_origin(o);
    if (cm_log_enabled("info"))
        fprintf(stderr, "rnnc: kernel %s (sm_%d): %s, %.3f ms\n", req->name ? req->name : "?",
                sm, rt_origin_name(o), ms);
}

static rnnc_status from_disk(rt_cache_key k, const rt_kernel_req *req, void **cubin,
                             size_t *size)
{
    char why[160];
    rnnc_status s = rt_cache_read(k, cubin, size, why, sizeof why);
    if (s == RNNC_ERR_FORMAT && cm_log_enabled("info"))
        fprintf(stderr, "rnnc: cache entry for %s is bad (%s): recompiling\n",
                req->name ? req->name : "?", why);
    return s;
}

rnnc_status rt_cubin_get(const rt_kernel_req *req, void **cubin, size_t *size,
                         rt_origin *origin)
{
    double t0 = cm_now_ms();
    rt_cache_key k;
    rnnc_status s = rt_cache_key_of(req, req ? req->sm : 0, &k);
    if (s != RNNC_OK)
        return s;
    if (!cubin || !size)
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_cubin_get: NULL output");
    rt_origin o = RT_FROM_DISK;
    if (from_disk(k, req, cubin, size) != RNNC_OK) {
        o = RT_FROM_COMPILE;
        s = rt_nvrtc_compile(req->source, req->name, req->sm, req->opts, req->n_opts, cubin,
                             size);
        if (s != RNNC_OK)
            return s;
        rt_cache_write(k, req->name, req->sm, *cubin, *size);
    }
    if (origin)
        *origin = o;
    rt_cache_log(req, req->sm, o, cm_now_ms() - t0);
    return RNNC_OK;
}
