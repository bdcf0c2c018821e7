/*
 * fused_model.c: a whole model on the fused path.  Each (layer, direction)
 * is the hoisted GEMMs plus a persistent step kernel: layer l+1's GEMM
 * reads layer l's output, the two directions of a layer write their halves
 * of each row of it (as nn.LSTM concatenates them), the reverse direction
 * starts at each row's own end.  Where the kernels are sized for half the
 * SMs (rt_fused_share), the two directions of a layer run at once on two
 * streams, and the layers of a unidirectional model run as a wavefront of
 * time chunks: layer l+1 works on chunk c while layer l works on chunk
 * c+1, its GEMM for chunk c on a third stream.  Lengths are a per-row step
 * limit inside the step kernel.  Dropout between layers (training) is a
 * small kernel drawing the interpreter's Philox stream, so the masks are
 * the same bit for bit.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/fused/fused.h"

#ifdef RT_HAVE_CUDA_H

int64_t rt_fused_wts_at(const rt_fused *m, int p)
{
    int d = m->spec.dirs;
    return p <= d ? p * m->arena_wts[0] : d * m->arena_wts[0] + (p - d) * m->arena_wts[1];
}

int64_t rt_fused_fold_at(const rt_fused *m, int p)
{
    int d = m->spec.dirs;
    return p <= d ? p * m->arena_fold[0] : d * m->arena_fold[0] + (p - d) * m->arena_fold[1];
}

/* Philox4x32-10 (CG_CUDA_PHILOX, common/philox.c's stream); u = word *
 * 2^-32 in double, kept iff u >= p, so the decision is exactly the
 * interpreter's.  dst = the masked src (in place where they are one
 * buffer; dst += it with `add`, a gradient through the mask) over the n
 * elements whose time-major indices start at `base` (a chunk of time:
 * t0 * B * W): a thread draws one block of four words, the indices
 * 4q .. 4q + 3. */
static const char k_dropout_src[] =
    CG_CUDA_PHILOX
    "extern \"C\" __global__ void rnnc_dropout(float *dst, const float *src, long long n, int B, int T,\n"
    "    int W, int bf, unsigned long long seed, unsigned long long site, double p, float scale,\n"
    "    long long base, int add)\n{\n"
    "    const long long q = base / 4 + (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (q * 4 >= base + n) return;\n"
    "    unsigned w[4];\n"
    "    rnnc_philox((unsigned long long)q, seed, site, w);\n"
    "    for (int j = 0; j < 4; ++j) {\n"
    "        const long long i = q * 4 + j - base;\n"
    "        if (i < 0 || i >= n) continue;\n"
    "        const long long col = i % W, r = i / W, t = r / B, b = r % B;\n"
    "        const long long at = bf ? (b * T + t) * W + col : i;\n"
    "        const bool keep = (double)w[j] * (1.0 / 4294967296.0) >= p;\n"
    "        const float v = keep ? src[at] * scale : 0.f;\n"
    "        dst[at] = add ? dst[at] + v : v;\n"
    "    }\n}\n";

static rnnc_status dropout(rt_fused *m, int layer, CUdeviceptr buf, int64_t T, int64_t B,
                           CUstream s)
{
    return rt_fused_dropout(m, layer, buf, T, B, m->spec.batch_first, s);
}

