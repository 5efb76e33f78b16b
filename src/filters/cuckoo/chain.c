/* Cuckoo filter: the expansion chain. How a larger table's buckets refine the smaller ones' (the
 * alternate-bucket map alt_t in cuckoo_impl.h), appending a table, growing, and the free-slot search over
 * every table that inserts into a chain try first. */
#include "filters/cuckoo/cuckoo_impl.h"

/*
 * Buckets in a chain. Expansion is a power of two 2^s, so table t has base << (s t) buckets. Its
 * bucket index is refined from the first table's: i1_t = range(h, base << shift) satisfies
 * i1_t >> shift = i1_0, and the alternate keeps that structure: the high part maps by the first
 * table's function, the low `shift` bits by an XOR with `shift` top bits of a second hash of fp (the
 * same bits at every level, so each table's pairs refine the smaller tables' pairs). Hence two keys
 * whose fingerprints collide in a larger table also collide in every smaller one, and a remove that
 * searches the newest (largest) table first only ever takes a copy whose owner still finds the
 * remover's own copy: removing keys that were added never causes a false negative, chain or not.
 */

BK_HIDDEN void bk__cf_update_solo(bk_cuckoo *F)
{
    bool (*has)(const bk_cuckoo *, uint64_t) = bk__cf_pick_has(F);
    bool (*has_u64)(const bk_cuckoo *, uint64_t) = bk__cf_pick_has_u64(F);
    bool (*put)(bk_cuckoo *, uint64_t) = bk__cf_pick_put(F);
    if (F->has != has) F->has = has; /* in concurrent mode: unwritten */
    if (F->has_u64 != has_u64) F->has_u64 = has_u64;
    if (F->put != put) F->put = put;
}

BK_HIDDEN bk_status bk__cf_chain_push(bk_cuckoo *F, cf_table *T)
{
    cf_vec *v = F->vec;
    uint32_t n = F->ntables;
    if (n >= BK_CUCKOO_MAX_TABLES) return BK_EFULL;
    if (!v || n == v->cap) {
        uint32_t cap = v ? v->cap * 2 : 2; /* 2: a 32-byte vector, most filters keep one table */
        if (cap > BK_CUCKOO_MAX_TABLES) cap = BK_CUCKOO_MAX_TABLES;
        cf_vec *nv = bk__calloc(F->alloc, 1, sizeof *nv + cap * sizeof(cf_table *));
        if (!nv) return BK_ENOMEM;
        nv->cap = cap;
        nv->retired = v;
        for (uint32_t i = 0; i < n; i++) nv->t[i] = v->t[i];
        __atomic_store_n(&F->vec, nv, __ATOMIC_RELEASE);
        v = nv;
    }
    v->t[n] = T;
    __atomic_store_n(&F->ntables, n + 1, __ATOMIC_RELEASE);
    bk__cf_update_solo(F);
    return BK_OK;
}

BK_HIDDEN bk_status bk__cf_grow(bk_cuckoo *F)
{
    if (F->expansion == 0 || F->ntables >= BK_CUCKOO_MAX_TABLES) return BK_EFULL;
    const cf_table *last = F->vec->t[F->ntables - 1];
    uint32_t shift = last->shift + F->exp_shift;
    uint64_t cap;
    if (bk__mul_overflow(last->capacity, F->expansion, &cap)) return BK_EFULL;
    cf_table *T;
    bk_status s = bk__cf_table_new(F->alloc, last->buckets >> last->shift, shift, F->bucket_bits, cap, true, &T);
    if (s == BK_ETOOBIG) return BK_EFULL;
    if (s != BK_OK) return s;
    if ((s = bk__cf_chain_push(F, T)) != BK_OK) bk__cf_table_free(F->alloc, T);
    return s;
}

BK_HIDDEN bool bk__cf_put_anywhere(bk_cuckoo *F, uint32_t fp, uint64_t h)
{
    for (uint32_t t = F->ntables; t-- > 0;) {
        cf_table *T = F->vec->t[t];
        uint64_t i1 = bk__range64(h, T->buckets);
        if (try_put(F, T, i1, fp) || try_put(F, T, alt_t(T, i1, fp), fp)) {
            ST(&T->items, LD(&T->items) + 1);
            return true;
        }
    }
    return false;
}
