/* Counting Bloom filter: deletion without false negatives, sticky saturation, errors, serialization. */
#include "testutil.h"
#include "filters/internal.h"
#include <bloomkit/bloomkit.h>

static bk_counting *make(uint64_t n, double p, uint32_t bits, uint64_t seed)
{
    bk_counting_options o = { .counter_bits = bits, .seed = seed };
    bk_counting *f = NULL;
    assert_int_equal(bk_counting_new(n, p, &o, &f), BK_OK);
    assert_non_null(f);
    return f;
}

static bk_counting *make_mk(uint64_t m, uint32_t k, uint32_t bits, uint64_t seed)
{
    bk_counting_options o = { .counter_bits = bits, .seed = seed };
    bk_counting *f = NULL;
    assert_int_equal(bk_counting_new_mk(m, k, 0, &o, &f), BK_OK);
    return f;
}

static bool has(const bk_counting *f, uint64_t set, uint64_t i)
{
    tu_key k = tu_make_key(set, i);
    return bk_counting_contains(f, k.b, sizeof k.b);
}
static bk_status add(bk_counting *f, uint64_t set, uint64_t i)
{
    tu_key k = tu_make_key(set, i);
    return bk_counting_add(f, k.b, sizeof k.b);
}
static bk_status del(bk_counting *f, uint64_t set, uint64_t i)
{
    tu_key k = tu_make_key(set, i);
    return bk_counting_remove(f, k.b, sizeof k.b);
}

static bool all_zero(const bk_counting *f)
{
    size_t len;
    const uint8_t *d = bk_counting_data(f, &len);
    for (size_t i = 0; i < len; i++)
        if (d[i]) return false;
    return true;
}

/* 1,000,000 keys, adds and removes in a random interleaving: a key added and not removed is always
 * found, checked for every such key at the end and for a random one after every operation. */
static void interleaved_no_false_negatives(void **state)
{
    (void)state;
    enum { N = 1000000 };
    for (uint32_t bits = 4; bits <= 8; bits += 4) {
        bk_counting *f = make(N, 0.01, bits, 3);
        uint8_t *in = calloc(N, 1);
        uint64_t *live = malloc(N * sizeof *live); /* keys currently in, unordered */
        uint64_t nlive = 0, next = 0, rng = 77 + bits, removed = 0;
        while (next < N) {
            uint64_t r = tu_splitmix(&rng);
            if (nlive && r % 3 == 0) {
                /* remove a random live key */
                uint64_t at = (r >> 8) % nlive, key = live[at];
                live[at] = live[--nlive];
                assert_int_equal(del(f, 1, key), BK_OK);
                in[key] = 0;
                removed++;
            } else {
                assert_int_equal(add(f, 1, next), BK_OK);
                in[next] = 1;
                live[nlive++] = next++;
            }
            if (nlive && !has(f, 1, live[(r >> 32) % nlive])) fail_msg("false negative during the run");
        }
        for (uint64_t i = 0; i < N; i++)
            if (in[i] && !has(f, 1, i)) fail_msg("false negative: %u-bit key %llu", bits, (unsigned long long)i);
        assert_int_equal(bk_counting_count(f), N - removed);
        bk_stats st;
        bk_counting_stats(f, &st);
        assert_int_equal(st.saturated_cells, 0);
        free(in);
        free(live);
        bk_counting_free(f);
    }
}

/* Tiny filters and many keys, so counters saturate on purpose; removing most keys afterwards must not
 * make any remaining key disappear (a wrapping or non-sticky counter would). */
