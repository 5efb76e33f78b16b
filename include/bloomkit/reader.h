/*
 * bloomkit's header-inline readers: read-only queries of a built blocked, binary fuse or cuckoo filter
 * that compile into the caller's loop.
 *
 * Tier: experimental (see experimental.h). This header turns BK_STATIC_LINKING_ONLY on and includes
 * bloomkit.h; the readers' structs and their inline code may change in any 1.x release, so a program
 * that uses them is rebuilt with each new version. It is not included by bloomkit.h nor by
 * experimental.h: include it by name. It includes <xxhash.h> (Debian: libxxhash-dev) with
 * XXH_INLINE_ALL, as the library's own sources do, so the readers hash a key with the same XXH3-64
 * code the library runs, inlined; the macro is undefined again afterwards if this header defined it.
 *
 * Why: a one-key library call is a call, its argument checks and a dispatch to the filter's path. On a
 * filter larger than the cache each query waits on one to three cache misses, and the CPU overlaps the
 * misses of the next keys only as far as its reorder window reaches: inlined, a query is a few dozen
 * instructions, so more of them (and more misses) are in flight at once. The batch calls
 * (`*_contains_many`, `*_contains_hashes`) get there by hashing and prefetching a chunk at a time; a
 * reader gets there in a plain loop.
 *
 * What a reader is: a small struct filled by the library (bk_<type>_get_reader) with the pointer to the
 * filter's own array (the same bytes the library queries: in memory, loaded or mapped) and the geometry
 * and seed a query needs. bk_<type>_reader_contains(r, key, len) answers exactly as
 * bk_<type>_contains(f, key, len), bk_<type>_reader_contains_u64 as bk_<type>_contains_u64 and
 * bk_<type>_reader_contains_hash as bk_<type>_contains_hash, for every key (tests/test_reader.c holds
 * them to it on the golden files and on random filters). Readers are passed by value, so a loop keeps
 * their fields in registers.
 *
 * Lifetime and threads: a reader borrows the filter's array. It stays valid until the filter is freed
 * (a blocked or fuse filter), or until the filter is next changed (a cuckoo filter: an insert or
 * removal may move a key to the stash or grow a second table, which a reader taken before does not see;
 * take a new reader after changes). The reader's calls are [query] calls on the filter: safe alongside
 * other queries (and, for the blocked filter, alongside its *_atomic inserts), not alongside the
 * filter's other writers.
 *
 * What has a reader (bk_<type>_get_reader answers BK_ENOTSUP otherwise; use the library calls there):
 *   blocked  the BK_BLOCKED_SPLIT256 layout (the default), on bk_blocked_view (blocked.h);
 *   fuse     every fuse filter (8- and 16-bit fingerprints);
 *   cuckoo   one table (no expansion chain grown yet), no concurrent mode, buckets read in one 64-bit
 *            load (every b * f <= 57, and b * f = 64 at byte-aligned buckets), not semi-sorted. The
 *            victim stash is answered as the library does.
 */
#ifndef BLOOMKIT_READER_H
#define BLOOMKIT_READER_H

#ifndef BK_STATIC_LINKING_ONLY
#  define BK_STATIC_LINKING_ONLY
#endif
#include "bloomkit.h"
#include "blocked.h"

#include <string.h>

#ifndef XXH_INLINE_ALL
#  define XXH_INLINE_ALL
#  define BK_READER__XXH_DEFINED
#endif
#include <xxhash.h>
#ifdef BK_READER__XXH_DEFINED
#  undef XXH_INLINE_ALL
#  undef BK_READER__XXH_DEFINED
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- hashing: the library's XXH3-64 of a key, inlined ----
 * An 8-byte key (and every uint64 key, as its 8 little-endian bytes) takes XXH3's 4-to-8-byte form in
 * two steps: `flip`, the part that depends only on the seed, computed once by the library and kept in
 * the reader, then the key's own mix. Other lengths take XXH3_64bits_withSeed from <xxhash.h>. */
/* x >> n. Compiled for BMI2 on x86-64 it is shrx, which leaves x in place: in a loop the counts stay
 * in registers and each shift of the hash saves the copy a plain shift needs. */
