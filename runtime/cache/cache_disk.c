/*
 * cache_disk.c: the on-disk level of the kernel cache: where it lives, and
 * reading and writing one entry.  An entry is a 128-byte header (magic,
 * format version, key, payload size and hash, header hash) followed by the
 * cubin (or, where sm is RT_CACHE_HOST, the cpu backend's object file);
 * nothing read back is trusted until every check passes, so a
 * corrupt, truncated or foreign entry is simply a miss.  docs/cache.md.
 */
#define _GNU_SOURCE
#include "runtime/cache/cache.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

static const char k_magic[8] = {'R', 'N', 'N', 'C', 'C', 'U', 'B', 'N'};

typedef struct entry_header {
    char magic[8];
    uint32_t format;
    uint32_t header_size;
    uint64_t key_lo, key_hi;
    uint64_t payload_size;
    uint64_t payload_hash; /* XXH3-64 of the cubin */
    uint32_t sm;
    uint32_t reserved;
    int64_t created; /* seconds since 1970 */
    char name[56];   /* the request's label, NUL-padded */
    uint64_t header_hash; /* XXH3-64 of the 120 bytes before it */
} entry_header;

_Static_assert(sizeof(entry_header) == 128, "the entry header is 128 bytes on disk");

static atomic_bool g_warned_readonly;

