/* Scalable Bloom filter: a chain of sub-filters, each larger and tighter than the one before. The
 * sub-filters are blocked (1024-bit blocks of two cache lines; the default) or classic Bloom filters.
 * This file: sizing, construction, whole-filter operations, statistics and accessors; queries and
 * inserts are in scalable_ops.c, the body format in scalable_file.c. */
#include <math.h>
#include "filters/scalable_chain.h"

/* ---- sizing ---- */

static bool bad_p(double p) { return !(p > 0.0 && p < 1.0); }

bk_status bk__sc_check_options(uint64_t capacity, double p, const bk_scalable_options *o)
{
    if (capacity == 0 || bad_p(p)) return BK_EINVAL;
    if (o->growth < 1 || o->growth > BK_SCALABLE_MAX_GROWTH) return BK_EINVAL;
    if (o->flags & ~(uint32_t)(BK_SCALABLE_NONSCALING | BK_SCALABLE_CLASSIC | BK_SCALABLE_FIXED_SHARES | BK_SCALABLE_COMPACT))
        return BK_EINVAL;
    if (!(o->tightening > 0.0 && o->tightening < 1.0)) return BK_EINVAL;
    if (o->max_bytes > BK_MAX_FILTER_BYTES) return BK_EINVAL;
    return BK_OK;
}

/* The growth the chain is built with: 0 for a non-scaling filter. */
static uint32_t chain_growth(const bk_scalable_options *o)
{
    return (o->flags & BK_SCALABLE_NONSCALING) ? 0 : o->growth;
}

static uint64_t effective_max(uint64_t max_bytes) { return max_bytes ? max_bytes : BK_SCALABLE_DEFAULT_MAX_BYTES; }

/* The error sub-filter i is sized for (docs/MATH.md, "Scalable Bloom filter"). Growth 0 (non-scaling):
 * p. Budget carried forward (the default): the chain may have spent
 * T_i = p (1 - r^(i+1)) after sub-filter i, and sub-filter i gets what is left of it, T_i - spent,
 * spent being the exact errors of sub-filters 0 .. i-1 at capacity; rounding to whole blocks and an
 * integer k leaves small sub-filters far under their share, and what they leave goes to the next one.
 * Fixed shares (BK_SCALABLE_FIXED_SHARES): p_i = p (1 - r) r^i. A compact chain (BK_SCALABLE_COMPACT)
 * gives sub-filter 0 half the budget, as RedisBloom does: T_i = p (1 - r^i / 2), fixed shares
 * p_0 = p / 2, p_i = p (1 - r) r^(i-1) / 2; both sum to p as well. (The general form is
 * T_i = p (1 - (1 - a) r^i), a the share of sub-filter 0: 1 - r by default, 1/2 compact.) */
static double layer_target(double p, uint32_t growth, double r, bool carry, bool compact, uint32_t i, double spent)
{
    if (growth == 0) return p;
    if (compact) {
        if (!carry) return i == 0 ? p * 0.5 : p * 0.5 * (1.0 - r) * pow(r, (double)i - 1.0);
        return p * (1.0 - 0.5 * pow(r, (double)i)) - spent;
    }
    if (!carry) return p * (1.0 - r) * pow(r, (double)i);
    return p * (1.0 - pow(r, (double)i + 1.0)) - spent;
}

double bk__sc_layer_error(bool classic, const bk_geometry *g)
{
    return classic ? bk_bloom_fpr_exact(g->m, g->n, g->k) : bk__blocked1024_fpr(g->m, g->n, g->k);
}

double bk__sc_error(const layer *L)
{
    return sc_classic_probes(L) ? bk_bloom_fpr_exact(L->m, L->capacity, L->k) : bk__blocked1024_fpr(L->m, L->capacity, L->k);
}

double bk__sc_true_error(const layer *L)
{
    return sc_classic_probes(L) ? bk_bloom_fpr_exact(L->m, L->capacity, L->k)
                                : bk__blocked1024_fpr_exact(L->m, L->capacity, L->k);
}

double bk__sc_spent(const bk_scalable *f, uint32_t i)
{
    layer **ls = __atomic_load_n(&f->layers, __ATOMIC_ACQUIRE);
    if (!ls) return i == 0 ? 0.0 : bk__sc_error(&f->first); /* no array: i <= 1 */
    const double *errs = sc_errs(ls);
    double spent = 0;
    for (uint32_t j = 0; j < i; j++) spent += errs[j];
    return spent;
}

