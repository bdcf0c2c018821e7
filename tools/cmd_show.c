/*
 * cmd_show.c: `rnnc show` lists the tensors of a safetensors file (or what
 * a bundle holds: cmd_show_bundle.c), and `rnnc diff` compares two (e.g.
 * rnnc's output with PyTorch's), so that a user or a shell test can check
 * files without Python.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "runtime/cache/cache.h"
#include "tools/cli.h"

static const char show_help[] =
    "Usage: rnnc show FILE.safetensors|FILE.rnncpkg [--json]\n"
    "\n"
    "One line per tensor: name, dtype, shape, and for numbers min, max and mean.  Of a\n"
    "bundle (`rnnc compile`): one line per kernel set (its arch) and cpu object file (its\n"
    "cpu target, and whether this machine's CPU runs it), then its tuning records.\n"
    "\n"
    "  --json                  one JSON object instead: {file, tensors: [{name, dtype,\n"
    "                          shape, min, max, mean}]}; of a bundle {file, entries:\n"
    "                          [{kind, name, arch, bytes, ...}], tuning: [{shape, tuning}]}\n";

static const char diff_help[] =
    "Usage: rnnc diff OUT.safetensors REF.safetensors [--tol T] [--json]\n"
    "\n"
    "For each tensor, max|out - ref| / max|ref|.  Both files must hold the same names\n"
    "and shapes, except that the inputs of `rnnc run` (x, lengths, <state>0) may be in one\n"
    "file only: a file of inputs and outputs together (PyTorch's reference files) is\n"
    "compared on its outputs.  Exits 0 if every tensor is within --tol (default 1e-5),\n"
    "else 1.\n"
    "\n"
    "  --tol T                 largest relative error accepted\n"
    "  --json                  one JSON object instead: {out, ref, tol, ok, tensors:\n"
    "                          [{name, max_rel_error, ok}], skipped: [names]}\n";

/* Element i of a numeric tensor as a double; false for a dtype it cannot read. */
static bool value_at(const rnnc_tensor *t, int64_t i, double *v)
{
    switch (t->dtype) {
    case RNNC_F32: *v = ((const float *)t->data)[i]; return true;
    case RNNC_F64: *v = ((const double *)t->data)[i]; return true;
    case RNNC_I64: *v = (double)((const int64_t *)t->data)[i]; return true;
    case RNNC_I32: *v = ((const int32_t *)t->data)[i]; return true;
    default: return false;
    }
}

static void print_shape(const rnnc_tensor *t)
{
    printf("[");
    for (int k = 0; k < t->rank; k++)
        printf("%s%lld", k ? ", " : "", (long long)t->shape[k]);
    printf("]");
}

typedef struct stats {
    bool numeric;
    double lo, hi, mean;
} stats;

static stats stats_of(const rnnc_tensor *t)
{
    int64_t n = rnnc_tensor_numel(t);
    double v, sum = 0;
    stats st = {n > 0 && value_at(t, 0, &v), INFINITY, -INFINITY, 0};
    for (int64_t i = 0; st.numeric && i < n && value_at(t, i, &v); i++) {
        st.lo = v < st.lo ? v : st.lo;
        st.hi = v > st.hi ? v : st.hi;
        sum += v;
    }
    st.mean = n > 0 ? sum / (double)n : 0;
    return st;
}

static void show_one(const char *name, const rnnc_tensor *t)
{
    printf("%s %s ", name, rnnc_dtype_name(t->dtype));
    print_shape(t);
    stats st = stats_of(t);
    if (st.numeric)
        printf(" min %.6g max %.6g mean %.6g", st.lo, st.hi, st.mean);
    printf("\n");
}

/* A number, or null where JSON has none (NaN, infinity). */
static void add_number(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *tensor_json(const char *name, const rnnc_tensor *t)
{
    cJSON *o = cJSON_CreateObject(), *shape = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "dtype", rnnc_dtype_name(t->dtype));
    for (int k = 0; k < t->rank; k++)
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[k]));
    cJSON_AddItemToObject(o, "shape", shape);
    stats st = stats_of(t);
    if (st.numeric) {
        add_number(o, "min", st.lo);
        add_number(o, "max", st.hi);
        add_number(o, "mean", st.mean);
    }
    return o;
}

