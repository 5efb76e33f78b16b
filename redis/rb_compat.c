/*
 * Keys migrated from RedisBloom 2.x: the data types MBbloom-- and MBbloomCF, and the BF.* / CF.*
 * commands on them.
 *
 * Routing. Every BF.* / CF.* command is registered behind a small router (bkr_rb_hook). When no
 * RedisBloom value exists in the server (a count kept by the types' load and free), the router calls
 * the bloomkit command directly; otherwise it looks at the key first and sends commands on a
 * RedisBloom key here. BF.LOADCHUNK / CF.LOADCHUNK with iterator 1 on an empty key always come here:
 * that is the first chunk of a RedisBloom SCANDUMP (its header); bloomkit's own first chunk never has
 * iterator 1 (its iterator is 1 + the chunk's length).
 *
 * Commands follow the bloomkit commands' replies (docs/REDIS.md) over RedisBloom's filter logic, so a
 * migrated key answers exactly as RedisBloom did and keeps answering as RedisBloom would after adds.
 *
 * With the module argument REDISBLOOM_LAYOUT yes, the commands that create a key (BF.RESERVE, BF.ADD,
 * BF.MADD, BF.INSERT, CF.RESERVE, CF.ADD[NX], CF.INSERT[NX]) also come here when their key is empty, and
 * make it as RedisBloom 2.4 would: same parameters, defaults, layout and hashing, and the arguments read
 * by RedisBloom's rules (options found anywhere, BF.INSERT / CF.INSERT options by their first letters),
 * so that a replica of a RedisBloom master, a replayed AOF and the nodes of a mixed cluster accept and
 * answer every command exactly as RedisBloom does. A key made so reaches replicas and the AOF as the
 * header chunk of its RedisBloom SCANDUMP (BF.LOADCHUNK / CF.LOADCHUNK key 1 header: an empty filter of
 * that layout wherever it is applied, in this module in either mode and in RedisBloom), followed by the
 * command itself when it also adds items; so a replica, or a server replaying the AOF, makes the same
 * key whatever its own setting.
 */
#include "module.h"
#include "rb_compat.h"

#include <stdatomic.h>
#include <string.h>

#define RB_BF_ENCVER 4
#define RB_CF_ENCVER 4
#define RB_CHUNK_MAX ((size_t)16 << 20) /* RedisBloom's SCANDUMP chunk size */

static RedisModuleType *rb_bf_type, *rb_cf_type;
static atomic_long rb_live; /* RedisBloom values in the keyspace (and copies being made) */

void *rb_alloc_zero(size_t n)
{
    if (bkr_guard_refuses(n)) return NULL;
    void *p = RedisModule_TryAlloc ? RedisModule_TryAlloc(n ? n : 1) : RedisModule_Alloc(n ? n : 1);
    if (p) memset(p, 0, n);
    return p;
}

/* ---- type methods ---- */

static void *bf_load(RedisModuleIO *io, int encver)
{
    rb_chain *c = rb_chain_rdb_load(io, encver);
    if (c) atomic_fetch_add(&rb_live, 1);
    return c;
}

static void *cf_load(RedisModuleIO *io, int encver)
{
    rb_cuckoo *cf = rb_cuckoo_rdb_load(io, encver);
    if (cf) atomic_fetch_add(&rb_live, 1);
    return cf;
}

static void bf_save(RedisModuleIO *io, void *v) { rb_chain_rdb_save(io, v); }
static void cf_save(RedisModuleIO *io, void *v) { rb_cuckoo_rdb_save(io, v); }

static void bf_free(void *v)
{
    if (!v) return;
    rb_chain_free(v);
    atomic_fetch_sub(&rb_live, 1);
}

static void cf_free(void *v)
{
    if (!v) return;
    rb_cuckoo_free(v);
    atomic_fetch_sub(&rb_live, 1);
}

static size_t bf_mem(const void *v) { return rb_chain_memory(v); }
static size_t cf_mem(const void *v) { return rb_cuckoo_memory(v); }

static void bf_aof(RedisModuleIO *aof, RedisModuleString *key, void *v)
{
    const rb_chain *c = v;
    size_t hn = rb_chain_header_size(c);
    uint8_t *hdr = RedisModule_Alloc(hn);
    rb_chain_header_write(c, hdr);
    RedisModule_EmitAOF(aof, "BF.LOADCHUNK", "slb", key, 1LL, (const char *)hdr, hn);
    RedisModule_Free(hdr);
    const uint8_t *p;
    size_t n;
    long long iter = 1, next;
    while (rb_chain_chunk(c, iter, RB_CHUNK_MAX, &p, &n, &next)) {
        RedisModule_EmitAOF(aof, "BF.LOADCHUNK", "slb", key, next, (const char *)p, n);
        iter = next;
    }
}

static void cf_aof(RedisModuleIO *aof, RedisModuleString *key, void *v)
{
    const rb_cuckoo *cf = v;
    uint8_t hdr[RB_CF_HEADER_SIZE];
    rb_cuckoo_header_write(cf, hdr);
    RedisModule_EmitAOF(aof, "CF.LOADCHUNK", "slb", key, 1LL, (const char *)hdr, sizeof hdr);
    const uint8_t *p;
    size_t n;
    long long iter = 1, next;
    while (rb_cuckoo_chunk(cf, iter, RB_CHUNK_MAX, &p, &n, &next)) {
        RedisModule_EmitAOF(aof, "CF.LOADCHUNK", "slb", key, next, (const char *)p, n);
        iter = next;
    }
}

