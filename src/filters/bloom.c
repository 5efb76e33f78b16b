/* Classic Bloom filter: standard and partitioned layouts. */
#include <math.h>
#include "filters/internal.h"
#include "core/simd.h"
#include "bloomkit/blocked.h"
#include "bloomkit/bloom.h"
#include "bloomkit/filter.h"

typedef bool (*bk__bloom_query)(const uint64_t *w, uint64_t slice, uint32_t k, uint64_t h);

struct bk_bloom {
    uint64_t *words;     /* m bits, rounded up to whole 64-byte lines; bits past m stay zero */
    uint64_t nwords;
    uint64_t m;          /* bits addressed */
    uint64_t slice;      /* partitioned: m / k; standard: m */
    uint32_t k;
    bk_layout layout;
    uint64_t seed;
    uint64_t u64_flip;   /* bk__hash_u64_flip(seed): the uint64 calls' seed part, computed once */
    uint64_t capacity;
    double fpr_target;
    uint64_t count_own;
    uint64_t *count;     /* &count_own, or the count field inside a shared mapping */
    bk__stripes *stripes; /* atomic inserts' counts when count == &count_own (see internal.h) */
    bool owns_words;
    const bk_allocator *alloc; /* everything this filter owns is allocated with it */
    bk__bloom_query query; /* the query loop for this layout and CPU (choose_query) */
    bool fast_add;         /* standard layout on a CPU with BMI2: the insert takes add_standard_bmi2 */
};

/* ---- probes: enhanced double hashing, multiply-shift range mapping ---- */

/* Calls BODY with `bit` set to each of the k probe positions of hash h (the classic probe iterator,
 * core/base.h): over all m bits, or probe i in slice i of the partitioned layout. */
#define BK_FOR_EACH_PROBE(f, h, BODY)                                          \
    do {                                                                       \
        bk__probe p_ = bk__probe_start(h);                                     \
        const uint32_t k_ = (f)->k;                                            \
        if ((f)->layout == BK_LAYOUT_STANDARD) {                               \
            const uint64_t m_ = (f)->m;                                        \
            for (uint32_t i_ = 0; i_ < k_; i_++) {                             \
                uint64_t bit = bk__probe_at(&p_, m_);                          \
                BODY;                                                          \
                bk__probe_next(&p_, i_);                                       \
            }                                                                  \
        } else {                                                               \
            uint64_t base_ = 0, s_ = (f)->slice;                               \
            for (uint32_t i_ = 0; i_ < k_; i_++, base_ += s_) {                \
                uint64_t bit = base_ + bk__probe_at(&p_, s_);                  \
                BODY;                                                          \
                bk__probe_next(&p_, i_);                                       \
            }                                                                  \
        }                                                                      \
    } while (0)

static bk__bloom_query choose_query(bk_layout layout, uint64_t m, uint32_t k);
static bool query_standard(const uint64_t *w, uint64_t m, uint32_t k, uint64_t h);

static bk_status alloc_filter(const bk_allocator *a, uint64_t m, uint32_t k, bk_layout layout, uint64_t seed, uint64_t capacity,
                              double fpr_target, bool alloc_words, bk_bloom **out)
{
    uint64_t bytes = bk__bits_to_bytes64(m), *words;
    const bk_allocator *al = bk__allocator(a);
    bk_status s;
    bk_bloom *f = bk__new_with_array(al, sizeof *f, bytes, alloc_words, &words, &s);
    if (!f) return s;
    f->words = words;
    f->nwords = bytes / 8;
    f->m = m;
    f->slice = layout == BK_LAYOUT_PARTITIONED ? m / k : m;
    f->k = k;
    f->layout = layout;
    f->seed = seed;
    f->u64_flip = bk__hash_u64_flip(seed);
    f->capacity = capacity;
    f->fpr_target = fpr_target;
    f->count = &f->count_own;
    f->owns_words = alloc_words;
    f->alloc = al;
    f->query = choose_query(layout, m, k);
    f->fast_add = f->query != query_standard && layout == BK_LAYOUT_STANDARD;
    *out = f;
    return BK_OK;
}

static double layout_fpr(bk_layout layout, uint64_t m, uint64_t n, uint32_t k)
{
    return layout == BK_LAYOUT_PARTITIONED ? bk_bloom_fpr_partitioned(m, n, k) : bk_bloom_fpr_exact(m, n, k);
}

bk_status bk_bloom_new(uint64_t n, double p, const bk_bloom_options *opts, bk_bloom **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_bloom_options o;
    bk_status os_ = bk__options_read(&o, sizeof o, opts);
    if (os_ != BK_OK) return os_;
    if (o.layout != BK_LAYOUT_STANDARD && o.layout != BK_LAYOUT_PARTITIONED) return BK_EINVAL;
    bk_geometry g;
    bk_status s = o.layout == BK_LAYOUT_PARTITIONED ? bk_bloom_size_partitioned(n, p, &g) : bk_bloom_size(n, p, &g);
    if (s != BK_OK) return s;
    return alloc_filter(o.allocator, g.m, g.k, o.layout, o.seed, n, p, true, out);
}

bk_status bk_bloom_new_mk(uint64_t m, uint32_t k, uint64_t capacity_hint, const bk_bloom_options *opts,
                          bk_bloom **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_bloom_options o;
    bk_status os_ = bk__options_read(&o, sizeof o, opts);
    if (os_ != BK_OK) return os_;
    if (m == 0 || k == 0 || k > BK_MAX_K) return BK_EINVAL;
    if (o.layout != BK_LAYOUT_STANDARD && o.layout != BK_LAYOUT_PARTITIONED) return BK_EINVAL;
    if (m > BK_MAX_FILTER_BYTES * 8) return BK_ETOOBIG;
    if (o.layout == BK_LAYOUT_PARTITIONED) m = (m + k - 1) / k * k;
    uint64_t cap = capacity_hint;
    if (cap == 0) {
        /* the n at which this geometry is optimal: k = (m/n) ln 2 */
        cap = (uint64_t)((double)m * 0.69314718055994530942 / k);
        if (cap == 0) cap = 1;
    }
    return alloc_filter(o.allocator, m, k, o.layout, o.seed, cap, layout_fpr(o.layout, m, cap, k), true, out);
}

