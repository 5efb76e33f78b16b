/* Cuckoo filter: packed f-bit fingerprints in b-slot buckets, any number of buckets, bounded kicks,
 * a victim slot per table, an optional expansion chain, and an optional concurrent mode. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include "internal.h"
#include "testing.h"
#include "bloomkit/cuckoo.h"

/*
 * Layout. Slot s = bucket * b + j of a table holds its fingerprint at bit s * f of an array of
 * little-endian 64-bit words (0 = empty slot; fingerprints are 1 .. 2^f - 1). A bucket is read as
 * "groups" of at most 64 bits whose lanes are compared at once with SWAR arithmetic: one group when
 * b * f <= 64 (every bucket of 1, 2 or 4 slots, and 8 slots of 8 bits), else groups of 64 / f lanes
 * (8, 5 or 4), the last one holding the rest. b is any size from 1 to BK_CUCKOO_MAX_BUCKET_SIZE; the
 * queries' straight-line fast paths serve one-group buckets, larger ones loop over their groups. Every
 * read of a group loads the two aligned words that can hold it, so the array carries one spare word at
 * its end.
 *
 * Alternate bucket: i2 = (H(fp) - i1) mod m, with H(fp) = (fp * golden ratio) mapped to [0, m) by
 * multiply-shift. Applying it to i2 gives back i1 for any m, so m needs no rounding; the "mod" is a
 * conditional add of m, since both terms are already in [0, m).
 *
 * Every access to the slot words, the victim words and the counters is a relaxed atomic load or
 * store. Those compile to plain moves on mainstream targets and make concurrent mode race-free in
 * the C11 sense (readers never lock); without concurrent mode they cost nothing extra.
 */

#define CF_PHI UINT64_C(0x9e3779b97f4a7c15)
#define CF_STRIPES 1024 /* reader version counters in concurrent mode (a power of two) */
#define CF_BATCH 32

typedef struct cf_table {
    uint64_t *words;
    uint64_t nwords;      /* including the spare word, rounded up to whole 64-byte lines */
    uint64_t buckets;     /* base << shift */
    uint64_t base;        /* buckets of the chain's first table */
    uint64_t mask;        /* (1 << shift) - 1 */
    uint32_t shift;       /* table t of a chain with expansion 2^s has shift s * t */
    uint64_t capacity;
    uint64_t *items;      /* fingerprints held, victim included (&items_own or inside a mapping) */
    uint64_t victim;      /* 0, or fp | bucket << 16: a fingerprint that lost its place, still found */
    uint64_t *victim_map; /* a writable mapping's copy of victim (kept equal by the writer), or NULL */
    uint64_t items_own;
    bool owns_words;
} cf_table;

/* The chain's table pointers. Grown by copying into a larger vector; the old vector is kept (linked
 * from the new one) until the filter is freed, so a lock-free reader holding it stays valid. */
typedef struct cf_vec {
    struct cf_vec *retired;
    uint32_t cap;
    cf_table *t[];
} cf_vec;

enum { CTR_INSERTED, CTR_DELETED, CTR_KICKS, CTR_N };

struct bk_cuckoo {
    uint32_t b, f, max_kicks, expansion; /* expansion: 0 or 2^exp_shift */
    uint32_t exp_shift;
    uint32_t fp_range;       /* 2^f - 1: fingerprints are 1 .. fp_range */
    uint32_t f_recip;        /* 65536 / f + 1: exact division by f of multiples of f up to 64 */
    uint32_t groups;         /* groups per bucket: 1 when b * f <= 64 */
    uint32_t group_lanes;    /* lanes of every group but the last */
    uint32_t group_bits;     /* group_lanes * f */
    uint32_t bucket_bits;    /* b * f */
    uint64_t lane_lo;        /* bit 0 of each lane of a full group */
    uint64_t lane_hi;        /* top bit of each lane */
    uint64_t lane_low;       /* the f - 1 low bits of each lane */
    uint64_t last_hi;        /* lane_hi and lane_low of the last group (equal to them when it is full) */
    uint64_t last_low;
    uint64_t seed;
    double fpr_target;
    cf_vec *vec;             /* published with release; read with acquire */
    uint32_t ntables;        /* published with release after the table it counts is complete */
    uint64_t *ctr;           /* CTR_N counters: &ctr_own[0] or inside a writable mapping */
    uint64_t ctr_own[CTR_N];
    uint64_t rng;            /* kick choices; only touched by the (single) writer */
    uint64_t *stripes;       /* concurrent mode: CF_STRIPES version counters, else NULL */
    const struct cf_table *solo; /* the only table when there is one and no concurrent mode: the
                                    queries' fast path; never written while concurrent readers run */
    pthread_mutex_t lock;    /* concurrent mode: held by every writer */
};

#define LD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
/* Slot words and victim words: acquire loads and release stores. The reader's validation (see
 * "concurrency") needs the stripe stores ordered around the slot stores without standalone fences,
 * which ThreadSanitizer does not model; on x86-64 these are the same plain moves as relaxed ones. */
#define LDA(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STR(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* ---- geometry ---- */

static bool valid_b(uint32_t b) { return b >= 1 && b <= BK_CUCKOO_MAX_BUCKET_SIZE; }
static bool valid_f(uint32_t f) { return f == 8 || f == 12 || f == 16; }

/* bk_cuckoo_new with the default load: extra slots per square root of the capacity, and the fewest slots */
#define CF_SLACK 4.0
#define CF_MIN_SLOTS 128.0

static double default_load(uint32_t b)
{
    switch (b) {
    case 1: return 0.45; /* with 8-bit fingerprints, large b = 1 tables fill far less: see cuckoo.h */
    case 2: return 0.84;
    case 3: return 0.90;
    case 4: return 0.95;
    case 5: case 6: case 7: return 0.96;
    default: return 0.97;
    }
}

/* Bytes of a table's word array for `buckets` buckets; 0 if too big. */
static uint64_t table_bytes(uint64_t buckets, uint32_t b, uint32_t f)
{
    uint64_t slots, bits;
    if (buckets == 0 || bk__mul_overflow(buckets, b, &slots) || bk__mul_overflow(slots, f, &bits)) return 0;
    if (bits > BK_MAX_FILTER_BYTES * 8) return 0;
    uint64_t words = (bits + 63) / 64 + 1;
    uint64_t bytes = (words * 8 + 63) / 64 * 64;
    return bytes > BK_MAX_FILTER_BYTES ? 0 : bytes;
}

static uint64_t table_capacity(uint64_t buckets, uint32_t b)
{
    double c = floor((double)buckets * b * default_load(b));
    return c < 1 ? 1 : (uint64_t)c;
}

double bk_cuckoo_fpr_bound(uint32_t bucket_size, uint32_t fingerprint_bits)
{
    if (!valid_b(bucket_size) || !valid_f(fingerprint_bits)) return NAN;
    double q = 1.0 / (double)((UINT32_C(1) << fingerprint_bits) - 1);
    return -expm1(2.0 * bucket_size * log1p(-q));
}

double bk_cuckoo_bits_per_key(uint32_t fingerprint_bits, double alpha)
{
    if (!valid_f(fingerprint_bits) || !(alpha > 0 && alpha <= 1)) return NAN;
    return fingerprint_bits / alpha;
}

/* FPR of one table of `slots` slots holding `items` fingerprints. */
static double table_fpr(uint32_t b, uint32_t f, uint64_t items, uint64_t slots)
{
    double alpha = slots ? (double)items / (double)slots : 0;
    if (alpha > 1) alpha = 1;
    double q = 1.0 / (double)((UINT32_C(1) << f) - 1);
    return -expm1(2.0 * b * alpha * log1p(-q));
}

/* ---- slots and buckets ---- */

/* The bits of w from bit `pos` on, at least 57 of them (every group starts at a bit that is a multiple
 * of 4 and is at most 64 bits long, so a group always fits). Plain form: one unaligned load, for
 * anything that runs with no writer alongside -- the writer itself, or any call without concurrent
 * mode. Bytes past the array come from the spare word. Little-endian hosts only (checked below). */
