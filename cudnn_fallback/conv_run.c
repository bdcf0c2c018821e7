/*
 * conv_run.c: forward, backward data and backward filter through cuDNN's
 * legacy convolution calls: descriptors from a checked geometry, the
 * algorithm chosen by heuristic or by timing on the real buffers (cached by
 * key), candidates that fail or cannot get their workspace skipped.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cudnn_fallback/fallback.h"

#define MAX_ALGOS 16

/* The three passes' perf structs, as one. */
typedef struct perf {
    int algo;
    cudnnStatus_t status;
    float time;
    size_t memory;
    bool deterministic;
    cudnnMathType_t math;
} perf;

static const char *const k_pass[] = {"fwd", "bwd_data", "bwd_filter", "fused"};

static const char *algo_name(rnnc_conv_pass pass, int algo)
{
    static const char *const fwd[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                      "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    static const char *const bwd_data[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD",
                                           "WINOGRAD_NONFUSED"};
    static const char *const bwd_filter[] = {"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD",
                                             "WINOGRAD_NONFUSED", "FFT_TILING"};
    if (pass == RNNC_CONV_FORWARD && algo >= 0 && algo < 8)
        return fwd[algo];
    if (pass == RNNC_CONV_BACKWARD_DATA && algo >= 0 && algo < 6)
        return bwd_data[algo];
    if (pass == RNNC_CONV_BACKWARD_FILTER && algo >= 0 && algo < 7)
        return bwd_filter[algo];
    return "?";
}

static const char *math_name(cudnnMathType_t m)
{
    switch (m) {
    case CUDNN_FMA_MATH: return "fma";
    case CUDNN_DEFAULT_MATH: return "default";
    default: return "tensor_op";
    }
}

/* ---------------------------------------------------------------- descriptors */

int fb_conv_tensor_dims(const fb_conv_geom *g, const int64_t t[5], int dims[5], int strides[5])
{
    /* 1-D runs as 2-D with a height of 1 (cuDNN's legacy calls take 4-D and up). */
    int n = g->rank < 4 ? 4 : g->rank;
    dims[0] = (int)t[0];
    dims[1] = (int)t[1];
    int lift = n - g->rank;
    for (int i = 2; i < n; i++)
        dims[i] = i - lift < 2 ? 1 : (int)t[i - lift];
    int s = 1;
    if (g->d.layout == RNNC_CONV_NCHW) {
        for (int i = n - 1; i >= 0; i--) {
            strides[i] = s;
            s *= dims[i];
        }
        return n;
    }
    strides[1] = 1; /* channels innermost, then the spatial dims, then N */
    s = dims[1];
    for (int i = n - 1; i >= 2; i--) {
        strides[i] = s;
        s *= dims[i];
    }
    strides[0] = s;
    return n;
}

static cudnnDataType_t data_type(rnnc_dtype t)
{
    return t == RNNC_F16 ? CUDNN_DATA_HALF : t == RNNC_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

/* The math type a search starts from: FMA only for fp32 without TF32. */
static cudnnMathType_t base_math(const fb_conv_geom *g)
{
    if (g->d.dtype == RNNC_F32)
        return g->d.math == RNNC_MATH_TF32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    return CUDNN_TENSOR_OP_MATH;
}

static rnnc_status set_descs(const fb_conv_geom *g, fb_conv_descs *d)
{
    int dims[5], strides[5], pad[3], stride[3], dil[3], wd[5];
    int n = fb_conv_tensor_dims(g, g->x, dims, strides);
    rnnc_status st = fb_cudnn_check(cudnnSetTensorNdDescriptor(d->x, d->dtype, n, dims, strides),
                                    "cudnnSetTensorNdDescriptor(x)");
    fb_conv_tensor_dims(g, g->y, dims, strides);
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnSetTensorNdDescriptor(d->y, d->dtype, n, dims, strides),
                            "cudnnSetTensorNdDescriptor(y)");
    int lift = n - g->rank, sd = n - 2;
    wd[0] = (int)g->w[0];
    wd[1] = (int)g->w[1];
    for (int i = 0; i < sd; i++) {
        int k = i - lift; /* index into the descriptor's spatial arrays */
        bool real = k >= 0;
        wd[2 + i] = real ? (int)g->w[2 + k] : 1;
        pad[i] = real ? (int)g->d.padding[k] : 0;
        stride[i] = real ? (int)g->d.stride[k] : 1;
        dil[i] = real ? (int)g->d.dilation[k] : 1;
    }
    cudnnTensorFormat_t fmt = g->d.layout == RNNC_CONV_NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnSetFilterNdDescriptor(d->w, d->dtype, fmt, n, wd),
                            "cudnnSetFilterNdDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnSetConvolutionNdDescriptor(d->conv, sd, pad, stride, dil,
                                                            CUDNN_CROSS_CORRELATION,
                                                            CUDNN_DATA_FLOAT),
                            "cudnnSetConvolutionNdDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnSetConvolutionGroupCount(d->conv, (int)g->d.groups),
                            "cudnnSetConvolutionGroupCount");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnSetConvolutionMathType(d->conv, base_math(g)),
                            "cudnnSetConvolutionMathType");
    return st;
}

