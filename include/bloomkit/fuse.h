/*
 * bloomkit: the binary fuse filter, for sets that never change once built (the filter written next
 * to an immutable SSTable, a blocklist shipped to gateways).
 *
 * It is built in one call from all keys and answers queries with three memory reads; it cannot add
 * or remove keys afterwards (through the generic handle those calls return BK_ENOTSUP). Each key
 * owns one cell of an array of 8- or 16-bit fingerprints, chosen so that the XOR of the key's three
 * cells equals the key's fingerprint; a key that is not in the set matches with probability 2^-8 or
 * 2^-16. The array holds about 1.125 cells per key for large n (more for small n), so a filter costs
 * about 9.0 (8-bit) or 18.0 (16-bit) bits per key: far below a classic Bloom filter at the same FPR
 * (about 11.5 and 23 bits per key).
 *
 * Construction (Graf & Lemire, "Binary Fuse Filters: Fast and Smaller Than Xor Filters", 2022): the
 * array is cut into segments; a key's three cells lie in three consecutive segments. Keys are
 * bucketed by segment for locality, then "peeled" (repeatedly take a cell that only one remaining
 * key uses; that key gets that cell), and the fingerprints are assigned in the reverse order. Peeling
 * can fail; the build then retries with a new internal seed, up to max_attempts times (each attempt
 * succeeds with high probability, so the default bound is never reached in practice).
 *
 * Duplicates: the input may contain the same key (or pre-hashed value) several times; duplicates are
 * detected and removed, and count() is the number of distinct values. The filter depends only on the
 * set of distinct 64-bit hashes and the options: input order and duplicates do not change a bit.
 *
 * Time and memory are linear in n. Peak memory while building from n values (bytes keys or
 * pre-hashed; with or without duplicates), with L cells (L ~ 1.125 n for large n) and b = fingerprint
 * bytes (1 or 2), is
 *     8 n + 13 L + b L  bytes  (~ 23.8 bytes per key for 8-bit, ~ 24.9 for 16-bit)
 * plus a few KiB, the finished filter included (bk_fuse_build_memory() computes it).
 *
 * Thread-safety: see the legend in common.h. A built filter never changes, so queries are safe from
 * any number of threads.
 */
#ifndef BLOOMKIT_FUSE_H
#define BLOOMKIT_FUSE_H

#include "common.h"
#include "math.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_fuse bk_fuse;

/* Construction attempts (internal seeds) tried by default before giving up with BK_EFULL. */
#define BK_FUSE_DEFAULT_ATTEMPTS 100

typedef struct bk_fuse_options {
    size_t struct_size;   /* BK_FUSE_OPTIONS_INIT sets it; 0 means this header's size (common.h) */
    const bk_allocator *allocator; /* NULL: the default (malloc); see common.h */
    uint32_t fingerprint_bits; /* 8 or 16; 0 means 8 */
    uint32_t max_attempts;     /* construction attempts; 0 means BK_FUSE_DEFAULT_ATTEMPTS */
    uint64_t seed;             /* hash seed of bytes keys; 0 is a fine default, a secret one resists
                                  crafted keys */
} bk_fuse_options;
#define BK_FUSE_OPTIONS_INIT BK_OPTIONS_INIT_(bk_fuse_options)

/* ---- sizing. Pure functions: [any] ---- */

/* The geometry a filter of n distinct keys with fingerprint_bits (8 or 16) gets: out->m = bits of
 * the fingerprint array (cells * fingerprint_bits; bytes = m / 8), out->k = fingerprint_bits,
 * out->n = n, out->fpr = 2^-fingerprint_bits, out->bits_per_key = m / n.
 * Errors: BK_EINVAL (n = 0, bits not 8 or 16, out NULL), BK_ETOOBIG (above the construction limit
 * BK_FUSE_MAX_KEYS or BK_MAX_FILTER_BYTES). */
BK_API bk_status bk_fuse_size(uint64_t n, uint32_t fingerprint_bits, bk_geometry *out);

/* The smallest fuse filter whose FPR is at most p: 8-bit fingerprints when p >= 2^-8, 16-bit when
 * p >= 2^-16 (out->k says which). Errors as bk_fuse_size; BK_EINVAL also for p outside (0, 1) and
 * for p < 2^-16, which no fuse filter reaches (use a Bloom or cuckoo filter). */
BK_API bk_status bk_fuse_size_for_fpr(uint64_t n, double p, bk_geometry *out);

