/*
 * cuda_mma_step.c: the persistent step kernel's linears on tensor cores,
 * both kinds: TF32 (mma.sync m16n8k8; the fp32 math modes tf32 and
 * 3xtf32, helpers in cuda_mma.c) and 16-bit (m16n8k16; F16 and BF16
 * models, helpers in cuda_half.c).  A is the block's W slice in shared
 * memory (rows of W, K contiguous), B the staged x (batch row n, K
 * contiguous: "col" layout), accumulators fp32; the results land in the
 * linear's rows in shared memory (SM_L) where the FFMA loops put them, so
 * the element phase is the same.
 *
 * Warp layout.  The block's product is MT x NTN tiles of 16 weight rows x
 * 8 batch rows.  A warp owns WM x WN of them, so each A fragment it loads
 * serves WN products and each B fragment WM (the shared-memory bytes a
 * step reads, not the products, bounded the step at H = 1024: with one
 * tile a warp every fragment was loaded for one product); KS groups of
 * warps split K (interleaved k-steps) and add their partial tiles through
 * shared memory, in a fixed order, so the sums do not depend on timing.
 * The partial tiles reuse the staged x's region: every warp is past its
 * last read of x when they are written.
 *
 * Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k8 / k16"),
 * lane = 4 g + q: TF32 A a0 = (g, q), a1 = (g + 8, q), a2 = (g, q + 4),
 * a3 = (g + 8, q + 4), B b0 = (k q, n g), b1 = (k q + 4, n g); 16-bit
 * (32-bit words of two k) A a0 = (g, word q), a1 = (g + 8, q), a2 = (g,
 * q + 4), a3 = (g + 8, q + 4), B b0 = (word q, n g), b1 = (word q + 4, n
 * g); C/D c0 = (g, 2q), c1 = (g, 2q + 1), c2 = (g + 8, 2q), c3 = (g + 8,
 * 2q + 1).  So both kinds take words q and q + 4 of rows g and g + 8,
 * which is what ldmatrix hands out from 8 x 8 matrices of 16-bit values
 * (8 x 4 of 32-bit ones); rows padded to 4 mod 32 words put the eight
 * 16-byte rows of an ldmatrix phase on distinct banks.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

/* Tiles a warp takes at most (4 accumulators each): 2 x 4 was slower than
 * 1 x 4 at every shape measured with x staged whole (preferred() below),
 * and faster where a 16-bit x is staged in chunks (chunked_half). */
#define MMA_MAX_TILES_PER_WARP 4
#define MMA_MAX_TILES_CHUNKED 8

typedef struct mma_warps {
    int mt, ntn;   /* tiles along the W rows (16) and the batch rows (8) */
    int wm, wn;    /* tiles a warp owns */
    int ks;        /* K split over warp groups */
    int g, gn;     /* warp groups, of them along the batch rows */
    int na;        /* accumulator sets a tile (k-steps round robin) */
    int kw;        /* columns of one k-step: 8 (TF32) or 16 (16-bit) */
    int pp;        /* floats per row of a partial-sum slice */
} mma_warps;

/* Floats a row of a partial slice takes: 8 mod 32, so the float2 stores
 * of a half warp (4 rows g, 8 columns 2q) hit distinct banks. */
static int partial_pitch(int ntn)
{
    return (int)((ntn * 8 - 8 + 31) / 32 * 32 + 8);
}

/* Registers a lane's tiles take: accumulators (3xtf32 four more for a
 * k-step's sum, see emit_kstep), and fragments (TF32 ones three times:
 * the loaded word, its hi and lo parts).  Half a thread's registers at
 * most (64 of 128 at 512 threads, 32 of 64 at 1024), so the staging and
 * the element phase keep theirs without spilling. */
