/*
 * conv.c: the public convolution API (rnnc_conv_*): descriptors checked and
 * shaped on the host, then handed to cuDNN in cudnn_fallback/conv_*.c; and
 * the small device-memory helpers for callers with no CUDA runtime.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

struct rnnc_conv {
    fb_conv_geom g;
};

void rnnc_conv_desc_init(rnnc_conv_desc *d)
{
    memset(d, 0, sizeof *d);
    d->spatial_dims = 2;
    for (int i = 0; i < RNNC_CONV_MAX_DIMS; i++) {
        d->stride[i] = 1;
        d->dilation[i] = 1;
    }
    d->groups = 1;
    d->layout = RNNC_CONV_NCHW;
    d->dtype = RNNC_F32;
    d->math = RNNC_MATH_FFMA;
    d->algo_mode = RNNC_CONV_HEURISTIC;
}

void rnnc_conv_epilogue_init(rnnc_conv_epilogue *e)
{
    memset(e, 0, sizeof *e);
    e->alpha1 = 1.0f;
    e->alpha2 = 1.0f;
    e->relu = true;
}

/* ---------------------------------------------------------------- checks */

static const char *const k_axis[3][3] = {{"W"}, {"H", "W"}, {"D", "H", "W"}};

/* A size cuDNN takes as an int: at least `min`. */
static rnnc_status check_size(const char *what, const char *axis, int64_t v, int64_t min)
{
    if (v < 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: %s%s%s is negative (%lld)", what,
                        axis ? " " : "", axis ? axis : "", (long long)v);
    if (v < min)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: %s%s%s is %lld, must be at least %lld",
                        what, axis ? " " : "", axis ? axis : "", (long long)v, (long long)min);
    if (v > INT_MAX)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: %s%s%s = %lld is above cuDNN's limit %d",
                        what, axis ? " " : "", axis ? axis : "", (long long)v, INT_MAX);
    return RNNC_OK;
}

static rnnc_status check_kinds(const rnnc_conv_desc *d)
{
    if (d->spatial_dims < 1 || d->spatial_dims > 3)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: spatial_dims is %d, must be 1, 2 or 3",
                        d->spatial_dims);
    if (d->layout != RNNC_CONV_NCHW && d->layout != RNNC_CONV_NHWC)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: unknown layout %d", (int)d->layout);
    if (d->dtype != RNNC_F32 && d->dtype != RNNC_F16 && d->dtype != RNNC_BF16)
        return err_fail(RNNC_ERR_UNSUPPORTED, "conv: dtype %s is not supported (F32, F16, BF16)",
                        rnnc_dtype_name(d->dtype));
    if (d->math != RNNC_MATH_FFMA && d->math != RNNC_MATH_TF32)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: unknown math mode %d", (int)d->math);
    if (d->algo_mode != RNNC_CONV_HEURISTIC && d->algo_mode != RNNC_CONV_BENCHMARK)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: unknown algo_mode %d", (int)d->algo_mode);
    if (d->device < 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: device %d is negative", d->device);
    return RNNC_OK;
}

static rnnc_status check_sizes(const rnnc_conv_desc *d)
{
    rnnc_status s = check_size("batch", NULL, d->batch, 1);
    if (s == RNNC_OK)
        s = check_size("in_channels", NULL, d->in_channels, 1);
    if (s == RNNC_OK)
        s = check_size("out_channels", NULL, d->out_channels, 1);
    if (s == RNNC_OK)
        s = check_size("groups", NULL, d->groups, 1);
    const char *const *ax = k_axis[d->spatial_dims - 1];
    for (int i = 0; s == RNNC_OK && i < d->spatial_dims; i++) {
        s = check_size("input", ax[i], d->input[i], 1);
        if (s == RNNC_OK)
            s = check_size("kernel", ax[i], d->kernel[i], 1);
        if (s == RNNC_OK)
            s = check_size("stride", ax[i], d->stride[i], 1);
        if (s == RNNC_OK)
            s = check_size("padding", ax[i], d->padding[i], 0);
        if (s == RNNC_OK)
            s = check_size("dilation", ax[i], d->dilation[i], 1);
    }
    if (s == RNNC_OK && (d->in_channels % d->groups || d->out_channels % d->groups))
        s = err_fail(RNNC_ERR_SHAPE, "conv: groups %lld does not divide in_channels %lld and "
                     "out_channels %lld", (long long)d->groups, (long long)d->in_channels,
                     (long long)d->out_channels);
    return s;
}

