/* bloomkit._bloomkit: the filter object: its locks and GIL-free sections, wrapping library handles, argument
 * helpers, the constructors. */
#include "bkpy.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------------- */
/* The filter object                                                                              */
/* ---------------------------------------------------------------------------------------------- */

static PyTypeObject *type_for(bk_type t)
{
    switch (t) {
    case BK_TYPE_BLOOM: return &bkpy_BloomType;
    case BK_TYPE_BLOCKED: return &bkpy_BlockedType;
    case BK_TYPE_COUNTING: return &bkpy_CountingType;
    case BK_TYPE_SCALABLE: return &bkpy_ScalableType;
    case BK_TYPE_CUCKOO: return &bkpy_CuckooType;
    case BK_TYPE_FUSE: return &bkpy_FuseType;
    case BK_TYPE_RIBBON: return &bkpy_RibbonType;
    case BK_TYPE_AGING: return &bkpy_AgingType;
    case BK_TYPE_QUOTIENT: return &bkpy_QuotientType;
    default: return NULL;
    }
}

int bkpy_closed_error(void)
{
    PyErr_SetString(PyExc_ValueError, "operation on a closed filter");
    return -1;
}

/* The lock of a call that keeps the GIL, taken only when a GIL-free call may be running alongside:
 * a writer (for a read), any GIL-free call (for a write). LK_HELD or LK_NONE, -1 (exception set) when
 * the filter is closed. */
static int enter(FilterObject *o, int write)
{
    if (bkpy_use_check(o, write) < 0) return -1;
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
        return bkpy_closed_error();
    }
    return held;
}
int bkpy_enter_read(FilterObject *o) { return enter(o, 0); }
/* A one-key call's key argument and lock (enter): held, or -1 with an exception set and nothing to
 * release. */
int bkpy_key_enter(FilterObject *o, PyObject *k, key_t_ *key, int write)
{
    if (bkpy_key_get(k, key) < 0) return -1;
    int held = enter(o, write);
    if (held < 0) bkpy_key_done(key);
    return held;
}
int bkpy_enter_write(FilterObject *o) { return enter(o, 1); }

/* A GIL-free section: register (with the GIL), then nogil_lock/nogil_unlock around the work (without
 * the GIL), then unregister (with the GIL). */
int bkpy_nogil_register(FilterObject *o, int write)
{
    if (!o->f) return bkpy_closed_error();
    if (bkpy_use_check(o, write) < 0) return -1;
    if (write) o->writers++;
    else o->readers++;
    return 0;
}
void bkpy_nogil_unregister(FilterObject *o, int write)
{
    if (write) o->writers--;
    else o->readers--;
}

/* The filter's lock: readers and writers, fair to writers (a writer waiting stops new readers, so a
 * one-key add gets its turn behind threads looping over batches of queries). glibc's writer-preferring
 * kind is an enumerator, not a macro: it is chosen by C library, not by #ifdef. */
