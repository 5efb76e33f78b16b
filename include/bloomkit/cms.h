/*
 * bloomkit: the count-min sketch, a frequency estimate for a stream of keys.
 *
 * A sketch is `depth` rows of `width` 32-bit counters. Incrementing a key adds to one counter per row
 * (the row's position comes from the key's 64-bit hash, the classic filter's probe sequence mapped to
 * the width); the estimate of a key is the smallest of its depth counters. An estimate is never below
 * the key's true count (no undercount, as a Bloom filter has no false negative), and with N the total of
 * all increments it exceeds the true count by more than error * N with probability at most delta when
 * the sketch was made with bk_cms_new_prob(error, delta): width = ceil(2 / error) and
 * depth = ceil(log2(1 / delta)) (each row overshoots by more than error * N with probability at most 1/2,
 * by Markov's inequality; the rows are independent draws of that event). docs/MATH.md has the formulas.
 *
 * Conservative update (bk_cms_options.conservative): an increment raises each of the key's counters
 * only as far as (the key's estimate + the increment), never lowering one; estimates stay upper bounds
 * and are never worse than plain updates, usually much better on skewed streams. A conservative sketch
 * cannot be merged with a weighted subtraction meaningfully (its counters are not sums), but merges by
 * addition still give upper bounds.
 *
 * Counters saturate: one that would pass UINT32_MAX stays at UINT32_MAX for good (no sequence of
 * increments wraps it), and an estimate of UINT32_MAX means "at least that many". The total N is a
 * 64-bit count that saturates at UINT64_MAX likewise.
 *
 * This is a sketch, not a membership filter: in a generic handle (bk_filter, filter.h), which carries it
 * for files and mappings, bk_filter_add adds 1 to the key's count and bk_filter_contains answers whether
 * its estimate is non-zero (a key ever added is always found, as in the filters); the counts themselves
 * are read through bk_filter_get(f, BK_TYPE_CMS) and this header.
 *
 * Thread-safety: see the legend in common.h. Queries run alongside each other; every change needs the
 * caller's exclusion.
 */
#ifndef BLOOMKIT_CMS_H
#define BLOOMKIT_CMS_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_cms bk_cms;

typedef struct bk_cms_options {
    size_t struct_size;            /* BK_CMS_OPTIONS_INIT sets it; 0 means this header's size (common.h) */
    const bk_allocator *allocator; /* NULL: the default (malloc); see common.h */
    uint64_t seed;                 /* hash seed; 0 is a fine default */
    bool conservative;             /* conservative update (above); default false: plain sums */
} bk_cms_options;
#define BK_CMS_OPTIONS_INIT BK_OPTIONS_INIT_(bk_cms_options)

/* The largest width and depth accepted (the array is also bounded by BK_MAX_FILTER_BYTES). */
#define BK_CMS_MAX_DEPTH 64u

/* Dimensions for an overestimate of at most error * N with probability at least 1 - delta: width =
 * ceil(2 / error), depth = ceil(log2(1 / delta)) (RedisBloom's CMS.INITBYPROB sizing). Either output may
 * be NULL. BK_EINVAL unless 0 < error < 1 and 0 < delta < 1, BK_ETOOBIG when the array would pass the
 * limits. [any] */
BK_API bk_status bk_cms_dims(double error, double delta, uint64_t *width, uint32_t *depth);
/* Bytes of the counter array of a width x depth sketch (what bk_cms_stats reports as memory_bytes):
 * 0 when the dimensions are refused (0, depth past BK_CMS_MAX_DEPTH, past BK_MAX_FILTER_BYTES). [any] */
BK_API uint64_t bk_cms_bytes(uint64_t width, uint32_t depth);

/* Create by dimensions. opts may be NULL. Errors: BK_EINVAL (width or depth 0, depth past
 * BK_CMS_MAX_DEPTH, out NULL), BK_ETOOBIG, BK_ENOMEM; on error *out is NULL. [any] */
BK_API bk_status bk_cms_new(uint64_t width, uint32_t depth, const bk_cms_options *opts, bk_cms **out);
/* Create by (error, delta), sized by bk_cms_dims. Errors as bk_cms_dims and bk_cms_new. [any] */
BK_API bk_status bk_cms_new_prob(double error, double delta, const bk_cms_options *opts, bk_cms **out);
/* Free; NULL is fine. [excl] */
BK_API void bk_cms_free(bk_cms *f);
/* A deep copy, made with f's allocator. BK_EINVAL if f or out is NULL, BK_ENOMEM. [query] */
BK_API bk_status bk_cms_clone(const bk_cms *f, bk_cms **out);

