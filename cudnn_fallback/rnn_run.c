/*
 * rnn_run.c: runs the cudnn backend: forward (inference or training),
 * backward (data, then weights), and timing.
 *
 * Device pointers are used as they are; host pointers go through staging
 * buffers that grow with the shape and are kept, so a training forward's
 * x, y and initial states are still there when backward needs them.
 * Backward runs on the stream of the forward it differentiates.
 */
#include <limits.h>
#include <stdlib.h>

#include "cudnn_fallback/rnn.h"

size_t fb_rnn_state_bytes(const fb_rnn *r, int state)
{
    int64_t n = state == r->state_c ? r->hidden : r->hout;
    return (size_t)r->pseudo * (size_t)r->B * (size_t)n * r->esz;
}

static size_t x_bytes(const fb_rnn *r)
{
    return (size_t)r->rows * (size_t)r->spec.sizes[0].I * r->esz;
}

static size_t y_bytes(const fb_rnn *r)
{
    return (size_t)r->rows * (size_t)(r->dirs * r->hout) * r->esz;
}

/* ---------------------------------------------------------------- checks */

static rnnc_status check_forward(const fb_rnn *r, const rnnc_forward_args *a)
{
    rnnc_status st = rt_check_forward(&r->spec, a);
    if (st != RNNC_OK)
        return st;
    if (!a->x || !a->y)
        return err_fail(RNNC_ERR_INVALID_ARG, "cudnn forward needs x and y");
    if (a->seq_len < 1 || a->seq_len > INT_MAX || a->batch < 1 || a->batch > INT_MAX)
        return err_fail(RNNC_ERR_SHAPE, "T = %lld and B = %lld must be in [1, %d]",
                        (long long)a->seq_len, (long long)a->batch, INT_MAX);
    for (int64_t b = 0; a->lengths && b < a->batch; b++)
        if (a->lengths[b] < 1 || a->lengths[b] > a->seq_len)
            return err_fail(RNNC_ERR_SHAPE, "lengths[%lld] = %lld is not in [1, T = %lld]",
                            (long long)b, (long long)a->lengths[b], (long long)a->seq_len);
    if (!r->bound && !r->ext_w)
        return err_fail(RNNC_ERR_STATE, "cudnn forward before the weights were set");
    return RNNC_OK;
}

/* ---------------------------------------------------------------- shape */

static rnnc_status set_lengths(fb_rnn *r, const rnnc_forward_args *a)
{
    if ((size_t)a->batch > r->lens_cap) {
        int32_t *l = realloc(r->lens, (size_t)a->batch * sizeof *l);
        if (!l)
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "sequence lengths");
        r->lens = l;
        r->lens_cap = (size_t)a->batch;
    }
    /* Packed: sequence b is active while batch_sizes[t] > b (they are
     * sorted longest first, as cuDNN's packed layout wants). */
    for (int64_t b = 0; a->batch_sizes && b < a->batch; b++)
        r->lens[b] = 0;
    for (int64_t t = 0; a->batch_sizes && t < a->seq_len; t++)
        for (int64_t b = 0; b < a->batch_sizes[t]; b++)
            r->lens[b]++;
    r->ragged = false;
    r->rows = 0;
    for (int64_t b = 0; b < a->batch; b++) {
        if (!a->batch_sizes)
            r->lens[b] = (int32_t)(a->lengths ? a->lengths[b] : a->seq_len);
        r->ragged |= r->lens[b] < a->seq_len;
        r->rows += r->lens[b];
    }
    r->packed = a->batch_sizes != NULL;
    if (!r->packed)
        r->rows = (int64_t)r->T * r->B;
    return RNNC_OK;
}

static rnnc_status set_state_desc(cudnnTensorDescriptor_t d, cudnnDataType_t dt, int pseudo,
                                  int batch, int64_t n)
{
    int dims[3] = {pseudo, batch, (int)n};
    int strides[3] = {batch * (int)n, (int)n, 1};
    return fb_cudnn_check(cudnnSetTensorNdDescriptor(d, dt, 3, dims, strides),
                          "cudnnSetTensorNdDescriptor");
}

