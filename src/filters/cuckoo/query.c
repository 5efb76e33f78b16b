/* Cuckoo filter: queries. contains and count, one key or a batch. */
#include "cuckoo_impl.h"

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


bool bk_cuckoo_contains_hash(const bk_cuckoo *F, uint64_t h)
{
    const cf_table *T = F->solo;
    uint32_t fp = fp_of(F, h);
    if (BK_LIKELY(T != NULL && F->groups == 1 && !F->semi)) { /* semi-sorted: decoded in the general path */
        uint64_t i1 = bk__range64(h, T->buckets);
        return solo_has(F, T, fp, i1, alt_of(T->buckets, i1, fp)); /* the first table: shift 0 */
    }
    return contains_general(F, h, fp);
}

bool bk_cuckoo_contains(const bk_cuckoo *F, const void *key, size_t len)
{
    return bk_cuckoo_contains_hash(F, bk__hash(key, len, F->seed));
}

bool bk_cuckoo_contains_u64(const bk_cuckoo *F, uint64_t key)
{
    return bk_cuckoo_contains_hash(F, bk__hash_u64(key, F->seed));
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

size_t bk_cuckoo_contains_hashes(const bk_cuckoo *F, const uint64_t *hashes, size_t n, uint8_t *results)
{
    if (!F || (!hashes && n)) return 0;
    size_t present = 0;
    for (size_t i = 0; i < n; i += CF_BATCH) {
        size_t e = i + CF_BATCH < n ? i + CF_BATCH : n;
        const cf_table *T = F->solo;
        if (T && F->groups == 1 && !LD(&T->victim)) {
            /* the common case: one table, no concurrent writers, one group per bucket, no victim:
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
            /* one table with two groups per bucket, or a victim */
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

size_t bk_cuckoo_contains_many(const bk_cuckoo *F, const void *const *keys, const size_t *lens, size_t n,
                               uint8_t *results)
{
    if (!F || (n && (!keys || !lens))) return 0;
    uint64_t h[CF_BATCH];
    size_t present = 0;
    for (size_t i = 0, c = 0; i < n; i += c) {
        c = bk__hash_chunk(h, CF_BATCH, keys, lens, i, n, F->seed);
        present += bk_cuckoo_contains_hashes(F, h, c, results ? results + i : NULL);
    }
    return present;
}
