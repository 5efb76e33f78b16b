/* The per-type operations table, and the table every type defines: what the registry
 * (registry/registry.c) lists, and the generic handle (filter.c) and the container format (persist/)
 * call through. Not installed. */
#ifndef BK_VTABLE_H
#define BK_VTABLE_H

#include "core/body.h"

/*
 * Per-type operations, for the generic handle (bk_filter) and the container format. One table per
 * type, defined in the type's own source file. A NULL entry means "not supported" (BK_ENOTSUP).
 * The generic layer dispatches once per call or per batch, never per probe.
 */
typedef struct bk_vtable {
    bk_type type;
    bk_status (*add_hash)(void *f, uint64_t h);
    bool (*contains_hash)(const void *f, uint64_t h);
    bk_status (*remove_hash)(void *f, uint64_t h);
    /* The batch shape of common.h: stops at the first key that fails, *done (never NULL here) = keys in. */
    bk_status (*add_hashes)(void *f, const uint64_t *h, size_t n, size_t *done);
    /* Returns the hits (the arguments are valid). */
    size_t (*contains_hashes)(const void *f, const uint64_t *h, size_t n, uint8_t *results);
    uint64_t (*seed)(const void *f);
    void (*stats)(const void *f, bk_stats *out);
    bk_status (*merge)(void *dst, const void *src); /* union */
    void (*clear)(void *f);
    /* Body encoding: the type's parameters and arrays (arrays at 64-byte aligned body offsets). */
    bk_status (*encode)(const void *f, bk_writer *w);
    bk_status (*decode)(bk_reader *r, void **out); /* seed from r->seed */
    void (*destroy)(void *f);
    /* Atomic insert (the type's *_add_hash_atomic), for shared writable mappings; NULL: the type
     * cannot be opened with BK_OPEN_WRITE_SHARED. add_hashes_atomic may be NULL (then add_hash_atomic
     * is called per key). */
    bk_status (*add_hash_atomic)(void *f, uint64_t h);
    bk_status (*add_hashes_atomic)(void *f, const uint64_t *h, size_t n, size_t *done);
    /* Replace the inserted-key count (bk_filter_set_count); NULL: the type's count is exact. */
    void (*set_count)(void *f, uint64_t n);
    /* The allocator the filter keeps (its options' or its load's): bk_filter_wrap's handle uses it. */
    const bk_allocator *(*allocator)(const void *f);
    /* What programs ask of any filter without switching on its type (bk_filter_count, _clone,
     * _compatible, _add_if_absent). clone is every type's (a deep copy in owned memory, also of a
     * mapped filter); count is the inserted-key count of bk_stats without the rest of the statistics
     * (NULL: the type's stats are cheap, the count is taken from them); compatible answers whether a
     * union would be accepted (NULL: BK_ENOTSUP); add_if_absent_hash inserts unless probably present
     * in one pass (NULL: a query then an add), BK_EEXISTS when present. */
    bk_status (*clone)(const void *f, void **out);
    uint64_t (*count)(const void *f);
    bk_status (*compatible)(const void *a, const void *b);
    bk_status (*add_if_absent_hash)(void *f, uint64_t h);
} bk_vtable;

/*
 * What every type's table has alike. BK__VT_ADAPTERS(T) defines, in the type's source, the adapters
 * of the six calls every type has under the same names (bk_T_contains_hash, bk_T_contains_hashes,
 * bk_T_seed, bk_T_stats, bk_T_clone, bk_T_free) and of the allocator every type keeps in its `alloc` field;
 * BK__VT_ENTRIES names them and the source's v_encode and v_decode in the table.
 * BK__VT_WRITE_ADAPTERS/BK__VT_WRITE_ENTRIES (below) do the same for add and clear. The rest of a
 * table (batch add, remove, merge, atomic insert, set_count) is the type's own:
 *     BK__VT_ADAPTERS(bloom)
 *     BK__VT_WRITE_ADAPTERS(bloom)
 *     BK_HIDDEN const bk_vtable bk__bloom_vtable = { .type = BK_TYPE_BLOOM, BK__VT_ENTRIES,
 *                                                    BK__VT_WRITE_ENTRIES, .add_hashes = ... };
 */
#define BK__VT_ADAPTERS(T)                                                                                       \
    static bool v_contains_hash(const void *f, uint64_t h) { return bk_##T##_contains_hash(f, h); }             \
    static size_t v_contains_hashes(const void *f, const uint64_t *h, size_t n, uint8_t *r)                       \
    {                                                                                                            \
        size_t hits = 0;                                                                                         \
        bk_##T##_contains_hashes(f, h, n, r, &hits);                                                             \
        return hits;                                                                                             \
    }                                                                                                            \
    static uint64_t v_seed(const void *f) { return bk_##T##_seed(f); }                                           \
    static void v_stats(const void *f, bk_stats *s) { bk_##T##_stats(f, s); }                                   \
    static void v_destroy(void *f) { bk_##T##_free(f); }                                                       \
    static bk_status v_clone(const void *f, void **out)                                                          \
    {                                                                                                            \
        struct bk_##T *c = NULL;                                                                                 \
        bk_status s = bk_##T##_clone(f, &c);                                                                     \
        *out = c;                                                                                                \
        return s;                                                                                                \
    }                                                                                                            \
    static const bk_allocator *v_allocator(const void *f) { return ((const struct bk_##T *)f)->alloc; }
#define BK__VT_ENTRIES                                                                                           \
    .contains_hash = v_contains_hash, .contains_hashes = v_contains_hashes, .seed = v_seed, .stats = v_stats,    \
    .encode = v_encode, .decode = v_decode, .destroy = v_destroy, .allocator = v_allocator, .clone = v_clone
/* The same for the two calls every type that takes keys after it is made has alike (all but the
 * static fuse and Ribbon filters): bk_T_add_hash and bk_T_clear. */
#define BK__VT_WRITE_ADAPTERS(T)                                                                                 \
    static bk_status v_add_hash(void *f, uint64_t h) { return bk_##T##_add_hash(f, h); }                         \
    static void v_clear(void *f) { bk_##T##_clear(f); }
#define BK__VT_WRITE_ENTRIES .add_hash = v_add_hash, .clear = v_clear

/* The batch add of a type whose add cannot fail for one key (bloom, blocked, counting, aging): every
 * key is in, or (BK_EINVAL) none. */
BK_INLINE bk_status bk__vt_all_or_none(bk_status s, size_t n, size_t *done)
{
    *done = s == BK_OK ? n : 0;
    return s;
}

/* The tables, one per type source file. */
BK_HIDDEN extern const bk_vtable bk__bloom_vtable;
/* The capacity a classic filter was sized for, as stored (scalable.c checks its sub-filters' field). */
BK_HIDDEN uint64_t bk__bloom_capacity_field(const void *bloom);
BK_HIDDEN extern const bk_vtable bk__blocked_vtable;
BK_HIDDEN extern const bk_vtable bk__counting_vtable;
BK_HIDDEN extern const bk_vtable bk__scalable_vtable;
BK_HIDDEN extern const bk_vtable bk__cuckoo_vtable;
BK_HIDDEN extern const bk_vtable bk__fuse_vtable;
BK_HIDDEN extern const bk_vtable bk__aging_vtable;
BK_HIDDEN extern const bk_vtable bk__quotient_vtable;
BK_HIDDEN extern const bk_vtable bk__ribbon_vtable;
BK_HIDDEN extern const bk_vtable bk__cms_vtable;  /* sketches: in the registry for files, not filters */
BK_HIDDEN extern const bk_vtable bk__topk_vtable;


#endif
