/*
 * cmd_compile.c: `rnnc compile`, an ahead-of-time bundle (.rnncpkg): the
 * fused backend's kernels for a model at several batch sizes and archs,
 * made without a GPU, and the cpu backend's code for named CPU targets, so
 * that a deployment compiles nothing (`rnnc run --bundle`, rnnc_bundle_load).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/cache/cache.h"
#include "tools/cli.h"

static const char compile_help[] =
    "Usage: rnnc compile --cell NAME|FILE.cell --input-size I --hidden-size H\n"
    "                    --arch sm_80[,sm_90,cpu...] [--batch B[,B2...]] -o FILE.rnncpkg\n"
    "                    [options]\n"
    "\n"
    "Writes the fused backend's kernels for each batch size and CUDA arch, and the cpu\n"
    "backend's code for each cpu target, into one bundle.  The kernels need NVRTC, not a\n"
    "GPU; their tuning is this machine's tuning record for each shape (left by\n"
    "autotuning), else the heuristic.  Format: docs/cache.md.\n"
    "\n"
    "  --arch T[,T2...]        targets: CUDA archs (sm_80, sm_90, ...); cpu (this machine's\n"
    "                          CPU and its features); cpu:x86-64-v2, cpu:x86-64-v3,\n"
    "                          cpu:x86-64-v4 (any x86-64 CPU of that level)\n"
    "  --batch B[,B2...]       batch sizes of the CUDA kernels (a forward at another one\n"
    "                          needs NVRTC); the cpu code serves every batch size\n"
    "  --sm-count N            SMs of the target devices (default: 108 for sm_80,\n"
    "                          132 for sm_90, 148 for sm_100; the kernels depend on it)\n"
    "  -o, --out FILE          the bundle to write\n"
    "  --cache                 also keep the compiled kernels in this machine's kernel\n"
    "                          cache (by default the cache is read, never written)\n"
    "\n";

enum { OPT_BATCH = CLI_OPT_FIRST_OWN, OPT_ARCH, OPT_SM_COUNT, OPT_CACHE };

#define MAX_LIST 32

typedef struct compile_args {
    cli_model_opts m;
    int64_t batches[MAX_LIST];
    int n_batches;
    char archs[MAX_LIST][24]; /* sm_90, cpu, cpu:x86-64-v3 */
    int n_archs;
    bool any_sm; /* some arch is a CUDA arch: batch sizes wanted */
    int64_t sm_count;
    const char *out;
    bool cache; /* --cache: fill the kernel cache too */
} compile_args;

/* Splits a comma list; each item through `one`.  False after a usage message. */
static bool parse_list(const char *opt, const char *arg, int *n,
                       bool (*one)(const char *item, void *out, int i), void *out)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", arg);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_LIST) {
            cli_usage("compile", "--%s takes at most %d values", opt, MAX_LIST);
            return false;
        }
        if (!one(tok, out, (*n)++))
            return false;
    }
    if (*n == 0)
        cli_usage("compile", "--%s wants a comma-separated list", opt);
    return *n > 0;
}

static bool one_batch(const char *item, void *out, int i)
{
    return cli_int("compile", "batch", item, 1, INT32_MAX, (int64_t *)out + i);
}

/* The library checks a cpu target's name; a CUDA arch is checked here. */
static bool one_arch(const char *item, void *out, int i)
{
    compile_args *r = out;
    bool cpu = strcmp(item, "cpu") == 0 || strncmp(item, "cpu:", 4) == 0;
    const char *num = strncmp(item, "sm_", 3) == 0 ? item + 3 : item;
    char *end = NULL;
    long v = cpu ? 0 : strtol(num, &end, 10);
    if (strlen(item) >= sizeof r->archs[i] ||
        (!cpu && (end == num || *end || v < 50 || v > 199))) {
        cli_usage("compile", "--arch wants archs like sm_80,sm_90 or cpu targets like cpu, "
                             "cpu:x86-64-v3, not '%s'", item);
        return false;
    }
    if (cpu)
        snprintf(r->archs[i], sizeof r->archs[i], "%s", item);
    else
        snprintf(r->archs[i], sizeof r->archs[i], "sm_%ld", v);
    r->any_sm |= !cpu;
    return true;
}

static bool own_option(void *args, int c, const char *arg)
{
    compile_args *r = args;
    switch (c) {
    case OPT_BATCH: return parse_list("batch", arg, &r->n_batches, one_batch, r->batches);
    case OPT_ARCH: r->any_sm = false; return parse_list("arch", arg, &r->n_archs, one_arch, r);
    case OPT_SM_COUNT: return cli_int("compile", "sm-count", arg, 1, 4096, &r->sm_count);
    case 'o': r->out = arg; return true;
    case OPT_CACHE: r->cache = true; return true;
    default: return cli_model_opt(&r->m, "compile", c, arg);
    }
}