bool rt_cache_dir(char *buf, size_t n)
{
    if (cm_env_is("RNNC_CACHE", "0"))
        return false;
    const char *dir = getenv("RNNC_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int w;
    if (dir && *dir)
        w = snprintf(buf, n, "%s", dir);
    else if (xdg && *xdg)
        w = snprintf(buf, n, "%s/rnnc", xdg);
    else if (home && *home)
        w = snprintf(buf, n, "%s/.cache/rnnc", home);
    else
        return false;
    return w > 0 && (size_t)w < n;
}

uint64_t rt_cache_max_bytes(void)
{
    const char *env = getenv("RNNC_CACHE_MAX_MB");
    double mb = 1024;
    if (env && *env) {
        char *end = NULL;
        double v = strtod(env, &end);
        if (end != env && *end == '\0' && v > 0 && v < 1e12)
            mb = v;
    }
    return (uint64_t)(mb * 1024 * 1024);
}

bool rt_cache_entry_path(rt_cache_key k, char *buf, size_t n)
{
    char dir[PATH_MAX], hex[33];
    if (!rt_cache_dir(dir, sizeof dir))
        return false;
    rt_cache_key_hex(k, hex);
    int w = snprintf(buf, n, "%s/kernels/%s.cubin", dir, hex);
    return w > 0 && (size_t)w < n;
}

static uint64_t header_hash(const entry_header *h)
{
    return XXH3_64bits(h, offsetof(entry_header, header_hash));
}

/* The range of sm in a header: sm_XX as NVRTC names archs, or RT_CACHE_HOST
 * for the cpu backend's object files. */
#define ENTRY_MIN_SM 10
#define ENTRY_MAX_SM 1000

/* Every field of a header whose checksum matched (xxh3 is no signature: a
 * shared cache directory may hold a crafted entry): each number is checked
 * in range before anything is sized or converted from it. */
static bool header_fields_ok(const entry_header *h, uint64_t file_size, char *why,
                             size_t n_why)
{
    if (h->payload_size > file_size - sizeof *h) { /* file_size >= sizeof *h here */
        snprintf(why, n_why, "size %llu, header says %llu + %llu",
                 (unsigned long long)file_size, (unsigned long long)sizeof *h,
                 (unsigned long long)h->payload_size);
        return false;
    }
    if (h->payload_size != file_size - sizeof *h) {
        snprintf(why, n_why, "size %llu, header says %llu", (unsigned long long)file_size,
                 (unsigned long long)(sizeof *h + h->payload_size));
        return false;
    }
    bool sm_ok = h->sm == RT_CACHE_HOST || (h->sm >= ENTRY_MIN_SM && h->sm <= ENTRY_MAX_SM);
    if (!sm_ok || h->reserved != 0 || h->created < 0 ||
        memchr(h->name, '\0', sizeof h->name) == NULL) {
        snprintf(why, n_why, "a header field out of range (sm %u, created %lld)", h->sm,
                 (long long)h->created);
        return false;
    }
    return true;
}

static rnnc_status check_header(const entry_header *h, rt_cache_key k, uint64_t file_size,
                                char *why, size_t n_why)
{
    if (memcmp(h->magic, k_magic, sizeof k_magic) != 0) {
        snprintf(why, n_why, "not an rnnc cache entry");
        return RNNC_ERR_FORMAT;
    }
    if (h->format != RT_CACHE_FORMAT || h->header_size != sizeof *h) {
        snprintf(why, n_why, "entry format %u, this rnnc reads %d", h->format, RT_CACHE_FORMAT);
        return RNNC_ERR_FORMAT;
    }
    if (h->header_hash != header_hash(h)) {
        snprintf(why, n_why, "header checksum mismatch");
        return RNNC_ERR_FORMAT;
    }
    if (h->key_lo != k.lo || h->key_hi != k.hi) {
        snprintf(why, n_why, "entry holds another key");
        return RNNC_ERR_FORMAT;
    }
    return header_fields_ok(h, file_size, why, n_why) ? RNNC_OK : RNNC_ERR_FORMAT;
}

static rnnc_status read_payload(cm_in *in, const entry_header *h, void **cubin, size_t *size,
                                char *why, size_t n_why)
{
    cm_why w;
    void *buf = malloc(h->payload_size ? h->payload_size : 1);
    if (!buf) {
        snprintf(why, n_why, "out of memory");
        return RNNC_ERR_OUT_OF_MEMORY;
    }
    if (cm_in_read(in, buf, h->payload_size, "", &w) != RNNC_OK) {
        free(buf);
        snprintf(why, n_why, "short read");
        return RNNC_ERR_FORMAT;
    }
    if (XXH3_64bits(buf, h->payload_size) != h->payload_hash) {
        free(buf);
        snprintf(why, n_why, "payload checksum mismatch");
        return RNNC_ERR_FORMAT;
    }
    *cubin = buf;
    *size = h->payload_size;
    return RNNC_OK;
}

/* Owned by this user or root (a cache made when an image was built, read
 * by the user it runs as), and writable by nobody else (the owner's group
 * aside where that is this user's group: Debian gives each user a group of
 * their own, and umask 002). */
static bool users_own(const struct stat *st, const char *path, char *why, size_t n_why)
{
    bool owner = st->st_uid == geteuid() || st->st_uid == 0;
    bool others = (st->st_mode & S_IWOTH) || ((st->st_mode & S_IWGRP) && st->st_gid != getegid());
    if (owner && !others)
        return true;
    snprintf(why, n_why, "%s is %s", path, !owner ? "another user's" : "writable by other users");
    return false;
}

/* The entry at path; `host`: it is machine code the process will run, so the
 * file opened must be this user's own too (checked on the open file). */
static rnnc_status read_at(const char *path, rt_cache_key k, bool host, void **cubin,
                           size_t *size, char *why, size_t n_why)
{
    /* rnnc names entries itself: a symbolic link or a FIFO there is foreign. */
    cm_in in;
    cm_why w;
    rnnc_status s = cm_in_open(&in, path, CM_IN_NOFOLLOW, &w);
    if (s == RNNC_ERR_NOT_FOUND)
        return s;
    if (s != RNNC_OK) {
        snprintf(why, n_why, "%s", w.text);
        return RNNC_ERR_FORMAT;
    }
    struct stat st;
    s = RNNC_ERR_IO;
    if (host && (fstat(in.fd, &st) != 0 || !users_own(&st, path, why, n_why)))
        goto close_in;
    entry_header h;
    s = RNNC_ERR_FORMAT;
    if (in.size < sizeof h || cm_in_read(&in, &h, sizeof h, path, &w) != RNNC_OK) {
        snprintf(why, n_why, "truncated header");
        goto close_in;
    }
    s = check_header(&h, k, in.size, why, n_why);
    if (s == RNNC_OK)
        s = read_payload(&in, &h, cubin, size, why, n_why);
    if (s == RNNC_OK)
        futimens(in.fd, NULL); /* mtime = last use, for LRU eviction; may fail read-only */
close_in:
    cm_in_close(&in);
    return s;
}

rnnc_status rt_cache_read(rt_cache_key k, void **cubin, size_t *size, char *why, size_t n_why)
{
    char path[PATH_MAX];
    snprintf(why, n_why, "no entry");
    if (!rt_cache_entry_path(k, path, sizeof path))
        return RNNC_ERR_NOT_FOUND;
    return read_at(path, k, false, cubin, size, why, n_why);
}

rnnc_status rt_cache_read_host(rt_cache_key k, void **obj, size_t *size, char *why, size_t n_why)
{
    char path[PATH_MAX];
    snprintf(why, n_why, "no entry");
    if (!rt_cache_entry_path(k, path, sizeof path))
        return RNNC_ERR_NOT_FOUND;
    /* the directory first: if no other user can write it, none can swap the entry */
    char *slash = strrchr(path, '/');
    *slash = '\0';
    struct stat st;
    if (lstat(path, &st) != 0)
        return RNNC_ERR_NOT_FOUND;
    bool dir_ok = users_own(&st, path, why, n_why);
    *slash = '/';
    return dir_ok ? read_at(path, k, true, obj, size, why, n_why) : RNNC_ERR_IO;
}

bool rt_cache_mkdirs(const char *dir)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
        return false;
    for (char *c = p + 1; *c; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            return false;
        *c = '/';
    }
    return mkdir(p, 0755) == 0 || errno == EEXIST;
}

