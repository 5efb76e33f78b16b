/*
 * bloomkit: reading the split-block Bloom filters a Parquet file carries for its column chunks.
 *
 * A Parquet writer may store, for each column chunk, a Bloom filter located by the chunk's
 * ColumnMetaData.bloom_filter_offset (and bloom_filter_length) in the file footer (Thrift compact
 * protocol). At that offset: a Thrift BloomFilterHeader (numBytes; algorithm BLOCK; hash XXHASH;
 * compression UNCOMPRESSED), then numBytes of filter: blocks of eight 32-bit little-endian words. A
 * value is hashed with XXH64 (seed 0) of its PLAIN encoding (BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY: the
 * bytes alone, no length; INT32, INT64, FLOAT, DOUBLE: the little-endian bytes); block
 * ((h >> 32) * blocks) >> 32; bit ((uint32_t)h * salt[i]) >> 27 of word i, with the format's eight
 * published salts. These calls answer exactly as a Parquet reader's filter check does.
 *
 * The whole file is given as one buffer (a mapping is the usual source); nothing points into it after
 * bk_parquet_open returns. Every offset and length is checked against the buffer before use.
 *
 * Thread-safety: see the legend in common.h.
 */
#ifndef BLOOMKIT_PARQUET_H
#define BLOOMKIT_PARQUET_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parquet's physical types (the numbers of its Thrift Type enum). */
typedef enum bk_parquet_type {
    BK_PARQUET_BOOLEAN = 0,
    BK_PARQUET_INT32 = 1,
    BK_PARQUET_INT64 = 2,
    BK_PARQUET_INT96 = 3,
    BK_PARQUET_FLOAT = 4,
    BK_PARQUET_DOUBLE = 5,
    BK_PARQUET_BYTE_ARRAY = 6,
    BK_PARQUET_FIXED_LEN_BYTE_ARRAY = 7
} bk_parquet_type;

/* One column's Bloom filters, one per row group that has one. */
typedef struct bk_parquet_column bk_parquet_column;

/* [any] Reads the footer of the Parquet file in buf (len bytes) and the Bloom filters of the column
 * whose path (its names joined by '.') is `column`. Refusals: BK_ECORRUPT (not a Parquet file, a
 * damaged footer or filter header), BK_ETRUNCATED (an offset or length past the end), BK_ENOTFOUND (no
 * such column, or no row group has a filter for it), BK_ENOTSUP (an encrypted footer, a filter with an
 * algorithm, hash or compression other than split-block, XXH64, uncompressed); `why` (why_cap bytes,
 * NULL for none) says which in words. alloc: NULL for the default. */
BK_API bk_status bk_parquet_open(const void *buf, size_t len, const char *column, const bk_allocator *alloc,
                                 bk_parquet_column **out, char *why, size_t why_cap);
/* [excl] NULL is a no-op. */
BK_API void bk_parquet_free(bk_parquet_column *c);

/* ---- accessors. [query] ---- */

BK_API bk_parquet_type bk_parquet_physical_type(const bk_parquet_column *c);
/* FIXED_LEN_BYTE_ARRAY's length in bytes (the schema's type_length); 0 for the other types. */
BK_API uint32_t bk_parquet_type_length(const bk_parquet_column *c);
/* Row groups in the file, and how many of them have a filter for the column. */
BK_API size_t bk_parquet_row_groups(const bk_parquet_column *c);
BK_API size_t bk_parquet_filters(const bk_parquet_column *c);
/* Bytes of row group rg's filter; 0 when it has none. */
BK_API size_t bk_parquet_filter_bytes(const bk_parquet_column *c, size_t rg);

/* ---- queries. [query] ---- */

/* Row group rg's answer for a value given in its PLAIN encoding: 1 maybe present, 0 certainly absent,
 * -1 the row group has no filter (a reader must read it). */
