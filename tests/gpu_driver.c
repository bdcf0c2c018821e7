/*
 * gpu_driver.c: the driver layer on a real GPU: the primary context, a
 * cooperative launch whose result depends on the grid barrier, the
 * co-residency check, dynamic shared memory above 48 KiB, and the kernel
 * cache's levels (compile -> disk -> memory, a memory hit under 50 us), and
 * a bundle used by a second process that has no NVRTC.  Exits 77 with no GPU.
 *   gpu_driver --bundle PATH   (the child: NVRTC hidden by the parent)
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/cache/cache.h"

#ifndef RT_HAVE_CUDA_H
int main(void)
{
    fprintf(stderr, "built without CUDA headers: skipped\n");
    return TU_SKIP;
}
#else

/* Each element is doubled, then (after the grid barrier) read by the
 * previous thread of the whole grid: wrong without a real grid-wide sync. */
static const char k_coop_src[] =
    "#include <cooperative_groups.h>\n"
    "namespace cg = cooperative_groups;\n"
    "extern \"C\" __global__ void shift_twice(float *x, float *y, int n)\n"
    "{\n"
    "    cg::grid_group grid = cg::this_grid();\n"
    "    int i = (int)grid.thread_rank();\n"
    "    float v = x[i] * 2.0f;\n"
    "    x[i] = v;\n"
    "    grid.sync();\n"
    "    y[i] = x[(i + 1) % n];\n"
    "}\n"
    "extern \"C\" __global__ void reverse_smem(const float *x, float *y, int n)\n"
    "{\n"
    "    extern __shared__ float buf[];\n"
    "    for (int j = threadIdx.x; j < n; j += blockDim.x)\n"
    "        buf[j] = x[j];\n"
    "    __syncthreads();\n"
    "    for (int j = threadIdx.x; j < n; j += blockDim.x)\n"
    "        y[j] = buf[n - 1 - j];\n"
    "}\n";
static const char *const k_names[] = {"shift_twice", "reverse_smem"};
static uint64_t g_rng;

static rt_kernel_req make_req(void)
{
    rt_kernel_req r = {.source = k_coop_src, .name = "gpu_driver", .kernels = k_names,
                       .n_kernels = 2};
    return r;
}

static void test_primary_context(void **state)
{
    (void)state;
    const rt_cuda_api *cu = rt_cu();
    assert_ok(rt_cuda_context(0));
    CUcontext cur = NULL, primary = NULL;
    CUdevice dev;
    assert_int_equal(cu->CtxGetCurrent(&cur), CUDA_SUCCESS);
    assert_int_equal(cu->DeviceGet(&dev, 0), CUDA_SUCCESS);
    assert_int_equal(cu->DevicePrimaryCtxRetain(&primary, dev), CUDA_SUCCESS);
    assert_ptr_equal(cur, primary);
    cu->DevicePrimaryCtxRelease(dev);
    char desc[512];
    int sm = 0;
    assert_ok(rt_cuda_describe(0, desc, sizeof desc));
    assert_ok(rt_cuda_arch(0, &sm));
    assert_true(sm >= 60);
    fprintf(stderr, "device 0: %s\n", desc);
    assert_status(rt_cuda_context(rt_cuda_device_count()), RNNC_ERR_INVALID_ARG);
}

static void test_levels(void **state)
{
    (void)state;
    rt_kernel_req r = make_req();
    rt_kernel k;
    rt_kernel_cache_clear();
    assert_ok(rt_kernel_get(&r, 0, &k));
    assert_int_equal(k.origin, RT_FROM_COMPILE);
    assert_int_equal(k.n, 2);
    rt_kernel_cache_clear();
    assert_ok(rt_kernel_get(&r, 0, &k));
    assert_int_equal(k.origin, RT_FROM_DISK);
    assert_ok(rt_kernel_get(&r, 0, &k));
    assert_int_equal(k.origin, RT_FROM_MEMORY);
    double t0 = cm_now_ms();
    for (int i = 0; i < 1000; i++)
        assert_ok(rt_kernel_get(&r, 0, &k));
    double us = (cm_now_ms() - t0); /* ms for 1000 = us each */
    fprintf(stderr, "memory hit: %.2f us\n", us);
    assert_true(us < 50.0);
    const char *missing[] = {"no_such_kernel"};
    r.kernels = missing;
    r.n_kernels = 1;
    assert_status(rt_kernel_get(&r, 0, &k), RNNC_ERR_CUDA);
    assert_non_null(strstr(rnnc_last_error(), "no_such_kernel"));
}

