/*
 * cuda_wgmma.c: the large hoisted GEMM tiles of the TF32 math modes and of
 * the half models on sm_90 by warpgroup MMA (wgmma.mma_async, sm_90a),
 * their slices brought by the tensor memory accelerator.
 *
 * Why: the mma.sync tiles of cuda_gemm16.c copy each slice with 16-byte
 * cp.async by every thread; wgmma fed the same way was no faster (a third
 * of its stalls on the copies, a fifth on the LSU queue), fed by the TMA
 * it took the 3xtf32 GEMM of the LSTM at B = 64 from 0.23 to 0.174 ms and
 * the tf32 one at B = 256, I = H = 1024 from 1.69 to 0.92 ms on the H100
 * (bench/wgmma_probe.cu, bench/results/h100/wgmma-probe/).
 *
 * A block of 256 threads (two warpgroups of 64 rows) computes 128 x 128
 * outputs, two blocks an SM (97 KiB of shared memory each; 3xtf32 one, 193
 * KiB).  K goes in slices of 32 floats through 3 stages (3xtf32 4): thread
 * 0 puts a slice's boxes of x and W in flight (cp.async.bulk.tensor, 128-byte swizzle: row r's 16-byte chunk
 * c at r * 128 + ((c ^ r) & 7) * 16) counted by the stage's mbarrier;
 * after every warp is past a slice, a stage takes the slice stages - 1 ahead.
 * x's A fragments come from ldmatrix into registers; W is wgmma's B from
 * shared memory through a descriptor (K-major, 128-byte swizzle, 1024
 * bytes from one 8-row group to the next; a k-step of 8 floats is 32
 * bytes on in the start address).
 *   tf32: x rounded to nearest (cvt.rn) in registers, W read from a copy
 *     rounded once when the weights are set (CG_CUDA_TF32_RN): the
 *     tensor cores would truncate either.
 *   3xtf32: x split in registers (cuda_mma.c's rnnc_sp); W's high part is
 *     W itself (the tensor cores read its top 19 bits) and its low part a
 *     copy made when the weights are set (CG_CUDA_TF32_LO); a slice's
 *     products lo*hi + hi*lo + hi*hi summed from zero, then added to the
 *     accumulators in fp32 (the tensor cores' adds truncate).
 * A TF32 warpgroup waits for its slice's products before the next: with
 * x's fragments in registers a wgmma in flight still reads them, and ptxas
 * does not keep them intact (one slice in flight gave wrong products in
 * the probe).  A 16-bit slice stays in flight (emit_slice_half).
 *   16-bit (F16, BF16 models): slices of 64 values (the same 128 bytes),
 *     both operands read by descriptor (m64n128k16, x's 64 rows of the
 *     warpgroup 8 KB on in the stage), nothing to round; W as the arena
 *     holds it.  H100 against the 16-bit pipeline's mma.sync tiles
 *     (cuda_gemm16.c), same process: bf16 LSTM I = H = 1024 B = 256 2.53
 *     -> 2.28 ms, f16 2.55 -> 2.32, B = 64 0.79 -> 0.73, I = H = 512 B =
 *     64 0.41 -> 0.40, GRU 0.38 -> 0.36 (bench/results/h100/wgmma16/).
 *
 * Requires: sm_90 (NVRTC at sm_90a), K a multiple of a slice, the
 * linear's columns a multiple of 8 (the last tile's W rows past them come
 * as zeros from the tensor memory accelerator, which counts a box's
 * bytes whole, as it does for x's rows past T*B; the epilogue stores no
 * column past them), x the cell's input; the runtime's tensor maps
 * (cg_cuda_launch.tma), on 16-byte aligned x and weight slots
 * (cuda_analyse.c, the runtime's x copy and arena).  Keeps: the epilogue
 * of the other tiles.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

/* Stages of a tile's K pipeline, and blocks an SM.  TF32 and 16-bit tiles
 * take three stages (97 KB), so two blocks share an SM and one's
 * prologue, epilogue and block barriers overlap the other's products:
 * H100, against four stages and one block an SM in the same process, TF32
 * LSTM I = H = 1024 B = 256 2.67-2.71 -> 2.52 ms, I = H = 512 B = 64
 * 0.463-0.468 -> 0.451-0.458, bf16 B = 256 2.19-2.20 -> 2.15, bf16 I = H =
 * 1024 B = 64 level (bench/results/h100/gemm-2sm/); more stages at one
 * block an SM were slower (rejected/wgmma-stages/).  3xtf32's stages are
 * 48 KB: four, one block an SM. */
