/*
 * bloomkit: the counting Bloom filter, m counters and k probes per key, for sets with deletion.
 *
 * Each key increments (add) or decrements (remove) the k counters its probes select; a key is probably
 * present when all k are non-zero. Probes are the classic filter's (enhanced double hashing from one
 * 64-bit hash, multiply-shift range mapping over the m counters), so for the same (m, k, seed) a
 * counting filter answers contains exactly like a classic filter holding the same keys.
 *
 * Counters are packed 4 bits (default, maximum 15) or 8 bits (maximum 255) wide. A counter that
 * reaches its maximum is **sticky**: it stays there forever, no remove decrements it, so no sequence
 * of adds and removes can make a counter that still carries evidence of a present key drop to zero
 * (no false negative from overflow). The price of a stuck counter is a little extra FPR; statistics
 * report how many counters are stuck (bk_stats.saturated_cells). At the designed load with the optimal
 * k a counter's value is about Poisson(ln 2), so a 4-bit counter reaches 15 with probability about
 * 2e-15: saturation only appears in overfilled filters.
 *
 * Removing a key that was never added: remove first checks the k counters; if any is zero the key is
 * certainly absent, BK_ENOTFOUND is returned and nothing changes. But a key that was never added and
 * is a false positive passes that check, and its remove decrements counters that belong to other
 * keys, which can then be reported absent (false negatives). This holds for every counting filter:
 * only remove keys you know you added (and not more often than you added them).
 *
 * Memory: the same m as a classic filter for (n, p) (bk_bloom_size), times 4 or 8 bits per counter,
 * rounded up to whole 64-byte lines: 4x or 8x the classic filter.
 *
 * Thread-safety: see the legend in common.h. The *_atomic forms update counters with a compare-and-swap
 * on the 64-bit word holding them, so saturation stays sticky and no update is lost under races.
 */
#ifndef BLOOMKIT_COUNTING_H
#define BLOOMKIT_COUNTING_H

#include "common.h"
#include "math.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_counting bk_counting;

typedef struct bk_counting_options {
    size_t struct_size;   /* BK_COUNTING_OPTIONS_INIT sets it; 0 means this header's size (common.h) */
    const bk_allocator *allocator; /* NULL: the default (malloc); see common.h */
    uint32_t counter_bits; /* 4 or 8; 0 means 4 */
    uint64_t seed;         /* hash seed; 0 is a fine default */
} bk_counting_options;
#define BK_COUNTING_OPTIONS_INIT BK_OPTIONS_INIT_(bk_counting_options)

/* Sizing for n keys at false-positive rate p with counters of counter_bits (0 means 4) bits: the
 * geometry (m counters, k probes, the FPR it really gives; bits_per_key counts memory bits, i.e.
 * m * counter_bits / n) and the bytes of the counter array. Either output may be NULL.
 * Errors: BK_EINVAL (n = 0, bad p, counter_bits not 0/4/8), BK_ETOOBIG. [any] */
BK_API bk_status bk_counting_size(uint64_t n, double p, uint32_t counter_bits, bk_geometry *geom,
                                  uint64_t *bytes);

/* Create for n keys at false-positive rate p. opts may be NULL (4-bit counters, seed 0).
 * Errors: BK_EINVAL (n = 0, p not in (0,1), counter_bits not 0/4/8, out NULL), BK_ETOOBIG, BK_ENOMEM;
 * on error *out is NULL. [any] */
BK_API bk_status bk_counting_new(uint64_t n, double p, const bk_counting_options *opts, bk_counting **out);
/* Create with explicit m counters and k probes; capacity_hint as in bk_bloom_new_mk. Errors as
 * bk_counting_new, and BK_EINVAL for m = 0, k = 0 or k > BK_MAX_K. [any] */
BK_API bk_status bk_counting_new_mk(uint64_t m, uint32_t k, uint64_t capacity_hint,
                                    const bk_counting_options *opts, bk_counting **out);
/* Free; NULL is fine. [excl] */
BK_API void bk_counting_free(bk_counting *f);
/* A deep copy, made with f's allocator (read with relaxed loads: atomic updates may run meanwhile).
 * BK_EINVAL if f or out is NULL, BK_ENOMEM. [query] */
BK_API bk_status bk_counting_clone(const bk_counting *f, bk_counting **out);

/* Insert: increment the k counters (saturating). BK_EINVAL if f is NULL, or key is NULL with len > 0.
 * [excl] */
BK_API bk_status bk_counting_add(bk_counting *f, const void *key, size_t len);
BK_API bk_status bk_counting_add_hash(bk_counting *f, uint64_t hash);
/* Remove: if any of the k counters is zero, BK_ENOTFOUND and nothing changes; otherwise decrement
 * each counter that is not saturated, and decrement the count. See the header comment about removing
 * keys that were never added. [excl] */
