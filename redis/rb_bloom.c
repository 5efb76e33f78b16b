/*
 * RedisBloom 2.x's scalable Bloom filter (data type MBbloom--), written from its published format.
 *
 * Hashing. An item gets two values (a, b): with the chain option FORCE64, a = MurmurHash64A(item, seed
 * 0xc6a4a7935bd1e995) and b = MurmurHash64A(item, seed a); without it, a = MurmurHash2(item, seed
 * 0x9747b28c) and b = MurmurHash2(item, seed a), both 32-bit values. Probe i (0 <= i < hashes) of a
 * link is bit (a + i * b) mod M, in 64-bit arithmetic, where M is 2^n2 for a power-of-two link (n2 > 0)
 * and the link's bit count otherwise; bit x is bit x % 8 of byte x / 8.
 *
 * Sizing. bpe = -ln(error) / ln(2)^2 and hashes = ceil(ln(2) * bpe), with RedisBloom's rounded
 * constants (0.480453013918201 and 0.693147180559945: a link's hash count must come out exactly as
 * RedisBloom's, since a loaded link is checked against it). NOROUND links have entries * bpe bits,
 * other links the next power of two above (and the extra bits counted as extra entries); either is
 * rounded up to whole 64-bit words. A full chain adds a link of growth * entries items at half the
 * error of the last link; a NO_SCALING chain refuses the item instead. Queries look at the newest
 * link first.
 */
#include "module.h"
#include "rb_compat.h"

#include <math.h>
#include <string.h>

/* ---- hashes ---- */

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t rb_murmur2_32(const void *key, size_t len, uint32_t seed)
{
    const uint32_t m = 0x5bd1e995u;
    const uint8_t *p = key;
    uint32_t h = seed ^ (uint32_t)len;
    for (; len >= 4; len -= 4, p += 4) {
        uint32_t k = le32(p) * m;
        k = (k ^ (k >> 24)) * m;
        h = (h * m) ^ k;
    }
    switch (len) {
    case 3: h ^= (uint32_t)p[2] << 16; /* fall through */
    case 2: h ^= (uint32_t)p[1] << 8;  /* fall through */
    case 1: h = (h ^ p[0]) * m; break;
    default: break;
    }
    h = (h ^ (h >> 13)) * m;
    return h ^ (h >> 15);
}

uint64_t rb_murmur64a(const void *key, size_t len, uint64_t seed)
{
    const uint64_t m = 0xc6a4a7935bd1e995ull;
    const uint8_t *p = key;
    uint64_t h = seed ^ ((uint64_t)len * m);
    for (size_t n = len / 8; n; n--, p += 8) {
        uint64_t k = le64(p) * m;
        k = (k ^ (k >> 47)) * m;
        h = (h ^ k) * m;
    }
    size_t t = len & 7;
    if (t) {
        uint64_t tail = 0;
        for (size_t i = t; i-- > 0;) tail = tail << 8 | p[i];
        h = (h ^ tail) * m;
    }
    h = (h ^ (h >> 47)) * m;
    return h ^ (h >> 47);
}

typedef struct rb_hv {
    uint64_t a, b;
} rb_hv;

static rb_hv chain_hash(const rb_chain *c, const void *item, size_t len)
{
    rb_hv h;
    if (c->options & RB_BLOOM_FORCE64) {
        h.a = rb_murmur64a(item, len, 0xc6a4a7935bd1e995ull);
        h.b = rb_murmur64a(item, len, h.a);
    } else {
        h.a = rb_murmur2_32(item, len, 0x9747b28cu);
        h.b = rb_murmur2_32(item, len, (uint32_t)h.a);
    }
    return h;
}

/* ---- links ---- */

#define RB_LN2 0.693147180559945
#define RB_LN2_SQUARED 0.480453013918201

static double bits_per_entry(double error)
{
    double bpe = -(log(error) / RB_LN2_SQUARED);
    return bpe < 0 ? -bpe : bpe;
}

static uint64_t link_mod(const rb_link *l) { return l->n2 ? (uint64_t)1 << l->n2 : l->nbits; }