static void test_cooperative(void **state)
{
    (void)state;
    rt_kernel_req r = make_req();
    rt_kernel k;
    assert_ok(rt_kernel_get(&r, 0, &k));
    unsigned threads = 256;
    int can = 0;
    assert_ok(rt_max_resident_blocks(k.fn[0], threads, 0, &can));
    assert_true(can > 0);
    int n = can * (int)threads;
    size_t bytes = sizeof(float) * (size_t)n;
    float *x = malloc(bytes), *y = malloc(bytes);
    tu_fill_f32(x, (size_t)n, &g_rng, -2, 2);
    tu_poison_f32(y, (size_t)n);
    CUdeviceptr dx = 0, dy = 0;
    assert_ok(rt_dev_alloc(&dx, bytes));
    assert_ok(rt_dev_alloc(&dy, bytes));
    assert_ok(rt_dev_upload(dx, x, bytes, NULL));
    assert_ok(rt_dev_upload(dy, y, bytes, NULL));
    void *args[] = {&dx, &dy, &n};
    unsigned grid[3] = {(unsigned)can, 1, 1}, block[3] = {threads, 1, 1};
    assert_ok(rt_launch(k.fn[0], grid, block, 0, NULL, args, true));
    assert_ok(rt_dev_download(y, dy, bytes, NULL));
    assert_ok(rt_dev_sync(NULL));
    double *ref = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++)
        ref[i] = 2.0 * x[(i + 1) % n];
    assert_true(tu_rel_err_f32(y, ref, (size_t)n) <= 1e-6);
    grid[0] = (unsigned)can + 1;
    assert_status(rt_launch(k.fn[0], grid, block, 0, NULL, args, true), RNNC_ERR_UNSUPPORTED);
    assert_non_null(strstr(rnnc_last_error(), "resident"));
    rt_dev_free(dx);
    rt_dev_free(dy);
    free(x);
    free(y);
    free(ref);
}

static void test_large_shared_memory(void **state)
{
    (void)state;
    rt_kernel_req r = make_req();
    rt_kernel k;
    assert_ok(rt_kernel_get(&r, 0, &k));
    int n = 24 * 1024; /* 96 KiB of floats: past the 48 KiB default */
    size_t bytes = sizeof(float) * (size_t)n;
    float *x = malloc(bytes), *y = malloc(bytes);
    double *ref = malloc(sizeof(double) * (size_t)n);
    tu_fill_f32(x, (size_t)n, &g_rng, -1, 1);
    tu_poison_f32(y, (size_t)n);
    for (int i = 0; i < n; i++)
        ref[i] = x[n - 1 - i];
    CUdeviceptr dx = 0, dy = 0;
    assert_ok(rt_dev_alloc(&dx, bytes));
    assert_ok(rt_dev_alloc(&dy, bytes));
    assert_ok(rt_dev_upload(dx, x, bytes, NULL));
    assert_ok(rt_dev_upload(dy, y, bytes, NULL));
    void *args[] = {&dx, &dy, &n};
    unsigned grid[3] = {1, 1, 1}, block[3] = {256, 1, 1};
    assert_ok(rt_launch(k.fn[1], grid, block, (unsigned)bytes, NULL, args, false));
    assert_ok(rt_dev_download(y, dy, bytes, NULL));
    assert_ok(rt_dev_sync(NULL));
    assert_true(tu_rel_err_f32(y, ref, (size_t)n) == 0.0);
    rt_dev_free(dx);
    rt_dev_free(dy);
    free(x);
    free(y);
    free(ref);
}

