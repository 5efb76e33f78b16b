/*
 * BK.AGING.*: aging filters (include/bloomkit/aging.h) in Redis keys: "seen in the last W insertions"
 * or "in the last T milliseconds". The value is an ordinary Bloom-family key (bkr_value holding a
 * bk_filter of type BK_TYPE_AGING), so RDB, AOF rewrite (BF.LOADCHUNK), DEBUG DIGEST, COPY, MEMORY
 * USAGE, SCANDUMP/LOADCHUNK and BK.EXPORT/IMPORT/INFO treat it like the others.
 *
 *   BK.AGING.RESERVE key ERROR p COUNT w [GENERATIONS g]
 *   BK.AGING.RESERVE key ERROR p TIME ms CAPACITY n [GENERATIONS g] [AT ms]
 *   BK.AGING.ADD key item [item ...]           -> the number of items inserted
 *   BK.AGING.ADDIFABSENT key item [item ...]   -> per item 1 (new in the window, now inserted) or 0
 *   BK.AGING.EXISTS key item [item ...]        -> per item 1 (probably in the window) or 0
 *   BK.AGING.INFO key                          -> the window, its generations, fill, FPR now
 *   BK.AGING.APPLY key ms ADD|ADDIFABSENT item [item ...]   the replicated form of the two writes
 *
 * Time windows read the server's clock (RedisModule_Milliseconds). So that a replica or an AOF replay
 * ends with the same filter, writes are propagated with the time the master used: ADD and ADDIFABSENT
 * as BK.AGING.APPLY key <ms> <op> items, and RESERVE of a time window with AT <ms>. A filter's ring
 * only turns forward, so a replayed time older than the filter's current generation is the current
 * generation (never an earlier one). Reads use the local server's clock.
 */
#include <string.h>

#include "module.h"
#include "bloomkit/aging.h"

/* The time of the command being run, in ms: the server's clock, or the replicated one. Filters read
 * it through their clock callback, set on every access (a filter loaded from RDB starts with the
 * wall clock). Redis runs commands on one thread. */
static uint64_t cmd_now;
static uint64_t cmd_clock(void *ctx) { return *(const uint64_t *)ctx; }

/* Open key argv[1] as an aging filter. Replies and returns NULL when it is not one (missing key:
 * *empty is set and nothing is replied when allow_empty). */
static bk_aging *open_aging(RedisModuleCtx *ctx, RedisModuleString *name, int mode, RedisModuleKey **key,
                            bool allow_empty, bool *empty)
{
    bkr_value *v = NULL;
    if (empty) *empty = false;
    bkr_lookup st = bkr_open(ctx, name, mode, BKR_BF, key, &v);
    if (st == BKR_WRONGTYPE) {
        bkr_reply_wrongtype(ctx);
        return NULL;
    }
    if (st == BKR_EMPTY) {
        if (empty) *empty = true;
        if (!allow_empty) RedisModule_ReplyWithError(ctx, "ERR not found");
        return NULL;
    }
    if (bkr_stage_of(v)) {
        bkr_reply_restoring(ctx);
        return NULL;
    }
    if (v->type != BK_TYPE_AGING) {
        RedisModule_ReplyWithError(ctx, "WRONGTYPE the key holds another kind of filter, not an aging filter");
        return NULL;
    }
    bk_aging *a = bkr_typed(v);
    bk_aging_set_clock(a, cmd_clock, &cmd_now);
    return a;
}

static bool arg_u64(RedisModuleString *s, uint64_t *out, uint64_t min)
{
    long long v;
    if (!bkr_arg_ll(s, &v) || v < 0 || (uint64_t)v < min) return false;
    *out = (uint64_t)v;
    return true;
}

/* ---- BK.AGING.RESERVE ---- */

