/* Quotient filter: rank-and-select layout (occupied / run-end words and offsets per 64 slots) with
 * variable-length counters in the slots. Layout and encoding are described in quotient.h and
 * docs/FORMAT.md. This file: the slot operations (insert, delete, count) on both paths, sizing,
 * lifetime and the public single-key and batch calls; quotient_slots.h has the layout, the
 * rebuilds (grow, merge, append) are in quotient_rebuild.c, the body format in quotient_file.c. */
#include <math.h>
#include <stdlib.h>
#include "filters/quotient_slots.h"

/* Next occupied quotient at or after i; QF_NONE when none. */
uint64_t bk__qf_next_occ(const bk_quotient *f, uint64_t i)
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

/* A saturated offset: from the table of true offsets when the filter has one (it does from the first
 * saturated offset stored on, unless its memory was refused); else from block a, the last before b
 * whose stored offset is not saturated (or block 0, whose offset is computed), by one count of
 * occupied bits and one select over the blocks between (off_from), a walk as long as the cluster
 * behind b (near full at max_load 1, most of the table). */
uint64_t bk__qf_off_slow(const bk_quotient *f, uint64_t b, bool bmi2)
{
    if (f->sat) return f->sat[b];
    uint64_t a = b;
    while (a > 0 && off_byte(f, a) == QF_OFF_SAT) a--;
    uint64_t o = a == 0 ? off_first(f, bmi2) : off_byte(f, a);
    return a == b ? o : off_from(f, a, o, b, bmi2);
}

/* The table of true offsets, from the stored ones and the run ends (one pass). Without the memory
 * for it the filter goes on without (the counted path). */
void bk__qf_sat_build(bk_quotient *f)
{
    f->sat_want = false;
    if (f->sat) return;
    uint32_t *t = bk__calloc(f->alloc, (size_t)f->nblocks, sizeof *t);
    if (!t) return;
    uint64_t o = 0;
    for (uint64_t b = 0; b < f->nblocks; b++) {
        o = b == 0 ? off_first(f, f->bmi2) : off_next(f, b, o, f->bmi2);
        t[b] = (uint32_t)o;
    }
    f->sat = t;
}

/* Recompute the offsets of blocks lo..hi (those of the blocks before lo must be right). */
void bk__qf_fix_offsets(bk_quotient *f, uint64_t lo, uint64_t hi, bool bmi2)
{
    if (hi >= f->nblocks) hi = f->nblocks - 1;
    if (lo > hi) return;
    uint64_t o = lo == 0 ? off_first(f, bmi2) : off_next(f, lo, off_of(f, lo - 1, bmi2), bmi2);
    off_set(f, lo, o);
    for (uint64_t b = lo + 1; b <= hi; b++) {
        o = off_next(f, b, o, bmi2);
        off_set(f, b, o);
    }
    bk__qf_sat_sync(f);
}

/* ---- counters ---- */

unsigned bk__qf_enc_len(uint64_t c, uint64_t base)
{
    if (c <= 2) return (unsigned)c;
    unsigned n = 3;
    for (uint64_t v = c - 3; v; v /= base) n++;
    return n;
}

void bk__qf_enc_write(bk_quotient *f, uint64_t pos, uint64_t x, uint64_t c)
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

/* ---- queries ---- */