rnnc_status rt_fused_mask(rt_fused *m, const rt_fused_mask_job *k, CUstream s)
{
    if (!m->drop_loaded) {
        const char *names[] = {"rnnc_dropout"};
        rt_kernel_req req = {.source = k_dropout_src, .name = "fused_dropout", .kernels = names,
                             .n_kernels = 1};
        rnnc_status st = rt_kernel_get(&req, m->spec.device, &m->drop);
        if (st)
            return st;
        m->drop_loaded = true;
    }
    CUdeviceptr dst = k->dst, src = k->src;
    long long n = (long long)(k->T * k->B * k->W), base = k->base;
    int Bi = (int)k->B, Ti = (int)k->T, W = (int)k->W, bf = k->batch_first, add = k->add;
    unsigned long long seed = m->spec.seed, site = k->site;
    double p = k->p;
    float scale = (float)cm_dropout_scale(p);
    void *args[] = {&dst, &src, &n, &Bi, &Ti, &W, &bf, &seed, &site, &p, &scale, &base, &add};
    long long blocks4 = (base + n + 3) / 4 - base / 4;
    unsigned grid[3] = {(unsigned)((blocks4 + 255) / 256), 1, 1}, block[3] = {256, 1, 1};
    return rt_launch(m->drop.fn[0], grid, block, 0, s, args, false);
}

rnnc_status rt_fused_dropout(rt_fused *m, int layer, CUdeviceptr buf, int64_t T, int64_t B,
                             bool batch_first, CUstream s)
{
    rt_fused_mask_job k = {.dst = buf, .src = buf, .T = T, .B = B,
                           .W = m->spec.dirs * m->spec.hout, .batch_first = batch_first,
                           .site = rt_dropout_site_layer(layer), .p = m->spec.dropout};
    return rt_fused_mask(m, &k, s);
}

/* Copies n bytes of fp32 states between the caller's buffer (host or
 * device) and device memory; a half model's caller holds n / 2 bytes. */
static rnnc_status move(rt_fused *m, CUdeviceptr dev, const void *user, size_t n, bool user_dev,
                        bool in, CUstream s)
{
    if (rt_dtype_is_half(m->spec.dtype))
        return rt_fused_states_half(m, dev, user, n / 4, user_dev, in, s);
    if (user_dev)
        return in ? rt_dev_copy(dev, (CUdeviceptr)(uintptr_t)user, n, s)
                  : rt_dev_copy((CUdeviceptr)(uintptr_t)user, dev, n, s);
    return in ? rt_dev_upload(dev, user, n, s) : rt_dev_download((void *)user, dev, n, s);
}

static const cg_cuda_plan *plan_of(const rt_fused *m, int p)
{
    return p >= m->spec.dirs ? &m->up.plan : &m->plan;
}

/* Pseudo-layer p's three copies of its states. */
static CUdeviceptr st_of(const rt_fused *m, int p)
{
    return m->st + (CUdeviceptr)(p * rt_fused_st_stride(m) * 4);
}

/* The third copy (FIN): the final states, and where a wavefront chunk
 * leaves them for the next. */
static CUdeviceptr fin_of(const rt_fused *m, int p)
{
    return st_of(m, p) + (CUdeviceptr)(2 * plan_of(m, p)->state_floats * 4);
}

/* ---------------------------------------------------------------- direct states */

/* Whether [a, a + na) and [b, b + nb) share a byte (0: no buffer). */
static bool overlap(uint64_t a, size_t na, uint64_t b, size_t nb)
{
    return a && b && a < b + nb && b < a + na;
}

static rnnc_status grow_io(rt_fused *m, int np)
{
    if (m->io_n >= np)
        return RNNC_OK;
    cg_cuda_io *io = realloc(m->io, (size_t)np * sizeof *io);
    if (!io)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused: out of memory for state buffers");
    m->io = io;
    m->io_n = np;
    return RNNC_OK;
}

/* Zeros for the initial states of a forward without init (zeroed once,
 * when the batch grows), so that no memset runs per forward. */
static rnnc_status zeros(rt_fused *m, size_t n)
{
    if (m->dzero_n >= n)
        return RNNC_OK;
    rnnc_status st = rt_fused_grow(&m->dzero, &m->dzero_n, n);
    if (st == RNNC_OK && (st = rt_dev_zero(m->dzero, n, NULL)) == RNNC_OK)
        st = rt_dev_sync(NULL);
    return st;
}

