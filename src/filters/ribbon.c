/* Ribbon filter: standard Ribbon, width 128, interleaved solution with fractional bits per key; sets of
 * 2 * SHARD_KEYS keys and more are solved in shards of about SHARD_KEYS keys (body 2). Geometry and
 * sizing, construction, lifetime and statistics; the queries are in ribbon_query.c, the bodies in
 * ribbon_file.c, the layout they share in ribbon_impl.h. */
#include "filters/ribbon_impl.h"

uint64_t bk__ribbon_shard_keys = 0;
int bk__ribbon_body = 0;
/* Whether new builds get body 3 by default */
#define BODY3_DEFAULT 1
static bool body3_for(uint64_t n) { return n > 0 && (bk__ribbon_body == 3 || (bk__ribbon_body == 0 && BODY3_DEFAULT)); }

static uint64_t shard_keys(void) { return bk__ribbon_shard_keys ? bk__ribbon_shard_keys : SHARD_KEYS; }
static bool sharded_for(uint64_t n) { return n >= 2 * shard_keys(); }
static uint64_t shards_for(uint64_t n) { return (n + shard_keys() / 2) / shard_keys(); }

/* lo = floor(log2(1/p)), computed with exact powers of two: 2^-(lo+1) < p <= 2^-lo. */
uint32_t bk__ribbon_lo_for(double p)
{
    uint32_t lo = 0;
    while (lo < MAX_COLS && ldexp(1.0, -(int)(lo + 1)) >= p) lo++;
    return lo;
}

static bool bad_fpr(double p) { return !(p >= BK_RIBBON_MIN_FPR && p < 1.0); }
/* The blocks with lo columns: as many as keep the mixture at or below p. */
void bk__ribbon_set_upper(rb_geom *g, double p)
{
    uint64_t starts = g->nblocks - 1;
    double a = ldexp(1.0, -(int)g->lo), b = ldexp(1.0, -(int)(g->lo + 1));
    double u = floor((double)starts * (p - b) / (a - b));
    if (!(u >= 0)) u = 0;
    if (u >= (double)starts) {
        g->upper = g->nblocks; /* every block lo: p is a power of two */
        return;
    }
    g->upper = (uint64_t)u;
    while (g->upper > 0 && geom_fpr(g) > p) g->upper--; /* rounding */
}

/*
 * Slots per key: 1 + eps(n), plus one block. The band's elimination fails when a stretch of slots
 * holds more rows than it has room for, the rows pushed forward piling up past the ribbon's width;
 * the more keys, the more stretches where that can happen, so eps grows with log n. Measured with
 * width 128 (fraction of first attempts that succeed): n = 1e5 and eps 0.025, over 85%; 1e6 and
 * 0.035, about 60%; 1e7 and 0.045, about 75%. Below 1e5 the spare block covers the fluctuations.
 */
double bk__ribbon_slack = 0.0;

static double slack_for(uint64_t n)
{
    if (bk__ribbon_slack != 0.0) return bk__ribbon_slack < 0 ? 0.0 : bk__ribbon_slack;
    double e = 0.025 + 0.003 * log2((double)n / 1e5);
    return e < 0.02 ? 0.02 : e;
}

static void geom_for(uint64_t n, double p, rb_geom *g)
{
    double want = ceil((double)n * (1.0 + slack_for(n)) / W);
    g->nblocks = (uint64_t)want + 1;
    if (g->nblocks < 2) g->nblocks = 2;
    g->lo = bk__ribbon_lo_for(p);
    bk__ribbon_set_upper(g, p);
}

bk_status bk__ribbon_geom_check(const rb_geom *g)
{
    if (g->nblocks > (UINT64_C(1) << 40)) return BK_ETOOBIG;
    uint64_t bytes = words_of(g) * 16;
    if (bytes > BK_MAX_FILTER_BYTES || bytes > SIZE_MAX / 2) return BK_ETOOBIG;
    return BK_OK;
}

/* A shard of n keys: 1 + SHARD_SLACK slots per key, plus one block. */
static void shard_geom(uint64_t n, double p, rb_geom *g)
{
    double e = bk__ribbon_slack != 0.0 ? (bk__ribbon_slack < 0 ? 0.0 : bk__ribbon_slack) : SHARD_SLACK;
    g->nblocks = (uint64_t)ceil((double)n * (1.0 + e) / W) + 1;
    if (g->nblocks < 2) g->nblocks = 2;
    g->lo = bk__ribbon_lo_for(p);
    bk__ribbon_set_upper(g, p);
}

/* The words of a sharded filter of n keys when every shard holds its share (n / S, rounded up). */
static uint64_t sharded_words(uint64_t n, double p, rb_geom *one)
{
    uint64_t S = shards_for(n);
    shard_geom((n + S - 1) / S, p, one);
    return S * words_of(one);
}

bk_status bk_ribbon_size(uint64_t n, double p, bk_geometry *out)
{
    if (!out) return BK_EINVAL;
    memset(out, 0, sizeof *out);
    if (n == 0 || bad_fpr(p)) return BK_EINVAL;
    if (n > BK_RIBBON_MAX_KEYS) return BK_ETOOBIG;
    rb_geom g;
    uint64_t words;
    if (body3_for(n)) {
        words = bk__ribbon3_size(n, p, &g);
        if (words * 8 > BK_MAX_FILTER_BYTES) return BK_ETOOBIG;
        out->m = words * 64;
        out->k = g.lo + (g.upper < g.nblocks);
        out->n = n;
        out->fpr = geom_fpr(&g);
        out->bits_per_key = (double)out->m / (double)n;
        return BK_OK;
    }
    if (sharded_for(n)) {
        words = sharded_words(n, p, &g);
        if (words * 16 > BK_MAX_FILTER_BYTES) return BK_ETOOBIG;
    } else {
        geom_for(n, p, &g);
        bk_status s = bk__ribbon_geom_check(&g);
        if (s != BK_OK) return s;
        words = words_of(&g);
    }
    out->m = words * W;
    out->k = g.lo + (g.upper < g.nblocks);
    out->n = n;
    out->fpr = geom_fpr(&g);
    out->bits_per_key = (double)out->m / (double)n;
    return BK_OK;
}

/* The build's scratch: the hashes twice (8 n each: ours, and grouped by shard), a shard's or the one
 * system's mixed keys (8 each), 16 bytes of row, 8 of result and 4 of counting sort per slot; and the
 * filter. */
