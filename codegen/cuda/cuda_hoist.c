/*
 * cuda_hoist.c: the hoisted (time-parallel) part.  Each hoisted linear is
 * one generated GEMM over all T*B rows (x [T*B, I] times W^T, tiles of
 * 128x128 rows x columns, or smaller for small batches, double-buffered
 * through registers); hoisted values that are pointwise per
 * column over that linear are computed in its epilogue and stored directly.
 * Whatever else the step reads (layernorm over the gates, chunks of mixed
 * values) is computed by a row kernel, one block per row, after the GEMMs
 * (cuda_rows.c).
 */
#include <stdio.h>

#include "codegen/cuda/cuda_gen.h"

bool cu_hoist_fail(const cu_ctx *c, int32_t v, const char *why)
{
    err_fail(RNNC_ERR_UNSUPPORTED, "fused backend: %s (node %d, op %s) in cell '%s'", why, v,
             ir_ops[c->f->nodes[v].op].name, c->f->name);
    return false;
}

/* Value of hoisted/fold node v at column `col` of the GEMM epilogue of lin. */
static bool epi_expr(const cu_ctx *c, int32_t v, int32_t lin, char *buf, size_t n)
{
    const ir_node *nd = &c->f->nodes[v];
    char a[2048], b[2048];
    if (v == lin) {
        snprintf(buf, n, "acc");
        return true;
    }
    if (c->role[v] == CU_LEAF_CONST)
        return cu_float_lit(nd->f, buf, n) != NULL;
    if (c->role[v] == CU_LEAF_FOLD) {
        snprintf(buf, n, c->cols[v] == 1 ? "fold[%lld]" : "fold[%lld + col]", (long long)c->off[v]);
        return true;
    }
    const char *uf = cu_unary_fmt(c, nd->op), *bo = cu_binary_op(nd->op);
    /* An expression too long for buf fails cleanly rather than as cut-off CUDA. */
    int k = -1;
    if (nd->op == IR_DROPOUT) {
        if (!epi_expr(c, nd->a[0], lin, a, sizeof a))
            return false;
        if (cu_dropout_row(c, v, a, "m", "col", buf, n))
            return true;
        return cu_hoist_fail(c, v, "GEMM epilogue expression too long");
    }
    if (uf && epi_expr(c, nd->a[0], lin, a, sizeof a))
        k = snprintf(buf, n, uf, a);
    else if (bo && epi_expr(c, nd->a[0], lin, a, sizeof a) &&
             epi_expr(c, nd->a[1], lin, b, sizeof b))
        k = snprintf(buf, n, "(%s) %s (%s)", a, bo, b);
    if (k >= 0 && (size_t)k < n)
        return true;
    if (k >= 0)
        return cu_hoist_fail(c, v, "GEMM epilogue expression too long");
    return cu_hoist_fail(c, v, "no GEMM epilogue for this value");
}

/* The tile: BM rows of T*B by BN columns, K in slices of BK (BM * BK =
 * 1024: one 16-byte load of x per thread per slice), 256 threads as 16 x 16
 * each owning (BM/16) x (BN/16) outputs.  Small batches get small tiles with
 * deep K slices, so few rows still spread over the SMs and each slice's
 * loads cover their latency (B=1 with 128x128 tiles ran on 16 SMs). */
static cu_tile choose_tile(const cu_ctx *c, int32_t lin)
{
    int r = c->cfg.gemm_rows;
    if (r != 32 && r != 64 && r != 128)
        r = c->B <= 4 ? 32 : c->B <= 16 ? 64 : 128;
    cu_tile g = {.lin = lin, .bm = r, .bn = r == 32 ? 64 : 128, .bk = 1024 / r};
    g.tm = g.bm / 16;
    g.tn = g.bn / 16;
    return g;
}

