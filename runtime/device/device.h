/*
 * device.h: the internal header of runtime/device: the CUDA driver
 * (cuda.c) and NVRTC (nvrtc.c), both opened with dlopen on first use and
 * never linked, so the library loads and its CPU paths work on a machine
 * with neither.
 *
 * Uses: common.
 */
#ifndef RNNC_RUNTIME_DEVICE_H
#define RNNC_RUNTIME_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "rnnc.h"

/* ---------------------------------------------------------------- CUDA driver (cuda.c) */

/*
 * libcuda.so.1 is opened with dlopen on first use, never linked, so the
 * library loads and its CPU paths work on a machine with no driver.  The
 * declarations below need <cuda.h>; without it (no CUDA toolkit at build
 * time) only the predicates remain.
 */
#include <stdio.h>

#if defined(__has_include)
#if __has_include(<cuda.h>)
#define RT_HAVE_CUDA_H 1
#endif
#endif

bool rt_cuda_available(void); /* driver loaded, cuInit ok, >= 1 device */

#ifdef RT_HAVE_CUDA_H
#include <cuda.h>

/* The driver entry points rnnc uses, named as the driver call minus "cu";
 * each has exactly the type of the call in <cuda.h> (_v2 symbols resolved). */
#define RT_CUDA_FN(X)                                                                          \
    X(Init) X(DriverGetVersion) X(DeviceGet) X(DeviceGetCount) X(DeviceGetAttribute)           \
    X(DeviceGetName) X(DevicePrimaryCtxRetain) X(DevicePrimaryCtxRelease) X(CtxSetCurrent)     \
    X(CtxGetCurrent) X(CtxGetDevice) X(CtxSynchronize) X(MemGetInfo) X(MemAlloc) X(MemFree) X(MemcpyHtoD)      \
    X(MemcpyDtoH) X(MemcpyDtoD) X(MemsetD8) X(MemsetD32) X(MemcpyHtoDAsync)                    \
    X(MemcpyDtoHAsync) X(MemcpyDtoDAsync) X(MemsetD8Async) X(MemsetD32Async)                   \
    X(ModuleLoadData) X(ModuleLoadDataEx) X(ModuleUnload) X(ModuleGetFunction)                 \
    X(ModuleGetGlobal) X(FuncSetAttribute) X(FuncGetAttribute) X(LaunchKernel) X(LaunchKernelEx) \
    X(LaunchCooperativeKernel) X(OccupancyMaxActiveBlocksPerMultiprocessor)                    \
    X(OccupancyMaxActiveClusters) X(EventCreate)                                              \
    X(EventRecord) X(EventSynchronize) X(EventElapsedTime) X(EventDestroy) X(StreamCreate)     \
    X(StreamCreateWithPriority) X(CtxGetStreamPriorityRange) X(StreamWaitEvent)                \
    X(StreamDestroy) X(StreamSynchronize) X(GetErrorString) X(PointerGetAttribute)

#define RT_CUDA_FIELD(n) __typeof__(cu##n) *n;
typedef struct rt_cuda_api {
    RT_CUDA_FN(RT_CUDA_FIELD)
    /* optional (a CUDA 12 driver): NULL where missing, and only the tensor
     * maps of the wgmma GEMM tiles need it (rt_tensor_map) */
    __typeof__(cuTensorMapEncodeTiled) *TensorMapEncodeTiled;
} rt_cuda_api;
#undef RT_CUDA_FIELD

/* Opens the driver once (thread-safe) and calls cuInit.  RNNC_ERR_NO_DEVICE
 * (with the reason) when the library is missing, cuInit fails or there is
 * no device.  Every other rt_cuda_* call does this itself. */
rnnc_status rt_cuda_load(void);
/* The table; NULL unless rt_cuda_load succeeded. */
const rt_cuda_api *rt_cu(void);
/* RNNC_OK for CUDA_SUCCESS, else RNNC_ERR_CUDA (OUT_OF_MEMORY for
 * CUDA_ERROR_OUT_OF_MEMORY) with "what: <driver's error string>". */
rnnc_status rt_cuda_check(CUresult r, const char *what);
int rt_cuda_device_count(void); /* 0 without a driver */
/* Retains `device`'s PRIMARY context (shared with the CUDA runtime, so
 * PyTorch's pointers are valid) once per process and makes it current on
 * the calling thread. */
rnnc_status rt_cuda_context(int device);
rnnc_status rt_cuda_arch(int device, int *sm); /* e.g. 90 for sm_90 */
rnnc_status rt_cuda_sm_count(int device, int *count);
rnnc_status rt_cuda_attr(int device, CUdevice_attribute attr, int *value);
/* "NVIDIA H100 80GB HBM3, sm_90, 132 SMs, driver 13.0" into buf. */
rnnc_status rt_cuda_describe(int device, char *buf, size_t n);