uint64_t bk_ribbon_build_memory(uint64_t n, double p)
{
    if (bad_fpr(p) || n > BK_RIBBON_MAX_KEYS) return 0;
    if (body3_for(n)) {
        rb_geom g0;
        if (bk__ribbon3_size(n, p, &g0) * 8 > BK_MAX_FILTER_BYTES) return 0;
        return bk__ribbon3_build_memory(n, p);
    }
    rb_geom g;
    uint64_t words, keys;
    if (sharded_for(n)) {
        words = sharded_words(n, p, &g);
        if (words * 16 > BK_MAX_FILTER_BYTES) return 0;
        keys = 2 * ((n + shards_for(n) - 1) / shards_for(n)); /* a shard's share, and room for more */
        words += words / 32 + TAIL_WORDS + 1;
    } else {
        geom_for(n, p, &g);
        if (bk__ribbon_geom_check(&g) != BK_OK) return 0;
        words = words_of(&g);
        keys = n;
    }
    uint64_t slots = g.nblocks * W;
    return 16 * n + 8 * keys + 28 * slots + 4 + words * 16 +
           (shards_for(n) + 1) * (sizeof(rb_shard) + 2 * sizeof(size_t)) + 4 * 64 + sizeof(bk_ribbon);
}
/* ---- construction ---- */

typedef struct rb_build {
    rb_geom g;
    uint64_t cap_slots;  /* slots the row arrays have room for */
    uint64_t cap_starts; /* bucket entries - 1 */
    uint64_t cap_keys;   /* values keys has room for */
    uint64_t *sorted;    /* body 1: the sort's scratch when deduplicating; body 2: the hashes by shard */
    uint64_t *vals;      /* the hashes, when they must be ours (byte keys, deduplication) */
    uint64_t *keys;      /* an attempt's mixed keys, by starting slot */
    uint32_t *bucket;    /* per starting slot: the counting sort's counts, then positions */
    /* Per slot, the row whose first slot it is, as its low and high 64 bits and its right-hand side.
     * A slot is free when bit 0 of its low word is clear; only the low words are cleared (the high
     * words and right-hand sides of free slots are left over from earlier attempts and read masked). */
    uint64_t *clo, *chi, *res; /* res: 64-bit, so that one byte offset indexes all three */
    bool dirty;          /* clo may hold rows (an attempt since the last back-substitution) */
    const bk_allocator *al;
} rb_build;

static void build_release(rb_build *b)
{
    bk__free_aligned(b->al, b->sorted);
    bk__free_aligned(b->al, b->vals);
    bk__free_aligned(b->al, b->keys);
    bk__free(b->al, b->bucket);
    bk__free_aligned(b->al, b->clo);
    bk__free_aligned(b->al, b->chi);
    bk__free_aligned(b->al, b->res);
    b->sorted = b->vals = b->keys = NULL;
    b->bucket = NULL;
    b->clo = b->chi = NULL;
    b->res = NULL;
    b->cap_slots = b->cap_starts = b->cap_keys = 0;
}

/* Room for the row arrays and buckets of geometry b->g and an attempt of n keys (kept when it fits). */
static bk_status build_room(rb_build *b, size_t n)
{
    uint64_t slots = b->g.nblocks * W;
    /* a system's counts and positions are 32-bit (a system has about SHARD_KEYS keys, body 1 fewer
     * than 2 * SHARD_KEYS) */
    if (slots >= UINT32_MAX || n >= UINT32_MAX || slots > SIZE_MAX / 16) return BK_ETOOBIG;
    if (slots > b->cap_slots) {
        bk__free_aligned(b->al, b->clo);
        bk__free_aligned(b->al, b->chi);
        bk__free_aligned(b->al, b->res);
        b->clo = bk__calloc_aligned(b->al, (size_t)slots * 8);
        b->chi = bk__calloc_aligned(b->al, (size_t)slots * 8);
        b->res = bk__calloc_aligned(b->al, (size_t)slots * 8);
        b->cap_slots = b->clo && b->chi && b->res ? slots : 0;
        b->dirty = false;
        if (!b->clo || !b->chi || !b->res) return BK_ENOMEM;
    }
    if (slots > b->cap_starts) {
        bk__free(b->al, b->bucket);
        b->bucket = bk__malloc(b->al, (size_t)(slots + 1) * sizeof(uint32_t));
        b->cap_starts = b->bucket ? slots : 0;
        if (!b->bucket) return BK_ENOMEM;
    }
    if (n > b->cap_keys) {
        bk__free_aligned(b->al, b->keys);
        b->keys = bk__calloc_aligned(b->al, (n ? n : 1) * 8);
        b->cap_keys = b->keys ? n : 0;
        if (!b->keys) return BK_ENOMEM;
    }
    return BK_OK;
}

/* Outcome of an attempt. */
enum { ATTEMPT_OK, ATTEMPT_FAILED, ATTEMPT_REDUNDANT };

/* The low word of the 128-bit row (ch:cl) shifted right by t in [1, 63]: one SHRD on x86-64. */
BK_INLINE uint64_t shift_pair(uint64_t cl, uint64_t ch, unsigned t)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __asm__("shrdq %%cl, %2, %0" : "+r"(cl) : "c"(t), "r"(ch) : "cc");
    return cl;
#else
    return (cl >> t) | (ch << (64 - t));
#endif
}

/* keys ahead whose first slot the elimination loop prefetches */
#define INSERT_AHEAD 8

/*
 * One attempt with internal seed s over the n values h: sort the mixed keys by starting slot (a
 * counting sort), then add each row to the band. A row meets the row already kept at its first slot:
 * subtract it (XOR of rows and right-hand sides) and move to the new first one-bit, until a free slot
 * takes it. A row that vanishes was a combination of rows before it: with the same right-hand side
 * it adds nothing (a duplicate always does this), with another the system has no solution. A shard
 * (body 2) always remixes (its shard came from the hash's high bits); one system only from the
 * second attempt on.
 *
 * The order of the rows changes which row is kept where, not the band's span nor the solution (the
 * first slots of an echelon form of the rows are those of the span, and the solution with 0 in every
 * other slot is unique), nor whether a row with another right-hand side vanishes. So the rows go in
 * the order that is fastest:
 * - first a tight stretch: the rows starting in [a, e] lie in the e - a + 128 slots from a on, and
 *   an attempt fails nearly always where a stretch has more rows than slots (some row vanishes;
 *   width 128, 32,768 keys: about six failures in seven). The counting sort's prefix sums find such
 *   a stretch (the first, shortened), or else the stretch with the most rows for its slots, and its
 *   rows go first, so that a failing attempt mostly stops after few rows;
 * - four rows at once, from four parts of the keys, their steps interleaved (each step waits for the
 *   load of the row it meets; four chains of such waits overlap more than two: about a tenth less
 *   build time at 1% than two rows at once), two and one at the ends of the parts.
 */
typedef struct rb_lane {
    uint64_t cl, ch, o; /* o: the row's first slot times 8, its byte offset in clo, chi and res */
    uint64_t r;
} rb_lane;