/* Output size of axis i; every operand is below 2^31, so nothing overflows. */
static rnnc_status out_size(const rnnc_conv_desc *d, int i, int64_t *out)
{
    int64_t span = d->dilation[i] * (d->kernel[i] - 1) + 1;
    int64_t padded = d->input[i] + 2 * d->padding[i];
    if (span > padded)
        return err_fail(RNNC_ERR_SHAPE, "conv: kernel %s %lld dilated %lld spans %lld, more "
                        "than input %lld padded by %lld on each side (%lld)",
                        k_axis[d->spatial_dims - 1][i], (long long)d->kernel[i],
                        (long long)d->dilation[i], (long long)span, (long long)d->input[i],
                        (long long)d->padding[i], (long long)padded);
    *out = (padded - span) / d->stride[i] + 1;
    return RNNC_OK;
}

/* Element count of shape t; refuses counts cuDNN's legacy calls cannot index. */
static rnnc_status numel(const char *name, const int64_t *t, int rank, int64_t *n)
{
    int64_t v = 1;
    for (int i = 0; i < rank; i++)
        if (__builtin_mul_overflow(v, t[i], &v))
            return err_fail(RNNC_ERR_INVALID_ARG, "conv: the element count of %s overflows "
                            "64 bits", name);
    if (v > INT_MAX)
        return err_fail(RNNC_ERR_UNSUPPORTED, "conv: %s has %lld elements, above cuDNN's "
                        "limit %d (split the batch)", name, (long long)v, INT_MAX);
    *n = v;
    return RNNC_OK;
}

static rnnc_status shape(const rnnc_conv_desc *d, fb_conv_geom *g)
{
    g->d = *d;
    g->rank = 2 + d->spatial_dims;
    g->x[0] = g->y[0] = d->batch;
    g->x[1] = d->in_channels;
    g->w[1] = d->in_channels / d->groups;
    g->w[0] = g->y[1] = d->out_channels;
    for (int i = 0; i < d->spatial_dims; i++) {
        rnnc_status s = out_size(d, i, &g->y[2 + i]);
        if (s != RNNC_OK)
            return s;
        g->x[2 + i] = d->input[i];
        g->w[2 + i] = d->kernel[i];
    }
    rnnc_status s = numel("x", g->x, g->rank, &g->nx);
    if (s == RNNC_OK)
        s = numel("w", g->w, g->rank, &g->nw);
    if (s == RNNC_OK)
        s = numel("y", g->y, g->rank, &g->ny);
    return s;
}

rnnc_status rnnc_conv_create(rnnc_conv **out, const rnnc_conv_desc *d)
{
    if (!out || !d)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: NULL %s", out ? "descriptor" : "out");
    *out = NULL;
    rnnc_status s = check_kinds(d);
    if (s == RNNC_OK)
        s = check_sizes(d);
    rnnc_conv *c = NULL;
    if (s == RNNC_OK && !(c = calloc(1, sizeof *c)))
        s = err_fail(RNNC_ERR_OUT_OF_MEMORY, "conv descriptor");
    if (s == RNNC_OK)
        s = shape(d, &c->g);
    if (s != RNNC_OK) {
        free(c);
        return s;
    }
    *out = c;
    return RNNC_OK;
}

void rnnc_conv_destroy(rnnc_conv *c)
{
    free(c);
}

const rnnc_conv_desc *rnnc_conv_get_desc(const rnnc_conv *c)
{
    return &c->g.d;
}

