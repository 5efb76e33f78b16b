/*
 * Blocked Bloom filter: every probe of a key inside one block (256 or 512 bits), one memory access
 * per query. Scalar path always built; AVX2 and AVX-512 paths built with target attributes and chosen
 * once per filter (a table of function pointers), so nothing dispatches per key.
 *
 * Probes: the block is bk__range64(h, blocks) (multiply-shift, dominated by the hash's high bits);
 * the in-block bits come from x = the low 32 bits of h: probe i is the top bits of x * SALT[i]
 * (mod 2^32), SALT odd constants. SPLIT256 takes the top 5 bits as the bit of 32-bit word i; 512 takes
 * the top 9 bits as a bit position in the block. Bit b of a block is bit (b & 63) of its 64-bit word
 * (b >> 6): the same bits the little-endian 32-bit view of the SIMD paths uses, and the file order.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include "internal.h"
#include "simd.h"
#include "testing.h"
#include "bloomkit/blocked.h"

#if defined(__SANITIZE_THREAD__)
#  define BK_TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define BK_TSAN 1
#  endif
#endif

/* Prefetch distance of the batch forms, in keys: enough misses in flight to cover DRAM latency. */
#ifndef BK_PF
#  define BK_PF 16
#endif

typedef struct blocked_ops {
    void (*add)(bk_blocked *f, uint64_t h);
    bool (*contains)(const bk_blocked *f, uint64_t h);
    /* uint64 keys: hash (bk__hash_u64, inlined) and probe in one function of the path */
    void (*add_u64)(bk_blocked *f, uint64_t key);
    bool (*contains_u64)(const bk_blocked *f, uint64_t key);
    void (*add_hashes)(bk_blocked *f, const uint64_t *h, size_t n);
    size_t (*contains_hashes)(const bk_blocked *f, const uint64_t *h, size_t n, uint8_t *results);
    void (*add_many)(bk_blocked *f, const void *const *keys, const size_t *lens, size_t n);
    size_t (*contains_many)(const bk_blocked *f, const void *const *keys, const size_t *lens, size_t n,
                            uint8_t *results);
} blocked_ops;

struct bk_blocked {
    uint64_t *words;      /* blocks * (block bits / 64) words, 64-byte aligned */
    uint64_t blocks;
    uint64_t nwords;
    uint32_t k;
    uint16_t kmask;       /* lanes 0..k-1 of a 16-lane probe vector */
    bk_blocked_layout layout;
    bk_simd simd;
    blocked_ops ops;
    uint64_t seed;
    uint64_t u64_flip;    /* bk__hash_u64_flip(seed): the uint64 calls' seed part, computed once */
    uint64_t capacity;
    double fpr_target;
    uint64_t count_own;
    uint64_t *count;      /* &count_own, or the count field inside a shared mapping */
    bk__stripes *stripes; /* atomic inserts' counts when count == &count_own (see internal.h) */
    bool owns_words;
    /* 512 layout, AVX2: per-lane shift offset, 0 for probe lanes < k and 32 (shifts to zero) above */
    uint32_t lane_off[16]; /* read with unaligned loads: the allocator only promises 16 bytes */
};

/* Odd multipliers for the in-block probes (random, fixed forever: they define the file format). */
static const uint32_t SALT[16] __attribute__((aligned(64))) = {
    0x97406341u, 0x15649dadu, 0x84849edbu, 0x1a56b061u, 0xbf9bf163u, 0x80554a9du, 0xef3d9061u, 0x3e112a0du,
    0x43ed7641u, 0xaad0f14bu, 0x54d96203u, 0xf4203243u, 0x1a8ecac7u, 0x1fe5dbffu, 0xae9621dbu, 0xdebc27c7u,
};

static uint32_t block_bits(bk_blocked_layout l) { return l == BK_BLOCKED_SPLIT256 ? 256 : 512; }

/* SHIFT: log2 of the 64-bit words per block (2 for SPLIT256, 3 for 512). */
#define BLOCK_OF(f, h, SHIFT) ((f)->words + (bk__range64((h), (f)->blocks) << (SHIFT)))

