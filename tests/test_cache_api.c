/*
 * test_cache_api.c: the public view of the disk kernel cache,
 * rnnc_cache_info, rnnc_cache_list and rnnc_cache_clear, on a real cache:
 * a fresh RNNC_CACHE_DIR filled with entries NVRTC compiles (no GPU needed)
 * and an autotuning record, then a damaged entry, temp files a writer left,
 * the cache turned off, and NULL arguments.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cache/cache.h"

static const char k_src[] = "extern \"C\" __global__ void scale(float *x, float a, int n)\n"
                            "{\n"
                            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                            "    if (i < n)\n"
                            "        x[i] *= a;\n"
                            "}\n";
static const char *const k_names[] = {"scale"};

static char g_dir[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    char *d = tu_tmpdir();
    if (!d)
        return -1;
    snprintf(g_dir, sizeof g_dir, "%s", d);
    free(d);
    setenv("RNNC_CACHE_DIR", g_dir, 1);
    unsetenv("RNNC_CACHE");
    unsetenv("RNNC_CACHE_MAX_MB");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmtree(g_dir);
    return 0;
}

/* Compiles the kernel for sm (a cold compile: the entry is written) and
 * returns the entry's path. */
static void compile_entry(int sm, const char *tuning, char *path, size_t n)
{
    rt_kernel_req r = {.source = k_src, .name = "scale", .kernels = k_names, .n_kernels = 1,
                       .sm = sm, .tuning = tuning};
    void *cubin = NULL;
    size_t size = 0;
    rt_origin o;
    assert_ok(rt_cubin_get(&r, &cubin, &size, &o));
    assert_int_equal(o, RT_FROM_COMPILE);
    assert_true(size > 0);
    free(cubin);
    rt_cache_key k;
    assert_ok(rt_cache_key_of(&r, sm, &k));
    assert_true(rt_cache_entry_path(k, path, n));
}

