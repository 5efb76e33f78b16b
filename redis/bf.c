/*
 * BF.* : the Bloom side, RedisBloom 2.4.23's commands over bloomkit's scalable filter.
 *
 * BF.RESERVE / BF.ADD / BF.INSERT create a bk_scalable (NONSCALING = BK_SCALABLE_NONSCALING, EXPANSION =
 * growth, 1 .. 16; EXPANSION 1 grows by same-size sub-filters, as in RedisBloom).
 * A BF key may also hold any other non-cuckoo bloomkit filter loaded by BK.IMPORT (classic, blocked,
 * counting, binary fuse): the same commands work on it through the generic handle, and INFO reports it
 * as one non-scaling filter. Options are read positionally after the fixed arguments, so a key or an
 * item that happens to be spelled like an option is just data (docs/REDIS.md lists every difference
 * from RedisBloom).
 */
#include "module.h"

#include <string.h>

#define BF_DEFAULT_EXPANSION 2
/* The lowest error rate a new Bloom filter is made of blocked sub-filters for (BF_SUBFILTERS blocked). */
#define BF_BLOCKED_MIN_ERROR 1e-3

/* A new scalable filter in a value. */
static bk_status bf_create(long long capacity, double error, long long expansion, bool nonscaling,
                           bkr_value **out)
{
    size_t heap0 = bkr_heap_now();
    bk_scalable_options o = bk_scalable_default_options();
    o.growth = (uint32_t)expansion;
    if (nonscaling) o.flags |= BK_SCALABLE_NONSCALING;
    o.tightening = bkr_cfg.bf_tightening;
    o.max_bytes = bkr_cfg.max_filter_bytes;
    /* Below BF_BLOCKED_MIN_ERROR the blocked sub-filters' memory runs away from the classic ones' (1024-bit
     * blocks, k <= 16: 1.05x at 1e-3, 1.09x at 1e-4, 1.2x at 1e-6, 2.4x at 1e-12, 15x at 1e-20), so a
     * filter for so low an error rate is a chain of classic sub-filters, RedisBloom's size (docs/REDIS.md). */
    if (bkr_cfg.bf_classic || error < BF_BLOCKED_MIN_ERROR) o.flags |= BK_SCALABLE_CLASSIC;
    /* compact chains, as RedisBloom sizes them: half the error budget to the first sub-filter, which
     * for a small filter is a classic one inside the chain's own allocation (docs/REDIS.md, "Many
     * small filters") */
    o.flags |= BK_SCALABLE_COMPACT;
    bk_scalable *sf;
    bk_status s = bk_scalable_new((uint64_t)capacity, error, &o, &sf);
    if (s != BK_OK) return s;
    *out = bkr_value_wrap(BK_TYPE_SCALABLE, sf, heap0);
    return *out ? BK_OK : BK_ENOMEM;
}

/* Insert unless probably present: BK_OK (*added = true), BK_EEXISTS (already there), or an error. */
static bk_status bf_add(bkr_value *v, const char *p, size_t n)
{
    if (v->type == BK_TYPE_SCALABLE) return bk_scalable_add_if_absent(v->obj, p, n);
    if (bk_filter_contains(v->obj, p, n)) return BK_EEXISTS;
    return bk_filter_add(v->obj, p, n);
}

static bool bf_contains(const bkr_value *v, const char *p, size_t n)
{
    if (v->type == BK_TYPE_SCALABLE) return bk_scalable_contains(v->obj, p, n);
    return bk_filter_contains(v->obj, p, n);
}

/* The error reply for a failed insert of one item (RedisBloom's text where it has one). */
static int bf_reply_add_error(RedisModuleCtx *ctx, bk_status s)
{
    switch (s) {
    case BK_EFULL: return RedisModule_ReplyWithError(ctx, "ERR non scaling filter is full");
    case BK_ETOOBIG:
    {
        RedisModuleString *m = RedisModule_CreateStringPrintf(
            ctx, "ERR filter cannot grow: it reached its size limit (MAX_FILTER_SIZE %llu bytes)",
            bkr_cfg.max_filter_bytes);
        return RedisModule_ReplyWithError(ctx, RedisModule_StringPtrLen(m, NULL));
    }
    case BK_ENOTSUP: return RedisModule_ReplyWithError(ctx, "ERR this filter type is read-only");
    default: return bkr_reply_status(ctx, s);
    }
}

