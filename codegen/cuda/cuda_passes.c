/*
 * cuda_passes.c: batch passes, the step kernel's tiling where no other fits.
 * Requires: cuda_tile.c's search (failed), cu_try_tiles and cu_batch_tiles.
 * Keeps: the tiling cu_try_tiles left, with c->NP passes a step (1 if none
 * fits) and c->gkeep; cu_lin_copies for the shared-memory layout and the
 * step's names; cu_place_keeps the global slots of gkeep.
 *
 * Where no tiling fits the GPU (an LSTM at B x H over about 2M: H = 2048,
 * B = 1024; H = 256, B = 16384), a block's batch group takes NP tiles of
 * rows one after the other each step, over weights streamed from L2 (a
 * tile's products no longer fit a block's registers and shared memory at
 * once).  Values kept for a later phase, and a step linear's result that
 * a later phase reads, take a copy a pass (cu_lin_copies; with one the
 * H100 gave 0.63 against the interpreter), or, where those copies do not
 * fit, a row a batch row in global memory (gkeep: through L2, written in
 * their own phase and read by the same block after its barrier).  cuDNN
 * accepts every such shape, so the fused backend must too (issue 9).
 *
 * Unless the tuning says otherwise: 256 threads with 8 x 8 register tiles,
 * in the tiling with the fewest products a block (NP BT R for R rows of
 * W), then the squarest, which reads the fewest bytes of W and h a product
 * ((R + BT) / (R BT)).  H100, fp32, T = 20 (bench/results/h100/passes/):
 * the first fit at 1024 threads spilled (4 x 8 tiles in 64 registers) and
 * ran an LSTM at H = 2048, B = 1024 in 232 ms; at 256 threads 16 units x
 * 256 rows 42.4, 32 x 128 39.0, cuDNN 27.7; H = 256, B = 16384 31.8, 256
 * x 16 13.6, 128 x 32 12.3, 64 x 64 11.9, cuDNN 9.2.
 */
#include "codegen/cuda/cuda_gen.h"

bool cu_lin_read_later(const cu_ctx *c, int32_t lin)
{
    for (int32_t j = 0; j < c->f->n; j++)
        for (int k = 0; k < 3; k++)
            if (c->f->nodes[j].a[k] == lin && c->phase[j] > c->phase[lin])
                return true;
    return false;
}

/* Copies of linear lin's result: one a batch pass where a later phase
 * reads it (the pass loop of each phase would overwrite it) and it stays
 * in shared memory, else one. */
int cu_lin_copies(const cu_ctx *c, int32_t lin)
{
    return c->NP > 1 && !c->gkeep && cu_lin_read_later(c, lin) ? c->NP : 1;
}

/* Node i's value crosses into a later phase: kept a copy a pass, or in
 * global memory (gkeep). */
static bool crosses_phases(const cu_ctx *c, int32_t i)
{
    return ((c->need[i] & CU_NEED_XP) && c->role[i] == CU_STEP_ELEM) ||
           (c->role[i] == CU_STEP_LINEAR && cu_lin_read_later(c, i));
}

/* Whether anything crosses phases (so that keeping it in global memory
 * could free shared memory). */
static bool keeps_any(const cu_ctx *c)
{
    for (int32_t i = 0; i < c->f->n; i++)
        if (crosses_phases(c, i))
            return true;
    return false;
}

/* One tiling of NP passes, kept values in shared memory or (gkeep) in
 * global memory. */
static bool pass_tiling_fits(cu_ctx *c, const int64_t *bts, int nb, int sm_count, int64_t limit)
{
    int64_t one = cu_cdiv(c->B, c->NP);
    for (int i = -1; i < nb; i++) {
        int64_t bt = c->cfg.batch_tile > 0 ? c->cfg.batch_tile : i < 0 ? one : bts[i];
        if (i >= 0 && (c->cfg.batch_tile > 0 || bt >= one))
            continue;
        static const int64_t kcs[] = {0, 512, 256, 128, 64, 32};
        for (int k = 0; k < 6; k++) {
            bool fits;
            cu_try_tiles(c, bt, kcs[k], sm_count, limit, &fits);
            /* more passes rather than register tiles grown past the
             * asked ones (they spill) */
            bool grown = (c->cfg.reg_rows && c->RR > c->cfg.reg_rows) ||
                         (c->cfg.reg_batch && c->BB > c->cfg.reg_batch);
            if (fits && !grown)
                return true;
        }
    }
    return false;
}

/* The fewest batch passes that fit (cu_try_passes); with `global`, at
 * each count the kept values in shared memory first, then in global
 * memory.  A copy a pass of every value that crosses phases is a block's
 * whole batch group of them: a layernorm LSTM at H = 128, B = 16384, or
 * any cell's backward step at B = 2048, H = 1024, never fit. */
