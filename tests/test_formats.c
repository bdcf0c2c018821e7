/* test_formats.c: every number of every file format rnnc reads is checked
 * as an integer in range before it is used or converted (issue 18): the
 * bundle manifest and header, the cache entry header, tuning records and
 * safetensors dims and offsets; one test per field, each with a valid file
 * that loads as the control.  Also dropout p and layernorm eps, which are
 * arguments (RNNC_ERR_INVALID_ARG), not shapes. */
#define _GNU_SOURCE
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "runtime/fused/fused.h"

static char g_dir[4096];

static int group_setup(void **state)
{
    char *d = tu_tmpdir();
    snprintf(g_dir, sizeof g_dir, "%s", d);
    free(d);
    return tu_cache_dir_setup(state);
}

static int group_teardown(void **state)
{
    tu_rmtree(g_dir);
    return tu_cache_dir_teardown(state);
}

/* ---------------------------------------------------------------- bundles */

static const char k_payload[] = "0123456789abcdef";
static uint32_t g_format = RT_BUNDLE_FORMAT; /* the header's, for write_bundle */

/* A bundle whose manifest is `fmt` with %s for the kernel's hash (valid). */
static const char *write_bundle(const char *manifest_fmt, const char *kernel_fields)
{
    static char path[4200];
    char manifest[2048], hash[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)XXH3_64bits(k_payload, 16));
    snprintf(manifest, sizeof manifest, manifest_fmt, kernel_fields, hash);
    struct {
        char magic[8];
        uint32_t format, reserved;
        uint64_t size, hash;
    } h = {"RNNCPKG", g_format, 0, strlen(manifest),
           XXH3_64bits(manifest, strlen(manifest))};
    char buf[4096];
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, manifest, h.size);
    memcpy(buf + sizeof h + h.size, k_payload, 16);
    snprintf(path, sizeof path, "%s/b.rnncpkg", g_dir);
    assert_int_equal(tu_write_file(path, buf, sizeof h + h.size + 16), 0);
    return path;
}

#define STR_(x) #x
#define STR(x) STR_(x)
/* %s: the kernel's numeric fields; the second %s its hash. */
static const char k_manifest[] =
    "{\"codegen_version\":" STR(RT_CODEGEN_VERSION) ",\"kernels\":[{\"name\":\"k\","
    "\"key\":\"0123456789abcdef0123456789abcdef\",%s,\"hash\":\"%s\"}],\"tuning\":[]}";

static rnnc_status load_with(const char *fields)
{
    rt_bundle *b = NULL;
    rnnc_status s = rt_bundle_load(&b, write_bundle(k_manifest, fields));
    rt_bundle_destroy(b);
    return s;
}

static void bundle_control(void **state)
{
    (void)state;
    assert_ok(load_with("\"sm\":90,\"offset\":0,\"size\":16"));
}

/* Values no integer field may take: past every range (the UB cast of D6),
 * negative, fractional, past 2^53, not a number. */
static const char *const k_bad_numbers[] = {"2.2e88", "-1", "1.5", "1e19", "\"90\"", "null",
                                            "1e308", "-0.5", "18446744073709551616"};

static void bundle_field(const char *field)
{
    for (size_t i = 0; i < sizeof k_bad_numbers / sizeof *k_bad_numbers; i++) {
        char fields[256];
        snprintf(fields, sizeof fields, "\"sm\":%s,\"offset\":%s,\"size\":%s",
                 strcmp(field, "sm") == 0 ? k_bad_numbers[i] : "90",
                 strcmp(field, "offset") == 0 ? k_bad_numbers[i] : "0",
                 strcmp(field, "size") == 0 ? k_bad_numbers[i] : "16");
        rnnc_status s = load_with(fields);
        if (s != RNNC_ERR_FORMAT)
            fail_msg("%s = %s: %s, want a format error", field, k_bad_numbers[i],
                     rnnc_status_string(s));
    }
}

static void bundle_sm(void **state)
{
    (void)state;
    bundle_field("sm");
    assert_status(load_with("\"sm\":5,\"offset\":0,\"size\":16"), RNNC_ERR_FORMAT);
    assert_status(load_with("\"sm\":2147483648,\"offset\":0,\"size\":16"), RNNC_ERR_FORMAT);
}

static void bundle_offset(void **state)
{
    (void)state;
    bundle_field("offset");
    assert_status(load_with("\"sm\":90,\"offset\":17,\"size\":0"), RNNC_ERR_FORMAT);
}

