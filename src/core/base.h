/* The base every library source stands on: compiler macros, the byte-order rule, allocation,
 * hashing, range mapping, the classic probe step, striped counters, overflow-safe sizes and
 * little-endian fields. Not installed. */
#ifndef BK_BASE_H
#define BK_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bloomkit/common.h"

/* Byte order: bloomkit builds on little-endian hosts only. Saved files are little-endian
 * (docs/FORMAT.md), and the library maps them and uses their arrays in place, so every array and
 * field is read and written in host order without conversion. This is the one place that says so. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#  error "bloomkit builds on little-endian hosts only (its files are little-endian and mapped in place)"
#endif

#if defined(__GNUC__)
#  define BK_LIKELY(x) __builtin_expect(!!(x), 1)
#  define BK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#  define BK_INLINE static inline __attribute__((always_inline))
#  define BK_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#  define BK_PREFETCH_W(p) __builtin_prefetch((p), 1, 3)
#  define BK_HIDDEN __attribute__((visibility("hidden")))
#else
#  define BK_LIKELY(x) (x)
#  define BK_UNLIKELY(x) (x)
#  define BK_INLINE static inline
#  define BK_PREFETCH(p) ((void)(p))
#  define BK_PREFETCH_W(p) ((void)(p))
#  define BK_HIDDEN
#endif

/* ---- allocation: each object allocates and frees through its own bk_allocator ----
 * bk__allocator gives the allocator an object keeps (a pointer, never NULL): the one its options or
 * load call name, else the default (malloc, or what bk_set_allocator installed). The caller's
 * allocator must stay valid until every object made with it is freed (common.h). The helpers take
 * that pointer; NULL means the default, for the few allocations that belong to no object. */
BK_HIDDEN const bk_allocator *bk__allocator(const bk_allocator *user);
BK_HIDDEN void *bk__malloc(const bk_allocator *a, size_t size);
BK_HIDDEN void *bk__calloc(const bk_allocator *a, size_t count, size_t size);
BK_HIDDEN void bk__free(const bk_allocator *a, void *p);
/* Set bits in w[0..n), read with relaxed loads (other threads may be setting bits meanwhile). Counts
 * with bk__popcount64 (core/simd.h): the POPCNT instruction when bk__cpu_usable() has it, else shifts
 * and masks (the portable build's __builtin_popcountll is a libgcc call, slower over a large filter). */
BK_HIDDEN uint64_t bk__popcount_words(const uint64_t *w, uint64_t n);

/* ---- options structs (the struct_size rule of common.h) ----
 * Copy the caller's options into *dst, the library's own struct of dst_size bytes whose first member
 * is the size_t struct_size: src NULL or a zeroed struct gives all zeros (every type's defaults);
 * struct_size 0 means dst_size; a smaller (older) struct fills its prefix and leaves the rest zero; a
 * larger (newer) one is accepted only when every byte past dst_size is zero, else BK_EINVAL. */
BK_HIDDEN bk_status bk__options_read(void *dst, size_t dst_size, const void *src);

/* Zeroed, 64-byte aligned; free with bk__free_aligned. Arrays of 2 MiB or more are advised for
 * transparent huge pages and, when the object's allocator is the default one, aligned to 2 MiB (common.c). The byte below
 * the returned pointer holds the distance back to the allocator's block (1 to 64); 0 there means the
 * block's address is stored 16 bytes below instead (2 MiB alignments, also fuse.c's scratch). */
BK_HIDDEN void *bk__calloc_aligned(const bk_allocator *a, size_t size);
/* Whether an array of `size` bytes gets huge-page advice (>= 2 MiB, and $BK_THP, read once per process, is not "0"), and the
 * advice itself on the 2 MiB-aligned part of [p, p + size). */
BK_HIDDEN bool bk__thp_wanted(size_t size);
BK_HIDDEN void bk__thp_advise(void *p, size_t size);
BK_HIDDEN void bk__free_aligned(const bk_allocator *a, void *p);
/* A filter struct of `size` zeroed bytes and, when with_array, its zeroed array of `bytes` bytes
 * (bk__calloc_aligned; free with bk__free_aligned): the first step of every bit-array filter's
 * construction (classic, blocked, counting). A size of 0 or past BK_MAX_FILTER_BYTES gives
 * BK_ETOOBIG, a failed allocation BK_ENOMEM (nothing is left allocated); *array is NULL without one. */
