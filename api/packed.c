/*
 * packed.c: PyTorch's packed sequences on backends that read padded
 * tensors.  Packed rows hold step 0's batch_sizes[0] rows, then step 1's,
 * and so on, sequences sorted longest first; padded is [T, B, feat] (or
 * [B, T, feat] batch_first) with zeros past each sequence's end.  cuDNN
 * reads the packed layout itself; every other backend gets the padded form
 * and its lengths, and y is packed back.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

int64_t api_packed_rows(const int64_t *batch_sizes, int64_t T)
{
    int64_t n = 0;
    for (int64_t t = 0; t < T; t++)
        n += batch_sizes[t];
    return n;
}

void api_packed_lengths(const int64_t *batch_sizes, int64_t T, int64_t B, int64_t *lengths)
{
    for (int64_t b = 0; b < B; b++)
        lengths[b] = 0;
    for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < batch_sizes[t] && b < B; b++)
            lengths[b]++;
}

/* Byte offset of row (t, b) in the padded tensor. */
static size_t padded_at(int64_t t, int64_t b, int64_t T, int64_t B, size_t row, bool batch_first)
{
    return (size_t)(batch_first ? b * T + t : t * B + b) * row;
}

void api_unpack(const void *packed, const int64_t *batch_sizes, int64_t T, int64_t B,
                int64_t feat, size_t esz, bool batch_first, void *padded)
{
    size_t row = (size_t)feat * esz;
    const char *src = packed;
    memset(padded, 0, (size_t)(T * B) * row);
    for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < batch_sizes[t]; b++, src += row)
            memcpy((char *)padded + padded_at(t, b, T, B, row, batch_first), src, row);
}

void api_pack(const void *padded, const int64_t *batch_sizes, int64_t T, int64_t B, int64_t feat,
              size_t esz, bool batch_first, void *packed)
{
    size_t row = (size_t)feat * esz;
    char *dst = packed;
    for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < batch_sizes[t]; b++, dst += row)
            memcpy(dst, (const char *)padded + padded_at(t, b, T, B, row, batch_first), row);
}

static bool uniform(const int64_t *batch_sizes, int64_t T)
{
    for (int64_t t = 1; t < T; t++)
        if (batch_sizes[t] != batch_sizes[0])
            return false;
    return true;
}

/* The padded call: forward, or timing when ms is not NULL. */
static rnnc_status run_padded(rnnc_model *m, const rnnc_forward_args *a, int warmup, int iters,
                              double *ms)
{
    if (ms && m->be->time_forward)
        return m->be->time_forward(m->be_state, a, warmup, iters, ms);
    if (ms)
        return rt_time_host(m->be, m->be_state, a, warmup, iters, ms);
    return m->be->forward(m->be_state, a);
}

void api_packed_forget(rnnc_model *m)
{
    free(m->packed.batch_sizes);
    memset(&m->packed, 0, sizeof m->packed);
}

/* The backward of this forward must see dy and dx as the backend saw x and y. */
static rnnc_status remember(rnnc_model *m, const rnnc_forward_args *a)
{
    api_packed_forget(m);
    m->packed.batch_sizes = malloc(sizeof(int64_t) * (size_t)a->seq_len);
    if (!m->packed.batch_sizes)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "packed input: no memory to keep its shape");
    memcpy(m->packed.batch_sizes, a->batch_sizes, sizeof(int64_t) * (size_t)a->seq_len);
    m->packed.T = a->seq_len;
    m->packed.B = a->batch;
    m->packed.on = true;
    return RNNC_OK;
}

rnnc_status api_forward_packed(rnnc_model *m, const rnnc_forward_args *a, int warmup, int iters,
                               double *ms)
{
    rnnc_forward_args p = *a;
    p.batch_sizes = NULL;
    int64_t T = a->seq_len, B = a->batch;
    bool bf = m->spec.batch_first;
    /* Every sequence full length: packed rows are the time-major tensor. */
    if (uniform(a->batch_sizes, T) && !bf)
        return run_padded(m, &p, warmup, iters, ms);
    if (a->device_pointers)
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "backend '%s' reads packed sequences of different lengths from host "
                        "memory only (cudnn reads them on the device)",
                        rnnc_backend_name(m->kind));
    size_t esz = rnnc_dtype_size(m->spec.dtype);
    int64_t fx = m->spec.sizes[0].I, fy = m->spec.dirs * m->spec.hout;
    int64_t *len = malloc(sizeof *len * (size_t)B);
    void *x = malloc((size_t)(T * B * fx) * esz), *y = malloc((size_t)(T * B * fy) * esz);
    rnnc_status s = RNNC_OK;
    if (!len || !x || !y) {
        s = err_fail(RNNC_ERR_OUT_OF_MEMORY, "packed input: no memory for its padded copy");
        goto free_bufs;
    }
    api_packed_lengths(a->batch_sizes, T, B, len);
    api_unpack(a->x, a->batch_sizes, T, B, fx, esz, bf, x);
    p.x = x, p.y = y, p.lengths = len;
    s = run_padded(m, &p, warmup, iters, ms);
    if (s == RNNC_OK)
        api_pack(y, a->batch_sizes, T, B, fy, esz, bf, a->y);
    if (s == RNNC_OK && a->training)
        s = remember(m, a);
free_bufs:
    free(y);
    free(x);
    free(len);
    return s;
}

rnnc_status api_backward_packed(rnnc_model *m, const rnnc_backward_args *a)
{
    const api_packed_call *pc = &m->packed;
    int64_t T = pc->T, B = pc->B;
    bool bf = m->spec.batch_first;
    size_t esz = rnnc_dtype_size(m->spec.dtype);
    int64_t fx = m->spec.sizes[0].I, fy = m->spec.dirs * m->spec.hout;
    void *dy = malloc((size_t)(T * B * fy) * esz), *dx = malloc((size_t)(T * B * fx) * esz);
    rnnc_status s = RNNC_OK;
    if (!dy || !dx) {
        s = err_fail(RNNC_ERR_OUT_OF_MEMORY, "packed backward: no memory for its padded copy");
        goto free_bufs;
    }
    if (a->dy)
        api_unpack(a->dy, pc->batch_sizes, T, B, fy, esz, bf, dy);
    rnnc_backward_args p = {a->dy ? dy : NULL, a->dfinal, dx, a->dinit};
    s = m->be->backward(m->be_state, &p);
    if (s == RNNC_OK && a->dx)
        api_pack(dx, pc->batch_sizes, T, B, fx, esz, bf, a->dx);
free_bufs:
    free(dx);
    free(dy);
    return s;
}
