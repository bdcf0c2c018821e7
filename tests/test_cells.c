/* test_cells.c: the built-in cells.  Each loads, verifies and survives
 * print -> parse unchanged; each computes, for one batch row, what PyTorch's
 * module computes (a plain evaluator of the IR against hand-written cell
 * math in this file); and cells load by name, alias and path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "testutil.h"

/* ---------------------------------------------------------------- a one-row evaluator */

typedef struct vals {
    double **v;   /* per node */
    int64_t *len; /* per node */
    int32_t n;
} vals;

static bool absent(const ir_fn *f, int32_t node, bool proj)
{
    const ir_node *n = &f->nodes[node];
    if (n->op != IR_PARAM || !f->params[n->i0].optional)
        return false;
    return !proj && (ir_dim_uses_p(n->rows) || ir_dim_uses_p(n->cols));
}

static double unary(int op, double a)
{
    switch (op) {
    case IR_NEG: return -a;
    case IR_SIGMOID: return 1 / (1 + exp(-a));
    case IR_TANH: return tanh(a);
    case IR_RELU: return a > 0 ? a : 0;
    case IR_EXP: return exp(a);
    case IR_LOG: return log(a);
    case IR_SQRT: return sqrt(a);
    case IR_RSQRT: return 1 / sqrt(a);
    case IR_DROPOUT: return a; /* inference */
    default: fail_msg("op %d is not unary", op);
    }
    return 0;
}

static double binary(int op, double a, double b)
{
    switch (op) {
    case IR_ADD: return a + b;
    case IR_SUB: return a - b;
    case IR_MUL: return a * b;
    case IR_DIV: return a / b;
    default: fail_msg("op %d is not binary", op);
    }
    return 0;
}

static void eval_layernorm(const ir_node *n, vals *e, double *out, int64_t m)
{
    const double *x = e->v[n->a[0]];
    double mean = 0, var = 0;
    for (int64_t j = 0; j < m; j++)
        mean += x[j] / (double)m;
    for (int64_t j = 0; j < m; j++)
        var += (x[j] - mean) * (x[j] - mean) / (double)m;
    for (int64_t j = 0; j < m; j++) {
        out[j] = (x[j] - mean) / sqrt(var + n->f);
        if (n->a[1] >= 0)
            out[j] *= e->v[n->a[1]][j];
        if (n->a[2] >= 0)
            out[j] += e->v[n->a[2]][j];
    }
}

static void eval_node(const ir_fn *f, int32_t i, vals *e, bool proj, ir_sizes sz)
{
    const ir_node *n = &f->nodes[i];
    int64_t m = n->kind == IR_SCALAR ? 1 : ir_dim_eval(n->cols, sz);
    const double *a = n->a[0] >= 0 ? e->v[n->a[0]] : NULL;
    const double *b = n->a[1] >= 0 ? e->v[n->a[1]] : NULL;
    double *out = calloc((size_t)m, sizeof *out);
    assert_non_null(out);
    e->v[i] = out;
    e->len[i] = m;
    if (n->op == IR_CONST) {
        out[0] = n->f;
    } else if (n->op == IR_LINEAR && absent(f, n->a[1], proj)) {
        memcpy(out, a, (size_t)m * sizeof *out); /* an absent weight is the identity */
    } else if (n->op == IR_LINEAR) {
        int64_t k = e->len[n->a[0]];
        for (int64_t r = 0; r < m; r++)
            for (int64_t c = 0; c < k; c++)
                out[r] += b[r * k + c] * a[c];
    } else if (ir_ops[n->op].flags & IR_F_BINARY) {
        assert_false(absent(f, n->a[0], proj) || absent(f, n->a[1], proj));
        int64_t la = e->len[n->a[0]], lb = e->len[n->a[1]];
        for (int64_t j = 0; j < m; j++)
            out[j] = binary(n->op, a[la == 1 ? 0 : j], b[lb == 1 ? 0 : j]);
    } else if (n->op == IR_CHUNK) {
        memcpy(out, a + m * n->i1, (size_t)m * sizeof *out);
    } else if (n->op == IR_CONCAT) {
        int64_t la = e->len[n->a[0]];
        memcpy(out, a, (size_t)la * sizeof *out);
        memcpy(out + la, b, (size_t)(m - la) * sizeof *out);
    } else if (n->op == IR_SUM || n->op == IR_MEAN) {
        int64_t la = e->len[n->a[0]];
        for (int64_t j = 0; j < la; j++)
            out[0] += a[j];
        if (n->op == IR_MEAN)
            out[0] /= (double)la;
    } else if (n->op == IR_LAYERNORM) {
        eval_layernorm(n, e, out, m);
    } else {
        for (int64_t j = 0; j < m; j++)
            out[j] = unary(n->op, a[j]);
    }
}

