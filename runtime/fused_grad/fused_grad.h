/*
 * fused_grad.h: training on the fused backend (docs/training.md, "The fused
 * backward").  The backward step of a cell (ir_autodiff) is split in three:
 *
 *  - the RECORD cell: the forward cell whose per-step output is widened to
 *    [y | next states | saved values], so one run of the forward generator
 *    keeps what the backward step reads;
 *  - the RECURRENCE cell: the backward step's state path (d_<state>), with
 *    linear_t(d, W) turned into linear(d, W^T) on a transposed copy of W,
 *    reading one input `bin` (the gathered dy, saved values and states of
 *    the step) and writing, per step, the row values the weight gradients
 *    and dx are made of.  It is compiled by the same forward generator and
 *    run in reverse time with W_hh^T resident on chip;
 *  - the POST ops: after the walk, dW += A^T B (outer), db += colsum(A)
 *    (rowsum) and dx += D W (linear_t) as GEMMs over all T*B rows;
 *  - where dx or a weight gradient's operand is row work on the layer
 *    input (a pre-LN layernorm's backward), the ROW cell: a stateless cell
 *    over [x | D] (D: the linear_t products it reads, made by post GEMMs)
 *    run once over all T*B rows before the other post ops.
 *
 * fused_grad_ir.c builds these, fused_grad_rows.c the row cell (no GPU
 * needed; CPU tests compile them with NVRTC); fused_grad_setup.c makes the split, kernel sets and weight
 * arenas; fused_grad.c and fused_grad_bwd.c run the forward that records,
 * the backward, the weight gradients and the timing; fused_backend.c is
 * rt_backend_fused, the forward of runtime/fused with this training.
 *
 * Uses: common, ir, codegen/cuda, runtime/fused and what it uses.
 */
#ifndef RNNC_FUSED_GRAD_H
#define RNNC_FUSED_GRAD_H

#include "runtime/fused/fused.h"

#define FG_MAX 64

/* Where a row operand of a post op lives: the layer input x, the gathered
 * step inputs G (= bin), the recurrence cell's output DG, x with the
 * cell's dropout of it applied (fg_kind.x_site; the side's xd), the
 * linear_t products the post GEMMs make for the row cell (D), or the row
 * cell's output (R). */
enum { FG_X = 0, FG_G = 1, FG_DG = 2, FG_XD = 3, FG_D = 4, FG_R = 5 };

typedef struct fg_operand {
    int where;
    int64_t off, cols; /* columns in that buffer */
} fg_operand;

/* A piece of G: one input of the backward step. */
typedef struct fg_piece {
    int src;          /* ir_grad_src */
    int32_t ref;      /* the forward state / node */
    int64_t off, cols; /* in G */
    int64_t rec_off;  /* DOUT: column in dy of the direction; else in the record */
    int64_t init_off; /* STATE: column in the packed initial states */
} fg_piece;

enum { FG_OUTER = 0, FG_ROWSUM = 1, FG_LINT = 2, FG_ROWDX = 3 };

/* One post op: dW[param] += a^T b (OUTER), db[param] += colsum(a)
 * (ROWSUM), dx += a W[wparam] (LINT, param = -1; through the mask of the
 * cell's dropout of x where `drop`: dx += mask(a W)), or D[:, d_off:] =
 * a W[wparam] where d_off >= 0 (a LINT the row cell reads); dx += a (ROWDX:
 * a term of dx the row cell made). */
typedef struct fg_op {
    int kind;
    int param, wparam;
    fg_operand a, b;
    bool drop;
    int64_t d_off;
} fg_op;

