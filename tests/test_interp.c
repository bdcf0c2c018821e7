/*
 * test_interp.c: the reference interpreter against an independent, plainly
 * written double-precision nn.LSTM / nn.GRU / nn.RNN (below, one sequence at
 * a time, as PyTorch's packed sequences define it), on the same random
 * weights; and against a tiny case computed by hand.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/interp/interp.h"
#include "testutil.h"

enum { M_LSTM, M_GRU, M_TANH, M_RELU };
#define MAXG 256 /* gate rows the reference keeps on its stack */

typedef struct cfg {
    int mode;
    int64_t T, B, I, H, P; /* P = 0: no projection */
    int L, D;
    bool batch_first, lengths, optimise;
    bool builtin; /* the shipped .cell file instead of the builder's cell */
} cfg;

/* One pseudo-layer's weights in PyTorch's layout. */
typedef struct lw {
    double *wih, *whh, *bih, *bhh, *whr;
} lw;

typedef struct run {
    cfg c;
    int64_t hout, G, ydim;
    lw *w;
    int64_t *len;
    double *x, *h0, *c0;
    double *y_ref, *hn_ref, *cn_ref, *y, *hn, *cn;
} run;

/* ---------------------------------------------------------------- the reference */

static double sigm(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

static void matvec_acc(double *out, const double *m, const double *v, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++)
            out[r] += m[r * cols + k] * v[k];
}

/* One step of one sequence; h [hout] and c [H] are updated in place. */
static void ref_step(const run *r, const lw *w, int64_t in, const double *x, double *h, double *c)
{
    int64_t H = r->c.H, G = r->G;
    double gi[MAXG], gh[MAXG], full[MAXG];
    memcpy(gi, w->bih, (size_t)G * sizeof(double));
    memcpy(gh, w->bhh, (size_t)G * sizeof(double));
    matvec_acc(gi, w->wih, x, G, in);
    matvec_acc(gh, w->whh, h, G, r->hout);
    for (int64_t j = 0; j < H; j++) {
        switch (r->c.mode) {
        case M_LSTM: {
            double i = sigm(gi[j] + gh[j]), f = sigm(gi[H + j] + gh[H + j]);
            double g = tanh(gi[2 * H + j] + gh[2 * H + j]), o = sigm(gi[3 * H + j] + gh[3 * H + j]);
            c[j] = f * c[j] + i * g;
            full[j] = o * tanh(c[j]);
            break;
        }
        case M_GRU: {
            double rr = sigm(gi[j] + gh[j]), z = sigm(gi[H + j] + gh[H + j]);
            double n = tanh(gi[2 * H + j] + rr * gh[2 * H + j]);
            full[j] = (1.0 - z) * n + z * h[j];
            break;
        }
        case M_TANH: full[j] = tanh(gi[j] + gh[j]); break;
        default: full[j] = fmax(0.0, gi[j] + gh[j]); break;
        }
    }
    if (r->c.P) {
        memset(h, 0, (size_t)r->hout * sizeof(double));
        matvec_acc(h, w->whr, full, r->c.P, H);
    } else {
        memcpy(h, full, (size_t)H * sizeof(double));
    }
}

/* One sequence b through one direction of one layer. */
static void ref_sequence(run *r, int l, int d, const double *in, int64_t in_n, int64_t b,
                         double *out)
{
    int64_t B = r->c.B, hout = r->hout, H = r->c.H, p = l * r->c.D + d;
    int64_t len = r->len ? r->len[b] : r->c.T;
    double h[MAXG], c[MAXG];
    memcpy(h, r->h0 + (p * B + b) * hout, (size_t)hout * sizeof(double));
    memcpy(c, r->c0 + (p * B + b) * H, (size_t)H * sizeof(double));
    for (int64_t s = 0; s < len; s++) {
        int64_t t = d ? len - 1 - s : s;
        ref_step(r, &r->w[p], in_n, in + (t * B + b) * in_n, h, c);
        memcpy(out + (t * B + b) * r->ydim + d * hout, h, (size_t)hout * sizeof(double));
    }
    memcpy(r->hn_ref + (p * B + b) * hout, h, (size_t)hout * sizeof(double));
    memcpy(r->cn_ref + (p * B + b) * H, c, (size_t)H * sizeof(double));
}

