/*
 * fused_model.c: a whole model on the fused path.  The (layer, direction)
 * pairs run one after another, each as the hoisted GEMMs plus one
 * persistent step kernel: layer l+1's GEMM reads layer l's output, the two
 * directions of a layer write their halves of each row of it (as nn.LSTM
 * concatenates them), the reverse direction starts at each row's own end.
 * Lengths are a per-row step limit inside the step kernel.  Dropout
 * between layers (training) is a small kernel drawing the interpreter's
 * Philox stream, so the masks are the same bit for bit.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

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

/* Philox4x32-10 as runtime/philox.c; u = word * 2^-32 in double, kept iff
 * u >= p, so the decision is exactly the interpreter's. */
static const char k_dropout_src[] =
    "#define M0 0xD2511F53u\n#define M1 0xCD9E8D57u\n#define W0 0x9E3779B9u\n#define W1 0xBB67AE85u\n"
    "extern \"C\" __global__ void rnnc_dropout(float *buf, long long n, int B, int T, int W, int bf,\n"
    "    unsigned long long seed, unsigned long long site, double p, float scale)\n{\n"
    "    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (q * 4 >= n) return;\n"
    "    unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);\n"
    "    unsigned c0 = (unsigned)q, c1 = (unsigned)((unsigned long long)q >> 32), c2 = (unsigned)site,\n"
    "             c3 = (unsigned)(site >> 32);\n"
    "    for (int r = 0; r < 10; ++r) {\n"
    "        if (r > 0) { k0 += W0; k1 += W1; }\n"
    "        const unsigned long long p0 = (unsigned long long)M0 * c0, p1 = (unsigned long long)M1 * c2;\n"
    "        const unsigned h0 = (unsigned)(p0 >> 32), l0 = (unsigned)p0, h1 = (unsigned)(p1 >> 32),\n"
    "                       l1 = (unsigned)p1;\n"
    "        const unsigned o1 = c1, o3 = c3;\n"
    "        c0 = h1 ^ o1 ^ k0; c1 = l1; c2 = h0 ^ o3 ^ k1; c3 = l0;\n"
    "    }\n"
    "    const unsigned w[4] = {c0, c1, c2, c3};\n"
    "    for (int j = 0; j < 4; ++j) {\n"
    "        const long long i = q * 4 + j;\n"
    "        if (i >= n) return;\n"
    "        const long long col = i % W, r = i / W, t = r / B, b = r % B;\n"
    "        const long long at = bf ? (b * T + t) * W + col : i;\n"
    "        const bool keep = (double)w[j] * (1.0 / 4294967296.0) >= p;\n"
    "        buf[at] = keep ? buf[at] * scale : 0.f;\n"
    "    }\n}\n";

static rnnc_status dropout(rt_fused *m, int layer, CUdeviceptr buf, int64_t T, int64_t B,
                           CUstream s)
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
    long long n = (long long)(T * B * m->spec.dirs * m->spec.hout);
    int Bi = (int)B, Ti = (int)T, W = (int)(m->spec.dirs * m->spec.hout), bf = m->spec.batch_first;
    unsigned long long seed = m->spec.seed, site = rt_dropout_site_layer(layer);
    double p = m->spec.dropout;
    float scale = (float)rt_dropout_scale(p);
    void *args[] = {&buf, &n, &Bi, &Ti, &W, &bf, &seed, &site, &p, &scale};
    unsigned grid[3] = {(unsigned)((n / 4 + 256) / 256), 1, 1}, block[3] = {256, 1, 1};
    return rt_launch(m->drop.fn[0], grid, block, 0, s, args, false);
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

