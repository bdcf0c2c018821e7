/*
 * bundle.c: ahead-of-time bundles (.rnncpkg): the cubins of a model for
 * several sm_XX and its tuning records in one file, so a deployment loads
 * kernels with the driver alone.  Layout (docs/cache.md): a 32-byte header
 * (magic, format, manifest length and hash), a JSON manifest, payloads.
 * Every length, offset and hash is checked when the file is loaded.
 */
#define _GNU_SOURCE
#include "runtime/cache/cache.h"

#include "common/common.h"

#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

static const char k_magic[8] = {'R', 'N', 'N', 'C', 'P', 'K', 'G', '\0'};

/* The range of every number in a manifest (sm_XX as NVRTC names archs; 2^53:
 * the largest integer a JSON double holds exactly). */
#define BUNDLE_MIN_SM 10
#define BUNDLE_MAX_SM 1000
#define BUNDLE_MAX_INT 9007199254740992ull

typedef struct bundle_header {
    char magic[8];
    uint32_t format;
    uint32_t reserved;
    uint64_t manifest_size;
    uint64_t manifest_hash;
} bundle_header;

_Static_assert(sizeof(bundle_header) == 32, "the bundle header is 32 bytes on disk");

typedef struct bundle_kernel {
    rt_cache_key key;
    int sm;
    char *name;
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

void rt_bundle_destroy(rt_bundle *b)
{
    if (!b)
        return;
    rt_bundle_unregister(b);
    for (int i = 0; i < b->n_k; i++) {
        free(b->k[i].name);
        free(b->k[i].data);
    }
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

static rnnc_status add_kernel(rt_bundle *b, rt_cache_key key, int sm, const char *name,
                              const void *cubin, size_t size)
{
    if (!grow((void **)&b->k, &b->cap_k, b->n_k, sizeof *b->k))
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "bundle entries");
    bundle_kernel *k = &b->k[b->n_k];
    k->key = key;
    k->sm = sm;
    k->name = strdup(name ? name : "");
    k->data = malloc(size ? size : 1);
    k->size = size;
    if (!k->name || !k->data) {
        free(k->name);
        free(k->data);
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "bundle entry of %zu bytes", size);
    }
    memcpy(k->data, cubin, size);
    b->n_k++;
    return RNNC_OK;
}

