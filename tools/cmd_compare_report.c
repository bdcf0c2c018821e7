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

#include "runtime/runtime.h"
#include "tools/cli.h"

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

static void print_header(const cli_compare *c)
{
    char gpu[256];
    gpu_name(c->m.device, gpu, sizeof gpu);
    printf("rnnc compare: %s, T=%lld B=%lld I=%lld H=%lld", c->cell_name, (long long)c->T,
           (long long)c->B, (long long)c->m.input_size, (long long)c->m.hidden_size);
    if (c->m.proj_size > 0)
        printf(" P=%lld", (long long)c->m.proj_size);
    printf(", %lld layer%s%s%s, fp32, seed %llu\n", (long long)(c->m.layers ? c->m.layers : 1),
           c->m.layers > 1 ? "s" : "", c->m.bidirectional ? ", bidirectional" : "",
           c->random_lengths ? ", random lengths" : "", (unsigned long long)c->m.seed);
    printf("device: %s\n\n", gpu[0] ? gpu : "no GPU (CPU only)");
    printf("%-8s %12s %9s %14s %14s\n", "backend", "forward ms", "vs cudnn", "err vs interp",
           "err vs cudnn");
}

void cli_compare_print(const cli_compare *c)
{
    print_header(c);
    for (int i = 0; i < c->n_rows; i++) {
        const cli_compare_row *r = &c->rows[i];
        const char *name = rnnc_backend_name(r->backend);
        if (r->status != RNNC_OK) {
            printf("%-8s %s: %s\n", name, r->status == RNNC_ERR_NOT_BUILT ||
                                                  r->status == RNNC_ERR_NO_DEVICE ||
                                                  r->status == RNNC_ERR_UNSUPPORTED
                                              ? "unavailable"
                                              : "FAILED",
                   r->why);
            continue;
        }
        char ms[32], sp[32], ei[32], ec[32];
        snprintf(ms, sizeof ms, "%.3f%s", r->ms, r->runs == 1 ? "*" : "");
        cell_of(sp, sizeof sp, speedup(c, r), "%.3gx");
        cell_of(ei, sizeof ei, r->err_interp, "%.2e");
        cell_of(ec, sizeof ec, r->err_cudnn, "%.2e");
        printf("%-8s %12s %9s %14s %14s\n", name, ms, sp, ei, ec);
    }
    const cli_compare_row *rc = NULL;
    for (int i = 0; i < c->n_rows; i++)
        if (c->rows[i].backend == RNNC_BACKEND_CUDNN && c->rows[i].status == RNNC_OK)
            rc = &c->rows[i];
    if (rc)
        printf("\ncudnn ran algorithm %s (%s)\n", rnnc_cudnn_algo_name(rc->algo),
               c->m.cudnn_algo == RNNC_CUDNN_ALGO_AUTO
                   ? "auto: the fastest eligible one, timed once per shape, unless RNNC_AUTOTUNE=0"
                   : "--cudnn-algo");
    printf("\nforward ms: median of --iters runs after --warmup (* one run); vs cudnn: cudnn's "
           "time / this one's;\nerr: max|out - ref| / max|ref| over y and the final states.\n");
}

static void add_number(cJSON *o, const char *key, double v)
{
    if (isnan(v) || isinf(v))
        cJSON_AddNullToObject(o, key);
    else
        cJSON_AddNumberToObject(o, key, v);
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
    cJSON_AddBoolToObject(o, "random_lengths", c->random_lengths);
    cJSON_AddStringToObject(o, "dtype", "f32");
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
    if (r->status != RNNC_OK) {
        cJSON_AddStringToObject(o, "status", rnnc_status_string(r->status));
        cJSON_AddStringToObject(o, "why", r->why);
        return o;
    }
    cJSON_AddNumberToObject(o, "forward_ms", r->ms);
    cJSON_AddNumberToObject(o, "timed_runs", r->runs);
    add_number(o, "speedup_vs_cudnn", speedup(c, r));
    add_number(o, "max_rel_err_vs_interp", r->err_interp);
    add_number(o, "max_rel_err_vs_cudnn", r->err_cudnn);
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

/* Written beside `path` and renamed into place: never half a file. */
static rnnc_status write_atomic(const char *path, const char *text)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return cli_error(RNNC_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    bool ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) == 0)
        return RNNC_OK;
    int e = errno;
    remove(tmp);
    return cli_error(RNNC_ERR_IO, "cannot write '%s': %s", path, strerror(e));
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