/* The named inputs of one step: x, the states in order, the params in order. */
typedef struct step_in {
    double *x;
    double *state[4];
    double *param[16];
} step_in;

static void eval_cell(const ir_fn *f, const step_in *in, bool proj, ir_sizes sz, vals *e)
{
    e->n = f->n;
    e->v = calloc((size_t)f->n, sizeof *e->v);
    e->len = calloc((size_t)f->n, sizeof *e->len);
    assert_true(e->v && e->len);
    for (int32_t i = 0; i < f->n; i++) {
        const ir_node *n = &f->nodes[i];
        const double *src = n->op == IR_INPUT   ? in->x
                            : n->op == IR_STATE ? in->state[n->i0]
                            : n->op == IR_PARAM ? in->param[n->i0]
                                                : NULL;
        if (!src) {
            eval_node(f, i, e, proj, sz);
            continue;
        }
        int64_t m = ir_dim_eval(n->cols, sz) * (n->kind == IR_MAT ? ir_dim_eval(n->rows, sz) : 1);
        e->v[i] = malloc((size_t)m * sizeof(double));
        assert_non_null(e->v[i]);
        memcpy(e->v[i], src, (size_t)m * sizeof(double));
        e->len[i] = n->kind == IR_MAT ? ir_dim_eval(n->cols, sz) : m;
    }
}

static void vals_free(vals *e)
{
    for (int32_t i = 0; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
    free(e->len);
}

/* ---------------------------------------------------------------- PyTorch's cell math */

typedef struct ref {
    const rnnc_cell *cell;
    const step_in *in;
    int64_t I, H, P;
    bool proj;
} ref;

static const double *param(const ref *r, const char *name)
{
    for (int i = 0; i < rnnc_cell_param_count(r->cell); i++)
        if (strcmp(rnnc_cell_param_name(r->cell, i), name) == 0)
            return r->in->param[i];
    fail_msg("cell '%s' has no param '%s'", rnnc_cell_name(r->cell), name);
    return NULL;
}

static double sig(double v)
{
    return 1 / (1 + exp(-v));
}

/* out[n] = W[n, k] v[k] (+ b) */
static void matvec(const double *w, const double *v, const double *b, int64_t n, int64_t k,
                   double *out)
{
    for (int64_t r = 0; r < n; r++) {
        out[r] = b ? b[r] : 0;
        for (int64_t c = 0; c < k; c++)
            out[r] += w[r * k + c] * v[c];
    }
}

static void layernorm(double *v, int64_t n, double eps, const double *w, const double *b)
{
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; j++)
        mean += v[j] / (double)n;
    for (int64_t j = 0; j < n; j++)
        var += (v[j] - mean) * (v[j] - mean) / (double)n;
    for (int64_t j = 0; j < n; j++)
        v[j] = (v[j] - mean) / sqrt(var + eps) * w[j] + b[j];
}

#define MAXV 64

