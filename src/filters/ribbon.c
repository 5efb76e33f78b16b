/* Ribbon filter: standard Ribbon, width 128, interleaved solution with fractional bits per key. */
#include <math.h>
#include "filters/internal.h"
#include "core/simd.h"
#include "bloomkit/ribbon.h"
#include "filters/testing.h"

/*
 * Geometry. The slots are cut into blocks of 128 (the ribbon width). A key's row starts at a slot of
 * the first nblocks - 1 blocks and covers 128 slots, so it reaches at most into the next block. Blocks
 * [0, upper) store `lo` columns of the solution, blocks [upper, nblocks) lo + 1 (upper = nblocks: all
 * lo). Columns only grow from one block to the next, so a key starting in a block with c columns
 * finds c columns in the next block too and is checked on c bits.
 *
 * A block's columns are stored one after the other, each as one 128-bit word (bit t: slot t of the
 * block, as two little-endian 64-bit halves); block b's words start at word b * lo + max(0, b - upper).
 */
#define W 128
#define MAX_COLS 30 /* lo + 1 at BK_RIBBON_MIN_FPR */

__extension__ typedef unsigned __int128 u128;

typedef struct rb_geom {
    uint64_t nblocks;
    uint64_t upper;   /* first block with lo + 1 columns */
    uint32_t lo;
} rb_geom;

struct bk_ribbon {
    u128 *words;          /* the solution, interleaved */
    uint64_t nwords;
    uint64_t nblocks;
    uint64_t upper;
    uint64_t nstarts;     /* (nblocks - 1) * 128: the range of a row's first slot */
    uint64_t mix_seed;    /* the internal seed of the attempt that succeeded */
    uint64_t seed;        /* hash seed of bytes keys */
    uint64_t u64_flip;    /* bk__hash_u64_flip(seed) */
    uint64_t count;       /* distinct keys */
    uint32_t lo;
    bool owns_words;
    /* The one-key query and the batch loop for this CPU (pick_paths): portable or with POPCNT */
    bool (*has)(const struct bk_ribbon *f, uint64_t hash);
    size_t (*batch)(const struct bk_ribbon *f, const uint64_t *hashes, size_t n, uint8_t *results);
    const bk_allocator *alloc;
};

static void pick_paths(struct bk_ribbon *f);

static uint64_t words_of(const rb_geom *g) { return g->nblocks * g->lo + (g->nblocks - g->upper); }

/* lo = floor(log2(1/p)), computed with exact powers of two: 2^-(lo+1) < p <= 2^-lo. */
static uint32_t lo_for(double p)
{
    uint32_t lo = 0;
    while (lo < MAX_COLS && ldexp(1.0, -(int)(lo + 1)) >= p) lo++;
    return lo;
}

static bool bad_fpr(double p) { return !(p >= BK_RIBBON_MIN_FPR && p < 1.0); }

/* The FPR of a geometry: a key starts in each of the nblocks - 1 first blocks alike and is checked on
 * that block's columns. */
static double geom_fpr(const rb_geom *g)
{
    uint64_t starts = g->nblocks - 1, low = g->upper < starts ? g->upper : starts;
    return ((double)low * ldexp(1.0, -(int)g->lo) + (double)(starts - low) * ldexp(1.0, -(int)(g->lo + 1))) /
           (double)starts;
}

/* The blocks with lo columns: as many as keep the mixture at or below p. */
static void set_upper(rb_geom *g, double p)
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
    g->lo = lo_for(p);
    set_upper(g, p);
}

static bk_status geom_check(const rb_geom *g)
{
    if (g->nblocks > (UINT64_C(1) << 40)) return BK_ETOOBIG;
    uint64_t bytes = words_of(g) * 16;
    if (bytes > BK_MAX_FILTER_BYTES || bytes > SIZE_MAX / 2) return BK_ETOOBIG;
    return BK_OK;
}

bk_status bk_ribbon_size(uint64_t n, double p, bk_geometry *out)
{
    if (!out) return BK_EINVAL;
    memset(out, 0, sizeof *out);
    if (n == 0 || bad_fpr(p)) return BK_EINVAL;
    if (n > BK_RIBBON_MAX_KEYS) return BK_ETOOBIG;
    rb_geom g;
    geom_for(n, p, &g);
    bk_status s = geom_check(&g);
    if (s != BK_OK) return s;
    out->m = words_of(&g) * W;
    out->k = g.lo + (g.upper < g.nblocks);
    out->n = n;
    out->fpr = geom_fpr(&g);
    out->bits_per_key = (double)out->m / (double)n;
    return BK_OK;
}

