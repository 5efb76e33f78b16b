/*
 * BK.QF.* : the quotient filter (bk_quotient) in Redis. A command family of its own rather than the
 * CF.* semantics: a quotient filter counts exactly what CF.COUNT only bounds, grows by doubling
 * without its items (BK.QF.GROW, also done by an add that finds it full), and merges two filters by a
 * sweep (BK.QF.MERGE), none of which the CF commands can express, while CF.RESERVE's BUCKETSIZE and
 * MAXITERATIONS mean nothing to it. Keys are of the module's BF data type (every non-cuckoo bloomkit
 * filter is), so RDB, AOF rewrite, DUMP/RESTORE, COPY and MEMORY USAGE work as for the others.
 *
 *   BK.QF.RESERVE key capacity error_rate [REMAINDER r | EXPANDING]
 *                                  an empty filter (r: room to grow; EXPANDING: an expanding
 *                                  filter, bk_xquotient_new, one table that doubles in place at its
 *                                  error rate however often: an add that finds it full doubles it,
 *                                  and so does BK.QF.GROW; no DEL, no MERGE)
 *   BK.QF.ADD key item [COUNT n] [INPLACE]
 *                                  add n occurrences (1); creates the key (capacity INITIAL_SIZE,
 *                                  ERROR_RATE, room for QF_IMPLICIT_ROOM doublings); a full filter
 *                                  doubles first at the key's error rate: in place while its planned
 *                                  room lasts, then by a stage (bk_quotient_expand: the error rate at
 *                                  capacity stays within QF_KEEP_FPR of the target however often).
 *                                  INPLACE: the older rule, only in place, else refused. Reply: the count
 *   BK.QF.EXISTS key item          1 if probably present, else 0
 *   BK.QF.COUNT key item           occurrences added (0: certainly absent)
 *   BK.QF.DEL key item [COUNT n]   remove n occurrences: 1, or 0 when fewer are present
 *   BK.QF.GROW key                 double the slots (one remainder bit into the quotient), even when
 *                                  that spends error rate: the explicit, named form of the old growth
 *   BK.QF.MERGE dest src           dest += src (same seed; src may be a filter dest grew from)
 *   BK.QF.INFO key                 field/value pairs
 */
#include "module.h"

#include <stdio.h>
#include <string.h>

#include "bloomkit/quotient.h"

/* A key BK.QF.ADD creates has remainder bits for this many doublings at its error rate (64 times
 * INITIAL_SIZE), at this many bits per slot more. */
#define QF_IMPLICIT_ROOM 6
/* BK.QF.ADD doubles a full filter only when the doubled one's error rate at capacity stays within
 * this factor of the key's target. */
#define QF_KEEP_FPR BK_QUOTIENT_KEEP_FPR

/* rbits: the remainder bits (0: the fewest for error_rate, plus `room` for as many doublings). */
static bk_status qf_create(long long capacity, double error_rate, long long rbits, uint32_t room, bkr_value **out)
{
    size_t heap0 = bkr_heap_now();
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.remainder_bits = (uint32_t)rbits;
    bk_quotient_geometry g;
    bk_status s = bk_quotient_size((uint64_t)capacity, error_rate, &o, &g);
    if (s != BK_OK) return s;
    if (!rbits && room) {
        o.remainder_bits = g.remainder_bits + room > BK_QUOTIENT_MAX_RBITS ? BK_QUOTIENT_MAX_RBITS
                                                                           : g.remainder_bits + room;
        if ((s = bk_quotient_size((uint64_t)capacity, error_rate, &o, &g)) != BK_OK) return s;
    }
    if ((double)g.bytes > (double)bkr_cfg.max_filter_bytes) return BK_ETOOBIG;
    bk_quotient *q;
    if ((s = bk_quotient_new((uint64_t)capacity, error_rate, &o, &q)) != BK_OK) return s;
    *out = bkr_value_wrap(BK_TYPE_QUOTIENT, q, heap0);
    return *out ? BK_OK : BK_ENOMEM;
}

