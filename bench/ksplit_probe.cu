/*
 * ksplit_probe.cu: would a K split across a cluster of two make the TF32
 * step at B = 256, I = H = 1024 faster?  Measured before the generator
 * learns it (issue 10's TF32 figure).
 *
 * The generated step (codegen/cuda/cuda_wgstep.c) gives each of 128 blocks
 * 32 rows of W_hh over all of K (128 KB in shared memory) and streams all
 * of h (256 x 1024 floats, 1 MB) through it every step in chunks of 32
 * columns: 128 MB a step out of L2, and the products on wgmma m64n32k8
 * (A: 64 batch rows of the chunk, B: the 32 weight rows), about 276
 * multiply-adds a cycle an SM (bench/results/h100/wgstep/).
 *
 * The split: a cluster of two blocks holds 64 rows of W_hh, each block
 * half of K (again 128 KB), so each block streams half of h (64 MB a step
 * over the grid) and multiplies with the weights as A (m64) and the batch
 * as B (N = 256 / NW over NW warpgroups), a wider instruction.  Each block
 * ends a chunk loop with partial sums for 64 rows; after a cluster barrier
 * it adds the partner's partials for its own 32 rows, read through
 * distributed shared memory, and runs the element phase on them.
 *
 * Both layouts run the same surrounding step: bulk copies of 32-column
 * chunks (3 buffers, mbarriers, thread 0 issuing), a stand-in element phase
 * (h = tanh(sum of the four gate rows) / 2 for 8 units x 256 rows a block,
 * written TF32-rounded to the next step's chunk-major buffer), a grid
 * barrier a step.  Flags switch parts off to see what each costs:
 * 1 no products, 2 no staging; bits 2-3 the split's exchange: 0 pull (the
 * partner's partial sums loaded through distributed shared memory), 4 none
 * (the partner's rows ignored), 8 the cluster barrier alone, 12 push (one
 * bulk copy of the partner's rows into its shared memory, completing on its
 * mbarrier).  The result of two steps is checked against the host.
 *
 * Build and run (GPU machine): nvcc -O3 -gencode arch=compute_90a,code=sm_90a
 * -o ksplit_probe bench/ksplit_probe.cu && ./ksplit_probe.  Each line: the
 * layout, flags, median of 15 launches of T = 100 after 3 (CUDA events),
 * microseconds a step.
 */
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#include "probe_check.h"

constexpr int B = 256, H = 1024, K = 1024, KC = 32, NSB = 3, NT = 512;
constexpr int CHF = B * KC;               /* floats of a chunk: 32 KB */
constexpr int SM_W = NSB * CHF;           /* the weight slice after the buffers */
constexpr int SM_MB = SM_W + 32 * K;      /* 128 KB of weights either way */
constexpr int SMEM = (SM_MB + (2 * NSB + 1) * 2) * 4;
constexpr int GRID = 128, PLD = B, SM_R = 64 * PLD;

/* partial sum (row r, batch row b): rows of 256, b's bits 2-4 XORed with r's
 * low three: the accumulators' stores and the element phase's loads both
 * free of bank conflicts */
__host__ __device__ inline int ppos(int r, int b) { return r * PLD + (b ^ ((r & 7) << 2)); }

/* wgmma m64nNk8, TF32, both operands by descriptor, d += a b */
template <int N> __device__ void wg_ss(float *d, unsigned long long da, unsigned long long db);
template <> __device__ __forceinline__ void wg_ss<32>(float *d, unsigned long long da, unsigned long long db)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, 1, 1, 1;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(da), "l"(db));
}
template <> __device__ __forceinline__ void wg_ss<64>(float *d, unsigned long long da, unsigned long long db)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, 1, 1, 1;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db));
}
template <> __device__ __forceinline__ void wg_ss<128>(float *d, unsigned long long da, unsigned long long db)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, 1, 1, 1;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db));
}

