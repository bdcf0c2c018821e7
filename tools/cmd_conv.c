/*
 * cmd_conv.c: `rnnc conv` runs one convolution on cuDNN through the public
 * API (rnnc_conv_*): x, w and the optional bias and z from safetensors
 * files (or random ones of given shapes), y to a file; --check compares
 * with a plain host convolution, --bench times every algorithm cuDNN
 * offers.  Every argument is checked on the host before a GPU is touched.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tools/cmd_conv.h"

static const char conv_help[] =
    "Usage: rnnc conv --in FILE.safetensors [--in FILE ...] [--out Y.safetensors] [options]\n"
    "       rnnc conv --x-shape N,C,H,W --w-shape K,C/G,R,S [--bias] [--z] [options]\n"
    "\n"
    "One convolution on cuDNN: y = relu?(alpha1 * conv(x, w) + alpha2 * z + bias).  The\n"
    "tensors are named x, w, bias ([K]) and z (y's shape) in the files; their dtype (f32,\n"
    "f16 or bf16, that of x) is the one computed in.  Shapes follow --layout: nchw x\n"
    "[N, C, S...], w [K, C/groups, R...]; nhwc x [N, S..., C], w [K, R..., C/groups]; one\n"
    "to three spatial dims.  With --transposed, x is the input of the transposed\n"
    "convolution (shaped [N, K, S...]) and y has C channels.\n"
    "\n"
    "  --in FILE               safetensors file holding x, w, bias, z (repeatable)\n"
    "  --x-shape, --w-shape L  random f32 inputs of these shapes instead (--seed S)\n"
    "  --bias, --z             with random inputs: a random bias / z too\n"
    "  --save-inputs FILE      write the inputs used (x, w, bias, z)\n"
    "  --out FILE              write y\n"
    "  --stride L, --padding L, --dilation L   one value, or one per spatial dim (1, 0, 1)\n"
    "  --output-padding L      transposed: extra rows at the end (below the stride)\n"
    "  --groups G              groups (default 1; C for depthwise)\n"
    "  --layout nchw|nhwc      (default nchw)\n"
    "  --math ffma|tf32        f32 math (default ffma)\n"
    "  --algo heuristic|benchmark   cuDNN's heuristic, or timing every candidate\n"
    "  --deterministic         only algorithms cuDNN marks deterministic\n"
    "  --transposed            the transposed convolution (bias and z not allowed)\n"
    "  --relu                  ReLU after the sum\n"
    "  --alpha1 A, --alpha2 A  scales of conv(x, w) and z (default 1)\n"
    "  --unfused               bias, z and ReLU as separate cuDNN calls\n"
    "  --check                 compare y with a plain host convolution (f32; --tol, 1e-5)\n"
    "  --bench                 time every algorithm cuDNN offers for this convolution\n"
    "  --iters N               calls timed for the run itself (default 20)\n"
    "  --json FILE             the run and the --bench table as JSON\n"
    "  --device N              GPU (default 0)\n"
    "\n"
    "Exit codes: 0 done, 1 failed (or --check over --tol), 2 bad command line.\n";

enum {
    OPT_IN = CLI_OPT_FIRST_OWN, OPT_OUT, OPT_XSHAPE, OPT_WSHAPE, OPT_BIAS, OPT_Z, OPT_SEED,
    OPT_SAVE, OPT_STRIDE, OPT_PAD, OPT_DIL, OPT_OUTPAD, OPT_GROUPS, OPT_LAYOUT, OPT_MATH,
    OPT_ALGO, OPT_DET, OPT_TRANSPOSED, OPT_RELU, OPT_ALPHA1, OPT_ALPHA2, OPT_UNFUSED, OPT_CHECK,
    OPT_TOL, OPT_BENCH, OPT_ITERS, OPT_JSON, OPT_DEVICE
};

static const struct option conv_opts[] = {
    {"in", required_argument, NULL, OPT_IN}, {"out", required_argument, NULL, OPT_OUT},
    {"x-shape", required_argument, NULL, OPT_XSHAPE},
    {"w-shape", required_argument, NULL, OPT_WSHAPE}, {"bias", no_argument, NULL, OPT_BIAS},
    {"z", no_argument, NULL, OPT_Z}, {"seed", required_argument, NULL, OPT_SEED},
    {"save-inputs", required_argument, NULL, OPT_SAVE},
    {"stride", required_argument, NULL, OPT_STRIDE},
    {"padding", required_argument, NULL, OPT_PAD},
    {"dilation", required_argument, NULL, OPT_DIL},
    {"output-padding", required_argument, NULL, OPT_OUTPAD},
    {"groups", required_argument, NULL, OPT_GROUPS},
    {"layout", required_argument, NULL, OPT_LAYOUT}, {"math", required_argument, NULL, OPT_MATH},
    {"algo", required_argument, NULL, OPT_ALGO}, {"deterministic", no_argument, NULL, OPT_DET},
    {"transposed", no_argument, NULL, OPT_TRANSPOSED}, {"relu", no_argument, NULL, OPT_RELU},
    {"alpha1", required_argument, NULL, OPT_ALPHA1},
    {"alpha2", required_argument, NULL, OPT_ALPHA2},
    {"unfused", no_argument, NULL, OPT_UNFUSED}, {"check", no_argument, NULL, OPT_CHECK},
    {"tol", required_argument, NULL, OPT_TOL}, {"bench", no_argument, NULL, OPT_BENCH},
    {"iters", required_argument, NULL, OPT_ITERS}, {"json", required_argument, NULL, OPT_JSON},
    {"device", required_argument, NULL, OPT_DEVICE}, {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

#define MAX_IN 4
#define MAX_PERF 64

/* A list option: up to `max` values, and how many were given. */
typedef struct list {
    int64_t v[5];
    int n;
} list;

