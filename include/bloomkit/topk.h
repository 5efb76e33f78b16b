/*
 * bloomkit: Top-K, the k heaviest keys of a stream (HeavyKeeper with a min-heap).
 *
 * HeavyKeeper (Gong et al., 2018) keeps `depth` rows of `width` buckets, each a 32-bit fingerprint and a
 * 32-bit count. A key's increment goes to one bucket per row (the classic probe sequence of its 64-bit
 * hash): an empty bucket or one holding the key's fingerprint takes the increment; a bucket held by
 * another fingerprint decays instead, each unit of the increment taking one from its count with
 * probability decay^count, and a bucket decayed to zero is taken over by the key with what is left of
 * the increment. Heavy keys keep their buckets, light ones are decayed out. The key's estimate is the
 * largest count among its buckets that carry its fingerprint; a key whose estimate reaches the smallest
 * count of the heap of the k heaviest enters the heap (pushing that smallest one out: the "expelled"
 * key). A key in the heap keeps the largest estimate it reached there: its count in the heap rises with
 * its estimate and does not fall when its buckets decay (docs/MATH.md).
 *
 * The decay draws from a pseudo-random generator kept in the sketch and seeded from the options' seed, so
 * a run is reproducible: the same keys in the same order give the same list, and a saved and reloaded
 * sketch continues exactly as the original would have.
 *
 * The estimates are never above the true count for keys that never lost a bucket, and the heap holds
 * the true heavy hitters with high probability when width is a few times k (tests/test_topk.c measures
 * it on Zipf streams; docs/MATH.md). Counts saturate at UINT32_MAX.
 *
 * The heap keeps the key's bytes (copied) so that bk_topk_list can return them; keys given only as
 * hashes (the _hash forms) are listed by hash with no bytes.
 *
 * This is a sketch, not a membership filter: in a generic handle (bk_filter, filter.h), which carries it
 * for files, bk_filter_add adds 1 to the key's count and bk_filter_contains answers whether the key is
 * in the current top k (bk_topk_query), which is NOT set membership: a key added once and since pushed
 * out is answered false. Its calls are reached through bk_filter_get(f, BK_TYPE_TOPK) and this header.
 *
 * Thread-safety: see the legend in common.h. Queries (query, count, list, stats) run alongside each
 * other; every change needs the caller's exclusion.
 */
#ifndef BLOOMKIT_TOPK_H
#define BLOOMKIT_TOPK_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_topk bk_topk;

typedef struct bk_topk_options {
    size_t struct_size;            /* BK_TOPK_OPTIONS_INIT sets it; 0 means this header's size (common.h) */
    const bk_allocator *allocator; /* NULL: the default (malloc); see common.h */
    uint64_t seed;                 /* hash seed, and the decay generator's; 0 is a fine default */
    uint32_t width;                /* buckets per row; 0: max(8, ceil(k ln k)) */
    uint32_t depth;                /* rows; 0: max(5, ceil(ln k)) */
    double decay;                  /* in (0, 1]; 0: 0.9 */
} bk_topk_options;
#define BK_TOPK_OPTIONS_INIT BK_OPTIONS_INIT_(bk_topk_options)

/* The largest depth accepted. */
#define BK_TOPK_MAX_DEPTH 64u

/* One key of the list. key points into the sketch (valid until the next change to it), NULL for a key
 * given only by its hash. */
typedef struct bk_topk_item {
    const void *key;
    size_t len;
    uint64_t hash;
    uint64_t count; /* the estimate when listed (or when expelled) */
    uint64_t stamp; /* when the key's count in the heap last changed (the sketch's own clock) */
} bk_topk_item;

/* Create a sketch keeping the k heaviest keys. opts may be NULL. Errors: BK_EINVAL (k 0, decay not in
 * (0, 1], depth past BK_TOPK_MAX_DEPTH, out NULL), BK_ETOOBIG (the buckets and heap past
 * BK_MAX_FILTER_BYTES), BK_ENOMEM; on error *out is NULL. [any] */
