/*
 * CF.* : the cuckoo side, RedisBloom 2.4.23's commands over bloomkit's cuckoo filter (bk_cuckoo) with
 * its expansion chain. BUCKETSIZE is the slots per bucket (1 .. 255, as RedisBloom), MAXITERATIONS the kicks
 * one insert may do, EXPANSION the growth of each new table (0: none). Fingerprints are 8 bits by
 * default, RedisBloom's size and error class; the module argument CF_FINGERPRINT_BITS 12 or 16 buys a
 * 16x or 256x lower false-positive rate for 1.5x or 2x the memory.
 */
#include "module.h"

#include <string.h>

#define CF_DEFAULT_BUCKETSIZE 2
#define CF_DEFAULT_MAX_ITERATIONS 20
#define CF_DEFAULT_EXPANSION 1
/* Tables of fewer buckets than this are rounded up to a power of two (cf_create). */
#define CF_SMALL_BUCKETS 256

/* ---- packed values (module.h, BKR_CF_PACKED) ---- */

/* Bytes the allocator holds for a packed array of len bytes. */
static size_t packed_heap(void *words, size_t len)
{
    return RedisModule_MallocSize ? RedisModule_MallocSize(words) : len;
}

bkr_value *bkr_cf_pack_value(bk_cuckoo *cf)
{
    size_t len = bkr_cfg.cf_unpacked ? 0 : bk_cuckoo_packed_size(cf);
    if (len == 0) return NULL;
    bkr_cfpack *pv = RedisModule_Calloc(1, sizeof *pv);
    void *words = RedisModule_Alloc(len);
    bk_cuckoo_pack(cf, &pv->hdr, words, len); /* cannot fail: cf packs into len bytes */
    bk_cuckoo_free(cf);
    pv->v.obj = words;
    pv->v.type = BKR_CF_PACKED;
    pv->v.heap = packed_heap(words, len);
    return &pv->v;
}

bk_cuckoo *bkr_cf_open(bkr_cfwork *w, RedisModuleKey *key, bkr_value *v)
{
    w->v = v;
    w->key = key;
    w->heap0 = bkr_heap_now();
    if (v->type != BKR_CF_PACKED) return v->obj;
    bkr_cfpack *pv = bkr_cfpack_of(v);
    /* (a packed value's header and array are the module's own: the view opens) */
    return bk_cuckoo_view_open(&w->view, &pv->hdr, v->obj, bk_cuckoo_packed_array_size(&pv->hdr), NULL);
}

/* The key's value becomes nv (same filter); the old block is freed, not the filter. */
static void cf_replace(bkr_cfwork *w, bkr_value *nv)
{
    bkr_value *old = NULL;
    if (RedisModule_ModuleTypeReplaceValue(w->key, bkr_type[BKR_CF], nv, (void **)&old) != REDISMODULE_OK) {
        RedisModule_Free(nv); /* (not reached: the key holds w->v) */
        return;
    }
    RedisModule_Free(old);
    w->v = nv;
}

void bkr_cf_close(bkr_cfwork *w)
{
    bkr_value *v = w->v;
    if (v->type != BKR_CF_PACKED) {
        /* An ordinary filter that fits the packed form again (removes emptied its stash, a CF.DEL
         * brought it back under the limits) packs, so that a key's form follows its state alone (and
         * DEBUG RELOAD, which packs what fits, changes nothing). */
        if (!w->key || v->type != BK_TYPE_CUCKOO) return;
        bkr_value *pv = bkr_cf_pack_value(v->obj); /* NULL when it does not fit, or with CF_PACKED no */
        if (pv) cf_replace(w, pv);
        return;
    }
    bkr_cfpack *pv = bkr_cfpack_of(v);
    bk_cuckoo *full;
    /* Only small blocks are allocated here (the new filter's first block, a vector), which the module's
     * allocator never fails (Redis aborts first): the view is always closed. */
    if (bk_cuckoo_view_close(&w->view, &pv->hdr, v->obj, bk_cuckoo_packed_array_size(&pv->hdr), &full) != BK_OK) {
        bk_cuckoo_view_discard(&w->view);
        return;
    }
    if (!full) {
        v->heap = packed_heap(v->obj, bk_cuckoo_packed_array_size(&pv->hdr));
        return;
    }
    /* The ordinary filter holds what the library allocated since the view opened (tables it grew, the
     * filter's block); the packed array goes. */
    RedisModule_Free(v->obj);
    v->obj = full;
    v->type = BK_TYPE_CUCKOO;
    v->heap = bkr_heap_now() - w->heap0;
    /* An ordinary filter's value is a plain 16-byte bkr_value: the key takes one (its expiry kept). */
    if (!w->key) return; /* (writes always pass their key) the 48-byte block stays */
    bkr_value *nv = RedisModule_Calloc(1, sizeof *nv);
    *nv = *v;
    cf_replace(w, nv);
}

