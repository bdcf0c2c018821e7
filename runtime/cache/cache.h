/*
 * cache.h: the internal header of runtime/cache: the kernel cache (keys,
 * the in-memory level, the disk level, eviction and the `rnnc cache`
 * listings: cache*.c), the autotuning records (cache_tune.c) and AOT
 * bundles (bundle.c).  docs/cache.md.
 *
 * Uses: common, runtime/device (NVRTC to compile, the driver to load),
 * runtime/tensor (JSON checks).
 */
#ifndef RNNC_RUNTIME_CACHE_H
#define RNNC_RUNTIME_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/common.h"
#include "rnnc.h"
#include "runtime/device/device.h"
#include "runtime/tensor/tensor.h"

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
#define RT_CODEGEN_VERSION 32
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
/* The key of the cpu backend's object file made from a module: its n texts
 * (the module's IR and everything else that changes the machine code: LLVM's
 * version, the target, the CPU and its features), hashed apart from every
 * kernel's key.  Its entry's sm is RT_CACHE_HOST. */
void rt_cache_key_host(const char *const *texts, int n, rt_cache_key *out);
#define RT_CACHE_HOST 0
void rt_cache_key_hex(rt_cache_key k, char hex[33]);

/* The cubin for req (req->sm must be set); *cubin is malloc'ed (free()). */
rnnc_status rt_cubin_get(const rt_kernel_req *req, void **cubin, size_t *size,
                         rt_origin *origin);
/* rt_cubin_get for n (at most 8) requests at once, as rt_kernel_get_all;
 * on failure every cubins[i] is NULL. */
rnnc_status rt_cubin_get_all(const rt_kernel_req *const *reqs, int n, void **cubins,
                             size_t *sizes);

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
/* rt_kernel_get for n (at most 8) requests at once, each on a thread of its
 * own (cache_batch.c): the first failure in request order is the result. */
rnnc_status rt_kernel_get_all(const rt_kernel_req *const *reqs, int n, int device,
                              rt_kernel *const *outs);
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
 * AOT bundles (bundle.c in memory, bundle_file.c on disk; format in
 * docs/cache.md): cubins for several sm_XX, the cpu backend's object files
 * for named CPU targets, and tuning records in one versioned file.  Cubins
 * are found by the in-process key (rt_cache_mem_key), which leaves NVRTC
 * out, so loading and using a bundle needs the driver only; object files by
 * their rt_cache_key_host key and target.  rt_kernel_get and the cpu
 * backend look in every registered bundle before the disk cache and before
 * they compile.  Format 2 added the object files; format 1 is still read.
 */
#define RT_BUNDLE_FORMAT 2
#define RT_BUNDLE_FORMAT_OLDEST 1
typedef struct rt_bundle rt_bundle;

/* One entry as bundle_file.c saves and loads it: a cubin (target NULL,
 * sm > 0) or an object file (sm RT_CACHE_HOST, target set). */
typedef struct rt_bundle_entry {
    rt_cache_key key;
    int sm;
    const char *name, *target;
    const void *data;
    size_t size;
} rt_bundle_entry;

rnnc_status rt_bundle_create(rt_bundle **out);
void rt_bundle_destroy(rt_bundle *b);
/* Adds the cubin built for req (req->sm set); copies it. */
rnnc_status rt_bundle_add(rt_bundle *b, const rt_kernel_req *req, const void *cubin,
                          size_t size);
/* Adds the object file of key `key` (rt_cache_key_host) made for the cpu
 * target `target` (the cpu backend's text for it); copies it. */
rnnc_status rt_bundle_add_host(rt_bundle *b, rt_cache_key key, const char *name,
                               const char *target, const void *obj, size_t size);
rnnc_status rt_bundle_add_entry(rt_bundle *b, const rt_bundle_entry *e); /* copies */
/* Entry i < rt_bundle_count(b), owned by b. */
void rt_bundle_entry_at(const rt_bundle *b, int i, rt_bundle_entry *e);
rnnc_status rt_bundle_add_tuning(rt_bundle *b, const char *shape_key, const char *tuning);
int rt_bundle_tuning_count(const rt_bundle *b);
void rt_bundle_tuning_at(const rt_bundle *b, int i, const char **shape, const char **tuning);
/* The tuning records as the manifest lists them: [{"shape", "tuning"}] (cJSON, the caller's). */
struct cJSON *rt_bundle_tuning_json(const rt_bundle *b);
rnnc_status rt_bundle_save(const rt_bundle *b, const char *path);
/* Reads and checks the whole file: RNNC_ERR_FORMAT for another format or
 * codegen version, a bad checksum or truncation, with a message saying which. */
