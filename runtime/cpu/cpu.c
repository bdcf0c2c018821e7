/*
 * cpu.c: the CPU backend object: create (schedule, plan and JIT-compile
 * each distinct cell of the model: layer 0, and layers > 0, at once), bind (pack
 * every W into panels and compute the fold vectors once per weight
 * change) and destroy; the model API times it.  The forward itself is cpu_run.c.
 */
#define _POSIX_C_SOURCE 200809L
#ifdef RNNC_HAVE_LLVM
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "runtime/cpu/cpu.h"

float *rt_cpu_alloc(size_t floats)
{
    size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes ? bytes : 64);
    if (p)
        memset(p, 0, bytes);
    return p;
}

static rnnc_status prepare_fn(const rt_spec *s, int k, rt_cpu_fn *out)
{
    out->arena = ir_arena_create();
    if (!out->arena)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    out->sched = ir_arena_alloc(out->arena, sizeof(ir_schedule));
    out->plan = ir_arena_alloc(out->arena, sizeof(cg_cpu_plan));
    if (!out->sched || !out->plan)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    rnnc_status st = pass_fuse(s->fn[k], s->hoist, out->arena, out->sched);
    if (st == RNNC_OK)
        st = rt_cpu_prepare(out->sched, s->sizes[k], s->hoist, out->arena, out->plan,
                            &out->code);
    return st;
}

/* The layers above layer 0 have a cell of their own where its input is
 * wider or narrower than layer 0's (H or 2H against I): it is prepared on
 * a second thread while this one prepares layer 0's, so a stack's two
 * compiles take about the time of one where there are two cores.  Cells of
 * the same sizes make the same code: the second finds the first's. */
typedef struct upper_job {
    const rt_spec *s;
    rt_cpu_fn *fn;
    rnnc_status st;
    char why[512]; /* its rnnc_last_error, which is per thread */
} upper_job;

static void *prepare_upper(void *arg)
{
    upper_job *j = arg;
    j->st = prepare_fn(j->s, 1, j->fn);
    if (j->st != RNNC_OK)
        snprintf(j->why, sizeof j->why, "%s", rnnc_last_error());
    return NULL;
}

static rnnc_status prepare_both(const rt_spec *s, rt_cpu_fn fn[2])
{
    upper_job j = {.s = s, .fn = &fn[1]};
    bool alike = s->sizes[0].I == s->sizes[1].I && s->sizes[0].H == s->sizes[1].H &&
                 s->sizes[0].P == s->sizes[1].P;
    pthread_t th;
    bool threaded = !alike && rt_cpu_thread_count() > 1 &&
                    pthread_create(&th, NULL, prepare_upper, &j) == 0;
    if (!threaded)
        prepare_upper(&j);
    rnnc_status st = prepare_fn(s, 0, &fn[0]);
    if (threaded)
        pthread_join(th, NULL);
    if (st == RNNC_OK && j.st != RNNC_OK)
        st = err_fail(j.st, "%s", j.why);
    return st;
}

static const cg_cpu_plan *plan_of(const rt_cpu_model *m, int p)
{
    return m->fn[p / m->spec.dirs > 0].plan;
}

static void cpu_free_bound(rt_cpu_model *m)
{
    if (!m->bound)
        return;
    for (int p = 0; p < m->spec.layers * m->spec.dirs; p++) {
        const cg_cpu_plan *pl = plan_of(m, p);
        for (int32_t g = 0; m->bound[p].packed && g < pl->n_gemms; g++)
            free(m->bound[p].packed[g]);
        for (int32_t s = 0; m->bound[p].fold && s < pl->n_slots; s++)
            free(m->bound[p].fold[s]);
        free(m->bound[p].packed);
        free(m->bound[p].fold);
    }
    free(m->bound);
    m->bound = NULL;
}

