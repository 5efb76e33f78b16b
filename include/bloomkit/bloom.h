/*
 * bloomkit: the classic Bloom filter, m bits and k probes per key.
 *
 * Layouts: BK_LAYOUT_STANDARD (probes anywhere in m bits) or BK_LAYOUT_PARTITIONED (k slices of m/k
 * bits, probe i in slice i; same memory, slightly higher FPR, better for intersection estimates).
 * Probes come from one 64-bit hash by enhanced double hashing and are mapped to ranges by
 * multiply-shift, so filters larger than 2^32 bits work.
 *
 * Code paths: on x86 CPUs with BMI2 the standard layout's one-key insert and query take a loop built
 * on mulx/shrx, chosen once per filter when it is created; BK_SIMD=scalar in the environment or
 * bk_simd_force(BK_SIMD_SCALAR) (experimental tier, blocked.h) keeps the portable loop. Both set
 * identical bits.
 *
 * Thread-safety: see the legend in common.h.
 */
#ifndef BLOOMKIT_BLOOM_H
#define BLOOMKIT_BLOOM_H

#include "common.h"
#include "math.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_bloom bk_bloom;

typedef enum bk_layout { BK_LAYOUT_STANDARD = 0, BK_LAYOUT_PARTITIONED = 1 } bk_layout;

typedef struct bk_bloom_options {
    size_t struct_size;   /* BK_BLOOM_OPTIONS_INIT sets it; 0 means this header's size (common.h) */
    const bk_allocator *allocator; /* NULL: the default (malloc); see common.h */
    bk_layout layout;
    uint64_t seed;     /* hash seed; 0 is a fine default, a secret one resists crafted keys */
} bk_bloom_options;
#define BK_BLOOM_OPTIONS_INIT BK_OPTIONS_INIT_(bk_bloom_options)

/* Create for n keys at false-positive rate p. opts may be NULL (standard layout, seed 0).
 * Errors: BK_EINVAL (n = 0, p not in (0,1), out NULL, an unknown layout, or an options struct refused
 * as common.h says), BK_ETOOBIG, BK_ENOMEM. [any] */
BK_API bk_status bk_bloom_new(uint64_t n, double p, const bk_bloom_options *opts, bk_bloom **out);
/* Create with explicit m bits and k probes (partitioned: m is rounded up to a multiple of k);
 * capacity_hint is the n used by statistics (0: the n that gives the optimal-k FPR, see
 * bk_bloom_capacity). Errors as bk_bloom_new, and BK_EINVAL for m = 0, k = 0 or k > BK_MAX_K. [any] */
BK_API bk_status bk_bloom_new_mk(uint64_t m, uint32_t k, uint64_t capacity_hint,
                                 const bk_bloom_options *opts, bk_bloom **out);
/* Free; NULL is fine. [excl] */
BK_API void bk_bloom_free(bk_bloom *f);
/* A deep copy, made with f's allocator. BK_EINVAL if f or out is NULL, BK_ENOMEM. [query] */
BK_API bk_status bk_bloom_clone(const bk_bloom *f, bk_bloom **out);

/* Insert. BK_EINVAL if f is NULL, or key is NULL with len > 0. [excl] */
BK_API bk_status bk_bloom_add(bk_bloom *f, const void *key, size_t len);
BK_API bk_status bk_bloom_add_hash(bk_bloom *f, uint64_t hash);
/* Insert with atomic 64-bit ORs and an atomic count: safe alongside each other and alongside
 * queries. A query racing the insert of the same key may miss it; nothing else can go wrong. [query] */
BK_API bk_status bk_bloom_add_atomic(bk_bloom *f, const void *key, size_t len);
BK_API bk_status bk_bloom_add_hash_atomic(bk_bloom *f, uint64_t hash);

/* Query: true if the key is probably present, false if it is certainly absent. f must not be NULL;
 * key may be NULL only when len is 0. [query] */
