/*
 * bloomkit: the scalable Bloom filter (Almeida et al., 2007), for sets whose final size is unknown.
 *
 * A chain of sub-filters. Sub-filter i (i = 0, 1, ...) is sized for
 *     capacity_i = capacity * growth^i  keys   at error   p_i = p0 * r^i,   with   p0 = p * (1 - r),
 * where p is the target overall FPR, growth (s) the capacity ratio and r the tightening ratio. A key
 * is a false positive of the chain if it is one of any sub-filter, so the compound FPR is at most
 *     sum_i p_i = p0 * (1 + r + r^2 + ...) = p * (1 - r) / (1 - r) = p
 * however far the chain grows; with L sub-filters the bound is p * (1 - r^L)
 * (bk_scalable_fpr_bound reports it from the real geometries, whose rounding moves each p_i a little,
 * and for blocked sub-filters with the exact in-block term: up to 4.6% above p_i, see below).
 * Each sub-filter costs log2(1/r) * 1.44 more bits per key than the one before it, so r near
 * 1 keeps later sub-filters cheap while p0 = p(1 - r) makes the first ones tighter.
 *
 * Sub-filter kinds (chosen at creation, stored in files):
 *   blocked (default)  1024-bit blocks of two cache lines, k probes anywhere in the block, sized with
 *                      the blocked filter's exact mixture formula (blocked.h). A query of an absent
 *                      key must test every sub-filter; here each test is one block, all of them
 *                      independent loads with no branch on the data (the key's in-block mask is built
 *                      once for the chain), so a chain out of cache costs two lines per big
 *                      sub-filter instead of about two random lines each plus mispredicted branches.
 *   classic            BK_SCALABLE_CLASSIC: standard-layout classic Bloom filters; about 6% less
 *                      memory, slower queries once the chain is out of cache (bench/README.md).
 * Carried budget (the default; BK_SCALABLE_FIXED_SHARES turns it off): rounding to whole blocks and an
 * integer k leaves small sub-filters far under p_i, so sub-filter i is sized for
 * p (1 - r^(i+1)) minus the exact errors of the sub-filters before it; the bound above is unchanged and
 * is now reached. docs/MATH.md has the measured bits per key and FPR of both schemes against r
 * (bench/README.md how they were measured).
 *
 * growth = 1 grows by sub-filters of the same capacity (RedisBloom's EXPANSION 1): p_i still tightens
 * by r, so the bound above holds, but the chain needs n / capacity sub-filters for n keys.
 * The flag BK_SCALABLE_NONSCALING (RedisBloom's NONSCALING) means no growth: one sub-filter sized for
 * (capacity, p) exactly (p0 = p, r and growth unused), and an add of a new key once it holds
 * `capacity` keys fails with BK_EFULL. (In a saved file, growth 0 marks a non-scaling filter:
 * docs/FORMAT.md.)
 *
 * add hashes the key once (bk_hash64 with the filter's seed) and uses that one 64-bit value for every
 * sub-filter: each sub-filter's probes come from it by one multiply-shift per probe, so an absent key
 * costs one hash for the whole chain. A blocked chain's query tests every sub-filter's block without
 * branching (oldest first, as their k grows; the answer is the same in any order). A classic chain's
 * query tests the first two probes of every sub-filter, newest (largest) first, without branching on
 * them, so their cache misses overlap, then goes on only in the few sub-filters where both were set.
 * add_if_absent puts a key into the newest sub-filter only if no sub-filter already (probably) holds
 * it, so count is then the number of keys actually added; a key that is a false positive of the chain
 * is not added (and add_if_absent says so). A plain add (add, add_hash, add_hashes, add_many) tests
 * only the newest sub-filter, on the block it writes anyway, so its cost does not grow with the chain:
 * a key held only by an older sub-filter is inserted and counted again (repeats can make the chain
 * grow sooner; the FPR bound holds all the same). When the newest sub-filter holds its capacity, the
 * next add of a new key first appends a sub-filter; if that would take the chain's arrays past max_bytes
 * (default BK_SCALABLE_DEFAULT_MAX_BYTES), or past BK_SCALABLE_MAX_FILTERS sub-filters, the add fails
 * with BK_ETOOBIG and nothing changes.
 *
 * Thread-safety: see the legend in common.h. Queries are lock-free. The *_atomic adds insert into the
 * newest sub-filter with atomic ORs and take a mutex only to append a sub-filter; the chain is
 * published with release/acquire ordering, so queries and atomic adds running alongside a growth see
 * either the old or the new chain, both valid.
 */
