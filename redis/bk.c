/*
 * BK.* : what RedisBloom users asked for and were declined.
 *
 *   BK.MERGE dest src [src ...]   union of compatible Bloom-family filters into dest (created as a copy
 *                                 of the first source when missing); all or nothing
 *   BK.INFO key                   fill ratio, estimated cardinality, FPR now, saturation, memory
 *   BK.IMPORT key payload [REPLACE]  a filter in bloomkit's file format (e.g. built by the CLI)
 *   BK.EXPORT key                 the filter in bloomkit's file format (for the CLI, or a file)
 */
#include "module.h"

#include <string.h>

/* Key names quoted in error messages are cut to this many bytes. */
#define BKR_NAME_SHOWN 128

static int reply_errorf(RedisModuleCtx *ctx, RedisModuleString *m)
{
    return RedisModule_ReplyWithError(ctx, RedisModule_StringPtrLen(m, NULL));
}

/* ---- BK.MERGE dest src [src ...] ---- */

BKR_GUARDED(BK_Merge)
static int BK_Merge_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 3) return RedisModule_WrongArity(ctx);
    RedisModuleKey *dkey;
    bkr_value *dv = NULL;
    bkr_lookup dst = bkr_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, BKR_BF, &dkey, &dv);
    if (dst == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (dst == BKR_OK && bkr_stage_of(dv)) return bkr_reply_restoring(ctx);

    /* Look every source up first: nothing is computed unless all of them are usable. */
    int nsrc = argc - 2;
    bkr_value **src = RedisModule_PoolAlloc(ctx, sizeof *src * (size_t)nsrc);
    for (int i = 0; i < nsrc; i++) {
        RedisModuleKey *k;
        bkr_lookup st = bkr_open(ctx, argv[2 + i], REDISMODULE_READ, BKR_BF, &k, &src[i]);
        if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
        if (st == BKR_EMPTY)
            return reply_errorf(ctx, RedisModule_CreateStringPrintf(ctx, "ERR not found: '%.*s'", BKR_NAME_SHOWN,
                                                                    RedisModule_StringPtrLen(argv[2 + i], NULL)));
        if (bkr_stage_of(src[i])) return bkr_reply_restoring(ctx);
    }

    /* The union is built in a copy, so that an incompatible source leaves dest exactly as it was. */
    bk_filter *acc;
    size_t heap0 = bkr_heap_now();
    bk_status s = bkr_clone_filter(dst == BKR_OK ? dv : src[0], &acc);
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    for (int i = dst == BKR_OK ? 0 : 1; i < nsrc; i++) {
        bk_filter *h = bkr_handle(src[i]);
        s = h ? bk_filter_merge(acc, h) : BK_ENOMEM;
        bkr_handle_done(src[i], h);
        if (s != BK_OK) {
            bk_filter_free(acc);
            const char *name = RedisModule_StringPtrLen(argv[2 + i], NULL);
            if (s == BK_EINCOMPAT)
                return reply_errorf(ctx, RedisModule_CreateStringPrintf(
                    ctx, "ERR incompatible filters: '%.*s' differs from the others in type, geometry, parameters "
                         "or seed (only filters created alike can be merged)", BKR_NAME_SHOWN, name));
            if (s == BK_ENOTSUP)
                return reply_errorf(ctx, RedisModule_CreateStringPrintf(
                    ctx, "ERR filters of the type of '%.*s' cannot be merged", BKR_NAME_SHOWN, name));
            return bkr_reply_status(ctx, s);
        }
    }
    if (dst == BKR_OK) {
        /* dest's filter is replaced by the union: heap_held went up by the union's bytes and down by
         * dest's old ones (dv->heap) since heap0 */
        size_t old = dv->heap;
        bkr_value_drop_filter(dv);
        bkr_value_set_filter(dv, acc, heap0);
        dv->heap += old;
    } else {
        bkr_value *v = bkr_value_from_filter(acc, heap0);
        bkr_set(dkey, BKR_BF, v);
    }
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* The filter of either family under name, for reading; false after replying the error (wrong
 * type, no such key, or a SCANDUMP restore still in progress). */
static bool open_readable(RedisModuleCtx *ctx, RedisModuleString *name, bkr_value **v, bkr_family *fam)
{
    RedisModuleKey *key;
    bkr_lookup st = bkr_open_any(ctx, name, REDISMODULE_READ, &key, v, fam);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx), false;
    if (st == BKR_EMPTY) return RedisModule_ReplyWithError(ctx, "ERR not found"), false;
    if (bkr_stage_of(*v)) return bkr_reply_restoring(ctx), false;
    return true;
}

/* ---- BK.INFO key ---- */

static void kv_ll(RedisModuleCtx *ctx, const char *k, long long v)
{
    RedisModule_ReplyWithSimpleString(ctx, k);
    RedisModule_ReplyWithLongLong(ctx, v);
}
static void kv_d(RedisModuleCtx *ctx, const char *k, double v)
{
    RedisModule_ReplyWithSimpleString(ctx, k);
    RedisModule_ReplyWithDouble(ctx, v);
}