static bool link_test(const rb_link *l, rb_hv h)
{
    uint64_t mod = link_mod(l);
    for (uint32_t i = 0; i < l->hashes; i++) {
        uint64_t x = (h.a + (uint64_t)i * h.b) % mod;
        if (!(l->bits[x >> 3] & (1u << (x & 7)))) return false;
    }
    return true;
}

static void link_set(rb_link *l, rb_hv h)
{
    uint64_t mod = link_mod(l);
    for (uint32_t i = 0; i < l->hashes; i++) {
        uint64_t x = (h.a + (uint64_t)i * h.b) % mod;
        l->bits[x >> 3] |= (uint8_t)(1u << (x & 7));
    }
}

/* The checks a loaded link must pass (RedisBloom's own, so that what it accepts we accept). */
static bool link_valid(const rb_link *l)
{
    if (!(l->error > 0 && l->error < 1) || l->n2 > 63) return false;
    if (l->n2 && l->nbits < ((uint64_t)1 << l->n2)) return false;
    if (l->nbits == 0 || l->bytes > UINT64_MAX / 8 || l->nbits != l->bytes * 8) return false;
    if (!isfinite(l->bpe)) return false;
    double hc = ceil(RB_LN2 * l->bpe);
    return hc >= 0 && hc < 1e9 && l->hashes == (uint32_t)(int)hc;
}

/* Geometry of a new link (no array yet). false for parameters RedisBloom would refuse. */
static bool link_geometry(rb_link *l, uint64_t entries, double error, uint32_t options)
{
    if (entries < 1 || !(error > 0 && error < 1)) return false;
    memset(l, 0, sizeof *l);
    l->error = error;
    l->entries = entries;
    l->bpe = bits_per_entry(error);
    uint64_t bits;
    if (options & RB_BLOOM_ENTS_IS_BITS) {
        if (entries > 63) return false;
        l->n2 = (uint8_t)entries;
        bits = (uint64_t)1 << l->n2;
        l->entries = (uint64_t)((double)bits / l->bpe);
    } else if (options & RB_BLOOM_NOROUND) {
        double b = (double)entries * l->bpe;
        if (!(b < 1.8e19)) return false;
        bits = (uint64_t)b;
        if (bits == 0) bits = 1;
        l->n2 = 0;
    } else {
        double b = (double)entries * l->bpe;
        double e2 = logb(b);
        if (!(e2 < 63)) return false;
        l->n2 = (uint8_t)(e2 + 1);
        bits = (uint64_t)1 << l->n2;
        double spare_bits = (double)bits - b;
        uint64_t spare = (uint64_t)spare_bits;
        l->entries += (uint64_t)((double)spare / l->bpe);
    }
    l->bytes = bits % 64 ? (bits / 64 + 1) * 8 : bits / 8;
    l->nbits = l->bytes * 8;
    l->hashes = (uint32_t)(int)ceil(RB_LN2 * l->bpe);
    return true;
}

/* ---- the chain ---- */

void rb_chain_free(rb_chain *c)
{
    if (!c) return;
    for (uint64_t i = 0; i < c->nlinks; i++) RedisModule_Free(c->links[i].bits);
    RedisModule_Free(c->links);
    RedisModule_Free(c);
}

bool rb_chain_contains(const rb_chain *c, const void *item, size_t len)
{
    rb_hv h = chain_hash(c, item, len);
    for (uint64_t i = c->nlinks; i-- > 0;)
        if (link_test(&c->links[i], h)) return true;
    return false;
}

static uint64_t chain_bytes(const rb_chain *c)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < c->nlinks; i++) n += c->links[i].bytes;
    return n;
}

/* Append a link (array zeroed). */
static rb_add_result chain_add_link(rb_chain *c, uint64_t entries, double error, uint64_t max_bytes)
{
    rb_link l;
    if (!link_geometry(&l, entries, error, c->options)) return RB_TOOBIG;
    if (l.bytes > max_bytes || chain_bytes(c) > max_bytes - l.bytes) return RB_TOOBIG;
    l.bits = rb_alloc_zero((size_t)l.bytes);
    if (!l.bits) return RB_NOMEM;
    c->links = RedisModule_Realloc(c->links, sizeof *c->links * (size_t)(c->nlinks + 1));
    c->links[c->nlinks++] = l;
    return RB_ADDED;
}

