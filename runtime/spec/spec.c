/*
 * spec.c: what every backend shares: the checks of a forward call, made
 * before a buffer is touched so a bad call fails the same way everywhere,
 * and the host-clock timer of the backends without device events.
 */
#include <stdlib.h>

#include "runtime/spec/spec.h"

/* batch_sizes as PyTorch's PackedSequence holds them (its sequences sorted
 * longest first): B, then never more, never 0. */
static rnnc_status check_packed(const rnnc_forward_args *a)
{
    if (a->lengths)
        return err_fail(RNNC_ERR_INVALID_ARG,
                        "forward: packed input (batch_sizes) carries its own lengths; pass "
                        "lengths = NULL");
    if (a->batch_sizes[0] != a->batch)
        return err_fail(RNNC_ERR_SHAPE, "forward: batch_sizes[0] = %lld must be the batch (%lld)",
                        (long long)a->batch_sizes[0], (long long)a->batch);
    for (int64_t t = 1; t < a->seq_len; t++)
        if (a->batch_sizes[t] < 1 || a->batch_sizes[t] > a->batch_sizes[t - 1])
            return err_fail(RNNC_ERR_SHAPE,
                            "forward: batch_sizes[%lld] = %lld after %lld: packed sequences "
                            "must be sorted longest first, each step holding >= 1",
                            (long long)t, (long long)a->batch_sizes[t],
                            (long long)a->batch_sizes[t - 1]);
    return RNNC_OK;
}

rnnc_status rt_check_forward(const rt_spec *s, const rnnc_forward_args *a)
{
    if (!a)
        return err_fail(RNNC_ERR_INVALID_ARG, "forward: NULL arguments");
    if (a->seq_len < 1 || a->batch < 1)
        return err_fail(RNNC_ERR_SHAPE, "forward: sequence length and batch must be >= 1 (got T=%lld, B=%lld)",
                        (long long)a->seq_len, (long long)a->batch);
    if (!a->x || !a->y)
        return err_fail(RNNC_ERR_INVALID_ARG, "forward: x and y are required");
    if (a->batch_sizes) {
        rnnc_status st = check_packed(a);
        if (st != RNNC_OK)
            return st;
    }
    if (a->lengths) {
        for (int64_t b = 0; b < a->batch; b++)
            if (a->lengths[b] < 1 || a->lengths[b] > a->seq_len)
                return err_fail(RNNC_ERR_SHAPE,
                                "forward: lengths[%lld] = %lld is not in [1, %lld]", (long long)b,
                                (long long)a->lengths[b], (long long)a->seq_len);
    }
    if (a->training && s->dropout > 0 && s->layers < 2)
        return RNNC_OK; /* PyTorch accepts it (with a warning) and applies no dropout */
    return RNNC_OK;
}

rnnc_status rt_time_host(const rt_backend *be, void *state, const rnnc_forward_args *a,
                         int warmup, int iters, double *median_ms)
{
    if (iters < 1 || warmup < 0 || !median_ms)
        return err_fail(RNNC_ERR_INVALID_ARG, "timing needs iters >= 1 and warmup >= 0");
    double *t = malloc(sizeof(double) * (size_t)iters);
    if (!t)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "timing: out of memory");
    rnnc_status s = RNNC_OK;
    for (int i = 0; i < warmup && s == RNNC_OK; i++)
        s = be->forward(state, a);
    for (int i = 0; i < iters && s == RNNC_OK; i++) {
        double t0 = cm_now_ms();
        s = be->forward(state, a);
        t[i] = cm_now_ms() - t0;
    }
    if (s == RNNC_OK)
        *median_ms = cm_median(t, iters);
    free(t);
    return s;
}
