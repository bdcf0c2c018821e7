/*
 * conv_run.c: forward, backward data and backward filter through cuDNN's
 * legacy convolution calls: descriptors from a checked geometry, the
 * algorithm chosen by heuristic or by timing on the real buffers (cached by
 * key), candidates that fail or cannot get their workspace skipped.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cudnn_fallback/conv.h"

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
        return err_fail(RNNC_ERR_INVALID_ARG, "conv: the descriptor is for device %d, the "
                        "handle for device %d", g->d.device, h->device);
    rnnc_status st = rt_cuda_context(h->device);
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnSetStream(h->dnn, (cudaStream_t)stream), "cudnnSetStream");
    h->stream = (CUstream)stream;
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
                           float alpha, float beta, size_t *wsn_out)
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
    *wsn_out = wsn;
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
                              float beta, const fb_conv_key *key, fb_conv_choice *ch, size_t *wsn)
{
    perf c[MAX_ALGOS];
    int n = 0;
    rnnc_status st = search(h, g, d, pass, p, c, &n);
    if (st != RNNC_OK)
        return st;
    char tried[256] = "";
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        *ch = (fb_conv_choice){c[i].algo, (int)c[i].math, c[i].memory, FB_CONV_LEGACY};
        st = try_one(h, g, d, pass, ch, p, alpha, beta, wsn);
        if (st == RNNC_OK)
            return fb_conv_cache_put(key, ch);
        if (at < sizeof tried)
            at += (size_t)snprintf(tried + at, sizeof tried - at, "%s%s: %s", at ? "; " : "",
                                   algo_name(pass, c[i].algo), rnnc_status_string(st));
    }
    char desc[400];
    fb_conv_describe(g, desc, sizeof desc);
    return err_fail(n ? st : RNNC_ERR_CUDNN, "no valid convolution algorithm for %s %s%s "
                    "(%d candidate%s%s%s)", k_pass[pass], desc,
                    g->d.deterministic ? " deterministic" : "", n, n == 1 ? "" : "s",
                    n ? ": " : "", tried);
}

/* ---------------------------------------------------------------- the handle's entries */

static void entry_free(fb_conv_entry *e)
{
    if (e->bias)
        cudnnDestroyTensorDescriptor(e->bias);
    fb_conv_descs_free(&e->d);
    memset(e, 0, sizeof *e);
}

void fb_conv_entries_clear(rnnc_conv_handle *h)
{
    for (int i = 0; i < h->n_entries; i++)
        entry_free(&h->entries[i]);
    h->n_entries = 0;
}

static void entry_evict(rnnc_conv_handle *h)
{
    int old = 0;
    for (int i = 1; i < h->n_entries; i++)
        if (h->entries[i].last_use < h->entries[old].last_use)
            old = i;
    entry_free(&h->entries[old]);
    h->entries[old] = h->entries[--h->n_entries];
}

void fb_conv_entries_trim(rnnc_conv_handle *h, int capacity)
{
    while (h->n_entries > capacity)
        entry_evict(h);
}

static fb_conv_entry *entry_find(rnnc_conv_handle *h, const fb_conv_key *k, uint64_t hash)
{
    for (int i = 0; i < h->n_entries; i++)
        if (h->entries[i].hash == hash && fb_conv_key_equal(&h->entries[i].key, k)) {
            h->entries[i].last_use = ++h->clock;
            return &h->entries[i];
        }
    return NULL;
}

rnnc_status fb_conv_entry_get(rnnc_conv_handle *h, const fb_conv_geom *g, const fb_conv_key *k,
                              fb_conv_entry **out)
{
    uint64_t hash = fb_conv_key_hash(k);
    fb_conv_entry *e = entry_find(h, k, hash);
    if (!e) {
        if (h->n_entries == h->plan_cap)
            entry_evict(h);
        e = &h->entries[h->n_entries];
        memset(e, 0, sizeof *e);
        rnnc_status st = fb_conv_descs_make(g, &e->d);
        if (st != RNNC_OK)
            return st;
        e->key = *k;
        e->hash = hash;
        e->last_use = ++h->clock;
        h->n_entries++;
    }
    *out = e;
    return RNNC_OK;
}

/* ---------------------------------------------------------------- running */

/* An entry's chosen algorithm: its descriptors already carry the math. */
static rnnc_status run_chosen(rnnc_conv_handle *h, const fb_conv_entry *e, rnnc_conv_pass pass,
                              const void *const p[3], float alpha, float beta)
{
    rnnc_status st = fb_buf_reserve(&h->ws, e->wsn);
    if (st == RNNC_OK)
        st = fb_cudnn_check(launch(h, &e->d, pass, e->ch.algo, p, e->wsn, alpha, beta),
                            "cudnnConvolution*");
    if (st == RNNC_OK)
        memcpy(h->last, e->last, sizeof h->last);
    return st;
}

static void remember(rnnc_conv_handle *h, fb_conv_entry *e, const fb_conv_choice *ch, size_t wsn)
{
    e->chosen = true;
    e->ch = *ch;
    e->wsn = wsn;
    memcpy(e->last, h->last, sizeof e->last);
}

/* The legacy pass: the handle's entry, else the process-wide choice, else
 * a search.  A choice that now fails (its workspace no longer fits) falls
 * through to a fresh search. */
