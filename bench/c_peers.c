/*
 * Peers: the designs bloomkit's filters are compared with, written here from their published
 * descriptions, each with a plain one-key call on a 64-bit key (the harness's 8-byte keys are read as
 * one little-endian uint64; a key of another length is first reduced with bk_hash64, so URL runs work
 * but then include bloomkit's byte hash).
 *
 *  sbbf    split-block Bloom filter (the Parquet format's filter, the design of libfilter's "block"
 *          filter): 256-bit blocks of eight 32-bit words, one bit per word, the bit of word i is the
 *          top 5 bits of (low 32 bits of the hash) * SALT[i]; block = high 32 bits of the hash
 *          multiplied by the block count, top 32 bits. Hash: fmix64 (MurmurHash3's finalizer) of the
 *          key. AVX2 when the CPU has it (one multiply, shift and shift-variable per key, vptest for
 *          the query), scalar otherwise. Sized with bloomkit's split-block formula for (n, p), so
 *          both filters have the same block count.
 *  bfuse8  binary fuse filter with 8-bit fingerprints (Graf and Lemire, "Binary Fuse Filters: Fast
 *          and Smaller Than Xor Filters", 2022): 3-wise, the array cut in segments of a power-of-two
 *          length chosen from n, a key's three positions in three consecutive segments; query = XOR
 *          of three bytes against the key's fingerprint. Hash fmix64(key + seed). Built by peeling.
 *  cfpeer  cuckoo filter of Fan, Andersen, Kaminsky and Mitzenmacher ("Cuckoo Filter: Practically
 *          Better Than Bloom", 2014) as its reference implementation lays it out: 4-slot buckets of
 *          12-bit tags packed in 6 bytes, a power-of-two bucket count (n / 4 rounded up to a power of
 *          two, doubled if that would be over 96% full), partial-key cuckoo hashing
 *          i2 = (i1 ^ tag * 0x5bd1e995) & mask, at most 500 kicks, one victim slot. Hash: a 128-bit
 *          multiply-add of the key, top 64 bits; bucket from the high half, tag from the low 12 bits
 *          (0 becomes 1: 0 marks an empty slot).
 *
 * Each peer also says what FPR its design gives at its fill (printed beside the measured one) and,
 * for the cuckoo filter, its load factor.
 */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <bloomkit/bloomkit.h>
#include "bench.h"
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
static void *zalloc64(size_t bytes)
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

static void sbbf_add_scalar(sbbf_t *f, uint64_t h)
{
    uint32_t *b = sbbf_block(f, h), x = (uint32_t)h;
    for (int i = 0; i < 8; i++) b[i] |= UINT32_C(1) << ((x * SBBF_SALT[i]) >> 27);
}
static bool sbbf_contains_scalar(const sbbf_t *f, uint64_t h)
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
__attribute__((target("avx2"))) static void sbbf_add_avx2(sbbf_t *f, uint64_t h)
{
    __m256i *b = (__m256i *)sbbf_block(f, h);
    _mm256_store_si256(b, _mm256_or_si256(_mm256_load_si256(b), sbbf_mask((uint32_t)h)));
}
__attribute__((target("avx2"))) static bool sbbf_contains_avx2(const sbbf_t *f, uint64_t h)
{
    const __m256i *b = (const __m256i *)sbbf_block(f, h);
    return _mm256_testc_si256(_mm256_load_si256(b), sbbf_mask((uint32_t)h));
}
#endif