BK_HIDDEN void *bk__new_with_array(const bk_allocator *a, size_t size, uint64_t bytes, bool with_array,
                                   uint64_t **array, bk_status *status);
/* Zeroed, 64-byte aligned, for a filter's own array: as bk__calloc_aligned, except that an array of at
 * most BK__LINES_PLAIN_MAX bytes, a multiple of 64, whose allocator block comes 64-byte aligned as it
 * is (jemalloc's size classes that are multiples of 64 do) is used as it is, without the line of
 * overhead (a small filter's 128-byte array takes a 128-byte block instead of 192). *plain says which
 * kind it is; free with bk__free_lines(a, p, *plain). */
#define BK__LINES_PLAIN_MAX ((size_t)4096)
BK_HIDDEN void *bk__calloc_lines(const bk_allocator *a, size_t size, bool *plain);
BK_HIDDEN void bk__free_lines(const bk_allocator *a, void *p, bool plain);

/* ---- hashing ----
 * Every key is hashed once with XXH3-64 and the filter's seed. bk__hash_u64 is XXH3-64 of the key's 8
 * little-endian bytes at the constant length 8: the same value as XXH3_64bits_withSeed(&key, 8, seed)
 * in about 12 instructions (rotate, xor, two multiplies, shifts), where the run-time-length entry point
 * costs a call and its length dispatch (35 instructions for 8 bytes). bk__hash dispatches short keys
 * (len <= 16, most keys of a Bloom filter: integers, ids, short strings) inline to XXH3's fixed-length
 * forms, and 8-byte keys to bk__hash_u64; longer keys take the library call. Same values everywhere:
 * the hash is part of the file format. */
BK_INLINE uint64_t bk__hash_u64(uint64_t key, uint64_t seed)
{
    return XXH3_len_4to8_64b((const xxh_u8 *)&key, 8, XXH3_kSecret, seed);
}

/* The same hash in two steps, for the hot uint64 calls: the part that depends only on the seed
 * (XXH3's "bitflip" for 8-byte inputs), computed once when a filter is made and kept in it, then the
 * key's part (XXH3's rrmxmx mix of the swapped halves). bk__hash_u64_keyed(k, bk__hash_u64_flip(s)) ==
 * bk__hash_u64(k, s) (tests/test_u64.c). */
BK_INLINE uint64_t bk__hash_u64_flip(uint64_t seed)
{
    seed ^= (uint64_t)__builtin_bswap32((uint32_t)seed) << 32;
    return (XXH_readLE64(XXH3_kSecret + 8) ^ XXH_readLE64(XXH3_kSecret + 16)) - seed;
}
BK_INLINE uint64_t bk__hash_u64_keyed(uint64_t key, uint64_t flip)
{
    uint64_t h = ((key >> 32) | (key << 32)) ^ flip;
    h ^= ((h << 49) | (h >> 15)) ^ ((h << 24) | (h >> 40));
    h *= UINT64_C(0x9FB21C651E98DF25);
    h ^= (h >> 35) + 8;
    h *= UINT64_C(0x9FB21C651E98DF25);
    return h ^ (h >> 28);
}
/* The same hash with the seed's whole part of the first mixing step folded into one constant, for the
 * filters that keep it (blocked, fuse, cuckoo): rotations distribute over xor, so the first step
 * h ^ rotl(h, 49) ^ rotl(h, 24) of h = rotl(key, 32) ^ flip is rotl(key, 32) ^ rotl(key, 17) ^
 * rotl(key, 56) ^ fold, fold = flip ^ rotl(flip, 49) ^ rotl(flip, 24). The key's three rotations are
 * independent of each other, so the step takes three operations in a row (rotate, xor, xor) where the
 * keyed form takes five: two cycles less from the key to the block's address, the same instruction
 * count. bk__hash_u64_folded(k, bk__hash_u64_fold(bk__hash_u64_flip(s))) == bk__hash_u64(k, s)
 * (tests/test_u64.c). */
