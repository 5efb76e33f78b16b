/*
 * One factory per filter type (and layout), shared by the persistence tests (tests/test_persist.c),
 * the fuzz seed-corpus generator (fuzz/gen_corpus.c) and the load benchmark (bench/bench_load.c).
 * Adding a type to persistence = one registry line in src/filter.c + one entry in tf_factories below.
 * Plain C, no test framework: a factory returns NULL on failure.
 */
#ifndef BK_TEST_FACTORIES_H
#define BK_TEST_FACTORIES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <bloomkit/bloomkit.h>

/* Key i of set `set`: 16 bytes, distinct across sets and i (the same keys as testutil.h's). */
typedef struct { uint8_t b[16]; } tf_key;
static inline tf_key tf_make_key(uint64_t set, uint64_t i)
{
    tf_key k;
    uint64_t a = set * UINT64_C(0x100000001b3) + 0x5bd1e995, c = i;
    memcpy(k.b, &a, 8);
    memcpy(k.b + 8, &c, 8);
    return k;
}

/* Insert keys (set 1, 0..nkeys-1) through the generic handle, in batches. */
static inline bk_status tf_fill(bk_filter *f, uint64_t nkeys)
{
    enum { B = 1024 };
    static tf_key keys[B];
    const void *ptrs[B];
    size_t lens[B];
    for (uint64_t i = 0; i < nkeys; i += B) {
        size_t n = nkeys - i < B ? (size_t)(nkeys - i) : B;
        for (size_t j = 0; j < n; j++) {
            keys[j] = tf_make_key(1, i + j);
            ptrs[j] = keys[j].b;
            lens[j] = sizeof keys[j].b;
        }
        bk_status s = bk_filter_add_many(f, ptrs, lens, n, NULL);
        if (s != BK_OK) return s;
    }
    return BK_OK;
}

/* The allocator every factory makes its filter (and the handle) with; NULL: the default.
 * tests/test_allocator.c sets it around a factory's call. */
static const bk_allocator *tf_allocator;

typedef struct tf_factory {
    const char *name;
    bk_type type;
    /* true when the type supports BK_OPEN_WRITE_SHARED (atomic inserts into a shared mapping) */
    bool shared_writable;
    /* A filter sized for `capacity` keys at FPR 1% holding keys (set 1, 0..nkeys-1), hashed with
     * `seed`; NULL on failure. Static types (fuse) are built from exactly those keys. */
    bk_filter *(*make)(uint64_t capacity, uint64_t nkeys, uint64_t seed);
    /* true for static sets (fuse): built once from all keys; add, remove, merge and clear through the
     * handle return BK_ENOTSUP */
    bool static_set;
    /* the sketches (count-min, Top-K): an add counts 1. A count-min sketch keeps the filter contract
     * (contains = estimate > 0: no false negatives); a Top-K's contains is "in the current top k", not
     * membership, so tests asserting no false negatives skip it (tf_membership) */
    bool sketch;
    /* the name of its golden file (tests/golden/<golden>-v1.0.bkf) when it is not the factory's: a
     * type that now writes a newer body keeps the file of its earlier body under the factory's name
     * (test_golden checks both) */
    const char *golden;
} tf_factory;

/* Whether contains answers membership with no false negatives (every type but Top-K). */
static inline bool tf_membership(const struct tf_factory *f) { return f->type != BK_TYPE_TOPK; }

static inline bk_filter *tf_wrap_fill(bk_type t, void *typed, void (*free_typed)(void *), uint64_t nkeys)
{
    bk_filter *f;
    if (bk_filter_wrap(t, typed, &f) != BK_OK) {
        free_typed(typed);
        return NULL;
    }
    if (tf_fill(f, nkeys) != BK_OK) {
        bk_filter_free(f);
        return NULL;
    }
    return f;
}

