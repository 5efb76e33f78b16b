/* Top-K: HeavyKeeper buckets with count decay, and a min-heap of the k heaviest keys. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include "filters/internal.h"
#include "bloomkit/topk.h"

#define TK_SAT UINT32_MAX
#define TK_TABLE 256
#define TK_NOKEY UINT32_MAX /* a heap entry's len when it holds no bytes */

typedef struct tk_bucket {
    uint32_t fp;
    uint32_t count; /* 0: empty */
} tk_bucket;

typedef struct tk_entry {
    uint64_t hash;
    uint64_t stamp; /* when its count last changed (the list puts the earlier of two equal counts first) */
    uint32_t count; /* 0: an empty slot */
    uint32_t len;   /* TK_NOKEY: hash only */
    uint8_t *key;
} tk_entry;

struct bk_topk {
    tk_bucket *buckets; /* depth rows of width */
    tk_entry *heap;     /* k entries, a min-heap by count; empty slots (count 0) rise to the top */
    uint32_t k, width, depth;
    uint32_t used;      /* occupied heap entries */
    double decay;
    uint64_t rng;       /* the decay generator's state */
    uint64_t total;     /* sum of increments, saturating */
    uint64_t clock;     /* heap changes so far: the entries' stamps */
    uint64_t seed;
    uint64_t key_bytes; /* bytes held by the heap's key copies */
    uint8_t *gone;      /* the last expelled key's bytes (freed at the next change) */
    const double *table; /* decay^i for i < TK_TABLE: the shared table of the default decay, else own */
    double ln_decay;     /* ln(decay): decay^i = exp(i ln(decay)) past the table */
    const bk_allocator *alloc;
};

static uint64_t bucket_bytes(uint32_t width, uint32_t depth) { return (uint64_t)width * depth * sizeof(tk_bucket); }

static bk_status check_dims(uint32_t k, uint32_t width, uint32_t depth, double decay)
{
    if (k == 0 || width == 0 || depth == 0 || depth > BK_TOPK_MAX_DEPTH || !(decay > 0 && decay <= 1))
        return BK_EINVAL;
    if (bucket_bytes(width, depth) + (uint64_t)k * sizeof(tk_entry) > BK_MAX_FILTER_BYTES) return BK_ETOOBIG;
    return BK_OK;
}

static void fill_powers(double *t, double decay)
{
    t[0] = 1;
    for (int i = 1; i < TK_TABLE; i++) t[i] = t[i - 1] * decay;
}

/* The default decay's table, made once per process and shared by every sketch that uses it: 2 KiB a
 * sketch saved, which is most of a small sketch's own memory (a Redis key with the default geometry). */
#define TK_DEFAULT_DECAY 0.9
static double g_default_table[TK_TABLE];
static pthread_once_t g_default_once = PTHREAD_ONCE_INIT;
static void fill_default(void) { fill_powers(g_default_table, TK_DEFAULT_DECAY); }

static bool fill_table(bk_topk *f)
{
    f->ln_decay = log(f->decay);
    if (f->decay == TK_DEFAULT_DECAY) {
        pthread_once(&g_default_once, fill_default);
        f->table = g_default_table;
        return true;
    }
    double *t = bk__malloc(f->alloc, TK_TABLE * sizeof *t);
    if (!t) return false;
    fill_powers(t, f->decay);
    f->table = t;
    return true;
}

static void free_table(bk_topk *f)
{
    if (f->table != g_default_table) bk__free(f->alloc, (void *)(uintptr_t)f->table);
}

static uint64_t table_bytes(const bk_topk *f)
{
    return f->table == g_default_table ? 0 : TK_TABLE * sizeof(double);
}

static bk_status tk_alloc(const bk_allocator *a, uint32_t k, uint32_t width, uint32_t depth, double decay,
                          bk_topk **out)
{
    *out = NULL;
    const bk_allocator *al = bk__allocator(a);
    uint64_t *b;
    bk_status s;
    bk_topk *f = bk__new_with_array(al, sizeof *f, bucket_bytes(width, depth), true, &b, &s);
    if (!f) return s;
    f->alloc = al;
    f->buckets = (tk_bucket *)b;
    f->heap = bk__calloc(al, k, sizeof(tk_entry));
    f->decay = decay;
    if (!f->heap || !fill_table(f)) {
        bk__free(al, f->heap);
        bk__free_aligned(al, b);
        bk__free(al, f);
        return BK_ENOMEM;
    }
    f->k = k;
    f->width = width;
    f->depth = depth;
    *out = f;
    return BK_OK;
}

