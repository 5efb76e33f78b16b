/*
 * The private header of the bloomkit._bloomkit extension: what its source files share.
 *
 *   _bloomkit.c    exceptions, module functions, method tables, type objects, module init
 *   keys.c         Python objects to keys: single keys, the steps and sources of a batch
 *   filter.c       the filter object (locks, GIL-free sections, wrapping), argument helpers, constructors
 *   filter_ops.c   queries, inserts and batches, statistics and properties
 *   filter_io.c    copies, set operations, clear and close, files and bytes, the Fuse and Ribbon
 *                  constructors
 *   parquet.c      Parquet's split-block filters over bloomkit/parquet.h (bloomkit.compat's)
 *
 * Names shared between the files carry the bkpy_ prefix; everything else stays static in its file.
 * The module exports PyInit__bloomkit only (exports.map).
 */
#ifndef BKPY_H
#define BKPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <bloomkit/bloomkit.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* A macro's value as a string literal (the C defaults in docstrings: they follow the library). */
#define BKPY_STR_(x) #x
#define BKPY_STR(x) BKPY_STR_(x)

#define MODULE_NAME "bloomkit._bloomkit"

/* Batches smaller than this keep the GIL: dropping and taking it back costs more than they do. */
#define NOGIL_MIN 256
/* Keys converted per step of a batch given as a Python sequence or iterator (the GIL is dropped once
 * per step): 16384 keys hold 512 KiB of pointers, lengths, integers and references. */
#define STEP_KEYS 16384
/* Hashes computed per call into the library for buffer batches (on the stack). */
#define HASH_CHUNK 256

/* Exceptions (_bloomkit.c) */

/* What a failing call was doing: decides between ValueError and FullError for BK_ETOOBIG, and
 * whether type/version errors are about a file. */
typedef enum { CTX_ARGS, CTX_ADD, CTX_FILE, CTX_OTHER } err_ctx;

extern PyObject *bkpy_IncompatibleError;
extern PyObject *bkpy_UnsupportedOperation;
PyObject *bkpy_raise_bk(bk_status s, err_ctx ctx, const char *what);

/* Keys and batch sources (keys.c) */

/* One key, converted for a single call. `buf` is released by bkpy_key_done. */
typedef struct {
    const void *p;
    size_t n;
    unsigned char ibuf[8];
    Py_buffer view;
    int has_view;
} key_t_;

static inline void bkpy_key_done(key_t_ *key)
{
    if (key->has_view) PyBuffer_Release(&key->view);
}

/* A step of keys converted from Python objects. */
typedef struct {
    size_t cap;
    size_t n;
    const void **ptr;
    size_t *len;
    unsigned char *ints;   /* 8 bytes per key, for int keys */
    PyObject **refs;       /* references held while the GIL is dropped */
    size_t nrefs;
} step_t;

/* Where a batch's keys come from. */
typedef struct {
    PyObject *seq;      /* a list or tuple (owned reference), or NULL */
    PyObject *iter;     /* an iterator (owned), or NULL */
    Py_ssize_t pos;
    int hold;           /* keep references to items (a list someone else can change) */
    Py_buffer view;     /* a buffer of fixed-width items */
    int has_view;
    int int_items;      /* buffer items are integers: widen to the 8-byte int key */
    int is_signed;
    int swap;           /* big-endian items */
    size_t itemsize;
    size_t nitems;
} source_t;

int bkpy_key_get(PyObject *k, key_t_ *key);
int bkpy_step_init(step_t *st, size_t cap);
void bkpy_step_free(step_t *st);
int bkpy_source_open(source_t *src, PyObject *obj, const char *what);
void bkpy_source_close(source_t *src);
Py_ssize_t bkpy_source_fill(source_t *src, step_t *st);
void bkpy_buffer_hashes(const source_t *src, size_t i, size_t n, uint64_t seed, uint64_t *out);

/* The filter object (filter.c) */

typedef struct {
    PyObject_HEAD
    bk_filter *f;             /* NULL once closed */
    bk_type type;
    int readers;              /* GIL-free readers registered (changed with the GIL held) */
    int writers;              /* GIL-free writers registered */
    pthread_rwlock_t lock;
    PyObject *weakrefs;
    unsigned long gen;        /* bkpy_fork_gen when the object last checked it (bkpy_use_check) */
    unsigned char torn;       /* inherited by fork() while another thread was changing it */
    unsigned char inherited;  /* made before a fork() of this process's line: a child's copy */
    unsigned char changed;    /* its mapped file changed underneath (a SIGBUS in its mapping) */
    unsigned long bus_seen;   /* bkpy_bus_count when the object last checked it */
    const unsigned char *map; /* a mapped handle's mapping (bk_filter_mapping), else NULL */
    size_t map_len;
} FilterObject;

/* A mapped file changed underneath (truncated, or another file copied over it in place): touching a
 * page past its new end raises SIGBUS, which would kill the interpreter. The extension's handler
 * (installed when the first file is mapped; the library installs none) catches the faults inside the
 * mappings of its filters: it puts a zero page where the lost one was, so the access completes, and
 * records the address (bkpy_bus_count counts them). The object whose mapping it was then raises OSError
 * (ESTALE) from the call that touched it (bkpy_leave, and after a batch) and from every later call;
 * faults elsewhere go to the handler that was there before. */
