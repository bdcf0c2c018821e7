/*
 * fused_run.c: one forward of the fused backend: the kernel set for the
 * batch size (generated, then from the kernel cache), scratch buffers grown
 * to the sequence, initial states in, the launches in plan order (the step
 * kernel cooperative, after its barrier counter is zeroed), final states and
 * y out.  Host pointers are staged through device scratch.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

#ifdef RT_HAVE_CUDA_H

rnnc_status rt_fused_prepare(rt_fused *m, int64_t batch)
{
    if (m->batch == batch && m->src)
        return RNNC_OK;
    cg_cuda_config cfg;
    rt_fused_config(m, batch, true, &cfg);
    char *src = NULL;
    cg_cuda_plan plan;
    rnnc_status st = cg_cuda_generate(&m->sched, &cfg, &src, &plan);
    if (st)
        return st;
    free(m->src);
    m->src = src;
    m->plan = plan;
    m->batch = batch;
    m->loaded = false;
    return RNNC_OK;
}

static rnnc_status load_kernels(rt_fused *m)
{
    if (m->loaded)
        return RNNC_OK;
    const char *names[CG_CUDA_MAX_LAUNCH];
    for (int i = 0; i < m->plan.n_launch; i++)
        names[i] = m->plan.launch[i].name;
    char label[64];
    snprintf(label, sizeof label, "fused_%s_b%lld", m->spec.fn[0]->name, (long long)m->batch);
    rt_kernel_req req = {.source = m->src, .name = label, .kernels = names,
                         .n_kernels = m->plan.n_launch, .sm = 0, .tuning = m->plan.tuning};
    rnnc_status st = rt_kernel_get(&req, m->spec.device, &m->kern);
    if (st == RNNC_OK)
        m->loaded = true;
    return st;
}

/* The step kernel's barrier: one arrival flag (u32) per block of the
 * persistent grid, zeroed before every forward. */
#define BAR_BYTES 16384

static size_t bar_bytes(const cg_cuda_plan *p)
{
    size_t n = 64;
    for (int i = 0; i < p->n_launch; i++)
        if (p->launch[i].cooperative && (size_t)p->launch[i].grid * 4 > n)
            n = (size_t)p->launch[i].grid * 4;
    return n;
}

/* Grows *p to hold n bytes (contents not kept). */
static rnnc_status grow(CUdeviceptr *p, size_t *have, size_t n)
{
    if (n == 0)
        n = 16;
    if (*have >= n)
        return RNNC_OK;
    rt_dev_free(*p);
    *p = 0;
    *have = 0;
    rnnc_status st = rt_dev_alloc(p, n);
    if (st == RNNC_OK)
        *have = n;
    return st;
}

rnnc_status rt_fused_upload_weights(rt_fused *m, const float *wts, const float *fold)
{
    size_t nw = (size_t)(m->plan.wts_floats + 4) * 4, nf = (size_t)(m->plan.fold_floats + 4) * 4;
    rt_dev_free(m->wts);
    rt_dev_free(m->fold);
    m->wts = m->fold = 0;
    rnnc_status st;
    if ((st = rt_dev_alloc(&m->wts, nw)) || (st = rt_dev_alloc(&m->fold, nf)) ||
        (st = rt_dev_upload(m->wts, wts, nw, NULL)) || (st = rt_dev_upload(m->fold, fold, nf, NULL)))
        return st;
    m->wts_floats = m->plan.wts_floats;
    m->fold_floats = m->plan.fold_floats;
    return rt_dev_sync(NULL);
}

