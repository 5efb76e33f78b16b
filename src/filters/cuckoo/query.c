/* Cuckoo filter: queries. contains and count, one key or a batch. */
#include "filters/cuckoo/cuckoo_impl.h"
#include "core/simd.h"
#include "bloomkit/reader.h"

/* A chain, or concurrent mode. */
__attribute__((noinline)) static bool contains_general(const bk_cuckoo *F, uint64_t h, uint32_t fp)
{
    uint32_t n = ntables_acq(F);
    const cf_vec *v = vec_acq(F);
    for (uint32_t t = 0; t < n; t++) {
        const cf_table *T = v->t[t];
        uint64_t i1 = bk__range64(h, T->buckets), i2 = alt_t(T, i1, fp);
        bool hit = BK_UNLIKELY(F->stripes != NULL) ? bk__cf_table_has_concurrent(F, T, fp, i1, i2)
                                                   : table_has(F, T, fp, i1, i2, false);
        if (hit) return true;
    }
    return false;
}


/* Every state the fast paths below do not serve: a chain, concurrent mode, semi-sorted buckets, buckets
 * of more than one group, a non-empty stash. */
static bool contains_slow(const bk_cuckoo *F, uint64_t h)
{
    const cf_table *T = cf_solo(F);
    uint32_t fp = fp_of(F, h);
    if (T != NULL && F->groups == 1 && !F->semi) { /* semi-sorted: decoded in the general path */
        uint64_t i1 = bk__range64(h, T->buckets);
        return solo_has(F, T, fp, i1, alt_of(T->buckets, i1, fp)); /* the first table: shift 0 */
    }
    return contains_general(F, h, fp);
}

/*
 * Fast paths. The common state -- one table, no concurrent mode, plain buckets read in one group, no
 * stash -- has a query with nothing left to decide: hash to a fingerprint and two buckets, two
 * independent loads, the SWAR zero-lane test on both (no popcount, no loop, no branch between the
 * buckets). It is instantiated with the geometry as constants for b = 4 and every f of 4 to 16 (the
 * bucket's bit offset, the lane masks and the fingerprint range fold into the instructions), and once
 * with the geometry read from F for the other one-group buckets. bk__cf_update_solo points F->has at
 * the path for the filter's state (contains_slow for everything else), and F->has_u64 at the same path
 * on a uint64 key, so a call is one indirect jump to a function that hashes and answers.
 */
#if defined(__x86_64__) && defined(__GNUC__)
/* alt_of's wrap taken from the borrow of its subtraction: a sub, a lea and a cmov, where GCC emits a
 * copy, the sub, an add and a separate compare before its cmov (two instructions fewer per query). */
BK_INLINE uint64_t alt_fast(uint64_t buckets, uint64_t i, uint32_t fp)
{
    uint64_t d = ((uint64_t)(uint32_t)(fp * CF_PHI32) * buckets) >> 32, t;
    __asm__("sub %[i], %[d]\n\t"
            "lea (%[d],%[m]), %[t]\n\t"
            "cmovb %[t], %[d]"
            : [d] "+&r"(d), [t] "=&r"(t)
            : [i] "r"(i), [m] "r"(buckets)
            : "cc");
    return d;
}
#else
#  define alt_fast alt_of
#endif

/*
 * Two forms of the bucket test. Branchless (both buckets loaded and tested, no branch between them):
 * best while the table is in the caches, where a branch on which bucket holds a present key is
 * mispredicted about half the time. First bucket first (`early`): a present key found in its first
 * bucket -- most of them, since an insert tries that one first -- answers without loading the second,
 * and the branch predictor, expecting that, does not issue the second load either; an absent key still
 * loads both. Out of the caches a present key then costs about one miss instead of two, which leaves
 * room for more keys' misses in flight. The filter picks by its array's size (CF_EARLY_BYTES).
 */
#define CF_EARLY_BYTES ((uint64_t)4 << 20)

