/*
 * bloomkit: the blocked Bloom filter. Every probe of a key falls inside one block of at most one
 * cache line, so a query costs one memory access; SIMD paths set and test a whole block at once.
 *
 * Layouts (chosen at creation, stored in files):
 *   BK_BLOCKED_SPLIT256  (default) 256-bit blocks of eight 32-bit words, one bit set in each word
 *                        (k = 8 always). Fastest to insert: one AVX2 multiply, shift and OR per key,
 *                        and a block never straddles a cache line. Needs 10.53 bits/key for a real 1%
 *                        FPR (classic: 9.59, +9.8%) and 16.9 at 0.1% (classic: 14.4).
 *   BK_BLOCKED_512       512-bit blocks (one cache line), k probes anywhere in the block, k chosen
 *                        from bits per key (1..BK_BLOCKED_MAX_K): 9.92 bits/key at 1% (+3.5%) and
 *                        15.5 at 0.1%. Queries as fast as SPLIT256 (AVX-512: one permute and test of
 *                        the line); inserts cost k ORs where SPLIT256 sets its block at once.
 * Why SPLIT256 is the default: both layouts query at the same speed (one cache line per key),
 * SPLIT256 inserts faster (measurements in bench/README.md), and its space
 * stays within 10% of the classic filter at 1%. Choose BK_BLOCKED_512 when space matters more than
 * insert speed, and for targets well below 1%, where SPLIT256's fixed k = 8 costs more space.
 *
 * One 64-bit hash per key: the block is picked by multiply-shift on the whole hash (high bits
 * dominate), the in-block probes come from its low 32 bits multiplied by fixed odd constants.
 *
 * Sizing uses the exact blocked false-positive formula (Putze, Sanders, Singler 2007: a Poisson
 * mixture over block loads), not the classic one, which underestimates a blocked filter's FPR
 * (about 1.15x for 512-bit blocks and 1.5x for split blocks at 10 bits/key, far worse at 16-20).
 *
 * SIMD: a scalar path is always built; AVX2 and AVX-512 paths are chosen at run time from cpuid,
 * once per filter (a table of functions; nothing dispatches per key). Every path sets bit-identical
 * filters and gives identical answers. The environment variable BK_SIMD=scalar|avx2|avx512 (read
 * once per process, when the first filter picks its path) or bk_simd_force() caps the path of new filters
 * of every type (scalar: no instruction past baseline x86-64 either, such as BMI2 or POPCNT);
 * bk_blocked_set_simd() changes one filter's path (these controls are in the experimental tier, see
 * the end of this header). AVX-512 helps the 512 layout (one permute and test
 * per line); for SPLIT256 it runs the AVX2 code, which is already one instruction per step. Builds
 * with ThreadSanitizer pick the scalar path for AUTO (TSan models its relaxed atomic loads).
 *
 * Thread-safety: see the legend in common.h. Queries are plain (relaxed) loads and are safe
 * alongside the *_atomic inserts: a query racing the atomic insert of the same key may miss it;
 * nothing else can go wrong.
 */
#ifndef BLOOMKIT_BLOCKED_H
#define BLOOMKIT_BLOCKED_H

#include "common.h"
#include "math.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_blocked bk_blocked;

/* The numbers are stable: they are stored in files. */
typedef enum bk_blocked_layout {
    BK_BLOCKED_SPLIT256 = 0,
    BK_BLOCKED_512 = 1
} bk_blocked_layout;

#define BK_BLOCKED_MAX_K 16

typedef struct bk_blocked_options {
    size_t struct_size;   /* BK_BLOCKED_OPTIONS_INIT sets it; 0 means this header's size (common.h) */
    const bk_allocator *allocator; /* NULL: the default (malloc); see common.h */
    bk_blocked_layout layout; /* BK_BLOCKED_SPLIT256 (0) by default */
    uint64_t seed;            /* hash seed; 0 is a fine default, a secret one resists crafted keys */
} bk_blocked_options;
#define BK_BLOCKED_OPTIONS_INIT BK_OPTIONS_INIT_(bk_blocked_options)

/* ---- sizing: exact blocked formula of the layout actually used. Pure functions: [any] ---- */

/* Smallest geometry (m bits in whole blocks, k) whose exact FPR for n keys is at most p; out->fpr is
 * that exact FPR. Bytes needed: out->m / 8. BK_EINVAL for n = 0, a bad p or layout; BK_ETOOBIG. */