/* Load q of a thread (16 bytes of row `idx / (BK/4)` of the tile) into dst. */
static void emit_gemm_load(cu_text *t, const cu_tile *g, const char *dst, const char *src,
                           const char *rows, long long K, const char *r0, int q, bool half)
{
    int k4 = g->bk / 4;
    cu_printf(t,
              "        {\n            const int lr = (tid + %d) / %d, lk = ((tid + %d) %% %d) * 4;\n",
              q * 256, k4, q * 256, k4);
    if (K % 4 == 0)
        cu_printf(t,
                  "            %s = make_float4(0.f, 0.f, 0.f, 0.f);\n"
                  "            if (%s + lr < %s && k0 + lk < %lld) %s = %s__ldg((const %s *)(%s + "
                  "(size_t)(%s + lr) * %lld + k0 + lk))%s;\n",
                  dst, r0, rows, K, dst, half ? "rnnc_h4(" : "", half ? "uint2" : "float4", src,
                  r0, K, half ? ")" : "");
    else
        cu_printf(t,
                  "            float v_[4];\n"
                  "            for (int q = 0; q < 4; ++q) v_[q] = (%s + lr < %s && k0 + lk + q < "
                  "%lld) ? %s(__ldg(%s + (size_t)(%s + lr) * %lld + k0 + lk + q)) : 0.f;\n"
                  "            %s = make_float4(v_[0], v_[1], v_[2], v_[3]);\n",
                  r0, rows, K, half ? "rnnc_h2f" : "", src, r0, K, dst);
    cu_printf(t, "        }\n");
}

/* The loads of a K slice: x's rows (asrc, 16-bit where ahalf), then W's. */
static void emit_gemm_loads(cu_text *t, const cu_tile *g, const char *asrc, bool ahalf,
                            const char *wsrc, long long K, bool half)
{
    emit_gemm_load(t, g, "ra", asrc, "M", K, "m0", 0, ahalf);
    for (int q = 0; q < g->bn / g->bm; q++) {
        char dst[16];
        snprintf(dst, sizeof dst, "rw[%d]", q);
        emit_gemm_load(t, g, dst, wsrc, "N_", K, "n0", q, half);
    }
}

/* STORE_(buf): the loaded slices, transposed, into As/Ws[buf][k][row]. */
static void emit_gemm_store(cu_text *t, const cu_tile *g)
{
    int k4 = g->bk / 4;
    cu_printf(t, "#define STORE_(buf) { \\\n");
    for (int q = -1; q < g->bn / g->bm; q++) {
        char v[16];
        snprintf(v, sizeof v, q < 0 ? "ra" : "rw[%d]", q);
        int qq = q < 0 ? 0 : q;
        cu_printf(t,
                  "    { const int lr = (tid + %d) / %d, lk = ((tid + %d) %% %d) * 4; "
                  "%s[buf][lk][lr] = %s.x; %s[buf][lk + 1][lr] = %s.y; %s[buf][lk + 2][lr] = %s.z; "
                  "%s[buf][lk + 3][lr] = %s.w; } \\\n",
                  qq * 256, k4, qq * 256, k4, q < 0 ? "As" : "Ws", v, q < 0 ? "As" : "Ws", v,
                  q < 0 ? "As" : "Ws", v, q < 0 ? "As" : "Ws", v);
    }
    cu_printf(t, "}\n");
}

/* A thread's fragment of a tile of width w along one axis: groups of 4 (or
 * 2) consecutive rows 64 apart, so the shared loads are 16 (or 8) bytes. */
static void frag_loads(cu_text *t, const char *arr, const char *who, int w, const char *name)
{
    int tm = w / 16;
    if (tm >= 4) {
        for (int g = 0; g < tm / 4; g++)
            cu_printf(t, "            const float4 %s%d = *(const float4 *)&%s[cb][kk][%d + %s * 4];\n",
                      name, g, arr, g * 64, who);
        cu_printf(t, "            const float %s_[%d] = {", name, tm);
        for (int g = 0; g < tm / 4; g++)
            cu_printf(t, "%s%s%d.x, %s%d.y, %s%d.z, %s%d.w", g ? ", " : "", name, g, name, g, name,
                      g, name, g);
        cu_printf(t, "};\n");
    } else {
        cu_printf(t,
                  "            const float2 %s0 = *(const float2 *)&%s[cb][kk][%s * 2];\n"
                  "            const float %s_[2] = {%s0.x, %s0.y};\n",
                  name, arr, who, name, name, name);
    }
}

