/*
 * wgmma_probe.cu: what Hopper's warpgroup MMA (wgmma.mma_async, sm_90)
 * would give the hoisted GEMM of the TF32 math modes, measured before the
 * generator learns it.  The generated tiles (codegen/cuda/cuda_gemm16.c)
 * use mma.sync m16n8k8: ncu put the 3xtf32 GEMM of the LSTM at B = 64
 * (6400 x 2048 x 512) at 222 us with the tensor pipe 56% busy, and the TF32
 * GEMM at B = 256, I = H = 1024 (25600 x 4096 x 1024) at 1.69 ms, bound by
 * L2 -> SM traffic (bench/results/h100/x3split/, tiles8/).
 *
 * One tile shape a template: 128 rows of x (two warpgroups of 64) by BN
 * columns of W, K in slices of 32 floats through an ST-stage cp.async
 * pipeline.  Shared memory holds each slice in wgmma's K-major layout
 * without swizzle: 8-row x 16-byte core matrices of 128 contiguous bytes,
 * the next one along K 128 bytes on (the descriptor's leading offset), the
 * next 8 rows 8 core matrices on (its stride offset).
 *   MODE 1 (tf32): x rounded to TF32 (cvt.rn) in shared memory by the
 *     thread that copied it, W rounded once on the host (a weight), both
 *     operands read by wgmma from shared memory, products added into the
 *     accumulators.
 *   MODE 2 (3xtf32): W split into hi and lo parts once on the host (two
 *     arrays); x's A fragments loaded by ldmatrix and split in registers;
 *     a slice's products lo*hi + hi*lo + hi*hi summed from zero by wgmma
 *     into e, then e added to the accumulators in fp32, as the generated
 *     tiles do each k-step (the tensor cores' adds truncate).
 * Each output is checked against a double-precision product on a sample
 * of elements: max |out - ref| / max |ref|.
 *
 * Build and run (GPU machine): nvcc -O3 -gencode arch=compute_90a,code=sm_90a
 * -o wgmma_probe bench/wgmma_probe.cu -lcuda && ./wgmma_probe (-lcuda: the
 * driver's cuTensorMapEncodeTiled).  Each line: mode, shape, tile,
 * median of 20 launches after 3 (CUDA events), TFLOP/s counted as the
 * GEMM's 2MNK, the sampled error.  The "2/SM" tiles run two blocks an SM in
 * three stages, as the generated tiles do since 2026-11-27: rs (x rounded
 * in registers, the generator's) against ss (x truncated by the tensor
 * cores); "round x" times the pass over x that ss would need to round x to
 * nearest as the TF32 mode does.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <algorithm>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>

#include "probe_check.h"

/* wgmma with A from registers (rs) or shared memory (ss), m64 x N x k8,
 * TF32 operands, fp32 accumulators d[N / 2]; sd = 0 writes a * b, else
 * adds it.  (Written out by a script: the operand lists are long.) */
template <int N> __device__ void wg_rs(float *d, const unsigned *a, unsigned long long db, int sd);
template <int N> __device__ void wg_ss(float *d, unsigned long long da, unsigned long long db, int sd);
template <> __device__ __forceinline__ void wg_rs<64>(float *d, const unsigned *a, unsigned long long db, int sd)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(sd));
}
template <> __device__ __forceinline__ void wg_ss<64>(float *d, unsigned long long da, unsigned long long db, int sd)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(sd));
}
template <> __device__ __forceinline__ void wg_rs<128>(float *d, const unsigned *a, unsigned long long db, int sd)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(sd));
}
template <> __device__ __forceinline__ void wg_ss<128>(float *d, unsigned long long da, unsigned long long db, int sd)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(sd));
}
template <> __device__ __forceinline__ void wg_rs<256>(float *d, const unsigned *a, unsigned long long db, int sd)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(sd));
}
template <> __device__ __forceinline__ void wg_ss<256>(float *d, unsigned long long da, unsigned long long db, int sd)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db), "r"(sd));
}