bk_status bkr_cf_unpack(const bkr_value *v, bk_cuckoo **out)
{
    const bkr_cfpack *pv = bkr_cfpack_of(v);
    return bk_cuckoo_unpack(&pv->hdr, v->obj, bk_cuckoo_packed_array_size(&pv->hdr), NULL, out);
}

static bk_status cf_create(long long capacity, long long bucket_size, long long max_iterations,
                           long long expansion, bkr_value **out)
{
    size_t heap0 = bkr_heap_now();
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.bucket_size = (uint32_t)bucket_size;
    o.fingerprint_bits = (uint32_t)bkr_cfg.cf_fingerprint_bits;
    o.max_kicks = (uint32_t)max_iterations;
    o.expansion = (uint32_t)expansion;
    /* RedisBloom's geometry: capacity / b buckets, so a table holds about 84% (b = 2) of its slots
     * before the chain grows, as there. Small tables (under CF_SMALL_BUCKETS buckets) are rounded up to
     * a power of two as RedisBloom rounds every table, so that a small filter holds `capacity` items in
     * its first table at RedisBloom's false-positive rate (CF.RESERVE k 100: 64 buckets, 100 items at
     * 1.2%, where 50 buckets would have grown a second table at about 84 items); larger ones are not
     * rounded, and take the same memory per table as RedisBloom's or less. */
    o.load_factor = 1.0;
    /* The first table's arrays, known before anything is allocated: MAX_FILTER_SIZE refuses it here. */
    uint64_t buckets = ((uint64_t)capacity + (uint64_t)bucket_size - 1) / (uint64_t)bucket_size;
    if (buckets < CF_SMALL_BUCKETS) {
        uint64_t pow2 = 1;
        while (pow2 < buckets) pow2 <<= 1;
        buckets = pow2;
        capacity = (long long)(buckets * (uint64_t)bucket_size);
    }
    double bytes = (double)buckets * (double)bucket_size * (double)o.fingerprint_bits / 8.0;
    if (bytes > (double)bkr_cfg.max_filter_bytes) return BK_ETOOBIG;
    bk_cuckoo *cf;
    bk_status s = bk_cuckoo_new((uint64_t)capacity, 0, &o, &cf);
    if (s != BK_OK) return s;
    *out = bkr_cf_pack_value(cf);
    if (!*out) *out = bkr_value_wrap(BK_TYPE_CUCKOO, cf, heap0);
    return *out ? BK_OK : BK_ENOMEM;
}

/* "Filter is full" (RedisBloom's text); which limit was hit goes to the log. */
static int cf_reply_full(RedisModuleCtx *ctx, const bk_cuckoo *cf, const char *p, size_t len)
{
    bk_cuckoo_info in;
    bk_cuckoo_get_info(cf, &in);
    uint64_t copies = bk_cuckoo_count(cf, p, len);
    if (copies >= 2 * (uint64_t)in.bucket_size * in.tables)
        return bkr_reply_error_why(ctx, "Filter is full",
                                   "the item has %llu copies, all its buckets hold (2 * BUCKETSIZE per table, %u "
                                   "tables), and EXPANSION is 0", (unsigned long long)copies, in.tables);
    if (in.expansion == 0) return bkr_reply_error_why(ctx, "Filter is full", "EXPANSION is 0, so it cannot grow");
    return bkr_reply_error_why(ctx, "Filter is full", "the chain cannot grow (%u tables)", in.tables);
}

