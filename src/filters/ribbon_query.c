/* Ribbon filter: the query paths (one key and batches; body 1 and body 2; portable, POPCNT, AVX2),
 * chosen per filter by bk__ribbon_pick_paths. */
#include "filters/ribbon_impl.h"

/* ---- queries ---- */

/* Where a key's check reads: its first slot's block in a system whose words start at base, and the
 * columns there. */
BK_INLINE const u128 *rb_block(const u128 *base, uint32_t lo, uint64_t upper, uint64_t blk, uint32_t *cols)
{
    *cols = lo + (blk >= upper);
    return base + blk * lo + (blk > upper ? blk - upper : 0);
}

/* The dot products of x's row with the solution's columns, compared with its fingerprint: block
 * blk's word j holds slots [blk * 128, +128) of column j, and the next block's word j the 128 after.
 * The row, shifted to the key's offset in the block, is four 64-bit words; each column's parity goes
 * to its bit of one word, compared with the fingerprint once at the end. */
BK_INLINE bool rb_match(const u128 *base, uint32_t lo, uint64_t upper, uint64_t x, uint64_t start)
{
    uint64_t blk = start >> 7;
    const bool extra = blk >= upper;
    const uint64_t *a = (const uint64_t *)(const void *)(base + blk * lo + (blk > upper ? blk - upper : 0));
    const uint64_t *next = a + 2 * (lo + extra);
    unsigned o = (unsigned)(start & 127);
    u128 c = rb_coef(x);
    u128 ca = c << o, cb = o ? c >> (128 - o) : 0;
    const uint64_t c0 = (uint64_t)ca, c1 = (uint64_t)(ca >> 64), c2 = (uint64_t)cb, c3 = (uint64_t)(cb >> 64);
    const uint32_t cols = lo + extra;
    uint64_t got = 0;
    for (uint32_t j = 0; j < cols; j++) {
        uint64_t v = (a[2 * j] & c0) ^ (a[2 * j + 1] & c1) ^ (next[2 * j] & c2) ^ (next[2 * j + 1] & c3);
        got |= (uint64_t)__builtin_parityll(v) << j;
    }
    uint64_t mask = (UINT64_C(1) << cols) - 1;
    return ((got ^ rb_fp(x)) & mask) == 0;
}

/*
 * Body 2: block b's words are its first 64 slots of each of its c columns, then its last 64 (one u64
 * per column each). A row starting at offset o of block b covers 128 slots from there: three 64-slot
 * segments, the first the one o falls in, each read at the same column index, with the row cut into
 * three 64-bit masks (shifted by o mod 64). The dot product of column j is the parity of the three
 * masked words' XOR.
 */
typedef struct rb_seg {
    const uint64_t *s0, *s1, *s2;
    uint64_t m0, m1, m2;
    uint32_t cols;
} rb_seg;

BK_INLINE rb_seg rb_segments(const uint64_t *base, uint32_t lo, uint64_t upper, uint64_t x, uint64_t start)
{
    rb_seg g;
    uint64_t b = start >> 7;
    unsigned o = (unsigned)(start & 127), h = o >> 6, r = o & 63;
    const uint32_t c = lo + (b >= upper), c1 = lo + (b + 1 >= upper);
    const uint64_t *blk = base + 2 * (b * lo + (b > upper ? b - upper : 0)), *nb = blk + 2 * c;
    g.s0 = blk + h * c;
    g.s1 = h ? nb : blk + c;
    g.s2 = nb + h * c1;
    uint64_t a = bk__remix(x), L = a | 1, H = a * COEF_MUL;
    g.m0 = L << r;
    g.m1 = r ? (H << r) | (L >> (64 - r)) : H;
    g.m2 = (H >> 1) >> (63 - r);
    g.cols = c;
    return g;
}

BK_INLINE bool rb_match2(const uint64_t *base, uint32_t lo, uint64_t upper, uint64_t x, uint64_t start)
{
    rb_seg g = rb_segments(base, lo, upper, x, start);
    uint64_t got = 0;
    for (uint32_t j = 0; j < g.cols; j++)
        got |= (uint64_t)__builtin_parityll((g.s0[j] & g.m0) ^ (g.s1[j] & g.m1) ^ (g.s2[j] & g.m2)) << j;
    return ((got ^ rb_fp(x)) & ((UINT64_C(1) << g.cols) - 1)) == 0;
}

#ifdef BK_X86
/* The same with AVX2, eight columns a round: four columns' words per vector, the two vectors' 64-bit
 * lanes folded to 32 bits and merged into one vector of eight in column order, folded to 4 bits, the
 * parity of each looked up in 0x6996 and its eight bits taken by one movemask. Words past the last
 * column (of the next segment, the next shard or the tail) are read and masked away. */
