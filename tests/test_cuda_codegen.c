/* test_cuda_codegen.c: every built-in cell, at several shapes and hoist
 * settings, generates CUDA C that NVRTC compiles for sm_80 and sm_90 with no
 * error and no warning (NVRTC needs no GPU); what cannot be placed is
 * refused with a status naming the op. */
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
    {512, 512, 64, RNNC_HOIST_ALL, false},  {512, 512, 1, RNNC_HOIST_ALL, false},
    {37, 257, 3, RNNC_HOIST_MATMUL, true},  {100, 100, 5, RNNC_HOIST_NONE, false},
    {3, 1, 2, RNNC_HOIST_ALL, false},
};

static rnnc_status generate(const rnnc_cell *c, const shape *sh, char **src, cg_cuda_plan *plan)
{
    cg_cuda_config cfg = {.sizes = {sh->I, sh->H, sh->H}, .batch = sh->B, .sm = 90,
                          .sm_count = 132, .batch_first = sh->batch_first};
    return tu_cuda_source(c, sh->hoist, &cfg, src, plan);
}

/* Every k_shapes shape of one built-in cell generates a complete plan and
 * compiles for sm_90 (the first also for sm_80). */
static void builtin_shapes(const rnnc_cell *c, const char *name, bool lstm_or_gru)
{
    (void)lstm_or_gru;
    for (size_t k = 0; k < sizeof k_shapes / sizeof k_shapes[0]; k++) {
        const shape *sh = &k_shapes[k];
        char *src = NULL, label[128];
        cg_cuda_plan plan;
        rnnc_status st = generate(c, sh, &src, &plan);
        if (st != RNNC_OK)
            fail_msg("%s I=%lld H=%lld B=%lld hoist %d: %s", name, (long long)sh->I,
                     (long long)sh->H, (long long)sh->B, sh->hoist, rnnc_last_error());
        /* the plan is complete: a step kernel, cooperative, last */
        assert_true(plan.n_launch >= 1);
        assert_true(plan.launch[plan.n_launch - 1].cooperative);
        assert_int_equal(plan.out_cols, sh->H);
        assert_int_equal(plan.n_states, rnnc_cell_state_count(c));
        assert_non_null(strstr(src, "rnnc_step"));
        snprintf(label, sizeof label, "%s_%lld_%lld_%lld", name, (long long)sh->I,
                 (long long)sh->H, (long long)sh->B);
        tu_compile_clean(src, label, 90);
        if (k == 0)
            tu_compile_clean(src, label, 80);
        free(src);
    }
}

static void test_builtins_compile(void **state)
{
    (void)state;
    tu_require_nvrtc();
    tu_each_builtin(builtin_shapes);
}

/* Before sm_80 there is no cp.async: the weight slices and x take plain
 * loads (a T4, sm_75 with 40 SMs), and griddepcontrol compiles away. */
static void pre_ampere(const rnnc_cell *c, const char *name, bool lstm_or_gru)
{
    (void)lstm_or_gru;
    cg_cuda_config cfg = {.sizes = {256, 256, 256}, .batch = 32, .sm = 75, .sm_count = 40};
    char *src = NULL, label[128];
    cg_cuda_plan plan;
    if (tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, &plan) != RNNC_OK)
        fail_msg("%s sm_75: %s", name, rnnc_last_error());
    assert_null(strstr(src, "cp.async"));
    snprintf(label, sizeof label, "%s_sm75", name);
    tu_compile_clean(src, label, 75);
    free(src);
}

static void test_pre_ampere_compile(void **state)
{
    (void)state;
    tu_require_nvrtc();
    tu_each_builtin(pre_ampere);
}

/* Register tiles from the tuning: every built-in cell at the benchmark
 * shape with 8 x 4, LSTM and GRU also with 8 x 8 and (sm_80) 4 x 8; at
 * H = 100, B = 24 (rows and batch rows that the tile does not divide) the
 * generator pads the batch rows and halves RR until it divides. */
