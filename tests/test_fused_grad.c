/*
 * test_fused_grad.c: the split of the backward step for the fused GPU
 * backward (runtime/fused_grad/fused_grad.h), on every machine: for every built-in
 * cell it either builds (the record cell, the recurrence cell and the post
 * ops; its kernels generate at two shapes and NVRTC compiles the larger
 * without warnings, as it does the cell-independent kernels) or is refused as UNSUPPORTED naming why; the
 * four cells cuDNN runs always build, and an LSTM's split is the one the
 * design says (docs/training.md), with a projection too (test_projection); at batches that take passes (B = 2048,
 * H = 1024 and larger) the kernels still generate (test_huge_batches).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/fused_grad/fused_grad.h"
#include "testutil.h"

static void compile_clean(const char *src, const char *label)
{
    void *cubin = NULL;
    size_t size = 0;
    rnnc_status st = rt_nvrtc_compile(src, label, 90, NULL, 0, &cubin, &size);
    if (st != RNNC_OK) {
        fprintf(stderr, "%s\n", src);
        fail_msg("%s: %s", label, rnnc_last_error());
    }
    const char *log = rt_nvrtc_last_log();
    if (log && strstr(log, "warning"))
        fail_msg("%s warns: %s", label, log);
    free(cubin);
}

/* Generates (and compiles) the kernels of s; whether the source draws
 * dropout masks. */
static bool generate(const ir_schedule *s, ir_sizes sz, int64_t B, const char *label,
                     bool compile)
{
    cg_cuda_config cfg = {.sizes = sz, .batch = B, .sm = 90, .sm_count = 132};
    char *src = NULL;
    cg_cuda_plan plan;
    if (cg_cuda_generate(s, &cfg, &src, &plan) != RNNC_OK)
        fail_msg("%s: %s", label, rnnc_last_error());
    if (compile && rt_nvrtc_available())
        compile_clean(src, label);
    bool drops = strstr(src, "rnnc_drop(") != NULL;
    free(src);
    return drops;
}

/* The row cell's kernel generates (its parameters where a pseudo-layer's
 * lie) and compiles clean. */
static void compile_rows(const rnnc_cell *c, ir_sizes sz, const fg_kind *kd, const char *name)
{
    int64_t off[FG_MAX];
    char *src = NULL, label[96];
    unsigned smem = 0;
    assert_true(c->n_params <= FG_MAX);
    fg_param_offsets(c, sz, off);
    if (fg_rows_source(kd, sz, off, &src, &smem) != RNNC_OK)
        fail_msg("%s rows: %s", name, rnnc_last_error());
    assert_true(smem > 0 && strstr(src, "rnnc_row_cell(") != NULL);
    snprintf(label, sizeof label, "%s_rows", name);
    if (rt_nvrtc_available())
        compile_clean(src, label);
    free(src);
}

static bool standard(const char *name)
{
    return !strcmp(name, "lstm") || !strcmp(name, "gru") || !strcmp(name, "rnn_tanh") ||
           !strcmp(name, "rnn_relu");
}

static void test_builtins(void **st)
{
    (void)st;
    static const ir_sizes sizes[] = {{5, 8, 8}, {512, 512, 512}};
    static const int64_t batch[] = {3, 64};
    const char *const *names = rnnc_cell_builtin_names();
    for (int i = 0; names[i]; i++)
        for (int k = 0; k < 2; k++) {
            rnnc_cell *c = NULL;
            assert_ok(rnnc_cell_builtin(&c, names[i], NULL));
            assert_ok(ir_optimise(c, false));
            ir_arena *a = ir_arena_create();
            fg_kind kd;
            memset(&kd, 0, sizeof kd);
            rnnc_status s = fg_kind_build(c, sizes[k], a, &kd);
            if (s != RNNC_OK) {
                printf("%-16s fused backward: %s\n", names[i], rnnc_last_error());
                assert_int_equal(s, RNNC_ERR_UNSUPPORTED);
                assert_false(standard(names[i]));
            } else {
                char label[96];
                snprintf(label, sizeof label, "%s_rec_%d", names[i], k);
                generate(&kd.rec_sched, sizes[k], batch[k], label, k == 1);
                snprintf(label, sizeof label, "%s_bwd_%d", names[i], k);
                generate(&kd.bwd_sched, sizes[k], batch[k], label, k == 1);
                printf("%-16s fused backward: record %lld cols, G %lld, DG %lld, %d post ops\n",
                       names[i], (long long)kd.rec_cols, (long long)kd.g_cols,
                       (long long)kd.dg_cols, kd.n_ops);
            }
            fg_kind_free(&kd);
            ir_arena_destroy(a);
            rnnc_cell_destroy(c);
        }
}

