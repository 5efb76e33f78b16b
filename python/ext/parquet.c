/* Parquet's split-block Bloom filters for bloomkit.compat (bloomkit/parquet.h): the private type
 * bloomkit._bloomkit._ParquetFilters over the C reader (a Parquet file's column, or one filter blob),
 * with static methods that size, hash and make a blob. The Python-facing API is bloomkit.compat's. */
#include "bkpy.h"

typedef struct {
    PyObject_HEAD
    bk_parquet_column *col; /* a Parquet file's column, or NULL: one blob */
    uint8_t *blob;          /* the blob's bitset (PyMem) */
    size_t blob_bytes;
    int type;               /* bk_parquet_type */
    uint32_t type_length;
} PqObject;

static const char *const pq_type_names[] = { "BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
                                             "FIXED_LEN_BYTE_ARRAY" };

static size_t pq_count(const PqObject *o)
{
    return o->col ? bk_parquet_row_groups(o->col) : 1;
}

static const uint8_t *pq_bits(const PqObject *o, size_t rg, size_t *bytes)
{
    if (!o->col) {
        *bytes = o->blob_bytes;
        return o->blob;
    }
    *bytes = bk_parquet_filter_bytes(o->col, rg);
    return bk_parquet_filter_bits(o->col, rg);
}

static PyObject *pq_refuse(bk_status s, const char *why)
{
    if (s == BK_ENOMEM) return PyErr_NoMemory();
    PyErr_SetString(PyExc_ValueError, why[0] ? why : bk_strerror(s));
    return NULL;
}

/* _ParquetFilters(data, column): column's filters of the Parquet file in data. */
static PyObject *Pq_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "data", "column", NULL };
    Py_buffer v;
    const char *column;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*s:_ParquetFilters", kwlist, &v, &column)) return NULL;
    bk_parquet_column *c = NULL;
    char why[256];
    bk_status s;
    Py_BEGIN_ALLOW_THREADS
    s = bk_parquet_open(v.buf, (size_t)v.len, column, NULL, &c, why, sizeof why);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&v);
    if (s != BK_OK) return pq_refuse(s, why);
    PqObject *o = (PqObject *)type->tp_alloc(type, 0);
    if (!o) {
        bk_parquet_free(c);
        return NULL;
    }
    o->col = c;
    o->type = (int)bk_parquet_physical_type(c);
    o->type_length = bk_parquet_type_length(c);
    return (PyObject *)o;
}

/* _ParquetFilters.from_blob(data, physical_type, type_length): one filter blob (header and bitset). */
static PyObject *Pq_from_blob(PyTypeObject *type, PyObject *args)
{
    Py_buffer v;
    int ptype;
    unsigned int tlen;
    if (!PyArg_ParseTuple(args, "y*iI:from_blob", &v, &ptype, &tlen)) return NULL;
    size_t off = 0, bytes = 0;
    char why[256];
    bk_status s = bk_parquet_sbbf_parse(v.buf, (size_t)v.len, &off, &bytes, why, sizeof why);
    if (s != BK_OK) {
        PyBuffer_Release(&v);
        return pq_refuse(s, why);
    }
    PqObject *o = (PqObject *)type->tp_alloc(type, 0);
    uint8_t *bits = o ? PyMem_Malloc(bytes) : NULL;
    if (!bits) {
        PyBuffer_Release(&v);
        Py_XDECREF(o);
        return o ? PyErr_NoMemory() : NULL;
    }
    memcpy(bits, (const uint8_t *)v.buf + off, bytes);
    PyBuffer_Release(&v);
    o->blob = bits;
    o->blob_bytes = bytes;
    o->type = ptype;
    o->type_length = tlen;
    return (PyObject *)o;
}

