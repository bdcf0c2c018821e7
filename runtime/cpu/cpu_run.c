/*
 * cpu_run.c: one forward of the CPU backend.  Per layer and direction:
 * the hoisted part runs over all T*B rows in chunks (GEMM of the chunk,
 * then its fused element-wise epilogue while the chunk is in cache), then
 * the time loop runs inside one pool job.  With enough rows per thread,
 * each thread owns a slice of the batch for the whole sequence and never
 * waits ("rows"); otherwise the threads share each GEMM's column panels
 * and meet at barriers ("cols").  Semantics follow the interpreter: a row
 * past its length keeps its states and writes zeros; dropout masks come
 * from the same Philox indices.
 */
#define _POSIX_C_SOURCE 200809L
#ifdef RNNC_HAVE_LLVM
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "runtime/cpu/cpu.h"

#define HOIST_CHUNK_BLOCKS 8 /* hoisted rows per chunk, in micro-kernel rows */

typedef struct run {
    rt_cpu_model *m;
    const rnnc_forward_args *a;
    int64_t T, B, width;
    int nt;
    bool rows_mode;
    /* the pseudo-layer being run */
    int layer, dir, pseudo;
    const cg_cpu_plan *p;
    const rt_cpu_code *code;
    const rt_cpu_bound *w;
    float **base;  /* [n_slots] row 0 of each slot's buffer (HOIST slots at t = 0) */
    float **tslots; /* [nt * n_slots] per-thread slot tables for the step */
    float *tmp;    /* [nt * tmp_len] per-thread row of next states */
    int64_t tmp_len;
    float *out;    /* the layer's output [T*B, out_ld] */
    int64_t out_ld;
    /* workspace pieces */
    float *xin, *ybuf[2], *hoist, *step;
} run;