static uint64_t seed_rng(uint64_t seed) { return seed ^ UINT64_C(0x6a09e667f3bcc909); }

bk_status bk_topk_new(uint32_t k, const bk_topk_options *opts, bk_topk **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_topk_options o;
    bk_status s = bk__options_read(&o, sizeof o, opts);
    if (s != BK_OK) return s;
    if (k == 0) return BK_EINVAL;
    double lk = log((double)k);
    uint32_t width = o.width, depth = o.depth;
    if (!width) {
        double w = ceil((double)k * lk);
        width = w < 8 ? 8 : w > (double)UINT32_MAX ? UINT32_MAX : (uint32_t)w;
    }
    if (!depth) depth = lk < 5 ? 5 : (uint32_t)ceil(lk);
    double decay = o.decay == 0 ? 0.9 : o.decay;
    if ((s = check_dims(k, width, depth, decay)) != BK_OK) return s;
    if ((s = tk_alloc(o.allocator, k, width, depth, decay, out)) != BK_OK) return s;
    (*out)->seed = o.seed;
    (*out)->rng = seed_rng(o.seed);
    return BK_OK;
}

static void free_keys(bk_topk *f)
{
    for (uint32_t i = 0; i < f->k; i++) {
        bk__free(f->alloc, f->heap[i].key);
        f->heap[i].key = NULL;
    }
    bk__free(f->alloc, f->gone);
    f->gone = NULL;
    f->key_bytes = 0;
}

void bk_topk_free(bk_topk *f)
{
    if (!f) return;
    free_keys(f);
    free_table(f);
    bk__free(f->alloc, f->heap);
    bk__free_aligned(f->alloc, f->buckets);
    bk__free(f->alloc, f);
}

static uint8_t *copy_key(const bk_allocator *a, const void *key, size_t len)
{
    uint8_t *p = bk__malloc(a, len ? len : 1);
    if (p && len) memcpy(p, key, len);
    return p;
}

bk_status bk_topk_clone(const bk_topk *f, bk_topk **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    bk_topk *c;
    bk_status s = tk_alloc(f->alloc, f->k, f->width, f->depth, f->decay, &c);
    if (s != BK_OK) return s;
    memcpy(c->buckets, f->buckets, (size_t)bucket_bytes(f->width, f->depth));
    memcpy(c->heap, f->heap, (size_t)f->k * sizeof(tk_entry));
    for (uint32_t i = 0; i < f->k; i++) {
        c->heap[i].key = NULL;
        if (f->heap[i].key && !(c->heap[i].key = copy_key(c->alloc, f->heap[i].key, f->heap[i].len))) {
            bk_topk_free(c);
            return BK_ENOMEM;
        }
    }
    c->used = f->used;
    c->rng = f->rng;
    c->total = f->total;
    c->clock = f->clock;
    c->seed = f->seed;
    c->key_bytes = f->key_bytes;
    *out = c;
    return BK_OK;
}

/* ---- HeavyKeeper ---- */

static inline uint32_t fingerprint(uint64_t h) { return (uint32_t)bk__remix(h); }

/* A uniform double in (0, 1]. */
static inline double next_unit(bk_topk *f)
{
    const uint64_t z = bk__splitmix64_at(f->rng, 1);
    f->rng += UINT64_C(0x9e3779b97f4a7c15);
    return (double)((z >> 11) + 1) * 0x1.0p-53;
}

static inline double decay_at(const bk_topk *f, uint32_t count)
{
    return count < TK_TABLE ? f->table[count] : exp((double)count * f->ln_decay);
}

/* Units of an increment up to which the decay is drawn unit by unit (one uniform draw each, cheaper
 * than the geometric draw's two logarithms); larger increments draw the failures before each decay at
 * once. Both give each unit its chance decay^count, so the distribution is the same. */
#define TK_UNIT_DRAWS 16u

/* An increment of `incr` units meeting a bucket held by another key: each unit decays the bucket with
 * probability decay^count, and a bucket decayed to zero is taken over with the units left. Returns the
 * bucket's count for the key when it was taken over, else 0. */
