/* bloomkit._bloomkit: Python objects to keys: a single key (str, bytes, buffers, int) and the steps and
 * sources that feed a batch. */
#include "bkpy.h"

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

/* Numbers that are not Python ints: an integer-like object (numpy's integer scalars of every width,
 * anything with __index__) is the int key of its value, as the same integers in an array are; a float
 * (Python's, numpy's of any width) is refused, as a float has no exact key. 1: out holds the key; 0:
 * not a number (try the other kinds); -1: error set. */
static int number_key(PyObject *k, unsigned char out[8])
{
    PyNumberMethods *nm = Py_TYPE(k)->tp_as_number;
    if (PyFloat_Check(k) || PyComplex_Check(k) || (nm && nm->nb_float && !nm->nb_index)) {
        PyErr_Format(PyExc_TypeError,
                     "a key is str, bytes, bytearray, memoryview or int, not %.100s (a float is no exact key: "
                     "convert it to int or bytes)", Py_TYPE(k)->tp_name);
        return -1;
    }
    if (!nm || !nm->nb_index) return 0;
    if (PyObject_CheckBuffer(k)) { /* numpy's bool_ (item format '?') stays its one byte, as before */
        Py_buffer v;
        if (PyObject_GetBuffer(k, &v, PyBUF_FORMAT) == 0) {
            int boolean = v.format && strcmp(v.format, "?") == 0;
            PyBuffer_Release(&v);
            if (boolean) return 0;
        } else {
            PyErr_Clear();
        }
    }
    PyObject *i = PyNumber_Index(k);
    if (!i) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
        PyErr_Clear(); /* an __index__ that refuses (numpy's bool_): not a number key */
        return 0;
    }
    int r = int_key(i, out);
    Py_DECREF(i);
    return r < 0 ? -1 : 1;
}

int bkpy_key_get(PyObject *k, key_t_ *key)
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
    int num = number_key(k, key->ibuf);
    if (num != 0) {
        key->p = key->ibuf;
        key->n = 8;
        return num < 0 ? -1 : 0;
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

/* ---------------------------------------------------------------------------------------------- */
/* Batches                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

int bkpy_step_init(step_t *st, size_t cap)
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

void bkpy_step_free(step_t *st)
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
    int num;
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
    } else if ((num = number_key(item, st->ints + 8 * i)) != 0) {
        if (num < 0) return -1;
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
int bkpy_source_open(source_t *src, PyObject *obj, const char *what)
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

void bkpy_source_close(source_t *src)
{
    Py_CLEAR(src->seq);
    Py_CLEAR(src->iter);
    if (src->has_view) PyBuffer_Release(&src->view);
    src->has_view = 0;
}

/* Fill the next step from a sequence or iterator (with the GIL). Returns the keys in it (0: the end),
 * -1 on error. */
Py_ssize_t bkpy_source_fill(source_t *src, step_t *st)
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
void bkpy_buffer_hashes(const source_t *src, size_t i, size_t n, uint64_t seed, uint64_t *out)
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
