/* test_api_contract.c: two promises of rnnc.h about every call: weights
 * taken from a whole model's state_dict under a prefix
 * (rnnc_model_set_weights_prefix, rnnc_model_load_weights_prefix), and
 * rnnc_last_error(), which like errno describes the call that just failed
 * and is replaced, not appended to, by each later failure. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_seed;

static rnnc_model *lstm(const rnnc_cell **keep)
{
    static rnnc_cell *cell;
    if (!cell)
        assert_ok(rnnc_cell_builtin(&cell, "lstm", NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = 3;
    d.hidden_size = 4;
    d.num_layers = 2;
    d.backend = RNNC_BACKEND_INTERP;
    rnnc_model *m;
    assert_ok(rnnc_model_create(&m, &d));
    if (keep)
        *keep = cell;
    return m;
}

/* ts's tensors also under `prefix`, plus n_other tensors of other layers. */
static rnnc_tensors *nest(const rnnc_tensors *ts, const char *prefix, int n_other)
{
    rnnc_tensors *out;
    assert_ok(rnnc_tensors_create(&out));
    for (int i = 0; i < rnnc_tensors_count(ts); i++) {
        const char *n = rnnc_tensors_name(ts, i);
        const rnnc_tensor *t = rnnc_tensors_get(ts, n);
        char full[256];
        snprintf(full, sizeof full, "%s%s", prefix, n);
        assert_ok(rnnc_tensors_add(out, full, t->dtype, t->rank, t->shape, t->data));
    }
    for (int i = 0; i < n_other; i++) {
        char name[64];
        float v[2] = {1.5f, -2.5f};
        int64_t shape[1] = {2};
        snprintf(name, sizeof name, "fc%d.weight", i);
        assert_ok(rnnc_tensors_add(out, name, RNNC_F32, 1, shape, v));
    }
    return out;
}

/* One forward of m on fixed random x into y[T*B*H] (poisoned first). */
static void forward(rnnc_model *m, float *y)
{
    enum { T = 3, B = 2, I = 3, H = 4 };
    float x[T * B * I];
    uint64_t st = 99;
    tu_fill_f32(x, T * B * I, &st, -1, 1);
    tu_poison_f32(y, T * B * H);
    rnnc_forward_args a = {.seq_len = T, .batch = B, .x = x, .y = y};
    assert_ok(rnnc_model_forward(m, &a));
}

static void prefix_selects_the_submodule(void **state)
{
    (void)state;
    uint64_t st = g_seed;
    rnnc_model *plain = lstm(NULL), *nested = lstm(NULL);
    rnnc_tensors *w, *model;
    assert_ok(rnnc_tensors_create(&w));
    tu_add_random_weights(plain, w, &st, -0.5, 0.5, NULL);
    model = nest(w, "encoder.lstm.", 3);
    assert_ok(rnnc_model_set_weights(plain, w));
    int ignored = -1;
    assert_ok(rnnc_model_set_weights_prefix(nested, model, "encoder.lstm.", &ignored));
    assert_int_equal(ignored, 3);
    float y1[24], y2[24];
    forward(plain, y1);
    forward(nested, y2);
    assert_memory_equal(y1, y2, sizeof y1); /* the same weights, bit for bit */
    for (int i = 0; i < 24; i++)
        assert_false(isnan(y1[i]));
    /* without the prefix the other layers are refused, as before */
    assert_status(rnnc_model_set_weights(nested, model), RNNC_ERR_NOT_FOUND);
    /* a prefix under which a weight is missing names it with the prefix */
    assert_status(rnnc_model_set_weights_prefix(nested, model, "encoder.", NULL),
                  RNNC_ERR_NOT_FOUND);
    assert_non_null(strstr(rnnc_last_error(), "encoder.weight_ih_l0"));
    /* a name under the prefix that the model lacks is refused */
    rnnc_tensors *extra = nest(w, "encoder.lstm.", 0);
    float v[2] = {0, 0};
    int64_t shape[1] = {2};
    assert_ok(rnnc_tensors_add(extra, "encoder.lstm.weight_ih_l7", RNNC_F32, 1, shape, v));
    assert_status(rnnc_model_set_weights_prefix(nested, extra, "encoder.lstm.", NULL),
                  RNNC_ERR_NOT_FOUND);
    assert_non_null(strstr(rnnc_last_error(), "encoder.lstm.weight_ih_l7"));
    /* NULL and "" are the plain call */
    assert_ok(rnnc_model_set_weights_prefix(nested, w, NULL, &ignored));
    assert_int_equal(ignored, 0);
    assert_ok(rnnc_model_set_weights_prefix(nested, w, "", NULL));
    rnnc_tensors_destroy(extra);
    rnnc_tensors_destroy(model);
    rnnc_tensors_destroy(w);
    rnnc_model_destroy(nested);
    rnnc_model_destroy(plain);
}

