/* RedisBloom 2.x's count-min sketch and Top-K in RedisBloom's layout (rb_sketch.h). */
#include <math.h>
#include <string.h>

#include "rb_compat.h"
#include "rb_sketch.h"

#define RB_TK_GA 1919u /* the fingerprint's MurmurHash2 seed */
#define RB_MAX_BYTES ((uint64_t)1 << 38)

static void *zalloc(size_t n) { return rb_alloc_zero(n); }

/* ---- CMS ---- */

void rb_cms_free(rb_cms *c)
{
    if (!c) return;
    RedisModule_Free(c->cells);
    RedisModule_Free(c);
}

static inline uint32_t *rb_cell(const rb_cms *c, const void *item, size_t len, uint64_t row)
{
    uint32_t h = rb_murmur2_32(item, len, (uint32_t)row);
    return &c->cells[row * c->width + h % c->width];
}

uint64_t rb_cms_incrby(rb_cms *c, const void *item, size_t len, uint32_t value)
{
    uint32_t m = UINT32_MAX;
    for (uint64_t i = 0; i < c->depth; i++) {
        uint32_t *p = rb_cell(c, item, len, i);
        uint64_t s = (uint64_t)*p + value;
        *p = s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
        if (*p < m) m = *p;
    }
    c->total += value;
    return m;
}

uint64_t rb_cms_query(const rb_cms *c, const void *item, size_t len)
{
    uint32_t m = UINT32_MAX;
    for (uint64_t i = 0; i < c->depth; i++) {
        uint32_t v = *rb_cell(c, item, len, i);
        if (v < m) m = v;
    }
    return m;
}

bool rb_cms_merge(rb_cms *dst, const rb_cms *const *srcs, const long long *weights, size_t n)
{
    const uint64_t cells = dst->width * dst->depth;
    for (int pass = 0; pass < 2; pass++) {
        for (uint64_t i = 0; i < cells; i++) {
            int64_t sum = 0;
            for (size_t k = 0; k < n; k++) {
                int64_t mul;
                if (__builtin_mul_overflow((int64_t)srcs[k]->cells[i], (int64_t)weights[k], &mul) ||
                    __builtin_add_overflow(sum, mul, &sum))
                    return false;
            }
            if (sum < 0 || sum > (int64_t)UINT32_MAX) return false;
            if (pass) dst->cells[i] = (uint32_t)sum;
        }
        int64_t total = 0;
        for (size_t k = 0; k < n; k++) {
            int64_t mul;
            if (__builtin_mul_overflow((int64_t)srcs[k]->total, (int64_t)weights[k], &mul) ||
                __builtin_add_overflow(total, mul, &total))
                return false;
        }
        if (total < 0) return false;
        if (pass) dst->total = (uint64_t)total;
    }
    return true;
}

size_t rb_cms_memory(const rb_cms *c) { return sizeof *c + (size_t)(c->width * c->depth * 4); }

static rb_cms *rb_cms_make(uint64_t width, uint64_t depth)
{
    if (width == 0 || depth == 0 || width > RB_MAX_BYTES / 4 / depth) return NULL;
    rb_cms *c = zalloc(sizeof *c);
    if (!c) return NULL;
    c->width = width;
    c->depth = depth;
    if (!(c->cells = zalloc((size_t)(width * depth * 4)))) {
        RedisModule_Free(c);
        return NULL;
    }
    return c;
}

rb_cms *rb_cms_rdb_load(RedisModuleIO *io, int encver)
{
    if (encver != 0) return NULL;
    uint64_t width = RedisModule_LoadUnsigned(io), depth = RedisModule_LoadUnsigned(io);
    uint64_t total = RedisModule_LoadUnsigned(io);
    if (RedisModule_IsIOError(io)) return NULL;
    size_t n = 0;
    char *p = RedisModule_LoadStringBuffer(io, &n);
    rb_cms *c = NULL;
    if (!RedisModule_IsIOError(io) && p && width && depth && width <= RB_MAX_BYTES / 4 / depth &&
        n == width * depth * 4 && (c = rb_cms_make(width, depth))) {
        memcpy(c->cells, p, n);
        c->total = total;
    }
    if (p) RedisModule_Free(p);
    if (!c) RedisModule_LogIOError(io, "warning", "bloomkit: a RedisBloom CMS value is damaged; not loaded");
    return c;
}

