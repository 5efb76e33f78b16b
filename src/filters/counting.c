/* Counting Bloom filter: packed 4- or 8-bit counters, sticky saturation. */
#include <math.h>
#include "filters/internal.h"
#include "core/simd.h"
#include "bloomkit/counting.h"
#include "bloomkit/filter.h"

struct bk_counting {
    uint64_t *words;     /* m counters packed into 64-bit words, whole 64-byte lines; unused counters 0 */
    uint64_t nwords;
    uint64_t m;          /* counters addressed */
    uint32_t k;
    uint32_t bits;       /* counter width: 4 or 8 */
    uint32_t shift;      /* log2(counters per word): 4 or 3 */
    uint64_t cmax;       /* a counter's maximum, also its mask: 0xF or 0xFF */
    uint64_t seed;
    uint64_t capacity;
    double fpr_target;
    uint64_t count_own;
    uint64_t *count;     /* &count_own, or the count field inside a shared mapping */
    bool owns_words;
    const bk_allocator *alloc; /* everything this filter owns is allocated with it */
};

/* ---- probes: the classic filter's standard layout (and probe scheme) over m counters ---- */

/* Calls BODY with `wp` pointing at the word of each of the k probed counters and `sh` its bit offset
 * (the classic probe iterator, core/base.h). */
#define BK_FOR_EACH_COUNTER(f, h, BODY)                                        \
    do {                                                                       \
        bk__probe p_ = bk__probe_start(h);                                     \
        const uint64_t lowmask_ = (UINT64_C(1) << (f)->shift) - 1;             \
        for (uint32_t i_ = 0; i_ < (f)->k; i_++) {                             \
            uint64_t c_ = bk__probe_at(&p_, (f)->m);                           \
            uint64_t *wp = &(f)->words[c_ >> (f)->shift];                      \
            unsigned sh = (unsigned)((c_ & lowmask_) * (f)->bits);             \
            BODY;                                                              \
            bk__probe_next(&p_, i_);                                           \
        }                                                                      \
    } while (0)

static bool bad_bits(uint32_t b) { return b != 0 && b != 4 && b != 8; }

/* Bytes of m counters of `bits` bits in whole 64-byte lines; 0 if too big. */
static uint64_t counter_bytes(uint64_t m, uint32_t bits)
{
    if (m > BK_MAX_FILTER_BYTES * 8 / bits) return 0;
    return bk__bits_to_bytes64(m * bits);
}

static bk_status alloc_filter(const bk_allocator *a, uint64_t m, uint32_t k, uint32_t bits, uint64_t seed, uint64_t capacity,
                              double fpr_target, bool alloc_words, bk_counting **out)
{
    uint64_t bytes = counter_bytes(m, bits), *words;
    const bk_allocator *al = bk__allocator(a);
    bk_status s;
    bk_counting *f = bk__new_with_array(al, sizeof *f, bytes, alloc_words, &words, &s);
    if (!f) return s;
    f->words = words;
    f->nwords = bytes / 8;
    f->m = m;
    f->k = k;
    f->bits = bits;
    f->shift = bits == 4 ? 4 : 3;
    f->cmax = (UINT64_C(1) << bits) - 1;
    f->seed = seed;
    f->capacity = capacity;
    f->fpr_target = fpr_target;
    f->count = &f->count_own;
    f->owns_words = alloc_words;
    f->alloc = al;
    *out = f;
    return BK_OK;
}

bk_status bk_counting_size(uint64_t n, double p, uint32_t counter_bits, bk_geometry *geom, uint64_t *bytes)
{
    if (bad_bits(counter_bits)) return BK_EINVAL;
    uint32_t bits = counter_bits ? counter_bits : 4;
    bk_geometry g;
    bk_status s = bk_bloom_size(n, p, &g);
    if (s != BK_OK) return s;
    uint64_t b = counter_bytes(g.m, bits);
    if (b == 0 || b > BK_MAX_FILTER_BYTES) return BK_ETOOBIG;
    g.bits_per_key = (double)g.m * bits / (double)n;
    if (geom) *geom = g;
    if (bytes) *bytes = b;
    return BK_OK;
}

