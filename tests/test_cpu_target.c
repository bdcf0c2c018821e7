/*
 * test_cpu_target.c: the cpu backend's targets (runtime/cpu/cpu_target.c):
 * native and the x86-64 levels described, unknown names refused, a
 * target's text read back as it was written, and the rule that decides
 * whether a bundle's code runs here: the same triple and every feature the
 * code may use among the host's.
 */
#include "testutil.h"

#include <string.h>

#include "runtime/cpu/cpu.h"

static rt_cpu_target make(const char *triple, const char *features, int vw)
{
    rt_cpu_target t = {.name = "t", .cpu = "c", .vw = vw};
    snprintf(t.triple, sizeof t.triple, "%s", triple);
    snprintf(t.features, sizeof t.features, "%s", features);
    return t;
}

static void test_runs_here(void **state)
{
    (void)state;
    rt_cpu_target host = make("x86_64-pc-linux-gnu", "+sse2,-avx512f,+avx2,+avx,+fma", 8);
    rt_cpu_target t = make("x86_64-pc-linux-gnu", "+avx,+avx2", 8);
    assert_true(rt_cpu_target_runs_here(&t, &host));
    t = make("x86_64-pc-linux-gnu", "+avx,+avx512f", 16); /* host says -avx512f */
    assert_false(rt_cpu_target_runs_here(&t, &host));
    t = make("x86_64-pc-linux-gnu", "+av", 4); /* a prefix of a feature is not it */
    assert_false(rt_cpu_target_runs_here(&t, &host));
    t = make("x86_64-pc-linux-gnu", "+fma,-sse4a", 8); /* what code may not use: no matter */
    assert_true(rt_cpu_target_runs_here(&t, &host));
    t = make("aarch64-unknown-linux-gnu", "+neon", 4);
    assert_false(rt_cpu_target_runs_here(&t, &host));
    assert_true(rt_cpu_target_runs_here(&host, &host));
}

static void test_named(void **state)
{
    (void)state;
    rt_cpu_target native, t, back;
    assert_ok(rt_cpu_target_get("native", &native));
    assert_string_equal(native.name, "native");
    assert_true(native.vw == 4 || native.vw == 8 || native.vw == 16);
    assert_true(rt_cpu_target_runs_here(&native, &native));
    char text[RT_CPU_TARGET_TEXT_MAX];
    rt_cpu_target_text(&native, text, sizeof text);
    assert_true(rt_cpu_target_parse(text, &back));
    assert_string_equal(back.name, native.name);
    assert_string_equal(back.triple, native.triple);
    assert_string_equal(back.cpu, native.cpu);
    assert_string_equal(back.features, native.features);
    assert_int_equal(back.vw, native.vw);
    assert_status(rt_cpu_target_get("pentium", &t), RNNC_ERR_INVALID_ARG);
    assert_non_null(strstr(rnnc_last_error(), "unknown cpu target 'pentium'"));
    assert_false(rt_cpu_target_parse("x86-64-v3 8 x86_64-pc-linux-gnu", &back));
    assert_false(rt_cpu_target_parse("x86-64-v3 7 a b +c", &back));
    assert_false(rt_cpu_target_parse("x86-64-v3 8 a b +c extra", &back));
    if (strncmp(native.triple, "x86_64-", 7) != 0) {
        assert_status(rt_cpu_target_get("x86-64-v2", &t), RNNC_ERR_UNSUPPORTED);
        return;
    }
    const char *levels[] = {"x86-64-v2", "x86-64-v3", "x86-64-v4"};
    const int widths[] = {4, 8, 16};
    for (int i = 0; i < 3; i++) {
        assert_ok(rt_cpu_target_get(levels[i], &t));
        assert_string_equal(t.name, levels[i]);
        assert_string_equal(t.cpu, levels[i]);
        assert_string_equal(t.triple, native.triple);
        assert_int_equal(t.vw, widths[i]);
    }
    /* every x86-64 CPU LLVM describes has v2's features (all since 2009) */
    assert_ok(rt_cpu_target_get("x86-64-v2", &t));
    assert_true(rt_cpu_target_runs_here(&t, &native));
    /* a level runs here exactly when the host's own vectors are as wide */
    assert_ok(rt_cpu_target_get("x86-64-v4", &t));
    assert_int_equal(rt_cpu_target_runs_here(&t, &native),
                     strstr(native.features, "+avx512f") != NULL &&
                         strstr(native.features, "+avx512vl") != NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_here),
        cmocka_unit_test(test_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