/* Prints and frees root; false when out of memory. */
static bool print_json(cJSON *root)
{
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (text)
        printf("%s\n", text);
    free(text);
    return text != NULL;
}

static int help_or_files(int argc, char **argv, const char *cmd, const char *help, int want,
                         double *tol, bool *json)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {"tol", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(help, stdout);
            return 0;
        }
        if (c == 'j') {
            *json = true;
            continue;
        }
        if (c == 't' && tol && cli_double(cmd, "tol", optarg, 0, INFINITY, tol))
            continue;
        if (c == 't' && !tol) /* show has no tolerance */
            return cli_usage(cmd, "--tol does not apply to `rnnc %s`\n%.*s", cmd,
                             (int)strcspn(help, "\n"), help);
        return c == 't' ? CLI_EXIT_USAGE : cli_bad_option(cmd, argv);
    }
    if (argc - optind != want)
        return cli_usage(cmd, "wants %d file%s", want, want == 1 ? "" : "s");
    return -1;
}

int cmd_show(int argc, char **argv)
{
    bool json = false;
    int rc = help_or_files(argc, argv, "show", show_help, 1, NULL, &json);
    if (rc >= 0)
        return rc;
    if (rt_bundle_file_is(argv[optind]))
        return cli_show_bundle(argv[optind], json);
    rnnc_tensors *ts = NULL;
    rnnc_status s = rnnc_tensors_load(&ts, argv[optind]);
    if (s != RNNC_OK)
        return cli_fail(s);
    cJSON *root = json ? cJSON_CreateObject() : NULL;
    if (json)
        cJSON_AddStringToObject(root, "file", argv[optind]);
    cJSON *arr = json ? cJSON_AddArrayToObject(root, "tensors") : NULL;
    for (int i = 0; i < rnnc_tensors_count(ts); i++) {
        const char *n = rnnc_tensors_name(ts, i);
        if (json)
            cJSON_AddItemToArray(arr, tensor_json(n, rnnc_tensors_get(ts, n)));
        else
            show_one(n, rnnc_tensors_get(ts, n));
    }
    rnnc_tensors_destroy(ts);
    if (json && !print_json(root))
        return cli_fail(cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory"));
    return 0;
}

/* `name`, in one file only, is an input of `rnnc run` (x, lengths, <state>0
 * where `other` holds <state>y): a file holding inputs and outputs together
 * is compared on its outputs. */
static bool run_input(const char *name, const rnnc_tensors *other)
{
    size_t n = strlen(name);
    char out[256];
    if (strcmp(name, "x") == 0 || strcmp(name, "lengths") == 0)
        return true;
    if (n < 2 || n >= sizeof out || name[n - 1] != '0')
        return false;
    snprintf(out, sizeof out, "%.*sy", (int)(n - 1), name);
    return rnnc_tensors_get(other, out) != NULL;
}

/* Every name of a in b (or an input of `rnnc run` left out), with the same
 * shape and a numeric dtype. */
static rnnc_status one_way(const rnnc_tensors *a, const rnnc_tensors *b, const char *pa,
                           const char *pb)
{
    for (int i = 0; i < rnnc_tensors_count(a); i++) {
        const char *n = rnnc_tensors_name(a, i);
        const rnnc_tensor *x = rnnc_tensors_get(a, n), *y = rnnc_tensors_get(b, n);
        double v;
        if (!y && run_input(n, b))
            continue;
        if (!y)
            return cli_error(RNNC_ERR_NOT_FOUND, "%s has '%s', %s does not", pa, n, pb);
        if (x->rank != y->rank ||
            memcmp(x->shape, y->shape, sizeof x->shape[0] * (size_t)x->rank) != 0)
            return cli_error(RNNC_ERR_SHAPE, "'%s' has different shapes in %s and %s", n, pa, pb);
        if (rnnc_tensor_numel(x) > 0 && (!value_at(x, 0, &v) || !value_at(y, 0, &v)))
            return cli_error(RNNC_ERR_FORMAT, "'%s' is not of a dtype diff reads", n);
    }
    return RNNC_OK;
}

static rnnc_status same_layout(const rnnc_tensors *a, const rnnc_tensors *b, const char *pa,
                               const char *pb)
{
    rnnc_status s = one_way(a, b, pa, pb);
    return s == RNNC_OK ? one_way(b, a, pb, pa) : s;
}

static double rel_err(const rnnc_tensor *out, const rnnc_tensor *ref)
{
    double num = 0, den = 0, o = 0, r = 0; /* same_layout checked both dtypes */
    for (int64_t i = 0; i < rnnc_tensor_numel(ref); i++) {
        value_at(out, i, &o);
        value_at(ref, i, &r);
        if (isnan(o) != isnan(r))
            return INFINITY;
        num = fabs(o - r) > num ? fabs(o - r) : num;
        den = fabs(r) > den ? fabs(r) : den;
    }
    return den > 0 ? num / den : num;
}

/* One line (or JSON entry) per tensor both files hold; the worst error. */
static double compare_all(const rnnc_tensors *a, const rnnc_tensors *b, double tol, cJSON *root)
{
    double worst = 0;
    cJSON *arr = root ? cJSON_AddArrayToObject(root, "tensors") : NULL;
    cJSON *skipped = root ? cJSON_AddArrayToObject(root, "skipped") : NULL;
    for (int pass = 0; pass < 2; pass++) { /* the inputs in one file only, by name */
        const rnnc_tensors *x = pass ? b : a, *y = pass ? a : b;
        for (int i = 0; skipped && i < rnnc_tensors_count(x); i++)
            if (!rnnc_tensors_get(y, rnnc_tensors_name(x, i)))
                cJSON_AddItemToArray(skipped, cJSON_CreateString(rnnc_tensors_name(x, i)));
    }
    for (int i = 0; i < rnnc_tensors_count(a); i++) {
        const char *n = rnnc_tensors_name(a, i);
        if (!rnnc_tensors_get(b, n))
            continue; /* an input, in one file only */
        double e = rel_err(rnnc_tensors_get(a, n), rnnc_tensors_get(b, n));
        worst = e > worst || isnan(e) ? e : worst;
        if (!root) {
            printf("%s max rel error %.3e%s\n", n, e, e <= tol ? "" : "  > tol");
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", n);
        add_number(o, "max_rel_error", e);
        cJSON_AddBoolToObject(o, "ok", e <= tol);
        cJSON_AddItemToArray(arr, o);
    }
    return worst;
}

int cmd_diff(int argc, char **argv)
{
    double tol = 1e-5;
    bool json = false;
    int rc = help_or_files(argc, argv, "diff", diff_help, 2, &tol, &json);
    if (rc >= 0)
        return rc;
    const char *pa = argv[optind], *pb = argv[optind + 1];
    rnnc_tensors *a = NULL, *b = NULL;
    rnnc_status s;
    if ((s = rnnc_tensors_load(&a, pa)) || (s = rnnc_tensors_load(&b, pb)) ||
        (s = same_layout(a, b, pa, pb))) {
        rnnc_tensors_destroy(a);
        rnnc_tensors_destroy(b);
        return cli_fail(s);
    }
    cJSON *root = json ? cJSON_CreateObject() : NULL;
    if (root) {
        cJSON_AddStringToObject(root, "out", pa);
        cJSON_AddStringToObject(root, "ref", pb);
        cJSON_AddNumberToObject(root, "tol", tol);
    }
    double worst = compare_all(a, b, tol, root);
    rnnc_tensors_destroy(a);
    rnnc_tensors_destroy(b);
    if (root) {
        cJSON_AddBoolToObject(root, "ok", worst <= tol);
        add_number(root, "max_rel_error", worst);
        if (!print_json(root))
            return cli_fail(cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory"));
    }
    if (worst <= tol)
        return 0;
    fprintf(stderr, "rnnc diff: %s differs from %s by %.3e (tolerance %.1e)\n", pa, pb, worst,
            tol);
    return CLI_EXIT_FAIL;
}