typedef struct conv_args {
    const char *in[MAX_IN], *out, *save, *json;
    int n_in;
    list xshape, wshape, stride, pad, dil, outpad;
    int64_t groups, iters, device;
    uint64_t seed;
    rnnc_conv_layout layout;
    rnnc_math math;
    rnnc_conv_algo_mode algo;
    bool deterministic, transposed, relu, unfused, check, bench, rand_bias, rand_z;
    double alpha1, alpha2, tol;
} conv_args;

static const char *const CMD = "conv";

/* "a,b,c" into l: 1..max values in [lo, hi]. */
static bool parse_list(const char *opt, const char *arg, int max, int64_t lo, list *l)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", arg);
    l->n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (l->n == max) {
            cli_usage(CMD, "--%s takes at most %d values", opt, max);
            return false;
        }
        if (!cli_int(CMD, opt, t, lo, INT32_MAX, &l->v[l->n++]))
            return false;
    }
    if (l->n == 0)
        cli_usage(CMD, "--%s needs a value", opt);
    return l->n > 0;
}

static bool pick(const char *opt, const char *arg, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (strcmp(arg, names[i]) == 0) {
            *out = i;
            return true;
        }
    cli_usage(CMD, "--%s: unknown value '%s'", opt, arg);
    return false;
}

static bool conv_option(void *p, int id, const char *arg)
{
    conv_args *a = p;
    static const char *const layouts[] = {"nchw", "nhwc"}, *const maths[] = {"ffma", "tf32"},
                             *const algos[] = {"heuristic", "benchmark"};
    int k = 0;
    switch (id) {
    case OPT_IN:
        if (a->n_in == MAX_IN)
            return cli_usage(CMD, "at most %d --in files", MAX_IN), false;
        a->in[a->n_in++] = arg;
        return true;
    case OPT_OUT: a->out = arg; return true;
    case OPT_SAVE: a->save = arg; return true;
    case OPT_JSON: a->json = arg; return true;
    case OPT_XSHAPE: return parse_list("x-shape", arg, 5, 1, &a->xshape);
    case OPT_WSHAPE: return parse_list("w-shape", arg, 5, 1, &a->wshape);
    case OPT_STRIDE: return parse_list("stride", arg, 3, 1, &a->stride);
    case OPT_PAD: return parse_list("padding", arg, 3, 0, &a->pad);
    case OPT_DIL: return parse_list("dilation", arg, 3, 1, &a->dil);
    case OPT_OUTPAD: return parse_list("output-padding", arg, 3, 0, &a->outpad);
    case OPT_GROUPS: return cli_int(CMD, "groups", arg, 1, INT32_MAX, &a->groups);
    case OPT_ITERS: return cli_int(CMD, "iters", arg, 1, 100000, &a->iters);
    case OPT_DEVICE: return cli_int(CMD, "device", arg, 0, 1024, &a->device);
    case OPT_SEED: return cli_u64(CMD, "seed", arg, &a->seed);
    case OPT_ALPHA1: return cli_double(CMD, "alpha1", arg, -1e30, 1e30, &a->alpha1);
    case OPT_ALPHA2: return cli_double(CMD, "alpha2", arg, -1e30, 1e30, &a->alpha2);
    case OPT_TOL: return cli_double(CMD, "tol", arg, 0, INFINITY, &a->tol);
    case OPT_LAYOUT:
        return pick("layout", arg, layouts, 2, &k) && (a->layout = (rnnc_conv_layout)k, true);
    case OPT_MATH:
        return pick("math", arg, maths, 2, &k) &&
               (a->math = k ? RNNC_MATH_TF32 : RNNC_MATH_FFMA, true);
    case OPT_ALGO:
        return pick("algo", arg, algos, 2, &k) && (a->algo = (rnnc_conv_algo_mode)k, true);
    case OPT_DET: a->deterministic = true; return true;
    case OPT_TRANSPOSED: a->transposed = true; return true;
    case OPT_RELU: a->relu = true; return true;
    case OPT_UNFUSED: a->unfused = true; return true;
    case OPT_CHECK: a->check = true; return true;
    case OPT_BENCH: a->bench = true; return true;
    case OPT_BIAS: a->rand_bias = true; return true;
    case OPT_Z: a->rand_z = true; return true;
    default: return false;
    }
}

