/*
 * cuda_outer.c: the bulk-staged step linear on the FFMA pipes as outer
 * products, the way the hoisted GEMM's tile multiplies.
 * Requires: cu_choose_tiles chose c->outer (cuda_tile.c): a thread owns RR
 * rows x BB batch rows, the ks[lin] groups of (R / RR) (BTP / BB) threads
 * split each chunk's K; W's slice is k-major at SM_W<lin> ([K][R], copied
 * by cu_emit_outer_weights) and h's chunks k-major in the chunk buffers
 * ([KC][BTP], cuda_bulk.c).  Keeps: the result in SM_L<lin> ([row][BTP +
 * 1]), where the element phase reads it, as cuda_ffma.c leaves it.
 *
 * Why.  cuda_ffma.c's lanes read float4s along k (RR + BB 16-byte words
 * for 4 RR BB FMAs), which keeps 4 (RR + BB) operand registers live: 8 x 8
 * tiles do not fit the 128 registers of 512 threads, and at 256 threads
 * (two warps a scheduler) the multiply of the LSTM at I = H = 1024, B =
 * 256 ran at 57% of the FMA rate on the H200, 60% with no copies at all.
 * Here a thread reads, per k, RR and BB consecutive words (runs of 4 per
 * float4) and keeps RR + BB operand registers: 8 x 8 tiles at 512
 * threads, four warps a scheduler, and a warp's loads are 2 + 2 16-byte
 * words over 4 distinct addresses of W and 8 of h, one shared-memory
 * wavefront each.  The groups' sums meet in the chunk buffers once the
 * chunks are done.  H200, that LSTM: the step 133.2 K -> 117.5 K cycles,
 * the forward 11.54 -> 10.93 ms (bench/results/h200/outer/).
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

static const char *const q4[4] = {"x", "y", "z", "w"};

/* A thread's tile: its rows in runs of 4 spread over the slice, run p at
 * p row_run + rc_ * 4, so the threads of a warp read consecutive words;
 * its batch rows likewise (col_run, bc_). */
static int row_run(const cu_ctx *c, int32_t lin)
{
    return cu_slice_rows(c, lin) / (c->RR / 4);
}

static int col_run(const cu_ctx *c)
{
    return c->BTP / (c->BB / 4);
}

/* Row i of the tile, batch row j. */
static void tile_row(const cu_ctx *c, int32_t lin, int i, char *buf, size_t n)
{
    snprintf(buf, n, "%d + rc_ * 4", i / 4 * row_run(c, lin) + i % 4);
}

static void tile_col(const cu_ctx *c, int j, char *buf, size_t n)
{
    snprintf(buf, n, "%d + bc_ * 4", j / 4 * col_run(c) + j % 4);
}

/* Values of a thread's tile, and the floats of the partial-sum slots of
 * each level of the groups' reduce-scatter (level l: every thread writes
 * half of the n / 2^l values it holds). */
static int tile_values(const cu_ctx *c)
{
    return c->RR * c->BB;
}

static int64_t level_floats(const cu_ctx *c, int l)
{
    return (int64_t)c->NT * (tile_values(c) >> (l + 1));
}

/* FFMA (the wgmma steps are tensor cores; cu_bulk_linear takes no half
 * model, no streamed weights, and chunks of 32 to 128 columns dividing
 * K), tiles of runs of 4, the groups filling the block. */
bool cu_outer_fits(const cu_ctx *c)
{
    int32_t lin = c->bulk_lin;
    if (!c->bulk || c->mma)
        return false;
    int64_t R = cu_slice_rows(c, lin), cells = (R / c->RR) * (c->BTP / c->BB);
    return c->RR % 4 == 0 && c->BB % 4 == 0 && R % c->RR == 0 && c->BTP % c->BB == 0 &&
           cells * c->ks[lin] == c->NT && c->kc[lin] % c->ks[lin] == 0;
}

/* The reduce-scatter's slots (emit_sums) fit the chunk buffers, SM_L
 * lying over them only where the last level's slots do not; each level
 * writes whole 16-byte words. */
