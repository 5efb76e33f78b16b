/*
 * Blocked Bloom filter: every probe of a key inside one block (256 or 512 bits), one memory access
 * per query. The probes and the scalar, AVX2 and AVX-512 kernels are the blocked engine's
 * (core/blocked_engine.h, core/blocked_kernels.c); a filter picks its path once (a copy of the path's
 * table of functions), so nothing dispatches per key. This file: lifetime, counts, the atomic
 * insert, whole-filter operations, statistics and the body format.
 */
#include <math.h>
#include "filters/internal.h"
#include "core/simd.h"
#include "core/blocked_engine.h"
#include "core/blocked1024.h"
#include "bloomkit/reader.h"

struct bk_blocked {
    bk__blk e;            /* words, blocks, k, seed: what the engine's kernels use; first, so its hot
                           * header (e.contains_u64 and the three fields its kernel reads) starts the
                           * struct and bk_blocked_contains_u64 is one indirect jump */
    bk__blk_ops ops;      /* the path's kernels (a copy: one load per call) */
    uint64_t nwords;
    bk_blocked_layout layout;
    bk_simd simd;
    uint64_t capacity;
    double fpr_target;
    uint64_t count_own;
    bk__stripes *stripes; /* atomic inserts' counts when count == &count_own (see internal.h) */
    bool owns_words;
    const bk_allocator *alloc; /* everything this filter owns is allocated with it */
};

static uint32_t block_bits(bk_blocked_layout l) { return l == BK_BLOCKED_SPLIT256 ? 256 : 512; }

/* log2 of the 64-bit words per block */
static unsigned block_shift(bk_blocked_layout l) { return l == BK_BLOCKED_SPLIT256 ? 2 : 3; }

