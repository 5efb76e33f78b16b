/*
 * The BK_SIMD environment variable is read once per process, by the first filter that resolves the
 * automatic code path, and never again: later creations (of any type) neither read it nor see a
 * change to it. The CPU's features are read once too, and the one cap decides what every type uses.
 */
#include "testutil.h"
#include <bloomkit/experimental.h>
#include "core/hooks.h"
#include "core/simd.h"

static void read_once(void **st)
{
    (void)st;
    assert_int_equal(bk__simd_env_reads(), 0); /* nothing created yet */
    assert_int_equal(setenv("BK_SIMD", "scalar", 1), 0);
    bk_blocked *f = NULL;
    assert_int_equal(bk_blocked_new(1000, 0.01, NULL, &f), BK_OK);
    assert_int_equal(bk_blocked_simd(f), BK_SIMD_SCALAR);
    assert_int_equal(bk__simd_env_reads(), 1);
    bk_blocked_free(f);

    /* a changed environment is not seen: the cap read first stays */
    assert_int_equal(setenv("BK_SIMD", "avx512", 1), 0);
    for (int i = 0; i < 50; i++) {
        assert_int_equal(bk_blocked_new(1000, 0.01, NULL, &f), BK_OK);
        assert_int_equal(bk_blocked_simd(f), BK_SIMD_SCALAR);
        bk_blocked_free(f);
        bk_quotient *q = NULL;
        assert_int_equal(bk_quotient_new(1000, 0.01, NULL, &q), BK_OK);
        assert_int_not_equal(bk_quotient_path_of(q), BK_QUOTIENT_BMI2); /* capped at scalar */
        bk_quotient_free(q);
        bk_aging *a = NULL;
        assert_int_equal(bk_aging_new_count(1000, 0.01, NULL, &a), BK_OK);
        bk_aging_free(a);
        bk_scalable *s = NULL;
        assert_int_equal(bk_scalable_new(1000, 0.01, NULL, &s), BK_OK);
        bk_scalable_free(s);
    }
    assert_int_equal(bk__simd_env_reads(), 1);
}

/* Runs after read_once: $BK_SIMD's cap is scalar for the rest of the process. */
static void one_cap(void **st)
{
    (void)st;
    const unsigned cpu = bk__cpu_features(), avx512 = BK_CPU_AVX512F | BK_CPU_AVX512DQ | BK_CPU_AVX512POPCNT | BK_CPU_AVX512VL;
    const unsigned qf = BK_CPU_BMI2 | BK_CPU_POPCNT;
    assert_int_equal(bk__cpu_reads(), 1); /* the filters above asked once, between them */
    assert_int_equal(bk__cpu_usable(), 0); /* scalar: no type uses an extension */
    bk_quotient *q = NULL;
    for (bk_simd s = BK_SIMD_SCALAR; s <= bk_simd_best(); s++) {
        assert_int_equal(bk_simd_force(s), BK_OK);
        unsigned want = s == BK_SIMD_SCALAR ? 0 : s == BK_SIMD_AVX2 ? cpu & ~avx512 : cpu;
        assert_int_equal(bk__cpu_usable(), want);
        /* the quotient filter's AUTO path is the same cap */
        assert_int_equal(bk_quotient_new(1000, 0.01, NULL, &q), BK_OK);
        assert_int_equal(bk_quotient_path_of(q), (want & qf) == qf ? BK_QUOTIENT_BMI2 : BK_QUOTIENT_PORTABLE);
        bk_quotient_free(q);
    }
    assert_int_equal(bk_simd_force(BK_SIMD_AUTO), BK_OK);
    assert_int_equal(bk__cpu_usable(), 0); /* back to $BK_SIMD's cap */
    assert_int_equal(bk_quotient_bmi2_available(), (cpu & qf) == qf);
    assert_int_equal(bk__cpu_reads(), 1);
}

int main(void)
{
    unsetenv("BK_SIMD");
    const struct CMUnitTest tests[] = { cmocka_unit_test(read_once), cmocka_unit_test(one_cap) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
