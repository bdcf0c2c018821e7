/*
 * cli_inputs.c: the input file of `rnnc run` and `rnnc grad`: x, lengths
 * and the initial states named <state>0, each checked against the model.
 * The file may also hold the outputs (y, <state>y), as PyTorch's reference
 * files do: they are left for `rnnc diff`.
 */
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"

rnnc_status cli_check_input_names(const rnnc_tensors *in, const rnnc_cell *cell,
                                  const char *path)
{
    for (int i = 0; i < rnnc_tensors_count(in); i++) {
        const char *n = rnnc_tensors_name(in, i);
        /* y and <state>y: the outputs of a file that holds both (not read) */
        bool known = strcmp(n, "x") == 0 || strcmp(n, "lengths") == 0 || strcmp(n, "y") == 0;
        for (int s = 0; !known && s < rnnc_cell_state_count(cell); s++) {
            size_t k = strlen(rnnc_cell_state_name(cell, s));
            known = strncmp(n, rnnc_cell_state_name(cell, s), k) == 0 &&
                    (strcmp(n + k, "0") == 0 || strcmp(n + k, "y") == 0);
        }
        if (!known)
            return cli_error(RNNC_ERR_FORMAT,
                             "%s holds '%s'; an input file holds x, lengths and the initial "
                             "states of cell '%s' named <state>0 (and may hold the outputs y "
                             "and <state>y, which are not read)",
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

/* What a state of shape `got` (not `want`) says the command line missed:
 * x read with the wrong batch axis, the other number of directions, or a
 * projection; "" if none of these explains it. */
static const char *state_hint(const cli_io *io, const rnnc_tensor *t, const int64_t want[3])
{
    static char hint[256];
    hint[0] = '\0';
    if (t->rank != 3)
        return hint;
    const int64_t *got = t->shape;
    if (got[1] != want[1] && got[1] == io->T) /* B and T swapped: x was read the other way */
        snprintf(hint, sizeof hint, "; x may be %s: %s --batch-first",
                 io->batch_first ? "[T, B, I]" : "[B, T, I]",
                 io->batch_first ? "leave out" : "give");
    else if (got[0] != want[0] && got[0] == 2 * want[0])
        snprintf(hint, sizeof hint, "; it has two directions' rows: give --bidirectional");
    else if (got[0] != want[0] && 2 * got[0] == want[0])
        snprintf(hint, sizeof hint, "; it has one direction's rows: leave out --bidirectional");
    else if (got[0] != want[0])
        snprintf(hint, sizeof hint, "; one row per layer and direction: check --layers");
    else if (got[2] != want[2] && got[2] < want[2])
        snprintf(hint, sizeof hint, "; a model with a projection has n = P: give --proj-size %lld"
                 " if that is this model", (long long)got[2]);
    else if (got[2] != want[2])
        snprintf(hint, sizeof hint, "; n is the hidden size (H, or P with --proj-size): check "
                 "--hidden-size and --proj-size");
    return hint;
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
            return cli_error(RNNC_ERR_SHAPE, "'%s' in %s must be [%lld, %lld, %lld] (L*D, B, n)%s",
                             name, path, (long long)want[0], (long long)want[1],
                             (long long)want[2], state_hint(io, t, want));
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
        return cli_error(RNNC_ERR_SHAPE, "'lengths' in %s must be [%lld]%s", path,
                         (long long)io->B,
                         t->rank == 1 && t->shape[0] == io->T
                             ? io->batch_first ? "; x may be [T, B, I]: leave out --batch-first"
                                               : "; x may be [B, T, I]: give --batch-first"
                             : "");
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