static void Pq_dealloc(PqObject *o)
{
    bk_parquet_free(o->col);
    PyMem_Free(o->blob);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static int pq_rg(const PqObject *o, Py_ssize_t rg, size_t *out)
{
    Py_ssize_t n = (Py_ssize_t)pq_count(o);
    if (rg < 0) rg += n;
    if (rg < 0 || rg >= n) {
        PyErr_SetString(PyExc_IndexError, "row group out of range");
        return -1;
    }
    *out = (size_t)rg;
    return 0;
}

/* contains_plain(plain, row_group): True, False, or None (no filter). */
static PyObject *Pq_contains_plain(PqObject *o, PyObject *args)
{
    Py_buffer v;
    Py_ssize_t rg;
    if (!PyArg_ParseTuple(args, "y*n:contains_plain", &v, &rg)) return NULL;
    size_t r, bytes;
    if (pq_rg(o, rg, &r) < 0) {
        PyBuffer_Release(&v);
        return NULL;
    }
    uint64_t h = bk_parquet_hash(v.buf, (size_t)v.len);
    PyBuffer_Release(&v);
    const uint8_t *bits = pq_bits(o, r, &bytes);
    if (!bits) Py_RETURN_NONE;
    return PyBool_FromLong(bk_parquet_sbbf_check(bits, bytes, h));
}

/* any_plain(plain): False when every row group's filter excludes it. */
static PyObject *Pq_any_plain(PqObject *o, PyObject *arg)
{
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0) return NULL;
    uint64_t h = bk_parquet_hash(v.buf, (size_t)v.len);
    PyBuffer_Release(&v);
    for (size_t i = 0; i < pq_count(o); i++) {
        size_t bytes;
        const uint8_t *bits = pq_bits(o, i, &bytes);
        if (!bits || bk_parquet_sbbf_check(bits, bytes, h)) Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static PyObject *stats_dict(const uint8_t *bits, size_t bytes)
{
    bk_parquet_stats st;
    if (bk_parquet_sbbf_stats(bits, bytes, &st) != BK_OK) return bkpy_raise_bk(BK_EINVAL, CTX_ARGS, "stats");
    return Py_BuildValue("{s:K,s:K,s:K,s:d,s:d,s:d,s:d}", "bytes", (unsigned long long)st.bytes, "blocks",
                         (unsigned long long)st.blocks, "bits_set", (unsigned long long)st.bits_set, "fill", st.fill,
                         "est_values", st.est_values, "bits_per_value", st.bits_per_value, "fpr", st.fpr);
}

/* stats(row_group): a dict, or None (no filter). */
static PyObject *Pq_stats(PqObject *o, PyObject *arg)
{
    Py_ssize_t rg = PyLong_AsSsize_t(arg);
    size_t r, bytes;
    if ((rg == -1 && PyErr_Occurred()) || pq_rg(o, rg, &r) < 0) return NULL;
    const uint8_t *bits = pq_bits(o, r, &bytes);
    if (!bits) Py_RETURN_NONE;
    return stats_dict(bits, bytes);
}

/* bits(row_group): the bitset as bytes, or None. */
static PyObject *Pq_bits(PqObject *o, PyObject *arg)
{
    Py_ssize_t rg = PyLong_AsSsize_t(arg);
    size_t r, bytes;
    if ((rg == -1 && PyErr_Occurred()) || pq_rg(o, rg, &r) < 0) return NULL;
    const uint8_t *bits = pq_bits(o, r, &bytes);
    if (!bits) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)bits, (Py_ssize_t)bytes);
}

static PyObject *Pq_get_type(PqObject *o, void *closure)
{
    (void)closure;
    return PyUnicode_FromString((unsigned)o->type < 8 ? pq_type_names[o->type] : "unknown");
}

static PyObject *Pq_get_type_length(PqObject *o, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(o->type_length);
}

static PyObject *Pq_get_row_groups(PqObject *o, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(pq_count(o));
}

static PyObject *Pq_get_filter_bytes(PqObject *o, void *closure)
{
    (void)closure;
    PyObject *l = PyList_New((Py_ssize_t)pq_count(o));
    for (size_t i = 0; l && i < pq_count(o); i++) {
        size_t bytes;
        const uint8_t *bits = pq_bits(o, i, &bytes);
        PyObject *n = PyLong_FromSize_t(bits ? bytes : 0);
        if (!n) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, n);
    }
    return l;
}

/* make(plains, nbytes, header): a blob (or the bitset alone) holding the PLAIN encodings in
 * the iterable plains. */
