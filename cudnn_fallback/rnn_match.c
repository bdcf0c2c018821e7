/*
 * rnn_match.c: decides which cuDNN mode, if any, computes a model's cell.
 *
 * cuDNN runs four fixed cells, so a cell qualifies only when it is, after
 * specialisation, the same graph as one of the built-ins.  Comparing the
 * optimised graphs (not names) means a user's own LSTM written in .cell
 * text runs on cuDNN too, and a renamed layernorm_lstm never does.
 *
 * Requires: a cell source (fb_rnn_set_cell_source).  The built-in cells are
 * .cell text that only frontend/'s parser turns into graphs, and this stage
 * sits below api/ and above ir/: calling the parser would be an edge up
 * the pipeline, and api/ calling down into us is the direction data flows.
 * So api/ hands down the maker (rnnc_cell_builtin) and this file only ever
 * holds a function pointer; what it does with the cells is ir/'s work
 * (specialisation, equality).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cudnn_fallback/rnn.h"

static const struct {
    const char *builtin;
    fb_rnn_mode mode;
} candidates[] = {
    {"lstm", FB_LSTM},         {"gru", FB_GRU},           {"rnn_tanh", FB_RNN_TANH},
    {"rnn_relu", FB_RNN_RELU}, {"dropout_lstm", FB_LSTM},
};

static _Atomic(fb_cell_source) g_source;

void fb_rnn_set_cell_source(fb_cell_source make)
{
    atomic_store(&g_source, make);
}

static bool has_projection(const rt_spec *s)
{
    /* PyTorch requires 0 < proj_size < hidden_size, so P != H exactly when
     * the model projects. */
    return s->hout != s->sizes[0].H;
}

/* Dropout sites keep their probability as an attribute; the built-in's
 * default must not stop a dropout_lstm with another p from matching. */
static void copy_dropout_p(ir_fn *cand, const ir_fn *fn)
{
    for (int32_t i = 0; i < cand->n; i++) {
        if (cand->nodes[i].op != IR_DROPOUT)
            continue;
        for (int32_t j = 0; j < fn->n; j++)
            if (fn->nodes[j].op == IR_DROPOUT && fn->nodes[j].i1 == cand->nodes[i].i1)
                cand->nodes[i].f = fn->nodes[j].f;
    }
}

/* A user's LSTM whose biases are mandatory is still an LSTM: whether a
 * present param could have been absent does not change what it computes. */
static void copy_optional_flags(ir_fn *cand, const ir_fn *fn)
{
    for (int32_t i = 0; i < cand->n_params; i++)
        for (int32_t j = 0; j < fn->n_params; j++)
            if (strcmp(cand->params[i].name, fn->params[j].name) == 0)
                cand->params[i].optional = fn->params[j].optional;
}

/*
 * The built-in `name` specialised exactly as the model API specialises a
 * cell (ir_specialise_bias), so the two compare node for node.
 */
static rnnc_status specialised_builtin(const char *name, const rt_spec *s, ir_fn **out)
{
    rnnc_cell *raw = NULL, *c = NULL;
    fb_cell_source make = atomic_load(&g_source);
    if (!make)
        return err_fail(RNNC_ERR_INTERNAL, "cudnn: no source of built-in cells to match "
                                           "against (api/ sets one before opening cudnn)");
    rnnc_status st = make(&raw, name, NULL);
    if (st != RNNC_OK)
        return st;
    st = ir_specialise_bias(raw, has_projection(s), s->no_bias, &c);
    rnnc_cell_destroy(raw);
    if (st == RNNC_OK) {
        copy_dropout_p(c, s->fn[0]);
        copy_optional_flags(c, s->fn[0]);
        st = ir_rehash(c);
    }
    if (st != RNNC_OK) {
        rnnc_cell_destroy(c);
        return st;
    }
    *out = c;
    return RNNC_OK;
}

/* The probability of the cell's own dropout sites (0 if none). */
static double cell_dropout(const ir_fn *fn)
{
    for (int32_t i = 0; i < fn->n; i++)
        if (fn->nodes[i].op == IR_DROPOUT)
            return fn->nodes[i].f;
    return 0.0;
}

rnnc_status fb_rnn_match(const rt_spec *s, fb_rnn_mode *mode, double *dropout)
{
    const ir_fn *fn = s->fn[0];
    for (size_t k = 0; k < sizeof candidates / sizeof candidates[0]; k++) {
        ir_fn *cand = NULL;
        rnnc_status st = specialised_builtin(candidates[k].builtin, s, &cand);
        if (st == RNNC_ERR_NOT_FOUND)
            continue; /* a build without that built-in */
        if (st != RNNC_OK)
            return st;
        bool same = rnnc_cell_equal(cand, fn);
        rnnc_cell_destroy(cand);
        if (same) {
            *mode = candidates[k].mode;
            *dropout = s->dropout > 0 ? s->dropout : cell_dropout(fn);
            err_clear();
            return RNNC_OK;
        }
    }
    const char *name = rnnc_cell_name(fn);
    return err_fail(RNNC_ERR_UNSUPPORTED,
                    "cell '%s' is not a standard cell; cuDNN runs lstm, gru, rnn_tanh, "
                    "rnn_relu; use --backend fused, cpu or interp",
                    name ? name : "?");
}

rnnc_status fb_rnn_state_slots(const ir_fn *fn, fb_rnn_mode m, int *h, int *c)
{
    int want = fb_rnn_state_count(m);
    if (fn->n_states != want)
        return err_fail(RNNC_ERR_INVALID_ARG,
                        "cudnn %s has %d state%s (%s), but the cell declares %d",
                        fb_rnn_mode_name(m), want, want == 1 ? "" : "s",
                        want == 1 ? "h; cx is only for lstm" : "h and c", (int)fn->n_states);
    /* dropout_lstm may emit dropout(h') while h' itself carries on. */
    int32_t out = fn->output;
    if (out >= 0 && fn->nodes[out].op == IR_DROPOUT)
        out = fn->nodes[out].a[0];
    *h = -1;
    *c = -1;
    for (int i = 0; i < fn->n_states; i++) {
        if (fn->states[i].next == out)
            *h = i;
        else
            *c = i;
    }
    if (*h < 0)
        return err_fail(RNNC_ERR_INTERNAL, "no state of cell '%s' is its output",
                        rnnc_cell_name(fn));
    return RNNC_OK;
}
