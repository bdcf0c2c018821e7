/*
 * spec.c: checks every backend makes of a forward call before touching a
 * buffer, so a bad call fails the same way on every backend.
 */
#include "runtime/runtime.h"

rnnc_status rt_check_forward(const rt_spec *s, const rnnc_forward_args *a)
{
    if (!a)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "forward: NULL arguments");
    if (a->seq_len < 1 || a->batch < 1)
        return rnnc_fail(RNNC_ERR_SHAPE, "forward: sequence length and batch must be >= 1 (got T=%lld, B=%lld)",
                         (long long)a->seq_len, (long long)a->batch);
    if (!a->x || !a->y)
        return rnnc_fail(RNNC_ERR_INVALID_ARG, "forward: x and y are required");
    if (a->lengths) {
        for (int64_t b = 0; b < a->batch; b++)
            if (a->lengths[b] < 1 || a->lengths[b] > a->seq_len)
                return rnnc_fail(RNNC_ERR_SHAPE,
                                 "forward: lengths[%lld] = %lld is not in [1, %lld]", (long long)b,
                                 (long long)a->lengths[b], (long long)a->seq_len);
    }
    if (a->training && s->dropout > 0 && s->layers < 2)
        return RNNC_OK; /* PyTorch accepts it (with a warning) and applies no dropout */
    return RNNC_OK;
}
