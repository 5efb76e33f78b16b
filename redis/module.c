/* bloomkit.so: module load, arguments, allocator, data types, command table, shared helpers. */
#define REDISMODULE_MAIN
#include "module.h"
#include "rb_compat.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

bkr_config bkr_cfg = {
    .bf_error_rate = 0.01,
    .bf_initial_size = 100,
    .cf_max_expansions = 32,
    .cf_initial_size = 1024,
    .cf_fingerprint_bits = 8,
    .cf_max_copies = 0,
    .max_filter_bytes = (unsigned long long)4 << 30,
    .bf_tightening = BK_SCALABLE_DEFAULT_TIGHTENING,
};

RedisModuleType *bkr_type[2];

/* ---- allocator: every byte bloomkit allocates is Redis's (INFO memory, maxmemory, MEMORY USAGE) ----
 * Large blocks are requested with TryAlloc, so that a size the system cannot give is an error reply
 * (BK_ENOMEM) instead of Redis's out-of-memory abort; Alloc/Calloc, which abort, only for small ones.
 * TryAlloc does not zero, and memset would fault in every page of a large filter up front (seconds for
 * gigabytes, with the event loop blocked); instead the whole pages inside the block are handed back
 * with MADV_DONTNEED, which on private anonymous memory (what the allocator gets from mmap) makes them
 * read as zeros and be faulted in only when first used, as calloc of fresh memory would. */
#define BKR_TRY_THRESHOLD ((size_t)1 << 20)

static void zero_lazily(void *p, size_t n)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p, e = a + n;
    uintptr_t lo = (a + page - 1) & ~(page - 1), hi = e & ~(page - 1);
    if (hi <= lo || madvise((void *)lo, hi - lo, MADV_DONTNEED) != 0) {
        memset(p, 0, n);
        return;
    }
    memset(p, 0, lo - a);
    memset((void *)hi, 0, e - hi);
}

/* ---- the maxmemory guard (module.h) ---- */
static bool guard_on;     /* a client's guarded write command is running, and maxmemory is set */
static bool guard_refused; /* the guard refused a block since the command began */
static bool guard_evict;   /* maxmemory-policy may evict keys (any policy but noeviction) */

void bkr_guard_begin(RedisModuleCtx *ctx)
{
    int f = RedisModule_GetContextFlags(ctx);
    guard_on = (f & REDISMODULE_CTX_FLAGS_MAXMEMORY) &&
               !(f & (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING)) &&
               RedisModule_GetServerInfo && RedisModule_ServerInfoGetFieldUnsigned;
    guard_evict = (f & REDISMODULE_CTX_FLAGS_EVICT) != 0;
    guard_refused = false;
}

void bkr_guard_begin_restore(RedisModuleCtx *ctx)
{
    /* RESTORE (and MIGRATE's RESTORE-ASKING) is the one load a client sends: its payload, compressed in
     * the RDB encoding, may expand to far more than maxmemory allows. Server loads (startup, DEBUG
     * RELOAD, a replica's full sync: LOADING) and a replica's stream (SLAVE) are never refused, nor a
     * load with no context to ask (RedisModule_GetContextFromIO gives none outside a command). */
    guard_refused = false;
    guard_on = false;
    if (!ctx) return;
    int f = RedisModule_GetContextFlags(ctx);
    guard_on = (f & REDISMODULE_CTX_FLAGS_MAXMEMORY) &&
               !(f & (REDISMODULE_CTX_FLAGS_REPLICATED | REDISMODULE_CTX_FLAGS_LOADING | REDISMODULE_CTX_FLAGS_SLAVE)) &&
               RedisModule_GetServerInfo && RedisModule_ServerInfoGetFieldUnsigned;
}

bool bkr_guard_was_refused(void) { return guard_refused; }

void bkr_guard_end(void) { guard_on = false; }

bool bkr_guard_refuses(size_t n)
{
    if (!guard_on || n < BKR_GUARD_MIN) return false;
    RedisModuleServerInfoData *in = RedisModule_GetServerInfo(NULL, "memory");
    if (!in) return false;
    int e1 = 0, e2 = 0;
    unsigned long long used = RedisModule_ServerInfoGetFieldUnsigned(in, "used_memory", &e1);
    unsigned long long max = RedisModule_ServerInfoGetFieldUnsigned(in, "maxmemory", &e2);
    RedisModule_FreeServerInfo(NULL, in);
    if (e1 || e2 || max == 0 || used + n <= max) return false;
    /* Under an eviction policy a block that fits in maxmemory is allocated, and Redis evicts other keys to
     * get back under the limit before its next command, as for any write (RedisBloom's behaviour); what
     * could never fit, and anything under noeviction, is refused. */
    if (guard_evict && n <= max) return false;
    guard_refused = true;
    return true;
}

