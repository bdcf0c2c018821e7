/*
 * cmd_conv_report.c: what `rnnc conv` prints and writes: the --bench table
 * and the JSON file (the shapes, what ran, its time, the check, the table).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "common/common.h"
#include "tools/cmd_conv.h"

void cli_conv_print_table(const rnnc_conv_algo_perf *p, int n)
{
    printf("\n%-28s %10s %12s %5s %5s\n", "algorithm", "ms", "workspace B", "det", "tc");
    for (int i = 0; i < n; i++)
        printf("%-28s %10.4f %12zu %5s %5s\n", p[i].name, (double)p[i].ms, p[i].workspace,
               p[i].deterministic ? "yes" : "no", p[i].tensor_cores ? "yes" : "no");
}

rnnc_status cli_conv_json(const char *path, const rnnc_conv *c, bool transposed, const char *algo,
                          double ms, double err, const rnnc_conv_algo_perf *p, int n)
{
    const rnnc_conv_desc *d = rnnc_conv_get_desc(c);
    int64_t sh[3][5];
    int rank;
    rnnc_conv_shapes(c, sh[0], sh[1], sh[2], &rank);
    cJSON *root = cJSON_CreateObject();
    static const char *const names[3] = {"x_shape", "w_shape", "y_shape"};
    for (int t = 0; t < 3; t++) {
        cJSON *arr = cJSON_AddArrayToObject(root, names[t]);
        for (int i = 0; i < rank; i++)
            cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)sh[t][i]));
    }
    cJSON_AddStringToObject(root, "dtype", rnnc_dtype_name(d->dtype));
    cJSON_AddStringToObject(root, "layout", d->layout == RNNC_CONV_NHWC ? "nhwc" : "nchw");
    cJSON_AddBoolToObject(root, "transposed", transposed);
    cJSON_AddStringToObject(root, "algo", algo);
    cJSON_AddNumberToObject(root, "ms", ms);
    if (!isnan(err))
        cJSON_AddNumberToObject(root, "check_rel_err", isfinite(err) ? err : -1);
    cJSON *rows = cJSON_AddArrayToObject(root, "algos");
    for (int i = 0; i < n; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "name", p[i].name);
        cJSON_AddNumberToObject(r, "ms", (double)p[i].ms);
        cJSON_AddNumberToObject(r, "workspace", (double)p[i].workspace);
        cJSON_AddBoolToObject(r, "deterministic", p[i].deterministic);
        cJSON_AddBoolToObject(r, "tensor_cores", p[i].tensor_cores);
        cJSON_AddItemToArray(rows, r);
    }
    char *text = cJSON_Print(root);
    cm_why why; /* the one safe writer (common/): never half a file */
    rnnc_status s = text ? cm_write_file(path, CM_OUT_DISCARD, text, strlen(text), "\n", 1, &why)
                         : RNNC_ERR_OUT_OF_MEMORY;
    free(text);
    cJSON_Delete(root);
    if (s != RNNC_OK)
        return cli_error(s, "%s", text ? why.text : "out of memory for the JSON report");
    return RNNC_OK;
}