/* ---- CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e] ---- */

BKR_GUARDED(CF_Reserve)
static int CF_Reserve_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 3 || argc % 2 == 0) return RedisModule_WrongArity(ctx);
    long long capacity;
    if (!bkr_arg_ll(argv[2], &capacity)) return RedisModule_ReplyWithError(ctx, "Bad capacity");
    long long max_iterations = CF_DEFAULT_MAX_ITERATIONS, bucket_size = CF_DEFAULT_BUCKETSIZE,
              expansion = CF_DEFAULT_EXPANSION;
    for (int i = 3; i < argc; i += 2) {
        if (bkr_arg_is(argv[i], "MAXITERATIONS")) {
            if (!bkr_arg_ll(argv[i + 1], &max_iterations))
                return RedisModule_ReplyWithError(ctx, "Couldn't parse MAXITERATIONS");
            if (max_iterations <= 0 || max_iterations > BK_CUCKOO_MAX_KICKS)
                return RedisModule_ReplyWithError(
                    ctx, "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.");
        } else if (bkr_arg_is(argv[i], "BUCKETSIZE")) {
            if (!bkr_arg_ll(argv[i + 1], &bucket_size))
                return RedisModule_ReplyWithError(ctx, "Couldn't parse BUCKETSIZE");
            if (bucket_size <= 0 || bucket_size > BK_CUCKOO_MAX_BUCKET_SIZE)
                return RedisModule_ReplyWithError(
                    ctx, "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.");
        } else if (bkr_arg_is(argv[i], "EXPANSION")) {
            if (!bkr_arg_ll(argv[i + 1], &expansion))
                return RedisModule_ReplyWithError(ctx, "Couldn't parse EXPANSION");
            if (expansion < 0 || expansion > BK_CUCKOO_MAX_EXPANSION)
                return RedisModule_ReplyWithError(
                    ctx, "EXPANSION: value must be an integer between 0 and 32768, inclusive.");
        } else {
            return RedisModule_ReplyWithError(ctx, "ERR unknown argument");
        }
    }
    if (bucket_size * 2 > capacity)
        return RedisModule_ReplyWithError(ctx, "Capacity must be at least (BucketSize * 2)");

    RedisModuleKey *key;
    if (!bkr_open_new(ctx, argv[1], BKR_CF, &key)) return REDISMODULE_OK;
    bkr_value *v;
    bk_status s = cf_create(capacity, bucket_size, max_iterations, expansion, &v);
    return bkr_reply_created(ctx, key, BKR_CF, s, v);
}

/* ---- CF.ADD / CF.ADDNX / CF.INSERT / CF.INSERTNX ---- */

typedef struct cf_insert_opts {
    long long capacity;
    bool nx, nocreate, multi;
} cf_insert_opts;

static int cf_insert_items(RedisModuleCtx *ctx, RedisModuleString *name, bkr_value *v, bk_cuckoo *cf, bool changed,
                           RedisModuleString **items, int n, const cf_insert_opts *o);

static int cf_insert_common(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleString **items, int n,
                            const cf_insert_opts *o)
{
    RedisModuleKey *key;
    bkr_value *v;
    bool changed = false;
    bkr_lookup st = bkr_open(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE, BKR_CF, &key, &v);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_EMPTY) {
        if (o->nocreate) return RedisModule_ReplyWithError(ctx, "ERR not found");
        bk_status s = cf_create(o->capacity, CF_DEFAULT_BUCKETSIZE, CF_DEFAULT_MAX_ITERATIONS,
                                CF_DEFAULT_EXPANSION, &v);
        if (s != BK_OK) return bkr_reply_status(ctx, s);
        bkr_set(key, BKR_CF, v);
        changed = true;
    } else if (bkr_stage_of(v)) {
        return bkr_reply_restoring(ctx);
    }
    bkr_cfwork w;
    bk_cuckoo *cf = bkr_cf_open(&w, key, v);
    int rc = cf_insert_items(ctx, name, v, cf, changed, items, n, o);
    bkr_cf_close(&w);
    return rc;
}

