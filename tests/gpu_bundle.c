/* gpu_bundle.c (label gpu): autotuning and bundles on a device.
 *  - autotune: the first fused model of a shape times candidates, records
 *    the winner and matches the interpreter; a second model in a fresh
 *    state (memory forgotten) starts on the record; RNNC_AUTOTUNE=0 uses
 *    the heuristic;
 *  - bundle: `rnnc_bundle_compile` for this device, then a child process
 *    with NVRTC hidden loads it (rnnc_bundle_load), creates a fused model
 *    whose kernels come from the bundle, and matches the interpreter
 *    (rel err <= 1e-5); a shape or batch size the bundle lacks and a bundle
 *    for another arch are refused with messages that say so.
 * Exits 77 without a GPU.
 *   gpu_bundle --child MODE PATH SEED   (the child; NVRTC hidden by the parent) */
#define _GNU_SOURCE
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api.h"
#include "runtime/fused/fused.h"

#define TOL 1e-5
#define T_STEPS 20
#define BATCH 32
#define INPUT 128
#define HIDDEN 256

static char g_self[4096];

static rnnc_status make(rnnc_backend be, int64_t hidden, rnnc_model **out)
{
    rnnc_cell *cell = NULL;
    rnnc_status st = rnnc_cell_builtin(&cell, "lstm", NULL);
    if (st)
        return st;
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = INPUT;
    d.hidden_size = hidden;
    d.backend = be;
    st = rnnc_model_create(out, &d);
    rnnc_cell_destroy(cell);
    return st;
}

/* The same weights for the same seed, whatever the backend. */
static rnnc_status set_weights(rnnc_model *m, uint64_t seed)
{
    rnnc_status st = RNNC_OK;
    for (int i = 0; st == RNNC_OK && i < rnnc_model_weight_count(m); i++) {
        const char *name;
        int64_t shape[RNNC_MAX_RANK], n = 1;
        int rank;
        if ((st = rnnc_model_weight_info(m, i, &name, RNNC_MAX_RANK, shape, &rank)))
            break;
        for (int r = 0; r < rank; r++)
            n *= shape[r];
        float *w = malloc((size_t)n * sizeof *w);
        if (!w)
            return RNNC_ERR_OUT_OF_MEMORY;
        tu_fill_f32(w, (size_t)n, &seed, -0.2, 0.2);
        st = rnnc_model_set_weight(m, name, w, n);
        free(w);
    }
    return st;
}

typedef struct io {
    int64_t batch;
    float *x, *y, *h, *c;
} io;

static void io_alloc(io *b, int64_t batch, uint64_t seed)
{
    size_t nx = (size_t)(T_STEPS * batch * INPUT), ny = (size_t)(T_STEPS * batch * HIDDEN);
    b->batch = batch;
    b->x = malloc(nx * sizeof *b->x);
    b->y = malloc(ny * sizeof *b->y);
    b->h = malloc((size_t)(batch * HIDDEN) * sizeof *b->h);
    b->c = malloc((size_t)(batch * HIDDEN) * sizeof *b->c);
    seed ^= 0x5555u;
    tu_fill_f32(b->x, nx, &seed, -1, 1);
}

static void io_free(io *b)
{
    free(b->x);
    free(b->y);
    free(b->h);
    free(b->c);
}

/* One forward into poisoned outputs. */
static rnnc_status run(rnnc_model *m, io *b)
{
    tu_poison_f32(b->y, (size_t)(T_STEPS * b->batch * HIDDEN));
    tu_poison_f32(b->h, (size_t)(b->batch * HIDDEN));
    tu_poison_f32(b->c, (size_t)(b->batch * HIDDEN));
    void *fin[2] = {b->h, b->c};
    rnnc_forward_args a = {.seq_len = T_STEPS, .batch = b->batch, .x = b->x, .y = b->y,
                           .final = fin};
    return rnnc_model_forward(m, &a);
}

static double rel_err(const float *out, const float *ref, size_t n)
{
    double *r = malloc(n * sizeof *r);
    for (size_t i = 0; i < n; i++)
        r[i] = ref[i];
    double e = tu_rel_err_f32(out, r, n);
    free(r);
    return e;
}

