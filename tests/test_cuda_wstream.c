/* test_cuda_wstream.c: the TF32 wgmma step over streamed weights
 * (codegen/cuda/cuda_wstream.c), from the generated source and plan alone:
 * taken where W_hh fits on chip in no tiling (I = H = 1024 at B = 512, H =
 * 2048, an LSTM at H = 1536, batches padded to wgmma's N) and nowhere
 * else (the K split at B = 256, FFMA, 3xtf32, a half model, sm_80); a
 * chunk buffer's refill brings h and one box of UT rows a gate of W, counted by one mbarrier; the step's
 * launch carries the tensor map over the TF32-rounded copy of W_hh, which
 * every plan of the model places alike (the arena is laid out once); rows
 * past the slice (a GRU's 96 of two 64-row tiles) are never stored.
 * test_wstream_compile compiles each kernel with NVRTC (no GPU needed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "ir/ir.h"
#include "cudagen.h"
#include "testutil.h"

static const struct {
    const char *cell;
    int64_t H, B;
    int math, dtype, sm;
    bool want;
    int ut, gates; /* the expected tiling where wanted */
} k_cases[] = {
    {"lstm", 1024, 512, 1, 0, 90, true, 32, 4},
    {"gru", 1024, 512, 1, 0, 90, true, 32, 3},
    {"peephole_lstm", 1024, 512, 1, 0, 90, true, 32, 4},
    {"lstm", 2048, 256, 1, 0, 90, true, 32, 4},
    {"gru", 2048, 64, 1, 0, 90, true, 16, 3},
    {"lstm", 1536, 256, 1, 0, 90, true, 24, 4},
    {"lstm", 1088, 512, 1, 0, 90, true, 40, 4}, /* 28 blocks of 40 units: the last has 8 */
    /* batch rows padded to a multiple of 32 (the result's layout, KSP):
     * one group of 100 (N = 128), 80 (96), 8 (32); two of 120 (128) and of
     * 96; three of 107 rounded to 112, later groups starting at a multiple
     * of 8 rows */
    {"lstm", 2048, 100, 1, 0, 90, true, 16, 4},
    {"lstm", 2048, 80, 1, 0, 90, true, 16, 4},
    {"lstm", 2048, 8, 1, 0, 90, true, 16, 4},
    {"lstm", 2048, 1, 1, 0, 90, false, 0, 0}, /* under 8 rows: FFMA streams faster */
    {"lstm", 2048, 240, 1, 0, 90, true, 32, 4},
    {"gru", 2048, 192, 1, 0, 90, true, 32, 3},
    {"lstm", 2048, 320, 1, 0, 90, true, 48, 4},
    {"lstm", 1024, 256, 1, 0, 90, false, 0, 0},   /* on chip: the K split */
    {"lstm", 2048, 64, 0, 0, 90, false, 0, 0},    /* FFMA */
    {"lstm", 2048, 64, 2, 0, 90, false, 0, 0},    /* 3xtf32 */
    {"lstm", 2048, 64, 0, RNNC_BF16, 90, false, 0, 0},
    {"lstm", 2048, 64, 1, 0, 80, false, 0, 0},    /* no wgmma */
};

static char *source(size_t i, cg_cuda_plan *plan)
{
    rnnc_cell *c = tu_builtin(k_cases[i].cell);
    int64_t H = k_cases[i].H;
    cg_cuda_config cfg = {.sizes = {H, H, H}, .batch = k_cases[i].B, .sm = k_cases[i].sm,
                          .sm_count = k_cases[i].sm == 80 ? 108 : 132, .math = k_cases[i].math,
                          .dtype = k_cases[i].dtype, .tma = true};
    char *src = NULL;
    assert_ok(tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, plan));
    rnnc_cell_destroy(c);
    return src;
}

/* The weight slot at offset off holds weight_hh rounded to TF32. */
static void check_rounded_slot(const cg_cuda_plan *plan, int64_t off, int64_t count)
{
    for (int i = 0; i < plan->n_wts; i++)
        if (plan->wts[i].offset == off) {
            assert_int_equal(plan->wts[i].derive, CG_CUDA_TF32_RN);
            assert_int_equal(plan->wts[i].count, count);
            assert_int_equal(off % 4, 0); /* 16 bytes: the TMA's boxes start there */
            return;
        }
    fail_msg("no weight slot at %lld", (long long)off);
}

