/*
 * cmd_compare.c: `rnnc compare`, every backend asked for on ONE set of
 * seeded random weights and inputs: its forward time and its agreement
 * with the interpreter and with cuDNN.  A backend that cannot run here
 * gets a row saying why; it does not stop the others.
 */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "tools/cmd_compare.h"

static const char compare_help[] =
    "Usage: rnnc compare --cell lstm --seq T --batch B --input-size I --hidden-size H\n"
    "                    [--layers L --bidirectional --proj-size P --lengths random[:MIN]]\n"
    "                    [--backends fused,cudnn,cpu,interp,auto] [--seed S]\n"
    "                    [--warmup N --iters N] [--json FILE] [--quiet]\n"
    "\n"
    "Makes random weights (uniform(-1/sqrt(H), 1/sqrt(H)), as PyTorch) and inputs from\n"
    "--seed, runs every backend on that same data, and prints: the median forward time\n"
    "(CUDA events on a GPU, which time the computation only; a monotonic clock on the CPU),\n"
    "the speed relative to cuDNN, and max|out - ref| / max|ref| over y and the final states\n"
    "against the interpreter and against cuDNN.  The interpreter is timed on one run.\n"
    "With --training each backend runs a training step instead: a training forward plus\n"
    "its backward on the same seeded dy and final-state gradients, timed together, and\n"
    "the gradients (dx, the initial states' and every weight's) are compared too.\n"
    "The references (interp, then cudnn) run first; each row is printed as soon as it\n"
    "is known, and on a terminal a line on stderr says what runs when a step takes\n"
    "more than a second.\n"
    "\n"
    "  --seq T                 sequence length\n"
    "  --batch B               batch size\n"
    "  --backends LIST         comma-separated (default fused,cudnn,cpu,interp); auto\n"
    "                          is what a model made with AUTO picks (its row names the\n"
    "                          backend that ran: with autotuning on, the faster of fused\n"
    "                          and cudnn for the shape, timed once and recorded)\n"
    "  --lengths full|random[:MIN]  all sequences of length T (default) or random in\n"
    "                          [MIN, T] (MIN 1 unless given)\n"
    "  --warmup N              untimed runs first (default 5)\n"
    "  --iters N               timed runs (default 20)\n"
    "  --json FILE             also write the table, with machine details, as JSON\n"
    "  --quiet                 no progress line on stderr\n"
    "\n";

enum {
    OPT_SEQ = CLI_OPT_FIRST_OWN,
    OPT_BATCH,
    OPT_BACKENDS,
    OPT_LENGTHS,
    OPT_WARMUP,
    OPT_ITERS,
    OPT_JSON,
    OPT_QUIET
};

static bool parse_backends(cli_compare *c, const char *list)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    c->n_rows = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        rnnc_backend b;
        if (rnnc_backend_from_name(t, &b) != RNNC_OK) {
            cli_usage("compare", "--backends wants fused, cudnn, cpu, interp or auto, not '%s'",
                      t);
            return false;
        }
        if (c->n_rows == CLI_MAX_BACKENDS) {
            cli_usage("compare", "--backends lists too many backends");
            return false;
        }
        c->rows[c->n_rows++].backend = b;
    }
    if (c->n_rows == 0)
        cli_usage("compare", "--backends names no backend");
    return c->n_rows > 0;
}

static bool own_option(void *args, int id, const char *arg)
{
    cli_compare *c = args;
    if (id == CLI_OPT_BACKEND) {
        cli_usage("compare", "use --backends LIST to choose the backends");
        return false;
    }
    int64_t v;
    switch (id) {
    case OPT_SEQ: return cli_int("compare", "seq", arg, 1, INT32_MAX, &c->T);
    case OPT_BATCH: return cli_int("compare", "batch", arg, 1, INT32_MAX, &c->B);
    case OPT_BACKENDS: return parse_backends(c, arg);
    case OPT_LENGTHS:
        c->min_length = strcmp(arg, "full") == 0 ? 0 : strcmp(arg, "random") == 0 ? 1 : -1;
        if (c->min_length < 0 && strncmp(arg, "random:", 7) == 0)
            return cli_int("compare", "lengths", arg + 7, 1, INT32_MAX, &c->min_length);
        if (c->min_length < 0) {
            cli_usage("compare", "--lengths wants full or random, not '%s'", arg);
            return false;
        }
        return true;
    case OPT_WARMUP:
        if (!cli_int("compare", "warmup", arg, 0, 100000, &v))
            return false;
        c->warmup = (int)v;
        return true;
    case OPT_ITERS:
        if (!cli_int("compare", "iters", arg, 1, 100000, &v))
            return false;
        c->iters = (int)v;
        return true;
    case OPT_JSON: c->json = arg; return true;
    case OPT_QUIET: c->quiet = true; return true;
    default: return cli_model_opt(&c->m, "compare", id, arg);
    }
}

