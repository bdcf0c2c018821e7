/*
 * bundle.c: ahead-of-time bundles (.rnncpkg) in memory: the cubins of a
 * model for several sm_XX, the cpu backend's object files for named CPUs
 * and the tuning records, and the registry of the bundles a process loaded,
 * which the kernel cache and the cpu backend look in before they compile.
 * The file (header, manifest, payloads) is bundle_file.c's.
 */
#define _GNU_SOURCE
#include "runtime/cache/cache.h"

#include "common/common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct bundle_kernel {
    rt_cache_key key;
    int sm;
    char *name;
    char *target; /* NULL for a cubin; the cpu target for an object file */
    void *data;
    size_t size;
} bundle_kernel;

typedef struct bundle_tuning {
    char *shape, *tuning;
} bundle_tuning;

struct rt_bundle {
    bundle_kernel *k;
    int n_k, cap_k;
    bundle_tuning *t;
    int n_t, cap_t;
};

#define MAX_REGISTERED 16
static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static const rt_bundle *g_reg[MAX_REGISTERED];

rnnc_status rt_bundle_create(rt_bundle **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? RNNC_OK : err_fail(RNNC_ERR_OUT_OF_MEMORY, "bundle");
}

static void free_kernel(bundle_kernel *k)
{
    free(k->name);
    free(k->target);
    free(k->data);
}

void rt_bundle_destroy(rt_bundle *b)
{
    if (!b)
        return;
    rt_bundle_unregister(b);
    for (int i = 0; i < b->n_k; i++)
        free_kernel(&b->k[i]);
    for (int i = 0; i < b->n_t; i++) {
        free(b->t[i].shape);
        free(b->t[i].tuning);
    }
    free(b->k);
    free(b->t);
    free(b);
}

static bool grow(void **arr, int *cap, int n, size_t elem)
{
    if (n < *cap)
        return true;
    int c = *cap ? 2 * *cap : 8;
    void *p = realloc(*arr, (size_t)c * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = c;
    return true;
}

rnnc_status rt_bundle_add_entry(rt_bundle *b, const rt_bundle_entry *e)
{
    if (!b || !e || (!e->data && e->size))
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_bundle_add_entry: NULL argument");
    if (!grow((void **)&b->k, &b->cap_k, b->n_k, sizeof *b->k))
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "bundle entries");
    bundle_kernel *k = &b->k[b->n_k];
    *k = (bundle_kernel){.key = e->key, .sm = e->sm, .size = e->size};
    k->name = strdup(e->name ? e->name : "");
    k->target = e->target ? strdup(e->target) : NULL;
    k->data = malloc(e->size ? e->size : 1);
    if (!k->name || !k->data || (e->target && !k->target)) {
        free_kernel(k);
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "bundle entry of %zu bytes", e->size);
    }
    if (e->size)
        memcpy(k->data, e->data, e->size);
    b->n_k++;
    return RNNC_OK;
}

rnnc_status rt_bundle_add(rt_bundle *b, const rt_kernel_req *req, const void *cubin,
                          size_t size)
{
    rt_bundle_entry e = {.sm = req ? req->sm : 0, .name = req ? req->name : NULL,
                         .data = cubin, .size = size};
    if (!b || !cubin || !req)
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_bundle_add: NULL argument");
    rnnc_status s = rt_cache_mem_key(req, req->sm, &e.key);
    return s != RNNC_OK ? s : rt_bundle_add_entry(b, &e);
}

rnnc_status rt_bundle_add_host(rt_bundle *b, rt_cache_key key, const char *name,
                               const char *target, const void *obj, size_t size)
{
    rt_bundle_entry e = {.key = key, .sm = RT_CACHE_HOST, .name = name, .target = target,
                         .data = obj, .size = size};
    if (!target || !*target || !obj)
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_bundle_add_host: no target or object");
    return rt_bundle_add_entry(b, &e);
}

void rt_bundle_entry_at(const rt_bundle *b, int i, rt_bundle_entry *e)
{
    const bundle_kernel *k = &b->k[i];
    *e = (rt_bundle_entry){.key = k->key, .sm = k->sm, .name = k->name, .target = k->target,
                           .data = k->data, .size = k->size};
}

int rt_bundle_tuning_count(const rt_bundle *b)
{
    return b ? b->n_t : 0;
}

void rt_bundle_tuning_at(const rt_bundle *b, int i, const char **shape, const char **tuning)
{
    *shape = b->t[i].shape;
    *tuning = b->t[i].tuning;
}