static void bf_digest(RedisModuleDigest *md, void *v)
{
    const rb_chain *c = v;
    RedisModule_DigestAddLongLong(md, (long long)c->size);
    RedisModule_DigestAddLongLong(md, c->options);
    RedisModule_DigestAddLongLong(md, c->growth);
    for (uint64_t i = 0; i < c->nlinks; i++) {
        RedisModule_DigestAddLongLong(md, (long long)c->links[i].size);
        RedisModule_DigestAddLongLong(md, (long long)c->links[i].entries);
        RedisModule_DigestAddStringBuffer(md, (const char *)c->links[i].bits, (size_t)c->links[i].bytes);
    }
    RedisModule_DigestEndSequence(md);
}

static void cf_digest(RedisModuleDigest *md, void *v)
{
    const rb_cuckoo *cf = v;
    RedisModule_DigestAddLongLong(md, (long long)cf->items);
    RedisModule_DigestAddLongLong(md, (long long)cf->deletes);
    RedisModule_DigestAddLongLong(md, cf->bucket_size);
    RedisModule_DigestAddLongLong(md, cf->max_iterations);
    RedisModule_DigestAddLongLong(md, cf->expansion);
    for (uint16_t t = 0; t < cf->ntables; t++)
        RedisModule_DigestAddStringBuffer(md, (const char *)cf->tables[t].data,
                                          (size_t)(cf->tables[t].nbuckets * cf->bucket_size));
    RedisModule_DigestEndSequence(md);
}

static void *bf_copy(RedisModuleString *from, RedisModuleString *to, const void *v)
{
    (void)from;
    (void)to;
    rb_chain *c = rb_chain_clone(v);
    if (c) atomic_fetch_add(&rb_live, 1);
    return c;
}

static void *cf_copy(RedisModuleString *from, RedisModuleString *to, const void *v)
{
    (void)from;
    (void)to;
    rb_cuckoo *c = rb_cuckoo_clone(v);
    if (c) atomic_fetch_add(&rb_live, 1);
    return c;
}

RedisModuleType *bkr_rb_type(bool cf) { return cf ? rb_cf_type : rb_bf_type; }

int bkr_rb_register_types(RedisModuleCtx *ctx)
{
    /* RedisBloom's own type names and encoding version: its RDB files, replication streams and
     * DUMP payloads load here, and what this module saves for these keys loads in RedisBloom. */
    rb_bf_type = bkr_create_type(ctx, "MBbloom--", RB_BF_ENCVER, bf_load, bf_save, bf_aof, bf_mem, bf_free, bf_digest,
                                 bf_copy);
    rb_cf_type = bkr_create_type(ctx, "MBbloomCF", RB_CF_ENCVER, cf_load, cf_save, cf_aof, cf_mem, cf_free, cf_digest,
                                 cf_copy);
    return rb_bf_type && rb_cf_type ? REDISMODULE_OK : REDISMODULE_ERR;
}

/* ---- helpers ---- */

/* Open argv[1] for writing; *v is the RedisBloom value of `type`, or NULL for an empty key. false
 * (and a WRONGTYPE reply) for a key of another type. */
static bool open_rb(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleType *type, int mode,
                    RedisModuleKey **key, void **v)
{
    *key = RedisModule_OpenKey(ctx, name, mode);
    *v = NULL;
    int t = RedisModule_KeyType(*key);
    if (t == REDISMODULE_KEYTYPE_EMPTY) return true;
    if (t != REDISMODULE_KEYTYPE_MODULE || RedisModule_ModuleTypeGetType(*key) != type) {
        bkr_reply_wrongtype(ctx);
        return false;
    }
    *v = RedisModule_ModuleTypeGetValue(*key);
    return true;
}

static int reply_too_big(RedisModuleCtx *ctx)
{
    RedisModuleString *m = RedisModule_CreateStringPrintf(
        ctx, "ERR filter cannot grow: it reached its size limit (MAX_FILTER_SIZE %llu bytes)",
        bkr_cfg.max_filter_bytes);
    return RedisModule_ReplyWithError(ctx, RedisModule_StringPtrLen(m, NULL));
}

/* The index of the first argument equal to `word` (case-insensitive), the command name and key included,
 * or -1: how RedisBloom finds the options of BF.RESERVE and CF.RESERVE. */
static int rb_arg_index(const char *word, RedisModuleString **argv, int argc)
{
    for (int i = 0; i < argc; i++)
        if (bkr_arg_is(argv[i], word)) return i;
    return -1;
}

/* An option of BF.INSERT / CF.INSERT: in the RedisBloom layout mode by its first letter (and for N..., its
 * third), as RedisBloom reads them; otherwise the exact word. */
static bool rb_opt_is(RedisModuleString *arg, const char *word)
{
    if (!bkr_cfg.rb_layout) return bkr_arg_is(arg, word);
    size_t n;
    const char *s = RedisModule_StringPtrLen(arg, &n);
    if (n == 0 || (s[0] | 0x20) != (word[0] | 0x20)) return false;
    if (word[0] == 'E') /* ERROR, EXPANSION: told apart by the second letter (R: ERROR) */
        return word[1] == 'R' ? n >= 2 && (s[1] | 0x20) == 'r' : !(n >= 2 && (s[1] | 0x20) == 'r');
    if (word[0] == 'N') /* NOCREATE, NONSCALING: by the third */
        return word[2] == 'C' ? n >= 3 && (s[2] | 0x20) == 'c' : !(n >= 3 && (s[2] | 0x20) == 'c');
    return true;
}

static int reply_create_error(RedisModuleCtx *ctx, rb_add_result why)
{
    if (why == RB_NOMEM) return bkr_reply_status(ctx, BK_ENOMEM);
    return bkr_reply_status(ctx, BK_ETOOBIG);
}

/* ---- BF.* on MBbloom-- keys ---- */

