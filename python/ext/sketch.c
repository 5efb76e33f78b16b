/* The two sketches: bloomkit.CountMinSketch (bk_cms) and bloomkit.TopK (bk_topk). They are not filters
 * (no Filter base): small objects holding the typed sketch, called with the GIL held (every call is
 * short), saved and loaded through the library's saved form. */
#include "bkpy.h"

/* One object layout for both: the typed sketch. */
typedef struct {
    PyObject_HEAD
    union {
        bk_cms *c;
        bk_topk *t;
        void *p;
    };
} SketchObject;
typedef SketchObject CmsObject;
typedef SketchObject TopkObject;

PyTypeObject bkpy_CmsType, bkpy_TopkType;

/* What the shared calls need of each: its type in the saved form, free and clear, and one key's
 * increment (the object's answer: CMS's estimate, Top-K's expelled key) and query. */
typedef struct sk_kind {
    bk_type type;
    void (*free)(void *);
    void (*clear)(void *);
    PyObject *(*incr)(SketchObject *o, const key_t_ *key, uint32_t n, bool answer);
    PyObject *(*query)(SketchObject *o, const key_t_ *key);
} sk_kind;
static const sk_kind cms_kind, topk_kind;

static const sk_kind *kind_of(PyTypeObject *tp)
{
    return PyType_IsSubtype(tp, &bkpy_CmsType) ? &cms_kind : &topk_kind;
}

/* A new object of type tp holding typed (freed when the object cannot be made). */
static PyObject *sk_wrap(PyTypeObject *tp, void *typed)
{
    SketchObject *self = (SketchObject *)tp->tp_alloc(tp, 0);
    if (!self) {
        kind_of(tp)->free(typed);
        return NULL;
    }
    self->p = typed;
    return (PyObject *)self;
}

/* ---- the saved form of either ---- */

static PyObject *saved_bytes(bk_type type, void *typed)
{
    bk_filter *h;
    bk_status s = bk_filter_wrap(type, typed, &h);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_OTHER, "to_bytes");
    size_t n = 0, w = 0;
    PyObject *out = NULL;
    if ((s = bk_filter_save_size(h, &n)) == BK_OK && (out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n)) &&
        (s = bk_filter_save_buffer(h, PyBytes_AS_STRING(out), n, &w)) != BK_OK)
        Py_CLEAR(out);
    void *back;
    bk_filter_unwrap(h, type, &back);
    if (!out && !PyErr_Occurred()) bkpy_raise_bk(s, CTX_OTHER, "to_bytes");
    return out;
}

static void *from_saved(PyObject *data, bk_type type)
{
    Py_buffer v;
    if (PyObject_GetBuffer(data, &v, PyBUF_SIMPLE) < 0) return NULL;
    bk_filter *h = NULL;
    bk_status s = bk_filter_load_buffer(v.buf, (size_t)v.len, BK_LOAD_DEFAULT, &h);
    PyBuffer_Release(&v);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_FILE, NULL);
    void *typed = NULL;
    if (bk_filter_unwrap(h, type, &typed) != BK_OK) {
        bk_filter_free(h);
        return bkpy_raise_bk(BK_ETYPE, CTX_FILE, NULL);
    }
    return typed;
}

/* ---- CountMinSketch ---- */

static PyObject *Cms_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"width", "depth", "error", "prob", "conservative", "seed", NULL};
    PyObject *width = Py_None, *depth = Py_None, *error = Py_None, *prob = Py_None;
    int conservative = 0;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO$OOpK", kwlist, &width, &depth, &error, &prob, &conservative,
                                     &seed))
        return NULL;
    bk_cms_options o = BK_CMS_OPTIONS_INIT;
    o.conservative = conservative;
    o.seed = seed;
    bk_cms *c = NULL;
    bk_status s;
    if (width != Py_None || depth != Py_None) {
        uint64_t w;
        uint32_t d;
        if (width == Py_None || depth == Py_None || error != Py_None || prob != Py_None) {
            PyErr_SetString(PyExc_ValueError, "give width and depth, or error and prob");
            return NULL;
        }
        if (bkpy_get_u64(width, "width", &w) < 0 || bkpy_get_u32(depth, "depth", &d) < 0) return NULL;
        s = bk_cms_new(w, d, &o, &c);
    } else {
        double e = error == Py_None ? 0.001 : PyFloat_AsDouble(error);
        double p = prob == Py_None ? 0.01 : PyFloat_AsDouble(prob);
        if (PyErr_Occurred()) return NULL;
        s = bk_cms_new_prob(e, p, &o, &c);
    }
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ARGS, NULL);
    return sk_wrap(tp, c);
}