static void ref_forward(run *r)
{
    int64_t T = r->c.T, B = r->c.B, I = r->c.I, in_n = I;
    double *in = malloc((size_t)(T * B * I) * sizeof(double));
    for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < B; b++)
            memcpy(in + (t * B + b) * I,
                   r->x + (r->c.batch_first ? b * T + t : t * B + b) * I, (size_t)I * sizeof(double));
    for (int l = 0; l < r->c.L; l++) {
        double *out = calloc((size_t)(T * B * r->ydim), sizeof(double));
        for (int d = 0; d < r->c.D; d++)
            for (int64_t b = 0; b < B; b++)
                ref_sequence(r, l, d, in, in_n, b, out);
        free(in);
        in = out;
        in_n = r->ydim;
    }
    for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < B; b++)
            memcpy(r->y_ref + (r->c.batch_first ? b * T + t : t * B + b) * r->ydim,
                   in + (t * B + b) * r->ydim, (size_t)r->ydim * sizeof(double));
    free(in);
}

/* ---------------------------------------------------------------- the cells, by builder */

static rnnc_value v2(rnnc_status (*op)(rnnc_cell *, rnnc_value, rnnc_value, rnnc_value *),
                     rnnc_cell *c, rnnc_value a, rnnc_value b)
{
    rnnc_value out = RNNC_NONE;
    assert_ok(op(c, a, b, &out));
    return out;
}

static rnnc_value v1(rnnc_status (*op)(rnnc_cell *, rnnc_value, rnnc_value *), rnnc_cell *c,
                     rnnc_value a)
{
    rnnc_value out = RNNC_NONE;
    assert_ok(op(c, a, &out));
    return out;
}

static rnnc_value piece(rnnc_cell *c, rnnc_value x, int parts, int i)
{
    rnnc_value out = RNNC_NONE;
    assert_ok(rnnc_chunk(c, x, parts, i, &out));
    return out;
}

static void lstm_body(rnnc_cell *c, rnnc_value gates, rnnc_value h, rnnc_value cs)
{
    rnnc_value i = v1(rnnc_sigmoid, c, piece(c, gates, 4, 0));
    rnnc_value f = v1(rnnc_sigmoid, c, piece(c, gates, 4, 1));
    rnnc_value g = v1(rnnc_tanh, c, piece(c, gates, 4, 2));
    rnnc_value o = v1(rnnc_sigmoid, c, piece(c, gates, 4, 3));
    rnnc_value c2 = v2(rnnc_add, c, v2(rnnc_mul, c, f, cs), v2(rnnc_mul, c, i, g));
    rnnc_value whr, h2;
    assert_ok(rnnc_cell_param_optional(c, "weight_hr", "P", "H", &whr));
    h2 = v2(rnnc_linear, c, v2(rnnc_mul, c, o, v1(rnnc_tanh, c, c2)), whr);
    assert_ok(rnnc_cell_set_next(c, h, h2));
    assert_ok(rnnc_cell_set_next(c, cs, c2));
    assert_ok(rnnc_cell_set_output(c, h2));
}

static void gru_body(rnnc_cell *c, rnnc_value gi, rnnc_value gh, rnnc_value h)
{
    rnnc_value r = v1(rnnc_sigmoid, c, v2(rnnc_add, c, piece(c, gi, 3, 0), piece(c, gh, 3, 0)));
    rnnc_value z = v1(rnnc_sigmoid, c, v2(rnnc_add, c, piece(c, gi, 3, 1), piece(c, gh, 3, 1)));
    rnnc_value n = v1(rnnc_tanh, c, v2(rnnc_add, c, piece(c, gi, 3, 2),
                                      v2(rnnc_mul, c, r, piece(c, gh, 3, 2))));
    rnnc_value one;
    assert_ok(rnnc_cell_const(c, 1.0, &one));
    rnnc_value h2 = v2(rnnc_add, c, v2(rnnc_mul, c, v2(rnnc_sub, c, one, z), n),
                       v2(rnnc_mul, c, z, h));
    assert_ok(rnnc_cell_set_next(c, h, h2));
    assert_ok(rnnc_cell_set_output(c, h2));
}