static int cf_insert_items(RedisModuleCtx *ctx, RedisModuleString *name, bkr_value *v, bk_cuckoo *cf, bool changed,
                           RedisModuleString **items, int n, const cf_insert_opts *o)
{
    /* RedisBloom's guard against unbounded growth: no insert once the chain has CF_MAX_EXPANSIONS tables. */
    if ((long long)bk_cuckoo_tables(cf) >= bkr_cfg.cf_max_expansions) {
        if (changed) RedisModule_ReplicateVerbatim(ctx); /* the key was created */
        return bkr_reply_error_why(ctx, "Maximum expansions reached", "the filter has %u tables, CF_MAX_EXPANSIONS is %lld",
                                   bk_cuckoo_tables(cf), bkr_cfg.cf_max_expansions);
    }

    /* RESP3 shapes as RedisBloom 2.6+: booleans, except the integers (1, 0, -1) of CF.INSERTNX. Single
     * adds always reply a boolean (an integer 1/0 in RESP2), so only arrays need the protocol. */
    bool bools = o->multi ? !o->nx && bkr_resp3(ctx) : true;
    if (o->multi) RedisModule_ReplyWithArray(ctx, n);
    /* The copy limit (docs/REDIS.md, "Repeated items"): off by default, as in RedisBloom. It counts
     * matching fingerprints in the item's buckets, so it also counts distinct items that share a
     * fingerprint and would refuse items RedisBloom accepts: only an operator who asks for it gets it. */
    uint64_t copy_limit = (uint64_t)bkr_cfg.cf_max_copies;
    uint64_t seed = bk_cuckoo_seed(cf);
    /* A refused add can still have changed the filter: with every stash entry taken below its capacity,
     * the add first gives the stashed fingerprints another walk (moving fingerprints, and the kick
     * generator), and only then finds the table full. A replica must make the same attempt or drift
     * from here on, so such a command is replicated too (the replica gets the same refusal). Any such
     * change moves the kick generator (a walk that places every stashed fingerprint leaves the table
     * not full), so its state tells whether an add changed anything. */
    uint64_t kick0 = bk_cuckoo_kick_state(cf);
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *p = RedisModule_StringPtrLen(items[i], &len);
        uint64_t h = bk_hash64(p, len, seed); /* bk_cuckoo_add(f, p, len) is add_hash of this hash */
        if (copy_limit && !o->nx && bk_cuckoo_count_hash(cf, h) >= copy_limit) {
            RedisModuleString *m = RedisModule_CreateStringPrintf(
                ctx, "ERR item copy limit reached: at most %llu copies of one item (the module argument "
                     "CF_MAX_COPIES; CF.COUNT counts them, CF.DEL removes one)", (unsigned long long)copy_limit);
            RedisModule_ReplyWithError(ctx, RedisModule_StringPtrLen(m, NULL));
            if (!o->multi) break;
            continue;
        }
        size_t heap0 = bkr_heap_now();
        bk_status s = o->nx ? bk_cuckoo_add_if_absent_hash(cf, h) : bk_cuckoo_add_hash(cf, h);
        v->heap += bkr_heap_now() - heap0; /* a table added to the chain */
        if (s == BK_OK || s == BK_EEXISTS) {
            changed |= s == BK_OK;
            if (bools) RedisModule_ReplyWithBool(ctx, s == BK_OK);
            else RedisModule_ReplyWithLongLong(ctx, s == BK_OK);
        } else if (!o->multi) {
            if (changed) {
                RedisModule_ReplicateVerbatim(ctx);
            } else if (bk_cuckoo_kick_state(cf) != kick0) {
                /* the same attempt in the multi-item form, which answers a refusal without an error */
                RedisModule_Replicate(ctx, o->nx ? "CF.INSERTNX" : "CF.INSERT", "sccs", name, "NOCREATE", "ITEMS",
                                      items[i]);
            }
            if (s == BK_EFULL) return cf_reply_full(ctx, cf, p, len);
            return bkr_reply_status(ctx, s);
        } else if (s == BK_ENOMEM) {
            bkr_reply_status(ctx, s); /* out of memory (or over maxmemory) in the array, not a -1 */
        } else if (bools) {
            RedisModule_ReplyWithBool(ctx, 0);
        } else {
            RedisModule_ReplyWithLongLong(ctx, -1);
        }
    }
    if (changed || bk_cuckoo_kick_state(cf) != kick0) RedisModule_ReplicateVerbatim(ctx);
    return REDISMODULE_OK;
}

