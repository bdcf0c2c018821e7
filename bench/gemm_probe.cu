/*
 * gemm_probe.cu: the fp32 FFMA hoisted GEMM tile of cuda_hoist.c (128 x
 * 128 outputs a block of 256 threads, 8 x 8 a thread, K slices through
 * registers into two shared buffers stored transposed, the fold added in
 * the epilogue) written once as a template, so that the depth of its K
 * slices (BK) and how many slices ahead its global loads run (AHEAD) can
 * be timed against each other on the shapes of issue 9's models without
 * touching the generator.  The ncu profile of the generated tile
 * (bench/results/h100/gemm-ffma/) had a fifth of its samples waiting for a
 * slice's global loads at the transposing store.
 *
 * Build and run (GPU machine): nvcc -O3 -arch=sm_90 -o gemm_probe
 * bench/gemm_probe.cu && ./gemm_probe.  Each line: the shape, the variant,
 * the median of 30 launches after 5 (CUDA events), TFLOP/s, and whether
 * its output equals the first variant's bit for bit (the k order of every
 * sum is the same in all of them).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#include "probe_check.h"

template <int BK, int AHEAD>
__global__ void __launch_bounds__(256, 2)
    gemm(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ fold,
         float *hz, int M, int N, int K)
{
    constexpr int K4 = BK / 4, LPT = 128 * K4 / 256;
    __shared__ __align__(16) float As[2][BK][132];
    __shared__ __align__(16) float Ws[2][BK][132];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int m0 = blockIdx.x * 128, n0 = blockIdx.y * 128, nk = K / BK;
    float c[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) c[i][j] = 0.f;
    float4 ra[AHEAD][LPT], rw[AHEAD][LPT];
    auto load = [&](int s, int k0) {
#pragma unroll
        for (int q = 0; q < LPT; ++q) {
            const int idx = tid + q * 256, lr = idx / K4, lk = (idx % K4) * 4;
            ra[s][q] = m0 + lr < M ? __ldg((const float4 *)(x + (size_t)(m0 + lr) * K + k0 + lk))
                                   : make_float4(0.f, 0.f, 0.f, 0.f);
            rw[s][q] = n0 + lr < N ? __ldg((const float4 *)(w + (size_t)(n0 + lr) * K + k0 + lk))
                                   : make_float4(0.f, 0.f, 0.f, 0.f);
        }
    };
    auto store = [&](int buf, int s) {
#pragma unroll
        for (int q = 0; q < LPT; ++q) {
            const int idx = tid + q * 256, lr = idx / K4, lk = (idx % K4) * 4;
            As[buf][lk][lr] = ra[s][q].x, As[buf][lk + 1][lr] = ra[s][q].y;
            As[buf][lk + 2][lr] = ra[s][q].z, As[buf][lk + 3][lr] = ra[s][q].w;
            Ws[buf][lk][lr] = rw[s][q].x, Ws[buf][lk + 1][lr] = rw[s][q].y;
            Ws[buf][lk + 2][lr] = rw[s][q].z, Ws[buf][lk + 3][lr] = rw[s][q].w;
        }
    };
#pragma unroll
    for (int s = 0; s < AHEAD; ++s)
        if (s < nk)
            load(s, s * BK);
    store(0, 0);
    __syncthreads();
    for (int it = 0; it < nk; it += AHEAD) {
#pragma unroll
        for (int s = 0; s < AHEAD; ++s) {
            const int i = it + s, cb = i & 1;
            if (i >= nk)
                break;
            /* slice i sat in slot s and is in shared memory: the slot takes i + AHEAD */
            if (i + AHEAD < nk)
                load(s, (i + AHEAD) * BK);
#pragma unroll
            for (int kk = 0; kk < BK; ++kk) {
                const float4 a0 = *(const float4 *)&As[cb][kk][ty * 4];
                const float4 a1 = *(const float4 *)&As[cb][kk][64 + ty * 4];
                const float4 b0 = *(const float4 *)&Ws[cb][kk][tx * 4];
                const float4 b1 = *(const float4 *)&Ws[cb][kk][64 + tx * 4];
                const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
                const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
                for (int r = 0; r < 8; ++r)
#pragma unroll
                    for (int q = 0; q < 8; ++q) c[r][q] = fmaf(a[r], b[q], c[r][q]);
            }
            if (i + 1 < nk)
                store(cb ^ 1, (s + 1) % AHEAD);
            __syncthreads();
        }
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int m = m0 + (i / 4) * 64 + ty * 4 + i % 4;
        if (m >= M)
            continue;