__device__ __forceinline__ unsigned tf32_rn(float x)
{
    unsigned r;
    asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ void cp16(void *dst, const void *src)
{
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : : "r"(d), "l"(src) : "memory");
}

__device__ __forceinline__ void ldsm4(unsigned *r, const void *p)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

/* K-major, no swizzle: leading (K) offset 128 bytes, stride (8 rows) 8
 * core matrices of a 32-float slice. */
__device__ __forceinline__ unsigned long long desc(const void *p)
{
    unsigned long long a = (unsigned)__cvta_generic_to_shared(p);
    return ((a & 0x3ffff) >> 4) | (128ull >> 4) << 16 | (1024ull >> 4) << 32;
}

constexpr int BM = 128, BK = 32, KC = BK / 4;

/* Byte offset of row r, 16-byte chunk c of a slice in the core-matrix layout. */
__device__ __forceinline__ int cm_off(int r, int c)
{
    return ((r >> 3) * KC + c) * 128 + (r & 7) * 16;
}

/* Copy i of a slice (row r, chunk c): 8 lanes in a row take 8 rows of one
 * chunk (one core matrix, 128 bytes: no bank conflict), a warp 4 chunks
 * of them (64 contiguous bytes of each row in global memory). */
__device__ __forceinline__ void copy_rc(int i, int &r, int &c)
{
    const int rest = i >> 5;
    r = (rest >> 1) * 8 + (i & 7);
    c = (rest & 1) * 4 + ((i >> 3) & 3);
}

