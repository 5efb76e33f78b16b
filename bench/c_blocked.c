/*
 * Contenders: bloomkit's blocked filter (both layouts), and the memory floor it is measured against.
 *
 * "floor" is not a filter: an array of the same size as the SPLIT256 filter for (n, p), where each key
 * is hashed like a filter key and costs one read (query) or one read-modify-write (insert) of a
 * random 64-byte line. Its batch form prefetches the same distance ahead as the blocked filter's, so
 * "blocked (batch)" next to "floor (batch)" is the filter's cost over the memory system's.
 * The SIMD path follows $BK_SIMD (scalar, avx2, avx512; default: the CPU's best).
 *
 * "(inline, pre-hashed)" rows: a plain loop over hashes computed before the timer, one key at a time
 * through the header-inline view (bk_blocked_view_add / _contains; AVX2 form when the filter's path
 * is AVX2 or better), and for the floor the same loop reading one line per hash. No batching and no
 * prefetch: what the CPU overlaps on its own when each key costs a few instructions.
 */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <bloomkit/experimental.h>
#include "bench.h"

static void *bb_create(uint64_t n, double p, bk_blocked_layout layout)
{
    bk_blocked *f;
    bk_blocked_options o = { .layout = layout, .seed = 0 };
    return bk_blocked_new(n, p, &o, &f) == BK_OK ? f : NULL;
}
void *bench_blocked_create(uint64_t n, double p) { return bb_create(n, p, BK_BLOCKED_SPLIT256); }
static void *b512_create(uint64_t n, double p) { return bb_create(n, p, BK_BLOCKED_512); }
static void bb_add(void *f, const void *k, size_t len) { bk_blocked_add(f, k, len); }
static bool bb_contains(void *f, const void *k, size_t len) { return bk_blocked_contains(f, k, len); }
static void bb_add_batch(void *f, const void *const *k, const size_t *l, size_t n) { bk_blocked_add_many(f, k, l, n); }
static size_t bb_contains_batch(void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r)
{
    return BENCH_HITS(bk_blocked_contains_many, f, k, l, n, r);
}
size_t bench_blocked_bytes(void *f)
{
    size_t len;
    bk_blocked_data(f, &len);
    return len;
}
void bench_blocked_destroy(void *f) { bk_blocked_free(f); }
void bench_blocked_clear(void *f) { bk_blocked_clear(f); }
static double bb_fpr(void *f, uint64_t n)
{
    (void)n;
    bk_stats st;
    bk_blocked_stats(f, &st);
    return st.fpr_now;
}

/* ---- header-inline view, one pre-hashed key at a time ---- */
static void view_add_scalar(bk_blocked_view v, const uint64_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++) bk_blocked_view_add_scalar(v, h[i]);
}
static size_t view_contains_scalar(bk_blocked_view v, const uint64_t *h, size_t n, uint8_t *r)
{
    size_t present = 0;
    for (size_t i = 0; i < n; i++) {
        r[i] = bk_blocked_view_contains_scalar(v, h[i]);
        present += r[i];
    }
    return present;
}
#ifdef BK_BLOCKED_VIEW_HAVE_AVX2
__attribute__((target("avx2"))) static void view_add_avx2(bk_blocked_view v, const uint64_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++) bk_blocked_view_add_avx2(v, h[i]);
}
__attribute__((target("avx2"))) static size_t view_contains_avx2(bk_blocked_view v, const uint64_t *h, size_t n,
                                                                 uint8_t *r)
{
    size_t present = 0;
    for (size_t i = 0; i < n; i++) {
        r[i] = bk_blocked_view_contains_avx2(v, h[i]);
        present += r[i];
    }
    return present;
}
#endif
static void bb_add_hashed(void *f, const uint64_t *h, size_t n)
{
    bk_blocked_view v;
    if (bk_blocked_get_view(f, &v) != BK_OK) return;
#ifdef BK_BLOCKED_VIEW_HAVE_AVX2
    if (bk_blocked_simd(f) >= BK_SIMD_AVX2) view_add_avx2(v, h, n);
    else
#endif
        view_add_scalar(v, h, n);
    bk_blocked_note_added(f, n);
}
static size_t bb_contains_hashed(void *f, const uint64_t *h, size_t n, uint8_t *r)
{
    bk_blocked_view v;
    if (bk_blocked_get_view(f, &v) != BK_OK) return 0;
#ifdef BK_BLOCKED_VIEW_HAVE_AVX2
    if (bk_blocked_simd(f) >= BK_SIMD_AVX2) return view_contains_avx2(v, h, n, r);
#endif
    return view_contains_scalar(v, h, n, r);
}

const bench_contender bench_blocked = {
    .name = "blocked", .create = bench_blocked_create, .add = bb_add, .contains = bb_contains,
    .add_batch = bb_add_batch, .contains_batch = bb_contains_batch, .add_hashed = bb_add_hashed,
    .contains_hashed = bb_contains_hashed, .clear = bench_blocked_clear, .bytes = bench_blocked_bytes,
    .destroy = bench_blocked_destroy, .expected_fpr = bb_fpr, .peer = "sbbf",
    .note = "bloomkit blocked, split-block layout (256-bit blocks, k = 8), path from $BK_SIMD or the CPU",
};
const bench_contender bench_blocked512 = {
    .name = "blocked512", .create = b512_create, .add = bb_add, .contains = bb_contains,
    .add_batch = bb_add_batch, .contains_batch = bb_contains_batch, .clear = bench_blocked_clear,
    .bytes = bench_blocked_bytes, .destroy = bench_blocked_destroy, .expected_fpr = bb_fpr,
    .note = "bloomkit blocked, 512-bit blocks with k probes anywhere in the line",
};

