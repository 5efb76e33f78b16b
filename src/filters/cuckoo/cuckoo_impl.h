/* The cuckoo filter's private part: the filter's struct, the slot and bucket primitives, the hashing of
 * a key to its fingerprint and two buckets, and what the files of src/filters/cuckoo/ call in each
 * other. Each file has one job:
 *   table.c       geometry and sizing, creating, cloning and freeing tables and filters, statistics
 *   insert.c      the eviction walk, the victim stash, add / add_if_absent / remove and their batches
 *   query.c       contains and count, single and batched
 *   concurrent.c  the lock-free-reader concurrent mode: writer lock, reader stripes, validated reads
 *   chain.c       the expansion chain: bucket refinement, appending and growing tables
 *   encode.c      the file body (docs/FORMAT.md 6.5) and the generic handle's vtable
 *   packed.c      the packed form of a small filter (a header and the exact array) and views over it
 * Not installed. */
#ifndef BK_CUCKOO_IMPL_H
#define BK_CUCKOO_IMPL_H

#include <pthread.h>
#include "filters/internal.h"
#include "core/simd.h"
#include "bloomkit/cuckoo.h"

/*
 * Layout. Slot s = bucket * b + j of a table holds its fingerprint at bit s * f of an array of
 * little-endian 64-bit words (0 = empty slot; fingerprints are 1 .. 2^f - 1). A bucket is read as
 * "groups" of at most 64 bits whose lanes are compared at once with SWAR arithmetic: one group when
 * b * f <= 64 (every bucket of 1, 2 or 4 slots, and 8 slots of 8 bits), else groups of 64 / f lanes
 * (8, 5 or 4), the last one holding the rest. b is any size from 1 to BK_CUCKOO_MAX_BUCKET_SIZE; the
 * queries' straight-line fast paths serve one-group buckets, larger ones loop over their groups. Every
 * read of a group loads the two aligned words that can hold it, so a large array carries one spare
 * word at its end, and a small one is followed by its table's record (see cf_table).
 *
 * Alternate bucket: i2 = (H(fp) - i1) mod m, with H(fp) = ((fp * golden ratio) mod 2^32) mapped to
 * [0, m) by a 64-bit multiply and a shift (m <= 2^32: a stash word holds a bucket in 32 bits).
 * Applying it to i2 gives back i1 for any m, so m needs no rounding; the "mod" is a conditional add
 * of m, since both terms are already in [0, m). Two one-register multiplies and a conditional move:
 * the 64 x 64 -> 128-bit multiply it replaced, with its fixed registers, cost a query about six
 * instructions more.
 *
 * Every access to the slot words, the stash words and the counters is a relaxed atomic load or
 * store. Those compile to plain moves on mainstream targets and make concurrent mode race-free in
 * the C11 sense (readers never lock); without concurrent mode they cost nothing extra.
 */

#define CF_PHI32 UINT32_C(0x9e3779b9)
#define CF_STRIPES 1024 /* reader version counters in concurrent mode (a power of two) */
#define CF_BATCH 32
/* lane_lo of a bucket of 4 lanes of f bits */
#define CF_LO4(f) (UINT64_C(1) | UINT64_C(1) << (f) | UINT64_C(1) << 2 * (f) | UINT64_C(1) << 3 * (f))

#define CF_STASH 4

/* 72 bytes: the array's length (cf_nwords) is derived, not stored, since small filters by the
 * thousand each carry one.
 *
 * Memory. A table's record and a small array (at most CF_PACK_MAX bytes, the exact
 * ceil(buckets * B / 64) words) share one allocator block, the array first: bucket reads that load
 * 8 bytes past the array's end land in the record, so a packed array needs neither the spare word nor
 * the rounding to whole 64-byte lines of a large one (allocated apart, line-aligned). The first
 * table's block also holds the filter's struct right after the record, and the chain's first vector
 * after that: a filter of one small table is one block (cf_block in table.c). The file keeps one
 * array layout for every table (docs/FORMAT.md 6.5: the spare word and the rounding, as zeros). */
