/*
 * fallback.h: the internal header of cudnn_fallback/: cuDNN 9 runs the
 * standard cells (RNN_RELU, RNN_TANH, LSTM, GRU) behind the model API, and
 * convolution.
 *
 * Sections (one owner each; edit only your own section):
 *   1. RNN weight layout: PyTorch tensors to cuDNN linear layers (rnn_layout.c)
 *   2. which cuDNN mode runs a cell (rnn_match.c)
 *   3. cuDNN helpers: status, availability, dropout state, fp16 (cudnn_util.c)
 *   4. the cudnn RNN backend (rnn_backend.c, rnn_run.c)
 *   5. convolution
 *
 * Sections 1 and 2 are pure host code: they need neither a GPU nor cudnn.h,
 * so tests/test_cudnn_layout.c runs them on every machine.
 */
#ifndef RNNC_FALLBACK_H
#define RNNC_FALLBACK_H

#include "runtime/cache/cache.h"
#include "runtime/spec/spec.h"

/* ================================================================ 1. RNN weight layout */

/* The cuDNN cell modes, numbered as cudnnRNNMode_t. */
typedef enum fb_rnn_mode {
    FB_RNN_RELU = 0,
    FB_RNN_TANH = 1,
    FB_LSTM = 2,
    FB_GRU = 3
} fb_rnn_mode;

#define FB_MAX_GATES 4
#define FB_MAX_LIN_LAYERS 9 /* LSTM: 4 input, 4 recurrent, 1 projection */

const char *fb_rnn_mode_name(fb_rnn_mode m); /* "lstm", "gru", "rnn_tanh", "rnn_relu" */
int fb_rnn_gates(fb_rnn_mode m);             /* 4 LSTM, 3 GRU, 1 RNN */
/* Linear layers per pseudo-layer: 2 * gates, plus the projection. */
int fb_rnn_lin_layers(fb_rnn_mode m, bool proj);
int fb_rnn_state_count(fb_rnn_mode m); /* 2 for LSTM (h, c), else 1 */

/*
 * One contiguous piece of a PyTorch parameter that cuDNN keeps as one
 * matrix or bias of a linear layer.  Gate g of weight_ih ([G*H, in]) is rows
 * g*H .. g*H+H-1, which is contiguous in row-major order and laid out as
 * cuDNN's [H, in] matrix: no transpose and, since both use the gate order
 * i,f,g,o / r,z,n, no permutation either.
 */
typedef struct fb_rnn_piece {
    int lin_id;     /* cuDNN linear-layer id */
    bool bias;      /* a bias vector (else a matrix) */
    int64_t offset; /* first element in the PyTorch tensor */
    int64_t rows;   /* a bias has `rows` elements */
    int64_t cols;   /* 1 for a bias */
} fb_rnn_piece;

/* Sizes of one pseudo-layer as cuDNN sees them. */
typedef struct fb_rnn_dims {
    int64_t in;     /* I for layer 0, D * Hout above */
    int64_t hidden; /* H */
    int64_t proj;   /* P, or 0 without projection */
} fb_rnn_dims;

/*
 * Splits the PyTorch parameter `name` (weight_ih, weight_hh, bias_ih,
 * bias_hh, weight_hr; without the _l<k> suffix) of mode m into out[] and
 * returns the piece count; 0 for a parameter absent from this model
 * (weight_hr without projection); -1 for a name mode m does not have.
 */
int fb_rnn_pieces(fb_rnn_mode m, const char *name, fb_rnn_dims d, fb_rnn_piece out[FB_MAX_GATES]);
/* Elements of the whole PyTorch parameter (sum of its pieces), or -1. */
int64_t fb_rnn_param_numel(fb_rnn_mode m, const char *name, fb_rnn_dims d);

/* Where one linear layer's matrix and bias sit in cuDNN's weight space:
 * byte offsets from its start and element counts (0: none). */
typedef struct fb_lin_slot {
    size_t mat_off, mat_n;
    size_t bias_off, bias_n;
} fb_lin_slot;

/*
 * The weight space as cuDNN 9 lays it out (as cudnnGetRNNWeightParams
 * reports it on an H100; gpu_cudnn_paths checks it): first the matrices of
 * every pseudo-layer, one pseudo-layer after another, each its linear
 * layers in id order; then all the biases in the same order (none with
 * bias=False).  A pseudo-layer's biases do not follow its matrices, but
 * each PyTorch parameter is still one contiguous run.  d[0] are layer 0's
 * dims, d[1] those above.  Fills slots[pseudo * n_lin + lin] when slots is
 * not NULL and returns the size in bytes.  The backend never uses this: it
 * asks cuDNN (cudnnGetRNNWeightParams) for every matrix and bias, and
 * tests compare the two.
 */
