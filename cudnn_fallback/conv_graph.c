/*
 * conv_graph.c: a convolution as a cuDNN graph (backend API): conv
 * [-> add alpha2*z] [-> add bias] [-> relu] as an operation graph, engine
 * configs from the heuristics filtered by their notes, a finalised plan
 * (the heuristic's first, or in benchmark mode the fastest of them timed on
 * the caller's buffers), and running a plan with its variant pack kept
 * between calls, so that a call in steady state creates nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_fallback/conv.h"

enum { UID_X = 1, UID_W, UID_Y, UID_Z, UID_B, UID_VIRTUAL = 100 };

/* Builds one graph; the first failing call is remembered, the rest skipped. */
typedef struct graph {
    const fb_conv_geom *g;
    fb_conv_plan *p; /* its descriptors land in p->descs */
    cudnnStatus_t cs;
    const char *what;
} graph;

static cudnnBackendDescriptor_t make(graph *b, cudnnBackendDescriptorType_t type)
{
    cudnnBackendDescriptor_t d = NULL;
    if (b->cs != CUDNN_STATUS_SUCCESS)
        return NULL;
    if (b->p->n_descs == FB_CONV_GRAPH_DESCS) {
        b->cs = CUDNN_STATUS_INTERNAL_ERROR;
        b->what = "too many graph descriptors";
        return NULL;
    }
    b->cs = cudnnBackendCreateDescriptor(type, &d);
    if (b->cs != CUDNN_STATUS_SUCCESS) {
        b->what = "cudnnBackendCreateDescriptor";
        return NULL;
    }
    b->p->descs[b->p->n_descs++] = d;
    return d;
}

static void set(graph *b, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a,
                cudnnBackendAttributeType_t t, int64_t n, const void *v, const char *what)
{
    if (b->cs != CUDNN_STATUS_SUCCESS)
        return;
    b->cs = cudnnBackendSetAttribute(d, a, t, n, v);
    if (b->cs != CUDNN_STATUS_SUCCESS)
        b->what = what;
}

static void finalize(graph *b, cudnnBackendDescriptor_t d, const char *what)
{
    if (b->cs != CUDNN_STATUS_SUCCESS)
        return;
    b->cs = cudnnBackendFinalize(d);
    if (b->cs != CUDNN_STATUS_SUCCESS)
        b->what = what;
}

