/* Count-min sketch: depth rows of width saturating 32-bit counters, plain or conservative update. */
#include <math.h>
#include "filters/internal.h"
#include "bloomkit/cms.h"

#define CMS_FLAG_CONSERVATIVE 1u
#define CMS_SAT UINT32_MAX

/* merge sums: weights * counters over many sources, exact */
__extension__ typedef __int128 cms_i128;

struct bk_cms {
    uint32_t *cells;  /* depth rows of width counters, row r at cells + r * width */
    uint64_t width;
    uint32_t depth;
    uint32_t flags;   /* CMS_FLAG_* */
    uint64_t total;   /* N, saturating */
    uint64_t seed;
    double error;     /* the sizing's error and delta (2 / width and 2^-depth when made by dimensions) */
    double delta;
    uint64_t bytes;   /* of cells */
    const bk_allocator *alloc;
};

uint64_t bk_cms_bytes(uint64_t width, uint32_t depth)
{
    if (width == 0 || depth == 0 || depth > BK_CMS_MAX_DEPTH) return 0;
    if (width > BK_MAX_FILTER_BYTES / 4 / depth) return 0;
    uint64_t b = width * depth * 4;
    return (b + 63) & ~(uint64_t)63;
}

bk_status bk_cms_dims(double error, double delta, uint64_t *width, uint32_t *depth)
{
    if (!(error > 0 && error < 1) || !(delta > 0 && delta < 1)) return BK_EINVAL;
    double w = ceil(2.0 / error), d = ceil(log2(1.0 / delta));
    if (d < 1) d = 1;
    if (!(w <= (double)(BK_MAX_FILTER_BYTES / 4)) || d > BK_CMS_MAX_DEPTH) return BK_ETOOBIG;
    if (bk_cms_bytes((uint64_t)w, (uint32_t)d) == 0) return BK_ETOOBIG;
    if (width) *width = (uint64_t)w;
    if (depth) *depth = (uint32_t)d;
    return BK_OK;
}

static bk_status cms_alloc(const bk_allocator *a, uint64_t width, uint32_t depth, bool with_cells, bk_cms **out)
{
    *out = NULL;
    uint64_t bytes = bk_cms_bytes(width, depth);
    if (!bytes) return BK_ETOOBIG;
    const bk_allocator *al = bk__allocator(a);
    uint64_t *cells;
    bk_status s;
    bk_cms *f = bk__new_with_array(al, sizeof *f, bytes, with_cells, &cells, &s);
    if (!f) return s;
    f->cells = (uint32_t *)cells;
    f->width = width;
    f->depth = depth;
    f->bytes = bytes;
    f->alloc = al;
    f->error = 2.0 / (double)width;
    f->delta = ldexp(1.0, -(int)depth);
    *out = f;
    return BK_OK;
}

bk_status bk_cms_new(uint64_t width, uint32_t depth, const bk_cms_options *opts, bk_cms **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_cms_options o;
    bk_status s = bk__options_read(&o, sizeof o, opts);
    if (s != BK_OK) return s;
    if (width == 0 || depth == 0 || depth > BK_CMS_MAX_DEPTH) return BK_EINVAL;
    if ((s = cms_alloc(o.allocator, width, depth, true, out)) != BK_OK) return s;
    (*out)->seed = o.seed;
    (*out)->flags = o.conservative ? CMS_FLAG_CONSERVATIVE : 0;
    return BK_OK;
}

bk_status bk_cms_new_prob(double error, double delta, const bk_cms_options *opts, bk_cms **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    uint64_t w;
    uint32_t d;
    bk_status s = bk_cms_dims(error, delta, &w, &d);
    if (s != BK_OK) return s;
    if ((s = bk_cms_new(w, d, opts, out)) != BK_OK) return s;
    (*out)->error = error;
    (*out)->delta = delta;
    return BK_OK;
}

void bk_cms_free(bk_cms *f)
{
    if (!f) return;
    bk__free_aligned(f->alloc, f->cells);
    bk__free(f->alloc, f);
}

bk_status bk_cms_clone(const bk_cms *f, bk_cms **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    bk_cms *c;
    bk_status s = cms_alloc(f->alloc, f->width, f->depth, true, &c);
    if (s != BK_OK) return s;
    uint32_t *cells = c->cells;
    *c = *f;
    c->cells = cells;
    memcpy(cells, f->cells, (size_t)f->bytes);
    *out = c;
    return BK_OK;
}