size_t fb_rnn_expected_slots(fb_rnn_mode m, int layers, int dirs, const fb_rnn_dims d[2],
                             bool bias, size_t esz, fb_lin_slot *slots);
/*
 * Byte offset of PyTorch parameter `name` (as fb_rnn_pieces) of one
 * pseudo-layer whose linear layers sit at slots[0 .. n_lin-1]: its pieces
 * must follow one another in gate order, so the parameter is one contiguous
 * tensor inside the buffer.  RNNC_ERR_NOT_FOUND for a parameter this model
 * lacks; RNNC_ERR_UNSUPPORTED (naming the gap) when the pieces are apart.
 */
rnnc_status fb_rnn_param_offset(fb_rnn_mode m, const char *name, fb_rnn_dims d,
                                const fb_lin_slot *slots, size_t esz, size_t *off);

/* ================================================================ 2. mode matching */

/*
 * The cuDNN mode that computes the spec's cell: fn[0] is compared with the
 * built-in lstm, gru, rnn_tanh, rnn_relu and dropout_lstm, each specialised
 * as the model API does.  *dropout is the inter-layer dropout probability
 * cuDNN must apply (the model's, or dropout_lstm's own).  A cell matching
 * none is RNNC_ERR_UNSUPPORTED, naming the backends that can run it.
 */
rnnc_status fb_rnn_match(const rt_spec *s, fb_rnn_mode *mode, double *dropout);
/* Index of the hidden state h in the cell's state order (the state whose
 * next value is the output), and of c (LSTM; else -1). */
rnnc_status fb_rnn_state_slots(const ir_fn *fn, fb_rnn_mode m, int *h, int *c);

/* ---- algorithms (rnn_algo.c; pure host) */

/* What decides whether cuDNN runs an algorithm for one call. */
typedef struct fb_algo_query {
    fb_rnn_mode mode;
    int64_t in, hidden, proj; /* proj 0: none */
    int layers, dirs;
    int64_t batch;
    bool training;
    bool no_bias; /* CUDNN_RNN_NO_BIAS */
    bool ragged;  /* sequences of different lengths */
    bool half;    /* fp16 data */
    int sm;       /* 90 for sm_90 */
    int sm_count;
} fb_algo_query;

/* NULL when cuDNN's documented limits allow algorithm a for q, else the
 * reason it does not ("persistent algorithms need sequences of one length"). */
const char *fb_algo_refusal(rnnc_cudnn_algo a, const fb_algo_query *q);
/* The eligible algorithms, STANDARD first (every call has it); returns how many. */
int fb_algo_candidates(const fb_algo_query *q, rnnc_cudnn_algo out[4]);
/* The choice without timing (RNNC_AUTOTUNE=0): PERSIST_STATIC where PyTorch's
 * heuristic takes it (fp16, one unidirectional layer, H <= 1024, H and I
 * multiples of 128; on sm_80+ with 98+ SMs an LSTM batch that is a multiple
 * of 8 up to 128), else STANDARD. */
rnnc_cudnn_algo fb_algo_heuristic(const fb_algo_query *q);

/* ================================================================ 3. cuDNN helpers */

/* True when the library was built with cuDNN and a device and cuDNN >= 9
 * are usable now (for rnnc_backend_available).  Sets no error text. */
bool fb_cudnn_available(void);
/*
 * Opens libcudnn (once, thread-safe; $RNNC_CUDNN_PATH, else libcudnn.so.9,
 * else libcudnn.so) and fills the function table.  RNNC_ERR_NO_DEVICE with
 * the reason (dlerror's text, a missing symbol, a version below 9) when it
 * cannot.  Every entry point into cuDNN calls this before its first cuDNN
 * call; nothing else may run before it succeeds.
 */
rnnc_status fb_cudnn_load(void);

/* fp32 <-> IEEE half, round to nearest even (host-side weight conversion). */
uint16_t fb_f32_to_f16(float f);
float fb_f16_to_f32(uint16_t h);

#if defined(__has_include)
#if __has_include(<cudnn.h>) && defined(RT_HAVE_CUDA_H)
#define FB_HAVE_CUDNN_H 1
#endif
#endif

#ifdef FB_HAVE_CUDNN_H
#include <cudnn.h>

/* The loaded cuDNN (cudnn_load.c): one pointer per line of cudnn_api.def,
 * typed from cudnn.h's own declarations. */
