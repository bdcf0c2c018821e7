/*
 * cuda_gemm16.c: the large-tile hoisted GEMM on tensor cores on sm_80 and
 * later, its slices moved by 16-byte cp.async copies: a half-precision
 * model's (F16, BF16) kept in 16 bits from global memory to the tensor
 * cores, and the TF32 math modes' (tf32, 3xtf32) in fp32.
 *
 * The generic tiles (cuda_hoist.c) hold the slices k-major in shared
 * memory and pack each fragment from scalar loads (a half model's inputs
 * widened to fp32 and narrowed back) through one register stage.  Here a
 * 128 x 128 tile walks K in slices of 64 bytes a row (32 halves, 16
 * floats) through a 4-stage cp.async pipeline (three slices in flight
 * while one is multiplied); the slices keep K contiguous (x rows and W
 * rows both, which is what mma's "row.col" layout wants), fragments come
 * from ldmatrix.x4 (TF32 ones as 8 x 4 matrices of 32-bit words) and the
 * products are m16n8k16 (16-bit) or m16n8k8 (TF32, operands rounded or
 * split as cuda_mma.c says).  Rows are padded to 80 bytes: the eight
 * 16-byte rows of one ldmatrix phase then fall on distinct banks.
 *
 * Requires: K a whole number of 16-byte chunks (8 halves, 4 floats).  x
 * and the weight are checked for 16-byte alignment at run time and take
 * plain loads where not (the runtime copies a caller's unaligned x, but a
 * weight's offset in the arena is not padded).
 * Keeps: the accumulator layout of the other tensor-core tiles
 * (cu_mma_gemm_layout), so the epilogue is theirs.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

#define G16_BM 128
#define G16_BN 128
#define G16_ROW 64  /* bytes of K a slice's row */
#define G16_PAD 16  /* bytes of padding a shared row */
#define G16_STAGES 4

/* The element's shape: its type, K columns a slice (bk) and a padded
 * shared row (kp), values a 16-byte chunk (ch), K columns a k-step (kw:
 * an mma's K, two chunks: 16 halves or 8 floats). */
typedef struct g16_kind {
    const char *ty;
    int bk, kp, ch, kw;
} g16_kind;

static g16_kind kind(const cu_ctx *c)
{
    int e = c->half ? 2 : 4;
    return (g16_kind){c->half ? "rnnc_h" : "float", G16_ROW / e, (G16_ROW + G16_PAD) / e, 16 / e,
                      32 / e};
}

bool cu_gemm16_fits(const cu_ctx *c, const cu_tile *g)
{
    long long K = (long long)c->cols[c->f->nodes[g->lin].a[0]];
    /* cp.async: sm_80 for the TF32 modes too; x itself (16-bit in a half
     * model), not a buffer of hz */
    return cu_tensor_cores(c) && c->cfg.sm >= 80 && K % kind(c).ch == 0 && !g->small && !g->skinny && !g->tail &&
           g->bm == G16_BM && g->bn == G16_BN && !cu_gemm_staged(c, g->lin);
}

unsigned cu_gemm16_smem(void)
{
    return (unsigned)(G16_STAGES * (G16_BM + G16_BN) * (G16_ROW + G16_PAD));
}

/* Each thread's four 16-byte chunks of a slice (4 chunks a 64-byte
 * row): rows r and r + 64 of x (q = 0, 1) and of W (q = 2, 3) at chunk
 * column tid & 3, fixed for the whole K walk, in few registers: one row
 * start each in x and W (clamped to a row that exists) and one shared
 * offset. */
static void emit_chunks(const g16_kind *k, cu_text *t)
{
    cu_printf(t,
              "    const int r0_ = tid >> 2, kc_ = (tid & 3) * %d, dst_ = r0_ * %d + kc_;\n"
              "    const %s *const sx_ = x + (size_t)min(m0 + r0_, M - 1) * K_ + kc_;\n"
              "    const %s *const sw_ = wsrc_ + (size_t)min(n0 + r0_, N_ - 1) * K_ + kc_;\n",
              k->ch, k->kp, k->ty, k->ty);
}

/* LOAD_(s, kt): slice kt into stage s, zero-filled past M, N and K (the
 * K test only where K is not a whole number of slices).  Where a pointer
 * is not 16-byte aligned the chunks go through registers instead (same
 * zeros, no cp.async). */
