/*
 * ir.h: the internal header of the ir/ stage.
 *
 * One step of a cell is a graph of nodes in one growable array; operands are
 * int32 indices of earlier nodes, so index order is a topological order.
 * The builder hash-conses (op, operands, attributes), so CSE comes free.
 *
 * This header owns the IR itself: errors (error.c), arena (arena.c), dims
 * (dim.c), the op table (ops.def), nodes and cells (cell.c), the typed
 * builder (build.c), value names (names.c), shapes (shape.c), the verifier
 * (verify.c) and the printer (print.c).  It may use only the public header.
 * Two parts of the stage have headers of their own, included at the end so
 * that the stages above include this one header:
 *   ir/pass.h     rewriting, the passes and the schedule codegen consumes;
 *   ir/autodiff.h the backward step of a cell.
 */
#ifndef RNNC_IR_H
#define RNNC_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rnnc.h"

/* ---------------------------------------------------------------- errors (error.c) */

/* Records a printf-style detail for rnnc_last_error() and returns `s`. */
rnnc_status rnnc_fail(rnnc_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends more detail to the current error text ("; " separated). */
void rnnc_fail_append(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void rnnc_clear_error(void);

/* ---------------------------------------------------------------- arena (arena.c) */

/* One arena per compilation, freed at once. */
typedef struct ir_arena ir_arena;
ir_arena *ir_arena_create(void);
void ir_arena_destroy(ir_arena *a);
void *ir_arena_alloc(ir_arena *a, size_t n); /* zeroed, 16-byte aligned; NULL on OOM */
char *ir_arena_strdup(ir_arena *a, const char *s);

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
ir_dim ir_dim_mul(ir_dim d, int32_t k);
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
/* The op of a name, or -1. */
int ir_op_from_name(const char *name);

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

/* Appends a node as it is, or returns the index of an equal one
 * (hash-consing); ir_emit_node (build.c) shape-checks it first. */
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

/* ---------------------------------------------------------------- builder (build.c) */

/*
 * The typed builder: dims are ir_dim values, never text.  The public
 * rnnc_cell_* calls (frontend/build.c) parse their dim text and come here;
 * passes and the stages below call these directly.  Declarations fail on an
 * invalid or repeated name; rows NULL declares a vector parameter.
 */
rnnc_status ir_check_decl_name(const ir_fn *f, const char *name);
rnnc_status ir_decl_input(ir_fn *f, const char *name, ir_dim cols, int32_t *out);
rnnc_status ir_decl_state(ir_fn *f, const char *name, ir_dim cols, int32_t *out);
rnnc_status ir_decl_param(ir_fn *f, const char *name, const ir_dim *rows, ir_dim cols,
                          bool optional, int32_t *out);
/* A finite constant (RNNC_ERR_INVALID_ARG otherwise). */
rnnc_status ir_emit_const(ir_fn *f, double v, int32_t *out);
/* Shape-checks *n against f (filling its kind and dims) and emits it. */
rnnc_status ir_emit_node(ir_fn *f, ir_node *n, int32_t *out);
/* A dropout site of its own (sites never merge: each draws its own mask). */
rnnc_status ir_emit_dropout(ir_fn *f, int32_t x, double p, int32_t *out);
/* The step's results: a state's next value (a row of its shape), the output. */
rnnc_status ir_set_next(ir_fn *f, int32_t state, int32_t next);
rnnc_status ir_set_output(ir_fn *f, int32_t out);

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
/* Re-infers every node in order (after a pass). */
rnnc_status ir_infer_all(ir_fn *f);

/* ---------------------------------------------------------------- verifier (verify.c) */

/* Operands precede users, shapes agree, every state has a next value of its
 * own shape, the output is set and is a row value. */
rnnc_status ir_verify(const ir_fn *f);

/* ---------------------------------------------------------------- printer (print.c) */

/* Canonical .cell text (parses back to an equal cell). */
rnnc_status ir_print(const ir_fn *f, char **text);
/* Canonical text as ir_print, plus `label = value` lines after the output. */
rnnc_status ir_print_results(const ir_fn *f, const char *const *labels, const int32_t *nodes,
                             int n, char **text);

/* True when the name appears in RNNC_DUMP (comma-separated). */
bool ir_dump_enabled(const char *stage);

/* The stage's other parts (each includes this header first). */
#include "ir/pass.h"
#include "ir/autodiff.h"

#endif /* RNNC_IR_H */
