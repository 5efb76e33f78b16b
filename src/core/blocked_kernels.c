/*
 * The blocked engine's kernels (blocked_engine.h): one-key insert and query for 256-bit split and
 * 512-bit blocks on the scalar, AVX2 and AVX-512 paths, the batch loops around them, and the
 * scalable chain's 1024-bit whole-chain test. The AVX2 and AVX-512 functions carry target
 * attributes, so the library itself needs no -mavx2; a filter picks its path once (bk__blk_ops_for).
 *
 * The batch loops are written once (blk_*_loop, always inlined with the one-key kernel as a constant
 * argument) and each path's batch function is an ordinary function that calls its loop, so every
 * kernel has one definition to find and the per-key step still compiles into the loop.
 */
#include "core/blocked_engine.h"
#include "core/simd.h"

BK_INLINE uint64_t load_relaxed(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

typedef void (*blk_add_fn)(const bk__blk *e, uint64_t h);
typedef bool (*blk_has_fn)(const bk__blk *e, uint64_t h);

/* The one-key uint64 inserts end here: count the key and give the call's status, so the public call
 * reaches them by a tail jump (no frame, no return into the wrapper to count). */
BK_INLINE bk_status counted(const bk__blk *e)
{
    (*e->count)++;
    return BK_OK;
}

/* ================= batch loops (inlined into each path's functions) ================= */

BK_INLINE void blk_add_hashes_loop(const bk__blk *e, const uint64_t *hs, size_t n, unsigned shift, blk_add_fn add1)
{
    size_t pre = n < BK_PF ? n : BK_PF;
    for (size_t i = 0; i < pre; i++) BK_PREFETCH_W(bk__blk_block(e->words, e->blocks, hs[i], shift));
    for (size_t i = 0; i < n; i++) {
        if (i + BK_PF < n) BK_PREFETCH_W(bk__blk_block(e->words, e->blocks, hs[i + BK_PF], shift));
        add1(e, hs[i]);
    }
}

BK_INLINE size_t blk_contains_hashes_loop(const bk__blk *e, const uint64_t *hs, size_t n, uint8_t *res,
                                          unsigned shift, blk_has_fn has1)
{
    size_t present = 0, pre = n < BK_PF ? n : BK_PF;
    for (size_t i = 0; i < pre; i++) BK_PREFETCH(bk__blk_block(e->words, e->blocks, hs[i], shift));
    for (size_t i = 0; i < n; i++) {
        if (i + BK_PF < n) BK_PREFETCH(bk__blk_block(e->words, e->blocks, hs[i + BK_PF], shift));
        bool r = has1(e, hs[i]);
        if (res) res[i] = r;
        present += r;
    }
    return present;
}

BK_INLINE void blk_add_many_loop(const bk__blk *e, const void *const *keys, const size_t *lens, size_t n,
                                 unsigned shift, blk_add_fn add1)
{
    uint64_t ring[BK_PF];
    size_t pre = n < BK_PF ? n : BK_PF;
    for (size_t i = 0; i < pre; i++) {
        ring[i] = bk__hash(keys[i], lens[i], e->seed);
        BK_PREFETCH_W(bk__blk_block(e->words, e->blocks, ring[i], shift));
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = ring[i % BK_PF];
        if (i + BK_PF < n) {
            uint64_t g = bk__hash(keys[i + BK_PF], lens[i + BK_PF], e->seed);
            ring[i % BK_PF] = g;
            BK_PREFETCH_W(bk__blk_block(e->words, e->blocks, g, shift));
        }
        add1(e, h);
    }
}

BK_INLINE size_t blk_contains_many_loop(const bk__blk *e, const void *const *keys, const size_t *lens, size_t n,
                                        uint8_t *res, unsigned shift, blk_has_fn has1)
{
    uint64_t ring[BK_PF];
    size_t present = 0, pre = n < BK_PF ? n : BK_PF;
    for (size_t i = 0; i < pre; i++) {
        ring[i] = bk__hash(keys[i], lens[i], e->seed);
        BK_PREFETCH(bk__blk_block(e->words, e->blocks, ring[i], shift));
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = ring[i % BK_PF];
        if (i + BK_PF < n) {
            uint64_t g = bk__hash(keys[i + BK_PF], lens[i + BK_PF], e->seed);
            ring[i % BK_PF] = g;
            BK_PREFETCH(bk__blk_block(e->words, e->blocks, g, shift));
        }
        bool r = has1(e, h);
        if (res) res[i] = r;
        present += r;
    }
    return present;
}

/* ================= scalar path ================= */

BK_INLINE void split_add_scalar(const bk__blk *e, uint64_t h)
{
    uint64_t *b = bk__blk_block(e->words, e->blocks, h, 2);
    uint32_t x = (uint32_t)h;
    b[0] |= bk__split_word(x, 0);
    b[1] |= bk__split_word(x, 1);
    b[2] |= bk__split_word(x, 2);
    b[3] |= bk__split_word(x, 3);
}

/* Relaxed atomic loads (plain loads on every mainstream target) keep a race with *_atomic defined. */
BK_INLINE bool split_contains_scalar(const bk__blk *e, uint64_t h)
{
    const uint64_t *b = bk__blk_block(e->words, e->blocks, h, 2);
    uint32_t x = (uint32_t)h;
    uint64_t m0 = bk__split_word(x, 0), m1 = bk__split_word(x, 1), m2 = bk__split_word(x, 2),
             m3 = bk__split_word(x, 3);
    return ((m0 & ~load_relaxed(&b[0])) | (m1 & ~load_relaxed(&b[1])) | (m2 & ~load_relaxed(&b[2])) |
            (m3 & ~load_relaxed(&b[3]))) == 0;
}

BK_INLINE void b512_add_scalar(const bk__blk *e, uint64_t h)
{
    uint64_t *b = bk__blk_block(e->words, e->blocks, h, 3);
    uint32_t x = (uint32_t)h;
    for (uint32_t i = 0; i < e->k; i++) {
        uint32_t pos = bk__b512_bit(x, i);
        b[pos >> 6] |= UINT64_C(1) << (pos & 63);
    }
}

/* Branch-free: with half the bits set, an early exit would mispredict about every other key. */
BK_INLINE bool b512_contains_scalar(const bk__blk *e, uint64_t h)
{
    const uint64_t *b = bk__blk_block(e->words, e->blocks, h, 3);
    uint32_t x = (uint32_t)h;
    uint64_t all = 1;
    for (uint32_t i = 0; i < e->k; i++) {
        uint32_t pos = bk__b512_bit(x, i);
        all &= load_relaxed(&b[pos >> 6]) >> (pos & 63);
    }
    return all & 1;
}

static void split_scalar_add(const bk__blk *e, uint64_t h) { split_add_scalar(e, h); }
static bool split_scalar_contains(const bk__blk *e, uint64_t h) { return split_contains_scalar(e, h); }
static bk_status split_scalar_add_u64(const bk__blk *e, uint64_t k)
{
    split_add_scalar(e, bk__hash_u64_folded(k, e->u64_fold));
    return counted(e);
}
static bool split_scalar_contains_u64(const bk__blk *e, uint64_t k)
{
    return split_contains_scalar(e, bk__hash_u64_folded(k, e->u64_fold));
}
static void split_scalar_add_hashes(const bk__blk *e, const uint64_t *hs, size_t n)
{
    blk_add_hashes_loop(e, hs, n, 2, split_add_scalar);
}
static size_t split_scalar_contains_hashes(const bk__blk *e, const uint64_t *hs, size_t n, uint8_t *res)
{
    return blk_contains_hashes_loop(e, hs, n, res, 2, split_contains_scalar);
}
static void split_scalar_add_many(const bk__blk *e, const void *const *keys, const size_t *lens, size_t n)
{
    blk_add_many_loop(e, keys, lens, n, 2, split_add_scalar);
}
static size_t split_scalar_contains_many(const bk__blk *e, const void *const *keys, const size_t *lens, size_t n,
                                         uint8_t *res)
{
    return blk_contains_many_loop(e, keys, lens, n, res, 2, split_contains_scalar);
}
static const bk__blk_ops split_scalar_ops = {
    .add = split_scalar_add,
    .contains = split_scalar_contains,
    .add_u64 = split_scalar_add_u64,
    .contains_u64 = split_scalar_contains_u64,
    .add_hashes = split_scalar_add_hashes,
    .contains_hashes = split_scalar_contains_hashes,
    .add_many = split_scalar_add_many,
    .contains_many = split_scalar_contains_many,
};

static void b512_scalar_add(const bk__blk *e, uint64_t h) { b512_add_scalar(e, h); }
static bool b512_scalar_contains(const bk__blk *e, uint64_t h) { return b512_contains_scalar(e, h); }
static bk_status b512_scalar_add_u64(const bk__blk *e, uint64_t k)
{
    b512_add_scalar(e, bk__hash_u64_folded(k, e->u64_fold));
    return counted(e);
}
static bool b512_scalar_contains_u64(const bk__blk *e, uint64_t k)
{
    return b512_contains_scalar(e, bk__hash_u64_folded(k, e->u64_fold));
}
static void b512_scalar_add_hashes(const bk__blk *e, const uint64_t *hs, size_t n)
{
    blk_add_hashes_loop(e, hs, n, 3, b512_add_scalar);
}
static size_t b512_scalar_contains_hashes(const bk__blk *e, const uint64_t *hs, size_t n, uint8_t *res)
{
    return blk_contains_hashes_loop(e, hs, n, res, 3, b512_contains_scalar);
}
static void b512_scalar_add_many(const bk__blk *e, const void *const *keys, const size_t *lens, size_t n)
{
    blk_add_many_loop(e, keys, lens, n, 3, b512_add_scalar);
}
static size_t b512_scalar_contains_many(const bk__blk *e, const void *const *keys, const size_t *lens, size_t n,
                                        uint8_t *res)
{
    return blk_contains_many_loop(e, keys, lens, n, res, 3, b512_contains_scalar);
}
static const bk__blk_ops b512_scalar_ops = {
    .add = b512_scalar_add,
    .contains = b512_scalar_contains,
    .add_u64 = b512_scalar_add_u64,
    .contains_u64 = b512_scalar_contains_u64,
    .add_hashes = b512_scalar_add_hashes,
    .contains_hashes = b512_scalar_contains_hashes,
    .add_many = b512_scalar_add_many,
    .contains_many = b512_scalar_contains_many,
};

/* 1024, a whole chain: the scalar form. */
static bool b1024_any_scalar(const uint64_t *const *blocks, const uint32_t *ks, uint32_t n, uint32_t x)
{
    uint64_t mask[16] = { 0 }, found = 0;
    uint32_t kc = 0;
    for (uint32_t l = 0; l < n; l++) {
        bk__b1024_mask_to_k(mask, &kc, ks[l], x);
        const uint64_t *w = blocks[l];
        uint64_t miss = 0;
        for (int i = 0; i < 16; i++) miss |= mask[i] & ~load_relaxed(&w[i]);
        found |= miss == 0;
    }
    return found != 0;
}

#ifdef BK_X86
/* ================= AVX2 path ================= */

BK_T_AVX2 BK_INLINE void split_add_avx2(const bk__blk *e, uint64_t h)
{
    __m256i *b = (__m256i *)bk__blk_block(e->words, e->blocks, h, 2);
    _mm256_storeu_si256(b, _mm256_or_si256(_mm256_loadu_si256(b), bk__split_mask_avx2((uint32_t)h)));
}

BK_T_AVX2 BK_INLINE bool split_contains_avx2(const bk__blk *e, uint64_t h)
{
    const __m256i *b = (const __m256i *)bk__blk_block(e->words, e->blocks, h, 2);
    return _mm256_testc_si256(_mm256_loadu_si256(b), bk__split_mask_avx2((uint32_t)h));
}

/* 512 layout, eight probes at a time: each lane picks its 32-bit word of the block from the two
 * halves by permutes, then all lanes test their bit. Lanes >= k shift their bit out (offset 32). */
BK_T_AVX2 BK_INLINE bool b512_test8_avx2(__m256i lo, __m256i hi, __m256i x, const uint32_t *salt,
                                         const uint32_t *off)
{
    __m256i pos = _mm256_srli_epi32(_mm256_mullo_epi32(x, _mm256_load_si256((const __m256i *)salt)), 23);
    __m256i bit = _mm256_or_si256(_mm256_and_si256(pos, _mm256_set1_epi32(31)),
                                  _mm256_loadu_si256((const __m256i *)off));
    __m256i one = _mm256_sllv_epi32(_mm256_set1_epi32(1), bit);
    __m256i idx = _mm256_srli_epi32(pos, 5);
    __m256 wl = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(lo, idx));
    __m256 wh = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(hi, idx));
    __m256 sel = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)); /* sign bit = word index bit 3 */
    return _mm256_testc_si256(_mm256_castps_si256(_mm256_blendv_ps(wl, wh, sel)), one);
}

