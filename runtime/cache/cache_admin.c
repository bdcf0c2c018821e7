/*
 * cache_admin.c: the disk cache as a whole: least-recently-used eviction
 * under RNNC_CACHE_MAX_MB, and `rnnc cache info|list|clear`.  An entry's
 * mtime is its last use (reads touch it), so eviction sorts on mtime.
 */
#define _GNU_SOURCE
#include "runtime/cache/cache.h"

#include "common/common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

/* A temp file older than this was left by a process that died mid-write. */
#define STALE_TMP_SECONDS 3600
/* `rnnc cache clear` was asked to empty the cache: any temp file not written
 * to for this long is left over (a live writer finishes in milliseconds). */
#define CLEAR_TMP_SECONDS 10
#define NO_SWEEP (-1)

typedef struct entry {
    char file[64];
    uint64_t size;
    struct timespec mtime;
} entry;

typedef struct entry_list {
    entry *e;
    size_t n, cap;
    uint64_t bytes;
} entry_list;

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool push(entry_list *l, const char *file, const struct stat *st)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        entry *e = realloc(l->e, cap * sizeof *e);
        if (!e)
            return false;
        l->e = e;
        l->cap = cap;
    }
    size_t len = strlen(file);
    if (len >= sizeof l->e[0].file)
        return true; /* not a name this cache writes */
    entry *e = &l->e[l->n++];
    memcpy(e->file, file, len + 1);
    e->size = (uint64_t)st->st_size;
    e->mtime = st->st_mtim;
    l->bytes += e->size;
    return true;
}

/* Lists `suffix` files of dir (NULL suffix: all but . and ..), removing
 * temp files older than `sweep` seconds on the way (NO_SWEEP: none). */
static void scan(const char *dir, const char *suffix, long sweep, entry_list *l)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        const char *f = de->d_name;
        if (f[0] == '.' && (f[1] == '\0' || (f[1] == '.' && f[2] == '\0')))
            continue;
        if (fstatat(dirfd(d), f, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (strncmp(f, CM_TMP_PREFIX, strlen(CM_TMP_PREFIX)) == 0) {
            if (sweep != NO_SWEEP && now - st.st_mtime > sweep)
                unlinkat(dirfd(d), f, 0);
            continue;
        }
        if ((!suffix || ends_with(f, suffix)) && !push(l, f, &st))
            break;
    }
    closedir(d);
}

static int older_first(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

void rt_cache_evict(const char *dir, uint64_t limit)
{
    char kdir[PATH_MAX], path[PATH_MAX + 80];
    snprintf(kdir, sizeof kdir, "%s/kernels", dir);
    entry_list l = {0};
    scan(kdir, ".cubin", STALE_TMP_SECONDS, &l);
    if (l.bytes > limit) {
        qsort(l.e, l.n, sizeof *l.e, older_first);
        for (size_t i = 0; i + 1 < l.n && l.bytes > limit; i++) {
            snprintf(path, sizeof path, "%s/%s", kdir, l.e[i].file);
            /* ENOENT: another process evicted it first; the bytes are gone either way. */
            if (unlink(path) == 0 || errno == ENOENT)
                l.bytes -= l.e[i].size;
            if (cm_log_enabled("info"))
                fprintf(stderr, "rnnc: cache: evicted %s (%llu bytes)\n", l.e[i].file,
                        (unsigned long long)l.e[i].size);
        }
    }
    free(l.e);
}

static rnnc_status open_dir(char *dir, size_t n, FILE *out)
{
    if (!out)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "cache: NULL output stream");
    if (!rt_cache_dir(dir, n)) {
        fprintf(out, "kernel cache: disabled (RNNC_CACHE=0, or no HOME)\n");
        return RNNC_ERR_NOT_FOUND;
    }
    return RNNC_OK;
}

rnnc_status rt_cache_info(FILE *out)
{
    char dir[PATH_MAX], sub[PATH_MAX + 16];
    if (open_dir(dir, sizeof dir, out) != RNNC_OK)
        return out ? RNNC_OK : RNNC_ERR_INVALID_ARG;
    entry_list k = {0}, t = {0};
    snprintf(sub, sizeof sub, "%s/kernels", dir);
    scan(sub, ".cubin", NO_SWEEP, &k);
    snprintf(sub, sizeof sub, "%s/tuning", dir);
    scan(sub, ".txt", NO_SWEEP, &t);
    int major = 0, minor = 0;
    bool nv = rt_nvrtc_available() && rt_nvrtc_version(&major, &minor) == RNNC_OK;
    fprintf(out, "directory:      %s\n", dir);
    fprintf(out, "kernels:        %zu entries, %.2f MiB\n", k.n, (double)k.bytes / 1048576.0);
    fprintf(out, "limit:          %.2f MiB (RNNC_CACHE_MAX_MB)\n",
            (double)rt_cache_max_bytes() / 1048576.0);
    fprintf(out, "tuning records: %zu\n", t.n);
    fprintf(out, "entry format:   %d, codegen version %d\n", RT_CACHE_FORMAT, RT_CODEGEN_VERSION);
    if (nv)
        fprintf(out, "NVRTC:          %d.%d\n", major, minor);
    else
        fprintf(out, "NVRTC:          not available\n");
    free(k.e);
    free(t.e);
    return RNNC_OK;
}

