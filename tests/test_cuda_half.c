/* test_cuda_half.c: the kernels of half-precision models (F16, BF16) on
 * the fused path: every built-in cell and one .cell file compile with
 * NVRTC for sm_80 and sm_90 with no error and no warning (NVRTC needs no
 * GPU); x, y and the weights are 16-bit and read through the conversions;
 * the step's linears run on tensor cores (mma.sync m16n8k16) where the
 * tiles allow, else FFMA, and the hoisted GEMMs on m16n8k8 (few rows) or
 * 16-bit tiles on m16n8k16 (cuda_gemm16.c); the step's
 * weight slices take half the shared memory of fp32's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "ir/ir.h"
#include "cudagen.h"
#include "testutil.h"

typedef struct shape {
    int64_t I, H, B;
    int hoist;
    bool step_mma; /* LSTM's step linear on tensor cores at this shape (sm_90) */
} shape;

/* The default shape; K = 37 (no 4-wide loads) at B = 3; an upper layer's
 * input (I = 2H); hoist none (x staged by the step, converted); H = 2048
 * at B = 256 (weights streamed or x in chunks); K = 200 (16-bit GEMM tiles
 * with a last slice past K); H = 1024 at B = 128 (h in chunks on tensor
 * cores). */
static const shape k_shapes[] = {
    {512, 512, 64, RNNC_HOIST_ALL, true},   {37, 48, 3, RNNC_HOIST_ALL, false},
    {1024, 512, 64, RNNC_HOIST_ALL, true},  {64, 64, 4, RNNC_HOIST_NONE, false},
    {2048, 2048, 256, RNNC_HOIST_ALL, false}, {256, 256, 64, RNNC_HOIST_NONE, true},
    {200, 512, 64, RNNC_HOIST_ALL, true},   {1024, 1024, 128, RNNC_HOIST_ALL, true},
};

static int lstm_gru_seen;

static rnnc_status generate(const rnnc_cell *c, const shape *sh, int dtype, int sm, char **src,
                            cg_cuda_plan *plan)
{
    cg_cuda_config cfg = {.sizes = {sh->I, sh->H, sh->H}, .batch = sh->B, .sm = sm,
                          .sm_count = sm == 80 ? 108 : 132, .dtype = dtype};
    return tu_cuda_source(c, (rnnc_hoist)sh->hoist, &cfg, src, plan);
}

/* A chunk of x staged from the 16-bit copy: a 16-byte load of the copy
 * inside the chunk loop (the chunk itself, or the next one fetched ahead). */
static bool chunk_from_copy(const char *src)
{
    const char *loop = strstr(src, "for (int ch_ = 0;");
    return loop && strstr(loop, "__ldcg((const uint4 *)((rnnc_h *)(xb + ") != NULL;
}

static void check_cell(const rnnc_cell *c, const char *name, bool all_shapes)
{
    static const int sms[] = {80, 90};
    static const int dtypes[] = {RNNC_F16, RNNC_BF16};
    for (int d = 0; d < 2; d++)
        for (size_t k = 0; k < sizeof k_shapes / sizeof k_shapes[0]; k++) {
            if (!all_shapes && k != 0)
                continue;
            for (int i = 0; i < 2; i++) {
                char *src = NULL, label[200];
                cg_cuda_plan plan;
                const shape *sh = &k_shapes[k];
                if (generate(c, sh, dtypes[d], sms[i], &src, &plan) != RNNC_OK)
                    fail_msg("%s %s H=%lld B=%lld: %s", name, rnnc_dtype_name(dtypes[d]),
                             (long long)sh->H, (long long)sh->B, rnnc_last_error());
                assert_non_null(strstr(src, "typedef unsigned short rnnc_h;"));
                assert_non_null(strstr(src, "const rnnc_h *__restrict__ wts"));
                assert_non_null(strstr(src, "rnnc_f2h(act_ ?")); /* y rounded to the dtype */
                assert_non_null(strstr(src, dtypes[d] == RNNC_BF16 ? "bf16 model" : "f16 model"));
                bool mma = strstr(plan.tuning, " mma") != NULL;
                assert_int_equal(mma, strstr(src, "rnnc_mma16(d_[") != NULL);
                if (strcmp(name, "lstm") == 0 && sms[i] == 90)
                    assert_int_equal(mma, sh->step_mma);
                /* LSTM and GRU with the barrier on tensor cores stage 16-bit
                 * copies of h after step 0 (c->h16) */
                if ((strcmp(name, "lstm") == 0 || strcmp(name, "gru") == 0) && mma &&
                    !strstr(plan.tuning, " ll")) {
                    assert_non_null(strstr(src, "__stcg((rnnc_h *)(xb + "));
                    /* by 16-byte loads where rows of h are whole 16-byte words */
                    assert_int_equal(sh->H % 8 == 0,
                                     strstr(src, "__ldcg((const uint4 *)((rnnc_h *)(xb + ") != NULL);
                    /* in chunks too, where x is staged in chunks */
                    if (strstr(src, "for (int ch_ = 0;"))
                        assert_true(chunk_from_copy(src));
                }
                /* the hoisted GEMM (hoist all: x W_ih^T) on tensor cores:
                 * m16n8k8 from fp32 tiles for few rows, and the large
                 * tiles 16-bit through ldmatrix (K a multiple of 8) */
                if (sh->hoist == RNNC_HOIST_ALL) {
                    bool g16 = sh->I % 8 == 0 && sh->B > 16;
                    assert_non_null(strstr(src, "rnnc_mma8h(c_"));
                    assert_int_equal(g16, strstr(src, "rnnc_ldsm4(a_[i]") != NULL);
                    assert_int_equal(g16, strstr(src, "rnnc_mma16(c_") != NULL);
                }
                snprintf(label, sizeof label, "%s_%s_I%lld_H%lld_B%lld (%s)", name,
                         rnnc_dtype_name(dtypes[d]), (long long)sh->I, (long long)sh->H,
                         (long long)sh->B, plan.tuning);
                tu_compile_clean(src, label, sms[i]);
                free(src);
            }
        }
}

