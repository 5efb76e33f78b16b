/*
 * Fuzz target for the Redis module's commands (redis/bf.c, cf.c, bk.c and the chunk protocol in
 * value.c), run outside Redis: RedisModule_OnLoad is called with a fake context whose GetApi hands out
 * the stubs below (a tiny keyspace, strict number parsing as Redis does it, and a reply checker), so
 * the command table the module registers is the one exercised, argument parsing included.
 *
 * Input: byte 0 holds flags (bit 0: the client speaks RESP3; bit 1: the module argument
 * REDISBLOOM_LAYOUT yes); the rest is commands, one per line ('\n'), arguments separated by single
 * spaces, the command name first (case-insensitive; unknown names are skipped). Two arguments are
 * replaced: `$s` by the last bulk string replied (a SCANDUMP chunk, a BK.EXPORT payload) and `$i` by the
 * last integer replied (a SCANDUMP iterator), so inputs can chain SCANDUMP -> LOADCHUNK and EXPORT ->
 * IMPORT. The key "str" holds a plain string (WRONGTYPE paths).
 *
 * Checked for every command (a violation traps, which the fuzzer reports as a crash): exactly one
 * reply, well formed (array and map lengths match what was announced, postponed lengths are set);
 * values are only stored in keys opened for writing; no block of more than 64 MiB is asked from Redis's
 * aborting allocator (RedisModule_Alloc / Calloc / Realloc; large blocks must use TryAlloc, which here
 * refuses anything over 16 MiB, so size limits and allocation failures are exercised too); every
 * stored value reports a memory usage. ASan/UBSan check the rest, and LeakSanitizer that the keyspace,
 * freed at the end of each input, held everything.
 *
 * Without libFuzzer (fuzz_cmd_replay, a CTest test, also under ASan/UBSan): thousands of random
 * commands built from the module's vocabulary (names, options, extreme numbers, payloads), plus the
 * seed inputs, which `--write-seeds DIR` writes for a libFuzzer run.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "module.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* module.c's entry point (exported, declared nowhere else) */
int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

#define CHECK(c)                                                                                    \
    do {                                                                                            \
        if (!(c)) __builtin_trap();                                                                 \
    } while (0)

/* ---- strings ---- */
struct RedisModuleString {
    size_t len;
    char *p; /* NUL-terminated copy */
    bool automatic; /* freed at the end of the command */
};

/* ---- per-command automatic memory ---- */
#define AUTO_MAX 4096
static void *auto_ptr[AUTO_MAX];
static int auto_kind[AUTO_MAX]; /* 0 pool block, 1 string, 2 key */
static int auto_n;

static void auto_add(void *p, int kind)
{
    CHECK(auto_n < AUTO_MAX);
    auto_ptr[auto_n] = p;
    auto_kind[auto_n++] = kind;
}

static RedisModuleString *str_new(const void *p, size_t n, bool automatic)
{
    RedisModuleString *s = malloc(sizeof *s);
    s->len = n;
    s->p = malloc(n + 1);
    if (n) memcpy(s->p, p, n);
    s->p[n] = 0;
    s->automatic = automatic;
    if (automatic) auto_add(s, 1);
    return s;
}

static void str_free(RedisModuleString *s)
{
    free(s->p);
    free(s);
}

/* ---- the keyspace ---- */
typedef struct fake_type {
    RedisModuleTypeMethods m;
} fake_type;

#define NKEYS 32
typedef struct slot {
    RedisModuleString *name; /* NULL: unused */
    bool is_string;          /* a plain string value */
    fake_type *type;         /* module value's type, or NULL */
    void *value;
} slot;
static slot keys[NKEYS];

struct RedisModuleKey {
    int slot; /* -1: none */
    int mode;
};

static fake_type types[8];
static slot overflow[64];
static int noverflow;
static int ntypes;

static int find_slot(const RedisModuleString *name, bool create)
{
    int free_slot = -1;
    for (int i = 0; i < NKEYS; i++) {
        if (!keys[i].name) {
            if (free_slot < 0) free_slot = i;
            continue;
        }
        if (keys[i].name->len == name->len && memcmp(keys[i].name->p, name->p, name->len) == 0) return i;
    }
    if (!create || free_slot < 0) return -1;
    keys[free_slot].name = str_new(name->p, name->len, false);
    return free_slot;
}

