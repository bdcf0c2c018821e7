/*
 * test_interp_seq.c: the interpreter's sequence semantics: dropout between
 * layers and in-cell dropout follow the documented Philox stream
 * (docs/dropout.md), and per-sequence lengths follow PyTorch's packed
 * sequences (checked against each sequence run on its own).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/interp/interp.h"
#include "testutil.h"

typedef struct model {
    rnnc_cell *fn; /* optimised LSTM, optionally with dropout on its output */
    int L, D, np;
    int64_t T, B, I, H;
    double **w;    /* [L*D * np] */
    double *x, *h0, *c0;
    int64_t *len;
} model;

static rnnc_value op2(rnnc_status (*f)(rnnc_cell *, rnnc_value, rnnc_value, rnnc_value *),
                      rnnc_cell *c, rnnc_value a, rnnc_value b)
{
    rnnc_value v = RNNC_NONE;
    assert_ok(f(c, a, b, &v));
    return v;
}

static rnnc_value gate(rnnc_cell *c, rnnc_value g, int k, bool tanh_gate)
{
    rnnc_value p, v;
    assert_ok(rnnc_chunk(c, g, 4, k, &p));
    assert_ok(tanh_gate ? rnnc_tanh(c, p, &v) : rnnc_sigmoid(c, p, &v));
    return v;
}

/* nn.LSTM's cell; with cell_p > 0 its output (not its state) passes through dropout. */
static rnnc_cell *lstm_cell(double cell_p)
{
    rnnc_cell *c = NULL;
    rnnc_value x, h, cs, wih, whh, bih, bhh, tc, out;
    assert_ok(rnnc_cell_create(&c, "lstm"));
    assert_ok(rnnc_cell_input(c, "x", "I", &x));
    assert_ok(rnnc_cell_state(c, "h", "H", &h));
    assert_ok(rnnc_cell_state(c, "c", "H", &cs));
    assert_ok(rnnc_cell_param(c, "weight_ih", "4H", "I", &wih));
    assert_ok(rnnc_cell_param(c, "weight_hh", "4H", "H", &whh));
    assert_ok(rnnc_cell_param(c, "bias_ih", NULL, "4H", &bih));
    assert_ok(rnnc_cell_param(c, "bias_hh", NULL, "4H", &bhh));
    rnnc_value g = op2(rnnc_add, c, op2(rnnc_add, c, op2(rnnc_linear, c, x, wih), bih),
                       op2(rnnc_add, c, op2(rnnc_linear, c, h, whh), bhh));
    rnnc_value c2 = op2(rnnc_add, c, op2(rnnc_mul, c, gate(c, g, 1, false), cs),
                        op2(rnnc_mul, c, gate(c, g, 0, false), gate(c, g, 2, true)));
    assert_ok(rnnc_tanh(c, c2, &tc));
    rnnc_value h2 = op2(rnnc_mul, c, gate(c, g, 3, false), tc);
    assert_ok(rnnc_cell_set_next(c, h, h2));
    assert_ok(rnnc_cell_set_next(c, cs, c2));
    out = h2;
    if (cell_p > 0)
        assert_ok(rnnc_dropout(c, h2, cell_p, &out));
    assert_ok(rnnc_cell_set_output(c, out));
    assert_ok(ir_optimise(c, false));
    return c;
}

static double *rnd(uint64_t *rng, int64_t n)
{
    return tu_random_f64((size_t)n, rng, -0.7, 0.7);
}

static double *nans(int64_t n)
{
    return tu_nan_f64((size_t)n);
}

static ir_sizes sizes_of(const model *m, int layer)
{
    return (ir_sizes){layer ? m->D * m->H : m->I, m->H, m->H};
}

static void model_init(model *m, int L, int D, double cell_p, uint64_t *rng)
{
    *m = (model){.fn = lstm_cell(cell_p), .L = L, .D = D, .T = 6, .B = 4, .I = 3, .H = 3};
    m->np = m->fn->n_params;
    m->w = calloc((size_t)(L * D * m->np), sizeof *m->w);
    for (int p = 0; p < L * D; p++)
        for (int i = 0; i < m->np; i++) {
            const ir_node *n = &m->fn->nodes[m->fn->params[i].node];
            ir_sizes sz = sizes_of(m, p / D);
            int64_t cnt = ir_dim_eval(n->cols, sz) * (n->kind == IR_MAT ? ir_dim_eval(n->rows, sz) : 1);
            m->w[p * m->np + i] = rnd(rng, cnt);
        }
    m->x = rnd(rng, m->T * m->B * m->I);
    m->h0 = rnd(rng, L * D * m->B * m->H);
    m->c0 = rnd(rng, L * D * m->B * m->H);
    m->len = malloc((size_t)m->B * sizeof(int64_t));
    int64_t fixed[4] = {m->T, 1, m->T - 2, 2};
    for (int64_t b = 0; b < m->B; b++)
        m->len[b] = fixed[b];
}