static void tf_bloom_free(void *p) { bk_bloom_free(p); }
static inline bk_filter *tf_make_bloom(bk_layout layout, uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    bk_bloom_options o = { .layout = layout, .seed = seed, .allocator = tf_allocator };
    bk_bloom *b;
    if (bk_bloom_new(capacity, 0.01, &o, &b) != BK_OK) return NULL;
    return tf_wrap_fill(BK_TYPE_BLOOM, b, tf_bloom_free, nkeys);
}
static bk_filter *tf_bloom_standard(uint64_t c, uint64_t n, uint64_t s)
{
    return tf_make_bloom(BK_LAYOUT_STANDARD, c, n, s);
}
static bk_filter *tf_bloom_partitioned(uint64_t c, uint64_t n, uint64_t s)
{
    return tf_make_bloom(BK_LAYOUT_PARTITIONED, c, n, s);
}

static void tf_blocked_free(void *p) { bk_blocked_free(p); }
static inline bk_filter *tf_make_blocked(bk_blocked_layout layout, uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    bk_blocked_options o = { .layout = layout, .seed = seed, .allocator = tf_allocator };
    bk_blocked *b;
    if (bk_blocked_new(capacity, 0.01, &o, &b) != BK_OK) return NULL;
    return tf_wrap_fill(BK_TYPE_BLOCKED, b, tf_blocked_free, nkeys);
}
static bk_filter *tf_blocked_split(uint64_t c, uint64_t n, uint64_t s)
{
    return tf_make_blocked(BK_BLOCKED_SPLIT256, c, n, s);
}
static bk_filter *tf_blocked_512(uint64_t c, uint64_t n, uint64_t s)
{
    return tf_make_blocked(BK_BLOCKED_512, c, n, s);
}
static void tf_counting_free(void *p) { bk_counting_free(p); }
static inline bk_filter *tf_make_counting(uint32_t bits, uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    bk_counting_options o = { .counter_bits = bits, .seed = seed, .allocator = tf_allocator };
    bk_counting *c;
    if (bk_counting_new(capacity, 0.01, &o, &c) != BK_OK) return NULL;
    return tf_wrap_fill(BK_TYPE_COUNTING, c, tf_counting_free, nkeys);
}
static bk_filter *tf_counting4(uint64_t c, uint64_t n, uint64_t s) { return tf_make_counting(4, c, n, s); }
static bk_filter *tf_counting8(uint64_t c, uint64_t n, uint64_t s) { return tf_make_counting(8, c, n, s); }

/* A chain that starts at capacity / 16 keys, so `capacity` keys make about five sub-filters.
 * legacy: fixed error shares (BK_SCALABLE_FIXED_SHARES) filled with add_if_absent, as every chain was
 * made when the v1.0 golden files were written (they must come out byte for byte the same);
 * otherwise the defaults (budget carried forward) and the generic handle's plain adds. */
static void tf_scalable_free(void *p) { bk_scalable_free(p); }
static inline bk_filter *tf_make_scalable(uint32_t flags, bool legacy, uint64_t capacity, uint64_t nkeys,
                                          uint64_t seed)
{
    bk_scalable_options o = bk_scalable_default_options();
    o.seed = seed;
    o.allocator = tf_allocator;
    o.flags = flags | (legacy ? BK_SCALABLE_FIXED_SHARES : 0);
    if (legacy) o.tightening = 0.9; /* the default then */
    bk_scalable *c;
    if (bk_scalable_new(capacity / 16 ? capacity / 16 : 1, 0.01, &o, &c) != BK_OK) return NULL;
    if (!legacy) return tf_wrap_fill(BK_TYPE_SCALABLE, c, tf_scalable_free, nkeys);
    for (uint64_t i = 0; i < nkeys; i++) {
        tf_key k = tf_make_key(1, i);
        bk_status s = bk_scalable_add_if_absent(c, k.b, sizeof k.b);
        if (s != BK_OK && s != BK_EEXISTS) {
            bk_scalable_free(c);
            return NULL;
        }
    }
    return tf_wrap_fill(BK_TYPE_SCALABLE, c, tf_scalable_free, 0);
}
/* "scalable": classic sub-filters (the only kind when the v1.0 golden files were written);
 * "scalable-blocked": the default blocked sub-filters; both with the sizing and adds of then.
 * "scalable-carry": a chain made with today's defaults. */
