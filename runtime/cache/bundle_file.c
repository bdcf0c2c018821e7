/*
 * bundle_file.c: a bundle (.rnncpkg) as a file.  Layout (docs/cache.md):
 * a 32-byte header (magic, format, manifest length and hash), a JSON
 * manifest, the payloads back to back.  Every length, offset and hash is
 * checked when the file is loaded; the bundle in memory is bundle.c's.
 */
#define _GNU_SOURCE
#include "runtime/cache/cache.h"

#include "common/common.h"

#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <xxhash.h>

static const char k_magic[8] = {'R', 'N', 'N', 'C', 'P', 'K', 'G', '\0'};

/* The range of every number in a manifest (sm_XX as NVRTC names archs; 2^53:
 * the largest integer a JSON double holds exactly). */
#define BUNDLE_MIN_SM 10
#define BUNDLE_MAX_SM 1000
#define BUNDLE_MAX_INT 9007199254740992ull
/* A cpu target names its CPU and lists its features (docs/cpu-backend.md). */
#define BUNDLE_MAX_TARGET 4096

typedef struct bundle_header {
    char magic[8];
    uint32_t format;
    uint32_t reserved;
    uint64_t manifest_size;
    uint64_t manifest_hash;
} bundle_header;

_Static_assert(sizeof(bundle_header) == 32, "the bundle header is 32 bytes on disk");

/* ---------------------------------------------------------------- save */

cJSON *rt_bundle_tuning_json(const rt_bundle *b)
{
    cJSON *ts = cJSON_CreateArray();
    for (int i = 0; ts && i < rt_bundle_tuning_count(b); i++) {
        const char *shape, *tuning;
        cJSON *t = cJSON_CreateObject();
        rt_bundle_tuning_at(b, i, &shape, &tuning);
        cJSON_AddStringToObject(t, "shape", shape);
        cJSON_AddStringToObject(t, "tuning", tuning);
        cJSON_AddItemToArray(ts, t);
    }
    return ts;
}

static cJSON *manifest(const rt_bundle *b)
{
    cJSON *m = cJSON_CreateObject(), *ks = cJSON_AddArrayToObject(m, "kernels");
    cJSON_AddItemToObject(m, "tuning", rt_bundle_tuning_json(b));
    cJSON_AddStringToObject(m, "rnnc", rnnc_version_string());
    cJSON_AddNumberToObject(m, "codegen_version", RT_CODEGEN_VERSION);
    uint64_t off = 0;
    for (int i = 0; i < rt_bundle_count(b); i++) {
        rt_bundle_entry e;
        char hex[33], hash[17];
        cJSON *k = cJSON_CreateObject();
        rt_bundle_entry_at(b, i, &e);
        rt_cache_key_hex(e.key, hex);
        snprintf(hash, sizeof hash, "%016llx", (unsigned long long)XXH3_64bits(e.data, e.size));
        cJSON_AddStringToObject(k, "name", e.name);
        cJSON_AddNumberToObject(k, "sm", e.sm);
        if (e.target)
            cJSON_AddStringToObject(k, "target", e.target);
        cJSON_AddStringToObject(k, "key", hex);
        cJSON_AddNumberToObject(k, "offset", (double)off);
        cJSON_AddNumberToObject(k, "size", (double)e.size);
        cJSON_AddStringToObject(k, "hash", hash);
        cJSON_AddItemToArray(ks, k);
        off += e.size;
    }
    return m;
}

static rnnc_status write_bundle(cm_out *o, const rt_bundle *b, const bundle_header *h,
                                const char *text, cm_why *why)
{
    rnnc_status s = cm_out_write(o, h, sizeof *h, why);
    if (s == RNNC_OK)
        s = cm_out_write(o, text, h->manifest_size, why);
    for (int i = 0; s == RNNC_OK && i < rt_bundle_count(b); i++) {
        rt_bundle_entry e;
        rt_bundle_entry_at(b, i, &e);
        s = cm_out_write(o, e.data, e.size, why);
    }
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

/* ---------------------------------------------------------------- load */

bool rt_bundle_file_is(const char *path)
{
    char magic[sizeof k_magic] = {0};
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) /* a FIFO would block the open */
        return false;
    FILE *f = fopen(path, "rb");
    bool yes = f && fread(magic, 1, sizeof magic, f) == sizeof magic &&
               memcmp(magic, k_magic, sizeof k_magic) == 0;
    if (f)
        fclose(f);
    return yes;
}

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
    if (h.format < RT_BUNDLE_FORMAT_OLDEST || h.format > RT_BUNDLE_FORMAT)
        return err_fail(RNNC_ERR_FORMAT,
                        "%s is bundle format %u; this rnnc (%s) reads formats %d to %d: "
                        "rebuild it with `rnnc compile`",
                        path, h.format, rnnc_version_string(), RT_BUNDLE_FORMAT_OLDEST,
                        RT_BUNDLE_FORMAT);
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