/* ---- BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING] ---- */

static int validate_expansion(RedisModuleCtx *ctx, long long expansion)
{
    if (expansion < 1) {
        RedisModule_ReplyWithError(ctx, "ERR expansion should be greater or equal to 1");
        return 0;
    }
    if (expansion > BK_SCALABLE_MAX_GROWTH) {
        RedisModule_ReplyWithError(ctx, "ERR expansion should be at most 16");
        return 0;
    }
    return 1;
}

BKR_GUARDED(BF_Reserve)
static int BF_Reserve_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 4 || argc > 7) return RedisModule_WrongArity(ctx);
    double error;
    if (RedisModule_StringToDouble(argv[2], &error) != REDISMODULE_OK)
        return RedisModule_ReplyWithError(ctx, "ERR bad error rate");
    if (!(error > 0 && error < 1)) return RedisModule_ReplyWithError(ctx, "ERR (0 < error rate range < 1) ");
    long long capacity;
    if (!bkr_arg_ll(argv[3], &capacity)) return RedisModule_ReplyWithError(ctx, "ERR bad capacity");
    if (capacity <= 0) return RedisModule_ReplyWithError(ctx, "ERR (capacity should be larger than 0)");

    bool nonscaling = false, have_expansion = false;
    long long expansion = BF_DEFAULT_EXPANSION;
    for (int i = 4; i < argc; i++) {
        if (bkr_arg_is(argv[i], "NONSCALING")) {
            nonscaling = true;
        } else if (bkr_arg_is(argv[i], "EXPANSION")) {
            if (i + 1 == argc) return RedisModule_ReplyWithError(ctx, "ERR no expansion");
            if (!bkr_arg_ll(argv[++i], &expansion)) return RedisModule_ReplyWithError(ctx, "ERR bad expansion");
            have_expansion = true;
        } else {
            return RedisModule_ReplyWithError(ctx, "ERR unknown argument");
        }
    }
    if (have_expansion && nonscaling) return RedisModule_ReplyWithError(ctx, "Nonscaling filters cannot expand");
    if (have_expansion && !validate_expansion(ctx, expansion)) return REDISMODULE_OK;

    RedisModuleKey *key;
    if (!bkr_open_new(ctx, argv[1], BKR_BF, &key)) return REDISMODULE_OK;
    bkr_value *v;
    bk_status s = bf_create(capacity, error, expansion, nonscaling, &v);
    return bkr_reply_created(ctx, key, BKR_BF, s, v);
}

/* ---- BF.ADD / BF.MADD / BF.INSERT ---- */

typedef struct bf_insert_opts {
    long long capacity;
    double error;
    long long expansion;
    bool nonscaling;
    bool nocreate;
    bool multi;
} bf_insert_opts;

static int bf_insert_common(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleString **items, int n,
                            const bf_insert_opts *o)
{
    RedisModuleKey *key;
    bkr_value *v;
    bool changed = false;
    bkr_lookup st = bkr_open(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE, BKR_BF, &key, &v);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_EMPTY) {
        if (o->nocreate) return RedisModule_ReplyWithError(ctx, "ERR not found");
        bk_status s = bf_create(o->capacity, o->error, o->expansion, o->nonscaling, &v);
        if (s != BK_OK) return bkr_reply_status(ctx, s);
        bkr_set(key, BKR_BF, v);
        changed = true;
    } else if (bkr_stage_of(v)) {
        return bkr_reply_restoring(ctx);
    }
    if (o->multi) RedisModule_ReplyWithArray(ctx, REDISMODULE_POSTPONED_ARRAY_LEN);
    long replied = 0;
    size_t heap0 = bkr_heap_now();
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *p = RedisModule_StringPtrLen(items[i], &len);
        bk_status s = bf_add(v, p, len);
        replied++;
        if (s == BK_OK || s == BK_EEXISTS) {
            changed |= s == BK_OK;
            RedisModule_ReplyWithBool(ctx, s == BK_OK);
        } else {
            /* As RedisBloom: the error takes the item's place and the rest are not tried. */
            bf_reply_add_error(ctx, s);
            break;
        }
    }
    v->heap += bkr_heap_now() - heap0; /* sub-filters added */
    if (o->multi) RedisModule_ReplySetArrayLength(ctx, replied);
    /* Replicas and the AOF get the command only when it changed something: a replayed add of items
     * already present is harmless, but one that ends in "full" would be an error on the replica. */
    if (changed) RedisModule_ReplicateVerbatim(ctx);
    return REDISMODULE_OK;
}

