/* Cuckoo filter: the packed form of a small filter and the working views built over it (cuckoo.h,
 * "Packed small filters").
 *
 * Header (BK_CUCKOO_PACKED_HEADER = 32 bytes, little-endian):
 *   0  u64 rng          the kick generator's state (kick choices depend on it: same calls, same bytes)
 *   8  u32 kicks        evictions since creation or clear
 *  12  u32 deleted      successful removes (inserted is items + deleted, the saved form's invariant)
 *  16  u32 stash        the one stash entry in use: fp | bucket << 16, or 0
 *  20  u16 items        fingerprints held, stash included
 *  22  u16 buckets
 *  24  u16 capacity
 *  26  u16 max_kicks
 *  28  u8  b            slots per bucket
 *  29  u8  f | semi << 7
 *  30  u8  exp_shift    expansion = 2^exp_shift, 0xff: no expansion
 *  31  u8  tag          PK_MAGIC << 2 | the stash entry's index (0..3: the saved form keeps its place)
 * What is not stored is fixed by the conditions of packing: one table, seed 0, no concurrent mode, the
 * FPR target of the bits.
 *
 * A view: [table record][struct][first vector][array copy, spare zero words] in the caller's
 * bk_cuckoo_view, laid out as a filter's own block is (cf_first, vec0_of), the record marked packed and
 * in_filter so that every path treats it as the first table of a small filter.
 */
#include "filters/cuckoo/cuckoo_impl.h"

#define PK_MAGIC 0x2du
#define PK_NO_EXPANSION 0xffu
#define PK_SPARE 16 /* zero bytes after the view's array copy: bucket reads load up to 8 bytes past */

/* The view's parts: the record, the struct right after it, the first vector right after that (as in a
 * filter's block), then the array copy at the first 64-byte boundary. */
#define PK_F sizeof(cf_table)
#define PK_VEC (PK_F + sizeof(bk_cuckoo))
#define PK_WORDS_AT ((PK_VEC + sizeof(cf_vec) + CF_VEC0 * sizeof(cf_table *) + 63) / 64 * 64)
_Static_assert(sizeof(cf_table) % 8 == 0 && sizeof(bk_cuckoo) % 8 == 0, "the parts stay 8-byte aligned");
_Static_assert(PK_WORDS_AT + BK_CUCKOO_PACKED_MAX_BYTES + PK_SPARE + 64 <= BK_CUCKOO_VIEW_BYTES,
               "bk_cuckoo_view holds a view of the largest packed array");
_Static_assert(BK_CUCKOO_PACKED_MAX_BYTES <= CF_PACK_MAX, "a packed array is a small table's");

static void put16(unsigned char *p, uint32_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v) { put16(p, v); put16(p + 2, v >> 16); }
static uint32_t get16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t get32(const unsigned char *p) { return get16(p) | get16(p + 2) << 16; }

/* The stash entry in use (its index in *k), 0 when none; UINT64_MAX when more than one is. */
static uint64_t one_stash(const cf_table *T, int *k)
{
    uint64_t v = 0;
    *k = 0;
    for (int i = 0; i < CF_STASH; i++) {
        uint64_t e = LD(&T->stash[i]);
        if (!e) continue;
        if (v) return UINT64_MAX;
        v = e;
        *k = i;
    }
    return v;
}

/* bk_cuckoo_fpr_bound(b, f) for the geometries views are opened with most (b <= 16), computed once per
 * process (its two transcendental calls would be a good part of a view's cost): the double's bits in an
 * atomic word, 0 until computed (every bound is > 0). */
static uint64_t bound_bits[17][17];
static double bound_of(uint32_t b, uint32_t f)
{
    if (b > 16 || f > 16) return bk_cuckoo_fpr_bound(b, f);
    uint64_t u = __atomic_load_n(&bound_bits[b][f], __ATOMIC_RELAXED);
    double d;
    if (u == 0) {
        d = bk_cuckoo_fpr_bound(b, f);
        memcpy(&u, &d, 8);
        __atomic_store_n(&bound_bits[b][f], u, __ATOMIC_RELAXED);
    }
    memcpy(&d, &u, 8);
    return d;
}

/* Whether F fits the packed form (its exact array bytes), else 0. */
static size_t packable(const bk_cuckoo *F)
{
    if (F->stripes || ntables_acq(F) != 1 || F->seed != 0 || F->f > 16 || F->max_kicks == 0) return 0;
    const cf_table *T = cf_first(F);
    uint64_t exact = cf_exact_bytes(T->buckets, F->bucket_bits);
    uint64_t items = LD(&T->items), deleted = LD(&F->ctr[CTR_DELETED]);
    int k;
    if (T->shift != 0 || T->buckets > 0xffff || T->capacity == 0 || T->capacity > 0xffff || items > 0xffff ||
        exact > BK_CUCKOO_PACKED_MAX_BYTES || one_stash(T, &k) == UINT64_MAX ||
        LD(&F->ctr[CTR_KICKS]) > UINT32_MAX || deleted > UINT32_MAX || LD(&F->ctr[CTR_INSERTED]) != items + deleted)
        return 0;
    if (F->fpr_target != bound_of(F->b, F->f)) return 0;
    return (size_t)exact;
}

