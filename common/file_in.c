/*
 * file_in.c: the one way rnnc opens a file it reads (common.h).  open()
 * comes before any check of what the path is, so it must not block:
 * O_NONBLOCK makes a FIFO open at once (and fail the regular-file check)
 * where a plain open would wait forever for a writer.  The size is fstat's
 * of the open file, never a seek past a directory's end.
 */
#define _GNU_SOURCE /* O_NOFOLLOW, O_CLOEXEC */
#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

rnnc_status cm_why_fail(cm_why *why, rnnc_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->text, sizeof why->text, fmt, ap);
    va_end(ap);
    return s;
}

const char *cm_file_kind(unsigned m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
           : S_ISLNK(m)  ? "a symbolic link"
                         : "not a regular file";
}

rnnc_status cm_in_open(cm_in *in, const char *path, unsigned flags, cm_why *why)
{
    struct stat st;
    int oflags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (flags & CM_IN_NOFOLLOW ? O_NOFOLLOW : 0);
    *in = (cm_in){.fd = -1};
    if (!path || !*path)
        return cm_why_fail(why, RNNC_ERR_INVALID_ARG, "no input path given");
    int fd = open(path, oflags);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP && (flags & CM_IN_NOFOLLOW))
            return cm_why_fail(why, RNNC_ERR_IO, "'%s' is a symbolic link; not followed here", path);
        return cm_why_fail(why, e == ENOENT ? RNNC_ERR_NOT_FOUND : RNNC_ERR_IO, "cannot open '%s': %s",
                    path, strerror(e));
    }
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return cm_why_fail(why, RNNC_ERR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return cm_why_fail(why, RNNC_ERR_IO, "'%s' is %s, not a regular file", path,
                    cm_file_kind(st.st_mode));
    }
    /* A regular file never blocks; reads then behave as usual. */
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    in->fd = fd;
    in->size = (uint64_t)st.st_size;
    return RNNC_OK;
}

rnnc_status cm_in_read(cm_in *in, void *p, size_t n, const char *path, cm_why *why)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = read(in->fd, c, n < (1u << 30) ? n : (1u << 30));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return cm_why_fail(why, RNNC_ERR_IO, "cannot read '%s': %s", path,
                        r < 0 ? strerror(errno) : "it ends early (changed while read?)");
        c += r;
        n -= (size_t)r;
    }
    return RNNC_OK;
}

void cm_in_close(cm_in *in)
{
    if (in && in->fd >= 0)
        close(in->fd);
    if (in)
        in->fd = -1;
}

rnnc_status cm_read_file(const char *path, unsigned flags, uint64_t max, char **buf,
                         size_t *n, cm_why *why)
{
    cm_in in;
    *buf = NULL;
    *n = 0;
    rnnc_status s = cm_in_open(&in, path, flags, why);
    if (s != RNNC_OK)
        return s;
    if (in.size > max || in.size > SIZE_MAX - 1) {
        s = cm_why_fail(why, RNNC_ERR_FORMAT, "'%s' is %llu bytes, over the limit of %llu", path,
                 (unsigned long long)in.size, (unsigned long long)max);
        goto close_in;
    }
    char *b = malloc((size_t)in.size + 1);
    if (!b) {
        s = cm_why_fail(why, RNNC_ERR_OUT_OF_MEMORY, "reading '%s': out of memory", path);
        goto close_in;
    }
    if ((s = cm_in_read(&in, b, (size_t)in.size, path, why)) != RNNC_OK) {
        free(b);
        goto close_in;
    }
    b[in.size] = '\0';
    *buf = b;
    *n = (size_t)in.size;
close_in:
    cm_in_close(&in);
    return s;
}
