/*
 * cpu_pool.c: the CPU backend's thread pool.  A job runs on every thread
 * at once (the caller is thread 0), so a time loop can stay inside one job
 * and meet at barriers between steps instead of paying a wake-up per step.
 * The barrier spins briefly, then yields, so an oversubscribed machine
 * still makes progress.
 */
#define _POSIX_C_SOURCE 200809L
#ifdef RNNC_HAVE_LLVM
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "runtime/cpu/cpu.h"

struct rt_cpu_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    unsigned gen;   /* bumped per job */
    int pending;    /* workers still running the job */
    bool quit;
    void (*job)(void *ctx, int tid, int nt);
    void *ctx;
    atomic_int arrived;
    atomic_uint phase;
};

typedef struct worker_arg {
    rt_cpu_pool *p;
    int tid;
} worker_arg;

static void *worker(void *arg)
{
    worker_arg w = *(worker_arg *)arg;
    free(arg);
    rt_cpu_pool *p = w.p;
    unsigned seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->gen == seen && !p->quit)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->quit)
            break;
        seen = p->gen;
        pthread_mutex_unlock(&p->lock);
        p->job(p->ctx, w.tid, p->n);
        pthread_mutex_lock(&p->lock);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

rnnc_status rt_cpu_pool_create(int threads, rt_cpu_pool **out)
{
    rt_cpu_pool *p = calloc(1, sizeof *p);
    if (!p)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory for the thread pool");
    p->n = threads < 1 ? 1 : threads;
    p->threads = calloc((size_t)p->n, sizeof(pthread_t));
    if (!p->threads) {
        free(p);
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory for the thread pool");
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->arrived, 0);
    atomic_init(&p->phase, 0u);
    for (int t = 1; t < p->n; t++) {
        worker_arg *w = malloc(sizeof *w);
        if (w)
            *w = (worker_arg){p, t};
        if (!w || pthread_create(&p->threads[t], NULL, worker, w) != 0) {
            free(w);
            p->n = t; /* run with the threads we have */
            break;
        }
    }
    *out = p;
    return RNNC_OK;
}

void rt_cpu_pool_destroy(rt_cpu_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->quit = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int t = 1; t < p->n; t++)
        pthread_join(p->threads[t], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p->threads);
    free(p);
}

int rt_cpu_pool_size(const rt_cpu_pool *p)
{
    return p ? p->n : 1;
}

void rt_cpu_pool_run(rt_cpu_pool *p, void (*job)(void *ctx, int tid, int nt), void *ctx)
{
    if (p->n == 1) {
        job(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->job = job;
    p->ctx = ctx;
    p->pending = p->n - 1;
    p->gen++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    job(ctx, 0, p->n);
    pthread_mutex_lock(&p->lock);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

void rt_cpu_pool_barrier(rt_cpu_pool *p)
{
    if (p->n == 1)
        return;
    unsigned ph = atomic_load_explicit(&p->phase, memory_order_acquire);
    if (atomic_fetch_add_explicit(&p->arrived, 1, memory_order_acq_rel) == p->n - 1) {
        atomic_store_explicit(&p->arrived, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->phase, 1u, memory_order_acq_rel);
        return;
    }
    for (unsigned spin = 0; atomic_load_explicit(&p->phase, memory_order_acquire) == ph; spin++)
        if (spin > 2000)
            sched_yield();
}
#endif /* RNNC_HAVE_LLVM */
