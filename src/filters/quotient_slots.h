/* The quotient filter's private layout, shared by quotient.c (slot operations, lifetime),
 * quotient_rebuild.c (grow, merge, append) and quotient_file.c (body format): the struct, word
 * primitives, slot access, rank and select, entry parsing and the hash split. Not installed. */
#ifndef BK_QUOTIENT_SLOTS_H
#define BK_QUOTIENT_SLOTS_H

#include "filters/internal.h"
#include "filters/testing.h"
#include "core/simd.h"
#include "bloomkit/quotient.h"
#include "bloomkit/filter.h"

/*
 * The slot array: groups of eight blocks of 64 slots (the last group may hold fewer: the physical
 * slots are a multiple of 128, so an even number of blocks). A group is one word holding its blocks'
 * 8-bit offsets (block 8g + k in byte k), then for each block: its occupied word, its run-end word
 * and r words of remainders (slot j of the block at bits j*r .. j*r + r - 1 of those words,
 * little-endian): 2 + 1/8 bits of metadata per slot. An offset of 255 or more is stored as 255
 * (saturated); its value is then found from the last block before it whose offset is not saturated,
 * block by block through the run ends (bk__qf_off_slow), or, once a filter has stored a saturated
 * offset, from its table of every block's true offset (sat, in memory only: never saved, rebuilt
 * when a file is loaded). Files of bodies 1 and 2 hold the earlier layout
 * (pairs of blocks after one word of two 32-bit offsets); they are converted when loaded.
 *
 * Invariants (checked when a file is loaded):
 *   - occupied bit i set iff quotient i has a run; runs are in quotient order, each starts at or
 *     after its quotient, right after the previous run when that one reaches its quotient;
 *   - the number of run ends equals the number of occupied quotients;
 *   - the offset of block b is max(0, E - 64 b), where E is the run end of the last occupied
 *     quotient <= 64 b (0 when there is none);
 *   - each run is a sequence of well-formed entries with increasing remainders; unused slots are 0.
 */
struct bk_quotient {
    uint64_t *words;
    uint64_t nwords;
    uint32_t qbits, rbits; /* qbits: bits of a quotient, ceil(log2 nslots) */
    uint32_t fbits;       /* trailing zero bits of nslots, plus r: what a merge may cut */
    uint32_t group_words; /* 1 + 8 (2 + r) */
    uint64_t rmask;       /* 2^r - 1, also the counters' digit base */
    uint64_t nslots;      /* home slots S (any count from 128 to 2^31; 2^q in the 1.0 layout) */
    uint64_t odd;         /* nslots without its trailing zero bits: merges need it equal */
    uint64_t xslots;      /* physical slots: multiple of 128 */
    uint64_t nblocks;     /* xslots / 64 */
    uint64_t max_used;    /* floor(max_load * S) */
    double max_load;
    uint64_t seed;
    uint64_t capacity;    /* keys it was sized for */
    double fpr_target;
    uint64_t used;        /* slots in use */
    uint64_t distinct;    /* entries */
    uint64_t total;       /* sum of counts (saturating) */
    bk_quotient_path path_asked;
    bool bmi2;            /* the path in use */
    bool owns_words;
    bool layout10;        /* S = 2^q and the 1.0 rule's spare slots */
    uint8_t body;         /* body version it is saved in: 1 for the 1.0 layout, 2 for a table loaded from
                           * one, else 4 */
    const bk_allocator *alloc; /* everything this filter owns is allocated with it */
    /* Every block's true offset, kept beside the stored bytes by every write of an offset (off_set,
     * the one-slot insert's increments) once some offset has reached 255; NULL before (and when it could
     * not be allocated: the slow path answers then). sat_want: a saturated offset was stored while
     * there was no table (bk__qf_sat_sync builds it). */
    uint32_t *sat;
    bool sat_want;
    /* Stages (bk_quotient_expand): the earlier, full tables, oldest first, each a whole filter of its
     * own geometry with this seed and max_load and no stages of its own; this struct is the newest
     * stage, the one inserts go to. NULL and 0 for a filter of one table. */
    struct bk_quotient **older;
    uint32_t nolder;
    /* An expanding filter (bk_xquotient_new, quotient_expand.c): slots of variable-length
     * fingerprints (rbits is the slot width), doubled in place; xq_bound: its FPR bound now; xq_keys:
     * keys added; xq_doublings: doublings so far. false and 0 for every other filter. */
    bool xq;
    uint32_t xq_doublings;
    double xq_bound;
    uint64_t xq_keys;
};