static void set_mtime(const char *path, time_t t)
{
    struct timespec ts[2] = {{.tv_sec = t}, {.tv_sec = t}};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void test_empty(void **state)
{
    (void)state;
    rnnc_cache_summary c;
    assert_ok(rnnc_cache_info(&c));
    assert_true(c.enabled);
    assert_string_equal(c.directory, g_dir);
    assert_int_equal(c.kernels, 0);
    assert_int_equal(c.kernel_bytes, 0);
    assert_int_equal(c.tuning_records, 0);
    assert_int_equal(c.limit_bytes, 1024ull << 20); /* RNNC_CACHE_MAX_MB's default */
    assert_int_equal(c.entry_format, RT_CACHE_FORMAT);
    assert_int_equal(c.codegen_version, RT_CODEGEN_VERSION);
    assert_true(c.nvrtc);
    assert_true(c.nvrtc_major >= 11);
    rnnc_cache_entries *l = NULL;
    assert_ok(rnnc_cache_list(&l));
    assert_int_equal(rnnc_cache_entries_count(l), 0);
    assert_int_equal(rnnc_cache_entries_bytes(l), 0);
    assert_null(rnnc_cache_entries_get(l, 0));
    char want[PATH_MAX + 16];
    snprintf(want, sizeof want, "%s/kernels", g_dir);
    assert_string_equal(rnnc_cache_entries_directory(l), want);
    rnnc_cache_entries_destroy(l);
}

static void test_entries(void **state)
{
    (void)state;
    char old[PATH_MAX + 80], young[PATH_MAX + 80];
    compile_entry(80, NULL, old, sizeof old);
    compile_entry(90, "tile=1", young, sizeof young);
    assert_ok(rt_tuning_put("api shape", "tile=1"));
    time_t now = time(NULL);
    set_mtime(old, now - 7200);
    set_mtime(young, now - 60);
    uint64_t bytes = file_size(old) + file_size(young);

    rnnc_cache_summary c;
    assert_ok(rnnc_cache_info(&c));
    assert_int_equal(c.kernels, 2);
    assert_int_equal(c.kernel_bytes, bytes);
    assert_int_equal(c.tuning_records, 1);

    rnnc_cache_entries *l = NULL;
    assert_ok(rnnc_cache_list(&l));
    assert_int_equal(rnnc_cache_entries_count(l), 2);
    assert_int_equal(rnnc_cache_entries_bytes(l), bytes);
    const rnnc_cache_entry *e0 = rnnc_cache_entries_get(l, 0), *e1 = rnnc_cache_entries_get(l, 1);
    /* most recently used first */
    assert_string_equal(e0->key, base_name(young));
    assert_string_equal(e1->key, base_name(old));
    assert_int_equal(e0->sm, 90);
    assert_int_equal(e1->sm, 80);
    assert_int_equal(e0->last_used, (int64_t)(now - 60));
    assert_int_equal(e1->last_used, (int64_t)(now - 7200));
    for (size_t i = 0; i < 2; i++) {
        const rnnc_cache_entry *e = rnnc_cache_entries_get(l, i);
        assert_true(e->valid);
        assert_string_equal(e->kernel, "scale");
        assert_int_equal(strlen(e->key), 32 + strlen(".cubin"));
        assert_int_equal(strspn(e->key, "0123456789abcdef"), 32);
    }
    assert_int_equal(e0->bytes, file_size(young));
    assert_null(rnnc_cache_entries_get(l, 2));
    rnnc_cache_entries_destroy(l);

    /* A damaged header is listed, as damaged: the next use replaces it. */
    FILE *fp = fopen(old, "r+b");
    assert_non_null(fp);
    assert_true(fputs("garbage", fp) >= 0);
    fclose(fp);
    set_mtime(old, now - 7200);
    assert_ok(rnnc_cache_list(&l));
    assert_int_equal(rnnc_cache_entries_count(l), 2);
    e1 = rnnc_cache_entries_get(l, 1);
    assert_string_equal(e1->key, base_name(old));
    assert_false(e1->valid);
    assert_int_equal(e1->sm, 0);
    assert_string_equal(e1->kernel, "");
    assert_true(rnnc_cache_entries_get(l, 0)->valid);
    rnnc_cache_entries_destroy(l);
}

static void test_clear(void **state)
{
    (void)state;
    char kdir[PATH_MAX + 16], stale[PATH_MAX + 64], fresh[PATH_MAX + 64];
    snprintf(kdir, sizeof kdir, "%s/kernels", g_dir);
    rnnc_cache_summary before;
    assert_ok(rnnc_cache_info(&before));
    assert_true(before.kernels > 0 && before.tuning_records > 0);
    /* temp files of writers: one that died an hour ago, one busy now */
    snprintf(stale, sizeof stale, "%s/.tmp-dead.cubin-abcdef", kdir);
    snprintf(fresh, sizeof fresh, "%s/.tmp-live.cubin-abcdef", kdir);
    assert_int_equal(tu_write_file(stale, "x", 1), 0);
    assert_int_equal(tu_write_file(fresh, "y", 1), 0);
    set_mtime(stale, time(NULL) - 3600);

    rnnc_cache_cleared r;
    assert_ok(rnnc_cache_clear(&r));
    assert_true(r.enabled);
    assert_string_equal(r.directory, g_dir);
    assert_int_equal(r.files, before.kernels + before.tuning_records);
    assert_true(r.bytes >= before.kernel_bytes);
    assert_int_equal(access(stale, F_OK), -1);
    assert_int_equal(access(fresh, F_OK), 0);

    rnnc_cache_summary after;
    assert_ok(rnnc_cache_info(&after));
    assert_int_equal(after.kernels, 0);
    assert_int_equal(after.tuning_records, 0);
    rnnc_cache_entries *l = NULL;
    assert_ok(rnnc_cache_list(&l));
    assert_int_equal(rnnc_cache_entries_count(l), 0);
    rnnc_cache_entries_destroy(l);
    /* nothing left to remove */
    assert_ok(rnnc_cache_clear(&r));
    assert_int_equal(r.files, 0);
    assert_int_equal(r.bytes, 0);
    unlink(fresh);
}

static void test_disabled(void **state)
{
    (void)state;
    char path[PATH_MAX + 80];
    compile_entry(80, "off", path, sizeof path);
    setenv("RNNC_CACHE", "0", 1);
    rnnc_cache_summary c;
    assert_ok(rnnc_cache_info(&c));
    assert_false(c.enabled);
    assert_string_equal(c.directory, "");
    assert_int_equal(c.kernels, 0);
    rnnc_cache_entries *l = NULL;
    assert_ok(rnnc_cache_list(&l));
    assert_null(rnnc_cache_entries_directory(l));
    assert_int_equal(rnnc_cache_entries_count(l), 0);
    rnnc_cache_entries_destroy(l);
    rnnc_cache_cleared r;
    assert_ok(rnnc_cache_clear(&r));
    assert_false(r.enabled);
    assert_int_equal(r.files, 0);
    assert_int_equal(access(path, F_OK), 0); /* the cache off is left alone */
    unsetenv("RNNC_CACHE");
    assert_ok(rnnc_cache_clear(NULL)); /* clearing with no report */
    assert_int_equal(access(path, F_OK), -1);
}

static void test_null_arguments(void **state)
{
    (void)state;
    assert_status(rnnc_cache_info(NULL), RNNC_ERR_INVALID_ARG);
    assert_non_null(strstr(rnnc_last_error(), "rnnc_cache_info"));
    assert_status(rnnc_cache_list(NULL), RNNC_ERR_INVALID_ARG);
    rnnc_cache_entries_destroy(NULL);
    assert_int_equal(rnnc_cache_entries_count(NULL), 0);
    assert_null(rnnc_cache_entries_get(NULL, 0));
    assert_int_equal(rnnc_cache_entries_bytes(NULL), 0);
    assert_null(rnnc_cache_entries_directory(NULL));
}

int main(void)
{
    if (!rt_nvrtc_available()) {
        fprintf(stderr, "NVRTC not available: the cache API test (real entries) skipped\n");
        return TU_SKIP;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_entries),
        cmocka_unit_test(test_clear),
        cmocka_unit_test(test_disabled),
        cmocka_unit_test(test_null_arguments),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