rnnc_status fb_conv_descs_make(const fb_conv_geom *g, fb_conv_descs *d)
{
    memset(d, 0, sizeof *d);
    d->dtype = data_type(g->d.dtype);
    rnnc_status st = fb_cudnn_check(cudnnCreateTensorDescriptor(&d->x), "cudnnCreateTensorDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnCreateTensorDescriptor(&d->y), "cudnnCreateTensorDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnCreateFilterDescriptor(&d->w), "cudnnCreateFilterDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnCreateConvolutionDescriptor(&d->conv),
                            "cudnnCreateConvolutionDescriptor");
    if (st == RNNC_OK)
        st = set_descs(g, d);
    if (st != RNNC_OK)
        fb_conv_descs_free(d);
    return st;
}

void fb_conv_descs_free(fb_conv_descs *d)
{
    if (d->conv)
        cudnnDestroyConvolutionDescriptor(d->conv);
    if (d->w)
        cudnnDestroyFilterDescriptor(d->w);
    if (d->y)
        cudnnDestroyTensorDescriptor(d->y);
    if (d->x)
        cudnnDestroyTensorDescriptor(d->x);
    memset(d, 0, sizeof *d);
}

rnnc_status fb_conv_enter(rnnc_conv_handle *h, const fb_conv_geom *g, void *stream)
{
    if (g->d.device != h->device)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "conv: the descriptor is for device %d, the "
                         "handle for device %d", g->d.device, h->device);
    rnnc_status st = rt_cuda_context(h->device);
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnSetStream(h->dnn, (cudaStream_t)stream), "cudnnSetStream");
    return st;
}

/* ---------------------------------------------------------------- candidates */

#define TO_PERF(src, n, out)                                                                   \
    for (int i_ = 0; i_ < (n); i_++)                                                           \
        (out)[i_] = (perf){(int)(src)[i_].algo, (src)[i_].status, (src)[i_].time,               \
                           (src)[i_].memory, (src)[i_].determinism == CUDNN_DETERMINISTIC,      \
                           (src)[i_].mathType};

/* cuDNN's heuristic order (no device work). */
static rnnc_status heuristic(rnnc_conv_handle *h, const fb_conv_descs *d, rnnc_conv_pass pass,
                             perf *out, int *n)
{
    cudnnStatus_t cs;
    if (pass == RNNC_CONV_FORWARD) {
        cudnnConvolutionFwdAlgoPerf_t r[MAX_ALGOS];
        cs = cudnnGetConvolutionForwardAlgorithm_v7(h->dnn, d->x, d->w, d->conv, d->y,
                                                    MAX_ALGOS, n, r);
        TO_PERF(r, *n, out)
    } else if (pass == RNNC_CONV_BACKWARD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t r[MAX_ALGOS];
        cs = cudnnGetConvolutionBackwardDataAlgorithm_v7(h->dnn, d->w, d->y, d->conv, d->x,
                                                         MAX_ALGOS, n, r);
        TO_PERF(r, *n, out)
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t r[MAX_ALGOS];
        cs = cudnnGetConvolutionBackwardFilterAlgorithm_v7(h->dnn, d->x, d->y, d->conv, d->w,
                                                           MAX_ALGOS, n, r);
        TO_PERF(r, *n, out)
    }
    return fb_cudnn_check(cs, "cudnnGetConvolution*Algorithm_v7");
}