/* How BF.ADD / BF.MADD / BF.INSERT make a missing key in the RedisBloom layout mode. */
typedef struct rb_bf_make {
    long long capacity;
    double error;
    long long expansion;
    bool nonscaling;
} rb_bf_make;

#define RB_BF_DEFAULT_EXPANSION 2
#define RB_BF_NEW_OPTIONS (RB_BLOOM_FORCE64 | RB_BLOOM_NOROUND) /* what RedisBloom's commands make */

/* A new chain in the empty key `name` (replying the error and returning false when it cannot be made),
 * replicated as its SCANDUMP header. */
static bool bf_make(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleKey *key, const rb_bf_make *mk)
{
    rb_add_result why;
    uint32_t options = RB_BF_NEW_OPTIONS | (mk->nonscaling ? RB_BLOOM_NO_SCALING : 0);
    rb_chain *c = rb_chain_new((uint64_t)mk->capacity, mk->error, options, (uint32_t)mk->expansion,
                               bkr_cfg.max_filter_bytes, &why);
    if (!c) {
        reply_create_error(ctx, why);
        return false;
    }
    atomic_fetch_add(&rb_live, 1);
    RedisModule_ModuleTypeSetValue(key, rb_bf_type, c);
    size_t hn = rb_chain_header_size(c);
    uint8_t *hdr = RedisModule_PoolAlloc(ctx, hn);
    rb_chain_header_write(c, hdr);
    RedisModule_Replicate(ctx, "BF.LOADCHUNK", "slb", name, 1LL, (const char *)hdr, hn);
    return true;
}

/* mk: how to make the key when it is missing (NULL: "not found"). */
static int bf_insert_items(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleString **items, int n,
                           bool multi, const rb_bf_make *mk)
{
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, name, rb_bf_type, REDISMODULE_READ | REDISMODULE_WRITE, &key, &v)) return REDISMODULE_OK;
    bool changed = false;
    if (!v) {
        if (!mk) return RedisModule_ReplyWithError(ctx, "ERR not found");
        if (!bf_make(ctx, name, key, mk)) return REDISMODULE_OK;
        v = RedisModule_ModuleTypeGetValue(key);
        changed = true;
    }
    rb_chain *c = v;
    long replied = 0;
    if (multi) RedisModule_ReplyWithArray(ctx, REDISMODULE_POSTPONED_ARRAY_LEN);
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *p = RedisModule_StringPtrLen(items[i], &len);
        rb_add_result r = rb_chain_add(c, p, len, bkr_cfg.max_filter_bytes);
        replied++;
        if (r == RB_ADDED || r == RB_PRESENT) {
            changed |= r == RB_ADDED;
            RedisModule_ReplyWithBool(ctx, r == RB_ADDED);
            continue;
        }
        if (r == RB_FULL) RedisModule_ReplyWithError(ctx, "ERR non scaling filter is full");
        else if (r == RB_TOOBIG) reply_too_big(ctx);
        else bkr_reply_status(ctx, BK_ENOMEM);
        break;
    }
    if (multi) RedisModule_ReplySetArrayLength(ctx, replied);
    if (changed) RedisModule_ReplicateVerbatim(ctx);
    return REDISMODULE_OK;
}

static rb_bf_make bf_defaults(void)
{
    return (rb_bf_make){ .capacity = bkr_cfg.bf_initial_size, .error = bkr_cfg.bf_error_rate,
                         .expansion = RB_BF_DEFAULT_EXPANSION };
}

static int rb_bf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3) return RedisModule_WrongArity(ctx);
    rb_bf_make mk = bf_defaults();
    return bf_insert_items(ctx, argv[1], argv + 2, 1, false, bkr_cfg.rb_layout ? &mk : NULL);
}

static int rb_bf_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3) return RedisModule_WrongArity(ctx);
    rb_bf_make mk = bf_defaults();
    return bf_insert_items(ctx, argv[1], argv + 2, argc - 2, true, bkr_cfg.rb_layout ? &mk : NULL);
}

/* BF.INSERT: on an existing filter the creation options are checked and then have no effect, as in
 * RedisBloom. */
static int rb_bf_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 4) return RedisModule_WrongArity(ctx);
    rb_bf_make mk = bf_defaults();
    bool nocreate = false;
    int items = -1;
    for (int i = 2; i < argc && items < 0; i++) {
        if (rb_opt_is(argv[i], "ITEMS")) {
            items = i + 1;
        } else if (rb_opt_is(argv[i], "CAPACITY")) {
            if (++i == argc) return RedisModule_WrongArity(ctx);
            if (!bkr_arg_ll(argv[i], &mk.capacity)) return RedisModule_ReplyWithError(ctx, "Bad capacity");
        } else if (rb_opt_is(argv[i], "ERROR")) {
            if (++i == argc) return RedisModule_WrongArity(ctx);
            if (RedisModule_StringToDouble(argv[i], &mk.error) != REDISMODULE_OK)
                return RedisModule_ReplyWithError(ctx, "Bad error rate");
        } else if (rb_opt_is(argv[i], "EXPANSION")) {
            if (++i == argc) return RedisModule_WrongArity(ctx);
            if (!bkr_arg_ll(argv[i], &mk.expansion)) return RedisModule_ReplyWithError(ctx, "Bad expansion");
        } else if (rb_opt_is(argv[i], "NOCREATE")) {
            nocreate = true;
        } else if (rb_opt_is(argv[i], "NONSCALING")) {
            mk.nonscaling = true;
        } else {
            return RedisModule_ReplyWithError(ctx, "Unknown argument received");
        }
    }
    if (items < 0 || items >= argc) return RedisModule_WrongArity(ctx);
    if (bkr_cfg.rb_layout && !(mk.error > 0 && mk.error < 1 && mk.capacity >= 1 && mk.expansion >= 1))
        return RedisModule_ReplyWithError(ctx, "Bad argument received");
    return bf_insert_items(ctx, argv[1], argv + items, argc - items, true,
                           bkr_cfg.rb_layout && !nocreate ? &mk : NULL);
}