static void Sketch_dealloc(SketchObject *o)
{
    kind_of(Py_TYPE(o))->free(o->p);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static int get_count(PyObject *v, uint32_t *out)
{
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (overflow < 0 || (!overflow && n < 0)) {
        PyErr_SetString(PyExc_ValueError, "a count is an integer >= 0");
        return -1;
    }
    *out = overflow > 0 || (unsigned long long)n > UINT32_MAX ? UINT32_MAX : (uint32_t)n; /* counts saturate */
    return 0;
}

/* incrby(key, n=1) of either: the kind's answer. */
static PyObject *Sketch_incrby(SketchObject *o, PyObject *args)
{
    PyObject *k, *nobj = NULL;
    if (!PyArg_ParseTuple(args, "O|O", &k, &nobj)) return NULL;
    uint32_t n = 1;
    if (nobj && get_count(nobj, &n) < 0) return NULL;
    key_t_ key;
    if (bkpy_key_get(k, &key) < 0) return NULL;
    PyObject *r = kind_of(Py_TYPE(o))->incr(o, &key, n, true);
    bkpy_key_done(&key);
    return r;
}

/* update(keys) of either: each key counted once. */
static PyObject *Sketch_update(SketchObject *o, PyObject *iterable)
{
    const sk_kind *kd = kind_of(Py_TYPE(o));
    PyObject *it = PyObject_GetIter(iterable);
    if (!it) return NULL;
    PyObject *k;
    while ((k = PyIter_Next(it))) {
        key_t_ key;
        int rc = bkpy_key_get(k, &key);
        Py_DECREF(k);
        if (rc < 0) break;
        PyObject *r = kd->incr(o, &key, 1, false);
        bkpy_key_done(&key);
        if (!r) break;
        Py_DECREF(r);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* query(key) of either: the kind's answer. */
static PyObject *Sketch_query(SketchObject *o, PyObject *k)
{
    key_t_ key;
    if (bkpy_key_get(k, &key) < 0) return NULL;
    PyObject *r = kind_of(Py_TYPE(o))->query(o, &key);
    bkpy_key_done(&key);
    return r;
}

static PyObject *cms_incr(SketchObject *o, const key_t_ *key, uint32_t n, bool answer)
{
    uint64_t est = 0;
    bk_cms_incrby(o->c, key->p, key->n, n, answer ? &est : NULL);
    return answer ? PyLong_FromUnsignedLongLong(est) : Py_NewRef(Py_None);
}

static PyObject *cms_query(SketchObject *o, const key_t_ *key)
{
    return PyLong_FromUnsignedLongLong(bk_cms_query(o->c, key->p, key->n));
}

static PyObject *Cms_merge(CmsObject *o, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"sketches", "weights", NULL};
    PyObject *seq, *wobj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &seq, &wobj)) return NULL;
    PyObject *fast = PySequence_Fast(seq, "sketches must be a sequence of CountMinSketch");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject *wf = wobj == Py_None ? NULL : PySequence_Fast(wobj, "weights must be a sequence of int");
    if (wobj != Py_None && !wf) {
        Py_DECREF(fast);
        return NULL;
    }
    PyObject *ret = NULL;
    const bk_cms **srcs = PyMem_Calloc((size_t)(n ? n : 1), sizeof *srcs);
    int64_t *w = PyMem_Calloc((size_t)(n ? n : 1), sizeof *w);
    if (!srcs || !w) {
        PyErr_NoMemory();
        goto done;
    }
    if (wf && PySequence_Fast_GET_SIZE(wf) != n) {
        PyErr_SetString(PyExc_ValueError, "one weight per sketch");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyObject_TypeCheck(x, &bkpy_CmsType)) {
            PyErr_SetString(PyExc_TypeError, "sketches must be CountMinSketch objects");
            goto done;
        }
        srcs[i] = ((CmsObject *)x)->c;
        w[i] = 1;
        if (wf) {
            long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(wf, i));
            if (v == -1 && PyErr_Occurred()) goto done;
            w[i] = v;
        }
    }
    bk_status s = bk_cms_merge(o->c, srcs, w, (size_t)n);
    if (s != BK_OK) {
        bkpy_raise_bk(s, CTX_ARGS, NULL);
        goto done;
    }
    ret = Py_NewRef(Py_None);
