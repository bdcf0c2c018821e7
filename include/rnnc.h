/*
 * rnnc.h: the one public header of rnnc, a JIT-specialising compiler for
 * recurrent neural network cells.
 *
 * Conventions (as in cuDNN and zstd):
 *  - opaque handles with create/destroy pairs; destroy accepts NULL;
 *  - every action returns an rnnc_status; predicates return bool;
 *  - rnnc_last_error() holds the detail of the last failure on this thread;
 *    like errno, it is meaningful only right after a call that failed (a
 *    call that succeeds may leave an older detail there): test the status;
 *  - the library never exits or aborts on a user's error.
 */
#ifndef RNNC_H
#define RNNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility: what this header declares is
 * its whole exported surface, and nothing internal leaks into librnnc.so. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define RNNC_VERSION_MAJOR 0
#define RNNC_VERSION_MINOR 1
#define RNNC_VERSION_PATCH 0

/* ---------------------------------------------------------------- status */

/* Pinned values: never renumber, only append. */
typedef enum rnnc_status {
    RNNC_OK = 0,
    RNNC_ERR_INVALID_ARG = 1,   /* a NULL, a negative size, a bad option */
    RNNC_ERR_OUT_OF_MEMORY = 2, /* host or device allocation failed */
    RNNC_ERR_PARSE = 3,         /* .cell text is malformed */
    RNNC_ERR_SHAPE = 4,         /* shapes do not agree */
    RNNC_ERR_IO = 5,            /* a file cannot be read or written */
    RNNC_ERR_FORMAT = 6,        /* a file is not what it claims (safetensors, cache, bundle) */
    RNNC_ERR_UNSUPPORTED = 7,   /* valid, but this backend cannot run it */
    RNNC_ERR_NOT_BUILT = 8,     /* the backend was switched off at build time */
    RNNC_ERR_NO_DEVICE = 9,     /* no GPU, no driver, or no NVRTC */
    RNNC_ERR_CUDA = 10,         /* the CUDA driver reported an error */
    RNNC_ERR_NVRTC = 11,        /* run-time compilation failed */
    RNNC_ERR_CUDNN = 12,        /* cuDNN reported an error */
    RNNC_ERR_LLVM = 13,         /* LLVM verification or JIT failed */
    RNNC_ERR_NOT_FOUND = 14,    /* a named cell, tensor or weight is missing */
    RNNC_ERR_STATE = 15,        /* call order, e.g. backward after an inference forward */
    RNNC_ERR_INTERNAL = 16      /* a broken invariant inside rnnc: please report */
} rnnc_status;

const char *rnnc_status_string(rnnc_status s);
/* Detail of the last failure on the calling thread ("" if none yet).  Like
 * errno it is meaningful only after a call that returned an error: each
 * failure replaces it with its own detail, and a successful call does not
 * clear it (rnnc tries alternatives inside, e.g. AUTO's backends, and may
 * leave the detail of one it passed over).  Decide by the status. */
const char *rnnc_last_error(void);
const char *rnnc_version_string(void);

/* ---------------------------------------------------------------- cells */

/*
 * A cell is one time step, built as a graph over per-batch-row values.
 * Shapes are written with the symbols I (input size), H (hidden size) and
 * P (projection size; equal to H when the model has no projection), e.g.
 * "4H", "I", "H+I", "2*H", "1".  Values refer to nodes by handle.
 */
typedef struct rnnc_cell rnnc_cell;
typedef int32_t rnnc_value; /* a node of a cell; negative means none */

#define RNNC_NONE ((rnnc_value)-1)

rnnc_status rnnc_cell_create(rnnc_cell **out, const char *name);
void rnnc_cell_destroy(rnnc_cell *cell);
rnnc_status rnnc_cell_clone(rnnc_cell **out, const rnnc_cell *cell);
const char *rnnc_cell_name(const rnnc_cell *cell);

/* Declarations.  `dim` strings use I, H, P as above. */
rnnc_status rnnc_cell_input(rnnc_cell *c, const char *name, const char *dim, rnnc_value *out);
rnnc_status rnnc_cell_state(rnnc_cell *c, const char *name, const char *dim, rnnc_value *out);
/* A matrix parameter [rows, cols] (used by linear) or a vector [n] (rows NULL). */
rnnc_status rnnc_cell_param(rnnc_cell *c, const char *name, const char *rows, const char *cols,
                            rnnc_value *out);
/* An optional parameter exists only when every symbol of its shape has a size:
 * P has one only when the model's proj_size > 0.  Absent, it acts as the
 * identity of the op that uses it (linear(x, W) = x, x + b = x, x * g = x). */
rnnc_status rnnc_cell_param_optional(rnnc_cell *c, const char *name, const char *rows,
                                     const char *cols, rnnc_value *out);
rnnc_status rnnc_cell_const(rnnc_cell *c, double v, rnnc_value *out);