/* A tensor of shape t (logical [N, C, S...]) in the geometry's layout. */
static cudnnBackendDescriptor_t tensor(graph *b, int64_t uid, const int64_t t[5],
                                       cudnnDataType_t dt, bool virt, int64_t align)
{
    int dims[5], strides[5];
    int n = fb_conv_tensor_dims(b->g, t, dims, strides);
    int64_t d64[5], s64[5];
    for (int i = 0; i < n; i++) {
        d64[i] = dims[i];
        s64[i] = strides[i];
    }
    cudnnBackendDescriptor_t d = make(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    set(b, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor data type");
    set(b, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, n, d64, "tensor dims");
    set(b, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, n, s64, "tensor strides");
    set(b, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor uid");
    set(b, d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
    bool v = virt;
    set(b, d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v, "tensor virtual");
    finalize(b, d, "tensor finalize");
    return d;
}

/* The weight tensor: [K, C/g, R...], C innermost for NHWC. */
static cudnnBackendDescriptor_t filter_tensor(graph *b, cudnnDataType_t dt, int64_t align)
{
    return tensor(b, UID_W, b->g->w, dt, false, align);
}

static cudnnBackendDescriptor_t conv_op(graph *b, cudnnBackendDescriptor_t x,
                                        cudnnBackendDescriptor_t w, cudnnBackendDescriptor_t y,
                                        float alpha)
{
    const fb_conv_geom *g = b->g;
    int dims[5], strides[5];
    int n = fb_conv_tensor_dims(g, g->x, dims, strides), lift = n - g->rank;
    int64_t sd = n - 2, pad[3], stride[3], dil[3];
    for (int i = 0; i < sd; i++) {
        int k = i - lift;
        pad[i] = k >= 0 ? g->d.padding[k] : 0;
        stride[i] = k >= 0 ? g->d.stride[k] : 1;
        dil[i] = k >= 0 ? g->d.dilation[k] : 1;
    }
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    cudnnBackendDescriptor_t c = make(b, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    set(b, c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "conv comp type");
    set(b, c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, "conv mode");
    set(b, c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &sd, "conv dims");
    set(b, c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, sd, dil, "conv dilations");
    set(b, c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, sd, stride, "conv strides");
    set(b, c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, sd, pad, "conv pre pad");
    set(b, c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, sd, pad, "conv post pad");
    finalize(b, c, "conv descriptor finalize");
    float beta = 0.0f;
    cudnnBackendDescriptor_t op = make(b, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    set(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "conv x");
    set(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w, "conv w");
    set(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "conv y");
    set(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
        &c, "conv desc");
    set(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha, "conv alpha");
    set(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta, "conv beta");
    finalize(b, op, "conv operation finalize");
    return op;
}

/* y = mode(x [, alpha2 * in_b]); in_b NULL for ReLU. */
static cudnnBackendDescriptor_t pointwise(graph *b, cudnnPointwiseMode_t mode,
                                          cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t in_b,
                                          cudnnBackendDescriptor_t y, float alpha2)
{
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t pw = make(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set(b, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
    set(b, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "pointwise prec");
    finalize(b, pw, "pointwise finalize");
    float one = 1.0f;
    cudnnBackendDescriptor_t op = make(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw,
        "pointwise desc");
    set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "pw x");
    if (in_b) {
        set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &in_b,
            "pw b");
        set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &alpha2, "pw alpha2");
    }
    set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "pw y");
    set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one, "pw alpha1");
    finalize(b, op, "pointwise operation finalize");
    return op;
}

static int64_t align_of(const void *p)
{
    return fb_conv_alignment(p);
}

/* conv -> [+ alpha2 z] -> [+ bias] -> [relu]; the last op writes y. */
static cudnnBackendDescriptor_t build_graph(graph *b, rnnc_conv_handle *h,
                                            const rnnc_conv_epilogue *e, const void *const ptr[5])
{
    const fb_conv_geom *g = b->g;
    cudnnDataType_t dt = g->d.dtype == RNNC_F16    ? CUDNN_DATA_HALF
                         : g->d.dtype == RNNC_BF16 ? CUDNN_DATA_BFLOAT16
                                                   : CUDNN_DATA_FLOAT;
    int steps = (e->z != NULL) + (e->bias != NULL) + e->relu, uid = UID_VIRTUAL;
    cudnnBackendDescriptor_t x = tensor(b, UID_X, g->x, dt, false, align_of(ptr[0]));
    cudnnBackendDescriptor_t w = filter_tensor(b, dt, align_of(ptr[1]));
    cudnnBackendDescriptor_t y = tensor(b, UID_Y, g->y, dt, false, align_of(ptr[2]));
    cudnnBackendDescriptor_t cur = steps ? tensor(b, uid++, g->y, CUDNN_DATA_FLOAT, true, 16) : y;
    cudnnBackendDescriptor_t ops[4];
    int n_ops = 0;
    ops[n_ops++] = conv_op(b, x, w, cur, e->alpha1);
    if (e->z) {
        cudnnBackendDescriptor_t z = tensor(b, UID_Z, g->y, dt, false, align_of(ptr[3]));
        cudnnBackendDescriptor_t out = --steps ? tensor(b, uid++, g->y, CUDNN_DATA_FLOAT, true, 16) : y;
        ops[n_ops++] = pointwise(b, CUDNN_POINTWISE_ADD, cur, z, out, e->alpha2);
        cur = out;
    }
    if (e->bias) {
        int64_t bt[5] = {1, g->y[1], 1, 1, 1};
        cudnnBackendDescriptor_t bias = tensor(b, UID_B, bt, dt, false, align_of(ptr[4]));
        cudnnBackendDescriptor_t out = --steps ? tensor(b, uid++, g->y, CUDNN_DATA_FLOAT, true, 16) : y;
        ops[n_ops++] = pointwise(b, CUDNN_POINTWISE_ADD, cur, bias, out, 1.0f);
        cur = out;
    }
    if (e->relu)
        ops[n_ops++] = pointwise(b, CUDNN_POINTWISE_RELU_FWD, cur, NULL, y, 0.0f);
    cudnnBackendDescriptor_t og = make(b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(b, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h->dnn, "graph handle");
    set(b, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n_ops, ops, "graph ops");
    finalize(b, og, "operation graph finalize (no engine takes this graph)");
    return og;
}

/* ---------------------------------------------------------------- engines */

#define MAX_CFGS 32  /* configs asked of one heuristic mode */
#define MAX_CANDS 64 /* of all modes together */
#define MAX_TIMED 24 /* plans finalised and timed in benchmark mode */

/* One engine config the heuristics offered, with what its notes say. */
typedef struct cand {
    cudnnBackendDescriptor_t cfg, plan;
    int64_t engine, ws;
    bool tensor_cores, deterministic, down_convert, rtc;
    double ms;
} cand;

/* The engine behind c->cfg: its global index and notes; false where cuDNN
 * cannot say. */
static bool engine_notes(cand *c)
{
    cudnnBackendDescriptor_t eng = NULL;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS)
        return false;
    int64_t n = 0, nn = 0, nb = 0;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    cudnnBackendBehaviorNote_t beh[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    bool ok = cudnnBackendGetAttribute(c->cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng) ==
                  CUDNN_STATUS_SUCCESS &&
              cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                       CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                       &nn, notes) == CUDNN_STATUS_SUCCESS &&
              cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                       &n, &c->engine) == CUDNN_STATUS_SUCCESS;
    if (ok && cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                       CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT,
                                       &nb, beh) != CUDNN_STATUS_SUCCESS)
        nb = 0;
    c->deterministic = true;
    for (int64_t i = 0; ok && i < nn; i++) {
        c->tensor_cores |= notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
        c->deterministic &= notes[i] != CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
        c->down_convert |= notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
    }
    for (int64_t i = 0; i < nb; i++)
        c->rtc |= beh[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
    cudnnBackendDestroyDescriptor(eng);
    return ok;
}

/* Notes that rule an engine out: tensor cores for fp32 without TF32,
 * non-determinism when asked, and down-converted inputs always. */
static bool allowed(const fb_conv_geom *g, const cand *c)
{
    bool ffma = g->d.dtype == RNNC_F32 && g->d.math == RNNC_MATH_FFMA;
    return !(c->tensor_cores && ffma) && !(g->d.deterministic && !c->deterministic) &&
           !c->down_convert;
}

/* Appends the configs of one heuristic mode to c, in its order; engines an
 * earlier mode gave are skipped (a mode's own configs of one engine differ
 * in their knobs, and are kept). */
static void heur_cands(cudnnBackendDescriptor_t og, cudnnBackendHeurMode_t mode, cand *c, int *n)
{
    cudnnBackendDescriptor_t heur = NULL, cfgs[MAX_CFGS] = {0};
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur) !=
        CUDNN_STATUS_SUCCESS)
        return;
    int64_t got = 0;
    int made = 0;
    if (cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og) == CUDNN_STATUS_SUCCESS &&
        cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                                 &mode) == CUDNN_STATUS_SUCCESS &&
        cudnnBackendFinalize(heur) == CUDNN_STATUS_SUCCESS) {
        while (made < MAX_CFGS && cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                                               &cfgs[made]) == CUDNN_STATUS_SUCCESS)
            made++;
        if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, made, &got, cfgs) !=
            CUDNN_STATUS_SUCCESS)
            got = 0;
    }
    int earlier = *n;
    for (int i = 0; i < made; i++) {
        cand k = {.cfg = cfgs[i], .ms = -1};
        bool keep = i < got && *n < MAX_CANDS && engine_notes(&k);
        for (int j = 0; keep && j < earlier; j++)
            keep = c[j].engine != k.engine;
        if (keep)
            c[(*n)++] = k;
        else
            cudnnBackendDestroyDescriptor(cfgs[i]);
    }
    cudnnBackendDestroyDescriptor(heur);
}