static void *sbbf_create(uint64_t n, double p)
{
    bk_geometry g;
    if (bk_blocked_size(n, p, BK_BLOCKED_SPLIT256, &g) != BK_OK) return NULL;
    sbbf_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->blocks = g.m / 256;
    if (f->blocks > UINT32_MAX) f->blocks = UINT32_MAX; /* the block index takes 32 bits of the hash */
    f->words = zalloc64(f->blocks * 32);
#ifdef PEER_X86
    f->avx2 = __builtin_cpu_supports("avx2");
#endif
    if (!f->words) {
        free(f);
        return NULL;
    }
    return f;
}
static void sbbf_add(void *vf, const void *k, size_t len)
{
    sbbf_t *f = vf;
    uint64_t h = fmix64(key64(k, len));
#ifdef PEER_X86
    if (f->avx2) {
        sbbf_add_avx2(f, h);
        return;
    }
#endif
    sbbf_add_scalar(f, h);
}
static bool sbbf_contains(void *vf, const void *k, size_t len)
{
    const sbbf_t *f = vf;
    uint64_t h = fmix64(key64(k, len));
#ifdef PEER_X86
    if (f->avx2) return sbbf_contains_avx2(f, h);
#endif
    return sbbf_contains_scalar(f, h);
}
static void sbbf_clear(void *vf)
{
    sbbf_t *f = vf;
    memset(f->words, 0, f->blocks * 32);
}
static size_t sbbf_bytes(void *vf) { return ((sbbf_t *)vf)->blocks * 32; }
static double sbbf_fpr(void *vf, uint64_t n)
{
    return bk_blocked_fpr(((sbbf_t *)vf)->blocks * 256, n, BK_BLOCKED_SPLIT256, 8);
}
static void sbbf_destroy(void *vf)
{
    sbbf_t *f = vf;
    free(f->words);
    free(f);
}

const bench_contender bench_sbbf = {
    .name = "sbbf", .create = sbbf_create, .add = sbbf_add, .contains = sbbf_contains, .clear = sbbf_clear,
    .bytes = sbbf_bytes, .expected_fpr = sbbf_fpr, .destroy = sbbf_destroy,
    .note = "peer: split-block Bloom filter (Parquet / libfilter design), fmix64 of the 8-byte key, AVX2 "
            "when the CPU has it, bloomkit's split-block size for (n, p)",
};

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

static bool bfuse_contains(void *vf, const void *k, size_t len)
{
    const bfuse_t *f = vf;
    uint64_t h = fmix64(key64(k, len) + f->seed);
    uint32_t p[3];
    bfuse_pos(f, h, p);
    return (uint8_t)(bfuse_fp(h) ^ f->fp[p[0]] ^ f->fp[p[1]] ^ f->fp[p[2]]) == 0;
}

/* The geometry of the paper for arity 3: segment length 2^floor(log_3.33(n) + 2.25) (at most 2^18),
 * array about max(1.125, 0.875 + 0.25 log(1e6) / log(n)) n long, a whole number of segments. */
static void bfuse_geometry(bfuse_t *f, uint64_t n)
{
    uint32_t seg = n <= 1 ? 4 : UINT32_C(1) << (int)floor(log((double)n) / log(3.33) + 2.25);
    if (seg > 262144) seg = 262144;
    double factor = n <= 1 ? 0 : fmax(1.125, 0.875 + 0.25 * log(1000000.0) / log((double)n));
    uint64_t capacity = n <= 1 ? 0 : (uint64_t)llround((double)n * factor);
    uint64_t init_segments = (capacity + seg - 1) / seg;
    init_segments = init_segments > 2 ? init_segments - 2 : 1;
    uint64_t len = (init_segments + 2) * seg;
    uint64_t segments = (len + seg - 1) / seg;
    segments = segments <= 2 ? 1 : segments - 2;
    f->seg_len = seg;
    f->seg_mask = seg - 1;
    f->seg_count_len = (uint32_t)(segments * seg);
    f->len = (size_t)((segments + 2) * seg);
}

