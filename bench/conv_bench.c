/*
 * conv_bench.c: rnnc's convolution in benchmark mode over ResNet-50's conv
 * layers (bench/resnet50_convs.txt) at batch 32: fp32 FFMA NCHW and fp16
 * NHWC; then conv + bias + add + ReLU fused (graph) against the same steps
 * unfused.  bench/conv_torch.py times PyTorch on the same shapes the same
 * way: random inputs, 3 warm-up calls (the first searches), then --iters
 * repetitions of 10 calls between two CUDA events on the default stream,
 * the median per call.
 *   bench_conv_bench [--json OUT] [--iters N]   (RNNC_SOURCE_DIR or the
 *   working directory locates bench/resnet50_convs.txt)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "rnnc.h"
#include "runtime/device/device.h"

#define BATCH 32
#define MAX_LAYERS 64
#define INNER 10 /* calls between two events */

typedef struct layer {
    char name[32];
    int64_t hw, c, k, kernel, stride, pad;
} layer;

static int read_layers(layer *out)
{
    const char *src = getenv("RNNC_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/bench/resnet50_convs.txt", src && *src ? src : ".");
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "cannot open %s (set RNNC_SOURCE_DIR to the source tree)\n", path);
        return -1;
    }
    char line[256];
    int n = 0;
    while (n < MAX_LAYERS && fgets(line, sizeof line, fp)) {
        layer *l = &out[n];
        long long v[6];
        if (line[0] == '#' || sscanf(line, "%31s %lld %lld %lld %lld %lld %lld", l->name, &v[0],
                                     &v[1], &v[2], &v[3], &v[4], &v[5]) != 7)
            continue;
        l->hw = v[0], l->c = v[1], l->k = v[2], l->kernel = v[3], l->stride = v[4], l->pad = v[5];
        n++;
    }
    fclose(fp);
    return n;
}

static rnnc_conv *make_conv(const layer *l, rnnc_dtype dt, rnnc_conv_layout layout)
{
    rnnc_conv_desc d;
    rnnc_conv_desc_init(&d);
    d.batch = BATCH;
    d.in_channels = l->c;
    d.out_channels = l->k;
    d.input[0] = d.input[1] = l->hw;
    d.kernel[0] = d.kernel[1] = l->kernel;
    d.stride[0] = d.stride[1] = l->stride;
    d.padding[0] = d.padding[1] = l->pad;
    d.dtype = dt;
    d.layout = layout;
    d.algo_mode = RNNC_CONV_BENCHMARK;
    rnnc_conv *c = NULL;
    if (rnnc_conv_create(&c, &d) != RNNC_OK)
        fprintf(stderr, "%s: %s\n", l->name, rnnc_last_error());
    return c;
}

/* A buffer of random values: fp32 in [-1, 1), fp16 in +-[0.5, 1) (timing
 * on zeros can flatter a kernel). */
static void *dev_random(int64_t n, size_t esz, uint64_t *rng)
{
    void *p = NULL;
    if (rnnc_device_alloc(0, (size_t)n * esz, &p) != RNNC_OK)
        return NULL;
    void *h = malloc((size_t)n * esz);
    for (int64_t i = 0; h && i < n; i++) {
        *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t r = (uint32_t)(*rng >> 33);
        if (esz == 2)
            ((uint16_t *)h)[i] = (uint16_t)((r & 0x8000) | 0x3800 | (r & 0x3ff));
        else
            ((float *)h)[i] = (float)r / 2147483648.0f * 2.0f - 1.0f;
    }
    if (!h || rnnc_device_upload(p, h, (size_t)n * esz) != RNNC_OK) {
        rnnc_device_free(p);
        p = NULL;
    }
    free(h);
    return p;
}

typedef struct bufs {
    void *x, *w, *y, *z, *b;
} bufs;