void bk_bloom_free(bk_bloom *f)
{
    if (!f) return;
    if (f->owns_words) bk__free_aligned(f->alloc, f->words);
    bk__free_aligned(f->alloc, f->stripes);
    bk__free(f->alloc, f);
}

bk_status bk_bloom_clone(const bk_bloom *f, bk_bloom **out)
{
    if (!f || !out) return BK_EINVAL;
    bk_status s = alloc_filter(f->alloc, f->m, f->k, f->layout, f->seed, f->capacity, f->fpr_target, true, out);
    if (s != BK_OK) return s;
    bk__copy_words_relaxed((*out)->words, f->words, f->nwords); /* [query]: atomic inserts may run */
    (*out)->count_own = bk_bloom_count(f);
    return BK_OK;
}

/* ---- insert and query ---- */

#if defined(__x86_64__) && defined(__GNUC__)
/* The standard layout's insert for BMI2, as query_standard_bmi2 below: mulx, shrx and shlx take no
 * fixed registers. The same bits as BK_FOR_EACH_PROBE. */
__attribute__((target("bmi2"))) static void add_standard_bmi2(uint64_t *w, uint64_t m, uint32_t k, uint64_t h)
{
    uint64_t x = h, y = bk__remix(h), step = bk__probe_step(h), z = 0, six = 6;
    register uint64_t mr __asm__("rdx") = m;
    for (uint32_t i = k; i; i--) {
        uint64_t bit, lo, word;
        __asm__("mulx %3, %0, %1\n\tshrx %5, %1, %2" : "=&r"(lo), "=&r"(bit), "=&r"(word) : "r"(x), "r"(mr), "r"(six));
        (void)lo;
        w[word] |= UINT64_C(1) << (bit & 63);
        x += y; /* bk__probe_next: x += y, y += i * step */
        y += z;
        z += step;
    }
}
#endif

bk_status bk_bloom_add_hash(bk_bloom *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    uint64_t *w = f->words;
#if defined(__x86_64__) && defined(__GNUC__)
    if (f->fast_add) {
        add_standard_bmi2(w, f->m, f->k, h);
        (*f->count)++;
        return BK_OK;
    }
#endif
    BK_FOR_EACH_PROBE(f, h, w[bit >> 6] |= UINT64_C(1) << (bit & 63));
    (*f->count)++;
    return BK_OK;
}

/* Keys of other lengths than 8 in a function of their own, so the 8-byte path has no stack frame
 * for the general hash's call. */
static __attribute__((noinline)) bk_status add_any_len(bk_bloom *f, const void *key, size_t len)
{
    return bk_bloom_add_hash(f, bk__hash(key, len, f->seed));
}

bk_status bk_bloom_add(bk_bloom *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    if (BK_LIKELY(len == 8)) {
        uint64_t k;
        memcpy(&k, key, 8);
        return bk_bloom_add_hash(f, bk__hash_u64_keyed(k, f->u64_flip));
    }
    return add_any_len(f, key, len);
}

/* Relaxed ordering is enough: each bit is published on its own, no reader relies on the order in
 * which bits (or the count) become visible, and OR never loses another writer's bits. */
bk_status bk_bloom_add_hash_atomic(bk_bloom *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    uint64_t *w = f->words;
    BK_FOR_EACH_PROBE(f, h, {
        uint64_t mask = UINT64_C(1) << (bit & 63);
        if (!(__atomic_load_n(&w[bit >> 6], __ATOMIC_RELAXED) & mask))
            __atomic_fetch_or(&w[bit >> 6], mask, __ATOMIC_RELAXED);
    });
    if (f->count == &f->count_own)
        bk__count_atomic(f->alloc, &f->stripes, f->count, 1);
    else
        __atomic_fetch_add(f->count, 1, __ATOMIC_RELAXED); /* the count inside a shared mapping */
    return BK_OK;
}

bk_status bk_bloom_add_atomic(bk_bloom *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_bloom_add_hash_atomic(f, bk__hash(key, len, f->seed));
}

/* The query loops, one per layout (and on x86 one more built for BMI2), chosen once when the filter
 * is made (alloc_filter) and called through f->query: the call then carries no layout test, no CPU
 * test and no callee-saved spills of a loop written for both layouts. The same probes and answers in
 * every form (tests/test_probes.c, test_golden). */