BK_INLINE uint64_t load_relaxed(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* ================= path selection ================= */

static bk_status set_path(bk_blocked *f, bk_simd want)
{
    if (want < BK_SIMD_AUTO || want > BK_SIMD_AVX512) return BK_EINVAL;
    if (want > bk_simd_best()) return BK_ENOTSUP;
    f->simd = (bk_simd)bk__simd_resolve(want);
    f->ops = *bk__blk_ops_for(f->layout, f->simd);
    f->e.contains_u64 = f->ops.contains_u64;
    return BK_OK;
}

/* ================= lifetime ================= */

static bk_status alloc_filter(const bk_allocator *a, bk_blocked_layout layout, uint64_t blocks, uint32_t k, uint64_t seed,
                              bk_simd simd, uint64_t capacity, double fpr_target, bool alloc_words,
                              bk_blocked **out)
{
    uint64_t bytes = blocks * (block_bits(layout) / 8);
    if (blocks == 0 || blocks > BK_MAX_FILTER_BYTES / (block_bits(layout) / 8) || bytes > SIZE_MAX / 2)
        return BK_ETOOBIG;
    uint64_t *words;
    const bk_allocator *al = bk__allocator(a);
    bk_status s;
    bk_blocked *f = bk__new_with_array(al, sizeof *f, bytes, alloc_words, &words, &s);
    if (!f) return s;
    f->alloc = al;
    f->layout = layout;
    f->e.k = k;
    f->e.words = words;
    f->owns_words = alloc_words;
    if ((s = set_path(f, simd)) != BK_OK) {
        bk_blocked_free(f);
        return s;
    }
    f->e.blocks = blocks;
    f->nwords = bytes / 8;
    bk__blk_set_k(&f->e, k);
    f->e.seed = seed;
    f->e.u64_fold = bk__hash_u64_fold(bk__hash_u64_flip(seed));
    f->capacity = capacity;
    f->fpr_target = fpr_target;
    f->e.count = &f->count_own;
    *out = f;
    return BK_OK;
}

static bool bad_layout(bk_blocked_layout l) { return l != BK_BLOCKED_SPLIT256 && l != BK_BLOCKED_512; }

bk_status bk_blocked_new(uint64_t n, double p, const bk_blocked_options *opts, bk_blocked **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_blocked_options o;
    bk_status os_ = bk__options_read(&o, sizeof o, opts);
    if (os_ != BK_OK) return os_;
    if (bad_layout(o.layout)) return BK_EINVAL;
    bk_geometry g;
    bk_status s = bk__blocked_size_mk(n, p, (int)o.layout, &g); /* bk_blocked_size's m and k */
    if (s != BK_OK) return s;
    return alloc_filter(o.allocator, o.layout, g.m / block_bits(o.layout), g.k, o.seed, BK_SIMD_AUTO, n, p, true, out);
}

bk_status bk_blocked_new_mk(uint64_t m, uint32_t k, uint64_t capacity_hint, const bk_blocked_options *opts,
                            bk_blocked **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_blocked_options o;
    bk_status os_ = bk__options_read(&o, sizeof o, opts);
    if (os_ != BK_OK) return os_;
    if (bad_layout(o.layout) || m == 0) return BK_EINVAL;
    if (o.layout == BK_BLOCKED_SPLIT256) {
        if (k != 0 && k != 8) return BK_EINVAL;
        k = 8;
    } else if (k > BK_BLOCKED_MAX_K || (k == 0 && capacity_hint == 0)) {
        return BK_EINVAL;
    }
    if (m > BK_MAX_FILTER_BYTES * 8) return BK_ETOOBIG;
    uint64_t bb = block_bits(o.layout), blocks = (m + bb - 1) / bb;
    m = blocks * bb;
    if (k == 0) k = bk_blocked_optimal_k(o.layout, (double)m / (double)capacity_hint);
    uint64_t cap = capacity_hint;
    if (cap == 0) {
        cap = (uint64_t)((double)m * 0.69314718055994530942 / k);
        if (cap == 0) cap = 1;
    }
    return alloc_filter(o.allocator, o.layout, blocks, k, o.seed, BK_SIMD_AUTO, cap, bk_blocked_fpr(m, cap, o.layout, k), true, out);
}

void bk_blocked_free(bk_blocked *f)
{
    if (!f) return;
    if (f->owns_words) bk__free_aligned(f->alloc, f->e.words);
    bk__free_aligned(f->alloc, f->stripes);
    bk__free(f->alloc, f);
}

bk_status bk_blocked_clone(const bk_blocked *f, bk_blocked **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    bk_status s = alloc_filter(f->alloc, f->layout, f->e.blocks, f->e.k, f->e.seed, f->simd, f->capacity, f->fpr_target, true, out);
    if (s != BK_OK) return s;
    bk__copy_words_relaxed((*out)->e.words, f->e.words, f->nwords); /* [query]: atomic inserts may run */
    (*out)->count_own = bk_blocked_count(f);
    return BK_OK;
}

/* ================= insert and query ================= */

bk_status bk_blocked_add_hash(bk_blocked *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    f->ops.add(&f->e, h);
    (*f->e.count)++;
    return BK_OK;
}

/* The byte calls: an 8-byte key hashes to the same value as the uint64 key of the same bytes
 * (bk__hash_u64_keyed), so it takes the uint64 kernels; other lengths go through a function of their
 * own, which keeps the 8-byte path free of the stack frame that the general hash's call needs. */
static __attribute__((noinline)) void add_any_len(bk_blocked *f, const void *key, size_t len)
{
    f->ops.add(&f->e, bk__hash(key, len, f->e.seed));
}

bk_status bk_blocked_add(bk_blocked *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    if (BK_LIKELY(len == 8)) {
        uint64_t k;
        memcpy(&k, key, 8);
        return f->ops.add_u64(&f->e, k); /* counts the key */
    }
    add_any_len(f, key, len);
    (*f->e.count)++;
    return BK_OK;
}

bool bk_blocked_contains_hash(const bk_blocked *f, uint64_t h) { return f->ops.contains(&f->e, h); }

static __attribute__((noinline)) bool contains_any_len(const bk_blocked *f, const void *key, size_t len)
{
    return f->ops.contains(&f->e, bk__hash(key, len, f->e.seed));
}

bool bk_blocked_contains(const bk_blocked *f, const void *key, size_t len)
{
    if (BK_LIKELY(len == 8)) {
        uint64_t k;
        memcpy(&k, key, 8);
        return f->e.contains_u64(&f->e, k);
    }
    return contains_any_len(f, key, len);
}

bk_status bk_blocked_add_u64(bk_blocked *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return f->ops.add_u64(&f->e, key); /* counts the key */
}

bool bk_blocked_contains_u64(const bk_blocked *f, uint64_t key) { return f->e.contains_u64(&f->e, key); }

/*
 * Atomic insert, the same on every path (scalar: TSan sees every access, and a vector OR cannot be
 * made atomic). Relaxed ordering is enough: each bit is published on its own, no reader relies on the
 * order in which bits or the count become visible, and fetch_or never loses another writer's bits.
 * Words already holding their bits are not written, which keeps shared lines clean between cores.
 */
bk_status bk_blocked_add_hash_atomic(bk_blocked *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    uint64_t m[8], *b = bk__blk_block(f->e.words, f->e.blocks, h, block_shift(f->layout));
    unsigned words = bk__blk_mask(f->layout, f->e.k, (uint32_t)h, m);
    for (unsigned j = 0; j < words; j++)
        if (m[j] && (load_relaxed(&b[j]) & m[j]) != m[j]) __atomic_fetch_or(&b[j], m[j], __ATOMIC_RELAXED);
    if (f->e.count == &f->count_own)
        bk__count_atomic(f->alloc, &f->stripes, f->e.count, 1);
    else
        __atomic_fetch_add(f->e.count, 1, __ATOMIC_RELAXED); /* the count inside a shared mapping */
    return BK_OK;
}

bk_status bk_blocked_add_atomic(bk_blocked *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_blocked_add_hash_atomic(f, bk__hash(key, len, f->e.seed));
}

bk_status bk_blocked_add_hashes_atomic(bk_blocked *f, const uint64_t *hashes, size_t n)
{
    if (!f || (!hashes && n)) return BK_EINVAL;
    const unsigned shift = block_shift(f->layout);
    size_t pre = n < BK_PF ? n : BK_PF;
    for (size_t i = 0; i < pre; i++) BK_PREFETCH_W(bk__blk_block(f->e.words, f->e.blocks, hashes[i], shift));
    for (size_t i = 0; i < n; i++) {
        if (i + BK_PF < n) BK_PREFETCH_W(bk__blk_block(f->e.words, f->e.blocks, hashes[i + BK_PF], shift));
        bk_blocked_add_hash_atomic(f, hashes[i]);
    }
    return BK_OK;
}

bk_status bk_blocked_add_many_atomic(bk_blocked *f, const void *const *keys, const size_t *lens, size_t n)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return BK_EINVAL;
    uint64_t h[64];
    for (size_t i = 0, c = 0; i < n; i += c) {
        c = bk__hash_chunk(h, 64, keys, lens, i, n, f->e.seed);
        bk_blocked_add_hashes_atomic(f, h, c);
    }
    return BK_OK;
}