static void slot_clear(slot *s)
{
    if (s->type && s->value) s->type->m.free(s->value);
    s->type = NULL;
    s->value = NULL;
    s->is_string = false;
}

static bool slot_empty(const slot *s) { return !s->is_string && !s->value; }

static void keyspace_reset(void)
{
    for (int i = 0; i < NKEYS; i++) {
        slot_clear(&keys[i]);
        if (keys[i].name) str_free(keys[i].name);
        keys[i].name = NULL;
    }
    RedisModuleString *n = str_new("str", 3, false);
    int i = find_slot(n, true);
    keys[i].is_string = true;
    str_free(n);
}

/* ---- the reply checker ---- */
#define DEPTH 8
static struct {
    long remaining; /* elements still expected; -1: postponed */
    long count;     /* elements given to a postponed array */
} stack[DEPTH];
static int depth;
static int toplevel;
static char last_bulk[1 << 16];
static size_t last_bulk_len;
static bool have_bulk;
static long long last_int;

static void elem_begin(void)
{
    if (depth == 0) {
        toplevel++;
        return;
    }
    if (stack[depth - 1].remaining < 0) {
        stack[depth - 1].count++;
    } else {
        CHECK(stack[depth - 1].remaining > 0); /* more elements than announced */
        stack[depth - 1].remaining--;
    }
}

static void close_complete(void)
{
    while (depth > 0 && stack[depth - 1].remaining == 0) depth--;
}

static void scalar(void)
{
    elem_begin();
    close_complete();
}

static void open_aggregate(long n)
{
    elem_begin();
    CHECK(depth < DEPTH);
    stack[depth].remaining = n;
    stack[depth].count = 0;
    depth++;
    close_complete();
}

/* ---- stubs ---- */
static void *st_alloc(size_t n)
{
    CHECK(n <= ((size_t)64 << 20)); /* Redis would abort on a failure: large blocks go through TryAlloc */
    return malloc(n ? n : 1);
}
static void *st_try_alloc(size_t n) { return n > ((size_t)16 << 20) ? NULL : malloc(n ? n : 1); }
static void *st_calloc(size_t a, size_t b)
{
    CHECK(a == 0 || b <= ((size_t)64 << 20) / a);
    return calloc(a ? a : 1, b ? b : 1);
}
static void *st_realloc(void *p, size_t n)
{
    CHECK(n <= ((size_t)64 << 20));
    return realloc(p, n ? n : 1);
}
static void st_free(void *p) { free(p); }
static void *st_pool_alloc(RedisModuleCtx *ctx, size_t n)
{
    (void)ctx;
    void *p = malloc(n ? n : 1);
    auto_add(p, 0);
    return p;
}
static void st_auto_memory(RedisModuleCtx *ctx) { (void)ctx; }

static const char *st_string_ptr_len(const RedisModuleString *s, size_t *len)
{
    if (len) *len = s->len;
    return s->p;
}

/* Redis's string2ll: optional '-', digits, no leading zeros, no spaces, in range. */
static int st_string_to_ll(const RedisModuleString *s, long long *ll)
{
    const char *p = s->p;
    size_t n = s->len;
    if (n == 0 || n > 20 || memchr(p, 0, n)) return REDISMODULE_ERR;
    if (n == 1 && p[0] == '0') {
        *ll = 0;
        return REDISMODULE_OK;
    }
    size_t i = p[0] == '-';
    if (i == n || p[i] < '1' || p[i] > '9') return REDISMODULE_ERR;
    for (size_t j = i; j < n; j++)
        if (!isdigit((unsigned char)p[j])) return REDISMODULE_ERR;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (errno || end != p + n) return REDISMODULE_ERR;
    *ll = v;
    return REDISMODULE_OK;
}

/* Redis's string2ld-like check: the whole string, no spaces, not NaN. */
static int st_string_to_double(const RedisModuleString *s, double *d)
{
    if (s->len == 0 || s->len > 5000 || isspace((unsigned char)s->p[0]) || memchr(s->p, 0, s->len))
        return REDISMODULE_ERR;
    char *end;
    errno = 0;
    double v = strtod(s->p, &end);
    if (end != s->p + s->len || isnan(v) || (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || v == 0)))
        return REDISMODULE_ERR;
    *d = v;
    return REDISMODULE_OK;
}