/* BF.RESERVE key error_rate capacity [EXPANSION e] [NONSCALING], read as RedisBloom 2.4 reads it. Reached
 * for a RedisBloom key (which exists already) and, in the RedisBloom layout mode, for an empty key. */
static int rb_bf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 4 || argc > 7) return RedisModule_WrongArity(ctx);
    rb_bf_make mk = { .expansion = RB_BF_DEFAULT_EXPANSION };
    if (RedisModule_StringToDouble(argv[2], &mk.error) != REDISMODULE_OK)
        return RedisModule_ReplyWithError(ctx, "ERR bad error rate");
    if (!(mk.error > 0 && mk.error < 1)) return RedisModule_ReplyWithError(ctx, "ERR (0 < error rate range < 1) ");
    if (!bkr_arg_ll(argv[3], &mk.capacity)) return RedisModule_ReplyWithError(ctx, "ERR bad capacity");
    if (mk.capacity <= 0) return RedisModule_ReplyWithError(ctx, "ERR (capacity should be larger than 0)");
    mk.nonscaling = rb_arg_index("NONSCALING", argv, argc) >= 0;
    int ex = rb_arg_index("EXPANSION", argv, argc);
    if (ex + 1 == argc) return RedisModule_ReplyWithError(ctx, "ERR no expansion");
    if (ex >= 0) {
        if (mk.nonscaling) return RedisModule_ReplyWithError(ctx, "Nonscaling filters cannot expand");
        if (!bkr_arg_ll(argv[ex + 1], &mk.expansion)) return RedisModule_ReplyWithError(ctx, "ERR bad expansion");
    }
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, argv[1], rb_bf_type, REDISMODULE_READ | REDISMODULE_WRITE, &key, &v)) return REDISMODULE_OK;
    if (v) return RedisModule_ReplyWithError(ctx, "ERR item exists");
    if (!bf_make(ctx, argv[1], key, &mk)) return REDISMODULE_OK; /* (replicated as the header) */
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

static int rb_bf_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    bool multi = !bkr_arg_is(argv[0], "BF.EXISTS");
    if (multi ? argc < 3 : argc != 3) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, argv[1], rb_bf_type, REDISMODULE_READ, &key, &v)) return REDISMODULE_OK;
    if (multi) RedisModule_ReplyWithArray(ctx, argc - 2);
    for (int i = 2; i < argc; i++) {
        size_t len;
        const char *p = RedisModule_StringPtrLen(argv[i], &len);
        RedisModule_ReplyWithBool(ctx, v && rb_chain_contains(v, p, len));
    }
    return REDISMODULE_OK;
}

/* INFO's Size, as RedisBloom computes it: its structs (a 32-byte chain, 64 bytes per link or a 40-byte
 * filter, 16 per table) and the arrays. MEMORY USAGE gives the allocator's sizes. */
static uint64_t rb_chain_info_size(const rb_chain *c)
{
    uint64_t n = 32;
    for (uint64_t i = 0; i < c->nlinks; i++) n += 64 + c->links[i].bytes;
    return n;
}

static uint64_t rb_cuckoo_info_size(const rb_cuckoo *cf)
{
    uint64_t buckets = 0;
    for (uint16_t t = 0; t < cf->ntables; t++) buckets += cf->tables[t].nbuckets;
    return 40 + 16 * (uint64_t)cf->ntables + buckets * cf->bucket_size;
}

static int rb_bf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    bool card = bkr_arg_is(argv[0], "BF.CARD");
    if (card ? argc != 2 : (argc != 2 && argc != 3)) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, argv[1], rb_bf_type, REDISMODULE_READ, &key, &v)) return REDISMODULE_OK;
    if (!v) return card ? RedisModule_ReplyWithLongLong(ctx, 0) : RedisModule_ReplyWithError(ctx, "ERR not found");
    const rb_chain *c = v;
    if (card) return RedisModule_ReplyWithLongLong(ctx, (long long)c->size);
    static const char *names[] = { "Capacity", "Size", "Number of filters", "Number of items inserted",
                                   "Expansion rate" };
    static const char *fields[] = { "CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION" };
    long long vals[] = { (long long)rb_chain_capacity(c), (long long)rb_chain_info_size(c), (long long)c->nlinks,
                         (long long)c->size, (c->options & RB_BLOOM_NO_SCALING) ? 0 : (long long)c->growth };
    bool null_expansion = (c->options & RB_BLOOM_NO_SCALING) != 0;
    int from = 0, to = 5;
    if (argc == 3) {
        from = -1;
        for (int i = 0; i < 5; i++)
            if (bkr_arg_is(argv[2], fields[i])) from = i;
        if (from < 0) return RedisModule_ReplyWithError(ctx, "Invalid information value");
        to = from + 1;
        if (bkr_resp3(ctx)) RedisModule_ReplyWithMap(ctx, 1);
        else RedisModule_ReplyWithArray(ctx, 1);
    } else {
        RedisModule_ReplyWithMap(ctx, 5);
    }
    for (int i = from; i < to; i++) {
        if (argc == 2 || bkr_resp3(ctx)) RedisModule_ReplyWithSimpleString(ctx, names[i]);
        if (i == 4 && null_expansion) RedisModule_ReplyWithNull(ctx);
        else RedisModule_ReplyWithLongLong(ctx, vals[i]);
    }
    return REDISMODULE_OK;
}

