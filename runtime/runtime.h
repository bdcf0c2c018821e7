/*
 * runtime.h: the internal header of the runtime/ stage: what executes.
 *
 * Sections (one owner each; edit only your own section):
 *   1. model spec and backend interface (spec.c)       -- shared contract
 *   2. tensors and safetensors (tensors.c, safetensors.c)
 *   3. CUDA driver, loaded with dlopen (cuda.c)
 *   4. NVRTC, loaded with dlopen (nvrtc.c)
 *   5. kernel cache (cache*.c)
 *   6. Philox and dropout (philox.c)
 *   7. reference interpreter (interp*.c)
 *   8. fused GPU backend (fused*.c)
 *   9. CPU backend through LLVM ORC (cpu*.c)
 */
#ifndef RNNC_RUNTIME_H
#define RNNC_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "ir/ir.h"
#include "rnnc.h"

/* ================================================================ 1. model spec */

/*
 * A model as every backend sees it.  fn[0] is the cell specialised for
 * layer 0 (input size I), fn[1] for layers > 0 (input size D * Hout); both
 * have had ir_optimise run (optional params decided).  sizes[k] are the
 * dims fn[k] is bound to.  Pseudo-layer p = layer * dirs + dir.
 */
typedef struct rt_spec {
    const ir_fn *fn[2];
    ir_sizes sizes[2];
    int layers;
    int dirs;
    bool batch_first;
    double dropout;
    uint64_t seed;
    rnnc_hoist hoist;
    rnnc_math math;
    rnnc_dtype dtype;
    int device;
    int64_t hout; /* P if projection, else H: the width of y per direction */
    bool no_bias; /* bias=False: fn[] were specialised without their biases */
    rnnc_cudnn_algo cudnn_algo;
} rt_spec;

static inline const ir_fn *rt_spec_fn(const rt_spec *s, int layer)
{
    return s->fn[layer > 0];
}

static inline ir_sizes rt_spec_sizes(const rt_spec *s, int layer)
{
    return s->sizes[layer > 0];
}

/*
 * Weights in host memory, fp32, PyTorch layout (row-major [rows, cols] for a
 * matrix), one pointer per (pseudo-layer, param of that layer's fn); NULL
 * for an absent optional param.  w[p * n_params + i].
 */
typedef struct rt_weights {
    const float *const *w;
    int n_params; /* params of fn[0]; fn[1] has the same params in the same order */
    int pseudo_layers;
} rt_weights;

static inline const float *rt_weight(const rt_weights *w, int pseudo, int param)
{
    return w->w[pseudo * w->n_params + param];
}

/* A backend behind the model API.  `state` is the backend's own object. */
typedef struct rt_backend {
    const char *name;
    rnnc_status (*create)(const rt_spec *s, void **state);
    /* Called whenever weights change; the backend copies what it keeps. */
    rnnc_status (*bind)(void *state, const rt_weights *w);
    rnnc_status (*forward)(void *state, const rnnc_forward_args *a);
    /* Optional (NULL): median ms of forward on the buffers of a. */
    rnnc_status (*time_forward)(void *state, const rnnc_forward_args *a, int warmup, int iters,
                                double *median_ms);
    /* Optional (NULL = RNNC_ERR_UNSUPPORTED). */
    rnnc_status (*backward)(void *state, const rnnc_backward_args *a);
    rnnc_status (*weight_grad)(void *state, int pseudo, int param, float *out, int64_t count);
    /* Optional (NULL: the host clock over forward and backward): median ms of
     * a training forward plus its backward on the buffers of f and b. */
    rnnc_status (*time_training)(void *state, const rnnc_forward_args *f,
                                 const rnnc_backward_args *b, int warmup, int iters,
                                 double *median_ms);
    /* Optional (NULL: backward decides): RNNC_OK when a training forward
     * here can be differentiated, else why not (AUTO then moves on). */
    rnnc_status (*can_train)(void *state);
    void (*destroy)(void *state);
} rt_backend;

extern const rt_backend rt_backend_interp;
extern const rt_backend rt_backend_cpu;   /* RNNC_HAVE_LLVM */
extern const rt_backend rt_backend_fused; /* RNNC_HAVE_CUDA */

/* Checks a forward call's shapes and lengths against the spec (every backend calls it). */
rnnc_status rt_check_forward(const rt_spec *s, const rnnc_forward_args *a);
/* Median host-clock ms of be->forward after `warmup` calls (the model API's
 * timing for backends whose time_forward is NULL). */
rnnc_status rt_time_host(const rt_backend *be, void *state, const rnnc_forward_args *a,
                         int warmup, int iters, double *median_ms);
/* The median of v[n] (n >= 1), sorting v. */
double rt_median(double *v, int n);

/* Half-precision models (half.c): F16 or BF16; conversions with round to
 * nearest even; n floats rounded to the dtype in place (F32: unchanged);
 * a host backend's forward (fwd on fp32 copies of the caller's buffers,
 * outputs rounded back to the dtype). */
