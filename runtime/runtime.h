/*
 * runtime.h: the internal header of the runtime/ stage: what executes.
 *
 * Sections (one owner each; edit only your own section):
 *   1. model spec and backend interface (spec.c)       -- shared contract
 *   2. tensors and safetensors (tensors.c, safetensors.c)
 *   3. CUDA driver, loaded with dlopen (cuda.c)
 *   4. NVRTC, loaded with dlopen (nvrtc.c)
 *   5. kernel cache (cache*.c)
 *   6. Philox and dropout (philox.c)
 *   7. reference interpreter (interp*.c)
 *   8. fused GPU backend (fused*.c)
 *   9. CPU backend through LLVM ORC (cpu*.c)
 */
#ifndef RNNC_RUNTIME_H
#define RNNC_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"
#include "rnnc.h"

/* ================================================================ 1. model spec */

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
    void (*destroy)(void *state);
} rt_backend;

extern const rt_backend rt_backend_interp;
extern const rt_backend rt_backend_cpu;   /* RNNC_HAVE_LLVM */
extern const rt_backend rt_backend_fused; /* RNNC_HAVE_CUDA */

/* Checks a forward call's shapes and lengths against the spec (every backend calls it). */
rnnc_status rt_check_forward(const rt_spec *s, const rnnc_forward_args *a);

/* ================================================================ 2. tensors */

/* (tensors.c, safetensors.c implement the public rnnc_tensors_* API.) */

/* ================================================================ 3. CUDA driver */

/* ================================================================ 4. NVRTC */

/* ================================================================ 5. kernel cache */

/* ================================================================ 6. Philox and dropout */

/* ================================================================ 7. interpreter */

/* ================================================================ 8. fused GPU backend */

/* ================================================================ 9. CPU backend */

#endif /* RNNC_RUNTIME_H */
