/*
 * cmd_conv.h: what the files of `rnnc conv` share (cmd_conv.c runs it,
 * cmd_conv_ref.c is the host reference of --check, cmd_conv_report.c
 * prints the --bench table and writes the JSON); on top of cli.h.
 */
#ifndef RNNC_CMD_CONV_H
#define RNNC_CMD_CONV_H

#include "tools/cli.h"

/* What `rnnc conv --check` computes on the host: the forward
 * act(alpha1 * conv(in, w) + alpha2 * z + bias) (z, bias may be NULL), or
 * the transposed convolution of in (shaped as c's y) into c's x shape. */
typedef struct cli_conv_ref_args {
    const float *in, *w, *z, *bias;
    double alpha1, alpha2;
    bool relu, transposed;
} cli_conv_ref_args;
void cli_conv_reference(const rnnc_conv *c, const cli_conv_ref_args *a, double *out);
/* The --bench table on stdout; the run as JSON (err NAN: not checked). */
void cli_conv_print_table(const rnnc_conv_algo_perf *p, int n);
rnnc_status cli_conv_json(const char *path, const rnnc_conv *c, bool transposed, const char *algo,
                          double ms, double err, const rnnc_conv_algo_perf *p, int n);

#endif /* RNNC_CMD_CONV_H */
