/*
 * cli_model.c: the model options every model-making command shares
 * (--cell, --layers, --hoist, ...) and turning them into a cell and a model.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

const char cli_model_help[] =
    "Model options:\n"
    "  --cell NAME|FILE.cell   built-in cell (lstm, gru, rnn_tanh, rnn_relu, layernorm_lstm,\n"
    "                          milstm, peephole_lstm, dropout_lstm; premul and premul_bias\n"
    "                          are lstm with --hoist matmul / all) or a .cell file\n"
    "  --attr K=V,...          override the cell's attributes (e.g. eps=0)\n"
    "  --input-size I          input features\n"
    "  --hidden-size H         hidden features (also --hidden)\n"
    "  --layers N              stacked layers (default 1)\n"
    "  --bidirectional         two directions per layer\n"
    "  --batch-first           x and y are [B, T, *]\n"
    "  --proj-size P           LSTM projection of h (0: none)\n"
    "  --dropout p             dropout between layers (training only)\n"
    "  --seed S                seed of the dropout stream and of random data\n"
    "  --training              run in training mode (dropout active)\n"
    "  --hoist none|matmul|all how much leaves the time loop (default all)\n"
    "  --backend B             auto, interp, cpu, fused or cudnn (default auto)\n"
    "  --device N              CUDA device ordinal (default 0)\n"
    "  --no-bias               no bias parameters (PyTorch's bias=False)\n"
    "  --cudnn-algo A          cudnn backend: auto (default: the fastest, timed once per\n"
    "                          shape), standard, persist_static, persist_static_small_h,\n"
    "                          persist_dynamic\n"
    "  --math ffma|tf32|3xtf32 fp32 math: FMA only (default), TF32 tensor cores, or\n"
    "                          three TF32 products of split operands (about fp32 accuracy;\n"
    "                          cudnn runs it as ffma)\n"
    "  --dtype f32|f16|bf16    the model's dtype (default f32): weights, inputs and\n"
    "                          outputs rounded to it; f16 on cudnn, cpu, interp; bf16 on\n"
    "                          cpu, interp\n";

void cli_model_opts_init(cli_model_opts *o, const char *default_cell)
{
    memset(o, 0, sizeof *o);
    o->cell = default_cell;
    o->proj_size = -1;
    o->hoist = -1;
    o->backend = RNNC_BACKEND_AUTO;
}

static bool parse_hoist(const char *cmd, const char *arg, int *out)
{
    static const char *const names[] = {"all", "matmul", "none"}; /* rnnc_hoist order */
    for (int i = 0; i < 3; i++)
        if (strcmp(arg, names[i]) == 0) {
            *out = i;
            return true;
        }
    cli_usage(cmd, "--hoist wants none, matmul or all, not '%s'", arg);
    return false;
}

static bool parse_backend(const char *cmd, const char *arg, rnnc_backend *out)
{
    if (rnnc_backend_from_name(arg, out) == RNNC_OK)
        return true;
    cli_usage(cmd, "--backend wants auto, interp, cpu, fused or cudnn, not '%s'", arg);
    return false;
}

static bool parse_algo(const char *cmd, const char *arg, rnnc_cudnn_algo *out)
{
    if (rnnc_cudnn_algo_from_name(arg, out) == RNNC_OK)
        return true;
    cli_usage(cmd,
              "--cudnn-algo wants auto, standard, persist_static, persist_static_small_h or "
              "persist_dynamic, not '%s'",
              arg);
    return false;
}

static bool parse_math(const char *cmd, const char *arg, rnnc_math *out)
{
    if (rnnc_math_from_name(arg, out) == RNNC_OK)
        return true;
    cli_usage(cmd, "--math wants ffma, tf32 or 3xtf32, not '%s'", arg);
    return false;
}

static bool parse_dtype(const char *cmd, const char *arg, rnnc_dtype *out)
{
    static const struct {
        const char *name;
        rnnc_dtype t;
    } names[] = {{"f32", RNNC_F32}, {"f16", RNNC_F16}, {"bf16", RNNC_BF16}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(arg, names[i].name) == 0) {
            *out = names[i].t;
            return true;
        }
    cli_usage(cmd, "--dtype wants f32, f16 or bf16, not '%s'", arg);
    return false;
}

bool cli_model_opt(cli_model_opts *o, const char *cmd, int id, const char *arg)
{
    int64_t v = 0;
    bool ok = true;
    switch (id) {
    case CLI_OPT_CELL: o->cell = arg; break;
    case CLI_OPT_ATTR: o->attrs = arg; break;
    case CLI_OPT_LAYERS: ok = cli_int(cmd, "layers", arg, 1, 1024, &o->layers); break;
    case CLI_OPT_BIDIR: o->bidirectional = true; break;
    case CLI_OPT_BATCH_FIRST: o->batch_first = true; break;
    case CLI_OPT_PROJ: ok = cli_int(cmd, "proj-size", arg, 0, INT32_MAX, &o->proj_size); break;
    case CLI_OPT_DROPOUT: ok = cli_double(cmd, "dropout", arg, 0, 0.999999, &o->dropout); break;
    case CLI_OPT_SEED: ok = cli_u64(cmd, "seed", arg, &o->seed); break;
    case CLI_OPT_TRAINING: o->training = true; break;
    case CLI_OPT_HOIST: ok = parse_hoist(cmd, arg, &o->hoist); break;
    case CLI_OPT_INPUT_SIZE: ok = cli_int(cmd, "input-size", arg, 1, INT32_MAX, &o->input_size); break;
    case CLI_OPT_HIDDEN: ok = cli_int(cmd, "hidden-size", arg, 1, INT32_MAX, &o->hidden_size); break;
    case CLI_OPT_BACKEND: ok = parse_backend(cmd, arg, &o->backend); break;
    case CLI_OPT_NO_BIAS: o->no_bias = true; break;
    case CLI_OPT_CUDNN_ALGO: ok = parse_algo(cmd, arg, &o->cudnn_algo); break;
    case CLI_OPT_MATH: ok = parse_math(cmd, arg, &o->math); break;
    case CLI_OPT_DTYPE: ok = parse_dtype(cmd, arg, &o->dtype); break;
    case CLI_OPT_DEVICE:
        ok = cli_int(cmd, "device", arg, 0, 1023, &v);
        o->device = (int)v;
        break;
    default: ok = false; break;
    }
    return ok;
}

rnnc_status cli_load_cell(const cli_model_opts *o, rnnc_cell **cell, rnnc_hoist *hoist)
{
    *hoist = RNNC_HOIST_ALL;
    if (strcmp(o->cell, "premul") == 0)
        *hoist = RNNC_HOIST_MATMUL;
    if (o->hoist >= 0)
        *hoist = (rnnc_hoist)o->hoist;
    return rnnc_cell_load(cell, o->cell, o->attrs);
}

rnnc_status cli_model_create(const cli_model_opts *o, const rnnc_cell *cell, rnnc_hoist hoist,
                             rnnc_backend backend, rnnc_model **out)
{
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = o->input_size;
    d.hidden_size = o->hidden_size;
    d.proj_size = o->proj_size > 0 ? o->proj_size : 0;
    d.num_layers = o->layers > 0 ? (int)o->layers : 1;
    d.bidirectional = o->bidirectional;
    d.batch_first = o->batch_first;
    d.dropout = o->dropout;
    d.seed = o->seed;
    d.backend = backend;
    d.hoist = hoist;
    d.device = o->device;
    d.no_bias = o->no_bias;
    d.cudnn_algo = o->cudnn_algo;
    d.math = o->math;
    d.dtype = o->dtype;
    return rnnc_model_create(out, &d);
}