/* max rel err of y, h and c of `got` against the interpreter on the same data. */
static double against_interp(const io *got, uint64_t seed)
{
    rnnc_model *ref = NULL;
    io want;
    io_alloc(&want, got->batch, seed);
    if (make(RNNC_BACKEND_INTERP, HIDDEN, &ref) || set_weights(ref, seed) || run(ref, &want)) {
        fprintf(stderr, "interp: %s\n", rnnc_last_error());
        return INFINITY;
    }
    size_t ny = (size_t)(T_STEPS * got->batch * HIDDEN), ns = (size_t)(got->batch * HIDDEN);
    double e = rel_err(got->y, want.y, ny), eh = rel_err(got->h, want.h, ns),
           ec = rel_err(got->c, want.c, ns);
    e = eh > e ? eh : e;
    e = ec > e ? ec : e;
    io_free(&want);
    rnnc_model_destroy(ref);
    return e;
}

static const rt_fused *fused_of(const rnnc_model *m)
{
    return (const rt_fused *)m->be_state;
}

/* ---------------------------------------------------------------- autotune */

static void test_autotune(void **state)
{
    (void)state;
    uint64_t seed = tu_seed();
    unsetenv("RNNC_AUTOTUNE");
    unsetenv("RNNC_FUSED_TILE");
    rnnc_model *m = NULL;
    io b;
    io_alloc(&b, BATCH, seed);
    assert_ok(make(RNNC_BACKEND_FUSED, HIDDEN, &m));
    assert_ok(set_weights(m, seed));
    assert_ok(run(m, &b));
    const rt_fused *f = fused_of(m);
    assert_string_equal(f->tuning_from, "autotuning");
    double e = against_interp(&b, seed);
    print_message("autotuned %s: rel err %.3g\n", f->plan.tuning, e);
    assert_true(e <= TOL);
    /* the winner is recorded */
    char key[512], text[64], want[64];
    rt_fused_shape_key(f, BATCH, key, sizeof key);
    rt_fused_tuning_text(f->tuning, want, sizeof want);
    assert_ok(rt_tuning_get(key, text, sizeof text));
    assert_string_equal(text, want);
    /* a second model in this process does not tune again */
    rnnc_model *m2 = NULL;
    assert_ok(make(RNNC_BACKEND_FUSED, HIDDEN, &m2));
    assert_ok(set_weights(m2, seed));
    assert_ok(run(m2, &b));
    assert_non_null(strstr(fused_of(m2)->tuning_from, "earlier in this process"));
    rnnc_model_destroy(m2);
    /* nor does one that has only the record (a later process) */
    rt_fused_tune_reset();
    assert_ok(make(RNNC_BACKEND_FUSED, HIDDEN, &m2));
    assert_ok(set_weights(m2, seed));
    assert_ok(run(m2, &b));
    assert_string_equal(fused_of(m2)->tuning_from, "the tuning record");
    assert_string_equal(fused_of(m2)->plan.tuning, f->plan.tuning);
    assert_true(against_interp(&b, seed) <= TOL);
    rnnc_model_destroy(m2);
    /* RNNC_AUTOTUNE=0 with no record: the heuristic */
    setenv("RNNC_AUTOTUNE", "0", 1);
    assert_ok(make(RNNC_BACKEND_FUSED, HIDDEN, &m2));
    assert_ok(set_weights(m2, seed));
    io b3;
    io_alloc(&b3, 3, seed);
    assert_ok(run(m2, &b3));
    assert_string_equal(fused_of(m2)->tuning_from, "the heuristic (RNNC_AUTOTUNE=0)");
    unsetenv("RNNC_AUTOTUNE");
    io_free(&b3);
    rnnc_model_destroy(m2);
    rnnc_model_destroy(m);
    io_free(&b);
}

/* ---------------------------------------------------------------- bundles, in the child */

static int fail_child(int code, const char *what)
{
    fprintf(stderr, "child: %s: %s\n", what, rnnc_last_error());
    return code;
}

