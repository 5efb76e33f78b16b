/*
 * The batch shape every type shares (common.h, "Batches"): a bk_status return, per-key answers in a
 * uint8_t results[n], the count through a trailing size_t * (hits or done), NULL accepted for both,
 * BK_EINVAL before any key is touched, and a batch that cannot finish stopping at the key that failed
 * with *done = its index. Every batch answer is checked against the one-key calls on a twin filter.
 */
#include "testutil.h"
#include <bloomkit/bloomkit.h>

enum { NKEYS = 1000, NQ = 2000 };

static tu_key g_keys[NQ];
static const void *g_ptrs[NQ];
static size_t g_lens[NQ];

static void keys_init(uint64_t set)
{
    for (size_t i = 0; i < NQ; i++) {
        /* the index first, so that every length from 8 to 16 bytes gives distinct keys */
        uint64_t idx = i * UINT64_C(0x9E3779B97F4A7C15) + set;
        memcpy(g_keys[i].b, &idx, 8);
        memcpy(g_keys[i].b + 8, &set, 8);
        g_ptrs[i] = g_keys[i].b;
        g_lens[i] = 8 + i % 9;
    }
}

/* ---- query batches: one adapter set per type ---- */

typedef struct qtype {
    const char *name;
    void *f;
    bk_status (*many)(const void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r, size_t *h);
    bk_status (*hashes)(const void *f, const uint64_t *hs, size_t n, uint8_t *r, size_t *h);
    bool (*one)(const void *f, const void *k, size_t len);
    bool (*one_hash)(const void *f, uint64_t h);
    uint64_t (*seed)(const void *f);
} qtype;

#define QADAPT(T)                                                                                   \
    static bk_status T##_many(const void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r,  \
                              size_t *h)                                                            \
    {                                                                                               \
        return bk_##T##_contains_many(f, k, l, n, r, h);                                            \
    }                                                                                               \
    static bk_status T##_hashes(const void *f, const uint64_t *hs, size_t n, uint8_t *r, size_t *h) \
    {                                                                                               \
        return bk_##T##_contains_hashes(f, hs, n, r, h);                                            \
    }                                                                                               \
    static bool T##_one(const void *f, const void *k, size_t len) { return bk_##T##_contains(f, k, len); } \
    static bool T##_one_hash(const void *f, uint64_t h) { return bk_##T##_contains_hash(f, h); }   \
    static uint64_t T##_seed(const void *f) { return bk_##T##_seed(f); }
QADAPT(bloom)
QADAPT(blocked)
QADAPT(counting)
QADAPT(scalable)
QADAPT(cuckoo)
QADAPT(fuse)
QADAPT(ribbon)
QADAPT(aging)
QADAPT(quotient)
QADAPT(filter)
#define QTYPE(T, obj) { #T, obj, T##_many, T##_hashes, T##_one, T##_one_hash, T##_seed }