/* Count of (q, x); 0 when absent. */
BK_INLINE uint64_t qf_count(const bk_quotient *f, uint64_t q, uint64_t x, bool bmi2)
{
    const uint64_t *bp = blk(f, q >> 6);
    if (!((bp[0] >> (q & 63)) & 1)) return 0;
    int64_t e64 = run_end_le_in(f, q, bp, bmi2);
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

/* ---- moving slots a word at a time ----
 * A block's remainders are one array of 64 r bits (its r words), its run ends one word; slots of
 * consecutive blocks are not adjacent in memory. A move is cut into chunks that stay inside one
 * source block and one destination block, and each chunk's bits move up to 64 at a time. */

/* Bits [bit, bit + len) of the array w (len 1..64; the array holds them). */
BK_INLINE uint64_t bits_get(const uint64_t *w, uint64_t bit, unsigned len)
{
    unsigned sh = (unsigned)(bit & 63);
    const uint64_t *p = w + (bit >> 6);
    uint64_t v = p[0] >> sh;
    if (sh + len > 64) v |= p[1] << (64 - sh);
    return len == 64 ? v : v & ((UINT64_C(1) << len) - 1);
}
BK_INLINE void bits_put(uint64_t *w, uint64_t bit, unsigned len, uint64_t v)
{
    unsigned sh = (unsigned)(bit & 63);
    uint64_t *p = w + (bit >> 6);
    uint64_t m = len == 64 ? ~UINT64_C(0) : (UINT64_C(1) << len) - 1;
    p[0] = (p[0] & ~(m << sh)) | (v << sh);
    if (sh + len > 64) {
        unsigned lo = 64 - sh;
        p[1] = (p[1] & ~(m >> lo)) | (v >> lo);
    }
}

/* Copies c slots (remainders and run-end bits) from slot a down to slot d < a, both ranges inside one
 * block each, from the bottom up, so overlapping ranges are safe. */
static void chunk_copy_down(bk_quotient *f, uint64_t d, uint64_t a, unsigned c)
{
    uint64_t *sb = blk(f, a >> 6), *db = blk(f, d >> 6);
    unsigned sj = (unsigned)(a & 63), dj = (unsigned)(d & 63);
    uint64_t rend = bits_get(&sb[1], sj, c);
    uint64_t total = (uint64_t)c * f->rbits, sbit = (uint64_t)sj * f->rbits, dbit = (uint64_t)dj * f->rbits;
    for (uint64_t done = 0; done < total;) {
        unsigned piece = total - done > 64 ? 64 : (unsigned)(total - done);
        bits_put(db + 2, dbit + done, piece, bits_get(sb + 2, sbit + done, piece));
        done += piece;
    }
    bits_put(&db[1], dj, c, rend);
}

/* Bits [lo, hi) of a word (0 <= lo < hi <= 64). */
BK_INLINE uint64_t bits_mask(unsigned lo, unsigned hi)
{
    return (hi == 64 ? ~UINT64_C(0) : (UINT64_C(1) << hi) - 1) & (~UINT64_C(0) << lo);
}

/* Words wlo..whi of a block's remainders cw get the words sh r = 64 q + s bits lower in the array
 * "the block before's r words pw, then cw", each from the two words it straddles (a funnel shift),
 * from the top down: word i reads words at or below it, none written yet. Words i > q read two words
 * of cw, word q cw's first and pw's last, words i < q two of pw. Where both of two neighbouring words
 * read cw only, they are made together (two 64-bit lanes shifted by the same counts). */
#if defined(__GNUC__)
typedef uint64_t qf_v2 __attribute__((vector_size(16)));
#endif
BK_INLINE void funnel_up(uint64_t *cw, const uint64_t *pw, int64_t wlo, int64_t whi, int64_t q, unsigned s,
                         int64_t r)
{
    int64_t i = whi;
    if (s) {
        const int64_t lim = q + 1 > wlo ? q + 1 : wlo; /* words lim..whi read cw only */
#if defined(__GNUC__)
        for (; i - 1 >= lim; i -= 2) { /* words i - 1 and i */
            qf_v2 hi, lo;
            __builtin_memcpy(&hi, cw + i - 1 - q, sizeof hi);
            __builtin_memcpy(&lo, cw + i - 2 - q, sizeof lo);
            qf_v2 v = hi << s | lo >> (64 - s);
            __builtin_memcpy(cw + i - 1, &v, sizeof v);
        }
#endif
        for (; i >= lim; i--) cw[i] = cw[i - q] << s | cw[i - q - 1] >> (64 - s);
        if (i >= wlo && i == q) {
            cw[i] = cw[0] << s | pw[r - 1] >> (64 - s);
            i--;
        }
        for (; i >= wlo; i--) cw[i] = pw[r + i - q] << s | pw[r + i - q - 1] >> (64 - s);
    } else {
        for (; i >= wlo && i >= q; i--) cw[i] = cw[i - q];
        for (; i >= wlo; i--) cw[i] = pw[r + i - q];
    }
}

/* Words wlo..whi of a block's remainders cw shifted up by s < 64 bits (a one-slot move: s = r), each
 * from the two words it straddles, from the top down; word 0 takes the top bits of `carry` (the block
 * before's last word, as it was) below. */
BK_INLINE void funnel_one(uint64_t *cw, int64_t wlo, int64_t whi, unsigned s, uint64_t carry)
{
    int64_t i = whi;
    const int64_t lim = wlo > 1 ? wlo : 1; /* words lim..whi read cw only */
#if defined(__GNUC__)
    for (; i - 1 >= lim; i -= 2) {
        qf_v2 hi, lo;
        __builtin_memcpy(&hi, cw + i - 1, sizeof hi);
        __builtin_memcpy(&lo, cw + i - 2, sizeof lo);
        qf_v2 v = hi << s | lo >> (64 - s);
        __builtin_memcpy(cw + i - 1, &v, sizeof v);
    }
#endif
    for (; i >= lim; i--) cw[i] = cw[i] << s | cw[i - 1] >> (64 - s);
    if (i == 0 && wlo == 0) cw[0] = cw[0] << s | carry >> (64 - s);
}

/* A partial block (slots [lo, hi) of it, lo > 0 or hi < 64) of a move: its run-end bits [lo, hi) from
 * re, its remainder bits [lo r, hi r) (words wlo..whi of cw = cur + 2) shifted up, those outside kept
 * (the two end words masked). The shift is a one-slot move's (funnel_one, s = r, the block before's
 * last word `carry` below) when one, else funnel_up's from the block before's words pw (q words and
 * s bits). */
BK_INLINE void move_partial(uint64_t *cur, unsigned lo, unsigned hi, uint64_t re, uint64_t r, bool one,
                            const uint64_t *pw, int64_t q, unsigned s, uint64_t carry)
{
    uint64_t *cw = cur + 2;
    uint64_t m = bits_mask(lo, hi);
    cur[1] = (cur[1] & ~m) | (re & m);
    const uint64_t blo = lo * r, bhi = hi * r;
    const int64_t wlo = (int64_t)(blo >> 6), whi = (int64_t)((bhi - 1) >> 6);
    const uint64_t first = cw[wlo], last = cw[whi];
    if (one) funnel_one(cw, wlo, whi, s, carry);
    else funnel_up(cw, pw, wlo, whi, q, s, (int64_t)r);
    uint64_t mlo = ~UINT64_C(0) << (blo & 63), mhi = bits_mask(0, (unsigned)(bhi - ((uint64_t)whi << 6)));
    cw[wlo] = (first & ~mlo) | (cw[wlo] & mlo);
    cw[whi] = (last & ~mhi) | (cw[whi] & mhi);
}

/* Slots [a, b] move right by sh (1 <= sh <= 63), a destination block at a time from the top down.
 * Destination slot j of block B takes slot j - sh of B, or slot 64 + j - sh of B - 1 when j < sh:
 * its run-end word is B's shifted left by sh with B - 1's top sh bits below, its remainder words are
 * funnel shifts of B - 1's and B's. Block B - 1 is still unchanged when B is written. */
BK_INLINE void move_right_impl(bk_quotient *f, uint64_t a, uint64_t b, uint64_t sh)
{
    const uint64_t da = a + sh, db = b + sh, r = f->rbits, tot = sh * r, bfirst = da >> 6;
    const int64_t q = (int64_t)(tot >> 6), rr = (int64_t)r; /* q < r since sh < 64 */
    const unsigned s = (unsigned)(tot & 63);
    uint64_t B = db >> 6, *cur = blk(f, B);
    for (;;) {
        /* block B - 1 (an offsets word between the blocks when B starts a group); block 0: only destination
         * slots >= sh, whose sources are in block 0, and any readable words serve for the masked-out
         * rest */
        uint64_t *prev = B ? cur - (2 + r) - ((B & 7) == 0) : cur;
        uint64_t *cw = cur + 2;
        const uint64_t *pw = prev + 2;
        unsigned lo = B == bfirst ? (unsigned)(da & 63) : 0;
        unsigned hi = B == db >> 6 ? (unsigned)(db & 63) + 1 : 64; /* slots [lo, hi) */
        uint64_t re = cur[1] << sh | prev[1] >> (64 - sh);
        if (lo == 0 && hi == 64) { /* a whole block */
            cur[1] = re;
            funnel_up(cw, pw, 0, rr - 1, q, s, rr);
        } else {
            move_partial(cur, lo, hi, re, r, false, pw, q, s, 0);
        }
        if (B == bfirst) break;
        B--;
        cur = prev;
    }
}

/* Slots [a, b] move right by one, a block at a time from the bottom up: each block's words shift up
 * by one slot, its slot 0 taking the block before's slot 63 as it was (kept from that block before it
 * was written: its last remainder word and its run-end word). Only the first and last blocks are
 * partial. */
static void move_right1(bk_quotient *f, uint64_t a, uint64_t b)
{
    const uint64_t r = f->rbits, da = a + 1, db = b + 1, blast = db >> 6;
    const unsigned s = (unsigned)r; /* one slot's bits, under a word */
    uint64_t B = da >> 6, *cur = blk(f, B);
    uint64_t cw_in = 0, ce_in = 0; /* the block before's last remainder word and run-end word */
    if ((da & 63) == 0) { /* the first destination slot takes the block before's last (B >= 1) */
        const uint64_t *prev = cur - (2 + r) - ((B & 7) == 0);
        cw_in = prev[2 + r - 1];
        ce_in = prev[1];
    }
    for (;;) {
        uint64_t *cw = cur + 2;
        const uint64_t cw_out = cw[r - 1], ce_out = cur[1];
        const unsigned lo = B == da >> 6 ? (unsigned)(da & 63) : 0;
        const unsigned hi = B == blast ? (unsigned)(db & 63) + 1 : 64; /* slots [lo, hi) */
        const uint64_t re = cur[1] << 1 | ce_in >> 63;
        if (lo == 0 && hi == 64) { /* a whole block */
            cur[1] = re;
            funnel_one(cw, 0, (int64_t)r - 1, s, cw_in);
        } else {
            move_partial(cur, lo, hi, re, r, true, NULL, 0, s, cw_in);
        }
        if (B == blast) break;
        cw_in = cw_out;
        ce_in = ce_out;
        cur += (2 + r) + ((B & 7) == 7); /* an offsets word before a block that starts a group */
        B++;
    }
}

/* The one-slot move (every insert of a new entry) on its own; the others. */
static void move_right_n(bk_quotient *f, uint64_t a, uint64_t b, uint64_t sh) { move_right_impl(f, a, b, sh); }
BK_INLINE void move_right(bk_quotient *f, uint64_t a, uint64_t b, uint64_t sh)
{
    if (sh == 1) move_right1(f, a, b);
    else move_right_n(f, a, b, sh);
}

/* Slots [a, b] move left by sh (1 <= sh <= 63), a destination block at a time from the bottom up:
 * destination slot j of block B takes slot j + sh of B, or slot j + sh - 64 of B + 1 when that passes
 * the block. Its run-end word is B's shifted right by sh with B + 1's low sh bits on top, and
 * remainder word i is read sh r = 64 q + s bits higher in "B's r words, then B + 1's", from the two
 * words it straddles. Block B + 1 is still unchanged when B is written, and within B the words are
 * written from the bottom up, each reading only words at or above it. */
static void move_left_words(bk_quotient *f, uint64_t a, uint64_t b, uint64_t sh)
{
    const uint64_t da = a - sh, db = b - sh, r = f->rbits, tot = sh * r, blast = db >> 6;
    const int64_t q = (int64_t)(tot >> 6), rr = (int64_t)r; /* q < r since sh < 64 */
    const unsigned s = (unsigned)(tot & 63);
    uint64_t B = da >> 6, *cur = blk(f, B);
    for (;;) {
        /* block B + 1 (after an offsets word when B + 1 starts a group); past the last block no source slot is
         * there, and any readable words serve for the masked-out rest */
        uint64_t *next = B + 1 < f->nblocks ? cur + (2 + r) + ((B & 7) == 7) : cur;
        uint64_t *cw = cur + 2;
        const uint64_t *nw = next + 2;
        unsigned lo = B == da >> 6 ? (unsigned)(da & 63) : 0;
        unsigned hi = B == blast ? (unsigned)(db & 63) + 1 : 64; /* slots [lo, hi) */
        uint64_t m = bits_mask(lo, hi);
        uint64_t re = cur[1] >> sh | next[1] << (64 - sh);
        cur[1] = (cur[1] & ~m) | (re & m);
        const uint64_t blo = lo * r, bhi = hi * r;
        const int64_t wlo = (int64_t)(blo >> 6), whi = (int64_t)((bhi - 1) >> 6);
        const uint64_t first = cw[wlo], last = cw[whi];
        for (int64_t i = wlo; i <= whi; i++) {
            int64_t k = i + q; /* the source's lower word; k >= r: B + 1's word k - r */
            uint64_t v = (k < rr ? cw[k] : nw[k - rr]) >> s;
            if (s) v |= (k + 1 < rr ? cw[k + 1] : nw[k + 1 - rr]) << (64 - s);
            cw[i] = v;
        }
        uint64_t mlo = ~UINT64_C(0) << (blo & 63), mhi = bits_mask(0, (unsigned)(bhi - ((uint64_t)whi << 6)));
        cw[wlo] = (first & ~mlo) | (cw[wlo] & mlo);
        cw[whi] = (last & ~mhi) | (cw[whi] & mhi);
        if (B == blast) break;
        B++;
        cur = next;
    }
}

/* Slots [a, b] move left by sh (from the bottom up). */
static void move_left(bk_quotient *f, uint64_t a, uint64_t b, uint64_t sh)
{
    if (sh < 64 && b - a >= 64) { /* longer moves: whole words */
        move_left_words(f, a, b, sh);
        return;
    }
    for (uint64_t s = a; s <= b;) {
        uint64_t d = s - sh, c = b - s + 1;
        if (c > 64 - (s & 63)) c = 64 - (s & 63);
        if (c > 64 - (d & 63)) c = 64 - (d & 63);
        chunk_copy_down(f, d, s, (unsigned)c);
        s += c;
    }
}

static void clear_slots(bk_quotient *f, uint64_t a, uint64_t b) /* [a, b] */
{
    if (a == b) { /* the usual one: the slot of a new entry */
        set_rend(f, a, false);
        put_slot(f, a, 0);
        return;
    }
    for (uint64_t s = a; s <= b;) {
        uint64_t c = b - s + 1;
        if (c > 64 - (s & 63)) c = 64 - (s & 63);
        uint64_t *bp = blk(f, s >> 6);
        unsigned j = (unsigned)(s & 63);
        bits_put(&bp[1], j, (unsigned)c, 0);
        uint64_t total = c * f->rbits, bit = (uint64_t)j * f->rbits;
        for (uint64_t done = 0; done < total;) {
            unsigned piece = total - done > 64 ? 64 : (unsigned)(total - done);
            bits_put(bp + 2, bit + done, piece, 0);
            done += piece;
        }
        s += c;
    }
}

/* Make `delta` empty slots at pos, shifting what follows right into the next free slots. Checks the
 * room first: BK_EFULL and nothing changed when there is none. *last receives the highest slot
 * touched. Offsets are left for bk__qf_fix_offsets. */
BK_INLINE bk_status make_room_impl(bk_quotient *f, uint64_t pos, unsigned delta, uint64_t *last, bool bmi2)
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
    for (unsigned k = delta; k >= 1; k--)
        if (fr[k] > fr[k - 1] + 1) move_right(f, fr[k - 1] + 1, fr[k] - 1, delta - k + 1);
    clear_slots(f, pos, pos + delta - 1);
    f->used += delta;
    *last = fr[delta];
    return BK_OK;
}
/* One copy per path, so each runs its own word operations (qf_insert passes a constant). */
static bk_status make_room_portable(bk_quotient *f, uint64_t pos, unsigned delta, uint64_t *last)
{
    return make_room_impl(f, pos, delta, last, false);
}
#if QF_HAVE_BMI2
static bk_status make_room_bmi2(bk_quotient *f, uint64_t pos, unsigned delta, uint64_t *last)
{
    return make_room_impl(f, pos, delta, last, true);
}
#endif
BK_INLINE bk_status make_room(bk_quotient *f, uint64_t pos, unsigned delta, uint64_t *last, bool bmi2)
{
#if QF_HAVE_BMI2
    if (bmi2) return make_room_bmi2(f, pos, delta, last);
#endif
    (void)bmi2;
    return make_room_portable(f, pos, delta, last);
}