BK_T_AVX2 BK_INLINE bool b512_contains_avx2(const bk__blk *e, uint64_t h)
{
    const __m256i *b = (const __m256i *)bk__blk_block(e->words, e->blocks, h, 3);
    const uint32_t *salt = bk__blk_salt[BK__SALT_BLOCKED];
    __m256i lo = _mm256_loadu_si256(b), hi = _mm256_loadu_si256(b + 1);
    __m256i x = _mm256_set1_epi32((int)(uint32_t)h);
    bool ok = b512_test8_avx2(lo, hi, x, salt, e->lane_off);
    if (e->k > 8) ok &= b512_test8_avx2(lo, hi, x, salt + 8, e->lane_off + 8);
    return ok;
}

BK_T_AVX2 static void split_avx2_add(const bk__blk *e, uint64_t h) { split_add_avx2(e, h); }
BK_T_AVX2 static bool split_avx2_contains(const bk__blk *e, uint64_t h) { return split_contains_avx2(e, h); }
BK_T_AVX2 static bk_status split_avx2_add_u64(const bk__blk *e, uint64_t k)
{
    split_add_avx2(e, bk__hash_u64_folded(k, e->u64_fold));
    return counted(e);
}
BK_T_AVX2 static bool split_avx2_contains_u64(const bk__blk *e, uint64_t k)
{
    return split_contains_avx2(e, bk__hash_u64_folded(k, e->u64_fold));
}
BK_T_AVX2 static void split_avx2_add_hashes(const bk__blk *e, const uint64_t *hs, size_t n)
{
    blk_add_hashes_loop(e, hs, n, 2, split_add_avx2);
}
BK_T_AVX2 static size_t split_avx2_contains_hashes(const bk__blk *e, const uint64_t *hs, size_t n, uint8_t *res)
{
    return blk_contains_hashes_loop(e, hs, n, res, 2, split_contains_avx2);
}
BK_T_AVX2 static void split_avx2_add_many(const bk__blk *e, const void *const *keys, const size_t *lens, size_t n)
{
    blk_add_many_loop(e, keys, lens, n, 2, split_add_avx2);
}
BK_T_AVX2 static size_t split_avx2_contains_many(const bk__blk *e, const void *const *keys, const size_t *lens,
                                                 size_t n, uint8_t *res)
{
    return blk_contains_many_loop(e, keys, lens, n, res, 2, split_contains_avx2);
}
/* SPLIT256 on AVX-512 uses these too: the AVX2 sequence is already one instruction per step, and
 * AVX-512 adds nothing (two keys per 512-bit register in the batch query measured the same, 1.25
 * ns/key in cache). */