static bool fits_registers(const cu_ctx *c, const mma_warps *w)
{
    int frag = (w->wm * 4 + (w->wn + (w->wn & 1)) * 2) * (c->half ? 1 : 3);
    int acc = 4 * w->wm * w->wn * w->na + (c->cfg.math == 2 ? 4 : 0);
    int per_thread = 65536 / c->NT < 255 ? 65536 / c->NT : 255;
    return acc + frag <= per_thread / 2;
}

/* Whether layout w is possible: work for at least half the warps (and no
 * more warps than the block has), the interleaved k-steps dividing K and
 * the chunk, the partial slices of K groups past the first inside the
 * staged x's region (xs_floats < 0: not known yet, no split). */
static bool layout_ok(const cu_ctx *c, int32_t lin, const mma_warps *w, int64_t chunk,
                      int64_t xs_floats)
{
    int64_t K = cu_kdim(c, lin), nw = c->NT / 32, stride = (int64_t)w->ks * w->kw * w->na;
    if ((int64_t)w->g * w->ks > nw || (int64_t)w->g * w->ks * 2 < nw || !fits_registers(c, w))
        return false;
    if (K % stride || chunk % stride)
        return false;
    return w->ks == 1 ||
           (xs_floats >= 0 && (int64_t)(w->ks - 1) * w->mt * 16 * w->pp <= xs_floats);
}

/* Whether layout a is preferred to b: a warp's k-steps within 512
 * columns (16-bit) or 256 floats (3xtf32) or 128 (tf32), then
 * more batch tiles a warp (each A fragment, the larger, serves wn
 * products), fewer K groups (each a trip of partial tiles and two
 * barriers), more weight tiles, more warps busy.  Measured on the H100
 * (bench/results/h100/warps/, ms for T = 100; tiles a warp x K groups):
 * bf16 I = H = 1024, B = 64, 512 threads: 1x1x1 1.091, 1x4x2 0.907-0.916,
 * 1x4x4 0.915-0.922, 2x4x4 0.936-0.957, 2x2x4 0.959-0.971; tf32 B = 64,
 * 512 threads: 1x1x1 0.920, 1x2x2 0.746, 1x2x4 0.725, 2x2x4 0.712; bf16
 * B = 64 with tagged words: 1x1x1 0.417, 1x1x2 0.433, 2x1x2 0.418; GRU
 * bf16 B = 64 with tagged words (256 threads): 1x1x1 0.443-0.449, 4x1x2
 * (half the warps) 0.476-0.483.  3xtf32 had tf32's 128 columns while
 * each k-step split its operands with cvt.rna (about eight instructions
 * an operand); with two since, LSTM B = 64 at ut=16 bt=16 nt=512: 1x2x2
 * 0.742, 1x2x4 0.753, 2x2x4 (the rule before) 0.771, 4x1x4 0.795
 * (bench/results/h100/x3split/layouts/). */
static bool preferred_whole(const cu_ctx *c, int32_t lin, const mma_warps *a, const mma_warps *b)
{
    int64_t kst = cu_kdim(c, lin) / a->kw, cap = c->half || c->cfg.math == 2 ? 32 : 16;
    bool in_a = kst / a->ks <= cap, in_b = kst / b->ks <= cap;
    if (in_a != in_b)
        return in_a;
    if (a->wn != b->wn)
        return a->wn > b->wn;
    if (a->ks != b->ks)
        return a->ks < b->ks;
    if (a->wm != b->wm)
        return a->wm > b->wm;
    if (a->g != b->g)
        return a->g > b->g;
    /* a warp of one tile keeps several products in flight; more tiles
     * do that themselves */
    return a->wm * a->wn == 1 ? a->na > b->na : a->na < b->na;
}

/* A 16-bit x staged in chunks (I = H = 1024, B = 128 and 256): the step
 * is bound by the shared memory its fragments read, so larger warp tiles
 * pay there (below). */
static bool chunked_half(const cu_ctx *c, int32_t lin, int64_t chunk)
{
    return c->half && chunk < cu_kdim(c, lin);
}

