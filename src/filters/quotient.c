/* Quotient filter: rank-and-select layout (occupied / run-end words and offsets per 64 slots) with
 * variable-length counters in the slots. Layout and encoding are described in quotient.h and
 * docs/FORMAT.md. */
#include <math.h>
#include <stdlib.h>
#include "internal.h"
#include "testing.h"
#include "simd.h"
#include "bloomkit/quotient.h"
#include "bloomkit/filter.h"

/*
 * The slot array: groups of two blocks of 64 slots. A group is one word holding both blocks' 32-bit
 * offsets (block 2g in the low half), then for each block: its occupied word, its run-end word and r
 * words of remainders (slot j of the block at bits j*r .. j*r + r - 1 of those words, little-endian).
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
    uint32_t qbits, rbits;
    uint32_t group_words; /* 1 + 2 (2 + r) */
    uint64_t rmask;       /* 2^r - 1, also the counters' digit base */
    uint64_t nslots;      /* 2^q */
    uint64_t xslots;      /* physical slots: multiple of 128 */
    uint64_t nblocks;     /* xslots / 64 */
    uint64_t max_used;    /* floor(max_load * 2^q) */
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
};

#define QF_ENC_MAX 48 /* slots of the longest entry: 3 + 41 base-3 digits of 2^64 */
#define QF_NONE UINT64_MAX

/* ---- word primitives: portable and BMI2 ---- */

BK_INLINE unsigned popc_portable(uint64_t x)
{
    x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
    return (unsigned)((x * UINT64_C(0x0101010101010101)) >> 56);
}

/* Position of the (k+1)-th set bit of w (k < popcount(w)): skip whole bytes by their popcounts,
 * then clear the lowest bits of the byte that holds it. */
