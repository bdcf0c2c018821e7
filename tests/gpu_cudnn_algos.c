/*
 * gpu_cudnn_algos.c: cuDNN's RNN algorithms on a GPU, through the public
 * API, against the reference interpreter on the same weights and inputs:
 *   - every algorithm on shapes it accepts (a refusal is printed, but at
 *     least one persistent algorithm must run), each held to its own bound
 *     (algo_tol below), with the sources of its error measured apart;
 *   - AUTO's timing: it runs an eligible algorithm, and only STANDARD for
 *     ragged lengths;
 *   - simulated workspace allocation failures: the retry after freeing
 *     cached buffers, AUTO's move to another algorithm, a fixed algorithm's
 *     report, and the report with the sizes asked for.
 * Every failure says which case, algorithm and error.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_cudnn_pair.h"

static uint64_t rng;

/*
 * The bound each algorithm is held to against the interpreter, fp32 data
 * and FFMA math (max|out - ref| / max|ref|).  STANDARD honours
 * CUDNN_FMA_MATH and meets the project's fp32 bound, 1e-5 (measured 2e-7
 * to 5e-6).  The persistent algorithms do not, whatever the math type:
 * their error is about 1e-5 per step even at T=1 on TF32-exact data, where
 * no product rounds, and does not change with CUDNN_DEFAULT_MATH (LSTM,
 * GRU), so it is their pointwise math (the activations), not TF32.  The
 * recurrence carries it like any per-step error: LSTM and GRU stay near
 * 1e-5, rnn_tanh at H=128 (a gain above 1) grows to 1.3e-4 - 1.9e-4 by T=20.
 * 1e-3 bounds that with 5x to spare; docs/cudnn.md, "Accuracy of the
 * algorithms", has the measured table.
 */
#define PERSIST_TOL 1e-3

static double algo_tol(rnnc_cudnn_algo a)
{
    return a == RNNC_CUDNN_ALGO_STANDARD ? 1e-5 : PERSIST_TOL;
}

/* ---------------------------------------------------------------- algorithms */

/* One configuration's error on four runs, each on fresh random data:
 *   exact1: T=1, every input, state and weight TF32-exact (products are
 *           exact in TF32 too, so what is left is the activations and the
 *           order of additions);
 *   rand1:  T=1 on full fp32 values (adds the matrix products' rounding);
 *   ffma:   T=20, FFMA math (what the bound is checked on);
 *   tf32:   the same data as ffma with the model's math TF32
 *           (CUDNN_DEFAULT_MATH): equal to ffma when the algorithm's
 *           kernels ignore the math type. */
typedef struct errs {
    double exact1, rand1, ffma, tf32;
    rnnc_cudnn_algo ran;
} errs;

static rnnc_status measure(pair_cfg c, errs *e)
{
    pair_run one = {.T = 1, .B = 8, .init = true, .tf32_exact = true};
    pair_run seq = {.T = 20, .B = 8, .init = true};
    rnnc_cudnn_algo ran[4];
    rnnc_status s = pair_against_interp(&c, &one, &rng, &e->exact1, &ran[0]);
    one.tf32_exact = false;
    if (s == RNNC_OK)
        s = pair_against_interp(&c, &one, &rng, &e->rand1, &ran[1]);
    uint64_t same = rng;
    if (s == RNNC_OK)
        s = pair_against_interp(&c, &seq, &rng, &e->ffma, &ran[2]);
    c.math = RNNC_MATH_TF32;
    rng = same;
    if (s == RNNC_OK)
        s = pair_against_interp(&c, &seq, &rng, &e->tf32, &ran[3]);
    e->ran = ran[2];
    for (int i = 0; s == RNNC_OK && i < 4; i++)
        if (ran[i] != c.algo)
            e->ran = ran[i];
    return s;
}

