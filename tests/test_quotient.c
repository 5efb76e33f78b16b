/* The quotient filter: exact agreement with a model of its fingerprints under random adds and removes,
 * no false negatives across inserts, deletes, growth and merge, FPR against the bound at fixed seeds,
 * counters, full load, both code paths, serialization. */
#include "testutil.h"
#include <bloomkit/bloomkit.h>
#include "filters/internal.h"
#include "filters/testing.h"

/* ---- a model: the multiset of fingerprints, as the header defines them ---- */

typedef struct {
    uint64_t fp, count;
} fpc;

typedef struct {
    fpc *v;
    size_t n, cap;
    uint32_t q, r;
} model;

static uint64_t fp_of(uint32_t q, uint32_t r, uint64_t h)
{
    uint64_t fp = h >> (64 - q - r);
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

static bk_quotient *make_qr(uint32_t q, uint32_t r, double max_load, bk_quotient_path path, uint64_t seed)
{
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.max_load = max_load;
    o.seed = seed;
    bk_quotient *f = NULL;
    assert_int_equal(bk_quotient_new_qr(q, r, &o, &f), BK_OK);
    if (path != BK_QUOTIENT_AUTO) assert_int_equal(bk_quotient_set_path(f, path), BK_OK);
    return f;
}

/* A hash whose fingerprint (in q + r bits) is fp. */
static uint64_t hash_with_fp(uint64_t fp, uint32_t bits, uint64_t *rng)
{
    return fp << (64 - bits) | (tu_splitmix(rng) >> bits);
}

/* Random adds (single and multiple, some huge), removes of present fingerprints, in a small filter with
 * few remainder bits (long runs, many shared fingerprints) at high load, checked against the model
 * after every operation; both code paths in lockstep, with identical bytes. */
static void run_model(uint32_t q, uint32_t r, double max_load, uint64_t seed, int ops)
{
    bool both = bk_quotient_bmi2_available();
    bk_quotient *a = make_qr(q, r, max_load, BK_QUOTIENT_PORTABLE, 7);
    bk_quotient *b = both ? make_qr(q, r, max_load, BK_QUOTIENT_BMI2, 7) : NULL;
    assert_int_equal(bk_quotient_path_of(a), BK_QUOTIENT_PORTABLE);
    model m = { NULL, 0, 0, q, r };
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
            m_add(&m, fp_of(q, r, h), c);
            assert_int_equal(bk_quotient_count_hash(a, h), m_count(&m, fp_of(q, r, h)));
        } else {
            fpc e = m.v[tu_splitmix(&rng) % m.n];
            uint64_t h = hash_with_fp(e.fp, q + r, &rng);
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
        uint64_t h = hash_with_fp(m.v[i].fp, q + r, &rng);
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
    run_model(7, 3, 1.0, 1, 6000);   /* 128 slots, r = 3: tiny, full all the time */
    run_model(8, 2, 0.98, 2, 6000);  /* the smallest remainder: base-3 counter digits */
}

static void model_medium(void **state)
{
    (void)state;
    run_model(10, 5, 0.95, 3, 20000);
    run_model(9, 13, 1.0, 4, 8000);  /* remainders across word boundaries */
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
    uint32_t q = bk_quotient_quotient_bits(f), r = bk_quotient_remainder_bits(f);
    /* fill to 90% of the slots: the load the bound is stated for */
    uint64_t fill = (uint64_t)(0.90 * (double)(UINT64_C(1) << q));
    add_keys(f, 1, 0, fill);
    assert_all_present(f, 1, 0, fill);
    for (int g2 = 0; g2 <= 2; g2++) {
        q = bk_quotient_quotient_bits(f);
        r = bk_quotient_remainder_bits(f);
        double bound = bk_quotient_fpr(fill, q, r);
        /* enough probes for about 500 false positives: the measurement's noise is then about 5% */
        uint64_t np = (uint64_t)(500 / bound) > probes ? (uint64_t)(500 / bound) : probes;
        double fpr = measure_fpr(f, 1000 + (uint64_t)g2, np);
        print_message("p %g doubling %d: q %u r %u load %.3f fpr %.5f bound %.5f ratio %.3f\n", p, g2, q, r,
                      (double)bk_quotient_slots_used(f) / (double)(UINT64_C(1) << q), fpr, bound, fpr / bound);
        assert_true(fpr <= 1.15 * bound);
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
                  bk_quotient_fpr(n, bk_quotient_quotient_bits(f), bk_quotient_remainder_bits(f)));
    assert_true(fpr <= 1.15 * p);
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
    uint32_t q = bk_quotient_quotient_bits(f), r = bk_quotient_remainder_bits(f);
    model m = { NULL, 0, 0, q, r };
    m_add(&m, fp_of(q, r, h), 1000000);
    for (uint64_t i = 0; i < 5000; i++) {
        tu_key k = tu_make_key(9, i);
        uint64_t c = 1 + i % 13;
        assert_int_equal(bk_quotient_add_count_hash(f, bk_hash64(k.b, sizeof k.b, 0), c), BK_OK);
        m_add(&m, fp_of(q, r, bk_hash64(k.b, sizeof k.b, 0)), c);
    }
    uint64_t exact = 0, shared = 0;
    for (uint64_t i = 0; i < 5000; i++) {
        tu_key k = tu_make_key(9, i);
        uint64_t got = bk_quotient_count(f, k.b, sizeof k.b), want = 1 + i % 13;
        assert_true(got >= want);
        assert_int_equal(got, m_count(&m, fp_of(q, r, bk_hash64(k.b, sizeof k.b, 0))));
        if (got == want) exact++;
        else shared++;
    }
    print_message("counts: %llu exact, %llu shared a fingerprint\n", (unsigned long long)exact,
                  (unsigned long long)shared);
    assert_true(exact > 4900);
    assert_matches(f, &m);
    /* removes bring the count down to what other keys sharing its fingerprint added */
    uint64_t others = m_count(&m, fp_of(q, r, h)) - 1000000;
    for (int i = 0; i < 10; i++) assert_int_equal(bk_quotient_remove_hash(f, h), BK_OK);
    assert_int_equal(bk_quotient_count_hash(f, h), others + 999990);
    assert_int_equal(bk_quotient_remove_count_hash(f, h, others + 999991), BK_ENOTFOUND);
    assert_int_equal(bk_quotient_remove_count_hash(f, h, 999990), BK_OK);
    assert_int_equal(bk_quotient_count_hash(f, h), others);
    m_sub(&m, fp_of(q, r, h), 1000000);
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
    uint32_t q, r;
    bk_status s;
} convert_ctx;

static int convert_one(uint64_t fp, uint64_t count, void *vc)
{
    convert_ctx *c = vc;
    c->s = bk_quotient_add_fingerprint(c->dst, fp, c->q, c->r, count);
    return c->s != BK_OK;
}

static void offline_conversion(void **state)
{
    (void)state;
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.seed = 77;
    bk_quotient *a = NULL, *b = NULL, *grown = NULL, *longer = NULL;
    assert_int_equal(bk_quotient_new(20000, 0.01, &o, &a), BK_OK);
    add_keys(a, 7, 0, 10000);
    tu_key k0 = tu_make_key(7, 0);
    for (int i = 0; i < 3; i++) assert_int_equal(bk_quotient_add(a, k0.b, sizeof k0.b), BK_OK);
    uint32_t q = bk_quotient_quotient_bits(a), r = bk_quotient_remainder_bits(a);
    assert_int_equal(bk_quotient_new_qr(q + 1, r - 1, &o, &b), BK_OK);
    convert_ctx c = { b, q, r, BK_OK };
    assert_int_equal(bk_quotient_foreach(a, convert_one, &c), 0);
    assert_int_equal(c.s, BK_OK);
    assert_int_equal(bk__quotient_check(b), BK_OK);
    assert_all_present(b, 7, 0, 10000);
    assert_int_equal(bk_quotient_count(b, k0.b, sizeof k0.b), 4);
    assert_int_equal(bk_quotient_total(b), bk_quotient_total(a));
    assert_int_equal(bk_quotient_distinct(b), bk_quotient_distinct(a));
    assert_int_equal(bk_quotient_clone(a, &grown), BK_OK);
    assert_int_equal(bk_quotient_grow(grown), BK_OK);
    size_t nb, ng;
    const uint64_t *wb = bk__quotient_words(b, &nb), *wg = bk__quotient_words(grown, &ng);
    assert_int_equal(nb, ng);
    assert_memory_equal(wb, wg, nb * 8);
    /* a longer fingerprint than the source holds cannot be made up */
    assert_int_equal(bk_quotient_new_qr(q, r + 1, &o, &longer), BK_OK);
    convert_ctx c2 = { longer, q, r, BK_OK };
    assert_int_not_equal(bk_quotient_foreach(a, convert_one, &c2), 0);
    assert_int_equal(c2.s, BK_EINCOMPAT);
    /* bad arguments */
    assert_int_equal(bk_quotient_add_fingerprint(b, 1, q, r, 0), BK_EINVAL);
    assert_int_equal(bk_quotient_add_fingerprint(b, UINT64_C(1) << (q + r), q, r, 1), BK_EINVAL);
    assert_int_equal(bk_quotient_add_fingerprint(b, 1, 40, 25, 1), BK_EINVAL);
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
    add_keys(f, 10, 0, 1000);
    bk_stats st;
    bk_quotient_stats(f, &st);
    assert_int_equal(st.type, BK_TYPE_QUOTIENT);
    assert_int_equal(st.count, 1000);
    assert_int_equal(st.k, bk_quotient_remainder_bits(f));
    TU_ASSERT_WITHIN(st.est_cardinality, 1000, 0.02);
    TU_ASSERT_WITHIN(st.fill_ratio, 1000.0 / (double)(UINT64_C(1) << bk_quotient_quotient_bits(f)), 0.02);
    assert_true(st.fpr_now <= st.fpr_target);
    assert_false(st.saturated);
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

/* Random damage to a saved body, loaded without the checksum: every file is either refused or
 * fully valid (the loader checks every invariant), and never crashes a query. */
static void damaged_bodies(void **state)
{
    (void)state;
    bk_quotient *q = make_qr(7, 4, 0, BK_QUOTIENT_AUTO, 1);
    uint64_t rng = 77;
    for (int i = 0; i < 90; i++) (void)bk_quotient_add_count_hash(q, tu_splitmix(&rng), 1 + (uint64_t)(i % 4 == 0) * 50);
    bk_filter *h;
    assert_int_equal(bk_filter_wrap(BK_TYPE_QUOTIENT, q, &h), BK_OK);
    void *buf;
    size_t len;
    assert_int_equal(bk_filter_save_alloc(h, &buf, &len), BK_OK);
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
    bk_filter_buffer_free(buf);
    bk_filter_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_small_dense),
        cmocka_unit_test(model_medium),
        cmocka_unit_test(fpr_one_percent),
        cmocka_unit_test(fpr_tenth_percent),
        cmocka_unit_test(counters),
        cmocka_unit_test(deletes),
        cmocka_unit_test(merge),
        cmocka_unit_test(offline_conversion),
        cmocka_unit_test(full_load),
        cmocka_unit_test(limits_and_stats),
        cmocka_unit_test(batches),
        cmocka_unit_test(paths_agree),
        cmocka_unit_test(persistence),
        cmocka_unit_test(golden_mmap),
        cmocka_unit_test(damaged_bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
