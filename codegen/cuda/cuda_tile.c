/*
 * cuda_tile.c: the step kernel's tiling and shared-memory layout.
 * A block owns UT hidden units (every slice s*H + u of them) and BT batch
 * rows; the grid (NUB x NBB blocks) must be resident at once, so it is
 * bounded by the SM count.  Each step linear is a small GEMM inside the
 * block: lanes own RR rows x BB batch rows of it and split K KS ways
 * (reduced with warp shuffles), reading 16-byte words of shared memory.
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

#define SMEM_LIMIT_DEFAULT (227 * 1024)

static int64_t up(int64_t v, int64_t m)
{
    return (v + m - 1) / m * m;
}

/* Lane layout of every step linear for NT threads; false if one does not
 * fit.  x is staged kc columns at a time (kc = 0: all of K). */
static bool lay_linears(cu_ctx *c, int64_t kc)
{
    const ir_fn *f = c->f;
    for (int32_t i = 0; i < f->n; i++) {
        if (c->role[i] != CU_STEP_LINEAR)
            continue;
        int64_t R = (int64_t)cu_slices(c, i) * c->UT;
        int64_t cells = (R / c->RR) * (c->BTP / c->BB);
        if (cells > c->NT) {
            if (c->cfg.threads || cells > 1024)
                return false;
            c->NT = (int)up(cells, 32);
        }
    }
    /* tensor cores for every step linear or none (a TF32 math mode, or a
     * half model: cuda_mma_step.c); their fragment loads want rows padded
     * to 4 mod 32 words (4 floats, 8 16-bit values) */
    c->mma = c->cfg.math != 0 || c->half;
    for (int32_t i = 0; i < f->n; i++) {
        if (c->role[i] != CU_STEP_LINEAR)
            continue;
        int64_t K4 = up(c->cols[c->f->nodes[i].a[0]], 4);
        c->mma = c->mma && cu_mma_fits(c, i, kc > 0 && kc < K4 ? kc : K4);
    }
    for (int32_t i = 0; i < f->n; i++) {
        if (c->role[i] != CU_STEP_LINEAR)
            continue;
        int64_t R = (int64_t)cu_slices(c, i) * c->UT;
        int64_t cells = (R / c->RR) * (c->BTP / c->BB);
        int ks = 1;
        while (ks * 2 <= 32 && (int64_t)ks * 2 * cells <= c->NT)
            ks *= 2;
        int64_t K4 = up(c->cols[c->f->nodes[i].a[0]], 4);
        int64_t pad = c->mma ? (c->half ? 8 : 4) : ks >= 8 ? 0 : 4 * ks;
        int64_t chunk = kc > 0 && kc < K4 ? up(kc, 4 * ks) : K4;
        c->ks[i] = ks;
        c->kp[i] = (int32_t)(up(K4, 32) + pad);
        c->kc[i] = (int32_t)chunk;
        c->xkp[i] = chunk == K4 ? c->kp[i] : (int32_t)(up(chunk, 32) + pad);
    }
    return true;
}

/* Shared memory in floats: xs (staged x), weight slices (unless streamed),
 * linear results, per-element values kept across phases (unless in global
 * memory, c->gkeep), reduction row stats.  A half model's weight slices
 * are 16-bit. */