/* Options that contradict each other (before any file is read). */
static int check_combination(const conv_args *a)
{
    bool random = a->xshape.n || a->wshape.n;
    if (a->n_in && random)
        return cli_usage(CMD, "give --in files or --x-shape/--w-shape, not both");
    if (!a->n_in && !random)
        return cli_usage(CMD, "no input: give --in FILE or --x-shape and --w-shape");
    if (random && (!a->xshape.n || !a->wshape.n))
        return cli_usage(CMD, "random inputs need both --x-shape and --w-shape");
    if (!random && (a->rand_bias || a->rand_z))
        return cli_usage(CMD, "--bias and --z make random ones: with --in, put them in a file");
    if (a->transposed && (a->rand_bias || a->rand_z || a->relu || a->unfused))
        return cli_usage(CMD, "--transposed runs the plain transposed convolution: no bias, z, "
                              "--relu or --unfused");
    if (a->outpad.n && !a->transposed)
        return cli_usage(CMD, "--output-padding is for --transposed");
    return -1;
}

/* ---------------------------------------------------------------- inputs */

typedef struct inputs {
    rnnc_tensors *files[MAX_IN];
    int n_files;
    rnnc_tensors *own; /* random inputs, and the descriptor's other tensors */
    const rnnc_tensor *x, *w, *bias, *z;
} inputs;

static const rnnc_tensor *find(const inputs *in, const char *name)
{
    for (int i = 0; i < in->n_files; i++) {
        const rnnc_tensor *t = rnnc_tensors_get(in->files[i], name);
        if (t)
            return t;
    }
    return in->own ? rnnc_tensors_get(in->own, name) : NULL;
}

static rnnc_status add_random(rnnc_tensors *ts, const char *name, const int64_t *shape, int rank,
                              cli_rng *r)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    float *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return cli_error(RNNC_ERR_OUT_OF_MEMORY, "random %s of %lld values", name, (long long)n);
    cli_fill(r, v, n, -1.0, 1.0);
    rnnc_status s = rnnc_tensors_add(ts, name, RNNC_F32, rank, shape, v);
    free(v);
    return s;
}

static rnnc_status read_inputs(const conv_args *a, inputs *in)
{
    rnnc_status s = rnnc_tensors_create(&in->own);
    for (int i = 0; s == RNNC_OK && i < a->n_in; i++) {
        s = rnnc_tensors_load(&in->files[i], a->in[i]);
        in->n_files += s == RNNC_OK;
    }
    cli_rng r = {a->seed};
    if (s == RNNC_OK && a->xshape.n)
        s = add_random(in->own, "x", a->xshape.v, a->xshape.n, &r);
    if (s == RNNC_OK && a->wshape.n)
        s = add_random(in->own, "w", a->wshape.v, a->wshape.n, &r);
    if (s != RNNC_OK)
        return s;
    in->x = find(in, "x");
    in->w = find(in, "w");
    if (!in->x || !in->w)
        return cli_error(RNNC_ERR_INVALID_ARG, "no tensor named '%s' in the --in files",
                         in->x ? "w" : "x");
    return RNNC_OK;
}

