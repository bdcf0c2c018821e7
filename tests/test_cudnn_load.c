/*
 * test_cudnn_load.c: cuDNN is opened with dlopen, so a machine without it
 * gets RNNC_ERR_NO_DEVICE and the loader's reason instead of a binary that
 * cannot start.  RNNC_CUDNN_PATH points the loader at a file that does not
 * exist, which every machine can check (the loader runs once per process).
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "cudnn_fallback/fallback.h"

#define MISSING "/nonexistent/rnnc-test/libcudnn.so.9"

static void test_load_reports_reason(void **st)
{
    (void)st;
    assert_status(fb_cudnn_load(), RNNC_ERR_NO_DEVICE);
    const char *e = rnnc_last_error();
    assert_non_null(strstr(e, "cuDNN not found"));
    assert_non_null(strstr(e, MISSING)); /* dlerror's text names the file */
    /* Asked again, the answer is the same (loaded once). */
    assert_status(fb_cudnn_load(), RNNC_ERR_NO_DEVICE);
    assert_false(fb_cudnn_available());
    assert_false(rnnc_backend_available(RNNC_BACKEND_CUDNN));
}

static void test_model_create_no_device(void **st)
{
    (void)st;
    rnnc_cell *c;
    rnnc_model *m = NULL;
    rnnc_model_desc d;
    assert_ok(rnnc_cell_builtin(&c, "lstm", NULL));
    rnnc_model_desc_init(&d);
    d.cell = c;
    d.input_size = 5;
    d.hidden_size = 7;
    d.backend = RNNC_BACKEND_CUDNN;
    assert_status(rnnc_model_create(&m, &d), RNNC_ERR_NO_DEVICE);
    assert_null(m);
    assert_non_null(strstr(rnnc_last_error(), "cuDNN not found"));
    rnnc_cell_destroy(c);
}

int main(void)
{
    if (setenv("RNNC_CUDNN_PATH", MISSING, 1) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_reports_reason),
        cmocka_unit_test(test_model_create_no_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