/* K-major, 128-byte swizzle: rows of 128 bytes, 8-row atoms 1024 bytes apart */
__device__ __forceinline__ unsigned long long wdesc(const void *p)
{
    const unsigned long long a = (unsigned)__cvta_generic_to_shared(p);
    return ((a & 0x3ffff) >> 4) | 1ull << 16 | (1024ull >> 4) << 32 | 1ull << 62;
}

__device__ __forceinline__ unsigned tf32_rn(float x)
{
    unsigned r;
    asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ unsigned sa(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mb_init(unsigned long long *mb, unsigned n)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" : : "r"(sa(mb)), "r"(n) : "memory");
}

__device__ __forceinline__ void bulk_get(float *dst, const float *src, unsigned bytes, unsigned long long *mb)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" : : "r"(sa(mb)), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 : : "r"(sa(dst)), "l"(src), "r"(bytes), "r"(sa(mb)) : "memory");
}

__device__ __forceinline__ void mb_arrive(unsigned long long *mb)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" : : "r"(sa(mb)) : "memory");
}

__device__ __forceinline__ void mb_wait(unsigned long long *mb, unsigned ph)
{
    unsigned ok;
    do asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                    "selp.u32 %0, 1, 0, p;\n}" : "=r"(ok) : "r"(sa(mb)), "r"(ph) : "memory");
    while (!ok);
}

__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" : : : "memory");
}

/* the partner's shared memory address of p */
__device__ __forceinline__ unsigned remote(const void *p, unsigned rank)
{
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(sa(p)), "r"(rank));
    return r;
}

__device__ __forceinline__ float ld_cluster(unsigned a)
{
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(a));
    return v;
}

/* float offset of (batch row b, column k) in a chunk-major h buffer */
__host__ __device__ inline size_t hpos(int b, int k)
{
    return ((size_t)(k / KC) * B + b) * KC + ((((k % KC) >> 2) ^ (b & 7)) << 2) + (k & 3);
}

/* chunk cq is read by every warp that multiplies: its buffer takes chunk
 * cq + NSB (thread 0 waits for the warps and issues the copy) */
__device__ __forceinline__ void release(int cq, int nch, const float *src, int kb0, float *sm, unsigned long long *full,
                                        unsigned long long *empty, unsigned &eph, int tid)
{
    const int s = cq % NSB;
    __syncwarp();
    if ((tid & 31) == 0) mb_arrive(empty + s);
    if (tid == 0) {
        if (cq + NSB < nch) {
            mb_wait(empty + s, (eph >> s) & 1u);
            bulk_get(sm + s * CHF, src + (size_t)(kb0 / KC + cq + NSB) * CHF, CHF * 4, full + s);
        }
        eph ^= 1u << s;
    }
}

/* SPLIT 0: the generated layout (32 rows, all of K, A = h).  SPLIT 1: the
 * cluster's K split (64 rows, half of K, A = W, NW warpgroups on N). */
