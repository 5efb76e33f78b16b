/* Binary fuse filter: 3-wise, segmented, 8- or 16-bit fingerprints, built once from all keys. */
#include <math.h>
#include <sys/mman.h>
#include "filters/internal.h"
#include "core/simd.h"
#include "bloomkit/fuse.h"
#include "bloomkit/reader.h"

/*
 * Geometry (Graf & Lemire 2022, arity 3). With n distinct keys:
 *   segment length  2^floor(ln n / ln 3.33 + 2.25), at most 2^18 (at least 4);
 *   size factor     max(1.125, 0.875 + 0.25 ln(10^6) / ln n)  cells per key (more for small n);
 *   segments        ceil(n * factor / segment length) - 2, at least 1;
 *   cells L         (segments + 2) * segment length.
 * A key's cells: c0 anywhere in the first `segments` segments (multiply-shift of its mixed hash),
 * c1 and c2 in the next two segments at offsets taken from other bits of the same hash. The segment
 * window keeps every key's cells close together, which is what makes peeling succeed at 1.125 cells
 * per key where an unsegmented 3-wise table needs 1.23.
 */
#define SEGMENT_LOG_MAX 18
#define SEGMENT_LOG_MIN 2

typedef struct fuse_geom {
    uint64_t seglen;     /* a power of two */
    uint64_t segcount;   /* segments where c0 may fall */
    uint64_t cells;      /* L = (segcount + 2) * seglen */
} fuse_geom;

struct bk_fuse {
    /* The hot header, first: the one-key uint64 query (the public call jumps through it) and every
     * field it reads, 56 bytes together. */
    /* the one-key query on a uint64 key for this filter's width, mix and emptiness, its hash computed
     * in the same function (pick_has_u64) */
    bool (*has_u64)(const bk_fuse *f, uint64_t key);
    uint8_t *cells;      /* L fingerprints of fp_bits bits (16-bit: host order in memory) */
    uint64_t span;       /* segcount * seglen: the range of c0 */
    uint64_t seglen;
    uint64_t segmask;
    uint64_t u64_fold;   /* bk__hash_u64_fold(bk__hash_u64_flip(seed)): the uint64 calls' seed part (bk__hash_u64_folded), computed once */
    uint64_t mix_seed;   /* the internal seed of the attempt that succeeded */
    uint64_t ncells;     /* L */
    uint64_t segcount;
    uint64_t seed;       /* hash seed of bytes keys */
    uint64_t count;      /* distinct keys */
    uint32_t fp_bits;
    uint32_t empty;      /* 1 for the empty filter: OR-ed into the batch loops' match test, so every query fails */
    bool owns_cells;
    /* The one-key query for this filter's width, mix and emptiness (pick_has): no test of them per call */
    bool (*has)(const bk_fuse *f, uint64_t hash);
    const bk_allocator *alloc; /* everything this filter owns is allocated with it */
};

static bool (*pick_has(const bk_fuse *f))(const bk_fuse *, uint64_t);
static bool (*pick_has_u64(const bk_fuse *f))(const bk_fuse *, uint64_t);

static void geom_for(uint64_t n, fuse_geom *g)
{
    int e = SEGMENT_LOG_MIN;
    if (n > 1) {
        double l = log((double)n);
        e = (int)floor(l / log(3.33) + 2.25);
        if (e > SEGMENT_LOG_MAX) e = SEGMENT_LOG_MAX;
        if (e < SEGMENT_LOG_MIN) e = SEGMENT_LOG_MIN;
    }
    g->seglen = UINT64_C(1) << e;
    uint64_t want = 0; /* cells wanted: n * size factor */
    if (n > 1) {
        double factor = 0.875 + 0.25 * log(1000000.0) / log((double)n);
        if (factor < 1.125) factor = 1.125;
        want = (uint64_t)llround((double)n * factor);
    }
    uint64_t segs = (want + g->seglen - 1) / g->seglen;
    g->segcount = segs > 2 ? segs - 2 : 1;
    g->cells = (g->segcount + 2) * g->seglen;
}

static bool bad_bits(uint32_t b) { return b != 8 && b != 16; }

bk_status bk_fuse_size(uint64_t n, uint32_t fingerprint_bits, bk_geometry *out)
{
    if (!out) return BK_EINVAL;
    memset(out, 0, sizeof *out);
    if (n == 0 || bad_bits(fingerprint_bits)) return BK_EINVAL;
    if (n > BK_FUSE_MAX_KEYS) return BK_ETOOBIG;
    fuse_geom g;
    geom_for(n, &g);
    if (g.cells > UINT32_MAX || g.cells * (fingerprint_bits / 8) > BK_MAX_FILTER_BYTES) return BK_ETOOBIG;
    out->m = g.cells * fingerprint_bits;
    out->k = fingerprint_bits;
    out->n = n;
    out->fpr = ldexp(1.0, -(int)fingerprint_bits);
    out->bits_per_key = (double)out->m / (double)n;
    return BK_OK;
}

