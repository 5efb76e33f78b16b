/* bloomkit._bloomkit: queries, inserts and batches on a filter; its statistics and properties. */
#include "bkpy.h"

/* ---------------------------------------------------------------------------------------------- */
/* Query and insert                                                                               */
/* ---------------------------------------------------------------------------------------------- */

int bkpy_Filter_sq_contains(FilterObject *o, PyObject *k)
{
    key_t_ key;
    int held = bkpy_key_enter(o, k, &key, 0);
    if (held < 0) return -1;
    int r = bk_filter_contains(o->f, key.p, key.n);
    int bad = bkpy_leave(o, held);
    bkpy_key_done(&key);
    return bad < 0 ? -1 : r;
}

PyObject *bkpy_Filter_contains(FilterObject *o, PyObject *k)
{
    int r = bkpy_Filter_sq_contains(o, k);
    if (r < 0) return NULL;
    return PyBool_FromLong(r);
}

PyObject *bkpy_Filter_add(FilterObject *o, PyObject *k)
{
    key_t_ key;
    int held = bkpy_key_enter(o, k, &key, 1);
    if (held < 0) return NULL;
    bk_status s = bk_filter_add(o->f, key.p, key.n);
    int bad = bkpy_leave(o, held);
    bkpy_key_done(&key);
    if (bad < 0) return NULL;
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ADD, "add");
    Py_RETURN_NONE;
}

/* Insert unless probably present; True if the key was new. */
PyObject *bkpy_Filter_add_if_absent(FilterObject *o, PyObject *k)
{
    key_t_ key;
    int held = bkpy_key_enter(o, k, &key, 1);
    if (held < 0) return NULL;
    bk_status s = bk_filter_add_if_absent(o->f, key.p, key.n);
    int bad = bkpy_leave(o, held);
    bkpy_key_done(&key);
    if (bad < 0) return NULL;
    if (s == BK_EEXISTS) Py_RETURN_FALSE;
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ADD, "add_if_absent");
    Py_RETURN_TRUE;
}

static PyObject *do_remove(FilterObject *o, PyObject *k, int raise_missing)
{
    key_t_ key;
    int held = bkpy_key_enter(o, k, &key, 1);
    if (held < 0) return NULL;
    bk_status s = bk_filter_remove(o->f, key.p, key.n);
    bkpy_leave(o, held);
    bkpy_key_done(&key);
    if (s == BK_ENOTFOUND) {
        if (!raise_missing) Py_RETURN_FALSE;
        PyErr_SetObject(PyExc_KeyError, k);
        return NULL;
    }
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_OTHER, "remove");
    if (!raise_missing) Py_RETURN_TRUE;
    Py_RETURN_NONE;
}

PyObject *bkpy_Filter_remove(FilterObject *o, PyObject *k) { return do_remove(o, k, 1); }
PyObject *bkpy_Filter_discard(FilterObject *o, PyObject *k) { return do_remove(o, k, 0); }

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
        f = bkpy_nogil_lock(o, write);
    }
    if (!f) {
        *closed = 1;
    } else {
        uint64_t seed = bk_filter_seed(f);
        for (size_t i = 0; i < src->nitems; i += HASH_CHUNK) {
            size_t m = src->nitems - i < HASH_CHUNK ? src->nitems - i : HASH_CHUNK;
            bkpy_buffer_hashes(src, i, m, seed, h);
            if (write) {
                s = bk_filter_add_hashes(f, h, m, NULL);
                if (s != BK_OK) break;
            } else {
                bk_filter_contains_hashes(f, h, m, results + i, NULL);
            }
        }
    }
    if (nogil) {
        bkpy_nogil_unlock(o);
        PyEval_RestoreThread(ts);
    }
    return s;
}