/* nn.LSTM / nn.GRU / nn.RNN as a cell; states (h, c) in PyTorch's order. */
static const char *const names[] = {"lstm", "gru", "rnn_tanh", "rnn_relu"};

static rnnc_cell *build_cell(int mode)
{
    const char *gd = mode == M_LSTM ? "4H" : mode == M_GRU ? "3H" : "H";
    const char *hd = mode == M_LSTM ? "P" : "H";
    rnnc_cell *c = NULL;
    rnnc_value x, h, cs = RNNC_NONE, wih, whh, bih, bhh;
    assert_ok(rnnc_cell_create(&c, names[mode]));
    assert_ok(rnnc_cell_input(c, "x", "I", &x));
    assert_ok(rnnc_cell_state(c, "h", hd, &h));
    if (mode == M_LSTM)
        assert_ok(rnnc_cell_state(c, "c", "H", &cs));
    assert_ok(rnnc_cell_param(c, "weight_ih", gd, "I", &wih));
    assert_ok(rnnc_cell_param(c, "weight_hh", gd, hd, &whh));
    assert_ok(rnnc_cell_param(c, "bias_ih", NULL, gd, &bih));
    assert_ok(rnnc_cell_param(c, "bias_hh", NULL, gd, &bhh));
    rnnc_value gi = v2(rnnc_add, c, v2(rnnc_linear, c, x, wih), bih);
    rnnc_value gh = v2(rnnc_add, c, v2(rnnc_linear, c, h, whh), bhh);
    if (mode == M_LSTM) {
        lstm_body(c, v2(rnnc_add, c, gi, gh), h, cs);
    } else if (mode == M_GRU) {
        gru_body(c, gi, gh, h);
    } else {
        rnnc_value s = v2(rnnc_add, c, gi, gh);
        rnnc_value h2 = mode == M_TANH ? v1(rnnc_tanh, c, s) : v1(rnnc_relu, c, s);
        assert_ok(rnnc_cell_set_next(c, h, h2));
        assert_ok(rnnc_cell_set_output(c, h2));
    }
    assert_ok(rnnc_cell_verify(c));
    return c;
}

/* ---------------------------------------------------------------- running both */

static double *rnd(uint64_t *rng, int64_t n)
{
    return tu_random_f64((size_t)n, rng, -0.6, 0.6);
}

static double *nans(int64_t n)
{
    return tu_nan_f64((size_t)n);
}

static void run_init(run *r, const cfg *c, uint64_t *rng)
{
    memset(r, 0, sizeof *r);
    r->c = *c;
    r->hout = c->P ? c->P : c->H;
    r->G = (c->mode == M_LSTM ? 4 : c->mode == M_GRU ? 3 : 1) * c->H;
    r->ydim = c->D * r->hout;
    int LD = c->L * c->D;
    r->w = calloc((size_t)LD, sizeof *r->w);
    for (int p = 0; p < LD; p++) {
        int64_t in = p < c->D ? c->I : r->ydim;
        r->w[p] = (lw){rnd(rng, r->G * in), rnd(rng, r->G * r->hout), rnd(rng, r->G),
                       rnd(rng, r->G), c->P ? rnd(rng, c->P * c->H) : NULL};
    }
    if (c->lengths) {
        r->len = malloc((size_t)c->B * sizeof(int64_t));
        for (int64_t b = 0; b < c->B; b++)
            r->len[b] = b == 0 ? c->T : 1 + (int64_t)tu_uniform(rng, 0, (double)(c->T - 1));
    }
    r->x = rnd(rng, c->T * c->B * c->I);
    r->h0 = rnd(rng, LD * c->B * r->hout);
    r->c0 = rnd(rng, LD * c->B * c->H);
    r->y_ref = calloc((size_t)(c->T * c->B * r->ydim), sizeof(double));
    r->hn_ref = nans(LD * c->B * r->hout);
    r->cn_ref = nans(LD * c->B * c->H);
    r->y = nans(c->T * c->B * r->ydim);
    r->hn = nans(LD * c->B * r->hout);
    r->cn = nans(LD * c->B * c->H);
}

