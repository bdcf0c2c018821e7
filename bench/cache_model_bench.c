/*
 * cache_model_bench.c: what a user waits for before the first result: the
 * time to create a fused model (lstm, I=H=512), set its weights and run
 * the first forward (T=100, B=64, host buffers) when its kernels come from
 * (a) a cold NVRTC compile, (b) the disk cache, (c) the in-process cache,
 * (d) a bundle (NVRTC not consulted), and, with autotuning on, (e) a cold
 * start that autotunes and (f) the next process, which finds the record.
 * Also the steady forward (device time, median) with the heuristic and the
 * autotuned tuning.  Prints a table; --json PATH writes the figures.
 * Exits 77 without a GPU.
 *   bench_cache_model_bench [--json PATH] [--reps N]
 */
#define _GNU_SOURCE
#include <cJSON.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "runtime/fused/fused.h"
#include "bench/bench_common.h"

#define T_STEPS 100
#define BATCH 64
#define SIZE 512

typedef struct bench {
    rnnc_cell *cell;
    float **w;         /* one array per weight, in the model's order */
    int n_w;
    float *x, *y;
    char base[64];     /* every cache directory lives under it */
    int dirs;
    int sm, sms;
} bench;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* A fresh, empty cache directory for the next start. */
static void fresh_cache(bench *b)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/c%d", b->base, b->dirs++);
    setenv("RNNC_CACHE_DIR", dir, 1);
}

static rnnc_status make_model(bench *b, rnnc_model **m)
{
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = b->cell;
    d.input_size = SIZE;
    d.hidden_size = SIZE;
    d.backend = RNNC_BACKEND_FUSED;
    rnnc_status st = rnnc_model_create(m, &d);
    for (int i = 0; st == RNNC_OK && i < b->n_w; i++) {
        const char *name;
        int64_t shape[RNNC_MAX_RANK], n = 1;
        int rank;
        st = rnnc_model_weight_info(*m, i, &name, RNNC_MAX_RANK, shape, &rank);
        for (int r = 0; r < rank; r++)
            n *= shape[r];
        if (st == RNNC_OK)
            st = rnnc_model_set_weight(*m, name, b->w[i], n);
    }
    return st;
}

static rnnc_forward_args args(bench *b)
{
    return (rnnc_forward_args){.seq_len = T_STEPS, .batch = BATCH, .x = b->x, .y = b->y};
}

/* Create, weights, first forward; *origin and *from describe where the
 * kernels and the tuning came from. */
static rnnc_status start(bench *b, const char *bundle, double *ms, rt_origin *origin,
                         char *from, size_t n_from)
{
    rnnc_model *m = NULL;
    double t0 = cm_now_ms();
    rnnc_status st = bundle ? rnnc_bundle_load(bundle) : RNNC_OK;
    rnnc_forward_args a = args(b);
    if (st == RNNC_OK && (st = make_model(b, &m)) == RNNC_OK)
        st = rnnc_model_forward(m, &a);
    *ms = cm_now_ms() - t0;
    if (st == RNNC_OK) {
        const rt_fused *f = m->be_state;
        *origin = f->kern.origin;
        snprintf(from, n_from, "%s (%s)", f->tuning_from, f->plan.tuning);
    } else {
        fprintf(stderr, "start: %s\n", rnnc_last_error());
    }
    rnnc_model_destroy(m);
    rnnc_bundle_unload_all();
    return st;
}

typedef struct row {
    const char *what;
    rt_origin want;
    double ms;
    char from[160];
} row;

/* reps starts; before each: `cold` a fresh cache directory, `clear` no
 * module loaded and nothing tuned in memory. */
static int time_starts(bench *b, row *r, int reps, bool cold, bool clear, const char *bundle)
{
    double *t = calloc((size_t)reps, sizeof *t);
    for (int i = 0; i < reps; i++) {
        rt_origin o = RT_FROM_MEMORY;
        if (cold)
            fresh_cache(b);
        if (clear) {
            rt_kernel_cache_clear();
            rt_fused_tune_reset();
        }
        if (start(b, bundle, &t[i], &o, r->from, sizeof r->from) != RNNC_OK || o != r->want) {
            fprintf(stderr, "%s: kernels from %s, want %s\n", r->what, rt_origin_name(o),
                    rt_origin_name(r->want));
            free(t);
            return 1;
        }
    }
    r->ms = median(t, reps);
    free(t);
    return 0;
}

/* Median device time of a forward on the tuning the model chooses now. */
static int steady(bench *b, double *ms)
{
    rnnc_model *m = NULL;
    rnnc_forward_args a = args(b);
    rnnc_status st = make_model(b, &m);
    if (st == RNNC_OK)
        st = rnnc_model_time_forward(m, &a, 10, 50, ms);
    rnnc_model_destroy(m);
    if (st)
        fprintf(stderr, "steady: %s\n", rnnc_last_error());
    return st != RNNC_OK;
}

static int make_bundle(bench *b, const char *path)
{
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = b->cell;
    d.input_size = SIZE;
    d.hidden_size = SIZE;
    const int64_t batches[] = {BATCH};
    if (rnnc_bundle_compile(&d, batches, 1, &b->sm, 1, b->sms, path) == RNNC_OK)
        return 0;
    fprintf(stderr, "bundle: %s\n", rnnc_last_error());
    return 1;
}

