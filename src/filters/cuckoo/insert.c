/* Cuckoo filter: writers. The eviction walk with its victim stash, add, add_if_absent, remove and their
 * batches. */
#include "filters/cuckoo/cuckoo_impl.h"

/* ---- insert into one table ---- */

BK_INLINE uint64_t rng_next(bk_cuckoo *F)
{
    uint64_t x = F->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return F->rng = x;
}



/* A walk's leftover into the lowest free stash entry (there is one: see kick_walk). */
static void park(bk_cuckoo *F, cf_table *T, uint64_t v)
{
    int k = 0;
    while (k < CF_STASH - 1 && LD(&T->stash[k])) k++;
    set_stash(F, T, k, v);
}

/* kick_walk for one plain table of one-group buckets without concurrent mode (the fast paths' state,
 * stash or not): the same walk -- the same random slots, the same skipping of copies, the same
 * placements, so the same bytes -- on whole bucket words: one read of the bucket, the evicted
 * fingerprint shifted out of it, the new one written with one read-modify-write of the 8 bytes that
 * hold the bucket, and the free-slot test of the next bucket by the SWAR zero-lane test. */
static void kick_walk_plain(bk_cuckoo *F, cf_table *T, uint32_t cur, uint64_t bucket, int from)
{
    const uint32_t b = F->b, f = F->f;
    const uint64_t range = F->fp_range, bb = F->bucket_bits, lo = F->lane_lo, hi = F->lane_hi, m = T->buckets;
    const bool pow2 = (b & (b - 1)) == 0;
    const uint32_t max_kicks = F->max_kicks; /* (the byte stores below could alias F for the compiler) */
    uint8_t *base = (uint8_t *)T->words;
    uint64_t kicks = 0;
    for (uint32_t n = 0; n < max_kicks; n++) {
        uint32_t r = (uint32_t)(rng_next(F) >> 32);
        uint32_t j = pow2 ? r & (b - 1) : (uint32_t)(((uint64_t)r * b) >> 32);
        uint64_t pos = bucket * bb, w;
        unsigned sh = (unsigned)(pos & 7);
        memcpy(&w, base + (pos >> 3), 8);
        uint64_t x = w >> sh;
        uint32_t old = (uint32_t)((x >> (j * f)) & range);
        for (uint32_t tries = 1; old == cur && tries < b; tries++) { /* see kick_walk */
            j = j + 1 == b ? 0 : j + 1;
            old = (uint32_t)((x >> (j * f)) & range);
        }
        uint64_t alt = alt_of(m, bucket, old);
        prefetch_bucket(F, T, alt);
        unsigned at = sh + j * f;
        w = (w & ~(range << at)) | (uint64_t)cur << at;
        memcpy(base + (pos >> 3), &w, 8);
        if (n == 0 && from >= 0) set_stash(F, T, from, 0);
        kicks++;
        cur = old;
        bucket = alt;
        pos = bucket * bb;
        sh = (unsigned)(pos & 7);
        memcpy(&w, base + (pos >> 3), 8);
        uint64_t z = zero_lanes(w >> sh, hi - lo, hi);
        if (z) {
            z &= -z;
            w |= (uint64_t)cur * (z >> (f - 1)) << sh;
            memcpy(base + (pos >> 3), &w, 8);
            cur = 0;
            break;
        }
    }
    if (cur) park(F, T, (uint64_t)cur | bucket << 32);
    ST(&F->ctr[CTR_KICKS], LD(&F->ctr[CTR_KICKS]) + kicks);
}

/*
 * Random-walk eviction starting at `bucket`, carrying `cur`. When from >= 0, cur is T's stash entry
 * `from`, which stays there until cur is written into the table. Always stores everything: if the
 * kicks run out, the fingerprint left over goes to the lowest free stash entry (the caller checked
 * that one is free, or is moving one out of it). In concurrent mode the stripes of both buckets of
 * the fingerprint being carried are odd from the moment it is evicted until it is stored again: that
 * order is what the readers' validation in concurrent.c relies on.
 */
