/*
 * Aging filter: a ring of g split-block generations sharing their block index (include/bloomkit/aging.h;
 * the math in docs/MATH.md, "Aging filter").
 *
 * Memory: bucket b (b in [0, blocks)) is g * 4 words at words + b * g * 4; its 4-word block
 * (j + popcount(b)) mod g belongs to generation slot j (slot_pos). With one fixed offset for every
 * bucket, a generation's blocks (g = 4: a bucket is a 128-byte pair of lines) would all sit in the
 * first, or all in the second, line of their pair: the lines one generation's inserts write would
 * be the even (or odd) lines of the array, which a cache indexed from address bit 6 maps to half of
 * its sets, so for inserts the cache would act as half its size. Rotating by b mod g does not help:
 * b and b + S/2 (S sets) still land in the same set. Rotating by the popcount does, for any number of
 * sets: b and b with one bit flipped have rotations one apart, so over the buckets a set's index
 * bits leave free, a generation's block is in either line of the pair about equally often. The
 * bucket of hash h is bk__range64(h, blocks) and the 8 probe bits within a
 * block are the blocked filter's SPLIT256 bits of the low 32 bits of h (bk_blocked__view_word and the
 * AVX2 mask of blocked.h), so a generation's block holds exactly the bits a SPLIT256 blocked filter of
 * `blocks` blocks would set for the same hash.
 *
 * Epochs: the ring has turned `epoch` times; generation slot epoch % g is the current one, and slot
 * (epoch - a) % g holds the keys of age a (a < g). A count window turns when the current slot has had
 * C insertions. A time window's epoch is now / period (ms since the clock's origin), so two filters
 * with the same period agree on which slot holds which period (union) and a reloaded filter continues
 * where it was. Queries of a time window test only the slots still live at the query's time.
 */
#include <math.h>
#include <time.h>
#include "filters/aging_impl.h"
#include "core/simd.h"
#include "bloomkit/aging.h"
#include "bloomkit/blocked.h"

/* How many keys ahead the batch loops prefetch: an insert's one line (BK_AGING_ADD_PF) and a query's
 * two (BK_AGING_QUERY_PF). Once an array outgrows the last-level cache nearly every prefetch goes to
 * DRAM, whose latency (150-470 ns measured on a loaded 2-core machine) is many keys' worth of work at a
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

static const aging_ops *path_for_cpu(void);

static uint64_t wall_clock_ms(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t bk_aging_monotonic_ms(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ================= probes ================= */

static const uint32_t SALT[8] = { BK_BLOCKED__SALTS };

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

typedef struct probe_mask {
    uint64_t m[4];
} probe_mask;

BK_INLINE probe_mask mask_of(uint64_t h)
{
    uint32_t x = (uint32_t)h;
    probe_mask p = { { bk_blocked__view_word(x, SALT[0], SALT[1]), bk_blocked__view_word(x, SALT[2], SALT[3]),
                       bk_blocked__view_word(x, SALT[4], SALT[5]), bk_blocked__view_word(x, SALT[6], SALT[7]) } };
    return p;
}

BK_INLINE void set_block(uint64_t *b, const probe_mask *p)
{
    b[0] |= p->m[0];
    b[1] |= p->m[1];
    b[2] |= p->m[2];
    b[3] |= p->m[3];
}

BK_INLINE bool has_block(const uint64_t *b, const probe_mask *p)
{
    return ((p->m[0] & ~b[0]) | (p->m[1] & ~b[1]) | (p->m[2] & ~b[2]) | (p->m[3] & ~b[3])) == 0;
}

/* The blocks among the g of bucket b that hold h, and an insert into one block: scalar and AVX2
 * forms, always inlined into the loops of their path, where the default g = 4 is a constant (a call
 * per key would cost more than the probe). These work on block positions; the callers turn slots
 * into positions (slot_pos, blocks_of). A query tests every block without a branch: an absent key
 * needs every block's answer anyway, and for a present key a branch on which block holds it is
 * unpredictable (the block of a generation rotates from bucket to bucket), costing more than the
 * tests it would skip. */
BK_INLINE slot_set found_scalar(const uint64_t *b, uint32_t g, uint64_t h)
{
    probe_mask p = mask_of(h);
    slot_set found = 0;
#pragma GCC unroll 4
    for (uint32_t j = 0; j < g; j++) found |= (slot_set)has_block(b + 4 * j, &p) << j;
    return found;
}

BK_INLINE void insert_scalar(uint64_t *block, uint64_t h)
{
    probe_mask p = mask_of(h);
    set_block(block, &p);
}

#if defined(BK_BLOCKED_VIEW_HAVE_AVX2)
#  define BK_AVX2_INLINE __attribute__((target("avx2"), always_inline)) static inline
/* The probe mask of h: bk_blocked__view_mask_avx2's, with its ones taken by one broadcast load (a
 * compiler builds _mm256_set1_epi32(1) from an immediate with three instructions, in every call). */
BK_AVX2_INLINE __m256i mask_avx2(uint64_t h)
{
    static const uint32_t s[8] = { BK_BLOCKED__SALTS };
    static const uint32_t one = 1;
    __m256i ones;
    __asm__("vpbroadcastd %1, %0" : "=x"(ones) : "m"(one));
    __m256i p = _mm256_mullo_epi32(_mm256_set1_epi32((int)(uint32_t)h), _mm256_loadu_si256((const __m256i *)(const void *)s));
    return _mm256_sllv_epi32(ones, _mm256_srli_epi32(p, 27));
}
BK_AVX2_INLINE slot_set found_avx2(const uint64_t *b, uint32_t g, uint64_t h)
{
    const __m256i *v = (const __m256i *)(const void *)b;
    __m256i mask = mask_avx2(h);
    slot_set found = 0;
#pragma GCC unroll 4
    for (uint32_t j = 0; j < g; j++) found |= (slot_set)_mm256_testc_si256(_mm256_load_si256(v + j), mask) << j;
    return found;
}
/* Whether any of the 4 blocks at b holds h (a count window of g = 4: every slot is live). The
 * answers are added, not or-ed: a sum of carry flags compiles to one add-with-carry per block where
 * an or of them takes a zeroing, a flag copy and an or. */
