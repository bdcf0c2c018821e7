/*
 * test_random_cells.c: a generator of random valid cells, as .cell text,
 * each run on the CPU backend (LLVM) against the interpreter on the same
 * fresh random weights and inputs (outputs poisoned first).  Each cell has
 * one or two states, gate pre-activations linear(x, W) + linear(h, U) (+ an
 * optional bias) chunked into k pieces, and random expression trees over
 * the pieces, the states and constants with every pointwise op whose range
 * stays bounded; a state's next value goes through tanh or a sigmoid-
 * weighted blend, so long runs stay finite.
 *
 * A random tree can cancel (sigmoid(p) * h + tanh(-2h) is far smaller than
 * either term), and fp32 rounding of the terms then shows up far above one
 * ulp of the result: max|out-ref|/max|ref| would blame the backend for the
 * cell's conditioning.  So the generator also writes each state's
 * magnitude expression (mag(a)+mag(b) for a sum or difference, |f(a)| +
 * L*mag(a) for a pointwise f of slope at most L), a twin cell outputs it,
 * and the error is max|out-ref| / max(max|ref|, max magnitude) <= 1e-5; a
 * wrong op or index still misses by orders of magnitude.
 * RNNC_TEST_SEED reproduces a failure; the failing cell's text is printed.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define CELLS 24
#define TEXT_MAX 32768

/* A string being built, of fixed capacity. */
typedef struct str {
    char p[TEXT_MAX];
    size_t n;
} str;

typedef struct gen {
    uint64_t *rng;
    str text;   /* the cell */
    str mag[2]; /* the magnitude of each state's next value */
    int pieces, states;
} gen;

static int pick(gen *g, int n)
{
    return (int)tu_uniform(g->rng, 0, n) % n;
}

