/*
 * cmd_compare.h: what the files of `rnnc compare` share (cmd_compare.c runs
 * the rows, cmd_compare_report.c prints them and writes the JSON,
 * cmd_compare_train.c times --training steps); on top of cli.h.
 */
#ifndef RNNC_CMD_COMPARE_H
#define RNNC_CMD_COMPARE_H

#include "tools/cli.h"

#define CLI_MAX_BACKENDS 8

/* The gradients of `rnnc compare --training`: the shared inputs dy and
 * dfinal, or one row's outputs dx, dinit and every weight's gradient (in
 * the model's weight order, one after another). */
typedef struct cli_grads {
    float *dy, *dfinal[CLI_MAX_STATES];
    float *dx, *dinit[CLI_MAX_STATES];
    float *dw;
    int64_t n_dw;
    int n_weights;
    int64_t *w_count; /* [n_weights]: elements of each weight, in order */
} cli_grads;

/* One backend's row of `rnnc compare`. */
typedef struct cli_compare_row {
    rnnc_backend backend;
    rnnc_backend ran;     /* the backend that ran the row's last call (AUTO's pick) */
    rnnc_status status;   /* RNNC_OK: it ran */
    char why[512];        /* the detail when it did not */
    double ms;            /* median forward time */
    int runs;             /* how many runs the median is of */
    double err_interp, err_cudnn; /* NAN: no such reference */
    rnnc_cudnn_algo algo; /* cudnn: the algorithm it ran (AUTO: not cudnn) */
    bool done;            /* it has run (rows run references first) */
    cli_io io;
    cli_grads grad;                    /* --training: this row's gradients */
    double gerr_interp, gerr_cudnn;    /* --training: over dx, dinit and dw; NAN: none */
} cli_compare_row;

typedef struct cli_compare {
    cli_model_opts m;
    const char *cell_name; /* as the library names it */
    int64_t T, B;
    int64_t min_length; /* random lengths in [min_length, T]; 0: all T */
    int warmup, iters;
    const char *json;
    bool quiet; /* --quiet: no progress line */
    cli_compare_row rows[CLI_MAX_BACKENDS];
    int n_rows;
    cli_grads grad_in; /* --training: dy and dfinal, the same for every row */
} cli_compare;

/* The table on stdout, and the JSON file when asked (cmd_compare_report.c):
 * whole, or its header, each row as it is known, and the notes after. */
void cli_compare_print(const cli_compare *c);
void cli_compare_print_header(const cli_compare *c);
void cli_compare_print_row(const cli_compare *c, int i);
void cli_compare_print_footer(const cli_compare *c);
/* --training (cmd_compare_train.c): random dy and dfinal for io's shapes;
 * one row's timed training step (forward and backward) on model m, with
 * its gradients kept in the row; the gradients' error against a reference
 * row; freeing a row's (or the inputs') buffers. */
rnnc_status cli_train_inputs(cli_compare *c, const cli_io *in, cli_rng *r);
rnnc_status cli_train_row(const cli_compare *c, rnnc_model *m, cli_compare_row *r);
double cli_train_rel_err(const cli_compare *c, const cli_compare_row *out,
                         const cli_compare_row *ref);
void cli_grads_free(cli_grads *g);
rnnc_status cli_compare_json(const cli_compare *c, const char *path);

#endif /* RNNC_CMD_COMPARE_H */