static void inputs_free(inputs *in)
{
    for (int i = 0; i < in->n_files; i++)
        rnnc_tensors_destroy(in->files[i]);
    rnnc_tensors_destroy(in->own);
}

/* ---------------------------------------------------------------- the descriptor */

/* A list option for each of `dims` axes: one value for all, or one each. */
static rnnc_status per_axis(const char *opt, const list *l, int dims, int64_t dflt,
                            int64_t out[3])
{
    if (l->n > 1 && l->n != dims)
        return cli_error(RNNC_ERR_INVALID_ARG, "--%s has %d values for %d spatial dims", opt,
                         l->n, dims);
    for (int i = 0; i < dims; i++)
        out[i] = l->n == 0 ? dflt : l->v[l->n == 1 ? 0 : i];
    return RNNC_OK;
}

static int64_t channels(const rnnc_tensor *t, rnnc_conv_layout l)
{
    return t->shape[l == RNNC_CONV_NCHW ? 1 : t->rank - 1];
}

static int64_t spatial(const rnnc_tensor *t, rnnc_conv_layout l, int i)
{
    return t->shape[(l == RNNC_CONV_NCHW ? 2 : 1) + i];
}

static rnnc_status check_tensors(const rnnc_tensor *x, const rnnc_tensor *w)
{
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank)
        return cli_error(RNNC_ERR_SHAPE, "x has rank %d and w rank %d: both must be 3, 4 or 5 "
                         "(1 to 3 spatial dims)", x->rank, w->rank);
    if (x->dtype != RNNC_F32 && x->dtype != RNNC_F16 && x->dtype != RNNC_BF16)
        return cli_error(RNNC_ERR_UNSUPPORTED, "x is %s: f32, f16 or bf16",
                         rnnc_dtype_name(x->dtype));
    if (w->dtype != x->dtype)
        return cli_error(RNNC_ERR_INVALID_ARG, "w is %s and x %s: give both in one dtype",
                         rnnc_dtype_name(w->dtype), rnnc_dtype_name(x->dtype));
    return RNNC_OK;
}

/* The transposed convolution's output sizes (the descriptor's input). */
static rnnc_status transposed_sizes(const conv_args *a, const rnnc_tensor *x, rnnc_conv_desc *d)
{
    int64_t op[3];
    rnnc_status s = per_axis("output-padding", &a->outpad, d->spatial_dims, 0, op);
    for (int i = 0; s == RNNC_OK && i < d->spatial_dims; i++) {
        if (op[i] >= d->stride[i] && op[i] >= d->dilation[i])
            return cli_error(RNNC_ERR_INVALID_ARG, "--output-padding %lld must be below the "
                             "stride or the dilation", (long long)op[i]);
        d->input[i] = (spatial(x, d->layout, i) - 1) * d->stride[i] - 2 * d->padding[i] +
                      d->dilation[i] * (d->kernel[i] - 1) + 1 + op[i];
        if (d->input[i] < 1)
            return cli_error(RNNC_ERR_SHAPE, "the transposed convolution's output would have "
                             "size %lld on spatial axis %d", (long long)d->input[i], i);
    }
    return s;
}

static rnnc_status make_desc(const conv_args *a, const inputs *in, rnnc_conv_desc *d)
{
    const rnnc_tensor *x = in->x, *w = in->w;
    rnnc_status s = check_tensors(x, w);
    if (s != RNNC_OK)
        return s;
    rnnc_conv_desc_init(d);
    d->spatial_dims = x->rank - 2;
    d->layout = a->layout;
    d->dtype = x->dtype;
    d->math = a->math;
    d->algo_mode = a->algo;
    d->deterministic = a->deterministic;
    d->device = (int)a->device;
    d->groups = a->groups;
    d->batch = x->shape[0];
    d->out_channels = w->shape[0];
    d->in_channels = channels(w, a->layout) * a->groups;
    for (int i = 0; i < d->spatial_dims; i++)
        d->kernel[i] = spatial(w, a->layout, i);
    s = per_axis("stride", &a->stride, d->spatial_dims, 1, d->stride);
    if (s == RNNC_OK)
        s = per_axis("padding", &a->pad, d->spatial_dims, 0, d->padding);
    if (s == RNNC_OK)
        s = per_axis("dilation", &a->dil, d->spatial_dims, 1, d->dilation);
    if (s != RNNC_OK)
        return s;
    int64_t want = a->transposed ? d->out_channels : d->in_channels;
    if (channels(x, a->layout) != want)
        return cli_error(RNNC_ERR_SHAPE, "x has %lld channels; w (%lld x %lld per group, "
                         "groups %lld) wants %lld%s", (long long)channels(x, a->layout),
                         (long long)d->out_channels, (long long)channels(w, a->layout),
                         (long long)a->groups, (long long)want,
                         a->transposed ? " (the transposed input has w's first dim)" : "");
    if (a->transposed)
        return transposed_sizes(a, x, d);
    for (int i = 0; i < d->spatial_dims; i++)
        d->input[i] = spatial(x, a->layout, i);
    return RNNC_OK;
}