extern volatile unsigned long bkpy_bus_count;
int bkpy_bus_slow(FilterObject *o);
/* Register a mapped object's mapping with the handler (after o->f is set); unregister before freeing. */
void bkpy_map_register(FilterObject *o);
void bkpy_map_unregister(FilterObject *o);

/* fork(): a child has only the thread that forked. Filters it inherited may have their lock held, and
 * GIL-free callers registered, by threads that do not exist there; bkpy_fork_gen counts the forks of
 * this process's line (a pthread_atfork child handler), and every entry point (bkpy_use_check, with
 * the GIL) resets an inherited object's lock and counters once. A filter another thread was changing
 * at the fork may be half-changed in the child: it raises there (torn) instead of answering; a shared
 * writable mapping stays its opener's to write (and to finalise: the library only unmaps it in a
 * child), so the child's copy refuses writes. */
extern unsigned long bkpy_fork_gen;
int bkpy_fork_slow(FilterObject *o, int write);
/* The checks of an entry point: fork (above) and a changed mapped file (below). 0, or -1 with an
 * exception set. */
static inline int bkpy_use_check(FilterObject *o, int write)
{
    if (o->gen == bkpy_fork_gen && !o->torn && !(write && o->inherited) && o->bus_seen == bkpy_bus_count &&
        !o->changed)
        return 0;
    if (bkpy_fork_slow(o, write) < 0) return -1;
    return bkpy_bus_slow(o);
}
void bkpy_fork_install(void);

extern PyTypeObject bkpy_CmsType, bkpy_TopkType; /* sketch.c */
extern PyTypeObject bkpy_ParquetType;            /* parquet.c: bloomkit.compat's Parquet filters */
extern PyTypeObject bkpy_FilterType, bkpy_BloomType, bkpy_BlockedType, bkpy_CountingType, bkpy_ScalableType,
    bkpy_CuckooType, bkpy_FuseType, bkpy_AgingType, bkpy_QuotientType, bkpy_RibbonType;

/* Lock states of a call that keeps the GIL. */
enum { LK_NONE = 0, LK_HELD = 1 };

/* The end of a call that keeps the GIL: -1 (exception set) when the call met a changed mapped file. */
static inline int bkpy_leave(FilterObject *o, int held)
{
    if (held) pthread_rwlock_unlock(&o->lock);
    return o->bus_seen == bkpy_bus_count && !o->changed ? 0 : bkpy_bus_slow(o);
}

static inline bk_filter *bkpy_nogil_lock(FilterObject *o, int write)
{
    if (write) pthread_rwlock_wrlock(&o->lock);
    else pthread_rwlock_rdlock(&o->lock);
    return o->f;
}
static inline void bkpy_nogil_unlock(FilterObject *o)
{
    pthread_rwlock_unlock(&o->lock);
}

typedef void (*typed_free_fn)(void *);

int bkpy_closed_error(void);
int bkpy_enter_read(FilterObject *o);
int bkpy_key_enter(FilterObject *o, PyObject *k, key_t_ *key, int write);
int bkpy_enter_write(FilterObject *o);
int bkpy_nogil_register(FilterObject *o, int write);
void bkpy_nogil_unregister(FilterObject *o, int write);
FilterObject *bkpy_filter_alloc(PyTypeObject *tp);
PyObject *bkpy_wrap_handle(bk_filter *h);
PyObject *bkpy_wrap_typed(PyTypeObject *tp, bk_type t, void *typed, typed_free_fn fr);
void bkpy_free_bloom(void *p);
void bkpy_free_blocked(void *p);
void bkpy_free_counting(void *p);
void bkpy_free_scalable(void *p);
void bkpy_free_cuckoo(void *p);
void bkpy_free_fuse(void *p);
void bkpy_free_ribbon(void *p);
void bkpy_free_aging(void *p);
void bkpy_free_quotient(void *p);
void bkpy_Filter_dealloc(FilterObject *o);
int bkpy_get_u64(PyObject *v, const char *name, uint64_t *out);
int bkpy_get_u32(PyObject *v, const char *name, uint32_t *out);
PyObject *bkpy_Bloom_new(PyTypeObject *tp, PyObject *args, PyObject *kw);
PyObject *bkpy_Blocked_new(PyTypeObject *tp, PyObject *args, PyObject *kw);
PyObject *bkpy_Counting_new(PyTypeObject *tp, PyObject *args, PyObject *kw);
PyObject *bkpy_Scalable_new(PyTypeObject *tp, PyObject *args, PyObject *kw);
PyObject *bkpy_Cuckoo_new(PyTypeObject *tp, PyObject *args, PyObject *kw);
PyObject *bkpy_Aging_new(PyTypeObject *tp, PyObject *args, PyObject *kw);
PyObject *bkpy_Quotient_new(PyTypeObject *tp, PyObject *args, PyObject *kw);