/* The small classic sub-filter 0 of a compact chain: the classic sizing for its target with m
 * rounded up to whole words (every bit of the words used; the FPR only drops), when that takes at
 * most BK_SCALABLE_SMALL_BYTES. */
static bool small_geometry(bk_geometry *g)
{
    uint64_t m = (g->m + 63) & ~UINT64_C(63);
    if (m / 8 > BK_SCALABLE_SMALL_BYTES) return false;
    g->m = m;
    g->fpr = bk_bloom_fpr_exact(m, g->n, g->k);
    g->bits_per_key = (double)m / (double)g->n;
    return true;
}

/* capacity_i = capacity0 * growth^i at the error layer_target gives; growth 0 (non-scaling): only
 * i = 0, sized for (capacity0, p); classic or blocked sizing, or a small classic sub-filter 0 of a
 * compact chain (*small). spent: the exact errors of sub-filters 0 .. i-1 (bk__sc_layer_error), used
 * by carrying chains. BK_ETOOBIG when out of range. */
bk_status bk__sc_layer_geometry(uint64_t capacity0, double p, uint32_t growth, double r, bool classic, bool carry,
                                bool compact, uint32_t i, double spent, bk_geometry *g, uint64_t *bytes, bool *small)
{
    if (small) *small = false;
    if (i >= BK_SCALABLE_MAX_FILTERS || (growth == 0 && i > 0)) return BK_ETOOBIG;
    uint64_t cap = capacity0;
    for (uint32_t j = 0; j < i; j++)
        if (bk__mul_overflow(cap, growth, &cap)) return BK_ETOOBIG;
    double err = layer_target(p, growth, r, carry, compact, i, spent);
    if (!(err > 0.0)) return BK_ETOOBIG; /* underflow: tighter than a double can say */
    bk_status s;
    bool sm = false;
    if (compact && i == 0 && (s = bk_bloom_size(cap, err, g)) == BK_OK && small_geometry(g)) {
        sm = true;
    } else {
        s = classic ? bk_bloom_size(cap, err, g) : bk__blocked1024_size(cap, err, g);
        if (s == BK_EINVAL) return BK_ETOOBIG;
        if (s != BK_OK) return s;
    }
    uint64_t b = sm ? g->m / 8 : bk__bits_to_bytes64(g->m);
    if (b == 0 || g->m > SC_MAX_BITS) return BK_ETOOBIG;
    if (bytes) *bytes = b;
    if (small) *small = sm;
    return BK_OK;
}

/* Geometry of sub-filter i of a new chain, walking the chain from sub-filter 0; *classic_probes: it
 * is a classic or small sub-filter (else blocked). */
static bk_status new_chain_layer(uint64_t capacity0, double p, uint32_t growth, double r, bool classic, bool carry,
                                 bool compact, uint32_t i, bk_geometry *g, bool *classic_probes)
{
    double spent = 0;
    for (uint32_t j = 0;; j++) {
        bool small;
        bk_status s = bk__sc_layer_geometry(capacity0, p, growth, r, classic, carry, compact, j, spent, g, NULL, &small);
        if (s != BK_OK) return s;
        if (j == i) {
            *classic_probes = classic || small;
            return BK_OK;
        }
        spent += bk__sc_layer_error(classic || small, g);
    }
}

bk_scalable_options bk_scalable_default_options(void)
{
    bk_scalable_options o = BK_SCALABLE_OPTIONS_INIT;
    o.growth = BK_SCALABLE_DEFAULT_GROWTH;
    o.tightening = BK_SCALABLE_DEFAULT_TIGHTENING;
    return o;
}

/* opts NULL, or any field left 0, means that field's default: a zeroed struct is the defaults. */
static bk_status resolve_options(const bk_scalable_options *opts, bk_scalable_options *o)
{
    bk_status s = bk__options_read(o, sizeof *o, opts);
    if (s != BK_OK) return s;
    bk_scalable_options d = bk_scalable_default_options();
    if (o->growth == 0) o->growth = d.growth;
    if (o->tightening == 0.0) o->tightening = d.tightening;
    return BK_OK;
}