static RedisModuleString *st_create_string_printf(RedisModuleCtx *ctx, const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    CHECK(n >= 0);
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    return str_new(buf, (size_t)n, ctx != NULL);
}

static void st_free_string(RedisModuleCtx *ctx, RedisModuleString *s)
{
    (void)ctx;
    if (!s) return;
    if (s->automatic) {
        for (int i = 0; i < auto_n; i++)
            if (auto_ptr[i] == s) auto_ptr[i] = NULL;
    }
    str_free(s);
}

static int resp3;
static int st_get_context_flags(RedisModuleCtx *ctx)
{
    (void)ctx;
    return resp3 ? REDISMODULE_CTX_FLAGS_RESP3 : 0;
}

static RedisModuleKey *st_open_key(RedisModuleCtx *ctx, RedisModuleString *name, int mode)
{
    (void)ctx;
    int i = find_slot(name, (mode & REDISMODULE_WRITE) != 0);
    if (i < 0 && !(mode & REDISMODULE_WRITE)) return NULL; /* as Redis: a missing key opened read-only */
    if (i >= 0 && !(mode & REDISMODULE_WRITE) && slot_empty(&keys[i])) return NULL;
    RedisModuleKey *k = malloc(sizeof *k);
    k->slot = i; /* -1 only when the keyspace is full: then it behaves as an unusable empty key */
    k->mode = mode;
    auto_add(k, 2);
    return k;
}

static int st_key_type(RedisModuleKey *k)
{
    if (!k || k->slot < 0) return REDISMODULE_KEYTYPE_EMPTY;
    slot *s = &keys[k->slot];
    if (s->is_string) return REDISMODULE_KEYTYPE_STRING;
    return s->value ? REDISMODULE_KEYTYPE_MODULE : REDISMODULE_KEYTYPE_EMPTY;
}

static RedisModuleType *st_module_type_get_type(RedisModuleKey *k)
{
    if (!k || k->slot < 0 || !keys[k->slot].value) return NULL;
    return (RedisModuleType *)keys[k->slot].type;
}

static void *st_module_type_get_value(RedisModuleKey *k)
{
    CHECK(k && k->slot >= 0 && keys[k->slot].value);
    return keys[k->slot].value;
}

static int st_module_type_set_value(RedisModuleKey *k, RedisModuleType *t, void *value)
{
    CHECK(k && (k->mode & REDISMODULE_WRITE)); /* Redis refuses a value on a read-only key */
    CHECK(value != NULL);
    if (k->slot < 0) { /* keyspace full: kept until the end of the command, then dropped */
        CHECK(noverflow < 64);
        overflow[noverflow].type = (fake_type *)t;
        overflow[noverflow++].value = value;
        return REDISMODULE_OK;
    }
    slot *s = &keys[k->slot];
    if (s->value == value) return REDISMODULE_OK;
    slot_clear(s);
    s->type = (fake_type *)t;
    s->value = value;
    return REDISMODULE_OK;
}

static int st_module_type_replace_value(RedisModuleKey *k, RedisModuleType *t, void *value, void **old)
{
    CHECK(k && (k->mode & REDISMODULE_WRITE) && value != NULL);
    if (k->slot < 0) { /* keyspace full: the value this command set, kept until its end */
        CHECK(noverflow > 0 && (RedisModuleType *)overflow[noverflow - 1].type == t);
        if (old) *old = overflow[noverflow - 1].value;
        overflow[noverflow - 1].value = value;
        return REDISMODULE_OK;
    }
    CHECK(keys[k->slot].value != NULL);
    slot *s = &keys[k->slot];
    CHECK((RedisModuleType *)s->type == t); /* Redis refuses another type */
    if (old) *old = s->value;
    s->value = value;
    return REDISMODULE_OK;
}

static int st_delete_key(RedisModuleKey *k)
{
    CHECK(k && (k->mode & REDISMODULE_WRITE));
    if (k->slot >= 0) slot_clear(&keys[k->slot]);
    return REDISMODULE_OK;
}

