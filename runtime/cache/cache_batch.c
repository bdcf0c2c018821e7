/*
 * cache_batch.c: several kernel requests at once.  NVRTC compiles one
 * program a thread, and a model needs several kernel sets together (a
 * stack's first layer and the layers above it; a training model's record
 * and backward sets of each), so a cold start compiled them one after the
 * other: about 2 s each for a two-layer LSTM at I = H = 512.  Here each
 * request gets a thread of its own, so the sets cost about the longest
 * compile.  The requests are independent; the disk cache, the bundles and
 * the in-process cache are already safe to use from several threads.
 */
#include "runtime/cache/cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The fan-outs here are a model's kernel sets: a handful. */
#define BATCH_MAX 8

typedef struct batch_job {
    const rt_kernel_req *req;
    int device;            /* rt_kernel_get's, or -1: the cubin only */
    void *out;             /* rt_kernel *, or NULL with cubin and size */
    void *cubin;
    size_t size;
    rnnc_status st;
    char msg[512];         /* rnnc_last_error() of the job's thread */
} batch_job;

static void run_job(batch_job *j)
{
    rt_origin origin;
#ifdef RT_HAVE_CUDA_H
    if (j->out)
        j->st = rt_kernel_get(j->req, j->device, j->out);
    else
#endif
        j->st = rt_cubin_get(j->req, &j->cubin, &j->size, &origin);
    if (j->st != RNNC_OK)
        snprintf(j->msg, sizeof j->msg, "%s", rnnc_last_error());
}

static void *job_thread(void *arg)
{
    run_job(arg);
    return NULL;
}

/* Jobs 1..n-1 on threads of their own, job 0 on the caller's; a job whose
 * thread cannot start runs on the caller's after the others.  The first
 * failure (in request order) is the result, its message raised again on
 * the caller's thread, where rnnc_last_error() looks. */
static rnnc_status run_all(batch_job *jobs, int n)
{
    pthread_t th[BATCH_MAX];
    bool started[BATCH_MAX] = {false};
    for (int i = 1; i < n; i++)
        started[i] = pthread_create(&th[i], NULL, job_thread, &jobs[i]) == 0;
    run_job(&jobs[0]);
    for (int i = 1; i < n; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            run_job(&jobs[i]);
    }
    for (int i = 0; i < n; i++)
        if (jobs[i].st != RNNC_OK)
            return err_fail(jobs[i].st, "%s", jobs[i].msg);
    return RNNC_OK;
}

static rnnc_status check_batch(const void *reqs, int n, const void *outs)
{
    if (!reqs || !outs || n < 0 || n > BATCH_MAX)
        return err_fail(RNNC_ERR_INVALID_ARG, "kernel requests: %d at once (1 to %d)", n,
                        BATCH_MAX);
    return RNNC_OK;
}

rnnc_status rt_cubin_get_all(const rt_kernel_req *const *reqs, int n, void **cubins,
                             size_t *sizes)
{
    rnnc_status st = check_batch(reqs, n, cubins && sizes ? (const void *)cubins : NULL);
    if (st != RNNC_OK || n == 0)
        return st;
    batch_job jobs[BATCH_MAX];
    for (int i = 0; i < n; i++)
        jobs[i] = (batch_job){.req = reqs[i], .device = -1};
    st = run_all(jobs, n);
    for (int i = 0; i < n; i++) {
        if (st != RNNC_OK) {
            free(jobs[i].cubin);
            jobs[i].cubin = NULL, jobs[i].size = 0;
        }
        cubins[i] = jobs[i].cubin;
        sizes[i] = jobs[i].size;
    }
    return st;
}

#ifdef RT_HAVE_CUDA_H
rnnc_status rt_kernel_get_all(const rt_kernel_req *const *reqs, int n, int device,
                              rt_kernel *const *outs)
{
    rnnc_status st = check_batch(reqs, n, outs);
    if (st != RNNC_OK || n == 0)
        return st;
    batch_job jobs[BATCH_MAX];
    for (int i = 0; i < n; i++)
        jobs[i] = (batch_job){.req = reqs[i], .device = device, .out = outs[i]};
    return run_all(jobs, n);
}
#endif
