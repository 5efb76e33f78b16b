/*
 * The aging filter's private parts, shared by aging.c (the ring, lifetime, public calls, union),
 * aging_paths.c (the probes, inserts and queries of each path) and aging_file.c (statistics and the
 * file body): the struct, the body layout (which block of a bucket holds which generation slot), the
 * ring's epoch arithmetic and its turn checks. The layout is explained at the top of aging.c.
 */
#ifndef BK_AGING_IMPL_H
#define BK_AGING_IMPL_H

#include "filters/internal.h"
#include "core/simd.h"
#include "bloomkit/aging.h"

typedef uint32_t slot_set; /* bit j set: slot j */

/* The wide body (docs/FORMAT.md 6.7, body 2): the sizing picks it for p below this, where SPLIT256
 * blocks with k = 8 would take more bits per window key than the blocked alternatives. */
#define BK_AGING_WIDE_BELOW 0.01

/* The one-key calls of a filter: whole calls (a time window's advance and live slots included), so
 * that the public call is a test and a jump. In a loop of one-key calls that miss the cache, fewer
 * instructions per call and no branch on the loaded bits leave more calls' loads in flight at once. */
typedef struct aging_one {
    bool (*contains)(const bk_aging *f, uint64_t h);
    bk_status (*add)(bk_aging *f, uint64_t h);
    bk_status (*add_if_absent)(bk_aging *f, uint64_t h); /* BK_EEXISTS or BK_OK */
} aging_one;

typedef struct aging_ops {
    aging_one any;    /* any window and g */
    aging_one count4; /* a count window of the default g = 4: every slot live, nothing to decide */
    void (*add_hashes)(bk_aging *f, const uint64_t *h, size_t n);
    size_t (*contains_hashes)(const bk_aging *f, const uint64_t *h, size_t n, uint8_t *res, slot_set live);
    size_t (*add_if_absent_hashes)(bk_aging *f, const uint64_t *h, size_t n, uint8_t *res, slot_set live);
} aging_ops;

struct bk_aging {
    aging_one one;        /* the one-key calls of this path, window and g (chosen with ops) */
    uint64_t *words;      /* blocks * g * bw words, 128-byte aligned when owned (see alloc_aging) */
    void *block;          /* what bk__calloc_aligned returned for words (owned words only) */
    uint64_t blocks;
    uint64_t nwords;
    uint32_t g;
    uint32_t bw;          /* 64-bit words per block: 4 (SPLIT256, body 1), 8 or 16 (512 or 1024 bits, body 2) */
    uint32_t k;           /* probes per key: 8 (SPLIT256) or the wide body's k in [1, 16] */
    bk_aging_mode mode;
    const struct aging_ops *ops; /* the scalar or AVX2 path (chosen once, at creation or load) */
    bool owns_words;      /* false: borrowed from a read-only mapping */
    uint64_t seed;
    uint64_t flip;        /* bk__hash_u64_flip(seed): the seed's part of an 8-byte key's hash */
    uint64_t window;      /* W insertions or T ms */
    uint64_t capacity;    /* keys per window the ring is sized for (W for a count window) */
    uint64_t gen_cap;     /* C */
    uint64_t period;      /* time windows: ms per generation */
    double fpr_target;
    uint64_t epoch;
    uint32_t cur;         /* epoch % g: the current generation's slot */
    uint64_t inserted;    /* insertions since creation or clear */
    uint64_t start;       /* time windows: ms of the creation (or clear); count windows: 0 */
    uint64_t count[BK_AGING_MAX_GENERATIONS]; /* per slot: insertions since it was cleared */
    bk_aging_clock clock;
    void *clock_ctx;
    const bk_allocator *alloc; /* everything this filter owns is allocated with it */
};

BK_INLINE uint64_t now_ms(const bk_aging *f) { return f->clock(f->clock_ctx); }

/* Bits set in x, without a library call on the baseline x86-64 target: the library's shifts and
 * masks (core/simd.h; the AVX2 path uses the POPCNT instruction). */
BK_INLINE uint32_t popcount_swar(uint64_t x) { return bk__popcount_swar(x); }

/* The rotation of a bucket whose index has `ones` bits set: slot j's block is block (j + rot) mod g. */
BK_INLINE uint32_t rot_of_ones(uint32_t ones, uint32_t g) { return g == 4 ? ones & 3 : ones % g; }
BK_INLINE uint32_t rot_of(uint64_t b, uint32_t g) { return rot_of_ones(popcount_swar(b), g); }