/* Ops.  Binary ops broadcast a feature size of 1, a vector or a scalar. */
rnnc_status rnnc_linear(rnnc_cell *c, rnnc_value x, rnnc_value w, rnnc_value *out); /* x @ W^T */
rnnc_status rnnc_add(rnnc_cell *c, rnnc_value a, rnnc_value b, rnnc_value *out);
rnnc_status rnnc_sub(rnnc_cell *c, rnnc_value a, rnnc_value b, rnnc_value *out);
rnnc_status rnnc_mul(rnnc_cell *c, rnnc_value a, rnnc_value b, rnnc_value *out);
rnnc_status rnnc_div(rnnc_cell *c, rnnc_value a, rnnc_value b, rnnc_value *out);
rnnc_status rnnc_neg(rnnc_cell *c, rnnc_value a, rnnc_value *out);
rnnc_status rnnc_sigmoid(rnnc_cell *c, rnnc_value a, rnnc_value *out);
rnnc_status rnnc_tanh(rnnc_cell *c, rnnc_value a, rnnc_value *out);
rnnc_status rnnc_relu(rnnc_cell *c, rnnc_value a, rnnc_value *out);
rnnc_status rnnc_exp(rnnc_cell *c, rnnc_value a, rnnc_value *out);
rnnc_status rnnc_log(rnnc_cell *c, rnnc_value a, rnnc_value *out);
rnnc_status rnnc_sqrt(rnnc_cell *c, rnnc_value a, rnnc_value *out);
rnnc_status rnnc_rsqrt(rnnc_cell *c, rnnc_value a, rnnc_value *out);
/* Piece `index` of `parts` equal pieces of the feature axis. */
rnnc_status rnnc_chunk(rnnc_cell *c, rnnc_value x, int parts, int index, rnnc_value *out);
rnnc_status rnnc_concat(rnnc_cell *c, rnnc_value a, rnnc_value b, rnnc_value *out);
/* Over the feature axis; gamma and beta may be RNNC_NONE. */
rnnc_status rnnc_layernorm(rnnc_cell *c, rnnc_value x, double eps, rnnc_value gamma,
                           rnnc_value beta, rnnc_value *out);
rnnc_status rnnc_sum(rnnc_cell *c, rnnc_value x, rnnc_value *out);  /* [B,n] -> [B,1] */
rnnc_status rnnc_mean(rnnc_cell *c, rnnc_value x, rnnc_value *out); /* [B,n] -> [B,1] */
/* Inverted dropout with probability p, active in training only. */
rnnc_status rnnc_dropout(rnnc_cell *c, rnnc_value x, double p, rnnc_value *out);

/* The step's results. */
rnnc_status rnnc_cell_set_next(rnnc_cell *c, rnnc_value state, rnnc_value next);
rnnc_status rnnc_cell_set_output(rnnc_cell *c, rnnc_value out);
/* Checks the cell is complete and well-shaped (done by every consumer too). */
rnnc_status rnnc_cell_verify(const rnnc_cell *c);

/* Introspection. */
int rnnc_cell_state_count(const rnnc_cell *c);
const char *rnnc_cell_state_name(const rnnc_cell *c, int i);
int rnnc_cell_param_count(const rnnc_cell *c);
const char *rnnc_cell_param_name(const rnnc_cell *c, int i);

/* The .cell text format (docs/cell-format.md).  `attrs` overrides the file's
 * `attr` defaults, e.g. "eps=0" (NULL for none).  `cell_name` picks a cell
 * from a file holding several (NULL: the first).  `file_label` is used in
 * error messages (file:line:col). */
rnnc_status rnnc_cell_parse(rnnc_cell **out, const char *text, size_t len, const char *file_label,
                            const char *cell_name, const char *attrs);
rnnc_status rnnc_cell_load_file(rnnc_cell **out, const char *path, const char *cell_name,
                                const char *attrs);
/* Built-in cells: lstm, gru, rnn_tanh, rnn_relu, layernorm_lstm, milstm,
 * peephole_lstm, dropout_lstm (premul and premul_bias are lstm with a hoist
 * setting; see rnnc_model_desc). */
rnnc_status rnnc_cell_builtin(rnnc_cell **out, const char *name, const char *attrs);
/* NULL-terminated list of built-in names. */
const char *const *rnnc_cell_builtin_names(void);
/* Either a built-in name or a path ending in .cell. */
rnnc_status rnnc_cell_load(rnnc_cell **out, const char *name_or_path, const char *attrs);
/* Canonical .cell text of the cell; caller frees with rnnc_free(). */
rnnc_status rnnc_cell_print(const rnnc_cell *c, char **text);
bool rnnc_cell_equal(const rnnc_cell *a, const rnnc_cell *b);

/* Stage dumps: "ir", "opt", "schedule", "cuda", "llvm", "backward" (the
 * backward step of the optimised cell), "train" (the fused backward's split
 * and the CUDA source of its kernels).  The model-level dims are needed
 * for "schedule", "cuda", "llvm" and "train".  Caller frees with rnnc_free(). */
rnnc_status rnnc_cell_dump(const rnnc_cell *c, const char *stage, int64_t input_size,
                           int64_t hidden_size, int64_t proj_size, int64_t batch, int hoist,
                           char **text);

