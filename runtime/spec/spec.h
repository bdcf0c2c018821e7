/*
 * spec.h: the internal header of runtime/spec: the contract between the
 * model API and every backend (a model's spec and weights, the backend
 * interface, the checks of a forward call every backend makes, the
 * host-clock timer), the half-precision forward of host backends, and the
 * dropout sites (docs/dropout.md).  Files: spec.c, half.c, cudnn_algo.c
 * (the names of a public enum that the spec carries).
 *
 * Uses: common, ir (the specialised cells), runtime/tensor.
 */
#ifndef RNNC_RUNTIME_SPEC_H
#define RNNC_RUNTIME_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "ir/ir.h"
#include "rnnc.h"
#include "runtime/tensor/tensor.h"

/*
 * A model as every backend sees it.  fn[0] is the cell specialised for
 * layer 0 (input size I), fn[1] for layers > 0 (input size D * Hout); both
 * have had ir_optimise run (optional params decided).  sizes[k] are the
 * dims fn[k] is bound to.  Pseudo-layer p = layer * dirs + dir.
 */
typedef struct rt_spec {
    const ir_fn *fn[2];
    ir_sizes sizes[2];
    int layers;
    int dirs;
    bool batch_first;
    double dropout;
    uint64_t seed;
    rnnc_hoist hoist;
    rnnc_math math;
    rnnc_dtype dtype;
    int device;
    int64_t hout; /* P if projection, else H: the width of y per direction */
    bool no_bias; /* bias=False: fn[] were specialised without their biases */
    rnnc_cudnn_algo cudnn_algo;
} rt_spec;

static inline const ir_fn *rt_spec_fn(const rt_spec *s, int layer)
{
    return s->fn[layer > 0];
}

static inline ir_sizes rt_spec_sizes(const rt_spec *s, int layer)
{
    return s->sizes[layer > 0];
}

/*
 * Weights in host memory, fp32, PyTorch layout (row-major [rows, cols] for a
 * matrix), one pointer per (pseudo-layer, param of that layer's fn); NULL
 * for an absent optional param.  w[p * n_params + i].
 */
typedef struct rt_weights {
    const float *const *w;
    int n_params; /* params of fn[0]; fn[1] has the same params in the same order */
    int pseudo_layers;
} rt_weights;

static inline const float *rt_weight(const rt_weights *w, int pseudo, int param)
{
    return w->w[pseudo * w->n_params + param];
}

/* A backend behind the model API.  `state` is the backend's own object. */
typedef struct rt_backend {
    const char *name;
    rnnc_status (*create)(const rt_spec *s, void **state);
    /* Called whenever weights change; the backend copies what it keeps. */
    rnnc_status (*bind)(void *state, const rt_weights *w);
    rnnc_status (*forward)(void *state, const rnnc_forward_args *a);
    /* Optional (NULL): median ms of forward on the buffers of a. */
    rnnc_status (*time_forward)(void *state, const rnnc_forward_args *a, int warmup, int iters,
                                double *median_ms);
    /* Optional (NULL = RNNC_ERR_UNSUPPORTED). */
    rnnc_status (*backward)(void *state, const rnnc_backward_args *a);
    rnnc_status (*weight_grad)(void *state, int pseudo, int param, float *out, int64_t count);
    /* Optional (NULL: the host clock over forward and backward): median ms of
     * a training forward plus its backward on the buffers of f and b. */
    rnnc_status (*time_training)(void *state, const rnnc_forward_args *f,
                                 const rnnc_backward_args *b, int warmup, int iters,
                                 double *median_ms);
    /* Optional (NULL: backward decides): RNNC_OK when a training forward
     * here can be differentiated, else why not (AUTO then moves on). */
    rnnc_status (*can_train)(void *state);
    /* Optional (NULL: false): this call would run here on kernels made for
     * shapes nothing better fits (the fused backend's batch passes), which
     * cuDNN beats wherever it runs the call; AUTO then tries the next
     * backend in its order (cuDNN) before this one. */
    bool (*second_choice)(void *state, const rnnc_forward_args *a);
    /* Optional (NULL: the seed it was created with, or dropout states of
     * its own): the Philox seed of the dropout masks from the next
     * training forward on.  The model API calls it just before each
     * training call (an assignment: nothing rebuilt), so a backward always
     * has its forward's seed. */
    void (*set_seed)(void *state, uint64_t seed);
    void (*destroy)(void *state);
} rt_backend;

/* The backends: runtime/interp, runtime/cpu (RNNC_HAVE_LLVM) and
 * runtime/fused_grad (every build: without CUDA it says so); cudnn_fallback
 * has the cudnn one.  Declared here so that the model API needs only this. */
extern const rt_backend rt_backend_interp;
extern const rt_backend rt_backend_cpu;
extern const rt_backend rt_backend_fused;

/* Checks a forward call's shapes and lengths against the spec (every backend calls it). */
rnnc_status rt_check_forward(const rt_spec *s, const rnnc_forward_args *a);
/* Median host-clock ms of be->forward after `warmup` calls (the model API's
 * timing for backends whose time_forward is NULL). */
rnnc_status rt_time_host(const rt_backend *be, void *state, const rnnc_forward_args *a,
                         int warmup, int iters, double *median_ms);

/* Half-precision models (half.c): F16 or BF16 (converted with round to
 * nearest even); n floats rounded to the dtype in place (F32: unchanged);
 * a host backend's forward (fwd on fp32 copies of the caller's buffers,
 * outputs rounded back to the dtype). */
bool rt_dtype_is_half(rnnc_dtype t);
void rt_round_f32(rnnc_dtype t, float *p, size_t n);
rnnc_status rt_forward_half(const rt_spec *s, const rnnc_forward_args *a,
                            rnnc_status (*fwd)(void *, const rnnc_forward_args *), void *state);
/* The same for a backward of a training forward over T x B: dy and dfinal
 * converted to fp32, dx and dinit rounded back to the dtype. */
rnnc_status rt_backward_half(const rt_spec *s, int64_t T, int64_t B, const rnnc_backward_args *a,
                             rnnc_status (*bwd)(void *, const rnnc_backward_args *), void *state);

/* ---------------------------------------------------------------- dropout sites */

/* Between-layer dropout after layer l (the input of layer l+1). */
static inline uint64_t rt_dropout_site_layer(int layer)
{
    return (uint64_t)layer;
}

/* An in-cell dropout op with site number k (ir_node.i1) in pseudo-layer p. */
#define RT_DROPOUT_SITE_CELL 0x10000u
static inline uint64_t rt_dropout_site_cell(int pseudo, int k)
{
    return RT_DROPOUT_SITE_CELL + (uint64_t)pseudo * 256u + (uint64_t)k;
}

#endif