/* Cells with dropout ops of their own (tests/data/cells/): the record
 * cell draws the forward's masks, the recurrence cell the same masks again
 * (its dropout ops keep their sites); both generate at two shapes, draw
 * masks, and compile at the larger.  A dropout of the input (xdrop) is
 * the runtime's and the post ops' instead. */
static void test_dropout_cells(void **st)
{
    (void)st;
    static const char *const names[] = {"semd", "hdrop", "lnd", "xdrop"};
    static const ir_sizes sizes[] = {{5, 8, 8}, {256, 512, 512}};
    static const int64_t batch[] = {3, 64};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        for (int k = 0; k < 2; k++) {
            rnnc_cell *c = tu_data_cell(names[i]);
            assert_ok(ir_optimise(c, false));
            ir_arena *a = ir_arena_create();
            fg_kind kd;
            memset(&kd, 0, sizeof kd);
            if (fg_kind_build(c, sizes[k], a, &kd) != RNNC_OK)
                fail_msg("%s: %s", names[i], rnnc_last_error());
            char label[96];
            /* xdrop: the kernels read x dropped by the runtime (nothing drawn
             * in them); dW_ih reads x dropped the same way and dx goes back
             * through the mask (post ops) */
            bool xd = !strcmp(names[i], "xdrop"), outer_xd = false, lint_drop = false;
            snprintf(label, sizeof label, "%s_rec_%d", names[i], k);
            assert_true(generate(&kd.rec_sched, sizes[k], batch[k], label, k == 1) == !xd);
            snprintf(label, sizeof label, "%s_bwd_%d", names[i], k);
            assert_true(generate(&kd.bwd_sched, sizes[k], batch[k], label, k == 1) == !xd);
            assert_int_equal(kd.x_site, xd ? 0 : -1);
            for (int j = 0; j < kd.n_ops; j++) {
                outer_xd |= kd.op[j].kind == FG_OUTER && kd.op[j].b.where == FG_XD;
                lint_drop |= kd.op[j].kind == FG_LINT && kd.op[j].drop;
            }
            assert_true(outer_xd == xd && lint_drop == xd);
            fg_kind_free(&kd);
            ir_arena_destroy(a);
            rnnc_cell_destroy(c);
        }
}

/* Cells whose hoisted linears read something other than x (test_cuda_rounds):
 * the fused backward either builds them (the record and recurrence kernels,
 * and a row cell's, generate and compile) or refuses them naming why. */
static void test_round_cells(void **st)
{
    (void)st;
    static const char *const names[] = {"preln", "chain", "twice"};
    ir_sizes sz = {256, 512, 512};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        rnnc_cell *c = tu_data_cell(names[i]);
        assert_ok(ir_optimise(c, false));
        ir_arena *a = ir_arena_create();
        fg_kind kd;
        memset(&kd, 0, sizeof kd);
        rnnc_status s = fg_kind_build(c, sz, a, &kd);
        if (s != RNNC_OK) {
            printf("%-8s fused backward: %s\n", names[i], rnnc_last_error());
            assert_int_equal(s, RNNC_ERR_UNSUPPORTED);
        } else {
            char label[96];
            printf("%-8s fused backward: builds%s\n", names[i], kd.row ? ", a row cell" : "");
            snprintf(label, sizeof label, "%s_rec", names[i]);
            generate(&kd.rec_sched, sz, 64, label, true);
            snprintf(label, sizeof label, "%s_bwd", names[i]);
            generate(&kd.bwd_sched, sz, 64, label, true);
            if (kd.row)
                compile_rows(c, sz, &kd, names[i]);
        }
        fg_kind_free(&kd); /* what a refused build made too */
        ir_arena_destroy(a);
        rnnc_cell_destroy(c);
    }
}

