/*
 * RedisBloom 2.x's cuckoo filter (data type MBbloomCF), written from its published format.
 *
 * An item's hash is h = MurmurHash64A(item, seed 0); its fingerprint f = h mod 255 + 1 (one byte,
 * never 0, which marks an empty slot); its buckets are i1 = h and i2 = h XOR (f * 0x5bd1e995), both
 * taken modulo the table's bucket count (a power of two, so i2 of i2 is i1 again, in every table of
 * the chain). Table t has first_buckets * expansion^t buckets of bucket_size one-byte slots; the slot
 * offset of a bucket is (i mod buckets) * bucket_size kept to 32 bits, as RedisBloom computes it.
 *
 * Insert: the first empty slot in i1 then i2, trying the newest table first and then the older ones;
 * then up to max_iterations kicks in the newest table (the victim slot rotates, each evicted
 * fingerprint goes to its other bucket), undone if they fail; then, unless expansion is 0, a new
 * table and the insert again. Delete clears the first matching slot, newest table first; when more
 * than a tenth of the items have been deleted from a chain of several tables, fingerprints of the
 * newer tables are moved into older ones where they fit and an emptied newest table is freed.
 */
#include "module.h"
#include "rb_compat.h"

#include <math.h>
#include <string.h>

#define RB_CF_MAX_BUCKETS 0x00FFFFFFFFFFFFFFull
#define RB_ALT_MUL 0x5bd1e995ull

typedef struct rb_key {
    uint64_t h1, h2;
    uint8_t fp;
} rb_key;

static uint64_t alt_index(uint8_t fp, uint64_t i) { return i ^ ((uint64_t)fp * RB_ALT_MUL); }

static rb_key key_of(const void *item, size_t len)
{
    uint64_t h = rb_murmur64a(item, len, 0);
    rb_key k;
    k.fp = (uint8_t)(h % 255 + 1);
    k.h1 = h;
    k.h2 = alt_index(k.fp, h);
    return k;
}

static uint8_t *bucket(const rb_cuckoo *cf, const rb_table *t, uint64_t h)
{
    uint32_t off = (uint32_t)((h % t->nbuckets) * cf->bucket_size);
    return t->data + off;
}

static uint8_t *find_in(const rb_cuckoo *cf, uint8_t *b, uint8_t fp)
{
    for (uint16_t i = 0; i < cf->bucket_size; i++)
        if (b[i] == fp) return b + i;
    return NULL;
}

static unsigned count_in(const rb_cuckoo *cf, const uint8_t *b, uint8_t fp)
{
    unsigned n = 0;
    for (uint16_t i = 0; i < cf->bucket_size; i++) n += b[i] == fp;
    return n;
}

void rb_cuckoo_free(rb_cuckoo *cf)
{
    if (!cf) return;
    for (uint16_t i = 0; i < cf->ntables; i++) RedisModule_Free(cf->tables[i].data);
    RedisModule_Free(cf->tables);
    RedisModule_Free(cf);
}

static bool contains_key(const rb_cuckoo *cf, const rb_key *k)
{
    for (uint16_t t = 0; t < cf->ntables; t++) {
        const rb_table *tb = &cf->tables[t];
        if (find_in(cf, bucket(cf, tb, k->h1), k->fp) || find_in(cf, bucket(cf, tb, k->h2), k->fp)) return true;
    }
    return false;
}

bool rb_cuckoo_contains(const rb_cuckoo *cf, const void *item, size_t len)
{
    rb_key k = key_of(item, len);
    return contains_key(cf, &k);
}

uint64_t rb_cuckoo_count(const rb_cuckoo *cf, const void *item, size_t len)
{
    rb_key k = key_of(item, len);
    uint64_t n = 0;
    for (uint16_t t = 0; t < cf->ntables; t++) {
        const rb_table *tb = &cf->tables[t];
        /* both buckets are counted, also when they are the same one (as RedisBloom counts) */
        n += count_in(cf, bucket(cf, tb, k.h1), k.fp) + count_in(cf, bucket(cf, tb, k.h2), k.fp);
    }
    return n;
}

/* ---- compaction (after deletes) ---- */

/* Move the fingerprint in slot s of bucket bi of table t into an older table; 1 moved, 0 empty slot,
 * -1 no room. */