bk_status bk_scalable_layer_size(uint64_t capacity, double p, const bk_scalable_options *opts, uint32_t i,
                                 bk_geometry *out)
{
    if (!out) return BK_EINVAL;
    bk_scalable_options o;
    bk_status s = resolve_options(opts, &o);
    if (s == BK_OK) s = bk__sc_check_options(capacity, p, &o);
    if (s != BK_OK) return s;
    if (i >= BK_SCALABLE_MAX_FILTERS) return BK_EINVAL;
    bool classic_probes;
    s = new_chain_layer(capacity, p, chain_growth(&o), o.tightening, (o.flags & BK_SCALABLE_CLASSIC) != 0,
                        (o.flags & BK_SCALABLE_FIXED_SHARES) == 0, (o.flags & BK_SCALABLE_COMPACT) != 0, i, out,
                        &classic_probes);
    /* a blocked sub-filter: the FPR with the exact in-block term (the sizing's is up to 4.6% under it) */
    if (s == BK_OK && !classic_probes) out->fpr = bk__blocked1024_fpr_exact(out->m, out->n, out->k);
    return s;
}

bk_status bk_scalable_plan(uint64_t capacity, double p, const bk_scalable_options *opts, uint64_t n,
                           uint32_t *filters, uint64_t *bytes)
{
    bk_scalable_options o;
    bk_status s = resolve_options(opts, &o);
    if (s == BK_OK) s = bk__sc_check_options(capacity, p, &o);
    if (s != BK_OK) return s;
    uint64_t total = 0, held = 0, limit = effective_max(o.max_bytes);
    uint32_t i = 0;
    double spent = 0;
    do {
        bk_geometry g;
        uint64_t b;
        if (chain_growth(&o) == 0 && i == 1) return BK_EFULL;
        bool small;
        if ((s = bk__sc_layer_geometry(capacity, p, chain_growth(&o), o.tightening, (o.flags & BK_SCALABLE_CLASSIC) != 0,
                                       (o.flags & BK_SCALABLE_FIXED_SHARES) == 0, (o.flags & BK_SCALABLE_COMPACT) != 0, i,
                                       spent, &g, &b, &small)))
            return s;
        spent += bk__sc_layer_error((o.flags & BK_SCALABLE_CLASSIC) != 0 || small, &g);
        total += b;
        if (total > limit) return BK_ETOOBIG;
        held = held + g.n < held ? UINT64_MAX : held + g.n;
        i++;
    } while (held < n);
    if (filters) *filters = i;
    if (bytes) *bytes = total;
    return BK_OK;
}

/* ---- construction ---- */

layer *bk__sc_slot(bk_scalable *f, uint32_t i, bool wrapped)
{
    if (i == 0 && !wrapped) return &f->first;
    if (!wrapped) return bk__calloc(f->alloc, 1, sizeof(layer));
    wrapped_layer *w = bk__calloc(f->alloc, 1, sizeof *w);
    return w ? &w->l : NULL;
}

void bk__sc_drop_slot(bk_scalable *f, layer *L)
{
    if (L != &f->first) bk__free(f->alloc, L);
}

void bk__sc_free_layer(bk_scalable *f, layer *L)
{
    if (!L) return;
    if (L->wrapped) bk_bloom_free(((wrapped_layer *)L)->bf);
    if (L->owns_words) bk__free_lines(f->alloc, L->words, L->words_plain);
    L->owns_words = 0;
    bk__sc_drop_slot(f, L);
}

bk_status bk__sc_blocked_layer(const bk_allocator *a, const bk_geometry *g, uint64_t *words, uint64_t count, layer *L)
{
    uint64_t bytes = g->m / 8;
    if (g->m == 0 || g->m % 1024 || g->m > SC_MAX_BITS || bytes > BK_MAX_FILTER_BYTES || bytes > SIZE_MAX / 2)
        return BK_ETOOBIG;
    memset(L, 0, sizeof *L);
    if (!words) {
        bool plain;
        if (!(words = bk__calloc_lines(a, (size_t)bytes, &plain))) return BK_ENOMEM;
        L->owns_words = 1;
        L->words_plain = plain;
    }
    L->words = words;
    L->m = g->m;
    L->k = g->k;
    L->capacity = g->n;
    L->fill = count;
    return BK_OK;
}

