/*
 * cmd_cache.c: `rnnc cache info|list|clear`, the on-disk kernel cache,
 * through the public rnnc_cache_* calls only: the layout on disk is the
 * library's, the words on the screen are this command's.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

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

#define MIB 1048576.0

static int disabled(void)
{
    printf("kernel cache: disabled (RNNC_CACHE=0, or no HOME)\n");
    return 0;
}

static int show_info(void)
{
    rnnc_cache_summary c;
    rnnc_status s = rnnc_cache_info(&c);
    if (s != RNNC_OK)
        return cli_fail(s);
    if (!c.enabled)
        return disabled();
    printf("directory:      %s\n", c.directory);
    printf("kernels:        %llu entries, %.2f MiB\n", (unsigned long long)c.kernels,
           (double)c.kernel_bytes / MIB);
    printf("limit:          %.2f MiB (RNNC_CACHE_MAX_MB)\n", (double)c.limit_bytes / MIB);
    printf("tuning records: %llu\n", (unsigned long long)c.tuning_records);
    printf("entry format:   %d, codegen version %d\n", c.entry_format, c.codegen_version);
    if (c.nvrtc)
        printf("NVRTC:          %d.%d\n", c.nvrtc_major, c.nvrtc_minor);
    else
        printf("NVRTC:          not available\n");
    return 0;
}

/* The local time of an entry's last use in `fmt`. */
static const char *when(const rnnc_cache_entry *e, const char *fmt, char *buf, size_t n)
{
    struct tm tm;
    time_t t = (time_t)e->last_used;
    strftime(buf, n, fmt, localtime_r(&t, &tm));
    return buf;
}

/* An entry's arch: sm_XX, or cpu for the cpu backend's object files (sm 0). */
static const char *arch(const rnnc_cache_entry *e, char *buf, size_t n)
{
    if (!e->valid)
        return "?";
    if (e->sm == 0)
        return "cpu";
    snprintf(buf, n, "sm_%d", e->sm);
    return buf;
}

static void print_list(const rnnc_cache_entries *l)
{
    char buf[32], a[16];
    printf("%-32s  %-6s %13s  %-19s  %s\n", "key", "arch", "size", "last used", "kernel");
    for (size_t i = 0; i < rnnc_cache_entries_count(l); i++) {
        const rnnc_cache_entry *e = rnnc_cache_entries_get(l, i);
        printf("%.32s  %-6s %9.1f KiB  %s  %s\n", e->key, arch(e, a, sizeof a),
               (double)e->bytes / 1024.0,
               when(e, "%Y-%m-%d %H:%M:%S", buf, sizeof buf),
               e->valid ? e->kernel : "(corrupt: will be replaced)");
    }
    printf("%zu entries, %.2f MiB in %s\n", rnnc_cache_entries_count(l),
           (double)rnnc_cache_entries_bytes(l) / MIB, rnnc_cache_entries_directory(l));
}

static cJSON *entry_json(const rnnc_cache_entry *e)
{
    char buf[32];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "key", e->key);
    cJSON_AddNumberToObject(o, "sm", e->sm);
    cJSON_AddNumberToObject(o, "bytes", (double)e->bytes);
    cJSON_AddStringToObject(o, "last_used", when(e, "%Y-%m-%dT%H:%M:%S%z", buf, sizeof buf));
    cJSON_AddStringToObject(o, "kernel", e->valid ? e->kernel : "");
    cJSON_AddBoolToObject(o, "valid", e->valid);
    return o;
}

/* One JSON object: directory (null when the cache is off), entries
 * [{key, sm, bytes, last_used, kernel, valid}], count, bytes. */
static int print_json(const rnnc_cache_entries *l)
{
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "entries");
    const char *dir = rnnc_cache_entries_directory(l);
    if (dir)
        cJSON_AddStringToObject(root, "directory", dir);
    else
        cJSON_AddNullToObject(root, "directory");
    for (size_t i = 0; i < rnnc_cache_entries_count(l); i++)
        cJSON_AddItemToArray(arr, entry_json(rnnc_cache_entries_get(l, i)));
    cJSON_AddNumberToObject(root, "count", cJSON_GetArraySize(arr));
    cJSON_AddNumberToObject(root, "bytes", (double)rnnc_cache_entries_bytes(l));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return cli_fail(RNNC_ERR_OUT_OF_MEMORY);
    printf("%s\n", text);
    free(text);
    return 0;
}

static int show_list(bool json)
{
    rnnc_cache_entries *l = NULL;
    rnnc_status s = rnnc_cache_list(&l);
    if (s != RNNC_OK)
        return cli_fail(s);
    int rc = 0;
    if (json)
        rc = print_json(l);
    else if (!rnnc_cache_entries_directory(l))
        rc = disabled();
    else
        print_list(l);
    rnnc_cache_entries_destroy(l);
    return rc;
}

static int clear(void)
{
    rnnc_cache_cleared c;
    rnnc_status s = rnnc_cache_clear(&c);
    if (s != RNNC_OK)
        return cli_fail(s);
    if (!c.enabled)
        return disabled();
    printf("removed %llu files (%.2f MiB) from %s\n", (unsigned long long)c.files,
           (double)c.bytes / MIB, c.directory);
    return 0;
}

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
    if (json && strcmp(what, "list") != 0)
        return cli_usage("cache", "--json goes with list only");
    if (strcmp(what, "info") == 0)
        return show_info();
    if (strcmp(what, "list") == 0)
        return show_list(json);
    if (strcmp(what, "clear") == 0)
        return clear();
    return cli_usage("cache", "wants one of info, list, clear, not '%s'", what);
}
