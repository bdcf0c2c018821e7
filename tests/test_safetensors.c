/* test_safetensors.c: the tensor set, safetensors files (round trip, the
 * exact bytes of the format, every kind of bad input, failed saves leaving
 * nothing behind), rt_tensor_expect and rt_tensor_to_f32. */
#define _GNU_SOURCE /* strdup, asprintf-free helpers, setrlimit */
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/tensor/tensor.h"

static uint64_t g_seed;

/* ---------------------------------------------------------------- helpers */

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Entries of `dir` other than . and ..; the first one's name into `first`. */
static int count_entries(const char *dir, char *first, size_t first_len)
{
    DIR *d = opendir(dir);
    int n = 0;
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n++ == 0 && first)
            snprintf(first, first_len, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

static void fill_bytes(void *p, size_t n, uint64_t *rng)
{
    unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        c[i] = (unsigned char)tu_uniform(rng, 0, 256);
}

static void put_u64le(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* A file made by hand: the length, `json` padded with spaces to 8 bytes,
 * then `data_len` random bytes.  Returns the whole image through `image`. */
static char *raw_file(const char *dir, const char *name, const char *json, size_t data_len,
                      uint64_t *rng, unsigned char **image, size_t *image_len)
{
    size_t n = strlen(json), padded = (n + 7) / 8 * 8, len = 8 + padded + data_len;
    unsigned char *buf = malloc(len);
    assert_non_null(buf);
    put_u64le(buf, padded);
    memcpy(buf + 8, json, n);
    memset(buf + 8 + n, ' ', padded - n);
    fill_bytes(buf + 8 + padded, data_len, rng);
    char *path = join(dir, name);
    assert_int_equal(tu_write_file(path, buf, len), 0);
    if (image) {
        *image = buf;
        *image_len = len;
    } else {
        free(buf);
    }
    return path;
}

static void expect_bad(const char *path, rnnc_status want, const char *mention)
{
    rnnc_tensors *ts = (rnnc_tensors *)&ts; /* must be reset to NULL */
    assert_status(rnnc_tensors_load(&ts, path), want);
    assert_null(ts);
    const char *err = rnnc_last_error();
    if (!strstr(err, path))
        fail_msg("error does not name the file: %s", err);
    if (mention && !strstr(err, mention))
        fail_msg("error does not mention '%s': %s", mention, err);
}

/* A header with one tensor "weight_ih_l0" and `data_len` data bytes must fail. */
static void bad_header(const char *json, size_t data_len, rnnc_status want, const char *mention)
{
    uint64_t rng = g_seed ^ 0xbadull;
    char *dir = tu_tmpdir();
    char *path = raw_file(dir, "bad.safetensors", json, data_len, &rng, NULL, NULL);
    expect_bad(path, want, mention);
    free(path);
    tu_rmtree(dir);
    free(dir);
}

static rnnc_tensors *sample_set(uint64_t *rng)
{
    rnnc_tensors *ts = NULL;
    float w[12], scalar;
    double d[5];
    int64_t l[6];
    int32_t i32[7];
    uint16_t h[8], bf[4];
    assert_ok(rnnc_tensors_create(&ts));
    tu_fill_f32(w, 12, rng, -2, 2);
    tu_fill_f64(d, 5, rng, -1e6, 1e6);
    tu_fill_f32(&scalar, 1, rng, 1, 3);
    for (int i = 0; i < 6; i++)
        l[i] = (int64_t)tu_uniform(rng, -1e15, 1e15);
    fill_bytes(i32, sizeof i32, rng);
    fill_bytes(h, sizeof h, rng);
    fill_bytes(bf, sizeof bf, rng);
    assert_ok(rnnc_tensors_add(ts, "weight_ih_l0", RNNC_F32, 2, (int64_t[]){3, 4}, w));
    assert_ok(rnnc_tensors_add(ts, "d", RNNC_F64, 1, (int64_t[]){5}, d));
    assert_ok(rnnc_tensors_add(ts, "lengths", RNNC_I64, 2, (int64_t[]){2, 3}, l));
    assert_ok(rnnc_tensors_add(ts, "i", RNNC_I32, 1, (int64_t[]){7}, i32));
    assert_ok(rnnc_tensors_add(ts, "h", RNNC_F16, 3, (int64_t[]){2, 2, 2}, h));
    assert_ok(rnnc_tensors_add(ts, "bf", RNNC_BF16, 1, (int64_t[]){4}, bf));
    assert_ok(rnnc_tensors_add(ts, "scalar", RNNC_F32, 0, NULL, &scalar));
    assert_ok(rnnc_tensors_add(ts, "empty", RNNC_F32, 2, (int64_t[]){0, 3}, NULL));
    return ts;
}

static void assert_same_set(const rnnc_tensors *a, const rnnc_tensors *b)
{
    assert_int_equal(rnnc_tensors_count(a), rnnc_tensors_count(b));
    for (int i = 0; i < rnnc_tensors_count(a); i++) {
        const char *name = rnnc_tensors_name(a, i);
        assert_string_equal(name, rnnc_tensors_name(b, i));
        const rnnc_tensor *x = rnnc_tensors_get(a, name), *y = rnnc_tensors_get(b, name);
        assert_non_null(x);
        assert_non_null(y);
        assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(x->rank, y->rank);
        for (int k = 0; k < x->rank; k++)
            assert_int_equal(x->shape[k], y->shape[k]);
        assert_int_equal(rt_tensor_nbytes(x), rt_tensor_nbytes(y));
        if (rt_tensor_nbytes(x) > 0)
            assert_memory_equal(x->data, y->data, rt_tensor_nbytes(x));
    }
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)n + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

/* ---------------------------------------------------------------- the set */

static void test_dtypes_and_numel(void **state)
{
    (void)state;
    assert_int_equal(rnnc_dtype_size(RNNC_F32), 4);
    assert_int_equal(rnnc_dtype_size(RNNC_F16), 2);
    assert_int_equal(rnnc_dtype_size(RNNC_BF16), 2);
    assert_int_equal(rnnc_dtype_size(RNNC_F64), 8);
    assert_int_equal(rnnc_dtype_size(RNNC_I64), 8);
    assert_int_equal(rnnc_dtype_size(RNNC_I32), 4);
    assert_int_equal(rnnc_dtype_size((rnnc_dtype)42), 0);
    assert_string_equal(rnnc_dtype_name(RNNC_BF16), "BF16");
    assert_string_equal(rnnc_dtype_name(RNNC_I64), "I64");
    rnnc_tensor t = {.dtype = RNNC_F32, .rank = 3, .shape = {2, 3, 5}};
    assert_int_equal(rnnc_tensor_numel(&t), 30);
    t.rank = 0;
    assert_int_equal(rnnc_tensor_numel(&t), 1);
    t.rank = 2;
    t.shape[0] = INT64_MAX / 2;
    t.shape[1] = 3;
    assert_int_equal(rnnc_tensor_numel(&t), -1);
    assert_int_equal(rnnc_tensor_numel(NULL), -1);
}

static void test_add_errors(void **state)
{
    (void)state;
    rnnc_tensors *ts = NULL;
    float x[4] = {1, 2, 3, 4};
    assert_ok(rnnc_tensors_create(&ts));
    assert_ok(rnnc_tensors_add(ts, "x", RNNC_F32, 1, (int64_t[]){4}, x));
    x[0] = 9; /* the set holds a copy */
    assert_true(((float *)rnnc_tensors_get(ts, "x")->data)[0] == 1.0f);
    assert_status(rnnc_tensors_add(ts, "x", RNNC_F32, 1, (int64_t[]){4}, x),
                  RNNC_ERR_INVALID_ARG);
    assert_status(rnnc_tensors_add(ts, "n", RNNC_F32, 1, (int64_t[]){-1}, x),
                  RNNC_ERR_INVALID_ARG);
    assert_status(rnnc_tensors_add(ts, "r", RNNC_F32, RNNC_MAX_RANK + 1, (int64_t[9]){1}, x),
                  RNNC_ERR_INVALID_ARG);
    assert_status(rnnc_tensors_add(ts, "z", RNNC_F32, 1, (int64_t[]){4}, NULL),
                  RNNC_ERR_INVALID_ARG);
    assert_status(rnnc_tensors_add(ts, "o", RNNC_F32, 2, (int64_t[]){INT64_MAX, 2}, x),
                  RNNC_ERR_INVALID_ARG);
    assert_status(rnnc_tensors_add(ts, "__metadata__", RNNC_F32, 1, (int64_t[]){4}, x),
                  RNNC_ERR_INVALID_ARG);
    assert_status(rnnc_tensors_add(ts, "t", (rnnc_dtype)77, 1, (int64_t[]){4}, x),
                  RNNC_ERR_INVALID_ARG);
    assert_int_equal(rnnc_tensors_count(ts), 1);
    assert_null(rnnc_tensors_get(ts, "y"));
    assert_null(rnnc_tensors_name(ts, 1));
    assert_null(rnnc_tensors_name(ts, -1));
    rnnc_tensors_destroy(ts);
    rnnc_tensors_destroy(NULL);
}

/* Enough names to grow the index several times; every one found again. */
static void test_many_names(void **state)
{
    (void)state;
    rnnc_tensors *ts = NULL;
    char name[32];
    assert_ok(rnnc_tensors_create(&ts));
    for (int64_t i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "t%lld", (long long)i);
        assert_ok(rnnc_tensors_add(ts, name, RNNC_I64, 1, (int64_t[]){1}, &i));
    }
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        assert_string_equal(rnnc_tensors_name(ts, i), name);
        assert_int_equal(*(int64_t *)rnnc_tensors_get(ts, name)->data, i);
    }
    rnnc_tensors_destroy(ts);
}