typedef struct cf_table {
    uint32_t shift;       /* table t of a chain with expansion 2^s has shift s * t */
    bool owns_words;      /* words allocated apart (bk__calloc_lines), freed with the table */
    bool words_plain;     /* owned words: bk__calloc_lines gave a plain block (bk__free_lines) */
    bool packed;          /* words are the exact array just before this record, in its block */
    bool in_filter;       /* the first table: its block is the filter's (freed with the filter) */
    uint64_t capacity;
    /* The victim stash: CF_STASH entries, each 0 or fp | bucket << 32, a fingerprint whose eviction
     * walk ran out of kicks, still found by queries (bucket: one of its two). Entry 0 is the file's
     * "victim" word, entries 1..3 the table header's words at 40, 48, 56 (docs/FORMAT.md 6.5). See
     * "The stash" in insert.c for when a table uses more than entry 0. */
    uint64_t stash[CF_STASH];
    uint64_t items;       /* fingerprints held, stash included */
    /* last, so that the first table's two fields a query reads sit right before the filter's struct
     * and its hot header (bk_cuckoo's has_u64 and u64_fold): 32 bytes together */
    uint64_t *words;
    uint64_t buckets;     /* base << shift */
    /* (the chain's first table's buckets, base, are buckets >> shift: derived, not stored) */
} cf_table;

/* Arrays of at most this many bytes are packed with their table's record (see cf_table). */
#define CF_PACK_MAX ((uint64_t)4096)

/* The chain's table pointers. Grown by copying into a larger vector; the old vector is kept (linked
 * from the new one) until the filter is freed, so a lock-free reader holding it stays valid. */
typedef struct cf_vec {
    struct cf_vec *retired;
    uint32_t cap;
    cf_table *t[];
} cf_vec;

enum { CTR_INSERTED, CTR_DELETED, CTR_KICKS, CTR_N };

struct bk_cuckoo {
    /* The hot header, first: the one-key uint64 query (see has below) and the seed part its hash
     * reads; the first table's words and bucket count end the record just before it. */
    bool (*has_u64)(const bk_cuckoo *F, uint64_t key); /* the same as has on a uint64 key, hashed in it */
    uint64_t u64_fold;       /* bk__hash_u64_fold(bk__hash_u64_flip(seed)): the uint64 calls' seed part (bk__hash_u64_folded), computed once */
    /* Small fields packed into narrow types: thousands of small filters (Redis keys) each carry this
     * struct, so what can be derived is not stored (the lanes' low masks, the one-table pointer). */
    uint32_t expansion;      /* 0 or 2^exp_shift */
    uint32_t fp_range;       /* 2^f - 1: fingerprints are 1 .. fp_range */
    uint32_t semi_low;       /* semi: 2^(f-4) - 1, the mask of a fingerprint's stored low bits */
    uint32_t f_recip;        /* 65536 / f + 1: exact division by f of multiples of f up to 64 */
    uint32_t ntables;        /* published with release after the table it counts is complete */
    uint16_t max_kicks;      /* <= BK_CUCKOO_MAX_KICKS */
    uint16_t bucket_bits;    /* bits a bucket takes in the array: b * f, or 4 f - 4 semi-sorted */
    uint8_t b, f;            /* slots per bucket (<= 255), fingerprint bits (<= 32) */
    uint8_t exp_shift;
    bool semi;               /* semi-sorted buckets (b = 4, f = 5..16): see "semi-sorted buckets" */
    uint8_t groups;          /* groups per bucket: 1 when a bucket fits one read (b * f <= 57, or 64 aligned) */
    uint8_t group_lanes;     /* lanes of every group but the last */
    uint8_t group_bits;      /* group_lanes * f (<= 64) */
    uint64_t lane_lo;        /* bit 0 of each lane of a full group */
    uint64_t lane_hi;        /* top bit of each lane (the f - 1 low bits of each: lane_hi - lane_lo) */
    uint64_t last_hi;        /* lane_hi of the last group (equal to it when that group is full) */
    uint64_t seed;
    /* The one-key calls' paths for the filter's present state (see "fast paths" in query.c): chosen by
     * bk__cf_update_solo whenever the table count, concurrent mode or the stash's emptiness changes.
     * The fast ones serve one table without concurrent mode: the first, whose record sits just before
     * this struct (cf_first). */
    bool (*has)(const bk_cuckoo *F, uint64_t h);
    bool (*put)(bk_cuckoo *F, uint64_t h); /* a free slot in one of the key's buckets, else false; or NULL */
    double fpr_target;
    cf_vec *vec;             /* published with release; read with acquire */
    uint64_t ctr[CTR_N];
    uint64_t rng;            /* kick choices; only touched by the (single) writer */
    uint64_t *stripes;       /* concurrent mode: CF_STRIPES version counters (inside a cf_conc), else NULL */
    const bk_allocator *alloc; /* everything this filter owns is allocated with it */
};