BK_INLINE uint64_t read_plain(const uint64_t *w, uint64_t pos)
{
    uint64_t x;
    memcpy(&x, (const uint8_t *)w + (pos >> 3), 8);
    return x >> (pos & 7);
}

/* Atomic form, for lock-free readers in concurrent mode: the two aligned words that can hold the
 * group, each an acquire load (see "concurrency"). */
BK_INLINE uint64_t read_atomic(const uint64_t *w, uint64_t pos)
{
    uint64_t k = pos >> 6;
    unsigned sh = (unsigned)(pos & 63);
    uint64_t lo = LDA(&w[k]) >> sh;
    uint64_t hi = (LDA(&w[k + 1]) << 1) << (63 - sh); /* 0 when sh == 0, without a shift by 64 */
    return lo | hi;
}

BK_INLINE uint64_t read64(const uint64_t *w, uint64_t pos, bool atomic)
{
    return atomic ? read_atomic(w, pos) : read_plain(w, pos);
}

/* Whether any lane of x1 or x2 (one group each) is zero: (x - lo) & ~x flags the lowest zero lane of
 * x exactly and never flags a lane when none is zero (a borrow only starts at a zero lane); lanes
 * above it may be flagged wrongly, which does not matter for "any". Three operations per group
 * against five for the exact form below. */
BK_INLINE bool any_zero_lane(uint64_t lo, uint64_t hi, uint64_t x1, uint64_t x2)
{
    return (((x1 - lo) & ~x1) | ((x2 - lo) & ~x2)) & hi;
}

/* Lanes of x (one group, lanes given by hi and low) equal to zero: the top bit of each such lane set,
 * nothing else. Exact: no carry crosses lanes, so it can also count matches. */
BK_INLINE uint64_t zero_lanes(uint64_t x, uint64_t low, uint64_t hi)
{
    uint64_t y = (x & low) + low;
    return ~(y | x | low) & hi;
}

BK_INLINE uint64_t group_pos(const bk_cuckoo *F, uint64_t bucket, uint32_t g)
{
    return bucket * F->bucket_bits + (uint64_t)g * F->group_bits;
}

/* Matching lanes of group g of a bucket (the last group has its own masks). */
BK_INLINE uint64_t group_match(const bk_cuckoo *F, const cf_table *T, uint64_t bucket, uint32_t g, uint64_t pat,
                               bool atomic)
{
    uint64_t x = read64(T->words, group_pos(F, bucket, g), atomic) ^ pat;
    return g + 1 < F->groups ? zero_lanes(x, F->lane_low, F->lane_hi) : zero_lanes(x, F->last_low, F->last_hi);
}

BK_INLINE bool bucket_has(const bk_cuckoo *F, const cf_table *T, uint64_t bucket, uint32_t fp, bool atomic)
{
    uint64_t pat = fp * F->lane_lo;
    uint64_t hit = 0;
    for (uint32_t g = 0; g < F->groups; g++) hit |= group_match(F, T, bucket, g, pat, atomic);
    return hit != 0;
}

BK_INLINE uint32_t bucket_count(const bk_cuckoo *F, const cf_table *T, uint64_t bucket, uint32_t fp, bool atomic)
{
    uint64_t pat = fp * F->lane_lo;
    uint32_t c = 0;
    for (uint32_t g = 0; g < F->groups; g++)
        c += (uint32_t)__builtin_popcountll(group_match(F, T, bucket, g, pat, atomic));
    return c;
}

/* The slot index (0 .. b-1) of the first lane of `bucket` equal to fp (0: an empty slot), or -1. */
static int bucket_find(const bk_cuckoo *F, const cf_table *T, uint64_t bucket, uint32_t fp)
{
    uint64_t pat = fp * F->lane_lo;
    for (uint32_t g = 0; g < F->groups; g++) {
        uint64_t z = group_match(F, T, bucket, g, pat, false);
        if (z) {
            /* the flag of lane l is bit l*f + f-1: (ctz + 1) / f = l + 1, divided by a reciprocal */
            uint32_t lane1 = ((uint32_t)__builtin_ctzll(z) + 1) * F->f_recip >> 16;
            return (int)(g * F->group_lanes + lane1) - 1;
        }
    }
    return -1;
}

static uint32_t slot_get(const bk_cuckoo *F, const cf_table *T, uint64_t bucket, uint32_t j)
{
    uint64_t pos = (bucket * F->b + j) * F->f;
    return (uint32_t)(read_plain(T->words, pos) & F->fp_range);
}

/* Write one slot. Only the writer calls this (caller's exclusion, or the writer lock), so the
 * load-modify-store of each word loses nothing; the stores are atomic so that lock-free readers
 * see either the old or the new word. */
static void slot_set(const bk_cuckoo *F, cf_table *T, uint64_t bucket, uint32_t j, uint32_t fp)
{
    uint64_t pos = (bucket * F->b + j) * F->f;
    uint64_t k = pos >> 6;
    unsigned sh = (unsigned)(pos & 63);
    uint64_t mask = (uint64_t)F->fp_range;
    uint64_t w = LD(&T->words[k]);
    STR(&T->words[k], (w & ~(mask << sh)) | ((uint64_t)fp << sh));
    if (sh + F->f > 64) {
        unsigned r = 64 - sh; /* bits that went into word k */
        w = LD(&T->words[k + 1]);
        STR(&T->words[k + 1], (w & ~(mask >> r)) | ((uint64_t)fp >> r));
    }
}

/* ---- hashing: fingerprint and the two buckets ---- */

BK_INLINE uint32_t fp_of(const bk_cuckoo *F, uint64_t h)
{
    return 1 + (uint32_t)(((uint64_t)(uint32_t)h * F->fp_range) >> 32);
}

BK_INLINE uint64_t alt_of(uint64_t buckets, uint64_t i, uint32_t fp)
{
    uint64_t hf = bk__range64((uint64_t)fp * CF_PHI, buckets);
    return hf >= i ? hf - i : hf + buckets - i;
}

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
#define CF_PHI2 UINT64_C(0xd6e8feb86659fd93)

BK_INLINE uint64_t alt_t(const cf_table *T, uint64_t i, uint32_t fp)
{
    if (BK_LIKELY(T->shift == 0)) return alt_of(T->buckets, i, fp);
    uint64_t g = ((uint64_t)fp * CF_PHI2) >> (64 - T->shift);
    return alt_of(T->base, i >> T->shift, fp) << T->shift | ((i ^ g) & T->mask);
}

/* ---- the chain ---- */

BK_INLINE uint32_t ntables_acq(const bk_cuckoo *F) { return __atomic_load_n(&F->ntables, __ATOMIC_ACQUIRE); }
BK_INLINE cf_vec *vec_acq(const bk_cuckoo *F) { return __atomic_load_n(&F->vec, __ATOMIC_ACQUIRE); }

static void table_free(cf_table *T)
{
    if (!T) return;
    if (T->owns_words) bk__free_aligned(T->words);
    bk__free(T);
}

/* A table of base << shift buckets. */
static bk_status table_new(uint64_t base, uint32_t shift, uint32_t b, uint32_t f, uint64_t capacity,
                           bool alloc_words, cf_table **out)
{
    if (shift >= 64 || (base << shift) >> shift != base) return BK_ETOOBIG;
    uint64_t buckets = base << shift;
    uint64_t bytes = table_bytes(buckets, b, f);
    if (bytes == 0 || bytes > SIZE_MAX / 2) return BK_ETOOBIG;
    cf_table *T = bk__calloc(1, sizeof *T);
    if (!T) return BK_ENOMEM;
    if (alloc_words) {
        T->words = bk__calloc_aligned((size_t)bytes);
        if (!T->words) {
            bk__free(T);
            return BK_ENOMEM;
        }
        T->owns_words = true;
    }
    T->nwords = bytes / 8;
    T->buckets = buckets;
    T->base = base;
    T->shift = shift;
    T->mask = (UINT64_C(1) << shift) - 1;
    T->capacity = capacity;
    T->items = &T->items_own;
    *out = T;
    return BK_OK;
}

