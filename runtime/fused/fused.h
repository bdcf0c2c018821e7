/*
 * fused.h: the internal header of runtime/fused: the fused GPU forward:
 * the model object and weight binding (fused.c), one forward (fused_run.c),
 * whole models (fused_model.c, their streams in fused_streams.c), tuning
 * (fused_tune.c) and AOT bundles (fused_aot.c).  Needs <cuda.h> at build
 * time (RT_HAVE_CUDA_H).
 *
 * Uses: common, ir, codegen/cuda, runtime/device, runtime/cache,
 * runtime/spec, runtime/eval (the fold), runtime/tensor.
 */
#ifndef RNNC_RUNTIME_FUSED_H
#define RNNC_RUNTIME_FUSED_H

#include <stdbool.h>
#include <stdint.h>

#include "codegen/codegen.h"
#include "runtime/cache/cache.h"
#include "runtime/eval/eval.h"

/*
 * The fused forward (fused.c, fused_run.c; docs/fused-kernel.md): the
 * schedule goes through the CUDA generator (codegen/cuda) once per batch
 * size; the kernels come from the kernel cache; one direction of one layer
 * is the hoisted GEMMs, the row kernel and ONE cooperative persistent step
 * kernel.  A forward runs the (layer, direction) pairs (fused_model.c):
 * layer l+1 reads layer l's output, directions write their columns of it
 * (both at once where `share` sizes the kernels for half the SMs; the
 * layers of a unidirectional stack then run as a wavefront of time
 * chunks), lengths are a per-row step limit, dropout between layers is a
 * Philox kernel.  Models in fp32, f16 or bf16 (fp32 arithmetic).  The step kernel's tuning for a
 * batch size (fused_tune.c; docs/cache.md): RNNC_FUSED_TILE="ut,bt,threads"
 * (0 = the generator's choice), else a registered bundle's record, else the
 * disk record, else autotuning on the device (RNNC_AUTOTUNE=0: the
 * generator's heuristic; RNNC_AUTOTUNE_MS bounds it, default 2000).
 */
#ifdef RT_HAVE_CUDA_H

typedef struct rt_fused rt_fused;
struct rt_fgrad;
/* Training, which runtime/fused_grad adds above this folder: a model it
 * creates carries these (NULL: inference only).  A training forward goes
 * to forward when check allows; an inference forward forgets the last
 * recorded one; free drops the state with the model. */
typedef struct rt_fused_train_ops {
    rnnc_status (*check)(rt_fused *m);
    rnnc_status (*forward)(rt_fused *m, const rnnc_forward_args *a);
    void (*forget)(struct rt_fgrad *g);
    void (*free)(struct rt_fgrad *g);
} rt_fused_train_ops;

/* The tuning fields of cg_cuda_config; 0 = the generator's choice. */
typedef struct rt_fused_tuning {
    int unit_tile, batch_tile, threads;
    int reg_rows, reg_batch; /* the lanes' register tile */
    int exchange;            /* cg_cuda_config.exchange: 1 barrier, 2 tagged words */
    int outer;               /* 1: cg_cuda_config.outer (outer products) */
} rt_fused_tuning;

/* Scratch of one running step kernel: hoisted values, the exchange
 * buffer, reduction partials, the barrier's counters. */
typedef struct rt_fused_slot {
    CUdeviceptr hz, xb, part, bar;
    size_t hz_n, xb_n, part_n;
    CUdeviceptr xd; /* x with the cell's dropout of it applied (plan x_drop_site, training) */
    size_t xd_n;
} rt_fused_slot;

/* The kernels of layers > 0 (their input is D * Hout wide). */
typedef struct rt_fused_upper {
    ir_schedule sched;
    char *src;
    cg_cuda_plan plan;
    rt_kernel kern;
    bool loaded;
} rt_fused_upper;

