/*
 * common.h: the one internal header of common/, the bottom layer: reading
 * and writing files that may be hostile or may be in the way.  Every stage
 * above (runtime, frontend, tools) reads and writes files only through it.
 *
 * It includes nothing of rnnc but the public header and uses nothing above
 * it.  The file routines fill a cm_why with the detail (naming the path)
 * and the caller passes it on with err_fail, adding what it was doing.
 *
 * Sections: errors (error.c), writing (file_out.c), reading (file_in.c),
 * clock and medians (clock.c), environment and logging (env.c), Philox and
 * dropout (philox.c).
 */
#ifndef RNNC_COMMON_H
#define RNNC_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rnnc.h"

/* ---------------------------------------------------------------- errors (error.c) */

/* Records a printf-style detail for rnnc_last_error() and returns `s`. */
rnnc_status err_fail(rnnc_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends more detail to the current error text ("; " separated). */
void err_fail_append(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void err_clear(void);

/* The detail of a failure, for err_fail(s, "%s", why.text). */
typedef struct cm_why {
    char text[512];
} cm_why;
/* Writes the detail into why and returns s (file_in.c, for both file modules). */
rnnc_status cm_why_fail(cm_why *why, rnnc_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* What a path that is not a regular file is, for messages ("a FIFO"); m is st_mode. */
const char *cm_file_kind(unsigned m);

/* ---------------------------------------------------------------- writing (file_out.c) */

/* A file being written: bytes go to a temp file of a unique name created
 * (O_EXCL|O_NOFOLLOW, mode 0666 less the umask) in the target's directory;
 * cm_out_commit fsyncs it and renames it over the target, so a reader sees
 * the old file or the whole new one, never a part, and a failure (a full
 * disk) leaves the old file and no temp file.  Only a regular file (or
 * nothing) at the target is replaced: a directory, FIFO, device, socket or
 * symbolic link there is an error, never turned into a regular file. */
typedef struct cm_out {
    int fd;       /* of the temp file; -1 when discarding */
    bool discard; /* `-` or /dev/null where allowed: accept and drop the bytes */
    char *path, *tmp;
} cm_out;

enum {
    CM_OUT_DISCARD = 1u, /* `-` and /dev/null mean "discard" (for outputs a command can skip) */
};

/* Temp files are named "<dir>/.tmp-<name>-XXXXXX"; `rnnc cache clear` knows the prefix. */
#define CM_TMP_PREFIX ".tmp-"

rnnc_status cm_out_open(cm_out *o, const char *path, unsigned flags, cm_why *why);
rnnc_status cm_out_write(cm_out *o, const void *p, size_t n, cm_why *why);
/* Syncs and renames into place; on failure the temp file is removed.  Either
 * way `o` is closed. */
rnnc_status cm_out_commit(cm_out *o, cm_why *why);
/* Drops the temp file (after a failure of the caller's own); NULL-safe, idempotent. */
void cm_out_abort(cm_out *o);
/* The whole file at once: a then b (either may be empty). */
rnnc_status cm_write_file(const char *path, unsigned flags, const void *a, size_t na,
                          const void *b, size_t nb, cm_why *why);

/* True when `path` names what `-`/`/dev/null` name for CM_OUT_DISCARD. */
bool cm_is_discard(const char *path);
/* True when both paths exist and are the same file (device and inode: links
 * and other spellings of one path are caught). */
bool cm_same_file(const char *a, const char *b);
/* cm_same_file, or (for files not there yet) the same name in the same directory. */
bool cm_same_target(const char *a, const char *b);

/* ---------------------------------------------------------------- reading (file_in.c) */

/* A file being read: opened without blocking (a FIFO does not hang), then
 * checked to be a regular file before a byte is read; its size is fstat's. */
typedef struct cm_in {
    int fd;
    uint64_t size;
} cm_in;

enum {
    CM_IN_NOFOLLOW = 1u, /* a symbolic link is an error (files rnnc names itself: the cache) */
};

/* ENOENT is RNNC_ERR_NOT_FOUND (so a cache can call it a miss); every other
 * failure is RNNC_ERR_IO. */
rnnc_status cm_in_open(cm_in *in, const char *path, unsigned flags, cm_why *why);
/* Exactly n bytes, or RNNC_ERR_IO (a short read: the file shrank). */
rnnc_status cm_in_read(cm_in *in, void *p, size_t n, const char *path, cm_why *why);
void cm_in_close(cm_in *in);
/* The whole file in a malloc'ed buffer with a NUL after it; a file over
 * `max` bytes is RNNC_ERR_FORMAT. */
rnnc_status cm_read_file(const char *path, unsigned flags, uint64_t max, char **buf,
                         size_t *n, cm_why *why);


/* ---------------------------------------------------------------- clock and medians (clock.c) */

double cm_now_ms(void); /* monotonic */
/* The median of v[n] (n >= 1), sorting v. */
double cm_median(double *v, int n);

/* ---------------------------------------------------------------- environment (env.c) */

/* The variable is set to exactly `value`. */
bool cm_env_is(const char *name, const char *value);
/* Its value read by strtol (base 10), or dflt when it is unset or empty. */
long cm_env_long(const char *name, long dflt);
/* RNNC_LOG names `level` ("info", "debug"; "debug" includes "info"). */
bool cm_log_enabled(const char *level);

/* ---------------------------------------------------------------- Philox and dropout (philox.c) */

/*
 * Dropout draws one uniform per element from Philox4x32-10 (docs/dropout.md):
 * u = word (index % 4) of rnnc_philox4x32_10(seed, site, index / 4) * 2^-32;
 * the element is kept iff u >= p, and kept values are scaled by 1/(1-p).
 */
bool cm_dropout_keep(uint64_t seed, uint64_t site, uint64_t index, double p);
/* 1/(1-p); 0 when p >= 1 (everything dropped). */
double cm_dropout_scale(double p);

#endif
