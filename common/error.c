/*
 * error.c: status strings and the per-thread detail behind rnnc_last_error().
 * Every failing action records what went wrong here, once, where it is
 * known; callers higher up may append context.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

#define ERR_CAP 2048

static _Thread_local char err_buf[ERR_CAP];

static const char *const status_names[] = {
    [RNNC_OK] = "ok",
    [RNNC_ERR_INVALID_ARG] = "invalid argument",
    [RNNC_ERR_OUT_OF_MEMORY] = "out of memory",
    [RNNC_ERR_PARSE] = "parse error",
    [RNNC_ERR_SHAPE] = "shape mismatch",
    [RNNC_ERR_IO] = "I/O error",
    [RNNC_ERR_FORMAT] = "bad file format",
    [RNNC_ERR_UNSUPPORTED] = "unsupported",
    [RNNC_ERR_NOT_BUILT] = "not built",
    [RNNC_ERR_NO_DEVICE] = "no device",
    [RNNC_ERR_CUDA] = "CUDA error",
    [RNNC_ERR_NVRTC] = "NVRTC error",
    [RNNC_ERR_CUDNN] = "cuDNN error",
    [RNNC_ERR_LLVM] = "LLVM error",
    [RNNC_ERR_NOT_FOUND] = "not found",
    [RNNC_ERR_STATE] = "invalid call order",
    [RNNC_ERR_INTERNAL] = "internal error",
};

const char *rnnc_status_string(rnnc_status s)
{
    if ((unsigned)s < sizeof status_names / sizeof status_names[0] && status_names[s])
        return status_names[s];
    return "unknown status";
}

const char *rnnc_last_error(void)
{
    return err_buf;
}

const char *rnnc_version_string(void)
{
    return "0.1.0";
}

void err_clear(void)
{
    err_buf[0] = 0;
}

rnnc_status err_fail(rnnc_status s, const char *fmt, ...)
{
    /* Format into a copy first: callers may pass rnnc_last_error() as an argument. */
    char tmp[ERR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(err_buf, tmp, sizeof tmp);
    return s;
}

void err_fail_append(const char *fmt, ...)
{
    char tmp[ERR_CAP];
    size_t n = strlen(err_buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0 && n + 2 < ERR_CAP) {
        memcpy(err_buf + n, "; ", 3);
        n += 2;
    }
    size_t k = strlen(tmp);
    if (k > ERR_CAP - 1 - n)
        k = ERR_CAP - 1 - n;
    memcpy(err_buf + n, tmp, k);
    err_buf[n + k] = 0;
}

void rnnc_free(void *p)
{
    free(p);
}
