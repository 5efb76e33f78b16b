/* Top-K (HeavyKeeper): accuracy on Zipf streams, the heap's behaviour, the forms, reproducibility, bad
 * input and the saved form. */
#include "testutil.h"
#include "sketchutil.h"
#include <bloomkit/bloomkit.h>

static bk_topk *make(uint32_t k, uint32_t width, uint32_t depth, double decay, uint64_t seed)
{
    bk_topk_options o = BK_TOPK_OPTIONS_INIT;
    o.width = width;
    o.depth = depth;
    o.decay = decay;
    o.seed = seed;
    bk_topk *f = NULL;
    assert_int_equal(bk_topk_new(k, &o, &f), BK_OK);
    return f;
}

static int cmp_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* How many of the reported top k are among the true top k (ranks with the k largest counts). */
static size_t recall(const bk_topk *f, const uint64_t *count, uint64_t n_keys, uint32_t k)
{
    uint64_t *sorted = malloc(n_keys * sizeof *sorted);
    memcpy(sorted, count, n_keys * sizeof *sorted);
    qsort(sorted, n_keys, sizeof *sorted, cmp_desc);
    uint64_t threshold = sorted[k - 1]; /* ties at the boundary all count as "true top k" */
    free(sorted);
    bk_topk_item *items = calloc(k, sizeof *items);
    size_t n = bk_topk_list(f, items, k), hit = 0;
    assert_true(n <= k);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(items[i].key);
        assert_int_equal(items[i].len, 8);
        uint64_t key;
        memcpy(&key, items[i].key, 8);
        uint64_t r = (key - 12345) * UINT64_C(0xf1de83e19937733d); /* su_key's inverse */
        assert_true(r < n_keys);
        if (count[r] >= threshold) hit++;
        if (i) assert_true(items[i - 1].count >= items[i].count);
    }
    free(items);
    return hit;
}

static size_t zipf_run(bk_topk *f, uint64_t n_keys, uint64_t n_items, uint64_t seed, uint32_t k)
{
    su_zipf z;
    assert_true(su_zipf_init(&z, n_keys, 1.0, seed));
    uint64_t *count = calloc(n_keys, sizeof *count);
    for (uint64_t i = 0; i < n_items; i++) {
        uint64_t r = su_zipf_next(&z);
        count[r]++;
        assert_int_equal(bk_topk_incrby_u64(f, su_key(r), 1, NULL), BK_OK);
    }
    size_t hit = recall(f, count, n_keys, k);
    free(count);
    su_zipf_free(&z);
    return hit;
}

static void inverse_key(void **state)
{
    (void)state;
    for (uint64_t r = 0; r < 1000; r++) assert_int_equal((su_key(r) - 12345) * UINT64_C(0xf1de83e19937733d), r);
}

/* Zipf(1.0), 1e6 items over 1e5 distinct keys, k = 100: the reported top 100 holds at least 95 of the
 * true top 100, with the default geometry and with RedisBloom's rule of thumb (width k ln k, depth
 * ln k, at least 5; decay 0.9). bench/bench_sketch measures the 1e7-over-1e6 figure. */
static void zipf_top100(void **state)
{
    (void)state;
    bk_topk *f = NULL;
    assert_int_equal(bk_topk_new(100, NULL, &f), BK_OK);
    assert_int_equal(bk_topk_width(f), 461);
    assert_int_equal(bk_topk_depth(f), 5);
    assert_true(bk_topk_decay(f) == 0.9);
    size_t hit = zipf_run(f, 100000, 1000000, 11, 100);
    print_message("default geometry (461 x 5, 0.9): %zu of the true top 100\n", hit);
    assert_true(hit >= 95);
    bk_topk_free(f);
    f = make(100, 1000, 5, 0.9, 3);
    hit = zipf_run(f, 100000, 1000000, 12, 100);
    print_message("1000 x 5, 0.9: %zu of the true top 100\n", hit);
    assert_true(hit >= 95);
    bk_topk_free(f);
}

/* TOPK.RESERVE's bare defaults (8 x 7, decay 0.9: 56 buckets for a list of 100) on the same kind of
 * stream: a key in the list keeps the largest estimate it reached, so the list is not handed to lighter
 * keys whose buckets happened to survive the heavy keys' decay. With the estimate taken as it falls
 * (RedisBloom's rule) the first of these streams gives 28; kept, 72 to 74. Far from 95: the geometry is too
 * small for a list of 100 (docs/REDIS.md), which is why the library's default is k ln k x ln k. */
