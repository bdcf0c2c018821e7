/*
 * cli_common.c: how the rnnc command reports errors and reads options
 * and their values.  A library failure exits 1 with the status and its detail; a
 * command line that cannot be understood exits 2.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

/* The command's own failure detail; empty when the library's applies. */
static char own_detail[1024];

rnnc_status cli_error(rnnc_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(own_detail, sizeof own_detail, fmt, ap);
    va_end(ap);
    return s;
}

const char *cli_detail(void)
{
    static char taken[sizeof own_detail];
    const char *lib = rnnc_last_error();
    snprintf(taken, sizeof taken, "%s", own_detail[0] ? own_detail : lib && *lib ? lib : "(no detail)");
    own_detail[0] = '\0';
    return taken;
}

int cli_fail(rnnc_status s)
{
    fprintf(stderr, "rnnc: %s: %s\n", rnnc_status_string(s), cli_detail());
    return CLI_EXIT_FAIL;
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rnnc %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'rnnc %s --help'.\n", cmd);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

/* getopt_long has already said what was wrong (opterr is on). */
int cli_bad_option(const char *cmd, char **argv)
{
    (void)argv;
    fprintf(stderr, "Try 'rnnc %s --help'.\n", cmd);
    return CLI_EXIT_USAGE;
}

bool cli_int(const char *cmd, const char *opt, const char *arg, int64_t lo, int64_t hi,
             int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (errno || end == arg || *end || v < lo || v > hi) {
        cli_usage(cmd, "--%s wants an integer in [%" PRId64 ", %" PRId64 "], not '%s'", opt, lo,
                  hi, arg);
        return false;
    }
    *out = v;
    return true;
}

bool cli_double(const char *cmd, const char *opt, const char *arg, double lo, double hi,
                double *out)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !isfinite(v) || v < lo || v > hi) {
        cli_usage(cmd, "--%s wants a number in [%g, %g], not '%s'", opt, lo, hi, arg);
        return false;
    }
    *out = v;
    return true;
}

bool cli_u64(const char *cmd, const char *opt, const char *arg, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 0);
    if (errno || end == arg || *end || arg[0] == '-') {
        cli_usage(cmd, "--%s wants a non-negative integer, not '%s'", opt, arg);
        return false;
    }
    *out = v;
    return true;
}

/* The model option named at `line` ("  --name ...") is one cmd refuses. */
static bool refused_line(const cli_command *cmd, uint32_t refuses, const char *line)
{
    if (strncmp(line, "  --", 4) != 0)
        return false;
    size_t n = strcspn(line + 4, " \n");
    for (const struct option *o = cmd->opts; o->name; o++)
        if (strlen(o->name) == n && strncmp(o->name, line + 4, n) == 0)
            return o->val >= CLI_OPT_CELL && o->val < CLI_OPT_FIRST_OWN &&
                   (refuses & CLI_REFUSE(o->val));
    return false;
}

/* cli_model_help less the options cmd refuses (and their continuation lines). */
static void print_model_help(const cli_command *cmd, uint32_t refuses)
{
    bool skip = false;
    for (const char *line = cli_model_help; *line;) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line + 1) : (int)strlen(line);
        if (strncmp(line, "  --", 4) == 0 || strncmp(line, "   ", 3) != 0)
            skip = refused_line(cmd, refuses, line);
        if (!skip)
            printf("%.*s", len, line);
        line += len;
    }
}

/* An option the command does not use: its usage (the help's first
 * paragraph) and what it said no to. */
static int refuse(const cli_command *cmd, const char *opt)
{
    const char *end = strstr(cmd->help, "\n\n");
    int n = end ? (int)(end - cmd->help) : (int)strlen(cmd->help);
    fprintf(stderr, "rnnc %s: --%s does not apply to `rnnc %s`\n%.*s\nTry 'rnnc %s --help'.\n",
            cmd->name, opt, cmd->name, n, cmd->help, cmd->name);
    return CLI_EXIT_USAGE;
}

int cli_parse(const cli_command *cmd, int argc, char **argv, void *args)
{
    return cli_parse_refusing(cmd, 0, argc, argv, args);
}

int cli_parse_refusing(const cli_command *cmd, uint32_t refuses, int argc, char **argv,
                       void *args)
{
    int id, at = -1;
    optind = 0;
    while ((id = getopt_long(argc, argv, cmd->shortopts, cmd->opts, &at)) != -1) {
        if (id == 'h') {
            fputs(cmd->help, stdout);
            if (cmd->model_help)
                print_model_help(cmd, refuses);
            return 0;
        }
        if (id == '?')
            return cli_bad_option(cmd->name, argv);
        if (id >= CLI_OPT_CELL && id < CLI_OPT_FIRST_OWN && (refuses & CLI_REFUSE(id)))
            return refuse(cmd, at >= 0 ? cmd->opts[at].name : "?");
        at = -1;
        if (!cmd->option(args, id, optarg))
            return CLI_EXIT_USAGE;
    }
    if (optind < argc)
        return cli_usage(cmd->name, "unexpected argument '%s'", argv[optind]);
    return -1;
}
