/*
 * The aging filter's wide body (docs/FORMAT.md 6.7, body 2): the inserts and queries of rings whose
 * generations are blocks of 512 or 1024 bits (bw = 8 or 16 words) with k probes, the blocked
 * engine's 512- and 1024-bit probe bits (core/blocked_engine.h), chosen by the sizing for p below
 * 1% (aging.c). A bucket is the g blocks of one block index side by side, so a key still costs one
 * bucket per query: g lines (or line pairs) in a row, which the CPU's prefetchers fetch together.
 * The ring, its turns and the epoch arithmetic are those of every aging filter (aging_impl.h); the
 * code here is written once for both block sizes, each loop instantiated with bw a constant.
 */
#include "filters/aging_impl.h"
#include "core/blocked_engine.h"

/* Keys ahead whose bucket a batch loop prefetches. */
#define WIDE_PF 8

/* The key's probes in its block as bw words. */
BK_INLINE void wide_mask(uint32_t x, uint32_t k, uint32_t bw, uint64_t m[16])
{
    for (uint32_t i = 0; i < bw; i++) m[i] = 0;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t b = bw == 8 ? bk__b512_bit(x, i) : bk__b1024_bit(x, i);
        m[b >> 6] |= UINT64_C(1) << (b & 63);
    }
}

/* The blocks among the g of bucket b that hold every probe of m. */
BK_INLINE slot_set wide_found(const uint64_t *b, uint32_t g, uint32_t bw, const uint64_t m[16])
{
    slot_set found = 0;
    for (uint32_t j = 0; j < g; j++, b += bw) {
        uint64_t miss = 0;
        for (uint32_t i = 0; i < bw; i++) miss |= m[i] & ~b[i];
        found |= (slot_set)(miss == 0) << j;
    }
    return found;
}

BK_INLINE void wide_insert(uint64_t *block, uint32_t bw, const uint64_t m[16])
{
    for (uint32_t i = 0; i < bw; i++) block[i] |= m[i];
}

/* A set of slots as the set of their blocks in a bucket of rotation r. */
BK_INLINE slot_set wide_blocks_of(slot_set slots, uint32_t r, uint32_t g)
{
    slot_set all = (slot_set)((UINT64_C(1) << g) - 1);
    if (slots == all) return all;
    return ((slots << r) | (slots >> (g - r))) & all;
}

BK_INLINE void prefetch_lines(const uint64_t *p, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64) BK_PREFETCH((const char *)p + o);
}

/* ---- one key ---- */

BK_INLINE bool contains_bw(const bk_aging *f, uint64_t h, slot_set live, uint32_t bw)
{
    uint64_t m[16];
    uint64_t bi = bk__range64(h, f->blocks);
    wide_mask((uint32_t)h, f->k, bw, m);
    slot_set hit = wide_found(f->words + bi * f->g * bw, f->g, bw, m);
    return (hit & wide_blocks_of(live, rot_of(bi, f->g), f->g)) != 0;
}

static bool wide_contains1(const bk_aging *f, uint64_t h)
{
    slot_set live = live_now(f);
    if (!live) return false;
    return f->bw == 8 ? contains_bw(f, h, live, 8) : contains_bw(f, h, live, 16);
}

/* Insert (and, with hit, first test every slot): the current slot's block takes the key. */
BK_INLINE bool add_bw(bk_aging *f, uint64_t h, uint32_t bw, bool test)
{
    turn_if_full(f);
    uint64_t m[16];
    uint32_t s = cur_slot(f), g = f->g;
    uint64_t bi = bk__range64(h, f->blocks);
    uint64_t *b = f->words + bi * g * bw;
    wide_mask((uint32_t)h, f->k, bw, m);
    bool hit = test && wide_found(b, g, bw, m) != 0;
    wide_insert(b + (uint64_t)bw * slot_pos(s, bi, g), bw, m);
    f->count[s]++;
    f->inserted++;
    return hit;
}

static bk_status wide_add1(bk_aging *f, uint64_t h)
{
    advance_time(f);
    if (f->bw == 8)
        add_bw(f, h, 8, false);
    else
        add_bw(f, h, 16, false);
    return BK_OK;
}

/* After advance_time every slot is live (a time window's insert turns the ring to now first). */
static bk_status wide_aia1(bk_aging *f, uint64_t h)
{
    advance_time(f);
    bool hit = f->bw == 8 ? add_bw(f, h, 8, true) : add_bw(f, h, 16, true);
    return hit ? BK_EEXISTS : BK_OK;
}