static bool query_standard(const uint64_t *w, uint64_t m, uint32_t k, uint64_t h)
{
    bk__probe p = bk__probe_start(h);
    uint64_t all = 1;
    for (uint32_t i = 0; i < k; i++) {
        uint64_t bit = bk__probe_at(&p, m);
        all &= __atomic_load_n(&w[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63);
        bk__probe_next(&p, i);
    }
    return all & 1;
}

static bool query_partitioned(const uint64_t *w, uint64_t slice, uint32_t k, uint64_t h)
{
    bk__probe p = bk__probe_start(h);
    uint64_t all = 1, base = 0;
    for (uint32_t i = 0; i < k; i++, base += slice) {
        uint64_t bit = base + bk__probe_at(&p, slice);
        all &= __atomic_load_n(&w[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63);
        bk__probe_next(&p, i);
    }
    return all & 1;
}

#if defined(__x86_64__) && defined(__GNUC__)
#  define BK_BLOOM_BMI2 1
/* The standard loop for BMI2: mulx takes m in rdx once and leaves rax free, shrx shifts by any
 * register (no move into cl), and the loop counts down: 11 instructions per probe instead of 14.
 * (GCC does not pick mulx for a 128-bit product by itself, hence the one asm statement.) The empty
 * asm on `all` keeps each probe's test where it is written: without it GCC reassociates the AND
 * chain to the end of an unrolled query, keeping all k words and shift counts live at once (k = 7:
 * six callee-saved registers pushed and popped, five words spilled to the stack, 11 instructions
 * more per call). The loads stay independent of each other either way: their addresses come from
 * the x, y chain alone. */
#define BK_BLOOM_BMI2_PROBE                                                                              \
    do {                                                                                                 \
        uint64_t bit, lo, word;                                                                          \
        __asm__("mulx %3, %0, %1\n\tshrx %5, %1, %2"                                                    \
                : "=&r"(lo), "=&r"(bit), "=&r"(word) : "r"(x), "r"(mr), "r"(six));                       \
        (void)lo;                                                                                        \
        all &= __atomic_load_n(&w[word], __ATOMIC_RELAXED) >> (bit & 63);                               \
        __asm__("" : "+r"(all)); /* the test stays in its probe (above) */                              \
        x += y; /* bk__probe_next: x += y, y += i * step */                                              \
        y += z;                                                                                          \
        z += step;                                                                                       \
    } while (0)
/* unroll: k is a constant of the caller (the loop unrolls whole) */
__attribute__((target("bmi2"))) BK_INLINE bool query_bmi2_body(const uint64_t *w, uint64_t m, uint32_t k,
                                                               uint64_t h, bool unroll)
{
    uint64_t x = h, y = bk__remix(h), step = bk__probe_step(h), z = 0, all = 1, six = 6;
    register uint64_t mr __asm__("rdx") = m;
    if (unroll) {
        _Pragma("GCC unroll 16") for (uint32_t i = 0; i < k; i++) BK_BLOOM_BMI2_PROBE;
    } else {
        for (uint32_t i = k; i; i--) BK_BLOOM_BMI2_PROBE;
    }
    return all & 1;
}
#undef BK_BLOOM_BMI2_PROBE
__attribute__((target("bmi2"))) static bool query_standard_bmi2(const uint64_t *w, uint64_t m, uint32_t k,
                                                                uint64_t h)
{
    return query_bmi2_body(w, m, k, h, false);
}
/* The same loop with k a constant (the common k = 3 .. 12), unrolled whole: no counter, no branch. */
#define BK_BLOOM_QK(K)                                                                                   \
    __attribute__((target("bmi2"))) static bool query_bmi2_k##K(const uint64_t *w, uint64_t m, uint32_t k, \
                                                                uint64_t h)                            \
    {                                                                                                  \
        (void)k;                                                                                       \
        return query_bmi2_body(w, m, K, h, true);                                                          \
    }
BK_BLOOM_QK(3) BK_BLOOM_QK(4) BK_BLOOM_QK(5) BK_BLOOM_QK(6) BK_BLOOM_QK(7) BK_BLOOM_QK(8) BK_BLOOM_QK(9)
BK_BLOOM_QK(10) BK_BLOOM_QK(11) BK_BLOOM_QK(12)
#undef BK_BLOOM_QK
static const bk__bloom_query query_bmi2_k[13] = {
    [3] = query_bmi2_k3, [4] = query_bmi2_k4, [5] = query_bmi2_k5, [6] = query_bmi2_k6, [7] = query_bmi2_k7,
    [8] = query_bmi2_k8, [9] = query_bmi2_k9, [10] = query_bmi2_k10, [11] = query_bmi2_k11, [12] = query_bmi2_k12,
};
#endif

#ifdef BK_BLOOM_BMI2
/* The standard query with AVX-512 (F and DQ), for m < 2^32 and k <= 16: all k positions in one or
 * two vectors, then the k words in one or two gathers (k = 7: 39 instructions against 68 for the
 * unrolled BMI2 loop, so more calls overlap their misses when the words come from L2 or L3), or, for
 * k = 5 .. 8, in k plain loads whose indices come out of the vector (query_loads_body: 63
 * instructions at k = 7, and faster than the gather on Zen 5, below). The remix stays in the general
 * registers: computing it (and the key's hash) in the vector ones, with vpmullq, was measured no
 * faster. The same positions as bk__probe_*: probe i is x_i = h + i y + C(i, 3) w with y = remix(h)
 * and w = h * BK__PROBE_MIX, i.e. x_i = h * (1 + C(i, 3) * BK__PROBE_MIX) + i * y (mod 2^64), and for
 * m < 2^32 the high word of x_i * m is that of (x_i >> 32) * m + ((x_i mod 2^32) * m >> 32) (no
 * overflow), two 32 x 32 -> 64 multiplies. */
#  define BK_T_GATHER __attribute__((target("avx2,avx512f,avx512dq")))
static const uint64_t probe_a[16] __attribute__((aligned(64))) = {
    UINT64_C(0x0000000000000001), UINT64_C(0x0000000000000001), UINT64_C(0x0000000000000001),
    UINT64_C(0x9e3779b97f4a7c16), UINT64_C(0x78dde6e5fd29f055), UINT64_C(0x2e2ac13ef8e8d8d3),
    UINT64_C(0x5c55827df1d1b1a5), UINT64_C(0xa195a45c672ef6e0), UINT64_C(0x9c22a093d84b2499),
    UINT64_C(0xea33f0ddc470b6e5), UINT64_C(0x2a010ef3aaea29d9), UINT64_C(0xf9c1748f0b01f98a),
    UINT64_C(0xf7ac9b696402a20d), UINT64_C(0xc1f9fd3c35369f77), UINT64_C(0xf6e113c0fde86ddd),
    UINT64_C(0x349958b13d628954),
};
#  define BK_LANES(v) { v, v, v, v, v, v, v, v }
/* constants in memory, one per vector: GCC would otherwise build each with a move and a broadcast */
static const uint64_t probe_one[8] __attribute__((aligned(64))) = BK_LANES(1);
#  undef BK_LANES
static const uint64_t probe_i[16] __attribute__((aligned(64))) = { 0, 1, 2, 3, 4, 5, 6, 7,
                                                                    8, 9, 10, 11, 12, 13, 14, 15 };

/* The bit positions of probes 8 j .. 8 j + 7, each shifted left by 32 (the low half is the part of the
 * product below the bit). */
BK_T_GATHER BK_INLINE __m512i probe_bits_hi(__m512i hv, __m512i yv, __m512i mv, int j)
{
    __m512i x = _mm512_add_epi64(_mm512_mullo_epi64(hv, _mm512_load_si512(probe_a + 8 * j)),
                                 _mm512_mullo_epi64(yv, _mm512_load_si512(probe_i + 8 * j)));
    __m512i lo = _mm512_srli_epi64(_mm512_mul_epu32(x, mv), 32);
    return _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(x, 32), mv), lo);
}

