/*
 * bloomkit: the Ribbon filter, a static set near the information bound at any false-positive rate.
 *
 * Like the binary fuse filter it is built in one call from all keys and never changes afterwards
 * (through the generic handle, add, remove and clear return BK_ENOTSUP). Unlike it, the error rate is
 * not tied to a fingerprint width: any p from 10% to 1e-6 and beyond (down to BK_RIBBON_MIN_FPR) costs
 * at most 1.05 x log2(1/p) bits per key for n >= 1e5, whatever n (1%: about 6.78 bits/key where the
 * bound is 6.64 and an 8-bit fuse filter takes 9.0; 0.1%: about 10.05 where the fuse filter takes 18.0).
 *
 * New filters are bumped Ribbons of width 64 (Dillinger, Huebschle-Schneider, Sanders and Walzer,
 * "Fast succinct retrieval and approximate membership using Ribbon", 2022; file body 3): the system
 * below with 64-bit rows, in blocks of 64 slots that are also buckets. Each block has a 2-bit field
 * picking a threshold (0, 8, 24 or 64); a key whose row starts below its block's threshold is bumped:
 * left out of this system and stored in the next, smaller one (a layer of its own seed), and the last
 * layer bumps nothing. The build picks, block by block, the smallest threshold that lets the block's
 * other keys in, so it always succeeds but for the last layer, which is retried with a new seed. A
 * query reads the key's block field and its row (two blocks' columns, about 2c 64-bit words); only
 * the bumped keys, about 2%, read a second layer. Files of the earlier bodies (below: one system of
 * width 128, or shards of such systems) load and answer as before.
 *
 * Earlier bodies (Dillinger & Walzer, "Ribbon filter: practically smaller than Bloom and Xor", 2021,
 * the standard variant with ribbon width w = 128): each key gives one linear equation over GF(2),
 * a 128-bit coefficient row starting at a slot of its own, equal to the key's r-bit fingerprint. The
 * band of equations is solved by Gaussian elimination as the keys come (sorted by starting slot), then
 * by back-substitution; the solution, r bits per slot, is the filter. A query computes the dot product
 * of the key's row with the solution's r columns and compares it with the key's fingerprint: a key in
 * the set always matches, any other key with probability 2^-r. The solution is stored by blocks of 128
 * slots, column by column ("interleaved"), and the blocks of the first part of the array store
 * floor(log2(1/p)) columns, the rest one more: a key whose row starts in a block with c columns is
 * checked on c bits, so the filter's FPR is the mixture of 2^-c and 2^-(c+1) that equals p (or just
 * below it), which is how p needs not be a power of two. A set of 65,536 keys or more is cut by hash
 * into shards of about 32,768 keys, each solved on its own (its own blocks, column split and internal
 * seed), so the array keeps about 1.018 slots per key at any n (one system needs more as n grows);
 * smaller sets are one system (1.02 to 1.03 slots per key, more for very small n). docs/MATH.md gives
 * the formulas.
 *
 * Elimination can fail (a set of rows that is linearly dependent with inconsistent right-hand sides):
 * a bumped Ribbon then bumps more of the block's keys, and retries its last layer (a few thousand keys)
 * with a new seed, so a set of distinct keys always builds within the default attempts (max_attempts
 * counts the last layer's tries, each with 1.25 slots a key).
 *
 * Duplicates: the input may contain the same key (or pre-hashed value) several times; they are
 * detected (a repeated value's row always vanishes) and removed, count() is the number of distinct
 * values, and the filter equals the one built from the distinct values (in any order). The filter is a pure function of the set of 64-bit
 * hashes and the options.
 *
 * Peak memory while building from n values: about 16 n bytes (the hashes grouped by chunk of 32,768
 * slots, and their copy for byte keys), the bumped keys (about n / 16 bytes), 1 MB for two chunks'
 * rows, and the finished filter twice; with repeats in the input 8 n more (bk_ribbon_build_memory()
 * computes an upper bound).
 *
 * Thread-safety: see the legend in common.h. A built filter never changes, so queries are safe from
 * any number of threads.
 */
#ifndef BLOOMKIT_RIBBON_H
#define BLOOMKIT_RIBBON_H

#include "common.h"
#include "math.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_ribbon bk_ribbon;

/* Construction attempts (internal seeds) tried by default before giving up with BK_EFULL. */
#define BK_RIBBON_DEFAULT_ATTEMPTS 100
/* The false-positive rate a zeroed options struct asks for. */
#define BK_RIBBON_DEFAULT_FPR 0.01
/* The smallest false-positive rate a Ribbon filter is built for (30 bits per slot at most). */
#define BK_RIBBON_MIN_FPR 1e-9
/* The most keys one filter can be built from. */
#define BK_RIBBON_MAX_KEYS (UINT64_C(4000000000))

typedef struct bk_ribbon_options {
    size_t struct_size;   /* BK_RIBBON_OPTIONS_INIT sets it; 0 means this header's size (common.h) */
    const bk_allocator *allocator; /* NULL: the default (malloc); see common.h */
    double fpr;           /* the false-positive rate wanted, in [BK_RIBBON_MIN_FPR, 1); 0 means
                             BK_RIBBON_DEFAULT_FPR */
    uint32_t max_attempts; /* construction attempts; 0 means BK_RIBBON_DEFAULT_ATTEMPTS */
    uint64_t seed;        /* hash seed of bytes keys; 0 is a fine default, a secret one resists
                             crafted keys */
} bk_ribbon_options;
#define BK_RIBBON_OPTIONS_INIT BK_OPTIONS_INIT_(bk_ribbon_options)

