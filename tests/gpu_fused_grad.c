/*
 * gpu_fused_grad.c: the fused backend's backward (fp32) against the
 * interpreter's (double) on the same weights and data: y, the final
 * states, dx, the initial states' gradients and every weight gradient
 * within 1e-4 relative, for every built-in cell x layers {1, 2} x {uni,
 * bi} x {padded, lengths} x dropout {0, 0.3}, and LSTMs with a projection
 * likewise (proj_size 16 and 24 at H = 32); and against cuDNN for lstm,
 * gru, rnn_tanh and rnn_relu; at sizes that take the large GEMM
 * tiles; three cells with dropout ops of their own (tests/data/cells/); at B = 128
 * and 256 with H = 512 (the record kernels' outer products); and at
 * batches that take passes (B = 16384 and 32768).  A case the fused backward does not run
 * must be refused with RNNC_ERR_UNSUPPORTED (counted and printed).
 * Exits 77 without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define T_ 7
#define B_ 5

/* Sizes of the current case (the large one reaches the 128-wide GEMM tiles);
 * P_ the LSTMs' proj_size (0: none). */
static int64_t I_ = 24, H_ = 32, P_ = 0;

static uint64_t rng;
static int n_run, n_refused;

typedef struct out {
    float *y, *dx, *fin[2], *dinit[2], *dw;
    int64_t ny, nx, ns[2], nw;
} out;

typedef struct data {
    float *x, *init[2], *dy, *dfinal[2];
    int64_t *lengths; /* nb of them */
    bool use_len;
} data;

static float *alloc_poisoned(int64_t n)
{
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    tu_poison_f32(p, (size_t)n);
    return p;
}

static int64_t nb = B_; /* batch of the current case */

static void out_alloc(out *o, rnnc_model *m, int n_states, int layers, bool bi)
{
    int64_t hout, d = bi ? 2 : 1;
    assert_ok(rnnc_model_output_size(m, &hout));
    o->ny = T_ * nb * d * hout, o->nx = T_ * nb * I_;
    o->y = alloc_poisoned(o->ny), o->dx = alloc_poisoned(o->nx);
    for (int k = 0; k < n_states; k++) {
        int64_t n;
        assert_ok(rnnc_model_state_size(m, k, &n));
        o->ns[k] = layers * d * nb * n;
        o->fin[k] = alloc_poisoned(o->ns[k]), o->dinit[k] = alloc_poisoned(o->ns[k]);
    }
    o->nw = 0;
    for (int i = 0; i < rnnc_model_weight_count(m); i++) {
        const char *name;
        int64_t shape[2] = {1, 1};
        int rank;
        assert_ok(rnnc_model_weight_info(m, i, &name, 2, shape, &rank));
        o->nw += shape[0] * (rank == 2 ? shape[1] : 1);
    }
    o->dw = alloc_poisoned(o->nw);
}

static void out_free(out *o)
{
    free(o->y), free(o->dx), free(o->dw);
    for (int k = 0; k < 2; k++)
        free(o->fin[k]), free(o->dinit[k]);
}

/* One training forward and backward; UNSUPPORTED passes through. */
static rnnc_status step(rnnc_model *m, const data *d, int n_states, out *o)
{
    const void *init[2] = {d->init[0], d->init[1]}, *dfinal[2] = {d->dfinal[0], d->dfinal[1]};
    void *fin[2] = {o->fin[0], o->fin[1]}, *dinit[2] = {o->dinit[0], o->dinit[1]};
    rnnc_forward_args a = {.seq_len = T_, .batch = nb, .x = d->x, .init = init,
                           .lengths = d->use_len ? d->lengths : NULL, .y = o->y, .final = fin,
                           .training = true};
    rnnc_status s = rnnc_model_forward(m, &a);
    if (s != RNNC_OK)
        return s;
    rnnc_backward_args b = {d->dy, dfinal, o->dx, dinit};
    if ((s = rnnc_model_backward(m, &b)) != RNNC_OK)
        return s;
    float *p = o->dw;
    for (int i = 0; i < rnnc_model_weight_count(m); i++) {
        const char *name;
        int64_t shape[2] = {1, 1}, n;
        int rank;
        assert_ok(rnnc_model_weight_info(m, i, &name, 2, shape, &rank));
        n = shape[0] * (rank == 2 ? shape[1] : 1);
        assert_ok(rnnc_model_weight_grad(m, name, p, n));
        p += n;
    }
    (void)n_states;
    return RNNC_OK;
}

