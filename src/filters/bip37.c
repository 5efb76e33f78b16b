/* Bitcoin BIP 37 filters (include/bloomkit/bip37.h): MurmurHash3 x86-32 probes, Bitcoin Core's
 * sizing and limits, the filterload payload. Not a bk_filter type: no vtable, no file format. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "filters/internal.h"
#include "core/simd.h"
#include "bloomkit/bip37.h"

struct bk_bip37 {
    const bk_allocator *alloc;
    size_t bytes;
    uint32_t hash_funcs;
    uint32_t tweak;
    uint8_t flags;
    uint8_t data[];
};

/* Bitcoin Core's constants, to the digit, so the sizing rounds as Core's does. */
#define BIP37_LN2SQUARED 0.4804530139182014246671025263266649717305529515945455
#define BIP37_LN2 0.6931471805599453094172321214581765680755001343602552
#define BIP37_SEED_STEP UINT32_C(0xFBA4C795)

static inline uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

uint32_t bk_murmur3_32(const void *key, size_t len, uint32_t seed)
{
    const uint8_t *p = key;
    const uint32_t c1 = UINT32_C(0xcc9e2d51), c2 = UINT32_C(0x1b873593);
    uint32_t h = seed;
    size_t nblocks = len / 4;
    for (size_t i = 0; i < nblocks; i++) {
        uint32_t k = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                     (uint32_t)p[4 * i + 3] << 24;
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
        h = rotl32(h, 13);
        h = h * 5 + UINT32_C(0xe6546b64);
    }
    const uint8_t *tail = p + nblocks * 4;
    uint32_t k = 0;
    switch (len & 3) {
    case 3: k ^= (uint32_t)tail[2] << 16; /* fall through */
    case 2: k ^= (uint32_t)tail[1] << 8;  /* fall through */
    case 1:
        k ^= tail[0];
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
    }
    h ^= (uint32_t)len;
    h ^= h >> 16;
    h *= UINT32_C(0x85ebca6b);
    h ^= h >> 13;
    h *= UINT32_C(0xc2b2ae35);
    h ^= h >> 16;
    return h;
}

bk_status bk_bip37_new_sized(size_t bytes, uint32_t hash_funcs, uint32_t tweak, uint8_t flags,
                                    const bk_allocator *alloc, bk_bip37 **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (bytes > BK_BIP37_MAX_BYTES || hash_funcs > BK_BIP37_MAX_HASH_FUNCS) return BK_ETOOBIG;
    const bk_allocator *a = bk__allocator(alloc);
    bk_bip37 *f = bk__calloc(a, 1, sizeof *f + bytes);
    if (!f) return BK_ENOMEM;
    f->alloc = a;
    f->bytes = bytes;
    f->hash_funcs = hash_funcs;
    f->tweak = tweak;
    f->flags = flags;
    *out = f;
    return BK_OK;
}

bk_status bk_bip37_new(uint32_t n, double p, uint32_t tweak, uint8_t flags, const bk_allocator *alloc,
                              bk_bip37 **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (n == 0 || !(p > 0.0 && p < 1.0)) return BK_EINVAL;
    /* Core: min((unsigned)(-1 / LN2SQUARED * n * log(p)), MAX * 8) / 8, then
     * min((unsigned)(bytes * 8 / n * LN2), MAX_HASH_FUNCS) with the division in integers. */
    double bits = -1 / BIP37_LN2SQUARED * (double)n * log(p);
    uint32_t ibits = bits >= (double)(BK_BIP37_MAX_BYTES * 8) ? BK_BIP37_MAX_BYTES * 8 : (uint32_t)bits;
    size_t bytes = ibits / 8;
    double k = (double)((uint64_t)bytes * 8 / n) * BIP37_LN2;
    uint32_t hash_funcs = k >= BK_BIP37_MAX_HASH_FUNCS ? BK_BIP37_MAX_HASH_FUNCS : (uint32_t)k;
    return bk_bip37_new_sized(bytes, hash_funcs, tweak, flags, alloc, out);
}

void bk_bip37_free(bk_bip37 *f)
{
    if (f) bk__free(f->alloc, f);
}

static inline uint32_t probe(const bk_bip37 *f, uint32_t j, const void *key, size_t len)
{
    uint32_t h = bk_murmur3_32(key, len, j * BIP37_SEED_STEP + f->tweak);
    return (uint32_t)(h % ((uint64_t)f->bytes * 8));
}

bk_status bk_bip37_add(bk_bip37 *f, const void *key, size_t len)
{
    if (!f || (!key && len)) return BK_EINVAL;
    if (f->bytes == 0) return BK_OK;
    for (uint32_t j = 0; j < f->hash_funcs; j++) {
        uint32_t i = probe(f, j, key, len);
        f->data[i >> 3] |= (uint8_t)(1u << (i & 7));
    }
    return BK_OK;
}

bool bk_bip37_contains(const bk_bip37 *f, const void *key, size_t len)
{
    if (!f || (!key && len)) return false;
    if (f->bytes == 0) return true;
    for (uint32_t j = 0; j < f->hash_funcs; j++) {
        uint32_t i = probe(f, j, key, len);
        if (!(f->data[i >> 3] & (1u << (i & 7)))) return false;
    }
    return true;
}

void bk_bip37_clear(bk_bip37 *f)
{
    if (f) memset(f->data, 0, f->bytes);
}

static size_t compact_size_len(uint64_t v)
{
    return v < 0xfd ? 1 : v <= 0xffff ? 3 : v <= 0xffffffffu ? 5 : 9;
}

size_t bk_bip37_serialized_size(const bk_bip37 *f)
{
    return f ? compact_size_len(f->bytes) + f->bytes + 9 : 0;
}

