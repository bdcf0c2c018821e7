/*
 * interp.h: the internal header of runtime/interp: the reference
 * interpreter, the oracle of every test (docs/interpreter.md): whole
 * sequences in double (interp_seq.c), their gradients (interp_grad*.c),
 * training on the backend (interp_train.c) and the backend itself
 * (interp_backend.c).
 *
 * Uses: common, ir, runtime/spec, runtime/eval.
 */
#ifndef RNNC_RUNTIME_INTERP_H
#define RNNC_RUNTIME_INTERP_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/eval/eval.h"

/* One forward in double on host arrays; shapes as in rnnc_forward_args. */
typedef struct rt_seq_f64 {
    int64_t seq_len;
    int64_t batch;
    const double *x;           /* [T,B,I] or [B,T,I] with batch_first */
    const double *const *init; /* n_states entries or NULL; an entry NULL = zeros */
    const int64_t *lengths;    /* [B], each in [1, T]; NULL = all T */
    double *y;                 /* [T,B,D*Hout] or [B,T,D*Hout] */
    double *const *final;      /* n_states entries or NULL; an entry NULL = not wanted */
    bool training;
} rt_seq_f64;

/* The oracle: runs the whole model in double precision (docs/interpreter.md). */
rnnc_status rt_interp_run(const rt_spec *s, const rt_weights_f64 *w, const rt_seq_f64 *q);
/* The frame of pseudo-layer (layer, dir) over `rows` rows, with its
 * dropout stream (training, the model's seed, the pseudo-layer), and in
 * *state_n the doubles its states take; the forward and the backward open
 * their frames this way so that both draw the same masks. */
rnnc_status rt_interp_frame(rt_frame *fr, const rt_spec *s, const rt_weights_f64 *w, int layer,
                            int dir, int64_t rows, bool training, int64_t *state_n);
/*
 * Backward (interp_grad*.c): the gradients of a whole model in double, by
 * the backward step of ir_autodiff run in reverse time; the forward is run
 * again inside, recording what the backward step reads.  Shapes as in
 * rnnc_backward_args; dw[p * n_params + k] has the element count of weight
 * (p, k) and receives its gradient (NULL entries: not wanted).
 */
typedef struct rt_grad_f64 {
    const double *dy;            /* [T,B,D*Hout] ([B,T,..] with batch_first) */
    const double *const *dfinal; /* n_states entries or NULL; an entry NULL = zero */
    double *dx;                  /* as x, or NULL */
    double *const *dinit;        /* n_states entries or NULL; an entry NULL = not wanted */
    double *const *dw;           /* pseudo_layers * n_params entries */
} rt_grad_f64;

rnnc_status rt_interp_grad(const rt_spec *s, const rt_weights_f64 *w, const rt_seq_f64 *q,
                           const rt_grad_f64 *g);
/* Training on the interp backend (interp_train.c): a training forward's
 * inputs kept by _keep (an inference forward forgets them), then one
 * backward, then the weight gradients (fp32 out). */
typedef struct rt_interp_train rt_interp_train;
rnnc_status rt_interp_train_keep(rt_interp_train **t, const rt_spec *s,
                                 const rnnc_forward_args *a);
rnnc_status rt_interp_train_backward(rt_interp_train *t, const rt_spec *s,
                                     const rt_weights_f64 *w, const rnnc_backward_args *a);
rnnc_status rt_interp_train_weight_grad(const rt_interp_train *t, const rt_spec *s, int pseudo,
                                        int param, float *out, int64_t count);
void rt_interp_train_free(rt_interp_train *t);
/* The kept training forward's T and B; false when there is none. */
bool rt_interp_train_shape(const rt_interp_train *t, int64_t *T, int64_t *B);
/* Evaluates the nodes of a backward step that depend on no input or state
 * (fixed) or the others (at time t); dep from ir_compute_deps. */
rnnc_status rt_grad_frame_eval(rt_frame *fr, const uint8_t *dep, bool fixed, int64_t t);

#endif
