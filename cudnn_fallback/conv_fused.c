/*
 * conv_fused.c: y = act(alpha1 * conv(x) + alpha2 * z + bias) as one cuDNN
 * graph (backend API: operation graph, heuristics, execution plan, variant
 * pack), plans kept in the handle's LRU; the unfused calls where no engine
 * takes the graph.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_fallback/fallback.h"

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

/* Engine notes that rule an engine out: tensor cores for fp32 without
 * TF32, non-determinism when asked, and down-converted inputs always. */
static bool engine_allowed(const fb_conv_geom *g, cudnnBackendDescriptor_t cfg, int64_t *index)
{
    cudnnBackendDescriptor_t eng = NULL;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS)
        return false;
    int64_t n = 0;
    bool ok = cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng) ==
              CUDNN_STATUS_SUCCESS;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t nn = 0;
    if (ok)
        ok = cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                      CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                      &nn, notes) == CUDNN_STATUS_SUCCESS;
    if (ok)
        cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                 index);
    bool ffma = g->d.dtype == RNNC_F32 && g->d.math == RNNC_MATH_FFMA;
    for (int64_t i = 0; ok && i < nn; i++)
        if ((notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && ffma) ||
            (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC && g->d.deterministic) ||
            notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)
            ok = false;
    cudnnBackendDestroyDescriptor(eng);
    return ok;
}

#define MAX_CFGS 32

/* Heuristics' engine configs in order; the first whose plan finalises. */
static void make_plan(graph *b, rnnc_conv_handle *h, cudnnBackendDescriptor_t og)
{
    cudnnBackendDescriptor_t heur = make(b, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_INSTANT;
    set(b, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og, "heur graph");
    set(b, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heur mode");
    finalize(b, heur, "engine heuristics finalize");
    if (b->cs != CUDNN_STATUS_SUCCESS)
        return;
    cudnnBackendDescriptor_t cfgs[MAX_CFGS] = {0};
    int64_t n = 0;
    for (int i = 0; i < MAX_CFGS; i++)
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]) !=
            CUDNN_STATUS_SUCCESS)
            break;
    b->cs = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, MAX_CFGS, &n, cfgs);
    b->what = "engine heuristics results";
    int chosen = -1;
    for (int i = 0; b->cs == CUDNN_STATUS_SUCCESS && chosen < 0 && i < n; i++) {
        int64_t index = -1;
        if (!engine_allowed(b->g, cfgs[i], &index))
            continue;
        cudnnBackendDescriptor_t plan = NULL;
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) !=
            CUDNN_STATUS_SUCCESS)
            continue;
        if (cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                     &h->dnn) == CUDNN_STATUS_SUCCESS &&
            cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]) ==
                CUDNN_STATUS_SUCCESS &&
            cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS) {
            int64_t k = 0;
            cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &k, &b->p->workspace);
            b->p->plan = plan;
            b->p->engine = index;
            chosen = i;
        } else {
            cudnnBackendDestroyDescriptor(plan);
        }
    }
    for (int i = 0; i < MAX_CFGS; i++)
        if (cfgs[i] && i != chosen)
            cudnnBackendDestroyDescriptor(cfgs[i]);
    if (chosen >= 0 && b->p->n_descs < FB_CONV_GRAPH_DESCS)
        b->p->descs[b->p->n_descs++] = cfgs[chosen];
    else if (chosen >= 0)
        cudnnBackendDestroyDescriptor(cfgs[chosen]);
    if (b->cs == CUDNN_STATUS_SUCCESS && chosen < 0) {
        b->cs = CUDNN_STATUS_NOT_SUPPORTED;
        b->what = "unable to find an engine to execute this computation";
    }
}

static void plan_free(fb_conv_plan *p)
{
    if (p->plan)
        cudnnBackendDestroyDescriptor(p->plan);
    for (int i = p->n_descs - 1; i >= 0; i--)
        cudnnBackendDestroyDescriptor(p->descs[i]);
    memset(p, 0, sizeof *p);
}

/* ---------------------------------------------------------------- the LRU */

void fb_conv_plans_clear(rnnc_conv_handle *h)
{
    for (int i = 0; i < h->n_plans; i++)
        plan_free(&h->plans[i]);
    h->n_plans = 0;
}