done:
    PyMem_Free(srcs);
    PyMem_Free(w);
    Py_DECREF(fast);
    Py_XDECREF(wf);
    return ret;
}

static PyObject *Sketch_clear(SketchObject *o, PyObject *unused)
{
    (void)unused;
    kind_of(Py_TYPE(o))->clear(o->p);
    Py_RETURN_NONE;
}

static PyObject *Sketch_to_bytes(SketchObject *o, PyObject *unused)
{
    (void)unused;
    return saved_bytes(kind_of(Py_TYPE(o))->type, o->p);
}

static PyObject *Sketch_from_bytes(PyObject *cls, PyObject *data)
{
    void *typed = from_saved(data, kind_of((PyTypeObject *)cls)->type);
    return typed ? sk_wrap((PyTypeObject *)cls, typed) : NULL;
}

static PyObject *Cms_get(CmsObject *o, void *which)
{
    switch ((int)(intptr_t)which) {
    case 0: return PyLong_FromUnsignedLongLong(bk_cms_width(o->c));
    case 1: return PyLong_FromUnsignedLong(bk_cms_depth(o->c));
    case 2: return PyLong_FromUnsignedLongLong(bk_cms_total(o->c));
    case 3: return PyBool_FromLong(bk_cms_conservative(o->c));
    default: return PyLong_FromUnsignedLongLong(bk_cms_seed(o->c));
    }
}

static PyObject *Cms_subscript(CmsObject *o, PyObject *k) { return Sketch_query(o, k); }

