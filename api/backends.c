/*
 * backends.c: which backends exist in this build, which can run on this
 * machine now, and picking one for a model.  AUTO picks per call, in the
 * order fused, cuDNN, the CPU, the interpreter: a cell, option or call
 * (lengths, training, a shape) that a backend refuses moves it on to the
 * next, so AUTO never answers with a refusal another backend would not give.
 * cuDNN goes before the fused backend for a call whose fused kernels are a
 * second choice (batch passes) or whose shape cuDNN won AUTO's race
 * (auto_race.c).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"

static const char *const names[] = {"auto", "interp", "cpu", "fused", "cudnn"};

const char *rnnc_backend_name(rnnc_backend b)
{
    return (unsigned)b < 5 ? names[b] : "unknown";
}

rnnc_status rnnc_backend_from_name(const char *name, rnnc_backend *out)
{
    for (int i = 0; name && i < 5; i++)
        if (strcasecmp(name, names[i]) == 0) {
            *out = (rnnc_backend)i;
            return RNNC_OK;
        }
    return err_fail(RNNC_ERR_INVALID_ARG, "unknown backend '%s' (auto, interp, cpu, fused, cudnn)",
                    name ? name : "(null)");
}

const rt_backend *api_backend_ops(rnnc_backend b)
{
    switch (b) {
    case RNNC_BACKEND_INTERP: return &rt_backend_interp;
#ifdef RNNC_HAVE_LLVM
    case RNNC_BACKEND_CPU: return &rt_backend_cpu;
#endif
#ifdef RNNC_HAVE_CUDA
    case RNNC_BACKEND_FUSED: return &rt_backend_fused;
#endif
#ifdef RNNC_HAVE_CUDNN
    case RNNC_BACKEND_CUDNN: return &fb_backend_cudnn;
#endif
    default: return NULL;
    }
}

bool rnnc_backend_built(rnnc_backend b)
{
    return b == RNNC_BACKEND_AUTO || api_backend_ops(b) != NULL;
}

bool rnnc_backend_available(rnnc_backend b)
{
    api_bundles_from_env(); /* a bundle of kernels makes the fused backend available */
    switch (b) {
    case RNNC_BACKEND_AUTO:
    case RNNC_BACKEND_INTERP: return true;
    case RNNC_BACKEND_CPU: return api_backend_ops(b) != NULL;
#ifdef RNNC_HAVE_CUDA
    case RNNC_BACKEND_FUSED: /* NVRTC, or kernels from a loaded bundle */
        return rt_cuda_available() && (rt_nvrtc_available() || rt_bundle_registered_kernels());
#endif
#ifdef RNNC_HAVE_CUDNN
    case RNNC_BACKEND_CUDNN: return fb_cudnn_available();
#endif
    default: return false;
    }
}

/* Before a call on the current backend, as the weights are synced: a
 * training call hands it the model's seed (rnnc_model_set_seed), so a
 * backward keeps the seed of its forward. */
static void seed_sync(rnnc_model *m, const rnnc_forward_args *a)
{
    if (a->training && m->be->set_seed)
        m->be->set_seed(m->be_state, m->spec.seed);
}

/* Creates slot b (once); a create that fails is remembered as refused. */
static rnnc_status open_one(rnnc_model *m, rnnc_backend b)
{
    api_slot *slot = &m->slot[b];
    if (slot->be)
        return RNNC_OK;
    const rt_backend *ops = api_backend_ops(b);
    if (!ops)
        return err_fail(RNNC_ERR_NOT_BUILT,
                        "backend '%s' is not built into this rnnc (see the CMake options "
                        "RNNC_WITH_CUDA, RNNC_WITH_CUDNN, RNNC_WITH_LLVM)",
                        rnnc_backend_name(b));
    /* cuDNN's create names a cell it cannot run before it looks for a device. */
    if (b == RNNC_BACKEND_FUSED && !rnnc_backend_available(b))
        return err_fail(RNNC_ERR_NO_DEVICE,
                        "backend '%s' needs a CUDA GPU with its driver and NVRTC; none is "
                        "usable here",
                        rnnc_backend_name(b));
#ifdef RNNC_HAVE_CUDNN
    /* cuDNN matches the cell against the built-ins, which only frontend/
     * makes; this layer sits above both and hands the maker down. */
    if (b == RNNC_BACKEND_CUDNN)
        fb_rnn_set_cell_source(rnnc_cell_builtin);
#endif
    rnnc_status s = ops->create(&m->spec, &slot->state);
    if (s != RNNC_OK) {
        slot->refused = true;
        err_fail_append("backend '%s' could not be opened", rnnc_backend_name(b));
        return s;
    }
    slot->be = ops;
    slot->bound_gen = 0;
    return RNNC_OK;
}

static void make_current(rnnc_model *m, rnnc_backend b)
{
    m->kind = b;
    m->be = m->slot[b].be;
    m->be_state = m->slot[b].state;
}

/* Refusals that send AUTO on to the next backend; any other error is the
 * caller's (bad shapes, bad pointers) and is returned as it is. */
static bool passes_on(rnnc_status s)
{
    return s == RNNC_ERR_UNSUPPORTED || s == RNNC_ERR_NO_DEVICE || s == RNNC_ERR_NOT_BUILT;
}