RB_T_AVX2 BK_INLINE bool rb_match2_avx2(const uint64_t *base, uint32_t lo, uint64_t upper, uint64_t x, uint64_t start)
{
    rb_seg g = rb_segments(base, lo, upper, x, start);
    const __m256i M0 = _mm256_set1_epi64x((long long)g.m0), M1 = _mm256_set1_epi64x((long long)g.m1),
                  M2 = _mm256_set1_epi64x((long long)g.m2);
    const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7), nib = _mm256_set1_epi32(15),
                  table = _mm256_set1_epi32(0x6996);
    uint64_t got = 0;
    for (uint32_t j = 0; j < g.cols; j += 8) {
        __m256i p = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(g.s0 + j)), M0);
        p = _mm256_xor_si256(p, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(g.s1 + j)), M1));
        p = _mm256_xor_si256(p, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(g.s2 + j)), M2));
        __m256i q = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(g.s0 + j + 4)), M0);
        q = _mm256_xor_si256(q, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(g.s1 + j + 4)), M1));
        q = _mm256_xor_si256(q, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(g.s2 + j + 4)), M2));
        p = _mm256_xor_si256(p, _mm256_srli_epi64(p, 32)); /* columns j..j+3 in the low halves */
        q = _mm256_xor_si256(q, _mm256_slli_epi64(q, 32)); /* columns j+4..j+7 in the high halves */
        __m256i v = _mm256_permutevar8x32_epi32(_mm256_blend_epi32(p, q, 0xAA), order);
        v = _mm256_xor_si256(v, _mm256_srli_epi32(v, 16));
        v = _mm256_xor_si256(v, _mm256_srli_epi32(v, 8));
        v = _mm256_xor_si256(v, _mm256_srli_epi32(v, 4));
        v = _mm256_slli_epi32(_mm256_srlv_epi32(table, _mm256_and_si256(v, nib)), 31);
        got |= (uint64_t)(unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(v)) << j;
    }
    return ((got ^ rb_fp(x)) & ((UINT64_C(1) << g.cols) - 1)) == 0;
}
#endif

/* Body 1: one system; body 2: the key's shard first. */
BK_INLINE bool has_body(const bk_ribbon *f, uint64_t hash, bool sharded)
{
    if (sharded) {
        const rb_shard *sh = &f->shards[bk__range64(hash, f->nshards)];
        uint64_t x = rb_x2(hash, sh->seed);
        return rb_match2((const uint64_t *)(const void *)(f->words + sh->off), f->lo, sh->upper, x,
                         bk__range64(x, sh->nstarts));
    }
    uint64_t x = rb_mix(hash, f->mix_seed);
    return rb_match(f->words, f->lo, f->upper, x, bk__range64(x, f->nstarts));
}

#define RB_BATCH 32

/* A batch chunk's first pass: each key's x, first slot, system and columns split, and its words
 * prefetched (from its first block's start to the end of the next block's columns). */
typedef struct rb_chunk {
    uint64_t x[RB_BATCH], st[RB_BATCH], up[RB_BATCH];
    const u128 *base[RB_BATCH];
} rb_chunk;

BK_INLINE void chunk_prep(const bk_ribbon *f, const uint64_t *hashes, size_t n, rb_chunk *c, bool sharded)
{
    for (size_t k = 0; k < n; k++) {
        if (sharded) {
            const rb_shard *sh = &f->shards[bk__range64(hashes[k], f->nshards)];
            c->x[k] = rb_x2(hashes[k], sh->seed);
            c->st[k] = bk__range64(c->x[k], sh->nstarts);
            c->base[k] = f->words + sh->off;
            c->up[k] = sh->upper;
        } else {
            c->x[k] = rb_mix(hashes[k], f->mix_seed);
            c->st[k] = bk__range64(c->x[k], f->nstarts);
            c->base[k] = f->words;
            c->up[k] = f->upper;
        }
        uint32_t cols;
        const uint8_t *p = (const uint8_t *)rb_block(c->base[k], f->lo, c->up[k], c->st[k] >> 7, &cols);
        if (sharded) {
            /* body 2 reads three segments in a row: 3 cols (or 3 cols + 1) words from the key's
             * segment on, every line of them */
            const uint8_t *s = p + ((c->st[k] >> 6) & 1) * cols * 8, *end = s + (size_t)cols * 24 + 8;
            for (const uint8_t *l = s; l < end; l += 64) BK_PREFETCH(l);
            BK_PREFETCH(end - 1);
            continue;
        }
        /* the key reads 2 * cols words from p on: its first and last line, and one between */
        size_t len = (size_t)cols * 32;
        BK_PREFETCH(p);
        BK_PREFETCH(p + len / 2);
        BK_PREFETCH(p + (len ? len - 1 : 0));
    }
}

