/*
 * cmd_grad.c: `rnnc grad`, the gradients of one training forward: the
 * files of `rnnc run` plus the gradients of its outputs, and out come the
 * gradients of every weight (by state_dict name), of x and of the initial
 * states given, as PyTorch's autograd gives them.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/tensor/tensor.h"
#include "tools/cli.h"

static const char grad_help[] =
    "Usage: rnnc grad --cell NAME|FILE.cell --weights W.safetensors --input X.safetensors\n"
    "                 --grad-output DY.safetensors --out G.safetensors [options]\n"
    "\n"
    "One training forward and its backward.  W and X are as for `rnnc run`.  DY holds the\n"
    "gradients of the outputs by the names `rnnc run` writes: y, and <state>y (hy, cy) for\n"
    "the final states; a missing one is zero.  G gets the gradient of every weight under\n"
    "its state_dict name, of x under x, and of each initial state X gives under <state>0\n"
    "(h0, c0).  Dropout (--dropout, and dropout inside the cell) is on, as in training.\n"
    "The backend must have a backward: interp (any cell, double precision inside),\n"
    "cudnn, or fused (by name); the default takes cudnn where it runs the cell, else\n"
    "interp.  A --dtype f16 or bf16 model reads the files rounded to its dtype; the\n"
    "gradients of x and the states are its dtype's values, the weights' fp32; all are\n"
    "written as F32.\n"
    "\n"
    "  --weights FILE          the weights (safetensors): the RNN's alone, or a whole\n"
    "                          model's state_dict with --weights-prefix\n"
    "  --weights-prefix P      the RNN's weights are those named P... (e.g. encoder.lstm.);\n"
    "                          the other tensors are ignored.  Found by itself when one\n"
    "                          prefix fits\n"
    "  --input FILE            the inputs (safetensors)\n"
    "  --grad-output FILE      the gradients of y and the final states (safetensors)\n"
    "  --out FILE              where to write the gradients (safetensors)\n"
    "\n";

enum { OPT_WEIGHTS = CLI_OPT_FIRST_OWN, OPT_PREFIX, OPT_INPUT, OPT_GRAD_OUTPUT, OPT_OUT };

typedef struct grad_args {
    cli_model_opts m;
    const char *weights, *input, *grad_output, *out;
} grad_args;

static bool own_option(void *args, int c, const char *arg)
{
    grad_args *r = args;
    switch (c) {
    case OPT_WEIGHTS: r->weights = arg; return true;
    case OPT_PREFIX: r->m.weights_prefix = arg; return true;
    case OPT_INPUT: r->input = arg; return true;
    case OPT_GRAD_OUTPUT: r->grad_output = arg; return true;
    case OPT_OUT: r->out = arg; return true;
    default: return cli_model_opt(&r->m, "grad", c, arg);
    }
}

static int parse(int argc, char **argv, grad_args *r)
{
    static const struct option opts[] = {
        CLI_MODEL_OPTIONS,
        {"weights", required_argument, NULL, OPT_WEIGHTS},
        {"weights-prefix", required_argument, NULL, OPT_PREFIX},
        {"input", required_argument, NULL, OPT_INPUT},
        {"grad-output", required_argument, NULL, OPT_GRAD_OUTPUT},
        {"out", required_argument, NULL, OPT_OUT},
        {NULL, 0, NULL, 0},
    };
    static const cli_command cmd = {"grad", grad_help, true, "h", opts, own_option};
    cli_model_opts_init(&r->m, NULL);
    int rc = cli_parse(&cmd, argc, argv, r);
    if (rc >= 0)
        return rc;
    if (!r->m.cell || !r->weights || !r->input || !r->grad_output || !r->out)
        return cli_usage("grad", "--cell, --weights, --input, --grad-output and --out are all "
                                 "needed");
    return -1;
}

/* The gradient buffers: dy and dfinal in, dx and dinit out. */
typedef struct grads {
    float *dy, *dx, *dfinal[CLI_MAX_STATES], *dinit[CLI_MAX_STATES];
    const void *dfinal_ptr[CLI_MAX_STATES];
    void *dinit_ptr[CLI_MAX_STATES];
} grads;

static void grads_free(grads *g, int n_states)
{
    free(g->dy);
    free(g->dx);
    for (int s = 0; s < n_states; s++)
        free(g->dfinal[s]), free(g->dinit[s]);
}

