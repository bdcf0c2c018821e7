/*
 * cmd_dump.c: `rnnc dump`, what rnnc makes of a cell at one stage of the
 * pipeline, as text: to read the optimised IR, the schedule, the CUDA
 * source that would be compiled, or the CPU backend's LLVM module.
 */
#include <string.h>

#include "tools/cli.h"

static const char dump_help[] =
    "Usage: rnnc dump --cell NAME|FILE.cell --stage ir|opt|schedule|cuda|llvm|backward|train\n"
    "                 [--input-size I --hidden-size H --batch B --proj-size P --hoist ...]\n"
    "                 [--math ffma|tf32|3xtf32 --dtype f32|f16|bf16 --sm N --tuning T]\n"
    "\n"
    "Prints the cell at one stage: ir (as parsed), opt (after the optimising passes),\n"
    "schedule (the hoisted and recurrent parts), cuda (the generated CUDA C; nothing is\n"
    "compiled), llvm (the CPU backend's LLVM module, when built with LLVM), backward\n"
    "(the backward step of the optimised cell, with what the forward saves and the\n"
    "per-step weight gradients), train (the fused backward: how it splits the backward\n"
    "step, and the CUDA C of its record and recurrence kernels (and row cell, where a\n"
    "cell has row work before its first GEMM) in fp32 and the --math given, as a half\n"
    "model trains too; generated only).\n"
    "schedule, cuda, llvm and train need --input-size, --hidden-size and --batch; cuda is\n"
    "specialised on --math, --dtype, --sm and --tuning too.\n"
    "\n"
    "  --stage S               ir, opt, schedule, cuda, llvm, backward or train\n"
    "  --batch B               batch size the code is specialised for\n"
    "  --sm N                  GPU architecture of the cuda stage (default 90: sm_90)\n"
    "  --tuning T              the step kernel's tiles as RNNC_LOG=info logs a tuning, e.g.\n"
    "                          'ut=0 bt=32 nt=512' or 'nt=512 rr=8 bb=8 op=1': any of the\n"
    "                          fields ut bt nt rr bb ex op, in any order; those left out and\n"
    "                          0 are the generator's choice (default: all of it)\n"
    "\n";

enum { OPT_STAGE = CLI_OPT_FIRST_OWN, OPT_BATCH, OPT_SM, OPT_TUNING };

typedef struct dump_args {
    cli_model_opts m;
    const char *stage, *tuning;
    int64_t batch, sm;
} dump_args;

static bool own_option(void *args, int c, const char *arg)
{
    dump_args *r = args;
    switch (c) {
    case OPT_STAGE: r->stage = arg; return true;
    case OPT_BATCH: return cli_int("dump", "batch", arg, 1, INT32_MAX, &r->batch);
    case OPT_SM: return cli_int("dump", "sm", arg, 50, 1000, &r->sm);
    case OPT_TUNING: r->tuning = arg; return true;
    default: return cli_model_opt(&r->m, "dump", c, arg);
    }
}

static int parse(int argc, char **argv, dump_args *r)
{
    static const struct option opts[] = {
        CLI_MODEL_OPTIONS,
        {"stage", required_argument, NULL, OPT_STAGE},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"sm", required_argument, NULL, OPT_SM},
        {"tuning", required_argument, NULL, OPT_TUNING},
        {NULL, 0, NULL, 0},
    };
    static const cli_command cmd = {"dump", dump_help, true, "h", opts, own_option};
    static const uint32_t refuses =
        CLI_REFUSE(CLI_OPT_LAYERS) | CLI_REFUSE(CLI_OPT_BIDIR) |
        CLI_REFUSE(CLI_OPT_BATCH_FIRST) | CLI_REFUSE(CLI_OPT_DROPOUT) |
        CLI_REFUSE(CLI_OPT_SEED) | CLI_REFUSE(CLI_OPT_TRAINING) |
        CLI_REFUSE(CLI_OPT_BACKEND) | CLI_REFUSE(CLI_OPT_DEVICE) |
        CLI_REFUSE(CLI_OPT_NO_BIAS) | CLI_REFUSE(CLI_OPT_CUDNN_ALGO);
    cli_model_opts_init(&r->m, NULL);
    int rc = cli_parse_refusing(&cmd, refuses, argc, argv, r);
    if (rc >= 0)
        return rc;
    if (!r->m.cell || !r->stage)
        return cli_usage("dump", "--cell and --stage are both needed");
    static const char *const stages[] = {"ir",  "opt",      "schedule", "cuda",
                                         "llvm", "backward", "train"};
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++)
        if (strcmp(r->stage, stages[i]) == 0)
            return -1;
    return cli_usage("dump", "--stage wants ir, opt, schedule, cuda, llvm, backward or train, not '%s'",
                     r->stage);
}

static rnnc_status dump(const dump_args *r)
{
    rnnc_cell *cell = NULL;
    rnnc_hoist hoist;
    char *text = NULL;
    rnnc_status s = cli_load_cell(&r->m, &cell, &hoist);
    if (s != RNNC_OK)
        return s;
    rnnc_dump_desc d = {.input_size = r->m.input_size, .hidden_size = r->m.hidden_size,
                        .proj_size = r->m.proj_size > 0 ? r->m.proj_size : 0, .batch = r->batch,
                        .hoist = hoist, .math = r->m.math, .dtype = r->m.dtype, .sm = (int)r->sm,
                        .tuning = r->tuning};
    s = rnnc_cell_dump_desc(cell, r->stage, &d, &text);
    if (s == RNNC_OK) {
        size_t n = strlen(text);
        fputs(text, stdout);
        if (n && text[n - 1] != '\n')
            putchar('\n');
    }
    rnnc_free(text);
    rnnc_cell_destroy(cell);
    return s;
}

int cmd_dump(int argc, char **argv)
{
    dump_args r = {0};
    int rc = parse(argc, argv, &r);
    if (rc >= 0)
        return rc;
    rnnc_status s = dump(&r);
    return s == RNNC_OK ? 0 : cli_fail(s);
}