static void print_entry(FILE *out, const char *kdir, const entry *e)
{
    char path[PATH_MAX + 80], name[56], when[32];
    int sm = 0;
    int64_t created = 0;
    bool valid = false;
    snprintf(path, sizeof path, "%s/%s", kdir, e->file);
    if (!rt_cache_peek(path, &sm, name, &created, &valid))
        return;
    struct tm tm;
    time_t mt = e->mtime.tv_sec;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&mt, &tm));
    fprintf(out, "%.32s  sm_%-3d %9.1f KiB  %s  %s\n", e->file, sm, (double)e->size / 1024.0,
            when, valid ? name : "(corrupt: will be replaced)");
}

static int newer_first(const void *a, const void *b)
{
    return older_first(b, a);
}

rnnc_status rt_cache_list(FILE *out)
{
    char dir[PATH_MAX], kdir[PATH_MAX + 16];
    if (open_dir(dir, sizeof dir, out) != RNNC_OK)
        return out ? RNNC_OK : RNNC_ERR_INVALID_ARG;
    entry_list l = {0};
    snprintf(kdir, sizeof kdir, "%s/kernels", dir);
    scan(kdir, ".cubin", NO_SWEEP, &l);
    if (l.n > 0) /* qsort wants a non-NULL base even for no elements */
        qsort(l.e, l.n, sizeof *l.e, newer_first);
    fprintf(out, "%-32s  %-6s %13s  %-19s  %s\n", "key", "arch", "size", "last used", "kernel");
    for (size_t i = 0; i < l.n; i++)
        print_entry(out, kdir, &l.e[i]);
    fprintf(out, "%zu entries, %.2f MiB in %s\n", l.n, (double)l.bytes / 1048576.0, kdir);
    free(l.e);
    return RNNC_OK;
}

static cJSON *entry_json(const char *kdir, const entry *e)
{
    char path[PATH_MAX + 80], name[56], when[32];
    int sm = 0;
    int64_t created = 0;
    bool valid = false;
    snprintf(path, sizeof path, "%s/%s", kdir, e->file);
    if (!rt_cache_peek(path, &sm, name, &created, &valid))
        return NULL;
    struct tm tm;
    time_t mt = e->mtime.tv_sec;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S%z", localtime_r(&mt, &tm));
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "key", e->file);
    cJSON_AddNumberToObject(o, "sm", sm);
    cJSON_AddNumberToObject(o, "bytes", (double)e->size);
    cJSON_AddStringToObject(o, "last_used", when);
    cJSON_AddStringToObject(o, "kernel", valid ? name : "");
    cJSON_AddBoolToObject(o, "valid", valid);
    return o;
}

rnnc_status rt_cache_list_json(FILE *out)
{
    char dir[PATH_MAX], kdir[PATH_MAX + 16];
    if (!out)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "cache: NULL output stream");
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "entries");
    entry_list l = {0};
    if (rt_cache_dir(dir, sizeof dir)) {
        snprintf(kdir, sizeof kdir, "%s/kernels", dir);
        cJSON_AddStringToObject(root, "directory", kdir);
        scan(kdir, ".cubin", NO_SWEEP, &l);
        if (l.n > 0)
            qsort(l.e, l.n, sizeof *l.e, newer_first);
        for (size_t i = 0; i < l.n; i++) {
            cJSON *e = entry_json(kdir, &l.e[i]);
            if (e)
                cJSON_AddItemToArray(arr, e);
        }
    } else {
        cJSON_AddNullToObject(root, "directory");
    }
    cJSON_AddNumberToObject(root, "count", cJSON_GetArraySize(arr));
    cJSON_AddNumberToObject(root, "bytes", (double)l.bytes);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    free(l.e);
    if (!text)
        return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "cache list: out of memory");
    fprintf(out, "%s\n", text);
    free(text);
    return RNNC_OK;
}

/* Removes the entries of dir (not temp files: a writer may be busy); returns bytes. */
/* Removes the entries of dir and its left-over temp files (not fresh ones:
 * a writer may be busy); returns bytes. */
static uint64_t clear_dir(const char *dir, size_t *count)
{
    entry_list l = {0};
    char path[PATH_MAX + 80];
    scan(dir, NULL, CLEAR_TMP_SECONDS, &l);
    uint64_t bytes = 0;
    for (size_t i = 0; i < l.n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, l.e[i].file);
        if (unlink(path) == 0) {
            bytes += l.e[i].size;
            (*count)++;
        }
    }
    free(l.e);
    return bytes;
}

rnnc_status rt_cache_clear(FILE *out)
{
    char dir[PATH_MAX], sub[PATH_MAX + 16];
    if (open_dir(dir, sizeof dir, out) != RNNC_OK)
        return out ? RNNC_OK : RNNC_ERR_INVALID_ARG;
    size_t n = 0;
    snprintf(sub, sizeof sub, "%s/kernels", dir);
    uint64_t bytes = clear_dir(sub, &n);
    snprintf(sub, sizeof sub, "%s/tuning", dir);
    bytes += clear_dir(sub, &n);
    fprintf(out, "removed %zu files (%.2f MiB) from %s\n", n, (double)bytes / 1048576.0, dir);
    return RNNC_OK;
}
