/*
 * cuda.c: the CUDA driver, opened with dlopen so that rnnc loads and runs
 * its CPU paths on machines with no driver.  Holds the function table,
 * primary contexts, device memory helpers and kernel launch.
 */
#define _GNU_SOURCE
#include "runtime/device/device.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifndef RT_HAVE_CUDA_H

bool rt_cuda_available(void)
{
    return false;
}

#else

#define RT_MAX_DEVICES 64

static rt_cuda_api g_api;
static bool g_loaded;
static rnnc_status g_load_status = RNNC_ERR_NO_DEVICE;
static char g_load_error[512];
static int g_device_count;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static pthread_mutex_t g_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext g_ctx[RT_MAX_DEVICES];

#define RT_STR_(x) #x
#define RT_STR(x) RT_STR_(x)

/* The header's macro gives the versioned symbol (cuMemAlloc -> cuMemAlloc_v2);
 * an older driver may only have the plain one, whose type is the same for
 * the calls listed here. */
static void *resolve(void *lib, const char *versioned, const char *plain)
{
    void *p = dlsym(lib, versioned);
    return p ? p : dlsym(lib, plain);
}

static bool resolve_all(void *lib)
{
#define RT_CUDA_RESOLVE(n)                                                                     \
    g_api.n = (__typeof__(g_api.n))resolve(lib, RT_STR(cu##n), "cu" #n);                      \
    if (!g_api.n) {                                                                            \
        snprintf(g_load_error, sizeof g_load_error,                                            \
                 "libcuda.so.1 lacks %s (driver too old?)", RT_STR(cu##n));                    \
        return false;                                                                          \
    }
    RT_CUDA_FN(RT_CUDA_RESOLVE)
#undef RT_CUDA_RESOLVE
    g_api.TensorMapEncodeTiled =
        (__typeof__(g_api.TensorMapEncodeTiled))dlsym(lib, "cuTensorMapEncodeTiled");
    return true;
}

static void load_once(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(g_load_error, sizeof g_load_error, "no CUDA driver: %s", dlerror());
        return;
    }
    if (!resolve_all(lib))
        return; /* the library stays open: the process may still want it */
    CUresult r = g_api.Init(0);
    if (r != CUDA_SUCCESS) {
        const char *msg = "?";
        g_api.GetErrorString(r, &msg);
        snprintf(g_load_error, sizeof g_load_error, "cuInit failed: %s", msg ? msg : "?");
        return;
    }
    if (g_api.DeviceGetCount(&g_device_count) != CUDA_SUCCESS || g_device_count <= 0) {
        g_device_count = 0;
        snprintf(g_load_error, sizeof g_load_error, "the CUDA driver sees no device");
        return;
    }
    g_loaded = true;
    g_load_status = RNNC_OK;
}

rnnc_status rt_cuda_load(void)
{
    pthread_once(&g_once, load_once);
    if (!g_loaded)
        return err_fail(g_load_status, "%s", g_load_error);
    return RNNC_OK;
}

const rt_cuda_api *rt_cu(void)
{
    pthread_once(&g_once, load_once);
    return g_loaded ? &g_api : NULL;
}

bool rt_cuda_available(void)
{
    return rt_cu() != NULL;
}

int rt_cuda_device_count(void)
{
    return rt_cu() ? g_device_count : 0;
}

rnnc_status rt_cuda_check(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return RNNC_OK;
    const char *msg = NULL;
    if (g_api.GetErrorString)
        g_api.GetErrorString(r, &msg);
    rnnc_status s = r == CUDA_ERROR_OUT_OF_MEMORY ? RNNC_ERR_OUT_OF_MEMORY : RNNC_ERR_CUDA;
    return err_fail(s, "%s: %s (CUresult %d)", what, msg ? msg : "unknown error", (int)r);
}

static rnnc_status check_device(int device)
{
    rnnc_status s = rt_cuda_load();
    if (s != RNNC_OK)
        return s;
    if (device < 0 || device >= g_device_count || device >= RT_MAX_DEVICES)
        return err_fail(RNNC_ERR_INVALID_ARG, "CUDA device %d does not exist (%d device%s)",
                        device, g_device_count, g_device_count == 1 ? "" : "s");
    return RNNC_OK;
}

static rnnc_status retain_primary(int device, CUcontext *ctx)
{
    rnnc_status s = RNNC_OK;
    pthread_mutex_lock(&g_ctx_lock);
    if (!g_ctx[device]) {
        CUdevice dev;
        s = rt_cuda_check(g_api.DeviceGet(&dev, device), "cuDeviceGet");
        if (s == RNNC_OK)
            s = rt_cuda_check(g_api.DevicePrimaryCtxRetain(&g_ctx[device], dev),
                              "cuDevicePrimaryCtxRetain");
    }
    *ctx = g_ctx[device];
    pthread_mutex_unlock(&g_ctx_lock);
    return s;
}

rnnc_status rt_cuda_context(int device)
{
    rnnc_status s = check_device(device);
    if (s != RNNC_OK)
        return s;
    CUcontext ctx = NULL;
    s = retain_primary(device, &ctx);
    if (s != RNNC_OK)
        return s;
    CUcontext cur = NULL;
    g_api.CtxGetCurrent(&cur);
    if (cur == ctx)
        return RNNC_OK;
    return rt_cuda_check(g_api.CtxSetCurrent(ctx), "cuCtxSetCurrent");
}

rnnc_status rt_cuda_attr(int device, CUdevice_attribute attr, int *value)
{
    rnnc_status s = check_device(device);
    if (s != RNNC_OK)
        return s;
    CUdevice dev;
    s = rt_cuda_check(g_api.DeviceGet(&dev, device), "cuDeviceGet");
    if (s != RNNC_OK)
        return s;
    return rt_cuda_check(g_api.DeviceGetAttribute(value, attr, dev), "cuDeviceGetAttribute");
}

rnnc_status rt_cuda_arch(int device, int *sm)
{
    int major = 0, minor = 0;
    rnnc_status s = rt_cuda_attr(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major);
    if (s == RNNC_OK)
        s = rt_cuda_attr(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor);
    if (s == RNNC_OK)
        *sm = major * 10 + minor;
    return s;
}

rnnc_status rt_cuda_sm_count(int device, int *count)
{
    return rt_cuda_attr(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, count);
}

rnnc_status rt_cuda_describe(int device, char *buf, size_t n)
{
    int sm = 0, sms = 0, drv = 0;
    char name[256] = "";
    rnnc_status s = rt_cuda_arch(device, &sm);
    if (s == RNNC_OK)
        s = rt_cuda_sm_count(device, &sms);
    if (s != RNNC_OK)
        return s;
    CUdevice dev;
    g_api.DeviceGet(&dev, device);
    g_api.DeviceGetName(name, (int)sizeof name, dev);
    g_api.DriverGetVersion(&drv);
    snprintf(buf, n, "%s, sm_%d, %d SMs, driver %d.%d", name, sm, sms, drv / 1000,
             drv % 1000 / 10);
    return RNNC_OK;
}

/* ---------------------------------------------------------------- device memory */

rnnc_status rt_dev_alloc(CUdeviceptr *p, size_t n)
{
    rnnc_status s = rt_cuda_load();
    if (s != RNNC_OK)
        return s;
    *p = 0;
    if (n == 0)
        n = 1; /* a valid, distinct pointer even for an empty tensor */
    s = rt_cuda_check(g_api.MemAlloc(p, n), "cuMemAlloc");
    if (s != RNNC_OK)
        err_fail_append("%zu bytes", n);
    return s;
}

void rt_dev_free(CUdeviceptr p)
{
    if (p && g_loaded)
        g_api.MemFree(p);
}

rnnc_status rt_dev_upload(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    if (n == 0)
        return RNNC_OK;
    return rt_cuda_check(g_api.MemcpyHtoDAsync(dst, src, n, s), "cuMemcpyHtoDAsync");
}

rnnc_status rt_dev_download(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    if (n == 0)
        return RNNC_OK;
    return rt_cuda_check(g_api.MemcpyDtoHAsync(dst, src, n, s), "cuMemcpyDtoHAsync");
}

rnnc_status rt_dev_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    if (n == 0)
        return RNNC_OK;
    return rt_cuda_check(g_api.MemcpyDtoDAsync(dst, src, n, s), "cuMemcpyDtoDAsync");
}

rnnc_status rt_dev_zero(CUdeviceptr dst, size_t n, CUstream s)
{
    if (n == 0)
        return RNNC_OK;
    return rt_cuda_check(g_api.MemsetD8Async(dst, 0, n, s), "cuMemsetD8Async");
}

rnnc_status rt_dev_sync(CUstream s)
{
    return rt_cuda_check(g_api.StreamSynchronize(s), "cuStreamSynchronize");
}

rnnc_status rt_dev_check_pointer(const void *p, int device, const char *what)
{
    int ordinal = -1;
    CUresult r = g_api.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                           (CUdeviceptr)(uintptr_t)p);
    if (r != CUDA_SUCCESS)
        return err_fail(RNNC_ERR_INVALID_ARG,
                        "%s (%p) is not CUDA device memory, but device_pointers is set", what, p);
    if (ordinal != device)
        return err_fail(RNNC_ERR_INVALID_ARG, "%s is on device %d, the model on device %d", what,
                        ordinal, device);
    return RNNC_OK;
}

/* ---------------------------------------------------------------- launch */

rnnc_status rt_max_resident_blocks(CUfunction f, unsigned threads, unsigned smem, int *blocks)
{
    CUdevice dev;
    int per_sm = 0, sms = 0;
    rnnc_status s = rt_cuda_check(
        g_api.OccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, (int)threads, smem),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    if (s == RNNC_OK)
        s = rt_cuda_check(g_api.CtxGetDevice(&dev), "cuCtxGetDevice");
    if (s == RNNC_OK)
        s = rt_cuda_check(g_api.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                                   dev),
                          "cuDeviceGetAttribute");
    *blocks = s == RNNC_OK ? per_sm * sms : 0;
    return s;
}

