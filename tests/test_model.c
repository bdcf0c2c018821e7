/* test_model.c: the model API: weight names, checks, backend choice and errors. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* I = 5, H = 7 */
static void desc_of(rnnc_model_desc *d, rnnc_cell *c, int layers, bool bi, int64_t proj,
                    rnnc_backend be)
{
    rnnc_model_desc_init(d);
    d->cell = c;
    d->input_size = 5;
    d->hidden_size = 7;
    d->proj_size = proj;
    d->num_layers = layers;
    d->bidirectional = bi;
    d->backend = be;
}

static rnnc_model *make(const char *cell, int layers, bool bi, int64_t proj, rnnc_backend be,
                        rnnc_cell **keep)
{
    rnnc_cell *c;
    rnnc_model *m = NULL;
    rnnc_model_desc d;
    assert_ok(rnnc_cell_builtin(&c, cell, NULL));
    desc_of(&d, c, layers, bi, proj, be);
    rnnc_status s = rnnc_model_create(&m, &d);
    if (keep)
        *keep = c;
    else
        rnnc_cell_destroy(c);
    if (s != RNNC_OK)
        return NULL;
    return m;
}

static void test_weight_names(void **st)
{
    (void)st;
    rnnc_model *m = make("lstm", 2, true, 3, RNNC_BACKEND_INTERP, NULL);
    assert_non_null(m);
    /* 5 params (with weight_hr) x 2 layers x 2 directions */
    assert_int_equal(rnnc_model_weight_count(m), 20);
    const char *name;
    int64_t shape[2];
    int rank;
    bool seen_hr_rev = false, seen_ih_l1 = false;
    for (int i = 0; i < rnnc_model_weight_count(m); i++) {
        assert_ok(rnnc_model_weight_info(m, i, &name, 2, shape, &rank));
        if (strcmp(name, "weight_hr_l1_reverse") == 0) {
            seen_hr_rev = true;
            assert_int_equal(rank, 2);
            assert_int_equal(shape[0], 3);
            assert_int_equal(shape[1], 7);
        }
        if (strcmp(name, "weight_ih_l1") == 0) {
            seen_ih_l1 = true;
            assert_int_equal(shape[0], 28);
            assert_int_equal(shape[1], 6); /* D * P */
        }
    }
    assert_true(seen_hr_rev && seen_ih_l1);
    rnnc_model_destroy(m);

    m = make("lstm", 1, false, 0, RNNC_BACKEND_INTERP, NULL);
    assert_int_equal(rnnc_model_weight_count(m), 4); /* no weight_hr without a projection */
    rnnc_model_destroy(m);
}

static void test_weight_errors(void **st)
{
    (void)st;
    rnnc_model *m = make("gru", 1, false, 0, RNNC_BACKEND_INTERP, NULL);
    float w[4] = {1, 2, 3, 4};
    assert_status(rnnc_model_set_weight(m, "weight_ih_l9", w, 4), RNNC_ERR_NOT_FOUND);
    assert_status(rnnc_model_set_weight(m, "bias_ih_l0", w, 4), RNNC_ERR_SHAPE);
    /* forward before all weights are set */
    float x[5 * 2] = {0.5f}, y[7 * 2];
    rnnc_forward_args a = {.seq_len = 2, .batch = 1, .x = x, .y = y};
    assert_status(rnnc_model_forward(m, &a), RNNC_ERR_STATE);
    assert_non_null(strstr(rnnc_last_error(), "not set"));

    /* a weights file with an extra tensor and one with a missing tensor */
    rnnc_tensors *ts;
    assert_ok(rnnc_tensors_create(&ts));
    uint64_t seed = tu_seed();
    tu_add_random_weights(m, ts, &seed, -0.3, 0.3, "bias_hh_l0");
    assert_status(rnnc_model_set_weights(m, ts), RNNC_ERR_NOT_FOUND);
    assert_non_null(strstr(rnnc_last_error(), "bias_hh_l0"));
    int64_t shp[1] = {21};
    float extra[21] = {0};
    assert_ok(rnnc_tensors_add(ts, "bias_hh_l0", RNNC_F32, 1, shp, extra));
    assert_ok(rnnc_model_set_weights(m, ts));
    assert_ok(rnnc_tensors_add(ts, "bias_hh_l1", RNNC_F32, 1, shp, extra));
    assert_status(rnnc_model_set_weights(m, ts), RNNC_ERR_NOT_FOUND);
    assert_non_null(strstr(rnnc_last_error(), "bias_hh_l1"));
    rnnc_tensors_destroy(ts);
    rnnc_model_destroy(m);
}

static void test_desc_checks(void **st)
{
    (void)st;
    rnnc_cell *c;
    rnnc_model *m = NULL;
    rnnc_model_desc d;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    rnnc_model_desc_init(&d);
    d.cell = c;
    d.input_size = 4;
    d.hidden_size = 8;
    d.backend = RNNC_BACKEND_INTERP;
    d.proj_size = 8;
    assert_status(rnnc_model_create(&m, &d), RNNC_ERR_INVALID_ARG);
    d.proj_size = 0;
    d.num_layers = 0;
    assert_status(rnnc_model_create(&m, &d), RNNC_ERR_INVALID_ARG);
    d.num_layers = 1;
    d.dropout = 1.0;
    assert_status(rnnc_model_create(&m, &d), RNNC_ERR_INVALID_ARG);
    d.dropout = 0;
    d.input_size = 0;
    assert_status(rnnc_model_create(&m, &d), RNNC_ERR_INVALID_ARG);
    assert_null(m);
    rnnc_model_destroy(NULL);
    rnnc_cell_destroy(c);
}

