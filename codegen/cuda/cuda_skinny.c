/*
 * cuda_skinny.c: the hoisted GEMM for very few rows (T*B of a single step
 * or a short sequence, e.g. 64 rows at T = 1, B = 64).  The tiled GEMMs of
 * cuda_hoist.c walk K serially in slices: at 64 rows x 2048 columns x
 * K = 512 (2 us of FFMA over 132 SMs) the 32 x 64 tiles made 64 blocks
 * whose 16 dependent K slices (a global load, a shared store and a block
 * barrier each) ran 19.5 us.  Here a block owns a 32 x 32 output tile and
 * its 8 warps split K: warp w copies its own K slice of the tile's 32 rows
 * of x and 32 rows of W into its own shared region with cp.async (every
 * copy in flight at once, in four commit groups so the multiply starts on
 * the first quarter while the rest arrives), multiplies it with no block
 * barrier, and the 8 partial tiles are summed through shared memory before
 * the usual epilogue.  FFMA only (the tensor-core modes keep their tiles);
 * needs K and the weight's offset to be multiples of 4 (16-byte copies).
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

#define SK_BM 32 /* rows of T*B per block */
#define SK_BN 32 /* columns per block */
#define SK_WARPS 8

/* K columns of one warp's slice per pass: 64 where 136 KiB of shared
 * memory per block is allowed (sm_80, sm_90, sm_100), else 32 (69 KiB). */
static int slice_k(const cu_ctx *c)
{
    int sm = c->cfg.sm;
    return sm == 80 || sm == 90 || sm == 100 ? 64 : 32;
}

/* Floats of one shared row (a K slice padded by 4: 16-byte aligned rows
 * whose float4 reads by 8 consecutive rows hit distinct banks). */
static int row_pad(const cu_ctx *c)
{
    return slice_k(c) + 4;
}

void cu_emit_cp_helpers(const cu_ctx *c, cu_text *t)
{
    if (c->cfg.sm < 80)
        return;
    cu_printf(t, "/* cp.async (sm_80+): 16-byte copies global -> shared, zero-filled where !ok */\n");
    cu_printf(t,
              "__device__ __forceinline__ void rnnc_cp16(float *dst, const float *src, bool ok)\n{\n"
              "    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);\n"
              "    asm volatile(\"cp.async.cg.shared.global [%%0], [%%1], 16, %%2;\" : : \"r\"(d), "
              "\"l\"(src), \"r\"(ok ? 16 : 0) : \"memory\");\n}\n"
              "/* cp.async.wait_group takes a constant: n is one once the loop is unrolled */\n"
              "__device__ __forceinline__ void rnnc_cp_wait(int n)\n{\n"
              "    switch (n) {\n"
              "    case 0: asm volatile(\"cp.async.wait_group 0;\" : : : \"memory\"); break;\n"
              "    case 1: asm volatile(\"cp.async.wait_group 1;\" : : : \"memory\"); break;\n"
              "    case 2: asm volatile(\"cp.async.wait_group 2;\" : : : \"memory\"); break;\n"
              "    default: asm volatile(\"cp.async.wait_group 3;\" : : : \"memory\"); break;\n"
              "    }\n}\n");
}

bool cu_skinny_fits(const cu_ctx *c, int32_t lin)
{
    const ir_node *nd = &c->f->nodes[lin];
    long long K = (long long)c->cols[nd->a[0]];
    /* fp32 x only: a half model's GEMM reads 16-bit x; x itself, not a buffer of hz */
    return !c->half && c->cfg.math == 0 && c->cfg.sm >= 80 && K % 4 == 0 &&
           c->off[nd->a[1]] % 4 == 0 && !cu_gemm_staged(c, lin);
}

unsigned cu_skinny_smem(const cu_ctx *c)
{
    unsigned slices = (unsigned)(SK_WARPS * (SK_BM + SK_BN) * row_pad(c) * 4);
    unsigned red = (unsigned)(SK_WARPS * SK_BM * (SK_BN + 4) * 4);
    return slices > red ? slices : red;
}

/* Row count below which the skinny GEMM runs: while its grid stays within
 * about two waves of one block per SM, and at least 4 row tiles (128 rows:
 * T = 1 at B = 64 also where kernels are sized for half the SMs). */
unsigned cu_skinny_rows(const cu_ctx *c, int32_t lin)
{
    int sms = c->cfg.sm_count > 0 ? c->cfg.sm_count : 132;
    long long cb = (c->cols[lin] + SK_BN - 1) / SK_BN, tiles = 2LL * sms / cb;
    return (unsigned)(SK_BM * (tiles < 4 ? 4 : tiles));
}

/* The copies of the warp's slice (64 rows: 32 of x, 32 of W) in four
 * commit groups of kw4 float4 a row, 2 * kw4 copies per lane each; then
 * each group's multiply once it arrived. */
