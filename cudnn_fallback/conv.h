/*
 * conv.h: cuDNN convolution behind rnnc_conv_* (api/conv.c): forward,
 * backward data and backward filter through the legacy API with a
 * process-wide algorithm cache, and fused conv+bias+add+ReLU (and the plain
 * forward where an engine takes it) through the graph API with a plan
 * cache per handle.
 *
 * Owns: conv_key.c (keys, the algorithm cache; host only), conv_run.c,
 * conv_graph.c, conv_fused.c.
 * May use: dnn.h and runtime/ (the CUDA driver); nothing of api/, tools/,
 * frontend/, nor the RNN part (rnn.h).
 */
#ifndef RNNC_FB_CONV_H
#define RNNC_FB_CONV_H

#include "cudnn_fallback/dnn.h"

/* ================================================================ convolution */

/* A checked rnnc_conv_desc (api/conv.c) with its shapes, logical order
 * [N, C, spatial...] whatever the layout. */
typedef struct fb_conv_geom {
    rnnc_conv_desc d;
    int rank;                      /* 2 + spatial dims */
    int64_t x[5], w[5], y[5];      /* [N,C,S..], [K,C/g,R..], [N,K,P..] */
    int64_t nx, nw, ny;            /* element counts */
} fb_conv_geom;

/* What decides an algorithm (conv_key.c, host only).  Built from a
 * zero-filled struct so padding bytes never differ; hashed with xxHash. */
typedef struct fb_conv_key {
    int32_t device, dtype, layout, dims, math, deterministic, algo_mode, pass;
    int32_t epilogue;              /* fused: bit 0 z, bit 1 bias, bit 2 relu; z's
                                      alignment << 8, bias's << 16 */
    int32_t api;                   /* FB_CONV_LEGACY or FB_CONV_GRAPH (they choose apart) */
    int32_t align[3];              /* bytes (1..16) each pointer is aligned to */
    uint32_t alpha_bits[2];        /* fused: alpha1, alpha2 as IEEE bits */
    int64_t batch, in_channels, out_channels, groups;
    int64_t input[3], kernel[3], stride[3], padding[3], dilation[3];
} fb_conv_key;

void fb_conv_key_make(fb_conv_key *k, const fb_conv_geom *g, rnnc_conv_pass pass, int epilogue,
                      const void *const ptrs[3]);
uint64_t fb_conv_key_hash(const fb_conv_key *k);
bool fb_conv_key_equal(const fb_conv_key *a, const fb_conv_key *b);
/* "2-D NCHW f32 x [32, 64, 56, 56] w [64, 64, 3, 3] y [32, 64, 56, 56]
 * stride 1x1 pad 1x1 dilation 1x1 groups 1", for error messages. */
void fb_conv_describe(const fb_conv_geom *g, char *buf, size_t n);
/* Largest power of two up to 16 dividing the address. */
int fb_conv_alignment(const void *p);

/* The process-wide algorithm cache (conv_key.c): a thread-safe map from
 * key to the algorithm (and math type) that ran. */
typedef struct fb_conv_choice {
    int algo;                      /* legacy: the algorithm; graph: the engine's global index */
    int math;
    size_t workspace;
    int api;                       /* FB_CONV_LEGACY or FB_CONV_GRAPH */
} fb_conv_choice;
enum { FB_CONV_LEGACY = 0, FB_CONV_GRAPH = 1 };
bool fb_conv_cache_get(const fb_conv_key *k, fb_conv_choice *out);
rnnc_status fb_conv_cache_put(const fb_conv_key *k, const fb_conv_choice *c);
size_t fb_conv_cache_count(void);
void fb_conv_cache_clear(void);

#ifdef FB_HAVE_CUDNN_H
/* One graph's finalised plan, kept in a handle's LRU (conv_graph.c builds,
 * conv_fused.c keeps): the plain forward's or a fused epilogue's. */
#define FB_CONV_GRAPH_DESCS 24
typedef struct fb_conv_plan {
    fb_conv_key key;
    uint64_t hash;
    cudnnBackendDescriptor_t plan;
    /* Everything the plan was built from, kept as long as it is. */
    cudnnBackendDescriptor_t descs[FB_CONV_GRAPH_DESCS];
    int n_descs;
    int64_t workspace;
    int64_t engine;
    double ms;                     /* benchmark mode: its time; else 0 */
    uint64_t last_use;
    /* The variant pack of the last call, reused while the pointers and the
     * workspace stay the same (no descriptor is made per call). */
    cudnnBackendDescriptor_t vp;
    const void *vp_ptr[5];
    CUdeviceptr vp_ws;
} fb_conv_plan;

/* The legacy descriptors of one geometry (conv_run.c). */
typedef struct fb_conv_descs {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnDataType_t dtype;
} fb_conv_descs;

