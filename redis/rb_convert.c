/*
 * BK.CONVERT: from RedisBloom's layout (MBbloom-- / MBbloomCF keys) to bloomkit's own filters, once no
 * RedisBloom server needs the keys any more.
 *
 * A filter answers only with the hashing it was built with, and its items are not in it: a Bloom chain
 * holds bits set by MurmurHash64A probes, a cuckoo filter 8-bit fingerprints of MurmurHash64A values in
 * buckets chosen by the same hash. Neither can be turned into bloomkit's XXH3-hashed filters without the
 * items, so the command converts only what it can without losing one:
 *
 *   BK.CONVERT key                 an empty filter (every array byte zero, not only the counters): the
 *                                  key becomes bloomkit's filter with the same parameters. A filter that
 *                                  holds anything is refused, with its item count.
 *   BK.CONVERT key STAGE newkey    makes newkey (empty) a bloomkit filter with key's parameters, for the
 *                                  items to be added to from their source (BF.MADD, CF.INSERT: newkey
 *                                  exists, so those commands add to it in any mode).
 *   BK.CONVERT key FROM newkey     newkey's filter replaces key's, when newkey holds at least as many
 *                                  items as key counts (for Bloom filters less an allowance for the
 *                                  items newkey took for present, bloom_slack): a guard against a missed
 *                                  batch, since a filter cannot list its items and so cannot prove that
 *                                  every one was added; key keeps its expiry, newkey is deleted.
 *
 * Parameters carried over: a Bloom chain's first capacity, its error rate (the first link's, doubled
 * when the chain scales: RedisBloom gives the first link half the error), EXPANSION (kept within
 * bloomkit's 1..16) or NONSCALING; a cuckoo filter's first table capacity (buckets x bucket size),
 * BUCKETSIZE, MAXITERATIONS, EXPANSION. Replicated as the command itself (the same state gives the same
 * result on a replica).
 */
#include "module.h"
#include "rb_compat.h"

#include <math.h>
#include <string.h>

static bool all_zero(const uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i]) return false;
    return true;
}

static bool chain_empty(const rb_chain *c)
{
    for (uint64_t i = 0; i < c->nlinks; i++)
        if (!all_zero(c->links[i].bits, c->links[i].bytes)) return false;
    return true;
}

static bool cuckoo_empty(const rb_cuckoo *cf)
{
    for (uint16_t t = 0; t < cf->ntables; t++)
        if (!all_zero(cf->tables[t].data, cf->tables[t].nbuckets * cf->bucket_size)) return false;
    return true;
}

/* A new empty bloomkit filter with the parameters of RedisBloom value rb (cf: a cuckoo filter). */
static bk_status native_like(const void *rb, bool cf, bkr_value **out)
{
    if (cf) {
        const rb_cuckoo *f = rb;
        return bkr_cf_new_value((long long)(f->nbuckets * f->bucket_size), f->bucket_size, f->max_iterations,
                                f->expansion, out);
    }
    const rb_chain *c = rb;
    bool nonscaling = (c->options & RB_BLOOM_NO_SCALING) != 0;
    double error = nonscaling ? c->links[0].error : c->links[0].error * 2;
    if (error >= 1) error = 0.5;
    long long growth = c->growth < 1 ? 1 : c->growth > BK_SCALABLE_MAX_GROWTH ? BK_SCALABLE_MAX_GROWTH : c->growth;
    return bkr_bf_new_value((long long)c->links[0].entries, error, growth, nonscaling, out);
}

/* Items a RedisBloom value counts: a chain's adds, a cuckoo filter's stored fingerprints. */
static uint64_t rb_items(const void *rb, bool cf)
{
    return cf ? ((const rb_cuckoo *)rb)->items : ((const rb_chain *)rb)->size;
}

/* A Bloom filter counts an item only when it was not (probably) present: a staging filter given all of
 * `want` items counts fewer by its false positives while it was filled, at most about want * p on
 * average (p: the chain's error rate, the staging filter's). The allowance: that, plus four standard
 * deviations, plus one. Cuckoo filters count every copy stored: no allowance. */
static uint64_t bloom_slack(const rb_chain *c, uint64_t want)
{
    double p = (c->options & RB_BLOOM_NO_SCALING) ? c->links[0].error : c->links[0].error * 2;
    double e = (double)want * (p < 1 ? p : 1);
    return (uint64_t)ceil(e + 4 * sqrt(e)) + 1;
}