void rnnc_free(void *p);

/* ---------------------------------------------------------------- tensors */

typedef enum rnnc_dtype {
    RNNC_F32 = 0,
    RNNC_F16 = 1,
    RNNC_F64 = 2,
    RNNC_I64 = 3,
    RNNC_I32 = 4,
    RNNC_BF16 = 5
} rnnc_dtype;

size_t rnnc_dtype_size(rnnc_dtype t);
const char *rnnc_dtype_name(rnnc_dtype t);
/* Converts n floating-point values (F32, F16, BF16, F64) from src_type to
 * dst_type, rounding to nearest even; RNNC_ERR_INVALID_ARG for another dtype. */
rnnc_status rnnc_convert(void *dst, rnnc_dtype dst_type, const void *src, rnnc_dtype src_type,
                         int64_t n);

#define RNNC_MAX_RANK 8

/* A host tensor, row-major and contiguous. */
typedef struct rnnc_tensor {
    rnnc_dtype dtype;
    int rank;
    int64_t shape[RNNC_MAX_RANK];
    void *data;
} rnnc_tensor;

int64_t rnnc_tensor_numel(const rnnc_tensor *t);

/* A set of named host tensors, as held by a safetensors file. */
typedef struct rnnc_tensors rnnc_tensors;

rnnc_status rnnc_tensors_create(rnnc_tensors **out);
void rnnc_tensors_destroy(rnnc_tensors *ts);
/* Reads a whole safetensors file; every header field is checked. */
rnnc_status rnnc_tensors_load(rnnc_tensors **out, const char *path);
/* Writes to a temporary file and renames it into place: never a partial file. */
rnnc_status rnnc_tensors_save(const rnnc_tensors *ts, const char *path);
/* Copies `data`; shape has `rank` dims. */
rnnc_status rnnc_tensors_add(rnnc_tensors *ts, const char *name, rnnc_dtype dtype, int rank,
                             const int64_t *shape, const void *data);
/* The tensor or NULL; the pointer lives as long as `ts`. */
const rnnc_tensor *rnnc_tensors_get(const rnnc_tensors *ts, const char *name);
int rnnc_tensors_count(const rnnc_tensors *ts);
const char *rnnc_tensors_name(const rnnc_tensors *ts, int i);

/* ---------------------------------------------------------------- models */

typedef enum rnnc_backend {
    RNNC_BACKEND_AUTO = 0, /* per call: the first of fused, cudnn, cpu, interp that can run it
                            * (a training forward: first one that can also run its backward);
                            * cudnn before fused where it was faster for the shape, timed once
                            * and recorded (RNNC_AUTOTUNE=0: no timing), or where the fused
                            * kernels would take batch passes */
    RNNC_BACKEND_INTERP = 1,
    RNNC_BACKEND_CPU = 2,
    RNNC_BACKEND_FUSED = 3,
    RNNC_BACKEND_CUDNN = 4
} rnnc_backend;

const char *rnnc_backend_name(rnnc_backend b);
rnnc_status rnnc_backend_from_name(const char *name, rnnc_backend *out);
/* Built into this library and usable on this machine now (device present). */
bool rnnc_backend_available(rnnc_backend b);
/* Whether this build of rnnc holds backend `b` at all (CMake's RNNC_WITH_*
 * options), whether or not this machine can run it. */
bool rnnc_backend_built(rnnc_backend b);

/* How much of the state-independent work leaves the time loop. */
typedef enum rnnc_hoist {
    RNNC_HOIST_ALL = 0,    /* everything (PyTorch fastrnns' premul_bias) */
    RNNC_HOIST_MATMUL = 1, /* only x @ W^T products (premul) */
    RNNC_HOIST_NONE = 2    /* nothing (the plain scripted LSTM) */
} rnnc_hoist;

typedef enum rnnc_math {
    RNNC_MATH_FFMA = 0, /* fp32 with FMA only: PyTorch with allow_tf32 off */
    RNNC_MATH_TF32 = 1, /* tensor cores with TF32 allowed: operands rounded to TF32 */
    RNNC_MATH_3XTF32 = 2 /* fp32 models: tensor cores, each operand split into a high and a
                            low TF32 part and three products summed (about fp32 accuracy);
                            cudnn runs it as FFMA (it has no such mode) */
} rnnc_math;

/* "ffma", "tf32", "3xtf32". */
const char *rnnc_math_name(rnnc_math m);
rnnc_status rnnc_math_from_name(const char *name, rnnc_math *out);

/* rnnc_cell_dump with everything the "cuda" stage specialises on: the
 * model's math mode and dtype (F32, F16, BF16), the GPU architecture
 * (e.g. 80 for sm_80; 0: 90) and the step kernel's tuning, in the text
 * the autotuner logs ("ut=0 bt=32 nt=512", then " rr=R bb=S", " ex=N" and
 * " op=1" where set) or any of those fields in any order, each once
 * ("nt=512 op=1"; fields left out or 0, and NULL, the generator's own
 * choice).  A zeroed desc plus the
 * sizes is rnnc_cell_dump's FFMA fp32 sm_90 dump. */
