/* Ribbon filter: the query paths (one key and batches; body 1 and body 2; portable, POPCNT, AVX2,
 * AVX-512), chosen per filter by bk__ribbon_pick_paths. */
#include "filters/ribbon_impl.h"

/* ---- queries ---- */

/* Where a key's check reads: its first slot's block in a system whose words start at base, and the
 * columns there. */
BK_INLINE const u128 *rb_block(const u128 *base, uint32_t lo, uint64_t upper, uint64_t blk, uint32_t *cols)
{
    return base + rb_block_at(lo, upper, blk, cols);
}

/* The dot products of x's row with the solution's columns, compared with its fingerprint: block
 * blk's word j holds slots [blk * 128, +128) of column j, and the next block's word j the 128 after.
 * The row, shifted to the key's offset in the block, is four 64-bit words; each column's parity goes
 * to its bit of one word, compared with the fingerprint once at the end. */
BK_INLINE bool rb_match(const u128 *base, uint32_t lo, uint64_t upper, uint64_t x, uint64_t start)
{
    uint32_t cols;
    const uint64_t *a = (const uint64_t *)(const void *)rb_block(base, lo, upper, start >> 7, &cols);
    const uint64_t *next = a + 2 * cols;
    unsigned o = (unsigned)(start & 127);
    u128 c = rb_coef(x);
    u128 ca = c << o, cb = o ? c >> (128 - o) : 0;
    const uint64_t c0 = (uint64_t)ca, c1 = (uint64_t)(ca >> 64), c2 = (uint64_t)cb, c3 = (uint64_t)(cb >> 64);
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
 * masked words' XOR. rb_segments finds them by the block's arithmetic, as the layout is written: the
 * portable paths' and the reference the vector paths (rb_segments_v) are tested against.
 */
typedef struct rb_seg {
    const uint64_t *s0, *s1, *s2;
    uint64_t m0, m1, m2;
    uint64_t cols;
} rb_seg;

BK_INLINE rb_seg rb_segments(const u128 *words, uint32_t lo, uint64_t upper, uint64_t x, uint64_t start)
{
    rb_seg g;
    const uint64_t *base = (const uint64_t *)(const void *)words;
    const uint64_t b = start >> 7;
    const unsigned r = (unsigned)start & 63;
    const uint64_t h = (start >> 6) & 1;
    /* the key's block has c columns; its words start at 2 * (b * lo + max(0, b - upper)) */
    const bool ex = b >= upper;
    const uint32_t c = lo + ex;
    const uint64_t off = b * lo + (ex ? b - upper : 0);
    /* the segments in a row: the key's (half h of block b), the next, and the one after (of block
     * b + 1: its first half after the second half of b, its second after its first; block b + 1
     * has one column more than b when it is the first with lo + 1). No branch: h is a coin flip. */
    g.s0 = base + 2 * off + h * c;
    g.s1 = g.s0 + c;
    g.s2 = g.s1 + c + (h & (b + 1 == upper));
    uint64_t a = bk__remix(x), L = a | 1, H = a * COEF_MUL;
    g.m0 = L << r;
    g.m1 = (H << r) | ((L >> 1) >> (63 - r));
    g.m2 = (H >> 1) >> (63 - r);
    g.cols = c;
    return g;
}

BK_INLINE bool rb_match2(const u128 *base, uint32_t lo, uint64_t upper, uint64_t x, uint64_t start)
{
    rb_seg g = rb_segments(base, lo, upper, x, start);
    uint64_t got = 0;
    for (uint32_t j = 0; j < g.cols; j++)
        got |= (uint64_t)__builtin_parityll((g.s0[j] & g.m0) ^ (g.s1[j] & g.m1) ^ (g.s2[j] & g.m2)) << j;
    return ((got ^ rb_fp(x)) & ((UINT64_C(1) << g.cols) - 1)) == 0;
}

#ifdef BK_X86
/*
 * The vector paths' segments: the same three as rb_segments, their places from the key's segment
 * index g = start / 64 alone. Segment g of a shard has lo columns below U = 2 * upper and lo + 1 from
 * there, so it starts at word g * lo + max(0, g - U); the next two follow it at its width and the
 * next one's. The masks use that a shift by start on x86 takes start mod 64.
 */
/* Shifts by n mod 64, as x86-64's shift instructions take their count (C leaves a count of 64 or
 * more undefined, and the compiler would mask it again). */
#ifdef __x86_64__
RB_T_AVX2 BK_INLINE uint64_t shl_mod64(uint64_t v, uint64_t n)
{
    __asm__("shlx %2, %1, %0" : "=r"(v) : "r"(v), "r"(n));
    return v;
}
RB_T_AVX2 BK_INLINE uint64_t shr_mod64(uint64_t v, uint64_t n)
{
    __asm__("shrx %2, %1, %0" : "=r"(v) : "r"(v), "r"(n));
    return v;
}
#else
BK_INLINE uint64_t shl_mod64(uint64_t v, uint64_t n) { return v << (n & 63); }
BK_INLINE uint64_t shr_mod64(uint64_t v, uint64_t n) { return v >> (n & 63); }
#endif

RB_T_AVX2 BK_INLINE rb_seg rb_segments_v(const u128 *words, uint32_t lo, uint64_t upper, uint64_t x, uint64_t start)
{
    rb_seg s;
    /* d = g - U; its sign spread over the word (-1 below U, else 0) */
    const uint64_t g = start >> 6, d = g - 2 * upper;
    const uint64_t neg = (uint64_t)((int64_t)d >> 63), neg1 = (uint64_t)((int64_t)(d + 1) >> 63);
    s.cols = lo + 1 + neg;
    s.s0 = (const uint64_t *)(const void *)words + g * lo + (d & ~neg);
    s.s1 = s.s0 + s.cols;
    s.s2 = s.s1 + (lo + 1 + neg1);
    const uint64_t a = bk__remix(x), H = a * COEF_MUL;
    s.m0 = shl_mod64(a | 1, start);
    s.m1 = shl_mod64(H, start) | shr_mod64(a >> 1, ~start); /* (a | 1) >> 1 is a >> 1 */
    s.m2 = shr_mod64(H >> 1, ~start);
    return s;
}

/* A key's answer from its columns' parities (bit j: column j): its fingerprint on its columns. */
BK_INLINE bool rb_verdict(uint64_t got, uint64_t x, uint64_t cols)
{
    return ((got ^ x) & ((UINT64_C(1) << cols) - 1)) == 0; /* x's low 32 bits: rb_fp(x); cols < 32 */
}

/* AVX2, eight columns a round: four columns' words per vector, the two vectors' 64-bit lanes folded
 * to 32 bits and merged into one vector of eight in column order, each lane's parity folded up into
 * its top bit and the eight bits taken by one movemask. */
RB_T_AVX2 BK_INLINE uint64_t avx2_round(const rb_seg *g, __m256i M0, __m256i M1, __m256i M2, uint32_t j)
{
    __m256i p = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(g->s0 + j)), M0);
    p = _mm256_xor_si256(p, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(g->s1 + j)), M1));
    p = _mm256_xor_si256(p, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(g->s2 + j)), M2));
    __m256i q = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(g->s0 + j + 4)), M0);
    q = _mm256_xor_si256(q, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(g->s1 + j + 4)), M1));
    q = _mm256_xor_si256(q, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(g->s2 + j + 4)), M2));
    p = _mm256_xor_si256(p, _mm256_srli_epi64(p, 32)); /* columns j..j+3 in the low halves */
    q = _mm256_xor_si256(q, _mm256_slli_epi64(q, 32)); /* columns j+4..j+7 in the high halves */
    __m256i v = _mm256_permutevar8x32_epi32(_mm256_blend_epi32(p, q, 0xAA), _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    v = _mm256_xor_si256(v, _mm256_slli_epi32(v, 16));
    v = _mm256_xor_si256(v, _mm256_slli_epi32(v, 8));
    v = _mm256_xor_si256(v, _mm256_slli_epi32(v, 4));
    v = _mm256_xor_si256(v, _mm256_slli_epi32(v, 2));
    v = _mm256_xor_si256(v, _mm256_slli_epi32(v, 1)); /* bit 31: the lane's parity */
    return (uint64_t)(unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(v)) << j;
}