rnnc_status rt_bundle_add(rt_bundle *b, const rt_kernel_req *req, const void *cubin,
                          size_t size)
{
    rt_cache_key key;
    if (!b || !cubin)
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_bundle_add: NULL argument");
    rnnc_status s = rt_cache_mem_key(req, req->sm, &key);
    return s != RNNC_OK ? s : add_kernel(b, key, req->sm, req->name, cubin, size);
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

bool rt_bundle_find(const rt_bundle *b, const rt_kernel_req *req, int sm, const void **cubin,
                    size_t *size)
{
    rt_cache_key key;
    if (!b || rt_cache_mem_key(req, sm, &key) != RNNC_OK)
        return false;
    for (int i = 0; i < b->n_k; i++)
        if (b->k[i].key.lo == key.lo && b->k[i].key.hi == key.hi && b->k[i].sm == sm) {
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

void rt_bundle_archs(const rt_bundle *b, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; b && i < b->n_k; i++) {
        char one[16];
        snprintf(one, sizeof one, "sm_%d", b->k[i].sm);
        if (strstr(buf, one))
            continue;
        int w = snprintf(buf + len, n - len, "%s%s", len ? "," : "", one);
        if (w < 0 || (size_t)w >= n - len)
            return;
        len += (size_t)w;
    }
}

/* ---------------------------------------------------------------- save */

static cJSON *manifest(const rt_bundle *b)
{
    cJSON *m = cJSON_CreateObject(), *ks = cJSON_AddArrayToObject(m, "kernels");
    cJSON *ts = cJSON_AddArrayToObject(m, "tuning");
    cJSON_AddStringToObject(m, "rnnc", rnnc_version_string());
    cJSON_AddNumberToObject(m, "codegen_version", RT_CODEGEN_VERSION);
    uint64_t off = 0;
    for (int i = 0; i < b->n_k; i++) {
        char hex[33], hash[17];
        cJSON *k = cJSON_CreateObject();
        rt_cache_key_hex(b->k[i].key, hex);
        snprintf(hash, sizeof hash, "%016llx",
                 (unsigned long long)XXH3_64bits(b->k[i].data, b->k[i].size));
        cJSON_AddStringToObject(k, "name", b->k[i].name);
        cJSON_AddNumberToObject(k, "sm", b->k[i].sm);
        cJSON_AddStringToObject(k, "key", hex);
        cJSON_AddNumberToObject(k, "offset", (double)off);
        cJSON_AddNumberToObject(k, "size", (double)b->k[i].size);
        cJSON_AddStringToObject(k, "hash", hash);
        cJSON_AddItemToArray(ks, k);
        off += b->k[i].size;
    }
    for (int i = 0; i < b->n_t; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "shape", b->t[i].shape);
        cJSON_AddStringToObject(t, "tuning", b->t[i].tuning);
        cJSON_AddItemToArray(ts, t);
    }
    return m;
}

static rnnc_status write_bundle(cm_out *o, const rt_bundle *b, const bundle_header *h,
                                const char *text, cm_why *why)
{
    rnnc_status s = cm_out_write(o, h, sizeof *h, why);
    if (s == RNNC_OK)
        s = cm_out_write(o, text, h->manifest_size, why);
    for (int i = 0; s == RNNC_OK && i < b->n_k; i++)
        s = cm_out_write(o, b->k[i].data, b->k[i].size, why);
    return s;
}

rnnc_status rt_bundle_save(const rt_bundle *b, const char *path)
{
    if (!b || !path)
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_bundle_save: NULL argument");
    cJSON *m = manifest(b);
    char *text = m ? cJSON_PrintUnformatted(m) : NULL;
    cJSON_Delete(m);
    if (!text)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "bundle manifest");
    bundle_header h = {.format = RT_BUNDLE_FORMAT, .manifest_size = strlen(text)};
    memcpy(h.magic, k_magic, sizeof k_magic);
    h.manifest_hash = XXH3_64bits(text, h.manifest_size);
    cm_out o;
    cm_why why;
    rnnc_status s = cm_out_open(&o, path, CM_OUT_DISCARD, &why);
    if (s == RNNC_OK && (s = write_bundle(&o, b, &h, text, &why)) != RNNC_OK)
        cm_out_abort(&o);
    else if (s == RNNC_OK)
        s = cm_out_commit(&o, &why);
    free(text);
    return s == RNNC_OK ? RNNC_OK : err_fail(s, "cannot write bundle: %s", why.text);
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

/* ---------------------------------------------------------------- load */

/* Bundles hold cubins for a few archs; anything near this is not one. */
#define MAX_BUNDLE (4ull << 30)

static rnnc_status read_whole(const char *path, unsigned char **buf, size_t *n)
{
    cm_why why;
    rnnc_status s = cm_read_file(path, 0, MAX_BUNDLE, (char **)buf, n, &why);
    if (s == RNNC_ERR_NOT_FOUND)
        s = RNNC_ERR_IO;
    return s == RNNC_OK ? RNNC_OK : err_fail(s, "cannot read bundle: %s", why.text);
}

static rnnc_status check_header(const unsigned char *buf, size_t n, const char *path)
{
    bundle_header h;
    if (n < sizeof h || memcmp(buf, k_magic, sizeof k_magic) != 0)
        return err_fail(RNNC_ERR_FORMAT, "%s is not an rnnc bundle", path);
    memcpy(&h, buf, sizeof h);
    if (h.format != RT_BUNDLE_FORMAT)
        return err_fail(RNNC_ERR_FORMAT,
                        "%s is bundle format %u; this rnnc (%s) reads format %d: rebuild it "
                        "with `rnnc compile`",
                        path, h.format, rnnc_version_string(), RT_BUNDLE_FORMAT);
    if (h.manifest_size > n - sizeof h)
        return err_fail(RNNC_ERR_FORMAT, "%s is truncated (manifest)", path);
    if (XXH3_64bits(buf + sizeof h, h.manifest_size) != h.manifest_hash)
        return err_fail(RNNC_ERR_FORMAT, "%s is damaged (manifest checksum)", path);
    return RNNC_OK;
}

static bool parse_hex64(const char *s, uint64_t *v)
{
    char *end = NULL;
    if (!s || strlen(s) != 16)
        return false;
    *v = strtoull(s, &end, 16);
    return *end == '\0';
}

static bool parse_key(const char *hex, rt_cache_key *k)
{
    char hi[17];
    if (!hex || strlen(hex) != 32)
        return false;
    memcpy(hi, hex, 16);
    hi[16] = '\0';
    return parse_hex64(hi, &k->hi) && parse_hex64(hex + 16, &k->lo);
}

/* The manifest's numbers are doubles in cJSON: each is checked to be an
 * integer in [lo, hi] before it is converted (a cast of 1e300 is undefined). */
static bool json_uint(const cJSON *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!cJSON_IsNumber(v))
        return false;
    double d = v->valuedouble;
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
        return false;
    *out = (uint64_t)d;
    return *out >= lo && *out <= hi; /* (double)hi may round up */
}