static bool passes_fit(cu_ctx *c, const int64_t *bts, int nb, int sm_count, int64_t limit,
                       bool global)
{
    int ways = global && keeps_any(c) ? 2 : 1;
    c->stream = true;
    for (c->NP = 2; c->NP <= 4096 && c->NP <= c->B; c->NP *= 2)
        for (int g = 0; g < ways; g++) {
            c->gkeep = g == 1;
            if (pass_tiling_fits(c, bts, nb, sm_count, limit))
                return true;
        }
    c->NP = 1;
    c->gkeep = false;
    return false;
}

/* Rows of W a unit of the step's linears brings (LSTM 4, GRU 3). */
static int64_t unit_rows(const cu_ctx *c)
{
    int64_t most = 1;
    for (int32_t i = 0; i < c->f->n; i++)
        if (c->role[i] == CU_STEP_LINEAR && cu_slices(c, i) > most)
            most = cu_slices(c, i);
    return most;
}

/* The batch tiles a pass tries: powers of two from 8, then the most
 * rows the lanes hold. */
static int64_t next_tile(int64_t bt, int64_t most)
{
    return bt == most || 2 * bt <= most ? 2 * bt : most;
}

/* The best tiling of 256 threads (above) into *ut, *bt; false where none
 * fits. */
static bool best_tiling(cu_ctx *c, const int64_t *bts, int nb, int sm_count, int64_t limit,
                        bool global, int *best_ut, int *best_bt)
{
    const cg_cuda_config asked = c->cfg;
    int64_t per = 256LL * c->cfg.reg_rows * c->cfg.reg_batch, rows = unit_rows(c);
    double best_work = 0, best_sq = 0;
    *best_ut = *best_bt = 0;
    for (int64_t ut = 8; ut < 2 * c->H; ut *= 2) {
        int64_t u = asked.unit_tile ? asked.unit_tile : ut, most = per / (rows * u) / 8 * 8;
        for (int64_t bt = 8; bt <= most; bt = next_tile(bt, most)) {
            c->cfg.unit_tile = (int)u;
            c->cfg.batch_tile = (int)(asked.batch_tile ? asked.batch_tile : bt);
            if (!passes_fit(c, bts, nb, sm_count, limit, global))
                continue;
            double R = (double)rows * c->UT, work = (double)c->NP * c->BT * R,
                   sq = (R + c->BT) / (R * c->BT);
            if (!*best_ut || work < 0.97 * best_work || (work < 1.03 * best_work && sq < best_sq)) {
                best_work = work;
                best_sq = sq;
                *best_ut = c->cfg.unit_tile;
                *best_bt = c->cfg.batch_tile;
            }
        }
        if (asked.unit_tile)
            break;
    }
    c->cfg = asked;
    return *best_ut > 0;
}

/* The tiling of batch passes (above); false where none fits.  Kept values
 * go to global memory only where no tiling keeps them in shared memory
 * (whose tilings the H100 measured). */
bool cu_try_passes(cu_ctx *c, int sm_count, int64_t limit)
{
    int64_t bts[48];
    int nb = cu_batch_tiles(c, bts);
    cg_cuda_config asked = c->cfg;
    if (asked.threads)
        return passes_fit(c, bts, nb, sm_count, limit, false) ||
               passes_fit(c, bts, nb, sm_count, limit, true);
    c->cfg.threads = 256;
    c->cfg.reg_rows = asked.reg_rows ? asked.reg_rows : 8;
    c->cfg.reg_batch = asked.reg_batch ? asked.reg_batch : 8;
    int ut, bt;
    bool global = false, found = best_tiling(c, bts, nb, sm_count, limit, false, &ut, &bt);
    if (!found)
        found = best_tiling(c, bts, nb, sm_count, limit, global = true, &ut, &bt);
    if (found) {
        c->cfg.unit_tile = ut;
        c->cfg.batch_tile = bt;
        found = passes_fit(c, bts, nb, sm_count, limit, global);
    }
    c->cfg = asked;
    return found;
}
/* The global slots of kept values (c->gkeep): a value already written
 * whole for a later linear (CU_NEED_XB) is read back from there; others,
 * and linear results, get a slot of their own in xb. */
void cu_place_keeps(cu_ctx *c)
{
    if (!c->gkeep)
        return;
    cg_cuda_plan *p = c->plan;
    for (int32_t i = 0; i < c->f->n; i++) {
        if (!crosses_phases(c, i))
            continue;
        if (c->xb[i] >= 0) {
            c->xg[i] = c->xb[i];
            continue;
        }
        p->xb_floats = (p->xb_floats + 3) / 4 * 4;
        c->xg[i] = p->xb_floats;
        p->xb_floats += c->B * c->cols[i];
    }
}
