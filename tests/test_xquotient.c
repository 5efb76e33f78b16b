/* The expanding quotient filter (bk_xquotient): one table that doubles. Filled from 1,000 keys to
 * 2^10 times that at p = 10%, 1%, 0.1% and 0.01%: no false negatives, after every doubling the FPR
 * measured on 10^6 absent keys (fixed seeds) within 1.1 p and the bound within p, at the end at most
 * 1.5 times the bits per key of a filter sized for the keys, no copies; growth much further
 * (2^14, and at 10% far enough that the first keys' fingerprints run out and are copied); the batch
 * answers as the one-key call; counts; bk_xquotient_size states the table bk_xquotient_new makes;
 * arguments refused. */
#include "testutil.h"
#include <bloomkit/bloomkit.h>
#include <math.h>
#include "filters/testing.h"

/* The layout invariants of the table: the quotient filter's. */
static void check_table(const bk_xquotient *f) { assert_int_equal(bk__quotient_check(f), BK_OK); }

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
    /* below 11 bits by the budget, the width starts at 11 and narrows a bit a doubling (to 7 at
     * 10%): no fingerprint runs out before the tenth doubling */
    const uint32_t horizon = 11;
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
        if (want_width < horizon) {
            uint32_t want = horizon - seen > want_width ? horizon - seen : want_width;
            assert_int_equal(bk_xquotient_slot_bits(f), want);
        }
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
    assert_true(bk_xquotient_slots_used(f) <= n); /* no entry has run out and been copied */

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

static void grow_2_10_at_10pct(void **state)
{
    (void)state;
    grow_2_10(0.1, 7);
}

static void grow_2_10_at_001pct(void **state)
{
    (void)state;
    grow_2_10(0.0001, 18);
}

/* Far past 2^10: made for 200 keys at p, filled to 2^k times that. The slots widen as the budget
 * asks, the bound stays within p, the FPR within 1.1 p, no key is lost. At 10% the first keys'
 * fingerprints (11 - 1 bits) run out at the tenth doubling, and the next keys' (narrowing to 7 - 1
 * bits) soon after: they are then copied to both halves at each doubling (more slots in use than
 * keys), and still answer. */
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

/* At 10% a filter saved while its width narrows (after two doublings: 9 bits) and loaded narrows on
 * alike: the rule is read from the saved fields alone, so the two grow to the same bytes. */
static void save_load_narrowing(void **state)
{
    (void)state;
    bk_xquotient *f = make(1000, 0.1);
    uint64_t i = 0;
    while (bk_xquotient_doublings(f) < 2) assert_int_equal(bk_xquotient_add_hash(f, key_hash(10, i++)), BK_OK);
    assert_int_equal(bk_xquotient_slot_bits(f), 9);
    bk_filter *h, *g;
    assert_int_equal(bk_filter_wrap(BK_TYPE_QUOTIENT, f, &h), BK_OK);
    void *b1, *b2;
    size_t l1, l2;
    assert_int_equal(bk_filter_save_alloc(h, &b1, &l1), BK_OK);
    assert_int_equal(bk_filter_load_buffer(b1, l1, 0, &g), BK_OK);
    bk_xquotient *lf = bk_filter_get(g, BK_TYPE_QUOTIENT);
    for (; i < 100000; i++) {
        assert_int_equal(bk_xquotient_add_hash(f, key_hash(10, i)), BK_OK);
        assert_int_equal(bk_xquotient_add_hash(lf, key_hash(10, i)), BK_OK);
        assert_int_equal(bk_xquotient_slot_bits(lf), bk_xquotient_slot_bits(f));
    }
    assert_int_equal(bk_xquotient_doublings(f), 7);
    assert_int_equal(bk_xquotient_slot_bits(f), 7);
    check_table(lf);
    bk_filter_buffer_free(b1);
    assert_int_equal(bk_filter_save_alloc(h, &b1, &l1), BK_OK);
    assert_int_equal(bk_filter_save_alloc(g, &b2, &l2), BK_OK);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    for (uint64_t j = 0; j < 100000; j++) assert_true(bk_xquotient_contains_hash(lf, key_hash(10, j)));
    bk_filter_buffer_free(b1);
    bk_filter_buffer_free(b2);
    bk_filter_free(h);
    bk_filter_free(g);
}

static int visit_none(uint64_t fp, uint64_t count, void *ctx)
{
    (void)fp, (void)count, (void)ctx;
    return 0;
}