bk_status bk_fuse_size_for_fpr(uint64_t n, double p, bk_geometry *out)
{
    if (!out) return BK_EINVAL;
    memset(out, 0, sizeof *out);
    if (!(p > 0.0 && p < 1.0)) return BK_EINVAL;
    if (p >= ldexp(1.0, -8)) return bk_fuse_size(n, 8, out);
    if (p >= ldexp(1.0, -16)) return bk_fuse_size(n, 16, out);
    return BK_EINVAL;
}

/* Peak bytes of a build of n distinct values: the bucketed keys (8 n), the queue (4 L), the cells'
 * XORs and counts (9 L), the bucket starts, and the finished filter (b L). */
uint64_t bk_fuse_build_memory(uint64_t n, uint32_t fingerprint_bits)
{
    if (bad_bits(fingerprint_bits) || n > BK_FUSE_MAX_KEYS) return 0;
    fuse_geom g;
    geom_for(n, &g);
    if (g.cells > UINT32_MAX) return 0;
    return 8 * n + 4 * (g.cells + 2) + 9 * g.cells + (g.segcount + 1) * sizeof(size_t) +
           g.cells * (fingerprint_bits / 8) + 5 * 64 + sizeof(bk_fuse);
}

/* ---- hashing a key to its cells and fingerprint ---- */

/* x of hash h. mix_seed 0 (a construction's first attempt) takes the hash as it is: h is already a
 * well-mixed 64-bit hash (XXH3, or the caller's), so a query runs one mix, not two in series; an
 * attempt that fails remixes with its own nonzero seed, which moves every key to new cells. */
BK_INLINE uint64_t fuse_mix(uint64_t h, uint64_t mix_seed)
{
    return BK_LIKELY(mix_seed == 0) ? h : bk__remix(h + mix_seed);
}

BK_INLINE void fuse_cells(uint64_t x, uint64_t span, uint64_t seglen, uint64_t mask, uint64_t *c0,
                          uint64_t *c1, uint64_t *c2)
{
    uint64_t a = bk__range64(x, span);
    *c0 = a;
    *c1 = (a + seglen) ^ ((x >> 18) & mask);
    *c2 = (a + 2 * seglen) ^ (x & mask);
}

/* The fingerprint: low bits of x folded with its upper half. */
BK_INLINE uint64_t fuse_fp(uint64_t x) { return x ^ (x >> 32); }

/* ---- construction ---- */

typedef struct fuse_build {
    fuse_geom g;
    uint64_t *keys;      /* the mixed keys, bucketed by the segment of c0 */
    uint32_t *queue;     /* L + 2 cells: the peeling queue, and the assigned cells in peeling order */
    uint64_t *xors;      /* per cell: XOR of the mixed hashes of the keys using it */
    uint8_t *counts;     /* per cell: how many keys use it */
    size_t *bucket;      /* segcount + 1 bucket starts */
    const bk_allocator *al;        /* the options' allocator: the build's arrays and the filter */
} fuse_build;

/*
 * Construction scratch: zeroed, and for large arrays aligned to 2 MiB with the whole array advised for
 * transparent huge pages (bk__calloc_aligned only advises the aligned interior). Construction touches
 * every page of ~24 bytes per key once, at random within a window: with 4 KiB pages the page faults
 * and TLB misses cost more than the work itself (several times more on some virtual machines). The
 * padding is never touched, so it costs address space, not memory. Freed with bk__free_aligned (the
 * allocator's pointer is kept 16 bytes below the returned one and the byte just below is 0, the
 * convention base.h gives for larger alignments).
 */
#define HUGE_PAGE ((size_t)2 << 20)