BK_API bk_status bk_blocked_size(uint64_t n, double p, bk_blocked_layout layout, bk_geometry *out);
/* Exact FPR of m bits (rounded down to whole blocks) holding n keys with k probes (SPLIT256: k must
 * be 8 or 0; BK_BLOCKED_512: k = 0 means the best k for this load). NaN for bad arguments. */
BK_API double bk_blocked_fpr(uint64_t m, uint64_t n, bk_blocked_layout layout, uint32_t k);
/* The most keys m bits can hold with an exact FPR at most p (k as for bk_blocked_fpr). 0 if none. */
BK_API uint64_t bk_blocked_capacity(uint64_t m, bk_blocked_layout layout, uint32_t k, double p);
/* The k that minimises the FPR of BK_BLOCKED_512 at this many bits per key (8 for SPLIT256). */
BK_API uint32_t bk_blocked_optimal_k(bk_blocked_layout layout, double bits_per_key);

/* ---- lifetime ---- */

/* Create for n keys at false-positive rate p (sized by bk_blocked_size). opts may be NULL. The code
 * path is the best the CPU has (see SIMD above).
 * Errors: BK_EINVAL (n = 0, p not in (0,1), bad layout, out NULL), BK_ETOOBIG, BK_ENOMEM. [any] */
BK_API bk_status bk_blocked_new(uint64_t n, double p, const bk_blocked_options *opts, bk_blocked **out);
/* Create with m bits (rounded up to whole blocks) and k probes (SPLIT256: 8 or 0; 512: 1..16, or 0 =
 * the best k for capacity_hint). capacity_hint is the n used by statistics (0: m ln 2 / k, the load
 * at which k is optimal; not allowed together with k = 0 for BK_BLOCKED_512). Errors as
 * bk_blocked_new, and BK_EINVAL for m = 0 or a bad k. [any] */
BK_API bk_status bk_blocked_new_mk(uint64_t m, uint32_t k, uint64_t capacity_hint,
                                   const bk_blocked_options *opts, bk_blocked **out);
/* Free; NULL is fine. [excl] */
BK_API void bk_blocked_free(bk_blocked *f);
/* A deep copy (same path), made with f's allocator. BK_EINVAL if f or out is NULL, BK_ENOMEM. [query] */
BK_API bk_status bk_blocked_clone(const bk_blocked *f, bk_blocked **out);

/* ---- insert and query ---- */

/* Insert. BK_EINVAL if f is NULL, or key is NULL with len > 0. [excl] */
BK_API bk_status bk_blocked_add(bk_blocked *f, const void *key, size_t len);
BK_API bk_status bk_blocked_add_hash(bk_blocked *f, uint64_t hash);
/* Insert with atomic 64-bit ORs and an atomic count: safe alongside each other and alongside
 * queries. A query racing the insert of the same key may miss it; nothing else can go wrong. [query] */
BK_API bk_status bk_blocked_add_atomic(bk_blocked *f, const void *key, size_t len);
BK_API bk_status bk_blocked_add_hash_atomic(bk_blocked *f, uint64_t hash);
/* Batches of atomic inserts, with the batch forms' prefetching (out of cache, each atomic insert
 * otherwise waits for its line). Errors as bk_blocked_add_many / _add_hashes. [query] */
BK_API bk_status bk_blocked_add_many_atomic(bk_blocked *f, const void *const *keys, const size_t *lens, size_t n);
BK_API bk_status bk_blocked_add_hashes_atomic(bk_blocked *f, const uint64_t *hashes, size_t n);

/* Query: true if probably present, false if certainly absent. f must not be NULL; key may be NULL
 * only when len is 0. [query] */
BK_API bool bk_blocked_contains(const bk_blocked *f, const void *key, size_t len);
BK_API bool bk_blocked_contains_hash(const bk_blocked *f, uint64_t hash);

/* uint64 keys: the same answers as the byte forms on the key's 8 little-endian bytes
 * (bk_blocked_add_u64(f, k) sets the bits of bk_blocked_add(f, &k_le, 8)), so both forms mix on one
 * filter and in files; the hash is XXH3 at the constant length 8 (bk_hash64 of those bytes), without
 * the byte form's length dispatch. Errors and thread-safety as the byte forms: add [excl], contains
 * [query] (f must not be NULL). */
BK_API bk_status bk_blocked_add_u64(bk_blocked *f, uint64_t key);
BK_API bool bk_blocked_contains_u64(const bk_blocked *f, uint64_t key);