/* The chain's first table: its record sits just before the filter's struct, in the same block. */
BK_INLINE cf_table *cf_first(const bk_cuckoo *F) { return (cf_table *)(uintptr_t)F - 1; }
/* The only table when there is one and no concurrent mode (the fast paths' state), else NULL. */
BK_INLINE cf_table *cf_solo(const bk_cuckoo *F)
{
    return !F->stripes && F->ntables == 1 ? cf_first(F) : NULL; /* (no concurrent writer: plain read) */
}

/* Concurrent mode's state, one allocation made when the mode is turned on: the writer lock (held by
 * every writer) and the stripes F->stripes points at. Outside it a filter carries no lock (40 bytes
 * less in each of many small filters). */
typedef struct cf_conc {
    pthread_mutex_t lock;
    uint64_t stripes[CF_STRIPES];
} cf_conc;
BK_INLINE cf_conc *cf_conc_of(const bk_cuckoo *F)
{
    return (cf_conc *)(void *)((char *)F->stripes - offsetof(cf_conc, stripes));
}

#define LD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
/* Slot words and stash words: acquire loads and release stores. The reader's validation (see
 * concurrent.c) needs the stripe stores ordered around the slot stores without standalone fences,
 * which ThreadSanitizer does not model; on x86-64 these are the same plain moves as relaxed ones. */
#define LDA(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STR(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* ---- geometry (table.c) ---- */

BK_INLINE bool valid_b(uint32_t b) { return b >= 1 && b <= BK_CUCKOO_MAX_BUCKET_SIZE; }
BK_INLINE bool valid_f(uint32_t f) { return f >= BK_CUCKOO_MIN_FINGERPRINT_BITS && f <= BK_CUCKOO_MAX_FINGERPRINT_BITS; }
/* Semi-sorted buckets: 4 slots, at least one low bit under the 4-bit high part, and a decoded bucket
 * (4 lanes of f bits) in one 64-bit word. */
BK_INLINE bool valid_semi(uint32_t b, uint32_t f) { return b == 4 && f >= 5 && f <= 16; }
BK_INLINE uint32_t bucket_bits_of(uint32_t b, uint32_t f, bool semi) { return semi ? 4 * f - 4 : b * f; }

typedef struct cf_params {
    uint32_t b, f, max_kicks, expansion; /* expansion: 0 or a power of two */
    uint64_t seed;
    bool concurrent;
    bool semi;
    const bk_allocator *allocator; /* NULL: the default */
} cf_params;

/* Bytes of a table's word array in the file, and of a large table's array in memory, for `buckets`
 * buckets of `bucket_bits` bits: the spare word included, whole 64-byte lines; 0 if too big (the
 * array is over BK_MAX_FILTER_BYTES, or a bucket index would not fit a stash word's 32 bits). */
BK_HIDDEN uint64_t bk__cf_table_bytes(uint64_t buckets, uint32_t bucket_bits);
/* Bytes of the exact array (whole words, nothing spare): a packed array's length. */
BK_INLINE uint64_t cf_exact_bytes(uint64_t buckets, uint32_t bucket_bits) { return (buckets * bucket_bits + 63) / 64 * 8; }
/* Words of a table's array in the file. */
BK_INLINE uint64_t cf_file_words(const bk_cuckoo *F, const cf_table *T) { return bk__cf_table_bytes(T->buckets, F->bucket_bits) / 8; }
/* Words of a table's array in memory (a packed one is exact). */
BK_INLINE uint64_t cf_nwords(const bk_cuckoo *F, const cf_table *T)
{
    return T->packed ? cf_exact_bytes(T->buckets, F->bucket_bits) / 8 : cf_file_words(F, T);
}
/* FPR of one table of `slots` slots holding `items` fingerprints. */
BK_HIDDEN double bk__cf_table_fpr(uint32_t b, uint32_t f, uint64_t items, uint64_t slots);
/* A table of base << shift buckets after the first (its words zeroed when alloc_words, else left for
 * the caller to point at borrowed bytes). A small array is packed (cf_table). */
BK_HIDDEN bk_status bk__cf_table_new(const bk_allocator *a, uint64_t base, uint32_t shift, uint32_t bucket_bits,
                                    uint64_t capacity, bool alloc_words, cf_table **out);
BK_HIDDEN void bk__cf_table_free(const bk_allocator *a, cf_table *T);
/* The filter with its first table (one block: see cf_table), of `buckets` buckets and `capacity`;
 * its words zeroed when alloc_words, else left for the caller to point at borrowed bytes. */
BK_HIDDEN bk_status bk__cf_filter_new(const cf_params *p, double fpr_target, uint64_t buckets, uint64_t capacity,
                                     bool alloc_words, bk_cuckoo **out);