/* ---- the rows a key touches: the classic probe sequence, one probe per row ---- */

#define CMS_FOR_EACH_CELL(f, h, BODY)                                        \
    do {                                                                     \
        bk__probe p_ = bk__probe_start(h);                                   \
        uint32_t *row_ = (f)->cells;                                         \
        for (uint32_t r_ = 0; r_ < (f)->depth; r_++, row_ += (f)->width) {   \
            uint32_t *cell = row_ + bk__probe_at(&p_, (f)->width);           \
            BODY;                                                            \
            bk__probe_next(&p_, r_);                                         \
        }                                                                    \
    } while (0)

static inline uint32_t sat_add32(uint32_t a, uint64_t b)
{
    uint64_t s = (uint64_t)a + b;
    return s > CMS_SAT ? CMS_SAT : (uint32_t)s;
}

/* Conservative update's step, without a branch (which the random counters would mispredict half the
 * time): the cell raised to target, or left when it is already there. */
static inline uint32_t raise_to(uint32_t c, uint32_t target) { return c < target ? target : c; }

static inline uint64_t cms_min(const bk_cms *f, uint64_t h)
{
    uint32_t m = CMS_SAT;
    CMS_FOR_EACH_CELL(f, h, if (*cell < m) m = *cell);
    return m;
}

static inline uint64_t cms_incr(bk_cms *f, uint64_t h, uint32_t v)
{
    f->total = f->total + v < f->total ? UINT64_MAX : f->total + v;
    if (f->flags & CMS_FLAG_CONSERVATIVE) {
        uint32_t target = sat_add32((uint32_t)cms_min(f, h), v);
        CMS_FOR_EACH_CELL(f, h, *cell = raise_to(*cell, target));
        return target;
    }
    uint32_t m = CMS_SAT;
    CMS_FOR_EACH_CELL(f, h, {
        *cell = sat_add32(*cell, v);
        if (*cell < m) m = *cell;
    });
    return m;
}

bk_status bk_cms_incrby_hash(bk_cms *f, uint64_t hash, uint32_t value, uint64_t *estimate)
{
    if (!f) return BK_EINVAL;
    uint64_t e = cms_incr(f, hash, value);
    if (estimate) *estimate = e;
    return BK_OK;
}

bk_status bk_cms_incrby(bk_cms *f, const void *key, size_t len, uint32_t value, uint64_t *estimate)
{
    if (!f || (!key && len)) return BK_EINVAL;
    return bk_cms_incrby_hash(f, bk__hash(key, len, f->seed), value, estimate);
}

bk_status bk_cms_incrby_u64(bk_cms *f, uint64_t key, uint32_t value, uint64_t *estimate)
{
    if (!f) return BK_EINVAL;
    return bk_cms_incrby_hash(f, bk__hash_u64(key, f->seed), value, estimate);
}

uint64_t bk_cms_query_hash(const bk_cms *f, uint64_t hash) { return f ? cms_min(f, hash) : 0; }

uint64_t bk_cms_query(const bk_cms *f, const void *key, size_t len)
{
    if (!f || (!key && len)) return 0;
    return cms_min(f, bk__hash(key, len, f->seed));
}

uint64_t bk_cms_query_u64(const bk_cms *f, uint64_t key) { return f ? cms_min(f, bk__hash_u64(key, f->seed)) : 0; }

/* ---- batches ----
 * A sketch past the cache: each key's cells are located once (the probe sequence computed once per key),
 * their lines prefetched CMS_WIN keys before the key is updated, and the located cells kept in a ring of
 * CMS_WIN slots until then, so the update reads no hash and computes no position; up to CMS_WIN * depth
 * lines are in flight. A sketch in the cache (or deeper than CMS_WIN_DEPTH rows) takes the one-key loop. */

#define CMS_WIN 16u /* a power of two */
#define CMS_WIN_DEPTH 8u
#define CMS_FAR(f) ((f)->bytes > ((uint64_t)1 << 20) && (f)->depth <= CMS_WIN_DEPTH)