#define QF_MAX_STAGES 64 /* stages of one filter (1 + doublings past the planned room) */

/* Stage i >= 1 of a filter made for p whose first stage's bound at its load limit is b0 targets
 * B 4 / ((i + 3)(i + 4)), B = 1.1 p - min(b0, p): the targets sum to B over all i (docs/MATH.md). A
 * first table past p at its load limit (a small filter whose 128 slots take more keys than it was
 * sized for, or one grown in place past p) leaves the stages 0.1 p. */
BK_INLINE double bk__qf_stage_target(double p, double b0, uint32_t i)
{
    double b = BK_QUOTIENT_KEEP_FPR * p - (b0 < p ? b0 : p);
    return b * 4.0 / (((double)i + 3.0) * ((double)i + 4.0));
}
/* The FPR bound of one table at its load limit. */
BK_INLINE double bk__qf_bound(const bk_quotient *f) { return bk_quotient_fpr_slots(f->max_used, f->nslots, f->rbits); }

#define QF_ENC_MAX 48 /* slots of the longest entry: 3 + 41 base-3 digits of 2^64 */
#define QF_NONE UINT64_MAX

/* ---- word primitives: portable and BMI2 ---- */

/* Position of the (k+1)-th set bit of w (k < popcount(w)): skip whole bytes by their popcounts,
 * then clear the lowest bits of the byte that holds it. */
BK_INLINE unsigned select_portable(uint64_t w, unsigned k)
{
    unsigned pos = 0;
    for (;;) {
        unsigned c = bk__popcount_swar(w & 0xff);
        if (k < c) break;
        k -= c;
        w >>= 8;
        pos += 8;
    }
    while (k--) w &= w - 1;
    return pos + (unsigned)__builtin_ctzll(w);
}

#if defined(__x86_64__) && defined(__GNUC__)
#  define QF_HAVE_BMI2 1
/* Inline assembly needs no target attribute, so the same C code serves both paths; these run only
 * when bk__cpu_usable() has BMI2 and POPCNT. */
BK_INLINE uint64_t pdep_asm(uint64_t src, uint64_t mask)
{
    uint64_t r;
    __asm__("pdepq %2, %1, %0" : "=r"(r) : "r"(src), "rm"(mask));
    return r;
}
BK_INLINE unsigned tzcnt_asm(uint64_t x)
{
    uint64_t r;
    __asm__("tzcntq %1, %0" : "=r"(r) : "rm"(x));
    return (unsigned)r;
}
#else
#  define QF_HAVE_BMI2 0
#endif

BK_INLINE unsigned popc(uint64_t x, bool bmi2) { return bk__popcount64(x, bmi2); }

BK_INLINE unsigned select64(uint64_t w, unsigned k, bool bmi2)
{
#if QF_HAVE_BMI2
    if (bmi2) return tzcnt_asm(pdep_asm(UINT64_C(1) << k, w));
#endif
    (void)bmi2;
    return select_portable(w, k);
}

/* select64, or 64 when w has k or fewer set bits (k < 64). */
BK_INLINE unsigned select_or_64(uint64_t w, unsigned k, bool bmi2)
{
#if QF_HAVE_BMI2
    if (bmi2) return tzcnt_asm(pdep_asm(UINT64_C(1) << k, w)); /* pdep gives 0, tzcnt 64 */
#endif
    return popc(w, bmi2) > k ? select_portable(w, k) : 64;
}

/* ---- layout access ---- */

#define QF_OFF_SAT 255u /* a stored offset of 255: the offset is 255 or more */
#define QF_GROUP_SHIFT 3 /* 8 blocks a group */

/* Block b's words start after the offsets words of the groups up to its own (b / 8 + 1 of them) and
 * the 2 + r words of each block before it. */
