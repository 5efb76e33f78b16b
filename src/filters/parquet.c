/* Parquet's split-block Bloom filters (include/bloomkit/parquet.h): the footer and the filter headers
 * read with a bounded Thrift compact-protocol reader, the filters answered with the format's own
 * salts and XXH64. Not a bk_filter type: no vtable, no bloomkit file format. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
            int et;
            uint64_t n;
            tr_list_header(t, &et, &n);
            if (et != T_BINARY) {
                t->bad = true;
                return;
            }
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
            int et;
            uint64_t n;
            tr_list_header(t, &et, &n);
            if (et != T_STRUCT) {
                t->bad = true;
                return;
            }
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
    int et;
    uint64_t n;
    tr_list_header(t, &et, &n);
    if (et != T_STRUCT) {
        t->bad = true;
        return;
    }
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
            int et;
            uint64_t n;
            tr_list_header(&t, &et, &n);
            if (t.bad || et != T_STRUCT) break;
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

/* BloomFilterHeader at off: numBytes (1), algorithm (2: BLOCK = 1), hash (3: XXHASH = 1), compression
 * (4: UNCOMPRESSED = 1); each union holds one empty struct. Sets the bitset's start and size. */
static bk_status read_filter_header(const uint8_t *b, size_t len, int64_t off, int64_t flen, size_t rg,
                                    size_t *start, size_t *bytes, char *why, size_t cap)
{
    if (off < 4 || (uint64_t)off >= len - 8)
        return say(why, cap, BK_ETRUNCATED, "row group %zu: the filter's offset %lld is outside the file", rg,
                   (long long)off);
    size_t end = len - 8;
    if (flen > 0 && (uint64_t)flen < (uint64_t)(end - (size_t)off)) end = (size_t)off + (size_t)flen;
    tr t = { b + off, b + end, 0, false };
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
    if (t.bad) return say(why, cap, BK_ECORRUPT, "row group %zu: the filter's header is damaged", rg);
    if (alg != 1 || hash != 1 || comp != 1)
        return say(why, cap, BK_ENOTSUP,
                   "row group %zu: the filter is not split-block, XXH64 and uncompressed (algorithm %d, hash %d, "
                   "compression %d)", rg, alg, hash, comp);
    if (nbytes <= 0 || nbytes % 32)
        return say(why, cap, BK_ECORRUPT, "row group %zu: the filter's size %lld is not a positive multiple of 32",
                   rg, (long long)nbytes);
    size_t s = (size_t)(t.p - b);
    if ((uint64_t)nbytes > (uint64_t)(end - s))
        return say(why, cap, BK_ETRUNCATED, "row group %zu: the filter's %lld bytes run past %s", rg,
                   (long long)nbytes, end == len - 8 ? "the footer" : "its bloom_filter_length");
    *start = s;
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

int bk_parquet_contains_hash(const bk_parquet_column *c, size_t rg, uint64_t h)
{
    if (!c || rg >= c->row_groups || !c->f[rg].bits) return -1;
    uint64_t blocks = c->f[rg].bytes / 32;
    const uint8_t *blk = c->f[rg].bits + (size_t)(((h >> 32) * blocks) >> 32) * 32;
    uint32_t x = (uint32_t)h;
    for (int i = 0; i < 8; i++) {
        uint32_t w = bk__get_le32(blk + 4 * i);
        if (!(w & (UINT32_C(1) << ((x * pq_salt[i]) >> 27)))) return 0;
    }
    return 1;
}

int bk_parquet_contains(const bk_parquet_column *c, size_t rg, const void *plain, size_t len)
{
    if (!plain && len) return -1;
    return bk_parquet_contains_hash(c, rg, bk_parquet_hash(plain ? plain : "", len));
}