static _Thread_local size_t heap_held;
static void *bkr_malloc_raw(size_t size);
static void *bkr_calloc_raw(void *opaque, size_t count, size_t size);

size_t bkr_heap_now(void) { return heap_held; }

static void *counted(void *p)
{
    if (p && RedisModule_MallocSize) heap_held += RedisModule_MallocSize(p);
    return p;
}

static void *bkr_malloc(void *opaque, size_t size)
{
    (void)opaque;
    if (bkr_guard_refuses(size)) return NULL;
    return counted(bkr_malloc_raw(size));
}

static void *bkr_calloc(void *opaque, size_t count, size_t size)
{
    return counted(bkr_calloc_raw(opaque, count, size));
}

static void *bkr_malloc_raw(size_t size)
{
    if (size >= BKR_TRY_THRESHOLD && RedisModule_TryAlloc) return RedisModule_TryAlloc(size);
    return RedisModule_Alloc(size ? size : 1);
}

static void *bkr_calloc_raw(void *opaque, size_t count, size_t size)
{
    (void)opaque;
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes) || bkr_guard_refuses(bytes)) return NULL;
    if (bytes >= BKR_TRY_THRESHOLD && RedisModule_TryAlloc) {
        void *p = RedisModule_TryAlloc(bytes);
        if (p) zero_lazily(p, bytes);
        return p;
    }
    return RedisModule_Calloc(count ? count : 1, size ? size : 1);
}

static void bkr_free(void *opaque, void *p)
{
    (void)opaque;
    if (!p) return;
    if (RedisModule_MallocSize) heap_held -= RedisModule_MallocSize(p);
    RedisModule_Free(p);
}

/* ---- helpers shared by the command files ---- */

bool bkr_resp3(RedisModuleCtx *ctx)
{
    return (RedisModule_GetContextFlags(ctx) & REDISMODULE_CTX_FLAGS_RESP3) != 0;
}

int bkr_reply_wrongtype(RedisModuleCtx *ctx)
{
    return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
}

int bkr_reply_restoring(RedisModuleCtx *ctx)
{
    return RedisModule_ReplyWithError(ctx, "ERR the filter is being restored by LOADCHUNK and is not complete");
}

long long bkr_count_ll(uint64_t c) { return c > (uint64_t)INT64_MAX ? INT64_MAX : (long long)c; }

int bkr_reply_count(RedisModuleCtx *ctx, uint64_t c) { return RedisModule_ReplyWithLongLong(ctx, bkr_count_ll(c)); }

int bkr_reply_error_why(RedisModuleCtx *ctx, const char *text, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    RedisModule_Log(ctx, "verbose", "bloomkit: %s: %s", text, why);
    return RedisModule_ReplyWithError(ctx, text);
}

int bkr_reply_status(RedisModuleCtx *ctx, bk_status s)
{
    switch (s) {
    case BK_ETOOBIG: /* RedisBloom's text for a filter it cannot make */
        return bkr_reply_error_why(ctx, "ERR Insufficient memory to create filter",
                                   "filter too large: it would exceed the size limit (MAX_FILTER_SIZE %llu bytes)",
                                   bkr_cfg.max_filter_bytes);
    case BK_ENOMEM:
        if (guard_refused) /* Redis's own reply to a deny-oom command over maxmemory */
            return RedisModule_ReplyWithError(ctx, "OOM command not allowed when used memory > 'maxmemory'.");
        return RedisModule_ReplyWithError(ctx, "ERR Insufficient memory to create filter");
    case BK_EFULL:
        return RedisModule_ReplyWithError(ctx, "ERR filter is full");
    case BK_EINVAL:
        return RedisModule_ReplyWithError(ctx, "ERR invalid argument");
    case BK_ENOTSUP:
        return RedisModule_ReplyWithError(ctx, "ERR operation not supported by this filter type");
    default: {
        RedisModuleString *m = RedisModule_CreateStringPrintf(NULL, "ERR %s", bk_strerror(s));
        size_t n;
        const char *p = RedisModule_StringPtrLen(m, &n);
        RedisModule_ReplyWithError(ctx, p);
        RedisModule_FreeString(NULL, m);
        return REDISMODULE_OK;
    }
    }
}

