/* Scalable Bloom filter: a chain of sub-filters, each larger and tighter than the one before. The
 * sub-filters are blocked (1024-bit blocks of two cache lines; the default) or classic Bloom filters. */
#include <math.h>
#include <pthread.h>
#include "internal.h"
#include "blocked1024.h"
#include "simd.h"
#include "bloomkit/blocked.h"
#include "bloomkit/bloom.h"
#include "bloomkit/scalable.h"

/* One sub-filter. Everything but `fill` (and the bits) is written once, before the layer is
 * published. A classic layer wraps a bk_bloom; a blocked layer owns (or borrows) its words itself. */
typedef struct layer {
    bk_bloom *bf;          /* classic layers; NULL in a blocked chain */
    uint64_t *words;       /* the bit array (bf's for a classic layer), 64-byte aligned */
    uint64_t m;            /* bits */
    uint64_t blocks;       /* blocked: m / 1024 */
    uint32_t k;
    bool owns_words;       /* blocked: false when the words are borrowed from a mapping */
    uint64_t capacity;
    double error;          /* exact FPR of (m, k) at capacity */
    uint64_t bytes;
    uint64_t fill;         /* keys claimed so far (atomic); the layer is full at capacity. A blocked
                            * layer's count is its fill (a union sets it to the fill-based estimate). */
} layer;

/*
 * Blocked layers: block bk__range64(h, blocks) of 16 64-bit words (two cache lines); the k probes are
 * bits (x * B1024_SALT[i]) >> 22 of the block, x the low 32 bits of h (bit b is bit b & 63 of word
 * b >> 6). The in-block pattern depends on h alone, so a query builds it once for the whole chain and
 * tests each layer with one masked compare of its block. The constants are part of the file format.
 */
#define B1024_WORDS 16
static const uint32_t B1024_SALT[BK_BLOCKED_MAX_K] = {
    0xc2c063ffu, 0x239eed25u, 0x958507adu, 0xf768064fu, 0x0e9a8df5u, 0x55113dc3u, 0xe0c67745u, 0x5966eb45u,
    0xfcb042d9u, 0x4ca82985u, 0x1720800fu, 0xb9c48cb1u, 0xa9f18631u, 0xd6c93f01u, 0xbc4d13ddu, 0xa83c546du,
};

BK_INLINE uint32_t b1024_bit(uint32_t x, uint32_t i) { return (x * B1024_SALT[i]) >> 22; }
BK_INLINE uint64_t *b1024_block(const layer *L, uint64_t h)
{
    return L->words + (bk__range64(h, L->blocks) << 4);
}

struct bk_scalable {
    /* layers[0 .. n-1] are valid; n is stored with release after layers[n-1] is complete and loaded
     * with acquire by every reader, so a reader never sees a half-built layer. Layers are only freed
     * by [excl] calls (clear, free). */
    layer *layers[BK_SCALABLE_MAX_FILTERS];
    uint32_t n;
    uint32_t growth;       /* capacity ratio between sub-filters; 0: non-scaling (one sub-filter) */
    uint64_t capacity0;
    double p;
    double r;
    uint64_t max_bytes;
    uint64_t bytes;        /* arrays of all layers; written under grow_lock, read relaxed */
    uint64_t seed;
    bool classic;          /* classic layers (BK_SCALABLE_CLASSIC); else blocked */
    int simd;              /* blocked chains: the query path (a bk_simd: scalar, AVX2 or AVX-512) */
    pthread_mutex_t grow_lock;
};

/* ---- sizing ---- */

static bool bad_p(double p) { return !(p > 0.0 && p < 1.0); }

/* opts NULL, or any field left 0, means that field's default: a zeroed struct is the defaults. */
static bk_status check_options(uint64_t capacity, double p, const bk_scalable_options *o)
{
    if (capacity == 0 || bad_p(p)) return BK_EINVAL;
    if (o->growth < 1 || o->growth > BK_SCALABLE_MAX_GROWTH) return BK_EINVAL;
    if (o->flags & ~(uint32_t)(BK_SCALABLE_NONSCALING | BK_SCALABLE_CLASSIC)) return BK_EINVAL;
    if (!(o->tightening > 0.0 && o->tightening < 1.0)) return BK_EINVAL;
    if (o->max_bytes > BK_MAX_FILTER_BYTES) return BK_EINVAL;
    return BK_OK;
}

/* The growth the chain is built with: 0 for a non-scaling filter. */
static uint32_t chain_growth(const bk_scalable_options *o)
{
    return (o->flags & BK_SCALABLE_NONSCALING) ? 0 : o->growth;
}

static uint64_t effective_max(uint64_t max_bytes) { return max_bytes ? max_bytes : BK_SCALABLE_DEFAULT_MAX_BYTES; }

/* capacity_i = capacity0 * growth^i and p_i = p0 r^i; growth 0 (non-scaling): only i = 0, sized for
 * (capacity0, p); classic or blocked sizing. BK_ETOOBIG when out of range. */
static bk_status layer_geometry(uint64_t capacity0, double p, uint32_t growth, double r, bool classic, uint32_t i,
                                bk_geometry *g, uint64_t *bytes)
{
    if (i >= BK_SCALABLE_MAX_FILTERS || (growth == 0 && i > 0)) return BK_ETOOBIG;
    uint64_t cap = capacity0;
    for (uint32_t j = 0; j < i; j++)
        if (bk__mul_overflow(cap, growth, &cap)) return BK_ETOOBIG;
    double err = growth == 0 ? p : p * (1.0 - r) * pow(r, (double)i);
    if (!(err > 0.0)) return BK_ETOOBIG; /* underflow: tighter than a double can say */
    bk_status s = classic ? bk_bloom_size(cap, err, g) : bk__blocked1024_size(cap, err, g);
    if (s == BK_EINVAL) return BK_ETOOBIG;
    if (s != BK_OK) return s;
    uint64_t b = bk__bits_to_bytes64(g->m);
    if (b == 0) return BK_ETOOBIG;
    if (bytes) *bytes = b;
    return BK_OK;
}

bk_scalable_options bk_scalable_default_options(void)
{
    bk_scalable_options o = BK_SCALABLE_OPTIONS_INIT;
    o.growth = BK_SCALABLE_DEFAULT_GROWTH;
    o.tightening = BK_SCALABLE_DEFAULT_TIGHTENING;
    return o;
}

/* opts NULL, or any field left 0, means that field's default: a zeroed struct is the defaults. */
static bk_status resolve_options(const bk_scalable_options *opts, bk_scalable_options *o)
{
    bk_status s = bk__options_read(o, sizeof *o, opts);
    if (s != BK_OK) return s;
    bk_scalable_options d = bk_scalable_default_options();
    if (o->growth == 0) o->growth = d.growth;
    if (o->tightening == 0.0) o->tightening = d.tightening;
    return BK_OK;
}

