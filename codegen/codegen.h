/*
 * codegen.h: the internal header of the codegen/ stage: schedule -> source
 * (CUDA C) or module (LLVM IR).  Nothing here runs code; runtime/ does.
 *
 * Sections (one owner each; edit only your own section):
 *   1. CUDA C generator (the files in codegen/cuda)
 *   2. LLVM IR generator (the files in codegen/llvm)
 */
#ifndef RNNC_CODEGEN_H
#define RNNC_CODEGEN_H

#include "ir/ir.h"
#include "rnnc.h"

/* ================================================================ 1. CUDA */

/*
 * The CUDA generator (docs/fused-kernel.md).  A schedule becomes one source
 * holding, in launch order: a GEMM per hoisted linear (epilogue fused where
 * the hoisted work is pointwise per column), a row kernel for the rest of the
 * hoisted work (layernorm, chunks), and ONE persistent step kernel for all T
 * steps.  Every kernel takes the same arguments (CG_CUDA_ARGS), so the runtime
 * launches them in order with one argument array.  The step kernel runs one
 * direction of one layer: `len` (NULL: every row T long) is each batch row's
 * length, a per-row step limit (rows past their end keep their states and
 * write zeros to y); `rev` walks each row from its own end.  st holds three
 * copies of the states: two for the steps, the third the final states.
 */
#define CG_CUDA_MAX_ITEMS 64
#define CG_CUDA_MAX_LAUNCH 8
#define CG_CUDA_ARGS                                                                           \
    "const float *__restrict__ x, float *__restrict__ y, float *st, float *hz, "              \
    "const float *__restrict__ fold, const float *__restrict__ wts, float *xb, float *part, " \
    "unsigned *bar, int T, const int *__restrict__ len, int rev"

typedef struct cg_cuda_config {
    ir_sizes sizes;
    int64_t batch;     /* B: compiled in */
    int sm;            /* target, e.g. 90 for sm_90 */
    int sm_count;      /* SMs of the device (0: 132), bounds the persistent grid */
    bool batch_first;  /* x and y are [B, T, *] */
    int64_t y_ld;      /* floats between rows of y (0: the output's width); a direction
                          of a bidirectional layer writes its columns of [*, 2 * Hout] */
    /* Tuning; 0 = the generator's choice. */
    int unit_tile;     /* hidden units per block */
    int batch_tile;    /* batch rows per block */
    int threads;       /* threads of a step block (multiple of 32) */
    int smem_limit;    /* bytes of shared memory a block may use (0: 227 KiB) */
    int gemm_rows;     /* rows of a hoisted GEMM tile: 32, 64 or 128 (0: by batch size) */
    int exchange;      /* how blocks of the step kernel hand states to each other:
                          1 flags and a barrier per phase, 2 tagged words polled by the
                          readers, no barrier (single-phase cells without reductions;
                          else 1); 0: 2 when B <= 8 and possible */
    int math;          /* rnnc_math: 0 FFMA; 1 TF32, 2 3xTF32 tensor cores (cuda_mma.c)
                          where the shape allows, else FFMA */
} cg_cuda_config;

typedef struct cg_cuda_launch {
    char name[32];
    unsigned grid;           /* grid.x when rows_per_block is 0 */
    unsigned rows_per_block; /* else grid.x = ceil(T*B / rows_per_block) */
    unsigned grid_y;
    unsigned threads;
    unsigned smem;
    bool cooperative;
    unsigned min_rows, max_rows; /* runs only when min_rows <= T*B < max_rows (0: no bound):
                                    a hoisted GEMM's tiles for long and for short sequences */
} cg_cuda_launch;

/* Where a value lives in one of the kernels' buffers (offsets in floats). */
typedef struct cg_cuda_slot {
    int32_t id;     /* node (folds), param index (weights) or state index */
    int64_t offset;
    int64_t count;  /* floats (weights: rows * cols; states: cols) */
} cg_cuda_slot;

