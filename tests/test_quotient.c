/* The quotient filter: exact agreement with a model of its fingerprints under random adds and removes,
 * no false negatives across inserts, deletes, growth and merge, FPR against the bound at fixed seeds,
 * counters, full load, both code paths, serialization. */
#include "testutil.h"
#include <math.h>
#include <bloomkit/bloomkit.h>
#include "filters/internal.h"
#include "filters/testing.h"

/* ---- a model: the multiset of fingerprints, as the header defines them ---- */

__extension__ typedef unsigned __int128 tu_u128;

typedef struct {
    uint64_t fp, count;
} fpc;

typedef struct {
    fpc *v;
    size_t n, cap;
} model;

/* The fingerprint of h in a filter of `slots` home slots and r remainder bits: floor(h S 2^r / 2^64),
 * a remainder of 0 stored as 1 (for S = 2^q: the top q + r bits of h). */
static uint64_t fp_of(uint64_t slots, uint32_t r, uint64_t h)
{
    uint64_t fp = (uint64_t)(((tu_u128)h * slots) >> (64 - r));
    uint64_t mask = (UINT64_C(1) << r) - 1;
    if ((fp & mask) == 0) fp |= 1;
    return fp;
}

static size_t m_find(const model *m, uint64_t fp, bool *found)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->v[mid].fp < fp) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < m->n && m->v[lo].fp == fp;
    return lo;
}

static uint64_t m_count(const model *m, uint64_t fp)
{
    bool found;
    size_t i = m_find(m, fp, &found);
    return found ? m->v[i].count : 0;
}

static void m_add(model *m, uint64_t fp, uint64_t c)
{
    bool found;
    size_t i = m_find(m, fp, &found);
    if (found) {
        m->v[i].count += c;
        return;
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 256;
        m->v = realloc(m->v, m->cap * sizeof *m->v);
        assert_non_null(m->v);
    }
    memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof *m->v);
    m->v[i] = (fpc){ fp, c };
    m->n++;
}

static void m_sub(model *m, uint64_t fp, uint64_t c)
{
    bool found;
    size_t i = m_find(m, fp, &found);
    assert_true(found && m->v[i].count >= c);
    m->v[i].count -= c;
    if (m->v[i].count == 0) {
        memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof *m->v);
        m->n--;
    }
}

typedef struct {
    const model *m;
    size_t i;
    bool ok;
} visit_ctx;

static int visit_cmp(uint64_t fp, uint64_t count, void *ctx)
{
    visit_ctx *v = ctx;
    if (v->i >= v->m->n || v->m->v[v->i].fp != fp || v->m->v[v->i].count != count) {
        v->ok = false;
        return 1;
    }
    v->i++;
    return 0;
}

/* The filter holds exactly the model: enumeration, counters, invariants. */
static void assert_matches(const bk_quotient *f, const model *m)
{
    assert_int_equal(bk__quotient_check(f), BK_OK);
    visit_ctx v = { m, 0, true };
    assert_int_equal(bk_quotient_foreach(f, visit_cmp, &v), 0);
    assert_true(v.ok);
    assert_int_equal(v.i, m->n);
    assert_int_equal(bk_quotient_distinct(f), m->n);
}

/* A filter of `slots` home slots: 2^q made by bk_quotient_new_qr (the 1.0 layout) when pow2, else by
 * bk_quotient_new_slots. */
static bk_quotient *make_sr(uint64_t slots, uint32_t r, double max_load, bk_quotient_path path, uint64_t seed,
                            bool pow2)
{
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.max_load = max_load;
    o.seed = seed;
    bk_quotient *f = NULL;
    if (pow2) assert_int_equal(bk_quotient_new_qr((uint32_t)__builtin_ctzll(slots), r, &o, &f), BK_OK);
    else assert_int_equal(bk_quotient_new_slots(slots, r, &o, &f), BK_OK);
    assert_int_equal(bk_quotient_slots(f), slots);
    if (path != BK_QUOTIENT_AUTO) assert_int_equal(bk_quotient_set_path(f, path), BK_OK);
    return f;
}

static bk_quotient *make_qr(uint32_t q, uint32_t r, double max_load, bk_quotient_path path, uint64_t seed)
{
    return make_sr(UINT64_C(1) << q, r, max_load, path, seed, true);
}

/* A hash whose fingerprint in a filter of `slots` slots and r bits is fp (fp's remainder not 0): the
 * hashes with that fingerprint are the interval [ceil(fp 2^64 / M), ceil((fp + 1) 2^64 / M)), M = S 2^r;
 * a random one of it. */
static uint64_t hash_with_fp(uint64_t fp, uint64_t slots, uint32_t r, uint64_t *rng)
{
    tu_u128 M = (tu_u128)slots << r;
    tu_u128 lo = (((tu_u128)fp << 64) + M - 1) / M;
    tu_u128 hi = (((tu_u128)(fp + 1) << 64) + M - 1) / M; /* exclusive */
    uint64_t h = (uint64_t)(lo + tu_splitmix(rng) % (uint64_t)(hi - lo));
    assert_int_equal(fp_of(slots, r, h), fp);
    return h;
}

/* Random adds (single and multiple, some huge), removes of present fingerprints, in a small filter with
 * few remainder bits (long runs, many shared fingerprints) at high load, checked against the model
 * after every operation; both code paths in lockstep, with identical bytes. */
static void run_model(uint64_t S, uint32_t r, double max_load, uint64_t seed, int ops)
{
    bool both = bk_quotient_bmi2_available(), pow2 = (S & (S - 1)) == 0;
    bk_quotient *a = make_sr(S, r, max_load, BK_QUOTIENT_PORTABLE, 7, pow2);
    bk_quotient *b = both ? make_sr(S, r, max_load, BK_QUOTIENT_BMI2, 7, pow2) : NULL;
    assert_int_equal(bk_quotient_path_of(a), BK_QUOTIENT_PORTABLE);
    model m = { NULL, 0, 0 };
    uint64_t rng = seed, fulls = 0;
    for (int i = 0; i < ops; i++) {
        uint64_t die = tu_splitmix(&rng) % 100;
        if (die < 55 || m.n == 0) {
            uint64_t h = tu_splitmix(&rng);
            /* cluster keys on few quotients now and then: long runs and clusters */
            if (die < 10) h = (h & ~(UINT64_C(0xF) << 60)) | (UINT64_C(3) << 60);
            uint64_t c = 1;
            if (die % 7 == 0) c = 1 + tu_splitmix(&rng) % 300;
            if (die == 3) c = UINT64_C(1) << (tu_splitmix(&rng) % 40);
            bk_status s = bk_quotient_add_count_hash(a, h, c);
            if (b) assert_int_equal(bk_quotient_add_count_hash(b, h, c), s);
            if (s == BK_EFULL) {
                fulls++;
                continue;
            }
            assert_int_equal(s, BK_OK);
            m_add(&m, fp_of(S, r, h), c);
            assert_int_equal(bk_quotient_count_hash(a, h), m_count(&m, fp_of(S, r, h)));
        } else {
            fpc e = m.v[tu_splitmix(&rng) % m.n];
            uint64_t h = hash_with_fp(e.fp, S, r, &rng);
            uint64_t c = die % 5 == 0 ? e.count : 1 + tu_splitmix(&rng) % e.count;
            if (die % 11 == 0) c = e.count + 1; /* more than present: refused */
            bk_status s = bk_quotient_remove_count_hash(a, h, c);
            if (b) assert_int_equal(bk_quotient_remove_count_hash(b, h, c), s);
            if (c > e.count) {
                assert_int_equal(s, BK_ENOTFOUND);
            } else {
                assert_int_equal(s, BK_OK);
                m_sub(&m, e.fp, c);
            }
            assert_int_equal(bk_quotient_count_hash(a, h), m_count(&m, e.fp));
        }
        if (i % 16 == 0 || i == ops - 1) assert_matches(a, &m);
        if (b) {
            size_t na, nb;
            const uint64_t *wa = bk__quotient_words(a, &na), *wb = bk__quotient_words(b, &nb);
            assert_int_equal(na, nb);
            assert_memory_equal(wa, wb, na * 8);
        }
    }
    assert_true(fulls > 0 || max_load < 0.5); /* the high-load runs reach the limit */
    /* every fingerprint in the model answers present with its count, through both paths */
    for (size_t i = 0; i < m.n; i++) {
        uint64_t h = hash_with_fp(m.v[i].fp, S, r, &rng);
        assert_true(bk_quotient_contains_hash(a, h));
        assert_int_equal(bk_quotient_count_hash(a, h), m.v[i].count);
        if (b) assert_int_equal(bk_quotient_count_hash(b, h), m.v[i].count);
    }
    free(m.v);
    bk_quotient_free(a);
    bk_quotient_free(b);
}

static void model_small_dense(void **state)
{
    (void)state;
    run_model(128, 3, 1.0, 1, 6000);   /* 128 slots, r = 3: tiny, full all the time */
    run_model(256, 2, 0.98, 2, 6000);  /* the smallest remainder: base-3 counter digits */
    run_model(200, 3, 1.0, 5, 6000);   /* slots not a power of two, not a whole block */
    run_model(129, 2, 0.97, 6, 6000);
}

static void model_medium(void **state)
{
    (void)state;
    run_model(1024, 5, 0.95, 3, 20000);
    run_model(512, 13, 1.0, 4, 8000);  /* remainders across word boundaries */
    run_model(1000, 5, 0.95, 7, 20000);
    run_model(701, 13, 1.0, 8, 8000);
    /* the widest remainders: a move of several slots shifts the remainder words by whole words */
    run_model(640, 32, 1.0, 9, 8000);
    run_model(333, 27, 0.97, 10, 8000);
}

/* ---- keys as bytes: no false negatives, FPR against the bound, growth ---- */

static double measure_fpr(const bk_quotient *f, uint64_t set, uint64_t n)
{
    uint64_t fp = 0;
    for (uint64_t i = 0; i < n; i++) {
        tu_key k = tu_make_key(set, i);
        fp += bk_quotient_contains(f, k.b, sizeof k.b);
    }
    return (double)fp / (double)n;
}

static void add_keys(bk_quotient *f, uint64_t set, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        tu_key k = tu_make_key(set, i);
        assert_int_equal(bk_quotient_add(f, k.b, sizeof k.b), BK_OK);
    }
}

static void assert_all_present(const bk_quotient *f, uint64_t set, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        tu_key k = tu_make_key(set, i);
        if (!bk_quotient_contains(f, k.b, sizeof k.b)) fail_msg("false negative: key %llu", (unsigned long long)i);
    }
}

