/*
 * bloomkit._bloomkit: the CPython extension behind `import bloomkit`.
 *
 * Written against the public bloomkit API only (the headers in include/bloomkit). Every Python filter object
 * owns one generic handle (bk_filter), so saving, loading, mapping and the batch calls are the same
 * code for every type; type-specific calls go through bk_filter_get.
 *
 * Keys (one rule for single keys, batches and the module's hash64):
 *   str                     its UTF-8 bytes (what the bloomkit command reads from a line)
 *   bytes, bytearray,
 *   memoryview, buffers     their bytes
 *   int                     8 bytes, little-endian: two's complement for -2**63 .. 2**63-1,
 *                           unsigned for 2**63 .. 2**64-1 (so -1 and 2**64-1 are the same key)
 *   items of an integer
 *   buffer (numpy int/uint) the same 8 bytes as the int of the same value, whatever the item width
 *   items of a bytes buffer
 *   ('Ns', numpy 'SN')      the item's N bytes
 *
 * Concurrency. The GIL serialises every call that keeps it. Calls that drop it while the library works
 * (batches of at least NOGIL_MIN keys, save, bytes, load) register themselves in the object's
 * readers/writers counters (changed only while holding the GIL) and then take the object's rwlock
 * without the GIL. A call that keeps the GIL takes no lock when no GIL-free call of a conflicting kind is
 * registered (the common case: two integer checks); otherwise it drops the GIL, takes the rwlock like
 * them, and takes the GIL back. So queries from many threads run in parallel outside the GIL, and
 * nothing ever runs a mutation alongside another call on the same filter.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <bloomkit/bloomkit.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define MODULE_NAME "bloomkit._bloomkit"

/* Batches smaller than this keep the GIL: dropping and taking it back costs more than they do. */
#define NOGIL_MIN 256
/* Keys converted per step of a batch given as a Python sequence or iterator (the GIL is dropped once
 * per step): 16384 keys hold 512 KiB of pointers, lengths, integers and references. */
#define STEP_KEYS 16384
/* Hashes computed per call into the library for buffer batches (on the stack). */
#define HASH_CHUNK 256

/* ---------------------------------------------------------------------------------------------- */
/* Exceptions                                                                                     */
/* ---------------------------------------------------------------------------------------------- */

static PyObject *Error;               /* bloomkit.Error: base of everything the library reports */
static PyObject *FileFormatError;     /* the bytes of a file or buffer are not a filter we can use */
static PyObject *DamagedFileError;    /* ... because they are damaged (corrupt, checksum, truncated) */
static PyObject *UnsupportedFileError;/* ... because of a newer format version, type or hash */
static PyObject *FullError;           /* the filter cannot take another key */
static PyObject *IncompatibleError;   /* set operation between filters of different geometry */
static PyObject *UnsupportedOperation;/* the type (or a read-only mapping) cannot do this */

/* What a failing call was doing: decides between ValueError and FullError for BK_ETOOBIG, and
 * whether type/version errors are about a file. */
typedef enum { CTX_ARGS, CTX_ADD, CTX_FILE, CTX_OTHER } err_ctx;

static PyObject *raise_bk(bk_status s, err_ctx ctx, const char *what)
{
    PyObject *type;
    switch (s) {
    case BK_ENOMEM:
        return PyErr_NoMemory();
    case BK_EIO:
        if (errno == 0) errno = EIO;
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, what);
    case BK_EINVAL:
        type = PyExc_ValueError;
        break;
    case BK_ETOOBIG:
        type = ctx == CTX_ADD ? FullError : ctx == CTX_FILE ? DamagedFileError : PyExc_ValueError;
        break;
    case BK_EFULL:
        type = FullError;
        break;
    case BK_EINCOMPAT:
        type = IncompatibleError;
        break;
    case BK_ECORRUPT:
    case BK_ECHECKSUM:
    case BK_ETRUNCATED:
        type = DamagedFileError;
        break;
    case BK_EVERSION:
        type = UnsupportedFileError;
        break;
    case BK_ETYPE:
    case BK_ENOTSUP:
        type = ctx == CTX_FILE ? UnsupportedFileError : UnsupportedOperation;
        break;
    default:
        type = Error;
        break;
    }
    PyObject *msg = what ? PyUnicode_FromFormat("%s: %s", what, bk_strerror(s))
                         : PyUnicode_FromString(bk_strerror(s));
    if (!msg) return NULL;
    PyObject *exc = PyObject_CallOneArg(type, msg);
    Py_DECREF(msg);
    if (!exc) return NULL;
    if (PyObject_IsInstance(exc, Error) == 1) {
        PyObject *code = PyLong_FromLong((long)s);
        if (!code || PyObject_SetAttrString(exc, "status", code) < 0) {
            Py_XDECREF(code);
            Py_DECREF(exc);
            return NULL;
        }
        Py_DECREF(code);
    }
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------- */
/* Keys                                                                                           */
/* ---------------------------------------------------------------------------------------------- */

static inline void store_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* The 8 little-endian bytes of an int key. */
static int int_key(PyObject *v, unsigned char out[8])
{
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    uint64_t u;
    if (overflow == 0) {
        if (x == -1 && PyErr_Occurred()) return -1;
        u = (uint64_t)x;
    } else if (overflow > 0) {
        unsigned long long y = PyLong_AsUnsignedLongLong(v);
        if (y == (unsigned long long)-1 && PyErr_Occurred()) goto range;
        u = (uint64_t)y;
    } else {
        goto range;
    }
    store_le64(out, u);
    return 0;
range:
    PyErr_Clear();
    PyErr_SetString(PyExc_OverflowError, "int keys must be in -2**63 .. 2**64-1 (8 bytes)");
    return -1;
}

/* One key, converted for a single call. `buf` is released by key_done. */
typedef struct {
    const void *p;
    size_t n;
    unsigned char ibuf[8];
    Py_buffer view;
    int has_view;
} key_t_;

static int key_get(PyObject *k, key_t_ *key)
{
    key->has_view = 0;
    if (PyUnicode_Check(k)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(k, &n);
        if (!s) return -1;
        key->p = s;
        key->n = (size_t)n;
        return 0;
    }
    if (PyBytes_Check(k)) {
        key->p = PyBytes_AS_STRING(k);
        key->n = (size_t)PyBytes_GET_SIZE(k);
        return 0;
    }
    if (PyLong_Check(k)) {
        if (int_key(k, key->ibuf) < 0) return -1;
        key->p = key->ibuf;
        key->n = 8;
        return 0;
    }
    if (PyObject_CheckBuffer(k)) {
        if (PyObject_GetBuffer(k, &key->view, PyBUF_SIMPLE) < 0) return -1;
        key->has_view = 1;
        key->p = key->view.buf;
        key->n = (size_t)key->view.len;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "a key is str, bytes, bytearray, memoryview or int, not %.100s",
                 Py_TYPE(k)->tp_name);
    return -1;
}

static inline void key_done(key_t_ *key)
{
    if (key->has_view) PyBuffer_Release(&key->view);
}

/* ---------------------------------------------------------------------------------------------- */
/* The filter object                                                                              */
/* ---------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    bk_filter *f;             /* NULL once closed */
    bk_type type;
    int readers;              /* GIL-free readers registered (changed with the GIL held) */
    int writers;              /* GIL-free writers registered */
    pthread_rwlock_t lock;
    PyObject *weakrefs;
} FilterObject;

static PyTypeObject FilterType, BloomType, BlockedType, CountingType, ScalableType, CuckooType, FuseType, AgingType,
    QuotientType;

static PyTypeObject *type_for(bk_type t)
{
    switch (t) {
    case BK_TYPE_BLOOM: return &BloomType;
    case BK_TYPE_BLOCKED: return &BlockedType;
    case BK_TYPE_COUNTING: return &CountingType;
    case BK_TYPE_SCALABLE: return &ScalableType;
    case BK_TYPE_CUCKOO: return &CuckooType;
    case BK_TYPE_FUSE: return &FuseType;
    case BK_TYPE_AGING: return &AgingType;
    case BK_TYPE_QUOTIENT: return &QuotientType;
    default: return NULL;
    }
}

static int closed_error(void)
{
    PyErr_SetString(PyExc_ValueError, "operation on a closed filter");
    return -1;
}

/* Lock states of a call that keeps the GIL. */
enum { LK_NONE = 0, LK_HELD = 1 };

/* The lock of a call that keeps the GIL, taken only when a GIL-free call may be running alongside:
 * a writer (for a read), any GIL-free call (for a write). LK_HELD or LK_NONE, -1 (exception set) when
 * the filter is closed. */
static int enter(FilterObject *o, int write)
{
    int held = LK_NONE;
    if (o->writers || (write && o->readers)) {
        Py_BEGIN_ALLOW_THREADS
        if (write) pthread_rwlock_wrlock(&o->lock);
        else pthread_rwlock_rdlock(&o->lock);
        Py_END_ALLOW_THREADS
        held = LK_HELD;
    }
    if (!o->f) {
        if (held) pthread_rwlock_unlock(&o->lock);
        return closed_error();
    }
    return held;
}
static int enter_read(FilterObject *o) { return enter(o, 0); }
/* A one-key call's key argument and lock (enter): held, or -1 with an exception set and nothing to
 * release. */
static int key_enter(FilterObject *o, PyObject *k, key_t_ *key, int write)
{
    if (key_get(k, key) < 0) return -1;
    int held = enter(o, write);
    if (held < 0) key_done(key);
    return held;
}
static int enter_write(FilterObject *o) { return enter(o, 1); }

static inline void leave(FilterObject *o, int held)
{
    if (held) pthread_rwlock_unlock(&o->lock);
}

/* A GIL-free section: register (with the GIL), then nogil_lock/nogil_unlock around the work (without
 * the GIL), then unregister (with the GIL). */
static int nogil_register(FilterObject *o, int write)
{
    if (!o->f) return closed_error();
    if (write) o->writers++;
    else o->readers++;
    return 0;
}
static void nogil_unregister(FilterObject *o, int write)
{
    if (write) o->writers--;
    else o->readers--;
}
static inline bk_filter *nogil_lock(FilterObject *o, int write)
{
    if (write) pthread_rwlock_wrlock(&o->lock);
    else pthread_rwlock_rdlock(&o->lock);
    return o->f;
}
static inline void nogil_unlock(FilterObject *o)
{
    pthread_rwlock_unlock(&o->lock);
}

static FilterObject *filter_alloc(PyTypeObject *tp)
{
    FilterObject *o = (FilterObject *)tp->tp_alloc(tp, 0);
    if (!o) return NULL;
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
#ifdef PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    int rc = pthread_rwlock_init(&o->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    if (rc != 0) {
        Py_TYPE(o)->tp_free((PyObject *)o);
        PyErr_NoMemory();
        return NULL;
    }
    o->f = NULL;
    o->readers = o->writers = 0;
    o->weakrefs = NULL;
    return o;
}

/* A new Python object of class tp owning h (taken even on failure). */
static PyObject *object_of(PyTypeObject *tp, bk_type t, bk_filter *h)
{
    FilterObject *o = filter_alloc(tp);
    if (!o) {
        bk_filter_free(h);
        return NULL;
    }
    o->f = h;
    o->type = t;
    return (PyObject *)o;
}

/* A new Python object of the right class owning h (taken even on failure). */
static PyObject *wrap_handle(bk_filter *h)
{
    bk_type t = bk_filter_type(h);
    PyTypeObject *tp = type_for(t);
    if (!tp) {
        bk_filter_free(h);
        return raise_bk(BK_ETYPE, CTX_FILE, NULL);
    }
    return object_of(tp, t, h);
}

/* Wrap a typed filter into a new handle and Python object (the typed filter is freed on failure). */
typedef void (*typed_free_fn)(void *);
static PyObject *wrap_typed(PyTypeObject *tp, bk_type t, void *typed, typed_free_fn fr)
{
    bk_filter *h;
    bk_status s = bk_filter_wrap(t, typed, &h);
    if (s != BK_OK) {
        fr(typed);
        return raise_bk(s, CTX_OTHER, "wrap");
    }
    return object_of(tp, t, h);
}

static void free_bloom(void *p) { bk_bloom_free(p); }
static void free_blocked(void *p) { bk_blocked_free(p); }
static void free_counting(void *p) { bk_counting_free(p); }
static void free_scalable(void *p) { bk_scalable_free(p); }
static void free_cuckoo(void *p) { bk_cuckoo_free(p); }
static void free_fuse(void *p) { bk_fuse_free(p); }
static void free_aging(void *p) { bk_aging_free(p); }
static void free_quotient(void *p) { bk_quotient_free(p); }

static void Filter_dealloc(FilterObject *o)
{
    if (o->weakrefs) PyObject_ClearWeakRefs((PyObject *)o);
    if (o->f) bk_filter_free(o->f);
    o->f = NULL;
    pthread_rwlock_destroy(&o->lock);
    Py_TYPE(o)->tp_free((PyObject *)o);
}