/* The build's scratch for L slots: 16 bytes of row and 4 of result per slot, the sorted keys and a
 * copy of the hashes (8 n each), the block starts; and the filter. */
uint64_t bk_ribbon_build_memory(uint64_t n, double p)
{
    if (bad_fpr(p) || n > BK_RIBBON_MAX_KEYS) return 0;
    rb_geom g;
    geom_for(n, p, &g);
    if (geom_check(&g) != BK_OK) return 0;
    uint64_t slots = g.nblocks * W;
    return 16 * n + 20 * slots + (g.nblocks + 1) * sizeof(size_t) + words_of(&g) * 16 + 4 * 64 +
           sizeof(bk_ribbon);
}

/* ---- a key's row ---- */

/* x of hash h: attempt 0 takes the hash as it is (already well mixed); later attempts remix it with
 * their own seed, which gives every key a new row. */
BK_INLINE uint64_t rb_mix(uint64_t h, uint64_t mix_seed)
{
    return BK_LIKELY(mix_seed == 0) ? h : bk__remix(h + mix_seed);
}

#define COEF_MUL UINT64_C(0x9e3779b97f4a7c15)

/* The row of x: 128 coefficient bits (bit 0, the row's first slot, always 1) from a full mix of x;
 * its first slot from the high bits of x (multiply-shift); its fingerprint from the low 32 bits. */
BK_INLINE u128 rb_coef(uint64_t x)
{
    uint64_t a = bk__remix(x);
    return ((u128)(a * COEF_MUL) << 64) | (a | 1);
}
BK_INLINE uint32_t rb_fp(uint64_t x) { return (uint32_t)x; }

BK_INLINE unsigned rb_parity(u128 v) { return (unsigned)__builtin_parityll((uint64_t)v ^ (uint64_t)(v >> 64)); }

BK_INLINE unsigned rb_ctz(u128 v)
{
    uint64_t l = (uint64_t)v;
    return l ? (unsigned)__builtin_ctzll(l) : 64u + (unsigned)__builtin_ctzll((uint64_t)(v >> 64));
}

/* ---- construction ---- */

typedef struct rb_build {
    rb_geom g;
    uint64_t cap_slots;  /* slots the row arrays have room for */
    uint64_t cap_blocks; /* bucket entries - 1 */
    uint64_t *sorted;    /* the mixed keys, by starting block; the sort's scratch when deduplicating */
    uint64_t *vals;      /* the hashes, when they must be ours (byte keys, deduplication) */
    size_t *bucket;
    u128 *coef;          /* per slot: the row whose first slot it is (0: none) */
    uint32_t *res;       /* per slot: that row's right-hand side */
    const bk_allocator *al;
} rb_build;

static void build_release(rb_build *b)
{
    bk__free_aligned(b->al, b->sorted);
    bk__free_aligned(b->al, b->vals);
    bk__free(b->al, b->bucket);
    bk__free_aligned(b->al, b->coef);
    bk__free_aligned(b->al, b->res);
    b->sorted = b->vals = NULL;
    b->bucket = NULL;
    b->coef = NULL;
    b->res = NULL;
}

/* Room for the row arrays and buckets of geometry b->g (kept when it fits). */
static bk_status build_room(rb_build *b)
{
    uint64_t slots = b->g.nblocks * W;
    if (slots > SIZE_MAX / 16 || b->g.nblocks + 1 > SIZE_MAX / sizeof(size_t)) return BK_ETOOBIG;
    if (slots > b->cap_slots) {
        bk__free_aligned(b->al, b->coef);
        bk__free_aligned(b->al, b->res);
        b->coef = bk__calloc_aligned(b->al, (size_t)slots * 16);
        b->res = bk__calloc_aligned(b->al, (size_t)slots * 4);
        b->cap_slots = b->coef && b->res ? slots : 0;
        if (!b->coef || !b->res) return BK_ENOMEM;
    }
    if (b->g.nblocks > b->cap_blocks) {
        bk__free(b->al, b->bucket);
        b->bucket = bk__malloc(b->al, (size_t)(b->g.nblocks + 1) * sizeof(size_t));
        b->cap_blocks = b->bucket ? b->g.nblocks : 0;
        if (!b->bucket) return BK_ENOMEM;
    }
    return BK_OK;
}