static bk_filter *tf_scalable(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    return tf_make_scalable(BK_SCALABLE_CLASSIC, true, capacity, nkeys, seed);
}
static bk_filter *tf_scalable_blocked(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    return tf_make_scalable(0, true, capacity, nkeys, seed);
}
static bk_filter *tf_scalable_carry(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    return tf_make_scalable(0, false, capacity, nkeys, seed);
}
/* "scalable-compact", "scalable-compact-classic": compact chains (BK_SCALABLE_COMPACT, the Redis
 * module's), a small classic sub-filter 0 then blocked or classic ones. */
static bk_filter *tf_scalable_compact(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    return tf_make_scalable(BK_SCALABLE_COMPACT, false, capacity, nkeys, seed);
}
static bk_filter *tf_scalable_compact_classic(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    return tf_make_scalable(BK_SCALABLE_COMPACT | BK_SCALABLE_CLASSIC, false, capacity, nkeys, seed);
}

static void tf_cuckoo_free(void *p) { bk_cuckoo_free(p); }
static bk_filter *tf_cuckoo(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.seed = seed;
    o.allocator = tf_allocator;
    /* the golden file's geometry: ceil(capacity / (4 * 0.95)) buckets (the default load now adds a
     * small-table slack, which would make a fresh filter of the same keys differ from that file) */
    o.load_factor = 0.95;
    bk_cuckoo *c;
    if (bk_cuckoo_new(capacity, 0.01, &o, &c) != BK_OK) return NULL;
    return tf_wrap_fill(BK_TYPE_CUCKOO, c, tf_cuckoo_free, nkeys);
}
static inline bk_filter *tf_make_fuse(uint32_t bits, uint64_t nkeys, uint64_t seed)
{
    const void **ptrs = (const void **)malloc((nkeys ? nkeys : 1) * sizeof *ptrs);
    size_t *lens = (size_t *)malloc((nkeys ? nkeys : 1) * sizeof *lens);
    tf_key *keys = (tf_key *)malloc((nkeys ? nkeys : 1) * sizeof *keys);
    bk_filter *f = NULL;
    if (ptrs && lens && keys) {
        for (uint64_t i = 0; i < nkeys; i++) {
            keys[i] = tf_make_key(1, i);
            ptrs[i] = keys[i].b;
            lens[i] = sizeof keys[i].b;
        }
        bk_fuse_options o = { .fingerprint_bits = bits, .max_attempts = 0, .seed = seed, .allocator = tf_allocator };
        bk_fuse *fu;
        if (bk_fuse_build(ptrs, lens, (size_t)nkeys, &o, &fu) == BK_OK && bk_filter_wrap(BK_TYPE_FUSE, fu, &f) != BK_OK)
            bk_fuse_free(fu);
    }
    free(ptrs);
    free(lens);
    free(keys);
    return f;
}
static bk_filter *tf_fuse8(uint64_t c, uint64_t n, uint64_t s)
{
    (void)c;
    return tf_make_fuse(8, n, s);
}
static bk_filter *tf_fuse16(uint64_t c, uint64_t n, uint64_t s)
{
    (void)c;
    return tf_make_fuse(16, n, s);
}

/* The library's test hooks (src/filters/testing.h): keys per shard of the Ribbon filter's sharded
 * construction, 0 for the default; the body new builds get, 0 for the default (body 3). */
extern uint64_t bk__ribbon_shard_keys;
extern int bk__ribbon_body;

/* "ribbon": one system (body 1); "ribbon-sharded": the same keys in shards of about 128 (body 2);
 * "ribbon-bumped": the bumped Ribbon new builds get (body 3) */