/* The 16-bit words of the fragments the block's warps load a k-step:
 * each A tile (16 rows) once for every batch group of warps, each B tile
 * (8 rows) once for every weight group. */
static int64_t fragment_words(const mma_warps *w)
{
    int64_t row_groups = cu_cdiv(w->mt, w->wm);
    return (row_groups * w->wm * 16 * w->gn + w->gn * w->wn * 8 * row_groups) * w->kw;
}

/* Where chunked_half: fewer fragment words a k-step, then at least 8
 * warps busy, then fewer K groups (preferred_whole's order from there,
 * without its cap on a warp's k-steps: a chunk holds few).  Measured on
 * the H100 (bench/results/h100/tiles8/, LSTM I = H = 1024, T = 100, ms;
 * tiles a warp x K groups, fragment words a k-step): bf16 B = 256 at 512
 * threads 2x4x1 (16 K) 2.600-2.604, 2x4x2 (16 K) 2.661, 4x2x1 (20 K)
 * 2.684, 1x8x2 (20 K) 2.730, 2x2x1 (24 K) 2.768, 1x4x1 (24 K, the rule
 * before) 2.770; f16 B = 128 at 256 threads 2x4x2 1.570, 2x4x1 (4 warps
 * busy) 1.619, 1x4x1 1.633.  TF32 (x staged by bulk copies, the step
 * bound by their latency) kept 1 x 4: 2 x 4 4.70 against 4.50. */
static bool preferred(const cu_ctx *c, int32_t lin, int64_t chunk, const mma_warps *a,
                      const mma_warps *b)
{
    if (!chunked_half(c, lin, chunk))
        return preferred_whole(c, lin, a, b);
    int64_t fa = fragment_words(a), fb = fragment_words(b);
    int busy_a = a->g * a->ks < 8 ? a->g * a->ks : 8, busy_b = b->g * b->ks < 8 ? b->g * b->ks : 8;
    if (fa != fb)
        return fa < fb;
    if (busy_a != busy_b)
        return busy_a > busy_b;
    if (a->ks != b->ks)
        return a->ks < b->ks;
    return preferred_whole(c, lin, a, b);
}

/* The preferred possible layout of linear lin's product; false when none
 * fits. */
static bool choose_warps(const cu_ctx *c, int32_t lin, int64_t chunk, int64_t xs_floats,
                         mma_warps *best)
{
    mma_warps w = {.mt = (int)cu_cdiv(cu_slice_rows(c, lin), 16), .ntn = (int)cu_cdiv(c->BTP, 8),
                   .kw = c->half ? 16 : 8};
    bool found = false;
    w.pp = partial_pitch(w.ntn);
    /* (a warp's tiles past the edge are clamped and their results dropped) */
    for (w.wm = 1; w.wm <= 4 && w.wm / 2 < w.mt; w.wm *= 2)
        for (w.wn = 1; w.wn <= 8 && w.wn / 2 < w.ntn; w.wn *= 2) {
            if (w.wm * w.wn > (chunked_half(c, lin, chunk) ? MMA_MAX_TILES_CHUNKED
                                                           : MMA_MAX_TILES_PER_WARP))
                continue;
            w.gn = (int)cu_cdiv(w.ntn, w.wn);
            w.g = (int)cu_cdiv(w.mt, w.wm) * w.gn;
            for (w.ks = 1; w.ks <= 16; w.ks *= 2)
                for (w.na = 1; w.na <= 4; w.na *= 2) {
                    if (!layout_ok(c, lin, &w, chunk, xs_floats))
                        continue;
                    if (!found || preferred(c, lin, chunk, &w, best))
                        *best = w;
                    found = true;
                }
        }
    return found;
}

/* Whether linear lin of the step runs on tensor cores when x is staged
 * `chunk` columns at a time: a TF32 math mode or a half model (16-bit
 * mma.sync needs sm_80), weights on chip, K and the chunk whole numbers
 * of k-steps, and a warp layout without a K split (the shared-memory
 * layout is not known yet) for at least half the warps. */