static const bk__blk_ops split_avx2_ops = {
    .add = split_avx2_add,
    .contains = split_avx2_contains,
    .add_u64 = split_avx2_add_u64,
    .contains_u64 = split_avx2_contains_u64,
    .add_hashes = split_avx2_add_hashes,
    .contains_hashes = split_avx2_contains_hashes,
    .add_many = split_avx2_add_many,
    .contains_many = split_avx2_contains_many,
};

/* The uint64 query once more for CPUs with BMI2 (every AVX2 CPU but a few): the hash's rotations and
 * shifts then take their non-destructive forms (rorx), which drops the copies the one-key call spends
 * between them. Chosen in bk__blk_ops_for. */
#define BK_T_AVX2_BMI2 __attribute__((target("avx2,bmi,bmi2")))
/* The probe the other way round, for the one-key call: each lane of the block shifted right by its
 * probe's bit position, then one test that bit 0 is set in every lane against a vector of ones read
 * from memory: no vector of ones to build and no mask, one instruction fewer than
 * split_contains_avx2; the block by mulx (no copy of the hash into rax). */
static const uint32_t split_ones[8] __attribute__((aligned(32))) = { 1, 1, 1, 1, 1, 1, 1, 1 };
BK_T_AVX2_BMI2 static bool split_avx2b_contains_u64(const bk__blk *e, uint64_t k)
{
    uint64_t h = bk__hash_u64_folded1(k, e->u64_fold);
    const uint64_t *w = e->words; /* in a register: the block by base + index, as split_contains_vl */
    __asm__("" : "+r"(w));
    const __m256i *b = (const __m256i *)(w + (bk__range64_mulx(h, e->blocks) << 2)); /* bk__blk_block */
    __m256i v = _mm256_mullo_epi32(_mm256_set1_epi32((int)(uint32_t)h),
                                   _mm256_load_si256((const __m256i *)bk__blk_salt[BK__SALT_BLOCKED]));
    __m256i bits = _mm256_srlv_epi32(_mm256_loadu_si256(b), _mm256_srli_epi32(v, 27));
    bool present; /* vptest with the ones from memory (compilers would build them from an immediate) */
    __asm__("vptest %[ones], %[bits]" : "=@ccc"(present) : [bits] "x"(bits), [ones] "m"(split_ones));
    return present;
}
static const bk__blk_ops split_avx2b_ops = {
    .add = split_avx2_add,
    .contains = split_avx2_contains,
    .add_u64 = split_avx2_add_u64,
    .contains_u64 = split_avx2b_contains_u64,
    .add_hashes = split_avx2_add_hashes,
    .contains_hashes = split_avx2_contains_hashes,
    .add_many = split_avx2_add_many,
    .contains_many = split_avx2_contains_many,
};

