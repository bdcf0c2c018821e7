/* test_nvrtc.c: NVRTC through dlopen compiles CUDA C to CUBIN with no GPU;
 * errors come back as RNNC_ERR_NVRTC with the compiler's log. */
#define _GNU_SOURCE
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/device/device.h"

static const char k_grid_sync_src[] =
    "#include <cooperative_groups.h>\n"
    "namespace cg = cooperative_groups;\n"
    "extern \"C\" __global__ void twice_then_sum(float *x, float *total, int n)\n"
    "{\n"
    "    cg::grid_group grid = cg::this_grid();\n"
    "    int i = (int)grid.thread_rank();\n"
    "    if (i < n)\n"
    "        x[i] *= 2.0f;\n"
    "    grid.sync();\n"
    "    if (i == 0) {\n"
    "        float s = 0.0f;\n"
    "        for (int j = 0; j < n; j++)\n"
    "            s += x[j];\n"
    "        *total = s;\n"
    "    }\n"
    "}\n";

static void assert_is_cubin(const void *cubin, size_t size)
{
    assert_non_null(cubin);
    assert_true(size > 64);
    assert_memory_equal(cubin, "\x7f" "ELF", 4);
}

static void compile_for(int sm)
{
    void *cubin = NULL;
    size_t size = 0;
    assert_ok(rt_nvrtc_compile(k_grid_sync_src, "grid_sync.cu", sm, NULL, 0, &cubin, &size));
    assert_is_cubin(cubin, size);
    if (strstr(rt_nvrtc_last_log(), "warning"))
        fail_msg("sm_%d compile warned:\n%s", sm, rt_nvrtc_last_log());
    free(cubin);
}

static void test_grid_sync_sm80(void **state)
{
    (void)state;
    compile_for(80);
}

static void test_grid_sync_sm90(void **state)
{
    (void)state;
    compile_for(90);
}

static void test_syntax_error(void **state)
{
    (void)state;
    const char *bad = "extern \"C\" __global__ void broken(float *x)\n{\n    x[0] = ;\n}\n";
    void *cubin = (void *)0x1;
    size_t size = 7;
    assert_status(rt_nvrtc_compile(bad, "broken.cu", 90, NULL, 0, &cubin, &size),
                  RNNC_ERR_NVRTC);
    assert_ptr_equal(cubin, (void *)0x1); /* outputs untouched on failure */
    assert_int_equal(size, 7);
    const char *err = rnnc_last_error();
    assert_non_null(strstr(err, "broken.cu"));
    assert_non_null(strstr(err, "sm_90"));
    assert_non_null(strstr(err, "expected an expression"));
    assert_non_null(strstr(rt_nvrtc_last_log(), "broken.cu(3)"));
}

static void test_extra_options_reach_nvrtc(void **state)
{
    (void)state;
    /* The macro exists only if the option is passed: a real check that options arrive. */
    const char *src = "#ifndef RNNC_TEST_WIDTH\n#error no option\n#endif\n"
                      "extern \"C\" __global__ void k(float *x) { x[0] = RNNC_TEST_WIDTH; }\n";
    const char *opts[] = {"-DRNNC_TEST_WIDTH=3"};
    void *cubin = NULL;
    size_t size = 0;
    assert_ok(rt_nvrtc_compile(src, "opt.cu", 80, opts, 1, &cubin, &size));
    assert_is_cubin(cubin, size);
    free(cubin);
    assert_status(rt_nvrtc_compile(src, "opt.cu", 80, NULL, 0, &cubin, &size), RNNC_ERR_NVRTC);
    assert_non_null(strstr(rnnc_last_error(), "no option"));
}

static void test_warning_kept_in_log(void **state)
{
    (void)state;
    const char *src = "extern \"C\" __global__ void k(float *x) { int unused = 3; x[0] = 1; }\n";
    void *cubin = NULL;
    size_t size = 0;
    assert_ok(rt_nvrtc_compile(src, "warn.cu", 80, NULL, 0, &cubin, &size));
    free(cubin);
    assert_non_null(strstr(rt_nvrtc_last_log(), "warning"));
}

static void test_bad_arguments(void **state)
{
    (void)state;
    void *cubin = NULL;
    size_t size = 0;
    assert_status(rt_nvrtc_compile(k_grid_sync_src, "x.cu", 5, NULL, 0, &cubin, &size),
                  RNNC_ERR_INVALID_ARG);
    assert_status(rt_nvrtc_compile(NULL, "x.cu", 80, NULL, 0, &cubin, &size),
                  RNNC_ERR_INVALID_ARG);
    assert_status(rt_nvrtc_compile(k_grid_sync_src, "x.cu", 80, NULL, 2, &cubin, &size),
                  RNNC_ERR_INVALID_ARG);
}

static void test_version(void **state)
{
    (void)state;
    int major = 0, minor = -1;
    assert_ok(rt_nvrtc_version(&major, &minor));
    assert_true(major >= 11);
    assert_true(minor >= 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_grid_sync_sm80),
        cmocka_unit_test(test_grid_sync_sm90),
        cmocka_unit_test(test_syntax_error),
        cmocka_unit_test(test_extra_options_reach_nvrtc),
        cmocka_unit_test(test_warning_kept_in_log),
        cmocka_unit_test(test_bad_arguments),
    };
    if (!rt_nvrtc_available()) { /* a machine without the CUDA toolkit */
        fprintf(stderr, "NVRTC not available: NVRTC tests skipped\n");
        return TU_SKIP;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