/* Opens argv[1] as a quotient filter: BKR_OK with *q set, else replies and returns the lookup. */
static bkr_lookup qf_open(RedisModuleCtx *ctx, RedisModuleString *name, int mode, RedisModuleKey **key,
                          bkr_value **v, bk_quotient **q)
{
    bkr_lookup st = bkr_open(ctx, name, mode, BKR_BF, key, v);
    if (st == BKR_OK && (bkr_stage_of(*v) || (*v)->type != BK_TYPE_QUOTIENT)) st = BKR_WRONGTYPE;
    if (st == BKR_OK) *q = bkr_typed(*v);
    return st;
}

static int reply_lookup(RedisModuleCtx *ctx, bkr_lookup st)
{
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    return RedisModule_ReplyWithError(ctx, "ERR not found");
}

/* Doubles v's filter (in place, or with `keep`, bk_quotient_expand's growth at the error rate),
 * keeping its memory accounting. A stage may take more than the memory so far (longer remainders):
 * the limit is checked on three times it. */
static bk_status qf_grow(bkr_value *v, bool keep)
{
    bk_quotient *q = bkr_typed(v);
    if ((double)bk_quotient_memory(q) * (keep ? 3 : 2) > (double)bkr_cfg.max_filter_bytes) return BK_ETOOBIG;
    size_t heap0 = bkr_heap_now();
    bk_status s = keep || bk_quotient_expanding(q) ? bk_quotient_expand(q) : bk_quotient_grow(q);
    v->heap += bkr_heap_now() - heap0; /* modular: the old array is freed, the new one is larger */
    return s;
}

/* An expanding filter: made for `capacity` keys before its first doubling. */
static bk_status qf_create_expanding(long long capacity, double error_rate, bkr_value **out)
{
    size_t heap0 = bkr_heap_now();
    bk_quotient *q;
    bk_status s = bk_xquotient_new((uint64_t)capacity, error_rate, NULL, &q);
    if (s != BK_OK) return s;
    if ((double)bk_quotient_memory(q) > (double)bkr_cfg.max_filter_bytes) {
        bk_quotient_free(q);
        return BK_ETOOBIG;
    }
    *out = bkr_value_wrap(BK_TYPE_QUOTIENT, q, heap0);
    return *out ? BK_OK : BK_ENOMEM;
}

/* Add to an expanding filter, which doubles itself when full: the doubling's memory is counted, and
 * refused (BK_ETOOBIG) past the size limit. */
static bk_status qf_add_expanding(bkr_value *v, uint64_t h, uint64_t n)
{
    bk_quotient *q = bkr_typed(v);
    uint64_t limit = (uint64_t)(bk_quotient_max_load(q) * (double)bk_quotient_slots(q));
    if (bk_quotient_slots_used(q) + 64 > limit && (double)bk_quotient_memory(q) * 3 > (double)bkr_cfg.max_filter_bytes)
        return BK_ETOOBIG;
    size_t heap0 = bkr_heap_now();
    bk_status s = bk_quotient_add_count_hash(q, h, n);
    v->heap += bkr_heap_now() - heap0; /* modular, as in qf_grow */
    return s;
}