#ifndef BLOOMKIT_SCALABLE_H
#define BLOOMKIT_SCALABLE_H

#include "common.h"
#include "math.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_scalable bk_scalable;

#define BK_SCALABLE_DEFAULT_GROWTH 2
#define BK_SCALABLE_MAX_GROWTH 16
/* The default tightening ratio r, chosen by measurement (docs/MATH.md): about 0.9 p delivered by the
 * chains where memory matters, 2% more bits than r = 0.9. */
#define BK_SCALABLE_DEFAULT_TIGHTENING 0.88
/* Default hard limit on the bytes of all sub-filters' arrays together: 4 GiB (about 1.4 billion keys
 * at p = 1% with the defaults). Settable per filter up to BK_MAX_FILTER_BYTES. */
#define BK_SCALABLE_DEFAULT_MAX_BYTES (UINT64_C(1) << 32)
/* At most this many sub-filters in one chain. */
#define BK_SCALABLE_MAX_FILTERS 64

/* bk_scalable_options.flags: never add a sub-filter (one sub-filter sized for (capacity, p); growth
 * and tightening are then unused). */
#define BK_SCALABLE_NONSCALING 1u
/* bk_scalable_options.flags: classic Bloom sub-filters (standard layout) instead of the default blocked
 * ones: about 6% less memory, slower queries once the chain is out of cache. */
#define BK_SCALABLE_CLASSIC 2u
/* bk_scalable_options.flags: fixed error shares, p_i = p (1 - r) r^i for every sub-filter, as in the
 * original design and in RedisBloom (a saved chain records which scheme it was built with). Without
 * it (the default) each sub-filter also gets the share its predecessors left unused (see the header
 * comment). */
#define BK_SCALABLE_FIXED_SHARES 4u
/* bk_scalable_options.flags: a compact chain, for many small filters (the Redis module's BF keys).
 * Sub-filter 0 gets half the error budget, as in RedisBloom: T_i = p (1 - r^i / 2) instead of
 * p (1 - r^(i+1)) (fixed shares: p_0 = p / 2, p_i = p (1 - r) r^(i-1) / 2), so it is cheaper and the
 * later ones a little dearer; the bound p holds the same. And when sub-filter 0 sized so (classic
 * sizing, m rounded up to whole 64-bit words) takes at most BK_SCALABLE_SMALL_BYTES, it is a classic
 * filter held in the chain's own allocation, whatever the kind of the later ones: a chain created for
 * 100 keys at 1% is then one allocation of 224 bytes (0.40% at 100 keys). A saved chain records the
 * flag. */
#define BK_SCALABLE_COMPACT 8u
/* The largest small sub-filter 0 of a compact chain (its bit array, bytes). */
#define BK_SCALABLE_SMALL_BYTES 1024

typedef struct bk_scalable_options {
    size_t struct_size;   /* BK_SCALABLE_OPTIONS_INIT sets it; 0 means this header's size (common.h) */
    const bk_allocator *allocator; /* NULL: the default (malloc); see common.h */
    uint32_t growth;    /* capacity ratio s between sub-filters: 1 (same size) .. 16; 0 means 2 */
    double tightening;  /* error ratio r between sub-filters, in (0, 1); 0 means the default */
    uint64_t max_bytes; /* hard limit on the arrays' total bytes; 0 means the default */
    uint64_t seed;      /* hash seed; 0 is a fine default */
    uint32_t flags;     /* BK_SCALABLE_NONSCALING, BK_SCALABLE_CLASSIC, BK_SCALABLE_FIXED_SHARES,
                           BK_SCALABLE_COMPACT; other bits are BK_EINVAL */
} bk_scalable_options;
#define BK_SCALABLE_OPTIONS_INIT BK_OPTIONS_INIT_(bk_scalable_options)