/* Remove slots [p, p + delta) of the run of quotient q, which ended at e before (e >= p + delta - 1);
 * the rest of that run and the following runs of its cluster move left, none before its quotient.
 * The caller has set the run-end bits of the removed entry's run as they must be after the removal
 * (inside [p - 1 .. ]), and the occupied bit. Returns the highest slot touched. */
static uint64_t remove_slots(bk_quotient *f, uint64_t q, uint64_t p, uint64_t delta, uint64_t e, bool bmi2)
{
    /* the slots to move wait in [pa, pb] (shift psh) while the following runs keep that shift; a run
     * that reaches its quotient shrinks it, and the waiting move is made first */
    uint64_t pa = p + delta, pb = e, psh = delta;
    uint64_t new_end = e - delta, old_end = e, prev = q;
    for (;;) {
        uint64_t q2 = bk__qf_next_occ(f, prev + 1);
        if (q2 == QF_NONE || q2 > old_end + 1 || old_end + 1 >= f->xslots) break;
        uint64_t e2 = select_from(f, old_end + 1, 1, bmi2);
        if (e2 == QF_NONE) break;
        uint64_t ns = q2 > new_end + 1 ? q2 : new_end + 1;
        uint64_t sh = old_end + 1 - ns;
        if (ns > new_end + 1) {
            if (pa <= pb) move_left(f, pa, pb, psh);
            pa = old_end + 1;
            psh = sh;
            clear_slots(f, new_end + 1, ns - 1);
            if (sh == 0) {
                new_end = old_end;
                pb = old_end; /* nothing waits */
                break;
            }
        }
        pb = e2; /* joins the waiting slots (without a gap the shift is the same) */
        new_end = e2 - sh;
        old_end = e2;
        prev = q2;
    }
    if (pa <= pb) move_left(f, pa, pb, psh);
    if (old_end + 1 > new_end + 1) clear_slots(f, new_end + 1, old_end); /* new_end + 1 may wrap to 0 */
    f->used -= delta;
    return old_end;
}