template <int MODE, int BN, int ST>
__global__ void __launch_bounds__(256, 1)
    wg_gemm(const float *__restrict__ x, const float *__restrict__ wh, const float *__restrict__ wl,
            const float *__restrict__ fold, float *out, int M, int N, int K)
{
    constexpr int XB = BM * BK * 4, WB = BN * BK * 4, SB = XB + WB * (MODE == 2 ? 2 : 1);
    extern __shared__ __align__(128) unsigned char sm[];
    const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    const int nt = N / BN, m0 = blockIdx.x / nt * BM, n0 = blockIdx.x % nt * BN, KT = K / BK;
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;

    auto load = [&](int s, int kt) {
        unsigned char *st = sm + s * SB;
        for (int i = tid; i < BM * KC; i += 256) {
            int r, c;
            copy_rc(i, r, c);
            cp16(st + cm_off(r, c), x + (size_t)min(m0 + r, M - 1) * K + kt * BK + c * 4);
        }
        for (int i = tid; i < BN * KC; i += 256) {
            int r, c;
            copy_rc(i, r, c);
            cp16(st + XB + cm_off(r, c), wh + (size_t)(n0 + r) * K + kt * BK + c * 4);
            if (MODE == 2)
                cp16(st + XB + WB + cm_off(r, c), wl + (size_t)(n0 + r) * K + kt * BK + c * 4);
        }
        asm volatile("cp.async.commit_group;" : : : "memory");
    };
    /* MODE 1 rounds its own x chunks in place once they have landed */
    auto round_x = [&](int s) {
        unsigned char *st = sm + s * SB;
        for (int i = tid; i < BM * KC; i += 256) {
            int r, c;
            copy_rc(i, r, c);
            float4 *p = (float4 *)(st + cm_off(r, c));
            float4 v = *p;
            *p = make_float4(__uint_as_float(tf32_rn(v.x)), __uint_as_float(tf32_rn(v.y)),
                             __uint_as_float(tf32_rn(v.z)), __uint_as_float(tf32_rn(v.w)));
        }
    };
    /* MODE 1 keeps one slice of wgmma in flight, so a stage is refilled two
     * slices after its use; MODE 2 waits for each slice (the fold) */
    constexpr int AHEAD = MODE == 1 ? ST - 2 : ST - 1;
    for (int s = 0; s < AHEAD; ++s) {
        if (s < KT) load(s, s);
        else asm volatile("cp.async.commit_group;" : : : "memory");
    }
    for (int kt = 0; kt < KT; ++kt) {
        asm volatile("cp.async.wait_group %0;" : : "n"(AHEAD - 1) : "memory");
        const int s = kt % ST;
        if (MODE == 1) round_x(s);
        asm volatile("fence.proxy.async.shared::cta;" : : : "memory");
        __syncthreads();
        {
            const int nk = kt + AHEAD;
            if (nk < KT) load(nk % ST, nk);
            else asm volatile("cp.async.commit_group;" : : : "memory");
        }
        unsigned char *st = sm + s * SB;
        if (MODE == 1) {
            asm volatile("wgmma.fence.sync.aligned;" : : : "memory");
#pragma unroll
            for (int ks = 0; ks < KC / 2; ++ks)
                wg_ss<BN>(d, desc(st + cm_off(wg * 64, 2 * ks)), desc(st + XB + cm_off(0, 2 * ks)), 1);
            asm volatile("wgmma.commit_group.sync.aligned;" : : : "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;" : : : "memory");
        } else {
            unsigned ah[KC / 2][4], al[KC / 2][4];
            const int j = lane >> 3, r = wg * 64 + warp * 16 + (j & 1) * 8 + (lane & 7);
#pragma unroll
            for (int ks = 0; ks < KC / 2; ++ks) {
                unsigned a[4];
                ldsm4(a, st + cm_off(r, 2 * ks + (j >> 1)));
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    ah[ks][q] = tf32_rn(__uint_as_float(a[q]));
                    al[ks][q] = __float_as_uint(__uint_as_float(a[q]) - __uint_as_float(ah[ks][q]));
                }
            }
            float e[BN / 2];
            asm volatile("wgmma.fence.sync.aligned;" : : : "memory");
#pragma unroll
            for (int ks = 0; ks < KC / 2; ++ks) {
                const unsigned long long bh = desc(st + XB + cm_off(0, 2 * ks));
                const unsigned long long bl = desc(st + XB + WB + cm_off(0, 2 * ks));
                wg_rs<BN>(e, al[ks], bh, ks > 0);
                wg_rs<BN>(e, ah[ks], bl, 1);
                wg_rs<BN>(e, ah[ks], bh, 1);
            }
            asm volatile("wgmma.commit_group.sync.aligned;" : : : "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;" : : : "memory");
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) d[i] += e[i];
        }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" : : : "memory");
    /* accumulator i of n8 block jb: row g (+8 for i & 2), column 8 jb + 2q (+1 for i & 1) */
    const int g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
        const int jb = i >> 2, row = m0 + wg * 64 + warp * 16 + g + ((i & 2) ? 8 : 0);
        const int col = n0 + jb * 8 + 2 * q + (i & 1);
        if (row < M) out[(size_t)row * N + col] = d[i] + fold[col];
    }
}

/* ------------------------------------------------------------------ TMA */

/* The same tiles fed by the tensor memory accelerator: one thread a slice
 * puts x's and W's boxes (32 floats x rows) in flight with
 * cp.async.bulk.tensor, their arrival counted by an mbarrier a stage, in
 * the 128-byte swizzled layout (row r's 16-byte chunk c at r * 128 + ((c ^
 * r) & 7) * 16), which wgmma reads without bank conflicts and ldmatrix
 * too.  A slice's copies are a few instructions of one thread instead of
 * 16-byte cp.async by every thread (the cp.async tiles above spent a fifth
 * of their stalls on the LSU queue and a third waiting on them).
 *   MODE 1: tf32, x's A fragments by ldmatrix, rounded (cvt.rn) in registers
 *   MODE 2: 3xtf32 as above
 *   MODE 3: tf32 with both operands from shared memory (x truncated by the
 *           tensor cores: no rounding; for the speed of the ss form only) */