/* MODE "run": the bundle holds this model for this device. */
static int child_run(const char *path, uint64_t seed)
{
    rnnc_model *m = NULL, *other = NULL;
    io b;
    if (rt_nvrtc_available())
        return fail_child(1, "NVRTC should be hidden");
    if (rnnc_bundle_load(path))
        return fail_child(2, "load");
    if (make(RNNC_BACKEND_FUSED, HIDDEN, &m) || set_weights(m, seed))
        return fail_child(3, "model from the bundle");
    io_alloc(&b, BATCH, seed);
    if (run(m, &b))
        return fail_child(4, "forward from the bundle");
    const rt_fused *f = fused_of(m);
    if (f->kern.origin != RT_FROM_BUNDLE || strcmp(f->tuning_from, "the loaded bundle") != 0)
        return fail_child(5, "kernels or tuning not from the bundle");
    double e = against_interp(&b, seed);
    fprintf(stderr, "child: %s from the bundle, rel err %.3g\n", f->plan.tuning, e);
    if (!(e <= TOL))
        return fail_child(6, "fused from the bundle differs from the interpreter");
    io_free(&b);
    /* a batch size the bundle lacks */
    io_alloc(&b, 5, seed);
    if (run(m, &b) == RNNC_OK || !strstr(rnnc_last_error(), "not in the loaded bundle"))
        return fail_child(7, "B=5 is not in the bundle, yet");
    io_free(&b);
    /* a model the bundle lacks */
    if (make(RNNC_BACKEND_FUSED, HIDDEN / 2, &other) != RNNC_ERR_UNSUPPORTED ||
        !strstr(rnnc_last_error(), "no loaded bundle"))
        return fail_child(8, "H/2 is not in the bundle, yet");
    rnnc_model_destroy(m);
    rnnc_bundle_unload_all();
    return 0;
}

/* MODE "other": the bundle holds this model for another arch only. */
static int child_other(const char *path)
{
    rnnc_model *m = NULL;
    if (rnnc_bundle_load(path))
        return fail_child(2, "load");
    if (make(RNNC_BACKEND_FUSED, HIDDEN, &m) != RNNC_ERR_UNSUPPORTED ||
        !strstr(rnnc_last_error(), "rebuild the bundle"))
        return fail_child(9, "a bundle for another arch was not refused clearly");
    fprintf(stderr, "child: refused as expected: %s\n", rnnc_last_error());
    rnnc_bundle_unload_all();
    return 0;
}

static void run_child(const char *mode, const char *path, uint64_t seed)
{
    char seed_text[32];
    snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)seed);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("RNNC_NVRTC_PATH", "/nonexistent/libnvrtc.so", 1);
        setenv("RNNC_CACHE", "0", 1);
        execl(g_self, g_self, "--child", mode, path, seed_text, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_bundle_without_nvrtc(void **state)
{
    (void)state;
    int sm = 0, sms = 0;
    assert_ok(rt_cuda_arch(0, &sm));
    assert_ok(rt_cuda_sm_count(0, &sms));
    rnnc_cell *cell = NULL;
    assert_ok(rnnc_cell_builtin(&cell, "lstm", NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = INPUT;
    d.hidden_size = HIDDEN;
    const int64_t batches[] = {1, BATCH};
    const int archs[] = {sm}, other[] = {sm == 80 ? 90 : 80};
    char path[4200], path_other[4200];
    snprintf(path, sizeof path, "%s/lstm.rnncpkg", tu_cache_dir());
    snprintf(path_other, sizeof path_other, "%s/other.rnncpkg", tu_cache_dir());
    double t0 = cm_now_ms();
    assert_ok(rnnc_bundle_compile(&d, batches, 2, archs, 1, sms, path));
    print_message("bundle for sm_%d (%d SMs) compiled in %.0f ms\n", sm, sms, cm_now_ms() - t0);
    assert_ok(rnnc_bundle_compile(&d, batches, 1, other, 1, sms, path_other));
    rnnc_cell_destroy(cell);
    run_child("run", path, tu_seed());
    run_child("other", path_other, 0);
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--child") == 0)
        return strcmp(argv[2], "run") == 0 ? child_run(argv[3], strtoull(argv[4], NULL, 10))
                                           : child_other(argv[3]);
    ssize_t len = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (len <= 0)
        return 1;
    g_self[len] = '\0';
    tu_require_gpu();
    setenv("RNNC_LOG", "info", 1); /* the log says what was tuned and where kernels came from */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_autotune),
        cmocka_unit_test(test_bundle_without_nvrtc),
    };
    /* fresh records and kernels: the group's own cache directory */
    return cmocka_run_group_tests(tests, tu_cache_dir_setup, tu_cache_dir_teardown);
}
