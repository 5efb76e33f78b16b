/*
 * The peers' data structures and their query code, as header-inline functions: what the real peers
 * are (libfilter's block filter, xor_singleheader's binary_fuse8 and cuckoofilter are header code
 * compiled into their user's loop), so bench/calls.c inlines them into its loops as a user's program
 * does. c_peers.c builds the peers (and wraps them as contenders of bench/bench) on the same code.
 * The designs and how they were checked: c_peers.c's opening comment.
 */
#ifndef BK_BENCH_PEERS_H
#define BK_BENCH_PEERS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <bloomkit/bloomkit.h>
#if defined(__x86_64__) || defined(__i386__)
#  include <immintrin.h>
#  define PEER_X86 1
#endif

__extension__ typedef unsigned __int128 bench_u128; /* GCC and Clang */

static inline uint64_t key64(const void *k, size_t len)
{
    uint64_t v;
    if (len == 8) {
        memcpy(&v, k, 8);
        return v;
    }
    return bk_hash64(k, len, 0);
}

static inline uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    k ^= k >> 33;
    return k;
}

static inline uint64_t mulhi64(uint64_t a, uint64_t b) { return (uint64_t)(((bench_u128)a * b) >> 64); }

/* Zeroed and 64-byte aligned; 2 MiB and more: 2 MiB aligned and advised for transparent huge pages,
 * as bloomkit's arrays are, unless BK_THP=0 (the same A/B switch). */
static inline void *zalloc64(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    const char *e = getenv("BK_THP");
    bool thp = bytes >= huge && !(e && !strcmp(e, "0"));
    size_t align = thp ? huge : 64, r = (bytes + align - 1) / align * align;
    void *p = aligned_alloc(align, r ? r : 64);
    if (!p) return NULL;
#ifdef MADV_HUGEPAGE
    if (thp) (void)madvise(p, r, MADV_HUGEPAGE);
#endif
    memset(p, 0, r ? r : 64);
    return p;
}

/* ================= split-block Bloom filter ================= */

static const uint32_t SBBF_SALT[8] __attribute__((aligned(32))) = {
    0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU, 0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U,
};

typedef struct {
    uint32_t *words; /* blocks * 8 */
    uint64_t blocks;
    bool avx2;
} sbbf_t;

static inline uint32_t *sbbf_block(const sbbf_t *f, uint64_t h)
{
    return f->words + (((h >> 32) * f->blocks) >> 32) * 8;
}

static inline void sbbf_add_scalar(sbbf_t *f, uint64_t h)
{
    uint32_t *b = sbbf_block(f, h), x = (uint32_t)h;
    for (int i = 0; i < 8; i++) b[i] |= UINT32_C(1) << ((x * SBBF_SALT[i]) >> 27);
}
static inline bool sbbf_contains_scalar(const sbbf_t *f, uint64_t h)
{
    const uint32_t *b = sbbf_block(f, h);
    uint32_t x = (uint32_t)h;
    for (int i = 0; i < 8; i++)
        if (!(b[i] >> ((x * SBBF_SALT[i]) >> 27) & 1)) return false;
    return true;
}
#ifdef PEER_X86
__attribute__((target("avx2"))) static inline __m256i sbbf_mask(uint32_t x)
{
    __m256i v = _mm256_mullo_epi32(_mm256_set1_epi32((int)x), _mm256_load_si256((const __m256i *)SBBF_SALT));
    return _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_srli_epi32(v, 27));
}
__attribute__((target("avx2"))) static inline void sbbf_add_avx2(sbbf_t *f, uint64_t h)
{
    __m256i *b = (__m256i *)sbbf_block(f, h);
    _mm256_store_si256(b, _mm256_or_si256(_mm256_load_si256(b), sbbf_mask((uint32_t)h)));
}
__attribute__((target("avx2"))) static inline bool sbbf_contains_avx2(const sbbf_t *f, uint64_t h)
{
    const __m256i *b = (const __m256i *)sbbf_block(f, h);
    return _mm256_testc_si256(_mm256_load_si256(b), sbbf_mask((uint32_t)h));
}
#endif

/* ================= binary fuse filter, 8-bit fingerprints ================= */

typedef struct {
    uint64_t seed;
    uint32_t seg_len, seg_mask, seg_count_len;
    uint8_t *fp;
    size_t len;
} bfuse_t;

static inline uint8_t bfuse_fp(uint64_t h) { return (uint8_t)(h ^ (h >> 32)); }

static inline void bfuse_pos(const bfuse_t *f, uint64_t h, uint32_t pos[3])
{
    uint64_t h0 = mulhi64(h, f->seg_count_len);
    uint64_t h1 = h0 + f->seg_len, h2 = h1 + f->seg_len;
    h1 ^= (h >> 18) & f->seg_mask;
    h2 ^= h & f->seg_mask;
    pos[0] = (uint32_t)h0;
    pos[1] = (uint32_t)h1;
    pos[2] = (uint32_t)h2;
}

/* ================= cuckoo filter, 4 x 12-bit tags, power-of-two buckets ================= */