BK_INLINE uint64_t bk__rotl64(uint64_t x, unsigned r) { return (x << r) | (x >> (64 - r)); }
BK_INLINE uint64_t bk__hash_u64_fold(uint64_t flip) { return flip ^ bk__rotl64(flip, 49) ^ bk__rotl64(flip, 24); }
BK_INLINE uint64_t bk__hash_u64_folded(uint64_t key, uint64_t fold)
{
    uint64_t h = (bk__rotl64(key, 32) ^ bk__rotl64(key, 17)) ^ (bk__rotl64(key, 56) ^ fold);
    h *= UINT64_C(0x9FB21C651E98DF25);
    h ^= (h >> 35) + 8;
    h *= UINT64_C(0x9FB21C651E98DF25);
    return h ^ (h >> 28);
}
/* bk__hash_u64_folded for the one-key calls (no loop around them to keep the multiplier in a register):
 * on x86-64 each multiply reads the multiplier from memory rather than after a 10-byte move of it into a
 * register first, one instruction fewer per call; the first step as two independent halves. Same value
 * (tests/test_u64.c). */
BK_INLINE uint64_t bk__hash_u64_folded1(uint64_t key, uint64_t fold)
{
#if defined(__x86_64__) && defined(__GNUC__)
    static const uint64_t mx = UINT64_C(0x9FB21C651E98DF25);
    /* the two halves opaque to GCC, which would otherwise chain the four terms (four xors in a row) */
    uint64_t a = bk__rotl64(key, 32) ^ bk__rotl64(key, 17), b = bk__rotl64(key, 56) ^ fold;
    __asm__("" : "+r"(a), "+r"(b));
    uint64_t h = a ^ b;
    __asm__("imulq %1, %0" : "+r"(h) : "m"(mx) : "cc");
    h ^= (h >> 35) + 8;
    __asm__("imulq %1, %0" : "+r"(h) : "m"(mx) : "cc");
    return h ^ (h >> 28);
#else
    return bk__hash_u64_folded(key, fold);
#endif
}
BK_INLINE uint64_t bk__hash(const void *key, size_t len, uint64_t seed)
{
    if (BK_LIKELY(len == 8)) {
        uint64_t k;
        memcpy(&k, key, 8);
        return bk__hash_u64(k, seed);
    }
    if (len <= 16) return XXH3_len_0to16_64b((const xxh_u8 *)key, len, XXH3_kSecret, seed);
    return XXH3_64bits_withSeed(key, len, seed);
}

/* ---- the batch helper of the byte-key batch forms (*_many) ----
 * Every *_many call hashes its keys a chunk at a time into a stack array and hands each chunk to the
 * type's *_hashes form (which prefetches and probes), so hashing stays out of the probe loop and no
 * call allocates. bk__keys_valid is the one check of a batch of byte keys (arrays present when n > 0,
 * a NULL key only with length 0); bk__hash_chunk hashes keys [i, min(i + cap, n)) into h[0..] and
 * returns how many it hashed:
 *     for (size_t i = 0, c = 0; i < n; i += c) {
 *         c = bk__hash_chunk(h, CHUNK, keys, lens, i, n, seed);   (uint64_t h[CHUNK])
 *         ... the *_hashes form on h[0..c), results + i ...
 *     } */
BK_INLINE bool bk__keys_valid(const void *const *keys, const size_t *lens, size_t n)
{
    if (n && (!keys || !lens)) return false;
    for (size_t j = 0; j < n; j++)
        if (!keys[j] && lens[j]) return false;
    return true;
}
BK_INLINE size_t bk__hash_chunk(uint64_t *h, size_t cap, const void *const *keys, const size_t *lens, size_t i,
                                size_t n, uint64_t seed)
{
    size_t c = n - i < cap ? n - i : cap;
    for (size_t j = 0; j < c; j++) h[j] = bk__hash(keys[i + j], lens[i + j], seed);
    return c;
}

/* The two ends of a batch call (common.h, "Batches"): a refused batch zeroes its count and returns
 * BK_EINVAL; a finished one stores its count (hits or done) when asked and returns BK_OK. */