static void *bfuse_build(const void *const *keys, const size_t *lens, size_t n, double p)
{
    (void)p; /* 8-bit fingerprints: 2^-8 */
    bfuse_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    bfuse_geometry(f, n);
    uint64_t *k64 = malloc(n * sizeof *k64), *xh = malloc(f->len * sizeof *xh), *stack_h = malloc(n * sizeof *stack_h);
    uint32_t *cnt = malloc(f->len * sizeof *cnt), *queue = malloc(f->len * sizeof *queue),
             *stack_p = malloc(n * sizeof *stack_p);
    f->fp = zalloc64(f->len);
    bool ok = false;
    if (!k64 || !xh || !stack_h || !cnt || !queue || !stack_p || !f->fp) goto done;
    for (size_t i = 0; i < n; i++) k64[i] = key64(keys[i], lens[i]);
    for (uint64_t attempt = 0; attempt < 100 && !ok; attempt++) {
        f->seed = fmix64(UINT64_C(0x726b2b9d438b9d4d) + attempt);
        memset(xh, 0, f->len * sizeof *xh);
        memset(cnt, 0, f->len * sizeof *cnt);
        for (size_t i = 0; i < n; i++) {
            uint64_t h = fmix64(k64[i] + f->seed);
            uint32_t ps[3];
            bfuse_pos(f, h, ps);
            for (int j = 0; j < 3; j++) {
                xh[ps[j]] ^= h;
                cnt[ps[j]]++;
            }
        }
        size_t qn = 0, sn = 0;
        for (size_t i = 0; i < f->len; i++)
            if (cnt[i] == 1) queue[qn++] = (uint32_t)i;
        while (qn) {
            uint32_t at = queue[--qn];
            if (cnt[at] != 1) continue;
            uint64_t h = xh[at];
            stack_h[sn] = h;
            stack_p[sn++] = at;
            uint32_t ps[3];
            bfuse_pos(f, h, ps);
            for (int j = 0; j < 3; j++) {
                xh[ps[j]] ^= h;
                if (--cnt[ps[j]] == 1) queue[qn++] = ps[j];
            }
        }
        if (sn != n) continue; /* a 2-core is left: another seed */
        memset(f->fp, 0, f->len);
        while (sn--) {
            uint64_t h = stack_h[sn];
            uint32_t ps[3];
            bfuse_pos(f, h, ps);
            /* fp[stack_p] is still 0, so XORing all three positions gives its value */
            f->fp[stack_p[sn]] = (uint8_t)(bfuse_fp(h) ^ f->fp[ps[0]] ^ f->fp[ps[1]] ^ f->fp[ps[2]]);
        }
        ok = true;
    }
done:
    free(k64);
    free(xh);
    free(stack_h);
    free(cnt);
    free(queue);
    free(stack_p);
    if (!ok) {
        free(f->fp);
        free(f);
        return NULL;
    }
    return f;
}
static size_t bfuse_bytes(void *vf) { return ((bfuse_t *)vf)->len; }
static double bfuse_fpr(void *vf, uint64_t n)
{
    (void)vf;
    (void)n;
    return 1.0 / 256.0;
}
static void bfuse_destroy(void *vf)
{
    bfuse_t *f = vf;
    free(f->fp);
    free(f);
}

const bench_contender bench_bfuse8 = {
    .name = "bfuse8", .build = bfuse_build, .contains = bfuse_contains, .bytes = bfuse_bytes,
    .expected_fpr = bfuse_fpr, .destroy = bfuse_destroy,
    .note = "peer: binary fuse filter, 3-wise, 8-bit fingerprints (Graf & Lemire 2022), fmix64(key + seed); "
            "insert = build time per key",
};

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
static uint32_t cfp_rand(cfp_t *f)
{
    f->rng ^= f->rng << 13;
    f->rng ^= f->rng >> 7;
    f->rng ^= f->rng << 17;
    return (uint32_t)(f->rng >> 32);
}
/* put tag into a free slot of bucket i, or (kick) into a random slot, returning the tag it held */
static bool cfp_put(cfp_t *f, uint64_t i, uint32_t tag, bool kick, uint32_t *old)
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

