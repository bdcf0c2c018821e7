/* gpu_model_checks.c: the model API's checks that need a GPU: device
 * pointers that are not device memory, and call order for backward. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static rnnc_model *cudnn_lstm(rnnc_cell **cell)
{
    rnnc_model *m;
    rnnc_model_desc d;
    assert_ok(rnnc_cell_builtin(cell, "lstm", NULL));
    rnnc_model_desc_init(&d);
    d.cell = *cell;
    d.input_size = 6;
    d.hidden_size = 5;
    d.backend = RNNC_BACKEND_CUDNN;
    assert_ok(rnnc_model_create(&m, &d));
    uint64_t seed = tu_seed();
    tu_set_random_weights(m, &seed, -0.4, 0.4);
    return m;
}

static void test_host_memory_as_device_pointer(void **st)
{
    (void)st;
    rnnc_cell *c;
    rnnc_model *m = cudnn_lstm(&c);
    float x[4 * 2 * 6] = {0.25f}, y[4 * 2 * 5];
    rnnc_forward_args a = {.seq_len = 4, .batch = 2, .x = x, .y = y, .device_pointers = true};
    assert_status(rnnc_model_forward(m, &a), RNNC_ERR_INVALID_ARG);
    assert_non_null(strstr(rnnc_last_error(), "x ("));
    assert_non_null(strstr(rnnc_last_error(), "not CUDA device memory"));
    rnnc_model_destroy(m);
    rnnc_cell_destroy(c);
}

static void test_backward_needs_training_forward(void **st)
{
    (void)st;
    rnnc_cell *c;
    rnnc_model *m = cudnn_lstm(&c);
    uint64_t seed = tu_seed();
    float x[4 * 2 * 6], y[4 * 2 * 5], dy[4 * 2 * 5], dx[4 * 2 * 6];
    tu_fill_f32(x, 48, &seed, -1, 1);
    tu_fill_f32(dy, 40, &seed, -1, 1);
    rnnc_forward_args a = {.seq_len = 4, .batch = 2, .x = x, .y = y};
    assert_ok(rnnc_model_forward(m, &a));
    rnnc_backward_args b = {.dy = dy, .dx = dx};
    assert_status(rnnc_model_backward(m, &b), RNNC_ERR_STATE);
    assert_non_null(strstr(rnnc_last_error(), "training"));
    a.training = true;
    assert_ok(rnnc_model_forward(m, &a));
    assert_ok(rnnc_model_backward(m, &b));
    rnnc_model_destroy(m);
    rnnc_cell_destroy(c);
}

int main(void)
{
    tu_require_gpu();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_memory_as_device_pointer),
        cmocka_unit_test(test_backward_needs_training_forward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