static void register_tiles(const rnnc_cell *c, const char *name, bool lstm_or_gru)
{
    static const struct {
        int64_t I, H, B;
        int rr, bb, sm;
    } t[] = {{512, 512, 64, 8, 4, 90}, {512, 512, 64, 8, 8, 90}, {512, 512, 64, 4, 8, 80},
             {50, 100, 24, 16, 8, 90}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (i > 0 && !lstm_or_gru)
            break;
        cg_cuda_config cfg = {.sizes = {t[i].I, t[i].H, t[i].H}, .batch = t[i].B, .sm = t[i].sm,
                              .sm_count = 132, .reg_rows = t[i].rr, .reg_batch = t[i].bb};
        char *src = NULL, label[160], want[32];
        cg_cuda_plan plan;
        if (tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, &plan) != RNNC_OK)
            fail_msg("%s %d x %d: %s", name, t[i].rr, t[i].bb, rnnc_last_error());
        snprintf(want, sizeof want, "rr=%d bb=%d", t[i].rr, t[i].bb);
        if (t[i].H == 512 && !strstr(plan.tuning, want) && !strstr(plan.tuning, "mma"))
            fail_msg("%s: tuning %s, wanted %s", name, plan.tuning, want);
        snprintf(label, sizeof label, "%s_rr%d_bb%d_H%lld (%s)", name, t[i].rr, t[i].bb,
                 (long long)t[i].H, plan.tuning);
        tu_compile_clean(src, label, t[i].sm);
        free(src);
    }
}

static void test_register_tiles_compile(void **state)
{
    (void)state;
    tu_require_nvrtc();
    tu_each_builtin(register_tiles);
}

/* Every shape cuDNN runs has kernels: LSTM and GRU at H = 1024 (W_hh on
 * chip, x staged in chunks) and H = 2048 (W_hh streamed every step), B in
 * {1, 64, 256}, for an H100 (132 SMs) and an A100 (108); and an LSTM with a
 * projection writing one direction of a bidirectional layer. */
static void test_large_shapes_compile(void **state)
{
    (void)state;
    tu_require_nvrtc();
    static const char *cells[] = {"lstm", "gru"};
    static const int64_t Hs[] = {1024, 2048}, Bs[] = {1, 64, 256};
    static const int sms[][2] = {{90, 132}, {80, 108}};
    for (int c = 0; c < 2; c++) {
        rnnc_cell *cell = NULL;
        assert_ok(rnnc_cell_builtin(&cell, cells[c], NULL));
        assert_ok(ir_optimise(cell, false));
        ir_arena *a = ir_arena_create();
        ir_schedule s;
        assert_ok(pass_fuse(cell, RNNC_HOIST_ALL, a, &s));
        for (int h = 0; h < 2; h++)
            for (int b = 0; b < 3; b++)
                for (int k = 0; k < 2; k++) {
                    cg_cuda_config cfg = {.sizes = {512, Hs[h], Hs[h]}, .batch = Bs[b],
                                          .sm = sms[k][0], .sm_count = sms[k][1]};
                    char *src = NULL, label[200];
                    cg_cuda_plan plan;
                    if (cg_cuda_generate(&s, &cfg, &src, &plan) != RNNC_OK)
                        fail_msg("%s H=%lld B=%lld sm_%d: %s", cells[c], (long long)Hs[h],
                                 (long long)Bs[b], sms[k][0], rnnc_last_error());
                    assert_true(plan.launch[plan.n_launch - 1].grid <= (unsigned)sms[k][1]);
                    snprintf(label, sizeof label, "%s_H%lld_B%lld_sm%d (%s)", cells[c],
                             (long long)Hs[h], (long long)Bs[b], sms[k][0], plan.tuning);
                    tu_compile_clean(src, label, sms[k][0]);
                    free(src);
                }
        ir_arena_destroy(a);
        rnnc_cell_destroy(cell);
    }
    rnnc_cell *cell = NULL;
    assert_ok(rnnc_cell_builtin(&cell, "lstm", NULL));
    assert_ok(ir_optimise(cell, true));
    cg_cuda_config cfg = {.sizes = {2 * 128, 512, 128}, .batch = 64, .sm = 90, .sm_count = 132,
                          .y_ld = 256};
    char *src = NULL;
    cg_cuda_plan plan;
    if (tu_cuda_source(cell, RNNC_HOIST_ALL, &cfg, &src, &plan) != RNNC_OK)
        fail_msg("lstm P=128: %s", rnnc_last_error());
    assert_int_equal(plan.out_cols, 128);
    assert_non_null(strstr(src, "#define YLD 256"));
    tu_compile_clean(src, "lstm_proj", 90);
    free(src);
    rnnc_cell_destroy(cell);
}

