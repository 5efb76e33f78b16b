/* Scalable Bloom filter: growth without false negatives, the compound FPR bound, limits, errors,
 * serialization. */
#include "testutil.h"
#include "filters/internal.h"
#include "core/blocked1024.h"
#include <bloomkit/bloomkit.h>

/* Every test runs twice: with the default blocked sub-filters and with classic ones (BK_SCALABLE_CLASSIC);
 * the setup functions below set g_kind. */
static uint32_t g_kind;
static bool classic(void) { return g_kind == BK_SCALABLE_CLASSIC; }
static int use_blocked(void **state)
{
    (void)state;
    g_kind = 0;
    return 0;
}
static int use_classic(void **state)
{
    (void)state;
    g_kind = BK_SCALABLE_CLASSIC;
    return 0;
}

/* The geometry a sub-filter of this kind gets for (n, p). */
static void kind_size(uint64_t n, double p, bk_geometry *g)
{
    assert_int_equal(classic() ? bk_bloom_size(n, p, g) : bk__blocked1024_size(n, p, g), BK_OK);
}

/* How far below its target p_i a sub-filter's exact error may fall: a classic filter's m is chosen to
 * the bit, so only the rounding of k moves it; a blocked one grows by whole 1024-bit blocks and its
 * small sub-filters are a few blocks, so the step can be a quarter of p_i. */
static double error_tolerance(void) { return classic() ? 0.1 : 0.25; }

/* The measured FPR of a chain against its bound: 3 sigma of sampling noise, and for a blocked chain 5%
 * more, since its first sub-filters are one or two blocks whose realised fill, hence FPR, varies from
 * seed to seed around the expectation the bound is made of. */
static bool within_bound(double fpr, double bound, double trials)
{
    return fpr <= bound * (classic() ? 1.0 : 1.05) + 3 * sqrt(bound / trials);
}

/* growth 0: a non-scaling filter (BK_SCALABLE_NONSCALING) */
static bk_scalable *make(uint64_t cap, double p, uint32_t growth, double r, uint64_t max_bytes, uint64_t seed)
{
    bk_scalable_options o = { .growth = growth ? growth : 2, .tightening = r, .max_bytes = max_bytes, .seed = seed, .flags = (growth ? 0 : BK_SCALABLE_NONSCALING) | g_kind };
    bk_scalable *f = NULL;
    assert_int_equal(bk_scalable_new(cap, p, &o, &f), BK_OK);
    assert_non_null(f);
    return f;
}

static bk_status add(bk_scalable *f, uint64_t set, uint64_t i)
{
    tu_key k = tu_make_key(set, i);
    return bk_scalable_add_if_absent(f, k.b, sizeof k.b);
}
static uint64_t key_hash(uint64_t set, uint64_t i)
{
    tu_key k = tu_make_key(set, i);
    return bk_hash64(k.b, sizeof k.b, set);
}
static bool has(const bk_scalable *f, uint64_t set, uint64_t i)
{
    tu_key k = tu_make_key(set, i);
    return bk_scalable_contains(f, k.b, sizeof k.b);
}

/* Sub-filters needed for n keys: the smallest L with cap * (1 + s + ... + s^(L-1)) >= n. */
static uint32_t layers_for(uint64_t cap, uint32_t s, uint64_t n)
{
    uint32_t l = 0;
    uint64_t held = 0, c = cap;
    do {
        held += c;
        c *= s;
        l++;
    } while (held < n);
    return l;
}

static double measure_fpr(const bk_scalable *f, uint64_t trials)
{
    uint64_t fp = 0;
    for (uint64_t i = 0; i < trials; i++) fp += has(f, 99, i);
    return (double)fp / (double)trials;
}

/* Start at 1,000 keys, insert 1,000,000: no false negatives, FPR on 1,000,000 absent keys at or below
 * p, and the number of sub-filters given by the formula. */
static void grows_to_a_million(void **state)
{
    (void)state;
    enum { N = 1000000 };
    bk_scalable *f = make(1000, 0.01, 2, BK_SCALABLE_DEFAULT_TIGHTENING, 0, 1);
    uint64_t added = 0;
    for (uint64_t i = 0; i < N; i++) {
        bk_status s = add(f, 1, i);
        assert_true(s == BK_OK || s == BK_EEXISTS);
        added += s == BK_OK;
    }
    for (uint64_t i = 0; i < N; i++)
        if (!has(f, 1, i)) fail_msg("false negative: key %llu", (unsigned long long)i);
    assert_int_equal(bk_scalable_count(f), added);
    /* keys not added were false positives of the chain as it was: few */
    assert_true(N - added < N / 100);
    uint32_t L = bk_scalable_filters(f);
    assert_int_equal(L, layers_for(1000, 2, added));
    uint32_t planned;
    assert_int_equal(bk_scalable_plan(1000, 0.01, NULL, added, &planned, NULL), BK_OK);
    assert_int_equal(planned, L);
    double fpr = measure_fpr(f, N), bound = bk_scalable_fpr_bound(f);
    bk_stats st;
    bk_scalable_stats(f, &st);
    print_message("1000 -> %u keys added: %u sub-filters, %.2f bits/key, FPR %.5f, bound %.5f, now %.5f\n",
                  (unsigned)added, L, st.bits_per_key, fpr, bound, st.fpr_now);
    assert_true(fpr <= 0.01);
    assert_true(bound <= 0.01);
    /* the bound is p (1 - r^L), moved a little by the rounding of each sub-filter's k (and blocks) */
    TU_ASSERT_WITHIN(bound, 0.01 * (1 - pow(BK_SCALABLE_DEFAULT_TIGHTENING, L)), classic() ? 0.05 : 0.1);
    TU_ASSERT_WITHIN(st.fpr_now, fpr, 0.15);
    assert_int_equal(st.type, BK_TYPE_SCALABLE);
    assert_int_equal(st.subfilters, L);
    assert_int_equal(st.count, added);
    assert_int_equal(st.capacity, 1000 * ((UINT64_C(1) << L) - 1));
    assert_int_equal(st.capacity, bk_scalable_capacity(f));
    assert_int_equal(st.memory_bytes, bk_scalable_bytes(f));
    assert_true(bk_scalable_memory_usage(f) > st.memory_bytes);
    assert_false(st.saturated);
    TU_ASSERT_WITHIN(st.est_cardinality, (double)added, 0.05);
    /* each sub-filter: its geometry, capacity and error as documented */
    uint64_t sum = 0;
    double spent = 0;
    for (uint32_t i = 0; i < L; i++) {
        bk_scalable_layer ls;
        bk_geometry g;
        assert_int_equal(bk_scalable_get_layer(f, i, &ls), BK_OK);
        bk_scalable_options o = bk_scalable_default_options();
        o.flags = g_kind;
        assert_int_equal(bk_scalable_layer_size(1000, 0.01, &o, i, &g), BK_OK);
        assert_int_equal(ls.bits, g.m);
        assert_int_equal(ls.k, g.k);
        assert_true(ls.classic == classic());
        assert_int_equal(ls.capacity, 1000 << i);
        assert_true(ls.count <= ls.capacity);
        if (i + 1 < L) assert_int_equal(ls.count, ls.capacity);
        /* the budget carried forward: sub-filter i is sized for p (1 - r^(i+1)) minus the errors of
         * the sub-filters before it, so the errors so far never pass p (1 - r^(i+1)) */
        spent += ls.error;
        double cumulative = 0.01 * (1 - pow(BK_SCALABLE_DEFAULT_TIGHTENING, i + 1));
        /* the blocked sizing's mean in-block term is up to 4.6% under the FPR a sub-filter gets, which
         * is what ls.error reports (docs/MATH.md) */
        if (!classic()) assert_true(spent <= cumulative * 1.046);
        else assert_true(spent <= cumulative * 1.02);
        sum += ls.count;
    }
    assert_int_equal(sum, added);
    bk_scalable_layer ls;
    assert_int_equal(bk_scalable_get_layer(f, L, &ls), BK_EINVAL);
    bk_scalable_free(f);
}