static void bundle_size(void **state)
{
    (void)state;
    bundle_field("size");
    assert_status(load_with("\"sm\":90,\"offset\":1,\"size\":16"), RNNC_ERR_FORMAT);
}

static void bundle_codegen_version(void **state)
{
    (void)state;
    const char *const bad[] = {"2.2e88", "-1", "1.5", "\"3\"", "1e19"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char fmt[sizeof k_manifest + 32];
        rt_bundle *b = NULL;
        snprintf(fmt, sizeof fmt, "{\"codegen_version\":%s,%s", bad[i],
                 strchr(k_manifest, ',') + 1);
        assert_status(rt_bundle_load(&b, write_bundle(fmt, "\"sm\":90,\"offset\":0,\"size\":16")),
                      RNNC_ERR_FORMAT);
        assert_null(b);
    }
}

/* The cpu backend's object files (format 2): sm 0 with a target, which is
 * a non-empty string; a cubin's sm with a target, a target in a format-1
 * file and sm 0 without one are refused.  A format-1 file of cubins loads. */
static void bundle_cpu_target(void **state)
{
    (void)state;
    const char *t = "x86-64-v3 8 x86_64-pc-linux-gnu x86-64-v3 +avx,+avx2";
    char fields[256];
    snprintf(fields, sizeof fields, "\"sm\":0,\"target\":\"%s\",\"offset\":0,\"size\":16", t);
    rt_bundle *b = NULL;
    assert_ok(rt_bundle_load(&b, write_bundle(k_manifest, fields)));
    char archs[64];
    rt_bundle_archs(b, archs, sizeof archs);
    assert_string_equal(archs, "cpu:x86-64-v3");
    const rt_cache_key key = {0x0123456789abcdefull, 0x0123456789abcdefull}; /* the manifest's */
    void *obj = NULL;
    size_t size = 0;
    assert_false(rt_bundle_lookup_host(key, t, &obj, &size)); /* not registered yet */
    assert_ok(rt_bundle_register(b));
    assert_false(rt_bundle_lookup_host(key, "native 8 x86_64-pc-linux-gnu znver3 +avx", &obj,
                                       &size));
    assert_true(rt_bundle_lookup_host(key, t, &obj, &size));
    assert_int_equal(size, 16);
    assert_memory_equal(obj, k_payload, 16);
    free(obj);
    rt_bundle_destroy(b); /* unregisters */
    assert_false(rt_bundle_lookup_host(key, t, &obj, &size));

    assert_status(load_with("\"sm\":0,\"offset\":0,\"size\":16"), RNNC_ERR_FORMAT);
    assert_status(load_with("\"sm\":90,\"target\":\"x\",\"offset\":0,\"size\":16"),
                  RNNC_ERR_FORMAT);
    assert_status(load_with("\"sm\":0,\"target\":\"\",\"offset\":0,\"size\":16"),
                  RNNC_ERR_FORMAT);
    assert_status(load_with("\"sm\":0,\"target\":7,\"offset\":0,\"size\":16"),
                  RNNC_ERR_FORMAT);
    g_format = 1;
    assert_status(load_with(fields), RNNC_ERR_FORMAT);
    assert_ok(load_with("\"sm\":90,\"offset\":0,\"size\":16"));
    g_format = RT_BUNDLE_FORMAT;
}

/* The 32-byte header: format and manifest length. */
static void bundle_header_fields(void **state)
{
    (void)state;
    const char *path = write_bundle(k_manifest, "\"sm\":90,\"offset\":0,\"size\":16");
    FILE *f = fopen(path, "rb");
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    rt_bundle *b = NULL;
    const uint32_t formats[] = {RT_BUNDLE_FORMAT + 1, RT_BUNDLE_FORMAT_OLDEST - 1};
    for (int i = 0; i < 2; i++) {
        memcpy(buf + 8, &formats[i], 4);
        assert_int_equal(tu_write_file(path, buf, n), 0);
        assert_status(rt_bundle_load(&b, path), RNNC_ERR_FORMAT);
    }
    uint32_t format;
    format = RT_BUNDLE_FORMAT;
    memcpy(buf + 8, &format, 4);
    const uint64_t sizes[] = {UINT64_MAX, UINT64_MAX - 31, n - 31, (uint64_t)1 << 63};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        memcpy(buf + 16, &sizes[i], 8);
        assert_int_equal(tu_write_file(path, buf, n), 0);
        assert_status(rt_bundle_load(&b, path), RNNC_ERR_FORMAT);
    }
}