/* Tile row of fragment element i (C expression) for per-thread width tm. */
static void frag_index(char *buf, size_t n, int tm, const char *who, const char *i)
{
    if (tm >= 4)
        snprintf(buf, n, "(%s / 4) * 64 + %s * 4 + %s %% 4", i, who, i);
    else
        snprintf(buf, n, "%s * 2 + %s", who, i);
}

/* rnnc_rows<lin>(M): the rows the large tiles take (cg_cuda_split_rows). */
void cu_emit_gemm_rows(const cu_tile *g, cu_text *t)
{
    cu_printf(t,
              "/* rows of M the large tiles take: whole waves of %u blocks (a last wave under */\n"
              "/* half full is left to the tail's small tiles) */\n"
              "__device__ __forceinline__ int rnnc_rows%d(int M)\n{\n"
              "    const int tiles = (M + %u) / %u * %u, rem = tiles %% %u;\n"
              "    return rem == 0 || rem * 2 > %u ? M : min(M, (tiles - rem) / %u * %u);\n}\n",
              g->split.wave, (int)g->lin, g->split.bm - 1, g->split.bm, g->split.cb, g->split.wave,
              g->split.wave, g->split.cb, g->split.bm);
}

/* Where a GEMM block's tile lies: by block index; with a split, only the
 * rows of whole waves; a tail walks the tiles of the rows left (its grid is
 * fixed), and lets the kernel after it start at once: it reads nothing the
 * large tiles write, and waits for them at its end (rnnc_pdl_wait). */
void cu_emit_gemm_head(const cu_ctx *c, const cu_tile *g, cu_text *t)
{
    if (!g->tail) {
        char rows[48];
        if (g->split.wave)
            snprintf(rows, sizeof rows, "rnnc_rows%d(T * %lld)", (int)g->lin, (long long)c->B);
        else
            snprintf(rows, sizeof rows, "T * %lld", (long long)c->B);
        /* Blocks start in the order of their index.  The FFMA tiles go down
         * the rows (blockIdx.x) first, the cp.async tiles across the columns:
         * then the blocks running at once share a few row tiles of x, which
         * L2 keeps, instead of all of it (TF32 I = H = 1024, B = 256: x is
         * 105 MB and was read from HBM once per column of tiles; its GEMM
         * went 2.07 -> 1.74 ms on the H100).  The FFMA tiles lost 3-6% in
         * that order (bench/results/h100/raster/). */
        cu_printf(t,
                  "    rnnc_pdl();\n"
                  "    const int M = %s, tid = threadIdx.x, tx = tid %% 16, ty = tid / 16;\n",
                  rows);
        if (g->g16 || g->wg)
            cu_printf(t,
                      "    const int b_ = blockIdx.x + blockIdx.y * gridDim.x;\n"
                      "    const int m0 = b_ / gridDim.y * %d, n0 = b_ %% gridDim.y * %d;\n",
                      g->bm, g->bn);
        else
            cu_printf(t, "    const int m0 = blockIdx.x * %d, n0 = blockIdx.y * %d;\n", g->bm, g->bn);
        if (g->split.wave)
            cu_printf(t, "    if (m0 >= M) return; /* the tail's rows */\n");
        return;
    }
    long long cb = (long long)((c->cols[g->lin] + g->bn - 1) / g->bn);
    cu_printf(t,
              "    rnnc_pdl_go();\n"
              "    const int M = T * %lld, R_ = rnnc_rows%d(M), tid = threadIdx.x, tx = tid %% 16, "
              "ty = tid / 16;\n"
              "    for (int tl_ = blockIdx.x; ; tl_ += gridDim.x) {\n"
              "    const int m0 = R_ + tl_ / %lld * %d, n0 = tl_ %% %lld * %d;\n"
              "    if (m0 >= M) break;\n",
              (long long)c->B, (int)g->lin, cb, g->bm, cb, g->bn);
}

/* The GEMM of launch i (its tile and linear in c->tile[i]), named
 * rnnc_gemm<lin>, with suffix s for the small tiles, t for a tail. */
