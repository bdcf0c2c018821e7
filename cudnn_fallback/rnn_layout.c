/*
 * rnn_layout.c: where each PyTorch RNN parameter lives among cuDNN's linear
 * layers.  Pure host code (no cuDNN call), so it is tested on every machine.
 *
 * cuDNN keeps, per pseudo-layer, one matrix and one bias per linear layer:
 * ids 0..G-1 are the input side of gates 0..G-1, G..2G-1 the recurrent
 * side, and 2G (LSTM with projection) the projection, which has no bias.
 * PyTorch stacks the gates of one side in a [G*H, cols] tensor in the same
 * gate order, so gate g is a contiguous block of rows.
 */
#include <string.h>

#include "cudnn_fallback/rnn.h"

/* Which side of the cell a PyTorch parameter feeds. */
typedef enum side {
    SIDE_INPUT = 0,
    SIDE_RECURRENT = 1,
    SIDE_PROJECTION = 2
} side;

static const struct {
    const char *name;
    side side;
    bool bias;
} params[] = {
    {"weight_ih", SIDE_INPUT, false},      {"weight_hh", SIDE_RECURRENT, false},
    {"bias_ih", SIDE_INPUT, true},         {"bias_hh", SIDE_RECURRENT, true},
    {"weight_hr", SIDE_PROJECTION, false},
};

const char *fb_rnn_mode_name(fb_rnn_mode m)
{
    switch (m) {
    case FB_RNN_RELU: return "rnn_relu";
    case FB_RNN_TANH: return "rnn_tanh";
    case FB_LSTM: return "lstm";
    case FB_GRU: return "gru";
    }
    return "?";
}

int fb_rnn_gates(fb_rnn_mode m)
{
    switch (m) {
    case FB_LSTM: return 4;
    case FB_GRU: return 3;
    case FB_RNN_RELU:
    case FB_RNN_TANH: return 1;
    }
    return 0;
}

int fb_rnn_lin_layers(fb_rnn_mode m, bool proj)
{
    return 2 * fb_rnn_gates(m) + (m == FB_LSTM && proj ? 1 : 0);
}

int fb_rnn_state_count(fb_rnn_mode m)
{
    return m == FB_LSTM ? 2 : 1;
}

static int find_param(const char *name)
{
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
        if (strcmp(params[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* The projection: one [P, H] matrix, linear layer 2G, no bias. */
static int projection_piece(fb_rnn_mode m, fb_rnn_dims d, fb_rnn_piece out[FB_MAX_GATES])
{
    if (m != FB_LSTM)
        return -1;
    if (d.proj <= 0)
        return 0;
    out[0] = (fb_rnn_piece){.lin_id = 2 * fb_rnn_gates(m), .bias = false, .offset = 0,
                            .rows = d.proj, .cols = d.hidden};
    return 1;
}

int fb_rnn_pieces(fb_rnn_mode m, const char *name, fb_rnn_dims d, fb_rnn_piece out[FB_MAX_GATES])
{
    int k = name ? find_param(name) : -1;
    int gates = fb_rnn_gates(m);
    if (k < 0 || gates == 0)
        return -1;
    if (params[k].side == SIDE_PROJECTION)
        return projection_piece(m, d, out);
    bool recurrent = params[k].side == SIDE_RECURRENT;
    /* The recurrent matrix reads h, which is P wide with a projection. */
    int64_t cols = params[k].bias ? 1 : recurrent ? (d.proj > 0 ? d.proj : d.hidden) : d.in;
    for (int g = 0; g < gates; g++) {
        out[g] = (fb_rnn_piece){.lin_id = (recurrent ? gates : 0) + g,
                                .bias = params[k].bias,
                                .offset = (int64_t)g * d.hidden * cols,
                                .rows = d.hidden,
                                .cols = cols};
    }
    return gates;
}

int64_t fb_rnn_param_numel(fb_rnn_mode m, const char *name, fb_rnn_dims d)
{
    fb_rnn_piece pc[FB_MAX_GATES];
    int n = fb_rnn_pieces(m, name, d, pc);
    if (n < 0)
        return -1;
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        total += pc[i].rows * pc[i].cols;
    return total;
}

/* ---------------------------------------------------------------- flat buffer */

static fb_rnn_dims pseudo_dims(const fb_rnn_dims d[2], int pseudo, int dirs)
{
    return d[pseudo / dirs > 0];
}

/* Elements of linear layer `lin`'s matrix in a pseudo-layer of dims d. */
static int64_t lin_matrix_numel(fb_rnn_mode m, int lin, fb_rnn_dims d)
{
    int gates = fb_rnn_gates(m);
    if (lin == 2 * gates) /* the projection */
        return d.proj * d.hidden;
    int64_t cols = lin < gates ? d.in : (d.proj > 0 ? d.proj : d.hidden);
    return d.hidden * cols;
}

size_t fb_rnn_expected_slots(fb_rnn_mode m, int layers, int dirs, const fb_rnn_dims d[2],
                             bool bias, size_t esz, fb_lin_slot *slots)
{
    int n_lin = fb_rnn_lin_layers(m, d[0].proj > 0), gates = fb_rnn_gates(m);
    size_t off = 0;
    /* every matrix of every pseudo-layer first ... */
    for (int p = 0; p < layers * dirs; p++) {
        fb_rnn_dims pd = pseudo_dims(d, p, dirs);
        for (int lin = 0; lin < n_lin; lin++) {
            size_t n = (size_t)lin_matrix_numel(m, lin, pd);
            if (slots)
                slots[p * n_lin + lin] = (fb_lin_slot){.mat_off = off, .mat_n = n};
            off += n * esz;
        }
    }
    /* ... then the biases, in the same order (the projection has none) */
    for (int p = 0; bias && p < layers * dirs; p++) {
        fb_rnn_dims pd = pseudo_dims(d, p, dirs);
        for (int lin = 0; lin < 2 * gates; lin++) {
            if (slots) {
                slots[p * n_lin + lin].bias_off = off;
                slots[p * n_lin + lin].bias_n = (size_t)pd.hidden;
            }
            off += (size_t)pd.hidden * esz;
        }
    }
    return off;
}

rnnc_status fb_rnn_param_offset(fb_rnn_mode m, const char *name, fb_rnn_dims d,
                                const fb_lin_slot *slots, size_t esz, size_t *off)
{
    fb_rnn_piece pc[FB_MAX_GATES];
    int n = fb_rnn_pieces(m, name, d, pc);
    if (n <= 0)
        return err_fail(RNNC_ERR_NOT_FOUND, "cudnn %s has no parameter '%s'",
                        fb_rnn_mode_name(m), name ? name : "(null)");
    size_t first = 0;
    for (int k = 0; k < n; k++) {
        const fb_lin_slot *sl = &slots[pc[k].lin_id];
        size_t at = pc[k].bias ? sl->bias_off : sl->mat_off;
        size_t have = pc[k].bias ? sl->bias_n : sl->mat_n;
        if (have != (size_t)(pc[k].rows * pc[k].cols))
            return err_fail(RNNC_ERR_NOT_FOUND, "cuDNN holds no %s for '%s' (linear layer %d)",
                            pc[k].bias ? "bias" : "matrix", name, pc[k].lin_id);
        if (k == 0)
            first = at;
        else if (at != first + (size_t)pc[k].offset * esz)
            return err_fail(RNNC_ERR_UNSUPPORTED,
                            "'%s' is not contiguous in cuDNN's weight space: gate %d sits at byte "
                            "%zu, not %zu",
                            name, k, at, first + (size_t)pc[k].offset * esz);
    }
    *off = first;
    return RNNC_OK;
}
