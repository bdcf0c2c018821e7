/* test_parser.c: the .cell text format: what it builds (compared with the
 * same cell made through the C builder), attributes, chunk forms, and every
 * kind of malformed text, each failing with file:line:col and the text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frontend/frontend.h"
#include "testutil.h"

#define HEAD "cell t {\n    input x[H]\n    state h[H]\n"

static rnnc_status parse(rnnc_cell **c, const char *text, const char *attrs)
{
    return rnnc_cell_parse(c, text, strlen(text), "t.cell", NULL, attrs);
}

/* Parses `text`, which must fail with `want`, naming `where` and quoting `quote`. */
static void expect_error_n(const char *text, size_t len, rnnc_status want, const char *where,
                           const char *quote)
{
    rnnc_cell *c = (rnnc_cell *)1;
    rnnc_status s = rnnc_cell_parse(&c, text, len, "t.cell", NULL, NULL);
    const char *err = rnnc_last_error();
    if (s != want)
        fail_msg("status %s, want %s: %s", rnnc_status_string(s), rnnc_status_string(want), err);
    assert_null(c);
    if (where && !strstr(err, where))
        fail_msg("error '%s' does not name '%s'", err, where);
    if (quote && !strstr(err, quote))
        fail_msg("error '%s' does not quote '%s'", err, quote);
}

static void expect_error(const char *text, rnnc_status want, const char *where, const char *quote)
{
    expect_error_n(text, strlen(text), want, where, quote);
}

/* The declarations of HEAD made with the builder. */
static rnnc_cell *head_cell(rnnc_value *x, rnnc_value *h)
{
    rnnc_cell *c;
    assert_ok(rnnc_cell_create(&c, "t"));
    assert_ok(rnnc_cell_input(c, "x", "H", x));
    assert_ok(rnnc_cell_state(c, "h", "H", h));
    return c;
}

static void finish(rnnc_cell *c, rnnc_value h, rnnc_value y)
{
    assert_ok(rnnc_cell_set_next(c, h, y));
    assert_ok(rnnc_cell_set_output(c, y));
}

static void assert_same(rnnc_cell *parsed, rnnc_cell *built)
{
    if (!rnnc_cell_equal(parsed, built)) {
        char *a = NULL, *b = NULL;
        rnnc_cell_print(parsed, &a);
        rnnc_cell_print(built, &b);
        fprintf(stderr, "parsed:\n%s\nbuilt:\n%s\n", a ? a : "?", b ? b : "?");
        rnnc_free(a);
        rnnc_free(b);
        fail_msg("parsed cell differs from the built one");
    }
}

static void test_precedence(void **st)
{
    (void)st;
    rnnc_cell *p;
    assert_ok(parse(&p, HEAD "    y = -x * h + x - h / (x - h) - tanh(h)\n"
                             "    next h = y\n    output y\n}\n",
                    NULL));
    rnnc_value x, h, a, b, d, e, f, g, k, y;
    rnnc_cell *c = head_cell(&x, &h);
    assert_ok(rnnc_neg(c, x, &a));
    assert_ok(rnnc_mul(c, a, h, &b));   /* (-x) * h */
    assert_ok(rnnc_add(c, b, x, &d));   /* ... + x */
    assert_ok(rnnc_sub(c, x, h, &e));   /* (x - h) */
    assert_ok(rnnc_div(c, h, e, &f));   /* h / (x - h) */
    assert_ok(rnnc_sub(c, d, f, &g));   /* left-associative */
    assert_ok(rnnc_tanh(c, h, &k));
    assert_ok(rnnc_sub(c, g, k, &y));
    finish(c, h, y);
    assert_same(p, c);
    rnnc_cell_destroy(p);
    rnnc_cell_destroy(c);
}

static void test_numbers(void **st)
{
    (void)st;
    rnnc_cell *p;
    /* -2 is a constant, `one` a constant node made where it is written. */
    assert_ok(parse(&p, HEAD "    one = 1\n    y = (one - h) * -2.5e0 + x * .5\n"
                             "    next h = y\n    output y\n}\n",
                    NULL));
    rnnc_value x, h, one, a, m, b, q, r, y;
    rnnc_cell *c = head_cell(&x, &h);
    assert_ok(rnnc_cell_const(c, 1, &one));
    assert_ok(rnnc_sub(c, one, h, &a));
    assert_ok(rnnc_cell_const(c, -2.5, &m));
    assert_ok(rnnc_mul(c, a, m, &b));
    assert_ok(rnnc_cell_const(c, 0.5, &q));
    assert_ok(rnnc_mul(c, x, q, &r));
    assert_ok(rnnc_add(c, b, r, &y));
    finish(c, h, y);
    assert_same(p, c);
    rnnc_cell_destroy(p);
    rnnc_cell_destroy(c);
}