BK_INLINE uint64_t *blk(const bk_quotient *f, uint64_t b)
{
    return f->words + 1 + b * (2 + f->rbits) + (b >> QF_GROUP_SHIFT);
}
/* Words of the array for nb blocks (an even count). */
BK_INLINE uint64_t qf_array_words(uint64_t nb, uint32_t rb)
{
    return nb * (2 + (uint64_t)rb) + ((nb + 7) >> QF_GROUP_SHIFT);
}
/* The stored (possibly saturated) offset of block b; bp: blk(f, b). */
BK_INLINE unsigned off_byte_in(const bk_quotient *f, uint64_t b, const uint64_t *bp)
{
    return (unsigned)(bp[-1 - (int64_t)((b & 7) * (2 + f->rbits))] >> ((b & 7) * 8)) & 0xffu;
}
BK_INLINE unsigned off_byte(const bk_quotient *f, uint64_t b)
{
    return (unsigned)(f->words[(b >> QF_GROUP_SHIFT) * f->group_words] >> ((b & 7) * 8)) & 0xffu;
}
/* Store offset v of block b (saturating at 255), and in the table of true offsets when there is one. */
BK_INLINE void off_set(bk_quotient *f, uint64_t b, uint64_t v)
{
    uint64_t *w = &f->words[(b >> QF_GROUP_SHIFT) * f->group_words];
    unsigned sh = (unsigned)(b & 7) * 8;
    if (f->sat) f->sat[b] = (uint32_t)v;
    if (v >= QF_OFF_SAT) {
        v = QF_OFF_SAT;
        if (!f->sat) f->sat_want = true;
    }
    *w = (*w & ~(UINT64_C(0xff) << sh)) | (v << sh);
}
/* The offset of block b, when it is saturated (quotient.c): from the table, else counted. */
BK_HIDDEN uint64_t bk__qf_off_slow(const bk_quotient *f, uint64_t b, bool bmi2);
/* Build the table of true offsets when a saturated one was stored without it (all offsets right). */
BK_HIDDEN void bk__qf_sat_build(bk_quotient *f);
BK_INLINE void bk__qf_sat_sync(bk_quotient *f)
{
    if (BK_UNLIKELY(f->sat_want)) bk__qf_sat_build(f);
}
BK_INLINE uint64_t off_of_in(const bk_quotient *f, uint64_t b, const uint64_t *bp, bool bmi2)
{
    unsigned o = off_byte_in(f, b, bp);
    return BK_LIKELY(o < QF_OFF_SAT) ? o : bk__qf_off_slow(f, b, bmi2);
}
BK_INLINE uint64_t off_of(const bk_quotient *f, uint64_t b, bool bmi2) { return off_of_in(f, b, blk(f, b), bmi2); }
BK_INLINE uint64_t occ_word(const bk_quotient *f, uint64_t b) { return blk(f, b)[0]; }
BK_INLINE uint64_t rend_word(const bk_quotient *f, uint64_t b) { return blk(f, b)[1]; }
BK_INLINE bool is_occ(const bk_quotient *f, uint64_t i) { return (blk(f, i >> 6)[0] >> (i & 63)) & 1; }
BK_INLINE bool is_rend(const bk_quotient *f, uint64_t i) { return (blk(f, i >> 6)[1] >> (i & 63)) & 1; }
BK_INLINE void set_bit(uint64_t *w, unsigned j, bool v)
{
    *w = (*w & ~(UINT64_C(1) << j)) | ((uint64_t)v << j);
}
BK_INLINE void set_occ(bk_quotient *f, uint64_t i, bool v) { set_bit(&blk(f, i >> 6)[0], i & 63, v); }
BK_INLINE void set_rend(bk_quotient *f, uint64_t i, bool v) { set_bit(&blk(f, i >> 6)[1], i & 63, v); }

BK_INLINE uint64_t get_slot(const bk_quotient *f, uint64_t i)
{
    const uint64_t *rw = blk(f, i >> 6) + 2;
    uint64_t bit = (i & 63) * f->rbits;
    unsigned sh = (unsigned)(bit & 63);
    uint64_t v = rw[bit >> 6] >> sh;
    if (sh + f->rbits > 64) v |= rw[(bit >> 6) + 1] << (64 - sh);
    return v & f->rmask;
}
BK_INLINE void put_slot(bk_quotient *f, uint64_t i, uint64_t v)
{
    uint64_t *rw = blk(f, i >> 6) + 2;
    uint64_t bit = (i & 63) * f->rbits;
    unsigned sh = (unsigned)(bit & 63);
    uint64_t *w = &rw[bit >> 6];
    *w = (*w & ~(f->rmask << sh)) | (v << sh);
    if (sh + f->rbits > 64) {
        unsigned lo = 64 - sh;
        w[1] = (w[1] & ~(f->rmask >> lo)) | (v >> lo);
    }
}

/* ---- rank and select ---- */

