/*
 * codegen.h: the interface of the codegen/ stage: schedule -> source (CUDA
 * C) or module (LLVM IR), and what runtime/ needs to run them.  Nothing
 * here runs code; runtime/ does.  Each generator keeps its internals in a
 * header of its own (codegen/cuda/cuda_gen.h, prefix cu_;
 * codegen/llvm/llvm_gen.h, prefix lv_) that no other stage includes.
 *
 * Sections:
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
#define CG_CUDA_MAX_LAUNCH 16
#define CG_CUDA_ARGS                                                                           \
    "const float *__restrict__ x, float *__restrict__ y, float *st, float *hz, "              \
    "const float *__restrict__ fold, const float *__restrict__ wts, float *xb, float *part, " \
    "unsigned *bar, int T, const int *__restrict__ len, int rev, const rnnc_io io"

/* Philox4x32-10 in CUDA C, the interpreter's stream (common/philox.c,
 * docs/dropout.md): rnnc_philox(q, seed, site, w) leaves in w the four
 * words of block q under key seed and counter_hi site.  One text for the
 * generated kernels' dropout (cuda_dropout.c) and the runtime's mask kernel
 * (runtime/fused/fused_model.c), so the two cannot draw apart. */
#define CG_CUDA_PHILOX                                                                         \
    "__device__ __forceinline__ void rnnc_philox(unsigned long long q, unsigned long long seed,\n" \
    "                                            unsigned long long site, unsigned w[4])\n{\n"   \
    "    unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);\n"                          \
    "    unsigned c0 = (unsigned)q, c1 = (unsigned)(q >> 32), c2 = (unsigned)site,\n"           \
    "             c3 = (unsigned)(site >> 32);\n"                                               \
    "    for (int r = 0; r < 10; ++r) {\n"                                                      \
    "        if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }\n"                            \
    "        const unsigned h0 = __umulhi(0xD2511F53u, c0), l0 = 0xD2511F53u * c0;\n"           \
    "        const unsigned h1 = __umulhi(0xCD9E8D57u, c2), l1 = 0xCD9E8D57u * c2;\n"           \
    "        const unsigned o1 = c1, o3 = c3;\n"                                                \
    "        c0 = h1 ^ o1 ^ k0; c1 = l1; c2 = h0 ^ o3 ^ k1; c3 = l0;\n"                         \
    "    }\n"                                                                                   \
    "    w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;\n}\n"

/* The step kernel's direct state buffers (the last kernel argument, by
 * value; rnnc_io in the source): where in[k] is not 0, state k enters step
 * 0 from in[k] ([B, cols]) instead of copy 0 of st; where out[k] is not 0,
 * the final state k goes there instead of the third copy.  So a forward
 * needs no state copies in or out.  States k >= CG_CUDA_IO always use st.
 * An out buffer must not overlap an in buffer when T = 1 (blocks still
 * read step 0's states while others write the final ones). */
#define CG_CUDA_IO 4
typedef struct cg_cuda_io {
    uint64_t in[CG_CUDA_IO], out[CG_CUDA_IO]; /* device pointers */
    /* The cell's dropout ops (cuda_dropout.c): drop 0 in inference (the
     * identity); else the model's seed, the site of the launch's
     * pseudo-layer (rt_dropout_site_cell(p, 0)) and the true time of the
     * launch's first step (a wavefront chunk's start). */
    uint64_t seed, site;
    int32_t t0, drop;
} cg_cuda_io;

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
    int reg_rows;      /* RR: weight rows of a lane's register tile (1-16, a power of 2) */
    int reg_batch;     /* BB: batch rows of a lane's register tile (1-16, a power of 2);
                          a larger tile reads fewer shared-memory words per FMA */
    bool outer;        /* FFMA on sm_90 with h in bulk-staged chunks: the step's linear as
                          outer products over k-major operands (cuda_outer.c) where the
                          tiling allows (RR and BB multiples of 4); else ignored */
    int smem_limit;    /* bytes of shared memory a block may use (0: 227 KiB) */
    int gemm_rows;     /* rows of a hoisted GEMM tile: 32, 64 or 128 (0: by batch size) */
    int exchange;      /* how blocks of the step kernel hand states to each other:
                          1 a barrier (a counter per batch group) per phase, 2 tagged
                          words polled by the readers, no barrier (single-phase cells
                          without reductions; else 1); 0: 2 when B <= 8 and possible */
    int math;          /* rnnc_math: 0 FFMA; 1 TF32, 2 3xTF32 tensor cores (cuda_mma.c)
                          where the shape allows, else FFMA */
    bool tma;          /* sm_90: the TF32 math modes' hoisted GEMMs may take wgmma tiles
                          fed by the tensor memory accelerator, whose tensor maps the
                          runtime passes to their launches (cg_cuda_launch.tma) */
    int dtype;         /* rnnc_dtype of x, y and the weights: F32 (0), F16 or BF16; half
                          models keep the weight arena, x and y in 16 bits (the arena's
                          offsets count elements) and compute in fp32: states, hoisted
                          values, exchange and folds stay fp32 (cuda_half.c) */
    int cluster;       /* 1: no thread-block clusters (the TF32 wgmma step's K split over
                          clusters of two, cuda_ksplit.c, is not taken); 0: the
                          generator's choice */
} cg_cuda_config;

