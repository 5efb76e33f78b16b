/*
 * bloomkit: the aging filter, "was this key seen recently?": in the last W insertions (a count
 * window) or in the last T milliseconds (a time window). Old keys are forgotten by themselves, so the
 * filter never fills up; stream dedup, "cache on second request" admission and revisit windows use it.
 *
 * Structure: a ring of g generations (4 by default) of split-block Bloom filters (the blocked
 * filter's SPLIT256 probes: 8 bits in one 256-bit block per key) that share their block index: the g
 * blocks a key can live in sit side by side in one bucket of g * 32 bytes (128 bytes, two adjacent
 * cache lines, for g = 4). An insert sets 8 bits in the current generation's block; a query tests
 * the blocks of every live generation of the bucket, so it costs about one memory access, like the
 * blocked filter. Below p = 1% the blocks widen (512 bits a generation for p >= 0.1%, 1024 below,
 * with k and g chosen by p when g is not given): a bucket is then g (or 2g) lines in a row, still
 * one bucket per query, and a ring takes fewer bits than the alternatives at every p (below).
 * When the current generation is complete (C insertions of a count window, or a
 * period of T / (g - 1) ms of a time window) the ring turns: the oldest generation is cleared and
 * becomes the current one.
 *
 * Guarantee (docs/MATH.md, "Aging filter"): a key is reported present from its insertion until at
 * least W further insertions (count window) or T ms (time window) have passed: no false negatives
 * inside the window, whatever the insertion rate. The slack: a key may be reported for up to one
 * generation longer, C - 1 + (g - 1) C - W insertions (C = ceil(W / (g - 1))) or T / (g - 1) ms more.
 * The FPR: sized so that g full generations of C keys each (the most a count window ever holds)
 * answer false positives at rate at most p. A time window is sized for `capacity` keys per window T;
 * it keeps no false negatives at any rate, but while more than capacity / (g - 1) keys arrive per
 * period its FPR rises above p (bk_stats.fpr_now says by how much, and .saturated turns true).
 *
 * Memory: g / (g - 1) times a blocked filter sized for W / (g - 1) keys at p / g. Bits per window key
 * at p = 10%, 1%, 0.1%, 0.01%: 11.4, 18.8, 24.7, 30.1, against 12.5, 22.1, 31.6, 41.2 for the usual two
 * rotating classic filters (each sized for W keys at p / 2) and 12.4, 19.7, 25.7, 31.5 for the best
 * Age-Partitioned Bloom Filter (docs/MATH.md, "Aging filter").
 *
 * Clock: time windows read a clock in milliseconds, the caller's (options.clock: tests and hosts such
 * as a Redis server supply their own, for determinism) or, by default, the wall clock
 * (CLOCK_REALTIME), so a saved filter keeps its meaning when loaded by another process. A clock that
 * goes back is treated as standing still (nothing is forgotten early, nothing is made younger).
 * A clock that jumps forward ages every key by the jump: the wall clock stepped ahead by J ms (an
 * NTP step, an administrator's change, a virtual machine resumed) makes the filter forget keys J ms
 * early, so a key inserted less than T ms ago is reported absent once its age plus J passes the
 * window (a jump of T + T / (g - 1) or more forgets every key). This is the one way a time window
 * gives a false negative. A window that need not outlive the process (or the boot) can use
 * bk_aging_monotonic_ms, which the wall clock's steps do not move.
 *
 * Thread-safety: see the legend in common.h. Inserts (and add_if_absent) need the caller's
 * exclusion: an insert may turn the ring, which clears a generation. Queries read the clock and never
 * write, so they are safe alongside each other. There are no atomic inserts.
 */
#ifndef BLOOMKIT_AGING_H
#define BLOOMKIT_AGING_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_aging bk_aging;

/* The numbers are stable: they are stored in files. */
typedef enum bk_aging_mode {
    BK_AGING_COUNT = 0, /* the last W insertions */
    BK_AGING_TIME = 1   /* the last T milliseconds */
} bk_aging_mode;

#define BK_AGING_DEFAULT_GENERATIONS 4
#define BK_AGING_MAX_GENERATIONS 16

/* Milliseconds from any fixed origin; called once per call or per batch of a time window. */
typedef uint64_t (*bk_aging_clock)(void *ctx);

typedef struct bk_aging_options {
    size_t struct_size;   /* BK_AGING_OPTIONS_INIT sets it; 0 means this header's size (common.h) */
    const bk_allocator *allocator; /* NULL: the default (malloc); see common.h */
    uint32_t generations;   /* g in [2, BK_AGING_MAX_GENERATIONS]; 0: BK_AGING_DEFAULT_GENERATIONS at
                               p >= 1%, below it the g of the fewest bits per window key */
    uint64_t seed;          /* hash seed; 0 is a fine default, a secret one resists crafted keys */
    bk_aging_clock clock;   /* time windows; NULL: the wall clock in ms (CLOCK_REALTIME) */
    void *clock_ctx;        /* passed to clock */
} bk_aging_options;
#define BK_AGING_OPTIONS_INIT BK_OPTIONS_INIT_(bk_aging_options)