static int rb_bf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, argv[1], rb_bf_type, REDISMODULE_READ, &key, &v)) return REDISMODULE_OK;
    if (!v) return RedisModule_ReplyWithError(ctx, "ERR not found");
    long long iter;
    if (!bkr_arg_ll(argv[2], &iter)) return RedisModule_ReplyWithError(ctx, "Second argument must be numeric");
    const rb_chain *c = v;
    RedisModule_ReplyWithArray(ctx, 2);
    if (iter == 0) {
        size_t hn = rb_chain_header_size(c);
        uint8_t *hdr = RedisModule_PoolAlloc(ctx, hn);
        rb_chain_header_write(c, hdr);
        RedisModule_ReplyWithLongLong(ctx, 1);
        return RedisModule_ReplyWithStringBuffer(ctx, (const char *)hdr, hn);
    }
    const uint8_t *p;
    size_t n;
    long long next;
    if (!rb_chain_chunk(c, iter, RB_CHUNK_MAX, &p, &n, &next)) {
        RedisModule_ReplyWithLongLong(ctx, 0);
        return RedisModule_ReplyWithStringBuffer(ctx, "", 0);
    }
    RedisModule_ReplyWithLongLong(ctx, next);
    return RedisModule_ReplyWithStringBuffer(ctx, (const char *)p, n);
}

static int rb_bf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 4) return RedisModule_WrongArity(ctx);
    long long iter;
    if (!bkr_arg_ll(argv[2], &iter)) return RedisModule_ReplyWithError(ctx, "ERR Second argument must be numeric");
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, argv[1], rb_bf_type, REDISMODULE_READ | REDISMODULE_WRITE, &key, &v)) return REDISMODULE_OK;
    size_t n;
    const uint8_t *p = (const uint8_t *)RedisModule_StringPtrLen(argv[3], &n);
    if (!v) {
        if (iter != 1)
            return bkr_reply_error_why(ctx, "ERR received bad data",
                                       "no restore in progress for this key: the header chunk, iterator 1, comes first");
        const char *err;
        rb_chain *c = rb_chain_from_header(p, n, bkr_cfg.max_filter_bytes, &err);
        if (!c) {
            if (!err) return bkr_reply_status(ctx, BK_ENOMEM);
            return bkr_reply_error_why(ctx, "ERR received bad data", "%s", err);
        }
        atomic_fetch_add(&rb_live, 1);
        RedisModule_ModuleTypeSetValue(key, rb_bf_type, c);
    } else {
        if (iter == 1)
            return bkr_reply_error_why(ctx, "ERR received bad data",
                                       "the key already holds a filter: a restore starts on an empty key");
        const char *err = rb_chain_load_chunk(v, iter, p, n);
        if (err) return RedisModule_ReplyWithError(ctx, err);
    }
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* ---- CF.* on MBbloomCF keys ---- */

/* A new cuckoo filter in the empty key `name` (replying the error and returning false when it cannot be
 * made), replicated as its SCANDUMP header. */
static bool cf_make(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleKey *key, long long capacity,
                    long long bucket_size, long long max_iterations, long long expansion)
{
    rb_add_result why;
    rb_cuckoo *cf = rb_cuckoo_new((uint64_t)capacity, (uint16_t)bucket_size, (uint16_t)max_iterations,
                                  (uint16_t)expansion, bkr_cfg.max_filter_bytes, &why);
    if (!cf) {
        reply_create_error(ctx, why);
        return false;
    }
    atomic_fetch_add(&rb_live, 1);
    RedisModule_ModuleTypeSetValue(key, rb_cf_type, cf);
    uint8_t hdr[RB_CF_HEADER_SIZE];
    rb_cuckoo_header_write(cf, hdr);
    RedisModule_Replicate(ctx, "CF.LOADCHUNK", "slb", name, 1LL, (const char *)hdr, sizeof hdr);
    return true;
}

#define RB_CF_DEFAULT_BUCKETSIZE 2
#define RB_CF_DEFAULT_MAX_ITERATIONS 20
#define RB_CF_DEFAULT_EXPANSION 1

