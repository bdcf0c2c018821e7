/*
 * lds_probe.cu: cycles a warp's 16-byte shared-memory load (LDS.128)
 * takes on the SM, by the lanes' address pattern.  The FFMA step's
 * register tiles read their operands this way; whether lanes that share
 * an address cost less decides how the lanes are laid out
 * (docs/fused-kernel.md, "Register tiles").
 *
 * Build and run (GPU machine): nvcc -O3 -arch=sm_90 -o lds_probe
 * bench/lds_probe.cu && ./lds_probe.  Each line: the pattern (named by
 * how the lanes' addresses repeat, see lane_offset) and SM cycles a warp
 * instruction (16 warps an SM, 8 independent loads in flight a warp, one
 * FADD a load); the last line calibrates with the FFMA rate (0.25).
 * About 0.5 cycles is the loop's own floor, not the loads'.
 */
#include <cstdio>
#include <cuda_runtime.h>

enum { WARPS = 16, ITERS = 2048, SMEM_FLOATS = 8192 };

/* The lane's offset in floats for pattern p; strides in floats. */
__device__ int lane_offset(int p, int lane)
{
    switch (p) {
    case 0: return lane * 4;                                  /* 32 distinct, contiguous */
    case 1: return (lane >> 1) * 4;                           /* T n == T n^1 */
    case 2: return ((lane >> 2) * 2 + (lane & 1)) * 4;        /* T n == T n^2 */
    case 3: return (lane & 7) * 4;                            /* 8 distinct, repeated by quarter */
    case 4: return 0;                                         /* all lanes one address */
    case 5: return ((lane >> 1) & 1) * 528 + (lane >> 2) * 4; /* rows by bit 1 (pad 16), k by bits 2-4 */
    case 6: return ((lane >> 1) & 1) * 512 + (lane >> 2) * 4; /* the same, rows unpadded */
    case 7: return (lane & 1) * 528 + (lane >> 2) * 4;        /* rows by bit 0 (pad 16), k by bits 2-4 */
    case 8: return (lane >> 3) * 256 + (lane & 7) * 4;        /* today's x: 4 rows, k by bits 0-2 */
    case 9: return (lane >> 2) * 4;                           /* 8 distinct, 4 lanes each (n, n^1, n^2) */
    default: return 0;
    }
}

__global__ void probe(int p, long long *cycles, float *sink)
{
    __shared__ __align__(16) float sm[SMEM_FLOATS];
    for (int i = threadIdx.x; i < SMEM_FLOATS; i += blockDim.x)
        sm[i] = (float)(i & 255);
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    /* each warp its own 2 KiB region, so warps do not share addresses */
    const float *base = sm + lane_offset(p, lane) + (warp & 1) * 2048;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
    long long t0 = clock64();
    for (int it = 0; it < ITERS; it++) {
        const int o = (it & 1) * 1024; /* warp-uniform, keeps the loads in the loop */
        float4 v[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4];"
                         : "=f"(v[j].x), "=f"(v[j].y), "=f"(v[j].z), "=f"(v[j].w)
                         : "r"((unsigned)__cvta_generic_to_shared(base + o + (j & 1) * 4096)));
#pragma unroll
        for (int j = 0; j < 8; j++) /* one add a load: the FADDs must not bound the loop */
            (j & 1 ? acc.y : acc.x) += (j & 2 ? v[j].w : v[j].x);
    }
    __syncthreads();
    long long t1 = clock64();
    if (threadIdx.x == 0)
        cycles[blockIdx.x] = t1 - t0;
    if (acc.x + acc.y + acc.z + acc.w == -1.f)
        sink[threadIdx.x] = acc.x;
}

/* Calibration: the SM's FFMA rate on the same clock (4 warp instructions
 * a cycle expected: 128 lanes). */
__global__ void probe_ffma(long long *cycles, float *sink)
{
    float a[8];
    for (int j = 0; j < 8; j++)
        a[j] = (float)(threadIdx.x + j);
    const float m = 0.999f, d = 1e-3f;
    __syncthreads();
    long long t0 = clock64();
    for (int it = 0; it < ITERS; it++)
#pragma unroll
        for (int j = 0; j < 32; j++)
            a[j & 7] = fmaf(a[j & 7], m, d);
    __syncthreads();
    long long t1 = clock64();
    if (threadIdx.x == 0)
        cycles[blockIdx.x] = t1 - t0;
    float s = 0.f;
    for (int j = 0; j < 8; j++)
        s += a[j];
    if (s == -1.f)
        sink[threadIdx.x] = s;
}

int main(void)
{
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    long long *cyc;
    float *sink;
    cudaMalloc(&cyc, sizeof(long long) * sms);
    cudaMalloc(&sink, sizeof(float) * 32 * WARPS);
    static const char *names[] = {
        "distinct32", "pairs_n^1", "pairs_n^2", "quarters_repeat8", "uniform",
        "rows_bit1_pad16", "rows_bit1_pad0", "rows_bit0_pad16", "today_x_4rows", "quads_n^1^2"};
    for (int p = 0; p < 10; p++) {
        long long best = -1;
        for (int rep = 0; rep < 3; rep++) {
            probe<<<sms, 32 * WARPS>>>(p, cyc, sink);
            long long h[256];
            cudaError_t e = cudaMemcpy(h, cyc, sizeof(long long) * sms, cudaMemcpyDeviceToHost);
            if (e != cudaSuccess) {
                printf("pattern %d: %s\n", p, cudaGetErrorString(e));
                return 1;
            }
            long long m = 0;
            for (int b = 0; b < sms; b++)
                m = h[b] > m ? h[b] : m;
            best = best < 0 || m < best ? m : best;
        }
        printf("%-18s %6.2f cycles a warp LDS.128\n", names[p],
               (double)best / ((double)WARPS * ITERS * 8));
    }
    probe_ffma<<<sms, 32 * WARPS>>>(cyc, sink);
    long long h[256], m = 0;
    cudaMemcpy(h, cyc, sizeof(long long) * sms, cudaMemcpyDeviceToHost);
    for (int b = 0; b < sms; b++)
        m = h[b] > m ? h[b] : m;
    printf("%-18s %6.2f cycles a warp FFMA\n", "ffma", (double)m / ((double)WARPS * ITERS * 32));
    cudaError_t e = cudaDeviceSynchronize();
    printf("status: %s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