rnnc_status rt_bundle_add_tuning(rt_bundle *b, const char *shape_key, const char *tuning)
{
    if (!b || !shape_key || !tuning)
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_bundle_add_tuning: NULL argument");
    if (!grow((void **)&b->t, &b->cap_t, b->n_t, sizeof *b->t))
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "bundle tuning records");
    bundle_tuning *t = &b->t[b->n_t];
    t->shape = strdup(shape_key);
    t->tuning = strdup(tuning);
    if (!t->shape || !t->tuning) {
        free(t->shape);
        free(t->tuning);
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "bundle tuning record");
    }
    b->n_t++;
    return RNNC_OK;
}

static bool same_key(rt_cache_key a, rt_cache_key b)
{
    return a.lo == b.lo && a.hi == b.hi;
}

bool rt_bundle_find(const rt_bundle *b, const rt_kernel_req *req, int sm, const void **cubin,
                    size_t *size)
{
    rt_cache_key key;
    if (!b || sm == RT_CACHE_HOST || rt_cache_mem_key(req, sm, &key) != RNNC_OK)
        return false;
    for (int i = 0; i < b->n_k; i++)
        if (same_key(b->k[i].key, key) && b->k[i].sm == sm) {
            *cubin = b->k[i].data;
            *size = b->k[i].size;
            return true;
        }
    return false;
}

rnnc_status rt_bundle_tuning(const rt_bundle *b, const char *shape_key, const char **tuning)
{
    for (int i = 0; b && shape_key && i < b->n_t; i++)
        if (strcmp(b->t[i].shape, shape_key) == 0) {
            *tuning = b->t[i].tuning;
            return RNNC_OK;
        }
    return RNNC_ERR_NOT_FOUND;
}

int rt_bundle_count(const rt_bundle *b)
{
    return b ? b->n_k : 0;
}

/* How listings name entry k's arch: sm_90, or cpu:<the target's name>. */
static void arch_name(const bundle_kernel *k, char *buf, size_t n)
{
    if (!k->target) {
        snprintf(buf, n, "sm_%d", k->sm);
        return;
    }
    size_t len = strcspn(k->target, " ");
    snprintf(buf, n, "cpu:%.*s", (int)(len < 40 ? len : 40), k->target);
}

void rt_bundle_archs(const rt_bundle *b, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; b && i < b->n_k; i++) {
        char one[48];
        arch_name(&b->k[i], one, sizeof one);
        if (strstr(buf, one))
            continue;
        int w = snprintf(buf + len, n - len, "%s%s", len ? "," : "", one);
        if (w < 0 || (size_t)w >= n - len)
            return;
        len += (size_t)w;
    }
}
/* ---------------------------------------------------------------- registry */

rnnc_status rt_bundle_register(const rt_bundle *b)
{
    rnnc_status s = err_fail(RNNC_ERR_UNSUPPORTED, "more than %d bundles", MAX_REGISTERED);
    pthread_mutex_lock(&g_reg_lock);
    for (int i = 0; i < MAX_REGISTERED; i++)
        if (g_reg[i] == b || !g_reg[i]) {
            g_reg[i] = b;
            s = RNNC_OK;
            break;
        }
    pthread_mutex_unlock(&g_reg_lock);
    return s;
}

void rt_bundle_unregister(const rt_bundle *b)
{
    pthread_mutex_lock(&g_reg_lock);
    for (int i = 0; i < MAX_REGISTERED; i++)
        if (g_reg[i] == b)
            g_reg[i] = NULL;
    pthread_mutex_unlock(&g_reg_lock);
}

bool rt_bundle_lookup(const rt_kernel_req *req, int sm, void **cubin, size_t *size)
{
    bool found = false;
    pthread_mutex_lock(&g_reg_lock);
    for (int i = 0; i < MAX_REGISTERED && !found; i++) {
        const void *data;
        size_t n;
        if (g_reg[i] && rt_bundle_find(g_reg[i], req, sm, &data, &n)) {
            *cubin = malloc(n ? n : 1);
            if (*cubin) {
                memcpy(*cubin, data, n);
                *size = n;
                found = true;
            }
        }
    }
    pthread_mutex_unlock(&g_reg_lock);
    return found;
}