static bool finalize_plan(rnnc_conv_handle *h, cand *c)
{
    cudnnBackendDescriptor_t plan = NULL;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) !=
        CUDNN_STATUS_SUCCESS)
        return false;
    int64_t k = 0;
    if (cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                 &h->dnn) == CUDNN_STATUS_SUCCESS &&
        cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c->cfg) == CUDNN_STATUS_SUCCESS &&
        cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS &&
        cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                 1, &k, &c->ws) == CUDNN_STATUS_SUCCESS) {
        c->plan = plan;
        return true;
    }
    cudnnBackendDestroyDescriptor(plan);
    return false;
}

static void cands_free(cand *c, int n, int keep)
{
    for (int i = 0; i < n; i++) {
        if (i == keep)
            continue;
        if (c[i].plan)
            cudnnBackendDestroyDescriptor(c[i].plan);
        cudnnBackendDestroyDescriptor(c[i].cfg);
    }
}

/* ---------------------------------------------------------------- running and timing */

enum { N_UIDS = 5 };
static const int64_t k_uids[N_UIDS] = {UID_X, UID_W, UID_Y, UID_Z, UID_B};

/* The pointers (those given) and the workspace as a variant pack. */
static cudnnStatus_t variant_pack(const void *const ptr[N_UIDS], CUdeviceptr ws,
                                  cudnnBackendDescriptor_t *out)
{
    int64_t uids[N_UIDS];
    void *data[N_UIDS], *wsp = (void *)(uintptr_t)ws;
    int n = 0;
    for (int i = 0; i < N_UIDS; i++)
        if (ptr[i]) {
            uids[n] = k_uids[i];
            data[n++] = (void *)ptr[i];
        }
    cudnnBackendDescriptor_t vp = NULL;
    cudnnStatus_t cs = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
    if (cs == CUDNN_STATUS_SUCCESS)
        cs = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n,
                                      uids);
    if (cs == CUDNN_STATUS_SUCCESS)
        cs = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                      CUDNN_TYPE_VOID_PTR, n, data);
    if (cs == CUDNN_STATUS_SUCCESS)
        cs = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR,
                                      1, &wsp);
    if (cs == CUDNN_STATUS_SUCCESS)
        cs = cudnnBackendFinalize(vp);
    if (cs != CUDNN_STATUS_SUCCESS && vp) {
        cudnnBackendDestroyDescriptor(vp);
        vp = NULL;
    }
    *out = vp;
    return cs;
}