static int64_t lay_smem(cu_ctx *c)
{
    const ir_fn *f = c->f;
    int64_t at = 0, xs = 0;
    for (int32_t i = 0; i < f->n; i++)
        if (c->role[i] == CU_STEP_LINEAR && (int64_t)c->BTP * c->xkp[i] > xs)
            xs = (int64_t)c->BTP * c->xkp[i];
    if (c->half && c->mma)
        xs = (xs + 1) / 2; /* x staged as 16-bit values for the tensor cores */
    /* the chunk buffers (with the chunk's rows of W where they stream) */
    if (c->bulk)
        xs = (int64_t)c->bulk_ns * (c->BTP + (c->wstream ? cu_wstream_rows(c) : 0)) *
             c->kc[c->bulk_lin];
    c->xs_floats = xs;
    at = up(xs, 4);
    for (int32_t i = 0; i < f->n; i++) {
        if (c->role[i] != CU_STEP_LINEAR)
            continue;
        int64_t R = (int64_t)cu_slices(c, i) * c->UT;
        c->wsm[i] = at;
        /* a half model's slice is 16-bit: half the floats; streamed, the
         * leading columns kept on chip (c->kr) */
        if (c->ksplit && i == c->bulk_lin)
            at = up(at + cu_ksplit_weight_floats(c, i), 4);
        else if (c->wstream && i == c->bulk_lin)
            ; /* in the chunk buffers */
        else if (!c->stream)
            at = up(at + (c->half ? (R * c->kp[i] + 1) / 2 : R * c->kp[i]), 4);
        else if (c->kr[i])
            at = up(at + R * cu_kr_stride(c, i), 4);
        /* bulk staging: the result over the chunk buffers, past their use */
        if (c->bulk && i == c->bulk_lin && R * (c->BTP + 1) <= xs) {
            c->sm[i] = 0;
            continue;
        }
        c->sm[i] = at;
        at = up(at + cu_lin_copies(c, i) * R * (c->BTP + 1), 4);
    }
    for (int32_t i = 0; i < f->n; i++) {
        c->xp[i] = -1;
        if ((c->need[i] & CU_NEED_XP) && !c->gkeep) {
            c->xp[i] = at; /* a copy a batch pass */
            at = up(at + (int64_t)c->NP * cu_slices(c, i) * c->UT * c->BTP, 4);
        }
        if (c->role[i] == CU_STEP_ELEM && (ir_ops[f->nodes[i].op].flags & IR_F_REDUCE)) {
            c->sm[i] = at;
            at = up(at + 2 * c->BTP, 4);
        }
    }
    if (c->bulk) {
        c->bulk_mb = at; /* 8-byte mbarriers, two a buffer (full, free) */
        /* a K split's third mbarrier: the partner's partial sums */
        at = up(at + 4 * (int64_t)c->bulk_ns + (c->ksplit ? 2 : 0), 4);
    }
    c->smem_floats = at;
    return at * 4;
}

/* Streamed weights (fp32, FFMA, x staged whole, register tiles of 64
 * values or more, such as 8 x 8, or of one): the shared memory left under
 * `limit` holds the leading columns of the step linears' slices, so each
 * step reads that much less of W from L2 (the first linears first).  H100,
 * I = H = 1024, B = 64, 16-row batch tiles (22% of the columns kept): LSTM
 * 3.499 -> 3.418 ms, GRU 3.266 -> 3.159; with 8 x 4 tiles at 512 threads
 * it lost (3.489 -> 3.592), whose multiply already waits on shared memory
 * (bench/results/h100/keep/).  With one output a lane (B = 1 .. 4) the
 * step is W's bytes alone, and the 42% kept at H = 2048 leave 39 MB a step,
 * which L2 holds where 67 MB came from HBM: LSTM I = H = 2048, B = 1 2.68
 * -> 1.26 ms, GRU 2.08 -> 0.84, B = 4 4.98 -> 3.86, I = H = 1536, B = 1
 * 0.70 -> 0.64 (T = 100, heuristic tiles; bench/results/h100/keep-b1/). */
static void keep_columns(cu_ctx *c, int64_t limit)
{
    if (!c->stream || c->half || c->mma || (c->RR * c->BB < 64 && c->RR * c->BB > 1))
        return;
    for (int32_t i = 0; i < c->f->n; i++) {
        if (c->role[i] != CU_STEP_LINEAR)
            continue;
        int64_t K4 = up(c->cols[c->f->nodes[i].a[0]], 4), step = 4 * (int64_t)c->ks[i];
        int64_t R = (int64_t)cu_slices(c, i) * c->UT;
        int64_t free_floats = (limit - lay_smem(c)) / 4 - 4;
        if (c->kc[i] < K4 || free_floats <= 0)
            continue;
        /* the most columns whose padded rows fit */
        int64_t kr = free_floats / R / step * step;
        kr = kr < K4 ? kr : K4 / step * step;
        for (c->kr[i] = (int32_t)kr; c->kr[i] > 0 && R * cu_kr_stride(c, i) > free_floats;)
            c->kr[i] -= (int32_t)step;
    }
    lay_smem(c);
}