/* Saved through the generic handle (body 5) and loaded: the same bytes when saved again, the same
 * answers and fields; both copies keep growing alike; the quotient calls the expanding filter
 * refuses. */
static void save_load(void **state)
{
    (void)state;
    bk_xquotient *f = make(1000, 0.01);
    for (uint64_t i = 0; i < 40000; i++) assert_int_equal(bk_xquotient_add_hash(f, key_hash(6, i)), BK_OK);
    for (int c = 0; c < 5; c++) assert_int_equal(bk_quotient_add_count_hash(f, key_hash(7, 0), 100), BK_OK);
    assert_int_equal(bk_xquotient_doublings(f), 6);
    bk_filter *h;
    assert_int_equal(bk_filter_wrap(BK_TYPE_QUOTIENT, f, &h), BK_OK);
    void *b1, *b2;
    size_t l1, l2;
    assert_int_equal(bk_filter_save_alloc(h, &b1, &l1), BK_OK);
    bk_filter *g;
    assert_int_equal(bk_filter_load_buffer(b1, l1, 0, &g), BK_OK);
    assert_int_equal(bk_filter_save_alloc(g, &b2, &l2), BK_OK);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    bk_xquotient *lf = bk_filter_get(g, BK_TYPE_QUOTIENT);
    assert_true(bk_quotient_expanding(lf));
    assert_false(bk_quotient_expanding(NULL));
    check_table(lf);
    assert_int_equal(bk_xquotient_doublings(lf), 6);
    assert_int_equal(bk_xquotient_keys(lf), 40500);
    assert_int_equal(bk_xquotient_slot_bits(lf), bk_xquotient_slot_bits(f));
    assert_true(bk_xquotient_fpr_bound(lf) == bk_xquotient_fpr_bound(f));
    assert_true(bk_quotient_count_hash(lf, key_hash(7, 0)) >= 500);
    for (uint64_t i = 0; i < 100000; i++) {
        uint64_t k = key_hash(i & 1 ? 6 : 8, i);
        assert_int_equal(bk_xquotient_count_hash(lf, k), bk_xquotient_count_hash(f, k));
        assert_int_equal(bk_filter_contains_hash(g, k), bk_xquotient_contains_hash(f, k));
    }
    bk_stats st;
    bk_filter_stats(g, &st);
    assert_int_equal(st.count, 40500);
    assert_true(st.fpr_now == bk_xquotient_fpr_bound(f));
    /* both grow on alike (adds through the generic handle and through the quotient call) */
    for (uint64_t i = 40000; i < 200000; i++) {
        assert_int_equal(bk_filter_add_hash(g, key_hash(6, i)), BK_OK);
        assert_int_equal(bk_quotient_add_hash(f, key_hash(6, i)), BK_OK);
    }
    assert_int_equal(bk_xquotient_doublings(lf), bk_xquotient_doublings(f));
    for (uint64_t i = 0; i < 200000; i++) assert_true(bk_filter_contains_hash(g, key_hash(6, i)));
    for (uint64_t i = 0; i < 100000; i++)
        assert_int_equal(bk_xquotient_contains_hash(lf, key_hash(9, i)), bk_xquotient_contains_hash(f, key_hash(9, i)));
    /* refused: removal, in-place growth that spends bits, union, enumeration, fingerprints */
    assert_int_equal(bk_quotient_remove_hash(lf, key_hash(6, 1)), BK_ENOTSUP);
    assert_int_equal(bk_filter_remove_hash(g, key_hash(6, 1)), BK_ENOTSUP);
    assert_true(bk_xquotient_contains_hash(lf, key_hash(6, 1)));
    assert_int_equal(bk_quotient_grow(lf), BK_ENOTSUP);
    assert_int_equal(bk_quotient_union(lf, f), BK_ENOTSUP);
    assert_int_equal(bk_filter_merge(g, h), BK_ENOTSUP);
    assert_int_equal(bk_quotient_foreach(lf, visit_none, NULL), -1);
    assert_int_equal(bk_quotient_add_fingerprint(lf, 1, 10, 10, 1), BK_ENOTSUP);
    /* the error rate at the load limit: now and after doublings, within p */
    assert_true(bk_quotient_grown_fpr(lf, 0) >= bk_xquotient_fpr_bound(lf));
    assert_true(bk_quotient_grown_fpr(lf, 0) <= 0.01);
    assert_true(bk_quotient_grown_fpr(lf, 5) <= 0.01);
    /* bk_quotient_expand doubles it in place */
    uint32_t d = bk_xquotient_doublings(lf);
    assert_int_equal(bk_quotient_expand(lf), BK_OK);
    assert_int_equal(bk_xquotient_doublings(lf), d + 1);
    assert_int_equal(bk_quotient_stages(lf), 1);
    check_table(lf);
    /* a clone answers alike */
    bk_quotient *c;
    assert_int_equal(bk_quotient_clone(lf, &c), BK_OK);
    assert_true(bk_quotient_expanding(c));
    for (uint64_t i = 0; i < 20000; i++) assert_true(bk_quotient_contains_hash(c, key_hash(6, i)));
    bk_quotient_clear(c);
    assert_int_equal(bk_xquotient_keys(c), 0);
    assert_true(bk_xquotient_fpr_bound(c) == 0);
    bk_quotient_free(c);
    bk_filter_buffer_free(b1);
    bk_filter_buffer_free(b2);
    bk_filter_free(g);
    bk_filter_free(h);
}