static void check_source(size_t i, const char *src, const cg_cuda_plan *plan)
{
    long long H = k_cases[i].H, B = k_cases[i].B, ut = k_cases[i].ut, g = k_cases[i].gates;
    /* groups of at most 128 rows, later ones starting at a multiple of 8 */
    long long nbb = (B + 127) / 128, bt = (B + nbb - 1) / nbb;
    bt = nbb > 1 ? (bt + 7) / 8 * 8 : bt;
    long long btp = (bt + 31) / 32 * 32, R = g * ut, tiles = (R + 63) / 64;
    char want[128];
    const cg_cuda_launch *step = &plan->launch[plan->n_launch - 1];
    snprintf(want, sizeof want, "ut=%lld bt=%lld ", ut, bt);
    assert_non_null(strstr(plan->tuning, want));
    assert_true(step->tma && step->cooperative);
    assert_int_equal(step->cluster, 0);
    assert_int_equal(step->tma_box, ut);
    assert_int_equal(step->tma_k, H);
    assert_int_equal(step->tma_n, g * H);
    assert_int_equal(step->tma_es, 4);
    check_rounded_slot(plan, step->tma_w, g * H * H);
    assert_true(step->threads >= 128 * tiles);
    assert_non_null(strstr(src, "rnnc_step(") && strstr(src, "const __grid_constant__ rnnc_tmap tw_)"));
    /* one arrival expects h's bytes and the R rows of 128 bytes */
    snprintf(want, sizeof want, "\"r\"(bytes + %lldu)", R * 128);
    assert_non_null(strstr(src, want));
    snprintf(want, sizeof want, "for (int s = 0; s < %lld; ++s)", g);
    assert_non_null(strstr(src, want));
    assert_non_null(strstr(src, "rnnc_tma2d(dst + BTP * KCB + s * UT * KCB, m, ch * KCB, s * H + u0, mb);"));
    snprintf(want, sizeof want, "#define WSNW %lld\n", tiles);
    assert_non_null(strstr(src, want));
    snprintf(want, sizeof want, "wgmma.mma_async.sync.aligned.m64n%lldk8.f32.tf32.tf32", btp);
    assert_non_null(strstr(src, want));
    /* each buffer: h's rows and the slice's rows up to whole tiles */
    snprintf(want, sizeof want, "#define CHF %lld\n", (btp + 64 * tiles) * 32);
    assert_non_null(strstr(src, want));
    snprintf(want, sizeof want, "if (r_ < %lld)", R);
    assert_non_null(strstr(src, want));
    /* no weight slice in shared memory, so none to round or copy */
    assert_null(strstr(src, "/* the weights to TF32 */"));
    assert_null(strstr(src, "#define SM_W"));
}

static void test_wstream(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        cg_cuda_plan plan;
        char *src = source(i, &plan);
        bool got = strstr(plan.tuning, " wstream") != NULL;
        if (got != k_cases[i].want)
            fail_msg("%s H=%lld B=%lld math %d dtype %d sm_%d: tuning '%s'", k_cases[i].cell,
                     (long long)k_cases[i].H, (long long)k_cases[i].B, k_cases[i].math,
                     k_cases[i].dtype, k_cases[i].sm, plan.tuning);
        if (got)
            check_source(i, src, &plan);
        else
            assert_null(strstr(src, "rnnc_ws_get"));
        free(src);
    }
}

/* The runtime lays out the weight arena once, from a plan at B = 1
 * (runtime/fused/fused.c's trial): the rounded copy the streamed step
 * reads must be there at every batch, at the same place.  The first
 * version placed it only where the step streamed: the kernel read past
 * the arena (an illegal address on the H100). */
static void test_wstream_arena(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        if (!k_cases[i].want)
            continue;
        rnnc_cell *c = tu_builtin(k_cases[i].cell);
        int64_t H = k_cases[i].H;
        cg_cuda_plan one, big;
        char *s1 = NULL, *s2 = NULL;
        cg_cuda_config cfg = {.sizes = {H, H, H}, .batch = 1, .sm = 90, .sm_count = 132,
                              .math = 1, .tma = true};
        assert_ok(tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &s1, &one));
        cfg.batch = k_cases[i].B;
        assert_ok(tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &s2, &big));
        assert_int_equal(one.n_wts, big.n_wts);
        assert_int_equal(one.wts_floats, big.wts_floats);
        for (int w = 0; w < one.n_wts; w++) {
            assert_int_equal(one.wts[w].offset, big.wts[w].offset);
            assert_int_equal(one.wts[w].derive, big.wts[w].derive);
        }
        free(s1);
        free(s2);
        rnnc_cell_destroy(c);
    }
}

static void test_wstream_compile(void **state)
{
    (void)state;
    tu_require_nvrtc();
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        if (!k_cases[i].want)
            continue;
        cg_cuda_plan plan;
        char label[96], *src = source(i, &plan);
        snprintf(label, sizeof label, "%s tf32 H=%lld B=%lld streamed weights", k_cases[i].cell,
                 (long long)k_cases[i].H, (long long)k_cases[i].B);
        tu_compile_clean(src, label, 90);
        free(src);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wstream),
        cmocka_unit_test(test_wstream_arena),
        cmocka_unit_test(test_wstream_compile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
