/*
 * TOPK.*: Top-K (include/bloomkit/topk.h, HeavyKeeper) with RedisBloom 2.4's commands and replies.
 *
 *   TOPK.RESERVE key k [width depth decay]   -> OK (without the three: width 8, depth 7, decay 0.9, as
 *                                               RedisBloom)
 *   TOPK.ADD key item [item ...]             -> per item the item it pushed out of the list, or nil
 *   TOPK.INCRBY key item increment [...]     -> the same, with increments in [0, 100000]
 *   TOPK.QUERY key item [item ...]           -> per item 1 if it is in the list, else 0
 *   TOPK.COUNT key item [item ...]           -> per item its estimated count
 *   TOPK.LIST key [WITHCOUNT]                -> the list, heaviest first (with the counts)
 *   TOPK.INFO key                            -> k, width, depth, decay
 */
#include <string.h>

#include "sketch.h"

#define TOPK_ERR(ctx, msg) RedisModule_ReplyWithError((ctx), (msg))
/* RedisBloom's text, spaces and all */
#define TOPK_INCR_ERR                                                                                      \
    "TopK: increment must be an integer greater or equal to 0                            and smaller or "  \
    "equal to 100,000"

typedef struct topk_ref {
    bk_topk *bk;
    rb_topk *rb;
} topk_ref;

static bool open_topk(RedisModuleCtx *ctx, RedisModuleString *name, int mode, topk_ref *r)
{
    void *bk, *rb;
    bool ok = bkr_sk_open_family(ctx, name, mode, BKR_SK_TOPK, BKR_SK_RB_TOPK, "TopK: key does not exist", &bk, &rb);
    r->bk = bk;
    r->rb = rb;
    return ok;
}

static bool arg_u32(RedisModuleString *s, uint32_t *out)
{
    long long v;
    if (!bkr_arg_ll(s, &v) || v < 1 || v > (long long)UINT32_MAX) return false;
    *out = (uint32_t)v;
    return true;
}

static int Topk_Reserve_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3 && argc != 6) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    void *obj;
    if (bkr_sk_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &obj) != -1)
        return TOPK_ERR(ctx, "TopK: key already exists");
    bk_topk_options o = BK_TOPK_OPTIONS_INIT;
    uint32_t k;
    if (!arg_u32(argv[2], &k)) return TOPK_ERR(ctx, "TopK: invalid k");
    o.width = 8;
    o.depth = 7;
    o.decay = 0.9;
    if (argc == 6) {
        if (!arg_u32(argv[3], &o.width)) return TOPK_ERR(ctx, "TopK: invalid width");
        if (!arg_u32(argv[4], &o.depth) || o.depth > BK_TOPK_MAX_DEPTH) return TOPK_ERR(ctx, "TopK: invalid depth");
        if (!bkr_arg_double(argv[5], &o.decay) || o.decay <= 0 || o.decay > 1)
            return TOPK_ERR(ctx, "TopK: invalid decay value. must be '<= 1' & '> 0'");
    }
    uint64_t bytes = (uint64_t)o.width * o.depth * 8 + (uint64_t)k * 24;
    if (bytes > bkr_cfg.max_filter_bytes || bytes > BKR_SK_MAX_BYTES) return bkr_reply_status(ctx, BK_ETOOBIG);
    bk_topk *t = NULL;
    bk_status s = bk_topk_new(k, &o, &t);
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    RedisModule_ModuleTypeSetValue(key, bkr_sk_type[BKR_SK_TOPK], t);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}
BKR_GUARDED(Topk_Reserve)

/* One item's increment, replying with what it pushed out (or nil). */
static void add_one(RedisModuleCtx *ctx, topk_ref *r, RedisModuleString *arg, uint32_t incr)
{
    size_t n;
    const char *item = RedisModule_StringPtrLen(arg, &n);
    if (r->bk) {
        bk_topk_item ex;
        if (bk_topk_incrby(r->bk, item, n, incr, &ex) != BK_OK) {
            bkr_reply_status(ctx, BK_ENOMEM);
            return;
        }
        if (ex.count && ex.key) bkr_sk_reply_item(ctx, ex.key, ex.len);
        else RedisModule_ReplyWithNull(ctx);
        return;
    }
    char *gone;
    size_t glen;
    rb_topk_add(r->rb, item, n, incr, &gone, &glen);
    if (gone) {
        bkr_sk_reply_item(ctx, gone, strlen(gone) < glen ? strlen(gone) : glen);
        RedisModule_Free(gone);
    } else {
        RedisModule_ReplyWithNull(ctx);
    }
}

static int Topk_Add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 3) return RedisModule_WrongArity(ctx);
    topk_ref r;
    if (!open_topk(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &r)) return REDISMODULE_OK;
    RedisModule_ReplyWithArray(ctx, argc - 2);
    for (int i = 2; i < argc; i++) add_one(ctx, &r, argv[i], 1);
    RedisModule_ReplicateVerbatim(ctx);
    return REDISMODULE_OK;
}

static int Topk_IncrBy(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 4 || argc % 2) return RedisModule_WrongArity(ctx);
    topk_ref r;
    if (!open_topk(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &r)) return REDISMODULE_OK;
    int pairs = (argc - 2) / 2;
    RedisModule_ReplyWithArray(ctx, pairs);
    /* Items are applied in order up to the first bad increment; it and every item after it answer
     * with the error and are not applied. */
    bool bad = false;
    for (int i = 0; i < pairs; i++) {
        long long v;
        if (!bad && (!bkr_arg_ll(argv[3 + 2 * i], &v) || v < 0 || v > 100000)) bad = true;
        if (bad) TOPK_ERR(ctx, TOPK_INCR_ERR);
        else add_one(ctx, &r, argv[2 + 2 * i], (uint32_t)v);
    }
    RedisModule_ReplicateVerbatim(ctx);
    return REDISMODULE_OK;
}

