/* Cuckoo filter: geometry and sizing, tables and filters (create, clone, free), whole-filter calls and
 * statistics. */
#include <math.h>
#include "filters/cuckoo/cuckoo_impl.h"


/* bk_cuckoo_new with the default load: extra slots per square root of the capacity, and the fewest slots */
#define CF_SLACK 4.0
#define CF_MIN_SLOTS 128.0

/* The load b-slot buckets reliably reach. Fingerprints under 7 bits reach less: a bucket's alternates
 * are only 2^f - 1 buckets apart, so eviction walks stay among few buckets (measured with 4 slots at
 * 400,000 and 10M slots: f = 4 fills to 0.71-0.89, f = 5 to 0.82-0.93, f = 6 to 0.93-0.95). */
static double default_load(uint32_t b, uint32_t f)
{
    if (f == 4) return 0.6;
    if (f == 5) return 0.75;
    if (f == 6) return 0.88;
    switch (b) {
    case 1: return 0.45; /* with 8-bit fingerprints, large b = 1 tables fill far less: see cuckoo.h */
    case 2: return 0.84;
    case 3: return 0.90;
    case 4: return 0.95;
    case 5: case 6: case 7: return 0.96;
    default: return 0.97;
    }
}

BK_HIDDEN uint64_t bk__cf_table_bytes(uint64_t buckets, uint32_t bucket_bits)
{
    uint64_t bits;
    if (buckets == 0 || buckets > (UINT64_C(1) << 32) || bk__mul_overflow(buckets, bucket_bits, &bits)) return 0;
    if (bits > BK_MAX_FILTER_BYTES * 8) return 0;
    uint64_t words = (bits + 63) / 64 + 1;
    uint64_t bytes = (words * 8 + 63) / 64 * 64;
    return bytes > BK_MAX_FILTER_BYTES ? 0 : bytes;
}

static uint64_t table_capacity(uint64_t buckets, uint32_t b, uint32_t f)
{
    double c = floor((double)buckets * b * default_load(b, f));
    return c < 1 ? 1 : (uint64_t)c;
}


double bk_cuckoo_fpr_bound(uint32_t bucket_size, uint32_t fingerprint_bits)
{
    if (!valid_b(bucket_size) || !valid_f(fingerprint_bits)) return NAN;
    double q = 1.0 / (ldexp(1.0, (int)fingerprint_bits) - 1);
    return -expm1(2.0 * bucket_size * log1p(-q));
}

double bk_cuckoo_bits_per_key(uint32_t fingerprint_bits, double alpha)
{
    if (!valid_f(fingerprint_bits) || !(alpha > 0 && alpha <= 1)) return NAN;
    return fingerprint_bits / alpha;
}

BK_HIDDEN double bk__cf_table_fpr(uint32_t b, uint32_t f, uint64_t items, uint64_t slots)
{
    double alpha = slots ? (double)items / (double)slots : 0;
    if (alpha > 1) alpha = 1;
    double q = 1.0 / (ldexp(1.0, (int)f) - 1);
    return -expm1(2.0 * b * alpha * log1p(-q));
}

BK_HIDDEN void bk__cf_table_free(const bk_allocator *a, cf_table *T)
{
    if (!T || T->in_filter) return; /* the first table goes with the filter's block */
    if (T->owns_words) bk__free_lines(a, T->words, T->words_plain);
    bk__free(a, T->packed ? (void *)T->words : (void *)T); /* a packed block starts with its array */
}

/*
 * A table's block: [exact array, when packed][record][`extra` bytes]. Small arrays (CF_PACK_MAX) are
 * packed when words are wanted; a large array, or none yet (borrowed later), is not. The record is
 * returned, zeroed but for words and the flags; *extra_at points at the extra bytes.
 */
static bk_status table_block(const bk_allocator *a, uint64_t buckets, uint32_t bucket_bits, bool alloc_words,
                             size_t extra, cf_table **out, void **extra_at)
{
    uint64_t bytes = bk__cf_table_bytes(buckets, bucket_bits);
    if (bytes == 0 || bytes > SIZE_MAX / 2) return BK_ETOOBIG;
    uint64_t exact = cf_exact_bytes(buckets, bucket_bits);
    bool packed = alloc_words && exact <= CF_PACK_MAX;
    size_t pre = packed ? (size_t)exact : 0;
    uint8_t *block = bk__calloc(a, 1, pre + sizeof(cf_table) + extra);
    if (!block) return BK_ENOMEM;
    cf_table *T = (cf_table *)(void *)(block + pre);
    if (packed) {
        T->words = (uint64_t *)(void *)block;
        T->packed = true;
    } else if (alloc_words) {
        T->words = bk__calloc_lines(a, (size_t)bytes, &T->words_plain);
        if (!T->words) {
            bk__free(a, block);
            return BK_ENOMEM;
        }
        T->owns_words = true;
    }
    T->buckets = buckets;
    *out = T;
    if (extra_at) *extra_at = T + 1;
    return BK_OK;
}