static long ran, errors;
static bool verbose; /* BKR_FUZZ_VERBOSE set: each command and its error replies on stderr */
static int st_reply_error(RedisModuleCtx *ctx, const char *err)
{
    (void)ctx;
    CHECK(err && err[0]);
    errors++;
    if (verbose) fprintf(stderr, "  -> %s\n", err);
    scalar();
    return REDISMODULE_OK;
}
static int st_wrong_arity(RedisModuleCtx *ctx) { return st_reply_error(ctx, "ERR wrong number of arguments"); }
static int st_reply_ll(RedisModuleCtx *ctx, long long v)
{
    (void)ctx;
    last_int = v;
    scalar();
    return REDISMODULE_OK;
}
static int st_reply_bool(RedisModuleCtx *ctx, int b)
{
    (void)ctx;
    CHECK(b == 0 || b == 1);
    scalar();
    return REDISMODULE_OK;
}
static int st_reply_double(RedisModuleCtx *ctx, double d)
{
    (void)ctx;
    (void)d;
    scalar();
    return REDISMODULE_OK;
}
static int st_reply_simple(RedisModuleCtx *ctx, const char *s)
{
    (void)ctx;
    CHECK(s && !strpbrk(s, "\r\n"));
    scalar();
    return REDISMODULE_OK;
}
static int st_reply_null(RedisModuleCtx *ctx)
{
    (void)ctx;
    scalar();
    return REDISMODULE_OK;
}
static int st_reply_buffer(RedisModuleCtx *ctx, const char *p, size_t n)
{
    (void)ctx;
    CHECK(n == 0 || p);
    if (n <= sizeof last_bulk) {
        if (n) memcpy(last_bulk, p, n);
        last_bulk_len = n;
        have_bulk = true;
    }
    scalar();
    return REDISMODULE_OK;
}
static int st_reply_array(RedisModuleCtx *ctx, long n)
{
    (void)ctx;
    CHECK(n >= 0 || n == REDISMODULE_POSTPONED_ARRAY_LEN);
    open_aggregate(n == REDISMODULE_POSTPONED_ARRAY_LEN ? -1 : n);
    return REDISMODULE_OK;
}
static int st_reply_map(RedisModuleCtx *ctx, long n)
{
    (void)ctx;
    CHECK(n >= 0); /* the module does not postpone maps */
    open_aggregate(2 * n);
    return REDISMODULE_OK;
}
static void st_reply_set_array_length(RedisModuleCtx *ctx, long n)
{
    (void)ctx;
    CHECK(depth > 0 && stack[depth - 1].remaining < 0 && stack[depth - 1].count == n);
    depth--;
    close_complete();
}
static int st_replicate_verbatim(RedisModuleCtx *ctx)
{
    (void)ctx;
    return REDISMODULE_OK;
}
static int st_replicate(RedisModuleCtx *ctx, const char *cmdname, const char *fmt, ...)
{
    (void)ctx;
    CHECK(cmdname && fmt);
    return REDISMODULE_OK;
}
/* A clock that moves 7 ms per call: aging filters' time windows turn during a run. */
static long long st_milliseconds(void)
{
    static long long t = 1700000000000LL;
    return t += 7;
}
static void st_log(RedisModuleCtx *ctx, const char *level, const char *fmt, ...)
{
    (void)ctx;
    (void)level;
    (void)fmt;
}
static void st_log_io_error(RedisModuleIO *io, const char *level, const char *fmt, ...)
{
    (void)io;
    (void)level;
    (void)fmt;
}

/* registration */
typedef struct cmd_entry {
    char name[32];
    RedisModuleCmdFunc fn;
} cmd_entry;
static cmd_entry cmds[128];
static int ncmds;
static int st_create_command(RedisModuleCtx *ctx, const char *name, RedisModuleCmdFunc fn, const char *flags,
                             int first, int last, int step)
{
    (void)ctx;
    (void)flags;
    (void)first;
    (void)last;
    (void)step;
    CHECK(ncmds < 128 && strlen(name) < sizeof cmds[0].name);
    snprintf(cmds[ncmds].name, sizeof cmds[0].name, "%s", name);
    cmds[ncmds++].fn = fn;
    return REDISMODULE_OK;
}
static RedisModuleCommand *st_get_command(RedisModuleCtx *ctx, const char *name)
{
    (void)ctx;
    (void)name;
    return (RedisModuleCommand *)(void *)&cmds[ncmds - 1];
}
static int st_set_command_info(RedisModuleCommand *c, const RedisModuleCommandInfo *info)
{
    (void)c;
    CHECK(info && info->version && info->key_specs);
    return REDISMODULE_OK;
}
static RedisModuleType *st_create_data_type(RedisModuleCtx *ctx, const char *name, int encver,
                                            RedisModuleTypeMethods *methods)
{
    (void)ctx;
    CHECK(strlen(name) == 9 && encver >= 0 && ntypes < 8);
    memcpy(&types[ntypes].m, methods, sizeof types[ntypes].m);
    return (RedisModuleType *)&types[ntypes++];
}
static int st_set_module_attribs(RedisModuleCtx *ctx, const char *name, int ver, int apiver)
{
    (void)ctx;
    (void)name;
    (void)ver;
    (void)apiver;
    return REDISMODULE_OK;
}
static void st_set_module_options(RedisModuleCtx *ctx, int options)
{
    (void)ctx;
    (void)options;
}