static bool emit_gemm(const cu_ctx *c, int i, cu_text *t)
{
    cu_tile g = c->tile[i];
    int32_t lin = g.lin;
    const char *sfx = g.tail ? "t" : g.small ? "s" : "";
    const ir_node *nd = &c->f->nodes[lin];
    long long K = (long long)c->cols[nd->a[0]];
    char wsrc[64], asrc[64], e[4096], ri[160], ci[160];
    /* tensor cores: the accumulators in mma fragment order, shared rows
     * padded to 8 mod 32 floats (conflict-free fragment loads) */
    bool mma = cu_mma_gemm(c, g.bm, g.bn, g.bk);
    int pad = mma && !c->half ? 8 : 4; /* a half model's pairs of k rows: 4 mod 32 */
    if (mma)
        cu_mma_gemm_layout(g.bm, g.bn, &g.tm, &g.tn, ri, ci, sizeof ri);
    snprintf(wsrc, sizeof wsrc, "(wts + %lld)", (long long)c->off[nd->a[1]]);
    /* x, or the fp32 buffer an earlier round made (cuda_rounds.c) */
    bool staged = cu_gemm_staged(c, lin);
    if (staged)
        snprintf(asrc, sizeof asrc, "(hz + (size_t)%lld * TB)", (long long)c->off[nd->a[0]]);
    else
        snprintf(asrc, sizeof asrc, "x");
    if (g.split.wave && !g.tail)
        cu_emit_gemm_rows(&g, t);
    cu_printf(t, "/* %s over %s: tiles of %d x %d%s%s */\n", cu_describe(c, lin, e, sizeof e),
              g.tail ? "the rows its large tiles leave" : g.split.wave ? "the rows of whole waves"
                                                      : "all T*B rows",
              g.bm, g.bn, g.small && !g.tail ? " for few rows" : "", mma ? ", tensor cores" : "");
    /* Two FFMA 128 x 128 tiles an SM, said to ptxas: held to 125 registers
     * (128 with __launch_bounds__(256) alone) every FFMA forward was 3%
     * faster on the H100 (4 layers 3.74 -> 3.64 ms, I = H = 1024, B = 256
     * 12.05 -> 11.67), and an index more (the columns-first order) had
     * taken the tile to 132 registers, one block an SM, its GEMM 4.98 ->
     * 7.28 ms (ncu; bench/results/h100/raster/). */
    cu_printf(t,
              "extern \"C\" __global__ void __launch_bounds__(256%s) rnnc_gemm%d%s(%s)\n{\n"
              "    __shared__ __align__(16) float As[2][%d][%d];\n"
              "    __shared__ __align__(16) float Ws[2][%d][%d];\n",
              !mma && g.bm == 128 ? ", 2" : "", (int)lin, sfx, cu_args(c), g.bk, g.bm + pad, g.bk,
              g.bn + pad);
    cu_emit_gemm_head(c, &g, t);
    cu_printf(t,
              "    const size_t TB = (size_t)T * %lld;\n"
              "    (void)y; (void)st; (void)xb; (void)part; (void)bar; (void)fold; (void)TB; (void)tx; (void)ty;\n"
              "    float c_[%d][%d];\n"
              "    for (int i = 0; i < %d; ++i) for (int j = 0; j < %d; ++j) c_[i][j] = 0.f;\n"
              "    float4 ra, rw[%d];\n    int k0 = 0;\n",
              (long long)c->B, g.tm, g.tn, g.tm, g.tn, g.bn / g.bm);
    emit_gemm_loads(t, &g, asrc, c->half && !staged, wsrc, K, c->half);
    emit_gemm_store(t, &g);
    cu_printf(t,
              "    STORE_(0);\n    __syncthreads();\n"
              "    for (int it = 0; k0 < %lld; ++it) {\n"
              "        const int cb = it & 1;\n"
              "        k0 += %d;\n"
              "        const bool more = k0 < %lld;\n"
              "        if (more) {\n",
              K, g.bk, K);
    emit_gemm_loads(t, &g, asrc, c->half && !staged, wsrc, K, c->half);
    cu_printf(t, "        }\n");
    if (mma) {
        cu_emit_mma_gemm_slice(t, g.bm, g.bn, g.bk, c->half);
    } else {
        cu_printf(t, "#pragma unroll\n        for (int kk = 0; kk < %d; ++kk) {\n", g.bk);
        frag_loads(t, "As", "ty", g.bm, "a");
        frag_loads(t, "Ws", "tx", g.bn, "b");
        frag_index(ri, sizeof ri, g.tm, "ty", "i");
        frag_index(ci, sizeof ci, g.tn, "tx", "j");
        cu_printf(t,
                  "#pragma unroll\n"
                  "            for (int i = 0; i < %d; ++i)\n"
                  "#pragma unroll\n"
                  "                for (int j = 0; j < %d; ++j) c_[i][j] = fmaf(a_[i], b_[j], c_[i][j]);\n"
                  "        }\n",
                  g.tm, g.tn);
    }
    cu_printf(t,
              "        if (more) STORE_(cb ^ 1);\n"
              "        __syncthreads();\n"
              "    }\n"
              "#undef STORE_\n");
    /* the FFMA tiles' columns come in fours (twos at 32 rows), mma's in pairs */
    if (!cu_emit_gemm_epilogue(c, lin, g.tm, g.tn, mma || g.tn < 4 ? 2 : 4, ri, ci, false, t))
        return false;
    /* the tail finishes after its large tiles: the kernel after it waits for both */
    if (g.tail)
        cu_printf(t, "    }\n    rnnc_pdl_wait();\n");
    cu_printf(t, "}\n");
    return true;
}