struct rt_fused {
    rt_spec spec;
    ir_arena *arena;
    ir_schedule sched;
    int sm, sm_count;
    bool bound;
    uint64_t cell_hash;          /* XXH3-64 of the printed cell (tuning keys) */
    bool tune_forced;            /* an autotuning candidate: tune_force, nothing else */
    rt_fused_tuning tune_force;
    rt_fused_tuning tuning;      /* the last choice of rt_fused_config(tuned) */
    const char *tuning_from;     /* and where it came from (static text) */
    /* the kernel set for batch `batch` (0: none yet) */
    int64_t batch;
    int64_t passes_batch; /* rt_fused_takes_passes's last batch (0: none), its answer */
    bool passes;
    char *src;
    cg_cuda_plan plan;
    rt_kernel kern;
    bool loaded;
    /* device memory: weights and folds (bound), scratch grown on demand */
    CUdeviceptr wts, fold;
    int64_t wts_floats, fold_floats;
    CUdeviceptr st, dx, dy, dfin; /* st: 3 copies of the states per pseudo-layer */
    size_t st_n, dx_n, dy_n, dfin_n;
    CUdeviceptr dzero; /* zeros: the initial states of a forward without init */
    size_t dzero_n;
    cg_cuda_io *io;    /* per pseudo-layer: the states the step kernel reads/writes directly */
    int io_n;
    rt_fused_slot slot[2];        /* scratch of the two kernels that run at once */
    /* share > 1: kernels are sized for sm_count / share SMs, so that the
     * directions of a layer, or two layers of a wavefront, run at once on
     * their own streams (fused_model.c); that of the prepared batch,
     * rt_fused_share_at.  share_base: the model's (rt_fused_share), in its
     * tuning keys; step_macs: a batch row's multiply-adds in one step */
    int share, share_base;
    int64_t step_macs;
    /* launch with programmatic dependent launch (fused_run.c; with share) */
    bool pdl;
    /* blocks per thread-block cluster in the step kernel (cg_cuda_config.cluster;
     * RNNC_FUSED_CLUSTER; 1 once a clustered grid was found not to fit) */
    int cluster;
    /* 0: the second step stream; 1, 2: GEMM streams; 3: the wavefront's
     * first step stream (fused_streams.c make_streams: priorities) */
    CUstream aux[4];
    CUevent *ev;
    int ev_n;
    /* whole models (fused_model.c): kernels of layers > 0, the floats of
     * one pseudo-layer's arenas per layer kind (0: layer 0, 1: above),
     * layer outputs, lengths, the dropout kernel */
    rt_fused_upper up;
    int64_t arena_wts[2], arena_fold[2];
    CUdeviceptr lay[2], dlen; /* dlen: the lengths, then each chunk's (wavefront) */
    size_t lay_n[2], dlen_n;
    int *hlen;
    int64_t hlen_n;
    int *cut;       /* wavefront: chunk c covers steps cut[c] .. cut[c+1] - 1 */
    int cut_n;      /* ints allocated at cut */
    bool dlen_used; /* this forward has lengths (in dlen) */
    rt_kernel drop;
    bool drop_loaded;
    /* half models (fused_half.c): the state conversion kernels and a
     * 16-bit staging copy of host states */
    rt_kernel cvt;
    bool cvt_loaded;
    CUdeviceptr hst;
    size_t hst_n;
    struct rt_fgrad *grad; /* training (runtime/fused_grad), NULL until first needed */
    const rt_fused_train_ops *train;
};

/* Bytes of one element of x, y and the weight arena: 4, or 2 in a half
 * model (F16, BF16; states, folds and scratch stay fp32). */
size_t rt_fused_esz(const rt_fused *m);
/* A half model's states between the caller's 16-bit buffer (host or
 * device) and fp32 device memory dev: n values (fused_half.c). */
rnnc_status rt_fused_states_half(rt_fused *m, CUdeviceptr dev, const void *user, size_t n,
                                 bool user_dev, bool in, CUstream s);
/* n values from the model's 16-bit dtype at src to fp32 at dst (in), or
 * from fp32 to 16 bits rounded to nearest even (!in); device memory. */
rnnc_status rt_fused_convert(rt_fused *m, bool in, CUdeviceptr src, CUdeviceptr dst, size_t n,
                             CUstream s);

/* The model of spec s on its device (checks, schedule, trial generation;
 * *state is an rt_fused), and its weights bound: uploaded, folds computed.
 * rt_fused_bind leaves m->bound to the caller. */
rnnc_status rt_fused_create(const rt_spec *s, void **state);
rnnc_status rt_fused_bind(rt_fused *m, const rt_weights *w);

/* Generates (not compiles) the kernel set for `batch` into m->plan/m->src. */
rnnc_status rt_fused_prepare(rt_fused *m, int64_t batch);
/* The forward's step kernels at `batch` take batch passes (the heuristic
 * tiles, analysed, not generated: no autotuning; the answer kept for the
 * batch). */
