/*
 * test_golden.c: every built-in cell's dump after each stage (ir, opt,
 * schedule under each hoist setting, backward, and the CUDA source where
 * the generator is built) against the files in tests/golden.
 * A pass that changes what it makes of a cell shows up here as a diff.
 * After an intended change: RNNC_UPDATE_GOLDEN=1 ctest -R test_golden,
 * then read the diff before committing it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (buf)
        buf[got] = 0;
    return buf;
}

static void check(const char *cell, const char *stage, int hoist, const char *text)
{
    static const char *const hoists[] = {"all", "matmul", "none"};
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/golden/%s.%s%s%s.txt", getenv("RNNC_SOURCE_DIR"), cell,
             stage, strcmp(stage, "schedule") == 0 ? "." : "",
             strcmp(stage, "schedule") == 0 ? hoists[hoist] : "");
    if (getenv("RNNC_UPDATE_GOLDEN")) {
        assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
        return;
    }
    char *want = read_all(path);
    if (!want)
        fail_msg("missing golden file %s (RNNC_UPDATE_GOLDEN=1 writes it)", path);
    if (strcmp(want, text) != 0)
        fail_msg("%s differs from the golden file; got:\n%s", path, text);
    free(want);
}

static void test_builtins(void **st)
{
    (void)st;
    const char *const *names = rnnc_cell_builtin_names();
    int n = 0;
    for (; names[n]; n++) {
        rnnc_cell *c;
        char *text;
        assert_ok(rnnc_cell_builtin(&c, names[n], NULL));
        assert_ok(rnnc_cell_dump(c, "ir", 0, 0, 0, 0, 0, &text));
        check(names[n], "ir", 0, text);
        rnnc_free(text);
        assert_ok(rnnc_cell_dump(c, "opt", 0, 0, 0, 0, 0, &text));
        check(names[n], "opt", 0, text);
        rnnc_free(text);
        assert_ok(rnnc_cell_dump(c, "backward", 0, 0, 0, 0, 0, &text));
        check(names[n], "backward", 0, text);
        rnnc_free(text);
        for (int h = 0; h < 3; h++) {
            assert_ok(rnnc_cell_dump(c, "schedule", 32, 64, 0, 4, h, &text));
            check(names[n], "schedule", h, text);
            rnnc_free(text);
        }
        /* the CUDA source at the same shape, default tuning for an H100
         * (where the generator is built) */
        rnnc_status st = rnnc_cell_dump(c, "cuda", 32, 64, 0, 4, 0, &text);
        if (st == RNNC_OK) {
            check(names[n], "cuda", 0, text);
            rnnc_free(text);
        } else {
            assert_int_equal(st, RNNC_ERR_NOT_BUILT);
        }
        rnnc_cell_destroy(c);
    }
    assert_true(n >= 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_builtins)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