static int wg_stages(const cu_ctx *c)
{
    return c->cfg.math == 2 ? 4 : 3;
}

/* Blocks an SM, as __launch_bounds__ promises: two where the stages fit twice. */
static int wg_blocks(const cu_ctx *c)
{
    return c->cfg.math == 2 ? 1 : 2;
}

#define WG_SLICE 16384 /* bytes of one 128-row box of a slice (128 bytes of K) */

/* Bytes of one stage: a slice's boxes of x and W (3xtf32: and W's low part). */
static int stage_bytes(const cu_ctx *c)
{
    return WG_SLICE * (c->cfg.math == 2 ? 3 : 2);
}

/* Columns of K in a slice: 128 bytes of fp32 or 16-bit values. */
static int slice_k(const cu_ctx *c)
{
    return c->half ? 64 : 32;
}

bool cu_wgmma_shape_ok(const cu_ctx *c, int32_t lin)
{
    const ir_node *nd = &c->f->nodes[lin];
    long long K = (long long)c->cols[nd->a[0]], kw = slice_k(c);
    bool mode = c->half ? c->cfg.math == 0 : c->cfg.math != 0;
    return c->cfg.tma && c->cfg.sm == 90 && mode && K >= kw && K % kw == 0 &&
           c->cols[lin] % 8 == 0 && c->role[nd->a[0]] == CU_LEAF_INPUT;
}

/* The copy of W the tiles read: the TF32 modes' (the tensor cores
 * truncate what they read from shared memory), a half model's as it is. */
static int derived(const cu_ctx *c)
{
    return c->half ? CG_CUDA_AS_IS : c->cfg.math == 2 ? CG_CUDA_TF32_LO : CG_CUDA_TF32_RN;
}

rnnc_status cu_wgmma_place(cu_ctx *c, int32_t lin)
{
    int64_t off;
    return cu_place_weight_as(c, c->f->nodes[lin].a[1], derived(c), &off);
}

bool cu_wgmma_fits(const cu_ctx *c, const cu_tile *g)
{
    return cu_wgmma_shape_ok(c, g->lin) && !g->small && !g->skinny && !g->tail && g->bm == 128 &&
           g->bn == 128;
}

unsigned cu_wgmma_smem(const cu_ctx *c)
{
    return wg_stages(c) * stage_bytes(c) + 1024;
}

void cu_wgmma_launch(const cu_ctx *c, const cu_tile *g, cg_cuda_launch *l)
{
    const ir_node *nd = &c->f->nodes[g->lin];
    int64_t copy = cu_weight_at(c, nd->a[1], derived(c));
    l->tma = true;
    l->tma_k = (unsigned)c->cols[nd->a[0]];
    l->tma_n = (unsigned)c->cols[g->lin];
    l->tma_w = c->cfg.math == 2 ? c->off[nd->a[1]] : copy;
    l->tma_l = copy;
    l->tma_es = c->half ? 2 : 4;
}

static bool any_wgmma(const cu_ctx *c)
{
    if (c->wgstep)
        return true;
    for (int i = 0; i < c->plan->n_launch; i++)
        if (c->tile[i].lin >= 0 && c->tile[i].wg)
            return true;
    return false;
}

/* rnnc_wg128: d[64] (+)= a b, m64n128k8, a's fragment in registers, b by
 * descriptor; sd 0 writes, else adds. */