rnnc_status rt_bundle_load(rt_bundle **out, const char *path);
/* path is a regular file that starts as a bundle does (nothing else checked). */
bool rt_bundle_file_is(const char *path);
/* The cubin for req on sm (owned by b), or false. */
bool rt_bundle_find(const rt_bundle *b, const rt_kernel_req *req, int sm, const void **cubin,
                    size_t *size);
rnnc_status rt_bundle_tuning(const rt_bundle *b, const char *shape_key, const char **tuning);
/* The archs b holds, as "sm_80,sm_90,cpu:x86-64-v3" (for messages and listings). */
void rt_bundle_archs(const rt_bundle *b, char *buf, size_t n);
int rt_bundle_count(const rt_bundle *b);
/* rt_kernel_get consults registered bundles first (b must outlive that). */
rnnc_status rt_bundle_register(const rt_bundle *b);
void rt_bundle_unregister(const rt_bundle *b);
/* The cubin for req on sm from any registered bundle (copied, free()). */
bool rt_bundle_lookup(const rt_kernel_req *req, int sm, void **cubin, size_t *size);
/* Some registered bundle holds req, but not for sm: names what it holds. */
bool rt_bundle_other_arch(const rt_kernel_req *req, int sm, char *archs, size_t n);
/* The object file of key `key` for cpu target `target` from any registered
 * bundle (copied, free()). */
bool rt_bundle_lookup_host(rt_cache_key key, const char *target, void **obj, size_t *size);
/* Calls each() with every cpu target some registered bundle holds code for
 * (a target in two bundles twice); counts the calls that returned true. */
int rt_bundle_host_targets(bool (*each)(const char *target, void *ctx), void *ctx);
/* How many bundles are registered. */
int rt_bundle_registered(void);
/* Some registered bundle holds a cubin (not only cpu code). */
bool rt_bundle_registered_kernels(void);
/* The archs of every registered bundle, as rt_bundle_archs. */
void rt_bundle_registered_archs(char *buf, size_t n);
/* A registered bundle's tuning record for shape_key, copied into buf. */
bool rt_bundle_lookup_tuning(const char *shape_key, char *buf, size_t n);
/* Some registered bundle has a tuning record whose key starts with prefix. */
bool rt_bundle_has_tuning_prefix(const char *prefix);

/* -- shared by cache*.c (and tests) -- */
#define RT_CACHE_FORMAT 1 /* bump when the entry layout changes (docs/cache.md) */
uint64_t rt_cache_max_bytes(void); /* RNNC_CACHE_MAX_MB in bytes */
/* <dir>/kernels/<hex>.cubin for k; false when the disk cache is off. */
bool rt_cache_entry_path(rt_cache_key k, char *buf, size_t n);
/* RNNC_OK (cubin malloc'ed), RNNC_ERR_NOT_FOUND (no entry), or
 * RNNC_ERR_FORMAT with the reason in why[] (corrupt, truncated, foreign);
 * never calls err_fail. */
rnnc_status rt_cache_read(rt_cache_key k, void **cubin, size_t *size, char *why, size_t n_why);
/* rt_cache_read for the cpu backend's objects, machine code the process
 * runs: only from a kernels directory and an entry that belong to this user
 * or root and that no other user can write (write by the user's own group
 * allowed), so nobody else can have put it there; else RNNC_ERR_IO with
 * why[] saying which. */
rnnc_status rt_cache_read_host(rt_cache_key k, void **obj, size_t *size, char *why, size_t n_why);
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
void rt_cache_log(const rt_kernel_req *req, int sm, rt_origin o, double ms);
/* How many kernel sets and cpu objects this process took from origin o
 * (memory hits that are not logged excepted): `rnnc run --bundle` says when
 * the bundle served none.  rt_cache_log and the cpu backend count them. */
unsigned long rt_cache_origin_count(rt_origin o);
void rt_cache_note_origin(rt_origin o);
/* Reads an entry file's header only (for listings); false if unreadable. */
bool rt_cache_peek(const char *path, int *sm, char name[56], int64_t *created, bool *valid);

#endif
