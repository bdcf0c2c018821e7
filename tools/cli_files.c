/*
 * cli_files.c: the tensors of the files `rnnc run` reads and writes, named
 * and shaped as nn.LSTM takes and returns them: x, h0, c0, lengths in;
 * y, hy, cy out (generally `<state>0` and `<state>y` for the cell's states).
 */
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

rnnc_status cli_tensor_to_f32(const rnnc_tensor *t, const char *name, float *out)
{
    int64_t n = rnnc_tensor_numel(t);
    if (t->dtype == RNNC_F32) {
        memcpy(out, t->data, sizeof(float) * (size_t)n);
        return RNNC_OK;
    }
    if (t->dtype == RNNC_F64) {
        const double *d = t->data;
        for (int64_t i = 0; i < n; i++)
            out[i] = (float)d[i];
        return RNNC_OK;
    }
    return cli_error(RNNC_ERR_FORMAT, "tensor '%s' is %s; rnnc run reads F32 or F64", name,
                     rnnc_dtype_name(t->dtype));
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