/* ---- sizing. Pure functions: [any] ---- */

/* The geometry a filter of n distinct keys at false-positive rate p gets (its later layers as the
 * measured share of bumped keys makes them: a filter's size is within about 0.5% of m from 1e5 keys
 * on): out->m = bits of the filter's words (bytes = m / 8), out->k = the most fingerprint bits a key is checked on (ceil(log2(1/p))), out->n = n,
 * out->fpr = the FPR that geometry really gives (at most p), out->bits_per_key = m / n.
 * Errors: BK_EINVAL (n = 0, p outside [BK_RIBBON_MIN_FPR, 1) or NaN, out NULL), BK_ETOOBIG (n above
 * BK_RIBBON_MAX_KEYS, or the array past BK_MAX_FILTER_BYTES). */
BK_API bk_status bk_ribbon_size(uint64_t n, double p, bk_geometry *out);

/* Peak bytes a build from n values at p allocates, the finished filter included (with duplicates in
 * the input: n counted with them). 0 for bad arguments or sizes past the limits. */
BK_API uint64_t bk_ribbon_build_memory(uint64_t n, double p);

/* ---- construction ---- */

/* Build from n pre-hashed values (bk_hash64 or another well-mixed 64-bit hash; duplicates allowed),
 * from n byte keys (keys[i] of lens[i] bytes, hashed with bk_hash64(key, len, opts->seed), so this
 * equals bk_ribbon_build_hashes of those hashes), or from n uint64 keys (each as its 8 little-endian
 * bytes, like the _u64 queries). n = 0 builds an empty filter (every query false). opts may be NULL
 * (FPR 1%, seed 0, default attempts). The input is not modified.
 * Errors: BK_EINVAL (out NULL; hashes/keys/lens NULL with n > 0; a key NULL with len > 0; a bad fpr),
 * BK_ETOOBIG (n > BK_RIBBON_MAX_KEYS, or the array past BK_MAX_FILTER_BYTES), BK_ENOMEM, BK_EFULL (no
 * attempt succeeded within max_attempts: with the default this does not happen for distinct keys).
 * On error *out = NULL. [any] */
BK_API bk_status bk_ribbon_build_hashes(const uint64_t *hashes, size_t n, const bk_ribbon_options *opts,
                                        bk_ribbon **out);
BK_API bk_status bk_ribbon_build(const void *const *keys, const size_t *lens, size_t n,
                                 const bk_ribbon_options *opts, bk_ribbon **out);
BK_API bk_status bk_ribbon_build_u64(const uint64_t *keys, size_t n, const bk_ribbon_options *opts,
                                     bk_ribbon **out);

/* Free; NULL is fine. [excl] */
BK_API void bk_ribbon_free(bk_ribbon *f);
/* A deep copy (owned memory, also of a filter that borrows a mapping), made with f's allocator.
 * BK_EINVAL if f or out is NULL, BK_ENOMEM. [query] */
BK_API bk_status bk_ribbon_clone(const bk_ribbon *f, bk_ribbon **out);

/* ---- query ---- */

/* True if the key is probably in the set, false if it certainly is not. f must not be NULL; key may
 * be NULL only when len is 0. [query] */
BK_API bool bk_ribbon_contains(const bk_ribbon *f, const void *key, size_t len);
BK_API bool bk_ribbon_contains_hash(const bk_ribbon *f, uint64_t hash);
/* uint64 keys: the same answers as the byte forms on the key's 8 little-endian bytes. [query] */
BK_API bool bk_ribbon_contains_u64(const bk_ribbon *f, uint64_t key);

/* Batches (common.h, "Batches"): hash all keys first, prefetch each key's two blocks, then test.
 * [query] */
BK_API bk_status bk_ribbon_contains_many(const bk_ribbon *f, const void *const *keys, const size_t *lens,
                                         size_t n, uint8_t *results, size_t *hits);
BK_API bk_status bk_ribbon_contains_hashes(const bk_ribbon *f, const uint64_t *hashes, size_t n,
                                           uint8_t *results, size_t *hits);

/* ---- statistics and accessors; f must not be NULL. [query] ---- */

/* type BK_TYPE_RIBBON; k = the most fingerprint bits a key is checked on; capacity = count = distinct
 * keys; bits = the solution array's bits; memory_bytes = its bytes; bits_per_key; fill_ratio = keys /
 * slots; est_cardinality = count; fpr_target = fpr_now = the FPR of the geometry (0 for the empty
 * filter); saturated false; seed. */
BK_API void bk_ribbon_stats(const bk_ribbon *f, bk_stats *out);

BK_API uint64_t bk_ribbon_count(const bk_ribbon *f); /* distinct keys */
BK_API uint64_t bk_ribbon_seed(const bk_ribbon *f);  /* hash seed of bytes keys */
/* The FPR the filter's geometry gives (the mixture of 2^-c and 2^-(c+1); 0 for the empty filter). */
BK_API double bk_ribbon_fpr(const bk_ribbon *f);
/* The solution array as bytes, as in files. */
BK_API const uint8_t *bk_ribbon_data(const bk_ribbon *f, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
