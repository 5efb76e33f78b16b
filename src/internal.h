/* Internal helpers shared by the filter sources. Not installed. */
#ifndef BK_INTERNAL_H
#define BK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bloomkit/common.h"

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

/* ---- allocation (through the user's bk_allocator) ---- */
BK_HIDDEN void *bk__malloc(size_t size);
BK_HIDDEN void *bk__calloc(size_t count, size_t size);
BK_HIDDEN void bk__free(void *p);
/* Set bits in w[0..n), read with relaxed loads (other threads may be setting bits meanwhile). Uses
 * the POPCNT instruction when the CPU has it: the portable build's __builtin_popcountll is a libgcc
 * call, several times slower over a large filter. */
BK_HIDDEN uint64_t bk__popcount_words(const uint64_t *w, uint64_t n);

/* Zeroed, 64-byte aligned; free with bk__free_aligned. */
BK_HIDDEN void *bk__calloc_aligned(size_t size);
BK_HIDDEN void bk__free_aligned(void *p);

/* ---- hashing ---- */
BK_INLINE uint64_t bk__hash(const void *key, size_t len, uint64_t seed)
{
    return XXH3_64bits_withSeed(key, len, seed);
}

/* A second, independent-looking 64-bit value from a hash (murmur3's finalizer). */
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
BK_HIDDEN bk__stripes *bk__stripes_get(bk__stripes **slot);