/* The kernels take `rounds` rounds of eight columns, a constant of each path: enough for the
 * filter's widest key (lo + 1 columns), with no loop and no exit to predict. Words past a key's last
 * column (of the next segment, the next shard or the tail) are read and masked away: at most lo + 8
 * past its third segment's start, inside that segment's columns and the 64 zero bytes after the last
 * shard. */
RB_T_AVX2 BK_INLINE bool avx2_match(const u128 *base, uint32_t lo, uint64_t upper, uint64_t x, uint64_t start,
                                    unsigned rounds)
{
    const rb_seg g = rb_segments_v(base, lo, upper, x, start);
    const __m256i M0 = _mm256_set1_epi64x((long long)g.m0), M1 = _mm256_set1_epi64x((long long)g.m1),
                  M2 = _mm256_set1_epi64x((long long)g.m2);
    uint64_t got = 0;
#pragma GCC unroll 4
    for (unsigned i = 0; i < rounds; i++) got |= avx2_round(&g, M0, M1, M2, 8 * i);
    return rb_verdict(got, x, g.cols);
}

#ifdef __x86_64__
/* AVX-512 and its per-lane popcount: eight columns' words in one vector per segment, the three masked
 * words XORed by two ternary-logic steps, each lane's popcount shifted to its sign bit and tested
 * into a mask register whose eight bits are the columns' parities. Written in assembly to use
 * registers zmm16-zmm19 only: code that leaves zmm0-zmm15 alone has no dirty upper state to clear
 * on return (those are the registers the SSE transitions track), so no vzeroupper, which on some
 * CPUs holds the next key's work back (one-key calls about 13% faster in the cache on one). */