/* Data descriptors for (T, B, lengths); y past a sequence's end reads 0. */
static rnnc_status set_data_descs(fb_rnn *r, bool batch_first)
{
    cudnnRNNDataLayout_t layout = r->packed      ? CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED
                                  : batch_first ? CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED
                                                : CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED;
    double zero = 0.0; /* all-zero bits: 0 in fp16, fp32 and fp64 alike */
    rnnc_status st = fb_cudnn_check(
        cudnnSetRNNDataDescriptor(r->xdesc, r->dtype, layout, r->T, r->B,
                                  (int)r->spec.sizes[0].I, r->lens, &zero),
        "cudnnSetRNNDataDescriptor(x)");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnSetRNNDataDescriptor(r->ydesc, r->dtype, layout, r->T, r->B,
                                                      (int)(r->dirs * r->hout), r->lens, &zero),
                            "cudnnSetRNNDataDescriptor(y)");
    if (st == RNNC_OK)
        st = set_state_desc(r->hdesc, r->dtype, r->pseudo, r->B, r->hout);
    if (st == RNNC_OK)
        st = set_state_desc(r->cdesc, r->dtype, r->pseudo, r->B, r->hidden);
    return st;
}

/* Descriptors and device lengths for this call's shape (the temp space
 * waits for the algorithm: fb_rnn_prepare_algo). */
static rnnc_status set_shape(fb_rnn *r, const rnnc_forward_args *a, CUstream s)
{
    r->T = (int)a->seq_len;
    r->B = (int)a->batch;
    r->training = a->training;
    rnnc_status st = set_lengths(r, a);
    if (st == RNNC_OK)
        st = set_data_descs(r, r->spec.batch_first);
    if (st == RNNC_OK)
        st = fb_buf_reserve(&r->seq, (size_t)r->B * sizeof(int32_t));
    if (st == RNNC_OK)
        st = rt_dev_upload(r->seq.p, r->lens, (size_t)r->B * sizeof(int32_t), s);
    return st;
}

/* ---------------------------------------------------------------- staging */