/* The struct's geometry, lane masks, seed parts and kick generator from p (F zeroed before): what
 * bk__cf_filter_new and a packed filter's view (packed.c) both derive. */
BK_HIDDEN void bk__cf_init_struct(bk_cuckoo *F, const cf_params *p, double fpr_target);
/* The chain's first vector, right after the struct (in the filter's block, or in a view): most filters
 * keep one or two tables. */
#define CF_VEC0 2
BK_INLINE cf_vec *vec0_of(const bk_cuckoo *F) { return (cf_vec *)(uintptr_t)(F + 1); }

/* ---- slots and buckets ---- */

/* The bits of w from bit `pos` on, at least 57 of them (64 - (pos mod 8): the groups are chosen in
 * filter_new so that each fits in what its start leaves). Plain form: one unaligned load, for
 * anything that runs with no writer alongside -- the writer itself, or any call without concurrent
 * mode. Bytes past the array come from the spare word or the record after it. Little-endian hosts only (checked below). */
BK_INLINE uint64_t read_plain(const uint64_t *w, uint64_t pos)
{
    uint64_t x;
    memcpy(&x, (const uint8_t *)w + (pos >> 3), 8);
    return x >> (pos & 7);
}

/* The bucket at index i of bb bits (plain read). With bb a multiple of 8 known at compile time (b = 4
 * and an even f) the bucket starts at a byte: i * (bb / 8), no shift. */
BK_INLINE uint64_t read_bucket(const uint64_t *w, uint64_t i, uint64_t bb)
{
    if (bb % 8 == 0) {
        uint64_t x;
        memcpy(&x, (const uint8_t *)w + i * (bb / 8), 8);
        return x;
    }
    return read_plain(w, i * bb);
}

/* Atomic form, for lock-free readers in concurrent mode: the two aligned words that can hold the
 * group, each an acquire load (see concurrent.c). */
BK_INLINE uint64_t read_atomic(const uint64_t *w, uint64_t pos)
{
    uint64_t k = pos >> 6;
    unsigned sh = (unsigned)(pos & 63);
    uint64_t lo = LDA(&w[k]) >> sh;
    uint64_t hi = (LDA(&w[k + 1]) << 1) << (63 - sh); /* 0 when sh == 0, without a shift by 64 */
    return lo | hi;
}

BK_INLINE uint64_t read64(const uint64_t *w, uint64_t pos, bool atomic)
{
    return atomic ? read_atomic(w, pos) : read_plain(w, pos);
}

/* Whether any lane of x1 or x2 (one group each) is zero: (x - lo) & ~x flags the lowest zero lane of
 * x exactly and never flags a lane when none is zero (a borrow only starts at a zero lane); lanes
 * above it may be flagged wrongly, which does not matter for "any". Three operations per group
 * against five for the exact form below. Given nlo = -lo: x + nlo is one lea where x - lo takes a copy
 * and a subtract (the one-key query keeps nlo opaque to the compiler so that it is not folded back). */
BK_INLINE bool any_zero_lane_neg(uint64_t nlo, uint64_t hi, uint64_t x1, uint64_t x2)
{
    return (((x1 + nlo) & ~x1) | ((x2 + nlo) & ~x2)) & hi;
}
/* any_zero_lane_neg given lo. */
BK_INLINE bool any_zero_lane(uint64_t lo, uint64_t hi, uint64_t x1, uint64_t x2)
{
    return any_zero_lane_neg(0 - lo, hi, x1, x2);
}

/* Lanes of x (one group, lanes given by hi and low) equal to zero: the top bit of each such lane set,
 * nothing else. Exact: no carry crosses lanes, so it can also count matches. */
BK_INLINE uint64_t zero_lanes(uint64_t x, uint64_t low, uint64_t hi)
{
    uint64_t y = (x & low) + low;
    return ~(y | x | low) & hi;
}

BK_INLINE uint64_t group_pos(const bk_cuckoo *F, uint64_t bucket, uint32_t g)
{
    return bucket * F->bucket_bits + (uint64_t)g * F->group_bits;
}

/*
 * Semi-sorted buckets (Fan, Andersen, Kaminsky and Mitzenmacher, "Cuckoo Filter: Practically Better
 * Than Bloom", CoNEXT 2014, section 5.2). A bucket of 4 slots is a multiset: the order of its
 * fingerprints carries no information. Sorted, the 4 high nibbles (the top 4 bits of each fingerprint)
 * are one of C(16 + 4 - 1, 4) = 3,876 non-decreasing sequences, so they fit a 12-bit code instead of 16
 * bits: one bit per slot saved. Stored bucket (4 f - 4 bits at bit bucket * (4 f - 4)): bits 0-11 the
 * code (the rank of the nibble sequence in lexicographic order, (0,0,0,0) = 0 = the empty bucket),
 * then the 4 low parts (f - 4 bits each) in the sorted order. An empty slot is fingerprint 0 and sorts
 * first. Reads decode a bucket into the plain layout (4 lanes of f bits) and compare as usual; writes
 * decode, change one slot, sort and encode the whole bucket again.
 */