static inline uint64_t bk_reader__shr(uint64_t x, uint64_t n)
{
#if defined(__BMI2__) && defined(__x86_64__) && defined(__GNUC__)
    uint64_t y;
    __asm__("shrx %2, %1, %0" : "=r"(y) : "r"(x), "r"(n));
    return y;
#else
    return x >> n;
#endif
}
static inline uint64_t bk_reader_hash_u64(uint64_t key, uint64_t flip)
{
    uint64_t h = ((key >> 32) | (key << 32)) ^ flip;
    h ^= ((h << 49) | (h >> 15)) ^ ((h << 24) | (h >> 40));
    h *= UINT64_C(0x9FB21C651E98DF25);
    h ^= bk_reader__shr(h, 35) + 8;
    h *= UINT64_C(0x9FB21C651E98DF25);
    return h ^ bk_reader__shr(h, 28);
}
static inline uint64_t bk_reader_hash(const void *key, size_t len, uint64_t seed, uint64_t flip)
{
    if (len == 8) {
        uint64_t k;
        memcpy(&k, key, 8);
        return bk_reader_hash_u64(k, flip);
    }
    return (uint64_t)XXH3_64bits_withSeed(key, len, seed);
}

#if defined(__GNUC__)
#  define BK_READER__UNLIKELY(c) __builtin_expect(!!(c), 0)
#else
#  define BK_READER__UNLIKELY(c) (c)
#endif

/* high 64 bits of a * b */
static inline uint64_t bk_reader__mulhi(uint64_t a, uint64_t b)
{
#if defined(__BMI2__) && defined(__x86_64__) && defined(__GNUC__)
    /* mulx: a stays where it is (mul takes it in rax and overwrites it) */
    uint64_t lo, hi;
    __asm__("mulx %3, %0, %1" : "=r"(lo), "=r"(hi) : "d"(a), "rm"(b));
    (void)lo;
    return hi;
#elif defined(__SIZEOF_INT128__)
    __extension__ typedef unsigned __int128 bk_reader__u128;
    return (uint64_t)(((bk_reader__u128)a * b) >> 64);
#else
    uint64_t a1 = a >> 32, a0 = a & 0xffffffffu, b1 = b >> 32, b0 = b & 0xffffffffu;
    uint64_t mid = a1 * b0 + ((a0 * b0) >> 32), mid2 = a0 * b1 + (mid & 0xffffffffu);
    return a1 * b1 + (mid >> 32) + (mid2 >> 32);
#endif
}

/* ---- blocked filter (SPLIT256) ---- */

typedef struct bk_blocked_reader {
    bk_blocked_view view; /* the words and the block count (blocked.h) */
    uint64_t seed;        /* the filter's hash seed */
    uint64_t flip;        /* the seed's part of an 8-byte key's hash */
} bk_blocked_reader;

/* Fill *out for f. BK_EINVAL for NULL arguments, BK_ENOTSUP for the BK_BLOCKED_512 layout. [query] */
BK_API bk_status bk_blocked_get_reader(const bk_blocked *f, bk_blocked_reader *out);

/* As bk_blocked_contains_hash / _contains_u64 / _contains. [query] */
static inline bool bk_blocked_reader_contains_hash(bk_blocked_reader r, uint64_t hash)
{
    return bk_blocked_view_contains(r.view, hash);
}
static inline bool bk_blocked_reader_contains_u64(bk_blocked_reader r, uint64_t key)
{
    return bk_blocked_view_contains(r.view, bk_reader_hash_u64(key, r.flip));
}
static inline bool bk_blocked_reader_contains(bk_blocked_reader r, const void *key, size_t len)
{
    return bk_blocked_view_contains(r.view, bk_reader_hash(key, len, r.seed, r.flip));
}

/* ---- binary fuse filter ---- */

typedef struct bk_fuse_reader {
    const uint8_t *cells; /* the fingerprint array: bytes, or 16-bit little-endian cells */
    uint64_t span;        /* the range of a key's first cell: segment count * segment length */
    uint64_t seglen;      /* segment length (a power of two) */
    uint64_t segmask;     /* seglen - 1 */
    uint64_t mix_seed;    /* 0, or the seed of the remix of the hash the filter was built with */
    uint64_t seed;        /* the filter's hash seed */
    uint64_t flip;        /* the seed's part of an 8-byte key's hash */
    uint32_t fp_bits;     /* 8 or 16 */
    uint32_t empty;       /* 1 for the filter of no key: every query answers false */
} bk_fuse_reader;

/* Fill *out for f. BK_EINVAL for NULL arguments. [query] */
BK_API bk_status bk_fuse_get_reader(const bk_fuse *f, bk_fuse_reader *out);