/* gates = W_ih x + b_ih + W_hh h + b_hh, with the h of `hsize` features. */
static void lstm_gates(const ref *r, int64_t hsize, bool biases, double *g)
{
    const int64_t G = 4 * r->H;
    double gh[MAXV];
    matvec(param(r, "weight_ih"), r->in->x, biases ? param(r, "bias_ih") : NULL, G, r->I, g);
    matvec(param(r, "weight_hh"), r->in->state[0], biases ? param(r, "bias_hh") : NULL, G, hsize,
           gh);
    for (int64_t j = 0; j < G; j++)
        g[j] += gh[j];
}

/* nn.LSTM (with proj_size), nn.LSTM's peephole variant and the fastrnns cells. */
static void ref_lstm_family(const ref *r, const char *kind, double **next, double *y)
{
    const int64_t H = r->H;
    const double *c = r->in->state[1];
    double g[MAXV], cy[MAXV], hy[MAXV];
    if (strcmp(kind, "milstm") == 0) {
        double wx[MAXV], uz[MAXV];
        const double *al = param(r, "alpha"), *bi = param(r, "beta_i"), *bh = param(r, "beta_h"),
                     *bias = param(r, "bias");
        matvec(param(r, "weight_ih"), r->in->x, NULL, 4 * H, r->I, wx);
        matvec(param(r, "weight_hh"), r->in->state[0], NULL, 4 * H, H, uz);
        for (int64_t j = 0; j < 4 * H; j++)
            g[j] = al[j] * wx[j] * uz[j] + bi[j] * wx[j] + bh[j] * uz[j] + bias[j];
    } else if (strcmp(kind, "layernorm_lstm") == 0) {
        double gh[MAXV];
        matvec(param(r, "weight_ih"), r->in->x, NULL, 4 * H, r->I, g);
        matvec(param(r, "weight_hh"), r->in->state[0], NULL, 4 * H, H, gh);
        layernorm(g, 4 * H, 1e-5, param(r, "layernorm_i_weight"), param(r, "layernorm_i_bias"));
        layernorm(gh, 4 * H, 1e-5, param(r, "layernorm_h_weight"), param(r, "layernorm_h_bias"));
        for (int64_t j = 0; j < 4 * H; j++)
            g[j] += gh[j];
    } else {
        lstm_gates(r, r->proj ? r->P : H, true, g);
    }
    bool peep = strcmp(kind, "peephole_lstm") == 0;
    const double *wci = peep ? param(r, "w_ci") : NULL, *wcf = peep ? param(r, "w_cf") : NULL,
                 *wco = peep ? param(r, "w_co") : NULL;
    for (int64_t j = 0; j < H; j++) {
        double i = sig(g[j] + (peep ? wci[j] * c[j] : 0));
        double f = sig(g[H + j] + (peep ? wcf[j] * c[j] : 0));
        cy[j] = f * c[j] + i * tanh(g[2 * H + j]);
    }
    if (strcmp(kind, "layernorm_lstm") == 0)
        layernorm(cy, H, 1e-5, param(r, "layernorm_c_weight"), param(r, "layernorm_c_bias"));
    for (int64_t j = 0; j < H; j++)
        hy[j] = sig(g[3 * H + j] + (peep ? wco[j] * cy[j] : 0)) * tanh(cy[j]);
    int64_t hout = r->proj ? r->P : H;
    if (r->proj)
        matvec(param(r, "weight_hr"), hy, NULL, r->P, H, next[0]);
    else
        memcpy(next[0], hy, (size_t)H * sizeof(double));
    memcpy(next[1], cy, (size_t)H * sizeof(double));
    memcpy(y, next[0], (size_t)hout * sizeof(double));
}

static void ref_gru(const ref *r, double **next, double *y)
{
    const int64_t H = r->H;
    const double *h = r->in->state[0];
    double gi[MAXV], gh[MAXV];
    matvec(param(r, "weight_ih"), r->in->x, param(r, "bias_ih"), 3 * H, r->I, gi);
    matvec(param(r, "weight_hh"), h, param(r, "bias_hh"), 3 * H, H, gh);
    for (int64_t j = 0; j < H; j++) {
        double rr = sig(gi[j] + gh[j]);
        double z = sig(gi[H + j] + gh[H + j]);
        double n = tanh(gi[2 * H + j] + rr * gh[2 * H + j]);
        next[0][j] = y[j] = (1 - z) * n + z * h[j];
    }
}

