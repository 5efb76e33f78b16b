/*
 * CMS.*: the count-min sketch (include/bloomkit/cms.h), with RedisBloom 2.4's commands and replies,
 * and what both sketch families share (sketch.h): the four data types and their persistence, and
 * BK.SKETCH.LOAD (the AOF rewrite's form).
 *
 *   CMS.INITBYDIM key width depth            -> OK
 *   CMS.INITBYPROB key error probability     -> OK  (width ceil(2 / error), depth from the probability
 *                                                    as RedisBloom computes it)
 *   CMS.INCRBY key item increment [item increment ...]  -> per item its estimate after the increment,
 *                                                    or the error "CMS: INCRBY overflow" when saturated
 *   CMS.QUERY key item [item ...]            -> per item its estimate
 *   CMS.MERGE dest numkeys src [src ...] [WEIGHTS w [w ...]]  -> OK
 *   CMS.INFO key                             -> width, depth, count
 */
#include <limits.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "sketch.h"

RedisModuleType *bkr_sk_type[4];

#define CMS_ERR(ctx, msg) RedisModule_ReplyWithError((ctx), (msg))

int bkr_sk_open(RedisModuleCtx *ctx, RedisModuleString *name, int mode, RedisModuleKey **key, void **obj)
{
    *key = RedisModule_OpenKey(ctx, name, mode);
    int t = RedisModule_KeyType(*key);
    if (t == REDISMODULE_KEYTYPE_EMPTY) return -1;
    if (t != REDISMODULE_KEYTYPE_MODULE) return -2;
    RedisModuleType *mt = RedisModule_ModuleTypeGetType(*key);
    for (int i = 0; i < 4; i++)
        if (mt == bkr_sk_type[i]) {
            *obj = RedisModule_ModuleTypeGetValue(*key);
            return i;
        }
    return -2;
}

bool bkr_sk_open_family(RedisModuleCtx *ctx, RedisModuleString *name, int mode, int bk_kind, int rb_kind,
                        const char *missing, void **bk, void **rb)
{
    RedisModuleKey *key;
    void *obj = NULL;
    int sk = bkr_sk_open(ctx, name, mode, &key, &obj);
    *bk = sk == bk_kind ? obj : NULL;
    *rb = sk == rb_kind ? obj : NULL;
    if (sk == -1) RedisModule_ReplyWithError(ctx, missing);
    else if (!*bk && !*rb) bkr_reply_wrongtype(ctx);
    return *bk || *rb;
}

void bkr_sk_reply_item(RedisModuleCtx *ctx, const void *p, size_t n)
{
    if (memchr(p, '\r', n) || memchr(p, '\n', n)) {
        RedisModule_ReplyWithStringBuffer(ctx, p, n);
        return;
    }
    /* ReplyWithSimpleString takes a C string: copy when the item is not NUL-terminated in place */
    char buf[256];
    char *s = n < sizeof buf ? buf : RedisModule_Alloc(n + 1);
    memcpy(s, p, n);
    s[n] = 0;
    if (strlen(s) != n) RedisModule_ReplyWithStringBuffer(ctx, p, n); /* a NUL inside: binary item */
    else RedisModule_ReplyWithSimpleString(ctx, s);
    if (s != buf) RedisModule_Free(s);
}

/* ---- persistence of the bloomkit sketches: the saved form ---- */

/* The saved form of a typed sketch in a new RedisModule_Alloc buffer. */
static bk_status sk_save(bk_type type, void *obj, uint8_t **buf, size_t *len)
{
    bk_filter *h = NULL;
    bk_status s = bk_filter_wrap(type, obj, &h);
    if (s != BK_OK) return s;
    s = bkr_save_alloc(h, buf, len);
    void *back;
    bk_filter_unwrap(h, type, &back);
    return s;
}