BK_INLINE uint64_t load_relaxed(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* ================= scalar path ================= */

/* 64-bit word j of a block holds 32-bit words 2j (low half) and 2j + 1 (high half). Written out by
 * hand: a loop filling an array makes compilers spill it and reload it wider (a store-forwarding stall). */
#define SPLIT_BIT(x, i) ((uint64_t)(((x) * SALT[i]) >> 27))
#define SPLIT_WORD(x, j) ((UINT64_C(1) << SPLIT_BIT(x, 2 * (j))) | (UINT64_C(1) << (32 + SPLIT_BIT(x, 2 * (j) + 1))))

BK_INLINE void split_add_scalar(bk_blocked *f, uint64_t h)
{
    uint64_t *b = BLOCK_OF(f, h, 2);
    uint32_t x = (uint32_t)h;
    b[0] |= SPLIT_WORD(x, 0);
    b[1] |= SPLIT_WORD(x, 1);
    b[2] |= SPLIT_WORD(x, 2);
    b[3] |= SPLIT_WORD(x, 3);
}

/* Relaxed atomic loads (plain loads on every mainstream target) keep a race with *_atomic defined. */
BK_INLINE bool split_contains_scalar(const bk_blocked *f, uint64_t h)
{
    const uint64_t *b = BLOCK_OF(f, h, 2);
    uint32_t x = (uint32_t)h;
    uint64_t m0 = SPLIT_WORD(x, 0), m1 = SPLIT_WORD(x, 1), m2 = SPLIT_WORD(x, 2), m3 = SPLIT_WORD(x, 3);
    return ((m0 & ~load_relaxed(&b[0])) | (m1 & ~load_relaxed(&b[1])) | (m2 & ~load_relaxed(&b[2])) |
            (m3 & ~load_relaxed(&b[3]))) == 0;
}

BK_INLINE void b512_add_scalar(bk_blocked *f, uint64_t h)
{
    uint64_t *b = BLOCK_OF(f, h, 3);
    uint32_t x = (uint32_t)h;
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t pos = (x * SALT[i]) >> 23;
        b[pos >> 6] |= UINT64_C(1) << (pos & 63);
    }
}

/* Branch-free: with half the bits set, an early exit would mispredict about every other key. */
BK_INLINE bool b512_contains_scalar(const bk_blocked *f, uint64_t h)
{
    const uint64_t *b = BLOCK_OF(f, h, 3);
    uint32_t x = (uint32_t)h;
    uint64_t all = 1;
    for (uint32_t i = 0; i < f->k; i++) {
        uint32_t pos = (x * SALT[i]) >> 23;
        all &= load_relaxed(&b[pos >> 6]) >> (pos & 63);
    }
    return all & 1;
}

/*
 * Batch loops shared by every path, instantiated once per (layout, path) with that path's inline
 * probe functions. The hashed forms prefetch the block of key i + BK_PF while probing key i; the
 * bytes forms hash key i + BK_PF into a small ring at the same time, so hashing overlaps the misses.
 */
#define BK_DEFINE_OPS(NAME, TARGET, SHIFT, ADD1, HAS1)                                                    \
    TARGET static void NAME##_add(bk_blocked *f, uint64_t h) { ADD1(f, h); }                              \
    TARGET static bool NAME##_contains(const bk_blocked *f, uint64_t h) { return HAS1(f, h); }            \
    TARGET static void NAME##_add_u64(bk_blocked *f, uint64_t k) { ADD1(f, bk__hash_u64_keyed(k, f->u64_flip)); } \
    TARGET static bool NAME##_contains_u64(const bk_blocked *f, uint64_t k)                               \
    {                                                                                                     \
        return HAS1(f, bk__hash_u64_keyed(k, f->u64_flip));                                               \
    }                                                                                                     \
    TARGET static void NAME##_add_hashes(bk_blocked *f, const uint64_t *hs, size_t n)                     \
    {                                                                                                     \
        size_t pre = n < BK_PF ? n : BK_PF;                                                               \
        for (size_t i = 0; i < pre; i++) BK_PREFETCH_W(BLOCK_OF(f, hs[i], SHIFT));                        \
        for (size_t i = 0; i < n; i++) {                                                                  \
            if (i + BK_PF < n) BK_PREFETCH_W(BLOCK_OF(f, hs[i + BK_PF], SHIFT));                          \
            ADD1(f, hs[i]);                                                                               \
        }                                                                                                 \
    }                                                                                                     \
    TARGET static size_t NAME##_contains_hashes(const bk_blocked *f, const uint64_t *hs, size_t n,       \
                                                uint8_t *res)                                             \
    {                                                                                                     \
        size_t present = 0, pre = n < BK_PF ? n : BK_PF;                                                  \
        for (size_t i = 0; i < pre; i++) BK_PREFETCH(BLOCK_OF(f, hs[i], SHIFT));                          \
        for (size_t i = 0; i < n; i++) {                                                                  \
            if (i + BK_PF < n) BK_PREFETCH(BLOCK_OF(f, hs[i + BK_PF], SHIFT));                            \
            bool r_ = HAS1(f, hs[i]);                                                                     \
            if (res) res[i] = r_;                                                                         \
            present += r_;                                                                                \
        }                                                                                                 \
        return present;                                                                                   \
    }                                                                                                     \
    TARGET static void NAME##_add_many(bk_blocked *f, const void *const *keys, const size_t *lens,        \
                                       size_t n)                                                          \
    {                                                                                                     \
        uint64_t ring[BK_PF];                                                                             \
        size_t pre = n < BK_PF ? n : BK_PF;                                                               \
        for (size_t i = 0; i < pre; i++) {                                                                \
            ring[i] = bk__hash(keys[i], lens[i], f->seed);                                                \
            BK_PREFETCH_W(BLOCK_OF(f, ring[i], SHIFT));                                                   \
        }                                                                                                 \
        for (size_t i = 0; i < n; i++) {                                                                  \
            uint64_t h_ = ring[i % BK_PF];                                                                \
            if (i + BK_PF < n) {                                                                          \
                uint64_t g_ = bk__hash(keys[i + BK_PF], lens[i + BK_PF], f->seed);                        \
                ring[i % BK_PF] = g_;                                                                     \
                BK_PREFETCH_W(BLOCK_OF(f, g_, SHIFT));                                                    \
            }                                                                                             \
            ADD1(f, h_);                                                                                  \
        }                                                                                                 \
    }                                                                                                     \
    TARGET static size_t NAME##_contains_many(const bk_blocked *f, const void *const *keys,              \
                                              const size_t *lens, size_t n, uint8_t *res)                 \
    {                                                                                                     \
        uint64_t ring[BK_PF];                                                                             \
        size_t present = 0, pre = n < BK_PF ? n : BK_PF;                                                  \
        for (size_t i = 0; i < pre; i++) {                                                                \
            ring[i] = bk__hash(keys[i], lens[i], f->seed);                                                \
            BK_PREFETCH(BLOCK_OF(f, ring[i], SHIFT));                                                     \
        }                                                                                                 \
        for (size_t i = 0; i < n; i++) {                                                                  \
            uint64_t h_ = ring[i % BK_PF];                                                                \
            if (i + BK_PF < n) {                                                                          \
                uint64_t g_ = bk__hash(keys[i + BK_PF], lens[i + BK_PF], f->seed);                        \
                ring[i % BK_PF] = g_;                                                                     \
                BK_PREFETCH(BLOCK_OF(f, g_, SHIFT));                                                      \
            }                                                                                             \
            bool r_ = HAS1(f, h_);                                                                        \
            if (res) res[i] = r_;                                                                         \
            present += r_;                                                                                \
        }                                                                                                 \
        return present;                                                                                   \
    }                                                                                                     \
    static const blocked_ops NAME##_ops = { NAME##_add, NAME##_contains, NAME##_add_u64,                  \
                                            NAME##_contains_u64, NAME##_add_hashes,                       \
                                            NAME##_contains_hashes, NAME##_add_many, NAME##_contains_many };