/* x of a hash: the hash itself, or its remix when the filter was built with one. (The readers' fields
 * are passed on by value, never by address: a loop then keeps them in registers.) */
static inline uint64_t bk_fuse_reader__x(uint64_t mix_seed, uint64_t hash)
{
    uint64_t x = hash;
    /* A filter's first construction attempt has no remix (mix_seed 0), so this branch goes the same
     * way for every key of a loop. On x86-64 the remix's two multipliers are read from memory: as
     * constants the compiler would hold them in registers across the whole loop (or in vector
     * registers), pushing the loop's own values (the array, the span, the loop's end) onto the
     * stack, where the common path would reload them for every key. */
    if (mix_seed) {
        x += mix_seed;
        x ^= x >> 33;
#if defined(__x86_64__) && defined(__GNUC__)
        static const uint64_t m[2] = { UINT64_C(0xff51afd7ed558ccd), UINT64_C(0xc4ceb9fe1a85ec53) };
        __asm__("imulq %1, %0" : "+r"(x) : "m"(m[0]) : "cc");
        x ^= x >> 33;
        __asm__("imulq %1, %0" : "+r"(x) : "m"(m[1]) : "cc");
#else
        x *= UINT64_C(0xff51afd7ed558ccd);
        x ^= x >> 33;
        x *= UINT64_C(0xc4ceb9fe1a85ec53);
#endif
        x ^= x >> 33;
    }
    return x;
}
/* A filter of 8-bit fingerprints only (fp_bits == 8): no test of the width per key (the generic forms
 * below test it per key, which GCC's -O2 does not hoist out of a loop). [query] */
/* x rotated right by n: in the cells and fingerprint below it stands for x >> n (segmask < 2^46 keeps
 * the rotated-in bits out, a fingerprint takes the low 8 or 16 bits), and compiled for BMI2 it is one
 * rorx, which needs no copy of x first. */
static inline uint64_t bk_fuse_reader__rotr(uint64_t x, unsigned n) { return (x >> n) | (x << (64 - n)); }
static inline bool bk_fuse8_reader__probe(bk_fuse_reader r, uint64_t x)
{
    uint64_t c0 = bk_reader__mulhi(x, r.span);
    uint64_t c1 = (c0 + r.seglen) ^ (bk_fuse_reader__rotr(x, 18) & r.segmask);
    uint64_t c2 = (c0 + 2 * r.seglen) ^ (x & r.segmask);
    return (uint8_t)(x ^ bk_fuse_reader__rotr(x, 32) ^ r.cells[c0] ^ r.cells[c1] ^ r.cells[c2]) == 0;
}
/* The filter of no key and the remixed hash are the rare cases: one test of both per key (the OR of
 * two of the reader's fields, which a loop computes once), the common path without either. */
static inline bool bk_fuse8_reader_contains_hash(bk_fuse_reader r, uint64_t hash)
{
    if (BK_READER__UNLIKELY(r.mix_seed | r.empty))
        return !r.empty && bk_fuse8_reader__probe(r, bk_fuse_reader__x(r.mix_seed, hash));
    return bk_fuse8_reader__probe(r, hash);
}
/* A filter of 16-bit fingerprints only (fp_bits == 16). [query]
 * bk_fuse8_reader_contains_u64 and bk_fuse16_reader_contains_u64 below: the same on uint64 keys. */
