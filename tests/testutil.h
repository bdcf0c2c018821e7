/* testutil.h: what every test shares: cmocka, seeded random data, the
 * error measure, poisoning, and the GPU skip. */
#ifndef RNNC_TESTUTIL_H
#define RNNC_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rnnc.h"

/* Exit code that ctest reads as "skipped". */
#define TU_SKIP 77

/* A seed from RNNC_TEST_SEED, else from the clock; printed so a failure can be replayed. */
uint64_t tu_seed(void);
/* Uniform in [lo, hi) from a splitmix64 stream in *state. */
double tu_uniform(uint64_t *state, double lo, double hi);
void tu_fill_f32(float *p, size_t n, uint64_t *state, double lo, double hi);
void tu_fill_f64(double *p, size_t n, uint64_t *state, double lo, double hi);
/* NaN in every element, so an unwritten output cannot pass. */
void tu_poison_f32(float *p, size_t n);
/* max |out - ref| / max |ref|; +inf if any output is NaN. */
double tu_rel_err_f32(const float *out, const double *ref, size_t n);
double tu_rel_err_f64(const double *out, const double *ref, size_t n);
/* malloc'd n doubles: uniform in [lo, hi), or NaN (free with free). */
double *tu_random_f64(size_t n, uint64_t *state, double lo, double hi);
double *tu_nan_f64(size_t n);
/* Gives every weight of m uniform random values in [lo, hi). */
void tu_set_random_weights(rnnc_model *m, uint64_t *state, double lo, double hi);
/* The same random values on each of n models of one layout. */
void tu_set_random_weights_on(rnnc_model *const *models, int n, uint64_t *state, double lo,
                              double hi);
/* The same random values rounded to dtype dt (a half model's weights as it
 * keeps them) on each of n models, whatever their dtypes. */
void tu_set_rounded_weights_on(rnnc_model *const *models, int n, rnnc_dtype dt,
                               uint64_t *state, double lo, double hi);
/* The largest max|g - g_ref| / max|g_ref| over the weight gradients of m
 * against ref's (one layout). */
double tu_weight_grad_err(rnnc_model *m, rnnc_model *ref);
/* Random weights of m (all but `skip`, if not NULL) added to ts by name. */
void tu_add_random_weights(const rnnc_model *m, rnnc_tensors *ts, uint64_t *state, double lo,
                           double hi, const char *skip);
/* Exits 77 unless a CUDA device is usable (for gpu_*.c tests); applies
 * RNNC_TEST_FILTER (a cmocka test-name pattern) so one test can run alone. */
void tu_require_gpu(void);
/* A cell of tests/data/cells/ (RNNC_TEST_DATA), by file name without
 * `.cell`; fails the test when it does not load. */
rnnc_cell *tu_data_cell(const char *name);
/* A fresh temporary directory (removed by tu_rmtree). */
char *tu_tmpdir(void);
void tu_rmtree(const char *dir);
/* Writes `len` bytes to `path`; 0 on success. */
int tu_write_file(const char *path, const void *data, size_t len);
/* Group setup and teardown: RNNC_CACHE_DIR is a fresh temporary directory,
 * tu_cache_dir(), while the group runs, so it sees only its own records. */
int tu_cache_dir_setup(void **state);
int tu_cache_dir_teardown(void **state);
const char *tu_cache_dir(void);

#define assert_ok(expr)                                                                        \
    do {                                                                                       \
        rnnc_status s_ = (expr);                                                               \
        if (s_ != RNNC_OK)                                                                     \
            fail_msg("%s -> %s: %s", #expr, rnnc_status_string(s_), rnnc_last_error());       \
    } while (0)

#define assert_status(expr, want)                                                              \
    do {                                                                                       \
        rnnc_status s_ = (expr);                                                               \
        if (s_ != (want))                                                                      \
            fail_msg("%s -> %s (want %s): %s", #expr, rnnc_status_string(s_),                  \
                     rnnc_status_string(want), rnnc_last_error());                             \
    } while (0)

#endif