static void check_queries(const qtype *t)
{
    static uint8_t r1[NQ], r2[NQ], r3[NQ];
    static uint64_t hs[NQ];
    size_t hits = 99, want = 0;
    print_message("%s\n", t->name);
    /* results[] are the one-key answers; hits is their sum */
    assert_int_equal(t->many(t->f, g_ptrs, g_lens, NQ, r1, &hits), BK_OK);
    for (size_t i = 0; i < NQ; i++) {
        assert_int_equal(r1[i], t->one(t->f, g_ptrs[i], g_lens[i]));
        if (i < NKEYS) assert_int_equal(r1[i], 1); /* no false negative */
        want += r1[i];
    }
    assert_int_equal(hits, want);
    assert_true(want < NKEYS + NKEYS / 10); /* the absent half mostly absent */
    /* the pre-hashed form, on bk_hash64 with the filter's seed, gives the same */
    for (size_t i = 0; i < NQ; i++) hs[i] = bk_hash64(g_ptrs[i], g_lens[i], t->seed(t->f));
    hits = 99;
    assert_int_equal(t->hashes(t->f, hs, NQ, r2, &hits), BK_OK);
    assert_memory_equal(r1, r2, NQ);
    assert_int_equal(hits, want);
    for (size_t i = 0; i < NQ; i += 97) assert_int_equal(r2[i], t->one_hash(t->f, hs[i]));
    /* NULL results, NULL hits, both NULL */
    hits = 99;
    assert_int_equal(t->many(t->f, g_ptrs, g_lens, NQ, NULL, &hits), BK_OK);
    assert_int_equal(hits, want);
    hits = 99;
    assert_int_equal(t->hashes(t->f, hs, NQ, NULL, &hits), BK_OK);
    assert_int_equal(hits, want);
    memset(r3, 0xAA, sizeof r3);
    assert_int_equal(t->many(t->f, g_ptrs, g_lens, NQ, r3, NULL), BK_OK);
    assert_memory_equal(r1, r3, NQ);
    assert_int_equal(t->hashes(t->f, hs, NQ, NULL, NULL), BK_OK);
    /* odd batch sizes and offsets agree with the whole batch */
    for (size_t at = 0, c = 1; at < NQ; at += c, c = c * 3 % 511 + 1) {
        size_t m = NQ - at < c ? NQ - at : c;
        assert_int_equal(t->many(t->f, g_ptrs + at, g_lens + at, m, r3 + at, NULL), BK_OK);
    }
    assert_memory_equal(r1, r3, NQ);
    /* n = 0 with NULL arrays is fine */
    hits = 99;
    assert_int_equal(t->many(t->f, NULL, NULL, 0, NULL, &hits), BK_OK);
    assert_int_equal(hits, 0);
    assert_int_equal(t->hashes(t->f, NULL, 0, NULL, NULL), BK_OK);
    /* refused before any key: hits zeroed, results untouched */
    memset(r3, 0xAA, sizeof r3);
    hits = 99;
    assert_int_equal(t->many(NULL, g_ptrs, g_lens, NQ, r3, &hits), BK_EINVAL);
    assert_int_equal(hits, 0);
    hits = 99;
    assert_int_equal(t->many(t->f, NULL, g_lens, 3, r3, &hits), BK_EINVAL);
    assert_int_equal(hits, 0);
    assert_int_equal(t->many(t->f, g_ptrs, NULL, 3, r3, NULL), BK_EINVAL);
    const void *bad[3] = { g_ptrs[0], NULL, g_ptrs[2] };
    size_t blen[3] = { g_lens[0], 4, g_lens[2] };
    hits = 99;
    assert_int_equal(t->many(t->f, bad, blen, 3, r3, &hits), BK_EINVAL);
    assert_int_equal(hits, 0);
    hits = 99;
    assert_int_equal(t->hashes(NULL, hs, NQ, r3, &hits), BK_EINVAL);
    assert_int_equal(hits, 0);
    assert_int_equal(t->hashes(t->f, NULL, 3, r3, NULL), BK_EINVAL);
    for (size_t i = 0; i < NQ; i++) assert_int_equal(r3[i], 0xAA);
    /* a NULL key of length 0 is a key like any other */
    bad[1] = NULL;
    blen[1] = 0;
    assert_int_equal(t->many(t->f, bad, blen, 3, r3, NULL), BK_OK);
    assert_int_equal(r3[1], t->one(t->f, NULL, 0));
}