bool bkr_arg_is(RedisModuleString *arg, const char *word)
{
    size_t n, wn = strlen(word);
    const char *s = RedisModule_StringPtrLen(arg, &n);
    return n == wn && strncasecmp(s, word, n) == 0;
}

bool bkr_arg_ll(RedisModuleString *arg, long long *v)
{
    return RedisModule_StringToLongLong(arg, v) == REDISMODULE_OK;
}

bool bkr_arg_double(RedisModuleString *arg, double *v)
{
    return RedisModule_StringToDouble(arg, v) == REDISMODULE_OK && isfinite(*v);
}

bool bkr_arg_u64(RedisModuleString *arg, uint64_t *v)
{
    size_t n;
    const char *s = RedisModule_StringPtrLen(arg, &n);
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (d > 9 || x > (UINT64_MAX - d) / 10) return false;
        x = x * 10 + d;
    }
    *v = x;
    return n > 0;
}

bkr_lookup bkr_open(RedisModuleCtx *ctx, RedisModuleString *name, int mode, bkr_family fam,
                    RedisModuleKey **key, bkr_value **out)
{
    *key = RedisModule_OpenKey(ctx, name, mode);
    int t = RedisModule_KeyType(*key); /* REDISMODULE_KEYTYPE_EMPTY for a NULL key */
    if (t == REDISMODULE_KEYTYPE_EMPTY) return BKR_EMPTY;
    if (t != REDISMODULE_KEYTYPE_MODULE || RedisModule_ModuleTypeGetType(*key) != bkr_type[fam])
        return BKR_WRONGTYPE;
    *out = RedisModule_ModuleTypeGetValue(*key);
    return BKR_OK;
}

bkr_lookup bkr_open_any(RedisModuleCtx *ctx, RedisModuleString *name, int mode, RedisModuleKey **key,
                        bkr_value **out, bkr_family *fam)
{
    bkr_lookup st = bkr_open(ctx, name, mode, BKR_BF, key, out);
    *fam = BKR_BF;
    if (st == BKR_WRONGTYPE && RedisModule_ModuleTypeGetType(*key) == bkr_type[BKR_CF]) {
        *out = RedisModule_ModuleTypeGetValue(*key);
        *fam = BKR_CF;
        return BKR_OK;
    }
    return st;
}

int bkr_set(RedisModuleKey *key, bkr_family fam, bkr_value *v)
{
    return RedisModule_ModuleTypeSetValue(key, bkr_type[fam], v);
}

bool bkr_open_new(RedisModuleCtx *ctx, RedisModuleString *name, bkr_family fam, RedisModuleKey **key)
{
    bkr_value *v;
    bkr_lookup st = bkr_open(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE, fam, key, &v);
    if (st == BKR_WRONGTYPE) bkr_reply_wrongtype(ctx);
    else if (st == BKR_OK) RedisModule_ReplyWithError(ctx, "ERR item exists");
    return st == BKR_EMPTY;
}

uint8_t *bkr_item_batch(RedisModuleCtx *ctx, RedisModuleString **items, int n, const void ***keys, size_t **lens)
{
    *keys = RedisModule_PoolAlloc(ctx, sizeof **keys * (size_t)n);
    *lens = RedisModule_PoolAlloc(ctx, sizeof **lens * (size_t)n);
    for (int i = 0; i < n; i++) (*keys)[i] = RedisModule_StringPtrLen(items[i], &(*lens)[i]);
    return RedisModule_PoolAlloc(ctx, (size_t)n);
}

