/*
 * test_interp_ops.c: the interpreter's every op against the same formula
 * written plainly here; rt_eval_fold; the fp32 backend object behind the
 * model API; and the errors a bad call gets.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/interp/interp.h"
#include "testutil.h"

#define I_ 4
#define H_ 3

typedef rnnc_status (*bin_fn)(rnnc_cell *, rnnc_value, rnnc_value, rnnc_value *);
typedef rnnc_status (*un_fn)(rnnc_cell *, rnnc_value, rnnc_value *);

static rnnc_value b2(bin_fn f, rnnc_cell *c, rnnc_value a, rnnc_value b)
{
    rnnc_value v = RNNC_NONE;
    assert_ok(f(c, a, b, &v));
    return v;
}

static rnnc_value u1(un_fn f, rnnc_cell *c, rnnc_value a)
{
    rnnc_value v = RNNC_NONE;
    assert_ok(f(c, a, &v));
    return v;
}

static rnnc_value k(rnnc_cell *c, double v)
{
    rnnc_value out = RNNC_NONE;
    assert_ok(rnnc_cell_const(c, v, &out));
    return out;
}

/*
 * y = linear(concat(chunk(z,2,1), chunk(z,2,0)), W2), z = linear(e + m + s, W),
 * with, per row of x:
 *   e = exp(-layernorm(x; gamma, beta, eps 1e-3)) / sqrt(x*x + 1)
 *   m = rsqrt(mean(x*x) + 1) * relu(x)
 *   s = log(exp(x) + 1) - sum(x)
 * Params in order: gamma, beta, W [2H, I], W2 [H, 2H].
 */
static rnnc_cell *ops_cell(void)
{
    rnnc_cell *c = NULL;
    rnnc_value x, h, g, bt, w, w2, ln;
    assert_ok(rnnc_cell_create(&c, "ops"));
    assert_ok(rnnc_cell_input(c, "x", "I", &x));
    assert_ok(rnnc_cell_state(c, "h", "H", &h));
    assert_ok(rnnc_cell_param(c, "gamma", NULL, "I", &g));
    assert_ok(rnnc_cell_param(c, "beta", NULL, "I", &bt));
    assert_ok(rnnc_cell_param(c, "W", "2H", "I", &w));
    assert_ok(rnnc_cell_param(c, "W2", "H", "2H", &w2));
    assert_ok(rnnc_layernorm(c, x, 1e-3, g, bt, &ln));
    rnnc_value xx = b2(rnnc_mul, c, x, x);
    rnnc_value e = b2(rnnc_div, c, u1(rnnc_exp, c, u1(rnnc_neg, c, ln)),
                      u1(rnnc_sqrt, c, b2(rnnc_add, c, xx, k(c, 1.0))));
    rnnc_value m = b2(rnnc_mul, c, u1(rnnc_rsqrt, c, b2(rnnc_add, c, u1(rnnc_mean, c, xx), k(c, 1.0))),
                      u1(rnnc_relu, c, x));
    rnnc_value s = b2(rnnc_sub, c, u1(rnnc_log, c, b2(rnnc_add, c, u1(rnnc_exp, c, x), k(c, 1.0))),
                      u1(rnnc_sum, c, x));
    rnnc_value z = b2(rnnc_linear, c, b2(rnnc_add, c, b2(rnnc_add, c, e, m), s), w);
    rnnc_value lo, hi, sw;
    assert_ok(rnnc_chunk(c, z, 2, 1, &hi));
    assert_ok(rnnc_chunk(c, z, 2, 0, &lo));
    assert_ok(rnnc_concat(c, hi, lo, &sw));
    rnnc_value y = b2(rnnc_linear, c, sw, w2);
    assert_ok(rnnc_cell_set_next(c, h, y));
    assert_ok(rnnc_cell_set_output(c, y));
    assert_ok(rnnc_cell_verify(c));
    return c;
}