bool cu_outer_partials_fit(const cu_ctx *c)
{
    int32_t lin = c->bulk_lin;
    int G = c->ks[lin];
    int64_t at = 0, last = 0;
    if (tile_values(c) % (4 * G))
        return false;
    for (int l = 0; (1 << l) < G; l++) {
        last = at;
        at += level_floats(c, l);
    }
    bool over = c->sm[lin] < c->xs_floats;
    return at <= c->xs_floats &&
           (!over || c->sm[lin] + (int64_t)cu_slice_rows(c, lin) * (c->BTP + 1) <= last || G == 1);
}

/* The block's slice k-major: 16-byte loads along a row of W, four words
 * stored down a column; consecutive threads take consecutive rows, so the
 * stores of a warp fall on distinct banks.  Once, before step 0. */
void cu_emit_outer_weights(const cu_ctx *c, int32_t lin, cu_text *t)
{
    int32_t w = c->f->nodes[lin].a[1];
    long long K = (long long)cu_kdim(c, lin), R = cu_slice_rows(c, lin);
    cu_printf(t,
              "#pragma unroll 4\n"
              "    for (int i = tid; i < %lld; i += NT) {\n"
              "        const int r = i %% %lld, k4 = i / %lld, s = r / UT, gu = u0 + r %% UT;\n"
              "        float4 v_ = make_float4(0.f, 0.f, 0.f, 0.f);\n"
              "        if (gu < H) v_ = __ldg((const float4 *)(wts + %lld + (size_t)(s * H + gu) * "
              "%lld + k4 * 4));\n"
              "        float *const d_ = &sm_[SM_W%d + k4 * %lld + r];\n"
              "        d_[0] = v_.x; d_[%lld] = v_.y; d_[%lld] = v_.z; d_[%lld] = v_.w;\n"
              "    }\n",
              R * (K / 4), R, R, (long long)c->off[w], K, (int)lin, 4 * R, R, 2 * R, 3 * R);
}

/* One chunk's products: the group's KC / ks columns of it. */
static void emit_products(const cu_ctx *c, int32_t lin, cu_text *t)
{
    int R = cu_slice_rows(c, lin), KG = c->kc[lin] / c->ks[lin];
    char r[48], b[48];
    cu_printf(t,
              "        const float *const wc_ = sm_ + SM_W%d + ch_ * KCB * %d, *const xc_ = sm_ + xo_;\n"
              "#pragma unroll\n"
              "        for (int kq_ = 0; kq_ < %d; ++kq_) {\n"
              "            const int k = g_ * %d + kq_;\n",
              (int)lin, R, KG, KG);
    for (int p = 0; p < c->RR / 4; p++) {
        tile_row(c, lin, 4 * p, r, sizeof r);
        cu_printf(t, "            const float4 w%d = *(const float4 *)&wc_[k * %d + %s];\n", p, R, r);
    }
    for (int p = 0; p < c->BB / 4; p++) {
        tile_col(c, 4 * p, b, sizeof b);
        cu_printf(t, "            const float4 x%d = *(const float4 *)&xc_[k * BTP + %s];\n", p, b);
    }
    for (int i = 0; i < c->RR; i++)
        for (int j = 0; j < c->BB; j++)
            cu_printf(t, "            a%d_%d = fmaf(w%d.%s, x%d.%s, a%d_%d);\n", i, j, i / 4,
                      q4[i % 4], j / 4, q4[j % 4], i, j);
    cu_printf(t, "        }\n");
}

/* The groups' sums, as cuda_ffma.c's lanes reduce-scatter theirs over
 * shuffles, here through the chunk buffers: at the level of bit o of the
 * group, groups g and g ^ o each keep half of the values they hold (the
 * upper half where the bit is set), write the other half to a slot and
 * add the partner's copy of the half they keep.  After log2(G) levels
 * every thread holds n / G sums, positions g n / G on of its tile, and
 * stores them into SM_L.  Slots are value-major ([v4][thread][4]: a
 * warp's 16-byte words consecutive), level after level from the buffers'
 * start; SM_L may lie over the levels' slots but the last one's
 * (cu_outer_partials_fit), which every thread has read past before the
 * last level's barrier.  All warps take part: group 0 adding the others'
 * partial sums alone took 7.5 K cycles of a 134 K-cycle step (H200, LSTM
 * I = H = 1024, B = 256). */