#define CF_TAG_BITS 12
#define CF_TAG_MASK ((UINT32_C(1) << CF_TAG_BITS) - 1)
#define CF_BUCKET_BYTES 6 /* 4 x 12 bits */
#define CF_LANES_LO UINT64_C(0x001001001001)
#define CF_LANES_HI UINT64_C(0x800800800800)
#define CF_BUCKET_MASK UINT64_C(0xffffffffffff)
#define CF_MAX_KICKS 500

typedef struct {
    uint8_t *t; /* buckets * 6 bytes + 2 so that a bucket is read with one 8-byte load */
    uint64_t buckets, mask, items, rng;
    bench_u128 mul, add;
    bool victim_used;
    uint64_t victim_index;
    uint32_t victim_tag;
} cfp_t;

static inline uint64_t cfp_bucket(const cfp_t *f, uint64_t i)
{
    uint64_t w;
    memcpy(&w, f->t + i * CF_BUCKET_BYTES, 8);
    return w & CF_BUCKET_MASK;
}
static inline void cfp_set_slot(cfp_t *f, uint64_t i, int j, uint32_t tag)
{
    uint64_t w;
    uint8_t *at = f->t + i * CF_BUCKET_BYTES;
    memcpy(&w, at, 8);
    w = (w & ~((uint64_t)CF_TAG_MASK << (j * CF_TAG_BITS))) | (uint64_t)tag << (j * CF_TAG_BITS);
    memcpy(at, &w, 8);
}
/* some 12-bit lane of bucket word w equals tag (tags are never 0) */
static inline bool cfp_has(uint64_t w, uint32_t tag)
{
    uint64_t y = w ^ (tag * CF_LANES_LO);
    return ((y - CF_LANES_LO) & ~y & CF_LANES_HI) != 0;
}
static inline void cfp_index_tag(const cfp_t *f, uint64_t key, uint64_t *i, uint32_t *tag)
{
    uint64_t h = (uint64_t)((f->add + f->mul * (bench_u128)key) >> 64);
    *i = (h >> 32) & f->mask;
    uint32_t t = (uint32_t)h & CF_TAG_MASK;
    *tag = t ? t : 1;
}
static inline uint64_t cfp_alt(const cfp_t *f, uint64_t i, uint32_t tag)
{
    return (i ^ (uint64_t)tag * UINT64_C(0x5bd1e995)) & f->mask;
}
static inline uint32_t cfp_rand(cfp_t *f)
{
    f->rng ^= f->rng << 13;
    f->rng ^= f->rng >> 7;
    f->rng ^= f->rng << 17;
    return (uint32_t)(f->rng >> 32);
}
/* put tag into a free slot of bucket i, or (kick) into a random slot, returning the tag it held */
static inline bool cfp_put(cfp_t *f, uint64_t i, uint32_t tag, bool kick, uint32_t *old)
{
    uint64_t w = cfp_bucket(f, i);
    for (int j = 0; j < 4; j++)
        if (((w >> (j * CF_TAG_BITS)) & CF_TAG_MASK) == 0) {
            cfp_set_slot(f, i, j, tag);
            return true;
        }
    if (kick) {
        int j = (int)(cfp_rand(f) & 3);
        *old = (uint32_t)(w >> (j * CF_TAG_BITS)) & CF_TAG_MASK;
        cfp_set_slot(f, i, j, tag);
    }
    return false;
}

/* ---- the queries on a uint64 key, as each peer's users call them ---- */

/* libfilter: the caller hashes (here fmix64 of the key) and calls the header's find; the AVX2 form when
 * the program is compiled for it, as libfilter's header chooses at compile time. */
static inline bool sbbf_contains_u64(const sbbf_t *f, uint64_t key)
{
    uint64_t h = fmix64(key);
#if defined(PEER_X86) && defined(__AVX2__)
    return sbbf_contains_avx2(f, h);
#else
    return sbbf_contains_scalar(f, h);
#endif
}

/* binary_fuse8_contain: the key remixed with the filter's seed, three cells, one XOR test. */
static inline bool bfuse_contains_u64(const bfuse_t *f, uint64_t key)
{
    uint64_t h = fmix64(key + f->seed);
    uint32_t p[3];
    bfuse_pos(f, h, p);
    return (uint8_t)(bfuse_fp(h) ^ f->fp[p[0]] ^ f->fp[p[1]] ^ f->fp[p[2]]) == 0;
}

/* cuckoofilter's Contain: index and tag from the hash, the victim checked, both buckets read. */
static inline bool cfp_contains_u64(const cfp_t *f, uint64_t key)
{
    uint64_t i1;
    uint32_t tag;
    cfp_index_tag(f, key, &i1, &tag);
    uint64_t i2 = cfp_alt(f, i1, tag);
    bool victim = f->victim_used && tag == f->victim_tag && (i1 == f->victim_index || i2 == f->victim_index);
    return victim || cfp_has(cfp_bucket(f, i1), tag) || cfp_has(cfp_bucket(f, i2), tag);
}

#endif