bool rt_bundle_other_arch(const rt_kernel_req *req, int sm, char *archs, size_t n)
{
    bool found = false;
    pthread_mutex_lock(&g_reg_lock);
    for (int i = 0; i < MAX_REGISTERED && !found; i++) {
        if (!g_reg[i])
            continue;
        for (int j = 0; j < g_reg[i]->n_k && !found; j++) {
            const void *data;
            size_t sz;
            int other = g_reg[i]->k[j].sm;
            if (other != sm && rt_bundle_find(g_reg[i], req, other, &data, &sz)) {
                rt_bundle_archs(g_reg[i], archs, n);
                found = true;
            }
        }
    }
    pthread_mutex_unlock(&g_reg_lock);
    return found;
}

int rt_bundle_registered(void)
{
    int n = 0;
    pthread_mutex_lock(&g_reg_lock);
    for (int i = 0; i < MAX_REGISTERED; i++)
        n += g_reg[i] != NULL;
    pthread_mutex_unlock(&g_reg_lock);
    return n;
}

bool rt_bundle_registered_kernels(void)
{
    bool found = false;
    pthread_mutex_lock(&g_reg_lock);
    for (int i = 0; i < MAX_REGISTERED && !found; i++)
        for (int j = 0; g_reg[i] && j < g_reg[i]->n_k && !found; j++)
            found = !g_reg[i]->k[j].target;
    pthread_mutex_unlock(&g_reg_lock);
    return found;
}

void rt_bundle_registered_archs(char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    pthread_mutex_lock(&g_reg_lock);
    for (int i = 0; i < MAX_REGISTERED && len + 1 < n; i++) {
        if (!g_reg[i])
            continue;
        char one[128];
        rt_bundle_archs(g_reg[i], one, sizeof one);
        if (!*one || strstr(buf, one))
            continue;
        int w = snprintf(buf + len, n - len, "%s%s", len ? "," : "", one);
        len = w < 0 || (size_t)w >= n - len ? n - 1 : len + (size_t)w;
    }
    pthread_mutex_unlock(&g_reg_lock);
}

bool rt_bundle_lookup_tuning(const char *shape_key, char *buf, size_t n)
{
    bool found = false;
    pthread_mutex_lock(&g_reg_lock);
    for (int i = 0; i < MAX_REGISTERED && !found; i++) {
        const char *t = NULL;
        if (g_reg[i] && rt_bundle_tuning(g_reg[i], shape_key, &t) == RNNC_OK &&
            strlen(t) < n) {
            memcpy(buf, t, strlen(t) + 1);
            found = true;
        }
    }
    pthread_mutex_unlock(&g_reg_lock);
    return found;
}

bool rt_bundle_has_tuning_prefix(const char *prefix)
{
    bool found = false;
    size_t len = prefix ? strlen(prefix) : 0;
    pthread_mutex_lock(&g_reg_lock);
    for (int i = 0; prefix && i < MAX_REGISTERED && !found; i++)
        for (int j = 0; g_reg[i] && j < g_reg[i]->n_t && !found; j++)
            found = strncmp(g_reg[i]->t[j].shape, prefix, len) == 0;
    pthread_mutex_unlock(&g_reg_lock);
    return found;
}

bool rt_bundle_lookup_host(rt_cache_key key, const char *target, void **obj, size_t *size)
{
    bool found = false;
    pthread_mutex_lock(&g_reg_lock);
    for (int i = 0; i < MAX_REGISTERED && !found; i++)
        for (int j = 0; g_reg[i] && j < g_reg[i]->n_k && !found; j++) {
            const bundle_kernel *k = &g_reg[i]->k[j];
            if (!k->target || !same_key(k->key, key) || strcmp(k->target, target) != 0)
                continue;
            if ((*obj = malloc(k->size ? k->size : 1))) {
                memcpy(*obj, k->data, k->size);
                *size = k->size;
                found = true;
            }
        }
    pthread_mutex_unlock(&g_reg_lock);
    return found;
}

int rt_bundle_host_targets(bool (*each)(const char *target, void *ctx), void *ctx)
{
    int n = 0;
    pthread_mutex_lock(&g_reg_lock);
    for (int i = 0; i < MAX_REGISTERED; i++)
        for (int j = 0; g_reg[i] && j < g_reg[i]->n_k; j++) {
            const char *t = g_reg[i]->k[j].target;
            bool seen = false;
            for (int jj = 0; t && jj < j && !seen; jj++)
                seen = g_reg[i]->k[jj].target && strcmp(g_reg[i]->k[jj].target, t) == 0;
            if (t && !seen && each(t, ctx))
                n++;
        }
    pthread_mutex_unlock(&g_reg_lock);
    return n;
}