static void *scratch_alloc(const bk_allocator *al, size_t size)
{
#ifdef MADV_HUGEPAGE
    if (size >= HUGE_PAGE / 2 && size <= SIZE_MAX / 2) {
        size_t span = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        uint8_t *raw = bk__calloc(al, 1, span + HUGE_PAGE + 16);
        if (!raw) return NULL;
        uintptr_t a = ((uintptr_t)raw + 16 + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        memcpy((void *)(a - 16), &raw, sizeof raw);
        ((uint8_t *)a)[-1] = 0;
        (void)madvise((void *)a, span, MADV_HUGEPAGE);
        return (void *)a;
    }
#endif
    return bk__calloc_aligned(al, size);
}

static void build_release(fuse_build *b)
{
    bk__free_aligned(b->al, b->keys);
    bk__free_aligned(b->al, b->queue);
    bk__free_aligned(b->al, b->xors);
    bk__free_aligned(b->al, b->counts);
    bk__free(b->al, b->bucket);
    memset(b, 0, sizeof *b);
}

static bk_status build_alloc(fuse_build *b, uint64_t n, const bk_allocator *al)
{
    memset(b, 0, sizeof *b);
    b->al = al;
    geom_for(n, &b->g);
    if (b->g.cells > UINT32_MAX) return BK_ETOOBIG;
    if (n > SIZE_MAX / 8 || b->g.cells * 8 > SIZE_MAX || b->g.segcount + 1 > SIZE_MAX / sizeof(size_t))
        return BK_ETOOBIG;
    b->keys = scratch_alloc(b->al, (size_t)n * 8);
    b->queue = scratch_alloc(b->al, (size_t)(b->g.cells + 2) * 4);
    b->xors = scratch_alloc(b->al, (size_t)b->g.cells * 8);
    b->counts = scratch_alloc(b->al, (size_t)b->g.cells);
    b->bucket = bk__malloc(b->al, (size_t)(b->g.segcount + 1) * sizeof(size_t));
    if (!b->keys || !b->queue || !b->xors || !b->counts || !b->bucket) {
        build_release(b);
        return BK_ENOMEM;
    }
    return BK_OK;
}

/* keys ahead whose cells the counting loop prefetches */
#define COUNT_AHEAD 16

/*
 * One attempt with internal seed `s` over n distinct values h (which may be b->xors itself). On
 * success the cells the keys were assigned are left in queue[0..n), in peeling order, and true is
 * returned. False: peeling stalled (or a count overflowed, which only duplicates make likely); the
 * bucketed keys are then still in b->keys.
 */
static bool build_attempt(fuse_build *b, const uint64_t *h, size_t n, uint64_t s, bool dirty)
{
    const uint64_t seglen = b->g.seglen, mask = seglen - 1, segcount = b->g.segcount;
    const uint64_t span = segcount * seglen, L = b->g.cells;
    uint64_t *xors = b->xors;
    uint8_t *counts = b->counts;

    /* 1. Bucket the mixed hashes by the segment of c0 (a counting sort): the counting pass below
     * then walks the cells in a sliding window of three segments instead of all over memory. */
    size_t *bucket = b->bucket;
    memset(bucket, 0, (size_t)(segcount + 1) * sizeof(size_t));
    for (size_t i = 0; i < n; i++) bucket[bk__range64(fuse_mix(h[i], s), segcount) + 1]++;
    for (uint64_t i = 1; i <= segcount; i++) bucket[i] += bucket[i - 1];
    uint64_t *keys = b->keys;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = fuse_mix(h[i], s);
        keys[bucket[bk__range64(x, segcount)]++] = x;
    }
    /* now the cells can be zeroed: after a failed attempt, or when the values were kept in them */
    if (dirty) {
        memset(xors, 0, (size_t)L * 8);
        memset(counts, 0, (size_t)L);
    } else if (h == xors) {
        memset(xors, 0, n * 8);
    }

    /*
     * 2 and 3, segment by segment: count, then peel what is final.
     *
     * Count: every cell gets the number of keys using it and the XOR of their mixed hashes.
     * Peel: a cell used by exactly one key gives that key (its hash is the cell's XOR) the cell; the
     * key leaves its other two cells, which may drop to one key in turn.
     *
     * Keys are bucketed by the segment of c0, and a key of bucket s only touches segments s, s+1 and
     * s+2. So once bucket s is counted, segments 0..s are final and can be peeled (the counts and
     * XORs of later segments only change by additions and removals, which commute): the whole
     * construction moves through memory as a window of a few segments that stays in cache.
     * Peeling takes cells first in, first out, so that consecutive steps do not wait for each
     * other's loads; only final cells are queued (a cell is queued when its segment becomes final
     * with one key, or when it drops to one key while final: at most once), so L + 2 entries suffice
     * for the queue's speculative writes. The assigned cells go to the queue's consumed front (one per
     * cell taken).
     */
    uint32_t *queue = b->queue;
    size_t r = 0, w = 0, top = 0;
    uint64_t done = 0; /* cells [0, done) are final */
    unsigned overflow = 0;
    for (uint64_t seg = 0; seg < segcount; seg++) {
        for (size_t i = seg ? bucket[seg - 1] : 0; i < bucket[seg]; i++) {
            if (BK_LIKELY(i + COUNT_AHEAD < n)) {
                uint64_t y = keys[i + COUNT_AHEAD], d0, d1, d2;
                fuse_cells(y, span, seglen, mask, &d0, &d1, &d2);
                BK_PREFETCH_W(&xors[d0]);
                BK_PREFETCH_W(&xors[d1]);
                BK_PREFETCH_W(&xors[d2]);
            }
            uint64_t x = keys[i], c0, c1, c2;
            fuse_cells(x, span, seglen, mask, &c0, &c1, &c2);
            overflow |= ++counts[c0] == 0;
            overflow |= ++counts[c1] == 0;
            overflow |= ++counts[c2] == 0;
            xors[c0] ^= x;
            xors[c1] ^= x;
            xors[c2] ^= x;
        }
        if (overflow) return false; /* before a wrapped count could be peeled */
        uint64_t final = seg + 1 == segcount ? L : (seg + 1) * seglen;
        for (uint64_t c = done; c < final; c++) {
            queue[w] = (uint32_t)c;
            w += counts[c] == 1;
        }
        done = final;
        while (r < w) {
            uint64_t c = queue[r++];
            if (counts[c] != 1) continue; /* its key left through another cell */
            uint64_t x = xors[c], c0, c1, c2;
            fuse_cells(x, span, seglen, mask, &c0, &c1, &c2);
            uint64_t o1 = c == c0 ? c1 : c0;
            uint64_t o2 = c == c2 ? c1 : c2;
            xors[o1] ^= x;
            xors[o2] ^= x;
            queue[w] = (uint32_t)o1;
            w += (--counts[o1] == 1) & (o1 < final);
            queue[w] = (uint32_t)o2;
            w += (--counts[o2] == 1) & (o2 < final);
            counts[c] = 0;
            queue[top++] = (uint32_t)c;
        }
    }
    return top == n;
}