/* Block of slot `slot` in a bucket of rotation r (< g). */
BK_INLINE uint32_t pos_of(uint32_t slot, uint32_t r, uint32_t g)
{
    if (g == 4) return (slot + r) & 3; /* the default g, a constant in the loops */
    uint32_t p = slot + r;
    return p >= g ? p - g : p;
}

/* Block of slot `slot` in bucket b. */
BK_INLINE uint32_t slot_pos(uint32_t slot, uint64_t b, uint32_t g) { return pos_of(slot, rot_of(b, g), g); }

BK_INLINE slot_set all_slots(const bk_aging *f) { return (slot_set)((UINT64_C(1) << f->g) - 1); }

BK_INLINE uint32_t cur_slot(const bk_aging *f) { return f->cur; }

/* Every change of the epoch goes through here, so the current slot never needs a division. */
BK_INLINE void set_epoch(bk_aging *f, uint64_t e)
{
    f->epoch = e;
    f->cur = (uint32_t)(e % f->g);
}

/* Time windows: the epoch of time t; a clock that went back counts as standing still. */
BK_INLINE uint64_t epoch_at(const bk_aging *f, uint64_t t)
{
    uint64_t e = t / f->period;
    return e > f->epoch ? e : f->epoch;
}

/* Time windows: the slots live at epoch e (>= f->epoch): those of epochs (e - g, f->epoch]. */
BK_INLINE slot_set live_at(const bk_aging *f, uint64_t e)
{
    uint64_t gap = e - f->epoch;
    if (gap >= f->g) return 0;
    /* No period since the last turn (the common case): g consecutive epochs, every slot. */
    if (gap == 0 && f->epoch >= f->g - 1) return all_slots(f);
    slot_set s = 0;
    for (uint64_t a = 0; a + gap < f->g; a++) s |= (slot_set)1 << ((f->epoch - a) % f->g);
    return s;
}

/* The slots a query tests now. */
BK_INLINE slot_set live_now(const bk_aging *f)
{
    if (f->mode == BK_AGING_COUNT) return all_slots(f);
    return live_at(f, epoch_at(f, now_ms(f)));
}

/* Turn the ring to epoch e (> f->epoch), clearing the slots of the new epochs (aging.c). */
BK_HIDDEN void bk__aging_turn_to(bk_aging *f, uint64_t e);

/* Before inserting: a time window advances to now. */
BK_INLINE void advance_time(bk_aging *f)
{
    if (f->mode == BK_AGING_TIME) {
        uint64_t e = epoch_at(f, now_ms(f));
        if (e != f->epoch) bk__aging_turn_to(f, e);
    }
}

/* Before inserting one key: a count window turns when the current slot is complete. */
BK_INLINE void turn_if_full(bk_aging *f)
{
    if (f->mode == BK_AGING_COUNT && BK_UNLIKELY(f->count[cur_slot(f)] >= f->gen_cap)) bk__aging_turn_to(f, f->epoch + 1);
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

/* The scalar or AVX2 path of this CPU (aging_paths.c). */
BK_HIDDEN const aging_ops *bk__aging_ops_for_cpu(void);
/* The wide body's path (aging_wide.c): blocks of bw = 8 or 16 words, k probes of the blocked
 * engine's 512- or 1024-bit masks. */
BK_HIDDEN const aging_ops *bk__aging_wide_ops(void);

/* FPR of one generation of n keys in `blocks` blocks of bw words with k probes (the exact
 * split-block formula for bw = 4, the Poisson sum over block loads for wide blocks). */
BK_HIDDEN double bk__aging_gen_fpr(uint64_t blocks, uint64_t n, uint32_t bw, uint32_t k);

/* The struct and (own_words) its 128-byte aligned ring of blocks of bw words (k probes), for the scalar
 * or AVX2 path of this CPU (bw = 4) or the wide path, the
 * one-key calls of that path for `mode` and g, and the wall clock; the caller fills in the rest. */
BK_HIDDEN bk_status bk__aging_alloc(const bk_allocator *a, bk_aging_mode mode, uint32_t g, uint64_t blocks,
                                    uint32_t bw, uint32_t k, bool own_words, bk_aging **out);

#endif