/* Pseudo-layer p's states straight from the caller's device buffers and
 * zeros into step 0, and out to the caller's buffers at the end, when the
 * layer runs once over the whole sequence (no wavefront) and the buffers
 * are device memory aligned to 16 bytes (the kernel stages states with
 * 16-byte loads).  A final state that overlaps an initial one at T = 1
 * (or with lengths: a batch group may stop after one step) still goes
 * through the third copy: blocks read step 0's states while others write
 * the final ones.  What io leaves 0 is copied as before. */
static rnnc_status state_io(rt_fused *m, const rnnc_forward_args *a, int p, cg_cuda_io *io)
{
    const cg_cuda_plan *pl = plan_of(m, p);
    int np = m->spec.layers * m->spec.dirs;
    memset(io, 0, sizeof *io);
    /* a half model's caller holds 16-bit states: they go through move() */
    if (!a->device_pointers || pl->n_states > CG_CUDA_IO || rt_dtype_is_half(m->spec.dtype))
        return RNNC_OK;
    size_t most = 0;
    for (int i = 0; i < pl->n_states; i++) {
        size_t n = (size_t)(a->batch * pl->state[i].count) * 4;
        most = n > most ? n : most;
        const void *in = a->init ? a->init[i] : NULL;
        void *out = a->final ? a->final[i] : NULL;
        uint64_t ip = in ? (uint64_t)(uintptr_t)in + (uint64_t)p * n : 0;
        uint64_t op = out ? (uint64_t)(uintptr_t)out + (uint64_t)p * n : 0;
        io->in[i] = in ? (ip % 16 ? 0 : ip) : 1; /* 1: zeros, below */
        io->out[i] = op % 16 ? 0 : op;
    }
    /* against the whole init buffers of every pseudo-layer (conservative);
     * with lengths a batch group may run a single step too */
    bool one = a->seq_len == 1 || a->lengths;
    for (int i = 0; i < pl->n_states && one && a->init; i++)
        for (int k = 0; k < pl->n_states; k++) {
            size_t n = (size_t)(a->batch * pl->state[i].count) * 4,
                   nk = (size_t)(np * a->batch * pl->state[k].count) * 4;
            if (overlap(io->out[i], n, (uint64_t)(uintptr_t)a->init[k], nk))
                io->out[i] = 0;
        }
    rnnc_status st = zeros(m, most);
    for (int i = 0; st == RNNC_OK && i < pl->n_states; i++)
        if (io->in[i] == 1)
            io->in[i] = (uint64_t)m->dzero;
    if (st)
        memset(io, 0, sizeof *io);
    return st;
}

/* Pseudo-layer p's initial states into copy 0: init[k] is [L*D, B, n_k];
 * those io reads directly are left alone. */
static rnnc_status states_in(rt_fused *m, const rnnc_forward_args *a, int p, const cg_cuda_io *io,
                             CUstream s)
{
    const cg_cuda_plan *pl = plan_of(m, p);
    for (int i = 0; i < pl->n_states; i++) {
        if (i < CG_CUDA_IO && io->in[i])
            continue;
        CUdeviceptr dst = st_of(m, p) + (CUdeviceptr)pl->state[i].offset * 4;
        size_t n = (size_t)(a->batch * pl->state[i].count) * 4;
        const void *src = a->init ? a->init[i] : NULL;
        size_t at = (size_t)p * (size_t)(a->batch * pl->state[i].count) * rt_fused_esz(m);
        rnnc_status st = src ? move(m, dst, (const char *)src + at, n, a->device_pointers, true, s)
                             : rt_dev_zero(dst, n, s);
        if (st)
            return st;
    }
    return RNNC_OK;
}

/* Pseudo-layer p's final states, from the third copy (FIN); those io
 * wrote directly are left alone. */