static void test_each_algorithm(void **state)
{
    (void)state;
    static const char *const cells[] = {"lstm", "gru", "rnn_tanh"};
    static const rnnc_cudnn_algo algos[] = {
        RNNC_CUDNN_ALGO_STANDARD, RNNC_CUDNN_ALGO_PERSIST_STATIC,
        RNNC_CUDNN_ALGO_PERSIST_STATIC_SMALL_H, RNNC_CUDNN_ALGO_PERSIST_DYNAMIC};
    int persistent_ran = 0, failures = 0;
    fprintf(stderr, "  I=64 H=128 B=8; errors vs the interpreter: T=1 TF32-exact data, T=1, "
                    "T=20 FFMA, T=20 TF32 (same data)\n");
    for (size_t k = 0; k < 3; k++) {
        for (size_t a = 0; a < 4; a++) {
            pair_cfg c = {.cell = cells[k], .I = 64, .H = 128, .layers = 1, .algo = algos[a]};
            errs e;
            if (measure(c, &e) != RNNC_OK) {
                failures += algos[a] == RNNC_CUDNN_ALGO_STANDARD;
                continue;
            }
            double tol = algo_tol(algos[a]);
            bool ok = e.ran == algos[a] && e.exact1 <= tol && e.rand1 <= tol && e.ffma <= tol;
            fprintf(stderr, "  %-8s %-22s %.2e %.2e %.2e %.2e%s  (bound %.0e)%s\n", cells[k],
                    rnnc_cudnn_algo_name(algos[a]), e.exact1, e.rand1, e.ffma, e.tf32,
                    e.tf32 == e.ffma ? " (tf32 = ffma)" : "", tol, ok ? "" : "  FAIL");
            if (!ok) {
                fprintf(stderr, "FAIL: %s with algo %s ran %s\n", cells[k],
                        rnnc_cudnn_algo_name(algos[a]), rnnc_cudnn_algo_name(e.ran));
                failures++;
            }
            persistent_ran += algos[a] != RNNC_CUDNN_ALGO_STANDARD;
        }
    }
    if (persistent_ran == 0)
        fprintf(stderr, "FAIL: no persistent algorithm ran at all (see the refusals above)\n");
    assert_int_equal(failures, 0);
    assert_true(persistent_ran > 0);
}

/* AUTO with timing picks an eligible algorithm and records it; ragged
 * lengths leave only STANDARD. */
static void test_auto_timed(void **state)
{
    (void)state;
    pair_cfg c = {.cell = "lstm", .I = 128, .H = 128, .layers = 1, .algo = RNNC_CUDNN_ALGO_AUTO};
    pair_run o = {.T = 30, .B = 16};
    double err = 0, err_ragged = 0;
    rnnc_cudnn_algo ran = RNNC_CUDNN_ALGO_AUTO, ran_ragged = RNNC_CUDNN_ALGO_AUTO;
    setenv("RNNC_AUTOTUNE", "1", 1);
    rnnc_status s = pair_against_interp(&c, &o, &rng, &err, &ran);
    o.ragged = true;
    rnnc_status s2 = pair_against_interp(&c, &o, &rng, &err_ragged, &ran_ragged);
    setenv("RNNC_AUTOTUNE", "0", 1); /* before any assertion: the next tests rely on it */
    assert_ok(s);
    assert_ok(s2);
    fprintf(stderr, "  auto (timed) chose %s, rel err %.3e; with ragged lengths %s, %.3e\n",
            rnnc_cudnn_algo_name(ran), err, rnnc_cudnn_algo_name(ran_ragged), err_ragged);
    assert_true(ran != RNNC_CUDNN_ALGO_AUTO);
    assert_true(err <= algo_tol(ran));
    if (ran_ragged != RNNC_CUDNN_ALGO_STANDARD || err_ragged > 1e-5)
        fail_msg("auto with ragged lengths ran %s, rel err %.3e", rnnc_cudnn_algo_name(ran_ragged),
                 err_ragged);
}

/* ---------------------------------------------------------------- out of memory */

/* A cudnn model with an interpreter's output for one input to check against. */
typedef struct oom_case {
    pair_cfg c;
    rnnc_model *m;
    pair_io ref, io;
} oom_case;

static void oom_open(oom_case *k, rnnc_cudnn_algo algo)
{
    k->c = (pair_cfg){.cell = "lstm", .I = 64, .H = 128, .layers = 1, .algo = algo};
    k->m = pair_make(&k->c, RNNC_BACKEND_CUDNN);
    rnnc_model *mi = pair_make(&k->c, RNNC_BACKEND_INTERP);
    rnnc_model *both[2] = {k->m, mi};
    pair_weights(both, 2, &rng, false);
    pair_io_init(&k->ref, mi, &k->c, &(pair_run){.T = 12, .B = 8, .init = true}, &rng);
    assert_ok(pair_forward(mi, &k->ref, false));
    rnnc_model_destroy(mi);
    pair_io_copy(&k->io, &k->ref, k->c.I);
}