static double rel(const float *a, const float *b, int64_t n)
{
    double *r = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        r[i] = b[i];
    double e = tu_rel_err_f32(a, r, (size_t)n);
    free(r);
    return e;
}

static double compare(const out *f, const out *r, int n_states, int64_t *wcount, int nweights)
{
    double e = rel(f->y, r->y, r->ny), x;
    if ((x = rel(f->dx, r->dx, r->nx)) > e)
        e = x;
    for (int k = 0; k < n_states; k++) {
        if ((x = rel(f->fin[k], r->fin[k], r->ns[k])) > e)
            e = x;
        if ((x = rel(f->dinit[k], r->dinit[k], r->ns[k])) > e)
            e = x;
    }
    const float *a = f->dw, *b = r->dw;
    for (int i = 0; i < nweights; i++) {
        if ((x = rel(a, b, wcount[i])) > e)
            e = x;
        a += wcount[i], b += wcount[i];
    }
    return e;
}

static rnnc_model *make(rnnc_cell *cell, int layers, bool bi, double dropout, rnnc_backend be)
{
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = I_;
    d.hidden_size = H_;
    d.proj_size = P_;
    d.num_layers = layers;
    d.bidirectional = bi;
    d.dropout = dropout;
    d.seed = 5;
    d.backend = be;
    rnnc_model *m = NULL;
    assert_ok(rnnc_model_create(&m, &d));
    return m;
}

static void one(const char *cell_name, int layers, bool bi, bool use_len, double dropout,
                rnnc_backend ref_be)
{
    rnnc_cell *cell = NULL;
    if (rnnc_cell_builtin(&cell, cell_name, NULL) != RNNC_OK)
        cell = tu_data_cell(cell_name);
    rnnc_model *m[2] = {make(cell, layers, bi, dropout, RNNC_BACKEND_FUSED),
                        make(cell, layers, bi, dropout, ref_be)};
    tu_set_random_weights_on(m, 2, &rng, -0.3, 0.3);
    int ns = rnnc_cell_state_count(cell);
    out o[2] = {0};
    for (int k = 0; k < 2; k++)
        out_alloc(&o[k], m[k], ns, layers, bi);
    data d = {.use_len = use_len, .lengths = malloc(sizeof(int64_t) * (size_t)nb)};
    for (int64_t b = 0; b < nb; b++)
        d.lengths[b] = 1 + (b * 5 + 3) % T_;
    d.x = alloc_poisoned(o[0].nx), d.dy = alloc_poisoned(o[0].ny);
    tu_fill_f32(d.x, (size_t)o[0].nx, &rng, -1, 1);
    tu_fill_f32(d.dy, (size_t)o[0].ny, &rng, -1, 1);
    for (int k = 0; k < ns; k++) {
        d.init[k] = alloc_poisoned(o[0].ns[k]), d.dfinal[k] = alloc_poisoned(o[0].ns[k]);
        tu_fill_f32(d.init[k], (size_t)o[0].ns[k], &rng, -1, 1);
        tu_fill_f32(d.dfinal[k], (size_t)o[0].ns[k], &rng, -1, 1);
    }
    char what[160];
    snprintf(what, sizeof what, "%s L=%d %s %s dropout=%.1f vs %s", cell_name, layers,
             bi ? "bi" : "uni", use_len ? "lengths" : "padded", dropout,
             rnnc_backend_name(ref_be));
    rnnc_status s = step(m[0], &d, ns, &o[0]);
    if (s == RNNC_ERR_UNSUPPORTED) {
        printf("%-56s refused: %s\n", what, rnnc_last_error());
        n_refused++;
    } else {
        if (s != RNNC_OK)
            fail_msg("%s: fused: %s", what, rnnc_last_error());
        if (step(m[1], &d, ns, &o[1]) != RNNC_OK)
            fail_msg("%s: reference: %s", what, rnnc_last_error());
        int nw = rnnc_model_weight_count(m[0]);
        int64_t *wc = calloc((size_t)nw, sizeof *wc);
        for (int i = 0; i < nw; i++) {
            const char *name;
            int64_t shape[2] = {1, 1};
            int rank;
            assert_ok(rnnc_model_weight_info(m[0], i, &name, 2, shape, &rank));
            wc[i] = shape[0] * (rank == 2 ? shape[1] : 1);
        }
        double e = compare(&o[0], &o[1], ns, wc, nw);
        free(wc);
        printf("%-56s max rel err %.2e\n", what, e);
        n_run++;
        if (!(e <= 1e-4))
            fail_msg("%s: fused gradients differ by %.3e", what, e);
    }
    for (int k = 0; k < 2; k++) {
        out_free(&o[k]);
        rnnc_model_destroy(m[k]);
    }
    free(d.x), free(d.dy), free(d.lengths);
    for (int k = 0; k < ns; k++)
        free(d.init[k]), free(d.dfinal[k]);
    rnnc_cell_destroy(cell);
}

