/* Scalable Bloom filter body format (docs/FORMAT.md): encode, decode with every sub-filter's
 * geometry checked against the chain's parameters, and the vtable. */
#include "filters/scalable_chain.h"

/* ---- serialization (body layout in docs/FORMAT.md) ----
 * offset 0  u64 capacity0, f64 p, f64 r, u64 max_bytes, u32 growth, u32 nfilters, u32 kind  (44 bytes)
 * growth: 0 = non-scaling, 1 .. 16 = scaling with that growth; kind: KIND_CLASSIC or KIND_BLOCKED;
 * then zero padding to 64, then nfilters sub-filter bodies, each starting at a 64-byte aligned body
 * offset: classic: bloom.c's body (standard layout); blocked: u64 m, u32 k, u32 0, u64 capacity,
 * u64 count (32 bytes), zero padding to 64, the m / 8 bytes of words. Sub-filter i must have exactly
 * the geometry the parameters give for it. */

enum { KIND_CLASSIC = 0, KIND_BLOCKED = 1 };
/* kind | KIND_CARRY: the chain carries its error budget forward (scalable.c, layer_target); without
 * it (BK_SCALABLE_FIXED_SHARES) every sub-filter has its fixed share. */
#define KIND_CARRY 0x100u
/* kind | KIND_COMPACT: a compact chain (BK_SCALABLE_COMPACT): sub-filter 0 gets half the budget, and
 * is a small classic sub-filter when its geometry says so (the blocked body layout, m a multiple of
 * 64, the words being m / 8 bytes). */
#define KIND_COMPACT 0x200u

/* Counts past this are not from us (keeps the chain's sum far from overflow). */
#define MAX_LAYER_COUNT (UINT64_C(1) << 48)

static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_scalable *f = vf;
    const uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    layer *const *ls = SC_LAYERS(f);
    const uint32_t kind = (f->classic ? KIND_CLASSIC : KIND_BLOCKED) | (f->carry ? KIND_CARRY : 0) |
                          (f->compact ? KIND_COMPACT : 0);
    bk_status s;
    if ((s = bk__w_u64(w, sc_capacity0(f))) || (s = bk__w_f64(w, f->p)) || (s = bk__w_f64(w, f->r)) ||
        (s = bk__w_u64(w, sc_max_bytes(f))) || (s = bk__w_u32(w, (uint32_t)f->growth)) || (s = bk__w_u32(w, n)) ||
        (s = bk__w_u32(w, kind)) || (s = bk__w_align(w, 64)))
        return s;
    for (uint32_t i = 0; i < n; i++) {
        const layer *L = ls[i];
        if (L->wrapped) {
            s = bk__bloom_vtable.encode(sc_bf(L), w);
        } else if (!(s = bk__w_u64(w, L->m)) && !(s = bk__w_u32(w, L->k)) && !(s = bk__w_u32(w, 0)) &&
                   !(s = bk__w_u64(w, L->capacity)) && !(s = bk__w_u64(w, bk__sc_layer_count(L))) &&
                   !(s = bk__w_align(w, 64))) {
            s = bk__w_u64_array(w, L->words, (size_t)(sc_bytes(L) / 8));
        }
        if (s || (s = bk__w_align(w, 64))) return s;
    }
    return BK_OK;
}

/* A blocked or small sub-filter's body into L (blocked: a slot of the chain; small: the chain's
 * first, whose words are already in place); g is the geometry the chain's parameters give it. */
static bk_status decode_words_layer(bk_reader *r, const bk_geometry *g, bool small, bk_scalable *f, layer *L)
{
    uint64_t m, cap, count;
    uint32_t k, zero;
    bk_status s;
    if ((s = bk__r_u64(r, &m)) || (s = bk__r_u32(r, &k)) || (s = bk__r_u32(r, &zero)) || (s = bk__r_u64(r, &cap)) ||
        (s = bk__r_u64(r, &count)) || (s = bk__r_align(r, 64)))
        return s;
    if (m != g->m || k != g->k || cap != g->n || zero != 0 || count > MAX_LAYER_COUNT) return BK_ECORRUPT;
    if (m / 8 > r->len - r->off) return BK_ETRUNCATED;
    if (small) {
        bk__sc_small_layer(f, g, count);
        return (s = bk__r_take_into(r, L->words, (size_t)(m / 8))) != BK_OK ? s : bk__r_align(r, 64);
    }
    const uint8_t *data = NULL;
    if (r->borrow && (s = bk__r_take(r, (size_t)(m / 8), &data))) return s;
    if ((s = bk__sc_blocked_layer(r->alloc, g, r->borrow ? (uint64_t *)(uintptr_t)data : NULL, count, L))) return s;
    /* copying: straight from the body into the layer (a pulled body never sits in memory whole) */
    if ((!r->borrow && (s = bk__r_take_into(r, L->words, (size_t)(m / 8))) != BK_OK) ||
        (s = bk__r_align(r, 64)) != BK_OK) {
        if (L->owns_words) bk__free_lines(f->alloc, L->words, L->words_plain);
        L->owns_words = 0;
    }
    return s;
}

