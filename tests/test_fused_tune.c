/* test_fused_tune.c: what autotuning decides without a GPU: the candidate
 * list (heuristic first, no repeats, valid values, several real tilings),
 * the tuning text and keys, and the order of lookups (RNNC_FUSED_TILE, a
 * loaded bundle, the tuning record, RNNC_AUTOTUNE=0, the heuristic when
 * nothing can be timed), and that the choice reaches the generated kernels. */
#define _GNU_SOURCE
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "runtime/fused/fused.h"


/* An interpreter model gives the spec a fused model of the same desc gets. */
static rnnc_model *model(const char *cell_name, int64_t I, int64_t H, rnnc_hoist hoist)
{
    rnnc_cell *cell = NULL;
    rnnc_model *m = NULL;
    rnnc_model_desc d;
    assert_ok(rnnc_cell_builtin(&cell, cell_name, NULL));
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = I;
    d.hidden_size = H;
    d.hoist = hoist;
    d.backend = RNNC_BACKEND_INTERP;
    assert_ok(rnnc_model_create(&m, &d));
    rnnc_cell_destroy(cell);
    return m;
}

static rt_fused *fused(const rnnc_model *mod, int sm, int sms)
{
    rt_fused *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_ok(rt_fused_init(f, &mod->spec, sm, sms));
    return f;
}

static bool same(rt_fused_tuning a, rt_fused_tuning b)
{
    return a.unit_tile == b.unit_tile && a.batch_tile == b.batch_tile &&
           a.threads == b.threads && a.reg_rows == b.reg_rows && a.reg_batch == b.reg_batch &&
           a.exchange == b.exchange && a.outer == b.outer;
}

static void test_candidates(void **state)
{
    (void)state;
    rt_fused_tuning c[20];
    int n = rt_fused_candidates(64, 512, 132, false, c, 16);
    assert_true(n >= 8 && n <= 16);
    assert_true(same(c[0], (rt_fused_tuning){0, 0, 0, 0, 0, 0, 0}));
    bool bt8 = false, bt32 = false, wide = false, regs = false;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++)
            assert_false(same(c[i], c[j]));
        assert_true(c[i].threads == 0 || c[i].threads == 128 || c[i].threads >= 512);
        assert_true(c[i].threads <= 1024);
        assert_true(c[i].unit_tile >= 0 && c[i].unit_tile < 512 && c[i].batch_tile >= 0);
        bt8 |= c[i].batch_tile == 8;
        bt32 |= c[i].batch_tile == 32;
        wide |= c[i].unit_tile > 0;
        regs |= c[i].reg_rows == 8 && c[i].reg_batch >= 4;
        assert_int_equal(c[i].exchange, 0); /* fp32: the barrier's bytes are half the words' */
    }
    assert_true(bt8 && bt32 && wide && regs);
    /* a half model also tries each tiling with tagged words, right after it */
    rt_fused_tuning h[40];
    int nh = rt_fused_candidates(64, 512, 132, true, h, 40), tagged = 0;
    for (int i = 0; i < nh; i++) {
        if (h[i].exchange == 0)
            continue;
        assert_int_equal(h[i].exchange, 2);
        rt_fused_tuning b = h[i];
        b.exchange = 0;
        bool paired = false;
        for (int j = 0; j < i; j++)
            paired |= same(h[j], b);
        assert_true(paired && same(h[i - 1], b));
        tagged++;
    }
    assert_int_equal(tagged * 2, nh);
    /* H >= 1024 also streams W_hh with 8 x 8 tiles at 256 threads */
    n = rt_fused_candidates(64, 1024, 132, false, c, 20);
    bool s16 = false, s32 = false;
    for (int i = 0; i < n; i++) {
        rt_fused_tuning t = c[i];
        bool r88 = t.threads == 256 && t.reg_rows == 8 && t.reg_batch == 8 && t.unit_tile == 0;
        s16 |= r88 && t.batch_tile == 16;
        s32 |= r88 && t.batch_tile == 32;
    }
    assert_true(s16 && s32);
    /* B = 64: outer products only at 512 threads, after the plain register tiles */
    n = rt_fused_candidates(64, 512, 132, false, c, 20);
    int outer = 0;
    for (int i = 0; i < n; i++) {
        assert_false(c[i].threads == 256 && c[i].reg_batch == 8);
        assert_true(!c[i].outer || (c[i].threads == 512 && i > 3));
        outer += c[i].outer;
    }
    assert_int_equal(outer, 2);
    /* B >= 128: outer products right after the heuristic */
    n = rt_fused_candidates(256, 1024, 132, false, c, 20);
    assert_true(n >= 4 && same(c[1], (rt_fused_tuning){0, 0, 512, 8, 8, 0, 1}));
    /* max bounds the list; B=1 has no batch tiles to try */
    assert_int_equal(rt_fused_candidates(64, 512, 132, false, c, 3), 3);
    n = rt_fused_candidates(1, 512, 132, true, c, 20);
    assert_true(n >= 3);
    for (int i = 0; i < n; i++)
        assert_true(c[i].batch_tile <= 1 && c[i].reg_rows == 0 && c[i].reg_batch == 0 &&
                    c[i].exchange == 0); /* B <= 8 takes the tagged words anyway */
}