/* The first value from v on that linear lin's epilogue stores (a hoisted
 * buffer made from it), or -1. */
static int32_t next_output(const cu_ctx *c, int32_t lin, int32_t v)
{
    for (; v < c->f->n; v++)
        if (c->role[v] == CU_HOIST_BUF && c->gemm[v] == lin)
            return v;
    return -1;
}

/* The loops over the thread's rows and runs of columns, indented by `in`
 * spaces: m and col0 in scope, rows past M and runs past N_ skipped. */
static void emit_run_loops(int in, int tm, const char *ri, int tn, int w, const char *ci,
                           cu_text *t)
{
    cu_printf(t,
              "#pragma unroll\n"
              "%*sfor (int i = 0; i < %d; ++i) {\n"
              "%*s    const int m = m0 + %s;\n"
              "%*s    if (m >= M) continue;\n"
              "#pragma unroll\n"
              "%*s    for (int jv = 0; jv < %d; ++jv) {\n"
              "%*s        const int j = jv * %d, col0 = n0 + %s;\n"
              "%*s        if (col0 >= N_) continue;\n",
              in, "", tm, in, "", ri, in, "", in, "", tn / w, in, "", w, ci, in, "");
}

/* Value lhs of the accumulator c_[i][j + e_] at column col: expression e of
 * acc and col (either may go unused), indented by 20 spaces. */
static void emit_value(const char *lhs, const char *e, cu_text *t)
{
    cu_printf(t,
              "                    const float acc = c_[i][j + e_];\n"
              "                    (void)acc; (void)col;\n"
              "                    %s = %s;\n",
              lhs, e);
}

/* The store of one run of w values of output v at row m from column col0:
 * one w-wide vector where the run is whole and aligned (a warp's scalar
 * stores touched a 32-byte sector for 4 or 8 bytes of it), else one by
 * one.  The values are run[k] (at_j: run[j + k]). */
static void emit_run_store(const cu_ctx *c, int32_t v, int32_t lin, int w, const char *run, bool at_j,
                           cu_text *t)
{
    char vals[128];
    int n = 0;
    for (int k = 0; k < w && n >= 0 && n < (int)sizeof vals; k++)
        n += at_j ? snprintf(vals + n, sizeof vals - n, k ? ", %s[j + %d]" : "%s[j]", run, k)
                  : snprintf(vals + n, sizeof vals - n, "%s%s[%d]", k ? ", " : "", run, k);
    const char *vec = w == 4 ? "float4" : "float2";
    cu_printf(t,
              "                float *const p_ = hz + (size_t)%lld * TB + (size_t)m * %lld + col0;\n"
              "                if (col0 + %d <= N_ && ((size_t)p_ & %d) == 0)\n"
              "                    *(%s *)p_ = make_%s(%s);\n"
              "                else\n"
              "                    for (int e_ = 0; e_ < %d && col0 + e_ < N_; ++e_) p_[e_] = %s[%se_];\n",
              (long long)c->off[v], (long long)c->cols[lin], w, 4 * w - 1, vec, vec, vals, w, run,
              at_j ? "j + " : "");
}