#define CF_SEMI_CODES 3876
/* code -> n0 | n1 << 4 | n2 << 8 | n3 << 12 (non-decreasing nibbles); codes >= CF_SEMI_CODES: 0xffff */
BK_HIDDEN extern uint16_t bk__cf_semi_nibs[4096];
/* rank pieces: code = sum over j of semi_rank[j][n_{j-1}][n_j] (n_{-1} = 0) */
BK_HIDDEN extern uint16_t bk__cf_semi_rank[4][16][16];
/* Fill the two tables (once per process; filter_new calls it before any semi-sorted filter exists). */
BK_HIDDEN void bk__cf_semi_init(void);

/* The plain 4-lane word of a stored bucket x (its bits from bit 0; bits above it are ignored). */
BK_INLINE uint64_t semi_decode(const bk_cuckoo *F, uint64_t x)
{
    uint64_t n = bk__cf_semi_nibs[x & 0xfff];
    uint32_t w = F->f - 4, f = F->f;
    uint64_t lows = x >> 12, m = F->semi_low;
    uint64_t l0 = (n & 0xf) << w | (lows & m);
    uint64_t l1 = (n >> 4 & 0xf) << w | (lows >> w & m);
    uint64_t l2 = (n >> 8 & 0xf) << w | (lows >> 2 * w & m);
    uint64_t l3 = (n >> 12 & 0xf) << w | (lows >> 3 * w & m);
    return l0 | l1 << f | l2 << 2 * f | l3 << 3 * f;
}

/* The stored bucket of 4 fingerprints (any order; sorted here). */
BK_INLINE uint64_t semi_encode(const bk_cuckoo *F, uint32_t a[4])
{
#define CF_CSWAP(i, j) do { if (a[i] > a[j]) { uint32_t t_ = a[i]; a[i] = a[j]; a[j] = t_; } } while (0)
    CF_CSWAP(0, 1); CF_CSWAP(2, 3); CF_CSWAP(0, 2); CF_CSWAP(1, 3); CF_CSWAP(1, 2);
#undef CF_CSWAP
    uint32_t w = F->f - 4;
    uint32_t n0 = a[0] >> w, n1 = a[1] >> w, n2 = a[2] >> w, n3 = a[3] >> w;
    uint64_t code = (uint64_t)bk__cf_semi_rank[0][0][n0] + bk__cf_semi_rank[1][n0][n1] + bk__cf_semi_rank[2][n1][n2] +
                    bk__cf_semi_rank[3][n2][n3];
    uint64_t m = F->semi_low;
    uint64_t lows = (a[0] & m) | (a[1] & m) << w | (uint64_t)(a[2] & m) << 2 * w | (uint64_t)(a[3] & m) << 3 * w;
    return code | lows << 12;
}

/* A stored bucket's bits (plain read: the writer, or no concurrent mode). */
BK_INLINE uint64_t bucket_word(const bk_cuckoo *F, const cf_table *T, uint64_t bucket)
{
    return read_plain(T->words, bucket * F->bucket_bits);
}

/* Matching lanes of group g of a bucket (the last group has its own masks). */
BK_INLINE uint64_t group_match(const bk_cuckoo *F, const cf_table *T, uint64_t bucket, uint32_t g, uint64_t pat,
                               bool atomic)
{
    uint64_t x = read64(T->words, group_pos(F, bucket, g), atomic);
    if (F->semi) x = semi_decode(F, x);
    x ^= pat;
    uint64_t hi = g + 1 < F->groups ? F->lane_hi : F->last_hi;
    return zero_lanes(x, hi - (hi >> (F->f - 1)), hi);
}

BK_INLINE bool bucket_has(const bk_cuckoo *F, const cf_table *T, uint64_t bucket, uint32_t fp, bool atomic)
{
    uint64_t pat = fp * F->lane_lo;
    uint64_t hit = 0;
    for (uint32_t g = 0; g < F->groups; g++) hit |= group_match(F, T, bucket, g, pat, atomic);
    return hit != 0;
}