/* ---------------------------------------------------------------- cache entries */

static const rt_cache_key k_key = {0x1111222233334444ull, 0x5555666677778888ull};

/* Offsets in the 128-byte entry header (runtime/cache/cache_disk.c, docs/cache.md). */
enum { H_FORMAT = 8, H_HSIZE = 12, H_KEY_LO = 16, H_PSIZE = 32, H_PHASH = 40, H_SM = 48,
       H_RESERVED = 52, H_CREATED = 56, H_NAME = 64, H_HHASH = 120, H_SIZE = 128 };

static unsigned char g_entry[H_SIZE + 16];

/* A valid entry, through the writer itself, read back into g_entry. */
static void make_entry(char *path, size_t n)
{
    rt_cache_write(k_key, "fused_lstm_b1", 90, k_payload, 16);
    assert_true(rt_cache_entry_path(k_key, path, n));
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(g_entry, 1, sizeof g_entry + 1, f), sizeof g_entry);
    fclose(f);
}

/* Writes g_entry with `len` bytes of field `at` set to v and a header hash
 * that matches (so only the field's own check can refuse it). */
static rnnc_status read_with(const char *path, int at, int len, uint64_t v, bool *peek_valid)
{
    unsigned char e[sizeof g_entry];
    memcpy(e, g_entry, sizeof e);
    memcpy(e + at, &v, (size_t)len);
    uint64_t hh = XXH3_64bits(e, H_HHASH);
    memcpy(e + H_HHASH, &hh, 8);
    assert_int_equal(tu_write_file(path, e, sizeof e), 0);
    void *cubin = NULL;
    size_t size = 0;
    char why[160];
    rnnc_status s = rt_cache_read(k_key, &cubin, &size, why, sizeof why);
    free(cubin);
    int sm;
    char name[56];
    int64_t created;
    assert_true(rt_cache_peek(path, &sm, name, &created, peek_valid));
    return s;
}

/* peek: `rnnc cache list` checks the field too (it reads the header, not
 * the payload, and takes the key from the file's name). */
static void entry_field_of(int at, int len, const uint64_t *bad, size_t n_bad, uint64_t good,
                           bool peek)
{
    char path[4300];
    bool valid;
    make_entry(path, sizeof path);
    assert_ok(read_with(path, at, len, good, &valid));
    assert_true(valid);
    for (size_t i = 0; i < n_bad; i++) {
        rnnc_status s = read_with(path, at, len, bad[i], &valid);
        if (s != RNNC_ERR_FORMAT || (peek && valid))
            fail_msg("header offset %d = %llu: %s, listed %s", at, (unsigned long long)bad[i],
                     rnnc_status_string(s), valid ? "valid" : "corrupt");
    }
}

static void entry_field(int at, int len, const uint64_t *bad, size_t n_bad, uint64_t good)
{
    entry_field_of(at, len, bad, n_bad, good, true);
}

static void entry_format(void **state)
{
    (void)state;
    const uint64_t bad[] = {0, RT_CACHE_FORMAT + 1, UINT32_MAX};
    entry_field(H_FORMAT, 4, bad, 3, RT_CACHE_FORMAT);
}

static void entry_header_size(void **state)
{
    (void)state;
    const uint64_t bad[] = {0, 127, 129, UINT32_MAX};
    entry_field(H_HSIZE, 4, bad, 4, H_SIZE);
}

static void entry_key(void **state)
{
    (void)state;
    const uint64_t bad[] = {0, k_key.lo + 1, UINT64_MAX};
    entry_field_of(H_KEY_LO, 8, bad, 3, k_key.lo, false);
}

/* Sizes that wrap 128 + size around to the file's size must not pass. */
static void entry_payload_size(void **state)
{
    (void)state;
    const uint64_t bad[] = {0, 15, 17, UINT64_MAX, UINT64_MAX - H_SIZE + 1, (uint64_t)1 << 63};
    entry_field(H_PSIZE, 8, bad, sizeof bad / sizeof *bad, 16);
}

static void entry_payload_hash(void **state)
{
    (void)state;
    const uint64_t bad[] = {0, XXH3_64bits(k_payload, 16) ^ 1};
    entry_field_of(H_PHASH, 8, bad, 2, XXH3_64bits(k_payload, 16), false);
}