static void place_partials(cu_ctx *c)
{
    const ir_fn *f = c->f;
    c->plan->part_floats = 0;
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        if (c->role[i] != CU_STEP_ELEM || !(ir_ops[n->op].flags & IR_F_REDUCE))
            continue;
        int r = c->role[n->a[0]];
        if (r == CU_STEP_ELEM || r == CU_STEP_LINEAR) {
            c->pt[i] = c->plan->part_floats;
            c->plan->part_floats += up(c->B * c->NUB * 2, 4);
        }
    }
}

/* The wgmma step (cuda_wgstep.c) where it fits: its W slice is
 * chunk-major, rows unpadded. */
static void choose_wgstep(cu_ctx *c, int64_t limit)
{
    int32_t lin = c->bulk_lin, kp = c->kp[lin];
    if (!cu_wgstep_fits(c))
        return;
    c->wgstep = true;
    c->kp[lin] = (int32_t)cu_kdim(c, lin);
    if (lay_smem(c) > limit) {
        c->wgstep = false;
        c->kp[lin] = kp;
        lay_smem(c);
        return;
    }
    /* the K split takes three chunk buffers, where a GRU's slice leaves
     * room for four */
    int ns = c->bulk_ns;
    c->bulk_ns = ns < 3 ? ns : 3;
    c->ksplit = cu_ksplit_fits(c);
    if (c->ksplit && lay_smem(c) <= limit)
        return;
    c->ksplit = false;
    c->bulk_ns = ns;
    lay_smem(c);
}

/* Bulk staging of the chunked state (cuda_bulk.c) with the most buffers
 * (4 down to 2) that fit, else none. */
static void choose_bulk(cu_ctx *c, int64_t limit)
{
    c->bulk = false;
    c->wgstep = false;
    c->ksplit = false;
    c->wstream = false;
    c->outer = false;
    c->bulk_lin = cu_bulk_linear(c);
    if (c->bulk_lin < 0)
        return;
    c->bulk_state = ir_state_of(c->f, c->f->nodes[c->bulk_lin].a[0]);
    c->bulk = true;
    for (c->bulk_ns = 4; c->bulk_ns >= 2; c->bulk_ns--)
        if (lay_smem(c) <= limit) {
            choose_wgstep(c, limit);
            return;
        }
    c->bulk = false;
}

/* Outer products (cuda_outer.c) where the tuning asks for them and the
 * tiling allows: W's slice k-major, rows unpadded, and the most chunk
 * buffers (4 down to 2) that fit with room in them for the groups'
 * partial sums; else the tiling as it was. */
static void choose_outer(cu_ctx *c, int64_t limit)
{
    if (!c->cfg.outer || !cu_outer_fits(c))
        return;
    int32_t lin = c->bulk_lin, kp = c->kp[lin];
    int ns = c->bulk_ns;
    c->outer = true;
    c->kp[lin] = (int32_t)cu_kdim(c, lin);
    for (c->bulk_ns = 4; c->bulk_ns >= 2; c->bulk_ns--)
        if (lay_smem(c) <= limit && cu_outer_partials_fit(c))
            return;
    c->outer = false;
    c->kp[lin] = kp;
    c->bulk_ns = ns;
    lay_smem(c);
}

/* Lanes one step linear needs: RR x BB outputs each. */
static int64_t max_cells(const cu_ctx *c)
{
    int64_t m = 0;
    for (int32_t i = 0; i < c->f->n; i++) {
        if (c->role[i] != CU_STEP_LINEAR)
            continue;
        int64_t cells = ((int64_t)cu_slices(c, i) * c->UT / c->RR) * (c->BTP / c->BB);
        m = cells > m ? cells : m;
    }
    return m;
}

static bool rows_divide(const cu_ctx *c, int rr)
{
    for (int32_t i = 0; i < c->f->n; i++)
        if (c->role[i] == CU_STEP_LINEAR && ((int64_t)cu_slices(c, i) * c->UT) % rr)
            return false;
    return true;
}

/* The lane's register tile: RR weight rows x BB batch rows, from the
 * tuning where it fits the block (BB at most BT, RR dividing every
 * linear's rows), else 4 x 4 (1 x 1 under 8 batch rows).  Each k step of
 * 4 reads RR + BB 16-byte words of shared memory for 4 RR BB FMAs.  On
 * the H100 a warp's 16-byte load of 32 distinct addresses takes 2 SM
 * cycles and one whose lanes share 8 addresses (the weight rows, read
 * alike by the lanes of a K split) about 0.5 (bench/lds_probe.cu), so a
 * 4 x 4 k step costs about 10 cycles of loads against 16 of FMA: larger
 * tiles pay by fewer loads issued and more independent FMAs a lane, not
 * by shared-memory bandwidth. */