/* A typed sketch of `type` from a saved form; NULL when it is not one. */
static void *sk_load(bk_type type, const void *p, size_t n, bk_status *st)
{
    bk_filter *h = NULL;
    bk_status s = bk_filter_load_buffer(p, n, BK_LOAD_DEFAULT, &h);
    void *obj = NULL;
    if (s == BK_OK && bk_filter_unwrap(h, type, &obj) != BK_OK) {
        bk_filter_free(h);
        s = BK_ETYPE;
    }
    if (st) *st = s;
    return s == BK_OK ? obj : NULL;
}

static void *sk_rdb_load(RedisModuleIO *io, int encver, bk_type type)
{
    if (encver != 1) return NULL;
    size_t n = 0;
    char *p = RedisModule_LoadStringBuffer(io, &n);
    if (RedisModule_IsIOError(io) || !p) {
        if (p) RedisModule_Free(p);
        return NULL;
    }
    bk_status s;
    void *obj = sk_load(type, p, n, &s);
    RedisModule_Free(p);
    if (!obj) RedisModule_LogIOError(io, "warning", "bloomkit: a %s value is damaged (%s); not loaded", bk_type_name(type), bk_strerror(s));
    return obj;
}
static void *cms_rdb_load(RedisModuleIO *io, int encver) { return sk_rdb_load(io, encver, BK_TYPE_CMS); }
static void *topk_rdb_load(RedisModuleIO *io, int encver) { return sk_rdb_load(io, encver, BK_TYPE_TOPK); }

static void sk_rdb_save(RedisModuleIO *io, void *obj, bk_type type)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (sk_save(type, obj, &buf, &len) != BK_OK) {
        RedisModule_LogIOError(io, "warning", "bloomkit: out of memory saving a %s value", bk_type_name(type));
        RedisModule_SaveStringBuffer(io, "", 0); /* refused by the loader, rather than a short RDB */
        return;
    }
    RedisModule_SaveStringBuffer(io, (const char *)buf, len);
    RedisModule_Free(buf);
}
static void cms_rdb_save(RedisModuleIO *io, void *obj) { sk_rdb_save(io, obj, BK_TYPE_CMS); }
static void topk_rdb_save(RedisModuleIO *io, void *obj) { sk_rdb_save(io, obj, BK_TYPE_TOPK); }

static void sk_aof(RedisModuleIO *aof, RedisModuleString *key, void *obj, bk_type type)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (sk_save(type, obj, &buf, &len) != BK_OK) {
        RedisModule_LogIOError(aof, "warning", "bloomkit: out of memory rewriting a %s value", bk_type_name(type));
        return;
    }
    RedisModule_EmitAOF(aof, "BK.SKETCH.LOAD", "scb", key, "BLOOMKIT", (const char *)buf, len);
    RedisModule_Free(buf);
}
static void cms_aof(RedisModuleIO *aof, RedisModuleString *key, void *obj) { sk_aof(aof, key, obj, BK_TYPE_CMS); }
static void topk_aof(RedisModuleIO *aof, RedisModuleString *key, void *obj) { sk_aof(aof, key, obj, BK_TYPE_TOPK); }

static void rb_aof(RedisModuleIO *aof, RedisModuleString *key, void *obj, char kind)
{
    size_t len = 0;
    void *b = rb_sketch_blob(obj, kind, &len);
    if (!b) {
        RedisModule_LogIOError(aof, "warning", "bloomkit: out of memory rewriting a RedisBloom sketch");
        return;
    }
    RedisModule_EmitAOF(aof, "BK.SKETCH.LOAD", "scb", key, "REDISBLOOM", (const char *)b, len);
    RedisModule_Free(b);
}
static void rbcms_aof(RedisModuleIO *aof, RedisModuleString *key, void *obj) { rb_aof(aof, key, obj, 'C'); }
static void rbtopk_aof(RedisModuleIO *aof, RedisModuleString *key, void *obj) { rb_aof(aof, key, obj, 'T'); }

static void cms_free(void *obj) { bk_cms_free(obj); }
static void topk_free(void *obj) { bk_topk_free(obj); }
static void rbcms_free(void *obj) { rb_cms_free(obj); }
static void rbtopk_free(void *obj) { rb_topk_free(obj); }