/* keys ahead whose XOR cell the assignment loop prefetches */
#define ASSIGN_AHEAD 16

/* Assign fingerprints in reverse peeling order. When a key was peeled, its cell was used by no key
 * still unpeeled, so no key assigned after it (peeled before it) writes any of its three cells; its
 * own cell is still zero when its turn comes, and gets the value that makes the XOR of the key's
 * three cells its fingerprint. */
static void build_assign(const fuse_build *b, size_t n, uint32_t fp_bits, uint8_t *cells)
{
    const uint64_t seglen = b->g.seglen, mask = seglen - 1, span = b->g.segcount * seglen;
    const uint32_t *queue = b->queue;
    if (fp_bits == 8) {
        uint8_t *f = cells;
        for (size_t j = n; j-- > 0;) {
            if (BK_LIKELY(j >= ASSIGN_AHEAD)) BK_PREFETCH(&b->xors[queue[j - ASSIGN_AHEAD]]);
            uint64_t c = queue[j], x = b->xors[c], c0, c1, c2;
            fuse_cells(x, span, seglen, mask, &c0, &c1, &c2);
            f[c] = (uint8_t)(fuse_fp(x) ^ f[c0] ^ f[c1] ^ f[c2]);
        }
    } else {
        uint16_t *f = (uint16_t *)(void *)cells;
        for (size_t j = n; j-- > 0;) {
            if (BK_LIKELY(j >= ASSIGN_AHEAD)) BK_PREFETCH(&b->xors[queue[j - ASSIGN_AHEAD]]);
            uint64_t c = queue[j], x = b->xors[c], c0, c1, c2;
            fuse_cells(x, span, seglen, mask, &c0, &c1, &c2);
            f[c] = (uint16_t)(fuse_fp(x) ^ f[c0] ^ f[c1] ^ f[c2]);
        }
    }
}

/* Sort 64-bit values ascending: LSD radix, 8 passes of 8 bits through tmp (same length), skipping
 * digits that are equal in every value. */
static void radix_sort64(uint64_t *v, uint64_t *tmp, size_t n)
{
    size_t hist[8][256];
    memset(hist, 0, sizeof hist);
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++) hist[d][(v[i] >> (8 * d)) & 0xff]++;
    uint64_t *src = v, *dst = tmp;
    for (int d = 0; d < 8; d++) {
        size_t sum = 0;
        bool trivial = false;
        for (int k = 0; k < 256; k++) {
            size_t c = hist[d][k];
            if (c == n) trivial = true;
            hist[d][k] = sum;
            sum += c;
        }
        if (trivial) continue;
        for (size_t i = 0; i < n; i++) dst[hist[d][(src[i] >> (8 * d)) & 0xff]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v) memcpy(v, src, n * sizeof *v);
}

static size_t sort_unique(uint64_t *v, uint64_t *tmp, size_t n)
{
    if (n < 2) return n;
    radix_sort64(v, tmp, n);
    size_t j = 1;
    for (size_t i = 1; i < n; i++)
        if (v[i] != v[j - 1]) v[j++] = v[i];
    return j;
}

static bk_status new_filter(const bk_allocator *a, uint64_t n, const fuse_geom *g, uint32_t fp_bits, uint64_t seed, uint64_t mix_seed,
                            bool alloc_cells, bk_fuse **out)
{
    uint64_t bytes = g->cells * (fp_bits / 8);
    if (bytes > BK_MAX_FILTER_BYTES || bytes > SIZE_MAX / 2) return BK_ETOOBIG;
    const bk_allocator *al = bk__allocator(a);
    bk_fuse *f = bk__calloc(al, 1, sizeof *f);
    if (!f) return BK_ENOMEM;
    f->alloc = al;
    if (alloc_cells) {
        f->cells = bk__calloc_aligned(f->alloc, (size_t)bytes);
        if (!f->cells) {
            bk__free(f->alloc, f);
            return BK_ENOMEM;
        }
        f->owns_cells = true;
    }
    f->ncells = g->cells;
    f->seglen = g->seglen;
    f->segmask = g->seglen - 1;
    f->segcount = g->segcount;
    f->span = g->segcount * g->seglen;
    f->mix_seed = mix_seed;
    f->seed = seed;
    f->u64_fold = bk__hash_u64_fold(bk__hash_u64_flip(seed));
    f->count = n;
    f->fp_bits = fp_bits;
    f->empty = n == 0;
    f->has = pick_has(f);
    f->has_u64 = pick_has_u64(f);
    *out = f;
    return BK_OK;
}

/* The internal seed of attempt i: 0 (no remix) for the first, then a splitmix64 stream starting from
 * the hash seed, so that a build is a pure function of the set of hashes and the options. */
static uint64_t attempt_seed(uint64_t seed, uint32_t i)
{
    if (i == 0) return 0;
    return bk__splitmix64_at(seed, (uint64_t)i + 1);
}

/* Inverse of fuse_mix: the value h with fuse_mix(h, mix_seed) = x (fmix64 is a bijection: undo each
 * xorshift, which is its own inverse for shifts of 32 or more, and multiply by the inverses mod 2^64
 * of its two constants). Lets a failed attempt recover the values from the bucketed keys. */