rnnc_status fb_conv_plan_execute(rnnc_conv_handle *h, fb_conv_plan *p, const void *const ptr[5])
{
    rnnc_status st = fb_buf_reserve(&h->ws, (size_t)p->workspace);
    if (st != RNNC_OK)
        return st;
    if (!p->vp || p->vp_ws != h->ws.p || memcmp(p->vp_ptr, ptr, sizeof p->vp_ptr) != 0) {
        if (p->vp)
            cudnnBackendDestroyDescriptor(p->vp);
        p->vp = NULL;
        st = fb_cudnn_check(variant_pack(ptr, h->ws.p, &p->vp), "conv graph variant pack");
        if (st != RNNC_OK)
            return st;
        memcpy(p->vp_ptr, ptr, sizeof p->vp_ptr);
        p->vp_ws = h->ws.p;
    }
    return fb_cudnn_check(cudnnBackendExecute(h->dnn, p->plan, p->vp),
                          "cudnnBackendExecute (conv graph)");
}

#define TIME_REPS 5 /* timed repetitions, the median kept */
#define TIME_RUNS 3 /* executions per repetition */

/* Median ms of one execution, after one untimed; negative when it fails. */
static double time_plan(rnnc_conv_handle *h, cudnnBackendDescriptor_t plan,
                        cudnnBackendDescriptor_t vp, CUevent ev[2])
{
    const rt_cuda_api *cu = rt_cu();
    if (cudnnBackendExecute(h->dnn, plan, vp) != CUDNN_STATUS_SUCCESS)
        return -1;
    double t[TIME_REPS];
    for (int r = 0; r < TIME_REPS; r++) {
        float ms = 0;
        bool ok = cu->EventRecord(ev[0], h->stream) == CUDA_SUCCESS;
        for (int i = 0; ok && i < TIME_RUNS; i++)
            ok = cudnnBackendExecute(h->dnn, plan, vp) == CUDNN_STATUS_SUCCESS;
        ok = ok && cu->EventRecord(ev[1], h->stream) == CUDA_SUCCESS &&
             cu->EventSynchronize(ev[1]) == CUDA_SUCCESS &&
             cu->EventElapsedTime(&ms, ev[0], ev[1]) == CUDA_SUCCESS;
        if (!ok)
            return -1;
        t[r] = (double)ms / TIME_RUNS;
    }
    return cm_median(t, TIME_REPS);
}