bool cu_mma_fits(const cu_ctx *c, int32_t lin, int64_t chunk)
{
    mma_warps w = {0};
    if (!cu_tensor_cores(c) || c->stream || cu_kdim(c, lin) % 16 || chunk % 16)
        return false;
    return choose_warps(c, lin, chunk, -1, &w);
}

/* The fragment loads (ldmatrix: an A fragment in one, the B fragments of
 * two batch tiles in one) and products of one k-step at x column `k` and
 * weight column `kk`, into accumulator set s; TF32 operands are split
 * into their parts after the load. */
static void emit_kstep(const cu_ctx *c, int32_t lin, const mma_warps *w, const char *k,
                       const char *kk, int s, cu_text *t)
{
    cu_printf(t,
              "            {\n"
              "                unsigned a_[%d][4], b_[%d][2];\n"
              "#pragma unroll\n"
              "                for (int i = 0; i < %d; ++i) rnnc_ldsm4(a_[i], la_[i] + %s);\n",
              w->wm, w->wn + (w->wn & 1), w->wm, kk);
    if (w->wn == 1)
        cu_printf(t, "                rnnc_ldsm2(b_[0], lb_[0] + %s);\n", k);
    else
        cu_printf(t,
                  "#pragma unroll\n"
                  "                for (int j = 0; j < %d; ++j) rnnc_ldsm4(&b_[0][0] + 4 * j, lb_[j] + %s);\n",
                  w->wn / 2, k);
    if (c->half) {
        cu_printf(t,
                  "#pragma unroll\n"
                  "                for (int i = 0; i < %d; ++i)\n"
                  "#pragma unroll\n"
                  "                    for (int j = 0; j < %d; ++j)\n"
                  "                        rnnc_mma16(d_[%d][i][j][0], d_[%d][i][j][1], d_[%d][i][j][2], "
                  "d_[%d][i][j][3], a_[i][0], a_[i][1], a_[i][2], a_[i][3], b_[j][0], b_[j][1]);\n"
                  "            }\n",
                  w->wm, w->wn, s, s, s, s);
        return;
    }
    /* operands rounded to TF32 before (cu_emit_mma_round, cuda_bulk.c) go
     * to the tensor cores as loaded */
    const char *sa = cu_tf32_rounded(c) ? "rnnc_sp0" : "rnnc_sp";
    const char *sb = cu_tf32_rounded(c) && cu_bulk_staged(c, lin) ? "rnnc_sp0" : "rnnc_sp";
    cu_printf(t,
              "                unsigned ah_[%d][4], al_[%d][4], bh_[%d][2], bl_[%d][2];\n"
              "#pragma unroll\n"
              "                for (int i = 0; i < %d; ++i)\n"
              "#pragma unroll\n"
              "                    for (int e = 0; e < 4; ++e) %s(__uint_as_float(a_[i][e]), ah_[i][e], al_[i][e]);\n"
              "#pragma unroll\n"
              "                for (int j = 0; j < %d; ++j)\n"
              "#pragma unroll\n"
              "                    for (int e = 0; e < 2; ++e) %s(__uint_as_float(b_[j][e]), bh_[j][e], bl_[j][e]);\n"
              "#pragma unroll\n"
              "                for (int i = 0; i < %d; ++i)\n"
              "#pragma unroll\n"
              "                    for (int j = 0; j < %d; ++j)\n"
              "                    {\n",
              w->wm, w->wm, w->wn, w->wn, w->wm, sa, w->wn, sb, w->wm, w->wn);
    /* rnnc_mma3 multiplies in the math mode; 3xtf32 sums a k-step's three
     * products from zero, then adds them in fp32: the tensor cores' adds
     * truncate, and summing straight into the accumulator drifted by
     * several ulp a k-step */
    cu_printf(t,
              "                        rnnc_mma3(d_[%d][i][j][0], d_[%d][i][j][1], d_[%d][i][j][2], "
              "d_[%d][i][j][3], ah_[i], al_[i], bh_[j], bl_[j]);\n",
              s, s, s, s);
    cu_printf(t, "                    }\n            }\n");
}