bool rt_fused_takes_passes(rt_fused *m, int64_t batch);
/* The generator's configuration for this model at `batch`; `tuned` picks
 * the tuning (rt_fused_choose; may autotune), else the defaults (the check
 * at create time). */
void rt_fused_config(rt_fused *m, int64_t batch, bool tuned, cg_cuda_config *cfg);
/* The same for layer kind k (0: layer 0, 1: layers above), with the
 * tuning of the last rt_fused_config(tuned). */
void rt_fused_config_kind(rt_fused *m, int k, int64_t batch, bool tuned, cg_cuda_config *cfg);
/* The tuning's fields into cfg. */
void rt_fused_tuning_apply(rt_fused_tuning t, cg_cuda_config *cfg);
/* Everything of create that needs no GPU: checks, schedule, a trial
 * generation, for target sm with sm_count SMs (rnnc compile uses it). */
rnnc_status rt_fused_init(rt_fused *m, const rt_spec *s, int sm, int sm_count);
/* The kernel request for a generated set (src, plan at batch; normally
 * m->src, &m->plan, m->batch): what the forward loads and what a bundle
 * must hold.  names[CG_CUDA_MAX_LAUNCH] and label[64] are storage the
 * request points into, as are src and plan; req->sm = m->sm. */
void rt_fused_request(const rt_fused *m, const char *src, const cg_cuda_plan *plan,
                      int64_t batch, const char **names, char *label, rt_kernel_req *req);
/* A kernel request with the storage it points into. */
typedef struct rt_fused_req {
    const char *names[CG_CUDA_MAX_LAUNCH];
    char label[64];
    rt_kernel_req req;
} rt_fused_req;
/* rt_fused_request of layer kind k's set (0: layer 0, 1: the layers above). */
void rt_fused_request_kind(const rt_fused *m, int k, int64_t batch, rt_fused_req *r);

/* The step kernels' barrier: one arrival counter (u32) per batch group in
 * the first words, and a count of finished blocks at word gridDim.x,
 * zeroed once at allocation: the last block of a launch to finish zeroes
 * them again;
 * RT_FUSED_BAR_BYTES is what a model allocates, rt_fused_bar_bytes what
 * plan p uses of it. */
#define RT_FUSED_BAR_BYTES 16384
size_t rt_fused_bar_bytes(const cg_cuda_plan *p);

/* ---- tuning (fused_tune.c) */
/* "fused <cell>#<hash> I= H= P= hoist= bf= math= f32|f16|bf16 cg=<version>": the
 * model part of a tuning key; + " sm_XX sms=N" the target; + " B=b". */
void rt_fused_model_key(const rt_fused *m, char *buf, size_t n);
void rt_fused_shape_key(const rt_fused *m, int64_t batch, char *buf, size_t n);
/* Tuning text "ut=U bt=B nt=T[ rr=R bb=S][ ex=E][ op=1]" (records and bundles). */
void rt_fused_tuning_text(rt_fused_tuning t, char *buf, size_t n);
bool rt_fused_tuning_parse(const char *text, rt_fused_tuning *t);
/* Any of those fields, each once, in any order; the others 0 (`rnnc dump`). */
bool rt_fused_tuning_parse_loose(const char *text, rt_fused_tuning *t);
/* Candidates to time, the heuristic ({0}) first; returns how many.
 * tagged: each one followed by itself with tagged words (half models). */
int rt_fused_candidates(int64_t batch, int64_t hidden, int sm_count, bool tagged,
                        rt_fused_tuning *out, int max);
/* The tuning for `batch`, in the order of the section comment; *from says
 * which ("environment", "bundle", "record", "autotune", "heuristic", ...). */
void rt_fused_choose(rt_fused *m, int64_t batch, rt_fused_tuning *t, const char **from);
/* Forgets the autotuning results kept in memory (tests). */
void rt_fused_tune_reset(void);

/* ---- ahead of time (fused_aot.c): no GPU needed */
typedef struct rt_fused_aot_target {
    int64_t batch;
    int sm, sm_count;
    const char *from; /* out: where the tuning came from */
} rt_fused_aot_target;
/* Generates the kernel sets of model s for each target exactly as the
 * forward would, compiles them (disk cache or NVRTC; several at once) and
 * adds the cubins and their tuning records to b, in target order. */
rnnc_status rt_fused_aot_add_all(const rt_spec *s, rt_fused_aot_target *t, int n, rt_bundle *b);
rnnc_status rt_fused_upload_weights(rt_fused *m, const float *wts, const float *fold,
                                    int64_t wts_floats, int64_t fold_floats);