static void emit_wg128(cu_text *t)
{
    cu_printf(t,
              "__device__ __forceinline__ void rnnc_wg128(float *d, const unsigned *a, "
              "unsigned long long db, int sd)\n{\n"
              "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%69, 0;\\n\"\n"
              "                 \"wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {");
    for (int i = 0; i < 64; i++)
        cu_printf(t, "%s%%%d", i ? ", " : "", i);
    cu_printf(t, "}, {%%64, %%65, %%66, %%67}, %%68, p, 1, 1;\\n}\\n\"\n                 : ");
    for (int i = 0; i < 64; i++)
        cu_printf(t, "%s\"+f\"(d[%d])", i ? ", " : "", i);
    cu_printf(t,
              "\n                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(db), "
              "\"r\"(sd));\n}\n");
}

/* rnnc_wgh128: d[64] (+)= a b, m64n128k16 of 16-bit values, both by
 * descriptor (K-major); sd 0 writes, else adds. */
static void emit_wgh128(const cu_ctx *c, cu_text *t)
{
    const char *ty = c->cfg.dtype == RNNC_BF16 ? "bf16" : "f16";
    cu_printf(t,
              "__device__ __forceinline__ void rnnc_wgh128(float *d, unsigned long long da, "
              "unsigned long long db, int sd)\n{\n"
              "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%66, 0;\\n\"\n"
              "                 \"wgmma.mma_async.sync.aligned.m64n128k16.f32.%s.%s {",
              ty, ty);
    for (int i = 0; i < 64; i++)
        cu_printf(t, "%s%%%d", i ? ", " : "", i);
    cu_printf(t, "}, %%64, %%65, p, 1, 1, 0, 0;\\n}\\n\"\n                 : ");
    for (int i = 0; i < 64; i++)
        cu_printf(t, "%s\"+f\"(d[%d])", i ? ", " : "", i);
    cu_printf(t, "\n                 : \"l\"(da), \"l\"(db), \"r\"(sd));\n}\n");
}

void cu_emit_wgmma_helpers(const cu_ctx *c, cu_text *t)
{
    if (!any_wgmma(c))
        return;
    cu_printf(t,
              "/* a CUtensorMap, made by the runtime (cuTensorMapEncodeTiled) */\n"
              "struct __align__(64) rnnc_tmap { unsigned long long w_[16]; };\n"
              "/* wgmma's descriptor of a K-major operand, 128-byte swizzle, 8-row groups 1024 bytes apart */\n"
              "__device__ __forceinline__ unsigned long long rnnc_wdesc(const void *p)\n{\n"
              "    const unsigned long long a = (unsigned)__cvta_generic_to_shared(p);\n"
              "    return ((a & 0x3ffff) >> 4) | 1ull << 16 | (1024ull >> 4) << 32 | 1ull << 62;\n}\n"
              "__device__ __forceinline__ void rnnc_mbar_wait(unsigned long long *b, unsigned parity)\n{\n"
              "    const unsigned a = (unsigned)__cvta_generic_to_shared(b);\n"
              "    unsigned ok = 0;\n"
              "    while (!ok)\n"
              "        asm volatile(\"{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%%1], %%2;\\n\"\n"
              "                     \"selp.u32 %%0, 1, 0, p;\\n}\\n\" : \"=r\"(ok) : \"r\"(a), \"r\"(parity) : \"memory\");\n}\n"
              "/* box (c0: column, c1: row) of map m into dst, counted by mbarrier b */\n"
              "__device__ __forceinline__ void rnnc_tma2d(void *dst, const rnnc_tmap *m, int c0, int c1, "
              "unsigned long long *b)\n{\n"
              "    asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes\"\n"
              "                 \" [%%0], [%%1, {%%2, %%3}], [%%4];\"\n"
              "                 : : \"r\"((unsigned)__cvta_generic_to_shared(dst)), \"l\"((unsigned long long)m),\n"
              "                   \"r\"(c0), \"r\"(c1), \"r\"((unsigned)__cvta_generic_to_shared(b)) : \"memory\");\n}\n");
    if (c->half)
        emit_wgh128(c, t);
    else
        emit_wg128(t);
}

