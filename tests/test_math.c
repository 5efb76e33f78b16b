#include "testutil.h"
#include <bloomkit/bloomkit.h>

static void sizing_known_values(void **state)
{
    (void)state;
    bk_geometry g;
    assert_int_equal(bk_bloom_size(1000000, 0.01, &g), BK_OK);
    assert_int_equal(g.m, 9585059);
    assert_int_equal(g.k, 7);
    TU_ASSERT_WITHIN(g.fpr, 0.01, 0.01);
    assert_int_equal(bk_bloom_size(10000, 0.01, &g), BK_OK);
    assert_true(g.m >= 95850 && g.m <= 95852);
    assert_int_equal(g.k, 7);
    TU_ASSERT_WITHIN(g.bits_per_key, 9.585, 0.001);
}

static void exact_vs_approx(void **state)
{
    (void)state;
    /* Small m: the exact form differs from the exponential approximation, and is computed right. */
    double exact = bk_bloom_fpr_exact(10, 2, 2);
    double direct = pow(1.0 - pow(1.0 - 1.0 / 10, 4), 2);
    assert_true(fabs(exact - direct) < 1e-12);
    assert_true(fabs(bk_bloom_fpr_approx(10, 2, 2) - exact) > 1e-4);
    /* Large m: they agree. */
    TU_ASSERT_WITHIN(bk_bloom_fpr_exact(9585059, 1000000, 7), bk_bloom_fpr_approx(9585059, 1000000, 7), 1e-5);
    assert_true(isnan(bk_bloom_fpr_exact(0, 1, 1)));
    assert_true(isnan(bk_bloom_fpr_exact(1, 1, 0)));
    /* Partitioned: (1 - (1 - k/m)^n)^k. */
    double part = bk_bloom_fpr_partitioned(1000, 100, 5);
    assert_true(fabs(part - pow(1.0 - pow(1.0 - 1.0 / 200, 100), 5)) < 1e-12);
}

static void capacity_inverts_sizing(void **state)
{
    (void)state;
    const double ps[] = { 0.1, 0.01, 0.001, 1e-6 };
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
        bk_geometry g;
        assert_int_equal(bk_bloom_size(123456, ps[i], &g), BK_OK);
        uint64_t n = bk_bloom_capacity(g.m, g.k, ps[i]);
        /* the geometry for n holds about n (k was rounded, so a little more or less) */
        assert_true(n > 123456 * 0.98 && n < 123456 * 1.02);
        assert_true(bk_bloom_fpr_exact(g.m, n, g.k) <= ps[i]);
        assert_true(bk_bloom_fpr_exact(g.m, n + 1, g.k) > ps[i]);
    }
    assert_int_equal(bk_bloom_capacity(0, 3, 0.01), 0);
    assert_int_equal(bk_bloom_capacity(1000, 3, 1.5), 0);
    assert_true(bk_bloom_capacity(9585059, 0, 0.01) >= 999000);
}

static void sizing_rejects_bad_input(void **state)
{
    (void)state;
    bk_geometry g;
    assert_int_equal(bk_bloom_size(0, 0.01, &g), BK_EINVAL);
    assert_int_equal(bk_bloom_size(10, 0.0, &g), BK_EINVAL);
    assert_int_equal(bk_bloom_size(10, -0.5, &g), BK_EINVAL);
    assert_int_equal(bk_bloom_size(10, 1.0, &g), BK_EINVAL);
    assert_int_equal(bk_bloom_size(10, NAN, &g), BK_EINVAL);
    assert_int_equal(bk_bloom_size(10, 0.01, NULL), BK_EINVAL);
    assert_int_equal(bk_bloom_size(UINT64_MAX, 0.01, &g), BK_ETOOBIG);
    assert_int_equal(bk_bloom_size((uint64_t)1e12, 1e-9, &g), BK_ETOOBIG);
    assert_true(isnan(bk_bloom_bits_per_key(2.0)));
    assert_int_equal(bk_bloom_optimal_k(0.1), 1);
    assert_int_equal(bk_bloom_optimal_k(1000), BK_MAX_K);
}

static void strerror_names_everything(void **state)
{
    (void)state;
    for (int s = 0; s <= BK_EEXISTS; s++) {
        const char *m = bk_strerror((bk_status)s);
        assert_non_null(m);
        assert_string_not_equal(m, "unknown status");
    }
    assert_string_equal(bk_strerror((bk_status)999), "unknown status");
    assert_string_equal(bk_version_string(), BK_VERSION_STRING);
    assert_int_equal(bk_version_number(), BK_VERSION_NUMBER);
    assert_string_equal(bk_type_name(BK_TYPE_BLOOM), "bloom");
    assert_null(bk_type_name((bk_type)0));
}

static void hash_is_seeded_xxh3(void **state)
{
    (void)state;
    assert_int_not_equal(bk_hash64("a", 1, 0), bk_hash64("a", 1, 1));
    assert_int_equal(bk_hash64("a", 1, 7), bk_hash64("a", 1, 7));
    /* XXH3-64 of the empty input with seed 0 (the published test vector) */
    assert_int_equal(bk_hash64("", 0, 0), UINT64_C(0x2D06800538D394C2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizing_known_values),   cmocka_unit_test(exact_vs_approx),
        cmocka_unit_test(capacity_inverts_sizing), cmocka_unit_test(sizing_rejects_bad_input),
        cmocka_unit_test(strerror_names_everything), cmocka_unit_test(hash_is_seeded_xxh3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