static rnnc_status legacy_run(rnnc_conv_handle *h, const fb_conv_geom *g, rnnc_conv_pass pass,
                              const void *const p[3], float alpha, float beta,
                              const fb_conv_key *key)
{
    fb_conv_entry *e = NULL;
    rnnc_status st = fb_conv_entry_get(h, g, key, &e);
    if (st != RNNC_OK)
        return st;
    if (e->chosen && run_chosen(h, e, pass, p, alpha, beta) == RNNC_OK)
        return RNNC_OK;
    e->chosen = false;
    fb_conv_choice ch;
    size_t wsn = 0;
    if (fb_conv_cache_get(key, &ch) && ch.api == FB_CONV_LEGACY && ch.algo >= 0 &&
        try_one(h, g, &e->d, pass, &ch, p, alpha, beta, &wsn) == RNNC_OK)
        st = RNNC_OK;
    else
        st = run_search(h, g, &e->d, pass, p, alpha, beta, key, &ch, &wsn);
    if (st == RNNC_OK)
        remember(h, e, &ch, wsn);
    return st;
}

/* Median ms of one legacy launch of e's choice, timed as conv_graph.c times
 * plans (one untimed run, then 5 x 3 runs between events): Find's own times
 * leave out what a call costs on the host.  Negative when it fails. */
static double time_legacy(rnnc_conv_handle *h, const fb_conv_entry *e, const void *const p[3],
                          float alpha)
{
    const rt_cuda_api *cu = rt_cu();
    CUevent ev[2] = {NULL, NULL};
    double t[5], med = -1;
    if (cu->EventCreate(&ev[0], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        return -1;
    if (cu->EventCreate(&ev[1], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        goto destroy_ev0;
    bool ok = run_chosen(h, e, RNNC_CONV_FORWARD, p, alpha, 0.0f) == RNNC_OK;
    for (int r = 0; ok && r < 5; r++) {
        float ms = 0;
        ok = cu->EventRecord(ev[0], h->stream) == CUDA_SUCCESS;
        for (int i = 0; ok && i < 3; i++)
            ok = run_chosen(h, e, RNNC_CONV_FORWARD, p, alpha, 0.0f) == RNNC_OK;
        ok = ok && cu->EventRecord(ev[1], h->stream) == CUDA_SUCCESS &&
             cu->EventSynchronize(ev[1]) == CUDA_SUCCESS &&
             cu->EventElapsedTime(&ms, ev[0], ev[1]) == CUDA_SUCCESS;
        t[r] = (double)ms / 3;
    }
    if (ok)
        med = cm_median(t, 5);
    cu->EventDestroy(ev[1]);
destroy_ev0:
    cu->EventDestroy(ev[0]);
    return med;
}

/* Benchmark mode's forward, its graph plan just timed at graph_ms: the
 * legacy algorithms that Find puts near it (within 1.5x: Find's times are
 * single runs, on a GPU whose clocks may still be rising) are timed the
 * same way, and the first one faster wins the key.  Otherwise the graph's
 * plan runs again (the timing wrote y). */
static rnnc_status legacy_challenge(rnnc_conv_handle *h, const fb_conv_geom *g,
                                    const void *const p[3], float alpha, const fb_conv_key *key,
                                    double graph_ms)
{
    fb_conv_entry *e = NULL;
    perf c[MAX_ALGOS];
    int n = 0;
    if (fb_conv_entry_get(h, g, key, &e) == RNNC_OK &&
        search(h, g, &e->d, RNNC_CONV_FORWARD, p, c, &n) == RNNC_OK) {
        for (int i = 0; i < n && i < 4 && c[i].time < 1.5 * graph_ms; i++) {
            fb_conv_choice ch = {c[i].algo, (int)c[i].math, c[i].memory, FB_CONV_LEGACY};
            size_t wsn = 0;
            if (try_one(h, g, &e->d, RNNC_CONV_FORWARD, &ch, p, alpha, 0.0f, &wsn) != RNNC_OK)
                continue;
            remember(h, e, &ch, wsn);
            double ms = time_legacy(h, e, p, alpha);
            if (ms >= 0 && ms < graph_ms)
                return fb_conv_cache_put(key, &ch);
            e->chosen = false;
        }
    }
    double again = 0;
    return fb_conv_graph_forward(h, g, key, alpha, p, &again);
}

rnnc_status fb_conv_run(rnnc_conv_handle *h, const fb_conv_geom *g, rnnc_conv_pass pass,
                        const void *const p[3], float alpha, float beta)
{
    fb_conv_key key;
    /* The forward runs a graph plan (what PyTorch runs on cuDNN 9) unless the
     * key's entry holds a legacy choice: no engine takes the graph, or in
     * benchmark mode a legacy algorithm was faster.  One key for both. */
    if (pass == RNNC_CONV_FORWARD && beta == 0.0f) {
        fb_conv_forward_key(&key, g, alpha, p);
        fb_conv_entry *e = entry_find(h, &key, fb_conv_key_hash(&key));
        double timed_ms = 0;
        if (!(e && e->chosen) &&
            fb_conv_graph_forward(h, g, &key, alpha, p, &timed_ms) == RNNC_OK)
            return timed_ms > 0 ? legacy_challenge(h, g, p, alpha, &key, timed_ms) : RNNC_OK;
    } else {
        fb_conv_key_make(&key, g, pass, 0, p);
    }
    return legacy_run(h, g, pass, p, alpha, beta, &key);
}

/* ---------------------------------------------------------------- timing every algorithm */

static void sort_perf(rnnc_conv_algo_perf *o, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && o[j].ms < o[j - 1].ms; j--) {
            rnnc_conv_algo_perf t = o[j];
            o[j] = o[j - 1];
            o[j - 1] = t;
        }
}

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
        if (!usable(g, &c[i]))
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
    /* The forward's graph engines too: what the forward call chooses among. */
    if (st == RNNC_OK && pass == RNNC_CONV_FORWARD)
        st = fb_conv_graph_time(h, g, p, out, max, count);
    if (st == RNNC_OK)
        sort_perf(out, *count);
    return st;
}