/* The warp's place in the layout and its lanes' ldmatrix rows: for A the
 * 16 rows of a tile (lanes 0-15 the first half of the k-step, 16-31 the
 * second), for B 8 batch rows of tile pairs (lanes 0-7 and 8-15 the two
 * halves of the first tile, 16-31 the second tile's). */
static void emit_warp_head(const cu_ctx *c, int32_t lin, const mma_warps *w, cu_text *t)
{
    const char *ty = c->half ? "rnnc_h" : "float";
    char wbase[64], xbase[16];
    int half_k = w->kw / 2;
    snprintf(wbase, sizeof wbase, c->half ? "smh_ + 2 * SM_W%d" : "sm_ + SM_W%d", (int)lin);
    snprintf(xbase, sizeof xbase, c->half ? "smh_" : "sm_");
    cu_printf(t,
              "    {\n"
              "        const int wp_ = tid >> 5, g_ = (tid & 31) >> 2, q_ = tid & 3, ln_ = tid & 31;\n"
              "        const int ks_ = wp_ / %d, gi_ = wp_ %% %d, mt_ = gi_ / %d * %d, nt_ = gi_ %% %d * %d;\n"
              "        const %s *la_[%d], *lb_[%d];\n"
              "#pragma unroll\n"
              "        for (int i = 0; i < %d; ++i)\n"
              "            la_[i] = %s + (size_t)min((mt_ + i) * 16 + (ln_ & 15), %d) * %d + (ln_ >> 4) * %d;\n"
              "#pragma unroll\n"
              "        for (int j = 0; j < %d; ++j)\n"
              "            lb_[j] = %s + (size_t)min((nt_ + 2 * j + (ln_ >> 4)) * 8 + (ln_ & 7), BTP - 1) * %d",
              w->g, w->g, w->gn, w->wm, w->gn, w->wn, ty, w->wm, (w->wn + 1) / 2, w->wm, wbase,
              cu_slice_rows(c, lin) - 1, c->kp[lin], half_k, (w->wn + 1) / 2, xbase,
              cu_bulk_staged(c, lin) ? c->kc[lin] : c->xkp[lin]);
    /* bulk staging: rows of kc floats, the lane's 16-byte group permuted
     * by its row at each k-step (cuda_bulk.c) */
    if (cu_bulk_staged(c, lin))
        cu_printf(t, ";\n        const int hb_ = (ln_ >> 3) & 1, r7_ = ln_ & 7;\n");
    else
        cu_printf(t, " + ((ln_ >> 3) & 1) * %d;\n", half_k);
    cu_printf(t, "        float d_[%d][%d][%d][4] = {};\n", w->na, w->wm, w->wn);
}

/* The K loop: x staged whole or in chunks; warp group ks_ takes k-steps
 * ks_, ks_ + KS, ...; na of them a trip, one per accumulator set. */
