/*
 * cache_disk.c: the on-disk level of the kernel cache: where it lives, and
 * reading and writing one entry.  An entry is a 128-byte header (magic,
 * format version, key, payload size and hash, header hash) followed by the
 * cubin; nothing read back is trusted until every check passes, so a
 * corrupt, truncated or foreign entry is simply a miss.  docs/cache.md.
 */
#define _GNU_SOURCE
#include "runtime/runtime.h"

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

bool rt_log_enabled(const char *level)
{
    const char *env = getenv("RNNC_LOG");
    if (!env || !*env)
        return false;
    if (strstr(env, level) || strstr(env, "debug"))
        return true;
    return strcmp(level, "info") == 0 && strstr(env, "all");
}

bool rt_cache_dir(char *buf, size_t n)
{
    const char *off = getenv("RNNC_CACHE");
    if (off && strcmp(off, "0") == 0)
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

static rnnc_status check_header(const entry_header *h, rt_cache_key k, off_t file_size,
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
    if ((uint64_t)file_size != sizeof *h + h->payload_size) {
        snprintf(why, n_why, "size %lld, header says %llu", (long long)file_size,
                 (unsigned long long)(sizeof *h + h->payload_size));
        return RNNC_ERR_FORMAT;
    }
    return RNNC_OK;
}

static bool read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

static rnnc_status read_payload(int fd, const entry_header *h, void **cubin, size_t *size,
                                char *why, size_t n_why)
{
    void *buf = malloc(h->payload_size ? h->payload_size : 1);
    if (!buf) {
        snprintf(why, n_why, "out of memory");
        return RNNC_ERR_OUT_OF_MEMORY;
    }
    if (!read_all(fd, buf, h->payload_size)) {
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

rnnc_status rt_cache_read(rt_cache_key k, void **cubin, size_t *size, char *why, size_t n_why)
{
    char path[PATH_MAX];
    snprintf(why, n_why, "no entry");
    if (!rt_cache_entry_path(k, path, sizeof path))
        return RNNC_ERR_NOT_FOUND;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return RNNC_ERR_NOT_FOUND;
    entry_header h;
    struct stat st;
    rnnc_status s = RNNC_ERR_FORMAT;
    if (fstat(fd, &st) != 0 || !read_all(fd, &h, sizeof h)) {
        snprintf(why, n_why, "truncated header");
        goto close_fd;
    }
    s = check_header(&h, k, st.st_size, why, n_why);
    if (s == RNNC_OK)
        s = read_payload(fd, &h, cubin, size, why, n_why);
    if (s == RNNC_OK)
        futimens(fd, NULL); /* mtime = last use, for LRU eviction; may fail read-only */
close_fd:
    close(fd);
    return s;
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

static bool write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Another process may be renaming the same entry into place at the same
 * time: rename is atomic, so the last one wins and both are whole. */
bool rt_cache_write_atomic(const char *path, const void *a, size_t na, const void *b, size_t nb)
{
    char tmp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash || snprintf(tmp, sizeof tmp, "%.*s/.tmp-%s-XXXXXX", (int)(slash - path), path,
                           slash + 1) >= (int)sizeof tmp)
        return false;
    int fd = mkstemp(tmp);
    if (fd < 0)
        return false;
    fchmod(fd, 0644);
    bool ok = write_all(fd, a, na) && (nb == 0 || write_all(fd, b, nb));
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) == 0)
        return true;
    unlink(tmp);
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

void rt_cache_write(rt_cache_key k, const char *name, int sm, const void *cubin, size_t size)
{
    char dir[PATH_MAX], kdir[PATH_MAX + 16], path[PATH_MAX];
    if (!rt_cache_dir(dir, sizeof dir) || !rt_cache_entry_path(k, path, sizeof path))
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
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    entry_header h;
    struct stat st;
    *valid = fstat(fd, &st) == 0 && read_all(fd, &h, sizeof h) &&
             memcmp(h.magic, k_magic, sizeof k_magic) == 0 && h.format == RT_CACHE_FORMAT &&
             h.header_hash == header_hash(&h) &&
             (uint64_t)st.st_size == sizeof h + h.payload_size;
    close(fd);
    *sm = *valid ? (int)h.sm : 0;
    *created = *valid ? h.created : 0;
    snprintf(name, 56, "%.*s", *valid ? 55 : 0, *valid ? h.name : "");
    return true;
}