/* Items a bloomkit value of the BF/CF commands counts; false for other filter types. */
static bool native_items(bkr_value *v, bool cf, uint64_t *n)
{
    if (bkr_stage_of(v)) return false;
    if (!cf) {
        if (v->type != BK_TYPE_SCALABLE) return false;
        *n = bk_scalable_count(v->obj);
        return true;
    }
    bkr_cfwork w;
    bk_cuckoo_info in;
    bk_cuckoo_get_info(bkr_cf_open(&w, NULL, v), &in); /* a query: the view needs no closing */
    *n = in.items;
    return true;
}

/* Put value nv (of bloomkit's type for the family) in key, which holds a RedisBloom value: the key keeps
 * its expiry. */
static void replace_keeping_ttl(RedisModuleKey *key, bool cf, bkr_value *nv)
{
    mstime_t ttl = RedisModule_GetExpire ? RedisModule_GetExpire(key) : REDISMODULE_NO_EXPIRE;
    bkr_set(key, cf ? BKR_CF : BKR_BF, nv);
    if (ttl != REDISMODULE_NO_EXPIRE && RedisModule_SetExpire) RedisModule_SetExpire(key, ttl);
}

static int convert_empty(RedisModuleCtx *ctx, RedisModuleKey *key, void *rb, bool cf)
{
    if (!(cf ? cuckoo_empty(rb) : chain_empty(rb))) {
        RedisModuleString *m = RedisModule_CreateStringPrintf(
            ctx, "ERR the filter holds %llu items in RedisBloom's layout, which cannot be rehashed without them: "
                 "BK.CONVERT key STAGE newkey, add the items to newkey, then BK.CONVERT key FROM newkey",
            (unsigned long long)rb_items(rb, cf));
        return RedisModule_ReplyWithError(ctx, RedisModule_StringPtrLen(m, NULL));
    }
    bkr_value *nv;
    bk_status s = native_like(rb, cf, &nv);
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    replace_keeping_ttl(key, cf, nv);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

static int convert_stage(RedisModuleCtx *ctx, void *rb, bool cf, RedisModuleString *name)
{
    RedisModuleKey *nk = RedisModule_OpenKey(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE);
    if (RedisModule_KeyType(nk) != REDISMODULE_KEYTYPE_EMPTY)
        return RedisModule_ReplyWithError(ctx, "ERR the staging key exists already");
    bkr_value *nv;
    bk_status s = native_like(rb, cf, &nv);
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    bkr_set(nk, cf ? BKR_CF : BKR_BF, nv);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

static int convert_from(RedisModuleCtx *ctx, RedisModuleKey *key, void *rb, bool cf, RedisModuleString *name)
{
    RedisModuleKey *nk;
    bkr_value *nv;
    bkr_lookup st = bkr_open(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE, cf ? BKR_CF : BKR_BF, &nk, &nv);
    if (st == BKR_EMPTY) return RedisModule_ReplyWithError(ctx, "ERR the staging key does not exist");
    uint64_t have, want = rb_items(rb, cf);
    if (st != BKR_OK || !native_items(nv, cf, &have))
        return RedisModule_ReplyWithError(ctx, cf ? "ERR the staging key must hold a bloomkit cuckoo filter"
                                                  : "ERR the staging key must hold a bloomkit scalable Bloom filter");
    uint64_t slack = cf ? 0 : bloom_slack(rb, want);
    if (have < want - (slack < want ? slack : want)) {
        RedisModuleString *m = RedisModule_CreateStringPrintf(
            ctx, "ERR the staging key holds %llu items, fewer than the %llu the filter counts (less %llu it may have "
                 "taken for present already): add the missing ones",
            (unsigned long long)have, (unsigned long long)want, (unsigned long long)slack);
        return RedisModule_ReplyWithError(ctx, RedisModule_StringPtrLen(m, NULL));
    }
    /* Take the staging key's value without freeing it: an empty value (no filter) takes its place, and
     * goes with the key. */
    bkr_value *empty = RedisModule_Calloc(1, sizeof *empty);
    empty->type = cf ? BK_TYPE_CUCKOO : BK_TYPE_SCALABLE;
    bkr_value *taken = NULL;
    if (RedisModule_ModuleTypeReplaceValue(nk, bkr_type[cf ? BKR_CF : BKR_BF], empty, (void **)&taken) !=
        REDISMODULE_OK) {
        RedisModule_Free(empty);
        return RedisModule_ReplyWithError(ctx, "ERR the staging key could not be moved");
    }
    RedisModule_DeleteKey(nk);
    replace_keeping_ttl(key, cf, taken);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* BK.CONVERT key [STAGE newkey | FROM newkey] */
static int BK_Convert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (RedisModule_IsKeysPositionRequest && RedisModule_IsKeysPositionRequest(ctx)) {
        RedisModule_KeyAtPos(ctx, 1); /* (getkeys-api: Redis Cluster routes by what the command says) */
        if (argc == 4) RedisModule_KeyAtPos(ctx, 3);
        return REDISMODULE_OK;
    }
    RedisModule_AutoMemory(ctx);
    if (argc != 2 && argc != 4) return RedisModule_WrongArity(ctx);
    bool stage = argc == 4 && bkr_arg_is(argv[2], "STAGE"), from = argc == 4 && bkr_arg_is(argv[2], "FROM");
    if (argc == 4 && !stage && !from) return RedisModule_ReplyWithError(ctx, "ERR syntax error: STAGE or FROM");
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    int t = RedisModule_KeyType(key);
    if (t == REDISMODULE_KEYTYPE_EMPTY) return RedisModule_ReplyWithError(ctx, "ERR not found");
    RedisModuleType *mt = t == REDISMODULE_KEYTYPE_MODULE ? RedisModule_ModuleTypeGetType(key) : NULL;
    if (!mt || (mt != bkr_rb_type(false) && mt != bkr_rb_type(true))) {
        if (mt == bkr_type[BKR_BF] || mt == bkr_type[BKR_CF])
            return RedisModule_ReplyWithError(ctx, "ERR the key holds a bloomkit filter already");
        return bkr_reply_wrongtype(ctx);
    }
    bool cf = mt == bkr_rb_type(true);
    void *rb = RedisModule_ModuleTypeGetValue(key);
    if (argc == 4 && RedisModule_StringCompare && RedisModule_StringCompare(argv[1], argv[3]) == 0)
        return RedisModule_ReplyWithError(ctx, "ERR the staging key must be another key");
    bkr_guard_begin(ctx);
    int rc = stage ? convert_stage(ctx, rb, cf, argv[3])
           : from  ? convert_from(ctx, key, rb, cf, argv[3])
                   : convert_empty(ctx, key, rb, cf);
    bkr_guard_end();
    return rc;
}

int bkr_rb_register_commands(RedisModuleCtx *ctx)
{
    if (RedisModule_CreateCommand(ctx, "bk.convert", BK_Convert, "write deny-oom getkeys-api", 1, 1, 1) !=
        REDISMODULE_OK)
        return REDISMODULE_ERR;
    RedisModuleCommand *cmd = RedisModule_GetCommand(ctx, "bk.convert");
    if (!cmd) return REDISMODULE_ERR;
    /* Keys: argv[1] (converted), and the staging key after STAGE or FROM when given (a search by keyword,
     * which finds nothing in the one-key form). Redis 7.0's cluster routing reads only the legacy key range
     * (the first key here), so the command also answers key position requests (getkeys-api). */
    RedisModuleCommandKeySpec specs[4];
    memset(specs, 0, sizeof specs);
    static const char *words[] = { NULL, "STAGE", "FROM" };
    for (int i = 0; i < 3; i++) {
        specs[i].flags = REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_UPDATE;
        if (i == 0) {
            specs[i].begin_search_type = REDISMODULE_KSPEC_BS_INDEX;
            specs[i].bs.index.pos = 1;
        } else {
            specs[i].begin_search_type = REDISMODULE_KSPEC_BS_KEYWORD;
            specs[i].bs.keyword.keyword = words[i];
            specs[i].bs.keyword.startfrom = 2;
        }
        specs[i].find_keys_type = REDISMODULE_KSPEC_FK_RANGE;
        specs[i].fk.range.lastkey = 0;
        specs[i].fk.range.keystep = 1;
    }
    RedisModuleCommandInfo info = {
        .version = REDISMODULE_COMMAND_INFO_VERSION,
        .summary = "Converts a key in RedisBloom's layout to bloomkit's filter (empty ones, or from a staging key)",
        .complexity = "O(n), n the filter's size",
        .since = "0.1.0",
        .arity = -2,
        .key_specs = specs,
    };
    return RedisModule_SetCommandInfo(cmd, &info);
}