void bk__sc_wrap_layer(bk_bloom *bf, uint64_t capacity, layer *L)
{
    size_t len;
    memset(L, 0, sizeof *L);
    ((wrapped_layer *)L)->bf = bf;
    L->wrapped = 1;
    L->words = (uint64_t *)(uintptr_t)bk_bloom_data(bf, &len);
    L->m = bk_bloom_bits(bf);
    L->k = bk_bloom_k(bf);
    L->capacity = capacity;
    L->fill = bk_bloom_count(bf);
}

void bk__sc_small_layer(bk_scalable *f, const bk_geometry *g, uint64_t count)
{
    layer *L = &f->first;
    memset(L, 0, sizeof *L);
    L->small = 1;
    L->words = sc_small_words(f);
    L->m = g->m;
    L->k = g->k;
    L->capacity = g->n;
    L->fill = count;
    memset(L->words, 0, (size_t)(g->m / 8));
}

bk_status bk__sc_add_layer(bk_scalable *f, uint32_t i, uint64_t bytes_now, double spent, layer **out)
{
    bk_geometry g;
    uint64_t b;
    bool small;
    bk_status s = bk__sc_layer_geometry(sc_capacity0(f), f->p, f->growth, f->r, f->classic, f->carry, f->compact, i, spent,
                                        &g, &b, &small);
    if (s != BK_OK) return s;
    if (b > sc_max_bytes(f) || bytes_now > sc_max_bytes(f) - b) return BK_ETOOBIG;
    if (small) { /* sub-filter 0 of a compact chain: its room was made with the chain */
        bk__sc_small_layer(f, &g, 0);
        if (f->layers) sc_errs(f->layers)[0] = bk__sc_error(&f->first);
        *out = &f->first;
        return BK_OK;
    }
    bool wrapped = f->classic;
    layer *L;
    if ((i > 0 || wrapped) && (s = bk__sc_reserve(f, i + 1)) != BK_OK) return s;
    if (!(L = bk__sc_slot(f, i, wrapped))) return BK_ENOMEM;
    if (!wrapped) {
        s = bk__sc_blocked_layer(f->alloc, &g, NULL, 0, L);
    } else {
        bk_bloom_options bo = { .allocator = f->alloc, .layout = BK_LAYOUT_STANDARD, .seed = f->seed };
        bk_bloom *bf;
        if ((s = bk_bloom_new_mk(g.m, g.k, g.n, &bo, &bf)) == BK_OK) bk__sc_wrap_layer(bf, g.n, L);
    }
    if (s != BK_OK) {
        bk__sc_drop_slot(f, L);
        return s;
    }
    if (f->layers) {
        f->layers[i] = L;
        sc_errs(f->layers)[i] = bk__sc_error(L);
    }
    *out = L;
    return BK_OK;
}

bk_scalable *bk__sc_alloc_shell(const bk_allocator *a, uint64_t capacity, double p, uint32_t growth, double r,
                                uint64_t max_bytes, uint64_t seed, bool classic, bool carry, bool compact,
                                uint64_t small_bytes)
{
    const bk_allocator *al = bk__allocator(a);
    bk_scalable *f = bk__calloc(al, 1, sizeof *f + (size_t)small_bytes);
    if (!f) return NULL;
    f->alloc = al;
    f->first.capacity = capacity;
    f->p = p;
    f->growth = growth & 31;
    f->r = r;
    f->max_bytes_m1 = effective_max(max_bytes) - 1;
    f->seed = seed;
    f->classic = classic;
    f->carry = carry;
    f->compact = compact;
    f->simd = (uint64_t)bk__simd_resolve(BK_SIMD_AUTO) & 3;
    return f;
}

bk_status bk__sc_new_shell(const bk_allocator *a, uint64_t capacity, double p, uint32_t growth, double r,
                           uint64_t max_bytes, uint64_t seed, bool classic, bool carry, bool compact,
                           bk_scalable **out, bk_geometry *g0, uint64_t *b0, bool *small0)
{
    bk_status s = bk__sc_layer_geometry(capacity, p, growth, r, classic, carry, compact, 0, 0.0, g0, b0, small0);
    if (s != BK_OK) return s;
    if (*b0 > effective_max(max_bytes)) return BK_ETOOBIG;
    *out = bk__sc_alloc_shell(a, capacity, p, growth, r, max_bytes, seed, classic, carry, compact, *small0 ? *b0 : 0);
    return *out ? BK_OK : BK_ENOMEM;
}