BK_INLINE uint64_t first_block(uint64_t q) { return (q + 63) >> 6; }

/* The offsets after an insert into q's run (or a new run of q) that took `delta` slots, the first
 * free slot `last` included. One slot: every slot in [q, last) was in use before and after, by the
 * same runs or q's, each moved one slot right, so the block b with q <= 64 b < last has its E one
 * higher and its offset one more (E was >= 64 b: slot 64 b was in use); the block with 64 b = last
 * keeps 0 (E < 64 b before and <= 64 b after). More slots: recomputed. */
BK_INLINE void offsets_after_insert(bk_quotient *f, uint64_t q, unsigned delta, uint64_t last, bool bmi2)
{
    if (delta != 1) {
        bk__qf_fix_offsets(f, first_block(q), last >> 6, bmi2);
        return;
    }
    const uint64_t bend = (last + 63) >> 6; /* blocks b < bend: 64 b < last */
    uint64_t b = first_block(q);
    if (f->sat)
        for (uint64_t k = b; k < bend; k++) f->sat[k]++;
    /* a group's bytes at once: 1 added to each byte of the range that is not 255 (a saturated one
     * stays), so no byte carries into the next */
    const uint64_t ones = UINT64_C(0x0101010101010101), low7 = UINT64_C(0x7f7f7f7f7f7f7f7f);
    while (b < bend) {
        const uint64_t g = b >> QF_GROUP_SHIFT, n = bend - (g << QF_GROUP_SHIFT);
        const unsigned k0 = (unsigned)(b & 7), k1 = n > 8 ? 8 : (unsigned)n; /* bytes [k0, k1) */
        uint64_t *w = &f->words[g * f->group_words];
        const uint64_t v = *w, t = ~v; /* t: a byte 0 where v's is 255 */
        const uint64_t not255 = (((t & low7) + low7) | t) >> 7 & ones;
        const uint64_t sel = (k1 == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * k1)) - 1) & (~UINT64_C(0) << (8 * k0));
        const uint64_t add = sel & ones & not255;
        if (!f->sat) { /* a byte of 254 raised to 255: the table is wanted */
            const uint64_t u = v ^ ~ones, not254 = (((u & low7) + low7) | u) >> 7 & ones;
            if (add & ~not254) f->sat_want = true;
        }
        *w = v + add;
        b = (g + 1) << QF_GROUP_SHIFT;
    }
    bk__qf_sat_sync(f);
}

/* Where remainder x stands in q's occupied run, for an update: the run's start s and end e, the slot
 * i of its first entry whose remainder is x or larger (e + 1 when none is) and that entry's remainder
 * v, count and length. BK_ECORRUPT when the run does not parse. */
typedef struct {
    uint64_t s, e, i, v, count;
    unsigned len;
} qf_spot;
BK_INLINE bk_status qf_find(const bk_quotient *f, uint64_t q, uint64_t x, bool bmi2, qf_spot *p)
{
    int64_t e64 = run_end_le(f, q, bmi2);
    if (e64 < (int64_t)q || e64 >= (int64_t)f->xslots) return BK_ECORRUPT;
    p->e = (uint64_t)e64;
    p->s = p->i = run_start(f, q, p->e);
    p->v = p->count = 0;
    p->len = 0;
    while (p->i <= p->e) {
        p->len = parse(f, p->i, p->e, &p->v, &p->count);
        if (p->len == 0) return BK_ECORRUPT;
        if (p->v >= x) break;
        p->i += p->len;
    }
    return BK_OK;
}

/* Add c occurrences of (q, x). */
BK_INLINE bk_status qf_insert(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c, bool bmi2)
{
    uint64_t last = 0;
    bk_status s;
    unsigned len = bk__qf_enc_len(c, f->rmask);
    if (!is_occ(f, q)) {
        uint64_t st = q;
        if (q > 0) {
            int64_t pe = run_end_le(f, q - 1, bmi2);
            if (pe >= (int64_t)q) st = (uint64_t)pe + 1;
        }
        if (st >= f->xslots) return BK_EFULL;
        if ((s = make_room(f, st, len, &last, bmi2)) != BK_OK) return s;
        bk__qf_enc_write(f, st, x, c);
        set_rend(f, st + len - 1, true);
        set_occ(f, q, true);
        f->distinct++;
    } else {
        qf_spot p;
        if ((s = qf_find(f, q, x, bmi2, &p)) != BK_OK) return s;
        const uint64_t e = p.e, i = p.i, v = p.v, old = p.count;
        const unsigned olen = p.len;
        if (i <= e && v == x) {
            uint64_t nc = old > UINT64_MAX - c ? UINT64_MAX : old + c;
            unsigned nlen = bk__qf_enc_len(nc, f->rmask);
            if (nlen > olen) {
                if ((s = make_room(f, i + olen, nlen - olen, &last, bmi2)) != BK_OK) return s;
                if (i + olen - 1 == e) {
                    set_rend(f, e, false);
                    set_rend(f, i + nlen - 1, true);
                }
            }
            bk__qf_enc_write(f, i, x, nc);
            f->total = f->total > UINT64_MAX - c ? UINT64_MAX : f->total + c;
            if (nlen > olen) offsets_after_insert(f, q, nlen - olen, last, bmi2);
            return BK_OK;
        }
        /* a new entry at i (before a larger remainder, or after the run's end) */
        if ((s = make_room(f, i, len, &last, bmi2)) != BK_OK) return s;
        bk__qf_enc_write(f, i, x, c);
        if (i == e + 1) {
            set_rend(f, e, false);
            set_rend(f, i + len - 1, true);
        }
        f->distinct++;
    }
    f->total = f->total > UINT64_MAX - c ? UINT64_MAX : f->total + c;
    offsets_after_insert(f, q, len, last, bmi2);
    return BK_OK;
}

/* Remove c occurrences of (q, x): BK_ENOTFOUND when fewer are present. */
BK_INLINE bk_status qf_delete(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c, bool bmi2)
{
    if (!is_occ(f, q)) return BK_ENOTFOUND;
    qf_spot p;
    bk_status st = qf_find(f, q, x, bmi2, &p);
    if (st != BK_OK) return st;
    const uint64_t e = p.e, s = p.s, i = p.i, v = p.v, old = p.count;
    const unsigned olen = p.len;
    if (i > e || v != x || old < c) return BK_ENOTFOUND;
    if (old == UINT64_MAX) return BK_OK; /* saturated: sticky */
    uint64_t nc = old - c;
    unsigned nlen = nc ? bk__qf_enc_len(nc, f->rmask) : 0;
    bool last_entry = i + olen - 1 == e;
    if (nc) bk__qf_enc_write(f, i, x, nc);
    if (nlen < olen) {
        if (last_entry) {
            set_rend(f, e, false);
            if (nlen) set_rend(f, i + nlen - 1, true);
            else if (i > s) set_rend(f, i - 1, true);
            else set_occ(f, q, false);
        }
        uint64_t lastpos = remove_slots(f, q, i + nlen, olen - nlen, e, bmi2);
        bk__qf_fix_offsets(f, first_block(q), lastpos >> 6, bmi2);
    }
    if (!nc) f->distinct--;
    f->total = f->total == UINT64_MAX ? UINT64_MAX : f->total - c;
    return BK_OK;
}

/* ---- the two paths ---- */

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
            BK_PREFETCH(&f->words[((pq >> 6) >> QF_GROUP_SHIFT) * f->group_words]);
        }
        uint64_t q, x;
        split(f, h[i], &q, &x);
        bool hit = qf_count(f, q, x, bmi2) != 0;
        hits += hit;
        if (res) res[i] = hit;
    }
    return hits;
}