/* What a ring for `capacity` keys per window at FPR p needs. */
typedef struct bk_aging_geometry {
    uint32_t generations;   /* g */
    uint64_t gen_capacity;  /* C = ceil(capacity / (g - 1)): keys per generation */
    uint64_t blocks;        /* blocks per generation (buckets of the ring): 256 bits at p >= 1%, 512 or
                               1024 below (bytes / (blocks * g) says which) */
    uint64_t bytes;         /* memory of the ring: blocks * g * block bytes */
    double fpr;             /* the FPR with every generation holding C keys (at most p) */
    double bits_per_key;    /* bytes * 8 / capacity */
} bk_aging_geometry;

/* ---- sizing. Pure: [any] ---- */

/* Smallest ring of g generations (0: the default, or below p = 1% the g of the fewest bits) whose FPR
 * with g full generations of ceil(capacity / (g - 1)) keys is at most p (below 1%: at most 0.9 p, so
 * that measured rates stay under p). BK_EINVAL for capacity 0, p not in (0, 1), a bad g;
 * BK_ETOOBIG. */
BK_API bk_status bk_aging_size(uint64_t capacity, double p, uint32_t generations, bk_aging_geometry *out);

/* ---- lifetime ---- */

/* A count window: keys inserted in the last `window` insertions are always reported present; FPR at
 * most p. opts may be NULL. Errors: BK_EINVAL (window 0, bad p or g, out NULL), BK_ETOOBIG,
 * BK_ENOMEM. [any] */
BK_API bk_status bk_aging_new_count(uint64_t window, double p, const bk_aging_options *opts, bk_aging **out);
/* A time window of window_ms milliseconds (at least g - 1), sized for `capacity` keys per window at
 * FPR p. Errors as bk_aging_new_count, and BK_EINVAL for capacity 0 or window_ms < g - 1. [any] */
BK_API bk_status bk_aging_new_time(uint64_t window_ms, uint64_t capacity, double p, const bk_aging_options *opts,
                                   bk_aging **out);
/* Free; NULL is fine. [excl] */
BK_API void bk_aging_free(bk_aging *f);
/* A deep copy (same clock), made with f's allocator. Errors: BK_EINVAL (f or out NULL), BK_ENOMEM;
 * on error *out is NULL (when out is not). [query] */
BK_API bk_status bk_aging_clone(const bk_aging *f, bk_aging **out);
/* A clock for options.clock / bk_aging_set_clock: CLOCK_MONOTONIC in ms (ctx unused). Steps of the
 * wall clock do not move it, so keys are never aged early by them; it counts from the boot and
 * stops while the machine sleeps (keys then live longer, never shorter), so a filter saved with it
 * means nothing to another boot: use it for windows that live in one process. [any] (since 1.1) */
BK_API uint64_t bk_aging_monotonic_ms(void *ctx);
/* Replace the clock of a time window (NULL: the wall clock), e.g. after loading it from a file.
 * BK_EINVAL for f NULL. [excl] */
BK_API bk_status bk_aging_set_clock(bk_aging *f, bk_aging_clock clock, void *ctx);

/* ---- insert and query ---- */

/* Insert (into the current generation, turning the ring first when it is due). BK_EINVAL if f is
 * NULL, or key is NULL with len > 0. [excl] */
BK_API bk_status bk_aging_add(bk_aging *f, const void *key, size_t len);
BK_API bk_status bk_aging_add_hash(bk_aging *f, uint64_t hash);

/* Query: true if the key is probably in the window (or in its slack), false if it certainly is not.
 * f must not be NULL; key may be NULL only when len is 0. [query] */
BK_API bool bk_aging_contains(const bk_aging *f, const void *key, size_t len);
BK_API bool bk_aging_contains_hash(const bk_aging *f, uint64_t hash);

/* The dedup primitive: BK_OK if the key was (certainly) not in the window, and it is now inserted;
 * BK_EEXISTS if it was (probably) there. A key found only in an older generation is inserted again
 * (its window restarts, as for any repeat in the stream); a key found in the current generation
 * changes no bit. Either way, for a count window, the call counts as one insertion.
 * BK_EINVAL as bk_aging_add. [excl] */
BK_API bk_status bk_aging_add_if_absent(bk_aging *f, const void *key, size_t len);
BK_API bk_status bk_aging_add_if_absent_hash(bk_aging *f, uint64_t hash);

/* uint64 keys: the same answers as the byte forms on the key's 8 little-endian bytes
 * (bk_aging_add_u64(f, k) is bk_aging_add(f, &k_le, 8)), so the two forms mix on one filter and in
 * files. The hash is XXH3 at the constant length 8 (bk_hash64 of those bytes) without the byte
 * forms' length dispatch. Errors and thread-safety as the byte forms: add [excl], add_if_absent
 * [excl], contains [query]. */