#define BK_NO_TARGET
BK_DEFINE_OPS(split_scalar, BK_NO_TARGET, 2, split_add_scalar, split_contains_scalar)
BK_DEFINE_OPS(b512_scalar, BK_NO_TARGET, 3, b512_add_scalar, b512_contains_scalar)

/* ================= AVX2 path ================= */
#ifdef BK_X86

/* One bit in each 32-bit lane: lane i gets bit (x * SALT[i]) >> 27. */
BK_T_AVX2 BK_INLINE __m256i split_mask_avx2(uint32_t x)
{
    __m256i v = _mm256_mullo_epi32(_mm256_set1_epi32((int)x), _mm256_load_si256((const __m256i *)SALT));
    return _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_srli_epi32(v, 27));
}

BK_T_AVX2 BK_INLINE void split_add_avx2(bk_blocked *f, uint64_t h)
{
    __m256i *b = (__m256i *)BLOCK_OF(f, h, 2);
    _mm256_storeu_si256(b, _mm256_or_si256(_mm256_loadu_si256(b), split_mask_avx2((uint32_t)h)));
}

BK_T_AVX2 BK_INLINE bool split_contains_avx2(const bk_blocked *f, uint64_t h)
{
    const __m256i *b = (const __m256i *)BLOCK_OF(f, h, 2);
    return _mm256_testc_si256(_mm256_loadu_si256(b), split_mask_avx2((uint32_t)h));
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

BK_T_AVX2 BK_INLINE bool b512_contains_avx2(const bk_blocked *f, uint64_t h)
{
    const __m256i *b = (const __m256i *)BLOCK_OF(f, h, 3);
    __m256i lo = _mm256_loadu_si256(b), hi = _mm256_loadu_si256(b + 1);
    __m256i x = _mm256_set1_epi32((int)(uint32_t)h);
    bool ok = b512_test8_avx2(lo, hi, x, SALT, f->lane_off);
    if (f->k > 8) ok &= b512_test8_avx2(lo, hi, x, SALT + 8, f->lane_off + 8);
    return ok;
}

/* 512 layout insert on AVX2: scalar. Scattering k bits into one line has no good AVX2 form: shifting
 * each probe's bit into both 256-bit halves measured 7.3 ns against 5.0 ns for k scalar ORs (k = 6). */
BK_DEFINE_OPS(split_avx2, BK_T_AVX2, 2, split_add_avx2, split_contains_avx2)
BK_DEFINE_OPS(b512_avx2, BK_T_AVX2, 3, b512_add_scalar, b512_contains_avx2)

/* ================= AVX-512 path ================= */

/* 512 layout: all 16 probe lanes at once; vpermd fetches each lane's 32-bit word of the line. */
BK_T_AVX512 BK_INLINE bool b512_contains_avx512(const bk_blocked *f, uint64_t h)
{
    const void *b = BLOCK_OF(f, h, 3);
    __m512i pos = _mm512_srli_epi32(
        _mm512_mullo_epi32(_mm512_set1_epi32((int)(uint32_t)h), _mm512_load_si512((const void *)SALT)), 23);
    __m512i words = _mm512_permutexvar_epi32(_mm512_srli_epi32(pos, 5), _mm512_loadu_si512(b));
    __m512i one = _mm512_sllv_epi32(_mm512_set1_epi32(1), _mm512_and_si512(pos, _mm512_set1_epi32(31)));
    return _mm512_mask_testn_epi32_mask((__mmask16)f->kmask, words, one) == 0;
}

/* 512 layout insert: for each probe, broadcast its word index and bit, and OR the bit into the lane
 * whose index matches; then one read-modify-write of the line. */
BK_T_AVX512 BK_INLINE void b512_add_avx512(bk_blocked *f, uint64_t h)
{
    void *b = BLOCK_OF(f, h, 3);
    __m512i pos = _mm512_srli_epi32(
        _mm512_mullo_epi32(_mm512_set1_epi32((int)(uint32_t)h), _mm512_load_si512((const void *)SALT)), 23);
    /* lane j covers bits [32 j, 32 j + 32): probe i's bit lands in lane j at shift pos_i - 32 j, and
     * every other lane gets a shift outside [0, 32) (negative ones wrap to huge), which sllv zeroes */
    const __m512i base = _mm512_set_epi32(480, 448, 416, 384, 352, 320, 288, 256, 224, 192, 160, 128, 96, 64, 32, 0);
    const __m512i one = _mm512_set1_epi32(1);
    __m512i acc = _mm512_setzero_si512();
    for (uint32_t i = 0; i < f->k; i++) {
        __m512i p = _mm512_permutexvar_epi32(_mm512_set1_epi32((int)i), pos);
        acc = _mm512_or_si512(acc, _mm512_sllv_epi32(one, _mm512_sub_epi32(p, base)));
    }
    _mm512_storeu_si512(b, _mm512_or_si512(_mm512_loadu_si512(b), acc));
}

/* SPLIT256: the AVX2 sequence is already one instruction per step, and AVX-512 adds nothing: two keys
 * per 512-bit register in the batch query measured the same as this (1.25 ns/key in cache). */
BK_DEFINE_OPS(split_avx512, BK_T_AVX512, 2, split_add_avx2, split_contains_avx2)
BK_DEFINE_OPS(b512_avx512, BK_T_AVX512, 3, b512_add_avx512, b512_contains_avx512)

#endif /* BK_X86 */

/* ================= path selection ================= */

static int g_forced; /* a bk_simd, 0 = none; atomic accesses */

static bk_simd cpu_best(void)
{
#ifdef BK_X86
    /* __builtin_cpu_supports checks the OS saves the vector state too (xgetbv). */
    if (__builtin_cpu_supports("avx2")) {
        if (__builtin_cpu_supports("avx512f")) return BK_SIMD_AVX512;
        return BK_SIMD_AVX2;
    }
#endif
    return BK_SIMD_SCALAR;
}

bk_simd bk_simd_best(void) { return cpu_best(); }

const char *bk_simd_name(bk_simd s)
{
    switch (s) {
    case BK_SIMD_AUTO: return "auto";
    case BK_SIMD_SCALAR: return "scalar";
    case BK_SIMD_AVX2: return "avx2";
    case BK_SIMD_AVX512: return "avx512";
    }
    return NULL;
}

bk_status bk_simd_force(bk_simd s)
{
    if (s < BK_SIMD_AUTO || s > BK_SIMD_AVX512) return BK_EINVAL;
    if (s != BK_SIMD_AUTO && s > cpu_best()) return BK_ENOTSUP;
    __atomic_store_n(&g_forced, (int)s, __ATOMIC_RELAXED);
    return BK_OK;
}

static bk_simd parse_simd(const char *v)
{
    if (!v) return BK_SIMD_AUTO;
    for (bk_simd s = BK_SIMD_SCALAR; s <= BK_SIMD_AVX512; s++)
        if (strcmp(v, bk_simd_name(s)) == 0) return s;
    return BK_SIMD_AUTO;
}

/* $BK_SIMD, read once per process (the first time a filter resolves AUTO), never per creation. */
static bk_simd g_env_cap;
static unsigned g_env_reads;
static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;
static void read_env_cap(void)
{
    g_env_cap = parse_simd(getenv("BK_SIMD"));
    g_env_reads++;
}

unsigned bk__simd_env_reads(void) { return g_env_reads; }

/*
 * AUTO: the CPU's best, capped by bk_simd_force or else by $BK_SIMD (read once per process). Under
 * ThreadSanitizer AUTO means scalar: the scalar queries read with relaxed atomics, which TSan models;
 * its view of a vector load racing an atomic OR would be a false report (on x86 each aligned 8-byte
 * part of a vector load is atomic, and bits only ever go from 0 to 1).
 */
static bk_simd resolve_simd(bk_simd want)
{
    bk_simd best = cpu_best();
    if (want != BK_SIMD_AUTO) return want;
#ifdef BK_TSAN
    best = BK_SIMD_SCALAR;
#endif
    bk_simd cap = (bk_simd)__atomic_load_n(&g_forced, __ATOMIC_RELAXED);
    if (cap == BK_SIMD_AUTO) {
        pthread_once(&g_env_once, read_env_cap);
        cap = g_env_cap;
    }
    return cap != BK_SIMD_AUTO && cap < best ? cap : best;
}

int bk__simd_resolve(int want) { return (int)resolve_simd((bk_simd)want); }

static const blocked_ops *ops_for(bk_blocked_layout layout, bk_simd s)
{
    bool split = layout == BK_BLOCKED_SPLIT256;
#ifdef BK_X86
    if (s == BK_SIMD_AVX512) return split ? &split_avx512_ops : &b512_avx512_ops;
    if (s == BK_SIMD_AVX2) return split ? &split_avx2_ops : &b512_avx2_ops;
#else
    (void)s;
#endif
    return split ? &split_scalar_ops : &b512_scalar_ops;
}

static bk_status set_path(bk_blocked *f, bk_simd want)
{
    if (want < BK_SIMD_AUTO || want > BK_SIMD_AVX512) return BK_EINVAL;
    if (want > cpu_best()) return BK_ENOTSUP;
    f->simd = resolve_simd(want);
    f->ops = *ops_for(f->layout, f->simd);
    return BK_OK;
}

/* ================= lifetime ================= */

static bk_status alloc_filter(bk_blocked_layout layout, uint64_t blocks, uint32_t k, uint64_t seed,
                              bk_simd simd, uint64_t capacity, double fpr_target, bool alloc_words,
                              bk_blocked **out)
{
    uint64_t bytes = blocks * (block_bits(layout) / 8);
    if (blocks == 0 || blocks > BK_MAX_FILTER_BYTES / (block_bits(layout) / 8) || bytes > SIZE_MAX / 2)
        return BK_ETOOBIG;
    bk_blocked *f = bk__calloc(1, sizeof *f);
    if (!f) return BK_ENOMEM;
    f->layout = layout;
    f->k = k;
    bk_status s = set_path(f, simd);
    if (s != BK_OK) {
        bk__free(f);
        return s;
    }
    if (alloc_words) {
        f->words = bk__calloc_aligned((size_t)bytes);
        if (!f->words) {
            bk__free(f);
            return BK_ENOMEM;
        }
        f->owns_words = true;
    }
    f->blocks = blocks;
    f->nwords = bytes / 8;
    f->kmask = (uint16_t)((1u << k) - 1);
    for (uint32_t i = 0; i < 16; i++) f->lane_off[i] = i < k ? 0 : 32;
    f->seed = seed;
    f->u64_flip = bk__hash_u64_flip(seed);
    f->capacity = capacity;
    f->fpr_target = fpr_target;
    f->count = &f->count_own;
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
    bk_status s = bk_blocked_size(n, p, o.layout, &g);
    if (s != BK_OK) return s;
    return alloc_filter(o.layout, g.m / block_bits(o.layout), g.k, o.seed, o.simd, n, p, true, out);
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
    return alloc_filter(o.layout, blocks, k, o.seed, o.simd, cap, bk_blocked_fpr(m, cap, o.layout, k), true, out);
}

void bk_blocked_free(bk_blocked *f)
{
    if (!f) return;
    if (f->owns_words) bk__free_aligned(f->words);
    bk__free_aligned(f->stripes);
    bk__free(f);
}

bk_status bk_blocked_clone(const bk_blocked *f, bk_blocked **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    bk_status s = alloc_filter(f->layout, f->blocks, f->k, f->seed, f->simd, f->capacity, f->fpr_target, true, out);
    if (s != BK_OK) return s;
    bk__copy_words_relaxed((*out)->words, f->words, f->nwords); /* [query]: atomic inserts may run */
    (*out)->count_own = bk_blocked_count(f);
    return BK_OK;
}

/* ================= insert and query ================= */

bk_status bk_blocked_add_hash(bk_blocked *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    f->ops.add(f, h);
    (*f->count)++;
    return BK_OK;
}

bk_status bk_blocked_add(bk_blocked *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    f->ops.add(f, bk__hash_with_flip(key, len, f->seed, f->u64_flip));
    (*f->count)++;
    return BK_OK;
}

bool bk_blocked_contains_hash(const bk_blocked *f, uint64_t h) { return f->ops.contains(f, h); }

bool bk_blocked_contains(const bk_blocked *f, const void *key, size_t len)
{
    return f->ops.contains(f, bk__hash_with_flip(key, len, f->seed, f->u64_flip));
}

bk_status bk_blocked_add_u64(bk_blocked *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    f->ops.add_u64(f, key);
    (*f->count)++;
    return BK_OK;
}

bool bk_blocked_contains_u64(const bk_blocked *f, uint64_t key) { return f->ops.contains_u64(f, key); }

/*
 * Atomic insert, the same on every path (scalar: TSan sees every access, and a vector OR cannot be
 * made atomic). Relaxed ordering is enough: each bit is published on its own, no reader relies on the
 * order in which bits or the count become visible, and fetch_or never loses another writer's bits.
 * Words already holding their bits are not written, which keeps shared lines clean between cores.
 */
bk_status bk_blocked_add_hash_atomic(bk_blocked *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    uint64_t m[8] = { 0 }, *b;
    int words;
    uint32_t x = (uint32_t)h;
    if (f->layout == BK_BLOCKED_SPLIT256) {
        b = BLOCK_OF(f, h, 2);
        m[0] = SPLIT_WORD(x, 0);
        m[1] = SPLIT_WORD(x, 1);
        m[2] = SPLIT_WORD(x, 2);
        m[3] = SPLIT_WORD(x, 3);
        words = 4;
    } else {
        b = BLOCK_OF(f, h, 3);
        for (uint32_t i = 0; i < f->k; i++) {
            uint32_t pos = (x * SALT[i]) >> 23;
            m[pos >> 6] |= UINT64_C(1) << (pos & 63);
        }
        words = 8;
    }
    for (int j = 0; j < words; j++)
        if (m[j] && (load_relaxed(&b[j]) & m[j]) != m[j]) __atomic_fetch_or(&b[j], m[j], __ATOMIC_RELAXED);
    if (f->count == &f->count_own)
        bk__count_atomic(&f->stripes, f->count, 1);
    else
        __atomic_fetch_add(f->count, 1, __ATOMIC_RELAXED); /* the count inside a shared mapping */
    return BK_OK;
}

bk_status bk_blocked_add_atomic(bk_blocked *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_blocked_add_hash_atomic(f, bk__hash(key, len, f->seed));
}

bk_status bk_blocked_add_hashes_atomic(bk_blocked *f, const uint64_t *hashes, size_t n)
{
    if (!f || (!hashes && n)) return BK_EINVAL;
    const int shift = f->layout == BK_BLOCKED_SPLIT256 ? 2 : 3;
    size_t pre = n < BK_PF ? n : BK_PF;
    for (size_t i = 0; i < pre; i++) BK_PREFETCH_W(BLOCK_OF(f, hashes[i], shift));
    for (size_t i = 0; i < n; i++) {
        if (i + BK_PF < n) BK_PREFETCH_W(BLOCK_OF(f, hashes[i + BK_PF], shift));
        bk_blocked_add_hash_atomic(f, hashes[i]);
    }
    return BK_OK;
}

bk_status bk_blocked_add_many_atomic(bk_blocked *f, const void *const *keys, const size_t *lens, size_t n)
{
    if (!f || (n && (!keys || !lens))) return BK_EINVAL;
    for (size_t j = 0; j < n; j++)
        if (!keys[j] && lens[j]) return BK_EINVAL;
    uint64_t h[64];
    for (size_t i = 0; i < n; i += 64) {
        size_t e = i + 64 < n ? i + 64 : n;
        for (size_t j = i; j < e; j++) h[j - i] = bk__hash(keys[j], lens[j], f->seed);
        bk_blocked_add_hashes_atomic(f, h, e - i);
    }
    return BK_OK;
}

bk_status bk_blocked_add_hashes(bk_blocked *f, const uint64_t *hashes, size_t n)
{
    if (!f || (!hashes && n)) return BK_EINVAL;
    f->ops.add_hashes(f, hashes, n);
    *f->count += n;
    return BK_OK;
}

/* The blocks cut into nparts ranges at even block numbers (two 256-bit blocks share a line): the
 * hashes whose block is in this part are gathered a few hundred at a time and added by the path's
 * batch insert. */
bk_status bk_blocked_add_hashes_part(bk_blocked *f, const uint64_t *hashes, size_t n, unsigned part,
                                     unsigned nparts)
{
    if (!f || (!hashes && n) || part >= nparts) return BK_EINVAL;
    const uint64_t pairs = (f->blocks + 1) / 2;
    uint64_t lo = pairs * part / nparts * 2, hi = pairs * (part + 1) / nparts * 2;
    if (hi > f->blocks) hi = f->blocks;
    uint64_t mine[256];
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        mine[c] = hashes[i];
        c += bk__range64(hashes[i], f->blocks) - lo < hi - lo;
        if (c == 256) {
            f->ops.add_hashes(f, mine, c);
            c = 0;
        }
    }
    if (c) f->ops.add_hashes(f, mine, c);
    return BK_OK;
}

