/*
 * fuzz_cli.c: the command line's option parser: getopt_long over the model
 * options every command shares, their value parsers (integers, numbers,
 * choices), then, for a built-in cell and small sizes, the cell and an
 * interpreter model made from what was parsed.  The input is the argument
 * list, one argument per NUL-separated piece.  Usage messages go to stderr:
 * run it with -close_fd_mask=3.
 */
#include <string.h>

#include "tools/cli.h"
#include "tests/fuzz/fuzz.h"

#define MAX_ARGS 32

static bool own_option(void *args, int id, const char *arg)
{
    return cli_model_opt(args, "fuzz", id, arg);
}

static bool small(const cli_model_opts *o)
{
    return o->input_size > 0 && o->input_size <= 16 && o->hidden_size > 0 &&
           o->hidden_size <= 16 && o->layers <= 3 && o->proj_size < 16 &&
           !strchr(o->cell, '/') && !strstr(o->cell, ".cell");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct option opts[] = {CLI_MODEL_OPTIONS, {NULL, 0, NULL, 0}};
    static const cli_command cmd = {"fuzz", "", false, "h", opts, own_option};
    char *text = malloc(size + 1), *argv[MAX_ARGS + 2];
    FUZZ_CHECK(text);
    memcpy(text, data, size);
    text[size] = '\0';
    int argc = 0;
    argv[argc++] = "fuzz";
    for (char *p = text; p < text + size && argc < MAX_ARGS + 1; p += strlen(p) + 1)
        argv[argc++] = p;
    argv[argc] = NULL;
    cli_model_opts o;
    cli_model_opts_init(&o, "lstm");
    if (cli_parse(&cmd, argc, argv, &o) < 0 && small(&o)) {
        rnnc_cell *cell = NULL;
        rnnc_model *m = NULL;
        rnnc_hoist hoist;
        if (cli_load_cell(&o, &cell, &hoist) == RNNC_OK &&
            cli_model_create(&o, cell, hoist, RNNC_BACKEND_INTERP, &m) == RNNC_OK)
            rnnc_model_destroy(m);
        rnnc_cell_destroy(cell);
    }
    free(text);
    return 0;
}