typedef struct fb_dnn_api {
#define FB_DNN_FN(name) __typeof__(name) *p_##name;
#include "cudnn_fallback/cudnn_api.def"
#undef FB_DNN_FN
} fb_dnn_api;
extern fb_dnn_api fb_dnn;

/* From here on each cuDNN name is its table entry, so calls read as plain
 * cuDNN and libcudnn is never linked.  Keep in step with cudnn_api.def. */
#define cudnnGetVersion (fb_dnn.p_cudnnGetVersion)
#define cudnnGetErrorString (fb_dnn.p_cudnnGetErrorString)
#define cudnnGetLastErrorString (fb_dnn.p_cudnnGetLastErrorString)
#define cudnnCreate (fb_dnn.p_cudnnCreate)
#define cudnnDestroy (fb_dnn.p_cudnnDestroy)
#define cudnnSetStream (fb_dnn.p_cudnnSetStream)
#define cudnnCreateTensorDescriptor (fb_dnn.p_cudnnCreateTensorDescriptor)
#define cudnnDestroyTensorDescriptor (fb_dnn.p_cudnnDestroyTensorDescriptor)
#define cudnnSetTensorNdDescriptor (fb_dnn.p_cudnnSetTensorNdDescriptor)
#define cudnnGetTensorNdDescriptor (fb_dnn.p_cudnnGetTensorNdDescriptor)
/* RNN */
#define cudnnCreateDropoutDescriptor (fb_dnn.p_cudnnCreateDropoutDescriptor)
#define cudnnDestroyDropoutDescriptor (fb_dnn.p_cudnnDestroyDropoutDescriptor)
#define cudnnDropoutGetStatesSize (fb_dnn.p_cudnnDropoutGetStatesSize)
#define cudnnSetDropoutDescriptor (fb_dnn.p_cudnnSetDropoutDescriptor)
#define cudnnRestoreDropoutDescriptor (fb_dnn.p_cudnnRestoreDropoutDescriptor)
#define cudnnCreateRNNDescriptor (fb_dnn.p_cudnnCreateRNNDescriptor)
#define cudnnDestroyRNNDescriptor (fb_dnn.p_cudnnDestroyRNNDescriptor)
#define cudnnSetRNNDescriptor_v8 (fb_dnn.p_cudnnSetRNNDescriptor_v8)
#define cudnnCreateRNNDataDescriptor (fb_dnn.p_cudnnCreateRNNDataDescriptor)
#define cudnnDestroyRNNDataDescriptor (fb_dnn.p_cudnnDestroyRNNDataDescriptor)
#define cudnnSetRNNDataDescriptor (fb_dnn.p_cudnnSetRNNDataDescriptor)
#define cudnnGetRNNWeightSpaceSize (fb_dnn.p_cudnnGetRNNWeightSpaceSize)
#define cudnnGetRNNWeightParams (fb_dnn.p_cudnnGetRNNWeightParams)
#define cudnnGetRNNTempSpaceSizes (fb_dnn.p_cudnnGetRNNTempSpaceSizes)
#define cudnnRNNForward (fb_dnn.p_cudnnRNNForward)
#define cudnnRNNBackwardData_v8 (fb_dnn.p_cudnnRNNBackwardData_v8)
#define cudnnRNNBackwardWeights_v8 (fb_dnn.p_cudnnRNNBackwardWeights_v8)
#define cudnnBuildRNNDynamic (fb_dnn.p_cudnnBuildRNNDynamic)
/* convolution */
#define cudnnCreateFilterDescriptor (fb_dnn.p_cudnnCreateFilterDescriptor)
#define cudnnDestroyFilterDescriptor (fb_dnn.p_cudnnDestroyFilterDescriptor)
#define cudnnSetFilterNdDescriptor (fb_dnn.p_cudnnSetFilterNdDescriptor)
#define cudnnCreateConvolutionDescriptor (fb_dnn.p_cudnnCreateConvolutionDescriptor)
#define cudnnDestroyConvolutionDescriptor (fb_dnn.p_cudnnDestroyConvolutionDescriptor)
#define cudnnSetConvolutionNdDescriptor (fb_dnn.p_cudnnSetConvolutionNdDescriptor)
#define cudnnSetConvolutionGroupCount (fb_dnn.p_cudnnSetConvolutionGroupCount)
#define cudnnSetConvolutionMathType (fb_dnn.p_cudnnSetConvolutionMathType)
#define cudnnGetConvolutionForwardAlgorithm_v7 (fb_dnn.p_cudnnGetConvolutionForwardAlgorithm_v7)
#define cudnnGetConvolutionBackwardDataAlgorithm_v7 (fb_dnn.p_cudnnGetConvolutionBackwardDataAlgorithm_v7)
#define cudnnGetConvolutionBackwardFilterAlgorithm_v7 (fb_dnn.p_cudnnGetConvolutionBackwardFilterAlgorithm_v7)
#define cudnnFindConvolutionForwardAlgorithmEx (fb_dnn.p_cudnnFindConvolutionForwardAlgorithmEx)
#define cudnnFindConvolutionBackwardDataAlgorithmEx (fb_dnn.p_cudnnFindConvolutionBackwardDataAlgorithmEx)
#define cudnnFindConvolutionBackwardFilterAlgorithmEx (fb_dnn.p_cudnnFindConvolutionBackwardFilterAlgorithmEx)
#define cudnnGetConvolutionForwardWorkspaceSize (fb_dnn.p_cudnnGetConvolutionForwardWorkspaceSize)
#define cudnnGetConvolutionBackwardDataWorkspaceSize (fb_dnn.p_cudnnGetConvolutionBackwardDataWorkspaceSize)
#define cudnnGetConvolutionBackwardFilterWorkspaceSize (fb_dnn.p_cudnnGetConvolutionBackwardFilterWorkspaceSize)
#define cudnnConvolutionForward (fb_dnn.p_cudnnConvolutionForward)
#define cudnnConvolutionBackwardData (fb_dnn.p_cudnnConvolutionBackwardData)
#define cudnnConvolutionBackwardFilter (fb_dnn.p_cudnnConvolutionBackwardFilter)
#define cudnnAddTensor (fb_dnn.p_cudnnAddTensor)
#define cudnnCreateActivationDescriptor (fb_dnn.p_cudnnCreateActivationDescriptor)
#define cudnnDestroyActivationDescriptor (fb_dnn.p_cudnnDestroyActivationDescriptor)
#define cudnnSetActivationDescriptor (fb_dnn.p_cudnnSetActivationDescriptor)
#define cudnnActivationForward (fb_dnn.p_cudnnActivationForward)
#define cudnnBackendCreateDescriptor (fb_dnn.p_cudnnBackendCreateDescriptor)
#define cudnnBackendDestroyDescriptor (fb_dnn.p_cudnnBackendDestroyDescriptor)
#define cudnnBackendSetAttribute (fb_dnn.p_cudnnBackendSetAttribute)
#define cudnnBackendGetAttribute (fb_dnn.p_cudnnBackendGetAttribute)
#define cudnnBackendFinalize (fb_dnn.p_cudnnBackendFinalize)
#define cudnnBackendExecute (fb_dnn.p_cudnnBackendExecute)