BK_INLINE size_t batch_body(const bk_ribbon *f, const uint64_t *hashes, size_t n, uint8_t *results, bool sharded)
{
    size_t present = 0;
    rb_chunk c;
    for (size_t i = 0; i < n; i += RB_BATCH) {
        size_t e = i + RB_BATCH < n ? i + RB_BATCH : n;
        chunk_prep(f, hashes + i, e - i, &c, sharded);
        for (size_t k = 0; k < e - i; k++) {
            bool r = sharded ? rb_match2((const uint64_t *)(const void *)c.base[k], f->lo, c.up[k], c.x[k], c.st[k])
                             : rb_match(c.base[k], f->lo, c.up[k], c.x[k], c.st[k]);
            if (results) results[i + k] = r;
            present += r;
        }
    }
    return present;
}

static bool has_portable(const bk_ribbon *f, uint64_t hash) { return has_body(f, hash, false); }
static size_t batch_portable(const bk_ribbon *f, const uint64_t *h, size_t n, uint8_t *r)
{
    return batch_body(f, h, n, r, false);
}
static bool has2_portable(const bk_ribbon *f, uint64_t hash) { return has_body(f, hash, true); }
static size_t batch2_portable(const bk_ribbon *f, const uint64_t *h, size_t n, uint8_t *r)
{
    return batch_body(f, h, n, r, true);
}
#ifdef RB_HW_POPCNT
__attribute__((target("popcnt"))) static bool has_popcnt(const bk_ribbon *f, uint64_t hash)
{
    return has_body(f, hash, false);
}
__attribute__((target("popcnt"))) static size_t batch_popcnt(const bk_ribbon *f, const uint64_t *h, size_t n, uint8_t *r)
{
    return batch_body(f, h, n, r, false);
}
__attribute__((target("popcnt"))) static bool has2_popcnt(const bk_ribbon *f, uint64_t hash)
{
    return has_body(f, hash, true);
}
__attribute__((target("popcnt"))) static size_t batch2_popcnt(const bk_ribbon *f, const uint64_t *h, size_t n,
                                                              uint8_t *r)
{
    return batch_body(f, h, n, r, true);
}
#endif
#ifdef BK_X86
RB_T_AVX2 static bool has2_avx2(const bk_ribbon *f, uint64_t hash)
{
    const rb_shard *sh = &f->shards[bk__range64(hash, f->nshards)];
    uint64_t x = rb_x2(hash, sh->seed);
    return rb_match2_avx2((const uint64_t *)(const void *)(f->words + sh->off), f->lo, sh->upper, x,
                          bk__range64(x, sh->nstarts));
}
RB_T_AVX2 static size_t batch2_avx2(const bk_ribbon *f, const uint64_t *hashes, size_t n, uint8_t *results)
{
    size_t present = 0;
    rb_chunk c;
    for (size_t i = 0; i < n; i += RB_BATCH) {
        size_t e = i + RB_BATCH < n ? i + RB_BATCH : n;
        chunk_prep(f, hashes + i, e - i, &c, true);
        for (size_t k = 0; k < e - i; k++) {
            bool r = rb_match2_avx2((const uint64_t *)(const void *)c.base[k], f->lo, c.up[k], c.x[k], c.st[k]);
            if (results) results[i + k] = r;
            present += r;
        }
    }
    return present;
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
void bk__ribbon_pick_paths(bk_ribbon *f)
{
    if (f->count == 0) {
        f->has = has_none;
        f->batch = batch_none;
        return;
    }
    const bool sharded = f->shards != NULL;
    f->has = sharded ? has2_portable : has_portable;
    f->batch = sharded ? batch2_portable : batch_portable;
#ifdef RB_HW_POPCNT
    if (use_popcnt()) {
        f->has = sharded ? has2_popcnt : has_popcnt;
        f->batch = sharded ? batch2_popcnt : batch_popcnt;
    }
#endif
#ifdef BK_X86
    const unsigned need = BK_CPU_AVX2 | BK_CPU_BMI2 | BK_CPU_POPCNT;
    if (sharded && !bk__ribbon_portable && (bk__cpu_usable() & need) == need) {
        f->has = has2_avx2;
        f->batch = batch2_avx2;
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