static bool alloc_bufs(const rnnc_conv *c, size_t esz, bufs *b)
{
    static uint64_t rng = 0x2545f4914f6cdd1dULL;
    int64_t nx, nw, ny;
    rnnc_conv_numels(c, &nx, &nw, &ny);
    b->x = dev_random(nx, esz, &rng);
    b->w = dev_random(nw, esz, &rng);
    b->y = dev_random(ny, esz, &rng);
    b->z = dev_random(ny, esz, &rng);
    b->b = dev_random(rnnc_conv_get_desc(c)->out_channels, esz, &rng);
    return b->x && b->w && b->y && b->z && b->b;
}

static void free_bufs(bufs *b)
{
    rnnc_device_free(b->x), rnnc_device_free(b->w), rnnc_device_free(b->y);
    rnnc_device_free(b->z), rnnc_device_free(b->b);
}

static rnnc_status call(rnnc_conv_handle *h, const rnnc_conv *c, const bufs *b,
                        const rnnc_conv_epilogue *e)
{
    return e ? rnnc_conv_fused(h, c, e, b->x, b->w, b->y, NULL)
             : rnnc_conv_forward(h, c, b->x, b->w, b->y, NULL);
}

/* Median ms of one call: 3 warm-up calls (the first searches), then iters
 * repetitions of INNER calls between two events. */
static double bench(rnnc_conv_handle *h, const rnnc_conv *c, const bufs *b,
                    const rnnc_conv_epilogue *e, int iters)
{
    const rt_cuda_api *cu = rt_cu();
    CUevent ev[2] = {NULL, NULL};
    double *t = calloc((size_t)iters, sizeof *t);
    rnnc_status s = t ? RNNC_OK : RNNC_ERR_OUT_OF_MEMORY;
    for (int i = 0; s == RNNC_OK && i < 3; i++)
        s = call(h, c, b, e);
    if (s == RNNC_OK && (cu->EventCreate(&ev[0], CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
                         cu->EventCreate(&ev[1], CU_EVENT_DEFAULT) != CUDA_SUCCESS))
        s = RNNC_ERR_CUDA;
    for (int r = 0; s == RNNC_OK && r < iters; r++) {
        float ms = 0;
        cu->EventRecord(ev[0], NULL);
        for (int i = 0; s == RNNC_OK && i < INNER; i++)
            s = call(h, c, b, e);
        cu->EventRecord(ev[1], NULL);
        if (s == RNNC_OK && (cu->EventSynchronize(ev[1]) != CUDA_SUCCESS ||
                             cu->EventElapsedTime(&ms, ev[0], ev[1]) != CUDA_SUCCESS))
            s = RNNC_ERR_CUDA;
        t[r] = (double)ms / INNER;
    }
    if (s != RNNC_OK)
        fprintf(stderr, "  failed: %s\n", rnnc_last_error());
    double med = s == RNNC_OK ? cm_median(t, iters) : -1;
    for (int i = 0; i < 2; i++)
        if (ev[i])
            cu->EventDestroy(ev[i]);
    free(t);
    return med;
}

static const char *dt_name(rnnc_dtype dt)
{
    return dt == RNNC_F16 ? "fp16" : "fp32";
}

/* Forward of every layer in benchmark mode, in one dtype and layout. */
static double forward_set(rnnc_conv_handle *h, const layer *ls, int n, rnnc_dtype dt,
                          rnnc_conv_layout layout, int iters, cJSON *rows)
{
    double total = 0;
    for (int i = 0; i < n; i++) {
        rnnc_conv *c = make_conv(&ls[i], dt, layout);
        bufs b = {0};
        double ms = c && alloc_bufs(c, rnnc_dtype_size(dt), &b) ? bench(h, c, &b, NULL, iters) : -1;
        const char *algo = rnnc_conv_handle_last_algo(h);
        printf("%-10s %-5s %-4s %10.4f  %s\n", ls[i].name, dt_name(dt),
               layout == RNNC_CONV_NHWC ? "NHWC" : "NCHW", ms, ms < 0 ? "FAILED" : algo);
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "name", ls[i].name);
        cJSON_AddStringToObject(r, "dtype", dt_name(dt));
        cJSON_AddStringToObject(r, "layout", layout == RNNC_CONV_NHWC ? "NHWC" : "NCHW");
        cJSON_AddNumberToObject(r, "ms", ms);
        cJSON_AddStringToObject(r, "algo", ms < 0 ? rnnc_last_error() : algo);
        cJSON_AddItemToArray(rows, r);
        total += ms > 0 ? ms : 0;
        free_bufs(&b);
        rnnc_conv_destroy(c);
    }
    printf("%-10s %-5s %-4s %10.4f  (sum)\n", "total", dt_name(dt),
           layout == RNNC_CONV_NHWC ? "NHWC" : "NCHW", total);
    return total;
}

