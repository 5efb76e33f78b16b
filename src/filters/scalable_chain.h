/* The scalable Bloom filter's private parts, shared by scalable.c (sizing, construction,
 * whole-filter operations, statistics), scalable_ops.c (query and insert, single and batch) and
 * scalable_file.c (body format): the layer and chain structs and the chain's construction helpers.
 * Not installed. */
#ifndef BK_SCALABLE_CHAIN_H
#define BK_SCALABLE_CHAIN_H

#include <sched.h>
#include "filters/internal.h"
#include "core/blocked1024.h"
#include "core/simd.h"
#include "core/blocked_engine.h"
#include "bloomkit/blocked.h"
#include "bloomkit/bloom.h"
#include "bloomkit/scalable.h"

/* One sub-filter. Everything but `fill` (and the bits) is written once, before the layer is
 * published. A blocked layer owns (or borrows) its words itself; a small classic layer (sc_small: the
 * first sub-filter of a compact chain, BK_SCALABLE_COMPACT) has its words in the chain's own
 * allocation; a classic layer wraps a bk_bloom (`wrapped`: the layer is then the head of a
 * wrapped_layer, which holds the bk_bloom). 32 bytes: what can be derived is not stored here (the
 * block count, m / 1024; the sizing error, bk__sc_error, which the layers array keeps beside the slot
 * once the chain has one: sc_errs), and m, k and the flags share one word (m < 2^41:
 * BK_MAX_FILTER_BYTES is 2^38; k <= BK_MAX_K = 64), since small filters by the thousand each carry
 * one. */
typedef struct layer {
    uint64_t *words;       /* the bit array (the bk_bloom's for a wrapped layer) */
    uint64_t m : 48;       /* bits */
    uint64_t k : 8;
    uint64_t owns_words : 1;  /* blocked: 0 when the words are borrowed from a mapping */
    uint64_t words_plain : 1; /* owned words: bk__calloc_lines gave a plain block (bk__free_lines) */
    uint64_t wrapped : 1;     /* a classic layer over a bk_bloom (a wrapped_layer) */
    uint64_t small : 1;       /* a small classic layer: standard-layout probes over whole words, m a
                               * multiple of 64, words held by the chain */
    uint64_t capacity;
    uint64_t fill;         /* keys claimed so far (atomic); the layer is full at capacity. A blocked or
                            * small layer's count is its fill (a union sets it to the fill-based
                            * estimate); a wrapped layer's count is its bk_bloom's. */
} layer;

typedef struct wrapped_layer {
    layer l;
    bk_bloom *bf;
} wrapped_layer;

/* The classic filter under a wrapped layer, else NULL. */
BK_INLINE bk_bloom *sc_bf(const layer *L) { return L->wrapped ? ((const wrapped_layer *)L)->bf : NULL; }
/* Classic probes (wrapped or small) rather than 1024-bit blocks. */
BK_INLINE bool sc_classic_probes(const layer *L) { return L->wrapped || L->small; }

/* The largest m a layer holds (the geometry checks keep every layer under it). */
#define SC_MAX_BITS ((UINT64_C(1) << 48) - 1)

/* A blocked layer's 1024-bit blocks. */
BK_INLINE uint64_t sc_blocks(const layer *L) { return L->m >> 10; }

/* Bytes of a layer's bit array: m rounded up to whole 64-byte lines (a classic layer's bk_bloom
 * rounds so; a blocked layer's m is whole blocks), a small layer's m / 8 (whole words). Derived, not
 * stored. */
BK_INLINE uint64_t sc_bytes(const layer *L) { return L->small ? L->m >> 3 : bk__bits_to_bytes64(L->m); }

/* Blocked layers: 1024-bit blocks of 16 words (two cache lines), k probes anywhere in the block, as
 * the blocked engine defines them (core/blocked_engine.h). The in-block pattern depends on h alone,
 * so a query builds it once for the whole chain and tests each layer with one masked compare. */
BK_INLINE uint64_t *b1024_block(const layer *L, uint64_t h) { return bk__blk_block(L->words, sc_blocks(L), h, 4); }

/* Slots of the first layers array a chain allocates (the next one has BK_SCALABLE_MAX_FILTERS). */
#define SC_SMALL_SLOTS 8

