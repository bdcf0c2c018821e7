/* test_cuda_mma.c: the tensor-core kernels of the fp32 math modes (tf32,
 * 3xtf32) of every built-in cell and one .cell file compile with NVRTC for
 * sm_80 and sm_90 with no error and no warning (NVRTC needs no GPU); the
 * generator puts the step's linears and the hoisted GEMMs on tensor cores
 * where the shape allows and keeps FFMA where it does not; and, from the
 * source alone, its rounding, L2 prefetch and warp-tile choices. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "ir/ir.h"
#include "cudagen.h"
#include "testutil.h"

typedef struct shape {
    int64_t I, H, B;
    bool step_mma; /* LSTM's step linear on tensor cores at this shape */
} shape;

/* B=64 and 256 give every warp an mma tile; B=1 keeps FFMA in the step
 * (latency-bound, one 16 x 8 tile for 8 warps); K = 37 is no whole k-step. */
static const shape k_shapes[] = {
    {512, 512, 64, true}, {1024, 1024, 64, true}, {512, 512, 256, true},
    {512, 512, 1, false}, {37, 48, 3, false},
};

static rnnc_status generate(const rnnc_cell *c, const shape *sh, int math, int sm, char **src,
                            cg_cuda_plan *plan)
{
    cg_cuda_config cfg = {.sizes = {sh->I, sh->H, sh->H}, .batch = sh->B, .sm = sm,
                          .sm_count = sm == 80 ? 108 : 132, .math = math};
    return tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, src, plan);
}

static void check_cell(const rnnc_cell *c, const char *name, bool all_shapes)
{
    static const int sms[] = {80, 90};
    for (int math = 1; math <= 2; math++)
        for (size_t k = 0; k < sizeof k_shapes / sizeof k_shapes[0]; k++) {
            if (!all_shapes && k != 0)
                continue;
            const shape *sh = &k_shapes[k];
            for (int i = 0; i < 2; i++) {
                char *src = NULL, label[200];
                cg_cuda_plan plan;
                if (generate(c, sh, math, sms[i], &src, &plan) != RNNC_OK)
                    fail_msg("%s math %d H=%lld B=%lld: %s", name, math, (long long)sh->H,
                             (long long)sh->B, rnnc_last_error());
                /* the hoisted GEMM of x W_ih^T always has whole tiles */
                assert_non_null(strstr(src, "mma.sync.aligned.m16n8k8"));
                assert_non_null(strstr(src, math == 2 ? "#define RNNC_MATH 2" : "#define RNNC_MATH 1"));
                if (strcmp(name, "lstm") == 0 && sms[i] == 90) {
                    assert_int_equal(strstr(plan.tuning, " mma") != NULL, sh->step_mma);
                    /* B = 64: large GEMM tiles for long sequences, small for short */
                    if (sh->B == 64) {
                        /* 0: large tiles (tensor cores: every row, no
                         * tail), 1: small tiles */
                        assert_true(!plan.launch[0].tail && !plan.launch[1].tail);
                        assert_int_equal(plan.launch[0].split.wave, 0);
                        assert_true(plan.launch[0].min_rows > 0 && plan.launch[1].max_rows > 0);
                        assert_int_equal(plan.launch[0].min_rows, plan.launch[1].max_rows);
                    }
                } else if (!all_shapes && sms[i] == 80 && math == 2) {
                    free(src);
                    continue; /* sm_80 at both modes for lstm and gru only */
                }
                snprintf(label, sizeof label, "%s_math%d_H%lld_B%lld (%s)", name, math,
                         (long long)sh->H, (long long)sh->B, plan.tuning);
                tu_compile_clean(src, label, sms[i]);
                free(src);
            }
        }
}

static void test_math_modes_compile(void **state)
{
    (void)state;
    tu_require_nvrtc();
    tu_each_builtin(check_cell);
    char path[1024];
    const char *dir = getenv("RNNC_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/examples/layernorm_gru.cell", dir ? dir : ".");
    rnnc_cell *c = NULL;
    if (rnnc_cell_load(&c, path, NULL) != RNNC_OK)
        fail_msg("%s: %s", path, rnnc_last_error());
    assert_ok(ir_optimise(c, false));
    check_cell(c, "layernorm_gru.cell", false);
    rnnc_cell_destroy(c);
}