typedef struct rnnc_dump_desc {
    int64_t input_size, hidden_size, proj_size, batch;
    rnnc_hoist hoist;
    rnnc_math math;
    rnnc_dtype dtype;
    int sm;
    const char *tuning;
} rnnc_dump_desc;
rnnc_status rnnc_cell_dump_desc(const rnnc_cell *c, const char *stage, const rnnc_dump_desc *d,
                                char **text);

typedef struct rnnc_model rnnc_model;

/* cuDNN's RNN algorithms (the cudnn backend; docs/cudnn.md says which
 * shapes each accepts).  AUTO times the eligible ones once per shape and
 * records the winner like the fused autotuning (RNNC_AUTOTUNE=0: cuDNN's
 * documented limits pick one without timing). */
typedef enum rnnc_cudnn_algo {
    RNNC_CUDNN_ALGO_AUTO = 0,
    RNNC_CUDNN_ALGO_STANDARD = 1,
    RNNC_CUDNN_ALGO_PERSIST_STATIC = 2,
    RNNC_CUDNN_ALGO_PERSIST_STATIC_SMALL_H = 3,
    RNNC_CUDNN_ALGO_PERSIST_DYNAMIC = 4
} rnnc_cudnn_algo;

/* "auto", "standard", "persist_static", "persist_static_small_h", "persist_dynamic". */
const char *rnnc_cudnn_algo_name(rnnc_cudnn_algo a);
rnnc_status rnnc_cudnn_algo_from_name(const char *name, rnnc_cudnn_algo *out);

typedef struct rnnc_model_desc {
    const rnnc_cell *cell; /* copied by rnnc_model_create */
    int64_t input_size;
    int64_t hidden_size;
    int64_t proj_size; /* 0: none */
    int num_layers;    /* >= 1 */
    bool bidirectional;
    bool batch_first; /* x and y are [B, T, *]; states never are */
    double dropout;   /* between layers, training only */
    uint64_t seed;    /* Philox seed for dropout */
    rnnc_dtype dtype; /* F32 (default); F16 on fused, cudnn, cpu, interp; BF16 on fused,
                         cpu, interp (weights rounded to the dtype, fp32 compute, outputs
                         rounded; fused keeps x, y and weights in 16 bits; training of a
                         half model: cudnn f16 only) */
    rnnc_math math;
    rnnc_backend backend;
    rnnc_hoist hoist;
    int device; /* CUDA ordinal */
    bool no_bias; /* PyTorch's bias=False: the cell's optional bias_* params are absent */
    rnnc_cudnn_algo cudnn_algo; /* the cudnn backend's algorithm (AUTO by default) */
} rnnc_model_desc;

/* Fills the defaults: 1 layer, F32, FFMA, AUTO, HOIST_ALL, device 0. */
void rnnc_model_desc_init(rnnc_model_desc *d);

rnnc_status rnnc_model_create(rnnc_model **out, const rnnc_model_desc *d);
void rnnc_model_destroy(rnnc_model *m);
/* The backend that ran the model's last call; before the first call, the one
 * AUTO opened first.  An AUTO model picks per call (lengths, training, a shape
 * one backend refuses or another runs faster), so this can change from call
 * to call. */
rnnc_backend rnnc_model_backend(const rnnc_model *m);

/* Weights, by PyTorch's state_dict names: `<param>_l<k>` and `<param>_l<k>_reverse`.
 * Every present parameter must be given exactly once; extra names are an error. */
rnnc_status rnnc_model_load_weights(rnnc_model *m, const char *safetensors_path);
rnnc_status rnnc_model_set_weights(rnnc_model *m, const rnnc_tensors *ts);
/* The same from a whole model's state_dict, whose RNN is one sub-module:
 * only the names that start with `prefix` (e.g. "encoder.lstm.") are read,
 * with the prefix taken off, and must be exactly the model's weights; the
 * names outside it (`fc.weight`, ...) are ignored and *ignored (may be NULL)
 * gets how many.  prefix NULL or "" is rnnc_model_load_weights. */
rnnc_status rnnc_model_load_weights_prefix(rnnc_model *m, const char *safetensors_path,
                                           const char *prefix, int *ignored);
rnnc_status rnnc_model_set_weights_prefix(rnnc_model *m, const rnnc_tensors *ts,
                                          const char *prefix, int *ignored);
/* One weight from host memory (fp32), `count` elements, by state_dict name. */
rnnc_status rnnc_model_set_weight(rnnc_model *m, const char *name, const float *data,
                                  int64_t count);
/* The same from device memory (fp32, on the model's device; a GPU backend):
 * read on the default stream once the call returns. */
rnnc_status rnnc_model_set_weight_device(rnnc_model *m, const char *name, const void *data,
                                         int64_t count);