static void zipf_top100_small(void **state)
{
    (void)state;
    for (uint64_t seed = 21; seed < 24; seed++) {
        bk_topk *f = make(100, 8, 7, 0.9, seed);
        size_t hit = zipf_run(f, 100000, 1000000, seed, 100);
        print_message("8 x 7, 0.9, seed %llu: %zu of the true top 100\n", (unsigned long long)seed, hit);
        assert_true(hit >= 60);
        bk_topk_free(f);
    }
}

static void heap_behaviour(void **state)
{
    (void)state;
    /* decay 1: a bucket held by another key always decays, which makes small cases exact */
    bk_topk *f = make(3, 10, 3, 1.0, 0);
    bk_topk_item ex;
    assert_int_equal(bk_topk_incrby(f, "bar", 3, 3, &ex), BK_OK);
    assert_null(ex.key);
    assert_int_equal(ex.count, 0);
    assert_int_equal(bk_topk_incrby(f, "baz", 3, 6, &ex), BK_OK);
    assert_int_equal(bk_topk_incrby(f, "42", 2, 2, &ex), BK_OK);
    assert_null(ex.key);
    assert_int_equal(bk_topk_list(f, NULL, 0), 3);
    /* a fourth key heavier than the lightest pushes it out */
    assert_int_equal(bk_topk_incrby(f, "xyzzy", 5, 4, &ex), BK_OK);
    assert_non_null(ex.key);
    assert_int_equal(ex.len, 2);
    assert_memory_equal(ex.key, "42", 2);
    assert_int_equal(ex.count, 2);
    assert_true(bk_topk_query(f, "xyzzy", 5));
    assert_false(bk_topk_query(f, "42", 2));
    assert_true(bk_topk_count(f, "baz", 3) == 6);
    assert_true(bk_topk_count(f, "nope", 4) == 0);
    bk_topk_item items[5];
    assert_int_equal(bk_topk_list(f, items, 5), 3);
    assert_memory_equal(items[0].key, "baz", 3);
    assert_int_equal(items[0].count, 6);
    assert_memory_equal(items[1].key, "xyzzy", 5);
    assert_memory_equal(items[2].key, "bar", 3);
    /* a short output array gets the heaviest */
    assert_int_equal(bk_topk_list(f, items, 1), 3);
    assert_memory_equal(items[0].key, "baz", 3);
    /* increment 0 changes nothing */
    assert_int_equal(bk_topk_incrby(f, "new", 3, 0, &ex), BK_OK);
    assert_false(bk_topk_query(f, "new", 3));
    bk_stats st;
    bk_topk_stats(f, &st);
    assert_int_equal(st.type, BK_TYPE_TOPK);
    assert_int_equal(st.capacity, 3);
    assert_int_equal(st.count, 15);
    assert_int_equal(st.subfilters, 3);
    assert_int_equal(st.bits, 30);
    bk_topk_clear(f);
    assert_int_equal(bk_topk_list(f, NULL, 0), 0);
    assert_false(bk_topk_query(f, "baz", 3));
    bk_topk_free(f);
}

static void saturation_and_decay(void **state)
{
    (void)state;
    bk_topk *f = make(2, 4, 2, 0.9, 1);
    for (int i = 0; i < 4; i++) assert_int_equal(bk_topk_incrby(f, "big", 3, UINT32_MAX, NULL), BK_OK);
    assert_int_equal(bk_topk_count(f, "big", 3), UINT32_MAX);
    /* a huge count is never decayed away by a light key (decay^count underflows to 0) */
    for (int i = 0; i < 1000; i++) assert_int_equal(bk_topk_incrby(f, "small", 5, 100000, NULL), BK_OK);
    assert_int_equal(bk_topk_count(f, "big", 3), UINT32_MAX);
    assert_true(bk_topk_query(f, "big", 3));
    bk_topk_free(f);
}