static void fpr_case(double p, uint64_t seed)
{
    const uint64_t n = 120000, probes = 400000;
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.seed = seed;
    /* two spare remainder bits, so the filter can double twice */
    bk_quotient_geometry g;
    assert_int_equal(bk_quotient_size(n, p, &o, &g), BK_OK);
    assert_true(g.fpr <= p);
    o.remainder_bits = g.remainder_bits + 2;
    bk_quotient *f = NULL;
    assert_int_equal(bk_quotient_new(n, p, &o, &f), BK_OK);
    uint64_t S = bk_quotient_slots(f);
    uint32_t r = bk_quotient_remainder_bits(f);
    /* fill to 90% of the slots: the load the bound is stated for */
    uint64_t fill = (uint64_t)(0.90 * (double)S);
    add_keys(f, 1, 0, fill);
    assert_all_present(f, 1, 0, fill);
    for (int g2 = 0; g2 <= 2; g2++) {
        S = bk_quotient_slots(f);
        r = bk_quotient_remainder_bits(f);
        double bound = bk_quotient_fpr_slots(fill, S, r);
        /* enough probes for about 500 false positives: the measurement's noise is then about 5% */
        uint64_t np = (uint64_t)(500 / bound) > probes ? (uint64_t)(500 / bound) : probes;
        double fpr = measure_fpr(f, 1000 + (uint64_t)g2, np);
        print_message("p %g doubling %d: S %llu r %u load %.3f fpr %.5f bound %.5f ratio %.3f\n", p, g2,
                      (unsigned long long)S, r, (double)bk_quotient_slots_used(f) / (double)S, fpr, bound, fpr / bound);
        assert_true(fpr <= 1.15 * bound);
        /* two remainder bits planned: two doublings keep the error rate it was made for */
        assert_true(fpr <= 1.1 * p);
        assert_true(bk_quotient_fpr_target(f) == p);
        assert_true(bk_quotient_grown_fpr(f, (uint32_t)(2 - g2)) <= p);
        if (g2 == 2) break;
        assert_int_equal(bk_quotient_grow(f), BK_OK);
        assert_int_equal(bk__quotient_check(f), BK_OK);
        assert_all_present(f, 1, 0, fill);
        /* refill to the same load: the doubled filter now holds twice the keys */
        add_keys(f, 1, fill, 2 * fill);
        fill *= 2;
        assert_all_present(f, 1, 0, fill);
    }
    /* at the sized load with the sized remainder, the FPR is within the target */
    bk_quotient_free(f);
    o.remainder_bits = 0;
    assert_int_equal(bk_quotient_new(n, p, &o, &f), BK_OK);
    add_keys(f, 2, 0, n);
    double fpr = measure_fpr(f, 3, (uint64_t)(500 / p));
    print_message("p %g sized: r %u fpr %.5f bound %.5f\n", p, bk_quotient_remainder_bits(f), fpr,
                  bk_quotient_fpr_slots(n, bk_quotient_slots(f), bk_quotient_remainder_bits(f)));
    assert_true(fpr <= 1.15 * p);
    bk_quotient_free(f);
}

/* The target stays what the filter was made for; bk_quotient_grown_fpr predicts each doubling's
 * bound at the load limit, so a caller can grow only while it holds. */
static void growth_keeps_target(void **state)
{
    (void)state;
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    bk_quotient_geometry g;
    assert_int_equal(bk_quotient_size(5000, 0.01, &o, &g), BK_OK);
    o.remainder_bits = g.remainder_bits + 3;
    bk_quotient *f = NULL;
    assert_int_equal(bk_quotient_new(5000, 0.01, &o, &f), BK_OK);
    uint64_t S = bk_quotient_slots(f);
    uint32_t r = bk_quotient_remainder_bits(f);
    assert_true(bk_quotient_grown_fpr(f, 0) ==
                bk_quotient_fpr_slots((uint64_t)floor(0.95 * (double)S), S, r));
    int grown = 0;
    while (bk_quotient_grown_fpr(f, 1) <= 0.01) {
        assert_int_equal(bk_quotient_grow_keep_fpr(f), BK_OK);
        grown++;
        assert_true(bk_quotient_fpr_target(f) == 0.01);
    }
    assert_int_equal(grown, 3); /* exactly the planned bits */
    /* the next doubling would pass 1.1 x the target: refused, nothing changed */
    size_t nw0, nw1;
    const uint64_t *w0 = bk__quotient_words(f, &nw0);
    assert_int_equal(bk_quotient_grow_keep_fpr(f), BK_EFULL);
    assert_true(bk__quotient_words(f, &nw1) == w0 && nw1 == nw0);
    assert_int_equal(bk_quotient_slots(f), 8 * S);
    assert_int_equal(bk_quotient_grow_keep_fpr(NULL), BK_EINVAL);
    assert_int_equal(bk_quotient_slots(f), 8 * S);
    assert_true(bk_quotient_grown_fpr(f, 0) <= 0.01);
    assert_true(bk_quotient_grown_fpr(f, 1) > 0.01);
    assert_true(isnan(bk_quotient_grown_fpr(f, bk_quotient_remainder_bits(f))));
    /* a doubling past the plan: the filter says its error rate is now above the target when full */
    assert_int_equal(bk_quotient_grow(f), BK_OK);
    uint64_t n = (uint64_t)(0.95 * (double)bk_quotient_slots(f)) - 10;
    for (uint64_t i = 0; i < n; i++) assert_int_equal(bk_quotient_add_u64(f, i), BK_OK);
    bk_stats st;
    bk_quotient_stats(f, &st);
    assert_true(st.fpr_target == 0.01);
    assert_true(st.fpr_now > 0.01 && st.saturated);
    bk_quotient_free(f);
}

static void fpr_one_percent(void **state)
{
    (void)state;
    fpr_case(0.01, 11);
}

static void fpr_tenth_percent(void **state)
{
    (void)state;
    fpr_case(0.001, 12);
}

/* ---- counters ---- */

static void counters(void **state)
{
    (void)state;
    bk_quotient *f = NULL;
    assert_int_equal(bk_quotient_new(30000, 0.01, NULL, &f), BK_OK);
    /* a million occurrences cost a few slots */
    uint64_t h = bk_hash64("hot", 3, 0);
    for (int i = 0; i < 1000; i++) assert_int_equal(bk_quotient_add_hash(f, h), BK_OK);
    assert_int_equal(bk_quotient_add_count_hash(f, h, 999000), BK_OK);
    assert_int_equal(bk_quotient_count(f, "hot", 3), 1000000);
    print_message("a million occurrences at r = %u: %llu slots\n", bk_quotient_remainder_bits(f),
                  (unsigned long long)bk_quotient_slots_used(f));
    assert_true(bk_quotient_slots_used(f) <= 7); /* 3 + 4 base-63 digits at r = 6 */
    assert_int_equal(bk_quotient_distinct(f), 1);
    assert_int_equal(bk_quotient_total(f), 1000000);
    /* keys with known multiplicities: counts exact when no other key shares the fingerprint, never under */
    uint64_t S = bk_quotient_slots(f);
    uint32_t r = bk_quotient_remainder_bits(f);
    model m = { NULL, 0, 0 };
    m_add(&m, fp_of(S, r, h), 1000000);
    for (uint64_t i = 0; i < 5000; i++) {
        tu_key k = tu_make_key(9, i);
        uint64_t c = 1 + i % 13;
        assert_int_equal(bk_quotient_add_count_hash(f, bk_hash64(k.b, sizeof k.b, 0), c), BK_OK);
        m_add(&m, fp_of(S, r, bk_hash64(k.b, sizeof k.b, 0)), c);
    }
    uint64_t exact = 0, shared = 0;
    for (uint64_t i = 0; i < 5000; i++) {
        tu_key k = tu_make_key(9, i);
        uint64_t got = bk_quotient_count(f, k.b, sizeof k.b), want = 1 + i % 13;
        assert_true(got >= want);
        assert_int_equal(got, m_count(&m, fp_of(S, r, bk_hash64(k.b, sizeof k.b, 0))));
        if (got == want) exact++;
        else shared++;
    }
    print_message("counts: %llu exact, %llu shared a fingerprint\n", (unsigned long long)exact,
                  (unsigned long long)shared);
    assert_true(exact > 4900);
    assert_matches(f, &m);
    /* removes bring the count down to what other keys sharing its fingerprint added */
    uint64_t others = m_count(&m, fp_of(S, r, h)) - 1000000;
    for (int i = 0; i < 10; i++) assert_int_equal(bk_quotient_remove_hash(f, h), BK_OK);
    assert_int_equal(bk_quotient_count_hash(f, h), others + 999990);
    assert_int_equal(bk_quotient_remove_count_hash(f, h, others + 999991), BK_ENOTFOUND);
    assert_int_equal(bk_quotient_remove_count_hash(f, h, 999990), BK_OK);
    assert_int_equal(bk_quotient_count_hash(f, h), others);
    m_sub(&m, fp_of(S, r, h), 1000000);
    assert_matches(f, &m);
    free(m.v);
    bk_quotient_free(f);
}

/* ---- deletes ---- */

static void deletes(void **state)
{
    (void)state;
    bk_quotient *f = NULL;
    const uint64_t n = 50000;
    assert_int_equal(bk_quotient_new(n, 0.001, NULL, &f), BK_OK);
    add_keys(f, 4, 0, n);
    uint64_t gone = 0;
    for (uint64_t i = 0; i < n; i += 2) {
        tu_key k = tu_make_key(4, i);
        assert_int_equal(bk_quotient_remove(f, k.b, sizeof k.b), BK_OK);
    }
    assert_int_equal(bk__quotient_check(f), BK_OK);
    for (uint64_t i = 1; i < n; i += 2) {
        tu_key k = tu_make_key(4, i);
        assert_true(bk_quotient_contains(f, k.b, sizeof k.b));
    }
    for (uint64_t i = 0; i < n; i += 2) {
        tu_key k = tu_make_key(4, i);
        gone += !bk_quotient_contains(f, k.b, sizeof k.b);
    }
    assert_true(gone >= n / 2 - n / 200); /* only those sharing a fingerprint with a kept key remain */
    /* remove everything: the filter is empty again */
    for (uint64_t i = 1; i < n; i += 2) {
        tu_key k = tu_make_key(4, i);
        assert_int_equal(bk_quotient_remove(f, k.b, sizeof k.b), BK_OK);
    }
    assert_int_equal(bk_quotient_slots_used(f), 0);
    assert_int_equal(bk_quotient_total(f), 0);
    size_t nw;
    const uint64_t *w = bk__quotient_words(f, &nw);
    for (size_t i = 0; i < nw; i++) assert_int_equal(w[i], 0);
    assert_int_equal(bk_quotient_remove(f, "x", 1), BK_ENOTFOUND);
    bk_quotient_free(f);
}

