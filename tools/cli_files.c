/*
 * cli_files.c: the tensors of the files `rnnc run` reads and writes, named
 * and shaped as nn.LSTM takes and returns them: x, h0, c0, lengths in;
 * y, hy, cy out (generally `<state>0` and `<state>y` for the cell's states).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

/* A NaN or an infinity in an input would run silently and come out as
 * NaNs; so would a double past float's range (and its conversion is
 * undefined in C).  Both are refused, naming the first such element. */
static rnnc_status not_finite(const char *name, int64_t i, double v)
{
    return cli_error(RNNC_ERR_INVALID_ARG,
                     "tensor '%s' holds %g at element %lld; inputs must be finite fp32 values",
                     name, v, (long long)i);
}

rnnc_status cli_tensor_to_f32(const rnnc_tensor *t, const char *name, float *out)
{
    int64_t n = rnnc_tensor_numel(t);
    if (t->dtype == RNNC_F32) {
        memcpy(out, t->data, sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            if (!isfinite(out[i]))
                return not_finite(name, i, out[i]);
        return RNNC_OK;
    }
    if (t->dtype == RNNC_F64) { /* checked first: the conversion of 1e300 is undefined */
        const double *d = t->data;
        for (int64_t i = 0; i < n; i++)
            if (!(fabs(d[i]) <= FLT_MAX))
                return not_finite(name, i, d[i]);
    }
    if (t->dtype == RNNC_F64 || t->dtype == RNNC_F16 || t->dtype == RNNC_BF16) {
        rnnc_status s = rnnc_convert(out, RNNC_F32, t->data, t->dtype, n);
        for (int64_t i = 0; s == RNNC_OK && i < n; i++)
            if (!isfinite(out[i]))
                return not_finite(name, i, out[i]);
        return s;
    }
    return cli_error(RNNC_ERR_FORMAT, "tensor '%s' is %s; rnnc run reads F32, F64, F16 or BF16",
                     name, rnnc_dtype_name(t->dtype));
}

rnnc_status cli_tensors_as(const rnnc_tensors *src, rnnc_dtype dtype, rnnc_tensors **out)
{
    rnnc_status s = rnnc_tensors_create(out);
    void *buf = NULL;
    for (int i = 0; s == RNNC_OK && i < rnnc_tensors_count(src); i++) {
        const char *name = rnnc_tensors_name(src, i);
        const rnnc_tensor *t = rnnc_tensors_get(src, name);
        int64_t n = rnnc_tensor_numel(t);
        if (t->dtype != RNNC_F32 || dtype == RNNC_F32) {
            s = rnnc_tensors_add(*out, name, t->dtype, t->rank, t->shape, t->data);
            continue;
        }
        free(buf);
        if (!(buf = malloc(rnnc_dtype_size(dtype) * (size_t)n + 1)))
            s = cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory converting '%s'", name);
        if (s == RNNC_OK && (s = rnnc_convert(buf, dtype, t->data, RNNC_F32, n)) == RNNC_OK)
            s = rnnc_tensors_add(*out, name, dtype, t->rank, t->shape, buf);
    }
    free(buf);
    return s;
}

void cli_seq_shape(const cli_io *io, int64_t n, int64_t shape[3])
{
    shape[0] = io->batch_first ? io->B : io->T;
    shape[1] = io->batch_first ? io->T : io->B;
    shape[2] = n;
}

void cli_state_shape(const cli_io *io, int s, int64_t shape[3])
{
    shape[0] = io->rows;
    shape[1] = io->B;
    shape[2] = io->state_feat[s];
}

rnnc_status cli_add_outputs(rnnc_tensors *ts, const cli_io *io, const rnnc_cell *cell)
{
    int64_t shape[3];
    cli_seq_shape(io, io->y_feat, shape);
    rnnc_status s = rnnc_tensors_add(ts, "y", RNNC_F32, 3, shape, io->y);
    for (int i = 0; i < io->n_states && s == RNNC_OK; i++) {
        char name[128];
        snprintf(name, sizeof name, "%sy", rnnc_cell_state_name(cell, i));
        cli_state_shape(io, i, shape);
        s = rnnc_tensors_add(ts, name, RNNC_F32, 3, shape, io->final[i]);
    }
    return s;
}
