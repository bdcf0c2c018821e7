/* gpu_auto.c: what AUTO picks per call on a GPU.  The fused backend takes
 * the batches it tiles; where its kernels would take batch passes (an LSTM
 * at B x H over about 2M, codegen/cuda/cuda_passes.c), which ran at 0.4 to
 * 0.75x of cuDNN on the H100, a cell cuDNN runs goes to cuDNN, forward and
 * training; a cell cuDNN does not run stays on the fused backend there.
 * Each call's outputs must be written (poisoned before).  With autotuning
 * on (the tests' environment turns it off), the first call of a shape both
 * could run races them and records the winner with the tuning records,
 * which later models follow (test_race).  Exits 77 without a GPU. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define T_ 3

static uint64_t rng;

/* One forward (training or not) of an AUTO model of `cell` at H = I and
 * batch B; the backend that ran it. */
static rnnc_backend run(const char *cell_name, int64_t H, int64_t B, bool training)
{
    rnnc_cell *cell;
    assert_ok(rnnc_cell_builtin(&cell, cell_name, NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = H;
    d.hidden_size = H;
    rnnc_model *m = NULL;
    assert_ok(rnnc_model_create(&m, &d));
    tu_set_random_weights(m, &rng, -0.3, 0.3);
    size_t nx = (size_t)(T_ * B * H);
    float *x = malloc(sizeof(float) * nx), *y = malloc(sizeof(float) * nx);
    tu_fill_f32(x, nx, &rng, -1, 1);
    tu_poison_f32(y, nx);
    rnnc_forward_args a = {.seq_len = T_, .batch = B, .x = x, .y = y, .training = training};
    assert_ok(rnnc_model_forward(m, &a));
    for (size_t i = 0; i < nx; i += 997)
        assert_true(isfinite(y[i]) && fabsf(y[i]) <= 1.f);
    rnnc_backend b = rnnc_model_backend(m);
    printf("%-16s H=%-5lld B=%-6lld %-9s ran on %s\n", cell_name, (long long)H, (long long)B,
           training ? "training" : "inference", rnnc_backend_name(b));
    free(x), free(y);
    rnnc_model_destroy(m);
    rnnc_cell_destroy(cell);
    return b;
}

static void test_picks(void **st)
{
    (void)st;
    bool cudnn = rnnc_backend_available(RNNC_BACKEND_CUDNN);
    rnnc_backend big = cudnn ? RNNC_BACKEND_CUDNN : RNNC_BACKEND_FUSED;
    for (int tr = 0; tr < 2; tr++) {
        assert_int_equal(run("lstm", 64, 64, tr), RNNC_BACKEND_FUSED);
        assert_int_equal(run("lstm", 64, 32768, tr), big);
        assert_int_equal(run("gru", 64, 32768, tr), big);
        /* no cuDNN layernorm LSTM: the passes are the fastest there is */
        assert_int_equal(run("layernorm_lstm", 128, 16384, tr), RNNC_BACKEND_FUSED);
    }
    /* the GRU's forward at B = 2048, H = 1024 fits one pass, its backward
     * does not: training goes to cuDNN, inference stays */
    assert_int_equal(run("gru", 1024, 2048, false), RNNC_BACKEND_FUSED);
    assert_int_equal(run("gru", 1024, 2048, true), big);
}

/* The race's record in dir (a tuning record whose key starts "auto "):
 * its path into path, its value into val; false where there is none. */
static bool race_record(const char *dir, char *path, size_t np, char *val, size_t nv)
{
    DIR *d = opendir(dir);
    bool found = false;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        char buf[1024] = "";
        snprintf(path, np, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        char *nl = strchr(buf, '\n');
        if (strncmp(buf, "auto ", 5) == 0 && nl) {
            snprintf(val, nv, "%.*s", (int)strcspn(nl + 1, "\n"), nl + 1);
            found = true;
        }
    }
    if (d)
        closedir(d);
    return found;
}

static void test_race(void **st)
{
    (void)st;
    if (!rnnc_backend_available(RNNC_BACKEND_CUDNN))
        skip();
    char *cache = tu_tmpdir(), tuning[512], path[1024], val[32];
    snprintf(tuning, sizeof tuning, "%s/tuning", cache);
    const char *had = getenv("RNNC_CACHE_DIR");
    char *was = had ? strdup(had) : NULL;
    setenv("RNNC_CACHE_DIR", cache, 1);
    setenv("RNNC_AUTOTUNE", "1", 1);
    /* the race: one record, "fused" or "cudnn", the backend that ran */
    rnnc_backend first = run("lstm", 256, 64, false);
    assert_true(race_record(tuning, path, sizeof path, val, sizeof val));
    assert_string_equal(val, rnnc_backend_name(first));
    /* a new model of the same shape follows the record */
    assert_int_equal(run("lstm", 256, 64, false), first);
    /* and a record says which: flipped, the next model runs on the other */
    bool was_fused = first == RNNC_BACKEND_FUSED;
    char rec[1024] = "";
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(rec, 1, sizeof rec - 1, f);
    fclose(f);
    rec[n] = '\0';
    char *at = strstr(rec, was_fused ? "\nfused\n" : "\ncudnn\n");
    assert_non_null(at);
    memcpy(at + 1, was_fused ? "cudnn" : "fused", 5);
    assert_non_null(f = fopen(path, "w"));
    fputs(rec, f);
    fclose(f);
    assert_int_equal(run("lstm", 256, 64, false),
                     was_fused ? RNNC_BACKEND_CUDNN : RNNC_BACKEND_FUSED);
    setenv("RNNC_AUTOTUNE", "0", 1);
    if (was)
        setenv("RNNC_CACHE_DIR", was, 1);
    free(was);
    tu_rmtree(cache);
    free(cache);
}

int main(void)
{
    tu_require_gpu();
    rng = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_picks),
        cmocka_unit_test(test_race),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