/* ---------------------------------------------------------------- files */

static void test_round_trip(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 1;
    char *dir = tu_tmpdir();
    char *path = join(dir, "m.safetensors"), *path2 = join(dir, "again.safetensors");
    rnnc_tensors *ts = sample_set(&rng), *back = NULL, *again = NULL;
    assert_ok(rnnc_tensors_save(ts, path));
    assert_ok(rnnc_tensors_load(&back, path));
    assert_same_set(ts, back);
    /* Saving what was loaded gives the same bytes. */
    assert_ok(rnnc_tensors_save(back, path2));
    size_t n1, n2;
    unsigned char *a = slurp(path, &n1), *b = slurp(path2, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | a[i];
    assert_int_equal(hlen % 8, 0);
    /* Overwriting an existing file replaces it whole. */
    assert_ok(rnnc_tensors_add(back, "extra", RNNC_I32, 1, (int64_t[]){1}, (int32_t[]){7}));
    assert_ok(rnnc_tensors_save(back, path));
    assert_ok(rnnc_tensors_load(&again, path));
    assert_same_set(back, again);
    assert_int_equal(count_entries(dir, NULL, 0), 2);
    free(a);
    free(b);
    rnnc_tensors_destroy(ts);
    rnnc_tensors_destroy(back);
    rnnc_tensors_destroy(again);
    free(path);
    free(path2);
    tu_rmtree(dir);
    free(dir);
}

/* What PyTorch's safetensors writes for {"w": a 2x2 float32 tensor}. */
static void test_byte_exact(void **state)
{
    (void)state;
    static const char header[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],"
                                 "\"data_offsets\":[0,16]}}       ";
    uint64_t rng = g_seed ^ 2;
    float w[4];
    unsigned char want[8 + sizeof header - 1 + sizeof w];
    tu_fill_f32(w, 4, &rng, -3, 3);
    assert_int_equal(sizeof header - 1, 64);
    memcpy(want, (unsigned char[8]){64, 0, 0, 0, 0, 0, 0, 0}, 8);
    memcpy(want + 8, header, 64);
    memcpy(want + 72, w, sizeof w);

    char *dir = tu_tmpdir();
    char *in = join(dir, "in.safetensors"), *out = join(dir, "out.safetensors");
    assert_int_equal(tu_write_file(in, want, sizeof want), 0);
    rnnc_tensors *ts = NULL, *mine = NULL;
    assert_ok(rnnc_tensors_load(&ts, in));
    const rnnc_tensor *t = NULL;
    assert_ok(rt_tensor_expect(ts, "w", RNNC_F32, 2, (int64_t[]){2, 2}, &t));
    assert_memory_equal(t->data, w, sizeof w);

    assert_ok(rnnc_tensors_create(&mine));
    assert_ok(rnnc_tensors_add(mine, "w", RNNC_F32, 2, (int64_t[]){2, 2}, w));
    assert_ok(rnnc_tensors_save(mine, out));
    size_t n;
    unsigned char *got = slurp(out, &n);
    assert_int_equal(n, sizeof want);
    assert_memory_equal(got, want, sizeof want);
    free(got);
    rnnc_tensors_destroy(ts);
    rnnc_tensors_destroy(mine);
    free(in);
    free(out);
    tu_rmtree(dir);
    free(dir);
}

/* Metadata, tensors listed out of offset order, unpadded header: all legal. */
static void test_reads_foreign_layout(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 3;
    unsigned char *image;
    size_t len;
    char *dir = tu_tmpdir();
    char *path = raw_file(dir, "f.safetensors",
                          "{\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[16,22]},"
                          "\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]},"
                          "\"__metadata__\":{\"format\":\"pt\"}}",
                          22, &rng, &image, &len);
    rnnc_tensors *ts = NULL;
    assert_ok(rnnc_tensors_load(&ts, path));
    assert_int_equal(rnnc_tensors_count(ts), 2);
    assert_string_equal(rnnc_tensors_name(ts, 0), "b");
    assert_string_equal(rnnc_tensors_name(ts, 1), "a");
    const unsigned char *data = image + len - 22;
    assert_memory_equal(rnnc_tensors_get(ts, "a")->data, data, 16);
    assert_memory_equal(rnnc_tensors_get(ts, "b")->data, data + 16, 6);
    rnnc_tensors_destroy(ts);
    free(image);
    free(path);
    tu_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- bad files */

#define W_HEAD "{\"weight_ih_l0\":{\"dtype\":"

static void test_bad_truncated(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 4;
    unsigned char *image;
    size_t len;
    char *dir = tu_tmpdir();
    char *path = raw_file(dir, "t.safetensors",
                          W_HEAD "\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24, &rng,
                          &image, &len);
    /* Data cut short: the error names the tensor whose bytes are missing. */
    assert_int_equal(tu_write_file(path, image, len - 4), 0);
    expect_bad(path, RNNC_ERR_FORMAT, "weight_ih_l0");
    /* Every shorter prefix fails cleanly too. */
    for (size_t cut = 0; cut < len; cut++) {
        assert_int_equal(tu_write_file(path, image, cut), 0);
        expect_bad(path, RNNC_ERR_FORMAT, NULL);
    }
    free(image);
    free(path);
    tu_rmtree(dir);
    free(dir);
}

static void test_bad_header_length(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = join(dir, "h.safetensors");
    unsigned char buf[24] = {0};
    memcpy(buf + 8, "{}              ", 16);
    put_u64le(buf, 1000); /* past the end */
    assert_int_equal(tu_write_file(path, buf, sizeof buf), 0);
    expect_bad(path, RNNC_ERR_FORMAT, "past the end");
    put_u64le(buf, UINT64_MAX); /* absurd */
    assert_int_equal(tu_write_file(path, buf, sizeof buf), 0);
    expect_bad(path, RNNC_ERR_FORMAT, NULL);
    put_u64le(buf, 16); /* right: an empty set */
    assert_int_equal(tu_write_file(path, buf, sizeof buf), 0);
    rnnc_tensors *ts = NULL;
    assert_ok(rnnc_tensors_load(&ts, path));
    assert_int_equal(rnnc_tensors_count(ts), 0);
    rnnc_tensors_destroy(ts);
    free(path);
    tu_rmtree(dir);
    free(dir);
}

static void test_bad_json(void **state)
{
    (void)state;
    bad_header(W_HEAD "\"F32\",\"shape\":[2,3],", 24, RNNC_ERR_FORMAT, "JSON");
    bad_header("[1, 2]", 0, RNNC_ERR_FORMAT, "object");
    bad_header("{} {}", 0, RNNC_ERR_FORMAT, NULL);
    bad_header(W_HEAD "\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}, \"x\":\"\x01\"}", 24,
               RNNC_ERR_FORMAT, "control");
    bad_header("{\"weight_ih_l0\":[1]}", 0, RNNC_ERR_FORMAT, "weight_ih_l0");
    bad_header(W_HEAD "\"F32\",\"shape\":[2,3]}}", 24, RNNC_ERR_FORMAT, "data_offsets");
    bad_header(W_HEAD "\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24],\"x\":1}}", 24,
               RNNC_ERR_FORMAT, "weight_ih_l0");
    bad_header("{\"__metadata__\":{\"format\":1}}", 0, RNNC_ERR_FORMAT, "__metadata__");
}

static void test_bad_dtype(void **state)
{
    (void)state;
    bad_header(W_HEAD "\"F8\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24, RNNC_ERR_FORMAT,
               "weight_ih_l0");
    bad_header(W_HEAD "4,\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24, RNNC_ERR_FORMAT,
               "weight_ih_l0");
    bad_header(W_HEAD "\"f32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24, RNNC_ERR_FORMAT,
               "dtype");
}

static void test_bad_dims(void **state)
{
    (void)state;
    bad_header(W_HEAD "\"F32\",\"shape\":[-2,3],\"data_offsets\":[0,24]}}", 24, RNNC_ERR_FORMAT,
               "weight_ih_l0");
    bad_header(W_HEAD "\"F32\",\"shape\":[2.5,3],\"data_offsets\":[0,24]}}", 24,
               RNNC_ERR_FORMAT, "weight_ih_l0");
    bad_header(W_HEAD "\"F32\",\"shape\":[\"2\",3],\"data_offsets\":[0,24]}}", 24,
               RNNC_ERR_FORMAT, "weight_ih_l0");
    bad_header(W_HEAD "\"F32\",\"shape\":2,\"data_offsets\":[0,24]}}", 24, RNNC_ERR_FORMAT,
               "weight_ih_l0");
    bad_header(W_HEAD "\"F32\",\"shape\":[1,1,1,1,1,1,1,1,6],\"data_offsets\":[0,24]}}", 24,
               RNNC_ERR_UNSUPPORTED, "weight_ih_l0");
}

static void test_bad_overflow(void **state)
{
    (void)state;
    bad_header(W_HEAD "\"F32\",\"shape\":[4294967296,4294967296,4],\"data_offsets\":[0,16]}}",
               16, RNNC_ERR_FORMAT, "overflow");
    /* Overflowing only once multiplied by the element size. */
    bad_header(W_HEAD "\"F64\",\"shape\":[4294967296,536870912],\"data_offsets\":[0,16]}}",
               16, RNNC_ERR_FORMAT, "overflow");
    bad_header(W_HEAD "\"F32\",\"shape\":[1e300],\"data_offsets\":[0,16]}}", 16,
               RNNC_ERR_FORMAT, "weight_ih_l0");
}

static void test_bad_offsets(void **state)
{
    (void)state;
    bad_header(W_HEAD "\"F32\",\"shape\":[400],\"data_offsets\":[0,1600]}}", 24, RNNC_ERR_FORMAT,
               "weight_ih_l0");
    bad_header(W_HEAD "\"F32\",\"shape\":[0],\"data_offsets\":[30,30]}}", 24, RNNC_ERR_FORMAT,
               "weight_ih_l0");
    bad_header(W_HEAD "\"F32\",\"shape\":[2,3],\"data_offsets\":[24,0]}}", 24, RNNC_ERR_FORMAT,
               "weight_ih_l0");
    bad_header(W_HEAD "\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24,0]}}", 24,
               RNNC_ERR_FORMAT, "weight_ih_l0");
    bad_header(W_HEAD "\"F32\",\"shape\":[2,3],\"data_offsets\":[-8,16]}}", 24, RNNC_ERR_FORMAT,
               "weight_ih_l0");
    /* A hole before, bytes after. */
    bad_header(W_HEAD "\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}", 24, RNNC_ERR_FORMAT,
               "weight_ih_l0");
    bad_header(W_HEAD "\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 24, RNNC_ERR_FORMAT,
               "after");
    /* Two tensors over the same bytes. */
    bad_header(W_HEAD "\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                      "\"weight_hh_l0\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
               24, RNNC_ERR_FORMAT, "overlap");
}

static void test_bad_size_mismatch(void **state)
{
    (void)state;
    bad_header(W_HEAD "\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 20, RNNC_ERR_FORMAT,
               "weight_ih_l0");
    bad_header(W_HEAD "\"F16\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24, RNNC_ERR_FORMAT,
               "weight_ih_l0");
}

static void test_bad_duplicate(void **state)
{
    (void)state;
    bad_header(W_HEAD "\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"weight_ih_l0\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
               16, RNNC_ERR_FORMAT, "duplicate");
    bad_header("{\"__metadata__\":{},\"__metadata__\":{}}", 0, RNNC_ERR_FORMAT, "__metadata__");
}

static void test_bad_not_a_file(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = join(dir, "missing.safetensors");
    expect_bad(path, RNNC_ERR_IO, NULL);
    expect_bad(dir, RNNC_ERR_IO, NULL);
    rnnc_tensors *ts = NULL;
    assert_status(rnnc_tensors_load(&ts, NULL), RNNC_ERR_INVALID_ARG);
    free(path);
    tu_rmtree(dir);
    free(dir);
}

/* Random damage to a good file: a clean status every time, never a crash
 * (the sanitizers watch). */
static void test_mutations(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 5;
    char *dir = tu_tmpdir();
    char *good = join(dir, "good.safetensors"), *bad = join(dir, "bad.safetensors");
    rnnc_tensors *ts = sample_set(&rng);
    assert_ok(rnnc_tensors_save(ts, good));
    rnnc_tensors_destroy(ts);
    size_t len;
    unsigned char *image = slurp(good, &len), *copy = malloc(len);
    assert_non_null(copy);
    size_t header_end = 8 + (size_t)image[0] + ((size_t)image[1] << 8);
    int ok = 0, rejected = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(copy, image, len);
        int flips = 1 + (int)tu_uniform(&rng, 0, 3);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)tu_uniform(&rng, 0, (double)header_end);
            static const char alphabet[] = "{}[]\",:-.0123456789eE ";
            copy[at] = iter % 2 ? (unsigned char)tu_uniform(&rng, 0, 256)
                                : (unsigned char)alphabet[(int)tu_uniform(&rng, 0, 22)];
        }
        assert_int_equal(tu_write_file(bad, copy, len), 0);
        rnnc_tensors *got = NULL;
        rnnc_status s = rnnc_tensors_load(&got, bad);
        if (s == RNNC_OK) {
            assert_non_null(got);
            ok++;
        } else {
            if (s != RNNC_ERR_FORMAT && s != RNNC_ERR_UNSUPPORTED)
                fail_msg("status %s: %s", rnnc_status_string(s), rnnc_last_error());
            assert_null(got);
            rejected++;
        }
        rnnc_tensors_destroy(got);
    }
    assert_true(rejected > 1000);
    fprintf(stderr, "mutations: %d loaded, %d rejected\n", ok, rejected);
    free(image);
    free(copy);
    free(good);
    free(bad);
    tu_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- failed saves */