static rnnc_status states_out(rt_fused *m, const rnnc_forward_args *a, int p,
                              const cg_cuda_io *io, CUstream s)
{
    const cg_cuda_plan *pl = plan_of(m, p);
    CUdeviceptr fin = fin_of(m, p);
    for (int i = 0; a->final && i < pl->n_states; i++) {
        if (!a->final[i] || (i < CG_CUDA_IO && io->out[i]))
            continue;
        size_t n = (size_t)(a->batch * pl->state[i].count) * 4;
        size_t at = (size_t)p * (size_t)(a->batch * pl->state[i].count) * rt_fused_esz(m);
        rnnc_status st = move(m, fin + (CUdeviceptr)pl->state[i].offset * 4,
                              (char *)a->final[i] + at, n, a->device_pointers, false, s);
        if (st)
            return st;
    }
    return RNNC_OK;
}

/* ---------------------------------------------------------------- lengths */

/* Steps per chunk of the wavefront: RNNC_FUSED_CHUNK, else about an eighth
 * of the sequence, at least 8, and at least 25 from 50 steps on: each
 * chunk relaunches a GEMM and the step kernels, tens of microseconds that
 * 13-step chunks at T = 100 did not amortise (H100, 4-layer LSTM, I = H =
 * 512: B = 1 0.74-0.77 -> 0.56-0.57 ms, B = 16 2.04 -> 1.70, B = 64
 * 4.29-4.30 -> 4.15-4.16; B = 8 1.40 -> 1.46, the one loss measured;
 * bench/results/h100/chunk25/). */
static int chunk_steps(int64_t T)
{
    long v = cm_env_long("RNNC_FUSED_CHUNK", 0);
    if (v <= 0) {
        long floor = T >= 50 ? 25 : 8;
        v = (long)((T + 7) / 8);
        v = v < floor ? floor : v;
    }
    return (int)(v < T ? v : T);
}

/* Where the chunks start: chunk c covers steps cut[c] .. cut[c+1] - 1.
 * RNNC_FUSED_CHUNKS="a,b,..." gives their lengths (the last repeated until
 * T is covered), for measuring uneven cuts; else chunk_steps(T) each.
 * Writes cut[] when it is not NULL; returns the number of chunks. */
static int cut_chunks(int64_t T, int *cut)
{
    const char *list = getenv("RNNC_FUSED_CHUNKS");
    long len = chunk_steps(T);
    int n = 0;
    for (int64_t t = 0; t < T; n++) {
        if (list && *list) {
            char *end;
            long v = strtol(list, &end, 10);
            len = v > 0 ? v : len;
            list = *end == ',' ? end + 1 : end;
        }
        if (cut)
            cut[n] = (int)t;
        t += len;
    }
    if (cut)
        cut[n] = (int)T;
    return n;
}

/* m->cut for the chunks cut_chunks counted. */
static rnnc_status plan_cuts(rt_fused *m, int64_t T, int chunks)
{
    if (m->cut_n < chunks + 1) {
        int *c = realloc(m->cut, (size_t)(chunks + 1) * sizeof *c);
        if (!c)
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused: out of memory for chunks");
        m->cut = c;
        m->cut_n = chunks + 1;
    }
    cut_chunks(T, m->cut);
    return RNNC_OK;
}

/* The lengths, then (chunks > 0) each chunk's: chunk c (m->cut) sees a
 * row as min(max(len - cut[c], 0), its steps) long, so it starts where the last chunk
 * stopped and a group whose rows have ended does nothing (its states stay
 * in FIN from the chunk before). */
static rnnc_status upload_lengths(rt_fused *m, const rnnc_forward_args *a, int chunks,
                                  CUstream s)
{
    m->dlen_used = a->lengths != NULL;
    if (!a->lengths)
        return RNNC_OK;
    int64_t B = a->batch, n = B * (1 + chunks);
    if (m->hlen_n < n) {
        int *h = realloc(m->hlen, (size_t)n * sizeof *h);
        if (!h)
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused: out of memory for lengths");
        m->hlen = h;
        m->hlen_n = n;
    }
    for (int64_t b = 0; b < B; b++) {
        m->hlen[b] = (int)a->lengths[b];
        for (int c = 0; c < chunks; c++) {
            int64_t r = a->lengths[b] - m->cut[c], C = m->cut[c + 1] - m->cut[c];
            m->hlen[(1 + c) * B + b] = (int)(r < 0 ? 0 : r > C ? C : r);
        }
    }
    rnnc_status st;
    if ((st = rt_fused_grow(&m->dlen, &m->dlen_n, (size_t)n * sizeof(int))) ||
        (st = rt_dev_upload(m->dlen, m->hlen, (size_t)n * sizeof(int), s)))
        return st;
    /* the upload reads hlen asynchronously; the next forward may rewrite it */
    return rt_dev_sync(s);
}

