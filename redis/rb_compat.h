/*
 * RedisBloom 2.x compatibility: keys migrated from RedisBloom keep RedisBloom's layout and hashing.
 *
 *   rb_bloom.c   the scalable Bloom chain (MBbloom--): MurmurHash2 / MurmurHash64A, bit indexes,
 *                link sizing, growth, RDB encodings 0..4, SCANDUMP header and chunks
 *   rb_cuckoo.c  the cuckoo filter (MBbloomCF): 8-bit fingerprints, buckets, kicks, growth,
 *                compaction, RDB encodings 2..4, SCANDUMP header and chunks
 *   rb_compat.c  the two Redis data types, and the BF.* / CF.* commands on such keys (the command
 *                table routes a command here when its key holds a RedisBloom value, or when a
 *                LOADCHUNK starts a restore from a RedisBloom SCANDUMP)
 *
 * A filter built by RedisBloom answers correctly only with RedisBloom's own hash functions and
 * layout (its items are gone), so such keys are not converted when they load: they keep the data type
 * names `MBbloom--` / `MBbloomCF` and are saved in RedisBloom's encoding (version 4), which keeps a
 * rollback path (RedisBloom loads them) and replication in both directions. With the module argument
 * REDISBLOOM_LAYOUT yes, new BF/CF keys are made the same way (rb_compat.c); BK.CONVERT (rb_convert.c)
 * moves keys to bloomkit's filters where no item is lost. docs/REDIS.md, "Migrating from RedisBloom",
 * describes the formats and the choices made here.
 */
#ifndef BKR_RB_COMPAT_H
#define BKR_RB_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redismodule.h"

/* ---- hashes (as RedisBloom computes them; little-endian reads) ---- */
uint32_t rb_murmur2_32(const void *key, size_t len, uint32_t seed);
uint64_t rb_murmur64a(const void *key, size_t len, uint64_t seed);

/* ---- the Bloom chain ---- */
#define RB_BLOOM_NOROUND 1u    /* link sized exactly (bits = entries * bpe), index mod bits */
#define RB_BLOOM_ENTS_IS_BITS 2u /* link size given as log2 of its bits */
#define RB_BLOOM_FORCE64 4u    /* 64-bit hashes (MurmurHash64A); else two 32-bit MurmurHash2 */
#define RB_BLOOM_NO_SCALING 8u /* full is full */
#define RB_BLOOM_OPTIONS (RB_BLOOM_NOROUND | RB_BLOOM_ENTS_IS_BITS | RB_BLOOM_FORCE64 | RB_BLOOM_NO_SCALING)

typedef struct rb_link {
    uint8_t *bits;    /* bytes of them */
    uint64_t bytes;
    uint64_t nbits;   /* bytes * 8 */
    uint64_t entries; /* the link's capacity */
    uint64_t size;    /* items added to this link */
    double error;
    double bpe;       /* bits per entry */
    uint32_t hashes;
    uint8_t n2;       /* > 0: index modulo 2^n2; 0: modulo nbits */
} rb_link;

typedef struct rb_chain {
    rb_link *links;
    uint64_t nlinks;
    uint64_t size;    /* items added to the chain */
    uint32_t options; /* RB_BLOOM_* */
    uint32_t growth;
} rb_chain;

typedef enum rb_add_result { RB_ADDED = 1, RB_PRESENT = 0, RB_FULL = -1, RB_NOMEM = -2, RB_TOOBIG = -3 } rb_add_result;

void rb_chain_free(rb_chain *c);
bool rb_chain_contains(const rb_chain *c, const void *item, size_t len);
/* Add unless present. max_bytes bounds the chain's arrays when it must grow; guarded allocation. */
rb_add_result rb_chain_add(rb_chain *c, const void *item, size_t len, uint64_t max_bytes);
uint64_t rb_chain_capacity(const rb_chain *c);
size_t rb_chain_memory(const rb_chain *c);
/* A new empty chain as RedisBloom's BF.RESERVE makes it (options FORCE64 | NOROUND [| NO_SCALING]): the
 * first link holds `capacity` items at error / 2 (at `error` when not scaling). NULL with *why RB_TOOBIG
 * (parameters RedisBloom refuses, or arrays over max_bytes) or RB_NOMEM. */
rb_chain *rb_chain_new(uint64_t capacity, double error, uint32_t options, uint32_t growth, uint64_t max_bytes,
                       rb_add_result *why);
rb_chain *rb_chain_clone(const rb_chain *c);