static void forms_and_reproducible(void **state)
{
    (void)state;
    bk_topk *a = make(10, 64, 4, 0.9, 5), *b = make(10, 64, 4, 0.9, 5), *c = make(10, 64, 4, 0.9, 5);
    const void *keys[256];
    size_t lens[256];
    uint64_t ks[256];
    uint32_t vals[256];
    for (int i = 0; i < 256; i++) {
        ks[i] = (uint64_t)(i * 7 % 31);
        keys[i] = &ks[i];
        lens[i] = 8;
        vals[i] = 1 + (uint32_t)(i % 3);
    }
    size_t done = 0;
    assert_int_equal(bk_topk_incrby_many(a, keys, lens, vals, 256, &done), BK_OK);
    assert_int_equal(done, 256);
    for (int i = 0; i < 256; i++) {
        assert_int_equal(bk_topk_incrby_u64(b, ks[i], vals[i], NULL), BK_OK);
        assert_int_equal(bk_topk_incrby(c, &ks[i], 8, vals[i], NULL), BK_OK);
    }
    bk_topk_item la[10], lb[10], lc[10];
    size_t na = bk_topk_list(a, la, 10), nb = bk_topk_list(b, lb, 10), nc = bk_topk_list(c, lc, 10);
    assert_int_equal(na, nb);
    assert_int_equal(na, nc);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(la[i].hash, lb[i].hash);
        assert_int_equal(la[i].count, lb[i].count);
        assert_int_equal(la[i].hash, lc[i].hash);
        assert_int_equal(la[i].hash, bk_hash64(la[i].key, la[i].len, 5));
    }
    for (int i = 0; i < 31; i++) {
        uint64_t k = (uint64_t)i;
        assert_int_equal(bk_topk_count_u64(a, k), bk_topk_count(b, &k, 8));
        assert_int_equal(bk_topk_query_u64(a, k), bk_topk_query_hash(c, bk_hash64(&k, 8, 5)));
    }
    /* hash-only keys are listed without bytes */
    bk_topk *h = make(4, 64, 4, 0.9, 0);
    uint64_t hs[3] = { 1, 2, 3 };
    assert_int_equal(bk_topk_incrby_hashes(h, hs, NULL, 3, &done), BK_OK);
    bk_topk_item lh[4];
    assert_int_equal(bk_topk_list(h, lh, 4), 3);
    assert_null(lh[0].key);
    /* bad input */
    const void *badk[2] = { keys[0], NULL };
    size_t badl[2] = { 8, 1 };
    assert_int_equal(bk_topk_incrby_many(a, badk, badl, NULL, 2, &done), BK_EINVAL);
    assert_int_equal(done, 0);
    assert_int_equal(bk_topk_incrby(a, NULL, 2, 1, NULL), BK_EINVAL);
    bk_topk *x = NULL;
    assert_int_equal(bk_topk_new(0, NULL, &x), BK_EINVAL);
    bk_topk_options o = BK_TOPK_OPTIONS_INIT;
    o.decay = 1.5;
    assert_int_equal(bk_topk_new(3, &o, &x), BK_EINVAL);
    o.decay = 0.9;
    o.depth = BK_TOPK_MAX_DEPTH + 1;
    assert_int_equal(bk_topk_new(3, &o, &x), BK_EINVAL);
    o.depth = 64;
    o.width = UINT32_MAX;
    assert_int_equal(bk_topk_new(3, &o, &x), BK_ETOOBIG);
    assert_null(x);
    bk_topk_free(a);
    bk_topk_free(b);
    bk_topk_free(c);
    bk_topk_free(h);
}