static void ops_ref(const double *x, const double *g, const double *bt, const double *w,
                    const double *w2, double *y)
{
    double mean = 0, var = 0, sum = 0, msq = 0, v[I_], z[2 * H_];
    for (int j = 0; j < I_; j++)
        mean += x[j] / I_, sum += x[j], msq += x[j] * x[j] / I_;
    for (int j = 0; j < I_; j++)
        var += (x[j] - mean) * (x[j] - mean) / I_;
    for (int j = 0; j < I_; j++) {
        double ln = (x[j] - mean) / sqrt(var + 1e-3) * g[j] + bt[j];
        double e = exp(-ln) / sqrt(x[j] * x[j] + 1);
        double m = 1 / sqrt(msq + 1) * (x[j] > 0 ? x[j] : 0);
        double s = log(exp(x[j]) + 1) - sum;
        v[j] = e + m + s;
    }
    for (int o = 0; o < 2 * H_; o++) {
        z[o] = 0;
        for (int j = 0; j < I_; j++)
            z[o] += w[o * I_ + j] * v[j];
    }
    for (int o = 0; o < H_; o++) {
        y[o] = 0;
        for (int j = 0; j < 2 * H_; j++)
            y[o] += w2[o * 2 * H_ + j] * z[(j + H_) % (2 * H_)];
    }
}

static void test_every_op(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    enum { T = 3, B = 2 };
    double x[T * B * I_], g[I_], bt[I_], w[2 * H_ * I_], w2[2 * H_ * H_];
    double y[T * B * H_], ref[T * B * H_], hn[B * H_];
    tu_fill_f64(x, T * B * I_, &rng, -2, 2);
    tu_fill_f64(g, I_, &rng, 0.5, 1.5);
    tu_fill_f64(bt, I_, &rng, -0.5, 0.5);
    tu_fill_f64(w, 2 * H_ * I_, &rng, -1, 1);
    tu_fill_f64(w2, 2 * H_ * H_, &rng, -1, 1);
    for (int i = 0; i < T * B * H_; i++)
        y[i] = NAN;
    rnnc_cell *c = ops_cell();
    for (int r = 0; r < T * B; r++)
        ops_ref(x + r * I_, g, bt, w, w2, ref + r * H_);
    rt_spec s = {.fn = {c, c}, .sizes = {{I_, H_, H_}, {H_, H_, H_}}, .layers = 1, .dirs = 1,
                 .hout = H_};
    const double *wp[4] = {g, bt, w, w2};
    rt_weights_f64 wf = {wp, 4, 1};
    double *fin[1] = {hn};
    rt_seq_f64 q = {T, B, x, NULL, NULL, y, fin, false};
    assert_ok(rt_interp_run(&s, &wf, &q));
    assert_true(tu_rel_err_f64(y, ref, T * B * H_) <= 1e-12);
    assert_true(tu_rel_err_f64(hn, ref + (T - 1) * B * H_, B * H_) <= 1e-12);
    rnnc_cell_destroy(c);
}

/* fold of (bias_ih + bias_hh) * 2 and of concat(chunk(cv, 2, 1), bias_hh). */
static void test_fold(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    rnnc_cell *c = NULL;
    rnnc_value x, h, w, bih, bhh, cv, hi, lo, sw, h2;
    assert_ok(rnnc_cell_create(&c, "fold"));
    assert_ok(rnnc_cell_input(c, "x", "I", &x));
    assert_ok(rnnc_cell_state(c, "h", "H", &h));
    assert_ok(rnnc_cell_param(c, "W", "H", "I", &w));
    assert_ok(rnnc_cell_param(c, "bias_ih", NULL, "H", &bih));
    assert_ok(rnnc_cell_param(c, "bias_hh", NULL, "H", &bhh));
    assert_ok(rnnc_cell_param(c, "cv", NULL, "2H", &cv));
    rnnc_value two = b2(rnnc_mul, c, b2(rnnc_add, c, bih, bhh), k(c, 2.0));
    assert_ok(rnnc_chunk(c, cv, 2, 1, &hi));
    assert_ok(rnnc_concat(c, hi, bhh, &sw));
    assert_ok(rnnc_chunk(c, sw, 2, 0, &lo));
    h2 = u1(rnnc_tanh, c, b2(rnnc_add, c, b2(rnnc_add, c, b2(rnnc_linear, c, x, w), two), lo));
    assert_ok(rnnc_cell_set_next(c, h, h2));
    assert_ok(rnnc_cell_set_output(c, h2));
    enum { H = 4 };
    float wv[2][H * 3], bi[2][H], bh[2][H], cw[2][2 * H], out[2 * H];
    tu_fill_f32(&wv[0][0], 2 * H * 3, &rng, -1, 1);
    tu_fill_f32(&bi[0][0], 2 * H, &rng, -1, 1);
    tu_fill_f32(&bh[0][0], 2 * H, &rng, -1, 1);
    tu_fill_f32(&cw[0][0], 4 * H, &rng, -1, 1);
    const float *wp[8] = {wv[0], bi[0], bh[0], cw[0], wv[1], bi[1], bh[1], cw[1]};
    rt_weights rw = {wp, 4, 2};
    ir_sizes sz = {3, H, H};
    double ref[2 * H];
    for (int j = 0; j < H; j++)
        ref[j] = ((double)bi[1][j] + bh[1][j]) * 2.0;
    tu_poison_f32(out, 2 * H);
    assert_ok(rt_eval_fold(c, sz, &rw, 1, two, out));
    assert_true(tu_rel_err_f32(out, ref, H) <= 1e-7);
    assert_true(isnan(out[H])); /* no more than its H values */
    for (int j = 0; j < 2 * H; j++)
        ref[j] = j < H ? cw[1][H + j] : bh[1][j - H];
    tu_poison_f32(out, 2 * H);
    assert_ok(rt_eval_fold(c, sz, &rw, 1, sw, out));
    assert_true(tu_rel_err_f32(out, ref, 2 * H) == 0.0);
    assert_status(rt_eval_fold(c, sz, &rw, 1, h2, out), RNNC_ERR_INVALID_ARG);
    assert_status(rt_eval_fold(c, sz, &rw, 2, two, out), RNNC_ERR_INVALID_ARG);
    rnnc_cell_destroy(c);
}

