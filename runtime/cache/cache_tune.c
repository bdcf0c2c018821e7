/*
 * cache_tune.c: autotuning records kept beside the kernels, so that a later
 * process starts straight on the winner.  A record is <dir>/tuning/<hash>.txt
 * holding two lines, the shape key and the tuning text; the first is
 * compared on read, so a hash collision or a damaged file is a miss.
 */
#define _GNU_SOURCE
#include "runtime/cache/cache.h"

#include "common/common.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#define MAX_RECORD 4096

static bool record_path(const char *shape_key, char *path, size_t n, char *dir, size_t n_dir)
{
    char base[PATH_MAX];
    if (!rt_cache_dir(base, sizeof base))
        return false;
    XXH128_hash_t h = XXH3_128bits(shape_key, strlen(shape_key));
    snprintf(dir, n_dir, "%s/tuning", base);
    int w = snprintf(path, n, "%s/%016llx%016llx.txt", dir, (unsigned long long)h.high64,
                     (unsigned long long)h.low64);
    return w > 0 && (size_t)w < n;
}

static bool valid_text(const char *s)
{
    return s && *s && !strchr(s, '\n') && strlen(s) < MAX_RECORD / 2;
}

rnnc_status rt_tuning_get(const char *shape_key, char *tuning, size_t n)
{
    char path[PATH_MAX + 64], dir[PATH_MAX + 16], buf[MAX_RECORD + 1];
    if (!valid_text(shape_key) || !tuning || n == 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "tuning lookup: bad key or buffer");
    if (!record_path(shape_key, path, sizeof path, dir, sizeof dir))
        return RNNC_ERR_NOT_FOUND;
    /* A record over MAX_RECORD bytes, a link or a FIFO is not one rnnc wrote: a miss. */
    cm_in in;
    cm_why why;
    if (cm_in_open(&in, path, CM_IN_NOFOLLOW, &why) != RNNC_OK)
        return RNNC_ERR_NOT_FOUND;
    size_t len = in.size <= MAX_RECORD ? (size_t)in.size : 0;
    bool ok = len > 0 && cm_in_read(&in, buf, len, path, &why) == RNNC_OK;
    cm_in_close(&in);
    if (!ok)
        return RNNC_ERR_NOT_FOUND;
    buf[len] = '\0';
    if (strlen(buf) != len) /* a NUL inside */
        return RNNC_ERR_NOT_FOUND;
    size_t klen = strlen(shape_key);
    if (len < klen + 3 || memcmp(buf, shape_key, klen) != 0 || buf[klen] != '\n')
        return RNNC_ERR_NOT_FOUND;
    char *val = buf + klen + 1, *nl = strchr(val, '\n');
    if (!nl || nl[1] != '\0' || nl == val)
        return RNNC_ERR_NOT_FOUND;
    *nl = '\0';
    if ((size_t)(nl - val) >= n)
        return err_fail(RNNC_ERR_INVALID_ARG, "tuning record longer than the buffer");
    memcpy(tuning, val, (size_t)(nl - val) + 1);
    return RNNC_OK;
}

rnnc_status rt_tuning_put(const char *shape_key, const char *tuning)
{
    char path[PATH_MAX + 64], dir[PATH_MAX + 16], buf[MAX_RECORD];
    if (!valid_text(shape_key) || !valid_text(tuning))
        return err_fail(RNNC_ERR_INVALID_ARG, "tuning record: empty, multi-line or too long");
    if (!record_path(shape_key, path, sizeof path, dir, sizeof dir))
        return RNNC_OK; /* no disk cache: nothing to remember it in */
    int len = snprintf(buf, sizeof buf, "%s\n%s\n", shape_key, tuning);
    /* A read-only cache already warned through the kernels; a record is optional. */
    if (rt_cache_mkdirs(dir))
        rt_cache_write_atomic(path, buf, (size_t)len, NULL, 0);
    return RNNC_OK;
}
