/* bk_filter_set_count: the bit-setting types take a count from the caller (a builder that knows the
 * distinct keys it added); the other types refuse, and nothing changes. */
#include "testutil.h"
#include <bloomkit/bloomkit.h>

static uint64_t count_of(const bk_filter *f)
{
    bk_stats st;
    assert_int_equal(bk_filter_stats(f, &st), BK_OK);
    return st.count;
}

/* 1,000 keys added twice: 2,000 adds counted; set_count(1000) is what stats and the saved file say. */
static void sets_bits_type(bk_type type, void *typed)
{
    bk_filter *f = NULL;
    assert_int_equal(bk_filter_wrap(type, typed, &f), BK_OK);
    for (int rep = 0; rep < 2; rep++)
        for (uint64_t i = 0; i < 1000; i++) {
            tu_key k = tu_make_key(1, i);
            assert_int_equal(bk_filter_add(f, k.b, sizeof k.b), BK_OK);
        }
    assert_int_equal(count_of(f), 2000);
    size_t cap = 0, len = 0;
    assert_int_equal(bk_filter_save_size(f, &cap), BK_OK);
    uint8_t *before = malloc(cap), *after = malloc(cap);
    assert_int_equal(bk_filter_save_buffer(f, before, cap, &len), BK_OK);
    assert_int_equal(bk_filter_set_count(f, 1000), BK_OK);
    assert_int_equal(count_of(f), 1000);
    for (uint64_t i = 0; i < 1000; i++) {
        tu_key k = tu_make_key(1, i);
        assert_true(bk_filter_contains(f, k.b, sizeof k.b));
    }
    /* round trip keeps the count; only the count field differs from the earlier saved form */
    assert_int_equal(bk_filter_save_buffer(f, after, cap, &len), BK_OK);
    bk_filter *g = NULL;
    assert_int_equal(bk_filter_load_buffer(after, len, 0, &g), BK_OK);
    assert_int_equal(count_of(g), 1000);
    size_t differ = 0;
    for (size_t i = 0; i < len; i++) differ += before[i] != after[i];
    assert_true(differ > 0 && differ <= 8 + 8 + 8); /* the count's bytes and the two checksums */
    assert_int_equal(bk_filter_set_count(NULL, 1), BK_EINVAL);
    /* a mapped file refuses, and keeps its count */
    const char *path = "test_filter_count.bkf";
    assert_int_equal(bk_filter_save_path(f, path), BK_OK);
    bk_filter *m = NULL;
    assert_int_equal(bk_filter_open_mmap(path, 0, &m), BK_OK);
    assert_int_equal(bk_filter_set_count(m, 5), BK_ENOTSUP);
    assert_int_equal(count_of(m), 1000);
    bk_filter_free(m);
    remove(path);
    bk_filter_free(g);
    free(before);
    free(after);
    bk_filter_free(f);
}

static void bloom_standard(void **s)
{
    (void)s;
    bk_bloom *b = NULL;
    assert_int_equal(bk_bloom_new(1000, 0.01, NULL, &b), BK_OK);
    sets_bits_type(BK_TYPE_BLOOM, b);
}

static void bloom_partitioned(void **s)
{
    (void)s;
    bk_bloom *b = NULL;
    bk_bloom_options o = { .layout = BK_LAYOUT_PARTITIONED, .seed = 3 };
    assert_int_equal(bk_bloom_new(1000, 0.01, &o, &b), BK_OK);
    sets_bits_type(BK_TYPE_BLOOM, b);
}

static void blocked(void **s)
{
    (void)s;
    bk_blocked *b = NULL;
    assert_int_equal(bk_blocked_new(1000, 0.01, NULL, &b), BK_OK);
    sets_bits_type(BK_TYPE_BLOCKED, b);
}

/* Exact-count types refuse, and their count stays. */
static void counting_refuses(void **s)
{
    (void)s;
    bk_counting *c = NULL;
    assert_int_equal(bk_counting_new(1000, 0.01, NULL, &c), BK_OK);
    bk_filter *f = NULL;
    assert_int_equal(bk_filter_wrap(BK_TYPE_COUNTING, c, &f), BK_OK);
    for (uint64_t i = 0; i < 10; i++) {
        tu_key k = tu_make_key(2, i);
        assert_int_equal(bk_filter_add(f, k.b, sizeof k.b), BK_OK);
    }
    assert_int_equal(bk_filter_set_count(f, 3), BK_ENOTSUP);
    assert_int_equal(count_of(f), 10);
    bk_filter_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bloom_standard),
        cmocka_unit_test(bloom_partitioned),
        cmocka_unit_test(blocked),
        cmocka_unit_test(counting_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