#define RB_512_MASKS                                                                                        \
    "vpbroadcastq %[m0], %%zmm16\n\t"                                                                       \
    "vpbroadcastq %[m1], %%zmm17\n\t"                                                                       \
    "vpbroadcastq %[m2], %%zmm18\n\t"
/* round r: words [8r, 8r + 8) of each segment (byte offset off), its eight parities in k1 */
#define RB_512_ROUND(off)                                                                                   \
    "vpandq " off "(%[s0]), %%zmm16, %%zmm19\n\t"                                                           \
    "vpternlogq $0x78, " off "(%[s1]), %%zmm17, %%zmm19\n\t" /* 0x78: a ^ (b & c) */                       \
    "vpternlogq $0x78, " off "(%[s2]), %%zmm18, %%zmm19\n\t"                                                \
    "vpopcntq %%zmm19, %%zmm19\n\t"                                                                         \
    "vpsllq $63, %%zmm19, %%zmm19\n\t"                                                                      \
    "vptestmq %%zmm19, %%zmm19, %%k1\n\t"
/* its bits to bits [8r, 8r + 8) of got */

RB_T_AVX512 BK_INLINE bool avx512_match(const u128 *base, uint32_t lo, uint64_t upper, uint64_t x, uint64_t start,
                                        unsigned rounds)
{
    const rb_seg g = rb_segments_v(base, lo, upper, x, start);
    uint64_t got, t;
#define RB_512_ASM(text)                                                                                    \
    __asm__(RB_512_MASKS RB_512_ROUND("0") "kmovw %%k1, %k[got]\n\t" text                                \
            : [got] "=&r"(got), [t] "=&r"(t)                                                                \
            : [s0] "r"(g.s0), [s1] "r"(g.s1), [s2] "r"(g.s2), [m0] "r"(g.m0), [m1] "r"(g.m1), [m2] "r"(g.m2) \
            : "xmm16", "xmm17", "xmm18", "xmm19", "k1", "memory")
    RB_512_BY_ROUNDS(rounds, RB_512_ASM, RB_512_ROUND);
#undef RB_512_ASM
    (void)t;
    return rb_verdict(got, x, g.cols);
}
#else
/* The same with intrinsics (32-bit x86 has no zmm16-zmm31). */
RB_T_AVX512 BK_INLINE bool avx512_match(const u128 *base, uint32_t lo, uint64_t upper, uint64_t x, uint64_t start,
                                        unsigned rounds)
{
    const rb_seg g = rb_segments_v(base, lo, upper, x, start);
    const __m512i M0 = _mm512_set1_epi64((long long)g.m0), M1 = _mm512_set1_epi64((long long)g.m1),
                  M2 = _mm512_set1_epi64((long long)g.m2);
    uint64_t got = 0;
#pragma GCC unroll 4
    for (unsigned i = 0; i < rounds; i++) {
        __m512i v = _mm512_and_si512(_mm512_loadu_si512((const void *)(g.s0 + 8 * i)), M0);
        v = _mm512_ternarylogic_epi64(v, _mm512_loadu_si512((const void *)(g.s1 + 8 * i)), M1, 0x78);
        v = _mm512_ternarylogic_epi64(v, _mm512_loadu_si512((const void *)(g.s2 + 8 * i)), M2, 0x78);
        v = _mm512_slli_epi64(_mm512_popcnt_epi64(v), 63);
        got |= (uint64_t)_mm512_test_epi64_mask(v, v) << (8 * i);
    }
    return rb_verdict(got, x, g.cols);
}
#endif

