/* uint64-key calls (bk_<type>_*_u64, bk_filter_*_u64): the same filter and the same answers as the
 * byte forms on the key's 8 little-endian bytes, for every type; and the hashes they rest on. */
#include "testutil.h"
#include <bloomkit/bloomkit.h>
#include "filters/internal.h"

#define NKEYS 20000
#define NABSENT 100000
#define SEED UINT64_C(0x5eed0f0e4)

static void le_bytes(uint64_t k, uint8_t b[8])
{
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(k >> (8 * i));
}

/* Present keys: splitmix64 stream 1; absent keys: stream 2 (distinct from the present ones with
 * overwhelming probability, and only compared form against form, so a collision cannot fail). */
static uint64_t key_at(uint64_t stream, uint64_t i)
{
    uint64_t s = stream * UINT64_C(0x100000001b3) + i * UINT64_C(0x9e3779b97f4a7c15);
    return tu_splitmix(&s);
}

/* ---- the hashes ---- */

static void test_hash_u64_is_xxh3_of_8_bytes(void **state)
{
    (void)state;
    const uint64_t seeds[] = { 0, 1, SEED, UINT64_MAX, UINT64_C(0x8000000000000000), UINT64_C(0xffffffff) };
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++)
        for (uint64_t i = 0; i < 10000; i++) {
            uint64_t k = i < 64 ? (i < 32 ? UINT64_C(1) << i : ~(UINT64_C(1) << (i - 32))) : key_at(3, i);
            uint8_t b[8];
            le_bytes(k, b);
            uint64_t want = XXH3_64bits_withSeed(b, 8, seeds[s]);
            assert_int_equal(bk__hash_u64(k, seeds[s]), want);
            assert_int_equal(bk__hash_u64_keyed(k, bk__hash_u64_flip(seeds[s])), want);
            uint64_t fold = bk__hash_u64_fold(bk__hash_u64_flip(seeds[s]));
            assert_int_equal(bk__hash_u64_folded(k, fold), want);
            assert_int_equal(bk__hash_u64_folded1(k, fold), want);
            assert_int_equal(bk_hash64(b, 8, seeds[s]), want);
            assert_int_equal(bk__hash(b, 8, seeds[s]), want);
        }
}

/* bk__hash's inline dispatch of short lengths gives XXH3's values at every length and alignment. */
static void test_hash_dispatch_every_length(void **state)
{
    (void)state;
    uint8_t buf[300 + 8];
    uint64_t st = 7;
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)tu_splitmix(&st);
    const uint64_t seeds[] = { 0, SEED, UINT64_MAX };
    for (size_t s = 0; s < 3; s++)
        for (size_t len = 0; len <= 300; len++)
            for (size_t off = 0; off < 8; off++) {
                uint64_t want = XXH3_64bits_withSeed(buf + off, len, seeds[s]);
                assert_int_equal(bk__hash(buf + off, len, seeds[s]), want);
                assert_int_equal(bk_hash64(buf + off, len, seeds[s]), want);
            }
    assert_int_equal(bk__hash(NULL, 0, SEED), XXH3_64bits_withSeed(NULL, 0, SEED));
}

/* ---- one table of the two forms per type, so every type runs the same checks ---- */

typedef struct form {
    const char *name;
    void *(*make)(void);
    bk_type type;
    bk_status (*add_b)(void *f, const void *k, size_t len);
    bk_status (*add_u)(void *f, uint64_t k);
    bool (*has_b)(const void *f, const void *k, size_t len);
    bool (*has_u)(const void *f, uint64_t k);
    bk_status (*rm_b)(void *f, const void *k, size_t len);      /* NULL: the type does not remove */
    bk_status (*rm_u)(void *f, uint64_t k);
    bk_status (*aia_b)(void *f, const void *k, size_t len);     /* NULL: no add_if_absent */
    bk_status (*aia_u)(void *f, uint64_t k);
} form;