/* capacity > 0: make the key with it when it is missing (the RedisBloom layout mode); 0: "not found". */
static int cf_insert_items(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleString **items, int n,
                           bool nx, bool multi, long long capacity)
{
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, name, rb_cf_type, REDISMODULE_READ | REDISMODULE_WRITE, &key, &v)) return REDISMODULE_OK;
    bool made = false;
    if (!v) {
        if (capacity <= 0) return RedisModule_ReplyWithError(ctx, "ERR not found");
        if (!cf_make(ctx, name, key, capacity, RB_CF_DEFAULT_BUCKETSIZE, RB_CF_DEFAULT_MAX_ITERATIONS,
                     RB_CF_DEFAULT_EXPANSION))
            return REDISMODULE_OK;
        v = RedisModule_ModuleTypeGetValue(key);
        made = true;
    }
    rb_cuckoo *cf = v;
    if ((long long)cf->ntables >= bkr_cfg.cf_max_expansions) {
        if (made) RedisModule_ReplicateVerbatim(ctx); /* the key was made */
        return bkr_reply_error_why(ctx, "Maximum expansions reached", "the filter has %u tables, CF_MAX_EXPANSIONS is %lld",
                                   (unsigned)cf->ntables, bkr_cfg.cf_max_expansions);
    }
    bool bools = multi ? !nx && bkr_resp3(ctx) : true;
    /* RedisBloom's policy (no limit on copies) unless CF_MAX_COPIES sets one, as for bloomkit's keys. */
    uint64_t copy_limit = (uint64_t)bkr_cfg.cf_max_copies;
    bool changed = made;
    if (multi) RedisModule_ReplyWithArray(ctx, n);
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *p = RedisModule_StringPtrLen(items[i], &len);
        if (copy_limit && !nx && rb_cuckoo_count(cf, p, len) >= copy_limit) {
            RedisModuleString *m = RedisModule_CreateStringPrintf(
                ctx, "ERR item copy limit reached: at most %llu copies of one item (the module argument "
                     "CF_MAX_COPIES; CF.COUNT counts them, CF.DEL removes one)", (unsigned long long)copy_limit);
            RedisModule_ReplyWithError(ctx, RedisModule_StringPtrLen(m, NULL));
            if (!multi) break;
            continue;
        }
        rb_add_result r = rb_cuckoo_add(cf, p, len, nx, bkr_cfg.max_filter_bytes);
        if (r == RB_ADDED || r == RB_PRESENT) {
            changed |= r == RB_ADDED;
            if (bools) RedisModule_ReplyWithBool(ctx, r == RB_ADDED);
            else RedisModule_ReplyWithLongLong(ctx, r == RB_ADDED);
        } else if (!multi) {
            if (changed) RedisModule_ReplicateVerbatim(ctx);
            if (r == RB_FULL) return bkr_reply_error_why(ctx, "Filter is full", "EXPANSION is 0, so it cannot grow");
            if (r == RB_TOOBIG) return reply_too_big(ctx);
            return bkr_reply_status(ctx, BK_ENOMEM);
        } else if (r == RB_NOMEM) {
            bkr_reply_status(ctx, BK_ENOMEM);
        } else if (bools) {
            RedisModule_ReplyWithBool(ctx, 0);
        } else {
            RedisModule_ReplyWithLongLong(ctx, -1);
        }
    }
    if (changed) RedisModule_ReplicateVerbatim(ctx);
    return REDISMODULE_OK;
}

static int rb_cf_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3) return RedisModule_WrongArity(ctx);
    return cf_insert_items(ctx, argv[1], argv + 2, 1, bkr_arg_is(argv[0], "CF.ADDNX"), false,
                           bkr_cfg.rb_layout ? bkr_cfg.cf_initial_size : 0);
}

static int rb_cf_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 4) return RedisModule_WrongArity(ctx);
    int items = -1;
    long long capacity = bkr_cfg.cf_initial_size;
    bool nocreate = false;
    for (int i = 2; i < argc && items < 0; i++) {
        if (rb_opt_is(argv[i], "ITEMS")) {
            items = i + 1;
        } else if (rb_opt_is(argv[i], "CAPACITY")) {
            if (++i == argc) return RedisModule_WrongArity(ctx);
            if (!bkr_arg_ll(argv[i], &capacity)) return RedisModule_ReplyWithError(ctx, "Bad capacity");
            if (bkr_cfg.rb_layout && 2 * RB_CF_DEFAULT_BUCKETSIZE > capacity)
                return RedisModule_ReplyWithError(ctx, "Capacity must be at least (BucketSize * 2)");
        } else if (bkr_cfg.rb_layout ? (RedisModule_StringPtrLen(argv[i], NULL)[0] | 0x20) == 'n'
                                     : bkr_arg_is(argv[i], "NOCREATE")) {
            nocreate = true; /* RedisBloom: any word starting with N */
        } else {
            return RedisModule_ReplyWithError(ctx, "Unknown argument received");
        }
    }
    if (items < 0 || items >= argc) return RedisModule_WrongArity(ctx);
    return cf_insert_items(ctx, argv[1], argv + items, argc - items, bkr_arg_is(argv[0], "CF.INSERTNX"), true,
                           bkr_cfg.rb_layout && !nocreate ? capacity : 0);
}

/* CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e], read as RedisBloom 2.4 reads it
 * (options found anywhere). Reached for a RedisBloom key and, in the RedisBloom layout mode, for an empty
 * key. */
static int rb_cf_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3 || argc % 2 == 0) return RedisModule_WrongArity(ctx);
    long long capacity, max_iterations = RB_CF_DEFAULT_MAX_ITERATIONS, bucket_size = RB_CF_DEFAULT_BUCKETSIZE,
                        expansion = RB_CF_DEFAULT_EXPANSION;
    if (!bkr_arg_ll(argv[2], &capacity)) return RedisModule_ReplyWithError(ctx, "Bad capacity");
    int at = rb_arg_index("MAXITERATIONS", argv, argc);
    if (at >= 0) {
        if (at + 1 >= argc || !bkr_arg_ll(argv[at + 1], &max_iterations))
            return RedisModule_ReplyWithError(ctx, "Couldn't parse MAXITERATIONS");
        if (max_iterations <= 0 || max_iterations > 65535)
            return RedisModule_ReplyWithError(ctx, "MAXITERATIONS: value must be an integer between 1 and 65535, "
                                                   "inclusive.");
    }
    at = rb_arg_index("BUCKETSIZE", argv, argc);
    if (at >= 0) {
        if (at + 1 >= argc || !bkr_arg_ll(argv[at + 1], &bucket_size))
            return RedisModule_ReplyWithError(ctx, "Couldn't parse BUCKETSIZE");
        if (bucket_size <= 0 || bucket_size > 255)
            return RedisModule_ReplyWithError(ctx, "BUCKETSIZE: value must be an integer between 1 and 255, "
                                                   "inclusive.");
    }
    at = rb_arg_index("EXPANSION", argv, argc);
    if (at >= 0) {
        if (at + 1 >= argc || !bkr_arg_ll(argv[at + 1], &expansion))
            return RedisModule_ReplyWithError(ctx, "Couldn't parse EXPANSION");
        if (expansion < 0 || expansion > 32768)
            return RedisModule_ReplyWithError(ctx, "EXPANSION: value must be an integer between 0 and 32768, "
                                                   "inclusive.");
    }
    if (bucket_size * 2 > capacity) return RedisModule_ReplyWithError(ctx, "Capacity must be at least (BucketSize * 2)");
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, argv[1], rb_cf_type, REDISMODULE_READ | REDISMODULE_WRITE, &key, &v)) return REDISMODULE_OK;
    if (v) return RedisModule_ReplyWithError(ctx, "ERR item exists");
    if (!cf_make(ctx, argv[1], key, capacity, bucket_size, max_iterations, expansion))
        return REDISMODULE_OK; /* (replicated as the header) */
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