static inline uint32_t decay_bucket(bk_topk *f, tk_bucket *b, uint32_t fp, uint32_t incr)
{
    uint32_t left = incr;
    while (left > 0) {
        double p = decay_at(f, b->count);
        if (!(p > 0)) return 0;
        if (p < 1) {
            if (left <= TK_UNIT_DRAWS) {
                if (!(next_unit(f) <= p)) {
                    left--;
                    continue;
                }
            } else {
                double g = floor(log(next_unit(f)) / log1p(-p));
                if (!(g < (double)left)) return 0; /* no success within the units left */
                left -= (uint32_t)g;               /* the unit that succeeds is `left` (counting down) */
            }
        }
        if (--b->count == 0) {
            b->fp = fp;
            b->count = left;
            return left;
        }
        left--;
    }
    return 0;
}

static inline uint32_t heavy_add(bk_topk *f, uint64_t h, uint32_t incr)
{
    const uint32_t fp = fingerprint(h);
    uint32_t best = 0;
    bk__probe p = bk__probe_start(h);
    tk_bucket *row = f->buckets;
    for (uint32_t r = 0; r < f->depth; r++, row += f->width) {
        tk_bucket *b = row + bk__probe_at(&p, f->width);
        uint32_t c = 0;
        if (b->count == 0) {
            if (incr) {
                b->fp = fp;
                b->count = incr;
                c = incr;
            }
        } else if (b->fp == fp) {
            uint64_t s = (uint64_t)b->count + incr;
            b->count = s > TK_SAT ? TK_SAT : (uint32_t)s;
            c = b->count;
        } else if (incr) {
            c = decay_bucket(f, b, fp, incr);
        }
        if (c > best) best = c;
        bk__probe_next(&p, r);
    }
    return best;
}

static uint32_t heavy_count(const bk_topk *f, uint64_t h)
{
    const uint32_t fp = fingerprint(h);
    uint32_t best = 0;
    bk__probe p = bk__probe_start(h);
    const tk_bucket *row = f->buckets;
    for (uint32_t r = 0; r < f->depth; r++, row += f->width) {
        const tk_bucket *b = row + bk__probe_at(&p, f->width);
        if (b->count && b->fp == fp && b->count > best) best = b->count;
        bk__probe_next(&p, r);
    }
    return best;
}

/* ---- the heap ---- */

/* The heap's order: by count, and of two equal counts the one unchanged for longer (the colder key) is
 * the smaller, pushed out first. */
static inline bool heap_less(const tk_entry *a, const tk_entry *b)
{
    return a->count != b->count ? a->count < b->count : a->stamp < b->stamp;
}

static void sift_down(tk_entry *hp, uint32_t n, uint32_t i)
{
    tk_entry e = hp[i];
    for (;;) {
        uint64_t c = 2 * (uint64_t)i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_less(&hp[c + 1], &hp[c])) c++;
        if (!heap_less(&hp[c], &e)) break;
        hp[i] = hp[c];
        i = (uint32_t)c;
    }
    hp[i] = e;
}

static tk_entry *heap_find(const bk_topk *f, uint64_t h)
{
    for (uint32_t i = 0; i < f->k; i++)
        if (f->heap[i].hash == h && f->heap[i].count) return &f->heap[i];
    return NULL;
}

static void drop_gone(bk_topk *f)
{
    if (f->gone) {
        bk__free(f->alloc, f->gone);
        f->gone = NULL;
    }
}

static bk_status tk_incr(bk_topk *f, uint64_t h, const void *key, size_t len, uint32_t incr, bk_topk_item *ex)
{
    if (ex) memset(ex, 0, sizeof *ex);
    drop_gone(f);
    f->total = f->total + incr < f->total ? UINT64_MAX : f->total + incr;
    uint32_t est = heavy_add(f, h, incr);
    if (est == 0 || est < f->heap[0].count) return BK_OK;
    tk_entry *e = heap_find(f, h);
    if (e) {
        /* a key in the heap keeps the largest estimate it reached: its buckets may have decayed since
         * (an estimate only ever falls by decay, never below the key's own later arrivals), and letting
         * its count fall with them hands its place to a lighter key whose bucket happened to survive */
        if (est > e->count) {
            e->count = est;
            e->stamp = ++f->clock;
            sift_down(f->heap, f->k, (uint32_t)(e - f->heap));
        }
        return BK_OK;
    }
    uint8_t *copy = NULL;
    if (key && len <= UINT32_MAX - 1 && !(copy = copy_key(f->alloc, key, len))) return BK_ENOMEM;
    tk_entry *root = &f->heap[0];
    if (root->count) {
        if (ex) {
            ex->key = root->key;
            ex->len = root->key ? root->len : 0;
            ex->hash = root->hash;
            ex->count = root->count;
            ex->stamp = root->stamp;
        }
        f->gone = root->key;
        if (root->key) f->key_bytes -= root->len ? root->len : 1;
    } else {
        f->used++;
    }
    root->hash = h;
    root->count = est;
    root->stamp = ++f->clock;
    root->key = copy;
    root->len = copy ? (uint32_t)len : TK_NOKEY;
    if (copy) f->key_bytes += len ? len : 1;
    sift_down(f->heap, f->k, 0);
    return BK_OK;
}