typedef void (*any_fn)(void);
static const struct {
    const char *name;
    any_fn fn;
} api[] = {
#define API(n, f) { "RedisModule_" #n, (any_fn)(f) }
    API(Alloc, st_alloc), API(TryAlloc, st_try_alloc), API(Calloc, st_calloc), API(Realloc, st_realloc),
    API(Free, st_free), API(PoolAlloc, st_pool_alloc), API(AutoMemory, st_auto_memory),
    API(StringPtrLen, st_string_ptr_len), API(StringToLongLong, st_string_to_ll),
    API(StringToDouble, st_string_to_double), API(CreateStringPrintf, st_create_string_printf),
    API(FreeString, st_free_string), API(GetContextFlags, st_get_context_flags), API(OpenKey, st_open_key),
    API(KeyType, st_key_type), API(ModuleTypeGetType, st_module_type_get_type),
    API(ModuleTypeGetValue, st_module_type_get_value), API(ModuleTypeSetValue, st_module_type_set_value),
    API(ModuleTypeReplaceValue, st_module_type_replace_value),
    API(DeleteKey, st_delete_key), API(ReplyWithError, st_reply_error), API(WrongArity, st_wrong_arity),
    API(ReplyWithLongLong, st_reply_ll), API(ReplyWithBool, st_reply_bool), API(ReplyWithDouble, st_reply_double),
    API(ReplyWithSimpleString, st_reply_simple), API(ReplyWithNull, st_reply_null),
    API(ReplyWithStringBuffer, st_reply_buffer), API(ReplyWithArray, st_reply_array),
    API(ReplyWithMap, st_reply_map), API(ReplySetArrayLength, st_reply_set_array_length),
    API(ReplicateVerbatim, st_replicate_verbatim), API(Replicate, st_replicate),
    API(Milliseconds, st_milliseconds), API(Log, st_log), API(LogIOError, st_log_io_error),
    API(CreateCommand, st_create_command), API(GetCommand, st_get_command),
    API(SetCommandInfo, st_set_command_info), API(CreateDataType, st_create_data_type),
    API(SetModuleAttribs, st_set_module_attribs), API(SetModuleOptions, st_set_module_options),
#undef API
};

static int st_get_api(const char *name, void *out)
{
    for (size_t i = 0; i < sizeof api / sizeof api[0]; i++)
        if (strcmp(api[i].name, name) == 0) {
            memcpy(out, &api[i].fn, sizeof api[i].fn); /* out is the address of a function pointer */
            return REDISMODULE_OK;
        }
    return REDISMODULE_ERR; /* left NULL: the module must not need it */
}

/* Redis's context starts with the GetApi pointer, which RedisModule_Init reads. */
static struct {
    int (*getapi)(const char *, void *);
} fake_ctx = { st_get_api };

static void load_module(void)
{
    CHECK(RedisModule_OnLoad((RedisModuleCtx *)(void *)&fake_ctx, NULL, 0) == REDISMODULE_OK);
    CHECK(ncmds >= 20 && ntypes == 8);
}

/* ---- running commands ---- */