/* The epilogue, every value first (`first`): for each output, all the
 * thread's values are computed (columns clamped, no branches), then
 * stored.  The loads the values read (the bias, fold[col]) then go out
 * together, where between stores that may alias them each waited for its
 * own round trip: the wgmma tiles' warps spent about a fifth of their
 * samples on those waits (H100, TF32 LSTM I = H = 1024 B = 256: GEMM 850.6
 * -> 802.0 us; bench/results/h100/epilogue/).  The FFMA tiles lost 2-3%
 * that way (4-layer LSTM B = 64 3.88 -> 4.01 ms, B = 128 1.78 -> 1.81), so
 * they compute each run beside its store. */
static bool epilogue_first(const cu_ctx *c, int32_t lin, int tm, int tn, int w, const char *ri,
                           const char *ci, cu_text *t)
{
    char e[4096], d[256];
    for (int32_t v = next_output(c, lin, 0); v >= 0; v = next_output(c, lin, v + 1)) {
        if (!epi_expr(c, v, lin, e, sizeof e))
            return false;
        cu_printf(t,
                  "    { /* %s */\n"
                  "        float v_[%d][%d];\n"
                  "#pragma unroll\n"
                  "        for (int i = 0; i < %d; ++i)\n"
                  "#pragma unroll\n"
                  "            for (int jv = 0; jv < %d; ++jv)\n"
                  "#pragma unroll\n"
                  "                for (int e_ = 0; e_ < %d; ++e_) {\n"
                  "                    const int j = jv * %d, col = min(n0 + %s + e_, N_ - 1);\n"
                  "                    const int m = m0 + %s; (void)m; /* a dropout's row */\n",
                  cu_describe(c, v, d, sizeof d), tm, tn, tm, tn / w, w, w, ci, ri);
        emit_value("v_[i][j + e_]", e, t);
        cu_printf(t, "                }\n");
        emit_run_loops(8, tm, ri, tn, w, ci, t);
        emit_run_store(c, v, lin, w, "v_[i]", true, t);
        cu_printf(t, "            }\n        }\n    }\n");
    }
    return true;
}

/* The epilogue of a tile whose thread owns accumulators c_[tm][tn] at tile
 * row ri(i) and column ci(j), columns consecutive in runs of w (j = w jv +
 * e is column ci(w jv) + e): each run's values computed, then stored
 * (emit_run_store); or every value first (first, epilogue_first).  The
 * column read by a value's expression is clamped to the last one
 * (fold[col] past N_ is out of bounds). */
bool cu_emit_gemm_epilogue(const cu_ctx *c, int32_t lin, int tm, int tn, int w, const char *ri,
                           const char *ci, bool first, cu_text *t)
{
    if (first)
        return epilogue_first(c, lin, tm, tn, w, ri, ci, t);
    char e[4096], d[256];
    emit_run_loops(4, tm, ri, tn, w, ci, t);
    for (int32_t v = next_output(c, lin, 0); v >= 0; v = next_output(c, lin, v + 1)) {
        if (!epi_expr(c, v, lin, e, sizeof e))
            return false;
        cu_printf(t,
                  "            { /* %s */\n"
                  "                float v_[%d];\n"
                  "#pragma unroll\n"
                  "                for (int e_ = 0; e_ < %d; ++e_) {\n"
                  "                    const int col = min(col0 + e_, N_ - 1);\n",
                  cu_describe(c, v, d, sizeof d), w, w);
        emit_value("v_[e_]", e, t);
        cu_printf(t, "                }\n");
        emit_run_store(c, v, lin, w, "v_", false, t);
        cu_printf(t, "            }\n");
    }
    cu_printf(t, "        }\n    }\n");
    return true;
}