static int setup(bench *b)
{
    rnnc_model_desc d;
    rnnc_model *m = NULL;
    uint64_t s = 0x2545f4914f6cdd1dull;
    if (rnnc_cell_builtin(&b->cell, "lstm", NULL) || rt_cuda_arch(0, &b->sm) ||
        rt_cuda_sm_count(0, &b->sms))
        return 1;
    rnnc_model_desc_init(&d);
    d.cell = b->cell;
    d.input_size = d.hidden_size = SIZE;
    d.backend = RNNC_BACKEND_INTERP;
    if (rnnc_model_create(&m, &d))
        return 1;
    b->n_w = rnnc_model_weight_count(m);
    b->w = calloc((size_t)b->n_w, sizeof *b->w);
    for (int i = 0; i < b->n_w; i++) {
        const char *name;
        int64_t shape[RNNC_MAX_RANK], n = 1;
        int rank;
        rnnc_model_weight_info(m, i, &name, RNNC_MAX_RANK, shape, &rank);
        for (int r = 0; r < rank; r++)
            n *= shape[r];
        b->w[i] = malloc((size_t)n * sizeof(float));
        for (int64_t k = 0; k < n; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            b->w[i][k] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5) * 0.08f;
        }
    }
    rnnc_model_destroy(m);
    size_t n = (size_t)T_STEPS * BATCH * SIZE;
    b->x = malloc(n * sizeof *b->x);
    b->y = malloc(n * sizeof *b->y);
    for (size_t i = 0; i < n; i++)
        b->x[i] = (float)(i % 97) / 97.0f - 0.5f;
    snprintf(b->base, sizeof b->base, "/tmp/rnnc-startbench-XXXXXX");
    return mkdtemp(b->base) ? 0 : 1;
}

static void teardown(bench *b)
{
    for (int i = 0; i < b->n_w; i++)
        free(b->w[i]);
    free(b->w);
    free(b->x);
    free(b->y);
    rnnc_cell_destroy(b->cell);
    if (b->base[0])
        nftw(b->base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int write_json(const char *path, const bench *b, const row *rows, int n, double heur_ms,
                      double tuned_ms)
{
    char dev[256] = "";
    rt_cuda_describe(0, dev, sizeof dev);
    cJSON *j = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(j, "starts");
    cJSON_AddStringToObject(j, "benchmark", "cache_model");
    cJSON_AddStringToObject(j, "device", dev);
    cJSON_AddStringToObject(j, "model", "lstm I=H=512, first forward T=100 B=64, host buffers");
    cJSON_AddNumberToObject(j, "sm", b->sm);
    for (int i = 0; i < n; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "kernels_from", rows[i].what);
        cJSON_AddNumberToObject(r, "create_and_first_forward_ms", rows[i].ms);
        cJSON_AddStringToObject(r, "tuning", rows[i].from);
        cJSON_AddItemToArray(arr, r);
    }
    cJSON_AddNumberToObject(j, "forward_ms_heuristic", heur_ms);
    cJSON_AddNumberToObject(j, "forward_ms_autotuned", tuned_ms);
    int rc = bench_write_json(path, j);
    cJSON_Delete(j);
    return rc;
}

int main(int argc, char **argv)
{
    const char *json = NULL;
    int reps = 3;
    if (!bench_args(argc, argv, "reps", &json, &reps))
        return 2;
    if (!rt_cuda_available() || !rt_nvrtc_available()) {
        printf("no GPU or no NVRTC: skipped\n");
        return 77;
    }
    bench b = {0};
    char bundle[128];
    row rows[] = {{"compile (cold)", RT_FROM_COMPILE, 0, ""}, {"disk cache", RT_FROM_DISK, 0, ""},
                  {"in-process cache", RT_FROM_MEMORY, 0, ""}, {"bundle", RT_FROM_BUNDLE, 0, ""},
                  {"compile + autotune", RT_FROM_MEMORY, 0, ""},
                  {"record + disk (next process)", RT_FROM_DISK, 0, ""}};
    double heur = 0, tuned = 0;
    unsetenv("RNNC_FUSED_TILE");
    unsetenv("RNNC_CACHE");
    setenv("RNNC_AUTOTUNE", "0", 1);
    int rc = setup(&b);
    snprintf(bundle, sizeof bundle, "%s/lstm.rnncpkg", b.base);
    rc = rc || rt_cuda_context(0) || time_starts(&b, &rows[0], reps, true, true, NULL) ||
         time_starts(&b, &rows[1], reps, false, true, NULL) ||
         time_starts(&b, &rows[2], reps, false, false, NULL) || steady(&b, &heur) ||
         make_bundle(&b, bundle);
    setenv("RNNC_CACHE", "0", 1); /* the bundle alone */
    rc = rc || time_starts(&b, &rows[3], reps, false, true, bundle);
    unsetenv("RNNC_CACHE");
    unsetenv("RNNC_AUTOTUNE");
    /* autotuning's winner is loaded while timing: a memory hit after it */
    rc = rc || time_starts(&b, &rows[4], 1, true, true, NULL) ||
         time_starts(&b, &rows[5], reps, false, true, NULL) || steady(&b, &tuned);
    teardown(&b);
    if (rc)
        return 1;
    char dev[256] = "";
    rt_cuda_describe(0, dev, sizeof dev);
    printf("model start: lstm I=H=512, create + weights + first forward (T=100, B=64, host "
           "buffers), %s, median of %d\n", dev, reps);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        printf("  %-30s %10.3f ms   tuning: %s\n", rows[i].what, rows[i].ms, rows[i].from);
    printf("  steady forward (device time): heuristic %.4f ms, autotuned %.4f ms (%.2fx)\n", heur,
           tuned, heur / tuned);
    if (json && write_json(json, &b, rows, 6, heur, tuned))
        return 1;
    return 0;
}