/* Dynamic shared memory above the 48 KiB default must be opted into per function. */
static rnnc_status allow_smem(CUfunction f, unsigned smem)
{
    if (smem <= 48u * 1024u)
        return RNNC_OK;
    int cur = 0;
    g_api.FuncGetAttribute(&cur, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f);
    if (cur >= (int)smem)
        return RNNC_OK;
    rnnc_status s = rt_cuda_check(
        g_api.FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    if (s != RNNC_OK)
        err_fail_append("%u bytes of dynamic shared memory asked for", smem);
    return s;
}

/* Clusters of f that can be resident at once (its cluster size compiled in). */
static rnnc_status max_clusters(CUfunction f, const unsigned block[3], unsigned smem,
                                unsigned cluster, int *n)
{
    CUlaunchConfig cfg = {.gridDimX = cluster, .gridDimY = 1, .gridDimZ = 1, .blockDimX = block[0],
                          .blockDimY = block[1], .blockDimZ = block[2], .sharedMemBytes = smem};
    *n = 0;
    return rt_cuda_check(g_api.OccupancyMaxActiveClusters(n, f, &cfg),
                         "cuOccupancyMaxActiveClusters");
}

static rnnc_status check_coresident(CUfunction f, const unsigned grid[3],
                                    const unsigned block[3], unsigned smem, unsigned cluster)
{
    unsigned long long want = (unsigned long long)grid[0] * grid[1] * grid[2];
    unsigned threads = block[0] * block[1] * block[2];
    int can = 0;
    rnnc_status s = cluster > 1 ? max_clusters(f, block, smem, cluster, &can)
                                : rt_max_resident_blocks(f, threads, smem, &can);
    if (s != RNNC_OK)
        return s;
    if (cluster > 1 && want > (unsigned long long)can * cluster)
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "persistent launch of %llu blocks in clusters of %u (%u threads, %u "
                        "bytes shared memory each) but only %d clusters can be resident on "
                        "this device", want, cluster, threads, smem, can);
    if (cluster <= 1 && want > (unsigned long long)can)
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "cooperative launch of %llu blocks (%u threads, %u bytes shared "
                        "memory each) but only %d can be resident on this device",
                        want, threads, smem, can);
    return RNNC_OK;
}