bk_status bk_bip37_serialize(const bk_bip37 *f, void *buf, size_t cap, size_t *written)
{
    if (!f || !written || (!buf && cap)) return BK_EINVAL;
    size_t need = bk_bip37_serialized_size(f);
    *written = need;
    if (cap < need) return BK_EBUFSIZE;
    uint8_t *p = buf;
    if (f->bytes < 0xfd) {
        *p++ = (uint8_t)f->bytes;
    } else { /* the limit keeps it under 2^16 */
        *p++ = 0xfd;
        *p++ = (uint8_t)f->bytes;
        *p++ = (uint8_t)(f->bytes >> 8);
    }
    if (f->bytes) memcpy(p, f->data, f->bytes);
    p += f->bytes;
    bk__put_le32(p, f->hash_funcs);
    bk__put_le32(p + 4, f->tweak);
    p[8] = f->flags;
    return BK_OK;
}

static bk_status problem(char *msg, size_t cap, bk_status s, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bk_status problem(char *msg, size_t cap, bk_status s, const char *fmt, ...)
{
    if (msg && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, cap, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* Checks a payload; on BK_OK sets the fields (the filter's bytes start at data + *start). */
static bk_status check(const uint8_t *b, size_t len, size_t *start, uint64_t *bytes, uint32_t *nh, char *msg,
                       size_t cap)
{
    if (msg && cap) msg[0] = '\0';
    if (len == 0) return problem(msg, cap, BK_ETRUNCATED, "empty input: a BIP 37 filter has at least 10 bytes");
    uint64_t n;
    size_t hdr;
    if (b[0] < 0xfd) {
        n = b[0];
        hdr = 1;
    } else {
        hdr = b[0] == 0xfd ? 3 : b[0] == 0xfe ? 5 : 9;
        if (len < hdr)
            return problem(msg, cap, BK_ETRUNCATED, "the filter's length field needs %zu bytes, the input has %zu",
                           hdr, len);
        n = 0;
        for (size_t i = hdr - 1; i >= 1; i--) n = n << 8 | b[i];
        uint64_t least = hdr == 3 ? 0xfd : hdr == 5 ? 0x10000 : UINT64_C(0x100000000);
        if (n < least)
            return problem(msg, cap, BK_ECORRUPT,
                           "the filter's length %llu is not written in its shortest form", (unsigned long long)n);
    }
    if (n > BK_BIP37_MAX_BYTES)
        return problem(msg, cap, BK_ETOOBIG, "the filter has %llu bytes: BIP 37 allows at most 36,000",
                       (unsigned long long)n);
    size_t need = hdr + (size_t)n + 9;
    if (len < need)
        return problem(msg, cap, BK_ETRUNCATED,
                       "the payload's fields need %zu bytes (%zu of length, %llu of filter, 9 of nHashFuncs, "
                       "nTweak and nFlags), the input has %zu",
                       need, hdr, (unsigned long long)n, len);
    if (len > need)
        return problem(msg, cap, BK_ECORRUPT, "%zu bytes follow the filter's last field (nFlags)", len - need);
    uint32_t h = bk__get_le32(b + hdr + n);
    if (h > BK_BIP37_MAX_HASH_FUNCS)
        return problem(msg, cap, BK_ETOOBIG, "the filter has %u hash functions: BIP 37 allows at most 50", h);
    *start = hdr;
    *bytes = n;
    *nh = h;
    return BK_OK;
}

bk_status bk_bip37_parse_problem(const void *buf, size_t len, char *msg, size_t cap)
{
    if (!buf && len) return problem(msg, cap, BK_EINVAL, "no input");
    size_t start;
    uint64_t bytes;
    uint32_t nh;
    return check(buf, len, &start, &bytes, &nh, msg, cap);
}

bk_status bk_bip37_parse(const void *buf, size_t len, const bk_allocator *alloc, bk_bip37 **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!buf && len) return BK_EINVAL;
    const uint8_t *b = buf;
    size_t start;
    uint64_t bytes;
    uint32_t nh;
    bk_status s = check(b, len, &start, &bytes, &nh, NULL, 0);
    if (s != BK_OK) return s;
    const uint8_t *tail = b + start + bytes;
    bk_bip37 *f;
    s = bk_bip37_new_sized((size_t)bytes, nh, bk__get_le32(tail + 4), tail[8], alloc, &f);
    if (s != BK_OK) return s;
    if (bytes) memcpy(f->data, b + start, (size_t)bytes);
    *out = f;
    return BK_OK;
}

size_t bk_bip37_bytes(const bk_bip37 *f)
{
    return f ? f->bytes : 0;
}

uint32_t bk_bip37_hash_funcs(const bk_bip37 *f)
{
    return f ? f->hash_funcs : 0;
}

uint32_t bk_bip37_tweak(const bk_bip37 *f)
{
    return f ? f->tweak : 0;
}

uint8_t bk_bip37_flags(const bk_bip37 *f)
{
    return f ? f->flags : 0;
}

const uint8_t *bk_bip37_data(const bk_bip37 *f)
{
    return f && f->bytes ? f->data : NULL;
}

uint64_t bk_bip37_popcount(const bk_bip37 *f)
{
    uint64_t c = 0;
    if (!f) return 0;
    const bool hw = (bk__cpu_usable() & BK_CPU_POPCNT) != 0;
    size_t i = 0;
    for (; i + 8 <= f->bytes; i += 8) {
        uint64_t w;
        memcpy(&w, f->data + i, 8);
        c += bk__popcount64(w, hw);
    }
    for (; i < f->bytes; i++) c += bk__popcount64(f->data[i], hw);
    return c;
}