bk_status bk_blocked_add_hashes(bk_blocked *f, const uint64_t *hashes, size_t n)
{
    if (!f || (!hashes && n)) return BK_EINVAL;
    f->ops.add_hashes(&f->e, hashes, n);
    *f->e.count += n;
    return BK_OK;
}

/* The blocks cut into nparts ranges at even block numbers (two 256-bit blocks share a line): the
 * hashes whose block is in this part are gathered a few hundred at a time and added by the path's
 * batch insert. */
bk_status bk_blocked_add_hashes_part(bk_blocked *f, const uint64_t *hashes, size_t n, unsigned part,
                                     unsigned nparts)
{
    if (!f || (!hashes && n) || part >= nparts) return BK_EINVAL;
    const uint64_t pairs = (f->e.blocks + 1) / 2;
    uint64_t lo = pairs * part / nparts * 2, hi = pairs * (part + 1) / nparts * 2;
    if (hi > f->e.blocks) hi = f->e.blocks;
    uint64_t mine[256];
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        mine[c] = hashes[i];
        c += bk__range64(hashes[i], f->e.blocks) - lo < hi - lo;
        if (c == 256) {
            f->ops.add_hashes(&f->e, mine, c);
            c = 0;
        }
    }
    if (c) f->ops.add_hashes(&f->e, mine, c);
    return BK_OK;
}

