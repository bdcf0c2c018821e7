/*
 * builder_lstm.c: PyTorch's LSTM cell built step by step with the C builder
 * API.  It checks that the result is the very cell the built-in `lstm` is,
 * then runs it with random weights on the best backend of this machine
 * (auto) and compares the output with the reference interpreter running the
 * built-in cell on the same weights.
 *
 *   example_builder_lstm
 *
 * The builder hash-conses nodes and numbers them in the order they are made,
 * and rnnc_cell_equal compares node by node, so the calls below follow the
 * order of frontend/cells/lstm.cell: declarations first, then each
 * expression left to right, operands before the op that uses them.
 */
#include <stdio.h>
#include <stdlib.h>

#include "example_common.h"
#include "rnnc.h"

enum { SEQ = 16, BATCH = 4, INPUT = 32, HIDDEN = 64 };

/* The leaves of the step: what it reads. */
typedef struct lstm_leaves {
    rnnc_value x, h, c;
    rnnc_value w_ih, w_hh, b_ih, b_hh, w_hr;
} lstm_leaves;

/* Shapes are symbolic: I, H and P get their sizes when a model is made.
 * P is the projection size, H when the model has none. */
static rnnc_status declare(rnnc_cell *c, lstm_leaves *v)
{
    rnnc_status s;
    TRY(rnnc_cell_input(c, "x", "I", &v->x));
    TRY(rnnc_cell_state(c, "h", "P", &v->h)); /* states in the order of h0, c0 */
    TRY(rnnc_cell_state(c, "c", "H", &v->c));
    TRY(rnnc_cell_param(c, "weight_ih", "4H", "I", &v->w_ih)); /* a matrix [rows, cols] */
    TRY(rnnc_cell_param(c, "weight_hh", "4H", "P", &v->w_hh));
    /* Vectors; optional so a model with no_bias (bias=False) drops them. */
    TRY(rnnc_cell_param_optional(c, "bias_ih", NULL, "4H", &v->b_ih));
    TRY(rnnc_cell_param_optional(c, "bias_hh", NULL, "4H", &v->b_hh));
    /* Exists only with proj_size > 0; absent, linear(v, weight_hr) is v. */
    TRY(rnnc_cell_param_optional(c, "weight_hr", "P", "H", &v->w_hr));
fail:
    return s;
}

/* gates = linear(x, weight_ih) + bias_ih + linear(h, weight_hh) + bias_hh
 * PyTorch's order; the simplify pass regroups the sum so that the biases
 * fold into one vector and x W_ih^T + b leaves the time loop. */
static rnnc_status build_gates(rnnc_cell *c, const lstm_leaves *v, rnnc_value *gates)
{
    rnnc_status s;
    rnnc_value xw, xb, hw, sum;
    TRY(rnnc_linear(c, v->x, v->w_ih, &xw)); /* x @ W^T, as nn.Linear */
    TRY(rnnc_add(c, xw, v->b_ih, &xb));      /* a vector broadcasts over the batch */
    TRY(rnnc_linear(c, v->h, v->w_hh, &hw));
    TRY(rnnc_add(c, xb, hw, &sum));
    TRY(rnnc_add(c, sum, v->b_hh, gates));
fail:
    return s;
}

/* i, f, g, o = chunk(gates, 4)
 * c_next = sigmoid(f) * c + sigmoid(i) * tanh(g)
 * h_next = linear(sigmoid(o) * tanh(c_next), weight_hr) */
static rnnc_status build_update(rnnc_cell *c, const lstm_leaves *v, rnnc_value gates,
                                rnnc_value *c_next, rnnc_value *h_next)
{
    rnnc_status s;
    rnnc_value gate[4], sf, keep, si, tg, write, so, tc, hc;
    for (int k = 0; k < 4; k++)
        TRY(rnnc_chunk(c, gates, 4, k, &gate[k]));
    TRY(rnnc_sigmoid(c, gate[1], &sf));
    TRY(rnnc_mul(c, sf, v->c, &keep));
    TRY(rnnc_sigmoid(c, gate[0], &si));
    TRY(rnnc_tanh(c, gate[2], &tg));
    TRY(rnnc_mul(c, si, tg, &write));
    TRY(rnnc_add(c, keep, write, c_next));
    TRY(rnnc_sigmoid(c, gate[3], &so));
    TRY(rnnc_tanh(c, *c_next, &tc));
    TRY(rnnc_mul(c, so, tc, &hc));
    TRY(rnnc_linear(c, hc, v->w_hr, h_next));
fail:
    return s;
}