/* The fp32 wrapper equals the double oracle on the same (fp32) data: the ops cell, L=2, D=2. */
static void test_backend_f32(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    enum { T = 4, B = 3, L = 2, D = 2, P = L * D };
    rnnc_cell *c = ops_cell();
    rnnc_cell *c1 = ops_cell(); /* layers > 0 read D*H features */
    rt_spec s = {.fn = {c, c1}, .sizes = {{I_, H_, H_}, {D * H_, H_, H_}}, .layers = L,
                 .dirs = D, .batch_first = true, .hout = H_};
    float wf[P][4][2 * H_ * D * H_];
    double wd[P][4][2 * H_ * D * H_];
    const float *wfp[P * 4];
    const double *wdp[P * 4];
    tu_fill_f32(&wf[0][0][0], sizeof wf / sizeof(float), &rng, -0.6, 0.6);
    for (int i = 0; i < P * 4; i++) {
        wfp[i] = wf[i / 4][i % 4];
        wdp[i] = wd[i / 4][i % 4];
        for (size_t j = 0; j < sizeof wf[0][0] / sizeof(float); j++)
            wd[i / 4][i % 4][j] = wf[i / 4][i % 4][j];
    }
    float x[B * T * I_], h0[P * B * H_], y[B * T * D * H_], hn[P * B * H_];
    double xd[B * T * I_], h0d[P * B * H_], yd[B * T * D * H_], hnd[P * B * H_];
    tu_fill_f32(x, B * T * I_, &rng, -1, 1);
    tu_fill_f32(h0, P * B * H_, &rng, -1, 1);
    for (int i = 0; i < B * T * I_; i++)
        xd[i] = x[i];
    for (int i = 0; i < P * B * H_; i++)
        h0d[i] = h0[i];
    int64_t len[B] = {T, 2, 1};
    const double *initd[1] = {h0d};
    double *find[1] = {hnd};
    rt_seq_f64 q = {T, B, xd, initd, len, yd, find, false};
    assert_ok(rt_interp_run(&s, &(rt_weights_f64){wdp, 4, P}, &q));

    void *m = NULL;
    assert_ok(rt_backend_interp.create(&s, &m));
    const void *init[1] = {h0};
    void *fin[1] = {hn};
    rnnc_forward_args a = {.seq_len = T, .batch = B, .x = x, .init = init, .lengths = len,
                           .y = y, .final = fin};
    assert_status(rt_backend_interp.forward(m, &a), RNNC_ERR_STATE); /* no weights yet */
    assert_ok(rt_backend_interp.bind(m, &(rt_weights){wfp, 4, P}));
    tu_poison_f32(y, B * T * D * H_);
    tu_poison_f32(hn, P * B * H_);
    assert_ok(rt_backend_interp.forward(m, &a));
    assert_true(tu_rel_err_f32(y, yd, B * T * D * H_) <= 1e-6);
    assert_true(tu_rel_err_f32(hn, hnd, P * B * H_) <= 1e-6);
    double ms = -1;
    assert_ok(rt_time_host(&rt_backend_interp, m, &a, 1, 3, &ms));
    assert_true(ms >= 0);
    a.device_pointers = true;
    assert_status(rt_backend_interp.forward(m, &a), RNNC_ERR_UNSUPPORTED);
    rt_backend_interp.destroy(m);
    rt_backend_interp.destroy(NULL);
    rnnc_cell_destroy(c);
    rnnc_cell_destroy(c1);
}