static rnnc_tensors *one_tensor(int64_t n, uint64_t *rng)
{
    rnnc_tensors *ts = NULL;
    float *x = malloc((size_t)n * sizeof *x);
    assert_non_null(x);
    tu_fill_f32(x, (size_t)n, rng, -1, 1);
    assert_ok(rnnc_tensors_create(&ts));
    assert_ok(rnnc_tensors_add(ts, "x", RNNC_F32, 1, &n, x));
    free(x);
    return ts;
}

static void expect_save_fails(const rnnc_tensors *ts, const char *path)
{
    assert_status(rnnc_tensors_save(ts, path), RNNC_ERR_IO);
    if (!strstr(rnnc_last_error(), path))
        fail_msg("error does not name the path: %s", rnnc_last_error());
}

static void test_save_missing_dir(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 6;
    char *dir = tu_tmpdir();
    char *path = join(dir, "no/such/dir/m.safetensors");
    rnnc_tensors *ts = one_tensor(16, &rng);
    expect_save_fails(ts, path);
    assert_int_equal(count_entries(dir, NULL, 0), 0);
    rnnc_tensors_destroy(ts);
    free(path);
    tu_rmtree(dir);
    free(dir);
}

static void test_save_unwritable_dir(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 7;
    char *dir = tu_tmpdir();
    char *sub = join(dir, "ro");
    char *path = join(sub, "m.safetensors");
    rnnc_tensors *ts = one_tensor(16, &rng);
    assert_int_equal(mkdir(sub, 0555), 0);
    if (access(sub, W_OK) == 0) {
        /* root ignores modes; /proc refuses even root a new file. */
        fprintf(stderr, "running as root: using /proc/self for an unwritable directory\n");
        expect_save_fails(ts, "/proc/self/rnnc-test.safetensors");
        assert_int_equal(access("/proc/self/rnnc-test.safetensors", F_OK), -1);
    } else {
        expect_save_fails(ts, path);
        assert_int_equal(count_entries(sub, NULL, 0), 0);
    }
    rnnc_tensors_destroy(ts);
    free(path);
    free(sub);
    tu_rmtree(dir);
    free(dir);
}