static rnnc_status emit_kloop(const cu_ctx *c, int32_t lin, const mma_warps *w, cu_text *t,
                              rnnc_status (*stage)(const cu_ctx *, int32_t, bool, cu_text *))
{
    long long K = (long long)cu_kdim(c, lin), KC = c->kc[lin];
    bool chunked = KC < K;
    rnnc_status st;
    /* opens the chunk loop (chunked) and stages x */
    if ((st = stage(c, lin, chunked, t)))
        return st;
    if (chunked)
        cu_printf(t, "        const int kn_ = min(%lld, %lld - ch_ * %lld), k0_ = ch_ * %lld;\n", KC,
                  K, KC, KC);
    else
        cu_printf(t, "        const int kn_ = %lld, k0_ = 0;\n", K);
    cu_printf(t,
              "        if (ks_ < %d) {\n"
              "#pragma unroll 2\n"
              "        for (int k = ks_ * %d; k < kn_; k += %d) {\n"
              "            const int kk = k0_ + k;\n",
              w->ks, w->kw, w->ks * w->kw * w->na);
    for (int a = 0; a < w->na; a++) {
        char k[96], kk[48];
        if (cu_bulk_staged(c, lin))
            snprintf(k, sizeof k, "xo_ + (BSW(r7_, ((k + %d) >> 2) + hb_) << 2)",
                     a * w->ks * w->kw);
        else
            snprintf(k, sizeof k, "k + %d", a * w->ks * w->kw);
        snprintf(kk, sizeof kk, "kk + %d", a * w->ks * w->kw);
        emit_kstep(c, lin, w, k, kk, a, t);
    }
    cu_printf(t, "        }\n        }\n");
    if (chunked && cu_bulk_staged(c, lin)) {
        cu_emit_bulk_chunk_end(c, t, "ch_");
        /* every warp past the buffers: the result goes over them */
        cu_printf(t, "    }\n    __syncthreads();\n");
    } else if (chunked) {
        cu_printf(t, "        __syncthreads();\n    }\n");
    }
    return RNNC_OK;
}

/* The sum of the accumulator sets of element e (0..3) of tile (i, j). */
static void emit_acc(const mma_warps *w, const char *e, cu_text *t)
{
    for (int a = 0; a < w->na; a++)
        cu_printf(t, "%sd_[%d][i][j][%s]", a ? " + " : "", a, e);
}

/* The first K group's warps (every warp without a split) store their
 * tiles' elements into SM_L. */
static void emit_results(const cu_ctx *c, int32_t lin, const mma_warps *w, cu_text *t)
{
    cu_printf(t,
              "        if (ks_ == 0) {\n"
              "#pragma unroll\n"
              "        for (int i = 0; i < %d; ++i)\n"
              "#pragma unroll\n"
              "            for (int j = 0; j < %d; ++j) {\n"
              "                const int r_ = (mt_ + i) * 16 + g_, n_ = (nt_ + j) * 8 + 2 * q_;\n"
              "#pragma unroll\n"
              "                for (int h_ = 0; h_ < 2; ++h_)\n"
              "#pragma unroll\n"
              "                    for (int e_ = 0; e_ < 2; ++e_)\n"
              "                        if (r_ + 8 * h_ < %d && n_ + e_ < BTP)\n"
              "                            sm_[SM_L%d + (r_ + 8 * h_) * (BTP + 1) + n_ + e_] = ",
              w->wm, w->wn, cu_slice_rows(c, lin), (int)lin);
    emit_acc(w, "2 * h_ + e_", t);
    cu_printf(t, ";\n            }\n        }\n");
}

/* With a K split: the first group's tiles into SM_L, the others' into
 * their slices of the staged x's region, then every thread adds the
 * slices of its elements to SM_L in group order. */