BK_INLINE void lane_start(rb_lane *l, uint64_t x, uint64_t nstarts)
{
    u128 c0 = rb_coef(x);
    l->cl = (uint64_t)c0;
    l->ch = (uint64_t)(c0 >> 64);
    l->r = rb_fp(x);
    l->o = bk__range64(x, nstarts) * 8;
}

enum { LANE_MOVED, LANE_KEPT, LANE_VANISHED };

/* One step of a row: kept at its slot if free, else reduced by the row there and moved on. */
#define RB_AT(a, o) (*(uint64_t *)(void *)((char *)(a) + (o)))
BK_INLINE int lane_step(rb_lane *l, uint64_t *clo, uint64_t *chi, uint64_t *res)
{
    uint64_t o = l->o, e = RB_AT(clo, o);
    if (!(e & 1)) { /* a kept row has bit 0 set: the slot is free */
        /* stored by index (o / 8), an address of its own: the loads above keep theirs (base + o,
         * no address operation before the load) */
        clo[o >> 3] = l->cl;
        chi[o >> 3] = l->ch;
        res[o >> 3] = l->r;
        return LANE_KEPT;
    }
    uint64_t cl = l->cl ^ e, ch = l->ch ^ RB_AT(chi, o);
    l->r ^= RB_AT(res, o);
    unsigned t;
    if (BK_LIKELY(cl != 0)) {
        t = (unsigned)__builtin_ctzll(cl); /* >= 1: both rows had bit 0 */
        cl = shift_pair(cl, ch, t);
        ch >>= t;
    } else {
        if (ch == 0) return LANE_VANISHED;
        t = 64 + (unsigned)__builtin_ctzll(ch);
        cl = ch >> (t - 64);
        ch = 0;
    }
    l->cl = cl;
    l->ch = ch;
    l->o = o + (uint64_t)t * 8;
    return LANE_MOVED;
}

/* Adds the rows keys[a0, a1) and keys[c0, c1), two at once; returns the outcome so far (add_rows4's
 * ends). */
static int add_rows(rb_build *b, uint64_t nstarts, size_t a0, size_t a1, size_t c0, size_t c1, int outcome)
{
    const uint64_t *keys = b->keys;
    uint64_t *clo = b->clo, *chi = b->chi, *res = b->res;
    if (a0 == a1) { /* one range: the single lane below */
        a0 = c0;
        a1 = c1;
        c0 = c1;
    }
    if (a0 == a1) return outcome;
    rb_lane a, c;
    lane_start(&a, keys[a0], nstarts);
    if (c0 < c1) {
        lane_start(&c, keys[c0], nstarts);
        for (;;) {
            int ra = lane_step(&a, clo, chi, res);
            int rc = lane_step(&c, clo, chi, res);
            if (BK_LIKELY(ra == LANE_MOVED && rc == LANE_MOVED)) continue;
            bool a_done = false;
            if (ra != LANE_MOVED) {
                if (ra == LANE_VANISHED) {
                    if (a.r != 0) return ATTEMPT_FAILED;
                    outcome = ATTEMPT_REDUNDANT;
                }
                if (++a0 == a1) {
                    a_done = true;
                } else {
                    if (BK_LIKELY(a0 + INSERT_AHEAD < a1))
                        BK_PREFETCH_W(&clo[bk__range64(keys[a0 + INSERT_AHEAD], nstarts)]);
                    lane_start(&a, keys[a0], nstarts);
                }
            }
            if (rc != LANE_MOVED) {
                if (rc == LANE_VANISHED) {
                    if (c.r != 0) return ATTEMPT_FAILED;
                    outcome = ATTEMPT_REDUNDANT;
                }
                if (++c0 == c1) {
                    if (a_done) return outcome;
                    break; /* lane a goes on alone */
                }
                if (BK_LIKELY(c0 + INSERT_AHEAD < c1)) BK_PREFETCH_W(&clo[bk__range64(keys[c0 + INSERT_AHEAD], nstarts)]);
                lane_start(&c, keys[c0], nstarts);
            }
            if (a_done) { /* lane c goes on alone */
                a = c;
                a0 = c0;
                a1 = c1;
                break;
            }
        }
    }
    for (;;) {
        int ra = lane_step(&a, clo, chi, res);
        if (BK_LIKELY(ra == LANE_MOVED)) continue;
        if (ra == LANE_VANISHED) {
            if (a.r != 0) return ATTEMPT_FAILED;
            outcome = ATTEMPT_REDUNDANT;
        }
        if (++a0 == a1) break;
        if (BK_LIKELY(a0 + INSERT_AHEAD < a1)) BK_PREFETCH_W(&clo[bk__range64(keys[a0 + INSERT_AHEAD], nstarts)]);
        lane_start(&a, keys[a0], nstarts);
    }
    return outcome;
}

/* A lane's row ended (kept or vanished): the outcome so far, or ATTEMPT_FAILED. */
BK_INLINE int lane_end(const rb_lane *l, int r, int outcome)
{
    if (r == LANE_VANISHED) {
        if (l->r != 0) return ATTEMPT_FAILED;
        return ATTEMPT_REDUNDANT;
    }
    return outcome;
}

/* Adds the rows of four ranges keys[a[k], e[k]), four rows at once while every range has rows left
 * (each step waits for the load of the row it meets: four chains hide more of that wait than two);
 * then each lane's row in progress is finished and the ranges left go to add_rows. */
static int add_rows4(rb_build *b, uint64_t nstarts, size_t a[4], size_t e[4], int outcome)
{
    const uint64_t *keys = b->keys;
    uint64_t *clo = b->clo, *chi = b->chi, *res = b->res;
    for (int k = 0; k < 4; k++)
        if (a[k] == e[k]) goto rest;
    rb_lane L[4];
    for (int k = 0; k < 4; k++) lane_start(&L[k], keys[a[k]], nstarts);
    for (;;) {
        int done = -1;
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            int r = lane_step(&L[k], clo, chi, res);
            if (BK_LIKELY(r == LANE_MOVED)) continue;
            if ((outcome = lane_end(&L[k], r, outcome)) == ATTEMPT_FAILED) return outcome;
            if (++a[k] == e[k]) {
                done = k;
                continue;
            }
            if (BK_LIKELY(a[k] + INSERT_AHEAD < e[k])) BK_PREFETCH_W(&clo[bk__range64(keys[a[k] + INSERT_AHEAD], nstarts)]);
            lane_start(&L[k], keys[a[k]], nstarts);
        }
        if (BK_LIKELY(done < 0)) continue;
        /* a range ran out: the other lanes finish their rows, and their ranges' next rows go on below */
        for (int k = 0; k < 4; k++) {
            if (a[k] == e[k]) continue;
            int r;
            while ((r = lane_step(&L[k], clo, chi, res)) == LANE_MOVED) {}
            if ((outcome = lane_end(&L[k], r, outcome)) == ATTEMPT_FAILED) return outcome;
            a[k]++;
        }
        break;
    }