/* The uint64 query once more for CPUs with AVX-512VL and BMI2: the same probe on the upper vector
 * registers (ymm16, ymm17), which are no part of the SSE state, so the call leaves no dirty upper
 * state behind and needs no vzeroupper; the hash broadcasts from its register in one step and the
 * block is tested straight from memory (vptestnmd: lanes whose bit is clear), and found by mulx. Same
 * answers (tests/test_u64.c holds every path's uint64 query to its hash query). */
#define BK_T_AVX512VL_BMI2 __attribute__((target("avx2,bmi,bmi2,avx512f,avx512vl")))
BK_T_AVX512VL_BMI2 BK_INLINE bool split_contains_vl(const bk__blk *e, uint64_t h)
{
    /* the words' address in a register of its own (loaded while the hash runs), so that the block's
     * address is a base + index operand of the test, one add less after the multiply */
    const uint64_t *w = e->words;
    __asm__("" : "+r"(w));
    const uint64_t(*b)[4] = (const uint64_t(*)[4])(w + (bk__range64_mulx(h, e->blocks) << 2));
    static const uint32_t one = 1;
    bool present;
    __asm__("vpbroadcastd %k[x], %%ymm16\n\t"
            "vpmulld %[salt], %%ymm16, %%ymm16\n\t"
            "vpsrld $27, %%ymm16, %%ymm16\n\t"
            "vpbroadcastd %[one], %%ymm17\n\t"
            "vpsllvd %%ymm16, %%ymm17, %%ymm16\n\t"
            "vptestnmd %[blk], %%ymm16, %%k1\n\t"
            "kortestw %%k1, %%k1"
            : "=@ccz"(present)
            : [x] "r"(h), [salt] "m"(*(const uint32_t(*)[8])bk__blk_salt[BK__SALT_BLOCKED]), [one] "m"(one),
              [blk] "m"(*b)
            : "xmm16", "xmm17", "k1");
    return present;
}
BK_T_AVX512VL_BMI2 static bool split_vl_contains_u64(const bk__blk *e, uint64_t k)
{
    return split_contains_vl(e, bk__hash_u64_folded1(k, e->u64_fold));
}
static const bk__blk_ops split_vl_ops = {
    .add = split_avx2_add,
    .contains = split_avx2_contains,
    .add_u64 = split_avx2_add_u64,
    .contains_u64 = split_vl_contains_u64,
    .add_hashes = split_avx2_add_hashes,
    .contains_hashes = split_avx2_contains_hashes,
    .add_many = split_avx2_add_many,
    .contains_many = split_avx2_contains_many,
};