/* Typed calls behind void pointers (one wrapper per call: no casts of function pointers). */
#define WRAP_ADD(T, OP)                                                                              \
    static bk_status T##_##OP##_b(void *f, const void *k, size_t len) { return bk_##T##_##OP(f, k, len); } \
    static bk_status T##_##OP##_u(void *f, uint64_t k) { return bk_##T##_##OP##_u64(f, k); }
#define WRAP_HAS(T)                                                                                  \
    static bool T##_has_b(const void *f, const void *k, size_t len) { return bk_##T##_contains(f, k, len); } \
    static bool T##_has_u(const void *f, uint64_t k) { return bk_##T##_contains_u64(f, k); }
WRAP_ADD(bloom, add)
WRAP_HAS(bloom)
WRAP_ADD(blocked, add)
WRAP_HAS(blocked)
WRAP_ADD(counting, add)
WRAP_ADD(counting, remove)
WRAP_HAS(counting)
WRAP_ADD(scalable, add)
WRAP_ADD(scalable, add_if_absent)
WRAP_HAS(scalable)
WRAP_ADD(cuckoo, add)
WRAP_ADD(cuckoo, remove)
WRAP_ADD(cuckoo, add_if_absent)
WRAP_HAS(cuckoo)
WRAP_ADD(aging, add)
WRAP_ADD(aging, add_if_absent)
WRAP_HAS(aging)
WRAP_ADD(quotient, add)
WRAP_ADD(quotient, remove)
WRAP_HAS(quotient)
WRAP_HAS(fuse)
WRAP_HAS(ribbon)

static void *make_bloom(void)
{
    bk_bloom_options o = { .layout = BK_LAYOUT_STANDARD, .seed = SEED };
    bk_bloom *f;
    return bk_bloom_new(NKEYS, 0.01, &o, &f) == BK_OK ? f : NULL;
}
static void *make_partitioned(void)
{
    bk_bloom_options o = { .layout = BK_LAYOUT_PARTITIONED, .seed = SEED };
    bk_bloom *f;
    return bk_bloom_new(NKEYS, 0.01, &o, &f) == BK_OK ? f : NULL;
}
static void *make_blocked(void)
{
    bk_blocked_options o = { .layout = BK_BLOCKED_SPLIT256, .seed = SEED };
    bk_blocked *f;
    return bk_blocked_new(NKEYS, 0.01, &o, &f) == BK_OK ? f : NULL;
}
static void *make_blocked512(void)
{
    bk_blocked_options o = { .layout = BK_BLOCKED_512, .seed = SEED };
    bk_blocked *f;
    return bk_blocked_new(NKEYS, 0.01, &o, &f) == BK_OK ? f : NULL;
}
static void *make_counting(void)
{
    bk_counting_options o = { .counter_bits = 4, .seed = SEED };
    bk_counting *f;
    return bk_counting_new(NKEYS, 0.01, &o, &f) == BK_OK ? f : NULL;
}
static void *make_scalable(void)
{
    bk_scalable_options o = { 0 };
    o.seed = SEED;
    bk_scalable *f;
    return bk_scalable_new(NKEYS / 16, 0.01, &o, &f) == BK_OK ? f : NULL; /* grows: several sub-filters */
}
static void *make_cuckoo(void)
{
    bk_cuckoo_options o = { 0 };
    o.seed = SEED;
    bk_cuckoo *f;
    return bk_cuckoo_new(NKEYS, 0.01, &o, &f) == BK_OK ? f : NULL;
}
static void *make_aging(void)
{
    bk_aging_options o = { 0 };
    o.seed = SEED;
    bk_aging *f;
    return bk_aging_new_count(NKEYS / 2, 0.01, &o, &f) == BK_OK ? f : NULL; /* turns its ring */
}
static void *make_quotient(void)
{
    bk_quotient_options o = { 0 };
    o.seed = SEED;
    bk_quotient *f;
    return bk_quotient_new(NKEYS, 0.01, &o, &f) == BK_OK ? f : NULL;
}