/* What the runtime must allocate, fill and launch for a generated source. */
typedef struct cg_cuda_plan {
    cg_cuda_launch launch[CG_CUDA_MAX_LAUNCH];
    int n_launch;
    cg_cuda_slot fold[CG_CUDA_MAX_ITEMS]; /* fold arena: rt_eval_fold of node id */
    int n_fold;
    int64_t fold_floats;
    cg_cuda_slot wts[CG_CUDA_MAX_ITEMS];  /* weight arena: matrices by param index */
    int n_wts;
    int64_t wts_floats;
    cg_cuda_slot state[CG_CUDA_MAX_ITEMS]; /* one copy [B, cols] each; st holds two copies */
    int n_states;
    int64_t state_floats;                  /* floats of one copy */
    int64_t hz_cols;                       /* hz arena: T*B*hz_cols floats */
    int64_t xb_floats, part_floats;
    int64_t xb_zero_floats;                /* the first floats of xb, zeroed before each forward */
    int64_t out_cols;                      /* y: [T, B, out_cols] */
    int64_t in_cols;                       /* x: [T, B, in_cols] */
    char tuning[96];                       /* the chosen tiles, as text */
} cg_cuda_plan;

/* CUDA C for the schedule (caller frees *src with free()).  A node the
 * generator cannot place is RNNC_ERR_UNSUPPORTED naming its op. */
rnnc_status cg_cuda_source(const ir_schedule *s, const cg_cuda_config *cfg, char **src);
/* The same, with what the runtime needs to run it. */
rnnc_status cg_cuda_generate(const ir_schedule *s, const cg_cuda_config *cfg, char **src,
                             cg_cuda_plan *plan);

/* ---- internal to codegen/cuda (shared by its files) ---- */

typedef struct cg_text {
    char *p;
    size_t n, cap;
    bool oom;
} cg_text;