bool cu_emit_gemm_stores(const cu_ctx *c, int32_t lin, cu_text *t)
{
    char e[4096], d[256];
    for (int32_t v = next_output(c, lin, 0); v >= 0; v = next_output(c, lin, v + 1)) {
        if (!epi_expr(c, v, lin, e, sizeof e))
            return false;
        cu_printf(t, "            hz[(size_t)%lld * TB + (size_t)m * %lld + col] = %s; /* %s */\n",
                  (long long)c->off[v], (long long)c->cols[lin], e, cu_describe(c, v, d, sizeof d));
    }
    return true;
}

/* A GEMM launch of linear lin with tile g; it runs when min_rows <= T*B <
 * max_rows (0: no bound). */
static rnnc_status add_gemm(cu_ctx *c, cu_tile g, unsigned min_rows, unsigned max_rows)
{
    cg_cuda_launch *l = cu_new_launch(c, &g);
    if (!l)
        return RNNC_ERR_INTERNAL;
    snprintf(l->name, sizeof l->name, "rnnc_gemm%d%s", (int)g.lin,
             g.skinny ? "k" : g.tail ? "t" : g.small ? "s" : "");
    l->min_rows = min_rows;
    l->max_rows = max_rows;
    l->rows_per_block = (unsigned)g.bm;
    l->grid_y = (unsigned)((c->cols[g.lin] + g.bn - 1) / g.bn);
    l->split = g.split;
    l->tail = g.tail;
    if (g.tail) {
        /* a fixed grid that walks the tail's tiles: one block per wave slot */
        l->rows_per_block = 0;
        l->grid = g.split.wave;
        l->grid_y = 1;
    }
    l->threads = 256;
    l->smem = g.skinny ? cu_skinny_smem(c) : g.wg ? cu_wgmma_smem(c) : g.g16 ? cu_gemm16_smem() : 0;
    if (g.wg)
        cu_wgmma_launch(c, &g, l);
    return RNNC_OK;
}

/* The launches linear v's GEMM may take, counted as the first round's
 * are: the plan's first 8 launches (the first round, its row kernel and
 * the step: the choices made before there were rounds); a later round's
 * from what is left once every launch after it has one. */
static int launch_cap(const cu_ctx *c, int32_t v)
{
    if (c->round[v] <= 1)
        return 8;
    int later = 1 + c->n_rounds - c->round[v] + 1; /* the step; this and later rows */
    for (int32_t u = 0; u < c->f->n; u++)
        if (u != v && cu_is_hoisted_gemm(c, u) &&
            (c->round[u] > c->round[v] || (c->round[u] == c->round[v] && u > v)))
            later++;
    return CG_CUDA_MAX_LAUNCH - later + 2;
}

/* Linear v's GEMM launches: large tiles, and for short sequences small or
 * K-split ones. */