int bkr_reply_created(RedisModuleCtx *ctx, RedisModuleKey *key, bkr_family fam, bk_status s, bkr_value *v)
{
    if (s != BK_OK) return bkr_reply_status(ctx, s);
    bkr_set(key, fam, v);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* ---- the command table ---- */

int bkr_register(RedisModuleCtx *ctx, const bkr_command *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const bkr_command *c = &cmds[i];
        int last = c->keys == BKR_KEY_MERGE ? -1 : 1;
        /* BF.* / CF.* go through a router that sends keys migrated from RedisBloom to rb_compat.c */
        RedisModuleCmdFunc fn = bkr_rb_hook(c->name, c->fn);
        if (RedisModule_CreateCommand(ctx, c->name, fn, c->flags, 1, last, 1) != REDISMODULE_OK)
            return REDISMODULE_ERR;
        RedisModuleCommand *cmd = RedisModule_GetCommand(ctx, c->name);
        if (!cmd) return REDISMODULE_ERR;
        /* Key specs: Redis Cluster routes by them, ACL checks them, COMMAND INFO shows them. */
        RedisModuleCommandKeySpec specs[3];
        memset(specs, 0, sizeof specs);
        uint64_t flags;
        switch (c->keys) {
        case BKR_KEY_READ: flags = REDISMODULE_CMD_KEY_RO | REDISMODULE_CMD_KEY_ACCESS; break;
        case BKR_KEY_WRITE: flags = REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_INSERT; break;
        case BKR_KEY_CREATE: flags = REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_INSERT; break;
        case BKR_KEY_DELETE_ITEM: flags = REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_DELETE; break;
        default: flags = REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_UPDATE; break;
        }
        specs[0].flags = flags;
        specs[0].begin_search_type = REDISMODULE_KSPEC_BS_INDEX;
        specs[0].bs.index.pos = 1;
        specs[0].find_keys_type = REDISMODULE_KSPEC_FK_RANGE;
        specs[0].fk.range.lastkey = 0;
        specs[0].fk.range.keystep = 1;
        if (c->keys == BKR_KEY_MERGE) {
            specs[1].flags = REDISMODULE_CMD_KEY_RO | REDISMODULE_CMD_KEY_ACCESS;
            specs[1].begin_search_type = REDISMODULE_KSPEC_BS_INDEX;
            specs[1].bs.index.pos = 2;
            specs[1].find_keys_type = REDISMODULE_KSPEC_FK_RANGE;
            specs[1].fk.range.lastkey = -1;
            specs[1].fk.range.keystep = 1;
        }
        RedisModuleCommandInfo info = {
            .version = REDISMODULE_COMMAND_INFO_VERSION,
            .summary = c->summary,
            .complexity = c->complexity,
            .since = "0.1.0",
            .arity = c->arity,
            .key_specs = specs,
        };
        if (RedisModule_SetCommandInfo(cmd, &info) != REDISMODULE_OK) return REDISMODULE_ERR;
    }
    return REDISMODULE_OK;
}

/* ---- module arguments: ERROR_RATE e, INITIAL_SIZE n, CF_MAX_EXPANSIONS n (as RedisBloom 2.4) ---- */

/* A module argument of two words: *second = whether it is the second (the first: false); false, with
 * the message logged, for any other word. */
static bool arg_choice(RedisModuleCtx *ctx, const char *name, RedisModuleString *v, const char *first,
                       const char *second_word, bool *second)
{
    if (bkr_arg_is(v, first) || bkr_arg_is(v, second_word)) {
        *second = bkr_arg_is(v, second_word);
        return true;
    }
    RedisModule_Log(ctx, "warning", "bloomkit: %s must be %s or %s", name, first, second_word);
    return false;
}