/* Queries, inserts, statistics and properties (filter_ops.c) */
/* The closures of the property getters: which statistic, scalable or aging field. */
enum {
    ST_CAPACITY, ST_ERROR_RATE, ST_FILL, ST_FPR_NOW, ST_SATURATED, ST_BITS, ST_K, ST_MEMORY, ST_SUBFILTERS,
    ST_BITS_PER_KEY
};

enum { SC_GROWTH, SC_TIGHTENING, SC_MAX_BYTES, SC_NONSCALING, SC_CLASSIC, SC_FPR_BOUND, SC_INITIAL };

enum { AG_MODE, AG_WINDOW, AG_GENERATIONS };

int bkpy_Filter_sq_contains(FilterObject *o, PyObject *k);
PyObject *bkpy_Filter_contains(FilterObject *o, PyObject *k);
PyObject *bkpy_Filter_add(FilterObject *o, PyObject *k);
PyObject *bkpy_Filter_add_if_absent(FilterObject *o, PyObject *k);
PyObject *bkpy_Filter_remove(FilterObject *o, PyObject *k);
PyObject *bkpy_Filter_discard(FilterObject *o, PyObject *k);
PyObject *bkpy_Filter_contains_many(FilterObject *o, PyObject *args, PyObject *kw);
PyObject *bkpy_Filter_add_many(FilterObject *o, PyObject *keys);
int bkpy_get_stats(FilterObject *o, bk_stats *st);
PyObject *bkpy_Filter_stats(FilterObject *o, PyObject *unused);
Py_ssize_t bkpy_Filter_len(FilterObject *o);
PyObject *bkpy_Filter_get_count(FilterObject *o, void *c);
int bkpy_Filter_bool(FilterObject *o);
PyObject *bkpy_Filter_get_stat(FilterObject *o, void *which);
PyObject *bkpy_Filter_get_seed(FilterObject *o, void *c);
PyObject *bkpy_Filter_get_type_name(FilterObject *o, void *c);
PyObject *bkpy_Filter_get_backing(FilterObject *o, void *c);
PyObject *bkpy_Filter_get_closed(FilterObject *o, void *c);
PyObject *bkpy_Filter_get_layout(FilterObject *o, void *c);
PyObject *bkpy_Filter_get_counter_bits(FilterObject *o, void *c);
PyObject *bkpy_Filter_get_fingerprint_bits(FilterObject *o, void *c);
PyObject *bkpy_Scalable_get(FilterObject *o, void *which);
PyObject *bkpy_Cuckoo_info(FilterObject *o, PyObject *unused);
PyObject *bkpy_Cuckoo_count_of(FilterObject *o, PyObject *k);
PyObject *bkpy_Aging_info(FilterObject *o, PyObject *unused);
PyObject *bkpy_Aging_advance(FilterObject *o, PyObject *unused);
PyObject *bkpy_Aging_get(FilterObject *o, void *which);
PyObject *bkpy_Quotient_get_remainder_bits(FilterObject *o, void *c);
PyObject *bkpy_Quotient_get_stages(FilterObject *o, void *c);
PyObject *bkpy_Quotient_expand(FilterObject *o, PyObject *unused);
PyObject *bkpy_Quotient_grow(FilterObject *o, PyObject *unused);

/* Copies, set operations, files and bytes, Fuse (filter_io.c) */
PyObject *bkpy_Filter_copy(FilterObject *o, PyObject *unused);
PyObject *bkpy_Filter_deepcopy(FilterObject *o, PyObject *memo);
PyObject *bkpy_Filter_or(PyObject *a, PyObject *b);
PyObject *bkpy_Filter_and(PyObject *a, PyObject *b);
PyObject *bkpy_Filter_ior(PyObject *a, PyObject *b);
PyObject *bkpy_Filter_iand(PyObject *a, PyObject *b);
PyObject *bkpy_Filter_union(FilterObject *o, PyObject *other);
PyObject *bkpy_Filter_intersection(FilterObject *o, PyObject *other);
PyObject *bkpy_Filter_compatible(FilterObject *o, PyObject *other);
PyObject *bkpy_Filter_clear(FilterObject *o, PyObject *unused);
PyObject *bkpy_Filter_close(FilterObject *o, PyObject *unused);
PyObject *bkpy_Filter_enter(PyObject *o, PyObject *unused);
PyObject *bkpy_Filter_exit(FilterObject *o, PyObject *args);
PyObject *bkpy_Filter_save(FilterObject *o, PyObject *arg);
PyObject *bkpy_Filter_bytes(FilterObject *o, PyObject *unused);
PyObject *bkpy_Filter_reduce(FilterObject *o, PyObject *unused);
PyObject *bkpy_Filter_sizeof(FilterObject *o, PyObject *unused);
PyObject *bkpy_Filter_repr(FilterObject *o);
PyObject *bkpy_Fuse_new(PyTypeObject *tp, PyObject *args, PyObject *kw);
PyObject *bkpy_Ribbon_new(PyTypeObject *tp, PyObject *args, PyObject *kw);

#endif
