/* test_philox.c: Philox4x32-10 against Random123's known-answer vectors, and
 * the dropout decision built on it (docs/dropout.md). */
#include <math.h>
#include <stdlib.h>

#include "runtime/spec/spec.h"
#include "testutil.h"

static void expect_block(uint64_t seed, uint64_t hi, uint64_t lo, uint32_t w0, uint32_t w1,
                         uint32_t w2, uint32_t w3)
{
    uint32_t out[4] = {0, 0, 0, 0};
    rnnc_philox4x32_10(seed, hi, lo, out);
    assert_int_equal(out[0], w0);
    assert_int_equal(out[1], w1);
    assert_int_equal(out[2], w2);
    assert_int_equal(out[3], w3);
}

/* Random123 kat_vectors, philox4x32_10: counter words c0..c3 are lo's low and
 * high halves then hi's; key words k0, k1 are seed's low and high halves. */
static void test_known_answers(void **st)
{
    (void)st;
    expect_block(0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u);
    expect_block(UINT64_MAX, UINT64_MAX, UINT64_MAX, 0x408f276du, 0x41c83b0eu, 0xa20bc7c6u,
                 0x6d5451fdu);
    /* counter 243f6a88 85a308d3 13198a2e 03707344, key a4093822 299f31d0 */
    expect_block(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull,
                 0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u);
}

/* Every word of the key and counter must reach the output. */
static void test_every_word_matters(void **st)
{
    (void)st;
    uint32_t base[4], o[4];
    uint64_t seed = 0x0123456789abcdefull, hi = 0x1111222233334444ull, lo = 0x5555666677778888ull;
    rnnc_philox4x32_10(seed, hi, lo, base);
    for (int bit = 0; bit < 64; bit += 32) {
        uint64_t m = 1ull << bit;
        uint64_t args[3][3] = {{seed ^ m, hi, lo}, {seed, hi ^ m, lo}, {seed, hi, lo ^ m}};
        for (int k = 0; k < 3; k++) {
            rnnc_philox4x32_10(args[k][0], args[k][1], args[k][2], o);
            int same = 0;
            for (int i = 0; i < 4; i++)
                same += o[i] == base[i];
            assert_true(same < 4);
        }
    }
}

/* keep(seed, site, index, p) is word index%4 of block index/4, compared with p. */
static void test_keep_definition(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    uint64_t seed = (uint64_t)(tu_uniform(&rng, 0, 4e9)) << 20 | 7;
    for (int k = 0; k < 200; k++) {
        uint64_t site = (uint64_t)tu_uniform(&rng, 0, 70000);
        uint64_t index = (uint64_t)tu_uniform(&rng, 0, 1e9);
        double p = tu_uniform(&rng, 0.05, 0.95);
        uint32_t w[4];
        rnnc_philox4x32_10(seed, site, index / 4, w);
        double u = w[index % 4] / 4294967296.0;
        assert_int_equal(cm_dropout_keep(seed, site, index, p), u >= p);
    }
    assert_true(cm_dropout_keep(seed, 3, 5, 0.0));
    assert_false(cm_dropout_keep(seed, 3, 5, 1.0));
    assert_true(fabs(cm_dropout_scale(0.25) - 4.0 / 3.0) < 1e-15);
    assert_true(cm_dropout_scale(0.0) == 1.0);
    assert_true(cm_dropout_scale(1.0) == 0.0);
}

static double keep_fraction(uint64_t seed, uint64_t site, double p, int n)
{
    int kept = 0;
    for (int i = 0; i < n; i++)
        kept += cm_dropout_keep(seed, site, (uint64_t)i, p);
    return (double)kept / n;
}

static void test_keep_statistics(void **st)
{
    (void)st;
    uint64_t rng = tu_seed();
    uint64_t seed = (uint64_t)tu_uniform(&rng, 1, 1e15);
    const int n = 40000;
    double ps[3] = {0.1, 0.5, 0.8};
    for (int k = 0; k < 3; k++) {
        double f = keep_fraction(seed, 1, ps[k], n);
        /* 5 standard deviations of a binomial proportion */
        double sd = sqrt(ps[k] * (1 - ps[k]) / n);
        assert_true(fabs(f - (1 - ps[k])) < 5 * sd);
    }
    /* Different seeds and different sites give different masks. */
    int diff_seed = 0, diff_site = 0;
    for (int i = 0; i < 256; i++) {
        bool a = cm_dropout_keep(seed, 1, (uint64_t)i, 0.5);
        diff_seed += a != cm_dropout_keep(seed + 1, 1, (uint64_t)i, 0.5);
        diff_site += a != cm_dropout_keep(seed, rt_dropout_site_cell(0, 0), (uint64_t)i, 0.5);
        assert_int_equal(a, cm_dropout_keep(seed, 1, (uint64_t)i, 0.5));
    }
    assert_true(diff_seed > 64 && diff_seed < 192);
    assert_true(diff_site > 64 && diff_site < 192);
    assert_true(rt_dropout_site_cell(2, 3) == 0x10000u + 2 * 256 + 3);
    assert_true(rt_dropout_site_layer(4) == 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_every_word_matters),
        cmocka_unit_test(test_keep_definition),
        cmocka_unit_test(test_keep_statistics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
