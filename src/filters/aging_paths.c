/*
 * The aging filter's insert and query code (aging.c holds the ring, sizing, lifetime and the public
 * calls): the probe kernels of the scalar and AVX2 paths, the one-key and batch loops written once,
 * and each path's table of adapters (aging_ops, chosen once per filter by bk__aging_ops_for_cpu).
 * The probe bits are the blocked engine's SPLIT256 bits (core/blocked_engine.h), so a generation's
 * block holds exactly the bits a SPLIT256 blocked filter of `blocks` blocks would set for the hash.
 */
#include "filters/aging_impl.h"
#include "core/blocked_engine.h"
#include "core/simd.h"

/* How many keys ahead the batch loops prefetch: an insert's one line (BK_AGING_ADD_PF) and a query's
 * two (BK_AGING_QUERY_PF). Once an array outgrows the last-level cache nearly every prefetch goes to
 * DRAM, whose latency (150 to several hundred ns) is many keys' worth of work at a
 * few ns per key: with 16 keys ahead the loop waits for it 16 keys at a time. 32 to 128 ahead
 * measured faster than 16 at W = 10M (bench/README.md, "Aging filter"). */
#ifndef BK_AGING_ADD_PF
#  define BK_AGING_ADD_PF 64
#endif
#ifndef BK_AGING_QUERY_PF
#  define BK_AGING_QUERY_PF 48
#endif

/* The ring of buckets in flight of the g = 4 query loop: a power of two above BK_AGING_QUERY_PF. */
#define BK_AGING_RING 64
#if BK_AGING_QUERY_PF >= BK_AGING_RING
#  error "BK_AGING_QUERY_PF must stay below BK_AGING_RING"
#endif

/* ================= probes ================= */

BK_INLINE uint64_t bucket_index(const bk_aging *f, uint64_t h) { return bk__range64(h, f->blocks); }
/* The bucket of hash h in a ring of 4 generations (16 words a bucket), both its lines prefetched: what the
 * batch loops of 4-generation rings compute for the key BK_AGING_QUERY_PF ahead. */
BK_INLINE uint64_t bucket4_prefetch(const uint64_t *words, uint64_t blocks, uint64_t h)
{
    uint64_t b = bk__range64(h, blocks);
    BK_PREFETCH(words + b * 16);
    BK_PREFETCH(words + b * 16 + 8);
    return b;
}

/* A set of slots as the set of their blocks in a bucket of rotation r: a rotation left by r within g
 * bits (every slot, the count window's case, is every block). */
BK_INLINE slot_set blocks_of(slot_set slots, uint32_t r, uint32_t g)
{
    slot_set all = (slot_set)((UINT64_C(1) << g) - 1);
    if (slots == all) return all;
    return ((slots << r) | (slots >> (g - r))) & all;
}

/*
 * The kernels of a path: the blocks among the g of a bucket that hold h, whether any of the 4 blocks
 * of a g = 4 bucket holds it, an insert into one block, and the popcount of a bucket index (its
 * rotation). The masks are the blocked engine's SPLIT256 masks (core/blocked_engine.h:
 * bk__split_word, bk__split_mask_avx2). Each is always inlined into the loops of its path, where
 * the default g = 4 is a constant (a call per key would cost more than the probe). These work on
 * block positions; the callers turn slots into positions (pos_of, blocks_of). A query tests every
 * block without a branch: an absent key needs every block's answer anyway, and for a present key a
 * branch on which block holds it is unpredictable (the block of a generation rotates from bucket
 * to bucket), costing more than the tests it would skip.
 */
typedef slot_set (*ag_found_fn)(const uint64_t *b, uint32_t g, uint64_t h);
typedef bool (*ag_any4_fn)(const uint64_t *b, uint64_t h);
typedef void (*ag_insert_fn)(uint64_t *block, uint64_t h);
typedef uint32_t (*ag_popcount_fn)(uint64_t x);

BK_INLINE slot_set found_scalar(const uint64_t *b, uint32_t g, uint64_t h)
{
    uint32_t x = (uint32_t)h;
    uint64_t m0 = bk__split_word(x, 0), m1 = bk__split_word(x, 1), m2 = bk__split_word(x, 2),
             m3 = bk__split_word(x, 3);
    slot_set found = 0;
#pragma GCC unroll 4
    for (uint32_t j = 0; j < g; j++) {
        const uint64_t *w = b + 4 * j;
        found |= (slot_set)(((m0 & ~w[0]) | (m1 & ~w[1]) | (m2 & ~w[2]) | (m3 & ~w[3])) == 0) << j;
    }
    return found;
}