/* Each path's adapters: the generic code above with the path's constant, so each inlines its own
 * word operations (written out, so grep, a debugger and go-to-definition find them). */
static uint64_t count_portable(const bk_quotient *f, uint64_t q, uint64_t x) { return qf_count(f, q, x, false); }
static bk_status insert_portable(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c)
{
    return qf_insert(f, q, x, c, false);
}
static bk_status remove_portable(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c)
{
    return qf_delete(f, q, x, c, false);
}
static size_t contains_hashes_portable(const bk_quotient *f, const uint64_t *h, size_t n, uint8_t *r)
{
    return contains_hashes_impl(f, h, n, r, false);
}
static const qf_ops ops_portable = { count_portable, insert_portable, remove_portable, contains_hashes_portable };

#if QF_HAVE_BMI2
static uint64_t count_bmi2(const bk_quotient *f, uint64_t q, uint64_t x) { return qf_count(f, q, x, true); }
static bk_status insert_bmi2(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c) { return qf_insert(f, q, x, c, true); }
static bk_status remove_bmi2(bk_quotient *f, uint64_t q, uint64_t x, uint64_t c) { return qf_delete(f, q, x, c, true); }
static size_t contains_hashes_bmi2(const bk_quotient *f, const uint64_t *h, size_t n, uint8_t *r)
{
    return contains_hashes_impl(f, h, n, r, true);
}
static const qf_ops ops_bmi2 = { count_bmi2, insert_bmi2, remove_bmi2, contains_hashes_bmi2 };
#endif

const qf_ops *bk__qf_ops(const bk_quotient *f)
{
#if QF_HAVE_BMI2
    if (f->bmi2) return &ops_bmi2;
#endif
    (void)f;
    return &ops_portable;
}

/* BMI2 and POPCNT, the BMI2 path's instructions, from the CPU module (core/simd.h). */
#define QF_CPU (BK_CPU_BMI2 | BK_CPU_POPCNT)

bool bk_quotient_bmi2_available(void)
{
    return QF_HAVE_BMI2 && (bk__cpu_features() & QF_CPU) == QF_CPU;
}

/* The public path onto the one cap: AUTO takes BMI2 when bk__cpu_usable() has it (not under
 * BK_SIMD=scalar or bk_simd_force(BK_SIMD_SCALAR)); BMI2 asks the CPU only. */
bool bk__qf_resolve_path(bk_quotient_path p)
{
    if (!QF_HAVE_BMI2 || p == BK_QUOTIENT_PORTABLE) return false;
    if (p == BK_QUOTIENT_BMI2) return bk_quotient_bmi2_available();
    return (bk__cpu_usable() & QF_CPU) == QF_CPU;
}

/* ---- sizing ---- */

double bk_quotient_fpr_slots(uint64_t d, uint64_t slots, uint32_t rbits)
{
    if (slots == 0 || rbits == 0 || rbits > 63) return NAN;
    double r2 = ldexp(1.0, (int)rbits);
    double per = (r2 + 2.0) / (r2 * r2);
    return -expm1(-((double)d / (double)slots) * per);
}

double bk_quotient_fpr(uint64_t d, uint32_t qbits, uint32_t rbits)
{
    if (qbits > 63) return NAN;
    return bk_quotient_fpr_slots(d, UINT64_C(1) << qbits, rbits);
}

/* Physical slots: S home slots plus room for the runs of the last quotients to spill past S.
 * The 1.0 rule gives ceil(10 sqrt(S)) (at least 64), enough even at max_load 1, where the spill is a
 * random walk without drift. Below full load the spill at the end is the queue of a D/Poisson
 * system at load a: its tail falls as exp(-t x) with t = 2 (1 - a) / a, so 64 + 12 a / (1 - a)
 * slots are passed with odds below e^-24 at any S (292 slots at 0.95); later filters take the
 * smaller of the two. Rounded up to a group (128 slots). */
uint64_t bk__qf_xslots(uint64_t slots, double max_load, bool layout10)
{
    uint64_t spare = (uint64_t)ceil(10.0 * sqrt((double)slots));
    if (spare < 64) spare = 64;
    if (!layout10 && max_load < 1.0) {
        double t = 64.0 + ceil(12.0 * max_load / (1.0 - max_load));
        if (t < (double)spare) spare = (uint64_t)t;
    }
    uint64_t x = slots + spare;
    return (x + 127) / 128 * 128;
}

static uint32_t ceil_log2(uint64_t x)
{
    uint32_t b = 0;
    while ((UINT64_C(1) << b) < x) b++;
    return b;
}

static bk_status geometry_of(uint64_t slots, uint32_t rb, double max_load, uint64_t n, bool layout10,
                             uint64_t xslots, bk_quotient_geometry *g)
{
    if (slots < (UINT64_C(1) << BK_QUOTIENT_MIN_QBITS) || slots > (UINT64_C(1) << BK_QUOTIENT_MAX_QBITS))
        return BK_ETOOBIG;
    if (layout10 && (slots & (slots - 1))) return BK_EINVAL;
    if (rb < BK_QUOTIENT_MIN_RBITS || rb > BK_QUOTIENT_MAX_RBITS) return BK_ETOOBIG;
    g->quotient_bits = ceil_log2(slots);
    g->remainder_bits = rb;
    g->slots = slots;
    g->physical_slots = xslots ? xslots : bk__qf_xslots(slots, max_load, layout10);
    g->max_slots_used = (uint64_t)floor(max_load * (double)g->slots);
    uint64_t bytes = qf_array_words(g->physical_slots / 64, rb) * 8;
    if (bytes > BK_MAX_FILTER_BYTES || bytes > SIZE_MAX / 2) return BK_ETOOBIG;
    g->bytes = bytes;
    g->fpr = bk_quotient_fpr_slots(n, slots, rb);
    g->bits_per_key = n ? (double)bytes * 8.0 / (double)n : 0;
    return BK_OK;
}

bk_status bk__qf_geometry(uint64_t slots, uint32_t rb, double max_load, uint64_t n, bk_quotient_geometry *g)
{
    return geometry_of(slots, rb, max_load, n, false, 0, g);
}

static bool bad_opts(const bk_quotient_options *o)
{
    if (o->max_load != 0 && !(o->max_load >= BK_QUOTIENT_MIN_MAX_LOAD && o->max_load <= 1)) return true;
    if (o->remainder_bits && (o->remainder_bits < BK_QUOTIENT_MIN_RBITS || o->remainder_bits > BK_QUOTIENT_MAX_RBITS))
        return true;
    return false;
}

static double load_of(const bk_quotient_options *o)
{
    return o->max_load ? o->max_load : BK_QUOTIENT_DEFAULT_MAX_LOAD;
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
    uint64_t slots = (uint64_t)want;
    if (slots < (UINT64_C(1) << BK_QUOTIENT_MIN_QBITS)) slots = UINT64_C(1) << BK_QUOTIENT_MIN_QBITS;
    /* n must fit in the usable slots even after rounding max_load x S down */
    while ((uint64_t)floor(ml * (double)slots) < n) slots++;
    bool pow2 = opts->power_of_two_slots != 0;
    if (pow2) slots = UINT64_C(1) << ceil_log2(slots);
    if (slots > (UINT64_C(1) << BK_QUOTIENT_MAX_QBITS)) return BK_ETOOBIG;
    uint32_t rb = opts->remainder_bits;
    if (!rb) {
        for (rb = BK_QUOTIENT_MIN_RBITS; rb <= BK_QUOTIENT_MAX_RBITS; rb++)
            if (bk_quotient_fpr_slots(n, slots, rb) <= p) break;
        if (rb > BK_QUOTIENT_MAX_RBITS) return BK_ETOOBIG;
    }
    bk_quotient_geometry g;
    bk_status s = geometry_of(slots, rb, ml, n, pow2, 0, &g);
    if (s == BK_OK && out) *out = g;
    return s;
}

