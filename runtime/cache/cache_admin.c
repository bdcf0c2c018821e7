/*
 * cache_admin.c: the disk cache as a whole: least-recently-used eviction
 * under RNNC_CACHE_MAX_MB, and the public rnnc_cache_info, rnnc_cache_list
 * and rnnc_cache_clear (what `rnnc cache` prints is the command line's).
 * An entry's mtime is its last use (reads touch it), so eviction sorts on
 * mtime.
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

/* The root of the disk cache and its subdirectory `sub`; false when off. */
static bool cache_sub(char *root, size_t n, char *dir, size_t nd, const char *sub)
{
    if (!rt_cache_dir(root, n)) {
        root[0] = '\0';
        return false;
    }
    snprintf(dir, nd, "%s/%s", root, sub);
    return true;
}

rnnc_status rnnc_cache_info(rnnc_cache_summary *out)
{
    if (!out)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cache_info: NULL argument");
    memset(out, 0, sizeof *out);
    out->entry_format = RT_CACHE_FORMAT;
    out->codegen_version = RT_CODEGEN_VERSION;
    out->nvrtc = rt_nvrtc_available() &&
                 rt_nvrtc_version(&out->nvrtc_major, &out->nvrtc_minor) == RNNC_OK;
    if (!out->nvrtc)
        out->nvrtc_major = out->nvrtc_minor = 0;
    char sub[RNNC_CACHE_PATH_MAX + 16];
    if (!cache_sub(out->directory, sizeof out->directory, sub, sizeof sub, "kernels"))
        return RNNC_OK;
    out->enabled = true;
    out->limit_bytes = rt_cache_max_bytes();
    entry_list k = {0}, t = {0};
    scan(sub, ".cubin", NO_SWEEP, &k);
    snprintf(sub, sizeof sub, "%s/tuning", out->directory);
    scan(sub, ".txt", NO_SWEEP, &t);
    out->kernels = k.n;
    out->kernel_bytes = k.bytes;
    out->tuning_records = t.n;
    free(k.e);
    free(t.e);
    return RNNC_OK;
}

struct rnnc_cache_entries {
    bool enabled;
    char dir[RNNC_CACHE_PATH_MAX + 16]; /* <root>/kernels */
    rnnc_cache_entry *e;
    size_t n;
    uint64_t bytes;
};

static int newer_first(const void *a, const void *b)
{
    return older_first(b, a);
}

/* Fills *out from the entry file e of kdir; false when it is gone. */
static bool read_entry(const char *kdir, const entry *e, rnnc_cache_entry *out)
{
    char path[PATH_MAX + 80];
    int64_t created = 0;
    snprintf(path, sizeof path, "%s/%s", kdir, e->file);
    memset(out, 0, sizeof *out);
    if (!rt_cache_peek(path, &out->sm, out->kernel, &created, &out->valid))
        return false;
    snprintf(out->key, sizeof out->key, "%s", e->file);
    out->bytes = e->size;
    out->last_used = (int64_t)e->mtime.tv_sec;
    return true;
}

/* The entries of l that can still be read, newest first, into list. */
static rnnc_status take_entries(rnnc_cache_entries *list, entry_list *l)
{
    if (l->n == 0)
        return RNNC_OK;
    qsort(l->e, l->n, sizeof *l->e, newer_first);
    list->e = calloc(l->n, sizeof *list->e);
    if (!list->e)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "rnnc_cache_list: out of memory");
    for (size_t i = 0; i < l->n; i++)
        if (read_entry(list->dir, &l->e[i], &list->e[list->n])) {
            list->bytes += list->e[list->n].bytes;
            list->n++;
        }
    return RNNC_OK;
}

rnnc_status rnnc_cache_list(rnnc_cache_entries **out)
{
    if (!out)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cache_list: NULL argument");
    *out = NULL;
    rnnc_cache_entries *list = calloc(1, sizeof *list);
    if (!list)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "rnnc_cache_list: out of memory");
    char root[RNNC_CACHE_PATH_MAX];
    list->enabled = cache_sub(root, sizeof root, list->dir, sizeof list->dir, "kernels");
    entry_list l = {0};
    if (list->enabled)
        scan(list->dir, ".cubin", NO_SWEEP, &l);
    rnnc_status s = take_entries(list, &l);
    free(l.e);
    if (s != RNNC_OK) {
        rnnc_cache_entries_destroy(list);
        return s;
    }
    *out = list;
    return RNNC_OK;
}

void rnnc_cache_entries_destroy(rnnc_cache_entries *l)
{
    if (!l)
        return;
    free(l->e);
    free(l);
}

size_t rnnc_cache_entries_count(const rnnc_cache_entries *l)
{
    return l ? l->n : 0;
}

const rnnc_cache_entry *rnnc_cache_entries_get(const rnnc_cache_entries *l, size_t i)
{
    return l && i < l->n ? &l->e[i] : NULL;
}

uint64_t rnnc_cache_entries_bytes(const rnnc_cache_entries *l)
{
    return l ? l->bytes : 0;
}

const char *rnnc_cache_entries_directory(const rnnc_cache_entries *l)
{
    return l && l->enabled ? l->dir : NULL;
}

/* Removes the entries of dir and its left-over temp files (not fresh ones:
 * a writer may be busy); returns bytes. */
static uint64_t clear_dir(const char *dir, uint64_t *count)
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

rnnc_status rnnc_cache_clear(rnnc_cache_cleared *out)
{
    rnnc_cache_cleared mine;
    rnnc_cache_cleared *r = out ? out : &mine;
    memset(r, 0, sizeof *r);
    char sub[RNNC_CACHE_PATH_MAX + 16];
    if (!cache_sub(r->directory, sizeof r->directory, sub, sizeof sub, "kernels"))
        return RNNC_OK;
    r->enabled = true;
    r->bytes = clear_dir(sub, &r->files);
    snprintf(sub, sizeof sub, "%s/tuning", r->directory);
    r->bytes += clear_dir(sub, &r->files);
    return RNNC_OK;
}
