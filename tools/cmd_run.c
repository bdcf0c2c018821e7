/*
 * cmd_run.c: `rnnc run`, one forward over the tensors of a safetensors
 * file with the weights of another, written to a third: nn.LSTM's
 * (x, (h0, c0)) -> (y, (hy, cy)), for any cell.
 */
#include <string.h>

#include "runtime/runtime.h" /* rt_now_ms */
#include "tools/cli.h"

static const char run_help[] =
    "Usage: rnnc run --cell NAME|FILE.cell --weights W.safetensors --input X.safetensors\n"
    "                --out Y.safetensors [options]\n"
    "\n"
    "One forward pass.  X holds x [T,B,I] ([B,T,I] with --batch-first), and optionally\n"
    "the initial states named <state>0 ([L*D,B,n]: h0, c0 for an LSTM) and lengths [B]\n"
    "(I64 or I32).  W holds the weights by PyTorch's state_dict names (weight_ih_l0, ...).\n"
    "Y gets y and the final states <state>y (hy, cy), as nn.LSTM returns them; it is\n"
    "written to a temporary file and renamed, so it is never left half-written.\n"
    "I comes from x; layers, directions, H and P from W unless given.\n"
    "\n"
    "  --weights FILE          the weights (safetensors)\n"
    "  --input FILE            the inputs (safetensors)\n"
    "  --out FILE              where to write the outputs (safetensors)\n"
    "  --bundle FILE.rnncpkg   take the fused kernels from a bundle (`rnnc compile`)\n"
    "\n";

enum { OPT_WEIGHTS = CLI_OPT_FIRST_OWN, OPT_INPUT, OPT_OUT, OPT_BUNDLE };

typedef struct run_args {
    cli_model_opts m;
    const char *weights, *input, *out, *bundle;
} run_args;

static bool own_option(void *args, int c, const char *arg)
{
    run_args *r = args;
    switch (c) {
    case OPT_WEIGHTS: r->weights = arg; return true;
    case OPT_INPUT: r->input = arg; return true;
    case OPT_OUT: r->out = arg; return true;
    case OPT_BUNDLE: r->bundle = arg; return true;
    default: return cli_model_opt(&r->m, "run", c, arg);
    }
}

/* -1 to go on, else the exit code. */
static int parse(int argc, char **argv, run_args *r)
{
    static const struct option opts[] = {
        CLI_MODEL_OPTIONS,
        {"weights", required_argument, NULL, OPT_WEIGHTS},
        {"input", required_argument, NULL, OPT_INPUT},
        {"out", required_argument, NULL, OPT_OUT},
        {"bundle", required_argument, NULL, OPT_BUNDLE},
        {NULL, 0, NULL, 0},
    };
    static const cli_command cmd = {"run", run_help, true, "h", opts, own_option};
    cli_model_opts_init(&r->m, NULL);
    int rc = cli_parse(&cmd, argc, argv, r);
    if (rc >= 0)
        return rc;
    if (!r->m.cell || !r->weights || !r->input || !r->out)
        return cli_usage("run", "--cell, --weights, --input and --out are all needed");
    return -1;
}

static void report(const run_args *r, const rnnc_cell *cell, rnnc_hoist hoist,
                   const rnnc_model *m, const cli_io *io, double ms)
{
    static const char *const hoists[] = {"all", "matmul", "none"};
    char proj[32] = "";
    if (r->m.proj_size > 0)
        snprintf(proj, sizeof proj, " P=%lld", (long long)r->m.proj_size);
    printf("rnnc: ran %s (I=%lld H=%lld%s, %lld layer%s%s, hoist %s) on backend %s in %.3f ms: "
           "y [%lld, %lld, %lld] and %d final state%s written to %s\n",
           rnnc_cell_name(cell), (long long)r->m.input_size, (long long)r->m.hidden_size, proj,
           (long long)r->m.layers, r->m.layers == 1 ? "" : "s",
           r->m.bidirectional ? ", bidirectional" : "", hoists[hoist],
           rnnc_backend_name(rnnc_model_backend(m)), ms,
           (long long)(io->batch_first ? io->B : io->T), (long long)(io->batch_first ? io->T : io->B),
           (long long)io->y_feat, io->n_states, io->n_states == 1 ? "" : "s", r->out);
}

/* Reads inputs into io and runs the forward. */
static rnnc_status forward(run_args *r, const rnnc_tensors *in, rnnc_model *m,
                           const rnnc_cell *cell, cli_io *io, double *ms)
{
    rnnc_status s = cli_read_inputs(in, io, cell, r->input);
    if (s != RNNC_OK)
        return s;
    rnnc_forward_args a = cli_io_args(io, r->m.training);
    double t0 = rt_now_ms();
    s = rnnc_model_forward(m, &a);
    *ms = rt_now_ms() - t0;
    return s;
}

static rnnc_status run(run_args *r)
{
    rnnc_cell *cell = NULL;
    rnnc_tensors *in = NULL, *w = NULL, *out = NULL;
    rnnc_model *m = NULL;
    cli_io io = {0};
    rnnc_hoist hoist;
    int64_t T = 0, B = 0;
    double ms = 0;
    rnnc_status s = cli_load_cell(&r->m, &cell, &hoist);
    if (s != RNNC_OK)
        return s;
    if ((s = rnnc_tensors_load(&in, r->input)) ||
        (s = cli_check_input_names(in, cell, r->input)) ||
        (s = cli_find_x(in, &r->m, r->input, &T, &B)) || (s = rnnc_tensors_load(&w, r->weights)) ||
        (s = cli_infer_sizes(&r->m, cell, hoist, w, r->weights)))
        goto free_tensors;
    if ((s = cli_model_create(&r->m, cell, hoist, r->m.backend, &m))) {
        if (r->m.backend != RNNC_BACKEND_AUTO) /* the library's detail may not name it */
            cli_error(s, "--backend %s: %s", rnnc_backend_name(r->m.backend), rnnc_last_error());
        goto free_tensors;
    }
    if ((s = rnnc_model_set_weights(m, w)) || (s = cli_io_alloc(&io, m, cell, &r->m, T, B)) ||
        (s = forward(r, in, m, cell, &io, &ms)) || (s = rnnc_tensors_create(&out)) ||
        (s = cli_add_outputs(out, &io, cell)) || (s = rnnc_tensors_save(out, r->out)))
        goto free_model;
    report(r, cell, hoist, m, &io, ms);
free_model:
    rnnc_tensors_destroy(out);
    cli_io_free(&io);
    rnnc_model_destroy(m);
free_tensors:
    rnnc_tensors_destroy(w);
    rnnc_tensors_destroy(in);
    rnnc_cell_destroy(cell);
    return s;
}

int cmd_run(int argc, char **argv)
{
    run_args r = {0};
    int rc = parse(argc, argv, &r);
    if (rc >= 0)
        return rc;
    rnnc_status s = r.bundle ? rnnc_bundle_load(r.bundle) : RNNC_OK;
    if (s == RNNC_OK)
        s = run(&r);
    rnnc_bundle_unload_all();
    return s == RNNC_OK ? 0 : cli_fail(s);
}