static int relocate(rb_cuckoo *cf, uint16_t t, uint64_t bi, uint8_t *slot)
{
    uint8_t fp = *slot;
    if (!fp) return 0;
    uint64_t h1 = bi, h2 = alt_index(fp, bi);
    for (uint16_t o = 0; o < t; o++) {
        rb_table *tb = &cf->tables[o];
        uint8_t *e = find_in(cf, bucket(cf, tb, h1), 0);
        if (!e) e = find_in(cf, bucket(cf, tb, h2), 0);
        if (e) {
            *e = fp;
            *slot = 0;
            return 1;
        }
    }
    return -1;
}

static void compact(rb_cuckoo *cf, bool keep_going)
{
    for (uint16_t t = cf->ntables; --t > 0;) {
        rb_table *tb = &cf->tables[t];
        bool all = true;
        for (uint64_t bi = 0; bi < tb->nbuckets; bi++)
            for (uint16_t s = 0; s < cf->bucket_size; s++)
                if (relocate(cf, t, bi, &tb->data[bi * cf->bucket_size + s]) < 0) all = false;
        if (all && t == cf->ntables - 1) {
            RedisModule_Free(tb->data);
            tb->data = NULL;
            cf->ntables--;
        }
        if (!all && !keep_going) break;
    }
    cf->deletes = 0;
}

bool rb_cuckoo_remove(rb_cuckoo *cf, const void *item, size_t len)
{
    rb_key k = key_of(item, len);
    for (uint16_t t = cf->ntables; t-- > 0;) {
        rb_table *tb = &cf->tables[t];
        uint8_t *s = find_in(cf, bucket(cf, tb, k.h1), k.fp);
        if (!s) s = find_in(cf, bucket(cf, tb, k.h2), k.fp);
        if (s) {
            *s = 0;
            cf->items--;
            cf->deletes++;
            if (cf->ntables > 1 && (double)cf->deletes > (double)cf->items * 0.10) compact(cf, false);
            return true;
        }
    }
    return false;
}

/* ---- insert ---- */

static uint64_t table_bytes(const rb_cuckoo *cf, uint64_t nbuckets) { return nbuckets * cf->bucket_size; }

static rb_add_result grow(rb_cuckoo *cf, uint64_t max_bytes)
{
    if (cf->ntables == UINT16_MAX) return RB_TOOBIG;
    double g = pow((double)cf->expansion, (double)cf->ntables);
    if (!(g < 1.8e19)) return RB_TOOBIG;
    uint64_t growth = (uint64_t)g;
    if (growth == 0 || growth > RB_CF_MAX_BUCKETS / cf->nbuckets) return RB_TOOBIG;
    uint64_t nb = cf->nbuckets * growth;
    uint64_t total = 0;
    for (uint16_t t = 0; t < cf->ntables; t++) total += table_bytes(cf, cf->tables[t].nbuckets);
    uint64_t add = table_bytes(cf, nb);
    if (add > max_bytes || total > max_bytes - add) return RB_TOOBIG;
    uint8_t *data = rb_alloc_zero((size_t)add);
    if (!data) return RB_NOMEM;
    cf->tables = RedisModule_Realloc(cf->tables, sizeof *cf->tables * ((size_t)cf->ntables + 1));
    cf->tables[cf->ntables].nbuckets = nb;
    cf->tables[cf->ntables].data = data;
    cf->ntables++;
    return RB_ADDED;
}

static bool kick_insert(rb_cuckoo *cf, rb_table *tb, const rb_key *k)
{
    uint64_t nb = tb->nbuckets;
    uint16_t b = cf->bucket_size;
    uint8_t fp = k->fp;
    uint32_t victim = 0;
    uint64_t i = k->h1 % nb;
    for (uint16_t n = 0; n < cf->max_iterations; n++) {
        uint8_t *slot = &tb->data[i * b + victim];
        uint8_t out = *slot;
        *slot = fp;
        fp = out;
        i = alt_index(fp, i) % nb;
        uint8_t *e = find_in(cf, &tb->data[i * b], 0);
        if (e) {
            *e = fp;
            return true;
        }
        victim = (victim + 1) % b;
    }
    /* undo the kicks, newest first, so the table is as it was */
    for (uint16_t n = 0; n < cf->max_iterations; n++) {
        victim = (victim + b - 1) % b;
        i = alt_index(fp, i) % nb;
        uint8_t *slot = &tb->data[i * b + victim];
        uint8_t out = *slot;
        *slot = fp;
        fp = out;
    }
    return false;
}