/* ---------------------------------------------------------------------------------------------- */
/* Argument helpers                                                                               */
/* ---------------------------------------------------------------------------------------------- */

/* An unsigned 64-bit argument; ValueError for negatives and non-integers. */
static int get_u64(PyObject *v, const char *name, uint64_t *out)
{
    if (!PyLong_Check(v) || PyBool_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", name, Py_TYPE(v)->tp_name);
        return -1;
    }
    unsigned long long x = PyLong_AsUnsignedLongLong(v);
    if (x == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s must be in 0 .. 2**64-1", name);
        return -1;
    }
    *out = (uint64_t)x;
    return 0;
}

static int get_u32(PyObject *v, const char *name, uint32_t *out)
{
    uint64_t x;
    if (get_u64(v, name, &x) < 0) return -1;
    if (x > UINT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s is too large", name);
        return -1;
    }
    *out = (uint32_t)x;
    return 0;
}

static int check_capacity_rate(uint64_t n, double p, int allow_zero_p)
{
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "capacity must be at least 1");
        return -1;
    }
    if (!(p > 0.0 && p < 1.0) && !(allow_zero_p && p == 0.0)) {
        PyErr_SetString(PyExc_ValueError, "error_rate must be strictly between 0 and 1");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Constructors                                                                                   */
/* ---------------------------------------------------------------------------------------------- */

static PyObject *Bloom_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"capacity", "error_rate", "layout", "seed", NULL};
    PyObject *capo, *seedo = NULL;
    double p = 0.01;
    const char *layout = "standard";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d$sO:Bloom", kwlist, &capo, &p, &layout, &seedo))
        return NULL;
    uint64_t n, seed = 0;
    if (get_u64(capo, "capacity", &n) < 0 || (seedo && get_u64(seedo, "seed", &seed) < 0)) return NULL;
    if (check_capacity_rate(n, p, 0) < 0) return NULL;
    bk_bloom_options o = { .layout = BK_LAYOUT_STANDARD, .seed = seed };
    if (strcmp(layout, "partitioned") == 0) o.layout = BK_LAYOUT_PARTITIONED;
    else if (strcmp(layout, "standard") != 0) {
        PyErr_Format(PyExc_ValueError, "layout must be 'standard' or 'partitioned', not '%s'", layout);
        return NULL;
    }
    bk_bloom *b;
    bk_status s = bk_bloom_new(n, p, &o, &b);
    if (s != BK_OK) return raise_bk(s, CTX_ARGS, "Bloom");
    return wrap_typed(tp, BK_TYPE_BLOOM, b, free_bloom);
}

static PyObject *Blocked_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"capacity", "error_rate", "block_bits", "seed", NULL};
    PyObject *capo, *seedo = NULL;
    double p = 0.01;
    int block_bits = 256;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d$iO:Blocked", kwlist, &capo, &p, &block_bits, &seedo))
        return NULL;
    uint64_t n, seed = 0;
    if (get_u64(capo, "capacity", &n) < 0 || (seedo && get_u64(seedo, "seed", &seed) < 0)) return NULL;
    if (check_capacity_rate(n, p, 0) < 0) return NULL;
    bk_blocked_options o = BK_BLOCKED_OPTIONS_INIT;
    o.seed = seed;
    if (block_bits == 512) o.layout = BK_BLOCKED_512;
    else if (block_bits == 256) o.layout = BK_BLOCKED_SPLIT256;
    else {
        PyErr_Format(PyExc_ValueError, "block_bits must be 256 or 512, not %d", block_bits);
        return NULL;
    }
    bk_blocked *b;
    bk_status s = bk_blocked_new(n, p, &o, &b);
    if (s != BK_OK) return raise_bk(s, CTX_ARGS, "Blocked");
    return wrap_typed(tp, BK_TYPE_BLOCKED, b, free_blocked);
}

static PyObject *Counting_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"capacity", "error_rate", "counter_bits", "seed", NULL};
    PyObject *capo, *seedo = NULL;
    double p = 0.01;
    int bits = 4;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d$iO:Counting", kwlist, &capo, &p, &bits, &seedo))
        return NULL;
    uint64_t n, seed = 0;
    if (get_u64(capo, "capacity", &n) < 0 || (seedo && get_u64(seedo, "seed", &seed) < 0)) return NULL;
    if (check_capacity_rate(n, p, 0) < 0) return NULL;
    if (bits != 4 && bits != 8) {
        PyErr_Format(PyExc_ValueError, "counter_bits must be 4 or 8, not %d", bits);
        return NULL;
    }
    bk_counting_options o = { .counter_bits = (uint32_t)bits, .seed = seed };
    bk_counting *c;
    bk_status s = bk_counting_new(n, p, &o, &c);
    if (s != BK_OK) return raise_bk(s, CTX_ARGS, "Counting");
    return wrap_typed(tp, BK_TYPE_COUNTING, c, free_counting);
}

static PyObject *Scalable_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"capacity", "error_rate", "growth", "tightening", "max_bytes", "nonscaling",
                             "classic", "seed", NULL};
    PyObject *capo = NULL, *seedo = NULL, *maxo = Py_None;
    double p = 0.01;
    bk_scalable_options o = bk_scalable_default_options();
    int growth = (int)o.growth, nonscaling = 0, classic = 0;
    double r = o.tightening;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Od$idOppO:Scalable", kwlist, &capo, &p, &growth, &r, &maxo,
                                     &nonscaling, &classic, &seedo))
        return NULL;
    uint64_t n = 100;
    if (capo && get_u64(capo, "capacity", &n) < 0) return NULL;
    if (seedo && get_u64(seedo, "seed", &o.seed) < 0) return NULL;
    if (maxo != Py_None && get_u64(maxo, "max_bytes", &o.max_bytes) < 0) return NULL;
    if (check_capacity_rate(n, p, 0) < 0) return NULL;
    if (growth < 1 || growth > BK_SCALABLE_MAX_GROWTH) {
        PyErr_Format(PyExc_ValueError, "growth must be 1 .. %d, not %d", BK_SCALABLE_MAX_GROWTH, growth);
        return NULL;
    }
    if (!(r > 0.0 && r < 1.0)) {
        PyErr_SetString(PyExc_ValueError, "tightening must be strictly between 0 and 1");
        return NULL;
    }
    o.growth = (uint32_t)growth;
    o.tightening = r;
    o.flags = (nonscaling ? BK_SCALABLE_NONSCALING : 0u) | (classic ? BK_SCALABLE_CLASSIC : 0u);
    bk_scalable *sf;
    bk_status s = bk_scalable_new(n, p, &o, &sf);
    if (s != BK_OK) return raise_bk(s, CTX_ARGS, "Scalable");
    return wrap_typed(tp, BK_TYPE_SCALABLE, sf, free_scalable);
}

static PyObject *Cuckoo_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"capacity", "error_rate", "bucket_size", "fingerprint_bits", "max_kicks",
                             "expansion", "load_factor", "seed", NULL};
    PyObject *capo, *seedo = NULL, *bso = NULL, *fbo = Py_None, *mko = NULL, *exo = NULL, *lfo = Py_None;
    double p = 0.01, lf = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d$OOOOOO:Cuckoo", kwlist, &capo, &p, &bso, &fbo, &mko, &exo,
                                     &lfo, &seedo))
        return NULL;
    if (lfo != Py_None && (lf = PyFloat_AsDouble(lfo)) == -1.0 && PyErr_Occurred()) return NULL;
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    uint64_t n;
    if (get_u64(capo, "capacity", &n) < 0) return NULL;
    if (seedo && get_u64(seedo, "seed", &o.seed) < 0) return NULL;
    if (bso && get_u32(bso, "bucket_size", &o.bucket_size) < 0) return NULL;
    if (fbo != Py_None && get_u32(fbo, "fingerprint_bits", &o.fingerprint_bits) < 0) return NULL;
    if (mko && get_u32(mko, "max_kicks", &o.max_kicks) < 0) return NULL;
    if (exo && get_u32(exo, "expansion", &o.expansion) < 0) return NULL;
    if (check_capacity_rate(n, p, o.fingerprint_bits != 0) < 0) return NULL;
    if (bso && (o.bucket_size < 1 || o.bucket_size > BK_CUCKOO_MAX_BUCKET_SIZE)) {
        PyErr_Format(PyExc_ValueError, "bucket_size must be 1 .. %d", BK_CUCKOO_MAX_BUCKET_SIZE);
        return NULL;
    }
    if (fbo != Py_None && (o.fingerprint_bits < BK_CUCKOO_MIN_FINGERPRINT_BITS ||
                           o.fingerprint_bits > BK_CUCKOO_MAX_FINGERPRINT_BITS)) {
        PyErr_SetString(PyExc_ValueError, "fingerprint_bits must be 4 to 32");
        return NULL;
    }
    if (mko && (o.max_kicks < 1 || o.max_kicks > BK_CUCKOO_MAX_KICKS)) {
        PyErr_Format(PyExc_ValueError, "max_kicks must be 1 .. %d", BK_CUCKOO_MAX_KICKS);
        return NULL;
    }
    if (o.expansion > BK_CUCKOO_MAX_EXPANSION) {
        PyErr_Format(PyExc_ValueError, "expansion must be 0 .. %d", BK_CUCKOO_MAX_EXPANSION);
        return NULL;
    }
    if (lf != 0.0 && !(lf > 0.0 && lf <= 1.0)) {
        PyErr_SetString(PyExc_ValueError, "load_factor must be in (0, 1]");
        return NULL;
    }
    o.load_factor = lf;
    bk_cuckoo *c;
    bk_status s = bk_cuckoo_new(n, p, &o, &c);
    if (s != BK_OK) return raise_bk(s, CTX_ARGS, "Cuckoo");
    return wrap_typed(tp, BK_TYPE_CUCKOO, c, free_cuckoo);
}

static PyObject *Aging_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"window", "error_rate", "window_ms", "capacity", "generations", "seed", NULL};
    PyObject *wo = Py_None, *wmso = Py_None, *capo = Py_None, *seedo = NULL, *go = NULL;
    double p = 0.01;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Od$OOOO:Aging", kwlist, &wo, &p, &wmso, &capo, &go, &seedo))
        return NULL;
    bk_aging_options o = BK_AGING_OPTIONS_INIT;
    if (seedo && get_u64(seedo, "seed", &o.seed) < 0) return NULL;
    if (go && get_u32(go, "generations", &o.generations) < 0) return NULL;
    if (go && (o.generations < 2 || o.generations > BK_AGING_MAX_GENERATIONS)) {
        PyErr_Format(PyExc_ValueError, "generations must be 2 .. %d", BK_AGING_MAX_GENERATIONS);
        return NULL;
    }
    if ((wo == Py_None) == (wmso == Py_None)) {
        PyErr_SetString(PyExc_ValueError, "give either window (the last W insertions) or window_ms and capacity "
                                          "(the last T milliseconds)");
        return NULL;
    }
    bk_aging *a;
    bk_status s;
    if (wo != Py_None) {
        uint64_t w;
        if (get_u64(wo, "window", &w) < 0 || check_capacity_rate(w, p, 0) < 0) return NULL;
        if (capo != Py_None) {
            PyErr_SetString(PyExc_ValueError, "capacity is for time windows (window_ms)");
            return NULL;
        }
        s = bk_aging_new_count(w, p, &o, &a);
    } else {
        uint64_t ms, n;
        if (capo == Py_None) {
            PyErr_SetString(PyExc_ValueError, "a time window needs capacity: the keys expected per window");
            return NULL;
        }
        if (get_u64(wmso, "window_ms", &ms) < 0 || get_u64(capo, "capacity", &n) < 0) return NULL;
        if (check_capacity_rate(n, p, 0) < 0) return NULL;
        s = bk_aging_new_time(ms, n, p, &o, &a);
    }
    if (s != BK_OK) return raise_bk(s, CTX_ARGS, "Aging");
    return wrap_typed(tp, BK_TYPE_AGING, a, free_aging);
}

static PyObject *Quotient_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"capacity", "error_rate", "remainder_bits", "max_load", "seed", NULL};
    PyObject *capo, *rbo = Py_None, *seedo = NULL, *mlo = Py_None;
    double p = 0.01, ml = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d$OOO:Quotient", kwlist, &capo, &p, &rbo, &mlo, &seedo))
        return NULL;
    if (mlo != Py_None && (ml = PyFloat_AsDouble(mlo)) == -1.0 && PyErr_Occurred()) return NULL;
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    uint64_t n;
    if (get_u64(capo, "capacity", &n) < 0) return NULL;
    if (seedo && get_u64(seedo, "seed", &o.seed) < 0) return NULL;
    if (rbo != Py_None && get_u32(rbo, "remainder_bits", &o.remainder_bits) < 0) return NULL;
    if (rbo != Py_None && (o.remainder_bits < 2 || o.remainder_bits > 32)) {
        PyErr_SetString(PyExc_ValueError, "remainder_bits must be 2 .. 32");
        return NULL;
    }
    if (ml != 0.0 && !(ml > 0.0 && ml <= 1.0)) {
        PyErr_SetString(PyExc_ValueError, "max_load must be in (0, 1]");
        return NULL;
    }
    o.max_load = ml;
    if (check_capacity_rate(n, p, 0) < 0) return NULL;
    bk_quotient *q;
    bk_status s = bk_quotient_new(n, p, &o, &q);
    if (s != BK_OK) return raise_bk(s, CTX_ARGS, "Quotient");
    return wrap_typed(tp, BK_TYPE_QUOTIENT, q, free_quotient);
}