size_t bk_blocked_contains_hashes(const bk_blocked *f, const uint64_t *hashes, size_t n, uint8_t *results)
{
    if (!f || !hashes) return 0;
    return f->ops.contains_hashes(f, hashes, n, results);
}

bk_status bk_blocked_add_many(bk_blocked *f, const void *const *keys, const size_t *lens, size_t n)
{
    if (!f || (n && (!keys || !lens))) return BK_EINVAL;
    for (size_t j = 0; j < n; j++)
        if (!keys[j] && lens[j]) return BK_EINVAL;
    f->ops.add_many(f, keys, lens, n);
    *f->count += n;
    return BK_OK;
}

size_t bk_blocked_contains_many(const bk_blocked *f, const void *const *keys, const size_t *lens, size_t n,
                                uint8_t *results)
{
    if (!f || !keys || !lens) return 0;
    return f->ops.contains_many(f, keys, lens, n, results);
}

/* ================= whole-filter operations ================= */

void bk_blocked_clear(bk_blocked *f)
{
    if (!f) return;
    memset(f->words, 0, f->nwords * 8);
    *f->count = 0;
    bk__stripes_clear(&f->stripes);
}

bk_status bk_blocked_compatible(const bk_blocked *a, const bk_blocked *b)
{
    if (!a || !b) return BK_EINVAL;
    if (a->layout != b->layout || a->blocks != b->blocks || a->k != b->k || a->seed != b->seed)
        return BK_EINCOMPAT;
    return BK_OK;
}