/* A layers array's header: [capacity][the array it replaced], just before its slots. */
#define SC_HEAD 2

void bk__sc_free_shell(bk_scalable *f)
{
    for (layer **ls = f->layers; ls;) {
        layer **prev = (layer **)ls[-1];
        bk__free(f->alloc, ls - SC_HEAD);
        ls = prev;
    }
    bk__free(f->alloc, f);
}

bk_status bk__sc_reserve(bk_scalable *f, uint32_t n)
{
    if (n > BK_SCALABLE_MAX_FILTERS) return BK_ETOOBIG;
    layer **old = f->layers;
    uint32_t cap = old ? (uint32_t)(uintptr_t)old[-2] : 0;
    if (n <= cap) return BK_OK;
    cap = n <= SC_SMALL_SLOTS ? SC_SMALL_SLOTS : BK_SCALABLE_MAX_FILTERS;
    /* SC_HEAD words, cap slots, cap errors (sc_errs) */
    layer **a = bk__calloc(f->alloc, SC_HEAD + 2 * (size_t)cap, sizeof *a);
    if (!a) return BK_ENOMEM;
    a[0] = (layer *)(uintptr_t)cap;
    a[1] = (layer *)old;
    a += SC_HEAD;
    if (old) {
        memcpy(a, old, (size_t)f->n * sizeof *a);
        memcpy(sc_errs(a), sc_errs(old), (size_t)f->n * sizeof(double));
    } else {
        a[0] = &f->first;
        if (f->n) sc_errs(a)[0] = bk__sc_error(&f->first);
    }
    /* a reader that sees the new array sees its contents; the old one stays for a reader holding it */
    __atomic_store_n(&f->layers, a, __ATOMIC_RELEASE);
    return BK_OK;
}

bk_status bk_scalable_new(uint64_t capacity, double p, const bk_scalable_options *opts, bk_scalable **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_scalable_options o;
    bk_status s = resolve_options(opts, &o);
    if (s == BK_OK) s = bk__sc_check_options(capacity, p, &o);
    if (s != BK_OK) return s;
    bk_scalable *f;
    bk_geometry g0;
    uint64_t b0;
    bool small0;
    if ((s = bk__sc_new_shell(o.allocator, capacity, p, chain_growth(&o), o.tightening, o.max_bytes, o.seed,
                              (o.flags & BK_SCALABLE_CLASSIC) != 0, (o.flags & BK_SCALABLE_FIXED_SHARES) == 0,
                              (o.flags & BK_SCALABLE_COMPACT) != 0, &f, &g0, &b0, &small0)))
        return s;
    layer *L;
    if ((s = bk__sc_add_layer(f, 0, 0, 0.0, &L))) {
        bk__sc_free_shell(f);
        return s;
    }
    f->n = 1;
    *out = f;
    return BK_OK;
}

void bk_scalable_free(bk_scalable *f)
{
    if (!f) return;
    layer *const *ls = SC_LAYERS(f);
    for (uint32_t i = 0; i < f->n; i++) bk__sc_free_layer(f, ls[i]);
    bk__sc_free_shell(f);
}

bk_status bk_scalable_clone(const bk_scalable *f, bk_scalable **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    const uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    layer *const *ls = SC_LAYERS(f);
    const bool small0 = ls[0]->small;
    bk_scalable *c = bk__sc_alloc_shell(f->alloc, sc_capacity0(f), f->p, f->growth, f->r, sc_max_bytes(f), f->seed,
                                        f->classic, f->carry, f->compact, small0 ? sc_bytes(ls[0]) : 0);
    if (!c) return BK_ENOMEM;
    if ((n > 1 || ls[0]->wrapped) && bk__sc_reserve(c, n) != BK_OK) {
        bk__sc_free_shell(c);
        return BK_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        const layer *L = ls[i];
        const uint64_t fill = __atomic_load_n(&L->fill, __ATOMIC_RELAXED);
        bk_geometry g = { .m = L->m, .k = L->k, .n = L->capacity };
        layer *C = NULL;
        bk_status s = BK_OK;
        if (L->small) {
            bk__sc_small_layer(c, &g, fill);
            C = &c->first;
            memcpy(C->words, L->words, (size_t)sc_bytes(L));
        } else if (!(C = bk__sc_slot(c, i, L->wrapped))) {
            s = BK_ENOMEM;
        } else if (!L->wrapped) {
            if ((s = bk__sc_blocked_layer(c->alloc, &g, NULL, fill, C)) == BK_OK)
                memcpy(C->words, L->words, (size_t)sc_bytes(L));
        } else {
            bk_bloom *bf;
            if ((s = bk_bloom_clone(sc_bf(L), &bf)) == BK_OK) bk__sc_wrap_layer(bf, L->capacity, C);
        }
        if (s != BK_OK) {
            if (C) bk__sc_drop_slot(c, C);
            bk_scalable_free(c);
            return s;
        }
        if (c->layers) {
            c->layers[i] = C;
            sc_errs(c->layers)[i] = bk__sc_error(C);
        }
        c->n = (uint8_t)(i + 1);
    }
    *out = c;
    return BK_OK;
}