BK_INLINE bool found_any4_scalar(const uint64_t *b, uint64_t h) { return found_scalar(b, 4, h) != 0; }

BK_INLINE void insert_scalar(uint64_t *block, uint64_t h)
{
    uint32_t x = (uint32_t)h;
    block[0] |= bk__split_word(x, 0);
    block[1] |= bk__split_word(x, 1);
    block[2] |= bk__split_word(x, 2);
    block[3] |= bk__split_word(x, 3);
}

#ifdef BK_X86
BK_T_AVX2 BK_INLINE slot_set found_avx2(const uint64_t *b, uint32_t g, uint64_t h)
{
    const __m256i *v = (const __m256i *)(const void *)b;
    __m256i mask = bk__split_mask_avx2((uint32_t)h);
    slot_set found = 0;
#pragma GCC unroll 4
    for (uint32_t j = 0; j < g; j++) found |= (slot_set)_mm256_testc_si256(_mm256_load_si256(v + j), mask) << j;
    return found;
}

/* The answers are added, not or-ed: a sum of carry flags compiles to one add-with-carry per block
 * where an or of them takes a zeroing, a flag copy and an or. */
BK_T_AVX2 BK_INLINE bool found_any4_avx2(const uint64_t *b, uint64_t h)
{
    const __m256i *v = (const __m256i *)(const void *)b;
    __m256i mask = bk__split_mask_avx2((uint32_t)h);
    unsigned n = (unsigned)_mm256_testc_si256(_mm256_load_si256(v), mask);
    n += (unsigned)_mm256_testc_si256(_mm256_load_si256(v + 1), mask);
    n += (unsigned)_mm256_testc_si256(_mm256_load_si256(v + 2), mask);
    n += (unsigned)_mm256_testc_si256(_mm256_load_si256(v + 3), mask);
    return n != 0;
}

BK_T_AVX2 BK_INLINE void insert_avx2(uint64_t *block, uint64_t h)
{
    __m256i *b = (__m256i *)(void *)block;
    _mm256_store_si256(b, _mm256_or_si256(_mm256_load_si256(b), bk__split_mask_avx2((uint32_t)h)));
}

/* Every CPU with AVX2 has POPCNT: the AVX2 path counts with the instruction. */
__attribute__((target("popcnt"))) BK_INLINE uint32_t popcount_hw(uint64_t x)
{
    return (uint32_t)__builtin_popcountll(x);
}
#endif

/* The rotation of bucket b, and the block of `slot` in it. */
BK_INLINE uint32_t rot_by(uint64_t b, uint32_t g, ag_popcount_fn pop) { return rot_of_ones(pop(b), g); }
BK_INLINE uint32_t pos_by(uint32_t slot, uint64_t b, uint32_t g, ag_popcount_fn pop)
{
    return pos_of(slot, rot_by(b, g, pop), g);
}

/* The byte a prefetch of line l of a bucket of g blocks at p aims at: with g = 4 the bucket is the two
 * lines of a 128-byte aligned pair; otherwise line l of those the bucket spans from its first byte's. */
BK_INLINE const char *bucket_line(const uint64_t *p, uint32_t g, uint32_t l)
{
    if (g == 4) return (const char *)p + 64 * l;
    return (const char *)((uintptr_t)p & ~(uintptr_t)63) + 64 * l;
}

/* Every line of the bucket of g blocks at p, prefetched. */
BK_INLINE void prefetch_bucket(const uint64_t *p, uint32_t g)
{
    uint32_t lines = g == 4 ? 2u : (uint32_t)((((uintptr_t)p & 63) + g * 32u + 63) / 64);
    for (uint32_t l = 0; l < lines; l++) BK_PREFETCH(bucket_line(p, g, l));
}

/* The buckets of the first keys of a batch (up to BK_AGING_QUERY_PF of them), before a query loop
 * whose own prefetches reach that far ahead. */
BK_INLINE void prefetch_first(const uint64_t *words, uint64_t blocks, size_t stride, const uint64_t *hs, size_t n,
                              uint32_t g)
{
    size_t pre = n < BK_AGING_QUERY_PF ? n : BK_AGING_QUERY_PF;
    for (size_t i = 0; i < pre; i++) prefetch_bucket(words + bk__range64(hs[i], blocks) * stride, g);
}