/* RNNC_OK for success, else RNNC_ERR_CUDNN (OUT_OF_MEMORY for an allocation
 * failure) with "what: <cuDNN's status and last error text>". */
rnnc_status fb_cudnn_check(cudnnStatus_t st, const char *what);
/*
 * Points `desc` at the dropout state of `device` with probability p.  The
 * state (about 2 MB, expensive to seed) is created once per device, seeded
 * with `seed`, and reused by every model on that device; a model asking
 * for another seed reseeds it.  Thread-safe.  The context of `device`
 * must be current.
 */
rnnc_status fb_dropout_bind(cudnnHandle_t h, int device, uint64_t seed, float p,
                            cudnnDropoutDescriptor_t desc);
#endif

/* ================================================================ 4. the backend */

/* The cudnn backend (RNNC_HAVE_CUDNN). */
extern const rt_backend fb_backend_cudnn;

#ifdef FB_HAVE_CUDNN_H
/* A device buffer that only grows: allocated once per shape, then reused. */
typedef struct fb_buf {
    CUdeviceptr p;
    size_t cap;
} fb_buf;

rnnc_status fb_buf_reserve(fb_buf *b, size_t n);
void fb_buf_free(fb_buf *b);

/* Device pointers of one forward or backward call (0 = none / zeros). */
typedef struct fb_io {
    CUdeviceptr x, y, hx, cx, hy, cy;
} fb_io;