static void test_forward_checks(void **st)
{
    (void)st;
    rnnc_model *m = make("rnn_tanh", 1, false, 0, RNNC_BACKEND_INTERP, NULL);
    uint64_t seed = tu_seed();
    tu_set_random_weights(m, &seed, -0.3, 0.3);
    float x[3 * 2 * 5], y[3 * 2 * 7];
    tu_fill_f32(x, 30, &seed, -1, 1);
    int64_t bad[2] = {3, 4};
    rnnc_forward_args a = {.seq_len = 3, .batch = 2, .x = x, .y = y, .lengths = bad};
    assert_status(rnnc_model_forward(m, &a), RNNC_ERR_SHAPE);
    assert_non_null(strstr(rnnc_last_error(), "lengths[1]"));
    a.lengths = NULL;
    a.seq_len = 0;
    assert_status(rnnc_model_forward(m, &a), RNNC_ERR_SHAPE);
    a.seq_len = 3;
    tu_poison_f32(y, 42);
    assert_ok(rnnc_model_forward(m, &a));
    for (int i = 0; i < 42; i++)
        assert_true(y[i] == y[i]);
    rnnc_model_destroy(m);
}

/* A 2-layer LSTM with dropout 0.5 between layers on backend be, seed 7. */
static rnnc_model *make_dropout(rnnc_backend be)
{
    rnnc_cell *c;
    rnnc_model *m = NULL;
    rnnc_model_desc d;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    desc_of(&d, c, 2, false, 0, be);
    d.dropout = 0.5;
    d.seed = 7;
    assert_ok(rnnc_model_create(&m, &d));
    rnnc_cell_destroy(c);
    return m;
}

/* rnnc_model_set_seed: another seed draws other masks from the next
 * training forward on, the first seed again the first masks; the
 * interpreter and the CPU code (where built) agree on them. */
static void test_set_seed(void **st)
{
    (void)st;
    bool cpu = rnnc_backend_available(RNNC_BACKEND_CPU);
    rnnc_model *m[2] = {make_dropout(RNNC_BACKEND_INTERP),
                        make_dropout(cpu ? RNNC_BACKEND_CPU : RNNC_BACKEND_INTERP)};
    uint64_t rng = tu_seed();
    tu_set_random_weights_on(m, 2, &rng, -0.4, 0.4);
    float x[4 * 3 * 5], y[3][4 * 3 * 7], ya[4 * 3 * 7];
    tu_fill_f32(x, 60, &rng, -1, 1);
    rnnc_forward_args a = {.seq_len = 4, .batch = 3, .x = x, .training = true};
    for (int k = 0; k < 3; k++) {
        assert_ok(rnnc_model_set_seed(m[0], k == 1 ? 8 : 7));
        a.y = y[k];
        assert_ok(rnnc_model_forward(m[0], &a));
    }
    assert_true(memcmp(y[0], y[1], sizeof y[0]) != 0);
    assert_memory_equal(y[0], y[2], sizeof y[0]);
    assert_ok(rnnc_model_set_seed(m[1], 8));
    a.y = ya;
    assert_ok(rnnc_model_forward(m[1], &a));
    double *ref = malloc(sizeof(double) * 84);
    for (int i = 0; i < 84; i++)
        ref[i] = y[1][i];
    assert_true(tu_rel_err_f32(ya, ref, 84) <= 1e-5);
    free(ref);
    assert_status(rnnc_model_set_seed(NULL, 1), RNNC_ERR_INVALID_ARG);
    rnnc_model_destroy(m[0]);
    rnnc_model_destroy(m[1]);
}

static void test_backend_names_and_absence(void **st)
{
    (void)st;
    rnnc_backend b;
    assert_ok(rnnc_backend_from_name("cudnn", &b));
    assert_int_equal(b, RNNC_BACKEND_CUDNN);
    assert_status(rnnc_backend_from_name("tpu", &b), RNNC_ERR_INVALID_ARG);
    assert_string_equal(rnnc_backend_name(RNNC_BACKEND_FUSED), "fused");
    for (int k = RNNC_BACKEND_CPU; k <= RNNC_BACKEND_CUDNN; k++) {
        if (rnnc_backend_available((rnnc_backend)k))
            continue;
        rnnc_cell *c;
        rnnc_model *m = make("lstm", 1, false, 0, (rnnc_backend)k, &c);
        assert_null(m);
        rnnc_status s = k == RNNC_BACKEND_CPU ? RNNC_ERR_NOT_BUILT : RNNC_ERR_NO_DEVICE;
        (void)s;
        assert_non_null(strstr(rnnc_last_error(), rnnc_backend_name((rnnc_backend)k)));
        rnnc_cell_destroy(c);
    }
    /* auto always finds something */
    rnnc_model *m = make("layernorm_lstm", 1, false, 0, RNNC_BACKEND_AUTO, NULL);
    assert_non_null(m);
    rnnc_model_destroy(m);
}

/* cuDNN runs only the standard cells; it says so (GPU or not) and names the others. */
static void test_cudnn_refuses_custom_cells(void **st)
{
    (void)st;
    rnnc_cell *c;
    rnnc_model *m = make("layernorm_lstm", 1, false, 0, RNNC_BACKEND_CUDNN, &c);
    assert_null(m);
    const char *e = rnnc_last_error();
    if (!strstr(e, "not built")) {
        assert_non_null(strstr(e, "not a standard cell"));
        assert_non_null(strstr(e, "fused"));
    }
    rnnc_cell_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weight_names),      cmocka_unit_test(test_weight_errors),
        cmocka_unit_test(test_desc_checks),       cmocka_unit_test(test_forward_checks),
        cmocka_unit_test(test_backend_names_and_absence),
        cmocka_unit_test(test_cudnn_refuses_custom_cells),
        cmocka_unit_test(test_set_seed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
