/*
 * example_common.h: what both examples do around the part they show: check
 * every call, fill a model with random weights by their state_dict names,
 * run one forward over host buffers and compare two outputs.  Uses only the
 * public header, as a user's program would.
 */
#ifndef EXAMPLE_COMMON_H
#define EXAMPLE_COMMON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rnnc.h"

/* Reports a failed call with the library's detail; true when `s` is RNNC_OK. */
static inline bool ex_ok(rnnc_status s, const char *call)
{
    if (s != RNNC_OK)
        fprintf(stderr, "%s failed: %s: %s\n", call, rnnc_status_string(s), rnnc_last_error());
    return s == RNNC_OK;
}

/* Every rnnc call in the examples goes through TRY, which keeps its status
 * in the caller's `s` and jumps to the caller's `fail` label on an error. */
#define TRY(call)                       \
    do {                                \
        if (!ex_ok(s = (call), #call))  \
            goto fail;                  \
    } while (0)

/* A small fixed-seed generator, so every run prints the same checksums. */
static inline float ex_uniform(uint64_t *state, float bound)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return bound * (2.0f * (float)(*state >> 40) / (float)(1 << 24) - 1.0f);
}

static inline void ex_fill(float *p, int64_t n, float bound, uint64_t *state)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = ex_uniform(state, bound);
}

/*
 * Gives every weight of models[0] values drawn like PyTorch's default
 * initialisation, U(-1/sqrt(H), 1/sqrt(H)), and the same values to the other
 * models, which must expect the same names (same cell, same sizes).
 */
static inline rnnc_status ex_random_weights(rnnc_model *const *models, int n_models,
                                            int64_t hidden, uint64_t seed)
{
    rnnc_status s = RNNC_OK;
    for (int i = 0; s == RNNC_OK && i < rnnc_model_weight_count(models[0]); i++) {
        const char *name;
        int64_t shape[2] = {1, 1};
        int rank;
        if (!ex_ok(s = rnnc_model_weight_info(models[0], i, &name, 2, shape, &rank),
                   "rnnc_model_weight_info"))
            break;
        int64_t count = rank == 2 ? shape[0] * shape[1] : shape[0];
        float *w = malloc(sizeof *w * (size_t)count);
        if (!w) {
            fprintf(stderr, "out of memory for weight %s\n", name);
            return RNNC_ERR_OUT_OF_MEMORY;
        }
        ex_fill(w, count, 1.0f / sqrtf((float)hidden), &seed);
        for (int k = 0; s == RNNC_OK && k < n_models; k++)
            ex_ok(s = rnnc_model_set_weight(models[k], name, w, count), name);
        free(w);
    }
    return s;
}

/* One forward from zero states; x is [T, B, I] and y [T, B, Hout] on the host. */
static inline rnnc_status ex_forward(rnnc_model *m, int64_t seq_len, int64_t batch,
                                     const float *x, float *y)
{
    rnnc_forward_args a = {.seq_len = seq_len, .batch = batch, .x = x, .y = y};
    return rnnc_model_forward(m, &a);
}

/* Gives both models the same random weights (from `seed`), runs both on x,
 * and says which backend the first one ran on: the examples' comparison of
 * a backend (m[0]) with the reference interpreter (m[1]). */
static inline rnnc_status ex_run_pair(rnnc_model *const m[2], int64_t hidden, uint64_t seed,
                                      int64_t seq_len, int64_t batch, const float *x, float *y,
                                      float *ref)
{
    rnnc_status s = ex_random_weights(m, 2, hidden, seed);
    if (s == RNNC_OK)
        s = ex_forward(m[0], seq_len, batch, x, y);
    if (s == RNNC_OK)
        s = ex_forward(m[1], seq_len, batch, x, ref);
    if (s == RNNC_OK)
        printf("backend: %s\n", rnnc_backend_name(rnnc_model_backend(m[0])));
    return s;
}

/* max |a - b| / max |b|: how the project's tests compare with the interpreter.
 * A NaN or an infinity anywhere counts as an infinite difference. */
static inline double ex_rel_diff(const float *a, const float *b, int64_t n)
{
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i]))
            return INFINITY;
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return scale > 0 ? diff / scale : diff;
}

static inline double ex_checksum(const float *p, int64_t n)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += p[i];
    return sum;
}

#endif /* EXAMPLE_COMMON_H */