static void emit_sums(const cu_ctx *c, int32_t lin, cu_text *t)
{
    int n = tile_values(c), G = c->ks[lin], l = 0;
    int64_t at = 0;
    char r[64], b[64];
    for (int o = G / 2; o > 0; o /= 2, n /= 2, at += level_floats(c, l++)) {
        cu_printf(t,
                  "        {\n"
                  "            const bool hi_ = (g_ & %d) != 0;\n"
                  "            float *const out_ = sm_ + %lld + tid * 4;\n"
                  "            const float *const in_ = sm_ + %lld + (hi_ ? tid - %d : tid + %d) * 4;\n",
                  o, (long long)at, (long long)at, o * (c->NT / G), o * (c->NT / G));
        for (int p = 0; p < n / 2; p += 4) {
            cu_printf(t, "            *(float4 *)&out_[%d * 4 * NT] = make_float4(", p / 4);
            for (int q = p; q < p + 4; q++)
                cu_printf(t, "hi_ ? a%d_%d : a%d_%d%s", q / c->BB, q % c->BB,
                          (q + n / 2) / c->BB, (q + n / 2) % c->BB, q < p + 3 ? ", " : ");\n");
        }
        cu_printf(t, "            __syncthreads();\n");
        for (int p = 0; p < n / 2; p += 4) {
            cu_printf(t, "            { const float4 v_ = *(const float4 *)&in_[%d * 4 * NT];\n", p / 4);
            for (int q = p; q < p + 4; q++)
                cu_printf(t, "              a%d_%d = (hi_ ? a%d_%d : a%d_%d) + v_.%s;\n", q / c->BB,
                          q % c->BB, (q + n / 2) / c->BB, (q + n / 2) % c->BB, q / c->BB,
                          q % c->BB, q4[q - p]);
            cu_printf(t, "            }\n");
        }
        cu_printf(t, "        }\n");
    }
    for (int p = 0; p < n; p++) {
        /* position g n / G + p of the tile: row i, batch row j */
        snprintf(r, sizeof r, "(g_ * %d + %d) / %d", n, p, c->BB);
        snprintf(b, sizeof b, "(g_ * %d + %d) %% %d", n, p, c->BB);
        cu_printf(t,
                  "        { const int i_ = %s, j_ = %s;\n"
                  "          sm_[SM_L%d + (i_ / 4 * %d + rc_ * 4 + i_ %% 4) * (BTP + 1) + j_ / 4 * %d + "
                  "bc_ * 4 + j_ %% 4] = a%d_%d; }\n",
                  r, b, (int)lin, row_run(c, lin), col_run(c), p / c->BB, p % c->BB);
    }
}

rnnc_status cu_emit_outer_linear(const cu_ctx *c, int32_t lin, cu_text *t,
                                 rnnc_status (*stage)(const cu_ctx *, int32_t, bool, cu_text *))
{
    int R = cu_slice_rows(c, lin), RC = R / c->RR, GT = RC * (c->BTP / c->BB);
    rnnc_status st;
    char d[256];
    cu_printf(t,
              "    /* %s: outer products (cuda_outer.c), threads own %d x %d outputs, each "
              "chunk's K split over %d groups */\n",
              cu_describe(c, lin, d, sizeof d), c->RR, c->BB, c->ks[lin]);
    cu_printf(t, "    {\n        const int g_ = tid / %d, lt_ = tid %% %d, rc_ = lt_ %% %d, bc_ = lt_ / %d;\n",
              GT, GT, RC, RC);
    for (int i = 0; i < c->RR; i++)
        for (int j = 0; j < c->BB; j++)
            cu_printf(t, "        float a%d_%d = 0.f;\n", i, j);
    if ((st = stage(c, lin, true, t)))
        return st;
    emit_products(c, lin, t);
    cu_emit_bulk_chunk_end(c, t, "ch_");
    /* every warp past the buffers: the partial sums go over them */
    cu_printf(t, "    }\n    __syncthreads();\n");
    emit_sums(c, lin, t);
    cu_printf(t, "    }\n    __syncthreads();\n");
    return RNNC_OK;
}
