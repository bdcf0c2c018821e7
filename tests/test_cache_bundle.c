/* test_cache_bundle.c: AOT bundles round-trip their cubins and tuning
 * records; damaged, truncated and other-version files are refused with a
 * message naming the problem; lookups are per request and per arch. */
#define _GNU_SOURCE
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "runtime/cache/cache.h"

static const char k_src[] = "extern \"C\" __global__ void add1(float *x, int n)\n"
                            "{\n"
                            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                            "    if (i < n)\n"
                            "        x[i] += 1.0f;\n"
                            "}\n";
static const char *const k_names[] = {"add1"};

typedef struct fixture {
    char *dir;
    char path[4200];
    void *cubin[2];
    size_t size[2];
} fixture;

static rt_kernel_req make_req(int sm, const char *tuning)
{
    rt_kernel_req r = {.source = k_src, .name = "add1", .kernels = k_names, .n_kernels = 1,
                       .sm = sm, .tuning = tuning};
    return r;
}

/* One bundle with sm_80 and sm_90 cubins and two tuning records. */
static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = tu_tmpdir();
    setenv("RNNC_CACHE", "0", 1); /* every cubin below really comes from NVRTC */
    snprintf(f->path, sizeof f->path, "%s/model.rnncpkg", f->dir);
    rt_bundle *b = NULL;
    if (rt_bundle_create(&b) != RNNC_OK)
        return -1;
    for (int i = 0; i < 2; i++) {
        rt_kernel_req r = make_req(i ? 90 : 80, "tile=16");
        rt_origin o;
        if (rt_cubin_get(&r, &f->cubin[i], &f->size[i], &o) != RNNC_OK ||
            rt_bundle_add(b, &r, f->cubin[i], f->size[i]) != RNNC_OK)
            return -1;
    }
    if (rt_bundle_add_tuning(b, "add1 B=64 sm_90", "tile=16") != RNNC_OK ||
        rt_bundle_add_tuning(b, "add1 B=1 sm_90", "tile=8") != RNNC_OK ||
        rt_bundle_save(b, f->path) != RNNC_OK)
        return -1;
    rt_bundle_destroy(b);
    unsetenv("RNNC_CACHE");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    free(f->cubin[0]);
    free(f->cubin[1]);
    tu_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void test_round_trip(void **state)
{
    fixture *f = *state;
    rt_bundle *b = NULL;
    assert_ok(rt_bundle_load(&b, f->path));
    assert_int_equal(rt_bundle_count(b), 2);
    for (int i = 0; i < 2; i++) {
        rt_kernel_req r = make_req(i ? 90 : 80, "tile=16");
        const void *cubin = NULL;
        size_t size = 0;
        assert_true(rt_bundle_find(b, &r, r.sm, &cubin, &size));
        assert_int_equal(size, f->size[i]);
        assert_memory_equal(cubin, f->cubin[i], size);
    }
    const void *cubin;
    size_t size;
    rt_kernel_req other = make_req(90, "tile=32");
    assert_false(rt_bundle_find(b, &other, 90, &cubin, &size));
    rt_kernel_req r80 = make_req(80, "tile=16");
    assert_false(rt_bundle_find(b, &r80, 86, &cubin, &size));
    const char *t = NULL;
    assert_ok(rt_bundle_tuning(b, "add1 B=1 sm_90", &t));
    assert_string_equal(t, "tile=8");
    assert_status(rt_bundle_tuning(b, "add1 B=2 sm_90", &t), RNNC_ERR_NOT_FOUND);
    char archs[64];
    rt_bundle_archs(b, archs, sizeof archs);
    assert_string_equal(archs, "sm_80,sm_90");
    rt_bundle_destroy(b);
}

static void test_registry(void **state)
{
    fixture *f = *state;
    rt_bundle *b = NULL;
    assert_ok(rt_bundle_load(&b, f->path));
    rt_kernel_req r = make_req(90, "tile=16");
    void *cubin = NULL;
    size_t size = 0;
    char archs[64];
    assert_false(rt_bundle_lookup(&r, 90, &cubin, &size));
    assert_ok(rt_bundle_register(b));
    assert_true(rt_bundle_lookup(&r, 90, &cubin, &size));
    assert_int_equal(size, f->size[1]);
    assert_memory_equal(cubin, f->cubin[1], size);
    free(cubin);
    assert_true(rt_bundle_other_arch(&r, 100, archs, sizeof archs));
    assert_string_equal(archs, "sm_80,sm_90");
    rt_bundle_destroy(b); /* unregisters */
    assert_false(rt_bundle_lookup(&r, 90, &cubin, &size));
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    *n = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *buf = malloc(*n);
    assert_int_equal(fread(buf, 1, *n, fp), *n);
    fclose(fp);
    return buf;
}

static void expect_refused(const fixture *f, const unsigned char *data, size_t n,
                           const char *why)
{
    char bad[4300];
    snprintf(bad, sizeof bad, "%s/bad.rnncpkg", f->dir);
    assert_int_equal(tu_write_file(bad, data, n), 0);
    rt_bundle *b = (rt_bundle *)0x1;
    assert_status(rt_bundle_load(&b, bad), RNNC_ERR_FORMAT);
    assert_ptr_equal(b, (rt_bundle *)0x1);
    if (!strstr(rnnc_last_error(), why))
        fail_msg("want \"%s\" in: %s", why, rnnc_last_error());
}

static void test_damage_refused(void **state)
{
    fixture *f = *state;
    size_t n = 0;
    unsigned char *good = slurp(f->path, &n);
    unsigned char *d = malloc(n);
    memcpy(d, good, n);
    d[n - 10] ^= 0x40; /* inside the last cubin */
    expect_refused(f, d, n, "damaged (kernel add1, sm_90)");
    memcpy(d, good, n);
    d[40] ^= 0x01; /* inside the manifest */
    expect_refused(f, d, n, "damaged (manifest");
    expect_refused(f, good, n - 100, "truncated");
    expect_refused(f, good, 20, "not an rnnc bundle");
    memcpy(d, good, n);
    uint32_t v = RT_BUNDLE_FORMAT + 1;
    memcpy(d + 8, &v, sizeof v);
    expect_refused(f, d, n, "reads formats");
    free(d);
    free(good);
}

/* A bundle from an rnnc whose code generator differs: right format, refused. */
static void test_other_codegen_version_refused(void **state)
{
    fixture *f = *state;
    size_t n = 0;
    unsigned char *d = slurp(f->path, &n);
    uint64_t len = 0;
    memcpy(&len, d + 16, sizeof len);
    char *m = (char *)d + 32;
    char *at = memmem(m, len, "\"codegen_version\":", 18);
    assert_non_null(at);
    at += 18;
    assert_true(*at >= '1' && *at <= '9');
    *at = *at == '9' ? '8' : (char)(*at + 1); /* same length, another version */
    uint64_t h = XXH3_64bits(m, len);
    memcpy(d + 24, &h, sizeof h);
    expect_refused(f, d, n, "code generator version");
    free(d);
}

int main(void)
{
    if (!rt_nvrtc_available()) {
        fprintf(stderr, "NVRTC not available: bundle tests (they make cubins) skipped\n");
        return TU_SKIP;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_damage_refused),
        cmocka_unit_test(test_other_codegen_version_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