void cg_printf(cg_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* How a node is placed. */
enum {
    CG_NONE = 0,
    CG_LEAF_CONST,   /* literal */
    CG_LEAF_FOLD,    /* fold arena */
    CG_LEAF_INPUT,   /* x */
    CG_LEAF_STATE,   /* state buffer (this step's copy) */
    CG_HOIST_BUF,    /* hz arena, materialised by the hoisted part */
    CG_HOIST_VIEW,   /* chunk/concat of a hoisted buffer: read through */
    CG_HOIST_TMP,    /* hoisted, computed only inside the row kernel */
    CG_STEP_LINEAR,  /* step GEMM, result in shared memory */
    CG_STEP_ELEM,    /* step, computed per element (unit, batch row) */
    CG_STEP_GATHER   /* step chunk/concat read only as a linear's x */
};

typedef struct cg_ctx {
    const ir_schedule *s;
    const ir_fn *f;
    cg_cuda_config cfg;
    cg_cuda_plan *plan;
    int64_t B, I;
    int64_t H;        /* slice width: the hidden size, or gcd(H, P) with a projection */
    int64_t *cols;    /* [n] */
    int32_t *k;       /* [n] slices of H (0: one value per row; -1: not sliceable) */
    uint8_t *role;    /* [n] CG_* */
    int32_t *phase;   /* [n] step phase, -1 otherwise */
    int64_t *off;     /* [n] offset in the fold, weight or hz arena (by role) */
    int64_t *xb;      /* [n] global exchange slot (CG_NEED_XB) */
    int64_t *xp;      /* [n] shared slot of a per-element value kept across phases */
    int64_t *sm;      /* [n] shared slot: a linear's result, a reduction's row stats */
    int64_t *wsm;     /* [n] shared slot of a step linear's weight slice */
    int64_t *pt;      /* [n] global partial-sum slot of a reduction over a step value */
    int32_t *ks;      /* [n] step linear: K split across lanes */
    int32_t *kp;      /* [n] step linear: padded row length of its weight slice in shared memory */
    int32_t *kc;      /* [n] step linear: columns of x staged at once (K in chunks of kc) */
    int32_t *xkp;     /* [n] step linear: padded row length of staged x */
    uint8_t *need;    /* [n] bit flags CG_NEED_* */
    int32_t *gemm;    /* [n] for hoisted buffers fused into a GEMM: the linear, else -1 */
    /* step tiling */
    int UT, BT, BTP, NUB, NBB, NT, RR, BB;
    /* Weights streamed from L2/HBM every step (they do not fit on chip). */
    bool stream;
    /* One element per thread (E <= NT): per-element leaves (folds, hoisted
     * values, x, states) live in registers r<v>_<slice>; pfuse[v] is the mask
     * of slices read, found by a dry run of the step's emission. */
    bool pf;
    uint32_t *pfuse;
    /* Tagged exchange (cuda_ll.c): states read whole are published as 64-bit
     * words (value, step tag) at xb + xb[state], two copies by step parity. */
    bool ll;
    /* The step's linears run on tensor cores (cuda_mma.c). */
    bool mma;
    int64_t smem_floats, lin_floats, xs_floats, xp_floats, stat_floats, red_floats;
    int64_t wsm_floats;
} cg_ctx;

enum {
    CG_NEED_XP = 1,    /* per-element value kept in shared memory for a later phase */
    CG_NEED_XB = 2,    /* whole vector written to global for a later phase's linear */
    CG_NEED_PART = 4,  /* block partial sums for a later reduction */
    CG_NEED_ROWS = 8,  /* hoisted linear read by the row kernel (plain GEMM output) */
    CG_NEED_WHOLE = 16 /* state read as a whole vector (a linear's x, a reduction) */
};

rnnc_status cg_analyse(cg_ctx *c);
/* The step kernel's tiles and shared-memory layout (after cg_analyse's placement). */
rnnc_status cg_choose_tiles(cg_ctx *c);
rnnc_status cg_emit_hoist(cg_ctx *c, cg_text *t);
rnnc_status cg_emit_step(cg_ctx *c, cg_text *t);
/* Expression of node v, slice sl, at the current element of the step kernel
 * (locals u, b, gu, gb, row, t in scope).  Writes into buf; false with an
 * error recorded when v has no per-element value there. */
bool cg_elem_expr(const cg_ctx *c, int32_t v, int sl, int cur_phase, char *buf, size_t n);
/* Expression of a whole-vector value v at batch row `gb` and column `col`
 * (C expressions) for staging a linear's x. */
bool cg_gather_expr(const cg_ctx *c, int32_t v, const char *col, char *buf, size_t n);
/* The memory read of leaf v (fold, input, state, hoisted buffer), slice sl,
 * at the current element (u, gu, gb, row, cur in scope); false otherwise. */
bool cg_leaf_load(const cg_ctx *c, int32_t v, int sl, char *buf, size_t n);
/* Leaf v is kept in registers in the step kernel (c->pf and few slices). */
bool cg_in_regs(const cg_ctx *c, int32_t v);
/* The register caches of the step kernel (cuda_regs.c): declarations, the
 * loads before the time loop, and the prefetch of step t+1's values. */
void cg_emit_reg_decls(const cg_ctx *c, cg_text *t);
void cg_emit_reg_loads(const cg_ctx *c, cg_text *t, bool first);
/* The tagged exchange (cuda_ll.c). */
bool cg_ll_possible(const cg_ctx *c);
void cg_ll_place(cg_ctx *c);
void cg_emit_ll_prelude(cg_text *t);
void cg_emit_ll_publish(const cg_ctx *c, cg_text *t);
void cg_emit_ll_stage(const cg_ctx *c, int32_t lin, cg_text *t);
/* Batched 16-byte copies global -> shared (cuda_regs.c); the weight slices. */
void cg_emit_copy4(cg_text *t, long long n4, const char *idx, const char *cond,
                   const char *src, const char *dst, bool cached);
void cg_emit_weights(const cg_ctx *c, cg_text *t);
const char *cg_float_lit(double v, char *buf, size_t n);
/* Tensor cores for the TF32 math modes (cuda_mma.c): the device helpers
 * (nothing in FFMA); whether a step linear fits with x staged `chunk`
 * columns at a time; the step linear (stage: the x staging of
 * cuda_step.c); whether a hoisted GEMM tile runs on them, its accumulator
 * layout (tile row/column expressions of i and j) and one K slice. */
void cg_emit_mma_helpers(const cg_ctx *c, cg_text *t);
bool cg_mma_fits(const cg_ctx *c, int32_t lin, int64_t chunk);
rnnc_status cg_emit_mma_linear(const cg_ctx *c, int32_t lin, cg_text *t,
                               rnnc_status (*stage)(const cg_ctx *, int32_t, bool, cg_text *));
bool cg_mma_gemm(const cg_ctx *c, int bm, int bn, int bk);
void cg_mma_gemm_layout(int bm, int bn, int *tm, int *tn, char *ri, char *ci, size_t n);
void cg_emit_mma_gemm_slice(cg_text *t, int bm, int bn, int bk);
/* CUDA C of a pointwise op: a printf format of its one operand ("tanhf(%s)"),
 * or the infix operator of a binary op; NULL for other ops (cuda_text.c). */
const char *cg_unary_fmt(int op);
const char *cg_binary_op(int op);

/* ================================================================ 2. LLVM */

/*
 * The CPU plan (codegen/llvm/cpu_plan.c): where each value of a schedule
 * lives on the CPU, shared by the generated module and runtime/cpu*.c.
 * A value stored in memory lives in a slot: a row buffer [rows, ld] (rows
 * = T*B for the hoisted part, B for the step) or a fold vector [ld].  The
 * generated element-wise functions take `float *const *slots` (row 0 of
 * each buffer) and a row range; linears are GEMMs driven from C with
 * generated micro-kernels.  Every ld is a multiple of the panel width nr,
 * and every buffer has 2*nr floats of slack after its last row, so the
 * generated code loads and stores whole vectors without masks.
 */
typedef enum cg_slot_kind {
    CG_SLOT_INPUT = 0, /* the cell's input (index: input number) */
    CG_SLOT_STATE = 1, /* a state's current value (index: state number) */
    CG_SLOT_NODE = 2,  /* a materialised ROW node (index: node) */
    CG_SLOT_FOLD = 3,  /* a fold vector computed at binding (index: node) */
    CG_SLOT_MASK = 4   /* the scaled keep mask of a dropout node (index: node) */
} cg_slot_kind;

typedef struct cg_slot {
    int kind;       /* cg_slot_kind */
    int part;       /* ir_part whose buffers hold it: HOIST (rows T*B) or STEP (rows B) */
    int32_t index;
    int64_t cols;
    int64_t ld;
    bool step_reads; /* a HOIST/INPUT slot the step (or its outputs) reads at time t */
} cg_slot;

/* A linear out = x @ W^T: W is [n, k], packed at binding into panels of nr columns. */
typedef struct cg_gemm {
    int32_t node;
    int32_t param;          /* W's index in fn->params */
    int32_t a_slot, c_slot; /* x's slot and the output's */
    int64_t a_off;          /* x's column offset in its slot */
    int64_t k, n;
    int part;               /* IR_PART_HOIST or IR_PART_STEP */
    int stage;
} cg_gemm;

/* One block of an element-wise function: a fused column loop, a reduction
 * (sum/mean) or a concat copy. */
typedef enum cg_block_kind { CG_BLOCK_LOOP = 0, CG_BLOCK_REDUCE = 1, CG_BLOCK_COPY = 2 } cg_block_kind;

typedef struct cg_block {
    int kind;
    int64_t cols;
    int32_t first, count; /* its nodes: plan->ew_nodes[first .. first+count) */
} cg_block;

/* A stage of a part: its GEMMs run, then its element-wise function (if any). */
typedef struct cg_stage {
    int32_t first_gemm, n_gemms; /* plan->gemms[first_gemm ..) */
    int32_t first_block, n_blocks;
} cg_stage;

#define CG_MAX_STAGES 16

typedef struct cg_cpu_plan {
    const ir_schedule *sched;
    const ir_fn *fn;
    ir_sizes sizes;
    int vw, mr, nr; /* vector width (floats), micro-kernel rows, panel columns (2*vw) */
    cg_slot *slots;
    int32_t n_slots;
    int32_t *node_slot; /* [fn->n] slot of each node's value, -1 when none */
    int64_t *node_off;  /* [fn->n] its column offset there (chunk views) */
    int32_t *block_of;  /* [fn->n] element-wise block computing it, -1 when none */
    int32_t *state_slot; /* [n_states] */
    int32_t input_slot;
    cg_gemm *gemms;
    int32_t n_gemms;
    int32_t *ew_nodes; /* nodes of all blocks */
    cg_block *blocks;
    int32_t n_blocks;
    cg_stage stages[2][CG_MAX_STAGES]; /* [0]: hoisted part, [1]: the step */
    int n_stages[2];
} cg_cpu_plan;

/* Micro-kernel rows for a vector width (8 for 16, 6 for 8, 4 otherwise). */
int cg_cpu_mr(int vw);
/* Lays out `s` for sizes `sz` and vector width `vw` (4, 8 or 16); memory
 * from `a`.  RNNC_ERR_UNSUPPORTED names an op or shape the CPU cannot run. */
rnnc_status cg_cpu_plan_build(const ir_schedule *s, ir_sizes sz, int vw, ir_arena *a,
                              cg_cpu_plan *out);
/* Symbol names in the module of prefix `pfx`: element-wise function of
 * (part 0 hoist / 1 step, stage) and the micro-kernel of gemm g with mr rows. */
void cg_cpu_ew_name(char *buf, size_t n, const char *pfx, int part, int stage);
void cg_cpu_mk_name(char *buf, size_t n, const char *pfx, int32_t g, int mr);
/* The mask slot of a dropout node, -1 when none (p <= 0: the identity). */
int32_t cg_cpu_mask_slot(const cg_cpu_plan *p, int32_t node);

/* Signatures of the generated functions. */
typedef void (*cg_cpu_ew_fn)(float *const *slots, int64_t r0, int64_t r1);
typedef void (*cg_cpu_mk_fn)(const float *a, const float *bpanel, float *c);

#ifdef RNNC_HAVE_LLVM
#include <llvm-c/Core.h>
/* Emits the element-wise functions and micro-kernels of `p` into a new
 * module of `ctx` (names start with `pfx`), tagged for `cpu`/`features`. */
rnnc_status cg_llvm_cpu_module(const cg_cpu_plan *p, const char *pfx, LLVMContextRef ctx,
                               const char *cpu, const char *features, LLVMModuleRef *out);

/* The emitter's state, shared by codegen/llvm/cpu_*.c (not for other stages). */
typedef struct cg_em {
    LLVMContextRef cx;
    LLVMModuleRef m;
    LLVMBuilderRef b;
    const cg_cpu_plan *p;
    const char *cpu, *features;
    LLVMTypeRef f32, i32, i64, vt, vi, pf, ppf;
    LLVMValueRef fn;    /* the function being emitted */
    LLVMValueRef *base; /* [n_slots] slot pointers loaded at entry */
    LLVMValueRef *val;  /* [fn->n] values of the current loop iteration */
    LLVMValueRef r, j;  /* row and column of the current iteration */
    int32_t block;      /* the block being emitted */
    rnnc_status st;     /* the first failure */
} cg_em;

/* Vector helpers (cpu_vec.c). */
LLVMValueRef cg_em_splat(cg_em *e, LLVMValueRef scalar);
LLVMValueRef cg_em_const(cg_em *e, double v);
LLVMValueRef cg_em_intrin(cg_em *e, const char *name, LLVMTypeRef over, LLVMValueRef *args,
                          unsigned n);
/* An intrinsic overloaded on several types (e.g. llvm.masked.store). */
LLVMValueRef cg_em_intrin2(cg_em *e, const char *name, LLVMTypeRef *over, unsigned n_over,
                           LLVMValueRef *args, unsigned n);
LLVMValueRef cg_em_gep(cg_em *e, LLVMValueRef fptr, LLVMValueRef idx);
LLVMValueRef cg_em_vload(cg_em *e, LLVMValueRef fptr, unsigned align);
void cg_em_vstore(cg_em *e, LLVMValueRef v, LLVMValueRef fptr, unsigned align);
LLVMValueRef cg_em_i64(cg_em *e, int64_t v);
LLVMValueRef cg_em_fma(cg_em *e, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c);
/* exp, sigmoid and tanh on vectors (polynomial, about 1e-7 relative). */
LLVMValueRef cg_em_exp(cg_em *e, LLVMValueRef x);
LLVMValueRef cg_em_sigmoid(cg_em *e, LLVMValueRef x);
LLVMValueRef cg_em_tanh(cg_em *e, LLVMValueRef x);
/* Lanes j + lane < n of the current column j. */
LLVMValueRef cg_em_lanes_below(cg_em *e, int64_t n);
/* A new function with the module's target attributes and an entry block. */
LLVMValueRef cg_em_function(cg_em *e, const char *name, LLVMTypeRef ty);
/* Micro-kernels of every GEMM (cpu_mk.c). */
rnnc_status cg_em_microkernels(cg_em *e, const char *pfx);
#endif

#endif /* RNNC_CODEGEN_H */
