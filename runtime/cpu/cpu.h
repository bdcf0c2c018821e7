/*
 * cpu.h: the internal header of runtime/cpu: the cpu backend: the CPUs it
 * makes code for (cpu_target.c), a plan as an object file (cpu_object.c),
 * the JIT and its code caches (cpu_jit.c), bundles' object files
 * (cpu_aot.c), its thread pool (cpu_pool.c), weight binding (cpu.c) and the
 * forward (cpu_run.c).  Built with RNNC_HAVE_LLVM.
 *
 * Uses: common, ir, codegen/llvm, runtime/spec, runtime/eval (the fold),
 * runtime/tensor, runtime/cache (object files on disk and in bundles).
 */
#ifndef RNNC_RUNTIME_CPU_H
#define RNNC_RUNTIME_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/cache/cache.h"
#include "runtime/eval/eval.h"

/*
 * The CPU backend (docs/cpu-backend.md): the schedule's
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

/*
 * A CPU the backend makes code for (cpu_target.c): "native" (this machine's
 * CPU and every feature it has) or an x86-64 level ("x86-64-v2", "-v3",
 * "-v4"), which bundles name so that one file serves many machines.
 */
#define RT_CPU_TARGET_TEXT_MAX 2400
typedef struct rt_cpu_target {
    char name[16];      /* "native", "x86-64-v3" */
    char triple[64];    /* LLVM's target triple */
    char cpu[64];       /* LLVM's CPU name */
    char features[2048]; /* "+avx2,+fma,..." */
    int vw;             /* floats per vector of its code */
} rt_cpu_target;

/* The target called `name` (NULL: native), described on this machine;
 * native's vw follows RNNC_CPU_VW. */
rnnc_status rt_cpu_target_get(const char *name, rt_cpu_target *out);
/* "name vw triple cpu features": what a bundle keeps with each object file. */
void rt_cpu_target_text(const rt_cpu_target *t, char *buf, size_t n);
bool rt_cpu_target_parse(const char *text, rt_cpu_target *out);
/* host may run t's code: the same triple, and each of t's features is host's. */
bool rt_cpu_target_runs_here(const rt_cpu_target *t, const rt_cpu_target *host);

/* A plan as an LLVM module for a target (cpu_object.c). */
typedef struct rt_cpu_module rt_cpu_module;
/* Hashes what the plan's code depends on (cell, sizes, hoist, vector width). */
rt_cache_key rt_cpu_plan_key(const struct cg_cpu_plan *p, rnnc_hoist hoist);
/* Fuses cell f and plans it at vector width vw, both in arena a (the plan
 * keeps the schedule). */
rnnc_status rt_cpu_plan_cell(const ir_fn *f, ir_sizes sz, rnnc_hoist hoist, int vw, ir_arena *a,
                             struct cg_cpu_plan *p);
/* How logs, the disk cache and bundles name the plan's code: "cpu <cell>". */
void rt_cpu_plan_label(const struct cg_cpu_plan *p, char *buf, size_t n);
/* The prefix of the module's symbols, "rnnc_cpu_<key hex>". */
void rt_cpu_plan_prefix(rt_cache_key k, char *pfx, size_t n);
rnnc_status rt_cpu_module_create(const struct cg_cpu_plan *p, const char *pfx,
                                 const rt_cpu_target *t, rt_cpu_module **out);
void rt_cpu_module_free(rt_cpu_module *m);
char *rt_cpu_module_text(const rt_cpu_module *m); /* malloc'ed; NULL when out of memory */
/* The key of the module's object file (rt_cache_key_host). */
rnnc_status rt_cpu_module_key(const rt_cpu_module *m, rt_cache_key *k);
/* O3, then the object file (*obj malloc'ed). */
rnnc_status rt_cpu_module_emit(rt_cpu_module *m, void **obj, size_t *size);

/* LLVM's native target is initialised and the JIT started (once a process). */
rnnc_status rt_cpu_ready(void);
/* "<LLVM cpu name>, <n> floats per vector, <t> threads" into buf. */
rnnc_status rt_cpu_describe(char *buf, size_t n);
int rt_cpu_thread_count(void);
/* The generated module of `f` (before optimisation) as text; free with rnnc_free. */
rnnc_status rt_cpu_dump_llvm(const ir_fn *f, ir_sizes sz, rnnc_hoist hoist, char **text);
/* Adds the object files of every cell of spec s (layer 0, layers above)
 * made for the cpu target `target` to bundle b (cpu_aot.c). */
rnnc_status rt_cpu_aot_add(const rt_spec *s, const char *target, rt_bundle *b);

/* Compiled code of one plan, owned by the process-wide cache (cpu_jit.c). */
typedef void (*rt_cpu_ew)(float *const *slots, int64_t r0, int64_t r1);
typedef void (*rt_cpu_mk)(const float *a, const float *bpanel, float *c);
typedef struct rt_cpu_code {
    rt_cpu_ew ew[2][16]; /* [part][stage]; NULL where a stage has no element-wise work */
    rt_cpu_mk *mk;       /* [gemm * mr + (rows - 1)] */
    int n_gemms, mr;
} rt_cpu_code;

/* Plans schedule s and finds its code: made before in this process (same
 * cell, sizes, hoist and width), in a loaded bundle for a target this
 * machine runs, in the disk cache, else compiled for this machine. */
rnnc_status rt_cpu_prepare(const ir_schedule *s, ir_sizes sz, rnnc_hoist hoist, ir_arena *a,
                           struct cg_cpu_plan *plan, const rt_cpu_code **out);

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

#endif