static void prefix_from_a_file(void **state)
{
    (void)state;
    uint64_t st = g_seed + 1;
    rnnc_model *plain = lstm(NULL), *nested = lstm(NULL);
    rnnc_tensors *w;
    assert_ok(rnnc_tensors_create(&w));
    tu_add_random_weights(plain, w, &st, -0.5, 0.5, NULL);
    assert_ok(rnnc_model_set_weights(plain, w));
    rnnc_tensors *model = nest(w, "rnn.", 2);
    char *dir = tu_tmpdir(), path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    assert_ok(rnnc_tensors_save(model, path));
    int ignored = -1;
    assert_ok(rnnc_model_load_weights_prefix(nested, path, "rnn.", &ignored));
    assert_int_equal(ignored, 2);
    float y1[24], y2[24];
    forward(plain, y1);
    forward(nested, y2);
    assert_memory_equal(y1, y2, sizeof y1);
    assert_status(rnnc_model_load_weights_prefix(nested, path, "cnn.", NULL), RNNC_ERR_NOT_FOUND);
    assert_non_null(strstr(rnnc_last_error(), path)); /* the file is named */
    tu_rmtree(dir);
    free(dir);
    rnnc_tensors_destroy(model);
    rnnc_tensors_destroy(w);
    rnnc_model_destroy(nested);
    rnnc_model_destroy(plain);
}

/* The contract in rnnc.h: meaningful after a failure, replaced by the next. */
static void last_error_describes_the_last_failure(void **state)
{
    (void)state;
    rnnc_cell *cell = NULL;
    assert_status(rnnc_cell_load(&cell, "no_such_cell_a", NULL), RNNC_ERR_NOT_FOUND);
    assert_non_null(strstr(rnnc_last_error(), "no_such_cell_a"));
    /* a success in between: the status says so; the detail is not promised */
    const rnnc_cell *c;
    rnnc_model *m = lstm(&c);
    assert_non_null(m);
    /* the next failure has its own detail, with nothing of the first */
    float w[3] = {0, 0, 0};
    assert_status(rnnc_model_set_weight(m, "no_such_weight_b", w, 3), RNNC_ERR_NOT_FOUND);
    assert_non_null(strstr(rnnc_last_error(), "no_such_weight_b"));
    assert_null(strstr(rnnc_last_error(), "no_such_cell_a"));
    /* and a different kind of failure replaces it again */
    assert_status(rnnc_model_set_weight(m, "weight_ih_l0", w, 3), RNNC_ERR_SHAPE);
    assert_null(strstr(rnnc_last_error(), "no_such_weight_b"));
    assert_non_null(strstr(rnnc_last_error(), "weight_ih_l0"));
    rnnc_model_destroy(m);
}

/* Per thread: a failure on another thread does not touch this one's. */
#include <pthread.h>
static void *fail_elsewhere(void *arg)
{
    (void)arg;
    rnnc_cell *cell = NULL;
    rnnc_status s = rnnc_cell_load(&cell, "thread_b_cell", NULL);
    bool ok = s == RNNC_ERR_NOT_FOUND && strstr(rnnc_last_error(), "thread_b_cell");
    return (void *)(intptr_t)ok;
}

static void last_error_is_per_thread(void **state)
{
    (void)state;
    rnnc_cell *cell = NULL;
    assert_status(rnnc_cell_load(&cell, "thread_a_cell", NULL), RNNC_ERR_NOT_FOUND);
    pthread_t t;
    void *ok = NULL;
    assert_int_equal(pthread_create(&t, NULL, fail_elsewhere, NULL), 0);
    assert_int_equal(pthread_join(t, &ok), 0);
    assert_true(ok != NULL);
    assert_non_null(strstr(rnnc_last_error(), "thread_a_cell"));
}

int main(void)
{
    g_seed = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prefix_selects_the_submodule),
        cmocka_unit_test(prefix_from_a_file),
        cmocka_unit_test(last_error_describes_the_last_failure),
        cmocka_unit_test(last_error_is_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