static rnnc_status place_gemm(cu_ctx *c, int32_t v)
{
    rnnc_status st;
    /* a GEMM over a buffer in hz takes the FFMA (or mma) tiles, which read
     * any fp32 rows: the K-split, cp.async and wgmma tiles' predicates say
     * they read x itself */
    int cap = launch_cap(c, v);
    if (cu_wgmma_shape_ok(c, v) && (st = cu_wgmma_place(c, v)))
        return st;
    cu_tile g = choose_tile(c, v),
            s = {.lin = v, .small = true, .bm = 32, .bn = 64, .bk = 32, .tm = 2, .tn = 4},
            k = {.lin = v, .skinny = true, .bm = 32, .bn = 32};
    /* Few rows (a short sequence: T = 1 at B = 64 is 64 rows) leave
     * most SMs idle with large tiles (16 blocks of 128 x 128 took about
     * 37 us at T = 1, B = 64, I = H = 512): below the row count where
     * the large tiles fill the SMs a second GEMM with small tiles runs,
     * and below about two waves of 32 x 32 tiles the K-split GEMM
     * (19.5 us for the small tiles at T = 1, B = 64: serial K). */
    int sms = c->cfg.sm_count > 0 ? c->cfg.sm_count : 132;
    long long cb = (c->cols[v] + g.bn - 1) / g.bn;
    unsigned split = (unsigned)((sms + cb - 1) / cb * g.bm);
    bool two = g.bm > s.bm && c->cfg.gemm_rows == 0 && c->plan->n_launch + 4 <= cap;
    /* room for this linear's launches, the row kernel and the step */
    unsigned lo = cu_skinny_fits(c, v) && c->plan->n_launch + (two ? 5 : 4) <= cap
                      ? cu_skinny_rows(c, v)
                      : 0;
    if (two && lo >= split)
        lo = split, two = false;
    /* The large tiles' last wave (800 tiles of 128 x 128 at T = 100, B
     * = 64, I = H = 512 are 3.03 waves of two blocks on each of 132
     * SMs) costs a whole wave's time for a few blocks; when it is under
     * half full its rows go to a tail launch of small tiles over all
     * the SMs instead.  Two blocks of 128 x 128 fit an SM.  Only for
     * the FFMA tiles: the tensor cores' (wgmma, and the 16-bit
     * pipeline's of the half models and of the math modes without
     * wgmma) run a wave in far less time than the tail, one block an
     * SM walking its small tiles' K in slices (340 us for the last
     * 256 rows at T = 100, B = 256, I = H = 1024 in TF32, where a wave
     * of wgmma tiles takes about 22).  On the H100 without it: TF32
     * LSTM there 4.09 -> 3.78 ms, 3xtf32 LSTM B = 64 0.704 -> 0.668,
     * bf16 B = 256 2.62 -> 2.52, bf16 B = 64 0.427 -> 0.405; FFMA
     * level (11.52 -> 11.45 at B = 256, +-0.7% over the stacks, so
     * kept) (bench/results/h100/notail/, rejected/no-tail/). */
    cu_tile tl = s;
    g.wg = cu_wgmma_fits(c, &g);
    g.g16 = !g.wg && cu_gemm16_fits(c, &g);
    bool tail = two && g.bm == 128 && !g.wg && !g.g16 && c->plan->n_launch + (lo ? 6 : 5) <= cap;
    if (tail) {
        /* (two FFMA tiles an SM) */
        g.split = (cg_cuda_split){2u * (unsigned)sms, (unsigned)g.bm, (unsigned)cb};
        tl.split = g.split;
        tl.tail = true;
    }
    if ((st = add_gemm(c, g, two ? split : lo, 0)) ||
        (tail && (st = add_gemm(c, tl, split, 0))) ||
        (two && lo < split && (st = add_gemm(c, s, lo, split))) ||
        (lo && (st = add_gemm(c, k, 0, lo))))
        return st;
    return RNNC_OK;
}

rnnc_status cu_place_hoist(cu_ctx *c)
{
    rnnc_status st;
    cu_place_rounds(c);
    for (int r = 1; r <= c->n_rounds; r++) {
        for (int32_t v = 0; v < c->f->n; v++)
            if (cu_is_hoisted_gemm(c, v) && c->round[v] == r && (st = place_gemm(c, v)))
                return st;
        if ((st = cu_place_rows(c, r)))
            return st;
    }
    return RNNC_OK;
}

rnnc_status cu_emit_hoist(const cu_ctx *c, cu_text *t)
{
    const cg_cuda_plan *p = c->plan;
    for (int i = 0; i < p->n_launch; i++) {
        int32_t lin = c->tile[i].lin;
        if (lin < 0 && c->tile[i].row_round && !cu_emit_rows(c, i, t))
            return RNNC_ERR_UNSUPPORTED;
        if (lin < 0)
            continue;
        if (i == 0 || c->tile[i - 1].lin != lin)
            cu_printf(t, "#define N_ %lld\n", (long long)c->cols[lin]);
        const cu_tile *g = &c->tile[i];
        if (!(g->skinny ? cu_emit_skinny(c, i, t)
              : g->wg   ? cu_emit_wgmma(c, i, t)
              : g->g16  ? cu_emit_gemm16(c, i, t)
                        : emit_gemm(c, i, t)))
            return RNNC_ERR_UNSUPPORTED;
        /* N_ is a macro so that the loads above read as plain code */
        if (i + 1 == p->n_launch || c->tile[i + 1].lin != lin)
            cu_printf(t, "#undef N_\n");
    }
    return RNNC_OK;
}
