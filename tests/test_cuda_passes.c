/* test_cuda_passes.c: batch passes (codegen/cuda/cuda_passes.c), from the
 * generated source and plan alone: where no tiling of one pass fits the
 * GPU (an LSTM at B x H over about 2M), a block's batch group is NP tiles
 * of rows taken in turn each step, so the fused backend has kernels for
 * every batch cuDNN runs.  test_never_refuses generates the built-in cells
 * cuDNN has (and the peephole LSTM, MI-LSTM and an LSTM with a projection)
 * at such shapes for an H100 and an A100 in fp32, TF32 and bf16;
 * test_passes_source checks the loop and the group's rows;
 * test_passes_phases the copies a pass of what crosses phases;
 * test_passes_keeps those values in global memory where the copies do not
 * fit; test_passes_compile compiles some with NVRTC (no GPU needed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "ir/ir.h"
#include "cudagen.h"
#include "testutil.h"

static const struct {
    int64_t H, B;
} k_shapes[] = {{2048, 1024}, {1024, 2048}, {2048, 2048}, {4096, 1024},
                {256, 16384}, {64, 32768}, {2048, 1000}};

static const struct {
    int math, dtype;
} k_modes[] = {{0, 0}, {1, 0}, {0, RNNC_BF16}};

static char *source(const char *cell, int64_t H, int64_t P, int64_t B, int mode, int sm,
                    cg_cuda_plan *plan)
{
    rnnc_cell *c = NULL;
    if (P == H) {
        c = tu_builtin(cell);
    } else { /* the projection's cell */
        assert_ok(rnnc_cell_builtin(&c, cell, NULL));
        assert_ok(ir_optimise(c, true));
    }
    cg_cuda_config cfg = {.sizes = {256, H, P}, .batch = B, .sm = sm,
                          .sm_count = sm == 80 ? 108 : 132, .math = k_modes[mode].math,
                          .dtype = k_modes[mode].dtype, .tma = sm == 90};
    char *src = NULL;
    if (tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, plan) != RNNC_OK)
        fail_msg("%s H=%lld P=%lld B=%lld mode %d sm_%d: %s", cell, (long long)H, (long long)P,
                 (long long)B, mode, sm, rnnc_last_error());
    rnnc_cell_destroy(c);
    return src;
}

static void test_never_refuses(void **state)
{
    (void)state;
    static const char *cells[] = {"lstm", "gru", "rnn_tanh", "peephole_lstm", "milstm"};
    for (size_t c = 0; c < sizeof cells / sizeof cells[0]; c++)
        for (size_t s = 0; s < sizeof k_shapes / sizeof k_shapes[0]; s++)
            for (int m = 0; m < 3; m++)
                for (int sm = 80; sm <= 90; sm += 10) {
                    cg_cuda_plan plan;
                    int64_t H = k_shapes[s].H;
                    char *src = source(cells[c], H, H, k_shapes[s].B, m, sm, &plan);
                    assert_true(plan.launch[plan.n_launch - 1].grid <= (sm == 80 ? 108u : 132u));
                    free(src);
                }
    /* a projection: two phases, c kept from one to the other a copy a pass */
    for (size_t s = 0; s < sizeof k_shapes / sizeof k_shapes[0]; s++) {
        cg_cuda_plan plan;
        int64_t H = k_shapes[s].H;
        free(source("lstm", H, H / 4, k_shapes[s].B, 0, 90, &plan));
    }
}

/* The group's rows are NP tiles of BT: tend_ over all of them, each
 * phase a loop over the passes whose rows start at the pass's tile. */
static void check_passes(const char *src, const cg_cuda_plan *plan, int phases)
{
    const char *np = strstr(plan->tuning, " np=");
    assert_non_null(np);
    int n = atoi(np + 4);
    assert_true(n >= 2);
    assert_non_null(strstr(plan->tuning, " stream"));
    char want[96];
    snprintf(want, sizeof want, "#define NP %d ", n);
    assert_non_null(strstr(src, want));
    assert_non_null(strstr(src, "const int u0 = ub * UT, b0 = bb * NP * BT;"));
    assert_non_null(strstr(src, "for (int b = 0; b < NP * BT && b0 + b < B; ++b)"));
    int loops = 0;
    for (const char *p = src; (p = strstr(p, "for (int pass_ = 0; pass_ < NP; ++pass_) {")); p++)
        loops++;
    assert_int_equal(loops, phases);
    assert_non_null(strstr(src, "const int b0 = bb * NP * BT + pass_ * BT;"));
    /* passes keep to the barrier's exchange and read no register cache */
    assert_null(strstr(plan->tuning, " ll"));
}

static void test_passes_source(void **state)
{
    (void)state;
    cg_cuda_plan plan;
    char *src = source("lstm", 2048, 2048, 1024, 0, 90, &plan);
    check_passes(src, &plan, 1);
    free(src);
    src = source("lstm", 2048, 512, 1024, 0, 90, &plan);
    check_passes(src, &plan, 2);
    assert_non_null(strstr(src, " + pass_ * ")); /* c's copy a pass (SM_V) */
    free(src);
    /* one pass fits: no loop */
    src = source("lstm", 2048, 2048, 512, 0, 90, &plan);
    assert_null(strstr(plan.tuning, " np="));
    assert_null(strstr(src, "pass_"));
    free(src);
}

/* A layernorm LSTM on a GPU of 4 SMs (on 132 SMs its copies a pass would
 * take all of a block's elements: test_passes_keeps): the
 * linear's result that the next phase normalises and the values kept for
 * the last phase take a copy a pass; the H100 gave 0.63 against the
 * interpreter when the result had one copy. */