static inline void locate(const bk_cms *f, uint64_t h, uint32_t **slot, bool write)
{
    uint32_t t = 0;
    CMS_FOR_EACH_CELL(f, h, {
        if (write) BK_PREFETCH_W(cell);
        else BK_PREFETCH(cell);
        slot[t++] = cell;
    });
}

static inline uint32_t slot_min(uint32_t *const *slot, uint32_t depth)
{
    uint32_t m = CMS_SAT;
    for (uint32_t r = 0; r < depth; r++)
        if (*slot[r] < m) m = *slot[r];
    return m;
}

static inline uint32_t slot_incr(bk_cms *f, uint32_t *const *slot, uint32_t v)
{
    const uint32_t d = f->depth;
    f->total = f->total + v < f->total ? UINT64_MAX : f->total + v;
    if (f->flags & CMS_FLAG_CONSERVATIVE) {
        uint32_t target = sat_add32(slot_min(slot, d), v);
        for (uint32_t r = 0; r < d; r++) *slot[r] = raise_to(*slot[r], target);
        return target;
    }
    uint32_t m = CMS_SAT;
    for (uint32_t r = 0; r < d; r++) {
        uint32_t c = sat_add32(*slot[r], v);
        *slot[r] = c;
        if (c < m) m = c;
    }
    return m;
}

static void incr_far(bk_cms *f, const uint64_t *hashes, const uint32_t *values, size_t n, uint64_t *estimates)
{
    uint32_t *ring[CMS_WIN][CMS_WIN_DEPTH];
    for (size_t j = 0; j < n && j < CMS_WIN; j++) locate(f, hashes[j], ring[j], true);
    for (size_t i = 0; i < n; i++) {
        uint32_t **slot = ring[i & (CMS_WIN - 1)];
        uint64_t e = slot_incr(f, slot, values ? values[i] : 1);
        if (estimates) estimates[i] = e;
        if (i + CMS_WIN < n) locate(f, hashes[i + CMS_WIN], slot, true);
    }
}

static void query_far(const bk_cms *f, const uint64_t *hashes, size_t n, uint64_t *estimates)
{
    uint32_t *ring[CMS_WIN][CMS_WIN_DEPTH];
    for (size_t j = 0; j < n && j < CMS_WIN; j++) locate(f, hashes[j], ring[j], false);
    for (size_t i = 0; i < n; i++) {
        uint32_t **slot = ring[i & (CMS_WIN - 1)];
        estimates[i] = slot_min(slot, f->depth);
        if (i + CMS_WIN < n) locate(f, hashes[i + CMS_WIN], slot, false);
    }
}

bk_status bk_cms_incrby_hashes(bk_cms *f, const uint64_t *hashes, const uint32_t *values, size_t n,
                               uint64_t *estimates)
{
    if (!f || (n && !hashes)) return BK_EINVAL;
    if (CMS_FAR(f)) {
        incr_far(f, hashes, values, n, estimates);
        return BK_OK;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t e = cms_incr(f, hashes[i], values ? values[i] : 1);
        if (estimates) estimates[i] = e;
    }
    return BK_OK;
}

bk_status bk_cms_incrby_many(bk_cms *f, const void *const *keys, const size_t *lens, const uint32_t *values,
                             size_t n, uint64_t *estimates)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return BK_EINVAL;
    uint64_t h[BK__HCHUNK];
    for (size_t i = 0, c = 0; i < n; i += c) {
        c = bk__hash_chunk(h, BK__HCHUNK, keys, lens, i, n, f->seed);
        bk_cms_incrby_hashes(f, h, values ? values + i : NULL, c, estimates ? estimates + i : NULL);
    }
    return BK_OK;
}

bk_status bk_cms_query_hashes(const bk_cms *f, const uint64_t *hashes, size_t n, uint64_t *estimates)
{
    if (!f || (n && (!hashes || !estimates))) return BK_EINVAL;
    if (CMS_FAR(f)) {
        query_far(f, hashes, n, estimates);
        return BK_OK;
    }
    for (size_t i = 0; i < n; i++) estimates[i] = cms_min(f, hashes[i]);
    return BK_OK;
}