/* The candidates are real, different kernels: most generate, and the
 * ones that do give several distinct tilings. */
static void test_candidates_generate(void **state)
{
    (void)state;
    rnnc_model *mod = model("lstm", 512, 512, RNNC_HOIST_ALL);
    rt_fused *f = fused(mod, 90, 132);
    rt_fused_tuning c[20];
    int n = rt_fused_candidates(64, 512, 132, false, c, 20), ok = 0, distinct = 0;
    char seen[20][96];
    bool regs = false;
    for (int i = 0; i < n; i++) {
        cg_cuda_config cfg;
        rt_fused_config(f, 64, false, &cfg);
        rt_fused_tuning_apply(c[i], &cfg);
        char *src = NULL;
        cg_cuda_plan plan;
        rnnc_status s = cg_cuda_generate(&f->sched, &cfg, &src, &plan);
        if (s != RNNC_OK) {
            assert_int_equal(s, RNNC_ERR_UNSUPPORTED);
            continue;
        }
        ok++;
        assert_true(plan.n_launch > 0 && strstr(src, "__global__"));
        bool dup = false;
        for (int j = 0; j < distinct && !dup; j++)
            dup = strcmp(seen[j], plan.tuning) == 0;
        if (!dup)
            snprintf(seen[distinct++], sizeof seen[0], "%s", plan.tuning);
        regs |= strstr(plan.tuning, "rr=8 bb=4") != NULL;
        print_message("candidate ut=%d bt=%d nt=%d rr=%d bb=%d: %s\n", c[i].unit_tile,
                      c[i].batch_tile, c[i].threads, c[i].reg_rows, c[i].reg_batch,
                      plan.tuning);
        free(src);
    }
    assert_true(ok >= n / 2);
    assert_true(distinct >= 6 && regs);
    rt_fused_free(f);
    rnnc_model_destroy(mod);
}

static void test_tuning_text(void **state)
{
    (void)state;
    uint64_t seed = tu_seed();
    for (int i = 0; i < 50; i++) {
        int rr = i % 3 ? 1 << (int)tu_uniform(&seed, 0, 5) : 0;
        rt_fused_tuning t = {(int)tu_uniform(&seed, 0, 64), (int)tu_uniform(&seed, 0, 128),
                             32 * (int)tu_uniform(&seed, 0, 33), rr, rr ? 16 / rr : 0,
                             (int)tu_uniform(&seed, 0, 3), (int)tu_uniform(&seed, 0, 2)},
                        back = {-1, -1, -1, -1, -1, -1, -1};
        char text[64];
        rt_fused_tuning_text(t, text, sizeof text);
        assert_true(rt_fused_tuning_parse(text, &back));
        assert_true(same(t, back));
        back = (rt_fused_tuning){-1, -1, -1, -1, -1, -1, -1};
        assert_true(rt_fused_tuning_parse_loose(text, &back));
        assert_true(same(t, back));
    }
    static const char *const bad[] = {"", "ut=1 bt=2", "ut=-1 bt=0 nt=0", "ut=0 bt=0 nt=33",
                                      "ut=0 bt=0 nt=2048", "ut=0 bt=0 nt=0 x", "tile=16",
                                      "ut=0 bt=0 nt=0 rr=3 bb=4", "ut=0 bt=0 nt=0 rr=4",
                                      "ut=0 bt=0 nt=0 rr=32 bb=1", "ut=0 bt=0 nt=0 ex=0",
                                      "ut=0 bt=0 nt=0 ex=3", "ut=0 bt=0 nt=0 ex=2 rr=8 bb=4",
                                      "ut=0 bt=0 nt=0 ex=2 ", "ut=0 bt=0 nt=0 op=0",
                                      "ut=0 bt=0 nt=0 op=2", "ut=0 bt=0 nt=0 op=1 ex=2"};
    rt_fused_tuning t;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(rt_fused_tuning_parse(bad[i], &t));
    assert_false(rt_fused_tuning_parse(NULL, &t));
}