__device__ __forceinline__ unsigned long long desc128(const void *p)
{
    unsigned long long a = (unsigned)__cvta_generic_to_shared(p);
    return ((a & 0x3ffff) >> 4) | 1ull << 16 | (1024ull >> 4) << 32 | 1ull << 62;
}

__device__ __forceinline__ unsigned sw_off(int r, int c)
{
    return r * 128 + (((c ^ r) & 7) << 4);
}

__device__ __forceinline__ void mbar_wait(unsigned long long *b, unsigned parity)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(b), ok = 0;
    while (!ok)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(ok) : "r"(a), "r"(parity) : "memory");
}

__device__ __forceinline__ void tma2d(void *dst, const CUtensorMap *m, int c0, int c1,
                                      unsigned long long *b)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 : : "r"((unsigned)__cvta_generic_to_shared(dst)), "l"((unsigned long long)m),
                   "r"(c0), "r"(c1), "r"((unsigned)__cvta_generic_to_shared(b)) : "memory");
}

template <int MODE, int BN, int ST, int MINB>
__global__ void __launch_bounds__(256, MINB)
    tma_gemm(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw,
             const __grid_constant__ CUtensorMap tl, const float *__restrict__ fold, float *out,
             int M, int N, int K)
{
    constexpr int XB = BM * 128, WB = BN * 128, SB = XB + WB * (MODE >= 2 && MODE != 3 ? 2 : 1);
    constexpr int TXB = XB + WB * (MODE == 2 ? 2 : 1); /* bytes the copies bring */
    extern __shared__ unsigned char smraw[];
    __shared__ unsigned long long full[ST];
    const unsigned base = (unsigned)__cvta_generic_to_shared(smraw);
    unsigned char *const sm = smraw + ((1024 - (base & 1023)) & 1023);
    const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    const int nt = N / BN, m0 = blockIdx.x / nt * BM, n0 = blockIdx.x % nt * BN, KT = K / BK;
    if (tid == 0) {
        for (int s = 0; s < ST; ++s)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;"
                         : : "r"((unsigned)__cvta_generic_to_shared(&full[s])) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");
    }
    __syncthreads();
    auto issue = [&](int kt) {
        const int s = kt % ST;
        unsigned char *st = sm + s * SB;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     : : "r"((unsigned)__cvta_generic_to_shared(&full[s])), "r"(TXB) : "memory");
        tma2d(st, &tx, kt * BK, m0, &full[s]);
        tma2d(st + XB, &tw, kt * BK, n0, &full[s]);
        if (MODE == 2)
            tma2d(st + XB + WB, &tl, kt * BK, n0, &full[s]);
    };
    if (tid == 0)
        for (int kt = 0; kt < ST - 1 && kt < KT; ++kt) issue(kt);
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
    const int j = lane >> 3, r = wg * 64 + warp * 16 + (j & 1) * 8 + (lane & 7);
    for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % ST;
        mbar_wait(&full[s], (unsigned)(kt / ST) & 1u);
        unsigned char *st = sm + s * SB;
        if (MODE == 3) {
            asm volatile("wgmma.fence.sync.aligned;" : : : "memory");
#pragma unroll
            for (int ks = 0; ks < KC / 2; ++ks)
                wg_ss<BN>(d, desc128(st + wg * 64 * 128 + ks * 32), desc128(st + XB + ks * 32), 1);
            asm volatile("wgmma.commit_group.sync.aligned;" : : : "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;" : : : "memory");
        } else if (MODE == 1) {
            unsigned a[KC / 2][4];
#pragma unroll
            for (int ks = 0; ks < KC / 2; ++ks) {
                ldsm4(a[ks], st + sw_off(r, 2 * ks + (j >> 1)));
#pragma unroll
                for (int q = 0; q < 4; ++q) a[ks][q] = tf32_rn(__uint_as_float(a[ks][q]));
            }
            asm volatile("wgmma.fence.sync.aligned;" : : : "memory");
#pragma unroll
            for (int ks = 0; ks < KC / 2; ++ks) wg_rs<BN>(d, a[ks], desc128(st + XB + ks * 32), 1);
            asm volatile("wgmma.commit_group.sync.aligned;" : : : "memory");
            /* 0, not 1: ptxas does not keep a[] intact for a wgmma in flight
             * (with 1 the products came out wrong, error 0.13-0.19) */
            asm volatile("wgmma.wait_group.sync.aligned 0;" : : : "memory");
        } else {
            if (MODE == 4) {
                /* lo = w - (w's top 19 bits), written beside the raw slice;
                 * the tensor cores read the raw w as its hi part */
                for (int i = tid; i < BN * KC; i += 256) {
                    float4 *src = (float4 *)(st + XB + i * 16);
                    float4 v = *src, l;
                    l.x = v.x - __uint_as_float(__float_as_uint(v.x) & 0xffffe000u);
                    l.y = v.y - __uint_as_float(__float_as_uint(v.y) & 0xffffe000u);
                    l.z = v.z - __uint_as_float(__float_as_uint(v.z) & 0xffffe000u);
                    l.w = v.w - __uint_as_float(__float_as_uint(v.w) & 0xffffe000u);
                    *(float4 *)(st + XB + WB + i * 16) = l;
                }
                asm volatile("fence.proxy.async.shared::cta;" : : : "memory");
                __syncthreads();
            }
            unsigned ah[KC / 2][4], al[KC / 2][4];
#pragma unroll
            for (int ks = 0; ks < KC / 2; ++ks) {
                unsigned a[4];
                ldsm4(a, st + sw_off(r, 2 * ks + (j >> 1)));
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    ah[ks][q] = tf32_rn(__uint_as_float(a[q]));
                    al[ks][q] = __float_as_uint(__uint_as_float(a[q]) - __uint_as_float(ah[ks][q]));
                }
            }
            float e[BN / 2];
            asm volatile("wgmma.fence.sync.aligned;" : : : "memory");