static void ref_rnn(const ref *r, bool relu, double **next, double *y)
{
    double gi[MAXV], gh[MAXV];
    matvec(param(r, "weight_ih"), r->in->x, param(r, "bias_ih"), r->H, r->I, gi);
    matvec(param(r, "weight_hh"), r->in->state[0], param(r, "bias_hh"), r->H, r->H, gh);
    for (int64_t j = 0; j < r->H; j++) {
        double v = gi[j] + gh[j];
        next[0][j] = y[j] = relu ? (v > 0 ? v : 0) : tanh(v);
    }
}

static void reference(const char *name, const ref *r, double **next, double *y)
{
    if (strcmp(name, "gru") == 0)
        ref_gru(r, next, y);
    else if (strncmp(name, "rnn_", 4) == 0)
        ref_rnn(r, strcmp(name, "rnn_relu") == 0, next, y);
    else
        ref_lstm_family(r, strstr(name, "lstm") && strcmp(name, "dropout_lstm") ? name : "lstm",
                        next, y);
}

static double max_rel(const double *a, const double *b, int64_t n)
{
    double err = 0, mag = 0;
    for (int64_t j = 0; j < n; j++) {
        err = fmax(err, fabs(a[j] - b[j]));
        mag = fmax(mag, fabs(b[j]));
    }
    if (isnan(err))
        return INFINITY;
    return mag > 0 ? err / mag : err; /* relu may zero every unit */
}

/* One step of the built-in cell on random data, against the reference. */
static void check_semantics(const char *name, bool proj, uint64_t *rng)
{
    rnnc_cell *cell;
    assert_ok(rnnc_cell_builtin(&cell, name, NULL));
    const ir_fn *f = cell;
    ir_sizes sz = {5, 4, proj ? 3 : 4};
    step_in in = {0};
    double *all[32] = {0};
    int n_all = 0;
    in.x = all[n_all++] = malloc(sizeof(double) * (size_t)sz.I);
    tu_fill_f64(in.x, (size_t)sz.I, rng, -1, 1);
    for (int i = 0; i < f->n_states; i++) {
        int64_t m = ir_dim_eval(f->nodes[f->states[i].node].cols, sz);
        in.state[i] = all[n_all++] = malloc(sizeof(double) * (size_t)m);
        tu_fill_f64(in.state[i], (size_t)m, rng, -1, 1);
    }
    for (int i = 0; i < f->n_params; i++) {
        const ir_node *n = &f->nodes[f->params[i].node];
        int64_t m = ir_dim_eval(n->cols, sz) * (n->kind == IR_MAT ? ir_dim_eval(n->rows, sz) : 1);
        in.param[i] = all[n_all++] = malloc(sizeof(double) * (size_t)m);
        tu_fill_f64(in.param[i], (size_t)m, rng, -0.7, 0.7);
    }
    vals e;
    eval_cell(f, &in, proj, sz, &e);
    ref r = {cell, &in, sz.I, sz.H, sz.P, proj};
    double want_next[4][MAXV], want_y[MAXV];
    double *nexts[4] = {want_next[0], want_next[1], want_next[2], want_next[3]};
    reference(name, &r, nexts, want_y);
    for (int i = 0; i < f->n_states; i++) {
        int32_t k = f->states[i].next;
        double err = max_rel(e.v[k], want_next[i], e.len[k]);
        if (!(err <= 1e-12))
            fail_msg("%s%s: next %s differs from PyTorch's math by %g", name,
                     proj ? " (proj)" : "", f->states[i].name, err);
    }
    double err = max_rel(e.v[f->output], want_y, e.len[f->output]);
    if (!(err <= 1e-12))
        fail_msg("%s: output differs by %g", name, err);
    vals_free(&e);
    for (int i = 0; i < n_all; i++)
        free(all[i]);
    rnnc_cell_destroy(cell);
}