/*
 * One flat device weight buffer in cuDNN's layout (cudnn backend): *bytes is
 * its size and offsets[i] (NULL: not wanted; else rnnc_model_weight_count
 * entries) the byte offset of weight i, which lies there contiguous, in the
 * model's dtype and PyTorch's shape (as PyTorch's flatten_parameters makes it).
 * The offsets are where cuDNN itself places each matrix and bias
 * (cudnnGetRNNWeightParams): every layer's matrices come before all the
 * biases, so read them from here rather than summing sizes.
 */
rnnc_status rnnc_model_weight_buffer(const rnnc_model *m, size_t *bytes, size_t *offsets);
/*
 * Binds the model to caller-owned device buffers of that layout and size:
 * every forward reads `weights` as it is then (an optimiser updates it in
 * place; no copy is made), and every backward writes the weight gradients to
 * `grads` (may be NULL: kept inside), overwriting them.  Host weights set
 * before are ignored from now on; rnnc_model_set_weight* is refused while
 * bound.  weights NULL unbinds (the model keeps a copy of the buffer's
 * contents then, as if set with rnnc_model_set_weight).
 */
rnnc_status rnnc_model_bind_weight_buffer(rnnc_model *m, void *weights, void *grads,
                                          size_t bytes);
/* Name, rank and shape of the i-th weight the model expects (0 <= i <
 * rnnc_model_weight_count): *name (NULL: not wanted) stays valid while m
 * lives, shape[0..rank) gets up to `rank` dims, *out_rank the weight's rank
 * (1 or 2).  Any pointer may be NULL. */
int rnnc_model_weight_count(const rnnc_model *m);
rnnc_status rnnc_model_weight_info(const rnnc_model *m, int i, const char **name, int rank,
                                   int64_t *shape, int *out_rank);

/*
 * One forward over a whole sequence.  Shapes (Hout = P if proj_size else H,
 * D = 2 if bidirectional):
 *   x       [T, B, I] ([B, T, I] with batch_first)
 *   init[s] [L*D, B, n_s] for state s in the cell's order; NULL = zeros
 *   lengths [B] on the host, each in [1, T]; NULL = all T
 *   y       [T, B, D*Hout]
 *   final[s] [L*D, B, n_s]; NULL = not wanted
 * Pointers are host memory unless `device_pointers`, then device memory on
 * the model's device (PyTorch tensors work as they are); a device backend
 * given host pointers copies through the device.
 */
typedef struct rnnc_forward_args {
    int64_t seq_len;
    int64_t batch;
    const void *x;
    const void *const *init; /* array of rnnc_cell_state_count entries, or NULL */
    const int64_t *lengths;
    void *y;
    void *const *final; /* array of rnnc_cell_state_count entries, or NULL */
    bool training;
    bool device_pointers;
    void *stream; /* CUstream; NULL = the default stream */
    /*
     * Packed input (torch.nn.utils.rnn.PackedSequence), host memory: with
     * batch_sizes [T] (non-increasing, batch_sizes[0] = B) x is
     * [sum(batch_sizes), I] and y [sum(batch_sizes), D*Hout], step t's rows
     * following step t-1's, batch_first ignored; lengths must be NULL.
     */
    const int64_t *batch_sizes;
} rnnc_forward_args;

rnnc_status rnnc_model_forward(rnnc_model *m, const rnnc_forward_args *a);

/*
 * The Philox seed of the dropout masks (between layers and the cell's own
 * dropout ops) from the next training forward on; until then the one in
 * rnnc_model_desc.  A backward keeps the masks of its forward.  A training
 * loop that sets a new seed before each step draws fresh masks each step,
 * still reproducibly.  cudnn draws from a dropout state of its own, seeded
 * once from the model's seed at creation, and ignores it.
 */
rnnc_status rnnc_model_set_seed(rnnc_model *m, uint64_t seed);

/*
 * Backward (cudnn, fused and interp backends; others: RNNC_ERR_UNSUPPORTED): after
 * a training forward with the same shapes, once per forward (else
 * RNNC_ERR_STATE).  dy [T,B,D*Hout] (packed like y when the forward was);
 * dfinal[s] gradients of the final states (NULL = zero); gives dx (packed
 * like x), dinit[s] (NULL = not wanted) and weight gradients, which are
 * read with rnnc_model_weight_grad after the call (accumulated from zero).
 * With device pointers the forward's x, y and init buffers must stay alive
 * and unchanged until this call: cudnn reads them again.
 */
typedef struct rnnc_backward_args {
    const void *dy;
    const void *const *dfinal;
    void *dx;
    void *const *dinit;
} rnnc_backward_args;

rnnc_status rnnc_model_backward(rnnc_model *m, const rnnc_backward_args *a);
/* Copies the gradient of a weight (by state_dict name) to host memory. */
rnnc_status rnnc_model_weight_grad(rnnc_model *m, const char *name, float *out, int64_t count);

/* The algorithm a cudnn model's last forward ran (AUTO resolved; AUTO before
 * the first forward); RNNC_ERR_UNSUPPORTED for other backends. */
rnnc_status rnnc_model_cudnn_algo(const rnnc_model *m, rnnc_cudnn_algo *out);

