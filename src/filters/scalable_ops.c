/* Scalable Bloom filter: query and insert, one key and in batches, for classic and blocked chains.
 * The query and insert paths share the chain's growth lock and its prefetch policy. */
#include "filters/scalable_chain.h"

/* ---- query ---- */

/* Probes past the first two that a query prefetches in each big layer. */
#define PREFETCH_DEPTH 2

/* Rounds (probes) tested breadth first before the layers still alive test the rest at once. */
#define BREADTH_ROUNDS 4

/* Probes t .. k-1 of one layer, p being the probe iterator at probe t: all loads issued, no early
 * exit. */
BK_INLINE bool layer_rest(const layer *L, uint32_t t, bk__probe p)
{
    const uint64_t *w = L->words;
    uint64_t all = 1;
    for (; t < L->k; t++) {
        uint64_t bit = bk__probe_at(&p, L->m);
        all &= __atomic_load_n(&w[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63);
        bk__probe_next(&p, t);
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
    layer *const *layers = SC_LAYERS(f);
    bk__probe p = bk__probe_start(h);
    const uint64_t x0 = p.x;
    bk__probe_next(&p, 0);
    const uint64_t x1 = p.x;
    bk__probe_next(&p, 1); /* p: probe 2 */
    uint64_t alive = 0, done = 0;
    for (uint32_t l = n; l-- > 0;) { /* largest first: their misses start earliest */
        const layer *L = layers[l];
        const uint64_t *w = L->words;
        uint64_t b0 = bk__range64(x0, L->m), b1 = bk__range64(x1, L->m);
        if (sc_bytes(L) >= BIG_LAYER_BYTES) {
            bk__probe q = p;
            for (uint32_t t = 2; t < 2 + PREFETCH_DEPTH; t++) {
                BK_PREFETCH(&w[bk__probe_at(&q, L->m) >> 6]);
                bk__probe_next(&q, t);
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
            uint64_t bit = bk__probe_at(&p, L->m);
            uint64_t hit = (__atomic_load_n(&L->words[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63)) & 1;
            next |= hit << l;
            done |= (uint64_t)(hit & (L->k == t + 1)) << l;
        }
        if (done) return true;
        alive = next;
        bk__probe_next(&p, t);
    }
    /* Phase 3: the few layers still alive (one in 16 for an absent key; the one holding a present
     * key) test all their remaining probes with independent loads, so those misses overlap too. */
    for (uint64_t a = alive; a; a &= a - 1) {
        if (layer_rest(layers[__builtin_ctzll(a)], t, p)) return true;
    }
    return false;
}

/* A small classic layer (sub-filter 0 of a compact chain: a few lines in the chain's own block):
 * all k probes. */
BK_INLINE bool small_has(const layer *L, uint64_t h) { return layer_rest(L, 0, bk__probe_start(h)); }

/* A blocked chain: every layer is one block test with no branch on the data, so an absent key costs
 * one block (two lines) per layer, all loads independent (the engine's bk__b1024_any; oldest layers
 * first: k grows along the chain, so the mask is mostly extended, not rebuilt). A compact chain's small
 * sub-filter 0 is tested first, on its own. */
static bool blocked_has(const bk_scalable *f, uint32_t n, uint64_t h)
{
    layer *const *ls = SC_LAYERS(f);
    const uint64_t *blocks[BK_SCALABLE_MAX_FILTERS];
    uint32_t ks[BK_SCALABLE_MAX_FILTERS];
    uint32_t l0 = 0;
    if (ls[0]->small) {
        if (small_has(ls[0], h)) return true;
        if (n == 1) return false;
        l0 = 1;
    }
    for (uint32_t l = l0; l < n; l++) {
        blocks[l - l0] = b1024_block(ls[l], h);
        ks[l - l0] = ls[l]->k;
    }
    return bk__b1024_any((bk_simd)f->simd, blocks, ks, n - l0, (uint32_t)h);
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
    bk_status s = bk__sc_add_layer(f, n, bk_scalable_bytes(f), bk__sc_spent(f, n), &L);
    if (s != BK_OK) return s;
    __atomic_store_n(&f->n, n + 1, __ATOMIC_RELEASE);
    return BK_OK;
}

/*
 * Test-and-set of a key in a 1024-bit block: its k probes (k <= BK_BLOCKED_MAX_K = 16, checked when
 * a layer is made or loaded) become a 16-word mask, then the block is read once, ORed with the mask
 * and written once; the key was new to the block if some mask bit was clear. Building the mask apart
 * from the block keeps the block's loads independent of each other (one read and one write of each
 * line per key, instead of k dependent read-modify-writes of it). The scalar and AVX2 forms unroll
 * the probes by k (a switch falling through from probe k - 1 to probe 0) so each salt is an
 * immediate: a probe costs a multiply, two shifts and an OR into the mask. Returns true if the key
 * was new to the block.
 */
#define B1024_PROBES(PROBE)                                                                                          \
    switch (k) {                                                                                                     \
    case 16: PROBE(15); /* fallthrough */                                                                            \
    case 15: PROBE(14); /* fallthrough */                                                                            \
    case 14: PROBE(13); /* fallthrough */                                                                            \
    case 13: PROBE(12); /* fallthrough */                                                                            \
    case 12: PROBE(11); /* fallthrough */                                                                            \
    case 11: PROBE(10); /* fallthrough */                                                                            \
    case 10: PROBE(9); /* fallthrough */                                                                             \
    case 9: PROBE(8); /* fallthrough */                                                                              \
    case 8: PROBE(7); /* fallthrough */                                                                              \
    case 7: PROBE(6); /* fallthrough */                                                                              \
    case 6: PROBE(5); /* fallthrough */                                                                              \
    case 5: PROBE(4); /* fallthrough */                                                                              \
    case 4: PROBE(3); /* fallthrough */                                                                              \
    case 3: PROBE(2); /* fallthrough */                                                                              \
    case 2: PROBE(1); /* fallthrough */                                                                              \
    case 1: PROBE(0); /* fallthrough */                                                                              \
    default: break;                                                                                                  \
    }

#define B1024_STACK_PROBE(i)                                                                                         \
    do {                                                                                                             \
        uint32_t b_ = bk__b1024_bit(x, (i));                                                                         \
        m[b_ >> 6] |= UINT64_C(1) << (b_ & 63);                                                                      \
    } while (0)

BK_INLINE bool b1024_ts_scalar(uint64_t *w, uint32_t x, uint32_t k)
{
    uint64_t m[16] = { 0 }, miss = 0;
    B1024_PROBES(B1024_STACK_PROBE)
    for (unsigned j = 0; j < 16; j++) {
        miss |= m[j] & ~w[j];
        w[j] |= m[j];
    }
    return miss != 0;
}

#ifdef BK_X86
/* AVX2: the mask built on the stack, then combined with the block in four registers. */
BK_T_AVX2 BK_INLINE bool b1024_ts_avx2(uint64_t *w, uint32_t x, uint32_t k)
{
    uint64_t m[16] __attribute__((aligned(32))) = { 0 };
    B1024_PROBES(B1024_STACK_PROBE)
    __m256i miss = _mm256_setzero_si256();
    for (unsigned j = 0; j < 16; j += 4) {
        __m256i a = _mm256_load_si256((const __m256i *)(m + j)), b = _mm256_loadu_si256((const __m256i *)(w + j));
        miss = _mm256_or_si256(miss, _mm256_andnot_si256(b, a));
        _mm256_storeu_si256((__m256i *)(w + j), _mm256_or_si256(a, b));
    }
    return !_mm256_testz_si256(miss, miss);
}

/* AVX-512: all 16 probe positions at once (one multiply and one shift of a vector), then the mask in
 * two registers of 32-bit lanes (bits 0-511, 512-1023): probe i broadcast to every lane and shifted
 * by its distance from the lane's first bit, which leaves it only in the lane that holds it (sllv
 * gives zero for a count of 32 or more, and a negative distance is a huge count). Probes go in pairs,
 * each pair ORed into the two registers by one three-way OR (vpternlogd) per register: per probe a
 * load of its index vector, a vpermd, two adds, two shifts and one OR, unrolled by k (one OR per
 * probe more before: 10-17% more time per add in cache, k = 12 and 16). Broadcasting each position
 * from a stack copy instead of the vpermd saved nothing: the copy's store delays the first probes. */
/* vpermd index vectors: row i selects lane i (probe i's position) into every lane */
static const uint32_t b1024_lane_idx[16][16] __attribute__((aligned(64))) = {
#define B1024_ROW(i) { i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i }
    B1024_ROW(0), B1024_ROW(1), B1024_ROW(2), B1024_ROW(3), B1024_ROW(4), B1024_ROW(5), B1024_ROW(6), B1024_ROW(7),
    B1024_ROW(8), B1024_ROW(9), B1024_ROW(10), B1024_ROW(11), B1024_ROW(12), B1024_ROW(13), B1024_ROW(14), B1024_ROW(15),
#undef B1024_ROW
};

#define B1024_ZMM_BITS(i, a_lo, a_hi)                                                                                \
    const __m512i p##i##_ = _mm512_permutexvar_epi32(_mm512_load_si512((const void *)idx[i]), pos);                  \
    const __m512i a_lo = _mm512_sllv_epi32(one, _mm512_add_epi32(p##i##_, neg_lo));                                  \
    const __m512i a_hi = _mm512_sllv_epi32(one, _mm512_add_epi32(p##i##_, neg_hi))
#define B1024_ZMM_PAIR(i, j)                                                                                         \
    do {                                                                                                             \
        B1024_ZMM_BITS(i, a_lo_, a_hi_);                                                                             \
        B1024_ZMM_BITS(j, b_lo_, b_hi_);                                                                             \
        lo = _mm512_ternarylogic_epi32(lo, a_lo_, b_lo_, 0xFE);                                                      \
        hi = _mm512_ternarylogic_epi32(hi, a_hi_, b_hi_, 0xFE);                                                      \
    } while (0)
#define B1024_ZMM_ONE(i)                                                                                             \
    do {                                                                                                             \
        B1024_ZMM_BITS(i, a_lo_, a_hi_);                                                                             \
        lo = _mm512_or_si512(lo, a_lo_);                                                                             \
        hi = _mm512_or_si512(hi, a_hi_);                                                                             \
    } while (0)
/* probes k-1 .. 0 in pairs (an odd k ends with probe 0 alone) */
#define B1024_ZMM_PROBES()                                                                                           \
    switch (k) {                                                                                                     \
    case 16: B1024_ZMM_PAIR(15, 14); /* fallthrough */                                                               \
    case 14: B1024_ZMM_PAIR(13, 12); /* fallthrough */                                                               \
    case 12: B1024_ZMM_PAIR(11, 10); /* fallthrough */                                                               \
    case 10: B1024_ZMM_PAIR(9, 8); /* fallthrough */                                                                 \
    case 8: B1024_ZMM_PAIR(7, 6); /* fallthrough */                                                                  \
    case 6: B1024_ZMM_PAIR(5, 4); /* fallthrough */                                                                  \
    case 4: B1024_ZMM_PAIR(3, 2); /* fallthrough */                                                                  \
    case 2: B1024_ZMM_PAIR(1, 0); break;                                                                             \
    case 15: B1024_ZMM_PAIR(14, 13); /* fallthrough */                                                               \
    case 13: B1024_ZMM_PAIR(12, 11); /* fallthrough */                                                               \
    case 11: B1024_ZMM_PAIR(10, 9); /* fallthrough */                                                                \
    case 9: B1024_ZMM_PAIR(8, 7); /* fallthrough */                                                                  \
    case 7: B1024_ZMM_PAIR(6, 5); /* fallthrough */                                                                  \
    case 5: B1024_ZMM_PAIR(4, 3); /* fallthrough */                                                                  \
    case 3: B1024_ZMM_PAIR(2, 1); /* fallthrough */                                                                  \
    case 1: B1024_ZMM_ONE(0); break;                                                                                 \
    default: break;                                                                                                  \
    }

BK_T_AVX512 BK_INLINE bool b1024_ts_avx512(uint64_t *w, uint32_t x, uint32_t k)
{
    const __m512i pos = _mm512_srli_epi32(
        _mm512_mullo_epi32(_mm512_set1_epi32((int)x), _mm512_load_si512((const void *)bk__blk_salt[BK__SALT_1024])), 22);
    /* minus each lane's first bit: 0, 32, ..., 480 and 512, ..., 992 */
    const __m512i neg_lo = _mm512_set_epi32(-480, -448, -416, -384, -352, -320, -288, -256, -224, -192, -160, -128, -96,
                                            -64, -32, 0);
    const __m512i neg_hi = _mm512_sub_epi32(neg_lo, _mm512_set1_epi32(512));
    __m512i one = _mm512_set1_epi32(1);
    const uint32_t(*idx)[16] = b1024_lane_idx;
    /* opaque to the compiler: else it rebuilds each of these constants (a move and a broadcast) at
     * every probe instead of keeping one in a register and loading the indices */
    __asm__("" : "+v"(one), "+r"(idx));
    __m512i lo = _mm512_setzero_si512(), hi = lo;
    B1024_ZMM_PROBES()
    __m512i w0 = _mm512_loadu_si512(w), w1 = _mm512_loadu_si512(w + 8);
    __mmask16 miss = _mm512_test_epi32_mask(_mm512_andnot_si512(w0, lo), lo) | _mm512_test_epi32_mask(_mm512_andnot_si512(w1, hi), hi);
    _mm512_storeu_si512(w, _mm512_or_si512(w0, lo));
    _mm512_storeu_si512(w + 8, _mm512_or_si512(w1, hi));
    return miss != 0;
}
#endif

/*
 * A run of a batch into the newest layer of a blocked chain, while it has room: the layer's geometry
 * held in registers, the test-and-set inlined, and the block of key i + ADD_LOOKAHEAD fetched while
 * key i is set. Stops after `room` keys new to the layer (the layer is then full: the caller grows the
 * chain) or at the end of the batch; returns the keys consumed, *fresh the keys new to the layer.
 */
#define ADD_LOOKAHEAD 16

typedef bool (*b1024_ts_fn)(uint64_t *w, uint32_t x, uint32_t k);

BK_INLINE size_t b1024_run(const layer *L, const uint64_t *hs, size_t n, uint64_t room, uint64_t *fresh,
                           b1024_ts_fn ts)
{
    uint64_t *const words = L->words;
    const uint64_t blocks = sc_blocks(L);
    const uint32_t k = L->k;
    const size_t pf = sc_bytes(L) >= BIG_LAYER_BYTES ? ADD_LOOKAHEAD : 0;
    for (size_t i = 0; i < n && i < pf; i++) {
        const uint64_t *b = bk__blk_block(words, blocks, hs[i], 4);
        BK_PREFETCH_W(b);
        BK_PREFETCH_W(b + 8);
    }
    uint64_t got = 0;
    size_t i = 0;
    while (i < n) {
        if (i + pf < n && pf) {
            const uint64_t *b = bk__blk_block(words, blocks, hs[i + pf], 4);
            BK_PREFETCH_W(b);
            BK_PREFETCH_W(b + 8);
        }
        uint64_t h = hs[i++];
        got += ts(bk__blk_block(words, blocks, h, 4), (uint32_t)h, k);
        if (got == room) break;
    }
    *fresh = got;
    return i;
}

static bool b1024_test_set_scalar(uint64_t *w, uint32_t x, uint32_t k) { return b1024_ts_scalar(w, x, k); }
static size_t b1024_run_scalar(const layer *L, const uint64_t *hs, size_t n, uint64_t room, uint64_t *fresh)
{
    return b1024_run(L, hs, n, room, fresh, b1024_ts_scalar);
}
#ifdef BK_X86
BK_T_AVX2 static bool b1024_test_set_avx2(uint64_t *w, uint32_t x, uint32_t k) { return b1024_ts_avx2(w, x, k); }
BK_T_AVX2 static size_t b1024_run_avx2(const layer *L, const uint64_t *hs, size_t n, uint64_t room, uint64_t *fresh)
{
    return b1024_run(L, hs, n, room, fresh, b1024_ts_avx2);
}
BK_T_AVX512 static bool b1024_test_set_avx512(uint64_t *w, uint32_t x, uint32_t k) { return b1024_ts_avx512(w, x, k); }
BK_T_AVX512 static size_t b1024_run_avx512(const layer *L, const uint64_t *hs, size_t n, uint64_t room,
                                           uint64_t *fresh)
{
    return b1024_run(L, hs, n, room, fresh, b1024_ts_avx512);
}
#endif

/* The chain's path (f->simd) for the test-and-set and the batch run above. */
BK_INLINE bool b1024_test_set(int simd, uint64_t *w, uint32_t x, uint32_t k)
{
#ifdef BK_X86
    if (simd == BK_SIMD_AVX512) return b1024_test_set_avx512(w, x, k);
    if (simd == BK_SIMD_AVX2) return b1024_test_set_avx2(w, x, k);
#else
    (void)simd;
#endif
    return b1024_test_set_scalar(w, x, k);
}

BK_INLINE size_t b1024_add_run(int simd, const layer *L, const uint64_t *hs, size_t n, uint64_t room, uint64_t *fresh)
{
#ifdef BK_X86
    if (simd == BK_SIMD_AVX512) return b1024_run_avx512(L, hs, n, room, fresh);
    if (simd == BK_SIMD_AVX2) return b1024_run_avx2(L, hs, n, room, fresh);
#else
    (void)simd;
#endif
    return b1024_run_scalar(L, hs, n, room, fresh);
}

/* A small classic layer: set the key's k bits; true if some was clear. [excl] */
BK_INLINE bool small_test_set(layer *L, uint64_t h)
{
    bk__probe p = bk__probe_start(h);
    uint64_t miss = 0;
    for (uint32_t i = 0; i < L->k; i++) {
        uint64_t bit = bk__probe_at(&p, L->m), b = UINT64_C(1) << (bit & 63);
        miss |= ~L->words[bit >> 6] & b;
        L->words[bit >> 6] |= b;
        bk__probe_next(&p, i);
    }
    return miss != 0;
}

/* Inserts h into the newest layer L of n (growing the chain first when L is full), without testing
 * whether L holds it: the tail of the two add paths below. [excl] */
BK_INLINE bk_status insert_newest(bk_scalable *f, uint32_t n, layer *L, uint64_t h)
{
    if (BK_UNLIKELY(L->fill >= L->capacity)) {
        bk_status s = grow_locked(f, n); /* [excl]: nobody else holds the lock */
        if (s != BK_OK) return s;
        L = f->layers[n];
    }
    L->fill++;
    if (L->wrapped) return bk_bloom_add_hash(sc_bf(L), h);
    if (L->small) {
        (void)small_test_set(L, h);
        return BK_OK;
    }
    (void)b1024_test_set(f->simd, b1024_block(L, h), (uint32_t)h, L->k);
    return BK_OK;
}

bk_status bk_scalable_add_if_absent_hash(bk_scalable *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    uint32_t n = f->n;
    if (chain_has(f, n, h)) return BK_EEXISTS;
    layer *L = SC_LAYERS(f)[n - 1];
    return insert_newest(f, n, L, h);
}

bk_status bk_scalable_add_if_absent(bk_scalable *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_scalable_add_if_absent_hash(f, bk__hash(key, len, f->seed));
}

/* A plain add: into the newest layer unless that layer already holds the key (tested on its own
 * block, the lines the insert touches anyway); older layers are not tested, so an add costs one
 * layer's probe however long the chain. BK_EEXISTS: the newest layer had it (nothing changed). [excl] */
static bk_status add_newest(bk_scalable *f, uint64_t h)
{
    uint32_t n = f->n;
    layer *L = SC_LAYERS(f)[n - 1];
    if (L->wrapped) {
        if (bk_bloom_contains_hash(sc_bf(L), h)) return BK_EEXISTS;
    } else if (L->small) {
        if (L->fill < L->capacity) {
            if (!small_test_set(L, h)) return BK_EEXISTS;
            L->fill++;
            return BK_OK;
        }
        if (small_has(L, h)) return BK_EEXISTS;
    } else {
        const uint32_t x = (uint32_t)h;
        uint64_t *w = b1024_block(L, h), miss = 0;
        if (BK_LIKELY(L->fill < L->capacity)) {
            /* room: test and set in one pass (setting a bit already set changes nothing, so a key
             * the layer already holds leaves it as it was) */
            if (!b1024_test_set(f->simd, w, x, L->k)) return BK_EEXISTS;
            L->fill++;
            return BK_OK;
        }
        for (uint32_t i = 0; i < L->k; i++) {
            uint32_t b = bk__b1024_bit(x, i);
            miss |= ~w[b >> 6] & (UINT64_C(1) << (b & 63));
        }
        if (miss == 0) return BK_EEXISTS;
    }
    return insert_newest(f, n, L, h);
}

/*
 * The plain add's common case -- a blocked newest layer with room -- as one function per path: the
 * block's two lines prefetched for writing first, so that their miss runs while the mask is built (the
 * block is read only after the k probes' mask, 80-130 instructions later on the AVX-512 path, and a
 * one-key call that waits on its miss lets the reorder buffer hold only about two calls), then the
 * test-and-set, and the layer's fill counted without a branch (a key the layer already had leaves it
 * unchanged, as add_newest). Reached from bk_scalable_add_hash by one indirect jump through the table
 * below (f->simd), without add_newest's frame. [excl]
 */
#define B1024_ADD1(name, ts)                                                                                         \
    static bk_status name(layer *L, uint64_t h)                                                                      \
    {                                                                                                                \
        uint64_t *w = b1024_block(L, h);                                                                             \
        BK_PREFETCH_W(w);                                                                                            \
        BK_PREFETCH_W(w + 8);                                                                                        \
        L->fill += ts(w, (uint32_t)h, L->k);                                                                         \
        return BK_OK;                                                                                                \
    }
B1024_ADD1(b1024_add1_scalar, b1024_ts_scalar)
#ifdef BK_X86
BK_T_AVX2 B1024_ADD1(b1024_add1_avx2, b1024_ts_avx2)
BK_T_AVX512 B1024_ADD1(b1024_add1_avx512, b1024_ts_avx512)
#endif
#undef B1024_ADD1

static bk_status (*const b1024_add1[4])(layer *L, uint64_t h) = {
    [BK_SIMD_AUTO] = b1024_add1_scalar, /* (never stored: f->simd is resolved) */
    [BK_SIMD_SCALAR] = b1024_add1_scalar,
#ifdef BK_X86
    [BK_SIMD_AVX2] = b1024_add1_avx2,
    [BK_SIMD_AVX512] = b1024_add1_avx512,
#else
    [BK_SIMD_AVX2] = b1024_add1_scalar,
    [BK_SIMD_AVX512] = b1024_add1_scalar,
#endif
};

bk_status bk_scalable_add_hash(bk_scalable *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    layer **ls = __atomic_load_n(&f->layers, __ATOMIC_ACQUIRE); /* (as SC_LAYERS, without its stack slot) */
    layer *L = BK_LIKELY(ls != NULL) ? ls[f->n - 1] : &f->first;
    if (BK_LIKELY(!L->wrapped && !L->small && L->fill < L->capacity)) return b1024_add1[f->simd](L, h);
    bk_status s = add_newest(f, h);
    return s == BK_EEXISTS ? BK_OK : s;
}

bk_status bk_scalable_add(bk_scalable *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_scalable_add_hash(f, bk__hash(key, len, f->seed));
}

bk_status bk_scalable_add_if_absent_u64(bk_scalable *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return bk_scalable_add_if_absent_hash(f, bk__hash_u64(key, f->seed));
}

bk_status bk_scalable_add_u64(bk_scalable *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return bk_scalable_add_hash(f, bk__hash_u64(key, f->seed));
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
        layer *L = SC_LAYERS(f)[n - 1];
        uint64_t c = __atomic_load_n(&L->fill, __ATOMIC_RELAXED);
        while (c < L->capacity &&
               !__atomic_compare_exchange_n(&L->fill, &c, c + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        }
        if (c < L->capacity) {
            if (L->wrapped) return bk_bloom_add_hash_atomic(sc_bf(L), h);
            if (L->small) {
                bk__probe p = bk__probe_start(h);
                for (uint32_t i = 0; i < L->k; i++) {
                    uint64_t bit = bk__probe_at(&p, L->m);
                    __atomic_fetch_or(&L->words[bit >> 6], UINT64_C(1) << (bit & 63), __ATOMIC_RELAXED);
                    bk__probe_next(&p, i);
                }
                return BK_OK;
            }
            uint64_t *w = b1024_block(L, h);
            for (uint32_t i = 0; i < L->k; i++) {
                uint32_t b = bk__b1024_bit((uint32_t)h, i);
                __atomic_fetch_or(&w[b >> 6], UINT64_C(1) << (b & 63), __ATOMIC_RELAXED);
            }
            return BK_OK;
        }
        sc_grow_lock(&f->grow_lock);
        bk_status s = grow_locked(f, n);
        sc_grow_unlock(&f->grow_lock);
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

/* Keys hashed per chunk by add_many (the prefetch pipeline restarts at each chunk). */
#define ADD_CHUNK 256

/* The newest layer's lines for h: a blocked layer's block, a classic layer's first two probe lines.
 * Always inlined: as a function of its own, holding nothing but prefetches, the compiler takes it
 * for one without effects and drops its calls. */
BK_INLINE void prefetch_newest(const bk_scalable *f, uint64_t h)
{
    const layer *L = SC_LAYERS(f)[f->n - 1];
    if (sc_bytes(L) < BIG_LAYER_BYTES) return;
    if (!sc_classic_probes(L)) {
        const uint64_t *b = b1024_block(L, h);
        BK_PREFETCH_W(b);
        BK_PREFETCH_W(b + 8);
        return;
    }
    bk__probe p = bk__probe_start(h); /* probes 0 and 1 */
    BK_PREFETCH_W(&L->words[bk__probe_at(&p, L->m) >> 6]);
    bk__probe_next(&p, 0);
    BK_PREFETCH_W(&L->words[bk__probe_at(&p, L->m) >> 6]);
}

bk_status bk_scalable_add_hashes(bk_scalable *f, const uint64_t *hashes, size_t n, size_t *done)
{
    if (!f || (!hashes && n)) return bk__batch_refused(done);
    if (!f->classic) {
        /* runs into the newest layer while it has room; a full layer takes one key through add_newest
         * (which grows the chain), then the runs go on in the new layer */
        for (size_t i = 0; i < n;) {
            layer *L = SC_LAYERS(f)[f->n - 1];
            if (!L->small && L->fill < L->capacity) {
                uint64_t fresh;
                i += b1024_add_run(f->simd, L, hashes + i, n - i, L->capacity - L->fill, &fresh);
                L->fill += fresh;
                continue;
            }
            bk_status s = add_newest(f, hashes[i]);
            if (s != BK_OK && s != BK_EEXISTS) {
                if (done) *done = i;
                return s;
            }
            i++;
        }
        return bk__batch_done(done, n);
    }
    for (size_t i = 0; i < n && i < ADD_LOOKAHEAD; i++) prefetch_newest(f, hashes[i]);
    for (size_t i = 0; i < n; i++) {
        /* a few keys ahead, fetch the newest layer's lines (a growth mid-batch only makes a few of
         * these prefetches useless); keys are added in order, so a key repeated within the batch is
         * found in the newest layer by its second add */
        if (i + ADD_LOOKAHEAD < n) prefetch_newest(f, hashes[i + ADD_LOOKAHEAD]);
        bk_status s = add_newest(f, hashes[i]);
        if (s != BK_OK && s != BK_EEXISTS) {
            if (done) *done = i;
            return s;
        }
    }
    return bk__batch_done(done, n);
}

bk_status bk_scalable_add_many(bk_scalable *f, const void *const *keys, const size_t *lens, size_t n,
                               size_t *done)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return bk__batch_refused(done);
    uint64_t h[ADD_CHUNK];
    for (size_t i = 0, c = 0; i < n; i += c) {
        size_t d = 0;
        c = bk__hash_chunk(h, ADD_CHUNK, keys, lens, i, n, f->seed);
        bk_status s = bk_scalable_add_hashes(f, h, c, &d);
        if (s != BK_OK) {
            if (done) *done = i + d;
            return s;
        }
    }
    return bk__batch_done(done, n);
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
    layer *const *ls = SC_LAYERS(f);
    for (uint32_t l = nl; l-- > 0;)
        if (sc_bytes(ls[l]) >= BIG_LAYER_BYTES) big[nbig++] = ls[l];
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

static size_t classic_contains_hashes(const bk_scalable *f, const uint64_t *hashes, size_t n, uint8_t *results)
{
    enum { STEP = 16 };
    const uint32_t nl = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    layer *const *layers = SC_LAYERS(f);
    const uint64_t all = nl == 64 ? ~UINT64_C(0) : (UINT64_C(1) << nl) - 1;
    uint64_t bigmask = 0;
    for (uint32_t l = 0; l < nl; l++)
        if (sc_bytes(layers[l]) >= BIG_LAYER_BYTES) bigmask |= UINT64_C(1) << l;
    size_t present = 0;
    for (size_t i = 0; i < n; i += STEP) {
        const size_t cnt = n - i < STEP ? n - i : STEP;
        bk__probe pr[STEP];
        uint64_t alive[STEP];
        uint8_t found[STEP];
        for (size_t j = 0; j < cnt; j++) {
            pr[j] = bk__probe_start(hashes[i + j]);
            alive[j] = all;
            found[j] = 0;
            for (uint64_t a = bigmask; a; a &= a - 1) {
                const layer *L = layers[__builtin_ctzll(a)];
                BK_PREFETCH(&L->words[bk__probe_at(&pr[j], L->m) >> 6]);
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
                    uint64_t bit = bk__probe_at(&pr[j], L->m);
                    uint64_t hit = (__atomic_load_n(&L->words[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63)) & 1;
                    next |= hit << l;
                    done |= (uint64_t)(hit & (L->k == t + 1)) << l;
                }
                bk__probe_next(&pr[j], t);
                if (done) {
                    found[j] = 1;
                    next = 0;
                }
                alive[j] = next;
                any |= next;
                for (uint64_t a = next & bigmask; a; a &= a - 1) {
                    const layer *L = layers[__builtin_ctzll(a)];
                    BK_PREFETCH(&L->words[bk__probe_at(&pr[j], L->m) >> 6]);
                }
            }
        }
        /* the few (key, layer) pairs still alive: prefetch all their remaining probes, then test them */
        if (any) {
            for (size_t j = 0; j < cnt; j++)
                for (uint64_t a = alive[j] & bigmask; a; a &= a - 1) {
                    const layer *L = layers[__builtin_ctzll(a)];
                    bk__probe q = pr[j];
                    for (uint32_t u = t; u < L->k; u++) {
                        BK_PREFETCH(&L->words[bk__probe_at(&q, L->m) >> 6]);
                        bk__probe_next(&q, u);
                    }
                }
            for (size_t j = 0; j < cnt; j++)
                for (uint64_t a = alive[j]; a && !found[j]; a &= a - 1)
                    found[j] = layer_rest(layers[__builtin_ctzll(a)], t, pr[j]);
        }
        for (size_t j = 0; j < cnt; j++) {
            if (results) results[i + j] = found[j];
            present += found[j];
        }
    }
    return present;
}

bk_status bk_scalable_contains_hashes(const bk_scalable *f, const uint64_t *hashes, size_t n, uint8_t *results,
                                      size_t *hits)
{
    if (!f || (!hashes && n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, f->classic ? classic_contains_hashes(f, hashes, n, results)
                                           : blocked_contains_hashes(f, hashes, n, results));
}

static size_t classic_query_chunk(const void *f, const uint64_t *h, size_t n, uint8_t *results)
{
    return classic_contains_hashes(f, h, n, results);
}

bk_status bk_scalable_contains_many(const bk_scalable *f, const void *const *keys, const size_t *lens, size_t n,
                                    uint8_t *results, size_t *hits)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return bk__batch_refused(hits);
    if (!f->classic) return bk__batch_done(hits, blocked_contains_many(f, keys, lens, n, results));
    return bk__batch_done(hits, bk__query_by_chunks(f, f->seed, keys, lens, n, results, classic_query_chunk));
}