static int BK_Info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2) return RedisModule_WrongArity(ctx);
    bkr_value *v;
    bkr_family fam;
    if (!open_readable(ctx, argv[1], &v, &fam)) return REDISMODULE_OK;
    bk_stats s;
    bk_filter *h = bkr_handle(v);
    if (!h) return bkr_reply_status(ctx, BK_ENOMEM);
    bk_filter_stats(h, &s);
    bkr_handle_done(v, h);
    double bound = v->type == BK_TYPE_SCALABLE ? bk_scalable_fpr_bound(v->obj) : s.fpr_target;
    RedisModule_ReplyWithMap(ctx, 13);
    RedisModule_ReplyWithSimpleString(ctx, "type");
    RedisModule_ReplyWithSimpleString(ctx, bk_type_name(s.type) ? bk_type_name(s.type) : "unknown");
    kv_ll(ctx, "capacity", (long long)s.capacity);
    kv_ll(ctx, "items", bkr_count_ll(s.count));
    kv_d(ctx, "fill_ratio", s.fill_ratio);
    kv_d(ctx, "estimated_cardinality", s.est_cardinality);
    kv_d(ctx, "fpr_target", s.fpr_target);
    kv_d(ctx, "fpr_bound", bound);
    kv_d(ctx, "fpr_now", s.fpr_now);
    /* Saturated: past capacity (or full) by the library's measure, or answering false positives at more
     * than twice the rate it was built for (e.g. after merging filters that were each sized for less). */
    bool saturated = s.saturated || (s.fpr_target > 0 && s.fpr_now > 2 * s.fpr_target);
    RedisModule_ReplyWithSimpleString(ctx, "saturated");
    RedisModule_ReplyWithBool(ctx, saturated);
    RedisModule_ReplyWithSimpleString(ctx, "warning");
    if (saturated)
        RedisModule_ReplyWithSimpleString(
            ctx, fam == BKR_CF ? "the filter is full or past its capacity: inserts may fail; rebuild it larger"
                               : "the filter is past its capacity: its false-positive rate is above the target; "
                                 "rebuild it larger");
    else
        RedisModule_ReplyWithNull(ctx);
    kv_ll(ctx, "memory_bytes", (long long)bkr_value_memory(v));
    kv_d(ctx, "bits_per_item", s.bits_per_key);
    kv_ll(ctx, "filters", s.subfilters ? s.subfilters : 1);
    return REDISMODULE_OK;
}

/* ---- BK.IMPORT key payload [REPLACE] ---- */

BKR_GUARDED(BK_Import)
static int BK_Import_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3 && argc != 4) return RedisModule_WrongArity(ctx);
    bool replace = false;
    if (argc == 4) {
        if (!bkr_arg_is(argv[3], "REPLACE")) return RedisModule_ReplyWithError(ctx, "ERR unknown argument");
        replace = true;
    }
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    if (RedisModule_KeyType(key) != REDISMODULE_KEYTYPE_EMPTY && !replace)
        return RedisModule_ReplyWithError(ctx, "ERR item exists");
    size_t n;
    const char *p = RedisModule_StringPtrLen(argv[2], &n);
    bk_filter *f;
    size_t heap0 = bkr_heap_now();
    bk_status s = bk_filter_load_buffer(p, n, BK_LOAD_DEFAULT, &f);
    if (s != BK_OK)
        return reply_errorf(ctx, RedisModule_CreateStringPrintf(ctx, "ERR invalid payload: %s", bk_strerror(s)));
    bkr_value *v = bkr_value_from_filter(f, heap0);
    if (RedisModule_KeyType(key) != REDISMODULE_KEYTYPE_EMPTY) RedisModule_DeleteKey(key);
    bkr_set(key, bkr_family_of(v->type), v);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* ---- BK.EXPORT key ---- */

BKR_GUARDED(BK_Export)
static int BK_Export_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2) return RedisModule_WrongArity(ctx);
    bkr_value *v;
    bkr_family fam;
    if (!open_readable(ctx, argv[1], &v, &fam)) return REDISMODULE_OK;
    uint8_t *buf;
    size_t len;
    /* The saved form, then its copy in the reply: refused up front when the two do not fit. */
    bk_filter *h = bkr_handle(v);
    if (!h) return bkr_reply_status(ctx, BK_ENOMEM);
    bk_status s = bk_filter_save_size(h, &len);
    if (s == BK_OK && len < SIZE_MAX / 2 && bkr_guard_refuses(2 * len))
        s = BK_ENOMEM;
    else
        s = bkr_save_alloc(h, &buf, &len);
    bkr_handle_done(v, h);
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    RedisModule_ReplyWithStringBuffer(ctx, (const char *)buf, len);
    RedisModule_Free(buf);
    return REDISMODULE_OK;
}

static const bkr_command bk_commands[] = {
    { "bk.merge", BK_Merge, "write deny-oom", -3, BKR_KEY_MERGE,
      "Union of compatible Bloom filters into a destination key", "O(n * m)" },
    { "bk.info", BK_Info, "readonly", 2, BKR_KEY_READ,
      "Fill ratio, estimated cardinality, current FPR, saturation and memory of a filter", "O(m)" },
    { "bk.import", BK_Import, "write deny-oom", -3, BKR_KEY_CREATE,
      "Stores a filter given in bloomkit's file format", "O(m)" },
    { "bk.export", BK_Export, "readonly", 2, BKR_KEY_READ, "A filter in bloomkit's file format", "O(m)" },
};

int bkr_bk_register(RedisModuleCtx *ctx)
{
    return bkr_register(ctx, bk_commands, sizeof bk_commands / sizeof bk_commands[0]);
}