/* ---------------------------------------------------------------------------------------------- */
/* Batches                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

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

static int step_init(step_t *st, size_t cap)
{
    memset(st, 0, sizeof *st);
    if (cap == 0) cap = 1;
    st->cap = cap;
    st->ptr = PyMem_RawMalloc(cap * sizeof *st->ptr);
    st->len = PyMem_RawMalloc(cap * sizeof *st->len);
    st->ints = PyMem_RawMalloc(cap * 8);
    st->refs = PyMem_RawMalloc(cap * sizeof *st->refs);
    if (!st->ptr || !st->len || !st->ints || !st->refs) {
        PyMem_RawFree(st->ptr);
        PyMem_RawFree(st->len);
        PyMem_RawFree(st->ints);
        PyMem_RawFree(st->refs);
        memset(st, 0, sizeof *st);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void step_release(step_t *st)
{
    for (size_t i = 0; i < st->nrefs; i++) Py_DECREF(st->refs[i]);
    st->nrefs = 0;
    st->n = 0;
}

static void step_free(step_t *st)
{
    step_release(st);
    PyMem_RawFree(st->ptr);
    PyMem_RawFree(st->len);
    PyMem_RawFree(st->ints);
    PyMem_RawFree(st->refs);
    memset(st, 0, sizeof *st);
}

/* Append one key. `hold`: keep a reference to the object (its bytes are used after the GIL is dropped
 * while another thread may drop the container's own reference). */
static int step_add(step_t *st, PyObject *item, int hold)
{
    size_t i = st->n;
    if (PyUnicode_Check(item)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(item, &n);
        if (!s) return -1;
        st->ptr[i] = s;
        st->len[i] = (size_t)n;
    } else if (PyBytes_Check(item)) {
        st->ptr[i] = PyBytes_AS_STRING(item);
        st->len[i] = (size_t)PyBytes_GET_SIZE(item);
    } else if (PyLong_Check(item)) {
        if (int_key(item, st->ints + 8 * i) < 0) return -1;
        st->ptr[i] = st->ints + 8 * i;
        st->len[i] = 8;
        hold = 0;
    } else if (PyObject_CheckBuffer(item)) {
        /* a private copy: the exporter (a bytearray) could be resized meanwhile */
        PyObject *copy = PyBytes_FromObject(item);
        if (!copy) return -1;
        st->ptr[i] = PyBytes_AS_STRING(copy);
        st->len[i] = (size_t)PyBytes_GET_SIZE(copy);
        st->refs[st->nrefs++] = copy;
        st->n++;
        return 0;
    } else {
        PyErr_Format(PyExc_TypeError, "a key is str, bytes, bytearray, memoryview or int, not %.100s",
                     Py_TYPE(item)->tp_name);
        return -1;
    }
    if (hold) {
        Py_INCREF(item);
        st->refs[st->nrefs++] = item;
    }
    st->n++;
    return 0;
}

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

/* Parse a buffer's item format: integers (any width, either byte order) or fixed-width bytes. */
static int parse_format(source_t *src)
{
    const char *fmt = src->view.format ? src->view.format : "B";
    int big = 0;
    if (*fmt == '@' || *fmt == '=' || *fmt == '<') fmt++;
    else if (*fmt == '>' || *fmt == '!') {
        big = 1;
        fmt++;
    }
    const char *code = fmt;
    while (*code >= '0' && *code <= '9') code++;
    if (code[0] && !code[1]) {
        switch (*code) {
        case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
            if (code != fmt) break;
            src->int_items = 1;
            src->is_signed = 1;
            break;
        case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': case '?':
            if (code != fmt) break;
            src->int_items = 1;
            src->is_signed = 0;
            break;
        case 's': case 'c':
            src->int_items = 0;
            break;
        default:
            goto bad;
        }
        if (src->int_items && src->itemsize > 8) goto bad;
        /* big-endian items are read most significant byte first (the library builds only on
         * little-endian hosts, so native items are little-endian) */
        src->swap = src->int_items && big;
        return 0;
    }
bad:
    PyErr_Format(PyExc_ValueError,
                 "buffer items of format '%s' are not keys: integer arrays (numpy int/uint) and fixed-width "
                 "bytes ('S' dtype) are; view other arrays as bytes, e.g. a.view('S%zd')",
                 src->view.format ? src->view.format : "B", src->view.itemsize);
    return -1;
}