/* Everything about one layer kind (0: layer 0, 1: layers above). */
typedef struct fg_kind {
    ir_grad g;
    ir_fn *rec, *bwd;
    ir_schedule rec_sched, bwd_sched;
    int64_t rec_cols;                /* record row: [y | next states | saved] */
    int64_t next_off[FG_MAX];        /* of each state's next value */
    int64_t saved_off[FG_MAX];       /* of each g.saved node */
    int64_t init_off[FG_MAX], init_cols; /* packed initial states [B, init_cols] */
    fg_piece piece[FG_MAX];
    int n_pieces;
    int64_t g_cols, dg_cols;
    fg_op op[FG_MAX];
    int n_ops;
    /* The cell's dropout of its input, x's only reader (the forward's
     * kernels read x dropped, cg_cuda_plan.x_drop_site): its site and p;
     * x_site -1: none. */
    int x_site;
    double x_p;
    /* The row cell (fused_grad_rows.c): row work between the layer input
     * and the first GEMM (a pre-LN layernorm), differentiated.  Its inputs
     * are x and D (d_cols: the linear_t products it reads, which the post
     * GEMMs make), its outputs the rows R (row_cols) that weight gradients
     * (FG_R operands) and dx (ROWDX ops) read: node row_node[i] of `row`
     * (row_src[i] of the backward step) at column row_off[i].  NULL: none. */
    ir_fn *row;
    int32_t row_src[FG_MAX], row_node[FG_MAX];
    int64_t row_off[FG_MAX];
    int n_row;
    int64_t row_cols, d_cols;
    int n_fwd_params;                /* recurrence params past these are W^T of ... */
    int32_t t_of[FG_MAX];            /* ... forward param t_of[j - n_fwd_params] */
    int n_t;
} fg_kind;

/* The cell-independent kernels (fused_grad_kernels.c), in one source. */
#define FG_N_UTIL 7
enum {
    FG_K_GATHER = 0, FG_K_GEMM, FG_K_COLSUM, FG_K_COPY_COLS, FG_K_PERMUTE,
    FG_K_GEMM128_AM, FG_K_GEMM128_AK /* 128x128 tiles, A contiguous along m or along k */
};
extern const char fg_util_src[];
extern const char *const fg_util_names[FG_N_UTIL];

/* Builds kind k of a model (sizes s) from its optimised
 * forward cell f; RNNC_ERR_UNSUPPORTED says what the fused backward cannot
 * run yet (e.g. an input read both dropped, by one op, and otherwise).  A
 * half model trains in fp32 inside (fused_grad.c).  Schedules' memory
 * comes from `a`. */
rnnc_status fg_kind_build(const ir_fn *f, ir_sizes s, ir_arena *a, fg_kind *out);
void fg_kind_free(fg_kind *k);
/* Whether a width is a sum of H and P (the generator's slices tile it). */
bool fg_in_units(ir_dim d);
/* Whether forward node v of f is recomputed by the row cell rather than
 * recorded: a value of the input row alone (no state, linear or dropout
 * under it) that is not H and P wide (fused_grad_rows.c). */
bool fg_recomputed(const ir_fn *f, int32_t v);
/* Builds k->row from the backward step's nodes k->row_src (their columns
 * in R placed), the D leaves at d_off[v] (-1 elsewhere) and the forward f
 * (fused_grad_rows.c). */
rnnc_status fg_rows_build(const ir_fn *f, const int64_t *d_off, fg_kind *k);
/* Where a pseudo-layer's parameters of cell f lie in the host and plain
 * weight arenas: off[i] floats from the first, each 4-float aligned;
 * returns the floats of all. */
int64_t fg_param_offsets(const ir_fn *f, ir_sizes s, int64_t *off);
/* The row cell's kernel source (cg_cuda_rowcell_source) with its
 * parameters at param_off[p] floats into the weights it is given. */
rnnc_status fg_rows_source(const fg_kind *k, ir_sizes s, const int64_t *param_off, char **src,
                           unsigned *smem);
/* The recurrence cell's batch tile at `batch` (cg_cuda_config.batch_tile; 0:
 * the heuristic's). */
int fg_bwd_batch_tile(int64_t batch);
/* The fused backward of optimised cell f as text (`rnnc dump --stage train`):
 * the split and both cells' CUDA source for a training call at `batch` on
 * sm_`sm` in math mode `math` (rnnc_math), layer 0.  Generates only. */
