/* Cuckoo filter: the file body (docs/FORMAT.md 6.5) and the generic handle's vtable. */
#include "filters/testing.h"
#include "filters/cuckoo/cuckoo_impl.h"

/* ---- serialization (body layout in docs/FORMAT.md) ----
 * offset 0   u32 bucket_size, u32 fingerprint_bits, u32 max_kicks, u32 expansion, u32 tables,
 *            u32 flags (bit 0: semi-sorted buckets), u64 inserted, u64 deleted, u64 kicks,
 *            f64 fpr_target   (56 bytes)
 * zero padding to 64; then for each table of the chain, oldest first:
 *   u64 buckets, u64 capacity, u64 items, u64 stash[0] (the victim: 0 or fp | bucket << 32), u64 array
 *   bytes, u64 stash[1], stash[2], stash[3] (each 0 or a stashed fingerprint, like stash[0]), then the
 *   bucket array: little-endian u64 words, bucket i at bit i * B
 *   (B = b * f, slot j of it at bit i * B + j * f; semi-sorted: B = 4 f - 4, see cuckoo_impl.h),
 *   (buckets * B / 64 rounded up, plus one spare word) rounded up to 64 bytes; bits past the
 *   last bucket are zero.
 * Invariants checked on decode: every parameter in range; table t+1 has `expansion` times the
 * buckets and capacity of table t; the array length matches the buckets; items = used slots + stash
 * entries in use; every stash entry 0 or a fingerprint in range with a bucket of the table;
 * inserted - deleted = sum of items. */
#define CF_FLAG_SEMI 1u

static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_cuckoo *F = vf;
    bk_status s;
    uint32_t n = ntables_acq(F);
    const cf_vec *v = vec_acq(F);
    if ((s = bk__w_u32(w, F->b)) || (s = bk__w_u32(w, F->f)) || (s = bk__w_u32(w, F->max_kicks)) ||
        (s = bk__w_u32(w, F->expansion)) || (s = bk__w_u32(w, n)) || (s = bk__w_u32(w, F->semi ? CF_FLAG_SEMI : 0)) ||
        (s = bk__w_u64(w, LD(&F->ctr[CTR_INSERTED]))) || (s = bk__w_u64(w, LD(&F->ctr[CTR_DELETED]))) ||
        (s = bk__w_u64(w, LD(&F->ctr[CTR_KICKS]))) || (s = bk__w_f64(w, F->fpr_target)) ||
        (s = bk__w_align(w, 64)))
        return s;
    for (uint32_t t = 0; t < n; t++) {
        const cf_table *T = v->t[t];
        if ((s = bk__w_u64(w, T->buckets)) || (s = bk__w_u64(w, T->capacity)) || (s = bk__w_u64(w, LD(&T->items))) ||
            (s = bk__w_u64(w, LD(&T->stash[0]))) || (s = bk__w_u64(w, cf_file_words(F, T) * 8)) ||
            (s = bk__w_u64(w, LD(&T->stash[1]))) || (s = bk__w_u64(w, LD(&T->stash[2]))) ||
            (s = bk__w_u64(w, LD(&T->stash[3]))) || (s = bk__w_align(w, 64)) ||
            (s = bk__w_u64_array(w, T->words, (size_t)cf_nwords(F, T))))
            return s;
        /* a packed array (exact in memory): the file's spare word and rounding, as zeros */
        if (cf_nwords(F, T) < cf_file_words(F, T) && ((s = bk__w_u64(w, 0)) || (s = bk__w_align(w, 64)))) return s;
    }
    return BK_OK;
}

/* Used slots of an array of `slots` f-bit slots (as many lanes per 64-bit read as one read always
 * holds from where they start: see the groups in filter_new). */
static uint64_t count_used(uint32_t f, const uint64_t *w, uint64_t slots)
{
    uint32_t lanes = 64 / f;
    for (;;) {
        uint32_t d = 8;
        while ((lanes * f) % d) d >>= 1;
        if (lanes == 1 || lanes * f + (8 - d) % 8 <= 64) break;
        lanes--;
    }
    uint64_t lo = 0;
    for (uint32_t l = 0; l < lanes; l++) lo |= UINT64_C(1) << (l * f);
    uint64_t hi = lo << (f - 1), low = hi - lo, mask = (UINT64_C(1) << f) - 1;
    uint64_t used = 0, s = 0;
    const bool hw = (bk__cpu_usable() & BK_CPU_POPCNT) != 0;
    for (; s + lanes <= slots; s += lanes) {
        uint64_t x = read_plain(w, s * f);
        used += lanes - bk__popcount64(~(((x & low) + low) | x | low) & hi, hw);
    }
    for (; s < slots; s++) used += (read_plain(w, s * f) & mask) != 0;
    return used;
}

