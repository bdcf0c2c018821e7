/*
 * ir.h: the internal header of the ir/ stage.
 *
 * One step of a cell is a graph of nodes in one growable array; operands are
 * int32 indices of earlier nodes, so index order is a topological order.
 * The builder hash-conses (op, operands, attributes), so CSE comes free.
 *
 * Sections: dims (dim.c), cell and builder (cell.c, build.c), shapes
 * (shape.c), verifier (verify.c), printer (print.c), passes (pass_*.c),
 * schedule (pass_fuse.c), arena (arena.c); errors are common/'s (error.c).
 */
#ifndef RNNC_IR_H
#define RNNC_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "rnnc.h"

/* ---------------------------------------------------------------- arena (arena.c) */

/* One arena per compilation, freed at once. */
typedef struct ir_arena ir_arena;
ir_arena *ir_arena_create(void);
void ir_arena_destroy(ir_arena *a);
void *ir_arena_alloc(ir_arena *a, size_t n); /* zeroed, 16-byte aligned; NULL on OOM */

/* ---------------------------------------------------------------- dims (dim.c) */

/* A symbolic feature size: c + i*I + h*H + p*P. */
typedef struct ir_dim {
    int32_t c, i, h, p;
} ir_dim;

typedef struct ir_sizes {
    int64_t I, H, P; /* P == H when the model has no projection */
} ir_sizes;

ir_dim ir_dim_const(int32_t c);
bool ir_dim_eq(ir_dim a, ir_dim b);
ir_dim ir_dim_add(ir_dim a, ir_dim b);
bool ir_dim_is_const(ir_dim d, int32_t c);
/* Divides every coefficient by k; false if any is not a multiple. */
bool ir_dim_div(ir_dim d, int32_t k, ir_dim *out);
int64_t ir_dim_eval(ir_dim d, ir_sizes s);
bool ir_dim_uses_p(ir_dim d);
/* Parses "4H", "I", "H+I", "2*H", "1", "4 * H + 2"; false on error. */
bool ir_dim_parse(const char *s, ir_dim *out);
/* Canonical text ("4H", "H+I", "1"); buf of at least 48 bytes. */
const char *ir_dim_str(ir_dim d, char *buf, size_t n);

/* ---------------------------------------------------------------- ops (ops.def) */

enum {
    IR_F_LEAF = 1 << 0,
    IR_F_POINTWISE = 1 << 1,
    IR_F_UNARY = 1 << 2,
    IR_F_BINARY = 1 << 3,
    IR_F_COMMUTE = 1 << 4,
    IR_F_REDUCE = 1 << 5,
    IR_F_CONTRACT = 1 << 6,
    IR_F_GRAD = 1 << 7
};

typedef enum ir_op {
#define OP(id, name, arity, flags) IR_##id,
#include "ops.def"
#undef OP
    IR_NUM_OPS
} ir_op;

typedef struct ir_op_info {
    const char *name;
    int arity;
    unsigned flags;
} ir_op_info;

extern const ir_op_info ir_ops[IR_NUM_OPS];

/* ---------------------------------------------------------------- nodes and cells */

/* What a node's value is shaped like. */
typedef enum ir_kind {
    IR_ROW = 0,    /* per batch row: [B, cols] */
    IR_VEC = 1,    /* a parameter vector [cols], broadcast over rows */
    IR_MAT = 2,    /* a parameter matrix [rows, cols]; only linear reads it */
    IR_SCALAR = 3  /* a constant */
} ir_kind;

typedef struct ir_node {
    uint8_t op;    /* ir_op */
    uint8_t kind;  /* ir_kind, set by the builder's shape rules */
    uint16_t pad;
    int32_t a[3];  /* operands; -1 if unused */
    ir_dim rows;   /* IR_MAT only */
    ir_dim cols;   /* feature size (IR_ROW, IR_VEC, IR_MAT) */
    double f;      /* CONST value; LAYERNORM eps; DROPOUT p */
    int32_t i0;    /* CHUNK parts; leaves: slot in inputs/states/params */
    int32_t i1;    /* CHUNK index; DROPOUT site number */
} ir_node;

typedef struct ir_state {
    int32_t node; /* the STATE node */
    int32_t next; /* its value after the step; -1 until set */
    char *name;
} ir_state;

typedef struct ir_param {
    int32_t node;
    bool optional;
    char *name;
} ir_param;

typedef struct ir_input {
    int32_t node;
    char *name;
} ir_input;

/* struct rnnc_cell is the IR function of one step (cell.c owns its memory). */
struct rnnc_cell {
    char *name;
    ir_node *nodes;
    int32_t n, cap;
    /* hash-cons table: open addressing over node indices, -1 empty */
    int32_t *htab;
    int32_t hcap;
    ir_input *inputs;
    int32_t n_inputs, cap_inputs;
    ir_state *states;
    int32_t n_states, cap_states;
    ir_param *params;
    int32_t n_params, cap_params;
    int32_t output; /* -1 until set */
    int32_t n_dropout;
    /* declared names: open addressing over leaf node indices, -1 empty */
    int32_t *ntab;
    int32_t ncap;
    /* names the cell text gave to values (`gates = ...`): vnames[i] for node
     * i < n_vnames, NULL where none (names.c); kept through rewrites */
    char **vnames;
    int32_t n_vnames;
};