static void evict_lru(rnnc_conv_handle *h)
{
    int old = 0;
    for (int i = 1; i < h->n_plans; i++)
        if (h->plans[i].last_use < h->plans[old].last_use)
            old = i;
    plan_free(&h->plans[old]);
    h->plans[old] = h->plans[--h->n_plans];
}

rnnc_status fb_conv_plans_resize(rnnc_conv_handle *h, int capacity)
{
    while (h->n_plans > capacity)
        evict_lru(h);
    fb_conv_plan *p = realloc(h->plans, (size_t)capacity * sizeof *p);
    if (!p)
        return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "conv plan cache of %d", capacity);
    h->plans = p;
    h->plan_cap = capacity;
    return RNNC_OK;
}

static fb_conv_plan *plan_find(rnnc_conv_handle *h, const fb_conv_key *k, uint64_t hash)
{
    for (int i = 0; i < h->n_plans; i++)
        if (h->plans[i].hash == hash && fb_conv_key_equal(&h->plans[i].key, k)) {
            h->plans[i].last_use = ++h->clock;
            return &h->plans[i];
        }
    return NULL;
}

static void plan_drop(rnnc_conv_handle *h, fb_conv_plan *p)
{
    plan_free(p);
    *p = h->plans[--h->n_plans];
}

/* Builds the plan for k into a new LRU slot; NULL (error text set) when no
 * engine takes the graph. */
static fb_conv_plan *plan_build(rnnc_conv_handle *h, const fb_conv_geom *g,
                                const rnnc_conv_epilogue *e, const void *const ptr[5],
                                const fb_conv_key *k, uint64_t hash)
{
    if (h->n_plans == h->plan_cap)
        evict_lru(h);
    fb_conv_plan *p = &h->plans[h->n_plans];
    memset(p, 0, sizeof *p);
    graph b = {.g = g, .p = p, .cs = CUDNN_STATUS_SUCCESS};
    cudnnBackendDescriptor_t og = build_graph(&b, h, e, ptr);
    make_plan(&b, h, og);
    if (b.cs != CUDNN_STATUS_SUCCESS) {
        char desc[400];
        fb_conv_describe(g, desc, sizeof desc);
        fb_cudnn_check(b.cs, b.what);
        rnnc_fail_append("fused conv%s%s%s: %s", e->z ? " + z" : "", e->bias ? " + bias" : "",
                         e->relu ? " + relu" : "", desc);
        plan_free(p);
        return NULL;
    }
    p->key = *k;
    p->hash = hash;
    p->last_use = ++h->clock;
    h->n_plans++;
    return p;
}

static rnnc_status plan_execute(rnnc_conv_handle *h, fb_conv_plan *p, const void *const ptr[5])
{
    rnnc_status st = fb_buf_reserve(&h->ws, (size_t)p->workspace);
    if (st != RNNC_OK)
        return st;
    int64_t uids[5];
    void *data[5];
    int n = 0;
    const int64_t all[5] = {UID_X, UID_W, UID_Y, UID_Z, UID_B};
    for (int i = 0; i < 5; i++)
        if (ptr[i]) {
            uids[n] = all[i];
            data[n++] = (void *)ptr[i];
        }
    cudnnBackendDescriptor_t vp = NULL;
    void *ws = (void *)(uintptr_t)h->ws.p;
    cudnnStatus_t cs = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
    if (cs == CUDNN_STATUS_SUCCESS)
        cs = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    if (cs == CUDNN_STATUS_SUCCESS)
        cs = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                      n, data);
    if (cs == CUDNN_STATUS_SUCCESS)
        cs = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                      &ws);
    if (cs == CUDNN_STATUS_SUCCESS)
        cs = cudnnBackendFinalize(vp);
    if (cs == CUDNN_STATUS_SUCCESS)
        cs = cudnnBackendExecute(h->dnn, p->plan, vp);
    if (vp)
        cudnnBackendDestroyDescriptor(vp);
    return fb_cudnn_check(cs, "cudnnBackendExecute (fused conv)");
}

/* ---------------------------------------------------------------- unfused */