static PyMethodDef cms_methods[] = {
    {"incrby", (PyCFunction)Sketch_incrby, METH_VARARGS,
     "incrby(key, n=1) -> int: add n to key's count; returns its estimate after the change."},
    {"add", (PyCFunction)Sketch_incrby, METH_VARARGS, "add(key, n=1) -> int: the same as incrby."},
    {"update", (PyCFunction)Sketch_update, METH_O, "update(keys): count each key of an iterable once."},
    {"query", (PyCFunction)Sketch_query, METH_O,
     "query(key) -> int: the key's estimated count (never below the true count; sketch[key] too)."},
    {"merge", (PyCFunction)(void (*)(void))Cms_merge, METH_VARARGS | METH_KEYWORDS,
     "merge(sketches, weights=None): this sketch becomes the weighted sum of the sketches (it may be one of "
     "them); all of the same width, depth and seed (IncompatibleError otherwise). A negative result is "
     "refused with ValueError and changes nothing."},
    {"clear", (PyCFunction)Sketch_clear, METH_NOARGS, "clear(): every count back to 0."},
    {"to_bytes", (PyCFunction)Sketch_to_bytes, METH_NOARGS, "to_bytes() -> bytes: the saved form (a bloomkit file)."},
    {"from_bytes", (PyCFunction)Sketch_from_bytes, METH_O | METH_CLASS,
     "from_bytes(data) -> CountMinSketch: a sketch from its saved form (bloomkit count writes such files)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef cms_getset[] = {
    {"width", (getter)Cms_get, NULL, "Counters per row.", (void *)0},
    {"depth", (getter)Cms_get, NULL, "Rows.", (void *)1},
    {"total", (getter)Cms_get, NULL, "The sum of all increments.", (void *)2},
    {"conservative", (getter)Cms_get, NULL, "Whether increments update conservatively.", (void *)3},
    {"seed", (getter)Cms_get, NULL, "The hash seed.", (void *)4},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMappingMethods cms_mapping = {0, (binaryfunc)Cms_subscript, 0};

PyTypeObject bkpy_CmsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit.CountMinSketch",
    .tp_basicsize = sizeof(CmsObject),
    .tp_dealloc = (destructor)Sketch_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CountMinSketch(width=None, depth=None, *, error=None, prob=None, conservative=False, seed=0)\n--\n\n"
              "A count-min sketch: approximate counts of keys in fixed memory. Size it by width and depth, or by "
              "error and prob (default 0.001 and 0.01: an estimate exceeds the true count by more than error "
              "times the total with probability at most prob; 2000 x 7 counters). Estimates are never below "
              "the true count; counts saturate at 2**32 - 1.",
    .tp_methods = cms_methods,
    .tp_getset = cms_getset,
    .tp_as_mapping = &cms_mapping,
    .tp_new = Cms_new,
};

/* ---- TopK ---- */

static PyObject *Topk_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"k", "width", "depth", "decay", "seed", NULL};
    PyObject *kobj, *wobj = NULL, *dobj = NULL;
    double decay = 0.9;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOd$K", kwlist, &kobj, &wobj, &dobj, &decay, &seed)) return NULL;
    bk_topk_options o = BK_TOPK_OPTIONS_INIT;
    uint32_t k;
    if (bkpy_get_u32(kobj, "k", &k) < 0) return NULL;
    if (wobj && bkpy_get_u32(wobj, "width", &o.width) < 0) return NULL;
    if (dobj && bkpy_get_u32(dobj, "depth", &o.depth) < 0) return NULL;
    if (!(decay > 0 && decay <= 1)) {
        PyErr_SetString(PyExc_ValueError, "decay must be in (0, 1]");
        return NULL;
    }
    o.decay = decay;
    o.seed = seed;
    bk_topk *t = NULL;
    bk_status s = bk_topk_new(k, &o, &t);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ARGS, NULL);
    return sk_wrap(tp, t);
}

static PyObject *item_bytes(const bk_topk_item *it)
{
    if (!it->key) return PyLong_FromUnsignedLongLong(it->hash);
    return PyBytes_FromStringAndSize(it->key, (Py_ssize_t)it->len);
}

static PyObject *topk_incr(SketchObject *o, const key_t_ *key, uint32_t n, bool answer)
{
    bk_topk_item ex;
    bk_status s = bk_topk_incrby(o->t, key->p, key->n, n, &ex);
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_ADD, NULL);
    if (!answer || !ex.count) Py_RETURN_NONE;
    return item_bytes(&ex);
}

static int Topk_contains(TopkObject *o, PyObject *k)
{
    key_t_ key;
    if (bkpy_key_get(k, &key) < 0) return -1;
    bool in = bk_topk_query(o->t, key.p, key.n);
    bkpy_key_done(&key);
    return in;
}

static PyObject *Topk_query(TopkObject *o, PyObject *k)
{
    int in = Topk_contains(o, k);
    return in < 0 ? NULL : PyBool_FromLong(in);
}

static PyObject *topk_count(SketchObject *o, const key_t_ *key)
{
    return PyLong_FromUnsignedLongLong(bk_topk_count(o->t, key->p, key->n));
}

static PyObject *Topk_count(TopkObject *o, PyObject *k) { return Sketch_query(o, k); }

static PyObject *Topk_list(TopkObject *o, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"withcount", NULL};
    int with = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", kwlist, &with)) return NULL;
    size_t n = bk_topk_list(o->t, NULL, 0);
    bk_topk_item *items = PyMem_Calloc(n ? n : 1, sizeof *items);
    if (!items) return PyErr_NoMemory();
    n = bk_topk_list(o->t, items, n);
    PyObject *out = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; out && i < n; i++) {
        PyObject *x = item_bytes(&items[i]);
        if (x && with) {
            PyObject *pair = Py_BuildValue("(NK)", x, (unsigned long long)items[i].count);
            x = pair;
        }
        if (!x) Py_CLEAR(out);
        else PyList_SET_ITEM(out, (Py_ssize_t)i, x);
    }
    PyMem_Free(items);
    return out;
}