static void kick_walk(bk_cuckoo *F, cf_table *T, uint32_t cur, uint64_t bucket, int from)
{
    if (!F->stripes && !F->semi && F->groups == 1 && T->shift == 0) {
        kick_walk_plain(F, T, cur, bucket, from);
        return;
    }
    const uint64_t none = UINT64_MAX;
    uint64_t pa = none, pb = none; /* the buckets whose stripes protect the homeless fingerprint */
    uint64_t kicks = 0;
    for (uint32_t n = 0; n < F->max_kicks; n++) {
        uint32_t r = (uint32_t)(rng_next(F) >> 32);
        /* a power-of-two b takes the low bits (as always); any other b a multiply-shift */
        uint32_t j = (F->b & (F->b - 1)) == 0 ? r & (F->b - 1) : (uint32_t)(((uint64_t)r * F->b) >> 32);
        uint32_t old = slot_get(F, T, bucket, j);
        /* Evicting a copy of the fingerprint we carry changes nothing; with copies of one repeated
         * item filling its buckets, such swaps make the walk bounce between them until it gives up.
         * Take the next slot holding another fingerprint, when there is one. */
        for (uint32_t tries = 1; old == cur && tries < F->b; tries++) {
            j = j + 1 == F->b ? 0 : j + 1;
            old = slot_get(F, T, bucket, j);
        }
        uint64_t alt = alt_t(T, bucket, old);
        prefetch_bucket(F, T, alt); /* its load overlaps the writes below */
        if (F->stripes) {
            bk__cf_seq_open(F, bucket);
            bk__cf_seq_open(F, alt);
        }
        slot_set(F, T, bucket, j, cur);
        if (n == 0 && from >= 0) set_stash(F, T, from, 0);
        if (F->stripes) {
            /* cur is in a bucket again: its protection can end, unless shared with old's */
            uint64_t sa = bucket & (CF_STRIPES - 1), sb = alt & (CF_STRIPES - 1);
            if (pa != none && (pa & (CF_STRIPES - 1)) != sa && (pa & (CF_STRIPES - 1)) != sb) bk__cf_seq_close(F, pa);
            if (pb != none && (pb & (CF_STRIPES - 1)) != sa && (pb & (CF_STRIPES - 1)) != sb) bk__cf_seq_close(F, pb);
        }
        pa = bucket;
        pb = alt;
        kicks++;
        cur = old;
        bucket = alt;
        if (try_put(F, T, bucket, cur)) {
            cur = 0;
            break;
        }
    }
    if (cur) park(F, T, (uint64_t)cur | bucket << 32);
    if (F->stripes && pa != none) {
        bk__cf_seq_close(F, pa);
        bk__cf_seq_close(F, pb);
    }
    ST(&F->ctr[CTR_KICKS], LD(&F->ctr[CTR_KICKS]) + kicks);
}

static void table_insert(bk_cuckoo *F, cf_table *T, uint32_t fp, uint64_t i1)
{
    uint64_t i2 = alt_t(T, i1, fp);
    prefetch_bucket(F, T, i2);
    if (!try_put(F, T, i1, fp) && !try_put(F, T, i2, fp))
        kick_walk(F, T, fp, (rng_next(F) >> 63) ? i2 : i1, -1);
    ST(&T->items, LD(&T->items) + 1);
}


/*
 * The stash. A walk that runs out of kicks leaves one fingerprint over, which goes to the table's
 * stash (CF_STASH entries) instead of being refused; queries check the stash after the two buckets.
 * Rules:
 *   - below its capacity a table never refuses an insert while a stash entry is free: it first gives
 *     every stashed fingerprint another walk (a fresh random walk from its bucket; it goes back into
 *     the table unless its kicks run out again), then inserts, parking a new leftover if need be;
 *   - at or over its capacity a non-empty stash makes the table full: the next insert grows the
 *     chain or is refused with BK_EFULL;
 *   - every remove that frees a slot gives the stashed fingerprints another walk.
 * A table that never needs more than entry 0 keeps entries 1..3 zero. The
 * stash is part of the file (entry 0 the table header's victim word, entries 1..3 its words at 40, 48
 * and 56, zero in files that never used them).
 */