struct bk_scalable {
    /* The sub-filters: layers[0 .. n-1] once `layers` is set; before that (a chain that never had a
     * second sub-filter, and whose first is not wrapped) sub-filter 0 is `first` and n is 1: read
     * them through SC_LAYERS, after loading n. n is stored with release after layers[n-1] is complete
     * and loaded with acquire by every reader, so a reader never sees a half-built layer. Layers are
     * only freed by [excl] calls (clear, free). `layers` is set (release) before the n that needs it
     * is published; a larger array replaces it the same way, with the same slots, and the old one
     * stays valid for a reader still holding it until the chain is freed (each array's header, just
     * before its slots: [capacity][the array it replaced]). */
    layer **layers;        /* atomic */
    uint8_t n;             /* <= BK_SCALABLE_MAX_FILTERS (64) */
    uint8_t grow_lock;     /* sc_grow_lock: 1 while an atomic insert appends a layer */
    /* written once, at creation (max_bytes also by bk_scalable_set_max_bytes, [excl]) */
    uint64_t growth : 5;   /* capacity ratio between sub-filters (<= BK_SCALABLE_MAX_GROWTH); 0: non-scaling */
    uint64_t classic : 1;  /* classic layers (BK_SCALABLE_CLASSIC); else blocked */
    uint64_t carry : 1;    /* error budget carried forward (the default); 0: fixed shares */
    uint64_t compact : 1;  /* BK_SCALABLE_COMPACT: half the budget to sub-filter 0, a small one held here */
    uint64_t simd : 2;     /* blocked chains: the query path (a bk_simd: scalar, AVX2 or AVX-512) */
    uint64_t max_bytes_m1 : 38; /* max_bytes - 1 (max_bytes is in [1, BK_MAX_FILTER_BYTES = 2^38]) */
    double p;
    double r;
    uint64_t seed;
    const bk_allocator *alloc; /* everything this filter owns is allocated with it */
    layer first;           /* sub-filter 0 unless it is wrapped; first.capacity is the initial capacity */
    /* a compact chain's small sub-filter 0: its words follow (sc_small_words) */
};

BK_INLINE uint64_t *sc_small_words(bk_scalable *f) { return (uint64_t *)(f + 1); }
BK_INLINE uint64_t sc_max_bytes(const bk_scalable *f) { return (uint64_t)f->max_bytes_m1 + 1; }

/* The layer pointers of f, for a reader that has loaded n (acquire) first: `layers`, or `one` holding
 * &f->first while the chain has no array (n is then 1). */
BK_INLINE layer *const *sc_list(const bk_scalable *f, layer **one)
{
    layer **ls = __atomic_load_n(&f->layers, __ATOMIC_ACQUIRE);
    if (BK_LIKELY(ls != NULL)) return ls;
    one[0] = (layer *)(uintptr_t)&f->first;
    return one;
}
/* The same as an expression: the one-slot array is a compound literal of the enclosing block. */
#define SC_LAYERS(f) sc_list((f), (layer *[1]){ NULL })

/* Each layer's sizing error (bk__sc_error), kept in a layers array after its slots: errs[i] is written
 * with slot i, before the n that publishes the layer, and copied when a larger array replaces it, so a
 * new sub-filter's spent budget is a sum of stored figures, not one FPR mixture per earlier layer. */
BK_INLINE double *sc_errs(layer *const *a) { return (double *)(uintptr_t)(a + (uintptr_t)a[-2]); }

/* The growth lock of atomic inserts: one word instead of a pthread mutex (40 bytes more in every
 * chain, and most small chains never grow). Held only while a layer is appended, so a waiter yields
 * rather than sleeps. */
BK_INLINE void sc_grow_lock(uint8_t *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) sched_yield();
}
BK_INLINE void sc_grow_unlock(uint8_t *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }


/* Layers at least this big are assumed to miss the cache. */
#define BIG_LAYER_BYTES (UINT64_C(1) << 16)
/* Keys hashed per chunk by the bytes-key batch forms. */
#define BK_BATCH 32

/* ---- construction helpers (scalable.c) ---- */
/* Geometry of sub-filter i (see scalable.c); *small (may be NULL): it is a small classic layer. */
BK_HIDDEN bk_status bk__sc_layer_geometry(uint64_t capacity0, double p, uint32_t growth, double r, bool classic, bool carry,
                                          bool compact, uint32_t i, double spent, bk_geometry *g, uint64_t *bytes, bool *small);
