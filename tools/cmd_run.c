/*
 * cmd_run.c: `rnnc run`, one forward over the tensors of a safetensors
 * file with the weights of another, written to a third: nn.LSTM's
 * (x, (h0, c0)) -> (y, (hy, cy)), for any cell.
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "runtime/cache/cache.h"
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
    "  --weights FILE          the weights (safetensors): the RNN's alone, or a whole\n"
    "                          model's state_dict with --weights-prefix\n"
    "  --weights-prefix P      the RNN's weights are those named P... (e.g. encoder.lstm.);\n"
    "                          the other tensors are ignored.  Found by itself when one\n"
    "                          prefix fits\n"
    "  --input FILE            the inputs (safetensors)\n"
    "  --out FILE              where to write the outputs (safetensors)\n"
    "  --bundle FILE.rnncpkg   take the fused kernels from a bundle (`rnnc compile`)\n"
    "  --json                  say what ran as one JSON object on stdout (cell, sizes,\n"
    "                          backend, ms, outputs with shapes, weights prefix)\n"
    "\n";

enum { OPT_WEIGHTS = CLI_OPT_FIRST_OWN, OPT_PREFIX, OPT_INPUT, OPT_OUT, OPT_BUNDLE, OPT_JSON };

typedef struct run_args {
    cli_model_opts m;
    const char *weights, *input, *out, *bundle;
    bool json;
} run_args;

static bool own_option(void *args, int c, const char *arg)
{
    run_args *r = args;
    switch (c) {
    case OPT_WEIGHTS: r->weights = arg; return true;
    case OPT_PREFIX: r->m.weights_prefix = arg; return true;
    case OPT_INPUT: r->input = arg; return true;
    case OPT_OUT: r->out = arg; return true;
    case OPT_BUNDLE: r->bundle = arg; return true;
    case OPT_JSON: r->json = true; return true;
    default: return cli_model_opt(&r->m, "run", c, arg);
    }
}

/* -1 to go on, else the exit code. */
static int parse(int argc, char **argv, run_args *r)
{
    static const struct option opts[] = {
        CLI_MODEL_OPTIONS,
        {"weights", required_argument, NULL, OPT_WEIGHTS},
        {"weights-prefix", required_argument, NULL, OPT_PREFIX},
        {"input", required_argument, NULL, OPT_INPUT},
        {"out", required_argument, NULL, OPT_OUT},
        {"bundle", required_argument, NULL, OPT_BUNDLE},
        {"json", no_argument, NULL, OPT_JSON},
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

static void add_shape(cJSON *o, const rnnc_tensor *t)
{
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    for (int k = 0; k < t->rank; k++)
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[k]));
}

/* --json: what report() says, as one object on stdout. */
static rnnc_status report_json(const run_args *r, const rnnc_cell *cell, rnnc_hoist hoist,
                               const rnnc_model *m, const rnnc_tensors *out, double ms)
{
    static const char *const hoists[] = {"all", "matmul", "none"};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cell", rnnc_cell_name(cell));
    cJSON_AddStringToObject(o, "backend", rnnc_backend_name(rnnc_model_backend(m)));
    cJSON_AddNumberToObject(o, "input_size", (double)r->m.input_size);
    cJSON_AddNumberToObject(o, "hidden_size", (double)r->m.hidden_size);
    cJSON_AddNumberToObject(o, "proj_size", (double)(r->m.proj_size > 0 ? r->m.proj_size : 0));
    cJSON_AddNumberToObject(o, "layers", (double)r->m.layers);
    cJSON_AddBoolToObject(o, "bidirectional", r->m.bidirectional);
    cJSON_AddBoolToObject(o, "batch_first", r->m.batch_first);
    cJSON_AddStringToObject(o, "hoist", hoists[hoist]);
    cJSON_AddNumberToObject(o, "ms", ms);
    cJSON_AddStringToObject(o, "weights", r->weights);
    if (r->m.weights_prefix)
        cJSON_AddStringToObject(o, "weights_prefix", r->m.weights_prefix);
    else
        cJSON_AddNullToObject(o, "weights_prefix");
    cJSON_AddNumberToObject(o, "weights_ignored", r->m.weights_ignored);
    cJSON_AddStringToObject(o, "out", r->out);
    cJSON *outs = cJSON_AddArrayToObject(o, "outputs");
    for (int i = 0; i < rnnc_tensors_count(out); i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", rnnc_tensors_name(out, i));
        add_shape(t, rnnc_tensors_get(out, rnnc_tensors_name(out, i)));
        cJSON_AddItemToArray(outs, t);
    }
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    if (!text)
        return cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    printf("%s\n", text);
    free(text);
    return RNNC_OK;
}