static void update_solo(bk_cuckoo *F)
{
    const cf_table *s = F->ntables == 1 && !F->stripes ? F->vec->t[0] : NULL;
    if (F->solo != s) F->solo = s; /* in concurrent mode it stays NULL, unwritten */
}

/* Append a table (the writer only). The table is complete before ntables counts it (release). */
static bk_status chain_push(bk_cuckoo *F, cf_table *T)
{
    cf_vec *v = F->vec;
    uint32_t n = F->ntables;
    if (n >= BK_CUCKOO_MAX_TABLES) return BK_EFULL;
    if (!v || n == v->cap) {
        uint32_t cap = v ? v->cap * 2 : 4;
        if (cap > BK_CUCKOO_MAX_TABLES) cap = BK_CUCKOO_MAX_TABLES;
        cf_vec *nv = bk__calloc(1, sizeof *nv + cap * sizeof(cf_table *));
        if (!nv) return BK_ENOMEM;
        nv->cap = cap;
        nv->retired = v;
        for (uint32_t i = 0; i < n; i++) nv->t[i] = v->t[i];
        __atomic_store_n(&F->vec, nv, __ATOMIC_RELEASE);
        v = nv;
    }
    v->t[n] = T;
    __atomic_store_n(&F->ntables, n + 1, __ATOMIC_RELEASE);
    update_solo(F);
    return BK_OK;
}

/* ---- create ---- */

typedef struct cf_params {
    uint32_t b, f, max_kicks, expansion; /* expansion: 0 or a power of two */
    uint64_t seed;
    bool concurrent;
} cf_params;

static bk_status resolve(const bk_cuckoo_options *opts, cf_params *p)
{
    bk_cuckoo_options o = opts ? *opts : (bk_cuckoo_options){ 0 };
    p->b = o.bucket_size ? o.bucket_size : BK_CUCKOO_DEFAULT_BUCKET_SIZE;
    p->f = o.fingerprint_bits;
    p->max_kicks = o.max_kicks ? o.max_kicks : BK_CUCKOO_DEFAULT_MAX_KICKS;
    p->seed = o.seed;
    p->concurrent = o.concurrent;
    if (!valid_b(p->b) || (p->f && !valid_f(p->f)) || p->max_kicks > BK_CUCKOO_MAX_KICKS ||
        o.expansion > BK_CUCKOO_MAX_EXPANSION)
        return BK_EINVAL;
    p->expansion = 0;
    if (o.expansion) /* rounded up to a power of two: see "Buckets in a chain" */
        for (p->expansion = 1; p->expansion < o.expansion;) p->expansion <<= 1;
    return BK_OK;
}

static bk_status set_concurrent(bk_cuckoo *F, bool on)
{
    if (on && !F->stripes) {
        F->stripes = bk__calloc(CF_STRIPES, sizeof *F->stripes);
        if (!F->stripes) return BK_ENOMEM;
    } else if (!on && F->stripes) {
        bk__free(F->stripes);
        F->stripes = NULL;
    }
    if (F->vec) update_solo(F);
    return BK_OK;
}