/* ---- whole models (fused_model.c) */
/* Offsets in floats of pseudo-layer p's weight and fold arenas. */
int64_t rt_fused_wts_at(const rt_fused *m, int p);
int64_t rt_fused_fold_at(const rt_fused *m, int p);
/* One run of layer kind k's kernels over T steps (a whole sequence or a
 * chunk of it): x in, y the layer's output (its direction's columns),
 * pseudo-layer p's weights, states in st (copy 0 in, FIN out), hoisted
 * values in hz, lengths len (0: none), the scratch of slot `slot`. */
typedef struct rt_fused_job {
    int k, p, T, slot;
    bool rev;
    CUdeviceptr x, y, st, hz, len;
    cg_cuda_io io; /* states straight from / to the caller's buffers (0: st) */
    bool train;    /* the cell's dropout ops drop (rt_fused_launch fills io's dropout part) */
    int t0;        /* true time of step 0: a wavefront chunk's start */
} rt_fused_job;
#define RT_FUSED_HOIST 1 /* the launches before the step kernel */
#define RT_FUSED_STEP 2  /* the persistent step kernel */
rnnc_status rt_fused_launch(rt_fused *m, const rt_fused_job *j, int which, CUstream s);
/* Grows device buffer *p to hold n bytes (contents not kept). */
rnnc_status rt_fused_grow(CUdeviceptr *p, size_t *have, size_t n);
/* The streams and events of the overlapped runs (fused_streams.c): aux[]
 * where `aux`, and at least n events, made once and kept. */
rnnc_status rt_fused_streams(rt_fused *m, bool aux, int n);
void rt_fused_streams_free(rt_fused *m);
/* waiter waits for what signaller has been given so far (through event e). */
rnnc_status rt_fused_after(CUstream waiter, CUevent e, CUstream signaller);
/* The two directions' streams (share > 1, after rt_fused_streams): fork
 * starts both after what s has been given, join makes s wait for both
 * (events 0-2); direction d runs on rt_fused_dir_stream(m, d). */
rnnc_status rt_fused_fork(rt_fused *m, CUstream s);
rnnc_status rt_fused_join(rt_fused *m, CUstream s);
CUstream rt_fused_dir_stream(const rt_fused *m, int d);
/* Floats of one pseudo-layer's states in st (three copies). */
int64_t rt_fused_st_stride(const rt_fused *m);
/* The kernel sizing of spec s: 2 where directions or layers may run at once. */
int rt_fused_share(const rt_spec *s);
/* ... and at a batch size: 1 where two kernels at once lose (fused.c). */
int rt_fused_share_at(const rt_fused *m, int64_t batch);
/* Sets m->share and m->pdl for kernels of that batch size. */
void rt_fused_set_share(rt_fused *m, int64_t batch);
/* Dropout between layers l and l+1 on a layer output buf ([T, B, D*Hout],
 * or [B, T, ...] when batch_first), the interpreter's mask and scale; run
 * again on a gradient it applies the same mask (the backward). */
rnnc_status rt_fused_dropout(rt_fused *m, int layer, CUdeviceptr buf, int64_t T, int64_t B,
                             bool batch_first, CUstream s);
/* One dropout mask over a [T, B, W] tensor ([B, T, W] batch_first): dst =
 * src masked and scaled (in place where dst == src), element (t, b, j)
 * drawing index base + (t B + b) W + j of Philox site `site`. */
typedef struct rt_fused_mask_job {
    CUdeviceptr dst, src;
    int64_t T, B, W, base;
    bool batch_first;
    bool add; /* dst += the masked src (a gradient's term), else dst = it */
    uint64_t site;
    double p;
} rt_fused_mask_job;
rnnc_status rt_fused_mask(rt_fused *m, const rt_fused_mask_job *k, CUstream s);
/* Every (layer, direction) of a forward whose buffers are on the device. */
rnnc_status rt_fused_run_model(rt_fused *m, const rnnc_forward_args *a, CUdeviceptr x,
                               CUdeviceptr y, CUstream s);
rnnc_status rt_fused_forward(void *state, const rnnc_forward_args *a);
rnnc_status rt_fused_time_forward(void *state, const rnnc_forward_args *a, int warmup, int iters,
                                  double *median_ms);
/* Frees m and its device memory (its training state through m->train). */
void rt_fused_free(rt_fused *m);
#endif /* RT_HAVE_CUDA_H */

#endif