rest:
    outcome = add_rows(b, nstarts, a[0], e[0], a[1], e[1], outcome);
    if (outcome == ATTEMPT_FAILED) return outcome;
    return add_rows(b, nstarts, a[2], e[2], a[3], e[3], outcome);
}

static int build_attempt(rb_build *b, const uint64_t *h, size_t n, uint64_t s, bool shard)
{
    const uint64_t nstarts = (b->g.nblocks - 1) * W;
    uint32_t *cnt = b->bucket;
    memset(cnt, 0, (size_t)(nstarts + 1) * sizeof *cnt);
    if (shard) {
        for (size_t i = 0; i < n; i++) cnt[bk__range64(rb_x2(h[i], s), nstarts) + 1]++;
    } else {
        for (size_t i = 0; i < n; i++) cnt[bk__range64(rb_mix(h[i], s), nstarts) + 1]++;
    }
    /* prefix sums: cnt[j] = C(j), the rows starting before slot j. The rows starting in [a, e] have
     * e - a + 128 slots: the stretch's excess is D(e + 1) - D(a) - 127 with D(j) = C(j) - j; the
     * tightest stretch has the largest D(e + 1) - min over a <= e of D(a). */
    int64_t low = 0, most = INT64_MIN;
    uint64_t low_at = 0, a_best = 0, e1_best = 0, over = 0;
    for (uint64_t j = 1; j <= nstarts; j++) {
        cnt[j] += cnt[j - 1];
        int64_t d = (int64_t)cnt[j] - (int64_t)j;
        if (d - low > most) {
            most = d - low;
            a_best = low_at;
            e1_best = j;
            if (most >= W && !over) over = j;
        }
        if (d < low) {
            low = d;
            low_at = j;
        }
    }
    if (over) {
        /* more rows than slots: the first stretch found, shortened to the latest start a with
         * D(a) <= D(e + 1) - 128 (its rows are dependent, so the attempt fails unless their
         * right-hand sides agree) */
        int64_t want = (int64_t)cnt[over] - (int64_t)over - W;
        uint64_t a = over;
        while (a-- > 0)
            if ((int64_t)cnt[a] - (int64_t)a <= want) break;
        a_best = a;
        e1_best = over;
    }
    const size_t p = cnt[a_best], q = cnt[e1_best];
    uint64_t *keys = b->keys;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = shard ? rb_x2(h[i], s) : rb_mix(h[i], s);
        keys[cnt[bk__range64(x, nstarts)]++] = x;
    }
    if (b->dirty) memset(b->clo, 0, (size_t)b->cap_slots * 8);
    b->dirty = true;
    /* the stretch's rows [p, q) in four parts, then the rows before it and those after it in two each */
    size_t m = (q - p) / 4;
    size_t a1[4] = { p, p + m, p + 2 * m, p + 3 * m }, e1[4] = { p + m, p + 2 * m, p + 3 * m, q };
    int outcome = add_rows4(b, nstarts, a1, e1, ATTEMPT_OK);
    if (outcome == ATTEMPT_FAILED) return outcome;
    size_t a2[4] = { 0, p / 2, q, q + (n - q) / 2 }, e2[4] = { p / 2, p, q + (n - q) / 2, n };
    return add_rows4(b, nstarts, a2, e2, outcome);
}

/* The row kept at slot i without its first bit, and its right-hand side (zeros for a free slot); the
 * slot is cleared for the next attempt. */
BK_INLINE void slot_row(rb_build *b, uint64_t i, u128 *rest, uint32_t *r)
{
    uint64_t lo = b->clo[i], m = 0 - (lo & 1);
    *rest = (((u128)(b->chi[i] & m) << 64) | (lo & m)) >> 1;
    *r = (uint32_t)b->res[i] & (uint32_t)m;
    b->clo[i] = 0;
}

/* Back-substitution of geometry g into dst, last slot first, all columns at once: window[j] holds
 * column j's solution at the 128 slots from the current one on. A slot whose row is kept gets the
 * value that satisfies the row (its right-hand side XOR the dot product of the rest of the row with
 * the slots after it); a slot without a row is free and gets 0. At the first slot of a block the
 * windows are the block's columns. */
BK_INLINE void solve_body(rb_build *b, const rb_geom *g, u128 *dst, bool seg)
{
    const uint32_t hi = g->lo + 1;
    u128 window[MAX_COLS + 1];
    memset(window, 0, sizeof window);
    for (uint64_t blk = g->nblocks; blk-- > 0;) {
        for (uint64_t i = blk * W + W; i-- > blk * W;) {
            u128 rest;
            uint32_t r;
            slot_row(b, i, &rest, &r);
            for (uint32_t j = 0; j < hi; j++) {
                unsigned bit = ((r >> j) ^ rb_parity(rest & window[j])) & 1u;
                window[j] = (window[j] << 1) | bit;
            }
        }
        uint32_t cols;
        const uint64_t off = rb_block_at(g->lo, g->upper, blk, &cols);
        if (!seg) {
            memcpy(&dst[off], window, cols * sizeof(u128));
            continue;
        }
        /* body 2: the block's first 64 slots of every column, then its last 64 */
        uint64_t *d = (uint64_t *)(void *)(dst + off);
        for (uint32_t j = 0; j < cols; j++) {
            d[j] = (uint64_t)window[j];
            d[cols + j] = (uint64_t)(window[j] >> 64);
        }
    }
}

/* The same body twice: once for any x86-64 (parity by shifts), once with the POPCNT instruction (one
 * instruction per parity), chosen at run time by bk__cpu_usable() (BK_SIMD=scalar keeps the
 * portable one); both compute the same bits. */
static void solve_portable(rb_build *b, const rb_geom *g, u128 *dst, bool seg) { solve_body(b, g, dst, seg); }
#ifdef RB_HW_POPCNT
__attribute__((target("popcnt"))) static void solve_popcnt(rb_build *b, const rb_geom *g, u128 *dst, bool seg)
{
    solve_body(b, g, dst, seg);
}
#endif

bool bk__ribbon_portable = false;

#ifdef BK_X86
/* A block's solution as the vector paths leave it (slots 0-63 of column j in lo_w[j], 64-127 in
 * hi_w[j]) to its words: body 1 a 128-bit word per column, body 2 every column's first half, then
 * every column's second. */
static void store_block(const rb_geom *g, uint64_t blk, const uint64_t *lo_w, const uint64_t *hi_w, u128 *dst,
                        bool seg)
{
    uint32_t cols;
    const uint64_t off = rb_block_at(g->lo, g->upper, blk, &cols);
    if (!seg) {
        for (uint32_t j = 0; j < cols; j++) dst[off + j] = ((u128)hi_w[j] << 64) | lo_w[j];
        return;
    }
    uint64_t *d = (uint64_t *)(void *)(dst + off);
    for (uint32_t j = 0; j < cols; j++) {
        d[j] = lo_w[j];
        d[cols + j] = hi_w[j];
    }
}