static bool same_shape(const rnnc_tensor *t, const int64_t *shape, int rank)
{
    if (t->rank != rank)
        return false;
    for (int i = 0; i < rank; i++)
        if (t->shape[i] != shape[i])
            return false;
    return true;
}

/* bias ([K]) and z (y's shape): from the files, or random; checked. */
static rnnc_status epilogue_tensors(const conv_args *a, const rnnc_conv *c, inputs *in)
{
    int64_t xs[5], ws[5], ys[5], k = rnnc_conv_get_desc(c)->out_channels;
    int rank;
    rnnc_conv_shapes(c, xs, ws, ys, &rank);
    const int64_t *out_shape = a->transposed ? xs : ys;
    cli_rng r = {a->seed + 1};
    rnnc_status s = RNNC_OK;
    if (a->rand_bias)
        s = add_random(in->own, "bias", &k, 1, &r);
    if (s == RNNC_OK && a->rand_z)
        s = add_random(in->own, "z", ys, rank, &r);
    if (s != RNNC_OK)
        return s;
    in->bias = find(in, "bias");
    in->z = find(in, "z");
    if (a->transposed && (in->bias || in->z))
        return cli_error(RNNC_ERR_INVALID_ARG, "--transposed: the files hold a bias or z, which "
                         "only the forward takes");
    if (!same_shape(in->x, a->transposed ? ys : xs, rank) || !same_shape(in->w, ws, rank))
        return cli_error(RNNC_ERR_SHAPE, "x or w does not have the shape the convolution "
                         "computes from them");
    if (in->bias && (!same_shape(in->bias, &k, 1) || in->bias->dtype != in->x->dtype))
        return cli_error(RNNC_ERR_SHAPE, "bias must be [%lld] of %s", (long long)k,
                         rnnc_dtype_name(in->x->dtype));
    if (in->z && (!same_shape(in->z, out_shape, rank) || in->z->dtype != in->x->dtype))
        return cli_error(RNNC_ERR_SHAPE, "z must have y's shape and x's dtype (%s)",
                         rnnc_dtype_name(in->x->dtype));
    return RNNC_OK;
}

static rnnc_status save_inputs(const inputs *in, const char *path)
{
    rnnc_tensors *ts = NULL;
    rnnc_status s = rnnc_tensors_create(&ts);
    const rnnc_tensor *t[4] = {in->x, in->w, in->bias, in->z};
    const char *names[4] = {"x", "w", "bias", "z"};
    for (int i = 0; s == RNNC_OK && i < 4; i++)
        if (t[i])
            s = rnnc_tensors_add(ts, names[i], t[i]->dtype, t[i]->rank, t[i]->shape, t[i]->data);
    if (s == RNNC_OK)
        s = rnnc_tensors_save(ts, path);
    rnnc_tensors_destroy(ts);
    return s;
}

/* ---------------------------------------------------------------- on the GPU */

typedef struct dev {
    rnnc_conv_handle *h;
    void *x, *w, *y, *z, *b;
    int64_t ny;       /* elements of the output */
    size_t esz;
} dev;

static rnnc_status upload(const rnnc_tensor *t, int device, void **p)
{
    if (!t)
        return RNNC_OK;
    size_t n = (size_t)rnnc_tensor_numel(t) * rnnc_dtype_size(t->dtype);
    rnnc_status s = rnnc_device_alloc(device, n, p);
    return s == RNNC_OK ? rnnc_device_upload(*p, t->data, n) : s;
}