/* Streamed W_hh with 8 x 8 register tiles keeps the leading columns of
 * each block's slice in the shared memory x leaves (I = H = 1024, B = 64,
 * 16-row batch tiles: 288 of 1024 columns at 256 threads); other tiles
 * keep none but tiles of one output a lane (I = H = 2048, B = 1, 2, 4:
 * 864 of 2048 columns at B = 1 on sm_90).  LSTM and GRU, sm_80 and sm_90. */
static void test_kept_columns_compile(void **state)
{
    (void)state;
    tu_require_nvrtc();
    static const char *cells[] = {"lstm", "gru"};
    static const int sms[][2] = {{90, 132}, {80, 108}};
    for (int c = 0; c < 2; c++) {
        rnnc_cell *cell = NULL;
        assert_ok(rnnc_cell_builtin(&cell, cells[c], NULL));
        for (int k = 0; k < 2; k++)
            for (int rr8 = 0; rr8 < 2; rr8++) {
                cg_cuda_config cfg = {.sizes = {1024, 1024, 1024}, .batch = 64,
                                      .sm = sms[k][0], .sm_count = sms[k][1], .batch_tile = 16,
                                      .threads = rr8 ? 256 : 512, .reg_rows = 8,
                                      .reg_batch = rr8 ? 8 : 4};
                char *src = NULL, label[200];
                cg_cuda_plan plan;
                if (tu_cuda_source(cell, RNNC_HOIST_ALL, &cfg, &src, &plan) != RNNC_OK)
                    fail_msg("%s kept columns sm_%d: %s", cells[c], sms[k][0], rnnc_last_error());
                assert_non_null(strstr(plan.tuning, "stream"));
                /* the kept columns fill the shared memory, not past it */
                assert_true(plan.launch[plan.n_launch - 1].smem <= 227 * 1024);
                /* an A100's 108 SMs give 38 units a block: RR falls to 2 */
                bool tile88 = strstr(plan.tuning, "rr=8 bb=8") != NULL;
                const char *kept = strstr(src, "columns 0 .. ");
                assert_true(tile88 || !rr8 || k == 1);
                if (tile88 != (kept != NULL))
                    fail_msg("%s sm_%d %s: %s", cells[c], sms[k][0], plan.tuning,
                             kept ? "kept columns with 8 x 4 tiles" : "no kept columns");
                snprintf(label, sizeof label, "%s_kept_sm%d (%s)", cells[c], sms[k][0],
                         plan.tuning);
                tu_compile_clean(src, label, sms[k][0]);
                free(src);
            }
        for (int k = 0; k < 2; k++)
            for (int64_t B = 1; B <= 4; B *= 2) {
                cg_cuda_config cfg = {.sizes = {2048, 2048, 2048}, .batch = B,
                                      .sm = sms[k][0], .sm_count = sms[k][1]};
                char *src = NULL, label[200];
                cg_cuda_plan plan;
                if (tu_cuda_source(cell, RNNC_HOIST_ALL, &cfg, &src, &plan) != RNNC_OK)
                    fail_msg("%s B=%lld sm_%d: %s", cells[c], (long long)B, sms[k][0],
                             rnnc_last_error());
                assert_non_null(strstr(plan.tuning, "stream"));
                assert_non_null(strstr(plan.tuning, "rr=1 bb=1"));
                assert_non_null(strstr(src, "columns 0 .. "));
                assert_true(plan.launch[plan.n_launch - 1].smem <= 227 * 1024);
                if (c == 0 && k == 0 && B == 1)
                    assert_non_null(strstr(src, "columns 0 .. 863 of the weight slice"));
                snprintf(label, sizeof label, "%s_kept_B%lld_sm%d (%s)", cells[c], (long long)B,
                         sms[k][0], plan.tuning);
                tu_compile_clean(src, label, sms[k][0]);
                free(src);
            }
        rnnc_cell_destroy(cell);
    }
}