static void saturation_is_sticky(void **state)
{
    (void)state;
    for (uint32_t bits = 4; bits <= 8; bits += 4) {
        /* mean counter value k n / m: 24 for 4-bit (nearly all saturate), 400 for 8-bit (all saturate) */
        const uint64_t m = bits == 4 ? 5000 : 300, n = 40000;
        bk_counting *f = make_mk(m, 3, bits, 5);
        for (uint64_t i = 0; i < n; i++) assert_int_equal(add(f, 2, i), BK_OK);
        bk_stats st;
        bk_counting_stats(f, &st);
        print_message("%u-bit: %llu of %llu counters saturated\n", bits, (unsigned long long)st.saturated_cells,
                      (unsigned long long)m);
        assert_true(st.saturated_cells > 0);
        assert_true(st.saturated);
        uint32_t max = (1u << bits) - 1;
        uint64_t at_max = 0;
        for (uint64_t i = 0; i < m; i++) at_max += bk_counting_counter(f, i) == max;
        assert_int_equal(at_max, st.saturated_cells);
        /* remove 90% of the keys; the remaining 10% must all be found */
        for (uint64_t i = 0; i < n; i++)
            if (i % 10) assert_int_equal(del(f, 2, i), BK_OK);
        for (uint64_t i = 0; i < n; i += 10)
            if (!has(f, 2, i)) fail_msg("false negative after saturation: %u-bit key %llu", bits, (unsigned long long)i);
        /* saturated counters stayed saturated */
        uint64_t still = 0;
        for (uint64_t i = 0; i < m; i++) still += bk_counting_counter(f, i) == max;
        assert_true(still >= at_max);
        bk_counting_free(f);
    }
    /* a partly saturated 4-bit filter: mean 7.5, some counters reach 15, many do not */
    bk_counting *f = make_mk(20000, 3, 4, 6);
    for (uint64_t i = 0; i < 50000; i++) add(f, 3, i);
    bk_stats st;
    bk_counting_stats(f, &st);
    assert_true(st.saturated_cells > 0 && st.saturated_cells < 20000);
    for (uint64_t i = 10000; i < 50000; i++) assert_int_equal(del(f, 3, i), BK_OK);
    for (uint64_t i = 0; i < 10000; i++)
        if (!has(f, 3, i)) fail_msg("false negative after partial saturation: key %llu", (unsigned long long)i);
    bk_counting_free(f);
}

/* Adding then removing the same keys, with no saturation, leaves every counter at zero. */
static void add_then_remove_is_all_zero(void **state)
{
    (void)state;
    for (uint32_t bits = 4; bits <= 8; bits += 4) {
        bk_counting *f = make(100000, 0.01, bits, 8);
        for (uint64_t i = 0; i < 100000; i++) add(f, 4, i);
        /* some keys twice: counters count multiplicity */
        for (uint64_t i = 0; i < 1000; i++) add(f, 4, i);
        bk_stats st;
        bk_counting_stats(f, &st);
        assert_int_equal(st.saturated_cells, 0);
        assert_false(all_zero(f));
        for (uint64_t i = 0; i < 1000; i++) assert_int_equal(del(f, 4, i), BK_OK);
        for (uint64_t i = 0; i < 100000; i++) assert_int_equal(del(f, 4, i), BK_OK);
        assert_true(all_zero(f));
        assert_int_equal(bk_counting_count(f), 0);
        bk_counting_free(f);
    }
}

/* Removing a certainly absent key: BK_ENOTFOUND and nothing changes. */
static void remove_absent_changes_nothing(void **state)
{
    (void)state;
    bk_counting *f = make(10000, 0.01, 4, 9);
    for (uint64_t i = 0; i < 10000; i++) add(f, 5, i);
    size_t len;
    const uint8_t *d = bk_counting_data(f, &len);
    uint8_t *before = malloc(len);
    memcpy(before, d, len);
    uint64_t notfound = 0;
    for (uint64_t i = 0; i < 10000; i++) {
        if (has(f, 6, i)) continue; /* a false positive: its remove would be the documented misuse */
        assert_int_equal(del(f, 6, i), BK_ENOTFOUND);
        notfound++;
    }
    assert_true(notfound > 9800);
    assert_memory_equal(before, bk_counting_data(f, NULL), len);
    assert_int_equal(bk_counting_count(f), 10000);
    /* the empty filter: everything is absent */
    bk_counting *e = make(100, 0.01, 8, 9);
    assert_int_equal(del(e, 5, 1), BK_ENOTFOUND);
    assert_int_equal(bk_counting_remove_hash(e, 12345), BK_ENOTFOUND);
    assert_int_equal(bk_counting_remove_hash_atomic(e, 12345), BK_ENOTFOUND);
    assert_true(all_zero(e));
    free(before);
    bk_counting_free(e);
    bk_counting_free(f);
}

