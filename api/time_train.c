/*
 * time_train.c: rnnc_model_time_training, the time of one training step
 * (a training forward and its backward), what `rnnc compare --training`
 * reports.  A backend with its own timer (cudnn: CUDA events around its
 * kernels on device buffers) uses it; the others are timed on the host
 * clock around the public calls' work, packed input included.
 */
#include <stdlib.h>

#include "api/api.h"

/* One forward and backward as rnnc_model_forward / _backward run them. */
static rnnc_status step_once(rnnc_model *m, const rnnc_forward_args *f,
                             const rnnc_backward_args *b)
{
    api_packed_forget(m);
    rnnc_status s = f->batch_sizes && m->kind != RNNC_BACKEND_CUDNN
                        ? api_forward_packed(m, f, 0, 0, NULL)
                        : m->be->forward(m->be_state, f);
    if (s != RNNC_OK)
        return s;
    if (m->packed.on && m->kind != RNNC_BACKEND_CUDNN)
        return api_backward_packed(m, b);
    return m->be->backward(m->be_state, b);
}

static rnnc_status time_host(rnnc_model *m, const rnnc_forward_args *f, const api_timing *c)
{
    double *t = malloc(sizeof(double) * (size_t)c->iters);
    if (!t)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "timing: out of memory");
    rnnc_status s = RNNC_OK;
    for (int i = 0; i < c->warmup && s == RNNC_OK; i++)
        s = step_once(m, f, c->b);
    for (int i = 0; i < c->iters && s == RNNC_OK; i++) {
        double t0 = cm_now_ms();
        s = step_once(m, f, c->b);
        t[i] = cm_now_ms() - t0;
    }
    if (s == RNNC_OK)
        *c->median_ms = cm_median(t, c->iters);
    free(t);
    return s;
}

rnnc_status api_call_time_training(rnnc_model *m, const rnnc_forward_args *f, void *ctx)
{
    const api_timing *c = ctx;
    if (!m->be->backward)
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "backend '%s' has no backward (interp, cudnn and fused have one)",
                        rnnc_backend_name(m->kind));
    api_packed_forget(m);
    if (m->be->time_training && !(f->batch_sizes && m->kind != RNNC_BACKEND_CUDNN))
        return m->be->time_training(m->be_state, f, c->b, c->warmup, c->iters, c->median_ms);
    return time_host(m, f, c);
}

rnnc_status rnnc_model_time_training(rnnc_model *m, const rnnc_forward_args *f,
                                     const rnnc_backward_args *b, int warmup, int iters,
                                     double *median_ms)
{
    if (!m || !f || !b || !median_ms || iters < 1 || warmup < 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_time_training: bad argument");
    if (!f->training)
        return err_fail(RNNC_ERR_INVALID_ARG,
                        "rnnc_model_time_training: the forward must be a training one");
    rnnc_status s = rt_check_forward(&m->spec, f);
    if (s != RNNC_OK)
        return s;
    api_timing c = {b, warmup, iters, median_ms};
    return api_backend_run(m, f, api_call_time_training, &c);
}