static CUdeviceptr len_of(const rt_fused *m, int64_t B, int chunk)
{
    return m->dlen_used ? m->dlen + (CUdeviceptr)((1 + chunk) * B * 4) : 0;
}

/* ---------------------------------------------------------------- layers one by one */

static rt_fused_job whole_job(const rt_fused *m, const rnnc_forward_args *a, int l, int d,
                              CUdeviceptr in, CUdeviceptr out, int slot)
{
    int p = l * m->spec.dirs + d;
    return (rt_fused_job){.k = l > 0, .p = p, .T = (int)a->seq_len, .slot = slot, .rev = d == 1,
                          .x = in, .y = out + (CUdeviceptr)((size_t)(d * m->spec.hout) * rt_fused_esz(m)),
                          .st = st_of(m, p), .hz = m->slot[slot].hz,
                          .len = len_of(m, a->batch, -1), .io = m->io[p],
                          .train = a->training};
}

/* One layer: its directions one after the other, or (share > 1, two
 * directions) at once on their streams, each with its own scratch
 * (streams of one priority, as neither direction waits for the other). */
static rnnc_status run_layer(rt_fused *m, const rnnc_forward_args *a, int l, CUdeviceptr in,
                             CUdeviceptr out, CUstream s)
{
    size_t TB = (size_t)a->seq_len * (size_t)a->batch;
    bool both = m->share > 1 && m->spec.dirs == 2;
    rnnc_status st;
    /* a group of rows that has ended writes nothing more: its zeros come from here */
    if (a->lengths &&
        (st = rt_dev_zero(out, TB * (size_t)(m->spec.dirs * m->spec.hout) * rt_fused_esz(m), s)))
        return st;
    if (both && (st = rt_fused_fork(m, s)))
        return st;
    for (int d = 0; d < m->spec.dirs; d++) {
        CUstream sd = both ? rt_fused_dir_stream(m, d) : s;
        rt_fused_job j = whole_job(m, a, l, d, in, out, both ? d : 0);
        if ((st = rt_fused_launch(m, &j, RT_FUSED_HOIST | RT_FUSED_STEP, sd)))
            return st;
    }
    return both ? rt_fused_join(m, s) : RNNC_OK;
}

static rnnc_status run_layers(rt_fused *m, const rnnc_forward_args *a, CUdeviceptr x,
                              CUdeviceptr y, CUstream s)
{
    CUdeviceptr in = x;
    rnnc_status st = RNNC_OK;
    for (int l = 0; st == RNNC_OK && l < m->spec.layers; l++) {
        CUdeviceptr out = l == m->spec.layers - 1 ? y : m->lay[l & 1];
        st = run_layer(m, a, l, in, out, s);
        if (st == RNNC_OK && a->training && m->spec.dropout > 0 && l + 1 < m->spec.layers)
            st = dropout(m, l, out, a->seq_len, a->batch, s);
        in = out;
    }
    return st;
}

/* ---------------------------------------------------------------- the wavefront */

typedef struct wave {
    rt_fused *m;
    const rnnc_forward_args *a;
    CUstream step[2], gemm[2];
    int chunks;
    int64_t W, B; /* elements per row of a layer's output; batch */
} wave;

static CUevent wave_ev(const wave *w, int kind, int l, int c)
{
    return w->m->ev[5 + (kind * w->m->spec.layers + l) * w->chunks + c];
}