rb_add_result rb_cuckoo_add(rb_cuckoo *cf, const void *item, size_t len, bool nx, uint64_t max_bytes)
{
    rb_key k = key_of(item, len);
    if (nx && contains_key(cf, &k)) return RB_PRESENT;
    for (;;) {
        for (uint16_t t = cf->ntables; t-- > 0;) {
            rb_table *tb = &cf->tables[t];
            uint8_t *e = find_in(cf, bucket(cf, tb, k.h1), 0);
            if (!e) e = find_in(cf, bucket(cf, tb, k.h2), 0);
            if (e) {
                *e = k.fp;
                cf->items++;
                return RB_ADDED;
            }
        }
        if (kick_insert(cf, &cf->tables[cf->ntables - 1], &k)) {
            cf->items++;
            return RB_ADDED;
        }
        if (cf->expansion == 0) return RB_FULL;
        rb_add_result r = grow(cf, max_bytes);
        if (r != RB_ADDED) return r;
    }
}

size_t rb_cuckoo_memory(const rb_cuckoo *cf)
{
    size_t n = RedisModule_MallocSize ? RedisModule_MallocSize((void *)cf) : sizeof *cf;
    n += RedisModule_MallocSize && cf->tables ? RedisModule_MallocSize(cf->tables) : sizeof *cf->tables * cf->ntables;
    for (uint16_t t = 0; t < cf->ntables; t++)
        n += RedisModule_MallocSize && cf->tables[t].data ? RedisModule_MallocSize(cf->tables[t].data)
                                                          : (size_t)table_bytes(cf, cf->tables[t].nbuckets);
    return n;
}

rb_cuckoo *rb_cuckoo_clone(const rb_cuckoo *cf)
{
    rb_cuckoo *d = RedisModule_Calloc(1, sizeof *d);
    *d = *cf;
    d->ntables = 0;
    d->tables = RedisModule_Calloc(cf->ntables, sizeof *d->tables);
    for (uint16_t t = 0; t < cf->ntables; t++) {
        size_t n = (size_t)table_bytes(cf, cf->tables[t].nbuckets);
        uint8_t *p = RedisModule_TryAlloc ? RedisModule_TryAlloc(n) : RedisModule_Alloc(n);
        if (!p) {
            rb_cuckoo_free(d);
            return NULL;
        }
        memcpy(p, cf->tables[t].data, n);
        d->tables[t].nbuckets = cf->tables[t].nbuckets;
        d->tables[t].data = p;
        d->ntables++;
    }
    return d;
}

/* RedisBloom's rounding up to a power of two (0 stays 0, as there). */
static uint64_t next_pow2(uint64_t n)
{
    n--;
    for (int s = 1; s < 64; s <<= 1) n |= n >> s;
    return n + 1;
}

rb_cuckoo *rb_cuckoo_new(uint64_t capacity, uint16_t bucket_size, uint16_t max_iterations, uint16_t expansion,
                         uint64_t max_bytes, rb_add_result *why)
{
    *why = RB_TOOBIG;
    if (bucket_size == 0 || max_iterations == 0) return NULL;
    uint64_t nb = next_pow2(capacity / bucket_size);
    if (nb == 0) nb = 1;
    if (nb > RB_CF_MAX_BUCKETS || nb > max_bytes / bucket_size) return NULL;
    rb_cuckoo *cf = RedisModule_Calloc(1, sizeof *cf);
    cf->nbuckets = nb;
    cf->bucket_size = bucket_size;
    cf->max_iterations = max_iterations;
    cf->expansion = (uint16_t)next_pow2(expansion);
    cf->tables = RedisModule_Calloc(1, sizeof *cf->tables);
    cf->tables[0].nbuckets = nb;
    cf->tables[0].data = rb_alloc_zero((size_t)table_bytes(cf, nb));
    if (!cf->tables[0].data) {
        RedisModule_Free(cf->tables);
        RedisModule_Free(cf);
        *why = RB_NOMEM;
        return NULL;
    }
    cf->ntables = 1;
    *why = RB_ADDED;
    return cf;
}