/* A saved body 5 with one field damaged, loaded without the checksum: refused as corrupt. */
static void refused_with(const uint8_t *buf, size_t len, size_t at, const void *v, size_t n)
{
    uint8_t *bad = malloc(len);
    memcpy(bad, buf, len);
    memcpy(bad + at, v, n);
    bk_filter *x = NULL;
    assert_int_equal(bk_filter_load_buffer(bad, len, BK_LOAD_NO_CHECKSUM, &x), BK_ECORRUPT);
    assert_null(x);
    free(bad);
}

static void damaged_files(void **state)
{
    (void)state;
    bk_xquotient *f = make(300, 0.01);
    for (uint64_t i = 0; i < 3000; i++) assert_int_equal(bk_xquotient_add_hash(f, key_hash(6, i)), BK_OK);
    bk_filter *h;
    assert_int_equal(bk_filter_wrap(BK_TYPE_QUOTIENT, f, &h), BK_OK);
    uint8_t *buf;
    size_t len;
    assert_int_equal(bk_filter_save_alloc(h, (void **)&buf, &len), BK_OK);
    const size_t body = 64; /* the container's header, then the body */
    uint32_t u;
    memcpy(&u, buf + body + 4, 4);
    assert_int_equal(u, 5);
    memcpy(&u, buf + body + 8, 4);
    assert_int_equal(u, bk_xquotient_doublings(f));
    u = 33;
    refused_with(buf, len, body + 8, &u, 4); /* more doublings than slots allow */
    u = 1;
    refused_with(buf, len, body + 12, &u, 4); /* the reserved word */
    double d = NAN;
    refused_with(buf, len, body + 16, &d, 8); /* the bound */
    d = -1;
    refused_with(buf, len, body + 16, &d, 8);
    u = 3;
    refused_with(buf, len, body + 32 + 4, &u, 4); /* the table: a body 3 inside */
    u = 2;
    refused_with(buf, len, body + 32 + 4, &u, 4); /* a body 2 (its array does not parse as one) */
    /* the truncated file */
    bk_filter *x = NULL;
    assert_int_not_equal(bk_filter_load_buffer(buf, len - 8, BK_LOAD_NO_CHECKSUM, &x), BK_OK);
    assert_null(x);
    /* random damage past the container's header: refused, or loaded whole and valid, never a crash
     * (queries and a doubling of what loads) */
    uint64_t rng = 91;
    uint8_t *bad = malloc(len);
    int loaded = 0;
    for (int t = 0; t < 2000; t++) {
        memcpy(bad, buf, len);
        for (int k = 0; k < 1 + (int)(tu_splitmix(&rng) % 3); k++) {
            size_t at = body + (size_t)(tu_splitmix(&rng) % (len - body));
            bad[at] ^= (uint8_t)(1u << (tu_splitmix(&rng) % 8));
        }
        if (bk_filter_load_buffer(bad, len, BK_LOAD_NO_CHECKSUM, &x) == BK_OK) {
            loaded++;
            bk_xquotient *lx = bk_filter_get(x, BK_TYPE_QUOTIENT);
            check_table(lx);
            for (int k = 0; k < 64; k++) (void)bk_xquotient_count_hash(lx, tu_splitmix(&rng));
            if (bk_quotient_expanding(lx)) (void)bk_xquotient_expand(lx);
            bk_filter_free(x);
            x = NULL;
        }
    }
    print_message("damaged body 5: %d of 2000 loaded (valid)\n", loaded);
    free(bad);
    /* with the checksum: any change refused */
    buf[len / 2] ^= 1;
    assert_int_not_equal(bk_filter_load_buffer(buf, len, 0, &x), BK_OK);
    bk_filter_buffer_free(buf);
    bk_filter_free(h);
}