void rb_cms_rdb_save(RedisModuleIO *io, const rb_cms *c)
{
    RedisModule_SaveUnsigned(io, c->width);
    RedisModule_SaveUnsigned(io, c->depth);
    RedisModule_SaveUnsigned(io, c->total);
    RedisModule_SaveStringBuffer(io, (const char *)c->cells, (size_t)(c->width * c->depth * 4));
}

/* ---- Top-K ---- */

void rb_topk_free(rb_topk *t)
{
    if (!t) return;
    if (t->heap)
        for (uint32_t i = 0; i < t->k; i++) RedisModule_Free(t->heap[i].item);
    RedisModule_Free(t->heap);
    RedisModule_Free(t->buckets);
    RedisModule_Free(t);
}

/* The heap's order is RedisBloom's: the smaller child (the left one on a tie) moves up while it is not
 * larger than the entry sinking, then while it is smaller. */
static void rb_sift(rb_tk_entry *a, size_t len, size_t start)
{
    if (len < 2 || (len - 2) / 2 < start) return;
    size_t child = 2 * start + 1;
    if (child + 1 < len && a[child].count > a[child + 1].count) child++;
    if (a[child].count > a[start].count) return;
    rb_tk_entry top = a[start];
    do {
        a[start] = a[child];
        start = child;
        if ((len - 2) / 2 < child) break;
        child = 2 * child + 1;
        if (child + 1 < len && a[child].count > a[child + 1].count) child++;
    } while (a[child].count < top.count);
    a[start] = top;
}

static rb_tk_entry *rb_find(const rb_topk *t, uint32_t fp, const void *item, size_t len)
{
    for (uint32_t i = t->k; i-- > 0;) {
        rb_tk_entry *e = &t->heap[i];
        if (e->item && e->fp == fp && e->len == len && memcmp(e->item, item, len) == 0) return e;
    }
    return NULL;
}