rb_add_result rb_chain_add(rb_chain *c, const void *item, size_t len, uint64_t max_bytes)
{
    rb_hv h = chain_hash(c, item, len);
    for (uint64_t i = c->nlinks; i-- > 0;)
        if (link_test(&c->links[i], h)) return RB_PRESENT;
    rb_link *cur = &c->links[c->nlinks - 1];
    if (cur->size >= cur->entries) {
        if (c->options & RB_BLOOM_NO_SCALING) return RB_FULL;
        uint64_t entries;
        if (c->growth == 0 || __builtin_mul_overflow(cur->entries, (uint64_t)c->growth, &entries)) return RB_TOOBIG;
        rb_add_result r = chain_add_link(c, entries, cur->error * 0.5, max_bytes);
        if (r != RB_ADDED) return r;
        cur = &c->links[c->nlinks - 1];
    }
    link_set(cur, h);
    cur->size++;
    c->size++;
    return RB_ADDED;
}

uint64_t rb_chain_capacity(const rb_chain *c)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < c->nlinks; i++) n += c->links[i].entries;
    return n;
}

static size_t block_size(const void *p, size_t asked)
{
    return RedisModule_MallocSize && p ? RedisModule_MallocSize((void *)p) : asked;
}

size_t rb_chain_memory(const rb_chain *c)
{
    size_t n = block_size(c, sizeof *c) + block_size(c->links, sizeof *c->links * (size_t)c->nlinks);
    for (uint64_t i = 0; i < c->nlinks; i++) n += block_size(c->links[i].bits, (size_t)c->links[i].bytes);
    return n;
}

rb_chain *rb_chain_new(uint64_t capacity, double error, uint32_t options, uint32_t growth, uint64_t max_bytes,
                       rb_add_result *why)
{
    rb_chain *c = RedisModule_Calloc(1, sizeof *c);
    c->options = options;
    c->growth = growth;
    double e = (options & RB_BLOOM_NO_SCALING) ? error : error * 0.5;
    *why = chain_add_link(c, capacity, e, max_bytes);
    if (*why != RB_ADDED) {
        rb_chain_free(c);
        return NULL;
    }
    return c;
}

rb_chain *rb_chain_clone(const rb_chain *c)
{
    rb_chain *d = RedisModule_Calloc(1, sizeof *d);
    *d = *c;
    d->links = RedisModule_Calloc((size_t)c->nlinks, sizeof *d->links);
    d->nlinks = 0;
    for (uint64_t i = 0; i < c->nlinks; i++) {
        d->links[i] = c->links[i];
        d->links[i].bits = RedisModule_TryAlloc ? RedisModule_TryAlloc((size_t)c->links[i].bytes)
                                                : RedisModule_Alloc((size_t)c->links[i].bytes);
        if (!d->links[i].bits) {
            rb_chain_free(d);
            return NULL;
        }
        memcpy(d->links[i].bits, c->links[i].bits, (size_t)c->links[i].bytes);
        d->nlinks++;
    }
    return d;
}

/* ---- RDB: RedisBloom's encodings ----
 * version 0: size, nfilters, then per link entries, error, hashes, bpe, array, size (bits from entries*bpe)
 * version 1: adds bits and n2 per link (before the array)
 * version 2, 3: adds options after nfilters
 * version 4: adds growth after options (before: 2) */

#define RB_MAX_LINKS ((uint64_t)1 << 20)

static bool chain_sane(const rb_chain *c)
{
    if (c->options & ~RB_BLOOM_OPTIONS) return false;
    uint64_t total = 0;
    for (uint64_t i = 0; i < c->nlinks; i++) {
        if (c->links[i].size > UINT64_MAX - total) return false;
        total += c->links[i].size;
    }
    return total == c->size;
}