/* Other growth factors and ratios: the layer count follows the formula, no false negatives, FPR <= p. */
static void other_growth_and_ratios(void **state)
{
    (void)state;
    const struct { uint32_t s; double r; double p; } cases[] = {
        { 4, 0.5, 0.01 }, { 3, 0.8, 0.05 }, { 16, 0.9, 0.001 }, { 2, 0.5, 0.6 }, { 2, 0.3, 0.3 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        bk_scalable *f = make(100, cases[c].p, cases[c].s, cases[c].r, 0, 3);
        uint64_t added = 0;
        for (uint64_t i = 0; i < 100000; i++) added += add(f, 2, i) == BK_OK;
        for (uint64_t i = 0; i < 100000; i++)
            if (!has(f, 2, i)) fail_msg("case %zu: false negative %llu", c, (unsigned long long)i);
        assert_int_equal(bk_scalable_filters(f), layers_for(100, cases[c].s, added));
        double fpr = measure_fpr(f, 200000);
        print_message("s=%u r=%.2f p=%.3f: %u sub-filters, FPR %.5f, bound %.5f\n", cases[c].s, cases[c].r, cases[c].p,
                      bk_scalable_filters(f), fpr, bk_scalable_fpr_bound(f));
        /* the bound holds up to sampling noise (3 sigma) */
        double b = bk_scalable_fpr_bound(f);
        assert_true(within_bound(fpr, b, 200000));
        assert_true(b <= cases[c].p * 1.02);
        bk_scalable_free(f);
    }
}

/* Growth 1 (RedisBloom's EXPANSION 1): sub-filters of the same capacity, each tighter by r; no false
 * negatives, FPR under p, and it is not the non-scaling mode. */
static void growth_one_adds_same_size_layers(void **state)
{
    (void)state;
    bk_scalable *f = make(2000, 0.01, 1, 0.9, 0, 9);
    assert_int_equal(bk_scalable_growth(f), 1);
    assert_false(bk_scalable_nonscaling(f));
    uint64_t added = 0;
    for (uint64_t i = 0; i < 20000; i++) added += add(f, 7, i) == BK_OK;
    for (uint64_t i = 0; i < 20000; i++)
        if (!has(f, 7, i)) fail_msg("false negative %llu", (unsigned long long)i);
    uint32_t L = bk_scalable_filters(f);
    assert_int_equal(L, layers_for(2000, 1, added));
    assert_true(L >= 10);
    double spent = 0;
    for (uint32_t i = 0; i < L; i++) {
        bk_scalable_layer ls;
        assert_int_equal(bk_scalable_get_layer(f, i, &ls), BK_OK);
        assert_int_equal(ls.capacity, 2000);
        spent += ls.error;
        assert_true(spent <= 0.01 * (1 - pow(0.9, i + 1)) * (classic() ? 1.02 : 1.046));
    }
    double fpr = measure_fpr(f, 200000), b = bk_scalable_fpr_bound(f);
    print_message("growth 1: %u sub-filters of 2000 keys, FPR %.5f, bound %.5f\n", L, fpr, b);
    assert_true(within_bound(fpr, b, 200000));
    assert_true(b <= 0.01 * (classic() ? 1.0 : 1.046));
    uint32_t planned;
    bk_scalable_options o = { .growth = 1, .tightening = 0.9, .max_bytes = 0, .seed = 9, .flags = g_kind };
    assert_int_equal(bk_scalable_plan(2000, 0.01, &o, added, &planned, NULL), BK_OK);
    assert_int_equal(planned, L);
    /* the round trip keeps it a growing filter with growth 1 */
    bk_filter *h;
    assert_int_equal(bk_filter_wrap(BK_TYPE_SCALABLE, f, &h), BK_OK);
    void *buf;
    size_t len;
    assert_int_equal(bk_filter_save_alloc(h, &buf, &len), BK_OK);
    bk_filter *g;
    assert_int_equal(bk_filter_load_buffer(buf, len, BK_LOAD_DEFAULT, &g), BK_OK);
    const bk_scalable *gs = bk_filter_get(g, BK_TYPE_SCALABLE);
    assert_int_equal(bk_scalable_growth(gs), 1);
    assert_false(bk_scalable_nonscaling(gs));
    assert_int_equal(bk_scalable_filters(gs), L);
    assert_int_equal(bk_filter_add(g, "one more", 8), BK_OK);
    bk_filter_buffer_free(buf);
    bk_filter_free(g);
    bk_filter_free(h);
}

/* NONSCALING: exactly `capacity` keys, then BK_EFULL with nothing changed. */
static void nonscaling_fills_then_refuses(void **state)
{
    (void)state;
    bk_scalable *f = make(1000, 0.01, 0, 0.5, 0, 4);
    assert_true(bk_scalable_nonscaling(f));
    bk_geometry g;
    kind_size(1000, 0.01, &g);
    bk_scalable_layer ls;
    bk_scalable_get_layer(f, 0, &ls);
    assert_int_equal(ls.bits, g.m); /* sized for p itself, r unused */
    uint64_t i = 0, added = 0;
    bk_status s = BK_OK;
    while (added < 1000) {
        s = add(f, 3, i++);
        assert_true(s == BK_OK || s == BK_EEXISTS);
        added += s == BK_OK;
    }
    assert_int_equal(bk_scalable_count(f), 1000);
    bk_stats st;
    bk_scalable_stats(f, &st);
    assert_true(st.saturated);
    /* a new key: full; a key already in: still fine */
    uint64_t before_bytes = bk_scalable_bytes(f);
    uint64_t full = 0;
    for (uint64_t j = 0; j < 100; j++) {
        s = add(f, 4, j);
        if (s == BK_EFULL) full++;
        else assert_int_equal(s, BK_EEXISTS); /* a false positive of the full filter */
    }
    assert_true(full > 90);
    tu_key k = tu_make_key(4, 0);
    assert_int_equal(bk_scalable_add(f, k.b, sizeof k.b), has(f, 4, 0) ? BK_OK : BK_EFULL);
    k = tu_make_key(3, 0);
    assert_int_equal(bk_scalable_add(f, k.b, sizeof k.b), BK_OK);
    assert_int_equal(bk_scalable_add_if_absent(f, k.b, sizeof k.b), BK_EEXISTS);
    assert_int_equal(bk_scalable_count(f), 1000);
    assert_int_equal(bk_scalable_filters(f), 1);
    assert_int_equal(bk_scalable_bytes(f), before_bytes);
    uint64_t hn = bk_hash64("new!", 4, 4);
    assert_int_equal(bk_scalable_add_hash_atomic(f, hn), bk_scalable_contains_hash(f, hn) ? BK_EEXISTS : BK_EFULL);
    uint32_t nf;
    bk_scalable_options o = { .growth = 2, .tightening = 0.5, .max_bytes = 0, .seed = 0, .flags = BK_SCALABLE_NONSCALING | g_kind };
    assert_int_equal(bk_scalable_plan(1000, 0.01, &o, 1000, &nf, NULL), BK_OK);
    assert_int_equal(nf, 1);
    assert_int_equal(bk_scalable_plan(1000, 0.01, &o, 1001, &nf, NULL), BK_EFULL);
    bk_scalable_free(f);
}

/* add_if_absent says whether the key was new; add says BK_OK either way. */
static void add_reports_new_keys(void **state)
{
    (void)state;
    bk_scalable *f = make(100, 0.001, 2, 0.9, 0, 5);
    for (uint64_t i = 0; i < 1000; i++) {
        bool before = has(f, 5, i);
        bk_status s = add(f, 5, i);
        assert_int_equal(s, before ? BK_EEXISTS : BK_OK);
        assert_int_equal(add(f, 5, i), BK_EEXISTS);
        tu_key k = tu_make_key(5, i);
        assert_int_equal(bk_scalable_add(f, k.b, sizeof k.b), BK_OK);
        assert_int_equal(bk_scalable_add_hash(f, bk_hash64(k.b, sizeof k.b, 5)), BK_OK);
    }
    assert_true(bk_scalable_count(f) >= 995 && bk_scalable_count(f) <= 1000);
    /* bytes form == pre-hashed form */
    uint64_t h = bk_hash64("abc", 3, 5);
    assert_int_equal(bk_scalable_add_if_absent_hash(f, h), bk_scalable_contains(f, "abc", 3) ? BK_EEXISTS : BK_OK);
    assert_true(bk_scalable_contains(f, "abc", 3));
    assert_int_equal(bk_scalable_add_if_absent(f, "abc", 3), BK_EEXISTS);
    bk_scalable_free(f);
}

/* The memory limit: growth stops with BK_ETOOBIG, nothing changed, every key in stays in. */
static void memory_limit(void **state)
{
    (void)state;
    const uint64_t limit = 64 * 1024;
    bk_scalable *f = make(1000, 0.01, 2, 0.9, limit, 6);
    assert_int_equal(bk_scalable_max_bytes(f), limit);
    uint64_t i = 0, added = 0;
    bk_status s;
    while ((s = add(f, 6, i)) == BK_OK || s == BK_EEXISTS) {
        added += s == BK_OK;
        i++;
        assert_true(i < 10000000);
    }
    assert_int_equal(s, BK_ETOOBIG);
    uint32_t L = bk_scalable_filters(f);
    uint64_t bytes = bk_scalable_bytes(f), cap = bk_scalable_capacity(f);
    assert_true(bytes <= limit);
    assert_int_equal(bk_scalable_count(f), added);
    assert_int_equal(added, cap);
    bk_stats st;
    bk_scalable_stats(f, &st);
    assert_true(st.saturated);
    /* the next layer would not fit */
    bk_geometry g;
    assert_int_equal(bk_scalable_layer_size(1000, 0.01, &(bk_scalable_options){ .growth = 2, .tightening = 0.9, .max_bytes = limit, .seed = 6, .flags = 0 }, L, &g), BK_OK);
    assert_true(bytes + (g.m + 511) / 512 * 64 > limit);
    assert_int_equal(bk_scalable_plan(1000, 0.01, &(bk_scalable_options){ .growth = 2, .tightening = 0.9, .max_bytes = limit, .seed = 6, .flags = 0 }, cap + 1, NULL, NULL),
                     BK_ETOOBIG);
    assert_int_equal(add(f, 7, 1), has(f, 7, 1) ? BK_EEXISTS : BK_ETOOBIG);
    assert_int_equal(bk_scalable_filters(f), L);
    assert_int_equal(bk_scalable_bytes(f), bytes);
    for (uint64_t j = 0; j < i; j++) assert_true(has(f, 6, j));
    /* raising the limit lets it grow again; lowering it below what it holds is refused */
    assert_int_equal(bk_scalable_set_max_bytes(f, bytes - 1), BK_EINVAL);
    assert_int_equal(bk_scalable_set_max_bytes(f, BK_MAX_FILTER_BYTES + 1), BK_EINVAL);
    assert_int_equal(bk_scalable_max_bytes(f), limit);
    assert_int_equal(bk_scalable_set_max_bytes(f, 0), BK_OK);
    assert_int_equal(bk_scalable_max_bytes(f), BK_SCALABLE_DEFAULT_MAX_BYTES);
    uint64_t j = 0;
    while ((s = add(f, 7, j++)) == BK_EEXISTS) {
    }
    assert_int_equal(s, BK_OK);
    assert_int_equal(bk_scalable_filters(f), L + 1);
    bk_scalable_free(f);
    /* the default limit */
    f = make(100, 0.01, 2, 0.9, 0, 0);
    assert_int_equal(bk_scalable_max_bytes(f), BK_SCALABLE_DEFAULT_MAX_BYTES);
    bk_scalable_free(f);
    /* a first sub-filter past the limit */
    bk_scalable_options o = { .growth = 2, .tightening = 0.9, .max_bytes = 1024, .seed = 0, .flags = g_kind };
    f = (bk_scalable *)(uintptr_t)1;
    assert_int_equal(bk_scalable_new(100000, 0.01, &o, &f), BK_ETOOBIG);
    assert_null(f);
}

static void bad_input(void **state)
{
    (void)state;
    bk_scalable_options d = bk_scalable_default_options();
    assert_int_equal(d.growth, 2);
    assert_true(d.tightening == BK_SCALABLE_DEFAULT_TIGHTENING);
    const struct { uint64_t cap; double p; uint32_t s; double r; uint64_t max; } bad[] = {
        { 100, 0.01, 17, 0.9, 0 },    { 100, 0.01, 2, -0.0 - 1e-300, 0 },
        { 100, 0.01, 2, 1.0, 0 },     { 100, 0.01, 2, -0.5, 0 },  { 100, 0.01, 2, NAN, 0 },
        { 0, 0.01, 2, 0.9, 0 },       { 100, 0.0, 2, 0.9, 0 },    { 100, 1.0, 2, 0.9, 0 },
        { 100, NAN, 2, 0.9, 0 },      { 100, 0.01, 2, 0.9, BK_MAX_FILTER_BYTES + 1 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bk_scalable_options o = { .growth = bad[i].s, .tightening = bad[i].r, .max_bytes = bad[i].max, .seed = 0, .flags = 0 };
        bk_scalable *f = (bk_scalable *)(uintptr_t)1;
        if (bk_scalable_new(bad[i].cap, bad[i].p, &o, &f) != BK_EINVAL) fail_msg("case %zu accepted", i);
        assert_null(f);
        bk_geometry g;
        assert_int_equal(bk_scalable_layer_size(bad[i].cap, bad[i].p, &o, 0, &g), BK_EINVAL);
        assert_int_equal(bk_scalable_plan(bad[i].cap, bad[i].p, &o, 10, NULL, NULL), BK_EINVAL);
    }
    assert_int_equal(bk_scalable_new(100, 0.01, NULL, NULL), BK_EINVAL);
    bk_scalable_options unknown_flag = bk_scalable_default_options();
    unknown_flag.flags = BK_SCALABLE_COMPACT << 1;
    bk_scalable *f = (bk_scalable *)(uintptr_t)1;
    assert_int_equal(bk_scalable_new(100, 0.01, &unknown_flag, &f), BK_EINVAL);
    assert_null(f);
    f = make(100, 0.01, 2, 0.9, 0, 0);
    assert_int_equal(bk_scalable_add(NULL, "x", 1), BK_EINVAL);
    assert_int_equal(bk_scalable_add(f, NULL, 1), BK_EINVAL);
    assert_int_equal(bk_scalable_add_if_absent(f, NULL, 1), BK_EINVAL);
    assert_int_equal(bk_scalable_add_atomic(f, NULL, 1), BK_EINVAL);
    assert_int_equal(bk_scalable_add_hash(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_scalable_add_hash_atomic(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_scalable_count(f), 0);
    size_t done = 7;
    assert_int_equal(bk_scalable_add_many(f, NULL, NULL, 2, &done), BK_EINVAL);
    assert_int_equal(done, 0);
    assert_int_equal(bk_scalable_add_hashes(f, NULL, 2, NULL), BK_EINVAL);
    assert_int_equal(bk_scalable_count(f), 0);
    bk_geometry g;
    assert_int_equal(bk_scalable_layer_size(100, 0.01, NULL, BK_SCALABLE_MAX_FILTERS, &g), BK_EINVAL);
    /* the empty key is a key */
    assert_int_equal(bk_scalable_add_if_absent(f, NULL, 0), BK_OK);
    assert_true(bk_scalable_contains(f, "", 0));
    /* a scalable filter has no remove: through the generic handle, BK_ENOTSUP and nothing changes */
    assert_null(bk__scalable_vtable.remove_hash);
    assert_int_equal(bk__scalable_vtable.type, BK_TYPE_SCALABLE);
    bk_filter *h = NULL;
    assert_int_equal(bk_filter_wrap(BK_TYPE_SCALABLE, f, &h), BK_OK);
    for (uint64_t i = 0; i < 500; i++) {
        tu_key k = tu_make_key(17, i);
        assert_int_equal(bk_filter_add(h, k.b, sizeof k.b), BK_OK);
    }
    uint8_t *before, *after;
    size_t lb, la;
    assert_int_equal(bk_filter_save_alloc(h, (void **)&before, &lb), BK_OK);
    tu_key k0 = tu_make_key(17, 0);
    assert_int_equal(bk_filter_remove(h, k0.b, sizeof k0.b), BK_ENOTSUP);
    assert_int_equal(bk_filter_remove_hash(h, bk_hash64(k0.b, sizeof k0.b, 0)), BK_ENOTSUP);
    assert_int_equal(bk_filter_save_alloc(h, (void **)&after, &la), BK_OK);
    assert_int_equal(la, lb);
    assert_memory_equal(before, after, la);
    assert_true(bk_filter_contains(h, k0.b, sizeof k0.b));
    assert_ptr_equal(bk_filter_get(h, BK_TYPE_SCALABLE), f);
    assert_null(bk_filter_get(h, BK_TYPE_COUNTING));
    bk_filter_buffer_free(before);
    bk_filter_buffer_free(after);
    bk_filter_free(h); /* frees f */
    bk_scalable_free(NULL);
}

/* Batches equal single calls; atomic adds equal plain adds when run alone. */
static void forms_agree(void **state)
{
    (void)state;
    enum { M = 50000 };
    static uint64_t hs[M];
    static tu_key keys[M];
    static const void *ptrs[M];
    static size_t lens[M];
    static uint8_t res[M];
    bk_scalable *a = make(500, 0.01, 2, 0.9, 0, 8), *b = make(500, 0.01, 2, 0.9, 0, 8), *c = make(500, 0.01, 2, 0.9, 0, 8),
                *d = make(500, 0.01, 2, 0.9, 0, 8);
    size_t added_a = 0, added_b = 0, added_c = 0;
    for (int i = 0; i < M; i++) {
        keys[i] = tu_make_key(8, (uint64_t)(i % (M / 2))); /* each key twice */
        ptrs[i] = keys[i].b;
        lens[i] = sizeof keys[i].b;
        hs[i] = bk_hash64(keys[i].b, sizeof keys[i].b, 8);
        added_a += bk_scalable_add_if_absent(a, ptrs[i], lens[i]) == BK_OK;
        added_c += bk_scalable_add_hash_atomic(c, hs[i]) == BK_OK;
        assert_int_equal(bk_scalable_add(d, ptrs[i], lens[i]), BK_OK);
    }
    /* plain adds, one at a time and batched, give the same chain (a repeat still in the newest
     * sub-filter is not added again) */
    size_t done_b = 0;
    assert_int_equal(bk_scalable_add_many(b, ptrs, lens, M, &done_b), BK_OK);
    assert_int_equal(done_b, M);
    added_b = bk_scalable_count(b);
    assert_int_equal(bk_scalable_count(b), bk_scalable_count(d));
    assert_int_equal(bk_scalable_filters(b), bk_scalable_filters(d));
    for (uint32_t l = 0; l < bk_scalable_filters(b); l++) {
        bk_scalable_layer lb, ld;
        bk_scalable_get_layer(b, l, &lb);
        bk_scalable_get_layer(d, l, &ld);
        assert_int_equal(lb.count, ld.count);
        assert_true(lb.fill_ratio == ld.fill_ratio);
    }
    assert_true(added_b >= added_a);
    bk_scalable_free(b);
    b = make(500, 0.01, 2, 0.9, 0, 8);
    /* add_if_absent one at a time equals the atomic form */
    for (int i = 0; i < M; i++) (void)bk_scalable_add_if_absent_hash(b, hs[i]);
    bk_scalable_free(d);
    assert_int_equal(added_a, bk_scalable_count(b));
    assert_int_equal(added_a, added_c);
    assert_int_equal(added_a, bk_scalable_count(a));
    assert_true(added_a <= M / 2);
    assert_int_equal(bk_scalable_filters(a), bk_scalable_filters(b));
    assert_int_equal(bk_scalable_filters(a), bk_scalable_filters(c));
    for (uint32_t l = 0; l < bk_scalable_filters(a); l++) {
        bk_scalable_layer la, lb, lc;
        bk_scalable_get_layer(a, l, &la);
        bk_scalable_get_layer(b, l, &lb);
        bk_scalable_get_layer(c, l, &lc);
        assert_int_equal(la.count, lb.count);
        assert_int_equal(la.count, lc.count);
        assert_true(la.fill_ratio == lb.fill_ratio && la.fill_ratio == lc.fill_ratio);
    }
    /* contains: present keys and absent ones, single == batch */
    for (int i = 0; i < M; i++) {
        keys[i] = tu_make_key(i & 1 ? 8 : 9, (uint64_t)i / 2);
        hs[i] = bk_hash64(keys[i].b, sizeof keys[i].b, 8);
    }
    size_t present = TU_HITS(bk_scalable_contains_many, a, ptrs, lens, M, res), single = 0;
    for (int i = 0; i < M; i++) {
        bool p = bk_scalable_contains(a, ptrs[i], lens[i]);
        assert_int_equal(res[i], p);
        assert_int_equal(bk_scalable_contains_hash(a, hs[i]), p);
        if (i & 1) assert_true(p);
        single += p;
    }
    assert_int_equal(present, single);
    assert_int_equal(TU_HITS(bk_scalable_contains_hashes, a, hs, M, NULL), single);
    bk_scalable_free(a);
    bk_scalable_free(b);
    bk_scalable_free(c);
}

/* ---- serialization through the vtable ---- */

static uint8_t *encode(const void *f, size_t *len)
{
    tu_membuf s = { 0 };
    bk_writer w = { tu_mem_sink, &s, 0 };
    assert_int_equal(bk__scalable_vtable.encode(f, &w), BK_OK);
    assert_int_equal(w.offset, s.len);
    bk_writer count_only = { NULL, NULL, 0 };
    assert_int_equal(bk__scalable_vtable.encode(f, &count_only), BK_OK);
    assert_int_equal(count_only.offset, s.len);
    uint8_t *al = aligned_alloc(64, (s.len + 63) / 64 * 64 + 64);
    memcpy(al, s.buf, s.len);
    free(s.buf);
    *len = s.len;
    return al;
}

static bk_status decode(const uint8_t *buf, size_t len, uint64_t seed, bool borrow, void **out)
{
    bk_reader r = { buf, len, 0, borrow, false, seed, NULL, NULL };
    bk_status s = bk__scalable_vtable.decode(&r, out);
    if (s == BK_OK && r.off != len) {
        /* the container refuses a body shorter than its declared length */
        bk__scalable_vtable.destroy(*out);
        *out = NULL;
        return BK_ECORRUPT;
    }
    return s;
}

static void put(uint8_t *b, size_t off, size_t width, uint64_t v)
{
    for (size_t j = 0; j < width; j++) b[off + j] = (uint8_t)(v >> (8 * j));
}

static void serialization_round_trip(void **state)
{
    (void)state;
    bk_scalable *f = make(200, 0.02, 2, 0.8, 1 << 20, 41);
    for (uint64_t i = 0; i < 3000; i++) add(f, 10, i);
    assert_int_equal(bk_scalable_filters(f), 4);
    size_t len;
    uint8_t *buf = encode(f, &len);
    assert_int_equal(len % 64, 0);
    for (int borrow = 0; borrow <= 1; borrow++) {
        void *g = NULL;
        assert_int_equal(decode(buf, len, 41, borrow, &g), BK_OK);
        assert_int_equal(bk_scalable_filters(g), 4);
        assert_int_equal(bk_scalable_count(g), bk_scalable_count(f));
        assert_int_equal(bk_scalable_capacity(g), bk_scalable_capacity(f));
        assert_int_equal(bk_scalable_bytes(g), bk_scalable_bytes(f));
        assert_int_equal(bk_scalable_initial_capacity(g), 200);
        assert_true(bk_scalable_error(g) == 0.02);
        assert_true(bk_scalable_tightening(g) == 0.8);
        assert_int_equal(bk_scalable_growth(g), 2);
        assert_int_equal(bk_scalable_max_bytes(g), 1 << 20);
        assert_int_equal(bk_scalable_seed(g), 41);
        assert_int_equal(bk_scalable_compatible(f, g), BK_OK);
        for (uint64_t i = 0; i < 3000; i++) assert_true(has(g, 10, i));
        for (uint64_t i = 0; i < 3000; i++) assert_int_equal(has(g, 11, i), has(f, 11, i));
        size_t len2;
        uint8_t *buf2 = encode(g, &len2);
        assert_int_equal(len2, len);
        assert_memory_equal(buf, buf2, len);
        free(buf2);
        if (!borrow) {
            /* a decoded chain keeps growing */
            for (uint64_t i = 3000; i < 6000; i++) add(g, 10, i);
            assert_int_equal(bk_scalable_filters(g), 5);
            for (uint64_t i = 0; i < 6000; i++) assert_true(has(g, 10, i));
        }
        bk__scalable_vtable.destroy(g);
    }
    /* truncations */
    for (size_t cut = 0; cut < len; cut += (cut < 200 ? 1 : 61)) {
        void *g = (void *)1;
        bk_status s = decode(buf, cut, 41, false, &g);
        if (s != BK_ETRUNCATED && s != BK_ECORRUPT) fail_msg("cut %zu: %s", cut, bk_strerror(s));
        assert_null(g);
    }
    /* header fields: u64 capacity0, f64 p, f64 r, u64 max_bytes, u32 growth, u32 nfilters, u32 kind */
    double one = 1.0, zero = 0.0, half = 0.5, nan = NAN;
    uint64_t one_u, zero_u, half_u, nan_u;
    memcpy(&one_u, &one, 8);
    memcpy(&zero_u, &zero, 8);
    memcpy(&half_u, &half, 8);
    memcpy(&nan_u, &nan, 8);
    const struct { size_t off, width; uint64_t val; } edits[] = {
        { 0, 8, 0 },      { 0, 8, 201 },      { 8, 8, one_u },   { 8, 8, zero_u }, { 8, 8, nan_u },
        { 8, 8, half_u }, { 16, 8, one_u },   { 16, 8, zero_u }, { 16, 8, half_u }, { 24, 8, 0 },
        { 24, 8, 4096 },  { 24, 8, UINT64_MAX }, { 32, 4, 0 },   { 32, 4, 17 },    { 32, 4, 3 },
        { 32, 4, 1 },     { 36, 4, 0 },       { 36, 4, 65 },     { 36, 4, 3 },     { 36, 4, 5 },
        { 48, 1, 1 },     { 63, 1, 0x80 },
        /* growth is 0 .. 16 (this chain grew x2); kind is 0 (classic) or 1 (blocked), and the other
         * kind's geometry differs; the padding after it is zero */
        { 32, 4, 0x10002 }, { 40, 4, 2 }, { 40, 4, UINT32_MAX }, { 40, 4, classic() ? 1 : 0 }, { 44, 1, 1 },
        /* first sub-filter body at 64: layout, k, m, capacity, count */
        { 64, 4, 1 },     { 68, 4, 9 },       { 72, 8, 100 },    { 80, 8, 100 },   { 88, 8, UINT64_MAX },
    };
    uint8_t *bad = aligned_alloc(64, len + 64);
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        memcpy(bad, buf, len);
        put(bad, edits[e].off, edits[e].width, edits[e].val);
        void *g = (void *)1;
        bk_status s = decode(bad, len, 41, false, &g);
        if (s != BK_ECORRUPT && s != BK_ETRUNCATED) fail_msg("edit %zu: %s", e, bk_strerror(s));
        assert_null(g);
    }
    /* a set bit past m in the last sub-filter (a blocked one's m is whole blocks: no such bits) */
    void *g = (void *)1;
    if (classic()) {
        memcpy(bad, buf, len);
        bad[len - 1] = 0x80;
        assert_int_equal(decode(bad, len, 41, false, &g), BK_ECORRUPT);
        assert_null(g);
    }
    /* trailing bytes belong to nobody: the container checks the length; the decoder consumes exactly
     * its body (checked in decode()) */
    free(bad);
    free(buf);
    bk_scalable_free(f);
    /* non-scaling round trip */
    f = make(500, 0.01, 0, 0.5, 0, 42);
    for (uint64_t i = 0; bk_scalable_count(f) < 500; i++) add(f, 12, i);
    buf = encode(f, &len);
    assert_int_equal(decode(buf, len, 42, false, &g), BK_OK);
    assert_int_equal(bk_scalable_growth(g), 1);
    assert_true(bk_scalable_nonscaling(g));
    assert_int_equal(add(g, 13, 1), has(g, 13, 1) ? BK_EEXISTS : BK_EFULL);
    bk_scalable_free(g);
    free(buf);
    bk_scalable_free(f);
}

static void union_clone_clear(void **state)
{
    (void)state;
    bk_scalable *a = make(100, 0.01, 2, 0.9, 0, 51), *b = make(100, 0.01, 2, 0.9, 0, 51);
    for (uint64_t i = 0; i < 300; i++) add(a, 14, i);    /* 2 sub-filters */
    for (uint64_t i = 0; i < 3000; i++) add(b, 15, i);   /* 5 sub-filters */
    assert_int_equal(bk_scalable_filters(a), 2);
    assert_int_equal(bk_scalable_filters(b), 5);
    bk_scalable *c = NULL;
    assert_int_equal(bk_scalable_clone(a, &c), BK_OK);
    const uint64_t c_count = bk_scalable_count(c); /* 300 less the keys add found "present" already */
    assert_int_equal(bk_scalable_union(a, b), BK_OK);
    assert_int_equal(bk_scalable_filters(a), 5);
    for (uint64_t i = 0; i < 300; i++) assert_true(has(a, 14, i));
    for (uint64_t i = 0; i < 3000; i++) assert_true(has(a, 15, i));
    TU_ASSERT_WITHIN((double)bk_scalable_count(a), 3300, 0.1);
    /* incompatible: nothing changes */
    bk_scalable *o1 = make(100, 0.01, 2, 0.9, 0, 52), *o2 = make(100, 0.01, 4, 0.9, 0, 51),
                *o3 = make(100, 0.02, 2, 0.9, 0, 51), *o4 = make(101, 0.01, 2, 0.9, 0, 51), *o5 = make(100, 0.01, 2, 0.8, 0, 51);
    bk_scalable *targets[] = { o1, o2, o3, o4, o5 };
    for (int t = 0; t < 5; t++) {
        add(targets[t], 16, 1);
        assert_int_equal(bk_scalable_union(c, targets[t]), BK_EINCOMPAT);
    }
    assert_int_equal(bk_scalable_filters(c), 2);
    assert_int_equal(bk_scalable_count(c), c_count);
    for (uint64_t i = 0; i < 300; i++) assert_true(has(c, 14, i));
    /* a union that would pass the memory limit: refused, nothing changed */
    bk_scalable *small = make(100, 0.01, 2, 0.9, 512, 51);
    assert_int_equal(bk_scalable_union(small, b), BK_ETOOBIG);
    assert_int_equal(bk_scalable_filters(small), 1);
    /* clear: back to one empty sub-filter */
    bk_scalable_clear(a);
    assert_int_equal(bk_scalable_filters(a), 1);
    assert_int_equal(bk_scalable_count(a), 0);
    bk_stats st;
    bk_scalable_stats(a, &st);
    assert_true(st.fill_ratio == 0.0);
    assert_int_equal(st.memory_bytes, bk_scalable_bytes(a));
    for (uint64_t i = 0; i < 3000; i++) assert_int_equal(add(a, 15, i), has(a, 15, i) ? BK_EEXISTS : BK_OK);
    for (int t = 0; t < 5; t++) bk_scalable_free(targets[t]);
    bk_scalable_free(small);
    bk_scalable_free(a);
    bk_scalable_free(b);
    bk_scalable_free(c);
}

/* A blocked chain answers the same on every code path (scalar, AVX2, AVX-512: forced with
 * bk_simd_force before creation), one key at a time and in batches, with no false negatives. */
static void blocked_paths_agree(void **state)
{
    (void)state;
    enum { N = 60000, Q = 200000 };
    uint8_t *want = malloc(Q), *got = malloc(Q);
    uint64_t *h = malloc(Q * sizeof *h);
    for (uint64_t i = 0; i < Q; i++) {
        tu_key k = tu_make_key(31, i);
        h[i] = bk_hash64(k.b, sizeof k.b, 8);
    }
    int paths = 0;
    for (bk_simd path = BK_SIMD_SCALAR; path <= BK_SIMD_AVX512; path++) {
        if (path > bk_simd_best()) continue;
        assert_int_equal(bk_simd_force(path), BK_OK);
        bk_scalable_options o = bk_scalable_default_options();
        o.seed = 8;
        bk_scalable *f;
        assert_int_equal(bk_scalable_new(500, 0.01, &o, &f), BK_OK);
        assert_int_equal(bk_simd_force(BK_SIMD_AUTO), BK_OK);
        for (uint64_t i = 0; i < N; i++) {
            bk_status st = add(f, 30, i);
            assert_true(st == BK_OK || st == BK_EEXISTS);
        }
        assert_true(bk_scalable_filters(f) >= 7);
        for (uint64_t i = 0; i < N; i++) assert_true(has(f, 30, i));
        uint8_t *out = paths == 0 ? want : got;
        size_t present = TU_HITS(bk_scalable_contains_hashes, f, h, Q, out);
        size_t single = 0;
        for (uint64_t i = 0; i < Q; i++) {
            bool r = bk_scalable_contains_hash(f, h[i]);
            if (r != (out[i] != 0)) fail_msg("path %d key %llu: batch %d single %d", path, (unsigned long long)i, out[i], r);
            single += r;
        }
        assert_int_equal(present, single);
        if (paths > 0) assert_memory_equal(want, got, Q);
        paths++;
        bk_scalable_free(f);
    }
    assert_true(paths >= 1);
    free(want);
    free(got);
    free(h);
}

/* A blocked chain saves the same bytes on every code path: batches and one-key adds, repeats
 * included, chains whose sub-filters take every k from small to the most a block allows (odd and
 * even: the AVX-512 kernel sets its probes in pairs). */
static void blocked_paths_save_the_same_bytes(void **state)
{
    (void)state;
    enum { N = 40000 };
    const double ps[] = { 0.6, 0.3, 0.01, 0.00001 };
    uint64_t *h = malloc(N * sizeof *h);
    for (uint64_t i = 0; i < N; i++) h[i] = key_hash(41, i % (N - N / 8)); /* the last eighth repeats */
    for (size_t t = 0; t < sizeof ps / sizeof ps[0]; t++) {
        void *want = NULL;
        size_t want_len = 0;
        uint32_t kmin = 99, kmax = 0;
        for (bk_simd path = BK_SIMD_SCALAR; path <= BK_SIMD_AVX512; path++) {
            if (path > bk_simd_best()) continue;
            assert_int_equal(bk_simd_force(path), BK_OK);
            bk_scalable_options o = bk_scalable_default_options();
            o.seed = 41;
            bk_scalable *f;
            assert_int_equal(bk_scalable_new(100, ps[t], &o, &f), BK_OK);
            assert_int_equal(bk_simd_force(BK_SIMD_AUTO), BK_OK);
            size_t done = 0;
            assert_int_equal(bk_scalable_add_hashes(f, h, N / 2, &done), BK_OK);
            assert_int_equal(done, N / 2);
            for (size_t i = N / 2; i < N; i++) assert_int_equal(bk_scalable_add_hash(f, h[i]), BK_OK);
            assert_int_equal(bk_scalable_add_hashes(f, h + N / 4, N / 2, &done), BK_OK);
            for (uint32_t l = 0; l < bk_scalable_filters(f); l++) {
                bk_scalable_layer ly;
                bk_scalable_get_layer(f, l, &ly);
                kmin = ly.k < kmin ? ly.k : kmin;
                kmax = ly.k > kmax ? ly.k : kmax;
            }
            bk_filter *w;
            assert_int_equal(bk_filter_wrap(BK_TYPE_SCALABLE, f, &w), BK_OK);
            void *buf;
            size_t len;
            assert_int_equal(bk_filter_save_alloc(w, &buf, &len), BK_OK);
            if (!want) {
                want = buf;
                want_len = len;
            } else {
                assert_int_equal(len, want_len);
                assert_memory_equal(buf, want, len);
                bk_filter_buffer_free(buf);
            }
            bk_filter_free(w);
        }
        print_message("p = %g: sub-filters with k = %u .. %u\n", ps[t], kmin, kmax);
        bk_filter_buffer_free(want);
    }
    free(h);
}

/* The plain one-key add's fast path (a blocked newest sub-filter with room: one function per SIMD
 * path) against the batch's run into the newest sub-filter, a batch of one key at a time: the same
 * sub-filters with the same counts, the same bytes and no false negatives, on every path, for a plain
 * chain and a compact one (whose small first sub-filter takes the general path), through several
 * growths, with every key added twice (a repeat must not count). */
static void one_key_adds_match_batches(void **state)
{
    (void)state;
    enum { N = 30000 };
    uint64_t *h = malloc(N * sizeof *h);
    assert_non_null(h);
    for (uint64_t i = 0; i < N; i++) h[i] = key_hash(43, i / 2 + (i & 1) * (N / 4)); /* keys N/4 .. N/2 - 1 twice */
    for (int compact = 0; compact < 2; compact++)
        for (bk_simd path = BK_SIMD_SCALAR; path <= BK_SIMD_AVX512; path++) {
            if (path > bk_simd_best()) continue;
            assert_int_equal(bk_simd_force(path), BK_OK);
            bk_scalable_options o = bk_scalable_default_options();
            o.seed = 43;
            if (compact) o.flags |= BK_SCALABLE_COMPACT;
            bk_scalable *one, *bat;
            assert_int_equal(bk_scalable_new(64, 0.01, &o, &one), BK_OK);
            assert_int_equal(bk_scalable_new(64, 0.01, &o, &bat), BK_OK);
            assert_int_equal(bk_simd_force(BK_SIMD_AUTO), BK_OK);
            for (size_t i = 0; i < N; i++) {
                size_t done = 0;
                assert_int_equal(bk_scalable_add_hash(one, h[i]), BK_OK);
                assert_int_equal(bk_scalable_add_hashes(bat, h + i, 1, &done), BK_OK);
                assert_int_equal(done, 1);
                if (i % 997 == 0) assert_int_equal(bk_scalable_count(one), bk_scalable_count(bat));
            }
            assert_true(bk_scalable_filters(one) >= 6);
            assert_int_equal(bk_scalable_filters(one), bk_scalable_filters(bat));
            for (uint32_t l = 0; l < bk_scalable_filters(one); l++) {
                bk_scalable_layer a, b;
                assert_int_equal(bk_scalable_get_layer(one, l, &a), BK_OK);
                assert_int_equal(bk_scalable_get_layer(bat, l, &b), BK_OK);
                assert_int_equal(a.count, b.count);
                assert_int_equal(a.k, b.k);
            }
            for (size_t i = 0; i < N; i++) assert_true(bk_scalable_contains_hash(one, h[i]));
            void *bufs[2];
            size_t lens[2];
            bk_scalable *fs[2] = { one, bat };
            for (int j = 0; j < 2; j++) {
                bk_filter *w;
                assert_int_equal(bk_filter_wrap(BK_TYPE_SCALABLE, fs[j], &w), BK_OK);
                assert_int_equal(bk_filter_save_alloc(w, &bufs[j], &lens[j]), BK_OK);
                bk_filter_free(w);
            }
            assert_int_equal(lens[0], lens[1]);
            assert_memory_equal(bufs[0], bufs[1], lens[0]);
            bk_filter_buffer_free(bufs[0]);
            bk_filter_buffer_free(bufs[1]);
        }
    free(h);
}

#define KINDS(f)                                                                                  \
    { #f " (blocked)", f, use_blocked, NULL, NULL }, { #f " (classic)", f, use_classic, NULL, NULL }

/* A zeroed options struct is the defaults: same geometry for every sub-filter as NULL options, and the
 * same answers; a nonzero field still counts. */
static void zeroed_options_are_defaults(void **state)
{
    (void)state;
    bk_scalable_options zero = BK_SCALABLE_OPTIONS_INIT;
    for (uint32_t i = 0; i < 6; i++) {
        bk_geometry a, b;
        assert_int_equal(bk_scalable_layer_size(5000, 0.01, NULL, i, &a), BK_OK);
        assert_int_equal(bk_scalable_layer_size(5000, 0.01, &zero, i, &b), BK_OK);
        assert_int_equal(a.m, b.m);
        assert_int_equal(a.k, b.k);
        assert_int_equal(a.n, b.n);
    }
    bk_scalable *f = NULL;
    assert_int_equal(bk_scalable_new(1000, 0.01, &zero, &f), BK_OK);
    assert_int_equal(bk_scalable_growth(f), 2);
    assert_true(bk_scalable_tightening(f) == BK_SCALABLE_DEFAULT_TIGHTENING);
    for (uint64_t k = 0; k < 5000; k++) assert_int_equal(bk_scalable_add_hash(f, bk_hash64(&k, 8, 0)), BK_OK);
    for (uint64_t k = 0; k < 5000; k++) assert_true(bk_scalable_contains_hash(f, bk_hash64(&k, 8, 0)));
    bk_scalable_free(f);
    zero.growth = 4;
    assert_int_equal(bk_scalable_new(1000, 0.01, &zero, &f), BK_OK);
    assert_int_equal(bk_scalable_growth(f), 4);
    bk_scalable_free(f);
    zero.growth = 17;
    assert_int_equal(bk_scalable_new(1000, 0.01, &zero, &f), BK_EINVAL);
    assert_null(f);
}

/* A plain add tests only the newest sub-filter: a key held by an older one goes in again (and counts),
 * while add_if_absent finds it anywhere; a repeat of a key in the newest sub-filter changes nothing. */
static void plain_add_tests_only_the_newest(void **state)
{
    (void)state;
    bk_scalable *f = make(100, 0.01, 2, 0.9, 0, 21);
    assert_int_equal(add(f, 21, 0), BK_OK);
    uint64_t i = 1;
    while (bk_scalable_filters(f) < 3) assert_int_equal(bk_scalable_add_hash(f, key_hash(21, i++)), BK_OK);
    tu_key k = tu_make_key(21, 0);
    uint64_t c = bk_scalable_count(f);
    assert_int_equal(bk_scalable_add_if_absent(f, k.b, sizeof k.b), BK_EEXISTS);
    assert_int_equal(bk_scalable_count(f), c);
    assert_int_equal(bk_scalable_add(f, k.b, sizeof k.b), BK_OK);
    assert_int_equal(bk_scalable_count(f), c + 1); /* re-inserted into the newest sub-filter */
    assert_int_equal(bk_scalable_add(f, k.b, sizeof k.b), BK_OK);
    assert_int_equal(bk_scalable_count(f), c + 1); /* now the newest holds it */
    assert_true(bk_scalable_contains(f, k.b, sizeof k.b));
    size_t done = 7;
    uint64_t h = bk_hash64(k.b, sizeof k.b, 21);
    assert_int_equal(bk_scalable_add_hashes(f, &h, 1, &done), BK_OK);
    assert_int_equal(done, 1);
    assert_int_equal(bk_scalable_count(f), c + 1); /* the newest holds it: not counted again */
    bk_scalable_free(f);
}

/* BK_SCALABLE_FIXED_SHARES: every sub-filter sized for p (1 - r) r^i exactly, as before the carried
 * budget; the default carries what the small sub-filters leave unused, so its bound is nearer
 * p (1 - r^L) and never above it. */
static void fixed_shares_and_carried_budget(void **state)
{
    (void)state;
    bk_scalable_options o = bk_scalable_default_options();
    o.flags = g_kind | BK_SCALABLE_FIXED_SHARES;
    bk_scalable_options d = bk_scalable_default_options();
    d.flags = g_kind;
    double r = BK_SCALABLE_DEFAULT_TIGHTENING, fixed = 0, carried = 0;
    for (uint32_t i = 0; i < 16; i++) {
        bk_geometry gf, gc;
        assert_int_equal(bk_scalable_layer_size(100, 0.01, &o, i, &gf), BK_OK);
        assert_int_equal(bk_scalable_layer_size(100, 0.01, &d, i, &gc), BK_OK);
        double want = 0.01 * (1 - r) * pow(r, (double)i);
        /* blocked: the FPR reported has the exact in-block term, up to 4.6% above the sizing's */
        if (!classic()) assert_true(gf.fpr <= want * 1.046);
        TU_ASSERT_WITHIN(gf.fpr, want, i < 6 && !classic() ? 0.98 : error_tolerance() + (classic() ? 0 : 0.046));
        fixed += gf.fpr;
        carried += gc.fpr;
        assert_true(carried <= 0.01 * (1 - pow(r, (double)i + 1)) * (classic() ? 1.02 : 1.046));
        assert_true(carried >= fixed * 0.98);
        if (i == 0) assert_true(gf.m == gc.m && gf.k == gc.k);
    }
    print_message("16 sub-filters from 100 keys: sum of errors %.5f fixed, %.5f carried (p (1 - r^16) = %.5f)\n",
                  fixed, carried, 0.01 * (1 - pow(r, 16)));
    if (!classic()) assert_true(carried > fixed); /* classic sub-filters use nearly all of their share */
    /* a chain made with the flag saves and loads with it (the sizing of its next sub-filters) */
    bk_scalable *f;
    assert_int_equal(bk_scalable_new(100, 0.01, &o, &f), BK_OK);
    for (uint64_t i = 0; i < 2000; i++) assert_int_equal(bk_scalable_add_hash(f, key_hash(23, i)), BK_OK);
    bk_filter *h, *g;
    assert_int_equal(bk_filter_wrap(BK_TYPE_SCALABLE, f, &h), BK_OK);
    void *buf;
    size_t len;
    assert_int_equal(bk_filter_save_alloc(h, &buf, &len), BK_OK);
    assert_int_equal(bk_filter_load_buffer(buf, len, 0, &g), BK_OK);
    bk_scalable *l = bk_filter_get(g, BK_TYPE_SCALABLE);
    for (uint64_t i = 2000; i < 20000; i++) {
        assert_int_equal(bk_scalable_add_hash(f, key_hash(23, i)), BK_OK);
        assert_int_equal(bk_scalable_add_hash(l, key_hash(23, i)), BK_OK);
    }
    assert_int_equal(bk_scalable_filters(f), bk_scalable_filters(l));
    for (uint32_t i = 0; i < bk_scalable_filters(f); i++) {
        bk_scalable_layer a, b;
        bk_scalable_get_layer(f, i, &a);
        bk_scalable_get_layer(l, i, &b);
        assert_true(a.bits == b.bits && a.k == b.k && a.error == b.error);
        bk_geometry gf;
        assert_int_equal(bk_scalable_layer_size(100, 0.01, &o, i, &gf), BK_OK);
        assert_true(a.bits == gf.m && a.k == gf.k);
    }
    bk_filter_buffer_free(buf);
    bk_filter_free(g);
    bk_filter_free(h);
}

/* A compact chain (BK_SCALABLE_COMPACT, the Redis module's BF keys): sub-filter 0 gets p / 2 and, small,
 * is a classic filter in the chain's own allocation (80 + 144 bytes for 100 keys at 1%); the later
 * sub-filters are of the chain's kind. The errors never pass p (1 - r^i / 2); no false negatives; the
 * measured FPR at capacity is at most RedisBloom's 0.5% and within the bound as the chain grows; saves
 * and loads (kind bit 9), clones, unions, clears and atomic adds keep the small sub-filter. */
static void compact_chain(void **state)
{
    (void)state;
    const double r = BK_SCALABLE_DEFAULT_TIGHTENING;
    bk_scalable_options o = bk_scalable_default_options(), fx;
    o.flags = g_kind | BK_SCALABLE_COMPACT;
    o.seed = 5;
    fx = o;
    fx.flags |= BK_SCALABLE_FIXED_SHARES;
    bk_geometry g0;
    assert_int_equal(bk_scalable_layer_size(100, 0.01, &o, 0, &g0), BK_OK);
    assert_int_equal(g0.m, 1152); /* bk_bloom_size(100, 0.005): 1103 bits, rounded up to 18 words */
    assert_int_equal(g0.k, 8);
    assert_true(g0.fpr <= 0.005);
    double carried = 0, fixed = 0;
    for (uint32_t i = 0; i < 20; i++) {
        bk_geometry gc, gf;
        assert_int_equal(bk_scalable_layer_size(100, 0.01, &o, i, &gc), BK_OK);
        assert_int_equal(bk_scalable_layer_size(100, 0.01, &fx, i, &gf), BK_OK);
        carried += gc.fpr;
        fixed += gf.fpr;
        double cumulative = 0.01 * (1 - 0.5 * pow(r, (double)i));
        assert_true(carried <= cumulative * (classic() ? 1.02 : 1.046));
        assert_true(fixed <= cumulative * (classic() ? 1.02 : 1.046));
        if (i > 0 && !classic()) assert_int_equal(gc.m % 1024, 0); /* blocked after the small one */
    }
    /* one allocation: the chain struct and the words */
    bk_scalable *f;
    assert_int_equal(bk_scalable_new(100, 0.01, &o, &f), BK_OK);
    assert_true(bk_scalable_compact(f));
    assert_int_equal(bk_scalable_memory_usage(f), 80 + 144);
    assert_int_equal(bk_scalable_bytes(f), 144);
    /* at capacity: FPR at most RedisBloom's (a classic filter of 1103 bits, k = 8: 0.50%) */
    for (uint64_t i = 0; i < 100; i++) assert_int_equal(add(f, 31, i), BK_OK);
    assert_int_equal(bk_scalable_filters(f), 1);
    double fpr = measure_fpr(f, 200000);
    print_message("compact, 100 keys: FPR %.5f (bound %.5f)\n", fpr, bk_scalable_fpr_bound(f));
    assert_true(fpr <= 0.005);
    assert_true(within_bound(fpr, bk_scalable_fpr_bound(f), 200000));
    /* grow to 100,000 keys: plain, atomic and batch adds */
    enum { N = 100000 };
    uint64_t *hs = malloc(N * sizeof *hs);
    for (uint64_t i = 0; i < N; i++) {
        tu_key k = tu_make_key(31, i);
        hs[i] = bk_hash64(k.b, sizeof k.b, 5);
    }
    for (uint64_t i = 100; i < 1000; i++) {
        bk_status s = bk_scalable_add_hash_atomic(f, hs[i]);
        assert_true(s == BK_OK || s == BK_EEXISTS);
    }
    assert_int_equal(bk_scalable_add_hashes(f, hs + 1000, N - 1000, NULL), BK_OK);
    for (uint64_t i = 0; i < N; i++)
        if (!bk_scalable_contains_hash(f, hs[i])) fail_msg("false negative: key %llu", (unsigned long long)i);
    uint8_t *res = malloc(N);
    size_t hits;
    assert_int_equal(bk_scalable_contains_hashes(f, hs, N, res, &hits), BK_OK);
    assert_int_equal(hits, N);
    uint32_t L = bk_scalable_filters(f);
    double bound = bk_scalable_fpr_bound(f);
    fpr = measure_fpr(f, 400000);
    print_message("compact, %u keys: %u sub-filters, FPR %.5f, bound %.5f\n", N, L, fpr, bound);
    assert_true(L > 5);
    assert_true(bound <= 0.01);
    assert_true(within_bound(fpr, bound, 400000));
    bk_scalable_layer ls;
    assert_int_equal(bk_scalable_get_layer(f, 0, &ls), BK_OK);
    assert_true(ls.bits == 1152 && ls.memory_bytes == 144 && ls.count == 100);
    assert_true(ls.classic); /* the small sub-filter 0 is classic, the later ones are the chain's kind */
    assert_int_equal(bk_scalable_get_layer(f, L - 1, &ls), BK_OK);
    assert_true(ls.classic == bk_scalable_classic(f));
    /* save, load: the same bytes and answers; then both grow alike */
    bk_filter *h, *g;
    assert_int_equal(bk_filter_wrap(BK_TYPE_SCALABLE, f, &h), BK_OK);
    void *buf, *buf2;
    size_t len, len2;
    assert_int_equal(bk_filter_save_alloc(h, &buf, &len), BK_OK);
    assert_int_equal(bk_filter_load_buffer(buf, len, 0, &g), BK_OK);
    assert_int_equal(bk_filter_save_alloc(g, &buf2, &len2), BK_OK);
    assert_true(len == len2 && memcmp(buf, buf2, len) == 0);
    bk_scalable *l = bk_filter_get(g, BK_TYPE_SCALABLE);
    assert_true(bk_scalable_compact(l));
    for (uint64_t i = 0; i < 20000; i++) assert_int_equal(has(l, 99, i), has(f, 99, i));
    /* a clone, a union into a fresh chain, a clear */
    bk_scalable *c, *u;
    assert_int_equal(bk_scalable_clone(f, &c), BK_OK);
    assert_int_equal(bk_scalable_new(100, 0.01, &o, &u), BK_OK);
    assert_int_equal(bk_scalable_union(u, f), BK_OK);
    assert_int_equal(bk_scalable_filters(u), L);
    for (uint64_t i = 0; i < N; i += 7) assert_true(bk_scalable_contains_hash(c, hs[i]) && bk_scalable_contains_hash(u, hs[i]));
    for (uint64_t i = 0; i < 20000; i++) assert_int_equal(has(c, 99, i), has(f, 99, i));
    bk_scalable_clear(c);
    assert_int_equal(bk_scalable_filters(c), 1);
    assert_int_equal(bk_scalable_count(c), 0);
    assert_false(bk_scalable_contains_hash(c, hs[0]));
    for (uint64_t i = 0; i < 1000; i++) assert_int_equal(bk_scalable_add_hash(c, hs[i]), BK_OK);
    for (uint64_t i = 0; i < 1000; i++) assert_true(bk_scalable_contains_hash(c, hs[i]));
    bk_scalable_free(c);
    bk_scalable_free(u);
    free(res);
    free(hs);
    bk_filter_buffer_free(buf);
    bk_filter_buffer_free(buf2);
    bk_filter_free(g);
    bk_filter_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(blocked_paths_agree),
        cmocka_unit_test(blocked_paths_save_the_same_bytes),
        cmocka_unit_test(one_key_adds_match_batches),
        cmocka_unit_test(zeroed_options_are_defaults),
        KINDS(grows_to_a_million),
        KINDS(other_growth_and_ratios),
        KINDS(nonscaling_fills_then_refuses),
        KINDS(growth_one_adds_same_size_layers),
        KINDS(add_reports_new_keys),
        KINDS(memory_limit),
        KINDS(bad_input),
        KINDS(forms_agree),
        KINDS(serialization_round_trip),
        KINDS(union_clone_clear),
        KINDS(plain_add_tests_only_the_newest),
        KINDS(fixed_shares_and_carried_budget),
        KINDS(compact_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