/* Peak bytes a build from n values allocates with fingerprint_bits (8 or 16), the finished filter
 * included (with duplicates in the input: n counted with them). 0 for bad arguments or sizes past the
 * limits. */
BK_API uint64_t bk_fuse_build_memory(uint64_t n, uint32_t fingerprint_bits);

/* The most keys one filter can be built from (the construction indexes cells with 32 bits). */
#define BK_FUSE_MAX_KEYS (UINT64_C(3800000000))

/* ---- construction ---- */

/* Build from n pre-hashed values (bk_hash64 or another well-mixed 64-bit hash; duplicates allowed),
 * or from n byte keys (keys[i] of lens[i] bytes, hashed with bk_hash64(key, len, opts->seed), so this
 * equals bk_fuse_build_hashes of those hashes). n = 0 builds an empty filter (every query false).
 * opts may be NULL (8-bit fingerprints, seed 0, default attempts). The input is not modified.
 * Errors: BK_EINVAL (out NULL; hashes/keys/lens NULL with n > 0; a key NULL with len > 0; bad
 * fingerprint_bits), BK_ETOOBIG (n > BK_FUSE_MAX_KEYS), BK_ENOMEM, BK_EFULL (no attempt succeeded
 * within max_attempts: with the default this does not happen in practice). On error *out = NULL. [any] */
BK_API bk_status bk_fuse_build_hashes(const uint64_t *hashes, size_t n, const bk_fuse_options *opts,
                                      bk_fuse **out);
BK_API bk_status bk_fuse_build(const void *const *keys, const size_t *lens, size_t n,
                               const bk_fuse_options *opts, bk_fuse **out);

/* Free; NULL is fine. [excl] */
BK_API void bk_fuse_free(bk_fuse *f);
/* A deep copy (owned memory, also of a filter that borrows a mapping), made with f's allocator.
 * BK_EINVAL if f or out is NULL, BK_ENOMEM. [query] */
BK_API bk_status bk_fuse_clone(const bk_fuse *f, bk_fuse **out);

/* ---- query ---- */

/* True if the key is probably in the set, false if it certainly is not. f must not be NULL; key may
 * be NULL only when len is 0. [query] */
BK_API bool bk_fuse_contains(const bk_fuse *f, const void *key, size_t len);
BK_API bool bk_fuse_contains_hash(const bk_fuse *f, uint64_t hash);

/* uint64 keys: the same answers as the byte forms on the key's 8 little-endian bytes
 * (bk_fuse_contains_u64(f, k) is bk_fuse_contains(f, &k_le, 8)), so the two forms mix on one filter
 * and in files. The hash is XXH3 at the constant length 8 (bk_hash64 of those bytes) without the
 * byte forms' length dispatch. Errors and thread-safety as the byte forms: contains [query]. */
BK_API bool bk_fuse_contains_u64(const bk_fuse *f, uint64_t key);

/* Batches (common.h, "Batches"): hash all keys first, prefetch the three cells of each, then test.
 * [query] */
BK_API bk_status bk_fuse_contains_many(const bk_fuse *f, const void *const *keys, const size_t *lens,
                                       size_t n, uint8_t *results, size_t *hits);
BK_API bk_status bk_fuse_contains_hashes(const bk_fuse *f, const uint64_t *hashes, size_t n,
                                         uint8_t *results, size_t *hits);

/* ---- statistics and accessors: [query] ---- */

/* type BK_TYPE_FUSE; k = fingerprint bits; capacity = count = distinct keys; bits = cells * k;
 * memory_bytes = the fingerprint array; bits_per_key; fill_ratio = keys / cells (cells owned by a
 * key); est_cardinality = count; fpr_target = fpr_now = 2^-k (0 for the empty filter); saturated
 * false; seed. */
BK_API void bk_fuse_stats(const bk_fuse *f, bk_stats *out);

BK_API uint64_t bk_fuse_count(const bk_fuse *f);            /* distinct keys */
BK_API uint32_t bk_fuse_fingerprint_bits(const bk_fuse *f); /* 8 or 16 */
BK_API uint64_t bk_fuse_seed(const bk_fuse *f);             /* hash seed of bytes keys */
/* The fingerprint array as bytes, for comparisons and export (16-bit cells little-endian, as in
 * files: the library builds on little-endian hosts only). */
BK_API const uint8_t *bk_fuse_data(const bk_fuse *f, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