bool rt_launch_fits(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned smem,
                    int flags)
{
    rnnc_status st = g_loaded ? RNNC_OK : rt_cuda_load();
    if (st == RNNC_OK)
        st = allow_smem(f, smem);
    return st == RNNC_OK && check_coresident(f, grid, block, smem, (unsigned)flags >> 8) == RNNC_OK;
}

/* A launch with attributes (cooperative, programmatic serialisation). */
static rnnc_status launch_attrs(CUfunction f, const unsigned grid[3], const unsigned block[3],
                                unsigned smem, CUstream s, void **args, int flags)
{
    CUlaunchAttribute at[2];
    unsigned n = 0;
    memset(at, 0, sizeof at);
    if (flags & RT_LAUNCH_COOPERATIVE) {
        at[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        at[n++].value.cooperative = 1;
    }
    at[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    at[n++].value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg = {.gridDimX = grid[0], .gridDimY = grid[1], .gridDimZ = grid[2],
                          .blockDimX = block[0], .blockDimY = block[1], .blockDimZ = block[2],
                          .sharedMemBytes = smem, .hStream = s, .attrs = at, .numAttrs = n};
    return rt_cuda_check(g_api.LaunchKernelEx(&cfg, f, args, NULL), "cuLaunchKernelEx");
}

rnnc_status rt_tensor_map(CUtensorMap *m, CUdeviceptr p, uint64_t rows, uint64_t cols,
                          unsigned es, unsigned box_rows)
{
    rnnc_status st = g_loaded ? RNNC_OK : rt_cuda_load();
    if (st != RNNC_OK)
        return st;
    if (!g_api.TensorMapEncodeTiled)
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "the driver has no cuTensorMapEncodeTiled (CUDA 12.0 or newer), which "
                        "the wgmma GEMM tiles on sm_90 need; RNNC_FUSED_TMA=0 "
                        "generates tiles without it");
    cuuint64_t dims[2] = {cols, rows}, strides[1] = {cols * es};
    cuuint32_t box[2] = {128 / es, box_rows}, one[2] = {1, 1};
    /* (the copies move bits: any 16-bit type serves f16 and bf16 alike) */
    CUtensorMapDataType ty = es == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    CUresult r = g_api.TensorMapEncodeTiled(m, ty, 2, (void *)p, dims, strides, box, one,
                                            CU_TENSOR_MAP_INTERLEAVE_NONE,
                                            CU_TENSOR_MAP_SWIZZLE_128B,
                                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r == CUDA_SUCCESS)
        return RNNC_OK;
    /* what the map was asked for: the driver's code alone does not say */
    const char *why = NULL;
    g_api.GetErrorString(r, &why);
    return err_fail(RNNC_ERR_CUDA,
                    "cuTensorMapEncodeTiled: %s (CUresult %d) for %llu x %llu elements of %u "
                    "bytes at 0x%llx, boxes of %u rows",
                    why ? why : "?", (int)r, (unsigned long long)rows, (unsigned long long)cols,
                    es, (unsigned long long)p, box_rows);
}

rnnc_status rt_launch_ex(CUfunction f, const unsigned grid[3], const unsigned block[3],
                         unsigned smem, CUstream s, void **args, int flags)
{
    unsigned cluster = (unsigned)flags >> 8;
    rnnc_status st = g_loaded ? RNNC_OK : rt_cuda_load();
    if (st == RNNC_OK)
        st = allow_smem(f, smem);
    if (st == RNNC_OK && (flags & (RT_LAUNCH_COOPERATIVE | RT_LAUNCH_RESIDENT)))
        st = check_coresident(f, grid, block, smem, cluster);
    if (st != RNNC_OK)
        return st;
    if (cluster > 1)
        flags &= ~RT_LAUNCH_COOPERATIVE; /* checked above, launched as an ordinary grid */
    if (flags & RT_LAUNCH_PDL)
        return launch_attrs(f, grid, block, smem, s, args, flags);
    if (flags & RT_LAUNCH_COOPERATIVE)
        return rt_cuda_check(g_api.LaunchCooperativeKernel(f, grid[0], grid[1], grid[2], block[0],
                                                           block[1], block[2], smem, s, args),
                             "cuLaunchCooperativeKernel");
    return rt_cuda_check(g_api.LaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1],
                                            block[2], smem, s, args, NULL),
                         "cuLaunchKernel");
}