/* ---- whole-filter operations ---- */

/* Keys in a layer by its fill: n = -(m / k) ln(1 - set / m) (a full array counts as m - 1/2 set). */
static double fill_estimate(uint64_t set, uint64_t m, uint32_t k)
{
    double x = set >= m ? (double)m - 0.5 : (double)set;
    return -((double)m / k) * log1p(-x / (double)m);
}

static uint64_t blocked_estimate(const layer *L)
{
    return (uint64_t)llround(fill_estimate(bk__popcount_words(L->words, sc_bytes(L) / 8), L->m, L->k));
}

void bk_scalable_clear(bk_scalable *f)
{
    if (!f) return;
    for (uint32_t i = 1; i < f->n; i++) {
        bk__sc_free_layer(f, f->layers[i]); /* n > 1: the chain has its array */
        f->layers[i] = NULL;
    }
    f->n = 1;
    layer *L = SC_LAYERS(f)[0];
    if (L->wrapped) bk_bloom_clear(sc_bf(L));
    else memset(L->words, 0, (size_t)sc_bytes(L));
    L->fill = 0;
}

bk_status bk_scalable_compatible(const bk_scalable *a, const bk_scalable *b)
{
    if (!a || !b) return BK_EINVAL;
    if (sc_capacity0(a) != sc_capacity0(b) || a->p != b->p || a->growth != b->growth || a->r != b->r ||
        a->seed != b->seed || a->classic != b->classic || a->carry != b->carry || a->compact != b->compact)
        return BK_EINCOMPAT;
    /* [query] on both: an atomic insert may be appending a layer meanwhile (n first, then the array) */
    const uint32_t na = __atomic_load_n(&a->n, __ATOMIC_ACQUIRE), nb = __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
    layer *const *la = SC_LAYERS(a), *const *lb = SC_LAYERS(b);
    uint32_t n = na < nb ? na : nb;
    for (uint32_t i = 0; i < n; i++) {
        const layer *x = la[i], *y = lb[i];
        if (x->wrapped != y->wrapped || x->small != y->small ||
            (x->wrapped ? bk_bloom_compatible(sc_bf(x), sc_bf(y)) != BK_OK : x->m != y->m || x->k != y->k))
            return BK_EINCOMPAT;
    }
    return BK_OK;
}