static void test_chunk_forms(void **st)
{
    (void)st;
    rnnc_cell *p;
    const char *text = "cell t {\n    input x[4H]\n    state h[H]\n"
                       "    a, _, b, cc = chunk(x, 4)\n"
                       "    d = chunk(x, 4)[1] + chunk(x, 2, 1)\n" /* 2H + 2H */
                       "    y = a * b + cc + chunk(d, 2)[0]\n"
                       "    next h = y\n    output y\n}\n";
    rnnc_value x, h, a, b, cc, d1, d, e, f, g, y;
    rnnc_cell *c;
    /* Shapes differ (H vs 2H): the parsed text must say so. */
    expect_error(text, RNNC_ERR_SHAPE, "t.cell:5:9", "chunk(x, 4)[1] + chunk(x, 2, 1)");

    text = "cell t {\n    input x[4H]\n    state h[H]\n"
           "    a, _, b, cc = chunk(x, 4)\n"
           "    d = chunk(x, 4)[1] + chunk(x, 4, 3)\n"
           "    y = a * b + cc + d\n"
           "    next h = y\n    output y\n}\n";
    assert_ok(parse(&p, text, NULL));
    assert_ok(rnnc_cell_create(&c, "t"));
    assert_ok(rnnc_cell_input(c, "x", "4H", &x));
    assert_ok(rnnc_cell_state(c, "h", "H", &h));
    assert_ok(rnnc_chunk(c, x, 4, 0, &a));
    assert_ok(rnnc_chunk(c, x, 4, 2, &b));
    assert_ok(rnnc_chunk(c, x, 4, 3, &cc));
    assert_ok(rnnc_chunk(c, x, 4, 1, &d1));
    assert_ok(rnnc_add(c, d1, cc, &d)); /* chunk(x, 4, 3) is cc again */
    assert_ok(rnnc_mul(c, a, b, &e));
    assert_ok(rnnc_add(c, e, cc, &f));
    assert_ok(rnnc_add(c, f, d, &g));
    y = g;
    finish(c, h, y);
    assert_same(p, c);
    rnnc_cell_destroy(p);
    rnnc_cell_destroy(c);
}

static const char *ln_text = "cell t {\n    attr eps = 1e-5\n    attr p = 0.25\n"
                             "    input x[H]\n    state h[H]\n    param g[H]\n"
                             "    y = dropout(layernorm(x + h, eps, g), p) * eps\n"
                             "    next h = y\n    output y\n}\n";

static rnnc_cell *ln_cell(double eps, double p)
{
    rnnc_value x, h, g, s, l, d, e, y;
    rnnc_cell *c;
    assert_ok(rnnc_cell_create(&c, "t"));
    assert_ok(rnnc_cell_input(c, "x", "H", &x));
    assert_ok(rnnc_cell_state(c, "h", "H", &h));
    assert_ok(rnnc_cell_param(c, "g", NULL, "H", &g));
    assert_ok(rnnc_add(c, x, h, &s));
    assert_ok(rnnc_layernorm(c, s, eps, g, RNNC_NONE, &l));
    assert_ok(rnnc_dropout(c, l, p, &d));
    assert_ok(rnnc_cell_const(c, eps, &e));
    assert_ok(rnnc_mul(c, d, e, &y));
    finish(c, h, y);
    return c;
}

static void test_attrs(void **st)
{
    (void)st;
    rnnc_cell *p, *c;
    assert_ok(parse(&p, ln_text, NULL));
    c = ln_cell(1e-5, 0.25);
    assert_same(p, c);
    rnnc_cell_destroy(p);
    rnnc_cell_destroy(c);

    assert_ok(parse(&p, ln_text, " eps = 0 , p=0.5"));
    c = ln_cell(0, 0.5);
    assert_same(p, c);
    rnnc_cell_destroy(p);
    rnnc_cell_destroy(c);

    p = (rnnc_cell *)1;
    assert_status(parse(&p, ln_text, "eps=0,foo=2"), RNNC_ERR_INVALID_ARG);
    assert_null(p);
    assert_non_null(strstr(rnnc_last_error(), "foo"));
    assert_status(parse(&p, ln_text, "eps"), RNNC_ERR_INVALID_ARG);
    assert_status(parse(&p, ln_text, "eps=abc"), RNNC_ERR_INVALID_ARG);
    assert_non_null(strstr(rnnc_last_error(), "abc"));
    assert_status(parse(&p, ln_text, "eps=1,eps=2"), RNNC_ERR_INVALID_ARG);
    assert_status(parse(&p, ln_text, "=1"), RNNC_ERR_INVALID_ARG);
    /* An attr is a number: usable where one is required. */
    assert_ok(parse(&p, "cell t {\n attr n = 2\n input x[2H]\n state h[H]\n"
                        " a, b = chunk(x, n)\n next h = a * b\n output h\n}\n",
                    NULL));
    rnnc_cell_destroy(p);
}