/* 512 layout insert on AVX2: scalar. Scattering k bits into one line has no good AVX2 form: shifting
 * each probe's bit into both 256-bit halves measured 7.3 ns against 5.0 ns for k scalar ORs (k = 6). */
BK_T_AVX2 static bool b512_avx2_contains(const bk__blk *e, uint64_t h) { return b512_contains_avx2(e, h); }
BK_T_AVX2 static bool b512_avx2_contains_u64(const bk__blk *e, uint64_t k)
{
    return b512_contains_avx2(e, bk__hash_u64_folded(k, e->u64_fold));
}
BK_T_AVX2 static void b512_avx2_add_hashes(const bk__blk *e, const uint64_t *hs, size_t n)
{
    blk_add_hashes_loop(e, hs, n, 3, b512_add_scalar);
}
BK_T_AVX2 static size_t b512_avx2_contains_hashes(const bk__blk *e, const uint64_t *hs, size_t n, uint8_t *res)
{
    return blk_contains_hashes_loop(e, hs, n, res, 3, b512_contains_avx2);
}
BK_T_AVX2 static void b512_avx2_add_many(const bk__blk *e, const void *const *keys, const size_t *lens, size_t n)
{
    blk_add_many_loop(e, keys, lens, n, 3, b512_add_scalar);
}
BK_T_AVX2 static size_t b512_avx2_contains_many(const bk__blk *e, const void *const *keys, const size_t *lens,
                                                size_t n, uint8_t *res)
{
    return blk_contains_many_loop(e, keys, lens, n, res, 3, b512_contains_avx2);
}
static const bk__blk_ops b512_avx2_ops = {
    .add = b512_scalar_add,
    .contains = b512_avx2_contains,
    .add_u64 = b512_scalar_add_u64,
    .contains_u64 = b512_avx2_contains_u64,
    .add_hashes = b512_avx2_add_hashes,
    .contains_hashes = b512_avx2_contains_hashes,
    .add_many = b512_avx2_add_many,
    .contains_many = b512_avx2_contains_many,
};

