/* The quotient filter's growth past its planned room (bk_quotient_expand): no false negatives across
 * twenty doublings, the FPR measured on a million absent keys within 1.1 p after 2^10 growth, the
 * number of stages, counts and removals across stages, clone and save/load bit-identical, merge and
 * enumeration refused, and the in-place doublings a filter planned for still taken first. */
#include "testutil.h"
#include <bloomkit/bloomkit.h>

/* An allocator of its own: big arrays stay plain calloc'ed pages (no huge pages), so the stages of
 * twenty doublings that the test touches only in a few places cost only what is touched. */
static void *a_malloc(void *o, size_t n) { (void)o; return malloc(n); }
static void *a_calloc(void *o, size_t c, size_t n) { (void)o; return calloc(c, n); }
static void a_free(void *o, void *p) { (void)o; free(p); }
static const bk_allocator plain = { a_malloc, a_calloc, a_free, NULL };

static uint64_t key_hash(uint64_t set, uint64_t i)
{
    tu_key k = tu_make_key(set, i);
    return bk_hash64(k.b, sizeof k.b, 7);
}

/* Add one key, expanding whenever the newest stage is full. */
static void add_growing(bk_quotient *q, uint64_t h, uint64_t count)
{
    bk_status s = bk_quotient_add_count_hash(q, h, count);
    if (s == BK_EFULL) {
        assert_int_equal(bk_quotient_expand(q), BK_OK);
        s = bk_quotient_add_count_hash(q, h, count);
    }
    assert_int_equal(s, BK_OK);
}

static bk_quotient *make(uint64_t n, double p, uint32_t rbits)
{
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.seed = 7;
    o.allocator = &plain;
    o.remainder_bits = rbits;
    bk_quotient *q;
    assert_int_equal(bk_quotient_new(n, p, &o, &q), BK_OK);
    return q;
}

/* Save, load, save again: the same bytes; the loaded filter answers as the saved one. */
static void round_trip(const bk_quotient *q, uint64_t probes)
{
    bk_quotient *c;
    assert_int_equal(bk_quotient_clone(q, &c), BK_OK);
    bk_filter *h;
    assert_int_equal(bk_filter_wrap(BK_TYPE_QUOTIENT, c, &h), BK_OK);
    void *b1, *b2;
    size_t l1, l2;
    assert_int_equal(bk_filter_save_alloc(h, &b1, &l1), BK_OK);
    bk_filter *g;
    assert_int_equal(bk_filter_load_buffer(b1, l1, 0, &g), BK_OK);
    assert_int_equal(bk_filter_save_alloc(g, &b2, &l2), BK_OK);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    const bk_quotient *lq = bk_filter_get(g, BK_TYPE_QUOTIENT);
    assert_non_null(lq);
    assert_int_equal(bk_quotient_stages(lq), bk_quotient_stages(q));
    assert_int_equal(bk_quotient_total(lq), bk_quotient_total(q));
    for (uint64_t i = 0; i < probes; i++) {
        uint64_t k = key_hash(9, i);
        assert_int_equal(bk_quotient_count_hash(lq, k), bk_quotient_count_hash(q, k));
    }
    bk_filter_buffer_free(b1);
    bk_filter_buffer_free(b2);
    bk_filter_free(g);
    bk_filter_free(h);
}

/* A filter made for 1,000 keys at 1% filled to 2^10 times that, expanding whenever full: 11 stages
 * (1 + log2(N / N0)), every key present, and on 10^6 absent keys an FPR within 1.1 p (the bound is
 * the sum of the stages' bounds at their load limits, at most 1.1 p by construction; the sampling
 * error of 10^6 keys at 1% is 1% of p). */