/* Chance that one key leaves a given bit of its block clear is 1 - c; with Poisson(lambda) keys per
 * block a bit is clear with chance exp(-lambda c), so the fill gives lambda and n = lambda * blocks. */
static double per_key_bit_chance(const bk_blocked *f)
{
    if (f->layout == BK_BLOCKED_SPLIT256) return 1.0 / 32.0;
    return -expm1((double)f->k * log1p(-1.0 / 512.0));
}

static double estimate_cardinality(const bk_blocked *f, uint64_t set)
{
    double m = (double)f->nwords * 64.0, x = (double)set;
    if (set >= f->nwords * 64) x = m - 0.5;
    return -log1p(-x / m) / per_key_bit_chance(f) * (double)f->blocks;
}

static bk_status combine(bk_blocked *dst, const bk_blocked *src, bool is_union)
{
    bk_status s = bk_blocked_compatible(dst, src);
    if (s != BK_OK) return s;
    const uint64_t na = bk_blocked_count(dst), nb = bk_blocked_count(src);
    uint64_t *d = dst->words;
    const uint64_t *w = src->words;
    if (is_union)
        for (uint64_t i = 0; i < dst->nwords; i++) d[i] |= w[i];
    else
        for (uint64_t i = 0; i < dst->nwords; i++) d[i] &= w[i];
    bk__stripes_clear(&dst->stripes);
    *dst->count = bk__combined_count(estimate_cardinality(dst, bk__popcount_words(d, dst->nwords)), na,
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
        for (uint64_t b = 0; b < f->blocks; b++) {
            const uint64_t *w = f->words + b * 4;
            double p = 1.0;
            for (int j = 0; j < 4; j++) {
                uint64_t v = load_relaxed(&w[j]);
                p *= (double)__builtin_popcount((uint32_t)v) * (double)__builtin_popcount((uint32_t)(v >> 32));
            }
            sum += p;
        }
        return sum / (double)f->blocks / 1099511627776.0; /* 32^8 */
    }
    double table[513];
    for (int c = 0; c <= 512; c++) table[c] = pow(c / 512.0, (double)f->k);
    for (uint64_t b = 0; b < f->blocks; b++) sum += table[bk__popcount_words(f->words + b * 8, 8)];
    return sum / (double)f->blocks;
}

