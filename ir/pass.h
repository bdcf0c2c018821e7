/*
 * pass.h: the passes of ir/ and the schedule they produce.
 *
 * Owns: the rewriting driver (rewrite.c), specialisation and cleanup passes
 * (pass_drop_absent.c, pass_simplify.c, pass_cse.c, pass_dce.c), placement
 * and the schedule (pass_hoist.c, pass_fold.c, pass_fuse.c,
 * print_schedule.c), and the pipeline that runs them (optimise.c).
 * May use: the IR of ir/ir.h and the public header; nothing above ir/.
 * Included by ir/ir.h, so the stages above see it through that header.
 */
#ifndef RNNC_IR_PASS_H
#define RNNC_IR_PASS_H

#include "ir/ir.h"

/* ---------------------------------------------------------------- rewriting (rewrite.c) */

/*
 * Passes rebuild the function node by node into a fresh one, so indices
 * stay topological and hash-consing merges what a rewrite made equal.
 * The callback sees source node `i` with its operands already mapped into
 * `dst` (in *n; map[] holds every earlier node's image) and sets *out to a node of `dst`: ir_emit(dst, n) by
 * default, an existing node to replace it, or -1 to drop it (a dropped
 * node must have no remaining users; a dropped leaf leaves its list).
 * For a declaration (input, state, param) *out arrives as -2, which keeps
 * it under a fresh slot.
 */
typedef rnnc_status (*ir_rewrite_cb)(ir_fn *dst, const ir_fn *src, int32_t i, ir_node *n,
                                     const int32_t *map, void *ctx, int32_t *out);
rnnc_status ir_rewrite(ir_fn *f, ir_rewrite_cb cb, void *ctx);
/* Use counts of every node (operands, next values and the output). */
int32_t *ir_use_counts(const ir_fn *f);
/* live[i] = 1 for every node a next value or the output reaches (live
 * holds f->n zeroed bytes); one backward sweep. */
void ir_mark_live(const ir_fn *f, uint8_t *live);
/* True when v is the output or a state's next value. */
bool ir_is_result(const ir_fn *f, int32_t v);

/* ---------------------------------------------------------------- passes (pass_*.c) */

/*
 * Specialisation for a model (attributes were applied by the parser).  An
 * optional param is present when every symbol of its shape has a size; P
 * has one only when has_proj, and otherwise P means H.  Each pass rewrites
 * the function into a new, compacted one so indices stay topological.
 */
rnnc_status pass_drop_absent(ir_fn *f, bool has_proj);
/* The same for a model with bias=False too (no_bias): every optional param
 * named `bias` or `bias_*` is absent; a cell with none is refused. */
rnnc_status pass_drop_absent_bias(ir_fn *f, bool has_proj, bool no_bias);
rnnc_status pass_simplify(ir_fn *f);
rnnc_status pass_cse(ir_fn *f);
rnnc_status pass_dce(ir_fn *f);

/* Where a node is computed. */
typedef enum ir_part {
    IR_PART_DEAD = 0,
    IR_PART_FOLD = 1,  /* parameters and constants only: computed at weight binding */
    IR_PART_HOIST = 2, /* depends on the input, not on a state: time-parallel */
    IR_PART_STEP = 3   /* depends on a state: inside the time loop */
} ir_part;

/* Per-node facts the hoist pass computes. */
typedef struct ir_hoist {
    uint8_t *part;     /* [n] ir_part */
} ir_hoist;

/*
 * The schedule: what codegen consumes.
 *  - fold nodes feeding the other parts are materialised once at binding;
 *  - hoist_out: hoisted ROW nodes the step reads, each a [T, B, cols] buffer
 *    computed by one time-parallel GEMM with a fused epilogue;
 *  - the step: nodes of part STEP in index order; `phase` splits them where
 *    a node needs a whole vector computed earlier in the same step (the
 *    input of a linear, or a reduction over the feature axis): each phase
 *    boundary is a grid-wide exchange in a persistent kernel.
 */
typedef struct ir_schedule {
    const ir_fn *fn;
    ir_hoist hoist;
    int32_t *fold_out;
    int32_t n_fold_out;
    int32_t *hoist_out;
    int32_t n_hoist_out;
    int32_t *step;       /* STEP nodes in order */
    int32_t n_step;
    int32_t *phase;      /* [n] phase number of each STEP node, -1 otherwise */
    int32_t n_phases;
    rnnc_hoist setting;
} ir_schedule;

/* What each node depends on: IR_DEP_STATE > IR_DEP_INPUT > IR_DEP_NONE. */
enum { IR_DEP_NONE = 0, IR_DEP_INPUT = 1, IR_DEP_STATE = 2 };
void ir_compute_deps(const ir_fn *f, uint8_t *dep);

/* Classifies nodes (setting ALL, MATMUL or NONE). */
rnnc_status pass_hoist(const ir_fn *f, rnnc_hoist setting, ir_arena *a, ir_hoist *out);
/* Lists fold outputs (param-only non-MAT nodes read by other parts). */
rnnc_status pass_fold(const ir_fn *f, ir_schedule *s, ir_arena *a);
/* Builds the whole schedule (runs hoist and fold). */
rnnc_status pass_fuse(const ir_fn *f, rnnc_hoist setting, ir_arena *a, ir_schedule *out);
rnnc_status ir_schedule_print(const ir_schedule *s, char **text);

/* Runs drop_absent, simplify, cse, dce, with the verifier between passes;
 * `f` is rewritten in place.  RNNC_DUMP=ir,opt prints before and after. */
rnnc_status ir_optimise(ir_fn *f, bool has_proj);
/* A copy of `cell` optimised for a model with(out) projection: what every
 * backend and the cuDNN cell matcher see. */
rnnc_status ir_specialise(const ir_fn *cell, bool has_proj, ir_fn **out);
/* Both for a model without biases too (PyTorch's bias=False). */
rnnc_status ir_optimise_bias(ir_fn *f, bool has_proj, bool no_bias);
rnnc_status ir_specialise_bias(const ir_fn *cell, bool has_proj, bool no_bias, ir_fn **out);

#endif /* RNNC_IR_PASS_H */