#if defined(__x86_64__) && defined(__GNUC__)
/* The b = 4 paths' lane constants by f, read by the multiply and the final test as memory operands:
 * a 64-bit constant in an instruction otherwise takes a 10-byte move into a register first (two
 * instructions fewer per query). */
#  define CF_LANES4(f) { CF_LO4(f), CF_LO4(f) << ((f) - 1) }
static const uint64_t cf_lanes4[17][2] = {
    [4] = CF_LANES4(4), [5] = CF_LANES4(5), [6] = CF_LANES4(6), [7] = CF_LANES4(7), [8] = CF_LANES4(8),
    [9] = CF_LANES4(9), [10] = CF_LANES4(10), [11] = CF_LANES4(11), [12] = CF_LANES4(12),
    [13] = CF_LANES4(13), [14] = CF_LANES4(14), [15] = CF_LANES4(15), [16] = CF_LANES4(16),
};
#  undef CF_LANES4
#endif

/* any_zero_lane_neg, with the b = 4 path's lo multiply and hi test from cf_lanes4 where it has them */
BK_INLINE uint64_t lanes_pat(uint32_t fp, uint64_t lo, const uint32_t cf)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (cf) {
        uint64_t p = fp;
        __asm__("imulq %1, %0" : "+r"(p) : "m"(cf_lanes4[cf][0]) : "cc");
        return p;
    }
#endif
    (void)cf;
    return fp * lo;
}
BK_INLINE bool lanes_zero(uint64_t nlo, uint64_t hi, uint64_t x1, uint64_t x2, const uint32_t cf)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (cf) {
        uint64_t v = ((x1 + nlo) & ~x1) | ((x2 + nlo) & ~x2);
        bool any;
        __asm__("testq %[hi], %[v]" : "=@ccnz"(any) : [hi] "m"(cf_lanes4[cf][1]), [v] "r"(v));
        return any;
    }
#endif
    (void)cf;
    return any_zero_lane_neg(nlo, hi, x1, x2);
}

BK_INLINE bool has_fast(const bk_cuckoo *F, uint64_t h, const uint32_t cf, const bool early, const bool mulx)
{
    const cf_table *T = cf_first(F); /* the only one: no load to find it */
    const uint64_t bb = cf ? 4 * cf : F->bucket_bits;
    uint64_t lo = cf ? CF_LO4(cf) : F->lane_lo;
    const uint64_t hi = cf ? CF_LO4(cf) << (cf - 1) : F->lane_hi;
    const uint32_t range = cf ? (UINT32_C(1) << cf) - 1 : F->fp_range;
    uint64_t fr = (uint32_t)h;
#if defined(__x86_64__) && defined(__GNUC__)
    /* one imul (GCC builds a multiply by 2^f - 1 from a copy, a shift and a subtract) */
    __asm__("imul %1, %0" : "+r"(fr) : "re"((uint64_t)range));
#else
    fr *= range;
#endif
    uint32_t fp = 1 + (uint32_t)(fr >> 32);
    uint64_t m = T->buckets;
    uint64_t i1 = mulx ? bk__range64_mulx(h, m) : bk__range64(h, m), i2 = alt_fast(m, i1, fp);
    /* -lo, so that x - lo is one lea (x + nlo) rather than a copy and a subtract */
    uint64_t nlo = 0 - lo;
#if defined(__GNUC__)
    /* both opaque: GCC would build fp * lo from shifts and adds (six instructions instead of two; in
     * a query of about fifty that is what limits how many calls overlap), and fold -lo back into a
     * subtract (where lanes_pat multiplies by the table's lo, only nlo) */
#  if defined(__x86_64__)
    if (cf)
        __asm__("" : "+r"(nlo));
    else
#  endif
        __asm__("" : "+r"(lo), "+r"(nlo));
#endif
    uint64_t pat = lanes_pat(fp, lo, cf);
    uint64_t x1 = read_bucket(T->words, i1, bb) ^ pat;
    if (early) {
        if (lanes_zero(nlo, hi, x1, x1, cf)) return true;
        uint64_t x2 = read_bucket(T->words, i2, bb) ^ pat;
        return lanes_zero(nlo, hi, x2, x2, cf);
    }
    uint64_t x2 = read_bucket(T->words, i2, bb) ^ pat;
    return lanes_zero(nlo, hi, x1, x2, cf);
}