static void queries_every_type(void **state)
{
    (void)state;
    keys_init(1);
    bk_bloom *bl;
    bk_blocked *bd;
    bk_counting *co;
    bk_scalable *sc;
    bk_cuckoo *cu;
    bk_fuse *fu;
    bk_ribbon *rb;
    bk_aging *ag;
    bk_quotient *qu;
    bk_bloom_options blo = { .seed = 3 };
    assert_int_equal(bk_bloom_new(NKEYS, 0.01, &blo, &bl), BK_OK);
    assert_int_equal(bk_bloom_add_many(bl, g_ptrs, g_lens, NKEYS), BK_OK);
    assert_int_equal(bk_blocked_new(NKEYS, 0.01, NULL, &bd), BK_OK);
    assert_int_equal(bk_blocked_add_many(bd, g_ptrs, g_lens, NKEYS), BK_OK);
    assert_int_equal(bk_counting_new(NKEYS, 0.01, NULL, &co), BK_OK);
    assert_int_equal(bk_counting_add_many(co, g_ptrs, g_lens, NKEYS), BK_OK);
    /* a chain of several sub-filters */
    assert_int_equal(bk_scalable_new(NKEYS / 8, 0.01, NULL, &sc), BK_OK);
    assert_int_equal(bk_scalable_add_many(sc, g_ptrs, g_lens, NKEYS, NULL), BK_OK);
    assert_true(bk_scalable_filters(sc) > 2);
    bk_cuckoo_options cuo = { .seed = 5 };
    assert_int_equal(bk_cuckoo_new(NKEYS, 0.01, &cuo, &cu), BK_OK);
    assert_int_equal(bk_cuckoo_add_many(cu, g_ptrs, g_lens, NKEYS, NULL), BK_OK);
    assert_int_equal(bk_fuse_build(g_ptrs, g_lens, NKEYS, NULL, &fu), BK_OK);
    assert_int_equal(bk_ribbon_build(g_ptrs, g_lens, NKEYS, NULL, &rb), BK_OK);
    assert_int_equal(bk_aging_new_count(4 * NKEYS, 0.01, NULL, &ag), BK_OK);
    assert_int_equal(bk_aging_add_many(ag, g_ptrs, g_lens, NKEYS), BK_OK);
    assert_int_equal(bk_quotient_new(NKEYS, 0.01, NULL, &qu), BK_OK);
    assert_int_equal(bk_quotient_add_many(qu, g_ptrs, g_lens, NKEYS, NULL), BK_OK);
    bk_blocked *bd2;
    assert_int_equal(bk_blocked_new(NKEYS, 0.01, NULL, &bd2), BK_OK);
    assert_int_equal(bk_blocked_add_many(bd2, g_ptrs, g_lens, NKEYS), BK_OK);
    bk_filter *fi;
    assert_int_equal(bk_filter_wrap(BK_TYPE_BLOCKED, bd2, &fi), BK_OK);
    const qtype types[] = {
        QTYPE(bloom, bl),     QTYPE(blocked, bd), QTYPE(counting, co), QTYPE(scalable, sc), QTYPE(cuckoo, cu),
        QTYPE(fuse, fu),      QTYPE(aging, ag),   QTYPE(quotient, qu), QTYPE(filter, fi),
        QTYPE(ribbon, rb),
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_queries(&types[i]);
    bk_bloom_free(bl);
    bk_blocked_free(bd);
    bk_counting_free(co);
    bk_scalable_free(sc);
    bk_cuckoo_free(cu);
    bk_fuse_free(fu);
    bk_ribbon_free(rb);
    bk_aging_free(ag);
    bk_quotient_free(qu);
    bk_filter_free(fi);
}

/* ---- changing batches that stop early: the batch against one-key calls on a twin ---- */

typedef struct wtype {
    const char *name;
    void *(*make)(void);
    void (*destroy)(void *f);
    bk_status (*many)(void *f, const void *const *k, const size_t *l, size_t n, size_t *done);
    bk_status (*hashes)(void *f, const uint64_t *hs, size_t n, size_t *done);
    bk_status (*one)(void *f, const void *k, size_t len);
    bool (*has)(const void *f, const void *k, size_t len);
    uint64_t (*count)(const void *f);
    uint64_t (*seed)(const void *f);
} wtype;

/* A cuckoo filter that cannot grow, the smallest quotient filter, a non-scaling scalable filter,
 * and a cuckoo filter through the generic handle. */
static void *mk_cuckoo(void)
{
    bk_cuckoo *f;
    bk_cuckoo_options o = { .bucket_size = 2, .fingerprint_bits = 8, .max_kicks = 20, .seed = 9 };
    return bk_cuckoo_new_buckets(16, &o, &f) == BK_OK ? f : NULL;
}
static void *mk_quotient(void)
{
    bk_quotient *f;
    return bk_quotient_new_qr(BK_QUOTIENT_MIN_QBITS, 8, NULL, &f) == BK_OK ? f : NULL;
}
static void *mk_scalable(void)
{
    bk_scalable *f;
    bk_scalable_options o = { .flags = BK_SCALABLE_NONSCALING, .seed = 4 };
    return bk_scalable_new(50, 0.01, &o, &f) == BK_OK ? f : NULL;
}
static void *mk_filter(void)
{
    bk_filter *f;
    void *c = mk_cuckoo();
    return c && bk_filter_wrap(BK_TYPE_CUCKOO, c, &f) == BK_OK ? f : NULL;
}
static void fr_cuckoo(void *f) { bk_cuckoo_free(f); }
static void fr_quotient(void *f) { bk_quotient_free(f); }
static void fr_scalable(void *f) { bk_scalable_free(f); }
static void fr_filter(void *f) { bk_filter_free(f); }
#define WADAPT(T)                                                                                   \
    static bk_status T##_add_many(void *f, const void *const *k, const size_t *l, size_t n, size_t *d) \
    {                                                                                               \
        return bk_##T##_add_many(f, k, l, n, d);                                                    \
    }                                                                                               \
    static bk_status T##_add_hashes(void *f, const uint64_t *hs, size_t n, size_t *d)               \
    {                                                                                               \
        return bk_##T##_add_hashes(f, hs, n, d);                                                    \
    }                                                                                               \
    static bk_status T##_add(void *f, const void *k, size_t len) { return bk_##T##_add(f, k, len); } \
    static uint64_t T##_count(const void *f)                                                        \
    {                                                                                               \
        bk_stats s;                                                                                 \
        bk_##T##_stats(f, &s);                                                                      \
        return s.count;                                                                             \
    }
WADAPT(cuckoo)
WADAPT(quotient)
WADAPT(scalable)
WADAPT(filter)
#define WTYPE(T) { #T, mk_##T, fr_##T, T##_add_many, T##_add_hashes, T##_add, T##_one, T##_count, T##_seed }

static void adds_stop_early(void **state)
{
    (void)state;
    keys_init(2);
    const wtype types[] = { WTYPE(cuckoo), WTYPE(quotient), WTYPE(scalable), WTYPE(filter) };
    static uint64_t hs[NQ];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const wtype *w = &types[t];
        print_message("%s\n", w->name);
        void *one = w->make(), *bat = w->make(), *hat = w->make(), *nul = w->make();
        assert_non_null(one);
        assert_non_null(bat);
        assert_non_null(hat);
        assert_non_null(nul);
        /* one key at a time until the first failure */
        size_t stop = 0;
        bk_status first = BK_OK;
        for (; stop < NQ; stop++)
            if ((first = w->one(one, g_ptrs[stop], g_lens[stop])) != BK_OK) break;
        assert_true(stop < NQ);
        assert_int_not_equal(first, BK_OK);
        /* the batch stops at the same key with the same status */
        size_t done = 99;
        assert_int_equal(w->many(bat, g_ptrs, g_lens, NQ, &done), first);
        assert_int_equal(done, stop);
        for (size_t i = 0; i < NQ; i++) hs[i] = bk_hash64(g_ptrs[i], g_lens[i], w->seed(hat));
        done = 99;
        assert_int_equal(w->hashes(hat, hs, NQ, &done), first);
        assert_int_equal(done, stop);
        assert_int_equal(w->many(nul, g_ptrs, g_lens, NQ, NULL), first);
        /* the keys before it are in; the filters agree */
        for (size_t i = 0; i < stop; i++) assert_true(w->has(bat, g_ptrs[i], g_lens[i]));
        assert_int_equal(w->count(bat), w->count(one));
        assert_int_equal(w->count(hat), w->count(one));
        assert_int_equal(w->count(nul), w->count(one));
        /* a batch that fits: done = n */
        void *fresh = w->make();
        done = 99;
        assert_int_equal(w->many(fresh, g_ptrs, g_lens, stop / 2, &done), BK_OK);
        assert_int_equal(done, stop / 2);
        /* refused before any key */
        const void *bad[2] = { g_ptrs[NQ - 1], NULL };
        size_t blen[2] = { g_lens[NQ - 1], 3 };
        uint64_t before = w->count(fresh);
        done = 99;
        assert_int_equal(w->many(fresh, bad, blen, 2, &done), BK_EINVAL);
        assert_int_equal(done, 0);
        done = 99;
        assert_int_equal(w->hashes(fresh, NULL, 2, &done), BK_EINVAL);
        assert_int_equal(done, 0);
        assert_int_equal(w->many(NULL, g_ptrs, g_lens, 2, NULL), BK_EINVAL);
        assert_int_equal(w->count(fresh), before);
        w->destroy(one);
        w->destroy(bat);
        w->destroy(hat);
        w->destroy(nul);
        w->destroy(fresh);
    }
}