static void entry_sm(void **state)
{
    (void)state;
    /* 0 is RT_CACHE_HOST: the cpu backend's object files */
    const uint64_t bad[] = {1, 9, 1001, (uint64_t)INT32_MAX + 1, UINT32_MAX};
    entry_field(H_SM, 4, bad, sizeof bad / sizeof *bad, 90);
    entry_field(H_SM, 4, bad, sizeof bad / sizeof *bad, RT_CACHE_HOST);
}

static void entry_reserved(void **state)
{
    (void)state;
    const uint64_t bad[] = {1, UINT32_MAX};
    entry_field(H_RESERVED, 4, bad, 2, 0);
}

static void entry_created(void **state)
{
    (void)state;
    const uint64_t bad[] = {(uint64_t)INT64_MIN, UINT64_MAX};
    entry_field(H_CREATED, 8, bad, 2, 1700000000);
}

/* The name must be NUL-terminated within its 56 bytes. */
static void entry_name(void **state)
{
    (void)state;
    char path[4300];
    bool valid;
    make_entry(path, sizeof path);
    memset(g_entry + H_NAME, 'a', 56);
    assert_status(read_with(path, H_NAME, 8, 0x6161616161616161ull, &valid), RNNC_ERR_FORMAT);
    assert_false(valid);
}

/* ---------------------------------------------------------------- tuning records */

static const char k_shape[] = "fused lstm#00 I=8 H=8 sm_90 sms=132 B=4";

static char *record_path(void)
{
    static char path[4300];
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/tuning", tu_cache_dir());
    assert_ok(rt_tuning_put(k_shape, "ut=0 bt=16 nt=256"));
    XXH128_hash_t h = XXH3_128bits(k_shape, strlen(k_shape));
    snprintf(path, sizeof path, "%s/%016llx%016llx.txt", dir, (unsigned long long)h.high64,
             (unsigned long long)h.low64);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return path;
}

/* A record holding `value`; what rt_tuning_get and the fused parser make of it. */
static bool record_parses(const char *path, const char *value)
{
    char text[8192], got[256];
    int n = snprintf(text, sizeof text, "%s\n%s\n", k_shape, value);
    assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
    if (rt_tuning_get(k_shape, got, sizeof got) != RNNC_OK)
        return false;
    assert_string_equal(got, value);
#ifdef RT_HAVE_CUDA_H
    rt_fused_tuning t;
    return rt_fused_tuning_parse(got, &t);
#else
    return true;
#endif
}