static inline bool bk_fuse16_reader__probe(bk_fuse_reader r, uint64_t x)
{
    uint64_t c0 = bk_reader__mulhi(x, r.span);
    uint64_t c1 = (c0 + r.seglen) ^ (bk_fuse_reader__rotr(x, 18) & r.segmask);
    uint64_t c2 = (c0 + 2 * r.seglen) ^ (x & r.segmask);
    uint16_t v0, v1, v2;
    memcpy(&v0, r.cells + 2 * c0, 2);
    memcpy(&v1, r.cells + 2 * c1, 2);
    memcpy(&v2, r.cells + 2 * c2, 2);
    return (uint16_t)(x ^ bk_fuse_reader__rotr(x, 32) ^ v0 ^ v1 ^ v2) == 0;
}
static inline bool bk_fuse16_reader_contains_hash(bk_fuse_reader r, uint64_t hash)
{
    if (BK_READER__UNLIKELY(r.mix_seed | r.empty))
        return !r.empty && bk_fuse16_reader__probe(r, bk_fuse_reader__x(r.mix_seed, hash));
    return bk_fuse16_reader__probe(r, hash);
}
/* As bk_fuse_contains_hash / _contains_u64 / _contains (either width). [query] */
static inline bool bk_fuse_reader_contains_hash(bk_fuse_reader r, uint64_t hash)
{
    return r.fp_bits == 8 ? bk_fuse8_reader_contains_hash(r, hash) : bk_fuse16_reader_contains_hash(r, hash);
}
static inline bool bk_fuse8_reader_contains_u64(bk_fuse_reader r, uint64_t key)
{
    return bk_fuse8_reader_contains_hash(r, bk_reader_hash_u64(key, r.flip));
}
static inline bool bk_fuse16_reader_contains_u64(bk_fuse_reader r, uint64_t key)
{
    return bk_fuse16_reader_contains_hash(r, bk_reader_hash_u64(key, r.flip));
}
static inline bool bk_fuse_reader_contains_u64(bk_fuse_reader r, uint64_t key)
{
    return bk_fuse_reader_contains_hash(r, bk_reader_hash_u64(key, r.flip));
}
static inline bool bk_fuse_reader_contains(bk_fuse_reader r, const void *key, size_t len)
{
    return bk_fuse_reader_contains_hash(r, bk_reader_hash(key, len, r.seed, r.flip));
}

/* ---- cuckoo filter (one table) ---- */

typedef struct bk_cuckoo_reader {
    const uint8_t *words;  /* the table's array: bucket i at bit i * bucket_bits, little-endian */
    uint64_t buckets;      /* bucket count (at most 2^32) */
    uint64_t bucket_bits;  /* b * f */
    uint64_t lane_lo;      /* bit 0 of each of the b lanes of f bits */
    uint64_t lane_hi;      /* the top bit of each lane */
    uint64_t seed;         /* the filter's hash seed */
    uint64_t flip;         /* the seed's part of an 8-byte key's hash */
    uint64_t stash[4];     /* the victim stash when the reader was taken: 0, or fp | bucket << 32 */
    uint32_t fp_range;     /* 2^f - 1: fingerprints are 1 .. fp_range */
    uint16_t stash_used;   /* nonzero when any stash entry is taken */
    uint16_t early;        /* nonzero: test the first bucket before loading the second (large tables) */
} bk_cuckoo_reader;

/* Fill *out for f. BK_EINVAL for NULL arguments, BK_ENOTSUP for a filter no reader serves (a chain of
 * tables, concurrent mode, semi-sorted buckets, buckets wider than one load: see above). [query] */
BK_API bk_status bk_cuckoo_get_reader(const bk_cuckoo *f, bk_cuckoo_reader *out);

static inline bool bk_cuckoo_reader__stash1(uint64_t v, uint32_t fp, uint64_t i1, uint64_t i2)
{
    return v && (uint32_t)v == fp && ((v >> 32) == i1 || (v >> 32) == i2);
}
/* hf - i1 mod m, for hf, i1 < m: on x86-64 the wrap is taken from the subtraction's borrow (a sub, a
 * lea and a cmov, where compilers emit a copy and a separate compare as well) */
static inline uint64_t bk_cuckoo_reader__alt(uint64_t hf, uint64_t i1, uint64_t m)
{
#if defined(__x86_64__) && defined(__GNUC__)
    uint64_t t;
    __asm__("sub %[i], %[d]\n\t"
            "lea (%[d],%[m]), %[t]\n\t"
            "cmovb %[t], %[d]"
            : [d] "+&r"(hf), [t] "=&r"(t)
            : [i] "r"(i1), [m] "r"(m)
            : "cc");
    return hf;
#else
    return hf - i1 + (hf < i1 ? m : 0);
#endif
}
/* The query on the geometry given: bb bits a bucket, lanes lo (bit 0 of each) and hi (top bit of each),
 * fingerprints 1 .. range. With bb a multiple of 8 known at compile time a bucket starts at a byte. */