static void stash_rewalk(bk_cuckoo *F, cf_table *T)
{
    for (int k = 0; k < CF_STASH; k++) {
        uint64_t v = LD(&T->stash[k]);
        if (!v) continue;
        uint32_t vfp = (uint32_t)v;
        uint64_t vb = v >> 32, va = alt_t(T, vb, vfp);
        if (try_put(F, T, vb, vfp) || try_put(F, T, va, vfp))
            set_stash(F, T, k, 0); /* the copy is in the table before the stash entry is emptied */
        else
            kick_walk(F, T, vfp, vb, k); /* a leftover goes to entry k or a lower free one */
    }
}

static bk_status add_locked(bk_cuckoo *F, uint64_t h)
{
    cf_table *T = F->vec->t[F->ntables - 1];
    /* In a chain, a key whose buckets in the newest table are full takes a free slot in an older table
     * before anything is evicted (RedisBloom does the same): copies of repeated items, which fill
     * their buckets and make eviction walks fail at a low load, then do not chain table after table.
     * Exact deletes still hold: the argument in THE CUCKOO RULES does not depend on which table a
     * copy is in. */
    if (F->ntables > 1 && bk__cf_put_anywhere(F, fp_of(F, h), h)) {
        ST(&F->ctr[CTR_INSERTED], LD(&F->ctr[CTR_INSERTED]) + 1);
        return BK_OK;
    }
    /* Below its capacity a table does not give up after unlucky walks: see "The stash". */
    if (stash_used(T) && LD(&T->items) < T->capacity) stash_rewalk(F, T);
    if (table_full(T)) {
        bk_status s = bk__cf_grow(F);
        if (s != BK_OK) return s;
        T = F->vec->t[F->ntables - 1];
    }
    table_insert(F, T, fp_of(F, h), bk__range64(h, T->buckets));
    ST(&F->ctr[CTR_INSERTED], LD(&F->ctr[CTR_INSERTED]) + 1);
    return BK_OK;
}

/* ---- the fast insert ----
 * In the state the fast query serves (one table, no concurrent mode, plain one-group buckets, an
 * empty stash: see query.c), an insert that finds a free slot in one of its buckets is: hash, read the
 * first bucket, its free lanes by the exact SWAR zero-lane test, the lowest one isolated (z & -z) and
 * the fingerprint ORed into it with one unaligned read-modify-write of the 8 bytes that hold the
 * bucket; the second bucket only when the first is full. The same slot the general path takes (the
 * first free one of i1, then of i2), so the saved bytes do not depend on the path. Without concurrent
 * mode nobody reads alongside the writer, so plain stores are enough. When both buckets are full it
 * returns false having changed nothing, and the general path evicts. Instantiated like the queries. */
BK_INLINE bool put_fast(bk_cuckoo *F, uint64_t h, const uint32_t cf)
{
    cf_table *T = cf_first(F); /* the only one */
    const uint32_t f = cf ? cf : F->f;
    const uint64_t bb = cf ? 4 * cf : F->bucket_bits;
    const uint64_t lo = cf ? CF_LO4(cf) : F->lane_lo;
    const uint64_t hi = cf ? CF_LO4(cf) << (cf - 1) : F->lane_hi;
    const uint32_t range = cf ? (UINT32_C(1) << cf) - 1 : F->fp_range;
    uint32_t fp = 1 + (uint32_t)(((uint64_t)(uint32_t)h * range) >> 32);
    uint8_t *base = (uint8_t *)T->words;
    uint64_t m = T->buckets;
    uint64_t i1 = bk__range64(h, m);
    /* byte and bit of the bucket: bb % 8 == 0 (an even f, as constant) starts every bucket at a byte */
    uint64_t pos = i1 * bb, at = bb % 8 == 0 ? i1 * (bb / 8) : pos >> 3, w;
    unsigned sh = bb % 8 == 0 ? 0 : (unsigned)(pos & 7);
    memcpy(&w, base + at, 8);
    uint64_t z = zero_lanes(w >> sh, hi - lo, hi);
    if (!z) {
        uint64_t i2 = alt_of(m, i1, fp);
        pos = i2 * bb;
        at = bb % 8 == 0 ? i2 * (bb / 8) : pos >> 3;
        sh = bb % 8 == 0 ? 0 : (unsigned)(pos & 7);
        memcpy(&w, base + at, 8);
        z = zero_lanes(w >> sh, hi - lo, hi);
        if (!z) return false;
    }
    z &= -z; /* the top bit of the lowest free lane */
    w |= (uint64_t)fp * (z >> (f - 1)) << sh;
    memcpy(base + at, &w, 8);
    ST(&T->items, LD(&T->items) + 1);
    ST(&F->ctr[CTR_INSERTED], LD(&F->ctr[CTR_INSERTED]) + 1);
    return true;
}