static rnnc_status read_one(const rnnc_tensors *dy, const char *name, int rank,
                            const int64_t *shape, float **out, int64_t n, const char *path)
{
    *out = calloc((size_t)n, sizeof(float));
    if (!*out)
        return cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    if (!rnnc_tensors_get(dy, name))
        return RNNC_OK; /* zero */
    const rnnc_tensor *t;
    rnnc_status s = rt_tensor_expect(dy, name, RT_DTYPE_ANY_FLOAT, rank, shape, &t);
    if (s != RNNC_OK)
        return cli_error(s, "%s: %s", path, rnnc_last_error());
    return cli_tensor_to_f32(t, name, *out);
}

/* Every tensor of DY is y or <state>y, of the shapes `rnnc run` writes. */
static rnnc_status read_grad_output(const grad_args *r, const cli_io *io, const rnnc_cell *cell,
                                    grads *g)
{
    rnnc_tensors *dy = NULL;
    rnnc_status s = rnnc_tensors_load(&dy, r->grad_output);
    if (s != RNNC_OK)
        return s;
    int64_t shape[3];
    char name[128];
    int known = rnnc_tensors_get(dy, "y") != NULL;
    cli_seq_shape(io, io->y_feat, shape);
    s = read_one(dy, "y", 3, shape, &g->dy, cli_y_numel(io), r->grad_output);
    for (int k = 0; s == RNNC_OK && k < io->n_states; k++) {
        snprintf(name, sizeof name, "%sy", rnnc_cell_state_name(cell, k));
        known += rnnc_tensors_get(dy, name) != NULL;
        cli_state_shape(io, k, shape);
        s = read_one(dy, name, 3, shape, &g->dfinal[k], cli_state_numel(io, k), r->grad_output);
        g->dfinal_ptr[k] = g->dfinal[k];
    }
    if (s == RNNC_OK && known != rnnc_tensors_count(dy))
        s = cli_error(RNNC_ERR_FORMAT, "%s holds a tensor other than y and the final states of "
                      "cell '%s' named <state>y", r->grad_output, rnnc_cell_name(cell));
    rnnc_tensors_destroy(dy);
    return s;
}

static rnnc_status run_backward(rnnc_model *m, cli_io *io, grads *g)
{
    g->dx = malloc(sizeof(float) * (size_t)cli_x_numel(io));
    if (!g->dx)
        return cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < io->n_states; k++) {
        if (!(g->dinit[k] = malloc(sizeof(float) * (size_t)cli_state_numel(io, k))))
            return cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory");
        g->dinit_ptr[k] = g->dinit[k];
    }
    rnnc_forward_args a = cli_io_args(io, true);
    rnnc_status s = rnnc_model_forward(m, &a);
    if (s != RNNC_OK)
        return s;
    rnnc_backward_args b = {g->dy, g->dfinal_ptr, g->dx, g->dinit_ptr};
    if (io->dtype == RNNC_F32)
        return rnnc_model_backward(m, &b);
    cli_half_grads h = {0};
    if ((s = cli_half_grads_in(&h, io, &b, g->dfinal_ptr, g->dinit_ptr)) == RNNC_OK &&
        (s = rnnc_model_backward(m, &b)) == RNNC_OK)
        cli_half_grads_out(&h, io, g->dx, g->dinit);
    cli_half_grads_free(&h);
    return s;
}

/* G: every weight's gradient, x's, and the initial states' that X gave. */
static rnnc_status add_grads(rnnc_tensors *out, rnnc_model *m, const cli_io *io,
                             const rnnc_cell *cell, const grads *g)
{
    int64_t shape[RNNC_MAX_RANK];
    char name[128];
    rnnc_status s = RNNC_OK;
    for (int i = 0; s == RNNC_OK && i < rnnc_model_weight_count(m); i++) {
        const char *wname;
        int rank;
        void *data;
        if ((s = rnnc_model_weight_info(m, i, &wname, RNNC_MAX_RANK, shape, &rank)) ||
            (s = rt_tensors_add_empty(out, wname, RNNC_F32, rank, shape, &data)))
            break;
        int64_t n = 1;
        for (int k = 0; k < rank; k++)
            n *= shape[k];
        s = rnnc_model_weight_grad(m, wname, data, n);
    }
    cli_seq_shape(io, io->I, shape);
    if (s == RNNC_OK)
        s = rnnc_tensors_add(out, "x", RNNC_F32, 3, shape, g->dx);
    for (int k = 0; s == RNNC_OK && k < io->n_states; k++) {
        if (!io->has_init[k])
            continue;
        snprintf(name, sizeof name, "%s0", rnnc_cell_state_name(cell, k));
        cli_state_shape(io, k, shape);
        s = rnnc_tensors_add(out, name, RNNC_F32, 3, shape, g->dinit[k]);
    }
    return s;
}