static void cpu_destroy(void *state)
{
    rt_cpu_model *m = state;
    if (!m)
        return;
    cpu_free_bound(m);
    rt_cpu_pool_destroy(m->pool);
    for (int k = 0; k < 2; k++)
        ir_arena_destroy(m->fn[k].arena);
    free(m->ws);
    free(m);
}

static rnnc_status cpu_create(const rt_spec *s, void **state)
{
    if (!s || !state || !s->fn[0] || s->layers < 1 || (s->layers > 1 && !s->fn[1]))
        return err_fail(RNNC_ERR_INVALID_ARG, "cpu: incomplete model spec");
    if (s->dtype != RNNC_F32 && !rt_dtype_is_half(s->dtype))
        return err_fail(RNNC_ERR_UNSUPPORTED, "cpu: f32, f16 and bf16 models run on the CPU (got %s)",
                        rnnc_dtype_name(s->dtype));
    rt_cpu_model *m = calloc(1, sizeof *m);
    if (!m)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    m->spec = *s;
    rnnc_status st = s->layers > 1 ? prepare_both(s, m->fn) : prepare_fn(s, 0, &m->fn[0]);
    if (st == RNNC_OK)
        st = rt_cpu_pool_create(rt_cpu_thread_count(), &m->pool);
    if (st != RNNC_OK) {
        cpu_destroy(m);
        return st;
    }
    *state = m;
    return RNNC_OK;
}

/* W [n, k] row-major into panels [n/nr][k][nr], zero past n.  Each panel
 * is written in its own order, a row of nr floats at a time, reading nr
 * rows of W side by side: row by row instead (a store every nr floats, into
 * zeroed memory) took 7.7 ms of an LSTM's first forward at I = H = 512. */
static float *pack(const float *w, int64_t n, int64_t k, int nr)
{
    int64_t np = (n + nr - 1) / nr;
    size_t bytes = (size_t)(np * k * nr) * sizeof(float);
    float *out = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!out)
        return NULL;
    for (int64_t p = 0; p < np; p++) {
        int64_t cols = n - p * nr < nr ? n - p * nr : nr;
        const float *src = w + p * nr * k;
        float *dst = out + p * k * nr;
        for (int64_t kk = 0; kk < k; kk++, dst += nr) {
            for (int64_t c = 0; c < cols; c++)
                dst[c] = src[c * k + kk];
            for (int64_t c = cols; c < nr; c++)
                dst[c] = 0.0f;
        }
    }
    return out;
}

/* Pseudo-layer p's arrays, and the check that its weights are all there. */
static rnnc_status bound_arrays(rt_cpu_model *m, const rt_weights *w, int p)
{
    const cg_cpu_plan *pl = plan_of(m, p);
    rt_cpu_bound *b = &m->bound[p];
    b->packed = calloc((size_t)pl->n_gemms + 1, sizeof(float *));
    b->fold = calloc((size_t)pl->n_slots + 1, sizeof(float *));
    if (!b->packed || !b->fold)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory binding weights");
    for (int32_t g = 0; g < pl->n_gemms; g++)
        if (!rt_weight(w, p, pl->gemms[g].param))
            return err_fail(RNNC_ERR_INVALID_ARG, "cpu: weight '%s' of pseudo-layer %d is missing",
                            pl->fn->params[pl->gemms[g].param].name, p);
    return RNNC_OK;
}

/* Every W of every pseudo-layer packed, the matrices shared out among the
 * pool's threads: a stack holds tens of millions of floats (a 4-layer
 * bidirectional LSTM at 1024: 80 M, 0.19 s on one thread). */
typedef struct pack_job {
    rt_cpu_model *m;
    const rt_weights *w;
    int n_items, per_p; /* items: p * per_p + g */
    atomic_int next;
    atomic_bool failed;
} pack_job;