/* A workspace for the candidates: the largest need within 90% of free
 * memory, halved while it cannot be allocated (PyTorch's budget). */
static void reserve_for(rnnc_conv_handle *h, const cand *c, int n)
{
    size_t free_b = 0, total = 0, cap = SIZE_MAX, want = 0;
    if (rt_cu()->MemGetInfo(&free_b, &total) == CUDA_SUCCESS)
        cap = h->ws.cap + free_b / 10 * 9;
    for (int i = 0; i < n; i++)
        if (c[i].plan && (size_t)c[i].ws <= cap && (size_t)c[i].ws > want)
            want = (size_t)c[i].ws;
    while (want > 0 && fb_buf_reserve(&h->ws, want) != RNNC_OK)
        want /= 2;
}

/* Times every finalised candidate on ptr (ms < 0: not run); the fastest,
 * or -1. */
static int time_cands(rnnc_conv_handle *h, const void *const ptr[5], cand *c, int n)
{
    reserve_for(h, c, n);
    const rt_cuda_api *cu = rt_cu();
    CUevent ev[2] = {NULL, NULL};
    cudnnBackendDescriptor_t vp = NULL;
    int best = -1;
    if (cu->EventCreate(&ev[0], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        goto out;
    if (cu->EventCreate(&ev[1], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        goto destroy_ev0;
    if (variant_pack(ptr, h->ws.p, &vp) != CUDNN_STATUS_SUCCESS)
        goto destroy_ev1;
    for (int i = 0; i < n; i++) {
        c[i].ms = -1;
        if (!c[i].plan || (size_t)c[i].ws > h->ws.cap)
            continue;
        c[i].ms = time_plan(h, c[i].plan, vp, ev);
        if (c[i].ms >= 0 && (best < 0 || c[i].ms < c[best].ms))
            best = i;
    }
    cudnnBackendDestroyDescriptor(vp);
destroy_ev1:
    cu->EventDestroy(ev[1]);
destroy_ev0:
    cu->EventDestroy(ev[0]);
out:
    return best;
}

/* ---------------------------------------------------------------- building a plan */

/* Finalises the candidates in order: the first allowed (engine `want` only,
 * if want >= 0), or in benchmark mode up to MAX_TIMED of them, and picks
 * one; -1 when none finalises. */
static int pick(rnnc_conv_handle *h, const fb_conv_geom *g, const void *const ptr[5], cand *c,
                int n, int64_t want, bool bench)
{
    int plans = 0, first = -1;
    for (int i = 0; i < n && plans < (bench ? MAX_TIMED : 1); i++) {
        if (!allowed(g, &c[i]) || (want >= 0 && c[i].engine != want))
            continue;
        /* Runtime-compiled engines can take seconds to finalise: in
         * benchmark mode only one that comes first. */
        if (bench && c[i].rtc && plans > 0)
            continue;
        if (!finalize_plan(h, &c[i]))
            continue;
        plans++;
        if (first < 0)
            first = i;
    }
    if (!bench || plans < 2)
        return first;
    int best = time_cands(h, ptr, c, n);
    return best >= 0 ? best : first;
}

rnnc_status fb_conv_plan_build(rnnc_conv_handle *h, const fb_conv_geom *g,
                               const rnnc_conv_epilogue *e, const void *const ptr[5],
                               int64_t want, fb_conv_plan *p)
{
    memset(p, 0, sizeof *p);
    graph b = {.g = g, .p = p, .cs = CUDNN_STATUS_SUCCESS};
    cudnnBackendDescriptor_t og = build_graph(&b, h, e, ptr);
    cand c[MAX_CANDS];
    int n = 0, chosen = -1;
    /* Timing runs the graph repeatedly: not when y is also the z it reads. */
    bool bench = g->d.algo_mode == RNNC_CONV_BENCHMARK && want < 0 && !(e->z && e->z == ptr[2]);
    if (b.cs == CUDNN_STATUS_SUCCESS) {
        /* Timing, or finding a timed engine again, looks at every mode:
         * the slower, fuller heuristic B and the fallback list too. */
        bool all = bench || want >= 0;
        heur_cands(og, CUDNN_HEUR_MODE_INSTANT, c, &n);
        if (all)
            heur_cands(og, CUDNN_HEUR_MODE_B, c, &n);
        if (all || n == 0)
            heur_cands(og, CUDNN_HEUR_MODE_FALLBACK, c, &n);
        chosen = pick(h, g, ptr, c, n, want, bench);
        if (chosen < 0 && want >= 0)
            chosen = pick(h, g, ptr, c, n, -1, bench);
        if (chosen < 0) {
            b.cs = CUDNN_STATUS_NOT_SUPPORTED;
            b.what = "unable to find an engine to execute this computation";
        }
    }
    cands_free(c, n, chosen);
    if (b.cs != CUDNN_STATUS_SUCCESS) {
        char desc[400];
        fb_conv_describe(g, desc, sizeof desc);
        rnnc_status st = fb_cudnn_check(b.cs, b.what);
        err_fail_append("conv graph%s%s%s: %s", e->z ? " + z" : "", e->bias ? " + bias" : "",
                        e->relu ? " + relu" : "", desc);
        fb_conv_plan_free(p);
        return st;
    }
    p->plan = c[chosen].plan;
    p->descs[p->n_descs++] = c[chosen].cfg; /* the graph needs at most 17 of 24 */
    p->workspace = c[chosen].ws;
    p->engine = c[chosen].engine;
    p->ms = bench && c[chosen].ms > 0 ? c[chosen].ms : 0;
    return RNNC_OK;
}

void fb_conv_plan_free(fb_conv_plan *p)
{
    if (p->vp)
        cudnnBackendDestroyDescriptor(p->vp);
    if (p->plan)
        cudnnBackendDestroyDescriptor(p->plan);
    for (int i = p->n_descs - 1; i >= 0; i--)
        cudnnBackendDestroyDescriptor(p->descs[i]);
    memset(p, 0, sizeof *p);
}

/* ---------------------------------------------------------------- timing every engine */

rnnc_status fb_conv_graph_time(rnnc_conv_handle *h, const fb_conv_geom *g, const void *const p[3],
                               rnnc_conv_algo_perf *perf, int max, int *count)
{
    rnnc_conv_epilogue e = {.alpha1 = 1.0f};
    const void *ptr[5] = {p[0], p[1], p[2], NULL, NULL};
    fb_conv_plan tmp;
    memset(&tmp, 0, sizeof tmp);
    graph b = {.g = g, .p = &tmp, .cs = CUDNN_STATUS_SUCCESS};
    cudnnBackendDescriptor_t og = build_graph(&b, h, &e, ptr);
    cand c[MAX_CANDS];
    int n = 0;
    if (b.cs == CUDNN_STATUS_SUCCESS) {
        heur_cands(og, CUDNN_HEUR_MODE_INSTANT, c, &n);
        heur_cands(og, CUDNN_HEUR_MODE_B, c, &n);
        heur_cands(og, CUDNN_HEUR_MODE_FALLBACK, c, &n);
    }
    /* Runtime-compiled engines only where one comes first (they take
     * seconds to build). */
    for (int i = 0, plans = 0; i < n; i++)
        if (allowed(g, &c[i]) && !(c[i].rtc && plans > 0))
            plans += finalize_plan(h, &c[i]);
    time_cands(h, ptr, c, n);
    for (int i = 0; i < n && *count < max; i++) {
        if (c[i].ms < 0 || !c[i].plan)
            continue;
        rnnc_conv_algo_perf *o = &perf[(*count)++];
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "graph engine %lld%s", (long long)c[i].engine,
                 c[i].rtc ? " (rtc)" : "");
        o->ms = (float)c[i].ms;
        o->workspace = (size_t)c[i].ws;
        o->deterministic = c[i].deterministic;
        o->tensor_cores = c[i].tensor_cores;
    }
    cands_free(c, n, -1);
    fb_conv_plan_free(&tmp);
    return b.cs == CUDNN_STATUS_SUCCESS ? RNNC_OK : fb_cudnn_check(b.cs, b.what);
}