/* Used slots of a semi-sorted array, or UINT64_MAX when a bucket is not in the canonical form its
 * own slots would be written in (a code past the table, or low parts out of order). */
static uint64_t count_used_semi(const bk_cuckoo *F, const uint64_t *w, uint64_t buckets)
{
    uint64_t used = 0;
    for (uint64_t i = 0; i < buckets; i++) {
        uint64_t x = read_plain(w, i * F->bucket_bits) & ((UINT64_C(1) << F->bucket_bits) - 1);
        if ((x & 0xfff) >= CF_SEMI_CODES) return UINT64_MAX;
        uint64_t d = semi_decode(F, x);
        uint32_t a[4];
        for (int j = 0; j < 4; j++) {
            a[j] = (uint32_t)(d >> (j * F->f)) & F->fp_range;
            used += a[j] != 0;
        }
        if (semi_encode(F, a) != x) return UINT64_MAX;
    }
    return used;
}



static bk_status v_decode(bk_reader *r, void **out)
{
    uint32_t b, f, max_kicks, expansion, ntables, flags;
    uint64_t inserted, deleted, kicks;
    double fpr;
    bk_status s;
    *out = NULL;
    if ((s = bk__r_u32(r, &b)) || (s = bk__r_u32(r, &f)) || (s = bk__r_u32(r, &max_kicks)) ||
        (s = bk__r_u32(r, &expansion)) || (s = bk__r_u32(r, &ntables)) || (s = bk__r_u32(r, &flags)) ||
        (s = bk__r_u64(r, &inserted)) || (s = bk__r_u64(r, &deleted)) || (s = bk__r_u64(r, &kicks)) ||
        (s = bk__r_f64(r, &fpr)) || (s = bk__r_align(r, 64)))
        return s;
    if (!valid_b(b) || !valid_f(f) || max_kicks == 0 || max_kicks > BK_CUCKOO_MAX_KICKS ||
        expansion > BK_CUCKOO_MAX_EXPANSION || (expansion & (expansion - 1)) || ntables == 0 ||
        ntables > BK_CUCKOO_MAX_TABLES || (flags & ~CF_FLAG_SEMI) ||
        ((flags & CF_FLAG_SEMI) && !valid_semi(b, f)) ||
        (ntables > 1 && expansion == 0) || !(fpr > 0 && fpr <= 1) || deleted > inserted)
        return BK_ECORRUPT;
    cf_params prm = { b, f, max_kicks, expansion, r->seed, false, (flags & CF_FLAG_SEMI) != 0, r->alloc };
    uint32_t bucket_bits = bucket_bits_of(b, f, prm.semi);
    bk_cuckoo *F = NULL;
    uint64_t base = 0, prev_cap = 0, total_items = 0;
    uint32_t exp_shift = expansion ? (uint32_t)__builtin_ctz(expansion) : 0;
    for (uint32_t t = 0; t < ntables; t++) {
        uint64_t buckets, cap, items, stash[CF_STASH], bytes;
        if ((s = bk__r_u64(r, &buckets)) || (s = bk__r_u64(r, &cap)) || (s = bk__r_u64(r, &items)) ||
            (s = bk__r_u64(r, &stash[0])) || (s = bk__r_u64(r, &bytes)) || (s = bk__r_u64(r, &stash[1])) ||
            (s = bk__r_u64(r, &stash[2])) || (s = bk__r_u64(r, &stash[3])) || (s = bk__r_align(r, 64)))
            goto fail;
        s = BK_ECORRUPT;
        uint64_t want_c;
        uint64_t shift = (uint64_t)exp_shift * t;
        if (t == 0) base = buckets;
        if (t > 0 && (shift >= 64 || (base << shift) >> shift != base || buckets != base << shift ||
                      bk__mul_overflow(prev_cap, expansion, &want_c) || cap != want_c))
            goto fail;
        uint64_t tb = bk__cf_table_bytes(buckets, bucket_bits);
        if (tb == 0 || bytes != tb || cap == 0 || items > buckets * b + CF_STASH) goto fail;
        uint64_t stashed = 0;
        for (int k = 0; k < CF_STASH; k++) {
            if (!stash[k]) continue;
            uint64_t vfp = stash[k] & 0xffffffff;
            if (vfp > ((UINT64_C(1) << f) - 1) || vfp == 0 || (stash[k] >> 32) >= buckets) goto fail;
            stashed++;
        }
        const uint8_t *data;
        if ((s = bk__r_array_begin(r, bytes, &data))) goto fail;
        cf_table *T;
        if (t == 0) {
            if ((s = bk__cf_filter_new(&prm, fpr, base, cap, !r->borrow, &F)) != BK_OK) goto fail;
            F->ctr[CTR_INSERTED] = inserted;
            F->ctr[CTR_DELETED] = deleted;
            F->ctr[CTR_KICKS] = kicks;
            T = cf_first(F);
        } else if ((s = bk__cf_table_new(F->alloc, base, (uint32_t)shift, F->bucket_bits, cap, !r->borrow, &T)) != BK_OK) {
            goto fail;
        }
        if (T->packed) {
            /* the exact words, then the file's spare word and rounding, which must be zero */
            uint64_t exact = cf_nwords(F, T) * 8;
            uint8_t rest[72];
            s = bk__r_take_into(r, T->words, (size_t)exact);
            if (s == BK_OK && bytes - exact > sizeof rest) s = BK_ECORRUPT;
            if (s == BK_OK) s = bk__r_take_into(r, rest, (size_t)(bytes - exact));
            for (uint64_t i = 0; s == BK_OK && i < bytes - exact; i++)
                if (rest[i]) s = BK_ECORRUPT;
        } else {
            s = bk__r_array_end(r, bytes, data, &T->words);
        }
        if (s != BK_OK) {
            bk__cf_table_free(F->alloc, T); /* (not the first: it goes with F) */
            goto fail;
        }
        T->items = items;
        for (int k = 0; k < CF_STASH; k++) T->stash[k] = stash[k];
        if (t > 0 && (s = bk__cf_chain_push(F, T)) != BK_OK) {
            bk__cf_table_free(F->alloc, T);
            goto fail;
        }
        bk__cf_update_solo(F); /* the stash changed */
        s = BK_ECORRUPT;
        uint64_t used = F->semi ? count_used_semi(F, T->words, buckets) : count_used(f, T->words, buckets * b);
        if (!bk__tail_zero(T->words, cf_nwords(F, T), buckets * F->bucket_bits) || used == UINT64_MAX ||
            used + stashed != items)
            goto fail;
        total_items += items;
        prev_cap = cap;
    }
    if (inserted - deleted != total_items) {
        s = BK_ECORRUPT;
        goto fail;
    }
    *out = F;
    return BK_OK;
fail:
    bk_cuckoo_free(F);
    return s;
}

