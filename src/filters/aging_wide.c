/*
 * The aging filter's wide body (docs/FORMAT.md 6.7, body 2): the inserts and queries of rings whose
 * generations are blocks of 512 or 1024 bits (bw = 8 or 16 words) with k probes, the blocked
 * engine's 512- and 1024-bit probe bits (core/blocked_engine.h), chosen by the sizing for p below
 * 1% (aging.c). A bucket is the g blocks of one block index side by side, so a key still costs one
 * bucket per query: g lines (or line pairs) in a row, which the CPU's prefetchers fetch together.
 * The ring, its turns and the epoch arithmetic are those of every aging filter (aging_impl.h); the
 * code here is written once for both block sizes, each loop instantiated with bw a constant, and
 * for two paths that differ only in the block test (64-bit words, or AVX2's 256-bit andnot and
 * testz), chosen once per filter like the SPLIT256 rings' paths.
 */
#include "filters/aging_impl.h"
#include "core/blocked_engine.h"
#include "core/simd.h"

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

#ifdef BK_X86
/* The same answer with 256-bit tests: a block holds the key when no probe bit is missing from it. */
BK_T_AVX2 BK_INLINE slot_set wide_found_avx2(const uint64_t *b, uint32_t g, uint32_t bw, const uint64_t m[16])
{
    __m256i mv[4];
    for (uint32_t v = 0; v < bw / 4; v++) mv[v] = _mm256_loadu_si256((const __m256i *)(const void *)(m + 4 * v));
    slot_set found = 0;
    for (uint32_t j = 0; j < g; j++, b += bw) {
        const __m256i *w = (const __m256i *)(const void *)b;
        __m256i miss = _mm256_andnot_si256(_mm256_load_si256(w), mv[0]);
        for (uint32_t v = 1; v < bw / 4; v++) miss = _mm256_or_si256(miss, _mm256_andnot_si256(_mm256_load_si256(w + v), mv[v]));
        found |= (slot_set)_mm256_testz_si256(miss, miss) << j;
    }
    return found;
}
#endif

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

typedef slot_set (*wide_found_fn)(const uint64_t *b, uint32_t g, uint32_t bw, const uint64_t m[16]);

BK_INLINE void prefetch_lines(const uint64_t *p, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64) BK_PREFETCH((const char *)p + o);
}

/* ---- one key ---- */

BK_INLINE bool contains_bw(const bk_aging *f, uint64_t h, slot_set live, uint32_t bw, wide_found_fn found)
{
    uint64_t m[16];
    uint64_t bi = bk__range64(h, f->blocks);
    wide_mask((uint32_t)h, f->k, bw, m);
    slot_set hit = found(f->words + bi * f->g * bw, f->g, bw, m);
    return (hit & wide_blocks_of(live, rot_of(bi, f->g), f->g)) != 0;
}

BK_INLINE bool contains1(const bk_aging *f, uint64_t h, wide_found_fn found)
{
    slot_set live = live_now(f);
    if (!live) return false;
    return f->bw == 8 ? contains_bw(f, h, live, 8, found) : contains_bw(f, h, live, 16, found);
}

/* Insert (and, with hit, first test every slot): the current slot's block takes the key. */
BK_INLINE bool add_bw(bk_aging *f, uint64_t h, uint32_t bw, bool test, wide_found_fn found)
{
    turn_if_full(f);
    uint64_t m[16];
    uint32_t s = cur_slot(f), g = f->g;
    uint64_t bi = bk__range64(h, f->blocks);
    uint64_t *b = f->words + bi * g * bw;
    wide_mask((uint32_t)h, f->k, bw, m);
    bool hit = test && found(b, g, bw, m) != 0;
    wide_insert(b + (uint64_t)bw * slot_pos(s, bi, g), bw, m);
    f->count[s]++;
    f->inserted++;
    return hit;
}

static bk_status wide_add1(bk_aging *f, uint64_t h)
{
    advance_time(f);
    if (f->bw == 8)
        add_bw(f, h, 8, false, wide_found);
    else
        add_bw(f, h, 16, false, wide_found);
    return BK_OK;
}