BK_INLINE unsigned select_portable(uint64_t w, unsigned k)
{
    unsigned pos = 0;
    for (;;) {
        unsigned c = popc_portable(w & 0xff);
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
 * when the CPU has BMI2 (and so POPCNT). */
BK_INLINE uint64_t pdep_asm(uint64_t src, uint64_t mask)
{
    uint64_t r;
    __asm__("pdepq %2, %1, %0" : "=r"(r) : "r"(src), "rm"(mask));
    return r;
}
BK_INLINE unsigned popc_asm(uint64_t x)
{
    uint64_t r;
    __asm__("popcntq %1, %0" : "=r"(r) : "rm"(x));
    return (unsigned)r;
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

BK_INLINE unsigned popc(uint64_t x, bool bmi2)
{
#if QF_HAVE_BMI2
    if (bmi2) return popc_asm(x);
#endif
    (void)bmi2;
    return popc_portable(x);
}

BK_INLINE unsigned select64(uint64_t w, unsigned k, bool bmi2)
{
#if QF_HAVE_BMI2
    if (bmi2) return tzcnt_asm(pdep_asm(UINT64_C(1) << k, w));
#endif
    (void)bmi2;
    return select_portable(w, k);
}

/* ---- layout access ---- */

BK_INLINE uint64_t *blk(const bk_quotient *f, uint64_t b)
{
    return f->words + (b >> 1) * f->group_words + 1 + (b & 1) * (2 + f->rbits);
}
BK_INLINE uint64_t off_get(const bk_quotient *f, uint64_t b)
{
    return (f->words[(b >> 1) * f->group_words] >> ((b & 1) * 32)) & 0xffffffffu;
}
BK_INLINE void off_set(bk_quotient *f, uint64_t b, uint64_t v)
{
    uint64_t *w = &f->words[(b >> 1) * f->group_words];
    unsigned sh = (unsigned)(b & 1) * 32;
    *w = (*w & ~(UINT64_C(0xffffffff) << sh)) | (v << sh);
}
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

/* The run end of the last occupied quotient <= i: exact whenever it is >= i (slot i is then in use),
 * otherwise some value < i (as a signed number: -1 when nothing precedes). */
BK_INLINE int64_t run_end_le(const bk_quotient *f, uint64_t i, bool bmi2)
{
    uint64_t b = i >> 6;
    unsigned j = (unsigned)(i & 63);
    const uint64_t *bp = blk(f, b);
    uint64_t off = off_get(f, b);
    uint64_t below = j == 63 ? ~UINT64_C(0) : (UINT64_C(2) << j) - 1;
    unsigned d = popc(bp[0] & below & ~UINT64_C(1), bmi2);
    if (d == 0) {
        if (off == 0 && !(bp[1] & 1)) return (int64_t)(b << 6) - 1;
        return (int64_t)((b << 6) + off);
    }
    uint64_t e = select_from(f, (b << 6) + off + 1, d, bmi2);
    return e == QF_NONE ? (int64_t)f->xslots : (int64_t)e;
}

/* First unused slot at or after p (xslots when none). */
BK_INLINE uint64_t first_free(const bk_quotient *f, uint64_t p, bool bmi2)
{
    while (p < f->xslots) {
        int64_t e = run_end_le(f, p, bmi2);
        if (e < (int64_t)p) return p;
        p = (uint64_t)e + 1;
    }
    return f->xslots;
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

/* Next occupied quotient at or after i; QF_NONE when none. */
static uint64_t next_occ(const bk_quotient *f, uint64_t i)
{
    if (i >= f->nslots) return QF_NONE;
    uint64_t b = i >> 6;
    uint64_t w = occ_word(f, b) & (~UINT64_C(0) << (i & 63));
    for (;;) {
        if (w) {
            uint64_t q = (b << 6) + (uint64_t)__builtin_ctzll(w);
            return q < f->nslots ? q : QF_NONE;
        }
        if (++b >= f->nblocks || (b << 6) >= f->nslots) return QF_NONE;
        w = occ_word(f, b);
    }
}

/* Recompute the offsets of blocks lo..hi (the offset of block lo - 1 must be right). */
static void fix_offsets(bk_quotient *f, uint64_t lo, uint64_t hi, bool bmi2)
{
    if (hi >= f->nblocks) hi = f->nblocks - 1;
    for (uint64_t b = lo; b <= hi; b++) {
        uint64_t o = 0;
        if (b == 0) {
            if (occ_word(f, 0) & 1) {
                uint64_t e = select_from(f, 0, 1, bmi2);
                o = e == QF_NONE ? 0 : e;
            }
        } else {
            uint64_t po = off_get(f, b - 1);
            unsigned d = popc(occ_word(f, b - 1) & ~UINT64_C(1), bmi2) + (unsigned)(occ_word(f, b) & 1);
            if (d == 0) {
                o = po > 64 ? po - 64 : 0;
            } else {
                uint64_t e = select_from(f, ((b - 1) << 6) + po + 1, d, bmi2);
                o = e != QF_NONE && e > (b << 6) ? e - (b << 6) : 0;
            }
        }
        off_set(f, b, o);
    }
}

/* ---- counters ---- */

static unsigned enc_len(uint64_t c, uint64_t base)
{
    if (c <= 2) return (unsigned)c;
    unsigned n = 3;
    for (uint64_t v = c - 3; v; v /= base) n++;
    return n;
}

static void enc_write(bk_quotient *f, uint64_t pos, uint64_t x, uint64_t c)
{
    put_slot(f, pos, x);
    if (c == 1) return;
    if (c == 2) {
        put_slot(f, pos + 1, x);
        return;
    }
    uint64_t dig[QF_ENC_MAX];
    unsigned nd = 0;
    for (uint64_t v = c - 3; v; v /= f->rmask) dig[nd++] = v % f->rmask;
    put_slot(f, pos + 1, 0);
    for (unsigned k = 0; k < nd; k++) {
        uint64_t d = dig[nd - 1 - k];
        put_slot(f, pos + 2 + k, d < x ? d : d + 1);
    }
    put_slot(f, pos + 2 + nd, x);
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
BK_INLINE void split(const bk_quotient *f, uint64_t h, uint64_t *q, uint64_t *x)
{
    uint64_t fp = h >> (64 - f->qbits - f->rbits);
    *q = fp >> f->rbits;
    *x = remap(fp & f->rmask);
}

/* ---- queries ---- */

/* Count of (q, x); 0 when absent. */
BK_INLINE uint64_t qf_count(const bk_quotient *f, uint64_t q, uint64_t x, bool bmi2)
{
    if (!is_occ(f, q)) return 0;
    int64_t e64 = run_end_le(f, q, bmi2);
    if (e64 < (int64_t)q || e64 >= (int64_t)f->xslots) return 0;
    uint64_t e = (uint64_t)e64;
    uint64_t i = run_start(f, q, e);
    while (i <= e) {
        uint64_t v, c;
        unsigned len = parse(f, i, e, &v, &c);
        if (v == x) return c;
        if (v > x || len == 0) return 0;
        i += len;
    }
    return 0;
}

/* ---- updates ---- */

/* Make `delta` empty slots at pos, shifting what follows right into the next free slots. Checks the
 * room first: BK_EFULL and nothing changed when there is none. *last receives the highest slot
 * touched. Offsets are left for fix_offsets. */
static bk_status make_room(bk_quotient *f, uint64_t pos, unsigned delta, uint64_t *last, bool bmi2)
{
    uint64_t fr[QF_ENC_MAX + 1];
    if (f->used + delta > f->max_used) return BK_EFULL;
    uint64_t p = pos;
    for (unsigned k = 1; k <= delta; k++) {
        fr[k] = first_free(f, p, bmi2);
        if (fr[k] >= f->xslots) return BK_EFULL;
        p = fr[k] + 1;
    }
    fr[0] = pos - 1; /* wraps for pos 0: only used as fr[0] + 1 */
    for (unsigned k = delta; k >= 1; k--) {
        uint64_t shift = delta - k + 1;
        for (uint64_t j = fr[k]; j-- > fr[k - 1] + 1;) {
            put_slot(f, j + shift, get_slot(f, j));
            set_rend(f, j + shift, is_rend(f, j));
        }
    }
    for (unsigned k = 0; k < delta; k++) {
        put_slot(f, pos + k, 0);
        set_rend(f, pos + k, false);
    }
    f->used += delta;
    *last = fr[delta];
    return BK_OK;
}

static void move_left(bk_quotient *f, uint64_t a, uint64_t b, uint64_t sh)
{
    for (uint64_t j = a; j <= b; j++) {
        put_slot(f, j - sh, get_slot(f, j));
        set_rend(f, j - sh, is_rend(f, j));
    }
}

static void clear_slots(bk_quotient *f, uint64_t a, uint64_t b) /* [a, b] */
{
    for (uint64_t j = a; j <= b; j++) {
        put_slot(f, j, 0);
        set_rend(f, j, false);
    }
}

/* Remove slots [p, p + delta) of the run of quotient q, which ended at e before (e >= p + delta - 1);
 * the rest of that run and the following runs of its cluster move left, none before its quotient.
 * The caller has set the run-end bits of the removed entry's run as they must be after the removal
 * (inside [p - 1 .. ]), and the occupied bit. Returns the highest slot touched. */
static uint64_t remove_slots(bk_quotient *f, uint64_t q, uint64_t p, uint64_t delta, uint64_t e, bool bmi2)
{
    if (p + delta <= e) move_left(f, p + delta, e, delta);
    uint64_t new_end = e - delta, old_end = e, prev = q;
    for (;;) {
        uint64_t q2 = next_occ(f, prev + 1);
        if (q2 == QF_NONE || q2 > old_end + 1 || old_end + 1 >= f->xslots) break;
        uint64_t e2 = select_from(f, old_end + 1, 1, bmi2);
        if (e2 == QF_NONE) break;
        uint64_t ns = q2 > new_end + 1 ? q2 : new_end + 1;
        uint64_t sh = old_end + 1 - ns;
        if (ns > new_end + 1) clear_slots(f, new_end + 1, ns - 1);
        if (sh == 0) {
            new_end = old_end;
            break;
        }
        move_left(f, old_end + 1, e2, sh);
        new_end = e2 - sh;
        old_end = e2;
        prev = q2;
    }
    if (old_end + 1 > new_end + 1) clear_slots(f, new_end + 1, old_end); /* new_end + 1 may wrap to 0 */
    f->used -= delta;
    return old_end;
}

BK_INLINE uint64_t first_block(uint64_t q) { return (q + 63) >> 6; }

/* Add c occurrences of (q, x). */
BK_INLINE bk_status qf_insert(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c, bool bmi2)
{
    uint64_t last = 0;
    bk_status s;
    if (!is_occ(f, q)) {
        unsigned len = enc_len(c, f->rmask);
        uint64_t st = q;
        if (q > 0) {
            int64_t pe = run_end_le(f, q - 1, bmi2);
            if (pe >= (int64_t)q) st = (uint64_t)pe + 1;
        }
        if (st >= f->xslots) return BK_EFULL;
        if ((s = make_room(f, st, len, &last, bmi2)) != BK_OK) return s;
        enc_write(f, st, x, c);
        set_rend(f, st + len - 1, true);
        set_occ(f, q, true);
        f->distinct++;
    } else {
        int64_t e64 = run_end_le(f, q, bmi2);
        if (e64 < (int64_t)q || e64 >= (int64_t)f->xslots) return BK_ECORRUPT;
        uint64_t e = (uint64_t)e64, i = run_start(f, q, e);
        uint64_t v = 0, old = 0;
        unsigned olen = 0;
        while (i <= e) {
            olen = parse(f, i, e, &v, &old);
            if (olen == 0) return BK_ECORRUPT;
            if (v >= x) break;
            i += olen;
        }
        if (i <= e && v == x) {
            uint64_t nc = old > UINT64_MAX - c ? UINT64_MAX : old + c;
            unsigned nlen = enc_len(nc, f->rmask);
            if (nlen > olen) {
                if ((s = make_room(f, i + olen, nlen - olen, &last, bmi2)) != BK_OK) return s;
                if (i + olen - 1 == e) {
                    set_rend(f, e, false);
                    set_rend(f, i + nlen - 1, true);
                }
            }
            enc_write(f, i, x, nc);
            f->total = f->total > UINT64_MAX - c ? UINT64_MAX : f->total + c;
            if (nlen > olen) fix_offsets(f, first_block(q), last >> 6, bmi2);
            return BK_OK;
        }
        /* a new entry at i (before a larger remainder, or after the run's end) */
        unsigned len = enc_len(c, f->rmask);
        if ((s = make_room(f, i, len, &last, bmi2)) != BK_OK) return s;
        enc_write(f, i, x, c);
        if (i == e + 1) {
            set_rend(f, e, false);
            set_rend(f, i + len - 1, true);
        }
        f->distinct++;
    }
    f->total = f->total > UINT64_MAX - c ? UINT64_MAX : f->total + c;
    fix_offsets(f, first_block(q), last >> 6, bmi2);
    return BK_OK;
}

/* Remove c occurrences of (q, x): BK_ENOTFOUND when fewer are present. */
BK_INLINE bk_status qf_delete(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c, bool bmi2)
{
    if (!is_occ(f, q)) return BK_ENOTFOUND;
    int64_t e64 = run_end_le(f, q, bmi2);
    if (e64 < (int64_t)q || e64 >= (int64_t)f->xslots) return BK_ECORRUPT;
    uint64_t e = (uint64_t)e64, s = run_start(f, q, e), i = s;
    uint64_t v = 0, old = 0;
    unsigned olen = 0;
    while (i <= e) {
        olen = parse(f, i, e, &v, &old);
        if (olen == 0) return BK_ECORRUPT;
        if (v >= x) break;
        i += olen;
    }
    if (i > e || v != x || old < c) return BK_ENOTFOUND;
    if (old == UINT64_MAX) return BK_OK; /* saturated: sticky */
    uint64_t nc = old - c;
    unsigned nlen = nc ? enc_len(nc, f->rmask) : 0;
    bool last_entry = i + olen - 1 == e;
    if (nc) enc_write(f, i, x, nc);
    if (nlen < olen) {
        if (last_entry) {
            set_rend(f, e, false);
            if (nlen) set_rend(f, i + nlen - 1, true);
            else if (i > s) set_rend(f, i - 1, true);
            else set_occ(f, q, false);
        }
        uint64_t lastpos = remove_slots(f, q, i + nlen, olen - nlen, e, bmi2);
        fix_offsets(f, first_block(q), lastpos >> 6, bmi2);
    }
    if (!nc) f->distinct--;
    f->total = f->total == UINT64_MAX ? UINT64_MAX : f->total - c;
    return BK_OK;
}

/* ---- the two paths ---- */

typedef struct qf_ops {
    uint64_t (*count)(const bk_quotient *f, uint64_t q, uint64_t x);
    bk_status (*insert)(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c);
    bk_status (*remove)(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c);
    size_t (*contains_hashes)(const bk_quotient *f, const uint64_t *h, size_t n, uint8_t *res);
} qf_ops;

#define QF_BATCH 32
#define QF_PREFETCH_AHEAD 8

BK_INLINE size_t contains_hashes_impl(const bk_quotient *f, const uint64_t *h, size_t n, uint8_t *res, bool bmi2)
{
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + QF_PREFETCH_AHEAD < n) {
            uint64_t pq, px;
            split(f, h[i + QF_PREFETCH_AHEAD], &pq, &px);
            const uint64_t *bp = blk(f, pq >> 6);
            BK_PREFETCH(bp);
            BK_PREFETCH(&f->words[((pq >> 6) >> 1) * f->group_words]);
        }
        uint64_t q, x;
        split(f, h[i], &q, &x);
        bool hit = qf_count(f, q, x, bmi2) != 0;
        hits += hit;
        if (res) res[i] = hit;
    }
    return hits;
}

#define QF_PATH(sfx, B)                                                                                 \
    static uint64_t count_##sfx(const bk_quotient *f, uint64_t q, uint64_t x) { return qf_count(f, q, x, B); } \
    static bk_status insert_##sfx(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c)                   \
    {                                                                                                   \
        return qf_insert(f, q, x, c, B);                                                                \
    }                                                                                                   \
    static bk_status remove_##sfx(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c)                   \
    {                                                                                                   \
        return qf_delete(f, q, x, c, B);                                                                \
    }                                                                                                   \
    static size_t contains_hashes_##sfx(const bk_quotient *f, const uint64_t *h, size_t n, uint8_t *r)  \
    {                                                                                                   \
        return contains_hashes_impl(f, h, n, r, B);                                                     \
    }                                                                                                   \
    static const qf_ops ops_##sfx = { count_##sfx, insert_##sfx, remove_##sfx, contains_hashes_##sfx };

QF_PATH(portable, false)
#if QF_HAVE_BMI2
QF_PATH(bmi2, true)
#endif

BK_INLINE const qf_ops *ops_of(const bk_quotient *f)
{
#if QF_HAVE_BMI2
    if (f->bmi2) return &ops_bmi2;
#endif
    (void)f;
    return &ops_portable;
}

bool bk_quotient_bmi2_available(void)
{
#if QF_HAVE_BMI2
    __builtin_cpu_init();
    return __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt");
#else
    return false;
#endif
}

/* AUTO: BMI2 when the CPU has it and the SIMD cap (BK_SIMD, bk_simd_force) is not "scalar". */
static bool resolve_path(bk_quotient_path p)
{
    if (p == BK_QUOTIENT_PORTABLE || !bk_quotient_bmi2_available()) return false;
    if (p == BK_QUOTIENT_BMI2) return true;
    return bk__simd_resolve(0) != 1; /* BK_SIMD_SCALAR */
}

/* ---- sizing ---- */

double bk_quotient_fpr(uint64_t d, uint32_t qbits, uint32_t rbits)
{
    if (qbits > 63 || rbits == 0 || rbits > 63) return NAN;
    double r2 = ldexp(1.0, (int)rbits);
    double per = (r2 + 2.0) / (r2 * r2);
    return -expm1(-ldexp((double)d, -(int)qbits) * per);
}

static uint64_t spare_slots(uint64_t nslots)
{
    uint64_t spare = (uint64_t)ceil(10.0 * sqrt((double)nslots));
    if (spare < 64) spare = 64;
    uint64_t x = nslots + spare;
    return (x + 127) / 128 * 128;
}

static bk_status geometry_of(uint32_t qb, uint32_t rb, double max_load, uint64_t n, bk_quotient_geometry *g)
{
    if (qb < BK_QUOTIENT_MIN_QBITS || qb > BK_QUOTIENT_MAX_QBITS) return BK_ETOOBIG;
    if (rb < BK_QUOTIENT_MIN_RBITS || rb > BK_QUOTIENT_MAX_RBITS) return BK_ETOOBIG;
    g->quotient_bits = qb;
    g->remainder_bits = rb;
    g->slots = UINT64_C(1) << qb;
    g->physical_slots = spare_slots(g->slots);
    g->max_slots_used = (uint64_t)floor(max_load * (double)g->slots);
    uint64_t groups = g->physical_slots / 128;
    uint64_t bytes = groups * (1 + 2 * (2 + (uint64_t)rb)) * 8;
    if (bytes > BK_MAX_FILTER_BYTES || bytes > SIZE_MAX / 2) return BK_ETOOBIG;
    g->bytes = bytes;
    g->fpr = bk_quotient_fpr(n, qb, rb);
    g->bits_per_key = n ? (double)bytes * 8.0 / (double)n : 0;
    return BK_OK;
}

static bool bad_opts(const bk_quotient_options *o)
{
    if (!o) return false;
    if (o->max_load != 0 && !(o->max_load > 0 && o->max_load <= 1)) return true;
    if (o->remainder_bits && (o->remainder_bits < BK_QUOTIENT_MIN_RBITS || o->remainder_bits > BK_QUOTIENT_MAX_RBITS))
        return true;
    if (o->path < BK_QUOTIENT_AUTO || o->path > BK_QUOTIENT_BMI2) return true;
    return false;
}

static double load_of(const bk_quotient_options *o)
{
    return o && o->max_load ? o->max_load : BK_QUOTIENT_DEFAULT_MAX_LOAD;
}

bk_status bk_quotient_size(uint64_t n, double p, const bk_quotient_options *user_opts, bk_quotient_geometry *out)
{
    bk_quotient_options o_;
    if (bk__options_read(&o_, sizeof o_, user_opts) != BK_OK) return BK_EINVAL;
    const bk_quotient_options *opts = &o_;
    if (n == 0 || !(p > 0 && p < 1) || bad_opts(opts)) return BK_EINVAL;
    double ml = load_of(opts);
    double want = ceil((double)n / ml);
    if (!(want <= ldexp(1.0, BK_QUOTIENT_MAX_QBITS))) return BK_ETOOBIG;
    uint32_t qb = BK_QUOTIENT_MIN_QBITS;
    while (ldexp(1.0, (int)qb) < want) qb++;
    /* n must fit in the usable slots even after rounding max_load * 2^q down */
    while ((uint64_t)floor(ml * ldexp(1.0, (int)qb)) < n) qb++;
    if (qb > BK_QUOTIENT_MAX_QBITS) return BK_ETOOBIG;
    uint32_t rb = opts && opts->remainder_bits ? opts->remainder_bits : 0;
    if (!rb) {
        for (rb = BK_QUOTIENT_MIN_RBITS; rb <= BK_QUOTIENT_MAX_RBITS; rb++)
            if (bk_quotient_fpr(n, qb, rb) <= p) break;
        if (rb > BK_QUOTIENT_MAX_RBITS) return BK_ETOOBIG;
    }
    bk_quotient_geometry g;
    bk_status s = geometry_of(qb, rb, ml, n, &g);
    if (s == BK_OK && out) *out = g;
    return s;
}

static bk_status alloc_filter(uint32_t qb, uint32_t rb, double ml, uint64_t seed, bool alloc, bk_quotient **out)
{
    bk_quotient_geometry g;
    bk_status s = geometry_of(qb, rb, ml, 0, &g);
    if (s) return s;
    bk_quotient *f = bk__calloc(1, sizeof *f);
    if (!f) return BK_ENOMEM;
    if (alloc) {
        f->words = bk__calloc_aligned((size_t)g.bytes);
        if (!f->words) {
            bk__free(f);
            return BK_ENOMEM;
        }
        f->owns_words = true;
    }
    f->nwords = g.bytes / 8;
    f->qbits = qb;
    f->rbits = rb;
    f->group_words = 1 + 2 * (2 + rb);
    f->rmask = (UINT64_C(1) << rb) - 1;
    f->nslots = g.slots;
    f->xslots = g.physical_slots;
    f->nblocks = g.physical_slots / 64;
    f->max_used = g.max_slots_used;
    f->max_load = ml;
    f->seed = seed;
    f->capacity = g.max_slots_used;
    f->fpr_target = bk_quotient_fpr(g.max_slots_used, qb, rb);
    *out = f;
    return BK_OK;
}

bk_status bk_quotient_new_qr(uint32_t qb, uint32_t rb, const bk_quotient_options *user_opts, bk_quotient **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_quotient_options o_;
    if (bk__options_read(&o_, sizeof o_, user_opts) != BK_OK) return BK_EINVAL;
    const bk_quotient_options *opts = &o_;
    if (bad_opts(opts)) return BK_EINVAL;
    bk_quotient_path path = opts ? opts->path : BK_QUOTIENT_AUTO;
    if (path == BK_QUOTIENT_BMI2 && !bk_quotient_bmi2_available()) return BK_ENOTSUP;
    bk_status s = alloc_filter(qb, rb, load_of(opts), opts ? opts->seed : 0, true, out);
    if (s) return s;
    (*out)->path_asked = path;
    (*out)->bmi2 = resolve_path(path);
    return BK_OK;
}

bk_status bk_quotient_new(uint64_t n, double p, const bk_quotient_options *opts, bk_quotient **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_quotient_geometry g;
    bk_status s = bk_quotient_size(n, p, opts, &g);
    if (s) return s;
    if ((s = bk_quotient_new_qr(g.quotient_bits, g.remainder_bits, opts, out))) return s;
    (*out)->capacity = n;
    (*out)->fpr_target = p;
    return BK_OK;
}

void bk_quotient_free(bk_quotient *f)
{
    if (!f) return;
    if (f->owns_words) bk__free_aligned(f->words);
    bk__free(f);
}

bk_status bk_quotient_clone(const bk_quotient *f, bk_quotient **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    bk_quotient *c;
    bk_status s = alloc_filter(f->qbits, f->rbits, f->max_load, f->seed, true, &c);
    if (s) return s;
    memcpy(c->words, f->words, (size_t)f->nwords * 8);
    c->used = f->used;
    c->distinct = f->distinct;
    c->total = f->total;
    c->capacity = f->capacity;
    c->fpr_target = f->fpr_target;
    c->path_asked = f->path_asked;
    c->bmi2 = f->bmi2;
    *out = c;
    return BK_OK;
}

/* ---- public single-key operations ---- */

bk_status bk_quotient_add_count_hash(bk_quotient *f, uint64_t h, uint64_t count)
{
    if (!f || count == 0) return BK_EINVAL;
    uint64_t q, x;
    split(f, h, &q, &x);
    return ops_of(f)->insert(f, q, x, count);
}
bk_status bk_quotient_add_hash(bk_quotient *f, uint64_t h) { return bk_quotient_add_count_hash(f, h, 1); }
bk_status bk_quotient_add(bk_quotient *f, const void *key, size_t len)
{
    if (!f || (!key && len)) return BK_EINVAL;
    return bk_quotient_add_count_hash(f, bk__hash(key, len, f->seed), 1);
}

bk_status bk_quotient_remove_count_hash(bk_quotient *f, uint64_t h, uint64_t count)
{
    if (!f || count == 0) return BK_EINVAL;
    uint64_t q, x;
    split(f, h, &q, &x);
    return ops_of(f)->remove(f, q, x, count);
}
bk_status bk_quotient_remove_hash(bk_quotient *f, uint64_t h) { return bk_quotient_remove_count_hash(f, h, 1); }
bk_status bk_quotient_remove(bk_quotient *f, const void *key, size_t len)
{
    if (!f || (!key && len)) return BK_EINVAL;
    return bk_quotient_remove_count_hash(f, bk__hash(key, len, f->seed), 1);
}

uint64_t bk_quotient_count_hash(const bk_quotient *f, uint64_t h)
{
    uint64_t q, x;
    split(f, h, &q, &x);
    return ops_of(f)->count(f, q, x);
}
uint64_t bk_quotient_count(const bk_quotient *f, const void *key, size_t len)
{
    return bk_quotient_count_hash(f, bk__hash(key, len, f->seed));
}
bool bk_quotient_contains_hash(const bk_quotient *f, uint64_t h) { return bk_quotient_count_hash(f, h) != 0; }
bool bk_quotient_contains(const bk_quotient *f, const void *key, size_t len)
{
    return bk_quotient_count_hash(f, bk__hash(key, len, f->seed)) != 0;
}

bk_status bk_quotient_add_u64(bk_quotient *f, uint64_t key)
{
    if (!f) return BK_EINVAL;
    return bk_quotient_add_count_hash(f, bk__hash_u64(key, f->seed), 1);
}

bk_status bk_quotient_remove_u64(bk_quotient *f, uint64_t key)
{
    if (!f) return BK_EINVAL;
    return bk_quotient_remove_count_hash(f, bk__hash_u64(key, f->seed), 1);
}

bool bk_quotient_contains_u64(const bk_quotient *f, uint64_t key)
{
    return bk_quotient_count_hash(f, bk__hash_u64(key, f->seed)) != 0;
}

/* ---- batches ---- */

bk_status bk_quotient_add_hashes(bk_quotient *f, const uint64_t *h, size_t n, size_t *done)
{
    if (done) *done = 0;
    if (!f || (!h && n)) return BK_EINVAL;
    const qf_ops *ops = ops_of(f);
    for (size_t i = 0; i < n; i++) {
        if (i + QF_PREFETCH_AHEAD < n) {
            uint64_t pq, px;
            split(f, h[i + QF_PREFETCH_AHEAD], &pq, &px);
            BK_PREFETCH_W(blk(f, pq >> 6));
        }
        uint64_t q, x;
        split(f, h[i], &q, &x);
        bk_status s = ops->insert(f, q, x, 1);
        if (s) return s;
        if (done) *done = i + 1;
    }
    return BK_OK;
}

bk_status bk_quotient_remove_hashes(bk_quotient *f, const uint64_t *h, size_t n, size_t *done)
{
    if (done) *done = 0;
    if (!f || (!h && n)) return BK_EINVAL;
    const qf_ops *ops = ops_of(f);
    for (size_t i = 0; i < n; i++) {
        uint64_t q, x;
        split(f, h[i], &q, &x);
        bk_status s = ops->remove(f, q, x, 1);
        if (s) return s;
        if (done) *done = i + 1;
    }
    return BK_OK;
}

bk_status bk_quotient_add_many(bk_quotient *f, const void *const *keys, const size_t *lens, size_t n,
                               size_t *done)
{
    if (done) *done = 0;
    if (!f || (n && (!keys || !lens))) return BK_EINVAL;
    uint64_t hb[QF_BATCH];
    for (size_t i = 0; i < n; i += QF_BATCH) {
        size_t m = n - i < QF_BATCH ? n - i : QF_BATCH;
        for (size_t j = 0; j < m; j++) {
            if (!keys[i + j] && lens[i + j]) return BK_EINVAL;
            hb[j] = bk__hash(keys[i + j], lens[i + j], f->seed);
        }
        size_t d = 0;
        bk_status s = bk_quotient_add_hashes(f, hb, m, &d);
        if (done) *done = i + d;
        if (s) return s;
    }
    return BK_OK;
}

size_t bk_quotient_contains_hashes(const bk_quotient *f, const uint64_t *h, size_t n, uint8_t *res)
{
    return ops_of(f)->contains_hashes(f, h, n, res);
}

size_t bk_quotient_contains_many(const bk_quotient *f, const void *const *keys, const size_t *lens, size_t n,
                                 uint8_t *res)
{
    uint64_t hb[QF_BATCH];
    uint8_t rb[QF_BATCH];
    size_t hits = 0;
    const qf_ops *ops = ops_of(f);
    for (size_t i = 0; i < n; i += QF_BATCH) {
        size_t m = n - i < QF_BATCH ? n - i : QF_BATCH;
        for (size_t j = 0; j < m; j++) hb[j] = bk__hash(keys[i + j], lens[i + j], f->seed);
        hits += ops->contains_hashes(f, hb, m, res ? res + i : rb);
    }
    return hits;
}

void bk_quotient_count_hashes(const bk_quotient *f, const uint64_t *h, size_t n, uint64_t *counts)
{
    const qf_ops *ops = ops_of(f);
    for (size_t i = 0; i < n; i++) {
        uint64_t q, x;
        split(f, h[i], &q, &x);
        counts[i] = ops->count(f, q, x);
    }
}

void bk_quotient_clear(bk_quotient *f)
{
    memset(f->words, 0, (size_t)f->nwords * 8);
    f->used = f->distinct = f->total = 0;
}

/* ---- iteration (in fingerprint order, without offsets) and building by appending ---- */

typedef struct qf_iter {
    const bk_quotient *f;
    uint64_t q;   /* current quotient; QF_NONE when done */
    uint64_t i;   /* next slot */
    uint64_t e;   /* end of the current run */
} qf_iter;

static void it_start_run(qf_iter *it, uint64_t from_q, uint64_t after)
{
    const bk_quotient *f = it->f;
    it->q = next_occ(f, from_q);
    if (it->q == QF_NONE) return;
    uint64_t st = it->q > after ? it->q : after;
    it->i = st;
    it->e = select_from(f, st, 1, false);
    if (it->e == QF_NONE) it->q = QF_NONE;
}

static void it_init(qf_iter *it, const bk_quotient *f)
{
    it->f = f;
    it_start_run(it, 0, 0);
}

/* Next entry; false at the end (or at malformed data). */
static bool it_next(qf_iter *it, uint64_t *q, uint64_t *x, uint64_t *c)
{
    if (it->q == QF_NONE) return false;
    unsigned len = parse(it->f, it->i, it->e, x, c);
    if (len == 0) {
        it->q = QF_NONE;
        return false;
    }
    *q = it->q;
    it->i += len;
    if (it->i > it->e) it_start_run(it, it->q + 1, it->e + 1);
    return true;
}

typedef struct qf_builder {
    bk_quotient *f;   /* empty target, same counters as zero */
    uint64_t cursor;  /* next free slot */
    uint64_t last_q;  /* quotient of the last written run; QF_NONE at first */
    uint64_t pq, px, pc; /* pending entry (pc 0: none) */
    bk_status err;
} qf_builder;

static void b_write(qf_builder *b, uint64_t q, uint64_t x, uint64_t c)
{
    bk_quotient *f = b->f;
    unsigned len = enc_len(c, f->rmask);
    uint64_t st;
    if (q == b->last_q) {
        st = b->cursor;
        set_rend(f, st - 1, false);
    } else {
        st = q > b->cursor ? q : b->cursor;
        set_occ(f, q, true);
    }
    if (st + len > f->xslots || f->used + len > f->max_used) {
        b->err = BK_EFULL;
        return;
    }
    enc_write(f, st, x, c);
    set_rend(f, st + len - 1, true);
    b->cursor = st + len;
    b->last_q = q;
    f->used += len;
    f->distinct++;
    f->total = f->total > UINT64_MAX - c ? UINT64_MAX : f->total + c;
}

static void b_add(qf_builder *b, uint64_t q, uint64_t x, uint64_t c)
{
    if (b->err) return;
    if (b->pc && b->pq == q && b->px == x) {
        b->pc = b->pc > UINT64_MAX - c ? UINT64_MAX : b->pc + c;
        return;
    }
    if (b->pc) b_write(b, b->pq, b->px, b->pc);
    b->pq = q;
    b->px = x;
    b->pc = c;
}

static bk_status b_finish(qf_builder *b)
{
    if (!b->err && b->pc) b_write(b, b->pq, b->px, b->pc);
    if (b->err) return b->err;
    fix_offsets(b->f, 0, b->f->nblocks - 1, b->f->bmi2);
    return BK_OK;
}

/* A fingerprint of `from` bits cut to f's q + r bits, as (quotient, remainder). */
BK_INLINE void convert(const bk_quotient *f, uint64_t fp, uint32_t from, uint64_t *q, uint64_t *x)
{
    uint64_t g = fp >> (from - f->qbits - f->rbits);
    *q = g >> f->rbits;
    *x = remap(g & f->rmask);
}

/* Move the contents of `nf` (built) into f, keeping f's identity. */
static void adopt(bk_quotient *f, bk_quotient *nf)
{
    if (f->owns_words) bk__free_aligned(f->words);
    f->words = nf->words;
    f->owns_words = true;
    f->nwords = nf->nwords;
    f->qbits = nf->qbits;
    f->rbits = nf->rbits;
    f->group_words = nf->group_words;
    f->rmask = nf->rmask;
    f->nslots = nf->nslots;
    f->xslots = nf->xslots;
    f->nblocks = nf->nblocks;
    f->max_used = nf->max_used;
    f->used = nf->used;
    f->distinct = nf->distinct;
    f->total = nf->total;
    bk__free(nf);
}

bk_status bk_quotient_grow(bk_quotient *f)
{
    if (!f) return BK_EINVAL;
    if (f->qbits + 1 > BK_QUOTIENT_MAX_QBITS || f->rbits - 1 < BK_QUOTIENT_MIN_RBITS) return BK_ETOOBIG;
    bk_quotient *nf;
    bk_status s = alloc_filter(f->qbits + 1, f->rbits - 1, f->max_load, f->seed, true, &nf);
    if (s) return s;
    nf->bmi2 = f->bmi2;
    qf_builder b = { nf, 0, QF_NONE, 0, 0, 0, BK_OK };
    qf_iter it;
    it_init(&it, f);
    uint64_t q, x, c, from = f->qbits + f->rbits;
    while (it_next(&it, &q, &x, &c)) {
        uint64_t nq, nx;
        convert(nf, q << f->rbits | x, (uint32_t)from, &nq, &nx);
        b_add(&b, nq, nx, c);
    }
    if ((s = b_finish(&b)) != BK_OK) {
        bk_quotient_free(nf);
        return s;
    }
    uint64_t total = f->total;
    adopt(f, nf);
    f->total = total; /* the sum of counts is unchanged (saturated entries stay saturated) */
    if (f->capacity <= UINT64_MAX / 2) f->capacity *= 2;
    f->fpr_target = bk_quotient_fpr(f->max_used, f->qbits, f->rbits);
    return BK_OK;
}

/* Fingerprints of (sq, sr) bits convert to (q, r) when they are at least as long and either lose at
 * least one low bit (which drops the ambiguity of a stored remainder 1: it may have been 0) or keep
 * all of the remainder in the remainder (r <= sr). */
static bool convertible(uint32_t sq, uint32_t sr, uint32_t q, uint32_t r)
{
    return sq + sr >= q + r && (sq + sr > q + r || r <= sr);
}

bk_status bk_quotient_compatible(const bk_quotient *dst, const bk_quotient *src)
{
    if (!dst || !src) return BK_EINVAL;
    if (dst->seed != src->seed || !convertible(src->qbits, src->rbits, dst->qbits, dst->rbits)) return BK_EINCOMPAT;
    return BK_OK;
}

bk_status bk_quotient_merge(bk_quotient *dst, const bk_quotient *src)
{
    bk_status s = bk_quotient_compatible(dst, src);
    if (s) return s;
    bk_quotient *nf;
    if ((s = alloc_filter(dst->qbits, dst->rbits, dst->max_load, dst->seed, true, &nf))) return s;
    nf->bmi2 = dst->bmi2;
    qf_builder b = { nf, 0, QF_NONE, 0, 0, 0, BK_OK };
    qf_iter a, o;
    it_init(&a, dst);
    it_init(&o, src);
    uint32_t sbits = src->qbits + src->rbits;
    uint64_t aq, ax, ac, oq, ox, oc;
    bool ha = it_next(&a, &aq, &ax, &ac), ho = false;
    if (it_next(&o, &oq, &ox, &oc)) {
        convert(dst, oq << src->rbits | ox, sbits, &oq, &ox);
        ho = true;
    }
    while (ha || ho) {
        if (ha && (!ho || aq < oq || (aq == oq && ax <= ox))) {
            b_add(&b, aq, ax, ac);
            ha = it_next(&a, &aq, &ax, &ac);
        } else {
            b_add(&b, oq, ox, oc);
            ho = it_next(&o, &oq, &ox, &oc);
            if (ho) convert(dst, oq << src->rbits | ox, sbits, &oq, &ox);
        }
    }
    if ((s = b_finish(&b)) != BK_OK) {
        bk_quotient_free(nf);
        return s;
    }
    adopt(dst, nf);
    return BK_OK;
}

int bk_quotient_foreach(const bk_quotient *f, bk_quotient_visit_fn fn, void *ctx)
{
    qf_iter it;
    it_init(&it, f);
    uint64_t q, x, c;
    while (it_next(&it, &q, &x, &c)) {
        int r = fn(q << f->rbits | x, c, ctx);
        if (r) return r;
    }
    return 0;
}

bk_status bk_quotient_add_fingerprint(bk_quotient *f, uint64_t fp, uint32_t qbits, uint32_t rbits, uint64_t count)
{
    if (!f || count == 0 || rbits == 0 || qbits + rbits > 64) return BK_EINVAL;
    if (qbits + rbits < 64 && (fp >> (qbits + rbits))) return BK_EINVAL;
    if (!convertible(qbits, rbits, f->qbits, f->rbits)) return BK_EINCOMPAT;
    uint64_t q, x;
    convert(f, fp, qbits + rbits, &q, &x);
    return ops_of(f)->insert(f, q, x, count);
}

/* ---- statistics and accessors ---- */

void bk_quotient_stats(const bk_quotient *f, bk_stats *out)
{
    memset(out, 0, sizeof *out);
    out->type = BK_TYPE_QUOTIENT;
    out->k = f->rbits;
    out->capacity = f->capacity;
    out->count = f->total;
    out->bits = f->nslots;
    out->memory_bytes = f->nwords * 8;
    out->bits_per_key = (double)out->memory_bytes * 8.0 / (double)(f->total ? f->total : 1);
    out->fill_ratio = (double)f->used / (double)f->nslots;
    /* distinct keys from distinct fingerprints: d = M (1 - e^(-n/M)), M = 1 / P(two keys collide) */
    double r2 = ldexp(1.0, (int)f->rbits);
    double M = ldexp(1.0, (int)f->qbits) * r2 * r2 / (r2 + 2.0);
    double d = (double)f->distinct;
    out->est_cardinality = d < M ? -M * log1p(-d / M) : d;
    out->fpr_target = f->fpr_target;
    out->fpr_now = bk_quotient_fpr(f->distinct, f->qbits, f->rbits);
    out->saturated = (double)f->used >= 0.98 * (double)f->max_used || out->fpr_now > f->fpr_target;
    out->seed = f->seed;
}

uint32_t bk_quotient_quotient_bits(const bk_quotient *f) { return f->qbits; }
uint32_t bk_quotient_remainder_bits(const bk_quotient *f) { return f->rbits; }
uint64_t bk_quotient_slots_used(const bk_quotient *f) { return f->used; }
uint64_t bk_quotient_distinct(const bk_quotient *f) { return f->distinct; }
uint64_t bk_quotient_total(const bk_quotient *f) { return f->total; }
uint64_t bk_quotient_seed(const bk_quotient *f) { return f->seed; }
double bk_quotient_max_load(const bk_quotient *f) { return f->max_load; }
uint64_t bk_quotient_memory(const bk_quotient *f) { return f->nwords * 8; }
bk_quotient_path bk_quotient_get_path(const bk_quotient *f)
{
    return f->bmi2 ? BK_QUOTIENT_BMI2 : BK_QUOTIENT_PORTABLE;
}
bk_status bk_quotient_set_path(bk_quotient *f, bk_quotient_path p)
{
    if (!f || p < BK_QUOTIENT_AUTO || p > BK_QUOTIENT_BMI2) return BK_EINVAL;
    if (p == BK_QUOTIENT_BMI2 && !bk_quotient_bmi2_available()) return BK_ENOTSUP;
    f->path_asked = p;
    f->bmi2 = resolve_path(p);
    return BK_OK;
}

/* ---- serialization (body layout in docs/FORMAT.md) ----
 * offset 0   u32 quotient_bits, u32 remainder_bits, f64 max_load, u64 capacity, f64 fpr_target,
 *            u64 slots used, u64 distinct, u64 total, u64 array bytes            (64 bytes)
 * then the slot array (64-byte aligned): little-endian u64 words, the groups described above.
 * Decoding checks every invariant listed at the top of this file, and that the three counters match
 * the array, before the filter is used. */

/* The offset block b must have, from block b - 1's (which must be right). */
static uint64_t expected_offset(const bk_quotient *f, uint64_t b)
{
    if (b == 0) {
        if (!(occ_word(f, 0) & 1)) return 0;
        uint64_t e = select_from(f, 0, 1, false);
        return e == QF_NONE ? 0 : e;
    }
    uint64_t po = off_get(f, b - 1);
    unsigned d = popc_portable(occ_word(f, b - 1) & ~UINT64_C(1)) + (unsigned)(occ_word(f, b) & 1);
    if (d == 0) return po > 64 ? po - 64 : 0;
    uint64_t e = select_from(f, ((b - 1) << 6) + po + 1, d, false);
    return e != QF_NONE && e > (b << 6) ? e - (b << 6) : 0;
}

static bool slots_zero(const bk_quotient *f, uint64_t a, uint64_t b) /* [a, b) */
{
    for (uint64_t j = a; j < b; j++)
        if (get_slot(f, j) || is_rend(f, j)) return false;
    return true;
}

static bk_status validate(const bk_quotient *f, uint64_t used, uint64_t distinct, uint64_t total)
{
    uint64_t nocc = 0, nrend = 0;
    for (uint64_t b = 0; b < f->nblocks; b++) {
        nocc += popc_portable(occ_word(f, b));
        nrend += popc_portable(rend_word(f, b));
        if ((b << 6) >= f->nslots && occ_word(f, b)) return BK_ECORRUPT;
        if (off_get(f, b) != expected_offset(f, b)) return BK_ECORRUPT;
    }
    if (nocc != nrend) return BK_ECORRUPT;
    uint64_t cursor = 0, u = 0, d = 0, t = 0;
    for (uint64_t q = next_occ(f, 0); q != QF_NONE; q = next_occ(f, q + 1)) {
        uint64_t st = q > cursor ? q : cursor;
        if (!slots_zero(f, cursor, st)) return BK_ECORRUPT;
        uint64_t e = select_from(f, st, 1, false);
        if (e == QF_NONE) return BK_ECORRUPT;
        uint64_t prev = 0;
        for (uint64_t i = st; i <= e;) {
            uint64_t x, c;
            unsigned len = parse(f, i, e, &x, &c);
            if (len == 0 || x == 0 || x <= prev || enc_len(c, f->rmask) != len) return BK_ECORRUPT;
            prev = x;
            i += len;
            d++;
            t = t > UINT64_MAX - c ? UINT64_MAX : t + c;
        }
        u += e - st + 1;
        cursor = e + 1;
    }
    if (!slots_zero(f, cursor, f->xslots)) return BK_ECORRUPT;
    /* the unused bits of the last remainder word of each block are part of no slot: nothing to check */
    if (u != used || d != distinct || t != total || used > f->max_used) return BK_ECORRUPT;
    return BK_OK;
}

static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_quotient *f = vf;
    bk_status s;
    if ((s = bk__w_u32(w, f->qbits)) || (s = bk__w_u32(w, f->rbits)) || (s = bk__w_f64(w, f->max_load)) ||
        (s = bk__w_u64(w, f->capacity)) || (s = bk__w_f64(w, f->fpr_target)) || (s = bk__w_u64(w, f->used)) ||
        (s = bk__w_u64(w, f->distinct)) || (s = bk__w_u64(w, f->total)) || (s = bk__w_u64(w, f->nwords * 8)) ||
        (s = bk__w_align(w, 64)) || (s = bk__w_u64_array(w, f->words, (size_t)f->nwords)))
        return s;
    return BK_OK;
}

static bk_status v_decode(bk_reader *r, void **out)
{
    uint32_t qb, rb;
    double ml, fpr;
    uint64_t cap, used, distinct, total, bytes;
    bk_status s;
    *out = NULL;
    if ((s = bk__r_u32(r, &qb)) || (s = bk__r_u32(r, &rb)) || (s = bk__r_f64(r, &ml)) || (s = bk__r_u64(r, &cap)) ||
        (s = bk__r_f64(r, &fpr)) || (s = bk__r_u64(r, &used)) || (s = bk__r_u64(r, &distinct)) ||
        (s = bk__r_u64(r, &total)) || (s = bk__r_u64(r, &bytes)) || (s = bk__r_align(r, 64)))
        return s;
    if (qb < BK_QUOTIENT_MIN_QBITS || qb > BK_QUOTIENT_MAX_QBITS || rb < BK_QUOTIENT_MIN_RBITS ||
        rb > BK_QUOTIENT_MAX_RBITS || !(ml > 0 && ml <= 1) || !(fpr > 0 && fpr <= 1) || cap == 0)
        return BK_ECORRUPT;
    bk_quotient *f;
    if ((s = alloc_filter(qb, rb, ml, r->seed, !r->borrow, &f))) return s == BK_ETOOBIG ? BK_ECORRUPT : s;
    if (bytes != f->nwords * 8) {
        bk_quotient_free(f);
        return BK_ECORRUPT;
    }
    if (bytes > r->len - r->off) {
        bk_quotient_free(f);
        return BK_ETRUNCATED;
    }
    const uint8_t *data;
    if ((s = bk__r_take(r, (size_t)bytes, &data))) {
        bk_quotient_free(f);
        return s;
    }
    if (r->borrow)
        f->words = (uint64_t *)(uintptr_t)data;
    else
        memcpy(f->words, data, (size_t)f->nwords * 8);
    f->capacity = cap;
    f->fpr_target = fpr;
    f->used = used;
    f->distinct = distinct;
    f->total = total;
    f->path_asked = BK_QUOTIENT_AUTO;
    f->bmi2 = resolve_path(BK_QUOTIENT_AUTO);
    if ((s = validate(f, used, distinct, total)) != BK_OK) {
        bk_quotient_free(f);
        return s;
    }
    *out = f;
    return BK_OK;
}

static bk_status v_add_hash(void *f, uint64_t h) { return bk_quotient_add_hash(f, h); }
static bool v_contains_hash(const void *f, uint64_t h) { return bk_quotient_contains_hash(f, h); }
static bk_status v_remove_hash(void *f, uint64_t h) { return bk_quotient_remove_hash(f, h); }
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n) { return bk_quotient_add_hashes(f, h, n, NULL); }
static size_t v_contains_hashes(const void *f, const uint64_t *h, size_t n, uint8_t *r)
{
    return bk_quotient_contains_hashes(f, h, n, r);
}
static uint64_t v_seed(const void *f) { return bk_quotient_seed(f); }
static void v_stats(const void *f, bk_stats *s) { bk_quotient_stats(f, s); }
/* Through the generic handle, as for every type: only filters of identical geometry (q and r) and
 * seed. bk_quotient_merge also takes filters whose fingerprints convert. */
static bk_status v_merge(void *d, const void *s)
{
    const bk_quotient *a = d, *b = s;
    if (a->qbits != b->qbits || a->rbits != b->rbits) return BK_EINCOMPAT;
    return bk_quotient_merge(d, s);
}
static void v_clear(void *f) { bk_quotient_clear(f); }
static void v_destroy(void *f) { bk_quotient_free(f); }

BK_HIDDEN const bk_vtable bk__quotient_vtable = {
    .type = BK_TYPE_QUOTIENT,
    .add_hash = v_add_hash,
    .contains_hash = v_contains_hash,
    .remove_hash = v_remove_hash,
    .add_hashes = v_add_hashes,
    .contains_hashes = v_contains_hashes,
    .seed = v_seed,
    .stats = v_stats,
    .merge = v_merge,
    .clear = v_clear,
    .encode = v_encode,
    .decode = v_decode,
    .destroy = v_destroy,
};

/* For tests: every invariant of the layout and the counters (BK_OK or BK_ECORRUPT), and the array. */
bk_status bk__quotient_check(const bk_quotient *f) { return validate(f, f->used, f->distinct, f->total); }
const uint64_t *bk__quotient_words(const bk_quotient *f, size_t *nwords)
{
    *nwords = (size_t)f->nwords;
    return f->words;
}