static CUdeviceptr as_dev(const void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

/* An input: the device pointer itself, or a copy of host memory. */
static rnnc_status stage_in(fb_buf *b, const void *src, size_t n, bool dev, CUstream s,
                            CUdeviceptr *out)
{
    *out = 0;
    if (!src)
        return RNNC_OK;
    if (dev) {
        *out = as_dev(src);
        return RNNC_OK;
    }
    rnnc_status st = fb_buf_reserve(b, n);
    if (st == RNNC_OK)
        st = rt_dev_upload(b->p, src, n, s);
    if (st == RNNC_OK)
        *out = b->p;
    return st;
}

/* An output: the device pointer itself, or a staging buffer read back later. */
static rnnc_status stage_out(fb_buf *b, const void *dst, size_t n, bool dev, CUdeviceptr *out)
{
    *out = 0;
    if (!dst)
        return RNNC_OK;
    if (dev) {
        *out = as_dev(dst);
        return RNNC_OK;
    }
    rnnc_status st = fb_buf_reserve(b, n);
    if (st == RNNC_OK)
        *out = b->p;
    return st;
}

static rnnc_status fetch_out(void *dst, CUdeviceptr src, size_t n, bool dev, CUstream s)
{
    if (!dst || dev)
        return RNNC_OK;
    return rt_dev_download(dst, src, n, s);
}

static const void *state_arg(const void *const *arr, int i)
{
    return arr && i >= 0 ? arr[i] : NULL;
}

/* ---------------------------------------------------------------- forward */

static rnnc_status stage_forward(fb_rnn *r, const rnnc_forward_args *a, CUstream s, fb_io *io)
{
    bool dev = a->device_pointers;
    int h = r->state_h, c = r->state_c;
    rnnc_status st = stage_in(&r->x, a->x, x_bytes(r), dev, s, &io->x);
    if (st == RNNC_OK)
        st = stage_in(&r->hx, state_arg(a->init, h), fb_rnn_state_bytes(r, h), dev, s, &io->hx);
    if (st == RNNC_OK)
        st = stage_in(&r->cx, state_arg(a->init, c), fb_rnn_state_bytes(r, c), dev, s, &io->cx);
    if (st == RNNC_OK)
        st = stage_out(&r->y, a->y, y_bytes(r), dev, &io->y);
    if (st == RNNC_OK)
        st = stage_out(&r->hy, state_arg((const void *const *)a->final, h),
                       fb_rnn_state_bytes(r, h), dev, &io->hy);
    if (st == RNNC_OK)
        st = stage_out(&r->cy, state_arg((const void *const *)a->final, c),
                       fb_rnn_state_bytes(r, c), dev, &io->cy);
    return st;
}

static void *ptr(CUdeviceptr p)
{
    return (void *)(uintptr_t)p;
}

rnnc_status fb_rnn_launch_forward(fb_rnn *r, const fb_io *io)
{
    cudnnForwardMode_t mode = r->training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE;
    cudnnStatus_t cs = cudnnRNNForward(
        r->handle, r->rnn, mode, (const int32_t *)ptr(r->seq.p), r->xdesc, ptr(io->x), r->ydesc,
        ptr(io->y), r->hdesc, ptr(io->hx), ptr(io->hy), r->cdesc, ptr(io->cx), ptr(io->cy),
        r->wsize, ptr(r->wp), r->ws_size, ptr(r->ws.p), r->rs_size,
        r->rs_size ? ptr(r->rs.p) : NULL);
    return fb_cudnn_check(cs, "cudnnRNNForward");
}

static rnnc_status finish_forward(fb_rnn *r, const rnnc_forward_args *a, const fb_io *io,
                                  CUstream s)
{
    bool dev = a->device_pointers;
    int h = r->state_h, c = r->state_c;
    rnnc_status st = fetch_out(a->y, io->y, y_bytes(r), dev, s);
    if (st == RNNC_OK)
        st = fetch_out(a->final ? a->final[h] : NULL, io->hy, fb_rnn_state_bytes(r, h), dev, s);
    if (st == RNNC_OK && c >= 0)
        st = fetch_out(a->final ? a->final[c] : NULL, io->cy, fb_rnn_state_bytes(r, c), dev, s);
    if (st == RNNC_OK && !dev)
        st = rt_dev_sync(s);
    return st;
}

rnnc_status fb_rnn_forward(void *state, const rnnc_forward_args *a)
{
    fb_rnn *r = state;
    CUstream s = (CUstream)a->stream;
    rnnc_status st = check_forward(r, a);
    if (st == RNNC_OK)
        st = rt_cuda_context(r->spec.device);
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnSetStream(r->handle, (cudaStream_t)s), "cudnnSetStream");
    r->last_valid = false; /* whatever happens, the previous forward is gone */
    fb_io io = {0};
    if (st == RNNC_OK)
        st = set_shape(r, a, s);
    if (st == RNNC_OK)
        st = stage_forward(r, a, s, &io);
    if (st == RNNC_OK)
        st = fb_rnn_prepare_algo(r, &io, s);
    if (st == RNNC_OK)
        st = fb_rnn_launch_forward(r, &io);
    if (st == RNNC_OK)
        st = finish_forward(r, a, &io, s);
    if (st != RNNC_OK)
        return st;
    r->last = io;
    r->last_valid = true;
    r->last_training = a->training;
    r->last_dev = a->device_pointers;
    r->stream = s;
    return RNNC_OK;
}

/* ---------------------------------------------------------------- timing */

static rnnc_status time_once(void *ctx, CUstream s)
{
    (void)s; /* the handle is already on s */
    fb_rnn *r = ctx;
    return fb_rnn_launch_forward(r, &r->last);
}