typedef struct rnnc_cell ir_fn;

/* Appends a node, or returns the index of an equal one (hash-consing).
 * The builder's public wrappers check operands and shapes first (build.c). */
rnnc_status ir_emit(ir_fn *f, const ir_node *n, int32_t *out);
/* Rebuilds the hash-cons table after a pass rewrote nodes in place. */
rnnc_status ir_rehash(ir_fn *f);
/* Index of the state/param/input with that node, or -1. */
int ir_state_of(const ir_fn *f, int32_t node);
int ir_param_of(const ir_fn *f, int32_t node);
/* Finds a declared name among inputs, states and params: its node or -1. */
int32_t ir_find_decl(const ir_fn *f, const char *name);
/* Indexes the name of a just-declared leaf for ir_find_decl. */
rnnc_status ir_index_decl(ir_fn *f, int32_t node);

/* ---------------------------------------------------------------- value names (names.c) */

/* Gives node `v` (not a declaration) the name `name`, unless it has one:
 * the first name a value gets is the one printed. */
rnnc_status ir_name_value(ir_fn *f, int32_t v, const char *name);
/* The name the cell gave node v, or NULL. */
const char *ir_value_name(const ir_fn *f, int32_t v);
/* dst's names from src's through map (src node -> dst node, -1 dropped). */
rnnc_status ir_names_carry(ir_fn *dst, const ir_fn *src, const int32_t *map);
rnnc_status ir_names_copy(ir_fn *dst, const ir_fn *src);
void ir_names_free(ir_fn *f);

/* ---------------------------------------------------------------- shapes (shape.c) */

/* Fills n->kind, n->rows, n->cols from the operands; RNNC_ERR_SHAPE with
 * detail when they do not agree. */
rnnc_status ir_infer_node(const ir_fn *f, ir_node *n);

/* ---------------------------------------------------------------- verifier (verify.c) */

/* Operands precede users, shapes agree, every state has a next value of its
 * own shape, the output is set and is a row value. */
rnnc_status ir_verify(const ir_fn *f);

/* ---------------------------------------------------------------- printer (print.c) */

/* Canonical .cell text (parses back to an equal cell). */
rnnc_status ir_print(const ir_fn *f, char **text);

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
/* Shape-checks *n against dst and emits it (the callbacks' default). */
rnnc_status ir_emit_node(ir_fn *dst, ir_node *n, int32_t *out);
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

/* ---------------------------------------------------------------- autodiff (autodiff.c) */

/*
 * The backward step of a cell (reverse mode).  `fn` is an IR function:
 *  - its params are the forward's, in the same slots;
 *  - its states are the adjoints of the forward's states, in the same
 *    slots, named d_<state>: a state's value is the gradient flowing into the
 *    forward's next value from later steps, and its next value is the
 *    gradient of the forward state entering this step;
 *  - its output is the gradient of the forward input at this step;
 *  - its inputs are described by `in` (the upstream gradient of the step's
 *    output, forward values of this step);
 *  - param_grad[k] is the node holding this step's gradient of forward param
 *    k, summed over batch rows (-1: zero); a driver sums them over time.
 * The forward saves `saved` (forward node indices) at every step; states
 * entering and leaving a step come from the state sequence.
 */
typedef enum ir_grad_src {
    IR_GSRC_DOUT = 0,  /* the upstream gradient of the forward output */
    IR_GSRC_INPUT = 1, /* forward input `ref` at this step */
    IR_GSRC_STATE = 2, /* forward state `ref` entering this step */
    IR_GSRC_NEXT = 3,  /* forward state `ref` leaving this step (its next value) */
    IR_GSRC_SAVED = 4  /* forward node `ref`, saved by the forward */
} ir_grad_src;

typedef struct ir_grad_in {
    ir_grad_src src;
    int32_t ref;
} ir_grad_in;

typedef struct ir_grad {
    ir_fn *fn;
    ir_grad_in *in;       /* [fn->n_inputs] */
    int32_t *param_grad;  /* [forward n_params] */
    int32_t *saved;       /* forward nodes, ascending */
    int32_t n_saved;
} ir_grad;

/* The backward step of a verified, specialised forward `f`. */
rnnc_status ir_autodiff(const ir_fn *f, ir_grad *out);
void ir_grad_free(ir_grad *g);
/* The backward step as .cell-like text, with the saved values and the
 * per-step parameter gradients (`rnnc dump --stage backward`). */
rnnc_status ir_grad_print(const ir_fn *f, const ir_grad *g, char **text);
/* True when the autodiff pass has a derivative rule for op. */
bool ir_has_derivative(int op);

/* Canonical text as ir_print, plus `label = value` lines after the output. */
rnnc_status ir_print_results(const ir_fn *f, const char *const *labels, const int32_t *nodes,
                             int n, char **text);

/* True when the name appears in RNNC_DUMP (comma-separated). */
bool ir_dump_enabled(const char *stage);

#endif /* RNNC_IR_H */