/* How a hoisted GEMM's rows split between its large tiles and a tail
 * launch of small tiles: the large tiles take whole waves of `wave` blocks
 * (bm rows x cb column tiles each) and leave a last wave under half full
 * to the tail, which spreads it over all the SMs.  wave 0: no split. */
typedef struct cg_cuda_split {
    unsigned wave, bm, cb;
} cg_cuda_split;

/* Rows of `rows` that the large tiles of split s take (the generated
 * rnnc_rows<lin> computes the same). */
static inline size_t cg_cuda_split_rows(const cg_cuda_split *s, size_t rows)
{
    if (!s->wave || !s->bm || !s->cb)
        return rows;
    size_t tiles = (rows + s->bm - 1) / s->bm * s->cb, rem = tiles % s->wave;
    if (rem == 0 || rem * 2 > s->wave)
        return rows;
    size_t r = (tiles - rem) / s->cb * s->bm;
    return r < rows ? r : rows;
}

typedef struct cg_cuda_launch {
    char name[32];
    unsigned grid;           /* grid.x when rows_per_block is 0 */
    unsigned rows_per_block; /* else grid.x = ceil(T*B / rows_per_block) */
    unsigned grid_y;
    unsigned threads;
    unsigned smem;
    bool cooperative;
    unsigned cluster;        /* the kernel's compiled-in cluster size (__cluster_dims__), 0: none;
                                such a launch is checked for residency cluster by cluster */
    unsigned min_rows, max_rows; /* runs only when min_rows <= T*B < max_rows (0: no bound):
                                    a hoisted GEMM's tiles for long and for short sequences */
    cg_cuda_split split;         /* a large-tile GEMM's split of its rows (wave 0: none) */
    bool tail;                   /* the tail of the launch before it: the rows its split leaves */
    /* wgmma tiles fed by tensor maps (cuda_wgmma.c): after the common arguments
     * the kernel takes three CUtensorMaps, boxes of 32 floats x 128 rows with
     * 128-byte swizzle: over x (T*B rows of tma_k floats), and over the weight
     * arena's rows at float offsets tma_w and tma_l (tma_n rows of tma_k each).
     * The step kernel with streamed weights (cuda_wstream.c, cooperative)
     * takes one: over the arena's rows at tma_w, boxes of tma_box rows */
    bool tma;
    unsigned tma_k, tma_n, tma_es; /* tma_es: bytes of an element, 4 or 2 (a half model) */
    unsigned tma_box;              /* the step kernel's box rows (0: 128) */
    int64_t tma_w, tma_l;
} cg_cuda_launch;

/* Whether launch l runs for a call of T*B = rows rows (its min_rows/max_rows;
 * a tail only when the split leaves it rows). */
static inline bool cg_cuda_launch_runs(const cg_cuda_launch *l, size_t rows)
{
    return rows >= l->min_rows && (!l->max_rows || rows < l->max_rows) &&
           (!l->tail || cg_cuda_split_rows(&l->split, rows) < rows);
}