bk_status bk_scalable_layer_size(uint64_t capacity, double p, const bk_scalable_options *opts, uint32_t i,
                                 bk_geometry *out)
{
    if (!out) return BK_EINVAL;
    bk_scalable_options o;
    bk_status s = resolve_options(opts, &o);
    if (s == BK_OK) s = check_options(capacity, p, &o);
    if (s != BK_OK) return s;
    if (i >= BK_SCALABLE_MAX_FILTERS) return BK_EINVAL;
    return layer_geometry(capacity, p, chain_growth(&o), o.tightening, (o.flags & BK_SCALABLE_CLASSIC) != 0, i,
                          out, NULL);
}

bk_status bk_scalable_plan(uint64_t capacity, double p, const bk_scalable_options *opts, uint64_t n,
                           uint32_t *filters, uint64_t *bytes)
{
    bk_scalable_options o;
    bk_status s = resolve_options(opts, &o);
    if (s == BK_OK) s = check_options(capacity, p, &o);
    if (s != BK_OK) return s;
    uint64_t total = 0, held = 0, limit = effective_max(o.max_bytes);
    uint32_t i = 0;
    do {
        bk_geometry g;
        uint64_t b;
        if (chain_growth(&o) == 0 && i == 1) return BK_EFULL;
        if ((s = layer_geometry(capacity, p, chain_growth(&o), o.tightening, (o.flags & BK_SCALABLE_CLASSIC) != 0, i,
                                &g, &b)))
            return s;
        total += b;
        if (total > limit) return BK_ETOOBIG;
        held = held + g.n < held ? UINT64_MAX : held + g.n;
        i++;
    } while (held < n);
    if (filters) *filters = i;
    if (bytes) *bytes = total;
    return BK_OK;
}

/* ---- construction ---- */

static void free_layer(layer *L)
{
    if (!L) return;
    bk_bloom_free(L->bf);
    if (L->owns_words) bk__free_aligned(L->words);
    bk__free(L);
}

/* A blocked layer of geometry g; words NULL: allocate them (zeroed), else use (borrow) them. */
static bk_status blocked_layer(const bk_geometry *g, uint64_t *words, uint64_t count, layer **out)
{
    uint64_t bytes = g->m / 8;
    if (g->m == 0 || g->m % 1024 || bytes > BK_MAX_FILTER_BYTES || bytes > SIZE_MAX / 2) return BK_ETOOBIG;
    layer *L = bk__calloc(1, sizeof *L);
    if (!L) return BK_ENOMEM;
    if (!words) {
        if (!(words = bk__calloc_aligned((size_t)bytes))) {
            bk__free(L);
            return BK_ENOMEM;
        }
        L->owns_words = true;
    }
    L->words = words;
    L->m = g->m;
    L->blocks = g->m / 1024;
    L->k = g->k;
    L->capacity = g->n;
    L->error = bk__blocked1024_fpr(g->m, g->n, g->k);
    L->bytes = bytes;
    L->fill = count;
    *out = L;
    return BK_OK;
}

/* Wrap a classic filter as a layer (takes ownership of bf on success). */
static bk_status wrap_layer(bk_bloom *bf, uint64_t capacity, layer **out)
{
    layer *L = bk__calloc(1, sizeof *L);
    if (!L) return BK_ENOMEM;
    size_t len;
    L->bf = bf;
    L->words = (uint64_t *)(uintptr_t)bk_bloom_data(bf, &len);
    L->m = bk_bloom_bits(bf);
    L->k = bk_bloom_k(bf);
    L->capacity = capacity;
    L->error = bk_bloom_fpr_exact(L->m, capacity, L->k);
    L->bytes = len;
    L->fill = bk_bloom_count(bf);
    *out = L;
    return BK_OK;
}

static bk_status make_layer(const bk_scalable *f, uint32_t i, uint64_t bytes_now, layer **out)
{
    bk_geometry g;
    uint64_t b;
    bk_status s = layer_geometry(f->capacity0, f->p, f->growth, f->r, f->classic, i, &g, &b);
    if (s != BK_OK) return s;
    if (b > f->max_bytes || bytes_now > f->max_bytes - b) return BK_ETOOBIG;
    if (!f->classic) return blocked_layer(&g, NULL, 0, out);
    bk_bloom_options bo = { .layout = BK_LAYOUT_STANDARD, .seed = f->seed };
    bk_bloom *bf;
    if ((s = bk_bloom_new_mk(g.m, g.k, g.n, &bo, &bf))) return s;
    if ((s = wrap_layer(bf, g.n, out))) bk_bloom_free(bf);
    return s;
}

static bk_scalable *alloc_shell(uint64_t capacity, double p, uint32_t growth, double r, uint64_t max_bytes,
                                uint64_t seed, bool classic)
{
    bk_scalable *f = bk__calloc(1, sizeof *f);
    if (!f) return NULL;
    if (pthread_mutex_init(&f->grow_lock, NULL) != 0) {
        bk__free(f);
        return NULL;
    }
    f->capacity0 = capacity;
    f->p = p;
    f->growth = growth;
    f->r = r;
    f->max_bytes = effective_max(max_bytes);
    f->seed = seed;
    f->classic = classic;
    f->simd = bk__simd_resolve(BK_SIMD_AUTO);
    return f;
}

static void free_shell(bk_scalable *f)
{
    pthread_mutex_destroy(&f->grow_lock);
    bk__free(f);
}

bk_status bk_scalable_new(uint64_t capacity, double p, const bk_scalable_options *opts, bk_scalable **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_scalable_options o;
    bk_status s = resolve_options(opts, &o);
    if (s == BK_OK) s = check_options(capacity, p, &o);
    if (s != BK_OK) return s;
    bk_scalable *f = alloc_shell(capacity, p, chain_growth(&o), o.tightening, o.max_bytes, o.seed,
                                 (o.flags & BK_SCALABLE_CLASSIC) != 0);
    if (!f) return BK_ENOMEM;
    if ((s = make_layer(f, 0, 0, &f->layers[0]))) {
        free_shell(f);
        return s;
    }
    f->n = 1;
    f->bytes = f->layers[0]->bytes;
    *out = f;
    return BK_OK;
}

void bk_scalable_free(bk_scalable *f)
{
    if (!f) return;
    for (uint32_t i = 0; i < f->n; i++) free_layer(f->layers[i]);
    free_shell(f);
}