static void test_semantics(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    for (const char *const *n = rnnc_cell_builtin_names(); *n; n++) {
        check_semantics(*n, false, &rng);
        if (strcmp(*n, "lstm") == 0 || strcmp(*n, "dropout_lstm") == 0)
            check_semantics(*n, true, &rng);
    }
}

/* ---------------------------------------------------------------- loading and printing */

static void test_round_trip(void **st)
{
    (void)st;
    int count = 0;
    for (const char *const *n = rnnc_cell_builtin_names(); *n; n++, count++) {
        rnnc_cell *c, *back;
        char *t1, *t2;
        assert_ok(rnnc_cell_builtin(&c, *n, NULL));
        assert_string_equal(rnnc_cell_name(c), *n);
        assert_ok(rnnc_cell_verify(c));
        assert_ok(rnnc_cell_print(c, &t1));
        assert_ok(rnnc_cell_parse(&back, t1, strlen(t1), "printed.cell", NULL, NULL));
        if (!rnnc_cell_equal(c, back))
            fail_msg("%s: parse(print(c)) != c; printed:\n%s", *n, t1);
        assert_ok(rnnc_cell_print(back, &t2));
        assert_string_equal(t1, t2);
        rnnc_free(t1);
        rnnc_free(t2);
        rnnc_cell_destroy(c);
        rnnc_cell_destroy(back);
    }
    assert_int_equal(count, 8);
}

static void expect_names(const rnnc_cell *c, const char *states, const char *params)
{
    char got[512] = "";
    for (int i = 0; i < rnnc_cell_state_count(c); i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "",
                 rnnc_cell_state_name(c, i));
    assert_string_equal(got, states);
    got[0] = 0;
    for (int i = 0; i < rnnc_cell_param_count(c); i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "",
                 rnnc_cell_param_name(c, i));
    assert_string_equal(got, params);
}