BKR_GUARDED(QF_Reserve)
static int QF_Reserve_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 4 && argc != 5 && argc != 6) return RedisModule_WrongArity(ctx);
    long long capacity, rbits = 0;
    double p;
    if (!bkr_arg_ll(argv[2], &capacity) || capacity <= 0) return RedisModule_ReplyWithError(ctx, "ERR bad capacity");
    if (!bkr_arg_double(argv[3], &p) || !(p > 0 && p < 1))
        return RedisModule_ReplyWithError(ctx, "ERR error rate must be in (0, 1)");
    if (argc == 5 && !bkr_arg_is(argv[4], "EXPANDING")) return RedisModule_ReplyWithError(ctx, "ERR unknown argument");
    if (argc == 6) {
        if (!bkr_arg_is(argv[4], "REMAINDER")) return RedisModule_ReplyWithError(ctx, "ERR unknown argument");
        if (!bkr_arg_ll(argv[5], &rbits) || rbits < BK_QUOTIENT_MIN_RBITS || rbits > BK_QUOTIENT_MAX_RBITS)
            return RedisModule_ReplyWithError(ctx, "ERR REMAINDER must be between 2 and 32");
    }
    RedisModuleKey *key;
    bkr_value *v;
    bkr_lookup st = bkr_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, BKR_BF, &key, &v);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_OK) return RedisModule_ReplyWithError(ctx, "ERR item exists");
    bk_status s = argc == 5 ? qf_create_expanding(capacity, p, &v) : qf_create(capacity, p, rbits, 0, &v);
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    bkr_set(key, BKR_BF, v);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* [COUNT n] at argv[3..4]; with `inplace`, BK.QF.ADD's [INPLACE] too (last) */
static bool count_arg(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, long long *n, bool *inplace)
{
    *n = 1;
    if (inplace) {
        *inplace = argc > 3 && bkr_arg_is(argv[argc - 1], "INPLACE");
        if (*inplace) argc--;
    }
    if (argc == 3) return true;
    if (argc == 5 && bkr_arg_is(argv[3], "COUNT") && bkr_arg_ll(argv[4], n) && *n > 0) return true;
    RedisModule_ReplyWithError(ctx, inplace ? "ERR syntax: [COUNT n] with n >= 1, then [INPLACE]"
                                            : "ERR syntax: [COUNT n] with n >= 1");
    return false;
}

BKR_GUARDED(QF_Add)
static int QF_Add_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 3 || argc > 6) return RedisModule_WrongArity(ctx);
    long long n;
    bool inplace;
    if (!count_arg(ctx, argv, argc, &n, &inplace)) return REDISMODULE_OK;
    RedisModuleKey *key;
    bkr_value *v;
    bk_quotient *q = NULL;
    bkr_lookup st = qf_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &v, &q);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_EMPTY) {
        bk_status s = qf_create(bkr_cfg.bf_initial_size, bkr_cfg.bf_error_rate, 0, QF_IMPLICIT_ROOM, &v);
        if (s != BK_OK) return bkr_reply_status(ctx, s);
        bkr_set(key, BKR_BF, v);
        q = bkr_typed(v);
    }
    size_t len;
    const char *p = RedisModule_StringPtrLen(argv[2], &len);
    uint64_t h = bk_hash64(p, len, bk_quotient_seed(q));
    if (bk_quotient_expanding(q)) { /* it doubles itself, at its error rate (INPLACE changes nothing) */
        bk_status s = qf_add_expanding(v, h, (uint64_t)n);
        if (s == BK_ETOOBIG) return RedisModule_ReplyWithError(ctx, "ERR filter is full and cannot grow further");
        if (s != BK_OK) return bkr_reply_status(ctx, s);
        RedisModule_ReplicateVerbatim(ctx);
        return bkr_reply_count(ctx, bk_quotient_count_hash(q, h));
    }
    bk_status s = bk_quotient_add_count_hash(q, h, (uint64_t)n);
    while (s == BK_EFULL) { /* double, then retry: no item is lost either way */
        double now = bk_quotient_fpr_target(q), then = bk_quotient_grown_fpr(q, 1);
        if (inplace && !(then <= QF_KEEP_FPR * now)) { /* NAN (no remainder bit left) too */
            if (st == BKR_EMPTY) RedisModule_ReplicateVerbatim(ctx);
            char msg[320];
            snprintf(msg, sizeof msg,
                     "ERR filter is full: doubling it in place would raise its error rate at capacity to %.3g, "
                     "above its target %.3g (without INPLACE it grows by a stage at its error rate; BK.QF.GROW "
                     "doubles it in place anyway; BK.QF.RESERVE with REMAINDER leaves room to grow)",
                     then == then ? then : 1.0, now);
            return RedisModule_ReplyWithError(ctx, msg);
        }
        bk_status g = qf_grow(v, !inplace);
        if (g != BK_OK) {
            if (st == BKR_EMPTY) RedisModule_ReplicateVerbatim(ctx); /* the key was created */
            return g == BK_ETOOBIG ? RedisModule_ReplyWithError(ctx, "ERR filter is full and cannot grow further")
                                   : bkr_reply_status(ctx, g);
        }
        s = bk_quotient_add_count_hash(q, h, (uint64_t)n);
    }
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    RedisModule_ReplicateVerbatim(ctx);
    return bkr_reply_count(ctx, bk_quotient_count_hash(q, h));
}