/* The same back-substitution with AVX2: the windows of four columns a vector (their low and high 64
 * bits apart). A slot's new bits stay in the vectors: each lane's dot product folded to its parity by
 * a nibble table (vpshufb) and a byte sum (vpsadbw), XORed with the lane's bit of the right-hand side,
 * shifted in (no trip through a general register: the next slot waits on this one). The number of
 * vectors is a constant of each copy of the loop, so the windows stay in registers. Columns past the
 * last (up to the vector's fourth) are computed and never stored. */
RB_T_AVX2 BK_INLINE __attribute__((always_inline)) void solve_avx2_nv(rb_build *b, const rb_geom *g, u128 *dst,
                                                                      bool seg, const uint32_t nv)
{
    __m256i wl[(MAX_COLS + 3) / 4], wh[(MAX_COLS + 3) / 4];
    for (uint32_t v = 0; v < nv; v++) wl[v] = wh[v] = _mm256_setzero_si256();
    const __m256i nib = _mm256_set1_epi8(15), one = _mm256_set1_epi64x(1), zero = _mm256_setzero_si256(),
                  lane = _mm256_setr_epi64x(0, 1, 2, 3),
                  ptab = _mm256_setr_epi8(0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0,
                                          0, 1, 0, 1, 1, 0);
    uint64_t lo_w[4 * ((MAX_COLS + 3) / 4)], hi_w[4 * ((MAX_COLS + 3) / 4)];
    for (uint64_t blk = g->nblocks; blk-- > 0;) {
        for (uint64_t i = blk * W + W; i-- > blk * W;) {
            u128 rest;
            uint32_t r;
            slot_row(b, i, &rest, &r);
            const __m256i RL = _mm256_set1_epi64x((long long)(uint64_t)rest),
                          RH = _mm256_set1_epi64x((long long)(uint64_t)(rest >> 64)),
                          RB = _mm256_set1_epi64x((long long)r);
            for (uint32_t v = 0; v < nv; v++) {
                /* lane l's bit 4v + l of the right-hand side */
                __m256i rb = _mm256_srlv_epi64(RB, _mm256_add_epi64(lane, _mm256_set1_epi64x(4 * v)));
                __m256i x = _mm256_xor_si256(_mm256_and_si256(wl[v], RL), _mm256_and_si256(wh[v], RH));
                __m256i pn = _mm256_xor_si256(_mm256_shuffle_epi8(ptab, _mm256_and_si256(x, nib)),
                                              _mm256_shuffle_epi8(ptab, _mm256_and_si256(_mm256_srli_epi16(x, 4), nib)));
                __m256i nb = _mm256_and_si256(_mm256_xor_si256(_mm256_sad_epu8(pn, zero), rb), one);
                wh[v] = _mm256_or_si256(_mm256_slli_epi64(wh[v], 1), _mm256_srli_epi64(wl[v], 63));
                wl[v] = _mm256_or_si256(_mm256_slli_epi64(wl[v], 1), nb);
            }
        }
        for (uint32_t v = 0; v < nv; v++) {
            _mm256_storeu_si256((__m256i *)(void *)(lo_w + 4 * v), wl[v]);
            _mm256_storeu_si256((__m256i *)(void *)(hi_w + 4 * v), wh[v]);
        }
        store_block(g, blk, lo_w, hi_w, dst, seg);
    }
}

RB_T_AVX2 static void solve_avx2(rb_build *b, const rb_geom *g, u128 *dst, bool seg)
{
    switch ((g->lo + 1 + 3) / 4) {
    case 1: solve_avx2_nv(b, g, dst, seg, 1); break;
    case 2: solve_avx2_nv(b, g, dst, seg, 2); break;
    case 3: solve_avx2_nv(b, g, dst, seg, 3); break;
    case 4: solve_avx2_nv(b, g, dst, seg, 4); break;
    case 5: solve_avx2_nv(b, g, dst, seg, 5); break;
    case 6: solve_avx2_nv(b, g, dst, seg, 6); break;
    case 7: solve_avx2_nv(b, g, dst, seg, 7); break;
    default: solve_avx2_nv(b, g, dst, seg, 8); break;
    }
}

/* The same with AVX-512 (F and VPOPCNTDQ): eight columns a vector, a lane's parity by its popcount. */
RB_T_AVX512 BK_INLINE __attribute__((always_inline)) void solve_avx512_nv(rb_build *b, const rb_geom *g, u128 *dst,
                                                                          bool seg, const uint32_t nv)
{
    __m512i wl[(MAX_COLS + 7) / 8], wh[(MAX_COLS + 7) / 8];
    for (uint32_t v = 0; v < nv; v++) wl[v] = wh[v] = _mm512_setzero_si512();
    const __m512i one = _mm512_set1_epi64(1), lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    uint64_t lo_w[8 * ((MAX_COLS + 7) / 8)], hi_w[8 * ((MAX_COLS + 7) / 8)];
    for (uint64_t blk = g->nblocks; blk-- > 0;) {
        for (uint64_t i = blk * W + W; i-- > blk * W;) {
            u128 rest;
            uint32_t r;
            slot_row(b, i, &rest, &r);
            const __m512i RL = _mm512_set1_epi64((long long)(uint64_t)rest),
                          RH = _mm512_set1_epi64((long long)(uint64_t)(rest >> 64)),
                          RB = _mm512_set1_epi64((long long)r);
            for (uint32_t v = 0; v < nv; v++) {
                __m512i rb = _mm512_srlv_epi64(RB, _mm512_add_epi64(lane, _mm512_set1_epi64(8 * v)));
                __m512i x = _mm512_xor_si512(_mm512_and_si512(wl[v], RL), _mm512_and_si512(wh[v], RH));
                __m512i nb = _mm512_and_si512(_mm512_xor_si512(_mm512_popcnt_epi64(x), rb), one);
                wh[v] = _mm512_or_si512(_mm512_slli_epi64(wh[v], 1), _mm512_srli_epi64(wl[v], 63));
                wl[v] = _mm512_or_si512(_mm512_slli_epi64(wl[v], 1), nb);
            }
        }
        for (uint32_t v = 0; v < nv; v++) {
            _mm512_storeu_si512((void *)(lo_w + 8 * v), wl[v]);
            _mm512_storeu_si512((void *)(hi_w + 8 * v), wh[v]);
        }
        store_block(g, blk, lo_w, hi_w, dst, seg);
    }
}