/* Position of the d-th (d >= 1) run end at or after position p; QF_NONE if there is none. */
BK_INLINE uint64_t select_from(const bk_quotient *f, uint64_t p, uint64_t d, bool bmi2)
{
    uint64_t b = p >> 6;
    if (b >= f->nblocks) return QF_NONE;
    uint64_t w = rend_word(f, b) & (~UINT64_C(0) << (p & 63));
    for (;;) {
        unsigned c = popc(w, bmi2);
        if (d <= c) return (b << 6) + select64(w, (unsigned)(d - 1), bmi2);
        d -= c;
        if (++b >= f->nblocks) return QF_NONE;
        w = rend_word(f, b);
    }
}

/* The offset of block b > a from oa, block a's (true) offset: E_b, the run end of the last occupied
 * quotient <= 64 b, is the d-th run end after E_a = 64 a + oa, d the occupied quotients in
 * (64 a, 64 b] (their runs come right after E_a's; a run end at or before 64 a when oa is 0 is an
 * earlier quotient's); with none, E_b is E_a. */
BK_INLINE uint64_t off_from(const bk_quotient *f, uint64_t a, uint64_t oa, uint64_t b, bool bmi2)
{
    uint64_t d = popc(occ_word(f, a) & ~UINT64_C(1), bmi2) + (occ_word(f, b) & 1);
    for (uint64_t k = a + 1; k < b; k++) d += popc(occ_word(f, k), bmi2);
    const uint64_t span = (b - a) << 6;
    if (d == 0) return oa > span ? oa - span : 0;
    uint64_t e = select_from(f, (a << 6) + oa + 1, d, bmi2);
    return e != QF_NONE && e > (b << 6) ? e - (b << 6) : 0;
}
/* The offset of block b >= 1 from po, block b - 1's. */
BK_INLINE uint64_t off_next(const bk_quotient *f, uint64_t b, uint64_t po, bool bmi2)
{
    return off_from(f, b - 1, po, b, bmi2);
}
/* The offset of block 0: the end of quotient 0's run, when it has one. */
BK_INLINE uint64_t off_first(const bk_quotient *f, bool bmi2)
{
    if (!(occ_word(f, 0) & 1)) return 0;
    uint64_t e = select_from(f, 0, 1, bmi2);
    return e == QF_NONE ? 0 : e;
}

/* The run end of the last occupied quotient <= i (bp: its block, blk(f, i / 64)): exact whenever it is >= i (slot i is then in use),
 * otherwise some value < i (as a signed number: -1 when nothing precedes). */
BK_INLINE int64_t run_end_le_in(const bk_quotient *f, uint64_t i, const uint64_t *bp, bool bmi2)
{
    uint64_t b = i >> 6;
    unsigned j = (unsigned)(i & 63);
    uint64_t off = off_of_in(f, b, bp, bmi2);
    uint64_t below = j == 63 ? ~UINT64_C(0) : (UINT64_C(2) << j) - 1;
    unsigned d = popc(bp[0] & below & ~UINT64_C(1), bmi2);
    if (d == 0) {
        if (off == 0 && !(bp[1] & 1)) return (int64_t)(b << 6) - 1;
        return (int64_t)((b << 6) + off);
    }
    uint64_t e = select_from(f, (b << 6) + off + 1, d, bmi2);
    return e == QF_NONE ? (int64_t)f->xslots : (int64_t)e;
}
/* The same, bp being block i / 64 (blk). */
BK_INLINE int64_t run_end_le(const bk_quotient *f, uint64_t i, bool bmi2) { return run_end_le_in(f, i, blk(f, i >> 6), bmi2); }

/* Bits 0..j of a word (j < 64). */
BK_INLINE uint64_t bits_upto(unsigned j) { return ~UINT64_C(0) >> (63 - j); }

/* First unused slot at or after p (xslots when none). In block b the slots up to E = 64 b + off are
 * in use when off > 0 (E = 64 b when off is 0 and slot 64 b ends a run, else nothing is); a slot
 * 64 b + j past E is in use iff the quotients in (64 b, 64 b + j] outnumber the run ends in (E, 64 b + j)
 * (those runs come after E, in quotient order). When D of them are pending, all are over by the D-th
 * run end at or after the slot: the search goes on right after it, or at the next block, whose offset
 * covers whatever of them crosses it. */