/* ---- merge ---- */

static void merge(void **state)
{
    (void)state;
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.seed = 99;
    bk_quotient *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(bk_quotient_new(40000, 0.01, &o, &a), BK_OK);
    assert_int_equal(bk_quotient_new(40000, 0.01, &o, &b), BK_OK);
    add_keys(a, 5, 0, 15000);
    add_keys(b, 5, 10000, 25000); /* 5000 shared keys */
    bk_quotient *a0;
    assert_int_equal(bk_quotient_clone(a, &a0), BK_OK);
    assert_int_equal(bk_quotient_union(a, b), BK_OK);
    assert_int_equal(bk__quotient_check(a), BK_OK);
    assert_all_present(a, 5, 0, 25000);
    assert_int_equal(bk_quotient_total(a), 30000);
    for (uint64_t i = 10000; i < 15000; i++) {
        tu_key k = tu_make_key(5, i);
        assert_true(bk_quotient_count(a, k.b, sizeof k.b) >= 2);
    }
    /* a grown filter takes an ungrown one's fingerprints, and grow(a0 + b) = grow(a0) + b, byte for byte */
    assert_int_equal(bk_quotient_clone(a0, &c), BK_OK);
    assert_int_equal(bk_quotient_grow(c), BK_OK);
    assert_int_equal(bk_quotient_compatible(c, b), BK_OK);
    assert_int_equal(bk_quotient_union(c, b), BK_OK);
    assert_all_present(c, 5, 0, 25000);
    assert_int_equal(bk_quotient_total(c), 30000);
    assert_int_equal(bk_quotient_grow(a), BK_OK);
    size_t na, nb;
    const uint64_t *wa = bk__quotient_words(a, &na), *wb = bk__quotient_words(c, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(wa, wb, na * 8);
    /* the other way the remainder would need a bit the grown filter no longer has: refused */
    assert_int_equal(bk_quotient_union(a0, c), BK_EINCOMPAT);
    bk_quotient *d = NULL;
    bk_quotient_options o2 = o;
    o2.remainder_bits = 9;
    assert_int_equal(bk_quotient_new(40000, 0.01, &o2, &d), BK_OK);
    assert_int_equal(bk_quotient_union(d, a), BK_EINCOMPAT); /* 9 remainder bits: a longer fingerprint */
    bk_quotient_free(d);
    o2 = o;
    o2.seed = 100;
    assert_int_equal(bk_quotient_new(40000, 0.01, &o2, &d), BK_OK);
    assert_int_equal(bk_quotient_union(a, d), BK_EINCOMPAT);
    bk_quotient_free(d);
    /* a union that does not fit: BK_EFULL, dst unchanged */
    assert_int_equal(bk_quotient_new(20000, 0.01, &o, &d), BK_OK);
    add_keys(d, 6, 0, 15000);
    bk_quotient *d0;
    assert_int_equal(bk_quotient_clone(d, &d0), BK_OK);
    assert_int_equal(bk_quotient_union(d, a), BK_EFULL); /* 15000 + 25000 keys in 31129 slots */
    wa = bk__quotient_words(d, &na);
    wb = bk__quotient_words(d0, &nb);
    assert_memory_equal(wa, wb, na * 8);
    assert_int_equal(bk_quotient_total(d), 15000);
    bk_quotient_free(d);
    bk_quotient_free(d0);
    bk_quotient_free(a);
    bk_quotient_free(a0);
    bk_quotient_free(b);
    bk_quotient_free(c);
}

/* foreach + add_fingerprint: an offline conversion into one more quotient bit gives the grown filter,
 * byte for byte; counts and every key carry over; what cannot be converted is refused */
typedef struct {
    bk_quotient *dst;
    uint64_t slots;
    uint32_t r;
    bk_status s;
} convert_ctx;

static int convert_one(uint64_t fp, uint64_t count, void *vc)
{
    convert_ctx *c = vc;
    if ((c->slots & (c->slots - 1)) == 0) /* the 1.0 call, for 2^q slots */
        c->s = bk_quotient_add_fingerprint(c->dst, fp, (uint32_t)__builtin_ctzll(c->slots), c->r, count);
    else
        c->s = bk_quotient_add_fingerprint_slots(c->dst, fp, c->slots, c->r, count);
    return c->s != BK_OK;
}

static void offline_conversion_case(bool pow2)
{
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.seed = 77;
    o.power_of_two_slots = pow2;
    bk_quotient *a = NULL, *b = NULL, *grown = NULL, *longer = NULL;
    assert_int_equal(bk_quotient_new(20000, 0.01, &o, &a), BK_OK);
    add_keys(a, 7, 0, 10000);
    tu_key k0 = tu_make_key(7, 0);
    for (int i = 0; i < 3; i++) assert_int_equal(bk_quotient_add(a, k0.b, sizeof k0.b), BK_OK);
    uint64_t S = bk_quotient_slots(a);
    uint32_t q = bk_quotient_quotient_bits(a), r = bk_quotient_remainder_bits(a);
    assert_true(pow2 ? S == UINT64_C(1) << q : (S & (S - 1)) != 0);
    if (pow2) assert_int_equal(bk_quotient_new_qr(q + 1, r - 1, &o, &b), BK_OK);
    else assert_int_equal(bk_quotient_new_slots(2 * S, r - 1, &o, &b), BK_OK);
    convert_ctx c = { b, S, r, BK_OK };
    assert_int_equal(bk_quotient_foreach(a, convert_one, &c), 0);
    assert_int_equal(c.s, BK_OK);
    assert_int_equal(bk__quotient_check(b), BK_OK);
    assert_all_present(b, 7, 0, 10000);
    assert_int_equal(bk_quotient_count(b, k0.b, sizeof k0.b), 4);
    assert_int_equal(bk_quotient_total(b), bk_quotient_total(a));
    /* a remainder bit moved into the quotient: two remainders that differ in only that bit and the
     * lowest, one of them 0 in the other bits, now share a fingerprint (a rare merge of two entries) */
    assert_true(bk_quotient_distinct(b) <= bk_quotient_distinct(a));
    assert_true(bk_quotient_distinct(b) + 5 >= bk_quotient_distinct(a));
    assert_int_equal(bk_quotient_clone(a, &grown), BK_OK);
    assert_int_equal(bk_quotient_grow(grown), BK_OK);
    size_t nb, ng;
    const uint64_t *wb = bk__quotient_words(b, &nb), *wg = bk__quotient_words(grown, &ng);
    assert_int_equal(nb, ng);
    assert_memory_equal(wb, wg, nb * 8);
    /* a longer fingerprint than the source holds cannot be made up */
    if (pow2) assert_int_equal(bk_quotient_new_qr(q, r + 1, &o, &longer), BK_OK);
    else assert_int_equal(bk_quotient_new_slots(S, r + 1, &o, &longer), BK_OK);
    convert_ctx c2 = { longer, S, r, BK_OK };
    assert_int_not_equal(bk_quotient_foreach(a, convert_one, &c2), 0);
    assert_int_equal(c2.s, BK_EINCOMPAT);
    /* bad arguments */
    assert_int_equal(bk_quotient_add_fingerprint(b, 1, q, r, 0), BK_EINVAL);
    assert_int_equal(bk_quotient_add_fingerprint(b, UINT64_C(1) << (q + r), q, r, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_add_fingerprint(b, 1, 40, 25, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_add_fingerprint_slots(b, S << r, S, r, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_add_fingerprint_slots(b, 1, S, 0, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_add_fingerprint_slots(b, 1, UINT64_C(3) << 40, 30, 1), BK_EINVAL);
    /* a fingerprint space that is not b's times a power of two: refused */
    assert_int_equal(bk_quotient_add_fingerprint_slots(b, 1, 3 * S, r, 1), BK_EINCOMPAT);
    assert_int_equal(bk_quotient_total(b), bk_quotient_total(a)); /* the refusals changed nothing */
    /* max_load: the default, and what the options asked */
    assert_true(bk_quotient_max_load(a) == 0.95);
    bk_quotient_options o3 = o;
    o3.max_load = 0.8;
    bk_quotient *m = NULL;
    assert_int_equal(bk_quotient_new(20000, 0.01, &o3, &m), BK_OK);
    assert_true(bk_quotient_max_load(m) == 0.8);
    bk_quotient_free(m);
    bk_quotient_free(longer);
    bk_quotient_free(grown);
    bk_quotient_free(b);
    bk_quotient_free(a);
}

static void offline_conversion(void **state)
{
    (void)state;
    offline_conversion_case(true);
    offline_conversion_case(false);
}

/* ---- full load ---- */

static void full_load(void **state)
{
    (void)state;
    for (int path = 1; path <= 2; path++) {
        if (path == 2 && !bk_quotient_bmi2_available()) {
            print_message("full_load: this CPU has no BMI2; BMI2 path not exercised\n");
            break;
        }
        bk_quotient *f = make_qr(9, 8, 1.0, (bk_quotient_path)path, 3);
        uint64_t i = 0, refused = 0, nacc = 0;
        uint64_t *acc = malloc(2000 * sizeof *acc);
        for (; i < 2000 && refused < 50; i++) {
            tu_key k = tu_make_key(7, i);
            size_t n0;
            const uint64_t *w = bk__quotient_words(f, &n0);
            uint64_t *before = malloc(n0 * 8);
            memcpy(before, w, n0 * 8);
            uint64_t used = bk_quotient_slots_used(f);
            bk_status s = bk_quotient_add(f, k.b, sizeof k.b);
            if (s == BK_EFULL) {
                refused++;
                assert_memory_equal(before, w, n0 * 8); /* nothing changed */
                assert_int_equal(bk_quotient_slots_used(f), used);
            } else {
                assert_int_equal(s, BK_OK);
                acc[nacc++] = i;
            }
            free(before);
        }
        assert_true(refused > 0);
        assert_true(bk_quotient_slots_used(f) >= 500); /* nearly all 512 home slots */
        assert_int_equal(bk_quotient_total(f), nacc);
        assert_int_equal(bk__quotient_check(f), BK_OK);
        for (uint64_t j = 0; j < nacc; j++) { /* every key accepted is present */
            tu_key k = tu_make_key(7, acc[j]);
            assert_true(bk_quotient_contains(f, k.b, sizeof k.b));
        }
        assert_int_equal(bk_quotient_grow(f), BK_OK);
        for (uint64_t j = 0; j < nacc; j++) {
            tu_key k = tu_make_key(7, acc[j]);
            assert_true(bk_quotient_contains(f, k.b, sizeof k.b));
        }
        free(acc);
        /* growth made room again */
        tu_key k = tu_make_key(7, 100000);
        assert_int_equal(bk_quotient_add(f, k.b, sizeof k.b), BK_OK);
        bk_quotient_free(f);
    }
    /* the default load limit: 95% of the home slots */
    bk_quotient *f = make_qr(10, 8, 0, BK_QUOTIENT_AUTO, 3);
    uint64_t ok = 0;
    for (uint64_t i = 0; i < 2000; i++) {
        tu_key k = tu_make_key(8, i);
        if (bk_quotient_add(f, k.b, sizeof k.b) == BK_OK) ok++;
    }
    assert_true(bk_quotient_slots_used(f) <= 972 && bk_quotient_slots_used(f) >= 960);
    assert_int_equal(bk_quotient_total(f), ok);
    bk_quotient_free(f);
}

/* ---- NULL and bad arguments: as the other types (NULL is fine for free and clear; BK_EINVAL, 0 or
 * nothing visited for the rest), and a load limit too low to size is refused, not a huge array ---- */

static int visit_count(uint64_t fp, uint64_t c, void *ctx)
{
    (void)fp;
    (void)c;
    (*(int *)ctx)++;
    return 0;
}

static void null_and_bad_arguments(void **state)
{
    (void)state;
    bk_quotient_free(NULL);
    bk_quotient_clear(NULL);
    int visits = 0;
    assert_int_equal(bk_quotient_foreach(NULL, visit_count, &visits), 0);
    assert_int_equal(visits, 0);
    assert_int_equal(bk_quotient_count(NULL, "a", 1), 0);
    assert_int_equal(bk_quotient_count_hash(NULL, 42), 0);
    bk_quotient *c = (bk_quotient *)0x1;
    assert_int_equal(bk_quotient_clone(NULL, &c), BK_EINVAL);
    assert_null(c);
    assert_int_equal(bk_quotient_add(NULL, "a", 1), BK_EINVAL);
    assert_int_equal(bk_quotient_add_hash(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_add_u64(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_add_count_hash(NULL, 1, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_remove(NULL, "a", 1), BK_EINVAL);
    assert_int_equal(bk_quotient_remove_hash(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_remove_u64(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_remove_count_hash(NULL, 1, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_grow(NULL), BK_EINVAL);
    assert_int_equal(bk_quotient_union(NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_quotient_compatible(NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_quotient_add_fingerprint(NULL, 1, 10, 8, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_add_fingerprint_slots(NULL, 1, 1024, 8, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_set_path(NULL, BK_QUOTIENT_AUTO), BK_EINVAL);
    uint64_t h[2] = { 1, 2 }, counts[2];
    size_t done = 7;
    assert_int_equal(bk_quotient_add_hashes(NULL, h, 2, &done), BK_EINVAL);
    assert_int_equal(done, 0);
    assert_int_equal(bk_quotient_count_hashes(NULL, h, 2, counts), BK_EINVAL);

    bk_quotient *f = NULL;
    assert_int_equal(bk_quotient_new(100, 0.01, NULL, &f), BK_OK);
    assert_int_equal(bk_quotient_add(f, "a", 1), BK_OK);
    /* a NULL key with a length: refused, nothing counted */
    assert_int_equal(bk_quotient_add(f, NULL, 3), BK_EINVAL);
    assert_int_equal(bk_quotient_remove(f, NULL, 3), BK_EINVAL);
    assert_int_equal(bk_quotient_count(f, NULL, 3), 0);
    assert_int_equal(bk_quotient_count(f, "a", 1), 1);
    assert_int_equal(bk_quotient_add_count_hash(f, 1, 0), BK_EINVAL);
    assert_int_equal(bk_quotient_foreach(f, NULL, NULL), 0);
    assert_int_equal(bk_quotient_clone(f, NULL), BK_EINVAL);
    assert_int_equal(bk_quotient_union(f, NULL), BK_EINVAL);
    assert_int_equal(bk_quotient_union(NULL, f), BK_EINVAL);
    done = 7;
    assert_int_equal(bk_quotient_add_hashes(f, NULL, 2, &done), BK_EINVAL);
    assert_int_equal(done, 0);
    size_t hits = 7;
    assert_int_equal(bk_quotient_contains_hashes(f, NULL, 2, NULL, &hits), BK_EINVAL);
    assert_int_equal(hits, 0);
    const void *keys[2] = { "a", NULL };
    size_t lens[2] = { 1, 3 };
    assert_int_equal(bk_quotient_contains_many(f, keys, lens, 2, NULL, &hits), BK_EINVAL);
    assert_int_equal(bk_quotient_add_many(f, keys, lens, 2, &done), BK_EINVAL);
    assert_int_equal(bk_quotient_count_hashes(f, h, 2, NULL), BK_EINVAL);
    assert_int_equal(bk_quotient_total(f), 1);
    visits = 0;
    assert_int_equal(bk_quotient_foreach(f, visit_count, &visits), 0);
    assert_int_equal(visits, 1);
    bk_quotient_clear(f);
    assert_int_equal(bk_quotient_total(f), 0);
    bk_quotient_free(f);

    /* one key with a load limit of 1e-9 would want 10^9 slots: refused as a bad option, for
     * bk_quotient_size (with and without a geometry) and bk_quotient_new alike */
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.max_load = 1e-9;
    bk_quotient_geometry g;
    memset(&g, 0xab, sizeof g);
    assert_int_equal(bk_quotient_size(1, 0.01, &o, &g), BK_EINVAL);
    assert_int_equal(bk_quotient_size(1, 0.01, &o, NULL), BK_EINVAL);
    f = (bk_quotient *)0x1;
    assert_int_equal(bk_quotient_new(1, 0.01, &o, &f), BK_EINVAL);
    assert_null(f);
    /* at the lowest load limit allowed, one key takes the smallest array */
    o.max_load = BK_QUOTIENT_MIN_MAX_LOAD;
    assert_int_equal(bk_quotient_size(1, 0.01, &o, &g), BK_OK);
    assert_int_equal(g.slots, UINT64_C(1) << BK_QUOTIENT_MIN_QBITS);
    assert_true(g.bytes < 4096);
}

/* ---- growth limits, bad input, stats ---- */

static void limits_and_stats(void **state)
{
    (void)state;
    bk_quotient *f = NULL;
    assert_int_equal(bk_quotient_new(0, 0.01, NULL, &f), BK_EINVAL);
    assert_null(f);
    assert_int_equal(bk_quotient_new(100, 0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_quotient_new(100, 1, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_quotient_new(UINT64_C(1) << 40, 0.01, NULL, &f), BK_ETOOBIG);
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.max_load = 1.5;
    assert_int_equal(bk_quotient_new(100, 0.01, &o, &f), BK_EINVAL);
    /* a load limit below BK_QUOTIENT_MIN_MAX_LOAD (a filter mostly empty by design) is refused */
    o.max_load = 1e-9;
    assert_int_equal(bk_quotient_new(100, 0.01, &o, &f), BK_EINVAL);
    assert_int_equal(bk_quotient_size(100, 0.01, &o, NULL), BK_EINVAL);
    o.max_load = BK_QUOTIENT_MIN_MAX_LOAD / 2;
    assert_int_equal(bk_quotient_new_slots(1000, 8, &o, &f), BK_EINVAL);
    o.max_load = BK_QUOTIENT_MIN_MAX_LOAD;
    assert_int_equal(bk_quotient_new(100, 0.01, &o, &f), BK_OK);
    bk_quotient_free(f);
    f = NULL;
    o.max_load = 0;
    o.remainder_bits = 1;
    assert_int_equal(bk_quotient_new(100, 0.01, &o, &f), BK_EINVAL);
    /* explicit q and r: below the minimums (or r above its maximum) is an argument out of range, q
     * above its maximum a size too large */
    assert_int_equal(bk_quotient_new_qr(BK_QUOTIENT_MIN_QBITS - 1, 8, NULL, &f), BK_EINVAL);
    assert_null(f);
    assert_int_equal(bk_quotient_new_qr(BK_QUOTIENT_MIN_QBITS, BK_QUOTIENT_MIN_RBITS - 1, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_quotient_new_qr(BK_QUOTIENT_MIN_QBITS, BK_QUOTIENT_MAX_RBITS + 1, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_quotient_new_qr(BK_QUOTIENT_MAX_QBITS + 1, 8, NULL, &f), BK_ETOOBIG);
    assert_null(f);
    assert_int_equal(bk_quotient_new_slots(127, 8, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_quotient_new_slots((UINT64_C(1) << BK_QUOTIENT_MAX_QBITS) + 1, 8, NULL, &f), BK_ETOOBIG);
    assert_null(f);
    assert_int_equal(bk_quotient_new_slots(1000, 8, NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_quotient_new_qr(BK_QUOTIENT_MIN_QBITS, BK_QUOTIENT_MIN_RBITS, NULL, &f), BK_OK);
    bk_quotient_free(f);
    f = make_qr(7, 3, 0, BK_QUOTIENT_AUTO, 0);
    assert_int_equal(bk_quotient_grow(f), BK_OK);
    assert_int_equal(bk_quotient_remainder_bits(f), 2);
    assert_int_equal(bk_quotient_grow(f), BK_ETOOBIG); /* one remainder bit is too few */
    assert_int_equal(bk_quotient_quotient_bits(f), 8);
    bk_quotient_free(f);
    f = make_qr(31, 2, 0, BK_QUOTIENT_PORTABLE, 0);
    assert_int_equal(bk_quotient_grow(f), BK_ETOOBIG);
    bk_quotient_free(f);
    assert_int_equal(bk_quotient_add_count_hash(NULL, 1, 1), BK_EINVAL);

    bk_quotient_geometry g1, g2;
    assert_int_equal(bk_quotient_size(1000000, 0.01, NULL, &g1), BK_OK);
    assert_int_equal(bk_quotient_size(1000000, 0.001, NULL, &g2), BK_OK);
    print_message("1M keys: 1%%: q %u r %u %.2f bits/key; 0.1%%: q %u r %u %.2f bits/key\n", g1.quotient_bits,
                  g1.remainder_bits, g1.bits_per_key, g2.quotient_bits, g2.remainder_bits, g2.bits_per_key);
    assert_true(g1.fpr <= 0.01 && g2.fpr <= 0.001);

    assert_int_equal(bk_quotient_new(1000, 0.01, NULL, &f), BK_OK);
    add_keys(f, 10, 0, 900);
    bk_stats st;
    bk_quotient_stats(f, &st);
    assert_int_equal(st.type, BK_TYPE_QUOTIENT);
    assert_int_equal(st.count, 900);
    assert_int_equal(st.k, bk_quotient_remainder_bits(f));
    TU_ASSERT_WITHIN(st.est_cardinality, 900, 0.02);
    TU_ASSERT_WITHIN(st.fill_ratio, 900.0 / (double)bk_quotient_slots(f), 0.02);
    assert_true(st.fpr_now <= st.fpr_target);
    assert_false(st.saturated);
    /* at its capacity the filter is at its load limit: saturated (inserts will soon be refused) */
    add_keys(f, 10, 900, 1000);
    bk_quotient_stats(f, &st);
    assert_true(st.fpr_now <= st.fpr_target);
    assert_true(st.saturated);
    assert_string_equal(bk_type_name(BK_TYPE_QUOTIENT), "quotient");
    bk_quotient_clear(f);
    assert_false(bk_quotient_contains(f, "x", 1));
    assert_int_equal(bk_quotient_total(f), 0);
    bk_quotient_free(f);
}

/* ---- batches agree with single calls ---- */

static void batches(void **state)
{
    (void)state;
    bk_quotient *f = NULL;
    const size_t n = 3000;
    assert_int_equal(bk_quotient_new(n, 0.01, NULL, &f), BK_OK);
    tu_key *keys = malloc(2 * n * sizeof *keys);
    const void **ptrs = malloc(2 * n * sizeof *ptrs);
    size_t *lens = malloc(2 * n * sizeof *lens);
    uint8_t *res = malloc(2 * n);
    for (size_t i = 0; i < 2 * n; i++) {
        keys[i] = tu_make_key(11, i);
        ptrs[i] = keys[i].b;
        lens[i] = sizeof keys[i].b;
    }
    size_t done = 0;
    assert_int_equal(bk_quotient_add_many(f, ptrs, lens, n, &done), BK_OK);
    assert_int_equal(done, n);
    size_t hits = TU_HITS(bk_quotient_contains_many, f, ptrs, lens, 2 * n, res);
    for (size_t i = 0; i < 2 * n; i++) {
        assert_int_equal(res[i], bk_quotient_contains(f, ptrs[i], lens[i]));
        if (i < n) assert_int_equal(res[i], 1);
    }
    assert_true(hits >= n && hits < n + n / 20);
    uint64_t *hs = malloc(n * sizeof *hs), *cs = malloc(n * sizeof *cs);
    for (size_t i = 0; i < n; i++) hs[i] = bk_hash64(ptrs[i], lens[i], 0);
    assert_int_equal(bk_quotient_count_hashes(f, hs, n, cs), BK_OK);
    for (size_t i = 0; i < n; i++) assert_true(cs[i] >= 1);
    assert_int_equal(bk_quotient_remove_hashes(f, hs, n, &done), BK_OK);
    assert_int_equal(done, n);
    assert_int_equal(bk_quotient_total(f), 0);
    free(hs);
    free(cs);
    free(keys);
    free(ptrs);
    free(lens);
    free(res);
    bk_quotient_free(f);
}

/* ---- both paths: same answers and bytes on a large random workload ---- */

static void paths_agree(void **state)
{
    (void)state;
    if (!bk_quotient_bmi2_available()) {
        print_message("paths_agree: this CPU has no BMI2; only the portable path exists here\n");
        assert_int_equal(bk_quotient_set_path(make_qr(7, 4, 0, BK_QUOTIENT_PORTABLE, 0), BK_QUOTIENT_BMI2),
                         BK_ENOTSUP);
        skip();
    }
    bk_quotient *a = make_qr(16, 8, 0, BK_QUOTIENT_PORTABLE, 1), *b = make_qr(16, 8, 0, BK_QUOTIENT_BMI2, 1);
    assert_int_equal(bk_quotient_path_of(b), BK_QUOTIENT_BMI2);
    uint64_t rng = 5;
    const size_t n = 60000;
    uint64_t *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = tu_splitmix(&rng);
    assert_int_equal(bk_quotient_add_hashes(a, h, n, NULL), BK_OK);
    assert_int_equal(bk_quotient_add_hashes(b, h, n, NULL), BK_OK);
    assert_int_equal(bk_quotient_remove_hashes(a, h, n / 3, NULL), BK_OK);
    assert_int_equal(bk_quotient_remove_hashes(b, h, n / 3, NULL), BK_OK);
    size_t na, nb;
    const uint64_t *wa = bk__quotient_words(a, &na), *wb = bk__quotient_words(b, &nb);
    assert_memory_equal(wa, wb, na * 8);
    uint8_t *ra = malloc(n), *rb = malloc(n);
    for (size_t i = 0; i < n; i++) h[i] = i % 2 ? tu_splitmix(&rng) : h[i];
    assert_int_equal(TU_HITS(bk_quotient_contains_hashes, a, h, n, ra), TU_HITS(bk_quotient_contains_hashes, b, h, n, rb));
    assert_memory_equal(ra, rb, n);
    /* switching a filter's path changes nothing but speed */
    assert_int_equal(bk_quotient_set_path(b, BK_QUOTIENT_PORTABLE), BK_OK);
    assert_int_equal(TU_HITS(bk_quotient_contains_hashes, b, h, n, rb), TU_HITS(bk_quotient_contains_hashes, a, h, n, ra));
    assert_memory_equal(ra, rb, n);
    free(h);
    free(ra);
    free(rb);
    bk_quotient_free(a);
    bk_quotient_free(b);
}

/* ---- serialization through the generic handle ---- */

static void persistence(void **state)
{
    (void)state;
    bk_quotient *q = NULL;
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.seed = 1234;
    assert_int_equal(bk_quotient_new(5000, 0.001, &o, &q), BK_OK);
    add_keys(q, 12, 0, 4000);
    assert_int_equal(bk_quotient_add_count_hash(q, 77, 123456789), BK_OK);
    bk_filter *h = NULL;
    assert_int_equal(bk_filter_wrap(BK_TYPE_QUOTIENT, q, &h), BK_OK);
    void *buf = NULL;
    size_t len = 0;
    assert_int_equal(bk_filter_save_alloc(h, &buf, &len), BK_OK);
    bk_filter *l = NULL;
    assert_int_equal(bk_filter_load_buffer(buf, len, 0, &l), BK_OK);
    assert_int_equal(bk_filter_type(l), BK_TYPE_QUOTIENT);
    assert_int_equal(bk_filter_seed(l), 1234);
    bk_quotient *lq = bk_filter_get(l, BK_TYPE_QUOTIENT);
    assert_non_null(lq);
    assert_int_equal(bk_quotient_count_hash(lq, 77), 123456789);
    assert_all_present(lq, 12, 0, 4000);
    void *buf2 = NULL;
    size_t len2 = 0;
    assert_int_equal(bk_filter_save_alloc(l, &buf2, &len2), BK_OK);
    assert_int_equal(len, len2);
    assert_memory_equal(buf, buf2, len); /* bit-identical round trip */
    /* through the handle: add, remove, merge */
    assert_int_equal(bk_filter_add(l, "k", 1), BK_OK);
    assert_true(bk_filter_contains(l, "k", 1));
    assert_int_equal(bk_filter_remove(l, "k", 1), BK_OK);
    assert_int_equal(bk_filter_merge(l, h), BK_EFULL); /* twice the keys do not fit */
    assert_int_equal(bk_filter_clear(l), BK_OK);
    assert_false(bk_quotient_contains_hash(lq, 77));
    assert_int_equal(bk_filter_merge(l, h), BK_OK);
    assert_int_equal(bk_quotient_count_hash(lq, 77), 123456789);
    assert_int_equal(bk_filter_save_buffer(l, buf2, len2, &len2), BK_OK);
    assert_memory_equal(buf, buf2, len); /* the union with an empty filter is the filter */
    /* every single-byte change in the body is caught (checksum or validation), never a crash */
    uint8_t *bad = malloc(len);
    for (size_t i = 0; i < len; i += 97) {
        memcpy(bad, buf, len);
        bad[i] ^= 0x10;
        bk_filter *x = NULL;
        bk_status s = bk_filter_load_buffer(bad, len, 0, &x);
        assert_int_not_equal(s, BK_OK);
        assert_null(x);
    }
    free(bad);
    bk_filter_buffer_free(buf);
    bk_filter_buffer_free(buf2);
    bk_filter_free(l);
    bk_filter_free(h);
}

/* The golden file (tests/golden/quotient-v1.0.bkf: capacity 1000, keys (set 1, 0..499), key (set 3, 0)
 * added 1000 times, seed 42): its answers, read through a zero-copy read-only mapping. */
static void golden_mmap(void **state)
{
    (void)state;
    bk_filter *m = NULL;
    assert_int_equal(bk_filter_open_mmap(BK_TEST_SOURCE_DIR "/golden/quotient-v1.0.bkf", 0, &m), BK_OK);
    assert_int_equal(bk_filter_backing(m), BK_BACKING_MAP_READONLY);
    const bk_quotient *q = bk_filter_get(m, BK_TYPE_QUOTIENT);
    assert_non_null(q);
    assert_int_equal(bk_quotient_seed(q), 42);
    assert_int_equal(bk_quotient_quotient_bits(q), 11);
    assert_int_equal(bk_quotient_remainder_bits(q), 6);
    assert_int_equal(bk_quotient_total(q), 1500);
    assert_int_equal(bk_quotient_distinct(q), 501);
    tu_key hot = tu_make_key(3, 0);
    assert_int_equal(bk_quotient_count(q, hot.b, sizeof hot.b), 1000);
    for (uint64_t i = 0; i < 500; i++) {
        tu_key k = tu_make_key(1, i);
        assert_int_equal(bk_quotient_count(q, k.b, sizeof k.b), 1);
        assert_true(bk_filter_contains(m, k.b, sizeof k.b));
    }
    uint64_t fp = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        tu_key k = tu_make_key(4, i);
        fp += bk_filter_contains(m, k.b, sizeof k.b);
    }
    print_message("golden: %llu false positives in 100000\n", (unsigned long long)fp);
    assert_true(fp <= 1.15 * 100000 * bk_quotient_fpr(501, 11, 6) + 10);
    assert_int_not_equal(bk_filter_add(m, "x", 1), BK_OK); /* read-only */
    assert_int_equal(bk__quotient_check(q), BK_OK);
    assert_int_equal(bk_filter_close(m), BK_OK);
}

/* A saved filter with byte `at` set to `value`, loaded without the checksum: refused as corrupt */
static void refused_with_byte(const void *buf, size_t len, size_t at, uint8_t value)
{
    uint8_t *bad = malloc(len);
    memcpy(bad, buf, len);
    bad[at] = value;
    bk_filter *x = NULL;
    assert_int_equal(bk_filter_load_buffer(bad, len, BK_LOAD_NO_CHECKSUM, &x), BK_ECORRUPT);
    assert_null(x);
    free(bad);
}

/* Random damage to a saved body, loaded without the checksum: every file is either refused or
 * fully valid (the loader checks every invariant), and never crashes a query. */
static void damaged_buffer(const uint8_t *buf, size_t len)
{
    uint64_t rng = 77;
    uint8_t *bad = malloc(len);
    int loaded = 0;
    for (int t = 0; t < 3000; t++) {
        memcpy(bad, buf, len);
        int flips = 1 + (int)(tu_splitmix(&rng) % 3);
        for (int k = 0; k < flips; k++) {
            size_t at = 64 + (size_t)(tu_splitmix(&rng) % (len - 64));
            bad[at] ^= (uint8_t)(1u << (tu_splitmix(&rng) % 8));
        }
        bk_filter *x = NULL;
        if (bk_filter_load_buffer(bad, len, BK_LOAD_NO_CHECKSUM, &x) == BK_OK) {
            loaded++;
            bk_quotient *xq = bk_filter_get(x, BK_TYPE_QUOTIENT);
            assert_int_equal(bk__quotient_check(xq), BK_OK);
            for (int k = 0; k < 64; k++) (void)bk_quotient_count_hash(xq, tu_splitmix(&rng));
            bk_filter_free(x);
        }
    }
    print_message("damaged bodies: %d of 3000 still valid (changes in statistics-only fields)\n", loaded);
    free(bad);
}

static void damaged_case(bk_quotient *q)
{
    uint64_t rng = 77;
    for (int i = 0; i < 90; i++) (void)bk_quotient_add_count_hash(q, tu_splitmix(&rng), 1 + (uint64_t)(i % 4 == 0) * 50);
    bk_filter *h;
    assert_int_equal(bk_filter_wrap(BK_TYPE_QUOTIENT, q, &h), BK_OK);
    void *buf;
    size_t len;
    assert_int_equal(bk_filter_save_alloc(h, &buf, &len), BK_OK);
    damaged_buffer(buf, len);
    bk_filter_buffer_free(buf);
    bk_filter_free(h);
}

static uint8_t *read_golden(const char *name, size_t *len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/golden/%s-v1.0.bkf", BK_TEST_SOURCE_DIR, name);
    FILE *fp = fopen(p, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n);
    assert_int_equal(fread(b, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    *len = (size_t)n;
    return b;
}

static void damaged_bodies(void **state)
{
    (void)state;
    damaged_case(make_qr(7, 4, 0, BK_QUOTIENT_AUTO, 1)); /* body 1 (the 1.0 layout) */
    damaged_case(make_sr(200, 4, 0, BK_QUOTIENT_AUTO, 1, false)); /* body 4, any slot count */
    /* the earlier bodies (1 and 2, converted when loaded) */
    const char *names[] = { "quotient", "quotient-slots", "quotient-stages" };
    for (size_t i = 0; i < 3; i++) {
        size_t len;
        uint8_t *b = read_golden(names[i], &len);
        damaged_buffer(b, len);
        free(b);
    }
}

/* ---- offsets of 255 and more (stored saturated) ---- */

/* Distinct fingerprints on quotients [q0, q0 + nq), `per` remainders each (r bits: per < 2^r), into
 * the filter and the model: a cluster of nq per slots. */
static void add_cluster(bk_quotient *f, bk_quotient *g, model *m, uint64_t q0, uint64_t nq, uint64_t per,
                        uint64_t *rng)
{
    uint64_t S = bk_quotient_slots(f);
    uint32_t r = bk_quotient_remainder_bits(f);
    for (uint64_t q = q0; q < q0 + nq; q++)
        for (uint64_t x = 1; x <= per; x++) {
            uint64_t h = hash_with_fp(q << r | x, S, r, rng);
            assert_int_equal(bk_quotient_add_hash(f, h), BK_OK);
            if (g) assert_int_equal(bk_quotient_add_hash(g, h), BK_OK);
            m_add(m, q << r | x, 1);
        }
}

/* The stored offset byte of block b (groups of eight blocks after one word of 8-bit offsets). */
static unsigned stored_offset(const bk_quotient *f, uint64_t b)
{
    size_t n;
    const uint64_t *w = bk__quotient_words(f, &n);
    uint64_t gw = 1 + 8 * (2 + (uint64_t)bk_quotient_remainder_bits(f));
    assert_true((b >> 3) * gw < n);
    return (unsigned)(w[(b >> 3) * gw] >> ((b & 7) * 8)) & 0xff;
}

/* An allocator that refuses every allocation while deny_alloc is set. */
static bool deny_alloc;
static void *deny_malloc(void *o, size_t n)
{
    (void)o;
    return deny_alloc ? NULL : malloc(n);
}
static void *deny_calloc(void *o, size_t c, size_t n)
{
    (void)o;
    return deny_alloc ? NULL : calloc(c, n);
}
static void deny_free(void *o, void *p)
{
    (void)o;
    free(p);
}
static const bk_allocator deny_allocator = { deny_malloc, deny_calloc, deny_free, NULL };

/* Bytes of a filter's array, and its blocks of 64 slots (groups of eight blocks of 2 + r words after
 * one offsets word). */
static uint64_t array_bytes(const bk_quotient *f)
{
    size_t n;
    (void)bk__quotient_words(f, &n);
    return (uint64_t)n * 8;
}
static uint64_t blocks_of(const bk_quotient *f)
{
    uint64_t w = array_bytes(f) / 8, bw = 2 + bk_quotient_remainder_bits(f);
    for (uint64_t nb = 2; nb * bw <= w; nb += 2)
        if (nb * bw + (nb + 7) / 8 == w) return nb;
    fail_msg("no block count gives %llu words", (unsigned long long)w);
    return 0;
}

/* Clusters long enough that blocks' offsets pass 255: stored as 255, their values kept in a table of
 * true offsets beside the array (4 bytes a block, in memory only) from the first one on; `counted`:
 * the table cannot be allocated, and the values are found from the blocks before. Inserts and
 * removes inside and before such clusters, on both paths in lockstep, keep every invariant (each
 * stored offset the saturated true one, the table's entries the true ones) and the model's answers;
 * a save and load gives the same bytes, and the loaded filter has its table again. */
static void saturated_case(bool counted)
{
    const uint64_t S = 4000;
    const uint32_t r = 6;
    bool both = bk_quotient_bmi2_available();
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.max_load = 0.95;
    o.seed = 9;
    if (counted) o.allocator = &deny_allocator;
    bk_quotient *a = NULL, *b = NULL;
    assert_int_equal(bk_quotient_new_slots(S, r, &o, &a), BK_OK);
    assert_int_equal(bk_quotient_set_path(a, BK_QUOTIENT_PORTABLE), BK_OK);
    if (both) {
        assert_int_equal(bk_quotient_new_slots(S, r, &o, &b), BK_OK);
        assert_int_equal(bk_quotient_set_path(b, BK_QUOTIENT_BMI2), BK_OK);
    }
    deny_alloc = counted;
    assert_int_equal(bk_quotient_memory(a), array_bytes(a));
    model m = { NULL, 0, 0 };
    uint64_t rng = 5;
    /* quotients 100..111, 60 remainders each: slots 100..819; block 2 (slot 128) has offset 819 - 128 */
    add_cluster(a, b, &m, 100, 12, 60, &rng);
    assert_matches(a, &m);
    assert_int_equal(stored_offset(a, 2), 255);
    assert_int_equal(stored_offset(a, 8), 255); /* 819 - 512 */
    assert_int_equal(stored_offset(a, 9), 819 - 576);
    assert_int_equal(bk_quotient_memory(a), array_bytes(a) + (counted ? 0 : 4 * blocks_of(a)));
    /* a second cluster right after it joins it: a run of saturated blocks 30 long */
    add_cluster(a, b, &m, 800, 20, 60, &rng);
    assert_matches(a, &m);
    assert_int_equal(stored_offset(a, 20), 255);
    /* random keys, inserts into the clusters' quotients and before them, and removes */
    for (int i = 0; i < 4000; i++) {
        uint64_t die = tu_splitmix(&rng) % 100;
        if (die < 60 || m.n == 0) {
            uint64_t q = die < 30 ? 90 + tu_splitmix(&rng) % 800 : tu_splitmix(&rng) % S;
            uint64_t fp = q << r | (1 + tu_splitmix(&rng) % 63);
            uint64_t h = hash_with_fp(fp, S, r, &rng), c = 1 + (die % 9 == 0) * (tu_splitmix(&rng) % 200);
            bk_status s = bk_quotient_add_count_hash(a, h, c);
            if (b) assert_int_equal(bk_quotient_add_count_hash(b, h, c), s);
            if (s == BK_EFULL) continue;
            assert_int_equal(s, BK_OK);
            m_add(&m, fp, c);
        } else {
            fpc e = m.v[tu_splitmix(&rng) % m.n];
            uint64_t h = hash_with_fp(e.fp, S, r, &rng), c = 1 + tu_splitmix(&rng) % e.count;
            assert_int_equal(bk_quotient_remove_count_hash(a, h, c), BK_OK);
            if (b) assert_int_equal(bk_quotient_remove_count_hash(b, h, c), BK_OK);
            m_sub(&m, e.fp, c);
        }
        if (i % 64 == 0) assert_matches(a, &m);
        if (b) {
            size_t na, nb;
            const uint64_t *wa = bk__quotient_words(a, &na), *wb = bk__quotient_words(b, &nb);
            assert_int_equal(na, nb);
            assert_memory_equal(wa, wb, na * 8);
        }
    }
    assert_matches(a, &m);
    for (size_t i = 0; i < m.n; i++)
        assert_int_equal(bk_quotient_count_hash(a, hash_with_fp(m.v[i].fp, S, r, &rng)), m.v[i].count);
    /* some block is still saturated at the end (the filter is near its load limit) */
    unsigned sat = 0;
    for (uint64_t k = 0; k < S / 64; k++) sat += stored_offset(a, k) == 255;
    print_message("saturated offsets: %u of %llu blocks at the end\n", sat, (unsigned long long)(S / 64));
    assert_true(sat > 0);
    deny_alloc = false;
    /* save and load: the same bytes, the same answers, the table again */
    bk_filter *h;
    assert_int_equal(bk_filter_wrap(BK_TYPE_QUOTIENT, a, &h), BK_OK);
    void *buf, *buf2;
    size_t len, len2;
    assert_int_equal(bk_filter_save_alloc(h, &buf, &len), BK_OK);
    bk_filter *l;
    assert_int_equal(bk_filter_load_buffer(buf, len, BK_LOAD_REQUIRE_CLEAN, &l), BK_OK);
    assert_matches(bk_filter_get(l, BK_TYPE_QUOTIENT), &m);
    assert_int_equal(bk_quotient_memory(bk_filter_get(l, BK_TYPE_QUOTIENT)), array_bytes(a) + 4 * blocks_of(a));
    assert_int_equal(bk_filter_save_alloc(l, &buf2, &len2), BK_OK);
    assert_int_equal(len, len2);
    assert_memory_equal(buf, buf2, len);
    /* a saturated byte set to 254 (the value it would have below 255), or a block's 255 cleared: refused */
    size_t na;
    const uint64_t *wa = bk__quotient_words(a, &na);
    size_t at = 64 + 128 + 2; /* body 4's array starts at body offset 128; block 2's byte */
    assert_int_equal(((const uint8_t *)wa)[2], 255);
    refused_with_byte(buf, len, at, 254);
    refused_with_byte(buf, len, at, 0);
    bk_filter_buffer_free(buf);
    bk_filter_buffer_free(buf2);
    bk_filter_free(l);
    bk_filter_free(h);
    bk_quotient_free(b);
    free(m.v);
}
static void saturated_offsets(void **state)
{
    (void)state;
    saturated_case(false);
}
static void saturated_offsets_counted(void **state)
{
    (void)state;
    saturated_case(true);
}

/* Every bit of every stored offset byte of a saved body 4 flipped (checksums skipped): refused, never
 * read past the array; and the same for the 32-bit offsets of an earlier body. */
static void offset_damage_case(const uint8_t *buf, size_t len, size_t array_at, size_t group_bytes, size_t off_bytes)
{
    uint8_t *bad = malloc(len);
    for (size_t g = array_at; g + off_bytes <= len; g += group_bytes)
        for (size_t k = 0; k < off_bytes; k++)
            for (unsigned bit = 0; bit < 8; bit++) {
                memcpy(bad, buf, len);
                bad[g + k] ^= (uint8_t)(1u << bit);
                bk_filter *x = NULL;
                bk_status s = bk_filter_load_buffer(bad, len, BK_LOAD_NO_CHECKSUM, &x);
                if (s != BK_ECORRUPT)
                    fail_msg("offset byte %zu bit %u: %s", g + k - array_at, bit, bk_strerror(s));
            }
    free(bad);
}

static void damaged_offsets(void **state)
{
    (void)state;
    /* body 4 with saturated offsets: the 64-slot blocks of 2 + r words, eight a group */
    bk_quotient *q = make_sr(2000, 5, 0.95, BK_QUOTIENT_AUTO, 3, false);
    model m = { NULL, 0, 0 };
    uint64_t rng = 8;
    add_cluster(q, NULL, &m, 10, 15, 30, &rng);
    for (int i = 0; i < 600; i++) (void)bk_quotient_add_hash(q, tu_splitmix(&rng));
    assert_int_equal(stored_offset(q, 1), 255);
    bk_filter *h;
    assert_int_equal(bk_filter_wrap(BK_TYPE_QUOTIENT, q, &h), BK_OK);
    void *buf;
    size_t len;
    assert_int_equal(bk_filter_save_alloc(h, &buf, &len), BK_OK);
    /* a partial last group's offsets word too: its bytes past the last block must stay 0 */
    offset_damage_case(buf, len, 64 + 128, (1 + 8 * (2 + 5)) * 8, 8);
    bk_filter_buffer_free(buf);
    bk_filter_free(h);
    free(m.v);
    /* body 1 (the 1.0 golden file: r 6): a word of two 32-bit offsets a pair of blocks */
    uint8_t *g = read_golden("quotient", &len);
    offset_damage_case(g, len, 64 + 64, (1 + 2 * (2 + 6)) * 8, 8);
    free(g);
}

/* A table loaded from body 2 stays in body 2: grown clusters with offsets past 255 are saved as 32-bit
 * offsets and read back (converted again) to the same filter and bytes. */
static void earlier_body_round_trip(void **state)
{
    (void)state;
    size_t len;
    uint8_t *g = read_golden("quotient-slots", &len);
    bk_filter *l;
    assert_int_equal(bk_filter_load_buffer(g, len, BK_LOAD_REQUIRE_CLEAN, &l), BK_OK);
    bk_quotient *q = bk_filter_get(l, BK_TYPE_QUOTIENT);
    uint64_t S = bk_quotient_slots(q);
    uint32_t r = bk_quotient_remainder_bits(q);
    model m = { NULL, 0, 0 };
    uint64_t rng = 4;
    /* 7 quotients from a block's start, 60 remainders each: that block's offset is 420 or more */
    assert_true(r >= 6);
    add_cluster(q, NULL, &m, (S / 2) & ~UINT64_C(63), 7, 60, &rng);
    unsigned sat = 0;
    for (uint64_t k = 0; k < S / 64; k++) sat += stored_offset(q, k) == 255;
    assert_true(sat > 0);
    assert_int_equal(bk__quotient_check(q), BK_OK);
    void *buf, *buf2;
    size_t n, n2;
    assert_int_equal(bk_filter_save_alloc(l, &buf, &n), BK_OK);
    uint32_t w[2];
    memcpy(w, (const uint8_t *)buf + 64, 8);
    assert_int_equal(w[0], 0);
    assert_int_equal(w[1], 2);
    bk_filter *l2, *m2;
    assert_int_equal(bk_filter_load_buffer(buf, n, BK_LOAD_REQUIRE_CLEAN, &l2), BK_OK);
    void *al = aligned_alloc(64, (n + 63) / 64 * 64);
    memcpy(al, buf, n);
    assert_int_equal(bk_filter_open_buffer(al, n, 0, &m2), BK_OK); /* a read-only view converts too */
    const bk_quotient *q2 = bk_filter_get(l2, BK_TYPE_QUOTIENT), *q3 = bk_filter_get(m2, BK_TYPE_QUOTIENT);
    size_t na, nb, nc;
    const uint64_t *wa = bk__quotient_words(q, &na), *wb = bk__quotient_words(q2, &nb),
                   *wc = bk__quotient_words(q3, &nc);
    assert_int_equal(na, nb);
    assert_int_equal(na, nc);
    assert_memory_equal(wa, wb, na * 8);
    assert_memory_equal(wa, wc, na * 8);
    for (size_t i = 0; i < m.n; i++) {
        uint64_t hh = hash_with_fp(m.v[i].fp, S, r, &rng);
        assert_true(bk_quotient_contains_hash(q3, hh));
    }
    assert_int_equal(bk_filter_backing(m2), BK_BACKING_MAP_READONLY);
    assert_int_equal(bk_filter_add(m2, "k", 1), BK_ENOTSUP);
    assert_int_equal(bk_filter_save_alloc(l2, &buf2, &n2), BK_OK);
    assert_int_equal(n, n2);
    assert_memory_equal(buf, buf2, n);
    bk_filter_buffer_free(buf);
    bk_filter_buffer_free(buf2);
    bk_filter_free(l);
    bk_filter_free(l2);
    bk_filter_free(m2);
    free(al);
    free(g);
    free(m.v);
}

/* ---- any slot count: sizes, FPR, the operations, the two bodies ---- */

/* The sizing for many n, log-uniform over [1e4, 1e8]: at most 10.6 bits per key at 1% and 14.0 at
 * 0.1% everywhere (no power-of-two sawtooth), the FPR the geometry gives within p, and the slots the
 * fewest that hold n at the load limit. */
static void sizes_across_n(void **state)
{
    (void)state;
    const double ps[] = { 0.01, 0.001 }, most[] = { 10.6, 14.0 };
    for (int j = 0; j < 2; j++) {
        double worst = 0, sum = 0;
        uint64_t worst_n = 0;
        const int steps = 4000;
        for (int i = 0; i <= steps; i++) {
            uint64_t n = (uint64_t)llround(1e4 * pow(1e4, (double)i / steps)) + (uint64_t)(i % 7);
            bk_quotient_geometry g;
            assert_int_equal(bk_quotient_size(n, ps[j], NULL, &g), BK_OK);
            assert_true(g.fpr <= ps[j]);
            assert_true(g.max_slots_used >= n);
            assert_true((double)(g.slots - 1) * 0.95 < (double)n + 1); /* no slot count to spare */
            assert_true(g.quotient_bits == 64 - (uint32_t)__builtin_clzll(g.slots - 1));
            if (g.bits_per_key > worst) {
                worst = g.bits_per_key;
                worst_n = n;
            }
            sum += g.bits_per_key;
            if (g.bits_per_key > most[j])
                fail_msg("n %llu p %g: %.3f bits/key", (unsigned long long)n, ps[j], g.bits_per_key);
        }
        print_message("p %g: n in [1e4, 1e8]: mean %.3f bits/key, most %.3f (n = %llu)\n", ps[j],
                      sum / (steps + 1), worst, (unsigned long long)worst_n);
    }
    /* the 1.0 sizing stays available: 2^q slots, up to twice the memory */
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.power_of_two_slots = 1;
    bk_quotient_geometry g;
    assert_int_equal(bk_quotient_size(1100000, 0.01, &o, &g), BK_OK);
    assert_int_equal(g.slots, UINT64_C(1) << 21);
    assert_int_equal(g.quotient_bits, 21);
    assert_true(g.bits_per_key > 15);
}

/* A filter of a slot count that is no power of two, filled to its capacity: no false negative, the
 * FPR on a million absent keys within 1.1 p (and within 1.1 times the formula), and the load limit
 * reached only past the capacity. */
static void fpr_any_slot_count(void **state)
{
    (void)state;
    const double ps[] = { 0.01, 0.001 };
    for (int j = 0; j < 2; j++) {
        const uint64_t n = 300007, probes = 1000000;
        bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
        o.seed = 5 + (uint64_t)j;
        bk_quotient *f = NULL;
        assert_int_equal(bk_quotient_new(n, ps[j], &o, &f), BK_OK);
        uint64_t S = bk_quotient_slots(f);
        assert_true((S & (S - 1)) != 0);
        add_keys(f, 20, 0, n);
        assert_all_present(f, 20, 0, n);
        double fpr = measure_fpr(f, 21, probes);
        double bound = bk_quotient_fpr_slots(n, S, bk_quotient_remainder_bits(f));
        print_message("n %llu p %g: S %llu r %u %.2f bits/key, fpr %.5f, bound %.5f\n", (unsigned long long)n,
                      ps[j], (unsigned long long)S, bk_quotient_remainder_bits(f),
                      (double)bk_quotient_memory(f) * 8 / (double)n, fpr, bound);
        assert_true(fpr <= 1.1 * ps[j]);
        assert_true(fpr <= 1.1 * bound);
        assert_true(fpr >= 0.8 * bound); /* the formula is the FPR, not a loose bound */
        /* the rest of the load limit takes keys, then BK_EFULL, with nothing lost */
        uint64_t extra = 0;
        for (uint64_t i = 0; i < n; i++) {
            tu_key k = tu_make_key(22, i);
            bk_status s = bk_quotient_add(f, k.b, sizeof k.b);
            if (s == BK_EFULL) break;
            assert_int_equal(s, BK_OK);
            extra++;
        }
        assert_true(bk_quotient_slots_used(f) >= (uint64_t)(0.95 * (double)S) - 60);
        assert_all_present(f, 20, 0, n);
        assert_all_present(f, 22, 0, extra);
        assert_int_equal(bk__quotient_check(f), BK_OK);
        bk_quotient_free(f);
    }
}

typedef struct {
    uint64_t last, n;
    bool sorted;
} order_ctx;

static int check_order(uint64_t fp, uint64_t count, void *vc)
{
    order_ctx *c = vc;
    if (c->n && fp <= c->last) c->sorted = false;
    c->last = fp;
    c->n += count;
    return 0;
}

static bk_filter *wrap(bk_quotient *q)
{
    bk_filter *h = NULL;
    assert_int_equal(bk_filter_wrap(BK_TYPE_QUOTIENT, q, &h), BK_OK);
    return h;
}

/* Merge, grow, enumeration and save/load of filters whose slot count is no power of two; the body
 * they save in (version 2), and the 1.0 body a power-of-two filter still saves in. */
static void any_slot_count_operations(void **state)
{
    (void)state;
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.seed = 31;
    bk_quotient *a = NULL, *b = NULL;
    assert_int_equal(bk_quotient_new(30000, 0.01, &o, &a), BK_OK);
    assert_int_equal(bk_quotient_new(30000, 0.01, &o, &b), BK_OK);
    uint64_t S = bk_quotient_slots(a);
    assert_int_equal(S, 31579); /* ceil(30000 / 0.95) */
    add_keys(a, 30, 0, 12000);
    add_keys(b, 30, 8000, 20000);
    /* enumeration in increasing fingerprint order, every occurrence once */
    order_ctx oc = { 0, 0, true };
    assert_int_equal(bk_quotient_foreach(a, check_order, &oc), 0);
    assert_true(oc.sorted);
    assert_int_equal(oc.n, 12000);
    /* merge */
    bk_quotient *a0;
    assert_int_equal(bk_quotient_clone(a, &a0), BK_OK);
    assert_int_equal(bk_quotient_union(a, b), BK_OK);
    assert_int_equal(bk__quotient_check(a), BK_OK);
    assert_all_present(a, 30, 0, 20000);
    assert_int_equal(bk_quotient_total(a), 24000);
    /* grow: 2S slots; a grown filter takes the ungrown one's fingerprints; grow(a0 + b) = grow(a0) + b */
    bk_quotient *c;
    assert_int_equal(bk_quotient_clone(a0, &c), BK_OK);
    assert_int_equal(bk_quotient_grow(c), BK_OK);
    assert_int_equal(bk_quotient_slots(c), 2 * S);
    assert_int_equal(bk_quotient_union(c, b), BK_OK);
    assert_int_equal(bk_quotient_grow(a), BK_OK);
    size_t na, nc;
    const uint64_t *wa = bk__quotient_words(a, &na), *wc = bk__quotient_words(c, &nc);
    assert_int_equal(na, nc);
    assert_memory_equal(wa, wc, na * 8);
    assert_all_present(c, 30, 0, 20000);
    assert_int_equal(bk_quotient_union(a0, c), BK_EINCOMPAT); /* the bit it would need is gone */
    /* fingerprint spaces that are not one another's times a power of two do not mix */
    bk_quotient *d = NULL;
    assert_int_equal(bk_quotient_new(31000, 0.01, &o, &d), BK_OK);
    assert_int_equal(bk_quotient_compatible(d, a0), BK_EINCOMPAT);
    assert_int_equal(bk_quotient_compatible(a0, d), BK_EINCOMPAT);
    bk_quotient_free(d);
    /* save and load: bit-identical round trip, the same answers, version 4 in the body */
    bk_filter *h = wrap(c);
    void *buf = NULL;
    size_t len = 0;
    assert_int_equal(bk_filter_save_alloc(h, &buf, &len), BK_OK);
    const uint8_t *body = (const uint8_t *)buf + 64;
    uint32_t w0, w1;
    memcpy(&w0, body, 4);
    memcpy(&w1, body + 4, 4);
    assert_int_equal(w0, 0);
    assert_int_equal(w1, 4);
    bk_filter *l = NULL;
    assert_int_equal(bk_filter_load_buffer(buf, len, BK_LOAD_REQUIRE_CLEAN, &l), BK_OK);
    bk_quotient *lq = bk_filter_get(l, BK_TYPE_QUOTIENT);
    assert_int_equal(bk_quotient_slots(lq), 2 * S);
    assert_all_present(lq, 30, 0, 20000);
    for (uint64_t i = 0; i < 20000; i++) {
        tu_key k = tu_make_key(31, i);
        assert_int_equal(bk_quotient_count(lq, k.b, sizeof k.b), bk_quotient_count(c, k.b, sizeof k.b));
    }
    void *buf2 = NULL;
    size_t len2 = 0;
    assert_int_equal(bk_filter_save_alloc(l, &buf2, &len2), BK_OK);
    assert_int_equal(len, len2);
    assert_memory_equal(buf, buf2, len);
    /* the loaded filter keeps working: grow, merge through the handle (same geometry) */
    bk_filter *hb = wrap(b);
    assert_int_equal(bk_filter_merge(l, hb), BK_EINCOMPAT); /* 2S slots against S */
    assert_int_equal(bk_quotient_grow(lq), BK_OK);
    assert_all_present(lq, 30, 0, 20000);
    /* a damaged version field, a reserved field set, or physical slots out of range, with checksums
     * made right: refused */
    const size_t offs[] = { 4, 12, 24, 25 };
    for (size_t i = 0; i < 4; i++)
        refused_with_byte(buf, len, 64 + offs[i], (uint8_t)(((const uint8_t *)buf)[64 + offs[i]] ^ 0x01));
    bk_filter_buffer_free(buf);
    bk_filter_buffer_free(buf2);
    bk_filter_free(l);
    bk_filter_free(hb);
    bk_filter_free(h);
    /* a 2^q filter of the 1.0 layout saves in the 1.0 body (quotient_bits first), and so does its
     * growth; the same slot count made by new_slots saves in body 4 */
    bk_quotient *p2 = make_qr(12, 8, 0, BK_QUOTIENT_AUTO, 31), *s2 = make_sr(4096, 8, 0, BK_QUOTIENT_AUTO, 31, false);
    assert_int_equal(bk_quotient_grow(p2), BK_OK);
    assert_int_equal(bk_quotient_grow(s2), BK_OK);
    bk_filter *hp = wrap(p2), *hs = wrap(s2);
    assert_int_equal(bk_filter_save_alloc(hp, &buf, &len), BK_OK);
    memcpy(&w0, (const uint8_t *)buf + 64, 4);
    assert_int_equal(w0, 13);
    bk_filter_buffer_free(buf);
    assert_int_equal(bk_filter_save_alloc(hs, &buf, &len), BK_OK);
    memcpy(&w0, (const uint8_t *)buf + 64 + 4, 4);
    memcpy(&w1, (const uint8_t *)buf + 64 + 12, 4);
    assert_int_equal(w0, 4);
    assert_int_equal(w1, 0);
    bk_filter_buffer_free(buf);
    /* both have 2^13 slots and 7 remainder bits: the same fingerprints, so they merge either way */
    assert_int_equal(bk_quotient_compatible(p2, s2), BK_OK);
    assert_int_equal(bk_quotient_compatible(s2, p2), BK_OK);
    bk_filter_free(hp);
    bk_filter_free(hs);
    bk_quotient_free(a);
    bk_quotient_free(a0); /* b and c went with their handles */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_small_dense),
        cmocka_unit_test(saturated_offsets),
        cmocka_unit_test(saturated_offsets_counted),
        cmocka_unit_test(damaged_offsets),
        cmocka_unit_test(earlier_body_round_trip),
        cmocka_unit_test(model_medium),
        cmocka_unit_test(fpr_one_percent),
        cmocka_unit_test(fpr_tenth_percent),
        cmocka_unit_test(growth_keeps_target),
        cmocka_unit_test(counters),
        cmocka_unit_test(deletes),
        cmocka_unit_test(merge),
        cmocka_unit_test(offline_conversion),
        cmocka_unit_test(full_load),
        cmocka_unit_test(limits_and_stats),
        cmocka_unit_test(null_and_bad_arguments),
        cmocka_unit_test(batches),
        cmocka_unit_test(paths_agree),
        cmocka_unit_test(persistence),
        cmocka_unit_test(golden_mmap),
        cmocka_unit_test(damaged_bodies),
        cmocka_unit_test(sizes_across_n),
        cmocka_unit_test(fpr_any_slot_count),
        cmocka_unit_test(any_slot_count_operations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