static int64_t lmin(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Rows [r0, r1) of gemm gi over panels [p0, p1). */
static void gemm(const run *r, float *const *slots, int32_t gi, int64_t r0, int64_t r1, int64_t p0,
                 int64_t p1)
{
    const cg_gemm *g = &r->p->gemms[gi];
    int mr = r->p->mr, nr = r->p->nr;
    int64_t lda = r->p->slots[g->a_slot].ld, ldc = r->p->slots[g->c_slot].ld;
    const float *A = slots[g->a_slot] + g->a_off;
    float *C = slots[g->c_slot];
    const float *W = r->w->packed[gi];
    rt_cpu_mk *mk = r->code->mk + (size_t)gi * (size_t)mr;
    for (int64_t rc = r0; rc < r1; rc += 64) {
        int64_t re = lmin(r1, rc + 64);
        for (int64_t pp = p0; pp < p1; pp++) {
            const float *panel = W + pp * g->k * nr;
            for (int64_t rb = rc; rb < re; rb += mr)
                mk[lmin(mr, re - rb) - 1](A + rb * lda, panel, C + rb * ldc + pp * nr);
        }
    }
}

static int64_t panels(const run *r, int32_t gi)
{
    return (r->p->gemms[gi].n + r->p->nr - 1) / r->p->nr;
}

/* Fills rows [r0, r1) of every dropout mask of `part`; row R of the
 * [T, B] grid is t*B + b, the interpreter's element index R*cols + j. */
static void fill_masks(const run *r, float *const *slots, int part, int64_t r0, int64_t r1,
                       int64_t row_base)
{
    const cg_cpu_plan *p = r->p;
    for (int32_t s = 0; s < p->n_slots; s++) {
        const cg_slot *sl = &p->slots[s];
        if (sl->kind != CG_SLOT_MASK || sl->part != part)
            continue;
        const ir_node *n = &p->fn->nodes[sl->index];
        uint64_t site = rt_dropout_site_cell(r->pseudo, n->i1);
        float scale = (float)cm_dropout_scale(n->f);
        for (int64_t row = r0; row < r1; row++) {
            float *dst = slots[s] + row * sl->ld;
            uint64_t idx = (uint64_t)((row_base + row) * sl->cols);
            for (int64_t j = 0; j < sl->cols; j++)
                dst[j] = !r->a->training ? 1.0f
                         : cm_dropout_keep(r->m->spec.seed, site, idx + (uint64_t)j, n->f) ? scale
                                                                                           : 0.0f;
        }
    }
}

static void hoist_job(void *ctx, int tid, int nt)
{
    const run *r = ctx;
    const cg_cpu_plan *p = r->p;
    int64_t R = r->T * r->B, chunk = (int64_t)p->mr * HOIST_CHUNK_BLOCKS;
    for (int64_t c = tid; c * chunk < R; c += nt) {
        int64_t r0 = c * chunk, r1 = lmin(R, r0 + chunk);
        fill_masks(r, r->base, IR_PART_HOIST, r0, r1, 0);
        for (int st = 0; st < p->n_stages[0]; st++) {
            const cg_stage *sg = &p->stages[0][st];
            for (int32_t g = sg->first_gemm; g < sg->first_gemm + sg->n_gemms; g++)
                gemm(r, r->base, g, r0, r1, 0, panels(r, g));
            if (r->code->ew[0][st])
                r->code->ew[0][st](r->base, r0, r1);
        }
    }
}

/* The slot table of the step at time t: hoisted values of time t, step buffers. */
static void step_slots(const run *r, float **slots, int64_t t)
{
    const cg_cpu_plan *p = r->p;
    for (int32_t s = 0; s < p->n_slots; s++)
        slots[s] = r->base[s] && p->slots[s].part == IR_PART_HOIST
                       ? r->base[s] + t * r->B * p->slots[s].ld
                       : r->base[s];
}

static const float *row_of(const run *r, float *const *slots, int32_t node, int64_t b)
{
    const cg_cpu_plan *p = r->p;
    int32_t s = p->node_slot[node];
    return slots[s] + b * p->slots[s].ld + p->node_off[node];
}

/* Output and next states of rows [b0, b1) at time t. */
static void commit(const run *r, float *const *slots, float *tmp, int64_t t, int64_t b0,
                   int64_t b1)
{
    const cg_cpu_plan *p = r->p;
    const ir_fn *f = p->fn;
    int64_t hout = r->m->spec.hout;
    for (int64_t b = b0; b < b1; b++) {
        bool active = !r->a->lengths || t < r->a->lengths[b];
        float *y = r->out + (t * r->B + b) * r->out_ld + r->dir * hout;
        if (!active) {
            memset(y, 0, (size_t)hout * sizeof(float));
            continue;
        }
        memcpy(y, row_of(r, slots, f->output, b), (size_t)hout * sizeof(float));
        float *tp = tmp;
        for (int32_t k = 0; k < f->n_states; k++) {
            int64_t n = p->slots[p->state_slot[k]].cols;
            memcpy(tp, row_of(r, slots, f->states[k].next, b), (size_t)n * sizeof(float));
            tp += n;
        }
        tp = tmp;
        for (int32_t k = 0; k < f->n_states; k++) {
            const cg_slot *sl = &p->slots[p->state_slot[k]];
            memcpy(slots[p->state_slot[k]] + b * sl->ld, tp, (size_t)sl->cols * sizeof(float));
            tp += sl->cols;
        }
    }
}

static void step_job(void *ctx, int tid, int nt)
{
    const run *r = ctx;
    const cg_cpu_plan *p = r->p;
    float **slots = r->tslots + (size_t)tid * (size_t)p->n_slots;
    float *tmp = r->tmp + tid * r->tmp_len;
    int64_t b0 = r->B * tid / nt, b1 = r->B * (tid + 1) / nt;
    bool cols = !r->rows_mode && nt > 1;
    int last = p->n_stages[1] - 1;
    for (int64_t s = 0; s < r->T; s++) {
        int64_t t = r->dir ? r->T - 1 - s : s;
        step_slots(r, slots, t);
        fill_masks(r, slots, IR_PART_STEP, b0, b1, t * r->B);
        for (int st = 0; st <= last; st++) {
            const cg_stage *sg = &p->stages[1][st];
            for (int32_t g = sg->first_gemm; g < sg->first_gemm + sg->n_gemms; g++) {
                int64_t np = panels(r, g);
                if (cols)
                    gemm(r, slots, g, 0, r->B, np * tid / nt, np * (tid + 1) / nt);
                else
                    gemm(r, slots, g, b0, b1, 0, np);
            }
            if (cols && sg->n_gemms > 0)
                rt_cpu_pool_barrier(r->m->pool);
            if (r->code->ew[1][st])
                r->code->ew[1][st](slots, b0, b1);
            if (cols && st < last)
                rt_cpu_pool_barrier(r->m->pool);
        }
        commit(r, slots, tmp, t, b0, b1);
        if (cols)
            rt_cpu_pool_barrier(r->m->pool);
    }
}

static int64_t slot_floats(const cg_slot *sl, int64_t rows, int nr)
{
    return rows * sl->ld + 2 * nr;
}

/* Floats the buffers of one pseudo-layer of `p` take: [0] hoisted, [1] step. */
static void part_need(const cg_cpu_plan *p, int64_t T, int64_t B, int64_t need[2])
{
    need[0] = need[1] = 0;
    for (int32_t s = 0; s < p->n_slots; s++) {
        const cg_slot *sl = &p->slots[s];
        if (sl->kind == CG_SLOT_FOLD || sl->kind == CG_SLOT_INPUT)
            continue;
        if (sl->part == IR_PART_HOIST)
            need[0] += slot_floats(sl, T * B, p->nr);
        else
            need[1] += slot_floats(sl, B, p->nr);
    }
}

static rnnc_status carve_workspace(run *r)
{
    rt_cpu_model *m = r->m;
    const cg_cpu_plan *p0 = m->fn[0].plan;
    int nr = p0->nr;
    int64_t TB = r->T * r->B, hoist = 0, step = 0;
    for (int k = 0; k < (m->spec.layers > 1 ? 2 : 1); k++) {
        int64_t need[2];
        part_need(m->fn[k].plan, r->T, r->B, need);
        hoist = need[0] > hoist ? need[0] : hoist;
        step = need[1] > step ? need[1] : step;
    }
    r->out_ld = (r->width + nr - 1) / nr * nr;
    int64_t xin = TB * p0->slots[p0->input_slot].ld + 2 * nr, y = TB * r->out_ld + 2 * nr;
    size_t total = (size_t)(xin + 2 * y + hoist + step);
    if (total > m->ws_floats) {
        free(m->ws);
        m->ws_floats = 0;
        if (!(m->ws = rt_cpu_alloc(total)))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory for %zu MB of buffers",
                            total * sizeof(float) >> 20);
        m->ws_floats = total;
    }
    r->xin = m->ws;
    r->ybuf[0] = r->xin + xin;
    r->ybuf[1] = r->ybuf[0] + y;
    r->hoist = r->ybuf[1] + y;
    r->step = r->hoist + hoist;
    return RNNC_OK;
}