/* The same (m, k, seed) answers contains exactly like the classic filter holding the same keys, and
 * the FPR matches the classic filter's target. */
static void same_answers_as_classic(void **state)
{
    (void)state;
    enum { N = 200000 };
    bk_counting *f = make(N, 0.01, 4, 10);
    bk_bloom_options bo = { .layout = BK_LAYOUT_STANDARD, .seed = 10 };
    bk_bloom *b = NULL;
    assert_int_equal(bk_bloom_new_mk(bk_counting_counters(f), bk_counting_k(f), N, &bo, &b), BK_OK);
    for (uint64_t i = 0; i < N; i++) {
        tu_key k = tu_make_key(7, i);
        bk_counting_add(f, k.b, sizeof k.b);
        bk_bloom_add(b, k.b, sizeof k.b);
    }
    uint64_t fp = 0;
    for (uint64_t i = 0; i < 1000000; i++) {
        tu_key k = tu_make_key(8, i);
        bool c = bk_counting_contains(f, k.b, sizeof k.b);
        assert_int_equal(c, bk_bloom_contains(b, k.b, sizeof k.b));
        fp += c;
    }
    double fpr = (double)fp / 1e6;
    bk_stats st;
    bk_counting_stats(f, &st);
    print_message("counting FPR measured %.5f, predicted now %.5f, target 0.01\n", fpr, st.fpr_now);
    TU_ASSERT_WITHIN(fpr, 0.01, 0.15);
    TU_ASSERT_WITHIN(st.fpr_now, fpr, 0.15);
    TU_ASSERT_WITHIN(st.est_cardinality, N, 0.05);
    assert_false(st.saturated);
    assert_int_equal(st.type, BK_TYPE_COUNTING);
    assert_int_equal(st.count, N);
    bk_bloom_free(b);
    bk_counting_free(f);
}

static void sizing(void **state)
{
    (void)state;
    bk_geometry g, c;
    uint64_t bytes4, bytes8;
    assert_int_equal(bk_bloom_size(1000000, 0.01, &g), BK_OK);
    assert_int_equal(bk_counting_size(1000000, 0.01, 0, &c, &bytes4), BK_OK);
    assert_int_equal(c.m, g.m);
    assert_int_equal(c.k, g.k);
    assert_true(c.fpr == g.fpr);
    assert_int_equal(bytes4, (g.m * 4 + 511) / 512 * 64);
    assert_int_equal(bk_counting_size(1000000, 0.01, 8, NULL, &bytes8), BK_OK);
    assert_int_equal(bytes8, (g.m * 8 + 511) / 512 * 64);
    TU_ASSERT_WITHIN(c.bits_per_key, g.bits_per_key * 4, 1e-9);
    bk_counting *f = make(1000000, 0.01, 8, 0);
    bk_stats st;
    bk_counting_stats(f, &st);
    assert_int_equal(st.memory_bytes, bytes8);
    assert_int_equal(bk_counting_counter_bits(f), 8);
    bk_counting_free(f);
    assert_int_equal(bk_counting_size(0, 0.01, 4, &c, NULL), BK_EINVAL);
    assert_int_equal(bk_counting_size(10, 1.5, 4, &c, NULL), BK_EINVAL);
    assert_int_equal(bk_counting_size(10, 0.01, 3, &c, NULL), BK_EINVAL);
    assert_int_equal(bk_counting_size(UINT64_C(1) << 40, 1e-9, 8, &c, NULL), BK_ETOOBIG);
}