/* ---- RDB: RedisBloom's encodings ----
 * before version 4: ntables, buckets, items, then per table its array (every table `buckets` buckets;
 * bucket size 2, 20 iterations, expansion 1); version 4: ntables, buckets, items, deletes, bucket size,
 * max iterations, expansion, then per table its bucket count and its array. */

static bool cuckoo_params_ok(const rb_cuckoo *cf)
{
    return cf->bucket_size >= 1 && cf->bucket_size <= 255 && cf->nbuckets >= 1 &&
           cf->nbuckets <= RB_CF_MAX_BUCKETS && cf->ntables >= 1 && cf->max_iterations >= 1;
}

rb_cuckoo *rb_cuckoo_rdb_load(RedisModuleIO *io, int encver)
{
    if (encver < 0 || encver > 4) {
        RedisModule_LogIOError(io, "warning", "bloomkit: RedisBloom cuckoo filter of unknown encoding %d", encver);
        return NULL;
    }
    rb_cuckoo *cf = RedisModule_Calloc(1, sizeof *cf);
    uint64_t ntables = RedisModule_LoadUnsigned(io);
    cf->nbuckets = RedisModule_LoadUnsigned(io);
    cf->items = RedisModule_LoadUnsigned(io);
    uint64_t bs = 2, it = 20, ex = 1;
    if (encver >= 4) {
        cf->deletes = RedisModule_LoadUnsigned(io);
        bs = RedisModule_LoadUnsigned(io);
        it = RedisModule_LoadUnsigned(io);
        ex = RedisModule_LoadUnsigned(io);
    }
    if (RedisModule_IsIOError(io) || ntables == 0 || ntables > UINT16_MAX || bs == 0 || bs > 255 ||
        it == 0 || it > UINT16_MAX || ex > UINT16_MAX)
        goto bad;
    cf->bucket_size = (uint16_t)bs;
    cf->max_iterations = (uint16_t)it;
    cf->expansion = (uint16_t)ex;
    cf->tables = RedisModule_Calloc((size_t)ntables, sizeof *cf->tables);
    for (uint64_t t = 0; t < ntables; t++) {
        uint64_t nb = encver >= 4 ? RedisModule_LoadUnsigned(io) : cf->nbuckets;
        if (RedisModule_IsIOError(io) || nb == 0 || nb > RB_CF_MAX_BUCKETS) goto bad;
        size_t len = 0;
        char *buf = RedisModule_LoadStringBuffer(io, &len);
        if (RedisModule_IsIOError(io) || !buf) {
            if (buf) RedisModule_Free(buf);
            goto bad;
        }
        cf->tables[t].nbuckets = nb;
        cf->tables[t].data = (uint8_t *)buf;
        cf->ntables = (uint16_t)(t + 1);
        if ((uint64_t)len != nb * bs) goto bad;
    }
    if (!cuckoo_params_ok(cf)) goto bad;
    return cf;
bad:
    RedisModule_LogIOError(io, "warning", "bloomkit: damaged RedisBloom cuckoo filter (MBbloomCF) in RDB");
    rb_cuckoo_free(cf);
    return NULL;
}

void rb_cuckoo_rdb_save(RedisModuleIO *io, const rb_cuckoo *cf)
{
    RedisModule_SaveUnsigned(io, cf->ntables);
    RedisModule_SaveUnsigned(io, cf->nbuckets);
    RedisModule_SaveUnsigned(io, cf->items);
    RedisModule_SaveUnsigned(io, cf->deletes);
    RedisModule_SaveUnsigned(io, cf->bucket_size);
    RedisModule_SaveUnsigned(io, cf->max_iterations);
    RedisModule_SaveUnsigned(io, cf->expansion);
    for (uint16_t t = 0; t < cf->ntables; t++) {
        RedisModule_SaveUnsigned(io, cf->tables[t].nbuckets);
        RedisModule_SaveStringBuffer(io, (const char *)cf->tables[t].data,
                                     (size_t)table_bytes(cf, cf->tables[t].nbuckets));
    }
}

/* ---- SCANDUMP / LOADCHUNK ----
 * Header (little-endian, packed, 38 bytes): u64 items, u64 first-table buckets, u64 deletes, u64 tables,
 * u16 bucket size, u16 max iterations, u16 expansion. Then the tables' arrays in order; the iterator
 * after a chunk is 1 + the offset of its end in the concatenated arrays. */