/* FFMA (math 0) emits no tensor-core code at all. */
static void test_ffma_has_no_mma(void **state)
{
    (void)state;
    rnnc_cell *c = NULL;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    assert_ok(ir_optimise(c, false));
    char *src = NULL;
    cg_cuda_plan plan;
    assert_ok(generate(c, &k_shapes[0], 0, 90, &src, &plan));
    assert_null(strstr(src, "mma.sync"));
    assert_null(strstr(plan.tuning, " mma"));
    free(src);
    rnnc_cell_destroy(c);
}

/* The generator's choices of 2026-11-27, checked on the source alone (no
 * NVRTC): TF32 rounds to nearest even on sm_90 (cvt.rn, ties away on
 * sm_80, which lacks it) and 3xtf32's hi part is that rounding or, on
 * sm_80, a mask; the I = H = 1024, B = 256 step, whose hoisted values do
 * not fit the register cache, prefetches the next step's into L2, in
 * every math mode and dtype; a bf16 step staging h in chunks there gives
 * a warp 2 x 4 mma tiles. */
static char *source_of(int64_t H, int64_t B, int math, int dtype, int sm)
{
    rnnc_cell *c = NULL;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    assert_ok(ir_optimise(c, false));
    cg_cuda_config cfg = {.sizes = {H, H, H}, .batch = B, .sm = sm,
                          .sm_count = sm == 80 ? 108 : 132, .math = math, .dtype = dtype};
    char *src = NULL;
    cg_cuda_plan plan;
    assert_ok(tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, &plan));
    rnnc_cell_destroy(c);
    return src;
}

static void test_rounding_and_prefetch(void **state)
{
    (void)state;
    for (int math = 1; math <= 2; math++)
        for (int sm = 80; sm <= 90; sm += 10) {
            char *src = source_of(512, 64, math, RNNC_F32, sm);
            assert_non_null(strstr(src, sm == 90 ? "cvt.rn.tf32.f32" : "cvt.rna.tf32.f32"));
            assert_null(strstr(src, sm == 90 ? "cvt.rna.tf32.f32" : "cvt.rn.tf32.f32"));
            if (math == 2)
                assert_non_null(strstr(src, sm == 90 ? "h = rnnc_tf32(x);"
                                                     : "h = __float_as_uint(x) & 0xffffe000u;"));
            free(src);
        }
    for (int math = 0; math <= 2; math++) {
        char *src = source_of(1024, 256, math, RNNC_F32, 90);
        assert_non_null(strstr(src, "rnnc_pfl2(hz + "));
        free(src);
    }
    char *src = source_of(1024, 256, 0, RNNC_BF16, 90);
    assert_non_null(strstr(src, "rnnc_pfl2(hz + "));
    assert_non_null(strstr(src, "a warp owns 2 x 4 of them"));
    free(src);
    /* B = 64 keeps its hoisted values in registers: nothing to prefetch */
    src = source_of(512, 64, 0, RNNC_F32, 90);
    assert_null(strstr(src, "rnnc_pfl2"));
    free(src);
}

/* The sigmoid's form follows the operands' precision (cuda_text.c): the
 * fast exponential and division where they are rounded to TF32, f16 or
 * bf16; FFMA and 3xtf32 keep expf and the IEEE division, which their fp32
 * bounds need (tanh.approx-class errors failed them). */