static int parse(int argc, char **argv, cli_compare *c)
{
    static const struct option opts[] = {
        CLI_MODEL_OPTIONS,
        {"seq", required_argument, NULL, OPT_SEQ},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"backends", required_argument, NULL, OPT_BACKENDS},
        {"lengths", required_argument, NULL, OPT_LENGTHS},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"iters", required_argument, NULL, OPT_ITERS},
        {"json", required_argument, NULL, OPT_JSON},
        {"quiet", no_argument, NULL, OPT_QUIET},
        {NULL, 0, NULL, 0},
    };
    cli_model_opts_init(&c->m, "lstm");
    c->m.seed = 1;
    c->warmup = 5, c->iters = 20;
    parse_backends(c, "fused,cudnn,cpu,interp");
    static const cli_command cmd = {"compare", compare_help, true, "h", opts, own_option};
    int rc = cli_parse(&cmd, argc, argv, c);
    if (rc >= 0)
        return rc;
    if (!c->T || !c->B || !c->m.input_size || !c->m.hidden_size)
        return cli_usage("compare", "--seq, --batch, --input-size and --hidden-size are needed");
    return -1;
}

/* Creates, binds, runs once for the outputs, then times (the interpreter:
 * that one run, on the host clock, as it is slow). */
static rnnc_status run_row(cli_compare *c, const rnnc_cell *cell, rnnc_hoist hoist,
                           const rnnc_tensors *w, const cli_io *in, cli_compare_row *r)
{
    rnnc_model *m = NULL;
    rnnc_status s = cli_model_create(&c->m, cell, hoist, r->backend, &m);
    if (s == RNNC_OK)
        s = rnnc_model_set_weights(m, w);
    if (s == RNNC_OK)
        s = cli_io_alloc(&r->io, m, cell, &c->m, c->T, c->B);
    if (s != RNNC_OK)
        goto destroy;
    cli_io_copy_inputs(&r->io, in);
    if (c->m.training) {
        s = cli_train_row(c, m, r);
        if (s == RNNC_OK && r->backend == RNNC_BACKEND_CUDNN)
            s = rnnc_model_cudnn_algo(m, &r->algo);
        goto destroy;
    }
    rnnc_forward_args a = cli_io_args(&r->io, c->m.training);
    double t0 = cm_now_ms();
    s = rnnc_model_forward(m, &a);
    r->ms = cm_now_ms() - t0;
    r->runs = 1;
    if (s == RNNC_OK)
        cli_io_finish(&r->io);
    if (s == RNNC_OK && r->backend != RNNC_BACKEND_INTERP) {
        s = rnnc_model_time_forward(m, &a, c->warmup, c->iters, &r->ms);
        r->runs = c->iters;
    }
    /* With --cudnn-algo auto cuDNN ran the fastest eligible algorithm. */
    if (s == RNNC_OK && r->backend == RNNC_BACKEND_CUDNN)
        s = rnnc_model_cudnn_algo(m, &r->algo);
destroy:
    r->ran = m ? rnnc_model_backend(m) : r->backend;
    rnnc_model_destroy(m);
    return s;
}

static const cli_compare_row *find_row(const cli_compare *c, rnnc_backend b)
{
    for (int i = 0; i < c->n_rows; i++)
        if (c->rows[i].backend == b && c->rows[i].done && c->rows[i].status == RNNC_OK)
            return &c->rows[i];
    return NULL;
}

static void errors(cli_compare *c)
{
    const cli_compare_row *ri = find_row(c, RNNC_BACKEND_INTERP);
    const cli_compare_row *rc = find_row(c, RNNC_BACKEND_CUDNN);
    for (int i = 0; i < c->n_rows; i++) {
        cli_compare_row *r = &c->rows[i];
        bool ok = r->done && r->status == RNNC_OK;
        r->err_interp = ok && ri && ri != r ? cli_io_rel_err(&r->io, &ri->io) : NAN;
        r->err_cudnn = ok && rc && rc != r ? cli_io_rel_err(&r->io, &rc->io) : NAN;
        bool train = ok && c->m.training;
        r->gerr_interp = train && ri && ri != r ? cli_train_rel_err(c, r, ri) : NAN;
        r->gerr_cudnn = train && rc && rc != r ? cli_train_rel_err(c, r, rc) : NAN;
    }
}