rnnc_status rt_launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                      unsigned smem, CUstream s, void **args, bool cooperative)
{
    return rt_launch_ex(f, grid, block, smem, s, args, cooperative ? RT_LAUNCH_COOPERATIVE : 0);
}

/* ---------------------------------------------------------------- timing */

static rnnc_status time_iters(rnnc_status (*fn)(void *, CUstream), void *ctx, CUstream s,
                              CUevent ev[2], int iters, double *ms)
{
    for (int i = 0; i < iters; i++) {
        float t = 0;
        rnnc_status st = rt_cuda_check(g_api.EventRecord(ev[0], s), "cuEventRecord");
        if (st == RNNC_OK)
            st = fn(ctx, s);
        if (st == RNNC_OK)
            st = rt_cuda_check(g_api.EventRecord(ev[1], s), "cuEventRecord");
        if (st == RNNC_OK)
            st = rt_cuda_check(g_api.EventSynchronize(ev[1]), "cuEventSynchronize");
        if (st == RNNC_OK)
            st = rt_cuda_check(g_api.EventElapsedTime(&t, ev[0], ev[1]), "cuEventElapsedTime");
        if (st != RNNC_OK)
            return st;
        ms[i] = t;
    }
    return RNNC_OK;
}

rnnc_status rt_time_ms(rnnc_status (*fn)(void *ctx, CUstream s), void *ctx, CUstream s,
                       int warmup, int iters, double *median_ms)
{
    if (iters < 1 || warmup < 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "timing needs iters >= 1 and warmup >= 0");
    rnnc_status st = RNNC_OK;
    for (int i = 0; i < warmup && st == RNNC_OK; i++)
        st = fn(ctx, s);
    if (st != RNNC_OK)
        return st;
    double *ms = malloc(sizeof *ms * (size_t)iters);
    if (!ms)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "timing buffer");
    CUevent ev[2] = {NULL, NULL};
    st = rt_cuda_check(g_api.EventCreate(&ev[0], CU_EVENT_DEFAULT), "cuEventCreate");
    if (st != RNNC_OK)
        goto free_ms;
    st = rt_cuda_check(g_api.EventCreate(&ev[1], CU_EVENT_DEFAULT), "cuEventCreate");
    if (st != RNNC_OK)
        goto destroy_ev0;
    st = time_iters(fn, ctx, s, ev, iters, ms);
    if (st == RNNC_OK)
        *median_ms = cm_median(ms, iters);
    g_api.EventDestroy(ev[1]);
destroy_ev0:
    g_api.EventDestroy(ev[0]);
free_ms:
    free(ms);
    return st;
}
#endif /* RT_HAVE_CUDA_H */
