/*
 * cmd_compile.c: `rnnc compile`, an ahead-of-time bundle (.rnncpkg): the
 * fused backend's kernels for a model at several batch sizes and archs,
 * made without a GPU, so that a deployment loads them with the driver
 * alone (`rnnc run --bundle`, rnnc_bundle_load).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/cache/cache.h"
#include "tools/cli.h"

static const char compile_help[] =
    "Usage: rnnc compile --cell NAME|FILE.cell --input-size I --hidden-size H\n"
    "                    --batch B[,B2...] --arch sm_80[,sm_90...] -o FILE.rnncpkg [options]\n"
    "\n"
    "Writes the fused backend's kernels for each batch size and arch into one bundle.\n"
    "Needs NVRTC, not a GPU.  The tuning is this machine's tuning record for each shape\n"
    "(left by autotuning), else the heuristic.  Format: docs/cache.md.\n"
    "\n"
    "  --batch B[,B2...]       batch sizes (a forward at another one needs NVRTC)\n"
    "  --arch sm_XX[,sm_YY]    target archs (sm_80, sm_90, ...)\n"
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
    int archs[MAX_LIST];
    int n_archs;
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

static bool one_arch(const char *item, void *out, int i)
{
    const char *num = strncmp(item, "sm_", 3) == 0 ? item + 3 : item;
    char *end = NULL;
    long v = strtol(num, &end, 10);
    if (end == num || *end || v < 50 || v > 199) {
        cli_usage("compile", "--arch wants archs like sm_80,sm_90, not '%s'", item);
        return false;
    }
    ((int *)out)[i] = (int)v;
    return true;
}

static bool own_option(void *args, int c, const char *arg)
{
    compile_args *r = args;
    switch (c) {
    case OPT_BATCH: return parse_list("batch", arg, &r->n_batches, one_batch, r->batches);
    case OPT_ARCH: return parse_list("arch", arg, &r->n_archs, one_arch, r->archs);
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
    if (!r->m.cell || !r->m.input_size || !r->m.hidden_size || !r->n_batches || !r->n_archs ||
        !r->out)
        return cli_usage("compile", "--cell, --input-size, --hidden-size, --batch, --arch and "
                                    "-o are all needed");
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
    printf("rnnc: wrote %s: %s (I=%lld H=%lld), %d kernel set%s: batch", r->out,
           rnnc_cell_name(cell), (long long)r->m.input_size, (long long)r->m.hidden_size,
           r->n_batches * r->n_archs, r->n_batches * r->n_archs == 1 ? "" : "s");
    for (int i = 0; i < r->n_batches; i++)
        printf("%s%lld", i ? "," : " ", (long long)r->batches[i]);
    printf(" x");
    for (int i = 0; i < r->n_archs; i++)
        printf("%ssm_%d", i ? "," : " ", r->archs[i]);
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
        s = rnnc_bundle_compile(&d, r.batches, r.n_batches, r.archs, r.n_archs,
                                (int)r.sm_count, r.out);
    }
    if (s == RNNC_OK)
        report(&r, cell);
    rnnc_cell_destroy(cell);
    return s == RNNC_OK ? 0 : cli_fail(s);
}