static void *cfp_create(uint64_t n, double p)
{
    (void)p; /* 12-bit tags */
    cfp_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    uint64_t want = n / 4 ? n / 4 : 1, nb = 1;
    while (nb < want) nb <<= 1;
    if ((double)n / (double)nb / 4.0 > 0.96) nb <<= 1;
    f->buckets = nb;
    f->mask = nb - 1;
    f->t = zalloc64(nb * CF_BUCKET_BYTES + 2);
    f->rng = UINT64_C(0x9e3779b97f4a7c15);
    f->mul = (bench_u128)UINT64_C(0x8f1bbcdcca62c1d6) << 64 | UINT64_C(0x2545f4914f6cdd1d);
    f->add = (bench_u128)UINT64_C(0x6a09e667f3bcc909) << 64 | UINT64_C(0xbb67ae8584caa73b);
    if (!f->t) {
        free(f);
        return NULL;
    }
    return f;
}
static void cfp_add(void *vf, const void *k, size_t len)
{
    cfp_t *f = vf;
    if (f->victim_used) return; /* full: the reference refuses (NotEnoughSpace) */
    uint64_t i;
    uint32_t tag, old = 0;
    cfp_index_tag(f, key64(k, len), &i, &tag);
    for (int n = 0; n < CF_MAX_KICKS; n++) {
        bool kick = n > 0;
        if (cfp_put(f, i, tag, kick, &old)) {
            f->items++;
            return;
        }
        if (kick) tag = old;
        i = cfp_alt(f, i, tag);
    }
    f->victim_index = i;
    f->victim_tag = tag;
    f->victim_used = true;
    f->items++;
}
static bool cfp_contains(void *vf, const void *k, size_t len)
{
    const cfp_t *f = vf;
    uint64_t i1;
    uint32_t tag;
    cfp_index_tag(f, key64(k, len), &i1, &tag);
    uint64_t i2 = cfp_alt(f, i1, tag);
    bool hit = cfp_has(cfp_bucket(f, i1), tag) | cfp_has(cfp_bucket(f, i2), tag);
    return hit || (f->victim_used && tag == f->victim_tag && (i1 == f->victim_index || i2 == f->victim_index));
}
static bool cfp_remove(void *vf, const void *k, size_t len)
{
    cfp_t *f = vf;
    uint64_t i1;
    uint32_t tag;
    cfp_index_tag(f, key64(k, len), &i1, &tag);
    uint64_t is[2] = { i1, cfp_alt(f, i1, tag) };
    for (int b = 0; b < 2; b++) {
        uint64_t w = cfp_bucket(f, is[b]);
        for (int j = 0; j < 4; j++)
            if (((w >> (j * CF_TAG_BITS)) & CF_TAG_MASK) == tag) {
                cfp_set_slot(f, is[b], j, 0);
                f->items--;
                if (f->victim_used) { /* a slot is free: the victim gets another walk */
                    uint64_t vi = f->victim_index;
                    uint32_t vt = f->victim_tag, old = 0;
                    f->victim_used = false;
                    f->items--;
                    for (int n = 0; n < CF_MAX_KICKS; n++) {
                        if (cfp_put(f, vi, vt, n > 0, &old)) {
                            f->items++;
                            return true;
                        }
                        if (n > 0) vt = old;
                        vi = cfp_alt(f, vi, vt);
                    }
                    f->victim_index = vi;
                    f->victim_tag = vt;
                    f->victim_used = true;
                    f->items++;
                }
                return true;
            }
    }
    if (f->victim_used && tag == f->victim_tag && (is[0] == f->victim_index || is[1] == f->victim_index)) {
        f->victim_used = false;
        f->items--;
        return true;
    }
    return false;
}
static size_t cfp_bytes(void *vf) { return ((cfp_t *)vf)->buckets * CF_BUCKET_BYTES; }
static double cfp_load(void *vf)
{
    const cfp_t *f = vf;
    return (double)f->items / (double)(f->buckets * 4);
}
/* an absent key's tag is compared with the occupied slots of two buckets: 8 alpha slots on average;
 * tag 1 is twice as likely as the others (0 maps to it), which the mean over tags hides */
static double cfp_fpr(void *vf, uint64_t n)
{
    (void)n;
    return -expm1(8.0 * cfp_load(vf) * log1p(-1.0 / 4096.0));
}
static void cfp_destroy(void *vf)
{
    cfp_t *f = vf;
    free(f->t);
    free(f);
}

const bench_contender bench_cfpeer = {
    .name = "cfpeer", .create = cfp_create, .add = cfp_add, .contains = cfp_contains, .remove = cfp_remove,
    .bytes = cfp_bytes, .expected_fpr = cfp_fpr, .load = cfp_load, .destroy = cfp_destroy,
    .note = "peer: cuckoo filter (Fan et al. 2014, reference layout): 4 x 12-bit tags per bucket, power-of-"
            "two bucket count (n/4 rounded up, doubled over 96%), 500 kicks, one victim",
};