/* Chunk c > 0 reads its initial states from FIN, where chunk c - 1 left
 * them, when every row runs at least two steps in it: blocks read step 0's
 * states before the batch group's first barrier and write FIN at its last
 * step, after it.  With lengths a group may run one step (or none), so
 * those chunks start from copy 0, copied from FIN. */
static bool reads_fin(const wave *w, int l, int c)
{
    const rt_fused *m = w->m;
    const cg_cuda_plan *pl = plan_of(m, l);
    if (c == 0 || w->a->lengths || pl->n_states > CG_CUDA_IO || m->cut[c + 1] - m->cut[c] < 2)
        return false;
    /* the kernel stages states with 16-byte loads */
    CUdeviceptr fin = fin_of(m, l);
    for (int i = 0; i < pl->n_states; i++)
        if ((fin + (CUdeviceptr)pl->state[i].offset * 4) % 16)
            return false;
    return true;
}

/* What chunk c of layer l reads and writes directly: chunk 0 the caller's
 * initial states where state_io found them usable, the last chunk the
 * caller's final ones (never with lengths: a group that ended in an
 * earlier chunk left its final states in FIN), chunk c > 0 FIN. */
static cg_cuda_io chunk_io(const wave *w, int l, int c)
{
    const rt_fused *m = w->m;
    const cg_cuda_plan *pl = plan_of(m, l);
    CUdeviceptr fin = fin_of(m, l);
    bool in_place = reads_fin(w, l, c);
    cg_cuda_io io = {.in = {0}};
    for (int i = 0; i < pl->n_states && i < CG_CUDA_IO; i++) {
        io.in[i] = c == 0     ? m->io[l].in[i]
                   : in_place ? (uint64_t)(fin + (CUdeviceptr)pl->state[i].offset * 4)
                              : 0;
        io.out[i] = c == w->chunks - 1 ? m->io[l].out[i] : 0;
    }
    return io;
}

/* Layer l, chunk c: its GEMM on the GEMM stream once layer l-1 has
 * finished the chunk, then the step kernel over the chunk from the states
 * the last chunk left (FIN, copied to copy 0).  The GEMM runs per chunk in
 * layer 0 too: hoisted values lie in planes of T*B rows, so the GEMM and
 * the step kernel must see the same T. */
static rnnc_status wave_chunk(const wave *w, int l, int c, CUdeviceptr in, CUdeviceptr out)
{
    rt_fused *m = w->m;
    const cg_cuda_plan *pl = plan_of(m, l);
    int t0 = m->cut[c], Tc = m->cut[c + 1] - t0;
    size_t rows = (size_t)t0 * (size_t)w->B, esz = rt_fused_esz(m);
    CUstream s = w->step[l & 1], g = w->gemm[l & 1];
    rt_fused_job j = {.k = l > 0, .p = l, .T = Tc, .slot = l & 1, .rev = false,
                      .x = in + (CUdeviceptr)(rows * (size_t)pl->in_cols * esz),
                      .y = out + (CUdeviceptr)(rows * (size_t)w->W * esz), .st = st_of(m, l),
                      .hz = m->slot[l & 1].hz + (CUdeviceptr)(rows * (size_t)pl->hz_cols * 4),
                      .len = len_of(m, w->B, c), .io = chunk_io(w, l, c),
                      .train = w->a->training, .t0 = t0};
    rnnc_status st;
    if ((l > 0 && (st = rt_cuda_check(rt_cu()->StreamWaitEvent(g, wave_ev(w, 0, l - 1, c), 0),
                                      "cuStreamWaitEvent"))) ||
        (st = rt_fused_launch(m, &j, RT_FUSED_HOIST, g)) ||
        (st = rt_fused_after(s, wave_ev(w, 1, l, c), g)))
        return st;
    if (w->a->lengths &&
        (st = rt_dev_zero(j.y, (size_t)Tc * (size_t)w->B * (size_t)w->W * esz, s)))
        return st;
    if ((st = rt_fused_launch(m, &j, RT_FUSED_STEP, s)))
        return st;
    if (c + 1 < w->chunks && !reads_fin(w, l, c + 1) &&
        (st = rt_dev_copy(j.st, fin_of(m, l), (size_t)pl->state_floats * 4, s)))
        return st;
    return rt_cuda_check(rt_cu()->EventRecord(wave_ev(w, 0, l, c), s), "cuEventRecord");
}