BKR_GUARDED(Aging_Reserve)
static int Aging_Reserve_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 6) return RedisModule_WrongArity(ctx);
    double p = 0;
    uint64_t window = 0, capacity = 0, gens = 0, at = 0;
    bool have_p = false, count = false, time = false, have_at = false;
    for (int i = 2; i < argc; i++) {
        if (i + 1 == argc) return RedisModule_ReplyWithError(ctx, "ERR syntax error: an option lacks its value");
        RedisModuleString *val = argv[++i];
        if (bkr_arg_is(argv[i - 1], "ERROR")) {
            if (!bkr_arg_double(val, &p) || !(p > 0 && p < 1))
                return RedisModule_ReplyWithError(ctx, "ERR (0 < error rate range < 1)");
            have_p = true;
        } else if (bkr_arg_is(argv[i - 1], "COUNT")) {
            if (!arg_u64(val, &window, 1)) return RedisModule_ReplyWithError(ctx, "ERR bad COUNT window");
            count = true;
        } else if (bkr_arg_is(argv[i - 1], "TIME")) {
            if (!arg_u64(val, &window, 1)) return RedisModule_ReplyWithError(ctx, "ERR bad TIME window (ms)");
            time = true;
        } else if (bkr_arg_is(argv[i - 1], "CAPACITY")) {
            if (!arg_u64(val, &capacity, 1)) return RedisModule_ReplyWithError(ctx, "ERR bad capacity");
        } else if (bkr_arg_is(argv[i - 1], "GENERATIONS")) {
            if (!arg_u64(val, &gens, 2) || gens > BK_AGING_MAX_GENERATIONS)
                return RedisModule_ReplyWithError(ctx, "ERR GENERATIONS must be 2 to 16");
        } else if (bkr_arg_is(argv[i - 1], "AT")) {
            if (!arg_u64(val, &at, 0)) return RedisModule_ReplyWithError(ctx, "ERR bad AT time (ms)");
            have_at = true;
        } else {
            return RedisModule_ReplyWithError(ctx, "ERR unknown argument");
        }
    }
    if (!have_p) return RedisModule_ReplyWithError(ctx, "ERR ERROR p is required");
    if (count == time) return RedisModule_ReplyWithError(ctx, "ERR give one window: COUNT w or TIME ms");
    if (time && !capacity) return RedisModule_ReplyWithError(ctx, "ERR a TIME window needs CAPACITY n");
    if (count && capacity) return RedisModule_ReplyWithError(ctx, "ERR CAPACITY is for TIME windows");
    if (count && have_at) return RedisModule_ReplyWithError(ctx, "ERR AT is for TIME windows");

    RedisModuleKey *key;
    if (!bkr_open_new(ctx, argv[1], BKR_BF, &key)) return REDISMODULE_OK;
    /* MAX_FILTER_SIZE, before anything is allocated (the guard then checks the ring against maxmemory) */
    bk_aging_geometry geo;
    bk_status s = bk_aging_size(time ? capacity : window, p, (uint32_t)gens, &geo);
    if (s == BK_OK && (double)geo.bytes > (double)bkr_cfg.max_filter_bytes) s = BK_ETOOBIG;
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    cmd_now = have_at ? at : (uint64_t)RedisModule_Milliseconds();
    bk_aging_options o = BK_AGING_OPTIONS_INIT;
    o.generations = (uint32_t)gens;
    o.clock = cmd_clock;
    o.clock_ctx = &cmd_now;
    bk_aging *a;
    size_t heap0 = bkr_heap_now();
    s = time ? bk_aging_new_time(window, capacity, p, &o, &a) : bk_aging_new_count(window, p, &o, &a);
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    bk_filter *f;
    if ((s = bk_filter_wrap(BK_TYPE_AGING, a, &f)) != BK_OK) {
        bk_aging_free(a);
        return bkr_reply_status(ctx, s);
    }
    bkr_value *v = bkr_value_from_filter(f, heap0);
    if (!v) {
        bk_filter_free(f);
        return bkr_reply_status(ctx, BK_ENOMEM);
    }
    bkr_set(key, BKR_BF, v);
    /* The creation time sets a time window's generations: replicas get the master's. */
    if (time && !have_at)
        RedisModule_Replicate(ctx, "BK.AGING.RESERVE", "vcl", argv + 1, (size_t)(argc - 1), "AT",
                              (long long)cmd_now);
    else
        RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* ---- writes: ADD, ADDIFABSENT, and APPLY (their replicated form) ---- */

static int aging_write(RedisModuleCtx *ctx, RedisModuleString *name, uint64_t now, bool if_absent,
                       RedisModuleString **items, int n)
{
    RedisModuleKey *key;
    bk_aging *a = open_aging(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE, &key, false, NULL);
    if (!a) return REDISMODULE_OK;
    cmd_now = now;
    const void **keys;
    size_t *lens;
    uint8_t *res = bkr_item_batch(ctx, items, n, &keys, &lens);
    if (if_absent) {
        bk_status s = bk_aging_add_if_absent_many(a, (const void *const *)keys, lens, (size_t)n, res, NULL);
        if (s != BK_OK) return bkr_reply_status(ctx, s);
        RedisModule_ReplyWithArray(ctx, n);
        for (int i = 0; i < n; i++) RedisModule_ReplyWithLongLong(ctx, !res[i]);
    } else {
        bk_status s = bk_aging_add_many(a, (const void *const *)keys, lens, (size_t)n);
        if (s != BK_OK) return bkr_reply_status(ctx, s);
        RedisModule_ReplyWithLongLong(ctx, n);
    }
    /* Every write changes the filter (an insertion counts toward a count window even when its key was
     * there): replicate it with the time used. */
    RedisModule_Replicate(ctx, "BK.AGING.APPLY", "slcv", name, (long long)now, if_absent ? "ADDIFABSENT" : "ADD",
                          items, (size_t)n);
    return REDISMODULE_OK;
}

static int Aging_Add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 3) return RedisModule_WrongArity(ctx);
    return aging_write(ctx, argv[1], (uint64_t)RedisModule_Milliseconds(), false, argv + 2, argc - 2);
}

static int Aging_AddIfAbsent(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 3) return RedisModule_WrongArity(ctx);
    return aging_write(ctx, argv[1], (uint64_t)RedisModule_Milliseconds(), true, argv + 2, argc - 2);
}