/* 1024, a whole chain, AVX2: the mask in four registers, rebuilt only when k changes. */
BK_T_AVX2 static bool b1024_any_avx2(const uint64_t *const *blocks, const uint32_t *ks, uint32_t n, uint32_t x)
{
    uint64_t mask[16] = { 0 };
    __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
    uint32_t kc = 0;
    int found = 0;
    for (uint32_t l = 0; l < n; l++) {
        if (ks[l] != kc) {
            bk__b1024_mask_to_k(mask, &kc, ks[l], x);
            m0 = _mm256_loadu_si256((const __m256i *)mask);
            m1 = _mm256_loadu_si256((const __m256i *)(mask + 4));
            m2 = _mm256_loadu_si256((const __m256i *)(mask + 8));
            m3 = _mm256_loadu_si256((const __m256i *)(mask + 12));
        }
        const __m256i *w = (const __m256i *)blocks[l];
        __m256i miss = _mm256_or_si256(
            _mm256_or_si256(_mm256_andnot_si256(_mm256_loadu_si256(w), m0), _mm256_andnot_si256(_mm256_loadu_si256(w + 1), m1)),
            _mm256_or_si256(_mm256_andnot_si256(_mm256_loadu_si256(w + 2), m2), _mm256_andnot_si256(_mm256_loadu_si256(w + 3), m3)));
        found |= _mm256_testz_si256(miss, miss);
    }
    return found != 0;
}