BK_INLINE uint64_t first_free(const bk_quotient *f, uint64_t p, bool bmi2)
{
    const uint64_t stride = 2 + f->rbits;
    uint64_t b = p >> 6;
    unsigned j = (unsigned)(p & 63);
    if (b >= f->nblocks) return f->xslots;
    const uint64_t *bp = blk(f, b);
    uint64_t ka = QF_NONE, ko = 0; /* the last block passed and its offset */
    for (;;) {
        /* a saturated offset from the block passed last when there is one (a walk over the blocks
         * between, which the search passes anyway), else from the blocks before */
        uint64_t off = off_byte_in(f, b, bp);
        if (BK_UNLIKELY(off == QF_OFF_SAT))
            off = f->sat ? f->sat[b] : ka != QF_NONE ? off_from(f, ka, ko, b, bmi2) : bk__qf_off_slow(f, b, bmi2);
        ka = b;
        ko = off;
        bool e0 = off || (bp[1] & 1); /* quotients <= 64 b have slots here, up to 64 b + off */
        if (e0 && off >= j) {
            if (off >= 63) { /* they cover the block: on right past them */
                uint64_t np = (b << 6) + off + 1;
                if (np >= f->xslots) return f->xslots;
                b = np >> 6;
                j = (unsigned)(np & 63);
                bp = blk(f, b);
                continue;
            }
            j = (unsigned)off + 1;
        }
        /* d0: the runs pending at slot 64 b + j (their quotients are <= it, their ends not before it) */
        uint64_t ends = bp[1] & (~UINT64_C(0) << (off + e0)) & ((UINT64_C(1) << j) - 1);
        const unsigned d0 = popc(bp[0] & ~UINT64_C(1) & bits_upto(j), bmi2) - popc(ends, bmi2);
        if (d0 == 0) return (b << 6) + j;
        /* slots j .. e, the d-th run end from j on, are in use; at e + 1 the quotients in (j, e + 1]
         * are pending too, and it is free when there are none */
        const uint64_t ends_from = bp[1] & (~UINT64_C(0) << j), quots_after = bp[0] & ~bits_upto(j);
        for (unsigned d = d0;;) {
            unsigned e = select_or_64(ends_from, d - 1, bmi2);
            if (e >= 63) break;
            unsigned d2 = d0 + popc(quots_after & bits_upto(e + 1), bmi2);
            if (d2 == d) return (b << 6) + e + 1;
            d = d2;
        }
        /* the next block (an offsets word before it when it starts a group), whose offset covers the
         * runs that cross into it */
        bp += stride + ((b & 7) == 7);
        b++;
        j = 0;
        if (b >= f->nblocks) return f->xslots;
    }
}

/* Start of the run that ends at e and belongs to quotient q (no run end in [start, e)). */
BK_INLINE uint64_t run_start(const bk_quotient *f, uint64_t q, uint64_t e)
{
    if (e == q) return q;
    /* the highest run end in [q, e - 1] */
    uint64_t p = e - 1;
    uint64_t b = p >> 6;
    uint64_t w = rend_word(f, b) & ((p & 63) == 63 ? ~UINT64_C(0) : (UINT64_C(2) << (p & 63)) - 1);
    for (;;) {
        if (w) {
            uint64_t pos = (b << 6) + 63 - (uint64_t)__builtin_clzll(w);
            return pos + 1 > q ? pos + 1 : q;
        }
        if (b == 0 || ((b - 1) << 6) + 63 < q) return q;
        b--;
        w = rend_word(f, b);
    }
}

/* Parse the entry starting at slot i of a run ending at e: its remainder, count and length in
 * slots. Returns 0 for a malformed entry (only possible in unchecked data). */
BK_INLINE unsigned parse(const bk_quotient *f, uint64_t i, uint64_t e, uint64_t *x, uint64_t *c)
{
    uint64_t v = get_slot(f, i);
    *x = v;
    *c = 1;
    if (i == e) return 1;
    uint64_t y = get_slot(f, i + 1);
    if (y > v) return 1;
    if (y == v) {
        *c = 2;
        return 2;
    }
    if (y != 0) return 0;
    uint64_t n = 0;
    bool sat = false;
    for (uint64_t j = i + 2; j <= e; j++) {
        uint64_t z = get_slot(f, j);
        if (z == v) {
            if (j - i + 1 > QF_ENC_MAX) return 0;
            *c = sat || n > UINT64_MAX - 3 ? UINT64_MAX : n + 3;
            return (unsigned)(j - i + 1);
        }
        uint64_t d = z < v ? z : z - 1;
        if (n > (UINT64_MAX - d) / f->rmask) sat = true;
        else n = n * f->rmask + d;
    }
    return 0;
}