bk_status bk_topk_incrby_hash(bk_topk *f, uint64_t hash, uint32_t increment, bk_topk_item *expelled)
{
    if (!f) return BK_EINVAL;
    return tk_incr(f, hash, NULL, 0, increment, expelled);
}

bk_status bk_topk_incrby(bk_topk *f, const void *key, size_t len, uint32_t increment, bk_topk_item *expelled)
{
    if (!f || (!key && len)) return BK_EINVAL;
    static const uint8_t empty[1];
    return tk_incr(f, bk__hash(key, len, f->seed), key ? key : empty, len, increment, expelled);
}

bk_status bk_topk_incrby_u64(bk_topk *f, uint64_t key, uint32_t increment, bk_topk_item *expelled)
{
    if (!f) return BK_EINVAL;
    return tk_incr(f, bk__hash_u64(key, f->seed), &key, 8, increment, expelled);
}

bk_status bk_topk_incrby_hashes(bk_topk *f, const uint64_t *hashes, const uint32_t *values, size_t n, size_t *done)
{
    if (!f || (n && !hashes)) return bk__batch_refused(done);
    for (size_t i = 0; i < n; i++) {
        bk_status s = tk_incr(f, hashes[i], NULL, 0, values ? values[i] : 1, NULL);
        if (s != BK_OK) {
            if (done) *done = i;
            return s;
        }
    }
    return bk__batch_done(done, n);
}

bk_status bk_topk_incrby_many(bk_topk *f, const void *const *keys, const size_t *lens, const uint32_t *values,
                              size_t n, size_t *done)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return bk__batch_refused(done);
    static const uint8_t empty[1];
    for (size_t i = 0; i < n; i++) {
        const void *k = keys[i] ? keys[i] : empty;
        bk_status s = tk_incr(f, bk__hash(k, lens[i], f->seed), k, lens[i], values ? values[i] : 1, NULL);
        if (s != BK_OK) {
            if (done) *done = i;
            return s;
        }
    }
    return bk__batch_done(done, n);
}

bool bk_topk_query_hash(const bk_topk *f, uint64_t hash) { return f && heap_find(f, hash) != NULL; }
bool bk_topk_query(const bk_topk *f, const void *key, size_t len)
{
    if (!f || (!key && len)) return false;
    return heap_find(f, bk__hash(key, len, f->seed)) != NULL;
}
bool bk_topk_query_u64(const bk_topk *f, uint64_t key) { return f && heap_find(f, bk__hash_u64(key, f->seed)); }

uint64_t bk_topk_count_hash(const bk_topk *f, uint64_t hash) { return f ? heavy_count(f, hash) : 0; }
uint64_t bk_topk_count(const bk_topk *f, const void *key, size_t len)
{
    if (!f || (!key && len)) return 0;
    return heavy_count(f, bk__hash(key, len, f->seed));
}
uint64_t bk_topk_count_u64(const bk_topk *f, uint64_t key) { return f ? heavy_count(f, bk__hash_u64(key, f->seed)) : 0; }

