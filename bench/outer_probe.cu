/*
 * outer_probe.cu: would the FFMA step's multiply run nearer the FMA rate as
 * outer products, the way the hoisted GEMM's tile does?
 *
 * bench/results/h200/step-probe/: the generated step's multiply (float4s
 * along k, 8 x 4 register tiles) runs at 57-61% of the FMA rate at every
 * tiling tried, with no copies at all at B = 256 (110 K cycles a step
 * against 65.5 K), while the GEMM tile (8 x 8 outer products over k-major
 * shared memory, four warps a scheduler) runs its FMA pipes at 84%.  This
 * probe runs one block's products of a step laid out like the GEMM: W's
 * slice (R rows) and the state's rows (BT) k-major in shared memory, a
 * thread TR x TB outputs (rows in runs of 4 spread over TR / 4 parts of the
 * slice, batch rows likewise, so a warp's loads are contiguous), the
 * threads in G groups that split each chunk's k, and after the chunks the
 * groups' partial sums added through the chunk buffers, as a step would
 * before its element phase.  The chunks are not copied in (as the step
 * probe's `pure` variant): NSB buffers reused, refilled from L2 after each
 * step's sums.  The shapes are the generated steps' of
 * bench/results/h200/step-probe/ (k8x4, b64, b64g64).
 *
 * Build and run (GPU machine): nvcc -O3 -gencode arch=compute_90a,code=sm_90a
 * -Xptxas -v -o outer_probe bench/outer_probe.cu && ./outer_probe.  Prints
 * for each shape the cycles a step (mean over 128 blocks and 20 steps, SM
 * clock) of the products and their sums, and of the whole step with the
 * buffers' refill, and the sums' error against the host.
 */
#include <cmath>

#include "probe_check.h"

constexpr int GRID = 128, STEPS = 20;

template <int R, int BT, int K, int KC, int NSB, int TR, int TB, int NT>
struct shape {
    static constexpr int NCH = K / KC, CHF = KC * BT, RC = R / TR, BC = BT / TB;
    static constexpr int G = NT / (RC * BC), KG = KC / G, GT = RC * BC;
    static constexpr int SMEM = (NSB * CHF + K * R) * 4;
    static_assert((G - 1) * R * BT <= NSB * CHF, "the partial sums go over the buffers");
    static_assert(KC % G == 0 && TR % 4 == 0 && TB % 4 == 0, "tiles");
    /* row i of a thread's tile (cell rc), batch row j (cell bc) */
    __device__ __host__ static int trow(int rc, int i) { return (i / 4) * (R / (TR / 4)) + rc * 4 + i % 4; }
    __device__ __host__ static int tcol(int bc, int j) { return (j / 4) * (BT / (TB / 4)) + bc * 4 + j % 4; }
};

