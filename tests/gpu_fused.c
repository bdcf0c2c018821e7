/* gpu_fused.c (label gpu): the fused backend against the interpreter for
 * every built-in cell, at B=1, B=3, H=1, H=100, H=257, I != H, T=1, T=1000,
 * the fastrnns shape (T=100, B=64, I=H=512), every hoist setting, batch_first,
 * device pointers and the autotuner's register tiles; outputs poisoned before
 * each run; max error relative to max |reference| <= 1e-5.  Exits 77 without
 * a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device/device.h"
#include "testutil.h"

#define TOL 1e-5

typedef struct run_case {
    const char *cell;
    int64_t T, B, I, H;
    rnnc_hoist hoist;
    bool batch_first, device_ptrs;
    bool unit_gains; /* gains near 1: the drift is checked loosely (docs/interpreter.md) */
    bool in_place;   /* device pointers, final states written over the initial ones */
} run_case;

typedef struct pair {
    rnnc_model *fused, *ref;
    bool unit_gains;
} pair;

static rnnc_status make_model(const run_case *rc, rnnc_backend be, rnnc_model **out)
{
    rnnc_cell *cell = NULL;
    rnnc_status st = rnnc_cell_builtin(&cell, rc->cell, NULL);
    if (st)
        return st;
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = rc->I;
    d.hidden_size = rc->H;
    d.backend = be;
    d.hoist = rc->hoist;
    d.batch_first = rc->batch_first;
    st = rnnc_model_create(out, &d);
    rnnc_cell_destroy(cell);
    return st;
}

/* Same random weights into both models (gains near 1 keep layernorm sane). */
static void set_weights(pair *p, uint64_t *rng, int64_t H)
{
    int n = rnnc_model_weight_count(p->fused);
    assert_int_equal(n, rnnc_model_weight_count(p->ref));
    double k = 1.0 / sqrt((double)H);
    for (int i = 0; i < n; i++) {
        const char *name;
        int64_t shape[RNNC_MAX_RANK];
        int rank;
        assert_ok(rnnc_model_weight_info(p->fused, i, &name, RNNC_MAX_RANK, shape, &rank));
        int64_t count = 1;
        for (int r = 0; r < rank; r++)
            count *= shape[r];
        float *w = malloc((size_t)count * sizeof *w);
        assert_non_null(w);
        /* Layernorm gains near 1 make layernorm_lstm chaotic over long
         * sequences (the normalisation undoes the small recurrent weights),
         * so an fp32 run drifts from the double oracle whatever computes it;
         * small gains keep the recurrence contractive and the check exact.
         * Gains up to 0.3 were not always small enough: at T = 100 a seed
         * grew to 1.7e-5 on the CPU backend and 1e-5 on the fused one; with
         * gains up to 0.2 its error stays flat (docs/interpreter.md).
         * test_layernorm_drift shows the drift with gains near 1. */
        bool gain = strstr(name, "layernorm") && strstr(name, "weight");
        double lo = gain ? (p->unit_gains ? 0.9 : 0.1) : -k, hi = gain ? (p->unit_gains ? 1.1 : 0.2) : k;
        tu_fill_f32(w, (size_t)count, rng, lo, hi);
        assert_ok(rnnc_model_set_weight(p->fused, name, w, count));
        assert_ok(rnnc_model_set_weight(p->ref, name, w, count));
        free(w);
    }
}

static float *dev_copy(const float *h, size_t n)
{
    CUdeviceptr d = 0;
    assert_ok(rt_dev_alloc(&d, n * 4));
    if (h)
        assert_ok(rt_dev_upload(d, h, n * 4, NULL));
    return (float *)(uintptr_t)d;
}