static int rb_cf_check(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    bool multi = bkr_arg_is(argv[0], "CF.MEXISTS"), count = bkr_arg_is(argv[0], "CF.COUNT");
    if (multi ? argc < 3 : argc != 3) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, argv[1], rb_cf_type, REDISMODULE_READ, &key, &v)) return REDISMODULE_OK;
    if (multi) RedisModule_ReplyWithArray(ctx, argc - 2);
    for (int i = 2; i < argc; i++) {
        size_t len;
        const char *p = RedisModule_StringPtrLen(argv[i], &len);
        if (count) RedisModule_ReplyWithLongLong(ctx, v ? (long long)rb_cuckoo_count(v, p, len) : 0);
        else RedisModule_ReplyWithBool(ctx, v && rb_cuckoo_contains(v, p, len));
    }
    return REDISMODULE_OK;
}

static int rb_cf_del(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, argv[1], rb_cf_type, REDISMODULE_READ | REDISMODULE_WRITE, &key, &v)) return REDISMODULE_OK;
    if (!v) return RedisModule_ReplyWithError(ctx, "Not found");
    size_t len;
    const char *p = RedisModule_StringPtrLen(argv[2], &len);
    bool ok = rb_cuckoo_remove(v, p, len);
    if (ok) RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithBool(ctx, ok);
}

static int rb_cf_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 2) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, argv[1], rb_cf_type, REDISMODULE_READ, &key, &v)) return REDISMODULE_OK;
    if (!v) return RedisModule_ReplyWithError(ctx, "ERR not found");
    const rb_cuckoo *cf = v;
    const char *names[] = { "Size", "Number of buckets", "Number of filters", "Number of items inserted",
                            "Number of items deleted", "Bucket size", "Expansion rate", "Max iterations" };
    long long vals[] = { (long long)rb_cuckoo_info_size(cf), (long long)cf->nbuckets, cf->ntables,
                         (long long)cf->items, (long long)cf->deletes, cf->bucket_size, cf->expansion,
                         cf->max_iterations };
    RedisModule_ReplyWithMap(ctx, 8);
    for (int i = 0; i < 8; i++) {
        RedisModule_ReplyWithSimpleString(ctx, names[i]);
        RedisModule_ReplyWithLongLong(ctx, vals[i]);
    }
    return REDISMODULE_OK;
}

static int rb_cf_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3) return RedisModule_WrongArity(ctx);
    long long iter;
    if (!bkr_arg_ll(argv[2], &iter) || iter < 0) return RedisModule_ReplyWithError(ctx, "Invalid position");
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, argv[1], rb_cf_type, REDISMODULE_READ, &key, &v)) return REDISMODULE_OK;
    if (!v) return RedisModule_ReplyWithError(ctx, "ERR not found");
    const rb_cuckoo *cf = v;
    RedisModule_ReplyWithArray(ctx, 2);
    if (iter == 0) {
        /* also for an empty filter (RedisBloom dumps nothing then, losing its parameters) */
        uint8_t hdr[RB_CF_HEADER_SIZE];
        rb_cuckoo_header_write(cf, hdr);
        RedisModule_ReplyWithLongLong(ctx, 1);
        return RedisModule_ReplyWithStringBuffer(ctx, (const char *)hdr, sizeof hdr);
    }
    const uint8_t *p;
    size_t n;
    long long next;
    if (!rb_cuckoo_chunk(cf, iter, RB_CHUNK_MAX, &p, &n, &next)) {
        RedisModule_ReplyWithLongLong(ctx, 0);
        return RedisModule_ReplyWithNull(ctx);
    }
    RedisModule_ReplyWithLongLong(ctx, next);
    return RedisModule_ReplyWithStringBuffer(ctx, (const char *)p, n);
}

static int rb_cf_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 4) return RedisModule_WrongArity(ctx);
    long long iter;
    if (!bkr_arg_ll(argv[2], &iter) || iter == 0) return RedisModule_ReplyWithError(ctx, "Invalid position");
    RedisModuleKey *key;
    void *v;
    if (!open_rb(ctx, argv[1], rb_cf_type, REDISMODULE_READ | REDISMODULE_WRITE, &key, &v)) return REDISMODULE_OK;
    size_t n;
    const uint8_t *p = (const uint8_t *)RedisModule_StringPtrLen(argv[3], &n);
    if (!v) {
        if (iter != 1)
            return bkr_reply_error_why(ctx, "Couldn't load chunk!",
                                       "no restore in progress for this key: the header chunk, iterator 1, comes first");
        const char *err;
        rb_cuckoo *cf = rb_cuckoo_from_header(p, n, bkr_cfg.max_filter_bytes, &err);
        if (!cf) {
            if (!err) return bkr_reply_status(ctx, BK_ENOMEM);
            return bkr_reply_error_why(ctx, n != RB_CF_HEADER_SIZE ? "Invalid header" : "Couldn't create filter!", "%s",
                                       err);
        }
        atomic_fetch_add(&rb_live, 1);
        RedisModule_ModuleTypeSetValue(key, rb_cf_type, cf);
    } else {
        if (iter == 1)
            return bkr_reply_error_why(ctx, "Couldn't load chunk!",
                                       "the key already holds a filter: a restore starts on an empty key");
        const char *err = rb_cuckoo_load_chunk(v, iter, p, n);
        if (err) return bkr_reply_error_why(ctx, "Couldn't load chunk!", "%s", err);
    }
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* ---- the router ---- */