bool rt_dtype_is_half(rnnc_dtype t);
void rt_f32_to_half(rnnc_dtype t, const float *src, void *dst, size_t n);
void rt_half_to_f32(rnnc_dtype t, const void *src, float *dst, size_t n);
void rt_round_f32(rnnc_dtype t, float *p, size_t n);
rnnc_status rt_forward_half(const rt_spec *s, const rnnc_forward_args *a,
                            rnnc_status (*fwd)(void *, const rnnc_forward_args *), void *state);

/* ================================================================ 2. tensors */

/* (tensors.c, safetensors.c implement the public rnnc_tensors_* API.) */

/* For rt_tensor_expect: accept any of F32, F16, BF16, F64 (then rt_tensor_to_f32). */
#define RT_DTYPE_ANY_FLOAT ((rnnc_dtype)100)

/* The dtype named `name` as in safetensors ("F32", "BF16", ...); false if none. */
bool rt_dtype_from_name(const char *name, rnnc_dtype *out);
/* Bytes of a tensor of this dtype and shape; false if a dim is negative,
 * the rank is out of [0, RNNC_MAX_RANK] or the size overflows. */
bool rt_tensor_bytes(rnnc_dtype dtype, int rank, const int64_t *shape, size_t *out);
size_t rt_tensor_nbytes(const rnnc_tensor *t);
/* "[2, 3]" into buf (truncated to n bytes); returns buf. */
char *rt_format_shape(char *buf, size_t n, int rank, const int64_t *shape);
/* Adds a tensor whose `rank`/`shape` are checked and whose data is left
 * uninitialised for the caller to fill through *data. */
rnnc_status rt_tensors_add_empty(rnnc_tensors *ts, const char *name, rnnc_dtype dtype, int rank,
                                 const int64_t *shape, void **data);
/*
 * The tensor `name` of `ts`, checked: RNNC_ERR_NOT_FOUND if missing,
 * RNNC_ERR_FORMAT if its dtype is not `dt` (RT_DTYPE_ANY_FLOAT: any float
 * dtype), RNNC_ERR_SHAPE ("expected [..] got [..]") unless it has `rank`
 * dims equal to `shape`.  rank < 0 skips the shape check.
 */
rnnc_status rt_tensor_expect(const rnnc_tensors *ts, const char *name, rnnc_dtype dt, int rank,
                             const int64_t *shape, const rnnc_tensor **out);
/* Converts a float tensor (F32, F16, BF16, F64) to fp32 into out[numel];
 * RNNC_ERR_FORMAT for an integer dtype. */
rnnc_status rt_tensor_to_f32(const rnnc_tensor *t, float *out);
/* rnnc_tensors_save in two steps, for a command that writes several files
 * all or none: stage writes the whole file to its temp file (o is closed on
 * failure); commit renames it into place; cm_out_abort drops it instead. */
rnnc_status rt_tensors_stage(const rnnc_tensors *ts, const char *path, cm_out *o);
rnnc_status rt_tensors_commit(cm_out *o);
/* After cJSON failed on text: true if it parses now (so what failed was an
 * allocation, RNNC_ERR_OUT_OF_MEMORY, not the text). */
bool rt_json_parses(const char *text, size_t n);

/* ================================================================ 3. CUDA driver */

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
    X(ModuleGetGlobal) X(FuncSetAttribute) X(FuncGetAttribute) X(LaunchKernel)                 \
    X(LaunchCooperativeKernel) X(OccupancyMaxActiveBlocksPerMultiprocessor) X(EventCreate)     \
    X(EventRecord) X(EventSynchronize) X(EventElapsedTime) X(EventDestroy) X(StreamCreate)     \
    X(StreamWaitEvent) X(StreamDestroy) X(StreamSynchronize) X(GetErrorString) X(PointerGetAttribute)