static rnnc_status dev_setup(const conv_args *a, const rnnc_conv *c, const inputs *in, dev *d)
{
    int64_t nx, nw, ny;
    rnnc_conv_numels(c, &nx, &nw, &ny);
    d->ny = a->transposed ? nx : ny;
    d->esz = rnnc_dtype_size(in->x->dtype);
    int dv = (int)a->device;
    rnnc_status s = rnnc_conv_handle_create(&d->h, dv);
    if (s == RNNC_OK)
        s = upload(in->x, dv, &d->x);
    if (s == RNNC_OK)
        s = upload(in->w, dv, &d->w);
    if (s == RNNC_OK)
        s = upload(in->z, dv, &d->z);
    if (s == RNNC_OK)
        s = upload(in->bias, dv, &d->b);
    if (s == RNNC_OK)
        s = rnnc_device_alloc(dv, (size_t)d->ny * d->esz, &d->y);
    return s;
}

static void dev_free(dev *d)
{
    rnnc_device_free(d->x), rnnc_device_free(d->w), rnnc_device_free(d->y);
    rnnc_device_free(d->z), rnnc_device_free(d->b);
    rnnc_conv_handle_destroy(d->h);
}

static rnnc_status run_once(const conv_args *a, const rnnc_conv *c, const dev *d)
{
    if (a->transposed)
        return rnnc_conv_transposed(d->h, c, d->x, d->w, d->y, NULL);
    if (!d->z && !d->b && !a->relu && a->alpha1 == 1.0 && !a->unfused)
        return rnnc_conv_forward(d->h, c, d->x, d->w, d->y, NULL);
    rnnc_conv_epilogue e;
    rnnc_conv_epilogue_init(&e);
    e.alpha1 = (float)a->alpha1;
    e.alpha2 = (float)a->alpha2;
    e.z = d->z;
    e.bias = d->b;
    e.relu = a->relu;
    e.unfused = a->unfused;
    return rnnc_conv_fused(d->h, c, &e, d->x, d->w, d->y, NULL);
}

/* Mean ms of one call over `iters` (after the first, which chooses). */
static rnnc_status time_runs(const conv_args *a, const rnnc_conv *c, const dev *d, double *ms)
{
    rnnc_status s = rnnc_device_sync(NULL);
    double t0 = cm_now_ms();
    for (int i = 0; s == RNNC_OK && i < a->iters; i++)
        s = run_once(a, c, d);
    if (s == RNNC_OK)
        s = rnnc_device_sync(NULL);
    *ms = (cm_now_ms() - t0) / (double)a->iters;
    return s;
}

/* max|y - ref| / max|ref| of the f32 output against the host convolution. */
static rnnc_status check_y(const conv_args *a, const rnnc_conv *c, const inputs *in,
                           const float *y, int64_t n, double *err)
{
    double *ref = malloc((size_t)n * sizeof *ref);
    if (!ref)
        return cli_error(RNNC_ERR_OUT_OF_MEMORY, "--check reference of %lld values", (long long)n);
    cli_conv_ref_args r = {in->x->data, in->w->data, in->z ? in->z->data : NULL,
                           in->bias ? in->bias->data : NULL, a->alpha1, a->alpha2, a->relu,
                           a->transposed};
    cli_conv_reference(c, &r, ref);
    double diff = 0, mag = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)y[i] - ref[i]);
        diff = e > diff || isnan(e) ? e : diff;
        mag = fabs(ref[i]) > mag ? fabs(ref[i]) : mag;
    }
    *err = isnan(diff) ? INFINITY : diff / (mag > 0 ? mag : 1);
    free(ref);
    return RNNC_OK;
}

/* ---------------------------------------------------------------- the command */

static rnnc_status save_y(const conv_args *a, const rnnc_conv *c, const void *y)
{
    int64_t xs[5], ws[5], ys[5];
    int rank;
    rnnc_conv_shapes(c, xs, ws, ys, &rank);
    rnnc_tensors *ts = NULL;
    rnnc_status s = rnnc_tensors_create(&ts);
    if (s == RNNC_OK)
        s = rnnc_tensors_add(ts, "y", rnnc_conv_get_desc(c)->dtype, rank,
                             a->transposed ? xs : ys, y);
    if (s == RNNC_OK)
        s = rnnc_tensors_save(ts, a->out);
    rnnc_tensors_destroy(ts);
    return s;
}

static void print_run(const conv_args *a, const rnnc_conv *c, const char *algo, double ms)
{
    int64_t xs[5], ws[5], ys[5];
    int rank;
    rnnc_conv_shapes(c, xs, ws, ys, &rank);
    const int64_t *o = a->transposed ? xs : ys;
    printf("y [");
    for (int i = 0; i < rank; i++)
        printf("%s%lld", i ? ", " : "", (long long)o[i]);
    printf("] %s: %s; %.4f ms a call (mean of %lld)\n",
           rnnc_dtype_name(rnnc_conv_get_desc(c)->dtype), algo, ms, (long long)a->iters);
}