BK_AVX2_INLINE bool found_any4_avx2(const uint64_t *b, uint64_t h)
{
    const __m256i *v = (const __m256i *)(const void *)b;
    __m256i mask = mask_avx2(h);
    unsigned n = (unsigned)_mm256_testc_si256(_mm256_load_si256(v), mask);
    n += (unsigned)_mm256_testc_si256(_mm256_load_si256(v + 1), mask);
    n += (unsigned)_mm256_testc_si256(_mm256_load_si256(v + 2), mask);
    n += (unsigned)_mm256_testc_si256(_mm256_load_si256(v + 3), mask);
    return n != 0;
}
BK_AVX2_INLINE void insert_avx2(uint64_t *block, uint64_t h)
{
    __m256i *b = (__m256i *)(void *)block;
    _mm256_store_si256(b, _mm256_or_si256(_mm256_load_si256(b), mask_avx2(h)));
}
#endif

/* The byte a prefetch of line l of a bucket of g blocks at p aims at: with g = 4 the bucket is the two
 * lines of a 128-byte aligned pair; otherwise line l of those the bucket spans from its first byte's. */
#define BK_AGING_LINE(p, g, l)                                                                          \
    ((g) == 4 ? (const char *)(p) + 64 * (l)                                                          \
              : (const char *)((uintptr_t)(p) & ~(uintptr_t)63) + 64 * (l))
/* Lines a bucket of g blocks at p spans. */
#define BK_AGING_LINES(p, g)                                                                            \
    ((g) == 4 ? 2u : (uint32_t)((((uintptr_t)(p) & 63) + (g) * 32u + 63) / 64))

/* ================= the ring ================= */

static void clear_slot(bk_aging *f, uint32_t slot)
{
    uint64_t stride = (uint64_t)f->g * 4;
    uint64_t *w = f->words;
    for (uint64_t b = 0; b < f->blocks; b++, w += stride) memset(w + 4 * slot_pos(slot, b, f->g), 0, 32);
    f->count[slot] = 0;
}

/* Turn the ring to epoch e (> f->epoch), clearing the slots of the new epochs. */
static void turn_to(bk_aging *f, uint64_t e)
{
    uint64_t steps = e - f->epoch;
    if (steps >= f->g) {
        memset(f->words, 0, (size_t)f->nwords * 8);
        memset(f->count, 0, sizeof f->count);
    } else {
        for (uint64_t x = f->epoch + 1; x <= e; x++) clear_slot(f, (uint32_t)(x % f->g));
    }
    set_epoch(f, e);
}

/* Before inserting: a time window advances to now. */
BK_INLINE void advance_time(bk_aging *f)
{
    if (f->mode == BK_AGING_TIME) {
        uint64_t e = epoch_at(f, now_ms(f));
        if (e != f->epoch) turn_to(f, e);
    }
}

/* Before inserting one key: a count window turns when the current slot is complete. */
BK_INLINE void turn_if_full(bk_aging *f)
{
    if (f->mode == BK_AGING_COUNT && BK_UNLIKELY(f->count[cur_slot(f)] >= f->gen_cap)) turn_to(f, f->epoch + 1);
}

/* Before inserting a run of `left` keys: turn as turn_if_full does, then the number of them the
 * current slot takes before a count window must turn again (a time window: all of them). */
BK_INLINE size_t chunk_of(bk_aging *f, size_t left)
{
    if (f->mode != BK_AGING_COUNT) return left;
    turn_if_full(f);
    uint64_t room = f->gen_cap - f->count[cur_slot(f)];
    return room < left ? (size_t)room : left;
}

/* ================= sizing and lifetime ================= */

bk_status bk_aging_size(uint64_t capacity, double p, uint32_t generations, bk_aging_geometry *out)
{
    uint32_t g = generations ? generations : BK_AGING_DEFAULT_GENERATIONS;
    if (!out || capacity == 0 || !(p > 0 && p < 1) || g < 2 || g > BK_AGING_MAX_GENERATIONS) return BK_EINVAL;
    uint64_t c = capacity / (g - 1) + (capacity % (g - 1) != 0);
    /* Each generation gets p_g with 1 - (1 - p_g)^g = p. */
    double pg = -expm1(log1p(-p) / g);
    bk_geometry geo;
    bk_status s = bk_blocked_size(c, pg, BK_BLOCKED_SPLIT256, &geo);
    if (s != BK_OK) return s;
    uint64_t blocks = geo.m / 256, bytes;
    if (bk__mul_overflow(blocks, (uint64_t)g * 32, &bytes) || bytes > BK_MAX_FILTER_BYTES) return BK_ETOOBIG;
    out->generations = g;
    out->gen_capacity = c;
    out->blocks = blocks;
    out->bytes = bytes;
    out->fpr = -expm1(g * log1p(-bk_blocked_fpr(geo.m, c, BK_BLOCKED_SPLIT256, 8)));
    out->bits_per_key = (double)bytes * 8.0 / (double)capacity;
    return BK_OK;
}