bk_status bk_scalable_clone(const bk_scalable *f, bk_scalable **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    bk_scalable *c = alloc_shell(f->capacity0, f->p, f->growth, f->r, f->max_bytes, f->seed, f->classic);
    if (!c) return BK_ENOMEM;
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++) {
        const layer *L = f->layers[i];
        bk_status s;
        if (!f->classic) {
            bk_geometry g = { .m = L->m, .k = L->k, .n = L->capacity };
            if ((s = blocked_layer(&g, NULL, __atomic_load_n(&L->fill, __ATOMIC_RELAXED), &c->layers[i])) == BK_OK)
                memcpy(c->layers[i]->words, L->words, (size_t)L->bytes);
        } else {
            bk_bloom *bf;
            s = bk_bloom_clone(L->bf, &bf);
            if (s == BK_OK && (s = wrap_layer(bf, L->capacity, &c->layers[i])) != BK_OK) bk_bloom_free(bf);
        }
        if (s != BK_OK) {
            bk_scalable_free(c);
            return s;
        }
        c->n = i + 1;
        c->bytes += c->layers[i]->bytes;
    }
    *out = c;
    return BK_OK;
}

/* ---- query ---- */

/* Layers at least this big are assumed to miss the cache. */
#define BIG_LAYER_BYTES (UINT64_C(1) << 16)
/* Probes past the first two that a query prefetches in each big layer. */
#define PREFETCH_DEPTH 2

/* Rounds (probes) tested breadth first before the layers still alive test the rest at once. */
#define BREADTH_ROUNDS 4

/* Probes t .. k-1 of one layer, (x, y) being the sequence's state at probe t: all loads issued, no
 * early exit. */