bk_status bk_scalable_union(bk_scalable *dst, const bk_scalable *src)
{
    bk_status s = bk_scalable_compatible(dst, src);
    if (s != BK_OK) return s;
    /* src is [query]: its atomic inserts may append a layer meanwhile (n first, then the array), and
     * its words are read with relaxed loads; a layer appended after this snapshot is not merged */
    const uint32_t sn = __atomic_load_n(&src->n, __ATOMIC_ACQUIRE);
    layer *const *sl = SC_LAYERS(src);
    /* grow dst first, all or nothing */
    layer *fresh[BK_SCALABLE_MAX_FILTERS] = { 0 };
    uint64_t bytes = bk_scalable_bytes(dst);
    if (sn > dst->n && (s = bk__sc_reserve(dst, sn)) != BK_OK) return s;
    double spent = bk__sc_spent(dst, dst->n);
    for (uint32_t i = dst->n; i < sn; i++) {
        s = bk__sc_add_layer(dst, i, bytes, spent, &fresh[i]);
        if (s == BK_OK) spent += sc_errs(dst->layers)[i]; /* dst has its array (reserved above) */
        const layer *y = sl[i];
        if (s == BK_OK && (fresh[i]->wrapped ? !y->wrapped || bk_bloom_compatible(sc_bf(fresh[i]), sc_bf(y)) != BK_OK
                                             : y->wrapped || fresh[i]->m != y->m || fresh[i]->k != y->k))
            s = BK_EINCOMPAT;
        if (s != BK_OK) {
            for (uint32_t j = dst->n; j <= i; j++) {
                bk__sc_free_layer(dst, fresh[j]);
                dst->layers[j] = NULL;
            }
            return s;
        }
        bytes += sc_bytes(fresh[i]);
    }
    if (sn > dst->n) __atomic_store_n(&dst->n, sn, __ATOMIC_RELEASE);
    layer *const *dl = SC_LAYERS(dst);
    for (uint32_t i = 0; i < sn; i++) {
        layer *L = dl[i];
        if (L->wrapped) {
            bk_bloom_union(sc_bf(L), sc_bf(sl[i]));
            L->fill = bk_bloom_count(sc_bf(L));
            continue;
        }
        const uint64_t *w = sl[i]->words;
        for (uint64_t j = 0; j < sc_bytes(L) / 8; j++) L->words[j] |= __atomic_load_n(&w[j], __ATOMIC_RELAXED);
        L->fill = blocked_estimate(L);
    }
    return BK_OK;
}

uint64_t bk__sc_layer_count(const layer *L)
{
    return L->wrapped ? bk_bloom_count(sc_bf(L)) : __atomic_load_n(&L->fill, __ATOMIC_RELAXED);
}

static void layer_stats(const layer *L, bk_scalable_layer *out, uint64_t *set)
{
    uint64_t s = bk__popcount_words(L->words, sc_bytes(L) / 8);
    out->capacity = L->capacity;
    out->count = bk__sc_layer_count(L);
    out->bits = L->m;
    out->memory_bytes = sc_bytes(L);
    out->k = L->k;
    out->classic = sc_classic_probes(L);
    out->error = bk__sc_true_error(L);
    out->fill_ratio = (double)s / (double)L->m;
    /* a blocked layer: the mean over its blocks of (bits set / 1024)^k (fill^k would miss the blocks'
     * uneven loads, and a formula at the key count the load this filter's keys happened to give) */
    out->fpr_now = sc_classic_probes(L) ? pow(out->fill_ratio, L->k) : bk__blocked1024_fpr_of_bits(L->words, L->m / 1024, L->k);
    if (set) *set = s;
}

bk_status bk_scalable_get_layer(const bk_scalable *f, uint32_t i, bk_scalable_layer *out)
{
    if (!f || !out || i >= __atomic_load_n(&f->n, __ATOMIC_ACQUIRE)) return BK_EINVAL;
    layer_stats(SC_LAYERS(f)[i], out, NULL);
    return BK_OK;
}

void bk_scalable_stats(const bk_scalable *f, bk_stats *out)
{
    memset(out, 0, sizeof *out);
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    double pass_none = 1.0, est = 0.0;
    uint64_t set_total = 0;
    for (uint32_t i = 0; i < n; i++) {
        bk_scalable_layer ls;
        uint64_t set;
        layer_stats(SC_LAYERS(f)[i], &ls, &set);
        out->capacity += ls.capacity;
        out->count += ls.count;
        out->bits += ls.bits;
        out->memory_bytes += ls.memory_bytes;
        set_total += set;
        pass_none *= 1.0 - ls.fpr_now;
        est += fill_estimate(set, ls.bits, ls.k);
    }
    const layer *last = SC_LAYERS(f)[n - 1];
    out->type = BK_TYPE_SCALABLE;
    out->k = last->k;
    out->bits_per_key = (double)out->memory_bytes * 8.0 / (double)(out->count ? out->count : 1);
    out->fill_ratio = (double)set_total / (double)out->bits;
    out->est_cardinality = est;
    out->fpr_target = f->p;
    out->fpr_now = 1.0 - pass_none;
    bool full = __atomic_load_n(&last->fill, __ATOMIC_RELAXED) >= last->capacity;
    bool can_grow = false;
    if (f->growth != 0 && n < BK_SCALABLE_MAX_FILTERS) {
        bk_geometry g;
        uint64_t b;
        can_grow = bk__sc_layer_geometry(sc_capacity0(f), f->p, f->growth, f->r, f->classic, f->carry, f->compact, n,
                                         bk__sc_spent(f, n), &g, &b, NULL) == BK_OK &&
                   b <= sc_max_bytes(f) - bk_scalable_bytes(f);
    }
    out->saturated = full && !can_grow;
    out->subfilters = n;
    out->seed = f->seed;
}