/* Outcome of an attempt. */
enum { ATTEMPT_OK, ATTEMPT_FAILED, ATTEMPT_REDUNDANT };

/* keys ahead whose first slot the elimination loop prefetches */
#define INSERT_AHEAD 8

/*
 * One attempt with internal seed s over the n values h: sort the mixed keys by starting block (a
 * counting sort), then add each row to the band. A row meets the row already kept at its first slot:
 * subtract it (XOR of rows and right-hand sides) and move to the new first one-bit, until a free slot
 * takes it. A row that vanishes was a combination of rows before it: with the same right-hand side
 * it adds nothing (a duplicate always does this), with another the system has no solution.
 */
static int build_attempt(rb_build *b, const uint64_t *h, size_t n, uint64_t s)
{
    const uint64_t nb = b->g.nblocks, nstarts = (nb - 1) * W, slots = nb * W;
    size_t *bucket = b->bucket;
    memset(bucket, 0, (size_t)(nb + 1) * sizeof(size_t));
    for (size_t i = 0; i < n; i++) bucket[(bk__range64(rb_mix(h[i], s), nstarts) >> 7) + 1]++;
    for (uint64_t i = 1; i <= nb; i++) bucket[i] += bucket[i - 1];
    uint64_t *keys = b->sorted;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = rb_mix(h[i], s);
        keys[bucket[bk__range64(x, nstarts) >> 7]++] = x;
    }
    memset(b->coef, 0, (size_t)slots * 16);
    memset(b->res, 0, (size_t)slots * 4);
    u128 *coef = b->coef;
    uint32_t *res = b->res;
    int outcome = ATTEMPT_OK;
    for (size_t k = 0; k < n; k++) {
        if (BK_LIKELY(k + INSERT_AHEAD < n)) BK_PREFETCH_W(&coef[bk__range64(keys[k + INSERT_AHEAD], nstarts)]);
        uint64_t x = keys[k];
        uint64_t i = bk__range64(x, nstarts);
        u128 c = rb_coef(x);
        uint32_t r = rb_fp(x);
        for (;;) {
            u128 e = coef[i];
            if (e == 0) {
                coef[i] = c;
                res[i] = r;
                break;
            }
            c ^= e;
            r ^= res[i];
            if (c == 0) {
                if (r != 0) return ATTEMPT_FAILED;
                outcome = ATTEMPT_REDUNDANT;
                break;
            }
            unsigned t = rb_ctz(c);
            c >>= t;
            i += t;
        }
    }
    return outcome;
}

/* Back-substitution, last slot first, all columns at once: window[j] holds column j's solution at the
 * 128 slots from the current one on. A slot whose row is kept gets the value that satisfies the row
 * (its right-hand side XOR the dot product of the rest of the row with the slots after it); a slot
 * without a row is free and gets 0. At the first slot of a block the windows are the block's columns. */
BK_INLINE void solve_body(const rb_build *b, bk_ribbon *f)
{
    const uint32_t hi = f->lo + 1;
    u128 window[MAX_COLS + 1];
    memset(window, 0, sizeof window);
    for (uint64_t blk = f->nblocks; blk-- > 0;) {
        for (uint64_t i = blk * W + W; i-- > blk * W;) {
            u128 rest = b->coef[i] >> 1;
            uint32_t r = b->res[i];
            for (uint32_t j = 0; j < hi; j++) {
                unsigned bit = ((r >> j) ^ rb_parity(rest & window[j])) & 1u;
                window[j] = (window[j] << 1) | bit;
            }
        }
        uint32_t cols = f->lo + (blk >= f->upper);
        uint64_t off = blk * f->lo + (blk > f->upper ? blk - f->upper : 0);
        memcpy(&f->words[off], window, cols * sizeof(u128));
    }
}

/* The same body twice: once for any x86-64 (parity by shifts), once with the POPCNT instruction (one
 * instruction per parity), chosen at run time by bk__cpu_usable() (BK_SIMD=scalar keeps the
 * portable one); both compute the same bits. */
static void solve_portable(const rb_build *b, bk_ribbon *f) { solve_body(b, f); }
#if defined(__x86_64__) && defined(__GNUC__)
#  define RB_HW_POPCNT 1
__attribute__((target("popcnt"))) static void solve_popcnt(const rb_build *b, bk_ribbon *f) { solve_body(b, f); }
#endif

bool bk__ribbon_portable = false;