/* Pseudo-layer p's initial states into copy 0 of st: init[k] is [L*D, B, n_k]. */
static rnnc_status states_in(rt_fused *m, const cg_cuda_plan *pl, const rnnc_forward_args *a,
                             int p, CUstream s)
{
    for (int i = 0; i < pl->n_states; i++) {
        CUdeviceptr dst = m->st + (CUdeviceptr)pl->state[i].offset * 4;
        size_t n = (size_t)(a->batch * pl->state[i].count) * 4;
        const void *src = a->init ? a->init[i] : NULL;
        rnnc_status st = src ? move(dst, (const char *)src + (size_t)p * n, n, a->device_pointers,
                                    true, s)
                             : rt_dev_zero(dst, n, s);
        if (st)
            return st;
    }
    return RNNC_OK;
}

/* Pseudo-layer p's final states, from the third copy of st. */
static rnnc_status states_out(rt_fused *m, const cg_cuda_plan *pl, const rnnc_forward_args *a,
                              int p, CUstream s)
{
    CUdeviceptr fin = m->st + (CUdeviceptr)(2 * pl->state_floats * 4);
    for (int i = 0; a->final && i < pl->n_states; i++) {
        if (!a->final[i])
            continue;
        size_t n = (size_t)(a->batch * pl->state[i].count) * 4;
        rnnc_status st = move(fin + (CUdeviceptr)pl->state[i].offset * 4,
                              (char *)a->final[i] + (size_t)p * n, n, a->device_pointers, false, s);
        if (st)
            return st;
    }
    return RNNC_OK;
}

static rnnc_status upload_lengths(rt_fused *m, const rnnc_forward_args *a, CUstream s)
{
    m->dlen_used = a->lengths != NULL;
    if (!a->lengths)
        return RNNC_OK;
    if (m->hlen_n < a->batch) {
        int *h = realloc(m->hlen, (size_t)a->batch * sizeof *h);
        if (!h)
            return rnnc_fail(RNNC_ERR_OUT_OF_MEMORY, "fused: out of memory for lengths");
        m->hlen = h;
        m->hlen_n = a->batch;
    }
    for (int64_t b = 0; b < a->batch; b++)
        m->hlen[b] = (int)a->lengths[b];
    rnnc_status st = rt_dev_upload(m->dlen, m->hlen, (size_t)a->batch * sizeof(int), s);
    /* the upload reads hlen asynchronously; the next forward may rewrite it */
    return st ? st : rt_dev_sync(s);
}

static rnnc_status run_layer(rt_fused *m, const rnnc_forward_args *a, int l, CUdeviceptr in,
                             CUdeviceptr out, CUstream s)
{
    int k = l > 0;
    const cg_cuda_plan *pl = k ? &m->up.plan : &m->plan;
    size_t TB = (size_t)a->seq_len * (size_t)a->batch;
    rnnc_status st;
    /* a group of rows that has ended writes nothing more: its zeros come from here */
    if (a->lengths &&
        (st = rt_dev_zero(out, TB * (size_t)(m->spec.dirs * m->spec.hout) * 4, s)))
        return st;
    for (int d = 0; d < m->spec.dirs; d++) {
        int p = l * m->spec.dirs + d;
        CUdeviceptr y = out + (CUdeviceptr)(d * m->spec.hout * 4);
        if ((st = states_in(m, pl, a, p, s)) ||
            (st = rt_fused_launch(m, k, in, y, p, (int)a->seq_len, d == 1, s)) ||
            (st = states_out(m, pl, a, p, s)))
            return st;
    }
    return RNNC_OK;
}

rnnc_status rt_fused_run_model(rt_fused *m, const rnnc_forward_args *a, CUdeviceptr x,
                               CUdeviceptr y, CUstream s)
{
    rnnc_status st = upload_lengths(m, a, s);
    CUdeviceptr in = x;
    for (int l = 0; st == RNNC_OK && l < m->spec.layers; l++) {
        CUdeviceptr out = l == m->spec.layers - 1 ? y : m->lay[l & 1];
        st = run_layer(m, a, l, in, out, s);
        if (st == RNNC_OK && a->training && m->spec.dropout > 0 && l + 1 < m->spec.layers)
            st = dropout(m, l, out, a->seq_len, a->batch, s);
        in = out;
    }
    return st;
}

#endif /* RT_HAVE_CUDA_H */