/* BK.QF.EXISTS (0 or 1) and BK.QF.COUNT (the count) of argv[2]; 0 for a missing key. */
static int qf_query(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool count)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_value *v;
    bk_quotient *q;
    bkr_lookup st = qf_open(ctx, argv[1], REDISMODULE_READ, &key, &v, &q);
    if (st == BKR_EMPTY) return RedisModule_ReplyWithLongLong(ctx, 0);
    if (st != BKR_OK) return reply_lookup(ctx, st);
    size_t len;
    const char *p = RedisModule_StringPtrLen(argv[2], &len);
    if (count) return bkr_reply_count(ctx, bk_quotient_count(q, p, len));
    return RedisModule_ReplyWithLongLong(ctx, bk_quotient_contains(q, p, len));
}

static int QF_Exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return qf_query(ctx, argv, argc, false);
}

static int QF_Count(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    return qf_query(ctx, argv, argc, true);
}

static int QF_Del(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3 && argc != 5) return RedisModule_WrongArity(ctx);
    long long n;
    if (!count_arg(ctx, argv, argc, &n, NULL)) return REDISMODULE_OK;
    RedisModuleKey *key;
    bkr_value *v;
    bk_quotient *q;
    bkr_lookup st = qf_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &v, &q);
    if (st != BKR_OK) return reply_lookup(ctx, st);
    size_t len;
    const char *p = RedisModule_StringPtrLen(argv[2], &len);
    if (bk_quotient_expanding(q))
        return RedisModule_ReplyWithError(ctx, "ERR an expanding filter cannot remove items (an entry may stand for several)");
    bk_status s = bk_quotient_remove_count_hash(q, bk_hash64(p, len, bk_quotient_seed(q)), (uint64_t)n);
    if (s == BK_ENOTFOUND) return RedisModule_ReplyWithLongLong(ctx, 0);
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithLongLong(ctx, 1);
}

BKR_GUARDED(QF_Grow)
static int QF_Grow_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_value *v;
    bk_quotient *q;
    bkr_lookup st = qf_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &v, &q);
    if (st != BKR_OK) return reply_lookup(ctx, st);
    bk_status s = qf_grow(v, false);
    if (s == BK_ETOOBIG) return RedisModule_ReplyWithError(ctx, "ERR cannot grow further (limit of the remainder bits or size)");
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

BKR_GUARDED(QF_Merge)
static int QF_Merge_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3) return RedisModule_WrongArity(ctx);
    RedisModuleKey *dk, *sk;
    bkr_value *dv, *sv;
    bk_quotient *dq, *sq;
    bkr_lookup st = qf_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &dk, &dv, &dq);
    if (st != BKR_OK) return reply_lookup(ctx, st);
    st = qf_open(ctx, argv[2], REDISMODULE_READ, &sk, &sv, &sq);
    if (st != BKR_OK) return reply_lookup(ctx, st);
    if (dq == sq) return RedisModule_ReplyWithError(ctx, "ERR source and destination are the same key");
    size_t heap0 = bkr_heap_now();
    bk_status s = bk_quotient_union(dq, sq);
    dv->heap += bkr_heap_now() - heap0;
    if (s == BK_EINCOMPAT)
        return RedisModule_ReplyWithError(ctx, "ERR incompatible filters (seed, or source grown fewer times than "
                                               "destination: merge into the more grown one)");
    if (s == BK_EFULL) return RedisModule_ReplyWithError(ctx, "ERR the union does not fit: BK.QF.GROW the destination");
    if (s == BK_ENOTSUP)
        return RedisModule_ReplyWithError(ctx, "ERR a filter grown by stages (past its planned room), or an expanding one, cannot be merged");
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