/* What Redis's MEMORY USAGE and maxmemory accounting see: the object, its arrays (and the keys' copies). */
static size_t cms_mem(const void *obj)
{
    return 64 + (size_t)bk_cms_bytes(bk_cms_width(obj), bk_cms_depth(obj));
}
static size_t topk_mem(const void *obj) { return (size_t)bk_topk_memory(obj); }
static size_t rbcms_mem(const void *obj) { return rb_cms_memory(obj); }
static size_t rbtopk_mem(const void *obj) { return rb_topk_memory(obj); }

static void *rbcms_load(RedisModuleIO *io, int encver) { return rb_cms_rdb_load(io, encver); }
static void *rbtopk_load(RedisModuleIO *io, int encver) { return rb_topk_rdb_load(io, encver); }
static void rbcms_save(RedisModuleIO *io, void *obj) { rb_cms_rdb_save(io, obj); }
static void rbtopk_save(RedisModuleIO *io, void *obj) { rb_topk_rdb_save(io, obj); }

static void *cms_copy(RedisModuleString *from, RedisModuleString *to, const void *obj)
{
    (void)from, (void)to;
    bk_cms *c = NULL;
    return bk_cms_clone(obj, &c) == BK_OK ? c : NULL;
}
static void *topk_copy(RedisModuleString *from, RedisModuleString *to, const void *obj)
{
    (void)from, (void)to;
    bk_topk *c = NULL;
    return bk_topk_clone(obj, &c) == BK_OK ? c : NULL;
}
static void *rb_copy(const void *obj, char kind)
{
    size_t len = 0;
    void *b = rb_sketch_blob(obj, kind, &len);
    if (!b) return NULL;
    char k2;
    void *c = rb_sketch_from_blob(b, len, &k2);
    RedisModule_Free(b);
    return c;
}
static void *rbcms_copy(RedisModuleString *f, RedisModuleString *t, const void *obj) { (void)f, (void)t; return rb_copy(obj, 'C'); }
static void *rbtopk_copy(RedisModuleString *f, RedisModuleString *t, const void *obj) { (void)f, (void)t; return rb_copy(obj, 'T'); }

int bkr_sk_types_register(RedisModuleCtx *ctx)
{
    /* bloomkit's own (encoding 1: the saved form), and RedisBloom 2.x's names and encoding 0 */
    bkr_sk_type[0] = bkr_create_type(ctx, "bloomkitS", 1, cms_rdb_load, cms_rdb_save, cms_aof, cms_mem, cms_free, NULL,
                                     cms_copy);
    bkr_sk_type[1] = bkr_create_type(ctx, "bloomkitK", 1, topk_rdb_load, topk_rdb_save, topk_aof, topk_mem, topk_free,
                                     NULL, topk_copy);
    bkr_sk_type[2] = bkr_create_type(ctx, "CMSk-TYPE", 0, rbcms_load, rbcms_save, rbcms_aof, rbcms_mem, rbcms_free, NULL,
                                     rbcms_copy);
    bkr_sk_type[3] = bkr_create_type(ctx, "TopK-TYPE", 0, rbtopk_load, rbtopk_save, rbtopk_aof, rbtopk_mem, rbtopk_free,
                                     NULL, rbtopk_copy);
    for (int i = 0; i < 4; i++)
        if (!bkr_sk_type[i]) return REDISMODULE_ERR;
    return REDISMODULE_OK;
}

/* ---- BK.SKETCH.LOAD key BLOOMKIT|REDISBLOOM form: make (or replace) the key from a saved form ---- */