/* The shared data: weights from an interpreter model of the same shape. */
static rnnc_status make_data(cli_compare *c, const rnnc_cell *cell, rnnc_hoist hoist,
                             rnnc_tensors *w, cli_io *in)
{
    rnnc_model *m = NULL;
    cli_rng rng = {c->m.seed};
    rnnc_status s = cli_model_create(&c->m, cell, hoist, RNNC_BACKEND_INTERP, &m);
    if (s == RNNC_OK)
        s = cli_random_weights(m, c->m.hidden_size, &rng, w);
    if (s == RNNC_OK)
        s = cli_io_alloc(in, m, cell, &c->m, c->T, c->B);
    if (s == RNNC_OK)
        s = cli_random_inputs(in, cell, &rng, false, c->min_length, NULL);
    if (s == RNNC_OK && c->m.training)
        s = cli_train_inputs(c, in, &rng);
    rnnc_model_destroy(m);
    return s;
}

static bool is_reference(rnnc_backend b)
{
    return b == RNNC_BACKEND_INTERP || b == RNNC_BACKEND_CUDNN;
}

/* interp, then cudnn, then the rest as listed: a row's errors and speed are
 * known once it and the references have run. */
static void run_order(const cli_compare *c, int *order)
{
    int n = 0;
    static const rnnc_backend refs[] = {RNNC_BACKEND_INTERP, RNNC_BACKEND_CUDNN};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < c->n_rows; i++)
            if (c->rows[i].backend == refs[k])
                order[n++] = i;
    for (int i = 0; i < c->n_rows; i++)
        if (!is_reference(c->rows[i].backend))
            order[n++] = i;
}

/* Row i has run, and so has every reference. */
static bool printable(const cli_compare *c, int i)
{
    for (int k = 0; k < c->n_rows; k++)
        if (!c->rows[k].done && (k == i || is_reference(c->rows[k].backend)))
            return false;
    return true;
}

static bool unavailable(rnnc_status s)
{
    return s == RNNC_ERR_NOT_BUILT || s == RNNC_ERR_NO_DEVICE || s == RNNC_ERR_UNSUPPORTED;
}

static rnnc_status compare(cli_compare *c)
{
    rnnc_cell *cell = NULL;
    rnnc_tensors *w = NULL;
    cli_io in = {0};
    rnnc_hoist hoist;
    rnnc_status s = cli_load_cell(&c->m, &cell, &hoist), worst = RNNC_OK;
    if (s != RNNC_OK)
        return s;
    c->cell_name = rnnc_cell_name(cell);
    if ((s = rnnc_tensors_create(&w)) || (s = make_data(c, cell, hoist, w, &in)))
        goto free_all;
    cli_progress_enable(c->quiet);
    cli_compare_print_header(c);
    int order[CLI_MAX_BACKENDS], printed = 0;
    run_order(c, order);
    for (int k = 0; k < c->n_rows; k++) {
        cli_compare_row *r = &c->rows[order[k]];
        char what[96];
        snprintf(what, sizeof what, "rnnc compare: %s (%d of %d)", rnnc_backend_name(r->backend),
                 k + 1, c->n_rows);
        cli_progress_begin(what);
        r->status = run_row(c, cell, hoist, w, &in, r);
        cli_progress_end();
        r->done = true;
        if (r->status != RNNC_OK)
            snprintf(r->why, sizeof r->why, "%s", cli_detail());
        if (r->status != RNNC_OK && !unavailable(r->status))
            worst = r->status;
        errors(c);
        while (printed < c->n_rows && printable(c, printed))
            cli_compare_print_row(c, printed++);
    }
    cli_compare_print_footer(c);
    if (c->json)
        s = cli_compare_json(c, c->json);
    if (s == RNNC_OK && worst != RNNC_OK)
        s = cli_error(worst, "a backend failed (see its row)");
free_all:
    for (int i = 0; i < c->n_rows; i++) {
        cli_io_free(&c->rows[i].io);
        cli_grads_free(&c->rows[i].grad);
    }
    cli_grads_free(&c->grad_in);
    cli_io_free(&in);
    rnnc_tensors_destroy(w);
    rnnc_cell_destroy(cell);
    return s;
}

int cmd_compare(int argc, char **argv)
{
    static cli_compare c; /* large: rows hold their buffers' descriptions */
    memset(&c, 0, sizeof c);
    int rc = parse(argc, argv, &c);
    if (rc >= 0)
        return rc;
    const cli_path out[] = {{"--json", c.json}}, in[] = {{"--cell", c.m.cell}};
    rnnc_status s = cli_check_outputs(out, 1, in, 1);
    if (s == RNNC_OK)
        s = compare(&c);
    return s == RNNC_OK ? 0 : cli_fail(s);
}