/* ================= insert and query ================= */

/*
 * The loops are written once, as always-inlined functions taking the path's kernels (ag_*_fn) as
 * constant arguments; each path has a short table of adapters (scalar_ops, avx2_ops below), ordinary
 * functions compiled under the path's target attribute, that inline their kernels into these loops.
 *
 * The batch loops keep the ring's geometry in locals (a store into the ring may alias any field of the
 * filter as far as the compiler knows, and would force every field to be reloaded for every key), and
 * each is written once for any g and called with the constant 4 (the default) and with the filter's
 * g. They are software-pipelined: while probing key i they compute the bucket of a key further on and
 * prefetch it (both lines of the bucket of key i + BK_AGING_QUERY_PF for a query or an add-if-absent,
 * the current generation's block of key i + BK_AGING_ADD_PF, for writing, for an insert).
 *
 * A count window turns only between runs: a run is the keys the current generation still has room
 * for (C minus its count, chunk_of), so no key inside a run needs a turn check, and the turn falls
 * exactly where one key at a time has it (before the first key that finds the generation full). The
 * prefetches of the first BK_AGING_ADD_PF keys after a turn aimed at the previous generation's block:
 * the same bucket, so at worst the bucket's other line, once per generation.
 */

/* The ring's turn in a count window's one-key insert of g = 4: out of line, so that the insert
 * saves no registers and keeps the stack as it is. */
#define BK_AGING_COLD __attribute__((noinline, cold)) static

typedef bk_status (*ag_turn_fn)(bk_aging *f, uint64_t h);

/* ---- one key (aging_one) ---- */

/* Whether a slot of `live` holds h. Every block of the bucket is tested without a branch, so the
 * bucket's two lines are loaded together. */
BK_INLINE bool found_live(const bk_aging *f, uint64_t h, slot_set live, uint32_t g, ag_found_fn found,
                          ag_popcount_fn pop)
{
    uint64_t bi = bucket_index(f, h);
    return (found(f->words + bi * g * 4, g, h) & blocks_of(live, rot_by(bi, g, pop), g)) != 0;
}

/* Any window and g: a time window advances and tests its live slots. */
BK_INLINE bool one_contains(const bk_aging *f, uint64_t h, ag_found_fn found, ag_any4_fn any4, ag_popcount_fn pop)
{
    slot_set live = live_now(f);
    if (f->g == 4 && live == 15) return any4(f->words + bucket_index(f, h) * 16, h);
    if (!live) return false;
    return f->g == 4 ? found_live(f, h, live, 4, found, pop) : found_live(f, h, live, f->g, found, pop);
}

BK_INLINE void one_add_g(bk_aging *f, uint64_t h, uint32_t g, ag_insert_fn insert, ag_popcount_fn pop)
{
    turn_if_full(f);
    uint32_t s = cur_slot(f);
    uint64_t bi = bucket_index(f, h);
    insert(f->words + bi * g * 4 + 4 * pos_by(s, bi, g, pop), h);
    f->count[s]++;
    f->inserted++;
}

BK_INLINE bk_status one_add(bk_aging *f, uint64_t h, ag_insert_fn insert, ag_popcount_fn pop)
{
    advance_time(f);
    if (f->g == 4)
        one_add_g(f, h, 4, insert, pop);
    else
        one_add_g(f, h, f->g, insert, pop);
    return BK_OK;
}

BK_INLINE bool one_aia_g(bk_aging *f, uint64_t h, slot_set live, uint32_t g, ag_found_fn found, ag_insert_fn insert,
                         ag_popcount_fn pop)
{
    turn_if_full(f);
    uint32_t s = cur_slot(f);
    uint64_t bi = bucket_index(f, h);
    uint32_t r = rot_by(bi, g, pop), p = pos_of(s, r, g);
    uint64_t *b = f->words + bi * g * 4;
    slot_set hit = found(b, g, h) & blocks_of(live, r, g);
    if (!(hit >> p & 1)) insert(b + 4 * p, h);
    f->count[s]++;
    f->inserted++;
    return hit != 0;
}