static int Sketch_Load_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 4) return RedisModule_WrongArity(ctx);
    size_t n;
    const char *p = RedisModule_StringPtrLen(argv[3], &n);
    RedisModuleKey *key;
    void *old = NULL;
    int cur = bkr_sk_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &old);
    if (cur == -2) return bkr_reply_wrongtype(ctx);
    int sk;
    void *obj = NULL;
    if (bkr_arg_is(argv[2], "BLOOMKIT")) {
        bk_status s;
        obj = sk_load(BK_TYPE_CMS, p, n, &s);
        sk = BKR_SK_CMS;
        if (!obj && s == BK_ETYPE) {
            obj = sk_load(BK_TYPE_TOPK, p, n, &s);
            sk = BKR_SK_TOPK;
        }
        if (!obj) return s == BK_ENOMEM ? bkr_reply_status(ctx, s) : CMS_ERR(ctx, "ERR the saved form is not a valid sketch");
    } else if (bkr_arg_is(argv[2], "REDISBLOOM")) {
        char kind;
        obj = rb_sketch_from_blob(p, n, &kind);
        if (!obj) return CMS_ERR(ctx, "ERR the form is not a valid RedisBloom sketch");
        sk = kind == 'C' ? BKR_SK_RB_CMS : BKR_SK_RB_TOPK;
    } else {
        return CMS_ERR(ctx, "ERR the form must be BLOOMKIT or REDISBLOOM");
    }
    RedisModule_ModuleTypeSetValue(key, bkr_sk_type[sk], obj);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}
BKR_GUARDED(Sketch_Load)

/* ---- CMS commands ---- */

typedef struct cms_ref {
    bk_cms *bk;
    rb_cms *rb;
} cms_ref;

/* Open a CMS key; replies and returns false when it is missing or of another type. */
static bool open_cms(RedisModuleCtx *ctx, RedisModuleString *name, int mode, cms_ref *r)
{
    void *bk, *rb;
    bool ok = bkr_sk_open_family(ctx, name, mode, BKR_SK_CMS, BKR_SK_RB_CMS, "CMS: key does not exist", &bk, &rb);
    r->bk = bk;
    r->rb = rb;
    return ok;
}

static uint64_t ref_width(const cms_ref *r) { return r->bk ? bk_cms_width(r->bk) : r->rb->width; }
static uint64_t ref_depth(const cms_ref *r) { return r->bk ? bk_cms_depth(r->bk) : r->rb->depth; }

static int Cms_Create_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 4) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    void *obj;
    if (bkr_sk_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &obj) != -1)
        return CMS_ERR(ctx, "CMS: key already exists");
    long long width = 0, depth = 0;
    if (bkr_arg_is(argv[0], "cms.initbydim")) {
        if (!bkr_arg_ll(argv[2], &width) || width < 1) return CMS_ERR(ctx, "CMS: invalid width");
        if (!bkr_arg_ll(argv[3], &depth) || depth < 1) return CMS_ERR(ctx, "CMS: invalid depth");
    } else {
        double error, prob;
        if (!bkr_arg_double(argv[2], &error) || error <= 0 || error >= 1)
            return CMS_ERR(ctx, "CMS: invalid overestimation value");
        if (!bkr_arg_double(argv[3], &prob) || prob <= 0 || prob >= 1) return CMS_ERR(ctx, "CMS: invalid prob value");
        /* RedisBloom's sizing, to the float precision it computes the depth in (so that the same
         * arguments give the same dimensions, CMS.INFO and all) */
        double w = ceil(2 / error);
        double d = ceil(log10f((float)prob) / log10f(0.5f));
        width = w >= 9.2e18 ? -1 : (long long)w;
        depth = (long long)d;
    }
    if (width < 1 || depth < 1 || width > LLONG_MAX / depth) return CMS_ERR(ctx, "CMS: invalid init arguments");
    if (depth > (long long)BK_CMS_MAX_DEPTH) return CMS_ERR(ctx, "CMS: invalid depth");
    uint64_t bytes = bk_cms_bytes((uint64_t)width, (uint32_t)depth);
    if (!bytes || bytes > bkr_cfg.max_filter_bytes || bytes > BKR_SK_MAX_BYTES) return bkr_reply_status(ctx, BK_ETOOBIG);
    bk_cms *c = NULL;
    bk_status s = bk_cms_new((uint64_t)width, (uint32_t)depth, NULL, &c);
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    RedisModule_ModuleTypeSetValue(key, bkr_sk_type[BKR_SK_CMS], c);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}
BKR_GUARDED(Cms_Create)