/* At I = H = 1024, B = 256 an sm_90 step keeps W_hh on chip and stages h
 * in 32-column chunks by bulk copies from the state's chunk-major copy
 * into two or three buffers (cuda_bulk.c), on tensor cores and FFMA; on
 * sm_80 TF32 stages them by the threads (the GRU, whose 48 rows a block
 * leave no room for h without the bulk layout, streams W_hh there, as
 * FFMA does).  LSTM and GRU, every fp32 math mode; the shared memory stays
 * within 227 KiB. */
static void test_bulk_staging_compile(void **state)
{
    (void)state;
    tu_require_nvrtc();
    static const char *cells[] = {"lstm", "gru"};
    /* an sm_80 target with the H100's SM count: the same tiles (an A100's
     * 108 SMs give 40 rows a block, which stream W_hh on the FFMA pipes) */
    static const int sms[][2] = {{90, 132}, {80, 132}};
    for (int c = 0; c < 2; c++) {
        rnnc_cell *cell = tu_builtin(cells[c]);
        for (int k = 0; k < 2; k++)
            for (int math = 0; math <= 2; math++) {
                cg_cuda_config cfg = {.sizes = {1024, 1024, 1024}, .batch = 256,
                                      .sm = sms[k][0], .sm_count = sms[k][1], .math = math};
                char *src = NULL, label[200];
                cg_cuda_plan plan;
                if (tu_cuda_source(cell, RNNC_HOIST_ALL, &cfg, &src, &plan) != RNNC_OK)
                    fail_msg("%s bulk sm_%d: %s", cells[c], sms[k][0], rnnc_last_error());
                if (k == 0 && math > 0 && !strstr(plan.tuning, "mma"))
                    fail_msg("%s sm_%d math %d: not on tensor cores (%s)", cells[c], sms[k][0], math,
                             plan.tuning);
                assert_true(plan.launch[plan.n_launch - 1].smem <= 227 * 1024);
                bool bulk = strstr(src, "cp.async.bulk") != NULL;
                if (bulk != (k == 0))
                    fail_msg("%s sm_%d %s: %s", cells[c], sms[k][0], plan.tuning,
                             bulk ? "bulk copies before sm_90" : "no bulk staging");
                snprintf(label, sizeof label, "%s_bulk_sm%d_math%d (%s)", cells[c], sms[k][0],
                         math, plan.tuning);
                tu_compile_clean(src, label, sms[k][0]);
                free(src);
            }
        rnnc_cell_destroy(cell);
    }
}

/* FFMA's outer products (cuda_outer.c) at the tilings gpu_fused_math
 * runs: taken on sm_90 (h in bulk-staged chunks, k-major), within 227
 * KiB, compiled clean; refused on sm_80 (no bulk copies), where the
 * tuning's other fields still hold.  A layer of a two-layer stack has
 * half the SMs (66). */
static void test_outer_products_compile(void **state)
{
    (void)state;
    tu_require_nvrtc();
    static const char cifg[] =
        "cell cifg {\n    input x[I]\n    state h[H]\n    state c[H]\n"
        "    param weight_ih[3H, I]\n    param weight_hh[3H, H]\n    param bias[3H]\n"
        "    gates = linear(x, weight_ih) + linear(h, weight_hh) + bias\n"
        "    f, g, o = chunk(gates, 3)\n    fs = sigmoid(f)\n"
        "    c_next = fs * c + (1 - fs) * tanh(g)\n    h_next = sigmoid(o) * tanh(c_next)\n"
        "    next h = h_next\n    next c = c_next\n    output h_next\n}\n";
    static const struct {
        const char *cell;
        int64_t I, H, B;
        int ut, bt, nt, rr, bb, sms;
    } t[] = {{"lstm", 64, 1024, 256, 8, 256, 512, 8, 8, 132},
             {"lstm", 1024, 1024, 256, 8, 256, 512, 8, 8, 132},
             {"lstm", 512, 512, 256, 8, 256, 512, 8, 8, 66},
             {"gru", 64, 1024, 256, 8, 256, 384, 8, 8, 132},
             {"cifg", 64, 1024, 256, 8, 256, 384, 8, 8, 132},
             {"lstm", 64, 1024, 128, 8, 128, 256, 8, 8, 132},
             {"lstm", 512, 512, 128, 16, 32, 256, 8, 8, 132}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        rnnc_cell *cell = NULL;
        if (strcmp(t[i].cell, "cifg") == 0)
            assert_int_equal(rnnc_cell_parse(&cell, cifg, strlen(cifg), "cifg.cell", NULL, NULL),
                             RNNC_OK);
        else
            cell = tu_builtin(t[i].cell);
        for (int sm = 80; sm <= 90; sm += 10) {
            cg_cuda_config cfg = {.sizes = {t[i].I, t[i].H, t[i].H}, .batch = t[i].B, .sm = sm,
                                  .sm_count = t[i].sms, .unit_tile = t[i].ut,
                                  .batch_tile = t[i].bt, .threads = t[i].nt,
                                  .reg_rows = t[i].rr, .reg_batch = t[i].bb, .outer = true};
            char *src = NULL, label[200];
            cg_cuda_plan plan;
            if (tu_cuda_source(cell, RNNC_HOIST_ALL, &cfg, &src, &plan) != RNNC_OK)
                fail_msg("%s outer sm_%d: %s", t[i].cell, sm, rnnc_last_error());
            if ((strstr(plan.tuning, " outer") != NULL) != (sm == 90))
                fail_msg("%s B=%lld sm_%d: %s", t[i].cell, (long long)t[i].B, sm, plan.tuning);
            assert_true(plan.launch[plan.n_launch - 1].smem <= 227 * 1024);
            snprintf(label, sizeof label, "%s_outer_B%lld_sm%d (%s)", t[i].cell,
                     (long long)t[i].B, sm, plan.tuning);
            tu_compile_clean(src, label, sm);
            free(src);
        }
        rnnc_cell_destroy(cell);
    }
}