static void load_x(const run *r)
{
    const float *x = r->a->x;
    int64_t I = r->m->spec.sizes[0].I, ld = r->m->fn[0].plan->slots[r->m->fn[0].plan->input_slot].ld;
    for (int64_t t = 0; t < r->T; t++)
        for (int64_t b = 0; b < r->B; b++) {
            int64_t src = r->m->spec.batch_first ? b * r->T + t : t * r->B + b;
            memcpy(r->xin + (t * r->B + b) * ld, x + src * I, (size_t)I * sizeof(float));
        }
}

static void store_y(const run *r, const float *out)
{
    float *y = r->a->y;
    for (int64_t t = 0; t < r->T; t++)
        for (int64_t b = 0; b < r->B; b++) {
            int64_t dst = r->m->spec.batch_first ? b * r->T + t : t * r->B + b;
            memcpy(y + dst * r->width, out + (t * r->B + b) * r->out_ld,
                   (size_t)r->width * sizeof(float));
        }
}

static void dropout_between(const run *r, float *buf)
{
    double pr = r->m->spec.dropout;
    float scale = (float)cm_dropout_scale(pr);
    uint64_t site = rt_dropout_site_layer(r->layer);
    for (int64_t row = 0; row < r->T * r->B; row++)
        for (int64_t j = 0; j < r->width; j++) {
            uint64_t idx = (uint64_t)(row * r->width + j);
            float *v = buf + row * r->out_ld + j;
            *v = cm_dropout_keep(r->m->spec.seed, site, idx, pr) ? *v * scale : 0.0f;
        }
}

/* Points every slot at its buffer for this pseudo-layer. */
static void bind_slots(run *r, const float *in)
{
    const cg_cpu_plan *p = r->p;
    float *hoist = r->hoist, *step = r->step;
    for (int32_t s = 0; s < p->n_slots; s++) {
        const cg_slot *sl = &p->slots[s];
        if (sl->kind == CG_SLOT_INPUT)
            r->base[s] = (float *)in;
        else if (sl->kind == CG_SLOT_FOLD)
            r->base[s] = r->w->fold[s];
        else if (sl->part == IR_PART_HOIST) {
            r->base[s] = hoist;
            hoist += slot_floats(sl, r->T * r->B, p->nr);
        } else {
            r->base[s] = step;
            step += slot_floats(sl, r->B, p->nr);
        }
    }
}