/* Each path twice: on a hash (F->has), and on a uint64 key hashed in the same function (F->has_u64),
 * so a uint64 call is one indirect jump to a function that does all of it. */
#define CF_KEY(F, k) bk__hash_u64_folded1(k, (F)->u64_fold)
static bool has_any(const bk_cuckoo *F, uint64_t h) { return has_fast(F, h, 0, false, false); }
static bool has_any_early(const bk_cuckoo *F, uint64_t h) { return has_fast(F, h, 0, true, false); }
static bool has_any_u(const bk_cuckoo *F, uint64_t k) { return has_fast(F, CF_KEY(F, k), 0, false, false); }
static bool has_any_early_u(const bk_cuckoo *F, uint64_t k) { return has_fast(F, CF_KEY(F, k), 0, true, false); }
static bool contains_slow_u(const bk_cuckoo *F, uint64_t k) { return contains_slow(F, CF_KEY(F, k)); }
#define CF_HAS4(f)                                                                                  \
    static bool has4_##f(const bk_cuckoo *F, uint64_t h) { return has_fast(F, h, f, false, false); } \
    static bool has4e_##f(const bk_cuckoo *F, uint64_t h) { return has_fast(F, h, f, true, false); }  \
    static bool has4u_##f(const bk_cuckoo *F, uint64_t k) { return has_fast(F, CF_KEY(F, k), f, false, false); } \
    static bool has4ue_##f(const bk_cuckoo *F, uint64_t k) { return has_fast(F, CF_KEY(F, k), f, true, false); }
CF_HAS4(4) CF_HAS4(5) CF_HAS4(6) CF_HAS4(7) CF_HAS4(8) CF_HAS4(9) CF_HAS4(10) CF_HAS4(11) CF_HAS4(12) CF_HAS4(13)
CF_HAS4(14) CF_HAS4(15) CF_HAS4(16)
#undef CF_HAS4

static bool (*const has4[2][17])(const bk_cuckoo *, uint64_t) = {
    { [4] = has4_4, [5] = has4_5, [6] = has4_6, [7] = has4_7, [8] = has4_8, [9] = has4_9, [10] = has4_10,
      [11] = has4_11, [12] = has4_12, [13] = has4_13, [14] = has4_14, [15] = has4_15, [16] = has4_16 },
    { [4] = has4e_4, [5] = has4e_5, [6] = has4e_6, [7] = has4e_7, [8] = has4e_8, [9] = has4e_9, [10] = has4e_10,
      [11] = has4e_11, [12] = has4e_12, [13] = has4e_13, [14] = has4e_14, [15] = has4e_15, [16] = has4e_16 },
};
static bool (*const has4u[2][17])(const bk_cuckoo *, uint64_t) = {
    { [4] = has4u_4, [5] = has4u_5, [6] = has4u_6, [7] = has4u_7, [8] = has4u_8, [9] = has4u_9, [10] = has4u_10,
      [11] = has4u_11, [12] = has4u_12, [13] = has4u_13, [14] = has4u_14, [15] = has4u_15, [16] = has4u_16 },
    { [4] = has4ue_4, [5] = has4ue_5, [6] = has4ue_6, [7] = has4ue_7, [8] = has4ue_8, [9] = has4ue_9,
      [10] = has4ue_10, [11] = has4ue_11, [12] = has4ue_12, [13] = has4ue_13, [14] = has4ue_14, [15] = has4ue_15,
      [16] = has4ue_16 },
};