BKR_GUARDED(CF_Add)
static int CF_Add_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3) return RedisModule_WrongArity(ctx);
    cf_insert_opts o = { .capacity = bkr_cfg.cf_initial_size };
    o.nx = bkr_arg_is(argv[0], "CF.ADDNX");
    return cf_insert_common(ctx, argv[1], argv + 2, 1, &o);
}

/* CF.INSERT[NX] key [CAPACITY c] [NOCREATE] ITEMS item [item ...] */
BKR_GUARDED(CF_Insert)
static int CF_Insert_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 4) return RedisModule_WrongArity(ctx);
    cf_insert_opts o = { .capacity = bkr_cfg.cf_initial_size, .multi = true };
    o.nx = bkr_arg_is(argv[0], "CF.INSERTNX");
    int items = -1;
    for (int i = 2; i < argc && items < 0; i++) {
        if (bkr_arg_is(argv[i], "ITEMS")) {
            items = i + 1;
        } else if (bkr_arg_is(argv[i], "CAPACITY")) {
            if (++i == argc) return RedisModule_WrongArity(ctx);
            if (!bkr_arg_ll(argv[i], &o.capacity)) return RedisModule_ReplyWithError(ctx, "Bad capacity");
            if (2 * CF_DEFAULT_BUCKETSIZE > o.capacity)
                return RedisModule_ReplyWithError(ctx, "Capacity must be at least (BucketSize * 2)");
        } else if (bkr_arg_is(argv[i], "NOCREATE")) {
            o.nocreate = true;
        } else {
            return RedisModule_ReplyWithError(ctx, "Unknown argument received");
        }
    }
    if (items < 0 || items >= argc) return RedisModule_WrongArity(ctx);
    return cf_insert_common(ctx, argv[1], argv + items, argc - items, &o);
}

/* ---- CF.EXISTS / CF.MEXISTS / CF.COUNT ---- */

static int cf_check(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool multi, bool count)
{
    RedisModuleKey *key;
    bkr_value *v = NULL;
    bkr_lookup st = bkr_open(ctx, argv[1], REDISMODULE_READ, BKR_CF, &key, &v);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_OK && bkr_stage_of(v)) return bkr_reply_restoring(ctx);
    int n = argc - 2;
    bkr_cfwork w; /* queries only: a view needs no closing */
    const bk_cuckoo *cf = st == BKR_OK ? bkr_cf_open(&w, NULL, v) : NULL;
    if (!multi) {
        size_t len;
        const char *p = RedisModule_StringPtrLen(argv[2], &len);
        if (count) {
            long long c = st == BKR_OK ? (long long)bk_cuckoo_count(cf, p, len) : 0;
            return RedisModule_ReplyWithLongLong(ctx, c);
        }
        return RedisModule_ReplyWithBool(ctx, st == BKR_OK && bk_cuckoo_contains(cf, p, len));
    }
    RedisModule_ReplyWithArray(ctx, n);
    if (st != BKR_OK) {
        for (int i = 0; i < n; i++) RedisModule_ReplyWithBool(ctx, 0);
        return REDISMODULE_OK;
    }
    /* Many items: one batch query (hash all, prefetch both buckets, then compare). */
    const void **keys;
    size_t *lens;
    uint8_t *res = bkr_item_batch(ctx, argv + 2, n, &keys, &lens);
    bk_cuckoo_contains_many(cf, (const void *const *)keys, lens, (size_t)n, res, NULL);
    for (int i = 0; i < n; i++) RedisModule_ReplyWithBool(ctx, res[i]);
    return REDISMODULE_OK;
}

