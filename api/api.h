/*
 * api.h: the internal header of api/: the model API (rnnc_model_*), which
 * specialises a cell for a model, binds weights by state_dict name and
 * drives the chosen backend; and the stage dumps.
 *
 * Sections: model (model.c), weights (weights.c), backends (backends.c),
 * dumps (dump.c).
 */
#ifndef RNNC_API_H
#define RNNC_API_H

#include "cudnn_fallback/fallback.h"
#include "runtime/cache/cache.h"
#include "runtime/spec/spec.h"

/* One weight a model expects: `<param>_l<k>[_reverse]`. */
typedef struct api_weight {
    char name[96];
    int pseudo, param;
    int rank;
    int64_t shape[2];
    int64_t count;
    float *data;
    bool set;
} api_weight;

/* A packed training forward that the backend ran on a padded copy: its
 * backward unpacks dy and packs dx the same way (packed.c). */
typedef struct api_packed_call {
    bool on;
    int64_t T, B;
    int64_t *batch_sizes; /* [T], owned */
} api_packed_call;

/* One opened backend.  A model made with AUTO opens another whenever the
 * ones before it in the order refuse a call (lengths, training, a shape). */
typedef struct api_slot {
    const rt_backend *be;   /* NULL: not opened */
    void *state;
    unsigned bound_gen;     /* the weights generation it last bound */
    bool refused;           /* its create failed: not tried again */
} api_slot;

#define API_N_BACKENDS 5

struct rnnc_model {
    rt_spec spec;
    rnnc_cell *fn;           /* the cell optimised for this model (owned) */
    bool auto_pick;          /* made with AUTO: every call picks its backend */
    api_slot slot[API_N_BACKENDS]; /* by rnnc_backend */
    rnnc_backend kind;       /* the slot that ran the last call (or was opened first) */
    const rt_backend *be;    /* slot[kind].be, slot[kind].state */
    void *be_state;
    api_weight *weights;     /* pseudo-major, as rt_weights */
    int n_weights;
    const float **wptr;      /* rt_weights.w */
    unsigned weights_gen;    /* bumped on every weight change */
    void *ext_weights;       /* a caller's flat weight buffer (cudnn), or NULL */
    api_packed_call packed;  /* the last training forward, when it was packed */
    char race_key[384];      /* AUTO's last race between fused and cudnn (auto_race.c) */
    char race_model[320];    /* the model's part of its key ("": not made yet) */
    bool race_cudnn;         /* and whether cudnn won it */
};

/* ---- weights (weights.c) */
rnnc_status api_weights_init(rnnc_model *m);
void api_weights_free(rnnc_model *m);
/* Binds to the current backend if every weight is set and something changed
 * since it last bound. */
rnnc_status api_weights_sync(rnnc_model *m);

/* The weight `name`, or NULL. */
api_weight *api_weight_find(rnnc_model *m, const char *name);
/* RNNC_ERR_STATE: the model reads a caller's weight buffer (weights_device.c). */
rnnc_status api_weights_refuse_external(const rnnc_model *m);

/* ---- packed sequences (packed.c) */
int64_t api_packed_rows(const int64_t *batch_sizes, int64_t T);
/* lengths[b] = the steps t with batch_sizes[t] > b. */
void api_packed_lengths(const int64_t *batch_sizes, int64_t T, int64_t B, int64_t *lengths);
/* Packed rows [sum(batch_sizes), feat] to padded [T, B, feat] ([B, T, feat]
 * batch_first) with zeros past each end, and back; esz bytes an element. */
void api_unpack(const void *packed, const int64_t *batch_sizes, int64_t T, int64_t B,
                int64_t feat, size_t esz, bool batch_first, void *padded);
void api_pack(const void *padded, const int64_t *batch_sizes, int64_t T, int64_t B, int64_t feat,
              size_t esz, bool batch_first, void *packed);
/* A packed call on the current backend, which reads padded tensors:
 * forward, or timing into *ms when ms is not NULL. */
rnnc_status api_forward_packed(rnnc_model *m, const rnnc_forward_args *a, int warmup, int iters,
                               double *ms);
/* Forgets the last packed training forward (every forward starts so). */
void api_packed_forget(rnnc_model *m);
/* The backward of a packed training forward run on a padded copy: dy
 * unpacked, the padded backward, dx packed. */
rnnc_status api_backward_packed(rnnc_model *m, const rnnc_backward_args *a);

/* ---- backends (backends.c) */
const rt_backend *api_backend_ops(rnnc_backend b);
/* Creates the backend for `want`; AUTO opens the first of fused, cudnn, cpu,
 * interp that this machine has and that accepts the model. */
rnnc_status api_backend_open(rnnc_model *m, rnnc_backend want);
void api_backend_close_all(rnnc_model *m);
/* One call on the current backend: forward, or timed forward. */
typedef rnnc_status (*api_call_fn)(rnnc_model *m, const rnnc_forward_args *a, void *ctx);
/* Runs `call` on the current backend, or for an AUTO model on the first of
 * fused, cudnn, cpu, interp that accepts it (backends.c: a training forward
 * first on one that can also run its backward; device pointers only on
 * fused and cudnn): a backend that refuses the call (UNSUPPORTED, NO_DEVICE,
 * NOT_BUILT) passes it to the next.  The one that ran becomes current. */
rnnc_status api_backend_run(rnnc_model *m, const rnnc_forward_args *a, api_call_fn call, void *ctx);
/* Runs `call` on backend b as AUTO tries one (opened; with need_backward,
 * refused where b could not differentiate it; weights bound); b stays the
 * current backend unless it refused. */
rnnc_status api_backend_try(rnnc_model *m, rnnc_backend b, const rnnc_forward_args *a,
                            api_call_fn call, void *ctx, bool need_backward);

/* ---- timing calls (model.c, time_train.c): api_call_fns whose ctx is an
 * api_timing; b is the backward of a training step (time_train.c only) */
typedef struct api_timing {
    const rnnc_backward_args *b;
    int warmup, iters;
    double *median_ms;
} api_timing;
rnnc_status api_call_time(rnnc_model *m, const rnnc_forward_args *a, void *ctx);
rnnc_status api_call_time_training(rnnc_model *m, const rnnc_forward_args *f, void *ctx);

/* ---- bundles (bundle.c) */
/* Loads the bundles RNNC_BUNDLE names (paths separated by ':'), once a
 * process, before the first model is made or a backend's availability
 * asked: one that cannot be loaded is warned about on stderr, and models
 * compile their code as without it. */
void api_bundles_from_env(void);

/* ---- AUTO between fused and cudnn (auto_race.c) */
/* For an AUTO call that the fused backend and cudnn may both run: whether
 * cudnn goes first, from a race timed once per shape (cudnn first: a cell
 * it refuses costs no fused timing) and kept with the tuning records. */
bool api_race_cudnn_first(rnnc_model *m, const rnnc_forward_args *a);

#endif /* RNNC_API_H */