BK_API bk_status bk_aging_add_u64(bk_aging *f, uint64_t key);
BK_API bk_status bk_aging_add_if_absent_u64(bk_aging *f, uint64_t key);
BK_API bool bk_aging_contains_u64(const bk_aging *f, uint64_t key);

/* Batches (common.h, "Batches"): hash, prefetch ahead, then probe in order (a key repeated within a
 * batch is found by its second add_if_absent). A time window reads the clock once per batch.
 * add_if_absent: results[i] = 1 if keys[i] was probably present (not inserted); it never stops early,
 * so *done = n on BK_OK. [excl] for adds and add_if_absent, [query] for contains. */
BK_API bk_status bk_aging_add_many(bk_aging *f, const void *const *keys, const size_t *lens, size_t n);
BK_API bk_status bk_aging_add_hashes(bk_aging *f, const uint64_t *hashes, size_t n);
BK_API bk_status bk_aging_contains_many(const bk_aging *f, const void *const *keys, const size_t *lens, size_t n,
                                        uint8_t *results, size_t *hits);
BK_API bk_status bk_aging_contains_hashes(const bk_aging *f, const uint64_t *hashes, size_t n, uint8_t *results,
                                          size_t *hits);
BK_API bk_status bk_aging_add_if_absent_many(bk_aging *f, const void *const *keys, const size_t *lens, size_t n,
                                             uint8_t *results, size_t *done);
BK_API bk_status bk_aging_add_if_absent_hashes(bk_aging *f, const uint64_t *hashes, size_t n, uint8_t *results,
                                               size_t *done);

/* ---- whole-filter operations ---- */

/* Time windows: forget the generations that have aged out by now (inserts do this anyway; call it to
 * free a quiet filter's statistics from old keys). Count windows: nothing to do. [excl] */
BK_API void bk_aging_advance(bk_aging *f);
/* Forget every key (the geometry, seed and clock stay). [excl] */
BK_API void bk_aging_clear(bk_aging *f);
/* Union of two time windows with the same window, g, geometry and seed (the same streams' keys seen
 * on several hosts): dst takes, generation by generation, the keys src holds for the same period;
 * periods dst has already forgotten are skipped. Count windows cannot be merged (their generations
 * are not aligned in time: a union would misstate every key's age): BK_ENOTSUP when dst is one.
 * BK_EINCOMPAT for different parameters or modes (dst unchanged), BK_EINVAL for NULL. [excl] on dst,
 * [query] on src. */
BK_API bk_status bk_aging_union(bk_aging *dst, const bk_aging *src);

/* Common statistics: capacity (the window's keys), count (keys held by live generations), fill,
 * fpr_now (from each live generation's key count, exact split-block formula), saturated (some
 * generation holds more than C keys: a time window above its rate), subfilters = g. O(memory). [query] */
BK_API void bk_aging_stats(const bk_aging *f, bk_stats *out);

/* ---- accessors; f must not be NULL. [query] ---- */
BK_API uint64_t bk_aging_seed(const bk_aging *f);
BK_API bk_aging_mode bk_aging_mode_of(const bk_aging *f);
BK_API uint64_t bk_aging_window(const bk_aging *f);
BK_API uint32_t bk_aging_generations(const bk_aging *f);
BK_API uint64_t bk_aging_memory(const bk_aging *f); /* bytes of the ring */

#ifdef __cplusplus
}
#endif
#endif

/*
 * Experimental tier: only with BK_STATIC_LINKING_ONLY defined before the first include, or through
 * <bloomkit/experimental.h>. It may change in any release (common.h, versioning).
 */
#if defined(BK_STATIC_LINKING_ONLY) && !defined(BLOOMKIT_AGING_H_STATIC)
#define BLOOMKIT_AGING_H_STATIC
#ifdef __cplusplus
extern "C" {
#endif

/* The window in detail. Generation 0 is the current one, 1 the one before, ... */
typedef struct bk_aging_info {
    bk_aging_mode mode;
    uint32_t generations;
    uint64_t window;         /* W insertions, or T ms */
    uint64_t gen_capacity;   /* C keys per generation */
    uint64_t period_ms;      /* time windows: ms per generation, ceil(T / (g - 1)); else 0 */
    uint64_t slack;          /* at most this much longer (insertions or ms) a key may be reported */
    uint64_t covered;        /* the window the filter covers now: the last `covered` insertions (or ms)
                                are all remembered (less than the window while it is young) */
    uint64_t inserted;       /* insertions since creation (or the last clear) */
    uint32_t live;           /* generations that may hold keys now (time windows: fewer after a pause) */
    uint64_t gen_count[BK_AGING_MAX_GENERATIONS]; /* keys inserted into each generation */
    double gen_fill[BK_AGING_MAX_GENERATIONS];    /* fraction of its bits set */
    double fpr_now;
} bk_aging_info;
/* Fill *out (O(memory): counts the bits). BK_EINVAL for NULL. [query] */
BK_API bk_status bk_aging_get_info(const bk_aging *f, bk_aging_info *out);

#ifdef __cplusplus
}
#endif
#endif /* BK_STATIC_LINKING_ONLY */