/* Shared memory aligned to 1024 bytes (the swizzle's period), the stage
 * barriers, and the first stages - 1 slices put in flight. */
static void emit_prologue(const cu_ctx *c, long long K, cu_text *t)
{
    int sb = stage_bytes(c);
    cu_printf(t,
              "    enum { K_ = %lld, KT_ = %lld / %d, SB_ = %d };\n"
              "    const size_t TB = (size_t)T * %lld;\n"
              "    (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)fold; (void)tx; (void)ty; "
              "(void)TB; (void)wts; (void)x;\n"
              "    unsigned char *const sm_ = smraw_ + ((1024u - ((unsigned)__cvta_generic_to_shared(smraw_) "
              "& 1023u)) & 1023u);\n"
              "    const int wg_ = tid >> 7, wp_ = (tid >> 5) & 3, l_ = tid & 31;\n"
              "    if (tid == 0) {\n"
              "        for (int s = 0; s < %d; ++s)\n"
              "            asm volatile(\"mbarrier.init.shared::cta.b64 [%%0], 1;\" : : "
              "\"r\"((unsigned)__cvta_generic_to_shared(&full_[s])) : \"memory\");\n"
              "        asm volatile(\"fence.mbarrier_init.release.cluster;\" : : : \"memory\");\n"
              "    }\n"
              "    __syncthreads();\n"
              "#define ISSUE_(kt) { \\\n"
              "    const int sn_ = (kt) %% %d; \\\n"
              "    unsigned char *const sd_ = sm_ + sn_ * SB_; \\\n"
              "    asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%%0], %%1;\" : : "
              "\"r\"((unsigned)__cvta_generic_to_shared(&full_[sn_])), \"r\"(SB_) : \"memory\"); \\\n"
              "    rnnc_tma2d(sd_, &tx_, (kt) * %d, m0, &full_[sn_]); \\\n"
              "    rnnc_tma2d(sd_ + %d, &tw_, (kt) * %d, n0, &full_[sn_]); \\\n",
              K, K, slice_k(c), sb, (long long)c->B, wg_stages(c), wg_stages(c), slice_k(c), WG_SLICE,
              slice_k(c));
    if (c->cfg.math == 2)
        cu_printf(t, "    rnnc_tma2d(sd_ + %d, &tl_, (kt) * 32, n0, &full_[sn_]); \\\n", 2 * WG_SLICE);
    cu_printf(t,
              "}\n"
              "    if (tid == 0) {\n"
              "        for (int kt = 0; kt < %d && kt < KT_; ++kt) ISSUE_(kt)\n"
              "    }\n"
              "    float d_[64];\n"
              "#pragma unroll\n"
              "    for (int i = 0; i < 64; ++i) d_[i] = 0.f;\n",
              wg_stages(c) - 1);
    if (c->half)
        cu_printf(t, "    (void)wp_; (void)l_;\n");
    else
        cu_printf(t, "    /* ldmatrix rows: lanes 8j..8j+7 the rows of matrix j (rows + 8 for odd j, "
                     "the second 4 floats for j >= 2) */\n"
                     "    const int j_ = l_ >> 3, r_ = wg_ * 64 + wp_ * 16 + (j_ & 1) * 8 + (l_ & 7);\n");
}

/* A 16-bit slice: both operands by descriptor, the warpgroup's 64 rows
 * of x 8 KB on in the stage; four k-steps of 16 values (32 bytes).  Its
 * products stay in flight while the warps pass the block barrier and the
 * next slice is waited for: wait_group 1 leaves the slice before complete,
 * whose stage the refill then takes.  H100, same tiles waiting for each
 * slice's products: bf16 LSTM I = H = 1024 B = 256 2.28 -> 2.19-2.22 ms,
 * f16 2.32 -> 2.23-2.24, bf16 I = H = 1024 B = 64 0.73 -> 0.69-0.71
 * (bench/results/h100/half-inflight/).  TF32's x fragments come from registers,
 * which a wgmma in flight still reads (below); rounding x in shared
 * memory instead, to keep a TF32 slice in flight, was slower (GEMM 1.06
 * -> 1.16 ms at B = 256). */