/* -1 to go on, else the exit code. */
static int parse(int argc, char **argv, compile_args *r)
{
    static const struct option opts[] = {
        CLI_MODEL_OPTIONS,
        {"batch", required_argument, NULL, OPT_BATCH},
        {"arch", required_argument, NULL, OPT_ARCH},
        {"sm-count", required_argument, NULL, OPT_SM_COUNT},
        {"out", required_argument, NULL, 'o'},
        {"cache", no_argument, NULL, OPT_CACHE},
        {NULL, 0, NULL, 0},
    };
    cli_model_opts_init(&r->m, NULL);
    static const cli_command cmd = {"compile", compile_help, true, "ho:", opts, own_option};
    static const uint32_t refuses =
        CLI_REFUSE(CLI_OPT_DROPOUT) | CLI_REFUSE(CLI_OPT_SEED) | CLI_REFUSE(CLI_OPT_TRAINING) |
        CLI_REFUSE(CLI_OPT_BACKEND) | CLI_REFUSE(CLI_OPT_DEVICE) |
        CLI_REFUSE(CLI_OPT_CUDNN_ALGO);
    int rc = cli_parse_refusing(&cmd, refuses, argc, argv, r);
    if (rc >= 0)
        return rc;
    if (!r->m.cell || !r->m.input_size || !r->m.hidden_size || !r->n_archs || !r->out)
        return cli_usage("compile", "--cell, --input-size, --hidden-size, --arch and -o are all "
                                    "needed");
    if (r->any_sm && !r->n_batches)
        return cli_usage("compile", "--batch is needed for the CUDA archs' kernels");
    return -1;
}

static void describe(const compile_args *r, const rnnc_cell *cell, rnnc_model_desc *d)
{
    rnnc_model_desc_init(d);
    d->cell = cell;
    d->input_size = r->m.input_size;
    d->hidden_size = r->m.hidden_size;
    d->proj_size = r->m.proj_size > 0 ? r->m.proj_size : 0;
    d->num_layers = r->m.layers > 0 ? (int)r->m.layers : 1;
    d->bidirectional = r->m.bidirectional;
    d->batch_first = r->m.batch_first;
    d->no_bias = r->m.no_bias;
}

static void report(const compile_args *r, const rnnc_cell *cell)
{
    int n_sm = 0;
    for (int i = 0; i < r->n_archs; i++)
        n_sm += strncmp(r->archs[i], "cpu", 3) != 0;
    int sets = n_sm * r->n_batches, cpus = r->n_archs - n_sm;
    printf("rnnc: wrote %s: %s (I=%lld H=%lld)", r->out, rnnc_cell_name(cell),
           (long long)r->m.input_size, (long long)r->m.hidden_size);
    if (sets) {
        printf(", %d kernel set%s: batch", sets, sets == 1 ? "" : "s");
        for (int i = 0; i < r->n_batches; i++)
            printf("%s%lld", i ? "," : " ", (long long)r->batches[i]);
        printf(" x");
        for (int i = 0, k = 0; i < r->n_archs; i++)
            if (strncmp(r->archs[i], "cpu", 3) != 0)
                printf("%s%s", k++ ? "," : " ", r->archs[i]);
    }
    if (cpus) {
        printf(", cpu code for");
        for (int i = 0, k = 0; i < r->n_archs; i++)
            if (strncmp(r->archs[i], "cpu", 3) == 0)
                printf("%s%s", k++ ? "," : " ", r->archs[i][3] ? r->archs[i] + 4 : "native");
    }
    printf("\n");
}

int cmd_compile(int argc, char **argv)
{
    compile_args r = {0};
    int rc = parse(argc, argv, &r);
    if (rc >= 0)
        return rc;
    rnnc_cell *cell = NULL;
    rnnc_hoist hoist;
    const cli_path out[] = {{"-o", r.out}}, in[] = {{"--cell", r.m.cell}};
    rnnc_status s = cli_check_outputs(out, 1, in, 1);
    if (s == RNNC_OK)
        s = cli_load_cell(&r.m, &cell, &hoist);
    rt_cache_set_writes(r.cache); /* a bundle for elsewhere is no reason to fill this cache */
    if (s == RNNC_OK) {
        rnnc_model_desc d;
        describe(&r, cell, &d);
        d.hoist = hoist;
        const char *archs[MAX_LIST];
        for (int i = 0; i < r.n_archs; i++)
            archs[i] = r.archs[i];
        s = rnnc_bundle_compile_targets(&d, r.batches, r.n_batches, archs, r.n_archs,
                                        (int)r.sm_count, r.out);
    }
    if (s == RNNC_OK)
        report(&r, cell);
    rnnc_cell_destroy(cell);
    return s == RNNC_OK ? 0 : cli_fail(s);
}
