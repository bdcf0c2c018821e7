/*
 * fuzz_bundle.c: the AOT bundle loader.  Checksums would stop a fuzzer at
 * the header, so the harness can write valid ones: the first input byte's
 * low bit asks for the header (magic, format, manifest length and hash) to
 * be made valid for the manifest that follows, and its second bit for
 * every kernel entry's "hash" to be set to its payload's (when its offset
 * and size are in range).  The rest is manifest JSON, a NUL, payload bytes.
 */
#include <cJSON.h>
#include <math.h>
#include <xxhash.h>

#include "runtime/cache/cache.h"
#include "tests/fuzz/fuzz.h"

/* The 32-byte header of runtime/bundle.c (docs/cache.md). */
typedef struct {
    char magic[8];
    uint32_t format, reserved;
    uint64_t manifest_size, manifest_hash;
} header;

static void fix_hashes(cJSON *m, const uint8_t *payload, size_t n)
{
    cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItem(m, "kernels"))
    {
        cJSON *off = cJSON_GetObjectItem(k, "offset"), *size = cJSON_GetObjectItem(k, "size");
        if (!cJSON_IsNumber(off) || !cJSON_IsNumber(size) || !(off->valuedouble >= 0) ||
            !(size->valuedouble >= 0) || off->valuedouble > (double)n ||
            size->valuedouble > (double)n - off->valuedouble)
            continue;
        char hex[17];
        size_t o = (size_t)off->valuedouble, z = (size_t)size->valuedouble;
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)XXH3_64bits(payload + o, z));
        cJSON_DeleteItemFromObject(k, "hash");
        cJSON_AddStringToObject(k, "hash", hex);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0];
    const char *text = (const char *)data + 1;
    size_t rest = size - 1, mlen = strnlen(text, rest);
    const uint8_t *payload = data + 1 + (mlen < rest ? mlen + 1 : rest);
    size_t n_payload = (size_t)(data + size - payload);
    char *manifest = NULL;
    if (mode & 2) { /* valid kernel hashes: through cJSON and back */
        cJSON *m = cJSON_ParseWithLength(text, mlen);
        if (m)
            fix_hashes(m, payload, n_payload);
        manifest = m ? cJSON_PrintUnformatted(m) : NULL;
        cJSON_Delete(m);
    }
    const char *mtext = manifest ? manifest : text;
    size_t msize = manifest ? strlen(manifest) : mlen;
    size_t total = (mode & 1 ? sizeof(header) : 0) + msize + n_payload;
    uint8_t *file = malloc(total ? total : 1);
    FUZZ_CHECK(file);
    size_t at = 0;
    if (mode & 1) {
        header h = {.magic = "RNNCPKG", .format = RT_BUNDLE_FORMAT, .manifest_size = msize};
        h.manifest_hash = XXH3_64bits(mtext, msize);
        memcpy(file, &h, sizeof h);
        at = sizeof h;
    }
    memcpy(file + at, mtext, msize);
    memcpy(file + at + msize, payload, n_payload);
    rt_bundle *b = NULL;
    if (rt_bundle_load(&b, fuzz_file("in.rnncpkg", file, total)) == RNNC_OK) {
        char archs[256];
        rt_bundle_archs(b, archs, sizeof archs);
        rt_bundle_destroy(b);
    }
    free(file);
    cJSON_free(manifest);
    return 0;
}