#pragma unroll
        for (int jv = 0; jv < 2; ++jv) {
            const int col0 = n0 + jv * 64 + tx * 4;
            if (col0 >= N)
                continue;
            float4 v = make_float4(c[i][jv * 4] + fold[col0], c[i][jv * 4 + 1] + fold[col0 + 1],
                                   c[i][jv * 4 + 2] + fold[col0 + 2], c[i][jv * 4 + 3] + fold[col0 + 3]);
            *(float4 *)(hz + (size_t)m * N + col0) = v;
        }
    }
}

typedef void (*kern)(const float *, const float *, const float *, float *, int, int, int);

struct variant {
    const char *name;
    kern k;
    int bk;
};

static float time_one(const variant &v, const float *x, const float *w, const float *f, float *hz,
                      int M, int N, int K)
{
    dim3 grid((M + 127) / 128, (N + 127) / 128);
    return (float)median_ms([&] { v.k<<<grid, 256>>>(x, w, f, hz, M, N, K); }, 5, 30);
}

int main()
{
    const variant vs[] = {{"bk8 ahead1 (the generator's)", gemm<8, 1>, 8},
                          {"bk8 ahead2", gemm<8, 2>, 8},
                          {"bk8 ahead3", gemm<8, 3>, 8},
                          {"bk16 ahead1", gemm<16, 1>, 16},
                          {"bk16 ahead2", gemm<16, 2>, 16},
                          {"bk8 ahead4", gemm<8, 4>, 8}};
    const int shapes[][3] = {{6400, 2048, 512}, {1600, 2048, 512}, {6400, 2048, 1024},
                             {12800, 2048, 512}, {6400, 4096, 1024}, {25600, 4096, 1024}};
    for (const auto &sh : shapes) {
        int M = sh[0], N = sh[1], K = sh[2];
        size_t nx = (size_t)M * K, nw = (size_t)N * K, nh = (size_t)M * N;
        std::vector<float> h(std::max(nx, nw));
        srand(1);
        float *x, *w, *f, *hz;
        CK(cudaMalloc(&x, nx * 4));
        CK(cudaMalloc(&w, nw * 4));
        CK(cudaMalloc(&f, N * 4));
        CK(cudaMalloc(&hz, nh * 4));
        for (size_t i = 0; i < nx; ++i) h[i] = (float)rand() / RAND_MAX - 0.5f;
        CK(cudaMemcpy(x, h.data(), nx * 4, cudaMemcpyHostToDevice));
        for (size_t i = 0; i < nw; ++i) h[i] = (float)rand() / RAND_MAX - 0.5f;
        CK(cudaMemcpy(w, h.data(), nw * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(f, h.data(), N * 4, cudaMemcpyHostToDevice));
        std::vector<float> ref(nh), out(nh);
        for (size_t i = 0; i < sizeof vs / sizeof vs[0]; ++i) {
            CK(cudaMemset(hz, 0xff, nh * 4)); /* NaNs: a tile not written shows */
            float ms = time_one(vs[i], x, w, f, hz, M, N, K);
            CK(cudaMemcpy(i ? out.data() : ref.data(), hz, nh * 4, cudaMemcpyDeviceToHost));
            bool same = i == 0 || memcmp(out.data(), ref.data(), nh * 4) == 0;
            printf("%5d x %4d x %4d  %-30s %8.3f ms %6.1f TFLOP/s  %s\n", M, N, K, vs[i].name, ms,
                   2.0 * M * N * K / ms / 1e9, i == 0 ? "reference" : same ? "same bits" : "DIFFERS");
            fflush(stdout);
        }
        cudaFree(x), cudaFree(w), cudaFree(f), cudaFree(hz);
    }
    return 0;
}
