/* test_cudnn_conv_key.c: the convolution algorithm cache's key and map
 * (host only, every machine with cuDNN built): one changed parameter gives
 * another key; the same parameters the same key, whatever was in memory. */
#include <string.h>

#include "testutil.h"

#include "cudnn_fallback/fallback.h"

static fb_conv_geom geom(void)
{
    fb_conv_geom g;
    memset(&g, 0xab, sizeof g); /* garbage around the fields, as on a stack */
    rnnc_conv_desc_init(&g.d);
    g.d.batch = 8;
    g.d.in_channels = 16;
    g.d.out_channels = 32;
    g.d.input[0] = g.d.input[1] = 14;
    g.d.kernel[0] = g.d.kernel[1] = 3;
    g.d.padding[0] = g.d.padding[1] = 1;
    return g;
}

static const void *const k_ptrs[3] = {(void *)0x10000, (void *)0x20000, (void *)0x30000};

static void test_same_key(void **st)
{
    (void)st;
    fb_conv_geom a = geom(), b = geom();
    memset(&b, 0x5c, sizeof b); /* other garbage, same fields */
    b.d = a.d;
    fb_conv_key ka, kb;
    memset(&kb, 0x77, sizeof kb);
    fb_conv_key_make(&ka, &a, RNNC_CONV_FORWARD, 0, k_ptrs);
    fb_conv_key_make(&kb, &b, RNNC_CONV_FORWARD, 0, k_ptrs);
    assert_true(fb_conv_key_equal(&ka, &kb));
    assert_true(fb_conv_key_hash(&ka) == fb_conv_key_hash(&kb));
}

/* Each edit changes one parameter; each must change the key and its hash. */
static void test_one_parameter(void **st)
{
    (void)st;
    fb_conv_geom base = geom();
    fb_conv_key k0;
    fb_conv_key_make(&k0, &base, RNNC_CONV_FORWARD, 0, k_ptrs);
    for (int e = 0; e < 17; e++) {
        fb_conv_geom g = base;
        rnnc_conv_pass pass = RNNC_CONV_FORWARD;
        const void *p[3] = {k_ptrs[0], k_ptrs[1], k_ptrs[2]};
        switch (e) {
        case 0: g.d.device = 1; break;
        case 1: g.d.dtype = RNNC_F16; break;
        case 2: g.d.batch = 9; break;
        case 3: g.d.in_channels = 32; break;
        case 4: g.d.out_channels = 16; break;
        case 5: g.d.input[1] = 15; break;
        case 6: g.d.kernel[0] = 1; break;
        case 7: g.d.stride[1] = 2; break;
        case 8: g.d.padding[0] = 0; break;
        case 9: g.d.dilation[0] = 2; break;
        case 10: g.d.groups = 2; break;
        case 11: g.d.layout = RNNC_CONV_NHWC; break;
        case 12: g.d.math = RNNC_MATH_TF32; break;
        case 13: g.d.deterministic = true; break;
        case 14: pass = RNNC_CONV_BACKWARD_DATA; break;
        case 15: p[0] = (const char *)k_ptrs[0] + 4; break; /* alignment 16 -> 4 */
        default: break; /* 16: the graph API's key, the rest the same */
        }
        fb_conv_key k;
        fb_conv_key_make(&k, &g, pass, 0, p);
        if (e == 16)
            k.api = FB_CONV_GRAPH;
        if (fb_conv_key_equal(&k, &k0) || fb_conv_key_hash(&k) == fb_conv_key_hash(&k0))
            fail_msg("edit %d did not change the key", e);
    }
}

static void test_alignment(void **st)
{
    (void)st;
    assert_int_equal(fb_conv_alignment((void *)0x1000), 16);
    assert_int_equal(fb_conv_alignment((void *)0x1008), 8);
    assert_int_equal(fb_conv_alignment((void *)0x1002), 2);
    assert_int_equal(fb_conv_alignment((void *)0x1001), 1);
}

static void test_cache(void **st)
{
    (void)st;
    fb_conv_cache_clear();
    fb_conv_geom g = geom();
    fb_conv_key k1, k2;
    fb_conv_key_make(&k1, &g, RNNC_CONV_FORWARD, 0, k_ptrs);
    g.d.stride[0] = 2;
    fb_conv_key_make(&k2, &g, RNNC_CONV_FORWARD, 0, k_ptrs);
    fb_conv_choice c = {.algo = -1};
    assert_false(fb_conv_cache_get(&k1, &c));
    fb_conv_choice a = {1, 2, 4096, FB_CONV_LEGACY}, b = {6, 0, 0, FB_CONV_GRAPH};
    assert_ok(fb_conv_cache_put(&k1, &a));
    assert_ok(fb_conv_cache_put(&k2, &b));
    assert_int_equal(fb_conv_cache_count(), 2);
    assert_true(fb_conv_cache_get(&k1, &c));
    assert_int_equal(c.algo, 1);
    assert_int_equal(c.workspace, 4096);
    assert_true(fb_conv_cache_get(&k2, &c));
    assert_int_equal(c.algo, 6);
    assert_int_equal(c.api, FB_CONV_GRAPH);
    /* A second put of a key replaces, not adds. */
    assert_ok(fb_conv_cache_put(&k1, &b));
    assert_int_equal(fb_conv_cache_count(), 2);
    assert_true(fb_conv_cache_get(&k1, &c));
    assert_int_equal(c.algo, 6);
    assert_int_equal(rnnc_conv_algo_cache_size(), 2);
    rnnc_conv_algo_cache_clear();
    assert_int_equal(fb_conv_cache_count(), 0);
    assert_false(fb_conv_cache_get(&k2, &c));
}

static void test_describe(void **st)
{
    (void)st;
    fb_conv_geom g = geom();
    rnnc_conv *c;
    assert_ok(rnnc_conv_create(&c, &g.d));
    int64_t x[5], w[5], y[5];
    int rank;
    rnnc_conv_shapes(c, x, w, y, &rank);
    g.rank = rank;
    memcpy(g.x, x, sizeof x);
    memcpy(g.w, w, sizeof w);
    memcpy(g.y, y, sizeof y);
    char buf[400];
    fb_conv_describe(&g, buf, sizeof buf);
    assert_string_equal(buf, "2-D NCHW F32 x [8, 16, 14, 14] w [32, 16, 3, 3] y [8, 32, 14, 14] "
                             "stride 1x1 pad 1x1 dilation 1x1 groups 1");
    rnnc_conv_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_key),   cmocka_unit_test(test_one_parameter),
        cmocka_unit_test(test_alignment),  cmocka_unit_test(test_cache),
        cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
