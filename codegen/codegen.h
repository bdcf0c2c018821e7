/*
 * codegen.h: the internal header of the codegen/ stage: schedule -> source
 * (CUDA C) or module (LLVM IR).  Nothing here runs code; runtime/ does.
 *
 * Sections (one owner each; edit only your own section):
 *   1. CUDA C generator (codegen/cuda/*.c)
 *   2. LLVM IR generator (codegen/llvm/*.c)
 */
#ifndef RNNC_CODEGEN_H
#define RNNC_CODEGEN_H

#include "ir/ir.h"
#include "rnnc.h"

/* ================================================================ 1. CUDA */

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

/* Signatures of the generated functions. */
typedef void (*cg_cpu_ew_fn)(float *const *slots, int64_t r0, int64_t r1);
typedef void (*cg_cpu_mk_fn)(const float *a, const float *bpanel, float *c);

#ifdef RNNC_HAVE_LLVM
#include <llvm-c/Core.h>
/* Emits the element-wise functions and micro-kernels of `p` into a new
 * module of `ctx` (names start with `pfx`), tagged for `cpu`/`features`. */
rnnc_status cg_llvm_cpu_module(const cg_cpu_plan *p, const char *pfx, LLVMContextRef ctx,
                               const char *cpu, const char *features, LLVMModuleRef *out);
#endif

#endif /* RNNC_CODEGEN_H */