static void test_sigmoid_forms(void **state)
{
    (void)state;
    static const struct {
        int math, dtype;
        bool fast;
    } m[] = {{0, RNNC_F32, false}, {1, RNNC_F32, true}, {2, RNNC_F32, false},
             {0, RNNC_F16, true}, {0, RNNC_BF16, true}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        for (int sm = 80; sm <= 90; sm += 10) {
            char *src = source_of(512, 64, m[i].math, m[i].dtype, sm);
            const bool fast = strstr(src, "__fdividef(1.f, 1.f + __expf(-(") != NULL;
            const bool exact = strstr(src, "1.f / (1.f + expf(-(") != NULL;
            assert_int_equal(fast, m[i].fast);
            assert_int_equal(exact, !m[i].fast);
            assert_non_null(strstr(src, "tanhf("));
            free(src);
        }
}

/* On sm_90, where the runtime passes tensor maps (cfg.tma), the math
 * modes' large GEMM tiles are wgmma tiles fed by the TMA: the launch
 * names its maps, the weight arena holds the copy they read (3xtf32: W's
 * low part; tf32: W rounded).  (Runs without NVRTC.) */
static void test_wgmma_tiles(void **state)
{
    (void)state;
    rnnc_cell *c = NULL;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    assert_ok(ir_optimise(c, false));
    for (int math = 1; math <= 2; math++)
        for (int sm = 80; sm <= 90; sm += 10) {
            cg_cuda_config cfg = {.sizes = {512, 512, 512}, .batch = 64, .sm = sm,
                                  .sm_count = sm == 80 ? 108 : 132, .math = math, .tma = true};
            char *src = NULL;
            cg_cuda_plan plan;
            assert_ok(tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, &plan));
            const cg_cuda_launch *l = &plan.launch[0];
            assert_int_equal(l->tma, sm == 90);
            assert_int_equal(strstr(src, "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32") != NULL,
                             sm == 90);
            if (sm == 90) {
                assert_int_equal(l->tma_k, 512);
                assert_int_equal(l->tma_n, 2048);
                /* W_ih's copy for the tiles; in TF32 also W_hh's rounded
                 * copy, which every plan places for the step over streamed
                 * weights (test_cuda_wstream.c) */
                int copies = 0, tiles = 0;
                for (int i = 0; i < plan.n_wts; i++)
                    if (plan.wts[i].derive) {
                        copies++;
                        tiles += plan.wts[i].offset == l->tma_l;
                        assert_int_equal(plan.wts[i].derive,
                                         math == 2 ? CG_CUDA_TF32_LO : CG_CUDA_TF32_RN);
                    }
                assert_int_equal(tiles, 1);
                assert_int_equal(copies, math == 1 ? 2 : 1);
                /* the large tiles take every row: no tail launch (T = 100
                 * is 800 tiles, 6 waves and 8 more) */
                for (int i = 0; i < plan.n_launch; i++)
                    assert_false(plan.launch[i].tail);
                assert_int_equal(l->split.wave, 0);
            }
            free(src);
        }
    /* without the runtime's tensor maps (the training path): the mma.sync tiles */
    cg_cuda_config cfg = {.sizes = {512, 512, 512}, .batch = 64, .sm = 90, .sm_count = 132, .math = 2};
    char *src = NULL;
    cg_cuda_plan plan;
    assert_ok(tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, &plan));
    assert_null(strstr(src, "wgmma"));
    free(src);
    rnnc_cell_destroy(c);
}

/* Cell c's source at I = H = n, batch B on sm_90 with the runtime's
 * tensor maps (the wgmma tiles), in math mode `math` or dtype `dt`;
 * cluster as cg_cuda_config's (1: none). */
static char *sm90_source(const rnnc_cell *c, int64_t n, int64_t B, int math, int dt, int cluster,
                         cg_cuda_plan *plan)
{
    cg_cuda_config cfg = {.sizes = {n, n, n}, .batch = B, .sm = 90, .sm_count = 132,
                          .math = math, .dtype = dt, .tma = true, .cluster = cluster};
    char *src = NULL;
    assert_ok(tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, plan));
    return src;
}

/* A half model's large GEMM tiles on sm_90: wgmma m64n128k16 of its
 * dtype, both operands from shared memory, W as the arena holds it (no
 * derived copy), the TMA's elements 2 bytes; weight slots 8 values apart
 * (16 bytes, where the TMA's boxes start). */
