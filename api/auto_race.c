/*
 * auto_race.c: AUTO between the fused backend and cuDNN, by timing.  Where
 * both run a call (a cell cuDNN has), which is faster depends on the shape:
 * on an H100 in fp32 FFMA the fused backend ran an LSTM at 1.4-2.2x cuDNN's
 * speed at H <= 1024, B <= 128 and at 0.45-0.9x at H = 2048, at B >= 256,
 * and at H = 1024, B = 1 (bench/results/h100/auto-race/).  So the first
 * call of a shape times both on the call's own buffers (median of 5 after
 * 2; a training call a training step on zero gradients) and the winner is
 * kept with the tuning records, keyed by the cell's text and everything
 * the times depend on: T by class (1, 2-15, 16 and more), the generator's
 * and cuDNN's versions (a new one may change the times).  Later calls,
 * and later processes, read it.  With RNNC_AUTOTUNE=0 there is no race and
 * the order stays fused first, as for packed calls (padded on one side,
 * not the other) and for training calls on device pointers (whose timing
 * needs device gradients).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "api/api.h"

enum { RACE_WARMUP = 2, RACE_ITERS = 5 };

static bool race_off(void)
{
    return cm_env_is("RNNC_AUTOTUNE", "0");
}

/* The device's sm_XX and SM count; false without CUDA's headers at build
 * time (then neither GPU backend is built). */
static bool device_of(int device, int *sm, int *sms)
{
#ifdef RT_HAVE_CUDA_H
    return rt_cuda_arch(device, sm) == RNNC_OK && rt_cuda_sm_count(device, sms) == RNNC_OK;
#else
    (void)device, (void)sm, (void)sms;
    return false;
#endif
}

/* cuDNN's version, a new one may change its times (0 without cuDNN). */
static size_t cudnn_version(void)
{
#ifdef RNNC_HAVE_CUDNN
    return fb_cudnn_version();
#else
    return 0;
#endif
}

/* Sequence lengths in three classes, not each T: both backends' times grow
 * with T alike past the first steps, and a model fed batches of many
 * padded lengths would race at each (T = 1 has launches of its own). */
static const char *steps_class(int64_t T)
{
    return T == 1 ? "1" : T < 16 ? "2-15" : "16+";
}

/* The model's part of the key (its cell's text hashed, sizes, options, the
 * generator's and cuDNN's versions, the device), made once a model: every
 * AUTO call builds its key. */
static bool model_key(rnnc_model *m)
{
    const rt_spec *s = &m->spec;
    char *text = NULL;
    int sm = 0, sms = 0;
    if (m->race_model[0])
        return true;
    if (!device_of(s->device, &sm, &sms) || ir_print(m->fn, &text) != RNNC_OK) {
        free(text);
        return false;
    }
    snprintf(m->race_model, sizeof m->race_model,
             "auto %s %016llx I=%lld H=%lld P=%lld L=%d D=%d bias=%d bf=%d hoist=%d math=%d "
             "dtype=%d drop=%d cg=%d cudnn=%zu sm_%d sms=%d",
             m->fn->name, (unsigned long long)XXH3_64bits(text, strlen(text)),
             (long long)s->sizes[0].I, (long long)s->sizes[0].H, (long long)s->hout, s->layers,
             s->dirs, !s->no_bias, s->batch_first, (int)s->hoist, (int)s->math, (int)s->dtype,
             s->dropout > 0, RT_CODEGEN_VERSION, cudnn_version(), sm, sms);
    free(text);
    return true;
}

/* What the two times depend on; false where it cannot be said. */
static bool race_key(rnnc_model *m, const rnnc_forward_args *a, char *buf, size_t n)
{
    if (!model_key(m))
        return false;
    snprintf(buf, n, "%s T=%s B=%lld len=%d dev=%d train=%d", m->race_model,
             steps_class(a->seq_len), (long long)a->batch, a->lengths != NULL,
             a->device_pointers, a->training);
    return true;
}

/* Zero gradients for a training step's timing (host memory). */
typedef struct race_grads {
    void *dy, *dx;
    rnnc_backward_args b;
} race_grads;

static bool grads_make(const rnnc_model *m, const rnnc_forward_args *a, race_grads *g)
{
    int64_t hout = 0;
    size_t es = rt_dtype_is_half(m->spec.dtype) ? 2 : 4;
    size_t rows = (size_t)(a->seq_len * a->batch);
    if (rnnc_model_output_size(m, &hout) != RNNC_OK)
        return false;
    g->dy = calloc(rows * (size_t)(m->spec.dirs * hout), es);
    g->dx = calloc(rows * (size_t)m->spec.sizes[0].I, es);
    g->b = (rnnc_backward_args){.dy = g->dy, .dx = g->dx};
    return g->dy && g->dx;
}

static void grads_free(race_grads *g)
{
    free(g->dy);
    free(g->dx);
}

/* The race; false where neither could be timed. */
static bool race(rnnc_model *m, const rnnc_forward_args *a, bool *cudnn)
{
    race_grads g = {0};
    const rnnc_backward_args *bw = NULL;
    if (a->training) {
        if (!grads_make(m, a, &g)) {
            grads_free(&g);
            return false;
        }
        bw = &g.b;
    }
    /* each as AUTO runs it (rnnc_model_time_forward's and _training's timers) */
    double t[2] = {0, 0};
    api_timing tc = {bw, RACE_WARMUP, RACE_ITERS, &t[1]}, tf = {bw, RACE_WARMUP, RACE_ITERS, &t[0]};
    api_call_fn time = a->training ? api_call_time_training : api_call_time;
    rnnc_status c = api_backend_try(m, RNNC_BACKEND_CUDNN, a, time, &tc, a->training);
    rnnc_status f = api_backend_try(m, RNNC_BACKEND_FUSED, a, time, &tf, a->training);
    grads_free(&g);
    if (c != RNNC_OK && f != RNNC_OK)
        return false;
    *cudnn = c == RNNC_OK && (f != RNNC_OK || t[1] < t[0]);
    if (cm_log_enabled("info"))
        fprintf(stderr, "rnnc: auto: fused %.3f ms, cudnn %.3f ms: %s first for this shape\n",
                f == RNNC_OK ? t[0] : -1.0, c == RNNC_OK ? t[1] : -1.0,
                *cudnn ? "cudnn" : "fused");
    return true;
}

bool api_race_cudnn_first(rnnc_model *m, const rnnc_forward_args *a)
{
    char key[sizeof m->race_key], text[16];
    if (race_off() || a->batch_sizes || (a->training && a->device_pointers) ||
        !race_key(m, a, key, sizeof key))
        return false;
    if (strcmp(key, m->race_key) == 0)
        return m->race_cudnn;
    bool cudnn = false, known = rt_tuning_get(key, text, sizeof text) == RNNC_OK;
    if (known)
        cudnn = strcmp(text, "cudnn") == 0;
    else if ((known = race(m, a, &cudnn)))
        (void)rt_tuning_put(key, cudnn ? "cudnn" : "fused"); /* a cache: failure is harmless */
    err_clear();
    /* a race neither side could run (weights not set yet) is run again */
    if (known) {
        snprintf(m->race_key, sizeof m->race_key, "%s", key);
        m->race_cudnn = cudnn;
    }
    return cudnn;
}