static void emit_slice_half(const cu_ctx *c, cu_text *t)
{
    cu_printf(t,
              "    for (int kt = 0; kt < KT_; ++kt) {\n"
              "        rnnc_mbar_wait(&full_[kt %% %d], (unsigned)(kt / %d) & 1u);\n"
              "        unsigned char *const s_ = sm_ + (kt %% %d) * SB_;\n"
              "        asm volatile(\"wgmma.fence.sync.aligned;\" : : : \"memory\");\n"
              "#pragma unroll\n"
              "        for (int ks = 0; ks < 4; ++ks) rnnc_wgh128(d_, rnnc_wdesc(s_ + wg_ * 8192 + ks * 32), "
              "rnnc_wdesc(s_ + %d + ks * 32), 1);\n"
              "        asm volatile(\"wgmma.commit_group.sync.aligned;\" : : : \"memory\");\n"
              "        asm volatile(\"wgmma.wait_group.sync.aligned 1;\" : : : \"memory\");\n",
              wg_stages(c), wg_stages(c), wg_stages(c), WG_SLICE);
}

/* A TF32 slice's products into d_ (tf32) or through e_ (3xtf32). */
static void emit_slice_tf32(const cu_ctx *c, cu_text *t)
{
    cu_printf(t,
              "    for (int kt = 0; kt < KT_; ++kt) {\n"
              "        rnnc_mbar_wait(&full_[kt %% %d], (unsigned)(kt / %d) & 1u);\n"
              "        unsigned char *const s_ = sm_ + (kt %% %d) * SB_;\n"
              "        unsigned ah_[4][4], al_[4][4];\n"
              "#pragma unroll\n"
              "        for (int ks = 0; ks < 4; ++ks) {\n"
              "            unsigned a_[4];\n"
              "            rnnc_ldsm4(a_, s_ + r_ * 128 + (((2 * ks + (j_ >> 1)) ^ r_) & 7) * 16);\n"
              "#pragma unroll\n"
              "            for (int q = 0; q < 4; ++q) rnnc_sp(__uint_as_float(a_[q]), ah_[ks][q], al_[ks][q]);\n"
              "        }\n",
              wg_stages(c), wg_stages(c), wg_stages(c));
    if (c->cfg.math == 2)
        cu_printf(t,
                  "        float e_[64];\n"
                  "        asm volatile(\"wgmma.fence.sync.aligned;\" : : : \"memory\");\n"
                  "#pragma unroll\n"
                  "        for (int ks = 0; ks < 4; ++ks) {\n"
                  "            const unsigned long long bh_ = rnnc_wdesc(s_ + %d + ks * 32), "
                  "bl_ = rnnc_wdesc(s_ + %d + ks * 32);\n"
                  "            rnnc_wg128(e_, al_[ks], bh_, ks > 0);\n"
                  "            rnnc_wg128(e_, ah_[ks], bl_, 1);\n"
                  "            rnnc_wg128(e_, ah_[ks], bh_, 1);\n"
                  "        }\n"
                  "        asm volatile(\"wgmma.commit_group.sync.aligned;\" : : : \"memory\");\n"
                  "        asm volatile(\"wgmma.wait_group.sync.aligned 0;\" : : : \"memory\");\n"
                  "#pragma unroll\n"
                  "        for (int i = 0; i < 64; ++i) d_[i] += e_[i];\n",
                  WG_SLICE, 2 * WG_SLICE);
    else
        cu_printf(t,
                  "        (void)al_;\n"
                  "        asm volatile(\"wgmma.fence.sync.aligned;\" : : : \"memory\");\n"
                  "#pragma unroll\n"
                  "        for (int ks = 0; ks < 4; ++ks) rnnc_wg128(d_, ah_[ks], rnnc_wdesc(s_ + %d + ks * 32), 1);\n"
                  "        asm volatile(\"wgmma.commit_group.sync.aligned;\" : : : \"memory\");\n"
                  "        asm volatile(\"wgmma.wait_group.sync.aligned 0;\" : : : \"memory\");\n",
                  WG_SLICE);
}