static void test_wgmma_half(void **state)
{
    (void)state;
    rnnc_cell *c = tu_builtin("lstm");
    for (int i = 0; i < 2; i++) {
        cg_cuda_plan plan;
        char *src = sm90_source(c, 512, 64, 0, i ? RNNC_BF16 : RNNC_F16, 0, &plan);
        assert_non_null(strstr(src, i ? "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"
                                      : "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"));
        assert_true(plan.launch[0].tma && plan.launch[0].tma_es == 2);
        assert_int_equal(plan.launch[0].tma_k, 512);
        for (int k = 0; k < plan.n_wts; k++) {
            assert_int_equal(plan.wts[k].derive, CG_CUDA_AS_IS);
            assert_int_equal(plan.wts[k].offset % 8, 0);
        }
        free(src);
    }
    rnnc_cell_destroy(c);
}

/* A GRU at I = H = 960, B = 256 on sm_90, TF32 (dt 0) or bf16: its
 * hoisted GEMM has 2880 columns (test_wgmma_ragged). */
static char *ragged_source(int dt, cg_cuda_plan *plan)
{
    rnnc_cell *c = tu_builtin("gru");
    char *src = sm90_source(c, 960, 256, dt ? 0 : 1, dt ? RNNC_BF16 : 0, 0, plan);
    rnnc_cell_destroy(c);
    return src;
}

/* The wgmma kernels compile (NVRTC at sm_90a). */
static void test_wgmma_compile(void **state)
{
    (void)state;
    tu_require_nvrtc();
    rnnc_cell *c = tu_builtin("lstm");
    /* tf32, 3xtf32, then the half models' tiles (test_wgmma_half) */
    static const struct { int math, dt; const char *label; } k[] = {
        {1, 0, "lstm tf32 wgmma"}, {2, 0, "lstm 3xtf32 wgmma"},
        {0, RNNC_F16, "lstm f16 wgmma"}, {0, RNNC_BF16, "lstm bf16 wgmma"}};
    cg_cuda_plan plan;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char *src = sm90_source(c, 512, 64, k[i].math, k[i].dt, 0, &plan);
        assert_non_null(strstr(src, "wgmma.mma_async"));
        tu_compile_clean(src, k[i].label, 90);
        free(src);
    }
    /* the wgmma step split along K over clusters (test_ksplit), and
     * without clusters (test_wgstep) */
    char *src = sm90_source(c, 1024, 256, 1, 0, 0, &plan);
    assert_non_null(strstr(src, "__cluster_dims__(2, 1, 1)"));
    tu_compile_clean(src, "lstm tf32 B=256 wgmma step, K split", 90);
    free(src);
    src = sm90_source(c, 1024, 256, 1, 0, 1, &plan);
    assert_non_null(strstr(src, "m64n32k8"));
    tu_compile_clean(src, "lstm tf32 B=256 wgmma step", 90);
    free(src);
    rnnc_cell_destroy(c);
    /* the GRU's 2880 columns (test_wgmma_ragged) */
    for (int dt = 0; dt < 2; dt++) {
        src = ragged_source(dt, &plan);
        tu_compile_clean(src, dt ? "gru bf16 H=960 wgmma" : "gru tf32 H=960 wgmma", 90);
        free(src);
    }
}

/* The wgmma GEMM tiles where the linear's columns are no multiple of 128
 * (a GRU at H = 960: 2880, 22.5 tiles): the grid's last column tile
 * reads W's rows past 2880 as the tensor memory accelerator's zeros and
 * the epilogue stores none of them.  The H100 ran that GEMM on mma.sync
 * tiles before, its TF32 GRU at 0.90x cuDNN.  The columns stay a
 * multiple of 8 (the epilogue stores pairs of them). */
static void test_wgmma_ragged(void **state)
{
    (void)state;
    for (int dt = 0; dt < 2; dt++) {
        cg_cuda_plan plan;
        char *src = ragged_source(dt, &plan);
        assert_true(plan.launch[0].tma);
        assert_int_equal(plan.launch[0].tma_n, 2880);
        assert_int_equal(plan.launch[0].grid_y, 23);
        assert_non_null(strstr(src, "if (col0 >= N_) continue;"));
        free(src);
    }
}