BK_API bool bk_bloom_contains(const bk_bloom *f, const void *key, size_t len);
BK_API bool bk_bloom_contains_hash(const bk_bloom *f, uint64_t hash);

/* uint64 keys: the same answers as the byte forms on the key's 8 little-endian bytes
 * (bk_bloom_add_u64(f, k) is bk_bloom_add(f, &k_le, 8)), so the two forms mix on one filter and in
 * files. The hash is XXH3 at the constant length 8 (bk_hash64 of those bytes) without the byte
 * forms' length dispatch. Errors and thread-safety as the byte forms: add [excl], contains [query]. */
BK_API bk_status bk_bloom_add_u64(bk_bloom *f, uint64_t key);
BK_API bool bk_bloom_contains_u64(const bk_bloom *f, uint64_t key);

/* Batches (common.h, "Batches"): hash all keys first, prefetch, then probe. [excl] for adds, [query]
 * for contains. */
BK_API bk_status bk_bloom_add_many(bk_bloom *f, const void *const *keys, const size_t *lens, size_t n);
BK_API bk_status bk_bloom_add_hashes(bk_bloom *f, const uint64_t *hashes, size_t n);
BK_API bk_status bk_bloom_contains_many(const bk_bloom *f, const void *const *keys, const size_t *lens,
                                        size_t n, uint8_t *results, size_t *hits);
BK_API bk_status bk_bloom_contains_hashes(const bk_bloom *f, const uint64_t *hashes, size_t n,
                                          uint8_t *results, size_t *hits);

/* Filling one filter on several threads without atomics (what `bloomkit build` does): the bit array
 * is cut into nparts ranges of whole 64-byte lines, and this call sets only the bits of the hashes'
 * probes that fall in range `part`; it leaves the count alone (set it after the fill through
 * bk_filter_set_count). Calls for different parts touch disjoint lines, so they may run at the same
 * time; calls for every part over the same hashes set exactly the bits bk_bloom_add_hashes sets.
 * BK_EINVAL: f NULL, hashes NULL with n > 0, nparts 0 or part >= nparts. [excl] on part `part`: calls
 * for other parts may run meanwhile, nothing else may. */
BK_API bk_status bk_bloom_add_hashes_part(bk_bloom *f, const uint64_t *hashes, size_t n, unsigned part,
                                          unsigned nparts);

/* Zero every bit and the count. [excl] */
BK_API void bk_bloom_clear(bk_bloom *f);

/* dst |= src (union) or dst &= src (intersection). Both must have the same m, k, layout and seed,
 * else BK_EINCOMPAT and dst is unchanged. Afterwards dst's count is the fill-based cardinality
 * estimate. [excl] on dst, [query] on src: *_atomic inserts may run on src meanwhile (src's
 * keys are those whose insert returned before the call began, and may or may not include the others). */
BK_API bk_status bk_bloom_union(bk_bloom *dst, const bk_bloom *src);
BK_API bk_status bk_bloom_intersect(bk_bloom *dst, const bk_bloom *src);
/* BK_OK if the two could be merged, else BK_EINCOMPAT (BK_EINVAL for NULL; union and intersect
 * also return it for a NULL argument). [query] */
BK_API bk_status bk_bloom_compatible(const bk_bloom *a, const bk_bloom *b);

/* Statistics (fill by popcount: O(m)). [query] */
BK_API void bk_bloom_stats(const bk_bloom *f, bk_stats *out);

/* Geometry accessors. [query] */
BK_API uint64_t bk_bloom_bits(const bk_bloom *f);
BK_API uint32_t bk_bloom_k(const bk_bloom *f);
BK_API uint64_t bk_bloom_count(const bk_bloom *f);
BK_API uint64_t bk_bloom_seed(const bk_bloom *f);
BK_API bk_layout bk_bloom_layout_of(const bk_bloom *f);
/* The bit array as bytes (little-endian 64-bit words), for comparisons and export. [query] */
BK_API const uint8_t *bk_bloom_data(const bk_bloom *f, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