static void emit_load(const g16_kind *k, long long K, cu_text *t)
{
    char kcheck[96] = "", plain[320];
    if (K % k->bk)
        snprintf(kcheck, sizeof kcheck, " && (kt) * %d + kc_ < K_", k->bk);
    if (k->ch == 8)
        snprintf(plain, sizeof plain,
                 "        else { uint4 v_ = make_uint4(0u, 0u, 0u, 0u); \\\n"
                 "            if (ok_) { unsigned h_[8]; for (int e_ = 0; e_ < 8; ++e_) h_[e_] = __ldg(s_ + e_); \\\n"
                 "                v_ = make_uint4(h_[0] | h_[1] << 16, h_[2] | h_[3] << 16, h_[4] | h_[5] << 16, h_[6] | h_[7] << 16); } \\\n"
                 "            *(uint4 *)d_ = v_; } \\\n");
    else
        snprintf(plain, sizeof plain,
                 "        else { float4 v_ = make_float4(0.f, 0.f, 0.f, 0.f); \\\n"
                 "            if (ok_) v_ = make_float4(__ldg(s_), __ldg(s_ + 1), __ldg(s_ + 2), __ldg(s_ + 3)); \\\n"
                 "            *(float4 *)d_ = v_; } \\\n");
    cu_printf(t,
              "#define LOAD_(s, kt) { \\\n"
              "    _Pragma(\"unroll\") for (int q_ = 0; q_ < 4; ++q_) { \\\n"
              "        const int r_ = (q_ & 1) * 64; \\\n"
              "        const bool ok_ = (q_ < 2 ? m0 + r0_ + r_ < M : n0 + r0_ + r_ < N_)%s; \\\n"
              "        const %s *const s_ = (q_ < 2 ? sx_ : sw_) + (ok_ ? r_ * K_ + (kt) * %d : 0); \\\n"
              "        %s *const d_ = As_ + dst_ + (q_ >> 1) * %d + r_ * %d + (s) * %d; \\\n"
              "        if (al_) rnnc_cp16((float *)d_, (const float *)s_, ok_); \\\n"
              "%s"
              "    } \\\n"
              "    asm volatile(\"cp.async.commit_group;\" : : : \"memory\"); \\\n"
              "}\n",
              kcheck, k->ty, k->bk, k->ty, G16_STAGES * G16_BM * k->kp, k->kp, G16_BM * k->kp,
              plain);
}

/* The products of one k-step: 16-bit ones straight from the fragments;
 * TF32 ones rounded (tf32) or split (3xtf32) first, W's per 8-column tile
 * so that few parts are live at once. */
static void emit_products(const cu_ctx *c, cu_text *t)
{
    if (c->half) {
        cu_printf(t,
                  "#pragma unroll\n"
                  "            for (int i = 0; i < 2; ++i)\n"
                  "#pragma unroll\n"
                  "                for (int j = 0; j < 8; ++j)\n"
                  "                    rnnc_mma16(c_[2 * i][2 * j], c_[2 * i][2 * j + 1], c_[2 * i + 1][2 * j], "
                  "c_[2 * i + 1][2 * j + 1], a_[i][0], a_[i][1], a_[i][2], a_[i][3], b_[j][0], b_[j][1]);\n");
        return;
    }
    cu_printf(t,
              "            unsigned ah_[2][4], al_[2][4];\n"
              "#pragma unroll\n"
              "            for (int i = 0; i < 2; ++i)\n"
              "#pragma unroll\n"
              "                for (int e = 0; e < 4; ++e) rnnc_sp(__uint_as_float(a_[i][e]), ah_[i][e], al_[i][e]);\n"
              "#pragma unroll\n"
              "            for (int j = 0; j < 8; ++j) {\n"
              "                unsigned bh_[2], bl_[2];\n"
              "                rnnc_sp(__uint_as_float(b_[j][0]), bh_[0], bl_[0]);\n"
              "                rnnc_sp(__uint_as_float(b_[j][1]), bh_[1], bl_[1]);\n"
              "#pragma unroll\n"
              "                for (int i = 0; i < 2; ++i)\n"
              "                    rnnc_mma3(c_[2 * i][2 * j], c_[2 * i][2 * j + 1], c_[2 * i + 1][2 * j], "
              "c_[2 * i + 1][2 * j + 1], ah_[i], al_[i], bh_, bl_);\n"
              "            }\n");
}

/* One slice (stage s) of the warp's 32 x 64 sub-tile: per k-step (16
 * halves, 8 floats), two ldmatrix.x4 of x (the A fragments of two 16-row
 * tiles) and four of W (the B fragments of eight 8-column tiles), then 16
 * products.  Lane l points ldmatrix at row l % 16, 16-byte column l / 16 of
 * A, and at row (l % 8) + (l / 16) * 8, 16-byte column (l / 8) % 2 of W:
 * the four 8 x 8 matrices of 16-bit values (8 x 4 of 32-bit ones) then land
 * in the registers in fragment order (PTX ISA, "Matrix fragments for
 * mma.m16n8k16" and "mma.m16n8k8" with .tf32). */
static void emit_slice(const cu_ctx *c, const g16_kind *k, cu_text *t)
{
    cu_printf(t,
              "        const %s *const a_s = As_ + (s_ * %d + wr_ + (l_ & 15)) * %d + (l_ >> 4) * %d;\n"
              "        const %s *const w_s = Ws_ + (s_ * %d + wc_ + (l_ & 7) + (l_ >> 4) * 8) * %d + "
              "((l_ >> 3) & 1) * %d;\n"
              "#pragma unroll\n"
              "        for (int kk = 0; kk < %d; kk += %d) {\n"
              "            unsigned a_[2][4], b_[8][2];\n"
              "#pragma unroll\n"
              "            for (int i = 0; i < 2; ++i) rnnc_ldsm4(a_[i], a_s + i * 16 * %d + kk);\n"
              "#pragma unroll\n"
              "            for (int j = 0; j < 4; ++j) {\n"
              "                unsigned r_[4];\n"
              "                rnnc_ldsm4(r_, w_s + j * 16 * %d + kk);\n"
              "                b_[2 * j][0] = r_[0]; b_[2 * j][1] = r_[1];\n"
              "                b_[2 * j + 1][0] = r_[2]; b_[2 * j + 1][1] = r_[3];\n"
              "            }\n",
              k->ty, G16_BM, k->kp, k->ch, k->ty, G16_BN, k->kp, k->ch, k->bk, k->kw, k->kp,
              k->kp);
    emit_products(c, t);
    cu_printf(t, "        }\n");
}