/* The TF32 step's bulk-staged linear on wgmma (cuda_wgstep.c): LSTM I = H
 * = 1024, B = 256 on sm_90 with the runtime's tensor maps (32 rows of W_hh
 * a block, 4 warpgroups of 64 batch rows, h in 32-column chunks) where
 * clusters are not wanted (cfg.cluster 1; else test_ksplit's split); not
 * for 3xtf32 (split operands), sm_80, or the training path (no cfg.tma). */
static void test_wgstep(void **state)
{
    (void)state;
    rnnc_cell *c = tu_builtin("lstm");
    for (int i = 0; i < 4; i++) {
        int math = i == 1 ? 2 : 1, sm = i == 2 ? 80 : 90;
        bool tma = i != 3, want = i == 0;
        cg_cuda_config cfg = {.sizes = {1024, 1024, 1024}, .batch = 256, .sm = sm,
                              .sm_count = sm == 80 ? 108 : 132, .math = math, .tma = tma,
                              .cluster = 1};
        cg_cuda_plan plan;
        char *src = NULL;
        assert_ok(tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, &plan));
        assert_int_equal(strstr(plan.tuning, " wgmma") != NULL, want);
        assert_int_equal(strstr(src, "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32") != NULL,
                         want);
        if (want) {
            /* the slice copied chunk-major and swizzled, the smem 1024-byte aligned */
            assert_non_null(strstr(src, "(((k4 & 7) ^ (r & 7)) << 2)"));
            assert_non_null(strstr(src, "__align__(1024) float4 smem4_[]"));
            assert_non_null(strstr(src, "fence.proxy.async.shared::cta"));
        }
        free(src);
    }
    rnnc_cell_destroy(c);
}

/* The wgmma step split along K over clusters of two (cuda_ksplit.c): at
 * I = H = 1024, B = 256 (TF32, sm_90) a cluster's 64 rows of W_hh, each
 * block half of K and half of h's chunks, two warpgroups on m64n128k8, the
 * partner's partial sums by one bulk copy; the launch asks for clusters of
 * two.  A GRU's cluster has 48 rows (8 units a block): zero rows fill
 * wgmma's 64, and the warp whose rows they are stores no partials.  Not
 * where K is no multiple of 64 (H = 1056), nor where a block has 16 rows
 * (H = 512); at B = 128 one warpgroup multiplies, at B = 64 one on
 * m64n64k8.  test_ksplit_compile compiles each with NVRTC. */
static const struct {
    const char *cell;
    int64_t H, B;
    bool want;
} k_splits[] = {{"lstm", 1024, 256, true}, {"gru", 1024, 256, true}, {"lstm", 768, 256, true},
                {"lstm", 1024, 128, true}, {"gru", 1024, 128, true}, {"lstm", 1024, 64, true},
                {"gru", 1056, 256, false}, {"lstm", 512, 64, false}};

static char *ksplit_source(size_t i, cg_cuda_plan *plan)
{
    rnnc_cell *c = tu_builtin(k_splits[i].cell);
    char *src = sm90_source(c, k_splits[i].H, k_splits[i].B, 1, 0, 0, plan);
    rnnc_cell_destroy(c);
    return src;
}