void bk_blocked_stats(const bk_blocked *f, bk_stats *out)
{
    memset(out, 0, sizeof *out);
    uint64_t set = bk__popcount_words(f->words, f->nwords);
    uint64_t count = bk_blocked_count(f);
    double m = (double)f->nwords * 64.0;
    out->type = BK_TYPE_BLOCKED;
    out->k = f->k;
    out->capacity = f->capacity;
    out->count = count;
    out->bits = f->nwords * 64;
    out->memory_bytes = f->nwords * 8;
    out->bits_per_key = m / (double)(count ? count : 1);
    out->fill_ratio = (double)set / m;
    out->est_cardinality = estimate_cardinality(f, set);
    out->fpr_target = f->fpr_target;
    out->fpr_now = fpr_of_bits(f);
    /* Fill expected at capacity (at most 60%) plus a noise margin, as for the classic filter. */
    double limit = bk__saturation_fill(-expm1(-(double)f->capacity / (double)f->blocks * per_key_bit_chance(f)), m);
    out->saturated = out->fill_ratio > limit || count > f->capacity;
    out->seed = f->seed;
}

uint64_t bk_blocked_bits(const bk_blocked *f) { return f->nwords * 64; }
uint32_t bk_blocked_k(const bk_blocked *f) { return f->k; }
uint64_t bk_blocked_count(const bk_blocked *f)
{
    return __atomic_load_n(f->count, __ATOMIC_RELAXED) + bk__stripes_sum(&f->stripes);
}
uint64_t bk_blocked_seed(const bk_blocked *f) { return f->seed; }
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
    }
    return st;
}
bk_status bk_blocked_view_get(bk_blocked *f, bk_blocked_view *out)
{
    if (!f || !out) return BK_EINVAL;
    if (f->layout != BK_BLOCKED_SPLIT256) return BK_ENOTSUP;
    out->words = f->words;
    out->blocks = f->blocks;
    return BK_OK;
}
void bk_blocked_note_added(bk_blocked *f, uint64_t n)
{
    if (f) *f->count += n;
}
const uint8_t *bk_blocked_data(const bk_blocked *f, size_t *len)
{
    if (len) *len = (size_t)(f->nwords * 8);
    return (const uint8_t *)f->words;
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
 * The hash seed is in the container header. Probe positions: see the comment at the top of this file
 * (SALT[] and bk__range64 define them, so they are part of the format).
 */
#define BLOCKED_COUNT_OFFSET 24

static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_blocked *f = vf;
    bk_status s;
    if ((s = bk__w_u32(w, (uint32_t)f->layout)) || (s = bk__w_u32(w, f->k)) || (s = bk__w_u64(w, f->nwords * 64)) ||
        (s = bk__w_u64(w, f->capacity)) || (s = bk__w_u64(w, bk_blocked_count(f))) ||
        (s = bk__w_f64(w, f->fpr_target)) || (s = bk__w_align(w, 64)))
        return s;
    return bk__w_u64_array(w, f->words, (size_t)f->nwords);
}