static const form FORMS[] = {
    { "bloom", make_bloom, BK_TYPE_BLOOM, bloom_add_b, bloom_add_u,
      bloom_has_b, bloom_has_u, NULL, NULL, NULL, NULL },
    { "partitioned", make_partitioned, BK_TYPE_BLOOM, bloom_add_b, bloom_add_u,
      bloom_has_b, bloom_has_u, NULL, NULL, NULL, NULL },
    { "blocked", make_blocked, BK_TYPE_BLOCKED, blocked_add_b, blocked_add_u,
      blocked_has_b, blocked_has_u, NULL, NULL, NULL, NULL },
    { "blocked512", make_blocked512, BK_TYPE_BLOCKED, blocked_add_b, blocked_add_u,
      blocked_has_b, blocked_has_u, NULL, NULL, NULL, NULL },
    { "counting", make_counting, BK_TYPE_COUNTING, counting_add_b, counting_add_u,
      counting_has_b, counting_has_u, counting_remove_b,
      counting_remove_u, NULL, NULL },
    { "scalable", make_scalable, BK_TYPE_SCALABLE, scalable_add_b, scalable_add_u,
      scalable_has_b, scalable_has_u, NULL, NULL,
      scalable_add_if_absent_b, scalable_add_if_absent_u },
    { "cuckoo", make_cuckoo, BK_TYPE_CUCKOO, cuckoo_add_b, cuckoo_add_u,
      cuckoo_has_b, cuckoo_has_u, cuckoo_remove_b,
      cuckoo_remove_u, cuckoo_add_if_absent_b, cuckoo_add_if_absent_u },
    { "aging", make_aging, BK_TYPE_AGING, aging_add_b, aging_add_u,
      aging_has_b, aging_has_u, NULL, NULL,
      aging_add_if_absent_b, aging_add_if_absent_u },
    { "quotient", make_quotient, BK_TYPE_QUOTIENT, quotient_add_b, quotient_add_u,
      quotient_has_b, quotient_has_u, quotient_remove_b,
      quotient_remove_u, NULL, NULL },
};

/* The saved bytes of a typed filter (wrapped for the call, unwrapped after). */
static void *saved(const form *t, void **typed, size_t *len)
{
    bk_filter *h;
    assert_int_equal(bk_filter_wrap(t->type, *typed, &h), BK_OK);
    void *buf;
    assert_int_equal(bk_filter_save_alloc(h, &buf, len), BK_OK);
    assert_int_equal(bk_filter_unwrap(h, t->type, typed), BK_OK);
    return buf;
}

static void assert_same_filter(const form *t, void **a, void **b)
{
    size_t la, lb;
    void *ba = saved(t, a, &la), *bb = saved(t, b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(ba, bb, la);
    free(ba);
    free(bb);
}

/* On filter f: both forms find every key of [lo, hi) of stream 1 (want = true) or agree on it. */
static void assert_forms_agree(const form *t, const void *f, uint64_t stream, uint64_t n, bool all_present)
{
    uint64_t disagree = 0, present = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = key_at(stream, i);
        uint8_t b[8];
        le_bytes(k, b);
        bool hb = t->has_b(f, b, 8), hu = t->has_u(f, k);
        disagree += hb != hu;
        present += hu;
    }
    if (disagree) print_error("%s: %llu keys answered differently\n", t->name, (unsigned long long)disagree);
    assert_int_equal(disagree, 0);
    if (all_present) assert_int_equal(present, n);
}

static void free_typed(const form *t, void *f)
{
    bk_filter *h;
    assert_int_equal(bk_filter_wrap(t->type, f, &h), BK_OK);
    bk_filter_free(h);
}