#if defined(__x86_64__) && defined(__GNUC__)
#  define CF_HAS_BMI 1
/* The same paths built for BMI1: andn folds the zero-lane test's not-and pairs (four instructions
 * fewer per query). Chosen at run time like the classic filter's BMI2 loops; BK_SIMD=scalar keeps
 * the portable ones. */
#define CF_HAS4B(f)                                                                                 \
    __attribute__((target("bmi"))) static bool has4b_##f(const bk_cuckoo *F, uint64_t h)         \
    {                                                                                            \
        return has_fast(F, h, f, false, false);                                                  \
    }                                                                                            \
    __attribute__((target("bmi"))) static bool has4be_##f(const bk_cuckoo *F, uint64_t h)        \
    {                                                                                            \
        return has_fast(F, h, f, true, false);                                                   \
    }                                                                                            \
    __attribute__((target("bmi,bmi2"))) static bool has4bu_##f(const bk_cuckoo *F, uint64_t k)   \
    {                                                                                            \
        return has_fast(F, CF_KEY(F, k), f, false, true);                                        \
    }                                                                                            \
    __attribute__((target("bmi,bmi2"))) static bool has4bue_##f(const bk_cuckoo *F, uint64_t k)  \
    {                                                                                            \
        return has_fast(F, CF_KEY(F, k), f, true, true);                                         \
    }
CF_HAS4B(4) CF_HAS4B(5) CF_HAS4B(6) CF_HAS4B(7) CF_HAS4B(8) CF_HAS4B(9) CF_HAS4B(10) CF_HAS4B(11) CF_HAS4B(12)
CF_HAS4B(13) CF_HAS4B(14) CF_HAS4B(15) CF_HAS4B(16)
#undef CF_HAS4B

static bool (*const has4b[2][17])(const bk_cuckoo *, uint64_t) = {
    { [4] = has4b_4, [5] = has4b_5, [6] = has4b_6, [7] = has4b_7, [8] = has4b_8, [9] = has4b_9, [10] = has4b_10,
      [11] = has4b_11, [12] = has4b_12, [13] = has4b_13, [14] = has4b_14, [15] = has4b_15, [16] = has4b_16 },
    { [4] = has4be_4, [5] = has4be_5, [6] = has4be_6, [7] = has4be_7, [8] = has4be_8, [9] = has4be_9,
      [10] = has4be_10, [11] = has4be_11, [12] = has4be_12, [13] = has4be_13, [14] = has4be_14, [15] = has4be_15,
      [16] = has4be_16 },
};
/* the uint64 forms: BMI2 as well (the hash's rotations by rorx, the first bucket by mulx) */
static bool (*const has4bu[2][17])(const bk_cuckoo *, uint64_t) = {
    { [4] = has4bu_4, [5] = has4bu_5, [6] = has4bu_6, [7] = has4bu_7, [8] = has4bu_8, [9] = has4bu_9,
      [10] = has4bu_10, [11] = has4bu_11, [12] = has4bu_12, [13] = has4bu_13, [14] = has4bu_14, [15] = has4bu_15,
      [16] = has4bu_16 },
    { [4] = has4bue_4, [5] = has4bue_5, [6] = has4bue_6, [7] = has4bue_7, [8] = has4bue_8, [9] = has4bue_9,
      [10] = has4bue_10, [11] = has4bue_11, [12] = has4bue_12, [13] = has4bue_13, [14] = has4bue_14,
      [15] = has4bue_15, [16] = has4bue_16 },
};
#endif

BK_HIDDEN bool (*bk__cf_pick_has(const bk_cuckoo *F))(const bk_cuckoo *, uint64_t)
{
    const cf_table *T = cf_solo(F);
    if (!T || F->groups != 1 || F->semi || stash_used(T)) return contains_slow;
    const bool early = cf_nwords(F, T) * 8 > CF_EARLY_BYTES;
    if (F->b == 4 && F->f <= 16) {
#ifdef CF_HAS_BMI
        if (bk__cpu_usable() & BK_CPU_BMI1) return has4b[early][F->f];
#endif
        return has4[early][F->f];
    }
    return early ? has_any_early : has_any;
}