static rnnc_status build_lstm(rnnc_cell **out)
{
    rnnc_status s;
    rnnc_cell *c = NULL;
    lstm_leaves v;
    rnnc_value gates, c_next, h_next;
    TRY(rnnc_cell_create(&c, "lstm"));
    TRY(declare(c, &v));
    TRY(build_gates(c, &v, &gates));
    TRY(build_update(c, &v, gates, &c_next, &h_next));
    TRY(rnnc_cell_set_next(c, v.h, h_next));
    TRY(rnnc_cell_set_next(c, v.c, c_next));
    TRY(rnnc_cell_set_output(c, h_next));
    TRY(rnnc_cell_verify(c));
    *out = c;
    return RNNC_OK;
fail:
    rnnc_cell_destroy(c);
    return s;
}

/* Prints both cells' text when they differ, to show where. */
static bool same_as_builtin(const rnnc_cell *built, const rnnc_cell *builtin)
{
    if (rnnc_cell_equal(built, builtin))
        return true;
    char *a = NULL, *b = NULL;
    if (rnnc_cell_print(built, &a) == RNNC_OK && rnnc_cell_print(builtin, &b) == RNNC_OK)
        fprintf(stderr, "built:\n%s\nbuilt-in:\n%s\n", a, b);
    rnnc_free(a);
    rnnc_free(b);
    return false;
}

static rnnc_status make_model(rnnc_model **m, const rnnc_cell *cell, rnnc_backend backend)
{
    rnnc_model_desc d;
    rnnc_model_desc_init(&d); /* one layer, fp32, hoist all */
    d.cell = cell;            /* copied: the cell may be destroyed after this */
    d.input_size = INPUT;
    d.hidden_size = HIDDEN;
    d.backend = backend;
    return rnnc_model_create(m, &d);
}

/* Runs the built cell on auto and the built-in one on the interpreter. */
static rnnc_status run(const rnnc_cell *built, const rnnc_cell *builtin, float *y, float *ref)
{
    rnnc_status s;
    rnnc_model *m[2] = {NULL, NULL};
    float *x = malloc(sizeof *x * SEQ * BATCH * INPUT);
    uint64_t seed = 0x9e3779b97f4a7c15u;
    if (!x)
        return RNNC_ERR_OUT_OF_MEMORY;
    ex_fill(x, SEQ * BATCH * INPUT, 1.0f, &seed);
    TRY(make_model(&m[0], built, RNNC_BACKEND_AUTO));
    TRY(make_model(&m[1], builtin, RNNC_BACKEND_INTERP));
    TRY(ex_run_pair(m, HIDDEN, 42, SEQ, BATCH, x, y, ref));
fail:
    rnnc_model_destroy(m[1]);
    rnnc_model_destroy(m[0]);
    free(x);
    return s;
}

int main(void)
{
    rnnc_status s = RNNC_OK;
    rnnc_cell *built = NULL, *builtin = NULL;
    float *y = malloc(sizeof *y * SEQ * BATCH * HIDDEN);
    float *ref = malloc(sizeof *ref * SEQ * BATCH * HIDDEN);
    int rc = 1;
    if (!y || !ref)
        goto fail;
    TRY(build_lstm(&built));
    TRY(rnnc_cell_builtin(&builtin, "lstm", NULL));
    if (!same_as_builtin(built, builtin)) {
        fprintf(stderr, "the built cell differs from the built-in lstm\n");
        goto fail;
    }
    printf("built cell equals the built-in lstm (%d states, %d parameters)\n",
           rnnc_cell_state_count(built), rnnc_cell_param_count(built));
    TRY(run(built, builtin, y, ref));
    double diff = ex_rel_diff(y, ref, SEQ * BATCH * HIDDEN);
    printf("y checksum: %.6f\n", ex_checksum(y, SEQ * BATCH * HIDDEN));
    printf("max |y - y_interp| / max |y_interp| = %.3g\n", diff);
    rc = diff <= 1e-5 ? 0 : 1;
    if (rc)
        fprintf(stderr, "the output differs from the interpreter's\n");
fail:
    rnnc_cell_destroy(builtin);
    rnnc_cell_destroy(built);
    free(ref);
    free(y);
    return s == RNNC_OK ? rc : 1;
}