#define RT_CUDA_FIELD(n) __typeof__(cu##n) *n;
typedef struct rt_cuda_api {
    RT_CUDA_FN(RT_CUDA_FIELD)
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
/* The same check, then an ordinary launch: for a persistent kernel that
 * runs beside another on its own share of the SMs (the driver need not
 * overlap two cooperative launches).  The caller keeps the grids of the
 * kernels that run at once within the device. */
rnnc_status rt_launch_resident(CUfunction f, const unsigned grid[3], const unsigned block[3],
                               unsigned smem, CUstream s, void **args);
/* Blocks of f (with `threads` per block and `smem` bytes) that can be
 * resident at once on the whole device of the current context. */
rnnc_status rt_max_resident_blocks(CUfunction f, unsigned threads, unsigned smem, int *blocks);

/* Median elapsed ms of `iters` calls of fn(ctx, s) after `warmup`, timed
 * with events on s (for autotuning and time_forward). */
rnnc_status rt_time_ms(rnnc_status (*fn)(void *ctx, CUstream s), void *ctx, CUstream s,
                       int warmup, int iters, double *median_ms);
#endif /* RT_HAVE_CUDA_H */

/* ================================================================ 4. NVRTC */

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

/* ================================================================ 5. kernel cache */

/*
 * Two levels (docs/cache.md):
 *   rt_cubin_get:  key -> cubin, in ~/.cache/rnnc (or $RNNC_CACHE_DIR), else
 *                  NVRTC; needs no GPU;
 *   rt_kernel_get: (key, device) -> loaded module and functions, in memory,
 *                  on top of rt_cubin_get; thread-safe.
 * The key hashes (XXH3-128) everything that changes the binary: source,
 * RT_CODEGEN_VERSION, NVRTC's version, the full option list, sm and tuning.
 * Environment: RNNC_CACHE=0 (no disk cache), RNNC_CACHE_DIR,
 * XDG_CACHE_HOME, RNNC_CACHE_MAX_MB (default 1024; fractions allowed),
 * RNNC_LOG=info (one line per kernel: where it came from, how long).
 */

/* Bump whenever the code generators change what they emit for a given input. */
#define RT_CODEGEN_VERSION 5
#define RT_MAX_KERNELS 16

typedef enum rt_origin {
    RT_FROM_MEMORY = 0,
    RT_FROM_DISK = 1,
    RT_FROM_BUNDLE = 2,
    RT_FROM_COMPILE = 3
} rt_origin;

const char *rt_origin_name(rt_origin o); /* "memory", "disk", "bundle", "compile" */

typedef struct rt_kernel_req {
    const char *source;          /* CUDA C; kernels declared extern "C" */
    const char *name;            /* label for logs and listings, e.g. "lstm_l0_fwd" */
    const char *const *kernels;  /* __global__ names to look up (rt_kernel_get) */
    int n_kernels;               /* <= RT_MAX_KERNELS */
    int sm;                      /* e.g. 90; 0 in rt_kernel_get = the device's */
    const char *const *opts;     /* extra NVRTC options (part of the key) */
    int n_opts;
    const char *tuning;          /* the tuning choice as text (part of the key); may be NULL */
} rt_kernel_req;

typedef struct rt_cache_key {
    uint64_t lo, hi;
} rt_cache_key;

/* The key of req for sm (NVRTC must be loadable: its version is part of it). */
rnnc_status rt_cache_key_of(const rt_kernel_req *req, int sm, rt_cache_key *out);
void rt_cache_key_hex(rt_cache_key k, char hex[33]);

/* The cubin for req (req->sm must be set); *cubin is malloc'ed (free()). */
rnnc_status rt_cubin_get(const rt_kernel_req *req, void **cubin, size_t *size,
                         rt_origin *origin);

#ifdef RT_HAVE_CUDA_H
/* A loaded kernel set, owned by the cache: valid until rt_kernel_cache_clear. */
typedef struct rt_kernel {
    CUmodule module;
    CUfunction fn[RT_MAX_KERNELS]; /* in the order of req->kernels */
    int n;
    rt_origin origin;
    double ms; /* how long this lookup took */
} rt_kernel;

/* Makes device's primary context current, then finds or builds req's module. */
rnnc_status rt_kernel_get(const rt_kernel_req *req, int device, rt_kernel *out);
/* Unloads every module (no rt_kernel may be in use). */
void rt_kernel_cache_clear(void);
#endif

/* The disk cache directory in use; false when disabled (RNNC_CACHE=0) or none.
 * The cache as a whole is public: rnnc_cache_info/list/clear (cache_admin.c). */
bool rt_cache_dir(char *buf, size_t n);

/* Autotuning records: the winning tuning text for a shape key (any string
 * naming the cell, shapes, dtype and sm).  RNNC_ERR_NOT_FOUND when none. */
rnnc_status rt_tuning_get(const char *shape_key, char *tuning, size_t n);
rnnc_status rt_tuning_put(const char *shape_key, const char *tuning);

/*
 * AOT bundles (bundle.c; format in docs/cache.md): cubins for several sm_XX
 * plus tuning records in one versioned file.  Entries are found by the
 * in-process key (rt_cache_mem_key), which leaves NVRTC out, so loading and
 * using a bundle needs the driver only.  rt_kernel_get looks in every
 * registered bundle before the disk cache and NVRTC.
 */
#define RT_BUNDLE_FORMAT 1
typedef struct rt_bundle rt_bundle;

rnnc_status rt_bundle_create(rt_bundle **out);
void rt_bundle_destroy(rt_bundle *b);
/* Adds the cubin built for req (req->sm set); copies it. */
rnnc_status rt_bundle_add(rt_bundle *b, const rt_kernel_req *req, const void *cubin,
                          size_t size);
rnnc_status rt_bundle_add_tuning(rt_bundle *b, const char *shape_key, const char *tuning);
rnnc_status rt_bundle_save(const rt_bundle *b, const char *path);
/* Reads and checks the whole file: RNNC_ERR_FORMAT for another format or
 * codegen version, a bad checksum or truncation, with a message saying which. */
rnnc_status rt_bundle_load(rt_bundle **out, const char *path);
/* The cubin for req on sm (owned by b), or false. */
bool rt_bundle_find(const rt_bundle *b, const rt_kernel_req *req, int sm, const void **cubin,
                    size_t *size);
rnnc_status rt_bundle_tuning(const rt_bundle *b, const char *shape_key, const char **tuning);
/* The archs b holds, as "sm_80,sm_90" (for messages and listings). */
void rt_bundle_archs(const rt_bundle *b, char *buf, size_t n);
int rt_bundle_count(const rt_bundle *b);
/* rt_kernel_get consults registered bundles first (b must outlive that). */
rnnc_status rt_bundle_register(const rt_bundle *b);
void rt_bundle_unregister(const rt_bundle *b);
/* The cubin for req on sm from any registered bundle (copied, free()). */
bool rt_bundle_lookup(const rt_kernel_req *req, int sm, void **cubin, size_t *size);
/* Some registered bundle holds req, but not for sm: names what it holds. */
bool rt_bundle_other_arch(const rt_kernel_req *req, int sm, char *archs, size_t n);
/* How many bundles are registered. */
int rt_bundle_registered(void);
/* The archs of every registered bundle, as rt_bundle_archs. */
void rt_bundle_registered_archs(char *buf, size_t n);
/* A registered bundle's tuning record for shape_key, copied into buf. */
bool rt_bundle_lookup_tuning(const char *shape_key, char *buf, size_t n);
/* Some registered bundle has a tuning record whose key starts with prefix. */
bool rt_bundle_has_tuning_prefix(const char *prefix);

/* -- shared by cache*.c (and tests) -- */
#define RT_CACHE_FORMAT 1 /* bump when the entry layout changes (docs/cache.md) */
/* RNNC_LOG names `level` ("info", "debug"; "debug" includes "info"). */
bool rt_log_enabled(const char *level);
uint64_t rt_cache_max_bytes(void); /* RNNC_CACHE_MAX_MB in bytes */
/* <dir>/kernels/<hex>.cubin for k; false when the disk cache is off. */
bool rt_cache_entry_path(rt_cache_key k, char *buf, size_t n);
/* RNNC_OK (cubin malloc'ed), RNNC_ERR_NOT_FOUND (no entry), or
 * RNNC_ERR_FORMAT with the reason in why[] (corrupt, truncated, foreign);
 * never calls rnnc_fail. */
rnnc_status rt_cache_read(rt_cache_key k, void **cubin, size_t *size, char *why, size_t n_why);
/* Stores an entry (temp file + rename) and evicts down to the limit; a
 * directory that cannot be written is warned about once, then ignored. */
void rt_cache_write(rt_cache_key k, const char *name, int sm, const void *cubin, size_t size);
/* Off: rt_cache_write writes nothing (the process only reads the cache), so
 * that `rnnc compile` leaves the user's cache as it was.  On by default. */
void rt_cache_set_writes(bool on);
/* Writes a + b to path through a temp file in the same directory + rename. */
bool rt_cache_write_atomic(const char *path, const void *a, size_t na, const void *b,
                           size_t nb);
bool rt_cache_mkdirs(const char *dir);
/* Removes least recently used entries of dir/kernels until <= limit bytes
 * (the newest entry is always kept), and stale temp files. */
void rt_cache_evict(const char *dir, uint64_t limit);
/* The in-process key: req (with its kernel names) and sm, but not NVRTC's
 * version, which cannot change within a process (and may be absent). */
rnnc_status rt_cache_mem_key(const rt_kernel_req *req, int sm, rt_cache_key *out);
double rt_now_ms(void); /* monotonic */
void rt_cache_log(const rt_kernel_req *req, int sm, rt_origin o, double ms);
/* How many kernel sets this process took from origin o (memory hits that
 * are not logged excepted): `rnnc run --bundle` says when the bundle served none. */
unsigned long rt_cache_origin_count(rt_origin o);
/* Reads an entry file's header only (for listings); false if unreadable. */
bool rt_cache_peek(const char *path, int *sm, char name[56], int64_t *created, bool *valid);

/* ================================================================ 6. Philox and dropout */

/*
 * Dropout draws one uniform per element from Philox4x32-10 (docs/dropout.md):
 * u = word (index % 4) of rnnc_philox4x32_10(seed, site, index / 4) * 2^-32;
 * the element is kept iff u >= p, and kept values are scaled by 1/(1-p).
 */
bool rt_dropout_keep(uint64_t seed, uint64_t site, uint64_t index, double p);
/* 1/(1-p); 0 when p >= 1 (everything dropped). */
double rt_dropout_scale(double p);

/* Between-layer dropout after layer l (the input of layer l+1). */
static inline uint64_t rt_dropout_site_layer(int layer)
{
    return (uint64_t)layer;
}

/* An in-cell dropout op with site number k (ir_node.i1) in pseudo-layer p. */
#define RT_DROPOUT_SITE_CELL 0x10000u
static inline uint64_t rt_dropout_site_cell(int pseudo, int k)
{
    return RT_DROPOUT_SITE_CELL + (uint64_t)pseudo * 256u + (uint64_t)k;
}

/* ================================================================ 7. interpreter */

/* Weights in double, as rt_weights: w[pseudo * n_params + param], NULL for
 * an absent optional param. */
typedef struct rt_weights_f64 {
    const double *const *w;
    int n_params;
    int pseudo_layers;
} rt_weights_f64;

/* One forward in double on host arrays; shapes as in rnnc_forward_args. */
typedef struct rt_seq_f64 {
    int64_t seq_len;
    int64_t batch;
    const double *x;           /* [T,B,I] or [B,T,I] with batch_first */
    const double *const *init; /* n_states entries or NULL; an entry NULL = zeros */
    const int64_t *lengths;    /* [B], each in [1, T]; NULL = all T */
    double *y;                 /* [T,B,D*Hout] or [B,T,D*Hout] */
    double *const *final;      /* n_states entries or NULL; an entry NULL = not wanted */
    bool training;
} rt_seq_f64;

/* The oracle: runs the whole model in double precision (docs/interpreter.md). */
rnnc_status rt_interp_run(const rt_spec *s, const rt_weights_f64 *w, const rt_seq_f64 *q);
/* Evaluates the parameter-only (VEC or SCALAR) node `node` of f for pseudo-layer
 * `pseudo` into out[cols] (fold outputs are computed once at weight binding). */
rnnc_status rt_interp_fold(const ir_fn *f, ir_sizes sz, const rt_weights *w, int pseudo,
                           int32_t node, float *out);

/*
 * The evaluator of one step (interp_eval.c), shared by the sequence driver
 * and fold.  Every node has a value of rows x cols doubles: rows = B for ROW
 * nodes, 1 otherwise.  The driver writes INPUT and STATE rows into buf[].
 */
typedef struct rt_frame {
    const ir_fn *f;
    ir_sizes sz;
    int64_t batch;
    const double *const *w; /* this pseudo-layer's params [n_params] */
    const double **val;     /* [n] each node's value; NULL: absent optional param */
    double **buf;           /* [n] storage owned by the frame */
    int64_t *cols;          /* [n] evaluated feature size (MAT: rows * cols) */
    bool training;
    uint64_t seed;
    int pseudo;
    /* The frame's rows are rows [row0, row0 + batch) of a batch of
     * rows_total (rt_frame_init: 0 and batch): dropout draws by the global
     * row, so a forward split over threads keeps its masks. */
    int64_t row0, rows_total;
} rt_frame;

rnnc_status rt_frame_init(rt_frame *fr, const ir_fn *f, ir_sizes sz, int64_t batch,
                          const double *const *w);
void rt_frame_free(rt_frame *fr);
/* Evaluates every node that does not vary per row (once per pseudo-layer). */
rnnc_status rt_frame_eval_fixed(rt_frame *fr);
/* Evaluates the ROW nodes of the step at time t (INPUT/STATE already in buf). */
rnnc_status rt_frame_eval_step(rt_frame *fr, int64_t t);
/* Evaluates node i alone (its operands already evaluated), at time t. */
rnnc_status rt_frame_eval_node(rt_frame *fr, int32_t i, int64_t t);

/*
 * Backward (interp_grad*.c): the gradients of a whole model in double, by
 * the backward step of ir_autodiff run in reverse time; the forward is run
 * again inside, recording what the backward step reads.  Shapes as in
 * rnnc_backward_args; dw[p * n_params + k] has the element count of weight
 * (p, k) and receives its gradient (NULL entries: not wanted).
 */
typedef struct rt_grad_f64 {
    const double *dy;            /* [T,B,D*Hout] ([B,T,..] with batch_first) */
    const double *const *dfinal; /* n_states entries or NULL; an entry NULL = zero */
    double *dx;                  /* as x, or NULL */
    double *const *dinit;        /* n_states entries or NULL; an entry NULL = not wanted */
    double *const *dw;           /* pseudo_layers * n_params entries */
} rt_grad_f64;

rnnc_status rt_interp_grad(const rt_spec *s, const rt_weights_f64 *w, const rt_seq_f64 *q,
                           const rt_grad_f64 *g);
/* Training on the interp backend (interp_train.c): a training forward's
 * inputs kept by _keep (an inference forward forgets them), then one
 * backward, then the weight gradients (fp32 out). */
typedef struct rt_interp_train rt_interp_train;
rnnc_status rt_interp_train_keep(rt_interp_train **t, const rt_spec *s,
                                 const rnnc_forward_args *a);
rnnc_status rt_interp_train_backward(rt_interp_train *t, const rt_spec *s,
                                     const rt_weights_f64 *w, const rnnc_backward_args *a);
rnnc_status rt_interp_train_weight_grad(const rt_interp_train *t, const rt_spec *s, int pseudo,
                                        int param, float *out, int64_t count);
void rt_interp_train_free(rt_interp_train *t);
/* Evaluates the nodes of a backward step that depend on no input or state
 * (fixed) or the others (at time t); dep from ir_compute_deps. */
rnnc_status rt_grad_frame_eval(rt_frame *fr, const uint8_t *dep, bool fixed, int64_t t);

/* ================================================================ 8. fused GPU backend */

/*
 * rt_backend_fused (fused.c, fused_run.c; docs/fused-kernel.md): the
 * schedule goes through the CUDA generator (codegen/cuda) once per batch
 * size; the kernels come from the kernel cache; one direction of one layer
 * is the hoisted GEMMs, the row kernel and ONE cooperative persistent step
 * kernel.  A forward runs the (layer, direction) pairs (fused_model.c):
 * layer l+1 reads layer l's output, directions write their columns of it
 * (both at once where `share` sizes the kernels for half the SMs; the
 * layers of a unidirectional stack then run as a wavefront of time
 * chunks), lengths are a per-row step limit, dropout between layers is a
 * Philox kernel.  fp32 only.  The step kernel's tuning for a
 * batch size (fused_tune.c; docs/cache.md): RNNC_FUSED_TILE="ut,bt,threads"
 * (0 = the generator's choice), else a registered bundle's record, else the
 * disk record, else autotuning on the device (RNNC_AUTOTUNE=0: the
 * generator's heuristic; RNNC_AUTOTUNE_MS bounds it, default 2000).
 */
#ifdef RT_HAVE_CUDA_H
#include "codegen/codegen.h"

/* The tuning fields of cg_cuda_config; 0 = the generator's choice. */
typedef struct rt_fused_tuning {
    int unit_tile, batch_tile, threads;
} rt_fused_tuning;

/* Scratch of one running step kernel: hoisted values, the exchange
 * buffer, reduction partials, the barrier's flags. */
typedef struct rt_fused_slot {
    CUdeviceptr hz, xb, part, bar;
    size_t hz_n, xb_n, part_n;
} rt_fused_slot;

/* The kernels of layers > 0 (their input is D * Hout wide). */
typedef struct rt_fused_upper {
    ir_schedule sched;
    char *src;
    cg_cuda_plan plan;
    rt_kernel kern;
    bool loaded;
} rt_fused_upper;

typedef struct rt_fused {
    rt_spec spec;
    ir_arena *arena;
    ir_schedule sched;
    int sm, sm_count;
    bool bound;
    uint64_t cell_hash;          /* XXH3-64 of the printed cell (tuning keys) */
    bool tune_forced;            /* an autotuning candidate: tune_force, nothing else */
    rt_fused_tuning tune_force;
    rt_fused_tuning tuning;      /* the last choice of rt_fused_config(tuned) */
    const char *tuning_from;     /* and where it came from (static text) */
    /* the kernel set for batch `batch` (0: none yet) */
    int64_t batch;
    char *src;
    cg_cuda_plan plan;
    rt_kernel kern;
    bool loaded;
    /* device memory: weights and folds (bound), scratch grown on demand */
    CUdeviceptr wts, fold;
    int64_t wts_floats, fold_floats;
    CUdeviceptr st, dx, dy, dfin; /* st: 3 copies of the states per pseudo-layer */
    size_t st_n, dx_n, dy_n, dfin_n;
    rt_fused_slot slot[2];        /* scratch of the two kernels that run at once */
    /* share > 1: kernels are sized for sm_count / share SMs, so that the
     * directions of a layer, or two layers of a wavefront, run at once on
     * their own streams (fused_model.c) */
    int share;
    CUstream aux[3];              /* 0: the second step stream; 1, 2: GEMM streams */
    CUevent *ev;
    int ev_n;
    /* whole models (fused_model.c): kernels of layers > 0, the floats of
     * one pseudo-layer's arenas per layer kind (0: layer 0, 1: above),
     * layer outputs, lengths, the dropout kernel */
    rt_fused_upper up;
    int64_t arena_wts[2], arena_fold[2];
    CUdeviceptr lay[2], dlen; /* dlen: the lengths, then each chunk's (wavefront) */
    size_t lay_n[2], dlen_n;
    int *hlen;
    int64_t hlen_n;
    bool dlen_used; /* this forward has lengths (in dlen) */
    rt_kernel drop;
    bool drop_loaded;
    struct rt_fgrad *grad; /* training (fused_grad*.c), NULL until first needed */
} rt_fused;

/* Generates (not compiles) the kernel set for `batch` into m->plan/m->src. */
rnnc_status rt_fused_prepare(rt_fused *m, int64_t batch);
/* The generator's configuration for this model at `batch`; `tuned` picks
 * the tuning (rt_fused_choose; may autotune), else the defaults (the check
 * at create time). */
void rt_fused_config(rt_fused *m, int64_t batch, bool tuned, cg_cuda_config *cfg);
/* The same for layer kind k (0: layer 0, 1: layers above), with the
 * tuning of the last rt_fused_config(tuned). */
void rt_fused_config_kind(rt_fused *m, int k, int64_t batch, bool tuned, cg_cuda_config *cfg);
/* Everything of create that needs no GPU: checks, schedule, a trial
 * generation, for target sm with sm_count SMs (rnnc compile uses it). */
rnnc_status rt_fused_init(rt_fused *m, const rt_spec *s, int sm, int sm_count);
/* The kernel request for a generated set (src, plan at batch; normally
 * m->src, &m->plan, m->batch): what the forward loads and what a bundle
 * must hold.  names[CG_CUDA_MAX_LAUNCH] and label[64] are storage the
 * request points into, as are src and plan; req->sm = m->sm. */
void rt_fused_request(const rt_fused *m, const char *src, const cg_cuda_plan *plan,
                      int64_t batch, const char **names, char *label, rt_kernel_req *req);

/* ---- tuning (fused_tune.c) */
/* "fused <cell>#<hash> I= H= P= hoist= bf= math= f32 cg=<version>": the
 * model part of a tuning key; + " sm_XX sms=N" the target; + " B=b". */
void rt_fused_model_key(const rt_fused *m, char *buf, size_t n);
void rt_fused_shape_key(const rt_fused *m, int64_t batch, char *buf, size_t n);
/* Tuning text "ut=U bt=B nt=T" (records and bundles). */
void rt_fused_tuning_text(rt_fused_tuning t, char *buf, size_t n);
bool rt_fused_tuning_parse(const char *text, rt_fused_tuning *t);
/* Candidates to time, the heuristic ({0,0,0}) first; returns how many. */
int rt_fused_candidates(int64_t batch, int64_t hidden, int sm_count, rt_fused_tuning *out,
                        int max);
/* The tuning for `batch`, in the order of the section comment; *from says
 * which ("environment", "bundle", "record", "autotune", "heuristic", ...). */
void rt_fused_choose(rt_fused *m, int64_t batch, rt_fused_tuning *t, const char **from);
/* Forgets the autotuning results kept in memory (tests). */
void rt_fused_tune_reset(void);

/* ---- ahead of time (fused_aot.c): no GPU needed */
/* Generates the kernel set of model s for `batch` on sm_`sm` with sm_count
 * SMs exactly as the forward would, compiles it (disk cache or NVRTC) and
 * adds the cubin and its tuning record to b.  *from: where the tuning came from. */
rnnc_status rt_fused_aot_add(const rt_spec *s, int64_t batch, int sm, int sm_count,
                             rt_bundle *b, const char **from);
rnnc_status rt_fused_upload_weights(rt_fused *m, const float *wts, const float *fold,
                                    int64_t wts_floats, int64_t fold_floats);
/* Whether the fused backend runs this call of a model it created (for the
 * auto backend).  Everything else it refuses at create: a dtype other than
 * fp32, a cell the generator cannot place, a projection whose slices
 * (gcd(H, P)) would be under H/16. */
bool rt_fused_call_supported(const rt_spec *s, const rnnc_forward_args *a);
/* ---- whole models (fused_model.c) */
/* Offsets in floats of pseudo-layer p's weight and fold arenas. */
int64_t rt_fused_wts_at(const rt_fused *m, int p);
int64_t rt_fused_fold_at(const rt_fused *m, int p);
/* Loads the kernel set of layer kind k (0 or 1) from the kernel cache. */
rnnc_status rt_fused_load(rt_fused *m, int k);
/* One run of layer kind k's kernels over T steps (a whole sequence or a
 * chunk of it): x in, y the layer's output (its direction's columns),
 * pseudo-layer p's weights, states in st (copy 0 in, FIN out), hoisted
 * values in hz, lengths len (0: none), the scratch of slot `slot`. */
typedef struct rt_fused_job {
    int k, p, T, slot;
    bool rev;
    CUdeviceptr x, y, st, hz, len;
} rt_fused_job;
#define RT_FUSED_HOIST 1 /* the launches before the step kernel */
#define RT_FUSED_STEP 2  /* the persistent step kernel */
rnnc_status rt_fused_launch(rt_fused *m, const rt_fused_job *j, int which, CUstream s);
/* Grows device buffer *p to hold n bytes (contents not kept). */
rnnc_status rt_fused_grow(CUdeviceptr *p, size_t *have, size_t n);
/* The streams and events of the overlapped runs (fused_model.c). */
void rt_fused_streams_free(rt_fused *m);
/* Floats of one pseudo-layer's states in st (three copies). */
int64_t rt_fused_st_stride(const rt_fused *m);
/* The kernel sizing of spec s: 2 where directions or layers run at once. */
int rt_fused_share(const rt_spec *s);
/* Every (layer, direction) of a forward whose buffers are on the device. */
/* Dropout between layers l and l+1 on a layer output buf ([T, B, D*Hout],
 * or [B, T, ...] when batch_first), the interpreter's mask and scale; run
 * again on a gradient it applies the same mask (the backward). */
rnnc_status rt_fused_dropout(rt_fused *m, int layer, CUdeviceptr buf, int64_t T, int64_t B,
                             bool batch_first, CUstream s);
rnnc_status rt_fused_run_model(rt_fused *m, const rnnc_forward_args *a, CUdeviceptr x,
                               CUdeviceptr y, CUstream s);
rnnc_status rt_fused_forward(void *state, const rnnc_forward_args *a);
rnnc_status rt_fused_time_forward(void *state, const rnnc_forward_args *a, int warmup, int iters,
                                  double *median_ms);
void rt_fused_free(rt_fused *m);
#endif

/* ================================================================ 9. CPU backend */

/*
 * The CPU backend (runtime/cpu*.c, docs/cpu-backend.md): the schedule's
 * element-wise code and GEMM micro-kernels are generated through LLVM-C
 * (codegen/llvm), verified, optimised at O3 and JIT-compiled with ORC
 * LLJIT for the host CPU and its features; C drives the time loop, layers,
 * directions and a thread pool.  Environment: RNNC_THREADS (default all
 * cores), RNNC_CPU_VW (4, 8 or 16 floats per vector: overrides what the
 * host's features give), RNNC_CPU_SPLIT (rows or cols: how the step is
 * shared between threads; default by batch size), RNNC_DUMP=llvm (the
 * generated module) and llvm-opt (after O3).
 */
struct cg_cpu_plan;

/* "<LLVM cpu name>, <n> floats per vector, <t> threads" into buf. */
rnnc_status rt_cpu_describe(char *buf, size_t n);
int rt_cpu_thread_count(void);
/* The generated module of `f` (before optimisation) as text; free with rnnc_free. */
rnnc_status rt_cpu_dump_llvm(const ir_fn *f, ir_sizes sz, rnnc_hoist hoist, char **text);

/* Compiled code of one plan, owned by the process-wide cache (cpu_jit.c). */
typedef void (*rt_cpu_ew)(float *const *slots, int64_t r0, int64_t r1);
typedef void (*rt_cpu_mk)(const float *a, const float *bpanel, float *c);
typedef struct rt_cpu_code {
    rt_cpu_ew ew[2][16]; /* [part][stage]; NULL where a stage has no element-wise work */
    rt_cpu_mk *mk;       /* [gemm * mr + (rows - 1)] */
    int n_gemms, mr;
} rt_cpu_code;

/* The vector width the host's code uses (RNNC_CPU_VW or detected). */
int rt_cpu_vector_width(void);
/* Finds (same cell, sizes, hoist and width: no recompile) or compiles the code of `p`. */
rnnc_status rt_cpu_compile(const struct cg_cpu_plan *p, rnnc_hoist hoist, const rt_cpu_code **out);

/* A pool of threads (cpu_pool.c).  Jobs run on every thread at once, the
 * caller being thread 0; inside a job, rt_cpu_pool_barrier waits for all. */
typedef struct rt_cpu_pool rt_cpu_pool;
rnnc_status rt_cpu_pool_create(int threads, rt_cpu_pool **out);
void rt_cpu_pool_destroy(rt_cpu_pool *p);
int rt_cpu_pool_size(const rt_cpu_pool *p);
void rt_cpu_pool_run(rt_cpu_pool *p, void (*job)(void *ctx, int tid, int nt), void *ctx);
void rt_cpu_pool_barrier(rt_cpu_pool *p);

/* The backend's model (cpu.c binds, cpu_run.c runs). */
typedef struct rt_cpu_fn {
    ir_arena *arena;
    ir_schedule *sched;
    struct cg_cpu_plan *plan;
    const rt_cpu_code *code;
} rt_cpu_fn;

typedef struct rt_cpu_bound { /* one pseudo-layer's weights as the code reads them */
    float **packed;           /* [n_gemms] W in panels of nr columns */
    float **fold;             /* [n_slots] fold vectors; NULL for other slots */
} rt_cpu_bound;

typedef struct rt_cpu_model {
    rt_spec spec;
    rt_cpu_fn fn[2];        /* fn[1] only with layers > 1 */
    rt_cpu_bound *bound;    /* [layers * dirs]; NULL until bind */
    rt_cpu_pool *pool;
    float *ws;              /* the forward's buffers, kept between calls */
    size_t ws_floats;
} rt_cpu_model;

/* 64-byte aligned, zeroed; free with free(). */
float *rt_cpu_alloc(size_t floats);
rnnc_status rt_cpu_forward(rt_cpu_model *m, const rnnc_forward_args *a);

#endif /* RNNC_RUNTIME_H */