static int Aging_Apply(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 5) return RedisModule_WrongArity(ctx);
    uint64_t now;
    if (!arg_u64(argv[2], &now, 0)) return RedisModule_ReplyWithError(ctx, "ERR bad time (ms)");
    bool if_absent;
    if (bkr_arg_is(argv[3], "ADD"))
        if_absent = false;
    else if (bkr_arg_is(argv[3], "ADDIFABSENT"))
        if_absent = true;
    else
        return RedisModule_ReplyWithError(ctx, "ERR the operation must be ADD or ADDIFABSENT");
    return aging_write(ctx, argv[1], now, if_absent, argv + 4, argc - 4);
}

/* ---- reads ---- */

static int Aging_Exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 3) return RedisModule_WrongArity(ctx);
    int n = argc - 2;
    RedisModuleKey *key;
    bool empty;
    bk_aging *a = open_aging(ctx, argv[1], REDISMODULE_READ, &key, true, &empty);
    if (!a && !empty) return REDISMODULE_OK;
    RedisModule_ReplyWithArray(ctx, n);
    if (!a) {
        for (int i = 0; i < n; i++) RedisModule_ReplyWithLongLong(ctx, 0);
        return REDISMODULE_OK;
    }
    cmd_now = (uint64_t)RedisModule_Milliseconds();
    const void **keys;
    size_t *lens;
    uint8_t *res = bkr_item_batch(ctx, argv + 2, n, &keys, &lens);
    bk_aging_contains_many(a, (const void *const *)keys, lens, (size_t)n, res, NULL);
    for (int i = 0; i < n; i++) RedisModule_ReplyWithLongLong(ctx, res[i]);
    return REDISMODULE_OK;
}

static int Aging_Info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bk_aging *a = open_aging(ctx, argv[1], REDISMODULE_READ, &key, false, NULL);
    if (!a) return REDISMODULE_OK;
    cmd_now = (uint64_t)RedisModule_Milliseconds();
    bk_aging_info in;
    bk_stats st;
    bk_aging_get_info(a, &in);
    bk_aging_stats(a, &st);
    RedisModule_ReplyWithMap(ctx, 13);
    RedisModule_ReplyWithSimpleString(ctx, "Mode");
    RedisModule_ReplyWithSimpleString(ctx, in.mode == BK_AGING_TIME ? "time" : "count");
    RedisModule_ReplyWithSimpleString(ctx, "Window");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.window);
    RedisModule_ReplyWithSimpleString(ctx, "Capacity");
    RedisModule_ReplyWithLongLong(ctx, (long long)st.capacity);
    RedisModule_ReplyWithSimpleString(ctx, "Generations");
    RedisModule_ReplyWithLongLong(ctx, in.generations);
    RedisModule_ReplyWithSimpleString(ctx, "Live generations");
    RedisModule_ReplyWithLongLong(ctx, in.live);
    RedisModule_ReplyWithSimpleString(ctx, "Generation capacity");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.gen_capacity);
    RedisModule_ReplyWithSimpleString(ctx, "Slack");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.slack);
    RedisModule_ReplyWithSimpleString(ctx, "Covered");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.covered);
    RedisModule_ReplyWithSimpleString(ctx, "Inserted");
    RedisModule_ReplyWithLongLong(ctx, (long long)in.inserted);
    RedisModule_ReplyWithSimpleString(ctx, "Items in window");
    RedisModule_ReplyWithLongLong(ctx, (long long)st.count);
    RedisModule_ReplyWithSimpleString(ctx, "Size");
    RedisModule_ReplyWithLongLong(ctx, (long long)bk_aging_memory(a));
    RedisModule_ReplyWithSimpleString(ctx, "Error rate");
    RedisModule_ReplyWithDouble(ctx, st.fpr_target);
    RedisModule_ReplyWithSimpleString(ctx, "Error rate now");
    RedisModule_ReplyWithDouble(ctx, in.fpr_now);
    return REDISMODULE_OK;
}

static const bkr_command aging_commands[] = {
    { "bk.aging.reserve", Aging_Reserve, "write deny-oom", -6, BKR_KEY_CREATE,
      "Creates an aging filter: keys seen in the last COUNT insertions or TIME milliseconds", "O(1)" },
    { "bk.aging.add", Aging_Add, "write deny-oom", -3, BKR_KEY_WRITE,
      "Inserts items into an aging filter's current generation", "O(n)" },
    { "bk.aging.addifabsent", Aging_AddIfAbsent, "write deny-oom", -3, BKR_KEY_WRITE,
      "Inserts items, saying for each whether it was new in the window", "O(n)" },
    { "bk.aging.apply", Aging_Apply, "write deny-oom", -5, BKR_KEY_WRITE,
      "ADD or ADDIFABSENT at a given time (the form replicas and the AOF receive)", "O(n)" },
    { "bk.aging.exists", Aging_Exists, "readonly fast", -3, BKR_KEY_READ,
      "Whether each item may have been inserted within the window", "O(n)" },
    { "bk.aging.info", Aging_Info, "readonly", 2, BKR_KEY_READ, "Information about an aging filter",
      "O(size)" },
};

int bkr_aging_register(RedisModuleCtx *ctx)
{
    return bkr_register(ctx, aging_commands, sizeof aging_commands / sizeof aging_commands[0]);
}
