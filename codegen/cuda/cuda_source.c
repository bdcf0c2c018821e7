/*
 * cuda_source.c: entry points of the CUDA generator: schedule + shapes +
 * tuning -> one CUDA C source (hoisted GEMMs, row kernel, persistent step
 * kernel) and the plan the runtime follows to run it.  The analysis
 * decides everything and fills the plan; the emitters then write the
 * source from it once, reading the context and writing only text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cuda_gen.h"

typedef struct ctx_mem {
    void *blocks[24];
    int n;
} ctx_mem;

static void *take(ctx_mem *m, size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p)
        m->blocks[m->n++] = p;
    return p;
}

static void release(ctx_mem *m)
{
    for (int i = 0; i < m->n; i++)
        free(m->blocks[i]);
    m->n = 0;
}

bool cg_cuda_reg_tile_ok(int v)
{
    return v == 0 || (v > 0 && v <= 16 && (v & (v - 1)) == 0);
}

static rnnc_status check_config(const ir_schedule *s, const cg_cuda_config *cfg)
{
    if (!s || !s->fn || !cfg || !s->hoist.part)
        return err_fail(RNNC_ERR_INVALID_ARG, "cg_cuda: schedule or config missing");
    if (cfg->batch < 1 || cfg->sizes.H < 1 || cfg->sizes.I < 1)
        return err_fail(RNNC_ERR_INVALID_ARG, "cg_cuda: B=%lld I=%lld H=%lld must be >= 1",
                        (long long)cfg->batch, (long long)cfg->sizes.I, (long long)cfg->sizes.H);
    if (cfg->sizes.P < 1 || cfg->sizes.P > cfg->sizes.H)
        return err_fail(RNNC_ERR_INVALID_ARG, "cg_cuda: P=%lld not in [1, H=%lld]",
                        (long long)cfg->sizes.P, (long long)cfg->sizes.H);
    if (cfg->dtype != RNNC_F32 && cfg->dtype != RNNC_F16 && cfg->dtype != RNNC_BF16)
        return err_fail(RNNC_ERR_UNSUPPORTED, "cg_cuda: rnnc_dtype %d (F32, F16 or BF16 only)",
                        cfg->dtype);
    if (cfg->threads % 32 || cfg->threads > 1024 || cfg->unit_tile < 0 || cfg->batch_tile < 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "cg_cuda: bad tuning (threads %d, tiles %d x %d)",
                        cfg->threads, cfg->unit_tile, cfg->batch_tile);
    if (!cg_cuda_reg_tile_ok(cfg->reg_rows) || !cg_cuda_reg_tile_ok(cfg->reg_batch))
        return err_fail(RNNC_ERR_INVALID_ARG,
                        "cg_cuda: bad register tile %d x %d (0 or a power of 2 up to 16)",
                        cfg->reg_rows, cfg->reg_batch);
    return RNNC_OK;
}

static int64_t gcd(int64_t a, int64_t b)
{
    while (b) {
        int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Blocks own units of the slice width: every value of the step (4H gates,
 * H cells, P projections) is a whole number of slices, so with a
 * projection the slice is gcd(H, P) wide.  Few slices per value keep the
 * per-element code short. */
#define MAX_SLICES_PER_H 16

static rnnc_status init_ctx(cu_ctx *c, ctx_mem *m, const ir_schedule *s,
                            const cg_cuda_config *cfg, cg_cuda_plan *plan)
{
    size_t n = (size_t)s->fn->n;
    memset(c, 0, sizeof *c);
    memset(plan, 0, sizeof *plan);
    c->s = s;
    c->f = s->fn;
    c->cfg = *cfg;
    c->plan = plan;
    c->B = cfg->batch;
    c->H = gcd(cfg->sizes.H, cfg->sizes.P);
    if (cfg->sizes.H / c->H > MAX_SLICES_PER_H)
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "fused backend: proj_size %lld with hidden size %lld: their greatest "
                        "common divisor %lld is under H/%d (use the cudnn backend)",
                        (long long)cfg->sizes.P, (long long)cfg->sizes.H, (long long)c->H,
                        MAX_SLICES_PER_H);
    c->I = cfg->sizes.I;
    c->half = cfg->dtype == RNNC_F16 || cfg->dtype == RNNC_BF16;
    c->cols = take(m, n, sizeof *c->cols);
    c->k = take(m, n, sizeof *c->k);
    c->role = take(m, n, 1);
    c->phase = take(m, n, sizeof *c->phase);
    c->off = take(m, n, sizeof *c->off);
    c->xb = take(m, n, sizeof *c->xb);
    c->xp = take(m, n, sizeof *c->xp);
    c->xg = take(m, n, sizeof *c->xg);
    c->sm = take(m, n, sizeof *c->sm);
    c->wsm = take(m, n, sizeof *c->wsm);
    c->pt = take(m, n, sizeof *c->pt);
    c->ks = take(m, n, sizeof *c->ks);
    c->kp = take(m, n, sizeof *c->kp);
    c->kc = take(m, n, sizeof *c->kc);
    c->xkp = take(m, n, sizeof *c->xkp);
    c->kr = take(m, n, sizeof *c->kr);
    c->need = take(m, n, 1);
    c->gemm = take(m, n, sizeof *c->gemm);
    c->pfuse = take(m, n, sizeof *c->pfuse);
    c->pl2 = take(m, n, sizeof *c->pl2);
    c->live = take(m, n, sizeof *c->live);
    c->round = take(m, n, sizeof *c->round);
    if (m->n != 22)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cg_cuda: out of memory");
    return RNNC_OK;
}