/* Probes 8 j .. 8 j + 7 (those of `lanes`): the lanes whose bit is clear (0: all set). The word is
 * rotated right by the bit's index (a rotate takes its count mod 64: no mask) and its bit 0 tested. */
BK_T_GATHER BK_INLINE __mmask8 gather_probes(const uint64_t *w, __m512i hv, __m512i yv, __m512i mv, int j,
                                            __mmask8 lanes)
{
    __m512i bit = probe_bits_hi(hv, yv, mv, j); /* bit << 32 */
    __m512i idx = _mm512_srli_epi64(bit, 38);
    __m512i word = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), lanes, idx, (const void *)w, 8);
    word = _mm512_rorv_epi64(word, _mm512_srli_epi64(bit, 32));
    return _mm512_mask_testn_epi64_mask(lanes, word, _mm512_load_si512(probe_one));
}
BK_T_GATHER BK_INLINE bool bk__mask8_zero(__mmask8 m) { return _kortestz_mask8_u8(m, m); }

BK_T_GATHER BK_INLINE bool query_gather_lanes(const uint64_t *w, uint64_t m, uint32_t k, __m512i hv, __m512i yv)
{
    __m512i mv = _mm512_set1_epi64((long long)m);
    const __mmask8 lo = (__mmask8)(k >= 8 ? 0xff : (1u << k) - 1);
    if (k <= 8) return bk__mask8_zero(gather_probes(w, hv, yv, mv, 0, lo));
    const __mmask8 hi = (__mmask8)((1u << (k - 8)) - 1);
    if (gather_probes(w, hv, yv, mv, 0, lo)) return false;
    return bk__mask8_zero(gather_probes(w, hv, yv, mv, 1, hi));
}
BK_T_GATHER BK_INLINE bool query_gather_body(const uint64_t *w, uint64_t m, uint32_t k, uint64_t h)
{
    __m512i hv = _mm512_set1_epi64((long long)h), yv = _mm512_set1_epi64((long long)bk__remix(h));
    return query_gather_lanes(w, m, k, hv, yv);
}
/* k = 5 .. 8: the k positions from the vector as above, but the words read with k scalar loads
 * (their indices taken out of the vector) and put back in one vector for the one rotate and test.
 * The same positions, words and answer as the gather, a few percent faster per call on Zen 5 at
 * k = 7 (bench/README.md, "Classic query: scalar loads instead of the gather"): the gather is
 * microcoded, and the next call's loads queue behind it; plain loads issue as their indices come. */
BK_T_GATHER BK_INLINE uint64_t probe_word(const uint64_t *w, __m128i idx, int lane)
{
    return __atomic_load_n(&w[lane ? _mm_extract_epi64(idx, 1) : _mm_cvtsi128_si64(idx)], __ATOMIC_RELAXED);
}
BK_T_GATHER BK_INLINE bool query_loads_body(const uint64_t *w, uint64_t m, uint32_t k, uint64_t h)
{
    __m512i hv = _mm512_set1_epi64((long long)h), yv = _mm512_set1_epi64((long long)bk__remix(h));
    __m512i bit = probe_bits_hi(hv, yv, _mm512_set1_epi64((long long)m), 0); /* bit << 32 */
    __m512i idx = _mm512_srli_epi64(bit, 38);
    __m128i i01 = _mm512_castsi512_si128(idx), i23 = _mm512_extracti64x2_epi64(idx, 1);
    __m128i i45 = _mm512_extracti64x2_epi64(idx, 2), i67 = _mm512_extracti64x2_epi64(idx, 3);
    uint64_t w0 = probe_word(w, i01, 0), w1 = probe_word(w, i01, 1), w2 = probe_word(w, i23, 0);
    uint64_t w3 = probe_word(w, i23, 1), w4 = probe_word(w, i45, 0);
    /* lanes past k repeat probe 0's word: the test skips them */
    uint64_t w5 = k > 5 ? probe_word(w, i45, 1) : w0, w6 = k > 6 ? probe_word(w, i67, 0) : w0;
    uint64_t w7 = k > 7 ? probe_word(w, i67, 1) : w0;
    __m512i word = _mm512_set_epi64((long long)w7, (long long)w6, (long long)w5, (long long)w4,
                                    (long long)w3, (long long)w2, (long long)w1, (long long)w0);
    word = _mm512_rorv_epi64(word, _mm512_srli_epi64(bit, 32));
    const __mmask8 lanes = (__mmask8)(k >= 8 ? 0xff : (1u << k) - 1);
    return bk__mask8_zero(_mm512_mask_testn_epi64_mask(lanes, word, _mm512_load_si512(probe_one)));
}
#  define BK_BLOOM_QG(K, BODY)                                                                             \
    BK_T_GATHER static bool query_gather_k##K(const uint64_t *w, uint64_t m, uint32_t k, uint64_t h)        \
    {                                                                                                      \
        (void)k;                                                                                           \
        return BODY(w, m, K, h);                                                                           \
    }