static int cmp_items(const void *a, const void *b)
{
    const bk_topk_item *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    if (x->stamp != y->stamp) return x->stamp < y->stamp ? -1 : 1;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

size_t bk_topk_list(const bk_topk *f, bk_topk_item *out, size_t cap)
{
    if (!f) return 0;
    size_t n = f->used;
    if (!out || cap == 0) return n;
    if (cap >= n) {
        size_t j = 0;
        for (uint32_t i = 0; i < f->k; i++) {
            const tk_entry *e = &f->heap[i];
            if (!e->count) continue;
            out[j++] = (bk_topk_item){ e->key, e->key ? e->len : 0, e->hash, e->count, e->stamp };
        }
        qsort(out, n, sizeof *out, cmp_items);
        return n;
    }
    /* fewer slots than keys: keep the cap heaviest by a selection pass per slot (cap is small here) */
    size_t j = 0;
    for (uint32_t i = 0; i < f->k; i++) {
        const tk_entry *e = &f->heap[i];
        if (!e->count) continue;
        bk_topk_item it = { e->key, e->key ? e->len : 0, e->hash, e->count, e->stamp };
        if (j < cap) {
            out[j++] = it;
            continue;
        }
        size_t worst = 0;
        for (size_t t = 1; t < cap; t++)
            if (cmp_items(&out[t], &out[worst]) > 0) worst = t;
        if (cmp_items(&it, &out[worst]) < 0) out[worst] = it;
    }
    qsort(out, j, sizeof *out, cmp_items);
    return n;
}

void bk_topk_clear(bk_topk *f)
{
    if (!f) return;
    free_keys(f);
    memset(f->buckets, 0, (size_t)bucket_bytes(f->width, f->depth));
    memset(f->heap, 0, (size_t)f->k * sizeof(tk_entry));
    f->used = 0;
    f->total = 0;
    f->clock = 0;
}

void bk_topk_stats(const bk_topk *f, bk_stats *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    out->type = BK_TYPE_TOPK;
    if (!f) return;
    const uint64_t cells = (uint64_t)f->width * f->depth;
    uint64_t used = 0, sat = 0;
    for (uint64_t i = 0; i < cells; i++) {
        used += f->buckets[i].count != 0;
        sat += f->buckets[i].count == TK_SAT;
    }
    out->k = f->depth;
    out->capacity = f->k;
    out->count = f->total;
    out->bits = cells;
    out->memory_bytes = bucket_bytes(f->width, f->depth) + (uint64_t)f->k * sizeof(tk_entry);
    out->bits_per_key = (double)out->memory_bytes * 8 / (double)(f->total ? f->total : 1);
    out->fill_ratio = (double)used / (double)cells;
    out->saturated_cells = sat;
    out->subfilters = f->used;
    out->seed = f->seed;
}

uint32_t bk_topk_k(const bk_topk *f) { return f ? f->k : 0; }
uint32_t bk_topk_width(const bk_topk *f) { return f ? f->width : 0; }
uint32_t bk_topk_depth(const bk_topk *f) { return f ? f->depth : 0; }
double bk_topk_decay(const bk_topk *f) { return f ? f->decay : 0; }
uint64_t bk_topk_seed(const bk_topk *f) { return f ? f->seed : 0; }
uint64_t bk_topk_memory(const bk_topk *f)
{
    if (!f) return 0;
    return sizeof *f + bucket_bytes(f->width, f->depth) + (uint64_t)f->k * sizeof(tk_entry) + table_bytes(f) +
           f->key_bytes;
}

/* ---- body (docs/FORMAT.md, type 11): k, width, depth, 0, decay, the generator's state, the total,
 * the heap's clock, zero padding to 64; the buckets (fingerprint, count: two uint32 each), padding to
 * 64; the heap's k entries (hash u64, stamp u64, count u32, key length u32, 0xFFFFFFFF for none),
 * padding to 64; the keys' bytes in
 * entry order, padding to 64 ---- */

static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_topk *f = vf;
    bk_status s;
    if ((s = bk__w_u32(w, f->k)) || (s = bk__w_u32(w, f->width)) || (s = bk__w_u32(w, f->depth)) ||
        (s = bk__w_u32(w, 0)) || (s = bk__w_f64(w, f->decay)) || (s = bk__w_u64(w, f->rng)) ||
        (s = bk__w_u64(w, f->total)) || (s = bk__w_u64(w, f->clock)) || (s = bk__w_align(w, 64)))
        return s;
    if ((s = bk__w_bytes(w, f->buckets, (size_t)bucket_bytes(f->width, f->depth))) || (s = bk__w_align(w, 64)))
        return s;
    for (uint32_t i = 0; i < f->k; i++) {
        const tk_entry *e = &f->heap[i];
        if ((s = bk__w_u64(w, e->count ? e->hash : 0)) || (s = bk__w_u64(w, e->count ? e->stamp : 0)) ||
            (s = bk__w_u32(w, e->count)) ||
            (s = bk__w_u32(w, e->count && e->key ? e->len : TK_NOKEY)))
            return s;
    }
    if ((s = bk__w_align(w, 64))) return s;
    for (uint32_t i = 0; i < f->k; i++) {
        const tk_entry *e = &f->heap[i];
        if (e->count && e->key && e->len && (s = bk__w_bytes(w, e->key, e->len))) return s;
    }
    return bk__w_align(w, 64);
}