static rnnc_status load_kernel(rt_bundle *b, const cJSON *k, const unsigned char *payload,
                               size_t n_payload, const char *path)
{
    const cJSON *name = cJSON_GetObjectItem(k, "name");
    rt_cache_key key;
    uint64_t hash = 0, sm = 0, o = 0, z = 0;
    if (!cJSON_IsString(name))
        return err_fail(RNNC_ERR_FORMAT, "%s: malformed kernel entry (name)", path);
    if (!json_uint(cJSON_GetObjectItem(k, "sm"), BUNDLE_MIN_SM, BUNDLE_MAX_SM, &sm) ||
        !json_uint(cJSON_GetObjectItem(k, "offset"), 0, BUNDLE_MAX_INT, &o) ||
        !json_uint(cJSON_GetObjectItem(k, "size"), 0, BUNDLE_MAX_INT, &z))
        return err_fail(RNNC_ERR_FORMAT,
                        "%s: kernel %s: sm, offset or size is not an integer in range "
                        "(sm %d..%d, offset and size 0..2^53)",
                        path, name->valuestring, BUNDLE_MIN_SM, BUNDLE_MAX_SM);
    if (!parse_key(cJSON_GetStringValue(cJSON_GetObjectItem(k, "key")), &key) ||
        !parse_hex64(cJSON_GetStringValue(cJSON_GetObjectItem(k, "hash")), &hash))
        return err_fail(RNNC_ERR_FORMAT, "%s: kernel %s: malformed key or hash", path,
                        name->valuestring);
    if (o > n_payload || z > n_payload - o)
        return err_fail(RNNC_ERR_FORMAT, "%s is truncated (kernel %s)", path,
                        name->valuestring);
    if (XXH3_64bits(payload + o, z) != hash)
        return err_fail(RNNC_ERR_FORMAT, "%s is damaged (kernel %s, sm_%d)", path,
                        name->valuestring, (int)sm);
    return add_kernel(b, key, (int)sm, name->valuestring, payload + o, (size_t)z);
}

static rnnc_status load_manifest(rt_bundle *b, const cJSON *m, const unsigned char *payload,
                                 size_t n_payload, const char *path)
{
    uint64_t cg = 0;
    if (!json_uint(cJSON_GetObjectItem(m, "codegen_version"), 0, INT_MAX, &cg))
        return err_fail(RNNC_ERR_FORMAT,
                        "%s: manifest without codegen_version (an integer in 0..%d)", path,
                        INT_MAX);
    if (cg != RT_CODEGEN_VERSION)
        return err_fail(RNNC_ERR_FORMAT,
                        "%s was made by an rnnc with code generator version %d; this one (%s) "
                        "is version %d: rebuild it with `rnnc compile`",
                        path, (int)cg, rnnc_version_string(), RT_CODEGEN_VERSION);
    const cJSON *k, *t;
    cJSON_ArrayForEach(k, cJSON_GetObjectItem(m, "kernels"))
    {
        rnnc_status s = load_kernel(b, k, payload, n_payload, path);
        if (s != RNNC_OK)
            return s;
    }
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(m, "tuning"))
    {
        const char *shape = cJSON_GetStringValue(cJSON_GetObjectItem(t, "shape"));
        const char *tuning = cJSON_GetStringValue(cJSON_GetObjectItem(t, "tuning"));
        if (!shape || !tuning)
            return err_fail(RNNC_ERR_FORMAT, "%s: malformed tuning record", path);
        rnnc_status s = rt_bundle_add_tuning(b, shape, tuning);
        if (s != RNNC_OK)
            return s;
    }
    return RNNC_OK;
}

rnnc_status rt_bundle_load(rt_bundle **out, const char *path)
{
    if (!out || !path)
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_bundle_load: NULL argument");
    unsigned char *buf = NULL;
    size_t n = 0;
    rnnc_status s = read_whole(path, &buf, &n);
    if (s != RNNC_OK)
        return s;
    s = check_header(buf, n, path);
    if (s != RNNC_OK)
        goto free_buf;
    bundle_header h;
    memcpy(&h, buf, sizeof h);
    cJSON *m = cJSON_ParseWithLength((const char *)buf + sizeof h, h.manifest_size);
    if (!m && rt_json_parses((const char *)buf + sizeof h, h.manifest_size)) {
        s = err_fail(RNNC_ERR_OUT_OF_MEMORY, "%s: out of memory for the manifest", path);
        goto free_buf;
    }
    if (!m) {
        s = err_fail(RNNC_ERR_FORMAT, "%s: manifest is not JSON", path);
        goto free_buf;
    }
    rt_bundle *b = NULL;
    s = rt_bundle_create(&b);
    if (s == RNNC_OK) {
        size_t start = sizeof h + h.manifest_size;
        s = load_manifest(b, m, buf + start, n - start, path);
    }
    if (s == RNNC_OK)
        *out = b;
    else
        rt_bundle_destroy(b);
    cJSON_Delete(m);
free_buf:
    free(buf);
    return s;
}