template <int SPLIT, int NW, int F>
__global__ void __launch_bounds__(NT, 1) step(const float *__restrict__ w, float *hb, unsigned *bar, int T)
{
    extern __shared__ __align__(1024) float sm[];
    constexpr int RB = SPLIT ? 64 : 32, KB = SPLIT ? K / 2 : K, NCH = KB / KC, N = SPLIT ? B / NW : 32;
    const int tid = threadIdx.x, wg = tid >> 7, w4 = (tid >> 5) & 3, g = (tid & 31) >> 2, q = tid & 3;
    const int cr = SPLIT ? (int)(blockIdx.x & 1) : 0, blk = SPLIT ? (int)(blockIdx.x >> 1) : (int)blockIdx.x;
    const int kb0 = cr * KB, u0 = SPLIT ? 16 * blk + 8 * cr : 8 * blk;
    unsigned long long *const full = (unsigned long long *)(sm + SM_MB), *const empty = full + NSB, *const rx = empty + NSB;
    const bool mul = !SPLIT || wg < NW;
    constexpr int NCW = SPLIT ? NW * 4 : NT / 32;

    /* local row r: SPLIT 0 gate r / 8 of unit u0 + r % 8; SPLIT 1 half r / 32 of the pair */
    for (int i = tid; i < RB * KB / 4; i += NT) {
        const int r = i / (KB / 4), k4 = i % (KB / 4), rr = r % 32, half = r / 32;
        const int gr = (rr / 8) * H + (SPLIT ? 16 * blk + 8 * half : u0) + rr % 8;
        const float4 v = *(const float4 *)(w + (size_t)gr * K + kb0 + 4 * k4);
        float *dst = sm + SM_W + ((k4 >> 3) * RB + r) * 32 + (((k4 & 7) ^ (r & 7)) << 2);
        dst[0] = __uint_as_float(tf32_rn(v.x)); dst[1] = __uint_as_float(tf32_rn(v.y));
        dst[2] = __uint_as_float(tf32_rn(v.z)); dst[3] = __uint_as_float(tf32_rn(v.w));
    }
    if (tid == 0) {
        for (int s = 0; s < NSB; ++s) mb_init(full + s, 1);
        for (int s = 0; s < NSB; ++s) mb_init(empty + s, NCW);
        mb_init(rx, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;" : : : "memory");
    __syncthreads();
    if (SPLIT) cluster_sync();
    unsigned ph = 0, eph = 0;
    /* exchange XM: 0 pull (the partner's partials loaded through DSMEM),
     * 1 none, 2 the cluster barrier alone, 3 push (one bulk copy of the
     * partner's rows into its shared memory) */
    constexpr int XM = SPLIT ? (F >> 2) & 3 : 1;
    constexpr bool PROD = !(F & 1), STAGE = !(F & 2), xch = XM == 0;
    unsigned rxph = 0;
    for (int t = 0; t < T; ++t) {
        const float *src = hb + (size_t)(t & 1) * B * K;
        float *dst = hb + (size_t)((t + 1) & 1) * B * K;
        float d[N / 2];
#pragma unroll
        for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
        if (mul) {
            if (tid == 0 && STAGE) {
                asm volatile("fence.proxy.async.global;" : : : "memory");
                for (int s = 0; s < NSB; ++s)
                    bulk_get(sm + s * CHF, src + (size_t)(kb0 / KC + s) * CHF, CHF * 4, full + s);
            }
            for (int ch = 0; ch < NCH; ++ch) {
                const int s = ch % NSB;
                if (STAGE) {
                    mb_wait(full + s, (ph >> s) & 1u);
                    ph ^= 1u << s;
                }
                if (PROD) {
                    const float *a = SPLIT ? sm + SM_W + ch * RB * 32 : sm + s * CHF + wg * 64 * KC;
                    const float *b = SPLIT ? sm + s * CHF + wg * N * KC : sm + SM_W + ch * RB * 32;
                    asm volatile("wgmma.fence.sync.aligned;" : : : "memory");
#pragma unroll
                    for (int ks = 0; ks < 4; ++ks) wg_ss<N>(d, wdesc(a + ks * 8), wdesc(b + ks * 8));
                    asm volatile("wgmma.commit_group.sync.aligned;" : : : "memory");
                    asm volatile("wgmma.wait_group.sync.aligned 1;" : : : "memory");
                }
                if (ch > 0 && STAGE)
                    release(ch - 1, NCH, src, kb0, sm, full, empty, eph, tid);
            }
            if (PROD) asm volatile("wgmma.wait_group.sync.aligned 0;" : : : "memory");
            if (STAGE) release(NCH - 1, NCH, src, kb0, sm, full, empty, eph, tid);
        }
        __syncthreads(); /* the buffers are read: the partial sums go over them */
        if (mul) {
#pragma unroll
            for (int j = 0; j < N / 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int rm = 16 * w4 + g + 8 * (e >> 1), cn = 8 * j + 2 * q + (e & 1);
                    if (SPLIT)
                        sm[ppos(rm, wg * N + cn)] = d[4 * j + e];
                    else
                        sm[ppos(cn, wg * 64 + rm)] = d[4 * j + e];
                }
        }
        __syncthreads();
        if (XM == 3 && tid == 0)
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" : : "r"(sa(rx)), "r"(32u * PLD * 4) : "memory");
        if (XM != 1) cluster_sync();
        if (XM == 3) {
            if (tid == 0) {
                asm volatile("fence.proxy.async.shared::cta;" : : : "memory");
                asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                             : : "r"(remote(sm + SM_R, cr ^ 1)), "r"(sa(sm + 32 * (cr ^ 1) * PLD)), "r"(32u * PLD * 4),
                                 "r"(remote(rx, cr ^ 1)) : "memory");
            }
            mb_wait(rx, rxph);
            rxph ^= 1u;
        }
        /* the partner's partial sums first, all in flight at once: one at a
         * time they cost a round trip each (about 4 us a step) */
        float rv[4][4];
        if (xch) {
            const unsigned rb = remote(sm, cr ^ 1);
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int gt = 0; gt < 4; ++gt) {
                    const int e = tid + j * NT, r = 32 * cr + gt * 8 + e % 8;
                    rv[j][gt] = ld_cluster(rb + 4u * (unsigned)ppos(r, e / 8));
                }
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int e = tid + j * NT, u = e % 8, b = e / 8;
            float s = 0.f;
#pragma unroll
            for (int gt = 0; gt < 4; ++gt)
                s += sm[ppos(32 * cr + gt * 8 + u, b)] + (xch ? rv[j][gt] : 0.f) +
                     (XM == 3 ? sm[SM_R + ppos(gt * 8 + u, b)] : 0.f);
            dst[hpos(b, u0 + u)] = __uint_as_float(tf32_rn(0.5f * tanhf(s)));
        }
        asm volatile("fence.proxy.async.shared::cta;" : : : "memory"); /* the buffers take copies again */
        __syncthreads();
        if (tid == 0) {
            asm volatile("red.release.gpu.global.add.u32 [%0], 1;" : : "l"(bar) : "memory");
            unsigned a;
            do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(a) : "l"(bar) : "memory");
            while (a < (unsigned)(t + 1) * gridDim.x);
        }
        __syncthreads();
    }
    if (SPLIT) cluster_sync(); /* the partner may still read these partial sums */
}