BK_BLOOM_QG(1, query_gather_body) BK_BLOOM_QG(2, query_gather_body) BK_BLOOM_QG(3, query_gather_body)
BK_BLOOM_QG(4, query_gather_body) BK_BLOOM_QG(5, query_loads_body) BK_BLOOM_QG(6, query_loads_body)
BK_BLOOM_QG(7, query_loads_body) BK_BLOOM_QG(8, query_loads_body) BK_BLOOM_QG(9, query_gather_body)
BK_BLOOM_QG(10, query_gather_body) BK_BLOOM_QG(11, query_gather_body) BK_BLOOM_QG(12, query_gather_body)
BK_BLOOM_QG(13, query_gather_body) BK_BLOOM_QG(14, query_gather_body) BK_BLOOM_QG(15, query_gather_body)
BK_BLOOM_QG(16, query_gather_body)
#  undef BK_BLOOM_QG
/* The positions of hashes hs[0 .. n) that fall in [lo, lo + span), in order, into out (which has 8
 * entries of room past the last one written): bk_bloom_add_hashes_part's collection with the
 * gather query's position arithmetic (a filter whose query is a gather one). */
BK_T_GATHER static size_t part_positions_avx512(const uint64_t *hs, size_t n, uint64_t m, uint32_t k,
                                                uint64_t lo, uint64_t span, uint64_t *out)
{
    const __m512i mv = _mm512_set1_epi64((long long)m), lov = _mm512_set1_epi64((long long)lo);
    const __m512i spanv = _mm512_set1_epi64((long long)span);
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        __m512i hv = _mm512_set1_epi64((long long)hs[i]), yv = _mm512_set1_epi64((long long)bk__remix(hs[i]));
        for (uint32_t j = 0; 8 * j < k; j++) {
            const __mmask8 lanes = (__mmask8)(k - 8 * j >= 8 ? 0xff : (1u << (k - 8 * j)) - 1);
            __m512i bit = _mm512_srli_epi64(probe_bits_hi(hv, yv, mv, (int)j), 32);
            __mmask8 in = _mm512_mask_cmplt_epu64_mask(lanes, _mm512_sub_epi64(bit, lov), spanv);
            _mm512_storeu_si512(out + c, _mm512_maskz_compress_epi64(in, bit));
            c += (size_t)__builtin_popcount(in);
        }
    }
    return c;
}

/* The same for the whole filter (no range to test): each key's probes as one vector of positions,
 * stored whole at out + c (lanes past k are overwritten by the next key's, or left past the end). */
BK_T_GATHER static size_t all_positions_avx512(const uint64_t *hs, size_t n, uint64_t m, uint32_t k, uint64_t *out)
{
    const __m512i mv = _mm512_set1_epi64((long long)m);
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        __m512i hv = _mm512_set1_epi64((long long)hs[i]), yv = _mm512_set1_epi64((long long)bk__remix(hs[i]));
        for (uint32_t j = 0; 8 * j < k; j++) {
            _mm512_storeu_si512(out + c, _mm512_srli_epi64(probe_bits_hi(hv, yv, mv, (int)j), 32));
            c += k - 8 * j >= 8 ? 8 : k - 8 * j;
        }
    }
    return c;
}

static const bk__bloom_query query_gather_k[17] = {
    NULL, query_gather_k1, query_gather_k2, query_gather_k3, query_gather_k4, query_gather_k5,
    query_gather_k6, query_gather_k7, query_gather_k8, query_gather_k9, query_gather_k10,
    query_gather_k11, query_gather_k12, query_gather_k13, query_gather_k14, query_gather_k15,
    query_gather_k16,
};
#endif

#ifdef BK_BLOOM_BMI2
static bool is_gather_query(bk__bloom_query q)
{
    for (int k = 1; k <= 16; k++)
        if (q == query_gather_k[k]) return true;
    return false;
}
#endif

static bk__bloom_query choose_query(bk_layout layout, uint64_t m, uint32_t k)
{
    if (layout == BK_LAYOUT_PARTITIONED) return query_partitioned;
#ifdef BK_BLOOM_BMI2
    /* BK_SIMD=scalar (or bk_simd_force) also keeps the classic filter on its portable loop, and
     * BK_SIMD=avx2 on the BMI2 one */
    const unsigned cpu = bk__cpu_usable(), gather = BK_CPU_AVX2 | BK_CPU_AVX512F | BK_CPU_AVX512DQ | BK_CPU_BMI2;
    if ((cpu & gather) == gather && m < (UINT64_C(1) << 32) && k <= 16) return query_gather_k[k];
    if (cpu & BK_CPU_BMI2) return k < 13 && query_bmi2_k[k] ? query_bmi2_k[k] : query_standard_bmi2;
#else
    (void)m;
#endif
    return query_standard;
}

/* Plain loads of bits that *_atomic may be OR-ing concurrently: relaxed atomic loads, which compile
 * to ordinary loads on every mainstream target, keep the race defined. */