static inline bk_filter *tf_ribbon_make(uint64_t nkeys, uint64_t seed, uint64_t shard_keys, int body)
{
    const void **ptrs = (const void **)malloc((nkeys ? nkeys : 1) * sizeof *ptrs);
    size_t *lens = (size_t *)malloc((nkeys ? nkeys : 1) * sizeof *lens);
    tf_key *keys = (tf_key *)malloc((nkeys ? nkeys : 1) * sizeof *keys);
    bk_filter *f = NULL;
    if (ptrs && lens && keys) {
        for (uint64_t i = 0; i < nkeys; i++) {
            keys[i] = tf_make_key(1, i);
            ptrs[i] = keys[i].b;
            lens[i] = sizeof keys[i].b;
        }
        bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
        o.fpr = 0.01;
        o.seed = seed;
        o.allocator = tf_allocator;
        bk_ribbon *r;
        bk__ribbon_shard_keys = shard_keys;
        bk__ribbon_body = body;
        if (bk_ribbon_build(ptrs, lens, (size_t)nkeys, &o, &r) == BK_OK && bk_filter_wrap(BK_TYPE_RIBBON, r, &f) != BK_OK)
            bk_ribbon_free(r);
        bk__ribbon_shard_keys = 0;
        bk__ribbon_body = 0;
    }
    free(ptrs);
    free(lens);
    free(keys);
    return f;
}
static inline bk_filter *tf_ribbon(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    (void)capacity;
    return tf_ribbon_make(nkeys, seed, 0, 1);
}
static inline bk_filter *tf_ribbon_sharded(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    (void)capacity;
    return tf_ribbon_make(nkeys, seed, nkeys / 4 > 2 ? nkeys / 4 : 2, 1);
}
static inline bk_filter *tf_ribbon_bumped(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    (void)capacity;
    return tf_ribbon_make(nkeys, seed, 0, 0);
}

/* Sketches: a count-min sketch of max(64, capacity) counters in each of 4 rows, and a Top-K of the 32
 * heaviest on 64 x 4 buckets. */
static void tf_cms_free(void *p) { bk_cms_free(p); }
static bk_filter *tf_cms(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    bk_cms_options o = BK_CMS_OPTIONS_INIT;
    o.seed = seed;
    o.allocator = tf_allocator;
    bk_cms *c;
    if (bk_cms_new(capacity < 64 ? 64 : capacity, 4, &o, &c) != BK_OK) return NULL;
    return tf_wrap_fill(BK_TYPE_CMS, c, tf_cms_free, nkeys);
}
static void tf_topk_free(void *p) { bk_topk_free(p); }
static bk_filter *tf_topk(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    (void)capacity;
    bk_topk_options o = BK_TOPK_OPTIONS_INIT;
    o.seed = seed;
    o.allocator = tf_allocator;
    o.width = 64;
    o.depth = 4;
    bk_topk *t;
    if (bk_topk_new(32, &o, &t) != BK_OK) return NULL;
    return tf_wrap_fill(BK_TYPE_TOPK, t, tf_topk_free, nkeys);
}

/* A count window of `capacity` insertions: the nkeys <= capacity keys are all inside it. (A time
 * window of minutes, saved and loaded at chosen times, is tests/test_aging.c's golden file, with its
 * own clock.) */
static void tf_aging_free(void *p) { bk_aging_free(p); }
static bk_filter *tf_aging_count_p(uint64_t capacity, uint64_t nkeys, uint64_t seed, double p)
{
    bk_aging_options o = BK_AGING_OPTIONS_INIT;
    o.seed = seed;
    o.allocator = tf_allocator;
    bk_aging *a;
    if (bk_aging_new_count(capacity, p, &o, &a) != BK_OK) return NULL;
    return tf_wrap_fill(BK_TYPE_AGING, a, tf_aging_free, nkeys);
}
static bk_filter *tf_aging_count(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    return tf_aging_count_p(capacity, nkeys, seed, 0.01);
}
/* "aging-wide": p = 0.1%, the later body of 512-bit blocks (docs/FORMAT.md 6.7, body 2). */
static bk_filter *tf_aging_wide(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    return tf_aging_count_p(capacity, nkeys, seed, 0.001);
}