/* Median forward time in milliseconds over `iters` runs after `warmup`
 * (CUDA events on a GPU, a monotonic clock on the CPU), on the buffers of `a`. */
rnnc_status rnnc_model_time_forward(rnnc_model *m, const rnnc_forward_args *a, int warmup,
                                    int iters, double *median_ms);
/* Median time in milliseconds of one training step: a training forward
 * (f->training must be set) followed by its backward with `b`, over
 * `iters` runs after `warmup`.  cudnn times its kernels alone with CUDA
 * events on device buffers staged once; the interp backend the host clock.
 * Leaves the last run's outputs and gradients, as forward plus backward. */
rnnc_status rnnc_model_time_training(rnnc_model *m, const rnnc_forward_args *f,
                                     const rnnc_backward_args *b, int warmup, int iters,
                                     double *median_ms);

/* Feature sizes of a model's tensors, for callers that size buffers without
 * knowing the cell (e.g. the rnnc command): `hout` is Hout above (y has
 * D*hout features), `size` is n_s of the cell's state `state`. */
rnnc_status rnnc_model_output_size(const rnnc_model *m, int64_t *hout);
rnnc_status rnnc_model_state_size(const rnnc_model *m, int state, int64_t *size);

/*
 * Ahead-of-time bundles (docs/cache.md): a model's code in one file, made
 * ahead of time, so that a deployment compiles nothing.  Targets by name:
 * "sm_80", "sm_90", ... for the fused backend's kernels at each batch size
 * (made with NVRTC, no GPU; specialised to the devices' SM count: sm_count
 * 0 means 108 for sm_80, 132 for sm_90 and 148 for sm_100, other archs
 * must give it; the tuning is this machine's tuning record for the shape,
 * else the heuristic), and "cpu" (this machine's CPU and its features) or
 * "cpu:x86-64-v2", "cpu:x86-64-v3", "cpu:x86-64-v4" (any x86-64 CPU of
 * that level) for the cpu backend's code, which serves every batch size.
 * batches may be NULL with no sm target.  d->backend and d->device are not
 * used.
 */
rnnc_status rnnc_bundle_compile_targets(const rnnc_model_desc *d, const int64_t *batches,
                                        int n_batches, const char *const *targets,
                                        int n_targets, int sm_count, const char *path);
/* rnnc_bundle_compile_targets for archs given as sm numbers (80 for sm_80). */
rnnc_status rnnc_bundle_compile(const rnnc_model_desc *d, const int64_t *batches, int n_batches,
                                const int *archs, int n_archs, int sm_count, const char *path);
/* Registers a bundle for this process: fused models created afterwards take
 * their kernels and tuning from it and need no NVRTC; cpu models take the
 * code of a cpu target this machine runs and compile none.  A bundle of
 * another format or code generator version is refused (RNNC_ERR_FORMAT);
 * one for another arch is refused when a model is created without NVRTC. */
rnnc_status rnnc_bundle_load(const char *path);
/* Forgets every loaded bundle (kernels already loaded by models stay usable). */
void rnnc_bundle_unload_all(void);

/* ---------------------------------------------------------------- the kernel cache on disk */

/*
 * The disk cache of compiled kernels (docs/cache.md): $RNNC_CACHE_DIR, else
 * $XDG_CACHE_HOME/rnnc, else ~/.cache/rnnc; RNNC_CACHE=0 turns it off.  The
 * library fills and evicts it by itself; these calls look at it and empty
 * it.  With the cache off they succeed and say so (`enabled` false, nothing
 * listed, nothing removed).  A NULL out is RNNC_ERR_INVALID_ARG, except
 * for rnnc_cache_clear, which then only clears.
 */
#define RNNC_CACHE_PATH_MAX 4096

typedef struct rnnc_cache_summary {
    bool enabled;                        /* false: RNNC_CACHE=0, or no HOME */
    char directory[RNNC_CACHE_PATH_MAX]; /* the cache's root; "" when off */
    uint64_t kernels;                    /* kernel entries */
    uint64_t kernel_bytes;
    uint64_t limit_bytes;                /* RNNC_CACHE_MAX_MB; least recently used go first */
    uint64_t tuning_records;             /* autotuning records */
    int entry_format;                    /* the entry layout this library reads and writes */
    int codegen_version;                 /* part of every key: a new generator misses old entries */
    bool nvrtc;                          /* NVRTC is loadable; then its version: */
    int nvrtc_major, nvrtc_minor;
} rnnc_cache_summary;

rnnc_status rnnc_cache_info(rnnc_cache_summary *out);

/* One kernel entry.  A damaged entry is listed with valid false (sm 0,
 * kernel ""): the next use recompiles and replaces it. */
typedef struct rnnc_cache_entry {
    char key[64];       /* its file name: 32 hex digits of the key, then ".cubin" */
    int sm;             /* the arch it was compiled for (80: sm_80; 0: the cpu backend's host object) */
    uint64_t bytes;     /* on disk, header included */
    int64_t last_used;  /* seconds since 1970 (reads touch an entry) */
    char kernel[56];    /* the name of its kernel set */
    bool valid;
} rnnc_cache_entry;

