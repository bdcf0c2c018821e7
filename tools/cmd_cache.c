/*
 * cmd_cache.c: `rnnc cache info|list|clear`, the on-disk kernel cache.  The
 * one command that reaches past the public API: the cache is the runtime's
 * (runtime/cache/cache.h), and only it knows its layout.
 */
#include <string.h>

#include "runtime/cache/cache.h"
#include "tools/cli.h"

static const char cache_help[] =
    "Usage: rnnc cache info|list|clear [--json]\n"
    "\n"
    "The on-disk cache of compiled kernels: $RNNC_CACHE_DIR, else $XDG_CACHE_HOME/rnnc,\n"
    "else ~/.cache/rnnc (RNNC_CACHE=0 turns it off; RNNC_CACHE_MAX_MB bounds its size).\n"
    "\n"
    "  info                    where it is, how many entries and bytes, the limit\n"
    "  list                    one line per entry (--json: one JSON object)\n"
    "  clear                   remove every entry\n";

int cmd_cache(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    int c;
    bool json = false;
    optind = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(cache_help, stdout);
            return 0;
        }
        if (c == 'j') {
            json = true;
            continue;
        }
        return cli_bad_option("cache", argv);
    }
    if (argc - optind != 1)
        return cli_usage("cache", "wants one of info, list, clear");
    const char *what = argv[optind];
    rnnc_status s;
    if (json && strcmp(what, "list") != 0)
        return cli_usage("cache", "--json goes with list only");
    if (strcmp(what, "info") == 0)
        s = rt_cache_info(stdout);
    else if (strcmp(what, "list") == 0)
        s = json ? rt_cache_list_json(stdout) : rt_cache_list(stdout);
    else if (strcmp(what, "clear") == 0)
        s = rt_cache_clear(stdout);
    else
        return cli_usage("cache", "wants one of info, list, clear, not '%s'", what);
    return s == RNNC_OK ? 0 : cli_fail(s);
}