/* The kernels as the paths take them: one to four rounds (MAX_COLS columns at most). */
#define RB_KERNELS(r)                                                                                          \
    RB_T_AVX2 BK_INLINE bool rb_match2_avx2_##r(const u128 *b, uint32_t lo, uint64_t up, uint64_t x, uint64_t st) \
    {                                                                                                          \
        return avx2_match(b, lo, up, x, st, r);                                                                \
    }                                                                                                          \
    RB_T_AVX512 BK_INLINE bool rb_match2_avx512_##r(const u128 *b, uint32_t lo, uint64_t up, uint64_t x,      \
                                                    uint64_t st)                                               \
    {                                                                                                          \
        return avx512_match(b, lo, up, x, st, r);                                                              \
    }
RB_KERNELS(1)
RB_KERNELS(2)
RB_KERNELS(3)
RB_KERNELS(4)
#endif

/* A path's dot products: one of the rb_match functions, inlined where a path passes it. */
typedef bool rb_match_fn(const u128 *base, uint32_t lo, uint64_t upper, uint64_t x, uint64_t start);

/* A key's system: body 1, the one system; body 2, its shard. Its x, first slot, words and columns
 * split. */
typedef struct rb_key {
    uint64_t x, st, up;
    const u128 *base;
} rb_key;

BK_INLINE rb_key key_of(const bk_ribbon *f, uint64_t hash, bool sharded)
{
    rb_key k;
    if (sharded) {
        const rb_shard *sh = &f->shards[bk__range64(hash, f->nshards)];
        k.x = rb_x2(hash, sh->seed);
        k.st = bk__range64(k.x, sh->nstarts);
        k.base = f->words + sh->off;
        k.up = sh->upper;
    } else {
        k.x = rb_mix(hash, f->mix_seed);
        k.st = bk__range64(k.x, f->nstarts);
        k.base = f->words;
        k.up = f->upper;
    }
    return k;
}

/* The step of every path: a key's answer. */
BK_INLINE bool key_step(const bk_ribbon *f, const rb_key *k, rb_match_fn *match)
{
    return match(k->base, f->lo, k->up, k->x, k->st);
}

BK_INLINE bool has_body(const bk_ribbon *f, uint64_t hash, bool sharded, rb_match_fn *match)
{
    rb_key k = key_of(f, hash, sharded);
    return key_step(f, &k, match);
}

#define RB_BATCH 32

/* A batch chunk's first pass: each key's system and first slot, and its words prefetched (from its
 * first block's start to the end of the next block's columns). */
BK_INLINE void chunk_prep(const bk_ribbon *f, const uint64_t *hashes, size_t n, rb_key *c, bool sharded)
{
    const size_t span = (size_t)(f->lo + 1) * 24 + 8;
    for (size_t k = 0; k < n; k++) {
        c[k] = key_of(f, hashes[k], sharded);
        uint32_t cols;
        const uint8_t *p = (const uint8_t *)rb_block(c[k].base, f->lo, c[k].up, c[k].st >> 7, &cols);
        if (sharded) {
            /* body 2 reads three segments in a row: 3 cols (or 3 cols + 1) words from the key's
             * segment on, every line of them; the span of the filter's widest key, so the loop's
             * count is the same for every key (no mispredicted exit) */
            const uint8_t *s = p + ((c[k].st >> 6) & 1) * cols * 8;
            for (size_t o = 0; o < span; o += 64) BK_PREFETCH(s + o);
            BK_PREFETCH(s + span - 1);
            continue;
        }
        /* the key reads 2 * cols words from p on: its first and last line, and one between */
        size_t len = (size_t)cols * 32;
        BK_PREFETCH(p);
        BK_PREFETCH(p + len / 2);
        BK_PREFETCH(p + (len ? len - 1 : 0));
    }
}

BK_INLINE size_t batch_body(const bk_ribbon *f, const uint64_t *hashes, size_t n, uint8_t *results, bool sharded,
                            rb_match_fn *match)
{
    size_t present = 0;
    rb_key c[RB_BATCH];
    for (size_t i = 0; i < n; i += RB_BATCH) {
        size_t e = i + RB_BATCH < n ? i + RB_BATCH : n;
        chunk_prep(f, hashes + i, e - i, c, sharded);
        for (size_t k = 0; k < e - i; k++) {
            bool r = key_step(f, &c[k], match);
            if (results) results[i + k] = r;
            present += r;
        }
    }
    return present;
}