uint64_t bk_scalable_count(const bk_scalable *f)
{
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    uint64_t c = 0;
    for (uint32_t i = 0; i < n; i++) c += bk__sc_layer_count(SC_LAYERS(f)[i]);
    return c;
}

uint64_t bk_scalable_capacity(const bk_scalable *f)
{
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    uint64_t c = 0;
    for (uint32_t i = 0; i < n; i++) c += SC_LAYERS(f)[i]->capacity;
    return c;
}

uint32_t bk_scalable_filters(const bk_scalable *f) { return __atomic_load_n(&f->n, __ATOMIC_ACQUIRE); }
uint64_t bk_scalable_bytes(const bk_scalable *f)
{
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    uint64_t b = 0;
    for (uint32_t i = 0; i < n; i++) b += sc_bytes(SC_LAYERS(f)[i]);
    return b;
}

/* The classic filter's object size is private to bloom.c; 128 bytes is an upper bound of it, and 64
 * bytes one of a separate array's alignment slack. Sub-filter 0's struct is part of the chain's (a
 * small one's words too), a later one's is separate (a wrapped one's with its bk_bloom pointer). */
uint64_t bk_scalable_memory_usage(const bk_scalable *f)
{
    const uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    layer *const *ls = SC_LAYERS(f);
    uint64_t b = sizeof *f;
    for (layer **a = __atomic_load_n(&f->layers, __ATOMIC_ACQUIRE); a; a = (layer **)a[-1])
        b += (SC_HEAD + 2 * (uint64_t)(uintptr_t)a[-2]) * sizeof *a;
    for (uint32_t i = 0; i < n; i++) {
        const layer *L = ls[i];
        b += sc_bytes(L);
        if (L != &f->first) b += L->wrapped ? sizeof(wrapped_layer) : sizeof(layer);
        if (L->wrapped) b += 128 + 64;
        else if (!L->small) b += 64;
    }
    return b;
}

double bk_scalable_fpr_bound(const bk_scalable *f)
{
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    double b = 0;
    for (uint32_t i = 0; i < n; i++) b += bk__sc_true_error(SC_LAYERS(f)[i]);
    return b;
}

uint64_t bk_scalable_initial_capacity(const bk_scalable *f) { return sc_capacity0(f); }
double bk_scalable_error(const bk_scalable *f) { return f->p; }
uint32_t bk_scalable_growth(const bk_scalable *f) { return f->growth ? f->growth : 1; }
bool bk_scalable_nonscaling(const bk_scalable *f) { return f->growth == 0; }
bool bk_scalable_classic(const bk_scalable *f) { return f->classic; }
bool bk_scalable_compact(const bk_scalable *f) { return f->compact; }
double bk_scalable_tightening(const bk_scalable *f) { return f->r; }
uint64_t bk_scalable_max_bytes(const bk_scalable *f) { return sc_max_bytes(f); }
uint64_t bk_scalable_seed(const bk_scalable *f) { return f->seed; }

bk_status bk_scalable_set_max_bytes(bk_scalable *f, uint64_t max_bytes)
{
    if (!f) return BK_EINVAL;
    max_bytes = effective_max(max_bytes);
    if (max_bytes > BK_MAX_FILTER_BYTES || max_bytes < bk_scalable_bytes(f)) return BK_EINVAL;
    f->max_bytes_m1 = max_bytes - 1;
    return BK_OK;
}


/* A compact chain for 100 keys at 1% is this plus 144 bytes of words: one allocator block of 224. */
_Static_assert(sizeof(bk_scalable) == 80, "the chain struct is 80 bytes");
_Static_assert(sizeof(layer) == 32, "a layer is 32 bytes");
_Static_assert(sizeof(double) == sizeof(layer *), "a layers array's errors take one slot each");