BK_API bk_status bk_topk_new(uint32_t k, const bk_topk_options *opts, bk_topk **out);
/* Free; NULL is fine. [excl] */
BK_API void bk_topk_free(bk_topk *f);
/* A deep copy (generator state included), made with f's allocator. [query] */
BK_API bk_status bk_topk_clone(const bk_topk *f, bk_topk **out);

/* Add `increment` to the key's count (0 is allowed: nothing changes but the heap's view of the key).
 * *expelled (may be NULL) receives the key pushed out of the heap by this call, or count 0 and key NULL
 * when none was; its key stays valid until the next change to f. BK_EINVAL if f is NULL or key is NULL
 * with len > 0; BK_ENOMEM (nothing changed in the heap; the buckets took the increment) when the key's
 * copy cannot be made. [excl] */
BK_API bk_status bk_topk_incrby(bk_topk *f, const void *key, size_t len, uint32_t increment,
                                bk_topk_item *expelled);
BK_API bk_status bk_topk_incrby_hash(bk_topk *f, uint64_t hash, uint32_t increment, bk_topk_item *expelled);
/* The key's 8 little-endian bytes, as the byte form (and listed as those bytes). [excl] */
BK_API bk_status bk_topk_incrby_u64(bk_topk *f, uint64_t key, uint32_t increment, bk_topk_item *expelled);
/* Batches: values may be NULL (1 each); expelled keys are not reported. Shapes as common.h's "Batches";
 * a key whose copy cannot be made stops the batch with BK_ENOMEM and *done its index. [excl] */
BK_API bk_status bk_topk_incrby_many(bk_topk *f, const void *const *keys, const size_t *lens,
                                     const uint32_t *values, size_t n, size_t *done);
BK_API bk_status bk_topk_incrby_hashes(bk_topk *f, const uint64_t *hashes, const uint32_t *values, size_t n,
                                       size_t *done);

/* Whether the key is in the current top k. [query] */
BK_API bool bk_topk_query(const bk_topk *f, const void *key, size_t len);
BK_API bool bk_topk_query_hash(const bk_topk *f, uint64_t hash);
BK_API bool bk_topk_query_u64(const bk_topk *f, uint64_t key);
/* The key's estimate: the largest count among its buckets that hold its fingerprint (0: none). [query] */
BK_API uint64_t bk_topk_count(const bk_topk *f, const void *key, size_t len);
BK_API uint64_t bk_topk_count_hash(const bk_topk *f, uint64_t hash);
BK_API uint64_t bk_topk_count_u64(const bk_topk *f, uint64_t key);

/* The keys of the heap, heaviest first (of two equal counts, the one that reached it first), into out[0 .. min(cap, n)); returns n, the number
 * of keys in the heap (at most k). out may be NULL with cap 0 (to ask n). [query] */
BK_API size_t bk_topk_list(const bk_topk *f, bk_topk_item *out, size_t cap);

/* Empty the buckets and the heap (the generator keeps its state). [excl] */
BK_API void bk_topk_clear(bk_topk *f);

/* Statistics: type BK_TYPE_TOPK, k = depth, capacity = k (the heap), count = the sum of all increments
 * (saturating), bits = width * depth (buckets), memory_bytes the buckets and the heap's entries (not the
 * keys' copies), fill_ratio the fraction of non-empty buckets, subfilters = keys in the heap. [query] */
BK_API void bk_topk_stats(const bk_topk *f, bk_stats *out);

/* Accessors. [query] */
BK_API uint32_t bk_topk_k(const bk_topk *f);
BK_API uint32_t bk_topk_width(const bk_topk *f);
BK_API uint32_t bk_topk_depth(const bk_topk *f);
BK_API double bk_topk_decay(const bk_topk *f);
BK_API uint64_t bk_topk_seed(const bk_topk *f);
/* Bytes held: the sketch, its buckets, its heap and the keys' copies. [query] */
BK_API uint64_t bk_topk_memory(const bk_topk *f);

#ifdef __cplusplus
}
#endif
#endif