static bool put_any(bk_cuckoo *F, uint64_t h) { return put_fast(F, h, 0); }
#define CF_PUT4(f) \
    static bool put4_##f(bk_cuckoo *F, uint64_t h) { return put_fast(F, h, f); }
CF_PUT4(4) CF_PUT4(5) CF_PUT4(6) CF_PUT4(7) CF_PUT4(8) CF_PUT4(9) CF_PUT4(10) CF_PUT4(11) CF_PUT4(12) CF_PUT4(13)
CF_PUT4(14) CF_PUT4(15) CF_PUT4(16)
#undef CF_PUT4

static bool (*const put4[17])(bk_cuckoo *, uint64_t) = {
    [4] = put4_4, [5] = put4_5, [6] = put4_6, [7] = put4_7, [8] = put4_8, [9] = put4_9, [10] = put4_10,
    [11] = put4_11, [12] = put4_12, [13] = put4_13, [14] = put4_14, [15] = put4_15, [16] = put4_16,
};

BK_HIDDEN bool (*bk__cf_pick_put(const bk_cuckoo *F))(bk_cuckoo *, uint64_t)
{
    cf_table *T = cf_solo(F);
    if (!T || F->groups != 1 || F->semi || stash_used(T)) return NULL;
    if (F->b == 4 && F->f <= 16) return put4[F->f];
    return put_any;
}

/* ---- insert (public) ---- */

/* After F->put found both buckets full: what add_locked does in that state (one table, empty stash, no
 * concurrent mode), without searching the two buckets again. */
static bk_status add_evict(bk_cuckoo *F, uint64_t h)
{
    cf_table *T = F->vec->t[0];
    uint32_t fp = fp_of(F, h);
    uint64_t i1 = bk__range64(h, T->buckets), i2 = alt_of(T->buckets, i1, fp);
    kick_walk(F, T, fp, (rng_next(F) >> 63) ? i2 : i1, -1);
    ST(&T->items, LD(&T->items) + 1);
    ST(&F->ctr[CTR_INSERTED], LD(&F->ctr[CTR_INSERTED]) + 1);
    return BK_OK;
}

bk_status bk_cuckoo_add_hash(bk_cuckoo *F, uint64_t h)
{
    if (BK_UNLIKELY(!F)) return BK_EINVAL;
    if (F->put) return F->put(F, h) ? BK_OK : add_evict(F, h);
    wlock(F);
    bk_status s = add_locked(F, h);
    wunlock(F);
    return s;
}

/* Keys of other lengths than 8 in a function of their own, so the 8-byte path has no stack frame. */
static __attribute__((noinline)) bk_status add_any_len(bk_cuckoo *F, const void *key, size_t len)
{
    return bk_cuckoo_add_hash(F, bk__hash(key, len, F->seed));
}

bk_status bk_cuckoo_add(bk_cuckoo *F, const void *key, size_t len)
{
    if (BK_UNLIKELY(!F || (!key && len))) return BK_EINVAL;
    if (BK_LIKELY(len == 8)) {
        uint64_t k;
        memcpy(&k, key, 8);
        return bk_cuckoo_add_hash(F, bk__hash_u64_folded(k, F->u64_fold));
    }
    return add_any_len(F, key, len);
}