static int Cms_IncrBy(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 4 || argc % 2) return RedisModule_WrongArity(ctx);
    cms_ref r;
    if (!open_cms(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &r)) return REDISMODULE_OK;
    int pairs = (argc - 2) / 2;
    /* every increment is checked before any is applied */
    for (int i = 0; i < pairs; i++) {
        long long v;
        if (!bkr_arg_ll(argv[3 + 2 * i], &v)) return CMS_ERR(ctx, "CMS: Cannot parse number");
        if (v < 0) return CMS_ERR(ctx, "CMS: Number cannot be negative");
    }
    RedisModule_ReplyWithArray(ctx, pairs);
    for (int i = 0; i < pairs; i++) {
        long long v;
        bkr_arg_ll(argv[3 + 2 * i], &v);
        uint32_t inc = v > (long long)UINT32_MAX ? UINT32_MAX : (uint32_t)v; /* saturates either way */
        size_t n;
        const char *item = RedisModule_StringPtrLen(argv[2 + 2 * i], &n);
        uint64_t est;
        if (r.bk) bk_cms_incrby(r.bk, item, n, inc, &est);
        else est = rb_cms_incrby(r.rb, item, n, inc);
        if (est >= UINT32_MAX) RedisModule_ReplyWithError(ctx, "CMS: INCRBY overflow");
        else RedisModule_ReplyWithLongLong(ctx, (long long)est);
    }
    RedisModule_ReplicateVerbatim(ctx);
    return REDISMODULE_OK;
}

static int Cms_Query(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 3) return RedisModule_WrongArity(ctx);
    cms_ref r;
    if (!open_cms(ctx, argv[1], REDISMODULE_READ, &r)) return REDISMODULE_OK;
    RedisModule_ReplyWithArray(ctx, argc - 2);
    for (int i = 2; i < argc; i++) {
        size_t n;
        const char *item = RedisModule_StringPtrLen(argv[i], &n);
        uint64_t est = r.bk ? bk_cms_query(r.bk, item, n) : rb_cms_query(r.rb, item, n);
        RedisModule_ReplyWithLongLong(ctx, (long long)est);
    }
    return REDISMODULE_OK;
}

static int Cms_Merge(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 4) return RedisModule_WrongArity(ctx);
    cms_ref dst;
    if (!open_cms(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &dst)) return REDISMODULE_OK;
    long long nkeys;
    if (!bkr_arg_ll(argv[2], &nkeys)) return CMS_ERR(ctx, "CMS: invalid numkeys");
    if (nkeys <= 0) return CMS_ERR(ctx, "CMS: Number of keys must be positive");
    RedisModuleString **rest = argv + 3;
    int nrest = argc - 3;
    int wpos = -1;
    for (int i = 0; i < nrest; i++)
        if (bkr_arg_is(rest[i], "WEIGHTS")) {
            wpos = i;
            break;
        }
    if (wpos < 0) {
        if (nkeys != nrest) return CMS_ERR(ctx, "CMS: wrong number of keys");
    } else if (wpos != nkeys || nrest != 1 + nkeys * 2) {
        return CMS_ERR(ctx, "CMS: wrong number of keys/weights");
    }
    long long *weights = RedisModule_PoolAlloc(ctx, (size_t)nkeys * sizeof *weights);
    cms_ref *srcs = RedisModule_PoolAlloc(ctx, (size_t)nkeys * sizeof *srcs);
    for (long long i = 0; i < nkeys; i++) {
        weights[i] = 1;
        if (wpos >= 0 && !bkr_arg_ll(rest[nkeys + 1 + i], &weights[i])) return CMS_ERR(ctx, "CMS: invalid weight value");
        if (!open_cms(ctx, rest[i], REDISMODULE_READ, &srcs[i])) return REDISMODULE_OK;
        if (ref_width(&srcs[i]) != ref_width(&dst) || ref_depth(&srcs[i]) != ref_depth(&dst) ||
            !srcs[i].bk != !dst.bk || (dst.bk && bk_cms_compatible(dst.bk, srcs[i].bk) != BK_OK))
            return CMS_ERR(ctx, "CMS: width/depth is not equal");
    }
    bool ok;
    if (dst.bk) {
        const bk_cms **s = RedisModule_PoolAlloc(ctx, (size_t)nkeys * sizeof *s);
        int64_t *w = RedisModule_PoolAlloc(ctx, (size_t)nkeys * sizeof *w);
        for (long long i = 0; i < nkeys; i++) {
            s[i] = srcs[i].bk;
            w[i] = weights[i];
        }
        ok = bk_cms_merge(dst.bk, s, w, (size_t)nkeys) == BK_OK;
    } else {
        const rb_cms **s = RedisModule_PoolAlloc(ctx, (size_t)nkeys * sizeof *s);
        for (long long i = 0; i < nkeys; i++) s[i] = srcs[i].rb;
        ok = rb_cms_merge(dst.rb, s, weights, (size_t)nkeys);
    }
    if (!ok) return CMS_ERR(ctx, "CMS: MERGE overflow");
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