static void emit_slice(cu_text *t, int kw4)
{
    cu_printf(t,
              "#pragma unroll\n"
              "        for (int g = 0; g < 4; ++g) {\n"
              "#pragma unroll\n"
              "            for (int q = 0; q < %d; ++q) {\n"
              "                const int i = q * 32 + l, r = i / %d, kq = (g * %d + i %% %d) * 4;\n"
              "                const bool isx = r < 32;\n"
              "                const int gr = isx ? m0 + r : n0 + r - 32;\n"
              "                const bool ok = (isx ? gr < M : gr < N_) && kw + kq < K_;\n"
              "                const float *src = (isx ? x : wsrc) + (size_t)(ok ? gr : 0) * K_ + "
              "(ok ? kw + kq : 0);\n"
              "                rnnc_cp16(sl + r * KP + kq, src, ok);\n"
              "            }\n"
              "            asm volatile(\"cp.async.commit_group;\" : : : \"memory\");\n"
              "        }\n",
              2 * kw4, kw4, kw4, kw4);
    cu_printf(t,
              "#pragma unroll\n"
              "        for (int g = 0; g < 4; ++g) {\n"
              "            rnnc_cp_wait(3 - g);\n"
              "            __syncwarp();\n"
              "            if (kw >= K_) continue;\n"
              "#pragma unroll\n"
              "            for (int kk = g * %d; kk < g * %d + %d; kk += 4) {\n"
              "                float4 a[4], b[8];\n"
              "#pragma unroll\n"
              "                for (int i = 0; i < 4; ++i) a[i] = *(const float4 *)(sl + (ty + 8 * i) * KP + kk);\n"
              "#pragma unroll\n"
              "                for (int j = 0; j < 8; ++j) b[j] = *(const float4 *)(sl + (32 + tx + 4 * j) * KP + kk);\n"
              "#pragma unroll\n"
              "                for (int i = 0; i < 4; ++i)\n"
              "#pragma unroll\n"
              "                    for (int j = 0; j < 8; ++j) {\n"
              "                        c_[i][j] = fmaf(a[i].x, b[j].x, c_[i][j]);\n"
              "                        c_[i][j] = fmaf(a[i].y, b[j].y, c_[i][j]);\n"
              "                        c_[i][j] = fmaf(a[i].z, b[j].z, c_[i][j]);\n"
              "                        c_[i][j] = fmaf(a[i].w, b[j].w, c_[i][j]);\n"
              "                    }\n"
              "            }\n"
              "        }\n",
              kw4 * 4, kw4 * 4, kw4 * 4);
}

bool cu_emit_skinny(const cu_ctx *c, int i, cu_text *t)
{
    int32_t lin = c->tile[i].lin;
    const ir_node *nd = &c->f->nodes[lin];
    long long K = (long long)c->cols[nd->a[0]];
    int kw = slice_k(c), kw4 = kw / 16;
    char e[4096];
    cu_printf(t, "/* %s over few rows of T*B: tiles of %d x %d, K split over %d warps (%d columns "
                 "each per pass), partial tiles summed in shared memory */\n",
              cu_describe(c, lin, e, sizeof e), SK_BM, SK_BN, SK_WARPS, kw);
    cu_printf(t,
              "extern \"C\" __global__ void __launch_bounds__(256) rnnc_gemm%dk(" CG_CUDA_ARGS ")\n{\n"
              "    extern __shared__ float4 smem4_[];\n"
              "    float *sm_ = (float *)smem4_;\n"
              "    rnnc_pdl();\n"
              "    enum { KP = %d, K_ = %lld };\n"
              "    const int M = T * %lld, tid = threadIdx.x, w = tid >> 5, l = tid & 31;\n"
              "    const int ty = l >> 2, tx = l & 3;\n"
              "    const int m0 = blockIdx.x * %d, n0 = blockIdx.y * %d;\n"
              "    const size_t TB = (size_t)T * %lld;\n"
              "    (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)fold; (void)len; (void)rev;\n"
              "    const float *const wsrc = wts + %lld;\n"
              "    float *const sl = sm_ + w * (64 * KP); /* this warp's 32 rows of x, then 32 of W */\n"
              "    float c_[4][8];\n"
              "#pragma unroll\n"
              "    for (int i = 0; i < 4; ++i)\n"
              "#pragma unroll\n"
              "        for (int j = 0; j < 8; ++j) c_[i][j] = 0.f;\n"
              "    for (int k0 = 0; k0 < K_; k0 += %d) {\n"
              "        const int kw = k0 + w * %d;\n",
              (int)lin, row_pad(c), K, (long long)c->B, SK_BM, SK_BN, (long long)c->B,
              (long long)c->off[nd->a[1]], kw * SK_WARPS, kw);
    emit_slice(t, kw4);
    /* the next pass overwrites the slice: every lane is done reading it */
    cu_printf(t,
              "        __syncwarp();\n"
              "    }\n"
              "    __syncthreads();\n"
              "    /* the warps' partial tiles, rows padded to 36 floats (conflict-free stores) */\n"
              "    float *const red = sm_;\n"
              "#pragma unroll\n"
              "    for (int i = 0; i < 4; ++i)\n"
              "#pragma unroll\n"
              "        for (int j = 0; j < 8; ++j) red[(w * 32 + ty + 8 * i) * 36 + tx + 4 * j] = c_[i][j];\n"
              "    __syncthreads();\n"
              "    for (int e = tid; e < %d; e += 256) {\n"
              "        const int m = m0 + e / %d, col = n0 + e %% %d;\n"
              "        if (m >= M || col >= N_) continue;\n"
              "        float acc = 0.f;\n"
              "#pragma unroll\n"
              "        for (int v = 0; v < %d; ++v) acc += red[(v * 32 + e / %d) * 36 + e %% %d];\n"
              "        {\n",
              SK_BM * SK_BN, SK_BN, SK_BN, SK_WARPS, SK_BN, SK_BN);
    if (!cu_emit_gemm_stores(c, lin, t))
        return false;
    cu_printf(t, "        }\n    }\n}\n");
    return true;
}