rnnc_status fg_dump(const ir_fn *f, ir_sizes s, int64_t batch, int sm, int math, char **text);

#ifdef RT_HAVE_CUDA_H
/* The fused backend's training state (fused_grad.c); rt_fused.grad. */
typedef struct rt_fgrad rt_fgrad;
/* RNNC_OK when the fused backend can differentiate this model (builds
 * and caches the split and a trial generation); else UNSUPPORTED, why. */
rnnc_status rt_fgrad_check(rt_fused *m);
/* Keeps a host copy of the weights for the training kernels. */
rnnc_status rt_fgrad_bind(rt_fused *m, const rt_weights *w);
/* A training forward that records what the backward reads. */
rnnc_status rt_fgrad_forward(rt_fused *m, const rnnc_forward_args *a);
rnnc_status rt_fgrad_backward(void *state, const rnnc_backward_args *b);
rnnc_status rt_fgrad_weight_grad(void *state, int pseudo, int param, float *out, int64_t count);
rnnc_status rt_fgrad_can_train(void *state);
/* The recurrence's step kernels at `batch` take batch passes (analysed, not
 * generated; the answer kept for the batch). */
bool rt_fgrad_takes_passes(rt_fused *m, int64_t batch);
/* The training timer: forward and backward on device buffers, CUDA events. */
rnnc_status rt_fgrad_time_training(void *state, const rnnc_forward_args *f,
                                   const rnnc_backward_args *b, int warmup, int iters,
                                   double *median_ms);
void rt_fgrad_free(rt_fgrad *g);
/* An inference forward: the recorded one is gone. */
void rt_fgrad_forget(rt_fgrad *g);
#endif

/* ---------------------------------------------------------------- shared by fused_grad*.c */

#ifdef RT_HAVE_CUDA_H

typedef struct fg_buf {
    CUdeviceptr p;
    size_t n;
} fg_buf;

/* One generated kernel set (the record or the recurrence cell of a kind). */
typedef struct fg_set {
    char *src;
    cg_cuda_plan plan;
    rt_kernel kern;
    bool loaded;
} fg_set;

/* The scratch of one pseudo-layer's kernels.  The two directions of a
 * layer run side by side where the model's kernels are sized for half the
 * SMs (rt_fused.share), each on its stream with a side of its own. */
typedef struct fg_side {
    fg_buf st, hz, xb, part, bar, g, dg;
    fg_buf d, r; /* the row cell's input products and its output (fg_kind.row) */
    fg_buf xd; /* the layer input dropped by the cell (fg_kind.x_site), else unused */
} fg_side;

struct rt_fgrad {
    bool checked;
    rnnc_status status; /* of the check: RNNC_OK, or why the backward is refused */
    char why[512];
    ir_arena *arena;
    fg_kind kind[2];
    int n_kinds;
    int np, npar;          /* pseudo-layers, forward params */
    int sm_count;          /* of the device (the GEMMs' K split) */
    int sides;             /* 2: a layer's two directions side by side, on half the SMs each */
    /* host weights: [np * npar] blocks at hw_off (dw uses the same offsets) */
    float *hw;
    int64_t *hw_off, *hw_cnt, hw_floats;
    bool bound, arenas_ok;
    int64_t batch;         /* the kernel sets' batch (0: none) */
    int64_t passes_batch;  /* rt_fgrad_takes_passes's last batch (0: none), its answer */
    bool passes;
    fg_set rec[2], bwd[2];
    char *row_src[2];      /* a kind's row cell kernel (fg_kind.row), its shared memory */
    unsigned row_smem[2];
    rt_kernel row[2];
    rt_kernel util;
    bool util_loaded;
    int64_t rec_w[2], rec_f[2], bwd_w[2], bwd_f[2]; /* arena floats per pseudo-layer */
    CUdeviceptr rwts, rfold, bwts, bfold, plain, dw;
    int *desc[2];          /* gather descriptors (host), 5 ints a piece */
    fg_buf ddesc[2];
    /* the recorded forward */
    bool valid, has_len, have_grad, dw_host_valid;
    int64_t T, B;
    CUstream stream;
    bool dev;              /* the forward had device pointers */
    float *dw_host;
    fg_side side[2];
    fg_buf dlen, xt, tmp, recb, out, init, din, dxl;
    /* a half model's 16-bit staging of host buffers (fused_grad.c fg_edge):
     * h16_seq bytes of sequence, then stf states' floats per pseudo-layer */
    fg_buf h16;
    size_t h16_seq;
    int64_t stf;
    int *hlen;
    int64_t rec_stride; /* floats of a record row buffer's rows, every kind */
};