static rnnc_status unfused(rnnc_conv_handle *h, const fb_conv_geom *g, const rnnc_conv_epilogue *e,
                           const void *x, const void *w, void *y)
{
    const void *p[3] = {x, w, y};
    rnnc_status st = fb_conv_run(h, g, RNNC_CONV_FORWARD, p, e->alpha1, 0.0f);
    if (st != RNNC_OK)
        return st;
    char conv_algo[sizeof h->last];
    memcpy(conv_algo, h->last, sizeof conv_algo);
    fb_conv_descs d;
    cudnnTensorDescriptor_t bd = NULL;
    cudnnActivationDescriptor_t act = NULL;
    st = fb_conv_descs_make(g, &d);
    if (st != RNNC_OK)
        return st;
    const float one = 1.0f, zero = 0.0f;
    if (e->z)
        st = fb_cudnn_check(cudnnAddTensor(h->dnn, &e->alpha2, d.y, e->z, &one, d.y, y),
                            "cudnnAddTensor(z)");
    if (st == RNNC_OK && e->bias) {
        int dims[5] = {1, (int)g->y[1], 1, 1, 1}, strides[5] = {(int)g->y[1], 1, 1, 1, 1};
        int n = g->rank < 4 ? 4 : g->rank;
        st = fb_cudnn_check(cudnnCreateTensorDescriptor(&bd), "cudnnCreateTensorDescriptor");
        if (st == RNNC_OK)
            st = fb_cudnn_check(cudnnSetTensorNdDescriptor(bd, d.dtype, n, dims, strides),
                                "cudnnSetTensorNdDescriptor(bias)");
        if (st == RNNC_OK)
            st = fb_cudnn_check(cudnnAddTensor(h->dnn, &one, bd, e->bias, &one, d.y, y),
                                "cudnnAddTensor(bias)");
    }
    if (st == RNNC_OK && e->relu) {
        st = fb_cudnn_check(cudnnCreateActivationDescriptor(&act), "cudnnCreateActivationDescriptor");
        if (st == RNNC_OK)
            st = fb_cudnn_check(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU,
                                                             CUDNN_NOT_PROPAGATE_NAN, 0.0),
                                "cudnnSetActivationDescriptor");
        if (st == RNNC_OK)
            st = fb_cudnn_check(cudnnActivationForward(h->dnn, act, &one, d.y, y, &zero, d.y, y),
                                "cudnnActivationForward");
    }
    if (act)
        cudnnDestroyActivationDescriptor(act);
    if (bd)
        cudnnDestroyTensorDescriptor(bd);
    fb_conv_descs_free(&d);
    snprintf(h->last, sizeof h->last, "unfused: %.100s%s%s%s", conv_algo, e->z ? " + add z" : "",
             e->bias ? " + add bias" : "", e->relu ? " + relu" : "");
    return st;
}

/* ---------------------------------------------------------------- entry */

static void fused_key(fb_conv_key *k, const fb_conv_geom *g, const rnnc_conv_epilogue *e,
                      const void *const ptr[5])
{
    int ep = (e->z != NULL) | (e->bias != NULL) << 1 | e->relu << 2;
    ep |= (e->z ? fb_conv_alignment(e->z) : 0) << 8;
    ep |= (e->bias ? fb_conv_alignment(e->bias) : 0) << 16;
    fb_conv_key_make(k, g, RNNC_CONV_FUSED, ep, ptr);
    memcpy(&k->alpha_bits[0], &e->alpha1, sizeof e->alpha1);
    memcpy(&k->alpha_bits[1], &e->alpha2, sizeof e->alpha2);
}

rnnc_status fb_conv_fused(rnnc_conv_handle *h, const fb_conv_geom *g, const rnnc_conv_epilogue *e,
                          const void *x, const void *w, void *y)
{
    if (e->unfused)
        return unfused(h, g, e, x, w, y);
    const void *ptr[5] = {x, w, y, e->z, e->bias};
    fb_conv_key k;
    fused_key(&k, g, e, ptr);
    uint64_t hash = fb_conv_key_hash(&k);
    fb_conv_plan *p = plan_find(h, &k, hash);
    if (p && plan_execute(h, p, ptr) == RNNC_OK)
        goto ran;
    if (p) /* a cached plan that failed (out of memory): search afresh */
        plan_drop(h, p);
    p = plan_build(h, g, e, ptr, &k, hash);
    if (p && plan_execute(h, p, ptr) == RNNC_OK)
        goto ran;
    if (p)
        plan_drop(h, p);
    return unfused(h, g, e, x, w, y);
ran:
    snprintf(h->last, sizeof h->last, "fused graph: engine %lld (ws %lld B)", (long long)p->engine,
             (long long)p->workspace);
    return RNNC_OK;
}