/* Where a value lives in one of the kernels' buffers (offsets in floats). */
typedef struct cg_cuda_slot {
    int32_t id;     /* node (folds), param index (weights) or state index */
    int64_t offset;
    int64_t count;  /* floats (weights: rows * cols; states: cols) */
    int derive;     /* weights: CG_CUDA_AS_IS, or a copy made from the parameter */
} cg_cuda_slot;

/* What a weight slot holds: the parameter, its TF32 low part w - (w's top
 * 19 bits) (3xtf32 wgmma tiles: the tensor cores read w itself as the high
 * part), or w rounded to TF32, to nearest even (tf32 wgmma tiles). */
enum { CG_CUDA_AS_IS = 0, CG_CUDA_TF32_LO = 1, CG_CUDA_TF32_RN = 2 };

/* Slot s's floats from its parameter's. */
static inline void cg_cuda_slot_fill(const cg_cuda_slot *s, const float *src, float *dst)
{
    for (int64_t i = 0; i < s->count; i++) {
        union { float f; uint32_t u; } v = {src[i]}, h = v;
        h.u &= 0xffffe000u;
        if (s->derive == CG_CUDA_TF32_RN && (v.u & 0x7f800000u) != 0x7f800000u)
            h.u = (v.u + 0xfffu + ((v.u >> 13) & 1u)) & 0xffffe000u;
        dst[i] = s->derive == CG_CUDA_TF32_LO ? v.f - h.f : s->derive == CG_CUDA_TF32_RN ? h.f : v.f;
    }
}

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
    /* A cell whose input is read only through one dropout op: the kernels
     * read x as that op's value, so in training the runtime passes x with
     * the op's mask applied (site x_drop_site of the pseudo-layer, p
     * x_drop_p; -1: none, or an op that drops nothing). */
    int32_t x_drop_site;
    double x_drop_p;
    char tuning[96];                       /* the chosen tiles, as text */
    int passes;                            /* batch passes a step: 1 but where no tiling
                                              of one pass fits (cuda_passes.c) */
} cg_cuda_plan;

/* CUDA C for the schedule (caller frees *src with free()).  A node the
 * generator cannot place is RNNC_ERR_UNSUPPORTED naming its op. */
rnnc_status cg_cuda_source(const ir_schedule *s, const cg_cuda_config *cfg, char **src);
/* The same, with what the runtime needs to run it. */
rnnc_status cg_cuda_generate(const ir_schedule *s, const cg_cuda_config *cfg, char **src,
                             cg_cuda_plan *plan);
/* Whether the step kernel for cfg takes batch passes (plan.passes > 1): the
 * analysis alone, nothing emitted; false where it cannot be generated. */
bool cg_cuda_takes_passes(const ir_schedule *s, const cg_cuda_config *cfg);
/* A valid reg_rows or reg_batch: 0 (the generator's choice) or a power of 2
 * up to 16. */
bool cg_cuda_reg_tile_ok(int v);

/* A stateless cell over rows (codegen/cuda/cuda_rowcell.c; the fused
 * backward's row cell, docs/training.md): its values at most two inputs,
 * the kernel's in0 and in1 (each [rows, its width]), vector parameters at
 * param_off[p] floats into the kernel's w (-1: not read), constants and
 * row ops (pointwise, chunk, slice, concat, expand, mean, sum, layernorm);
 * no state, linear or dropout.  The outputs land at columns out_col of the
 * rows of `out` (out_ld floats apart). */
typedef struct cg_cuda_rowcell {
    const ir_fn *f;
    ir_sizes sizes;
    const int64_t *param_off;
    const int32_t *out;
    const int64_t *out_col;
    int n_out;
    int64_t out_ld;
} cg_cuda_rowcell;
/* One kernel, rnnc_row_cell(in0, in1, w, out, rows): a block of 256
 * threads a row, *smem bytes of dynamic shared memory.  A cell it cannot
 * run is RNNC_ERR_UNSUPPORTED, naming why. */
rnnc_status cg_cuda_rowcell_source(const cg_cuda_rowcell *rc, char **src, unsigned *smem);

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
