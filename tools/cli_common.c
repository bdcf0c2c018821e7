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

int cli_parse(const cli_command *cmd, int argc, char **argv, void *args)
{
    int id;
    optind = 0;
    while ((id = getopt_long(argc, argv, cmd->shortopts, cmd->opts, NULL)) != -1) {
        if (id == 'h') {
            printf("%s%s", cmd->help, cmd->model_help ? cli_model_help : "");
            return 0;
        }
        if (id == '?')
            return cli_bad_option(cmd->name, argv);
        if (!cmd->option(args, id, optarg))
            return CLI_EXIT_USAGE;
    }
    if (optind < argc)
        return cli_usage(cmd->name, "unexpected argument '%s'", argv[optind]);
    return -1;
}