/* RDB (encver 0..4 loaded, 4 saved). NULL (with the IO error logged) on damaged data. */
rb_chain *rb_chain_rdb_load(RedisModuleIO *io, int encver);
void rb_chain_rdb_save(RedisModuleIO *io, const rb_chain *c);

/* SCANDUMP: the header (iterator 0 -> 1), then the links' bytes in order; the iterator after a chunk
 * is 1 + the offset of its end in the concatenated arrays. */
size_t rb_chain_header_size(const rb_chain *c);
void rb_chain_header_write(const rb_chain *c, uint8_t *out);
/* The chunk after iterator iter (>= 1): *p, *n and the next iterator; false when there is none. */
bool rb_chain_chunk(const rb_chain *c, long long iter, size_t max, const uint8_t **p, size_t *n, long long *next);
/* A chain with zeroed arrays from a header; NULL with *err set when the header is not valid. */
rb_chain *rb_chain_from_header(const uint8_t *p, size_t n, uint64_t max_bytes, const char **err);
/* Copy a chunk into place (iter = 1 + end offset). NULL, or the error text. */
const char *rb_chain_load_chunk(rb_chain *c, long long iter, const uint8_t *p, size_t n);

/* ---- the cuckoo filter ---- */
typedef struct rb_table {
    uint64_t nbuckets;
    uint8_t *data; /* nbuckets * bucket_size fingerprints, 0 = empty */
} rb_table;

typedef struct rb_cuckoo {
    rb_table *tables;
    uint64_t nbuckets; /* of the first table */
    uint64_t items;
    uint64_t deletes;
    uint16_t ntables;
    uint16_t bucket_size;
    uint16_t max_iterations;
    uint16_t expansion;
} rb_cuckoo;

#define RB_CF_HEADER_SIZE 38

void rb_cuckoo_free(rb_cuckoo *cf);
bool rb_cuckoo_contains(const rb_cuckoo *cf, const void *item, size_t len);
uint64_t rb_cuckoo_count(const rb_cuckoo *cf, const void *item, size_t len);
/* Remove one copy: true if one was found. */
bool rb_cuckoo_remove(rb_cuckoo *cf, const void *item, size_t len);
/* Insert (nx: unless present). RB_ADDED, RB_PRESENT, RB_FULL (no room, cannot grow), RB_NOMEM, RB_TOOBIG. */
rb_add_result rb_cuckoo_add(rb_cuckoo *cf, const void *item, size_t len, bool nx, uint64_t max_bytes);
size_t rb_cuckoo_memory(const rb_cuckoo *cf);
rb_cuckoo *rb_cuckoo_clone(const rb_cuckoo *cf);
/* A new empty filter as RedisBloom's CF.RESERVE makes it: capacity / bucket_size buckets rounded up to a
 * power of two (at least 1), expansion rounded up to a power of two (0 stays 0). NULL with *why RB_TOOBIG
 * (arrays over max_bytes) or RB_NOMEM. */
rb_cuckoo *rb_cuckoo_new(uint64_t capacity, uint16_t bucket_size, uint16_t max_iterations, uint16_t expansion,
                         uint64_t max_bytes, rb_add_result *why);

rb_cuckoo *rb_cuckoo_rdb_load(RedisModuleIO *io, int encver);
void rb_cuckoo_rdb_save(RedisModuleIO *io, const rb_cuckoo *cf);

void rb_cuckoo_header_write(const rb_cuckoo *cf, uint8_t out[RB_CF_HEADER_SIZE]);
bool rb_cuckoo_chunk(const rb_cuckoo *cf, long long iter, size_t max, const uint8_t **p, size_t *n, long long *next);
rb_cuckoo *rb_cuckoo_from_header(const uint8_t *p, size_t n, uint64_t max_bytes, const char **err);
const char *rb_cuckoo_load_chunk(rb_cuckoo *cf, long long iter, const uint8_t *p, size_t n);

/* ---- allocation for the arrays: zeroed, refused by the maxmemory guard, NULL when unavailable ---- */
void *rb_alloc_zero(size_t n);

/* ---- the module side (rb_compat.c) ---- */
int bkr_rb_register_types(RedisModuleCtx *ctx);
/* The data type MBbloomCF (cf) or MBbloom--. */
RedisModuleType *bkr_rb_type(bool cf);
/* The handler to register for command `name`: a router in front of `fn` for BF/CF commands. */
RedisModuleCmdFunc bkr_rb_hook(const char *name, RedisModuleCmdFunc fn);
/* BK.CONVERT (rb_convert.c): RedisBloom-layout keys to bloomkit's own filters. */
int bkr_rb_register_commands(RedisModuleCtx *ctx);

#endif
