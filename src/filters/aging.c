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
 * block are the blocked engine's SPLIT256 bits of the low 32 bits of h (core/blocked_engine.h), so a
 * generation's block holds exactly the bits a SPLIT256 blocked filter of `blocks` blocks would set for
 * the same hash. The probes and the insert and query loops are in aging_paths.c.
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
#include "bloomkit/aging.h"
#include "bloomkit/blocked.h"


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

/* ================= the ring ================= */

static void clear_slot(bk_aging *f, uint32_t slot)
{
    uint64_t bw = f->bw, stride = (uint64_t)f->g * bw;
    uint64_t *w = f->words;
    for (uint64_t b = 0; b < f->blocks; b++, w += stride) memset(w + bw * slot_pos(slot, b, f->g), 0, bw * 8);
    f->count[slot] = 0;
}

/* Turn the ring to epoch e (> f->epoch), clearing the slots of the new epochs. */
void bk__aging_turn_to(bk_aging *f, uint64_t e)
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

/* ================= sizing and lifetime ================= */

/* One generation of blocks of `bits` bits holding Poisson(lambda) keys each, k probes anywhere in
 * the block: the mean over block loads j of (1 - (1 - 1/bits)^(k j))^k. */
static double wide_fpr_at(double lambda, uint32_t bits, uint32_t k)
{
    double sum = 0, pj = exp(-lambda), miss = log1p(-1.0 / bits);
    for (uint32_t j = 0;; j++) {
        if (j) pj *= lambda / j;
        sum += pj * pow(-expm1((double)k * j * miss), k);
        if ((double)j > lambda && pj < 1e-18) break;
        if (j > 100000) break;
    }
    return sum;
}

double bk__aging_gen_fpr(uint64_t blocks, uint64_t n, uint32_t bw, uint32_t k)
{
    if (bw == 4) return bk_blocked_fpr(blocks * 256, n, BK_BLOCKED_SPLIT256, 8);
    return wide_fpr_at((double)n / (double)blocks, bw * 64, k);
}

/* The FPR of g full generations at load lambda per block. */
static double wide_ring_fpr(double lambda, uint32_t bits, uint32_t k, uint32_t g)
{
    return -expm1(g * log1p(-wide_fpr_at(lambda, bits, k)));
}

/*
 * The wide body's sizing (docs/MATH.md, "Aging filter"): blocks of 512 bits for p >= 0.1% and 1024
 * below (one or two cache lines a generation), and the g (when not given: 3 to 16, and at most
 * capacity + 1) and k that make the
 * fewest bits per window key, g / (g - 1) * bits / lambda, where lambda is the largest load per
 * block at which g full generations answer at most 0.9 p: the tenth kept back covers the distance
 * between the formula (independent probe positions) and the engine's probes, so that a measured rate
 * stays under p (about 0.2 bits per key).
 */
static bk_status wide_size(uint64_t capacity, double p, uint32_t generations, bk_aging_geometry *out, uint32_t *bw_out,
                           uint32_t *k_out)
{
    uint32_t bw = p >= 0.001 ? 8 : 16, bits = bw * 64;
    double aim = 0.9 * p;
    /* g - 1 at most the window: more generations would hold one key each and only add slack */
    uint32_t g_max = capacity + 1 < BK_AGING_MAX_GENERATIONS ? (uint32_t)capacity + 1 : BK_AGING_MAX_GENERATIONS;
    uint32_t g_lo = generations ? generations : (g_max < 3 ? g_max : 3), g_hi = generations ? generations : g_max;
    double best = HUGE_VAL, best_lambda = 0;
    uint32_t best_g = 0, best_k = 0;
    for (uint32_t g = g_lo; g <= g_hi; g++) {
        /* k near log2(g / aim), the classic optimum, within the engine's 16 probes */
        int k_hi = (int)lround(log2(g / aim)) + 1;
        if (k_hi > 16) k_hi = 16;
        for (int k = k_hi - 5 > 1 ? k_hi - 5 : 1; k <= k_hi; k++) {
            double lo = 0, hi = bits;
            for (int it = 0; it < 40; it++) {
                double mid = (lo + hi) / 2;
                if (wide_ring_fpr(mid, bits, (uint32_t)k, g) <= aim)
                    lo = mid;
                else
                    hi = mid;
            }
            if (lo <= 0) continue;
            double cost = (double)g / (g - 1) * bits / lo;
            if (cost < best) {
                best = cost;
                best_lambda = lo;
                best_g = g;
                best_k = (uint32_t)k;
            }
        }
    }
    if (!best_g) return BK_EINVAL;
    uint64_t c = capacity / (best_g - 1) + (capacity % (best_g - 1) != 0);
    double bl = ceil((double)c / best_lambda);
    if (!(bl < 0x1p62)) return BK_ETOOBIG;
    uint64_t blocks = (uint64_t)bl, bytes;
    if (blocks == 0) blocks = 1;
    /* the load rounds down with the block count: the FPR stays at most the aim */
    while (-expm1(best_g * log1p(-bk__aging_gen_fpr(blocks, c, bw, best_k))) > aim) blocks++;
    if (bk__mul_overflow(blocks, (uint64_t)best_g * bw * 8, &bytes) || bytes > BK_MAX_FILTER_BYTES) return BK_ETOOBIG;
    out->generations = best_g;
    out->gen_capacity = c;
    out->blocks = blocks;
    out->bytes = bytes;
    out->fpr = -expm1(best_g * log1p(-bk__aging_gen_fpr(blocks, c, bw, best_k)));
    out->bits_per_key = (double)bytes * 8.0 / (double)capacity;
    *bw_out = bw;
    *k_out = best_k;
    return BK_OK;
}

