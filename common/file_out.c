/*
 * file_out.c: the one way rnnc writes a file (common.h says the contract).
 * Why not fopen(path) or a fixed "<path>.tmp": both follow a symbolic link
 * an attacker planted, two writers of one path collide on a fixed name, and
 * rename() turns whatever sat at the path (a FIFO, /dev/null) into a
 * regular file.  Here the temp name is unique and created with
 * O_CREAT|O_EXCL|O_NOFOLLOW, the target is checked to be a regular file
 * (or absent) before and just before the rename, and mode 0666 passes
 * through the umask as a plain creat() would.
 */
#define _GNU_SOURCE /* O_NOFOLLOW, O_CLOEXEC, O_DIRECTORY */
#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Long names still fit NAME_MAX (255) once the prefix and suffix are added. */
#define TMP_BASE_MAX 200
#define TMP_TRIES 64

static atomic_uint_fast64_t g_counter;

bool cm_is_discard(const char *path)
{
    struct stat a, b;
    if (strcmp(path, "-") == 0)
        return true;
    return stat(path, &a) == 0 && S_ISCHR(a.st_mode) && stat("/dev/null", &b) == 0 &&
           S_ISCHR(b.st_mode) && a.st_rdev == b.st_rdev;
}

bool cm_same_file(const char *a, const char *b)
{
    struct stat x, y;
    return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}

/* The directory part of path ("." for none) as its device and inode, and
 * where the last component starts. */
static bool parent_of(const char *path, struct stat *st, const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!slash)
        return stat(".", st) == 0;
    char *dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
    bool ok = dir && stat(dir, st) == 0;
    free(dir);
    return ok;
}

bool cm_same_target(const char *a, const char *b)
{
    struct stat x, y;
    const char *ba, *bb;
    if (!a || !b)
        return false;
    if (cm_same_file(a, b))
        return true;
    return parent_of(a, &x, &ba) && parent_of(b, &y, &bb) && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino && strcmp(ba, bb) == 0 && *ba;
}

/* Nothing, or a regular file: the only things rename may replace. */
static rnnc_status check_target(const char *path, cm_why *why)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return RNNC_OK;
        return cm_why_fail(why, RNNC_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    }
    if (!S_ISREG(st.st_mode))
        return cm_why_fail(why, RNNC_ERR_IO,
                    "will not write '%s': it is %s, and only a regular file is replaced", path,
                    cm_file_kind(st.st_mode));
    return RNNC_OK;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void random_suffix(char out[7])
{
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t r = mix((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^
                     (uint64_t)getpid() << 40 ^ atomic_fetch_add(&g_counter, 1) << 20);
    for (int i = 0; i < 6; i++, r /= 62)
        out[i] = alnum[r % 62];
    out[6] = '\0';
}

/* "<dir>/.tmp-<base>-XXXXXX", created exclusively. */
static rnnc_status create_tmp(cm_out *o, cm_why *why)
{
    const char *slash = strrchr(o->path, '/');
    int dir_len = slash ? (int)(slash - o->path) + 1 : 0;
    const char *base = slash ? slash + 1 : o->path;
    size_t cap = strlen(o->path) + sizeof CM_TMP_PREFIX + 8;
    if (!(o->tmp = malloc(cap)))
        return cm_why_fail(why, RNNC_ERR_OUT_OF_MEMORY, "writing '%s': out of memory", o->path);
    for (int i = 0; i < TMP_TRIES; i++) {
        char suffix[7];
        random_suffix(suffix);
        snprintf(o->tmp, cap, "%.*s" CM_TMP_PREFIX "%.*s-%s", dir_len, o->path, TMP_BASE_MAX,
                 base, suffix);
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (o->fd >= 0)
            return RNNC_OK;
        if (errno != EEXIST)
            break;
    }
    int e = errno;
    free(o->tmp);
    o->tmp = NULL;
    return cm_why_fail(why, RNNC_ERR_IO, "cannot create a file beside '%s': %s", o->path, strerror(e));
}

rnnc_status cm_out_open(cm_out *o, const char *path, unsigned flags, cm_why *why)
{
    *o = (cm_out){.fd = -1};
    if (!path || !*path)
        return cm_why_fail(why, RNNC_ERR_INVALID_ARG, "no output path given");
    if ((flags & CM_OUT_DISCARD) && cm_is_discard(path)) {
        o->discard = true;
        return RNNC_OK;
    }
    rnnc_status s = check_target(path, why);
    if (s != RNNC_OK)
        return s;
    if (!(o->path = strdup(path)))
        return cm_why_fail(why, RNNC_ERR_OUT_OF_MEMORY, "writing '%s': out of memory", path);
    if ((s = create_tmp(o, why)) != RNNC_OK) {
        free(o->path);
        o->path = NULL;
    }
    return s;
}

rnnc_status cm_out_write(cm_out *o, const void *p, size_t n, cm_why *why)
{
    const char *c = p;
    if (o->discard)
        return RNNC_OK;
    while (n > 0) {
        ssize_t w = write(o->fd, c, n < (1u << 30) ? n : (1u << 30));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return cm_why_fail(why, RNNC_ERR_IO, "cannot write '%s': %s", o->path,
                        w < 0 ? strerror(errno) : "no progress");
        c += w;
        n -= (size_t)w;
    }
    return RNNC_OK;
}

void cm_out_abort(cm_out *o)
{
    if (!o)
        return;
    if (o->fd >= 0)
        close(o->fd);
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    *o = (cm_out){.fd = -1};
}

/* So that the rename itself survives a crash; a failure here loses nothing. */
static void sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

rnnc_status cm_out_commit(cm_out *o, cm_why *why)
{
    rnnc_status s = RNNC_OK;
    if (o->discard) {
        *o = (cm_out){.fd = -1};
        return RNNC_OK;
    }
    int fd = o->fd;
    o->fd = -1;
    if (fsync(fd) != 0) {
        s = cm_why_fail(why, RNNC_ERR_IO, "cannot write '%s': %s", o->path, strerror(errno));
        close(fd);
    } else if (close(fd) != 0) {
        s = cm_why_fail(why, RNNC_ERR_IO, "cannot write '%s': %s", o->path, strerror(errno));
    }
    /* Something may have appeared at the path since cm_out_open. */
    if (s == RNNC_OK)
        s = check_target(o->path, why);
    if (s == RNNC_OK && rename(o->tmp, o->path) != 0)
        s = cm_why_fail(why, RNNC_ERR_IO, "cannot replace '%s': %s", o->path, strerror(errno));
    if (s == RNNC_OK) {
        sync_dir(o->path);
        free(o->tmp);
        o->tmp = NULL;
    }
    cm_out_abort(o); /* removes the temp file if it is still there */
    return s;
}

rnnc_status cm_write_file(const char *path, unsigned flags, const void *a, size_t na,
                          const void *b, size_t nb, cm_why *why)
{
    cm_out o;
    rnnc_status s = cm_out_open(&o, path, flags, why);
    if (s != RNNC_OK)
        return s;
    if ((s = cm_out_write(&o, a, na, why)) != RNNC_OK ||
        (s = cm_out_write(&o, b, nb, why)) != RNNC_OK) {
        cm_out_abort(&o);
        return s;
    }
    return cm_out_commit(&o, why);
}