static void fpr_after_2_10_growth(void **state)
{
    (void)state;
    const uint64_t n0 = 1000, n = n0 << 10;
    const double p = 0.01;
    bk_quotient *q = make(n0, p, 0);
    for (uint64_t i = 0; i < n; i++) add_growing(q, key_hash(1, i), 1);
    assert_int_equal(bk_quotient_stages(q), 11);
    assert_true(bk_quotient_grown_fpr(q, 0) <= 1.1 * p);
    for (uint64_t i = 0; i < n; i++) assert_true(bk_quotient_contains_hash(q, key_hash(1, i)));
    uint64_t fp = 0, absent = 1000000;
    for (uint64_t i = 0; i < absent; i++) fp += bk_quotient_contains_hash(q, key_hash(2, i));
    double fpr = (double)fp / (double)absent;
    bk_stats st;
    bk_quotient_stats(q, &st);
    bk_quotient_geometry g;
    assert_int_equal(bk_quotient_size(n, p, NULL, &g), BK_OK);
    print_message("2^10 growth at p = 1%%: FPR %.5f (bound %.5f, stats %.5f), %.2f bits/key (right-sized %.2f)\n",
                  fpr, bk_quotient_grown_fpr(q, 0), st.fpr_now, (double)bk_quotient_memory(q) * 8 / (double)n,
                  g.bits_per_key);
    assert_true(fpr <= 1.1 * p);
    assert_true(st.fpr_now <= 1.1 * p);
    /* the batch (stage by stage) answers as the one-key calls, key for key: present and absent keys
     * interleaved, a count that is not a whole number of the batch's chunks, with and without res */
    enum { B = 20011 };
    static uint64_t bh[B];
    static uint8_t br[B];
    size_t want = 0, hits = 0, hits2 = 0;
    for (uint64_t i = 0; i < B; i++) bh[i] = i % 3 ? key_hash(2, i) : key_hash(1, i * 7);
    assert_int_equal(bk_quotient_contains_hashes(q, bh, B, br, &hits), BK_OK);
    for (uint64_t i = 0; i < B; i++) {
        bool one = bk_quotient_contains_hash(q, bh[i]);
        assert_int_equal(br[i], one);
        want += one;
    }
    assert_int_equal(hits, want);
    assert_true(hits > B / 3); /* the present third, and some false positives */
    assert_int_equal(bk_quotient_contains_hashes(q, bh, B, NULL, &hits2), BK_OK);
    assert_int_equal(hits2, want);
    assert_int_equal(st.capacity, n);
    assert_int_equal(bk_quotient_total(q), n);
    round_trip(q, 100000);
    bk_quotient_free(q);
}

/* Twenty expansions past the planned room, 64 new keys after each: every key ever added stays
 * present after every expansion (the stages' arrays are large but only touched where keys land). */
static void twenty_doublings_no_false_negatives(void **state)
{
    (void)state;
    const double p = 0.1;
    bk_quotient *q = make(121, p, 0); /* 128 slots, 121 usable */
    uint64_t added = 0;
    for (int d = 0; d <= 20; d++) {
        for (int j = 0; j < 64; j++) add_growing(q, key_hash(1, added++), 1);
        for (uint64_t i = 0; i < added; i++) assert_true(bk_quotient_contains_hash(q, key_hash(1, i)));
        assert_true(bk_quotient_grown_fpr(q, 0) <= 1.1 * p);
        if (d == 8) round_trip(q, 20000);
        if (d < 20) assert_int_equal(bk_quotient_expand(q), BK_OK);
    }
    bk_stats st;
    bk_quotient_stats(q, &st);
    assert_true(st.capacity >= (UINT64_C(121) << 20));
    assert_true(bk_quotient_stages(q) >= 21);
    assert_int_equal(bk_quotient_total(q), added);
    bk_quotient_free(q);
}

/* Counts add over the stages; removal takes the newest stages' occurrences first and changes nothing
 * when fewer are present; clear keeps the stages; merge and enumeration are refused. */