BK_HIDDEN bk_status bk__cf_table_new(const bk_allocator *a, uint64_t base, uint32_t shift, uint32_t bucket_bits,
                                    uint64_t capacity, bool alloc_words, cf_table **out)
{
    if (shift >= 64 || (base << shift) >> shift != base) return BK_ETOOBIG;
    cf_table *T;
    bk_status s = table_block(a, base << shift, bucket_bits, alloc_words, 0, &T, NULL);
    if (s != BK_OK) return s;
    T->shift = shift;
    T->capacity = capacity;
    *out = T;
    return BK_OK;
}

/* ---- the semi-sorted buckets' code tables (see cuckoo_impl.h) ---- */

BK_HIDDEN uint16_t bk__cf_semi_nibs[4096];
BK_HIDDEN uint16_t bk__cf_semi_rank[4][16][16];
static pthread_once_t semi_once = PTHREAD_ONCE_INIT;

static void semi_fill(void)
{
    /* seqs[k][v]: non-decreasing sequences of length k over the nibbles v..15 */
    uint32_t seqs[4][17];
    for (int v = 0; v <= 16; v++) seqs[0][v] = 1;
    for (int k = 1; k < 4; k++) {
        seqs[k][16] = 0;
        for (int v = 15; v >= 0; v--) seqs[k][v] = seqs[k][v + 1] + seqs[k - 1][v];
    }
    /* rank[j][a][c]: sequences whose nibble j lies in a..c-1 (the remaining 3 - j free from it on),
     * i.e. those placed before any sequence with n_{j-1} = a and n_j = c */
    for (int j = 0; j < 4; j++)
        for (int a = 0; a < 16; a++)
            for (int c = 0; c < 16; c++) {
                uint32_t r = 0;
                for (int v = a; v < c; v++) r += seqs[3 - j][v];
                bk__cf_semi_rank[j][a][c] = (uint16_t)r;
            }
    for (int i = 0; i < 4096; i++) bk__cf_semi_nibs[i] = 0xffff;
    uint32_t code = 0;
    for (uint32_t n0 = 0; n0 < 16; n0++)
        for (uint32_t n1 = n0; n1 < 16; n1++)
            for (uint32_t n2 = n1; n2 < 16; n2++)
                for (uint32_t n3 = n2; n3 < 16; n3++)
                    bk__cf_semi_nibs[code++] = (uint16_t)(n0 | n1 << 4 | n2 << 8 | n3 << 12);
}

BK_HIDDEN void bk__cf_semi_init(void) { pthread_once(&semi_once, semi_fill); }

/* ---- create ---- */

static bk_status resolve(const bk_cuckoo_options *opts, cf_params *p)
{
    bk_cuckoo_options o;
    if (bk__options_read(&o, sizeof o, opts) != BK_OK) return BK_EINVAL;
    p->b = o.bucket_size ? o.bucket_size : BK_CUCKOO_DEFAULT_BUCKET_SIZE;
    p->f = o.fingerprint_bits;
    p->max_kicks = o.max_kicks ? o.max_kicks : BK_CUCKOO_DEFAULT_MAX_KICKS;
    p->seed = o.seed;
    p->concurrent = o.concurrent;
    p->semi = o.semi_sorted;
    p->allocator = o.allocator;
    if (!valid_b(p->b) || (p->f && !valid_f(p->f)) || (p->semi && !valid_semi(p->b, p->f ? p->f : 16)) || p->max_kicks > BK_CUCKOO_MAX_KICKS ||
        o.expansion > BK_CUCKOO_MAX_EXPANSION)
        return BK_EINVAL;
    p->expansion = 0;
    if (o.expansion) /* rounded up to a power of two: see "Buckets in a chain" */
        for (p->expansion = 1; p->expansion < o.expansion;) p->expansion <<= 1;
    return BK_OK;
}