BK_API bk_status bk_counting_remove(bk_counting *f, const void *key, size_t len);
BK_API bk_status bk_counting_remove_hash(bk_counting *f, uint64_t hash);

/* Atomic forms: each counter update is a compare-and-swap loop on its 64-bit word (saturation stays
 * sticky: a saturated counter is never written), the count an atomic add. Safe alongside each other
 * and alongside queries. A query racing the add or remove of the same key may see it either way;
 * nothing else can go wrong. The remove's "all k counters non-zero" check and its decrements are not
 * one atomic step: racing removes of the same key that was added once are a double remove (misuse,
 * as above); counters never wrap below zero. [query] */
BK_API bk_status bk_counting_add_atomic(bk_counting *f, const void *key, size_t len);
BK_API bk_status bk_counting_add_hash_atomic(bk_counting *f, uint64_t hash);
BK_API bk_status bk_counting_remove_atomic(bk_counting *f, const void *key, size_t len);
BK_API bk_status bk_counting_remove_hash_atomic(bk_counting *f, uint64_t hash);

/* Query: true if probably present (all k counters non-zero), false if certainly absent. f must not
 * be NULL; key may be NULL only when len is 0. [query] */
BK_API bool bk_counting_contains(const bk_counting *f, const void *key, size_t len);
BK_API bool bk_counting_contains_hash(const bk_counting *f, uint64_t hash);

/* uint64 keys: the same answers as the byte forms on the key's 8 little-endian bytes
 * (bk_counting_add_u64(f, k) is bk_counting_add(f, &k_le, 8)), so the two forms mix on one filter
 * and in files. The hash is XXH3 at the constant length 8 (bk_hash64 of those bytes) without the
 * byte forms' length dispatch. Errors and thread-safety as the byte forms: add [excl], remove
 * [excl], contains [query]. */
BK_API bk_status bk_counting_add_u64(bk_counting *f, uint64_t key);
BK_API bk_status bk_counting_remove_u64(bk_counting *f, uint64_t key);
BK_API bool bk_counting_contains_u64(const bk_counting *f, uint64_t key);

/* Batches (common.h, "Batches"): hash all keys first, prefetch, then probe. [excl] for adds, [query]
 * for contains. */
BK_API bk_status bk_counting_add_many(bk_counting *f, const void *const *keys, const size_t *lens, size_t n);
BK_API bk_status bk_counting_add_hashes(bk_counting *f, const uint64_t *hashes, size_t n);
BK_API bk_status bk_counting_contains_many(const bk_counting *f, const void *const *keys, const size_t *lens,
                                           size_t n, uint8_t *results, size_t *hits);
BK_API bk_status bk_counting_contains_hashes(const bk_counting *f, const uint64_t *hashes, size_t n,
                                             uint8_t *results, size_t *hits);

/* Zero every counter and the count. [excl] */
BK_API void bk_counting_clear(bk_counting *f);

/* dst += src counter by counter, saturating (a saturated counter stays saturated). Both must have the
 * same m, k, counter width and seed, else BK_EINCOMPAT and dst is unchanged. dst's count becomes the
 * sum of both counts. [excl] on dst, [query] on src: *_atomic updates may run on src meanwhile (a key
 * whose insert returned before the union began is in dst; one changed during it may or may not be). */
BK_API bk_status bk_counting_union(bk_counting *dst, const bk_counting *src);
/* BK_OK if the two could be merged, else BK_EINCOMPAT (BK_EINVAL for NULL). [query] */
BK_API bk_status bk_counting_compatible(const bk_counting *a, const bk_counting *b);

/* Statistics: bits = m (counters), memory_bytes the counter array, fill_ratio the fraction of non-zero
 * counters, saturated_cells the counters stuck at their maximum. O(m). [query] */
BK_API void bk_counting_stats(const bk_counting *f, bk_stats *out);

/* Accessors. [query] */
BK_API uint64_t bk_counting_counters(const bk_counting *f); /* m */
BK_API uint32_t bk_counting_k(const bk_counting *f);
BK_API uint32_t bk_counting_counter_bits(const bk_counting *f); /* 4 or 8 */
BK_API uint64_t bk_counting_count(const bk_counting *f);
BK_API uint64_t bk_counting_seed(const bk_counting *f);
/* The value of counter i (0 <= i < m; 0 for i out of range). */
BK_API uint32_t bk_counting_counter(const bk_counting *f, uint64_t i);
/* The counter array as bytes: little-endian 64-bit words; counter i is in word i / (64 / bits), at bit
 * (i % (64 / bits)) * bits. Counters past m stay zero. */
BK_API const uint8_t *bk_counting_data(const bk_counting *f, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