bk_status bk__aging_alloc(const bk_allocator *a, bk_aging_mode mode, uint32_t g, uint64_t blocks, bool own_words,
                          bk_aging **out)
{
    const bk_allocator *al = bk__allocator(a);
    bk_aging *f = bk__calloc(al, 1, sizeof *f);
    if (!f) return BK_ENOMEM;
    f->alloc = al;
    f->mode = mode;
    f->g = g;
    f->blocks = blocks;
    f->nwords = blocks * g * 4;
    f->owns_words = own_words;
    /* A bucket of the default g = 4 is two cache lines: aligned to 128 bytes they are the pair the
     * CPU's adjacent-line prefetcher fetches together, so a one-key query's two misses overlap. */
    if (own_words) {
        if (!(f->block = bk__calloc_aligned(f->alloc, (size_t)f->nwords * 8 + 64))) {
            bk__free(f->alloc, f);
            return BK_ENOMEM;
        }
        f->words = (uint64_t *)(void *)(((uintptr_t)f->block + 127) & ~(uintptr_t)127);
    }
    f->ops = path_for_cpu();
    f->one = mode == BK_AGING_COUNT && g == 4 ? f->ops->count4 : f->ops->any;
    f->clock = wall_clock_ms;
    *out = f;
    return BK_OK;
}

static bk_status make(bk_aging_mode mode, uint64_t window, uint64_t capacity, double p, const bk_aging_options *opts,
                      bk_aging **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_aging_options o_;
    bk_status os_ = bk__options_read(&o_, sizeof o_, opts);
    if (os_ != BK_OK) return os_;
    const bk_aging_options *o = &o_;
    bk_aging_geometry geo;
    bk_status s = bk_aging_size(capacity, p, o->generations, &geo);
    if (s != BK_OK) return s;
    if (mode == BK_AGING_TIME && window < geo.generations - 1) return BK_EINVAL;
    bk_aging *f;
    if ((s = bk__aging_alloc(o->allocator, mode, geo.generations, geo.blocks, true, &f)) != BK_OK) return s;
    f->seed = o->seed;
    f->flip = bk__hash_u64_flip(f->seed);
    f->window = window;
    f->capacity = capacity;
    f->gen_cap = geo.gen_capacity;
    f->fpr_target = p;
    if (o->clock) {
        f->clock = o->clock;
        f->clock_ctx = o->clock_ctx;
    }
    if (mode == BK_AGING_TIME) {
        uint64_t g1 = geo.generations - 1;
        f->period = window / g1 + (window % g1 != 0);
        f->start = now_ms(f);
        set_epoch(f, f->start / f->period);
    }
    *out = f;
    return BK_OK;
}

bk_status bk_aging_new_count(uint64_t window, double p, const bk_aging_options *opts, bk_aging **out)
{
    return make(BK_AGING_COUNT, window, window, p, opts, out);
}

bk_status bk_aging_new_time(uint64_t window_ms, uint64_t capacity, double p, const bk_aging_options *opts,
                            bk_aging **out)
{
    if (window_ms == 0) {
        if (out) *out = NULL;
        return BK_EINVAL;
    }
    return make(BK_AGING_TIME, window_ms, capacity, p, opts, out);
}

void bk_aging_free(bk_aging *f)
{
    if (!f) return;
    if (f->owns_words) bk__free_aligned(f->alloc, f->block);
    bk__free(f->alloc, f);
}

bk_status bk_aging_clone(const bk_aging *f, bk_aging **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    bk_aging *c;
    bk_status s = bk__aging_alloc(f->alloc, f->mode, f->g, f->blocks, true, &c);
    if (s != BK_OK) return s;
    uint64_t *words = c->words;
    void *block = c->block;
    *c = *f;
    c->words = words;
    c->block = block;
    c->owns_words = true;
    memcpy(c->words, f->words, (size_t)f->nwords * 8);
    *out = c;
    return BK_OK;
}

bk_status bk_aging_set_clock(bk_aging *f, bk_aging_clock clock, void *ctx)
{
    if (!f) return BK_EINVAL;
    f->clock = clock ? clock : wall_clock_ms;
    f->clock_ctx = clock ? ctx : NULL;
    return BK_OK;
}

/* ================= insert and query ================= */

/*
 * The loops of one path, instantiated for the scalar and the AVX2 probes.
 *
 * The batch loops keep the ring's geometry in locals (a store into the ring may alias any field of the
 * filter as far as the compiler knows, and would force every field to be reloaded for every key), and
 * each is written once for any g and instantiated with the constant 4 (the default) and with the
 * filter's g. They are software-pipelined: while probing key i they compute the bucket of a key
 * further on and prefetch it (both lines of the bucket of key i + BK_AGING_QUERY_PF for a query or an
 * add-if-absent, the current generation's block of key i + BK_AGING_ADD_PF, for writing, for an
 * insert), with __builtin_prefetch written in the loop itself (BK_AGING_PREFETCH_BUCKET).
 *
 * A count window turns only between runs: a run is the keys the current generation still has room
 * for (C minus its count, chunk_of), so no key inside a run needs a turn check, and the turn falls
 * exactly where one key at a time has it (before the first key that finds the generation full). The
 * prefetches of the first BK_AGING_ADD_PF keys after a turn aimed at the previous generation's block:
 * the same bucket, so at worst the bucket's other line, once per generation.
 */
#define BK_AGING_PREFETCH_BUCKET(b, g)                                                                  \
    do {                                                                                              \
        for (uint32_t l_ = 0; l_ < BK_AGING_LINES(b, g); l_++) BK_PREFETCH(BK_AGING_LINE(b, g, l_));  \
    } while (0)

/* The buckets of the first keys of a batch (up to BK_AGING_QUERY_PF of them), before a query loop
 * whose own prefetches reach that far ahead. */
