/*
 * bloomkit.so, the Redis module: shared declarations of its source files.
 *
 *   module.c   RedisModule_OnLoad: module arguments, allocator, data types, command table (flags,
 *              key specs, arity) and the reply/argument helpers below
 *   value.c    the value kept in a key (a bk_filter, or a LOADCHUNK restore in progress) and its
 *              persistence: RDB save/load, AOF rewrite, digest, copy, memory usage; the chunked
 *              SCANDUMP / LOADCHUNK protocol
 *   bf.c       BF.*  (Bloom side: the scalable filter; any non-cuckoo bloomkit filter via BK.IMPORT)
 *   cf.c       CF.*  (cuckoo side: bk_cuckoo with its expansion chain)
 *   bk.c       BK.MERGE, BK.INFO, BK.IMPORT, BK.EXPORT
 *   aging.c    BK.AGING.* (aging filters: the last W insertions or T ms)
 *   quotient.c BK.QF.* (quotient filters: exact counts, growth by doubling, merge)
 *   cms.c, topk.c  CMS.* and TOPK.*: the sketches, data types of their own (sketch.h)
 *   rb_*.c     keys migrated from RedisBloom 2.x (types MBbloom--, MBbloomCF), kept in RedisBloom's
 *              layout and hashing, and new keys made so with REDISBLOOM_LAYOUT yes; rb_compat.h
 *              describes them; rb_convert.c: BK.CONVERT, from that layout to bloomkit's filters
 *
 * docs/REDIS.md lists the commands, their RedisBloom 2.4.23 behaviour and every deliberate difference.
 * Redis calls the module from its main thread only (free callbacks may also run in the lazy-free
 * thread); nothing here is shared between threads except the allocator, which is thread-safe.
 */
#ifndef BKR_MODULE_H
#define BKR_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redismodule.h"
#include "bloomkit/bloomkit.h"
#include "bloomkit/filter.h"
#include "bloomkit/scalable.h"
#include "bloomkit/cuckoo.h"

/* ---- configuration (module arguments, read once at load) ---- */
typedef struct bkr_config {
    double bf_error_rate;        /* ERROR_RATE, default 0.01 */
    long long bf_initial_size;   /* INITIAL_SIZE, default 100 */
    long long cf_max_expansions; /* CF_MAX_EXPANSIONS, default 32 */
    long long cf_initial_size;   /* capacity of a filter CF.ADD / CF.INSERT create: 1024, as
                                    RedisBloom's (no argument): 512 buckets of 2 bytes, the whole filter one
                                    1,280-byte allocator block */
    long long cf_max_copies;     /* CF_MAX_COPIES (ours): copies of one item a CF add accepts; 0 (the
                                    default, RedisBloom's behaviour): no limit */
    long long cf_fingerprint_bits; /* CF_FINGERPRINT_BITS (ours): 8 (default, RedisBloom's), 12 or 16 */
    double bf_tightening;          /* BF_TIGHTENING_RATIO (ours): error ratio between sub-filters of new
                                      scaling filters; default bk_scalable's, 0.5 is RedisBloom's */
    unsigned long long max_filter_bytes; /* MAX_FILTER_SIZE (ours): the largest single filter, bytes */
    bool cf_unpacked;              /* CF_PACKED no (ours): keep small CF filters in the ordinary form (the
                                      packed form's A/B switch; answers and saved bytes are the same) */
    bool bf_classic;               /* BF_SUBFILTERS classic (ours): classic sub-filters in new Bloom filters
                                      (default blocked, bk_scalable's default) */
    bool rb_layout;                /* REDISBLOOM_LAYOUT yes (ours): new BF/CF keys are made in RedisBloom's
                                      layout and hashing (rb_compat.c), for a live switch from RedisBloom */
} bkr_config;
extern bkr_config bkr_cfg;

/* ---- the two data types ---- */
typedef enum bkr_family { BKR_BF = 0, BKR_CF = 1 } bkr_family;
extern RedisModuleType *bkr_type[2];

