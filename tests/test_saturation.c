/*
 * The "saturated" statistic of the bit-setting filters (classic standard and partitioned, counting,
 * blocked): at exactly the designed load the fill sits at its expected value, either side, so noise
 * alone must never flag a correctly sized filter (many random key sets, small and mid-sized); one
 * key past capacity flags it (count), and a fill clearly past the designed one flags it even when
 * the count says nothing (as after a union, whose count is an estimate).
 */
#include "testutil.h"
#include <bloomkit/bloomkit.h>

#define SEEDS 24

static uint64_t size_of(uint64_t seed) { return seed % 3 == 0 ? 50000 : seed % 3 == 1 ? 1000 : 100; }

static void add_keys(bk_filter *f, uint64_t set, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        tu_key k = tu_make_key(set, i);
        assert_int_equal(bk_filter_add(f, k.b, sizeof k.b), BK_OK);
    }
}

typedef bk_filter *(*maker)(uint64_t capacity, uint64_t seed, int variant);

static bk_filter *wrap(bk_type t, void *typed)
{
    bk_filter *f = NULL;
    assert_non_null(typed);
    assert_int_equal(bk_filter_wrap(t, typed, &f), BK_OK);
    return f;
}

static bk_filter *make_bloom(uint64_t capacity, uint64_t seed, int variant)
{
    bk_bloom_options o = { .layout = variant ? BK_LAYOUT_PARTITIONED : BK_LAYOUT_STANDARD, .seed = seed };
    bk_bloom *b = NULL;
    assert_int_equal(bk_bloom_new(capacity, 0.01, &o, &b), BK_OK);
    return wrap(BK_TYPE_BLOOM, b);
}

static bk_filter *make_counting(uint64_t capacity, uint64_t seed, int variant)
{
    bk_counting_options o = { .counter_bits = variant ? 8 : 4, .seed = seed };
    bk_counting *c = NULL;
    assert_int_equal(bk_counting_new(capacity, 0.01, &o, &c), BK_OK);
    return wrap(BK_TYPE_COUNTING, c);
}

static bk_filter *make_blocked(uint64_t capacity, uint64_t seed, int variant)
{
    bk_blocked_options o = { .layout = variant ? BK_BLOCKED_512 : BK_BLOCKED_SPLIT256, .seed = seed, .simd = BK_SIMD_AUTO };
    bk_blocked *b = NULL;
    assert_int_equal(bk_blocked_new(capacity, 0.01, &o, &b), BK_OK);
    return wrap(BK_TYPE_BLOCKED, b);
}

static void check_type(const char *name, maker mk)
{
    double worst = 0;
    for (int variant = 0; variant <= 1; variant++)
        for (uint64_t seed = 1; seed <= SEEDS; seed++) {
            uint64_t n = size_of(seed);
            bk_filter *f = mk(n, seed, variant);
            add_keys(f, seed, 0, n);
            bk_stats st;
            assert_int_equal(bk_filter_stats(f, &st), BK_OK);
            assert_int_equal(st.count, n);
            if (st.saturated)
                fail_msg("%s/%d n %llu seed %llu: flagged at the designed load (fill %.4f)", name, variant,
                         (unsigned long long)n, (unsigned long long)seed, st.fill_ratio);
            if (st.fill_ratio > worst) worst = st.fill_ratio;
            add_keys(f, seed, n, n + 1);
            assert_int_equal(bk_filter_stats(f, &st), BK_OK);
            assert_true(st.saturated); /* one key past capacity */
            bk_filter_free(f);
        }
    print_message("%s: highest fill at the designed load %.4f, never flagged\n", name, worst);
}

static void at_design_load(void **state)
{
    (void)state;
    check_type("bloom", make_bloom);
    check_type("counting", make_counting);
    check_type("blocked", make_blocked);
}

/* Fill alone: 10% more keys than capacity, saved, the body's count field (body offset 24 in all
 * three types, docs/FORMAT.md) rewritten to exactly the capacity, loaded without the checksum: the
 * count says nothing, the fill must flag it. */
static void past_design_load_by_fill(void **state)
{
    (void)state;
    const maker makers[] = { make_bloom, make_counting, make_blocked };
    const uint64_t cap = 10000;
    for (int t = 0; t < 3; t++)
        for (int variant = 0; variant <= 1; variant++) {
            bk_filter *f = makers[t](cap, 7, variant);
            add_keys(f, 1, 0, cap + cap / 10);
            void *buf;
            size_t len;
            assert_int_equal(bk_filter_save_alloc(f, &buf, &len), BK_OK);
            uint8_t *count = (uint8_t *)buf + BK_FILE_HEADER_SIZE + 24;
            for (int b = 0; b < 8; b++) count[b] = (uint8_t)(cap >> (8 * b));
            bk_filter *g;
            assert_int_equal(bk_filter_load_buffer(buf, len, BK_LOAD_NO_CHECKSUM, &g), BK_OK);
            bk_stats st;
            assert_int_equal(bk_filter_stats(g, &st), BK_OK);
            assert_int_equal(st.count, cap);
            if (!st.saturated) fail_msg("type %d/%d: fill %.4f at 1.1x capacity not flagged", t, variant, st.fill_ratio);
            bk_filter_free(g);
            bk_filter_buffer_free(buf);
            bk_filter_free(f);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(at_design_load),
        cmocka_unit_test(past_design_load_by_fill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