/* Every non-leaf op of ops.def but the backward-only ones has a function;
 * a cell using all of them prints and parses back to itself. */
static void test_every_op(void **st)
{
    (void)st;
    for (int op = 0; op < IR_NUM_OPS; op++)
        if (!(ir_ops[op].flags & (IR_F_LEAF | IR_F_GRAD)) && !fe_has_function(ir_ops[op].name))
            fail_msg("op '%s' has no .cell function", ir_ops[op].name);
    const char *text =
        "cell every {\n  input x[H]\n  state h[H]\n  state s[1]\n  param w[H, 2H]\n"
        "  param g[H] optional\n  param b[H]\n"
        "  u = concat(x, h)\n  v = linear(u, w)\n"
        "  a = add(v, b) + sub(x, h) - mul(x, 2) * div(h, 3) / neg(x)\n"
        "  z = sigmoid(a) + tanh(a) + relu(a) + exp(a) + log(a) + sqrt(a) + rsqrt(a)\n"
        "  n1 = layernorm(z, 1e-5, g, b) + layernorm(z, 0) + layernorm(z, 0.1, none, b)\n"
        "  k = dropout(n1, 0.3) + dropout(n1, 0.3)\n"
        "  r = sum(k) + mean(k) + s\n"
        "  c1, c2 = chunk(concat(k, x), 2)\n"
        "  next h = c1 * c2 + chunk(concat(k, k, k, k), 4, 3)\n  next s = r\n  output h\n}\n";
    rnnc_cell *p, *q;
    char *t1, *t2;
    assert_ok(rnnc_cell_parse(&p, text, strlen(text), "every.cell", NULL, NULL));
    assert_ok(rnnc_cell_verify(p));
    assert_ok(rnnc_cell_print(p, &t1));
    assert_ok(rnnc_cell_parse(&q, t1, strlen(t1), "printed", NULL, NULL));
    if (!rnnc_cell_equal(p, q))
        fail_msg("print/parse round trip differs:\n%s", t1);
    assert_ok(rnnc_cell_print(q, &t2));
    assert_string_equal(t1, t2);
    assert_int_equal(rnnc_cell_state_count(p), 2);
    assert_int_equal(rnnc_cell_param_count(p), 3);
    rnnc_free(t1);
    rnnc_free(t2);
    rnnc_cell_destroy(p);
    rnnc_cell_destroy(q);
}

static void test_files_of_cells(void **st)
{
    (void)st;
    const char *text = "# two cells\n\ncell a {\n input x[H]; state h[H]\n next h = x\n output h\n}\n"
                       "cell b\n{\n input x[H]\n state h[H]\n next h = tanh(x + h)\n"
                       " output h\n}";
    rnnc_cell *c;
    assert_ok(rnnc_cell_parse(&c, text, strlen(text), "two.cell", NULL, NULL));
    assert_string_equal(rnnc_cell_name(c), "a");
    rnnc_cell_destroy(c);
    assert_ok(rnnc_cell_parse(&c, text, strlen(text), "two.cell", "b", NULL));
    assert_string_equal(rnnc_cell_name(c), "b");
    rnnc_cell_destroy(c);
    c = (rnnc_cell *)1;
    assert_status(rnnc_cell_parse(&c, text, strlen(text), "two.cell", "zz", NULL),
                  RNNC_ERR_NOT_FOUND);
    assert_null(c);
    assert_non_null(strstr(rnnc_last_error(), "zz"));
    assert_status(rnnc_cell_parse(NULL, text, 4, NULL, NULL, NULL), RNNC_ERR_INVALID_ARG);
    assert_status(rnnc_cell_parse(&c, NULL, 4, NULL, NULL, NULL), RNNC_ERR_INVALID_ARG);
    /* Keywords are ordinary names where they are assigned to. */
    assert_ok(parse(&c, HEAD "    output = x * h\n    next = output\n    next h = next\n"
                             "    output next\n}\n", NULL));
    rnnc_cell_destroy(c);
    /* A statement may continue inside brackets; CRLF line ends; a BOM. */
    assert_ok(parse(&c, "\xEF\xBB\xBF" "cell t {\r\n input x[H]\r\n state h[H]\r\n y = tanh(x +\r\n"
                        "      h)  # é comment\r\n next h = y\r\n output y\r\n}\r\n",
                    NULL));
    rnnc_cell_destroy(c);
}