BK_INLINE uint32_t bucket_count(const bk_cuckoo *F, const cf_table *T, uint64_t bucket, uint32_t fp, bool atomic)
{
    uint64_t pat = fp * F->lane_lo;
    uint32_t c = 0;
    for (uint32_t g = 0; g < F->groups; g++)
        c += bk__popcount_swar(group_match(F, T, bucket, g, pat, atomic));
    return c;
}

/* The slot index (0 .. b-1) of the first lane of `bucket` equal to fp (0: an empty slot), or -1. */
static inline int bucket_find(const bk_cuckoo *F, const cf_table *T, uint64_t bucket, uint32_t fp)
{
    uint64_t pat = fp * F->lane_lo;
    for (uint32_t g = 0; g < F->groups; g++) {
        uint64_t z = group_match(F, T, bucket, g, pat, false);
        if (z) {
            /* the flag of lane l is bit l*f + f-1: (ctz + 1) / f = l + 1, divided by a reciprocal */
            uint32_t lane1 = ((uint32_t)__builtin_ctzll(z) + 1) * F->f_recip >> 16;
            return (int)(g * F->group_lanes + lane1) - 1;
        }
    }
    return -1;
}

/* Write `nbits` bits (at most 64 - 1, mask = 2^nbits - 1) at bit pos. Only the writer calls this (caller's
 * exclusion, or the writer lock), so the load-modify-store of each word loses nothing; the stores are
 * atomic so that lock-free readers see either the old or the new word. */
static inline void bits_set(cf_table *T, uint64_t pos, uint32_t nbits, uint64_t mask, uint64_t v)
{
    uint64_t k = pos >> 6;
    unsigned sh = (unsigned)(pos & 63);
    uint64_t w = LD(&T->words[k]);
    STR(&T->words[k], (w & ~(mask << sh)) | (v << sh));
    if (sh + nbits > 64) {
        unsigned r = 64 - sh; /* bits that went into word k */
        w = LD(&T->words[k + 1]);
        STR(&T->words[k + 1], (w & ~(mask >> r)) | (v >> r));
    }
}

/* The 4 fingerprints of a semi-sorted bucket, in its sorted order. */
static inline void semi_get4(const bk_cuckoo *F, const cf_table *T, uint64_t bucket, uint32_t a[4])
{
    uint64_t x = semi_decode(F, bucket_word(F, T, bucket));
    for (int j = 0; j < 4; j++) a[j] = (uint32_t)(x >> (j * F->f)) & F->fp_range;
}

static inline uint32_t slot_get(const bk_cuckoo *F, const cf_table *T, uint64_t bucket, uint32_t j)
{
    if (F->semi) {
        uint32_t a[4];
        semi_get4(F, T, bucket, a);
        return a[j];
    }
    uint64_t pos = (bucket * F->b + j) * F->f;
    return (uint32_t)(read_plain(T->words, pos) & F->fp_range);
}

/* Rewriting a semi-sorted bucket moves its other fingerprints within it, and its bits may span two
 * words: in concurrent mode its stripe is odd meanwhile (concurrent.c), unless a kick already made it so. */
BK_HIDDEN void bk__cf_semi_store(bk_cuckoo *F, cf_table *T, uint64_t bucket, uint64_t x);

/* Write slot j of a bucket (j as slot_get and bucket_find number them). */
static inline void slot_set(bk_cuckoo *F, cf_table *T, uint64_t bucket, uint32_t j, uint32_t fp)
{
    if (F->semi) {
        uint32_t a[4];
        semi_get4(F, T, bucket, a);
        a[j] = fp;
        bk__cf_semi_store(F, T, bucket, semi_encode(F, a));
        return;
    }
    bits_set(T, (bucket * F->b + j) * F->f, F->f, (uint64_t)F->fp_range, fp);
}

/* ---- hashing: fingerprint and the two buckets ---- */

BK_INLINE uint32_t fp_of(const bk_cuckoo *F, uint64_t h)
{
    return 1 + (uint32_t)(((uint64_t)(uint32_t)h * F->fp_range) >> 32);
}

BK_INLINE uint64_t alt_of(uint64_t buckets, uint64_t i, uint32_t fp)
{
    uint64_t hf = ((uint64_t)(uint32_t)(fp * CF_PHI32) * buckets) >> 32;
    uint64_t d = hf - i;
    return hf >= i ? d : d + buckets;
}

/* The alternate bucket in table T of a chain: see "Buckets in a chain" in chain.c. */
#define CF_PHI2 UINT64_C(0xd6e8feb86659fd93)

