/* bloomkit._bloomkit: copies, set operations, clear and close; saving, bytes and pickling; the Fuse and Ribbon
 * constructor (built once from all keys). */
#include "bkpy.h"

/* ---------------------------------------------------------------------------------------------- */
/* Copies, set operations, clear, close                                                           */
/* ---------------------------------------------------------------------------------------------- */

static PyObject *new_like(FilterObject *o, bk_filter *h)
{
    FilterObject *c = bkpy_filter_alloc(Py_TYPE(o));
    if (!c) {
        bk_filter_free(h);
        return NULL;
    }
    c->f = h;
    c->type = o->type;
    return (PyObject *)c;
}

PyObject *bkpy_Filter_copy(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = bkpy_enter_read(o);
    if (held < 0) return NULL;
    bk_filter *h;
    bk_status s = bk_filter_clone(o->f, &h);
    bkpy_leave(o, held);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_OTHER, "copy");
    return new_like(o, h);
}

PyObject *bkpy_Filter_deepcopy(FilterObject *o, PyObject *memo)
{
    (void)memo;
    return bkpy_Filter_copy(o, NULL);
}

/* Lock a destination for writing and a source for reading (both with the GIL, in address order when
 * either needs the lock). Returns a bit set of held locks (1: dst, 2: src) or -1. */
static int enter_pair(FilterObject *dst, FilterObject *src)
{
    if (dst == src) return bkpy_enter_write(dst);
    if (bkpy_use_check(dst, 1) < 0 || bkpy_use_check(src, 0) < 0) return -1;
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
        return bkpy_closed_error();
    }
    return held;
}

static void leave_pair(FilterObject *dst, FilterObject *src, int held)
{
    if (dst == src) {
        bkpy_leave(dst, held);
        return;
    }
    if (held & 1) pthread_rwlock_unlock(&dst->lock);
    if (held & 2) pthread_rwlock_unlock(&src->lock);
}

static int is_filter(PyObject *x) { return PyObject_TypeCheck(x, &bkpy_FilterType); }

