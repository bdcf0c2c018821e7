/*
 * cudnn_util.c: what the cuDNN paths share: status translation, the
 * per-device dropout state, fp16 conversion, buffers that only grow.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "cudnn_fallback/dnn.h"

rnnc_status fb_cudnn_check(cudnnStatus_t st, const char *what)
{
    if (st == CUDNN_STATUS_SUCCESS)
        return RNNC_OK;
    char detail[512];
    detail[0] = '\0';
    cudnnGetLastErrorString(detail, sizeof detail);
    rnnc_status code = RNNC_ERR_CUDNN;
    if (st == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
        st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
        code = RNNC_ERR_OUT_OF_MEMORY;
    return err_fail(code, "%s: %s (%d)%s%s", what, cudnnGetErrorString(st), (int)st,
                    detail[0] ? ": " : "", detail);
}

/* ---------------------------------------------------------------- buffers */

rnnc_status fb_buf_reserve(fb_buf *b, size_t n)
{
    if (n <= b->cap)
        return RNNC_OK;
    rt_dev_free(b->p);
    b->p = 0;
    b->cap = 0;
    rnnc_status st = rt_dev_alloc(&b->p, n);
    if (st == RNNC_OK)
        b->cap = n;
    return st;
}

void fb_buf_free(fb_buf *b)
{
    rt_dev_free(b->p);
    b->p = 0;
    b->cap = 0;
}

/* ---------------------------------------------------------------- dropout state */

#define FB_DROPOUT_DEVICES 64

/* One state per device, as PyTorch does: seeding it runs a kernel over
 * about 2 MB, far too slow for every model or call. */
typedef struct drop_state {
    CUdeviceptr states;
    size_t size;
    uint64_t seed;
} drop_state;

static drop_state drop_cache[FB_DROPOUT_DEVICES];
static pthread_mutex_t drop_lock = PTHREAD_MUTEX_INITIALIZER;

static rnnc_status drop_seed(cudnnHandle_t h, drop_state *d, uint64_t seed, float p,
                             cudnnDropoutDescriptor_t desc)
{
    if (!d->states) {
        rnnc_status st = fb_cudnn_check(cudnnDropoutGetStatesSize(h, &d->size),
                                        "cudnnDropoutGetStatesSize");
        if (st != RNNC_OK)
            return st;
        st = rt_dev_alloc(&d->states, d->size);
        if (st != RNNC_OK)
            return st;
    }
    d->seed = seed;
    return fb_cudnn_check(cudnnSetDropoutDescriptor(desc, h, p, (void *)(uintptr_t)d->states,
                                                    d->size, (unsigned long long)seed),
                          "cudnnSetDropoutDescriptor");
}

rnnc_status fb_dropout_bind(cudnnHandle_t h, int device, uint64_t seed, float p,
                            cudnnDropoutDescriptor_t desc)
{
    if (p <= 0.0f) /* no dropout needs no state */
        return fb_cudnn_check(cudnnSetDropoutDescriptor(desc, h, 0.0f, NULL, 0, 0),
                              "cudnnSetDropoutDescriptor");
    if (p >= 1.0f)
        return err_fail(RNNC_ERR_INVALID_ARG, "dropout %g is not in [0, 1)", (double)p);
    if (device < 0 || device >= FB_DROPOUT_DEVICES)
        return err_fail(RNNC_ERR_INVALID_ARG, "device %d out of range", device);
    pthread_mutex_lock(&drop_lock);
    drop_state *d = &drop_cache[device];
    rnnc_status st;
    if (!d->states || d->seed != seed) {
        st = drop_seed(h, d, seed, p, desc);
    } else {
        st = fb_cudnn_check(cudnnRestoreDropoutDescriptor(desc, h, p,
                                                          (void *)(uintptr_t)d->states, d->size,
                                                          (unsigned long long)seed),
                            "cudnnRestoreDropoutDescriptor");
    }
    pthread_mutex_unlock(&drop_lock);
    return st;
}

/* ---------------------------------------------------------------- fp16 */

uint16_t fb_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf, nan (kept quiet) */
        return sign | 0x7c00u | (ax > 0x7f800000u ? 0x0200u : 0u);
    if (ax >= 0x477ff000u) /* 65520 and up round to inf */
        return sign | 0x7c00u;
    if (ax < 0x38800000u) { /* below 2^-14: a subnormal half, in units of 2^-24 */
        float a;
        memcpy(&a, &ax, sizeof a);
        return sign | (uint16_t)rintf(a * 16777216.0f);
    }
    /* Rebias the exponent (127 -> 15), then round 23 mantissa bits to 10,
     * ties to even; a carry into the exponent is the right answer. */
    uint32_t m = ax - 0x38000000u;
    m += 0x0fffu + ((m >> 13) & 1u);
    return sign | (uint16_t)(m >> 13);
}

float fb_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    uint32_t x = sign | (e == 31 ? 0x7f800000u : (e + 112u) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}