static char *ln_source(cg_cuda_plan *plan)
{
    rnnc_cell *c = tu_builtin("layernorm_lstm");
    cg_cuda_config cfg = {.sizes = {64, 32, 32}, .batch = 1024, .sm = 90, .sm_count = 4};
    char *src = NULL;
    if (tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, plan) != RNNC_OK)
        fail_msg("layernorm_lstm on 4 SMs: %s", rnnc_last_error());
    rnnc_cell_destroy(c);
    return src;
}

static void test_passes_phases(void **state)
{
    (void)state;
    cg_cuda_plan plan;
    char *src = ln_source(&plan);
    check_passes(src, &plan, 3);
    const char *l = strstr(src, "#define SM_L");
    assert_non_null(l);
    const char *copy = strstr(l, "+ pass_ * ");
    assert_non_null(copy);
    assert_true(copy < strchr(l, '\n'));
    assert_non_null(strstr(src, "/* %25 add(%21, %24): kept for a later phase */"));
    free(src);
    /* (skips from here without NVRTC: nothing left to free) */
    tu_require_nvrtc();
    src = ln_source(&plan);
    tu_compile_clean(src, "layernorm_lstm passes", 90);
    free(src);
}

/* A layernorm LSTM at H = 128, B = 16384 on an H100 (and every built-in
 * cell's at H = 1024, B = 2048 on an A100): a copy a pass of what crosses
 * phases would be all of a block's elements of it, so those values live in
 * global memory: the normalised linear's result written in phase 0 and
 * read in phase 1, c's pre-norm sum and o's gate into phase 2; none in
 * shared memory.  Refused before (issue 9: cuDNN runs these batches). */
static char *keeps_source(const char *cell, int64_t H, int64_t B, int sm, cg_cuda_plan *plan)
{
    rnnc_cell *c = tu_builtin(cell);
    cg_cuda_config cfg = {.sizes = {H, H, H}, .batch = B, .sm = sm,
                          .sm_count = sm == 80 ? 108 : 132};
    char *src = NULL;
    if (tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, plan) != RNNC_OK)
        fail_msg("%s H=%lld B=%lld: %s", cell, (long long)H, (long long)B, rnnc_last_error());
    rnnc_cell_destroy(c);
    return src;
}

static void test_passes_keeps(void **state)
{
    (void)state;
    cg_cuda_plan plan;
    char *src = keeps_source("layernorm_lstm", 128, 16384, 90, &plan);
    check_passes(src, &plan, 3);
    assert_null(strstr(src, "#define SM_V"));
    const char *l = strstr(src, "#define SM_L13 "), *copy = l ? strstr(l, "pass_") : NULL;
    assert_true(l && (!copy || copy > strchr(l, '\n'))); /* one copy, not one a pass */
    assert_non_null(strstr(src, "/* %13 linear(h, weight_hh): kept for a later phase at xb + "));
    assert_non_null(strstr(src, "/* %25 add(%21, %24): kept for a later phase at xb + "));
    assert_non_null(strstr(src, "/* %27 sigmoid(o): kept for a later phase at xb + "));
    /* the linear's result goes out in its own phase, normalised from there */
    const char *p1 = strstr(src, "/* phase 1 */"), *p2 = strstr(src, "/* phase 2 */");
    const char *put = strstr(src, "__stcg(xb + 0 + (size_t)gb * 512 + 384 + gu, sm_[SM_L13 + ");
    const char *get = strstr(src, "((__ldcg(xb + 0 + (size_t)gb * 512 + 0 + gu)) - sm_[SM_S14");
    assert_true(put && p1 && p2 && get && put < p1 && p1 < get && get < p2);
    assert_true(plan.xb_floats >= 16384LL * (512 + 128 + 128));
    free(src);
    const char *const *names = rnnc_cell_builtin_names();
    for (int i = 0; names[i]; i++) {
        src = keeps_source(names[i], 1024, 2048, 80, &plan);
        assert_true(plan.launch[plan.n_launch - 1].grid <= 108u);
        free(src);
    }
    tu_require_nvrtc();
    src = keeps_source("layernorm_lstm", 128, 16384, 90, &plan);
    tu_compile_clean(src, "layernorm_lstm H=128 B=16384", 90);
    free(src);
}

static void test_passes_compile(void **state)
{
    (void)state;
    tu_require_nvrtc();
    static const struct {
        const char *cell;
        int64_t H, P, B;
        int mode, sm;
    } cases[] = {{"lstm", 2048, 2048, 1024, 0, 90}, {"gru", 2048, 2048, 2048, 1, 90},
                 {"lstm", 256, 256, 16384, 0, 80}, {"lstm", 2048, 512, 1024, 0, 90},
                 {"lstm", 1024, 1024, 2048, 2, 90}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cg_cuda_plan plan;
        char label[160], *src = source(cases[i].cell, cases[i].H, cases[i].P, cases[i].B,
                                       cases[i].mode, cases[i].sm, &plan);
        assert_non_null(strstr(plan.tuning, " np="));
        snprintf(label, sizeof label, "%s H=%lld P=%lld B=%lld sm_%d (%s)", cases[i].cell,
                 (long long)cases[i].H, (long long)cases[i].P, (long long)cases[i].B,
                 cases[i].sm, plan.tuning);
        tu_compile_clean(src, label, cases[i].sm);
        free(src);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_never_refuses),
        cmocka_unit_test(test_passes_source),
        cmocka_unit_test(test_passes_phases),
        cmocka_unit_test(test_passes_keeps),
        cmocka_unit_test(test_passes_compile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
