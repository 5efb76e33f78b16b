/* The expanding quotient filter (bk_xquotient): one table that doubles. Filled from 1,000 keys to
 * 2^10 times that at p = 1% and 0.1%: no false negatives, and after every doubling the FPR measured
 * on 10^6 absent keys (fixed seeds) within 1.1 p and the bound within p; growth much further
 * (2^14, and at 10% far enough that the first keys' fingerprints run out and are copied); the batch
 * answers as the one-key call; counts; arguments refused. */
#include "testutil.h"
#include <bloomkit/bloomkit.h>
#include "filters/testing.h"

/* The table inside (quotient_expand.c's test hook): its layout invariants are the quotient filter's. */
const struct bk_quotient *bk__xquotient_table(const bk_xquotient *f);
static void check_table(const bk_xquotient *f) { assert_int_equal(bk__quotient_check(bk__xquotient_table(f)), BK_OK); }

static uint64_t key_hash(uint64_t set, uint64_t i)
{
    tu_key k = tu_make_key(set, i);
    return bk_hash64(k.b, sizeof k.b, 7);
}

static bk_xquotient *make(uint64_t n, double p)
{
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.seed = 7;
    bk_xquotient *f;
    assert_int_equal(bk_xquotient_new(n, p, &o, &f), BK_OK);
    return f;
}

static double measured_fpr(const bk_xquotient *f, uint64_t absent, uint64_t set)
{
    uint64_t fp = 0;
    for (uint64_t i = 0; i < absent; i++) fp += bk_xquotient_contains_hash(f, key_hash(set, i));
    return (double)fp / (double)absent;
}

/* Fill from n0 to n0 2^10 keys; after each doubling (the state the previous generation ended in,
 * plus one key: the FPR's highest point) measure the FPR on 10^6 absent keys and check every key
 * added so far. */
static void grow_2_10(double p, uint32_t want_width)
{
    const uint64_t n0 = 1000, n = n0 << 10;
    bk_xquotient *f = make(n0, p);
    uint32_t seen = 0;
    for (uint64_t i = 0; i < n; i++) {
        assert_int_equal(bk_xquotient_add_hash(f, key_hash(1, i)), BK_OK);
        if (bk_xquotient_doublings(f) == seen) continue;
        seen = bk_xquotient_doublings(f);
        assert_true(bk_xquotient_fpr_bound(f) <= p);
        double fpr = measured_fpr(f, 1000000, 2 + seen);
        print_message("p %g: doubling %u at %llu keys: width %u, FPR %.5f, bound %.5f\n", p, seen,
                      (unsigned long long)(i + 1), bk_xquotient_slot_bits(f), fpr, bk_xquotient_fpr_bound(f));
        assert_true(fpr <= 1.1 * p);
        check_table(f);
        for (uint64_t j = 0; j <= i; j += 1 + (seen < 6 ? 0 : 3)) assert_true(bk_xquotient_contains_hash(f, key_hash(1, j)));
    }
    assert_int_equal(bk_xquotient_doublings(f), 10);
    assert_int_equal(bk_xquotient_keys(f), n);
    for (uint64_t i = 0; i < n; i++) assert_true(bk_xquotient_contains_hash(f, key_hash(1, i)));
    double fpr = measured_fpr(f, 1000000, 100);
    bk_quotient_geometry g;
    assert_int_equal(bk_quotient_size(n, p, NULL, &g), BK_OK);
    double bpk = (double)bk_xquotient_memory(f) * 8 / (double)n;
    print_message("p %g: 2^10 growth: width %u, FPR %.5f (bound %.5f), %.2f bits/key; sized for n: %.2f (%.3fx)\n", p,
                  bk_xquotient_slot_bits(f), fpr, bk_xquotient_fpr_bound(f), bpk, g.bits_per_key, bpk / g.bits_per_key);
    assert_true(fpr <= 1.1 * p);
    assert_true(bk_xquotient_fpr_bound(f) <= p);
    assert_int_equal(bk_xquotient_slot_bits(f), want_width);
    assert_true(bpk <= 1.5 * g.bits_per_key);

    /* the batch answers as the one-key calls, key for key */
    enum { B = 20011 };
    static uint64_t bh[B];
    static uint8_t br[B];
    size_t want = 0;
    for (uint64_t i = 0; i < B; i++) bh[i] = i % 3 ? key_hash(2, i) : key_hash(1, i * 7);
    size_t hits = bk_xquotient_contains_hashes(f, bh, B, br);
    for (uint64_t i = 0; i < B; i++) {
        bool one = bk_xquotient_contains_hash(f, bh[i]);
        assert_int_equal(br[i], one);
        want += one;
    }
    assert_int_equal(hits, want);
    assert_true(hits > B / 3);
    assert_int_equal(bk_xquotient_contains_hashes(f, bh, B, NULL), want);
    bk_xquotient_free(f);
}

static void grow_2_10_at_1pct(void **state)
{
    (void)state;
    grow_2_10(0.01, 11);
}

static void grow_2_10_at_01pct(void **state)
{
    (void)state;
    grow_2_10(0.001, 15);
}