#pragma unroll
            for (int ks = 0; ks < KC / 2; ++ks) {
                const unsigned long long bh = desc128(st + XB + ks * 32);
                const unsigned long long bl = desc128(st + XB + WB + ks * 32);
                wg_rs<BN>(e, al[ks], bh, ks > 0);
                wg_rs<BN>(e, ah[ks], bl, 1);
                wg_rs<BN>(e, ah[ks], bh, 1);
            }
            asm volatile("wgmma.commit_group.sync.aligned;" : : : "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;" : : : "memory");
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) d[i] += e[i];
        }
        /* both warpgroups are past slice kt - 1 (tf32) or kt: its stage is free */
        __syncthreads();
        if (tid == 0 && kt + ST - 1 < KT)
            issue(kt + ST - 1);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" : : : "memory");
    const int g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
        const int jb = i >> 2, row = m0 + wg * 64 + warp * 16 + g + ((i & 2) ? 8 : 0);
        const int col = n0 + jb * 8 + 2 * q + (i & 1);
        if (row < M) out[(size_t)row * N + col] = d[i] + fold[col];
    }
}

/* A 2-D tensor map over rows x K floats, boxes of 32 floats x box_rows, 128-byte swizzle. */
static CUtensorMap tmap(const float *p, int rows, int K, int box_rows)
{
    CUtensorMap m;
    cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)K * 4};
    cuuint32_t box[2] = {BK, (cuuint32_t)box_rows}, es[2] = {1, 1};
    CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)p, dims,
                                        strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                        CU_TENSOR_MAP_SWIZZLE_128B,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled: %d\n", (int)r);
        exit(1);
    }
    return m;
}

struct Args {
    const float *x, *wr, *wh, *wl, *w, *f;
    float *o;
    int M, N, K;
};

template <int MODE, int BN, int ST>
static void run_cp(const Args &a, size_t smem)
{
    const int grid = (a.M + BM - 1) / BM * (a.N / BN);
    wg_gemm<MODE, BN, ST><<<grid, 256, smem>>>(a.x, MODE == 2 ? a.wh : a.wr, a.wl, a.f, a.o, a.M, a.N, a.K);
}

