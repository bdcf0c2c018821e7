/*
 * fused_bench.c: times the fused backend alone (CUDA events, warm-up,
 * median of runs, device pointers) for the fastrnns shapes and several
 * tunings of the step kernel, and prints per-step times.
 *   bench_fused_bench [--json OUT] [--iters N]
 * Tunings are set through RNNC_FUSED_TILE="ut,bt,threads" (0 = default).
 * Exits 77 without a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "common/common.h"
#include "runtime/device/device.h"

typedef struct bcase {
    const char *cell;
    int64_t T, B, I, H;
    const char *tile;
} bcase;

static const bcase k_cases[] = {
    {"lstm", 100, 64, 512, 512, "0,0,0"},       {"lstm", 100, 64, 512, 512, "4,64,256"},
    {"lstm", 100, 64, 512, 512, "8,32,256"},    {"lstm", 100, 64, 512, 512, "16,16,512"},
    {"lstm", 100, 1, 512, 512, "0,0,0"},
    {"lstm", 100, 1, 512, 512, "4,1,128"},      {"layernorm_lstm", 100, 64, 512, 512, "0,0,0"},
    {"layernorm_lstm", 100, 64, 512, 512, "8,32,256"},
    {"layernorm_lstm", 100, 64, 512, 512, "16,16,512"},
    {"gru", 100, 64, 512, 512, "0,0,0"},        {"lstm", 1, 64, 512, 512, "0,0,0"},
    {"lstm", 100, 64, 512, 512, "0,0,0"},
};

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static float frand(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static rnnc_status setup(const bcase *c, rnnc_model **m)
{
    rnnc_cell *cell = NULL;
    rnnc_status st = rnnc_cell_builtin(&cell, c->cell, NULL);
    if (st)
        return st;
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = c->I;
    d.hidden_size = c->H;
    d.backend = RNNC_BACKEND_FUSED;
    setenv("RNNC_FUSED_TILE", c->tile, 1);
    st = rnnc_model_create(m, &d);
    rnnc_cell_destroy(cell);
    for (int i = 0; st == RNNC_OK && i < rnnc_model_weight_count(*m); i++) {
        const char *name;
        int64_t shape[RNNC_MAX_RANK], n = 1;
        int rank;
        rnnc_model_weight_info(*m, i, &name, RNNC_MAX_RANK, shape, &rank);
        for (int r = 0; r < rank; r++)
            n *= shape[r];
        float *w = malloc((size_t)n * 4);
        for (int64_t k = 0; k < n; k++)
            w[k] = frand() / sqrtf((float)c->H);
        st = rnnc_model_set_weight(*m, name, w, n);
        free(w);
    }
    return st;
}

static double run_case(const bcase *c, int iters, char *err, size_t nerr)
{
    rnnc_model *m = NULL;
    double ms = -1;
    CUdeviceptr dx = 0, dy = 0;
    rnnc_status st = setup(c, &m);
    size_t nx = (size_t)(c->T * c->B * c->I), ny = (size_t)(c->T * c->B * c->H);
    if (st == RNNC_OK)
        st = rt_dev_alloc(&dx, nx * 4);
    if (st == RNNC_OK)
        st = rt_dev_alloc(&dy, ny * 4);
    if (st == RNNC_OK) {
        float *x = malloc(nx * 4);
        for (size_t i = 0; i < nx; i++)
            x[i] = frand();
        st = rt_dev_upload(dx, x, nx * 4, NULL);
        free(x);
    }
    if (st == RNNC_OK) {
        rnnc_forward_args a = {.seq_len = c->T, .batch = c->B, .x = (void *)(uintptr_t)dx,
                               .y = (void *)(uintptr_t)dy, .device_pointers = true};
        st = rnnc_model_time_forward(m, &a, 5, iters, &ms);
    }
    if (st)
        snprintf(err, nerr, "%s: %s", rnnc_status_string(st), rnnc_last_error());
    rt_dev_free(dx);
    rt_dev_free(dy);
    rnnc_model_destroy(m);
    return st ? -1 : ms;
}

int main(int argc, char **argv)
{
    const char *json = NULL;
    int iters = 30;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
    }
    if (!rt_cuda_available()) {
        printf("no GPU: skipped\n");
        return 77;
    }
    char dev[256] = "";
    rt_cuda_describe(0, dev, sizeof dev);
    printf("fused backend alone, %s, median of %d\n", dev, iters);
    printf("%-15s %5s %4s %5s %5s %-10s %10s %10s\n", "cell", "T", "B", "I", "H", "tile", "ms",
           "us/step");
    cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "runs");
    cJSON_AddStringToObject(root, "device", dev);
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        const bcase *c = &k_cases[i];
        char err[512] = "";
        double ms = run_case(c, iters, err, sizeof err);
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "cell", c->cell);
        cJSON_AddNumberToObject(r, "T", (double)c->T);
        cJSON_AddNumberToObject(r, "B", (double)c->B);
        cJSON_AddNumberToObject(r, "I", (double)c->I);
        cJSON_AddNumberToObject(r, "H", (double)c->H);
        cJSON_AddStringToObject(r, "tile", c->tile);
        if (ms >= 0) {
            printf("%-15s %5lld %4lld %5lld %5lld %-10s %10.4f %10.2f\n", c->cell, (long long)c->T,
                   (long long)c->B, (long long)c->I, (long long)c->H, c->tile, ms,
                   ms * 1000.0 / (double)c->T);
            cJSON_AddNumberToObject(r, "median_ms", ms);
        } else {
            printf("%-15s %5lld %4lld %5lld %5lld %-10s  failed: %s\n", c->cell, (long long)c->T,
                   (long long)c->B, (long long)c->I, (long long)c->H, c->tile, err);
            cJSON_AddStringToObject(r, "error", err);
        }
        cJSON_AddItemToArray(rows, r);
    }
    unsetenv("RNNC_FUSED_TILE");
    if (json) {
        char *text = cJSON_Print(root);
        cm_why why; /* the one safe writer (common/): never half a file */
        if (!text || cm_write_file(json, CM_OUT_DISCARD, text, strlen(text), "\n", 1, &why))
            fprintf(stderr, "cannot write %s: %s\n", json, text ? why.text : "out of memory");
        free(text);
    }
    cJSON_Delete(root);
    return 0;
}
