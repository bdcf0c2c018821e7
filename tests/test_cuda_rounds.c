/* test_cuda_rounds.c: cells whose hoisted linears read something other
 * than the input (tests/data/cells: preln, layernorm(x) before W_ih;
 * chain, the tanh of a first projection; twice, x dropped beside x itself,
 * with a value of the first round read by the second) generate their
 * hoisted work in rounds (codegen/cuda/cuda_rounds.c): each GEMM after the
 * kernel that makes its x, that x read from hz, at every shape, hoist
 * setting, dtype and math mode, and the sources compile with NVRTC for
 * sm_80 and sm_90 with no warning (in CI, no GPU needed; a sample of the
 * shapes outside fp32 on sm_90, for time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "ir/ir.h"
#include "cudagen.h"
#include "runtime/device/device.h"
#include "testutil.h"

typedef tu_shape shape;

static const shape k_shapes[] = {
    {512, 512, 64, RNNC_HOIST_ALL, false}, {512, 512, 1, RNNC_HOIST_ALL, false},
    {37, 257, 3, RNNC_HOIST_ALL, true},    {1024, 1024, 256, RNNC_HOIST_ALL, false},
    {100, 100, 5, RNNC_HOIST_MATMUL, false}, {64, 64, 4, RNNC_HOIST_NONE, false},
};

static const char *const k_cells[] = {"preln", "chain", "twice"};

/* The launch index of the kernel named `name`, -1 if none. */
static int launch_of(const cg_cuda_plan *p, const char *name)
{
    for (int i = 0; i < p->n_launch; i++)
        if (!strcmp(p->launch[i].name, name))
            return i;
    return -1;
}

/* The launch order each cell needs at HOIST_ALL: what makes a GEMM's x
 * runs before the GEMM. */
static void check_order(const char *cell, const cg_cuda_plan *p, const char *src)
{
    if (!strcmp(cell, "preln")) {
        /* round 1 the layernorm, round 2 the GEMM over it */
        assert_int_equal(launch_of(p, "rnnc_rows_r1"), 0);
        assert_true(launch_of(p, "rnnc_gemm9") > 0 || launch_of(p, "rnnc_gemm9s") > 0);
    } else if (!strcmp(cell, "chain")) {
        /* two GEMMs in node order, no row kernel: the first's epilogue
         * makes the second's x */
        assert_int_equal(launch_of(p, "rnnc_rows"), -1);
        assert_int_equal(launch_of(p, "rnnc_rows_r1"), -1);
        int first = -1, second = -1;
        for (int i = 0; i < p->n_launch; i++)
            if (!strncmp(p->launch[i].name, "rnnc_gemm", 9)) {
                int lin = atoi(p->launch[i].name + 9);
                if (first < 0)
                    first = lin;
                else if (lin != first && second < 0)
                    second = lin;
                if (second >= 0)
                    assert_int_equal(lin, second); /* never back to the first */
            }
        assert_true(first >= 0 && second > first);
    } else {
        int r1 = launch_of(p, "rnnc_rows_r1"), r2 = launch_of(p, "rnnc_rows_r2");
        assert_true(r1 > 0 && r2 > r1);
        assert_int_equal(p->x_drop_site, -1); /* x is also read undropped */
        assert_non_null(strstr(src, "rnnc_drop("));
    }
    /* a GEMM over a buffer of hz reads it as 4-wide rows (or singly) */
    assert_non_null(strstr(src, "(hz + (size_t)"));
}

/* Generates every shape; compiles those in the mask `compile` (bit k:
 * shape k) where NVRTC is. */
static void each_shape(const char *cell, int dtype, int math, int sm, unsigned compile)
{
    rnnc_cell *c = tu_data_cell(cell);
    assert_ok(ir_optimise(c, false));
    for (size_t k = 0; k < sizeof k_shapes / sizeof k_shapes[0]; k++) {
        const shape *sh = &k_shapes[k];
        cg_cuda_config cfg = {.sizes = {sh->I, sh->H, sh->H}, .batch = sh->B, .sm = sm,
                              .sm_count = sm == 80 ? 108 : 132, .batch_first = sh->batch_first,
                              .dtype = dtype, .math = math, .tma = math != 0};
        char *src = NULL, label[96];
        cg_cuda_plan plan;
        if (tu_cuda_source(c, sh->hoist, &cfg, &src, &plan) != RNNC_OK)
            fail_msg("%s I=%lld H=%lld B=%lld hoist %d dtype %d math %d: %s", cell,
                     (long long)sh->I, (long long)sh->H, (long long)sh->B, sh->hoist, dtype, math,
                     rnnc_last_error());
        assert_true(plan.launch[plan.n_launch - 1].cooperative);
        if (sh->hoist == RNNC_HOIST_ALL)
            check_order(cell, &plan, src);
        snprintf(label, sizeof label, "%s_%zu_d%d_m%d_sm%d", cell, k, dtype, math, sm);
        if (rt_nvrtc_available() && (compile >> k & 1))
            tu_compile_clean(src, label, sm);
        free(src);
    }
    rnnc_cell_destroy(c);
}

static void test_fp32(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof k_cells / sizeof k_cells[0]; i++) {
        each_shape(k_cells[i], RNNC_F32, 0, 90, ~0u);
        each_shape(k_cells[i], RNNC_F32, 0, 80, 1u);
    }
}

/* 16-bit models: x and the weights are 16-bit, a buffer of hz is fp32;
 * TF32 models: the GEMMs over hz take the mma tiles, not wgmma's (whose
 * tensor map is over x). */
static void test_half_and_tf32(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof k_cells / sizeof k_cells[0]; i++) {
        each_shape(k_cells[i], RNNC_F16, 0, 90, 0x0du);
        each_shape(k_cells[i], RNNC_BF16, 0, 80, 0x01u);
        each_shape(k_cells[i], RNNC_F32, 1, 90, 0x0du);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp32),
        cmocka_unit_test(test_half_and_tf32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