template <int MODE, int BN, int ST, int MINB>
static void run_tma(const Args &a, size_t smem)
{
    /* maps built once per shape (host work, not timed after the first) */
    static const float *key = nullptr;
    static CUtensorMap mx, mw, ml;
    if (key != a.x) {
        mx = tmap(a.x, a.M, a.K, BM);
        mw = tmap(MODE == 2 ? a.wh : MODE == 4 ? a.w : a.wr, a.N, a.K, BN);
        ml = tmap(a.wl, a.N, a.K, BN);
        key = a.x;
    }
    const int grid = (a.M + BM - 1) / BM * (a.N / BN);
    tma_gemm<MODE, BN, ST, MINB><<<grid, 256, smem>>>(mx, mw, ml, a.f, a.o, a.M, a.N, a.K);
}

/* x rounded to TF32 (cvt.rn) into r: the pass a both-operands-in-shared-memory
 * TF32 GEMM would need before it to keep the TF32 mode's rounding of x. */
__global__ void round_x(const float4 *__restrict__ x, float4 *r, size_t n4)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
         i += (size_t)gridDim.x * blockDim.x) {
        float4 v = x[i];
        v.x = __uint_as_float(tf32_rn(v.x));
        v.y = __uint_as_float(tf32_rn(v.y));
        v.z = __uint_as_float(tf32_rn(v.z));
        v.w = __uint_as_float(tf32_rn(v.w));
        r[i] = v;
    }
}

struct Variant {
    const char *name;
    int mode, bn, st;
    bool tma;
    void (*run)(const Args &, size_t);
    const void *k;
};

static size_t smem_of(const Variant &v)
{
    return (size_t)v.st * (BM * BK * 4 + v.bn * BK * 4 * (v.mode == 2 || v.mode == 4 ? 2 : 1)) +
           (v.tma ? 1024 : 0);
}

#define CP(mode, bn, st) mode, bn, st, false, run_cp<mode, bn, st>, (const void *)wg_gemm<mode, bn, st>
#define TMA(mode, bn, st) mode, bn, st, true, run_tma<mode, bn, st, 1>, (const void *)tma_gemm<mode, bn, st, 1>
/* two blocks an SM, as the generated tiles run since 2026-11-27 */
#define TMA2(mode, bn, st) mode, bn, st, true, run_tma<mode, bn, st, 2>, (const void *)tma_gemm<mode, bn, st, 2>

static float host_tf32_rn(float f)
{
    unsigned u;
    memcpy(&u, &f, 4);
    u = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
    memcpy(&f, &u, 4);
    return f;
}