/* RedisBloom draws the decay from rand(); any uniform source gives the same distribution. */
static uint64_t rb_rng = UINT64_C(0x853c49e6748fea9b);
static double rb_unit(void)
{
    uint64_t z = (rb_rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static double rb_decay(const rb_topk *t, uint32_t count)
{
    return pow(t->decay, (double)count);
}

void rb_topk_add(rb_topk *t, const void *item, size_t len, uint32_t incr, char **expelled, size_t *expelled_len)
{
    *expelled = NULL;
    *expelled_len = 0;
    const uint32_t fp = rb_murmur2_32(item, len, RB_TK_GA);
    const uint32_t heap_min = t->heap[0].count;
    uint32_t best = 0;
    for (uint32_t i = 0; i < t->depth; i++) {
        rb_tk_bucket *b = &t->buckets[(size_t)i * t->width + rb_murmur2_32(item, len, i) % t->width];
        if (b->count == 0) {
            b->fp = fp;
            b->count = incr;
            if (b->count > best) best = b->count;
        } else if (b->fp == fp) {
            uint64_t s = (uint64_t)b->count + incr;
            b->count = s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
            if (b->count > best) best = b->count;
        } else {
            for (uint32_t left = incr; left > 0; left--) {
                if (rb_unit() < rb_decay(t, b->count)) {
                    if (--b->count == 0) {
                        b->fp = fp;
                        b->count = left;
                        if (left > best) best = left;
                        break;
                    }
                }
            }
        }
    }
    if (best < heap_min) return;
    rb_tk_entry *e = rb_find(t, fp, item, len);
    if (e) {
        e->count = best;
        rb_sift(t->heap, t->k, (size_t)(e - t->heap));
        return;
    }
    char *copy = zalloc(len + 1);
    if (!copy) return;
    memcpy(copy, item, len);
    if (t->heap[0].item) {
        *expelled = t->heap[0].item;
        *expelled_len = t->heap[0].len;
    }
    t->heap[0] = (rb_tk_entry){ fp, (uint32_t)len, best, copy };
    rb_sift(t->heap, t->k, 0);
}

bool rb_topk_query(const rb_topk *t, const void *item, size_t len)
{
    return rb_find(t, rb_murmur2_32(item, len, RB_TK_GA), item, len) != NULL;
}

uint64_t rb_topk_count(const rb_topk *t, const void *item, size_t len)
{
    const uint32_t fp = rb_murmur2_32(item, len, RB_TK_GA);
    const uint32_t heap_min = t->heap[0].count;
    const bool in_heap = rb_find(t, fp, item, len) != NULL;
    uint32_t best = 0;
    for (uint32_t i = 0; i < t->depth; i++) {
        const rb_tk_bucket *b = &t->buckets[(size_t)i * t->width + rb_murmur2_32(item, len, i) % t->width];
        if (b->fp == fp && (!in_heap || b->count >= heap_min) && b->count > best) best = b->count;
    }
    return best;
}

size_t rb_topk_list(const rb_topk *t, const rb_tk_entry **out)
{
    size_t n = 0;
    for (uint32_t i = 0; i < t->k; i++) out[n++] = &t->heap[i];
    /* insertion sort by count, heaviest first, stable (the heap is small) */
    for (size_t i = 1; i < n; i++) {
        const rb_tk_entry *x = out[i];
        size_t j = i;
        for (; j > 0 && out[j - 1]->count < x->count; j--) out[j] = out[j - 1];
        out[j] = x;
    }
    size_t m = 0;
    while (m < n && out[m]->count) m++;
    return m;
}

size_t rb_topk_memory(const rb_topk *t)
{
    return sizeof *t + (size_t)t->width * t->depth * sizeof(rb_tk_bucket) + (size_t)t->k * 24;
}

/* Dimensions a Top-K may have: none zero, the decay in (0, 1], the arrays within RB_MAX_BYTES. */
static bool rb_topk_dims_ok(uint64_t k, uint64_t width, uint64_t depth, double decay)
{
    return k && width && depth && k <= UINT32_MAX && width <= UINT32_MAX && depth <= UINT32_MAX &&
           decay > 0 && decay <= 1 && width * depth * 8 + k * 24 <= RB_MAX_BYTES;
}

static rb_topk *rb_topk_make(uint32_t k, uint32_t width, uint32_t depth, double decay)
{
    if (!rb_topk_dims_ok(k, width, depth, decay)) return NULL;
    rb_topk *t = zalloc(sizeof *t);
    if (!t) return NULL;
    t->k = k;
    t->width = width;
    t->depth = depth;
    t->decay = decay;
    t->buckets = zalloc((size_t)width * depth * sizeof(rb_tk_bucket));
    t->heap = zalloc((size_t)k * sizeof(rb_tk_entry));
    if (!t->buckets || !t->heap) {
        rb_topk_free(t);
        return NULL;
    }
    return t;
}

/* RedisBloom's heap entries in RDB: 24 bytes each (fingerprint u32, item length u32, a pointer's 8
 * bytes, count u32, 4 bytes of padding), then one string per entry: the item and a NUL, or "" plus its
 * NUL for an empty slot. */
#define RB_TK_ENTRY_BYTES 24

rb_topk *rb_topk_rdb_load(RedisModuleIO *io, int encver)
{
    if (encver != 0) return NULL;
    uint64_t k = RedisModule_LoadUnsigned(io), width = RedisModule_LoadUnsigned(io), depth = RedisModule_LoadUnsigned(io);
    double decay = RedisModule_LoadDouble(io);
    rb_topk *t = NULL;
    char *data = NULL, *heap = NULL;
    size_t dn = 0, hn = 0;
    /* the arrays are read (at the sizes the RDB holds) and their sizes checked before the sketch is
     * made: a damaged k, width or depth must not make the load allocate what the RDB does not hold */
    if (RedisModule_IsIOError(io) || !rb_topk_dims_ok(k, width, depth, decay)) goto bad;
    data = RedisModule_LoadStringBuffer(io, &dn);
    if (RedisModule_IsIOError(io) || !data || dn != (size_t)width * depth * sizeof(rb_tk_bucket)) goto bad;
    heap = RedisModule_LoadStringBuffer(io, &hn);
    if (RedisModule_IsIOError(io) || !heap || hn != (size_t)k * RB_TK_ENTRY_BYTES) goto bad;
    if (!(t = rb_topk_make((uint32_t)k, (uint32_t)width, (uint32_t)depth, decay))) goto bad;
    memcpy(t->buckets, data, dn);
    for (uint32_t i = 0; i < k; i++) {
        const uint8_t *e = (const uint8_t *)heap + (size_t)i * RB_TK_ENTRY_BYTES;
        memcpy(&t->heap[i].fp, e, 4);
        memcpy(&t->heap[i].len, e + 4, 4);
        memcpy(&t->heap[i].count, e + 16, 4);
    }
    for (uint32_t i = 0; i < k; i++) {
        size_t n = 0;
        char *s = RedisModule_LoadStringBuffer(io, &n);
        if (RedisModule_IsIOError(io) || !s || n == 0) {
            if (s) RedisModule_Free(s);
            goto bad;
        }
        rb_tk_entry *e = &t->heap[i];
        /* RedisBloom saves an item up to its first NUL (an item holding a NUL loses its tail there, in
         * RedisBloom too): the item is the bytes before the first NUL, whatever length the heap entry
         * says, and none (an empty slot) when there are none, as the save writes them back */
        size_t have = strnlen(s, n - 1);
        if (have == 0) {
            e->item = NULL;
        } else {
            if (have > UINT32_MAX || !(e->item = zalloc(have + 1))) {
                RedisModule_Free(s);
                goto bad;
            }
            memcpy(e->item, s, have);
            e->len = (uint32_t)have;
        }
        RedisModule_Free(s);
    }
    RedisModule_Free(data);
    RedisModule_Free(heap);
    return t;
bad:
    if (data) RedisModule_Free(data);
    if (heap) RedisModule_Free(heap);
    rb_topk_free(t);
    RedisModule_LogIOError(io, "warning", "bloomkit: a RedisBloom Top-K value is damaged; not loaded");
    return NULL;
}

void rb_topk_rdb_save(RedisModuleIO *io, const rb_topk *t)
{
    RedisModule_SaveUnsigned(io, t->k);
    RedisModule_SaveUnsigned(io, t->width);
    RedisModule_SaveUnsigned(io, t->depth);
    RedisModule_SaveDouble(io, t->decay);
    RedisModule_SaveStringBuffer(io, (const char *)t->buckets, (size_t)t->width * t->depth * sizeof(rb_tk_bucket));
    size_t hn = (size_t)t->k * RB_TK_ENTRY_BYTES;
    uint8_t *h = RedisModule_Calloc(1, hn ? hn : 1);
    for (uint32_t i = 0; i < t->k; i++) {
        uint8_t *e = h + (size_t)i * RB_TK_ENTRY_BYTES;
        memcpy(e, &t->heap[i].fp, 4);
        memcpy(e + 4, &t->heap[i].len, 4);
        memcpy(e + 16, &t->heap[i].count, 4);
    }
    RedisModule_SaveStringBuffer(io, (const char *)h, hn);
    RedisModule_Free(h);
    for (uint32_t i = 0; i < t->k; i++) {
        const rb_tk_entry *e = &t->heap[i];
        if (e->item) RedisModule_SaveStringBuffer(io, e->item, strlen(e->item) + 1);
        else RedisModule_SaveStringBuffer(io, "", 1);
    }
}

/* ---- blobs: 'C' width depth total cells | 'T' k width depth decay buckets, then per entry fp len count
 * has-item, then the items' bytes ---- */

typedef struct blob {
    uint8_t *p;
    size_t n, cap;
} blob;
static void put(blob *b, const void *p, size_t n)
{
    if (b->n + n <= b->cap) memcpy(b->p + b->n, p, n);
    b->n += n;
}

static size_t write_blob(const void *v, char kind, blob *b)
{
    b->n = 0;
    put(b, &kind, 1);
    if (kind == 'C') {
        const rb_cms *c = v;
        put(b, &c->width, 8);
        put(b, &c->depth, 8);
        put(b, &c->total, 8);
        put(b, c->cells, (size_t)(c->width * c->depth * 4));
    } else {
        const rb_topk *t = v;
        put(b, &t->k, 4);
        put(b, &t->width, 4);
        put(b, &t->depth, 4);
        put(b, &t->decay, 8);
        put(b, t->buckets, (size_t)t->width * t->depth * sizeof(rb_tk_bucket));
        for (uint32_t i = 0; i < t->k; i++) {
            uint8_t has = t->heap[i].item != NULL;
            put(b, &t->heap[i].fp, 4);
            put(b, &t->heap[i].len, 4);
            put(b, &t->heap[i].count, 4);
            put(b, &has, 1);
        }
        for (uint32_t i = 0; i < t->k; i++)
            if (t->heap[i].item) put(b, t->heap[i].item, t->heap[i].len);
    }
    return b->n;
}

void *rb_sketch_blob(const void *v, char kind, size_t *len)
{
    blob b = { NULL, 0, 0 };
    b.cap = write_blob(v, kind, &b);
    if (!(b.p = RedisModule_Alloc(b.cap))) return NULL;
    *len = write_blob(v, kind, &b);
    return b.p;
}

typedef struct rd {
    const uint8_t *p;
    size_t n, off;
} rd;
static bool get(rd *r, void *dst, size_t n)
{
    if (r->n - r->off < n) return false;
    memcpy(dst, r->p + r->off, n);
    r->off += n;
    return true;
}

void *rb_sketch_from_blob(const void *p, size_t n, char *kind)
{
    rd r = { p, n, 0 };
    if (!get(&r, kind, 1)) return NULL;
    if (*kind == 'C') {
        uint64_t w, d, total;
        if (!get(&r, &w, 8) || !get(&r, &d, 8) || !get(&r, &total, 8)) return NULL;
        if (!w || !d || w > RB_MAX_BYTES / 4 / d || r.n - r.off != w * d * 4) return NULL;
        rb_cms *c = rb_cms_make(w, d);
        if (!c) return NULL;
        get(&r, c->cells, (size_t)(w * d * 4));
        c->total = total;
        return c;
    }
    if (*kind != 'T') return NULL;
    uint32_t k, w, d;
    double decay;
    if (!get(&r, &k, 4) || !get(&r, &w, 4) || !get(&r, &d, 4) || !get(&r, &decay, 8)) return NULL;
    rb_topk *t = rb_topk_make(k, w, d, decay);
    if (!t) return NULL;
    if (!get(&r, t->buckets, (size_t)w * d * sizeof(rb_tk_bucket))) goto bad;
    uint8_t *has = RedisModule_Calloc(k, 1);
    for (uint32_t i = 0; i < k; i++)
        if (!get(&r, &t->heap[i].fp, 4) || !get(&r, &t->heap[i].len, 4) || !get(&r, &t->heap[i].count, 4) ||
            !get(&r, &has[i], 1)) {
            RedisModule_Free(has);
            goto bad;
        }
    for (uint32_t i = 0; i < k; i++) {
        if (!has[i]) continue;
        size_t len = t->heap[i].len;
        if (r.n - r.off < len || !(t->heap[i].item = zalloc(len + 1))) {
            RedisModule_Free(has);
            goto bad;
        }
        get(&r, t->heap[i].item, len);
    }
    RedisModule_Free(has);
    if (r.off != r.n) goto bad;
    return t;
bad:
    rb_topk_free(t);
    return NULL;
}