/* The kernel entries at one moment, most recently used first. */
typedef struct rnnc_cache_entries rnnc_cache_entries;

rnnc_status rnnc_cache_list(rnnc_cache_entries **out);
void rnnc_cache_entries_destroy(rnnc_cache_entries *l);
size_t rnnc_cache_entries_count(const rnnc_cache_entries *l);
/* Entry i (< count), or NULL; it lives as long as the list. */
const rnnc_cache_entry *rnnc_cache_entries_get(const rnnc_cache_entries *l, size_t i);
/* The sum of the listed entries' bytes. */
uint64_t rnnc_cache_entries_bytes(const rnnc_cache_entries *l);
/* The directory the entries are in (<root>/kernels), or NULL when the cache is off. */
const char *rnnc_cache_entries_directory(const rnnc_cache_entries *l);

/* What rnnc_cache_clear removed: every kernel entry and tuning record
 * (temp files a writer left behind go too, uncounted; a fresh one, whose
 * writer may be alive, stays). */
typedef struct rnnc_cache_cleared {
    bool enabled;                        /* as rnnc_cache_summary */
    char directory[RNNC_CACHE_PATH_MAX];
    uint64_t files;
    uint64_t bytes;
} rnnc_cache_cleared;

rnnc_status rnnc_cache_clear(rnnc_cache_cleared *out);

/* ---------------------------------------------------------------- convolution (rnnc_conv) */

/*
 * Convolution on cuDNN 9 (docs/conv.md): forward, backward data, backward
 * filter, transposed, and y = act(alpha1 * conv(x) + alpha2 * z + bias)
 * fused through cuDNN's graph API.  1, 2 or 3 spatial dims; stride,
 * padding, dilation, groups; NCHW or NHWC; f32, f16, bf16 (computing in
 * fp32).  Buffers are device pointers on the caller's stream (NULL: the
 * default stream).  Needs a build with cuDNN (RNNC_ERR_NOT_BUILT) and a GPU
 * with cuDNN 9 loadable at run time (RNNC_ERR_NO_DEVICE, with the reason).
 *
 * Shapes (rnnc_conv_shapes) in the layout's order, S = spatial sizes:
 *   NCHW: x [N, C, S...], w [K, C/groups, R...], y [N, K, P...]
 *   NHWC: x [N, S..., C], w [K, R..., C/groups], y [N, P..., K]
 * with P = (S + 2*pad - dilation*(R-1) - 1) / stride + 1.
 */
typedef enum rnnc_conv_layout {
    RNNC_CONV_NCHW = 0, /* channels first */
    RNNC_CONV_NHWC = 1  /* channels last */
} rnnc_conv_layout;

typedef enum rnnc_conv_algo_mode {
    RNNC_CONV_HEURISTIC = 0, /* cuDNN's heuristic order; the first candidate that runs */
    RNNC_CONV_BENCHMARK = 1  /* every candidate timed on the real buffers, once per key */
} rnnc_conv_algo_mode;

typedef enum rnnc_conv_pass {
    RNNC_CONV_FORWARD = 0,
    RNNC_CONV_BACKWARD_DATA = 1,   /* also the transposed convolution's forward */
    RNNC_CONV_BACKWARD_FILTER = 2,
    RNNC_CONV_FUSED = 3
} rnnc_conv_pass;

#define RNNC_CONV_MAX_DIMS 3

typedef struct rnnc_conv_desc {
    int spatial_dims;              /* 1, 2 or 3 */
    int64_t batch;                 /* N */
    int64_t in_channels;           /* C */
    int64_t out_channels;          /* K */
    int64_t input[RNNC_CONV_MAX_DIMS];  /* spatial sizes, outermost first (D, H, W) */
    int64_t kernel[RNNC_CONV_MAX_DIMS];
    int64_t stride[RNNC_CONV_MAX_DIMS];
    int64_t padding[RNNC_CONV_MAX_DIMS]; /* the same on both sides */
    int64_t dilation[RNNC_CONV_MAX_DIMS];
    int64_t groups;                /* divides C and K; C for depthwise */
    rnnc_conv_layout layout;       /* of x, w and y alike */
    rnnc_dtype dtype;              /* RNNC_F32, RNNC_F16, RNNC_BF16 */
    rnnc_math math;                /* f32: FFMA only, or TF32 tensor cores allowed */
    rnnc_conv_algo_mode algo_mode;
    bool deterministic;            /* only algorithms cuDNN marks deterministic */
    int device;
} rnnc_conv_desc;

/* Defaults: 2-D, stride 1, padding 0, dilation 1, groups 1, NCHW, F32,
 * FFMA, heuristic, not deterministic, device 0; sizes 0 (to be set). */
void rnnc_conv_desc_init(rnnc_conv_desc *d);

/* A checked convolution (host only: no device is needed to create one).
 * Bad sizes are RNNC_ERR_INVALID_ARG or RNNC_ERR_SHAPE naming them. */