static bk_status v_decode(bk_reader *r, void **out)
{
    uint32_t layout, k;
    uint64_t m, cap, count;
    double fpr;
    bk_status s;
    *out = NULL;
    size_t start = r->off;
    if ((s = bk__r_u32(r, &layout)) || (s = bk__r_u32(r, &k)) || (s = bk__r_u64(r, &m)) ||
        (s = bk__r_u64(r, &cap)) || (s = bk__r_u64(r, &count)) || (s = bk__r_f64(r, &fpr)) ||
        (s = bk__r_align(r, 64)))
        return s;
    if (bad_layout((bk_blocked_layout)layout)) return BK_ECORRUPT;
    uint32_t bb = block_bits((bk_blocked_layout)layout);
    bool k_ok = layout == BK_BLOCKED_SPLIT256 ? k == 8 : (k >= 1 && k <= BK_BLOCKED_MAX_K);
    if (!k_ok || m == 0 || m % bb || m > BK_MAX_FILTER_BYTES * 8 || cap == 0 || !(fpr >= 0 && fpr <= 1))
        return BK_ECORRUPT;
    uint64_t bytes = m / 8;
    if (bytes > r->len - r->off) return BK_ETRUNCATED;
    const uint8_t *data;
    if ((s = bk__r_take(r, (size_t)bytes, &data))) return s;
    bk_blocked *f;
    s = alloc_filter((bk_blocked_layout)layout, m / bb, k, r->seed, BK_SIMD_AUTO, cap, fpr, !r->borrow, &f);
    if (s != BK_OK) return s;
    if (r->borrow) {
        f->words = (uint64_t *)(uintptr_t)data;
        if (r->writable) f->count = (uint64_t *)(uintptr_t)(r->base + start + BLOCKED_COUNT_OFFSET);
    } else {
        memcpy(f->words, data, (size_t)bytes);
    }
    f->count_own = count;
    *out = f;
    return BK_OK;
}

