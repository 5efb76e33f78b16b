/* The scalable Bloom filter's private parts, shared by scalable.c (sizing, construction,
 * whole-filter operations, statistics), scalable_ops.c (query and insert, single and batch) and
 * scalable_file.c (body format): the layer and chain structs and the chain's construction helpers.
 * Not installed. */
#ifndef BK_SCALABLE_CHAIN_H
#define BK_SCALABLE_CHAIN_H

#include <sched.h>
#include "internal.h"
#include "blocked1024.h"
#include "simd.h"
#include "blocked_engine.h"
#include "bloomkit/blocked.h"
#include "bloomkit/bloom.h"
#include "bloomkit/scalable.h"

/* One sub-filter. Everything but `fill` (and the bits) is written once, before the layer is
 * published. A classic layer wraps a bk_bloom; a blocked layer owns (or borrows) its words itself.
 * 40 bytes: what can be derived is not stored (the block count, m / 1024; the exact error, sc_error),
 * and m, k and the flags share one word (m < 2^41: BK_MAX_FILTER_BYTES is 2^38; k <= BK_MAX_K = 64),
 * since small filters by the thousand each carry one. */
typedef struct layer {
    bk_bloom *bf;          /* classic layers; NULL in a blocked chain */
    uint64_t *words;       /* the bit array (bf's for a classic layer), 64-byte aligned */
    uint64_t m : 48;       /* bits */
    uint64_t k : 8;
    uint64_t owns_words : 1;  /* blocked: 0 when the words are borrowed from a mapping (or held in the chain) */
    uint64_t words_plain : 1; /* owned words: bk__calloc_lines gave a plain block (bk__free_lines) */
    uint64_t capacity;
    uint64_t fill;         /* keys claimed so far (atomic); the layer is full at capacity. A blocked
                            * layer's count is its fill (a union sets it to the fill-based estimate). */
} layer;

/* The largest m a layer holds (the geometry checks keep every layer under it). */
#define SC_MAX_BITS ((UINT64_C(1) << 48) - 1)

/* A blocked layer's 1024-bit blocks. */
BK_INLINE uint64_t sc_blocks(const layer *L) { return L->m >> 10; }

/* Bytes of a layer's bit array: m rounded up to whole 64-byte lines (a classic layer's bk_bloom
 * rounds so; a blocked layer's m is whole blocks). Derived, not stored: 8 bytes less in every layer. */
BK_INLINE uint64_t sc_bytes(const layer *L) { return bk__bits_to_bytes64(L->m); }

/* Blocked layers: 1024-bit blocks of 16 words (two cache lines), k probes anywhere in the block, as
 * the blocked engine defines them (core/blocked_engine.h). The in-block pattern depends on h alone,
 * so a query builds it once for the whole chain and tests each layer with one masked compare. */
BK_INLINE uint64_t *b1024_block(const layer *L, uint64_t h) { return bk__blk_block(L->words, sc_blocks(L), h, 4); }

/* Layer slots inside the chain struct: a small filter (most have one or two sub-filters) needs no
 * separate array of BK_SCALABLE_MAX_FILTERS pointers. */
#define SC_INLINE_LAYERS 2

struct bk_scalable {
    /* layers[0 .. n-1] are valid; n is stored with release after layers[n-1] is complete and loaded
     * with acquire by every reader, so a reader never sees a half-built layer. Layers are only freed
     * by [excl] calls (clear, free). `layers` is `inline_layers` until the chain needs more slots, then
     * an array of BK_SCALABLE_MAX_FILTERS (bk__sc_reserve), stored before the n that needs it is
     * published; the inline slots stay valid (and equal) for a reader still holding the old pointer.
     * Sub-filter 0 always exists (clear keeps it) and lives in the chain's own allocation (`first`):
     * one allocation fewer per chain, and the initial capacity is its capacity. */
    layer **layers;        /* atomic: read with sc_layers() where a writer may be growing the chain */
    layer *inline_layers[SC_INLINE_LAYERS]; /* inline_layers[0] is &first */
    uint8_t n;             /* <= BK_SCALABLE_MAX_FILTERS (64) */
    uint8_t grow_lock;     /* sc_grow_lock: 1 while an atomic insert appends a layer */
    uint16_t growth;       /* capacity ratio between sub-filters (<= BK_SCALABLE_MAX_GROWTH); 0: non-scaling */
    bool classic;          /* classic layers (BK_SCALABLE_CLASSIC); else blocked */
    bool carry;            /* error budget carried forward (the default); false: fixed shares */
    int8_t simd;           /* blocked chains: the query path (a bk_simd: scalar, AVX2 or AVX-512) */
    double p;
    double r;
    uint64_t max_bytes;    /* (the arrays' bytes are summed over the layers: bk_scalable_bytes) */
    uint64_t seed;
    const bk_allocator *alloc; /* everything this filter owns is allocated with it */
    layer first;           /* sub-filter 0 */
};