BK_INLINE bk_status one_aia(bk_aging *f, uint64_t h, ag_found_fn found, ag_insert_fn insert, ag_popcount_fn pop)
{
    advance_time(f);
    slot_set live = all_slots(f);
    bool hit = f->g == 4 ? one_aia_g(f, h, live, 4, found, insert, pop) : one_aia_g(f, h, live, f->g, found, insert, pop);
    return hit ? BK_EEXISTS : BK_OK;
}

/* A count window of the default g = 4 has nothing left to decide: a query tests the four blocks with
 * no rotation to undo (any4 on the bucket), an insert writes the current slot's block after one
 * compare (the ring's turn, `turn`, out of line). */
BK_INLINE bk_status c4_add(bk_aging *f, uint64_t h, ag_insert_fn insert, ag_popcount_fn pop, ag_turn_fn turn)
{
    uint32_t s = f->cur;
    if (BK_UNLIKELY(f->count[s] >= f->gen_cap)) return turn(f, h);
    uint64_t bi = bucket_index(f, h);
    insert(f->words + bi * 16 + 4 * pos_by(s, bi, 4, pop), h);
    f->count[s]++;
    f->inserted++;
    return BK_OK;
}

/* The current slot's block takes the key whether or not a block holds it already (or-ing the bits it
 * holds writes them back unchanged): no branch on the loaded bits, whose outcome a stream of repeats
 * and new keys makes unpredictable. */
BK_INLINE bk_status c4_aia(bk_aging *f, uint64_t h, ag_any4_fn any4, ag_insert_fn insert, ag_popcount_fn pop,
                           ag_turn_fn turn)
{
    uint32_t s = f->cur;
    if (BK_UNLIKELY(f->count[s] >= f->gen_cap)) return turn(f, h);
    uint64_t bi = bucket_index(f, h);
    uint64_t *b = f->words + bi * 16;
    bool hit = any4(b, h);
    insert(b + 4 * pos_by(s, bi, 4, pop), h);
    f->count[s]++;
    f->inserted++;
    return hit ? BK_EEXISTS : BK_OK;
}

/* ---- batches ---- */

/* n keys into `slot`; `ahead` more keys of the caller's batch follow hs[n - 1] (prefetched). The block
 * of each key is computed once, when it is prefetched, and kept in a ring of the BK_AGING_ADD_PF
 * blocks in flight (the run's first ones are computed on entry). */
BK_INLINE void insert_run(uint64_t *words, uint64_t blocks, uint32_t g, uint32_t slot, const uint64_t *hs, size_t n,
                          size_t ahead, ag_insert_fn insert, ag_popcount_fn pop)
{
    size_t stride = (size_t)g * 4, m = n + ahead;
    uint64_t *at[BK_AGING_ADD_PF];
    for (size_t i = 0; i < n && i < BK_AGING_ADD_PF; i++) {
        uint64_t bi = bk__range64(hs[i], blocks);
        at[i] = words + bi * stride + 4 * pos_by(slot, bi, g, pop);
    }
    size_t i = 0, stop = m > BK_AGING_ADD_PF ? m - BK_AGING_ADD_PF : 0;
    if (stop > n) stop = n;
    for (; i < stop; i++) { /* the keys with one BK_AGING_ADD_PF further on to prefetch */
        uint64_t *b = at[i % BK_AGING_ADD_PF];
        uint64_t bj = bk__range64(hs[i + BK_AGING_ADD_PF], blocks);
        uint64_t *p = words + bj * stride + 4 * pos_by(slot, bj, g, pop);
        BK_PREFETCH_W(p);
        at[i % BK_AGING_ADD_PF] = p; /* key i + BK_AGING_ADD_PF's (read if it is in the run) */
        insert(b, hs[i]);
    }
    for (; i < n; i++) insert(at[i % BK_AGING_ADD_PF], hs[i]);
}

BK_INLINE void add_all(bk_aging *f, const uint64_t *hs, size_t n, uint32_t g, ag_insert_fn insert, ag_popcount_fn pop)
{
    uint64_t *words = f->words, blocks = f->blocks;
    size_t stride = (size_t)g * 4, pre = n < BK_AGING_ADD_PF ? n : BK_AGING_ADD_PF;
    for (size_t i = 0; i < pre; i++) {
        uint64_t bi = bk__range64(hs[i], blocks);
        BK_PREFETCH_W(words + bi * stride + 4 * pos_by(f->cur, bi, g, pop));
    }
    for (size_t i = 0; i < n;) {
        size_t take = chunk_of(f, n - i);
        uint32_t s = cur_slot(f);
        insert_run(words, blocks, g, s, hs + i, take, n - i - take, insert, pop);
        f->count[s] += take;
        i += take;
    }
    f->inserted += n;
}