static rnnc_status ensure_scratch(rt_fused *m, const rnnc_forward_args *a)
{
    const cg_cuda_plan *p = &m->plan;
    size_t TB = (size_t)a->seq_len * (size_t)a->batch;
    rnnc_status st;
    if ((st = grow(&m->st, &m->st_n, (size_t)p->state_floats * 2 * 4)) ||
        (st = grow(&m->hz, &m->hz_n, TB * (size_t)p->hz_cols * 4)) ||
        (st = grow(&m->xb, &m->xb_n, (size_t)p->xb_floats * 4)) ||
        (st = grow(&m->part, &m->part_n, (size_t)p->part_floats * 4)))
        return st;
    if (bar_bytes(p) > BAR_BYTES)
        return rnnc_fail(RNNC_ERR_UNSUPPORTED, "fused backend: persistent grid too large");
    if (!m->bar && (st = rt_dev_alloc(&m->bar, BAR_BYTES)))
        return st;
    if (!a->device_pointers &&
        ((st = grow(&m->dx, &m->dx_n, TB * (size_t)p->in_cols * 4)) ||
         (st = grow(&m->dy, &m->dy_n, TB * (size_t)p->out_cols * 4))))
        return st;
    return RNNC_OK;
}

/* Copies between the caller's buffer (host or device) and device memory. */
static rnnc_status move(CUdeviceptr dev, const void *user, size_t n, bool user_dev, bool in,
                        CUstream s)
{
    if (user_dev)
        return in ? rt_dev_copy(dev, (CUdeviceptr)(uintptr_t)user, n, s)
                  : rt_dev_copy((CUdeviceptr)(uintptr_t)user, dev, n, s);
    return in ? rt_dev_upload(dev, user, n, s) : rt_dev_download((void *)user, dev, n, s);
}

static rnnc_status states_in(rt_fused *m, const rnnc_forward_args *a, CUstream s)
{
    const cg_cuda_plan *p = &m->plan;
    for (int i = 0; i < p->n_states; i++) {
        CUdeviceptr dst = m->st + (CUdeviceptr)p->state[i].offset * 4;
        size_t n = (size_t)(a->batch * p->state[i].count) * 4;
        const void *src = a->init ? a->init[i] : NULL;
        rnnc_status st = src ? move(dst, src, n, a->device_pointers, true, s) : rt_dev_zero(dst, n, s);
        if (st)
            return st;
    }
    return RNNC_OK;
}

static rnnc_status states_out(rt_fused *m, const rnnc_forward_args *a, CUstream s)
{
    const cg_cuda_plan *p = &m->plan;
    CUdeviceptr last = m->st + (CUdeviceptr)((a->seq_len & 1) * p->state_floats * 4);
    for (int i = 0; a->final && i < p->n_states; i++) {
        if (!a->final[i])
            continue;
        size_t n = (size_t)(a->batch * p->state[i].count) * 4;
        rnnc_status st = move(last + (CUdeviceptr)p->state[i].offset * 4, a->final[i], n,
                              a->device_pointers, false, s);
        if (st)
            return st;
    }
    return RNNC_OK;
}

static rnnc_status launch_all(rt_fused *m, CUdeviceptr x, CUdeviceptr y, int T, CUstream s)
{
    const cg_cuda_plan *p = &m->plan;
    CUdeviceptr xx = x, yy = y, st = m->st, hz = m->hz, fold = m->fold, wts = m->wts,
                xb = m->xb, part = m->part, bar = m->bar;
    void *args[] = {&xx, &yy, &st, &hz, &fold, &wts, &xb, &part, &bar, &T};
    /* the barrier's flags, or the tagged exchange words (a tag left by the
     * last forward must not match this one's) */
    rnnc_status r = p->xb_zero_floats > 0 ? rt_dev_zero(m->xb, (size_t)p->xb_zero_floats * 4, s)
                                          : rt_dev_zero(m->bar, bar_bytes(p), s);
    size_t TB = (size_t)T * (size_t)m->batch;
    for (int i = 0; r == RNNC_OK && i < p->n_launch; i++) {
        const cg_cuda_launch *l = &p->launch[i];
        unsigned grid[3] = {l->rows_per_block ? (unsigned)((TB + l->rows_per_block - 1) /
                                                           l->rows_per_block)
                                              : l->grid,
                            l->grid_y ? l->grid_y : 1, 1};
        unsigned block[3] = {l->threads, 1, 1};
        r = rt_launch(m->kern.fn[i], grid, block, l->smem, s, args, l->cooperative);
    }
    return r;
}