BK_INLINE uint64_t fuse_unmix(uint64_t x, uint64_t mix_seed)
{
    if (mix_seed == 0) return x;
    x ^= x >> 33;
    x *= UINT64_C(0x9cb4b2f8129337db); /* 0xc4ceb9fe1a85ec53^-1 */
    x ^= x >> 33;
    x *= UINT64_C(0x4f74430c22a54005); /* 0xff51afd7ed558ccd^-1 */
    x ^= x >> 33;
    return x - mix_seed;
}

/* Resize the build for n values (fewer than before) that sit in b->xors[0..n): the keys buffer is kept
 * (it is large enough) and holds the values while the other arrays are reallocated. */
static bk_status build_shrink(fuse_build *b, size_t n)
{
    memcpy(b->keys, b->xors, n * sizeof *b->keys);
    bk__free_aligned(b->al, b->xors);
    bk__free_aligned(b->al, b->queue);
    bk__free_aligned(b->al, b->counts);
    bk__free(b->al, b->bucket);
    uint64_t *keys = b->keys;
    const bk_allocator *al = b->al;
    memset(b, 0, sizeof *b);
    b->al = al;
    geom_for(n, &b->g);
    b->keys = keys;
    b->xors = scratch_alloc(b->al, (size_t)b->g.cells * 8);
    b->queue = scratch_alloc(b->al, (size_t)(b->g.cells + 2) * 4);
    b->counts = scratch_alloc(b->al, (size_t)b->g.cells);
    b->bucket = bk__malloc(b->al, (size_t)(b->g.segcount + 1) * sizeof(size_t));
    if (!b->xors || !b->queue || !b->counts || !b->bucket) {
        build_release(b);
        return BK_ENOMEM;
    }
    memcpy(b->xors, keys, n * sizeof *keys);
    return BK_OK;
}

/*
 * The builder, from the caller's values `in` (pre-hashed form) or from byte keys (hashed here). Byte
 * keys are hashed straight into the cells' XOR array (it has room: L >= n, and bucketing moves them
 * out before counting), so both forms need the same memory. After a failed attempt the values are
 * recovered there from the bucketed keys, where they can be sorted and deduplicated in place.
 */
static bk_status build(const uint64_t *in, const void *const *keys, const size_t *lens, size_t n,
                       const bk_fuse_options *opts, bk_fuse **out)
{
    bk_fuse_options o;
    bk_status os_ = bk__options_read(&o, sizeof o, opts);
    if (os_ != BK_OK) return os_;
    const bk_allocator *al_ = bk__allocator(o.allocator);
    uint32_t fp_bits = o.fingerprint_bits ? o.fingerprint_bits : 8;
    uint32_t attempts = o.max_attempts ? o.max_attempts : BK_FUSE_DEFAULT_ATTEMPTS;
    if (bad_bits(fp_bits)) return BK_EINVAL;
    if ((uint64_t)n > BK_FUSE_MAX_KEYS) return BK_ETOOBIG;
    if (n == 0) {
        fuse_geom g0;
        geom_for(0, &g0);
        return new_filter(o.allocator, 0, &g0, fp_bits, o.seed, attempt_seed(o.seed, 0), true, out);
    }

    fuse_build b;
    bk_status s = build_alloc(&b, n, al_);
    if (s != BK_OK) return s;
    const uint64_t *src = in;
    if (keys) {
        for (size_t i = 0; i < n; i++) b.xors[i] = bk__hash(keys[i], lens[i], o.seed);
        src = b.xors;
    }
    bool deduplicated = false, dirty = false;
    uint32_t attempt = 0;
    for (;;) {
        uint64_t mix_seed = attempt_seed(o.seed, attempt);
        if (build_attempt(&b, src, n, mix_seed, dirty)) {
            bk_fuse *f;
            s = new_filter(o.allocator, n, &b.g, fp_bits, o.seed, mix_seed, true, &f);
            if (s == BK_OK) {
                build_assign(&b, n, fp_bits, f->cells);
                *out = f;
            }
            break;
        }
        dirty = true;
        /* the values again, in the XOR array, ours to reorder */
        if (src == b.xors)
            for (size_t i = 0; i < n; i++) b.xors[i] = fuse_unmix(b.keys[i], mix_seed);
        else
            memcpy(b.xors, src, n * sizeof *b.xors);
        src = b.xors;
        if (!deduplicated) {
            /* The first failure: the input may hold duplicates (they can never be peeled). Sort the
             * values (the keys buffer is the scratch), drop repeats, and if any were found start over,
             * sized for the distinct values, from the first internal seed: the result equals a build
             * from the distinct values alone. */
            deduplicated = true;
            size_t distinct = sort_unique(b.xors, b.keys, n);
            if (distinct < n) {
                n = distinct;
                if ((s = build_shrink(&b, n)) != BK_OK) break;
                src = b.xors;
                dirty = false;
                attempt = 0;
                continue;
            }
        }
        if (++attempt >= attempts) {
            s = BK_EFULL;
            break;
        }
    }
    build_release(&b);
    return s;
}

