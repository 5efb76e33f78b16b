/*
 * CMS.* and TOPK.* (cms.c, topk.c): the count-min sketch and Top-K as Redis data types of their own.
 * They are sketches, not filters, so they are not BF/CF keys (no bkr_value): a key holds the typed
 * object itself, a bk_cms / bk_topk (types bloomkitS, bloomkitK), or for a key migrated from
 * RedisBloom an rb_cms / rb_topk in RedisBloom's layout (types CMSk-TYPE, TopK-TYPE; rb_sketch.h).
 *
 * Persistence: RDB holds the bloomkit saved form (docs/FORMAT.md, types 10 and 11) as one string
 * (encoding version 1), or RedisBloom's own encoding for its types; DUMP/RESTORE and replication's full
 * sync go through the same callbacks; the AOF rewrite emits BK.SKETCH.LOAD key BLOOMKIT|REDISBLOOM
 * <form>, which makes the key again from that form. Replication of writes is verbatim: a bloomkit Top-K
 * keeps its decay generator's state in the key (and in its saved form), so a replica draws the same
 * decay as its master and stays identical.
 */
#ifndef BKR_SKETCH_H
#define BKR_SKETCH_H

#include "module.h"
#include "rb_sketch.h"
#include "bloomkit/cms.h"
#include "bloomkit/topk.h"

enum { BKR_SK_CMS, BKR_SK_TOPK, BKR_SK_RB_CMS, BKR_SK_RB_TOPK };
extern RedisModuleType *bkr_sk_type[4];

/* What the key holds: SK index (-1: empty, -2: another type). */
int bkr_sk_open(RedisModuleCtx *ctx, RedisModuleString *name, int mode, RedisModuleKey **key, void **obj);
/* Open a key of one family for a command: a bloomkit sketch (*bk, of kind bk_kind) or a migrated one in
 * RedisBloom's layout (*rb, of kind rb_kind), the other NULL. Replies `missing` (an empty key) or
 * WRONGTYPE and returns false otherwise. */
bool bkr_sk_open_family(RedisModuleCtx *ctx, RedisModuleString *name, int mode, int bk_kind, int rb_kind,
                        const char *missing, void **bk, void **rb);

/* The largest saved form a sketch may have (one AOF argument, below proto-max-bulk-len's default). */
#define BKR_SK_MAX_BYTES ((uint64_t)256 << 20)

/* Reply with an item: a simple string as RedisBloom does, or a bulk string when it holds CR or LF
 * (which a simple string cannot carry). */
void bkr_sk_reply_item(RedisModuleCtx *ctx, const void *p, size_t n);

/* Type methods shared by both bloomkit sketch types (the bk_type tells which). */
int bkr_sk_types_register(RedisModuleCtx *ctx);
int bkr_topk_register(RedisModuleCtx *ctx);

#endif