BK_HIDDEN void bk__cf_init_struct(bk_cuckoo *F, const cf_params *p, double fpr_target)
{
    F->b = p->b;
    F->f = p->f;
    F->max_kicks = (uint16_t)p->max_kicks;
    F->expansion = p->expansion;
    F->exp_shift = p->expansion ? (uint32_t)__builtin_ctz(p->expansion) : 0;
    F->seed = p->seed;
    F->u64_fold = bk__hash_u64_fold(bk__hash_u64_flip(p->seed));
    F->fpr_target = fpr_target;
    F->fp_range = (uint32_t)((UINT64_C(1) << p->f) - 1);
    F->f_recip = 65536 / p->f + 1;
    F->semi = p->semi;
    F->bucket_bits = bucket_bits_of(p->b, p->f, p->semi);
    if (p->semi) {
        bk__cf_semi_init();
        F->semi_low = (UINT32_C(1) << (p->f - 4)) - 1;
    }
    /* Groups: the whole bucket when one unaligned 8-byte load always holds it (read_plain), else the
     * most lanes that one load always holds. A group of L lanes starts at a bit whose offset within its
     * byte is a multiple of d = gcd(b f, L f, 8), so at most 8 - d (0 when d = 8); it fits when
     * L f + that offset <= 64. Semi-sorted buckets (4 f - 4 <= 60 bits at a multiple of 4) always fit,
     * and are read as one decoded group of 4 lanes. */
    uint32_t L = p->b;
    while (!p->semi) {
        uint32_t d = 8;
        while ((p->b * p->f) % d || (L * p->f) % d) d >>= 1;
        if (L * p->f + (8 - d) % 8 <= 64) break;
        L = L * p->f > 64 ? 64 / p->f : L - 1; /* L = 1 always fits: f <= 32 */
    }
    F->group_lanes = L;
    F->groups = (p->b + F->group_lanes - 1) / F->group_lanes;
    F->group_bits = F->group_lanes * p->f;
    uint32_t last_lanes = p->b - (F->groups - 1) * F->group_lanes;
    uint64_t last_lo = 0;
    for (uint32_t l = 0; l < F->group_lanes; l++) F->lane_lo |= UINT64_C(1) << (l * p->f);
    for (uint32_t l = 0; l < last_lanes; l++) last_lo |= UINT64_C(1) << (l * p->f);
    F->lane_hi = F->lane_lo << (p->f - 1);
    F->last_hi = last_lo << (p->f - 1);
    F->rng = bk__remix(p->seed ^ UINT64_C(0x6a09e667f3bcc909)) | 1;
}

BK_HIDDEN bk_status bk__cf_filter_new(const cf_params *p, double fpr_target, uint64_t buckets, uint64_t capacity,
                                     bool alloc_words, bk_cuckoo **out)
{
    const bk_allocator *al = bk__allocator(p->allocator);
    cf_table *T;
    void *at;
    bk_status s = table_block(al, buckets, bucket_bits_of(p->b, p->f, p->semi), alloc_words,
                              sizeof(bk_cuckoo) + sizeof(cf_vec) + CF_VEC0 * sizeof(cf_table *), &T, &at);
    if (s != BK_OK) return s;
    T->in_filter = true;
    T->capacity = capacity;
    bk_cuckoo *F = at;
    bk__cf_init_struct(F, p, fpr_target);
    F->alloc = al;
    cf_vec *v = vec0_of(F);
    v->cap = CF_VEC0;
    v->t[0] = T;
    F->vec = v;
    F->ntables = 1;
    if (p->concurrent && bk__cf_set_concurrent(F, true) != BK_OK) {
        bk_cuckoo_free(F);
        return BK_ENOMEM;
    }
    bk__cf_update_solo(F);
    *out = F;
    return BK_OK;
}

void bk_cuckoo_free(bk_cuckoo *F)
{
    if (!F) return;
    cf_vec *v = F->vec;
    for (uint32_t i = 1; i < F->ntables; i++) bk__cf_table_free(F->alloc, v->t[i]);
    while (v) {
        cf_vec *r = v->retired;
        if (v != vec0_of(F)) bk__free(F->alloc, v);
        v = r;
    }
    if (F->stripes) {
        pthread_mutex_destroy(&cf_conc_of(F)->lock);
        bk__free(F->alloc, cf_conc_of(F));
    }
    cf_table *T = cf_first(F);
    const bk_allocator *a = F->alloc;
    if (T->owns_words) bk__free_lines(a, T->words, T->words_plain);
    bk__free(a, T->packed ? (void *)T->words : (void *)T);
}

static bk_status create(uint64_t buckets, uint64_t capacity, const cf_params *p, double fpr_target,
                        bk_cuckoo **out)
{
    if (bk__cf_table_bytes(buckets, bucket_bits_of(p->b, p->f, p->semi)) == 0) return BK_ETOOBIG;
    return bk__cf_filter_new(p, fpr_target, buckets, capacity, true, out);
}