static void test_vs_interp(void **st)
{
    (void)st;
    const char *const *names = rnnc_cell_builtin_names();
    for (int i = 0; names[i]; i++)
        for (int l = 1; l <= 2; l++)
            for (int bi = 0; bi < 2; bi++)
                for (int len = 0; len < 2; len++)
                    for (int dr = 0; dr < 2; dr++)
                        one(names[i], l, bi, len, dr ? 0.3 : 0.0, RNNC_BACKEND_INTERP);
    printf("fused backward vs interp: %d cases ran, %d refused\n", n_run, n_refused);
    assert_true(n_run > 0);
}

/* Cells with dropout ops of their own (tests/data/cells/): the training
 * forward's record kernels and the backward's recurrence draw the same
 * masks as the interpreter, so every case runs and agrees; a dropout of
 * the input (xdrop) is the runtime's: x dropped before the record kernels
 * and the weight gradients' GEMMs, dx back through the same mask; one case
 * at sizes of the large GEMM tiles. */
static void test_dropout_cells(void **st)
{
    (void)st;
    static const char *const names[] = {"semd", "hdrop", "lnd", "xdrop"};
    int before = n_run;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        for (int l = 1; l <= 2; l++)
            for (int bi = 0; bi < 2; bi++)
                for (int len = 0; len < 2; len++)
                    for (int dr = 0; dr < 2; dr++)
                        one(names[i], l, bi, len, dr ? 0.3 : 0.0, RNNC_BACKEND_INTERP);
    I_ = 128, H_ = 128, nb = 20;
    one("semd", 2, true, true, 0.0, RNNC_BACKEND_INTERP);
    one("xdrop", 2, true, true, 0.0, RNNC_BACKEND_INTERP);
    I_ = 24, H_ = 32, nb = B_;
    assert_int_equal(n_run - before, 4 * 16 + 2);
}

/* Cells whose hoisted linears read something other than x (rounds,
 * codegen/cuda/cuda_rounds.c): chain's backward builds (its dx is W1's
 * linear_t of the first projection's gradient) and agrees with the
 * interpreter; so does preln's, whose dx and layernorm gradients a row
 * cell makes after the post GEMMs (fused_grad_rows.c); twice (x read
 * dropped and as it is) is refused by name. */
static void test_round_cells(void **st)
{
    (void)st;
    int before = n_run;
    static const char *const cells[] = {"chain", "preln"};
    for (int c = 0; c < 2; c++)
        for (int l = 1; l <= 2; l++)
            for (int bi = 0; bi < 2; bi++)
                for (int len = 0; len < 2; len++)
                    one(cells[c], l, bi, len, l == 2 ? 0.3 : 0.0, RNNC_BACKEND_INTERP);
    I_ = 128, H_ = 128, nb = 20;
    one("chain", 2, true, true, 0.0, RNNC_BACKEND_INTERP);
    one("preln", 2, true, true, 0.0, RNNC_BACKEND_INTERP);
    I_ = 520, H_ = 64, nb = 8; /* a row wider than a block's 256 threads */
    one("preln", 1, false, true, 0.0, RNNC_BACKEND_INTERP);
    I_ = 24, H_ = 32, nb = B_;
    assert_int_equal(n_run - before, 19);
    int refused = n_refused;
    one("twice", 2, true, true, 0.0, RNNC_BACKEND_INTERP);
    assert_int_equal(n_refused, refused + 1);
}

/* Sizes whose weight-gradient and dx products use the 128x128 GEMM tiles. */
static void test_large(void **st)
{
    (void)st;
    I_ = 128, H_ = 128, nb = 20;
    one("lstm", 2, true, true, 0.3, RNNC_BACKEND_INTERP);
    one("gru", 1, false, false, 0.0, RNNC_BACKEND_INTERP);
    if (rnnc_backend_available(RNNC_BACKEND_CUDNN))
        one("lstm", 2, true, true, 0.0, RNNC_BACKEND_CUDNN);
    I_ = 24, H_ = 32, nb = B_;
}