static void choose_register_tiles(cu_ctx *c)
{
    int bb = c->cfg.reg_batch, rr = c->cfg.reg_rows;
    c->BB = bb > 0 && bb <= c->BT ? bb : c->BT >= 8 ? 4 : 1;
    c->BTP = (int)up(c->BT, c->BB);
    c->RR = rr > 0 && rows_divide(c, rr) ? rr : c->BT >= 8 ? 4 : 1;
    while (c->RR > 1 && !rows_divide(c, c->RR))
        c->RR /= 2;
}

/* Large blocks (many units and rows, e.g. H = 2048 at B = 256) take larger
 * register tiles, so the lanes fit one block of at most 1024 threads. */
static void grow_register_tiles(cu_ctx *c)
{
    int64_t lim = c->cfg.threads ? c->cfg.threads : 1024;
    while (max_cells(c) > lim && c->BB < 16 && c->BT >= 2 * c->BB) {
        c->BB *= 2;
        c->BTP = (int)up(c->BT, c->BB);
    }
    while (max_cells(c) > lim && c->RR < 16 && rows_divide(c, 2 * c->RR))
        c->RR *= 2;
}

/* One tiling: bt batch rows per block, x staged kc columns at a time (0:
 * all), weights resident or streamed.  *fits when the grid is resident
 * and shared memory suffices. */
void cu_try_tiles(cu_ctx *c, int64_t bt, int64_t kc, int sm_count, int64_t limit, bool *fits)
{
    *fits = false;
    /* a group of NP passes of bt rows (NP = 1 but in cuda_passes.c) */
    c->NBB = (int)cu_cdiv(c->B, bt * c->NP);
    c->BT = (int)cu_cdiv(cu_cdiv(c->B, c->NBB), c->NP);
    int64_t ut = c->cfg.unit_tile;
    if (!ut)
        ut = cu_cdiv(c->H, sm_count / c->NBB > 0 ? sm_count / c->NBB : 1);
    c->UT = (int)ut;
    c->NUB = (int)cu_cdiv(c->H, ut);
    if ((int64_t)c->NUB * c->NBB > sm_count)
        return;
    choose_register_tiles(c);
    grow_register_tiles(c);
    /* streamed weights: more lanes split K, so a warp reads whole 32-byte
     * sectors of a row */
    c->NT = c->cfg.threads ? c->cfg.threads : c->stream ? 512 : 256;
    if (!lay_linears(c, kc))
        return;
    for (int32_t i = 0; i < c->f->n; i++)
        c->kr[i] = 0;
    choose_bulk(c, limit);
    if (c->bulk)
        choose_outer(c, limit);
    *fits = lay_smem(c) <= limit;
    if (*fits)
        keep_columns(c, limit);
}

/* Batch tiles to try, best first: the measured default, then larger (fewer
 * copies of the weights over the grid, fewer units per block), then
 * smaller. */
int cu_batch_tiles(const cu_ctx *c, int64_t *out)
{
    int n = 0;
    if (c->cfg.batch_tile > 0) {
        out[n++] = c->cfg.batch_tile;
        return n;
    }
    /* Measured on an H100 (docs/fused-kernel.md): for B >= 32, 16 rows x 16
     * units per block beats one block row owning all 64 rows (15.2 -> 12.7 us
     * per step at B=64, H=512): less of h to stage per block per step. */
    int64_t bt0 = c->B >= 32 ? 16 : c->B;
    out[n++] = bt0;
    for (int64_t b = bt0 * 2; b < c->B * 2 && n < 30; b *= 2)
        out[n++] = b < c->B ? b : c->B;
    for (int64_t b = cu_cdiv(bt0, 2); n < 40; b = cu_cdiv(b, 2)) {
        out[n++] = b;
        if (b == 1)
            break;
    }
    return n;
}

/* Whether the threads stage some step linear's x in chunks (not whole,
 * not by bulk copies). */
static bool thread_chunks(const cu_ctx *c)
{
    for (int32_t i = 0; i < c->f->n; i++)
        if (c->role[i] == CU_STEP_LINEAR && !cu_bulk_staged(c, i) &&
            c->kc[i] < up(c->cols[c->f->nodes[i].a[0]], 4))
            return true;
    return false;
}

