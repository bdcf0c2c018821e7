/*
 * outer_probe.cu: would the FFMA step's multiply run nearer the FMA rate as
 * outer products, the way the hoisted GEMM's tile does?
 *
 * bench/results/h200/step-probe/: at B = 256, I = H = 1024 the generated
 * step's chunk loop (a block's 32 rows of W_hh against 256 batch rows, K =
 * 1024 in 32 chunks; 256 threads, 8 x 4 tiles, float4s along k, 168
 * registers: two warps a scheduler) runs at 60% of the FMA rate with no
 * copies at all (110 K cycles against 65.5 K), while the GEMM tile (8 x 8
 * outer products over k-major shared memory, four warps a scheduler) runs
 * its FMA pipes at 84%.  This probe runs the same block's products laid out
 * like the GEMM: W's slice and h's chunks k-major in shared memory, 512
 * threads in four groups that split each chunk's k, each thread 8 x 8
 * outputs (rows r4 .. r4 + 3 and 16 + those, batch rows b4 .. b4 + 3 and 128
 * + those, so a warp's loads are 64 and 128 contiguous bytes), and after
 * the 32 chunks the groups' partial sums added through the chunk buffers,
 * as a step would before its element phase.  The chunks are not copied
 * (the `pure` variant of the step probe: three buffers reused), so the
 * figure to compare is 110 K cycles (loop) + 0.4 K (sums).
 *
 * Build and run (GPU machine): nvcc -O3 -gencode arch=compute_90a,code=sm_90a
 * -Xptxas -v -o outer_probe bench/outer_probe.cu && ./outer_probe.  Prints
 * the cycles a step (mean over 128 blocks and 20 steps, SM clock) of the
 * products and their sums, and of the whole step with the buffers' refill
 * from L2, and the sums' error against the host.
 */
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

constexpr int R = 32, BT = 256, K = 1024, KC = 32, NCH = K / KC, NSB = 3;
constexpr int NT = 512, G = 4, KG = KC / G, GRID = 128, STEPS = 20;
constexpr int CHF = KC * BT;                  /* floats of a chunk buffer */
constexpr int SMEM = (NSB * CHF + K * R) * 4; /* 96 KB of buffers, 128 KB of W */

/* row i (0..7) of a thread's tile, batch row j (0..7) */
__device__ __host__ inline int trow(int rc, int i) { return (i / 4) * 16 + rc * 4 + i % 4; }
__device__ __host__ inline int tcol(int bc, int j) { return (j / 4) * 128 + bc * 4 + j % 4; }