/* ---- add_if_absent: results[i] = 1 where the one-key call says BK_EEXISTS ---- */

static void add_if_absent_batches(void **state)
{
    (void)state;
    keys_init(3);
    /* a batch with repeats inside it and keys added before it */
    enum { B = 600 };
    static const void *ptrs[B];
    static size_t lens[B];
    static uint8_t res[B], want[B];
    for (size_t i = 0; i < B; i++) {
        size_t k = i % 3 == 2 ? i / 2 : i; /* every third key repeats an earlier one */
        ptrs[i] = g_ptrs[k];
        lens[i] = g_lens[k];
    }
    bk_aging *a1, *a2;
    assert_int_equal(bk_aging_new_count(100000, 0.001, NULL, &a1), BK_OK);
    assert_int_equal(bk_aging_new_count(100000, 0.001, NULL, &a2), BK_OK);
    assert_int_equal(bk_aging_add_many(a1, g_ptrs + 100, g_lens + 100, 50), BK_OK);
    assert_int_equal(bk_aging_add_many(a2, g_ptrs + 100, g_lens + 100, 50), BK_OK);
    for (size_t i = 0; i < B; i++) want[i] = bk_aging_add_if_absent(a1, ptrs[i], lens[i]) == BK_EEXISTS;
    size_t done = 99;
    assert_int_equal(bk_aging_add_if_absent_many(a2, ptrs, lens, B, res, &done), BK_OK);
    assert_int_equal(done, B);
    assert_memory_equal(res, want, B);
    assert_int_equal(bk_aging_add_if_absent_many(a2, ptrs, lens, B, NULL, NULL), BK_OK);
    assert_int_equal(bk_aging_add_if_absent_many(a2, NULL, lens, 2, res, &done), BK_EINVAL);
    assert_int_equal(done, 0);
    bk_aging_free(a1);
    bk_aging_free(a2);

    bk_cuckoo *c1, *c2;
    assert_int_equal(bk_cuckoo_new(4 * B, 0.001, NULL, &c1), BK_OK);
    assert_int_equal(bk_cuckoo_new(4 * B, 0.001, NULL, &c2), BK_OK);
    assert_int_equal(bk_cuckoo_add_many(c1, g_ptrs + 100, g_lens + 100, 50, NULL), BK_OK);
    assert_int_equal(bk_cuckoo_add_many(c2, g_ptrs + 100, g_lens + 100, 50, NULL), BK_OK);
    for (size_t i = 0; i < B; i++) want[i] = bk_cuckoo_add_if_absent(c1, ptrs[i], lens[i]) == BK_EEXISTS;
    done = 99;
    assert_int_equal(bk_cuckoo_add_if_absent_many(c2, ptrs, lens, B, res, &done), BK_OK);
    assert_int_equal(done, B);
    assert_memory_equal(res, want, B);
    assert_int_equal(bk_cuckoo_items(c2), bk_cuckoo_items(c1));
    bk_cuckoo_free(c1);
    bk_cuckoo_free(c2);

    /* a full cuckoo filter stops add_if_absent where the one-key calls first fail */
    bk_cuckoo *one = mk_cuckoo(), *bat = mk_cuckoo();
    size_t stop = 0;
    bk_status first = BK_OK;
    for (; stop < NQ; stop++) {
        first = bk_cuckoo_add_if_absent(one, g_ptrs[stop], g_lens[stop]);
        if (first != BK_OK && first != BK_EEXISTS) break;
        if (stop < B) want[stop] = first == BK_EEXISTS;
    }
    assert_true(stop < B);
    assert_int_equal(first, BK_EFULL);
    memset(res, 0xAA, sizeof res);
    done = 99;
    assert_int_equal(bk_cuckoo_add_if_absent_many(bat, g_ptrs, g_lens, NQ, res, &done), BK_EFULL);
    assert_int_equal(done, stop);
    assert_memory_equal(res, want, stop);
    assert_int_equal(res[stop], 0xAA); /* the key that stopped it and those after: untouched */
    assert_int_equal(bk_cuckoo_items(bat), bk_cuckoo_items(one));
    bk_cuckoo_free(one);
    bk_cuckoo_free(bat);
}