/* A LOADCHUNK restore in progress: the saved form of a filter (docs/FORMAT.md), received in order,
 * held in segments of BKR_STAGE_SEGMENT bytes (byte i is seg[i / SEGMENT][i % SEGMENT]). */
#define BKR_STAGE_SEGMENT ((size_t)16 << 20)
typedef struct bkr_stage {
    uint8_t **seg;
    size_t nseg;
    size_t len;   /* bytes received */
    size_t total; /* the saved form's total size, from its header */
} bkr_stage;
/* A restore of a saved form of `total` bytes holding its first n bytes p[0..n) (n <= total). */
bkr_stage *bkr_stage_make(size_t total, const void *p, size_t n);
void bkr_stage_free(bkr_stage *s);

/* What a key of either type holds: a filter, or a LOADCHUNK restore in progress. 16 bytes (one allocator
 * block of 16): with thousands of small filters the fixed part of a key is most of its memory. The
 * filters the BF and CF commands make (scalable and cuckoo) are kept bare, without a generic handle (64
 * bytes more per key); a call of the generic API on them goes through a handle made for that call
 * (bkr_handle). Other types (BK.IMPORT, BK.AGING, BK.QF) are kept in their handle. */
#define BKR_RESTORING 0xffu /* type of a value holding a restore in progress (obj is its bkr_stage) */
typedef struct bkr_value {
    void *obj;          /* bare types (bkr_bare): the typed filter; others: its generic handle (bk_filter *);
                         * type BKR_RESTORING: the bkr_stage of the restore */
    uint64_t heap : 56; /* bytes the library holds for the filter: what the allocator really gave (see
                         * bkr_heap_now); 2^56 is far past any filter's limit */
    uint64_t type : 8;  /* the filter's bk_type, or BKR_RESTORING */
} bkr_value;

/* The restore v holds, or NULL when it holds a filter. */
static inline bkr_stage *bkr_stage_of(const bkr_value *v)
{
    return v->type == BKR_RESTORING ? (bkr_stage *)v->obj : NULL;
}
/* Make v hold restore s (v holds no filter). */
static inline void bkr_value_set_stage(bkr_value *v, bkr_stage *s)
{
    v->obj = s;
    v->type = BKR_RESTORING;
    v->heap = 0;
}

/* A CF key's small cuckoo filter in the library's packed form (bloomkit/cuckoo.h, "Packed small
 * filters"): the value's block is a bkr_cfpack (48 bytes: the value and the 32-byte packed header),
 * obj is the exact slot array (its own block), heap that block's size. Commands work on a view built on
 * the stack (bkr_cf_open / bkr_cf_close in cf.c); a change the packed form cannot hold (a second table,
 * a fuller stash) turns the value into an ordinary bk_cuckoo in place (type BK_TYPE_CUCKOO; the block
 * stays 48 bytes). Only filters as the CF commands make them pack: one table of at most
 * BK_CUCKOO_PACKED_MAX_BYTES, seed 0. Saved forms are the ordinary filter's, byte for byte. */
#define BKR_CF_PACKED 0xfeu
typedef struct bkr_cfpack {
    bkr_value v;
    bk_cuckoo_packed hdr;
} bkr_cfpack;
static inline bkr_cfpack *bkr_cfpack_of(const bkr_value *v) { return (bkr_cfpack *)(uintptr_t)v; }

/* The types kept without a generic handle. */
static inline bool bkr_bare(bk_type t) { return t == BK_TYPE_SCALABLE || t == BK_TYPE_CUCKOO; }
/* The typed filter of a value holding one (the hot paths' view). */
static inline void *bkr_typed(const bkr_value *v)
{
    return bkr_bare(v->type) ? v->obj : bk_filter_get((const bk_filter *)v->obj, v->type);
}
/* A generic handle on v's filter for the calls of the generic API: v's own, or a handle made around a
 * bare filter (it allocates 64 bytes, given back by bkr_handle_done). NULL: out of memory. */
bk_filter *bkr_handle(const bkr_value *v);
void bkr_handle_done(const bkr_value *v, bk_filter *h);
/* Free the filter v holds (not v itself, not its restore). */
void bkr_value_drop_filter(bkr_value *v);
/* Make v hold f (taken): unwrapped when its type is kept bare; heap: what the library holds for it,
 * bkr_heap_now() - heap0 once unwrapped. */