static void model_free(model *m)
{
    for (int i = 0; i < m->L * m->D * m->np; i++)
        free(m->w[i]);
    free(m->w), free(m->x), free(m->h0), free(m->c0), free(m->len);
    rnnc_cell_destroy(m->fn);
}

/* Layers [l0, l0 + layers) of the model on input x of in0 features. */
typedef struct call {
    int l0, layers;
    int64_t T, B;
    const double *x, *h0, *c0; /* h0/c0 at pseudo-layer l0*D */
    const int64_t *len;
    bool batch_first, training;
    double dropout;
    uint64_t seed;
    double *y, *hn, *cn;
} call;

static rnnc_status run(const model *m, const call *k)
{
    rt_spec s = {.fn = {m->fn, m->fn}, .sizes = {sizes_of(m, k->l0), sizes_of(m, 1)},
                 .layers = k->layers, .dirs = m->D, .batch_first = k->batch_first,
                 .dropout = k->dropout, .seed = k->seed, .hout = m->H};
    rt_weights_f64 w = {(const double *const *)m->w + k->l0 * m->D * m->np, m->np,
                        k->layers * m->D};
    const double *init[2] = {k->h0, k->c0};
    double *fin[2] = {k->hn, k->cn};
    rt_seq_f64 q = {k->T, k->B, k->x, init, k->len, k->y, fin, k->training};
    return rt_interp_run(&s, &w, &q);
}

static bool differs(const double *a, const double *b, int64_t n)
{
    return memcmp(a, b, (size_t)n * sizeof(double)) != 0;
}

/* Layer 1 reads layer 0's output masked by site 0 of the Philox stream. */
static void test_dropout_between_layers(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    model m;
    model_init(&m, 2, 2, 0.0, &rng);
    uint64_t seed = (uint64_t)tu_uniform(&rng, 1, 1e15);
    const double p = 0.4;
    int64_t ny = m.T * m.B * m.D * m.H, ns = m.L * m.D * m.B * m.H, half = ns / 2;
    double *y[5], *hn = nans(ns), *cn = nans(ns);
    for (int i = 0; i < 5; i++)
        y[i] = nans(ny);
    call k = {0, 2, m.T, m.B, m.x, m.h0, m.c0, m.len, false, true, p, seed, y[0], hn, cn};
    assert_ok(run(&m, &k));
    k.y = y[1], k.hn = NULL, k.cn = NULL;
    assert_ok(run(&m, &k));
    assert_false(differs(y[0], y[1], ny)); /* same seed, same mask */
    k.y = y[2], k.seed = seed + 1;
    assert_ok(run(&m, &k));
    assert_true(differs(y[0], y[2], ny));
    k.y = y[3], k.training = false;
    assert_ok(run(&m, &k));
    assert_true(differs(y[0], y[3], ny));
    k.y = y[4], k.training = true, k.dropout = 0.0;
    assert_ok(run(&m, &k));
    assert_false(differs(y[3], y[4], ny)); /* inference ignores dropout */

    /* By parts: layer 0, the mask of docs/dropout.md, then layer 1. */
    double *y0 = nans(ny), *y1 = nans(ny), *hp = nans(ns), *cp = nans(ns);
    call k0 = {0, 1, m.T, m.B, m.x, m.h0, m.c0, m.len, false, true, p, seed, y0, hp, cp};
    assert_ok(run(&m, &k0));
    int64_t dropped = 0, live = 0;
    for (int64_t i = 0; i < ny; i++) {
        bool keep = cm_dropout_keep(seed, rt_dropout_site_layer(0), (uint64_t)i, p);
        live += y0[i] != 0.0;
        dropped += y0[i] != 0.0 && !keep;
        y0[i] = keep ? y0[i] / (1.0 - p) : 0.0;
    }
    assert_true(dropped > 0 && dropped < live);
    call k1 = {1, 1, m.T, m.B, y0, m.h0 + half, m.c0 + half, m.len, false, true, p, seed, y1,
               hp + half, cp + half};
    assert_ok(run(&m, &k1));
    assert_true(tu_rel_err_f64(y[0], y1, (size_t)ny) <= 1e-15);
    assert_true(tu_rel_err_f64(hn, hp, (size_t)ns) <= 1e-15);
    assert_true(tu_rel_err_f64(cn, cp, (size_t)ns) <= 1e-15);
    for (int i = 0; i < 5; i++)
        free(y[i]);
    free(y0), free(y1), free(hp), free(cp), free(hn), free(cn);
    model_free(&m);
}

