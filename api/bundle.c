/*
 * bundle.c: the public face of ahead-of-time bundles.  rnnc_bundle_compile
 * specialises the cell exactly as rnnc_model_create does (through a model
 * on the interpreter, which needs no device) and hands the spec to the
 * fused backend's AOT path for each sm_XX target and to the cpu backend's
 * for each cpu target; rnnc_bundle_load registers a bundle with the kernel
 * cache for the rest of the process.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "runtime/cpu/cpu.h"
#include "runtime/fused/fused.h"

#define MAX_TARGETS 32

/* The targets by kind: sm numbers, and cpu target names ("native", ...). */
typedef struct targets {
    int sm[MAX_TARGETS], n_sm;
    const char *cpu[MAX_TARGETS];
    int n_cpu;
} targets;

/* "sm_90" or "90" as 90; "cpu" as native, "cpu:NAME" as NAME. */
static rnnc_status sort_target(const char *t, targets *out)
{
    if (!t || !*t)
        return err_fail(RNNC_ERR_INVALID_ARG, "bundle: an empty target");
    if (strcmp(t, "cpu") == 0 || strncmp(t, "cpu:", 4) == 0) {
        out->cpu[out->n_cpu++] = t[3] ? t + 4 : "native";
        return RNNC_OK;
    }
    const char *num = strncmp(t, "sm_", 3) == 0 ? t + 3 : t;
    char *end = NULL;
    long v = strtol(num, &end, 10);
    if (end == num || *end || v < 50 || v > 199)
        return err_fail(RNNC_ERR_INVALID_ARG,
                        "bundle: target '%s' is neither a CUDA arch (sm_80, sm_90, ...) nor a "
                        "cpu target (cpu, cpu:x86-64-v2, cpu:x86-64-v3, cpu:x86-64-v4)", t);
    out->sm[out->n_sm++] = (int)v;
    return RNNC_OK;
}

static rnnc_status sort_targets(const char *const *names, int n, const int64_t *batches,
                                int n_batches, targets *out)
{
    if (!names || n < 1 || n > MAX_TARGETS)
        return err_fail(RNNC_ERR_INVALID_ARG, "bundle: 1 to %d targets, please", MAX_TARGETS);
    for (int i = 0; i < n; i++) {
        rnnc_status st = sort_target(names[i], out);
        if (st != RNNC_OK)
            return st;
    }
    if (out->n_sm && (!batches || n_batches < 1))
        return err_fail(RNNC_ERR_INVALID_ARG,
                        "bundle: the fused kernels (sm_XX targets) want batch sizes");
    for (int i = 0; out->n_sm && i < n_batches; i++)
        if (batches[i] < 1)
            return err_fail(RNNC_ERR_INVALID_ARG, "bundle: batch sizes must be >= 1");
    return RNNC_OK;
}

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

static rnnc_status fill_fused(rt_bundle *b, const rt_spec *s, const int64_t *batches,
                              int n_batches, const targets *tg, int sm_count)
{
    for (int a = 0; a < tg->n_sm; a++)
        if (!sm_count && !default_sm_count(tg->sm[a]))
            return err_fail(RNNC_ERR_INVALID_ARG,
                            "bundle: no default SM count for sm_%d: give the target devices' "
                            "SM count (--sm-count)", tg->sm[a]);
    int n = tg->n_sm * n_batches;
    rt_fused_aot_target *t = calloc((size_t)n, sizeof *t);
    if (!t)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "bundle: out of memory");
    for (int a = 0; a < tg->n_sm; a++)
        for (int i = 0; i < n_batches; i++)
            t[a * n_batches + i] = (rt_fused_aot_target){
                .batch = batches[i], .sm = tg->sm[a],
                .sm_count = sm_count ? sm_count : default_sm_count(tg->sm[a])};
    rnnc_status st = rt_fused_aot_add_all(s, t, n, b);
    for (int i = 0; st == RNNC_OK && i < n && cm_log_enabled("info"); i++)
        fprintf(stderr, "rnnc: bundle: B=%lld sm_%d (%d SMs), tuning from %s\n",
                (long long)t[i].batch, t[i].sm, t[i].sm_count, t[i].from);
    free(t);
    return st;
}

#else

static rnnc_status fill_fused(rt_bundle *b, const rt_spec *s, const int64_t *batches,
                              int n_batches, const targets *tg, int sm_count)
{
    (void)b, (void)s, (void)batches, (void)n_batches, (void)sm_count;
    return err_fail(RNNC_ERR_NOT_BUILT, "bundle: rnnc was built without CUDA (sm_%d)",
                    tg->sm[0]);
}

#endif

static rnnc_status fill_cpu(rt_bundle *b, const rt_spec *s, const targets *tg)
{
#ifdef RNNC_HAVE_LLVM
    rnnc_status st = RNNC_OK;
    for (int i = 0; i < tg->n_cpu && st == RNNC_OK; i++)
        st = rt_cpu_aot_add(s, tg->cpu[i], b);
    return st;
#else
    (void)b, (void)s;
    return err_fail(RNNC_ERR_NOT_BUILT,
                    "bundle: rnnc was built without LLVM, so it has no cpu code (cpu:%s)",
                    tg->cpu[0]);
#endif
}

rnnc_status rnnc_bundle_compile_targets(const rnnc_model_desc *d, const int64_t *batches,
                                        int n_batches, const char *const *names, int n_names,
                                        int sm_count, const char *path)
{
    targets tg = {0};
    if (!d || !path || sm_count < 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_bundle_compile: no description or path");
    rnnc_status st = sort_targets(names, n_names, batches, n_batches, &tg);
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
    if (tg.n_sm)
        st = fill_fused(b, &m->spec, batches, n_batches, &tg, sm_count);
    if (st == RNNC_OK && tg.n_cpu)
        st = fill_cpu(b, &m->spec, &tg);
    if (st == RNNC_OK)
        st = rt_bundle_save(b, path);
    rt_bundle_destroy(b);
destroy_model:
    rnnc_model_destroy(m);
    return st;
}

rnnc_status rnnc_bundle_compile(const rnnc_model_desc *d, const int64_t *batches, int n_batches,
                                const int *archs, int n_archs, int sm_count, const char *path)
{
    char text[MAX_TARGETS][16];
    const char *names[MAX_TARGETS];
    if (!archs || n_archs < 1 || n_archs > MAX_TARGETS)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_bundle_compile: 1 to %d archs, please",
                        MAX_TARGETS);
    for (int i = 0; i < n_archs; i++) {
        snprintf(text[i], sizeof text[i], "sm_%d", archs[i]);
        names[i] = text[i];
    }
    return rnnc_bundle_compile_targets(d, batches, n_batches, names, n_archs, sm_count, path);
}

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
        fprintf(stderr, "rnnc: bundle %s: %d kernel sets and objects for %s\n", path, rt_bundle_count(b),
                archs);
    }
    return RNNC_OK;
}

static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;

static void load_env_bundles(void)
{
    const char *e = getenv("RNNC_BUNDLE");
    char *list = e && *e ? strdup(e) : NULL;
    for (char *save = NULL, *p = list ? strtok_r(list, ":", &save) : NULL; p;
         p = strtok_r(NULL, ":", &save))
        if (rnnc_bundle_load(p) != RNNC_OK)
            fprintf(stderr, "rnnc: warning: RNNC_BUNDLE: %s (models compile their code "
                            "without it)\n", rnnc_last_error());
    free(list);
}

void api_bundles_from_env(void)
{
    pthread_once(&g_env_once, load_env_bundles);
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