static int CF_Exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3) return RedisModule_WrongArity(ctx);
    return cf_check(ctx, argv, argc, false, false);
}

static int CF_MExists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 3) return RedisModule_WrongArity(ctx);
    return cf_check(ctx, argv, argc, true, false);
}

static int CF_Count(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3) return RedisModule_WrongArity(ctx);
    return cf_check(ctx, argv, argc, false, true);
}

/* ---- CF.DEL key item ---- */

static int CF_Del(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_value *v;
    bkr_lookup st = bkr_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, BKR_CF, &key, &v);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_EMPTY) return RedisModule_ReplyWithError(ctx, "Not found");
    if (bkr_stage_of(v)) return bkr_reply_restoring(ctx);
    size_t n;
    const char *p = RedisModule_StringPtrLen(argv[2], &n);
    bkr_cfwork w;
    bk_status s = bk_cuckoo_remove(bkr_cf_open(&w, key, v), p, n);
    bkr_cf_close(&w);
    if (s == BK_OK) RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithBool(ctx, s == BK_OK);
}

/* ---- CF.INFO key ---- */

static int CF_Info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    bkr_value *v;
    bkr_lookup st = bkr_open(ctx, argv[1], REDISMODULE_READ, BKR_CF, &key, &v);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_EMPTY) return RedisModule_ReplyWithError(ctx, "ERR not found");
    if (bkr_stage_of(v)) return bkr_reply_restoring(ctx);
    bk_cuckoo_info in;
    bkr_cfwork w;
    bk_cuckoo_get_info(bkr_cf_open(&w, NULL, v), &in);
    const char *names[] = { "Size", "Number of buckets", "Number of filters", "Number of items inserted",
                            "Number of items deleted", "Bucket size", "Expansion rate", "Max iterations" };
    long long vals[] = { (long long)bkr_value_memory(v), (long long)in.first_buckets, in.tables,
                         (long long)in.items, (long long)in.deleted, in.bucket_size, in.expansion,
                         in.max_kicks };
    RedisModule_ReplyWithMap(ctx, 8);
    for (int i = 0; i < 8; i++) {
        RedisModule_ReplyWithSimpleString(ctx, names[i]);
        RedisModule_ReplyWithLongLong(ctx, vals[i]);
    }
    return REDISMODULE_OK;
}

/* ---- CF.SCANDUMP key iter / CF.LOADCHUNK key iter data ---- */

static int CF_ScanDump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3) return RedisModule_WrongArity(ctx);
    long long iter;
    if (!bkr_arg_ll(argv[2], &iter) || iter < 0) return RedisModule_ReplyWithError(ctx, "Invalid position");
    RedisModuleKey *key;
    bkr_value *v;
    bkr_lookup st = bkr_open(ctx, argv[1], REDISMODULE_READ, BKR_CF, &key, &v);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_EMPTY) return RedisModule_ReplyWithError(ctx, "ERR not found");
    return bkr_scandump(ctx, v, iter, BKR_CF);
}

BKR_GUARDED(CF_LoadChunk)
static int CF_LoadChunk_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 4) return RedisModule_WrongArity(ctx);
    long long iter;
    if (!bkr_arg_ll(argv[2], &iter) || iter == 0) return RedisModule_ReplyWithError(ctx, "Invalid position");
    RedisModuleKey *key;
    bkr_value *v = NULL;
    bkr_lookup st = bkr_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, BKR_CF, &key, &v);
    return bkr_loadchunk(ctx, key, st, v, iter, argv[3], BKR_CF);
}