/* Under the writer lock (or the caller's exclusion) nothing moves, so the plain check is exact. */
static bool contains_locked(const bk_cuckoo *F, uint64_t h)
{
    uint32_t fp = fp_of(F, h);
    for (uint32_t t = 0; t < F->ntables; t++) {
        const cf_table *T = F->vec->t[t];
        uint64_t i1 = bk__range64(h, T->buckets);
        if (table_has(F, T, fp, i1, alt_t(T, i1, fp), false)) return true;
    }
    return false;
}

bk_status bk_cuckoo_add_if_absent_hash(bk_cuckoo *F, uint64_t h)
{
    if (BK_UNLIKELY(!F)) return BK_EINVAL;
    wlock(F);
    bk_status s = contains_locked(F, h) ? BK_EEXISTS : add_locked(F, h);
    wunlock(F);
    return s;
}

bk_status bk_cuckoo_add_if_absent(bk_cuckoo *F, const void *key, size_t len)
{
    if (BK_UNLIKELY(!F || (!key && len))) return BK_EINVAL;
    return bk_cuckoo_add_if_absent_hash(F, bk__hash(key, len, F->seed));
}

/* ---- remove ---- */

static bool table_remove(bk_cuckoo *F, cf_table *T, uint32_t fp, uint64_t i1, uint64_t i2)
{
    prefetch_bucket(F, T, i2);
    int j = bucket_find(F, T, i1, fp);
    uint64_t bucket = i1;
    if (j < 0) {
        j = bucket_find(F, T, i2, fp);
        bucket = i2;
    }
    if (j >= 0) {
        slot_set(F, T, bucket, (uint32_t)j, 0);
    } else {
        int k = 0;
        while (k < CF_STASH && !stash_count_one(T, k, fp, i1, i2)) k++;
        if (k == CF_STASH) return false;
        set_stash(F, T, k, 0);
    }
    ST(&T->items, LD(&T->items) - 1);
    /* A slot is free again: give the stash another walk, so the table can accept inserts. */
    stash_rewalk(F, T);
    return true;
}

static bk_status remove_locked(bk_cuckoo *F, uint64_t h)
{
    uint32_t fp = fp_of(F, h);
    for (uint32_t t = F->ntables; t-- > 0;) {
        cf_table *T = F->vec->t[t];
        uint64_t i1 = bk__range64(h, T->buckets);
        if (table_remove(F, T, fp, i1, alt_t(T, i1, fp))) {
            ST(&F->ctr[CTR_DELETED], LD(&F->ctr[CTR_DELETED]) + 1);
            return BK_OK;
        }
    }
    return BK_ENOTFOUND;
}

bk_status bk_cuckoo_remove_hash(bk_cuckoo *F, uint64_t h)
{
    if (BK_UNLIKELY(!F)) return BK_EINVAL;
    wlock(F);
    bk_status s = remove_locked(F, h);
    wunlock(F);
    return s;
}

bk_status bk_cuckoo_remove(bk_cuckoo *F, const void *key, size_t len)
{
    if (BK_UNLIKELY(!F || (!key && len))) return BK_EINVAL;
    return bk_cuckoo_remove_hash(F, bk__hash(key, len, F->seed));
}

/* ---- uint64 keys: the byte forms on the key's 8 little-endian bytes ---- */

bk_status bk_cuckoo_add_u64(bk_cuckoo *F, uint64_t key)
{
    if (BK_UNLIKELY(!F)) return BK_EINVAL;
    return bk_cuckoo_add_hash(F, bk__hash_u64_folded(key, F->u64_fold));
}

bk_status bk_cuckoo_add_if_absent_u64(bk_cuckoo *F, uint64_t key)
{
    if (BK_UNLIKELY(!F)) return BK_EINVAL;
    return bk_cuckoo_add_if_absent_hash(F, bk__hash_u64_folded(key, F->u64_fold));
}

bk_status bk_cuckoo_remove_u64(bk_cuckoo *F, uint64_t key)
{
    if (BK_UNLIKELY(!F)) return BK_EINVAL;
    return bk_cuckoo_remove_hash(F, bk__hash_u64_folded(key, F->u64_fold));
}