/* Another process may be renaming the same entry into place at the same
 * time: rename is atomic, so the last one wins and both are whole. */
bool rt_cache_write_atomic(const char *path, const void *a, size_t na, const void *b, size_t nb)
{
    cm_why why;
    struct stat st;
    /* The cache's own names: a FIFO or a link planted at one is removed (the
     * name only, never what a link points to), or no entry could be stored. */
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
        (void)unlink(path);
    int saved = errno;
    errno = 0;
    if (cm_write_file(path, 0, a, na, b, nb, &why) == RNNC_OK) {
        errno = saved;
        return true;
    }
    if (errno == 0)
        errno = EIO;
    return false;
}

static void warn_unwritable(const char *dir, int err)
{
    if (atomic_exchange(&g_warned_readonly, true))
        return;
    fprintf(stderr,
            "rnnc: warning: kernel cache directory %s is not writable (%s); working without "
            "the disk cache (set RNNC_CACHE_DIR, or RNNC_CACHE=0 to silence this)\n",
            dir, strerror(err));
}

static void fill_header(entry_header *h, rt_cache_key k, const char *name, int sm,
                        const void *cubin, size_t size)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, k_magic, sizeof k_magic);
    h->format = RT_CACHE_FORMAT;
    h->header_size = sizeof *h;
    h->key_lo = k.lo;
    h->key_hi = k.hi;
    h->payload_size = size;
    h->payload_hash = XXH3_64bits(cubin, size);
    h->sm = (uint32_t)sm;
    h->created = (int64_t)time(NULL);
    snprintf(h->name, sizeof h->name, "%s", name ? name : "");
    h->header_hash = header_hash(h);
}

static _Atomic bool writes_off;

void rt_cache_set_writes(bool on)
{
    writes_off = !on;
}

void rt_cache_write(rt_cache_key k, const char *name, int sm, const void *cubin, size_t size)
{
    char dir[PATH_MAX], kdir[PATH_MAX + 16], path[PATH_MAX];
    if (writes_off || !rt_cache_dir(dir, sizeof dir) || !rt_cache_entry_path(k, path, sizeof path))
        return;
    snprintf(kdir, sizeof kdir, "%s/kernels", dir);
    entry_header h;
    fill_header(&h, k, name, sm, cubin, size);
    errno = 0;
    if (!rt_cache_mkdirs(kdir) || !rt_cache_write_atomic(path, &h, sizeof h, cubin, size)) {
        warn_unwritable(dir, errno ? errno : EIO);
        return;
    }
    rt_cache_evict(dir, rt_cache_max_bytes());
}

/* For `rnnc cache list`: the header of an entry file, checked but not its payload. */
bool rt_cache_peek(const char *path, int *sm, char name[56], int64_t *created, bool *valid)
{
    cm_in in;
    cm_why w;
    char why[160];
    if (cm_in_open(&in, path, CM_IN_NOFOLLOW, &w) != RNNC_OK)
        return false;
    entry_header h;
    *valid = in.size >= sizeof h && cm_in_read(&in, &h, sizeof h, path, &w) == RNNC_OK &&
             memcmp(h.magic, k_magic, sizeof k_magic) == 0 && h.format == RT_CACHE_FORMAT &&
             h.header_size == sizeof h && h.header_hash == header_hash(&h) &&
             header_fields_ok(&h, in.size, why, sizeof why);
    cm_in_close(&in);
    *sm = *valid ? (int)h.sm : 0;
    *created = *valid ? h.created : 0;
    snprintf(name, 56, "%.*s", *valid ? 55 : 0, *valid ? h.name : "");
    return true;
}