/* ---- batches ---- */

BK_INLINE void add_run_bw(bk_aging *f, const uint64_t *hs, size_t n, uint32_t bw)
{
    uint64_t *words = f->words, blocks = f->blocks;
    uint32_t g = f->g, k = f->k;
    for (size_t i = 0; i < n;) {
        size_t take = chunk_of(f, n - i), end = i + take;
        uint32_t s = cur_slot(f);
        for (; i < end; i++) {
            if (i + WIDE_PF < n) {
                uint64_t bj = bk__range64(hs[i + WIDE_PF], blocks);
                BK_PREFETCH_W(words + (bj * g + slot_pos(s, bj, g)) * bw);
            }
            uint64_t m[16];
            uint64_t bi = bk__range64(hs[i], blocks);
            wide_mask((uint32_t)hs[i], k, bw, m);
            wide_insert(words + (bi * g + slot_pos(s, bi, g)) * bw, bw, m);
        }
        f->count[s] += take;
    }
    f->inserted += n;
}

static void wide_add_hashes(bk_aging *f, const uint64_t *hs, size_t n)
{
    if (f->bw == 8)
        add_run_bw(f, hs, n, 8);
    else
        add_run_bw(f, hs, n, 16);
}

BK_INLINE size_t contains_run_bw(const bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live,
                                 uint32_t bw)
{
    const uint64_t *words = f->words;
    uint64_t blocks = f->blocks;
    uint32_t g = f->g, k = f->k;
    size_t bucket = (size_t)g * bw * 8, present = 0;
    for (size_t i = 0; i < n && i < WIDE_PF; i++) prefetch_lines(words + bk__range64(hs[i], blocks) * g * bw, bucket);
    for (size_t i = 0; i < n; i++) {
        if (i + WIDE_PF < n) prefetch_lines(words + bk__range64(hs[i + WIDE_PF], blocks) * g * bw, bucket);
        uint64_t m[16];
        uint64_t bi = bk__range64(hs[i], blocks);
        wide_mask((uint32_t)hs[i], k, bw, m);
        bool r = (wide_found(words + bi * g * bw, g, bw, m) & wide_blocks_of(live, rot_of(bi, g), g)) != 0;
        if (res) res[i] = r;
        present += r;
    }
    return present;
}

static size_t wide_contains_hashes(const bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live)
{
    return f->bw == 8 ? contains_run_bw(f, hs, n, res, live, 8) : contains_run_bw(f, hs, n, res, live, 16);
}

/* Every slot is live here (the caller advanced a time window to now), as in the one-key form. */
BK_INLINE size_t aia_run_bw(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, uint32_t bw)
{
    uint64_t *words = f->words, blocks = f->blocks;
    uint32_t g = f->g, k = f->k;
    size_t bucket = (size_t)g * bw * 8, present = 0;
    for (size_t i = 0; i < n && i < WIDE_PF; i++) prefetch_lines(words + bk__range64(hs[i], blocks) * g * bw, bucket);
    for (size_t i = 0; i < n;) {
        size_t take = chunk_of(f, n - i), end = i + take;
        uint32_t s = cur_slot(f);
        for (; i < end; i++) {
            if (i + WIDE_PF < n) prefetch_lines(words + bk__range64(hs[i + WIDE_PF], blocks) * g * bw, bucket);
            uint64_t m[16];
            uint64_t bi = bk__range64(hs[i], blocks);
            uint64_t *b = words + bi * g * bw;
            wide_mask((uint32_t)hs[i], k, bw, m);
            bool r = wide_found(b, g, bw, m) != 0;
            wide_insert(b + (uint64_t)bw * slot_pos(s, bi, g), bw, m);
            if (res) res[i] = r;
            present += r;
        }
        f->count[s] += take;
    }
    f->inserted += n;
    return present;
}

static size_t wide_aia_hashes(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live)
{
    (void)live;
    return f->bw == 8 ? aia_run_bw(f, hs, n, res, 8) : aia_run_bw(f, hs, n, res, 16);
}

static const aging_ops wide_ops = {
    .any = { wide_contains1, wide_add1, wide_aia1 },
    .count4 = { wide_contains1, wide_add1, wide_aia1 },
    .add_hashes = wide_add_hashes,
    .contains_hashes = wide_contains_hashes,
    .add_if_absent_hashes = wide_aia_hashes,
};

const aging_ops *bk__aging_wide_ops(void) { return &wide_ops; }