/* The tiling of batch tile bt with x in 128-column chunks staged by bulk
 * copies, if it fits (tensor cores kept where the math asks for them). */
static bool try_bulk_chunks(cu_ctx *c, int64_t bt, int sm_count, int64_t limit, bool tc)
{
    bool fits;
    cu_try_tiles(c, bt, 128, sm_count, limit, &fits);
    return fits && c->bulk && (!tc || c->mma);
}

/* The K split over clusters (cuda_ksplit.c) where it fits: all of a
 * batch of 256, 128 or 64 rows a block, h in chunks of 32 floats.  Tried
 * first: the search below takes the first tiling that fits, and a GRU's
 * fits in other tiles first (16 units, 128 batch rows), which the H100 ran
 * at 2.81 ms where cuDNN took 2.37 (TF32, I = H = 1024, B = 256). */
static bool try_ksplit(cu_ctx *c, int sm_count, int64_t limit)
{
    bool fits;
    int nt = c->cfg.threads, bt = c->B < 256 ? (int)c->B : 256;
    bool asked_other = (c->cfg.batch_tile > 0 && c->cfg.batch_tile != bt) || (nt && nt != 2 * bt);
    if ((bt != 256 && bt != 128 && bt != 64) || asked_other)
        return false;
    /* its warpgroups: two threads a batch row, where a GRU's lane tiles
     * alone would ask fewer */
    c->cfg.threads = 2 * bt;
    c->stream = false;
    cu_try_tiles(c, bt, 32, sm_count, limit, &fits);
    c->cfg.threads = nt;
    return fits && c->ksplit;
}

/* The wgmma step over streamed weights (cuda_wstream.c), for tensor-core
 * models whose weights fit on chip in no tiling: square blocks (128 batch
 * rows, or 64 at B = 64; units a multiple of 8), the most chunk buffers
 * (up to 8) that fit.  Before the FFMA step over streamed weights: at TF32 I = H =
 * 1024, B = 512 that one took 15.9 ms on the H100, this one 4.56, cuDNN
 * 4.55 (bench/results/h100/wstream/). */
static bool try_wstream(cu_ctx *c, int sm_count, int64_t limit)
{
    if (!cu_wstream_possible(c))
        return false;
    int nt = c->cfg.threads, ut = c->cfg.unit_tile;
    int64_t bt = c->cfg.batch_tile > 0 ? c->cfg.batch_tile : c->B < 128 ? c->B : 128;
    int64_t nbb = cu_cdiv(c->B, bt), per = sm_count / nbb > 0 ? sm_count / nbb : 1;
    int64_t u = ut ? ut : up(cu_cdiv(c->H, per), 8);
    bool fits;
    if (cu_cdiv(c->H, u) * nbb > sm_count)
        return false;
    c->cfg.unit_tile = (int)u;
    c->cfg.threads = 0;
    c->stream = false;
    cu_try_tiles(c, bt, 32, sm_count, limit, &fits);
    c->cfg.threads = nt;
    c->cfg.unit_tile = ut;
    /* batch groups after the first start at a multiple of 8 rows (the
     * swizzle of h's chunks, cu_bulk_linear): B = 320 takes 112, 112, 96 */
    if (c->NBB > 1 && cu_cdiv(c->B, up(c->BT, 8)) == c->NBB)
        c->BT = (int)up(c->BT, 8);
    /* wgmma's N: the batch rows padded to a multiple of 32, which the
     * result's layout (KSP) needs; the padding's products are never read */
    c->BTP = (int)up(c->BT, 32);
    c->wstream = true;
    c->bulk_lin = cu_bulk_linear(c);
    if (c->bulk_lin < 0) {
        c->wstream = false;
        return false;
    }
    /* 512 threads: a warpgroup a 64-row tile of the slice multiplies (up
     * to four), all share the element phase (H100, TF32 I = H = 1024, B =
     * 512, two warpgroups' worth: LSTM 5.18 -> 4.55 ms, GRU 4.45 -> 3.91;
     * I = H = 2048, B = 256 LSTM 9.51 -> 9.01) */
    c->NT = 512;
    c->bulk_state = ir_state_of(c->f, c->f->nodes[c->bulk_lin].a[0]);
    c->bulk = c->wgstep = c->wstream = c->mma = true;
    c->ksplit = false;
    c->kp[c->bulk_lin] = (int32_t)cu_kdim(c, c->bulk_lin);
    for (c->bulk_ns = 8; c->bulk_ns > 2 && lay_smem(c) > limit; c->bulk_ns--)
        ;
    if (lay_smem(c) <= limit && cu_wstream_fits(c) && (!nt || nt == c->NT))
        return true;
    c->bulk = c->wgstep = c->wstream = false;
    return false;
}