static void run_command(RedisModuleString **argv, int argc)
{
    const char *name = argv[0]->p;
    RedisModuleCmdFunc fn = NULL;
    for (int i = 0; i < ncmds; i++)
        if (strcasecmp(cmds[i].name, name) == 0 && strlen(cmds[i].name) == argv[0]->len) fn = cmds[i].fn;
    if (!fn) return;
    depth = 0;
    toplevel = 0;
    ran++;
    if (verbose) fprintf(stderr, "%s (%d args)\n", name, argc - 1);
    int rc = fn((RedisModuleCtx *)(void *)&fake_ctx, argv, argc);
    CHECK(rc == REDISMODULE_OK);
    CHECK(toplevel == 1 && depth == 0); /* exactly one reply, complete */
    for (int i = 0; i < auto_n; i++) {
        if (!auto_ptr[i]) continue;
        if (auto_kind[i] == 1) str_free(auto_ptr[i]);
        else free(auto_ptr[i]);
    }
    auto_n = 0;
    for (int i = 0; i < noverflow; i++) slot_clear(&overflow[i]);
    noverflow = 0;
    for (int i = 0; i < NKEYS; i++)
        if (keys[i].value) CHECK(keys[i].type->m.mem_usage(keys[i].value) > 0);
}

#define MAX_ARGS 1024
#define MAX_COMMANDS 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    if (!ready) {
        load_module();
        ready = true;
    }
    if (size < 1) return 0;
    resp3 = data[0] & 1;
    bkr_cfg.rb_layout = (data[0] & 2) != 0;
    keyspace_reset();
    have_bulk = false;
    last_int = 0;
    const uint8_t *p = data + 1, *end = data + size;
    static RedisModuleString *argv[MAX_ARGS];
    for (int ncmd = 0; p < end && ncmd < MAX_COMMANDS; ncmd++) {
        const uint8_t *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        int argc = 0;
        const uint8_t *a = p;
        while (a <= eol && argc < MAX_ARGS) {
            const uint8_t *sp = memchr(a, ' ', (size_t)(eol - a));
            if (!sp) sp = eol;
            size_t n = (size_t)(sp - a);
            if (n == 2 && a[0] == '$' && a[1] == 's' && have_bulk) {
                argv[argc++] = str_new(last_bulk, last_bulk_len, false);
            } else if (n == 2 && a[0] == '$' && a[1] == 'i') {
                char num[24];
                int k = snprintf(num, sizeof num, "%lld", last_int);
                argv[argc++] = str_new(num, (size_t)k, false);
            } else {
                argv[argc++] = str_new(a, n, false);
            }
            a = sp + 1;
        }
        if (argc > 0) run_command(argv, argc);
        for (int i = 0; i < argc; i++) str_free(argv[i]);
        p = eol + 1;
    }
    keyspace_reset();
    return 0;
}

#ifndef BKR_LIBFUZZER
/* ---- the replay driver: seeds, and random commands from the module's vocabulary ---- */

static const char *seeds_text[] = {
    "BF.RESERVE k 0.01 100 EXPANSION 1\nBF.MADD k a b c d e f g h\nBF.INFO k\nBF.INFO k EXPANSION\nBF.CARD k\n"
    "BF.SCANDUMP k 0\nBF.LOADCHUNK k2 $i $s\nBF.EXISTS k2 a\nBK.EXPORT k\nBK.IMPORT k3 $s\nBK.INFO k3\n",
    "BK.AGING.RESERVE a ERROR 0.01 COUNT 5\nBK.AGING.ADD a x y z u v w\nBK.AGING.ADDIFABSENT a x q q\n"
    "BK.AGING.RESERVE t ERROR 0.01 TIME 30 CAPACITY 50 GENERATIONS 3\nBK.AGING.ADD t a b\nBK.AGING.EXISTS t a c\n"
    "BK.AGING.APPLY t 1700000009999 ADDIFABSENT a d\nBK.AGING.INFO t\nBK.EXPORT t\nBK.IMPORT t2 $s\nBK.INFO a\n",
    "CF.RESERVE c 100 BUCKETSIZE 3 EXPANSION 2\nCF.INSERT c ITEMS a b c d e f\nCF.DEL c a\nCF.COUNT c b\n"
    "CF.INFO c\nCF.SCANDUMP c 0\nCF.LOADCHUNK c2 $i $s\nCF.MEXISTS c2 a b z\nBK.EXPORT c\nBK.IMPORT c3 $s\n"
    "BK.CF.KICKSTATE c3 12345\nCF.INSERT c3 ITEMS g h i j k l m n o p\nBK.CF.KICKSTATE c 0\n",
    "BF.INSERT b CAPACITY 50 ERROR 0.001 NONSCALING ITEMS x y z\nBF.ADD str x\nCF.ADD b x\nBK.MERGE m b b\n"
    "BF.RESERVE big 1e-9 1000000000000\nCF.RESERVE c 1000 BUCKETSIZE 255 MAXITERATIONS 1\nCF.ADDNX c q\n",
};