static bool use_popcnt(void)
{
#ifdef RB_HW_POPCNT
    return !bk__ribbon_portable && (bk__cpu_usable() & BK_CPU_POPCNT);
#else
    return false;
#endif
}

static void build_solve(const rb_build *b, bk_ribbon *f)
{
#ifdef RB_HW_POPCNT
    if (use_popcnt()) {
        solve_popcnt(b, f);
        return;
    }
#endif
    solve_portable(b, f);
}

/* Sort 64-bit values ascending (LSD radix, 8 passes through tmp, skipping digits equal everywhere),
 * then drop repeats; returns the distinct count. */
static size_t sort_unique(uint64_t *v, uint64_t *tmp, size_t n)
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

static bk_status new_filter(const bk_allocator *a, uint64_t n, const rb_geom *g, uint64_t seed, uint64_t mix_seed,
                            bool alloc_words, bk_ribbon **out)
{
    bk_status s = geom_check(g);
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
    f->count = n;
    pick_paths(f);
    *out = f;
    return BK_OK;
}

/* The internal seed of attempt i: 0 (no remix) for the first, then a splitmix64 stream from the hash
 * seed, so that a build is a pure function of the hashes and the options. */
static uint64_t attempt_seed(uint64_t seed, uint32_t i)
{
    if (i == 0) return 0;
    uint64_t z = seed + ((uint64_t)i + 1) * UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Failed attempts between two growths of the array by 1/64. */
#define GROW_EVERY 4

enum { FROM_HASHES, FROM_BYTES, FROM_U64 };

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
    if ((s = geom_check(&b.g)) != BK_OK) return s;
    if (n == 0) return new_filter(o.allocator, 0, &b.g, o.seed, 0, true, out);
    if (n > SIZE_MAX / 8) return BK_ETOOBIG;

    b.sorted = bk__calloc_aligned(b.al, n * 8);
    if (!b.sorted) return BK_ENOMEM;
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
    bool deduplicated = false;
    uint32_t attempt = 0, grown = 0;
    for (;;) {
        if ((s = build_room(&b)) != BK_OK) break;
        uint64_t mix_seed = attempt_seed(o.seed, attempt);
        int r = build_attempt(&b, src, n, mix_seed);
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
            size_t distinct = sort_unique(b.vals, b.sorted, n);
            if (distinct < n) {
                n = distinct;
                geom_for(n, p, &b.g);
                attempt = 0;
                grown = 0;
                continue;
            }
        }
        if (r != ATTEMPT_FAILED) {
            bk_ribbon *f;
            if ((s = new_filter(o.allocator, n, &b.g, o.seed, mix_seed, true, &f)) == BK_OK) {
                build_solve(&b, f);
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
            set_upper(&b.g, p);
            if ((s = geom_check(&b.g)) != BK_OK) break;
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
    bk__free(f->alloc, f);
}

bk_status bk_ribbon_clone(const bk_ribbon *f, bk_ribbon **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    rb_geom g = { f->nblocks, f->upper, f->lo };
    bk_status s = new_filter(f->alloc, f->count, &g, f->seed, f->mix_seed, true, out);
    if (s == BK_OK) memcpy((*out)->words, f->words, (size_t)f->nwords * 16);
    return s;
}

/* ---- queries ---- */

/* Where a key's check reads: its first slot's block and the offset in it. */
BK_INLINE const u128 *rb_block(const bk_ribbon *f, uint64_t blk, uint32_t *cols)
{
    *cols = f->lo + (blk >= f->upper);
    return f->words + blk * f->lo + (blk > f->upper ? blk - f->upper : 0);
}

/* The dot products of x's row with the solution's columns, compared with its fingerprint: block
 * blk's word j holds slots [blk * 128, +128) of column j, and the next block's word j the 128 after. */
BK_INLINE bool rb_match(const bk_ribbon *f, uint64_t x, uint64_t start)
{
    uint64_t blk = start >> 7;
    const uint32_t lo = f->lo;
    const bool extra = blk >= f->upper;
    const u128 *a = f->words + blk * lo + (blk > f->upper ? blk - f->upper : 0), *next = a + lo + extra;
    unsigned o = (unsigned)(start & 127);
    u128 c = rb_coef(x);
    u128 ca = c << o, cb = o ? c >> (128 - o) : 0;
    uint32_t fp = rb_fp(x), diff = 0;
    /* lo columns in a loop whose length is the filter's (well predicted), then the extra column of
     * an upper block without a branch: a lower block reads a word that exists (its next block's
     * first) and masks the answer away. */
    uint32_t j = 0;
    for (; j < lo; j++) diff |= (rb_parity((a[j] & ca) ^ (next[j] & cb)) ^ (fp >> j)) & 1u;
    const u128 *ax = extra ? a + lo : a, *nx = extra ? next + lo : next;
    diff |= (rb_parity((*ax & ca) ^ (*nx & cb)) ^ (fp >> lo)) & 1u & (0u - (uint32_t)extra);
    return diff == 0;
}

BK_INLINE bool has_body(const bk_ribbon *f, uint64_t hash)
{
    uint64_t x = rb_mix(hash, f->mix_seed);
    return rb_match(f, x, bk__range64(x, f->nstarts));
}

#define RB_BATCH 32

BK_INLINE size_t batch_body(const bk_ribbon *f, const uint64_t *hashes, size_t n, uint8_t *results)
{
    size_t present = 0;
    uint64_t x[RB_BATCH], st[RB_BATCH];
    for (size_t i = 0; i < n; i += RB_BATCH) {
        size_t e = i + RB_BATCH < n ? i + RB_BATCH : n;
        for (size_t j = i; j < e; j++) {
            size_t k = j - i;
            x[k] = rb_mix(hashes[j], f->mix_seed);
            st[k] = bk__range64(x[k], f->nstarts);
            uint32_t cols;
            const uint8_t *p = (const uint8_t *)rb_block(f, st[k] >> 7, &cols);
            /* the key reads 2 * cols words from p on: its first and last line, and one between */
            size_t len = (size_t)cols * 32;
            BK_PREFETCH(p);
            BK_PREFETCH(p + len / 2);
            BK_PREFETCH(p + (len ? len - 1 : 0));
        }
        for (size_t j = i; j < e; j++) {
            size_t k = j - i;
            bool r = rb_match(f, x[k], st[k]);
            if (results) results[j] = r;
            present += r;
        }
    }
    return present;
}

static bool has_portable(const bk_ribbon *f, uint64_t hash) { return has_body(f, hash); }
static size_t batch_portable(const bk_ribbon *f, const uint64_t *h, size_t n, uint8_t *r) { return batch_body(f, h, n, r); }
#ifdef RB_HW_POPCNT
__attribute__((target("popcnt"))) static bool has_popcnt(const bk_ribbon *f, uint64_t hash) { return has_body(f, hash); }
__attribute__((target("popcnt"))) static size_t batch_popcnt(const bk_ribbon *f, const uint64_t *h, size_t n, uint8_t *r)
{
    return batch_body(f, h, n, r);
}
#endif
static bool has_none(const bk_ribbon *f, uint64_t hash)
{
    (void)f;
    (void)hash;
    return false;
}
static size_t batch_none(const bk_ribbon *f, const uint64_t *h, size_t n, uint8_t *r)
{
    (void)f;
    (void)h;
    if (r) memset(r, 0, n);
    return 0;
}

/* The empty filter answers false without looking; the others by the CPU's best parity. */
static void pick_paths(bk_ribbon *f)
{
    if (f->count == 0) {
        f->has = has_none;
        f->batch = batch_none;
        return;
    }
    f->has = has_portable;
    f->batch = batch_portable;
#ifdef RB_HW_POPCNT
    if (use_popcnt()) {
        f->has = has_popcnt;
        f->batch = batch_popcnt;
    }
#endif
}

bool bk_ribbon_contains_hash(const bk_ribbon *f, uint64_t hash) { return f->has(f, hash); }

bool bk_ribbon_contains(const bk_ribbon *f, const void *key, size_t len)
{
    return f->has(f, bk__hash(key, len, f->seed));
}

bool bk_ribbon_contains_u64(const bk_ribbon *f, uint64_t key)
{
    return f->has(f, bk__hash_u64_keyed(key, f->u64_flip));
}

/* The batch query of the path chosen when the filter was made (bk__contains_many's chunk function). */
static size_t query_chunk(const void *f, const uint64_t *h, size_t n, uint8_t *results)
{
    const bk_ribbon *r = f;
    return r->batch(r, h, n, results);
}

bk_status bk_ribbon_contains_hashes(const bk_ribbon *f, const uint64_t *hashes, size_t n, uint8_t *results,
                                    size_t *hits)
{
    if (!f || (!hashes && n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, query_chunk(f, hashes, n, results));
}

bk_status bk_ribbon_contains_many(const bk_ribbon *f, const void *const *keys, const size_t *lens, size_t n,
                                  uint8_t *results, size_t *hits)
{
    if (!f) return bk__batch_refused(hits);
    return bk__contains_many(f, f->seed, keys, lens, n, results, hits, query_chunk);
}

/* ---- statistics and accessors ---- */

double bk_ribbon_fpr(const bk_ribbon *f)
{
    if (f->count == 0) return 0.0;
    rb_geom g = { f->nblocks, f->upper, f->lo };
    return geom_fpr(&g);
}

void bk_ribbon_stats(const bk_ribbon *f, bk_stats *out)
{
    memset(out, 0, sizeof *out);
    out->type = BK_TYPE_RIBBON;
    out->k = f->lo + (f->upper < f->nblocks);
    out->capacity = f->count;
    out->count = f->count;
    out->bits = f->nwords * W;
    out->memory_bytes = f->nwords * 16;
    out->bits_per_key = (double)out->memory_bytes * 8.0 / (double)(f->count ? f->count : 1);
    out->fill_ratio = (double)f->count / (double)(f->nblocks * W);
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
    if (len) *len = (size_t)(f->nwords * 16);
    return (const uint8_t *)f->words;
}

/* ---- serialization (body layout in docs/FORMAT.md) ----
 * offset 0  u32 ribbon width (128), u32 lo (columns of the first blocks), u64 blocks, u64 upper (first
 *           block with lo + 1 columns; = blocks when none), u64 count (distinct keys), u64 mix_seed
 *           (internal seed of the construction)                                          (40 bytes)
 * then zero padding to 64, then the words: (blocks * lo + blocks - upper) * 16 bytes. */

static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_ribbon *f = vf;
    bk_status s;
    if ((s = bk__w_u32(w, W)) || (s = bk__w_u32(w, f->lo)) || (s = bk__w_u64(w, f->nblocks)) ||
        (s = bk__w_u64(w, f->upper)) || (s = bk__w_u64(w, f->count)) || (s = bk__w_u64(w, f->mix_seed)) ||
        (s = bk__w_align(w, 64)))
        return s;
    return bk__w_bytes(w, f->words, (size_t)f->nwords * 16);
}

static bk_status v_decode(bk_reader *r, void **out)
{
    uint32_t width, lo;
    uint64_t nblocks, upper, count, mix_seed;
    bk_status s;
    *out = NULL;
    if ((s = bk__r_u32(r, &width)) || (s = bk__r_u32(r, &lo)) || (s = bk__r_u64(r, &nblocks)) ||
        (s = bk__r_u64(r, &upper)) || (s = bk__r_u64(r, &count)) || (s = bk__r_u64(r, &mix_seed)) ||
        (s = bk__r_align(r, 64)))
        return s;
    /* lo + 1 columns at most MAX_COLS; at least two blocks (a row starts in one and may reach the
     * next); upper a block index or the count; some column somewhere; no more keys than slots. */
    if (width != W || lo >= MAX_COLS || nblocks < 2 || nblocks > (UINT64_C(1) << 40) || upper > nblocks ||
        (lo == 0 && upper == nblocks) || count > nblocks * W)
        return BK_ECORRUPT;
    rb_geom g = { nblocks, upper, lo };
    if ((s = geom_check(&g)) != BK_OK) return s;
    uint64_t bytes = words_of(&g) * 16;
    const uint8_t *data;
    if ((s = bk__r_array_begin(r, bytes, &data))) return s;
    bk_ribbon *f;
    if ((s = new_filter(r->alloc, count, &g, r->seed, mix_seed, !r->borrow, &f))) return s;
    uint64_t *words = (uint64_t *)(void *)f->words;
    if ((s = bk__r_array_end(r, bytes, data, &words))) {
        bk_ribbon_free(f);
        return s;
    }
    f->words = (u128 *)(void *)words;
    /* The empty filter's solution is zero: a file claiming no keys with anything else is not ours. */
    if (count == 0 && !bk__tail_zero(words, bytes / 8, 0)) {
        bk_ribbon_free(f);
        return BK_ECORRUPT;
    }
    *out = f;
    return BK_OK;
}

BK__VT_ADAPTERS(ribbon)

/* A static set: no add, remove, merge or clear (NULL entries: BK_ENOTSUP through bk_filter). */
BK_HIDDEN const bk_vtable bk__ribbon_vtable = {
    .type = BK_TYPE_RIBBON,
    BK__VT_ENTRIES,
};