/* The write fails half way (file size limit): the temporary file goes. */
static void test_save_fails_mid_write(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 8;
    char *dir = tu_tmpdir();
    char *path = join(dir, "m.safetensors");
    rnnc_tensors *ts = one_tensor(1 << 16, &rng);
    struct rlimit old, small;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    small = old;
    small.rlim_cur = 4096;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    rnnc_status s = rnnc_tensors_save(ts, path);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    assert_int_equal(s, RNNC_ERR_IO);
    assert_non_null(strstr(rnnc_last_error(), path));
    assert_int_equal(count_entries(dir, NULL, 0), 0);
    rnnc_tensors_destroy(ts);
    free(path);
    tu_rmtree(dir);
    free(dir);
}

/* The rename fails (a directory is in the way): the temporary file goes. */
static void test_save_rename_fails(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 9;
    char *dir = tu_tmpdir();
    char *path = join(dir, "m.safetensors");
    char *inside = join(path, "keep");
    char first[256] = "";
    rnnc_tensors *ts = one_tensor(64, &rng);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(tu_write_file(inside, "k", 1), 0);
    expect_save_fails(ts, path);
    assert_int_equal(count_entries(dir, first, sizeof first), 1);
    assert_string_equal(first, "m.safetensors");
    rnnc_tensors_destroy(ts);
    free(inside);
    free(path);
    tu_rmtree(dir);
    free(dir);
}

