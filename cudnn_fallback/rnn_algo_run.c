/*
 * rnn_algo_run.c: the cuDNN algorithm of each call and its temp space.
 *
 * A model's algorithm is fixed (--cudnn-algo) or AUTO.  AUTO decides once
 * per shape (T, B, training, ragged): the choice made earlier in this
 * process, else the tuning record on disk (as the fused autotuning keeps
 * its tiles), else by timing every eligible algorithm on the call's own
 * buffers, else (RNNC_AUTOTUNE=0) cuDNN's documented limits and PyTorch's
 * heuristic.  The weight space does not depend on the algorithm (PyTorch
 * relies on the same), which set_algo checks.
 *
 * Temp space that cannot be allocated is retried after freeing what the
 * model caches, then (AUTO only: a fixed choice is the caller's) with the
 * other eligible algorithms, smallest need first, then reported with every
 * size asked for.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_fallback/rnn.h"

static atomic_int fail_allocs;

void fb_rnn_fail_allocs(int n)
{
    atomic_store(&fail_allocs, n);
}

static cudnnRNNAlgo_t to_cudnn(rnnc_cudnn_algo a)
{
    switch (a) {
    case RNNC_CUDNN_ALGO_PERSIST_STATIC: return CUDNN_RNN_ALGO_PERSIST_STATIC;
    case RNNC_CUDNN_ALGO_PERSIST_STATIC_SMALL_H: return CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H;
    case RNNC_CUDNN_ALGO_PERSIST_DYNAMIC: return CUDNN_RNN_ALGO_PERSIST_DYNAMIC;
    default: return CUDNN_RNN_ALGO_STANDARD;
    }
}

/* FFMA unless the model allows TF32: CUDNN_DEFAULT_MATH lets cuDNN pick
 * TF32 tensor cores for fp32.  fp16 computes in fp32 on tensor cores. */
static cudnnMathType_t math_type(const fb_rnn *r)
{
    if (r->dtype == CUDNN_DATA_HALF)
        return CUDNN_TENSOR_OP_MATH;
    return r->spec.math == RNNC_MATH_TF32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

rnnc_status fb_rnn_set_algo(fb_rnn *r, rnnc_cudnn_algo a)
{
    if (r->algo == a)
        return RNNC_OK;
    /* Padded IO: the unpacked layouts keep PyTorch's [T, B, *] / [B, T, *]
     * tensors as they are, with per-sequence lengths. */
    cudnnStatus_t cs = cudnnSetRNNDescriptor_v8(
        r->rnn, to_cudnn(a), (cudnnRNNMode_t)r->mode,
        r->spec.no_bias ? CUDNN_RNN_NO_BIAS : CUDNN_RNN_DOUBLE_BIAS,
        r->dirs == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, r->dtype,
        CUDNN_DATA_FLOAT, math_type(r), (int32_t)r->spec.sizes[0].I, (int32_t)r->hidden,
        (int32_t)r->hout, r->layers, r->drop, CUDNN_RNN_PADDED_IO_ENABLED);
    r->algo = RNNC_CUDNN_ALGO_AUTO; /* unknown until this succeeds */
    r->dyn_batch = 0;
    rnnc_status st = fb_cudnn_check(cs, "cudnnSetRNNDescriptor_v8");
    size_t wsize = 0;
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnGetRNNWeightSpaceSize(r->handle, r->rnn, &wsize),
                            "cudnnGetRNNWeightSpaceSize");
    if (st != RNNC_OK) {
        err_fail_append("algorithm %s", rnnc_cudnn_algo_name(a));
        return st;
    }
    if (r->wsize && wsize != r->wsize)
        return err_fail(RNNC_ERR_INTERNAL,
                        "cuDNN's weight space is %zu bytes with algorithm %s but %zu with the "
                        "first one: its layout must not depend on the algorithm",
                        wsize, rnnc_cudnn_algo_name(a), r->wsize);
    r->wsize = wsize;
    r->algo = a;
    return RNNC_OK;
}

void fb_rnn_algo_query(const fb_rnn *r, fb_algo_query *q)
{
    *q = (fb_algo_query){.mode = r->mode, .in = r->spec.sizes[0].I, .hidden = r->hidden,
                         .proj = r->proj, .layers = r->layers, .dirs = r->dirs, .batch = r->B,
                         .training = r->training, .no_bias = r->spec.no_bias,
                         .ragged = r->ragged,
                         .half = r->dtype == CUDNN_DATA_HALF, .sm = r->sm,
                         .sm_count = r->sm_count};
}

/* ---------------------------------------------------------------- temp space */