bk_status bk_blocked_contains_hashes(const bk_blocked *f, const uint64_t *hashes, size_t n, uint8_t *results,
                                     size_t *hits)
{
    if (!f || (!hashes && n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, n ? f->ops.contains_hashes(&f->e, hashes, n, results) : 0);
}

bk_status bk_blocked_add_many(bk_blocked *f, const void *const *keys, const size_t *lens, size_t n)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return BK_EINVAL;
    f->ops.add_many(&f->e, keys, lens, n);
    *f->e.count += n;
    return BK_OK;
}

bk_status bk_blocked_contains_many(const bk_blocked *f, const void *const *keys, const size_t *lens, size_t n,
                                   uint8_t *results, size_t *hits)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, n ? f->ops.contains_many(&f->e, keys, lens, n, results) : 0);
}

/* ================= whole-filter operations ================= */

void bk_blocked_clear(bk_blocked *f)
{
    if (!f) return;
    memset(f->e.words, 0, f->nwords * 8);
    *f->e.count = 0;
    bk__stripes_clear(&f->stripes);
}

bk_status bk_blocked_compatible(const bk_blocked *a, const bk_blocked *b)
{
    if (!a || !b) return BK_EINVAL;
    if (a->layout != b->layout || a->e.blocks != b->e.blocks || a->e.k != b->e.k || a->e.seed != b->e.seed)
        return BK_EINCOMPAT;
    return BK_OK;
}

/* Chance that one key leaves a given bit of its block clear is 1 - c; with Poisson(lambda) keys per
 * block a bit is clear with chance exp(-lambda c), so the fill gives lambda and n = lambda * blocks. */
static double per_key_bit_chance(const bk_blocked *f)
{
    if (f->layout == BK_BLOCKED_SPLIT256) return 1.0 / 32.0;
    return -expm1((double)f->e.k * log1p(-1.0 / 512.0));
}

static double estimate_cardinality(const bk_blocked *f, uint64_t set)
{
    double m = (double)f->nwords * 64.0, x = (double)set;
    if (set >= f->nwords * 64) x = m - 0.5;
    return -log1p(-x / m) / per_key_bit_chance(f) * (double)f->e.blocks;
}

static bk_status combine(bk_blocked *dst, const bk_blocked *src, bool is_union)
{
    bk_status s = bk_blocked_compatible(dst, src);
    if (s != BK_OK) return s;
    const uint64_t na = bk_blocked_count(dst), nb = bk_blocked_count(src);
    bk__combine_words(dst->e.words, src->e.words, dst->nwords, is_union);
    bk__stripes_clear(&dst->stripes);
    *dst->e.count = bk__combined_count(estimate_cardinality(dst, bk__popcount_words(dst->e.words, dst->nwords)), na,
                                      nb, is_union);
    return BK_OK;
}

bk_status bk_blocked_union(bk_blocked *dst, const bk_blocked *src) { return combine(dst, src, true); }
bk_status bk_blocked_intersect(bk_blocked *dst, const bk_blocked *src) { return combine(dst, src, false); }

/* The filter's real FPR for a uniformly random absent key: the mean over blocks of the chance that
 * every probe hits a set bit (SPLIT256: product of the eight words' fills; 512: fill^k). */