/* One path: its one-key query and its batch loop, for one body (1: one system, 2: shards). */
#define RB_PATH(name, attr, sharded, match)                                                                  \
    attr static bool has_##name(const bk_ribbon *f, uint64_t hash) { return has_body(f, hash, sharded, match); } \
    attr static size_t batch_##name(const bk_ribbon *f, const uint64_t *h, size_t n, uint8_t *r)                \
    {                                                                                                        \
        return batch_body(f, h, n, r, sharded, match);                                                       \
    }

RB_PATH(portable, , false, rb_match)
RB_PATH(portable2, , true, rb_match2)
#ifdef RB_HW_POPCNT
RB_PATH(popcnt, __attribute__((target("popcnt"))), false, rb_match)
RB_PATH(popcnt2, __attribute__((target("popcnt"))), true, rb_match2)
#endif
#ifdef BK_X86
RB_PATH(avx2_1, RB_T_AVX2, true, rb_match2_avx2_1)
RB_PATH(avx2_2, RB_T_AVX2, true, rb_match2_avx2_2)
RB_PATH(avx2_3, RB_T_AVX2, true, rb_match2_avx2_3)
RB_PATH(avx2_4, RB_T_AVX2, true, rb_match2_avx2_4)
RB_PATH(avx512_1, RB_T_AVX512, true, rb_match2_avx512_1)
RB_PATH(avx512_2, RB_T_AVX512, true, rb_match2_avx512_2)
RB_PATH(avx512_3, RB_T_AVX512, true, rb_match2_avx512_3)
RB_PATH(avx512_4, RB_T_AVX512, true, rb_match2_avx512_4)
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
    if (f->layers) {
        bk__ribbon3_pick_paths(f);
        return;
    }
    const bool sharded = f->shards != NULL;
    f->has = sharded ? has_portable2 : has_portable;
    f->batch = sharded ? batch_portable2 : batch_portable;
#ifdef RB_HW_POPCNT
    if (use_popcnt()) {
        f->has = sharded ? has_popcnt2 : has_popcnt;
        f->batch = sharded ? batch_popcnt2 : batch_popcnt;
    }
#endif
#ifdef BK_X86
    const unsigned cpu = bk__ribbon_portable ? 0 : bk__cpu_usable();
    const unsigned avx2 = BK_CPU_AVX2 | BK_CPU_BMI2 | BK_CPU_POPCNT,
                   avx512 = avx2 | BK_CPU_AVX512F | BK_CPU_AVX512POPCNT;
    /* rounds of eight columns for the filter's widest key (lo + 1 columns) */
    static bool (*const has_v[2][4])(const bk_ribbon *, uint64_t) = {
        { has_avx2_1, has_avx2_2, has_avx2_3, has_avx2_4 },
        { has_avx512_1, has_avx512_2, has_avx512_3, has_avx512_4 },
    };
    static size_t (*const batch_v[2][4])(const bk_ribbon *, const uint64_t *, size_t, uint8_t *) = {
        { batch_avx2_1, batch_avx2_2, batch_avx2_3, batch_avx2_4 },
        { batch_avx512_1, batch_avx512_2, batch_avx512_3, batch_avx512_4 },
    };
    const unsigned rounds = f->lo / 8; /* (lo + 1 + 7) / 8 - 1 */
    if (sharded && ((cpu & avx2) == avx2)) {
        const int wide = (cpu & avx512) == avx512;
        f->has = has_v[wide][rounds];
        f->batch = batch_v[wide][rounds];
    }
#endif
}

bool bk_ribbon_contains_hash(const bk_ribbon *f, uint64_t hash) { return f->has(f, hash); }

/* Keys of other lengths than 8 in a function of their own: the 8-byte path then needs no stack frame
 * (the general hash's call does). */
static __attribute__((noinline)) bool contains_any_len(const bk_ribbon *f, const void *key, size_t len)
{
    return f->has(f, bk__hash(key, len, f->seed));
}

/* 8-byte keys hash as the uint64 calls do (the same value as bk__hash of those bytes), with the seed's
 * part kept in the filter. */
bool bk_ribbon_contains(const bk_ribbon *f, const void *key, size_t len)
{
    if (BK_LIKELY(len == 8)) {
        uint64_t k;
        memcpy(&k, key, 8);
        return f->has(f, bk__hash_u64_folded1(k, f->u64_fold));
    }
    return contains_any_len(f, key, len);
}

bool bk_ribbon_contains_u64(const bk_ribbon *f, uint64_t key)
{
    return f->has(f, bk__hash_u64_folded1(key, f->u64_fold));
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