BK_HIDDEN bool (*bk__cf_pick_has_u64(const bk_cuckoo *F))(const bk_cuckoo *, uint64_t)
{
    const cf_table *T = cf_solo(F);
    if (!T || F->groups != 1 || F->semi || stash_used(T)) return contains_slow_u;
    const bool early = cf_nwords(F, T) * 8 > CF_EARLY_BYTES;
    if (F->b == 4 && F->f <= 16) {
#ifdef CF_HAS_BMI
        const unsigned both = BK_CPU_BMI1 | BK_CPU_BMI2;
        if ((bk__cpu_usable() & both) == both) return has4bu[early][F->f];
#endif
        return has4u[early][F->f];
    }
    return early ? has_any_early_u : has_any_u;
}

bk_status bk_cuckoo_get_reader(const bk_cuckoo *F, bk_cuckoo_reader *out)
{
    if (!F || !out) return BK_EINVAL;
    const cf_table *T = cf_solo(F);
    if (!T || F->groups != 1 || F->semi) return BK_ENOTSUP;
    out->words = (const uint8_t *)T->words;
    out->buckets = T->buckets;
    out->bucket_bits = F->bucket_bits;
    out->lane_lo = F->lane_lo;
    out->lane_hi = F->lane_hi;
    out->seed = F->seed;
    out->flip = bk__hash_u64_flip(F->seed);
    for (int k = 0; k < CF_STASH; k++) out->stash[k] = LD(&T->stash[k]);
    out->fp_range = F->fp_range;
    out->stash_used = stash_used(T);
    out->early = cf_nwords(F, T) * 8 > CF_EARLY_BYTES;
    return BK_OK;
}

bool bk_cuckoo_contains_hash(const bk_cuckoo *F, uint64_t h)
{
    return F->has(F, h);
}

/* Keys of other lengths than 8 in a function of their own: the 8-byte path then needs no stack
 * frame (the general hash's call does) and reaches the filter's path by one jump. */
static __attribute__((noinline)) bool contains_any_len(const bk_cuckoo *F, const void *key, size_t len)
{
    return F->has(F, bk__hash(key, len, F->seed));
}

bool bk_cuckoo_contains(const bk_cuckoo *F, const void *key, size_t len)
{
    if (BK_LIKELY(len == 8)) {
        uint64_t k;
        memcpy(&k, key, 8);
        return F->has_u64(F, k);
    }
    return contains_any_len(F, key, len);
}

bool bk_cuckoo_contains_u64(const bk_cuckoo *F, uint64_t key)
{
    return F->has_u64(F, key);
}


uint64_t bk_cuckoo_count_hash(const bk_cuckoo *F, uint64_t h)
{
    if (!F) return 0;
    uint32_t fp = fp_of(F, h);
    uint32_t n = ntables_acq(F);
    const cf_vec *v = vec_acq(F);
    uint64_t c = 0;
    for (uint32_t t = 0; t < n; t++) {
        const cf_table *T = v->t[t];
        uint64_t i1 = bk__range64(h, T->buckets), i2 = alt_t(T, i1, fp);
        c += F->stripes ? bk__cf_table_count_concurrent(F, T, fp, i1, i2) : table_count(F, T, fp, i1, i2, false);
    }
    return c;
}

uint64_t bk_cuckoo_count(const bk_cuckoo *F, const void *key, size_t len)
{
    if (!F || (!key && len)) return 0;
    return bk_cuckoo_count_hash(F, bk__hash(key, len, F->seed));
}

