/*
 * cmd_random.c: `rnnc random`, seeded random weights (PyTorch's
 * initialisation and state_dict names) and inputs, written as the files
 * `rnnc run` reads: to try a cell, or to feed the same data to PyTorch.
 */
#include <string.h>

#include "runtime/tensor/tensor.h"
#include "tools/cli.h"

static const char random_help[] =
    "Usage: rnnc random --cell NAME|FILE.cell --seq T --batch B --input-size I --hidden-size H\n"
    "                   --weights W.safetensors --input X.safetensors [options]\n"
    "\n"
    "Writes random weights, uniform(-1/sqrt(H), 1/sqrt(H)) as PyTorch initialises them,\n"
    "named as its state_dict (weight_ih_l0, ...), and random inputs in [-1, 1): x and the\n"
    "initial states <state>0 (h0, c0).  The same --seed gives the same files everywhere.\n"
    "\n"
    "  --seq T                 sequence length\n"
    "  --batch B               batch size\n"
    "  --weights FILE          where to write the weights\n"
    "  --input FILE            where to write the inputs\n"
    "  --states random|zero    random initial states (default) or none in the file\n"
    "  --lengths full|random   no lengths (default) or random lengths in [1, T]\n"
    "\n";

enum { OPT_SEQ = CLI_OPT_FIRST_OWN, OPT_BATCH, OPT_WEIGHTS, OPT_INPUT, OPT_STATES, OPT_LENGTHS };

typedef struct random_args {
    cli_model_opts m;
    int64_t T, B;
    const char *weights, *input;
    bool zero_states, random_lengths;
} random_args;

static bool choice(const char *opt, const char *arg, const char *no, const char *yes, bool *out)
{
    if (strcmp(arg, no) == 0 || strcmp(arg, yes) == 0) {
        *out = strcmp(arg, yes) == 0;
        return true;
    }
    cli_usage("random", "--%s wants %s or %s, not '%s'", opt, no, yes, arg);
    return false;
}

static bool own_option(void *args, int c, const char *arg)
{
    random_args *r = args;
    switch (c) {
    case OPT_SEQ: return cli_int("random", "seq", arg, 1, INT32_MAX, &r->T);
    case OPT_BATCH: return cli_int("random", "batch", arg, 1, INT32_MAX, &r->B);
    case OPT_WEIGHTS: r->weights = arg; return true;
    case OPT_INPUT: r->input = arg; return true;
    case OPT_STATES: return choice("states", arg, "random", "zero", &r->zero_states);
    case OPT_LENGTHS: return choice("lengths", arg, "full", "random", &r->random_lengths);
    default: return cli_model_opt(&r->m, "random", c, arg);
    }
}

static int parse(int argc, char **argv, random_args *r)
{
    static const struct option opts[] = {
        CLI_MODEL_OPTIONS,
        {"seq", required_argument, NULL, OPT_SEQ},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"weights", required_argument, NULL, OPT_WEIGHTS},
        {"input", required_argument, NULL, OPT_INPUT},
        {"states", required_argument, NULL, OPT_STATES},
        {"lengths", required_argument, NULL, OPT_LENGTHS},
        {NULL, 0, NULL, 0},
    };
    cli_model_opts_init(&r->m, "lstm");
    r->m.seed = 1;
    static const cli_command cmd = {"random", random_help, true, "h", opts, own_option};
    static const uint32_t refuses =
        CLI_REFUSE(CLI_OPT_DROPOUT) | CLI_REFUSE(CLI_OPT_TRAINING) | CLI_REFUSE(CLI_OPT_HOIST) |
        CLI_REFUSE(CLI_OPT_BACKEND) | CLI_REFUSE(CLI_OPT_DEVICE) |
        CLI_REFUSE(CLI_OPT_CUDNN_ALGO);
    int rc = cli_parse_refusing(&cmd, refuses, argc, argv, r);
    if (rc >= 0)
        return rc;
    if (!r->T || !r->B || !r->m.input_size || !r->m.hidden_size || !r->weights || !r->input)
        return cli_usage("random", "--seq, --batch, --input-size, --hidden-size, --weights and "
                                   "--input are all needed");
    return -1;
}

/* Both files or neither: each is written whole to a temp file first. */
static rnnc_status save_both(const random_args *r, const rnnc_tensors *w, const rnnc_tensors *in)
{
    cm_out ow, oi;
    rnnc_status s = rt_tensors_stage(w, r->weights, &ow);
    if (s != RNNC_OK)
        return s;
    if ((s = rt_tensors_stage(in, r->input, &oi)) != RNNC_OK) {
        cm_out_abort(&ow);
        return s;
    }
    if ((s = rt_tensors_commit(&ow)) != RNNC_OK) {
        cm_out_abort(&oi);
        return s;
    }
    return rt_tensors_commit(&oi);
}

static rnnc_status write_files(random_args *r)
{
    rnnc_cell *cell = NULL;
    rnnc_model *m = NULL;
    rnnc_tensors *w = NULL, *in = NULL;
    cli_io io = {0};
    rnnc_hoist hoist;
    cli_rng rng = {r->m.seed};
    rnnc_status s = cli_load_cell(&r->m, &cell, &hoist);
    if (s != RNNC_OK)
        return s;
    if ((s = cli_model_create(&r->m, cell, hoist, RNNC_BACKEND_INTERP, &m)))
        goto free_cell;
    if ((s = rnnc_tensors_create(&w)) || (s = rnnc_tensors_create(&in)) ||
        (s = cli_random_weights(m, r->m.hidden_size, &rng, w)) ||
        (s = cli_io_alloc(&io, m, cell, &r->m, r->T, r->B)) ||
        (s = cli_random_inputs(&io, cell, &rng, r->zero_states, r->random_lengths ? 1 : 0, in)))
        goto free_all;
    /* --dtype f16/bf16: the files hold the data in that dtype */
    rnnc_tensors *wd = NULL, *ind = NULL;
    if ((s = cli_tensors_as(w, r->m.dtype, &wd)) == RNNC_OK &&
        (s = cli_tensors_as(in, r->m.dtype, &ind)) == RNNC_OK)
        s = save_both(r, wd, ind);
    rnnc_tensors_destroy(wd);
    rnnc_tensors_destroy(ind);
    if (s != RNNC_OK)
        goto free_all;
    printf("rnnc: wrote %d weights of %s to %s and %d input tensors to %s (seed %llu)\n",
           rnnc_tensors_count(w), rnnc_cell_name(cell), r->weights, rnnc_tensors_count(in),
           r->input, (unsigned long long)r->m.seed);
free_all:
    cli_io_free(&io);
    rnnc_tensors_destroy(in);
    rnnc_tensors_destroy(w);
    rnnc_model_destroy(m);
free_cell:
    rnnc_cell_destroy(cell);
    return s;
}

int cmd_random(int argc, char **argv)
{
    random_args r = {0};
    int rc = parse(argc, argv, &r);
    if (rc >= 0)
        return rc;
    const cli_path out[] = {{"--weights", r.weights}, {"--input", r.input}};
    const cli_path in[] = {{"--cell", r.m.cell}};
    rnnc_status s = cli_check_outputs(out, 2, in, 1);
    if (s == RNNC_OK)
        s = write_files(&r);
    return s == RNNC_OK ? 0 : cli_fail(s);
}