/* Add `value` to the key's count. *estimate (may be NULL) receives the key's estimate after the change
 * (UINT32_MAX: saturated). BK_EINVAL if f is NULL or key is NULL with len > 0. [excl] */
BK_API bk_status bk_cms_incrby(bk_cms *f, const void *key, size_t len, uint32_t value, uint64_t *estimate);
BK_API bk_status bk_cms_incrby_hash(bk_cms *f, uint64_t hash, uint32_t value, uint64_t *estimate);
/* The same answers as the byte forms on the key's 8 little-endian bytes. [excl] */
BK_API bk_status bk_cms_incrby_u64(bk_cms *f, uint64_t key, uint32_t value, uint64_t *estimate);

/* The key's estimate (0 for f NULL). [query] */
BK_API uint64_t bk_cms_query(const bk_cms *f, const void *key, size_t len);
BK_API uint64_t bk_cms_query_hash(const bk_cms *f, uint64_t hash);
BK_API uint64_t bk_cms_query_u64(const bk_cms *f, uint64_t key);

/* Batches. The keys are hashed first, then every counter they touch is prefetched, then updated, so a
 * sketch larger than the cache is updated at memory speed. values (may be NULL: 1 for every key) holds
 * each key's increment; estimates (may be NULL) receives each key's estimate after its own increment, in
 * order (a key repeated in the batch sees its earlier increments). Shapes otherwise as common.h's
 * "Batches": BK_EINVAL and nothing done for NULL arrays with n > 0 or a NULL key with a length.
 * [excl] */
BK_API bk_status bk_cms_incrby_many(bk_cms *f, const void *const *keys, const size_t *lens, const uint32_t *values,
                                    size_t n, uint64_t *estimates);
BK_API bk_status bk_cms_incrby_hashes(bk_cms *f, const uint64_t *hashes, const uint32_t *values, size_t n,
                                      uint64_t *estimates);
/* estimates[n] receives each key's estimate. [query] */
BK_API bk_status bk_cms_query_many(const bk_cms *f, const void *const *keys, const size_t *lens, size_t n,
                                   uint64_t *estimates);
BK_API bk_status bk_cms_query_hashes(const bk_cms *f, const uint64_t *hashes, size_t n, uint64_t *estimates);

/* dst = sum over i of weights[i] * srcs[i], counter by counter, and dst's total likewise (CMS.MERGE;
 * weights may be NULL: all 1). dst may be one of srcs. Every source must have dst's width, depth and
 * seed (BK_EINCOMPAT otherwise). A counter whose sum passes UINT32_MAX, or that draws on a saturated
 * counter with a positive weight, saturates; a counter or total whose sum is negative (a subtraction
 * of more than was there) refuses the merge with BK_EINVAL. On any error dst is unchanged. n = 0 is
 * BK_EINVAL. [excl] on dst, [query] on the sources. */
BK_API bk_status bk_cms_merge(bk_cms *dst, const bk_cms *const *srcs, const int64_t *weights, size_t n);
/* BK_OK if the two could be merged, else BK_EINCOMPAT (BK_EINVAL for NULL). [query] */
BK_API bk_status bk_cms_compatible(const bk_cms *a, const bk_cms *b);

/* Zero every counter and the total. [excl] */
BK_API void bk_cms_clear(bk_cms *f);

/* Statistics: type BK_TYPE_CMS, k = depth, bits = width * depth (counters), count = the total N,
 * memory_bytes the counter array, fill_ratio the fraction of non-zero counters, saturated_cells the
 * counters at UINT32_MAX, fpr_target the sizing error (error of bk_cms_new_prob, 2 / width
 * otherwise). O(width * depth). [query] */
BK_API void bk_cms_stats(const bk_cms *f, bk_stats *out);

/* Accessors. [query] */
BK_API uint64_t bk_cms_width(const bk_cms *f);
BK_API uint32_t bk_cms_depth(const bk_cms *f);
BK_API uint64_t bk_cms_total(const bk_cms *f); /* N: the sum of all increments (saturating) */
BK_API uint64_t bk_cms_seed(const bk_cms *f);
BK_API bool bk_cms_conservative(const bk_cms *f);
/* The counter of row r at column c (0 out of range). */
BK_API uint32_t bk_cms_counter(const bk_cms *f, uint32_t row, uint64_t col);

#ifdef __cplusplus
}
#endif
#endif