static void test_errors_names(void **st)
{
    (void)st;
    expect_error(HEAD "    y = sigmoud(x)\n    next h = y\n    output y\n}\n", RNNC_ERR_PARSE,
                 "t.cell:4:9", "unknown op 'sigmoud'");
    expect_error(HEAD "    y = x + hh\n    next h = y\n    output y\n}\n", RNNC_ERR_PARSE,
                 "t.cell:4:13", "undefined name 'hh'");
    expect_error(HEAD "    y = x\n    y = h\n    next h = y\n    output y\n}\n", RNNC_ERR_PARSE,
                 "t.cell:5:5", "'y' is defined twice (first at line 4");
    expect_error(HEAD "    x = h\n    next h = x\n    output x\n}\n", RNNC_ERR_PARSE,
                 "t.cell:4:5", "'x' is defined twice");
    expect_error(HEAD "    a, a = chunk(x, 2)\n}\n", RNNC_ERR_PARSE, "t.cell:4:8", "'a'");
    expect_error(HEAD "    y = y + x\n}\n", RNNC_ERR_PARSE, "t.cell:4:9",
                 "'y' is used in its own definition");
    expect_error(HEAD "    next x = h\n    output h\n}\n", RNNC_ERR_PARSE, "t.cell:4:10",
                 "'x' is not a state");
    expect_error(HEAD "    next h = x\n    next h = x\n    output h\n}\n", RNNC_ERR_PARSE,
                 "t.cell:5:10", "'next h' is given twice");
    expect_error(HEAD "    next h = x\n    output h\n    output x\n}\n", RNNC_ERR_PARSE,
                 "t.cell:6:5", "'output' is given twice");
    expect_error(HEAD "    next h = x\n}\n", RNNC_ERR_PARSE, "t.cell:5:1", "no 'output'");
    expect_error(HEAD "    state c[H]\n    next h = x\n    output h\n}\n", RNNC_ERR_PARSE,
                 "t.cell:4:11", "state 'c' is never updated");
    expect_error(HEAD "    y = none\n}\n", RNNC_ERR_PARSE, "t.cell:4:9", "'none'");
    expect_error("cell a {\n input x[H]\n state h[H]\n next h = x\n output h\n}\n"
                 "cell a {\n input x[H]\n state h[H]\n next h = x\n output h\n}\n",
                 RNNC_ERR_PARSE, "t.cell:7:6", "cell 'a' is defined twice");
}

static void test_errors_shapes(void **st)
{
    (void)st;
    expect_error("cell t {\n    input x[I]\n    state h[H]\n    y = x + h\n    next h = y\n"
                 "    output y\n}\n",
                 RNNC_ERR_SHAPE, "t.cell:4:9", "'x + h'");
    expect_error("cell t {\n    input x[I]\n    state h[H]\n    param w[4H, H]\n"
                 "    y = linear(x, w)\n}\n",
                 RNNC_ERR_SHAPE, "t.cell:5:9", "'linear(x, w)'");
    expect_error(HEAD "    y = linear(x, h)\n}\n", RNNC_ERR_SHAPE, "t.cell:4:9", "linear(x, h)");
    expect_error(HEAD "    next h = concat(x, h)\n    output h\n}\n", RNNC_ERR_SHAPE, "t.cell:4:5",
                 "next h = concat(x, h)");
    expect_error(HEAD "    a, b, c = chunk(x, 3)\n}\n", RNNC_ERR_SHAPE, "t.cell:4:15",
                 "chunk(x, 3)");
    expect_error(HEAD "    a = chunk(x, 3)[2]\n}\n", RNNC_ERR_SHAPE, "t.cell:4:9", "chunk(x, 3)");
    expect_error(HEAD "    param w[4Q, H]\n}\n", RNNC_ERR_SHAPE, "t.cell:4:5", "param w[4Q, H]");
    expect_error(HEAD "    param w[H, H]\n    output w\n    next h = x\n}\n", RNNC_ERR_SHAPE,
                 "t.cell:5:5", "output w");
}