bk_status bk_cms_query_many(const bk_cms *f, const void *const *keys, const size_t *lens, size_t n,
                            uint64_t *estimates)
{
    if (!f || !bk__keys_valid(keys, lens, n) || (n && !estimates)) return BK_EINVAL;
    uint64_t h[BK__HCHUNK];
    for (size_t i = 0, c = 0; i < n; i += c) {
        c = bk__hash_chunk(h, BK__HCHUNK, keys, lens, i, n, f->seed);
        bk_cms_query_hashes(f, h, c, estimates + i);
    }
    return BK_OK;
}

/* ---- merge ---- */

bk_status bk_cms_compatible(const bk_cms *a, const bk_cms *b)
{
    if (!a || !b) return BK_EINVAL;
    return a->width == b->width && a->depth == b->depth && a->seed == b->seed ? BK_OK : BK_EINCOMPAT;
}

/* The merged value of cell i: -1 when negative. */
static int64_t merged_cell(const bk_cms *const *srcs, const int64_t *weights, size_t n, uint64_t i)
{
    cms_i128 sum = 0;
    bool sat = false;
    for (size_t k = 0; k < n; k++) {
        int64_t w = weights ? weights[k] : 1;
        uint32_t c = srcs[k]->cells[i];
        if (c == CMS_SAT && w > 0) sat = true;
        sum += (cms_i128)c * w;
    }
    if (sat || sum > CMS_SAT) return CMS_SAT;
    return sum < 0 ? -1 : (int64_t)sum;
}

bk_status bk_cms_merge(bk_cms *dst, const bk_cms *const *srcs, const int64_t *weights, size_t n)
{
    if (!dst || !srcs || n == 0) return BK_EINVAL;
    for (size_t k = 0; k < n; k++) {
        if (!srcs[k]) return BK_EINVAL;
        if (bk_cms_compatible(dst, srcs[k]) != BK_OK) return BK_EINCOMPAT;
    }
    cms_i128 total = 0;
    for (size_t k = 0; k < n; k++) total += (cms_i128)srcs[k]->total * (weights ? weights[k] : 1);
    if (total < 0) return BK_EINVAL;
    const uint64_t cells = dst->width * dst->depth;
    for (uint64_t i = 0; i < cells; i++)
        if (merged_cell(srcs, weights, n, i) < 0) return BK_EINVAL;
    /* dst may be a source: each cell reads every source's cell i before it is written */
    for (uint64_t i = 0; i < cells; i++) dst->cells[i] = (uint32_t)merged_cell(srcs, weights, n, i);
    dst->total = total > (cms_i128)UINT64_MAX ? UINT64_MAX : (uint64_t)total;
    return BK_OK;
}

void bk_cms_clear(bk_cms *f)
{
    if (!f) return;
    memset(f->cells, 0, (size_t)f->bytes);
    f->total = 0;
}

/* ---- statistics and accessors ---- */

void bk_cms_stats(const bk_cms *f, bk_stats *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    out->type = BK_TYPE_CMS;
    if (!f) return;
    const uint64_t cells = f->width * f->depth;
    uint64_t nonzero = 0, sat = 0;
    for (uint64_t i = 0; i < cells; i++) {
        nonzero += f->cells[i] != 0;
        sat += f->cells[i] == CMS_SAT;
    }
    out->k = f->depth;
    out->bits = cells;
    out->count = f->total;
    out->memory_bytes = f->bytes;
    out->bits_per_key = (double)f->bytes * 8 / (double)(f->total ? f->total : 1);
    out->fill_ratio = (double)nonzero / (double)cells;
    out->fpr_target = f->error;
    out->saturated_cells = sat;
    out->saturated = sat > 0;
    out->seed = f->seed;
}

uint64_t bk_cms_width(const bk_cms *f) { return f ? f->width : 0; }
uint32_t bk_cms_depth(const bk_cms *f) { return f ? f->depth : 0; }
uint64_t bk_cms_total(const bk_cms *f) { return f ? f->total : 0; }
uint64_t bk_cms_seed(const bk_cms *f) { return f ? f->seed : 0; }
bool bk_cms_conservative(const bk_cms *f) { return f && (f->flags & CMS_FLAG_CONSERVATIVE); }
uint32_t bk_cms_counter(const bk_cms *f, uint32_t row, uint64_t col)
{
    if (!f || row >= f->depth || col >= f->width) return 0;
    return f->cells[row * f->width + col];
}