static void saved_form(void **state)
{
    (void)state;
    bk_topk *f = make(20, 200, 5, 0.9, 99);
    su_zipf z;
    assert_true(su_zipf_init(&z, 5000, 1.0, 3));
    for (int i = 0; i < 50000; i++) {
        char key[32];
        int n = snprintf(key, sizeof key, "item-%llu", (unsigned long long)su_zipf_next(&z));
        bk_topk_incrby(f, key, (size_t)n, 1, NULL);
    }
    bk_topk_incrby(f, "", 0, 100000, NULL); /* the empty key, listed as such */
    bk_topk *twin = NULL;
    assert_int_equal(bk_topk_clone(f, &twin), BK_OK);
    bk_filter *h = NULL;
    assert_int_equal(bk_filter_wrap(BK_TYPE_TOPK, f, &h), BK_OK);
    size_t size = 0, written = 0;
    assert_int_equal(bk_filter_save_size(h, &size), BK_OK);
    uint8_t *buf = malloc(size);
    assert_int_equal(bk_filter_save_buffer(h, buf, size, &written), BK_OK);
    bk_filter *l = NULL;
    assert_int_equal(bk_filter_load_buffer(buf, size, 0, &l), BK_OK);
    bk_topk *lt = bk_filter_get(l, BK_TYPE_TOPK);
    assert_non_null(lt);
    bk_topk_item a[20], b[20];
    size_t na = bk_topk_list(twin, a, 20), nb = bk_topk_list(lt, b, 20);
    assert_int_equal(na, nb);
    assert_int_equal(na, 20);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(a[i].len, b[i].len);
        assert_memory_equal(a[i].key, b[i].key, a[i].len);
        assert_int_equal(a[i].count, b[i].count);
    }
    assert_int_equal(a[0].len, 0);
    /* the loaded sketch continues exactly as the original: the generator's state was saved */
    for (int i = 0; i < 20000; i++) {
        char key[32];
        int n = snprintf(key, sizeof key, "item-%llu", (unsigned long long)su_zipf_next(&z));
        bk_topk_incrby(twin, key, (size_t)n, 1, NULL);
        bk_topk_incrby(lt, key, (size_t)n, 1, NULL);
    }
    na = bk_topk_list(twin, a, 20);
    nb = bk_topk_list(lt, b, 20);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(a[i].hash, b[i].hash);
        assert_int_equal(a[i].count, b[i].count);
    }
    /* damaged copies are refused */
    for (size_t i = 0; i < size; i += 13) {
        buf[i] ^= 0x10;
        bk_filter *x = NULL;
        assert_int_not_equal(bk_filter_load_buffer(buf, size, 0, &x), BK_OK);
        buf[i] ^= 0x10;
    }
    for (size_t cut = 0; cut < size; cut += 101) {
        bk_filter *x = NULL;
        assert_int_not_equal(bk_filter_load_buffer(buf, cut, 0, &x), BK_OK);
    }
    /* the generic handle: add is +1, contains is "in the top k" */
    assert_true(bk_filter_contains(l, "", 0));
    assert_false(bk_filter_contains(l, "never", 5));
    free(buf);
    bk_filter_free(l);
    bk_filter_free(h);
    bk_topk_free(twin);
    su_zipf_free(&z);
}

/* The golden file of type 11: built today from fixed keys, the same bytes as recorded; the recorded
 * file lists the same keys and continues the same way. */
static bk_topk *golden_sketch(void)
{
    bk_topk *t = make(8, 64, 4, 0.9, 42);
    su_zipf z;
    assert_true(su_zipf_init(&z, 300, 1.0, 9));
    for (int i = 0; i < 20000; i++) {
        char key[32];
        int n = snprintf(key, sizeof key, "key-%llu", (unsigned long long)su_zipf_next(&z));
        bk_topk_incrby(t, key, (size_t)n, 1, NULL);
    }
    su_zipf_free(&z);
    bk_topk_incrby(t, "", 0, 5000, NULL);
    return t;
}

static void golden(void **state)
{
    (void)state;
    bk_topk *t = golden_sketch();
    bk_filter *h = NULL, *l = NULL;
    const char *err = su_golden_sketch(BK_TEST_SOURCE_DIR, "topk-v1.0.bkf", BK_TYPE_TOPK, t, &h, &l);
    if (err) fail_msg("%s", err);
    if (l) {
        bk_topk *lt = bk_filter_get(l, BK_TYPE_TOPK);
        bk_topk_item a[8], b[8];
        assert_int_equal(bk_topk_list(lt, a, 8), 8);
        assert_int_equal(a[0].len, 0); /* the empty key, 5000 */
        assert_int_equal(a[0].count, 5000);
        assert_memory_equal(a[1].key, "key-0", 5);
        for (int i = 0; i < 1000; i++) {
            bk_topk_incrby(lt, "key-3", 5, 1, NULL);
            bk_topk_incrby(t, "key-3", 5, 1, NULL);
        }
        bk_topk_list(t, b, 8);
        bk_topk_list(lt, a, 8);
        for (int i = 0; i < 8; i++) assert_int_equal(a[i].hash, b[i].hash);
        bk_filter_free(l);
    }
    bk_filter_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inverse_key),
        cmocka_unit_test(heap_behaviour),
        cmocka_unit_test(saturation_and_decay),
        cmocka_unit_test(forms_and_reproducible),
        cmocka_unit_test(saved_form),
        cmocka_unit_test(zipf_top100),
        cmocka_unit_test(zipf_top100_small),
        cmocka_unit_test(golden),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
