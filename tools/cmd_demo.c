/*
 * cmd_demo.c: `rnnc demo`, the first thing a new user runs: an LSTM over a
 * random sequence on the best backend this machine has, saying what ran,
 * why (when there is no GPU), how long it took, and that it agrees with
 * the reference interpreter.
 */
#include <math.h>
#include <string.h>

#include "tools/cli.h"

static const char demo_help[] =
    "Usage: rnnc demo [--backend B] [--seed S] [--device N]\n"
    "\n"
    "Runs an LSTM (T=50, B=8, I=H=128, random weights) on the best backend available\n"
    "(fused on a GPU, else cuDNN, else the CPU, else the interpreter), prints what it did\n"
    "and checks the result against the reference interpreter.\n";

enum { DEMO_T = 50, DEMO_B = 8, DEMO_H = 128 };

/* A model of the demo's shape with `w` bound; its io with the shared inputs. */
static rnnc_status make(const cli_model_opts *o, const rnnc_cell *cell, rnnc_backend b,
                        const rnnc_tensors *w, const cli_io *in, rnnc_model **m, cli_io *io)
{
    rnnc_status s = cli_model_create(o, cell, RNNC_HOIST_ALL, b, m);
    if (s == RNNC_OK && w)
        s = rnnc_model_set_weights(*m, w);
    if (s == RNNC_OK)
        s = cli_io_alloc(io, *m, cell, o, DEMO_T, DEMO_B);
    if (s == RNNC_OK && in)
        cli_io_copy_inputs(io, in);
    return s;
}

/* Why the GPU backends (and the CPU one) were passed over, as the library says. */
static void explain(const cli_model_opts *o, const rnnc_cell *cell, rnnc_backend ran)
{
    static const rnnc_backend better[] = {RNNC_BACKEND_FUSED, RNNC_BACKEND_CUDNN,
                                          RNNC_BACKEND_CPU};
    for (size_t i = 0; i < sizeof better / sizeof better[0] && better[i] != ran; i++) {
        rnnc_model *m = NULL;
        rnnc_status s = cli_model_create(o, cell, RNNC_HOIST_ALL, better[i], &m);
        rnnc_model_destroy(m);
        printf("  not %-6s  %s\n", rnnc_backend_name(better[i]),
               s == RNNC_OK ? "(usable, but not chosen)" : cli_detail());
    }
    if (ran == RNNC_BACKEND_CPU || ran == RNNC_BACKEND_INTERP)
        printf("  No GPU backend can run here, so this ran on the CPU (%s backend).\n",
               rnnc_backend_name(ran));
}

static void checksum(const cli_io *io)
{
    double sum = 0, abs_sum = 0;
    for (int64_t i = 0; i < cli_y_numel(io); i++) {
        sum += io->y[i];
        abs_sum += fabs(io->y[i]);
    }
    printf("output:   y [%d, %d, %lld]  checksum sum=%.6f sum|y|=%.6f\n", DEMO_T, DEMO_B,
           (long long)io->y_feat, sum, abs_sum);
}

/* Runs `m`, times it, and checks it against the interpreter. */
static rnnc_status demo_run(const cli_model_opts *o, const rnnc_cell *cell, rnnc_model *m,
                            cli_io *io, const rnnc_tensors *w)
{
    rnnc_forward_args a = cli_io_args(io, false);
    rnnc_status s = rnnc_model_forward(m, &a);
    double ms = 0;
    bool interp = rnnc_model_backend(m) == RNNC_BACKEND_INTERP;
    int iters = interp ? 1 : 20;
    if (s == RNNC_OK)
        s = rnnc_model_time_forward(m, &a, interp ? 0 : 3, iters, &ms);
    if (s != RNNC_OK)
        return s;
    printf("forward:  %.3f ms (median of %d run%s)\n", ms, iters, iters == 1 ? "" : "s");
    checksum(io);
    if (interp)
        return RNNC_OK;
    rnnc_model *ref = NULL;
    cli_io rio = {0};
    s = make(o, cell, RNNC_BACKEND_INTERP, w, io, &ref, &rio);
    rnnc_forward_args ra = cli_io_args(&rio, false);
    if (s == RNNC_OK)
        s = rnnc_model_forward(ref, &ra);
    if (s == RNNC_OK)
        printf("check:    max relative error against the reference interpreter %.2e\n",
               cli_io_rel_err(io, &rio));
    cli_io_free(&rio);
    rnnc_model_destroy(ref);
    return s;
}