static void check_form(const form *t)
{
    void *a = t->make(), *b = t->make();
    assert_non_null(a);
    assert_non_null(b);
    /* a: byte form, b: uint64 form, same keys: the same filter, byte for byte */
    for (uint64_t i = 0; i < NKEYS; i++) {
        uint64_t k = key_at(1, i);
        uint8_t kb[8];
        le_bytes(k, kb);
        assert_int_equal(t->add_b(a, kb, 8), BK_OK);
        assert_int_equal(t->add_u(b, k), BK_OK);
    }
    assert_same_filter(t, &a, &b);
    /* the aging filter has turned its ring: only the newest window is guaranteed present */
    for (int which = 0; which < 2; which++) {
        void *f = which ? b : a;
        if (t->type == BK_TYPE_AGING) {
            uint64_t bad = 0;
            for (uint64_t i = NKEYS / 2; i < NKEYS; i++) bad += !t->has_u(f, key_at(1, i));
            assert_int_equal(bad, 0);
        }
        assert_forms_agree(t, f, 1, NKEYS, t->type != BK_TYPE_AGING);
        assert_forms_agree(t, f, 2, NABSENT, false);
    }
    /* removes: half the keys through each form, the filters stay identical */
    if (t->rm_b) {
        for (uint64_t i = 0; i < NKEYS; i += 2) {
            uint64_t k = key_at(1, i);
            uint8_t kb[8];
            le_bytes(k, kb);
            assert_int_equal(t->rm_b(a, kb, 8), BK_OK);
            assert_int_equal(t->rm_u(b, k), BK_OK);
        }
        assert_same_filter(t, &a, &b);
        for (uint64_t i = 1; i < NKEYS; i += 2) assert_true(t->has_u(b, key_at(1, i)));
        assert_forms_agree(t, b, 2, NABSENT, false);
    }
    /* add_if_absent: the same statuses (new keys and repeats) and the same filter */
    if (t->aia_b) {
        void *c = t->make(), *d = t->make();
        for (uint64_t i = 0; i < NKEYS; i++) {
            uint64_t k = key_at(4, i % (NKEYS / 2)); /* every key twice */
            uint8_t kb[8];
            le_bytes(k, kb);
            bk_status sb = t->aia_b(c, kb, 8), su = t->aia_u(d, k);
            assert_int_equal(sb, su);
            assert_true(sb == BK_OK || sb == BK_EEXISTS);
            if (i >= NKEYS / 2) assert_int_equal(su, BK_EEXISTS);
        }
        assert_same_filter(t, &c, &d);
        free_typed(t, c);
        free_typed(t, d);
    }
    /* NULL filters are refused by the adds */
    assert_int_equal(t->add_u(NULL, 1), BK_EINVAL);
    free_typed(t, a);
    free_typed(t, b);
}

static void test_bloom(void **state) { (void)state; check_form(&FORMS[0]); }
static void test_partitioned(void **state) { (void)state; check_form(&FORMS[1]); }
static void test_blocked(void **state) { (void)state; check_form(&FORMS[2]); }
static void test_blocked512(void **state) { (void)state; check_form(&FORMS[3]); }
static void test_counting(void **state) { (void)state; check_form(&FORMS[4]); }
static void test_scalable(void **state) { (void)state; check_form(&FORMS[5]); }
static void test_cuckoo(void **state) { (void)state; check_form(&FORMS[6]); }
static void test_aging(void **state) { (void)state; check_form(&FORMS[7]); }
static void test_quotient(void **state) { (void)state; check_form(&FORMS[8]); }