static double fpr_of_bits(const bk_blocked *f)
{
    double sum = 0.0;
    if (f->layout == BK_BLOCKED_SPLIT256) {
        const bool hw = (bk__cpu_usable() & BK_CPU_POPCNT) != 0;
        for (uint64_t b = 0; b < f->e.blocks; b++) {
            const uint64_t *w = f->e.words + b * 4;
            double p = 1.0;
            for (int j = 0; j < 4; j++) {
                uint64_t v = load_relaxed(&w[j]);
                p *= (double)bk__popcount64((uint32_t)v, hw) * (double)bk__popcount64(v >> 32, hw);
            }
            sum += p;
        }
        return sum / (double)f->e.blocks / 1099511627776.0; /* 32^8 */
    }
    double table[513];
    for (int c = 0; c <= 512; c++) table[c] = pow(c / 512.0, (double)f->e.k);
    for (uint64_t b = 0; b < f->e.blocks; b++) sum += table[bk__popcount_words(f->e.words + b * 8, 8)];
    return sum / (double)f->e.blocks;
}

void bk_blocked_stats(const bk_blocked *f, bk_stats *out)
{
    uint64_t set = bk__popcount_words(f->e.words, f->nwords);
    uint64_t count = bk_blocked_count(f);
    double m = (double)f->nwords * 64.0;
    bk__stats_bits(out, BK_TYPE_BLOCKED, f->e.k, f->capacity, count, f->nwords * 64, f->nwords * 8, set);
    out->est_cardinality = estimate_cardinality(f, set);
    out->fpr_target = f->fpr_target;
    out->fpr_now = fpr_of_bits(f);
    /* Fill expected at capacity (at most 60%) plus a noise margin, as for the classic filter. */
    double limit = bk__saturation_fill(-expm1(-(double)f->capacity / (double)f->e.blocks * per_key_bit_chance(f)), m);
    out->saturated = out->fill_ratio > limit || count > f->capacity;
    out->seed = f->e.seed;
}

uint64_t bk_blocked_bits(const bk_blocked *f) { return f->nwords * 64; }
uint32_t bk_blocked_k(const bk_blocked *f) { return f->e.k; }
uint64_t bk_blocked_count(const bk_blocked *f)
{
    return __atomic_load_n(f->e.count, __ATOMIC_RELAXED) + bk__stripes_sum(&f->stripes);
}
uint64_t bk_blocked_seed(const bk_blocked *f) { return f->e.seed; }
bk_blocked_layout bk_blocked_layout_of(const bk_blocked *f) { return f->layout; }
bk_simd bk_blocked_simd(const bk_blocked *f) { return f->simd; }
bk_status bk_blocked_set_simd(bk_blocked *f, bk_simd s)
{
    if (!f) return BK_EINVAL;
    bk_blocked tmp = *f;
    bk_status st = set_path(&tmp, s);
    if (st == BK_OK) {
        f->simd = tmp.simd;
        f->ops = tmp.ops;
        f->e.contains_u64 = tmp.e.contains_u64;
    }
    return st;
}
bk_status bk_blocked_get_view(bk_blocked *f, bk_blocked_view *out)
{
    if (!f || !out) return BK_EINVAL;
    if (f->layout != BK_BLOCKED_SPLIT256) return BK_ENOTSUP;
    out->words = f->e.words;
    out->blocks = f->e.blocks;
    return BK_OK;
}
bk_status bk_blocked_get_reader(const bk_blocked *f, bk_blocked_reader *out)
{
    if (!f || !out) return BK_EINVAL;
    if (f->layout != BK_BLOCKED_SPLIT256) return BK_ENOTSUP;
    out->view.words = f->e.words;
    out->view.blocks = f->e.blocks;
    out->seed = f->e.seed;
    out->flip = bk__hash_u64_flip(f->e.seed);
    return BK_OK;
}
void bk_blocked_note_added(bk_blocked *f, uint64_t n)
{
    if (f) *f->e.count += n;
}
const uint8_t *bk_blocked_data(const bk_blocked *f, size_t *len)
{
    if (len) *len = (size_t)(f->nwords * 8);
    return (const uint8_t *)f->e.words;
}