/* contains_many / add_many for every kind of source. */
static PyObject *batch(FilterObject *o, PyObject *keys, PyObject *out, int write, const char *what)
{
    source_t src;
    if (!o->f) {
        bkpy_closed_error();
        return NULL;
    }
    if (bkpy_source_open(&src, keys, what) < 0) return NULL;
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
            if (bkpy_nogil_register(o, write) < 0) goto done;
        } else {
            held = write ? bkpy_enter_write(o) : bkpy_enter_read(o);
            if (held < 0) goto done;
        }
        s = buffer_batch(o, &src, write ? NULL : res.data, nogil, &closed);
        if (nogil) bkpy_nogil_unregister(o, write);
        if ((nogil ? bkpy_leave(o, 0) : bkpy_leave(o, held)) < 0) goto done;
        if (!write) res.used = n;
    } else {
        size_t hint = src.seq ? (size_t)PySequence_Fast_GET_SIZE(src.seq) : STEP_KEYS;
        step_t st;
        if (bkpy_step_init(&st, hint < STEP_KEYS ? hint : STEP_KEYS) < 0) goto done;
        if (!write) {
            if (results_open(&res, out, src.seq ? hint : 0) < 0) {
                bkpy_step_free(&st);
                goto done;
            }
            have_res = 1;
        }
        if (bkpy_nogil_register(o, write) < 0) {
            bkpy_step_free(&st);
            goto done;
        }
        for (;;) {
            Py_ssize_t m = bkpy_source_fill(&src, &st);
            if (m < 0) break;
            if (m == 0) break;
            if (!write && results_reserve(&res, (size_t)m) < 0) {
                m = -1;
                break;
            }
            uint8_t *rp = write ? NULL : res.data + res.used;
            if (m >= NOGIL_MIN) {
                Py_BEGIN_ALLOW_THREADS
                bk_filter *f = bkpy_nogil_lock(o, write);
                if (!f) closed = 1;
                else if (write) s = bk_filter_add_many(f, st.ptr, st.len, (size_t)m, NULL);
                else bk_filter_contains_many(f, st.ptr, st.len, (size_t)m, rp, NULL);
                bkpy_nogil_unlock(o);
                Py_END_ALLOW_THREADS
            } else {
                /* registered as a GIL-free caller, so take the lock as they do (never contended for
                 * long: nobody holds it while waiting for the GIL) */
                bk_filter *f;
                Py_BEGIN_ALLOW_THREADS
                f = bkpy_nogil_lock(o, write);
                Py_END_ALLOW_THREADS
                if (!f) closed = 1;
                else if (write) s = bk_filter_add_many(f, st.ptr, st.len, (size_t)m, NULL);
                else bk_filter_contains_many(f, st.ptr, st.len, (size_t)m, rp, NULL);
                bkpy_nogil_unlock(o);
            }
            if (closed || s != BK_OK) break;
            if (!write) res.used += (size_t)m;
        }
        bkpy_nogil_unregister(o, write);
        bkpy_step_free(&st);
        if (PyErr_Occurred() || bkpy_leave(o, 0) < 0) goto done;
    }
    if (closed) {
        bkpy_closed_error();
        goto done;
    }
    if (s != BK_OK) {
        bkpy_raise_bk(s, CTX_ADD, what);
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
    bkpy_source_close(&src);
    return ret;
}

PyObject *bkpy_Filter_contains_many(FilterObject *o, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", "out", NULL};
    PyObject *keys, *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$O:contains_many", kwlist, &keys, &out)) return NULL;
    return batch(o, keys, out, 0, "contains_many");
}

PyObject *bkpy_Filter_add_many(FilterObject *o, PyObject *keys)
{
    return batch(o, keys, NULL, 1, "add_many");
}

/* ---------------------------------------------------------------------------------------------- */
/* Statistics and properties                                                                      */
/* ---------------------------------------------------------------------------------------------- */

int bkpy_get_stats(FilterObject *o, bk_stats *st)
{
    int held = bkpy_enter_read(o);
    if (held < 0) return -1;
    bk_status s = bk_filter_stats(o->f, st);
    if (bkpy_leave(o, held) < 0) return -1;
    if (s != BK_OK) {
        bkpy_raise_bk(s, CTX_OTHER, "stats");
        return -1;
    }
    return 0;
}

PyObject *bkpy_Filter_stats(FilterObject *o, PyObject *unused)
{
    (void)unused;
    bk_stats st;
    if (bkpy_get_stats(o, &st) < 0) return NULL;
    return Py_BuildValue(
        "{s:s,s:I,s:K,s:K,s:K,s:K,s:d,s:d,s:d,s:d,s:d,s:O,s:K,s:I,s:K}", "type", bk_type_name(st.type), "k",
        (unsigned)st.k, "capacity", (unsigned long long)st.capacity, "count", (unsigned long long)st.count,
        "bits", (unsigned long long)st.bits, "memory_bytes", (unsigned long long)st.memory_bytes,
        "bits_per_key", st.bits_per_key, "fill_ratio", st.fill_ratio, "est_cardinality", st.est_cardinality,
        "fpr_target", st.fpr_target, "fpr_now", st.fpr_now, "saturated", st.saturated ? Py_True : Py_False,
        "saturated_cells", (unsigned long long)st.saturated_cells, "subfilters", (unsigned)st.subfilters,
        "seed", (unsigned long long)st.seed);
}