/* An in-cell dropout op draws site 0x10000 + pseudo*256 + k over [T, B, n]. */
static void test_dropout_in_cell(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    model m;
    const double p = 0.3;
    model_init(&m, 1, 2, p, &rng);
    int k_site = -1;
    for (int32_t i = 0; i < m.fn->n; i++)
        if (m.fn->nodes[i].op == IR_DROPOUT)
            k_site = m.fn->nodes[i].i1;
    assert_true(k_site >= 0);
    uint64_t seed = (uint64_t)tu_uniform(&rng, 1, 1e15);
    int64_t n = m.D * m.H, ny = m.T * m.B * n, ns = m.D * m.B * m.H;
    double *yt = nans(ny), *ye = nans(ny), *ht = nans(ns), *he = nans(ns);
    call k = {0, 1, m.T, m.B, m.x, m.h0, m.c0, m.len, false, true, 0.0, seed, yt, ht, NULL};
    assert_ok(run(&m, &k));
    k.training = false, k.y = ye, k.hn = he;
    assert_ok(run(&m, &k));
    assert_false(differs(ht, he, ns)); /* the state does not pass through the dropout */
    int64_t kept = 0, live = 0;
    for (int64_t t = 0; t < m.T; t++)
        for (int64_t b = 0; b < m.B; b++)
            for (int d = 0; d < m.D; d++)
                for (int64_t j = 0; j < m.H; j++) {
                    int64_t at = (t * m.B + b) * n + d * m.H + j;
                    if (t >= m.len[b]) {
                        assert_true(yt[at] == 0.0 && ye[at] == 0.0);
                        continue;
                    }
                    uint64_t idx = (uint64_t)((t * m.B + b) * m.H + j);
                    bool keep = cm_dropout_keep(seed, rt_dropout_site_cell(d, k_site), idx, p);
                    double want = keep ? ye[at] / (1.0 - p) : 0.0;
                    assert_true(fabs(yt[at] - want) <= 1e-15 * fabs(want));
                    live++;
                    kept += keep;
                }
    assert_true(kept > 0 && kept < live);
    free(yt), free(ye), free(ht), free(he);
    model_free(&m);
}

/* A batch with lengths equals each sequence run alone for its own length. */
static void test_lengths_packed(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    model m;
    model_init(&m, 2, 2, 0.0, &rng);
    int64_t n = m.D * m.H, LD = m.L * m.D, ny = m.T * m.B * n, ns = LD * m.B * m.H;
    double *y = nans(ny), *hn = nans(ns), *cn = nans(ns);
    /* batch_first: x is [B, T, I], y [B, T, n] */
    call k = {0, 2, m.T, m.B, m.x, m.h0, m.c0, m.len, true, false, 0.0, 0, y, hn, cn};
    assert_ok(run(&m, &k));
    double *h1 = malloc((size_t)(LD * m.H) * sizeof(double));
    double *c1 = malloc((size_t)(LD * m.H) * sizeof(double));
    double *y1 = nans(m.T * n), *hn1 = nans(LD * m.H), *cn1 = nans(LD * m.H);
    for (int64_t b = 0; b < m.B; b++) {
        int64_t len = m.len[b];
        for (int64_t p = 0; p < LD; p++) {
            memcpy(h1 + p * m.H, m.h0 + (p * m.B + b) * m.H, (size_t)m.H * sizeof(double));
            memcpy(c1 + p * m.H, m.c0 + (p * m.B + b) * m.H, (size_t)m.H * sizeof(double));
        }
        call one = {0, 2, len, 1, m.x + b * m.T * m.I, h1, c1, NULL, true, false, 0.0, 0,
                    y1, hn1, cn1};
        assert_ok(run(&m, &one));
        assert_true(tu_rel_err_f64(y + b * m.T * n, y1, (size_t)(len * n)) <= 1e-15);
        for (int64_t i = len * n; i < m.T * n; i++)
            assert_true(y[b * m.T * n + i] == 0.0); /* past its length */
        for (int64_t p = 0; p < LD; p++) {
            assert_true(tu_rel_err_f64(hn + (p * m.B + b) * m.H, hn1 + p * m.H, (size_t)m.H) <= 1e-15);
            assert_true(tu_rel_err_f64(cn + (p * m.B + b) * m.H, cn1 + p * m.H, (size_t)m.H) <= 1e-15);
        }
    }
    free(h1), free(c1), free(y1), free(hn1), free(cn1), free(y), free(hn), free(cn);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dropout_between_layers),
        cmocka_unit_test(test_dropout_in_cell),
        cmocka_unit_test(test_lengths_packed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