static void run_one(const run_case *rc, uint64_t *rng)
{
    pair p = {.unit_gains = rc->unit_gains};
    assert_ok(make_model(rc, RNNC_BACKEND_INTERP, &p.ref));
    rnnc_status st = make_model(rc, RNNC_BACKEND_FUSED, &p.fused);
    if (st)
        fail_msg("%s: fused model: %s", rc->cell, rnnc_last_error());
    set_weights(&p, rng, rc->H);
    int ns = 0;
    {
        rnnc_cell *cell = NULL;
        assert_ok(rnnc_cell_builtin(&cell, rc->cell, NULL));
        ns = rnnc_cell_state_count(cell);
        rnnc_cell_destroy(cell);
    }
    size_t nx = (size_t)(rc->T * rc->B * rc->I), ny = (size_t)(rc->T * rc->B * rc->H);
    size_t nst = (size_t)(rc->B * rc->H);
    float *x = malloc(nx * 4), *y = malloc(ny * 4), *yr = malloc(ny * 4);
    float *init[4], *fin[4], *finr[4];
    assert_true(ns <= 4);
    tu_fill_f32(x, nx, rng, -1, 1);
    for (int s = 0; s < ns; s++) {
        init[s] = malloc(nst * 4);
        fin[s] = malloc(nst * 4);
        finr[s] = malloc(nst * 4);
        tu_fill_f32(init[s], nst, rng, -0.5, 0.5);
        tu_poison_f32(fin[s], nst);
    }
    tu_poison_f32(y, ny);
    rnnc_forward_args a = {.seq_len = rc->T, .batch = rc->B, .x = x, .y = yr,
                           .init = (const void *const *)init, .final = (void *const *)finr};
    assert_ok(rnnc_model_forward(p.ref, &a));
    if (!rc->device_ptrs) {
        a.y = y;
        a.final = (void *const *)fin;
        st = rnnc_model_forward(p.fused, &a);
        if (st)
            fail_msg("%s: fused forward: %s", rc->cell, rnnc_last_error());
    } else {
        float *dx = dev_copy(x, nx), *dy = dev_copy(y, ny), *di[4], *df[4];
        for (int s = 0; s < ns; s++) {
            di[s] = dev_copy(init[s], nst);
            df[s] = rc->in_place ? di[s] : dev_copy(fin[s], nst);
        }
        rnnc_forward_args d = {.seq_len = rc->T, .batch = rc->B, .x = dx, .y = dy,
                               .init = (const void *const *)di, .final = (void *const *)df,
                               .device_pointers = true};
        assert_ok(rnnc_model_forward(p.fused, &d));
        assert_ok(rt_dev_download(y, (CUdeviceptr)(uintptr_t)dy, ny * 4, NULL));
        for (int s = 0; s < ns; s++)
            assert_ok(rt_dev_download(fin[s], (CUdeviceptr)(uintptr_t)df[s], nst * 4, NULL));
        assert_ok(rt_dev_sync(NULL));
        rt_dev_free((CUdeviceptr)(uintptr_t)dx);
        rt_dev_free((CUdeviceptr)(uintptr_t)dy);
        for (int s = 0; s < ns; s++) {
            rt_dev_free((CUdeviceptr)(uintptr_t)di[s]);
            if (!rc->in_place)
                rt_dev_free((CUdeviceptr)(uintptr_t)df[s]);
        }
    }
    double *ref = malloc(ny * sizeof *ref);
    for (size_t i = 0; i < ny; i++)
        ref[i] = yr[i];
    double err = tu_rel_err_f32(y, ref, ny);
    double ferr = 0;
    for (int s = 0; s < ns; s++) {
        for (size_t i = 0; i < nst; i++)
            ref[i] = finr[s][i];
        double e = tu_rel_err_f32(fin[s], ref, nst);
        if (e > ferr)
            ferr = e;
    }
    printf("  %-15s T=%-5lld B=%-3lld I=%-4lld H=%-4lld hoist=%d bf=%d dev=%d%s  y %.2e  final %.2e\n",
           rc->cell, (long long)rc->T, (long long)rc->B, (long long)rc->I, (long long)rc->H,
           rc->hoist, rc->batch_first, rc->device_ptrs, rc->in_place ? " in-place" : "", err,
           ferr);
    if (rc->unit_gains) {
        /* Gains near 1 amplify fp32 rounding geometrically (any fp32
         * implementation drifts from the double oracle): the first step
         * must still be exact to fp32, and the drift finite and bounded. */
        size_t per = (size_t)(rc->B * rc->H);
        double first = 0, worst = 0;
        for (int64_t t = 0; t < rc->T; t++) {
            for (size_t i = 0; i < per; i++)
                ref[i] = yr[(size_t)t * per + i];
            double e = tu_rel_err_f32(y + (size_t)t * per, ref, per);
            if (t == 0)
                first = e;
            worst = e > worst || e != e ? e : worst;
            if (t % (rc->T / 8 > 0 ? rc->T / 8 : 1) == 0)
                printf("    step %4lld: rel err %.2e\n", (long long)t, e);
        }
        fflush(stdout);
        if (!(first <= TOL) || !(worst <= 0.1))
            fail_msg("%s with unit gains: step 0 err %.3g (<= %g), worst %.3g (<= 0.1)", rc->cell,
                     first, TOL, worst);
    } else if (!(err <= TOL) || !(ferr <= TOL)) {
        fail_msg("%s T=%lld B=%lld I=%lld H=%lld: rel err y %.3g final %.3g > %g", rc->cell,
                 (long long)rc->T, (long long)rc->B, (long long)rc->I, (long long)rc->H, err, ferr,
                 TOL);
    }
    fflush(stdout);
    free(ref);
    free(x);
    free(y);
    free(yr);
    for (int s = 0; s < ns; s++) {
        free(init[s]);
        free(fin[s]);
        free(finr[s]);
    }
    rnnc_model_destroy(p.fused);
    rnnc_model_destroy(p.ref);
}

