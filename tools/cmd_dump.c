/*
 * cmd_dump.c: `rnnc dump`, what rnnc makes of a cell at one stage of the
 * pipeline, as text: to read the optimised IR, the schedule, the CUDA
 * source that would be compiled, or the CPU backend's LLVM module.
 */
#include <string.h>

#include "tools/cli.h"

static const char dump_help[] =
    "Usage: rnnc dump --cell NAME|FILE.cell --stage ir|opt|schedule|cuda|llvm\n"
    "                 [--input-size I --hidden-size H --batch B --proj-size P --hoist ...]\n"
    "\n"
    "Prints the cell at one stage: ir (as parsed), opt (after the optimising passes),\n"
    "schedule (the hoisted and recurrent parts), cuda (the generated CUDA C; nothing is\n"
    "compiled), llvm (the CPU backend's LLVM module, when built with LLVM).  schedule,\n"
    "cuda and llvm need --input-size, --hidden-size and --batch.\n"
    "\n"
    "  --stage S               ir, opt, schedule, cuda or llvm\n"
    "  --batch B               batch size the code is specialised for\n"
    "\n";

enum { OPT_STAGE = CLI_OPT_FIRST_OWN, OPT_BATCH };

typedef struct dump_args {
    cli_model_opts m;
    const char *stage;
    int64_t batch;
} dump_args;

static int parse(int argc, char **argv, dump_args *r)
{
    static const struct option opts[] = {
        CLI_MODEL_OPTIONS,
        {"stage", required_argument, NULL, OPT_STAGE},
        {"batch", required_argument, NULL, OPT_BATCH},
        {NULL, 0, NULL, 0},
    };
    cli_model_opts_init(&r->m, NULL);
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': printf("%s%s", dump_help, cli_model_help); return 0;
        case OPT_STAGE: r->stage = optarg; break;
        case OPT_BATCH:
            if (!cli_int("dump", "batch", optarg, 1, INT32_MAX, &r->batch))
                return CLI_EXIT_USAGE;
            break;
        case '?': return cli_bad_option("dump", argv);
        default:
            if (!cli_model_opt(&r->m, "dump", c, optarg))
                return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return cli_usage("dump", "unexpected argument '%s'", argv[optind]);
    if (!r->m.cell || !r->stage)
        return cli_usage("dump", "--cell and --stage are both needed");
    static const char *const stages[] = {"ir", "opt", "schedule", "cuda", "llvm"};
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++)
        if (strcmp(r->stage, stages[i]) == 0)
            return -1;
    return cli_usage("dump", "--stage wants ir, opt, schedule or cuda, not '%s'", r->stage);
}

static rnnc_status dump(const dump_args *r)
{
    rnnc_cell *cell = NULL;
    rnnc_hoist hoist;
    char *text = NULL;
    rnnc_status s = cli_load_cell(&r->m, &cell, &hoist);
    if (s != RNNC_OK)
        return s;
    s = rnnc_cell_dump(cell, r->stage, r->m.input_size, r->m.hidden_size,
                       r->m.proj_size > 0 ? r->m.proj_size : 0, r->batch, (int)hoist, &text);
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