static void pack_items(void *ctx, int tid, int nt)
{
    pack_job *j = ctx;
    (void)tid, (void)nt;
    for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->n_items;) {
        int p = i / j->per_p, g = i % j->per_p;
        const cg_cpu_plan *pl = plan_of(j->m, p);
        if (g >= pl->n_gemms)
            continue;
        const cg_gemm *gm = &pl->gemms[g];
        float *out = pack(rt_weight(j->w, p, gm->param), gm->n, gm->k, pl->nr);
        j->m->bound[p].packed[g] = out;
        if (!out)
            atomic_store(&j->failed, true);
    }
}

static rnnc_status pack_all(rt_cpu_model *m, const rt_weights *w, int np)
{
    int per_p = m->fn[0].plan->n_gemms;
    if (m->spec.layers > 1 && m->fn[1].plan->n_gemms > per_p)
        per_p = m->fn[1].plan->n_gemms;
    pack_job j = {.m = m, .w = w, .n_items = np * per_p, .per_p = per_p > 0 ? per_p : 1};
    atomic_init(&j.next, 0);
    atomic_init(&j.failed, false);
    rt_cpu_pool_run(m->pool, pack_items, &j);
    return atomic_load(&j.failed)
               ? err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory packing weights")
               : RNNC_OK;
}

/* Pseudo-layer p's fold vectors. */
static rnnc_status fold_pseudo(rt_cpu_model *m, const rt_weights *w, int p)
{
    const cg_cpu_plan *pl = plan_of(m, p);
    rt_cpu_bound *b = &m->bound[p];
    for (int32_t s = 0; s < pl->n_slots; s++) {
        if (pl->slots[s].kind != CG_SLOT_FOLD)
            continue;
        if (!(b->fold[s] = rt_cpu_alloc((size_t)(pl->slots[s].ld + 2 * pl->nr))))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory binding weights");
        rnnc_status st = rt_eval_fold(pl->fn, pl->sizes, w, p, pl->slots[s].index, b->fold[s]);
        if (st != RNNC_OK)
            return st;
    }
    return RNNC_OK;
}

static rnnc_status cpu_bind(void *state, const rt_weights *w)
{
    rt_cpu_model *m = state;
    int np = m->spec.layers * m->spec.dirs;
    if (!w || w->pseudo_layers < np)
        return err_fail(RNNC_ERR_INVALID_ARG, "cpu: weights for %d pseudo-layers (want %d)",
                        w ? w->pseudo_layers : 0, np);
    cpu_free_bound(m);
    m->bound = calloc((size_t)np, sizeof(rt_cpu_bound));
    if (!m->bound)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory binding weights");
    rnnc_status st = RNNC_OK;
    for (int p = 0; p < np && st == RNNC_OK; p++)
        st = bound_arrays(m, w, p);
    if (st == RNNC_OK)
        st = pack_all(m, w, np);
    for (int p = 0; p < np && st == RNNC_OK; p++)
        st = fold_pseudo(m, w, p);
    if (st != RNNC_OK)
        cpu_free_bound(m);
    return st;
}

static rnnc_status cpu_forward_f32(void *state, const rnnc_forward_args *a)
{
    return rt_cpu_forward(state, a);
}

static rnnc_status cpu_forward(void *state, const rnnc_forward_args *a)
{
    const rt_cpu_model *m = state;
    if (rt_dtype_is_half(m->spec.dtype))
        return rt_forward_half(&m->spec, a, cpu_forward_f32, state);
    return rt_cpu_forward(state, a);
}

static void cpu_set_seed(void *state, uint64_t seed)
{
    ((rt_cpu_model *)state)->spec.seed = seed;
}

const rt_backend rt_backend_cpu = {
    .name = "cpu",
    .create = cpu_create,
    .bind = cpu_bind,
    .forward = cpu_forward,
    .time_forward = NULL, /* the model API times it on the host clock */
    .backward = NULL,
    .weight_grad = NULL,
    .set_seed = cpu_set_seed,
    .destroy = cpu_destroy,
};
#endif /* RNNC_HAVE_LLVM */