/* Logical [N, C, S...] to the layout's order. */
static void in_layout(const fb_conv_geom *g, const int64_t *t, int64_t *out)
{
    if (g->d.layout == RNNC_CONV_NCHW) {
        memcpy(out, t, (size_t)g->rank * sizeof *t);
        return;
    }
    out[0] = t[0];
    for (int i = 2; i < g->rank; i++)
        out[i - 1] = t[i];
    out[g->rank - 1] = t[1];
}

void rnnc_conv_shapes(const rnnc_conv *c, int64_t x[5], int64_t w[5], int64_t y[5], int *rank)
{
    if (x)
        in_layout(&c->g, c->g.x, x);
    if (w)
        in_layout(&c->g, c->g.w, w);
    if (y)
        in_layout(&c->g, c->g.y, y);
    if (rank)
        *rank = c->g.rank;
}

void rnnc_conv_numels(const rnnc_conv *c, int64_t *x, int64_t *w, int64_t *y)
{
    if (x)
        *x = c->g.nx;
    if (w)
        *w = c->g.nw;
    if (y)
        *y = c->g.ny;
}

/* ---------------------------------------------------------------- running */

/* The handle, the descriptor and each buffer are given. */
static rnnc_status check_call(const rnnc_conv_handle *h, const rnnc_conv *c, const void *a,
                              const void *b, const void *out, const char *names)
{
    if (!h || !c)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: NULL %s", h ? "descriptor" : "handle");
    if (!a || !b || !out)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: NULL buffer among %s", names);
    return RNNC_OK;
}

#ifdef RNNC_HAVE_CUDNN

rnnc_status rnnc_conv_handle_create(rnnc_conv_handle **out, int device)
{
    if (!out)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: NULL out");
    *out = NULL;
    rnnc_status s = fb_cudnn_load();
    if (s == RNNC_OK)
        s = rt_cuda_context(device);
    if (s != RNNC_OK)
        return s;
    rnnc_conv_handle *h = calloc(1, sizeof *h);
    if (!h)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "conv handle");
    h->device = device;
    s = fb_cudnn_check(cudnnCreate(&h->dnn), "cudnnCreate");
    if (s == RNNC_OK)
        s = fb_conv_plans_resize(h, 64);
    if (s != RNNC_OK) {
        rnnc_conv_handle_destroy(h);
        return s;
    }
    *out = h;
    return RNNC_OK;
}

void rnnc_conv_handle_destroy(rnnc_conv_handle *h)
{
    if (!h)
        return;
    (void)rt_cuda_context(h->device);
    fb_conv_plans_clear(h);
    fb_conv_entries_clear(h);
    free(h->plans);
    free(h->entries);
    if (h->relu)
        cudnnDestroyActivationDescriptor(h->relu);
    fb_buf_free(&h->ws);
    if (h->dnn)
        cudnnDestroy(h->dnn);
    free(h);
}

rnnc_status rnnc_conv_handle_set_plan_cache(rnnc_conv_handle *h, int capacity)
{
    if (!h || capacity < 1)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: plan cache capacity %d (at least 1)",
                        capacity);
    return fb_conv_plans_resize(h, capacity);
}

int rnnc_conv_handle_plan_count(const rnnc_conv_handle *h)
{
    return h ? h->n_plans : 0;
}

const char *rnnc_conv_handle_last_algo(const rnnc_conv_handle *h)
{
    return h ? h->last : "";
}

static rnnc_status run_pass(rnnc_conv_handle *h, const rnnc_conv *c, rnnc_conv_pass pass,
                            const void *a, const void *b, void *out, void *stream,
                            const char *names)
{
    rnnc_status s = check_call(h, c, a, b, out, names);
    if (s == RNNC_OK)
        s = fb_conv_enter(h, &c->g, stream);
    if (s != RNNC_OK)
        return s;
    const void *p[3] = {a, b, out};
    return fb_conv_run(h, &c->g, pass, p, 1.0f, 0.0f);
}

rnnc_status rnnc_conv_forward(rnnc_conv_handle *h, const rnnc_conv *c, const void *x,
                              const void *w, void *y, void *stream)
{
    return run_pass(h, c, RNNC_CONV_FORWARD, x, w, y, stream, "x, w, y");
}