static int parse_args(RedisModuleCtx *ctx, RedisModuleString **in, int argc_in)
{
    /* Empty arguments are no arguments: `--loadmodule bloomkit.so ""` (what some service files and
     * container entrypoints pass when no option is set) starts the server, as RedisBloom's does. */
    RedisModuleString *argv[64];
    int argc = 0;
    for (int i = 0; i < argc_in; i++) {
        size_t n;
        RedisModule_StringPtrLen(in[i], &n);
        if (n == 0) continue;
        if (argc == (int)(sizeof argv / sizeof argv[0])) {
            RedisModule_Log(ctx, "warning", "bloomkit: too many module arguments");
            return REDISMODULE_ERR;
        }
        argv[argc++] = in[i];
    }
    if (argc % 2) {
        RedisModule_Log(ctx, "warning", "bloomkit: module arguments come in pairs (NAME value)");
        return REDISMODULE_ERR;
    }
    for (int i = 0; i < argc; i += 2) {
        const char *name = RedisModule_StringPtrLen(argv[i], NULL);
        if (bkr_arg_is(argv[i], "ERROR_RATE")) {
            double d;
            if (!bkr_arg_double(argv[i + 1], &d) || !(d > 0 && d < 1)) {
                RedisModule_Log(ctx, "warning", "bloomkit: ERROR_RATE must be a number in (0, 1)");
                return REDISMODULE_ERR;
            }
            bkr_cfg.bf_error_rate = d;
        } else if (bkr_arg_is(argv[i], "INITIAL_SIZE")) {
            long long v;
            if (!bkr_arg_ll(argv[i + 1], &v) || v <= 0) {
                RedisModule_Log(ctx, "warning", "bloomkit: INITIAL_SIZE must be an integer > 0");
                return REDISMODULE_ERR;
            }
            bkr_cfg.bf_initial_size = v;
        } else if (bkr_arg_is(argv[i], "CF_MAX_EXPANSIONS")) {
            long long v;
            if (!bkr_arg_ll(argv[i + 1], &v) || v < 1) {
                RedisModule_Log(ctx, "warning", "bloomkit: CF_MAX_EXPANSIONS must be an integer >= 1");
                return REDISMODULE_ERR;
            }
            bkr_cfg.cf_max_expansions = v;
        } else if (bkr_arg_is(argv[i], "MAX_FILTER_SIZE")) {
            long long v;
            if (!bkr_arg_ll(argv[i + 1], &v) || v < 4096 || (unsigned long long)v > BK_MAX_FILTER_BYTES) {
                RedisModule_Log(ctx, "warning", "bloomkit: MAX_FILTER_SIZE must be bytes in [4096, 2^38]");
                return REDISMODULE_ERR;
            }
            bkr_cfg.max_filter_bytes = (unsigned long long)v;
        } else if (bkr_arg_is(argv[i], "CF_MAX_COPIES")) {
            long long v;
            if (!bkr_arg_ll(argv[i + 1], &v) || v < 0) {
                RedisModule_Log(ctx, "warning", "bloomkit: CF_MAX_COPIES must be an integer >= 0");
                return REDISMODULE_ERR;
            }
            bkr_cfg.cf_max_copies = v;
        } else if (bkr_arg_is(argv[i], "BF_TIGHTENING_RATIO")) {
            double d;
            if (!bkr_arg_double(argv[i + 1], &d) || !(d > 0 && d < 1)) {
                RedisModule_Log(ctx, "warning", "bloomkit: BF_TIGHTENING_RATIO must be a number in (0, 1)");
                return REDISMODULE_ERR;
            }
            bkr_cfg.bf_tightening = d;
        } else if (bkr_arg_is(argv[i], "BF_SUBFILTERS")) {
            if (!arg_choice(ctx, "BF_SUBFILTERS", argv[i + 1], "blocked", "classic", &bkr_cfg.bf_classic))
                return REDISMODULE_ERR;
        } else if (bkr_arg_is(argv[i], "REDISBLOOM_LAYOUT")) {
            if (!arg_choice(ctx, "REDISBLOOM_LAYOUT", argv[i + 1], "no", "yes", &bkr_cfg.rb_layout))
                return REDISMODULE_ERR;
        } else if (bkr_arg_is(argv[i], "CF_PACKED")) {
            if (!arg_choice(ctx, "CF_PACKED", argv[i + 1], "yes", "no", &bkr_cfg.cf_unpacked)) return REDISMODULE_ERR;
        } else if (bkr_arg_is(argv[i], "CF_FINGERPRINT_BITS")) {
            long long v;
            if (!bkr_arg_ll(argv[i + 1], &v) || (v != 8 && v != 12 && v != 16)) {
                RedisModule_Log(ctx, "warning", "bloomkit: CF_FINGERPRINT_BITS must be 8, 12 or 16");
                return REDISMODULE_ERR;
            }
            bkr_cfg.cf_fingerprint_bits = v;
        } else {
            RedisModule_Log(ctx, "warning", "bloomkit: unknown module argument '%s'", name);
            return REDISMODULE_ERR;
        }
    }
    return REDISMODULE_OK;
}

/* Encoding version of our values in RDB (value.c documents it). */
#define BKR_ENCVER 1