/* A time window whose clock stands at a fixed instant (TF_AGING_T0, in 2023) while the factory fills
 * it, so its file (which records the creation time) is the same whenever it is made, and whose window
 * (2^50 ms, some 35,000 years, one generation of them a third of that) keeps every key live when the
 * loaded copy reads the wall clock instead. All keys land in the one current generation. */
#define TF_AGING_T0 UINT64_C(1700000000000)
#define TF_AGING_WINDOW_MS (UINT64_C(1) << 50)
static uint64_t tf_aging_fixed_clock(void *ctx)
{
    (void)ctx;
    return TF_AGING_T0;
}
static bk_filter *tf_aging_time(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    bk_aging_options o = BK_AGING_OPTIONS_INIT;
    o.seed = seed;
    o.allocator = tf_allocator;
    o.clock = tf_aging_fixed_clock;
    bk_aging *a;
    if (bk_aging_new_time(TF_AGING_WINDOW_MS, capacity, 0.01, &o, &a) != BK_OK) return NULL;
    return tf_wrap_fill(BK_TYPE_AGING, a, tf_aging_free, nkeys);
}

/* Quotient filter: the keys once each, plus one key (set 3, 0) added 1000 times, so files carry a
 * multi-slot counter. "quotient": 2^q slots, the 1.0 body; "quotient-slots": the slots the sizing
 * gives, body 4 (docs/FORMAT.md 6.8), whose earlier golden file (body 2) stays under its name, as does
 * that of "quotient-stages" (body 3 of body-2 stages). */
static void tf_quotient_free(void *p) { bk_quotient_free(p); }
static bk_filter *tf_quotient_make(uint64_t capacity, uint64_t nkeys, uint64_t seed, bool pow2)
{
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.seed = seed;
    o.allocator = tf_allocator;
    o.power_of_two_slots = pow2;
    bk_quotient *q;
    if (bk_quotient_new(capacity + 8, 0.01, &o, &q) != BK_OK) return NULL;
    if (nkeys) {
        tf_key k = tf_make_key(3, 0);
        if (bk_quotient_add_count_hash(q, bk_hash64(k.b, sizeof k.b, seed), 1000) != BK_OK) {
            bk_quotient_free(q);
            return NULL;
        }
    }
    return tf_wrap_fill(BK_TYPE_QUOTIENT, q, tf_quotient_free, nkeys);
}
static bk_filter *tf_quotient(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    return tf_quotient_make(capacity, nkeys, seed, true);
}
static bk_filter *tf_quotient_slots(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    return tf_quotient_make(capacity, nkeys, seed, false);
}

/* A quotient filter of stages (bk_quotient_expand, body 3): made for a quarter of the capacity, the
 * keys added one by one with an expansion whenever the newest stage is full, then the counter key as
 * above; then expansions until the newest stage has room for the capacity (stages of capacity/4 + 8,
 * the same, twice, four times: 4 tables). */
static bk_filter *tf_quotient_stages(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.seed = seed;
    o.allocator = tf_allocator;
    bk_quotient *q;
    if (bk_quotient_new(capacity / 4 + 8, 0.01, &o, &q) != BK_OK) return NULL;
    bk_status s = BK_OK;
    for (uint64_t i = 0; i < nkeys + (nkeys > 0) && s == BK_OK; i++) {
        tf_key k = i < nkeys ? tf_make_key(1, i) : tf_make_key(3, 0);
        uint64_t h = bk_hash64(k.b, sizeof k.b, seed), c = i < nkeys ? 1 : 1000;
        s = bk_quotient_add_count_hash(q, h, c);
        if (s == BK_EFULL && (s = bk_quotient_expand(q)) == BK_OK) s = bk_quotient_add_count_hash(q, h, c);
    }
    bk_stats st;
    for (bk_quotient_stats(q, &st); s == BK_OK && st.capacity < 2 * capacity; bk_quotient_stats(q, &st))
        s = bk_quotient_expand(q);
    if (s != BK_OK) {
        bk_quotient_free(q);
        return NULL;
    }
    return tf_wrap_fill(BK_TYPE_QUOTIENT, q, tf_quotient_free, 0);
}