/* Several elements a thread (E = 512 at 256 threads on sm_90, 640 with
 * 108 SMs on sm_80): the hoisted values and states still live in
 * registers, arrays indexed in unrolled loops. */
static void assert_register_arrays(const char *src, const char *label)
{
    if (!strstr(src, "for (int j_ = 0; j_ < ") || !strstr(src, "] = {};"))
        fail_msg("%s: no register arrays for several elements a thread", label);
}

/* At I = H = 1024, B = 64 the step keeps W_hh on chip and stages h in
 * 128-column chunks by bulk copies on sm_90 (FFMA and TF32), not in
 * 256-column chunks by the threads (cuda_tile.c search). */
static void test_bulk_chunks_b64(void **state)
{
    (void)state;
    tu_require_nvrtc();
    rnnc_cell *cell = tu_builtin("lstm");
    for (int math = 0; math <= 1; math++) {
        cg_cuda_config cfg = {.sizes = {1024, 1024, 1024}, .batch = 64, .sm = 90,
                              .sm_count = 132, .math = math};
        char *src = NULL, label[200];
        cg_cuda_plan plan;
        if (tu_cuda_source(cell, RNNC_HOIST_ALL, &cfg, &src, &plan) != RNNC_OK)
            fail_msg("lstm B=64 math %d: %s", math, rnnc_last_error());
        if (!strstr(plan.tuning, "kc=128") || strstr(plan.tuning, "stream") ||
            !strstr(src, "cp.async.bulk"))
            fail_msg("lstm B=64 math %d: no 128-column bulk chunks (%s)", math, plan.tuning);
        snprintf(label, sizeof label, "lstm_b64_bulk_math%d (%s)", math, plan.tuning);
        assert_register_arrays(src, label);
        tu_compile_clean(src, label, 90);
        free(src);
    }
    rnnc_cell_destroy(cell);
}

/* The same for a one-phase cell on tensor cores, the three-phase
 * layernorm cell and sm_80 (test_bulk_chunks_b64 has the LSTM on sm_90). */