RB_T_AVX512 static void solve_avx512(rb_build *b, const rb_geom *g, u128 *dst, bool seg)
{
    switch ((g->lo + 1 + 7) / 8) {
    case 1: solve_avx512_nv(b, g, dst, seg, 1); break;
    case 2: solve_avx512_nv(b, g, dst, seg, 2); break;
    case 3: solve_avx512_nv(b, g, dst, seg, 3); break;
    default: solve_avx512_nv(b, g, dst, seg, 4); break;
    }
}
#endif

static void build_solve(rb_build *b, const rb_geom *g, u128 *dst, bool seg)
{
    b->dirty = false; /* the back-substitution clears every slot it reads */
#ifdef BK_X86
    const unsigned cpu = bk__ribbon_portable ? 0 : bk__cpu_usable(),
                   need = BK_CPU_AVX2 | BK_CPU_BMI2 | BK_CPU_POPCNT,
                   need512 = need | BK_CPU_AVX512F | BK_CPU_AVX512POPCNT;
    if ((cpu & need512) == need512) {
        solve_avx512(b, g, dst, seg);
        return;
    }
    if ((cpu & need) == need) {
        solve_avx2(b, g, dst, seg);
        return;
    }
#endif
#ifdef RB_HW_POPCNT
    if (use_popcnt()) {
        solve_popcnt(b, g, dst, seg);
        return;
    }
#endif
    solve_portable(b, g, dst, seg);
}

/* Sort 64-bit values ascending (LSD radix, 8 passes through tmp, skipping digits equal everywhere),
 * then drop repeats; returns the distinct count. */