bk_status bk_counting_new(uint64_t n, double p, const bk_counting_options *opts, bk_counting **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_counting_options o;
    bk_status os_ = bk__options_read(&o, sizeof o, opts);
    if (os_ != BK_OK) return os_;
    if (bad_bits(o.counter_bits)) return BK_EINVAL;
    if (o.counter_bits == 0) o.counter_bits = 4;
    bk_geometry g;
    bk_status s = bk_counting_size(n, p, o.counter_bits, &g, NULL);
    if (s != BK_OK) return s;
    return alloc_filter(o.allocator, g.m, g.k, o.counter_bits, o.seed, n, p, true, out);
}

bk_status bk_counting_new_mk(uint64_t m, uint32_t k, uint64_t capacity_hint, const bk_counting_options *opts,
                             bk_counting **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_counting_options o;
    bk_status os_ = bk__options_read(&o, sizeof o, opts);
    if (os_ != BK_OK) return os_;
    if (m == 0 || k == 0 || k > BK_MAX_K || bad_bits(o.counter_bits)) return BK_EINVAL;
    if (o.counter_bits == 0) o.counter_bits = 4;
    if (counter_bytes(m, o.counter_bits) == 0) return BK_ETOOBIG;
    uint64_t cap = capacity_hint;
    if (cap == 0) {
        cap = (uint64_t)((double)m * 0.69314718055994530942 / k);
        if (cap == 0) cap = 1;
    }
    return alloc_filter(o.allocator, m, k, o.counter_bits, o.seed, cap, bk_bloom_fpr_exact(m, cap, k), true, out);
}

void bk_counting_free(bk_counting *f)
{
    if (!f) return;
    if (f->owns_words) bk__free_aligned(f->alloc, f->words);
    bk__free(f->alloc, f);
}

bk_status bk_counting_clone(const bk_counting *f, bk_counting **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    bk_status s = alloc_filter(f->alloc, f->m, f->k, f->bits, f->seed, f->capacity, f->fpr_target, true, out);
    if (s != BK_OK) return s;
    bk__copy_words_relaxed((*out)->words, f->words, f->nwords); /* [query]: atomic updates may run */
    (*out)->count_own = bk_counting_count(f);
    return BK_OK;
}

/* ---- insert, remove, query ---- */

bk_status bk_counting_add_hash(bk_counting *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    const uint64_t cmax = f->cmax;
    BK_FOR_EACH_COUNTER(f, h, {
        if (((*wp >> sh) & cmax) != cmax) *wp += UINT64_C(1) << sh;
    });
    (*f->count)++;
    return BK_OK;
}

bk_status bk_counting_add(bk_counting *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_counting_add_hash(f, bk__hash(key, len, f->seed));
}

bk_status bk_counting_remove_hash(bk_counting *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    if (!bk_counting_contains_hash(f, h)) return BK_ENOTFOUND;
    const uint64_t cmax = f->cmax;
    /* A zero here means an earlier probe of this same key (two probes on one counter) already took
     * the last unit: only possible after misuse, and never wrapped. */
    BK_FOR_EACH_COUNTER(f, h, {
        uint64_t c = (*wp >> sh) & cmax;
        if (c != cmax && c != 0) *wp -= UINT64_C(1) << sh;
    });
    if (*f->count) (*f->count)--;
    return BK_OK;
}

bk_status bk_counting_remove(bk_counting *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_counting_remove_hash(f, bk__hash(key, len, f->seed));
}

/* Compare-and-swap on the counter's word: another thread's update of a neighbouring counter makes the
 * CAS fail and retry with the fresh word, so no update is lost; a counter seen at its maximum is left
 * alone, so saturation is sticky whatever the interleaving. Relaxed ordering is enough, as for the
 * classic filter's atomic OR: every counter is published on its own and no reader relies on the order
 * in which counters (or the count) change. */
bk_status bk_counting_add_hash_atomic(bk_counting *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    const uint64_t cmax = f->cmax;
    BK_FOR_EACH_COUNTER(f, h, {
        uint64_t old = __atomic_load_n(wp, __ATOMIC_RELAXED);
        while (((old >> sh) & cmax) != cmax &&
               !__atomic_compare_exchange_n(wp, &old, old + (UINT64_C(1) << sh), true, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED)) {
        }
    });
    __atomic_fetch_add(f->count, 1, __ATOMIC_RELAXED);
    return BK_OK;
}