/* ---- body (docs/FORMAT.md, type 10): width, depth, flags, total, error, delta, zero padding to 64,
 * then the depth * width counters (uint32, row after row) in whole 64-byte lines, the tail zero ---- */

static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_cms *f = vf;
    bk_status s;
    if ((s = bk__w_u64(w, f->width)) || (s = bk__w_u32(w, f->depth)) || (s = bk__w_u32(w, f->flags)) ||
        (s = bk__w_u64(w, f->total)) || (s = bk__w_f64(w, f->error)) || (s = bk__w_f64(w, f->delta)) ||
        (s = bk__w_align(w, 64)))
        return s;
    return bk__w_bytes(w, f->cells, (size_t)f->bytes);
}

static bk_status v_decode(bk_reader *r, void **out)
{
    *out = NULL;
    uint64_t width, total;
    uint32_t depth, flags;
    double error, delta;
    bk_status s;
    if ((s = bk__r_u64(r, &width)) || (s = bk__r_u32(r, &depth)) || (s = bk__r_u32(r, &flags)) ||
        (s = bk__r_u64(r, &total)) || (s = bk__r_f64(r, &error)) || (s = bk__r_f64(r, &delta)) ||
        (s = bk__r_align(r, 64)))
        return s;
    uint64_t bytes = bk_cms_bytes(width, depth);
    if (!bytes || (flags & ~CMS_FLAG_CONSERVATIVE) || !(error > 0 && error < 1) || !(delta > 0 && delta < 1))
        return BK_ECORRUPT;
    const uint8_t *data;
    if ((s = bk__r_array_begin(r, bytes, &data))) return s;
    bk_cms *f;
    /* always an array of its own: the sketch's counters change, a mapping's must not */
    if ((s = cms_alloc(r->alloc, width, depth, true, &f)) != BK_OK) return s;
    f->flags = flags;
    f->total = total;
    f->error = error;
    f->delta = delta;
    f->seed = r->seed;
    if (data) memcpy(f->cells, data, (size_t)bytes);
    else {
        uint64_t *words = (uint64_t *)f->cells;
        if ((s = bk__r_array_end(r, bytes, NULL, &words)) != BK_OK) {
            bk_cms_free(f);
            return s;
        }
    }
    if (!bk__tail_zero((const uint64_t *)f->cells, bytes / 8, width * depth * 32)) {
        bk_cms_free(f);
        return BK_ECORRUPT;
    }
    *out = f;
    return BK_OK;
}

static bool v_contains_hash(const void *f, uint64_t h) { return cms_min(f, h) != 0; }
static size_t v_contains_hashes(const void *f, const uint64_t *h, size_t n, uint8_t *r)
{
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        bool in = cms_min(f, h[i]) != 0;
        if (r) r[i] = in;
        hits += in;
    }
    return hits;
}
static uint64_t v_seed(const void *f) { return ((const bk_cms *)f)->seed; }
static void v_stats(const void *f, bk_stats *s) { bk_cms_stats(f, s); }
static void v_destroy(void *f) { bk_cms_free(f); }
static bk_status v_clone(const void *f, void **out)
{
    bk_cms *c = NULL;
    bk_status s = bk_cms_clone(f, &c);
    *out = c;
    return s;
}
static const bk_allocator *v_allocator(const void *f) { return ((const bk_cms *)f)->alloc; }
static bk_status v_add_hash(void *f, uint64_t h) { return bk_cms_incrby_hash(f, h, 1, NULL); }
static void v_clear(void *f) { bk_cms_clear(f); }
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n, size_t *done)
{
    return bk__vt_all_or_none(bk_cms_incrby_hashes(f, h, NULL, n, NULL), n, done);
}
static bk_status v_merge(void *dst, const void *src)
{
    const bk_cms *s[2] = { dst, src };
    return bk_cms_merge(dst, s, NULL, 2);
}

BK_HIDDEN const bk_vtable bk__cms_vtable = {
    .type = BK_TYPE_CMS,
    BK__VT_ENTRIES,
    BK__VT_WRITE_ENTRIES,
    .add_hashes = v_add_hashes,
    .merge = v_merge,
};
