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
#include "bench.h"
#include "peers.h"

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