/* Open a batch source. str, bytes and bytearray are refused (one key, not a batch of them). */
static int source_open(source_t *src, PyObject *obj, const char *what)
{
    memset(src, 0, sizeof *src);
    if (PyUnicode_Check(obj) || PyBytes_Check(obj) || PyByteArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s takes an iterable of keys or an array of them, not one %.50s key "
                     "(wrap it in a list)", what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (PyList_CheckExact(obj) || PyTuple_CheckExact(obj)) {
        Py_INCREF(obj);
        src->seq = obj;
        src->hold = PyList_CheckExact(obj);
        return 0;
    }
    if (PyObject_CheckBuffer(obj)) {
        if (PyObject_GetBuffer(obj, &src->view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
        src->has_view = 1;
        src->itemsize = (size_t)src->view.itemsize;
        if (src->itemsize == 0) {
            PyErr_SetString(PyExc_ValueError, "buffer items of size 0 are not keys");
            goto fail;
        }
        if (parse_format(src) < 0) goto fail;
        src->nitems = (size_t)src->view.len / src->itemsize;
        return 0;
    fail:
        PyBuffer_Release(&src->view);
        src->has_view = 0;
        return -1;
    }
    src->iter = PyObject_GetIter(obj);
    if (!src->iter) return -1;
    src->hold = 1;
    return 0;
}

static void source_close(source_t *src)
{
    Py_CLEAR(src->seq);
    Py_CLEAR(src->iter);
    if (src->has_view) PyBuffer_Release(&src->view);
    src->has_view = 0;
}

/* Fill the next step from a sequence or iterator (with the GIL). Returns the keys in it (0: the end),
 * -1 on error. */
static Py_ssize_t source_fill(source_t *src, step_t *st)
{
    step_release(st);
    if (src->seq) {
        Py_ssize_t total = PySequence_Fast_GET_SIZE(src->seq);
        PyObject **items = PySequence_Fast_ITEMS(src->seq);
        while (st->n < st->cap && src->pos < total) {
            if (step_add(st, items[src->pos], src->hold) < 0) return -1;
            src->pos++;
            /* a list could shrink under a conversion that ran Python code (none of ours does) */
            total = PySequence_Fast_GET_SIZE(src->seq);
            items = PySequence_Fast_ITEMS(src->seq);
        }
        return (Py_ssize_t)st->n;
    }
    while (st->n < st->cap) {
        PyObject *item = PyIter_Next(src->iter);
        if (!item) {
            if (PyErr_Occurred()) return -1;
            break;
        }
        int rc = step_add(st, item, 1);
        Py_DECREF(item);
        if (rc < 0) return -1;
    }
    return (Py_ssize_t)st->n;
}

/* Hashes of buffer items [i, i + n) with the filter's seed (no GIL needed). */
static void buffer_hashes(const source_t *src, size_t i, size_t n, uint64_t seed, uint64_t *out)
{
    const unsigned char *base = (const unsigned char *)src->view.buf + i * src->itemsize;
    size_t w = src->itemsize;
    if (!src->int_items) {
        for (size_t j = 0; j < n; j++) out[j] = bk_hash64(base + j * w, w, seed);
        return;
    }
    if (w == 8 && !src->swap) {
        for (size_t j = 0; j < n; j++) out[j] = bk_hash64(base + j * 8, 8, seed);
        return;
    }
    for (size_t j = 0; j < n; j++) {
        const unsigned char *p = base + j * w;
        uint64_t v = 0;
        for (size_t b = 0; b < w; b++) {
            unsigned byte = src->swap ? p[w - 1 - b] : p[b];   /* b-th least significant byte */
            v |= (uint64_t)byte << (8 * b);
        }
        if (src->is_signed && w < 8 && (v >> (8 * w - 1)) & 1) v |= ~UINT64_C(0) << (8 * w);
        unsigned char le[8];
        store_le64(le, v);
        out[j] = bk_hash64(le, 8, seed);
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Query and insert                                                                               */
/* ---------------------------------------------------------------------------------------------- */

static int Filter_sq_contains(FilterObject *o, PyObject *k)
{
    key_t_ key;
    int held = key_enter(o, k, &key, 0);
    if (held < 0) return -1;
    int r = bk_filter_contains(o->f, key.p, key.n);
    leave(o, held);
    key_done(&key);
    return r;
}

static PyObject *Filter_contains(FilterObject *o, PyObject *k)
{
    int r = Filter_sq_contains(o, k);
    if (r < 0) return NULL;
    return PyBool_FromLong(r);
}

static PyObject *Filter_add(FilterObject *o, PyObject *k)
{
    key_t_ key;
    int held = key_enter(o, k, &key, 1);
    if (held < 0) return NULL;
    bk_status s = bk_filter_add(o->f, key.p, key.n);
    leave(o, held);
    key_done(&key);
    if (s != BK_OK) return raise_bk(s, CTX_ADD, "add");
    Py_RETURN_NONE;
}

/* Insert unless probably present; True if the key was new. */
static PyObject *Filter_add_if_absent(FilterObject *o, PyObject *k)
{
    key_t_ key;
    int held = key_enter(o, k, &key, 1);
    if (held < 0) return NULL;
    bk_status s;
    void *typed;
    if ((typed = bk_filter_get(o->f, BK_TYPE_AGING)) && bk_filter_backing(o->f) == BK_BACKING_MEMORY)
        s = bk_aging_add_if_absent(typed, key.p, key.n);
    else if ((typed = bk_filter_get(o->f, BK_TYPE_SCALABLE)) && bk_filter_backing(o->f) == BK_BACKING_MEMORY)
        s = bk_scalable_add_if_absent(typed, key.p, key.n);
    else if ((typed = bk_filter_get(o->f, BK_TYPE_CUCKOO)) && bk_filter_backing(o->f) == BK_BACKING_MEMORY)
        s = bk_cuckoo_add_if_absent(typed, key.p, key.n);
    else if (bk_filter_contains(o->f, key.p, key.n))
        s = BK_EEXISTS;
    else
        s = bk_filter_add(o->f, key.p, key.n);
    leave(o, held);
    key_done(&key);
    if (s == BK_EEXISTS) Py_RETURN_FALSE;
    if (s != BK_OK) return raise_bk(s, CTX_ADD, "add_if_absent");
    Py_RETURN_TRUE;
}

static PyObject *do_remove(FilterObject *o, PyObject *k, int raise_missing)
{
    key_t_ key;
    int held = key_enter(o, k, &key, 1);
    if (held < 0) return NULL;
    bk_status s = bk_filter_remove(o->f, key.p, key.n);
    leave(o, held);
    key_done(&key);
    if (s == BK_ENOTFOUND) {
        if (!raise_missing) Py_RETURN_FALSE;
        PyErr_SetObject(PyExc_KeyError, k);
        return NULL;
    }
    if (s != BK_OK) return raise_bk(s, CTX_OTHER, "remove");
    if (!raise_missing) Py_RETURN_TRUE;
    Py_RETURN_NONE;
}

static PyObject *Filter_remove(FilterObject *o, PyObject *k) { return do_remove(o, k, 1); }
static PyObject *Filter_discard(FilterObject *o, PyObject *k) { return do_remove(o, k, 0); }

/* The output of contains_many: a new bytearray, or the caller's writable buffer of bytes. */
typedef struct {
    PyObject *obj;     /* what is returned */
    Py_buffer view;
    int has_view;
    uint8_t *data;
    size_t cap;        /* bytes available */
    size_t used;
} results_t;

static int results_open(results_t *r, PyObject *out, size_t n_hint)
{
    memset(r, 0, sizeof *r);
    if (out && out != Py_None) {
        if (PyObject_GetBuffer(out, &r->view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return -1;
        r->has_view = 1;
        if (r->view.itemsize != 1) {
            PyBuffer_Release(&r->view);
            r->has_view = 0;
            PyErr_SetString(PyExc_ValueError, "out must be a writable buffer of 1-byte items (bytearray, "
                            "numpy bool or uint8 array)");
            return -1;
        }
        Py_INCREF(out);
        r->obj = out;
        r->data = r->view.buf;
        r->cap = (size_t)r->view.len;
        return 0;
    }
    r->obj = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)n_hint);
    if (!r->obj) return -1;
    r->data = (uint8_t *)PyByteArray_AS_STRING(r->obj);
    r->cap = n_hint;
    return 0;
}

/* Room for `more` results (with the GIL: may resize the bytearray). */
static int results_reserve(results_t *r, size_t more)
{
    if (r->used + more <= r->cap) return 0;
    if (r->has_view) {
        PyErr_SetString(PyExc_ValueError, "out is shorter than the number of keys");
        return -1;
    }
    size_t want = r->cap * 2 > r->used + more ? r->cap * 2 : r->used + more;
    if (PyByteArray_Resize(r->obj, (Py_ssize_t)want) < 0) return -1;
    r->data = (uint8_t *)PyByteArray_AS_STRING(r->obj);
    r->cap = want;
    return 0;
}

static PyObject *results_finish(results_t *r)
{
    if (r->has_view) {
        PyBuffer_Release(&r->view);
        r->has_view = 0;
    } else if (r->used != r->cap && PyByteArray_Resize(r->obj, (Py_ssize_t)r->used) < 0) {
        Py_CLEAR(r->obj);
        return NULL;
    }
    PyObject *o = r->obj;
    r->obj = NULL;
    return o;
}

static void results_abort(results_t *r)
{
    if (r->has_view) PyBuffer_Release(&r->view);
    r->has_view = 0;
    Py_CLEAR(r->obj);
}

/* Work on a buffer of items: contains (results != NULL) or add. With nogil, the whole batch runs
 * without the GIL. Returns a bk_status; sets *closed if the filter was closed meanwhile. */
static bk_status buffer_batch(FilterObject *o, const source_t *src, uint8_t *results, int nogil, int *closed)
{
    const int write = results == NULL;
    bk_status s = BK_OK;
    uint64_t h[HASH_CHUNK];
    bk_filter *f = o->f;
    PyThreadState *ts = NULL;
    if (nogil) {
        ts = PyEval_SaveThread();
        f = nogil_lock(o, write);
    }
    if (!f) {
        *closed = 1;
    } else {
        uint64_t seed = bk_filter_seed(f);
        for (size_t i = 0; i < src->nitems; i += HASH_CHUNK) {
            size_t m = src->nitems - i < HASH_CHUNK ? src->nitems - i : HASH_CHUNK;
            buffer_hashes(src, i, m, seed, h);
            if (write) {
                s = bk_filter_add_hashes(f, h, m, NULL);
                if (s != BK_OK) break;
            } else {
                bk_filter_contains_hashes(f, h, m, results + i, NULL);
            }
        }
    }
    if (nogil) {
        nogil_unlock(o);
        PyEval_RestoreThread(ts);
    }
    return s;
}

/* contains_many / add_many for every kind of source. */
static PyObject *batch(FilterObject *o, PyObject *keys, PyObject *out, int write, const char *what)
{
    source_t src;
    if (!o->f) {
        closed_error();
        return NULL;
    }
    if (source_open(&src, keys, what) < 0) return NULL;
    results_t res;
    int have_res = 0;
    PyObject *ret = NULL;
    bk_status s = BK_OK;
    int closed = 0;

    if (src.has_view) {
        size_t n = src.nitems;
        if (!write) {
            if (results_open(&res, out, n) < 0) goto done;
            have_res = 1;
            if (results_reserve(&res, n) < 0) goto done;
        }
        int nogil = n >= NOGIL_MIN;
        int held = 0;
        if (nogil) {
            if (nogil_register(o, write) < 0) goto done;
        } else {
            held = write ? enter_write(o) : enter_read(o);
            if (held < 0) goto done;
        }
        s = buffer_batch(o, &src, write ? NULL : res.data, nogil, &closed);
        if (nogil) nogil_unregister(o, write);
        else leave(o, held);
        if (!write) res.used = n;
    } else {
        size_t hint = src.seq ? (size_t)PySequence_Fast_GET_SIZE(src.seq) : STEP_KEYS;
        step_t st;
        if (step_init(&st, hint < STEP_KEYS ? hint : STEP_KEYS) < 0) goto done;
        if (!write) {
            if (results_open(&res, out, src.seq ? hint : 0) < 0) {
                step_free(&st);
                goto done;
            }
            have_res = 1;
        }
        if (nogil_register(o, write) < 0) {
            step_free(&st);
            goto done;
        }
        for (;;) {
            Py_ssize_t m = source_fill(&src, &st);
            if (m < 0) break;
            if (m == 0) break;
            if (!write && results_reserve(&res, (size_t)m) < 0) {
                m = -1;
                break;
            }
            uint8_t *rp = write ? NULL : res.data + res.used;
            if (m >= NOGIL_MIN) {
                Py_BEGIN_ALLOW_THREADS
                bk_filter *f = nogil_lock(o, write);
                if (!f) closed = 1;
                else if (write) s = bk_filter_add_many(f, st.ptr, st.len, (size_t)m, NULL);
                else bk_filter_contains_many(f, st.ptr, st.len, (size_t)m, rp, NULL);
                nogil_unlock(o);
                Py_END_ALLOW_THREADS
            } else {
                /* registered as a GIL-free caller, so take the lock as they do (never contended for
                 * long: nobody holds it while waiting for the GIL) */
                bk_filter *f;
                Py_BEGIN_ALLOW_THREADS
                f = nogil_lock(o, write);
                Py_END_ALLOW_THREADS
                if (!f) closed = 1;
                else if (write) s = bk_filter_add_many(f, st.ptr, st.len, (size_t)m, NULL);
                else bk_filter_contains_many(f, st.ptr, st.len, (size_t)m, rp, NULL);
                nogil_unlock(o);
            }
            if (closed || s != BK_OK) break;
            if (!write) res.used += (size_t)m;
        }
        nogil_unregister(o, write);
        step_free(&st);
        if (PyErr_Occurred()) goto done;
    }
    if (closed) {
        closed_error();
        goto done;
    }
    if (s != BK_OK) {
        raise_bk(s, CTX_ADD, what);
        goto done;
    }
    if (write) {
        ret = Py_None;
        Py_INCREF(ret);
    } else {
        ret = results_finish(&res);
        have_res = 0;
    }
done:
    if (have_res) results_abort(&res);
    source_close(&src);
    return ret;
}

static PyObject *Filter_contains_many(FilterObject *o, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", "out", NULL};
    PyObject *keys, *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$O:contains_many", kwlist, &keys, &out)) return NULL;
    return batch(o, keys, out, 0, "contains_many");
}

static PyObject *Filter_add_many(FilterObject *o, PyObject *keys)
{
    return batch(o, keys, NULL, 1, "add_many");
}

/* ---------------------------------------------------------------------------------------------- */
/* Statistics and properties                                                                      */
/* ---------------------------------------------------------------------------------------------- */

static int get_stats(FilterObject *o, bk_stats *st)
{
    int held = enter_read(o);
    if (held < 0) return -1;
    bk_status s = bk_filter_stats(o->f, st);
    leave(o, held);
    if (s != BK_OK) {
        raise_bk(s, CTX_OTHER, "stats");
        return -1;
    }
    return 0;
}

static PyObject *Filter_stats(FilterObject *o, PyObject *unused)
{
    (void)unused;
    bk_stats st;
    if (get_stats(o, &st) < 0) return NULL;
    return Py_BuildValue(
        "{s:s,s:I,s:K,s:K,s:K,s:K,s:d,s:d,s:d,s:d,s:d,s:O,s:K,s:I,s:K}", "type", bk_type_name(st.type), "k",
        (unsigned)st.k, "capacity", (unsigned long long)st.capacity, "count", (unsigned long long)st.count,
        "bits", (unsigned long long)st.bits, "memory_bytes", (unsigned long long)st.memory_bytes,
        "bits_per_key", st.bits_per_key, "fill_ratio", st.fill_ratio, "est_cardinality", st.est_cardinality,
        "fpr_target", st.fpr_target, "fpr_now", st.fpr_now, "saturated", st.saturated ? Py_True : Py_False,
        "saturated_cells", (unsigned long long)st.saturated_cells, "subfilters", (unsigned)st.subfilters,
        "seed", (unsigned long long)st.seed);
}

static Py_ssize_t Filter_len(FilterObject *o)
{
    bk_stats st;
    if (get_stats(o, &st) < 0) return -1;
    double e = st.est_cardinality;
    if (!(e >= 0)) e = 0;
    if (e > (double)PY_SSIZE_T_MAX) e = (double)PY_SSIZE_T_MAX;
    return (Py_ssize_t)(e + 0.5);
}

/* The count of keys inserted, from the type's own O(1) accessor. */
static uint64_t inserted_count(const bk_filter *f, bk_type t)
{
    void *p = bk_filter_get(f, t);
    switch (t) {
    case BK_TYPE_BLOOM: return bk_bloom_count(p);
    case BK_TYPE_BLOCKED: return bk_blocked_count(p);
    case BK_TYPE_COUNTING: return bk_counting_count(p);
    case BK_TYPE_SCALABLE: return bk_scalable_count(p);
    case BK_TYPE_CUCKOO: return bk_cuckoo_items(p);
    case BK_TYPE_FUSE: return bk_fuse_count(p);
    case BK_TYPE_QUOTIENT: return bk_quotient_total(p);
    case BK_TYPE_AGING: {
        bk_stats st;
        bk_aging_stats(p, &st);
        return st.count;
    }
    default: return 0;
    }
}

static PyObject *Filter_get_count(FilterObject *o, void *c)
{
    (void)c;
    int held = enter_read(o);
    if (held < 0) return NULL;
    uint64_t n = inserted_count(o->f, o->type);
    leave(o, held);
    return PyLong_FromUnsignedLongLong(n);
}

static int Filter_bool(FilterObject *o)
{
    int held = enter_read(o);
    if (held < 0) return -1;
    uint64_t n = inserted_count(o->f, o->type);
    leave(o, held);
    return n != 0;
}

enum {
    ST_CAPACITY, ST_ERROR_RATE, ST_FILL, ST_FPR_NOW, ST_SATURATED, ST_BITS, ST_K, ST_MEMORY, ST_SUBFILTERS,
    ST_BITS_PER_KEY
};

static PyObject *Filter_get_stat(FilterObject *o, void *which)
{
    bk_stats st;
    if (get_stats(o, &st) < 0) return NULL;
    switch ((int)(intptr_t)which) {
    case ST_CAPACITY: return PyLong_FromUnsignedLongLong(st.capacity);
    case ST_ERROR_RATE: return PyFloat_FromDouble(st.fpr_target);
    case ST_FILL: return PyFloat_FromDouble(st.fill_ratio);
    case ST_FPR_NOW: return PyFloat_FromDouble(st.fpr_now);
    case ST_SATURATED: return PyBool_FromLong(st.saturated);
    case ST_BITS: return PyLong_FromUnsignedLongLong(st.bits);
    case ST_K: return PyLong_FromUnsignedLong(st.k);
    case ST_MEMORY: return PyLong_FromUnsignedLongLong(st.memory_bytes);
    case ST_SUBFILTERS: return PyLong_FromUnsignedLong(st.subfilters);
    case ST_BITS_PER_KEY: return PyFloat_FromDouble(st.bits_per_key);
    default: Py_RETURN_NONE;
    }
}

static PyObject *Filter_get_seed(FilterObject *o, void *c)
{
    (void)c;
    if (!o->f) {
        closed_error();
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(bk_filter_seed(o->f));
}

static PyObject *Filter_get_type_name(FilterObject *o, void *c)
{
    (void)c;
    return PyUnicode_FromString(bk_type_name(o->type));
}

static PyObject *Filter_get_backing(FilterObject *o, void *c)
{
    (void)c;
    if (!o->f) return PyUnicode_FromString("closed");
    switch (bk_filter_backing(o->f)) {
    case BK_BACKING_MEMORY: return PyUnicode_FromString("memory");
    case BK_BACKING_MAP_READONLY: return PyUnicode_FromString("mmap");
    case BK_BACKING_MAP_SHARED: return PyUnicode_FromString("mmap-shared");
    }
    return PyUnicode_FromString("unknown");
}

static PyObject *Filter_get_closed(FilterObject *o, void *c)
{
    (void)c;
    return PyBool_FromLong(o->f == NULL);
}

/* Type-specific read-only attributes. */
static PyObject *Filter_get_layout(FilterObject *o, void *c)
{
    (void)c;
    int held = enter_read(o);
    if (held < 0) return NULL;
    PyObject *r;
    if (o->type == BK_TYPE_BLOOM)
        r = PyUnicode_FromString(bk_bloom_layout_of(bk_filter_get(o->f, BK_TYPE_BLOOM)) == BK_LAYOUT_PARTITIONED
                                        ? "partitioned" : "standard");
    else
        r = PyLong_FromLong(bk_blocked_layout_of(bk_filter_get(o->f, BK_TYPE_BLOCKED)) == BK_BLOCKED_512 ? 512 : 256);
    leave(o, held);
    return r;
}

static PyObject *Filter_get_counter_bits(FilterObject *o, void *c)
{
    (void)c;
    int held = enter_read(o);
    if (held < 0) return NULL;
    PyObject *r = PyLong_FromUnsignedLong(bk_counting_counter_bits(bk_filter_get(o->f, BK_TYPE_COUNTING)));
    leave(o, held);
    return r;
}

static PyObject *Filter_get_fingerprint_bits(FilterObject *o, void *c)
{
    (void)c;
    int held = enter_read(o);
    if (held < 0) return NULL;
    PyObject *r;
    if (o->type == BK_TYPE_FUSE) {
        r = PyLong_FromUnsignedLong(bk_fuse_fingerprint_bits(bk_filter_get(o->f, BK_TYPE_FUSE)));
    } else {
        bk_cuckoo_info in;
        bk_cuckoo_get_info(bk_filter_get(o->f, BK_TYPE_CUCKOO), &in);
        r = PyLong_FromUnsignedLong(in.fingerprint_bits);
    }
    leave(o, held);
    return r;
}

enum { SC_GROWTH, SC_TIGHTENING, SC_MAX_BYTES, SC_NONSCALING, SC_CLASSIC, SC_FPR_BOUND, SC_INITIAL };

static PyObject *Scalable_get(FilterObject *o, void *which)
{
    int held = enter_read(o);
    if (held < 0) return NULL;
    const bk_scalable *f = bk_filter_get(o->f, BK_TYPE_SCALABLE);
    PyObject *r = NULL;
    switch ((int)(intptr_t)which) {
    case SC_GROWTH: r = PyLong_FromUnsignedLong(bk_scalable_growth(f)); break;
    case SC_TIGHTENING: r = PyFloat_FromDouble(bk_scalable_tightening(f)); break;
    case SC_MAX_BYTES: r = PyLong_FromUnsignedLongLong(bk_scalable_max_bytes(f)); break;
    case SC_NONSCALING: r = PyBool_FromLong(bk_scalable_nonscaling(f)); break;
    case SC_CLASSIC: r = PyBool_FromLong(bk_scalable_classic(f)); break;
    case SC_FPR_BOUND: r = PyFloat_FromDouble(bk_scalable_fpr_bound(f)); break;
    case SC_INITIAL: r = PyLong_FromUnsignedLongLong(bk_scalable_initial_capacity(f)); break;
    }
    leave(o, held);
    return r;
}

static PyObject *Cuckoo_info(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = enter_read(o);
    if (held < 0) return NULL;
    bk_cuckoo_info in;
    bk_cuckoo_get_info(bk_filter_get(o->f, BK_TYPE_CUCKOO), &in);
    leave(o, held);
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:I,s:I,s:I,s:I,s:I,s:I,s:d,s:d,s:d,s:d,s:O,s:K}", "capacity",
        (unsigned long long)in.capacity, "items", (unsigned long long)in.items, "inserted",
        (unsigned long long)in.inserted, "deleted", (unsigned long long)in.deleted, "buckets",
        (unsigned long long)in.buckets, "first_buckets", (unsigned long long)in.first_buckets, "slots",
        (unsigned long long)in.slots, "memory_bytes", (unsigned long long)in.memory_bytes, "kicks",
        (unsigned long long)in.kicks, "tables", in.tables, "victims", in.victims, "bucket_size", in.bucket_size,
        "fingerprint_bits", in.fingerprint_bits, "max_kicks", in.max_kicks, "expansion", in.expansion,
        "load_factor", in.load_factor, "fpr_target", in.fpr_target, "fpr_now", in.fpr_now, "fpr_full",
        in.fpr_full, "full", in.full ? Py_True : Py_False, "seed", (unsigned long long)in.seed);
}

static PyObject *Cuckoo_count_of(FilterObject *o, PyObject *k)
{
    key_t_ key;
    int held = key_enter(o, k, &key, 0);
    if (held < 0) return NULL;
    uint64_t n = o->type == BK_TYPE_QUOTIENT ? bk_quotient_count(bk_filter_get(o->f, BK_TYPE_QUOTIENT), key.p, key.n)
                                            : bk_cuckoo_count(bk_filter_get(o->f, BK_TYPE_CUCKOO), key.p, key.n);
    leave(o, held);
    key_done(&key);
    return PyLong_FromUnsignedLongLong(n);
}

static PyObject *Aging_info(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = enter_read(o);
    if (held < 0) return NULL;
    bk_aging_info in;
    bk_status s = bk_aging_get_info(bk_filter_get(o->f, BK_TYPE_AGING), &in);
    leave(o, held);
    if (s != BK_OK) return raise_bk(s, CTX_OTHER, "info");
    PyObject *counts = PyList_New(in.generations), *fills = PyList_New(in.generations);
    if (!counts || !fills) {
        Py_XDECREF(counts);
        Py_XDECREF(fills);
        return NULL;
    }
    for (uint32_t i = 0; i < in.generations && i < BK_AGING_MAX_GENERATIONS; i++) {
        PyList_SET_ITEM(counts, i, PyLong_FromUnsignedLongLong(in.gen_count[i]));
        PyList_SET_ITEM(fills, i, PyFloat_FromDouble(in.gen_fill[i]));
    }
    return Py_BuildValue("{s:s,s:I,s:K,s:K,s:K,s:K,s:K,s:K,s:I,s:N,s:N,s:d}", "mode",
                         in.mode == BK_AGING_TIME ? "time" : "count", "generations", in.generations, "window",
                         (unsigned long long)in.window, "gen_capacity", (unsigned long long)in.gen_capacity,
                         "period_ms", (unsigned long long)in.period_ms, "slack", (unsigned long long)in.slack,
                         "covered", (unsigned long long)in.covered, "inserted", (unsigned long long)in.inserted,
                         "live", in.live, "gen_count", counts, "gen_fill", fills, "fpr_now", in.fpr_now);
}

static PyObject *Aging_advance(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = enter_write(o);
    if (held < 0) return NULL;
    if (bk_filter_backing(o->f) == BK_BACKING_MEMORY) bk_aging_advance(bk_filter_get(o->f, BK_TYPE_AGING));
    leave(o, held);
    Py_RETURN_NONE;
}

enum { AG_MODE, AG_WINDOW, AG_GENERATIONS };

static PyObject *Aging_get(FilterObject *o, void *which)
{
    int held = enter_read(o);
    if (held < 0) return NULL;
    const bk_aging *a = bk_filter_get(o->f, BK_TYPE_AGING);
    PyObject *r = NULL;
    switch ((int)(intptr_t)which) {
    case AG_MODE: r = PyUnicode_FromString(bk_aging_mode_of(a) == BK_AGING_TIME ? "time" : "count"); break;
    case AG_WINDOW: r = PyLong_FromUnsignedLongLong(bk_aging_window(a)); break;
    case AG_GENERATIONS: r = PyLong_FromUnsignedLong(bk_aging_generations(a)); break;
    }
    leave(o, held);
    return r;
}

static PyObject *Quotient_get_remainder_bits(FilterObject *o, void *c)
{
    (void)c;
    int held = enter_read(o);
    if (held < 0) return NULL;
    PyObject *r = PyLong_FromUnsignedLong(bk_quotient_remainder_bits(bk_filter_get(o->f, BK_TYPE_QUOTIENT)));
    leave(o, held);
    return r;
}

static PyObject *Quotient_grow(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = enter_write(o);
    if (held < 0) return NULL;
    bk_status s = bk_filter_backing(o->f) == BK_BACKING_MEMORY
                      ? bk_quotient_grow(bk_filter_get(o->f, BK_TYPE_QUOTIENT)) : BK_ENOTSUP;
    leave(o, held);
    if (s != BK_OK) return raise_bk(s, CTX_ADD, "grow");
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------------- */
/* Copies, set operations, clear, close                                                           */
/* ---------------------------------------------------------------------------------------------- */

/* A deep copy in owned memory (also of a mapped filter), as a new handle. */
static bk_status clone_handle(const bk_filter *f, bk_type t, bk_filter **out)
{
    void *src = bk_filter_get(f, t), *dst = NULL;
    bk_status s;
    typed_free_fn fr;
    switch (t) {
    case BK_TYPE_BLOOM: s = bk_bloom_clone(src, (bk_bloom **)&dst); fr = free_bloom; break;
    case BK_TYPE_BLOCKED: s = bk_blocked_clone(src, (bk_blocked **)&dst); fr = free_blocked; break;
    case BK_TYPE_COUNTING: s = bk_counting_clone(src, (bk_counting **)&dst); fr = free_counting; break;
    case BK_TYPE_SCALABLE: s = bk_scalable_clone(src, (bk_scalable **)&dst); fr = free_scalable; break;
    case BK_TYPE_CUCKOO: s = bk_cuckoo_clone(src, (bk_cuckoo **)&dst); fr = free_cuckoo; break;
    case BK_TYPE_FUSE: s = bk_fuse_clone(src, (bk_fuse **)&dst); fr = free_fuse; break;
    case BK_TYPE_AGING: s = bk_aging_clone(src, (bk_aging **)&dst); fr = free_aging; break;
    case BK_TYPE_QUOTIENT: s = bk_quotient_clone(src, (bk_quotient **)&dst); fr = free_quotient; break;
    default: return BK_ETYPE;
    }
    if (s != BK_OK) return s;
    s = bk_filter_wrap(t, dst, out);
    if (s != BK_OK) fr(dst);
    return s;
}

static PyObject *new_like(FilterObject *o, bk_filter *h)
{
    FilterObject *c = filter_alloc(Py_TYPE(o));
    if (!c) {
        bk_filter_free(h);
        return NULL;
    }
    c->f = h;
    c->type = o->type;
    return (PyObject *)c;
}

static PyObject *Filter_copy(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = enter_read(o);
    if (held < 0) return NULL;
    bk_filter *h;
    bk_status s = clone_handle(o->f, o->type, &h);
    leave(o, held);
    if (s != BK_OK) return raise_bk(s, CTX_OTHER, "copy");
    return new_like(o, h);
}

static PyObject *Filter_deepcopy(FilterObject *o, PyObject *memo)
{
    (void)memo;
    return Filter_copy(o, NULL);
}

/* Lock a destination for writing and a source for reading (both with the GIL, in address order when
 * either needs the lock). Returns a bit set of held locks (1: dst, 2: src) or -1. */
static int enter_pair(FilterObject *dst, FilterObject *src)
{
    if (dst == src) return enter_write(dst);
    int need_dst = dst->readers || dst->writers, need_src = src->writers != 0;
    int held = 0;
    if (need_dst || need_src) {
        Py_BEGIN_ALLOW_THREADS
        if ((uintptr_t)dst < (uintptr_t)src) {
            if (need_dst) pthread_rwlock_wrlock(&dst->lock);
            if (need_src) pthread_rwlock_rdlock(&src->lock);
        } else {
            if (need_src) pthread_rwlock_rdlock(&src->lock);
            if (need_dst) pthread_rwlock_wrlock(&dst->lock);
        }
        Py_END_ALLOW_THREADS
        held = (need_dst ? 1 : 0) | (need_src ? 2 : 0);
    }
    if (!dst->f || !src->f) {
        if (held & 1) pthread_rwlock_unlock(&dst->lock);
        if (held & 2) pthread_rwlock_unlock(&src->lock);
        return closed_error();
    }
    return held;
}

static void leave_pair(FilterObject *dst, FilterObject *src, int held)
{
    if (dst == src) {
        leave(dst, held);
        return;
    }
    if (held & 1) pthread_rwlock_unlock(&dst->lock);
    if (held & 2) pthread_rwlock_unlock(&src->lock);
}

static int is_filter(PyObject *x) { return PyObject_TypeCheck(x, &FilterType); }

/* dst |= src or dst &= src, in place. */
static int merge_into(FilterObject *dst, FilterObject *src, int intersect)
{
    if (dst->type != src->type) {
        PyErr_Format(IncompatibleError, "cannot combine a %s filter with a %s filter", bk_type_name(dst->type),
                     bk_type_name(src->type));
        return -1;
    }
    if (intersect && dst->type != BK_TYPE_BLOOM && dst->type != BK_TYPE_BLOCKED) {
        PyErr_Format(UnsupportedOperation, "%s filters have no intersection (only Bloom and Blocked do)",
                     bk_type_name(dst->type));
        return -1;
    }
    int held = enter_pair(dst, src);
    if (held < 0) return -1;
    bk_status s;
    if (!intersect) {
        s = bk_filter_merge(dst->f, src->f);
    } else if (bk_filter_backing(dst->f) != BK_BACKING_MEMORY) {
        s = BK_ENOTSUP;
    } else if (dst->type == BK_TYPE_BLOOM) {
        s = bk_bloom_intersect(bk_filter_get(dst->f, BK_TYPE_BLOOM), bk_filter_get(src->f, BK_TYPE_BLOOM));
    } else {
        s = bk_blocked_intersect(bk_filter_get(dst->f, BK_TYPE_BLOCKED), bk_filter_get(src->f, BK_TYPE_BLOCKED));
    }
    leave_pair(dst, src, held);
    if (s != BK_OK) {
        if (s == BK_ENOTSUP && bk_filter_backing(dst->f) != BK_BACKING_MEMORY)
            PyErr_SetString(UnsupportedOperation, "the filter is a read-only mapping: copy() or load() it to "
                                                  "change it");
        else
            raise_bk(s, CTX_OTHER, intersect ? "intersection" : "union");
        return -1;
    }
    return 0;
}

static PyObject *binary_op(PyObject *a, PyObject *b, int intersect, int inplace)
{
    if (!is_filter(a) || !is_filter(b)) Py_RETURN_NOTIMPLEMENTED;
    FilterObject *x = (FilterObject *)a, *y = (FilterObject *)b;
    if (inplace) {
        if (merge_into(x, y, intersect) < 0) return NULL;
        Py_INCREF(a);
        return a;
    }
    PyObject *c = Filter_copy(x, NULL);
    if (!c) return NULL;
    if (merge_into((FilterObject *)c, y, intersect) < 0) {
        Py_DECREF(c);
        return NULL;
    }
    return c;
}

static PyObject *Filter_or(PyObject *a, PyObject *b) { return binary_op(a, b, 0, 0); }
static PyObject *Filter_and(PyObject *a, PyObject *b) { return binary_op(a, b, 1, 0); }
static PyObject *Filter_ior(PyObject *a, PyObject *b) { return binary_op(a, b, 0, 1); }
static PyObject *Filter_iand(PyObject *a, PyObject *b) { return binary_op(a, b, 1, 1); }

static PyObject *Filter_union(FilterObject *o, PyObject *other) { return binary_op((PyObject *)o, other, 0, 0); }
static PyObject *Filter_intersection(FilterObject *o, PyObject *other)
{
    return binary_op((PyObject *)o, other, 1, 0);
}

static PyObject *Filter_compatible(FilterObject *o, PyObject *other)
{
    if (!is_filter(other)) {
        PyErr_SetString(PyExc_TypeError, "compatible() takes a bloomkit filter");
        return NULL;
    }
    FilterObject *b = (FilterObject *)other;
    if (o->type != b->type) Py_RETURN_FALSE;
    int h1 = enter_read(o);
    if (h1 < 0) return NULL;
    int h2 = o == b ? LK_NONE : enter_read(b);
    if (h2 < 0) {
        leave(o, h1);
        return NULL;
    }
    void *x = bk_filter_get(o->f, o->type), *y = bk_filter_get(b->f, b->type);
    bk_status s;
    switch (o->type) {
    case BK_TYPE_BLOOM: s = bk_bloom_compatible(x, y); break;
    case BK_TYPE_BLOCKED: s = bk_blocked_compatible(x, y); break;
    case BK_TYPE_COUNTING: s = bk_counting_compatible(x, y); break;
    case BK_TYPE_SCALABLE: s = bk_scalable_compatible(x, y); break;
    case BK_TYPE_QUOTIENT: s = bk_quotient_compatible(x, y); break;
    default: s = BK_ENOTSUP; break;
    }
    if (o != b) leave(b, h2);
    leave(o, h1);
    return PyBool_FromLong(s == BK_OK);
}

static PyObject *Filter_clear(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = enter_write(o);
    if (held < 0) return NULL;
    bk_status s = bk_filter_clear(o->f);
    leave(o, held);
    if (s != BK_OK) return raise_bk(s, CTX_OTHER, "clear");
    Py_RETURN_NONE;
}

static PyObject *Filter_close(FilterObject *o, PyObject *unused)
{
    (void)unused;
    if (!o->f) Py_RETURN_NONE;
    int held = enter_write(o);
    if (held < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    bk_filter *h = o->f;
    o->f = NULL;
    leave(o, held);
    bk_status s = bk_filter_close(h);
    if (s != BK_OK) return raise_bk(s, CTX_OTHER, "close");
    Py_RETURN_NONE;
}

static PyObject *Filter_enter(PyObject *o, PyObject *unused)
{
    (void)unused;
    Py_INCREF(o);
    return o;
}

static PyObject *Filter_exit(FilterObject *o, PyObject *args)
{
    (void)args;
    PyObject *r = Filter_close(o, NULL);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

/* ---------------------------------------------------------------------------------------------- */
/* Files and bytes                                                                                */
/* ---------------------------------------------------------------------------------------------- */

static PyObject *Filter_save(FilterObject *o, PyObject *arg)
{
    PyObject *path;
    if (!PyUnicode_FSConverter(arg, &path)) return NULL;
    if (nogil_register(o, 0) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    bk_status s = BK_OK;
    int closed = 0, err = 0;
    const char *p = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    bk_filter *f = nogil_lock(o, 0);
    if (!f) closed = 1;
    else {
        s = bk_filter_save_path(f, p);
        err = errno;
    }
    nogil_unlock(o);
    Py_END_ALLOW_THREADS
    nogil_unregister(o, 0);
    PyObject *r = NULL;
    if (closed) closed_error();
    else if (s != BK_OK) {
        errno = err;
        raise_bk(s, CTX_OTHER, p);
    } else {
        r = Py_None;
        Py_INCREF(r);
    }
    Py_DECREF(path);
    return r;
}

static PyObject *Filter_bytes(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = enter_read(o);
    if (held < 0) return NULL;
    size_t size;
    bk_status s = bk_filter_save_size(o->f, &size);
    leave(o, held);
    if (s != BK_OK) return raise_bk(s, CTX_OTHER, "bytes");
    if (size > (size_t)PY_SSIZE_T_MAX) return PyErr_NoMemory();
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (!b) return NULL;
    if (nogil_register(o, 0) < 0) {
        Py_DECREF(b);
        return NULL;
    }
    int closed = 0;
    size_t written = 0;
    char *dst = PyBytes_AS_STRING(b);
    Py_BEGIN_ALLOW_THREADS
    bk_filter *f = nogil_lock(o, 0);
    if (!f) closed = 1;
    else s = bk_filter_save_buffer(f, dst, size, &written);
    nogil_unlock(o);
    Py_END_ALLOW_THREADS
    nogil_unregister(o, 0);
    if (closed || s != BK_OK || written != size) {
        Py_DECREF(b);
        if (closed) closed_error();
        else raise_bk(s != BK_OK ? s : BK_EINVAL, CTX_OTHER, "bytes (the filter grew while it was saved)");
        return NULL;
    }
    return b;
}

static PyObject *from_bytes_impl(PyObject *data, unsigned flags);

static PyObject *Filter_reduce(FilterObject *o, PyObject *unused)
{
    (void)unused;
    PyObject *b = Filter_bytes(o, NULL);
    if (!b) return NULL;
    PyObject *mod = PyImport_ImportModule(MODULE_NAME);
    if (!mod) {
        Py_DECREF(b);
        return NULL;
    }
    PyObject *fn = PyObject_GetAttrString(mod, "from_bytes");
    Py_DECREF(mod);
    if (!fn) {
        Py_DECREF(b);
        return NULL;
    }
    return Py_BuildValue("(N(N))", fn, b);
}

static PyObject *Filter_sizeof(FilterObject *o, PyObject *unused)
{
    (void)unused;
    size_t n = sizeof(FilterObject);
    if (o->f && bk_filter_backing(o->f) == BK_BACKING_MEMORY) {
        bk_stats st;
        if (get_stats(o, &st) < 0) return NULL;
        n += (size_t)st.memory_bytes;
    }
    return PyLong_FromSize_t(n);
}

static PyObject *Filter_repr(FilterObject *o)
{
    if (!o->f) return PyUnicode_FromFormat("<%s (closed)>", Py_TYPE(o)->tp_name);
    int held = enter_read(o);
    if (held < 0) return NULL;
    bk_stats st;
    bk_filter_stats(o->f, &st);
    bk_backing b = bk_filter_backing(o->f);
    leave(o, held);
    char rate[32];
    PyOS_snprintf(rate, sizeof rate, "%.6g", st.fpr_target);
    return PyUnicode_FromFormat("<%s capacity=%llu error_rate=%s count=%llu%s>", Py_TYPE(o)->tp_name,
                                (unsigned long long)st.capacity, rate, (unsigned long long)st.count,
                                b == BK_BACKING_MEMORY ? "" : " mapped");
}

/* ---------------------------------------------------------------------------------------------- */
/* Fuse: built once from all keys                                                                 */
/* ---------------------------------------------------------------------------------------------- */

typedef struct {
    uint64_t *h;
    size_t n, cap;
} hashes_t;

static int hashes_push(hashes_t *hs, uint64_t h)
{
    if (hs->n == hs->cap) {
        size_t cap = hs->cap ? hs->cap * 2 : 1024;
        uint64_t *p = PyMem_RawRealloc(hs->h, cap * sizeof *p);
        if (!p) {
            PyErr_NoMemory();
            return -1;
        }
        hs->h = p;
        hs->cap = cap;
    }
    hs->h[hs->n++] = h;
    return 0;
}

static PyObject *Fuse_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", "error_rate", "fingerprint_bits", "seed", "max_attempts", NULL};
    PyObject *keys, *rateo = Py_None, *fbo = Py_None, *seedo = NULL, *mao = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$OOO:Fuse", kwlist, &keys, &rateo, &fbo, &seedo, &mao))
        return NULL;
    bk_fuse_options o = BK_FUSE_OPTIONS_INIT;
    if (seedo && get_u64(seedo, "seed", &o.seed) < 0) return NULL;
    if (mao && get_u32(mao, "max_attempts", &o.max_attempts) < 0) return NULL;
    if (fbo != Py_None) {
        if (get_u32(fbo, "fingerprint_bits", &o.fingerprint_bits) < 0) return NULL;
        if (o.fingerprint_bits != 8 && o.fingerprint_bits != 16) {
            PyErr_SetString(PyExc_ValueError, "fingerprint_bits must be 8 or 16");
            return NULL;
        }
    }
    double p = 0;
    if (rateo != Py_None) {
        p = PyFloat_AsDouble(rateo);
        if (p == -1.0 && PyErr_Occurred()) return NULL;
        if (!(p > 0 && p < 1)) {
            PyErr_SetString(PyExc_ValueError, "error_rate must be strictly between 0 and 1");
            return NULL;
        }
        if (fbo == Py_None) {
            bk_geometry g;
            bk_status s = bk_fuse_size_for_fpr(1, p, &g);
            if (s != BK_OK) {
                PyErr_SetString(PyExc_ValueError, "a fuse filter reaches error rates down to 2**-16 (1.5e-05); use "
                                                  "Bloom, Blocked or Cuckoo for lower ones");
                return NULL;
            }
            o.fingerprint_bits = g.k;
        }
    }
    source_t src;
    if (source_open(&src, keys, "Fuse") < 0) return NULL;
    hashes_t hs = {NULL, 0, 0};
    bk_status s = BK_OK;
    bk_fuse *fu = NULL;
    if (src.has_view) {
        hs.n = hs.cap = src.nitems;
        hs.h = PyMem_RawMalloc((hs.cap ? hs.cap : 1) * sizeof *hs.h);
        if (!hs.h) {
            PyErr_NoMemory();
            goto fail;
        }
        Py_BEGIN_ALLOW_THREADS
        buffer_hashes(&src, 0, src.nitems, o.seed, hs.h);
        Py_END_ALLOW_THREADS
    } else {
        step_t st;
        if (step_init(&st, 1024) < 0) goto fail;
        for (;;) {
            Py_ssize_t m = source_fill(&src, &st);
            if (m <= 0) break;
            for (Py_ssize_t i = 0; i < m; i++)
                if (hashes_push(&hs, bk_hash64(st.ptr[i], st.len[i], o.seed)) < 0) break;
            if (PyErr_Occurred()) break;
        }
        step_free(&st);
        if (PyErr_Occurred()) goto fail;
    }
    source_close(&src);
    Py_BEGIN_ALLOW_THREADS
    s = bk_fuse_build_hashes(hs.h, hs.n, &o, &fu);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(hs.h);
    if (s != BK_OK) return raise_bk(s, CTX_ARGS, "Fuse");
    return wrap_typed(tp, BK_TYPE_FUSE, fu, free_fuse);
fail:
    source_close(&src);
    PyMem_RawFree(hs.h);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------- */
/* Module functions                                                                               */
/* ---------------------------------------------------------------------------------------------- */

static unsigned load_flags(int verify)
{
    return verify ? BK_LOAD_DEFAULT : BK_LOAD_NO_CHECKSUM;
}

static PyObject *mod_load(PyObject *m, PyObject *args, PyObject *kw)
{
    (void)m;
    static char *kwlist[] = {"path", "verify_checksum", NULL};
    PyObject *path;
    int verify = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|$p:load", kwlist, PyUnicode_FSConverter, &path, &verify))
        return NULL;
    bk_filter *h = NULL;
    bk_status s;
    int err = 0;
    const char *p = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    s = bk_filter_load_path(p, load_flags(verify), &h);
    err = errno;
    Py_END_ALLOW_THREADS
    if (s != BK_OK) {
        errno = err;
        raise_bk(s, CTX_FILE, p);
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    return wrap_handle(h);
}

static PyObject *mod_open(PyObject *m, PyObject *args, PyObject *kw)
{
    (void)m;
    static char *kwlist[] = {"path", "writable", "populate", "verify_checksum", NULL};
    PyObject *path;
    int writable = 0, populate = 0, verify = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|$ppp:open", kwlist, PyUnicode_FSConverter, &path, &writable,
                                     &populate, &verify))
        return NULL;
    unsigned flags = load_flags(verify) | (writable ? BK_OPEN_WRITE_SHARED : 0u) | (populate ? BK_OPEN_POPULATE : 0u);
    bk_filter *h = NULL;
    bk_status s;
    int err = 0;
    const char *p = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    s = bk_filter_open_mmap(p, flags, &h);
    err = errno;
    Py_END_ALLOW_THREADS
    if (s != BK_OK) {
        errno = err;
        if (s == BK_ENOTSUP && writable)
            PyErr_Format(UnsupportedOperation, "%s: this filter type has no atomic insert, so it cannot be "
                         "opened writable (load() it instead)", p);
        else
            raise_bk(s, CTX_FILE, p);
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    return wrap_handle(h);
}

static PyObject *from_bytes_impl(PyObject *data, unsigned flags)
{
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    bk_filter *h = NULL;
    bk_status s;
    if (view.len >= (1 << 20)) {
        Py_BEGIN_ALLOW_THREADS
        s = bk_filter_load_buffer(view.buf, (size_t)view.len, flags, &h);
        Py_END_ALLOW_THREADS
    } else {
        s = bk_filter_load_buffer(view.buf, (size_t)view.len, flags, &h);
    }
    PyBuffer_Release(&view);
    if (s != BK_OK) return raise_bk(s, CTX_FILE, "from_bytes");
    return wrap_handle(h);
}

static PyObject *mod_from_bytes(PyObject *m, PyObject *args, PyObject *kw)
{
    (void)m;
    static char *kwlist[] = {"data", "verify_checksum", NULL};
    PyObject *data;
    int verify = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$p:from_bytes", kwlist, &data, &verify)) return NULL;
    return from_bytes_impl(data, load_flags(verify));
}

static PyObject *mod_hash64(PyObject *m, PyObject *args, PyObject *kw)
{
    (void)m;
    static char *kwlist[] = {"key", "seed", NULL};
    PyObject *k, *seedo = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:hash64", kwlist, &k, &seedo)) return NULL;
    uint64_t seed = 0;
    if (seedo && get_u64(seedo, "seed", &seed) < 0) return NULL;
    key_t_ key;
    if (key_get(k, &key) < 0) return NULL;
    uint64_t h = bk_hash64(key.p, key.n, seed);
    key_done(&key);
    return PyLong_FromUnsignedLongLong(h);
}

static PyObject *mod_file_info(PyObject *m, PyObject *data)
{
    (void)m;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    bk_file_info in;
    bk_status s = bk_filter_peek_header(view.buf, (size_t)view.len, &in);
    PyBuffer_Release(&view);
    if (s != BK_OK) return raise_bk(s, CTX_FILE, "file_info");
    const char *tn = bk_type_name((bk_type)in.type);
    return Py_BuildValue("{s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:K,s:K,s:K,s:K}", "version_major",
                         (unsigned)in.version_major, "version_minor", (unsigned)in.version_minor, "type",
                         tn ? tn : "unknown", "type_id", in.type, "flags", in.flags, "hash_id", in.hash_id,
                         "header_size", in.header_size, "seed", (unsigned long long)in.seed, "body_size",
                         (unsigned long long)in.body_size, "body_checksum", (unsigned long long)in.body_checksum,
                         "total_size", (unsigned long long)in.total_size);
}

/* ---------------------------------------------------------------------------------------------- */
/* Type objects                                                                                   */
/* ---------------------------------------------------------------------------------------------- */

#define DOC_CONTAINS "contains($self, key, /)\n--\n\nReturns bool. The same as `key in f`: True if the key is probably present, " \
    "False if it is certainly absent."
#define DOC_CONTAINS_MANY "contains_many($self, keys, *, out=None)\n--\n\nReturns bytearray. Query many keys at once: a list, " \
    "tuple or other iterable of keys, or a buffer of fixed-width items (a numpy integer array, array.array, a " \
    "numpy 'S' array). Returns a bytearray with 1 for each key probably present and 0 for each certainly " \
    "absent (numpy: np.frombuffer(r, dtype=bool)), or fills `out` (a writable buffer of 1-byte items) and " \
    "returns it. The GIL is released while the library works, so threads can query one filter at once."
#define DOC_ADD "add($self, key, /)\n--\n\nInsert a key (str, bytes, bytearray, memoryview or int)."
#define DOC_ADD_MANY "add_many($self, keys, /)\n--\n\nInsert many keys: an iterable of keys or a buffer of fixed-width " \
    "items, as contains_many takes. The GIL is released while the library works."
#define DOC_UPDATE "update($self, keys, /)\n--\n\nThe same as add_many(keys)."
#define DOC_ADD_IF_ABSENT "add_if_absent($self, key, /)\n--\n\nReturns bool. Insert the key unless it is probably present " \
    "already. True if it was inserted (new), False if it was (probably) there."


#define M_O(name, fn, doc) {name, (PyCFunction)(fn), METH_O, doc}
#define M_NOARGS(name, fn, doc) {name, (PyCFunction)(fn), METH_NOARGS, doc}
#define M_KW(name, fn, doc) {name, (PyCFunction)(void (*)(void))(fn), METH_VARARGS | METH_KEYWORDS, doc}

static PyMethodDef Filter_methods[] = {
    M_O("contains", Filter_contains, DOC_CONTAINS),
    M_KW("contains_many", Filter_contains_many, DOC_CONTAINS_MANY),
    M_NOARGS("stats", Filter_stats,
             "stats($self)\n--\n\nReturns dict. Every statistic of the filter: type, k, capacity, count, bits, memory_bytes, "
             "bits_per_key, fill_ratio, est_cardinality, fpr_target, fpr_now, saturated, saturated_cells, "
             "subfilters, seed. Counts the filter's bits (O(size))."),
    M_NOARGS("copy", Filter_copy, "copy($self)\n--\n\nA deep copy in memory (also of a mapped filter)."),
    M_NOARGS("__copy__", Filter_copy, NULL),
    M_O("__deepcopy__", Filter_deepcopy, NULL),
    M_O("save", Filter_save,
        "save($self, path, /)\n--\n\nWrite the filter to a file in bloomkit's file format, atomically (temporary file, "
        "fsync, rename): the bloomkit command, C programs and the Redis module's BK.IMPORT read it."),
    M_NOARGS("__bytes__", Filter_bytes, "bytes(f): the filter in bloomkit's file format."),
    M_NOARGS("to_bytes", Filter_bytes, "to_bytes($self)\n--\n\nReturns bytes. The same as bytes(f)."),
    M_NOARGS("__reduce__", Filter_reduce, NULL),
    M_NOARGS("__sizeof__", Filter_sizeof, NULL),
    M_NOARGS("close", Filter_close,
             "close($self)\n--\n\nFree the filter now (unmap it if it was opened with bloomkit.open). Any later "
             "operation raises ValueError. Filters are also context managers."),
    M_NOARGS("__enter__", Filter_enter, NULL),
    M_KW("__exit__", Filter_exit, NULL),
    M_O("union", Filter_union, "union($self, other, /)\n--\n\nThe same as f | other: a new filter holding both sets."),
    M_O("compatible", Filter_compatible,
        "compatible($self, other, /)\n--\n\nReturns bool. True if the two filters can be combined with | (same type, geometry "
        "and seed; Cuckoo and Fuse filters have no union)."),
    {NULL, NULL, 0, NULL}};

#define ADD_METHODS                                                                                        \
    M_O("add", Filter_add, DOC_ADD), M_O("add_many", Filter_add_many, DOC_ADD_MANY),                       \
        M_O("update", Filter_add_many, DOC_UPDATE), M_O("add_if_absent", Filter_add_if_absent, DOC_ADD_IF_ABSENT), \
        M_NOARGS("clear", Filter_clear, "clear($self)\n--\n\nRemove every key (the geometry and seed stay).")
#define REMOVE_METHODS                                                                                     \
    M_O("remove", Filter_remove,                                                                           \
        "remove($self, key, /)\n--\n\nRemove one occurrence of a key you added; KeyError if it is certainly absent. "    \
        "Removing a key that was never added can remove another key (a false negative later)."),           \
        M_O("discard", Filter_discard,                                                                     \
            "discard($self, key, /)\n--\n\nReturns bool. Like remove, but returns False instead of raising KeyError.")
#define INTERSECT_METHODS                                                                                  \
    M_O("intersection", Filter_intersection,                                                               \
        "intersection($self, other, /)\n--\n\nThe same as f & other: a new filter whose bits are set in both.")

static PyMethodDef Bloom_methods[] = {ADD_METHODS, INTERSECT_METHODS, {NULL, NULL, 0, NULL}};
static PyMethodDef Blocked_methods[] = {ADD_METHODS, INTERSECT_METHODS, {NULL, NULL, 0, NULL}};
static PyMethodDef Counting_methods[] = {ADD_METHODS, REMOVE_METHODS, {NULL, NULL, 0, NULL}};
static PyMethodDef Scalable_methods[] = {ADD_METHODS, {NULL, NULL, 0, NULL}};
static PyMethodDef Cuckoo_methods[] = {
    ADD_METHODS, REMOVE_METHODS,
    M_NOARGS("info", Cuckoo_info, "info($self)\n--\n\nReturns dict. Everything CF.INFO reports: tables, buckets, items, "
                                  "kicks, load factor, FPR now and when full, ..."),
    M_O("count_of", Cuckoo_count_of,
        "count_of($self, key, /)\n--\n\nReturns int. Copies of the key's fingerprint stored (CF.COUNT): at least the times it "
        "was added and not removed."),
    {NULL, NULL, 0, NULL}};

#define GS(name, fn, doc, closure) {name, (getter)(fn), NULL, doc, (void *)(intptr_t)(closure)}

static PyGetSetDef Filter_getset[] = {
    GS("count", Filter_get_count,
       "Keys inserted, as the library counts them (O(1)): every add for Bloom and Blocked (a key added twice "
       "counts twice), exact for Counting, Scalable and Cuckoo, distinct keys for Fuse.", 0),
    GS("capacity", Filter_get_stat, "Keys the filter was sized for.", ST_CAPACITY),
    GS("error_rate", Filter_get_stat, "The false-positive rate the filter was sized for.", ST_ERROR_RATE),
    GS("fill_ratio", Filter_get_stat, "Fraction of bits set (cells non-zero, slots used). O(size).", ST_FILL),
    GS("fpr_now", Filter_get_stat, "False-positive rate expected at the current fill. O(size).", ST_FPR_NOW),
    GS("saturated", Filter_get_stat, "True when the filter holds more than it was sized for: rebuild it larger.",
       ST_SATURATED),
    GS("bits", Filter_get_stat, "Bits (or cells, slots) addressed by the probes.", ST_BITS),
    GS("k", Filter_get_stat, "Probes per key (Bloom family); fingerprint bits (Cuckoo, Fuse).", ST_K),
    GS("memory_bytes", Filter_get_stat, "Bytes of the filter's arrays.", ST_MEMORY),
    GS("bits_per_key", Filter_get_stat, "memory_bytes * 8 / max(count, 1).", ST_BITS_PER_KEY),
    GS("subfilters", Filter_get_stat, "Sub-filters (Scalable) or tables (Cuckoo); 0 for the others.",
       ST_SUBFILTERS),
    GS("seed", Filter_get_seed, "The hash seed.", 0),
    GS("type_name", Filter_get_type_name, "'bloom', 'blocked', 'counting', 'scalable', 'cuckoo' or 'fuse'.", 0),
    GS("backing", Filter_get_backing, "'memory', 'mmap' (read-only mapping), 'mmap-shared' or 'closed'.", 0),
    GS("closed", Filter_get_closed, "True after close().", 0),
    {NULL, NULL, NULL, NULL, NULL}};

static PyGetSetDef Bloom_getset[] = {
    GS("layout", Filter_get_layout, "'standard' or 'partitioned'.", 0), {NULL, NULL, NULL, NULL, NULL}};
static PyGetSetDef Blocked_getset[] = {
    GS("block_bits", Filter_get_layout, "256 (split blocks, the default) or 512.", 0),
    {NULL, NULL, NULL, NULL, NULL}};
static PyGetSetDef Counting_getset[] = {
    GS("counter_bits", Filter_get_counter_bits, "4 or 8.", 0), {NULL, NULL, NULL, NULL, NULL}};
static PyGetSetDef Scalable_getset[] = {
    GS("growth", Scalable_get, "Capacity ratio between sub-filters (1 for a non-scaling filter).", SC_GROWTH),
    GS("tightening", Scalable_get, "Error ratio r between sub-filters.", SC_TIGHTENING),
    GS("max_bytes", Scalable_get, "Limit on the bytes of all sub-filters; growing past it raises FullError.",
       SC_MAX_BYTES),
    GS("nonscaling", Scalable_get, "True if the filter never grows.", SC_NONSCALING),
    GS("classic", Scalable_get, "True for classic sub-filters, False for blocked ones (the default).", SC_CLASSIC),
    GS("fpr_bound", Scalable_get, "The compound FPR bound of the existing sub-filters (<= error_rate).",
       SC_FPR_BOUND),
    GS("initial_capacity", Scalable_get, "Capacity of the first sub-filter.", SC_INITIAL),
    {NULL, NULL, NULL, NULL, NULL}};
static PyMethodDef Aging_methods[] = {
    ADD_METHODS,
    M_NOARGS("info", Aging_info,
             "info($self)\n--\n\nReturns dict. The window in detail: mode, generations, window, gen_capacity, "
             "period_ms, slack, covered, inserted, live, gen_count, gen_fill, fpr_now."),
    M_NOARGS("advance", Aging_advance,
             "advance($self)\n--\n\nTime windows: forget the generations that have aged out by now (inserts do "
             "it anyway)."),
    {NULL, NULL, 0, NULL}};
static PyMethodDef Quotient_methods[] = {
    ADD_METHODS, REMOVE_METHODS,
    M_O("count_of", Cuckoo_count_of,
        "count_of($self, key, /)\n--\n\nReturns int. How many times the key's fingerprint was added (and not "
        "removed): at least the key's own count."),
    M_NOARGS("grow", Quotient_grow,
             "grow($self)\n--\n\nDouble the slots without the keys (q + 1, r - 1). FullError when r would "
             "drop below 2."),
    {NULL, NULL, 0, NULL}};
static PyGetSetDef Aging_getset[] = {
    GS("mode", Aging_get, "'count' (the last `window` insertions) or 'time' (the last `window` ms).", AG_MODE),
    GS("window", Aging_get, "W insertions or T milliseconds.", AG_WINDOW),
    GS("generations", Aging_get, "Generations g of the ring.", AG_GENERATIONS),
    {NULL, NULL, NULL, NULL, NULL}};
static PyGetSetDef Quotient_getset[] = {
    GS("remainder_bits", Quotient_get_remainder_bits, "Bits of each slot's remainder.", 0),
    {NULL, NULL, NULL, NULL, NULL}};

static PyGetSetDef Fingerprint_getset[] = {
    GS("fingerprint_bits", Filter_get_fingerprint_bits, "Bits per fingerprint.", 0),
    {NULL, NULL, NULL, NULL, NULL}};

static PyNumberMethods Filter_as_number = {
    .nb_bool = (inquiry)Filter_bool,
    .nb_and = Filter_and,
    .nb_or = Filter_or,
    .nb_inplace_and = Filter_iand,
    .nb_inplace_or = Filter_ior,
};

static PySequenceMethods Filter_as_sequence = {
    .sq_length = (lenfunc)Filter_len,
    .sq_contains = (objobjproc)Filter_sq_contains,
};

static PyObject *Filter_base_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    (void)args;
    (void)kw;
    PyErr_Format(PyExc_TypeError, "%s cannot be created directly: use Bloom, Blocked, Counting, Scalable, "
                 "Cuckoo or Fuse, or bloomkit.load / open / from_bytes", tp->tp_name);
    return NULL;
}

static PyTypeObject FilterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit.Filter",
    .tp_basicsize = sizeof(FilterObject),
    .tp_dealloc = (destructor)Filter_dealloc,
    .tp_repr = (reprfunc)Filter_repr,
    .tp_as_number = &Filter_as_number,
    .tp_as_sequence = &Filter_as_sequence,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The base class of every bloomkit filter: queries, statistics, files and set operations.\n\n"
              "`key in f` is True if the key is probably present and False if it is certainly absent. "
              "len(f) is the library's estimate of the distinct keys held (from the fill for Bloom, Blocked "
              "and Counting; the exact count for Scalable, Cuckoo and Fuse); it counts the filter's bits "
              "(O(size)). f.count is the O(1) count of insertions.",
    .tp_weaklistoffset = offsetof(FilterObject, weakrefs),
    .tp_methods = Filter_methods,
    .tp_getset = Filter_getset,
    .tp_new = Filter_base_new,
};

#define SUBTYPE(Var, pyname, newfn, methods, getset, doc)                                                  \
    static PyTypeObject Var = {                                                                            \
        PyVarObject_HEAD_INIT(NULL, 0)                                                                     \
        .tp_name = "bloomkit." pyname,                                                                     \
        .tp_basicsize = sizeof(FilterObject),                                                              \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,                         \
        .tp_doc = doc,                                                                                     \
        .tp_methods = methods,                                                                             \
        .tp_getset = getset,                                                                               \
        .tp_base = &FilterType,                                                                            \
        .tp_new = newfn,                                                                                   \
    }

SUBTYPE(BloomType, "Bloom", Bloom_new, Bloom_methods, Bloom_getset,
        "Bloom(capacity, error_rate=0.01, *, layout='standard', seed=0)\n--\n\n"
        "The classic Bloom filter: m bits and k probes, sized for `capacity` keys at `error_rate`. "
        "layout='partitioned' gives each probe its own slice of m/k bits.");
SUBTYPE(BlockedType, "Blocked", Blocked_new, Blocked_methods, Blocked_getset,
        "Blocked(capacity, error_rate=0.01, *, block_bits=256, seed=0)\n--\n\n"
        "The blocked Bloom filter: every probe of a key in one cache line (SIMD), the fastest type; about 10% "
        "more memory than Bloom at 1%. block_bits=512 is smaller at low error rates, slower to insert.");
SUBTYPE(CountingType, "Counting", Counting_new, Counting_methods, Counting_getset,
        "Counting(capacity, error_rate=0.01, *, counter_bits=4, seed=0)\n--\n\n"
        "The counting Bloom filter: keys can be removed. Counters of 4 (or 8) bits, sticky at their maximum so "
        "no removal causes a false negative; 4x (8x) the memory of Bloom.");
SUBTYPE(ScalableType, "Scalable", Scalable_new, Scalable_methods, Scalable_getset,
        "Scalable(capacity=100, error_rate=0.01, *, growth=2, tightening=0.9, max_bytes=None, "
        "nonscaling=False, classic=False, seed=0)\n--\n\n"
        "The scalable Bloom filter for sets of unknown size: a chain of sub-filters, each `growth` times larger "
        "and `tightening` times stricter, so the total error rate stays under error_rate. An add of a key "
        "already (probably) present changes nothing. Growing past max_bytes (default 4 GiB) raises FullError.");
SUBTYPE(CuckooType, "Cuckoo", Cuckoo_new, Cuckoo_methods, Fingerprint_getset,
        "Cuckoo(capacity, error_rate=0.01, *, bucket_size=4, fingerprint_bits=None, max_kicks=500, expansion=0, "
        "load_factor=None, seed=0)\n--\n\n"
        "The cuckoo filter: removal with less memory than Counting at error rates <= 1%. add stores one more copy "
        "of the key's fingerprint each time (as CF.ADD); add_if_absent does not. A full filter raises FullError "
        "unless expansion (a factor) lets it chain a larger table. Only remove keys you added.");
SUBTYPE(FuseType, "Fuse", Fuse_new, NULL, Fingerprint_getset,
        "Fuse(keys, error_rate=None, *, fingerprint_bits=None, seed=0, max_attempts=100)\n--\n\n"
        "The binary fuse filter, built once from all keys (any iterable of keys, or an array of them): the "
        "smallest and fastest to query, it cannot change afterwards. 8-bit fingerprints (error rate 2**-8, "
        "about 9 bits per key) unless fingerprint_bits=16 or an error_rate below 2**-8 asks for 16.");

SUBTYPE(AgingType, "Aging", Aging_new, Aging_methods, Aging_getset,
        "Aging(window=None, error_rate=0.01, *, window_ms=None, capacity=None, generations=4, seed=0)\n--\n\n"
        "The aging filter: \"was this key seen recently?\". Aging(W) remembers the keys of the last W insertions; "
        "Aging(window_ms=T, capacity=n) those of the last T milliseconds (sized for n keys per window). Older keys "
        "are forgotten by themselves, so it never fills up; add_if_absent is the stream-dedup step.");
SUBTYPE(QuotientType, "Quotient", Quotient_new, Quotient_methods, Quotient_getset,
        "Quotient(capacity, error_rate=0.01, *, remainder_bits=None, max_load=None, seed=0)\n--\n\n"
        "The counting quotient filter: removal, counts per key (count_of), unions. A full filter raises "
        "FullError; grow() doubles its slots without the keys (each doubling costs one remainder bit: at the "
        "same load the error rate doubles; plan with remainder_bits).");

static PyMethodDef module_methods[] = {
    M_KW("load", mod_load,
         "load($module, path, *, verify_checksum=True)\n--\n\nReturns Filter. Read a filter file (from Python, the bloomkit "
         "command, a C program or BK.EXPORT) into memory. Damaged or truncated files raise DamagedFileError."),
    M_KW("open", mod_open,
         "open($module, path, *, writable=False, populate=False, verify_checksum=True)\n--\n\nReturns Filter. Map a filter file "
         "without copying it: validated once, then queries read the mapped pages. Read-only unless writable=True "
         "(Bloom, Blocked and Counting files: atomic inserts shared with other processes, as `bloomkit add` "
         "does). populate=True reads the whole file in at once. Use as a context manager or call close()."),
    M_KW("from_bytes", mod_from_bytes,
         "from_bytes($module, data, *, verify_checksum=True)\n--\n\nReturns Filter. A filter from bytes in bloomkit's file "
         "format (bytes(f), a file's contents, a BK.EXPORT reply)."),
    M_KW("hash64", mod_hash64,
         "hash64($module, key, seed=0)\n--\n\nReturns int. The 64-bit hash (XXH3) the filters compute for a key, with the "
         "key rules of this module."),
    M_O("file_info", mod_file_info,
        "file_info($module, data, /)\n--\n\nReturns dict. The validated header at the start of `data` (at least 64 bytes of a "
        "file): version, type, flags, seed, sizes."),
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, MODULE_NAME,
    "The C extension of bloomkit: filter types, files and batches. Import `bloomkit`, not this module.", -1,
    module_methods, NULL, NULL, NULL, NULL};

static PyObject *new_exc(PyObject *m, const char *name, PyObject *bases, const char *doc)
{
    char full[96];
    PyOS_snprintf(full, sizeof full, "bloomkit.%s", name);
    PyObject *e = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    if (!e) return NULL;
    if (PyModule_AddObjectRef(m, name, e) < 0) {
        Py_DECREF(e);
        return NULL;
    }
    return e;
}

PyMODINIT_FUNC PyInit__bloomkit(void)
{
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    if (PyType_Ready(&FilterType) < 0) goto fail;
    PyTypeObject *subs[] = {&BloomType,  &BlockedType, &CountingType, &ScalableType,
                            &CuckooType, &FuseType,    &AgingType,    &QuotientType};
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
        if (PyType_Ready(subs[i]) < 0) goto fail;
    if (PyModule_AddObjectRef(m, "Filter", (PyObject *)&FilterType) < 0) goto fail;
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
        if (PyModule_AddObjectRef(m, subs[i]->tp_name + strlen("bloomkit."), (PyObject *)subs[i]) < 0) goto fail;

    if (!(Error = new_exc(m, "Error", NULL,
                          "Base of the errors the bloomkit library reports; `status` is the library's status code.")))
        goto fail;
    PyObject *b = PyTuple_Pack(2, Error, PyExc_ValueError);
    if (!b) goto fail;
    FileFormatError = new_exc(m, "FileFormatError", b, "The data is not a filter this library can use.");
    IncompatibleError = new_exc(m, "IncompatibleError", b,
                                "The filters differ in type, geometry, layout or seed: they cannot be combined.");
    Py_DECREF(b);
    if (!FileFormatError || !IncompatibleError) goto fail;
    if (!(DamagedFileError = new_exc(m, "DamagedFileError", FileFormatError,
                                     "The data is damaged: bad magic or field, checksum mismatch, or truncated.")))
        goto fail;
    if (!(UnsupportedFileError = new_exc(m, "UnsupportedFileError", FileFormatError,
                                         "The data needs a newer library: unknown format version, type or hash.")))
        goto fail;
    if (!(FullError = new_exc(m, "FullError", Error, "The filter cannot take another key.")))
        goto fail;
    b = PyTuple_Pack(2, Error, PyExc_TypeError);
    if (!b) goto fail;
    UnsupportedOperation = new_exc(m, "UnsupportedOperation", b,
                                   "The filter type (or a read-only mapping) cannot do this.");
    Py_DECREF(b);
    if (!UnsupportedOperation) goto fail;

    if (PyModule_AddStringConstant(m, "library_version", bk_version_string()) < 0) goto fail;
    if (PyModule_AddIntConstant(m, "FORMAT_VERSION_MAJOR", BK_FORMAT_VERSION_MAJOR) < 0) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