static int Cms_Info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2) return RedisModule_WrongArity(ctx);
    cms_ref r;
    if (!open_cms(ctx, argv[1], REDISMODULE_READ, &r)) return REDISMODULE_OK;
    uint64_t total = r.bk ? bk_cms_total(r.bk) : r.rb->total;
    RedisModule_ReplyWithArray(ctx, 6);
    RedisModule_ReplyWithSimpleString(ctx, "width");
    RedisModule_ReplyWithLongLong(ctx, (long long)ref_width(&r));
    RedisModule_ReplyWithSimpleString(ctx, "depth");
    RedisModule_ReplyWithLongLong(ctx, (long long)ref_depth(&r));
    RedisModule_ReplyWithSimpleString(ctx, "count");
    RedisModule_ReplyWithLongLong(ctx, (long long)total);
    return REDISMODULE_OK;
}

static const bkr_command cms_commands[] = {
    { "cms.initbydim", Cms_Create, "write deny-oom", 4, BKR_KEY_CREATE,
      "Creates a count-min sketch of the given width and depth", "O(1)" },
    { "cms.initbyprob", Cms_Create, "write deny-oom", 4, BKR_KEY_CREATE,
      "Creates a count-min sketch sized for an error rate and probability", "O(1)" },
    { "cms.incrby", Cms_IncrBy, "write deny-oom", -4, BKR_KEY_WRITE,
      "Increases the counts of items, replying with their estimates", "O(n)" },
    { "cms.query", Cms_Query, "readonly fast", -3, BKR_KEY_READ, "The estimated counts of items", "O(n)" },
    /* the sources follow numkeys (and WEIGHTS may follow them): only the destination is a key spec, as
     * in RedisBloom */
    { "cms.merge", Cms_Merge, "write deny-oom", -4, BKR_KEY_WRITE,
      "Sets a sketch to the weighted sum of sketches of the same dimensions", "O(n)" },
    { "cms.info", Cms_Info, "readonly fast", 2, BKR_KEY_READ, "Width, depth and total count of a sketch",
      "O(1)" },
    { "bk.sketch.load", Sketch_Load, "write deny-oom", 4, BKR_KEY_CREATE,
      "Makes a CMS or Top-K key from a saved form (the AOF rewrite's form)", "O(n)" },
};

int bkr_cms_register(RedisModuleCtx *ctx)
{
    if (bkr_sk_types_register(ctx) != REDISMODULE_OK) return REDISMODULE_ERR;
    if (bkr_register(ctx, cms_commands, sizeof cms_commands / sizeof cms_commands[0]) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    return bkr_topk_register(ctx);
}