static bf_insert_opts bf_defaults(bool multi)
{
    return (bf_insert_opts){ .capacity = bkr_cfg.bf_initial_size, .error = bkr_cfg.bf_error_rate,
                             .expansion = BF_DEFAULT_EXPANSION, .multi = multi };
}

BKR_GUARDED(BF_Add)
static int BF_Add_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3) return RedisModule_WrongArity(ctx);
    bf_insert_opts o = bf_defaults(false);
    return bf_insert_common(ctx, argv[1], argv + 2, 1, &o);
}

BKR_GUARDED(BF_MAdd)
static int BF_MAdd_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 3) return RedisModule_WrongArity(ctx);
    bf_insert_opts o = bf_defaults(true);
    return bf_insert_common(ctx, argv[1], argv + 2, argc - 2, &o);
}

/* BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS item [item ...] */
BKR_GUARDED(BF_Insert)
static int BF_Insert_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 4) return RedisModule_WrongArity(ctx);
    bf_insert_opts o = bf_defaults(true);
    bool have_expansion = false;
    int items = -1;
    for (int i = 2; i < argc && items < 0; i++) {
        if (bkr_arg_is(argv[i], "ITEMS")) {
            items = i + 1;
        } else if (bkr_arg_is(argv[i], "CAPACITY")) {
            if (++i == argc) return RedisModule_WrongArity(ctx);
            if (!bkr_arg_ll(argv[i], &o.capacity)) return RedisModule_ReplyWithError(ctx, "Bad capacity");
        } else if (bkr_arg_is(argv[i], "ERROR")) {
            if (++i == argc) return RedisModule_WrongArity(ctx);
            if (RedisModule_StringToDouble(argv[i], &o.error) != REDISMODULE_OK)
                return RedisModule_ReplyWithError(ctx, "Bad error rate");
        } else if (bkr_arg_is(argv[i], "EXPANSION")) {
            if (++i == argc) return RedisModule_WrongArity(ctx);
            if (!bkr_arg_ll(argv[i], &o.expansion)) return RedisModule_ReplyWithError(ctx, "Bad expansion");
            have_expansion = true;
        } else if (bkr_arg_is(argv[i], "NOCREATE")) {
            o.nocreate = true;
        } else if (bkr_arg_is(argv[i], "NONSCALING")) {
            o.nonscaling = true;
        } else {
            return RedisModule_ReplyWithError(ctx, "Unknown argument received");
        }
    }
    if (items < 0 || items >= argc) return RedisModule_WrongArity(ctx);
    if (!(o.error > 0 && o.error < 1) || o.capacity < 1 || o.expansion < 1)
        return RedisModule_ReplyWithError(ctx, "Bad argument received");
    /* NONSCALING with EXPANSION: accepted, the expansion is ignored (RedisBloom 2.4's BF.INSERT does the
     * same, and redis-py's bf().insert(expansion=..., noScale=True) sends exactly this). A value that
     * would be refused without NONSCALING is still refused, so a typo does not pass unnoticed. */
    if (have_expansion && !validate_expansion(ctx, o.expansion)) return REDISMODULE_OK;
    if (o.nonscaling) o.expansion = BF_DEFAULT_EXPANSION;
    return bf_insert_common(ctx, argv[1], argv + items, argc - items, &o);
}

/* ---- BF.EXISTS / BF.MEXISTS ---- */