/* No early exit: the k loads are independent, so the CPU overlaps their cache misses (one memory
 * latency per query instead of one per probe); on filters larger than the cache that beats stopping
 * at the first zero bit, and in cache it costs a few extra L1 hits. */
bool bk_bloom_contains_hash(const bk_bloom *f, uint64_t h)
{
    return f->query(f->words, f->slice, f->k, h);
}

/* Keys of other lengths than 8 in a function of their own: the 8-byte path then needs no stack
 * frame (the general hash's call does). */
static __attribute__((noinline)) bool contains_any_len(const bk_bloom *f, const void *key, size_t len)
{
    return f->query(f->words, f->slice, f->k, bk__hash(key, len, f->seed));
}

bool bk_bloom_contains(const bk_bloom *f, const void *key, size_t len)
{
    if (BK_LIKELY(len == 8)) {
        uint64_t k;
        memcpy(&k, key, 8);
        return f->query(f->words, f->slice, f->k, bk__hash_u64_keyed(k, f->u64_flip));
    }
    return contains_any_len(f, key, len);
}

bk_status bk_bloom_add_u64(bk_bloom *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return bk_bloom_add_hash(f, bk__hash_u64_keyed(key, f->u64_flip));
}

bool bk_bloom_contains_u64(const bk_bloom *f, uint64_t key)
{
    return bk_bloom_contains_hash(f, bk__hash_u64_keyed(key, f->u64_flip));
}

/* ---- batches: hash all, prefetch every probed line, then probe ---- */

#define BK_BATCH 32

/*
 * Queries by batches, software-pipelined: the probe positions of the next BK_BATCH keys are computed
 * into a buffer and their lines prefetched while the previous batch's bits are tested from its
 * buffer, so every prefetch has a batch's time to arrive and no probe is computed twice. (A loop that
 * only prefetches is dead code to the compiler, which deleted it: the positions it stores are what
 * keeps it.)
 */
BK_INLINE size_t batch_positions(const bk_bloom *f, const uint64_t *hs, size_t n, uint64_t *pos)
{
    const uint64_t *w = f->words;
    size_t c = 0;
    for (size_t j = 0; j < n; j++)
        BK_FOR_EACH_PROBE(f, hs[j], {
            pos[c++] = bit;
            BK_PREFETCH(&w[bit >> 6]);
        });
    return c;
}

/* The whole filter's fill, software-pipelined by batches of FILL_BATCH keys: the next batch's
 * positions are computed (from AVX-512, each key's vector stored whole, where the query gathers) and
 * their lines prefetched for writing, then the previous batch's bits are set, so each prefetch has a
 * batch's time to arrive. A filter of at most FILL_PREFETCH_MIN bytes is filled without the
 * prefetches: the out-of-order core overlaps its misses as well without them, and they cost
 * instructions (10M hashes, k = 7, AVX-512 positions: 17-30% faster at 0.6-1.2 MiB, 14% at 2.4 MiB,
 * 7% at 4.8 MiB, 38% slower at 12 MiB). */
#define FILL_BATCH 16
#define FILL_PREFETCH_MIN ((uint64_t)4 << 20)
bk_status bk_bloom_add_hashes(bk_bloom *f, const uint64_t *hashes, size_t n)
{
    if (!f || (!hashes && n)) return BK_EINVAL;
    uint64_t pos[2][FILL_BATCH * BK_MAX_K + 8]; /* + 8: all_positions_avx512 writes whole vectors */
    uint64_t *w = f->words;
#ifdef BK_BLOOM_BMI2
    const bool vec_positions = is_gather_query(f->query);
#endif
    const bool prefetch = f->nwords * 8 > FILL_PREFETCH_MIN;
    size_t c[2] = { 0, 0 };
    unsigned cur = 0;
    for (size_t i = 0; i < n + FILL_BATCH; i += FILL_BATCH) {
        const unsigned next = cur ^ 1;
        uint64_t *np = pos[next];
        size_t k = 0;
        const size_t e = i + FILL_BATCH < n ? i + FILL_BATCH : n;
#ifdef BK_BLOOM_BMI2
        if (vec_positions) {
            if (i < e) k = all_positions_avx512(hashes + i, e - i, f->m, f->k, np);
        } else
#endif
        for (size_t j = i; j < e; j++) BK_FOR_EACH_PROBE(f, hashes[j], np[k++] = bit);
        if (prefetch)
            for (size_t q = 0; q < k; q++) BK_PREFETCH_W(&w[np[q] >> 6]);
        c[next] = k;
        const uint64_t *cp = pos[cur];
        for (size_t q = 0; q < c[cur]; q++) w[cp[q] >> 6] |= UINT64_C(1) << (cp[q] & 63);
        cur = next;
    }
    *f->count += n;
    return BK_OK;
}
#undef FILL_BATCH
#undef FILL_PREFETCH_MIN

/* The filter's words cut into nparts ranges at 64-byte lines. Software-pipelined as the whole fill,
 * by batches of PART_BATCH keys: the part's probes of the next batch are collected without a branch
 * (whether a probe is in the part is a coin toss, which a branch would mispredict half the time) and
 * their lines prefetched for writing, then the previous batch's bits are set (about 20% faster than
 * prefetching and setting the same batch). */