static void test_register_cache_arrays(void **state)
{
    (void)state;
    tu_require_nvrtc();
    static const struct {
        const char *cell;
        int sm, math;
    } cases[] = {{"gru", 90, 1}, {"layernorm_lstm", 90, 0}, {"lstm", 80, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        rnnc_cell *cell = tu_builtin(cases[k].cell);
        cg_cuda_config cfg = {.sizes = {1024, 1024, 1024}, .batch = 64, .sm = cases[k].sm,
                              .sm_count = cases[k].sm == 80 ? 108 : 132, .math = cases[k].math};
        char *src = NULL, label[200];
        cg_cuda_plan plan;
        if (tu_cuda_source(cell, RNNC_HOIST_ALL, &cfg, &src, &plan) != RNNC_OK)
            fail_msg("%s: %s", cases[k].cell, rnnc_last_error());
        snprintf(label, sizeof label, "%s_regs_sm%d_math%d (%s)", cases[k].cell, cases[k].sm,
                 cases[k].math, plan.tuning);
        assert_register_arrays(src, label);
        tu_compile_clean(src, label, cases[k].sm);
        free(src);
        rnnc_cell_destroy(cell);
    }
}

/* The GEMM launches of a plan that run at T*B = rows (tails apart), the
 * name of the last, and whether a tail runs. */
static int gemms_at(const cg_cuda_plan *p, unsigned rows, const char **name, bool *tail)
{
    int n = 0;
    *tail = false;
    for (int i = 0; i < p->n_launch; i++) {
        const cg_cuda_launch *l = &p->launch[i];
        if (strncmp(l->name, "rnnc_gemm", 9) != 0 || !cg_cuda_launch_runs(l, rows))
            continue;
        if (l->tail) {
            *tail = true;
            continue;
        }
        n++;
        *name = l->name;
    }
    return n;
}

/* The hoisted GEMM's tiers split the row counts: exactly one GEMM runs at
 * any T*B, the K-split one (suffix k) for a single step at B = 64 and for
 * short sequences at B = 1, the large tiles for long sequences; with them
 * the tail (suffix t) where their last wave would be under half full:
 * T = 100, B = 64 is 800 tiles, 3 waves of 264 and 8 more, so the large
 * tiles take 6272 rows and the tail 128; 1152 rows are 144 tiles, more
 * than half a wave, so no tail. */
static void test_gemm_tiers(void **state)
{
    (void)state;
    rnnc_cell *c = NULL;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    assert_ok(ir_optimise(c, false));
    static const shape sh[] = {{512, 512, 64, RNNC_HOIST_ALL, false},
                               {512, 512, 1, RNNC_HOIST_ALL, false}};
    static const unsigned rows[] = {1, 2, 31, 32, 64, 100, 127, 128, 129, 640, 1151, 1152, 6400,
                                    100000};
    for (size_t k = 0; k < 2; k++) {
        char *src = NULL;
        cg_cuda_plan plan;
        assert_ok(generate(c, &sh[k], &src, &plan));
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            const char *name = "";
            bool tail = false;
            if (gemms_at(&plan, rows[i], &name, &tail) != 1)
                fail_msg("B=%lld rows %u: not exactly one GEMM", (long long)sh[k].B, rows[i]);
            if (k == 0 && (rows[i] == 6400 || rows[i] == 1152))
                assert_int_equal(tail, rows[i] == 6400);
            if (rows[i] == (k == 0 ? 64u : 100u))
                assert_string_equal(name, "rnnc_gemm7k");
            if (rows[i] == 100000)
                assert_string_equal(name, "rnnc_gemm7");
        }
        free(src);
    }
    rnnc_cell_destroy(c);
}

/* The hoisted GEMM epilogue takes the folded bias, so LSTM with hoist ALL has
 * no row kernel, and layernorm_lstm (layernorm over 4H of the hoisted
 * product) has one; MATMUL and NONE keep the bias in the step.  At B = 4 a
 * hoisted linear has two GEMMs: 32 x 64 tiles, and the K-split one for
 * few rows. */
static void test_hoist_plan(void **state)
{
    (void)state;
    static const struct {
        const char *cell;
        rnnc_hoist hoist;
        int launches;
    } want[] = {{"lstm", RNNC_HOIST_ALL, 3}, {"lstm", RNNC_HOIST_MATMUL, 3},
                {"lstm", RNNC_HOIST_NONE, 1}, {"layernorm_lstm", RNNC_HOIST_ALL, 4}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        rnnc_cell *c = NULL;
        assert_ok(rnnc_cell_builtin(&c, want[i].cell, NULL));
        assert_ok(ir_optimise(c, false));
        shape sh = {64, 32, 4, want[i].hoist, false};
        char *src = NULL;
        cg_cuda_plan plan;
        assert_ok(generate(c, &sh, &src, &plan));
        if (plan.n_launch != want[i].launches)
            fail_msg("%s hoist %d: %d launches, want %d\n%s", want[i].cell, want[i].hoist,
                     plan.n_launch, want[i].launches, src);
        free(src);
        rnnc_cell_destroy(c);
    }
}

