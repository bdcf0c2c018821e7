/*
 * eval.h: the internal header of runtime/eval: the double-precision
 * evaluator of one step of a cell (eval_frame.c) and the fold of
 * parameter-only vectors at weight binding (eval_fold.c).  The interpreter
 * runs whole sequences on it; the fused and cpu backends use only the fold,
 * so it sits below all three and calls none of them.
 *
 * Uses: common (Philox), ir, runtime/spec.
 */
#ifndef RNNC_RUNTIME_EVAL_H
#define RNNC_RUNTIME_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/spec/spec.h"

/* Weights in double, as rt_weights: w[pseudo * n_params + param], NULL for
 * an absent optional param. */
typedef struct rt_weights_f64 {
    const double *const *w;
    int n_params;
    int pseudo_layers;
} rt_weights_f64;

/*
 * The evaluator of one step (eval_frame.c), shared by the interpreter's
 * sequence driver and the fold.  Every node has a value of rows x cols doubles: rows = B for ROW
 * nodes, 1 otherwise.  The driver writes INPUT and STATE rows into buf[].
 */
typedef struct rt_frame {
    const ir_fn *f;
    ir_sizes sz;
    int64_t batch;
    const double *const *w; /* this pseudo-layer's params [n_params] */
    const double **val;     /* [n] each node's value; NULL: absent optional param */
    double **buf;           /* [n] storage owned by the frame */
    int64_t *cols;          /* [n] evaluated feature size (MAT: rows * cols) */
    bool training;
    uint64_t seed;
    int pseudo;
    /* The frame's rows are rows [row0, row0 + batch) of a batch of
     * rows_total (rt_frame_init: 0 and batch): dropout draws by the global
     * row, so a forward split over threads keeps its masks. */
    int64_t row0, rows_total;
} rt_frame;

rnnc_status rt_frame_init(rt_frame *fr, const ir_fn *f, ir_sizes sz, int64_t batch,
                          const double *const *w);
void rt_frame_free(rt_frame *fr);
/* Evaluates every node that does not vary per row (once per pseudo-layer). */
rnnc_status rt_frame_eval_fixed(rt_frame *fr);
/* Evaluates the ROW nodes of the step at time t (INPUT/STATE already in buf). */
rnnc_status rt_frame_eval_step(rt_frame *fr, int64_t t);
/* Evaluates node i alone (its operands already evaluated), at time t. */
rnnc_status rt_frame_eval_node(rt_frame *fr, int32_t i, int64_t t);

/* ------------------------------------------------------------ weights and fold (eval_fold.c) */

/* Double copies of the fp32 weights of the pseudo-layers [p0, p1) (of s;
 * without s, of the one cell f0 at sizes sz0); free with rt_eval_weights_free. */
rnnc_status rt_eval_weights(const rt_spec *s, const ir_fn *f0, ir_sizes sz0,
                            const rt_weights *w, int p0, int p1, double ***out);
void rt_eval_weights_free(double **w, int n);
/* A malloc'ed double copy of src[n] (NULL when out of memory). */
double *rt_eval_to_f64(const float *src, int64_t n);
void rt_eval_to_f32(float *dst, const double *src, int64_t n);
/* Evaluates the parameter-only (VEC or SCALAR) node `node` of f for pseudo-layer
 * `pseudo` into out[cols] (fold outputs are computed once at weight binding). */
rnnc_status rt_eval_fold(const ir_fn *f, ir_sizes sz, const rt_weights *w, int pseudo,
                         int32_t node, float *out);

#endif