/* ---- removes stop at the first key certainly absent ---- */

static void removes_stop_at_absent(void **state)
{
    (void)state;
    keys_init(4);
    bk_cuckoo *c;
    bk_quotient *q;
    assert_int_equal(bk_cuckoo_new(NKEYS, 0.001, NULL, &c), BK_OK);
    assert_int_equal(bk_quotient_new(NKEYS, 0.001, NULL, &q), BK_OK);
    assert_int_equal(bk_cuckoo_add_many(c, g_ptrs, g_lens, 100, NULL), BK_OK);
    assert_int_equal(bk_quotient_add_many(q, g_ptrs, g_lens, 100, NULL), BK_OK);
    /* a key absent from both */
    size_t absent = NKEYS;
    while (bk_cuckoo_contains(c, g_ptrs[absent], g_lens[absent]) ||
           bk_quotient_contains(q, g_ptrs[absent], g_lens[absent]))
        absent++;
    const void *ptrs[5] = { g_ptrs[0], g_ptrs[1], g_ptrs[2], g_ptrs[absent], g_ptrs[3] };
    size_t lens[5] = { g_lens[0], g_lens[1], g_lens[2], g_lens[absent], g_lens[3] };
    uint64_t hs[5];
    size_t done = 99;
    assert_int_equal(bk_cuckoo_remove_many(c, ptrs, lens, 5, &done), BK_ENOTFOUND);
    assert_int_equal(done, 3);
    assert_int_equal(bk_cuckoo_items(c), 97);
    assert_true(bk_cuckoo_contains(c, g_ptrs[3], g_lens[3]));
    done = 99;
    assert_int_equal(bk_quotient_remove_many(q, ptrs, lens, 5, &done), BK_ENOTFOUND);
    assert_int_equal(done, 3);
    assert_int_equal(bk_quotient_total(q), 97);
    /* the pre-hashed forms, and NULL done */
    /* keys 4, 5, 6, the absent one, 7 */
    assert_int_equal(bk_cuckoo_seed(c), bk_quotient_seed(q));
    for (int i = 0; i < 5; i++) {
        size_t k = i == 3 ? absent : (size_t)(i < 3 ? 4 + i : 7);
        hs[i] = bk_hash64(g_ptrs[k], g_lens[k], bk_cuckoo_seed(c));
    }
    assert_int_equal(bk_cuckoo_remove_hashes(c, hs, 5, NULL), BK_ENOTFOUND);
    assert_int_equal(bk_cuckoo_items(c), 94);
    done = 99;
    assert_int_equal(bk_quotient_remove_hashes(q, hs, 5, &done), BK_ENOTFOUND);
    assert_int_equal(done, 3);
    assert_int_equal(bk_quotient_total(q), 94);
    /* all present: done = n */
    assert_int_equal(bk_cuckoo_remove_many(c, g_ptrs + 10, g_lens + 10, 20, &done), BK_OK);
    assert_int_equal(done, 20);
    assert_int_equal(bk_quotient_remove_many(q, g_ptrs + 10, g_lens + 10, 20, NULL), BK_OK);
    assert_int_equal(bk_cuckoo_items(c), 74);
    assert_int_equal(bk_quotient_total(q), 74);
    /* the counts batch answers as the one-key count */
    uint64_t qh[NQ], counts[NQ];
    for (size_t i = 0; i < NQ; i++) qh[i] = bk_hash64(g_ptrs[i], g_lens[i], bk_quotient_seed(q));
    assert_int_equal(bk_quotient_count_hashes(q, qh, NQ, counts), BK_OK);
    for (size_t i = 0; i < NQ; i++) assert_int_equal(counts[i], bk_quotient_count_hash(q, qh[i]));
    assert_int_equal(bk_quotient_count_hashes(q, NULL, 2, counts), BK_EINVAL);
    assert_int_equal(bk_quotient_count_hashes(NULL, qh, 2, counts), BK_EINVAL);
    bk_cuckoo_free(c);
    bk_quotient_free(q);
}