/* ================= AVX-512 path ================= */

BK_T_AVX512 BK_INLINE __m512i b512_pos_avx512(uint64_t h)
{
    return _mm512_srli_epi32(_mm512_mullo_epi32(_mm512_set1_epi32((int)(uint32_t)h),
                                                _mm512_load_si512((const void *)bk__blk_salt[BK__SALT_BLOCKED])),
                             23);
}

/* 512 layout: all 16 probe lanes at once; vpermd fetches each lane's 32-bit word of the line. */
BK_T_AVX512 BK_INLINE bool b512_contains_avx512(const bk__blk *e, uint64_t h)
{
    const void *b = bk__blk_block(e->words, e->blocks, h, 3);
    __m512i pos = b512_pos_avx512(h);
    __m512i words = _mm512_permutexvar_epi32(_mm512_srli_epi32(pos, 5), _mm512_loadu_si512(b));
    __m512i one = _mm512_sllv_epi32(_mm512_set1_epi32(1), _mm512_and_si512(pos, _mm512_set1_epi32(31)));
    return _mm512_mask_testn_epi32_mask((__mmask16)e->kmask, words, one) == 0;
}

/* 512 layout insert: for each probe, broadcast its word index and bit, and OR the bit into the lane
 * whose index matches; then one read-modify-write of the line. */
BK_T_AVX512 BK_INLINE void b512_add_avx512(const bk__blk *e, uint64_t h)
{
    void *b = bk__blk_block(e->words, e->blocks, h, 3);
    __m512i pos = b512_pos_avx512(h);
    /* lane j covers bits [32 j, 32 j + 32): probe i's bit lands in lane j at shift pos_i - 32 j, and
     * every other lane gets a shift outside [0, 32) (negative ones wrap to huge), which sllv zeroes */
    const __m512i base = _mm512_set_epi32(480, 448, 416, 384, 352, 320, 288, 256, 224, 192, 160, 128, 96, 64, 32, 0);
    const __m512i one = _mm512_set1_epi32(1);
    __m512i acc = _mm512_setzero_si512();
    for (uint32_t i = 0; i < e->k; i++) {
        __m512i p = _mm512_permutexvar_epi32(_mm512_set1_epi32((int)i), pos);
        acc = _mm512_or_si512(acc, _mm512_sllv_epi32(one, _mm512_sub_epi32(p, base)));
    }
    _mm512_storeu_si512(b, _mm512_or_si512(_mm512_loadu_si512(b), acc));
}

BK_T_AVX512 static void b512_avx512_add(const bk__blk *e, uint64_t h) { b512_add_avx512(e, h); }
BK_T_AVX512 static bool b512_avx512_contains(const bk__blk *e, uint64_t h) { return b512_contains_avx512(e, h); }
BK_T_AVX512 static bk_status b512_avx512_add_u64(const bk__blk *e, uint64_t k)
{
    b512_add_avx512(e, bk__hash_u64_folded(k, e->u64_fold));
    return counted(e);
}
BK_T_AVX512 static bool b512_avx512_contains_u64(const bk__blk *e, uint64_t k)
{
    return b512_contains_avx512(e, bk__hash_u64_folded(k, e->u64_fold));
}
BK_T_AVX512 static void b512_avx512_add_hashes(const bk__blk *e, const uint64_t *hs, size_t n)
{
    blk_add_hashes_loop(e, hs, n, 3, b512_add_avx512);
}
BK_T_AVX512 static size_t b512_avx512_contains_hashes(const bk__blk *e, const uint64_t *hs, size_t n, uint8_t *res)
{
    return blk_contains_hashes_loop(e, hs, n, res, 3, b512_contains_avx512);
}
BK_T_AVX512 static void b512_avx512_add_many(const bk__blk *e, const void *const *keys, const size_t *lens,
                                             size_t n)
{
    blk_add_many_loop(e, keys, lens, n, 3, b512_add_avx512);
}
BK_T_AVX512 static size_t b512_avx512_contains_many(const bk__blk *e, const void *const *keys, const size_t *lens,
                                                    size_t n, uint8_t *res)
{
    return blk_contains_many_loop(e, keys, lens, n, res, 3, b512_contains_avx512);
}
static const bk__blk_ops b512_avx512_ops = {
    .add = b512_avx512_add,
    .contains = b512_avx512_contains,
    .add_u64 = b512_avx512_add_u64,
    .contains_u64 = b512_avx512_contains_u64,
    .add_hashes = b512_avx512_add_hashes,
    .contains_hashes = b512_avx512_contains_hashes,
    .add_many = b512_avx512_add_many,
    .contains_many = b512_avx512_contains_many,
};