/* Layers in order, each on its parity's streams, chunks in order: layer l
 * waits for layer l-1 chunk by chunk, so two layers run at once. */
static rnnc_status run_wave(rt_fused *m, const rnnc_forward_args *a, CUdeviceptr x,
                            CUdeviceptr y, CUstream s, int chunks)
{
    wave w = {.m = m, .a = a, .step = {m->aux[3], m->aux[0]}, .gemm = {m->aux[1], m->aux[2]},
              .chunks = chunks, .W = m->spec.hout, .B = a->batch};
    rnnc_status st = RNNC_OK;
    for (int i = 0; i < 4 && st == RNNC_OK; i++)
        st = rt_fused_after(m->aux[i], m->ev[0], s);
    CUdeviceptr in = x;
    for (int l = 0; st == RNNC_OK && l < m->spec.layers; l++) {
        CUdeviceptr out = l == m->spec.layers - 1 ? y : m->lay[l & 1];
        for (int c = 0; st == RNNC_OK && c < chunks; c++)
            st = wave_chunk(&w, l, c, in, out);
        in = out;
    }
    for (int i = 0; i < 4 && st == RNNC_OK; i++)
        st = rt_fused_after(s, m->ev[1 + i], m->aux[i]);
    return st;
}

/* The wavefront needs time-major rows (a chunk is a block of rows), one
 * direction and no dropout between layers; with one chunk (a single step,
 * a short sequence) no two layers could overlap, and the layers one by
 * one read and write the caller's states directly. */
static bool wave_fits(const rt_fused *m, const rnnc_forward_args *a, int chunks)
{
    return m->share > 1 && m->spec.dirs == 1 && m->spec.layers > 1 && !m->spec.batch_first &&
           !(a->training && m->spec.dropout > 0) && chunks > 1;
}

rnnc_status rt_fused_run_model(rt_fused *m, const rnnc_forward_args *a, CUdeviceptr x,
                               CUdeviceptr y, CUstream s)
{
    int chunks = cut_chunks(a->seq_len, NULL), np = m->spec.layers * m->spec.dirs;
    bool wf = wave_fits(m, a, chunks);
    rnnc_status st = wf ? plan_cuts(m, a->seq_len, chunks) : RNNC_OK;
    chunks = wf ? chunks : 0;
    if (st == RNNC_OK)
        st = upload_lengths(m, a, chunks, s);
    if (st == RNNC_OK)
        st = rt_fused_streams(m, m->share > 1, 5 + 2 * m->spec.layers * chunks);
    if (st == RNNC_OK)
        st = grow_io(m, np);
    /* the wavefront's first chunk reads these, its last writes them (not
     * with lengths: chunk_io) */
    for (int p = 0; st == RNNC_OK && p < np; p++) {
        st = state_io(m, a, p, &m->io[p]);
        if (wf && a->lengths)
            memset(m->io[p].out, 0, sizeof m->io[p].out);
    }
    for (int p = 0; st == RNNC_OK && p < np; p++)
        st = states_in(m, a, p, &m->io[p], s);
    if (st == RNNC_OK)
        st = wf ? run_wave(m, a, x, y, s, chunks) : run_layers(m, a, x, y, s);
    for (int p = 0; st == RNNC_OK && p < np; p++)
        st = states_out(m, a, p, &m->io[p], s);
    return st;
}

#endif /* RT_HAVE_CUDA_H */