BK_INLINE uint64_t alt_t(const cf_table *T, uint64_t i, uint32_t fp)
{
    if (BK_LIKELY(T->shift == 0)) return alt_of(T->buckets, i, fp);
    uint64_t g = ((uint64_t)fp * CF_PHI2) >> (64 - T->shift);
    return alt_of(T->buckets >> T->shift, i >> T->shift, fp) << T->shift | ((i ^ g) & ((UINT64_C(1) << T->shift) - 1));
}

BK_INLINE uint32_t ntables_acq(const bk_cuckoo *F) { return __atomic_load_n(&F->ntables, __ATOMIC_ACQUIRE); }
BK_INLINE cf_vec *vec_acq(const bk_cuckoo *F) { return __atomic_load_n(&F->vec, __ATOMIC_ACQUIRE); }

/* ---- the chain (chain.c) ---- */

/* Append a table (the writer only). The table is complete before ntables counts it (release). */
BK_HIDDEN bk_status bk__cf_chain_push(bk_cuckoo *F, cf_table *T);
/* Choose the one-key paths F->has and F->put (in concurrent mode they are chosen once, when it is turned on,
 * and never written while it is on). */
BK_HIDDEN void bk__cf_update_solo(bk_cuckoo *F);
/* The paths for F's present state (query.c, insert.c). */
BK_HIDDEN bool (*bk__cf_pick_has(const bk_cuckoo *F))(const bk_cuckoo *, uint64_t);
BK_HIDDEN bool (*bk__cf_pick_has_u64(const bk_cuckoo *F))(const bk_cuckoo *, uint64_t);
BK_HIDDEN bool (*bk__cf_pick_put(const bk_cuckoo *F))(bk_cuckoo *, uint64_t);
/* Grow the chain by one table (writer only). */
BK_HIDDEN bk_status bk__cf_grow(bk_cuckoo *F);
/* A free slot in one of the key's buckets of any table, newest first, without evicting anything. */
BK_HIDDEN bool bk__cf_put_anywhere(bk_cuckoo *F, uint32_t fp, uint64_t h);

/* ---- concurrent mode (concurrent.c) ---- */

BK_HIDDEN bk_status bk__cf_set_concurrent(bk_cuckoo *F, bool on);
BK_INLINE uint64_t *stripe_of(const bk_cuckoo *F, uint64_t bucket) { return &F->stripes[bucket & (CF_STRIPES - 1)]; }
/* Make a bucket's stripe odd (a fingerprint of it is about to be homeless) / even again. */
BK_HIDDEN void bk__cf_seq_open(bk_cuckoo *F, uint64_t bucket);
BK_HIDDEN void bk__cf_seq_close(bk_cuckoo *F, uint64_t bucket);
BK_INLINE void wlock(bk_cuckoo *F)
{
    if (F->stripes) pthread_mutex_lock(&cf_conc_of(F)->lock);
}
BK_INLINE void wunlock(bk_cuckoo *F)
{
    if (F->stripes) pthread_mutex_unlock(&cf_conc_of(F)->lock);
}

/* ---- query primitives (query.c) ---- */

/* Whether stash entry k holds fp for bucket i1 or i2. */
BK_INLINE bool stash_count_one(const cf_table *T, int k, uint32_t fp, uint64_t i1, uint64_t i2)
{
    uint64_t v = LD(&T->stash[k]), vb = v >> 32;
    return v && (uint32_t)v == fp && (vb == i1 || vb == i2);
}

/* Stash entries holding fp for buckets i1 or i2 (copies of one key may fill several). */
BK_INLINE uint32_t stash_count(const cf_table *T, uint32_t fp, uint64_t i1, uint64_t i2, bool atomic)
{
    uint32_t c = 0;
    for (int k = 0; k < CF_STASH; k++) {
        uint64_t v = atomic ? LDA(&T->stash[k]) : LD(&T->stash[k]);
        uint64_t vb = v >> 32;
        c += v && (uint32_t)v == fp && (vb == i1 || vb == i2);
    }
    return c;
}

BK_INLINE bool stash_has(const cf_table *T, uint32_t fp, uint64_t i1, uint64_t i2, bool atomic)
{
    return stash_count(T, fp, i1, i2, atomic) != 0;
}

/* Entries in use (the writer's view, or a plain one). */
BK_INLINE uint32_t stash_used(const cf_table *T)
{
    uint32_t n = 0;
    for (int k = 0; k < CF_STASH; k++) n += LD(&T->stash[k]) != 0;
    return n;
}