/* Keys migrated from RedisBloom (redis/rb_*.c): k1 a Bloom chain (capacity 100, error 0.01) and c1 a
 * cuckoo filter (capacity 128), restored from RedisBloom SCANDUMP headers, which are binary and so are
 * put into inputs by hand (put_rb); the random commands then work on them. */
static const uint8_t rb_bloom_header[] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x90, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x04, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7b, 0x14, 0xae, 0x47,
    0xe1, 0x7a, 0x74, 0x3f, 0xe9, 0x86, 0x2f, 0xb2, 0x35, 0x0e, 0x26, 0x40, 0x08, 0x00, 0x00, 0x00,
    0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};
static const uint8_t rb_cuckoo_header[] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x14, 0x00, 0x01, 0x00,
};

static uint64_t rng_state = 0x243f6a8885a308d3u;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static const char *names[] = {
    "BF.RESERVE", "BF.ADD", "BF.MADD", "BF.INSERT", "BF.EXISTS", "BF.MEXISTS", "BF.INFO", "BF.CARD",
    "BF.SCANDUMP", "BF.LOADCHUNK", "CF.RESERVE", "CF.ADD", "CF.ADDNX", "CF.INSERT", "CF.INSERTNX",
    "CF.EXISTS", "CF.MEXISTS", "CF.DEL", "CF.COUNT", "CF.INFO", "CF.SCANDUMP", "CF.LOADCHUNK",
    "BK.MERGE", "BK.INFO", "BK.IMPORT", "BK.EXPORT", "bf.add", "cf.insert",
    "BK.AGING.RESERVE", "BK.AGING.ADD", "BK.AGING.ADDIFABSENT", "BK.AGING.EXISTS", "BK.AGING.INFO",
    "BK.AGING.APPLY", "BK.CF.KICKSTATE", "BK.CONVERT", "CMS.INITBYDIM", "CMS.INITBYPROB", "CMS.INCRBY", "CMS.QUERY",
    "CMS.MERGE", "CMS.INFO", "TOPK.RESERVE", "TOPK.ADD", "TOPK.INCRBY", "TOPK.QUERY", "TOPK.COUNT", "TOPK.LIST",
    "TOPK.INFO", "BK.SKETCH.LOAD",
};
static const char *words[] = {
    "ITEMS", "CAPACITY", "ERROR", "EXPANSION", "NONSCALING", "NOCREATE", "BUCKETSIZE", "MAXITERATIONS",
    "REPLACE", "items", "Capacity", "SIZE", "FILTERS", "ITEMS", "EXPANSION", "expansion", "$s", "$s", "$i",
    "COUNT", "TIME", "GENERATIONS", "AT", "ADD", "ADDIFABSENT", "STAGE", "FROM", "WEIGHTS", "WITHCOUNT",
    "BLOOMKIT", "REDISBLOOM",
};
static const char *numbers[] = {
    "0", "1", "-1", "2", "3", "4", "5", "7", "8", "16", "17", "100", "255", "256", "1024", "65535", "65536",
    "32768", "9223372036854775807", "-9223372036854775808", "18446744073709551616", "1e308", "-1e308", "inf",
    "-inf", "nan", "0.5", "0.01", "1e-300", "0.999999", "1.0", "0x10", "01", "", "1e12", "1e9", "1e-9",
};
static const char *keynames[] = { "k1", "k2", "k3", "str", "k1", "k2", "c1", "c2" };

static size_t put(char *buf, size_t at, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (at + n + 1 >= cap) return at;
    memcpy(buf + at, s, n);
    return at + n;
}

static size_t put_bytes(char *buf, size_t at, size_t cap, const uint8_t *p, size_t n)
{
    if (at + n + 1 >= cap) return at;
    memcpy(buf + at, p, n);
    return at + n;
}

