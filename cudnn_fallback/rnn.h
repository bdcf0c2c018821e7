/*
 * rnn.h: cuDNN runs the standard cells (RNN_RELU, RNN_TANH, LSTM, GRU)
 * behind the model API.
 *
 * Owns, in sections: 1. the weight layout, PyTorch tensors to cuDNN linear
 * layers (rnn_layout.c); 2. which cuDNN mode runs a cell (rnn_match.c) and
 * which algorithm runs a call (rnn_algo.c); 3. the cudnn backend
 * (rnn_backend.c, rnn_run.c, rnn_algo_run.c, rnn_weights.c).
 * May use: dnn.h, runtime/ (the backend interface, the CUDA driver) and
 * ir/ (cells); nothing of api/, tools/ or frontend/.
 *
 * Sections 1 and 2 are pure host code: they need neither a GPU nor cudnn.h,
 * so tests/test_cudnn_layout.c runs them on every machine.
 */
#ifndef RNNC_FB_RNN_H
#define RNNC_FB_RNN_H

#include "cudnn_fallback/dnn.h"

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

/* ================================================================ 2. mode and algorithm */

/*
 * Where the built-in cells the matcher compares with come from.  They are
 * made from .cell text by frontend/'s parser, which this stage (below api/)
 * must not call: api/, which sits above both, hands the maker down
 * (rnnc_cell_builtin) before it opens the backend.  Thread-safe; a later
 * call replaces the maker.
 */
typedef rnnc_status (*fb_cell_source)(rnnc_cell **out, const char *name, const char *attrs);
void fb_rnn_set_cell_source(fb_cell_source make);

/*
 * The cuDNN mode that computes the spec's cell: fn[0] is compared with the
 * built-in lstm, gru, rnn_tanh, rnn_relu and dropout_lstm (from the cell
 * source; RNNC_ERR_INTERNAL while there is none), each specialised as the
 * model API does.  *dropout is the inter-layer dropout probability
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

/* ================================================================ 3. the backend */

/* The cudnn backend (RNNC_HAVE_CUDNN). */
extern const rt_backend fb_backend_cudnn;

#ifdef FB_HAVE_CUDNN_H

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

#endif /* RNNC_FB_RNN_H */