size_t bk_cuckoo_packed_size(const bk_cuckoo *F) { return F ? packable(F) : 0; }

static void write_header(const bk_cuckoo *F, bk_cuckoo_packed *hdr)
{
    const cf_table *T = cf_first(F);
    unsigned char *p = hdr->bytes;
    int k;
    uint64_t e = one_stash(T, &k); /* (packable: at most one) */
    uint64_t rng = F->rng;
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(rng >> (8 * i));
    put32(p + 8, (uint32_t)LD(&F->ctr[CTR_KICKS]));
    put32(p + 12, (uint32_t)LD(&F->ctr[CTR_DELETED]));
    put32(p + 16, e ? (uint32_t)(e & 0xffff) | (uint32_t)(e >> 32) << 16 : 0);
    put16(p + 20, (uint32_t)LD(&T->items));
    put16(p + 22, (uint32_t)T->buckets);
    put16(p + 24, (uint32_t)T->capacity);
    put16(p + 26, F->max_kicks);
    p[28] = F->b;
    p[29] = (unsigned char)(F->f | (F->semi ? 0x80 : 0));
    p[30] = F->expansion ? F->exp_shift : PK_NO_EXPANSION;
    p[31] = (unsigned char)(PK_MAGIC << 2 | (unsigned)k);
}

bk_status bk_cuckoo_pack(const bk_cuckoo *F, bk_cuckoo_packed *hdr, void *words, size_t len)
{
    if (!F || !hdr || !words) return BK_EINVAL;
    size_t exact = packable(F);
    if (exact == 0 || len != exact) return BK_EINVAL;
    const cf_table *T = cf_first(F);
    for (size_t i = 0; i < exact / 8; i++) {
        uint64_t w = LD(&T->words[i]);
        memcpy((unsigned char *)words + 8 * i, &w, 8);
    }
    write_header(F, hdr);
    return BK_OK;
}

static cf_table *view_rec(bk_cuckoo_view *view) { return (cf_table *)(void *)view->u.space; }
static bk_cuckoo *view_f(bk_cuckoo_view *view) { return (bk_cuckoo *)(void *)(view->u.space + PK_F); }
static cf_vec *view_vec(bk_cuckoo_view *view) { return (cf_vec *)(void *)(view->u.space + PK_VEC); }

/* The struct bk__cf_init_struct made for the geometry in key (0: none yet), per thread. */
static _Thread_local struct {
    uint64_t key;
    bk_cuckoo f;
} view_tmpl;

/* The array bytes of a valid header, else 0. */
static size_t header_array(const unsigned char *p)
{
    uint32_t b = p[28], f = p[29] & 0x7f, es = p[30], items = get16(p + 20), buckets = get16(p + 22);
    uint32_t cap = get16(p + 24), max_kicks = get16(p + 26), st = get32(p + 16);
    bool semi = (p[29] & 0x80) != 0;
    if ((p[31] >> 2) != PK_MAGIC || !valid_b(b) || !valid_f(f) || f > 16 || (semi && !valid_semi(b, f)) ||
        (es != PK_NO_EXPANSION && es > 15) || buckets == 0 || cap == 0 || max_kicks == 0)
        return 0;
    uint64_t exact = cf_exact_bytes(buckets, bucket_bits_of(b, f, semi));
    if (exact > BK_CUCKOO_PACKED_MAX_BYTES || items > (uint64_t)buckets * b + CF_STASH ||
        (st && ((st & 0xffff) == 0 || (st & 0xffff) > (UINT32_C(1) << f) - 1 || (st >> 16) >= buckets)))
        return 0;
    return (size_t)exact;
}

size_t bk_cuckoo_packed_array_size(const bk_cuckoo_packed *hdr) { return hdr ? header_array(hdr->bytes) : 0; }