static void put(str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(str *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(s->p + s->n, TEXT_MAX - s->n, fmt, ap);
    va_end(ap);
    assert_true(w >= 0 && s->n + (size_t)w < TEXT_MAX);
    s->n += (size_t)w;
}

/* |v|: the .cell language has relu and neg but no abs. */
static void put_abs(str *s, const char *v)
{
    put(s, "(relu(%s) + relu(neg(%s)))", v, v);
}

static str *str_new(void)
{
    str *s = calloc(1, sizeof *s);
    assert_non_null(s);
    return s;
}

static const char *const k_states[] = {"h", "c"};

/* A random expression of depth <= d over the pieces p0.., the states and
 * constants: its text into t, its magnitude's into m. */
static void expr(gen *g, int d, str *t, str *m)
{
    static const char *const unary[] = {"sigmoid", "tanh", "relu", "neg"};
    static const char *const slope[] = {"0.25", "1", "1", "1"};
    static const char *const binary[] = {" + ", " - ", " * "};
    int kind = d <= 0 ? 0 : pick(g, 4);
    if (kind == 0) { /* a leaf */
        int leaf = pick(g, g->pieces + g->states + 1);
        str *v = str_new();
        if (leaf < g->pieces)
            put(v, "p%d", leaf);
        else if (leaf < g->pieces + g->states)
            put(v, "%s", k_states[leaf - g->pieces]);
        if (v->n) {
            put(t, "%s", v->p);
            put_abs(m, v->p);
        } else {
            double c = tu_uniform(g->rng, -2, 2);
            put(t, "%.2f", c);
            put(m, "%.2f", fabs(c));
        }
        free(v);
        return;
    }
    str *a = str_new(), *am = str_new(), *b = str_new(), *bm = str_new();
    if (kind == 1) {
        int f = pick(g, 4);
        expr(g, d - 1, a, am);
        put(b, "%s(%s)", unary[f], a->p);
        put(t, "%s", b->p);
        put(m, "(");
        put_abs(m, b->p);
        put(m, " + %s * (%s))", slope[f], am->p);
    } else {
        const char *op = binary[pick(g, 3)];
        expr(g, d - 1, a, am);
        expr(g, d - 1, b, bm);
        put(t, "(%s%s%s)", a->p, op, b->p);
        put(m, "((%s)%s(%s))", am->p, op[1] == '*' ? " * " : " + ", bm->p);
    }
    free(a), free(am), free(b), free(bm);
}

/* State s's next value n_s into the cell, its magnitude into g->mag[s]. */
static void next_value(gen *g, int s)
{
    const char *st = k_states[s];
    str *a = str_new(), *am = str_new(), *b = str_new(), *bm = str_new(), *v = str_new();
    put(v, "p%d", pick(g, g->pieces));
    str *m = &g->mag[s];
    m->n = 0;
    if (pick(g, 2)) { /* tanh of a tree (plus a piece: a tree may be all constants) */
        expr(g, 3, a, am);
        put(b, "tanh(%s + %s)", v->p, a->p);
        put(&g->text, "    n_%s = %s\n", st, b->p);
        put(m, "(");
        put_abs(m, b->p);
        put(m, " + ");
        put_abs(m, v->p);
        put(m, " + (%s))", am->p);
    } else { /* a gated blend of the state and a bounded candidate */
        expr(g, 2, a, am);
        expr(g, 2, b, bm);
        put(&g->text, "    n_%s = sigmoid(%s) * %s + (1 - sigmoid(%s)) * tanh(%s)\n", st, a->p, st,
            v->p, b->p);
        put(m, "((sigmoid(%s) + 0.25 * (%s)) * ", a->p, am->p);
        put_abs(m, st);
        put(m, " + (1 + 0.25 * ");
        put_abs(m, v->p);
        put(m, ") * (");
        a->n = 0;
        put(a, "tanh(%s)", b->p);
        put_abs(m, a->p);
        put(m, " + (%s)))", bm->p);
    }
    free(a), free(am), free(b), free(bm), free(v);
}

/* One random cell's text into g->text; the part before its output line
 * ends at *body, where a twin cell puts its own output. */
static void random_cell(gen *g, int index, size_t *body)
{
    g->text.n = 0;
    g->states = 1 + pick(g, 2);
    g->pieces = 1 + pick(g, 4);
    bool bias = pick(g, 2);
    put(&g->text, "cell random_%d {\n    input x[I]\n", index);
    for (int s = 0; s < g->states; s++)
        put(&g->text, "    state %s[H]\n", k_states[s]);
    put(&g->text, "    param w[%dH, I]\n    param u[%dH, H]\n", g->pieces, g->pieces);
    if (bias)
        put(&g->text, "    param b[%dH] optional\n", g->pieces);
    put(&g->text, "    pre = linear(x, w) + linear(h, u)%s\n", bias ? " + b" : "");
    if (g->pieces == 1) {
        put(&g->text, "    p0 = pre\n");
    } else {
        for (int i = 0; i < g->pieces; i++)
            put(&g->text, "%sp%d", i ? ", " : "    ", i);
        put(&g->text, " = chunk(pre, %d)\n", g->pieces);
    }
    for (int s = 0; s < g->states; s++)
        next_value(g, s);
    for (int s = 0; s < g->states; s++)
        put(&g->text, "    next %s = n_%s\n", k_states[s], k_states[s]);
    *body = g->text.n;
    put(&g->text, "    output n_h\n}\n");
}

/* The twin of the cell in g whose output is state s's magnitude. */
static void twin(const gen *g, size_t body, int s, str *out)
{
    out->n = 0;
    put(out, "%.*s    m = %s\n    output m\n}\n", (int)body, g->text.p, g->mag[s].p);
}

/* ---------------------------------------------------------------- running */

static rnnc_cell *parse(const char *text)
{
    rnnc_cell *cell = NULL;
    rnnc_status s = rnnc_cell_parse(&cell, text, strlen(text), "<random>", NULL, NULL);
    if (s != RNNC_OK)
        fail_msg("a generated cell does not parse: %s\n%s", rnnc_last_error(), text);
    return cell;
}

static rnnc_model *make(const rnnc_cell *cell, rnnc_backend be, int64_t I, int64_t H)
{
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = I;
    d.hidden_size = H;
    d.backend = be;
    rnnc_model *m = NULL;
    assert_ok(rnnc_model_create(&m, &d));
    return m;
}

static float *alloc_f32(size_t n)
{
    float *p = malloc(n * sizeof *p);
    assert_non_null(p);
    return p;
}

static double max_abs(const float *p, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(p[i]));
    return m;
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

/* The shapes and tensors of one comparison. */
typedef struct run {
    int64_t I, H, T, B;
    int states;
    size_t nx, ny, nh;
    float *x, *init[2];
    const void *init_p[2];
} run;

/* y and the final states of one forward of m, outputs poisoned first. */
static void forward(rnnc_model *m, const run *r, float *y, float *fin[2])
{
    void *fin_p[2] = {fin[0], fin[1]};
    tu_poison_f32(y, r->ny);
    for (int s = 0; s < r->states; s++)
        tu_poison_f32(fin[s], r->nh);
    rnnc_forward_args a = {.seq_len = r->T, .batch = r->B, .x = r->x, .init = r->init_p,
                           .y = y, .final = fin_p};
    assert_ok(rnnc_model_forward(m, &a));
}

/* The largest |value| state s's magnitude twin reaches over the run
 * (fin_scale: at the last step alone, where the final state is taken). */
static double magnitude(rnnc_model *tw, const run *r, double *fin_scale)
{
    float *y = alloc_f32(r->ny), *fin[2] = {alloc_f32(r->nh), alloc_f32(r->nh)};
    forward(tw, r, y, fin);
    double m = max_abs(y, r->ny);
    *fin_scale = max_abs(y + r->ny - r->nh, r->nh);
    free(y), free(fin[0]), free(fin[1]);
    return m;
}

static void compare(const gen *g, size_t body, uint64_t *rng)
{
    run r = {.I = 1 + (int64_t)tu_uniform(rng, 0, 6), .H = 1 + (int64_t)tu_uniform(rng, 0, 9),
             .T = 1 + (int64_t)tu_uniform(rng, 0, 6), .B = 1 + (int64_t)tu_uniform(rng, 0, 4),
             .states = g->states};
    rnnc_cell *cell[3] = {parse(g->text.p)};
    str *t = calloc(1, sizeof *t);
    assert_non_null(t);
    for (int s = 0; s < g->states; s++) {
        twin(g, body, s, t);
        cell[1 + s] = parse(t->p);
    }
    rnnc_model *m[4] = {make(cell[0], RNNC_BACKEND_CPU, r.I, r.H),
                        make(cell[0], RNNC_BACKEND_INTERP, r.I, r.H)};
    assert_int_equal(rnnc_model_backend(m[0]), RNNC_BACKEND_CPU);
    for (int s = 0; s < g->states; s++)
        m[2 + s] = make(cell[1 + s], RNNC_BACKEND_INTERP, r.I, r.H);
    tu_set_random_weights_on(m, 2 + g->states, rng, -0.6, 0.6);
    r.nx = (size_t)(r.T * r.B * r.I), r.ny = (size_t)(r.T * r.B * r.H), r.nh = (size_t)(r.B * r.H);
    r.x = alloc_f32(r.nx);
    tu_fill_f32(r.x, r.nx, rng, -1, 1);
    for (int k = 0; k < 2; k++) {
        r.init[k] = alloc_f32(r.nh);
        tu_fill_f32(r.init[k], r.nh, rng, -0.5, 0.5);
        r.init_p[k] = r.init[k];
    }
    float *y[2], *fin[2][2];
    for (int k = 0; k < 2; k++) {
        y[k] = alloc_f32(r.ny);
        fin[k][0] = alloc_f32(r.nh), fin[k][1] = alloc_f32(r.nh);
        forward(m[k], &r, y[k], fin[k]);
    }
    double fin_mag[2], y_mag = magnitude(m[2], &r, &fin_mag[0]);
    double e = max_diff(y[0], y[1], r.ny) / fmax(max_abs(y[1], r.ny), y_mag);
    for (int s = 0; s < g->states; s++) {
        if (s > 0)
            magnitude(m[2 + s], &r, &fin_mag[s]);
        double scale = fmax(max_abs(fin[1][s], r.nh), fin_mag[s]);
        e = fmax(e, max_diff(fin[0][s], fin[1][s], r.nh) / scale);
    }
    if (!(e <= 1e-5))
        fail_msg("cpu against interp: relative error %g (I=%lld H=%lld T=%lld B=%lld)\n%s", e,
                 (long long)r.I, (long long)r.H, (long long)r.T, (long long)r.B, g->text.p);
    for (int k = 0; k < 2; k++)
        free(y[k]), free(fin[k][0]), free(fin[k][1]), free(r.init[k]);
    free(r.x), free(t);
    for (int k = 0; k < 2 + g->states; k++)
        rnnc_model_destroy(m[k]);
    for (int k = 0; k < 1 + g->states; k++)
        rnnc_cell_destroy(cell[k]);
}

static void random_cells_cpu_against_interp(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    gen *g = calloc(1, sizeof *g);
    assert_non_null(g);
    g->rng = &rng;
    for (int i = 0; i < CELLS; i++) {
        size_t body;
        random_cell(g, i, &body);
        compare(g, body, &rng);
    }
    free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_cells_cpu_against_interp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
