/*
 * cmd_show.c: `rnnc show` lists the tensors of a safetensors file, and
 * `rnnc diff` compares two (e.g. rnnc's output with PyTorch's), so that a
 * user or a shell test can check files without Python.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static const char show_help[] =
    "Usage: rnnc show FILE.safetensors\n"
    "\n"
    "One line per tensor: name, dtype, shape, and for numbers min, max and mean.\n";

static const char diff_help[] =
    "Usage: rnnc diff OUT.safetensors REF.safetensors [--tol T]\n"
    "\n"
    "For each tensor, max|out - ref| / max|ref|.  Both files must hold the same names\n"
    "and shapes.  Exits 0 if every tensor is within --tol (default 1e-5), else 1.\n"
    "\n"
    "  --tol T                 largest relative error accepted\n";

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

static void show_one(const char *name, const rnnc_tensor *t)
{
    printf("%s %s ", name, rnnc_dtype_name(t->dtype));
    print_shape(t);
    int64_t n = rnnc_tensor_numel(t);
    double v, lo = INFINITY, hi = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n && value_at(t, i, &v); i++) {
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
    }
    if (n > 0 && value_at(t, 0, &v))
        printf(" min %.6g max %.6g mean %.6g", lo, hi, sum / (double)n);
    printf("\n");
}

static int help_or_files(int argc, char **argv, const char *cmd, const char *help, int want,
                         double *tol)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {"tol", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(help, stdout);
            return 0;
        }
        if (c == 't' && tol && cli_double(cmd, "tol", optarg, 0, INFINITY, tol))
            continue;
        return c == 't' && tol ? CLI_EXIT_USAGE : cli_bad_option(cmd, argv);
    }
    if (argc - optind != want)
        return cli_usage(cmd, "wants %d file%s", want, want == 1 ? "" : "s");
    return -1;
}

int cmd_show(int argc, char **argv)
{
    int rc = help_or_files(argc, argv, "show", show_help, 1, NULL);
    if (rc >= 0)
        return rc;
    rnnc_tensors *ts = NULL;
    rnnc_status s = rnnc_tensors_load(&ts, argv[optind]);
    if (s != RNNC_OK)
        return cli_fail(s);
    for (int i = 0; i < rnnc_tensors_count(ts); i++)
        show_one(rnnc_tensors_name(ts, i), rnnc_tensors_get(ts, rnnc_tensors_name(ts, i)));
    rnnc_tensors_destroy(ts);
    return 0;
}

/* Same names, shapes and numeric dtypes in both. */
static rnnc_status same_layout(const rnnc_tensors *a, const rnnc_tensors *b, const char *pa,
                               const char *pb)
{
    if (rnnc_tensors_count(a) != rnnc_tensors_count(b))
        return cli_error(RNNC_ERR_SHAPE, "%s holds %d tensors, %s %d", pa, rnnc_tensors_count(a),
                         pb, rnnc_tensors_count(b));
    for (int i = 0; i < rnnc_tensors_count(a); i++) {
        const char *n = rnnc_tensors_name(a, i);
        const rnnc_tensor *x = rnnc_tensors_get(a, n), *y = rnnc_tensors_get(b, n);
        double v;
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

int cmd_diff(int argc, char **argv)
{
    double tol = 1e-5;
    int rc = help_or_files(argc, argv, "diff", diff_help, 2, &tol);
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
    double worst = 0;
    for (int i = 0; i < rnnc_tensors_count(a); i++) {
        const char *n = rnnc_tensors_name(a, i);
        double e = rel_err(rnnc_tensors_get(a, n), rnnc_tensors_get(b, n));
        printf("%s max rel error %.3e%s\n", n, e, e <= tol ? "" : "  > tol");
        worst = e > worst || isnan(e) ? e : worst;
    }
    rnnc_tensors_destroy(a);
    rnnc_tensors_destroy(b);
    if (worst <= tol)
        return 0;
    fprintf(stderr, "rnnc diff: %s differs from %s by %.3e (tolerance %.1e)\n", pa, pb, worst,
            tol);
    return CLI_EXIT_FAIL;
}