bk_status bk__qf_alloc(const bk_allocator *a, uint64_t slots, uint32_t rb, double ml, uint64_t seed, bool layout10,
                       uint64_t xslots, bool alloc, bk_quotient **out)
{
    bk_quotient_geometry g;
    bk_status s = geometry_of(slots, rb, ml, 0, layout10, xslots, &g);
    if (s) return s;
    const bk_allocator *al = bk__allocator(a);
    bk_quotient *f = bk__calloc(al, 1, sizeof *f);
    if (!f) return BK_ENOMEM;
    f->alloc = al;
    if (alloc) {
        f->words = bk__calloc_aligned(f->alloc, (size_t)g.bytes);
        if (!f->words) {
            bk__free(f->alloc, f);
            return BK_ENOMEM;
        }
        f->owns_words = true;
    }
    unsigned tz = (unsigned)__builtin_ctzll(slots);
    f->nwords = g.bytes / 8;
    f->qbits = g.quotient_bits;
    f->rbits = rb;
    f->fbits = tz + rb;
    f->odd = slots >> tz;
    f->layout10 = layout10;
    f->group_words = 1 + 8 * (2 + rb);
    f->body = layout10 ? 1 : 4; /* the 1.0 layout keeps the 1.0 body, which 1.0 readers load */
    f->rmask = (UINT64_C(1) << rb) - 1;
    f->nslots = g.slots;
    f->xslots = g.physical_slots;
    f->nblocks = g.physical_slots / 64;
    f->max_used = g.max_slots_used;
    f->max_load = ml;
    f->seed = seed;
    f->capacity = g.max_slots_used;
    f->fpr_target = bk_quotient_fpr_slots(g.max_slots_used, slots, rb);
    *out = f;
    return BK_OK;
}

/* Explicit geometry: `slots` home slots of rb bits; layout10 for the 2^q form. */
static bk_status new_geometry(uint64_t slots, uint32_t rb, bool layout10, const bk_quotient_options *user_opts,
                              bk_quotient **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_quotient_options o_;
    if (bk__options_read(&o_, sizeof o_, user_opts) != BK_OK) return BK_EINVAL;
    const bk_quotient_options *opts = &o_;
    if (bad_opts(opts)) return BK_EINVAL;
    /* below the minimums, or more remainder bits than a hash gives: an argument out of its range;
     * more slots than BK_QUOTIENT_MAX_QBITS allows is a size too large (BK_ETOOBIG from the geometry) */
    if (slots < (UINT64_C(1) << BK_QUOTIENT_MIN_QBITS) || rb < BK_QUOTIENT_MIN_RBITS || rb > BK_QUOTIENT_MAX_RBITS)
        return BK_EINVAL;
    bk_status s = bk__qf_alloc(opts->allocator, slots, rb, load_of(opts), opts->seed, layout10, 0, true, out);
    if (s) return s;
    (*out)->path_asked = BK_QUOTIENT_AUTO;
    (*out)->bmi2 = bk__qf_resolve_path(BK_QUOTIENT_AUTO);
    return BK_OK;
}

bk_status bk_quotient_new_qr(uint32_t qb, uint32_t rb, const bk_quotient_options *opts, bk_quotient **out)
{
    /* q below the minimum: 0 slots (BK_EINVAL); above the maximum: 2^32 slots (BK_ETOOBIG) */
    uint64_t slots = qb < BK_QUOTIENT_MIN_QBITS ? 0 : UINT64_C(1) << (qb > BK_QUOTIENT_MAX_QBITS ? 32 : qb);
    return new_geometry(slots, rb, true, opts, out);
}

bk_status bk_quotient_new_slots(uint64_t slots, uint32_t rb, const bk_quotient_options *opts, bk_quotient **out)
{
    return new_geometry(slots, rb, false, opts, out);
}

bk_status bk_quotient_new(uint64_t n, double p, const bk_quotient_options *opts, bk_quotient **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_quotient_geometry g;
    bk_status s = bk_quotient_size(n, p, opts, &g);
    if (s) return s;
    bk_quotient_options o_;
    if (bk__options_read(&o_, sizeof o_, opts) != BK_OK) return BK_EINVAL;
    if ((s = new_geometry(g.slots, g.remainder_bits, o_.power_of_two_slots != 0, opts, out))) return s;
    (*out)->capacity = n;
    (*out)->fpr_target = p;
    return BK_OK;
}

static void free_stages(bk_quotient *f)
{
    for (uint32_t i = 0; i < f->nolder; i++) bk_quotient_free(f->older[i]);
    bk__free(f->alloc, f->older);
    f->older = NULL;
    f->nolder = 0;
}

void bk_quotient_free(bk_quotient *f)
{
    if (!f) return;
    free_stages(f);
    if (f->owns_words) bk__free_aligned(f->alloc, f->words);
    bk__free(f->alloc, f->sat);
    bk__free(f->alloc, f);
}

bk_status bk_quotient_clone(const bk_quotient *f, bk_quotient **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    bk_quotient *c;
    bk_status s = bk__qf_alloc(f->alloc, f->nslots, f->rbits, f->max_load, f->seed, f->layout10, f->xslots, true, &c);
    if (s) return s;
    memcpy(c->words, f->words, (size_t)f->nwords * 8);
    c->sat_want = f->sat != NULL || f->sat_want;
    bk__qf_sat_sync(c);
    c->body = f->body;
    c->used = f->used;
    c->distinct = f->distinct;
    c->total = f->total;
    c->capacity = f->capacity;
    c->fpr_target = f->fpr_target;
    c->path_asked = f->path_asked;
    c->bmi2 = f->bmi2;
    c->xq = f->xq;
    c->xq_doublings = f->xq_doublings;
    c->xq_bound = f->xq_bound;
    c->xq_keys = f->xq_keys;
    if (f->nolder) {
        if (!(c->older = bk__calloc(c->alloc, f->nolder, sizeof *c->older))) {
            bk_quotient_free(c);
            return BK_ENOMEM;
        }
        for (uint32_t i = 0; i < f->nolder; i++, c->nolder++)
            if ((s = bk_quotient_clone(f->older[i], &c->older[i]))) {
                bk_quotient_free(c);
                return s;
            }
    }
    *out = c;
    return BK_OK;
}

/* ---- public single-key operations ---- */

bk_status bk_quotient_add_count_hash(bk_quotient *f, uint64_t h, uint64_t count)
{
    if (!f || count == 0) return BK_EINVAL;
    if (f->xq) return bk__xq_add(f, h, count);
    uint64_t q, x;
    split(f, h, &q, &x);
    return bk__qf_ops(f)->insert(f, q, x, count);
}
bk_status bk_quotient_add_hash(bk_quotient *f, uint64_t h) { return bk_quotient_add_count_hash(f, h, 1); }
bk_status bk_quotient_add(bk_quotient *f, const void *key, size_t len)
{
    if (!f || (!key && len)) return BK_EINVAL;
    return bk_quotient_add_count_hash(f, bk__hash(key, len, f->seed), 1);
}

/* One table's count of h. */
static uint64_t table_count(const bk_quotient *f, uint64_t h)
{
    uint64_t q, x;
    split(f, h, &q, &x);
    return bk__qf_ops(f)->count(f, q, x);
}

