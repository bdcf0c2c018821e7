/*
 * cmd_show_bundle.c: `rnnc show FILE.rnncpkg`: what a bundle holds, one line
 * an entry (the fused backend's kernel sets by arch, the cpu backend's
 * object files by cpu target, with whether this machine's CPU runs them),
 * then its tuning records, so that whoever deploys one sees what it will
 * serve before a run says it served nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "runtime/cache/cache.h"
#include "tools/cli.h"
#ifdef RNNC_HAVE_LLVM
#include "runtime/cpu/cpu.h"
#endif

/* An object file's target: its name, vector width, and whether this CPU
 * runs its code (-1: unknown, an rnnc without the cpu backend). */
typedef struct cpu_target_view {
    char name[48];
    int vw, runs_here;
} cpu_target_view;

static cpu_target_view view_of(const char *text)
{
    cpu_target_view v = {.vw = 0, .runs_here = -1};
    sscanf(text, "%40s %d", v.name, &v.vw);
#ifdef RNNC_HAVE_LLVM
    static rt_cpu_target host; /* described once: LLVM reads the CPU's features */
    static int described = 0;  /* 1 done, -1 failed */
    if (!described)
        described = rt_cpu_target_get("native", &host) == RNNC_OK ? 1 : -1;
    rt_cpu_target t;
    if (described > 0 && rt_cpu_target_parse(text, &t))
        v.runs_here = rt_cpu_target_runs_here(&t, &host);
#endif
    return v;
}

static void print_entry(const rt_bundle_entry *e)
{
    if (!e->target) {
        printf("  kernel  %-24s sm_%-14d %9zu bytes\n", e->name, e->sm, e->size);
        return;
    }
    cpu_target_view v = view_of(e->target);
    char arch[64];
    snprintf(arch, sizeof arch, "cpu:%s", v.name);
    printf("  cpu     %-24s %-17s %9zu bytes  %d floats a vector%s\n", e->name, arch, e->size,
           v.vw, v.runs_here < 0 ? "" : v.runs_here ? "; this CPU runs it" : "; not this CPU");
}

static cJSON *entry_json(const rt_bundle_entry *e)
{
    cJSON *o = cJSON_CreateObject();
    char arch[64];
    cJSON_AddStringToObject(o, "kind", e->target ? "cpu" : "kernel");
    cJSON_AddStringToObject(o, "name", e->name);
    cJSON_AddNumberToObject(o, "bytes", (double)e->size);
    if (!e->target) {
        snprintf(arch, sizeof arch, "sm_%d", e->sm);
        cJSON_AddStringToObject(o, "arch", arch);
        return o;
    }
    cpu_target_view v = view_of(e->target);
    snprintf(arch, sizeof arch, "cpu:%s", v.name);
    cJSON_AddStringToObject(o, "arch", arch);
    cJSON_AddNumberToObject(o, "floats_per_vector", v.vw);
    cJSON_AddStringToObject(o, "target", e->target);
    if (v.runs_here < 0)
        cJSON_AddNullToObject(o, "runs_here");
    else
        cJSON_AddBoolToObject(o, "runs_here", v.runs_here);
    return o;
}

static int show_json(const char *path, const rt_bundle *b)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "file", path);
    cJSON *es = cJSON_AddArrayToObject(root, "entries");
    for (int i = 0; i < rt_bundle_count(b); i++) {
        rt_bundle_entry e;
        rt_bundle_entry_at(b, i, &e);
        cJSON_AddItemToArray(es, entry_json(&e));
    }
    cJSON_AddItemToObject(root, "tuning", rt_bundle_tuning_json(b));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return cli_fail(cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory"));
    printf("%s\n", text);
    free(text);
    return 0;
}

int cli_show_bundle(const char *path, bool json)
{
    rt_bundle *b = NULL;
    rnnc_status s = rt_bundle_load(&b, path);
    if (s != RNNC_OK)
        return cli_fail(s);
    int rc = 0;
    if (json) {
        rc = show_json(path, b);
    } else {
        int n = rt_bundle_count(b), nt = rt_bundle_tuning_count(b);
        printf("bundle %s: %d entr%s, %d tuning record%s\n", path, n, n == 1 ? "y" : "ies", nt,
               nt == 1 ? "" : "s");
        for (int i = 0; i < n; i++) {
            rt_bundle_entry e;
            rt_bundle_entry_at(b, i, &e);
            print_entry(&e);
        }
        for (int i = 0; i < nt; i++) {
            const char *shape, *tuning;
            rt_bundle_tuning_at(b, i, &shape, &tuning);
            printf("  tuning  %s: %s\n", shape, tuning);
        }
    }
    rt_bundle_destroy(b);
    return rc;
}
