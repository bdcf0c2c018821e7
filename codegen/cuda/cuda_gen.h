/*
 * cuda_gen.h: the internal header of the CUDA generator, shared by the
 * files of codegen/cuda and included nowhere else.  Names start cu_.  The
 * generator runs in two steps: cu_analyse decides everything about a
 * schedule at one shape and tuning (where each value lives, the tiles, the
 * shared-memory layout, what the step kernel keeps in registers, the
 * launches), then the emitters write the source from that analysis alone,
 * once.
 */
#ifndef RNNC_CODEGEN_CUDA_GEN_H
#define RNNC_CODEGEN_CUDA_GEN_H

#include "codegen/codegen.h"

typedef struct cu_text {
    char *p;
    size_t n, cap;
    bool oom;
} cu_text;

/* Sets every line's indentation from the braces (cuda_text.c). */
void cu_reindent(cu_text *t);
void cu_printf(cu_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* How a node is placed. */
enum {
    CU_NONE = 0,
    CU_LEAF_CONST,   /* literal */
    CU_LEAF_FOLD,    /* fold arena */
    CU_LEAF_INPUT,   /* x */
    CU_LEAF_STATE,   /* state buffer (this step's copy) */
    CU_HOIST_BUF,    /* hz arena, materialised by the hoisted part */
    CU_HOIST_VIEW,   /* chunk/concat of a hoisted buffer: read through */
    CU_HOIST_TMP,    /* hoisted, computed only inside the row kernel */
    CU_STEP_LINEAR,  /* step GEMM, result in shared memory */
    CU_STEP_ELEM,    /* step, computed per element (unit, batch row) */
    CU_STEP_GATHER   /* step chunk/concat read only as a linear's x */
};

/* The tile of a hoisted GEMM launch (cuda_hoist.c): bm rows of T*B by bn
 * columns, K in slices of bk, each of 256 threads owning tm x tn outputs. */
typedef struct cu_tile {
    int32_t lin;  /* the hoisted linear, -1 for a launch that is no GEMM */
    bool small;   /* the small-tile GEMM run for few rows (name suffix "s") */
    bool skinny;  /* the K-split GEMM for very few rows (suffix "k", cuda_skinny.c) */
    int bm, bn, bk, tm, tn;
    cg_cuda_split split; /* large tiles: whole waves only (rnnc_rows<lin>) */
    bool tail;    /* small tiles over the rows the split leaves (suffix "t") */
    bool g16;     /* large tiles through the cp.async pipeline (cuda_gemm16.c) */
    bool wg;      /* large tiles by wgmma, fed by the TMA (cuda_wgmma.c) */
    int row_round; /* a row kernel's launch (lin -1): its round (cuda_rounds.c), else 0 */
} cu_tile;

typedef struct cu_ctx {
    const ir_schedule *s;
    const ir_fn *f;
    cg_cuda_config cfg;
    cg_cuda_plan *plan;
    int64_t B, I;
    int64_t H;        /* slice width: the hidden size, or gcd(H, P) with a projection */
    int64_t *cols;    /* [n] */
    int32_t *k;       /* [n] slices of H (0: one value per row; -1: not sliceable) */
    uint8_t *role;    /* [n] CU_* */
    int32_t *phase;   /* [n] step phase, -1 otherwise */
    int64_t *off;     /* [n] offset in the fold, weight or hz arena (by role) */
    int64_t *xb;      /* [n] global exchange slot (CU_NEED_XB) */
    int64_t *xp;      /* [n] shared slot of a per-element value kept across phases */
    int64_t *sm;      /* [n] shared slot: a linear's result, a reduction's row stats,
                         a value the row kernel makes */
    int64_t *wsm;     /* [n] shared slot of a step linear's weight slice */
    int64_t *pt;      /* [n] global partial-sum slot of a reduction over a step value */
    int32_t *ks;      /* [n] step linear: K split across lanes */
    int32_t *kp;      /* [n] step linear: padded row length of its weight slice in shared memory */
    int32_t *kc;      /* [n] step linear: columns of x staged at once (K in chunks of kc) */
    int32_t *xkp;     /* [n] step linear: padded row length of staged x */
    int32_t *kr;      /* [n] step linear with streamed weights: its slice's leading columns
                         kept in shared memory all the same (a multiple of 4 ks; 0: none) */
    uint8_t *need;    /* [n] bit flags CU_NEED_* */
    int32_t *gemm;    /* [n] for hoisted buffers fused into a GEMM: the linear, else -1 */
    /* Rounds of the hoisted work (cuda_rounds.c): round r runs its GEMMs, then
     * its row kernel; a GEMM reads x (round 1) or a buffer an earlier round
     * made in hz (a linear of a hoisted value: layernorm(x), tanh(linear(x,
     * W1))).  round[v] for hoisted GEMMs, their epilogues and the row
     * kernels' values, 0 elsewhere; most cells have one round. */
    int32_t *round;
    int n_rounds;
    /* step tiling */
    int UT, BT, BTP, NUB, NBB, NT, RR, BB;
    /* Batch passes: a block's batch group is NP tiles of BT rows, taken
     * one after the other each step (cuda_passes.c; 1 but where
     * no tiling of one pass fits the GPU). */
    int NP;
    /* With passes where a copy a pass does not fit shared memory: values
     * kept for a later phase, and step linears' results a later phase
     * reads, live in global memory at xb + xg[v], a row of cols[v] floats
     * a batch row, written in their own phase (cuda_passes.c). */
    bool gkeep;
    int64_t *xg;
    /* Weights streamed from L2/HBM every step (they do not fit on chip). */
    bool stream;
    /* Register caches (cu_place_regs): per-element leaves (folds, hoisted
     * values, x, states) live in registers r<v>_<slice>, arrays of EPT
     * (indexed by j_, the thread's element) when a thread owns EPT > 1
     * elements (E > NT; EPT is 1 without a cache); pfuse[v] is the mask of
     * slices the elements read. */
    bool pf;
    int EPT;
    uint32_t *pfuse;
    /* [n] without the caches (!pf): the slices pfuse would hold, which the
     * last barrier of a step prefetches into L2 for the next */
    uint32_t *pl2;
    /* [n] step elements: bit sl set when slice sl is read (cu_mark_live;
     * slices past 63 always are) */
    uint64_t *live;
    /* Tagged exchange (cuda_ll.c): states read whole are published as 64-bit
     * words (value, step tag) at xb + xb[state], two copies by step parity. */
    bool ll;
    /* With the barrier, a half model on tensor cores: the states its
     * linears read whole are also published rounded to 16 bits at xb +
     * xb[state] (two copies by step parity), and staged from there after
     * step 0: half the bytes of the fp32 states (cuda_ll.c). */
    bool h16;
    /* fp32 step on sm_90 with h staged in chunks (cuda_bulk.c): the state
     * bulk_state is also published chunk-major at xb + xb[state] (two
     * copies by step parity), and steps after the first stage its chunks
     * with bulk copies into bulk_ns shared buffers (two mbarriers a
     * buffer at SM offset bulk_mb); the linear's result shares the
     * buffers. */
    bool bulk;
    int bulk_ns;
    int32_t bulk_lin, bulk_state;
    int64_t bulk_mb;
    /* The bulk-staged FFMA linear as outer products over k-major
     * operands (cuda_outer.c): RR x BB a thread, ks[lin] groups split K. */
    bool outer;
    /* The step's linears run on tensor cores (cuda_mma.c). */
    bool mma;
    /* The bulk-staged linear runs on wgmma, its W slice chunk-major
     * (cuda_wgstep.c). */
    bool wgstep;
    /* The wgmma step's linear split along K over clusters of two blocks
     * (cuda_ksplit.c). */
    bool ksplit;
    /* The wgmma step's weights streamed from L2 beside h's chunks, a tensor
     * map's boxes into each chunk buffer (cuda_wstream.c): where W_hh does
     * not fit on chip; wgstep and bulk are set too. */
    bool wstream;
    /* F16 or BF16 model: x, y and the weights are 16-bit (cuda_half.c). */
    bool half;
    int64_t smem_floats, xs_floats;
    int64_t rows_floats; /* shared memory of the widest row kernel (0: no row kernel) */
    cu_tile tile[CG_CUDA_MAX_LAUNCH]; /* by launch */
} cu_ctx;

enum {
    CU_NEED_XP = 1,    /* per-element value kept in shared memory for a later phase */
    CU_NEED_XB = 2,    /* whole vector written to global for a later phase's linear */
    CU_NEED_PART = 4,  /* block partial sums for a later reduction */
    CU_NEED_ROWS = 8,  /* hoisted linear read by the row kernel (plain GEMM output) */
    CU_NEED_WHOLE = 16 /* state read as a whole vector (a linear's x, a reduction) */
};

/* a / b rounded up. */
static inline int64_t cu_cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* K of step linear lin: the columns of its x. */
static inline int64_t cu_kdim(const cu_ctx *c, int32_t lin)
{
    return c->cols[c->f->nodes[lin].a[0]];
}

/* Slices (chunks: an LSTM's four gates) of node v's columns, at least one. */
static inline int32_t cu_slices(const cu_ctx *c, int32_t v)
{
    return c->k[v] < 1 ? 1 : c->k[v];
}

/* Rows of a block's slice of step linear lin's matrix: UT units of each
 * slice. */
static inline int32_t cu_slice_rows(const cu_ctx *c, int32_t lin)
{
    return cu_slices(c, lin) * c->UT;
}

/* Step linear lin stages its x by bulk copies (cuda_bulk.c). */
static inline bool cu_bulk_staged(const cu_ctx *c, int32_t lin)
{
    return c->bulk && lin == c->bulk_lin;
}

/* The TF32 mode on tensor cores: the step's operands are rounded to TF32
 * before the k-steps (the weight slices in shared memory, bulk-staged h
 * where it is written), which then pass them on as loaded. */
static inline bool cu_tf32_rounded(const cu_ctx *c)
{
    return c->mma && !c->half && c->cfg.math == 1;
}

/* Row length in shared memory of a streamed linear's resident columns
 * (padded as an on-chip slice's rows are). */
static inline int32_t cu_kr_stride(const cu_ctx *c, int32_t i)
{
    return (c->kr[i] + 31) / 32 * 32 + (c->ks[i] >= 8 ? 0 : 4 * c->ks[i]);
}

/* The analysis: every decision, in order (cuda_analyse.c). */
rnnc_status cu_analyse(cu_ctx *c);
/* The step kernel's tiles and shared-memory layout (after cu_analyse's placement). */
rnnc_status cu_choose_tiles(cu_ctx *c);
/* One tiling of bt batch rows a block, x staged kc columns at a time (0:
 * all); *fits when the grid is resident and shared memory suffices. */
void cu_try_tiles(cu_ctx *c, int64_t bt, int64_t kc, int sm_count, int64_t limit, bool *fits);
/* The batch tiles the search tries, in order; their count. */
int cu_batch_tiles(const cu_ctx *c, int64_t *out);
/* Batch passes where no other tiling fits (cuda_passes.c). */
bool cu_try_passes(cu_ctx *c, int sm_count, int64_t limit);
/* Copies of a step linear's result in shared memory: one a batch pass
 * (c->NP) where a later phase reads it, else one (cuda_passes.c). */
int cu_lin_copies(const cu_ctx *c, int32_t lin);
/* Step linear lin's result is read by a phase after its own. */
bool cu_lin_read_later(const cu_ctx *c, int32_t lin);
/* The global slots of c->gkeep (cuda_passes.c; after the tiling). */
void cu_place_keeps(cu_ctx *c);
/* The plan's next launch, zeroed, its tile g (NULL: no GEMM); NULL with the
 * error recorded when the plan is full (cuda_analyse.c). */
cg_cuda_launch *cu_new_launch(cu_ctx *c, const cu_tile *g);
/* The hoisted part's launches, round by round: its GEMMs (cuda_hoist.c),
 * then its row kernel (cuda_rows.c). */
rnnc_status cu_place_hoist(cu_ctx *c);
/* The rounds of the hoisted work (cuda_rounds.c), before cu_place_hoist. */
void cu_place_rounds(cu_ctx *c);
/* Hoisted node v is a linear run as a GEMM. */
bool cu_is_hoisted_gemm(const cu_ctx *c, int32_t v);
/* Hoisted linear lin's GEMM reads a buffer in hz, not x. */
static inline bool cu_gemm_staged(const cu_ctx *c, int32_t lin)
{
    return c->role[c->f->nodes[lin].a[0]] != CU_LEAF_INPUT;
}
/* The weight arena slot of matrix w (a parameter) holding it as it is or
 * a copy made from it (CG_CUDA_TF32_LO, CG_CUDA_TF32_RN); its offset. */
rnnc_status cu_place_weight_as(cu_ctx *c, int32_t w, int derive, int64_t *off);
/* The offset of that slot, -1 when it has none. */
int64_t cu_weight_at(const cu_ctx *c, int32_t w, int derive);
/* Which leaves the step's elements read from registers (cuda_regs.c). */
void cu_place_regs(cu_ctx *c);
/* Which slices of the step's elements are read (c->live); before cu_place_regs. */
void cu_mark_live(cu_ctx *c);
bool cu_slice_live(const cu_ctx *c, int32_t v, int sl);
/* The emitters: text from the analysis, nothing else written. */
rnnc_status cu_emit_hoist(const cu_ctx *c, cu_text *t);
/* The epilogue of hoisted linear lin's GEMM: every hoisted buffer made from
 * it, stored to hz (acc, m, col, TB in scope; cuda_hoist.c). */
bool cu_emit_gemm_stores(const cu_ctx *c, int32_t lin, cu_text *t);
/* The same for a whole tile (cuda_hoist.c): accumulators c_[tm][tn] at tile
 * row ri and column ci (C expressions of i and j), columns consecutive in
 * runs of w (2 or 4), stored as vectors where whole and aligned; first:
 * every value computed before the stores (the wgmma tiles). */
bool cu_emit_gemm_epilogue(const cu_ctx *c, int32_t lin, int tm, int tn, int w, const char *ri,
                           const char *ci, bool first, cu_text *t);
/* A tile's kernel head (rnnc_pdl, M, tid, m0, n0, the split's early
 * return) and, before the kernel, its split's row count (rnnc_rows<lin>). */
void cu_emit_gemm_head(const cu_ctx *c, const cu_tile *g, cu_text *t);
void cu_emit_gemm_rows(const cu_tile *g, cu_text *t);
/* The row kernel of round r (cuda_rows.c): the shared slots of the round's
 * hoisted values no GEMM epilogue makes and its launch (none when it has
 * no values), after the round's GEMMs (cu_place_hoist); launch i's kernel. */
rnnc_status cu_place_rows(cu_ctx *c, int r);
/* rnnc_block_sum(v, red): the sum of v over a block of 256 threads, as
 * every row kernel (cuda_rows.c, cuda_rowcell.c) takes it. */
extern const char cu_block_sum_src[];
/* A row kernel's reduction node nd over a row of K values `a` (an
 * expression of cx) into the shared slot named `dst`: a mean or sum into
 * its first float, a layernorm (gain g, bias b: expressions of cx) into
 * its cols floats (cuda_rows.c; the row cell's too). */
void cu_emit_row_reduce(cu_text *t, const ir_node *nd, long long K, long long cols,
                        const char *a, const char *g, const char *b, const char *dst);
bool cu_emit_rows(const cu_ctx *c, int i, cu_text *t);
/* Records why hoisted node v cannot be generated; false. */
bool cu_hoist_fail(const cu_ctx *c, int32_t v, const char *why);
/* The large tiles on tensor cores (a half model's, kept 16-bit, or the
 * TF32 math modes') on sm_80+ through a cp.async pipeline (cuda_gemm16.c):
 * whether tile g takes them, their dynamic shared memory, launch i's kernel. */
bool cu_gemm16_fits(const cu_ctx *c, const cu_tile *g);
/* The TF32 math modes' large tiles on sm_90 by wgmma, slices brought by
 * the tensor memory accelerator (cuda_wgmma.c): whether linear lin's
 * shape allows them (then cu_wgmma_place puts the weight copies they read
 * in the arena, whatever the tiles: the arena must not depend on the
 * batch), whether tile g takes them, their shared memory, launch i's
 * kernel, and the helpers the kernels share. */
bool cu_wgmma_shape_ok(const cu_ctx *c, int32_t lin);
rnnc_status cu_wgmma_place(cu_ctx *c, int32_t lin);
bool cu_wgmma_fits(const cu_ctx *c, const cu_tile *g);
unsigned cu_wgmma_smem(const cu_ctx *c);
bool cu_emit_wgmma(const cu_ctx *c, int i, cu_text *t);
void cu_emit_wgmma_helpers(const cu_ctx *c, cu_text *t);
void cu_wgmma_launch(const cu_ctx *c, const cu_tile *g, cg_cuda_launch *l);
unsigned cu_gemm16_smem(void);
bool cu_emit_gemm16(const cu_ctx *c, int i, cu_text *t);
/* The GEMM for very few rows (cuda_skinny.c): whether linear lin can take
 * it, the row count below which it runs, its shared memory (bytes), and
 * the kernel of launch i. */
bool cu_skinny_fits(const cu_ctx *c, int32_t lin);
/* The cp.async helpers (rnnc_cp16, rnnc_cp_wait) on sm_80 and later:
 * the skinny GEMM's slices and the step kernel's weight slices. */
void cu_emit_cp_helpers(const cu_ctx *c, cu_text *t);
unsigned cu_skinny_rows(const cu_ctx *c, int32_t lin);
unsigned cu_skinny_smem(const cu_ctx *c);
bool cu_emit_skinny(const cu_ctx *c, int i, cu_text *t);
rnnc_status cu_emit_step(const cu_ctx *c, cu_text *t);
/* The operands slice sl of step element v reads, by operand position
 * (ops[k] = -1: none), and their slices: the one walk of a slice's reads
 * that both the emitter and cu_place_regs follow (cuda_expr.c). */
rnnc_status cu_slice_operands(const cu_ctx *c, int32_t v, int sl, int32_t ops[3], int sls[3]);
/* The operand and slice a hoisted view (chunk, slice, concat) reads for slice sl. */
void cu_view_slice(const cu_ctx *c, int32_t v, int sl, int32_t *o, int *osl);
/* Chunks and slices read one stretch of their operand's columns, from
 * cu_view_col(c, v) on: both are read through wherever chunks are. */
bool cu_is_view_op(int op);
int64_t cu_view_col(const cu_ctx *c, int32_t v);
/* The same for chunk or slice nd of cols columns at sizes s. */
int64_t cu_view_at(const ir_node *nd, int64_t cols, ir_sizes s);
/* Expression of node v, slice sl, at the current element of the step kernel
 * (locals u, b, gu, gb, row, t in scope).  Writes into buf; false with an
 * error recorded when v has no per-element value there. */
bool cu_elem_expr(const cu_ctx *c, int32_t v, int sl, int cur_phase, char *buf, size_t n);
/* Row r (an expression) of step linear v's result at batch row b. */
void cu_lin_result(const cu_ctx *c, int32_t v, const char *r, char *buf, size_t n);
/* Where column col (an expression) of batch row gb of kept value v lives
 * in global memory (c->gkeep). */
void cu_keep_at(const cu_ctx *c, int32_t v, const char *col, char *buf, size_t n);
/* The same at this element's column of slice sl (gb, gu). */
void cu_keep_elem(const cu_ctx *c, int32_t v, int sl, char *buf, size_t n);
/* Expression of a whole-vector value v at batch row `gb` and column `col`
 * (C expressions) for staging a linear's x. */
bool cu_gather_expr(const cu_ctx *c, int32_t v, const char *col, char *buf, size_t n);
/* The memory read of leaf v (fold, input, state, hoisted buffer), slice sl,
 * at the current element (u, gu, gb, row, cur in scope); false otherwise. */
bool cu_leaf_load(const cu_ctx *c, int32_t v, int sl, char *buf, size_t n);
/* The address of an input or hoisted leaf's slice at the current element
 * (row in scope); false for other leaves. */
bool cu_leaf_addr(const cu_ctx *c, int32_t v, int sl, char *buf, size_t n);
/* Leaf v is kept in registers in the step kernel (c->pf and few slices). */
bool cu_in_regs(const cu_ctx *c, int32_t v);
/* The register of leaf v's slice sl at the current element (j_ in scope
 * when EPT > 1). */
void cu_reg_name(const cu_ctx *c, int32_t v, int sl, char *buf, size_t n);
/* Opens the loop over the thread's elements of the block (e in scope). */
void cu_emit_elem_loop(const cu_ctx *c, cu_text *t);
/* The register caches of the step kernel (cuda_regs.c): declarations, the
 * loads before the time loop, and the prefetch of step t+1's values. */
void cu_emit_reg_decls(const cu_ctx *c, cu_text *t);
void cu_emit_reg_loads(const cu_ctx *c, cu_text *t, bool first);
/* Without the caches (and the tagged exchange): step t+1's hoisted values
 * and x prefetched into L2 at step t's last barrier. */
bool cu_l2_prefetches(const cu_ctx *c);
void cu_emit_l2_prefetch(const cu_ctx *c, cu_text *t);
/* Where each state enters step 0 (si<k>_) and where the final state goes
 * (so<k>_): the caller's buffers (the io argument) or copies 0 and 2 of st. */
void cu_emit_state_io(const cu_ctx *c, cu_text *t);
/* The tagged exchange (cuda_ll.c): whether the step uses it (c->ll), and
 * then the words of the states read whole. */
void cu_ll_choose(cu_ctx *c);
void cu_ll_place(cu_ctx *c);
void cu_emit_ll_prelude(const cu_ctx *c, cu_text *t);
/* The word of state sv's slice sl (value n<s>_<sl>) for step t + 1. */
void cu_emit_ll_put(const cu_ctx *c, int32_t sv, int s, int sl, cu_text *t);
void cu_emit_ll_publish(const cu_ctx *c, cu_text *t);
void cu_emit_ll_stage(const cu_ctx *c, int32_t lin, cu_text *t);
/* Bulk staging of a chunked state (cuda_bulk.c): the step linear whose x
 * the tiling lets it stage (-1: none; cuda_tile.c then picks bulk_ns),
 * the state's chunk-major copies, the device helpers, the mbarriers'
 * set-up, the chunk loop's head (the stage callback's part) and a chunk's
 * end (the next copy into the buffer just read), and the element phase's
 * store of the state's next value n<s>_<sl>. */
int32_t cu_bulk_linear(const cu_ctx *c);
void cu_bulk_place(cu_ctx *c);
void cu_emit_bulk_helpers(const cu_ctx *c, cu_text *t);
void cu_emit_bulk_init(const cu_ctx *c, cu_text *t);
void cu_emit_bulk_open(const cu_ctx *c, int32_t lin, cu_text *t);
void cu_emit_bulk_chunk_end(const cu_ctx *c, cu_text *t, const char *ch);
void cu_emit_bulk_release(const cu_ctx *c, cu_text *t, const char *ch);
void cu_emit_bulk_put(const cu_ctx *c, int s, int sl, cu_text *t);
/* Before step 0 where every chunk comes by copies: the state's copy 0. */
void cu_emit_bulk_prologue(const cu_ctx *c, cu_text *t);
/* c->h16: the source of row gb, column cc of state x's 16-bit copy read
 * at step t. */
void cu_h16_src(const cu_ctx *c, int32_t xv, char *buf, size_t n);
/* Batched 16-byte copies global -> shared (cuda_regs.c); the weight slices. */
void cu_emit_copy4(cu_text *t, long long n4, const char *idx, const char *cond,
                   const char *src, const char *dst, bool cached);
void cu_emit_weights(const cu_ctx *c, cu_text *t);
/* The FFMA step's weight reads (cuda_regs.c): the row pointers of a lane's
 * register tile when the weights are streamed, and float4 w<i> of row i at
 * column kk (shared memory, or global; 16-bit in a half model; kept: a
 * streamed linear's leading columns in shared memory). */
void cu_emit_wrows(const cu_ctx *c, int32_t lin, cu_text *t);
void cu_emit_wload(const cu_ctx *c, int32_t lin, int i, bool kept, cu_text *t);
/* The same from fp32 to 16-bit values in shared memory (dst: 8-byte words),
 * and from 16-bit to 16-bit (src too) 8 values (16 bytes) or 4 a copy, all
 * through L2 (data of this kernel). */
void cu_emit_copy4h(cu_text *t, long long n4, const char *idx, const char *cond, const char *src,
                    const char *dst);
void cu_emit_copy8hh(cu_text *t, long long n8, const char *idx, const char *cond,
                     const char *src, const char *dst);
void cu_emit_copy4hh(cu_text *t, long long n4, const char *idx, const char *cond,
                     const char *src, const char *dst);
const char *cu_float_lit(double v, char *buf, size_t n);
/* A node for a comment: "%16 sigmoid(f)", "%21 c_next = add(%17, %20)";
 * a leaf as "state h", "input x", "param w" (cuda_text.c). */
const char *cu_describe(const cu_ctx *c, int32_t v, char *buf, size_t n);
const char *cu_leaf_describe(const cu_ctx *c, int32_t v, char *buf, size_t n);
/* The cell's dropout ops in training (cuda_dropout.c): the device helper
 * (nothing without a dropout op), and dropout node v applied to the value
 * `a`: at slice sl of the step's current element (gb, gu, t in scope), or
 * at row `row` of T*B and column `col` of the hoisted part (io, T in
 * scope).  False when buf is too short. */
void cu_emit_dropout_helpers(const cu_ctx *c, cu_text *t);
bool cu_dropout_step(const cu_ctx *c, int32_t v, int sl, const char *a, char *buf, size_t n);
bool cu_dropout_row(const cu_ctx *c, int32_t v, const char *a, const char *row, const char *col,
                    char *buf, size_t n);
/* Tensor cores for the TF32 math modes and half models (cuda_mma.c; a
 * half model's hoisted GEMM takes m16n8k8 with 16-bit operands): the device helpers
 * (nothing in FFMA); whether a hoisted GEMM tile runs on them, its accumulator
 * layout (tile row/column expressions of i and j) and one K slice. */
void cu_emit_mma_helpers(const cu_ctx *c, cu_text *t);
/* rnnc_ldsm4 and rnnc_ldsm2: four or two 8 x 8 matrices of 16-bit values
 * (or 8 x 4 of 32-bit ones) from shared memory, each lane pointing at one
 * 16-byte row (ldmatrix; sm_75 on). */
void cu_emit_ldsm_helpers(cu_text *t);
/* The step's linears on tensor cores, both kinds (cuda_mma_step.c): whether
 * linear lin fits with x staged `chunk` columns at a time, and the linear
 * (stage: cu_emit_chunk_open of cuda_stage.c, which also opens the chunk loop
 * when chunked; a half model's x is staged 16-bit), its results where the
 * FFMA loops put them. */
bool cu_mma_fits(const cu_ctx *c, int32_t lin, int64_t chunk);
/* In the TF32 mode, the step's weight slices rounded in shared memory once
 * they have arrived (then a block barrier; nothing otherwise). */
void cu_emit_mma_round(const cu_ctx *c, cu_text *t);

/* The TF32 step's bulk-staged linear on wgmma (cuda_wgstep.c). */
bool cu_wgstep_fits(const cu_ctx *c);
void cu_wgstep_weight_at(const cu_ctx *c, int32_t lin, char *buf, size_t n);
void cu_emit_wgstep_helpers(const cu_ctx *c, cu_text *t);
void cu_emit_wgs_products(cu_text *t, const char *ind);
void cu_emit_wgs_loop(const cu_ctx *c, const char *nw, const char *a, const char *b, cu_text *t);
rnnc_status cu_emit_wgstep_linear(const cu_ctx *c, int32_t lin, cu_text *t,
                                  rnnc_status (*stage)(const cu_ctx *, int32_t, bool, cu_text *));
/* The batch group's barrier between steps, in two halves (cuda_step.c). */
void cu_emit_group_arrive(cu_text *t, const char *ind);
void cu_emit_group_wait(cu_text *t, const char *ind);
/* Its split along K over a cluster of two (cuda_ksplit.c): whether it
 * fits, the shared memory its weights take, wgmma's N, the device
 * helpers, the kernel head's names, the weight copy, the state's copy
 * before step 0, the linear, the element phase's read of row r of its
 * result, and the wait before the kernel's end. */
bool cu_ksplit_fits(const cu_ctx *c);
int64_t cu_ksplit_weight_floats(const cu_ctx *c, int32_t lin);
int cu_ksplit_n(const cu_ctx *c);
/* The layout of the split's partial sums, the streamed step's result too. */
void cu_emit_ksp(cu_text *t);
void cu_emit_ksplit_helpers(const cu_ctx *c, cu_text *t);
void cu_emit_ksplit_head(const cu_ctx *c, cu_text *t);
void cu_emit_ksplit_weights(const cu_ctx *c, int32_t lin, cu_text *t);
rnnc_status cu_emit_ksplit_linear(const cu_ctx *c, int32_t lin, cu_text *t);
void cu_ksplit_result(const cu_ctx *c, int32_t lin, const char *r, char *buf, size_t n);
void cu_emit_ksplit_end(const cu_ctx *c, cu_text *t);
/* Its weights streamed (cuda_wstream.c): whether the model may take it,
 * the weight copy it reads (placed whatever the tiling), whether the
 * tiling does (cuda_tile.c's try_wstream), the chunk buffer's rows of W,
 * the device helpers, a buffer's refill (the call: chunk ch into the
 * buffer at float offset buf), the linear, and the element phase's read
 * of row r of its result. */
bool cu_wstream_possible(const cu_ctx *c);
rnnc_status cu_wstream_place(cu_ctx *c);
bool cu_wstream_fits(const cu_ctx *c);
int64_t cu_wstream_rows(const cu_ctx *c);
void cu_emit_wstream_helpers(const cu_ctx *c, cu_text *t);
void cu_wstream_get(const char *buf, const char *ch, char *out, size_t n);
rnnc_status cu_emit_wstream_linear(const cu_ctx *c, int32_t lin, cu_text *t);
void cu_wstream_result(const cu_ctx *c, int32_t lin, const char *r, char *buf, size_t n);
rnnc_status cu_emit_mma_linear(const cu_ctx *c, int32_t lin, cu_text *t,
                               rnnc_status (*stage)(const cu_ctx *, int32_t, bool, cu_text *));
/* The bulk-staged FFMA linear as outer products (cuda_outer.c): whether
 * the tiling allows it, whether the groups' partial sums fit the chunk
 * buffers, W's slice copied k-major, and the linear. */
bool cu_outer_fits(const cu_ctx *c);
bool cu_outer_partials_fit(const cu_ctx *c);
void cu_emit_outer_weights(const cu_ctx *c, int32_t lin, cu_text *t);
rnnc_status cu_emit_outer_linear(const cu_ctx *c, int32_t lin, cu_text *t,
                                 rnnc_status (*stage)(const cu_ctx *, int32_t, bool, cu_text *));
/* The same on the FFMA pipes (cuda_ffma.c). */
rnnc_status cu_emit_ffma_linear(const cu_ctx *c, int32_t lin, cu_text *t,
                                rnnc_status (*stage)(const cu_ctx *, int32_t, bool, cu_text *));
/* Opens the chunk loop of linear lin's multiply (chunked: loop variable
 * ch_) and stages its x into shared memory (cuda_stage.c). */
rnnc_status cu_emit_chunk_open(const cu_ctx *c, int32_t lin, bool chunked, cu_text *t);
/* Whether the model's products can run on tensor cores at all: a TF32
 * math mode, or a half model on sm_80+ (cuda_mma.c). */
bool cu_tensor_cores(const cu_ctx *c);
bool cu_mma_gemm(const cu_ctx *c, int bm, int bn, int bk);
void cu_mma_gemm_layout(int bm, int bn, int *tm, int *tn, char *ri, char *ci, size_t n);
void cu_emit_mma_gemm_slice(cu_text *t, int bm, int bn, int bk, bool half);
/* Half-precision models (cuda_half.c): the kernels' parameter list (x, y
 * and wts typed by the dtype) and the conversion helpers (nothing in fp32):
 * rnnc_h2f, rnnc_f2h, rnnc_h4 (8 bytes to a float4), rnnc_pack4 (a float4
 * to 8 bytes) and, on tensor cores, rnnc_mma16. */
const char *cu_args(const cu_ctx *c);
void cu_emit_half_helpers(const cu_ctx *c, cu_text *t);
/* CUDA C of a pointwise op: a printf format of its one operand ("tanhf(%s)";
 * the math mode and dtype choose the sigmoid's form), or the infix operator
 * of a binary op; NULL for other ops (cuda_text.c). */
const char *cu_unary_fmt(const cu_ctx *c, int op);
const char *cu_binary_op(int op);

#endif /* RNNC_CODEGEN_CUDA_GEN_H */