static void test_ksplit(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof k_splits / sizeof k_splits[0]; i++) {
        long long H = k_splits[i].H, B = k_splits[i].B;
        bool want = k_splits[i].want;
        cg_cuda_plan plan;
        char *src = ksplit_source(i, &plan);
        assert_int_equal(strstr(plan.tuning, " ksplit") != NULL, want);
        const cg_cuda_launch *step = &plan.launch[plan.n_launch - 1];
        assert_string_equal(step->name, "rnnc_step");
        assert_int_equal(step->cluster, want ? 2 : 0);
        if (want) {
            char half[48], nchb[48], round[64];
            snprintf(half, sizeof half, "cr_ * %lld + k4 * 4", H / 2);
            snprintf(nchb, sizeof nchb, "#define NCHB %lld\n", H / 64);
            /* the zero rows too are rounded to TF32 (64 rows over half of K):
             * rounding only the 48 real rows' worth left a quarter of the
             * weights unrounded, 1.6e-4 against cuDNN's TF32 for 2e-5 */
            snprintf(round, sizeof round, "i < %lld; i += NT) /* the weights to TF32 */", H * 32);
            assert_non_null(strstr(src, "cp.async.bulk.shared::cluster.shared::cta"));
            assert_non_null(strstr(src, half));
            assert_non_null(strstr(src, nchb));
            assert_non_null(strstr(src, round));
            assert_non_null(strstr(src, B == 256 ? "#define KSNW 2\n" : "#define KSNW 1\n"));
            assert_non_null(strstr(src, B == 64 ? "wgmma.mma_async.sync.aligned.m64n64k8"
                                                : "wgmma.mma_async.sync.aligned.m64n128k8"));
            /* 32 rows a block (an LSTM's 8 units) fill wgmma's 64; 24 do not */
            bool pad = strcmp(k_splits[i].cell, "gru") == 0 || H == 768;
            assert_int_equal(strstr(src, "const bool ok = r < 48 && gu < H;") != NULL, pad);
            assert_int_equal(strstr(src, "if (wg_ < KSNW && w4_ < 3) {") != NULL, pad);
        }
        free(src);
    }
}

static void test_ksplit_compile(void **state)
{
    (void)state;
    tu_require_nvrtc();
    for (size_t i = 0; i < sizeof k_splits / sizeof k_splits[0]; i++) {
        if (!k_splits[i].want)
            continue;
        cg_cuda_plan plan;
        char label[64], *src = ksplit_source(i, &plan);
        snprintf(label, sizeof label, "%s tf32 H=%lld B=%lld K split", k_splits[i].cell,
                 (long long)k_splits[i].H, (long long)k_splits[i].B);
        tu_compile_clean(src, label, 90);
        free(src);
    }
}

/* The weight copies: w's low TF32 part is exact (w minus its top 19 bits),
 * the rounded copy rounds to nearest, ties to even. */
static void test_weight_copies(void **state)
{
    (void)state;
    const float w[4] = {1.0f + 0x3p-12f, 1.0f + 0x3p-11f, -3.14159265f, 1e-30f};
    float lo[4], rn[4];
    cg_cuda_slot sl = {0, 0, 4, CG_CUDA_TF32_LO}, sr = {0, 0, 4, CG_CUDA_TF32_RN};
    cg_cuda_slot_fill(&sl, w, lo);
    cg_cuda_slot_fill(&sr, w, rn);
    for (int i = 0; i < 4; i++) {
        union { float f; uint32_t u; } h = {w[i]}, r = {rn[i]};
        h.u &= 0xffffe000u;
        assert_true(h.f + lo[i] == w[i]);   /* exact */
        assert_int_equal(r.u & 0x1fffu, 0); /* a TF32 value */
        assert_true(fabsf(rn[i] - w[i]) <= fabsf(w[i]) * 0x1p-11f);
    }
    assert_true(rn[0] == 1.0f + 0x1p-10f); /* three quarters of a TF32 ulp: up */
    assert_true(rn[1] == 1.0f + 0x1p-9f);  /* 1.5 ulps, a tie: to the even 2 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_math_modes_compile),
        cmocka_unit_test(test_ffma_has_no_mma),
        cmocka_unit_test(test_rounding_and_prefetch),
        cmocka_unit_test(test_sigmoid_forms),
        cmocka_unit_test(test_wgmma_tiles),
        cmocka_unit_test(test_wgmma_compile),
        cmocka_unit_test(test_wgmma_ragged),
        cmocka_unit_test(test_wgstep),
        cmocka_unit_test(test_ksplit),
        cmocka_unit_test(test_ksplit_compile),
        cmocka_unit_test(test_wgmma_half),
        cmocka_unit_test(test_weight_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