rnnc_status rnnc_conv_backward_data(rnnc_conv_handle *h, const rnnc_conv *c, const void *dy,
                                    const void *w, void *dx, void *stream)
{
    return run_pass(h, c, RNNC_CONV_BACKWARD_DATA, dy, w, dx, stream, "dy, w, dx");
}

rnnc_status rnnc_conv_backward_filter(rnnc_conv_handle *h, const rnnc_conv *c, const void *x,
                                      const void *dy, void *dw, void *stream)
{
    return run_pass(h, c, RNNC_CONV_BACKWARD_FILTER, x, dy, dw, stream, "x, dy, dw");
}

rnnc_status rnnc_conv_transposed(rnnc_conv_handle *h, const rnnc_conv *c, const void *in,
                                 const void *w, void *out, void *stream)
{
    return run_pass(h, c, RNNC_CONV_BACKWARD_DATA, in, w, out, stream, "in, w, out");
}

rnnc_status rnnc_conv_fused(rnnc_conv_handle *h, const rnnc_conv *c, const rnnc_conv_epilogue *e,
                            const void *x, const void *w, void *y, void *stream)
{
    rnnc_status s = check_call(h, c, x, w, y, "x, w, y");
    if (s == RNNC_OK && !e)
        s = err_fail(RNNC_ERR_INVALID_ARG, "conv: NULL epilogue");
    if (s == RNNC_OK)
        s = fb_conv_enter(h, &c->g, stream);
    if (s != RNNC_OK)
        return s;
    return fb_conv_fused(h, &c->g, e, x, w, y);
}

rnnc_status rnnc_conv_time_algos(rnnc_conv_handle *h, const rnnc_conv *c, rnnc_conv_pass pass,
                                 const void *a, const void *b, void *out,
                                 rnnc_conv_algo_perf *perf, int max, int *count)
{
    rnnc_status s = check_call(h, c, a, b, out, "the three buffers");
    if (s == RNNC_OK && (!perf || !count || max < 1 || pass == RNNC_CONV_FUSED ||
                         (unsigned)pass > RNNC_CONV_FUSED))
        s = err_fail(RNNC_ERR_INVALID_ARG, "conv: time_algos needs a pass (forward, backward "
                     "data or filter), perf[max >= 1] and count");
    if (s == RNNC_OK)
        s = fb_conv_enter(h, &c->g, NULL);
    if (s != RNNC_OK)
        return s;
    const void *p[3] = {a, b, out};
    return fb_conv_time(h, &c->g, pass, p, perf, max, count);
}

size_t rnnc_conv_algo_cache_size(void)
{
    return fb_conv_cache_count();
}

void rnnc_conv_algo_cache_clear(void)
{
    fb_conv_cache_clear();
}

#else /* no cuDNN in this build */

static rnnc_status not_built(void)
{
    return err_fail(RNNC_ERR_NOT_BUILT, "convolution needs cuDNN, which is not built into this "
                    "rnnc (the CMake option RNNC_WITH_CUDNN)");
}

