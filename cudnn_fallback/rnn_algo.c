/*
 * rnn_algo.c: which of cuDNN's RNN algorithms may run a call, and which one
 * to take without timing.  Pure host code (tests/test_cudnn_layout.c runs
 * it on every machine); rnn_algo_run.c sets, times and records them.
 *
 * The limits are cuDNN's documented ones (docs/cudnn.md): every persistent
 * algorithm needs sm_60 or newer, sequences of one length and no
 * projection; PERSIST_STATIC_SMALL_H bounds the hidden size, more tightly
 * when training.  One more is cuDNN 9's behaviour rather than its
 * documentation: cudnnSetRNNDescriptor_v8 refuses every persistent
 * algorithm with CUDNN_RNN_NO_BIAS (NOT_SUPPORTED, seen by gpu_cudnn_paths
 * with cuDNN 9.14), so bias=False models run STANDARD.  What the
 * documentation leaves open (whether W_hh fits on chip for PERSIST_STATIC)
 * cuDNN itself refuses; AUTO then skips the algorithm.
 */
#include "cudnn_fallback/rnn.h"

static bool persistent(rnnc_cudnn_algo a)
{
    return a == RNNC_CUDNN_ALGO_PERSIST_STATIC || a == RNNC_CUDNN_ALGO_PERSIST_STATIC_SMALL_H ||
           a == RNNC_CUDNN_ALGO_PERSIST_DYNAMIC;
}

/* PERSIST_STATIC_SMALL_H's hidden-size limit: forward 192 (LSTM, GRU) or
 * 384 (RNN); backward 128 or 256. */
static int64_t small_h_limit(const fb_algo_query *q)
{
    bool gated = q->mode == FB_LSTM || q->mode == FB_GRU;
    if (q->training)
        return gated ? 128 : 256;
    return gated ? 192 : 384;
}

const char *fb_algo_refusal(rnnc_cudnn_algo a, const fb_algo_query *q)
{
    if (a == RNNC_CUDNN_ALGO_STANDARD)
        return NULL;
    if (!persistent(a))
        return "not a cuDNN algorithm";
    if (q->sm > 0 && q->sm < 60)
        return "persistent algorithms need sm_60 or newer";
    if (q->proj > 0)
        return "a projection (proj_size) runs only on the standard algorithm";
    if (q->no_bias)
        return "cuDNN runs bias=False models only on the standard algorithm";
    if (q->ragged)
        return "persistent algorithms need every sequence of the same length";
    if (a == RNNC_CUDNN_ALGO_PERSIST_STATIC_SMALL_H && q->hidden > small_h_limit(q)) {
        bool gated = q->mode == FB_LSTM || q->mode == FB_GRU;
        return q->training ? (gated ? "persist_static_small_h trains lstm and gru only with H <= 128"
                                    : "persist_static_small_h trains rnn only with H <= 256")
                           : (gated ? "persist_static_small_h runs lstm and gru only with H <= 192"
                                    : "persist_static_small_h runs rnn only with H <= 384");
    }
    return NULL;
}

int fb_algo_candidates(const fb_algo_query *q, rnnc_cudnn_algo out[4])
{
    static const rnnc_cudnn_algo all[] = {
        RNNC_CUDNN_ALGO_STANDARD, RNNC_CUDNN_ALGO_PERSIST_STATIC,
        RNNC_CUDNN_ALGO_PERSIST_STATIC_SMALL_H, RNNC_CUDNN_ALGO_PERSIST_DYNAMIC};
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (!fb_algo_refusal(all[i], q))
            out[n++] = all[i];
    return n;
}

/* PyTorch's per-device condition for PERSIST_STATIC, which it states only
 * for LSTM on large sm_80+ parts (elsewhere it keeps STANDARD). */
static bool device_heuristic(const fb_algo_query *q)
{
    if (q->sm < 80 || q->sm_count < 98 || q->mode != FB_LSTM)
        return false;
    return q->batch % 8 == 0 && q->batch <= 128;
}

rnnc_cudnn_algo fb_algo_heuristic(const fb_algo_query *q)
{
    bool common = q->half && q->layers == 1 && q->dirs == 1 && q->hidden <= 1024 &&
                  q->hidden % 128 == 0 && q->in % 128 == 0;
    if (common && device_heuristic(q) &&
        !fb_algo_refusal(RNNC_CUDNN_ALGO_PERSIST_STATIC, q))
        return RNNC_CUDNN_ALGO_PERSIST_STATIC;
    return RNNC_CUDNN_ALGO_STANDARD;
}