#define PART_BATCH 16
bk_status bk_bloom_add_hashes_part(bk_bloom *f, const uint64_t *hashes, size_t n, unsigned part, unsigned nparts)
{
    if (!f || (!hashes && n) || part >= nparts) return BK_EINVAL;
    const uint64_t lines = f->nwords / 8;
    const uint64_t lo = lines * part / nparts * 512, span = lines * (part + 1) / nparts * 512 - lo;
    uint64_t *w = f->words;
    uint64_t pos[2][PART_BATCH * BK_MAX_K + 8]; /* + 8: part_positions_avx512 writes whole vectors */
#ifdef BK_BLOOM_BMI2
    const bool vec_positions = is_gather_query(f->query); /* positions from AVX-512 where the query gathers */
#endif
    size_t c[2] = { 0, 0 };
    unsigned cur = 0;
    for (size_t i = 0; i < n + PART_BATCH; i += PART_BATCH) {
        const unsigned next = cur ^ 1;
        uint64_t *np = pos[next];
        size_t k = 0, e = i + PART_BATCH < n ? i + PART_BATCH : n;
#ifdef BK_BLOOM_BMI2
        if (vec_positions) {
            if (i < e) k = part_positions_avx512(hashes + i, e - i, f->m, f->k, lo, span, np);
        } else
#endif
        for (size_t j = i; j < e; j++)
            BK_FOR_EACH_PROBE(f, hashes[j], {
                np[k] = bit;
                k += bit - lo < span;
            });
        for (size_t q = 0; q < k; q++) BK_PREFETCH_W(&w[np[q] >> 6]);
        c[next] = k;
        const uint64_t *cp = pos[cur];
        for (size_t q = 0; q < c[cur]; q++) w[cp[q] >> 6] |= UINT64_C(1) << (cp[q] & 63);
        cur = next;
    }
    return BK_OK;
}
#undef PART_BATCH

static size_t contains_hashes(const bk_bloom *f, const uint64_t *hashes, size_t n, uint8_t *results)
{
    uint64_t pos[2][BK_BATCH * BK_MAX_K];
    const uint64_t *w = f->words;
    const uint32_t k = f->k;
    size_t present = 0, c[2] = { 0, 0 };
    unsigned cur = 0;
    for (size_t i = 0; i < n + BK_BATCH; i += BK_BATCH) {
        const unsigned next = cur ^ 1;
        c[next] = i < n ? batch_positions(f, hashes + i, (i + BK_BATCH < n ? i + BK_BATCH : n) - i, pos[next]) : 0;
        /* the previous batch: keys i - BK_BATCH .. */
        const uint64_t *cp = pos[cur];
        for (size_t key = 0, q = 0; q < c[cur]; key++) {
            uint64_t all = 1;
            for (uint32_t p = 0; p < k; p++, q++)
                all &= __atomic_load_n(&w[cp[q] >> 6], __ATOMIC_RELAXED) >> (cp[q] & 63);
            bool r = all & 1;
            if (results) results[i - BK_BATCH + key] = r;
            present += r;
        }
        cur = next;
    }
    return present;
}

static bk_status add_chunk(void *f, const uint64_t *h, size_t n) { return bk_bloom_add_hashes(f, h, n); }
static size_t query_chunk(const void *f, const uint64_t *h, size_t n, uint8_t *results)
{
    return contains_hashes(f, h, n, results);
}

bk_status bk_bloom_add_many(bk_bloom *f, const void *const *keys, const size_t *lens, size_t n)
{
    return f ? bk__add_many(f, f->seed, keys, lens, n, add_chunk) : BK_EINVAL;
}