BK_INLINE void batch_add(bk_aging *f, const uint64_t *hs, size_t n, ag_insert_fn insert, ag_popcount_fn pop)
{
    if (f->g == 4)
        add_all(f, hs, n, 4, insert, pop);
    else
        add_all(f, hs, n, f->g, insert, pop);
}

BK_INLINE size_t contains_run(const uint64_t *words, uint64_t blocks, uint32_t g, const uint64_t *hs, size_t n,
                              uint8_t *res, slot_set live, ag_found_fn found, ag_popcount_fn pop)
{
    size_t stride = (size_t)g * 4, present = 0;
    prefetch_first(words, blocks, stride, hs, n, g);
    for (size_t i = 0; i < n; i++) {
        if (i + BK_AGING_QUERY_PF < n) prefetch_bucket(words + bk__range64(hs[i + BK_AGING_QUERY_PF], blocks) * stride, g);
        uint64_t bi = bk__range64(hs[i], blocks);
        bool r = (found(words + bi * stride, g, hs[i]) & blocks_of(live, rot_by(bi, g, pop), g)) != 0;
        if (res) res[i] = r;
        present += r;
    }
    return present;
}

/* Every slot live at g = 4 (a count window, or a time window with no period gap): any block holding h
 * answers, so no rotation is undone. Each bucket is computed once, when it is prefetched, and kept in
 * a ring of BK_AGING_RING entries (the BK_AGING_QUERY_PF in flight). */
BK_INLINE size_t contains_all4(const uint64_t *words, uint64_t blocks, const uint64_t *hs, size_t n, uint8_t *res,
                               ag_any4_fn any4)
{
    const uint64_t *at[BK_AGING_RING];
    size_t pre = n < BK_AGING_QUERY_PF ? n : BK_AGING_QUERY_PF, present = 0, i = 0;
    for (size_t j = 0; j < pre; j++) at[j] = words + bucket4_prefetch(words, blocks, hs[j]) * 16;
    for (; i + BK_AGING_QUERY_PF < n; i++) {
        uint64_t b = bucket4_prefetch(words, blocks, hs[i + BK_AGING_QUERY_PF]);
        at[(i + BK_AGING_QUERY_PF) % BK_AGING_RING] = words + b * 16;
        bool r = any4(at[i % BK_AGING_RING], hs[i]);
        if (res) res[i] = r;
        present += r;
    }
    for (; i < n; i++) {
        bool r = any4(at[i % BK_AGING_RING], hs[i]);
        if (res) res[i] = r;
        present += r;
    }
    return present;
}

BK_INLINE size_t batch_contains(const bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live,
                                ag_found_fn found, ag_any4_fn any4, ag_popcount_fn pop)
{
    if (f->g == 4 && live == 15) return contains_all4(f->words, f->blocks, hs, n, res, any4);
    if (f->g == 4) return contains_run(f->words, f->blocks, 4, hs, n, res, live, found, pop);
    return contains_run(f->words, f->blocks, f->g, hs, n, res, live, found, pop);
}

/* Like insert_run, testing every live slot first and inserting only where the current one lacks the
 * key. */
BK_INLINE size_t aia_run(uint64_t *words, uint64_t blocks, uint32_t g, uint32_t slot, const uint64_t *hs, size_t n,
                         size_t ahead, uint8_t *res, slot_set live, ag_found_fn found, ag_insert_fn insert,
                         ag_popcount_fn pop)
{
    size_t stride = (size_t)g * 4, m = n + ahead, present = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + BK_AGING_QUERY_PF < m) prefetch_bucket(words + bk__range64(hs[i + BK_AGING_QUERY_PF], blocks) * stride, g);
        uint64_t bi = bk__range64(hs[i], blocks);
        uint64_t *b = words + bi * stride;
        uint32_t rot = rot_by(bi, g, pop), pos = pos_of(slot, rot, g);
        slot_set hit = found(b, g, hs[i]) & blocks_of(live, rot, g);
        if (!(hit >> pos & 1)) insert(b + 4 * pos, hs[i]);
        bool r = hit != 0;
        if (res) res[i] = r;
        present += r;
    }
    return present;
}