static PyObject *Pq_make(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *plains;
    Py_ssize_t nbytes;
    int header;
    if (!PyArg_ParseTuple(args, "Onp:make", &plains, &nbytes, &header)) return NULL;
    if (nbytes < 32 || nbytes % 32 || (size_t)nbytes > (size_t)INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "nbytes %zd is not a positive multiple of 32 below 2**31", nbytes);
        return NULL;
    }
    uint8_t hdr[BK_PARQUET_HEADER_MAX];
    size_t hlen = header ? bk_parquet_sbbf_header((size_t)nbytes, hdr, sizeof hdr) : 0;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)hlen + nbytes);
    if (!out) return NULL;
    uint8_t *b = (uint8_t *)PyBytes_AS_STRING(out);
    memcpy(b, hdr, hlen);
    memset(b + hlen, 0, (size_t)nbytes);
    PyObject *it = PyObject_GetIter(plains), *item;
    if (!it) {
        Py_DECREF(out);
        return NULL;
    }
    while ((item = PyIter_Next(it))) {
        Py_buffer v;
        int bad = PyObject_GetBuffer(item, &v, PyBUF_SIMPLE);
        Py_DECREF(item);
        if (bad < 0) break;
        bk_parquet_sbbf_insert(b + hlen, (size_t)nbytes, bk_parquet_hash(v.buf, (size_t)v.len));
        PyBuffer_Release(&v);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* size(ndv, fpp): Parquet's writers' size. */
static PyObject *Pq_size(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ndv;
    double fpp;
    if (!PyArg_ParseTuple(args, "Kd:size", &ndv, &fpp)) return NULL;
    size_t n = bk_parquet_sbbf_bytes(ndv, fpp);
    if (!n) {
        PyErr_SetString(PyExc_ValueError, "fpp must be in (0, 1)");
        return NULL;
    }
    return PyLong_FromSize_t(n);
}

/* hash(plain): XXH64, seed 0. */
static PyObject *Pq_hash(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0) return NULL;
    uint64_t h = bk_parquet_hash(v.buf, (size_t)v.len);
    PyBuffer_Release(&v);
    return PyLong_FromUnsignedLongLong(h);
}

static PyMethodDef pq_methods[] = {
    { "from_blob", (PyCFunction)Pq_from_blob, METH_VARARGS | METH_CLASS,
      "from_blob(data, physical_type, type_length)\n--\n\nOne filter blob: a BloomFilterHeader and its bitset." },
    { "contains_plain", (PyCFunction)Pq_contains_plain, METH_VARARGS,
      "contains_plain(plain, row_group)\n--\n\nThe row group's answer for a PLAIN encoding (None: no filter)." },
    { "any_plain", (PyCFunction)Pq_any_plain, METH_O,
      "any_plain(plain)\n--\n\nFalse when every row group's filter excludes the PLAIN encoding." },
    { "stats", (PyCFunction)Pq_stats, METH_O, "stats(row_group)\n--\n\nThe filter's statistics (None: no filter)." },
    { "bits", (PyCFunction)Pq_bits, METH_O, "bits(row_group)\n--\n\nThe filter's bitset (None: no filter)." },
    { "make", (PyCFunction)Pq_make, METH_VARARGS | METH_STATIC,
      "make(plains, nbytes, header)\n--\n\nA filter of nbytes holding the PLAIN encodings, with its header or not." },
    { "size", (PyCFunction)Pq_size, METH_VARARGS | METH_STATIC,
      "size(ndv, fpp)\n--\n\nThe bytes Parquet's writers give a filter for ndv distinct values at rate fpp." },
    { "hash", (PyCFunction)Pq_hash, METH_O | METH_STATIC, "hash(plain)\n--\n\nXXH64 (seed 0) of a PLAIN encoding." },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef pq_getset[] = {
    { "physical_type", (getter)Pq_get_type, NULL, "the column's physical type", NULL },
    { "type_length", (getter)Pq_get_type_length, NULL, "FIXED_LEN_BYTE_ARRAY's length; 0 otherwise", NULL },
    { "row_groups", (getter)Pq_get_row_groups, NULL, "row groups (1 for a blob)", NULL },
    { "filter_bytes", (getter)Pq_get_filter_bytes, NULL, "each row group's filter size (0: none)", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject bkpy_ParquetType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bloomkit._bloomkit._ParquetFilters",
    .tp_basicsize = sizeof(PqObject),
    .tp_dealloc = (destructor)Pq_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_ParquetFilters(data, column)\n--\n\nThe split-block Bloom filters of a Parquet file's column, read "
              "by the library's reader (bloomkit/parquet.h); bloomkit.compat.ParquetBloomFilters is the API.",
    .tp_methods = pq_methods,
    .tp_getset = pq_getset,
    .tp_new = Pq_new,
};
