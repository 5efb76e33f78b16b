/*
 * The blocked engine: every probe of a key inside one block, one memory access per query. Used by the
 * blocked filter (256-bit split blocks and 512-bit blocks, filters/blocked.c) and by the scalable
 * chain's blocked sub-filters (1024-bit blocks of two cache lines, filters/scalable_ops.c); the public
 * inline view in include/bloomkit/blocked.h takes its salts from the same macro this table is built
 * from, and tests/test_blocked_view.c checks it sets and tests the same bits. Not installed.
 *
 * Probes (docs/FORMAT.md; all of it is part of the file format):
 *   block   bk__range64(h, blocks): multiply-shift, dominated by the hash's high bits;
 *   bits    from x = the low 32 bits of h: probe i is the top bits of x * salt[i] (mod 2^32):
 *           SPLIT256  the top 5 bits: bit of 32-bit word i (k = 8);
 *           512       the top 9 bits: bit position in the block (k <= 16);
 *           1024      the top 10 bits: bit position in the block (k <= 16), its own salt row.
 *   Bit b of a block is bit (b & 63) of its 64-bit word (b >> 6): the same bits the little-endian
 *   32-bit view of the SIMD paths uses, and the file order.
 *
 * This header holds the salt table, the block choice and the mask builders (inline, used by the
 * kernels and by the filters' atomic inserts); blocked_kernels.c holds the scalar, AVX2 and AVX-512
 * kernels as ordinary functions, chosen once per filter through bk__blk_ops_for.
 */
#ifndef BK_BLOCKED_ENGINE_H
#define BK_BLOCKED_ENGINE_H

#include "core/base.h"
#include "core/simd.h"
#include "bloomkit/blocked.h"

/* The one salt table: odd multipliers, random and fixed forever. Row BK__SALT_BLOCKED serves the
 * 256- and 512-bit blocks (its first eight come from the public header's BK_BLOCKED__SALTS, which the
 * inline view uses); row BK__SALT_1024 the scalable chain's 1024-bit blocks. */
enum { BK__SALT_BLOCKED = 0, BK__SALT_1024 = 1 };
static const uint32_t bk__blk_salt[2][16] __attribute__((aligned(64))) = {
    { BK_BLOCKED__SALTS, 0x43ed7641u, 0xaad0f14bu, 0x54d96203u, 0xf4203243u, 0x1a8ecac7u, 0x1fe5dbffu,
      0xae9621dbu, 0xdebc27c7u },
    { 0xc2c063ffu, 0x239eed25u, 0x958507adu, 0xf768064fu, 0x0e9a8df5u, 0x55113dc3u, 0xe0c67745u, 0x5966eb45u,
      0xfcb042d9u, 0x4ca82985u, 0x1720800fu, 0xb9c48cb1u, 0xa9f18631u, 0xd6c93f01u, 0xbc4d13ddu, 0xa83c546du },
};

/* What the kernels need of a blocked filter: its words, geometry and seed. The first four fields are
 * the hot header of a one-key uint64 query: the blocked filter's public call jumps through
 * contains_u64 and the kernel reads the three fields before it, one 32-byte run of the struct. */
typedef struct bk__blk {
    uint64_t *words;       /* blocks * (block bits / 64) words, 64-byte aligned */
    uint64_t blocks;
    uint64_t u64_fold;     /* bk__hash_u64_fold(bk__hash_u64_flip(seed)): the uint64 calls' seed part (bk__hash_u64_folded), computed once */
    /* the path's one-key uint64 query (bk__blk_ops.contains_u64), set by the blocked filter; unused
     * by the scalable chain */
    bool (*contains_u64)(const struct bk__blk *e, uint64_t key);
    uint64_t seed;         /* for the bytes-key batch forms */
    uint64_t *count;       /* the filter's count of inserted keys (add_u64 adds one) */
    uint32_t k;
    uint16_t kmask;        /* lanes 0..k-1 of a 16-lane probe vector */
    /* 512 layout, AVX2: per-lane shift offset, 0 for probe lanes < k and 32 (shifts to zero) above;
     * read with unaligned loads (the allocator only promises 16 bytes) */
    uint32_t lane_off[16];
} bk__blk;

/* Fill the derived fields (kmask, lane_off) for k probes. */
BK_INLINE void bk__blk_set_k(bk__blk *e, uint32_t k)
{
    e->k = k;
    e->kmask = (uint16_t)((1u << k) - 1);
    for (uint32_t i = 0; i < 16; i++) e->lane_off[i] = i < k ? 0 : 32;
}

/* The block of hash h among `blocks` blocks of 2^shift 64-bit words (shift 2: 256 bits, 3: 512,
 * 4: 1024). */
BK_INLINE uint64_t *bk__blk_block(uint64_t *words, uint64_t blocks, uint64_t h, unsigned shift)
{
    return words + (bk__range64(h, blocks) << shift);
}

/* ---- masks ---- */

/* SPLIT256: 64-bit word j of the mask holds 32-bit words 2j (low half) and 2j + 1 (high half). Used
 * word by word: a loop filling an array makes compilers spill it and reload it wider (a
 * store-forwarding stall). */