/* ---- the adds that cannot fail for one key: all or (BK_EINVAL) nothing ---- */

static void plain_adds_all_or_nothing(void **state)
{
    (void)state;
    keys_init(5);
    const void *bad[3] = { g_ptrs[0], g_ptrs[1], NULL };
    size_t blen[3] = { g_lens[0], g_lens[1], 2 };
    bk_stats s;
    bk_bloom *bl;
    assert_int_equal(bk_bloom_new(NKEYS, 0.01, NULL, &bl), BK_OK);
    assert_int_equal(bk_bloom_add_many(bl, bad, blen, 3), BK_EINVAL);
    assert_false(bk_bloom_contains(bl, g_ptrs[0], g_lens[0]));
    bk_bloom_stats(bl, &s);
    assert_int_equal(s.count, 0);
    bk_bloom_free(bl);
    bk_blocked *bd;
    assert_int_equal(bk_blocked_new(NKEYS, 0.01, NULL, &bd), BK_OK);
    assert_int_equal(bk_blocked_add_many(bd, bad, blen, 3), BK_EINVAL);
    assert_int_equal(bk_blocked_add_many_atomic(bd, bad, blen, 3), BK_EINVAL);
    assert_false(bk_blocked_contains(bd, g_ptrs[0], g_lens[0]));
    bk_blocked_free(bd);
    bk_counting *co;
    assert_int_equal(bk_counting_new(NKEYS, 0.01, NULL, &co), BK_OK);
    assert_int_equal(bk_counting_add_many(co, bad, blen, 3), BK_EINVAL);
    assert_false(bk_counting_contains(co, g_ptrs[0], g_lens[0]));
    bk_counting_free(co);
    bk_aging *ag;
    assert_int_equal(bk_aging_new_count(NKEYS, 0.01, NULL, &ag), BK_OK);
    assert_int_equal(bk_aging_add_many(ag, bad, blen, 3), BK_EINVAL);
    assert_false(bk_aging_contains(ag, g_ptrs[0], g_lens[0]));
    bk_aging_free(ag);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(queries_every_type),
        cmocka_unit_test(adds_stop_early),
        cmocka_unit_test(add_if_absent_batches),
        cmocka_unit_test(removes_stop_at_absent),
        cmocka_unit_test(plain_adds_all_or_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