static rnnc_status demo(cli_model_opts *o)
{
    rnnc_cell *cell = NULL;
    rnnc_model *m = NULL;
    rnnc_tensors *w = NULL;
    cli_io io = {0};
    cli_rng rng = {o->seed};
    rnnc_status s = rnnc_cell_builtin(&cell, "lstm", NULL);
    if (s != RNNC_OK)
        return s;
    if ((s = rnnc_tensors_create(&w)) || (s = make(o, cell, o->backend, NULL, NULL, &m, &io)) ||
        (s = cli_random_weights(m, DEMO_H, &rng, w)) || (s = rnnc_model_set_weights(m, w)) ||
        (s = cli_random_inputs(&io, cell, &rng, false, false, NULL)))
        goto free_all;
    rnnc_backend ran = rnnc_model_backend(m);
    printf("rnnc %s demo: an LSTM (nn.LSTM semantics), 1 layer, T=%d B=%d I=%d H=%d,\n"
           "          random weights and inputs (seed %llu)\n",
           rnnc_version_string(), DEMO_T, DEMO_B, DEMO_H, DEMO_H,
           (unsigned long long)o->seed);
    printf("backend:  %s%s\n", rnnc_backend_name(ran),
           o->backend == RNNC_BACKEND_AUTO ? " (the best available here)" : " (as asked)");
    if (o->backend == RNNC_BACKEND_AUTO)
        explain(o, cell, ran);
    s = demo_run(o, cell, m, &io, w);
free_all:
    cli_io_free(&io);
    rnnc_model_destroy(m);
    rnnc_tensors_destroy(w);
    rnnc_cell_destroy(cell);
    return s;
}

static bool own_option(void *args, int c, const char *arg)
{
    return cli_model_opt(args, "demo", c, arg);
}

int cmd_demo(int argc, char **argv)
{
    static const struct option opts[] = {CLI_MODEL_OPTIONS, {NULL, 0, NULL, 0}};
    cli_model_opts o;
    cli_model_opts_init(&o, "lstm");
    o.seed = 1;
    /* only --backend, --seed and --device */
    static const cli_command cmd = {"demo", demo_help, false, "h", opts, own_option};
    static const uint32_t refuses =
        CLI_REFUSE(CLI_OPT_CELL) | CLI_REFUSE(CLI_OPT_ATTR) | CLI_REFUSE(CLI_OPT_LAYERS) |
        CLI_REFUSE(CLI_OPT_BIDIR) | CLI_REFUSE(CLI_OPT_BATCH_FIRST) |
        CLI_REFUSE(CLI_OPT_PROJ) | CLI_REFUSE(CLI_OPT_DROPOUT) |
        CLI_REFUSE(CLI_OPT_TRAINING) | CLI_REFUSE(CLI_OPT_HOIST) |
        CLI_REFUSE(CLI_OPT_INPUT_SIZE) | CLI_REFUSE(CLI_OPT_HIDDEN) |
        CLI_REFUSE(CLI_OPT_NO_BIAS) | CLI_REFUSE(CLI_OPT_CUDNN_ALGO);
    int rc = cli_parse_refusing(&cmd, refuses, argc, argv, &o);
    if (rc >= 0)
        return rc;
    o.input_size = o.hidden_size = DEMO_H;
    rnnc_status s = demo(&o);
    return s == RNNC_OK ? 0 : cli_fail(s);
}