bk_status bk_fuse_build_hashes(const uint64_t *hashes, size_t n, const bk_fuse_options *opts, bk_fuse **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!hashes && n) return BK_EINVAL;
    return build(hashes, NULL, NULL, n, opts, out);
}

bk_status bk_fuse_build(const void *const *keys, const size_t *lens, size_t n, const bk_fuse_options *opts,
                        bk_fuse **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!bk__keys_valid(keys, lens, n)) return BK_EINVAL;
    return build(NULL, keys, lens, n, opts, out);
}

void bk_fuse_free(bk_fuse *f)
{
    if (!f) return;
    if (f->owns_cells) bk__free_aligned(f->alloc, f->cells);
    bk__free(f->alloc, f);
}

bk_status bk_fuse_clone(const bk_fuse *f, bk_fuse **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    fuse_geom g = { f->seglen, f->segcount, f->ncells };
    bk_status s = new_filter(f->alloc, f->count, &g, f->fp_bits, f->seed, f->mix_seed, true, out);
    if (s == BK_OK) memcpy((*out)->cells, f->cells, (size_t)(f->ncells * (f->fp_bits / 8)));
    return s;
}

/* ---- queries ---- */

BK_INLINE bool match8(const bk_fuse *f, uint64_t x, uint64_t c0, uint64_t c1, uint64_t c2)
{
    const uint8_t *v = f->cells;
    return (((uint8_t)(fuse_fp(x) ^ v[c0] ^ v[c1] ^ v[c2])) | f->empty) == 0;
}

BK_INLINE bool match16(const bk_fuse *f, uint64_t x, uint64_t c0, uint64_t c1, uint64_t c2)
{
    const uint16_t *v = (const uint16_t *)(const void *)f->cells;
    return (((uint16_t)(fuse_fp(x) ^ v[c0] ^ v[c1] ^ v[c2])) | f->empty) == 0;
}

/* The one-key queries, one per fingerprint width, with and without the remix of the hash (mix_seed 0,
 * the common case, skips it), and one for the empty filter: pick_has chooses when the filter is made,
 * so a call tests none of them (the empty filter's flag is 0 in the others). */
/* fuse_cells and fuse_fp with rotations where they shift: the same cells (segmask < 2^46 keeps the
 * rotated-in high bits out) and the same low 16 bits of the fingerprint, and with BMI2 a rotation
 * (rorx) needs no copy of x first. */
BK_INLINE uint64_t rotr64(uint64_t x, unsigned r) { return (x >> r) | (x << (64 - r)); }
BK_INLINE bool has_body(const bk_fuse *f, uint64_t hash, uint32_t bits, bool mix, bool mulx)
{
    uint64_t x = mix ? bk__remix(hash + f->mix_seed) : hash;
    uint64_t c0 = mulx ? bk__range64_mulx(x, f->span) : bk__range64(x, f->span), mask = f->segmask, fp = x ^ rotr64(x, 32);
    uint64_t seglen = f->seglen, c02;
#if defined(__x86_64__) && defined(__GNUC__)
    /* c0 + 2 seglen as one lea after the multiply (GCC adds seglen to c0 + seglen: the third cell's
     * address one step later) */
    __asm__("lea (%1,%2,2), %0" : "=r"(c02) : "r"(c0), "r"(seglen));
#else
    c02 = c0 + 2 * seglen;
#endif
    uint64_t c1 = (c0 + seglen) ^ (rotr64(x, 18) & mask), c2 = c02 ^ (x & mask);
    if (bits == 8) {
        const uint8_t *v = f->cells;
        return (uint8_t)(fp ^ v[c0] ^ v[c1] ^ v[c2]) == 0;
    }
    const uint16_t *v = (const uint16_t *)(const void *)f->cells;
    return (uint16_t)(fp ^ v[c0] ^ v[c1] ^ v[c2]) == 0;
}
static bool has8(const bk_fuse *f, uint64_t hash) { return has_body(f, hash, 8, false, false); }
static bool has16(const bk_fuse *f, uint64_t hash) { return has_body(f, hash, 16, false, false); }
static bool has8_mix(const bk_fuse *f, uint64_t hash) { return has_body(f, hash, 8, true, false); }
static bool has16_mix(const bk_fuse *f, uint64_t hash) { return has_body(f, hash, 16, true, false); }
static bool has_none(const bk_fuse *f, uint64_t hash)
{
    (void)f;
    (void)hash;
    return false;
}

static bool (*pick_has(const bk_fuse *f))(const bk_fuse *, uint64_t)
{
    if (f->empty) return has_none;
    if (f->mix_seed) return f->fp_bits == 8 ? has8_mix : has16_mix;
    return f->fp_bits == 8 ? has8 : has16;
}

/* The uint64 forms: the hash and the query in one function, one per state as above, and once more
 * built for BMI2 on x86 (rorx: the hash's rotations without the copies between them), so a one-key
 * call is one indirect jump to a function that does the rest with nothing to move between them. */
#define FUSE_HAS_U64(name, attr, bits, mix, mulx)                                                  \
    attr static bool name(const bk_fuse *f, uint64_t key)                                         \
    {                                                                                              \
        return has_body(f, bk__hash_u64_folded1(key, f->u64_fold), bits, mix, mulx);                \
    }