BK_INLINE bool layer_rest(const layer *L, uint32_t t, uint64_t x, uint64_t y, uint64_t step)
{
    const uint64_t *w = L->words;
    uint64_t all = 1;
    for (; t < L->k; t++) {
        uint64_t bit = bk__range64(x, L->m);
        all &= __atomic_load_n(&w[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63);
        x += y;
        y += t * step;
    }
    return all & 1;
}

/*
 * The chain. Every layer probes with the same sequence x_0, x_1, ... (it depends only on h), mapped to
 * each layer's own m. An absent key is rejected by about two probes per layer, so phase 1 tests
 * probes 0 and 1 of every layer with a fixed amount of work and no branch on the data: all those
 * loads are independent and their cache misses overlap; it also prefetches the next probes of the big
 * layers. Phase 2 then goes on breadth first over the few layers still alive (round t tests probe t of
 * each), with one unpredictable branch per round rather than per probe. A layer whose k probes all hit
 * holds the key. After BREADTH_ROUNDS probes, the layers still alive (rare for an absent key, the
 * layer holding a present one) test all their remaining probes with independent loads. n <= 64, so a
 * 64-bit mask holds the live layers.
 */
static bool classic_has(const bk_scalable *f, uint32_t n, uint64_t h)
{
    layer *const *layers = f->layers;
    const uint64_t x0 = h, y0 = bk__remix(h);
    const uint64_t x1 = x0 + y0;          /* y += 0 after probe 0 */
    const uint64_t inc = bk__probe_step(h); /* y += t * inc after probe t */
    uint64_t x = x1 + y0, y = y0 + inc;   /* probe 2 */
    uint64_t alive = 0, done = 0;
    for (uint32_t l = n; l-- > 0;) { /* largest first: their misses start earliest */
        const layer *L = layers[l];
        const uint64_t *w = L->words;
        uint64_t b0 = bk__range64(x0, L->m), b1 = bk__range64(x1, L->m);
        if (L->bytes >= BIG_LAYER_BYTES) {
            uint64_t px = x, py = y;
            for (uint32_t t = 2; t < 2 + PREFETCH_DEPTH; t++) {
                BK_PREFETCH(&w[bk__range64(px, L->m) >> 6]);
                px += py;
                py += t * inc;
            }
        }
        /* (a layer with k = 1 ignores probe 1) */
        uint64_t hit = (__atomic_load_n(&w[b0 >> 6], __ATOMIC_RELAXED) >> (b0 & 63)) &
                       ((__atomic_load_n(&w[b1 >> 6], __ATOMIC_RELAXED) >> (b1 & 63)) | (L->k < 2)) & 1;
        alive |= hit << l;
        done |= (uint64_t)(hit & (L->k <= 2)) << l;
    }
    if (!alive) return false;
    if (done) return true;
    uint32_t t = 2;
    for (; alive && t < BREADTH_ROUNDS; t++) {
        uint64_t next = 0;
        for (uint64_t a = alive; a; a &= a - 1) {
            unsigned l = (unsigned)__builtin_ctzll(a);
            const layer *L = layers[l];
            uint64_t bit = bk__range64(x, L->m);
            uint64_t hit = (__atomic_load_n(&L->words[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63)) & 1;
            next |= hit << l;
            done |= (uint64_t)(hit & (L->k == t + 1)) << l;
        }
        if (done) return true;
        alive = next;
        x += y;
        y += t * inc;
    }
    /* Phase 3: the few layers still alive (one in 16 for an absent key; the one holding a present
     * key) test all their remaining probes with independent loads, so those misses overlap too. */
    for (uint64_t a = alive; a; a &= a - 1) {
        if (layer_rest(layers[__builtin_ctzll(a)], t, x, y, inc)) return true;
    }
    return false;
}

/*
 * A blocked chain: every layer is one block test with no branch on the data, so an absent key costs
 * one block (two lines) per layer, all loads independent. The probe mask of the first k probes is
 * built once and extended when a layer has a larger k (oldest layers first: k grows along the chain;
 * a smaller k starts the mask again). The scalar form reads with relaxed atomic loads (it is the path
 * under ThreadSanitizer); the vector forms use plain vector loads, as the blocked filter does.
 */
/* Make mask (holding the first *kc probes of x) hold the first k. */
BK_INLINE void mask_to_k(uint64_t mask[B1024_WORDS], uint32_t *kc, uint32_t k, uint32_t x)
{
    if (k < *kc) {
        memset(mask, 0, B1024_WORDS * sizeof mask[0]);
        *kc = 0;
    }
    for (; *kc < k; (*kc)++) {
        uint32_t b = b1024_bit(x, *kc);
        mask[b >> 6] |= UINT64_C(1) << (b & 63);
    }
}

static bool b1024_has_scalar(layer *const *layers, uint32_t n, uint64_t h)
{
    const uint32_t x = (uint32_t)h;
    uint64_t mask[B1024_WORDS] = { 0 }, found = 0;
    uint32_t kc = 0;
    for (uint32_t l = 0; l < n; l++) {
        const layer *L = layers[l];
        mask_to_k(mask, &kc, L->k, x);
        const uint64_t *w = b1024_block(L, h);
        uint64_t miss = 0;
        for (int i = 0; i < B1024_WORDS; i++) miss |= mask[i] & ~__atomic_load_n(&w[i], __ATOMIC_RELAXED);
        found |= miss == 0;
    }
    return found != 0;
}

#ifdef BK_X86
BK_T_AVX2 static bool b1024_has_avx2(layer *const *layers, uint32_t n, uint64_t h)
{
    const uint32_t x = (uint32_t)h;
    uint64_t mask[B1024_WORDS] = { 0 };
    __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
    uint32_t kc = 0;
    int found = 0;
    for (uint32_t l = 0; l < n; l++) {
        const layer *L = layers[l];
        if (L->k != kc) {
            mask_to_k(mask, &kc, L->k, x);
            m0 = _mm256_loadu_si256((const __m256i *)mask);
            m1 = _mm256_loadu_si256((const __m256i *)(mask + 4));
            m2 = _mm256_loadu_si256((const __m256i *)(mask + 8));
            m3 = _mm256_loadu_si256((const __m256i *)(mask + 12));
        }
        const __m256i *w = (const __m256i *)b1024_block(L, h);
        __m256i miss = _mm256_or_si256(
            _mm256_or_si256(_mm256_andnot_si256(_mm256_loadu_si256(w), m0), _mm256_andnot_si256(_mm256_loadu_si256(w + 1), m1)),
            _mm256_or_si256(_mm256_andnot_si256(_mm256_loadu_si256(w + 2), m2), _mm256_andnot_si256(_mm256_loadu_si256(w + 3), m3)));
        found |= _mm256_testz_si256(miss, miss);
    }
    return found != 0;
}

/* The mask lives in two registers: probe b sets bit b & 63 of lane b >> 6 by a masked OR. */
BK_T_AVX512 static bool b1024_has_avx512(layer *const *layers, uint32_t n, uint64_t h)
{
    const uint32_t x = (uint32_t)h;
    __m512i lo = _mm512_setzero_si512(), hi = lo;
    uint32_t kc = 0;
    unsigned found = 0;
    for (uint32_t l = 0; l < n; l++) {
        const layer *L = layers[l];
        if (L->k < kc) {
            lo = hi = _mm512_setzero_si512();
            kc = 0;
        }
        for (; kc < L->k; kc++) {
            uint32_t b = b1024_bit(x, kc), lane = 1u << (b >> 6);
            __m512i bit = _mm512_set1_epi64((long long)(UINT64_C(1) << (b & 63)));
            lo = _mm512_mask_or_epi64(lo, (__mmask8)lane, lo, bit);
            hi = _mm512_mask_or_epi64(hi, (__mmask8)(lane >> 8), hi, bit);
        }
        const uint64_t *w = b1024_block(L, h);
        /* (line & mask) != mask in some lane: the AND takes the line from memory */
        __mmask8 miss = _mm512_cmpneq_epi64_mask(_mm512_and_si512(_mm512_loadu_si512(w), lo), lo) |
                        _mm512_cmpneq_epi64_mask(_mm512_and_si512(_mm512_loadu_si512(w + 8), hi), hi);
        found |= miss == 0;
    }
    return found != 0;
}
#endif

static bool blocked_has(const bk_scalable *f, uint32_t n, uint64_t h)
{
#ifdef BK_X86
    if (f->simd == BK_SIMD_AVX512) return b1024_has_avx512(f->layers, n, h);
    if (f->simd == BK_SIMD_AVX2) return b1024_has_avx2(f->layers, n, h);
#endif
    return b1024_has_scalar(f->layers, n, h);
}

static bool chain_has(const bk_scalable *f, uint32_t n, uint64_t h)
{
    return f->classic ? classic_has(f, n, h) : blocked_has(f, n, h);
}

bool bk_scalable_contains_hash(const bk_scalable *f, uint64_t h)
{
    return chain_has(f, __atomic_load_n(&f->n, __ATOMIC_ACQUIRE), h);
}

bool bk_scalable_contains(const bk_scalable *f, const void *key, size_t len)
{
    return bk_scalable_contains_hash(f, bk__hash(key, len, f->seed));
}

/* ---- insert ---- */

/* Append a layer if the chain still has n layers (another thread may have done it). [under grow_lock] */
static bk_status grow_locked(bk_scalable *f, uint32_t n)
{
    if (__atomic_load_n(&f->n, __ATOMIC_RELAXED) != n) return BK_OK;
    if (f->growth == 0) return BK_EFULL;
    if (n >= BK_SCALABLE_MAX_FILTERS) return BK_ETOOBIG;
    layer *L;
    bk_status s = make_layer(f, n, __atomic_load_n(&f->bytes, __ATOMIC_RELAXED), &L);
    if (s != BK_OK) return s;
    f->layers[n] = L;
    __atomic_store_n(&f->bytes, f->bytes + L->bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&f->n, n + 1, __ATOMIC_RELEASE);
    return BK_OK;
}

bk_status bk_scalable_add_if_absent_hash(bk_scalable *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    uint32_t n = f->n;
    if (chain_has(f, n, h)) return BK_EEXISTS;
    layer *L = f->layers[n - 1];
    if (BK_UNLIKELY(L->fill >= L->capacity)) {
        bk_status s = grow_locked(f, n); /* [excl]: nobody else holds the lock */
        if (s != BK_OK) return s;
        L = f->layers[n];
    }
    L->fill++;
    if (L->bf) return bk_bloom_add_hash(L->bf, h);
    uint64_t *w = b1024_block(L, h);
    for (uint32_t i = 0; i < L->k; i++) {
        uint32_t b = b1024_bit((uint32_t)h, i);
        w[b >> 6] |= UINT64_C(1) << (b & 63);
    }
    return BK_OK;
}

bk_status bk_scalable_add_if_absent(bk_scalable *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_scalable_add_if_absent_hash(f, bk__hash(key, len, f->seed));
}

bk_status bk_scalable_add_hash(bk_scalable *f, uint64_t h)
{
    bk_status s = bk_scalable_add_if_absent_hash(f, h);
    return s == BK_EEXISTS ? BK_OK : s;
}

bk_status bk_scalable_add(bk_scalable *f, const void *key, size_t len)
{
    bk_status s = bk_scalable_add_if_absent(f, key, len);
    return s == BK_EEXISTS ? BK_OK : s;
}

bk_status bk_scalable_add_if_absent_u64(bk_scalable *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return bk_scalable_add_if_absent_hash(f, bk__hash_u64(key, f->seed));
}

bk_status bk_scalable_add_u64(bk_scalable *f, uint64_t key)
{
    bk_status s = bk_scalable_add_if_absent_u64(f, key);
    return s == BK_EEXISTS ? BK_OK : s;
}

bool bk_scalable_contains_u64(const bk_scalable *f, uint64_t key)
{
    return bk_scalable_contains_hash(f, bk__hash_u64(key, f->seed));
}

/* Claim a slot in the newest layer with a CAS on its fill (so a layer never takes more than its
 * capacity, however many threads add), then set the bits with the classic filter's atomic OR. Only
 * a full newest layer takes the lock, to append the next one. */
bk_status bk_scalable_add_hash_atomic(bk_scalable *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    if (chain_has(f, n, h)) return BK_EEXISTS;
    for (;;) {
        layer *L = f->layers[n - 1];
        uint64_t c = __atomic_load_n(&L->fill, __ATOMIC_RELAXED);
        while (c < L->capacity &&
               !__atomic_compare_exchange_n(&L->fill, &c, c + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        }
        if (c < L->capacity) {
            if (L->bf) return bk_bloom_add_hash_atomic(L->bf, h);
            uint64_t *w = b1024_block(L, h);
            for (uint32_t i = 0; i < L->k; i++) {
                uint32_t b = b1024_bit((uint32_t)h, i);
                __atomic_fetch_or(&w[b >> 6], UINT64_C(1) << (b & 63), __ATOMIC_RELAXED);
            }
            return BK_OK;
        }
        pthread_mutex_lock(&f->grow_lock);
        bk_status s = grow_locked(f, n);
        pthread_mutex_unlock(&f->grow_lock);
        if (s != BK_OK) return s;
        n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    }
}

bk_status bk_scalable_add_atomic(bk_scalable *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_scalable_add_hash_atomic(f, bk__hash(key, len, f->seed));
}

/* ---- batches ---- */

#define BK_BATCH 32

#define ADD_LOOKAHEAD 8

static void prefetch_first(const bk_scalable *f, uint64_t h)
{
    for (uint32_t l = f->n; l-- > 0;) {
        const layer *L = f->layers[l];
        if (L->bytes < BIG_LAYER_BYTES) break;
        if (!L->bf) {
            const uint64_t *b = b1024_block(L, h);
            BK_PREFETCH(b);
            BK_PREFETCH(b + 8);
            continue;
        }
        BK_PREFETCH(&L->words[bk__range64(h, L->m) >> 6]);
        BK_PREFETCH(&L->words[bk__range64(h + bk__remix(h), L->m) >> 6]);
    }
}

bk_status bk_scalable_add_hashes(bk_scalable *f, const uint64_t *hashes, size_t n, size_t *added)
{
    size_t a = 0;
    bk_status s = BK_OK;
    if (!f || (!hashes && n)) s = BK_EINVAL;
    for (size_t i = 0; s == BK_OK && i < n; i++) {
        /* a few keys ahead, fetch the first probe line of each big layer; keys are added in order, so a
         * key repeated within the batch is still found by its second add */
        if (i + ADD_LOOKAHEAD < n) prefetch_first(f, hashes[i + ADD_LOOKAHEAD]);
        s = bk_scalable_add_if_absent_hash(f, hashes[i]);
        if (s == BK_OK) a++;
        else if (s == BK_EEXISTS) s = BK_OK;
    }
    if (added) *added = a;
    return s;
}

bk_status bk_scalable_add_many(bk_scalable *f, const void *const *keys, const size_t *lens, size_t n,
                               size_t *added)
{
    if (added) *added = 0;
    if (!f || (n && (!keys || !lens))) return BK_EINVAL;
    for (size_t j = 0; j < n; j++)
        if (!keys[j] && lens[j]) return BK_EINVAL;
    size_t total = 0;
    bk_status s = BK_OK;
    uint64_t h[BK_BATCH];
    for (size_t i = 0; s == BK_OK && i < n; i += BK_BATCH) {
        size_t e = i + BK_BATCH < n ? i + BK_BATCH : n, a = 0;
        for (size_t j = i; j < e; j++) h[j - i] = bk__hash(keys[j], lens[j], f->seed);
        s = bk_scalable_add_hashes(f, h, e - i, &a);
        total += a;
    }
    if (added) *added = total;
    return s;
}


/*
 * A batch runs the breadth-first walk of chain_has for a block of keys in lock step: round t tests
 * probe t of every (key, layer) pair still alive, then prefetches probe t + 1 of the big layers still
 * alive, and the rest of the block's work hides those misses. Every line fetched is one the walk
 * needs (about two per layer for an absent key), so a batch runs near the memory system's throughput.
 */
/* Keys ahead whose blocks a blocked chain's batch prefetches: each key fetches two lines per big layer,
 * so a few keys already keep the memory system busy. */
#define BLOCKED_PF 6

/* The big layers of a blocked chain of nl layers (newest first); returns how many. */
static uint32_t big_layers(const bk_scalable *f, uint32_t nl, const layer **big)
{
    uint32_t nbig = 0;
    for (uint32_t l = nl; l-- > 0;)
        if (f->layers[l]->bytes >= BIG_LAYER_BYTES) big[nbig++] = f->layers[l];
    return nbig;
}

BK_INLINE void prefetch_blocks(const layer *const *big, uint32_t nbig, uint64_t h)
{
    for (uint32_t j = 0; j < nbig; j++) {
        const uint64_t *b = b1024_block(big[j], h);
        BK_PREFETCH(b);
        BK_PREFETCH(b + 8);
    }
}

/* A blocked chain's batch: while key i is tested, the blocks of key i + BLOCKED_PF in the big layers
 * are fetched. */
static size_t blocked_contains_hashes(const bk_scalable *f, const uint64_t *hashes, size_t n, uint8_t *results)
{
    const uint32_t nl = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    const layer *big[BK_SCALABLE_MAX_FILTERS];
    const uint32_t nbig = big_layers(f, nl, big);
    size_t present = 0;
    for (size_t i = 0; i < n && i < BLOCKED_PF; i++) prefetch_blocks(big, nbig, hashes[i]);
    for (size_t i = 0; i < n; i++) {
        if (i + BLOCKED_PF < n) prefetch_blocks(big, nbig, hashes[i + BLOCKED_PF]);
        bool r = blocked_has(f, nl, hashes[i]);
        if (results) results[i] = r;
        present += r;
    }
    return present;
}

/* The bytes form: key i + BLOCKED_PF is hashed into a small ring and its blocks fetched while key i is
 * tested, so hashing overlaps the misses too. */
static size_t blocked_contains_many(const bk_scalable *f, const void *const *keys, const size_t *lens, size_t n,
                                    uint8_t *results)
{
    const uint32_t nl = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    const layer *big[BK_SCALABLE_MAX_FILTERS];
    const uint32_t nbig = big_layers(f, nl, big);
    uint64_t ring[BLOCKED_PF];
    size_t present = 0;
    for (size_t i = 0; i < n && i < BLOCKED_PF; i++) {
        ring[i] = bk__hash(keys[i], lens[i], f->seed);
        prefetch_blocks(big, nbig, ring[i]);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = ring[i % BLOCKED_PF];
        if (i + BLOCKED_PF < n) {
            uint64_t g = bk__hash(keys[i + BLOCKED_PF], lens[i + BLOCKED_PF], f->seed);
            ring[i % BLOCKED_PF] = g;
            prefetch_blocks(big, nbig, g);
        }
        bool r = blocked_has(f, nl, h);
        if (results) results[i] = r;
        present += r;
    }
    return present;
}

size_t bk_scalable_contains_hashes(const bk_scalable *f, const uint64_t *hashes, size_t n, uint8_t *results)
{
    if (!f->classic) return blocked_contains_hashes(f, hashes, n, results);
    enum { STEP = 16 };
    layer *const *layers = f->layers;
    const uint32_t nl = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    const uint64_t all = nl == 64 ? ~UINT64_C(0) : (UINT64_C(1) << nl) - 1;
    uint64_t bigmask = 0;
    for (uint32_t l = 0; l < nl; l++)
        if (layers[l]->bytes >= BIG_LAYER_BYTES) bigmask |= UINT64_C(1) << l;
    size_t present = 0;
    for (size_t i = 0; i < n; i += STEP) {
        const size_t cnt = n - i < STEP ? n - i : STEP;
        uint64_t x[STEP], y[STEP], w[STEP], alive[STEP];
        uint8_t found[STEP];
        for (size_t j = 0; j < cnt; j++) {
            x[j] = hashes[i + j];
            y[j] = bk__remix(x[j]);
            w[j] = bk__probe_step(x[j]);
            alive[j] = all;
            found[j] = 0;
            for (uint64_t a = bigmask; a; a &= a - 1) {
                const layer *L = layers[__builtin_ctzll(a)];
                BK_PREFETCH(&L->words[bk__range64(x[j], L->m) >> 6]);
            }
        }
        uint64_t any = cnt ? 1 : 0;
        uint32_t t = 0;
        for (; any && t < BREADTH_ROUNDS; t++) {
            any = 0;
            for (size_t j = 0; j < cnt; j++) {
                if (!alive[j]) continue;
                uint64_t next = 0, done = 0;
                for (uint64_t a = alive[j]; a; a &= a - 1) {
                    unsigned l = (unsigned)__builtin_ctzll(a);
                    const layer *L = layers[l];
                    uint64_t bit = bk__range64(x[j], L->m);
                    uint64_t hit = (__atomic_load_n(&L->words[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63)) & 1;
                    next |= hit << l;
                    done |= (uint64_t)(hit & (L->k == t + 1)) << l;
                }
                x[j] += y[j];
                y[j] += t * w[j];
                if (done) {
                    found[j] = 1;
                    next = 0;
                }
                alive[j] = next;
                any |= next;
                for (uint64_t a = next & bigmask; a; a &= a - 1) {
                    const layer *L = layers[__builtin_ctzll(a)];
                    BK_PREFETCH(&L->words[bk__range64(x[j], L->m) >> 6]);
                }
            }
        }
        /* the few (key, layer) pairs still alive: prefetch all their remaining probes, then test them */
        if (any) {
            for (size_t j = 0; j < cnt; j++)
                for (uint64_t a = alive[j] & bigmask; a; a &= a - 1) {
                    const layer *L = layers[__builtin_ctzll(a)];
                    uint64_t px = x[j], py = y[j];
                    for (uint32_t u = t; u < L->k; u++) {
                        BK_PREFETCH(&L->words[bk__range64(px, L->m) >> 6]);
                        px += py;
                        py += u * w[j];
                    }
                }
            for (size_t j = 0; j < cnt; j++)
                for (uint64_t a = alive[j]; a && !found[j]; a &= a - 1)
                    found[j] = layer_rest(layers[__builtin_ctzll(a)], t, x[j], y[j], w[j]);
        }
        for (size_t j = 0; j < cnt; j++) {
            if (results) results[i + j] = found[j];
            present += found[j];
        }
    }
    return present;
}

size_t bk_scalable_contains_many(const bk_scalable *f, const void *const *keys, const size_t *lens, size_t n,
                                 uint8_t *results)
{
    if (!f->classic) return blocked_contains_many(f, keys, lens, n, results);
    uint64_t h[BK_BATCH];
    size_t present = 0;
    for (size_t i = 0; i < n; i += BK_BATCH) {
        size_t e = i + BK_BATCH < n ? i + BK_BATCH : n;
        for (size_t j = i; j < e; j++) h[j - i] = bk__hash(keys[j], lens[j], f->seed);
        present += bk_scalable_contains_hashes(f, h, e - i, results ? results + i : NULL);
    }
    return present;
}

/* ---- whole-filter operations ---- */

/* Keys in a layer by its fill: n = -(m / k) ln(1 - set / m) (a full array counts as m - 1/2 set). */
static double fill_estimate(uint64_t set, uint64_t m, uint32_t k)
{
    double x = set >= m ? (double)m - 0.5 : (double)set;
    return -((double)m / k) * log1p(-x / (double)m);
}

static uint64_t blocked_estimate(const layer *L)
{
    return (uint64_t)llround(fill_estimate(bk__popcount_words(L->words, L->bytes / 8), L->m, L->k));
}

void bk_scalable_clear(bk_scalable *f)
{
    if (!f) return;
    for (uint32_t i = 1; i < f->n; i++) {
        free_layer(f->layers[i]);
        f->layers[i] = NULL;
    }
    f->n = 1;
    if (f->layers[0]->bf) bk_bloom_clear(f->layers[0]->bf);
    else memset(f->layers[0]->words, 0, (size_t)f->layers[0]->bytes);
    f->layers[0]->fill = 0;
    f->bytes = f->layers[0]->bytes;
}

bk_status bk_scalable_compatible(const bk_scalable *a, const bk_scalable *b)
{
    if (!a || !b) return BK_EINVAL;
    if (a->capacity0 != b->capacity0 || a->p != b->p || a->growth != b->growth || a->r != b->r ||
        a->seed != b->seed || a->classic != b->classic)
        return BK_EINCOMPAT;
    uint32_t n = a->n < b->n ? a->n : b->n;
    for (uint32_t i = 0; i < n; i++) {
        const layer *x = a->layers[i], *y = b->layers[i];
        if (x->bf ? bk_bloom_compatible(x->bf, y->bf) != BK_OK : x->m != y->m || x->k != y->k) return BK_EINCOMPAT;
    }
    return BK_OK;
}

bk_status bk_scalable_union(bk_scalable *dst, const bk_scalable *src)
{
    bk_status s = bk_scalable_compatible(dst, src);
    if (s != BK_OK) return s;
    /* grow dst first, all or nothing */
    layer *fresh[BK_SCALABLE_MAX_FILTERS] = { 0 };
    uint64_t bytes = dst->bytes;
    for (uint32_t i = dst->n; i < src->n; i++) {
        s = make_layer(dst, i, bytes, &fresh[i]);
        const layer *y = src->layers[i];
        if (s == BK_OK && (fresh[i]->bf ? bk_bloom_compatible(fresh[i]->bf, y->bf) != BK_OK
                                         : fresh[i]->m != y->m || fresh[i]->k != y->k))
            s = BK_EINCOMPAT;
        if (s != BK_OK) {
            for (uint32_t j = dst->n; j <= i; j++) free_layer(fresh[j]);
            return s;
        }
        bytes += fresh[i]->bytes;
    }
    for (uint32_t i = dst->n; i < src->n; i++) dst->layers[i] = fresh[i];
    if (src->n > dst->n) {
        dst->bytes = bytes;
        __atomic_store_n(&dst->n, src->n, __ATOMIC_RELEASE);
    }
    for (uint32_t i = 0; i < src->n; i++) {
        layer *L = dst->layers[i];
        if (L->bf) {
            bk_bloom_union(L->bf, src->layers[i]->bf);
            L->fill = bk_bloom_count(L->bf);
            continue;
        }
        const uint64_t *w = src->layers[i]->words;
        for (uint64_t j = 0; j < L->bytes / 8; j++) L->words[j] |= __atomic_load_n(&w[j], __ATOMIC_RELAXED);
        L->fill = blocked_estimate(L);
    }
    return BK_OK;
}

static uint64_t layer_count(const layer *L)
{
    return L->bf ? bk_bloom_count(L->bf) : __atomic_load_n(&L->fill, __ATOMIC_RELAXED);
}

static void layer_stats(const layer *L, bk_scalable_layer *out, uint64_t *set)
{
    uint64_t s = bk__popcount_words(L->words, L->bytes / 8);
    out->capacity = L->capacity;
    out->count = layer_count(L);
    out->bits = L->m;
    out->memory_bytes = L->bytes;
    out->k = L->k;
    out->error = L->error;
    out->fill_ratio = (double)s / (double)L->m;
    /* a blocked layer: the exact formula at its count (fill^k would miss the blocks' uneven loads) */
    out->fpr_now = L->bf ? pow(out->fill_ratio, L->k) : bk__blocked1024_fpr(L->m, out->count, L->k);
    if (set) *set = s;
}

bk_status bk_scalable_layer_stats(const bk_scalable *f, uint32_t i, bk_scalable_layer *out)
{
    if (!f || !out || i >= __atomic_load_n(&f->n, __ATOMIC_ACQUIRE)) return BK_EINVAL;
    layer_stats(f->layers[i], out, NULL);
    return BK_OK;
}

void bk_scalable_stats(const bk_scalable *f, bk_stats *out)
{
    memset(out, 0, sizeof *out);
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    double pass_none = 1.0, est = 0.0;
    uint64_t set_total = 0;
    for (uint32_t i = 0; i < n; i++) {
        bk_scalable_layer ls;
        uint64_t set;
        layer_stats(f->layers[i], &ls, &set);
        out->capacity += ls.capacity;
        out->count += ls.count;
        out->bits += ls.bits;
        out->memory_bytes += ls.memory_bytes;
        set_total += set;
        pass_none *= 1.0 - ls.fpr_now;
        est += fill_estimate(set, ls.bits, ls.k);
    }
    const layer *last = f->layers[n - 1];
    out->type = BK_TYPE_SCALABLE;
    out->k = last->k;
    out->bits_per_key = (double)out->memory_bytes * 8.0 / (double)(out->count ? out->count : 1);
    out->fill_ratio = (double)set_total / (double)out->bits;
    out->est_cardinality = est;
    out->fpr_target = f->p;
    out->fpr_now = 1.0 - pass_none;
    bool full = __atomic_load_n(&last->fill, __ATOMIC_RELAXED) >= last->capacity;
    bool can_grow = false;
    if (f->growth != 0 && n < BK_SCALABLE_MAX_FILTERS) {
        bk_geometry g;
        uint64_t b;
        can_grow = layer_geometry(f->capacity0, f->p, f->growth, f->r, f->classic, n, &g, &b) == BK_OK &&
                   b <= f->max_bytes - bk_scalable_bytes(f);
    }
    out->saturated = full && !can_grow;
    out->subfilters = n;
    out->seed = f->seed;
}

uint64_t bk_scalable_count(const bk_scalable *f)
{
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    uint64_t c = 0;
    for (uint32_t i = 0; i < n; i++) c += layer_count(f->layers[i]);
    return c;
}

uint64_t bk_scalable_capacity(const bk_scalable *f)
{
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    uint64_t c = 0;
    for (uint32_t i = 0; i < n; i++) c += f->layers[i]->capacity;
    return c;
}

uint32_t bk_scalable_filters(const bk_scalable *f) { return __atomic_load_n(&f->n, __ATOMIC_ACQUIRE); }
uint64_t bk_scalable_bytes(const bk_scalable *f) { return __atomic_load_n(&f->bytes, __ATOMIC_RELAXED); }

/* The classic filter's object size is private to bloom.c; 128 bytes is an upper bound of it (a blocked
 * layer has none). */
uint64_t bk_scalable_memory_usage(const bk_scalable *f)
{
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    return sizeof *f + (uint64_t)n * (sizeof(layer) + 128 + 64) + bk_scalable_bytes(f);
}

double bk_scalable_fpr_bound(const bk_scalable *f)
{
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    double b = 0;
    for (uint32_t i = 0; i < n; i++) b += f->layers[i]->error;
    return b;
}

uint64_t bk_scalable_initial_capacity(const bk_scalable *f) { return f->capacity0; }
double bk_scalable_error(const bk_scalable *f) { return f->p; }
uint32_t bk_scalable_growth(const bk_scalable *f) { return f->growth ? f->growth : 1; }
bool bk_scalable_nonscaling(const bk_scalable *f) { return f->growth == 0; }
bool bk_scalable_classic(const bk_scalable *f) { return f->classic; }
double bk_scalable_tightening(const bk_scalable *f) { return f->r; }
uint64_t bk_scalable_max_bytes(const bk_scalable *f) { return f->max_bytes; }
uint64_t bk_scalable_seed(const bk_scalable *f) { return f->seed; }

bk_status bk_scalable_set_max_bytes(bk_scalable *f, uint64_t max_bytes)
{
    if (!f) return BK_EINVAL;
    max_bytes = effective_max(max_bytes);
    if (max_bytes > BK_MAX_FILTER_BYTES || max_bytes < f->bytes) return BK_EINVAL;
    f->max_bytes = max_bytes;
    return BK_OK;
}

/* ---- serialization (body layout in docs/FORMAT.md) ----
 * offset 0  u64 capacity0, f64 p, f64 r, u64 max_bytes, u32 growth, u32 nfilters, u32 kind  (44 bytes)
 * growth: 0 = non-scaling, 1 .. 16 = scaling with that growth; kind: KIND_CLASSIC or KIND_BLOCKED;
 * then zero padding to 64, then nfilters sub-filter bodies, each starting at a 64-byte aligned body
 * offset: classic: bloom.c's body (standard layout); blocked: u64 m, u32 k, u32 0, u64 capacity,
 * u64 count (32 bytes), zero padding to 64, the m / 8 bytes of words. Sub-filter i must have exactly
 * the geometry the parameters give for it. */

enum { KIND_CLASSIC = 0, KIND_BLOCKED = 1 };

/* Counts past this are not from us (keeps the chain's sum far from overflow). */
#define MAX_LAYER_COUNT (UINT64_C(1) << 48)

static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_scalable *f = vf;
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    bk_status s;
    if ((s = bk__w_u64(w, f->capacity0)) || (s = bk__w_f64(w, f->p)) || (s = bk__w_f64(w, f->r)) ||
        (s = bk__w_u64(w, f->max_bytes)) || (s = bk__w_u32(w, f->growth)) || (s = bk__w_u32(w, n)) ||
        (s = bk__w_u32(w, f->classic ? KIND_CLASSIC : KIND_BLOCKED)) || (s = bk__w_align(w, 64)))
        return s;
    for (uint32_t i = 0; i < n; i++) {
        const layer *L = f->layers[i];
        if (L->bf) {
            s = bk__bloom_vtable.encode(L->bf, w);
        } else if (!(s = bk__w_u64(w, L->m)) && !(s = bk__w_u32(w, L->k)) && !(s = bk__w_u32(w, 0)) &&
                   !(s = bk__w_u64(w, L->capacity)) && !(s = bk__w_u64(w, layer_count(L))) &&
                   !(s = bk__w_align(w, 64))) {
            s = bk__w_u64_array(w, L->words, (size_t)(L->bytes / 8));
        }
        if (s || (s = bk__w_align(w, 64))) return s;
    }
    return BK_OK;
}

/* A blocked sub-filter's body; g is the geometry the chain's parameters give it. */
static bk_status decode_blocked_layer(bk_reader *r, const bk_geometry *g, layer **out)
{
    uint64_t m, cap, count;
    uint32_t k, zero;
    bk_status s;
    if ((s = bk__r_u64(r, &m)) || (s = bk__r_u32(r, &k)) || (s = bk__r_u32(r, &zero)) || (s = bk__r_u64(r, &cap)) ||
        (s = bk__r_u64(r, &count)) || (s = bk__r_align(r, 64)))
        return s;
    if (m != g->m || k != g->k || cap != g->n || zero != 0 || count > MAX_LAYER_COUNT) return BK_ECORRUPT;
    const uint8_t *data = NULL;
    if (m / 8 > r->len - r->off) return BK_ETRUNCATED;
    if (r->borrow && (s = bk__r_take(r, (size_t)(m / 8), &data))) return s;
    if ((s = blocked_layer(g, r->borrow ? (uint64_t *)(uintptr_t)data : NULL, count, out))) return s;
    /* copying: straight from the body into the layer (a pulled body never sits in memory whole) */
    if ((!r->borrow && (s = bk__r_take_into(r, (*out)->words, (size_t)(m / 8))) != BK_OK) ||
        (s = bk__r_align(r, 64)) != BK_OK) {
        free_layer(*out);
        *out = NULL;
    }
    return s;
}

static bk_status v_decode(bk_reader *r, void **out)
{
    uint64_t cap0, max_bytes;
    double p, rr;
    uint32_t growth, n, kind;
    bk_status s;
    *out = NULL;
    if ((s = bk__r_u64(r, &cap0)) || (s = bk__r_f64(r, &p)) || (s = bk__r_f64(r, &rr)) ||
        (s = bk__r_u64(r, &max_bytes)) || (s = bk__r_u32(r, &growth)) || (s = bk__r_u32(r, &n)) ||
        (s = bk__r_u32(r, &kind)) || (s = bk__r_align(r, 64)))
        return s;
    if (kind != KIND_CLASSIC && kind != KIND_BLOCKED) return BK_ECORRUPT;
    bool classic = kind == KIND_CLASSIC;
    bk_scalable_options o = { .growth = growth ? growth : 1, .tightening = rr, .max_bytes = max_bytes, .seed = r->seed,
                              .flags = (growth ? 0 : BK_SCALABLE_NONSCALING) | (classic ? BK_SCALABLE_CLASSIC : 0) };
    if (check_options(cap0, p, &o) != BK_OK || max_bytes == 0 || n == 0 || n > BK_SCALABLE_MAX_FILTERS ||
        (growth == 0 && n != 1))
        return BK_ECORRUPT;
    bk_scalable *f = alloc_shell(cap0, p, growth, rr, max_bytes, r->seed, classic);
    if (!f) return BK_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        bk_geometry g;
        uint64_t b;
        void *bf = NULL;
        if (layer_geometry(cap0, p, growth, rr, classic, i, &g, &b) != BK_OK || b > max_bytes - f->bytes) {
            s = BK_ECORRUPT;
        } else if (!classic) {
            s = decode_blocked_layer(r, &g, &f->layers[i]);
        } else if ((s = bk__bloom_vtable.decode(r, &bf)) == BK_OK) {
            /* the sub-filter body's capacity field, as the decoder kept it */
            if (bk__bloom_capacity_field(bf) != g.n || bk_bloom_layout_of(bf) != BK_LAYOUT_STANDARD ||
                bk_bloom_bits(bf) != g.m || bk_bloom_k(bf) != g.k || bk_bloom_count(bf) > MAX_LAYER_COUNT)
                s = BK_ECORRUPT;
            else if ((s = bk__r_align(r, 64)) == BK_OK)
                s = wrap_layer(bf, g.n, &f->layers[i]);
        }
        if (s != BK_OK) {
            bk_bloom_free(bf);
            bk_scalable_free(f);
            return s;
        }
        f->n = i + 1;
        f->bytes += f->layers[i]->bytes;
    }
    *out = f;
    return BK_OK;
}

static bk_status v_add_hash(void *f, uint64_t h) { return bk_scalable_add_hash(f, h); }
static bool v_contains_hash(const void *f, uint64_t h) { return bk_scalable_contains_hash(f, h); }
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n) { return bk_scalable_add_hashes(f, h, n, NULL); }
static size_t v_contains_hashes(const void *f, const uint64_t *h, size_t n, uint8_t *r)
{
    return bk_scalable_contains_hashes(f, h, n, r);
}
static uint64_t v_seed(const void *f) { return bk_scalable_seed(f); }
static void v_stats(const void *f, bk_stats *s) { bk_scalable_stats(f, s); }
static bk_status v_merge(void *d, const void *s) { return bk_scalable_union(d, s); }
static void v_clear(void *f) { bk_scalable_clear(f); }
static void v_destroy(void *f) { bk_scalable_free(f); }

BK_HIDDEN const bk_vtable bk__scalable_vtable = {
    .type = BK_TYPE_SCALABLE,
    .add_hash = v_add_hash,
    .contains_hash = v_contains_hash,
    .remove_hash = NULL,
    .add_hashes = v_add_hashes,
    .contains_hashes = v_contains_hashes,
    .seed = v_seed,
    .stats = v_stats,
    .merge = v_merge,
    .clear = v_clear,
    .encode = v_encode,
    .decode = v_decode,
    .destroy = v_destroy,
    /* A shared writable mapping cannot grow: scalable files are loaded, added to and saved. */
    .add_hash_atomic = NULL,
    .add_hashes_atomic = NULL,
};