/* The growth lock of atomic inserts: one word instead of a pthread mutex (40 bytes more in every
 * chain, and most small chains never grow). Held only while a layer is appended, so a waiter yields
 * rather than sleeps. */
BK_INLINE void sc_grow_lock(uint8_t *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) sched_yield();
}
BK_INLINE void sc_grow_unlock(uint8_t *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

BK_INLINE layer **sc_layers(const bk_scalable *f) { return __atomic_load_n(&f->layers, __ATOMIC_ACQUIRE); }

/* Layers at least this big are assumed to miss the cache. */
#define BIG_LAYER_BYTES (UINT64_C(1) << 16)
/* Keys hashed per chunk by the bytes-key batch forms. */
#define BK_BATCH 32

/* ---- construction helpers (scalable.c) ---- */
BK_HIDDEN bk_status bk__sc_layer_geometry(uint64_t capacity0, double p, uint32_t growth, double r, bool classic, bool carry, uint32_t i, double spent, bk_geometry *g, uint64_t *bytes);
BK_HIDDEN double bk__sc_layer_error(bool classic, const bk_geometry *g);
BK_HIDDEN double bk__sc_spent(const bk_scalable *f, uint32_t i);
/* The exact FPR of a layer's geometry at its capacity (classic or 1024-bit blocked formula). */
BK_HIDDEN double bk__sc_error(const layer *L);
BK_HIDDEN bk_status bk__sc_check_options(uint64_t capacity, double p, const bk_scalable_options *o);
/* The struct for sub-filter i: &f->first for 0, else a fresh zeroed one (NULL: out of memory). Give
 * it back with bk__sc_free_layer (which frees its contents too) or bk__sc_drop_slot (before it holds
 * anything). */
BK_HIDDEN layer *bk__sc_slot(bk_scalable *f, uint32_t i);
BK_HIDDEN void bk__sc_drop_slot(bk_scalable *f, layer *L);
/* Frees what L holds, and L itself unless it is the chain's first. NULL is fine. */
BK_HIDDEN void bk__sc_free_layer(bk_scalable *f, layer *L);
/* Fill L (zeroed) as a blocked layer of geometry g; words NULL: allocate them (zeroed), else use
 * (borrow) them. */
BK_HIDDEN bk_status bk__sc_blocked_layer(const bk_allocator *a, const bk_geometry *g, uint64_t *words, uint64_t count, layer *L);
/* Fill L as a layer wrapping a classic filter (takes ownership of bf). */
BK_HIDDEN void bk__sc_wrap_layer(bk_bloom *bf, uint64_t capacity, layer *L);
/* A chain without layers (n = 0; first.capacity = capacity, the initial capacity). */
BK_HIDDEN bk_scalable *bk__sc_alloc_shell(const bk_allocator *a, uint64_t capacity, double p, uint32_t growth, double r,
                                          uint64_t max_bytes, uint64_t seed, bool classic, bool carry);
BK_HIDDEN uint64_t bk__sc_layer_count(const layer *L);
/* Make sub-filter i of f into L (a slot from bk__sc_slot). */
BK_HIDDEN bk_status bk__sc_make_layer(const bk_scalable *f, uint32_t i, uint64_t bytes_now, double spent, layer *L);
BK_HIDDEN void bk__sc_free_shell(bk_scalable *f);
/* Room for n layer slots (BK_ENOMEM if the array cannot be allocated). [under grow_lock or excl] */
BK_HIDDEN bk_status bk__sc_reserve(bk_scalable *f, uint32_t n);
/* The chain's initial capacity (sub-filter 0's). */
BK_INLINE uint64_t sc_capacity0(const bk_scalable *f) { return f->first.capacity; }

#endif