/* ./wgmma_probe [variant-substring [M]]: only those (for a profiler) */
int main(int argc, char **argv)
{
    const Variant vs[] = {
        {"cp 3xtf32 128x128 st4", CP(2, 128, 4)},
        {"cp tf32 128x256 st4", CP(1, 256, 4)},
        {"tma 3xtf32 128x128 st4", TMA(2, 128, 4)},
        {"tma 3xtf32 128x64 st6", TMA(2, 64, 6)},
        {"tma 3xtf32 split in smem 128x128 st4", TMA(4, 128, 4)},
        {"tma tf32 128x128 st6", TMA(1, 128, 6)},
        {"tma tf32 128x256 st4", TMA(1, 256, 4)},
        {"tma tf32ss 128x256 st4", TMA(3, 256, 4)},
        {"tma tf32 128x128 st3 2/SM", TMA2(1, 128, 3)},
        {"tma tf32ss 128x128 st3 2/SM", TMA2(3, 128, 3)},
    };
    const int shapes[][3] = {{6400, 2048, 512}, {6400, 4096, 1024}, {25600, 4096, 1024}};
    for (const auto &sh : shapes) {
        const int M = sh[0], N = sh[1], K = sh[2];
        if (argc > 2 && M != atoi(argv[2]))
            continue;
        std::vector<float> hx((size_t)M * K), hw((size_t)N * K), hf(N);
        srand(1);
        for (auto &v : hx) v = (float)rand() / RAND_MAX * 2.f - 1.f;
        for (auto &v : hw) v = ((float)rand() / RAND_MAX * 2.f - 1.f) / sqrtf((float)K);
        for (auto &v : hf) v = (float)rand() / RAND_MAX - 0.5f;
        std::vector<float> hr(hw.size()), hh(hw.size()), hl(hw.size());
        for (size_t i = 0; i < hw.size(); ++i) {
            hr[i] = host_tf32_rn(hw[i]);
            hh[i] = hr[i];
            hl[i] = hw[i] - hh[i];
        }
        float *x, *w, *wr, *wh, *wl, *f, *o;
        CK(cudaMalloc(&w, hw.size() * 4));
        CK(cudaMalloc(&x, hx.size() * 4));
        CK(cudaMalloc(&wr, hw.size() * 4));
        CK(cudaMalloc(&wh, hw.size() * 4));
        CK(cudaMalloc(&wl, hw.size() * 4));
        CK(cudaMalloc(&f, N * 4));
        CK(cudaMalloc(&o, (size_t)M * N * 4));
        CK(cudaMemcpy(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(w, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(wr, hr.data(), hw.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(wh, hh.data(), hw.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(wl, hl.data(), hw.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(f, hf.data(), N * 4, cudaMemcpyHostToDevice));
        std::vector<float> ho((size_t)M * N);
        for (const auto &v : vs) {
            if (argc > 1 && !strstr(v.name, argv[1]))
                continue;
            size_t smem = smem_of(v);
            CK(cudaFuncSetAttribute(v.k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            const Args args = {x, wr, wh, wl, w, f, o, M, N, K};
            CK(cudaMemset(o, 0xff, (size_t)M * N * 4)); /* poison: NaN */
            const double ms = median_ms([&] { v.run(args, smem); }, 3, 20);
            CK(cudaMemcpy(ho.data(), o, ho.size() * 4, cudaMemcpyDeviceToHost));
            double maxref = 0, maxerr = 0;
            for (int sI = 0; sI < 4000; ++sI) {
                const int r = (int)((long long)rand() * M / ((long long)RAND_MAX + 1));
                const int c = (int)((long long)rand() * N / ((long long)RAND_MAX + 1));
                double ref = hf[c];
                for (int k = 0; k < K; ++k) ref += (double)hx[(size_t)r * K + k] * hw[(size_t)c * K + k];
                maxref = std::max(maxref, fabs(ref));
                const double err = fabs((double)ho[(size_t)r * N + c] - ref);
                maxerr = std::max(maxerr, std::isnan(err) ? INFINITY : err);
            }
            printf("%-20s %5d x %4d x %4d  %8.3f ms %6.1f TFLOP/s  err %.2e\n", v.name, M, N, K, ms,
                   2.0 * M * N * K / ms * 1e-9, maxerr / maxref);
            fflush(stdout);
        }
        if (argc <= 1 || strstr("round", argv[1])) {
            float *r;
            CK(cudaMalloc(&r, hx.size() * 4));
            const size_t n4 = hx.size() / 4;
            const double ms =
                median_ms([&] { round_x<<<132 * 8, 256>>>((const float4 *)x, (float4 *)r, n4); }, 3, 20);
            printf("%-20s %5d x %4d         %8.3f ms %6.0f GB/s\n", "round x", M, K, ms,
                   2.0 * hx.size() * 4 / ms * 1e-6);
            CK(cudaFree(r));
        }
        CK(cudaFree(x));
        CK(cudaFree(w));
        CK(cudaFree(wr));
        CK(cudaFree(wh));
        CK(cudaFree(wl));
        CK(cudaFree(f));
        CK(cudaFree(o));
    }
    return 0;
}