/* Every kernel calls rnnc_pdl() before it touches what earlier work in the
 * stream writes: launched with programmatic serialisation (sm_90 on) a
 * kernel may start while the one before it still runs, so the step kernel
 * loads its weights during the GEMM's tail; then it lets the next kernel
 * start (after its own wait, so whatever ran before it has finished).
 * griddepcontrol exists from sm_90 on; before, the launch serialises. */
static void emit_pdl_helper(const cu_ctx *c, cu_text *t)
{
    cu_printf(t, "/* programmatic dependent launch: wait for the work before this grid, then "
                 "let the next grid start */\n"
                 "__device__ __forceinline__ void rnnc_pdl(void)\n{\n"
                 "#if __CUDA_ARCH__ >= 900\n"
                 "    asm volatile(\"griddepcontrol.wait;\" : : : \"memory\");\n"
                 "    asm volatile(\"griddepcontrol.launch_dependents;\" : : : \"memory\");\n"
                 "#endif\n}\n");
    /* a tail GEMM (cuda_hoist.c) lets the next grid start first and waits last */
    bool tail = false;
    for (int i = 0; i < c->plan->n_launch; i++)
        tail |= c->plan->launch[i].tail;
    if (tail)
        cu_printf(t, "__device__ __forceinline__ void rnnc_pdl_go(void)\n{\n"
                     "#if __CUDA_ARCH__ >= 900\n"
                     "    asm volatile(\"griddepcontrol.launch_dependents;\" : : : \"memory\");\n"
                     "#endif\n}\n"
                     "__device__ __forceinline__ void rnnc_pdl_wait(void)\n{\n"
                     "#if __CUDA_ARCH__ >= 900\n"
                     "    asm volatile(\"griddepcontrol.wait;\" : : : \"memory\");\n"
                     "#endif\n}\n");
}

/* The source, from the analysis alone. */
static rnnc_status emit(const cu_ctx *c, cu_text *t)
{
    static const char *const hoists[] = {"all", "matmul", "none"};
    const cg_cuda_config *cfg = &c->cfg;
    unsigned h = (unsigned)c->s->setting;
    /* what the source is specialised on, as `rnnc dump` names it */
    const char *dtype = c->half ? (cfg->dtype == RNNC_F16 ? "f16" : "bf16") : "f32";
    const char *math = c->half ? "" : cfg->math == 1 ? " tf32" : cfg->math == 2 ? " 3xtf32" : " ffma";
    cu_printf(t,
              "/* rnnc fused kernels: cell %s, B=%lld I=%lld H=%lld P=%lld, sm_%d, %s%s, hoist %s, "
              "%s */\n",
              c->f->name, (long long)c->B, (long long)c->I, (long long)cfg->sizes.H,
              (long long)cfg->sizes.P, cfg->sm, dtype, math, h < 3 ? hoists[h] : "?",
              c->plan->tuning);
    cu_printf(t,
              "struct rnnc_io { const float *in[%d]; float *out[%d]; unsigned long long seed, "
              "site; int t0, drop; };\n",
              CG_CUDA_IO, CG_CUDA_IO);
    cu_emit_half_helpers(c, t);
    cu_emit_dropout_helpers(c, t);
    cu_emit_mma_helpers(c, t);
    cu_emit_wgmma_helpers(c, t);
    cu_emit_wgstep_helpers(c, t);
    cu_emit_ksplit_helpers(c, t);
    cu_emit_cp_helpers(c, t);
    emit_pdl_helper(c, t);
    rnnc_status st = cu_emit_hoist(c, t);
    if (st || (st = cu_emit_step(c, t)))
        return st;
    cu_reindent(t);
    return RNNC_OK;
}

rnnc_status cg_cuda_generate(const ir_schedule *s, const cg_cuda_config *cfg, char **src,
                             cg_cuda_plan *plan)
{
    if (!src || !plan)
        return err_fail(RNNC_ERR_INVALID_ARG, "cg_cuda: no output");
    *src = NULL;
    err_clear(); /* the detail is stale until a failure: the check at `fail` needs it empty */
    rnnc_status st = check_config(s, cfg);
    if (st)
        return st;
    cu_ctx c;
    ctx_mem m = {.n = 0};
    cu_text t = {0};
    if ((st = init_ctx(&c, &m, s, cfg, plan)) || (st = cu_analyse(&c)))
        goto fail;
    if ((st = emit(&c, &t)))
        goto fail;
    if (t.oom) {
        st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "cg_cuda: out of memory");
        goto fail;
    }
    release(&m);
    if (ir_dump_enabled("cuda"))
        fprintf(stderr, "# RNNC_DUMP=cuda: cell %s\n%s", c.f->name, t.p);
    *src = t.p;
    return RNNC_OK;
fail:
    free(t.p);
    release(&m);
    if (st == RNNC_ERR_UNSUPPORTED && !rnnc_last_error()[0])
        err_fail(st, "fused backend: cell '%s' cannot be generated", s->fn->name);
    return st;
}

bool cg_cuda_takes_passes(const ir_schedule *s, const cg_cuda_config *cfg)
{
    cg_cuda_plan plan;
    cu_ctx c;
    ctx_mem m = {.n = 0};
    bool passes = check_config(s, cfg) == RNNC_OK && init_ctx(&c, &m, s, cfg, &plan) == RNNC_OK &&
                  cu_analyse(&c) == RNNC_OK && plan.passes > 1;
    release(&m);
    err_clear();
    return passes;
}

rnnc_status cg_cuda_source(const ir_schedule *s, const cg_cuda_config *cfg, char **src)
{
    cg_cuda_plan plan;
    return cg_cuda_generate(s, cfg, src, &plan);
}