bk_status bk_cuckoo_new(uint64_t capacity, double p, const bk_cuckoo_options *opts, bk_cuckoo **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    cf_params prm;
    bk_status s = resolve(opts, &prm);
    if (s != BK_OK || capacity == 0) return BK_EINVAL;
    bk_cuckoo_options o;
    (void)bk__options_read(&o, sizeof o, opts); /* resolve() accepted it */
    if (prm.f) {
        if (!(p == 0 || (p > 0 && p < 1))) return BK_EINVAL;
        if (p == 0) p = bk_cuckoo_fpr_bound(prm.b, prm.f);
    } else {
        if (!(p > 0 && p < 1)) return BK_EINVAL;
        /* The smallest fingerprint that reaches p: the fewest bits per key, since the load a bucket
         * size reaches does not depend on f. (4 slots beat 2 or 8 at every p: b = 2 needs one bit less
         * but fills only 84%, b = 8 one bit more for 97%.) */
        uint32_t lo = prm.semi ? 5 : BK_CUCKOO_MIN_FINGERPRINT_BITS, hi = prm.semi ? 16 : BK_CUCKOO_MAX_FINGERPRINT_BITS;
        for (uint32_t f = lo; f <= hi && !prm.f; f++)
            if (bk_cuckoo_fpr_bound(prm.b, f) <= p) prm.f = f;
        if (!prm.f) return BK_EINVAL;
    }
    bool explicit_load = o.load_factor != 0;
    double load = explicit_load ? o.load_factor : default_load(prm.b, prm.f);
    if (!(load > 0 && load <= 1)) return BK_EINVAL;
    /* The default load is what large tables reach; a small table also needs room for the spread of
     * its keys over its few buckets (the number landing on any subset of buckets varies by about the
     * square root of the keys): CF_SLACK sqrt(capacity) slots more, and at least CF_MIN_SLOTS, because
     * in a table of m buckets about one key in m has i1 = i2 (one bucket only), and b + 1 of those on
     * one bucket cannot be stored. See bk_cuckoo_new in cuckoo.h for the measured effect. */
    double slots = (double)capacity / load;
    if (!explicit_load) {
        slots += CF_SLACK * sqrt((double)capacity);
        if (slots < CF_MIN_SLOTS) slots = CF_MIN_SLOTS;
    }
    double nb = ceil(slots / prm.b);
    if (nb > (double)(BK_MAX_FILTER_BYTES * 8)) return BK_ETOOBIG;
    return create((uint64_t)nb, capacity, &prm, p, out);
}

bk_status bk_cuckoo_new_buckets(uint64_t buckets, const bk_cuckoo_options *opts, bk_cuckoo **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    cf_params prm;
    bk_status s = resolve(opts, &prm);
    if (s != BK_OK || buckets == 0) return BK_EINVAL;
    if (!prm.f) prm.f = BK_CUCKOO_DEFAULT_FINGERPRINT_BITS;
    return create(buckets, table_capacity(buckets, prm.b, prm.f), &prm, bk_cuckoo_fpr_bound(prm.b, prm.f), out);
}

bk_status bk_cuckoo_clone(const bk_cuckoo *F, bk_cuckoo **out)
{
    if (!F || !out) return BK_EINVAL;
    *out = NULL;
    cf_params prm = { F->b, F->f, F->max_kicks, F->expansion, F->seed, F->stripes != NULL, F->semi, F->alloc };
    bk_cuckoo *C;
    if (F->stripes) pthread_mutex_lock(&cf_conc_of(F)->lock);
    const cf_table *T0 = F->vec->t[0];
    bk_status s = bk__cf_filter_new(&prm, F->fpr_target, T0->buckets, T0->capacity, true, &C);
    if (s != BK_OK) {
        if (F->stripes) pthread_mutex_unlock(&cf_conc_of(F)->lock);
        return s;
    }
    uint32_t n = F->ntables;
    for (uint32_t i = 0; i < n && s == BK_OK; i++) {
        const cf_table *T = F->vec->t[i];
        cf_table *U = cf_first(C);
        if (i > 0 && (s = bk__cf_table_new(C->alloc, T->buckets >> T->shift, T->shift, F->bucket_bits, T->capacity,
                                           true, &U)) != BK_OK)
            break;
        /* U's array is T's or shorter (packed: exact); the words past the buckets are zero in both */
        for (uint64_t k = 0, nw = cf_nwords(C, U); k < nw; k++) U->words[k] = LD(&T->words[k]);
        U->items = LD(&T->items);
        for (int k = 0; k < CF_STASH; k++) U->stash[k] = LD(&T->stash[k]);
        if (i > 0 && (s = bk__cf_chain_push(C, U)) != BK_OK) bk__cf_table_free(C->alloc, U);
    }
    for (int i = 0; i < CTR_N; i++) C->ctr[i] = LD(&F->ctr[i]);
    C->rng = F->rng;
    bk__cf_update_solo(C); /* the first table's stash was copied after its paths were chosen */
    if (F->stripes) pthread_mutex_unlock(&cf_conc_of(F)->lock);
    if (s != BK_OK) {
        bk_cuckoo_free(C);
        return s;
    }
    *out = C;
    return BK_OK;
}