/* A filter of stages: the count is the sum over the tables (a key added before and after an
 * expansion has entries in both); with `any`, the first nonzero one. The newest table, as large as all
 * the others together, holds about half the keys: it goes first, then the older ones newest first.
 * Each table's home block is asked for before the first is read, so their cache misses overlap. */
BK_INLINE uint64_t staged_count_impl(const bk_quotient *f, uint64_t h, bool any, bool bmi2)
{
    uint64_t q[QF_MAX_STAGES], x[QF_MAX_STAGES];
    for (uint32_t i = f->nolder + 1; i-- > 0;) {
        const bk_quotient *t = i == f->nolder ? f : f->older[i];
        split(t, h, &q[i], &x[i]);
        BK_PREFETCH(blk(t, q[i] >> 6));
        BK_PREFETCH(&t->words[(q[i] >> (6 + QF_GROUP_SHIFT)) * t->group_words]);
    }
    uint64_t c = 0;
    for (uint32_t i = f->nolder + 1; i-- > 0 && !(any && c);) {
        uint64_t o = qf_count(i == f->nolder ? f : f->older[i], q[i], x[i], bmi2);
        c = c > UINT64_MAX - o ? UINT64_MAX : c + o;
    }
    return c;
}
/* both paths give the same answers: the newest table's is taken */
static uint64_t staged_count(const bk_quotient *f, uint64_t h, bool any)
{
#if QF_HAVE_BMI2
    if (f->bmi2) return staged_count_impl(f, h, any, true);
#endif
    return staged_count_impl(f, h, any, false);
}

static bk_status table_remove(bk_quotient *f, uint64_t h, uint64_t count)
{
    uint64_t q, x;
    split(f, h, &q, &x);
    return bk__qf_ops(f)->remove(f, q, x, count);
}

bk_status bk_quotient_remove_count_hash(bk_quotient *f, uint64_t h, uint64_t count)
{
    if (!f || count == 0) return BK_EINVAL;
    if (f->xq) return BK_ENOTSUP; /* an expanding filter's entries may stand for many keys */
    if (!f->nolder) return table_remove(f, h, count);
    /* newest table first; nothing changes unless all `count` occurrences are there */
    if (staged_count(f, h, false) < count) return BK_ENOTFOUND;
    for (uint32_t i = f->nolder + 1; i-- > 0 && count;) {
        bk_quotient *t = i == f->nolder ? f : f->older[i];
        uint64_t c = table_count(t, h), m = c < count ? c : count;
        if (m && table_remove(t, h, m) == BK_OK) count -= m;
    }
    return BK_OK;
}
bk_status bk_quotient_remove_hash(bk_quotient *f, uint64_t h) { return bk_quotient_remove_count_hash(f, h, 1); }
bk_status bk_quotient_remove(bk_quotient *f, const void *key, size_t len)
{
    if (!f || (!key && len)) return BK_EINVAL;
    return bk_quotient_remove_count_hash(f, bk__hash(key, len, f->seed), 1);
}

uint64_t bk_quotient_count_hash(const bk_quotient *f, uint64_t h)
{
    if (!f) return 0;
    if (f->xq) return bk__xq_count(f, h, false);
    if (f->nolder) return staged_count(f, h, false);
    return table_count(f, h);
}
uint64_t bk_quotient_count(const bk_quotient *f, const void *key, size_t len)
{
    if (!f || (!key && len)) return 0;
    return bk_quotient_count_hash(f, bk__hash(key, len, f->seed));
}
bool bk_quotient_contains_hash(const bk_quotient *f, uint64_t h)
{
    if (f->xq) return bk__xq_count(f, h, true) != 0;
    return f->nolder ? staged_count(f, h, true) != 0 : table_count(f, h) != 0;
}
bool bk_quotient_contains(const bk_quotient *f, const void *key, size_t len)
{
    return bk_quotient_contains_hash(f, bk__hash(key, len, f->seed));
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
    return bk_quotient_contains_hash(f, bk__hash_u64(key, f->seed));
}

/* ---- batches ---- */