static int lock_init(pthread_rwlock_t *lock)
{
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
#if defined(__GLIBC__)
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    int rc = pthread_rwlock_init(lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    return rc;
}

unsigned long bkpy_fork_gen;

static void after_fork_child(void) { bkpy_fork_gen++; }

void bkpy_fork_install(void)
{
    static int done;
    if (!done) done = pthread_atfork(NULL, NULL, after_fork_child) == 0;
}

int bkpy_fork_slow(FilterObject *o, int write)
{
    if (o->gen != bkpy_fork_gen) {
        /* first use in a child of fork(): the lock and the counts were the parent's threads' */
        o->gen = bkpy_fork_gen;
        if (o->writers) o->torn = 1;
        o->readers = o->writers = 0;
        o->inherited = 1;
        (void)lock_init(&o->lock); /* only this thread exists: the copied state is dropped */
    }
    if (o->torn) {
        PyErr_SetString(PyExc_RuntimeError,
                        "this filter was being changed by another thread when the process forked: its copy in "
                        "this child may be half-changed; load or open the filter again here, or fork while no "
                        "thread changes it");
        return -1;
    }
    if (write && o->inherited && o->f && bk_filter_backing(o->f) == BK_BACKING_MAP_SHARED) {
        PyErr_SetString(bkpy_UnsupportedOperation,
                        "this filter's file was opened writable by the parent process: a child of fork() can read "
                        "through the mapping but not write; open() the file again in the child to write");
        return -1;
    }
    return 0;
}

/* ---- mapped files changed underneath (bkpy.h) ---- */

#define BUS_SLOTS 64 /* mappings the handler knows at once (more are left to the previous handler) */
#define BUS_RING 16  /* fault addresses remembered */
static struct {
    uintptr_t lo, hi; /* [lo, hi), 0 when free */
} bus_maps[BUS_SLOTS];
static uintptr_t bus_addr[BUS_RING];
volatile unsigned long bkpy_bus_count;
static struct sigaction bus_previous;
static int bus_installed;
static uintptr_t bus_page;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    uintptr_t a = (uintptr_t)si->si_addr;
    if (si->si_code == BUS_ADRERR) {
        for (int i = 0; i < BUS_SLOTS; i++) {
            uintptr_t lo = __atomic_load_n(&bus_maps[i].lo, __ATOMIC_ACQUIRE);
            uintptr_t hi = __atomic_load_n(&bus_maps[i].hi, __ATOMIC_ACQUIRE);
            if (!(lo && a >= lo && a < hi)) continue;
            /* a zero page where the file's page was: the access completes, the caller raises */
            void *page = (void *)(a & ~(bus_page - 1));
            if (mmap(page, bus_page, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) ==
                MAP_FAILED)
                break;
            unsigned long n = __atomic_load_n(&bkpy_bus_count, __ATOMIC_RELAXED);
            __atomic_store_n(&bus_addr[n % BUS_RING], a, __ATOMIC_RELAXED);
            __atomic_add_fetch(&bkpy_bus_count, 1, __ATOMIC_RELEASE);
            return;
        }
    }
    /* not ours: what was there before (faulthandler's, a default that ends the process) */
    if (bus_previous.sa_flags & SA_SIGINFO) {
        bus_previous.sa_sigaction(sig, si, uc);
    } else if (bus_previous.sa_handler != SIG_DFL && bus_previous.sa_handler != SIG_IGN) {
        bus_previous.sa_handler(sig);
    } else {
        /* the default action: returning re-runs the access, which faults again without us */
        signal(SIGBUS, SIG_DFL);
    }
}

void bkpy_map_register(FilterObject *o)
{
    const void *addr;
    size_t len;
    o->map = NULL;
    o->map_len = 0;
    if (!o->f || bk_filter_mapping(o->f, &addr, &len) != BK_OK) return;
    if (!bus_installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        long ps = sysconf(_SC_PAGESIZE);
        bus_page = ps > 0 ? (uintptr_t)ps : 4096;
        if (sigaction(SIGBUS, &sa, &bus_previous) != 0) return;
        bus_installed = 1;
    }
    for (int i = 0; i < BUS_SLOTS; i++) {
        if (bus_maps[i].lo) continue;
        __atomic_store_n(&bus_maps[i].hi, (uintptr_t)addr + len, __ATOMIC_RELEASE);
        __atomic_store_n(&bus_maps[i].lo, (uintptr_t)addr, __ATOMIC_RELEASE);
        o->map = addr;
        o->map_len = len;
        return;
    }
}

void bkpy_map_unregister(FilterObject *o)
{
    if (!o->map) return;
    for (int i = 0; i < BUS_SLOTS; i++) {
        if (bus_maps[i].lo != (uintptr_t)o->map) continue;
        __atomic_store_n(&bus_maps[i].lo, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&bus_maps[i].hi, 0, __ATOMIC_RELEASE);
        break;
    }
    o->map = NULL;
    o->map_len = 0;
}

