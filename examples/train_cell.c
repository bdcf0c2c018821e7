/*
 * train_cell.c: trains a custom cell (examples/layernorm_gru.cell) with
 * plain SGD on a toy sequence task, on the best backend here that has a
 * backward, and prints the loss falling.
 *
 * The task: at each step output the input of the step before, y_t =
 * x_{t-1}, which needs the cell to remember one step.  A linear readout of
 * the cell's output, trained here by hand, gives the prediction; the cell's
 * weights get their gradients from rnnc_model_backward.
 *
 * Usage: example_train_cell [FILE.cell [STEPS]]
 */
#include <string.h>

#include "example_common.h"

#ifndef EXAMPLES_DIR
#define EXAMPLES_DIR "."
#endif

enum { T = 12, B = 16, I = 1, H = 16 };

typedef struct weights {
    int n;
    const char **name;
    int64_t *count;
    float **w, **g;
} weights;

static void weights_free(weights *w)
{
    for (int i = 0; i < w->n; i++)
        free(w->w[i]), free(w->g[i]);
    free(w->name), free(w->count), free(w->w), free(w->g);
}

/* Our own copy of every weight (the model takes them, it does not give them
 * back), initialised as PyTorch does. */
static rnnc_status weights_init(weights *w, rnnc_model *m, uint64_t *seed)
{
    rnnc_status s = RNNC_OK;
    w->n = rnnc_model_weight_count(m);
    w->name = calloc((size_t)w->n, sizeof *w->name);
    w->count = calloc((size_t)w->n, sizeof *w->count);
    w->w = calloc((size_t)w->n, sizeof *w->w);
    w->g = calloc((size_t)w->n, sizeof *w->g);
    if (!w->name || !w->count || !w->w || !w->g)
        return RNNC_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < w->n; i++) {
        int64_t shape[2] = {1, 1};
        int rank;
        TRY(rnnc_model_weight_info(m, i, &w->name[i], 2, shape, &rank));
        w->count[i] = rank == 2 ? shape[0] * shape[1] : shape[0];
        w->w[i] = malloc(sizeof(float) * (size_t)w->count[i]);
        w->g[i] = malloc(sizeof(float) * (size_t)w->count[i]);
        if (!w->w[i] || !w->g[i])
            return RNNC_ERR_OUT_OF_MEMORY;
        ex_fill(w->w[i], w->count[i], 1.0f / sqrtf((float)H), seed);
        if (strstr(w->name[i], "ln_weight")) /* LayerNorm's gain starts at one */
            for (int64_t k = 0; k < w->count[i]; k++)
                w->w[i][k] = 1.0f;
        TRY(rnnc_model_set_weight(m, w->name[i], w->w[i], w->count[i]));
    }
fail:
    return s;
}

/* A new batch of the task: x uniform in [-1, 1], target the previous x. */
static void batch(float *x, float *target, uint64_t *seed)
{
    ex_fill(x, T * B * I, 1.0f, seed);
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++)
            target[t * B + b] = t > 0 ? x[(t - 1) * B + b] : 0.0f;
}

/* Mean squared error of the readout r . y + r0; dy gets its gradient. */
static double readout(const float *y, const float *target, const float *r, float r0, float *dy,
                      float *dr, float *dr0)
{
    double loss = 0;
    memset(dr, 0, sizeof(float) * H);
    *dr0 = 0;
    for (int k = 0; k < T * B; k++) {
        float pred = r0;
        for (int j = 0; j < H; j++)
            pred += r[j] * y[k * H + j];
        float e = pred - target[k];
        loss += (double)e * e / (T * B);
        float de = 2.0f * e / (T * B);
        for (int j = 0; j < H; j++) {
            dy[k * H + j] = de * r[j];
            dr[j] += de * y[k * H + j];
        }
        *dr0 += de;
    }
    return loss;
}

/* One SGD step over every weight of the model and the readout. */
static rnnc_status sgd(rnnc_model *m, weights *w, float lr, float *r, float *r0, const float *dr,
                       float dr0)
{
    rnnc_status s = RNNC_OK;
    for (int i = 0; i < w->n; i++) {
        TRY(rnnc_model_weight_grad(m, w->name[i], w->g[i], w->count[i]));
        for (int64_t k = 0; k < w->count[i]; k++)
            w->w[i][k] -= lr * w->g[i][k];
        TRY(rnnc_model_set_weight(m, w->name[i], w->w[i], w->count[i]));
    }
    for (int j = 0; j < H; j++)
        r[j] -= lr * dr[j];
    *r0 -= lr * dr0;
fail:
    return s;
}

/* The first of fused, cudnn and interp that builds this model and has a backward. */
static rnnc_status open_model(const rnnc_cell *cell, rnnc_model **out)
{
    static const rnnc_backend order[] = {RNNC_BACKEND_FUSED, RNNC_BACKEND_CUDNN,
                                         RNNC_BACKEND_INTERP};
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = I;
    d.hidden_size = H;
    rnnc_status s = RNNC_ERR_UNSUPPORTED;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        if (!rnnc_backend_available(order[k]))
            continue;
        d.backend = order[k];
        if (rnnc_model_create(out, &d) != RNNC_OK)
            continue;
        float g;
        /* the probe: a model without a backward says so at once */
        if (rnnc_model_weight_grad(*out, "", &g, 1) != RNNC_ERR_UNSUPPORTED)
            return RNNC_OK;
        rnnc_model_destroy(*out);
        *out = NULL;
    }
    fprintf(stderr, "no backend here trains cell '%s'\n", rnnc_cell_name(cell));
    return s;
}

static rnnc_status train(rnnc_model *m, int steps)
{
    static float x[T * B * I], target[T * B], y[T * B * H], dy[T * B * H];
    float r[H], r0 = 0, dr[H], dr0, lr = 0.05f;
    uint64_t seed = 20261122;
    weights w = {0};
    rnnc_status s = weights_init(&w, m, &seed);
    if (s != RNNC_OK)
        goto fail;
    ex_fill(r, H, 1.0f / sqrtf((float)H), &seed);
    printf("backend: %s\n", rnnc_backend_name(rnnc_model_backend(m)));
    double avg = 0;
    for (int step = 1; step <= steps; step++) {
        batch(x, target, &seed);
        rnnc_forward_args a = {.seq_len = T, .batch = B, .x = x, .y = y, .training = true};
        TRY(rnnc_model_forward(m, &a));
        double loss = readout(y, target, r, r0, dy, dr, &dr0);
        rnnc_backward_args b = {.dy = dy};
        TRY(rnnc_model_backward(m, &b));
        TRY(sgd(m, &w, lr, r, &r0, dr, dr0));
        avg += loss;
        if (step % 25 == 0) {
            printf("step %4d  loss %.5f\n", step, avg / 25);
            avg = 0;
        }
    }
fail:
    weights_free(&w);
    return s;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : EXAMPLES_DIR "/layernorm_gru.cell";
    int steps = argc > 2 ? atoi(argv[2]) : 400;
    rnnc_cell *cell = NULL;
    rnnc_model *m = NULL;
    rnnc_status s;
    TRY(rnnc_cell_load_file(&cell, path, NULL, NULL));
    TRY(open_model(cell, &m));
    TRY(train(m, steps < 25 ? 25 : steps));
fail:
    rnnc_model_destroy(m);
    rnnc_cell_destroy(cell);
    return s == RNNC_OK ? 0 : 1;
}