bk_status bk_quotient_add_hashes(bk_quotient *f, const uint64_t *h, size_t n, size_t *done)
{
    if (!f || (!h && n)) return bk__batch_refused(done);
    if (done) *done = 0;
    const qf_ops *ops = bk__qf_ops(f);
    for (size_t i = 0; i < n && f->xq; i++) { /* an expanding filter: key by key */
        bk_status s = bk__xq_add(f, h[i], 1);
        if (s) return s;
        if (done) *done = i + 1;
    }
    for (size_t i = 0; i < n && !f->xq; i++) {
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
    if (!f || (!h && n)) return bk__batch_refused(done);
    if (done) *done = 0;
    for (size_t i = 0; i < n; i++) {
        bk_status s = bk_quotient_remove_count_hash(f, h[i], 1);
        if (s) return s;
        if (done) *done = i + 1;
    }
    return BK_OK;
}

/* The batch contains of a filter of stages: a chunk of keys at a time, table by table (newest first)
 * through each table's own batch path (which prefetches ahead), each table asked only for the keys
 * the tables before it did not have. */
#define QF_STAGE_CHUNK 256
static size_t staged_contains_hashes(const bk_quotient *f, const uint64_t *h, size_t n, uint8_t *res)
{
    const qf_ops *ops = bk__qf_ops(f);
    uint64_t pend[QF_STAGE_CHUNK];
    uint16_t at[QF_STAGE_CHUNK];
    uint8_t hit[QF_STAGE_CHUNK];
    size_t c = 0;
    for (size_t i0 = 0; i0 < n; i0 += QF_STAGE_CHUNK) {
        size_t m = n - i0 < QF_STAGE_CHUNK ? n - i0 : QF_STAGE_CHUNK, np = m;
        for (size_t k = 0; k < m; k++) {
            pend[k] = h[i0 + k];
            at[k] = (uint16_t)k;
        }
        if (res) memset(res + i0, 0, m);
        for (uint32_t i = f->nolder + 1; i-- > 0 && np;) {
            ops->contains_hashes(i == f->nolder ? f : f->older[i], pend, np, hit);
            size_t w = 0;
            for (size_t k = 0; k < np; k++) {
                if (hit[k]) {
                    if (res) res[i0 + at[k]] = 1;
                    c++;
                } else {
                    pend[w] = pend[k];
                    at[w++] = at[k];
                }
            }
            np = w;
        }
    }
    return c;
}

static size_t contains_chunk(const bk_quotient *f, const uint64_t *h, size_t n, uint8_t *res)
{
    if (f->xq) return bk__xq_contains_hashes(f, h, n, res);
    return f->nolder ? staged_contains_hashes(f, h, n, res) : bk__qf_ops(f)->contains_hashes(f, h, n, res);
}

/* Byte keys a chunk at a time through a hashed batch form; *done counts across chunks. */
static bk_status qf_many(bk_quotient *f, const void *const *keys, const size_t *lens, size_t n, size_t *done,
                         bk_status (*hashed)(bk_quotient *, const uint64_t *, size_t, size_t *))
{
    if (!f || !bk__keys_valid(keys, lens, n)) return bk__batch_refused(done);
    if (done) *done = 0;
    uint64_t hb[QF_BATCH];
    for (size_t i = 0, m = 0; i < n; i += m) {
        m = bk__hash_chunk(hb, QF_BATCH, keys, lens, i, n, f->seed);
        size_t d = 0;
        bk_status s = hashed(f, hb, m, &d);
        if (done) *done = i + d;
        if (s) return s;
    }
    return BK_OK;
}

bk_status bk_quotient_add_many(bk_quotient *f, const void *const *keys, const size_t *lens, size_t n,
                               size_t *done)
{
    return qf_many(f, keys, lens, n, done, bk_quotient_add_hashes);
}

bk_status bk_quotient_remove_many(bk_quotient *f, const void *const *keys, const size_t *lens, size_t n,
                                  size_t *done)
{
    return qf_many(f, keys, lens, n, done, bk_quotient_remove_hashes);
}

bk_status bk_quotient_contains_hashes(const bk_quotient *f, const uint64_t *h, size_t n, uint8_t *res,
                                      size_t *hits)
{
    if (!f || (!h && n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, contains_chunk(f, h, n, res));
}

bk_status bk_quotient_contains_many(const bk_quotient *f, const void *const *keys, const size_t *lens, size_t n,
                                    uint8_t *res, size_t *hits)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return bk__batch_refused(hits);
    uint64_t hb[QF_BATCH];
    size_t c = 0;
    for (size_t i = 0, m = 0; i < n; i += m) {
        m = bk__hash_chunk(hb, QF_BATCH, keys, lens, i, n, f->seed);
        c += contains_chunk(f, hb, m, res ? res + i : NULL);
    }
    return bk__batch_done(hits, c);
}

bk_status bk_quotient_count_hashes(const bk_quotient *f, const uint64_t *h, size_t n, uint64_t *counts)
{
    if (!f || (n && (!h || !counts))) return BK_EINVAL;
    if (f->nolder || f->xq) {
        for (size_t i = 0; i < n; i++) counts[i] = bk_quotient_count_hash(f, h[i]);
        return BK_OK;
    }
    const qf_ops *ops = bk__qf_ops(f);
    for (size_t i = 0; i < n; i++) {
        uint64_t q, x;
        split(f, h[i], &q, &x);
        counts[i] = ops->count(f, q, x);
    }
    return BK_OK;
}

void bk_quotient_clear(bk_quotient *f)
{
    if (!f) return;
    /* the stages stay: they are the filter's geometry (capacity and error rate) */
    for (uint32_t i = 0; i < f->nolder; i++) bk_quotient_clear(f->older[i]);
    memset(f->words, 0, (size_t)f->nwords * 8);
    bk__free(f->alloc, f->sat); /* every offset is 0 */
    f->sat = NULL;
    f->sat_want = false;
    f->used = f->distinct = f->total = 0;
    f->xq_bound = 0; /* an expanding filter keeps its size and slot width */
    f->xq_keys = 0;
}

/* ---- statistics and accessors ---- */

/* One table's bytes: its array, and the table of true offsets when it has one. */
static uint64_t table_memory(const bk_quotient *f) { return f->nwords * 8 + (f->sat ? f->nblocks * 4 : 0); }

/* One table's distinct keys (estimated from its distinct fingerprints) and FPR now. */
static void table_estimates(const bk_quotient *f, double *card, double *fpr_now)
{
    /* distinct keys from distinct fingerprints: d = M (1 - e^(-n/M)), M = 1 / P(two keys collide) */
    double r2 = ldexp(1.0, (int)f->rbits);
    double M = (double)f->nslots * r2 * r2 / (r2 + 2.0);
    double d = (double)f->distinct;
    *card = d < M ? -M * log1p(-d / M) : d;
    /* an absent key is caught by each distinct stored fingerprint with chance 1 / (S 2^r), twice that
     * for the stored remainder 1 (a share 2 / 2^r of them): d (2^r + 2) / (S 4^r), linear in d. The
     * 1 - exp form of bk_quotient_fpr_slots is the FPR at n keys, whose collisions d has already
     * taken out (docs/MATH.md) */
    *fpr_now = d / M;
}

void bk_quotient_stats(const bk_quotient *f, bk_stats *out)
{
    memset(out, 0, sizeof *out);
    out->type = BK_TYPE_QUOTIENT;
    out->k = f->rbits;
    uint64_t used = 0;
    double card = 0, fpr = 0;
    /* a filter of stages: the sums over its tables (a query looks in each) */
    for (uint32_t i = 0; i <= f->nolder; i++) {
        const bk_quotient *t = i == f->nolder ? f : f->older[i];
        double c, p;
        table_estimates(t, &c, &p);
        card += c;
        fpr += p;
        out->capacity += t->capacity;
        out->count = out->count > UINT64_MAX - t->total ? UINT64_MAX : out->count + t->total;
        out->bits += t->nslots;
        out->memory_bytes += table_memory(t);
        used += t->used;
    }
    out->bits_per_key = (double)out->memory_bytes * 8.0 / (double)(out->count ? out->count : 1);
    out->fill_ratio = (double)used / (double)out->bits;
    out->est_cardinality = card;
    out->fpr_target = bk_quotient_fpr_target(f);
    out->fpr_now = fmin(1.0, fpr);
    out->saturated = (double)f->used >= 0.98 * (double)f->max_used || out->fpr_now > out->fpr_target;
    out->seed = f->seed;
    if (f->xq) bk__xq_stats(f, out);
}

uint32_t bk_quotient_quotient_bits(const bk_quotient *f) { return f->qbits; }
uint32_t bk_quotient_remainder_bits(const bk_quotient *f) { return f->rbits; }
uint64_t bk_quotient_slots(const bk_quotient *f) { return f->nslots; }
/* a filter of stages was made for its first stage's target */
double bk_quotient_fpr_target(const bk_quotient *f) { return f->nolder ? f->older[0]->fpr_target : f->fpr_target; }

double bk_quotient_grown_fpr(const bk_quotient *f, uint32_t doublings)
{
    if (f->xq) return bk__xq_grown_fpr(f, doublings);
    if (doublings >= f->rbits || doublings > 32) return NAN;
    uint64_t s = f->nslots << doublings;
    double b = bk_quotient_fpr_slots((uint64_t)floor(f->max_load * (double)s), s, f->rbits - doublings);
    for (uint32_t i = 0; i < f->nolder; i++) b += bk__qf_bound(f->older[i]); /* the full stages */
    return b;
}
uint64_t bk_quotient_slots_used(const bk_quotient *f) { return f->used; }
uint32_t bk_quotient_stages(const bk_quotient *f) { return f->nolder + 1; }
/* sums over the stages */
uint64_t bk_quotient_distinct(const bk_quotient *f)
{
    uint64_t d = f->distinct;
    for (uint32_t i = 0; i < f->nolder; i++) d += f->older[i]->distinct;
    return d;
}
uint64_t bk_quotient_total(const bk_quotient *f)
{
    uint64_t t = f->total;
    for (uint32_t i = 0; i < f->nolder; i++) t = t > UINT64_MAX - f->older[i]->total ? UINT64_MAX : t + f->older[i]->total;
    return t;
}
uint64_t bk_quotient_seed(const bk_quotient *f) { return f->seed; }
double bk_quotient_max_load(const bk_quotient *f) { return f->max_load; }
uint64_t bk_quotient_memory(const bk_quotient *f)
{
    uint64_t m = table_memory(f);
    for (uint32_t i = 0; i < f->nolder; i++) m += table_memory(f->older[i]);
    return m;
}
bk_quotient_path bk_quotient_path_of(const bk_quotient *f)
{
    return f->bmi2 ? BK_QUOTIENT_BMI2 : BK_QUOTIENT_PORTABLE;
}
bk_status bk_quotient_set_path(bk_quotient *f, bk_quotient_path p)
{
    if (!f || p < BK_QUOTIENT_AUTO || p > BK_QUOTIENT_BMI2) return BK_EINVAL;
    if (p == BK_QUOTIENT_BMI2 && !bk_quotient_bmi2_available()) return BK_ENOTSUP;
    f->path_asked = p;
    f->bmi2 = bk__qf_resolve_path(p);
    return BK_OK;
}