BK_API int bk_parquet_contains(const bk_parquet_column *c, size_t rg, const void *plain, size_t len);
/* The same for a hash (bk_parquet_hash of the PLAIN encoding). */
BK_API int bk_parquet_contains_hash(const bk_parquet_column *c, size_t rg, uint64_t h);
/* [any] XXH64 with seed 0: the hash of Parquet's Bloom filters. */
BK_API uint64_t bk_parquet_hash(const void *plain, size_t len);
/* [query] Row group rg's bitset (bk_parquet_filter_bytes(c, rg) bytes, as stored in the file); NULL when
 * it has no filter. Valid until bk_parquet_free. */
BK_API const uint8_t *bk_parquet_filter_bits(const bk_parquet_column *c, size_t rg);

/* ---- a split-block bitset on its own: making one a Parquet writer can embed, and inspecting one ----
 *
 * bits is a bitset of `bytes` bytes, a positive multiple of 32 (256-bit blocks), laid out as the file
 * stores it; h is bk_parquet_hash of a value's PLAIN encoding. A writer embeds the header
 * (bk_parquet_sbbf_header) followed by the bitset and records their offset and total length in the
 * column chunk's bloom_filter_offset and bloom_filter_length. */

/* [any] The bytes Parquet's writers (parquet-mr, Arrow, DuckDB) give a filter for ndv distinct values at
 * false-positive rate fpp: bits = -8 ndv / ln(1 - fpp^(1/8)), rounded up to a power of two, at least
 * 32 bytes and at most 128 MiB. 0 when fpp is not in (0, 1). */
BK_API size_t bk_parquet_sbbf_bytes(uint64_t ndv, double fpp);
/* [excl] Sets h's eight bits (one per 32-bit word of its block). A bitset under 32 bytes is left as it
 * is (it has no block); bytes past the last whole block are never touched. */
BK_API void bk_parquet_sbbf_insert(void *bits, size_t bytes, uint64_t h);
/* [query] 1 when every one of h's bits is set (maybe present), 0 when one is clear (absent); 1 for a
 * bitset under 32 bytes, which cannot exclude anything. */
BK_API int bk_parquet_sbbf_check(const void *bits, size_t bytes, uint64_t h);
/* [any] Writes the Thrift compact-protocol BloomFilterHeader of a bitset of `bytes` bytes (numBytes;
 * algorithm BLOCK, hash XXHASH, compression UNCOMPRESSED) into out; returns its length (at most
 * BK_PARQUET_HEADER_MAX), or 0 when cap is too small or bytes is not a positive multiple of 32 below
 * 2^31. */
#define BK_PARQUET_HEADER_MAX 24
BK_API size_t bk_parquet_sbbf_header(size_t bytes, void *out, size_t cap);

/* [any] Reads a filter blob: a BloomFilterHeader and the bitset right after it, nothing more (what
 * bk_parquet_sbbf_header and the bitset make, or the bloom_filter_length bytes a file stores at
 * bloom_filter_offset). Sets *offset (where the bitset starts) and *bytes (its size). Refusals as
 * bk_parquet_open's for a filter header: BK_ECORRUPT (damaged, a size not a multiple of 32, bytes left
 * over), BK_ETRUNCATED (the bitset runs past len), BK_ENOTSUP (not split-block, XXH64, uncompressed). */
BK_API bk_status bk_parquet_sbbf_parse(const void *buf, size_t len, size_t *offset, size_t *bytes, char *why,
                                       size_t why_cap);

/* What a bitset's bits say. The estimates assume uniform hashes, as the format does. */
typedef struct bk_parquet_stats {
    uint64_t bytes, blocks;
    uint64_t bits_set;
    double fill;           /* bits_set / (8 bytes) */
    double fpr;            /* the chance an absent value answers present: the mean over blocks of the
                              product of its eight words' fills */
    double est_values;     /* distinct values inserted, estimated from each word's fill */
    double bits_per_value; /* 8 bytes / est_values (0 for an empty filter) */
    uint64_t reserved[4];  /* zero */
} bk_parquet_stats;
/* [query] Fills *out for a bitset (bytes a positive multiple of 32; else BK_EINVAL). */
BK_API bk_status bk_parquet_sbbf_stats(const void *bits, size_t bytes, bk_parquet_stats *out);

#ifdef __cplusplus
}
#endif

#endif