static rnnc_status run_device(const conv_args *a, const rnnc_conv *c, const inputs *in,
                              double *err)
{
    dev d = {0};
    void *host = NULL;
    rnnc_conv_algo_perf perf[MAX_PERF];
    int n_perf = 0;
    double ms = 0;
    char algo[160] = "";
    rnnc_status s = dev_setup(a, c, in, &d);
    if (s == RNNC_OK)
        s = run_once(a, c, &d);
    if (s == RNNC_OK) {
        snprintf(algo, sizeof algo, "%s", rnnc_conv_handle_last_algo(d.h));
        s = time_runs(a, c, &d, &ms);
    }
    size_t bytes = (size_t)d.ny * d.esz;
    if (s == RNNC_OK && !(host = malloc(bytes)))
        s = cli_error(RNNC_ERR_OUT_OF_MEMORY, "y of %zu bytes", bytes);
    if (s == RNNC_OK)
        s = rnnc_device_download(host, d.y, bytes);
    if (s == RNNC_OK && a->bench) /* after y is read back: timing overwrites it */
        s = rnnc_conv_time_algos(d.h, c, a->transposed ? RNNC_CONV_BACKWARD_DATA
                                                        : RNNC_CONV_FORWARD,
                                 d.x, d.w, d.y, perf, MAX_PERF, &n_perf);
    if (s == RNNC_OK)
        print_run(a, c, algo, ms);
    if (s == RNNC_OK && a->check && in->x->dtype != RNNC_F32)
        s = cli_error(RNNC_ERR_UNSUPPORTED, "--check compares f32 only");
    if (s == RNNC_OK && a->check && (s = check_y(a, c, in, host, d.ny, err)) == RNNC_OK)
        printf("check: max relative error %.3g against the host convolution (tol %.3g): %s\n",
               *err, a->tol, *err <= a->tol ? "ok" : "FAILED");
    if (s == RNNC_OK && a->out)
        s = save_y(a, c, host);
    if (s == RNNC_OK && a->bench)
        cli_conv_print_table(perf, n_perf);
    if (s == RNNC_OK && a->json)
        s = cli_conv_json(a->json, c, a->transposed, algo, ms, a->check ? *err : NAN, perf,
                          n_perf);
    free(host);
    dev_free(&d);
    return s;
}

/* No output over an input, nor two outputs on one file (tools/cli_outputs.c). */
static rnnc_status check_paths(const conv_args *a)
{
    const cli_path outs[] = {{"--out", a->out}, {"--save-inputs", a->save}, {"--json", a->json}};
    cli_path ins[MAX_IN];
    for (int i = 0; i < a->n_in; i++)
        ins[i] = (cli_path){"--in", a->in[i]};
    return cli_check_outputs(outs, 3, ins, a->n_in);
}

int cmd_conv(int argc, char **argv)
{
    conv_args a = {.groups = 1, .iters = 20, .alpha1 = 1, .alpha2 = 1, .tol = 1e-5, .seed = 1};
    cli_command cmd = {"conv", conv_help, false, "h", conv_opts, conv_option};
    int rc = cli_parse(&cmd, argc, argv, &a);
    if (rc < 0)
        rc = check_combination(&a);
    if (rc >= 0)
        return rc;
    inputs in = {0};
    rnnc_conv *c = NULL;
    rnnc_conv_desc d;
    double err = 0;
    rnnc_status s = check_paths(&a);
    if (s == RNNC_OK)
        s = read_inputs(&a, &in);
    if (s == RNNC_OK)
        s = make_desc(&a, &in, &d);
    if (s == RNNC_OK)
        s = rnnc_conv_create(&c, &d);
    if (s == RNNC_OK)
        s = epilogue_tensors(&a, c, &in);
    if (s == RNNC_OK && a.save)
        s = save_inputs(&in, a.save);
    if (s == RNNC_OK)
        s = run_device(&a, c, &in, &err);
    rnnc_conv_destroy(c);
    inputs_free(&in);
    if (s != RNNC_OK)
        return cli_fail(s);
    return a.check && !(err <= a.tol) ? CLI_EXIT_FAIL : 0;
}
