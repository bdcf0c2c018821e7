/*
 * fused_grad_int.h: what the two files of the fused backward's runtime
 * share (fused_grad_setup.c: the split, kernel sets, weight arenas;
 * fused_grad.c: forward, backward, weight gradients, timing).
 */
#ifndef RNNC_FUSED_GRAD_INT_H
#define RNNC_FUSED_GRAD_INT_H

#include "runtime/fused_grad.h"

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

struct rt_fgrad {
    bool checked;
    rnnc_status status; /* of the check: RNNC_OK, or why the backward is refused */
    char why[512];
    ir_arena *arena;
    fg_kind kind[2];
    int n_kinds;
    int np, npar;          /* pseudo-layers, forward params */
    /* host weights: [np * npar] blocks at hw_off (dw uses the same offsets) */
    float *hw;
    int64_t *hw_off, *hw_cnt, hw_floats;
    bool bound, arenas_ok;
    int64_t batch;         /* the kernel sets' batch (0: none) */
    fg_set rec[2], bwd[2];
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
    fg_buf st, hz, xb, part, bar, dlen, xt, tmp, recb, out, init, g, dg, din, dxl;
    int *hlen;
    int64_t rec_stride; /* floats of a record row buffer's rows, every kind */
};

/* Pseudo-layer p's offset in an arena of n[kind] floats per pseudo-layer. */
int64_t fg_at(const rt_fgrad *g, int dirs, int p, const int64_t n[2]);
/* Generates and loads the kernel sets for `batch` and fills the arenas. */
rnnc_status fg_prepare(rt_fused *m, int64_t batch);
/* Grows b to n bytes (contents not kept). */
rnnc_status fg_grow(fg_buf *b, size_t n);
/* Launches a generated kernel set as the fused forward does. */
rnnc_status fg_launch_set(rt_fgrad *g, const fg_set *set, CUdeviceptr x, CUdeviceptr y,
                          CUdeviceptr wts, CUdeviceptr fold, int T, int rev, CUstream s);

/* fused_grad.c, for fused_grad_bwd.c: device views and helpers. */
CUdeviceptr fg_rec_at(const rt_fgrad *g, int p);
CUdeviceptr fg_init_at(const rt_fgrad *g, int p);
CUdeviceptr fg_out_at(const rt_fused *m, const rt_fgrad *g, int l);
rnnc_status fg_copy_cols(rt_fgrad *g, CUdeviceptr dst, int ldd, CUdeviceptr src, int lds,
                         long long rows, int cols, CUstream s);
rnnc_status fg_gemm(rt_fgrad *g, CUdeviceptr C, int ldc, CUdeviceptr A, long long sam,
                    long long sak, CUdeviceptr Bm, long long sbk, long long sbn, int M, int N,
                    int K, CUstream s);
rnnc_status fg_colsum(rt_fgrad *g, CUdeviceptr out, CUdeviceptr A, int lda, int R, int N,
                      CUstream s);
rnnc_status fg_seq_in(rt_fused *m, rt_fgrad *g, CUdeviceptr dst, const void *src, int W,
                      CUstream s);
rnnc_status fg_seq_out(rt_fused *m, rt_fgrad *g, void *dst, CUdeviceptr src, int W, CUstream s);
rnnc_status fg_states_in(rt_fgrad *g, const cg_cuda_plan *pl, const void *const *arr, int p,
                         CUstream s);
rnnc_status fg_states_out(rt_fgrad *g, const cg_cuda_plan *pl, void *const *arr, int p,
                          CUstream s);
rnnc_status fg_launch1(rt_fgrad *g, int k, long long n, void **args, CUstream s);

#endif
#endif