void bkr_value_set_filter(bkr_value *v, bk_filter *f, size_t heap0);

/* The bytes the library holds through allocations made by the calling thread (the allocator's usable
 * sizes, what Redis's used_memory counts), minus what the thread freed. Differences taken on the main
 * thread around an operation on one filter give exactly what the operation added to that filter;
 * frees in Redis's lazy-free thread do not disturb them. */
size_t bkr_heap_now(void);

/* Which family a bloomkit type belongs to: cuckoo filters are CF keys, every other type a BF key. */
static inline bkr_family bkr_family_of(bk_type t)
{
    return t == BK_TYPE_CUCKOO || (unsigned)t == BKR_CF_PACKED ? BKR_CF : BKR_BF;
}

/* ---- CF values (cf.c) ---- */
/* A new value for cuckoo filter cf (taken), packed when it fits; NULL if it does not (cf untouched). */
bkr_value *bkr_cf_pack_value(bk_cuckoo *cf);
/* The working filter of a CF value holding a filter: its own, or for a packed value a view built in
 * *w (the command's stack). bkr_cf_close ends it after changes (writes a view back, or converts the
 * value to the ordinary filter when the packed form cannot hold it any more). */
typedef struct bkr_cfwork {
    bkr_value *v;
    RedisModuleKey *key; /* the key holding v, opened for writing (bkr_cf_close replaces its value) */
    size_t heap0;
    bk_cuckoo_view view;
} bkr_cfwork;
bk_cuckoo *bkr_cf_open(bkr_cfwork *w, RedisModuleKey *key, bkr_value *v);
void bkr_cf_close(bkr_cfwork *w);
/* An ordinary copy of a packed value's filter (made with the library's allocator). */
bk_status bkr_cf_unpack(const bkr_value *v, bk_cuckoo **out);

/* Wrap a typed filter in a new value (taking it; on failure it is freed). NULL on allocation failure.
 * heap0: bkr_heap_now() from before the filter was made (its memory is the difference). */
bkr_value *bkr_value_wrap(bk_type type, void *typed, size_t heap0);
/* Wrap a generic handle in a new value (taking it). */
bkr_value *bkr_value_from_filter(bk_filter *f, size_t heap0);
void bkr_value_free(void *v);

/* ---- looking up keys ---- */
typedef enum bkr_lookup {
    BKR_OK = 0,      /* *out is this family's value (a filter, or a restore in progress) */
    BKR_EMPTY,       /* no such key */
    BKR_WRONGTYPE    /* the key holds something else */
} bkr_lookup;
/* Open argv key `name` in `mode` and classify it. *key is always set (RedisModule_AutoMemory frees
 * it); *out is set only for BKR_OK. */
bkr_lookup bkr_open(RedisModuleCtx *ctx, RedisModuleString *name, int mode, bkr_family fam,
                    RedisModuleKey **key, bkr_value **out);
/* The same for a key of either family (*fam says which). */
bkr_lookup bkr_open_any(RedisModuleCtx *ctx, RedisModuleString *name, int mode, RedisModuleKey **key,
                        bkr_value **out, bkr_family *fam);
/* Store a new value in an empty (or to-be-replaced) key opened for writing. */
int bkr_set(RedisModuleKey *key, bkr_family fam, bkr_value *v);
/* A creating command's key (BF.RESERVE, CF.RESERVE, BK.AGING.RESERVE): `name` opened for writing, true
 * when it is empty; else false after replying (WRONGTYPE, or "ERR item exists"). */
bool bkr_open_new(RedisModuleCtx *ctx, RedisModuleString *name, bkr_family fam, RedisModuleKey **key);
/* The n items of a batch query as pointer/length arrays, and room for their n answers (returned), all
 * from the command's pool. */
uint8_t *bkr_item_batch(RedisModuleCtx *ctx, RedisModuleString **items, int n, const void ***keys, size_t **lens);
/* The end of a creating command: the error of s, or v stored in key, the command replicated and "OK". */
int bkr_reply_created(RedisModuleCtx *ctx, RedisModuleKey *key, bkr_family fam, bk_status s, bkr_value *v);