static void tuning_fields(void **state)
{
    (void)state;
    const char *path = record_path();
    assert_true(record_parses(path, "ut=0 bt=16 nt=256"));
    assert_true(record_parses(path, "ut=65536 bt=65536 nt=1024"));
#ifdef RT_HAVE_CUDA_H
    /* each field past its range, negative, or not a plain decimal integer */
    const char *const bad[] = {
        "ut=2147483648 bt=16 nt=256", "ut=99999999999999999999 bt=16 nt=256",
        "ut=65537 bt=16 nt=256",      "ut=-1 bt=16 nt=256",
        "ut= 1 bt=16 nt=256",         "ut=+1 bt=16 nt=256",
        "ut=0 bt=2147483648 nt=256",  "ut=0 bt=65537 nt=256",
        "ut=0 bt=-16 nt=256",         "ut=0 bt=0x10 nt=256",
        "ut=0 bt=16 nt=2147483648",   "ut=0 bt=16 nt=1056",
        "ut=0 bt=16 nt=33",           "ut=0 bt=16 nt=-32",
        "ut=0 bt=16 nt=256 ",         "ut=0 bt=16",
        "ut=0 bt=16 nt=",             "ut=00000000000000000001 bt=16 nt=256",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (record_parses(path, bad[i]))
            fail_msg("tuning record '%s' was accepted", bad[i]);
#endif
}

/* A record file that is not one rnnc wrote: too long, a NUL inside, a FIFO. */
static void tuning_files(void **state)
{
    (void)state;
    char got[256], big[5000];
    const char *path = record_path();
    memset(big, 'x', sizeof big);
    memcpy(big, k_shape, strlen(k_shape));
    big[strlen(k_shape)] = '\n';
    assert_int_equal(tu_write_file(path, big, sizeof big), 0);
    assert_status(rt_tuning_get(k_shape, got, sizeof got), RNNC_ERR_NOT_FOUND);
    char nul[128];
    int n = snprintf(nul, sizeof nul, "%s\nut=0 bt=16 nt=256\n", k_shape);
    nul[n - 4] = '\0';
    assert_int_equal(tu_write_file(path, nul, (size_t)n), 0);
    assert_status(rt_tuning_get(k_shape, got, sizeof got), RNNC_ERR_NOT_FOUND);
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_status(rt_tuning_get(k_shape, got, sizeof got), RNNC_ERR_NOT_FOUND);
    unlink(path);
}

/* ---------------------------------------------------------------- safetensors */

static rnnc_status load_header(const char *json)
{
    char path[4200], buf[1024];
    uint64_t n = strlen(json);
    memcpy(buf, &n, 8);
    memcpy(buf + 8, json, n);
    memset(buf + 8 + n, 0, 16);
    snprintf(path, sizeof path, "%s/t.safetensors", g_dir);
    assert_int_equal(tu_write_file(path, buf, 8 + n + 16), 0);
    rnnc_tensors *ts = NULL;
    rnnc_status s = rnnc_tensors_load(&ts, path);
    rnnc_tensors_destroy(ts);
    return s;
}

static void safetensors_numbers(void **state)
{
    (void)state;
    char json[512];
    assert_ok(load_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}"));
    for (size_t i = 0; i < sizeof k_bad_numbers / sizeof *k_bad_numbers; i++) {
        snprintf(json, sizeof json, "{\"t\":{\"dtype\":\"F32\",\"shape\":[%s,2],"
                 "\"data_offsets\":[0,16]}}", k_bad_numbers[i]);
        assert_status(load_header(json), RNNC_ERR_FORMAT);
        snprintf(json, sizeof json, "{\"t\":{\"dtype\":\"F32\",\"shape\":[2,2],"
                 "\"data_offsets\":[%s,16]}}", k_bad_numbers[i]);
        assert_status(load_header(json), RNNC_ERR_FORMAT);
        snprintf(json, sizeof json, "{\"t\":{\"dtype\":\"F32\",\"shape\":[2,2],"
                 "\"data_offsets\":[0,%s]}}", k_bad_numbers[i]);
        assert_status(load_header(json), RNNC_ERR_FORMAT);
    }
}

/* ---------------------------------------------------------------- op arguments */

static void dropout_and_eps_are_arguments(void **state)
{
    (void)state;
    rnnc_cell *c = NULL;
    rnnc_value x, y;
    assert_ok(rnnc_cell_create(&c, "args"));
    assert_ok(rnnc_cell_input(c, "x", "I", &x));
    const double bad_p[] = {-0.1, 1.0, 1.5, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad_p / sizeof *bad_p; i++)
        assert_status(rnnc_dropout(c, x, bad_p[i], &y), RNNC_ERR_INVALID_ARG);
    const double bad_eps[] = {-1e-5, NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof bad_eps / sizeof *bad_eps; i++)
        assert_status(rnnc_layernorm(c, x, bad_eps[i], RNNC_NONE, RNNC_NONE, &y),
                      RNNC_ERR_INVALID_ARG);
    assert_ok(rnnc_dropout(c, x, 0.25, &y));
    assert_ok(rnnc_layernorm(c, x, 1e-5, RNNC_NONE, RNNC_NONE, &y));
    rnnc_cell_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bundle_control),
        cmocka_unit_test(bundle_sm),
        cmocka_unit_test(bundle_offset),
        cmocka_unit_test(bundle_size),
        cmocka_unit_test(bundle_codegen_version),
        cmocka_unit_test(bundle_header_fields),
        cmocka_unit_test(bundle_cpu_target),
        cmocka_unit_test(entry_format),
        cmocka_unit_test(entry_header_size),
        cmocka_unit_test(entry_key),
        cmocka_unit_test(entry_payload_size),
        cmocka_unit_test(entry_payload_hash),
        cmocka_unit_test(entry_sm),
        cmocka_unit_test(entry_reserved),
        cmocka_unit_test(entry_created),
        cmocka_unit_test(entry_name),
        cmocka_unit_test(tuning_fields),
        cmocka_unit_test(tuning_files),
        cmocka_unit_test(safetensors_numbers),
        cmocka_unit_test(dropout_and_eps_are_arguments),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