static void counts_removal_refusals(void **state)
{
    (void)state;
    bk_quotient *q = make(1000, 0.01, 0), *plain_q = make(1000, 0.01, 0);
    uint64_t k = key_hash(5, 0);
    assert_int_equal(bk_quotient_add_count_hash(q, k, 3), BK_OK);
    assert_int_equal(bk_quotient_expand(q), BK_OK);
    assert_int_equal(bk_quotient_stages(q), 2);
    assert_int_equal(bk_quotient_add_count_hash(q, k, 2), BK_OK);
    assert_int_equal(bk_quotient_count_hash(q, k), 5);
    assert_int_equal(bk_quotient_remove_count_hash(q, k, 6), BK_ENOTFOUND);
    assert_int_equal(bk_quotient_count_hash(q, k), 5);
    assert_int_equal(bk_quotient_remove_count_hash(q, k, 4), BK_OK);
    assert_int_equal(bk_quotient_count_hash(q, k), 1);
    assert_true(bk_quotient_contains_hash(q, k));
    assert_int_equal(bk_quotient_remove_hash(q, k), BK_OK);
    assert_false(bk_quotient_contains_hash(q, k));
    /* batches agree with single calls */
    enum { M = 3000 };
    static uint64_t h[M], counts[M];
    static uint8_t r[M];
    for (int i = 0; i < M; i++) h[i] = key_hash(6, (uint64_t)i);
    size_t done = 0, hits = 0;
    assert_int_equal(bk_quotient_add_hashes(q, h, 1000, &done), BK_OK); /* fills the new stage */
    assert_int_equal(bk_quotient_expand(q), BK_OK);
    assert_int_equal(bk_quotient_add_hashes(q, h + 1000, M - 1000, &done), BK_OK);
    assert_int_equal(bk_quotient_contains_hashes(q, h, M, r, &hits), BK_OK);
    assert_int_equal(hits, M);
    assert_int_equal(bk_quotient_count_hashes(q, h, M, counts), BK_OK);
    for (int i = 0; i < M; i++) assert_int_equal(counts[i], bk_quotient_count_hash(q, h[i]));
    assert_int_equal(bk_quotient_remove_hashes(q, h, M, &done), BK_OK);
    assert_int_equal(bk_quotient_total(q), 0);
    /* refusals */
    assert_int_equal(bk_quotient_union(plain_q, q), BK_ENOTSUP);
    assert_int_equal(bk_quotient_union(q, plain_q), BK_ENOTSUP);
    assert_int_equal(bk_quotient_compatible(q, plain_q), BK_ENOTSUP);
    assert_int_equal(bk_quotient_foreach(q, NULL, NULL), 0);
    uint32_t stages = bk_quotient_stages(q);
    bk_quotient_clear(q);
    assert_int_equal(bk_quotient_stages(q), stages);
    bk_quotient_free(q);
    bk_quotient_free(plain_q);
}

static int visit(uint64_t fp, uint64_t c, void *ctx)
{
    (void)fp, (void)c, (void)ctx;
    return 1;
}

/* A filter made with planned remainder bits doubles in place first (one table) while its bound stays
 * within p, and adds stages only after; the old calls keep their behaviour. */
static void planned_room_first(void **state)
{
    (void)state;
    bk_quotient_geometry g;
    assert_int_equal(bk_quotient_size(1000, 0.01, NULL, &g), BK_OK);
    bk_quotient *q = make(1000, 0.01, g.remainder_bits + 2);
    assert_int_equal(bk_quotient_add_hash(q, key_hash(1, 0)), BK_OK);
    uint64_t s0 = bk_quotient_slots(q);
    assert_int_equal(bk_quotient_expand(q), BK_OK);
    assert_int_equal(bk_quotient_expand(q), BK_OK);
    assert_int_equal(bk_quotient_stages(q), 1);
    assert_int_equal(bk_quotient_slots(q), 4 * s0);
    assert_int_equal(bk_quotient_grow_keep_fpr(q), BK_EFULL); /* the old call: refuses past the room */
    assert_int_equal(bk_quotient_expand(q), BK_OK);
    assert_int_equal(bk_quotient_stages(q), 2);
    assert_true(bk_quotient_contains_hash(q, key_hash(1, 0)));
    assert_int_equal(bk_quotient_foreach(q, visit, NULL), -1);
    /* a filter bk_quotient_grow took past p: the stages add at most 0.1 p to its first table's bound */
    bk_quotient *s = make(1000, 0.01, 0);
    assert_int_equal(bk_quotient_grow(s), BK_OK);
    double b0 = bk_quotient_grown_fpr(s, 0);
    assert_true(b0 > 0.011);
    for (int i = 0; i < 6; i++) assert_int_equal(bk_quotient_expand(s), BK_OK);
    assert_int_equal(bk_quotient_stages(s), 7);
    assert_true(bk_quotient_grown_fpr(s, 0) <= b0 + 0.001);
    /* so does a small filter whose 128 slots take more keys than it was made for */
    bk_quotient *t = make(30, 0.01, 0);
    b0 = bk_quotient_grown_fpr(t, 0);
    for (int i = 0; i < 6; i++) assert_int_equal(bk_quotient_expand(t), BK_OK);
    assert_true(bk_quotient_grown_fpr(t, 0) <= (b0 > 0.01 ? b0 : 0.01) + 0.001 + 1e-12);
    bk_quotient_free(t);
    assert_int_equal(bk_quotient_expand(NULL), BK_EINVAL);
    bk_quotient_free(s);
    bk_quotient_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fpr_after_2_10_growth),
        cmocka_unit_test(twenty_doublings_no_false_negatives),
        cmocka_unit_test(counts_removal_refusals),
        cmocka_unit_test(planned_room_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