FUSE_HAS_U64(has8_u64, , 8, false, false)
FUSE_HAS_U64(has16_u64, , 16, false, false)
FUSE_HAS_U64(has8_mix_u64, , 8, true, false)
FUSE_HAS_U64(has16_mix_u64, , 16, true, false)
#if defined(__x86_64__) && defined(__GNUC__)
#  define FUSE_HAS_BMI2 1
#  define FUSE_T_BMI2 __attribute__((target("bmi,bmi2")))
/* with BMI2 also the first cell by mulx (bk__range64_mulx) */
FUSE_HAS_U64(has8_u64b, FUSE_T_BMI2, 8, false, true)
FUSE_HAS_U64(has16_u64b, FUSE_T_BMI2, 16, false, true)
FUSE_HAS_U64(has8_mix_u64b, FUSE_T_BMI2, 8, true, true)
FUSE_HAS_U64(has16_mix_u64b, FUSE_T_BMI2, 16, true, true)
#endif
#undef FUSE_HAS_U64

static bool (*pick_has_u64(const bk_fuse *f))(const bk_fuse *, uint64_t)
{
    if (f->empty) return has_none;
#ifdef FUSE_HAS_BMI2
    if (bk__cpu_usable() & BK_CPU_BMI2) {
        if (f->mix_seed) return f->fp_bits == 8 ? has8_mix_u64b : has16_mix_u64b;
        return f->fp_bits == 8 ? has8_u64b : has16_u64b;
    }
#endif
    if (f->mix_seed) return f->fp_bits == 8 ? has8_mix_u64 : has16_mix_u64;
    return f->fp_bits == 8 ? has8_u64 : has16_u64;
}

bool bk_fuse_contains_hash(const bk_fuse *f, uint64_t hash) { return f->has(f, hash); }

/* Keys of other lengths than 8 in a function of their own: the 8-byte path then needs no stack
 * frame (the general hash's call does). */
static __attribute__((noinline)) bool contains_any_len(const bk_fuse *f, const void *key, size_t len)
{
    return f->has(f, bk__hash(key, len, f->seed));
}

bool bk_fuse_contains(const bk_fuse *f, const void *key, size_t len)
{
    if (BK_LIKELY(len == 8)) {
        uint64_t k;
        memcpy(&k, key, 8);
        return f->has_u64(f, k);
    }
    return contains_any_len(f, key, len);
}

bool bk_fuse_contains_u64(const bk_fuse *f, uint64_t key) { return f->has_u64(f, key); }

#define FUSE_BATCH 32

/* The batch loop, written once: hash and prefetch a group of keys, then test them. Both widths inline
 * their own copy (bits is a constant at each call), so the width is tested once per call, not per key. */
BK_INLINE size_t contains_loop(const bk_fuse *f, const uint64_t *hashes, size_t n, uint8_t *results,
                               uint32_t bits)
{
    const uint8_t *cells = f->cells;
    const size_t width = bits / 8;
    uint64_t x[FUSE_BATCH], c0[FUSE_BATCH], c1[FUSE_BATCH], c2[FUSE_BATCH];
    size_t present = 0;
    for (size_t i = 0; i < n; i += FUSE_BATCH) {
        size_t e = i + FUSE_BATCH < n ? i + FUSE_BATCH : n;
        for (size_t j = i; j < e; j++) {
            size_t k = j - i;
            x[k] = fuse_mix(hashes[j], f->mix_seed);
            fuse_cells(x[k], f->span, f->seglen, f->segmask, &c0[k], &c1[k], &c2[k]);
            BK_PREFETCH(cells + c0[k] * width);
            BK_PREFETCH(cells + c1[k] * width);
            BK_PREFETCH(cells + c2[k] * width);
        }
        for (size_t j = i; j < e; j++) {
            size_t k = j - i;
            bool r = bits == 8 ? match8(f, x[k], c0[k], c1[k], c2[k]) : match16(f, x[k], c0[k], c1[k], c2[k]);
            if (results) results[j] = r;
            present += r;
        }
    }
    return present;
}

static size_t contains_hashes(const bk_fuse *f, const uint64_t *hashes, size_t n, uint8_t *results)
{
    if (f->fp_bits == 8) return contains_loop(f, hashes, n, results, 8);
    return contains_loop(f, hashes, n, results, 16);
}

static size_t query_chunk(const void *f, const uint64_t *h, size_t n, uint8_t *results)
{
    return contains_hashes(f, h, n, results);
}