BK_INLINE size_t aia_all(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live, uint32_t g,
                         ag_found_fn found, ag_insert_fn insert, ag_popcount_fn pop)
{
    uint64_t *words = f->words, blocks = f->blocks;
    size_t stride = (size_t)g * 4, present = 0;
    prefetch_first(words, blocks, stride, hs, n, g);
    for (size_t i = 0; i < n;) {
        size_t take = chunk_of(f, n - i);
        uint32_t s = cur_slot(f);
        present += aia_run(words, blocks, g, s, hs + i, take, n - i - take, res ? res + i : NULL, live, found, insert,
                           pop);
        f->count[s] += take;
        i += take;
    }
    f->inserted += n;
    return present;
}

/* Every slot live at g = 4, as contains_all4: each bucket and its rotation are computed once, when the
 * bucket is prefetched, and kept in a ring of BK_AGING_RING entries across the runs of the batch (a
 * turn changes the slot, and with it the block an insert writes, not the bucket). */
BK_INLINE size_t aia_all4(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, ag_any4_fn any4,
                          ag_insert_fn insert, ag_popcount_fn pop)
{
    uint64_t *words = f->words, blocks = f->blocks;
    uint64_t *at[BK_AGING_RING];
    uint8_t rot[BK_AGING_RING];
    size_t pre = n < BK_AGING_QUERY_PF ? n : BK_AGING_QUERY_PF, present = 0;
    for (size_t j = 0; j < pre; j++) {
        uint64_t bj = bucket4_prefetch(words, blocks, hs[j]);
        at[j] = words + bj * 16;
        rot[j] = (uint8_t)rot_by(bj, 4, pop);
    }
    for (size_t i = 0; i < n;) {
        size_t take = chunk_of(f, n - i), end = i + take;
        uint32_t s = cur_slot(f);
        for (; i < end; i++) {
            if (i + BK_AGING_QUERY_PF < n) {
                size_t k = (i + BK_AGING_QUERY_PF) % BK_AGING_RING;
                uint64_t bj = bucket4_prefetch(words, blocks, hs[i + BK_AGING_QUERY_PF]);
                at[k] = words + bj * 16;
                rot[k] = (uint8_t)rot_by(bj, 4, pop);
            }
            uint64_t *b = at[i % BK_AGING_RING];
            bool r = any4(b, hs[i]);
            insert(b + 4 * pos_of(s, rot[i % BK_AGING_RING], 4), hs[i]); /* as c4_aia */
            if (res) res[i] = r;
            present += r;
        }
        f->count[s] += take;
    }
    f->inserted += n;
    return present;
}

BK_INLINE size_t batch_aia(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live, ag_found_fn found,
                           ag_any4_fn any4, ag_insert_fn insert, ag_popcount_fn pop)
{
    if (f->g == 4 && live == 15) return aia_all4(f, hs, n, res, any4, insert, pop);
    if (f->g == 4) return aia_all(f, hs, n, res, live, 4, found, insert, pop);
    return aia_all(f, hs, n, res, live, f->g, found, insert, pop);
}

/* ---- the paths: each an adapter table, compiled under the path's target ---- */

static bool scalar_contains1(const bk_aging *f, uint64_t h)
{
    return one_contains(f, h, found_scalar, found_any4_scalar, popcount_swar);
}
static bk_status scalar_add1(bk_aging *f, uint64_t h) { return one_add(f, h, insert_scalar, popcount_swar); }
static bk_status scalar_aia1(bk_aging *f, uint64_t h) { return one_aia(f, h, found_scalar, insert_scalar, popcount_swar); }
static bool scalar_contains1_c4(const bk_aging *f, uint64_t h)
{
    return found_any4_scalar(f->words + bucket_index(f, h) * 16, h);
}
BK_AGING_COLD bk_status scalar_add1_turn(bk_aging *f, uint64_t h)
{
    one_add_g(f, h, 4, insert_scalar, popcount_swar); /* turns first */
    return BK_OK;
}
static bk_status scalar_add1_c4(bk_aging *f, uint64_t h)
{
    return c4_add(f, h, insert_scalar, popcount_swar, scalar_add1_turn);
}
BK_AGING_COLD bk_status scalar_aia1_turn(bk_aging *f, uint64_t h)
{
    return one_aia_g(f, h, 15, 4, found_scalar, insert_scalar, popcount_swar) ? BK_EEXISTS : BK_OK;
}
static bk_status scalar_aia1_c4(bk_aging *f, uint64_t h)
{
    return c4_aia(f, h, found_any4_scalar, insert_scalar, popcount_swar, scalar_aia1_turn);
}
static void scalar_add_hashes(bk_aging *f, const uint64_t *hs, size_t n) { batch_add(f, hs, n, insert_scalar, popcount_swar); }
static size_t scalar_contains_hashes(const bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live)
{
    return batch_contains(f, hs, n, res, live, found_scalar, found_any4_scalar, popcount_swar);
}
static size_t scalar_aia_hashes(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live)
{
    return batch_aia(f, hs, n, res, live, found_scalar, found_any4_scalar, insert_scalar, popcount_swar);
}
static const aging_ops scalar_ops = {
    .any = { scalar_contains1, scalar_add1, scalar_aia1 },
    .count4 = { scalar_contains1_c4, scalar_add1_c4, scalar_aia1_c4 },
    .add_hashes = scalar_add_hashes,
    .contains_hashes = scalar_contains_hashes,
    .add_if_absent_hashes = scalar_aia_hashes,
};