rnnc_status rnnc_conv_handle_create(rnnc_conv_handle **out, int device)
{
    (void)device;
    if (out)
        *out = NULL;
    return not_built();
}
void rnnc_conv_handle_destroy(rnnc_conv_handle *h) { (void)h; }
rnnc_status rnnc_conv_handle_set_plan_cache(rnnc_conv_handle *h, int capacity)
{
    if (!h || capacity < 1)
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: plan cache capacity %d (at least 1)",
                        capacity);
    return not_built();
}
int rnnc_conv_handle_plan_count(const rnnc_conv_handle *h) { (void)h; return 0; }
const char *rnnc_conv_handle_last_algo(const rnnc_conv_handle *h) { (void)h; return ""; }
rnnc_status rnnc_conv_forward(rnnc_conv_handle *h, const rnnc_conv *c, const void *x,
                              const void *w, void *y, void *stream)
{
    (void)stream;
    rnnc_status s = check_call(h, c, x, w, y, "x, w, y");
    return s != RNNC_OK ? s : not_built();
}
rnnc_status rnnc_conv_backward_data(rnnc_conv_handle *h, const rnnc_conv *c, const void *dy,
                                    const void *w, void *dx, void *stream)
{
    return rnnc_conv_forward(h, c, dy, w, dx, stream);
}
rnnc_status rnnc_conv_backward_filter(rnnc_conv_handle *h, const rnnc_conv *c, const void *x,
                                      const void *dy, void *dw, void *stream)
{
    return rnnc_conv_forward(h, c, x, dy, dw, stream);
}
rnnc_status rnnc_conv_transposed(rnnc_conv_handle *h, const rnnc_conv *c, const void *in,
                                 const void *w, void *out, void *stream)
{
    return rnnc_conv_forward(h, c, in, w, out, stream);
}
rnnc_status rnnc_conv_fused(rnnc_conv_handle *h, const rnnc_conv *c, const rnnc_conv_epilogue *e,
                            const void *x, const void *w, void *y, void *stream)
{
    (void)e;
    return rnnc_conv_forward(h, c, x, w, y, stream);
}
rnnc_status rnnc_conv_time_algos(rnnc_conv_handle *h, const rnnc_conv *c, rnnc_conv_pass pass,
                                 const void *a, const void *b, void *out,
                                 rnnc_conv_algo_perf *perf, int max, int *count)
{
    (void)pass, (void)perf, (void)max, (void)count;
    return rnnc_conv_forward(h, c, a, b, out, NULL);
}
size_t rnnc_conv_algo_cache_size(void) { return 0; }
void rnnc_conv_algo_cache_clear(void) {}

#endif

/* ---------------------------------------------------------------- device memory */

#ifdef RT_HAVE_CUDA_H

rnnc_status rnnc_device_alloc(int device, size_t bytes, void **ptr)
{
    if (!ptr)
        return err_fail(RNNC_ERR_INVALID_ARG, "device_alloc: NULL ptr");
    *ptr = NULL;
    CUdeviceptr p = 0;
    rnnc_status s = rt_cuda_context(device);
    if (s == RNNC_OK)
        s = rt_dev_alloc(&p, bytes ? bytes : 1);
    if (s == RNNC_OK)
        *ptr = (void *)(uintptr_t)p;
    return s;
}

void rnnc_device_free(void *ptr)
{
    rt_dev_free((CUdeviceptr)(uintptr_t)ptr);
}

rnnc_status rnnc_device_upload(void *dst, const void *src, size_t bytes)
{
    rnnc_status s = rt_dev_upload((CUdeviceptr)(uintptr_t)dst, src, bytes, NULL);
    return s == RNNC_OK ? rt_dev_sync(NULL) : s;
}

rnnc_status rnnc_device_download(void *dst, const void *src, size_t bytes)
{
    rnnc_status s = rt_dev_download(dst, (CUdeviceptr)(uintptr_t)src, bytes, NULL);
    return s == RNNC_OK ? rt_dev_sync(NULL) : s;
}

rnnc_status rnnc_device_sync(void *stream)
{
    return rt_dev_sync((CUstream)stream);
}

#else

static rnnc_status no_cuda(void)
{
    return err_fail(RNNC_ERR_NOT_BUILT, "device memory needs CUDA, which is not built into "
                    "this rnnc (the CMake option RNNC_WITH_CUDA)");
}
rnnc_status rnnc_device_alloc(int device, size_t bytes, void **ptr)
{
    (void)device, (void)bytes;
    if (ptr)
        *ptr = NULL;
    return no_cuda();
}
void rnnc_device_free(void *ptr) { (void)ptr; }
rnnc_status rnnc_device_upload(void *dst, const void *src, size_t bytes)
{
    (void)dst, (void)src, (void)bytes;
    return no_cuda();
}
rnnc_status rnnc_device_download(void *dst, const void *src, size_t bytes)
{
    (void)dst, (void)src, (void)bytes;
    return no_cuda();
}
rnnc_status rnnc_device_sync(void *stream)
{
    (void)stream;
    return no_cuda();
}

#endif