/* The pipeline: stages 0..S-2 loaded ahead; at slice kt, wait until slice
 * kt has landed (at most S-2 younger groups pending), one block barrier
 * (every warp is also done with slice kt-1, whose stage the next load
 * takes), put slice kt+S-1 in flight, multiply slice kt.  Every trip
 * commits a group, empty or not, so the wait's count stays exact. */
static void emit_pipeline(const cu_ctx *c, const g16_kind *k, cu_text *t)
{
    cu_printf(t,
              "    for (int s = 0; s < %d; ++s) {\n"
              "        if (s < KT_) LOAD_(s, s) else asm volatile(\"cp.async.commit_group;\" : : : \"memory\");\n"
              "    }\n"
              "    for (int kt = 0; kt < KT_; ++kt) {\n"
              "        asm volatile(\"cp.async.wait_group %d;\" : : : \"memory\");\n"
              "        __syncthreads();\n"
              "        {\n"
              "            const int nk_ = kt + %d;\n"
              "            if (nk_ < KT_) LOAD_(nk_ %% %d, nk_) else asm volatile(\"cp.async.commit_group;\" : : : \"memory\");\n"
              "        }\n"
              "        const int s_ = kt %% %d;\n",
              G16_STAGES - 1, G16_STAGES - 2, G16_STAGES - 1, G16_STAGES, G16_STAGES);
    emit_slice(c, k, t);
    cu_printf(t, "    }\n    asm volatile(\"cp.async.wait_all;\" : : : \"memory\");\n#undef LOAD_\n");
}

bool cu_emit_gemm16(const cu_ctx *c, int i, cu_text *t)
{
    cu_tile g = c->tile[i];
    const ir_node *nd = &c->f->nodes[g.lin];
    long long K = (long long)c->cols[nd->a[0]];
    char e[4096], ri[160], ci[160];
    g16_kind k = kind(c);
    cu_mma_gemm_layout(g.bm, g.bn, &g.tm, &g.tn, ri, ci, sizeof ri);
    if (g.split.wave)
        cu_emit_gemm_rows(&g, t);
    cu_printf(t,
              "/* %s over %s: tiles of %d x %d, %s slices of %d columns through a %d-stage "
              "cp.async pipeline, ldmatrix, mma %s */\n",
              cu_describe(c, g.lin, e, sizeof e),
              g.split.wave ? "the rows of whole waves" : "all T*B rows", g.bm, g.bn,
              c->half ? "16-bit" : "fp32", k.bk, G16_STAGES, c->half ? "m16n8k16" : "m16n8k8 tf32");
    cu_printf(t,
              "extern \"C\" __global__ void __launch_bounds__(256, 2) rnnc_gemm%d(%s)\n{\n"
              "    extern __shared__ float4 smem4_[];\n"
              "    %s *const As_ = (%s *)smem4_; /* [stage][row][k] */\n"
              "    %s *const Ws_ = As_ + %d * %d;\n",
              (int)g.lin, cu_args(c), k.ty, k.ty, k.ty, G16_STAGES * G16_BM, k.kp);
    cu_emit_gemm_head(c, &g, t);
    cu_printf(t,
              "    enum { K_ = %lld, KT_ = (%lld + %d) / %d };\n"
              "    const size_t TB = (size_t)T * %lld;\n"
              "    (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)fold; (void)tx; (void)ty; (void)TB;\n"
              "    const %s *const wsrc_ = wts + %lld;\n"
              "    const bool al_ = (((size_t)x | (size_t)wsrc_) & 15) == 0;\n"
              "    const int l_ = tid & 31;\n"
              "    const int wr_ = (tid >> 5) / 2 * 32, wc_ = (tid >> 5) %% 2 * 64;\n"
              "    float c_[%d][%d];\n"
              "#pragma unroll\n"
              "    for (int i = 0; i < %d; ++i)\n"
              "#pragma unroll\n"
              "        for (int j = 0; j < %d; ++j) c_[i][j] = 0.f;\n",
              K, K, k.bk - 1, k.bk, (long long)c->B, k.ty, (long long)c->off[nd->a[1]], g.tm,
              g.tn, g.tm, g.tn);
    emit_chunks(&k, t);
    emit_load(&k, K, t);
    emit_pipeline(c, &k, t);
    if (!cu_emit_gemm_epilogue(c, g.lin, g.tm, g.tn, 2, ri, ci, false, t))
        return false;
    cu_printf(t, "}\n");
    return true;
}
