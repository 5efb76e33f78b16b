/*
 * RedisBloom 2.x's count-min sketch (CMSk-TYPE) and Top-K (TopK-TYPE) in RedisBloom's own layout and
 * hashing, for keys migrated from RedisBloom (as rb_compat.h does for BF and CF): their counters were
 * placed by MurmurHash2, so they answer correctly only that way and are kept as they are, saved in
 * RedisBloom's RDB encoding (version 0) so RedisBloom can load them back.
 *
 *   CMS:   width, depth, the total; depth rows of width uint32 counters, row i's column
 *          MurmurHash2(item, seed i) % width; counters saturate at UINT32_MAX.
 *   Top-K: k, width, depth, decay; depth rows of width buckets (fingerprint MurmurHash2(item, 1919),
 *          count) updated by HeavyKeeper's decay, and a min-heap of k (fingerprint, item, count).
 */
#ifndef BKR_RB_SKETCH_H
#define BKR_RB_SKETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redismodule.h"

typedef struct rb_cms {
    uint64_t width, depth;
    uint64_t total;
    uint32_t *cells;
} rb_cms;

void rb_cms_free(rb_cms *c);
uint64_t rb_cms_incrby(rb_cms *c, const void *item, size_t len, uint32_t value);
uint64_t rb_cms_query(const rb_cms *c, const void *item, size_t len);
/* dst = sum of weights[i] * srcs[i] (all of dst's dimensions); false (dst unchanged) when a counter would
 * pass UINT32_MAX or go negative, or the total negative: RedisBloom's "MERGE overflow". */
bool rb_cms_merge(rb_cms *dst, const rb_cms *const *srcs, const long long *weights, size_t n);
size_t rb_cms_memory(const rb_cms *c);
rb_cms *rb_cms_rdb_load(RedisModuleIO *io, int encver);
void rb_cms_rdb_save(RedisModuleIO *io, const rb_cms *c);

typedef struct rb_tk_bucket {
    uint32_t fp, count;
} rb_tk_bucket;
typedef struct rb_tk_entry {
    uint32_t fp, len, count;
    char *item; /* len bytes and a NUL; NULL for an empty slot */
} rb_tk_entry;
typedef struct rb_topk {
    uint32_t k, width, depth;
    double decay;
    rb_tk_bucket *buckets;
    rb_tk_entry *heap;
} rb_topk;

void rb_topk_free(rb_topk *t);
/* Add; *expelled receives the item pushed out of the heap (the caller frees it with RedisModule_Free),
 * or NULL. */
void rb_topk_add(rb_topk *t, const void *item, size_t len, uint32_t incr, char **expelled, size_t *expelled_len);
bool rb_topk_query(const rb_topk *t, const void *item, size_t len);
uint64_t rb_topk_count(const rb_topk *t, const void *item, size_t len);
/* The heap's occupied entries, heaviest first, into out (k entries); returns how many. */
size_t rb_topk_list(const rb_topk *t, const rb_tk_entry **out);
size_t rb_topk_memory(const rb_topk *t);
rb_topk *rb_topk_rdb_load(RedisModuleIO *io, int encver);
void rb_topk_rdb_save(RedisModuleIO *io, const rb_topk *t);

/* AOF rewrite and COPY: a self-contained form of either (kind 'C' or 'T' first), and back. */
void *rb_sketch_blob(const void *v, char kind, size_t *len);
void *rb_sketch_from_blob(const void *p, size_t n, char *kind);

#endif