static void run_free(run *r)
{
    for (int p = 0; p < r->c.L * r->c.D; p++) {
        free(r->w[p].wih), free(r->w[p].whh), free(r->w[p].bih);
        free(r->w[p].bhh), free(r->w[p].whr);
    }
    free(r->w), free(r->len), free(r->x), free(r->h0), free(r->c0);
    free(r->y_ref), free(r->hn_ref), free(r->cn_ref), free(r->y), free(r->hn), free(r->cn);
}

static const double *weight_named(const lw *w, const char *name)
{
    if (!strcmp(name, "weight_ih")) return w->wih;
    if (!strcmp(name, "weight_hh")) return w->whh;
    if (!strcmp(name, "bias_ih")) return w->bih;
    if (!strcmp(name, "bias_hh")) return w->bhh;
    if (!strcmp(name, "weight_hr")) return w->whr;
    fail_msg("unexpected parameter %s", name);
    return NULL;
}

/* The interpreter on the cell (optimised as a model would, or raw). */
static rnnc_status run_interp(run *r, rnnc_cell *cell)
{
    const cfg *c = &r->c;
    rnnc_cell *fn = NULL;
    assert_ok(rnnc_cell_clone(&fn, cell));
    if (c->optimise)
        assert_ok(ir_optimise(fn, c->P > 0));
    int64_t P = c->P ? c->P : c->H;
    rt_spec s = {.fn = {fn, fn}, .sizes = {{c->I, c->H, P}, {r->ydim, c->H, P}},
                 .layers = c->L, .dirs = c->D, .batch_first = c->batch_first,
                 .seed = 1, .hout = r->hout};
    int np = fn->n_params, LD = c->L * c->D;
    const double **w = calloc((size_t)(np * LD), sizeof *w);
    for (int p = 0; p < LD; p++)
        for (int i = 0; i < np; i++)
            w[p * np + i] = weight_named(&r->w[p], fn->params[i].name);
    rt_weights_f64 wf = {w, np, LD};
    const double *init[2] = {r->h0, r->c0};
    double *fin[2] = {r->hn, r->cn};
    rt_seq_f64 q = {c->T, c->B, r->x, init, r->len, r->y, fin, false};
    rnnc_status st = rt_interp_run(&s, &wf, &q);
    free(w);
    rnnc_cell_destroy(fn);
    return st;
}

static void check_against_reference(const cfg *c)
{
    uint64_t rng = tu_seed();
    run r;
    run_init(&r, c, &rng);
    rnnc_cell *cell = NULL;
    if (c->builtin)
        assert_ok(rnnc_cell_builtin(&cell, names[c->mode], NULL));
    else
        cell = build_cell(c->mode);
    ref_forward(&r);
    assert_ok(run_interp(&r, cell));
    int64_t LD = c->L * c->D;
    double ey = tu_rel_err_f64(r.y, r.y_ref, (size_t)(c->T * c->B * r.ydim));
    double eh = tu_rel_err_f64(r.hn, r.hn_ref, (size_t)(LD * c->B * r.hout));
    print_message("%s%s L%d D%d P%lld bf%d len%d opt%d: y %.2e hn %.2e\n", names[c->mode],
                  c->builtin ? " (built-in)" : "", c->L, c->D, (long long)c->P, c->batch_first,
                  c->lengths, c->optimise, ey, eh);
    assert_true(ey <= 1e-12);
    assert_true(eh <= 1e-12);
    if (c->mode == M_LSTM)
        assert_true(tu_rel_err_f64(r.cn, r.cn_ref, (size_t)(LD * c->B * c->H)) <= 1e-12);
    rnnc_cell_destroy(cell);
    run_free(&r);
}