/* ---------------------------------------------------------------- expect and convert */

static void test_expect(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 10;
    rnnc_tensors *ts = sample_set(&rng);
    const rnnc_tensor *t = NULL;
    assert_ok(rt_tensor_expect(ts, "weight_ih_l0", RNNC_F32, 2, (int64_t[]){3, 4}, &t));
    assert_ptr_equal(t, rnnc_tensors_get(ts, "weight_ih_l0"));
    assert_ok(rt_tensor_expect(ts, "h", RT_DTYPE_ANY_FLOAT, 3, (int64_t[]){2, 2, 2}, NULL));
    assert_ok(rt_tensor_expect(ts, "scalar", RNNC_F32, 0, NULL, NULL));
    assert_ok(rt_tensor_expect(ts, "lengths", RNNC_I64, -1, NULL, NULL));
    assert_status(rt_tensor_expect(ts, "weight_hh_l0", RNNC_F32, 2, (int64_t[]){3, 4}, &t),
                  RNNC_ERR_NOT_FOUND);
    assert_non_null(strstr(rnnc_last_error(), "weight_hh_l0"));
    assert_status(rt_tensor_expect(ts, "weight_ih_l0", RNNC_F32, 2, (int64_t[]){4, 3}, &t),
                  RNNC_ERR_SHAPE);
    assert_non_null(strstr(rnnc_last_error(), "expected [4, 3] got [3, 4]"));
    assert_status(rt_tensor_expect(ts, "weight_ih_l0", RNNC_F32, 1, (int64_t[]){12}, &t),
                  RNNC_ERR_SHAPE);
    assert_non_null(strstr(rnnc_last_error(), "expected [12] got [3, 4]"));
    assert_status(rt_tensor_expect(ts, "weight_ih_l0", RNNC_F16, 2, (int64_t[]){3, 4}, &t),
                  RNNC_ERR_FORMAT);
    assert_non_null(strstr(rnnc_last_error(), "weight_ih_l0"));
    assert_status(rt_tensor_expect(ts, "lengths", RT_DTYPE_ANY_FLOAT, 2, (int64_t[]){2, 3}, &t),
                  RNNC_ERR_FORMAT);
    rnnc_tensors_destroy(ts);
}