static size_t put_rb(char *buf, size_t at, size_t cap)
{
    at = put(buf, at, cap, "BF.LOADCHUNK k1 1 ");
    at = put_bytes(buf, at, cap, rb_bloom_header, sizeof rb_bloom_header);
    at = put(buf, at, cap, "\nBF.MADD k1 a b c\nCF.LOADCHUNK c1 1 ");
    at = put_bytes(buf, at, cap, rb_cuckoo_header, sizeof rb_cuckoo_header);
    return put(buf, at, cap, "\nCF.ADD c1 a\nBF.SCANDUMP k1 0\nBF.LOADCHUNK k3 $i $s\nBF.SCANDUMP k1 1\n"
                             "BF.LOADCHUNK k3 $i $s\nCF.SCANDUMP c1 1\nCF.INSERTNX c1 ITEMS a b\nCF.DEL c1 a\n"
                             "BK.CONVERT k1 STAGE k2\nBF.MADD k2 a b c d\nBK.CONVERT k1 FROM k2\nBK.CONVERT c1\n");
}

int main(int argc, char **argv)
{
    size_t nseeds = sizeof seeds_text / sizeof seeds_text[0];
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) {
        for (size_t i = 0; i < nseeds; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/seed-%zu", argv[2], i);
            FILE *fp = fopen(path, "wb");
            if (!fp) return 1;
            fputc(i & 1, fp); /* RESP2 and RESP3 */
            fputs(seeds_text[i], fp);
            if (fclose(fp) != 0) return 1;
        }
        return 0;
    }
    verbose = getenv("BKR_FUZZ_VERBOSE") != NULL;
    long total = argc == 2 ? atol(argv[1]) : 20000;
    static char buf[1 << 16];
    long commands = 0, inputs = 0;
    for (size_t i = 0; i < nseeds; i++) {
        size_t n = strlen(seeds_text[i]);
        buf[0] = (char)(i & 1);
        memcpy(buf + 1, seeds_text[i], n);
        LLVMFuzzerTestOneInput((const uint8_t *)buf, n + 1);
        inputs++;
    }
    {
        size_t at = 0;
        buf[at++] = 0;
        at = put_rb(buf, at, sizeof buf);
        at = put(buf, at, sizeof buf, "BF.INFO k1\nBF.CARD k1\nBF.EXISTS k3 a\nCF.INFO c1\nCF.COUNT c1 b\n");
        LLVMFuzzerTestOneInput((const uint8_t *)buf, at);
        inputs++;
    }
    while (commands < total) {
        /* one input: a seed's filters (and half the time keys migrated from RedisBloom), then 50 random
         * commands */
        size_t at = 0;
        buf[at++] = (char)(rnd() & 3);
        if (rnd() & 1) at = put_rb(buf, at, sizeof buf);
        at = put(buf, at, sizeof buf, seeds_text[rnd() % nseeds]);
        for (int c = 0; c < 50; c++, commands++) {
            at = put(buf, at, sizeof buf, names[rnd() % (sizeof names / sizeof names[0])]);
            int nargs = (int)(rnd() % 9);
            for (int a = 0; a < nargs; a++) {
                at = put(buf, at, sizeof buf, " ");
                uint64_t x = rnd() % 100;
                if (x < 30) {
                    at = put(buf, at, sizeof buf, keynames[rnd() % (sizeof keynames / sizeof keynames[0])]);
                } else if (x < 55) {
                    at = put(buf, at, sizeof buf, numbers[rnd() % (sizeof numbers / sizeof numbers[0])]);
                } else if (x < 80) {
                    at = put(buf, at, sizeof buf, words[rnd() % (sizeof words / sizeof words[0])]);
                } else {
                    int len = (int)(rnd() % 12);
                    for (int b = 0; b < len && at + 2 < sizeof buf; b++) {
                        char ch = (char)(rnd() & 0xff);
                        buf[at++] = ch == '\n' || ch == ' ' ? 'x' : ch;
                    }
                }
            }
            at = put(buf, at, sizeof buf, "\n");
        }
        LLVMFuzzerTestOneInput((const uint8_t *)buf, at);
        inputs++;
    }
    printf("fuzz_cmd_replay: %ld inputs, %ld random commands (plus the seeds): %ld ran, %ld error replies; "
           "every reply well formed\n", inputs, commands, ran, errors);
    CHECK(ran >= commands); /* the command table was found and used */
    return 0;
}
#endif