/* ---- batches ---- */

/* One writer-lock hold per slice of CF_BATCH keys. Works in order and stops at the first key that
 * fails (add_if_absent: BK_EEXISTS is an answer, results[j] = 1, not a failure); returns its status
 * with *done = its index, or BK_OK with *done = n. */
static bk_status write_hashes(bk_cuckoo *F, const uint64_t *hashes, size_t n, uint8_t *results, size_t *done,
                              cf_op op)
{
    for (size_t i = 0; i < n; i += CF_BATCH) {
        size_t e = i + CF_BATCH < n ? i + CF_BATCH : n;
        wlock(F);
        for (size_t j = i; j < e; j++) prefetch_key(F, hashes[j], op, true);
        for (size_t j = i; j < e; j++) {
            bk_status s;
            bool had = false;
            if (op == OP_REMOVE) {
                s = remove_locked(F, hashes[j]);
            } else if (op == OP_ADD_NX && contains_locked(F, hashes[j])) {
                s = BK_OK;
                had = true;
            } else if (F->put) { /* (never in concurrent mode) */
                s = F->put(F, hashes[j]) ? BK_OK : add_evict(F, hashes[j]);
            } else {
                s = add_locked(F, hashes[j]);
            }
            if (s != BK_OK) {
                wunlock(F);
                *done = j;
                return s;
            }
            if (results) results[j] = had;
        }
        wunlock(F);
    }
    *done = n;
    return BK_OK;
}

static bk_status write_hashes_api(bk_cuckoo *F, const uint64_t *hashes, size_t n, uint8_t *results, size_t *done,
                                  cf_op op)
{
    if (!F || (!hashes && n)) return bk__batch_refused(done);
    size_t d = 0;
    bk_status s = write_hashes(F, hashes, n, results, &d, op);
    if (done) *done = d;
    return s;
}

bk_status bk_cuckoo_add_hashes(bk_cuckoo *F, const uint64_t *hashes, size_t n, size_t *done)
{
    return write_hashes_api(F, hashes, n, NULL, done, OP_ADD);
}

bk_status bk_cuckoo_add_if_absent_hashes(bk_cuckoo *F, const uint64_t *hashes, size_t n, uint8_t *results,
                                         size_t *done)
{
    return write_hashes_api(F, hashes, n, results, done, OP_ADD_NX);
}

bk_status bk_cuckoo_remove_hashes(bk_cuckoo *F, const uint64_t *hashes, size_t n, size_t *done)
{
    return write_hashes_api(F, hashes, n, NULL, done, OP_REMOVE);
}

static bk_status write_many(bk_cuckoo *F, const void *const *keys, const size_t *lens, size_t n, uint8_t *results,
                            size_t *done, cf_op op)
{
    if (!F || !bk__keys_valid(keys, lens, n)) return bk__batch_refused(done);
    uint64_t h[CF_BATCH];
    for (size_t i = 0, c = 0; i < n; i += c) {
        c = bk__hash_chunk(h, CF_BATCH, keys, lens, i, n, F->seed);
        size_t d = 0;
        bk_status s = write_hashes(F, h, c, results ? results + i : NULL, &d, op);
        if (s != BK_OK) {
            if (done) *done = i + d;
            return s;
        }
    }
    return bk__batch_done(done, n);
}

bk_status bk_cuckoo_add_many(bk_cuckoo *F, const void *const *keys, const size_t *lens, size_t n, size_t *done)
{
    return write_many(F, keys, lens, n, NULL, done, OP_ADD);
}
bk_status bk_cuckoo_add_if_absent_many(bk_cuckoo *F, const void *const *keys, const size_t *lens, size_t n,
                                       uint8_t *results, size_t *done)
{
    return write_many(F, keys, lens, n, results, done, OP_ADD_NX);
}
bk_status bk_cuckoo_remove_many(bk_cuckoo *F, const void *const *keys, const size_t *lens, size_t n, size_t *done)
{
    return write_many(F, keys, lens, n, NULL, done, OP_REMOVE);
}