/* Outer products (cuda_outer.c) multiply h staged in chunks by bulk
 * copies: where the tuning asks for them, the tilings that stage it so
 * come first, batch tiles in the search's order, the widest chunks that
 * fit (the search below would take h whole, or in chunks the threads
 * stage, where those fit: at I = H = 512, B = 128 it does). */
static bool try_outer(cu_ctx *c, const int64_t *bts, int nb, int sm_count, int64_t limit)
{
    static const int64_t kcs[] = {128, 64, 32};
    if (!c->cfg.outer || cu_tensor_cores(c))
        return false;
    c->stream = false;
    for (int i = 0; i < nb; i++)
        for (size_t k = 0; k < sizeof kcs / sizeof kcs[0]; k++) {
            bool fits;
            cu_try_tiles(c, bts[i], kcs[k], sm_count, limit, &fits);
            if (fits && c->outer)
                return true;
        }
    return false;
}

/* Where the tuning asks for nothing, at 128 <= B <= 256 and H >= 512,
 * outer products at the first of 256, 384 and 512 threads (8 x 8 tiles)
 * that takes them, the tilings the autotuner picks.  The H200, T = 100,
 * against the tiling the search below picks (4 x 4 tiles): LSTM I = H =
 * 1024 B = 256 12.13 -> 10.94 ms, B = 128 7.39 -> 5.48; I = H = 512 B =
 * 128 1.79 -> 1.62, B = 256 3.29 -> 2.91; GRU I = H = 1024 B = 256 9.82 ->
 * 8.18, I = H = 512 B = 128 1.65 -> 1.45.  Where two thread counts took
 * them the first was the faster (bench/results/h200/heuristic/).  Larger
 * batches (whose tiles would grow past 8 x 8) and narrower h (which the
 * search stages whole rather than in bulk-copied chunks) keep the search's
 * tiling until measured; the autotuner still offers outer products there. */
static bool heuristic_outer(cu_ctx *c, const int64_t *bts, int nb, int sm_count, int64_t limit)
{
    static const int nts[] = {256, 384, 512};
    cg_cuda_config asked = c->cfg;
    if (c->B < 128 || c->B > 256 || asked.sizes.H < 512 || asked.unit_tile || asked.batch_tile ||
        asked.threads || asked.reg_rows || asked.reg_batch || asked.outer)
        return false;
    for (size_t i = 0; i < sizeof nts / sizeof nts[0]; i++) {
        c->cfg.threads = nts[i];
        c->cfg.reg_rows = c->cfg.reg_batch = 8;
        c->cfg.outer = true;
        if (try_outer(c, bts, nb, sm_count, limit) && c->RR == 8 && c->BB == 8)
            return true;
    }
    c->cfg = asked;
    return false;
}

/* Weights on chip with x staged in chunks of at least 128 columns; else
 * weights streamed from L2/HBM, one batch group first (each group reads
 * all of W_hh every step); else on chip with narrower chunks.  Each chunk
 * the threads stage costs a trip through L2 and two block barriers, so at
 * B = 256, H = 1024 32-column chunks (32 per step) cost more than reading
 * W_hh (16.8 MB, inside L2) every step with FFMA.  Tensor cores (which
 * need the weights on chip) turn that round: narrow chunks come before
 * streaming (H100, TF32 LSTM I = H = 1024, B = 256: 7.60 ms against 10.75
 * streamed, bench/results/h100/chunks/); so do FFMA's narrow chunks where
 * bulk copies stage them (cuda_bulk.c: several in flight, one barrier a
 * chunk).  Where the weights stay on chip and the threads would stage x
 * in wide chunks, 128-column chunks by bulk copies come first (H100, I =
 * H = 1024, B = 64: TF32 LSTM 1.620 -> 1.544 ms autotuned, FFMA's
 * heuristic tiling 2.52 -> 2.24 ms for 64 steps, though its autotuner
 * keeps streaming; at I = H = 512 x is staged whole and the bulk chunks
 * lost, B = 64 0.974 -> 1.059; bench/results/h100/bulk64/). */