/* preln (layernorm(x) before W_ih): the record leaves layernorm(x) out (the
 * row cell makes it again from x); one post GEMM makes D = gates' W_ih for
 * the row cell, whose output R holds layernorm(x) (dW_ih's right operand),
 * D * xhat (d ln_g's rows) and dx; d ln_b is D's column sums. */
static void test_preln_split(void **st)
{
    (void)st;
    rnnc_cell *c = tu_data_cell("preln");
    assert_ok(ir_optimise(c, false));
    ir_arena *a = ir_arena_create();
    fg_kind kd;
    ir_sizes sz = {6, 4, 4};
    assert_ok(fg_kind_build(c, sz, a, &kd));
    assert_non_null(kd.row);
    assert_int_equal(kd.rec_cols, 4 + 4 + 4 + 16); /* y, h, c, gates: no I-wide value */
    assert_int_equal(kd.d_cols, 6);
    assert_int_equal(kd.n_row, 3);
    assert_int_equal(kd.row_cols, 18);
    int products = 0, rowdx = 0, lint_dx = 0, r_ops = 0, d_ops = 0;
    for (int j = 0; j < kd.n_ops; j++) {
        const fg_op *op = &kd.op[j];
        products += op->kind == FG_LINT && op->d_off == 0 && op->a.where == FG_DG;
        lint_dx += op->kind == FG_LINT && op->d_off < 0;
        rowdx += op->kind == FG_ROWDX && op->a.where == FG_R && op->a.cols == 6;
        r_ops += op->kind != FG_ROWDX && (op->a.where == FG_R || op->b.where == FG_R);
        d_ops += op->kind == FG_ROWSUM && op->a.where == FG_D;
    }
    assert_int_equal(products, 1);
    assert_int_equal(lint_dx, 0);
    assert_int_equal(rowdx, 1);
    assert_int_equal(r_ops, 2); /* dW_ih's layernorm(x), d ln_g's rows */
    assert_int_equal(d_ops, 1); /* d ln_b */
    fg_kind_free(&kd);
    ir_arena_destroy(a);
    rnnc_cell_destroy(c);
}

/* LSTM: the record keeps y, h, c and the 4H gate pre-activations; the
 * recurrence cell exports the 4H gate gradients; dW_ih, dW_hh, both biases
 * and dx are five post ops. */
static void test_lstm_split(void **st)
{
    (void)st;
    rnnc_cell *c = NULL;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    assert_ok(ir_optimise(c, false));
    ir_arena *a = ir_arena_create();
    fg_kind kd;
    ir_sizes sz = {3, 4, 4};
    assert_ok(fg_kind_build(c, sz, a, &kd));
    assert_int_equal(kd.rec_cols, 4 * 7);
    assert_int_equal(kd.dg_cols, 4 * 4);
    assert_int_equal(kd.n_ops, 5);
    assert_int_equal(kd.n_t, 1); /* W_hh^T only: dx's W_ih is a post op */
    assert_int_equal(kd.bwd->n_params, c->n_params + 1);
    int outer = 0, rowsum = 0, lint = 0;
    for (int i = 0; i < kd.n_ops; i++) {
        outer += kd.op[i].kind == FG_OUTER;
        rowsum += kd.op[i].kind == FG_ROWSUM;
        lint += kd.op[i].kind == FG_LINT;
        if (kd.op[i].kind != FG_LINT)
            assert_int_equal(kd.op[i].a.where, FG_DG);
    }
    assert_int_equal(outer, 2);
    assert_int_equal(rowsum, 2);
    assert_int_equal(lint, 1);
    fg_kind_free(&kd);
    ir_arena_destroy(a);
    rnnc_cell_destroy(c);
}

/* LSTM with a projection (proj_size P < H): the recurrence reads bin's P-
 * and H-wide pieces as slices (the generator's slices gcd(H, P) wide) and
 * multiplies by W_hr^T, then W_hh^T, in a step; both kernels generate at
 * each shape (P dividing H, and P = 3H/4) and compile at the larger ones.
 * The record keeps y and h (P wide), c and the gates (5H); dx and the
 * five weights' gradients are six post ops. */