/* bk_xquotient_size states the table bk_xquotient_new makes, for a grid of capacities, error rates and
 * options (the default load limit, 0.5, 1, and slots rounded to a power of two): the same slots, slot
 * width and bytes, or the same refusal; its bound at the capacity is within p and, filled to the
 * capacity, the filter's own bound. */
static void size_is_new(void **state)
{
    (void)state;
    static const uint64_t ns[] = { 1, 2, 100, 1000, 12345, 65536, 1000003, 10000000 };
    static const double ps[] = { 0.5, 0.1, 0.01, 0.001, 1e-4, 1e-6, 1e-8, 1e-9, 1e-12 };
    static const double loads[] = { 0, 0.5, 1.0, 0 };
    unsigned made = 0, refused = 0;
    for (size_t v = 0; v < sizeof loads / sizeof loads[0]; v++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            for (size_t j = 0; j < sizeof ps / sizeof ps[0]; j++) {
                bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
                o.seed = 7;
                o.max_load = loads[v];
                o.power_of_two_slots = v == 3;
                bk_quotient_geometry g;
                bk_xquotient *f = NULL;
                bk_status s = bk_xquotient_size(ns[i], ps[j], &o, &g);
                assert_int_equal(bk_xquotient_size(ns[i], ps[j], &o, NULL), s);
                assert_int_equal(bk_xquotient_new(ns[i], ps[j], &o, &f), s);
                if (s != BK_OK) {
                    assert_int_equal(s, BK_ETOOBIG);
                    assert_null(f);
                    refused++;
                    continue;
                }
                made++;
                assert_int_equal(bk_xquotient_slots(f), g.slots);
                assert_int_equal(bk_xquotient_slot_bits(f), g.remainder_bits);
                assert_int_equal(bk_xquotient_memory(f), g.bytes);
                size_t nwords;
                bk__quotient_words(f, &nwords);
                assert_int_equal((uint64_t)nwords * 8, g.bytes);
                assert_true(g.physical_slots >= g.slots + 64 && g.physical_slots % 128 == 0);
                if (v == 3) assert_int_equal(g.slots & (g.slots - 1), 0);
                assert_true(g.fpr > 0 && g.fpr <= ps[j]);
                assert_true(g.bits_per_key == (double)g.bytes * 8.0 / (double)ns[i]);
                if (ns[i] <= 12345) {
                    for (uint64_t k = 0; k < ns[i]; k++) assert_int_equal(bk_xquotient_add_hash(f, key_hash(9, k)), BK_OK);
                    assert_int_equal(bk_xquotient_doublings(f), 0);
                    assert_true(fabs(bk_xquotient_fpr_bound(f) - g.fpr) <= 1e-9 * g.fpr);
                }
                bk_xquotient_free(f);
            }
    print_message("bk_xquotient_size: %u made as stated, %u refused by both\n", made, refused);
    assert_true(made > 200 && refused > 0);
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.remainder_bits = 9;
    bk_quotient_geometry g;
    assert_int_equal(bk_xquotient_size(1000, 0.01, &o, &g), BK_EINVAL);
    assert_int_equal(bk_xquotient_size(0, 0.01, NULL, &g), BK_EINVAL);
    assert_int_equal(bk_xquotient_size(1000, 1, NULL, &g), BK_EINVAL);
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
        cmocka_unit_test(grow_2_10_at_10pct), cmocka_unit_test(grow_2_10_at_001pct),
        cmocka_unit_test(grow_2_14_at_1pct),  cmocka_unit_test(grow_2_14_at_10pct),
        cmocka_unit_test(counts_and_expand),  cmocka_unit_test(save_load),
        cmocka_unit_test(save_load_narrowing), cmocka_unit_test(size_is_new),
        cmocka_unit_test(damaged_files),      cmocka_unit_test(arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