/* A step value H+1 wide cannot be owned by hidden-unit tiles. */
static void test_unsupported_names_op(void **state)
{
    (void)state;
    rnnc_cell *c = NULL;
    rnnc_value x, h, w, g, o;
    assert_ok(rnnc_cell_create(&c, "wider"));
    assert_ok(rnnc_cell_input(c, "x", "I", &x));
    assert_ok(rnnc_cell_state(c, "h", "H+1", &h));
    assert_ok(rnnc_cell_param(c, "w", "H+1", "H+1", &w));
    assert_ok(rnnc_linear(c, h, w, &g));
    assert_ok(rnnc_tanh(c, g, &o));
    assert_ok(rnnc_cell_set_next(c, h, o));
    assert_ok(rnnc_cell_set_output(c, o));
    assert_ok(ir_optimise(c, false));
    shape sh = {8, 16, 2, RNNC_HOIST_ALL, false};
    char *src = NULL;
    cg_cuda_plan plan;
    assert_status(generate(c, &sh, &src, &plan), RNNC_ERR_UNSUPPORTED);
    assert_null(src);
    if (!strstr(rnnc_last_error(), "op tanh") && !strstr(rnnc_last_error(), "op linear"))
        fail_msg("error does not name the op: %s", rnnc_last_error());
    rnnc_cell_destroy(c);
}

/* A cell that reads its input only through one dropout op: the kernels
 * read x as that op's value (the runtime masks x in training), so a
 * hoisted linear of it stays one GEMM, at every hoist setting (compiled
 * where NVRTC is).  (An input read both dropped and not is a row kernel's
 * value: test_cuda_rounds.) */
static void test_input_dropout(void **state)
{
    (void)state;
    rnnc_cell *c = tu_data_cell("xdrop");
    assert_ok(ir_optimise(c, false));
    for (size_t k = 0; k < sizeof k_shapes / sizeof k_shapes[0] - 1; k++) {
        char *src = NULL, label[64];
        cg_cuda_plan plan;
        if (generate(c, &k_shapes[k], &src, &plan) != RNNC_OK)
            fail_msg("xdrop shape %zu: %s", k, rnnc_last_error());
        assert_int_equal(plan.x_drop_site, 0);
        assert_true(plan.x_drop_p == 0.2);
        assert_null(strstr(src, "rnnc_drop(")); /* nothing drawn in the kernels */
        snprintf(label, sizeof label, "xdrop_%zu", k);
        if (rt_nvrtc_available())
            tu_compile_clean(src, label, 90);
        free(src);
    }
    rnnc_cell_destroy(c);
}

static void test_bad_config(void **state)
{
    (void)state;
    rnnc_cell *c = NULL;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    assert_ok(ir_optimise(c, false));
    shape sh = {8, 16, 0, RNNC_HOIST_ALL, false};
    char *src = NULL;
    cg_cuda_plan plan;
    assert_status(generate(c, &sh, &src, &plan), RNNC_ERR_INVALID_ARG);
    cg_cuda_config cfg = {.sizes = {8, 16, 16}, .batch = 8, .sm = 90, .reg_rows = 3};
    assert_status(tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, &plan), RNNC_ERR_INVALID_ARG);
    cfg.reg_rows = 0;
    cfg.reg_batch = 32;
    assert_status(tu_cuda_source(c, RNNC_HOIST_ALL, &cfg, &src, &plan), RNNC_ERR_INVALID_ARG);
    rnnc_cell_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hoist_plan),
        cmocka_unit_test(test_gemm_tiers),
        cmocka_unit_test(test_unsupported_names_op),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_input_dropout),
        cmocka_unit_test(test_builtins_compile),
        cmocka_unit_test(test_large_shapes_compile),
        cmocka_unit_test(test_kept_columns_compile),
        cmocka_unit_test(test_bulk_staging_compile),
        cmocka_unit_test(test_bulk_chunks_b64),
        cmocka_unit_test(test_outer_products_compile),
        cmocka_unit_test(test_register_cache_arrays),
        cmocka_unit_test(test_pre_ampere_compile),
        cmocka_unit_test(test_register_tiles_compile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