/* Far past 2^10: made for 200 keys at p, filled to 2^k times that. The slots widen as the budget
 * asks, the bound stays within p, the FPR within 1.1 p, no key is lost. At 10% the first keys'
 * fingerprints (8 - 1 bits) run out after seven doublings: they are then copied to both halves at
 * each doubling (more slots in use than keys), and still answer. */
static void grow_far(double p, unsigned k)
{
    const uint64_t n0 = 200, n = n0 << k;
    bk_xquotient *f = make(n0, p);
    uint32_t w0 = bk_xquotient_slot_bits(f);
    for (uint64_t i = 0; i < n; i++) assert_int_equal(bk_xquotient_add_hash(f, key_hash(3, i)), BK_OK);
    assert_true(bk_xquotient_doublings(f) >= k - 1);
    for (uint64_t i = 0; i < n; i += (i < 100000 ? 1 : 7)) assert_true(bk_xquotient_contains_hash(f, key_hash(3, i)));
    double fpr = measured_fpr(f, 1000000, 4);
    print_message("p %g: made for %llu, %llu keys, %u doublings: width %u (first %u), FPR %.5f, bound %.5f, "
                  "slots used %llu for %llu keys\n",
                  p, (unsigned long long)n0, (unsigned long long)n, bk_xquotient_doublings(f),
                  bk_xquotient_slot_bits(f), w0, fpr, bk_xquotient_fpr_bound(f),
                  (unsigned long long)bk_xquotient_slots_used(f), (unsigned long long)n);
    assert_true(bk_xquotient_fpr_bound(f) <= p);
    assert_true(fpr <= 1.1 * p);
    check_table(f);
    if (p < 0.05) assert_true(bk_xquotient_slot_bits(f) > w0); /* the schedule widened the slots */
    else assert_true(bk_xquotient_slots_used(f) > n);          /* copies of the entries that ran out */
    bk_xquotient_free(f);
}

static void grow_2_14_at_1pct(void **state)
{
    (void)state;
    grow_far(0.01, 14);
}

static void grow_2_14_at_10pct(void **state)
{
    (void)state;
    grow_far(0.1, 14);
}

/* Counts: a key added c times counts at least c; explicit doublings keep every count. */
static void counts_and_expand(void **state)
{
    (void)state;
    bk_xquotient *f = make(500, 0.01);
    for (uint64_t i = 0; i < 300; i++)
        for (uint64_t c = 0; c <= i % 5; c++) assert_int_equal(bk_xquotient_add_hash(f, key_hash(5, i)), BK_OK);
    const uint32_t d0 = bk_xquotient_doublings(f); /* 1,500 adds: one doubling on the way */
    assert_int_equal(d0, 1);
    for (int d = 0; d < 12; d++) {
        for (uint64_t i = 0; i < 300; i++) assert_true(bk_xquotient_count_hash(f, key_hash(5, i)) >= 1 + i % 5);
        assert_int_equal(bk_xquotient_expand(f), BK_OK);
        check_table(f);
    }
    assert_int_equal(bk_xquotient_doublings(f), d0 + 12);
    assert_true(bk_xquotient_fpr_bound(f) <= 0.01);
    const char key[] = "a key";
    assert_false(bk_xquotient_contains(f, key, sizeof key));
    assert_int_equal(bk_xquotient_add(f, key, sizeof key), BK_OK);
    assert_true(bk_xquotient_contains(f, key, sizeof key));
    bk_xquotient_free(f);
}

static void arguments(void **state)
{
    (void)state;
    bk_xquotient *f = (bk_xquotient *)1;
    assert_int_equal(bk_xquotient_new(0, 0.01, NULL, &f), BK_EINVAL);
    assert_null(f);
    assert_int_equal(bk_xquotient_new(1000, 0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_xquotient_new(1000, 1, NULL, &f), BK_EINVAL);
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.remainder_bits = 9;
    assert_int_equal(bk_xquotient_new(1000, 0.01, &o, &f), BK_EINVAL);
    assert_int_equal(bk_xquotient_new(1000, 0.01, NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_xquotient_add_hash(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_xquotient_add(NULL, "k", 1), BK_EINVAL);
    assert_int_equal(bk_xquotient_expand(NULL), BK_EINVAL);
    assert_false(bk_xquotient_contains_hash(NULL, 1));
    assert_int_equal(bk_xquotient_contains_hashes(NULL, NULL, 0, NULL), 0);
    bk_xquotient_free(NULL);
    assert_int_equal(bk_xquotient_new(1000, 0.01, NULL, &f), BK_OK);
    assert_int_equal(bk_xquotient_add(f, NULL, 1), BK_EINVAL);
    assert_int_equal(bk_xquotient_keys(f), 0);
    assert_int_equal(bk_xquotient_doublings(f), 0);
    assert_int_equal(bk_xquotient_slot_bits(f), 11);
    assert_true(bk_xquotient_fpr_target(f) == 0.01);
    bk_xquotient_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grow_2_10_at_1pct),  cmocka_unit_test(grow_2_10_at_01pct),
        cmocka_unit_test(grow_2_14_at_1pct),  cmocka_unit_test(grow_2_14_at_10pct),
        cmocka_unit_test(counts_and_expand),  cmocka_unit_test(arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