static float tf32_host(float x)
{
    unsigned u;
    memcpy(&u, &x, 4);
    u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
    memcpy(&x, &u, 4);
    return x;
}

constexpr int NF = 12;

struct variant {
    const char *name;
    void (*k[NF])(const float *, float *, unsigned *, int);
    int cluster;
};

/* A variant's launch: its cluster size as an attribute (at: its storage). */
static cudaLaunchConfig_t config(const variant &v, cudaLaunchAttribute *at)
{
    cudaLaunchConfig_t c = {};
    c.gridDim = dim3(GRID);
    c.blockDim = dim3(NT);
    c.dynamicSmemBytes = SMEM;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = v.cluster;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    c.attrs = at;
    c.numAttrs = 1;
    return c;
}

static float launch(const variant &v, const float *w, float *hb, unsigned *bar, int T, int fi)
{
    cudaLaunchAttribute at[1];
    const cudaLaunchConfig_t c = config(v, at);
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaMemset(bar, 0, 4));
    CK(cudaEventRecord(a));
    CK(cudaLaunchKernelEx(&c, v.k[fi], w, hb, bar, T));
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    CK(cudaGetLastError());
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return ms;
}

/* two steps on the host from the same (TF32-rounded) h and W */
static double check(const variant &v, int fi, const float *w, float *hb, unsigned *bar, const std::vector<float> &hw,
                    const std::vector<float> &h0)
{
    std::vector<float> buf(B * K), h = h0, hn(B * K);
    for (int b = 0; b < B; ++b)
        for (int k = 0; k < K; ++k) buf[hpos(b, k)] = h0[(size_t)b * K + k];
    CK(cudaMemcpy(hb, buf.data(), buf.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(hb + (size_t)B * K, 0xff, (size_t)B * K * 4));
    launch(v, w, hb, bar, 2, fi);
    for (int t = 0; t < 2; ++t) {
        for (int b = 0; b < B; ++b)
            for (int u = 0; u < H; ++u) {
                double s = 0;
                for (int gt = 0; gt < 4; ++gt) {
                    const float *wr = &hw[(size_t)(gt * H + u) * K];
                    for (int k = 0; k < K; ++k) s += (double)tf32_host(wr[k]) * h[(size_t)b * K + k];
                }
                hn[(size_t)b * K + u] = tf32_host((float)(0.5 * tanh(s)));
            }
        h = hn;
    }
    CK(cudaMemcpy(buf.data(), hb, buf.size() * 4, cudaMemcpyDeviceToHost));
    double e = 0, m = 0;
    for (int b = 0; b < B; ++b)
        for (int k = 0; k < K; ++k) {
            const double r = h[(size_t)b * K + k], o = buf[hpos(b, k)];
            e = std::max(e, std::isnan(o) ? INFINITY : fabs(o - r));
            m = std::max(m, fabs(r));
        }
    return e / m;
}

int main()
{
    std::vector<float> hw((size_t)4 * H * K), h0((size_t)B * K);
    srand(7);
    for (auto &x : hw) x = ((float)rand() / RAND_MAX - 0.5f) / 16.f;
    for (auto &x : h0) x = tf32_host((float)rand() / RAND_MAX - 0.5f);
    float *w, *hb;
    unsigned *bar;
    CK(cudaMalloc(&w, hw.size() * 4));
    CK(cudaMalloc(&hb, (size_t)2 * B * K * 4));
    CK(cudaMalloc(&bar, 4));
    CK(cudaMemcpy(w, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice));
#define KS(S, W) {step<S, W, 0>, step<S, W, 1>, step<S, W, 2>, step<S, W, 3>, step<S, W, 4>, step<S, W, 8>, step<S, W, 12>, step<S, W, 7>, step<S, W, 11>, step<S, W, 15>, step<S, W, 13>, step<S, W, 14>}
    const int flag[NF] = {0, 1, 2, 3, 4, 8, 12, 7, 11, 15, 13, 14};
    const variant vs[] = {
        {"rows32 (generated layout)", KS(0, 4), 1},
        {"ksplit2 NW=2 (m64n128)", KS(1, 2), 2},
        {"ksplit2 NW=4 (m64n64)", KS(1, 4), 2},
    };
    for (const variant &v : vs) {
        for (auto k : v.k) CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
        if (v.cluster > 1) {
            cudaLaunchAttribute at[1];
            const cudaLaunchConfig_t c = config(v, at);
            int n = 0;
            CK(cudaOccupancyMaxActiveClusters(&n, v.k[0], &c));
            printf("%s: %d clusters of %d resident at once (needs %d)\n", v.name, n, v.cluster, GRID / v.cluster);
            if (n * v.cluster < GRID) continue;
        }
        printf("%s: error after 2 steps %.3g (pull), %.3g (push)\n", v.name, check(v, 0, w, hb, bar, hw, h0),
               check(v, 6, w, hb, bar, hw, h0));
        for (int fi = 0; fi < NF; ++fi) {
            const int flags = flag[fi];
            if (flags > 3 && v.cluster == 1) continue;
            std::vector<float> ms;
            for (int i = 0; i < 18; ++i) {
                const float x = launch(v, w, hb, bar, 100, fi);
                if (i >= 3) ms.push_back(x);
            }
            std::sort(ms.begin(), ms.end());
            printf("%-28s flags %d: %.4f ms, %.2f us a step\n", v.name, flags, ms[ms.size() / 2],
                   ms[ms.size() / 2] * 10.f);
        }
    }
    return 0;
}