/* ---- memory limits: maxmemory and MAX_FILTER_SIZE ----
 * A client's write command that would make a filter (create, grow, load a chunk, merge, import) runs
 * guarded: every block of at least BKR_GUARD_MIN bytes the library asks for is checked against
 * maxmemory (used_memory + the block) before it is allocated, and refused (BK_ENOMEM) when it does not
 * fit -- under an eviction policy only when the block alone is larger than maxmemory (Redis evicts
 * other keys after the command); bkr_reply_status then answers with Redis's own OOM error. Commands
 * from the master or the AOF,
 * and the server's RDB loads, are never refused (a replica must apply what its master did); a client's
 * RESTORE is guarded like a command (bkr_guard_begin_restore). */
#define BKR_GUARD_MIN ((size_t)64 << 10)
void bkr_guard_begin(RedisModuleCtx *ctx);
void bkr_guard_end(void);
/* The guard around a value's RDB load: on for a client's RESTORE under maxmemory, off for the server's
 * own loads and a replica's. */
void bkr_guard_begin_restore(RedisModuleCtx *ctx);
/* Whether the guard refused a block since it began. */
bool bkr_guard_was_refused(void);
/* Whether n more bytes would pass maxmemory in a guarded command (and then remember the refusal). */
bool bkr_guard_refuses(size_t n);
#define BKR_GUARDED(name)                                                                           \
    static int name##_run(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);                 \
    static int name(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)                        \
    {                                                                                               \
        bkr_guard_begin(ctx);                                                                       \
        int rc = name##_run(ctx, argv, argc);                                                       \
        bkr_guard_end();                                                                            \
        return rc;                                                                                  \
    }

/* ---- replies ---- */
int bkr_reply_wrongtype(RedisModuleCtx *ctx);
/* "ERR ..." for a bloomkit status in a create/insert path (too big, out of memory, ...). */
int bkr_reply_status(RedisModuleCtx *ctx, bk_status s);
/* Reply with RedisBloom's exact error text (clients and RedisBloom's tests compare it whole) and log
 * bloomkit's detail of the refusal at verbose level: "bloomkit: <text>: <detail>". */