int bkpy_bus_slow(FilterObject *o)
{
    unsigned long now = __atomic_load_n(&bkpy_bus_count, __ATOMIC_ACQUIRE);
    if (o->map && !o->changed && now != o->bus_seen) {
        uintptr_t lo = (uintptr_t)o->map, hi = lo + o->map_len;
        if (now - o->bus_seen > BUS_RING) {
            o->changed = 1; /* more faults than remembered: this one's may be among them */
        } else {
            for (unsigned long i = o->bus_seen; i != now; i++) {
                uintptr_t a = __atomic_load_n(&bus_addr[i % BUS_RING], __ATOMIC_RELAXED);
                if (a >= lo && a < hi) o->changed = 1;
            }
        }
    }
    o->bus_seen = now;
    if (!o->changed) return 0;
    errno = ESTALE;
    PyErr_SetString(PyExc_OSError,
                    "the filter's file changed while in use (truncated, or another file copied over it in "
                    "place): this mapping no longer holds the filter, and the answer being computed is void. "
                    "close() it and open the file again; replace filter files by renaming a new one over them");
    return -1;
}

FilterObject *bkpy_filter_alloc(PyTypeObject *tp)
{
    FilterObject *o = (FilterObject *)tp->tp_alloc(tp, 0);
    if (!o) return NULL;
    if (lock_init(&o->lock) != 0) {
        Py_TYPE(o)->tp_free((PyObject *)o);
        PyErr_NoMemory();
        return NULL;
    }
    o->f = NULL;
    o->readers = o->writers = 0;
    o->weakrefs = NULL;
    o->gen = bkpy_fork_gen;
    o->torn = o->inherited = o->changed = 0;
    o->bus_seen = bkpy_bus_count;
    o->map = NULL;
    o->map_len = 0;
    return o;
}

/* A new Python object of class tp owning h (taken even on failure). */
static PyObject *object_of(PyTypeObject *tp, bk_type t, bk_filter *h)
{
    FilterObject *o = bkpy_filter_alloc(tp);
    if (!o) {
        bk_filter_free(h);
        return NULL;
    }
    o->f = h;
    o->type = t;
    if (bk_filter_backing(h) != BK_BACKING_MEMORY) bkpy_map_register(o);
    return (PyObject *)o;
}

/* A new Python object of the right class owning h (taken even on failure). */
PyObject *bkpy_wrap_handle(bk_filter *h)
{
    bk_type t = bk_filter_type(h);
    PyTypeObject *tp = type_for(t);
    if (!tp) {
        bk_filter_free(h);
        return bkpy_raise_bk(BK_ETYPE, CTX_FILE, NULL);
    }
    return object_of(tp, t, h);
}

/* Wrap a typed filter into a new handle and Python object (the typed filter is freed on failure). */
PyObject *bkpy_wrap_typed(PyTypeObject *tp, bk_type t, void *typed, typed_free_fn fr)
{
    bk_filter *h;
    bk_status s = bk_filter_wrap(t, typed, &h);
    if (s != BK_OK) {
        fr(typed);
        return bkpy_raise_bk(s, CTX_OTHER, "wrap");
    }
    return object_of(tp, t, h);
}

void bkpy_free_bloom(void *p) { bk_bloom_free(p); }
void bkpy_free_blocked(void *p) { bk_blocked_free(p); }
void bkpy_free_counting(void *p) { bk_counting_free(p); }
void bkpy_free_scalable(void *p) { bk_scalable_free(p); }
void bkpy_free_cuckoo(void *p) { bk_cuckoo_free(p); }
void bkpy_free_fuse(void *p) { bk_fuse_free(p); }
void bkpy_free_ribbon(void *p) { bk_ribbon_free(p); }
void bkpy_free_aging(void *p) { bk_aging_free(p); }
void bkpy_free_quotient(void *p) { bk_quotient_free(p); }