static void emit_split_results(const cu_ctx *c, int32_t lin, const mma_warps *w, bool chunked,
                               cu_text *t)
{
    long long ps = (long long)w->mt * 16 * w->pp;
    if (!chunked)
        cu_printf(t, "        __syncthreads(); /* every warp is past its reads of x */\n");
    emit_results(c, lin, w, t);
    cu_printf(t,
              "        if (ks_ > 0 && ks_ < %d) {\n"
              "            float *const p_ = sm_ + (ks_ - 1) * %lld;\n"
              "#pragma unroll\n"
              "            for (int i = 0; i < %d; ++i)\n"
              "#pragma unroll\n"
              "                for (int j = 0; j < %d; ++j)\n"
              "                    if (mt_ + i < %d && nt_ + j < %d) {\n"
              "                        const int r_ = (mt_ + i) * 16 + g_, n_ = (nt_ + j) * 8 + 2 * q_;\n"
              "                        *(float2 *)&p_[r_ * %d + n_] = make_float2(",
              w->ks, ps, w->wm, w->wn, w->mt, w->ntn, w->pp);
    emit_acc(w, "0", t);
    cu_printf(t, ", ");
    emit_acc(w, "1", t);
    cu_printf(t, ");\n                        *(float2 *)&p_[(r_ + 8) * %d + n_] = make_float2(", w->pp);
    emit_acc(w, "2", t);
    cu_printf(t, ", ");
    emit_acc(w, "3", t);
    cu_printf(t,
              ");\n"
              "                    }\n"
              "        }\n"
              "        __syncthreads();\n"
              "        for (int e_ = tid; e_ < %d * BTP; e_ += NT) {\n"
              "            const int r_ = e_ / BTP, n_ = e_ %% BTP;\n"
              "            float s_ = sm_[SM_L%d + r_ * (BTP + 1) + n_];\n"
              "#pragma unroll\n"
              "            for (int s = 0; s < %d; ++s)\n"
              "                s_ += sm_[s * %lld + r_ * %d + n_];\n"
              "            sm_[SM_L%d + r_ * (BTP + 1) + n_] = s_;\n"
              "        }\n",
              cu_slice_rows(c, lin), (int)lin, w->ks - 1, ps, w->pp, (int)lin);
}

/* The TF32 mode rounds the step's weight slices in shared memory once,
 * after they arrive, so no k-step converts its A fragments: the same
 * products (cvt.rna, three instructions a word, 12 words a k-step at 1 x
 * 4 tiles a warp). */
void cu_emit_mma_round(const cu_ctx *c, cu_text *t)
{
    if (!cu_tf32_rounded(c))
        return;
    for (int32_t i = 0; i < c->f->n; i++) {
        /* (streamed weights come rounded: cuda_wstream.c) */
        if (c->role[i] != CU_STEP_LINEAR || c->wstream)
            continue;
        /* a K split's slice is the cluster's rows padded to wgmma's 64 */
        long long n = c->ksplit && i == c->bulk_lin ? (long long)cu_ksplit_weight_floats(c, i)
                                                    : (long long)cu_slice_rows(c, i) * c->kp[i];
        cu_printf(t,
                  "    for (int i = tid; i < %lld; i += NT) /* the weights to TF32 */\n"
                  "        sm_[SM_W%d + i] = __uint_as_float(rnnc_tf32(sm_[SM_W%d + i]));\n",
                  n, (int)i, (int)i);
    }
    /* the wgmma step reads the slice through the async proxy */
    if (c->wgstep)
        cu_printf(t, "    asm volatile(\"fence.proxy.async.shared::cta;\" : : : \"memory\");\n");
    cu_printf(t, "    __syncthreads();\n");
}

rnnc_status cu_emit_mma_linear(const cu_ctx *c, int32_t lin, cu_text *t,
                               rnnc_status (*stage)(const cu_ctx *, int32_t, bool, cu_text *))
{
    long long K = (long long)cu_kdim(c, lin), KC = c->kc[lin];
    mma_warps w = {0};
    char d[256];
    rnnc_status st;
    /* bulk staging: the result lies over the chunk buffers, so no K split
     * (its partial tiles would too) */
    if (!choose_warps(c, lin, KC < K ? KC : K, cu_bulk_staged(c, lin) ? -1 : c->xs_floats, &w))
        return RNNC_ERR_UNSUPPORTED;
    cu_printf(t,
              "    /* %s: tensor cores, %d x %d tiles of 16 x 8; a warp owns %d x %d of them, "
              "K split %d ways */\n",
              cu_describe(c, lin, d, sizeof d), w.mt, w.ntn, w.wm, w.wn, w.ks);
    emit_warp_head(c, lin, &w, t);
    if ((st = emit_kloop(c, lin, &w, t, stage)))
        return st;
    if (w.ks > 1)
        emit_split_results(c, lin, &w, KC < K, t);
    else
        emit_results(c, lin, &w, t);
    cu_printf(t, "    }\n    __syncthreads();\n");
    return RNNC_OK;
}
