/*
 * fused_backend.c: rt_backend_fused, the fused GPU backend as the model
 * API sees it: runtime/fused's forward with this folder's training joined
 * on.  runtime/fused knows training only through the rt_fused_train_ops a
 * model carries, set here, so it never calls up into this folder.
 */
#include "runtime/fused_grad/fused_grad.h"

#ifdef RT_HAVE_CUDA_H

static const rt_fused_train_ops train_ops = {
    .check = rt_fgrad_check,
    .forward = rt_fgrad_forward,
    .forget = rt_fgrad_forget,
    .free = rt_fgrad_free,
};

static rnnc_status fused_create(const rt_spec *s, void **state)
{
    rnnc_status st = rt_fused_create(s, state);
    if (st == RNNC_OK)
        ((rt_fused *)*state)->train = &train_ops;
    return st;
}

static rnnc_status fused_bind(void *state, const rt_weights *w)
{
    rt_fused *m = state;
    rnnc_status st = rt_fused_bind(m, w);
    if (st == RNNC_OK)
        st = rt_fgrad_bind(m, w);
    if (st == RNNC_OK)
        m->bound = true;
    return st;
}

/* Batch passes (codegen/cuda/cuda_passes.c) ran at 0.58-0.75x of cuDNN's
 * forward and 0.40-0.69x of its training step on the H100
 * (bench/results/h100/passes/, .../gkeep/): where cuDNN runs the call,
 * AUTO gives it to cuDNN. */
static bool fused_second_choice(void *state, const rnnc_forward_args *a)
{
    rt_fused *m = state;
    return rt_fused_takes_passes(m, a->batch) ||
           (a->training && rt_fgrad_takes_passes(m, a->batch));
}

/* The kernels take the seed as a launch argument: nothing to rebuild. */
static void fused_set_seed(void *state, uint64_t seed)
{
    ((rt_fused *)state)->spec.seed = seed;
}

static void fused_destroy(void *state)
{
    rt_fused_free(state);
}

const rt_backend rt_backend_fused = {
    .name = "fused",
    .create = fused_create,
    .bind = fused_bind,
    .forward = rt_fused_forward,
    .time_forward = rt_fused_time_forward,
    .backward = rt_fgrad_backward,
    .weight_grad = rt_fgrad_weight_grad,
    .time_training = rt_fgrad_time_training,
    .can_train = rt_fgrad_can_train,
    .second_choice = fused_second_choice,
    .set_seed = fused_set_seed,
    .destroy = fused_destroy,
};

#else /* no CUDA headers at build time */

static rnnc_status fused_absent(const rt_spec *s, void **state)
{
    (void)s;
    (void)state;
    return err_fail(RNNC_ERR_NOT_BUILT, "fused backend: rnnc was built without CUDA");
}

const rt_backend rt_backend_fused = {.name = "fused", .create = fused_absent};

#endif