BK__VT_ADAPTERS(cuckoo)
BK__VT_WRITE_ADAPTERS(cuckoo)
static uint64_t v_count(const void *f) { return bk_cuckoo_items(f); }
static bk_status v_add_if_absent_hash(void *f, uint64_t h) { return bk_cuckoo_add_if_absent_hash(f, h); }
static bk_status v_remove_hash(void *f, uint64_t h) { return bk_cuckoo_remove_hash(f, h); }
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n, size_t *done)
{
    return bk_cuckoo_add_hashes(f, h, n, done);
}

BK_HIDDEN const bk_vtable bk__cuckoo_vtable = {
    .type = BK_TYPE_CUCKOO,
    BK__VT_ENTRIES,
    BK__VT_WRITE_ENTRIES,
    .remove_hash = v_remove_hash,
    .add_hashes = v_add_hashes,
    /* no merge (union): two tables' fingerprints cannot be merged without the keys */
    .count = v_count,
    .add_if_absent_hash = v_add_if_absent_hash,
};

/* For tests: where hash h lives in table t (fingerprint and both buckets). */
void bk__cuckoo_place(const bk_cuckoo *F, uint32_t t, uint64_t h, uint32_t *fp, uint64_t *i1, uint64_t *i2)
{
    const cf_table *T = vec_acq(F)->t[t];
    *fp = fp_of(F, h);
    *i1 = bk__range64(h, T->buckets);
    *i2 = alt_t(T, *i1, *fp);
}

uint32_t bk__cuckoo_semi_code(uint32_t n0, uint32_t n1, uint32_t n2, uint32_t n3)
{
    bk__cf_semi_init();
    return (uint32_t)bk__cf_semi_rank[0][0][n0] + bk__cf_semi_rank[1][n0][n1] + bk__cf_semi_rank[2][n1][n2] +
           bk__cf_semi_rank[3][n2][n3];
}
