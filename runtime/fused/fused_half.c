/*
 * fused_half.c: the states of a half-precision model (F16, BF16) on the
 * fused path.  The kernels keep states in fp32 (codegen/cuda/cuda_half.c);
 * the caller's initial and final states are in the model's dtype, so they
 * are converted on the device on the caller's stream: host buffers go
 * through a 16-bit staging copy (hst), device buffers are read and written
 * directly.  Rounding is to nearest even, as the host backends round.
 */
#include <string.h>

#include "runtime/fused/fused.h"

#ifdef RT_HAVE_CUDA_H

static const char k_cvt_src[] =
    "extern \"C\" __global__ void rnnc_h2f(const unsigned short *h, float *f, long long n, int bf)\n"
    "{\n"
    "    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    const unsigned short v = h[i];\n"
    "    float r;\n"
    "    if (bf) r = __uint_as_float((unsigned)v << 16);\n"
    "    else asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(r) : \"h\"(v));\n"
    "    f[i] = r;\n"
    "}\n"
    "extern \"C\" __global__ void rnnc_f2h(const float *f, unsigned short *h, long long n, int bf)\n"
    "{\n"
    "    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    unsigned short r;\n"
    "    if (bf) {\n"
    "        unsigned u = __float_as_uint(f[i]);\n"
    "        if ((u & 0x7fffffffu) > 0x7f800000u) r = (unsigned short)((u >> 16) | 0x40u);\n"
    "        else { u += 0x7fffu + ((u >> 16) & 1u); r = (unsigned short)(u >> 16); }\n"
    "    } else {\n"
    "        asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(f[i]));\n"
    "    }\n"
    "    h[i] = r;\n"
    "}\n";

static rnnc_status load_cvt(rt_fused *m)
{
    if (m->cvt_loaded)
        return RNNC_OK;
    const char *names[] = {"rnnc_h2f", "rnnc_f2h"};
    rt_kernel_req req = {.source = k_cvt_src, .name = "fused_half_states", .kernels = names,
                         .n_kernels = 2};
    rnnc_status st = rt_kernel_get(&req, m->spec.device, &m->cvt);
    if (st == RNNC_OK)
        m->cvt_loaded = true;
    return st;
}

rnnc_status rt_fused_convert(rt_fused *m, bool in, CUdeviceptr src, CUdeviceptr dst, size_t n,
                             CUstream s)
{
    rnnc_status st = load_cvt(m);
    if (st)
        return st;
    long long nn = (long long)n;
    int bf = m->spec.dtype == RNNC_BF16;
    void *args[] = {&src, &dst, &nn, &bf};
    unsigned grid[3] = {(unsigned)((n + 255) / 256), 1, 1}, block[3] = {256, 1, 1};
    return n == 0 ? RNNC_OK : rt_launch(m->cvt.fn[in ? 0 : 1], grid, block, 0, s, args, false);
}

rnnc_status rt_fused_states_half(rt_fused *m, CUdeviceptr dev, const void *user, size_t n,
                                 bool user_dev, bool in, CUstream s)
{
    rnnc_status st = RNNC_OK;
    CUdeviceptr u = (CUdeviceptr)(uintptr_t)user;
    if (!user_dev) {
        /* one size for every state (half of the fp32 states of all
         * pseudo-layers): the buffer is never reallocated while a copy of
         * an earlier state may still read it */
        size_t need = m->st_n / 2 > n * 2 ? m->st_n / 2 : n * 2;
        if ((st = rt_fused_grow(&m->hst, &m->hst_n, need)))
            return st;
        u = m->hst;
    }
    if (in)
        return (!user_dev && (st = rt_dev_upload(u, user, n * 2, s)))
                   ? st
                   : rt_fused_convert(m, true, u, dev, n, s);
    if ((st = rt_fused_convert(m, false, dev, u, n, s)))
        return st;
    return user_dev ? RNNC_OK : rt_dev_download((void *)user, u, n * 2, s);
}

#endif /* RT_HAVE_CUDA_H */