static void test_errors_calls(void **st)
{
    (void)st;
    expect_error(HEAD "    y = sigmoid(x, h)\n}\n", RNNC_ERR_PARSE, "t.cell:4:9",
                 "sigmoid takes 1 argument, got 2");
    expect_error(HEAD "    y = linear(x)\n}\n", RNNC_ERR_PARSE, "t.cell:4:9",
                 "linear takes 2 arguments, got 1");
    expect_error(HEAD "    y = layernorm(x)\n}\n", RNNC_ERR_PARSE, "t.cell:4:9", "layernorm takes");
    expect_error(HEAD "    y = layernorm(x, h)\n}\n", RNNC_ERR_PARSE, "t.cell:4:22",
                 "layernorm's eps must be a number or an attr, got 'h'");
    expect_error(HEAD "    y = dropout(x, 1 + 1)\n}\n", RNNC_ERR_PARSE, "t.cell:4:20", "'1 + 1'");
    expect_error(HEAD "    y = tanh()\n}\n", RNNC_ERR_PARSE, "t.cell:4:9", "got 0");
    expect_error(HEAD "    a, b = chunk(x, 1.5)\n}\n", RNNC_ERR_PARSE, "t.cell:4:21", "1.5");
    expect_error(HEAD "    a, b = chunk(x, 4)\n}\n", RNNC_ERR_PARSE, "t.cell:4:12",
                 "2 names but 'chunk(x, 4)' gives 4 values");
    expect_error(HEAD "    a, b = tanh(x)\n}\n", RNNC_ERR_PARSE, "t.cell:4:12", "'tanh(x)'");
    expect_error(HEAD "    a = chunk(x, 2)\n}\n", RNNC_ERR_PARSE, "t.cell:4:9",
                 "'chunk(x, 2)' gives 2 values");
    expect_error(HEAD "    a = chunk(x, 2)[2]\n}\n", RNNC_ERR_PARSE, "t.cell:4:21",
                 "chunk index 2 out of range");
    expect_error(HEAD "    a = x[0]\n}\n", RNNC_ERR_PARSE, "t.cell:4:10", "only chunk");
    expect_error(HEAD "    a = (x + h\n}\n", RNNC_ERR_PARSE, "t.cell:5:1", "expected ')'");
}

static void test_errors_structure(void **st)
{
    (void)st;
    expect_error("", RNNC_ERR_PARSE, "t.cell:1:1", "no cell");
    expect_error("# only a comment\n\n", RNNC_ERR_PARSE, "t.cell:3:1", "no cell");
    expect_error(HEAD "    next h = x\n    output h\n", RNNC_ERR_PARSE, "t.cell:1:1",
                 "unterminated block: cell 't'");
    expect_error("cell t {\n    input x[H\n    state h[H]\n}\n", RNNC_ERR_PARSE, "t.cell:2:12",
                 "unterminated '['");
    expect_error("cell t {\n    input x[]\n}\n", RNNC_ERR_PARSE, "t.cell:2:13", "empty dimension");
    expect_error("cell t {\n    input x[H, I]\n}\n", RNNC_ERR_PARSE, "t.cell:2:11", "one dim");
    expect_error("cell t {\n    param w[H, I, H]\n}\n", RNNC_ERR_PARSE, "t.cell:2:17", "','");
    expect_error("cell t {\n    input x[H] $\n}\n", RNNC_ERR_PARSE, "t.cell:2:16",
                 "unexpected character '$'");
    expect_error("cell t {\n    input x[H] y\n}\n", RNNC_ERR_PARSE, "t.cell:2:16",
                 "unexpected 'y' after the statement");
    expect_error("cell t {\n    sigmoid x\n}\n", RNNC_ERR_PARSE, "t.cell:2:13", "expected '='");
    expect_error("cellar t {\n}\n", RNNC_ERR_PARSE, "t.cell:1:1", "expected 'cell NAME {'");
    expect_error("cell t {\n  input x[H]\n  cell u {\n", RNNC_ERR_PARSE, "t.cell:3:3",
                 "'cell' inside cell 't'");
    expect_error("cell t {\n  y = 1e999\n}\n", RNNC_ERR_PARSE, "t.cell:2:7", "out of range");
    expect_error("cell t {\n  y = 3\n} x\n", RNNC_ERR_PARSE, "t.cell:3:3", "after the cell's '}'");
    expect_error("cell t {\n  y = é\n}\n", RNNC_ERR_PARSE, "t.cell:2:7", "'é'");
}