/* One legacy call's descriptors and chosen algorithm, kept in a handle
 * (conv_run.c), so a call in steady state creates nothing. */
typedef struct fb_conv_entry {
    fb_conv_key key;
    uint64_t hash;
    uint64_t last_use;
    fb_conv_descs d;
    cudnnTensorDescriptor_t bias;  /* the unfused epilogue's [1, K, 1, 1], made on first use */
    bool chosen;                   /* ch, wsn and last are set; d's math is ch's */
    fb_conv_choice ch;
    size_t wsn;
    char last[160];
} fb_conv_entry;

struct rnnc_conv_handle {
    int device;
    cudnnHandle_t dnn;
    CUstream stream;               /* the stream of the call under way */
    fb_buf ws;
    fb_conv_plan *plans;
    int n_plans, plan_cap;
    fb_conv_entry *entries;        /* as many as plans */
    int n_entries;
    cudnnActivationDescriptor_t relu;
    uint64_t clock;                /* LRU time */
    char last[160];
};

rnnc_status fb_conv_descs_make(const fb_conv_geom *g, fb_conv_descs *d);
void fb_conv_descs_free(fb_conv_descs *d);
/* Dims and strides of x/y shaped t ([N, C, S...]) in g's layout, lifted to
 * 2 spatial dims for 1-D; returns the count of dims. */
int fb_conv_tensor_dims(const fb_conv_geom *g, const int64_t t[5], int dims[5], int strides[5]);
/* Makes the context current and binds the stream. */
rnnc_status fb_conv_enter(rnnc_conv_handle *h, const fb_conv_geom *g, void *stream);
/* One pass, choosing (and caching) its algorithm: forward through a graph
 * plan where an engine takes it, else the legacy calls; p = {x, w, y} for
 * forward, {dy, w, dx} backward data, {x, dy, dw} backward filter.
 * out = alpha * conv + beta * out, as cuDNN's. */
rnnc_status fb_conv_run(rnnc_conv_handle *h, const fb_conv_geom *g, rnnc_conv_pass pass,
                        const void *const p[3], float alpha, float beta);
rnnc_status fb_conv_time(rnnc_conv_handle *h, const fb_conv_geom *g, rnnc_conv_pass pass,
                         const void *const p[3], rnnc_conv_algo_perf *perf, int max, int *count);
/* The handle's entry for a legacy key, its descriptors made on first use
 * (conv_run.c). */
rnnc_status fb_conv_entry_get(rnnc_conv_handle *h, const fb_conv_geom *g, const fb_conv_key *k,
                              fb_conv_entry **out);
void fb_conv_entries_clear(rnnc_conv_handle *h);
void fb_conv_entries_trim(rnnc_conv_handle *h, int capacity);

/* conv_graph.c: builds the graph act(alpha1*conv(x) + alpha2*z + bias) (an
 * empty epilogue is the plain forward) and its plan into p: the engine
 * `want` (a global index) if the heuristics offer it, else the heuristic's
 * first, or in benchmark mode the fastest timed on ptr = {x, w, y, z, bias}. */
rnnc_status fb_conv_plan_build(rnnc_conv_handle *h, const fb_conv_geom *g,
                               const rnnc_conv_epilogue *e, const void *const ptr[5],
                               int64_t want, fb_conv_plan *p);
rnnc_status fb_conv_plan_execute(rnnc_conv_handle *h, fb_conv_plan *p, const void *const ptr[5]);
void fb_conv_plan_free(fb_conv_plan *p);
/* Every engine the heuristics offer for the plain forward, timed (appended
 * to perf from *count on). */
rnnc_status fb_conv_graph_time(rnnc_conv_handle *h, const fb_conv_geom *g, const void *const p[3],
                               rnnc_conv_algo_perf *perf, int max, int *count);
/* conv_fused.c */
rnnc_status fb_conv_fused(rnnc_conv_handle *h, const fb_conv_geom *g, const rnnc_conv_epilogue *e,
                          const void *x, const void *w, void *y);
/* The key of the plain forward y = alpha * conv(x), both APIs' choice. */
void fb_conv_forward_key(fb_conv_key *k, const fb_conv_geom *g, float alpha,
                         const void *const p[3]);
/* That forward through a cached graph plan; RNNC_ERR_UNSUPPORTED where the
 * key's choice is the legacy API.  *timed_ms: the plan's time when it was
 * just chosen by timing (benchmark mode), else 0. */
rnnc_status fb_conv_graph_forward(rnnc_conv_handle *h, const fb_conv_geom *g,
                                  const fb_conv_key *k, float alpha, const void *const p[3],
                                  double *timed_ms);
void fb_conv_plans_clear(rnnc_conv_handle *h);
rnnc_status fb_conv_plans_resize(rnnc_conv_handle *h, int capacity);
#endif

#endif /* RNNC_FB_CONV_H */