/* ---- hashing to (quotient, remainder) ---- */

BK_INLINE uint64_t remap(uint64_t x) { return x ? x : 1; }
/* The fingerprint is the top bits of h x S: F = floor(h S / 2^(64 - r)), quotient F >> r (that is
 * floor(h S / 2^64)), remainder the low r bits. It keeps the order of the hashes, so runs,
 * enumeration, merge and doubling work for any S; for S = 2^q it is h >> (64 - q - r), the 1.0 rule. */
BK_INLINE uint64_t fp_of_hash(const bk_quotient *f, uint64_t h)
{
    return (uint64_t)(((bk__u128)h * f->nslots) >> (64 - f->rbits));
}
BK_INLINE void split(const bk_quotient *f, uint64_t h, uint64_t *q, uint64_t *x)
{
    uint64_t fp = fp_of_hash(f, h);
    *q = fp >> f->rbits;
    *x = remap(fp & f->rmask);
}

/* ---- shared by the three sources (quotient.c) ---- */

/* Next occupied quotient at or after i; QF_NONE when none. */
BK_HIDDEN uint64_t bk__qf_next_occ(const bk_quotient *f, uint64_t i);
/* Recompute the offsets of blocks lo..hi. */
BK_HIDDEN void bk__qf_fix_offsets(bk_quotient *f, uint64_t lo, uint64_t hi, bool bmi2);
/* Slots of an entry with count c (digit base `base`), and writing one at slot pos. */
BK_HIDDEN unsigned bk__qf_enc_len(uint64_t c, uint64_t base);
BK_HIDDEN void bk__qf_enc_write(bk_quotient *f, uint64_t pos, uint64_t x, uint64_t c);

typedef struct qf_ops {
    uint64_t (*count)(const bk_quotient *f, uint64_t q, uint64_t x);
    bk_status (*insert)(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c);
    bk_status (*remove)(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c);
    size_t (*contains_hashes)(const bk_quotient *f, const uint64_t *h, size_t n, uint8_t *res);
} qf_ops;
/* The path's operations (portable or BMI2). */
BK_HIDDEN const qf_ops *bk__qf_ops(const bk_quotient *f);
/* Whether path p runs on BMI2 here. */
BK_HIDDEN bool bk__qf_resolve_path(bk_quotient_path p);
/* A zeroed filter of `slots` home slots of rb bits (words allocated when alloc); layout10: the 1.0
 * layout (slots a power of two, the 1.0 rule's spare slots); xslots: the physical slots (0: the rule's,
 * else a multiple of 128 the caller checked). */
BK_HIDDEN bk_status bk__qf_alloc(const bk_allocator *a, uint64_t slots, uint32_t rb, double ml, uint64_t seed,
                                 bool layout10, uint64_t xslots, bool alloc, bk_quotient **out);
/* Physical slots for S home slots: the 1.0 rule, and the rule of later filters (smaller below full
 * load). */
BK_HIDDEN uint64_t bk__qf_xslots(uint64_t slots, double max_load, bool layout10);
/* The geometry of `slots` home slots of rb bits in the layout of later filters (the rule's physical
 * slots) at load limit max_load, its fpr and bits per key those of n keys. Errors: BK_ETOOBIG. */
BK_HIDDEN bk_status bk__qf_geometry(uint64_t slots, uint32_t rb, double max_load, uint64_t n,
                                    bk_quotient_geometry *g);
/* Move the contents of nf (built) into f, keeping f's identity; nf is freed (quotient_rebuild.c). */
BK_HIDDEN void bk__qf_adopt(bk_quotient *f, bk_quotient *nf);

/* The expanding filter's operations (quotient_expand.c), which the quotient filter's calls hand an
 * expanding filter (f->xq) to. */
BK_HIDDEN bk_status bk__xq_add(bk_quotient *f, uint64_t h, uint64_t count);
BK_HIDDEN uint64_t bk__xq_count(const bk_quotient *f, uint64_t h, bool any);
BK_HIDDEN size_t bk__xq_contains_hashes(const bk_quotient *f, const uint64_t *h, size_t n, uint8_t *res);
BK_HIDDEN void bk__xq_stats(const bk_quotient *f, bk_stats *out);
BK_HIDDEN double bk__xq_grown_fpr(const bk_quotient *f, uint32_t doublings);

#endif