bk_status bk_fuse_contains_hashes(const bk_fuse *f, const uint64_t *hashes, size_t n, uint8_t *results,
                                  size_t *hits)
{
    if (!f || (!hashes && n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, contains_hashes(f, hashes, n, results));
}

bk_status bk_fuse_contains_many(const bk_fuse *f, const void *const *keys, const size_t *lens, size_t n,
                                uint8_t *results, size_t *hits)
{
    if (!f) return bk__batch_refused(hits);
    return bk__contains_many(f, f->seed, keys, lens, n, results, hits, query_chunk);
}

/* ---- statistics and accessors ---- */

bk_status bk_fuse_get_reader(const bk_fuse *f, bk_fuse_reader *out)
{
    if (!f || !out) return BK_EINVAL;
    out->cells = f->cells;
    out->span = f->span;
    out->seglen = f->seglen;
    out->segmask = f->segmask;
    out->mix_seed = f->mix_seed;
    out->seed = f->seed;
    out->flip = bk__hash_u64_flip(f->seed);
    out->fp_bits = f->fp_bits;
    out->empty = f->empty;
    return BK_OK;
}

void bk_fuse_stats(const bk_fuse *f, bk_stats *out)
{
    memset(out, 0, sizeof *out);
    out->type = BK_TYPE_FUSE;
    out->k = f->fp_bits;
    out->capacity = f->count;
    out->count = f->count;
    out->bits = f->ncells * f->fp_bits;
    out->memory_bytes = f->ncells * (f->fp_bits / 8);
    out->bits_per_key = (double)out->memory_bytes * 8.0 / (double)(f->count ? f->count : 1);
    out->fill_ratio = (double)f->count / (double)f->ncells;
    out->est_cardinality = (double)f->count;
    out->fpr_target = ldexp(1.0, -(int)f->fp_bits);
    out->fpr_now = f->count ? out->fpr_target : 0.0;
    out->saturated = false;
    out->seed = f->seed;
}

uint64_t bk_fuse_count(const bk_fuse *f) { return f->count; }
uint32_t bk_fuse_fingerprint_bits(const bk_fuse *f) { return f->fp_bits; }
uint64_t bk_fuse_seed(const bk_fuse *f) { return f->seed; }
const uint8_t *bk_fuse_data(const bk_fuse *f, size_t *len)
{
    if (len) *len = (size_t)(f->ncells * (f->fp_bits / 8));
    return f->cells;
}

/* ---- serialization (body layout in docs/FORMAT.md) ----
 * offset 0  u32 fingerprint_bits (8|16), u32 segment_length, u64 segment_count, u64 cells,
 *           u64 count (distinct keys), u64 mix_seed (internal seed of the construction)   (40 bytes)
 * then zero padding to 64, then the cells: cells * fingerprint_bits / 8 bytes (16-bit little-endian).
 * The geometry is stored, not recomputed from count, so a file never depends on the reader's libm. */

static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_fuse *f = vf;
    bk_status s;
    if ((s = bk__w_u32(w, f->fp_bits)) || (s = bk__w_u32(w, (uint32_t)f->seglen)) ||
        (s = bk__w_u64(w, f->segcount)) || (s = bk__w_u64(w, f->ncells)) || (s = bk__w_u64(w, f->count)) ||
        (s = bk__w_u64(w, f->mix_seed)) || (s = bk__w_align(w, 64)))
        return s;
    return bk__w_bytes(w, f->cells, (size_t)(f->ncells * (f->fp_bits / 8)));
}

static bk_status v_decode(bk_reader *r, void **out)
{
    uint32_t bits, seglen;
    uint64_t segcount, ncells, count, mix_seed;
    bk_status s;
    *out = NULL;
    if ((s = bk__r_u32(r, &bits)) || (s = bk__r_u32(r, &seglen)) || (s = bk__r_u64(r, &segcount)) ||
        (s = bk__r_u64(r, &ncells)) || (s = bk__r_u64(r, &count)) || (s = bk__r_u64(r, &mix_seed)) ||
        (s = bk__r_align(r, 64)))
        return s;
    /* Every cell a query can reach is below (segcount + 2) * seglen: require exactly that many. */
    if (bad_bits(bits) || seglen < (1u << SEGMENT_LOG_MIN) || seglen > (1u << SEGMENT_LOG_MAX) ||
        (seglen & (seglen - 1)) || segcount == 0 || segcount > UINT32_MAX / seglen ||
        ncells != (segcount + 2) * seglen || ncells > UINT32_MAX || count > ncells)
        return BK_ECORRUPT;
    uint64_t bytes = ncells * (bits / 8);
    if (bytes > SIZE_MAX) return BK_ETOOBIG;
    const uint8_t *data;
    if ((s = bk__r_take(r, (size_t)bytes, &data))) return s;
    /* The empty filter has one geometry and no fingerprints: anything else claiming zero keys would
     * answer "absent" for keys it holds. */
    if (count == 0) {
        if (seglen != (1u << SEGMENT_LOG_MIN) || segcount != 1) return BK_ECORRUPT;
        for (uint64_t i = 0; i < bytes; i++)
            if (data[i]) return BK_ECORRUPT;
    }
    fuse_geom g = { seglen, segcount, ncells };
    bool borrow = r->borrow;
    bk_fuse *f;
    if ((s = new_filter(r->alloc, count, &g, bits, r->seed, mix_seed, !borrow, &f))) return s;
    if (borrow) {
        f->cells = (uint8_t *)(uintptr_t)data;
    } else {
        memcpy(f->cells, data, (size_t)bytes);
    }
    *out = f;
    return BK_OK;
}

BK__VT_ADAPTERS(fuse)

/* A static set: no add, remove, merge or clear (NULL entries: BK_ENOTSUP through bk_filter). */
BK_HIDDEN const bk_vtable bk__fuse_vtable = {
    .type = BK_TYPE_FUSE,
    BK__VT_ENTRIES,
};