BK_INLINE bk_status bk__batch_refused(size_t *count)
{
    if (count) *count = 0;
    return BK_EINVAL;
}
BK_INLINE bk_status bk__batch_done(size_t *count, size_t c)
{
    if (count) *count = c;
    return BK_OK;
}

/* The bytes form of a batch whose hashed form needs nothing else: keys hashed BK__HCHUNK at a time,
 * each chunk handed to `query` (with its slice of results; the sum of what it returns, keys found)
 * or to `add`. The types pass a static adapter, which the compiler inlines here. bk__query_by_chunks
 * is the loop; bk__contains_many and bk__add_many are whole *_many calls (the keys checked, the
 * batch's ends) once the caller has checked its filter. */
#define BK__HCHUNK 256
typedef size_t (*bk__chunk_query)(const void *f, const uint64_t *h, size_t n, uint8_t *results);
typedef bk_status (*bk__chunk_add)(void *f, const uint64_t *h, size_t n);
BK_INLINE size_t bk__query_by_chunks(const void *f, uint64_t seed, const void *const *keys, const size_t *lens,
                                     size_t n, uint8_t *results, bk__chunk_query query)
{
    uint64_t h[BK__HCHUNK];
    size_t found = 0;
    for (size_t i = 0, c = 0; i < n; i += c) {
        c = bk__hash_chunk(h, BK__HCHUNK, keys, lens, i, n, seed);
        found += query(f, h, c, results ? results + i : NULL);
    }
    return found;
}
BK_INLINE bk_status bk__contains_many(const void *f, uint64_t seed, const void *const *keys, const size_t *lens,
                                      size_t n, uint8_t *results, size_t *hits, bk__chunk_query query)
{
    if (!bk__keys_valid(keys, lens, n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, bk__query_by_chunks(f, seed, keys, lens, n, results, query));
}
BK_INLINE bk_status bk__add_many(void *f, uint64_t seed, const void *const *keys, const size_t *lens, size_t n,
                                 bk__chunk_add add)
{
    if (!bk__keys_valid(keys, lens, n)) return BK_EINVAL;
    uint64_t h[BK__HCHUNK];
    for (size_t i = 0, c = 0; i < n; i += c) {
        c = bk__hash_chunk(h, BK__HCHUNK, keys, lens, i, n, seed);
        add(f, h, c);
    }
    return BK_OK;
}

/* A union (d |= w) or an intersection (d &= w) of two bit arrays of n words: the set operations of
 * the bit-array filters (classic, blocked). w is read with relaxed atomic loads (plain loads on every
 * mainstream target): the source of a union is [query], so *_atomic inserts may be OR-ing it meanwhile. */
BK_INLINE void bk__combine_words(uint64_t *d, const uint64_t *w, uint64_t n, bool is_union)
{
    if (is_union)
        for (uint64_t i = 0; i < n; i++) d[i] |= __atomic_load_n(&w[i], __ATOMIC_RELAXED);
    else
        for (uint64_t i = 0; i < n; i++) d[i] &= __atomic_load_n(&w[i], __ATOMIC_RELAXED);
}

/* Copy of n words that *_atomic inserts may be OR-ing meanwhile ([query] callers such as clone):
 * relaxed atomic loads, plain loads on every mainstream target, keep the race defined. */
BK_INLINE void bk__copy_words_relaxed(uint64_t *dst, const uint64_t *src, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

/*
 * Inserted-key counts of atomic inserts into filters in memory. One shared counter would be one
 * cache line that every insert of every thread writes: with two threads inserting, the line moves
 * between cores on nearly every insert and two threads insert slower than one. Instead each thread
 * adds to one of BK__STRIPES counters, 64 bytes apart (never two in one cache line), chosen by its
 * stack address: thread stacks are megabytes apart, so threads land on different stripes (two share
 * one with probability 1/BK__STRIPES, which only costs speed). The count is the owner's plain
 * counter plus the sum of the stripes; a filter in a shared file mapping keeps its single counter
 * in the file (other processes update it) and does not use stripes. The stripes (1 KiB) are
 * allocated by a filter's first atomic insert, so filters that never get one (most: the Redis
 * module's, every single-threaded user's) do not carry them.
 */
#define BK__STRIPES 16
typedef struct bk__stripes {
    uint64_t v[BK__STRIPES * 8];
} bk__stripes;

/* *slot, allocating it if still NULL (once per filter; racing first inserts keep one). NULL when the
 * allocation fails: the caller then counts in its shared counter. */
BK_HIDDEN bk__stripes *bk__stripes_get(const bk_allocator *a, bk__stripes **slot);

/* Adds n to the count of an atomic insert: to this thread's stripe, else (no stripes) to *shared. */
BK_INLINE void bk__count_atomic(const bk_allocator *a, bk__stripes **slot, uint64_t *shared, uint64_t n)
{
    bk__stripes *s = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (BK_UNLIKELY(!s) && !(s = bk__stripes_get(a, slot))) {
        __atomic_fetch_add(shared, n, __ATOMIC_RELAXED);
        return;
    }
    uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0) >> 16;
    unsigned i = (unsigned)((sp * UINT64_C(0x9e3779b97f4a7c15)) >> 60) & (BK__STRIPES - 1);
    __atomic_fetch_add(&s->v[i * 8], n, __ATOMIC_RELAXED);
}
BK_INLINE uint64_t bk__stripes_sum(bk__stripes *const *slot)
{
    const bk__stripes *s = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    uint64_t t = 0;
    for (unsigned i = 0; s && i < BK__STRIPES; i++) t += __atomic_load_n(&s->v[i * 8], __ATOMIC_RELAXED);
    return t;
}
BK_INLINE void bk__stripes_clear(bk__stripes *const *slot)
{
    bk__stripes *s = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; s && i < BK__STRIPES; i++) __atomic_store_n(&s->v[i * 8], 0, __ATOMIC_RELAXED);
}

