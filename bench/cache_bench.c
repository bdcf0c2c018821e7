/*
 * cache_bench.c: what the kernel cache saves.  Times a cold NVRTC compile
 * of a persistent-kernel-sized source, a disk hit (cubin level), and on a
 * GPU the first launch from the disk cache and an in-process hit; and
 * loading an AOT bundle (and, on a GPU, launching from it).  Targets
 * (issue 5): disk hit >= 20x faster than a cold compile, in-process hit
 * < 50 us.  Prints a table; --json PATH writes the figures; exits 1 if a
 * target is missed.
 *   bench_cache_bench [--json PATH] [--reps N]
 */
#define _GNU_SOURCE
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_common.h"
#include "runtime/runtime.h"

/* About the size and shape of a generated recurrent kernel: a grid
 * barrier per step, a tiled multiply from shared memory, a gate epilogue. */
static const char k_src[] =
    "#include <cooperative_groups.h>\n"
    "namespace cg = cooperative_groups;\n"
    "#define TILE 16\n"
    "__device__ __forceinline__ float sig(float x) { return 1.0f / (1.0f + __expf(-x)); }\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "bench_step(const float *__restrict__ w, const float *__restrict__ xw, float *h,\n"
    "           float *c, int T, int B, int H)\n"
    "{\n"
    "    cg::grid_group grid = cg::this_grid();\n"
    "    extern __shared__ float sw[];\n"
    "    float acc[4][4];\n"
    "    int unit = blockIdx.x * TILE + threadIdx.x % TILE, row = threadIdx.x / TILE;\n"
    "    for (int k = threadIdx.x; k < 4 * TILE * H; k += blockDim.x)\n"
    "        sw[k] = w[blockIdx.x * 4 * TILE * H + k];\n"
    "    __syncthreads();\n"
    "    for (int t = 0; t < T; t++) {\n"
    "#pragma unroll\n"
    "        for (int g = 0; g < 4; g++)\n"
    "#pragma unroll\n"
    "            for (int r = 0; r < 4; r++)\n"
    "                acc[g][r] = xw[((size_t)t * B + row * 4 + r) * 4 * H + g * H + unit];\n"
    "#pragma unroll 8\n"
    "        for (int k = 0; k < H; k++)\n"
    "#pragma unroll\n"
    "            for (int g = 0; g < 4; g++)\n"
    "#pragma unroll\n"
    "                for (int r = 0; r < 4; r++)\n"
    "                    acc[g][r] = fmaf(sw[(g * TILE + threadIdx.x % TILE) * H + k],\n"
    "                                     h[(size_t)(t % 2) * B * H + (row * 4 + r) * H + k],\n"
    "                                     acc[g][r]);\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < 4; r++) {\n"
    "            int b = row * 4 + r;\n"
    "            if (b >= B || unit >= H) continue;\n"
    "            float i = sig(acc[0][r]), f = sig(acc[1][r]), g = tanhf(acc[2][r]),\n"
    "                  o = sig(acc[3][r]);\n"
    "            float cn = f * c[b * H + unit] + i * g;\n"
    "            c[b * H + unit] = cn;\n"
    "            h[(size_t)((t + 1) % 2) * B * H + b * H + unit] = o * tanhf(cn);\n"
    "        }\n"
    "        grid.sync();\n"
    "    }\n"
    "}\n";
static const char *const k_names[] = {"bench_step"};

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

static rt_kernel_req make_req(const char *tuning, int sm)
{
    rt_kernel_req r = {.source = k_src, .name = "bench_step", .kernels = k_names,
                       .n_kernels = 1, .sm = sm, .tuning = tuning};
    return r;
}

/* Median ms of rt_cubin_get; `fresh` gives every rep its own key (a compile). */
static int time_cubin(int reps, bool fresh, int sm, rt_origin want, double *ms)
{
    double *t = calloc((size_t)reps, sizeof *t);
    for (int i = 0; i < reps; i++) {
        char tuning[32];
        snprintf(tuning, sizeof tuning, "rep%d", fresh ? i : 0);
        rt_kernel_req r = make_req(tuning, sm);
        void *cubin = NULL;
        size_t size = 0;
        rt_origin o;
        double t0 = rt_now_ms();
        if (rt_cubin_get(&r, &cubin, &size, &o) != RNNC_OK || o != want) {
            fprintf(stderr, "cubin get (%s): %s\n", rt_origin_name(o), rnnc_last_error());
            free(t);
            return 1;
        }
        t[i] = rt_now_ms() - t0;
        free(cubin);
    }
    *ms = median(t, reps);
    free(t);
    return 0;
}

typedef struct figures {
    int sm;
    char device[256];
    double cold_ms, disk_ms, first_launch_ms, memory_us, bundle_ms, bundle_launch_ms;
    bool gpu;
    char bundle[4200];
} figures;

/* Writes a bundle holding the "rep0" cubin for sm. */
static int make_bundle(figures *f, const char *dir)
{
    rt_kernel_req r = make_req("rep0", f->sm);
    void *cubin = NULL;
    size_t size = 0;
    rt_origin o;
    rt_bundle *b = NULL;
    snprintf(f->bundle, sizeof f->bundle, "%s/bench.rnncpkg", dir);
    int rc = rt_cubin_get(&r, &cubin, &size, &o) != RNNC_OK || rt_bundle_create(&b) != RNNC_OK ||
             rt_bundle_add(b, &r, cubin, size) != RNNC_OK ||
             rt_bundle_save(b, f->bundle) != RNNC_OK;
    rt_bundle_destroy(b);
    free(cubin);
    if (rc)
        fprintf(stderr, "bundle: %s\n", rnnc_last_error());
    return rc;
}

/* Reading and checking the bundle file and finding the cubin in it. */
static int time_bundle_load(int reps, figures *f)
{
    double *t = calloc((size_t)reps, sizeof *t);
    rt_kernel_req r = make_req("rep0", f->sm);
    for (int i = 0; i < reps; i++) {
        rt_bundle *b = NULL;
        const void *cubin;
        size_t size;
        double t0 = rt_now_ms();
        if (rt_bundle_load(&b, f->bundle) != RNNC_OK || !rt_bundle_find(b, &r, f->sm, &cubin, &size)) {
            fprintf(stderr, "bundle load: %s\n", rnnc_last_error());
            free(t);
            return 1;
        }
        t[i] = rt_now_ms() - t0;
        rt_bundle_destroy(b);
    }
    f->bundle_ms = median(t, reps);
    free(t);
    return 0;
}

#ifdef RT_HAVE_CUDA_H
/* Disk hit -> loaded module -> a launch done: what a new process pays. */
static int time_first_launch(int reps, figures *f)
{
    double *t = calloc((size_t)reps, sizeof *t);
    rt_kernel_req r = make_req("rep0", 0);
    for (int i = 0; i < reps; i++) {
        rt_kernel k;
        rt_kernel_cache_clear();
        double t0 = rt_now_ms();
        int T = 0, B = 0, H = 0; /* a launch that does no work but still runs */
        CUdeviceptr null = 0;
        void *args[] = {&null, &null, &null, &null, &T, &B, &H};
        unsigned grid[3] = {1, 1, 1}, block[3] = {256, 1, 1};
        if (rt_kernel_get(&r, 0, &k) != RNNC_OK || k.origin != RT_FROM_DISK ||
            rt_launch(k.fn[0], grid, block, 0, NULL, args, true) != RNNC_OK ||
            rt_dev_sync(NULL) != RNNC_OK) {
            fprintf(stderr, "first launch: %s\n", rnnc_last_error());
            free(t);
            return 1;
        }
        t[i] = rt_now_ms() - t0;
    }
    f->first_launch_ms = median(t, reps);
    free(t);
    return 0;
}

/* Bundle file -> loaded module -> a launch done, as a deployment starts. */
static int time_bundle_launch(int reps, figures *f)
{
    double *t = calloc((size_t)reps, sizeof *t);
    rt_kernel_req r = make_req("rep0", 0);
    int T = 0, B = 0, H = 0;
    CUdeviceptr null = 0;
    void *args[] = {&null, &null, &null, &null, &T, &B, &H};
    unsigned grid[3] = {1, 1, 1}, block[3] = {256, 1, 1};
    for (int i = 0; i < reps; i++) {
        rt_bundle *b = NULL;
        rt_kernel k;
        rt_kernel_cache_clear();
        double t0 = rt_now_ms();
        int bad = rt_bundle_load(&b, f->bundle) != RNNC_OK || rt_bundle_register(b) != RNNC_OK ||
                  rt_kernel_get(&r, 0, &k) != RNNC_OK || k.origin != RT_FROM_BUNDLE ||
                  rt_launch(k.fn[0], grid, block, 0, NULL, args, true) != RNNC_OK ||
                  rt_dev_sync(NULL) != RNNC_OK;
        t[i] = rt_now_ms() - t0;
        rt_bundle_destroy(b);
        if (bad) {
            fprintf(stderr, "bundle launch: %s\n", rnnc_last_error());
            free(t);
            return 1;
        }
    }
    f->bundle_launch_ms = median(t, reps);
    free(t);
    return 0;
}

static int time_memory_hit(figures *f)
{
    enum { N = 20000 };
    rt_kernel_req r = make_req("rep0", 0);
    rt_kernel k;
    double t0 = rt_now_ms();
    for (int i = 0; i < N; i++)
        if (rt_kernel_get(&r, 0, &k) != RNNC_OK || k.origin != RT_FROM_MEMORY) {
            fprintf(stderr, "memory hit: %s\n", rnnc_last_error());
            return 1;
        }
    f->memory_us = (rt_now_ms() - t0) * 1000.0 / N;
    return 0;
}

static int gpu_figures(int reps, figures *f)
{
    if (!rt_cuda_available())
        return 0;
    f->gpu = true;
    rt_cuda_describe(0, f->device, sizeof f->device);
    return time_first_launch(reps, f) || time_memory_hit(f) || time_bundle_launch(reps, f);
}
#else
static int gpu_figures(int reps, figures *f)
{
    (void)reps;
    (void)f;
    return 0;
}
#endif

static cJSON *num_or_null(bool have, double v)
{
    return have ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static int write_json(const char *path, const figures *f, bool ok_disk, bool ok_mem)
{
    int major = 0, minor = 0;
    char nv[32];
    rt_nvrtc_version(&major, &minor);
    snprintf(nv, sizeof nv, "%d.%d", major, minor);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "benchmark", "cache");
    cJSON_AddStringToObject(j, "device", f->gpu ? f->device : "none");
    cJSON_AddStringToObject(j, "nvrtc", nv);
    cJSON_AddNumberToObject(j, "sm", f->sm);
    cJSON_AddNumberToObject(j, "cold_compile_ms", f->cold_ms);
    cJSON_AddNumberToObject(j, "disk_hit_ms", f->disk_ms);
    cJSON_AddNumberToObject(j, "cold_over_disk", f->cold_ms / f->disk_ms);
    cJSON_AddItemToObject(j, "disk_first_launch_ms", num_or_null(f->gpu, f->first_launch_ms));
    cJSON_AddItemToObject(j, "memory_hit_us", num_or_null(f->gpu, f->memory_us));
    cJSON_AddNumberToObject(j, "bundle_load_ms", f->bundle_ms);
    cJSON_AddItemToObject(j, "bundle_first_launch_ms", num_or_null(f->gpu, f->bundle_launch_ms));
    cJSON_AddBoolToObject(j, "disk_target_met", ok_disk);
    cJSON_AddItemToObject(j, "memory_target_met",
                          f->gpu ? cJSON_CreateBool(ok_mem) : cJSON_CreateNull());
    int rc = bench_write_json(path, j);
    cJSON_Delete(j);
    return rc;
}

int main(int argc, char **argv)
{
    const char *json = NULL;
    int reps = 5;
    if (!bench_args(argc, argv, "reps", &json, &reps))
        return 2;
    char dir[] = "/tmp/rnnc-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("RNNC_CACHE_DIR", dir, 1); /* empty: the first gets must compile */
    unsetenv("RNNC_CACHE");
    figures f = {.sm = 90};
#ifdef RT_HAVE_CUDA_H
    if (rt_cuda_available())
        rt_cuda_arch(0, &f.sm);
#endif
    int rc = time_cubin(reps, true, f.sm, RT_FROM_COMPILE, &f.cold_ms) ||
             time_cubin(4 * reps, false, f.sm, RT_FROM_DISK, &f.disk_ms) ||
             make_bundle(&f, dir) || time_bundle_load(4 * reps, &f) || gpu_figures(reps, &f);
    remove(f.bundle);
    rnnc_cache_clear(NULL);
    char sub[64];
    snprintf(sub, sizeof sub, "%s/kernels", dir);
    rmdir(sub);
    rmdir(dir);
    if (rc)
        return 1;
    bool ok_disk = f.cold_ms >= 20 * f.disk_ms, ok_mem = !f.gpu || f.memory_us < 50;
    printf("kernel cache, sm_%d, %s\n", f.sm, f.gpu ? f.device : "no GPU");
    printf("  cold compile (NVRTC)        %10.3f ms\n", f.cold_ms);
    printf("  disk hit (cubin)            %10.3f ms   %.0fx faster  [target >= 20x: %s]\n",
           f.disk_ms, f.cold_ms / f.disk_ms, ok_disk ? "met" : "MISSED");
    if (f.gpu) {
        printf("  first launch from disk      %10.3f ms\n", f.first_launch_ms);
        printf("  in-process hit              %10.3f us   [target < 50 us: %s]\n", f.memory_us,
               ok_mem ? "met" : "MISSED");
    }
    printf("  bundle load (file + find)   %10.3f ms\n", f.bundle_ms);
    if (f.gpu)
        printf("  first launch from bundle    %10.3f ms\n", f.bundle_launch_ms);
    if (json && write_json(json, &f, ok_disk, ok_mem) != 0)
        return 1;
    return ok_disk && ok_mem ? 0 : 1;
}