static bk_status v_decode(bk_reader *r, void **out)
{
    uint64_t cap0, max_bytes;
    double p, rr;
    uint32_t growth, n, kind;
    bk_status s;
    *out = NULL;
    if ((s = bk__r_u64(r, &cap0)) || (s = bk__r_f64(r, &p)) || (s = bk__r_f64(r, &rr)) ||
        (s = bk__r_u64(r, &max_bytes)) || (s = bk__r_u32(r, &growth)) || (s = bk__r_u32(r, &n)) ||
        (s = bk__r_u32(r, &kind)) || (s = bk__r_align(r, 64)))
        return s;
    const bool carry = (kind & KIND_CARRY) != 0, compact = (kind & KIND_COMPACT) != 0;
    kind &= ~(KIND_CARRY | KIND_COMPACT);
    if (kind != KIND_CLASSIC && kind != KIND_BLOCKED) return BK_ECORRUPT;
    const bool classic = kind == KIND_CLASSIC;
    bk_scalable_options o = { .growth = growth ? growth : 1, .tightening = rr, .max_bytes = max_bytes, .seed = r->seed,
                              .flags = (growth ? 0 : BK_SCALABLE_NONSCALING) | (classic ? BK_SCALABLE_CLASSIC : 0) };
    if (bk__sc_check_options(cap0, p, &o) != BK_OK || max_bytes == 0 || n == 0 || n > BK_SCALABLE_MAX_FILTERS ||
        (growth == 0 && n != 1))
        return BK_ECORRUPT;
    bk_scalable *f;
    bk_geometry g;
    uint64_t b;
    bool small;
    if ((s = bk__sc_new_shell(r->alloc, cap0, p, growth, rr, max_bytes, r->seed, classic, carry, compact, &f, &g, &b,
                              &small)) != BK_OK)
        return s == BK_ENOMEM ? s : BK_ECORRUPT;
    if ((n > 1 || (classic && !small)) && (s = bk__sc_reserve(f, n)) != BK_OK) {
        bk__sc_free_shell(f);
        return s;
    }
    double spent = 0; /* the exact errors of the sub-filters decoded so far (carrying chains) */
    for (uint32_t i = 0; i < n; i++) {
        void *bf = NULL;
        layer *L = NULL;
        if (i > 0 && (bk__sc_layer_geometry(cap0, p, growth, rr, classic, carry, compact, i, spent, &g, &b, &small) != BK_OK ||
                      b > max_bytes - bk_scalable_bytes(f))) {
            s = BK_ECORRUPT;
        } else if (small) {
            s = decode_words_layer(r, &g, true, f, L = &f->first);
        } else if (!(L = bk__sc_slot(f, i, classic))) {
            s = BK_ENOMEM;
        } else if (!classic) {
            s = decode_words_layer(r, &g, false, f, L);
        } else if ((s = bk__bloom_vtable.decode(r, &bf)) == BK_OK) {
            /* the sub-filter body's capacity field, as the decoder kept it */
            if (bk__bloom_capacity_field(bf) != g.n || bk_bloom_layout_of(bf) != BK_LAYOUT_STANDARD ||
                bk_bloom_bits(bf) != g.m || bk_bloom_k(bf) != g.k || bk_bloom_count(bf) > MAX_LAYER_COUNT)
                s = BK_ECORRUPT;
            else if ((s = bk__r_align(r, 64)) == BK_OK) {
                bk__sc_wrap_layer(bf, g.n, L);
                bf = NULL;
            }
        }
        if (s != BK_OK) {
            bk_bloom_free(bf);
            if (L) bk__sc_drop_slot(f, L);
            bk_scalable_free(f);
            return s;
        }
        const double err = bk__sc_error(L);
        if (f->layers) {
            f->layers[i] = L;
            sc_errs(f->layers)[i] = err;
        }
        f->n = (uint8_t)(i + 1);
        spent += err;
    }
    *out = f;
    return BK_OK;
}

BK__VT_ADAPTERS(scalable)
BK__VT_WRITE_ADAPTERS(scalable)
static uint64_t v_count(const void *f) { return bk_scalable_count(f); }
static bk_status v_compatible(const void *a, const void *b) { return bk_scalable_compatible(a, b); }
static bk_status v_add_if_absent_hash(void *f, uint64_t h) { return bk_scalable_add_if_absent_hash(f, h); }
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n, size_t *done)
{
    return bk_scalable_add_hashes(f, h, n, done);
}
static bk_status v_merge(void *d, const void *s) { return bk_scalable_union(d, s); }

BK_HIDDEN const bk_vtable bk__scalable_vtable = {
    .type = BK_TYPE_SCALABLE,
    BK__VT_ENTRIES,
    BK__VT_WRITE_ENTRIES,
    .add_hashes = v_add_hashes,
    .merge = v_merge,
    /* no atomic insert: a shared writable mapping cannot grow; scalable files are loaded, added to and saved */
    .count = v_count,
    .compatible = v_compatible,
    .add_if_absent_hash = v_add_if_absent_hash,
};