bk_status bk_counting_add_atomic(bk_counting *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_counting_add_hash_atomic(f, bk__hash(key, len, f->seed));
}

bk_status bk_counting_remove_hash_atomic(bk_counting *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    if (!bk_counting_contains_hash(f, h)) return BK_ENOTFOUND;
    const uint64_t cmax = f->cmax;
    BK_FOR_EACH_COUNTER(f, h, {
        uint64_t old = __atomic_load_n(wp, __ATOMIC_RELAXED);
        for (;;) {
            uint64_t c = (old >> sh) & cmax;
            if (c == cmax || c == 0) break;
            if (__atomic_compare_exchange_n(wp, &old, old - (UINT64_C(1) << sh), true, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                break;
        }
    });
    /* the count never wraps either */
    uint64_t c = __atomic_load_n(f->count, __ATOMIC_RELAXED);
    while (c && !__atomic_compare_exchange_n(f->count, &c, c - 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return BK_OK;
}

bk_status bk_counting_remove_atomic(bk_counting *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_counting_remove_hash_atomic(f, bk__hash(key, len, f->seed));
}

/* Relaxed atomic loads (plain loads on mainstream targets) keep races with the atomic forms defined.
 * No early exit, as in the classic filter: the k loads are independent, so their cache misses overlap. */
bool bk_counting_contains_hash(const bk_counting *f, uint64_t h)
{
    const uint64_t cmax = f->cmax;
    uint64_t all = 1;
    BK_FOR_EACH_COUNTER(f, h, all &= ((__atomic_load_n(wp, __ATOMIC_RELAXED) >> sh) & cmax) != 0);
    return all;
}

bool bk_counting_contains(const bk_counting *f, const void *key, size_t len)
{
    return bk_counting_contains_hash(f, bk__hash(key, len, f->seed));
}

bk_status bk_counting_add_u64(bk_counting *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return bk_counting_add_hash(f, bk__hash_u64(key, f->seed));
}

bk_status bk_counting_remove_u64(bk_counting *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return bk_counting_remove_hash(f, bk__hash_u64(key, f->seed));
}

bool bk_counting_contains_u64(const bk_counting *f, uint64_t key)
{
    return bk_counting_contains_hash(f, bk__hash_u64(key, f->seed));
}

/* ---- batches: hash all, prefetch every probed line, then probe ---- */

#define BK_BATCH 32

BK_INLINE void prefetch_probes(const bk_counting *f, uint64_t h)
{
    BK_FOR_EACH_COUNTER(f, h, { (void)sh; BK_PREFETCH(wp); });
}
BK_INLINE void prefetch_probes_w(const bk_counting *f, uint64_t h)
{
    BK_FOR_EACH_COUNTER(f, h, { (void)sh; BK_PREFETCH_W(wp); });
}

bk_status bk_counting_add_hashes(bk_counting *f, const uint64_t *hashes, size_t n)
{
    if (!f || (!hashes && n)) return BK_EINVAL;
    for (size_t i = 0; i < n; i += BK_BATCH) {
        size_t e = i + BK_BATCH < n ? i + BK_BATCH : n;
        for (size_t j = i; j < e; j++) prefetch_probes_w(f, hashes[j]);
        for (size_t j = i; j < e; j++) bk_counting_add_hash(f, hashes[j]);
    }
    return BK_OK;
}

static size_t contains_hashes(const bk_counting *f, const uint64_t *hashes, size_t n, uint8_t *results)
{
    size_t present = 0;
    for (size_t i = 0; i < n; i += BK_BATCH) {
        size_t e = i + BK_BATCH < n ? i + BK_BATCH : n;
        for (size_t j = i; j < e; j++) prefetch_probes(f, hashes[j]);
        for (size_t j = i; j < e; j++) {
            bool r = bk_counting_contains_hash(f, hashes[j]);
            if (results) results[j] = r;
            present += r;
        }
    }
    return present;
}

static bk_status add_chunk(void *f, const uint64_t *h, size_t n) { return bk_counting_add_hashes(f, h, n); }
static size_t query_chunk(const void *f, const uint64_t *h, size_t n, uint8_t *results)
{
    return contains_hashes(f, h, n, results);
}

bk_status bk_counting_add_many(bk_counting *f, const void *const *keys, const size_t *lens, size_t n)
{
    return f ? bk__add_many(f, f->seed, keys, lens, n, add_chunk) : BK_EINVAL;
}

bk_status bk_counting_contains_hashes(const bk_counting *f, const uint64_t *hashes, size_t n, uint8_t *results,
                                      size_t *hits)
{
    if (!f || (!hashes && n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, contains_hashes(f, hashes, n, results));
}

bk_status bk_counting_contains_many(const bk_counting *f, const void *const *keys, const size_t *lens, size_t n,
                                    uint8_t *results, size_t *hits)
{
    if (!f) return bk__batch_refused(hits);
    return bk__contains_many(f, f->seed, keys, lens, n, results, hits, query_chunk);
}

/* ---- whole-filter operations ---- */

void bk_counting_clear(bk_counting *f)
{
    if (!f) return;
    memset(f->words, 0, f->nwords * 8);
    *f->count = 0;
}

bk_status bk_counting_compatible(const bk_counting *a, const bk_counting *b)
{
    if (!a || !b) return BK_EINVAL;
    if (a->m != b->m || a->k != b->k || a->bits != b->bits || a->seed != b->seed)
        return BK_EINCOMPAT;
    return BK_OK;
}

bk_status bk_counting_union(bk_counting *dst, const bk_counting *src)
{
    bk_status s = bk_counting_compatible(dst, src);
    if (s != BK_OK) return s;
    const uint32_t bits = dst->bits;
    const uint64_t cmax = dst->cmax;
    for (uint64_t i = 0; i < dst->nwords; i++) {
        /* src is [query]: *_atomic updates may be changing its words meanwhile, hence a relaxed load */
        uint64_t a = dst->words[i], b = __atomic_load_n(&src->words[i], __ATOMIC_RELAXED), r = 0;
        if (!b) continue;
        for (unsigned sh = 0; sh < 64; sh += bits) {
            uint64_t c = ((a >> sh) & cmax) + ((b >> sh) & cmax);
            r |= (c > cmax ? cmax : c) << sh;
        }
        dst->words[i] = r;
    }
    uint64_t sum = bk_counting_count(dst) + bk_counting_count(src);
    *dst->count = sum < bk_counting_count(dst) ? UINT64_MAX : sum;
    return BK_OK;
}

/* Non-zero and saturated counters of one word, SWAR: fold each counter's bits onto its lowest bit. */
BK_INLINE void count_word(uint64_t w, uint32_t bits, bool hw, uint64_t *nonzero, uint64_t *full)
{
    if (bits == 4) {
        const uint64_t lo = UINT64_C(0x1111111111111111);
        uint64_t any = w | (w >> 1), all = w & (w >> 1);
        any |= any >> 2;
        all &= all >> 2;
        *nonzero += bk__popcount64(any & lo, hw);
        *full += bk__popcount64(all & lo, hw);
    } else {
        const uint64_t lo = UINT64_C(0x0101010101010101);
        uint64_t any = w | (w >> 1), all = w & (w >> 1);
        any |= any >> 2;
        all &= all >> 2;
        any |= any >> 4;
        all &= all >> 4;
        *nonzero += bk__popcount64(any & lo, hw);
        *full += bk__popcount64(all & lo, hw);
    }
}

static double estimate_cardinality(uint64_t m, uint32_t k, uint64_t set)
{
    double x = (double)set;
    if (set >= m) x = (double)m - 0.5;
    return -((double)m / k) * log1p(-x / (double)m);
}

void bk_counting_stats(const bk_counting *f, bk_stats *out)
{
    uint64_t nonzero = 0, full = 0;
    const bool hw = (bk__cpu_usable() & BK_CPU_POPCNT) != 0;
    for (uint64_t i = 0; i < f->nwords; i++)
        count_word(__atomic_load_n(&f->words[i], __ATOMIC_RELAXED), f->bits, hw, &nonzero, &full);
    uint64_t count = bk_counting_count(f);
    bk__stats_bits(out, BK_TYPE_COUNTING, f->k, f->capacity, count, f->m, f->nwords * 8, nonzero);
    out->est_cardinality = estimate_cardinality(f->m, f->k, nonzero);
    out->fpr_target = f->fpr_target;
    out->fpr_now = pow(out->fill_ratio, f->k);
    /* the classic filter's rule: past the fill expected at capacity (at most 60%) plus noise */
    double limit = bk__saturation_fill(-expm1((double)f->k * (double)f->capacity * log1p(-1.0 / (double)f->m)),
                                       (double)f->m);
    out->saturated = out->fill_ratio > limit || count > f->capacity;
    out->saturated_cells = full;
    out->seed = f->seed;
}

uint64_t bk_counting_counters(const bk_counting *f) { return f->m; }
uint32_t bk_counting_k(const bk_counting *f) { return f->k; }
uint32_t bk_counting_counter_bits(const bk_counting *f) { return f->bits; }
uint64_t bk_counting_count(const bk_counting *f) { return __atomic_load_n(f->count, __ATOMIC_RELAXED); }
uint64_t bk_counting_seed(const bk_counting *f) { return f->seed; }

uint32_t bk_counting_counter(const bk_counting *f, uint64_t i)
{
    if (i >= f->m) return 0;
    uint64_t w = __atomic_load_n(&f->words[i >> f->shift], __ATOMIC_RELAXED);
    return (uint32_t)((w >> ((i & ((UINT64_C(1) << f->shift) - 1)) * f->bits)) & f->cmax);
}

const uint8_t *bk_counting_data(const bk_counting *f, size_t *len)
{
    if (len) *len = (size_t)(f->nwords * 8);
    return (const uint8_t *)f->words;
}

/* ---- serialization (body layout in docs/FORMAT.md) ----
 * offset 0  u32 counter_bits, u32 k, u64 m, u64 capacity, u64 count, f64 fpr_target  (36 bytes)
 * then zero padding to 64, then the counter array: ceil(m * bits / 512) * 64 bytes, little-endian u64
 * words, counter i at bit (i % (64 / bits)) * bits of word i / (64 / bits). */
static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_counting *f = vf;
    return bk__w_bits_body(w, f->bits, f->k, f->m, f->capacity, bk_counting_count(f), f->fpr_target, f->words,
                           f->nwords);
}

static bk_status v_decode(bk_reader *r, void **out)
{
    *out = NULL;
    bk__bits_head h;
    bk_status s = bk__r_bits_head(r, &h);
    if (s != BK_OK) return s;
    const uint32_t bits = h.variant, k = h.k;
    const uint64_t m = h.m;
    if ((bits != 4 && bits != 8) || k == 0 || k > BK_MAX_K) return BK_ECORRUPT;
    uint64_t bytes = counter_bytes(m, bits);
    if (bytes == 0 || bytes > BK_MAX_FILTER_BYTES) return BK_ECORRUPT;
    const uint8_t *data;
    if ((s = bk__r_array_begin(r, bytes, &data))) return s;
    bk_counting *f;
    s = alloc_filter(r->alloc, m, k, bits, r->seed, h.capacity, h.fpr, !r->borrow, &f);
    if (s != BK_OK) return s;
    /* Counters past m must be zero: anything else was not written by us. */
    s = bk__r_bits_end(r, &h, bytes, data, m * bits, &f->words, &f->count, &f->count_own);
    if (s == BK_OK) *out = f;
    else bk_counting_free(f);
    return s;
}

BK__VT_WRITE_ADAPTERS(counting)
static bk_status v_add_hash_atomic(void *f, uint64_t h) { return bk_counting_add_hash_atomic(f, h); }
BK__VT_ADAPTERS(counting)
static uint64_t v_count(const void *f) { return bk_counting_count(f); }
static bk_status v_compatible(const void *a, const void *b) { return bk_counting_compatible(a, b); }
static bk_status v_remove_hash(void *f, uint64_t h) { return bk_counting_remove_hash(f, h); }
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n, size_t *done)
{
    return bk__vt_all_or_none(bk_counting_add_hashes(f, h, n), n, done);
}
static bk_status v_merge(void *d, const void *s) { return bk_counting_union(d, s); }

BK_HIDDEN const bk_vtable bk__counting_vtable = {
    .type = BK_TYPE_COUNTING,
    BK__VT_ENTRIES,
    BK__VT_WRITE_ENTRIES,
    .remove_hash = v_remove_hash,
    .add_hashes = v_add_hashes,
    .merge = v_merge,
    .add_hash_atomic = v_add_hash_atomic,
    .count = v_count,
    .compatible = v_compatible,
};