/* An object file's entry names its cpu target (format 2 on) and has sm 0. */
static rnnc_status entry_target(const cJSON *k, uint32_t format, const char *name,
                                const char *path, const char **target, uint64_t *min_sm,
                                uint64_t *max_sm)
{
    const cJSON *t = cJSON_GetObjectItem(k, "target");
    *target = NULL;
    *min_sm = BUNDLE_MIN_SM;
    *max_sm = BUNDLE_MAX_SM;
    if (!t)
        return RNNC_OK;
    if (format < 2 || !cJSON_IsString(t) || !*t->valuestring ||
        strlen(t->valuestring) > BUNDLE_MAX_TARGET)
        return err_fail(RNNC_ERR_FORMAT, "%s: kernel %s: malformed target", path, name);
    *target = t->valuestring;
    *min_sm = *max_sm = RT_CACHE_HOST;
    return RNNC_OK;
}

static rnnc_status load_kernel(rt_bundle *b, const cJSON *k, uint32_t format,
                               const unsigned char *payload, size_t n_payload, const char *path)
{
    const cJSON *name = cJSON_GetObjectItem(k, "name");
    rt_bundle_entry e = {0};
    uint64_t hash = 0, sm = 0, o = 0, z = 0, min_sm, max_sm;
    if (!cJSON_IsString(name))
        return err_fail(RNNC_ERR_FORMAT, "%s: malformed kernel entry (name)", path);
    rnnc_status s = entry_target(k, format, name->valuestring, path, &e.target, &min_sm, &max_sm);
    if (s != RNNC_OK)
        return s;
    if (!json_uint(cJSON_GetObjectItem(k, "sm"), min_sm, max_sm, &sm) ||
        !json_uint(cJSON_GetObjectItem(k, "offset"), 0, BUNDLE_MAX_INT, &o) ||
        !json_uint(cJSON_GetObjectItem(k, "size"), 0, BUNDLE_MAX_INT, &z))
        return err_fail(RNNC_ERR_FORMAT,
                        "%s: kernel %s: sm, offset or size is not an integer in range "
                        "(sm %d..%d, or 0 with a target; offset and size 0..2^53)",
                        path, name->valuestring, BUNDLE_MIN_SM, BUNDLE_MAX_SM);
    if (!parse_key(cJSON_GetStringValue(cJSON_GetObjectItem(k, "key")), &e.key) ||
        !parse_hex64(cJSON_GetStringValue(cJSON_GetObjectItem(k, "hash")), &hash))
        return err_fail(RNNC_ERR_FORMAT, "%s: kernel %s: malformed key or hash", path,
                        name->valuestring);
    if (o > n_payload || z > n_payload - o)
        return err_fail(RNNC_ERR_FORMAT, "%s is truncated (kernel %s)", path,
                        name->valuestring);
    if (XXH3_64bits(payload + o, z) != hash) {
        char arch[16] = "cpu";
        if (!e.target)
            snprintf(arch, sizeof arch, "sm_%d", (int)sm);
        return err_fail(RNNC_ERR_FORMAT, "%s is damaged (kernel %s, %s)", path,
                        name->valuestring, arch);
    }
    e.sm = (int)sm;
    e.name = name->valuestring;
    e.data = payload + o;
    e.size = (size_t)z;
    return rt_bundle_add_entry(b, &e);
}

static rnnc_status load_manifest(rt_bundle *b, const cJSON *m, uint32_t format,
                                 const unsigned char *payload, size_t n_payload, const char *path)
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
        rnnc_status s = load_kernel(b, k, format, payload, n_payload, path);
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
        s = load_manifest(b, m, h.format, buf + start, n - start, path);
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