/* 1024, a whole chain, AVX-512: the mask lives in two registers; probe b sets bit b & 63 of lane
 * b >> 6 by a masked OR. */
BK_T_AVX512 static bool b1024_any_avx512(const uint64_t *const *blocks, const uint32_t *ks, uint32_t n, uint32_t x)
{
    __m512i lo = _mm512_setzero_si512(), hi = lo;
    uint32_t kc = 0;
    unsigned found = 0;
    for (uint32_t l = 0; l < n; l++) {
        if (ks[l] < kc) {
            lo = hi = _mm512_setzero_si512();
            kc = 0;
        }
        for (; kc < ks[l]; kc++) {
            uint32_t b = bk__b1024_bit(x, kc), lane = 1u << (b >> 6);
            __m512i bit = _mm512_set1_epi64((long long)(UINT64_C(1) << (b & 63)));
            lo = _mm512_mask_or_epi64(lo, (__mmask8)lane, lo, bit);
            hi = _mm512_mask_or_epi64(hi, (__mmask8)(lane >> 8), hi, bit);
        }
        const uint64_t *w = blocks[l];
        /* (line & mask) != mask in some lane: the AND takes the line from memory */
        __mmask8 miss = _mm512_cmpneq_epi64_mask(_mm512_and_si512(_mm512_loadu_si512(w), lo), lo) |
                        _mm512_cmpneq_epi64_mask(_mm512_and_si512(_mm512_loadu_si512(w + 8), hi), hi);
        found |= miss == 0;
    }
    return found != 0;
}
#endif /* BK_X86 */

/* ================= selection ================= */

const bk__blk_ops *bk__blk_ops_for(bk_blocked_layout layout, bk_simd simd)
{
    bool split = layout == BK_BLOCKED_SPLIT256;
#ifdef BK_X86
    const unsigned vl = BK_CPU_AVX512F | BK_CPU_AVX512VL | BK_CPU_BMI2, cpu = bk__cpu_usable();
    const bk__blk_ops *split_vec = cpu & BK_CPU_BMI2 ? &split_avx2b_ops : &split_avx2_ops;
    if (simd == BK_SIMD_AVX512) return split ? ((cpu & vl) == vl ? &split_vl_ops : split_vec) : &b512_avx512_ops;
    if (simd == BK_SIMD_AVX2) return split ? split_vec : &b512_avx2_ops;
#else
    (void)simd;
#endif
    return split ? &split_scalar_ops : &b512_scalar_ops;
}

bool bk__b1024_any(bk_simd simd, const uint64_t *const *blocks, const uint32_t *ks, uint32_t n, uint32_t x)
{
#ifdef BK_X86
    if (simd == BK_SIMD_AVX512) return b1024_any_avx512(blocks, ks, n, x);
    if (simd == BK_SIMD_AVX2) return b1024_any_avx2(blocks, ks, n, x);
#else
    (void)simd;
#endif
    return b1024_any_scalar(blocks, ks, n, x);
}