int bkr_reply_error_why(RedisModuleCtx *ctx, const char *text, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A count as an integer reply, saturated at 2^63 - 1 (a count the library keeps to 2^64 - 1 never
 * replies as a negative number). */
int bkr_reply_count(RedisModuleCtx *ctx, uint64_t c);
long long bkr_count_ll(uint64_t c);
/* The error for a key whose LOADCHUNK restore is not complete. */
int bkr_reply_restoring(RedisModuleCtx *ctx);
bool bkr_resp3(RedisModuleCtx *ctx);

/* ---- argument parsing (strict: the whole string must parse) ---- */
bool bkr_arg_is(RedisModuleString *arg, const char *word); /* case-insensitive equality */
bool bkr_arg_ll(RedisModuleString *arg, long long *v);
bool bkr_arg_double(RedisModuleString *arg, double *v);    /* finite values only */
bool bkr_arg_u64(RedisModuleString *arg, uint64_t *v);     /* decimal digits only, up to 2^64 - 1 */

/* ---- persistence and the chunk protocol (value.c) ---- */
void *bkr_rdb_load_bf(RedisModuleIO *io, int encver);
void *bkr_rdb_load_cf(RedisModuleIO *io, int encver);
void bkr_rdb_save(RedisModuleIO *io, void *value);
void bkr_aof_rewrite_bf(RedisModuleIO *aof, RedisModuleString *key, void *value);
void bkr_aof_rewrite_cf(RedisModuleIO *aof, RedisModuleString *key, void *value);
size_t bkr_mem_usage(const void *value);
void bkr_digest(RedisModuleDigest *md, void *value);
void *bkr_copy(RedisModuleString *fromkey, RedisModuleString *tokey, const void *value);

/* Memory a value holds (filter, or restore buffer) in bytes. */
size_t bkr_value_memory(const bkr_value *v);

/* A deep copy of a value's filter (typed clone where the type has one, else through its saved form). */
bk_status bkr_clone_filter(const bkr_value *v, bk_filter **out);

/* The saved form (docs/FORMAT.md) of a filter, written into a new RedisModule_Alloc buffer. */
bk_status bkr_save_alloc(const bk_filter *f, uint8_t **buf, size_t *len);

/* SCANDUMP: the chunk after iterator `iter` of value v. Replies [next-iter, chunk] or the end marker
 * ([0, ""] for BF, [0, nil] for CF). */
#define BKR_CHUNK_MAX ((size_t)16 << 20)
int bkr_scandump(RedisModuleCtx *ctx, const bkr_value *v, long long iter, bkr_family fam);
/* LOADCHUNK: apply one chunk to key (which is empty, or holds v of this family). Replies itself. */
int bkr_loadchunk(RedisModuleCtx *ctx, RedisModuleKey *key, bkr_lookup st, bkr_value *v, long long iter,
                  RedisModuleString *data, bkr_family fam);

/* New empty filters in values, as BF.RESERVE (bf.c) and CF.RESERVE (cf.c) make them (for BK.CONVERT). */
bk_status bkr_bf_new_value(long long capacity, double error, long long expansion, bool nonscaling, bkr_value **out);
bk_status bkr_cf_new_value(long long capacity, long long bucket_size, long long max_iterations, long long expansion,
                           bkr_value **out);

/* ---- data types (module.c) ---- */
/* Registers a data type with the methods every type of this module has: RDB load and save, AOF
 * rewrite, memory usage, free, digest (NULL where the type has none) and copy. NULL if Redis refuses. */
RedisModuleType *bkr_create_type(RedisModuleCtx *ctx, const char *name, int encver, RedisModuleTypeLoadFunc rdb_load,
                                 RedisModuleTypeSaveFunc rdb_save, RedisModuleTypeRewriteFunc aof_rewrite,
                                 RedisModuleTypeMemUsageFunc mem_usage, RedisModuleTypeFreeFunc free_value,
                                 RedisModuleTypeDigestFunc digest, RedisModuleTypeCopyFunc copy);
/* The Bloom and cuckoo data types: bloomkit's (bloomkitB, bloomkitC: bkr_type) and RedisBloom's
 * (MBbloom--, MBbloomCF: rb_compat.c), with their names and encoding versions. */
int bkr_types_register(RedisModuleCtx *ctx);

/* ---- commands ---- */
int bkr_bf_register(RedisModuleCtx *ctx);
void bkr_bf_prepare(void); /* at load: the first blocked sizing of the process (bf.c) */
int bkr_cf_register(RedisModuleCtx *ctx);
int bkr_bk_register(RedisModuleCtx *ctx);
int bkr_aging_register(RedisModuleCtx *ctx); /* aging.c: BK.AGING.* */
int bkr_qf_register(RedisModuleCtx *ctx); /* quotient.c: BK.QF.* */
int bkr_cms_register(RedisModuleCtx *ctx); /* cms.c, topk.c: CMS.*, TOPK.* and their data types (sketch.h) */

/* One command of the table: name, handler, flags, arity (-N: at least N), and its key spec. */
typedef enum bkr_keys {
    BKR_KEY_READ,       /* one key at argv[1], read */
    BKR_KEY_WRITE,      /* one key at argv[1], read and written (inserts) */
    BKR_KEY_CREATE,     /* one key at argv[1], created (RESERVE, LOADCHUNK, IMPORT) */
    BKR_KEY_DELETE_ITEM,/* one key at argv[1], items removed (CF.DEL) */
    BKR_KEY_MERGE       /* argv[1] written, argv[2..] read */
} bkr_keys;
typedef struct bkr_command {
    const char *name;
    RedisModuleCmdFunc fn;
    const char *flags;
    int arity;
    bkr_keys keys;
    const char *summary;
    const char *complexity;
} bkr_command;
int bkr_register(RedisModuleCtx *ctx, const bkr_command *cmds, size_t n);

#endif