/* Element i of the splitmix64 stream started at z (i >= 1): the seeds of builds' later attempts and
 * layers, and the sketches' random numbers. */
BK_INLINE uint64_t bk__splitmix64_at(uint64_t z, uint64_t i)
{
    z += i * UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* A second, independent-looking 64-bit value from a hash (murmur3's finalizer). */
BK_INLINE uint64_t bk__remix(uint64_t h)
{
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return h;
}

__extension__ typedef unsigned __int128 bk__u128;

/* Map a uniform 64-bit value to [0, range) by multiply-shift (uses the high bits of x). */
BK_INLINE uint64_t bk__range64(uint64_t x, uint64_t range)
{
    return (uint64_t)(((bk__u128)x * range) >> 64);
}
/* The same for functions built for BMI2 (target attribute): mulx leaves x where it is and takes any
 * register, where compilers emit mul, which needs x in rax and writes rdx (a copy or two per call). */
#if defined(__x86_64__) && defined(__GNUC__)
BK_INLINE uint64_t bk__range64_mulx(uint64_t x, uint64_t range)
{
    uint64_t lo, hi;
    __asm__("mulx %3, %0, %1" : "=r"(lo), "=r"(hi) : "d"(x), "rm"(range));
    (void)lo;
    return hi;
}
#else
#  define bk__range64_mulx bk__range64
#endif

/*
 * Probe scheme of the Bloom family (classic, counting, scalable's classic layers), docs/FORMAT.md 6.1:
 *   x = h, y = remix(h), w = h * BK__PROBE_MIX; probe i uses x, then x += y, y += i * w.
 * Multiply-shift keeps the HIGH bits of x * m, so the step must move high bits: a plain y += i only
 * moves low bits and a small filter's probes correlate (n = 100 at 0.1%: 0.124%). A constant large
 * step cancels in the difference of two keys' probe sequences, leaving pairs of keys that collide on
 * every probe (a partitioned filter of 100 keys at 0.1%: 1.36x its formula); a step that differs
 * between keys removes both (1.00x, tests/test_probes.c).
 */
#define BK__PROBE_MIX UINT64_C(0x9e3779b97f4a7c15)
BK_INLINE uint64_t bk__probe_step(uint64_t h) { return h * BK__PROBE_MIX; }

/* The classic probe iterator, the one definition of the sequence above (classic and partitioned
 * filters, counting filters, scalable's classic layers): p = bk__probe_start(h); probe t = 0, 1, ...
 * is bk__probe_at(&p, range), and bk__probe_next(&p, t) moves from probe t to probe t + 1. Inline
 * and by value, so a loop keeps x, y and w in registers (the t * w product strength-reduces to an
 * add). */
typedef struct bk__probe {
    uint64_t x, y, w;
} bk__probe;
BK_INLINE bk__probe bk__probe_start(uint64_t h)
{
    bk__probe p = { h, bk__remix(h), bk__probe_step(h) };
    return p;
}
BK_INLINE uint64_t bk__probe_at(const bk__probe *p, uint64_t range) { return bk__range64(p->x, range); }
BK_INLINE void bk__probe_next(bk__probe *p, uint32_t t)
{
    p->x += p->y;
    p->y += t * p->w;
}

/*
 * The fill past which a filter's statistics say "saturated": the fill expected at its designed
 * capacity (at most 60%: a capacity hint far beyond the geometry's own must not disable the check)
 * plus three standard deviations of the fill of m cells. At exactly
 * the designed load the fill sits at the expected value, either side, so without the margin a
 * correctly sized filter would be flagged about half the time from noise. The binomial deviation
 * sqrt(q (1 - q) / m) is larger than a Bloom filter's real one, so the margin is conservative; past
 * capacity the count flags the filter anyway, and the fill alone (after a union) one a few percent
 * past its load. Defined in math.c. */
BK_HIDDEN double bk__saturation_fill(double expected, double m);

/* Zeroes *out and fills what every bit-array filter's statistics say alike: type, k, capacity,
 * count, bits, memory_bytes, bits per key (memory bits per key counted, one when none is) and
 * the fill ratio (set of bits cells set). Defined in math.c. */
BK_HIDDEN void bk__stats_bits(bk_stats *out, bk_type type, uint32_t k, uint64_t capacity, uint64_t count,
                              uint64_t bits, uint64_t memory_bytes, uint64_t set);

/* The count of a union (or intersection) of two bit-setting filters: the distinct keys estimated
 * from the combined fill, but never more than the inputs' counts allow (a union holds at most a + b
 * keys, an intersection at most min(a, b)). Without the bound the estimate's noise could put two
 * halves merged at exactly the designed load past the capacity, where the same keys added to one
 * filter are not; the saturation rule is then the same for both. */
BK_INLINE uint64_t bk__combined_count(double estimate, uint64_t a, uint64_t b, bool is_union)
{
    uint64_t bound = is_union ? (a + b < a ? UINT64_MAX : a + b) : (a < b ? a : b);
    double e = estimate > 0 ? estimate + 0.5 : 0;
    return e >= (double)bound ? bound : (uint64_t)e;
}

/* ---- overflow-safe size arithmetic ---- */
BK_INLINE bool bk__mul_overflow(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

/* Bytes for `bits` bits rounded up to whole 64-byte lines; 0 on overflow or above the maximum. */
BK_INLINE uint64_t bk__bits_to_bytes64(uint64_t bits)
{
    if (bits > BK_MAX_FILTER_BYTES * 8) return 0;
    return ((bits + 511) / 512) * 64;
}

/* Little-endian fields at any alignment (the host is little-endian: one unaligned move each). */
BK_INLINE void bk__put_le16(uint8_t *b, uint16_t v) { memcpy(b, &v, 2); }
BK_INLINE void bk__put_le32(uint8_t *b, uint32_t v) { memcpy(b, &v, 4); }
BK_INLINE void bk__put_le64(uint8_t *b, uint64_t v) { memcpy(b, &v, 8); }
BK_INLINE uint16_t bk__get_le16(const uint8_t *b) { uint16_t v; memcpy(&v, b, 2); return v; }
BK_INLINE uint32_t bk__get_le32(const uint8_t *b) { uint32_t v; memcpy(&v, b, 4); return v; }
BK_INLINE uint64_t bk__get_le64(const uint8_t *b) { uint64_t v; memcpy(&v, b, 8); return v; }

#endif