/* Every SIMD path of the blocked filter: uint64 and byte forms set the same bits. */
static void test_blocked_every_path(void **state)
{
    (void)state;
    for (int layout = 0; layout < 2; layout++)
        for (bk_simd s = BK_SIMD_SCALAR; s <= bk_simd_best(); s++) {
            bk_blocked_options o = { .layout = layout ? BK_BLOCKED_512 : BK_BLOCKED_SPLIT256, .seed = SEED };
            bk_blocked *a, *b;
            assert_int_equal(bk_blocked_new(NKEYS, 0.01, &o, &a), BK_OK);
            assert_int_equal(bk_blocked_new(NKEYS, 0.01, &o, &b), BK_OK);
            assert_int_equal(bk_blocked_set_simd(a, s), BK_OK);
            assert_int_equal(bk_blocked_set_simd(b, s), BK_OK);
            assert_int_equal(bk_blocked_simd(b), s);
            for (uint64_t i = 0; i < NKEYS; i++) {
                uint64_t k = key_at(1, i);
                uint8_t kb[8];
                le_bytes(k, kb);
                assert_int_equal(bk_blocked_add(a, kb, 8), BK_OK);
                assert_int_equal(bk_blocked_add_u64(b, k), BK_OK);
            }
            size_t la, lb;
            const uint8_t *da = bk_blocked_data(a, &la), *db = bk_blocked_data(b, &lb);
            assert_int_equal(la, lb);
            assert_memory_equal(da, db, la);
            assert_int_equal(bk_blocked_count(a), bk_blocked_count(b));
            for (uint64_t i = 0; i < NKEYS; i++) assert_true(bk_blocked_contains_u64(a, key_at(1, i)));
            for (uint64_t i = 0; i < NABSENT; i++) {
                uint64_t k = key_at(2, i);
                uint8_t kb[8];
                le_bytes(k, kb);
                assert_int_equal(bk_blocked_contains_u64(a, k), bk_blocked_contains(a, kb, 8));
                /* the hash form runs the path's other kernel: the uint64 one must agree with it */
                assert_int_equal(bk_blocked_contains_u64(a, k), bk_blocked_contains_hash(a, bk_hash64(kb, 8, SEED)));
            }
            bk_blocked_free(a);
            bk_blocked_free(b);
        }
}

/* The static fuse filter: built from the keys' bytes, queried both ways. */
static void test_fuse(void **state)
{
    (void)state;
    static uint8_t kb[NKEYS][8];
    static const void *ptrs[NKEYS];
    static size_t lens[NKEYS];
    for (uint64_t i = 0; i < NKEYS; i++) {
        le_bytes(key_at(1, i), kb[i]);
        ptrs[i] = kb[i];
        lens[i] = 8;
    }
    for (uint32_t bits = 8; bits <= 16; bits += 8) {
        bk_fuse_options o = { .fingerprint_bits = bits, .seed = SEED };
        bk_fuse *f;
        assert_int_equal(bk_fuse_build(ptrs, lens, NKEYS, &o, &f), BK_OK);
        form t = { "fuse", NULL, BK_TYPE_FUSE, NULL, NULL, fuse_has_b,
                   fuse_has_u, NULL, NULL, NULL, NULL };
        assert_forms_agree(&t, f, 1, NKEYS, true);
        assert_forms_agree(&t, f, 2, NABSENT, false);
        /* the 8-byte and uint64 calls share one path (the hash computed inside it); the hash form runs
         * the filter's other query: the two must agree on every key */
        for (uint64_t i = 0; i < NABSENT; i++) {
            uint64_t k = key_at(2, i);
            uint8_t b[8];
            le_bytes(k, b);
            assert_int_equal(bk_fuse_contains_u64(f, k), bk_fuse_contains_hash(f, bk_hash64(b, 8, SEED)));
        }
        for (uint64_t i = 0; i < NKEYS; i++) assert_true(bk_fuse_contains_hash(f, bk_hash64(kb[i], 8, SEED)));
        bk_fuse_free(f);
    }
}

/* The static Ribbon filter: built from uint64 keys (bk_ribbon_build_u64) and from their bytes, the
 * same filter; queried both ways. */