/* relu(conv + z + bias) through the graph against conv, add, add, relu. */
static void fused_set(rnnc_conv_handle *h, const layer *ls, int n, int iters, cJSON *rows)
{
    printf("\n%-10s %-5s %10s %10s %8s  %s\n", "layer", "dtype", "fused ms", "unfused ms",
           "speedup", "fused path");
    for (int i = 0; i < n; i++) {
        if (ls[i].hw == 224) /* the stem has 3 input channels: no tensor-core graph */
            continue;
        rnnc_conv *c = make_conv(&ls[i], RNNC_F16, RNNC_CONV_NHWC);
        bufs b = {0};
        if (!c || !alloc_bufs(c, 2, &b)) {
            free_bufs(&b);
            rnnc_conv_destroy(c);
            continue;
        }
        rnnc_conv_epilogue e;
        rnnc_conv_epilogue_init(&e);
        e.z = b.z;
        e.bias = b.b;
        double fused = bench(h, c, &b, &e, iters);
        char path[160];
        snprintf(path, sizeof path, "%s", rnnc_conv_handle_last_algo(h));
        e.unfused = true;
        double unfused = bench(h, c, &b, &e, iters);
        double speedup = fused > 0 && unfused > 0 ? unfused / fused : 0;
        printf("%-10s %-5s %10.4f %10.4f %7.2fx  %s\n", ls[i].name, "fp16", fused, unfused,
               speedup, path);
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "name", ls[i].name);
        cJSON_AddNumberToObject(r, "fused_ms", fused);
        cJSON_AddNumberToObject(r, "unfused_ms", unfused);
        cJSON_AddNumberToObject(r, "speedup", speedup);
        cJSON_AddStringToObject(r, "fused_path", path);
        cJSON_AddItemToArray(rows, r);
        free_bufs(&b);
        rnnc_conv_destroy(c);
    }
}

int main(int argc, char **argv)
{
    const char *json = NULL;
    int iters = 20;
    if (!bench_args(argc, argv, "iters", &json, &iters))
        return 2;
    layer ls[MAX_LAYERS];
    int n = read_layers(ls);
    if (n <= 0)
        return 1;
    rnnc_conv_handle *h = NULL;
    if (rnnc_conv_handle_create(&h, 0) != RNNC_OK) {
        printf("no GPU or cuDNN: skipped (%s)\n", rnnc_last_error());
        return 77;
    }
    printf("ResNet-50 conv layers, batch %d, benchmark mode, median of %d x %d calls (CUDA "
           "events)\n", BATCH, iters, INNER);
    printf("%-10s %-5s %-4s %10s  %s\n", "layer", "dtype", "lay", "ms", "algorithm");
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "batch", BATCH);
    cJSON *rows = cJSON_AddArrayToObject(root, "forward");
    cJSON_AddNumberToObject(root, "fp32_total_ms",
                            forward_set(h, ls, n, RNNC_F32, RNNC_CONV_NCHW, iters, rows));
    cJSON_AddNumberToObject(root, "fp16_total_ms",
                            forward_set(h, ls, n, RNNC_F16, RNNC_CONV_NHWC, iters, rows));
    fused_set(h, ls, n, iters, cJSON_AddArrayToObject(root, "fused"));
    rnnc_conv_handle_destroy(h);
    int rc = json ? bench_write_json(json, root) : 0;
    cJSON_Delete(root);
    return rc;
}