bk_cuckoo *bk_cuckoo_view_open(bk_cuckoo_view *view, const bk_cuckoo_packed *hdr, const void *words, size_t len,
                               const bk_allocator *allocator)
{
    if (!view || !hdr || !words) return NULL;
    const unsigned char *p = hdr->bytes;
    size_t exact = header_array(p);
    if (exact == 0 || len != exact) return NULL;
    uint32_t b = p[28], f = p[29] & 0x7f, es = p[30], items = get16(p + 20), buckets = get16(p + 22);
    uint32_t cap = get16(p + 24), max_kicks = get16(p + 26), st = get32(p + 16);
    bool semi = (p[29] & 0x80) != 0;
    memset(view->u.space, 0, PK_F);                                     /* the record */
    memset(view->u.space + PK_VEC, 0, PK_WORDS_AT - PK_VEC);            /* the vector */
    bk_cuckoo *F = view_f(view);
    /* The struct as bk__cf_init_struct makes it depends on the geometry alone: this thread's last one is
     * kept (a host opens views of the same few geometries again and again; the setup's divisions and
     * loops were a third of a view's cost). */
    uint64_t key = (uint64_t)1 << 63 | b | f << 8 | (uint64_t)semi << 16 | (uint64_t)max_kicks << 17 | (uint64_t)es << 33;
    if (view_tmpl.key == key) {
        memcpy(F, &view_tmpl.f, sizeof *F);
    } else {
        cf_params prm = { b, f, max_kicks, es == PK_NO_EXPANSION ? 0 : UINT32_C(1) << es, 0, false, semi, allocator };
        memset(F, 0, sizeof *F);
        bk__cf_init_struct(F, &prm, bound_of(b, f));
        memcpy(&view_tmpl.f, F, sizeof *F);
        view_tmpl.key = key;
    }
    F->alloc = bk__allocator(allocator);
    uint64_t rng = 0;
    for (int i = 0; i < 8; i++) rng |= (uint64_t)p[i] << (8 * i);
    F->rng = rng;
    F->ctr[CTR_KICKS] = get32(p + 8);
    F->ctr[CTR_DELETED] = get32(p + 12);
    F->ctr[CTR_INSERTED] = (uint64_t)items + get32(p + 12);
    cf_table *T = view_rec(view);
    T->words = (uint64_t *)(void *)(view->u.space + PK_WORDS_AT);
    memcpy(T->words, words, len);
    memset((unsigned char *)T->words + len, 0, PK_SPARE);
    T->buckets = buckets;
    T->packed = true;
    T->in_filter = true;
    T->capacity = cap;
    T->items = items;
    if (st) T->stash[p[31] & 3] = (uint64_t)(st & 0xffff) | (uint64_t)(st >> 16) << 32;
    cf_vec *v0 = view_vec(view);
    v0->cap = CF_VEC0;
    v0->t[0] = T;
    F->vec = v0;
    F->ntables = 1;
    bk__cf_update_solo(F);
    return F;
}

/* Free what a view's filter allocated: the vectors it grew into, and (tables) the tables it appended. */
static void view_release(bk_cuckoo_view *view, bool tables)
{
    bk_cuckoo *F = view_f(view);
    if (tables)
        for (uint32_t i = 1; i < F->ntables; i++) bk__cf_table_free(F->alloc, F->vec->t[i]);
    for (cf_vec *v = F->vec; v;) {
        cf_vec *r = v->retired;
        if (v != view_vec(view)) bk__free(F->alloc, v);
        v = r;
    }
    F->vec = view_vec(view);
    F->ntables = 1;
}

/* An ordinary filter with F's state, taking over F's tables after the first (F keeps pointing at them:
 * the caller releases F's vectors without freeing those tables). */
static bk_status to_full(const bk_cuckoo *F, bk_cuckoo **out)
{
    cf_params prm = { F->b, F->f, F->max_kicks, F->expansion, F->seed, false, F->semi, F->alloc };
    const cf_table *T = cf_first(F);
    bk_cuckoo *C;
    bk_status s = bk__cf_filter_new(&prm, F->fpr_target, T->buckets, T->capacity, true, &C);
    if (s != BK_OK) return s;
    cf_table *U = cf_first(C);
    memcpy(U->words, T->words, (size_t)cf_nwords(C, U) * 8); /* U is packed too: the same exact words */
    U->items = T->items;
    for (int k = 0; k < CF_STASH; k++) U->stash[k] = T->stash[k];
    for (uint32_t i = 1; i < F->ntables; i++) {
        if ((s = bk__cf_chain_push(C, F->vec->t[i])) != BK_OK) {
            C->ntables = 1; /* the tables stay F's */
            bk_cuckoo_free(C);
            return s;
        }
    }
    for (int i = 0; i < CTR_N; i++) C->ctr[i] = F->ctr[i];
    C->rng = F->rng;
    bk__cf_update_solo(C);
    *out = C;
    return BK_OK;
}

bk_status bk_cuckoo_view_close(bk_cuckoo_view *view, bk_cuckoo_packed *hdr, void *words, size_t len,
                               bk_cuckoo **full)
{
    if (!view || !hdr || !words || !full) return BK_EINVAL;
    *full = NULL;
    bk_cuckoo *F = view_f(view);
    if (packable(F) == len) { /* (a view of one table keeps its geometry, so the same array length) */
        bk_status s = bk_cuckoo_pack(F, hdr, words, len);
        if (s == BK_OK) view_release(view, true);
        return s;
    }
    bk_status s = to_full(F, full);
    if (s != BK_OK) return s;
    view_release(view, false); /* the tables are the full filter's now */
    return BK_OK;
}

void bk_cuckoo_view_discard(bk_cuckoo_view *view)
{
    if (view) view_release(view, true);
}

bk_status bk_cuckoo_unpack(const bk_cuckoo_packed *hdr, const void *words, size_t len, const bk_allocator *allocator,
                           bk_cuckoo **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_cuckoo_view view;
    bk_cuckoo *F = bk_cuckoo_view_open(&view, hdr, words, len, allocator);
    if (!F) return BK_EINVAL;
    return to_full(F, out);
}