/* The backend's state for one model. */
typedef struct fb_rnn {
    rt_spec spec;
    fb_rnn_mode mode;
    double dropout;
    int layers, dirs, pseudo, n_lin;
    int64_t hidden, proj, hout; /* proj 0: none; hout = proj or hidden */
    int state_h, state_c;       /* in the cell's state order; state_c -1 */
    cudnnDataType_t dtype;
    size_t esz;
    cudnnHandle_t handle;
    cudnnDropoutDescriptor_t drop;
    cudnnRNNDescriptor_t rnn;
    cudnnRNNDataDescriptor_t xdesc, ydesc;
    cudnnTensorDescriptor_t hdesc, cdesc;
    size_t wsize;
    fb_buf w, dw;
    /* The weight space and gradient buffer in use: w.p and dw.p, or the
     * caller's (rnnc_model_bind_weight_buffer). */
    CUdeviceptr wp, dwp;
    bool ext_w, ext_dw;
    fb_lin_slot *slots; /* [pseudo * n_lin + lin id] */
    bool bound;
    int sm, sm_count;
    /* The algorithm the RNN descriptor holds now, and for PERSIST_DYNAMIC
     * the batch its plan was built for (0: none). */
    rnnc_cudnn_algo algo;
    int dyn_batch;
    /* AUTO's last choice and the shape it was made for. */
    struct {
        bool valid, training, ragged;
        int T, B;
        rnnc_cudnn_algo algo;
    } memo;
    int oom_retries; /* temp-space allocations that failed and were retried */
    /* The shape the data descriptors hold now, and its buffers. */
    int T, B;
    bool packed;  /* x and y are packed (batch_sizes) */
    int64_t rows; /* rows of x and y: sum(batch_sizes) packed, else T * B */
    int32_t *lens; /* [B] host copy of the sequence lengths */
    size_t lens_cap;
    bool training;
    size_t ws_size, rs_size;
    fb_buf seq, ws, rs;
    /* Staging for host pointers (device pointers are used as they are). */
    fb_buf x, y, hx, cx, hy, cy, dx, dy, dhx, dcx, dhy, dcy;
    /* The last forward, which backward differentiates. */
    fb_io last;
    bool last_valid, last_training, last_dev;
    CUstream stream; /* of the last call, where weight_grad reads dw */
    bool have_grad;
    bool ragged;     /* some sequence is shorter than T */
    char *dw_host;   /* host copy of dw, read once after each backward */
    bool dw_host_valid;
} fb_rnn;

/* rnn_run.c: forward, backward, timing (the rt_backend entries). */
rnnc_status fb_rnn_forward(void *state, const rnnc_forward_args *a);
rnnc_status fb_rnn_time_forward(void *state, const rnnc_forward_args *a, int warmup, int iters,
                                double *median_ms);
rnnc_status fb_rnn_backward(void *state, const rnnc_backward_args *a);
/* Median ms of the training forward and backward kernels (rt_backend.time_training). */
rnnc_status fb_rnn_time_training(void *state, const rnnc_forward_args *f,
                                 const rnnc_backward_args *b, int warmup, int iters,
                                 double *median_ms);
/* Bytes of state `state` (cell order) at the current batch: [L*D, B, n]. */
size_t fb_rnn_state_bytes(const fb_rnn *r, int state);
/* One cudnnRNNForward on the current shape, algorithm and temp space. */
rnnc_status fb_rnn_launch_forward(fb_rnn *r, const fb_io *io);

/* rnn_algo_run.c: the algorithm of each call and its temp space. */
/* Sets the RNN descriptor to algorithm a (and the weight-space size, which
 * must not change once weights are laid out). */
rnnc_status fb_rnn_set_algo(fb_rnn *r, rnnc_cudnn_algo a);
/* The algorithm for the current shape (the model's, or AUTO's choice:
 * memo, tuning record, timing on io's buffers, or the heuristic), set in
 * the descriptor with its temp space allocated.  A failed allocation is
 * retried after freeing the backward's staging, then (AUTO) with the other
 * eligible algorithms, smallest need first, then reported with the sizes. */
rnnc_status fb_rnn_prepare_algo(fb_rnn *r, const fb_io *io, CUstream s);
/* The query of the current shape. */
void fb_rnn_algo_query(const fb_rnn *r, fb_algo_query *q);
/* Tests: the next n temp-space allocations fail as if out of memory. */
void fb_rnn_fail_allocs(int n);

/* rnn_weights.c: weights in device memory (the model API's entries). */
/* *bytes and offsets[pseudo * n_params + param] (NULL: not wanted), from
 * cuDNN's own placement. */
rnnc_status fb_rnn_weight_layout(const fb_rnn *r, size_t *bytes, size_t *offsets);
/* Uses the caller's weights/grads (device memory of wsize bytes) from now
 * on; weights 0 goes back to the backend's own buffers, copying the
 * caller's contents into them first. */
rnnc_status fb_rnn_bind_buffer(fb_rnn *r, CUdeviceptr weights, CUdeviceptr grads, size_t bytes);
#endif

/* ================================================================ 5. convolution */

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

#endif /* RNNC_FALLBACK_H */