/* The defaults: growth 2, r = BK_SCALABLE_DEFAULT_TIGHTENING, max_bytes 0 (the default), seed 0,
 * flags 0 (scaling). A zeroed bk_scalable_options means the same. [any] */
BK_API bk_scalable_options bk_scalable_default_options(void);

/* Geometry of sub-filter i (0 = the first, allocated at creation) of a chain created with
 * (capacity, p, opts): its m, k, capacity and the FPR it really gives at capacity. opts NULL means
 * the defaults. Errors as bk_scalable_new, and BK_EINVAL for i >= BK_SCALABLE_MAX_FILTERS. [any] */
BK_API bk_status bk_scalable_layer_size(uint64_t capacity, double p, const bk_scalable_options *opts,
                                        uint32_t i, bk_geometry *out);
/* What holding n keys takes: the number of sub-filters and the total bytes of their arrays (either
 * output may be NULL). BK_ETOOBIG if it is past opts' max_bytes or BK_SCALABLE_MAX_FILTERS, BK_EFULL
 * if the filter is non-scaling and n > capacity. [any] */
BK_API bk_status bk_scalable_plan(uint64_t capacity, double p, const bk_scalable_options *opts, uint64_t n,
                                  uint32_t *filters, uint64_t *bytes);

/* Create with the first sub-filter sized for `capacity` keys. opts NULL means the defaults.
 * Errors: BK_EINVAL (capacity 0, p not in (0,1), growth > 16, r not in [0,1) (0: the default), unknown flags,
 * max_bytes over BK_MAX_FILTER_BYTES, out NULL),
 * BK_ETOOBIG (the first sub-filter alone exceeds max_bytes or BK_MAX_FILTER_BYTES), BK_ENOMEM;
 * on error *out is NULL. [any] */
BK_API bk_status bk_scalable_new(uint64_t capacity, double p, const bk_scalable_options *opts,
                                 bk_scalable **out);
/* Free; NULL is fine. [excl] */
BK_API void bk_scalable_free(bk_scalable *f);
/* A deep copy, made with f's allocator. BK_EINVAL if f or out is NULL, BK_ENOMEM. [excl]: no add may
 * run meanwhile, the atomic ones included (blocked sub-filters are copied with plain loads). */
BK_API bk_status bk_scalable_clone(const bk_scalable *f, bk_scalable **out);

/* Insert into the newest sub-filter unless that one probably holds the key already (older sub-filters
 * are not tested: see the header comment; add_if_absent tests them). BK_OK in both cases (the key is
 * then probably present); BK_EFULL (non-scaling and full), BK_ETOOBIG (growing would pass max_bytes or
 * BK_SCALABLE_MAX_FILTERS), BK_ENOMEM, BK_EINVAL (f NULL, or key NULL with len > 0): nothing changed.
 * [excl] */
BK_API bk_status bk_scalable_add(bk_scalable *f, const void *key, size_t len);
BK_API bk_status bk_scalable_add_hash(bk_scalable *f, uint64_t hash);
/* The same, but telling whether the key was added: BK_OK if it was new (count grew by one),
 * BK_EEXISTS if it was probably present already (nothing changed); other errors as above. This is
 * BF.ADD's 1 / 0. [excl] */
BK_API bk_status bk_scalable_add_if_absent(bk_scalable *f, const void *key, size_t len);
BK_API bk_status bk_scalable_add_if_absent_hash(bk_scalable *f, uint64_t hash);
/* Atomic forms of add_if_absent: safe alongside each other and alongside queries. Two threads adding
 * the same new key at the same moment may both get BK_OK (and both count it); a query racing the
 * insert of a key may miss it; nothing else can go wrong. [query] */