static void each_variant(int mode, int64_t P)
{
    for (int v = 0; v < 8; v++) {
        cfg c = {mode, 6, 3, 4, 5, P, 1 + (v & 1), 1 + ((v >> 1) & 1), (v >> 2) & 1, v >= 4,
                 true, false};
        check_against_reference(&c);
    }
    cfg raw = {mode, 5, 2, 3, 4, P, 2, 2, true, true, false, false};
    check_against_reference(&raw); /* absent params as identities, unoptimised */
    cfg shipped = {mode, 5, 3, 3, 4, P, 2, 2, false, true, true, true};
    check_against_reference(&shipped);
}

static void test_lstm(void **st)
{
    (void)st;
    each_variant(M_LSTM, 0);
}

static void test_lstm_proj(void **st)
{
    (void)st;
    each_variant(M_LSTM, 3);
}

static void test_gru(void **st)
{
    (void)st;
    each_variant(M_GRU, 0);
}

static void test_rnn(void **st)
{
    (void)st;
    each_variant(M_TANH, 0);
    each_variant(M_RELU, 0);
}

/*
 * By hand: LSTM, I = H = 1, T = 2, h0 = c0 = 0, x = (1, 0.5).  Weights:
 * W_ih = (0, 0, 1, 0), W_hh = (0, 0, 1, 0), b_ih = (-ln 3, 0, 0, 0),
 * b_hh = (0, ln 3, 0, 0).  So i = sigmoid(-ln 3) = 1/4, f = sigmoid(ln 3) =
 * 3/4, o = sigmoid(0) = 1/2 at every step, and g_t = tanh(x_t + h_{t-1}).
 *   t=0: g = tanh 1 = 0.7615941559557649;  c1 = g/4 = 0.1903985389889412
 *        h1 = tanh(c1)/2 = 0.09406533405666027
 *   t=1: g = tanh(0.5 + h1) = tanh(0.5940653340566603) = 0.5328131380324865
 *        c2 = 3/4 c1 + g/4 = 0.2760021887498275
 *        h2 = tanh(c2)/2 = 0.1346004967611817
 */
static void test_hand_lstm(void **st)
{
    (void)st;
    rnnc_cell *cell = build_cell(M_LSTM);
    double wih[4] = {0, 0, 1, 0}, whh[4] = {0, 0, 1, 0};
    double bih[4] = {-log(3.0), 0, 0, 0}, bhh[4] = {0, log(3.0), 0, 0};
    double x[2] = {1.0, 0.5}, y[2] = {NAN, NAN}, hn = NAN, cn = NAN;
    double zero_h = 0.0, zero_c = 0.0;
    rnnc_cell *fn = NULL;
    assert_ok(rnnc_cell_clone(&fn, cell));
    assert_ok(ir_optimise(fn, false));
    const double *w[8];
    for (int i = 0; i < fn->n_params; i++) {
        const char *n = fn->params[i].name;
        w[i] = !strcmp(n, "weight_ih") ? wih : !strcmp(n, "weight_hh") ? whh
             : !strcmp(n, "bias_ih") ? bih : bhh;
    }
    rt_spec s = {.fn = {fn, fn}, .sizes = {{1, 1, 1}, {1, 1, 1}}, .layers = 1, .dirs = 1,
                 .hout = 1};
    rt_weights_f64 wf = {w, fn->n_params, 1};
    const double *init[2] = {&zero_h, &zero_c};
    double *fin[2] = {&hn, &cn};
    rt_seq_f64 q = {2, 1, x, init, NULL, y, fin, false};
    assert_ok(rt_interp_run(&s, &wf, &q));
    assert_true(fabs(y[0] - 0.09406533405666027) < 1e-12);
    assert_true(fabs(y[1] - 0.1346004967611817) < 1e-12);
    assert_true(fabs(hn - 0.1346004967611817) < 1e-12);
    assert_true(fabs(cn - 0.2760021887498275) < 1e-12);
    rnnc_cell_destroy(fn);
    rnnc_cell_destroy(cell);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_lstm),
        cmocka_unit_test(test_lstm),
        cmocka_unit_test(test_lstm_proj),
        cmocka_unit_test(test_gru),
        cmocka_unit_test(test_rnn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