/* Batches (common.h, "Batches"): hash the batch, prefetch every block, then probe (the fast way on
 * large filters). [excl] for adds, [query] for contains. */
BK_API bk_status bk_blocked_add_many(bk_blocked *f, const void *const *keys, const size_t *lens, size_t n);
BK_API bk_status bk_blocked_add_hashes(bk_blocked *f, const uint64_t *hashes, size_t n);
BK_API bk_status bk_blocked_contains_many(const bk_blocked *f, const void *const *keys, const size_t *lens,
                                          size_t n, uint8_t *results, size_t *hits);
BK_API bk_status bk_blocked_contains_hashes(const bk_blocked *f, const uint64_t *hashes, size_t n,
                                            uint8_t *results, size_t *hits);

/* Filling one filter on several threads without atomics (what `bloomkit build` does): the blocks are
 * cut into nparts ranges at even block numbers (two 256-bit blocks share a 64-byte line), and this
 * call adds only the hashes whose block falls in range `part`; it leaves the count alone (set it after
 * the fill through bk_filter_set_count). Calls for different parts touch disjoint lines, so they may
 * run at the same time; calls for every part over the same hashes set exactly the bits
 * bk_blocked_add_hashes sets. BK_EINVAL: f NULL, hashes NULL with n > 0, nparts 0 or part >= nparts.
 * [excl] on part `part`: calls for other parts may run meanwhile, nothing else may. */
BK_API bk_status bk_blocked_add_hashes_part(bk_blocked *f, const uint64_t *hashes, size_t n, unsigned part,
                                            unsigned nparts);

/* ---- whole-filter operations ---- */

/* Zero every bit and the count. [excl] */
BK_API void bk_blocked_clear(bk_blocked *f);
/* dst |= src (union) or dst &= src (intersection). Both must have the same layout, m, k and seed,
 * else BK_EINCOMPAT and dst is unchanged. Afterwards dst's count is the fill-based cardinality
 * estimate. [excl] on dst, [query] on src: *_atomic inserts may run on src meanwhile (src's
 * keys are those whose insert returned before the call began, and may or may not include the others). */
BK_API bk_status bk_blocked_union(bk_blocked *dst, const bk_blocked *src);
BK_API bk_status bk_blocked_intersect(bk_blocked *dst, const bk_blocked *src);
/* BK_OK if the two could be merged, else BK_EINCOMPAT (BK_EINVAL for NULL). [query] */
BK_API bk_status bk_blocked_compatible(const bk_blocked *a, const bk_blocked *b);

/* Statistics (popcount over the array: O(m)). fpr_now is the exact blocked FPR at the fill-based
 * cardinality estimate. [query] */
BK_API void bk_blocked_stats(const bk_blocked *f, bk_stats *out);