/* A forward with the next n temp-space allocations failing: its status,
 * the algorithm that ran, its error, the retries it took. */
static rnnc_status oom_forward(oom_case *k, int n, rnnc_cudnn_algo *ran, double *err, int *retries)
{
    const fb_rnn *r = k->m->slot[RNNC_BACKEND_CUDNN].state;
    int before = r->oom_retries;
    tu_poison_f32(k->io.y, (size_t)(k->io.T * k->io.B * k->io.fy));
    fb_rnn_fail_allocs(n);
    rnnc_status s = pair_forward(k->m, &k->io, false);
    fb_rnn_fail_allocs(0);
    *retries = r->oom_retries - before;
    *err = s == RNNC_OK ? pair_io_err(&k->io, &k->ref) : -1;
    assert_ok(rnnc_model_cudnn_algo(k->m, ran));
    return s;
}

static void oom_close(oom_case *k)
{
    pair_io_free(&k->io);
    pair_io_free(&k->ref);
    rnnc_model_destroy(k->m);
}

static void test_alloc_failure_retry(void **state)
{
    (void)state;
    rnnc_cudnn_algo ran, first;
    double err;
    int retries;
    /* a fixed algorithm: one failure is retried after freeing cached
     * buffers; two are reported, as the choice is the caller's */
    oom_case k;
    oom_open(&k, RNNC_CUDNN_ALGO_STANDARD);
    rnnc_status s = oom_forward(&k, 1, &ran, &err, &retries);
    fprintf(stderr, "  standard, 1 failure: %s, ran %s, %d retries, rel err %.3e\n",
            rnnc_status_string(s), rnnc_cudnn_algo_name(ran), retries, err);
    if (s != RNNC_OK || ran != RNNC_CUDNN_ALGO_STANDARD || retries != 1 || err > 1e-5)
        fail_msg("standard after one simulated failure: %s", rnnc_last_error());
    s = oom_forward(&k, 2, &ran, &err, &retries);
    fprintf(stderr, "  standard, 2 failures: %s: %s\n", rnnc_status_string(s), rnnc_last_error());
    assert_int_equal(s, RNNC_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(rnnc_last_error(), "standard (workspace"));
    oom_close(&k);
    /* AUTO: two failures of its choice move it to another eligible one */
    oom_open(&k, RNNC_CUDNN_ALGO_AUTO);
    assert_ok(oom_forward(&k, 0, &first, &err, &retries));
    s = oom_forward(&k, 2, &ran, &err, &retries);
    fprintf(stderr, "  auto (%s), 2 failures: %s, ran %s, %d retries, rel err %.3e\n",
            rnnc_cudnn_algo_name(first), rnnc_status_string(s), rnnc_cudnn_algo_name(ran), retries,
            err);
    if (s != RNNC_OK || ran == first || retries < 2 || err > algo_tol(ran))
        fail_msg("auto after two simulated failures: %s", rnnc_last_error());
    /* every allocation failing: reported with the sizes asked for; the
     * model works afterwards */
    s = oom_forward(&k, 1000, &ran, &err, &retries);
    fprintf(stderr, "  auto, every allocation failing: %s\n", rnnc_last_error());
    assert_int_equal(s, RNNC_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(rnnc_last_error(), "workspace"));
    assert_true(retries >= 2);
    s = oom_forward(&k, 0, &ran, &err, &retries);
    assert_ok(s);
    assert_true(err <= algo_tol(ran));
    oom_close(&k);
}

int main(void)
{
    tu_require_gpu();
    if (!rnnc_backend_available(RNNC_BACKEND_CUDNN)) {
        fprintf(stderr, "cudnn is not usable here: skipped\n");
        return TU_SKIP;
    }
    rng = tu_seed();
    setenv("RNNC_AUTOTUNE", "0", 1); /* as ctest sets it; test_auto_timed turns it on */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_algorithm),
        cmocka_unit_test(test_auto_timed),
        cmocka_unit_test(test_alloc_failure_retry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