static const rnnc_backend auto_order[] = {RNNC_BACKEND_FUSED, RNNC_BACKEND_CUDNN,
                                          RNNC_BACKEND_CPU, RNNC_BACKEND_INTERP};
#define N_AUTO (sizeof auto_order / sizeof auto_order[0])

rnnc_status api_backend_open(rnnc_model *m, rnnc_backend want)
{
    m->auto_pick = want == RNNC_BACKEND_AUTO;
    if (!m->auto_pick) {
        rnnc_status s = open_one(m, want);
        if (s == RNNC_OK)
            make_current(m, want);
        return s;
    }
    rnnc_status s = RNNC_ERR_INTERNAL;
    for (size_t i = 0; i < N_AUTO; i++) {
        if (!rnnc_backend_available(auto_order[i]))
            continue;
        s = open_one(m, auto_order[i]);
        if (s == RNNC_OK)
            make_current(m, auto_order[i]);
        if (s == RNNC_OK || !passes_on(s))
            return s;
    }
    return s;
}

void api_backend_close_all(rnnc_model *m)
{
    for (int b = 0; b < API_N_BACKENDS; b++)
        if (m->slot[b].be)
            m->slot[b].be->destroy(m->slot[b].state);
    memset(m->slot, 0, sizeof m->slot);
    m->be = NULL;
    m->be_state = NULL;
}

/* Whether AUTO may hand this call to b: a backend it cannot open, one that
 * takes host pointers only for device pointers, and (first pass) one with
 * no backward for a training forward are skipped. */
static bool auto_may_try(const rnnc_model *m, rnnc_backend b, const rnnc_forward_args *a,
                         bool need_backward)
{
    if (m->slot[b].refused || !rnnc_backend_available(b))
        return false;
    bool device_capable = b == RNNC_BACKEND_FUSED || b == RNNC_BACKEND_CUDNN;
    if (a->device_pointers && !device_capable)
        return false;
    return !need_backward || !api_backend_ops(b) || api_backend_ops(b)->backward;
}

rnnc_status api_backend_try(rnnc_model *m, rnnc_backend b, const rnnc_forward_args *a,
                            api_call_fn call, void *ctx, bool need_backward)
{
    rnnc_status s = open_one(m, b);
    if (s != RNNC_OK)
        return s;
    /* A backend that could not differentiate this forward passes it on. */
    if (need_backward && m->slot[b].be->can_train &&
        (s = m->slot[b].be->can_train(m->slot[b].state)) != RNNC_OK)
        return s;
    rnnc_backend was = m->kind;
    make_current(m, b);
    seed_sync(m, a);
    if ((s = api_weights_sync(m)) == RNNC_OK)
        s = call(m, a, ctx);
    if (passes_on(s)) {
        if (cm_log_enabled("info"))
            fprintf(stderr, "rnnc: auto: '%s' refused the call: %s\n", rnnc_backend_name(b),
                    rnnc_last_error());
        make_current(m, was);
    }
    return s;
}

/* Whether backend b's kernels for this call are a second choice
 * (rt_backend.second_choice): it is then tried after the next in order. */
static bool second_choice(rnnc_model *m, rnnc_backend b, const rnnc_forward_args *a)
{
    if (!auto_may_try(m, b, a, false) || open_one(m, b) != RNNC_OK)
        return false;
    const rt_backend *be = m->slot[b].be;
    return be->second_choice && be->second_choice(m->slot[b].state, a);
}

/* This call's order: auto_order, with cudnn before the fused backend where
 * the fused kernels for the call are a second choice (batch passes) or
 * cudnn won the race for its shape; both before the CPU. */
static void call_order(rnnc_model *m, const rnnc_forward_args *a, rnnc_backend *order)
{
    for (size_t i = 0; i < N_AUTO; i++)
        order[i] = auto_order[i];
    if (second_choice(m, RNNC_BACKEND_FUSED, a) ||
        (auto_may_try(m, RNNC_BACKEND_FUSED, a, false) &&
         auto_may_try(m, RNNC_BACKEND_CUDNN, a, false) && api_race_cudnn_first(m, a))) {
        order[0] = RNNC_BACKEND_CUDNN;
        order[1] = RNNC_BACKEND_FUSED;
    }
    err_clear(); /* a refusal on the way is the call's to make again */
}

rnnc_status api_backend_run(rnnc_model *m, const rnnc_forward_args *a, api_call_fn call, void *ctx)
{
    if (!m->auto_pick) {
        seed_sync(m, a);
        rnnc_status s = api_weights_sync(m);
        return s != RNNC_OK ? s : call(m, a, ctx);
    }
    /* A training forward goes first to a backend that can also run the backward. */
    rnnc_status s = RNNC_ERR_UNSUPPORTED;
    rnnc_backend order[N_AUTO];
    call_order(m, a, order);
    for (int pass = a->training ? 0 : 1; pass < 2; pass++)
        for (size_t i = 0; i < N_AUTO; i++) {
            if (!auto_may_try(m, order[i], a, pass == 0))
                continue;
            s = api_backend_try(m, order[i], a, call, ctx, pass == 0);
            if (!passes_on(s)) {
                if (s == RNNC_OK && cm_log_enabled("info"))
                    fprintf(stderr, "rnnc: auto: the call ran on '%s'\n",
                            rnnc_backend_name(m->kind));
                return s;
            }
        }
    err_fail_append("no backend available here can run this call");
    return s;
}
