/* test_alloc_fail.c: fault injection.  Every allocation the library makes
 * while it parses a cell, creates a model, compiles it (the optimiser, the
 * schedule and the generated CUDA C) and loads weights is made to fail in
 * turn, the first, then the second, and so on until a run passes with no
 * failure left to inject: each must return RNNC_ERR_OUT_OF_MEMORY, and
 * leak nothing (LeakSanitizer checks at exit in the sanitized builds CI
 * runs).  The hook is the linker's --wrap (tests/CMakeLists.txt) over the
 * library's malloc, calloc, realloc, strdup, strndup and aligned_alloc,
 * and cJSON's hooks for what cJSON allocates. */
#define _GNU_SOURCE
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

/* ---------------------------------------------------------------- the hook */

static long g_count;   /* allocations since the scenario began */
static long g_fail_at; /* 0: none fails; else the g_fail_at-th one does */
static bool g_failed;  /* one was made to fail in this run */

/* In sanitized builds: RNNC_ALLOC_FAIL_TRACE=1 prints where each failure is injected. */
void __sanitizer_print_stack_trace(void) __attribute__((weak));

static bool should_fail(void)
{
    if (g_fail_at == 0 || ++g_count != g_fail_at)
        return false;
    g_failed = true;
    if (getenv("RNNC_ALLOC_FAIL_TRACE") && __sanitizer_print_stack_trace)
        __sanitizer_print_stack_trace();
    return true;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);

void *__wrap_malloc(size_t n)
{
    return should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t a, size_t b)
{
    return should_fail() ? NULL : __real_calloc(a, b);
}

void *__wrap_realloc(void *p, size_t n)
{
    return should_fail() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
    return should_fail() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
    return should_fail() ? NULL : __real_strndup(s, n);
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
    return should_fail() ? NULL : __real_aligned_alloc(a, n);
}

static void *json_malloc(size_t n)
{
    return __wrap_malloc(n);
}

/* ---------------------------------------------------------------- the scenarios */

static char g_weights[4200];

/* The weights file the loading scenario reads (written with no failures). */
static int group_setup(void **state)
{
    (void)state;
    cJSON_Hooks hooks = {json_malloc, free};
    cJSON_InitHooks(&hooks);
    char *dir = tu_tmpdir();
    snprintf(g_weights, sizeof g_weights, "%s/w.safetensors", dir);
    free(dir);
    rnnc_cell *c = NULL;
    rnnc_model *m = NULL;
    rnnc_tensors *ts = NULL;
    rnnc_model_desc d;
    uint64_t rng = tu_seed();
    rnnc_model_desc_init(&d);
    d.input_size = 3;
    d.hidden_size = 4;
    d.num_layers = 2;
    d.bidirectional = true;
    d.backend = RNNC_BACKEND_INTERP;
    if (rnnc_cell_builtin(&c, "lstm", NULL) != RNNC_OK)
        return -1;
    d.cell = c;
    if (rnnc_model_create(&m, &d) != RNNC_OK || rnnc_tensors_create(&ts) != RNNC_OK)
        return -1;
    tu_add_random_weights(m, ts, &rng, -0.5, 0.5, NULL);
    int rc = rnnc_tensors_save(ts, g_weights) == RNNC_OK ? 0 : -1;
    rnnc_tensors_destroy(ts);
    rnnc_model_destroy(m);
    rnnc_cell_destroy(c);
    return rc;
}

static int group_teardown(void **state)
{
    (void)state;
    char *slash = strrchr(g_weights, '/');
    *slash = '\0';
    tu_rmtree(g_weights);
    return 0;
}

typedef rnnc_status (*scenario)(const char *cell);

static rnnc_status make_model(const char *cell, rnnc_cell **c, rnnc_model **m)
{
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.input_size = 3;
    d.hidden_size = 4;
    d.num_layers = 2;
    d.bidirectional = true;
    d.backend = RNNC_BACKEND_INTERP;
    rnnc_status s = rnnc_cell_builtin(c, cell, NULL);
    if (s != RNNC_OK)
        return s;
    d.cell = *c;
    return rnnc_model_create(m, &d);
}

static rnnc_status create_model(const char *cell)
{
    rnnc_cell *c = NULL;
    rnnc_model *m = NULL;
    rnnc_status s = make_model(cell, &c, &m);
    rnnc_model_destroy(m);
    rnnc_cell_destroy(c);
    return s;
}

static rnnc_status load_weights(const char *cell)
{
    rnnc_cell *c = NULL;
    rnnc_model *m = NULL;
    rnnc_status s = make_model(cell, &c, &m);
    if (s == RNNC_OK)
        s = rnnc_model_load_weights(m, g_weights);
    rnnc_model_destroy(m);
    rnnc_cell_destroy(c);
    return s;
}

/* Compilation as far as it goes without a GPU: the optimised IR, the
 * schedule and the generated CUDA C. */
static bool g_have_cuda; /* "cuda" is a stage only where the fused backend is built */

static rnnc_status compile(const char *cell)
{
    static const char *const stages[] = {"opt", "schedule", "cuda"};
    rnnc_cell *c = NULL;
    rnnc_status s = rnnc_cell_builtin(&c, cell, NULL);
    for (int i = 0; i < (g_have_cuda ? 3 : 2) && s == RNNC_OK; i++) {
        char *text = NULL;
        s = rnnc_cell_dump(c, stages[i], 3, 4, 0, 8, RNNC_HOIST_ALL, &text);
        rnnc_free(text);
    }
    rnnc_cell_destroy(c);
    return s;
}

/* Fails allocation 1, 2, ... of `run` until a run has none left to fail. */
static void every_allocation_fails_once(scenario run, const char *what, const char *cell)
{
    long n;
    for (n = 1;; n++) {
        g_count = 0;
        g_failed = false;
        g_fail_at = n;
        rnnc_status s = run(cell);
        g_fail_at = 0;
        if (!g_failed) {
            if (s != RNNC_OK)
                fail_msg("%s of %s without a failure: %s: %s", what, cell,
                         rnnc_status_string(s), rnnc_last_error());
            break;
        }
        if (s != RNNC_ERR_OUT_OF_MEMORY)
            fail_msg("%s of %s, allocation %ld failing: %s (%s), want out of memory", what, cell,
                     n, rnnc_status_string(s), rnnc_last_error());
    }
    print_message("%s of %s: %ld allocations, each failed once\n", what, cell, n - 1);
    assert_true(n > 1);
}

static void model_creation(void **state)
{
    (void)state;
    every_allocation_fails_once(create_model, "model creation", "lstm");
    every_allocation_fails_once(create_model, "model creation", "layernorm_lstm");
}

static void weight_loading(void **state)
{
    (void)state;
    every_allocation_fails_once(load_weights, "weight loading", "lstm");
}

static void compilation(void **state)
{
    (void)state;
    rnnc_cell *c = NULL;
    char *text = NULL;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    g_have_cuda = rnnc_cell_dump(c, "cuda", 3, 4, 0, 8, RNNC_HOIST_ALL, &text) == RNNC_OK;
    rnnc_free(text);
    rnnc_cell_destroy(c);
    every_allocation_fails_once(compile, "compilation", "lstm");
    every_allocation_fails_once(compile, "compilation", "gru");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_creation),
        cmocka_unit_test(weight_loading),
        cmocka_unit_test(compilation),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