/* A person's tuning: fields left out are 0, any order; every strict text
 * is taken too. */
static void test_tuning_loose(void **state)
{
    (void)state;
    rt_fused_tuning t;
    assert_true(rt_fused_tuning_parse_loose("nt=512 op=1", &t));
    assert_true(same(t, (rt_fused_tuning){.threads = 512, .outer = 1}));
    assert_true(rt_fused_tuning_parse_loose("bb=8 rr=4 ex=2 bt=32 ut=16", &t));
    assert_true(same(t, (rt_fused_tuning){16, 32, 0, 4, 8, 2, 0}));
    assert_true(rt_fused_tuning_parse_loose("ut=8 bt=256 nt=384 rr=8 bb=8 op=1", &t));
    assert_true(same(t, (rt_fused_tuning){8, 256, 384, 8, 8, 0, 1}));
    static const char *const bad[] = {"", " ", "nt=512 ", " nt=512", "nt=512  op=1", "nt=500",
                                      "nt=2048", "rr=3", "bb=32", "ex=3", "op=2", "ut=-1",
                                      "nt=256 nt=512", "tile=16", "nt=", "nt=512,op=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(rt_fused_tuning_parse_loose(bad[i], &t));
    assert_false(rt_fused_tuning_parse_loose(NULL, &t));
}

static void test_keys(void **state)
{
    (void)state;
    rnnc_model *a = model("lstm", 24, 32, RNNC_HOIST_ALL), *b = model("gru", 24, 32, RNNC_HOIST_ALL),
               *c = model("lstm", 24, 32, RNNC_HOIST_NONE);
    rt_fused *fa = fused(a, 90, 132), *fa2 = fused(a, 90, 132), *fb = fused(b, 90, 132),
             *fc = fused(c, 90, 132), *f80 = fused(a, 80, 108);
    char ka[512], ka2[512], kb[512], kc[512], k80[512], kb1[512], model_a[512];
    rt_fused_shape_key(fa, 64, ka, sizeof ka);
    rt_fused_shape_key(fa2, 64, ka2, sizeof ka2);
    rt_fused_shape_key(fb, 64, kb, sizeof kb);
    rt_fused_shape_key(fc, 64, kc, sizeof kc);
    rt_fused_shape_key(f80, 64, k80, sizeof k80);
    rt_fused_shape_key(fa, 1, kb1, sizeof kb1);
    rt_fused_model_key(fa, model_a, sizeof model_a);
    assert_string_equal(ka, ka2);
    assert_non_null(strstr(ka, "I=24 H=32"));
    assert_non_null(strstr(ka, " sm_90 sms=132 B=64"));
    assert_non_null(strstr(k80, " sm_80 sms=108 B=64"));
    assert_int_equal(strncmp(ka, model_a, strlen(model_a)), 0);
    assert_int_equal(strncmp(k80, model_a, strlen(model_a)), 0);
    assert_string_not_equal(ka, kb);
    assert_string_not_equal(ka, kc);
    assert_string_not_equal(ka, kb1);
    assert_null(strchr(ka, '\n'));
    rt_fused *fs[] = {fa, fa2, fb, fc, f80};
    for (size_t i = 0; i < 5; i++)
        rt_fused_free(fs[i]);
    rnnc_model_destroy(a);
    rnnc_model_destroy(b);
    rnnc_model_destroy(c);
}

static rt_fused_tuning choose(rt_fused *f, int64_t batch, const char *want_from)
{
    rt_fused_tuning t = {-1, -1, -1, -1, -1, -1, -1};
    const char *from = NULL;
    rt_fused_choose(f, batch, &t, &from);
    assert_non_null(from);
    if (!strstr(from, want_from))
        fail_msg("tuning from '%s', want '%s'", from, want_from);
    return t;
}

static void test_lookup_order(void **state)
{
    (void)state;
    rnnc_model *mod = model("lstm", 24, 32, RNNC_HOIST_ALL);
    rt_fused *f = fused(mod, 90, 132);
    char key[512];
    rt_fused_shape_key(f, 8, key, sizeof key);
    /* not bound: nothing can be timed, so the heuristic, and no record */
    assert_true(same(choose(f, 8, "heuristic (no timing"), (rt_fused_tuning){0, 0, 0, 0, 0, 0, 0}));
    char text[64];
    assert_int_equal(rt_tuning_get(key, text, sizeof text), RNNC_ERR_NOT_FOUND);
    setenv("RNNC_AUTOTUNE", "0", 1);
    choose(f, 8, "RNNC_AUTOTUNE=0");
    /* a record wins over the heuristic, RNNC_AUTOTUNE=0 or not */
    assert_ok(rt_tuning_put(key, "ut=0 bt=4 nt=256"));
    assert_true(same(choose(f, 8, "tuning record"), (rt_fused_tuning){0, 4, 256, 0, 0, 0, 0}));
    unsetenv("RNNC_AUTOTUNE");
    choose(f, 1, "heuristic"); /* per batch size */
    /* a loaded bundle wins over the record */
    rt_bundle *b = NULL;
    assert_ok(rt_bundle_create(&b));
    assert_ok(rt_bundle_add_tuning(b, key, "ut=8 bt=0 nt=0"));
    assert_ok(rt_bundle_register(b));
    assert_true(same(choose(f, 8, "loaded bundle"), (rt_fused_tuning){8, 0, 0, 0, 0, 0, 0}));
    /* the environment wins over everything */
    setenv("RNNC_FUSED_TILE", "16,16,512", 1);
    assert_true(same(choose(f, 8, "RNNC_FUSED_TILE"), (rt_fused_tuning){16, 16, 512, 0, 0, 0, 0}));
    setenv("RNNC_FUSED_TILE", "0,0,0,8,4,2", 1); /* register tile and exchange */
    assert_true(same(choose(f, 8, "RNNC_FUSED_TILE"), (rt_fused_tuning){0, 0, 0, 8, 4, 2, 0}));
    setenv("RNNC_FUSED_TILE", "0,0,512,8,8,0,1", 1); /* outer products */
    assert_true(same(choose(f, 8, "RNNC_FUSED_TILE"), (rt_fused_tuning){0, 0, 512, 8, 8, 0, 1}));
    /* ... or as the log prints a tuning, any fields in any order */
    setenv("RNNC_FUSED_TILE", "op=1 nt=512 rr=8 bb=8", 1);
    assert_true(same(choose(f, 8, "RNNC_FUSED_TILE"), (rt_fused_tuning){0, 0, 512, 8, 8, 0, 1}));
    setenv("RNNC_FUSED_TILE", "nt=512 rr=7", 1); /* not a tuning: the bundle's again */
    assert_true(same(choose(f, 8, "loaded bundle"), (rt_fused_tuning){8, 0, 0, 0, 0, 0, 0}));
    unsetenv("RNNC_FUSED_TILE");
    rt_bundle_destroy(b); /* unregisters */
    /* the choice reaches the generated kernels */
    assert_ok(rt_fused_prepare(f, 8));
    assert_true(same(f->tuning, (rt_fused_tuning){0, 4, 256, 0, 0, 0, 0}));
    assert_non_null(strstr(f->tuning_from, "tuning record"));
    assert_non_null(strstr(f->plan.tuning, "bt=4 nt=256"));
    /* a damaged record is not trusted */
    assert_ok(rt_tuning_put(key, "ut=0 bt=4 nt=33"));
    choose(f, 8, "heuristic");
    rt_fused_free(f);
    rnnc_model_destroy(mod);
}

/* Two kernels at once on half the SMs, or one at a time on all of them, by
 * the multiply-adds of a step (rt_fused_share_at); the tuning key names the
 * model's sizing whatever the batch. */
static void test_share(void **state)
{
    (void)state;
    static const struct {
        const char *cell;
        int64_t H, batch;
        int layers;
        bool bi;
        rnnc_math math;
        rnnc_dtype dtype;
        int want;
    } cases[] = {
        {"lstm", 512, 64, 4, false, RNNC_MATH_FFMA, RNNC_F32, 2},  /* 1.0 M a step an SM of the half */
        {"lstm", 768, 64, 2, false, RNNC_MATH_FFMA, RNNC_F32, 1},  /* 2.3 M */
        {"lstm", 1024, 1, 2, false, RNNC_MATH_FFMA, RNNC_F32, 2},
        {"lstm", 1024, 64, 2, false, RNNC_MATH_FFMA, RNNC_F32, 1},
        {"lstm", 768, 64, 1, true, RNNC_MATH_FFMA, RNNC_F32, 2},   /* 2.3 M */
        {"gru", 1024, 64, 1, true, RNNC_MATH_FFMA, RNNC_F32, 2},   /* 3.1 M */
        {"lstm", 1024, 64, 1, true, RNNC_MATH_FFMA, RNNC_F32, 1},  /* 4.1 M */
        {"lstm", 1024, 1, 1, true, RNNC_MATH_FFMA, RNNC_F32, 2},
        {"lstm", 1024, 256, 1, true, RNNC_MATH_TF32, RNNC_F32, 2}, /* TF32: the model's */
        {"lstm", 1024, 64, 1, false, RNNC_MATH_FFMA, RNNC_F32, 1}, /* nothing to run beside */
        {"lstm", 1024, 64, 1, true, RNNC_MATH_FFMA, RNNC_BF16, 1}, /* 16-bit: as fp32 */
        {"lstm", 512, 64, 4, false, RNNC_MATH_FFMA, RNNC_BF16, 2},
        {"lstm", 512, 128, 2, false, RNNC_MATH_FFMA, RNNC_BF16, 2}, /* 2.0 M: 16-bit stacks */
        {"lstm", 512, 128, 2, false, RNNC_MATH_FFMA, RNNC_F16, 2},
        {"lstm", 512, 192, 2, false, RNNC_MATH_FFMA, RNNC_BF16, 1}, /* 3.0 M */
        {"lstm", 512, 128, 4, false, RNNC_MATH_FFMA, RNNC_F32, 1},  /* 2.0 M in fp32 */
        {"lstm", 512, 64, 2, false, RNNC_MATH_FFMA, RNNC_F32, 1},   /* fp32, two layers */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rnnc_cell *cell = NULL;
        rnnc_model *mod = NULL;
        rnnc_model_desc d;
        assert_ok(rnnc_cell_builtin(&cell, cases[i].cell, NULL));
        rnnc_model_desc_init(&d);
        d.cell = cell;
        d.input_size = d.hidden_size = cases[i].H;
        d.num_layers = cases[i].layers;
        d.bidirectional = cases[i].bi;
        d.math = cases[i].math;
        d.dtype = cases[i].dtype;
        d.backend = RNNC_BACKEND_INTERP;
        assert_ok(rnnc_model_create(&mod, &d));
        rt_fused *f = fused(mod, 90, 132);
        cg_cuda_config cfg;
        char key[512];
        rt_fused_config_kind(f, 0, cases[i].batch, false, &cfg);
        rt_fused_shape_key(f, cases[i].batch, key, sizeof key);
        if (rt_fused_share_at(f, cases[i].batch) != cases[i].want || cfg.sm_count != 132 / cases[i].want)
            fail_msg("case %zu: share %d on %d SMs, want %d", i, rt_fused_share_at(f, cases[i].batch),
                     cfg.sm_count, cases[i].want);
        assert_int_equal(strstr(key, " share=2") != NULL, cases[i].layers > 1 || cases[i].bi);
        rt_fused_set_share(f, cases[i].batch);
        assert_int_equal(f->share, cases[i].want);
        assert_int_equal(f->pdl, cases[i].want == 1);
        rt_fused_free(f);
        rnnc_model_destroy(mod);
        rnnc_cell_destroy(cell);
    }
}

int main(void)
{
    unsetenv("RNNC_FUSED_TILE");
    unsetenv("RNNC_AUTOTUNE");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_candidates),
        cmocka_unit_test(test_candidates_generate),
        cmocka_unit_test(test_tuning_text),
        cmocka_unit_test(test_tuning_loose),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_lookup_order),
        cmocka_unit_test(test_share),
    };
    /* fresh records and kernels: the group's own cache directory */
    return cmocka_run_group_tests(tests, tu_cache_dir_setup, tu_cache_dir_teardown);
}
