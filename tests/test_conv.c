/* test_conv.c: the convolution descriptor's checks and shapes (host only,
 * every machine): bad shapes, negative sizes, overflowing products. */
#include <limits.h>
#include <string.h>

#include "testutil.h"

static rnnc_conv_desc base(void)
{
    rnnc_conv_desc d;
    rnnc_conv_desc_init(&d);
    d.batch = 2;
    d.in_channels = 4;
    d.out_channels = 6;
    d.input[0] = 9;
    d.input[1] = 7;
    d.kernel[0] = 3;
    d.kernel[1] = 3;
    return d;
}

/* create refuses d with `want`, and the message contains `text`. */
static void refused(const rnnc_conv_desc *d, rnnc_status want, const char *text)
{
    rnnc_conv *c = (rnnc_conv *)&c; /* poisoned: must come back NULL */
    assert_status(rnnc_conv_create(&c, d), want);
    assert_null(c);
    if (!strstr(rnnc_last_error(), text))
        fail_msg("error '%s' does not contain '%s'", rnnc_last_error(), text);
}

static void test_shapes(void **st)
{
    (void)st;
    rnnc_conv_desc d = base();
    d.stride[1] = 2;
    d.padding[0] = 1;
    d.dilation[1] = 2;
    rnnc_conv *c;
    assert_ok(rnnc_conv_create(&c, &d));
    int64_t x[5], w[5], y[5];
    int rank;
    rnnc_conv_shapes(c, x, w, y, &rank);
    assert_int_equal(rank, 4);
    /* H: (9 + 2 - 3) / 1 + 1 = 9;  W: (7 - 5) / 2 + 1 = 2 */
    int64_t wy[4] = {2, 6, 9, 2}, wx[4] = {2, 4, 9, 7}, ww[4] = {6, 4, 3, 3};
    assert_memory_equal(y, wy, sizeof wy);
    assert_memory_equal(x, wx, sizeof wx);
    assert_memory_equal(w, ww, sizeof ww);
    int64_t nx, nw, ny;
    rnnc_conv_numels(c, &nx, &nw, &ny);
    assert_int_equal(nx, 2 * 4 * 9 * 7);
    assert_int_equal(ny, 2 * 6 * 9 * 2);
    rnnc_conv_destroy(c);

    /* NHWC puts channels last; groups divide the filter's channels. */
    d = base();
    d.layout = RNNC_CONV_NHWC;
    d.groups = 2;
    assert_ok(rnnc_conv_create(&c, &d));
    rnnc_conv_shapes(c, x, w, y, &rank);
    int64_t hx[4] = {2, 9, 7, 4}, hw[4] = {6, 3, 3, 2}, hy[4] = {2, 7, 5, 6};
    assert_memory_equal(x, hx, sizeof hx);
    assert_memory_equal(w, hw, sizeof hw);
    assert_memory_equal(y, hy, sizeof hy);
    rnnc_conv_destroy(c);

    /* 1-D and 3-D ranks */
    d = base();
    d.spatial_dims = 1;
    assert_ok(rnnc_conv_create(&c, &d));
    rnnc_conv_shapes(c, NULL, NULL, y, &rank);
    assert_int_equal(rank, 3);
    assert_int_equal(y[2], 7);
    rnnc_conv_destroy(c);
    d = base();
    d.spatial_dims = 3;
    d.input[2] = 5;
    d.kernel[2] = 1;
    assert_ok(rnnc_conv_create(&c, &d));
    rnnc_conv_shapes(c, NULL, NULL, y, &rank);
    assert_int_equal(rank, 5);
    assert_int_equal(y[4], 5);
    rnnc_conv_destroy(c);
}

static void test_bad_args(void **st)
{
    (void)st;
    rnnc_conv_desc d = base();
    d.batch = -3;
    refused(&d, RNNC_ERR_INVALID_ARG, "batch is negative (-3)");
    d = base();
    d.in_channels = 0;
    refused(&d, RNNC_ERR_INVALID_ARG, "in_channels is 0");
    d = base();
    d.padding[1] = -1;
    refused(&d, RNNC_ERR_INVALID_ARG, "padding W is negative");
    d = base();
    d.stride[0] = 0;
    refused(&d, RNNC_ERR_INVALID_ARG, "stride H is 0");
    d = base();
    d.spatial_dims = 4;
    refused(&d, RNNC_ERR_INVALID_ARG, "spatial_dims is 4");
    d = base();
    d.dtype = RNNC_F64;
    refused(&d, RNNC_ERR_UNSUPPORTED, "dtype F64");
    d = base();
    d.groups = 4;
    refused(&d, RNNC_ERR_SHAPE, "groups 4 does not divide in_channels 4 and out_channels 6");
    d = base();
    d.kernel[1] = 5;
    d.dilation[1] = 2;
    refused(&d, RNNC_ERR_SHAPE, "kernel W 5 dilated 2 spans 9");
    d = base();
    d.kernel[0] = (int64_t)INT_MAX + 1;
    refused(&d, RNNC_ERR_INVALID_ARG, "above cuDNN's limit");
    assert_status(rnnc_conv_create(NULL, &d), RNNC_ERR_INVALID_ARG);
}

static void test_overflow(void **st)
{
    (void)st;
    /* Every size fits an int, but the product does not fit 64 bits. */
    rnnc_conv_desc d = base();
    d.spatial_dims = 3;
    d.batch = INT_MAX;
    d.in_channels = INT_MAX;
    d.input[0] = d.input[1] = d.input[2] = INT_MAX;
    d.kernel[0] = d.kernel[1] = d.kernel[2] = 1;
    refused(&d, RNNC_ERR_INVALID_ARG, "element count of x overflows");
    /* Fits 64 bits, but not cuDNN's 32-bit element index. */
    d = base();
    d.batch = 1 << 20;
    d.input[0] = d.input[1] = 64;
    refused(&d, RNNC_ERR_UNSUPPORTED, "x has 17179869184 elements");
}

static void test_run_args(void **st)
{
    (void)st;
    rnnc_conv_desc d = base();
    rnnc_conv *c;
    assert_ok(rnnc_conv_create(&c, &d));
    float buf[4];
    assert_status(rnnc_conv_forward(NULL, c, buf, buf, buf, NULL), RNNC_ERR_INVALID_ARG);
    assert_non_null(strstr(rnnc_last_error(), "NULL handle"));
    assert_status(rnnc_conv_handle_set_plan_cache(NULL, 0), RNNC_ERR_INVALID_ARG);
    rnnc_conv_destroy(c);
    rnnc_conv_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_run_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