static void test_errors_bytes(void **st)
{
    (void)st;
    expect_error("cell t {\n  # caf\xe9 latin-1\n}\n", RNNC_ERR_PARSE, "t.cell:2:8",
                 "invalid UTF-8 byte 0xe9 at byte offset 16");
    expect_error("cell t {\n  x\xff\n}\n", RNNC_ERR_PARSE, "t.cell:2:4", "byte offset 12");
    expect_error("cell t {\n  # \xed\xa0\x80 surrogate\n}\n", RNNC_ERR_PARSE, "t.cell:2:5",
                 "0xed");
    expect_error("cell t {\n  # \xc0\xaf overlong\n}\n", RNNC_ERR_PARSE, "t.cell:2:5", "0xc0");
    expect_error("cell t {\n  # cut \xe2\x82", RNNC_ERR_PARSE, "t.cell:2:9", "0xe2");
    expect_error_n("cell t {\n  \0\n}\n", 14, RNNC_ERR_PARSE, "t.cell:2:3",
                   "NUL byte at byte offset 11");
}

static char *repeat(const char *prefix, const char *unit, size_t times, const char *suffix)
{
    size_t a = strlen(prefix), u = strlen(unit), z = strlen(suffix);
    char *s = malloc(a + u * times + z + 1);
    assert_non_null(s);
    memcpy(s, prefix, a);
    for (size_t i = 0; i < times; i++)
        memcpy(s + a + i * u, unit, u);
    memcpy(s + a + u * times, suffix, z + 1);
    return s;
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A megabyte on one line: parsed in linear time, or refused clearly. */
static void test_huge_lines(void **st)
{
    (void)st;
    const size_t mb = 1 << 20;
    double t0 = seconds();
    rnnc_cell *c;
    char *s = repeat(HEAD "    # ", "x", mb, "\n    next h = x\n    output h\n}\n");
    assert_ok(parse(&c, s, NULL));
    rnnc_cell_destroy(c);
    free(s);

    s = repeat(HEAD "    y = x", " + x", mb / 4, "\n    next h = y\n    output y\n}\n");
    assert_ok(parse(&c, s, NULL));
    rnnc_cell_destroy(c);
    free(s);

    s = repeat(HEAD "    y = ", "a", mb, "\n}\n");
    expect_error(s, RNNC_ERR_PARSE, "t.cell:4:9", "name longer than 256");
    free(s);

    s = repeat(HEAD "    y = ", "(", mb, "x\n}\n");
    expect_error(s, RNNC_ERR_PARSE, "t.cell:4:", "nested more than");
    free(s);

    s = repeat(HEAD "    y = ", "-", mb, "x\n}\n");
    expect_error(s, RNNC_ERR_PARSE, "t.cell:4:", "nested more than");
    free(s);

    s = repeat(HEAD "    y = ", "1", mb, "\n}\n");
    expect_error(s, RNNC_ERR_PARSE, "t.cell:4:9", "number too long");
    free(s);

    /* 100k names in one tuple: the name table must not be quadratic. */
    size_t n = 100000, cap = n * 10 + 256, len = 0;
    s = malloc(cap);
    assert_non_null(s);
    len += (size_t)snprintf(s, cap, "cell t {\n input x[%zuH]\n state h[H]\n ", n);
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "%sa%zu", i ? "," : "", i);
    snprintf(s + len, cap - len, " = chunk(x, %zu)\n next h = a7\n output a99999\n}\n", n);
    assert_ok(parse(&c, s, NULL));
    assert_int_equal(rnnc_cell_state_count(c), 1);
    rnnc_cell_destroy(c);
    free(s);
    double dt = seconds() - t0;
    if (dt > 30)
        fail_msg("huge lines took %.1f s: something is quadratic", dt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_precedence),      cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_chunk_forms),     cmocka_unit_test(test_attrs),
        cmocka_unit_test(test_every_op),        cmocka_unit_test(test_files_of_cells),
        cmocka_unit_test(test_errors_names),    cmocka_unit_test(test_errors_shapes),
        cmocka_unit_test(test_errors_calls),    cmocka_unit_test(test_errors_structure),
        cmocka_unit_test(test_errors_bytes),    cmocka_unit_test(test_huge_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