/* Adds n to the count of an atomic insert: to this thread's stripe, else (no stripes) to *shared. */
BK_INLINE void bk__count_atomic(bk__stripes **slot, uint64_t *shared, uint64_t n)
{
    bk__stripes *s = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (BK_UNLIKELY(!s) && !(s = bk__stripes_get(slot))) {
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
BK_INLINE uint32_t bk__range32(uint32_t x, uint32_t range)
{
    return (uint32_t)(((uint64_t)x * range) >> 32);
}

/*
 * Probe scheme of the Bloom family (classic, counting, scalable), docs/FORMAT.md 6.1:
 *   x = h, y = remix(h), w = step(h); probe i uses x, then x += y, y += i * w.
 * Multiply-shift keeps the HIGH bits of x * m. The legacy scheme (files without BK_FILE_FLAG_PROBES2)
 * has w = 1: a small i only moves low bits, so a small filter's probes correlate and its FPR exceeds
 * the formula (n = 100 at 0.1%: 0.124%). Scheme 2 has w = h * 0x9e3779b97f4a7c15, which moves the
 * high bits and differs between keys: a constant w cancels in the difference of two keys' probe
 * sequences, leaving plain double hashing's pairs of keys that collide on every probe (a partitioned
 * filter of 100 keys at 0.1% measured 1.36x its formula with a constant w, 1.00x with this one).
 * Filters store `mix` (0: legacy, else BK__PROBE_MIX) and compute w once per key, without a branch.
 */
#define BK__PROBE_MIX_LEGACY UINT64_C(0)
#define BK__PROBE_MIX UINT64_C(0x9e3779b97f4a7c15)
BK_INLINE uint64_t bk__probe_step(uint64_t h, uint64_t mix) { return h * mix + (mix == 0); }
BK_INLINE uint64_t bk__probe_mix_of_flags(uint32_t file_flags)
{
    return (file_flags & 0x0002u) ? BK__PROBE_MIX : BK__PROBE_MIX_LEGACY; /* BK_FILE_FLAG_PROBES2 */
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

/* ---- serialization: writer and reader of a type's body (docs/FORMAT.md) ---- */
typedef struct bk_writer {
    /* Receives the bytes in order. NULL: only count them (size queries). */
    bk_status (*sink)(void *ctx, const void *data, size_t len);
    void *ctx;
    uint64_t offset; /* bytes of body written so far */
    uint32_t flags;  /* header flags the body needs (BK_FILE_FLAG_PROBES2), OR-ed in by encoders */
} bk_writer;

BK_HIDDEN bk_status bk__w_bytes(bk_writer *w, const void *data, size_t len);
BK_HIDDEN bk_status bk__w_u32(bk_writer *w, uint32_t v);
BK_HIDDEN bk_status bk__w_u64(bk_writer *w, uint64_t v);
BK_HIDDEN bk_status bk__w_f64(bk_writer *w, double v);
/* Zero bytes up to the next multiple of `align` (a power of two) of the body offset. */
BK_HIDDEN bk_status bk__w_align(bk_writer *w, size_t align);
/* Arrays of 64-bit words are stored little-endian; on little-endian hosts this is one copy. */
BK_HIDDEN bk_status bk__w_u64_array(bk_writer *w, const uint64_t *v, size_t count);
/* The reverse, for decoders that copy: count little-endian words at src into dst (one memcpy on
 * little-endian hosts). */
BK_HIDDEN void bk__le64_copy(uint64_t *dst, const uint8_t *src, size_t count);

typedef struct bk_reader {
    const uint8_t *base; /* start of the body; its address is 64-byte aligned when borrowing */
    size_t len;
    size_t off;
    bool borrow;         /* decoded filters point into base instead of copying (mmap) */
    bool writable;       /* borrowed memory may be written (shared writable mapping) */
    uint64_t seed;       /* the hash seed, from the container header */
    uint32_t flags;      /* the container header's flags (BK_FILE_FLAG_PROBES2 picks the probe scheme) */
} bk_reader;

BK_HIDDEN bk_status bk__r_bytes(bk_reader *r, void *dst, size_t len);
BK_HIDDEN bk_status bk__r_u32(bk_reader *r, uint32_t *v);
BK_HIDDEN bk_status bk__r_u64(bk_reader *r, uint64_t *v);
BK_HIDDEN bk_status bk__r_f64(bk_reader *r, double *v);
BK_HIDDEN bk_status bk__r_align(bk_reader *r, size_t align);
/* A pointer to the next len bytes (bounds-checked), advancing past them. */
BK_HIDDEN bk_status bk__r_take(bk_reader *r, size_t len, const uint8_t **p);

/*
 * Per-type operations, for the generic handle (bk_filter) and the container format. One table per
 * type, defined in the type's own source file. A NULL entry means "not supported" (BK_ENOTSUP).
 * The generic layer dispatches once per call or per batch, never per probe.
 */
typedef struct bk_vtable {
    bk_type type;
    bk_status (*add_hash)(void *f, uint64_t h);
    bool (*contains_hash)(const void *f, uint64_t h);
    bk_status (*remove_hash)(void *f, uint64_t h);
    bk_status (*add_hashes)(void *f, const uint64_t *h, size_t n);
    size_t (*contains_hashes)(const void *f, const uint64_t *h, size_t n, uint8_t *results);
    uint64_t (*seed)(const void *f);
    void (*stats)(const void *f, bk_stats *out);
    bk_status (*merge)(void *dst, const void *src); /* union */
    void (*clear)(void *f);
    /* Body encoding: the type's parameters and arrays (arrays at 64-byte aligned body offsets). */
    bk_status (*encode)(const void *f, bk_writer *w);
    bk_status (*decode)(bk_reader *r, void **out); /* seed from r->seed */
    void (*destroy)(void *f);
    /* Atomic insert (the type's *_add_hash_atomic), for shared writable mappings; NULL: the type
     * cannot be opened with BK_OPEN_WRITE_SHARED. add_hashes_atomic may be NULL (then add_hash_atomic
     * is called per key). */
    bk_status (*add_hash_atomic)(void *f, uint64_t h);
    bk_status (*add_hashes_atomic)(void *f, const uint64_t *h, size_t n);
    /* Replace the inserted-key count (bk_filter_set_count); NULL: the type's count is exact. */
    void (*set_count)(void *f, uint64_t n);
} bk_vtable;

/* The tables, one per type source file. */
BK_HIDDEN extern const bk_vtable bk__bloom_vtable;
BK_HIDDEN extern const bk_vtable bk__blocked_vtable;
/* The scalable chain's blocked sub-filters: 1024-bit blocks (two cache lines), k probes anywhere in
 * the block. Sizing and exact FPR with the blocked filter's mixture formula (blocked_math.c). */
struct bk_geometry;
BK_HIDDEN bk_status bk__blocked1024_size(uint64_t n, double p, struct bk_geometry *out);
BK_HIDDEN double bk__blocked1024_fpr(uint64_t m, uint64_t n, uint32_t k);
/* The code path a new filter asked for `want` (an enum bk_simd) gets: bk_simd_force, $BK_SIMD and
 * the CPU cap it; under ThreadSanitizer AUTO means scalar (blocked.c). */
BK_HIDDEN int bk__simd_resolve(int want);
BK_HIDDEN extern const bk_vtable bk__counting_vtable;
BK_HIDDEN extern const bk_vtable bk__scalable_vtable;
/* The classic filter's probe scheme (BK__PROBE_MIX*): the scalable chain's layers share one, and a
 * chain loaded from a legacy file grows with legacy layers. Set it only on an empty new filter. */
struct bk_bloom;
BK_HIDDEN uint64_t bk__bloom_probe_mix(const struct bk_bloom *f);
BK_HIDDEN void bk__bloom_set_probe_mix(struct bk_bloom *f, uint64_t mix);
struct bk_counting;
BK_HIDDEN void bk__counting_set_probe_mix(struct bk_counting *f, uint64_t mix);
struct bk_scalable;
BK_HIDDEN void bk__scalable_set_probe_mix(struct bk_scalable *f, uint64_t mix); /* for tests: an empty chain */
/* Filling a classic or blocked filter on several threads without atomics (bloomkit build): the bit
 * array is cut into nparts ranges of whole 64-byte lines; a call sets only the bits of the hashes'
 * probes that fall in range `part` (blocked: adds only the hashes whose block is in it) and leaves the
 * count alone. Calls for different parts touch disjoint lines, so they may run at the same time;
 * calls for every part over the same hashes set exactly the bits add_hashes sets. [excl] per part. */
BK_HIDDEN void bk__bloom_add_hashes_part(struct bk_bloom *f, const uint64_t *h, size_t n, unsigned part,
                                         unsigned nparts);
struct bk_blocked;
BK_HIDDEN void bk__blocked_add_hashes_part(struct bk_blocked *f, const uint64_t *h, size_t n, unsigned part,
                                           unsigned nparts);
BK_HIDDEN extern const bk_vtable bk__cuckoo_vtable;
/* For tests: fingerprint and buckets of hash h in table t of a cuckoo chain. */
struct bk_cuckoo;
BK_HIDDEN void bk__cuckoo_place(const struct bk_cuckoo *f, uint32_t t, uint64_t h, uint32_t *fp, uint64_t *i1,
                                uint64_t *i2);
BK_HIDDEN extern const bk_vtable bk__fuse_vtable;
BK_HIDDEN extern const bk_vtable bk__aging_vtable;
BK_HIDDEN extern const bk_vtable bk__quotient_vtable;
/* For tests: the quotient filter's full invariant check, and its slot array. */
struct bk_quotient;
BK_HIDDEN bk_status bk__quotient_check(const struct bk_quotient *f);
BK_HIDDEN const uint64_t *bk__quotient_words(const struct bk_quotient *f, size_t *nwords);

/* The registry (src/filter.c): the table of a type, NULL when the type is not compiled in. */
BK_HIDDEN const bk_vtable *bk__vtable_of(uint32_t type);

#endif