static int bf_check(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool multi)
{
    RedisModuleKey *key;
    bkr_value *v = NULL;
    bkr_lookup st = bkr_open(ctx, argv[1], REDISMODULE_READ, BKR_BF, &key, &v);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_OK && bkr_stage_of(v)) return bkr_reply_restoring(ctx);
    int n = argc - 2;
    if (!multi) {
        size_t len;
        const char *p = RedisModule_StringPtrLen(argv[2], &len);
        return RedisModule_ReplyWithBool(ctx, st == BKR_OK && bf_contains(v, p, len));
    }
    RedisModule_ReplyWithArray(ctx, n);
    if (st != BKR_OK) {
        for (int i = 0; i < n; i++) RedisModule_ReplyWithBool(ctx, 0);
        return REDISMODULE_OK;
    }
    /* Many items: the batch query hashes them all, prefetches, then probes, which hides the memory
     * latency of a filter larger than the caches. */
    const void **keys;
    size_t *lens;
    uint8_t *res = bkr_item_batch(ctx, argv + 2, n, &keys, &lens);
    if (v->type == BK_TYPE_SCALABLE)
        bk_scalable_contains_many(v->obj, (const void *const *)keys, lens, (size_t)n, res, NULL);
    else
        bk_filter_contains_many(v->obj, (const void *const *)keys, lens, (size_t)n, res, NULL);
    for (int i = 0; i < n; i++) RedisModule_ReplyWithBool(ctx, res[i]);
    return REDISMODULE_OK;
}

static int BF_Exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3) return RedisModule_WrongArity(ctx);
    return bf_check(ctx, argv, argc, false);
}

static int BF_MExists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 3) return RedisModule_WrongArity(ctx);
    return bf_check(ctx, argv, argc, true);
}

/* ---- BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION] ---- */

typedef struct bf_info {
    long long capacity, size, filters, items, expansion; /* expansion 0: non-scaling (null) */
} bf_info;

static void bf_info_of(const bkr_value *v, bf_info *o)
{
    o->size = (long long)bkr_value_memory(v);
    if (v->type == BK_TYPE_SCALABLE) {
        o->capacity = (long long)bk_scalable_capacity(v->obj);
        o->filters = bk_scalable_filters(v->obj);
        o->items = (long long)bk_scalable_count(v->obj);
        /* RedisBloom: null for NONSCALING, else the growth (1 included) */
        o->expansion = bk_scalable_nonscaling(v->obj) ? 0 : bk_scalable_growth(v->obj);
    } else {
        bk_stats st;
        bk_filter_stats(v->obj, &st);
        o->capacity = (long long)st.capacity;
        o->filters = st.subfilters ? st.subfilters : 1;
        o->items = (long long)st.count;
        o->expansion = 0;
    }
}

static void reply_expansion(RedisModuleCtx *ctx, long long e)
{
    if (e) RedisModule_ReplyWithLongLong(ctx, e);
    else RedisModule_ReplyWithNull(ctx);
}

static int BF_Info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2 && argc != 3) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_value *v;
    bkr_lookup st = bkr_open(ctx, argv[1], REDISMODULE_READ, BKR_BF, &key, &v);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_EMPTY) return RedisModule_ReplyWithError(ctx, "ERR not found");
    if (bkr_stage_of(v)) return bkr_reply_restoring(ctx);
    bf_info in;
    bf_info_of(v, &in);
    static const char *names[] = { "Capacity", "Size", "Number of filters", "Number of items inserted",
                                   "Expansion rate" };
    static const char *fields[] = { "CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION" };
    long long vals[] = { in.capacity, in.size, in.filters, in.items, in.expansion };
    if (argc == 3) {
        int which = -1;
        for (int i = 0; i < 5; i++)
            if (bkr_arg_is(argv[2], fields[i])) which = i;
        if (which < 0) return RedisModule_ReplyWithError(ctx, "Invalid information value");
        /* RESP2: a one-element array (RedisBloom 2.4); RESP3: a one-entry map (RedisBloom 2.6+). */
        if (bkr_resp3(ctx)) {
            RedisModule_ReplyWithMap(ctx, 1);
            RedisModule_ReplyWithSimpleString(ctx, names[which]);
        } else {
            RedisModule_ReplyWithArray(ctx, 1);
        }
        if (which == 4) reply_expansion(ctx, vals[4]);
        else RedisModule_ReplyWithLongLong(ctx, vals[which]);
        return REDISMODULE_OK;
    }
    RedisModule_ReplyWithMap(ctx, 5); /* RESP2: the flat name, value, ... array of RedisBloom */
    for (int i = 0; i < 5; i++) {
        RedisModule_ReplyWithSimpleString(ctx, names[i]);
        if (i == 4) reply_expansion(ctx, vals[4]);
        else RedisModule_ReplyWithLongLong(ctx, vals[i]);
    }
    return REDISMODULE_OK;
}

/* ---- BF.CARD key ---- */

