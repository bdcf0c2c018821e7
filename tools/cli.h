/*
 * cli.h: the one internal header of tools/, the `rnnc` command.  Each
 * command lives in its own file (cmd_*.c); what several share is in cli_*.c:
 * errors, the option loop and option values (cli_common.c), the model
 * options (cli_model.c), sizes from a weights file (cli_infer.c), buffers and
 * seeded random data (cli_data.c), the tensors of the files (cli_files.c).
 * `rnnc compare` and `rnnc conv` keep what only their own files share in
 * cmd_compare.h and cmd_conv.h.  Everything goes through the public API
 * (rnnc.h), except the GPU's name in `rnnc compare --json`, the host clock
 * cm_now_ms, `rnnc compile` keeping the cache unwritten and `rnnc run
 * --bundle` asking whether the bundle served (runtime/cache, common).
 */
#ifndef RNNC_CLI_H
#define RNNC_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rnnc.h"

/* ---------------------------------------------------------------- commands */

/* Each gets argv[0] = the command's name; returns the exit code. */
int cmd_run(int argc, char **argv);
int cmd_random(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_show(int argc, char **argv);
/* `rnnc show` of a bundle (cmd_show_bundle.c). */
int cli_show_bundle(const char *path, bool json);
int cmd_diff(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_grad(int argc, char **argv);
int cmd_conv(int argc, char **argv);

/* ---------------------------------------------------------------- errors (cli_common.c) */

#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

/* Prints "rnnc: <status string>: <detail>"; returns CLI_EXIT_FAIL.  The
 * detail is the one cli_error recorded, if any since, else rnnc_last_error(). */
int cli_fail(rnnc_status s);
/* Records the detail of a failure found by the command itself (not the
 * library) for cli_fail; returns s. */
rnnc_status cli_error(rnnc_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* That detail, taken (the command's own is cleared); valid until the next call. */
const char *cli_detail(void);
/* Prints "rnnc CMD: <message>" and a pointer to --help; returns CLI_EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Message for an option getopt_long rejected; returns CLI_EXIT_USAGE. */
int cli_bad_option(const char *cmd, char **argv);

/* ---------------------------------------------------------------- option values (cli_common.c) */

/* Parsers of option values: false (after printing a usage message) if `arg`
 * is not a number in [lo, hi]. */
bool cli_int(const char *cmd, const char *opt, const char *arg, int64_t lo, int64_t hi,
             int64_t *out);
bool cli_double(const char *cmd, const char *opt, const char *arg, double lo, double hi,
                double *out);
bool cli_u64(const char *cmd, const char *opt, const char *arg, uint64_t *out);

/* How a command reads its options (the loop every model command shares). */
typedef struct cli_command {
    const char *name;
    const char *help;         /* printed for --help ... */
    bool model_help;          /* ... followed by cli_model_help */
    const char *shortopts;    /* "h" and any short options of the command */
    const struct option *opts;
    /* Every option but --help; false after a usage message. */
    bool (*option)(void *args, int id, const char *arg);
} cli_command;
/* getopt_long over argv; -1 to go on, else the exit code (0 after --help).
 * Arguments that are not options are a usage error. */
int cli_parse(const cli_command *cmd, int argc, char **argv, void *args);
/* The same for a command that has no use for some model options: `refuses`
 * holds CLI_REFUSE(id) of each; they are refused with the command's usage
 * (and left out of its --help) rather than silently ignored. */
int cli_parse_refusing(const cli_command *cmd, uint32_t refuses, int argc, char **argv,
                       void *args);
#define CLI_REFUSE(id) (1u << ((id) - CLI_OPT_CELL))

/* ---------------------------------------------------------------- model options (cli_model.c) */

/* The options every model-making command shares. */
typedef struct cli_model_opts {
    const char *cell;  /* built-in name or .cell path */
    const char *attrs; /* "k=v,..." or NULL */
    int64_t input_size, hidden_size, proj_size; /* 0 (proj -1): not given */
    int64_t layers;    /* 0: not given */
    bool bidirectional, batch_first, training;
    double dropout;
    uint64_t seed;
    int hoist;         /* rnnc_hoist, or -1: not given */
    rnnc_backend backend;
    int device;
    bool no_bias;               /* --no-bias: PyTorch's bias=False */
    rnnc_cudnn_algo cudnn_algo; /* --cudnn-algo */
    rnnc_math math;             /* --math */
    rnnc_dtype dtype;           /* --dtype (F32 by default) */
    const char *weights_prefix; /* --weights-prefix, or the one found; NULL: none */
    int weights_ignored;        /* tensors of the weights file outside the prefix */
} cli_model_opts;

/* Option ids above any character getopt_long returns. */
enum {
    CLI_OPT_CELL = 256,
    CLI_OPT_ATTR,
    CLI_OPT_LAYERS,
    CLI_OPT_BIDIR,
    CLI_OPT_BATCH_FIRST,
    CLI_OPT_PROJ,
    CLI_OPT_DROPOUT,
    CLI_OPT_SEED,
    CLI_OPT_TRAINING,
    CLI_OPT_HOIST,
    CLI_OPT_INPUT_SIZE,
    CLI_OPT_HIDDEN,
    CLI_OPT_BACKEND,
    CLI_OPT_DEVICE,
    CLI_OPT_NO_BIAS,
    CLI_OPT_CUDNN_ALGO,
    CLI_OPT_MATH,
    CLI_OPT_DTYPE,
    CLI_OPT_FIRST_OWN /* each command numbers its own options from here */
};

/* Entries for getopt_long's table, spliced in with this macro. */
#define CLI_MODEL_OPTIONS                                                                      \
    {"cell", required_argument, NULL, CLI_OPT_CELL},                                           \
    {"attr", required_argument, NULL, CLI_OPT_ATTR},                                           \
    {"layers", required_argument, NULL, CLI_OPT_LAYERS},                                       \
    {"bidirectional", no_argument, NULL, CLI_OPT_BIDIR},                                       \
    {"batch-first", no_argument, NULL, CLI_OPT_BATCH_FIRST},                                   \
    {"proj-size", required_argument, NULL, CLI_OPT_PROJ},                                      \
    {"dropout", required_argument, NULL, CLI_OPT_DROPOUT},                                     \
    {"seed", required_argument, NULL, CLI_OPT_SEED},                                           \
    {"training", no_argument, NULL, CLI_OPT_TRAINING},                                         \
    {"hoist", required_argument, NULL, CLI_OPT_HOIST},                                         \
    {"input-size", required_argument, NULL, CLI_OPT_INPUT_SIZE},                               \
    {"hidden-size", required_argument, NULL, CLI_OPT_HIDDEN},                                  \
    {"hidden", required_argument, NULL, CLI_OPT_HIDDEN},                                       \
    {"backend", required_argument, NULL, CLI_OPT_BACKEND},                                     \
    {"device", required_argument, NULL, CLI_OPT_DEVICE},                                       \
    {"no-bias", no_argument, NULL, CLI_OPT_NO_BIAS},                                           \
    {"cudnn-algo", required_argument, NULL, CLI_OPT_CUDNN_ALGO},                               \
    {"math", required_argument, NULL, CLI_OPT_MATH},                                           \
    {"dtype", required_argument, NULL, CLI_OPT_DTYPE},                                         \
    {"help", no_argument, NULL, 'h'}

/* Help text for the options above, for each command's --help. */
extern const char cli_model_help[];

void cli_model_opts_init(cli_model_opts *o, const char *default_cell);
/* Handles one of CLI_MODEL_OPTIONS; false after a usage message if its
 * value is bad. */
bool cli_model_opt(cli_model_opts *o, const char *cmd, int id, const char *arg);
/* The cell named by o->cell with o->attrs; *hoist gets o->hoist, or the
 * setting that `premul` (matmul) and `premul_bias` (all) stand for. */
rnnc_status cli_load_cell(const cli_model_opts *o, rnnc_cell **cell, rnnc_hoist *hoist);
/* A model of `cell` with the sizes and flags of o on `backend`. */
rnnc_status cli_model_create(const cli_model_opts *o, const rnnc_cell *cell, rnnc_hoist hoist,
                             rnnc_backend backend, rnnc_model **out);

/* Fills what o lacks (layers, bidirectional, hidden and projection sizes)
 * from the weights file w (read from `path`) for `cell`; o->input_size must
 * be set (cli_infer.c). */
rnnc_status cli_infer_sizes(cli_model_opts *o, const rnnc_cell *cell, rnnc_hoist hoist,
                            const rnnc_tensors *w, const char *path);

/* The weights file (cli_weights.c): *w gets the whole file; the sizes o
 * lacks are inferred from the tensors under o->weights_prefix, which is set
 * (and reported on stderr) when none was given and exactly one prefix holds
 * every weight of a model that fits. */
rnnc_status cli_load_weights(cli_model_opts *o, const rnnc_cell *cell, rnnc_hoist hoist,
                             const char *path, rnnc_tensors **w);
/* Sets m's weights from w under o->weights_prefix; the tensors outside it
 * are counted in o->weights_ignored and on stderr. */
rnnc_status cli_set_weights(rnnc_model *m, cli_model_opts *o, const rnnc_tensors *w,
                            const char *path);

/* ---------------------------------------------------------------- data (cli_data.c) */

/* splitmix64: a seeded stream of uniforms, the same on every machine. */
typedef struct cli_rng {
    uint64_t state;
} cli_rng;
double cli_uniform(cli_rng *r, double lo, double hi);
void cli_fill(cli_rng *r, float *p, int64_t n, double lo, double hi);

/* Random weights for every weight `m` expects, uniform(-1/sqrt(H), 1/sqrt(H))
 * as PyTorch initialises nn.LSTM, added to `ts` by state_dict name. */
rnnc_status cli_random_weights(const rnnc_model *m, int64_t hidden, cli_rng *r, rnnc_tensors *ts);
/* Weight i of m: its name, shape (rank 1 or 2; shape[1] = 1 for rank 1) and element count. */
rnnc_status cli_weight_shape(const rnnc_model *m, int i, const char **name, int64_t shape[2],
                             int *rank, int64_t *numel);

#define CLI_MAX_STATES 16

/* One forward's buffers (fp32, host), sized from the model; all allocated
 * by cli_io_alloc, y and finals poisoned with NaN. */
typedef struct cli_io {
    int64_t T, B, I;
    bool batch_first;    /* x and y are [B, T, *] */
    int n_states;
    int64_t rows;        /* L*D: the first dim of states */
    int64_t y_feat;      /* D*Hout */
    int64_t state_feat[CLI_MAX_STATES];
    float *x, *y;
    float *init[CLI_MAX_STATES], *final[CLI_MAX_STATES];
    bool has_init[CLI_MAX_STATES]; /* false: zeros */
    int64_t *lengths;
    bool has_lengths;              /* false: all T */
    /* what cli_io_args points at */
    const void *init_ptr[CLI_MAX_STATES];
    void *final_ptr[CLI_MAX_STATES];
    /* A half-precision model (--dtype f16/bf16) reads and writes copies in
     * its dtype: cli_io_args fills them from the fp32 buffers above,
     * cli_io_finish copies the outputs back. */
    rnnc_dtype dtype;
    void *hx, *hy, *hinit[CLI_MAX_STATES], *hfinal[CLI_MAX_STATES];
} cli_io;

rnnc_status cli_io_alloc(cli_io *io, const rnnc_model *m, const rnnc_cell *cell,
                         const cli_model_opts *o, int64_t T, int64_t B);
void cli_io_free(cli_io *io);
/* Forward arguments over io's buffers (in the model's dtype). */
rnnc_forward_args cli_io_args(cli_io *io, bool training);
/* After a forward: y and the final states back into io's fp32 buffers. */
void cli_io_finish(cli_io *io);
/* A half model's gradients in its dtype (--dtype f16/bf16): cli_half_grads_in
 * points b at copies of its dy and of each dfinal[k] (fp32, NULL for zeros),
 * rounded to io's dtype, and at buffers for dx and dinit[k], whose pointers it
 * writes into dfinal and dinit (the arrays b names); cli_half_grads_out
 * converts dx and dinit back into fp32 ones. */
typedef struct cli_half_grads {
    void *dy, *dx, *dfinal[CLI_MAX_STATES], *dinit[CLI_MAX_STATES];
} cli_half_grads;
rnnc_status cli_half_grads_in(cli_half_grads *h, const cli_io *io, rnnc_backward_args *b,
                              const void **dfinal, void **dinit);
void cli_half_grads_out(const cli_half_grads *h, const cli_io *io, float *dx,
                        float *const *dinit);
void cli_half_grads_free(cli_half_grads *h);
/* Element counts of x, y and of state s. */
int64_t cli_x_numel(const cli_io *io);
int64_t cli_y_numel(const cli_io *io);
int64_t cli_state_numel(const cli_io *io, int s);
/* Copies x, the init states and lengths of src (same sizes) into dst. */
void cli_io_copy_inputs(cli_io *dst, const cli_io *src);
/* max|out - ref| / max|ref| (+inf if out has a NaN); for two io's, the
 * largest over y and every final state. */
double cli_rel_err(const float *out, const float *ref, int64_t n);
double cli_io_rel_err(const cli_io *out, const cli_io *ref);
/* Random x, init states (unless `zero_states`) and lengths (when
 * `min_length` > 0: uniform in [min_length, T]) into io, also added to ts
 * as `rnnc run` reads them. */
rnnc_status cli_random_inputs(cli_io *io, const rnnc_cell *cell, cli_rng *r, bool zero_states,
                              int64_t min_length, rnnc_tensors *ts);

/* ---------------------------------------------------------------- files (cli_files.c) */

/* A float tensor (F32 or F64 in the file) as fp32 into out[numel]. */
rnnc_status cli_tensor_to_f32(const rnnc_tensor *t, const char *name, float *out);
/* A copy of src with its F32 tensors in `dtype` (rounded); others as they are. */
rnnc_status cli_tensors_as(const rnnc_tensors *src, rnnc_dtype dtype, rnnc_tensors **out);
/* Adds the outputs of a forward to ts: y and `<state>y` for each state. */
rnnc_status cli_add_outputs(rnnc_tensors *ts, const cli_io *io, const rnnc_cell *cell);
/* Shape of x or y ([T,B,n], or [B,T,n] batch first) and of a state. */
void cli_seq_shape(const cli_io *io, int64_t n, int64_t shape[3]);
void cli_state_shape(const cli_io *io, int s, int64_t shape[3]);

/* ---------------------------------------------------------------- inputs (cli_inputs.c) */

/* Every tensor of an input file is one rnnc run reads: x, lengths, <state>0. */
rnnc_status cli_check_input_names(const rnnc_tensors *in, const rnnc_cell *cell,
                                  const char *path);
/* T and B from x (checked against m->input_size, which it sets). */
rnnc_status cli_find_x(const rnnc_tensors *in, cli_model_opts *m, const char *path, int64_t *T,
                       int64_t *B);
/* x, the initial states given and lengths into io (allocated for T, B). */
rnnc_status cli_read_inputs(const rnnc_tensors *in, cli_io *io, const rnnc_cell *cell,
                            const char *path);

/* ---------------------------------------------------------------- progress (cli_progress.c) */

/* On only when stderr is a terminal and not `quiet`; returns whether it is. */
bool cli_progress_enable(bool quiet);
/* A line "what ... 2.4 s" on stderr while a step runs past a second,
 * erased by cli_progress_end (or the next begin). */
void cli_progress_begin(const char *what);
void cli_progress_end(void);

/* ---------------------------------------------------------------- outputs (cli_outputs.c) */

/* A path given by an option, named for messages ("--out"); path may be NULL. */
typedef struct cli_path {
    const char *opt, *path;
} cli_path;
/* RNNC_ERR_INVALID_ARG (with cli_error's detail) if an output is the same
 * file as an input (device and inode) or as another output. */
rnnc_status cli_check_outputs(const cli_path *outs, int n_out, const cli_path *ins, int n_in);

#endif /* RNNC_CLI_H */