/* The descriptor on algorithm a for this shape, with cuDNN's temp sizes. */
static rnnc_status size_algo(fb_rnn *r, rnnc_cudnn_algo a)
{
    rnnc_status st = fb_rnn_set_algo(r, a);
    if (st == RNNC_OK && a == RNNC_CUDNN_ALGO_PERSIST_DYNAMIC && r->dyn_batch != r->B) {
        st = fb_cudnn_check(cudnnBuildRNNDynamic(r->handle, r->rnn, r->B), "cudnnBuildRNNDynamic");
        r->dyn_batch = st == RNNC_OK ? r->B : 0;
    }
    if (st != RNNC_OK)
        return st;
    cudnnForwardMode_t mode = r->training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE;
    st = fb_cudnn_check(cudnnGetRNNTempSpaceSizes(r->handle, r->rnn, mode, r->xdesc,
                                                  &r->ws_size, &r->rs_size),
                        "cudnnGetRNNTempSpaceSizes");
    if (!r->training)
        r->rs_size = 0;
    return st;
}

static rnnc_status alloc_temp(fb_rnn *r)
{
    if (atomic_load(&fail_allocs) > 0) {
        atomic_fetch_sub(&fail_allocs, 1);
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "simulated allocation failure (tests)");
    }
    rnnc_status st = fb_buf_reserve(&r->ws, r->ws_size);
    if (st == RNNC_OK)
        st = fb_buf_reserve(&r->rs, r->rs_size);
    return st;
}

/* What the model may give back during a forward: the backward's staging
 * and the temp space itself (its next size is allocated afresh). */
static void free_cached(fb_rnn *r)
{
    fb_buf *bufs[] = {&r->dx, &r->dy, &r->dhx, &r->dcx, &r->dhy, &r->dcy, &r->ws, &r->rs};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        fb_buf_free(bufs[i]);
}

static rnnc_status use_algo(fb_rnn *r, rnnc_cudnn_algo a)
{
    rnnc_status st = size_algo(r, a);
    return st == RNNC_OK ? alloc_temp(r) : st;
}

/* Appends "name (workspace W, reserve R bytes)" of the sizes just asked. */
static void note_sizes(const fb_rnn *r, char *buf, size_t n)
{
    size_t len = strlen(buf);
    if (len < n)
        snprintf(buf + len, n - len, "%s%s (workspace %zu, reserve %zu bytes)", len ? "; " : "",
                 rnnc_cudnn_algo_name(r->algo), r->ws_size, r->rs_size);
}

static rnnc_status report_oom(const fb_rnn *r, const char *tried)
{
    size_t free_b = 0, total_b = 0;
    const rt_cuda_api *cu = rt_cu();
    if (cu)
        (void)cu->MemGetInfo(&free_b, &total_b);
    return err_fail(RNNC_ERR_OUT_OF_MEMORY,
                    "cuDNN's temp space could not be allocated for T=%d B=%d, even after "
                    "freeing cached buffers: %s; the device has %zu of %zu bytes free",
                    r->T, r->B, tried, free_b, total_b);
}

/* The other eligible algorithms, smallest temp need first. */
static rnnc_status retry_others(fb_rnn *r, rnnc_cudnn_algo failed, char *tried, size_t n)
{
    fb_algo_query q;
    fb_rnn_algo_query(r, &q);
    rnnc_cudnn_algo cand[4];
    size_t need[4];
    int k = 0, m = fb_algo_candidates(&q, cand);
    for (int i = 0; i < m; i++) {
        if (cand[i] == failed || size_algo(r, cand[i]) != RNNC_OK)
            continue;
        need[k] = r->ws_size + r->rs_size;
        cand[k++] = cand[i];
    }
    for (int i = 0; i < k; i++) { /* a few entries: selection order */
        int best = i;
        for (int j = i + 1; j < k; j++)
            if (need[j] < need[best])
                best = j;
        rnnc_cudnn_algo a = cand[best];
        cand[best] = cand[i], need[best] = need[i];
        r->oom_retries++;
        rnnc_status st = use_algo(r, a);
        if (st == RNNC_OK)
            return RNNC_OK;
        if (st != RNNC_ERR_OUT_OF_MEMORY)
            continue;
        note_sizes(r, tried, n);
    }
    return RNNC_ERR_OUT_OF_MEMORY;
}

static rnnc_status reserve(fb_rnn *r, rnnc_cudnn_algo a, bool may_switch)
{
    rnnc_status st = use_algo(r, a);
    if (st != RNNC_ERR_OUT_OF_MEMORY)
        return st;
    free_cached(r);
    r->oom_retries++;
    if ((st = use_algo(r, a)) != RNNC_ERR_OUT_OF_MEMORY)
        return st;
    char tried[512] = "";
    note_sizes(r, tried, sizeof tried);
    if (may_switch && retry_others(r, a, tried, sizeof tried) == RNNC_OK) {
        err_clear();
        return RNNC_OK;
    }
    return report_oom(r, tried);
}

/* ---------------------------------------------------------------- choosing */

static bool autotune_off(void)
{
    return cm_env_is("RNNC_AUTOTUNE", "0");
}

