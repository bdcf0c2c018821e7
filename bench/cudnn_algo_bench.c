/*
 * cudnn_algo_bench.c: every cuDNN RNN algorithm against the fused path,
 * LSTM forward (inference), T = 100, I = H, B in {1, 8, 64, 256}, H in
 * {256, 512, 1024}, fp32 (FFMA) and fp16.  The fused backend runs fp32 only
 * (rnnc has no fp16 model on it yet), so the fp16 rows time cuDNN alone.
 * A shape an algorithm does not accept is listed with cuDNN's reason.
 * Device buffers, median of --iters runs after 10 warm-up runs.  The JSON
 * is rewritten after every shape, so a run cut short keeps what it timed.
 * Usage: bench_cudnn_algo_bench [--json PATH] [--iters N]
 */
#include "bench_common.h"

#include <math.h>

#include "cudnn_fallback/fallback.h"
#include "rnnc.h"
#include "runtime/device/device.h"

#define T_STEPS 100

typedef struct row {
    rnnc_dtype dtype;
    int64_t B, H;
    const char *what; /* an algorithm's name or "fused" */
    double ms;        /* < 0: did not run */
    char why[256];
} row;

static rnnc_status make(int64_t H, rnnc_dtype dt, rnnc_backend be, rnnc_cudnn_algo algo,
                        rnnc_model **m)
{
    rnnc_cell *cell = NULL;
    rnnc_status s = rnnc_cell_builtin(&cell, "lstm", NULL);
    if (s != RNNC_OK)
        return s;
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell, d.input_size = H, d.hidden_size = H, d.dtype = dt;
    d.backend = be, d.cudnn_algo = algo;
    s = rnnc_model_create(m, &d);
    rnnc_cell_destroy(cell);
    /* weights in PyTorch's init range, from a fixed LCG: the same on every run */
    uint64_t st = 12345;
    for (int i = 0; s == RNNC_OK && i < rnnc_model_weight_count(*m); i++) {
        const char *name;
        int64_t shape[2] = {1, 1};
        int rank;
        rnnc_model_weight_info(*m, i, &name, 2, shape, &rank);
        int64_t n = shape[0] * (rank == 2 ? shape[1] : 1);
        float *w = malloc(sizeof(float) * (size_t)n);
        for (int64_t k = 0; w && k < n; k++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            w[k] = (float)(((double)(st >> 11) / 9007199254740992.0 - 0.5) * 2.0 / sqrt((double)H));
        }
        s = w ? rnnc_model_set_weight(*m, name, w, n) : RNNC_ERR_OUT_OF_MEMORY;
        free(w);
    }
    return s;
}

static void time_row(row *r, rnnc_backend be, rnnc_cudnn_algo algo, int iters)
{
    rnnc_model *m = NULL;
    CUdeviceptr x = 0, y = 0;
    size_t esz = rnnc_dtype_size(r->dtype);
    size_t nx = (size_t)(T_STEPS * r->B * r->H) * esz;
    r->ms = -1;
    rnnc_status s = make(r->H, r->dtype, be, algo, &m);
    if (s == RNNC_OK && (s = rt_cuda_context(0)) == RNNC_OK && (s = rt_dev_alloc(&x, nx)) == RNNC_OK &&
        (s = rt_dev_alloc(&y, nx)) == RNNC_OK)
        s = rt_dev_zero(x, nx, NULL); /* the speed of an LSTM does not depend on its values */
    if (s == RNNC_OK) {
        rnnc_forward_args a = {.seq_len = T_STEPS, .batch = r->B, .x = (void *)(uintptr_t)x,
                               .y = (void *)(uintptr_t)y, .device_pointers = true};
        s = rnnc_model_time_forward(m, &a, 10, iters, &r->ms);
    }
    if (s != RNNC_OK) {
        r->ms = -1;
        snprintf(r->why, sizeof r->why, "%s: %s", rnnc_status_string(s), rnnc_last_error());
    }
    rt_dev_free(y);
    rt_dev_free(x);
    rnnc_model_destroy(m);
}

static cJSON *row_json(const row *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "dtype", rnnc_dtype_name(r->dtype));
    cJSON_AddNumberToObject(o, "seq", T_STEPS);
    cJSON_AddNumberToObject(o, "batch", (double)r->B);
    cJSON_AddNumberToObject(o, "hidden", (double)r->H);
    cJSON_AddNumberToObject(o, "input", (double)r->H);
    cJSON_AddStringToObject(o, "path", r->what);
    if (r->ms >= 0)
        cJSON_AddNumberToObject(o, "forward_ms", r->ms);
    else {
        cJSON_AddNullToObject(o, "forward_ms");
        cJSON_AddStringToObject(o, "why", r->why);
    }
    return o;
}