static bk_status v_decode(bk_reader *r, void **out)
{
    *out = NULL;
    uint32_t k, width, depth, zero;
    double decay;
    uint64_t rng, total, clock;
    bk_status s;
    if ((s = bk__r_u32(r, &k)) || (s = bk__r_u32(r, &width)) || (s = bk__r_u32(r, &depth)) ||
        (s = bk__r_u32(r, &zero)) || (s = bk__r_f64(r, &decay)) || (s = bk__r_u64(r, &rng)) ||
        (s = bk__r_u64(r, &total)) || (s = bk__r_u64(r, &clock)) || (s = bk__r_align(r, 64)))
        return s;
    if (zero || check_dims(k, width, depth, decay) != BK_OK) return BK_ECORRUPT;
    uint64_t bb = bucket_bytes(width, depth);
    /* the buckets and the heap's entries must be in the body before anything is allocated */
    if (r->len - r->off < bb + (uint64_t)k * 24) return BK_ETRUNCATED;
    bk_topk *f;
    if ((s = tk_alloc(r->alloc, k, width, depth, decay, &f)) != BK_OK) return s;
    f->rng = rng;
    f->total = total;
    f->clock = clock;
    f->seed = r->seed;
    if ((s = bk__r_take_into(r, f->buckets, (size_t)bb)) || (s = bk__r_align(r, 64))) goto fail;
    for (uint32_t i = 0; i < k; i++) {
        tk_entry *e = &f->heap[i];
        if ((s = bk__r_u64(r, &e->hash)) || (s = bk__r_u64(r, &e->stamp)) || (s = bk__r_u32(r, &e->count)) ||
            (s = bk__r_u32(r, &e->len)))
            goto fail;
        if (!e->count && (e->hash || e->stamp || e->len != TK_NOKEY)) goto corrupt;
        if (e->stamp > clock) goto corrupt;
        if (e->count) f->used++;
        if (i > 0 && heap_less(e, &f->heap[(i - 1) / 2])) goto corrupt; /* not a min-heap */
    }
    if ((s = bk__r_align(r, 64))) goto fail;
    for (uint32_t i = 0; i < k; i++) {
        tk_entry *e = &f->heap[i];
        if (!e->count || e->len == TK_NOKEY) continue;
        const uint8_t *p = NULL;
        /* the body's length is known: a key running past it is a damaged length, not a short file */
        if (e->len > r->len - r->off) goto corrupt;
        if (e->len && (s = bk__r_take(r, e->len, &p))) goto fail;
        /* the key must hash to its entry's hash: anything else was not written by bloomkit */
        if (bk__hash(p ? (const void *)p : "", e->len, f->seed) != e->hash) goto corrupt;
        if (!(e->key = copy_key(f->alloc, p, e->len))) {
            s = BK_ENOMEM;
            goto fail;
        }
        f->key_bytes += e->len ? e->len : 1;
    }
    if ((s = bk__r_align(r, 64))) goto fail;
    /* every bucket in use has a count; an empty one is all zero */
    for (uint64_t i = 0; i < (uint64_t)width * depth; i++)
        if (!f->buckets[i].count && f->buckets[i].fp) goto corrupt;
    *out = f;
    return BK_OK;
corrupt:
    s = BK_ECORRUPT;
fail:
    bk_topk_free(f);
    return s;
}

static bool v_contains_hash(const void *f, uint64_t h) { return heap_find(f, h) != NULL; }
static size_t v_contains_hashes(const void *f, const uint64_t *h, size_t n, uint8_t *r)
{
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        bool in = heap_find(f, h[i]) != NULL;
        if (r) r[i] = in;
        hits += in;
    }
    return hits;
}
static uint64_t v_seed(const void *f) { return ((const bk_topk *)f)->seed; }
static void v_stats(const void *f, bk_stats *s) { bk_topk_stats(f, s); }
static void v_destroy(void *f) { bk_topk_free(f); }
static bk_status v_clone(const void *f, void **out)
{
    bk_topk *c = NULL;
    bk_status s = bk_topk_clone(f, &c);
    *out = c;
    return s;
}
static const bk_allocator *v_allocator(const void *f) { return ((const bk_topk *)f)->alloc; }
static bk_status v_add_hash(void *f, uint64_t h) { return bk_topk_incrby_hash(f, h, 1, NULL); }
static void v_clear(void *f) { bk_topk_clear(f); }
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n, size_t *done)
{
    return bk_topk_incrby_hashes(f, h, NULL, n, done);
}

BK_HIDDEN const bk_vtable bk__topk_vtable = {
    .type = BK_TYPE_TOPK,
    BK__VT_ENTRIES,
    BK__VT_WRITE_ENTRIES,
    .add_hashes = v_add_hashes,
};