/* The stream of direction d's side: s itself where there is one side. */
CUstream fg_side_stream(const rt_fused *m, int d, CUstream s);
/* Pseudo-layer p's offset in an arena of n[kind] floats per pseudo-layer. */
int64_t fg_at(const rt_fgrad *g, int dirs, int p, const int64_t n[2]);
/* Generates and loads the kernel sets for `batch` and fills the arenas. */
rnnc_status fg_prepare(rt_fused *m, int64_t batch);
/* Grows b to n bytes (contents not kept). */
rnnc_status fg_grow(fg_buf *b, size_t n);
/* Launches a generated kernel set of pseudo-layer p as the fused forward
 * does, the cell's dropout ops drawing the training forward's masks. */
rnnc_status fg_launch_set(const rt_fused *m, fg_side *sd, const fg_set *set, int p,
                          CUdeviceptr x, CUdeviceptr y, CUdeviceptr wts, CUdeviceptr fold,
                          int rev, CUstream s);

/* Side sd's xd = pseudo-layer p's input x ([T*B, I] of kind k, time-major)
 * under the mask of the cell's dropout of it (fg_kind.x_site), as the
 * interpreter draws it (fused_grad.c). */
rnnc_status fg_drop_input(rt_fused *m, rt_fgrad *g, fg_side *sd, int k, int p, CUdeviceptr x,
                          CUstream s);
/* fused_grad.c, for fused_grad_bwd.c: device views and helpers. */
CUdeviceptr fg_rec_at(const rt_fgrad *g, int p);
CUdeviceptr fg_init_at(const rt_fgrad *g, int p);
CUdeviceptr fg_out_at(const rt_fused *m, const rt_fgrad *g, int l);
/* dst's columns = src's, or += where `add`. */
rnnc_status fg_copy_cols(rt_fgrad *g, CUdeviceptr dst, int ldd, CUdeviceptr src, int lds,
                         long long rows, int cols, bool add, CUstream s);
rnnc_status fg_gemm(rt_fgrad *g, CUdeviceptr C, int ldc, CUdeviceptr A, long long sam,
                    long long sak, CUdeviceptr Bm, long long sbk, long long sbn, int M, int N,
                    int K, CUstream s);
rnnc_status fg_colsum(rt_fgrad *g, CUdeviceptr out, CUdeviceptr A, int lda, int R, int N,
                      CUstream s);
rnnc_status fg_seq_in(rt_fused *m, rt_fgrad *g, CUdeviceptr dst, const void *src, int W,
                      CUstream s);
rnnc_status fg_seq_out(rt_fused *m, rt_fgrad *g, void *dst, CUdeviceptr src, int W, CUstream s);
rnnc_status fg_states_in(rt_fused *m, rt_fgrad *g, fg_side *sd, const cg_cuda_plan *pl,
                         const void *const *arr, int p, CUstream s);
rnnc_status fg_states_out(rt_fused *m, rt_fgrad *g, fg_side *sd, const cg_cuda_plan *pl,
                          void *const *arr, int p, CUstream s);
rnnc_status fg_launch1(rt_fgrad *g, int k, long long n, void **args, CUstream s);

#endif

#endif /* RNNC_FUSED_GRAD_H */