static inline bool bk_cuckoo_reader__has(bk_cuckoo_reader r, uint64_t hash, uint64_t bb, uint64_t lo, uint64_t hi,
                                         uint32_t range)
{
    /* The two multiplies by the geometry take the reader's fields (equal to range and lo): a field
     * held in a register across the caller's loop is one multiply, where a constant would be built
     * from shifts and adds (three to four instructions each). */
    (void)range;
    /* fingerprint 1 .. 2^f - 1 from the low 32 bits; bucket from the high bits (multiply-shift) */
    uint32_t fp = 1 + (uint32_t)(((uint64_t)(uint32_t)hash * r.fp_range) >> 32);
    uint64_t i1 = bk_reader__mulhi(hash, r.buckets);
    /* the alternate bucket: (H(fp) - i1) mod buckets, H(fp) the golden-ratio product mapped to the range */
    uint64_t hf = ((uint64_t)(uint32_t)(fp * UINT32_C(0x9e3779b9)) * r.buckets) >> 32;
    uint64_t i2 = bk_cuckoo_reader__alt(hf, i1, r.buckets);
    /* a bucket's first byte: i * (bb / 8) when buckets start at bytes, else bit i * bb */
    uint64_t p1 = bb % 8 ? i1 * bb : i1 * (bb / 8), p2 = bb % 8 ? i2 * bb : i2 * (bb / 8), x1, x2;
    uint64_t pat = fp * r.lane_lo;
    memcpy(&x1, r.words + (bb % 8 ? p1 >> 3 : p1), 8);
    x1 = (bb % 8 ? x1 >> (p1 & 7) : x1) ^ pat;
    /* a lane of x equal to zero: (x - lo) & ~x flags the lowest such lane, and none when there is none.
     * A large table (early): a key found in its first bucket answers before the second is loaded, so
     * out of the caches a present key costs one miss; a small one tests both without a branch. */
    if (r.early) {
        if ((x1 - lo) & ~x1 & hi) return true;
        memcpy(&x2, r.words + (bb % 8 ? p2 >> 3 : p2), 8);
        x2 = (bb % 8 ? x2 >> (p2 & 7) : x2) ^ pat;
        if ((x2 - lo) & ~x2 & hi) return true;
    } else {
        memcpy(&x2, r.words + (bb % 8 ? p2 >> 3 : p2), 8);
        x2 = (bb % 8 ? x2 >> (p2 & 7) : x2) ^ pat;
        if ((((x1 - lo) & ~x1) | ((x2 - lo) & ~x2)) & hi) return true;
    }
    return r.stash_used && (bk_cuckoo_reader__stash1(r.stash[0], fp, i1, i2) ||
                            bk_cuckoo_reader__stash1(r.stash[1], fp, i1, i2) ||
                            bk_cuckoo_reader__stash1(r.stash[2], fp, i1, i2) ||
                            bk_cuckoo_reader__stash1(r.stash[3], fp, i1, i2));
}
/* As bk_cuckoo_contains_hash / _contains_u64 / _contains. [query] */
static inline bool bk_cuckoo_reader_contains_hash(bk_cuckoo_reader r, uint64_t hash)
{
    return bk_cuckoo_reader__has(r, hash, r.bucket_bits, r.lane_lo, r.lane_hi, r.fp_range);
}
/* The same for a filter of 4-slot buckets of f-bit fingerprints, f given by the caller (the filter's
 * own: bk_cuckoo_get_info's fingerprint_bits; the defaults have b = 4). With f a constant the bucket
 * width and the lane masks fold into the instructions, as in the library's own paths for b = 4 (the
 * two multiplies by the geometry take the reader's fields, which equal those of f). [query] */
static inline bool bk_cuckoo4_reader_contains_hash(bk_cuckoo_reader r, uint32_t f, uint64_t hash)
{
    const uint64_t lo = (uint64_t)1 | (uint64_t)1 << f | (uint64_t)1 << 2 * f | (uint64_t)1 << 3 * f;
    return bk_cuckoo_reader__has(r, hash, 4 * (uint64_t)f, lo, lo << (f - 1), (uint32_t)(((uint64_t)1 << f) - 1));
}
static inline bool bk_cuckoo4_reader_contains_u64(bk_cuckoo_reader r, uint32_t f, uint64_t key)
{
    return bk_cuckoo4_reader_contains_hash(r, f, bk_reader_hash_u64(key, r.flip));
}
static inline bool bk_cuckoo_reader_contains_u64(bk_cuckoo_reader r, uint64_t key)
{
    return bk_cuckoo_reader_contains_hash(r, bk_reader_hash_u64(key, r.flip));
}
static inline bool bk_cuckoo_reader_contains(bk_cuckoo_reader r, const void *key, size_t len)
{
    return bk_cuckoo_reader_contains_hash(r, bk_reader_hash(key, len, r.seed, r.flip));
}

#ifdef __cplusplus
}
#endif
#endif /* BLOOMKIT_READER_H */
