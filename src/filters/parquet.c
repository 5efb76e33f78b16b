/* Parquet's split-block Bloom filters (include/bloomkit/parquet.h): the footer and the filter headers
 * read with a bounded Thrift compact-protocol reader, the filters answered with the format's own
 * salts and XXH64; and the bitset on its own (made, checked, measured) with the header a writer embeds.
 * Not a bk_filter type: no vtable, no bloomkit file format. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/simd.h"
#include "filters/internal.h"
#include "bloomkit/parquet.h"

/* The format's salts (Parquet's BloomFilter specification); not bloomkit's blocked salts. */
static const uint32_t pq_salt[8] = { 0x47b6137bu, 0x44974d91u, 0x8824ad5bu, 0xa2b7289du,
                                     0x705495c7u, 0x2df1424bu, 0x9efc4947u, 0x5c6bfb31u };

typedef struct {
    uint8_t *bits; /* NULL: no filter */
    size_t bytes;
} pq_filter;

struct bk_parquet_column {
    const bk_allocator *alloc;
    bk_parquet_type type;
    uint32_t type_length;
    size_t row_groups, nfilters;
    pq_filter *f;
};

/* ---- Thrift compact protocol, bounded ---- */

enum { T_STOP = 0, T_TRUE = 1, T_FALSE = 2, T_BYTE = 3, T_I16 = 4, T_I32 = 5, T_I64 = 6, T_DOUBLE = 7,
       T_BINARY = 8, T_LIST = 9, T_SET = 10, T_MAP = 11, T_STRUCT = 12 };

typedef struct {
    const uint8_t *p, *end;
    int depth;
    bool bad;
} tr;

static uint64_t tr_varint(tr *t)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (t->p >= t->end) {
            t->bad = true;
            return 0;
        }
        uint8_t b = *t->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    t->bad = true;
    return 0;
}

