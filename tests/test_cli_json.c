/* test_cli_json.c: `--json` of rnnc run, show, diff and cache list is JSON
 * that cJSON parses, with the fields docs/cli.md names and values that match
 * the files: the command (RNNC_BIN) is run on the repository's PyTorch
 * files (RNNC_TEST_DATA) into a temporary directory. */
#define _GNU_SOURCE /* popen */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

static char *g_dir;

/* Runs `rnnc ARGS` (stderr dropped); its stdout parsed as JSON, and *rc its exit code. */
static cJSON *run_json(int *rc, const char *fmt, ...)
{
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>/dev/null", g_dir, getenv("RNNC_BIN"), args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    for (size_t k; (k = fread(buf + n, 1, cap - 1 - n, p)) > 0;)
        n += k;
    buf[n] = '\0';
    int st = pclose(p);
    *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    cJSON *j = cJSON_Parse(buf);
    if (!j)
        fail_msg("rnnc %s: not JSON:\n%s", args, buf);
    free(buf);
    return j;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v))
        fail_msg("'%s' is not a string", key);
    return v->valuestring;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v))
        fail_msg("'%s' is not a number", key);
    return v->valuedouble;
}

static void shape_is(const cJSON *o, int rank, const int64_t *want)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "shape");
    assert_true(cJSON_IsArray(s));
    assert_int_equal(cJSON_GetArraySize(s), rank);
    for (int k = 0; k < rank; k++)
        assert_int_equal((int64_t)cJSON_GetArrayItem(s, k)->valuedouble, want[k]);
}

static void run_and_show(void **state)
{
    (void)state;
    int rc;
    const char *data = getenv("RNNC_TEST_DATA");
    cJSON *r = run_json(&rc,
                        "run --cell lstm --weights %s/model.state_dict.safetensors --input "
                        "%s/lstm_2l_bi_proj.io.safetensors --out y.st --backend interp --json",
                        data, data);
    assert_int_equal(rc, 0);
    assert_string_equal(str(r, "cell"), "lstm");
    assert_string_equal(str(r, "backend"), "interp");
    assert_string_equal(str(r, "weights_prefix"), "encoder.lstm.");
    assert_int_equal(num(r, "weights_ignored"), 3);
    assert_int_equal(num(r, "hidden_size"), 6);
    assert_int_equal(num(r, "proj_size"), 3);
    assert_int_equal(num(r, "layers"), 2);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "bidirectional")));
    assert_true(num(r, "ms") >= 0);
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(r, "outputs");
    assert_int_equal(cJSON_GetArraySize(outs), 3);
    assert_string_equal(str(cJSON_GetArrayItem(outs, 0), "name"), "y");
    shape_is(cJSON_GetArrayItem(outs, 0), 3, (const int64_t[]){5, 2, 6});
    cJSON_Delete(r);

    /* show: the same shapes, and min <= mean <= max, finite */
    cJSON *s = run_json(&rc, "show y.st --json");
    assert_int_equal(rc, 0);
    assert_string_equal(str(s, "file"), "y.st");
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(s, "tensors");
    assert_int_equal(cJSON_GetArraySize(ts), 3);
    const cJSON *t;
    cJSON_ArrayForEach(t, ts) {
        assert_string_equal(str(t, "dtype"), "F32");
        double lo = num(t, "min"), hi = num(t, "max"), mean = num(t, "mean");
        assert_true(isfinite(lo) && lo <= mean && mean <= hi && lo < hi);
    }
    shape_is(cJSON_GetArrayItem(ts, 1), 3, (const int64_t[]){4, 2, 3});
    cJSON_Delete(s);
}

static void diff(void **state)
{
    (void)state;
    int rc;
    const char *data = getenv("RNNC_TEST_DATA");
    /* against PyTorch's file of inputs and outputs: the outputs agree, the inputs are skipped */
    cJSON *d = run_json(&rc, "diff y.st %s/lstm_2l_bi_proj.io.safetensors --json", data);
    assert_int_equal(rc, 0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "ok")));
    assert_true(num(d, "max_rel_error") <= 1e-5);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d, "tensors")), 3);
    const cJSON *sk = cJSON_GetObjectItemCaseSensitive(d, "skipped");
    assert_int_equal(cJSON_GetArraySize(sk), 3); /* x, h0, c0 */
    cJSON_Delete(d);
    /* a tolerance no float run meets: ok false, exit 1, still JSON */
    d = run_json(&rc, "diff y.st %s/lstm_2l_bi_proj.io.safetensors --json --tol 1e-12", data);
    assert_int_equal(rc, 1);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(d, "ok")));
    assert_true(num(d, "max_rel_error") > 1e-12);
    cJSON_Delete(d);
}

static void cache_list(void **state)
{
    (void)state;
    int rc;
    cJSON *c = run_json(&rc, "cache list --json");
    assert_int_equal(rc, 0);
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(c, "entries");
    assert_true(cJSON_IsArray(entries));
    assert_int_equal(num(c, "count"), cJSON_GetArraySize(entries));
    const cJSON *e;
    double bytes = 0;
    cJSON_ArrayForEach(e, entries) {
        /* sm 0: the cpu backend's object files (`rnnc run` above ran on cpu, where built) */
        bool cpu = num(e, "sm") == 0;
        assert_true((num(e, "sm") >= 10 || cpu) && num(e, "bytes") > 0);
        assert_true(!cpu || strncmp(str(e, "kernel"), "cpu ", 4) == 0);
        assert_int_equal(strlen(str(e, "key")), 32 + strlen(".cubin"));
        bytes += num(e, "bytes");
    }
    assert_true(num(c, "bytes") >= bytes);
    cJSON_Delete(c);
    /* the cache off: still an object, directory null */
    setenv("RNNC_CACHE", "0", 1);
    c = run_json(&rc, "cache list --json");
    unsetenv("RNNC_CACHE");
    assert_int_equal(rc, 0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c, "directory")));
    assert_int_equal(num(c, "count"), 0);
    cJSON_Delete(c);
}

int main(void)
{
    if (!getenv("RNNC_BIN") || !getenv("RNNC_TEST_DATA")) {
        fprintf(stderr, "RNNC_BIN and RNNC_TEST_DATA name the command and tests/data\n");
        return 1;
    }
    g_dir = tu_tmpdir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_and_show),
        cmocka_unit_test(diff),
        cmocka_unit_test(cache_list),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tu_rmtree(g_dir);
    free(g_dir);
    return rc;
}