Py_ssize_t bkpy_Filter_len(FilterObject *o)
{
    bk_stats st;
    if (bkpy_get_stats(o, &st) < 0) return -1;
    double e = st.est_cardinality;
    if (!(e >= 0)) e = 0;
    if (e + 0.5 >= 9223372036854775808.0) { /* 2^63: no real filter holds that many keys */
        PyErr_Format(PyExc_OverflowError,
                     "the filter reports %.4g keys, more than len() can return: its count is not believable "
                     "(a damaged or crafted file?); stats() shows the raw figures", e);
        return -1;
    }
    return (Py_ssize_t)(e + 0.5);
}

PyObject *bkpy_Filter_get_count(FilterObject *o, void *c)
{
    (void)c;
    int held = bkpy_enter_read(o);
    if (held < 0) return NULL;
    uint64_t n = bk_filter_count(o->f);
    bkpy_leave(o, held);
    return PyLong_FromUnsignedLongLong(n);
}

int bkpy_Filter_bool(FilterObject *o)
{
    int held = bkpy_enter_read(o);
    if (held < 0) return -1;
    uint64_t n = bk_filter_count(o->f);
    bkpy_leave(o, held);
    return n != 0;
}

PyObject *bkpy_Filter_get_stat(FilterObject *o, void *which)
{
    bk_stats st;
    if (bkpy_get_stats(o, &st) < 0) return NULL;
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

PyObject *bkpy_Filter_get_seed(FilterObject *o, void *c)
{
    (void)c;
    if (!o->f) {
        bkpy_closed_error();
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(bk_filter_seed(o->f));
}

PyObject *bkpy_Filter_get_type_name(FilterObject *o, void *c)
{
    (void)c;
    return PyUnicode_FromString(bk_type_name(o->type));
}

PyObject *bkpy_Filter_get_backing(FilterObject *o, void *c)
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

PyObject *bkpy_Filter_get_closed(FilterObject *o, void *c)
{
    (void)c;
    return PyBool_FromLong(o->f == NULL);
}

/* Type-specific read-only attributes. */
PyObject *bkpy_Filter_get_layout(FilterObject *o, void *c)
{
    (void)c;
    int held = bkpy_enter_read(o);
    if (held < 0) return NULL;
    PyObject *r;
    if (o->type == BK_TYPE_BLOOM)
        r = PyUnicode_FromString(bk_bloom_layout_of(bk_filter_get(o->f, BK_TYPE_BLOOM)) == BK_LAYOUT_PARTITIONED
                                        ? "partitioned" : "standard");
    else
        r = PyLong_FromLong(bk_blocked_layout_of(bk_filter_get(o->f, BK_TYPE_BLOCKED)) == BK_BLOCKED_512 ? 512 : 256);
    bkpy_leave(o, held);
    return r;
}

PyObject *bkpy_Filter_get_counter_bits(FilterObject *o, void *c)
{
    (void)c;
    int held = bkpy_enter_read(o);
    if (held < 0) return NULL;
    PyObject *r = PyLong_FromUnsignedLong(bk_counting_counter_bits(bk_filter_get(o->f, BK_TYPE_COUNTING)));
    bkpy_leave(o, held);
    return r;
}

PyObject *bkpy_Filter_get_fingerprint_bits(FilterObject *o, void *c)
{
    (void)c;
    int held = bkpy_enter_read(o);
    if (held < 0) return NULL;
    PyObject *r;
    if (o->type == BK_TYPE_FUSE) {
        r = PyLong_FromUnsignedLong(bk_fuse_fingerprint_bits(bk_filter_get(o->f, BK_TYPE_FUSE)));
    } else {
        bk_cuckoo_info in;
        bk_cuckoo_get_info(bk_filter_get(o->f, BK_TYPE_CUCKOO), &in);
        r = PyLong_FromUnsignedLong(in.fingerprint_bits);
    }
    bkpy_leave(o, held);
    return r;
}

PyObject *bkpy_Scalable_get(FilterObject *o, void *which)
{
    int held = bkpy_enter_read(o);
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
    bkpy_leave(o, held);
    return r;
}

PyObject *bkpy_Cuckoo_info(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = bkpy_enter_read(o);
    if (held < 0) return NULL;
    bk_cuckoo_info in;
    bk_cuckoo_get_info(bk_filter_get(o->f, BK_TYPE_CUCKOO), &in);
    bkpy_leave(o, held);
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

PyObject *bkpy_Cuckoo_count_of(FilterObject *o, PyObject *k)
{
    key_t_ key;
    int held = bkpy_key_enter(o, k, &key, 0);
    if (held < 0) return NULL;
    uint64_t n = o->type == BK_TYPE_QUOTIENT ? bk_quotient_count(bk_filter_get(o->f, BK_TYPE_QUOTIENT), key.p, key.n)
                                            : bk_cuckoo_count(bk_filter_get(o->f, BK_TYPE_CUCKOO), key.p, key.n);
    bkpy_leave(o, held);
    bkpy_key_done(&key);
    return PyLong_FromUnsignedLongLong(n);
}

PyObject *bkpy_Aging_info(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = bkpy_enter_read(o);
    if (held < 0) return NULL;
    bk_aging_info in;
    bk_status s = bk_aging_get_info(bk_filter_get(o->f, BK_TYPE_AGING), &in);
    bkpy_leave(o, held);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_OTHER, "info");
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

PyObject *bkpy_Aging_advance(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = bkpy_enter_write(o);
    if (held < 0) return NULL;
    if (bk_filter_backing(o->f) == BK_BACKING_MEMORY) bk_aging_advance(bk_filter_get(o->f, BK_TYPE_AGING));
    bkpy_leave(o, held);
    Py_RETURN_NONE;
}

PyObject *bkpy_Aging_get(FilterObject *o, void *which)
{
    int held = bkpy_enter_read(o);
    if (held < 0) return NULL;
    const bk_aging *a = bk_filter_get(o->f, BK_TYPE_AGING);
    PyObject *r = NULL;
    switch ((int)(intptr_t)which) {
    case AG_MODE: r = PyUnicode_FromString(bk_aging_mode_of(a) == BK_AGING_TIME ? "time" : "count"); break;
    case AG_WINDOW: r = PyLong_FromUnsignedLongLong(bk_aging_window(a)); break;
    case AG_GENERATIONS: r = PyLong_FromUnsignedLong(bk_aging_generations(a)); break;
    }
    bkpy_leave(o, held);
    return r;
}

PyObject *bkpy_Quotient_get_remainder_bits(FilterObject *o, void *c)
{
    (void)c;
    int held = bkpy_enter_read(o);
    if (held < 0) return NULL;
    PyObject *r = PyLong_FromUnsignedLong(bk_quotient_remainder_bits(bk_filter_get(o->f, BK_TYPE_QUOTIENT)));
    bkpy_leave(o, held);
    return r;
}

PyObject *bkpy_Quotient_get_stages(FilterObject *o, void *c)
{
    (void)c;
    int held = bkpy_enter_read(o);
    if (held < 0) return NULL;
    PyObject *r = PyLong_FromUnsignedLong(bk_quotient_stages(bk_filter_get(o->f, BK_TYPE_QUOTIENT)));
    bkpy_leave(o, held);
    return r;
}

PyObject *bkpy_Quotient_expand(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = bkpy_enter_write(o);
    if (held < 0) return NULL;
    bk_status s = bk_filter_backing(o->f) == BK_BACKING_MEMORY
                      ? bk_quotient_expand(bk_filter_get(o->f, BK_TYPE_QUOTIENT)) : BK_ENOTSUP;
    bkpy_leave(o, held);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ADD, "expand");
    Py_RETURN_NONE;
}

PyObject *bkpy_Quotient_grow(FilterObject *o, PyObject *unused)
{
    (void)unused;
    int held = bkpy_enter_write(o);
    if (held < 0) return NULL;
    bk_status s = bk_filter_backing(o->f) == BK_BACKING_MEMORY
                      ? bk_quotient_grow(bk_filter_get(o->f, BK_TYPE_QUOTIENT)) : BK_ENOTSUP;
    bkpy_leave(o, held);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ADD, "grow");
    Py_RETURN_NONE;
}