void bkpy_Filter_dealloc(FilterObject *o)
{
    if (o->weakrefs) PyObject_ClearWeakRefs((PyObject *)o);
    if (o->gen != bkpy_fork_gen) (void)lock_init(&o->lock); /* a child's copy: its lock may be held */
    bkpy_map_unregister(o);
    if (o->f) bk_filter_free(o->f);
    o->f = NULL;
    pthread_rwlock_destroy(&o->lock);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

/* ---------------------------------------------------------------------------------------------- */
/* Argument helpers                                                                               */
/* ---------------------------------------------------------------------------------------------- */

/* An unsigned 64-bit argument; ValueError for negatives and non-integers. */
int bkpy_get_u64(PyObject *v, const char *name, uint64_t *out)
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

int bkpy_get_u32(PyObject *v, const char *name, uint32_t *out)
{
    uint64_t x;
    if (bkpy_get_u64(v, name, &x) < 0) return -1;
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

PyObject *bkpy_Bloom_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"capacity", "error_rate", "layout", "seed", NULL};
    PyObject *capo, *seedo = NULL;
    double p = 0.01;
    const char *layout = "standard";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d$sO:Bloom", kwlist, &capo, &p, &layout, &seedo))
        return NULL;
    uint64_t n, seed = 0;
    if (bkpy_get_u64(capo, "capacity", &n) < 0 || (seedo && bkpy_get_u64(seedo, "seed", &seed) < 0)) return NULL;
    if (check_capacity_rate(n, p, 0) < 0) return NULL;
    bk_bloom_options o = { .layout = BK_LAYOUT_STANDARD, .seed = seed };
    if (strcmp(layout, "partitioned") == 0) o.layout = BK_LAYOUT_PARTITIONED;
    else if (strcmp(layout, "standard") != 0) {
        PyErr_Format(PyExc_ValueError, "layout must be 'standard' or 'partitioned', not '%s'", layout);
        return NULL;
    }
    bk_bloom *b;
    bk_status s = bk_bloom_new(n, p, &o, &b);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ARGS, "Bloom");
    return bkpy_wrap_typed(tp, BK_TYPE_BLOOM, b, bkpy_free_bloom);
}

PyObject *bkpy_Blocked_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"capacity", "error_rate", "block_bits", "seed", NULL};
    PyObject *capo, *seedo = NULL;
    double p = 0.01;
    int block_bits = 256;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d$iO:Blocked", kwlist, &capo, &p, &block_bits, &seedo))
        return NULL;
    uint64_t n, seed = 0;
    if (bkpy_get_u64(capo, "capacity", &n) < 0 || (seedo && bkpy_get_u64(seedo, "seed", &seed) < 0)) return NULL;
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
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ARGS, "Blocked");
    return bkpy_wrap_typed(tp, BK_TYPE_BLOCKED, b, bkpy_free_blocked);
}

PyObject *bkpy_Counting_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"capacity", "error_rate", "counter_bits", "seed", NULL};
    PyObject *capo, *seedo = NULL;
    double p = 0.01;
    int bits = 4;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d$iO:Counting", kwlist, &capo, &p, &bits, &seedo))
        return NULL;
    uint64_t n, seed = 0;
    if (bkpy_get_u64(capo, "capacity", &n) < 0 || (seedo && bkpy_get_u64(seedo, "seed", &seed) < 0)) return NULL;
    if (check_capacity_rate(n, p, 0) < 0) return NULL;
    if (bits != 4 && bits != 8) {
        PyErr_Format(PyExc_ValueError, "counter_bits must be 4 or 8, not %d", bits);
        return NULL;
    }
    bk_counting_options o = { .counter_bits = (uint32_t)bits, .seed = seed };
    bk_counting *c;
    bk_status s = bk_counting_new(n, p, &o, &c);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ARGS, "Counting");
    return bkpy_wrap_typed(tp, BK_TYPE_COUNTING, c, bkpy_free_counting);
}

PyObject *bkpy_Scalable_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
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
    if (capo && bkpy_get_u64(capo, "capacity", &n) < 0) return NULL;
    if (seedo && bkpy_get_u64(seedo, "seed", &o.seed) < 0) return NULL;
    if (maxo != Py_None && bkpy_get_u64(maxo, "max_bytes", &o.max_bytes) < 0) return NULL;
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
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ARGS, "Scalable");
    return bkpy_wrap_typed(tp, BK_TYPE_SCALABLE, sf, bkpy_free_scalable);
}