static size_t contains_hashes(const bk_cuckoo *F, const uint64_t *hashes, size_t n, uint8_t *results)
{
    size_t present = 0;
    for (size_t i = 0; i < n; i += CF_BATCH) {
        size_t e = i + CF_BATCH < n ? i + CF_BATCH : n;
        const cf_table *T = cf_solo(F);
        if (T && F->groups == 1 && !stash_used(T)) {
            /* the common case: one table, no concurrent writers, one group per bucket, empty stash:
             * place and prefetch all, then probe. Loop invariants in locals: the stores to
             * results (bytes) could alias F's fields for the compiler. */
            const uint8_t *base = (const uint8_t *)T->words;
            const uint64_t m = T->buckets, bb = F->bucket_bits, lo = F->lane_lo, hi = F->lane_hi;
            const uint32_t range = F->fp_range;
            const bool semi = F->semi;
            uint64_t p1[CF_BATCH], p2[CF_BATCH], pat[CF_BATCH];
            for (size_t j = 0; j < e - i; j++) {
                uint64_t h = hashes[i + j];
                uint32_t fp = 1 + (uint32_t)(((uint64_t)(uint32_t)h * range) >> 32);
                uint64_t i1 = bk__range64(h, m);
                p1[j] = i1 * bb;
                p2[j] = alt_of(m, i1, fp) * bb;
                pat[j] = fp * lo;
                BK_PREFETCH(base + (p1[j] >> 3));
                BK_PREFETCH(base + (p2[j] >> 3));
            }
            size_t got = 0;
            for (size_t j = 0; j < e - i; j++) {
                uint64_t x1, x2;
                memcpy(&x1, base + (p1[j] >> 3), 8);
                memcpy(&x2, base + (p2[j] >> 3), 8);
                x1 >>= p1[j] & 7;
                x2 >>= p2[j] & 7;
                if (semi) {
                    x1 = semi_decode(F, x1);
                    x2 = semi_decode(F, x2);
                }
                bool r = any_zero_lane(lo, hi, x1 ^ pat[j], x2 ^ pat[j]);
                if (results) results[i + j] = r;
                got += r;
            }
            present += got;
            continue;
        }
        if (T) {
            /* one table with two groups per bucket, or a stash */
            uint64_t i1[CF_BATCH], i2[CF_BATCH];
            uint32_t fp[CF_BATCH];
            for (size_t j = i; j < e; j++) {
                fp[j - i] = fp_of(F, hashes[j]);
                i1[j - i] = bk__range64(hashes[j], T->buckets);
                i2[j - i] = alt_t(T, i1[j - i], fp[j - i]);
                BK_PREFETCH((const uint8_t *)T->words + ((i1[j - i] * F->bucket_bits) >> 3));
                BK_PREFETCH((const uint8_t *)T->words + ((i2[j - i] * F->bucket_bits) >> 3));
            }
            for (size_t j = i; j < e; j++) {
                bool r = F->groups == 1 && !F->semi ? solo_has(F, T, fp[j - i], i1[j - i], i2[j - i])
                                        : table_has(F, T, fp[j - i], i1[j - i], i2[j - i], false);
                if (results) results[j] = r;
                present += r;
            }
            continue;
        }
        for (size_t j = i; j < e; j++) prefetch_key(F, hashes[j], OP_REMOVE, false);
        for (size_t j = i; j < e; j++) {
            bool r = bk_cuckoo_contains_hash(F, hashes[j]);
            if (results) results[j] = r;
            present += r;
        }
    }
    return present;
}

static size_t query_chunk(const void *F, const uint64_t *h, size_t n, uint8_t *results)
{
    return contains_hashes(F, h, n, results);
}

bk_status bk_cuckoo_contains_hashes(const bk_cuckoo *F, const uint64_t *hashes, size_t n, uint8_t *results,
                                    size_t *hits)
{
    if (!F || (!hashes && n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, contains_hashes(F, hashes, n, results));
}

bk_status bk_cuckoo_contains_many(const bk_cuckoo *F, const void *const *keys, const size_t *lens, size_t n,
                                  uint8_t *results, size_t *hits)
{
    if (!F) return bk__batch_refused(hits);
    return bk__contains_many(F, F->seed, keys, lens, n, results, hits, query_chunk);
}