/* After advance_time every slot is live (a time window's insert turns the ring to now first). */
BK_INLINE bk_status aia1(bk_aging *f, uint64_t h, wide_found_fn found)
{
    advance_time(f);
    bool hit = f->bw == 8 ? add_bw(f, h, 8, true, found) : add_bw(f, h, 16, true, found);
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
                                 uint32_t bw, wide_found_fn found)
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
        bool r = (found(words + bi * g * bw, g, bw, m) & wide_blocks_of(live, rot_of(bi, g), g)) != 0;
        if (res) res[i] = r;
        present += r;
    }
    return present;
}

BK_INLINE size_t contains_hashes(const bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live,
                                 wide_found_fn found)
{
    return f->bw == 8 ? contains_run_bw(f, hs, n, res, live, 8, found) : contains_run_bw(f, hs, n, res, live, 16, found);
}

/* Every slot is live here (the caller advanced a time window to now), as in the one-key form. */
BK_INLINE size_t aia_run_bw(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, uint32_t bw, wide_found_fn found)
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
            bool r = found(b, g, bw, m) != 0;
            wide_insert(b + (uint64_t)bw * slot_pos(s, bi, g), bw, m);
            if (res) res[i] = r;
            present += r;
        }
        f->count[s] += take;
    }
    f->inserted += n;
    return present;
}

BK_INLINE size_t aia_hashes(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, wide_found_fn found)
{
    return f->bw == 8 ? aia_run_bw(f, hs, n, res, 8, found) : aia_run_bw(f, hs, n, res, 16, found);
}

/* ---- the paths: the tests of a block in 64-bit words, or (AVX2) in 256-bit vectors; the inserts
 * are the same code on both (an or of the mask's words) ---- */

static bool scalar_contains1(const bk_aging *f, uint64_t h) { return contains1(f, h, wide_found); }
static bk_status scalar_aia1(bk_aging *f, uint64_t h) { return aia1(f, h, wide_found); }
static size_t scalar_contains_hashes(const bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live)
{
    return contains_hashes(f, hs, n, res, live, wide_found);
}
static size_t scalar_aia_hashes(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live)
{
    (void)live; /* every slot: the caller advanced a time window to now */
    return aia_hashes(f, hs, n, res, wide_found);
}
static const aging_ops wide_scalar_ops = {
    .any = { scalar_contains1, wide_add1, scalar_aia1 },
    .count4 = { scalar_contains1, wide_add1, scalar_aia1 },
    .add_hashes = wide_add_hashes,
    .contains_hashes = scalar_contains_hashes,
    .add_if_absent_hashes = scalar_aia_hashes,
};

#ifdef BK_X86
#  define BK_T_WIDE_AVX2 __attribute__((target("avx2")))
BK_T_WIDE_AVX2 static bool avx2_contains1(const bk_aging *f, uint64_t h) { return contains1(f, h, wide_found_avx2); }
BK_T_WIDE_AVX2 static bk_status avx2_aia1(bk_aging *f, uint64_t h) { return aia1(f, h, wide_found_avx2); }
BK_T_WIDE_AVX2 static size_t avx2_contains_hashes(const bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res,
                                                  slot_set live)
{
    return contains_hashes(f, hs, n, res, live, wide_found_avx2);
}
BK_T_WIDE_AVX2 static size_t avx2_aia_hashes(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live)
{
    (void)live;
    return aia_hashes(f, hs, n, res, wide_found_avx2);
}
static const aging_ops wide_avx2_ops = {
    .any = { avx2_contains1, wide_add1, avx2_aia1 },
    .count4 = { avx2_contains1, wide_add1, avx2_aia1 },
    .add_hashes = wide_add_hashes,
    .contains_hashes = avx2_contains_hashes,
    .add_if_absent_hashes = avx2_aia_hashes,
};
#endif

const aging_ops *bk__aging_wide_ops(void)
{
#ifdef BK_X86
    if (bk__simd_resolve(BK_SIMD_AUTO) >= BK_SIMD_AVX2) return &wide_avx2_ops;
#endif
    return &wide_scalar_ops;
}