static void test_every_cell(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const run_case shapes[] = {
        {NULL, 7, 1, 32, 32, RNNC_HOIST_ALL, false, false, false, false},
        {NULL, 5, 3, 20, 24, RNNC_HOIST_ALL, false, false, false, false},
        {NULL, 4, 2, 8, 1, RNNC_HOIST_ALL, false, false, false, false},
        {NULL, 6, 4, 50, 100, RNNC_HOIST_ALL, false, false, false, false},
        {NULL, 3, 5, 64, 257, RNNC_HOIST_ALL, true, false, false, false},
        {NULL, 1, 2, 16, 16, RNNC_HOIST_ALL, false, true, false, false},
        {NULL, 1000, 2, 16, 32, RNNC_HOIST_ALL, false, false, false, false},
        {NULL, 20, 64, 512, 512, RNNC_HOIST_ALL, false, false, false, false},
        {NULL, 9, 3, 40, 48, RNNC_HOIST_MATMUL, false, false, false, false},
        {NULL, 9, 3, 40, 48, RNNC_HOIST_NONE, false, false, false, false},
        /* single steps and short sequences: the K-split GEMM; with device
         * pointers the step kernel reads and writes the caller's states
         * (in place: T = 1 goes through the third copy, T > 1 directly) */
        {NULL, 1, 64, 512, 512, RNNC_HOIST_ALL, false, false, false, false},
        {NULL, 1, 64, 512, 512, RNNC_HOIST_ALL, false, true, false, false},
        {NULL, 1, 64, 512, 512, RNNC_HOIST_ALL, false, true, false, true},
        {NULL, 3, 64, 512, 512, RNNC_HOIST_ALL, false, true, false, true},
        {NULL, 2, 3, 20, 24, RNNC_HOIST_ALL, false, true, false, true},
        {NULL, 1, 3, 20, 24, RNNC_HOIST_ALL, false, true, false, true},
        {NULL, 5, 7, 36, 40, RNNC_HOIST_MATMUL, true, true, false, false},
    };
    const char *const *names = rnnc_cell_builtin_names();
    for (int c = 0; names[c]; c++)
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            run_case rc = shapes[k];
            rc.cell = names[c];
            run_one(&rc, &rng);
        }
}

/* The fastrnns default shape (T=100, B=64, I=H=512) in full, every built-in cell. */
static void test_fastrnns_shape(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const char *const *names = rnnc_cell_builtin_names();
    for (int c = 0; names[c]; c++) {
        run_case rc = {names[c], 100, 64, 512, 512, RNNC_HOIST_ALL, false, false, false, false};
        run_one(&rc, &rng);
    }
}

/* The autotuner's register tiles (RNNC_FUSED_TILE "ut,bt,nt,rr,bb") give
 * the same results: every built-in cell at the benchmark width, and at
 * H = 100, B = 24 where the tile divides neither the rows nor the batch. */
static void test_register_tiles(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const struct {
        const char *tile;
        int64_t T, B, I, H;
    } t[] = {{"0,0,256,8,4", 20, 64, 512, 512}, {"0,0,512,8,4", 20, 64, 512, 512},
             {"0,0,256,8,8", 20, 64, 512, 512}, {"0,0,256,4,8", 20, 128, 512, 512},
             {"0,0,256,16,8", 6, 24, 50, 100}};
    const char *const *names = rnnc_cell_builtin_names();
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        setenv("RNNC_FUSED_TILE", t[k].tile, 1);
        printf("  tile %s\n", t[k].tile);
        for (int c = 0; names[c]; c++) {
            run_case rc = {names[c], t[k].T, t[k].B, t[k].I, t[k].H, RNNC_HOIST_ALL,
                           false, false, false, false};
            run_one(&rc, &rng);
        }
    }
    unsetenv("RNNC_FUSED_TILE");
}

/* How far fp32 drifts from the double oracle when the layernorm gains are
 * near 1 (printed per step; checked loosely, see run_one). */
static void test_layernorm_drift(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    run_case rc = {"layernorm_lstm", 100, 64, 512, 512, RNNC_HOIST_ALL, false, false, true, false};
    run_one(&rc, &rng);
    run_case rl = {"lstm", 100, 64, 512, 512, RNNC_HOIST_ALL, false, false, true, false};
    run_one(&rl, &rng);
}

int main(void)
{
    tu_require_gpu();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_cell),
        cmocka_unit_test(test_fastrnns_shape),
        cmocka_unit_test(test_register_tiles),
        cmocka_unit_test(test_layernorm_drift),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
