/*
 * cmd_compare_report.c: the results of `rnnc compare` as a table on stdout
 * and as JSON (cJSON) with what machine they were measured on, so figures
 * in the README can say where they came from.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "runtime/device/device.h"
#include "tools/cmd_compare.h"

/* "NVIDIA H100 ..., sm_90, ..." or "" when no GPU is usable. */
static void gpu_name(int device, char *buf, size_t n)
{
    buf[0] = '\0';
#ifdef RT_HAVE_CUDA_H
    if (rt_cuda_available() && rt_cuda_describe(device, buf, n) != RNNC_OK)
        buf[0] = '\0';
#else
    (void)device, (void)n;
#endif
}

static void host_name(char *buf, size_t n)
{
    if (gethostname(buf, n) != 0)
        snprintf(buf, n, "unknown");
    buf[n - 1] = '\0';
}

static double speedup(const cli_compare *c, const cli_compare_row *r)
{
    for (int i = 0; i < c->n_rows; i++)
        if (c->rows[i].backend == RNNC_BACKEND_CUDNN && c->rows[i].status == RNNC_OK &&
            r->status == RNNC_OK && r->ms > 0)
            return c->rows[i].ms / r->ms;
    return NAN;
}

static void cell_of(char *buf, size_t n, double v, const char *fmt)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, fmt, v);
}

/* "fp32", "fp32 tf32", "fp32 3xtf32", "f16", "bf16" */
static const char *dtype_math(const cli_compare *c)
{
    if (c->m.dtype == RNNC_F16)
        return "f16";
    if (c->m.dtype == RNNC_BF16)
        return "bf16";
    return c->m.math == RNNC_MATH_TF32 ? "fp32 tf32" : c->m.math == RNNC_MATH_3XTF32 ? "fp32 3xtf32" : "fp32";
}

void cli_compare_print_header(const cli_compare *c)
{
    char gpu[256];
    gpu_name(c->m.device, gpu, sizeof gpu);
    printf("rnnc compare: %s, T=%lld B=%lld I=%lld H=%lld", c->cell_name, (long long)c->T,
           (long long)c->B, (long long)c->m.input_size, (long long)c->m.hidden_size);
    if (c->m.proj_size > 0)
        printf(" P=%lld", (long long)c->m.proj_size);
    printf(", %lld layer%s%s", (long long)(c->m.layers ? c->m.layers : 1),
           c->m.layers > 1 ? "s" : "", c->m.bidirectional ? ", bidirectional" : "");
    if (c->min_length > 0)
        printf(", random lengths in [%lld, %lld]", (long long)c->min_length, (long long)c->T);
    printf(", %s, seed %llu\n", dtype_math(c), (unsigned long long)c->m.seed);
    printf("device: %s\n\n", gpu[0] ? gpu : "no GPU (CPU only)");
    printf("%-8s %12s %9s %14s %14s", "backend", c->m.training ? "train ms" : "forward ms",
           "vs cudnn", "err vs interp", "err vs cudnn");
    if (c->m.training)
        printf(" %15s %15s", "grad vs interp", "grad vs cudnn");
    printf("\n");
}

void cli_compare_print_row(const cli_compare *c, int i)
{
    const cli_compare_row *r = &c->rows[i];
    char name[32];
    if (r->backend == RNNC_BACKEND_AUTO && r->status == RNNC_OK)
        snprintf(name, sizeof name, "auto=%s", rnnc_backend_name(r->ran));
    else
        snprintf(name, sizeof name, "%s", rnnc_backend_name(r->backend));
    if (r->status != RNNC_OK) {
        printf("%-8s %s: %s\n", name, r->status == RNNC_ERR_NOT_BUILT ||
                                              r->status == RNNC_ERR_NO_DEVICE ||
                                              r->status == RNNC_ERR_UNSUPPORTED
                                          ? "unavailable"
                                          : "FAILED",
               r->why);
    } else {
        char ms[32], sp[32], ei[32], ec[32], gi[32], gc[32];
        snprintf(ms, sizeof ms, "%.3f%s", r->ms, r->runs == 1 ? "*" : "");
        cell_of(sp, sizeof sp, speedup(c, r), "%.3gx");
        cell_of(ei, sizeof ei, r->err_interp, "%.2e");
        cell_of(ec, sizeof ec, r->err_cudnn, "%.2e");
        printf("%-8s %12s %9s %14s %14s", name, ms, sp, ei, ec);
        cell_of(gi, sizeof gi, r->gerr_interp, "%.2e");
        cell_of(gc, sizeof gc, r->gerr_cudnn, "%.2e");
        if (c->m.training)
            printf(" %15s %15s", gi, gc);
        printf("\n");
    }
    fflush(stdout); /* a row is shown as soon as it is known */
}

void cli_compare_print(const cli_compare *c)
{
    cli_compare_print_header(c);
    for (int i = 0; i < c->n_rows; i++)
        cli_compare_print_row(c, i);
    cli_compare_print_footer(c);
}