/* TOPK.QUERY and TOPK.COUNT: one integer per item, from the item's answer of the one or the other call. */
static int per_item(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool count)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 3) return RedisModule_WrongArity(ctx);
    topk_ref r;
    if (!open_topk(ctx, argv[1], REDISMODULE_READ, &r)) return REDISMODULE_OK;
    RedisModule_ReplyWithArray(ctx, argc - 2);
    for (int i = 2; i < argc; i++) {
        size_t n;
        const char *item = RedisModule_StringPtrLen(argv[i], &n);
        uint64_t v;
        if (count) v = r.bk ? bk_topk_count(r.bk, item, n) : rb_topk_count(r.rb, item, n);
        else v = r.bk ? bk_topk_query(r.bk, item, n) : rb_topk_query(r.rb, item, n);
        RedisModule_ReplyWithLongLong(ctx, (long long)v);
    }
    return REDISMODULE_OK;
}

static int Topk_Query(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) { return per_item(ctx, argv, argc, false); }
static int Topk_Count(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) { return per_item(ctx, argv, argc, true); }

static int Topk_List(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2 && argc != 3) return RedisModule_WrongArity(ctx);
    bool with = argc == 3;
    if (with && !bkr_arg_is(argv[2], "WITHCOUNT")) return TOPK_ERR(ctx, "WITHCOUNT keyword expected");
    topk_ref r;
    if (!open_topk(ctx, argv[1], REDISMODULE_READ, &r)) return REDISMODULE_OK;
    if (r.bk) {
        size_t n = bk_topk_list(r.bk, NULL, 0);
        bk_topk_item *items = RedisModule_PoolAlloc(ctx, (n ? n : 1) * sizeof *items);
        n = bk_topk_list(r.bk, items, n);
        RedisModule_ReplyWithArray(ctx, (long)(with ? 2 * n : n));
        for (size_t i = 0; i < n; i++) {
            if (items[i].key) bkr_sk_reply_item(ctx, items[i].key, items[i].len);
            else RedisModule_ReplyWithNull(ctx); /* keys given by hash only: not from these commands */
            if (with) RedisModule_ReplyWithLongLong(ctx, (long long)items[i].count);
        }
        return REDISMODULE_OK;
    }
    const rb_tk_entry **e = RedisModule_PoolAlloc(ctx, (size_t)r.rb->k * sizeof *e);
    size_t n = rb_topk_list(r.rb, e);
    RedisModule_ReplyWithArray(ctx, (long)(with ? 2 * n : n));
    for (size_t i = 0; i < n; i++) {
        if (e[i]->item) bkr_sk_reply_item(ctx, e[i]->item, strlen(e[i]->item));
        else RedisModule_ReplyWithNull(ctx);
        if (with) RedisModule_ReplyWithLongLong(ctx, (long long)e[i]->count);
    }
    return REDISMODULE_OK;
}

static int Topk_Info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2) return RedisModule_WrongArity(ctx);
    topk_ref r;
    if (!open_topk(ctx, argv[1], REDISMODULE_READ, &r)) return REDISMODULE_OK;
    RedisModule_ReplyWithArray(ctx, 8);
    RedisModule_ReplyWithSimpleString(ctx, "k");
    RedisModule_ReplyWithLongLong(ctx, r.bk ? bk_topk_k(r.bk) : r.rb->k);
    RedisModule_ReplyWithSimpleString(ctx, "width");
    RedisModule_ReplyWithLongLong(ctx, r.bk ? bk_topk_width(r.bk) : r.rb->width);
    RedisModule_ReplyWithSimpleString(ctx, "depth");
    RedisModule_ReplyWithLongLong(ctx, r.bk ? bk_topk_depth(r.bk) : r.rb->depth);
    RedisModule_ReplyWithSimpleString(ctx, "decay");
    RedisModule_ReplyWithDouble(ctx, r.bk ? bk_topk_decay(r.bk) : r.rb->decay);
    return REDISMODULE_OK;
}

static const bkr_command topk_commands[] = {
    { "topk.reserve", Topk_Reserve, "write deny-oom", -3, BKR_KEY_CREATE,
      "Creates a Top-K sketch keeping the k heaviest items", "O(1)" },
    { "topk.add", Topk_Add, "write deny-oom", -3, BKR_KEY_WRITE,
      "Adds items, replying with the items they pushed out of the list", "O(n * k)" },
    { "topk.incrby", Topk_IncrBy, "write deny-oom", -4, BKR_KEY_WRITE,
      "Increases the counts of items, replying with the items they pushed out", "O(n * k)" },
    { "topk.query", Topk_Query, "readonly fast", -3, BKR_KEY_READ, "Whether items are in the list",
      "O(n * k)" },
    { "topk.count", Topk_Count, "readonly fast", -3, BKR_KEY_READ, "The estimated counts of items",
      "O(n * k)" },
    { "topk.list", Topk_List, "readonly", -2, BKR_KEY_READ, "The list, heaviest first", "O(k log k)" },
    { "topk.info", Topk_Info, "readonly fast", 2, BKR_KEY_READ, "k, width, depth and decay of a sketch",
      "O(1)" },
};

int bkr_topk_register(RedisModuleCtx *ctx)
{
    return bkr_register(ctx, topk_commands, sizeof topk_commands / sizeof topk_commands[0]);
}