/* The K loop: each slice's products, then its stage refilled. */
static void emit_slices(const cu_ctx *c, cu_text *t)
{
    if (c->half)
        emit_slice_half(c, t);
    else
        emit_slice_tf32(c, t);
    /* the stage of slice kt - 1 (16-bit: complete after wait_group 1), else kt */
    cu_printf(t,
              "        __syncthreads(); /* every warp is past the slice: its stage is free */\n"
              "        if (tid == 0 && kt + %d < KT_) {\n"
              "            ISSUE_(kt + %d)\n"
              "        }\n"
              "    }\n"
              "#undef ISSUE_\n"
              "%s",
              wg_stages(c) - 1, wg_stages(c) - 1,
              c->half ? "    asm volatile(\"wgmma.wait_group.sync.aligned 0;\" : : : \"memory\");\n" : "");
}

bool cu_emit_wgmma(const cu_ctx *c, int i, cu_text *t)
{
    cu_tile g = c->tile[i];
    const ir_node *nd = &c->f->nodes[g.lin];
    long long K = (long long)c->cols[nd->a[0]];
    char e[4096];
    if (g.split.wave)
        cu_emit_gemm_rows(&g, t);
    cu_printf(t,
              "/* %s over %s: tiles of 128 x 128, slices of %s brought by the tensor memory "
              "accelerator (%d stages), wgmma m64n128k%d %s */\n"
              "extern \"C\" __global__ void __launch_bounds__(256, %d) rnnc_gemm%d(%s, "
              "const __grid_constant__ rnnc_tmap tx_, const __grid_constant__ rnnc_tmap tw_, "
              "const __grid_constant__ rnnc_tmap tl_)\n{\n"
              "    extern __shared__ unsigned char smraw_[];\n"
              "    __shared__ unsigned long long full_[%d];\n"
              "    (void)tl_;\n",
              cu_describe(c, g.lin, e, sizeof e),
              g.split.wave ? "the rows of whole waves" : "all T*B rows",
              c->half ? "64 16-bit values" : "32 floats", wg_stages(c), c->half ? 16 : 8,
              c->half ? (c->cfg.dtype == RNNC_BF16 ? "bf16" : "f16") : c->cfg.math == 2 ? "3xtf32" : "tf32",
              wg_blocks(c), (int)g.lin, cu_args(c), wg_stages(c));
    cu_emit_gemm_head(c, &g, t);
    emit_prologue(c, K, t);
    emit_slices(c, t);
    /* accumulator 4 jb + 2 h + e: row g (+8 for h), column 8 jb + 2q + e */
    cu_printf(t,
              "    float c_[2][32];\n"
              "#pragma unroll\n"
              "    for (int jb = 0; jb < 16; ++jb)\n"
              "#pragma unroll\n"
              "        for (int h = 0; h < 2; ++h) {\n"
              "            c_[h][2 * jb] = d_[4 * jb + 2 * h];\n"
              "            c_[h][2 * jb + 1] = d_[4 * jb + 2 * h + 1];\n"
              "        }\n");
    if (!cu_emit_gemm_epilogue(c, g.lin, 2, 32, 2,
                               "wg_ * 64 + wp_ * 16 + i * 8 + (l_ >> 2)",
                               "(j >> 1) * 8 + 2 * (l_ & 3) + (j & 1)", true, t))
        return false;
    cu_printf(t, "}\n");
    return true;
}