static void test_ribbon(void **state)
{
    (void)state;
    static uint8_t kb[NKEYS][8];
    static const void *ptrs[NKEYS];
    static size_t lens[NKEYS];
    static uint64_t ks[NKEYS];
    for (uint64_t i = 0; i < NKEYS; i++) {
        ks[i] = key_at(1, i);
        le_bytes(ks[i], kb[i]);
        ptrs[i] = kb[i];
        lens[i] = 8;
    }
    bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
    o.fpr = 0.003;
    o.seed = SEED;
    bk_ribbon *f, *g;
    assert_int_equal(bk_ribbon_build(ptrs, lens, NKEYS, &o, &f), BK_OK);
    assert_int_equal(bk_ribbon_build_u64(ks, NKEYS, &o, &g), BK_OK);
    size_t la, lb;
    const uint8_t *da = bk_ribbon_data(f, &la), *db = bk_ribbon_data(g, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    form t = { "ribbon", NULL, BK_TYPE_RIBBON, NULL, NULL, ribbon_has_b, ribbon_has_u, NULL, NULL, NULL, NULL };
    assert_forms_agree(&t, f, 1, NKEYS, true);
    assert_forms_agree(&t, f, 2, NABSENT, false);
    bk_ribbon_free(f);
    bk_ribbon_free(g);
}

/* The generic handle over every type: bk_filter_*_u64 against bk_filter_* on the same handle. */
static void test_generic_handle(void **state)
{
    (void)state;
    for (size_t j = 0; j < sizeof FORMS / sizeof FORMS[0]; j++) {
        const form *t = &FORMS[j];
        bk_filter *a, *b;
        assert_int_equal(bk_filter_wrap(t->type, t->make(), &a), BK_OK);
        assert_int_equal(bk_filter_wrap(t->type, t->make(), &b), BK_OK);
        for (uint64_t i = 0; i < NKEYS / 4; i++) {
            uint64_t k = key_at(1, i);
            uint8_t kb[8];
            le_bytes(k, kb);
            assert_int_equal(bk_filter_add(a, kb, 8), BK_OK);
            assert_int_equal(bk_filter_add_u64(b, k), BK_OK);
        }
        void *ba, *bb;
        size_t la, lb;
        assert_int_equal(bk_filter_save_alloc(a, &ba, &la), BK_OK);
        assert_int_equal(bk_filter_save_alloc(b, &bb, &lb), BK_OK);
        assert_int_equal(la, lb);
        assert_memory_equal(ba, bb, la);
        free(ba);
        free(bb);
        for (uint64_t i = 0; i < NKEYS / 4; i++) assert_true(bk_filter_contains_u64(a, key_at(1, i)));
        for (uint64_t i = 0; i < NABSENT / 4; i++) {
            uint64_t k = key_at(2, i);
            uint8_t kb[8];
            le_bytes(k, kb);
            assert_int_equal(bk_filter_contains_u64(b, k), bk_filter_contains(b, kb, 8));
        }
        if (t->rm_b) {
            for (uint64_t i = 0; i < NKEYS / 4; i += 2) assert_int_equal(bk_filter_remove_u64(b, key_at(1, i)), BK_OK);
            for (uint64_t i = 1; i < NKEYS / 4; i += 2) assert_true(bk_filter_contains_u64(b, key_at(1, i)));
        } else {
            assert_int_equal(bk_filter_remove_u64(b, key_at(1, 0)), BK_ENOTSUP);
        }
        bk_filter_free(a);
        bk_filter_free(b);
    }
    assert_int_equal(bk_filter_add_u64(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_filter_remove_u64(NULL, 1), BK_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_u64_is_xxh3_of_8_bytes),
        cmocka_unit_test(test_hash_dispatch_every_length),
        cmocka_unit_test(test_bloom),
        cmocka_unit_test(test_partitioned),
        cmocka_unit_test(test_blocked),
        cmocka_unit_test(test_blocked512),
        cmocka_unit_test(test_blocked_every_path),
        cmocka_unit_test(test_counting),
        cmocka_unit_test(test_scalable),
        cmocka_unit_test(test_cuckoo),
        cmocka_unit_test(test_aging),
        cmocka_unit_test(test_quotient),
        cmocka_unit_test(test_fuse),
        cmocka_unit_test(test_ribbon),
        cmocka_unit_test(test_generic_handle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