void cli_compare_print_footer(const cli_compare *c)
{
    const cli_compare_row *rc = NULL;
    for (int i = 0; i < c->n_rows; i++)
        if (c->rows[i].backend == RNNC_BACKEND_CUDNN && c->rows[i].status == RNNC_OK)
            rc = &c->rows[i];
    if (rc)
        printf("\ncudnn ran algorithm %s (%s)\n", rnnc_cudnn_algo_name(rc->algo),
               c->m.cudnn_algo == RNNC_CUDNN_ALGO_AUTO
                   ? "auto: the fastest eligible one, timed once per shape, unless RNNC_AUTOTUNE=0"
                   : "--cudnn-algo");
    printf("\n%s ms: median of --iters runs after --warmup (* one run); vs cudnn: cudnn's "
           "time / this one's;\nerr: max|out - ref| / max|ref| over y and the final states.\n",
           c->m.training ? "train (a training forward plus its backward)" : "forward");
    if (c->m.training)
        printf("grad: the same over dx, the initial states' gradients and each weight's.\n");
}

static void add_number(cJSON *o, const char *key, double v)
{
    if (isnan(v) || isinf(v))
        cJSON_AddNullToObject(o, key);
    else
        cJSON_AddNumberToObject(o, key, v);
}

static const char *dtype_name(rnnc_dtype t)
{
    return t == RNNC_F16 ? "f16" : t == RNNC_BF16 ? "bf16" : "f32";
}

static cJSON *config_json(const cli_compare *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cell", c->cell_name);
    cJSON_AddNumberToObject(o, "seq", (double)c->T);
    cJSON_AddNumberToObject(o, "batch", (double)c->B);
    cJSON_AddNumberToObject(o, "input_size", (double)c->m.input_size);
    cJSON_AddNumberToObject(o, "hidden_size", (double)c->m.hidden_size);
    cJSON_AddNumberToObject(o, "proj_size", (double)(c->m.proj_size > 0 ? c->m.proj_size : 0));
    cJSON_AddNumberToObject(o, "layers", (double)(c->m.layers ? c->m.layers : 1));
    cJSON_AddBoolToObject(o, "bidirectional", c->m.bidirectional);
    cJSON_AddBoolToObject(o, "random_lengths", c->min_length > 0);
    cJSON_AddNumberToObject(o, "min_length", (double)c->min_length);
    cJSON_AddBoolToObject(o, "training", c->m.training);
    cJSON_AddStringToObject(o, "dtype", dtype_name(c->m.dtype));
    cJSON_AddStringToObject(o, "math", rnnc_math_name(c->m.math));
    cJSON_AddBoolToObject(o, "bias", !c->m.no_bias);
    cJSON_AddNumberToObject(o, "seed", (double)c->m.seed);
    cJSON_AddNumberToObject(o, "warmup", c->warmup);
    cJSON_AddNumberToObject(o, "iters", c->iters);
    return o;
}

static cJSON *row_json(const cli_compare *c, const cli_compare_row *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "backend", rnnc_backend_name(r->backend));
    cJSON_AddBoolToObject(o, "ran", r->status == RNNC_OK);
    if (r->backend == RNNC_BACKEND_AUTO && r->status == RNNC_OK)
        cJSON_AddStringToObject(o, "ran_on", rnnc_backend_name(r->ran));
    if (r->status != RNNC_OK) {
        cJSON_AddStringToObject(o, "status", rnnc_status_string(r->status));
        cJSON_AddStringToObject(o, "why", r->why);
        return o;
    }
    cJSON_AddNumberToObject(o, c->m.training ? "train_ms" : "forward_ms", r->ms);
    cJSON_AddNumberToObject(o, "timed_runs", r->runs);
    add_number(o, "speedup_vs_cudnn", speedup(c, r));
    add_number(o, "max_rel_err_vs_interp", r->err_interp);
    add_number(o, "max_rel_err_vs_cudnn", r->err_cudnn);
    if (c->m.training) {
        add_number(o, "max_rel_err_grad_vs_interp", r->gerr_interp);
        add_number(o, "max_rel_err_grad_vs_cudnn", r->gerr_cudnn);
    }
    if (r->backend == RNNC_BACKEND_CUDNN)
        cJSON_AddStringToObject(o, "cudnn_algo", rnnc_cudnn_algo_name(r->algo));
    return o;
}

static cJSON *report_json(const cli_compare *c)
{
    char host[256], gpu[256];
    host_name(host, sizeof host);
    gpu_name(c->m.device, gpu, sizeof gpu);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "rnnc_version", rnnc_version_string());
    cJSON_AddStringToObject(o, "hostname", host);
    if (gpu[0])
        cJSON_AddStringToObject(o, "gpu", gpu);
    else
        cJSON_AddNullToObject(o, "gpu");
    cJSON_AddItemToObject(o, "config", config_json(c));
    cJSON *rows = cJSON_AddArrayToObject(o, "results");
    for (int i = 0; i < c->n_rows; i++)
        cJSON_AddItemToArray(rows, row_json(c, &c->rows[i]));
    return o;
}

/* Through common/: a unique temp file renamed into place, never half a file. */
static rnnc_status write_atomic(const char *path, const char *text)
{
    cm_why why;
    rnnc_status s = cm_write_file(path, CM_OUT_DISCARD, text, strlen(text), "\n", 1, &why);
    return s == RNNC_OK ? RNNC_OK : cli_error(s, "%s", why.text);
}

rnnc_status cli_compare_json(const cli_compare *c, const char *path)
{
    cJSON *o = report_json(c);
    char *text = o ? cJSON_Print(o) : NULL;
    rnnc_status s = text ? write_atomic(path, text)
                         : cli_error(RNNC_ERR_OUT_OF_MEMORY, "out of memory for the JSON report");
    if (s == RNNC_OK)
        printf("wrote %s\n", path);
    cJSON_free(text);
    cJSON_Delete(o);
    return s;
}