/* The geometry and the block shape (bw words, k probes) of a ring for capacity keys at p. */
static bk_status size_ring(uint64_t capacity, double p, uint32_t generations, bk_aging_geometry *out, uint32_t *bw,
                           uint32_t *k)
{
    if (!out || capacity == 0 || !(p > 0 && p < 1) || (generations && (generations < 2 || generations > BK_AGING_MAX_GENERATIONS)))
        return BK_EINVAL;
    if (p < BK_AGING_WIDE_BELOW) return wide_size(capacity, p, generations, out, bw, k);
    uint32_t g = generations ? generations : BK_AGING_DEFAULT_GENERATIONS;
    *bw = 4;
    *k = 8;
    uint64_t c = capacity / (g - 1) + (capacity % (g - 1) != 0);
    /* Each generation gets p_g with 1 - (1 - p_g)^g = p (above 1%: 0.985 p, so that a rate measured
     * on a million keys, whose spread there is about 0.5% of p, stays under p; at 1% and below
     * the split-block formula's rounding keeps it under, and those rings are sized as always). */
    double aim = p > 0.01 ? 0.985 * p : p;
    double pg = -expm1(log1p(-aim) / g);
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

bk_status bk_aging_size(uint64_t capacity, double p, uint32_t generations, bk_aging_geometry *out)
{
    uint32_t bw, k;
    return size_ring(capacity, p, generations, out, &bw, &k);
}

bk_status bk__aging_alloc(const bk_allocator *a, bk_aging_mode mode, uint32_t g, uint64_t blocks, uint32_t bw,
                          uint32_t k, bool own_words, bk_aging **out)
{
    const bk_allocator *al = bk__allocator(a);
    bk_aging *f = bk__calloc(al, 1, sizeof *f);
    if (!f) return BK_ENOMEM;
    f->alloc = al;
    f->mode = mode;
    f->g = g;
    f->blocks = blocks;
    f->bw = bw;
    f->k = k;
    f->nwords = blocks * g * bw;
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
    f->ops = bw == 4 ? bk__aging_ops_for_cpu() : bk__aging_wide_ops();
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
    uint32_t bw, k;
    bk_status s = size_ring(capacity, p, o->generations, &geo, &bw, &k);
    if (s != BK_OK) return s;
    if (mode == BK_AGING_TIME && window < geo.generations - 1) return BK_EINVAL;
    bk_aging *f;
    if ((s = bk__aging_alloc(o->allocator, mode, geo.generations, geo.blocks, bw, k, true, &f)) != BK_OK) return s;
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
    bk_status s = bk__aging_alloc(f->alloc, f->mode, f->g, f->blocks, f->bw, f->k, true, &c);
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
    return a->mode == b->mode && a->g == b->g && a->blocks == b->blocks && a->bw == b->bw && a->k == b->k &&
           a->seed == b->seed &&
           a->window == b->window && a->period == b->period && a->gen_cap == b->gen_cap;
}

bk_status bk_aging_union(bk_aging *dst, const bk_aging *src)
{
    if (!dst || !src) return BK_EINVAL;
    if (dst->mode != BK_AGING_TIME) return BK_ENOTSUP;
    if (!same_geometry(dst, src)) return BK_EINCOMPAT;
    if (src->epoch > dst->epoch) bk__aging_turn_to(dst, src->epoch);
    /* Epochs both still hold: (max(dst, src) - g, src->epoch]. */
    for (uint64_t a = 0; a < dst->g && a <= src->epoch; a++) {
        uint64_t e = src->epoch - a;
        if (e + dst->g <= dst->epoch) break;
        uint32_t slot = (uint32_t)(e % dst->g);
        uint64_t bw = dst->bw, stride = (uint64_t)dst->g * bw;
        uint64_t *d = dst->words;
        const uint64_t *s = src->words;
        for (uint64_t b = 0; b < dst->blocks; b++, d += stride, s += stride) {
            uint64_t q = bw * slot_pos(slot, b, dst->g);
            for (uint64_t x = q; x < q + bw; x++) d[x] |= s[x];
        }
        dst->count[slot] += src->count[slot];
    }
    dst->inserted += src->inserted;
    if (src->start < dst->start) dst->start = src->start;
    return BK_OK;
}