BK_API bk_status bk_scalable_add_atomic(bk_scalable *f, const void *key, size_t len);
BK_API bk_status bk_scalable_add_hash_atomic(bk_scalable *f, uint64_t hash);

/* Query every sub-filter (in the order the header comment gives): true if probably present, false
 * if certainly absent. f must not be NULL; key may be NULL only when len is 0. [query] */
BK_API bool bk_scalable_contains(const bk_scalable *f, const void *key, size_t len);
BK_API bool bk_scalable_contains_hash(const bk_scalable *f, uint64_t hash);

/* uint64 keys: the same answers as the byte forms on the key's 8 little-endian bytes
 * (bk_scalable_add_u64(f, k) is bk_scalable_add(f, &k_le, 8)), so the two forms mix on one filter
 * and in files. The hash is XXH3 at the constant length 8 (bk_hash64 of those bytes) without the
 * byte forms' length dispatch. Errors and thread-safety as the byte forms: add [excl],
 * add_if_absent [excl], contains [query]. */
BK_API bk_status bk_scalable_add_u64(bk_scalable *f, uint64_t key);
BK_API bk_status bk_scalable_add_if_absent_u64(bk_scalable *f, uint64_t key);
BK_API bool bk_scalable_contains_u64(const bk_scalable *f, uint64_t key);

/* Batches (common.h, "Batches"). add stops at the first key the chain cannot take (BK_ETOOBIG or
 * BK_ENOMEM when a sub-filter cannot be appended: that key is not in, keys before it are), with *done
 * = that key's index; each key is added as bk_scalable_add would add it. The contains forms hash first
 * and prefetch. [excl] for adds, [query] for contains. */
BK_API bk_status bk_scalable_add_many(bk_scalable *f, const void *const *keys, const size_t *lens, size_t n,
                                      size_t *done);
BK_API bk_status bk_scalable_add_hashes(bk_scalable *f, const uint64_t *hashes, size_t n, size_t *done);
BK_API bk_status bk_scalable_contains_many(const bk_scalable *f, const void *const *keys, const size_t *lens,
                                           size_t n, uint8_t *results, size_t *hits);
BK_API bk_status bk_scalable_contains_hashes(const bk_scalable *f, const uint64_t *hashes, size_t n,
                                             uint8_t *results, size_t *hits);

/* Back to just the first sub-filter, empty (later sub-filters are freed). [excl] */
BK_API void bk_scalable_clear(bk_scalable *f);

/* dst |= src, sub-filter by sub-filter. Both must have the same capacity, p, growth (and non-scaling
 * flag), r, seed and flags (classic, fixed shares, compact), else
 * BK_EINCOMPAT and dst is unchanged; dst first grows to src's number of sub-filters (BK_ETOOBIG /
 * BK_ENOMEM if it cannot: dst unchanged). Each merged sub-filter's count becomes its fill-based
 * estimate; a sub-filter holding more than its capacity raises the chain's FPR above p (stats show
 * it). [excl] on dst, [query] on src: *_atomic inserts may run on src meanwhile, growth included
 * (a key whose insert returned before the union began is in dst; one inserted during it may or may not be). */
BK_API bk_status bk_scalable_union(bk_scalable *dst, const bk_scalable *src);
BK_API bk_status bk_scalable_compatible(const bk_scalable *a, const bk_scalable *b);

/* Statistics of the whole chain: capacity and count summed over sub-filters, bits and memory_bytes
 * summed over their arrays, fill_ratio the set fraction of all bits, k the newest sub-filter's,
 * fpr_target = p, fpr_now = 1 - prod(1 - fpr_now_i) (the chance an absent key passes some
 * sub-filter at the current fills), saturated when the newest sub-filter is full and the chain
 * cannot grow (non-scaling, BK_SCALABLE_MAX_FILTERS reached, or the next sub-filter would pass
 * max_bytes), subfilters the chain length. O(total bits). [query] */
BK_API void bk_scalable_stats(const bk_scalable *f, bk_stats *out);