static int QF_Info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_value *v;
    bk_quotient *q;
    bkr_lookup st = qf_open(ctx, argv[1], REDISMODULE_READ, &key, &v, &q);
    if (st != BKR_OK) return reply_lookup(ctx, st);
    bk_stats s;
    bk_quotient_stats(q, &s);
    RedisModule_ReplyWithArray(ctx, 26);
    RedisModule_ReplyWithSimpleString(ctx, "Capacity");
    RedisModule_ReplyWithLongLong(ctx, (long long)s.capacity);
    RedisModule_ReplyWithSimpleString(ctx, "Size");
    RedisModule_ReplyWithLongLong(ctx, (long long)bkr_value_memory(v));
    RedisModule_ReplyWithSimpleString(ctx, "Quotient bits");
    RedisModule_ReplyWithLongLong(ctx, bk_quotient_quotient_bits(q));
    RedisModule_ReplyWithSimpleString(ctx, "Remainder bits");
    RedisModule_ReplyWithLongLong(ctx, bk_quotient_remainder_bits(q));
    RedisModule_ReplyWithSimpleString(ctx, "Slots used");
    RedisModule_ReplyWithLongLong(ctx, (long long)bk_quotient_slots_used(q));
    RedisModule_ReplyWithSimpleString(ctx, "Distinct fingerprints");
    bkr_reply_count(ctx, bk_quotient_distinct(q));
    RedisModule_ReplyWithSimpleString(ctx, "Number of items inserted");
    bkr_reply_count(ctx, s.count);
    RedisModule_ReplyWithSimpleString(ctx, "Load");
    RedisModule_ReplyWithDouble(ctx, s.fill_ratio);
    RedisModule_ReplyWithSimpleString(ctx, "Error rate now");
    RedisModule_ReplyWithDouble(ctx, s.fpr_now);
    RedisModule_ReplyWithSimpleString(ctx, "Error rate target");
    RedisModule_ReplyWithDouble(ctx, s.fpr_target);
    RedisModule_ReplyWithSimpleString(ctx, "Error rate at capacity");
    RedisModule_ReplyWithDouble(ctx, bk_quotient_grown_fpr(q, 0));
    RedisModule_ReplyWithSimpleString(ctx, "Slots");
    RedisModule_ReplyWithLongLong(ctx, (long long)bk_quotient_slots(q));
    RedisModule_ReplyWithSimpleString(ctx, "Stages");
    RedisModule_ReplyWithLongLong(ctx, bk_quotient_stages(q));
    return REDISMODULE_OK;
}

static const bkr_command qf_commands[] = {
    { "bk.qf.reserve", QF_Reserve, "write deny-oom", -4, BKR_KEY_CREATE,
      "Creates an empty quotient filter for a capacity and error rate", "O(1)" },
    { "bk.qf.add", QF_Add, "write deny-oom", -3, BKR_KEY_WRITE,
      "Adds occurrences of an item, creating or doubling the filter when needed",
      "O(1) amortized (a filter of stages: O(stages) to count the reply)" },
    { "bk.qf.exists", QF_Exists, "readonly fast", 3, BKR_KEY_READ, "Whether an item may be in the filter",
      "O(stages)" },
    { "bk.qf.count", QF_Count, "readonly fast", 3, BKR_KEY_READ, "How many times an item was added", "O(stages)" },
    { "bk.qf.del", QF_Del, "write fast", -3, BKR_KEY_DELETE_ITEM, "Removes occurrences of an item", "O(stages)" },
    { "bk.qf.grow", QF_Grow, "write deny-oom", 2, BKR_KEY_WRITE, "Doubles a quotient filter without its items",
      "O(n)" },
    { "bk.qf.merge", QF_Merge, "write deny-oom", 3, BKR_KEY_MERGE, "Adds one quotient filter into another",
      "O(n)" },
    { "bk.qf.info", QF_Info, "readonly fast", 2, BKR_KEY_READ, "Information about a quotient filter", "O(1)" },
};

int bkr_qf_register(RedisModuleCtx *ctx)
{
    return bkr_register(ctx, qf_commands, sizeof qf_commands / sizeof qf_commands[0]);
}