/* An expanding quotient filter (bk_xquotient_new, body 5): made for an eighth of the capacity, so
 * that the keys double it (twice for 500 keys of a capacity of 1,000). */
static bk_filter *tf_quotient_expanding(uint64_t capacity, uint64_t nkeys, uint64_t seed)
{
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.seed = seed;
    o.allocator = tf_allocator;
    bk_xquotient *q;
    if (bk_xquotient_new(capacity / 8 + 8, 0.01, &o, &q) != BK_OK) return NULL;
    return tf_wrap_fill(BK_TYPE_QUOTIENT, q, tf_quotient_free, nkeys);
}

/* One entry per type (and layout). Later types add their line here. */
static const tf_factory tf_factories[] = {
    { "bloom-standard", BK_TYPE_BLOOM, true, tf_bloom_standard, false, false, NULL },
    { "bloom-partitioned", BK_TYPE_BLOOM, true, tf_bloom_partitioned, false, false, NULL },
    { "blocked-split256", BK_TYPE_BLOCKED, true, tf_blocked_split, false, false, NULL },
    { "blocked-512", BK_TYPE_BLOCKED, true, tf_blocked_512, false, false, NULL },
    { "counting-4bit", BK_TYPE_COUNTING, true, tf_counting4, false, false, NULL },
    { "counting-8bit", BK_TYPE_COUNTING, true, tf_counting8, false, false, NULL },
    { "scalable", BK_TYPE_SCALABLE, false, tf_scalable, false, false, NULL },
    { "scalable-blocked", BK_TYPE_SCALABLE, false, tf_scalable_blocked, false, false, NULL },
    { "scalable-carry", BK_TYPE_SCALABLE, false, tf_scalable_carry, false, false, NULL },
    { "scalable-compact", BK_TYPE_SCALABLE, false, tf_scalable_compact, false, false, NULL },
    { "scalable-compact-classic", BK_TYPE_SCALABLE, false, tf_scalable_compact_classic, false, false, NULL },
    { "cuckoo", BK_TYPE_CUCKOO, false, tf_cuckoo, false, false, NULL }, /* shared writing: needs the process's writer lock */
    { "fuse8", BK_TYPE_FUSE, false, tf_fuse8, true, false, NULL },
    { "fuse16", BK_TYPE_FUSE, false, tf_fuse16, true, false, NULL },
    { "aging-count", BK_TYPE_AGING, false, tf_aging_count, false, false, NULL },
    { "aging-time-long", BK_TYPE_AGING, false, tf_aging_time, false, false, NULL },
    { "quotient", BK_TYPE_QUOTIENT, false, tf_quotient, false, false, NULL },
    { "ribbon", BK_TYPE_RIBBON, false, tf_ribbon, true, false, NULL },
    { "quotient-slots", BK_TYPE_QUOTIENT, false, tf_quotient_slots, false, false, "quotient-slots-body4" },
    { "ribbon-sharded", BK_TYPE_RIBBON, false, tf_ribbon_sharded, true, false, NULL },
    { "quotient-stages", BK_TYPE_QUOTIENT, false, tf_quotient_stages, false, false, "quotient-stages-body4" },
    { "aging-wide", BK_TYPE_AGING, false, tf_aging_wide, false, false, NULL },
    { "sketch-cms", BK_TYPE_CMS, false, tf_cms, false, true, NULL },
    { "sketch-topk", BK_TYPE_TOPK, false, tf_topk, false, true, NULL },
    { "quotient-expanding", BK_TYPE_QUOTIENT, false, tf_quotient_expanding, false, false, NULL },
    { "ribbon-bumped", BK_TYPE_RIBBON, false, tf_ribbon_bumped, true, false, NULL },
};
#define TF_NFACTORIES (sizeof tf_factories / sizeof tf_factories[0])

#endif