rb_chain *rb_chain_rdb_load(RedisModuleIO *io, int encver)
{
    if (encver < 0 || encver > 4) {
        RedisModule_LogIOError(io, "warning", "bloomkit: RedisBloom Bloom filter of unknown encoding %d", encver);
        return NULL;
    }
    rb_chain *c = RedisModule_Calloc(1, sizeof *c);
    c->size = RedisModule_LoadUnsigned(io);
    uint64_t n = RedisModule_LoadUnsigned(io);
    c->options = 0;
    c->growth = 2;
    if (encver >= 2) c->options = (uint32_t)RedisModule_LoadUnsigned(io);
    if (encver >= 4) c->growth = (uint32_t)RedisModule_LoadUnsigned(io);
    if (RedisModule_IsIOError(io) || n == 0 || n > RB_MAX_LINKS) goto bad;
    for (uint64_t i = 0; i < n; i++) {
        rb_link l;
        memset(&l, 0, sizeof l);
        l.entries = RedisModule_LoadUnsigned(io);
        l.error = RedisModule_LoadDouble(io);
        l.hashes = (uint32_t)RedisModule_LoadUnsigned(io);
        l.bpe = RedisModule_LoadDouble(io);
        if (encver == 0) {
            double b = (double)l.entries * l.bpe;
            l.nbits = b >= 0 && b < 1.8e19 ? (uint64_t)b : 0;
        } else {
            l.nbits = RedisModule_LoadUnsigned(io);
            uint64_t n2 = RedisModule_LoadUnsigned(io);
            l.n2 = n2 > 255 ? 255 : (uint8_t)n2;
        }
        if (RedisModule_IsIOError(io)) goto bad;
        size_t len = 0;
        char *buf = RedisModule_LoadStringBuffer(io, &len);
        if (RedisModule_IsIOError(io) || !buf) {
            if (buf) RedisModule_Free(buf);
            goto bad;
        }
        l.bits = (uint8_t *)buf;
        l.bytes = len;
        c->links = RedisModule_Realloc(c->links, sizeof *c->links * (size_t)(c->nlinks + 1));
        c->links[c->nlinks++] = l; /* owned by the chain from here */
        if (len < (l.nbits + 7) / 8 || !link_valid(&l)) goto bad;
        c->links[c->nlinks - 1].size = RedisModule_LoadUnsigned(io);
        if (RedisModule_IsIOError(io)) goto bad;
    }
    if (!chain_sane(c)) goto bad;
    return c;
bad:
    RedisModule_LogIOError(io, "warning", "bloomkit: damaged RedisBloom Bloom filter (MBbloom--) in RDB");
    rb_chain_free(c);
    return NULL;
}

void rb_chain_rdb_save(RedisModuleIO *io, const rb_chain *c)
{
    RedisModule_SaveUnsigned(io, c->size);
    RedisModule_SaveUnsigned(io, c->nlinks);
    RedisModule_SaveUnsigned(io, c->options);
    RedisModule_SaveUnsigned(io, c->growth);
    for (uint64_t i = 0; i < c->nlinks; i++) {
        const rb_link *l = &c->links[i];
        RedisModule_SaveUnsigned(io, l->entries);
        RedisModule_SaveDouble(io, l->error);
        RedisModule_SaveUnsigned(io, l->hashes);
        RedisModule_SaveDouble(io, l->bpe);
        RedisModule_SaveUnsigned(io, l->nbits);
        RedisModule_SaveUnsigned(io, l->n2);
        RedisModule_SaveStringBuffer(io, (const char *)l->bits, (size_t)l->bytes);
        RedisModule_SaveUnsigned(io, l->size);
    }
}

/* ---- SCANDUMP / LOADCHUNK: RedisBloom's header and chunks ----
 * Header (little-endian, packed): u64 size, u32 nfilters, u32 options, u32 growth, then per link
 * u64 bytes, u64 bits, u64 size, f64 error, f64 bpe, u32 hashes, u64 entries, u8 n2 (53 bytes). */

#define RB_HDR_FIXED 20
#define RB_HDR_LINK 53

size_t rb_chain_header_size(const rb_chain *c) { return RB_HDR_FIXED + RB_HDR_LINK * (size_t)c->nlinks; }

static uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double bitsd(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

void rb_chain_header_write(const rb_chain *c, uint8_t *out)
{
    put64(out, c->size);
    put32(out + 8, (uint32_t)c->nlinks);
    put32(out + 12, c->options);
    put32(out + 16, c->growth);
    for (uint64_t i = 0; i < c->nlinks; i++) {
        const rb_link *l = &c->links[i];
        uint8_t *p = out + RB_HDR_FIXED + RB_HDR_LINK * i;
        put64(p, l->bytes);
        put64(p + 8, l->nbits);
        put64(p + 16, l->size);
        put64(p + 24, dbits(l->error));
        put64(p + 32, dbits(l->bpe));
        put32(p + 40, l->hashes);
        put64(p + 44, l->entries);
        p[52] = l->n2;
    }
}

/* The link holding byte `off` of the concatenated arrays, and the offset inside it. */
static rb_link *link_at(const rb_chain *c, uint64_t off, uint64_t *in)
{
    for (uint64_t i = 0; i < c->nlinks; i++) {
        if (off < c->links[i].bytes) {
            *in = off;
            return &c->links[i];
        }
        off -= c->links[i].bytes;
    }
    return NULL;
}

bool rb_chain_chunk(const rb_chain *c, long long iter, size_t max, const uint8_t **p, size_t *n, long long *next)
{
    if (iter < 1) return false;
    uint64_t in;
    rb_link *l = link_at(c, (uint64_t)iter - 1, &in);
    if (!l) return false;
    uint64_t left = l->bytes - in;
    *n = left < max ? (size_t)left : max;
    *p = l->bits + in;
    *next = iter + (long long)*n;
    return true;
}

rb_chain *rb_chain_from_header(const uint8_t *p, size_t n, uint64_t max_bytes, const char **err)
{
    *err = "not a RedisBloom Bloom filter header";
    if (n < RB_HDR_FIXED) return NULL;
    uint64_t links = le32(p + 8);
    if (links == 0 || n != RB_HDR_FIXED + RB_HDR_LINK * links) return NULL;
    rb_chain *c = RedisModule_Calloc(1, sizeof *c);
    c->size = le64(p);
    c->options = le32(p + 12);
    c->growth = le32(p + 16);
    c->links = RedisModule_Calloc((size_t)links, sizeof *c->links);
    uint64_t total = 0;
    for (uint64_t i = 0; i < links; i++) {
        const uint8_t *q = p + RB_HDR_FIXED + RB_HDR_LINK * i;
        rb_link l;
        memset(&l, 0, sizeof l);
        l.bytes = le64(q);
        l.nbits = le64(q + 8);
        l.size = le64(q + 16);
        l.error = bitsd(le64(q + 24));
        l.bpe = bitsd(le64(q + 32));
        l.hashes = le32(q + 40);
        l.entries = le64(q + 44);
        l.n2 = q[52];
        c->links[i] = l;
        c->nlinks = i + 1;
        if (!link_valid(&l)) {
            *err = "invalid link parameters in the header";
            goto fail;
        }
        if (l.bytes > max_bytes || total > max_bytes - l.bytes) {
            *err = "the filter would exceed the size limit (MAX_FILTER_SIZE)";
            goto fail;
        }
        total += l.bytes;
    }
    if (!chain_sane(c)) {
        *err = "inconsistent header (options or item counts)";
        goto fail;
    }
    for (uint64_t i = 0; i < links; i++) {
        c->links[i].bits = rb_alloc_zero((size_t)c->links[i].bytes);
        if (!c->links[i].bits) {
            *err = NULL; /* out of memory */
            goto fail;
        }
    }
    return c;
fail:
    rb_chain_free(c);
    return NULL;
}

const char *rb_chain_load_chunk(rb_chain *c, long long iter, const uint8_t *p, size_t n)
{
    if (n == 0 || iter <= 0 || (unsigned long long)iter <= n) return "ERR received bad data";
    uint64_t in;
    rb_link *l = link_at(c, (uint64_t)iter - n - 1, &in);
    if (!l) return "ERR invalid offset - no link found";
    if (n > l->bytes - in) return "ERR invalid chunk - Too big for current filter";
    memcpy(l->bits + in, p, n);
    return NULL;
}