rnnc_status fb_rnn_time_forward(void *state, const rnnc_forward_args *a, int warmup, int iters,
                                double *median_ms)
{
    fb_rnn *r = state;
    /* One full forward checks, sizes and stages everything; the timed
     * calls are then cudnnRNNForward alone, on device buffers. */
    rnnc_status st = fb_rnn_forward(r, a);
    if (st != RNNC_OK)
        return st;
    return rt_time_ms(time_once, r, r->stream, warmup, iters, median_ms);
}

/* ---------------------------------------------------------------- backward */

static rnnc_status check_backward(const fb_rnn *r, const rnnc_backward_args *a)
{
    if (!r->last_valid || !r->last_training)
        return err_fail(RNNC_ERR_STATE, "backward needs a training forward first%s",
                        r->last_valid ? " (the last forward was inference, or was already "
                                        "differentiated)"
                                      : "");
    if (!a->dy)
        return err_fail(RNNC_ERR_INVALID_ARG, "cudnn backward needs dy");
    return RNNC_OK;
}

/* Gradient inputs dy, dhy, dcy and outputs dx, dhx, dcx (in io's x..cy
 * fields: x=dx, y=dy, hx=dhx, cx=dcx, hy=dhy, cy=dcy). */
static rnnc_status stage_backward(fb_rnn *r, const rnnc_backward_args *a, fb_io *g)
{
    bool dev = r->last_dev;
    CUstream s = r->stream;
    int h = r->state_h, c = r->state_c;
    rnnc_status st = stage_in(&r->dy, a->dy, y_bytes(r), dev, s, &g->y);
    if (st == RNNC_OK)
        st = stage_in(&r->dhy, state_arg(a->dfinal, h), fb_rnn_state_bytes(r, h), dev, s, &g->hy);
    if (st == RNNC_OK)
        st = stage_in(&r->dcy, state_arg(a->dfinal, c), fb_rnn_state_bytes(r, c), dev, s, &g->cy);
    /* cuDNN always writes dx: a caller who does not want it gets scratch. */
    if (st == RNNC_OK && a->dx && dev) {
        g->x = as_dev(a->dx);
    } else if (st == RNNC_OK) {
        st = fb_buf_reserve(&r->dx, x_bytes(r));
        g->x = r->dx.p;
    }
    if (st == RNNC_OK)
        st = stage_out(&r->dhx, state_arg((const void *const *)a->dinit, h),
                       fb_rnn_state_bytes(r, h), dev, &g->hx);
    if (st == RNNC_OK)
        st = stage_out(&r->dcx, state_arg((const void *const *)a->dinit, c),
                       fb_rnn_state_bytes(r, c), dev, &g->cx);
    /* Steps past a sequence's end have no gradient; make them read 0. */
    if (st == RNNC_OK && r->ragged)
        st = rt_dev_zero(g->x, x_bytes(r), s);
    return st;
}

static rnnc_status launch_backward(fb_rnn *r, const fb_io *g)
{
    const fb_io *f = &r->last;
    const int32_t *seq = (const int32_t *)ptr(r->seq.p);
    cudnnStatus_t cs = cudnnRNNBackwardData_v8(
        r->handle, r->rnn, seq, r->ydesc, ptr(f->y), ptr(g->y), r->xdesc, ptr(g->x), r->hdesc,
        ptr(f->hx), ptr(g->hy), ptr(g->hx), r->cdesc, ptr(f->cx), ptr(g->cy), ptr(g->cx),
        r->wsize, ptr(r->wp), r->ws_size, ptr(r->ws.p), r->rs_size, ptr(r->rs.p));
    rnnc_status st = fb_cudnn_check(cs, "cudnnRNNBackwardData_v8");
    /* Weight gradients accumulate (CUDNN_WGRAD_MODE_ADD) into zeroed dw. */
    if (st == RNNC_OK && !r->ext_dw) {
        st = fb_buf_reserve(&r->dw, r->wsize);
        r->dwp = r->dw.p;
    }
    if (st == RNNC_OK)
        st = rt_dev_zero(r->dwp, r->wsize, r->stream);
    if (st != RNNC_OK)
        return st;
    cs = cudnnRNNBackwardWeights_v8(r->handle, r->rnn, CUDNN_WGRAD_MODE_ADD, seq, r->xdesc,
                                    ptr(f->x), r->hdesc, ptr(f->hx), r->ydesc, ptr(f->y),
                                    r->wsize, ptr(r->dwp), r->ws_size, ptr(r->ws.p),
                                    r->rs_size, ptr(r->rs.p));
    return fb_cudnn_check(cs, "cudnnRNNBackwardWeights_v8");
}