/* ================= serialization =================
 * Body (all little-endian; docs/FORMAT.md):
 *   offset 0   u32 layout      0 = SPLIT256 (256-bit blocks, k = 8), 1 = 512 (512-bit blocks)
 *   offset 4   u32 k           8 for SPLIT256; 1..16 for 512
 *   offset 8   u64 m           bits: blocks * block bits (256 or 512), > 0
 *   offset 16  u64 capacity    keys the filter was sized for, >= 1
 *   offset 24  u64 count       keys inserted (atomic inserts update it in place in shared mappings)
 *   offset 32  f64 fpr_target  in [0, 1]
 *   offset 40  zero padding to offset 64
 *   offset 64  the blocks: m / 8 bytes, little-endian u64 words; block b is words [b*w, (b+1)*w) with
 *              w = 4 (SPLIT256) or 8 (512); bit i of a block is bit (i & 63) of its word (i >> 6).
 * The hash seed is in the container header. Probe positions: see core/blocked_engine.h
 * (the engine's salt table and bk__range64 define them, so they are part of the format).
 */
static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_blocked *f = vf;
    return bk__w_bits_body(w, (uint32_t)f->layout, f->e.k, f->nwords * 64, f->capacity, bk_blocked_count(f),
                           f->fpr_target, f->e.words, f->nwords);
}

static bk_status v_decode(bk_reader *r, void **out)
{
    *out = NULL;
    bk__bits_head h;
    bk_status s = bk__r_bits_head(r, &h);
    if (s != BK_OK) return s;
    const bk_blocked_layout layout = (bk_blocked_layout)h.variant;
    const uint32_t k = h.k;
    const uint64_t m = h.m;
    if (bad_layout(layout)) return BK_ECORRUPT;
    uint32_t bb = block_bits(layout);
    bool k_ok = layout == BK_BLOCKED_SPLIT256 ? k == 8 : (k >= 1 && k <= BK_BLOCKED_MAX_K);
    if (!k_ok || m % bb) return BK_ECORRUPT;
    uint64_t bytes = m / 8;
    const uint8_t *data;
    if ((s = bk__r_array_begin(r, bytes, &data))) return s;
    bk_blocked *f;
    s = alloc_filter(r->alloc, layout, m / bb, k, r->seed, BK_SIMD_AUTO, h.capacity, h.fpr, !r->borrow, &f);
    if (s != BK_OK) return s;
    s = bk__r_bits_end(r, &h, bytes, data, m, &f->e.words, &f->e.count, &f->count_own);
    if (s == BK_OK) *out = f;
    else bk_blocked_free(f);
    return s;
}

BK__VT_ADAPTERS(blocked)
BK__VT_WRITE_ADAPTERS(blocked)
static uint64_t v_count(const void *f) { return bk_blocked_count(f); }
static bk_status v_compatible(const void *a, const void *b) { return bk_blocked_compatible(a, b); }
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n, size_t *done)
{
    return bk__vt_all_or_none(bk_blocked_add_hashes(f, h, n), n, done);
}
static bk_status v_add_hash_atomic(void *f, uint64_t h) { return bk_blocked_add_hash_atomic(f, h); }
static void v_set_count(void *p, uint64_t n)
{
    bk_blocked *f = p;
    bk__stripes_clear(&f->stripes);
    *f->e.count = n;
}
static bk_status v_add_hashes_atomic(void *f, const uint64_t *h, size_t n, size_t *done)
{
    return bk__vt_all_or_none(bk_blocked_add_hashes_atomic(f, h, n), n, done);
}
static bk_status v_merge(void *d, const void *s) { return bk_blocked_union(d, s); }

BK_HIDDEN const bk_vtable bk__blocked_vtable = {
    .type = BK_TYPE_BLOCKED,
    BK__VT_ENTRIES,
    BK__VT_WRITE_ENTRIES,
    .add_hashes = v_add_hashes,
    .merge = v_merge,
    .add_hash_atomic = v_add_hash_atomic,
    .add_hashes_atomic = v_add_hashes_atomic,
    .set_count = v_set_count,
    .count = v_count,
    .compatible = v_compatible,
};