RedisModuleType *bkr_create_type(RedisModuleCtx *ctx, const char *name, int encver, RedisModuleTypeLoadFunc rdb_load,
                                 RedisModuleTypeSaveFunc rdb_save, RedisModuleTypeRewriteFunc aof_rewrite,
                                 RedisModuleTypeMemUsageFunc mem_usage, RedisModuleTypeFreeFunc free_value,
                                 RedisModuleTypeDigestFunc digest, RedisModuleTypeCopyFunc copy)
{
    RedisModuleTypeMethods m = {
        .version = REDISMODULE_TYPE_METHOD_VERSION,
        .rdb_load = rdb_load,
        .rdb_save = rdb_save,
        .aof_rewrite = aof_rewrite,
        .mem_usage = mem_usage,
        .free = free_value,
        .digest = digest,
        .copy = copy,
    };
    return RedisModule_CreateDataType(ctx, name, encver, &m);
}

int bkr_types_register(RedisModuleCtx *ctx)
{
    /* Type names are 9 characters and ours, not RedisBloom's: an RDB written by this module must not
     * be mistaken for RedisBloom's encoding (or the other way round). */
    bkr_type[BKR_BF] = bkr_create_type(ctx, "bloomkitB", BKR_ENCVER, bkr_rdb_load_bf, bkr_rdb_save, bkr_aof_rewrite_bf,
                                       bkr_mem_usage, bkr_value_free, bkr_digest, bkr_copy);
    bkr_type[BKR_CF] = bkr_create_type(ctx, "bloomkitC", BKR_ENCVER, bkr_rdb_load_cf, bkr_rdb_save, bkr_aof_rewrite_cf,
                                       bkr_mem_usage, bkr_value_free, bkr_digest, bkr_copy);
    if (!bkr_type[BKR_BF] || !bkr_type[BKR_CF]) return REDISMODULE_ERR;
    /* RedisBloom's types (MBbloom--, MBbloomCF): its data loads here, in its own layout (rb_compat.c) */
    return bkr_rb_register_types(ctx);
}

/* The one symbol the module exports (the rest is built with hidden visibility). */
__attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv,
                                                              int argc);
int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (RedisModule_Init(ctx, "bloomkit", BK_VERSION_NUMBER, REDISMODULE_APIVER_1) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    if (!RedisModule_SetCommandInfo || !RedisModule_ReplyWithMap || !RedisModule_ReplyWithBool) {
        RedisModule_Log(ctx, "warning", "bloomkit: needs Redis 7.0 or newer");
        return REDISMODULE_ERR;
    }
    if (parse_args(ctx, argv, argc) != REDISMODULE_OK) return REDISMODULE_ERR;

    static const bk_allocator alloc = { bkr_malloc, bkr_calloc, bkr_free, NULL };
    bk_set_allocator(&alloc);
    bkr_bf_prepare();

    /* rdb_load gets to see damaged data and refuse it instead of Redis stopping on a short read. */
    RedisModule_SetModuleOptions(ctx, REDISMODULE_OPTIONS_HANDLE_IO_ERRORS);

    if (bkr_types_register(ctx) != REDISMODULE_OK) return REDISMODULE_ERR;

    if (bkr_bf_register(ctx) != REDISMODULE_OK || bkr_cf_register(ctx) != REDISMODULE_OK ||
        bkr_bk_register(ctx) != REDISMODULE_OK || bkr_aging_register(ctx) != REDISMODULE_OK ||
        bkr_qf_register(ctx) != REDISMODULE_OK || bkr_rb_register_commands(ctx) != REDISMODULE_OK ||
        bkr_cms_register(ctx) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    RedisModule_Log(ctx, "notice",
                    "bloomkit %s: ERROR_RATE %g INITIAL_SIZE %lld CF_MAX_EXPANSIONS %lld CF_FINGERPRINT_BITS %lld "
                    "CF_MAX_COPIES %lld MAX_FILTER_SIZE %llu BF_TIGHTENING_RATIO %g BF_SUBFILTERS %s CF_PACKED %s "
                    "REDISBLOOM_LAYOUT %s",
                    bk_version_string(), bkr_cfg.bf_error_rate, bkr_cfg.bf_initial_size,
                    bkr_cfg.cf_max_expansions, bkr_cfg.cf_fingerprint_bits, bkr_cfg.cf_max_copies, bkr_cfg.max_filter_bytes,
                    bkr_cfg.bf_tightening,
                    bkr_cfg.bf_classic ? "classic" : "blocked", bkr_cfg.cf_unpacked ? "no" : "yes",
                    bkr_cfg.rb_layout ? "yes" : "no");
    return REDISMODULE_OK;
}