static bk_status v_add_hash(void *f, uint64_t h) { return bk_blocked_add_hash(f, h); }
static bool v_contains_hash(const void *f, uint64_t h) { return bk_blocked_contains_hash(f, h); }
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n) { return bk_blocked_add_hashes(f, h, n); }
static size_t v_contains_hashes(const void *f, const uint64_t *h, size_t n, uint8_t *r)
{
    return bk_blocked_contains_hashes(f, h, n, r);
}
static bk_status v_add_hash_atomic(void *f, uint64_t h) { return bk_blocked_add_hash_atomic(f, h); }
static void v_set_count(void *p, uint64_t n)
{
    bk_blocked *f = p;
    bk__stripes_clear(&f->stripes);
    *f->count = n;
}
static bk_status v_add_hashes_atomic(void *f, const uint64_t *h, size_t n)
{
    return bk_blocked_add_hashes_atomic(f, h, n);
}
static uint64_t v_seed(const void *f) { return bk_blocked_seed(f); }
static void v_stats(const void *f, bk_stats *s) { bk_blocked_stats(f, s); }
static bk_status v_merge(void *d, const void *s) { return bk_blocked_union(d, s); }
static void v_clear(void *f) { bk_blocked_clear(f); }
static void v_destroy(void *f) { bk_blocked_free(f); }

BK_HIDDEN const bk_vtable bk__blocked_vtable = {
    .type = BK_TYPE_BLOCKED,
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
    .add_hash_atomic = v_add_hash_atomic,
    .add_hashes_atomic = v_add_hashes_atomic,
    .set_count = v_set_count,
};