BK_INLINE bool table_has(const bk_cuckoo *F, const cf_table *T, uint32_t fp, uint64_t i1, uint64_t i2,
                         bool atomic)
{
    /* both buckets read without a branch between them: their loads overlap */
    unsigned hit = (unsigned)bucket_has(F, T, i1, fp, atomic) | (unsigned)bucket_has(F, T, i2, fp, atomic);
    return hit || stash_has(T, fp, i1, i2, atomic);
}


/* The reader side of the stripes: table_has validated against a concurrent writer. */
BK_HIDDEN bool bk__cf_table_has_concurrent(const bk_cuckoo *F, const cf_table *T, uint32_t fp, uint64_t i1,
                                    uint64_t i2);
/* table_count validated likewise. */
BK_HIDDEN uint64_t bk__cf_table_count_concurrent(const bk_cuckoo *F, const cf_table *T, uint32_t fp, uint64_t i1,
                                          uint64_t i2);

/* One table, buckets of one group (every geometry but b = 8 with f = 12 or 16), no concurrent mode:
 * straight-line code, both buckets' loads independent of each other. */
BK_INLINE bool solo_has(const bk_cuckoo *F, const cf_table *T, uint32_t fp, uint64_t i1, uint64_t i2)
{
    uint64_t pat = fp * F->lane_lo;
    uint64_t x1 = read_plain(T->words, i1 * F->bucket_bits) ^ pat; /* plain buckets only */
    uint64_t x2 = read_plain(T->words, i2 * F->bucket_bits) ^ pat;
    if (any_zero_lane(F->lane_lo, F->lane_hi, x1, x2)) return true;
    return stash_has(T, fp, i1, i2, false);
}

BK_INLINE uint64_t table_count(const bk_cuckoo *F, const cf_table *T, uint32_t fp, uint64_t i1, uint64_t i2,
                            bool atomic)
{
    uint64_t c = bucket_count(F, T, i1, fp, atomic);
    if (i2 != i1) c += bucket_count(F, T, i2, fp, atomic);
    return c + stash_count(T, fp, i1, i2, atomic);
}

/* ---- writers (insert.c) ---- */


/* The writer's only way to change a stash entry: the one-key paths follow it (the fast ones serve
 * tables with an empty stash). */
BK_INLINE void set_stash(bk_cuckoo *F, cf_table *T, int k, uint64_t v)
{
    bool was = stash_used(T) != 0;
    STR(&T->stash[k], v);
    if (was != (stash_used(T) != 0)) bk__cf_update_solo(F);
}

/* A table that takes no more inserts: every stash entry taken, or any taken at or over its capacity
 * (below its capacity a table parks what a walk could not place; see "The stash" in insert.c). */
BK_INLINE bool table_full(const cf_table *T)
{
    uint32_t n = stash_used(T);
    return n == CF_STASH || (n && LD(&T->items) >= T->capacity);
}

/* Start loading the second bucket while the first is examined: on large tables the two cache
 * misses then overlap instead of following each other. */
BK_INLINE void prefetch_bucket(const bk_cuckoo *F, const cf_table *T, uint64_t bucket)
{
    BK_PREFETCH_W((const uint8_t *)T->words + ((bucket * F->bucket_bits) >> 3));
}

typedef enum { OP_ADD, OP_ADD_NX, OP_REMOVE } cf_op;

/* Prefetch both buckets of h: adds go to the newest table; removes and queries look at every table
 * (a chain is short; one table is the common case). */
BK_INLINE void prefetch_key(const bk_cuckoo *F, uint64_t h, cf_op op, bool write)
{
    uint32_t fp = fp_of(F, h);
    uint32_t n = ntables_acq(F);
    const cf_vec *v = vec_acq(F);
    for (uint32_t t = op == OP_ADD ? n - 1 : 0; t < n; t++) {
        const cf_table *T = v->t[t];
        uint64_t i1 = bk__range64(h, T->buckets), i2 = alt_t(T, i1, fp);
        const uint8_t *a = (const uint8_t *)T->words + ((i1 * F->bucket_bits) >> 3);
        const uint8_t *b = (const uint8_t *)T->words + ((i2 * F->bucket_bits) >> 3);
        if (write) {
            BK_PREFETCH_W(a);
            BK_PREFETCH_W(b);
        } else {
            BK_PREFETCH(a);
            BK_PREFETCH(b);
        }
    }
}

/* Put fp into a free slot of the bucket, if it has one. */
BK_INLINE bool try_put(bk_cuckoo *F, cf_table *T, uint64_t bucket, uint32_t fp)
{
    int j = bucket_find(F, T, bucket, 0);
    if (j < 0) return false;
    slot_set(F, T, bucket, (uint32_t)j, fp);
    return true;
}

#endif