/* Reads inputs into io and runs the forward. */
static rnnc_status forward(run_args *r, const rnnc_tensors *in, rnnc_model *m,
                           const rnnc_cell *cell, cli_io *io, double *ms)
{
    rnnc_status s = cli_read_inputs(in, io, cell, r->input);
    if (s != RNNC_OK)
        return s;
    rnnc_forward_args a = cli_io_args(io, r->m.training);
    double t0 = cm_now_ms();
    s = rnnc_model_forward(m, &a);
    *ms = cm_now_ms() - t0;
    if (s == RNNC_OK)
        cli_io_finish(io);
    return s;
}

/* --bundle: say so when the bundle gave this run no code. */
static void check_bundle(const run_args *r, const rnnc_model *m)
{
    rnnc_backend ran = rnnc_model_backend(m);
    if (ran != RNNC_BACKEND_FUSED && ran != RNNC_BACKEND_CPU)
        fprintf(stderr, "rnnc run: --bundle %s was not used: the model ran on backend %s, and "
                        "bundles hold the fused and cpu backends' code only\n",
                r->bundle, rnnc_backend_name(ran));
    else if (rt_cache_origin_count(RT_FROM_BUNDLE) == 0 && ran == RNNC_BACKEND_FUSED)
        fprintf(stderr, "rnnc run: --bundle %s does not hold this model's kernels (shape, batch "
                        "or arch): they came from the disk cache or NVRTC; `rnnc compile` one "
                        "for this model\n",
                r->bundle);
    else if (rt_cache_origin_count(RT_FROM_BUNDLE) == 0)
        fprintf(stderr, "rnnc run: --bundle %s does not hold this model's cpu code for a target "
                        "this CPU runs (shape, or cpu target): it came from the disk cache or "
                        "LLVM; `rnnc compile --arch cpu` one for this model\n",
                r->bundle);
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
        (s = cli_find_x(in, &r->m, r->input, &T, &B)) ||
        (s = cli_load_weights(&r->m, cell, hoist, r->weights, &w)))
        goto free_tensors;
    if ((s = cli_model_create(&r->m, cell, hoist, r->m.backend, &m))) {
        if (r->m.backend != RNNC_BACKEND_AUTO) /* the library's detail may not name it */
            cli_error(s, "--backend %s: %s", rnnc_backend_name(r->m.backend), rnnc_last_error());
        goto free_tensors;
    }
    if ((s = cli_set_weights(m, &r->m, w, r->weights)) ||
        (s = cli_io_alloc(&io, m, cell, &r->m, T, B)) ||
        (s = forward(r, in, m, cell, &io, &ms)) || (s = rnnc_tensors_create(&out)) ||
        (s = cli_add_outputs(out, &io, cell)) || (s = rnnc_tensors_save(out, r->out)))
        goto free_model;
    if (r->json)
        s = report_json(r, cell, hoist, m, out, ms);
    else
        report(r, cell, hoist, m, &io, ms);
    if (r->bundle)
        check_bundle(r, m);
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
    const cli_path out[] = {{"--out", r.out}};
    const cli_path in[] = {{"--input", r.input}, {"--weights", r.weights},
                           {"--cell", r.m.cell}, {"--bundle", r.bundle}};
    rnnc_status s = cli_check_outputs(out, 1, in, 4);
    if (s == RNNC_OK && r.bundle)
        s = rnnc_bundle_load(r.bundle);
    if (s == RNNC_OK)
        s = run(&r);
    rnnc_bundle_unload_all();
    return s == RNNC_OK ? 0 : cli_fail(s);
}