/* Times every algorithm on the real buffers with `ws` bytes of workspace. */
static cudnnStatus_t find_ex(rnnc_conv_handle *h, const fb_conv_descs *d, rnnc_conv_pass pass,
                             const void *const p[3], CUdeviceptr ws, size_t wsn, perf *out,
                             int *n)
{
    void *wsp = (void *)(uintptr_t)ws;
    cudnnStatus_t cs;
    if (pass == RNNC_CONV_FORWARD) {
        cudnnConvolutionFwdAlgoPerf_t r[MAX_ALGOS];
        cs = cudnnFindConvolutionForwardAlgorithmEx(h->dnn, d->x, p[0], d->w, p[1], d->conv, d->y,
                                                    (void *)p[2], MAX_ALGOS, n, r, wsp, wsn);
        TO_PERF(r, *n, out)
    } else if (pass == RNNC_CONV_BACKWARD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t r[MAX_ALGOS];
        cs = cudnnFindConvolutionBackwardDataAlgorithmEx(h->dnn, d->w, p[1], d->y, p[0], d->conv,
                                                         d->x, (void *)p[2], MAX_ALGOS, n, r, wsp,
                                                         wsn);
        TO_PERF(r, *n, out)
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t r[MAX_ALGOS];
        cs = cudnnFindConvolutionBackwardFilterAlgorithmEx(h->dnn, d->x, p[0], d->y, p[1],
                                                           d->conv, d->w, (void *)p[2], MAX_ALGOS,
                                                           n, r, wsp, wsn);
        TO_PERF(r, *n, out)
    }
    return cs;
}

/* Whether a candidate may run under the descriptor's math and determinism. */
static bool usable(const fb_conv_geom *g, const perf *c)
{
    if (c->status != CUDNN_STATUS_SUCCESS)
        return false;
    if (g->d.deterministic && !c->deterministic)
        return false;
    bool ffma = g->d.dtype == RNNC_F32 && g->d.math == RNNC_MATH_FFMA;
    return !(ffma && c->math != CUDNN_FMA_MATH && c->math != CUDNN_DEFAULT_MATH);
}

/* Keeps the usable candidates, in order. */
static int filter(const fb_conv_geom *g, perf *c, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (usable(g, &c[i]))
            c[k++] = c[i];
    return k;
}

/* The largest workspace any heuristic candidate asks for, within free
 * memory (PyTorch's budget); workspaces over 1 TiB count as none. */
static size_t find_budget(const perf *c, int n)
{
    size_t want = 0, free_b = 0, total = 0;
    for (int i = 0; i < n; i++)
        if (c[i].memory > want && c[i].memory < ((size_t)1 << 40))
            want = c[i].memory;
    if (rt_cu()->MemGetInfo(&free_b, &total) == CUDA_SUCCESS && want > free_b / 10 * 9)
        want = free_b / 10 * 9;
    return want;
}

/* Benchmark mode: Find with the budget, halved while it cannot be allocated. */
static rnnc_status benchmark(rnnc_conv_handle *h, const fb_conv_geom *g, const fb_conv_descs *d,
                             rnnc_conv_pass pass, const void *const p[3], perf *out, int *n)
{
    perf heur[MAX_ALGOS];
    int nh = 0;
    rnnc_status st = heuristic(h, d, pass, heur, &nh);
    if (st != RNNC_OK)
        return st;
    size_t budget = find_budget(heur, filter(g, heur, nh));
    CUdeviceptr ws = 0;
    while (budget > 0 && rt_dev_alloc(&ws, budget) != RNNC_OK) {
        ws = 0;
        budget /= 2;
    }
    cudnnStatus_t cs = find_ex(h, d, pass, p, ws, ws ? budget : 0, out, n);
    rt_dev_free(ws);
    return fb_cudnn_check(cs, "cudnnFindConvolution*AlgorithmEx");
}