/* ---- accessors. [query] ---- */
BK_API uint64_t bk_blocked_bits(const bk_blocked *f);     /* m: blocks * block bits */
BK_API uint32_t bk_blocked_k(const bk_blocked *f);
BK_API uint64_t bk_blocked_count(const bk_blocked *f);
BK_API uint64_t bk_blocked_seed(const bk_blocked *f);
BK_API bk_blocked_layout bk_blocked_layout_of(const bk_blocked *f);
/* The bit array as bytes (little-endian 64-bit words), for comparisons and export. */
BK_API const uint8_t *bk_blocked_data(const bk_blocked *f, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* BLOOMKIT_BLOCKED_H */

/*
 * Experimental tier (SIMD controls, the struct layout of a view and header-inline SIMD code): only with
 * BK_STATIC_LINKING_ONLY defined before the first include, or through <bloomkit/experimental.h>. It may
 * change in any release, and it is what brings <immintrin.h> in: bloomkit.h alone never does.
 */
#if defined(BK_STATIC_LINKING_ONLY) && !defined(BLOOMKIT_BLOCKED_H_STATIC)
#define BLOOMKIT_BLOCKED_H_STATIC
#ifdef __cplusplus
extern "C" {
#endif

/* Code paths. AUTO: the best the CPU has (capped by BK_SIMD / bk_simd_force). */
typedef enum bk_simd {
    BK_SIMD_AUTO = 0,
    BK_SIMD_SCALAR = 1,
    BK_SIMD_AVX2 = 2,
    BK_SIMD_AVX512 = 3
} bk_simd;

/* ---- code paths ---- */

/* [any] The best path this CPU supports (never AUTO). */
BK_API bk_simd bk_simd_best(void);
/* [any] "scalar", "avx2", "avx512", "auto"; NULL for an unknown value. */
BK_API const char *bk_simd_name(bk_simd s);
/* [excl] Cap the path of filters created from now on (AUTO: undo). BK_ENOTSUP if the CPU lacks it,
 * BK_EINVAL for an unknown value. Overrides the BK_SIMD environment variable. */
BK_API bk_status bk_simd_force(bk_simd s);

/* The path this filter uses (never AUTO). [query] */
BK_API bk_simd bk_blocked_simd(const bk_blocked *f);
/* Change this filter's path (AUTO: the path a new filter would get). BK_ENOTSUP if the CPU lacks it,
 * BK_EINVAL for f NULL or an unknown value; on error the filter is unchanged. [excl] */
BK_API bk_status bk_blocked_set_simd(bk_blocked *f, bk_simd s);

/* ---- header-inline probes of pre-hashed keys (SPLIT256 only) ----
 *
 * A loop that calls the library once per key keeps only a few cache misses in flight: each call,
 * its checks and its dispatch fill the CPU's reorder window. A view holds what a probe needs (the
 * words and the block count); the static inline functions below compile into the caller's loop as a
 * handful of instructions per key, so the CPU overlaps many independent misses without any batching.
 * They set and test exactly the bits of bk_blocked_add_hash / bk_blocked_contains_hash (tested), so
 * views and library calls mix freely on one filter. Hashes are used as they are: for bytes keys pass
 * bk_hash64(key, len, bk_blocked_seed(f)).
 *
 * bk_blocked_view_add/_contains use AVX2 when the calling code is compiled with it (-mavx2 or
 * -march=...), the scalar form otherwise. The explicit _avx2 forms (x86, GCC or clang) carry a target
 * attribute: call them from a function with the same attribute, and only on a CPU that has AVX2
 * (bk_simd_best() >= BK_SIMD_AVX2).
 *
 * Views are passed by value: a copy in the caller's registers that no store can alias, so a loop
 * never reloads it. A view stays valid until the filter is freed. Inserts through a view do not update the filter's
 * count: add them with bk_blocked_note_added so statistics stay right. Thread-safety: as
 * bk_blocked_add_hash ([excl]) and bk_blocked_contains_hash ([query]).
 */
typedef struct bk_blocked_view {
    uint64_t *words;  /* blocks * 4 little-endian words; block b is words[4b .. 4b + 3] */
    uint64_t blocks;  /* number of 256-bit blocks, >= 1 */
} bk_blocked_view;

/* Fill *out for f. BK_EINVAL for NULL arguments, BK_ENOTSUP for the BK_BLOCKED_512 layout (use the
 * library calls there). [query] (the view itself may then be used as stated above) */
BK_API bk_status bk_blocked_get_view(bk_blocked *f, bk_blocked_view *out);
/* Add n to the count of keys inserted (for keys inserted through a view). [excl] */
BK_API void bk_blocked_note_added(bk_blocked *f, uint64_t n);

/* The odd multipliers of the in-block probes (part of the file format): the library's blocked engine
 * builds its salt table from this macro, so the view and the library share one definition. */
#define BK_BLOCKED__SALTS 0x97406341u, 0x15649dadu, 0x84849edbu, 0x1a56b061u, \
                          0xbf9bf163u, 0x80554a9du, 0xef3d9061u, 0x3e112a0du

/* The block of hash h: the high 64 bits of h * blocks (multiply-shift). */
static inline uint64_t *bk_blocked__view_block(bk_blocked_view v, uint64_t h)
{
#if defined(__BMI2__) && defined(__x86_64__) && defined(__GNUC__)
    /* mulx: h stays where it is (mul takes it in rax and overwrites it, so a loop copies it first) */
    uint64_t lo, hi;
    __asm__("mulx %3, %0, %1" : "=r"(lo), "=r"(hi) : "d"(h), "rm"(v.blocks));
    (void)lo;
    return v.words + (hi << 2);
#elif defined(__SIZEOF_INT128__)
    __extension__ typedef unsigned __int128 bk__view_u128;
    return v.words + ((uint64_t)(((bk__view_u128)h * v.blocks) >> 64) << 2);
#else
    uint64_t a = h >> 32, b = h & 0xffffffffu, c = v.blocks >> 32, d = v.blocks & 0xffffffffu;
    uint64_t mid = a * d + ((b * d) >> 32), mid2 = b * c + (mid & 0xffffffffu);
    return v.words + ((a * c + (mid >> 32) + (mid2 >> 32)) << 2);
#endif
}

/* 64-bit word j of a block: bit (x * s0) >> 27 of its low half, (x * s1) >> 27 of its high half. */
static inline uint64_t bk_blocked__view_word(uint32_t x, uint32_t s0, uint32_t s1)
{
    return ((uint64_t)1 << ((uint32_t)(x * s0) >> 27)) | ((uint64_t)1 << (32 + ((uint32_t)(x * s1) >> 27)));
}

static inline void bk_blocked_view_add_scalar(bk_blocked_view v, uint64_t h)
{
    static const uint32_t s[8] = { BK_BLOCKED__SALTS };
    uint64_t *b = bk_blocked__view_block(v, h);
    uint32_t x = (uint32_t)h;
    b[0] |= bk_blocked__view_word(x, s[0], s[1]);
    b[1] |= bk_blocked__view_word(x, s[2], s[3]);
    b[2] |= bk_blocked__view_word(x, s[4], s[5]);
    b[3] |= bk_blocked__view_word(x, s[6], s[7]);
}

static inline bool bk_blocked_view_contains_scalar(bk_blocked_view v, uint64_t h)
{
    static const uint32_t s[8] = { BK_BLOCKED__SALTS };
    const uint64_t *b = bk_blocked__view_block(v, h);
    uint32_t x = (uint32_t)h;
#if defined(__GNUC__)
    /* relaxed atomic loads (plain loads on mainstream targets): defined alongside *_atomic inserts */
#  define BK_BLOCKED__LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#else
#  define BK_BLOCKED__LOAD(p) (*(p))
#endif
    uint64_t miss = (bk_blocked__view_word(x, s[0], s[1]) & ~BK_BLOCKED__LOAD(&b[0])) |
                    (bk_blocked__view_word(x, s[2], s[3]) & ~BK_BLOCKED__LOAD(&b[1])) |
                    (bk_blocked__view_word(x, s[4], s[5]) & ~BK_BLOCKED__LOAD(&b[2])) |
                    (bk_blocked__view_word(x, s[6], s[7]) & ~BK_BLOCKED__LOAD(&b[3]));
#undef BK_BLOCKED__LOAD
    return miss == 0;
}

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#  include <immintrin.h>
#  define BK_BLOCKED_VIEW_HAVE_AVX2 1
/* One bit in each 32-bit lane i: (x * salt_i) >> 27. */
__attribute__((target("avx2"))) static inline __m256i bk_blocked__view_mask_avx2(uint32_t x)
{
    static const uint32_t s[8] = { BK_BLOCKED__SALTS };
    const __m256i salt = _mm256_loadu_si256((const __m256i *)(const void *)s);
    __m256i p = _mm256_srli_epi32(_mm256_mullo_epi32(_mm256_set1_epi32((int)x), salt), 27);
    return _mm256_sllv_epi32(_mm256_set1_epi32(1), p);
}
__attribute__((target("avx2"))) static inline void bk_blocked_view_add_avx2(bk_blocked_view v, uint64_t h)
{
    __m256i *b = (__m256i *)(void *)bk_blocked__view_block(v, h);
    _mm256_storeu_si256(b, _mm256_or_si256(_mm256_loadu_si256(b), bk_blocked__view_mask_avx2((uint32_t)h)));
}
__attribute__((target("avx2"))) static inline bool bk_blocked_view_contains_avx2(bk_blocked_view v, uint64_t h)
{
    const __m256i *b = (const __m256i *)(const void *)bk_blocked__view_block(v, h);
    return _mm256_testc_si256(_mm256_loadu_si256(b), bk_blocked__view_mask_avx2((uint32_t)h)) != 0;
}
#endif

/* Insert / query one pre-hashed key through a view (AVX2 when the caller is compiled with it). */
static inline void bk_blocked_view_add(bk_blocked_view v, uint64_t h)
{
#if defined(__AVX2__) && defined(BK_BLOCKED_VIEW_HAVE_AVX2)
    bk_blocked_view_add_avx2(v, h);
#else
    bk_blocked_view_add_scalar(v, h);
#endif
}
static inline bool bk_blocked_view_contains(bk_blocked_view v, uint64_t h)
{
#if defined(__AVX2__) && defined(BK_BLOCKED_VIEW_HAVE_AVX2)
    return bk_blocked_view_contains_avx2(v, h);
#else
    return bk_blocked_view_contains_scalar(v, h);
#endif
}

#ifdef __cplusplus
}
#endif
#endif /* BK_STATIC_LINKING_ONLY */
