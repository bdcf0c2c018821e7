/*
 * main.c: the `rnnc` command: finds the subcommand and hands it the rest
 * of the command line.  Exit codes: 0 done, 1 failed (the library's status
 * and detail on stderr), 2 the command line was not understood.
 */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"

/* Where the docs are: <prefix>/share/doc/rnnc beside an installed rnnc
 * (<prefix>/bin/rnnc), else the source tree's docs/ this rnnc was built from. */
static const char *doc_dir(void)
{
    static char dir[PATH_MAX + 64];
    char exe[PATH_MAX], probe[PATH_MAX + 80];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0'; /* the bin folder */
        size_t nb = strlen(exe), ns = strlen(RNNC_BIN_SUBDIR);
        if (nb > ns && strcmp(exe + nb - ns, RNNC_BIN_SUBDIR) == 0 && exe[nb - ns - 1] == '/') {
            exe[nb - ns - 1] = '\0'; /* the prefix */
            snprintf(dir, sizeof dir, "%s/%s", exe, RNNC_DOC_SUBDIR);
            snprintf(probe, sizeof probe, "%s/cli.md", dir);
            if (access(probe, R_OK) == 0)
                return dir;
        }
    }
    snprintf(probe, sizeof probe, "%s/cli.md", RNNC_SOURCE_DOCS);
    return access(probe, R_OK) == 0 ? RNNC_SOURCE_DOCS : NULL;
}

static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"run", cmd_run, "run a cell over a sequence: safetensors in, safetensors out"},
    {"grad", cmd_grad, "gradients of a training forward: weights, x and initial states"},
    {"random", cmd_random, "write random weights and inputs for `rnnc run`"},
    {"compare", cmd_compare, "run backends on the same data: time and agreement"},
    {"dump", cmd_dump, "print a cell at a stage: ir, opt, schedule, cuda, llvm, backward, train"},
    {"demo", cmd_demo, "run an LSTM on the best backend here and say what ran"},
    {"show", cmd_show, "list the tensors of a safetensors file, or what a bundle holds"},
    {"diff", cmd_diff, "compare the tensors of two safetensors files"},
    {"cache", cmd_cache, "the on-disk kernel cache: info, list, clear"},
    {"compile", cmd_compile, "write a bundle of GPU kernels and cpu code ahead of time"},
    {"conv", cmd_conv, "one cuDNN convolution from safetensors files; --bench times each algorithm"},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void help(FILE *f)
{
    fprintf(f, "Usage: rnnc COMMAND [options]\n"
               "       rnnc COMMAND --help\n"
               "       rnnc --version\n\nCommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nBackends built into this rnnc and usable here:");
    for (int b = RNNC_BACKEND_INTERP; b <= RNNC_BACKEND_CUDNN; b++)
        if (rnnc_backend_available((rnnc_backend)b))
            fprintf(f, " %s", rnnc_backend_name((rnnc_backend)b));
    const char *docs = doc_dir();
    if (docs)
        fprintf(f, "\nDocumentation: %s/cli.md (this command), and the rest of %s\n", docs,
                docs);
    else
        fprintf(f, "\nDocumentation: docs/cli.md of the rnnc sources (not found here)\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        help(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        if (argc > 2 && strcmp(cmd, "help") == 0) {
            char *sub[] = {argv[2], "--help", NULL};
            for (size_t i = 0; i < N_COMMANDS; i++)
                if (strcmp(argv[2], commands[i].name) == 0)
                    return commands[i].run(2, sub);
        }
        help(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("rnnc %s\nbackends built:", rnnc_version_string());
        for (int b = RNNC_BACKEND_INTERP; b <= RNNC_BACKEND_CUDNN; b++)
            if (rnnc_backend_built((rnnc_backend)b))
                printf(" %s", rnnc_backend_name((rnnc_backend)b));
        printf("\n");
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0) {
            static char prog[32]; /* getopt_long's messages start with argv[0] */
            snprintf(prog, sizeof prog, "rnnc %s", commands[i].name);
            argv[1] = prog;
            return commands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "rnnc: unknown command '%s'\n\n", cmd);
    help(stderr);
    return CLI_EXIT_USAGE;
}