static void states_in(const run *r)
{
    const cg_cpu_plan *p = r->p;
    for (int32_t k = 0; k < p->fn->n_states; k++) {
        const cg_slot *sl = &p->slots[p->state_slot[k]];
        const float *src = r->a->init && r->a->init[k] ? r->a->init[k] : NULL;
        for (int64_t b = 0; b < r->B; b++) {
            float *dst = r->base[p->state_slot[k]] + b * sl->ld;
            if (src)
                memcpy(dst, src + (r->pseudo * r->B + b) * sl->cols, (size_t)sl->cols * sizeof(float));
            else
                memset(dst, 0, (size_t)sl->cols * sizeof(float));
        }
    }
}

static void states_out(const run *r)
{
    const cg_cpu_plan *p = r->p;
    for (int32_t k = 0; k < p->fn->n_states; k++) {
        const cg_slot *sl = &p->slots[p->state_slot[k]];
        float *dst = r->a->final && r->a->final[k] ? r->a->final[k] : NULL;
        for (int64_t b = 0; dst && b < r->B; b++)
            memcpy(dst + (r->pseudo * r->B + b) * sl->cols, r->base[p->state_slot[k]] + b * sl->ld,
                   (size_t)sl->cols * sizeof(float));
    }
}

static rnnc_status run_pseudo(run *r, const float *in)
{
    const rt_cpu_fn *fn = &r->m->fn[r->layer > 0];
    r->p = fn->plan;
    r->code = fn->code;
    r->w = &r->m->bound[r->pseudo];
    const cg_cpu_plan *p = r->p;
    int64_t in_ld = r->layer ? r->out_ld : p->slots[p->input_slot].ld;
    if (p->slots[p->input_slot].ld != in_ld)
        return err_fail(RNNC_ERR_INTERNAL, "cpu: layer %d input stride %lld, want %lld", r->layer,
                        (long long)in_ld, (long long)p->slots[p->input_slot].ld);
    r->tmp_len = 0;
    for (int32_t k = 0; k < p->fn->n_states; k++)
        r->tmp_len += p->slots[p->state_slot[k]].cols;
    r->base = calloc((size_t)p->n_slots + 1, sizeof(float *));
    r->tslots = calloc((size_t)(p->n_slots * r->nt) + 1, sizeof(float *));
    r->tmp = malloc((size_t)(r->tmp_len * r->nt + 1) * sizeof(float));
    rnnc_status st = RNNC_OK;
    if (!r->base || !r->tslots || !r->tmp) {
        st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
        goto free_tables;
    }
    bind_slots(r, in);
    states_in(r);
    if (p->n_stages[0] > 0)
        rt_cpu_pool_run(r->m->pool, hoist_job, r);
    rt_cpu_pool_run(r->m->pool, step_job, r);
    states_out(r);
free_tables:
    free(r->base);
    free(r->tslots);
    free(r->tmp);
    return st;
}

static bool rows_mode(const run *r)
{
    const char *e = getenv("RNNC_CPU_SPLIT");
    if (e && strcmp(e, "rows") == 0)
        return true;
    if (e && strcmp(e, "cols") == 0)
        return false;
    return r->B >= (int64_t)r->nt * 2 * r->m->fn[0].plan->mr;
}

rnnc_status rt_cpu_forward(rt_cpu_model *m, const rnnc_forward_args *a)
{
    rnnc_status st = rt_check_forward(&m->spec, a);
    if (st != RNNC_OK)
        return st;
    if (a->device_pointers)
        return err_fail(RNNC_ERR_UNSUPPORTED, "cpu: the CPU backend takes host pointers only");
    if (!m->bound)
        return err_fail(RNNC_ERR_STATE, "cpu: forward before the weights are set");
    run r = {.m = m, .a = a, .T = a->seq_len, .B = a->batch,
             .width = m->spec.dirs * m->spec.hout, .nt = rt_cpu_pool_size(m->pool)};
    r.rows_mode = rows_mode(&r);
    if ((st = carve_workspace(&r)) != RNNC_OK)
        return st;
    load_x(&r);
    const float *in = r.xin;
    for (int l = 0; l < m->spec.layers && st == RNNC_OK; l++) {
        r.out = r.ybuf[l % 2];
        for (int d = 0; d < m->spec.dirs && st == RNNC_OK; d++) {
            r.layer = l;
            r.dir = d;
            r.pseudo = l * m->spec.dirs + d;
            st = run_pseudo(&r, in);
        }
        if (a->training && m->spec.dropout > 0 && l + 1 < m->spec.layers)
            dropout_between(&r, r.out);
        in = r.out;
    }
    if (st == RNNC_OK)
        store_y(&r, in);
    return st;
}
#endif /* RNNC_HAVE_LLVM */