/* ---- the memory floor ---- */

#ifndef FLOOR_PF
#  define FLOOR_PF 16 /* the blocked filter's prefetch distance (BK_PF in src/core/blocked_engine.h) */
#endif

typedef struct {
    uint64_t *lines; /* lines * 8 words */
    uint64_t nlines;
    size_t bytes;
} floor_t;

static uint64_t line_of(const floor_t *fl, uint64_t h)
{
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)(((u128)h * fl->nlines) >> 64) * 8;
}

static void *floor_create(uint64_t n, double p)
{
    bk_geometry g;
    if (bk_blocked_size(n, p, BK_BLOCKED_SPLIT256, &g) != BK_OK) return NULL;
    floor_t *fl = calloc(1, sizeof *fl);
    if (!fl) return NULL;
    fl->bytes = (size_t)((g.m / 8 + 63) / 64 * 64);
    fl->nlines = fl->bytes / 64;
    if (posix_memalign((void **)&fl->lines, 2 << 20, fl->bytes)) {
        free(fl);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    madvise(fl->lines, fl->bytes, MADV_HUGEPAGE); /* as bloomkit's allocator does */
#endif
    memset(fl->lines, 0, fl->bytes);
    return fl;
}

/* One read of the key's line (the whole line is fetched; one word of it is used). */
static void floor_add(void *f, const void *k, size_t len)
{
    floor_t *fl = f;
    uint64_t h = bk_hash64(k, len, 0);
    fl->lines[line_of(fl, h)] |= h;
}
static bool floor_contains(void *f, const void *k, size_t len)
{
    floor_t *fl = f;
    uint64_t h = bk_hash64(k, len, 0);
    return (fl->lines[line_of(fl, h)] & h) == h;
}
static void floor_add_batch(void *f, const void *const *k, const size_t *l, size_t n)
{
    floor_t *fl = f;
    uint64_t ring[FLOOR_PF];
    size_t pre = n < FLOOR_PF ? n : FLOOR_PF;
    for (size_t i = 0; i < pre; i++) {
        ring[i] = bk_hash64(k[i], l[i], 0);
        __builtin_prefetch(&fl->lines[line_of(fl, ring[i])], 1, 3);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = ring[i % FLOOR_PF];
        if (i + FLOOR_PF < n) {
            uint64_t g = bk_hash64(k[i + FLOOR_PF], l[i + FLOOR_PF], 0);
            ring[i % FLOOR_PF] = g;
            __builtin_prefetch(&fl->lines[line_of(fl, g)], 1, 3);
        }
        fl->lines[line_of(fl, h)] |= h;
    }
}
static size_t floor_contains_batch(void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r)
{
    floor_t *fl = f;
    uint64_t ring[FLOOR_PF];
    size_t pre = n < FLOOR_PF ? n : FLOOR_PF, present = 0;
    for (size_t i = 0; i < pre; i++) {
        ring[i] = bk_hash64(k[i], l[i], 0);
        __builtin_prefetch(&fl->lines[line_of(fl, ring[i])], 0, 3);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = ring[i % FLOOR_PF];
        if (i + FLOOR_PF < n) {
            uint64_t g = bk_hash64(k[i + FLOOR_PF], l[i + FLOOR_PF], 0);
            ring[i % FLOOR_PF] = g;
            __builtin_prefetch(&fl->lines[line_of(fl, g)], 0, 3);
        }
        r[i] = (fl->lines[line_of(fl, h)] & h) == h;
        present += r[i];
    }
    return present;
}
static void floor_add_hashed(void *f, const uint64_t *h, size_t n)
{
    floor_t *fl = f;
    for (size_t i = 0; i < n; i++) fl->lines[line_of(fl, h[i])] |= h[i];
}
static size_t floor_contains_hashed(void *f, const uint64_t *h, size_t n, uint8_t *r)
{
    floor_t *fl = f;
    size_t present = 0;
    for (size_t i = 0; i < n; i++) {
        r[i] = (fl->lines[line_of(fl, h[i])] & h[i]) == h[i];
        present += r[i];
    }
    return present;
}
static void floor_clear(void *f) { memset(((floor_t *)f)->lines, 0, ((floor_t *)f)->bytes); }
static size_t floor_bytes(void *f) { return ((floor_t *)f)->bytes; }
static void floor_destroy(void *f)
{
    floor_t *fl = f;
    free(fl->lines);
    free(fl);
}

const bench_contender bench_floor = {
    .name = "floor", .create = floor_create, .add = floor_add, .contains = floor_contains,
    .add_batch = floor_add_batch, .contains_batch = floor_contains_batch, .add_hashed = floor_add_hashed,
    .contains_hashed = floor_contains_hashed, .clear = floor_clear, .bytes = floor_bytes,
    .destroy = floor_destroy,
    .note = "not a filter: hash + one random 64-byte line read (insert: read-modify-write) in an array the "
            "size of 'blocked'; its FPR column is meaningless",
};