/* The JSON's header: the device and the cuDNN that ran. */
static cJSON *json_root(int iters)
{
    cJSON *root = cJSON_CreateObject();
    char dev[256] = "";
    (void)rt_cuda_describe(0, dev, sizeof dev);
    cJSON_AddStringToObject(root, "device", dev);
    cJSON_AddStringToObject(root, "bench", "cudnn_algo_bench");
#ifdef FB_HAVE_CUDNN_H
    if (fb_cudnn_load() == RNNC_OK)
        cJSON_AddNumberToObject(root, "cudnn_version", (double)cudnnGetVersion());
#endif
    cJSON_AddNumberToObject(root, "iters", iters);
    cJSON_AddNumberToObject(root, "warmup", 10);
    cJSON_AddStringToObject(root, "math", "fp32: FFMA (cuDNN CUDNN_FMA_MATH); fp16: tensor ops");
    return root;
}

int main(int argc, char **argv)
{
    const char *json = NULL;
    int iters = 50;
    if (!bench_args(argc, argv, "iters", &json, &iters))
        return 2;
    if (!rnnc_backend_available(RNNC_BACKEND_CUDNN)) {
        fprintf(stderr, "cudnn is not usable here: nothing to time\n");
        return 77;
    }
    static const int64_t Bs[] = {1, 8, 64, 256}, Hs[] = {256, 512, 1024};
    static const rnnc_cudnn_algo algos[] = {
        RNNC_CUDNN_ALGO_STANDARD, RNNC_CUDNN_ALGO_PERSIST_STATIC,
        RNNC_CUDNN_ALGO_PERSIST_STATIC_SMALL_H, RNNC_CUDNN_ALGO_PERSIST_DYNAMIC};
    static const rnnc_dtype dts[] = {RNNC_F32, RNNC_F16};
    cJSON *root = json_root(iters), *rows = cJSON_AddArrayToObject(root, "rows");
    char dev[256] = "";
    (void)rt_cuda_describe(0, dev, sizeof dev);
    printf("%s\n", dev);
    printf("LSTM forward, T=%d, I=H, median ms of %d runs (fp16: cuDNN only; fused runs fp32)\n",
           T_STEPS, iters);
    printf("%-5s %5s %5s %10s %10s %10s %10s %10s  best cuDNN\n", "dtype", "B", "H", "standard",
           "p_static", "p_small_h", "p_dynamic", "fused");
    int rc = 0;
    for (int di = 0; di < 2; di++)
        for (int hi = 0; hi < 3; hi++)
            for (int bi = 0; bi < 4; bi++) {
                row r[5];
                const char *best = "-";
                double best_ms = -1;
                for (int k = 0; k < 5; k++) {
                    r[k] = (row){.dtype = dts[di], .B = Bs[bi], .H = Hs[hi]};
                    if (k < 4) {
                        r[k].what = rnnc_cudnn_algo_name(algos[k]);
                        time_row(&r[k], RNNC_BACKEND_CUDNN, algos[k], iters);
                        if (r[k].ms >= 0 && (best_ms < 0 || r[k].ms < best_ms))
                            best_ms = r[k].ms, best = r[k].what;
                    } else {
                        r[k].what = "fused";
                        if (dts[di] == RNNC_F32)
                            time_row(&r[k], RNNC_BACKEND_FUSED, RNNC_CUDNN_ALGO_AUTO, iters);
                        else
                            r[k].ms = -1, snprintf(r[k].why, sizeof r[k].why,
                                                   "rnnc's fused path has no fp16 model yet");
                    }
                    cJSON_AddItemToArray(rows, row_json(&r[k]));
                }
                printf("%-5s %5lld %5lld", rnnc_dtype_name(dts[di]), (long long)Bs[bi],
                       (long long)Hs[hi]);
                for (int k = 0; k < 5; k++)
                    r[k].ms >= 0 ? printf(" %10.3f", r[k].ms) : printf(" %10s", "-");
                printf("  %s\n", best);
                fflush(stdout);
                if (json)
                    rc = bench_write_json(json, root);
            }
    printf("\n-: the path refused the shape (reasons in the JSON)\n");
    cJSON_Delete(root);
    return rc;
}