/* ---- whole filter ---- */

void bk_cuckoo_clear(bk_cuckoo *F)
{
    if (!F) return;
    wlock(F);
    for (uint32_t t = 0; t < F->ntables; t++) {
        cf_table *T = F->vec->t[t];
        for (uint64_t k = 0, nw = cf_nwords(F, T); k < nw; k++) ST(&T->words[k], 0);
        ST(&T->items, 0);
        for (int k = 0; k < CF_STASH; k++) set_stash(F, T, k, 0);
    }
    for (int i = 0; i < CTR_N; i++) ST(&F->ctr[i], 0);
    wunlock(F);
}

void bk_cuckoo_get_info(const bk_cuckoo *F, bk_cuckoo_info *out)
{
    memset(out, 0, sizeof *out);
    uint32_t n = ntables_acq(F);
    const cf_vec *v = vec_acq(F);
    for (uint32_t t = 0; t < n; t++) {
        const cf_table *T = v->t[t];
        uint64_t items = LD(&T->items);
        out->capacity += T->capacity;
        out->items += items;
        out->buckets += T->buckets;
        out->memory_bytes += cf_nwords(F, T) * 8;
        out->victims += stash_used(T) != 0;
        out->fpr_now += bk__cf_table_fpr(F->b, F->f, items, T->buckets * F->b);
        out->fpr_full += bk__cf_table_fpr(F->b, F->f, 1, 1);
        if (t == n - 1) out->full = table_full(T);
    }
    out->first_buckets = v->t[0]->buckets;
    out->slots = out->buckets * F->b;
    out->inserted = LD(&F->ctr[CTR_INSERTED]);
    out->deleted = LD(&F->ctr[CTR_DELETED]);
    out->kicks = LD(&F->ctr[CTR_KICKS]);
    out->tables = n;
    out->bucket_size = F->b;
    out->fingerprint_bits = F->f;
    out->max_kicks = F->max_kicks;
    out->expansion = F->expansion;
    out->load_factor = out->slots ? (double)out->items / (double)out->slots : 0;
    out->fpr_target = F->fpr_target;
    out->concurrent = F->stripes != NULL;
    out->seed = F->seed;
}

void bk_cuckoo_stats(const bk_cuckoo *F, bk_stats *out)
{
    bk_cuckoo_info in;
    bk_cuckoo_get_info(F, &in);
    memset(out, 0, sizeof *out);
    out->type = BK_TYPE_CUCKOO;
    out->k = in.fingerprint_bits;
    out->capacity = in.capacity;
    out->count = in.items;
    out->bits = in.slots;
    out->memory_bytes = in.memory_bytes;
    out->bits_per_key = (double)in.memory_bytes * 8.0 / (double)(in.items ? in.items : 1);
    out->fill_ratio = in.load_factor;
    out->est_cardinality = (double)in.items;
    out->fpr_target = in.fpr_target;
    out->fpr_now = in.fpr_now;
    out->saturated = in.full || in.items > in.capacity;
    out->subfilters = in.tables;
    out->seed = in.seed;
}

uint64_t bk_cuckoo_items(const bk_cuckoo *F)
{
    uint32_t n = ntables_acq(F);
    const cf_vec *v = vec_acq(F);
    uint64_t c = 0;
    for (uint32_t t = 0; t < n; t++) c += LD(&v->t[t]->items);
    return c;
}
uint64_t bk_cuckoo_seed(const bk_cuckoo *F) { return F->seed; }
uint64_t bk_cuckoo_kick_state(const bk_cuckoo *F) { return F->rng; }
bk_status bk_cuckoo_set_kick_state(bk_cuckoo *F, uint64_t state)
{
    if (!F || state == 0) return BK_EINVAL;
    F->rng = state;
    return BK_OK;
}
uint32_t bk_cuckoo_tables(const bk_cuckoo *F) { return ntables_acq(F); }
uint64_t bk_cuckoo_table_buckets(const bk_cuckoo *F, uint32_t i)
{
    uint32_t n = ntables_acq(F);
    return i < n ? vec_acq(F)->t[i]->buckets : 0;
}