#define BK_AGING_PREFETCH_FIRST(words, blocks, stride, hs, n, g)                                        \
    do {                                                                                              \
        size_t pre_ = (n) < BK_AGING_QUERY_PF ? (n) : BK_AGING_QUERY_PF;                              \
        for (size_t i_ = 0; i_ < pre_; i_++) {                                                        \
            const uint64_t *p_ = (words) + bk__range64((hs)[i_], blocks) * (stride);                  \
            BK_AGING_PREFETCH_BUCKET(p_, g);                                                          \
        }                                                                                             \
    } while (0)

#define BK_AGING_AI __attribute__((always_inline)) static inline
/* The ring's turn in a count window's one-key insert of g = 4: out of line, so that the insert
 * saves no registers and keeps the stack as it is. */
#define BK_AGING_COLD __attribute__((noinline, cold)) static

#define BK_AGING_PATH(NAME, TARGET, FOUND, FOUND_ANY4, INSERT, POPCOUNT)                             \
    TARGET BK_AGING_AI uint32_t NAME##_rot(uint64_t b, uint32_t g)                                    \
    {                                                                                                 \
        return rot_of_ones((uint32_t)POPCOUNT(b), g);                                                 \
    }                                                                                                 \
    TARGET BK_AGING_AI uint32_t NAME##_slot_pos(uint32_t slot, uint64_t b, uint32_t g)                \
    {                                                                                                 \
        return pos_of(slot, NAME##_rot(b, g), g);                                                     \
    }                                                                                                 \
    /* Whether a slot of `live` holds h. Every block of the bucket is tested without a branch, so     \
     * the bucket's two lines are loaded together. */                                                 \
    TARGET static bool NAME##_found(const bk_aging *f, uint64_t h, slot_set live)                     \
    {                                                                                                 \
        uint64_t bi_ = bucket_index(f, h);                                                            \
        const uint64_t *b_ = f->words + bi_ * f->g * 4;                                               \
        if (f->g == 4) return (FOUND(b_, 4, h) & blocks_of(live, NAME##_rot(bi_, 4), 4)) != 0;        \
        return (FOUND(b_, f->g, h) & blocks_of(live, NAME##_rot(bi_, f->g), f->g)) != 0;              \
    }                                                                                                 \
    TARGET BK_AGING_AI void NAME##_add_g(bk_aging *f, uint64_t h, uint32_t g)                         \
    {                                                                                                 \
        turn_if_full(f);                                                                              \
        uint32_t s_ = cur_slot(f);                                                                    \
        uint64_t bi_ = bucket_index(f, h);                                                            \
        INSERT(f->words + bi_ * g * 4 + 4 * NAME##_slot_pos(s_, bi_, g), h);                          \
        f->count[s_]++;                                                                               \
        f->inserted++;                                                                                \
    }                                                                                                 \
    TARGET static void NAME##_add(bk_aging *f, uint64_t h)                                            \
    {                                                                                                 \
        if (f->g == 4)                                                                                \
            NAME##_add_g(f, h, 4);                                                                    \
        else                                                                                          \
            NAME##_add_g(f, h, f->g);                                                                 \
    }                                                                                                 \
    TARGET BK_AGING_AI bool NAME##_aia_g(bk_aging *f, uint64_t h, slot_set live, uint32_t g)          \
    {                                                                                                 \
        turn_if_full(f);                                                                              \
        uint32_t s_ = cur_slot(f);                                                                    \
        uint64_t bi_ = bucket_index(f, h);                                                            \
        uint32_t r_ = NAME##_rot(bi_, g), p_ = pos_of(s_, r_, g);                                     \
        uint64_t *b_ = f->words + bi_ * g * 4;                                                        \
        slot_set found_ = FOUND(b_, g, h) & blocks_of(live, r_, g);                                   \
        if (!(found_ >> p_ & 1)) INSERT(b_ + 4 * p_, h);                                              \
        f->count[s_]++;                                                                               \
        f->inserted++;                                                                                \
        return found_ != 0;                                                                           \
    }                                                                                                 \
    TARGET static bool NAME##_add_if_absent(bk_aging *f, uint64_t h, slot_set live)                   \
    {                                                                                                 \
        return f->g == 4 ? NAME##_aia_g(f, h, live, 4) : NAME##_aia_g(f, h, live, f->g);              \
    }                                                                                                 \
    /* n keys into `slot`; `ahead` more keys of the caller's batch follow hs[n - 1] (prefetched). */  \
    /* The block of each key is computed once, when it is prefetched, and kept in a ring of the       \
     * BK_AGING_ADD_PF blocks in flight (the run's first ones are computed on entry). */              \
    TARGET BK_AGING_AI void NAME##_insert_run(uint64_t *words, uint64_t blocks, uint32_t g,           \
                                              uint32_t slot, const uint64_t *hs, size_t n,            \
                                              size_t ahead)                                           \
    {                                                                                                 \
        size_t stride = (size_t)g * 4, m_ = n + ahead;                                                \
        uint64_t *at_[BK_AGING_ADD_PF];                                                               \
        for (size_t i = 0; i < n && i < BK_AGING_ADD_PF; i++) {                                       \
            uint64_t bi_ = bk__range64(hs[i], blocks);                                                \
            at_[i] = words + bi_ * stride + 4 * NAME##_slot_pos(slot, bi_, g);                        \
        }                                                                                             \
        size_t i = 0, stop_ = m_ > BK_AGING_ADD_PF ? m_ - BK_AGING_ADD_PF : 0;                         \
        if (stop_ > n) stop_ = n;                                                                     \
        for (; i < stop_; i++) { /* the keys with one BK_AGING_ADD_PF further on to prefetch */        \
            uint64_t *b_ = at_[i % BK_AGING_ADD_PF];                                                  \
            uint64_t bj_ = bk__range64(hs[i + BK_AGING_ADD_PF], blocks);                              \
            uint64_t *p_ = words + bj_ * stride + 4 * NAME##_slot_pos(slot, bj_, g);                  \
            BK_PREFETCH_W(p_);                                                                        \
            at_[i % BK_AGING_ADD_PF] = p_; /* key i + BK_AGING_ADD_PF's (read if it is in the run) */ \
            INSERT(b_, hs[i]);                                                                        \
        }                                                                                             \
        for (; i < n; i++) INSERT(at_[i % BK_AGING_ADD_PF], hs[i]);                                   \
    }                                                                                                 \
    TARGET BK_AGING_AI void NAME##_add_all(bk_aging *f, const uint64_t *hs, size_t n, uint32_t g)     \
    {                                                                                                 \
        uint64_t *words = f->words, blocks = f->blocks;                                               \
        size_t stride = (size_t)g * 4, pre = n < BK_AGING_ADD_PF ? n : BK_AGING_ADD_PF;               \
        for (size_t i = 0; i < pre; i++) {                                                            \
            uint64_t bi_ = bk__range64(hs[i], blocks);                                                \
            BK_PREFETCH_W(words + bi_ * stride + 4 * NAME##_slot_pos(f->cur, bi_, g));                \
        }                                                                                             \
        for (size_t i = 0; i < n;) {                                                                  \
            size_t take = chunk_of(f, n - i);                                                         \
            uint32_t s_ = cur_slot(f);                                                                \
            NAME##_insert_run(words, blocks, g, s_, hs + i, take, n - i - take);                      \
            f->count[s_] += take;                                                                     \
            i += take;                                                                                \
        }                                                                                             \
        f->inserted += n;                                                                             \
    }                                                                                                 \
    TARGET static void NAME##_add_hashes(bk_aging *f, const uint64_t *hs, size_t n)                   \
    {                                                                                                 \
        if (f->g == 4)                                                                                \
            NAME##_add_all(f, hs, n, 4);                                                              \
        else                                                                                          \
            NAME##_add_all(f, hs, n, f->g);                                                           \
    }                                                                                                 \
    TARGET BK_AGING_AI size_t NAME##_contains_run(const uint64_t *words, uint64_t blocks, uint32_t g, \
                                                  const uint64_t *hs, size_t n, uint8_t *res,         \
                                                  slot_set live)                                      \
    {                                                                                                 \
        size_t stride = (size_t)g * 4, present = 0;                                                   \
        BK_AGING_PREFETCH_FIRST(words, blocks, stride, hs, n, g);                                     \
        for (size_t i = 0; i < n; i++) {                                                              \
            if (i + BK_AGING_QUERY_PF < n) {                                                          \
                const uint64_t *p_ = words + bk__range64(hs[i + BK_AGING_QUERY_PF], blocks) * stride; \
                BK_AGING_PREFETCH_BUCKET(p_, g);                                                      \
            }                                                                                         \
            uint64_t bi_ = bk__range64(hs[i], blocks);                                                \
            bool r_ = (FOUND(words + bi_ * stride, g, hs[i]) & blocks_of(live, NAME##_rot(bi_, g), g)) != 0; \
            if (res) res[i] = r_;                                                                     \
            present += r_;                                                                            \
        }                                                                                             \
        return present;                                                                               \
    }                                                                                                 \
    /* Every slot live at g = 4 (a count window, or a time window with no period gap): any block      \
     * holding h answers, so no rotation is undone. Each bucket is computed once, when it is          \
     * prefetched, and kept in a ring of BK_AGING_RING entries (the BK_AGING_QUERY_PF in flight). */   \
    TARGET static size_t NAME##_contains_all4(const uint64_t *words, uint64_t blocks, const uint64_t *hs, \
                                              size_t n, uint8_t *res)                                 \
    {                                                                                                 \
        const uint64_t *at_[BK_AGING_RING];                                                           \
        size_t pre_ = n < BK_AGING_QUERY_PF ? n : BK_AGING_QUERY_PF, present = 0, i = 0;              \
        for (size_t j = 0; j < pre_; j++) {                                                           \
            at_[j] = words + bucket4_prefetch(words, blocks, hs[j]) * 16;                             \
        }                                                                                             \
        for (; i + BK_AGING_QUERY_PF < n; i++) {                                                      \
            uint64_t b_ = bucket4_prefetch(words, blocks, hs[i + BK_AGING_QUERY_PF]);                 \
            at_[(i + BK_AGING_QUERY_PF) % BK_AGING_RING] = words + b_ * 16;                           \
            bool r_ = FOUND_ANY4(at_[i % BK_AGING_RING], hs[i]);                                      \
            if (res) res[i] = r_;                                                                     \
            present += r_;                                                                            \
        }                                                                                             \
        for (; i < n; i++) {                                                                          \
            bool r_ = FOUND_ANY4(at_[i % BK_AGING_RING], hs[i]);                                      \
            if (res) res[i] = r_;                                                                     \
            present += r_;                                                                            \
        }                                                                                             \
        return present;                                                                               \
    }                                                                                                 \
    TARGET static size_t NAME##_contains_hashes(const bk_aging *f, const uint64_t *hs, size_t n,      \
                                                uint8_t *res, slot_set live)                          \
    {                                                                                                 \
        if (f->g == 4 && live == 15) return NAME##_contains_all4(f->words, f->blocks, hs, n, res);    \
        if (f->g == 4) return NAME##_contains_run(f->words, f->blocks, 4, hs, n, res, live);          \
        return NAME##_contains_run(f->words, f->blocks, f->g, hs, n, res, live);                      \
    }                                                                                                 \
    /* Like insert_run, testing every live slot first and inserting only where the current one        \
     * lacks the key. */                                                                              \
    TARGET BK_AGING_AI size_t NAME##_aia_run(uint64_t *words, uint64_t blocks, uint32_t g,            \
                                             uint32_t slot, const uint64_t *hs, size_t n,             \
                                             size_t ahead, uint8_t *res, slot_set live)               \
    {                                                                                                 \
        size_t stride = (size_t)g * 4, m_ = n + ahead, present = 0;                                   \
        for (size_t i = 0; i < n; i++) {                                                              \
            if (i + BK_AGING_QUERY_PF < m_) {                                                         \
                const uint64_t *p_ = words + bk__range64(hs[i + BK_AGING_QUERY_PF], blocks) * stride; \
                BK_AGING_PREFETCH_BUCKET(p_, g);                                                      \
            }                                                                                         \
            uint64_t bi_ = bk__range64(hs[i], blocks);                                                \
            uint64_t *b_ = words + bi_ * stride;                                                      \
            uint32_t rot_ = NAME##_rot(bi_, g), pos_ = pos_of(slot, rot_, g);                         \
            slot_set found_ = FOUND(b_, g, hs[i]) & blocks_of(live, rot_, g);                         \
            if (!(found_ >> pos_ & 1)) INSERT(b_ + 4 * pos_, hs[i]);                                  \
            bool r_ = found_ != 0;                                                                    \
            if (res) res[i] = r_;                                                                     \
            present += r_;                                                                            \
        }                                                                                             \
        return present;                                                                               \
    }                                                                                                 \
    TARGET BK_AGING_AI size_t NAME##_aia_all(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, \
                                             slot_set live, uint32_t g)                               \
    {                                                                                                 \
        uint64_t *words = f->words, blocks = f->blocks;                                               \
        size_t stride = (size_t)g * 4, present = 0;                                                   \
        BK_AGING_PREFETCH_FIRST(words, blocks, stride, hs, n, g);                                     \
        for (size_t i = 0; i < n;) {                                                                  \
            size_t take = chunk_of(f, n - i);                                                         \
            uint32_t s_ = cur_slot(f);                                                                \
            present += NAME##_aia_run(words, blocks, g, s_, hs + i, take, n - i - take,               \
                                      res ? res + i : NULL, live);                                    \
            f->count[s_] += take;                                                                     \
            i += take;                                                                                \
        }                                                                                             \
        f->inserted += n;                                                                             \
        return present;                                                                               \
    }                                                                                                 \
    /* Every slot live at g = 4 (a count window, or a time window with no period gap), as            \
     * contains_all4: each bucket and its rotation are computed once, when the bucket is prefetched,  \
     * and kept in a ring of BK_AGING_RING entries across the runs of the batch (a turn changes the   \
     * slot, and with it the block an insert writes, not the bucket). */                              \
    TARGET static size_t NAME##_aia_all4(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res)     \
    {                                                                                                 \
        uint64_t *words = f->words, blocks = f->blocks;                                               \
        uint64_t *at_[BK_AGING_RING];                                                                 \
        uint8_t rot_[BK_AGING_RING];                                                                  \
        size_t pre_ = n < BK_AGING_QUERY_PF ? n : BK_AGING_QUERY_PF, present = 0;                     \
        for (size_t j = 0; j < pre_; j++) {                                                           \
            uint64_t bj_ = bucket4_prefetch(words, blocks, hs[j]);                                    \
            at_[j] = words + bj_ * 16;                                                                \
            rot_[j] = (uint8_t)NAME##_rot(bj_, 4);                                                    \
        }                                                                                             \
        for (size_t i = 0; i < n;) {                                                                  \
            size_t take = chunk_of(f, n - i), end_ = i + take;                                        \
            uint32_t s_ = cur_slot(f);                                                                \
            for (; i < end_; i++) {                                                                   \
                if (i + BK_AGING_QUERY_PF < n) {                                                      \
                    size_t k_ = (i + BK_AGING_QUERY_PF) % BK_AGING_RING;                              \
                    uint64_t bj_ = bucket4_prefetch(words, blocks, hs[i + BK_AGING_QUERY_PF]);        \
                    at_[k_] = words + bj_ * 16;                                                       \
                    rot_[k_] = (uint8_t)NAME##_rot(bj_, 4);                                           \
                }                                                                                     \
                uint64_t *b_ = at_[i % BK_AGING_RING];                                                \
                bool r_ = FOUND_ANY4(b_, hs[i]);                                                      \
                INSERT(b_ + 4 * pos_of(s_, rot_[i % BK_AGING_RING], 4), hs[i]); /* see aia1_c4 */     \
                if (res) res[i] = r_;                                                                 \
                present += r_;                                                                        \
            }                                                                                         \
            f->count[s_] += take;                                                                     \
        }                                                                                             \
        f->inserted += n;                                                                             \
        return present;                                                                               \
    }                                                                                                 \
    TARGET static size_t NAME##_add_if_absent_hashes(bk_aging *f, const uint64_t *hs, size_t n,       \
                                                     uint8_t *res, slot_set live)                     \
    {                                                                                                 \
        if (f->g == 4 && live == 15) return NAME##_aia_all4(f, hs, n, res);                           \
        if (f->g == 4) return NAME##_aia_all(f, hs, n, res, live, 4);                                 \
        return NAME##_aia_all(f, hs, n, res, live, f->g);                                             \
    }                                                                                                 \
    /* The one-key calls (aging_one). Any window and g: a time window advances and tests its live   \
     * slots. A count window of the default g = 4 has nothing left to decide: a query tests the four  \
     * blocks with no rotation to undo, an insert writes the current slot's block after one compare   \
     * (the ring's turn, out of line). */                                                             \
    TARGET static bool NAME##_contains1(const bk_aging *f, uint64_t h)                                \
    {                                                                                                 \
        slot_set live = live_now(f);                                                                  \
        if (f->g == 4 && live == 15) return FOUND_ANY4(f->words + bucket_index(f, h) * 16, h);        \
        return live && NAME##_found(f, h, live);                                                      \
    }                                                                                                 \
    TARGET static bk_status NAME##_add1(bk_aging *f, uint64_t h)                                      \
    {                                                                                                 \
        advance_time(f);                                                                              \
        NAME##_add(f, h);                                                                             \
        return BK_OK;                                                                                 \
    }                                                                                                 \
    TARGET static bk_status NAME##_aia1(bk_aging *f, uint64_t h)                                      \
    {                                                                                                 \
        advance_time(f);                                                                              \
        return NAME##_add_if_absent(f, h, all_slots(f)) ? BK_EEXISTS : BK_OK;                         \
    }                                                                                                 \
    TARGET static bool NAME##_contains1_c4(const bk_aging *f, uint64_t h)                             \
    {                                                                                                 \
        return FOUND_ANY4(f->words + bucket_index(f, h) * 16, h);                                     \
    }                                                                                                 \
    TARGET BK_AGING_COLD bk_status NAME##_add1_turn(bk_aging *f, uint64_t h)                          \
    {                                                                                                 \
        NAME##_add_g(f, h, 4); /* turns first */                                                      \
        return BK_OK;                                                                                 \
    }                                                                                                 \
    TARGET static bk_status NAME##_add1_c4(bk_aging *f, uint64_t h)                                   \
    {                                                                                                 \
        uint32_t s_ = f->cur;                                                                         \
        if (BK_UNLIKELY(f->count[s_] >= f->gen_cap)) return NAME##_add1_turn(f, h);                   \
        uint64_t bi_ = bucket_index(f, h);                                                            \
        INSERT(f->words + bi_ * 16 + 4 * NAME##_slot_pos(s_, bi_, 4), h);                             \
        f->count[s_]++;                                                                               \
        f->inserted++;                                                                                \
        return BK_OK;                                                                                 \
    }                                                                                                 \
    TARGET BK_AGING_COLD bk_status NAME##_aia1_turn(bk_aging *f, uint64_t h)                          \
    {                                                                                                 \
        return NAME##_aia_g(f, h, 15, 4) ? BK_EEXISTS : BK_OK; /* turns first */                      \
    }                                                                                                 \
    /* The current slot's block takes the key whether or not a block holds it already (or-ing the    \
     * bits it holds writes them back unchanged): no branch on the loaded bits, whose outcome a       \
     * stream of repeats and new keys makes unpredictable. */                                         \
    TARGET static bk_status NAME##_aia1_c4(bk_aging *f, uint64_t h)                                   \
    {                                                                                                 \
        uint32_t s_ = f->cur;                                                                         \
        if (BK_UNLIKELY(f->count[s_] >= f->gen_cap)) return NAME##_aia1_turn(f, h);                   \
        uint64_t bi_ = bucket_index(f, h);                                                            \
        uint64_t *b_ = f->words + bi_ * 16;                                                           \
        bool found_ = FOUND_ANY4(b_, h);                                                              \
        INSERT(b_ + 4 * NAME##_slot_pos(s_, bi_, 4), h);                                              \
        f->count[s_]++;                                                                               \
        f->inserted++;                                                                                \
        return found_ ? BK_EEXISTS : BK_OK;                                                           \
    }                                                                                                 \
    static const aging_ops NAME##_ops = { { NAME##_contains1, NAME##_add1, NAME##_aia1 },             \
                                          { NAME##_contains1_c4, NAME##_add1_c4, NAME##_aia1_c4 },    \
                                          NAME##_add_hashes, NAME##_contains_hashes,                  \
                                          NAME##_add_if_absent_hashes };

#define BK_NO_TARGET
#define found_any4_scalar(b, h) (found_scalar((b), 4, (h)) != 0)
BK_AGING_PATH(scalar, BK_NO_TARGET, found_scalar, found_any4_scalar, insert_scalar, popcount_swar)
#if defined(BK_BLOCKED_VIEW_HAVE_AVX2)
/* Every CPU with AVX2 has POPCNT. */
BK_AGING_PATH(avx2, __attribute__((target("avx2,popcnt"))), found_avx2, found_any4_avx2, insert_avx2,
              __builtin_popcountll)
#endif

static const aging_ops *path_for_cpu(void)
{
#if defined(BK_BLOCKED_VIEW_HAVE_AVX2)
    if (bk__simd_resolve(BK_SIMD_AUTO) >= BK_SIMD_AVX2) return &avx2_ops;
#endif
    return &scalar_ops;
}

/* The hash of a byte key: an 8-byte key's is the uint64 key's (bk__hash), from the seed's part kept in
 * the filter. */
BK_INLINE uint64_t key_hash(const bk_aging *f, const void *key, size_t len)
{
    if (BK_LIKELY(len == 8)) {
        uint64_t k;
        memcpy(&k, key, 8);
        return bk__hash_u64_keyed(k, f->flip);
    }
    return bk__hash(key, len, f->seed);
}

bk_status bk_aging_add_hash(bk_aging *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return f->one.add(f, h);
}

bk_status bk_aging_add(bk_aging *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_aging_add_hash(f, key_hash(f, key, len));
}

bool bk_aging_contains_hash(const bk_aging *f, uint64_t h)
{
    return f->one.contains(f, h);
}

bool bk_aging_contains(const bk_aging *f, const void *key, size_t len)
{
    return bk_aging_contains_hash(f, key_hash(f, key, len));
}

bk_status bk_aging_add_if_absent_hash(bk_aging *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return f->one.add_if_absent(f, h);
}

bk_status bk_aging_add_if_absent(bk_aging *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_aging_add_if_absent_hash(f, key_hash(f, key, len));
}

bk_status bk_aging_add_u64(bk_aging *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return bk_aging_add_hash(f, bk__hash_u64_keyed(key, f->flip));
}

bk_status bk_aging_add_if_absent_u64(bk_aging *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return bk_aging_add_if_absent_hash(f, bk__hash_u64_keyed(key, f->flip));
}

bool bk_aging_contains_u64(const bk_aging *f, uint64_t key)
{
    return bk_aging_contains_hash(f, bk__hash_u64_keyed(key, f->flip));
}

bk_status bk_aging_add_hashes(bk_aging *f, const uint64_t *hs, size_t n)
{
    if (!f || (!hs && n)) return BK_EINVAL;
    advance_time(f);
    f->ops->add_hashes(f, hs, n);
    return BK_OK;
}

static size_t contains_hashes(const bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res)
{
    slot_set live = live_now(f);
    if (!live) {
        if (res) memset(res, 0, n);
        return 0;
    }
    return f->ops->contains_hashes(f, hs, n, res, live);
}

bk_status bk_aging_contains_hashes(const bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, size_t *hits)
{
    if (!f || (!hs && n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, contains_hashes(f, hs, n, res));
}

bk_status bk_aging_add_if_absent_hashes(bk_aging *f, const uint64_t *hs, size_t n, uint8_t *res, size_t *done)
{
    if (!f || (!hs && n)) return bk__batch_refused(done);
    advance_time(f);
    f->ops->add_if_absent_hashes(f, hs, n, res, all_slots(f));
    return bk__batch_done(done, n);
}

/* Bytes keys: hashed a chunk at a time, then the hashed batch code. */
static bk_status add_chunk(void *f, const uint64_t *h, size_t n) { return bk_aging_add_hashes(f, h, n); }
static size_t query_chunk(const void *f, const uint64_t *h, size_t n, uint8_t *results)
{
    return contains_hashes(f, h, n, results);
}

bk_status bk_aging_add_many(bk_aging *f, const void *const *keys, const size_t *lens, size_t n)
{
    return f ? bk__add_many(f, f->seed, keys, lens, n, add_chunk) : BK_EINVAL;
}

bk_status bk_aging_contains_many(const bk_aging *f, const void *const *keys, const size_t *lens, size_t n,
                                 uint8_t *res, size_t *hits)
{
    if (!f) return bk__batch_refused(hits);
    return bk__contains_many(f, f->seed, keys, lens, n, res, hits, query_chunk);
}

bk_status bk_aging_add_if_absent_many(bk_aging *f, const void *const *keys, const size_t *lens, size_t n,
                                      uint8_t *res, size_t *done)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return bk__batch_refused(done);
    uint64_t h[BK__HCHUNK];
    for (size_t i = 0, c = 0; i < n; i += c) {
        c = bk__hash_chunk(h, BK__HCHUNK, keys, lens, i, n, f->seed);
        bk_aging_add_if_absent_hashes(f, h, c, res ? res + i : NULL, NULL);
    }
    return bk__batch_done(done, n);
}

/* ================= whole-filter operations ================= */

void bk_aging_advance(bk_aging *f)
{
    if (f) advance_time(f);
}

void bk_aging_clear(bk_aging *f)
{
    if (!f) return;
    memset(f->words, 0, (size_t)f->nwords * 8);
    memset(f->count, 0, sizeof f->count);
    f->inserted = 0;
    set_epoch(f, 0);
    if (f->mode == BK_AGING_TIME) {
        f->start = now_ms(f);
        set_epoch(f, f->start / f->period);
    }
}

static bool same_geometry(const bk_aging *a, const bk_aging *b)
{
    return a->mode == b->mode && a->g == b->g && a->blocks == b->blocks && a->seed == b->seed &&
           a->window == b->window && a->period == b->period && a->gen_cap == b->gen_cap;
}

bk_status bk_aging_union(bk_aging *dst, const bk_aging *src)
{
    if (!dst || !src) return BK_EINVAL;
    if (dst->mode != BK_AGING_TIME) return BK_ENOTSUP;
    if (!same_geometry(dst, src)) return BK_EINCOMPAT;
    if (src->epoch > dst->epoch) turn_to(dst, src->epoch);
    /* Epochs both still hold: (max(dst, src) - g, src->epoch]. */
    for (uint64_t a = 0; a < dst->g && a <= src->epoch; a++) {
        uint64_t e = src->epoch - a;
        if (e + dst->g <= dst->epoch) break;
        uint32_t slot = (uint32_t)(e % dst->g);
        uint64_t stride = (uint64_t)dst->g * 4;
        uint64_t *d = dst->words;
        const uint64_t *s = src->words;
        for (uint64_t b = 0; b < dst->blocks; b++, d += stride, s += stride) {
            uint32_t q = 4 * slot_pos(slot, b, dst->g);
            for (uint32_t x = q; x < q + 4; x++) d[x] |= s[x];
        }
        dst->count[slot] += src->count[slot];
    }
    dst->inserted += src->inserted;
    if (src->start < dst->start) dst->start = src->start;
    return BK_OK;
}