/* ---- BK.CF.KICKSTATE key state ----
 * Sets a CF key's kick generator state (docs/REDIS.md, "Kick state"): what an AOF rewrite emits after a
 * key's CF.LOADCHUNK commands, since the saved form they carry does not hold it. */
static int BK_CfKickState(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3) return RedisModule_WrongArity(ctx);
    uint64_t state;
    if (!bkr_arg_u64(argv[2], &state) || state == 0) return RedisModule_ReplyWithError(ctx, "ERR invalid kick state");
    RedisModuleKey *key;
    bkr_value *v;
    bkr_lookup st = bkr_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, BKR_CF, &key, &v);
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (st == BKR_EMPTY) return RedisModule_ReplyWithError(ctx, "ERR not found");
    if (bkr_stage_of(v)) return bkr_reply_restoring(ctx);
    bkr_cfwork w;
    bk_status s = bk_cuckoo_set_kick_state(bkr_cf_open(&w, key, v), state);
    bkr_cf_close(&w);
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

static const bkr_command cf_commands[] = {
    { "cf.reserve", CF_Reserve, "write deny-oom", -3, BKR_KEY_CREATE,
      "Creates an empty cuckoo filter with an initial capacity", "O(1)" },
    { "cf.add", CF_Add, "write deny-oom", 3, BKR_KEY_WRITE,
      "Adds an item, creating the filter if it does not exist", "O(k + i)" },
    { "cf.addnx", CF_Add, "write deny-oom", 3, BKR_KEY_WRITE,
      "Adds an item only if it is not (probably) present", "O(k + i)" },
    { "cf.insert", CF_Insert, "write deny-oom", -4, BKR_KEY_WRITE,
      "Adds items, creating the filter with the given capacity if it does not exist", "O(n * (k + i))" },
    { "cf.insertnx", CF_Insert, "write deny-oom", -4, BKR_KEY_WRITE,
      "Adds items that are not (probably) present", "O(n * (k + i))" },
    { "cf.exists", CF_Exists, "readonly fast", 3, BKR_KEY_READ,
      "Whether an item may be in the filter", "O(k)" },
    { "cf.mexists", CF_MExists, "readonly fast", -3, BKR_KEY_READ,
      "Whether each item may be in the filter", "O(k * n)" },
    { "cf.count", CF_Count, "readonly fast", 3, BKR_KEY_READ,
      "How many copies of an item's fingerprint the filter holds", "O(k)" },
    { "cf.del", CF_Del, "write fast", 3, BKR_KEY_DELETE_ITEM, "Removes one copy of an item", "O(k)" },
    { "cf.info", CF_Info, "readonly fast", 2, BKR_KEY_READ, "Information about a cuckoo filter", "O(1)" },
    { "cf.scandump", CF_ScanDump, "readonly", 3, BKR_KEY_READ,
      "Begins or continues an incremental save of a cuckoo filter", "O(n)" },
    { "cf.loadchunk", CF_LoadChunk, "write deny-oom", 4, BKR_KEY_CREATE,
      "Restores a cuckoo filter saved by CF.SCANDUMP, one chunk at a time", "O(n)" },
    { "bk.cf.kickstate", BK_CfKickState, "write fast", 3, BKR_KEY_WRITE,
      "Sets a cuckoo filter's kick generator state (what an AOF rewrite emits after its chunks)", "O(1)" },
};

int bkr_cf_register(RedisModuleCtx *ctx)
{
    return bkr_register(ctx, cf_commands, sizeof cf_commands / sizeof cf_commands[0]);
}

/* A new empty cuckoo filter as CF.RESERVE makes it (BK.CONVERT, rb_convert.c). */
bk_status bkr_cf_new_value(long long capacity, long long bucket_size, long long max_iterations, long long expansion,
                           bkr_value **out)
{
    return cf_create(capacity, bucket_size, max_iterations, expansion, out);
}