template <class S, int R, int BT, int K, int KC, int NSB, int TR, int TB, int NT>
__global__ void __launch_bounds__(NT, 1) outer(const float *wt, const float *ht, float *out, long long *cyc)
{
    extern __shared__ float4 sm4[];
    float *sm = (float *)sm4, *W = sm + NSB * S::CHF;
    const int tid = threadIdx.x, g = tid / S::GT, lt = tid % S::GT;
    const int rc = lt % S::RC, bc = lt / S::RC;
    for (int i = tid; i < K * R / 4; i += NT)
        sm4[NSB * S::CHF / 4 + i] = ((const float4 *)wt)[i];
    for (int i = tid; i < NSB * S::CHF / 4; i += NT)
        sm4[i] = ((const float4 *)ht)[i];
    __syncthreads();
    long long t0 = clock64(), tl = 0;
    float acc[TR][TB];
    for (int s = 0; s < STEPS; ++s) {
        const long long t1 = clock64();
#pragma unroll
        for (int i = 0; i < TR; ++i)
#pragma unroll
            for (int j = 0; j < TB; ++j)
                acc[i][j] = 0.f;
        for (int ch = 0; ch < S::NCH; ++ch) {
            const float *X = sm + (ch % NSB) * S::CHF, *Wc = W + ch * KC * R;
#pragma unroll 8
            for (int kk = 0; kk < S::KG; ++kk) {
                const int k = g * S::KG + kk;
                float a[TR], b[TB];
#pragma unroll
                for (int p = 0; p < TR / 4; ++p) {
                    const float4 w = *(const float4 *)&Wc[k * R + p * (R / (TR / 4)) + rc * 4];
                    a[4 * p] = w.x, a[4 * p + 1] = w.y, a[4 * p + 2] = w.z, a[4 * p + 3] = w.w;
                }
#pragma unroll
                for (int p = 0; p < TB / 4; ++p) {
                    const float4 x = *(const float4 *)&X[k * BT + p * (BT / (TB / 4)) + bc * 4];
                    b[4 * p] = x.x, b[4 * p + 1] = x.y, b[4 * p + 2] = x.z, b[4 * p + 3] = x.w;
                }
#pragma unroll
                for (int i = 0; i < TR; ++i)
#pragma unroll
                    for (int j = 0; j < TB; ++j)
                        acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
        }
        /* groups 1.. leave their partial sums over the buffers ([row][batch]),
         * group 0 adds them (a step's sums, here written out at the end) */
        __syncthreads();
        if (g > 0)
#pragma unroll
            for (int i = 0; i < TR; ++i)
#pragma unroll
                for (int j = 0; j < TB; j += 4)
                    *(float4 *)&sm[(g - 1) * R * BT + S::trow(rc, i) * BT + S::tcol(bc, j)] =
                        make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        __syncthreads();
        if (g == 0)
#pragma unroll
            for (int i = 0; i < TR; ++i)
#pragma unroll
                for (int j = 0; j < TB; j += 4) {
                    float4 v = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
                    for (int p = 0; p < S::G - 1; ++p) {
                        const float4 q = *(const float4 *)&sm[p * R * BT + S::trow(rc, i) * BT + S::tcol(bc, j)];
                        v.x += q.x, v.y += q.y, v.z += q.z, v.w += q.w;
                    }
                    if (s == STEPS - 1 && blockIdx.x == 0)
                        *(float4 *)&out[S::trow(rc, i) * BT + S::tcol(bc, j)] = v;
                }
        __syncthreads();
        tl += clock64() - t1;
        /* the buffers back as they were, as a step's copies would refill them */
        for (int i = tid; i < NSB * S::CHF / 4; i += NT)
            sm4[i] = ((const float4 *)ht)[i];
        __syncthreads();
    }
    if (tid == 0) {
        cyc[2 * blockIdx.x] = clock64() - t0;
        cyc[2 * blockIdx.x + 1] = tl;
    }
}

template <int R, int BT, int K, int KC, int NSB, int TR, int TB, int NT>
static int run(const char *name)
{
    using S = shape<R, BT, K, KC, NSB, TR, TB, NT>;
    auto kern = outer<S, R, BT, K, KC, NSB, TR, TB, NT>;
    std::vector<float> wt((size_t)K * R), ht((size_t)NSB * S::CHF), out((size_t)R * BT);
    for (auto &v : wt)
        v = (float)rand() / RAND_MAX - 0.5f;
    for (auto &v : ht)
        v = (float)rand() / RAND_MAX - 0.5f;
    float *dw, *dh, *dout;
    long long *dcyc;
    CK(cudaMalloc(&dw, wt.size() * 4));
    CK(cudaMalloc(&dh, ht.size() * 4));
    CK(cudaMalloc(&dout, out.size() * 4));
    CK(cudaMalloc(&dcyc, 2 * GRID * sizeof(long long)));
    CK(cudaMemcpy(dw, wt.data(), wt.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dh, ht.data(), ht.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(dout, 0xff, out.size() * 4)); /* poisoned */
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM));
    for (int rep = 0; rep < 3; rep++) {
        kern<<<GRID, NT, S::SMEM>>>(dw, dh, dout, dcyc);
        CK(cudaDeviceSynchronize());
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
                ref += (double)wt[(size_t)k * R + r] *
                       ht[(size_t)(k / KC % NSB) * S::CHF + (k % KC) * BT + b];
            err = fmax(err, fabs(out[(size_t)r * BT + b] - ref));
            top = fmax(top, fabs(ref));
        }
    printf("%s: %d x %d tiles, %d threads in %d groups: products and sums %.0f cycles a step "
           "(FMA floor %d), %.0f with the buffers' refill; max |sum - ref| / max |ref| %.2e\n",
           name, TR, TB, NT, S::G, loop, R * BT * K / 128, mean, err / top);
    return 0;
}

int main()
{
    int rc = 0;
    rc |= run<32, 256, 1024, 32, 3, 8, 8, 512>("B=256 I=H=1024 (k8x4's block)");
    rc |= run<64, 16, 512, 512, 1, 4, 4, 512>("B=64 I=H=512 grid 128 (b64's block)");
    rc |= run<64, 16, 512, 512, 1, 4, 4, 256>("B=64 I=H=512 grid 128 (b64's block)");
    rc |= run<64, 16, 512, 512, 1, 8, 4, 256>("B=64 I=H=512 grid 128 (b64's block)");
    rc |= run<64, 32, 512, 512, 1, 4, 4, 512>("B=64 I=H=512 grid 64 (b64g64's block)");
    rc |= run<64, 32, 512, 512, 1, 8, 4, 512>("B=64 I=H=512 grid 64 (b64g64's block)");
    rc |= run<64, 32, 512, 512, 1, 8, 8, 256>("B=64 I=H=512 grid 64 (b64g64's block)");
    return rc;
}