typedef struct rb_route {
    const char *name;
    RedisModuleCmdFunc rb;
    bool cf;       /* the command's key is a cuckoo key */
    bool chunk;    /* LOADCHUNK: iterator 1 on an empty key starts a RedisBloom restore */
    bool creates;  /* makes a missing key: in the RedisBloom layout mode, an empty key comes here */
    RedisModuleCmdFunc orig; /* the bloomkit command */
} rb_route;

static rb_route routes[] = {
    { "bf.reserve", rb_bf_reserve, false, false, true, NULL },
    { "bf.add", rb_bf_add, false, false, true, NULL },
    { "bf.madd", rb_bf_madd, false, false, true, NULL },
    { "bf.insert", rb_bf_insert, false, false, true, NULL },
    { "bf.exists", rb_bf_exists, false, false, false, NULL },
    { "bf.mexists", rb_bf_exists, false, false, false, NULL },
    { "bf.info", rb_bf_info, false, false, false, NULL },
    { "bf.card", rb_bf_info, false, false, false, NULL },
    { "bf.scandump", rb_bf_scandump, false, false, false, NULL },
    { "bf.loadchunk", rb_bf_loadchunk, false, true, false, NULL },
    { "cf.reserve", rb_cf_reserve, true, false, true, NULL },
    { "cf.add", rb_cf_add, true, false, true, NULL },
    { "cf.addnx", rb_cf_add, true, false, true, NULL },
    { "cf.insert", rb_cf_insert, true, false, true, NULL },
    { "cf.insertnx", rb_cf_insert, true, false, true, NULL },
    { "cf.exists", rb_cf_check, true, false, false, NULL },
    { "cf.mexists", rb_cf_check, true, false, false, NULL },
    { "cf.count", rb_cf_check, true, false, false, NULL },
    { "cf.del", rb_cf_del, true, false, false, NULL },
    { "cf.info", rb_cf_info, true, false, false, NULL },
    { "cf.scandump", rb_cf_scandump, true, false, false, NULL },
    { "cf.loadchunk", rb_cf_loadchunk, true, true, false, NULL },
};
#define RB_NROUTES (sizeof routes / sizeof routes[0])

static bool routes_here(RedisModuleCtx *ctx, const rb_route *r, RedisModuleString **argv, int argc)
{
    if (argc < 2) return false;
    bool chunk_start = false;
    if (r->chunk && argc == 4) {
        long long iter;
        chunk_start = bkr_arg_ll(argv[2], &iter) && iter == 1;
    }
    bool make_here = bkr_cfg.rb_layout && r->creates;
    if (!chunk_start && !make_here && atomic_load(&rb_live) == 0) return false;
    RedisModuleKey *k = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ);
    int t = RedisModule_KeyType(k);
    bool here = (t == REDISMODULE_KEYTYPE_EMPTY && (chunk_start || make_here)) ||
                (t == REDISMODULE_KEYTYPE_MODULE &&
                 RedisModule_ModuleTypeGetType(k) == (r->cf ? rb_cf_type : rb_bf_type));
    if (k && RedisModule_CloseKey) RedisModule_CloseKey(k);
    return here;
}

static int route(size_t i, RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    const rb_route *r = &routes[i];
    if (!routes_here(ctx, r, argv, argc)) return r->orig(ctx, argv, argc);
    RedisModule_AutoMemory(ctx);
    bkr_guard_begin(ctx);
    int rc = r->rb(ctx, argv, argc);
    bkr_guard_end();
    return rc;
}

#define RB_ROUTE_FN(i) \
    static int route_##i(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) { return route(i, ctx, argv, argc); }
RB_ROUTE_FN(0) RB_ROUTE_FN(1) RB_ROUTE_FN(2) RB_ROUTE_FN(3) RB_ROUTE_FN(4) RB_ROUTE_FN(5) RB_ROUTE_FN(6)
RB_ROUTE_FN(7) RB_ROUTE_FN(8) RB_ROUTE_FN(9) RB_ROUTE_FN(10) RB_ROUTE_FN(11) RB_ROUTE_FN(12) RB_ROUTE_FN(13)
RB_ROUTE_FN(14) RB_ROUTE_FN(15) RB_ROUTE_FN(16) RB_ROUTE_FN(17) RB_ROUTE_FN(18) RB_ROUTE_FN(19) RB_ROUTE_FN(20)
RB_ROUTE_FN(21)

static const RedisModuleCmdFunc route_fns[] = {
    route_0, route_1, route_2, route_3, route_4, route_5, route_6, route_7, route_8, route_9, route_10,
    route_11, route_12, route_13, route_14, route_15, route_16, route_17, route_18, route_19, route_20, route_21,
};
_Static_assert(sizeof route_fns / sizeof route_fns[0] == RB_NROUTES, "one router per route");

RedisModuleCmdFunc bkr_rb_hook(const char *name, RedisModuleCmdFunc fn)
{
    for (size_t i = 0; i < RB_NROUTES; i++)
        if (strcmp(routes[i].name, name) == 0) {
            routes[i].orig = fn;
            return route_fns[i];
        }
    return fn;
}