static rnnc_status finish_backward(fb_rnn *r, const rnnc_backward_args *a, const fb_io *g)
{
    bool dev = r->last_dev;
    CUstream s = r->stream;
    int h = r->state_h, c = r->state_c;
    rnnc_status st = fetch_out(a->dx, g->x, x_bytes(r), dev, s);
    if (st == RNNC_OK)
        st = fetch_out(a->dinit ? a->dinit[h] : NULL, g->hx, fb_rnn_state_bytes(r, h), dev, s);
    if (st == RNNC_OK && c >= 0)
        st = fetch_out(a->dinit ? a->dinit[c] : NULL, g->cx, fb_rnn_state_bytes(r, c), dev, s);
    if (st == RNNC_OK && !dev)
        st = rt_dev_sync(s);
    return st;
}

rnnc_status fb_rnn_backward(void *state, const rnnc_backward_args *a)
{
    fb_rnn *r = state;
    rnnc_status st = check_backward(r, a);
    if (st == RNNC_OK)
        st = rt_cuda_context(r->spec.device);
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnSetStream(r->handle, (cudaStream_t)r->stream),
                            "cudnnSetStream");
    fb_io g = {0};
    if (st == RNNC_OK)
        st = stage_backward(r, a, &g);
    if (st != RNNC_OK)
        return st;
    /* BackwardData rewrites the reserve space: one backward per forward. */
    r->last_training = false;
    r->have_grad = false;
    r->dw_host_valid = false;
    st = launch_backward(r, &g);
    if (st == RNNC_OK)
        st = finish_backward(r, a, &g);
    r->have_grad = st == RNNC_OK;
    return st;
}

/* ---------------------------------------------------------------- training timing */

typedef struct train_ctx {
    fb_rnn *r;
    fb_io g;
} train_ctx;

static rnnc_status train_once(void *ctx, CUstream s)
{
    (void)s; /* the handle is already on s */
    train_ctx *c = ctx;
    rnnc_status st = fb_rnn_launch_forward(c->r, &c->r->last);
    return st == RNNC_OK ? launch_backward(c->r, &c->g) : st;
}

rnnc_status fb_rnn_time_training(void *state, const rnnc_forward_args *f,
                                 const rnnc_backward_args *b, int warmup, int iters,
                                 double *median_ms)
{
    fb_rnn *r = state;
    /* One full step checks, sizes and stages everything; the timed calls
     * are then the forward and backward kernels alone, on device buffers. */
    rnnc_status st = fb_rnn_forward(r, f);
    if (st == RNNC_OK)
        st = fb_rnn_backward(r, b);
    train_ctx c = {r, {0}};
    if (st == RNNC_OK)
        st = stage_backward(r, b, &c.g);
    if (st != RNNC_OK)
        return st;
    r->have_grad = false;
    st = rt_time_ms(train_once, &c, r->stream, warmup, iters, median_ms);
    if (st == RNNC_OK)
        st = finish_forward(r, f, &r->last, r->stream);
    if (st == RNNC_OK)
        st = finish_backward(r, b, &c.g);
    r->dw_host_valid = false;
    r->have_grad = st == RNNC_OK;
    return st;
}