__global__ void __launch_bounds__(NT, 1) outer(const float *wt, const float *ht, float *out,
                                               long long *cyc)
{
    extern __shared__ float4 sm4[];
    float *sm = (float *)sm4, *W = sm + NSB * CHF;
    const int tid = threadIdx.x, g = tid / 128, lt = tid % 128;
    const int rc = lt % 4, bc = lt / 4; /* 4 x 32 cells a group */
    for (int i = tid; i < K * R / 4; i += NT)
        sm4[NSB * CHF / 4 + i] = ((const float4 *)wt)[i];
    for (int i = tid; i < NSB * CHF / 4; i += NT)
        sm4[i] = ((const float4 *)ht)[i];
    __syncthreads();
    long long t0 = clock64(), tl = 0;
    float acc[8][8];
    for (int s = 0; s < STEPS; ++s) {
        const long long t1 = clock64();
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j)
                acc[i][j] = 0.f;
        for (int ch = 0; ch < NCH; ++ch) {
            const float *X = sm + (ch % NSB) * CHF, *Wc = W + ch * KC * R;
#pragma unroll
            for (int kk = 0; kk < KG; ++kk) {
                const int k = g * KG + kk;
                const float4 w0 = *(const float4 *)&Wc[k * R + rc * 4];
                const float4 w1 = *(const float4 *)&Wc[k * R + 16 + rc * 4];
                const float4 x0 = *(const float4 *)&X[k * BT + bc * 4];
                const float4 x1 = *(const float4 *)&X[k * BT + 128 + bc * 4];
                const float a[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
                const float b[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
                for (int i = 0; i < 8; ++i)
#pragma unroll
                    for (int j = 0; j < 8; ++j)
                        acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
        }
        /* groups 1..3 leave their partial sums in buffers 0..2 ([row][batch]),
         * group 0 adds them and writes the step's sums over buffer 0 */
        __syncthreads();
        if (g > 0)
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; j += 4)
                    *(float4 *)&sm[(g - 1) * CHF + trow(rc, i) * BT + tcol(bc, j)] =
                        make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        __syncthreads();
        if (g == 0)
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; j += 4) {
                    float4 v = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
#pragma unroll
                    for (int p = 0; p < 3; ++p) {
                        const float4 q = *(const float4 *)&sm[p * CHF + trow(rc, i) * BT + tcol(bc, j)];
                        v.x += q.x, v.y += q.y, v.z += q.z, v.w += q.w;
                    }
                    if (s == STEPS - 1 && blockIdx.x == 0)
                        *(float4 *)&out[trow(rc, i) * BT + tcol(bc, j)] = v;
                }
        __syncthreads();
        tl += clock64() - t1;
        /* the buffers back as they were, as a step's copies would refill them */
        if (g > 0)
            for (int i = lt; i < CHF / 4; i += 128)
                sm4[(g - 1) * CHF / 4 + i] = ((const float4 *)ht)[(g - 1) * CHF / 4 + i];
        __syncthreads();
    }
    if (tid == 0) {
        cyc[2 * blockIdx.x] = clock64() - t0;
        cyc[2 * blockIdx.x + 1] = tl;
    }
}

int main()
{
    std::vector<float> wt((size_t)K * R), ht((size_t)NSB * CHF), out((size_t)R * BT);
    for (auto &v : wt)
        v = (float)rand() / RAND_MAX - 0.5f;
    for (auto &v : ht)
        v = (float)rand() / RAND_MAX - 0.5f;
    float *dw, *dh, *dout;
    long long *dcyc;
    cudaMalloc(&dw, wt.size() * 4);
    cudaMalloc(&dh, ht.size() * 4);
    cudaMalloc(&dout, out.size() * 4);
    cudaMalloc(&dcyc, 2 * GRID * sizeof(long long));
    cudaMemcpy(dw, wt.data(), wt.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dh, ht.data(), ht.size() * 4, cudaMemcpyHostToDevice);
    cudaMemset(dout, 0xff, out.size() * 4); /* poisoned */
    cudaFuncSetAttribute(outer, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    for (int rep = 0; rep < 3; rep++) {
        outer<<<GRID, NT, SMEM>>>(dw, dh, dout, dcyc);
        if (cudaDeviceSynchronize() != cudaSuccess) {
            fprintf(stderr, "outer_probe: %s\n", cudaGetErrorString(cudaGetLastError()));
            return 1;
        }
    }
    std::vector<long long> cyc(2 * GRID);
    cudaMemcpy(cyc.data(), dcyc, 2 * GRID * sizeof(long long), cudaMemcpyDeviceToHost);
    cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost);
    double mean = 0, loop = 0, err = 0, top = 0;
    for (int b = 0; b < GRID; b++) {
        mean += (double)cyc[2 * b] / GRID / STEPS;
        loop += (double)cyc[2 * b + 1] / GRID / STEPS;
    }
    for (int r = 0; r < R; r++)
        for (int b = 0; b < BT; b++) {
            double ref = 0;
            for (int k = 0; k < K; k++)
                ref += (double)wt[(size_t)k * R + r] * ht[(size_t)(k / KC % NSB) * CHF + (k % KC) * BT + b];
            err = fmax(err, fabs(out[(size_t)r * BT + b] - ref));
            top = fmax(top, fabs(ref));
        }
    printf("outer products, 512 threads, 8 x 8: the products and their sums %.0f cycles a step "
           "(FMA floor %d), %.0f with the buffers' refill; max |sum - ref| / max |ref| %.2e\n",
           loop, R * BT * K / 128, mean, err / top);
    return 0;
}