/* Runs shift_twice from the bundle and checks it; 0 when all is right. */
static int bundle_child(const char *path)
{
    if (rt_nvrtc_available()) {
        fprintf(stderr, "child: NVRTC should be hidden\n");
        return 1;
    }
    rt_bundle *b = NULL;
    rt_kernel_req r = make_req();
    rt_kernel k;
    if (rt_bundle_load(&b, path) != RNNC_OK || rt_bundle_register(b) != RNNC_OK ||
        rt_kernel_get(&r, 0, &k) != RNNC_OK || k.origin != RT_FROM_BUNDLE) {
        fprintf(stderr, "child: %s\n", rnnc_last_error());
        return 2;
    }
    int n = 256, one = 1;
    float x[256], y[256];
    for (int i = 0; i < n; i++)
        x[i] = (float)(i % 17) - 8.0f;
    CUdeviceptr dx = 0, dy = 0;
    void *args[] = {&dx, &dy, &n};
    unsigned grid[3] = {1, 1, 1}, block[3] = {256, 1, 1};
    if (rt_dev_alloc(&dx, sizeof x) || rt_dev_alloc(&dy, sizeof y) ||
        rt_dev_upload(dx, x, sizeof x, NULL) || rt_launch(k.fn[0], grid, block, 0, NULL, args, true) ||
        rt_dev_download(y, dy, sizeof y, NULL) || rt_dev_sync(NULL))
        return 3;
    for (int i = 0; i < n; i++)
        if (y[i] != 2.0f * x[(i + one) % n])
            return 4;
    r.tuning = "not in the bundle"; /* must fail, and say why */
    if (rt_kernel_get(&r, 0, &k) != RNNC_ERR_NO_DEVICE || !strstr(rnnc_last_error(), "NVRTC"))
        return 5;
    rt_dev_free(dx);
    rt_dev_free(dy);
    rt_bundle_destroy(b);
    return 0;
}

static char g_self[4096];

static void test_bundle_without_nvrtc(void **state)
{
    (void)state;
    rt_kernel_req r = make_req();
    assert_ok(rt_cuda_arch(0, &r.sm));
    void *cubin = NULL;
    size_t size = 0;
    rt_origin o;
    rt_bundle *b = NULL;
    assert_ok(rt_cubin_get(&r, &cubin, &size, &o));
    assert_ok(rt_bundle_create(&b));
    assert_ok(rt_bundle_add(b, &r, cubin, size));
    char path[4200];
    snprintf(path, sizeof path, "%s/driver.rnncpkg", tu_cache_dir());
    assert_ok(rt_bundle_save(b, path));
    rt_bundle_destroy(b);
    free(cubin);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("RNNC_NVRTC_PATH", "/nonexistent/libnvrtc.so", 1);
        setenv("RNNC_CACHE", "0", 1);
        execl(g_self, g_self, "--bundle", path, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--bundle") == 0)
        return bundle_child(argv[2]);
    ssize_t len = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (len <= 0)
        return 1;
    g_self[len] = '\0';
    if (!rt_cuda_available()) {
        rt_cuda_load();
        fprintf(stderr, "no usable GPU (%s): skipped\n", rnnc_last_error());
        return TU_SKIP;
    }
    g_rng = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_primary_context),
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_cooperative),
        cmocka_unit_test(test_large_shared_memory),
        cmocka_unit_test(test_bundle_without_nvrtc),
    };
    /* a fresh disk cache, so the first get must compile */
    int rc = cmocka_run_group_tests(tests, tu_cache_dir_setup, tu_cache_dir_teardown);
    rt_kernel_cache_clear();
    return rc;
}
#endif /* RT_HAVE_CUDA_H */