static rnnc_status check_call(rt_fused *m, const rnnc_forward_args *a)
{
    rnnc_status st = rt_check_forward(&m->spec, a);
    if (st)
        return st;
    if (a->lengths)
        return rnnc_fail(RNNC_ERR_UNSUPPORTED,
                         "fused backend: variable lengths are not supported yet (pad, or use cudnn)");
    if (a->training && m->spec.fn[0]->n_dropout > 0)
        return rnnc_fail(RNNC_ERR_UNSUPPORTED,
                         "fused backend: training with in-cell dropout is not supported yet");
    if (!m->bound)
        return rnnc_fail(RNNC_ERR_STATE, "fused backend: forward before weights were set");
    if (a->seq_len > (int64_t)1 << 30)
        return rnnc_fail(RNNC_ERR_UNSUPPORTED, "fused backend: T too large");
    return RNNC_OK;
}

rnnc_status rt_fused_forward(void *state, const rnnc_forward_args *a)
{
    rt_fused *m = state;
    rnnc_status st = check_call(m, a);
    CUstream s = a ? (CUstream)a->stream : NULL;
    if (st || (st = rt_cuda_context(m->spec.device)) || (st = rt_fused_prepare(m, a->batch)) ||
        (st = load_kernels(m)) || (st = ensure_scratch(m, a)))
        return st;
    const cg_cuda_plan *p = &m->plan;
    size_t TB = (size_t)a->seq_len * (size_t)a->batch;
    CUdeviceptr x = a->device_pointers ? (CUdeviceptr)(uintptr_t)a->x : m->dx;
    CUdeviceptr y = a->device_pointers ? (CUdeviceptr)(uintptr_t)a->y : m->dy;
    if (!a->device_pointers && (st = rt_dev_upload(x, a->x, TB * (size_t)p->in_cols * 4, s)))
        return st;
    if ((st = states_in(m, a, s)) || (st = launch_all(m, x, y, (int)a->seq_len, s)) ||
        (st = states_out(m, a, s)))
        return st;
    if (!a->device_pointers) {
        if ((st = rt_dev_download(a->y, y, TB * (size_t)p->out_cols * 4, s)))
            return st;
        return rt_dev_sync(s);
    }
    return RNNC_OK;
}

typedef struct timed_call {
    rt_fused *m;
    const rnnc_forward_args *a;
} timed_call;

static rnnc_status timed_forward(void *ctx, CUstream s)
{
    timed_call *c = ctx;
    rnnc_forward_args a = *c->a;
    a.stream = s;
    return rt_fused_forward(c->m, &a);
}

rnnc_status rt_fused_time_forward(void *state, const rnnc_forward_args *a, int warmup, int iters,
                                  double *median_ms)
{
    rt_fused *m = state;
    /* One full forward checks and stages everything.  With host buffers the
     * timed calls then run on the device copies, as cuDNN's timing does:
     * the figure is the computation, not PCIe traffic. */
    rnnc_status st = rt_fused_forward(m, a);
    if (st)
        return st;
    rnnc_forward_args dev = *a;
    if (!a->device_pointers) {
        dev.device_pointers = true;
        dev.x = (const void *)(uintptr_t)m->dx;
        dev.y = (void *)(uintptr_t)m->dy;
        dev.init = NULL; /* zero states: a memset, as cheap as a device copy */
        dev.final = NULL;
    }
    timed_call c = {m, &dev};
    return rt_time_ms(timed_forward, &c, (CUstream)a->stream, warmup, iters, median_ms);
}

void rt_fused_free(rt_fused *m)
{
    if (!m)
        return;
    if (m->wts || m->st) {
        CUdeviceptr *bufs[] = {&m->wts, &m->fold, &m->st, &m->hz, &m->xb,
                               &m->part, &m->bar, &m->dx, &m->dy, &m->dfin};
        if (rt_cuda_context(m->spec.device) == RNNC_OK)
            for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
                rt_dev_free(*bufs[i]);
    }
    free(m->src);
    ir_arena_destroy(m->arena);
    free(m);
}

#endif