BK_HIDDEN double bk__sc_layer_error(bool classic, const bk_geometry *g);
BK_HIDDEN double bk__sc_spent(const bk_scalable *f, uint32_t i);
/* The FPR a layer's geometry was sized for at its capacity (classic formula, or the 1024-bit blocked
 * one with the mean in-block term): the sizing's figure, which carrying chains sum as spent. */
BK_HIDDEN double bk__sc_error(const layer *L);
/* The FPR sub-filter L has at capacity, on average over key sets: bk__sc_error with the exact in-block
 * term for a blocked sub-filter (1-4% above it). What the chain reports (bk_scalable_layer.error,
 * bk_scalable_fpr_bound); bk__sc_error stays the sizing's figure, from which a saved chain's later
 * geometries are derived. */
BK_HIDDEN double bk__sc_true_error(const layer *L);
BK_HIDDEN bk_status bk__sc_check_options(uint64_t capacity, double p, const bk_scalable_options *o);
/* The struct for sub-filter i: &f->first for an unwrapped sub-filter 0, else a fresh zeroed one (a
 * wrapped_layer if `wrapped`; NULL: out of memory). Give it back with bk__sc_free_layer (which frees
 * its contents too) or bk__sc_drop_slot (before it holds anything). */
BK_HIDDEN layer *bk__sc_slot(bk_scalable *f, uint32_t i, bool wrapped);
BK_HIDDEN void bk__sc_drop_slot(bk_scalable *f, layer *L);
/* Frees what L holds, and L itself unless it is the chain's first. NULL is fine. */
BK_HIDDEN void bk__sc_free_layer(bk_scalable *f, layer *L);
/* Fill L as a blocked layer of geometry g; words NULL: allocate them (zeroed), else use (borrow)
 * them. */
BK_HIDDEN bk_status bk__sc_blocked_layer(const bk_allocator *a, const bk_geometry *g, uint64_t *words, uint64_t count, layer *L);
/* Fill L (a wrapped slot) as a layer over a classic filter (takes ownership of bf). */
BK_HIDDEN void bk__sc_wrap_layer(bk_bloom *bf, uint64_t capacity, layer *L);
/* Fill f->first as the small layer of geometry g (its words: sc_small_words, zeroed). */
BK_HIDDEN void bk__sc_small_layer(bk_scalable *f, const bk_geometry *g, uint64_t count);
/* A chain without layers (n = 0; first.capacity = capacity, the initial capacity); small_bytes: room
 * for a small sub-filter 0's words after the struct (0: none). */
BK_HIDDEN bk_scalable *bk__sc_alloc_shell(const bk_allocator *a, uint64_t capacity, double p, uint32_t growth, double r,
                                          uint64_t max_bytes, uint64_t seed, bool classic, bool carry, bool compact,
                                          uint64_t small_bytes);
/* A new chain's shell for (capacity, p, ...) with room for its sub-filter 0, whose geometry is
 * *g0 (bytes *b0, *small0): bk__sc_alloc_shell after the geometry. */
BK_HIDDEN bk_status bk__sc_new_shell(const bk_allocator *a, uint64_t capacity, double p, uint32_t growth, double r,
                                     uint64_t max_bytes, uint64_t seed, bool classic, bool carry, bool compact,
                                     bk_scalable **out, bk_geometry *g0, uint64_t *b0, bool *small0);
BK_HIDDEN uint64_t bk__sc_layer_count(const layer *L);
/* Make sub-filter i of f (geometry from its parameters) and store it at slot i (not yet published:
 * the caller stores n). */
BK_HIDDEN bk_status bk__sc_add_layer(bk_scalable *f, uint32_t i, uint64_t bytes_now, double spent, layer **out);
BK_HIDDEN void bk__sc_free_shell(bk_scalable *f);
/* Room for n layer slots (BK_ENOMEM if the array cannot be allocated, BK_ETOOBIG past
 * BK_SCALABLE_MAX_FILTERS). [under grow_lock or excl] */
BK_HIDDEN bk_status bk__sc_reserve(bk_scalable *f, uint32_t n);
/* The chain's initial capacity (sub-filter 0's). */
BK_INLINE uint64_t sc_capacity0(const bk_scalable *f) { return f->first.capacity; }

#endif