size_t bk__ribbon_sort_unique(uint64_t *v, uint64_t *tmp, size_t n)
{
    if (n < 2) return n;
    static const int D = 8;
    uint64_t *src = v, *dst = tmp;
    for (int d = 0; d < D; d++) {
        size_t hist[256] = { 0 };
        for (size_t i = 0; i < n; i++) hist[(src[i] >> (8 * d)) & 0xff]++;
        bool trivial = false;
        size_t sum = 0;
        for (int k = 0; k < 256; k++) {
            size_t c = hist[k];
            if (c == n) trivial = true;
            hist[k] = sum;
            sum += c;
        }
        if (trivial) continue;
        for (size_t i = 0; i < n; i++) dst[hist[(src[i] >> (8 * d)) & 0xff]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v) memcpy(v, src, n * sizeof *v);
    size_t j = 1;
    for (size_t i = 1; i < n; i++)
        if (v[i] != v[j - 1]) v[j++] = v[i];
    return j;
}

bk_status bk__ribbon_new_filter(const bk_allocator *a, uint64_t n, const rb_geom *g, uint64_t seed,
                                uint64_t mix_seed, bool alloc_words, bk_ribbon **out)
{
    bk_status s = bk__ribbon_geom_check(g);
    if (s != BK_OK) return s;
    const bk_allocator *al = bk__allocator(a);
    bk_ribbon *f = bk__calloc(al, 1, sizeof *f);
    if (!f) return BK_ENOMEM;
    f->alloc = al;
    f->nwords = words_of(g);
    if (alloc_words) {
        f->words = bk__calloc_aligned(al, (size_t)(f->nwords ? f->nwords : 1) * 16);
        if (!f->words) {
            bk__free(al, f);
            return BK_ENOMEM;
        }
        f->owns_words = true;
    }
    f->nblocks = g->nblocks;
    f->upper = g->upper;
    f->lo = g->lo;
    f->nstarts = (g->nblocks - 1) * W;
    f->mix_seed = mix_seed;
    f->seed = seed;
    f->u64_flip = bk__hash_u64_flip(seed);
    f->u64_fold = bk__hash_u64_fold(f->u64_flip);
    f->count = n;
    f->nslots = g->nblocks * W;
    f->fpr = n ? geom_fpr(g) : 0.0;
    bk__ribbon_pick_paths(f);
    *out = f;
    return BK_OK;
}

/* A filter's struct (n keys, lo, seed) and its table of nrec records of size bytes (body 2's shards,
 * body 3's layers; one record at least is allocated), without words. */
bk_status bk__ribbon_new_table(const bk_allocator *a, uint64_t n, uint32_t lo, uint64_t seed, uint64_t nrec,
                               size_t size, void **table, bk_ribbon **out)
{
    const bk_allocator *al = bk__allocator(a);
    if (nrec > SIZE_MAX / size) return BK_ETOOBIG;
    bk_ribbon *f = bk__calloc(al, 1, sizeof *f);
    if (!f) return BK_ENOMEM;
    f->alloc = al;
    if (!(*table = bk__calloc(al, nrec ? (size_t)nrec : 1, size))) {
        bk__free(al, f);
        return BK_ENOMEM;
    }
    f->lo = lo;
    f->seed = seed;
    f->u64_flip = bk__hash_u64_flip(seed);
    f->u64_fold = bk__hash_u64_fold(f->u64_flip);
    f->count = n;
    *out = f;
    return BK_OK;
}

/* A sharded filter's struct and shard table (S shards, lo), without words. */
bk_status bk__ribbon_new_sharded(const bk_allocator *a, uint64_t n, uint64_t S, uint32_t lo, uint64_t seed,
                                 bk_ribbon **out)
{
    void *t;
    const bk_status s = bk__ribbon_new_table(a, n, lo, seed, S, sizeof(rb_shard), &t, out);
    if (s != BK_OK) return s;
    (*out)->shards = t;
    (*out)->nshards = S;
    return BK_OK;
}

/* The FPR and slots of a sharded filter: a query key lands in each shard alike. */
void bk__ribbon_sharded_totals(bk_ribbon *f)
{
    double sum = 0;
    uint64_t slots = 0;
    for (uint64_t i = 0; i < f->nshards; i++) {
        rb_geom g = shard_geom_of(f, &f->shards[i]);
        sum += geom_fpr(&g);
        slots += g.nblocks * W;
    }
    f->fpr = sum / (double)f->nshards;
    f->nslots = slots;
}

/* The internal seed of attempt i: 0 (no remix) for the first, then a splitmix64 stream from the hash
 * seed, so that a build is a pure function of the hashes and the options. */
static uint64_t attempt_seed(uint64_t seed, uint32_t i)
{
    if (i == 0) return 0;
    return bk__splitmix64_at(seed, (uint64_t)i + 1);
}

/* Failed attempts between two growths of the array (or a shard) by 1/64. */
#define GROW_EVERY 4

enum { FROM_HASHES, FROM_BYTES, FROM_U64 };

/* build_sharded's answer when a shard met a vanished row before the input was deduplicated */
#define NEED_DEDUP ((bk_status)1000)

/* Words of f grown to hold at least need (the words so far kept), with 1/32 more for the shards'
 * growth (1/64 of a shard each time, rare), so the first allocation is normally the only one. */
static bk_status words_room(bk_ribbon *f, uint64_t *cap, uint64_t need)
{
    if (need <= *cap) return BK_OK;
    uint64_t ncap = need + need / 32;
    if (ncap > SIZE_MAX / 16) return BK_ETOOBIG;
    u128 *w = bk__calloc_aligned(f->alloc, (size_t)ncap * 16);
    if (!w) return BK_ENOMEM;
    if (f->words) memcpy(w, f->words, (size_t)*cap * 16);
    bk__free_aligned(f->alloc, f->words);
    f->words = w;
    f->owns_words = true;
    *cap = ncap;
    return BK_OK;
}

/*
 * Body 2: the n values h grouped by shard (range(h, S), a counting sort into b->sorted, in input
 * order within a shard), then each shard built as one system of its own keys, with its own attempts
 * and growth, and solved into the words after the shard before it.
 */
static bk_status build_sharded(rb_build *b, const uint64_t *h, size_t n, double p, uint32_t attempts,
                               const bk_ribbon_options *o, bool deduplicated, bk_ribbon **out)
{
    const uint64_t S = shards_for(n);
    if (S + 1 > SIZE_MAX / sizeof(size_t)) return BK_ETOOBIG;
    size_t *start = bk__calloc(b->al, (size_t)S + 1, sizeof(size_t));
    if (!start) return BK_ENOMEM;
    for (size_t i = 0; i < n; i++) start[bk__range64(h[i], S) + 1]++;
    size_t most = 0;
    uint64_t cap = 0;
    rb_geom g;
    for (uint64_t i = 1; i <= S; i++) {
        if (start[i] > most) most = start[i];
        shard_geom(start[i], p, &g);
        cap += words_of(&g);
        start[i] += start[i - 1];
    }
    {
        size_t *fill = bk__malloc(b->al, (size_t)S * sizeof(size_t));
        if (!fill) {
            bk__free(b->al, start);
            return BK_ENOMEM;
        }
        memcpy(fill, start, (size_t)S * sizeof(size_t));
        for (size_t i = 0; i < n; i++) b->sorted[fill[bk__range64(h[i], S)]++] = h[i];
        bk__free(b->al, fill);
    }
    bk_ribbon *f = NULL;
    bk_status s = bk__ribbon_new_sharded(o->allocator, n, S, bk__ribbon_lo_for(p), o->seed, &f);
    uint64_t have = 0, off = 0;
    if (s == BK_OK) s = words_room(f, &have, cap + TAIL_WORDS);
    for (uint64_t i = 0; i < S && s == BK_OK; i++) {
        const uint64_t *hs = b->sorted + start[i];
        size_t m = start[i + 1] - start[i];
        shard_geom(m, p, &b->g);
        uint32_t attempt = 0, grown = 0;
        uint64_t mix_seed;
        for (;;) {
            if ((s = build_room(b, m)) != BK_OK) break;
            mix_seed = attempt_seed(o->seed, attempt);
            int r = build_attempt(b, hs, m, mix_seed, true);
            if (r == ATTEMPT_REDUNDANT && !deduplicated) {
                s = NEED_DEDUP; /* the input may hold duplicates */
                break;
            }
            if (r != ATTEMPT_FAILED) break;
            if (++attempt >= attempts) {
                s = BK_EFULL;
                break;
            }
            if (++grown == GROW_EVERY) {
                grown = 0;
                b->g.nblocks += b->g.nblocks / 64 + 1;
                bk__ribbon_set_upper(&b->g, p);
            }
        }
        if (s != BK_OK) break;
        if (b->g.nblocks > UINT32_MAX || b->g.upper > UINT32_MAX) {
            s = BK_ETOOBIG;
            break;
        }
        /* TAIL_WORDS zero words after the last shard (body 2's tail) */
        if ((s = words_room(f, &have, off + words_of(&b->g) + TAIL_WORDS)) != BK_OK) break;
        build_solve(b, &b->g, f->words + off, true);
        f->shards[i] = (rb_shard){ off, mix_seed, (b->g.nblocks - 1) * W, b->g.upper };
        off += words_of(&b->g);
    }
    bk__free(b->al, start);
    if (s == BK_OK && off * 16 > BK_MAX_FILTER_BYTES) s = BK_ETOOBIG;
    if (s != BK_OK) {
        if (f) bk_ribbon_free(f);
        return s;
    }
    f->nwords = off;
    bk__ribbon_sharded_totals(f);
    bk__ribbon_pick_paths(f);
    *out = f;
    return BK_OK;
}

static bk_status build(const uint64_t *in, const void *const *keys, const size_t *lens, size_t n, int form,
                       const bk_ribbon_options *opts, bk_ribbon **out)
{
    bk_ribbon_options o;
    bk_status s = bk__options_read(&o, sizeof o, opts);
    if (s != BK_OK) return s;
    double p = o.fpr == 0.0 ? BK_RIBBON_DEFAULT_FPR : o.fpr;
    uint32_t attempts = o.max_attempts ? o.max_attempts : BK_RIBBON_DEFAULT_ATTEMPTS;
    if (bad_fpr(p)) return BK_EINVAL;
    if ((uint64_t)n > BK_RIBBON_MAX_KEYS) return BK_ETOOBIG;
    rb_build b;
    memset(&b, 0, sizeof b);
    b.al = bk__allocator(o.allocator);
    geom_for(n, p, &b.g);
    if ((s = bk__ribbon_geom_check(&b.g)) != BK_OK) return s;
    if (n == 0) return bk__ribbon_new_filter(o.allocator, 0, &b.g, o.seed, 0, true, out);
    if (n > SIZE_MAX / 8) return BK_ETOOBIG;

    const bool body3 = body3_for(n);
    if (!body3) {
        b.sorted = bk__calloc_aligned(b.al, n * 8);
        if (!b.sorted) return BK_ENOMEM;
    }
    const uint64_t *src = in;
    if (form != FROM_HASHES) {
        b.vals = bk__calloc_aligned(b.al, n * 8);
        if (!b.vals) {
            build_release(&b);
            return BK_ENOMEM;
        }
        if (form == FROM_BYTES)
            for (size_t i = 0; i < n; i++) b.vals[i] = bk__hash(keys[i], lens[i], o.seed);
        else
            for (size_t i = 0; i < n; i++) b.vals[i] = bk__hash_u64_keyed(in[i], bk__hash_u64_flip(o.seed));
        src = b.vals;
    }
    if (body3) {
        s = bk__ribbon3_build(src, n, p, attempts, &o, out);
        build_release(&b);
        return s;
    }
    bool deduplicated = false;
    uint32_t attempt = 0, grown = 0;
    for (;;) {
        int r;
        uint64_t mix_seed = 0;
        if (sharded_for(n)) {
            s = build_sharded(&b, src, n, p, attempts, &o, deduplicated, out);
            if (s != NEED_DEDUP) break;
            r = ATTEMPT_REDUNDANT;
        } else {
            if ((s = build_room(&b, n)) != BK_OK) break;
            mix_seed = attempt_seed(o.seed, attempt);
            r = build_attempt(&b, src, n, mix_seed, false);
        }
        if (r != ATTEMPT_OK && !deduplicated) {
            /* A vanished row: the input may hold duplicates. Keep the distinct values (sorted, which
             * changes no bit of the result: the solution does not depend on the order of the rows) and,
             * when there were repeats, start over sized for the distinct values. */
            deduplicated = true;
            if (!b.vals) {
                b.vals = bk__calloc_aligned(b.al, n * 8);
                if (!b.vals) {
                    s = BK_ENOMEM;
                    break;
                }
                memcpy(b.vals, src, n * 8);
                src = b.vals;
            }
            size_t distinct = bk__ribbon_sort_unique(b.vals, b.sorted, n);
            if (distinct < n || sharded_for(n)) {
                n = distinct;
                geom_for(n, p, &b.g);
                attempt = 0;
                grown = 0;
                continue;
            }
        }
        if (r != ATTEMPT_FAILED) {
            bk_ribbon *f;
            if ((s = bk__ribbon_new_filter(o.allocator, n, &b.g, o.seed, mix_seed, true, &f)) == BK_OK) {
                build_solve(&b, &b.g, f->words, false);
                *out = f;
            }
            break;
        }
        if (++attempt >= attempts) {
            s = BK_EFULL;
            break;
        }
        if (++grown == GROW_EVERY) {
            grown = 0;
            b.g.nblocks += b.g.nblocks / 64 + 1;
            bk__ribbon_set_upper(&b.g, p);
            if ((s = bk__ribbon_geom_check(&b.g)) != BK_OK) break;
        }
    }
    build_release(&b);
    return s;
}

bk_status bk_ribbon_build_hashes(const uint64_t *hashes, size_t n, const bk_ribbon_options *opts, bk_ribbon **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!hashes && n) return BK_EINVAL;
    return build(hashes, NULL, NULL, n, FROM_HASHES, opts, out);
}