static void test_half_compiles(void **state)
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

/* The step kernel (the cooperative launch) of an f16 LSTM at the same
 * tiles as fp32 takes less shared memory by at least half the weight
 * slices (and half the staged x on tensor cores); the fp32 source names no
 * 16-bit type. */
static void test_half_smem(void **state)
{
    (void)state;
    rnnc_cell *c = NULL;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    assert_ok(ir_optimise(c, false));
    char *s32 = NULL, *s16 = NULL;
    cg_cuda_plan p32, p16;
    assert_ok(generate(c, &k_shapes[0], RNNC_F32, 90, &s32, &p32));
    assert_ok(generate(c, &k_shapes[0], RNNC_F16, 90, &s16, &p16));
    assert_null(strstr(s32, "rnnc_h"));
    char want[128];
    snprintf(want, sizeof want, "%s mma", p32.tuning);
    assert_string_equal(want, p16.tuning);
    unsigned m32 = 0, m16 = 0;
    for (int i = 0; i < p32.n_launch; i++)
        if (p32.launch[i].cooperative) {
            m32 = p32.launch[i].smem;
            m16 = p16.launch[i].smem;
        }
    /* LSTM at H = 512, B = 64 (16 units x 16 rows): 64 rows of W_hh of
     * 512 + padding floats; 16-bit halves them */
    assert_true(m32 > 0 && m16 < m32);
    assert_true(m32 - m16 >= 64u * 512u * 2u);
    free(s32);
    free(s16);
    /* a dtype the kernels do not take */
    cg_cuda_plan p;
    char *s = NULL;
    assert_int_equal(generate(c, &k_shapes[0], RNNC_F64, 90, &s, &p), RNNC_ERR_UNSUPPORTED);
    assert_null(s);
    rnnc_cell_destroy(c);
}

/* The tagged exchange of a half model on tensor cores: 32-bit words (a
 * 16-bit value and a 16-bit tag) staged straight into the tensor cores'
 * 16-bit x, no barrier; half the exchange words of fp32's tagged 64-bit
 * ones.  Every built-in cell it applies to compiles clean for sm_80 and
 * sm_90. */
static void ll16_cell(const rnnc_cell *c, const char *name, bool all_shapes)
{
    (void)all_shapes;
    static const int sms[] = {80, 90};
    for (int i = 0; i < 2; i++) {
        cg_cuda_config cfg = {.sizes = {512, 512, 512}, .batch = 64, .sm = sms[i],
                              .sm_count = sms[i] == 80 ? 108 : 132, .dtype = RNNC_BF16,
                              .exchange = 2};
        cg_cuda_plan plan, p32;
        char *src = NULL, *s32 = NULL, label[160];
        if (tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, &plan) != RNNC_OK)
            fail_msg("%s: %s", name, rnnc_last_error());
        if (!strstr(src, "rnnc_ll_get4(")) { /* not single-phase, or no tensor cores */
            free(src);
            continue;
        }
        assert_non_null(strstr(plan.tuning, " mma"));
        assert_null(strstr(src, "rnnc_wait(bar"));
        assert_true(plan.xb_zero_floats > 0);
        cfg.dtype = RNNC_F32;
        cfg.batch = 64;
        assert_ok(tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &s32, &p32));
        assert_non_null(strstr(s32, "rnnc_ll_get2("));
        assert_int_equal(p32.xb_zero_floats, 2 * plan.xb_zero_floats);
        snprintf(label, sizeof label, "%s bf16 tagged words sm_%d (%s)", name, sms[i], plan.tuning);
        tu_compile_clean(src, label, sms[i]);
        free(src);
        free(s32);
        if (strcmp(name, "lstm") == 0 || strcmp(name, "gru") == 0)
            lstm_gru_seen++;
    }
}

static void test_half_tagged_words(void **state)
{
    (void)state;
    tu_require_nvrtc();
    lstm_gru_seen = 0;
    tu_each_builtin(ll16_cell);
    assert_int_equal(lstm_gru_seen, 4); /* LSTM and GRU take it on both archs */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_compiles),
        cmocka_unit_test(test_half_smem),
        cmocka_unit_test(test_half_tagged_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