/* ---------------------------------------------------------------- running */

static size_t ws_size(rnnc_conv_handle *h, const fb_conv_descs *d, rnnc_conv_pass pass, int algo,
                      cudnnStatus_t *cs)
{
    size_t n = 0;
    if (pass == RNNC_CONV_FORWARD)
        *cs = cudnnGetConvolutionForwardWorkspaceSize(h->dnn, d->x, d->w, d->conv, d->y,
                                                      (cudnnConvolutionFwdAlgo_t)algo, &n);
    else if (pass == RNNC_CONV_BACKWARD_DATA)
        *cs = cudnnGetConvolutionBackwardDataWorkspaceSize(h->dnn, d->w, d->y, d->conv, d->x,
                                                           (cudnnConvolutionBwdDataAlgo_t)algo, &n);
    else
        *cs = cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h->dnn, d->x, d->y, d->conv, d->w, (cudnnConvolutionBwdFilterAlgo_t)algo, &n);
    return n;
}

static cudnnStatus_t launch(rnnc_conv_handle *h, const fb_conv_descs *d, rnnc_conv_pass pass,
                            int algo, const void *const p[3], size_t wsn, float alpha, float beta)
{
    
    void *ws = (void *)(uintptr_t)h->ws.p;
    if (pass == RNNC_CONV_FORWARD)
        return cudnnConvolutionForward(h->dnn, &alpha, d->x, p[0], d->w, p[1], d->conv,
                                       (cudnnConvolutionFwdAlgo_t)algo, ws, wsn, &beta, d->y,
                                       (void *)p[2]);
    if (pass == RNNC_CONV_BACKWARD_DATA)
        return cudnnConvolutionBackwardData(h->dnn, &alpha, d->w, p[1], d->y, p[0], d->conv,
                                            (cudnnConvolutionBwdDataAlgo_t)algo, ws, wsn, &beta,
                                            d->x, (void *)p[2]);
    return cudnnConvolutionBackwardFilter(h->dnn, &alpha, d->x, p[0], d->y, p[1], d->conv,
                                          (cudnnConvolutionBwdFilterAlgo_t)algo, ws, wsn, &beta,
                                          d->w, (void *)p[2]);
}

/* Runs one candidate: its math type, its workspace, the call. */
static rnnc_status try_one(rnnc_conv_handle *h, const fb_conv_geom *g, const fb_conv_descs *d,
                           rnnc_conv_pass pass, const fb_conv_choice *c, const void *const p[3],
                           float alpha, float beta)
{
    cudnnMathType_t m = base_math(g) == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : (cudnnMathType_t)c->math;
    rnnc_status st = fb_cudnn_check(cudnnSetConvolutionMathType(d->conv, m),
                                    "cudnnSetConvolutionMathType");
    cudnnStatus_t cs = CUDNN_STATUS_SUCCESS;
    size_t wsn = st == RNNC_OK ? ws_size(h, d, pass, c->algo, &cs) : 0;
    if (st == RNNC_OK)
        st = fb_cudnn_check(cs, "cudnnGetConvolution*WorkspaceSize");
    if (st == RNNC_OK)
        st = fb_buf_reserve(&h->ws, wsn);
    if (st == RNNC_OK)
        st = fb_cudnn_check(launch(h, d, pass, c->algo, p, wsn, alpha, beta), "cudnnConvolution*");
    if (st == RNNC_OK)
        snprintf(h->last, sizeof h->last, "%s %s (%s, ws %zu B)", k_pass[pass],
                 algo_name(pass, c->algo), math_name(m), wsn);
    return st;
}