/* Everything the timing depends on, as the tuning record's key. */
static void shape_key(const fb_rnn *r, char *buf, size_t n)
{
    snprintf(buf, n,
             "cudnn %s I=%lld H=%lld P=%lld L=%d D=%d bias=%d %s math=%s T=%d B=%d train=%d "
             "sm_%d sms=%d cudnn=%zu",
             fb_rnn_mode_name(r->mode), (long long)r->spec.sizes[0].I, (long long)r->hidden,
             (long long)r->proj, r->layers, r->dirs, !r->spec.no_bias,
             r->dtype == CUDNN_DATA_HALF ? "f16" : "f32",
             r->spec.math == RNNC_MATH_TF32 ? "tf32" : "ffma", r->T, r->B, r->training, r->sm,
             r->sm_count, cudnnGetVersion());
}

typedef struct timing_ctx {
    fb_rnn *r;
    const fb_io *io;
} timing_ctx;

static rnnc_status time_once(void *ctx, CUstream s)
{
    (void)s; /* the handle is already on s */
    timing_ctx *t = ctx;
    return fb_rnn_launch_forward(t->r, t->io);
}

/* Times every candidate on the call's buffers; one cuDNN refuses (a
 * W_hh too large to stay on chip) is skipped. */
static rnnc_cudnn_algo time_candidates(fb_rnn *r, const fb_io *io, CUstream s,
                                       const rnnc_cudnn_algo *cand, int n)
{
    rnnc_cudnn_algo best = RNNC_CUDNN_ALGO_STANDARD;
    double best_ms = 0;
    timing_ctx ctx = {r, io};
    for (int i = 0; i < n; i++) {
        double ms = 0;
        rnnc_status st = use_algo(r, cand[i]);
        if (st == RNNC_OK)
            st = rt_time_ms(time_once, &ctx, s, 2, 5, &ms);
        if (cm_log_enabled("info") && st == RNNC_OK)
            fprintf(stderr, "rnnc: cudnn T=%d B=%d %s: %.4f ms\n", r->T, r->B,
                    rnnc_cudnn_algo_name(cand[i]), ms);
        else if (cm_log_enabled("info"))
            fprintf(stderr, "rnnc: cudnn T=%d B=%d %s: skipped: %s\n", r->T, r->B,
                    rnnc_cudnn_algo_name(cand[i]), rnnc_last_error());
        if (st == RNNC_OK && (best_ms == 0 || ms < best_ms)) {
            best = cand[i];
            best_ms = ms;
        }
    }
    err_clear();
    return best;
}

static bool recorded(const char *key, const rnnc_cudnn_algo *cand, int n, rnnc_cudnn_algo *a)
{
    char text[64];
    if (rt_tuning_get(key, text, sizeof text) != RNNC_OK ||
        rnnc_cudnn_algo_from_name(text, a) != RNNC_OK) {
        err_clear();
        return false;
    }
    for (int i = 0; i < n; i++)
        if (cand[i] == *a)
            return true;
    return false;
}

static rnnc_cudnn_algo choose_auto(fb_rnn *r, const fb_io *io, CUstream s)
{
    if (r->memo.valid && r->memo.T == r->T && r->memo.B == r->B &&
        r->memo.training == r->training && r->memo.ragged == r->ragged)
        return r->memo.algo;
    fb_algo_query q;
    fb_rnn_algo_query(r, &q);
    rnnc_cudnn_algo cand[4], a = RNNC_CUDNN_ALGO_STANDARD;
    int n = fb_algo_candidates(&q, cand);
    char key[256];
    shape_key(r, key, sizeof key);
    if (n <= 1) {
        a = RNNC_CUDNN_ALGO_STANDARD;
    } else if (!recorded(key, cand, n, &a)) {
        if (autotune_off()) {
            a = fb_algo_heuristic(&q);
        } else {
            a = time_candidates(r, io, s, cand, n);
            (void)rt_tuning_put(key, rnnc_cudnn_algo_name(a)); /* a cache: failure is harmless */
            err_clear();
        }
    }
    r->memo.valid = true;
    r->memo.T = r->T, r->memo.B = r->B;
    r->memo.training = r->training, r->memo.ragged = r->ragged;
    r->memo.algo = a;
    return a;
}

rnnc_status fb_rnn_prepare_algo(fb_rnn *r, const fb_io *io, CUstream s)
{
    rnnc_cudnn_algo want = r->spec.cudnn_algo;
    if (want != RNNC_CUDNN_ALGO_AUTO) {
        fb_algo_query q;
        fb_rnn_algo_query(r, &q);
        const char *why = fb_algo_refusal(want, &q);
        if (why)
            return err_fail(RNNC_ERR_UNSUPPORTED, "cudnn algorithm %s cannot run T=%d B=%d: %s",
                            rnnc_cudnn_algo_name(want), r->T, r->B, why);
        return reserve(r, want, false);
    }
    return reserve(r, choose_auto(r, io, s), true);
}