BK_INLINE uint64_t bk__split_word(uint32_t x, unsigned j)
{
    const uint32_t *s = bk__blk_salt[BK__SALT_BLOCKED];
    return (UINT64_C(1) << ((x * s[2 * j]) >> 27)) | (UINT64_C(1) << (32 + ((x * s[2 * j + 1]) >> 27)));
}

#ifdef BK_X86
/* SPLIT256 on AVX2: one bit in each 32-bit lane, lane i gets bit (x * salt[i]) >> 27 (the words
 * bk__split_word builds, as one vector). */
BK_T_AVX2 BK_INLINE __m256i bk__split_mask_avx2(uint32_t x)
{
    __m256i v = _mm256_mullo_epi32(_mm256_set1_epi32((int)x),
                                   _mm256_load_si256((const __m256i *)bk__blk_salt[BK__SALT_BLOCKED]));
    /* The ones by one broadcast load: compilers build _mm256_set1_epi32(1) (and fold a constant
     * load back into it) from an immediate with three instructions, in every one-key call. */
    static const uint32_t one = 1;
    __m256i ones;
    __asm__("vpbroadcastd %1, %0" : "=x"(ones) : "m"(one));
    return _mm256_sllv_epi32(ones, _mm256_srli_epi32(v, 27));
}
#endif

/* 512: bit position of probe i. */
BK_INLINE uint32_t bk__b512_bit(uint32_t x, uint32_t i) { return (x * bk__blk_salt[BK__SALT_BLOCKED][i]) >> 23; }

/* 1024: bit position of probe i. */
BK_INLINE uint32_t bk__b1024_bit(uint32_t x, uint32_t i) { return (x * bk__blk_salt[BK__SALT_1024][i]) >> 22; }

/* The mask of a key's probes in its block as 64-bit words: 4 for SPLIT256 (k = 8), 8 for 512.
 * Returns the number of words. */
BK_INLINE unsigned bk__blk_mask(bk_blocked_layout layout, uint32_t k, uint32_t x, uint64_t m[8])
{
    if (layout == BK_BLOCKED_SPLIT256) {
        for (unsigned j = 0; j < 4; j++) m[j] = bk__split_word(x, j);
        return 4;
    }
    for (unsigned j = 0; j < 8; j++) m[j] = 0;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t b = bk__b512_bit(x, i);
        m[b >> 6] |= UINT64_C(1) << (b & 63);
    }
    return 8;
}

/* 1024: make mask (holding the first *kc probes of x) hold the first k (a smaller k starts again). */
BK_INLINE void bk__b1024_mask_to_k(uint64_t mask[16], uint32_t *kc, uint32_t k, uint32_t x)
{
    if (k < *kc) {
        memset(mask, 0, 16 * sizeof mask[0]);
        *kc = 0;
    }
    for (; *kc < k; (*kc)++) {
        uint32_t b = bk__b1024_bit(x, *kc);
        mask[b >> 6] |= UINT64_C(1) << (b & 63);
    }
}

/* ---- kernels (blocked_kernels.c) ---- */

/* One path's operations on a 256- or 512-bit blocked filter. The hashed batch forms prefetch the
 * block of key i + BK_PF while probing key i; the bytes forms hash key i + BK_PF into a small ring at
 * the same time, so hashing overlaps the misses. None updates a count. */
typedef struct bk__blk_ops {
    void (*add)(const bk__blk *e, uint64_t h);
    bool (*contains)(const bk__blk *e, uint64_t h);
    /* uint64 keys: hash (bk__hash_u64, inlined) and probe in one function of the path; add_u64 also
     * counts the key (*e->count += 1) and returns BK_OK, the public call's status */
    bk_status (*add_u64)(const bk__blk *e, uint64_t key);
    bool (*contains_u64)(const bk__blk *e, uint64_t key);
    void (*add_hashes)(const bk__blk *e, const uint64_t *h, size_t n);
    size_t (*contains_hashes)(const bk__blk *e, const uint64_t *h, size_t n, uint8_t *results);
    void (*add_many)(const bk__blk *e, const void *const *keys, const size_t *lens, size_t n);
    size_t (*contains_many)(const bk__blk *e, const void *const *keys, const size_t *lens, size_t n,
                            uint8_t *results);
} bk__blk_ops;

/* The operations of `layout` on path `simd` (a resolved bk_simd: scalar, AVX2 or AVX-512). */
BK_HIDDEN const bk__blk_ops *bk__blk_ops_for(bk_blocked_layout layout, bk_simd simd);

/* Prefetch distance of the batch forms, in keys: enough misses in flight to cover DRAM latency. */
#ifndef BK_PF
#  define BK_PF 16
#endif

/*
 * 1024-bit blocks, a whole chain at once: true when the key with low hash bits x has all of its first
 * ks[l] probes set in block blocks[l] for some l < n. The mask is built once and extended when a block
 * asks a larger k (a smaller k starts it again), so the chain's blocks cost one masked compare each,
 * all loads independent. The scalar form reads with relaxed atomic loads (the path under
 * ThreadSanitizer); the vector forms use plain vector loads, as the blocked filter does.
 */
BK_HIDDEN bool bk__b1024_any(bk_simd simd, const uint64_t *const *blocks, const uint32_t *ks, uint32_t n,
                             uint32_t x);

#endif