/* The built-in lstm through the model API on the interp backend equals the
 * double oracle given the same weights by state_dict name. */
static void test_model_api(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    enum { T = 4, B = 3, I = 4, H = 5, P = 3, L = 2, D = 2, NW = 64 };
    rnnc_cell *cell = NULL, *fn = NULL;
    assert_ok(rnnc_cell_builtin(&cell, "lstm", NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell, d.input_size = I, d.hidden_size = H, d.proj_size = P, d.num_layers = L;
    d.bidirectional = true, d.batch_first = true, d.dropout = 0.3, d.seed = 99;
    d.backend = RNNC_BACKEND_INTERP;
    rnnc_model *m = NULL;
    assert_ok(rnnc_model_create(&m, &d));
    assert_int_equal(rnnc_model_backend(m), RNNC_BACKEND_INTERP);
    int nw = rnnc_model_weight_count(m);
    assert_true(nw == L * D * 5 && nw <= NW);
    const char *names[NW];
    float *wf[NW];
    double *wd[NW];
    for (int i = 0; i < nw; i++) {
        int64_t shape[4], n = 1;
        int rank = 0;
        assert_ok(rnnc_model_weight_info(m, i, &names[i], 4, shape, &rank));
        for (int k = 0; k < rank; k++)
            n *= shape[k];
        wf[i] = malloc((size_t)n * sizeof(float));
        wd[i] = malloc((size_t)n * sizeof(double));
        tu_fill_f32(wf[i], (size_t)n, &rng, -0.5, 0.5);
        for (int64_t j = 0; j < n; j++)
            wd[i][j] = wf[i][j];
        assert_ok(rnnc_model_set_weight(m, names[i], wf[i], n));
    }
    float x[B * T * I], h0[L * D * B * P], c0[L * D * B * H], y[B * T * D * P], hn[L * D * B * P],
        cn[L * D * B * H];
    double xd[B * T * I], h0d[L * D * B * P], c0d[L * D * B * H], yd[B * T * D * P],
        hnd[L * D * B * P], cnd[L * D * B * H];
    tu_fill_f32(x, B * T * I, &rng, -1, 1);
    tu_fill_f32(h0, L * D * B * P, &rng, -1, 1);
    tu_fill_f32(c0, L * D * B * H, &rng, -1, 1);
    tu_poison_f32(y, B * T * D * P);
    tu_poison_f32(hn, L * D * B * P);
    tu_poison_f32(cn, L * D * B * H);
    for (int i = 0; i < B * T * I; i++)
        xd[i] = x[i];
    for (int i = 0; i < L * D * B * P; i++)
        h0d[i] = h0[i];
    for (int i = 0; i < L * D * B * H; i++)
        c0d[i] = c0[i];
    int64_t len[B] = {T, 1, 3};
    const void *init[2] = {h0, c0};
    void *fin[2] = {hn, cn};
    rnnc_forward_args a = {.seq_len = T, .batch = B, .x = x, .init = init, .lengths = len,
                           .y = y, .final = fin, .training = true};
    assert_ok(rnnc_model_forward(m, &a));

    assert_ok(rnnc_cell_clone(&fn, cell));
    assert_ok(ir_optimise(fn, true));
    const double *wp[NW];
    for (int p = 0; p < L * D; p++)
        for (int i = 0; i < fn->n_params; i++) {
            char want[96];
            snprintf(want, sizeof want, "%s_l%d%s", fn->params[i].name, p / D,
                     p % D ? "_reverse" : "");
            wp[p * fn->n_params + i] = NULL;
            for (int k = 0; k < nw; k++)
                if (!strcmp(names[k], want))
                    wp[p * fn->n_params + i] = wd[k];
            assert_non_null(wp[p * fn->n_params + i]);
        }
    rt_spec s = {.fn = {fn, fn}, .sizes = {{I, H, P}, {D * P, H, P}}, .layers = L, .dirs = D,
                 .batch_first = true, .dropout = 0.3, .seed = 99, .hout = P};
    const double *initd[2] = {h0d, c0d};
    double *find[2] = {hnd, cnd};
    rt_seq_f64 q = {T, B, xd, initd, len, yd, find, true};
    assert_ok(rt_interp_run(&s, &(rt_weights_f64){wp, fn->n_params, L * D}, &q));
    assert_true(tu_rel_err_f32(y, yd, B * T * D * P) <= 1e-6);
    assert_true(tu_rel_err_f32(hn, hnd, L * D * B * P) <= 1e-6);
    assert_true(tu_rel_err_f32(cn, cnd, L * D * B * H) <= 1e-6);
    for (int i = 0; i < nw; i++)
        free(wf[i]), free(wd[i]);
    rnnc_model_destroy(m);
    rnnc_cell_destroy(fn);
    rnnc_cell_destroy(cell);
}

static void test_errors(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    enum { T = 3, B = 2 };
    double x[T * B * I_], g[I_], bt[I_], w[2 * H_ * I_], w2[2 * H_ * H_], y[T * B * H_];
    tu_fill_f64(x, T * B * I_, &rng, -1, 1);
    tu_fill_f64(g, I_, &rng, -1, 1);
    tu_fill_f64(bt, I_, &rng, -1, 1);
    tu_fill_f64(w, 2 * H_ * I_, &rng, -1, 1);
    tu_fill_f64(w2, 2 * H_ * H_, &rng, -1, 1);
    rnnc_cell *c = ops_cell();
    rt_spec s = {.fn = {c, c}, .sizes = {{I_, H_, H_}, {H_, H_, H_}}, .layers = 1, .dirs = 1,
                 .hout = H_};
    const double *wp[4] = {g, bt, w, w2};
    rt_weights_f64 wf = {wp, 4, 1};
    int64_t bad_len[B] = {T, 0}, long_len[B] = {T + 1, 1};
    rt_seq_f64 q = {T, B, x, NULL, bad_len, y, NULL, false};
    assert_status(rt_interp_run(&s, &wf, &q), RNNC_ERR_INVALID_ARG);
    assert_non_null(strstr(rnnc_last_error(), "lengths[1]"));
    q.lengths = long_len;
    assert_status(rt_interp_run(&s, &wf, &q), RNNC_ERR_INVALID_ARG);
    q.lengths = NULL;
    wp[2] = NULL;
    assert_status(rt_interp_run(&s, &wf, &q), RNNC_ERR_NOT_FOUND);
    assert_non_null(strstr(rnnc_last_error(), "'W'"));
    wp[2] = w;
    wf.pseudo_layers = 0;
    assert_status(rt_interp_run(&s, &wf, &q), RNNC_ERR_INVALID_ARG);
    wf.pseudo_layers = 1;
    s.hout = H_ + 1;
    assert_status(rt_interp_run(&s, &wf, &q), RNNC_ERR_SHAPE);
    s.hout = H_;
    const double *wp2[8] = {g, bt, w, w2, g, bt, w, w2};
    rt_weights_f64 wf2 = {wp2, 4, 2};
    s.layers = 2;
    s.sizes[1].I = H_ + 2; /* layer 1 reads D*Hout = H features, not H+2 */
    assert_status(rt_interp_run(&s, &wf2, &q), RNNC_ERR_SHAPE);
    s.layers = 1;
    q.x = NULL;
    assert_status(rt_interp_run(&s, &wf, &q), RNNC_ERR_INVALID_ARG);
    assert_status(rt_interp_run(NULL, &wf, &q), RNNC_ERR_INVALID_ARG);
    q.x = x;
    assert_ok(rt_interp_run(&s, &wf, &q));
    rnnc_cell_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_op),
        cmocka_unit_test(test_fold),
        cmocka_unit_test(test_backend_f32),
        cmocka_unit_test(test_model_api),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