static rnnc_status search(rnnc_conv_handle *h, const fb_conv_geom *g, const fb_conv_descs *d,
                          rnnc_conv_pass pass, const void *const p[3], perf *c, int *n)
{
    rnnc_status st = g->d.algo_mode == RNNC_CONV_BENCHMARK ? benchmark(h, g, d, pass, p, c, n)
                                                           : heuristic(h, d, pass, c, n);
    if (st == RNNC_OK)
        *n = filter(g, c, *n);
    return st;
}

/* Tries the candidates in order; the first that runs is cached. */
static rnnc_status run_search(rnnc_conv_handle *h, const fb_conv_geom *g, const fb_conv_descs *d,
                              rnnc_conv_pass pass, const void *const p[3], float alpha,
                              float beta, const fb_conv_key *key)
{
    perf c[MAX_ALGOS];
    int n = 0;
    rnnc_status st = search(h, g, d, pass, p, c, &n);
    if (st != RNNC_OK)
        return st;
    char tried[256] = "";
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        fb_conv_choice ch = {c[i].algo, (int)c[i].math, c[i].memory};
        st = try_one(h, g, d, pass, &ch, p, alpha, beta);
        if (st == RNNC_OK)
            return fb_conv_cache_put(key, &ch);
        if (at < sizeof tried)
            at += (size_t)snprintf(tried + at, sizeof tried - at, "%s%s: %s", at ? "; " : "",
                                   algo_name(pass, c[i].algo), rnnc_status_string(st));
    }
    char desc[400];
    fb_conv_describe(g, desc, sizeof desc);
    return rnnc_fail(n ? st : RNNC_ERR_CUDNN, "no valid convolution algorithm for %s %s%s "
                     "(%d candidate%s%s%s)", k_pass[pass], desc,
                     g->d.deterministic ? " deterministic" : "", n, n == 1 ? "" : "s",
                     n ? ": " : "", tried);
}

rnnc_status fb_conv_run(rnnc_conv_handle *h, const fb_conv_geom *g, rnnc_conv_pass pass,
                        const void *const p[3], float alpha, float beta)
{
    fb_conv_descs d;
    rnnc_status st = fb_conv_descs_make(g, &d);
    if (st != RNNC_OK)
        return st;
    fb_conv_key key;
    fb_conv_key_make(&key, g, pass, 0, p);
    fb_conv_choice ch;
    bool cached = fb_conv_cache_get(&key, &ch);
    /* A cached choice that now fails (its workspace no longer fits) falls
     * through to a fresh search. */
    if (!cached || (st = try_one(h, g, &d, pass, &ch, p, alpha, beta)) != RNNC_OK)
        st = run_search(h, g, &d, pass, p, alpha, beta, &key);
    fb_conv_descs_free(&d);
    return st;
}

/* ---------------------------------------------------------------- timing every algorithm */

rnnc_status fb_conv_time(rnnc_conv_handle *h, const fb_conv_geom *g, rnnc_conv_pass pass,
                         const void *const p[3], rnnc_conv_algo_perf *out, int max, int *count)
{
    fb_conv_descs d;
    rnnc_status st = fb_conv_descs_make(g, &d);
    if (st != RNNC_OK)
        return st;
    perf c[MAX_ALGOS];
    int n = 0;
    st = benchmark(h, g, &d, pass, p, c, &n);
    *count = 0;
    for (int i = 0; st == RNNC_OK && i < n && *count < max; i++) {
        if (c[i].status != CUDNN_STATUS_SUCCESS)
            continue;
        rnnc_conv_algo_perf *o = &out[(*count)++];
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%s", algo_name(pass, c[i].algo));
        o->ms = c[i].time;
        o->workspace = c[i].memory;
        o->deterministic = c[i].deterministic;
        o->tensor_cores = c[i].math != CUDNN_FMA_MATH &&
                          !(g->d.dtype == RNNC_F32 && g->d.math == RNNC_MATH_FFMA);
    }
    fb_conv_descs_free(&d);
    return st;
}