/* 128 <= B <= 256 at H >= 512, where the heuristic tiling gives the
 * training forward's record kernels outer products (codegen/cuda/
 * cuda_tile.c heuristic_outer): LSTM and GRU, a bidirectional stack with
 * lengths (its layer above reads 2H columns) against cuDNN, and one layer
 * against the interpreter. */
static void test_outer_batches(void **st)
{
    (void)st;
    I_ = 512, H_ = 512, nb = 128;
    one("gru", 1, false, true, 0.0, RNNC_BACKEND_INTERP);
    if (rnnc_backend_available(RNNC_BACKEND_CUDNN)) {
        one("lstm", 2, true, true, 0.0, RNNC_BACKEND_CUDNN);
        nb = 256;
        one("lstm", 1, false, false, 0.0, RNNC_BACKEND_CUDNN);
        one("gru", 2, false, true, 0.0, RNNC_BACKEND_CUDNN);
    }
    I_ = 24, H_ = 32, nb = B_;
}

/* Batches no one-pass tiling fits (codegen/cuda/cuda_passes.c): the
 * recurrence takes its rows in passes with the values that cross its
 * phases kept in global memory, as does the layernorm LSTM's forward
 * (refused before: the copies a pass took all of a block's batch group). */
static void test_huge_batches(void **st)
{
    (void)st;
    int refused = n_refused;
    I_ = 64, H_ = 64, nb = 32768;
    if (rnnc_backend_available(RNNC_BACKEND_CUDNN)) {
        one("lstm", 1, false, true, 0.0, RNNC_BACKEND_CUDNN);
        one("gru", 1, true, false, 0.0, RNNC_BACKEND_CUDNN);
    }
    I_ = 128, H_ = 128, nb = 16384;
    one("layernorm_lstm", 1, false, true, 0.0, RNNC_BACKEND_INTERP);
    I_ = 24, H_ = 32, nb = B_;
    assert_int_equal(n_refused, refused);
}

/* LSTMs with a projection (proj_size P): the recurrence's input pieces are
 * P and H wide (slices gcd(H, P) wide), and its step multiplies by W_hr^T,
 * then W_hh^T.  Every combination against the interpreter at P = 16 (H/2),
 * the dropout LSTM, P = 24 (slices of 8), sizes of the large GEMM tiles,
 * and cuDNN; none may be refused. */
static void test_projection(void **st)
{
    (void)st;
    int before = n_run, refused = n_refused;
    P_ = 16;
    for (int l = 1; l <= 2; l++)
        for (int bi = 0; bi < 2; bi++)
            for (int len = 0; len < 2; len++)
                for (int dr = 0; dr < 2; dr++)
                    one("lstm", l, bi, len, dr ? 0.3 : 0.0, RNNC_BACKEND_INTERP);
    one("dropout_lstm", 2, true, true, 0.3, RNNC_BACKEND_INTERP);
    P_ = 24;
    one("lstm", 2, true, true, 0.3, RNNC_BACKEND_INTERP);
    I_ = 128, H_ = 128, P_ = 64, nb = 20;
    one("lstm", 2, true, true, 0.0, RNNC_BACKEND_INTERP);
    int want = 16 + 3;
    if (rnnc_backend_available(RNNC_BACKEND_CUDNN)) {
        one("lstm", 2, true, true, 0.0, RNNC_BACKEND_CUDNN);
        want++;
    }
    I_ = 24, H_ = 32, P_ = 0, nb = B_;
    assert_int_equal(n_refused, refused);
    assert_int_equal(n_run - before, want);
}

static void test_vs_cudnn(void **st)
{
    (void)st;
    if (!rnnc_backend_available(RNNC_BACKEND_CUDNN))
        skip();
    static const char *cells[] = {"lstm", "gru", "rnn_tanh", "rnn_relu"};
    for (int i = 0; i < 4; i++) {
        one(cells[i], 2, true, true, 0.0, RNNC_BACKEND_CUDNN);
        one(cells[i], 1, false, false, 0.0, RNNC_BACKEND_CUDNN);
    }
}

int main(void)
{
    tu_require_gpu();
    rng = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vs_interp),
        cmocka_unit_test(test_projection),
        cmocka_unit_test(test_dropout_cells),
        cmocka_unit_test(test_round_cells),
        cmocka_unit_test(test_vs_cudnn),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_outer_batches),
        cmocka_unit_test(test_huge_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