static int BF_Card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_value *v;
    bkr_lookup st = bkr_open(ctx, argv[1], REDISMODULE_READ, BKR_BF, &key, &v);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_EMPTY) return RedisModule_ReplyWithLongLong(ctx, 0);
    if (bkr_stage_of(v)) return bkr_reply_restoring(ctx);
    bf_info in;
    bf_info_of(v, &in);
    return RedisModule_ReplyWithLongLong(ctx, in.items);
}

/* ---- BF.SCANDUMP key iter / BF.LOADCHUNK key iter data ---- */

static int BF_ScanDump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_value *v;
    bkr_lookup st = bkr_open(ctx, argv[1], REDISMODULE_READ, BKR_BF, &key, &v);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_EMPTY) return RedisModule_ReplyWithError(ctx, "ERR not found");
    long long iter;
    if (!bkr_arg_ll(argv[2], &iter)) return RedisModule_ReplyWithError(ctx, "Second argument must be numeric");
    return bkr_scandump(ctx, v, iter, BKR_BF);
}

BKR_GUARDED(BF_LoadChunk)
static int BF_LoadChunk_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 4) return RedisModule_WrongArity(ctx);
    long long iter;
    if (!bkr_arg_ll(argv[2], &iter)) return RedisModule_ReplyWithError(ctx, "ERR Second argument must be numeric");
    RedisModuleKey *key;
    bkr_value *v = NULL;
    bkr_lookup st = bkr_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, BKR_BF, &key, &v);
    return bkr_loadchunk(ctx, key, st, v, iter, argv[3], BKR_BF);
}

static const bkr_command bf_commands[] = {
    { "bf.reserve", BF_Reserve, "write deny-oom", -4, BKR_KEY_CREATE,
      "Creates an empty Bloom filter with an error rate and initial capacity", "O(1)" },
    { "bf.add", BF_Add, "write deny-oom", 3, BKR_KEY_WRITE,
      "Adds an item, creating the filter if it does not exist", "O(k + i)" },
    { "bf.madd", BF_MAdd, "write deny-oom", -3, BKR_KEY_WRITE,
      "Adds items, creating the filter if it does not exist", "O(n * (k + i))" },
    { "bf.insert", BF_Insert, "write deny-oom", -4, BKR_KEY_WRITE,
      "Adds items, creating the filter with the given parameters if it does not exist", "O(n * (k + i))" },
    { "bf.exists", BF_Exists, "readonly fast", 3, BKR_KEY_READ,
      "Whether an item may be in the filter", "O(k * i)" },
    { "bf.mexists", BF_MExists, "readonly fast", -3, BKR_KEY_READ,
      "Whether each item may be in the filter", "O(n * k * i)" },
    { "bf.info", BF_Info, "readonly fast", -2, BKR_KEY_READ, "Information about a Bloom filter", "O(1)" },
    { "bf.card", BF_Card, "readonly fast", 2, BKR_KEY_READ,
      "The number of items added to a Bloom filter", "O(1)" },
    { "bf.scandump", BF_ScanDump, "readonly", 3, BKR_KEY_READ,
      "Begins or continues an incremental save of a Bloom filter", "O(n)" },
    { "bf.loadchunk", BF_LoadChunk, "write deny-oom", 4, BKR_KEY_CREATE,
      "Restores a Bloom filter saved by BF.SCANDUMP, one chunk at a time", "O(n)" },
};

/* The first blocked sizing of a process pages in the code it runs and binds the math functions it
 * calls: a few hundred microseconds, where a later one takes a few. The module pays it
 * once at load, so that the first BF.RESERVE (or BF.ADD creating a key) does not pay it on the event
 * loop: it makes and frees one filter of 1000 items at 1%, blocked sub-filters, as BF.RESERVE would. */
void bkr_bf_prepare(void)
{
    bkr_value *v;
    if (bf_create(1000, 0.01, BF_DEFAULT_EXPANSION, false, &v) == BK_OK) bkr_value_free(v);
}

int bkr_bf_register(RedisModuleCtx *ctx)
{
    return bkr_register(ctx, bf_commands, sizeof bf_commands / sizeof bf_commands[0]);
}

/* A new empty Bloom filter as BF.RESERVE makes it (BK.CONVERT, rb_convert.c). */
bk_status bkr_bf_new_value(long long capacity, double error, long long expansion, bool nonscaling, bkr_value **out)
{
    return bf_create(capacity, error, expansion, nonscaling, out);
}