/* Device memory in the current context (call rt_cuda_context first). */
rnnc_status rt_dev_alloc(CUdeviceptr *p, size_t n);
void rt_dev_free(CUdeviceptr p); /* 0 is fine */
rnnc_status rt_dev_upload(CUdeviceptr dst, const void *src, size_t n, CUstream s);
rnnc_status rt_dev_download(void *dst, CUdeviceptr src, size_t n, CUstream s);
rnnc_status rt_dev_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
rnnc_status rt_dev_zero(CUdeviceptr dst, size_t n, CUstream s);
/* (The copies are asynchronous on s; rt_dev_sync waits for s.) */
rnnc_status rt_dev_sync(CUstream s);
/* RNNC_OK if p is device memory of `device` (or managed memory); else
 * RNNC_ERR_INVALID_ARG naming `what` and where p lives. */
rnnc_status rt_dev_check_pointer(const void *p, int device, const char *what);

/*
 * Launches f.  smem is dynamic shared memory in bytes; above 48 KiB the
 * function's limit is raised first.  A cooperative launch first checks
 * with the occupancy API that every block can be resident at once, else
 * RNNC_ERR_UNSUPPORTED naming blocks needed and blocks possible.
 */
rnnc_status rt_launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                      unsigned smem, CUstream s, void **args, bool cooperative);
/* rt_launch with options: RT_LAUNCH_COOPERATIVE as rt_launch's cooperative;
 * RT_LAUNCH_RESIDENT the same check, then an ordinary launch (a persistent
 * kernel that runs beside another on its own share of the SMs: the driver
 * need not overlap two cooperative launches; the caller keeps the grids of
 * the kernels that run at once within the device); RT_LAUNCH_PDL: the grid may
 * start while the kernel before it in s still runs (programmatic dependent
 * launch, sm_90 on): f must run griddepcontrol.wait before it touches
 * anything earlier work in the stream writes, and it lets its own
 * dependents start with griddepcontrol.launch_dependents.
 * RT_LAUNCH_CLUSTER(n), n > 1: f has a compiled-in cluster of n blocks
 * (__cluster_dims__); a cooperative or resident launch of it is checked
 * cluster by cluster (cuOccupancyMaxActiveClusters) and then launched as
 * an ordinary one (the driver's cooperative launch does not take
 * clusters). */
enum { RT_LAUNCH_COOPERATIVE = 1, RT_LAUNCH_RESIDENT = 2, RT_LAUNCH_PDL = 4 };
#define RT_LAUNCH_CLUSTER(n) ((int)(n) << 8)
rnnc_status rt_launch_ex(CUfunction f, const unsigned grid[3], const unsigned block[3],
                         unsigned smem, CUstream s, void **args, int flags);
/* A tensor map over rows x cols elements of es bytes (4: fp32, 2: 16-bit)
 * at p (rows contiguous), boxes of 128 bytes x box_rows rows, 128-byte
 * swizzle, rows past the end read as zeros: what the wgmma tiles' TMA
 * copies take (codegen/cuda/cuda_wgmma.c). */
rnnc_status rt_tensor_map(CUtensorMap *m, CUdeviceptr p, uint64_t rows, uint64_t cols,
                          unsigned es, unsigned box_rows);
/* Blocks of f (with `threads` per block and `smem` bytes) that can be
 * resident at once on the whole device of the current context. */
rnnc_status rt_max_resident_blocks(CUfunction f, unsigned threads, unsigned smem, int *blocks);
/* Whether a grid of f (flags as rt_launch_ex's, with its cluster) can be
 * resident all at once; false with the reason recorded when it cannot. */
bool rt_launch_fits(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned smem,
                    int flags);

/* Median elapsed ms of `iters` calls of fn(ctx, s) after `warmup`, timed
 * with events on s (for autotuning and time_forward). */
rnnc_status rt_time_ms(rnnc_status (*fn)(void *ctx, CUstream s), void *ctx, CUstream s,
                       int warmup, int iters, double *median_ms);
#endif /* RT_HAVE_CUDA_H */

/* ---------------------------------------------------------------- NVRTC (nvrtc.c) */

/*
 * libnvrtc is opened with dlopen: $RNNC_NVRTC_PATH, else libnvrtc.so.13,
 * libnvrtc.so.12, libnvrtc.so on the loader path, else the same names in
 * /usr/local/cuda/lib64.  It needs no GPU.
 */
bool rt_nvrtc_available(void);
rnnc_status rt_nvrtc_version(int *major, int *minor);
/*
 * Compiles CUDA C `src` (label `name` in messages) to a CUBIN for sm_`sm`
 * with --std=c++17, -default-device, --gpu-architecture=sm_XX and the CUDA
 * include directory (for cooperative_groups), plus `extra_opts`.  *cubin is
 * malloc'ed (free()).  A failed compile is RNNC_ERR_NVRTC with the log in
 * rnnc_last_error(); a log with warnings is kept too (rt_nvrtc_last_log).
 */
rnnc_status rt_nvrtc_compile(const char *src, const char *name, int sm,
                             const char *const *extra_opts, int n_extra, void **cubin,
                             size_t *size);
/* The log of the last compile on this thread ("" if it was empty). */
const char *rt_nvrtc_last_log(void);
/* The fixed options rt_nvrtc_compile adds (for the cache key), NULL-terminated. */
const char *const *rt_nvrtc_base_options(void);

#endif