bk_status bk_bloom_contains_hashes(const bk_bloom *f, const uint64_t *hashes, size_t n, uint8_t *results,
                                   size_t *hits)
{
    if (!f || (!hashes && n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, contains_hashes(f, hashes, n, results));
}

bk_status bk_bloom_contains_many(const bk_bloom *f, const void *const *keys, const size_t *lens, size_t n,
                                 uint8_t *results, size_t *hits)
{
    if (!f) return bk__batch_refused(hits);
    return bk__contains_many(f, f->seed, keys, lens, n, results, hits, query_chunk);
}

/* ---- whole-filter operations ---- */

void bk_bloom_clear(bk_bloom *f)
{
    if (!f) return;
    memset(f->words, 0, f->nwords * 8);
    *f->count = 0;
    bk__stripes_clear(&f->stripes);
}

bk_status bk_bloom_compatible(const bk_bloom *a, const bk_bloom *b)
{
    if (!a || !b) return BK_EINVAL;
    if (a->m != b->m || a->k != b->k || a->layout != b->layout || a->seed != b->seed)
        return BK_EINCOMPAT;
    return BK_OK;
}

/* Swamidass & Baldi: n ~ -(m / k) ln(1 - X / m), X the number of set bits. */
static double estimate_cardinality(uint64_t m, uint32_t k, uint64_t set)
{
    double x = (double)set;
    if (set >= m) x = (double)m - 0.5;
    return -((double)m / k) * log1p(-x / (double)m);
}

static bk_status combine(bk_bloom *dst, const bk_bloom *src, bool is_union)
{
    bk_status s = bk_bloom_compatible(dst, src);
    if (s != BK_OK) return s;
    const uint64_t na = bk_bloom_count(dst), nb = bk_bloom_count(src);
    bk__combine_words(dst->words, src->words, dst->nwords, is_union);
    bk__stripes_clear(&dst->stripes);
    *dst->count = bk__combined_count(estimate_cardinality(dst->m, dst->k, bk__popcount_words(dst->words, dst->nwords)),
                                     na, nb, is_union);
    return BK_OK;
}

bk_status bk_bloom_union(bk_bloom *dst, const bk_bloom *src) { return combine(dst, src, true); }
bk_status bk_bloom_intersect(bk_bloom *dst, const bk_bloom *src) { return combine(dst, src, false); }

void bk_bloom_stats(const bk_bloom *f, bk_stats *out)
{
    uint64_t set = bk__popcount_words(f->words, f->nwords);
    uint64_t count = bk_bloom_count(f);
    bk__stats_bits(out, BK_TYPE_BLOOM, f->k, f->capacity, count, f->m, f->nwords * 8, set);
    out->est_cardinality = estimate_cardinality(f->m, f->k, set);
    out->fpr_target = f->fpr_target;
    if (f->layout == BK_LAYOUT_STANDARD) {
        out->fpr_now = pow(out->fill_ratio, f->k);
    } else {
        /* product of each slice's fill */
        double p = 1.0;
        for (uint32_t i = 0; i < f->k; i++) {
            uint64_t lo = i * f->slice, hi = lo + f->slice, c = 0;
            /* the slice's bits before its first whole word and after its last, one at a time */
            uint64_t wlo = (lo + 63) / 64, whi = hi / 64;
            if (wlo >= whi) wlo = whi = hi / 64; /* no whole word inside */
            for (uint64_t b = lo; b < hi && b < wlo * 64; b++)
                c += (__atomic_load_n(&f->words[b >> 6], __ATOMIC_RELAXED) >> (b & 63)) & 1;
            c += bk__popcount_words(f->words + wlo, whi - wlo);
            for (uint64_t b = whi * 64 > lo ? whi * 64 : lo; b < hi; b++)
                c += (__atomic_load_n(&f->words[b >> 6], __ATOMIC_RELAXED) >> (b & 63)) & 1;
            p *= (double)c / (double)f->slice;
        }
        out->fpr_now = p;
    }
    /* An optimally sized filter holds half its bits set at capacity; rounding k up puts that a little
     * higher (51.8% for k = 7 at 1%), so the fill limit is the fill expected at capacity (at most
     * 60%) plus a noise margin (bk__saturation_fill): a correctly sized filter at its designed
     * load is not flagged, one past it is. */
    double limit = bk__saturation_fill(-expm1((double)f->k * (double)f->capacity * log1p(-1.0 / (double)f->m)),
                                       (double)f->m);
    out->saturated = out->fill_ratio > limit || count > f->capacity;
    out->seed = f->seed;
}

uint64_t bk_bloom_bits(const bk_bloom *f) { return f->m; }
uint32_t bk_bloom_k(const bk_bloom *f) { return f->k; }
uint64_t bk_bloom_count(const bk_bloom *f)
{
    return __atomic_load_n(f->count, __ATOMIC_RELAXED) + bk__stripes_sum(&f->stripes);
}
uint64_t bk_bloom_seed(const bk_bloom *f) { return f->seed; }
bk_layout bk_bloom_layout_of(const bk_bloom *f) { return f->layout; }
const uint8_t *bk_bloom_data(const bk_bloom *f, size_t *len)
{
    if (len) *len = (size_t)(f->nwords * 8);
    return (const uint8_t *)f->words;
}

/* ---- serialization (body layout in docs/FORMAT.md) ----
 * offset 0  u32 layout, u32 k, u64 m, u64 capacity, u64 count, f64 fpr_target  (36 bytes)
 * then zero padding to 64, then the bit array: ceil(m / 512) * 64 bytes, little-endian u64 words. */
static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_bloom *f = vf;
    return bk__w_bits_body(w, (uint32_t)f->layout, f->k, f->m, f->capacity, bk_bloom_count(f), f->fpr_target,
                           f->words, f->nwords);
}

uint64_t bk__bloom_capacity_field(const void *bloom) { return ((const bk_bloom *)bloom)->capacity; }

static bk_status v_decode(bk_reader *r, void **out)
{
    bk__bits_head h;
    bk_status s = bk__r_bits_head(r, &h);
    if (s != BK_OK) return s;
    const uint32_t layout = h.variant, k = h.k;
    const uint64_t m = h.m;
    if (layout > BK_LAYOUT_PARTITIONED || k == 0 || k > BK_MAX_K || (layout == BK_LAYOUT_PARTITIONED && m % k))
        return BK_ECORRUPT;
    uint64_t bytes = bk__bits_to_bytes64(m);
    const uint8_t *data;
    if ((s = bk__r_array_begin(r, bytes, &data))) return s;
    bk_bloom *f;
    s = alloc_filter(r->alloc, m, k, (bk_layout)layout, r->seed, h.capacity, h.fpr, !r->borrow, &f);
    if (s != BK_OK) return s;
    /* Bits past m must be zero: anything else was not written by us. */
    s = bk__r_bits_end(r, &h, bytes, data, m, &f->words, &f->count, &f->count_own);
    if (s == BK_OK) *out = f;
    else bk_bloom_free(f);
    return s;
}

BK__VT_ADAPTERS(bloom)
BK__VT_WRITE_ADAPTERS(bloom)
static uint64_t v_count(const void *f) { return bk_bloom_count(f); }
static bk_status v_compatible(const void *a, const void *b) { return bk_bloom_compatible(a, b); }
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n, size_t *done)
{
    return bk__vt_all_or_none(bk_bloom_add_hashes(f, h, n), n, done);
}
static bk_status v_merge(void *d, const void *s) { return bk_bloom_union(d, s); }
static bk_status v_add_hash_atomic(void *f, uint64_t h) { return bk_bloom_add_hash_atomic(f, h); }
static void v_set_count(void *p, uint64_t n)
{
    bk_bloom *f = p;
    bk__stripes_clear(&f->stripes);
    *f->count = n;
}

BK_HIDDEN const bk_vtable bk__bloom_vtable = {
    .type = BK_TYPE_BLOOM,
    BK__VT_ENTRIES,
    BK__VT_WRITE_ENTRIES,
    .add_hashes = v_add_hashes,
    .merge = v_merge,
    .add_hash_atomic = v_add_hash_atomic,
    .set_count = v_set_count,
    .count = v_count,
    .compatible = v_compatible,
};