bk_status bk_ribbon_build(const void *const *keys, const size_t *lens, size_t n, const bk_ribbon_options *opts,
                          bk_ribbon **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!bk__keys_valid(keys, lens, n)) return BK_EINVAL;
    return build(NULL, keys, lens, n, FROM_BYTES, opts, out);
}

bk_status bk_ribbon_build_u64(const uint64_t *keys, size_t n, const bk_ribbon_options *opts, bk_ribbon **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!keys && n) return BK_EINVAL;
    return build(keys, NULL, NULL, n, FROM_U64, opts, out);
}

void bk_ribbon_free(bk_ribbon *f)
{
    if (!f) return;
    if (f->owns_words) bk__free_aligned(f->alloc, f->words);
    bk__free(f->alloc, f->shards);
    bk__free(f->alloc, f->layers);
    bk__free(f->alloc, f);
}

bk_status bk_ribbon_clone(const bk_ribbon *f, bk_ribbon **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    bk_status s;
    if (f->layers) {
        bk_ribbon *c;
        if ((s = bk__ribbon3_new(f->alloc, f->count, f->nlayers, f->lo, f->seed, &c)) != BK_OK) return s;
        c->words = bk__calloc_aligned(f->alloc, (size_t)f->ndata * 8);
        if (!c->words) {
            bk_ribbon_free(c);
            return BK_ENOMEM;
        }
        c->owns_words = true;
        c->ndata = f->ndata;
        memcpy(c->words, f->words, (size_t)f->ndata * 8);
        memcpy(c->layers, f->layers, (size_t)f->nlayers * sizeof(rb3_layer));
        bk__ribbon3_totals(c);
        bk__ribbon3_pick_paths(c);
        *out = c;
        return BK_OK;
    }
    if (f->shards) {
        bk_ribbon *c;
        if ((s = bk__ribbon_new_sharded(f->alloc, f->count, f->nshards, f->lo, f->seed, &c)) != BK_OK) return s;
        uint64_t have = 0;
        if ((s = words_room(c, &have, f->nwords + TAIL_WORDS)) != BK_OK) {
            bk_ribbon_free(c);
            return s;
        }
        memcpy(c->shards, f->shards, (size_t)f->nshards * sizeof(rb_shard));
        memcpy(c->words, f->words, (size_t)f->nwords * 16);
        c->nwords = f->nwords;
        c->fpr = f->fpr;
        c->nslots = f->nslots;
        bk__ribbon_pick_paths(c);
        *out = c;
        return BK_OK;
    }
    rb_geom g = { f->nblocks, f->upper, f->lo };
    s = bk__ribbon_new_filter(f->alloc, f->count, &g, f->seed, f->mix_seed, true, out);
    if (s == BK_OK) memcpy((*out)->words, f->words, (size_t)f->nwords * 16);
    return s;
}
/* ---- statistics and accessors ---- */

double bk_ribbon_fpr(const bk_ribbon *f)
{
    return f->count == 0 ? 0.0 : f->fpr;
}

void bk_ribbon_stats(const bk_ribbon *f, bk_stats *out)
{
    memset(out, 0, sizeof *out);
    out->type = BK_TYPE_RIBBON;
    bool any_hi = f->upper < f->nblocks;
    for (uint64_t i = 0; i < f->nshards && !any_hi; i++) any_hi = f->shards[i].upper < f->shards[i].nstarts / W + 1;
    for (uint32_t i = 0; i < f->nlayers && !any_hi; i++) any_hi = f->layers[i].upper < f->layers[i].nblocks;
    out->k = f->lo + any_hi;
    out->capacity = f->count;
    out->count = f->count;
    out->bits = f->layers ? f->ndata * 64 : f->nwords * W;
    out->memory_bytes = f->layers ? f->ndata * 8 : f->nwords * 16;
    out->bits_per_key = (double)out->memory_bytes * 8.0 / (double)(f->count ? f->count : 1);
    out->fill_ratio = (double)f->count / (double)f->nslots;
    out->est_cardinality = (double)f->count;
    out->fpr_target = bk_ribbon_fpr(f);
    out->fpr_now = out->fpr_target;
    out->saturated = false;
    out->seed = f->seed;
}

uint64_t bk_ribbon_count(const bk_ribbon *f) { return f->count; }
uint64_t bk_ribbon_seed(const bk_ribbon *f) { return f->seed; }
const uint8_t *bk_ribbon_data(const bk_ribbon *f, size_t *len)
{
    if (len) *len = (size_t)(f->layers ? f->ndata * 8 : f->nwords * 16);
    return (const uint8_t *)f->words;
}