static int64_t tr_zigzag(tr *t)
{
    uint64_t v = tr_varint(t);
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static uint8_t tr_byte(tr *t)
{
    if (t->p >= t->end) {
        t->bad = true;
        return 0;
    }
    return *t->p++;
}

/* A binary's bytes (pointer into the buffer) and length. */
static const uint8_t *tr_binary(tr *t, size_t *len)
{
    uint64_t n = tr_varint(t);
    if (t->bad || n > (uint64_t)(t->end - t->p)) {
        t->bad = true;
        *len = 0;
        return NULL;
    }
    const uint8_t *s = t->p;
    t->p += n;
    *len = (size_t)n;
    return s;
}

/* Next field of a struct: false at its end (or on error). */
static bool tr_field(tr *t, int16_t *last, int *type, int16_t *id)
{
    uint8_t b = tr_byte(t);
    if (t->bad || b == T_STOP) return false;
    *type = b & 0x0f;
    int delta = b >> 4;
    *id = delta ? (int16_t)(*last + delta) : (int16_t)tr_zigzag(t);
    *last = *id;
    return !t->bad;
}

static void tr_list_header(tr *t, int *etype, uint64_t *n)
{
    uint8_t b = tr_byte(t);
    *etype = b & 0x0f;
    *n = b >> 4;
    if (*n == 15) *n = tr_varint(t);
    /* every element takes at least one byte, except bools in some writers: bound by the input */
    if (*n > (uint64_t)(t->end - t->p) && *etype != T_TRUE && *etype != T_FALSE) t->bad = true;
}

/* A list header whose elements must be of type `want`: false (t->bad set) when they are not, or when
 * the header is damaged; else their count in *n. */
static bool tr_list_of(tr *t, int want, uint64_t *n)
{
    int et;
    tr_list_header(t, &et, n);
    if (et != want) t->bad = true;
    return !t->bad;
}

static void tr_skip(tr *t, int type);

static void tr_skip_struct(tr *t)
{
    if (++t->depth > 64) {
        t->bad = true;
        return;
    }
    int16_t last = 0, id;
    int type;
    while (tr_field(t, &last, &type, &id)) tr_skip(t, type);
    t->depth--;
}

static void tr_skip(tr *t, int type)
{
    size_t len;
    uint64_t n;
    int et;
    switch (type) {
    case T_TRUE: case T_FALSE: break;
    case T_BYTE: tr_byte(t); break;
    case T_I16: case T_I32: case T_I64: tr_varint(t); break;
    case T_DOUBLE:
        if (t->end - t->p < 8) t->bad = true;
        else t->p += 8;
        break;
    case T_BINARY: tr_binary(t, &len); break;
    case T_LIST: case T_SET:
        tr_list_header(t, &et, &n);
        if (++t->depth > 64) t->bad = true;
        for (uint64_t i = 0; i < n && !t->bad; i++) {
            if (et == T_TRUE || et == T_FALSE) tr_byte(t);
            else tr_skip(t, et);
        }
        t->depth--;
        break;
    case T_MAP:
        n = tr_varint(t);
        if (n) {
            uint8_t kv = tr_byte(t);
            if (n > (uint64_t)(t->end - t->p)) t->bad = true;
            if (++t->depth > 64) t->bad = true;
            for (uint64_t i = 0; i < n && !t->bad; i++) {
                tr_skip(t, kv >> 4);
                tr_skip(t, kv & 0x0f);
            }
            t->depth--;
        }
        break;
    case T_STRUCT: tr_skip_struct(t); break;
    default: t->bad = true;
    }
}

static bk_status say(char *why, size_t cap, bk_status s, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bk_status say(char *why, size_t cap, bk_status s, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* ---- the footer ---- */

typedef struct {
    const char *column;
    size_t clen;
    int64_t leaf_type, leaf_length; /* from the schema: the element named like the path's last part */
    size_t row_groups;
    struct chunk { int64_t type, offset, length; bool has; } *chunks; /* one per row group */
    size_t cap;
    bool found;
} pq_scan;

/* ColumnMetaData: type (1), path_in_schema (3), bloom_filter_offset (14), bloom_filter_length (15). */
static void read_column_meta(tr *t, pq_scan *s, struct chunk *c)
{
    int16_t last = 0, id;
    int type;
    bool match = false;
    int64_t ctype = -1, off = -1, len = -1;
    while (tr_field(t, &last, &type, &id)) {
        if (id == 1 && type == T_I32) ctype = tr_zigzag(t);
        else if (id == 14 && type == T_I64) off = tr_zigzag(t);
        else if (id == 15 && type == T_I32) len = tr_zigzag(t);
        else if (id == 3 && type == T_LIST) {
            uint64_t n;
            if (!tr_list_of(t, T_BINARY, &n)) return;
            /* compare "a.b.c" part by part */
            size_t pos = 0;
            bool ok = true;
            for (uint64_t i = 0; i < n && !t->bad; i++) {
                size_t l;
                const uint8_t *name = tr_binary(t, &l);
                if (i) {
                    if (pos < s->clen && s->column[pos] == '.') pos++;
                    else ok = false;
                }
                if (ok && name && l <= s->clen - pos && memcmp(s->column + pos, name, l) == 0) pos += l;
                else ok = false;
            }
            match = ok && pos == s->clen && n > 0;
        } else {
            tr_skip(t, type);
        }
        if (t->bad) return;
    }
    if (match) {
        c->type = ctype;
        c->offset = off;
        c->length = len;
        c->has = true;
        s->found = true;
    }
}

static void read_row_group(tr *t, pq_scan *s, struct chunk *c)
{
    int16_t last = 0, id;
    int type;
    while (tr_field(t, &last, &type, &id)) {
        if (id == 1 && type == T_LIST) { /* columns: list<ColumnChunk> */
            uint64_t n;
            if (!tr_list_of(t, T_STRUCT, &n)) return;
            for (uint64_t i = 0; i < n && !t->bad; i++) {
                int16_t l2 = 0, id2;
                int ty2;
                while (tr_field(t, &l2, &ty2, &id2)) {
                    if (id2 == 3 && ty2 == T_STRUCT) read_column_meta(t, s, c);
                    else tr_skip(t, ty2);
                    if (t->bad) return;
                }
            }
        } else {
            tr_skip(t, type);
        }
        if (t->bad) return;
    }
}

/* SchemaElement: type (1), type_length (2), name (4). */
static void read_schema(tr *t, pq_scan *s)
{
    uint64_t n;
    if (!tr_list_of(t, T_STRUCT, &n)) return;
    const char *leaf = s->column;
    for (const char *q = s->column; *q; q++)
        if (*q == '.') leaf = q + 1;
    size_t leaf_len = strlen(leaf);
    for (uint64_t i = 0; i < n && !t->bad; i++) {
        int16_t last = 0, id;
        int type;
        int64_t ty = -1, tl = 0;
        bool named = false;
        while (tr_field(t, &last, &type, &id)) {
            if (id == 1 && type == T_I32) ty = tr_zigzag(t);
            else if (id == 2 && type == T_I32) tl = tr_zigzag(t);
            else if (id == 4 && type == T_BINARY) {
                size_t l;
                const uint8_t *nm = tr_binary(t, &l);
                named = nm && l == leaf_len && memcmp(nm, leaf, l) == 0;
            } else {
                tr_skip(t, type);
            }
            if (t->bad) return;
        }
        if (named && ty >= 0) {
            s->leaf_type = ty;
            s->leaf_length = tl;
        }
    }
}

static bk_status scan_footer(const uint8_t *b, size_t len, pq_scan *s, const bk_allocator *a, char *why, size_t cap)
{
    if (len < 12 || memcmp(b, "PAR1", 4) != 0) {
        if (len >= 4 && memcmp(b + len - 4, "PARE", 4) == 0)
            return say(why, cap, BK_ENOTSUP, "the footer is encrypted");
        return say(why, cap, BK_ECORRUPT, "not a Parquet file (no PAR1 magic at its start)");
    }
    if (memcmp(b + len - 4, "PAR1", 4) != 0) {
        if (memcmp(b + len - 4, "PARE", 4) == 0) return say(why, cap, BK_ENOTSUP, "the footer is encrypted");
        return say(why, cap, BK_ECORRUPT, "no PAR1 magic at the end: the file is truncated or not Parquet");
    }
    uint32_t flen = bk__get_le32(b + len - 8);
    if (flen > len - 12) return say(why, cap, BK_ETRUNCATED, "the footer's length %u is past the file's start", flen);
    tr t = { b + len - 8 - flen, b + len - 8, 0, false };
    int16_t last = 0, id;
    int type;
    while (tr_field(&t, &last, &type, &id)) {
        if (id == 2 && type == T_LIST) {
            read_schema(&t, s);
        } else if (id == 4 && type == T_LIST) {
            uint64_t n;
            if (!tr_list_of(&t, T_STRUCT, &n) || s->chunks) { /* not structs, or a second list of row groups */
                t.bad = true;
                break;
            }
            s->chunks = bk__calloc(a, n ? (size_t)n : 1, sizeof *s->chunks);
            if (!s->chunks) return say(why, cap, BK_ENOMEM, "out of memory");
            s->row_groups = (size_t)n;
            for (uint64_t i = 0; i < n && !t.bad; i++) read_row_group(&t, s, &s->chunks[i]);
        } else {
            tr_skip(&t, type);
        }
        if (t.bad) break;
    }
    if (t.bad) return say(why, cap, BK_ECORRUPT, "the footer (FileMetaData) is damaged at byte %zu of %u",
                          (size_t)(t.p - (b + len - 8 - flen)), flen);
    return BK_OK;
}

/* The BloomFilterHeader in [p, end): numBytes (1), algorithm (2: BLOCK = 1), hash (3: XXHASH = 1),
 * compression (4: UNCOMPRESSED = 1); each union holds one empty struct. `where` starts the messages
 * ("row group 3: ", or ""). Sets the bitset's size and where it starts. */
static bk_status parse_header(const uint8_t *p, const uint8_t *end, const char *where, int64_t *nbytes_out,
                              const uint8_t **bits, char *why, size_t cap)
{
    tr t = { p, end, 0, false };
    int16_t last = 0, id;
    int type;
    int64_t nbytes = -1;
    int alg = 0, hash = 0, comp = 0;
    while (tr_field(&t, &last, &type, &id)) {
        if (id == 1 && type == T_I32) {
            nbytes = tr_zigzag(&t);
        } else if (id >= 2 && id <= 4 && type == T_STRUCT) {
            int16_t l2 = 0, id2;
            int ty2, which = 0;
            while (tr_field(&t, &l2, &ty2, &id2)) {
                which = id2;
                tr_skip(&t, ty2);
            }
            if (id == 2) alg = which;
            else if (id == 3) hash = which;
            else comp = which;
        } else {
            tr_skip(&t, type);
        }
        if (t.bad) break;
    }
    if (t.bad) return say(why, cap, BK_ECORRUPT, "%sthe filter's header is damaged", where);
    if (alg != 1 || hash != 1 || comp != 1)
        return say(why, cap, BK_ENOTSUP,
                   "%sthe filter is not split-block, XXH64 and uncompressed (algorithm %d, hash %d, compression %d)",
                   where, alg, hash, comp);
    if (nbytes <= 0 || nbytes % 32)
        return say(why, cap, BK_ECORRUPT, "%sthe filter's size %lld is not a positive multiple of 32", where,
                   (long long)nbytes);
    *nbytes_out = nbytes;
    *bits = t.p;
    return BK_OK;
}

/* BloomFilterHeader at off, the bitset within bloom_filter_length (flen, when given) and before the
 * footer. Sets the bitset's start and size. */
static bk_status read_filter_header(const uint8_t *b, size_t len, int64_t off, int64_t flen, size_t rg,
                                    size_t *start, size_t *bytes, char *why, size_t cap)
{
    if (off < 4 || (uint64_t)off >= len - 8)
        return say(why, cap, BK_ETRUNCATED, "row group %zu: the filter's offset %lld is outside the file", rg,
                   (long long)off);
    size_t end = len - 8;
    if (flen > 0 && (uint64_t)flen < (uint64_t)(end - (size_t)off)) end = (size_t)off + (size_t)flen;
    char where[48];
    snprintf(where, sizeof where, "row group %zu: ", rg);
    int64_t nbytes;
    const uint8_t *bits;
    bk_status st = parse_header(b + off, b + end, where, &nbytes, &bits, why, cap);
    if (st != BK_OK) return st;
    size_t s = (size_t)(bits - b);
    if ((uint64_t)nbytes > (uint64_t)(end - s))
        return say(why, cap, BK_ETRUNCATED, "row group %zu: the filter's %lld bytes run past %s", rg,
                   (long long)nbytes, end == len - 8 ? "the footer" : "its bloom_filter_length");
    *start = s;
    *bytes = (size_t)nbytes;
    return BK_OK;
}

bk_status bk_parquet_sbbf_parse(const void *buf, size_t len, size_t *offset, size_t *bytes, char *why, size_t cap)
{
    if (why && cap) why[0] = '\0';
    if (!offset || !bytes || (!buf && len)) return say(why, cap, BK_EINVAL, "no input");
    const uint8_t *b = buf ? buf : (const uint8_t *)"";
    int64_t nbytes;
    const uint8_t *bits;
    bk_status st = parse_header(b, b + len, "", &nbytes, &bits, why, cap);
    if (st != BK_OK) return st;
    size_t start = (size_t)(bits - b);
    if ((uint64_t)nbytes > (uint64_t)(len - start))
        return say(why, cap, BK_ETRUNCATED, "the filter's %lld bytes run past the end (%zu bytes after its header)",
                   (long long)nbytes, len - start);
    if ((uint64_t)nbytes < (uint64_t)(len - start))
        return say(why, cap, BK_ECORRUPT, "%zu bytes follow the filter's %lld", len - start - (size_t)nbytes,
                   (long long)nbytes);
    *offset = start;
    *bytes = (size_t)nbytes;
    return BK_OK;
}

bk_status bk_parquet_open(const void *buf, size_t len, const char *column, const bk_allocator *alloc,
                          bk_parquet_column **out, char *why, size_t why_cap)
{
    if (why && why_cap) why[0] = '\0';
    if (!out) return BK_EINVAL;
    *out = NULL;
    if ((!buf && len) || !column) return say(why, why_cap, BK_EINVAL, "no input or no column");
    const bk_allocator *a = bk__allocator(alloc);
    const uint8_t *b = buf;
    pq_scan s = { .column = column, .clen = strlen(column), .leaf_type = -1 };
    bk_status st = scan_footer(b, len, &s, a, why, why_cap);
    if (st != BK_OK) {
        bk__free(a, s.chunks);
        return st;
    }
    if (!s.found) {
        bk__free(a, s.chunks);
        return say(why, why_cap, BK_ENOTFOUND, "no column '%s' in the file", column);
    }
    bk_parquet_column *c = bk__calloc(a, 1, sizeof *c);
    pq_filter *f = bk__calloc(a, s.row_groups ? s.row_groups : 1, sizeof *f);
    if (!c || !f) {
        bk__free(a, c);
        bk__free(a, f);
        bk__free(a, s.chunks);
        return say(why, why_cap, BK_ENOMEM, "out of memory");
    }
    c->alloc = a;
    c->f = f;
    c->row_groups = s.row_groups;
    c->type = (bk_parquet_type)-1;
    for (size_t i = 0; i < s.row_groups && st == BK_OK; i++) {
        struct chunk *k = &s.chunks[i];
        if (!k->has) continue;
        if ((int)c->type == -1) c->type = (bk_parquet_type)k->type;
        if (k->offset < 0) continue; /* no filter in this row group */
        size_t start = 0, bytes = 0;
        st = read_filter_header(b, len, k->offset, k->length, i, &start, &bytes, why, why_cap);
        if (st != BK_OK) break;
        f[i].bits = bk__malloc(a, bytes);
        if (!f[i].bits) {
            st = say(why, why_cap, BK_ENOMEM, "out of memory");
            break;
        }
        memcpy(f[i].bits, b + start, bytes);
        f[i].bytes = bytes;
        c->nfilters++;
    }
    if (st == BK_OK && c->nfilters == 0)
        st = say(why, why_cap, BK_ENOTFOUND, "column '%s' has no Bloom filter in any of its %zu row group%s",
                 column, s.row_groups, s.row_groups == 1 ? "" : "s");
    if (st == BK_OK && (c->type < BK_PARQUET_BOOLEAN || c->type > BK_PARQUET_FIXED_LEN_BYTE_ARRAY))
        st = say(why, why_cap, BK_ECORRUPT, "column '%s' has an unknown physical type %d", column, (int)c->type);
    if (st == BK_OK && c->type == BK_PARQUET_FIXED_LEN_BYTE_ARRAY) {
        if (s.leaf_length <= 0 || s.leaf_length > INT32_MAX)
            st = say(why, why_cap, BK_ECORRUPT, "column '%s': fixed-length type without a valid length", column);
        else
            c->type_length = (uint32_t)s.leaf_length;
    }
    bk__free(a, s.chunks);
    if (st != BK_OK) {
        bk_parquet_free(c);
        return st;
    }
    *out = c;
    return BK_OK;
}

void bk_parquet_free(bk_parquet_column *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->row_groups; i++) bk__free(c->alloc, c->f[i].bits);
    bk__free(c->alloc, c->f);
    bk__free(c->alloc, c);
}

bk_parquet_type bk_parquet_physical_type(const bk_parquet_column *c)
{
    return c->type;
}

uint32_t bk_parquet_type_length(const bk_parquet_column *c)
{
    return c->type_length;
}

size_t bk_parquet_row_groups(const bk_parquet_column *c)
{
    return c->row_groups;
}

size_t bk_parquet_filters(const bk_parquet_column *c)
{
    return c->nfilters;
}

size_t bk_parquet_filter_bytes(const bk_parquet_column *c, size_t rg)
{
    return rg < c->row_groups ? c->f[rg].bytes : 0;
}

uint64_t bk_parquet_hash(const void *plain, size_t len)
{
    return XXH64(plain, len, 0);
}

static size_t pq_block(uint64_t h, size_t bytes)
{
    return (size_t)(((h >> 32) * (uint64_t)(bytes / 32)) >> 32) * 32;
}

int bk_parquet_sbbf_check(const void *bits, size_t bytes, uint64_t h)
{
    if (!bits || bytes < 32) return 1;
    const uint8_t *blk = (const uint8_t *)bits + pq_block(h, bytes);
    uint32_t x = (uint32_t)h;
    for (int i = 0; i < 8; i++) {
        uint32_t w = bk__get_le32(blk + 4 * i);
        if (!(w & (UINT32_C(1) << ((x * pq_salt[i]) >> 27)))) return 0;
    }
    return 1;
}

void bk_parquet_sbbf_insert(void *bits, size_t bytes, uint64_t h)
{
    if (!bits || bytes < 32) return;
    uint8_t *blk = (uint8_t *)bits + pq_block(h, bytes);
    uint32_t x = (uint32_t)h;
    for (int i = 0; i < 8; i++) {
        uint32_t w = bk__get_le32(blk + 4 * i) | UINT32_C(1) << ((x * pq_salt[i]) >> 27);
        bk__put_le32(blk + 4 * i, w);
    }
}

#define PQ_MIN_BYTES 32
#define PQ_MAX_BYTES ((size_t)128 << 20)

size_t bk_parquet_sbbf_bytes(uint64_t ndv, double fpp)
{
    if (!(fpp > 0.0 && fpp < 1.0)) return 0;
    double m = -8.0 * (double)ndv / log(1.0 - pow(fpp, 1.0 / 8.0));
    if (!(m >= 0.0) || m > (double)PQ_MAX_BYTES * 8.0) return PQ_MAX_BYTES;
    size_t bytes = PQ_MIN_BYTES;
    while ((double)bytes * 8.0 < m) bytes *= 2;
    return bytes;
}

static uint8_t *w_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

size_t bk_parquet_sbbf_header(size_t bytes, void *out, size_t cap)
{
    if (!out || bytes == 0 || bytes % 32 || bytes > (size_t)INT32_MAX) return 0;
    uint8_t h[BK_PARQUET_HEADER_MAX], *p = h;
    *p++ = 0x15;                           /* field 1, i32: numBytes (zigzag varint) */
    p = w_varint(p, (uint64_t)bytes << 1);
    /* fields 2, 3, 4: structs (algorithm, hash, compression), each a union whose member 1 (BLOCK,
     * XXHASH, UNCOMPRESSED) is an empty struct: member header, its stop, the union's stop */
    for (int f = 0; f < 3; f++) {
        *p++ = 0x1c;
        *p++ = 0x1c;
        *p++ = 0x00;
        *p++ = 0x00;
    }
    *p++ = 0x00; /* the header's stop */
    size_t n = (size_t)(p - h);
    if (n > cap) return 0;
    memcpy(out, h, n);
    return n;
}

bk_status bk_parquet_sbbf_stats(const void *bits, size_t bytes, bk_parquet_stats *out)
{
    if (!out) return BK_EINVAL;
    memset(out, 0, sizeof *out);
    if (!bits || bytes == 0 || bytes % 32) return BK_EINVAL;
    const uint8_t *b = bits;
    size_t blocks = bytes / 32;
    uint64_t set = 0;
    double fpr = 0.0, values = 0.0;
    const double per_insert = log(31.0 / 32.0); /* a word keeps a given bit clear with chance 31/32 */
    for (size_t i = 0; i < blocks; i++) {
        double p = 1.0, k = 0.0;
        for (int j = 0; j < 8; j++) {
            uint32_t w = bk__get_le32(b + 32 * i + 4 * j);
            unsigned c = bk__popcount_swar(w);
            set += c;
            p *= c / 32.0;
            /* a full word says "many": counted as 31.5 bits set, the estimate's finite ceiling */
            k += log(1.0 - (c == 32 ? 31.5 : (double)c) / 32.0) / per_insert;
        }
        fpr += p;
        values += k / 8.0;
    }
    out->bytes = bytes;
    out->blocks = blocks;
    out->bits_set = set;
    out->fill = (double)set / ((double)bytes * 8.0);
    out->fpr = fpr / (double)blocks;
    out->est_values = values;
    out->bits_per_value = values > 0.0 ? (double)bytes * 8.0 / values : 0.0;
    return BK_OK;
}

const uint8_t *bk_parquet_filter_bits(const bk_parquet_column *c, size_t rg)
{
    return c && rg < c->row_groups ? c->f[rg].bits : NULL;
}

int bk_parquet_contains_hash(const bk_parquet_column *c, size_t rg, uint64_t h)
{
    if (!c || rg >= c->row_groups || !c->f[rg].bits) return -1;
    return bk_parquet_sbbf_check(c->f[rg].bits, c->f[rg].bytes, h);
}

int bk_parquet_contains(const bk_parquet_column *c, size_t rg, const void *plain, size_t len)
{
    if (!plain && len) return -1;
    return bk_parquet_contains_hash(c, rg, bk_parquet_hash(plain ? plain : "", len));
}
