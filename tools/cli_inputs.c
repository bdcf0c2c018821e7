/*
 * cli_inputs.c: the input file of `rnnc run` and `rnnc grad`: x, lengths
 * and the initial states named <state>0, each checked against the model.
 */
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"

rnnc_status cli_check_input_names(const rnnc_tensors *in, const rnnc_cell *cell,
                                  const char *path)
{
    for (int i = 0; i < rnnc_tensors_count(in); i++) {
        const char *n = rnnc_tensors_name(in, i);
        bool known = strcmp(n, "x") == 0 || strcmp(n, "lengths") == 0;
        for (int s = 0; !known && s < rnnc_cell_state_count(cell); s++) {
            size_t k = strlen(rnnc_cell_state_name(cell, s));
            known = strncmp(n, rnnc_cell_state_name(cell, s), k) == 0 && strcmp(n + k, "0") == 0;
        }
        if (!known)
            return cli_error(RNNC_ERR_FORMAT,
                             "%s holds '%s'; an input file holds x, lengths and the initial "
                             "states of cell '%s' named <state>0",
                             path, n, rnnc_cell_name(cell));
    }
    return RNNC_OK;
}

rnnc_status cli_find_x(const rnnc_tensors *in, cli_model_opts *m, const char *path, int64_t *T,
                       int64_t *B)
{
    const rnnc_tensor *x = rnnc_tensors_get(in, "x");
    if (!x)
        return cli_error(RNNC_ERR_NOT_FOUND, "%s has no tensor 'x'", path);
    if (x->rank != 3 || x->shape[0] < 1 || x->shape[1] < 1 || x->shape[2] < 1)
        return cli_error(RNNC_ERR_SHAPE, "'x' in %s must be [%s, I] with no empty dim", path,
                         m->batch_first ? "B, T" : "T, B");
    if (m->input_size && m->input_size != x->shape[2])
        return cli_error(RNNC_ERR_SHAPE, "'x' in %s has %lld features; --input-size says %lld",
                         path, (long long)x->shape[2], (long long)m->input_size);
    m->input_size = x->shape[2];
    *T = x->shape[m->batch_first ? 1 : 0];
    *B = x->shape[m->batch_first ? 0 : 1];
    return RNNC_OK;
}

static rnnc_status read_states(const rnnc_tensors *in, cli_io *io, const rnnc_cell *cell,
                               const char *path)
{
    for (int s = 0; s < io->n_states; s++) {
        char name[128];
        int64_t want[3];
        snprintf(name, sizeof name, "%s0", rnnc_cell_state_name(cell, s));
        const rnnc_tensor *t = rnnc_tensors_get(in, name);
        if (!t)
            continue;
        cli_state_shape(io, s, want);
        if (t->rank != 3 || memcmp(t->shape, want, sizeof want) != 0)
            return cli_error(RNNC_ERR_SHAPE, "'%s' in %s must be [%lld, %lld, %lld] (L*D, B, n)",
                             name, path, (long long)want[0], (long long)want[1],
                             (long long)want[2]);
        rnnc_status st = cli_tensor_to_f32(t, name, io->init[s]);
        if (st != RNNC_OK)
            return st;
        io->has_init[s] = true;
    }
    return RNNC_OK;
}

static rnnc_status read_lengths(const rnnc_tensors *in, cli_io *io, const char *path)
{
    const rnnc_tensor *t = rnnc_tensors_get(in, "lengths");
    if (!t)
        return RNNC_OK;
    if (t->rank != 1 || t->shape[0] != io->B)
        return cli_error(RNNC_ERR_SHAPE, "'lengths' in %s must be [%lld]", path,
                         (long long)io->B);
    if (t->dtype != RNNC_I64 && t->dtype != RNNC_I32)
        return cli_error(RNNC_ERR_FORMAT, "'lengths' in %s is %s; it must be I64 or I32", path,
                         rnnc_dtype_name(t->dtype));
    for (int64_t b = 0; b < io->B; b++)
        io->lengths[b] = t->dtype == RNNC_I64 ? ((const int64_t *)t->data)[b]
                                              : ((const int32_t *)t->data)[b];
    io->has_lengths = true;
    return RNNC_OK;
}

rnnc_status cli_read_inputs(const rnnc_tensors *in, cli_io *io, const rnnc_cell *cell,
                            const char *path)
{
    rnnc_status s = cli_tensor_to_f32(rnnc_tensors_get(in, "x"), "x", io->x);
    if (s == RNNC_OK)
        s = read_states(in, io, cell, path);
    return s == RNNC_OK ? read_lengths(in, io, path) : s;
}