/* The backend asked for, or the first of cudnn and interp that takes the model. */
static rnnc_status create_model(const grad_args *r, const rnnc_cell *cell, rnnc_hoist hoist,
                                rnnc_model **m)
{
    rnnc_backend be = r->m.backend;
    if (be == RNNC_BACKEND_AUTO && rnnc_backend_available(RNNC_BACKEND_CUDNN) &&
        cli_model_create(&r->m, cell, hoist, RNNC_BACKEND_CUDNN, m) == RNNC_OK)
        return RNNC_OK;
    if (be == RNNC_BACKEND_AUTO)
        be = RNNC_BACKEND_INTERP;
    rnnc_status s = cli_model_create(&r->m, cell, hoist, be, m);
    if (s != RNNC_OK)
        cli_error(s, "--backend %s: %s", rnnc_backend_name(be), rnnc_last_error());
    return s;
}

static rnnc_status grad(grad_args *r)
{
    rnnc_cell *cell = NULL;
    rnnc_tensors *in = NULL, *w = NULL, *out = NULL;
    rnnc_model *m = NULL;
    cli_io io = {0};
    grads g = {0};
    rnnc_hoist hoist;
    int64_t T = 0, B = 0;
    rnnc_status s = cli_load_cell(&r->m, &cell, &hoist);
    if (s != RNNC_OK)
        return s;
    if ((s = rnnc_tensors_load(&in, r->input)) ||
        (s = cli_check_input_names(in, cell, r->input)) ||
        (s = cli_find_x(in, &r->m, r->input, &T, &B)) ||
        (s = cli_load_weights(&r->m, cell, hoist, r->weights, &w)) ||
        (s = create_model(r, cell, hoist, &m)))
        goto free_tensors;
    double t0 = cm_now_ms();
    if ((s = cli_set_weights(m, &r->m, w, r->weights)) ||
        (s = cli_io_alloc(&io, m, cell, &r->m, T, B)) ||
        (s = cli_read_inputs(in, &io, cell, r->input)) ||
        (s = read_grad_output(r, &io, cell, &g)) || (s = run_backward(m, &io, &g)) ||
        (s = rnnc_tensors_create(&out)) || (s = add_grads(out, m, &io, cell, &g)) ||
        (s = rnnc_tensors_save(out, r->out)))
        goto free_model;
    printf("rnnc: gradients of %s (%lld layer%s%s) on backend %s in %.3f ms: %d weights, x "
           "and the initial states given written to %s\n",
           rnnc_cell_name(cell), (long long)r->m.layers, r->m.layers == 1 ? "" : "s",
           r->m.bidirectional ? ", bidirectional" : "", rnnc_backend_name(rnnc_model_backend(m)),
           cm_now_ms() - t0, rnnc_model_weight_count(m), r->out);
free_model:
    rnnc_tensors_destroy(out);
    grads_free(&g, io.n_states);
    cli_io_free(&io);
    rnnc_model_destroy(m);
free_tensors:
    rnnc_tensors_destroy(w);
    rnnc_tensors_destroy(in);
    rnnc_cell_destroy(cell);
    return s;
}

int cmd_grad(int argc, char **argv)
{
    grad_args r = {0};
    int rc = parse(argc, argv, &r);
    if (rc >= 0)
        return rc;
    const cli_path out[] = {{"--out", r.out}};
    const cli_path in[] = {{"--input", r.input}, {"--weights", r.weights},
                           {"--grad-output", r.grad_output}, {"--cell", r.m.cell}};
    rnnc_status s = cli_check_outputs(out, 1, in, 4);
    if (s == RNNC_OK)
        s = grad(&r);
    return s == RNNC_OK ? 0 : cli_fail(s);
}