PyObject *bkpy_Cuckoo_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
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
    if (bkpy_get_u64(capo, "capacity", &n) < 0) return NULL;
    if (seedo && bkpy_get_u64(seedo, "seed", &o.seed) < 0) return NULL;
    if (bso && bkpy_get_u32(bso, "bucket_size", &o.bucket_size) < 0) return NULL;
    if (fbo != Py_None && bkpy_get_u32(fbo, "fingerprint_bits", &o.fingerprint_bits) < 0) return NULL;
    if (mko && bkpy_get_u32(mko, "max_kicks", &o.max_kicks) < 0) return NULL;
    if (exo && bkpy_get_u32(exo, "expansion", &o.expansion) < 0) return NULL;
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
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ARGS, "Cuckoo");
    return bkpy_wrap_typed(tp, BK_TYPE_CUCKOO, c, bkpy_free_cuckoo);
}

PyObject *bkpy_Aging_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"window", "error_rate", "window_ms", "capacity", "generations", "seed", NULL};
    PyObject *wo = Py_None, *wmso = Py_None, *capo = Py_None, *seedo = NULL, *go = NULL;
    double p = 0.01;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Od$OOOO:Aging", kwlist, &wo, &p, &wmso, &capo, &go, &seedo))
        return NULL;
    bk_aging_options o = BK_AGING_OPTIONS_INIT;
    if (seedo && bkpy_get_u64(seedo, "seed", &o.seed) < 0) return NULL;
    if (go && bkpy_get_u32(go, "generations", &o.generations) < 0) return NULL;
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
        if (bkpy_get_u64(wo, "window", &w) < 0 || check_capacity_rate(w, p, 0) < 0) return NULL;
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
        if (bkpy_get_u64(wmso, "window_ms", &ms) < 0 || bkpy_get_u64(capo, "capacity", &n) < 0) return NULL;
        if (check_capacity_rate(n, p, 0) < 0) return NULL;
        s = bk_aging_new_time(ms, n, p, &o, &a);
    }
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ARGS, "Aging");
    return bkpy_wrap_typed(tp, BK_TYPE_AGING, a, bkpy_free_aging);
}

PyObject *bkpy_Quotient_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"capacity", "error_rate", "remainder_bits", "max_load", "seed", NULL};
    PyObject *capo, *rbo = Py_None, *seedo = NULL, *mlo = Py_None;
    double p = 0.01, ml = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d$OOO:Quotient", kwlist, &capo, &p, &rbo, &mlo, &seedo))
        return NULL;
    if (mlo != Py_None && (ml = PyFloat_AsDouble(mlo)) == -1.0 && PyErr_Occurred()) return NULL;
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    uint64_t n;
    if (bkpy_get_u64(capo, "capacity", &n) < 0) return NULL;
    if (seedo && bkpy_get_u64(seedo, "seed", &o.seed) < 0) return NULL;
    if (rbo != Py_None && bkpy_get_u32(rbo, "remainder_bits", &o.remainder_bits) < 0) return NULL;
    if (rbo != Py_None && (o.remainder_bits < 2 || o.remainder_bits > 32)) {
        PyErr_SetString(PyExc_ValueError, "remainder_bits must be 2 .. 32");
        return NULL;
    }
    if (ml != 0.0 && !(ml >= BK_QUOTIENT_MIN_MAX_LOAD && ml <= 1.0)) {
        PyErr_SetString(PyExc_ValueError, "max_load must be in [0.25, 1]");
        return NULL;
    }
    o.max_load = ml;
    if (check_capacity_rate(n, p, 0) < 0) return NULL;
    bk_quotient *q;
    bk_status s = bk_quotient_new(n, p, &o, &q);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ARGS, "Quotient");
    return bkpy_wrap_typed(tp, BK_TYPE_QUOTIENT, q, bkpy_free_quotient);
}