#ifdef BK_X86
#  define BK_T_AGING_AVX2 __attribute__((target("avx2,popcnt")))
BK_T_AGING_AVX2 static bool avx2_contains1(const bk_aging *f, uint64_t h)
{
    return one_contains(f, h, found_avx2, found_any4_avx2, popcount_hw);
}
BK_T_AGING_AVX2 static bk_status avx2_add1(bk_aging *f, uint64_t h) { return one_add(f, h, insert_avx2, popcount_hw); }
BK_T_AGING_AVX2 static bk_status avx2_aia1(bk_aging *f, uint64_t h)
{
    return one_aia(f, h, found_avx2, insert_avx2, popcount_hw);
}
BK_T_AGING_AVX2 static bool avx2_contains1_c4(const bk_aging *f, uint64_t h)
{
    return found_any4_avx2(f->words + bucket_index(f, h) * 16, h);
}
BK_T_AGING_AVX2 BK_AGING_COLD bk_status avx2_add1_turn(bk_aging *f, uint64_t h)
{
    one_add_g(f, h, 4, insert_avx2, popcount_hw); /* turns first */
    return BK_OK;
}
BK_T_AGING_AVX2 static bk_status avx2_add1_c4(bk_aging *f, uint64_t h)
{
    return c4_add(f, h, insert_avx2, popcount_hw, avx2_add1_turn);
}
BK_T_AGING_AVX2 BK_AGING_COLD bk_status avx2_aia1_turn(bk_aging *f, uint64_t h)
{
    return one_aia_g(f, h, 15, 4, found_avx2, insert_avx2, popcount_hw) ? BK_EEXISTS : BK_OK;
}
BK_T_AGING_AVX2 static bk_status avx2_aia1_c4(bk_aging *f, uint64_t h)
{
    return c4_aia(f, h, found_any4_avx2, insert_avx2, popcount_hw, avx2_aia1_turn);
}
BK_T_AGING_AVX2 static void avx2_add_hashes(bk_aging *f, const uint64_t *hs, size_t n)
{
    batch_add(f, hs, n, insert_avx2, popcount_hw);
}
BK_T_AGING_AVX2 static size_t avx2_contains_hashes(const bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res,
                                                   slot_set live)
{
    return batch_contains(f, hs, n, res, live, found_avx2, found_any4_avx2, popcount_hw);
}
BK_T_AGING_AVX2 static size_t avx2_aia_hashes(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, slot_set live)
{
    return batch_aia(f, hs, n, res, live, found_avx2, found_any4_avx2, insert_avx2, popcount_hw);
}
static const aging_ops avx2_ops = {
    .any = { avx2_contains1, avx2_add1, avx2_aia1 },
    .count4 = { avx2_contains1_c4, avx2_add1_c4, avx2_aia1_c4 },
    .add_hashes = avx2_add_hashes,
    .contains_hashes = avx2_contains_hashes,
    .add_if_absent_hashes = avx2_aia_hashes,
};
#endif

const aging_ops *bk__aging_ops_for_cpu(void)
{
#ifdef BK_X86
    if (bk__simd_resolve(BK_SIMD_AUTO) >= BK_SIMD_AVX2) return &avx2_ops;
#endif
    return &scalar_ops;
}