/* Random halves against value = (1024 + mantissa) * 2^(exp - 25). */
static void test_to_f32(void **state)
{
    (void)state;
    enum { N = 4096 };
    uint64_t rng = g_seed ^ 11;
    uint16_t h[N], b[N];
    float src[N], out[N];
    double ref[N], d[N];
    for (int i = 0; i < N; i++) {
        unsigned sign = (unsigned)tu_uniform(&rng, 0, 2);
        unsigned exp = 1 + (unsigned)tu_uniform(&rng, 0, 30); /* normal halves */
        unsigned man = (unsigned)tu_uniform(&rng, 0, 1024);
        h[i] = (uint16_t)(sign << 15 | exp << 10 | man);
        ref[i] = (sign ? -1 : 1) * ldexp(1024.0 + man, (int)exp - 25);
    }
    h[0] = 0x0001; /* the smallest subnormal */
    ref[0] = ldexp(1, -24);
    h[1] = 0x83ff; /* the largest negative subnormal */
    ref[1] = -ldexp(1023, -24);
    h[2] = 0x7bff; /* the largest half */
    ref[2] = 65504;
    rnnc_tensor t = {.dtype = RNNC_F16, .rank = 2, .shape = {64, N / 64}, .data = h};
    tu_poison_f32(out, N);
    assert_ok(rt_tensor_to_f32(&t, out));
    assert_true(tu_rel_err_f32(out, ref, N) == 0);
    h[3] = 0x7c00;
    h[4] = 0xfe00;
    assert_ok(rt_tensor_to_f32(&t, out));
    assert_true(isinf(out[3]) && out[3] > 0);
    assert_true(isnan(out[4]));

    tu_fill_f32(src, N, &rng, -100, 100);
    for (int i = 0; i < N; i++) {
        uint32_t bits;
        memcpy(&bits, &src[i], 4);
        b[i] = (uint16_t)(bits >> 16);
        bits &= 0xffff0000u;
        float f;
        memcpy(&f, &bits, 4);
        ref[i] = f;
    }
    t = (rnnc_tensor){.dtype = RNNC_BF16, .rank = 1, .shape = {N}, .data = b};
    tu_poison_f32(out, N);
    assert_ok(rt_tensor_to_f32(&t, out));
    assert_true(tu_rel_err_f32(out, ref, N) == 0);

    tu_fill_f64(d, N, &rng, -5, 5);
    t = (rnnc_tensor){.dtype = RNNC_F64, .rank = 1, .shape = {N}, .data = d};
    tu_poison_f32(out, N);
    assert_ok(rt_tensor_to_f32(&t, out));
    assert_true(tu_rel_err_f32(out, d, N) <= 1e-7);

    t = (rnnc_tensor){.dtype = RNNC_F32, .rank = 1, .shape = {N}, .data = src};
    tu_poison_f32(out, N);
    assert_ok(rt_tensor_to_f32(&t, out));
    assert_memory_equal(out, src, sizeof src);

    t.dtype = RNNC_I32;
    assert_status(rt_tensor_to_f32(&t, out), RNNC_ERR_FORMAT);
}

int main(void)
{
    g_seed = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes_and_numel),
        cmocka_unit_test(test_add_errors),
        cmocka_unit_test(test_many_names),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_byte_exact),
        cmocka_unit_test(test_reads_foreign_layout),
        cmocka_unit_test(test_bad_truncated),
        cmocka_unit_test(test_bad_header_length),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_bad_dtype),
        cmocka_unit_test(test_bad_dims),
        cmocka_unit_test(test_bad_overflow),
        cmocka_unit_test(test_bad_offsets),
        cmocka_unit_test(test_bad_size_mismatch),
        cmocka_unit_test(test_bad_duplicate),
        cmocka_unit_test(test_bad_not_a_file),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_save_missing_dir),
        cmocka_unit_test(test_save_unwritable_dir),
        cmocka_unit_test(test_save_fails_mid_write),
        cmocka_unit_test(test_save_rename_fails),
        cmocka_unit_test(test_expect),
        cmocka_unit_test(test_to_f32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