/* The filter without tables. */
static bk_status filter_new(const cf_params *p, double fpr_target, bk_cuckoo **out)
{
    bk_cuckoo *F = bk__calloc(1, sizeof *F);
    if (!F) return BK_ENOMEM;
    /* writer sections are short: spin a little before sleeping where the C library can */
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
#if defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
    int rc = pthread_mutex_init(&F->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    if (rc != 0) {
        bk__free(F);
        return BK_ENOMEM;
    }
    F->b = p->b;
    F->f = p->f;
    F->max_kicks = p->max_kicks;
    F->expansion = p->expansion;
    F->exp_shift = p->expansion ? (uint32_t)__builtin_ctz(p->expansion) : 0;
    F->seed = p->seed;
    F->fpr_target = fpr_target;
    F->fp_range = (UINT32_C(1) << p->f) - 1;
    F->f_recip = 65536 / p->f + 1;
    F->bucket_bits = p->b * p->f;
    /* Groups of 64 / f lanes (8, 5 or 4), or the whole bucket when it fits in one: every group starts
     * at a multiple of 4 bits and spans at most 64 - 4 (f = 12) or 64 bits (f = 8, 16), which one
     * unaligned 8-byte load always holds (read_plain). */
    F->group_lanes = F->bucket_bits <= 64 ? p->b : 64 / p->f;
    F->groups = (p->b + F->group_lanes - 1) / F->group_lanes;
    F->group_bits = F->group_lanes * p->f;
    uint32_t last_lanes = p->b - (F->groups - 1) * F->group_lanes;
    uint64_t last_lo = 0;
    for (uint32_t l = 0; l < F->group_lanes; l++) F->lane_lo |= UINT64_C(1) << (l * p->f);
    for (uint32_t l = 0; l < last_lanes; l++) last_lo |= UINT64_C(1) << (l * p->f);
    F->lane_hi = F->lane_lo << (p->f - 1);
    F->lane_low = F->lane_hi - F->lane_lo;
    F->last_hi = last_lo << (p->f - 1);
    F->last_low = F->last_hi - last_lo;
    F->ctr = F->ctr_own;
    F->rng = bk__remix(p->seed ^ UINT64_C(0x6a09e667f3bcc909)) | 1;
    if (p->concurrent && set_concurrent(F, true) != BK_OK) {
        pthread_mutex_destroy(&F->lock);
        bk__free(F);
        return BK_ENOMEM;
    }
    *out = F;
    return BK_OK;
}

void bk_cuckoo_free(bk_cuckoo *F)
{
    if (!F) return;
    cf_vec *v = F->vec;
    if (v)
        for (uint32_t i = 0; i < F->ntables; i++) table_free(v->t[i]);
    while (v) {
        cf_vec *r = v->retired;
        bk__free(v);
        v = r;
    }
    bk__free(F->stripes);
    pthread_mutex_destroy(&F->lock);
    bk__free(F);
}

static bk_status create(uint64_t buckets, uint64_t capacity, const cf_params *p, double fpr_target,
                        bk_cuckoo **out)
{
    if (table_bytes(buckets, p->b, p->f) == 0) return BK_ETOOBIG;
    bk_cuckoo *F;
    bk_status s = filter_new(p, fpr_target, &F);
    if (s != BK_OK) return s;
    cf_table *T;
    if ((s = table_new(buckets, 0, p->b, p->f, capacity, true, &T)) != BK_OK) {
        bk_cuckoo_free(F);
        return s;
    }
    if ((s = chain_push(F, T)) != BK_OK) {
        table_free(T);
        bk_cuckoo_free(F);
        return s;
    }
    *out = F;
    return BK_OK;
}

bk_status bk_cuckoo_new(uint64_t capacity, double p, const bk_cuckoo_options *opts, bk_cuckoo **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    cf_params prm;
    bk_status s = resolve(opts, &prm);
    if (s != BK_OK || capacity == 0) return BK_EINVAL;
    if (prm.f) {
        if (!(p == 0 || (p > 0 && p < 1))) return BK_EINVAL;
        if (p == 0) p = bk_cuckoo_fpr_bound(prm.b, prm.f);
    } else {
        if (!(p > 0 && p < 1)) return BK_EINVAL;
        /* the smallest fingerprint that reaches p; below what 16 bits give with 4 slots, smaller
         * buckets (fewer slots compared per query) when the caller left the bucket size to us */
        static const uint32_t fs[] = { 8, 12, 16 };
        bool auto_b = !opts || opts->bucket_size == 0;
        for (; !prm.f; prm.b >>= 1) {
            for (int i = 0; i < 3 && !prm.f; i++)
                if (bk_cuckoo_fpr_bound(prm.b, fs[i]) <= p) prm.f = fs[i];
            if (prm.f) break;
            if (!auto_b || prm.b == 1) return BK_EINVAL;
        }
    }
    bool explicit_load = opts && opts->load_factor != 0;
    double load = explicit_load ? opts->load_factor : default_load(prm.b);
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
    return create(buckets, table_capacity(buckets, prm.b), &prm, bk_cuckoo_fpr_bound(prm.b, prm.f), out);
}

bk_status bk_cuckoo_set_concurrent(bk_cuckoo *F, bool on)
{
    if (!F) return BK_EINVAL;
    return set_concurrent(F, on);
}

bk_status bk_cuckoo_clone(const bk_cuckoo *F, bk_cuckoo **out)
{
    if (!F || !out) return BK_EINVAL;
    *out = NULL;
    cf_params prm = { F->b, F->f, F->max_kicks, F->expansion, F->seed, F->stripes != NULL };
    bk_cuckoo *C;
    bk_status s = filter_new(&prm, F->fpr_target, &C);
    if (s != BK_OK) return s;
    if (F->stripes) pthread_mutex_lock((pthread_mutex_t *)&F->lock);
    uint32_t n = F->ntables;
    for (uint32_t i = 0; i < n && s == BK_OK; i++) {
        const cf_table *T = F->vec->t[i];
        cf_table *U;
        if ((s = table_new(T->base, T->shift, F->b, F->f, T->capacity, true, &U)) != BK_OK) break;
        for (uint64_t k = 0; k < T->nwords; k++) U->words[k] = LD(&T->words[k]);
        U->items_own = LD(T->items);
        U->victim = LD(&T->victim);
        if ((s = chain_push(C, U)) != BK_OK) table_free(U);
    }
    for (int i = 0; i < CTR_N; i++) C->ctr_own[i] = LD(&F->ctr[i]);
    C->rng = F->rng;
    if (F->stripes) pthread_mutex_unlock((pthread_mutex_t *)&F->lock);
    if (s != BK_OK) {
        bk_cuckoo_free(C);
        return s;
    }
    *out = C;
    return BK_OK;
}

/* ---- concurrency ----
 *
 * Design: one writer at a time (F->lock), readers without locks, validated by per-stripe sequence
 * numbers (a seqlock split into CF_STRIPES stripes; bucket i belongs to stripe i mod CF_STRIPES).
 *
 * Why a single writer lock: a kick chain touches an unbounded, data-dependent sequence of buckets,
 * so striped writer locks would need lock ordering and retries along the path. On the small core
 * counts this library targets, one writer lock costs little next to the memory misses of the kicks.
 *
 * What readers need: a key is lost for a moment only while its fingerprint is "homeless" inside a
 * kick chain -- evicted from bucket i and not yet written into its other bucket i' (or the victim
 * slot). Placing a new fingerprint into a free slot, or removing one, never moves anybody else's
 * fingerprint, so those need no sequence bump. A fingerprint is only ever evicted from one of its two
 * buckets and only ever placed into the other, so the two buckets a homeless fingerprint can belong
 * to are exactly the two buckets its key's queries read. The writer therefore makes the stripes of
 * BOTH of those buckets odd before it overwrites the slot, and makes them even again (release) only
 * after the fingerprint is back in a bucket or in the victim slot.
 *
 * A reader of a key with buckets i1, i2: loads the two stripes' numbers (acquire); if either is odd
 * it waits; it reads both buckets and the victim slot; a hit is returned at once (a hit is never a
 * false negative); a miss is returned only if both numbers, loaded again, are unchanged. Ordering:
 * slot and victim words are written with release stores and read with acquire loads; the writer
 * stores the odd number before the eviction's slot store, so a reader that sees a slot after an
 * eviction also sees the odd number (or a later one) when it loads the stripe again -- that load
 * comes after the acquire loads of the slots, so it cannot be satisfied earlier; and a reader that
 * starts from the even number stored on closing sees every slot store made before it.
 * If the key's fingerprint was homeless at any moment of the read, the reader either read its old
 * slot after the eviction (then the stripe it re-reads is odd or has moved on) or found it; either
 * way a miss is not returned from that attempt. Each stripe only grows, so "unchanged" cannot be an
 * ABA coincidence in practice (2^63 writes). Hence a key whose insert completed before the query
 * began is never reported absent. Slot words are written with atomic stores, so a reader sees every word
 * either before or after a write; a 12-bit slot that spans two words may be seen half-written, which
 * can only produce a transient false positive for the key being written, never a false negative for
 * another key (their lanes do not change).
 *
 * The chain of tables grows under the writer lock: the new table is complete before the count of
 * tables is published (release), and readers load that count with acquire.
 */

BK_INLINE uint64_t *stripe_of(const bk_cuckoo *F, uint64_t bucket) { return &F->stripes[bucket & (CF_STRIPES - 1)]; }

static void seq_open(bk_cuckoo *F, uint64_t bucket)
{
    uint64_t *s = stripe_of(F, bucket);
    uint64_t v = LD(s);
    if (!(v & 1)) ST(s, v + 1); /* ordered before the slot stores that follow: they are release stores */
}

static void seq_close(bk_cuckoo *F, uint64_t bucket)
{
    uint64_t *s = stripe_of(F, bucket);
    uint64_t v = LD(s);
    if (v & 1) __atomic_store_n(s, v + 1, __ATOMIC_RELEASE);
}

BK_INLINE void wlock(bk_cuckoo *F)
{
    if (F->stripes) pthread_mutex_lock(&F->lock);
}
BK_INLINE void wunlock(bk_cuckoo *F)
{
    if (F->stripes) pthread_mutex_unlock(&F->lock);
}

/* ---- insert into one table ---- */

BK_INLINE uint64_t rng_next(bk_cuckoo *F)
{
    uint64_t x = F->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return F->rng = x;
}

/* The writer's only way to change a victim: the mapping's copy follows. */
static void set_victim(cf_table *T, uint64_t v)
{
    STR(&T->victim, v);
    if (T->victim_map) ST(T->victim_map, v);
}

static bool try_put(bk_cuckoo *F, cf_table *T, uint64_t bucket, uint32_t fp)
{
    int j = bucket_find(F, T, bucket, 0);
    if (j < 0) return false;
    slot_set(F, T, bucket, (uint32_t)j, fp);
    return true;
}

/* Start loading the second bucket while the first is examined: on large tables the two cache
 * misses then overlap instead of following each other. */
BK_INLINE void prefetch_bucket(const bk_cuckoo *F, const cf_table *T, uint64_t bucket)
{
    BK_PREFETCH_W((const uint8_t *)T->words + ((bucket * F->bucket_bits) >> 3));
}

/*
 * Random-walk eviction starting at `bucket`, carrying `cur`. When cur_is_victim, cur is T's victim,
 * which stays in the victim slot until it is written into the table. Always stores everything: if
 * the kicks run out, the fingerprint left over becomes T's victim (the caller checked it was free,
 * or is moving it).
 */
static void kick_walk(bk_cuckoo *F, cf_table *T, uint32_t cur, uint64_t bucket, bool cur_is_victim)
{
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
            seq_open(F, bucket);
            seq_open(F, alt);
        }
        slot_set(F, T, bucket, j, cur);
        if (n == 0 && cur_is_victim) set_victim(T, 0);
        if (F->stripes) {
            /* cur is in a bucket again: its protection can end, unless shared with old's */
            uint64_t sa = bucket & (CF_STRIPES - 1), sb = alt & (CF_STRIPES - 1);
            if (pa != none && (pa & (CF_STRIPES - 1)) != sa && (pa & (CF_STRIPES - 1)) != sb) seq_close(F, pa);
            if (pb != none && (pb & (CF_STRIPES - 1)) != sa && (pb & (CF_STRIPES - 1)) != sb) seq_close(F, pb);
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
    if (cur) set_victim(T, (uint64_t)cur | bucket << 16);
    if (F->stripes && pa != none) {
        seq_close(F, pa);
        seq_close(F, pb);
    }
    ST(&F->ctr[CTR_KICKS], LD(&F->ctr[CTR_KICKS]) + kicks);
}

static void table_insert(bk_cuckoo *F, cf_table *T, uint32_t fp, uint64_t i1)
{
    uint64_t i2 = alt_t(T, i1, fp);
    prefetch_bucket(F, T, i2);
    if (!try_put(F, T, i1, fp) && !try_put(F, T, i2, fp))
        kick_walk(F, T, fp, (rng_next(F) >> 63) ? i2 : i1, false);
    ST(T->items, LD(T->items) + 1);
}

/* Grow the chain by one table (writer only). */
static bk_status grow(bk_cuckoo *F)
{
    if (F->expansion == 0 || F->ntables >= BK_CUCKOO_MAX_TABLES) return BK_EFULL;
    const cf_table *last = F->vec->t[F->ntables - 1];
    uint32_t shift = last->shift + F->exp_shift;
    uint64_t cap;
    if (bk__mul_overflow(last->capacity, F->expansion, &cap)) return BK_EFULL;
    cf_table *T;
    bk_status s = table_new(last->base, shift, F->b, F->f, cap, true, &T);
    if (s == BK_ETOOBIG) return BK_EFULL;
    if (s != BK_OK) return s;
    if ((s = chain_push(F, T)) != BK_OK) table_free(T);
    return s;
}

/* Give T's victim another walk (writer only): it goes back into a bucket unless its kicks run out
 * again, and then some fingerprint (perhaps another) is the victim. */
static void victim_rewalk(bk_cuckoo *F, cf_table *T)
{
    uint64_t v = LD(&T->victim);
    if (!v) return;
    uint32_t vfp = (uint32_t)(v & 0xffff);
    uint64_t vb = v >> 16, va = alt_t(T, vb, vfp);
    if (try_put(F, T, vb, vfp) || try_put(F, T, va, vfp))
        set_victim(T, 0); /* the copy is in the table before the victim slot is emptied */
    else
        kick_walk(F, T, vfp, vb, true);
}

/* A free slot in one of the key's buckets of any table, newest first, without evicting anything. */
static bool put_anywhere(bk_cuckoo *F, uint32_t fp, uint64_t h)
{
    for (uint32_t t = F->ntables; t-- > 0;) {
        cf_table *T = F->vec->t[t];
        uint64_t i1 = bk__range64(h, T->buckets);
        if (try_put(F, T, i1, fp) || try_put(F, T, alt_t(T, i1, fp), fp)) {
            ST(T->items, LD(T->items) + 1);
            return true;
        }
    }
    return false;
}

static bk_status add_locked(bk_cuckoo *F, uint64_t h)
{
    cf_table *T = F->vec->t[F->ntables - 1];
    /* In a chain, a key whose buckets in the newest table are full takes a free slot in an older table
     * before anything is evicted (RedisBloom does the same): copies of repeated items, which fill
     * their buckets and make eviction walks fail at a low load, then do not chain table after table.
     * Exact deletes still hold: the argument in THE CUCKOO RULES does not depend on which table a
     * copy is in. */
    if (F->ntables > 1 && put_anywhere(F, fp_of(F, h), h)) {
        ST(&F->ctr[CTR_INSERTED], LD(&F->ctr[CTR_INSERTED]) + 1);
        return BK_OK;
    }
    /* Below its capacity a table does not give up after one unlucky walk: the victim walks again
     * (a fresh random walk from its bucket) before the table counts as full. */
    if (LD(&T->victim) && LD(T->items) < T->capacity) victim_rewalk(F, T);
    if (LD(&T->victim)) {
        bk_status s = grow(F);
        if (s != BK_OK) return s;
        T = F->vec->t[F->ntables - 1];
    }
    table_insert(F, T, fp_of(F, h), bk__range64(h, T->buckets));
    ST(&F->ctr[CTR_INSERTED], LD(&F->ctr[CTR_INSERTED]) + 1);
    return BK_OK;
}

/* ---- query ---- */

BK_INLINE bool victim_is(const cf_table *T, uint32_t fp, uint64_t i1, uint64_t i2, bool atomic)
{
    uint64_t v = atomic ? LDA(&T->victim) : LD(&T->victim);
    uint64_t vb = v >> 16;
    return v && (uint32_t)(v & 0xffff) == fp && (vb == i1 || vb == i2);
}

BK_INLINE bool table_has(const bk_cuckoo *F, const cf_table *T, uint32_t fp, uint64_t i1, uint64_t i2,
                         bool atomic)
{
    /* both buckets read without a branch between them: their loads overlap */
    unsigned hit = (unsigned)bucket_has(F, T, i1, fp, atomic) | (unsigned)bucket_has(F, T, i2, fp, atomic);
    return hit || victim_is(T, fp, i1, i2, atomic);
}

/* The reader side of the stripes (see "concurrency" above). */
/* Out of line: it keeps the plain query's registers free. */
__attribute__((noinline)) static bool table_has_concurrent(const bk_cuckoo *F, const cf_table *T, uint32_t fp,
                                                           uint64_t i1, uint64_t i2)
{
    const uint64_t *s1 = stripe_of(F, i1), *s2 = stripe_of(F, i2);
    for (unsigned spins = 0;; spins++) {
        uint64_t v1 = __atomic_load_n(s1, __ATOMIC_ACQUIRE), v2 = __atomic_load_n(s2, __ATOMIC_ACQUIRE);
        if (!((v1 | v2) & 1)) {
            if (table_has(F, T, fp, i1, i2, true)) return true;
            /* the slot loads were acquire loads: these loads cannot move above them */
            if (LD(s1) == v1 && LD(s2) == v2) return false;
        }
        if (spins >= 16) sched_yield(); /* the writer may be descheduled in the middle of a chain */
    }
}

/* A chain, or concurrent mode. */
__attribute__((noinline)) static bool contains_general(const bk_cuckoo *F, uint64_t h, uint32_t fp)
{
    uint32_t n = ntables_acq(F);
    const cf_vec *v = vec_acq(F);
    for (uint32_t t = 0; t < n; t++) {
        const cf_table *T = v->t[t];
        uint64_t i1 = bk__range64(h, T->buckets), i2 = alt_t(T, i1, fp);
        bool hit = BK_UNLIKELY(F->stripes != NULL) ? table_has_concurrent(F, T, fp, i1, i2)
                                                   : table_has(F, T, fp, i1, i2, false);
        if (hit) return true;
    }
    return false;
}

/* One table, buckets of one group (every geometry but b = 8 with f = 12 or 16), no concurrent mode:
 * straight-line code, both buckets' loads independent of each other. */
BK_INLINE bool solo_has(const bk_cuckoo *F, const cf_table *T, uint32_t fp, uint64_t i1, uint64_t i2)
{
    uint64_t pat = fp * F->lane_lo;
    uint64_t x1 = read_plain(T->words, i1 * F->bucket_bits) ^ pat;
    uint64_t x2 = read_plain(T->words, i2 * F->bucket_bits) ^ pat;
    if (any_zero_lane(F->lane_lo, F->lane_hi, x1, x2)) return true;
    uint64_t v = LD(&T->victim);
    return BK_UNLIKELY(v != 0) && victim_is(T, fp, i1, i2, false);
}

bool bk_cuckoo_contains_hash(const bk_cuckoo *F, uint64_t h)
{
    const cf_table *T = F->solo;
    uint32_t fp = fp_of(F, h);
    if (BK_LIKELY(T != NULL && F->groups == 1)) {
        uint64_t i1 = bk__range64(h, T->buckets);
        return solo_has(F, T, fp, i1, alt_of(T->buckets, i1, fp)); /* the first table: shift 0 */
    }
    return contains_general(F, h, fp);
}

bool bk_cuckoo_contains(const bk_cuckoo *F, const void *key, size_t len)
{
    return bk_cuckoo_contains_hash(F, bk__hash(key, len, F->seed));
}

static uint64_t table_count(const bk_cuckoo *F, const cf_table *T, uint32_t fp, uint64_t i1, uint64_t i2,
                            bool atomic)
{
    uint64_t c = bucket_count(F, T, i1, fp, atomic);
    if (i2 != i1) c += bucket_count(F, T, i2, fp, atomic);
    return c + victim_is(T, fp, i1, i2, atomic);
}

uint64_t bk_cuckoo_count_hash(const bk_cuckoo *F, uint64_t h)
{
    if (!F) return 0;
    uint32_t fp = fp_of(F, h);
    uint32_t n = ntables_acq(F);
    const cf_vec *v = vec_acq(F);
    uint64_t c = 0;
    for (uint32_t t = 0; t < n; t++) {
        const cf_table *T = v->t[t];
        uint64_t i1 = bk__range64(h, T->buckets), i2 = alt_t(T, i1, fp);
        if (!F->stripes) {
            c += table_count(F, T, fp, i1, i2, false);
            continue;
        }
        /* the same validation as contains: a count taken while a copy was homeless is retaken */
        const uint64_t *s1 = stripe_of(F, i1), *s2 = stripe_of(F, i2);
        for (unsigned spins = 0;; spins++) {
            uint64_t v1 = __atomic_load_n(s1, __ATOMIC_ACQUIRE), v2 = __atomic_load_n(s2, __ATOMIC_ACQUIRE);
            if (!((v1 | v2) & 1)) {
                uint64_t ct = table_count(F, T, fp, i1, i2, true);
                if (LD(s1) == v1 && LD(s2) == v2) {
                    c += ct;
                    break;
                }
            }
            if (spins >= 16) sched_yield();
        }
    }
    return c;
}

uint64_t bk_cuckoo_count(const bk_cuckoo *F, const void *key, size_t len)
{
    if (!F || (!key && len)) return 0;
    return bk_cuckoo_count_hash(F, bk__hash(key, len, F->seed));
}

/* ---- insert (public) ---- */

bk_status bk_cuckoo_add_hash(bk_cuckoo *F, uint64_t h)
{
    if (BK_UNLIKELY(!F)) return BK_EINVAL;
    wlock(F);
    bk_status s = add_locked(F, h);
    wunlock(F);
    return s;
}

bk_status bk_cuckoo_add(bk_cuckoo *F, const void *key, size_t len)
{
    if (BK_UNLIKELY(!F || (!key && len))) return BK_EINVAL;
    return bk_cuckoo_add_hash(F, bk__hash(key, len, F->seed));
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
    } else if (victim_is(T, fp, i1, i2, false)) {
        set_victim(T, 0);
    } else {
        return false;
    }
    ST(T->items, LD(T->items) - 1);
    /* A slot is free again: give the victim another walk, so the table can accept inserts. */
    victim_rewalk(F, T);
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

/* ---- batches ---- */

typedef enum { OP_ADD, OP_ADD_NX, OP_REMOVE } cf_op;

/* Prefetch both buckets of h: adds go to the newest table; removes and queries look at every table
 * (a chain is short; one table is the common case). */
static void prefetch_key(const bk_cuckoo *F, uint64_t h, cf_op op, bool write)
{
    uint32_t fp = fp_of(F, h);
    uint32_t n = ntables_acq(F);
    const cf_vec *v = vec_acq(F);
    for (uint32_t t = op == OP_ADD ? n - 1 : 0; t < n; t++) {
        const cf_table *T = v->t[t];
        uint64_t i1 = bk__range64(h, T->buckets), i2 = alt_t(T, i1, fp);
        const uint8_t *a = (const uint8_t *)T->words + ((i1 * F->bucket_bits) >> 3);
        const uint8_t *b = (const uint8_t *)T->words + ((i2 * F->bucket_bits) >> 3);
        if (write) {
            BK_PREFETCH_W(a);
            BK_PREFETCH_W(b);
        } else {
            BK_PREFETCH(a);
            BK_PREFETCH(b);
        }
    }
}

size_t bk_cuckoo_contains_hashes(const bk_cuckoo *F, const uint64_t *hashes, size_t n, uint8_t *results)
{
    if (!F || (!hashes && n)) return 0;
    size_t present = 0;
    for (size_t i = 0; i < n; i += CF_BATCH) {
        size_t e = i + CF_BATCH < n ? i + CF_BATCH : n;
        const cf_table *T = F->solo;
        if (T && F->groups == 1 && !LD(&T->victim)) {
            /* the common case: one table, no concurrent writers, one group per bucket, no victim:
             * place and prefetch all, then probe. Loop invariants in locals: the stores to
             * results (bytes) could alias F's fields for the compiler. */
            const uint8_t *base = (const uint8_t *)T->words;
            const uint64_t m = T->buckets, bb = F->bucket_bits, lo = F->lane_lo, hi = F->lane_hi;
            const uint32_t range = F->fp_range;
            uint64_t p1[CF_BATCH], p2[CF_BATCH], pat[CF_BATCH];
            for (size_t j = 0; j < e - i; j++) {
                uint64_t h = hashes[i + j];
                uint32_t fp = 1 + (uint32_t)(((uint64_t)(uint32_t)h * range) >> 32);
                uint64_t i1 = bk__range64(h, m);
                p1[j] = i1 * bb;
                p2[j] = alt_of(m, i1, fp) * bb;
                pat[j] = fp * lo;
                BK_PREFETCH(base + (p1[j] >> 3));
                BK_PREFETCH(base + (p2[j] >> 3));
            }
            size_t got = 0;
            for (size_t j = 0; j < e - i; j++) {
                uint64_t x1, x2;
                memcpy(&x1, base + (p1[j] >> 3), 8);
                memcpy(&x2, base + (p2[j] >> 3), 8);
                bool r = any_zero_lane(lo, hi, (x1 >> (p1[j] & 7)) ^ pat[j], (x2 >> (p2[j] & 7)) ^ pat[j]);
                if (results) results[i + j] = r;
                got += r;
            }
            present += got;
            continue;
        }
        if (T) {
            /* one table with two groups per bucket, or a victim */
            uint64_t i1[CF_BATCH], i2[CF_BATCH];
            uint32_t fp[CF_BATCH];
            for (size_t j = i; j < e; j++) {
                fp[j - i] = fp_of(F, hashes[j]);
                i1[j - i] = bk__range64(hashes[j], T->buckets);
                i2[j - i] = alt_t(T, i1[j - i], fp[j - i]);
                BK_PREFETCH((const uint8_t *)T->words + ((i1[j - i] * F->bucket_bits) >> 3));
                BK_PREFETCH((const uint8_t *)T->words + ((i2[j - i] * F->bucket_bits) >> 3));
            }
            for (size_t j = i; j < e; j++) {
                bool r = F->groups == 1 ? solo_has(F, T, fp[j - i], i1[j - i], i2[j - i])
                                        : table_has(F, T, fp[j - i], i1[j - i], i2[j - i], false);
                if (results) results[j] = r;
                present += r;
            }
            continue;
        }
        for (size_t j = i; j < e; j++) prefetch_key(F, hashes[j], OP_REMOVE, false);
        for (size_t j = i; j < e; j++) {
            bool r = bk_cuckoo_contains_hash(F, hashes[j]);
            if (results) results[j] = r;
            present += r;
        }
    }
    return present;
}

size_t bk_cuckoo_contains_many(const bk_cuckoo *F, const void *const *keys, const size_t *lens, size_t n,
                               uint8_t *results)
{
    if (!F || (n && (!keys || !lens))) return 0;
    uint64_t h[CF_BATCH];
    size_t present = 0;
    for (size_t i = 0; i < n; i += CF_BATCH) {
        size_t e = i + CF_BATCH < n ? i + CF_BATCH : n;
        for (size_t j = i; j < e; j++) h[j - i] = bk__hash(keys[j], lens[j], F->seed);
        present += bk_cuckoo_contains_hashes(F, h, e - i, results ? results + i : NULL);
    }
    return present;
}


static void fill_status(bk_status *results, size_t n, bk_status s)
{
    if (results)
        for (size_t i = 0; i < n; i++) results[i] = s;
}

/* One writer-lock hold per batch of CF_BATCH keys. */
static size_t write_hashes(bk_cuckoo *F, const uint64_t *hashes, const uint8_t *bad, size_t n, bk_status *results,
                           cf_op op)
{
    size_t ok = 0;
    for (size_t i = 0; i < n; i += CF_BATCH) {
        size_t e = i + CF_BATCH < n ? i + CF_BATCH : n;
        wlock(F);
        for (size_t j = i; j < e; j++) prefetch_key(F, hashes[j], op, true);
        for (size_t j = i; j < e; j++) {
            bk_status s;
            if (bad && bad[j]) {
                s = BK_EINVAL;
            } else if (op == OP_REMOVE) {
                s = remove_locked(F, hashes[j]);
            } else if (op == OP_ADD_NX && contains_locked(F, hashes[j])) {
                s = BK_EEXISTS;
            } else {
                s = add_locked(F, hashes[j]);
            }
            if (results) results[j] = s;
            ok += s == BK_OK;
        }
        wunlock(F);
    }
    return ok;
}

size_t bk_cuckoo_add_hashes(bk_cuckoo *F, const uint64_t *hashes, size_t n, bk_status *results)
{
    if (!F || (!hashes && n)) {
        fill_status(results, n, BK_EINVAL);
        return 0;
    }
    return write_hashes(F, hashes, NULL, n, results, OP_ADD);
}

size_t bk_cuckoo_add_if_absent_hashes(bk_cuckoo *F, const uint64_t *hashes, size_t n, bk_status *results)
{
    if (!F || (!hashes && n)) {
        fill_status(results, n, BK_EINVAL);
        return 0;
    }
    return write_hashes(F, hashes, NULL, n, results, OP_ADD_NX);
}

size_t bk_cuckoo_remove_hashes(bk_cuckoo *F, const uint64_t *hashes, size_t n, bk_status *results)
{
    if (!F || (!hashes && n)) {
        fill_status(results, n, BK_EINVAL);
        return 0;
    }
    return write_hashes(F, hashes, NULL, n, results, OP_REMOVE);
}

static size_t write_many(bk_cuckoo *F, const void *const *keys, const size_t *lens, size_t n, bk_status *results,
                         cf_op op)
{
    if (!F || (n && (!keys || !lens))) {
        fill_status(results, n, BK_EINVAL);
        return 0;
    }
    uint64_t h[CF_BATCH];
    uint8_t bad[CF_BATCH];
    size_t ok = 0;
    for (size_t i = 0; i < n; i += CF_BATCH) {
        size_t e = i + CF_BATCH < n ? i + CF_BATCH : n;
        for (size_t j = i; j < e; j++) {
            bad[j - i] = !keys[j] && lens[j];
            h[j - i] = bad[j - i] ? 0 : bk__hash(keys[j], lens[j], F->seed);
        }
        ok += write_hashes(F, h, bad, e - i, results ? results + i : NULL, op);
    }
    return ok;
}

size_t bk_cuckoo_add_many(bk_cuckoo *F, const void *const *keys, const size_t *lens, size_t n, bk_status *results)
{
    return write_many(F, keys, lens, n, results, OP_ADD);
}
size_t bk_cuckoo_add_if_absent_many(bk_cuckoo *F, const void *const *keys, const size_t *lens, size_t n,
                                    bk_status *results)
{
    return write_many(F, keys, lens, n, results, OP_ADD_NX);
}
size_t bk_cuckoo_remove_many(bk_cuckoo *F, const void *const *keys, const size_t *lens, size_t n,
                             bk_status *results)
{
    return write_many(F, keys, lens, n, results, OP_REMOVE);
}

/* ---- whole filter ---- */

void bk_cuckoo_clear(bk_cuckoo *F)
{
    if (!F) return;
    wlock(F);
    for (uint32_t t = 0; t < F->ntables; t++) {
        cf_table *T = F->vec->t[t];
        for (uint64_t k = 0; k < T->nwords; k++) ST(&T->words[k], 0);
        ST(T->items, 0);
        set_victim(T, 0);
    }
    for (int i = 0; i < CTR_N; i++) ST(&F->ctr[i], 0);
    wunlock(F);
}

void bk_cuckoo_info_get(const bk_cuckoo *F, bk_cuckoo_info *out)
{
    memset(out, 0, sizeof *out);
    uint32_t n = ntables_acq(F);
    const cf_vec *v = vec_acq(F);
    for (uint32_t t = 0; t < n; t++) {
        const cf_table *T = v->t[t];
        uint64_t items = LD(T->items);
        out->capacity += T->capacity;
        out->items += items;
        out->buckets += T->buckets;
        out->memory_bytes += T->nwords * 8;
        out->victims += LD(&T->victim) != 0;
        out->fpr_now += table_fpr(F->b, F->f, items, T->buckets * F->b);
        out->fpr_full += table_fpr(F->b, F->f, 1, 1);
        if (t == n - 1) out->full = LD(&T->victim) != 0;
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
    bk_cuckoo_info_get(F, &in);
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
    for (uint32_t t = 0; t < n; t++) c += LD(v->t[t]->items);
    return c;
}
uint64_t bk_cuckoo_seed(const bk_cuckoo *F) { return F->seed; }
uint32_t bk_cuckoo_tables(const bk_cuckoo *F) { return ntables_acq(F); }
uint64_t bk_cuckoo_table_buckets(const bk_cuckoo *F, uint32_t i)
{
    uint32_t n = ntables_acq(F);
    return i < n ? vec_acq(F)->t[i]->buckets : 0;
}

/* ---- serialization (body layout in docs/FORMAT.md) ----
 * offset 0   u32 bucket_size, u32 fingerprint_bits, u32 max_kicks, u32 expansion, u32 tables,
 *            u32 reserved (0), u64 inserted, u64 deleted, u64 kicks, f64 fpr_target   (56 bytes)
 * zero padding to 64; then for each table of the chain, oldest first:
 *   u64 buckets, u64 capacity, u64 items, u64 victim (0 or fp | bucket << 16), u64 array bytes,
 *   zero padding to 64, then the slot array: little-endian u64 words, slot s at bit s * f,
 *   (buckets * b * f / 64 rounded up, plus one spare word) rounded up to 64 bytes; bits past the
 *   last slot are zero.
 * Invariants checked on decode: every parameter in range; table t+1 has `expansion` times the
 * buckets and capacity of table t; the array length matches the buckets; items = used slots + (victim
 * != 0); inserted - deleted = sum of items. */
#define CF_HDR_COUNTERS 24 /* inserted, deleted, kicks: the order of CTR_* */
#define CF_TAB_ITEMS 16
#define CF_TAB_VICTIM 24

static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_cuckoo *F = vf;
    bk_status s;
    uint32_t n = ntables_acq(F);
    const cf_vec *v = vec_acq(F);
    if ((s = bk__w_u32(w, F->b)) || (s = bk__w_u32(w, F->f)) || (s = bk__w_u32(w, F->max_kicks)) ||
        (s = bk__w_u32(w, F->expansion)) || (s = bk__w_u32(w, n)) || (s = bk__w_u32(w, 0)) ||
        (s = bk__w_u64(w, LD(&F->ctr[CTR_INSERTED]))) || (s = bk__w_u64(w, LD(&F->ctr[CTR_DELETED]))) ||
        (s = bk__w_u64(w, LD(&F->ctr[CTR_KICKS]))) || (s = bk__w_f64(w, F->fpr_target)) ||
        (s = bk__w_align(w, 64)))
        return s;
    for (uint32_t t = 0; t < n; t++) {
        const cf_table *T = v->t[t];
        if ((s = bk__w_u64(w, T->buckets)) || (s = bk__w_u64(w, T->capacity)) || (s = bk__w_u64(w, LD(T->items))) ||
            (s = bk__w_u64(w, LD(&T->victim))) || (s = bk__w_u64(w, T->nwords * 8)) || (s = bk__w_align(w, 64)) ||
            (s = bk__w_u64_array(w, T->words, (size_t)T->nwords)))
            return s;
    }
    return BK_OK;
}

/* Used slots of an array of `slots` f-bit slots (5, 4 or 8 lanes per 64-bit read). */
static uint64_t count_used(uint32_t f, const uint64_t *w, uint64_t slots)
{
    uint32_t lanes = 64 / f;
    uint64_t lo = 0;
    for (uint32_t l = 0; l < lanes; l++) lo |= UINT64_C(1) << (l * f);
    uint64_t hi = lo << (f - 1), low = hi - lo, mask = (UINT64_C(1) << f) - 1;
    uint64_t used = 0, s = 0;
    for (; s + lanes <= slots; s += lanes) {
        uint64_t x = read_plain(w, s * f);
        used += lanes - (uint64_t)__builtin_popcountll(~(((x & low) + low) | x | low) & hi);
    }
    for (; s < slots; s++) used += (read_plain(w, s * f) & mask) != 0;
    return used;
}

static bool tail_is_zero(const uint64_t *w, uint64_t nwords, uint64_t bits)
{
    uint64_t k = bits >> 6;
    if ((bits & 63) && (w[k] >> (bits & 63))) return false;
    for (uint64_t i = (bits + 63) >> 6; i < nwords; i++)
        if (w[i]) return false;
    return true;
}


static bk_status v_decode(bk_reader *r, void **out)
{
    uint32_t b, f, max_kicks, expansion, ntables, reserved;
    uint64_t inserted, deleted, kicks;
    double fpr;
    bk_status s;
    size_t start = r->off;
    *out = NULL;
    if ((s = bk__r_u32(r, &b)) || (s = bk__r_u32(r, &f)) || (s = bk__r_u32(r, &max_kicks)) ||
        (s = bk__r_u32(r, &expansion)) || (s = bk__r_u32(r, &ntables)) || (s = bk__r_u32(r, &reserved)) ||
        (s = bk__r_u64(r, &inserted)) || (s = bk__r_u64(r, &deleted)) || (s = bk__r_u64(r, &kicks)) ||
        (s = bk__r_f64(r, &fpr)) || (s = bk__r_align(r, 64)))
        return s;
    if (!valid_b(b) || !valid_f(f) || max_kicks == 0 || max_kicks > BK_CUCKOO_MAX_KICKS ||
        expansion > BK_CUCKOO_MAX_EXPANSION || (expansion & (expansion - 1)) || ntables == 0 ||
        ntables > BK_CUCKOO_MAX_TABLES || reserved ||
        (ntables > 1 && expansion == 0) || !(fpr > 0 && fpr <= 1) || deleted > inserted)
        return BK_ECORRUPT;
    cf_params prm = { b, f, max_kicks, expansion, r->seed, false };
    bk_cuckoo *F;
    if ((s = filter_new(&prm, fpr, &F)) != BK_OK) return s;
    F->ctr_own[CTR_INSERTED] = inserted;
    F->ctr_own[CTR_DELETED] = deleted;
    F->ctr_own[CTR_KICKS] = kicks;
    if (r->borrow && r->writable) F->ctr = (uint64_t *)(uintptr_t)(r->base + start + CF_HDR_COUNTERS);
    uint64_t base = 0, prev_cap = 0, total_items = 0;
    uint32_t exp_shift = expansion ? (uint32_t)__builtin_ctz(expansion) : 0;
    for (uint32_t t = 0; t < ntables; t++) {
        uint64_t buckets, cap, items, victim, bytes;
        size_t tstart = r->off;
        if ((s = bk__r_u64(r, &buckets)) || (s = bk__r_u64(r, &cap)) || (s = bk__r_u64(r, &items)) ||
            (s = bk__r_u64(r, &victim)) || (s = bk__r_u64(r, &bytes)) || (s = bk__r_align(r, 64)))
            goto fail;
        s = BK_ECORRUPT;
        uint64_t want_c;
        uint64_t shift = (uint64_t)exp_shift * t;
        if (t == 0) base = buckets;
        if (t > 0 && (shift >= 64 || (base << shift) >> shift != base || buckets != base << shift ||
                      bk__mul_overflow(prev_cap, expansion, &want_c) || cap != want_c))
            goto fail;
        uint64_t tb = table_bytes(buckets, b, f);
        if (tb == 0 || bytes != tb || cap == 0 || items > buckets * b + 1) goto fail;
        if (victim) {
            uint64_t vfp = victim & 0xffff;
            if (vfp == 0 || vfp > F->fp_range || (victim >> 16) >= buckets) goto fail;
        }
        if (bytes > r->len - r->off) {
            s = BK_ETRUNCATED;
            goto fail;
        }
        const uint8_t *data = NULL;
        if (r->borrow && (s = bk__r_take(r, (size_t)bytes, &data))) goto fail;
        cf_table *T;
        if ((s = table_new(base, (uint32_t)shift, b, f, cap, !r->borrow, &T)) != BK_OK) goto fail;
        if (r->borrow) {
            T->words = (uint64_t *)(uintptr_t)data;
        } else if ((s = bk__r_take_into(r, T->words, (size_t)bytes)) != BK_OK) {
            /* copying: straight from the body into the table (a pulled body never sits in memory whole) */
            table_free(T);
            goto fail;
        }
        T->items_own = items;
        T->victim = victim;
        if (r->borrow && r->writable) {
            T->items = (uint64_t *)(uintptr_t)(r->base + tstart + CF_TAB_ITEMS);
            T->victim_map = (uint64_t *)(uintptr_t)(r->base + tstart + CF_TAB_VICTIM);
        }
        if ((s = chain_push(F, T)) != BK_OK) {
            table_free(T);
            goto fail;
        }
        s = BK_ECORRUPT;
        uint64_t slots = buckets * b;
        if (!tail_is_zero(T->words, T->nwords, slots * f) || count_used(f, T->words, slots) + (victim != 0) != items)
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

static bk_status v_add_hash(void *f, uint64_t h) { return bk_cuckoo_add_hash(f, h); }
static bool v_contains_hash(const void *f, uint64_t h) { return bk_cuckoo_contains_hash(f, h); }
static bk_status v_remove_hash(void *f, uint64_t h) { return bk_cuckoo_remove_hash(f, h); }
/* The generic batch insert reports the first failure (every key is still attempted). */
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n)
{
    bk_status first = BK_OK, st[CF_BATCH];
    for (size_t i = 0; i < n; i += CF_BATCH) {
        size_t e = i + CF_BATCH < n ? i + CF_BATCH : n;
        if (bk_cuckoo_add_hashes(f, h + i, e - i, st) != e - i)
            for (size_t j = 0; j < e - i && first == BK_OK; j++) first = st[j];
    }
    return first;
}
static size_t v_contains_hashes(const void *f, const uint64_t *h, size_t n, uint8_t *r)
{
    return bk_cuckoo_contains_hashes(f, h, n, r);
}
static uint64_t v_seed(const void *f) { return bk_cuckoo_seed(f); }
static void v_stats(const void *f, bk_stats *s) { bk_cuckoo_stats(f, s); }
static void v_clear(void *f) { bk_cuckoo_clear(f); }
static void v_destroy(void *f) { bk_cuckoo_free(f); }

BK_HIDDEN const bk_vtable bk__cuckoo_vtable = {
    .type = BK_TYPE_CUCKOO,
    .add_hash = v_add_hash,
    .contains_hash = v_contains_hash,
    .remove_hash = v_remove_hash,
    .add_hashes = v_add_hashes,
    .contains_hashes = v_contains_hashes,
    .seed = v_seed,
    .stats = v_stats,
    .merge = NULL, /* no union: two tables' fingerprints cannot be merged without the keys */
    .clear = v_clear,
    .encode = v_encode,
    .decode = v_decode,
    .destroy = v_destroy,
};

/* For tests: where hash h lives in table t (fingerprint and both buckets). */
void bk__cuckoo_place(const bk_cuckoo *F, uint32_t t, uint64_t h, uint32_t *fp, uint64_t *i1, uint64_t *i2)
{
    const cf_table *T = vec_acq(F)->t[t];
    *fp = fp_of(F, h);
    *i1 = bk__range64(h, T->buckets);
    *i2 = alt_t(T, *i1, *fp);
}