static bool search(cu_ctx *c, int sm_count, int64_t limit)
{
    static const struct {
        bool stream;
        int64_t kc[6];
        int n;
    } passes[] = {{false, {0, 512, 256, 128}, 4},
                  {true, {0, 512, 256, 128, 64, 32}, 6},
                  {false, {64, 32}, 2}};
    /* (pass, taken only with bulk staging) */
    static const int ffma_order[][2] = {{0, 0}, {2, 1}, {1, 0}, {2, 0}},
                     tc_order[][2] = {{0, 0}, {2, 0}, {1, 0}};
    bool tc = cu_tensor_cores(c);
    const int(*order)[2] = tc ? tc_order : ffma_order;
    int n_order = tc ? 3 : 4;
    int64_t bts[48];
    int nb = cu_batch_tiles(c, bts);
    if (tc && try_ksplit(c, sm_count, limit))
        return true;
    if (try_outer(c, bts, nb, sm_count, limit) || heuristic_outer(c, bts, nb, sm_count, limit))
        return true;
    for (int o = 0; o < n_order; o++) {
        int s = order[o][0];
        bool bulk_only = order[o][1] != 0;
        if (tc && passes[s].stream && try_wstream(c, sm_count, limit))
            return true;
        c->stream = passes[s].stream;
        for (int i = 0; i < nb; i++) {
            int64_t bt = c->stream && c->cfg.batch_tile <= 0 ? (i == 0 ? c->B : bts[i]) : bts[i];
            for (int k = 0; k < passes[s].n; k++) {
                bool fits;
                cu_try_tiles(c, bt, passes[s].kc[k], sm_count, limit, &fits);
                /* narrow chunks pay only on tensor cores, or staged by
                 * bulk copies */
                if (!fits || (s == 2 && tc && !c->mma) || (bulk_only && !c->bulk))
                    continue;
                if (c->stream || !thread_chunks(c) || try_bulk_chunks(c, bt, sm_count, limit, tc))
                    return true;
                /* no bulk chunks here: back to the threads' chunks */
                cu_try_tiles(c, bt, passes[s].kc[k], sm_count, limit, &fits);
                return true;
            }
        }
    }
    return false;
}

rnnc_status cu_choose_tiles(cu_ctx *c)
{
    int sm_count = c->cfg.sm_count > 0 ? c->cfg.sm_count : 132;
    int64_t limit = c->cfg.smem_limit > 0 ? c->cfg.smem_limit : SMEM_LIMIT_DEFAULT;
    c->NP = 1;
    if (!search(c, sm_count, limit) && !cu_try_passes(c, sm_count, limit))
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "fused backend: cell '%s' at B=%lld, H=%lld does not fit one "
                        "persistent kernel (%d units x %d rows per block, %lld bytes of "
                        "shared memory, %d blocks on %d SMs)",
                        c->f->name, (long long)c->B, (long long)c->H, c->UT, c->BT,
                        (long long)(c->smem_floats * 4), c->NUB * c->NBB, sm_count);
    place_partials(c);
    c->plan->passes = c->NP;
    int kc = 0;
    for (int32_t i = 0; i < c->f->n; i++)
        if (c->role[i] == CU_STEP_LINEAR && c->kc[i] < (c->cols[c->f->nodes[i].a[0]] + 3) / 4 * 4)
            kc = c->kc[i];
    char np[24] = "";
    if (c->NP > 1)
        snprintf(np, sizeof np, " np=%d", c->NP);
    snprintf(c->plan->tuning, sizeof c->plan->tuning,
             "ut=%d bt=%d nt=%d rr=%d bb=%d grid=%d%s%s kc=%d%s", c->UT, c->BT, c->NT, c->RR,
             c->BB, c->NUB * c->NBB, c->stream ? " stream" : "", np, kc,
             c->ksplit    ? " wgmma ksplit"
             : c->wstream ? " wgmma wstream"
             : c->wgstep  ? " wgmma"
             : c->mma     ? " mma"
             : c->outer   ? " outer"
                          : "");
    return RNNC_OK;
}
