/*
 * fused_streams.c: the streams and events of a fused model's overlapped
 * runs (fused.h): two kernels at once on half the SMs each, the two
 * directions of a layer or two layers of the wavefront (fused_model.c),
 * and the directions of a training step (runtime/fused_grad/).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/fused/fused.h"

#ifdef RT_HAVE_CUDA_H

/* The step streams (0, 3) take the device's greatest priority and the
 * GEMM streams its least: a step kernel is persistent, its blocks spin at
 * a grid barrier until the last of them is resident, so when SMs free up
 * the blocks of a waiting step kernel must go before those of a GEMM that
 * could run later (RNNC_FUSED_PRIORITY=0: all at the default). */
static rnnc_status make_streams(rt_fused *m)
{
    const rt_cuda_api *cu = rt_cu();
    int least = 0, greatest = 0;
    rnnc_status st = RNNC_OK;
    if (cm_env_long("RNNC_FUSED_PRIORITY", 1) != 0)
        st = rt_cuda_check(cu->CtxGetStreamPriorityRange(&least, &greatest),
                           "cuCtxGetStreamPriorityRange");
    for (int i = 0; st == RNNC_OK && i < 4; i++)
        if (!m->aux[i])
            st = rt_cuda_check(cu->StreamCreateWithPriority(&m->aux[i], CU_STREAM_NON_BLOCKING,
                                                            i == 1 || i == 2 ? least : greatest),
                               "cuStreamCreateWithPriority");
    return st;
}

static rnnc_status make_events(rt_fused *m, int n)
{
    if (m->ev_n >= n)
        return RNNC_OK;
    CUevent *e = realloc(m->ev, (size_t)n * sizeof *e);
    if (!e)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "fused: out of memory for events");
    m->ev = e;
    const rt_cuda_api *cu = rt_cu();
    for (; m->ev_n < n; m->ev_n++) {
        rnnc_status st = rt_cuda_check(cu->EventCreate(&m->ev[m->ev_n], CU_EVENT_DISABLE_TIMING),
                                       "cuEventCreate");
        if (st)
            return st;
    }
    return RNNC_OK;
}

void rt_fused_streams_free(rt_fused *m)
{
    const rt_cuda_api *cu = rt_cu();
    for (int i = 0; cu && i < m->ev_n; i++)
        cu->EventDestroy(m->ev[i]);
    free(m->ev);
    m->ev = NULL;
    m->ev_n = 0;
    for (int i = 0; cu && i < 4; i++)
        if (m->aux[i])
            cu->StreamDestroy(m->aux[i]);
    memset(m->aux, 0, sizeof m->aux);
}

rnnc_status rt_fused_streams(rt_fused *m, bool aux, int n)
{
    rnnc_status st = aux ? make_streams(m) : RNNC_OK;
    return st ? st : make_events(m, n);
}

rnnc_status rt_fused_after(CUstream waiter, CUevent e, CUstream signaller)
{
    const rt_cuda_api *cu = rt_cu();
    rnnc_status st = rt_cuda_check(cu->EventRecord(e, signaller), "cuEventRecord");
    return st ? st : rt_cuda_check(cu->StreamWaitEvent(waiter, e, 0), "cuStreamWaitEvent");
}

rnnc_status rt_fused_fork(rt_fused *m, CUstream s)
{
    rnnc_status st = rt_fused_after(m->aux[3], m->ev[0], s);
    return st ? st : rt_fused_after(m->aux[0], m->ev[0], s);
}

rnnc_status rt_fused_join(rt_fused *m, CUstream s)
{
    rnnc_status st = rt_fused_after(s, m->ev[1], m->aux[0]);
    return st ? st : rt_fused_after(s, m->ev[2], m->aux[3]);
}

CUstream rt_fused_dir_stream(const rt_fused *m, int d)
{
    return d == 1 ? m->aux[0] : m->aux[3];
}

#endif /* RT_HAVE_CUDA_H */