static PyObject *Topk_get(TopkObject *o, void *which)
{
    switch ((int)(intptr_t)which) {
    case 0: return PyLong_FromUnsignedLong(bk_topk_k(o->t));
    case 1: return PyLong_FromUnsignedLong(bk_topk_width(o->t));
    case 2: return PyLong_FromUnsignedLong(bk_topk_depth(o->t));
    case 3: return PyFloat_FromDouble(bk_topk_decay(o->t));
    default: return PyLong_FromUnsignedLongLong(bk_topk_seed(o->t));
    }
}

static PyMethodDef topk_methods[] = {
    {"add", (PyCFunction)Sketch_incrby, METH_VARARGS,
     "add(key, n=1) -> bytes | None: add n to key's count; returns the key it pushed out of the top k, or None."},
    {"incrby", (PyCFunction)Sketch_incrby, METH_VARARGS, "incrby(key, n=1): the same as add."},
    {"update", (PyCFunction)Sketch_update, METH_O, "update(keys): add each key of an iterable once."},
    {"query", (PyCFunction)Topk_query, METH_O, "query(key) -> bool: whether the key is in the top k (key in topk too)."},
    {"count", (PyCFunction)Topk_count, METH_O, "count(key) -> int: the key's estimated count."},
    {"list", (PyCFunction)(void (*)(void))Topk_list, METH_VARARGS | METH_KEYWORDS,
     "list(withcount=False) -> list: the top keys, heaviest first (as (key, count) pairs with withcount)."},
    {"clear", (PyCFunction)Sketch_clear, METH_NOARGS, "clear(): empty the sketch."},
    {"to_bytes", (PyCFunction)Sketch_to_bytes, METH_NOARGS, "to_bytes() -> bytes: the saved form (a bloomkit file)."},
    {"from_bytes", (PyCFunction)Sketch_from_bytes, METH_O | METH_CLASS,
     "from_bytes(data) -> TopK: a sketch from its saved form; it continues exactly as the original would."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef topk_getset[] = {
    {"k", (getter)Topk_get, NULL, "How many keys the list keeps.", (void *)0},
    {"width", (getter)Topk_get, NULL, "Buckets per row.", (void *)1},
    {"depth", (getter)Topk_get, NULL, "Rows.", (void *)2},
    {"decay", (getter)Topk_get, NULL, "The decay base.", (void *)3},
    {"seed", (getter)Topk_get, NULL, "The hash (and decay generator) seed.", (void *)4},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods topk_sequence = {.sq_contains = (objobjproc)Topk_contains};

PyTypeObject bkpy_TopkType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit.TopK",
    .tp_basicsize = sizeof(TopkObject),
    .tp_dealloc = (destructor)Sketch_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TopK(k, width=None, depth=None, decay=0.9, *, seed=0)\n--\n\n"
              "The k heaviest keys of a stream (HeavyKeeper and a min-heap), in fixed memory. width and depth "
              "default to max(8, k ln k) and max(5, ln k). The same keys in the same order and seed give the "
              "same list.",
    .tp_methods = topk_methods,
    .tp_getset = topk_getset,
    .tp_as_sequence = &topk_sequence,
    .tp_new = Topk_new,
};

static void cms_free(void *p) { bk_cms_free(p); }
static void cms_clear(void *p) { bk_cms_clear(p); }
static void topk_free(void *p) { bk_topk_free(p); }
static void topk_clear(void *p) { bk_topk_clear(p); }
static const sk_kind cms_kind = { BK_TYPE_CMS, cms_free, cms_clear, cms_incr, cms_query };
static const sk_kind topk_kind = { BK_TYPE_TOPK, topk_free, topk_clear, topk_incr, topk_count };