static void test_names(void **st)
{
    (void)st;
    static const struct {
        const char *cell, *states, *params;
    } want[] = {
        {"lstm", "h c", "weight_ih weight_hh bias_ih bias_hh weight_hr"},
        {"dropout_lstm", "h c", "weight_ih weight_hh bias_ih bias_hh weight_hr"},
        {"gru", "h", "weight_ih weight_hh bias_ih bias_hh"},
        {"rnn_tanh", "h", "weight_ih weight_hh bias_ih bias_hh"},
        {"rnn_relu", "h", "weight_ih weight_hh bias_ih bias_hh"},
        {"layernorm_lstm", "h c",
         "weight_ih weight_hh layernorm_i_weight layernorm_i_bias layernorm_h_weight "
         "layernorm_h_bias layernorm_c_weight layernorm_c_bias"},
        {"milstm", "h c", "weight_ih weight_hh alpha beta_i beta_h bias"},
        {"peephole_lstm", "h c", "weight_ih weight_hh bias_ih bias_hh w_ci w_cf w_co"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        rnnc_cell *c;
        assert_ok(rnnc_cell_builtin(&c, want[i].cell, NULL));
        expect_names(c, want[i].states, want[i].params);
        rnnc_cell_destroy(c);
    }
}

static void test_aliases_and_attrs(void **st)
{
    (void)st;
    rnnc_cell *lstm, *c, *d;
    assert_ok(rnnc_cell_builtin(&lstm, "lstm", NULL));
    for (int i = 0; i < 2; i++) {
        assert_ok(rnnc_cell_builtin(&c, i ? "premul_bias" : "premul", NULL));
        assert_string_equal(rnnc_cell_name(c), "lstm");
        assert_true(rnnc_cell_equal(c, lstm));
        rnnc_cell_destroy(c);
    }
    /* dropout_lstm is the lstm text under another name. */
    char *t1, *t2;
    assert_ok(rnnc_cell_builtin(&c, "dropout_lstm", NULL));
    assert_ok(rnnc_cell_print(c, &t1));
    assert_ok(rnnc_cell_print(lstm, &t2));
    assert_string_equal(t1 + strlen("cell dropout_lstm"), t2 + strlen("cell lstm"));
    rnnc_free(t1);
    rnnc_free(t2);
    rnnc_cell_destroy(c);
    rnnc_cell_destroy(lstm);

    /* eps: 1e-5 by default, 0 for the benchmark's decomposed layernorm. */
    assert_ok(rnnc_cell_builtin(&c, "layernorm_lstm", NULL));
    assert_ok(rnnc_cell_builtin(&d, "layernorm_lstm", "eps=1e-5"));
    assert_true(rnnc_cell_equal(c, d));
    rnnc_cell_destroy(d);
    assert_ok(rnnc_cell_builtin(&d, "layernorm_lstm", "eps=0"));
    assert_false(rnnc_cell_equal(c, d));
    int lns = 0;
    for (int32_t i = 0; i < d->n; i++)
        if (d->nodes[i].op == IR_LAYERNORM) {
            assert_true(d->nodes[i].f == 0.0);
            assert_true(c->nodes[i].f == 1e-5);
            lns++;
        }
    assert_int_equal(lns, 3);
    rnnc_cell_destroy(c);
    rnnc_cell_destroy(d);
    c = (rnnc_cell *)1;
    assert_status(rnnc_cell_builtin(&c, "lstm", "eps=0"), RNNC_ERR_INVALID_ARG);
    assert_null(c);
    assert_non_null(strstr(rnnc_last_error(), "eps"));
}

static void test_load(void **st)
{
    (void)st;
    const char *src = getenv("RNNC_SOURCE_DIR");
    assert_non_null(src);
    char path[4096];
    rnnc_cell *a, *b;
    for (const char *const *n = rnnc_cell_builtin_names(); *n; n++) {
        snprintf(path, sizeof path, "%s/frontend/cells/%s.cell", src, *n);
        assert_ok(rnnc_cell_load(&a, *n, NULL));
        assert_ok(rnnc_cell_load(&b, path, NULL));
        assert_true(rnnc_cell_equal(a, b));
        rnnc_cell_destroy(a);
        rnnc_cell_destroy(b);
    }
    /* A user's file, by path and through load_file with a cell name. */
    char *dir = tu_tmpdir();
    const char *text = "cell first {\n input x[H]\n state h[H]\n next h = x\n output x\n}\n"
                       "cell mine {\n attr k = 2\n input x[H]\n state h[H]\n"
                       " next h = tanh(x * k + h)\n output h\n}\n";
    snprintf(path, sizeof path, "%s/my.cell", dir);
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
    assert_ok(rnnc_cell_load(&a, path, NULL));
    assert_string_equal(rnnc_cell_name(a), "first");
    rnnc_cell_destroy(a);
    assert_ok(rnnc_cell_load_file(&a, path, "mine", "k=3"));
    assert_string_equal(rnnc_cell_name(a), "mine");
    rnnc_cell_destroy(a);
    /* Errors: a missing file, a directory, an unknown name; each says which. */
    a = (rnnc_cell *)1;
    snprintf(path, sizeof path, "%s/missing.cell", dir);
    assert_status(rnnc_cell_load(&a, path, NULL), RNNC_ERR_IO);
    assert_null(a);
    assert_non_null(strstr(rnnc_last_error(), "missing.cell"));
    assert_status(rnnc_cell_load_file(&a, dir, NULL, NULL), RNNC_ERR_IO);
    assert_status(rnnc_cell_load(&a, "lstmm", NULL), RNNC_ERR_NOT_FOUND);
    assert_non_null(strstr(rnnc_last_error(), "lstmm"));
    assert_non_null(strstr(rnnc_last_error(), "layernorm_lstm"));
    assert_status(rnnc_cell_load(&a, NULL, NULL), RNNC_ERR_INVALID_ARG);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_names),
        cmocka_unit_test(test_semantics),  cmocka_unit_test(test_aliases_and_attrs),
        cmocka_unit_test(test_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