typedef struct rnnc_conv rnnc_conv;
rnnc_status rnnc_conv_create(rnnc_conv **out, const rnnc_conv_desc *d);
void rnnc_conv_destroy(rnnc_conv *c);
const rnnc_conv_desc *rnnc_conv_get_desc(const rnnc_conv *c);
/* Shapes of x, w and y as above; *rank = 2 + spatial_dims. */
void rnnc_conv_shapes(const rnnc_conv *c, int64_t x[5], int64_t w[5], int64_t y[5], int *rank);
/* Element counts of x, w and y (any may be NULL). */
void rnnc_conv_numels(const rnnc_conv *c, int64_t *x, int64_t *w, int64_t *y);

/* One cuDNN handle on one device with its workspace and the fused path's
 * execution plans (an LRU).  Use a handle from one thread at a time. */
typedef struct rnnc_conv_handle rnnc_conv_handle;
rnnc_status rnnc_conv_handle_create(rnnc_conv_handle **out, int device);
void rnnc_conv_handle_destroy(rnnc_conv_handle *h);
/* Execution plans kept (default 64); the least recently used is dropped. */
rnnc_status rnnc_conv_handle_set_plan_cache(rnnc_conv_handle *h, int capacity);
int rnnc_conv_handle_plan_count(const rnnc_conv_handle *h);
/* What the last call on h ran, e.g. "fwd IMPLICIT_PRECOMP_GEMM (fma, ws 0 B)". */
const char *rnnc_conv_handle_last_algo(const rnnc_conv_handle *h);

rnnc_status rnnc_conv_forward(rnnc_conv_handle *h, const rnnc_conv *c, const void *x,
                              const void *w, void *y, void *stream);
/* dx from dy (shape of y) and w. */
rnnc_status rnnc_conv_backward_data(rnnc_conv_handle *h, const rnnc_conv *c, const void *dy,
                                    const void *w, void *dx, void *stream);
/* dw from x and dy (overwritten, not accumulated). */
rnnc_status rnnc_conv_backward_filter(rnnc_conv_handle *h, const rnnc_conv *c, const void *x,
                                      const void *dy, void *dw, void *stream);
/* The transposed convolution of c: in has c's y shape, out has c's x shape
 * (backward data run as a forward; w as for c). */
rnnc_status rnnc_conv_transposed(rnnc_conv_handle *h, const rnnc_conv *c, const void *in,
                                 const void *w, void *out, void *stream);

/* y = act(alpha1 * conv(x) + alpha2 * z + bias); z (y's shape) and bias ([K])
 * may be NULL; act is ReLU or identity. */
typedef struct rnnc_conv_epilogue {
    float alpha1, alpha2;
    const void *z;
    const void *bias;
    bool relu;
    bool unfused; /* run conv, add, add, relu as separate cuDNN calls */
} rnnc_conv_epilogue;
void rnnc_conv_epilogue_init(rnnc_conv_epilogue *e); /* alpha1 1, alpha2 1, relu, fused */
/* The graph path first; where no engine supports the graph, the unfused
 * calls (rnnc_conv_handle_last_algo says which ran). */
rnnc_status rnnc_conv_fused(rnnc_conv_handle *h, const rnnc_conv *c, const rnnc_conv_epilogue *e,
                            const void *x, const void *w, void *y, void *stream);

/* Every algorithm cuDNN offers for a pass, timed once on the given buffers
 * (as for forward: a = x, b = w, out = y; backward data: dy, w, dx;
 * backward filter: x, dy, dw).  Fills up to max entries, fastest first. */
typedef struct rnnc_conv_algo_perf {
    char name[48];
    float ms;
    size_t workspace;
    bool deterministic;
    bool tensor_cores;
} rnnc_conv_algo_perf;
rnnc_status rnnc_conv_time_algos(rnnc_conv_handle *h, const rnnc_conv *c, rnnc_conv_pass pass,
                                 const void *a, const void *b, void *out,
                                 rnnc_conv_algo_perf *perf, int max, int *count);

/* The process-wide algorithm cache (keyed by every parameter that changes
 * the choice): its entry count, and emptying it. */
size_t rnnc_conv_algo_cache_size(void);
void rnnc_conv_algo_cache_clear(void);

/* Device memory for callers with no CUDA runtime of their own (examples,
 * the rnnc command).  rnnc_device_free accepts NULL. */
rnnc_status rnnc_device_alloc(int device, size_t bytes, void **ptr);
void rnnc_device_free(void *ptr);
rnnc_status rnnc_device_upload(void *dst, const void *src, size_t bytes);
rnnc_status rnnc_device_download(void *dst, const void *src, size_t bytes);
rnnc_status rnnc_device_sync(void *stream);

/* ---------------------------------------------------------------- Philox */

/* Philox4x32-10: the four 32-bit words of block `counter` under key `seed`.
 * Dropout draws its uniforms from this stream (docs/dropout.md). */
void rnnc_philox4x32_10(uint64_t seed, uint64_t counter_hi, uint64_t counter_lo, uint32_t out[4]);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* RNNC_H */