/* dst |= src or dst &= src, in place. */
static int merge_into(FilterObject *dst, FilterObject *src, int intersect)
{
    if (dst->type != src->type) {
        PyErr_Format(bkpy_IncompatibleError, "cannot combine a %s filter with a %s filter", bk_type_name(dst->type),
                     bk_type_name(src->type));
        return -1;
    }
    if (intersect && dst->type != BK_TYPE_BLOOM && dst->type != BK_TYPE_BLOCKED) {
        PyErr_Format(bkpy_UnsupportedOperation, "%s filters have no intersection (only Bloom and Blocked do)",
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
            PyErr_SetString(bkpy_UnsupportedOperation, "the filter is a read-only mapping: copy() or load() it to "
                                                  "change it");
        else
            bkpy_raise_bk(s, CTX_OTHER, intersect ? "intersection" : "union");
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
    PyObject *c = bkpy_Filter_copy(x, NULL);
    if (!c) return NULL;
    if (merge_into((FilterObject *)c, y, intersect) < 0) {
        Py_DECREF(c);
        return NULL;
    }
    return c;
}

PyObject *bkpy_Filter_or(PyObject *a, PyObject *b) { return binary_op(a, b, 0, 0); }
PyObject *bkpy_Filter_and(PyObject *a, PyObject *b) { return binary_op(a, b, 1, 0); }
PyObject *bkpy_Filter_ior(PyObject *a, PyObject *b) { return binary_op(a, b, 0, 1); }
PyObject *bkpy_Filter_iand(PyObject *a, PyObject *b) { return binary_op(a, b, 1, 1); }

PyObject *bkpy_Filter_union(FilterObject *o, PyObject *other) { return binary_op((PyObject *)o, other, 0, 0); }
PyObject *bkpy_Filter_intersection(FilterObject *o, PyObject *other)
{
    return binary_op((PyObject *)o, other, 1, 0);
}

PyObject *bkpy_Filter_compatible(FilterObject *o, PyObject *other)
{
    if (!is_filter(other)) {
        PyErr_SetString(PyExc_TypeError, "compatible() takes a bloomkit filter");
        return NULL;
    }
    FilterObject *b = (FilterObject *)other;
    if (o->type != b->type) Py_RETURN_FALSE;
    int h1 = bkpy_enter_read(o);
    if (h1 < 0) return NULL;
    int h2 = o == b ? LK_NONE : bkpy_enter_read(b);
    if (h2 < 0) {
        bkpy_leave(o, h1);
        return NULL;
    }
    bk_status s = bk_filter_compatible(o->f, b->f);
    if (o != b) bkpy_leave(b, h2);
    bkpy_leave(o, h1);
    return PyBool_FromLong(s == BK_OK);
}

PyObject *bkpy_Filter_clear(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = bkpy_enter_write(o);
    if (held < 0) return NULL;
    bk_status s = bk_filter_clear(o->f);
    bkpy_leave(o, held);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_OTHER, "clear");
    Py_RETURN_NONE;
}

PyObject *bkpy_Filter_close(FilterObject *o, PyObject *unused)
{
    (void)unused;
    if (!o->f) Py_RETURN_NONE;
    if (o->gen != bkpy_fork_gen || o->torn || o->inherited) {
        /* a child's copy (even a half-changed one) closes: nothing else can be using it here, and the
         * library leaves an inherited writable mapping to its opener */
        (void)bkpy_use_check(o, 0);
        PyErr_Clear();
        bkpy_map_unregister(o);
        bk_filter *h = o->f;
        o->f = NULL;
        bk_status s = bk_filter_close(h);
        if (s != BK_OK) return bkpy_raise_bk(s, CTX_OTHER, "close");
        Py_RETURN_NONE;
    }
    if (o->changed || o->bus_seen != bkpy_bus_count) {
        /* a file that changed underneath: unmapped only (nothing of it is finalised) */
        (void)bkpy_bus_slow(o);
        PyErr_Clear();
        if (o->changed) {
            int held = o->readers || o->writers;
            if (held) {
                Py_BEGIN_ALLOW_THREADS
                pthread_rwlock_wrlock(&o->lock);
                Py_END_ALLOW_THREADS
            }
            bk_filter *h = o->f;
            o->f = NULL;
            if (held) pthread_rwlock_unlock(&o->lock);
            bkpy_map_unregister(o);
            if (h) (void)bk_filter_close(h); /* it only unmaps: the file is no longer this filter */
            Py_RETURN_NONE;
        }
    }
    int held = bkpy_enter_write(o);
    if (held < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    bk_filter *h = o->f;
    o->f = NULL;
    if (held) pthread_rwlock_unlock(&o->lock);
    bkpy_map_unregister(o);
    bk_status s = bk_filter_close(h);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_OTHER, "close");
    Py_RETURN_NONE;
}

PyObject *bkpy_Filter_enter(PyObject *o, PyObject *unused)
{
    (void)unused;
    Py_INCREF(o);
    return o;
}

PyObject *bkpy_Filter_exit(FilterObject *o, PyObject *args)
{
    (void)args;
    PyObject *r = bkpy_Filter_close(o, NULL);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

/* ---------------------------------------------------------------------------------------------- */
/* Files and bytes                                                                                */
/* ---------------------------------------------------------------------------------------------- */

PyObject *bkpy_Filter_save(FilterObject *o, PyObject *arg)
{
    PyObject *path;
    if (!PyUnicode_FSConverter(arg, &path)) return NULL;
    if (bkpy_nogil_register(o, 0) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    bk_status s = BK_OK;
    int closed = 0, err = 0;
    const char *p = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    bk_filter *f = bkpy_nogil_lock(o, 0);
    if (!f) closed = 1;
    else {
        s = bk_filter_save_path(f, p);
        err = errno;
    }
    bkpy_nogil_unlock(o);
    Py_END_ALLOW_THREADS
    bkpy_nogil_unregister(o, 0);
    PyObject *r = NULL;
    if (closed) bkpy_closed_error();
    else if (s != BK_OK) {
        errno = err;
        bkpy_raise_bk(s, CTX_OTHER, p);
    } else {
        r = Py_None;
        Py_INCREF(r);
    }
    Py_DECREF(path);
    return r;
}

PyObject *bkpy_Filter_bytes(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = bkpy_enter_read(o);
    if (held < 0) return NULL;
    size_t size;
    bk_status s = bk_filter_save_size(o->f, &size);
    bkpy_leave(o, held);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_OTHER, "bytes");
    if (size > (size_t)PY_SSIZE_T_MAX) return PyErr_NoMemory();
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (!b) return NULL;
    if (bkpy_nogil_register(o, 0) < 0) {
        Py_DECREF(b);
        return NULL;
    }
    int closed = 0;
    size_t written = 0;
    char *dst = PyBytes_AS_STRING(b);
    Py_BEGIN_ALLOW_THREADS
    bk_filter *f = bkpy_nogil_lock(o, 0);
    if (!f) closed = 1;
    else s = bk_filter_save_buffer(f, dst, size, &written);
    bkpy_nogil_unlock(o);
    Py_END_ALLOW_THREADS
    bkpy_nogil_unregister(o, 0);
    if (closed || s != BK_OK || written != size) {
        Py_DECREF(b);
        if (closed) bkpy_closed_error();
        else bkpy_raise_bk(s != BK_OK ? s : BK_EINVAL, CTX_OTHER, "bytes (the filter grew while it was saved)");
        return NULL;
    }
    return b;
}

PyObject *bkpy_Filter_reduce(FilterObject *o, PyObject *unused)
{
    (void)unused;
    PyObject *b = bkpy_Filter_bytes(o, NULL);
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

PyObject *bkpy_Filter_sizeof(FilterObject *o, PyObject *unused)
{
    (void)unused;
    size_t n = sizeof(FilterObject);
    if (o->f && bk_filter_backing(o->f) == BK_BACKING_MEMORY) {
        bk_stats st;
        if (bkpy_get_stats(o, &st) < 0) return NULL;
        n += (size_t)st.memory_bytes;
    }
    return PyLong_FromSize_t(n);
}

PyObject *bkpy_Filter_repr(FilterObject *o)
{
    if (!o->f) return PyUnicode_FromFormat("<%s (closed)>", Py_TYPE(o)->tp_name);
    int held = bkpy_enter_read(o);
    if (held < 0) return NULL;
    bk_stats st;
    bk_filter_stats(o->f, &st);
    bk_backing b = bk_filter_backing(o->f);
    bkpy_leave(o, held);
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

/* Every key of `keys` (an iterable, or an array through the buffer protocol) hashed with `seed` into
 * hs (PyMem_Raw memory: the caller frees hs->h). 0, or -1 with an exception set. */
static int collect_hashes(PyObject *keys, uint64_t seed, const char *what, hashes_t *hs)
{
    source_t src;
    if (bkpy_source_open(&src, keys, what) < 0) return -1;
    if (src.has_view) {
        hs->n = hs->cap = src.nitems;
        hs->h = PyMem_RawMalloc((hs->cap ? hs->cap : 1) * sizeof *hs->h);
        if (!hs->h) {
            PyErr_NoMemory();
            goto fail;
        }
        Py_BEGIN_ALLOW_THREADS
        bkpy_buffer_hashes(&src, 0, src.nitems, seed, hs->h);
        Py_END_ALLOW_THREADS
    } else {
        step_t st;
        if (bkpy_step_init(&st, 1024) < 0) goto fail;
        for (;;) {
            Py_ssize_t m = bkpy_source_fill(&src, &st);
            if (m <= 0) break;
            for (Py_ssize_t i = 0; i < m; i++)
                if (hashes_push(hs, bk_hash64(st.ptr[i], st.len[i], seed)) < 0) break;
            if (PyErr_Occurred()) break;
        }
        bkpy_step_free(&st);
        if (PyErr_Occurred()) goto fail;
    }
    bkpy_source_close(&src);
    return 0;
fail:
    bkpy_source_close(&src);
    return -1;
}

PyObject *bkpy_Fuse_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", "error_rate", "fingerprint_bits", "seed", "max_attempts", NULL};
    PyObject *keys, *rateo = Py_None, *fbo = Py_None, *seedo = NULL, *mao = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$OOO:Fuse", kwlist, &keys, &rateo, &fbo, &seedo, &mao))
        return NULL;
    bk_fuse_options o = BK_FUSE_OPTIONS_INIT;
    if (seedo && bkpy_get_u64(seedo, "seed", &o.seed) < 0) return NULL;
    if (mao && bkpy_get_u32(mao, "max_attempts", &o.max_attempts) < 0) return NULL;
    if (fbo != Py_None) {
        if (bkpy_get_u32(fbo, "fingerprint_bits", &o.fingerprint_bits) < 0) return NULL;
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
    hashes_t hs = {NULL, 0, 0};
    bk_status s;
    bk_fuse *fu = NULL;
    if (collect_hashes(keys, o.seed, "Fuse", &hs) < 0) {
        PyMem_RawFree(hs.h);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    s = bk_fuse_build_hashes(hs.h, hs.n, &o, &fu);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(hs.h);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ARGS, "Fuse");
    return bkpy_wrap_typed(tp, BK_TYPE_FUSE, fu, bkpy_free_fuse);
}

/* ---------------------------------------------------------------------------------------------- */
/* Ribbon: built once from all keys, at any error rate                                            */
/* ---------------------------------------------------------------------------------------------- */

PyObject *bkpy_Ribbon_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", "error_rate", "seed", "max_attempts", NULL};
    PyObject *keys, *rateo = NULL, *seedo = NULL, *mao = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$OO:Ribbon", kwlist, &keys, &rateo, &seedo, &mao)) return NULL;
    bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
    if (seedo && bkpy_get_u64(seedo, "seed", &o.seed) < 0) return NULL;
    if (mao && bkpy_get_u32(mao, "max_attempts", &o.max_attempts) < 0) return NULL;
    o.fpr = BK_RIBBON_DEFAULT_FPR;
    if (rateo && rateo != Py_None) {
        o.fpr = PyFloat_AsDouble(rateo);
        if (o.fpr == -1.0 && PyErr_Occurred()) return NULL;
        if (!(o.fpr > 0 && o.fpr < 1)) {
            PyErr_SetString(PyExc_ValueError, "error_rate must be strictly between 0 and 1");
            return NULL;
        }
        if (o.fpr < BK_RIBBON_MIN_FPR) {
            PyErr_SetString(PyExc_ValueError, "a Ribbon filter reaches error rates down to 1e-09");
            return NULL;
        }
    }
    hashes_t hs = {NULL, 0, 0};
    if (collect_hashes(keys, o.seed, "Ribbon", &hs) < 0) {
        PyMem_RawFree(hs.h);
        return NULL;
    }
    bk_ribbon *r = NULL;
    bk_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bk_ribbon_build_hashes(hs.h, hs.n, &o, &r);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(hs.h);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ARGS, "Ribbon");
    return bkpy_wrap_typed(tp, BK_TYPE_RIBBON, r, bkpy_free_ribbon);
}