static void test_projection(void **st)
{
    (void)st;
    static const ir_sizes sizes[] = {{5, 8, 4}, {24, 32, 24}, {512, 512, 256}, {256, 1024, 768}};
    static const int64_t batch[] = {3, 5, 64, 64};
    for (int k = 0; k < 4; k++) {
        rnnc_cell *c = NULL;
        assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
        assert_ok(ir_optimise(c, true));
        ir_arena *a = ir_arena_create();
        fg_kind kd;
        memset(&kd, 0, sizeof kd);
        if (fg_kind_build(c, sizes[k], a, &kd) != RNNC_OK)
            fail_msg("lstm H=%lld P=%lld: %s", (long long)sizes[k].H, (long long)sizes[k].P,
                     rnnc_last_error());
        int64_t H = sizes[k].H, P = sizes[k].P;
        assert_int_equal(kd.rec_cols, 2 * P + 5 * H);
        assert_int_equal(kd.n_ops, 6);
        assert_int_equal(kd.n_t, 2); /* W_hh^T and W_hr^T */
        char label[96];
        snprintf(label, sizeof label, "lstm_proj_rec_%d", k);
        generate(&kd.rec_sched, sizes[k], batch[k], label, k >= 2);
        snprintf(label, sizeof label, "lstm_proj_bwd_%d", k);
        generate(&kd.bwd_sched, sizes[k], batch[k], label, k >= 2);
        printf("lstm I=%lld H=%lld P=%lld: record %lld cols, G %lld, DG %lld, %d post ops\n",
               (long long)sizes[k].I, (long long)H, (long long)P, (long long)kd.rec_cols,
               (long long)kd.g_cols, (long long)kd.dg_cols, kd.n_ops);
        fg_kind_free(&kd);
        ir_arena_destroy(a);
        rnnc_cell_destroy(c);
    }
}

/* Batches no one-pass tiling fits (B x H over about 2M): the backward
 * step's values that cross its phases are all of a block's batch group,
 * so they are kept in global memory and the recurrence takes its rows in
 * passes (codegen/cuda/cuda_passes.c); both kernels generate for every
 * cell that builds, and the LSTM's backward compiles. */
static void test_huge_batches(void **st)
{
    (void)st;
    static const struct {
        const char *cell;
        int64_t H, B;
    } cases[] = {{"lstm", 1024, 2048}, {"gru", 1024, 2048},       {"rnn_tanh", 2048, 4096},
                 {"lstm", 64, 32768},  {"layernorm_lstm", 128, 16384}, {"peephole_lstm", 1024, 2048}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rnnc_cell *c = NULL;
        assert_ok(rnnc_cell_builtin(&c, cases[i].cell, NULL));
        assert_ok(ir_optimise(c, false));
        ir_arena *a = ir_arena_create();
        fg_kind kd;
        memset(&kd, 0, sizeof kd);
        ir_sizes sz = {cases[i].H, cases[i].H, cases[i].H};
        assert_ok(fg_kind_build(c, sz, a, &kd));
        char label[96];
        snprintf(label, sizeof label, "%s_rec_B%lld", cases[i].cell, (long long)cases[i].B);
        generate(&kd.rec_sched, sz, cases[i].B, label, false);
        snprintf(label, sizeof label, "%s_bwd_B%lld", cases[i].cell, (long long)cases[i].B);
        generate(&kd.bwd_sched, sz, cases[i].B, label, i == 0);
        /* what AUTO asks before it gives such a training call to cuDNN */
        cg_cuda_config cfg = {.sizes = sz, .batch = cases[i].B, .sm = 90, .sm_count = 132};
        assert_true(cg_cuda_takes_passes(&kd.bwd_sched, &cfg));
        cfg.batch = 64;
        assert_false(cg_cuda_takes_passes(&kd.bwd_sched, &cfg));
        fg_kind_free(&kd);
        ir_arena_destroy(a);
        rnnc_cell_destroy(c);
    }
}

static void test_util_kernels_compile(void **st)
{
    (void)st;
    if (!rt_nvrtc_available())
        skip();
    compile_clean(fg_util_src, "fused_grad_util");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lstm_split),
        cmocka_unit_test(test_builtins),
        cmocka_unit_test(test_projection),
        cmocka_unit_test(test_dropout_cells),
        cmocka_unit_test(test_round_cells),
        cmocka_unit_test(test_preln_split),
        cmocka_unit_test(test_huge_batches),
        cmocka_unit_test(test_util_kernels_compile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