static void bad_input(void **state)
{
    (void)state;
    bk_counting *f = (bk_counting *)(uintptr_t)1;
    bk_counting_options o = { .counter_bits = 4, .seed = 0 };
    assert_int_equal(bk_counting_new(0, 0.01, NULL, &f), BK_EINVAL);
    assert_null(f);
    f = (bk_counting *)(uintptr_t)1;
    assert_int_equal(bk_counting_new(100, 0.0, NULL, &f), BK_EINVAL);
    assert_null(f);
    assert_int_equal(bk_counting_new(100, 1.0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_counting_new(100, NAN, NULL, &f), BK_EINVAL);
    o.counter_bits = 16;
    assert_int_equal(bk_counting_new(100, 0.01, &o, &f), BK_EINVAL);
    assert_null(f);
    assert_int_equal(bk_counting_new(100, 0.01, NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_counting_new(UINT64_C(1) << 40, 1e-9, NULL, &f), BK_ETOOBIG);
    assert_null(f);
    assert_int_equal(bk_counting_new_mk(0, 3, 0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_counting_new_mk(100, 0, 0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_counting_new_mk(100, BK_MAX_K + 1, 0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_counting_new_mk(UINT64_C(1) << 42, 3, 0, NULL, &f), BK_ETOOBIG);
    assert_null(f);
    assert_int_equal(bk_counting_add(NULL, "x", 1), BK_EINVAL);
    assert_int_equal(bk_counting_remove(NULL, "x", 1), BK_EINVAL);
    assert_int_equal(bk_counting_add_hash(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_counting_remove_hash(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_counting_add_atomic(NULL, "x", 1), BK_EINVAL);
    assert_int_equal(bk_counting_remove_atomic(NULL, "x", 1), BK_EINVAL);
    f = make(100, 0.01, 4, 0);
    assert_int_equal(bk_counting_add(f, NULL, 1), BK_EINVAL);
    assert_int_equal(bk_counting_remove(f, NULL, 1), BK_EINVAL);
    assert_true(all_zero(f));
    assert_int_equal(bk_counting_count(f), 0);
    /* the empty key is a key */
    assert_int_equal(bk_counting_add(f, NULL, 0), BK_OK);
    assert_true(bk_counting_contains(f, "", 0));
    assert_int_equal(bk_counting_remove(f, "", 0), BK_OK);
    assert_true(all_zero(f));
    assert_int_equal(bk_counting_add_many(f, NULL, NULL, 3), BK_EINVAL);
    assert_int_equal(bk_counting_add_hashes(f, NULL, 3), BK_EINVAL);
    bk_counting *copy = (bk_counting *)(uintptr_t)1;
    assert_int_equal(bk_counting_clone(NULL, &copy), BK_EINVAL);
    assert_null(copy);
    bk_counting_free(f);
    bk_counting_free(NULL);
}

/* Pre-hashed, batch and atomic forms give the same counters as the plain bytes form. */
static void forms_agree(void **state)
{
    (void)state;
    enum { M = 20000 };
    bk_counting *a = make(M, 0.01, 4, 12), *b = make(M, 0.01, 4, 12), *c = make(M, 0.01, 4, 12),
                *d = make(M, 0.01, 4, 12);
    static tu_key keys[M];
    static const void *ptrs[M];
    static size_t lens[M];
    static uint64_t hs[M];
    for (int i = 0; i < M; i++) {
        keys[i] = tu_make_key(9, (uint64_t)i);
        ptrs[i] = keys[i].b;
        lens[i] = sizeof keys[i].b;
        hs[i] = bk_hash64(ptrs[i], lens[i], 12);
        assert_int_equal(bk_counting_add(a, ptrs[i], lens[i]), BK_OK);
        assert_int_equal(bk_counting_add_hash_atomic(c, hs[i]), BK_OK);
    }
    assert_int_equal(bk_counting_add_many(b, ptrs, lens, M), BK_OK);
    assert_int_equal(bk_counting_add_hashes(d, hs, M), BK_OK);
    size_t len;
    const uint8_t *da = bk_counting_data(a, &len);
    assert_memory_equal(da, bk_counting_data(b, NULL), len);
    assert_memory_equal(da, bk_counting_data(c, NULL), len);
    assert_memory_equal(da, bk_counting_data(d, NULL), len);
    assert_int_equal(bk_counting_count(c), bk_counting_count(a));
    static uint8_t res[M];
    assert_int_equal(TU_HITS(bk_counting_contains_many, b, ptrs, lens, M, res), M);
    assert_int_equal(TU_HITS(bk_counting_contains_hashes, b, hs, M, NULL), M);
    for (int i = 0; i < M; i++) {
        assert_int_equal(bk_counting_remove(a, ptrs[i], lens[i]), BK_OK);
        assert_int_equal(bk_counting_remove_hash_atomic(c, hs[i]), BK_OK);
    }
    assert_memory_equal(bk_counting_data(a, NULL), bk_counting_data(c, NULL), len);
    assert_true(all_zero(c));
    bk_counting_free(a);
    bk_counting_free(b);
    bk_counting_free(c);
    bk_counting_free(d);
}

static void union_saturates_and_checks_geometry(void **state)
{
    (void)state;
    for (uint32_t bits = 4; bits <= 8; bits += 4) {
        bk_counting *a = make(50000, 0.01, bits, 13), *b = make(50000, 0.01, bits, 13), *all = make(50000, 0.01, bits, 13);
        for (uint64_t i = 0; i < 50000; i++) {
            add(i % 3 ? a : b, 10, i);
            add(all, 10, i);
        }
        assert_int_equal(bk_counting_union(a, b), BK_OK);
        size_t len;
        const uint8_t *da = bk_counting_data(a, &len);
        assert_memory_equal(da, bk_counting_data(all, NULL), len);
        assert_int_equal(bk_counting_count(a), 50000);
        /* removing a key from the union works like from the whole */
        for (uint64_t i = 0; i < 50000; i += 2) del(a, 10, i);
        for (uint64_t i = 1; i < 50000; i += 2) assert_true(has(a, 10, i));
        bk_counting_free(a);
        bk_counting_free(b);
        bk_counting_free(all);
    }
    /* saturation: a counter at 10 plus a counter at 10 is 15, not 20 mod 16 */
    bk_counting *x = make_mk(64, 1, 4, 14), *y = make_mk(64, 1, 4, 14);
    for (int i = 0; i < 10; i++) {
        add(x, 11, 0);
        add(y, 11, 0);
    }
    assert_int_equal(bk_counting_union(x, y), BK_OK);
    uint32_t top = 0;
    for (uint64_t i = 0; i < 64; i++) top = bk_counting_counter(x, i) > top ? bk_counting_counter(x, i) : top;
    assert_int_equal(top, 15);
    bk_counting_free(x);
    bk_counting_free(y);
    /* incompatible: seed, width, m, k differ -> BK_EINCOMPAT, dst unchanged */
    bk_counting *d = make(1000, 0.01, 4, 1);
    add(d, 12, 1);
    size_t len;
    const uint8_t *dd = bk_counting_data(d, &len);
    uint8_t *before = malloc(len);
    memcpy(before, dd, len);
    bk_counting *o1 = make(1000, 0.01, 4, 2), *o2 = make(1000, 0.01, 8, 1), *o3 = make(2000, 0.01, 4, 1);
    add(o1, 12, 2);
    assert_int_equal(bk_counting_union(d, o1), BK_EINCOMPAT);
    assert_int_equal(bk_counting_union(d, o2), BK_EINCOMPAT);
    assert_int_equal(bk_counting_union(d, o3), BK_EINCOMPAT);
    assert_int_equal(bk_counting_compatible(d, NULL), BK_EINVAL);
    assert_memory_equal(before, bk_counting_data(d, NULL), len);
    assert_int_equal(bk_counting_count(d), 1);
    free(before);
    bk_counting_free(d);
    bk_counting_free(o1);
    bk_counting_free(o2);
    bk_counting_free(o3);
}

/* ---- serialization through the vtable ---- */

static uint8_t *encode(const bk_vtable *vt, const void *f, size_t *len)
{
    tu_membuf s = { 0 };
    bk_writer w = { tu_mem_sink, &s, 0 };
    assert_int_equal(vt->encode(f, &w), BK_OK);
    assert_int_equal(w.offset, s.len);
    /* copy to a 64-byte aligned buffer, as the container provides */
    uint8_t *al = aligned_alloc(64, (s.len + 63) / 64 * 64 + 64);
    memcpy(al, s.buf, s.len);
    free(s.buf);
    *len = s.len;
    return al;
}

static bk_status decode(const bk_vtable *vt, const uint8_t *buf, size_t len, uint64_t seed, bool borrow, void **out)
{
    bk_reader r = { buf, len, 0, borrow, false, seed, NULL, NULL };
    bk_status s = vt->decode(&r, out);
    if (s == BK_OK) assert_int_equal(r.off, len);
    return s;
}

static void serialization_round_trip(void **state)
{
    (void)state;
    const bk_vtable *vt = &bk__counting_vtable;
    assert_int_equal(vt->type, BK_TYPE_COUNTING);
    assert_non_null(vt->remove_hash);
    for (uint32_t bits = 4; bits <= 8; bits += 4) {
        bk_counting *f = make(5000, 0.02, bits, 21);
        for (uint64_t i = 0; i < 4000; i++) add(f, 13, i);
        for (uint64_t i = 0; i < 40; i++) add(f, 13, 7); /* a saturated 4-bit counter or more */
        size_t len;
        uint8_t *buf = encode(vt, f, &len);
        assert_int_equal(len % 64, 0);
        for (int borrow = 0; borrow <= 1; borrow++) {
            void *g = NULL;
            assert_int_equal(decode(vt, buf, len, 21, borrow, &g), BK_OK);
            size_t l1, l2;
            const uint8_t *d1 = bk_counting_data(f, &l1), *d2 = bk_counting_data(g, &l2);
            assert_int_equal(l1, l2);
            assert_memory_equal(d1, d2, l1);
            if (borrow) assert_ptr_equal(d2, buf + 64);
            assert_int_equal(bk_counting_count(g), bk_counting_count(f));
            assert_int_equal(bk_counting_k(g), bk_counting_k(f));
            assert_int_equal(bk_counting_counter_bits(g), bits);
            assert_int_equal(bk_counting_seed(g), 21);
            assert_int_equal(bk_counting_compatible(f, g), BK_OK);
            for (uint64_t i = 0; i < 4000; i++) assert_true(has(g, 13, i));
            size_t len2;
            uint8_t *buf2 = encode(vt, g, &len2);
            assert_int_equal(len2, len);
            assert_memory_equal(buf, buf2, len);
            free(buf2);
            vt->destroy(g);
        }
        /* every truncation is refused */
        for (size_t cut = 0; cut < len; cut += (cut < 80 ? 1 : 97)) {
            void *g = (void *)1;
            bk_status s = decode(vt, buf, cut, 21, false, &g);
            assert_true(s == BK_ETRUNCATED || s == BK_ECORRUPT);
            assert_null(g);
        }
        /* bad fields: each refused, nothing made */
        uint8_t *bad = aligned_alloc(64, len + 64);
        uint64_t m = bk_counting_counters(f);
        double two = 2.0, nan = NAN;
        uint64_t two_u, nan_u;
        memcpy(&two_u, &two, 8);
        memcpy(&nan_u, &nan, 8);
        const struct { size_t off, width; uint64_t val; bk_status want; } edits[] = {
            { 0, 4, 5, BK_ECORRUPT },         { 0, 4, 16, BK_ECORRUPT },     { 4, 4, 0, BK_ECORRUPT },
            { 4, 4, 65, BK_ECORRUPT },        { 8, 8, 0, BK_ECORRUPT },      { 8, 8, UINT64_MAX, BK_ECORRUPT },
            { 8, 8, m * 4, BK_ETRUNCATED },   { 16, 8, 0, BK_ECORRUPT },     { 32, 8, two_u, BK_ECORRUPT },
            { 32, 8, nan_u, BK_ECORRUPT },     { 40, 1, 1, BK_ECORRUPT },     { 63, 1, 0x80, BK_ECORRUPT },
        };
        for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
            memcpy(bad, buf, len);
            for (size_t j = 0; j < edits[e].width; j++) bad[edits[e].off + j] = (uint8_t)(edits[e].val >> (8 * j));
            void *g = (void *)1;
            bk_status s = decode(vt, bad, len, 21, false, &g);
            if (s != edits[e].want) fail_msg("edit %zu: %s", e, bk_strerror(s));
            assert_null(g);
        }
        /* a set counter past m */
        memcpy(bad, buf, len);
        bad[len - 1] = 0x80;
        void *g = (void *)1;
        assert_int_equal(decode(vt, bad, len, 21, false, &g), BK_ECORRUPT);
        assert_null(g);
        free(bad);
        free(buf);
        bk_counting_free(f);
    }
}

/* Through the generic handle: remove works on a counting filter, and removing from a filter of
 * another type is BK_ENOTSUP with nothing changed. */
static void generic_remove(void **state)
{
    (void)state;
    bk_counting *c = make(1000, 0.01, 4, 32);
    bk_filter *h = NULL;
    assert_int_equal(bk_filter_wrap(BK_TYPE_COUNTING, c, &h), BK_OK);
    tu_key k = tu_make_key(15, 1);
    assert_int_equal(bk_filter_add(h, k.b, sizeof k.b), BK_OK);
    assert_true(bk_filter_contains(h, k.b, sizeof k.b));
    assert_int_equal(bk_filter_remove(h, k.b, sizeof k.b), BK_OK);
    assert_false(bk_filter_contains(h, k.b, sizeof k.b));
    assert_int_equal(bk_filter_remove(h, k.b, sizeof k.b), BK_ENOTFOUND);
    assert_true(all_zero(c));
    bk_filter_free(h);

    bk_bloom *b = NULL;
    assert_int_equal(bk_bloom_new(1000, 0.01, NULL, &b), BK_OK);
    assert_int_equal(bk_filter_wrap(BK_TYPE_BLOOM, b, &h), BK_OK);
    assert_int_equal(bk_filter_add(h, k.b, sizeof k.b), BK_OK);
    size_t len;
    const uint8_t *d = bk_bloom_data(b, &len);
    uint8_t *before = malloc(len);
    memcpy(before, d, len);
    assert_int_equal(bk_filter_remove(h, k.b, sizeof k.b), BK_ENOTSUP);
    assert_memory_equal(before, bk_bloom_data(b, NULL), len);
    assert_null(bk_filter_get(h, BK_TYPE_COUNTING));
    free(before);
    bk_filter_free(h);
}

static void clone_and_clear(void **state)
{
    (void)state;
    bk_counting *f = make(1000, 0.01, 8, 31), *c = NULL;
    for (uint64_t i = 0; i < 1000; i++) add(f, 14, i);
    assert_int_equal(bk_counting_clone(f, &c), BK_OK);
    size_t len;
    const uint8_t *df = bk_counting_data(f, &len);
    assert_memory_equal(df, bk_counting_data(c, NULL), len);
    assert_int_equal(bk_counting_count(c), 1000);
    bk_counting_clear(f);
    assert_true(all_zero(f));
    assert_int_equal(bk_counting_count(f), 0);
    assert_true(has(c, 14, 5));
    bk_counting_free(f);
    bk_counting_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(interleaved_no_false_negatives),
        cmocka_unit_test(saturation_is_sticky),
        cmocka_unit_test(add_then_remove_is_all_zero),
        cmocka_unit_test(remove_absent_changes_nothing),
        cmocka_unit_test(same_answers_as_classic),
        cmocka_unit_test(sizing),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(forms_agree),
        cmocka_unit_test(union_saturates_and_checks_geometry),
        cmocka_unit_test(serialization_round_trip),
        cmocka_unit_test(generic_remove),
        cmocka_unit_test(clone_and_clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
