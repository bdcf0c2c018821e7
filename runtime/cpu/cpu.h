/*
 * cpu.h: the internal header of runtime/cpu: the cpu backend: the JIT of
 * generated LLVM IR (cpu_jit.c), its thread pool (cpu_pool.c), weight
 * binding (cpu.c) and the forward (cpu_run.c).  Built with RNNC_HAVE_LLVM.
 *
 * Uses: common, ir, codegen/llvm, runtime/spec, runtime/eval (the fold),
 * runtime/tensor, runtime/cache (object files on disk).
 */
#ifndef RNNC_RUNTIME_CPU_H
#define RNNC_RUNTIME_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