static void w64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void w16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static uint64_t r64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 8; i-- > 0;) v = v << 8 | p[i];
    return v;
}
static uint16_t r16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

void rb_cuckoo_header_write(const rb_cuckoo *cf, uint8_t out[RB_CF_HEADER_SIZE])
{
    w64(out, cf->items);
    w64(out + 8, cf->nbuckets);
    w64(out + 16, cf->deletes);
    w64(out + 24, cf->ntables);
    w16(out + 32, cf->bucket_size);
    w16(out + 34, cf->max_iterations);
    w16(out + 36, cf->expansion);
}

static rb_table *table_at(const rb_cuckoo *cf, uint64_t off, uint64_t *in)
{
    for (uint16_t t = 0; t < cf->ntables; t++) {
        uint64_t n = table_bytes(cf, cf->tables[t].nbuckets);
        if (off < n) {
            *in = off;
            return &cf->tables[t];
        }
        off -= n;
    }
    return NULL;
}

bool rb_cuckoo_chunk(const rb_cuckoo *cf, long long iter, size_t max, const uint8_t **p, size_t *n, long long *next)
{
    if (iter < 1) return false;
    uint64_t in;
    rb_table *t = table_at(cf, (uint64_t)iter - 1, &in);
    if (!t) return false;
    uint64_t left = table_bytes(cf, t->nbuckets) - in;
    *n = left < max ? (size_t)left : max;
    *p = t->data + in;
    *next = iter + (long long)*n;
    return true;
}

rb_cuckoo *rb_cuckoo_from_header(const uint8_t *p, size_t n, uint64_t max_bytes, const char **err)
{
    *err = "not a RedisBloom cuckoo filter header (38 bytes)";
    if (n != RB_CF_HEADER_SIZE) return NULL;
    uint64_t ntables = r64(p + 24);
    rb_cuckoo *cf = RedisModule_Calloc(1, sizeof *cf);
    cf->items = r64(p);
    cf->nbuckets = r64(p + 8);
    cf->deletes = r64(p + 16);
    cf->bucket_size = r16(p + 32);
    cf->max_iterations = r16(p + 34);
    cf->expansion = r16(p + 36);
    *err = "invalid parameters in the header";
    if (ntables == 0 || ntables > UINT16_MAX || (cf->expansion == 0 && ntables > 1)) goto fail;
    cf->ntables = (uint16_t)ntables;
    bool ok = cuckoo_params_ok(cf) && !(cf->nbuckets & (cf->nbuckets - 1));
    cf->ntables = 0; /* no table allocated yet */
    if (!ok) goto fail;
    cf->tables = RedisModule_Calloc((size_t)ntables, sizeof *cf->tables);
    uint64_t total = 0;
    for (uint64_t t = 0; t < ntables; t++) {
        double g = pow((double)cf->expansion, (double)t);
        if (!(g < 1.8e19) || (uint64_t)g == 0 || (uint64_t)g > RB_CF_MAX_BUCKETS / cf->nbuckets) goto fail;
        uint64_t nb = cf->nbuckets * (uint64_t)g;
        uint64_t bytes = table_bytes(cf, nb);
        if (bytes > max_bytes || total > max_bytes - bytes) {
            *err = "the filter would exceed the size limit (MAX_FILTER_SIZE)";
            goto fail;
        }
        total += bytes;
        cf->tables[t].nbuckets = nb;
    }
    for (uint64_t t = 0; t < ntables; t++) {
        cf->tables[t].data = rb_alloc_zero((size_t)table_bytes(cf, cf->tables[t].nbuckets));
        cf->ntables = (uint16_t)(t + 1);
        if (!cf->tables[t].data) {
            *err = NULL; /* out of memory */
            goto fail;
        }
    }
    return cf;
fail:
    rb_cuckoo_free(cf);
    return NULL;
}

const char *rb_cuckoo_load_chunk(rb_cuckoo *cf, long long iter, const uint8_t *p, size_t n)
{
    if (n == 0 || iter <= 0 || (unsigned long long)(iter - 1) < n) return "bad position";
    uint64_t in;
    rb_table *t = table_at(cf, (uint64_t)iter - n - 1, &in);
    if (!t || n > table_bytes(cf, t->nbuckets) - in)
        return "it does not fit the filter's tables";
    memcpy(t->data + in, p, n);
    return NULL;
}