/* Accessors. [query] */
BK_API uint64_t bk_scalable_count(const bk_scalable *f);     /* keys added (sum over sub-filters) */
BK_API uint64_t bk_scalable_capacity(const bk_scalable *f);  /* sum of the sub-filters' capacities */
BK_API uint32_t bk_scalable_filters(const bk_scalable *f);   /* number of sub-filters */
/* Bytes of the sub-filters' arrays. */
BK_API uint64_t bk_scalable_bytes(const bk_scalable *f);
/* Everything the filter holds in memory: arrays plus the objects around them (for Redis MEMORY USAGE
 * and BF.INFO Size). */
BK_API uint64_t bk_scalable_memory_usage(const bk_scalable *f);
/* The compound FPR bound sum_i error_i over the existing sub-filters: the FPR they have when full,
 * on average over key sets. At most p (1 - r^L) for classic sub-filters; blocked ones are sized with
 * a formula that runs up to 4.6% under the FPR they get (kept so that saved chains keep their
 * geometry), and this reports what they get: at most p (1 - r^L) * 1.046 (docs/MATH.md). [query] */
BK_API double bk_scalable_fpr_bound(const bk_scalable *f);
BK_API uint64_t bk_scalable_initial_capacity(const bk_scalable *f);
BK_API double bk_scalable_error(const bk_scalable *f);       /* p */
BK_API uint32_t bk_scalable_growth(const bk_scalable *f);   /* 1 for a non-scaling filter */
BK_API bool bk_scalable_nonscaling(const bk_scalable *f);   /* created with BK_SCALABLE_NONSCALING */
BK_API bool bk_scalable_classic(const bk_scalable *f);      /* classic sub-filters (BK_SCALABLE_CLASSIC) */
BK_API bool bk_scalable_compact(const bk_scalable *f);      /* created with BK_SCALABLE_COMPACT */
BK_API double bk_scalable_tightening(const bk_scalable *f);
BK_API uint64_t bk_scalable_max_bytes(const bk_scalable *f);
BK_API uint64_t bk_scalable_seed(const bk_scalable *f);
/* Change the memory limit (at least the current bytes, at most BK_MAX_FILTER_BYTES; 0 means the
 * default), else BK_EINVAL. [excl] */
BK_API bk_status bk_scalable_set_max_bytes(bk_scalable *f, uint64_t max_bytes);

#ifdef __cplusplus
}
#endif
#endif

/*
 * Experimental tier: only with BK_STATIC_LINKING_ONLY defined before the first include, or through
 * <bloomkit/experimental.h>. It may change in any release (common.h, versioning).
 */
#if defined(BK_STATIC_LINKING_ONLY) && !defined(BLOOMKIT_SCALABLE_H_STATIC)
#define BLOOMKIT_SCALABLE_H_STATIC
#ifdef __cplusplus
extern "C" {
#endif

/* One sub-filter's statistics. */
typedef struct bk_scalable_layer {
    uint64_t capacity;    /* keys it is sized for */
    uint64_t count;       /* keys added to it */
    uint64_t bits;        /* m */
    uint64_t memory_bytes;
    uint32_t k;
    bool classic;         /* classic probes over the whole array (else 1024-bit blocks): a classic
                           * chain's sub-filters, and a compact chain's small sub-filter 0 */
    double error;         /* the FPR its geometry gives at capacity, on average over key sets
                           * (about p0 * r^i; blocked: up to 4.6% above the figure it was sized
                           * with, docs/MATH.md) */
    double fill_ratio;    /* fraction of bits set */
    double fpr_now;       /* the FPR of its bits now: fill_ratio^k (classic), or the mean over its
                           * blocks of (bits set / 1024)^k (blocked) */
} bk_scalable_layer;
/* Statistics of sub-filter i (0 = oldest). BK_EINVAL if i >= the number of sub-filters. O(its bits).
 * [query] */
BK_API bk_status bk_scalable_get_layer(const bk_scalable *f, uint32_t i, bk_scalable_layer *out);

#ifdef __cplusplus
}
#endif
#endif /* BK_STATIC_LINKING_ONLY */
