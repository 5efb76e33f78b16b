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
#include "bkpy.h"

#include <sys/vfs.h>

/* ---------------------------------------------------------------------------------------------- */
/* Exceptions                                                                                     */
/* ---------------------------------------------------------------------------------------------- */

static PyObject *Error;               /* bloomkit.Error: base of everything the library reports */
static PyObject *FileFormatError;     /* the bytes of a file or buffer are not a filter we can use */
static PyObject *DamagedFileError;    /* ... because they are damaged (corrupt, checksum, truncated) */
static PyObject *UnsupportedFileError;/* ... because of a newer format version, type or hash */
static PyObject *FullError;           /* the filter cannot take another key */
PyObject *bkpy_IncompatibleError;   /* set operation between filters of different geometry */
PyObject *bkpy_UnsupportedOperation;/* the type (or a read-only mapping) cannot do this */

static PyObject *raise_bk_words(bk_status s, err_ctx ctx, const char *what, const char *words);

PyObject *bkpy_raise_bk(bk_status s, err_ctx ctx, const char *what)
{
    const char *words = bk_strerror(s);
    /* a file's own problems in the words the bloomkit command uses */
    if (ctx == CTX_FILE && s == BK_ENOTSUP)
        words = "a hash function this build of bloomkit does not know (the file's hash id: damaged, or from a "
                "newer bloomkit)";
    else if (ctx == CTX_FILE && s == BK_ETYPE)
        words = "a filter type this build of bloomkit does not know (damaged, or from a newer bloomkit)";
    return raise_bk_words(s, ctx, what, words);
}

/* bkpy_raise_bk with the message's words given (what: words). */
static PyObject *raise_bk_words(bk_status s, err_ctx ctx, const char *what, const char *words)
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
        type = bkpy_IncompatibleError;
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
        type = ctx == CTX_FILE ? UnsupportedFileError : bkpy_UnsupportedOperation;
        break;
    default:
        type = Error;
        break;
    }
    PyObject *msg = what ? PyUnicode_FromFormat("%s: %s", what, words) : PyUnicode_FromString(words);
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
/* Module functions                                                                               */
/* ---------------------------------------------------------------------------------------------- */

/* The 8 bytes every bloomkit filter file starts with (docs/FORMAT.md). */
static const unsigned char file_magic[8] = { 0x89, 'B', 'K', 'F', '\r', '\n', 0x1a, '\n' };

/* A file or buffer the loader refused: when it does not even start with the format's magic, say "not
 * a bloomkit filter file" (as the bloomkit command does) instead of naming the first check that
 * failed; otherwise the status's own words. Either way a DamagedFileError (a FileFormatError). */
static PyObject *raise_load(bk_status s, const char *what, const void *head, size_t head_len)
{
    if ((s == BK_ECORRUPT || s == BK_ETRUNCATED || s == BK_ECHECKSUM) &&
        (head_len < sizeof file_magic || memcmp(head, file_magic, sizeof file_magic) != 0))
        return raise_bk_words(s, CTX_FILE, what, "not a bloomkit filter file");
    return bkpy_raise_bk(s, CTX_FILE, what);
}

/* The first bytes of the file at path (up to len); 0 when it cannot be read. */
static size_t read_head(const char *path, unsigned char *buf, size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, len, f);
    fclose(f);
    return n;
}

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
        unsigned char head[sizeof file_magic];
        size_t n = s == BK_EIO ? 0 : read_head(p, head, sizeof head);
        errno = err;
        raise_load(s, p, head, n);
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    return bkpy_wrap_handle(h);
}

/* Why a writable open of path was refused with BK_ENOTSUP: the file's hash function or type, or its
 * file system (btrfs; a sparse file where holes cannot be allocated ahead). */
enum { REFUSED_HASH, REFUSED_TYPE, REFUSED_BTRFS, REFUSED_SPARSE };
static int writable_refusal(const char *path)
{
    unsigned char h[BK_FILE_HEADER_SIZE];
    bk_file_info fi;
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(h, 1, sizeof h, f) : 0;
    if (f) fclose(f);
    bk_status s = bk_filter_peek_header(h, n, &fi);
    if (s == BK_ENOTSUP || (s == BK_OK && fi.hash_id != BK_HASH_XXH3_64)) return REFUSED_HASH;
    if (s == BK_OK && fi.type != BK_TYPE_BLOOM && fi.type != BK_TYPE_BLOCKED && fi.type != BK_TYPE_COUNTING)
        return REFUSED_TYPE;
    struct statfs sf;
    if (statfs(path, &sf) == 0 && (unsigned long)sf.f_type == 0x9123683EUL /* BTRFS_SUPER_MAGIC */)
        return REFUSED_BTRFS;
    return REFUSED_SPARSE;
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
    errno = 0;
    s = bk_filter_open_mmap(p, flags, &h);
    err = errno;
    Py_END_ALLOW_THREADS
    if (s != BK_OK) {
        errno = err;
        int why = s == BK_ENOTSUP && writable ? writable_refusal(p) : REFUSED_HASH;
        if (s == BK_ENOTSUP && writable && why == REFUSED_BTRFS)
            PyErr_Format(bkpy_UnsupportedOperation,
                         "%s: the file is on btrfs, whose copy-on-write makes every write through a shared "
                         "mapping need a new block that nothing can reserve (a full disk would kill the "
                         "process): it cannot be opened writable there; load() it, change it and save() it", p);
        else if (s == BK_ENOTSUP && writable && why == REFUSED_SPARSE)
            PyErr_Format(bkpy_UnsupportedOperation,
                         "%s: the file is sparse and its file system cannot allocate its holes ahead, so a write "
                         "through the mapping could find no space: it cannot be opened writable; load() it, "
                         "change it and save() it", p);
        else if (s == BK_ENOTSUP && writable && why == REFUSED_TYPE)
            PyErr_Format(bkpy_UnsupportedOperation, "%s: this filter type has no atomic insert, so it cannot be "
                         "opened writable (load() it instead)", p);
        else if (s == BK_EIO)
            bkpy_raise_bk(s, CTX_FILE, p);
        else {
            unsigned char head[sizeof file_magic];
            raise_load(s, p, head, read_head(p, head, sizeof head));
        }
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    return bkpy_wrap_handle(h);
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
    unsigned char head[sizeof file_magic];
    size_t n = (size_t)view.len < sizeof head ? (size_t)view.len : sizeof head;
    memcpy(head, view.buf, n);
    PyBuffer_Release(&view);
    if (s != BK_OK) return raise_load(s, "from_bytes", head, n);
    return bkpy_wrap_handle(h);
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
    if (seedo && bkpy_get_u64(seedo, "seed", &seed) < 0) return NULL;
    key_t_ key;
    if (bkpy_key_get(k, &key) < 0) return NULL;
    uint64_t h = bk_hash64(key.p, key.n, seed);
    bkpy_key_done(&key);
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
    if (s != BK_OK) return bkpy_raise_bk(s, CTX_FILE, "file_info");
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
    M_O("contains", bkpy_Filter_contains, DOC_CONTAINS),
    M_KW("contains_many", bkpy_Filter_contains_many, DOC_CONTAINS_MANY),
    M_NOARGS("stats", bkpy_Filter_stats,
             "stats($self)\n--\n\nReturns dict. Every statistic of the filter: type, k, capacity, count, bits, memory_bytes, "
             "bits_per_key, fill_ratio, est_cardinality, fpr_target, fpr_now, saturated, saturated_cells, "
             "subfilters, seed. Counts the filter's bits (O(size))."),
    M_NOARGS("copy", bkpy_Filter_copy, "copy($self)\n--\n\nA deep copy in memory (also of a mapped filter)."),
    M_NOARGS("__copy__", bkpy_Filter_copy, NULL),
    M_O("__deepcopy__", bkpy_Filter_deepcopy, NULL),
    M_O("save", bkpy_Filter_save,
        "save($self, path, /)\n--\n\nWrite the filter to a file in bloomkit's file format, atomically (temporary file, "
        "fsync, rename): the bloomkit command, C programs and the Redis module's BK.IMPORT read it."),
    M_NOARGS("__bytes__", bkpy_Filter_bytes, "bytes(f): the filter in bloomkit's file format."),
    M_NOARGS("to_bytes", bkpy_Filter_bytes, "to_bytes($self)\n--\n\nReturns bytes. The same as bytes(f)."),
    M_NOARGS("__reduce__", bkpy_Filter_reduce, NULL),
    M_NOARGS("__sizeof__", bkpy_Filter_sizeof, NULL),
    M_NOARGS("close", bkpy_Filter_close,
             "close($self)\n--\n\nFree the filter now (unmap it if it was opened with bloomkit.open). Any later "
             "operation raises ValueError. Filters are also context managers."),
    M_NOARGS("__enter__", bkpy_Filter_enter, NULL),
    M_KW("__exit__", bkpy_Filter_exit, NULL),
    M_O("union", bkpy_Filter_union, "union($self, other, /)\n--\n\nThe same as f | other: a new filter holding both sets."),
    M_O("compatible", bkpy_Filter_compatible,
        "compatible($self, other, /)\n--\n\nReturns bool. True if the two filters can be combined with | (same type, geometry "
        "and seed; Cuckoo and Fuse filters have no union)."),
    {NULL, NULL, 0, NULL}};

#define ADD_METHODS                                                                                        \
    M_O("add", bkpy_Filter_add, DOC_ADD), M_O("add_many", bkpy_Filter_add_many, DOC_ADD_MANY),                       \
        M_O("update", bkpy_Filter_add_many, DOC_UPDATE), M_O("add_if_absent", bkpy_Filter_add_if_absent, DOC_ADD_IF_ABSENT), \
        M_NOARGS("clear", bkpy_Filter_clear, "clear($self)\n--\n\nRemove every key (the geometry and seed stay).")
#define REMOVE_METHODS                                                                                     \
    M_O("remove", bkpy_Filter_remove,                                                                           \
        "remove($self, key, /)\n--\n\nRemove one occurrence of a key you added; KeyError if it is certainly absent. "    \
        "Removing a key that was never added can remove another key (a false negative later)."),           \
        M_O("discard", bkpy_Filter_discard,                                                                     \
            "discard($self, key, /)\n--\n\nReturns bool. Like remove, but returns False instead of raising KeyError.")
#define INTERSECT_METHODS                                                                                  \
    M_O("intersection", bkpy_Filter_intersection,                                                               \
        "intersection($self, other, /)\n--\n\nThe same as f & other: a new filter whose bits are set in both.")

static PyMethodDef Bloom_methods[] = {ADD_METHODS, INTERSECT_METHODS, {NULL, NULL, 0, NULL}};
static PyMethodDef Blocked_methods[] = {ADD_METHODS, INTERSECT_METHODS, {NULL, NULL, 0, NULL}};
static PyMethodDef Counting_methods[] = {ADD_METHODS, REMOVE_METHODS, {NULL, NULL, 0, NULL}};
static PyMethodDef Scalable_methods[] = {ADD_METHODS, {NULL, NULL, 0, NULL}};
static PyMethodDef Cuckoo_methods[] = {
    ADD_METHODS, REMOVE_METHODS,
    M_NOARGS("info", bkpy_Cuckoo_info, "info($self)\n--\n\nReturns dict. Everything CF.INFO reports: tables, buckets, items, "
                                  "kicks, load factor, FPR now and when full, ..."),
    M_O("count_of", bkpy_Cuckoo_count_of,
        "count_of($self, key, /)\n--\n\nReturns int. Copies of the key's fingerprint stored (CF.COUNT): at least the times it "
        "was added and not removed."),
    {NULL, NULL, 0, NULL}};

#define GS(name, fn, doc, closure) {name, (getter)(fn), NULL, doc, (void *)(intptr_t)(closure)}

static PyGetSetDef Filter_getset[] = {
    GS("count", bkpy_Filter_get_count,
       "Keys inserted, as the library counts them (O(1)): every add for Bloom and Blocked (a key added twice "
       "counts twice), exact for Counting, Scalable and Cuckoo, distinct keys for Fuse.", 0),
    GS("capacity", bkpy_Filter_get_stat, "Keys the filter was sized for.", ST_CAPACITY),
    GS("error_rate", bkpy_Filter_get_stat, "The false-positive rate the filter was sized for.", ST_ERROR_RATE),
    GS("fill_ratio", bkpy_Filter_get_stat, "Fraction of bits set (cells non-zero, slots used). O(size).", ST_FILL),
    GS("fpr_now", bkpy_Filter_get_stat, "False-positive rate expected at the current fill. O(size).", ST_FPR_NOW),
    GS("saturated", bkpy_Filter_get_stat, "True when the filter holds more than it was sized for: rebuild it larger.",
       ST_SATURATED),
    GS("bits", bkpy_Filter_get_stat, "Bits (or cells, slots) addressed by the probes.", ST_BITS),
    GS("k", bkpy_Filter_get_stat, "Probes per key (Bloom family); fingerprint bits (Cuckoo, Fuse; Ribbon: the most a key is checked on).", ST_K),
    GS("memory_bytes", bkpy_Filter_get_stat, "Bytes of the filter's arrays.", ST_MEMORY),
    GS("bits_per_key", bkpy_Filter_get_stat, "memory_bytes * 8 / max(count, 1).", ST_BITS_PER_KEY),
    GS("subfilters", bkpy_Filter_get_stat, "Sub-filters (Scalable) or tables (Cuckoo); 0 for the others.",
       ST_SUBFILTERS),
    GS("seed", bkpy_Filter_get_seed, "The hash seed.", 0),
    GS("type_name", bkpy_Filter_get_type_name, "'bloom', 'blocked', 'counting', 'scalable', 'cuckoo', 'fuse', 'aging', 'quotient' or 'ribbon'.", 0),
    GS("backing", bkpy_Filter_get_backing, "'memory', 'mmap' (read-only mapping), 'mmap-shared' or 'closed'.", 0),
    GS("closed", bkpy_Filter_get_closed, "True after close().", 0),
    {NULL, NULL, NULL, NULL, NULL}};

static PyGetSetDef Bloom_getset[] = {
    GS("layout", bkpy_Filter_get_layout, "'standard' or 'partitioned'.", 0), {NULL, NULL, NULL, NULL, NULL}};
static PyGetSetDef Blocked_getset[] = {
    GS("block_bits", bkpy_Filter_get_layout, "256 (split blocks, the default) or 512.", 0),
    {NULL, NULL, NULL, NULL, NULL}};
static PyGetSetDef Counting_getset[] = {
    GS("counter_bits", bkpy_Filter_get_counter_bits, "4 or 8.", 0), {NULL, NULL, NULL, NULL, NULL}};
static PyGetSetDef Scalable_getset[] = {
    GS("growth", bkpy_Scalable_get, "Capacity ratio between sub-filters (1 for a non-scaling filter).", SC_GROWTH),
    GS("tightening", bkpy_Scalable_get, "Error ratio r between sub-filters.", SC_TIGHTENING),
    GS("max_bytes", bkpy_Scalable_get, "Limit on the bytes of all sub-filters; growing past it raises FullError.",
       SC_MAX_BYTES),
    GS("nonscaling", bkpy_Scalable_get, "True if the filter never grows.", SC_NONSCALING),
    GS("classic", bkpy_Scalable_get, "True for classic sub-filters, False for blocked ones (the default).", SC_CLASSIC),
    GS("fpr_bound", bkpy_Scalable_get, "The compound FPR bound of the existing sub-filters: their FPR when full, on average (<= error_rate; blocked sub-filters: up to 4.6% more).",
       SC_FPR_BOUND),
    GS("initial_capacity", bkpy_Scalable_get, "Capacity of the first sub-filter.", SC_INITIAL),
    {NULL, NULL, NULL, NULL, NULL}};
static PyMethodDef Aging_methods[] = {
    ADD_METHODS,
    M_NOARGS("info", bkpy_Aging_info,
             "info($self)\n--\n\nReturns dict. The window in detail: mode, generations, window, gen_capacity, "
             "period_ms, slack, covered, inserted, live, gen_count, gen_fill, fpr_now."),
    M_NOARGS("advance", bkpy_Aging_advance,
             "advance($self)\n--\n\nTime windows: forget the generations that have aged out by now (inserts do "
             "it anyway)."),
    {NULL, NULL, 0, NULL}};
static PyMethodDef Quotient_methods[] = {
    ADD_METHODS, REMOVE_METHODS,
    M_O("count_of", bkpy_Cuckoo_count_of,
        "count_of($self, key, /)\n--\n\nReturns int. How many times the key's fingerprint was added (and not "
        "removed): at least the key's own count."),
    M_NOARGS("grow", bkpy_Quotient_grow,
             "grow($self)\n--\n\nDouble the slots without the keys (q + 1, r - 1). FullError when r would "
             "drop below 2."),
    M_NOARGS("expand", bkpy_Quotient_expand,
             "expand($self)\n--\n\nDouble the capacity without the keys, keeping the error rate within 1.1 x "
             "error_rate however often: in place while remainder_bits leave room, then by a stage (queries look in "
             "every stage; a filter of stages cannot be merged). FullError at the size limits."),
    {NULL, NULL, 0, NULL}};
static PyGetSetDef Aging_getset[] = {
    GS("mode", bkpy_Aging_get, "'count' (the last `window` insertions) or 'time' (the last `window` ms).", AG_MODE),
    GS("window", bkpy_Aging_get, "W insertions or T milliseconds.", AG_WINDOW),
    GS("generations", bkpy_Aging_get, "Generations g of the ring.", AG_GENERATIONS),
    {NULL, NULL, NULL, NULL, NULL}};
static PyGetSetDef Quotient_getset[] = {
    GS("remainder_bits", bkpy_Quotient_get_remainder_bits, "Bits of each slot's remainder (the newest stage's).", 0),
    GS("stages", bkpy_Quotient_get_stages, "Tables a query looks in: 1, or more after expand() past the room.", 0),
    {NULL, NULL, NULL, NULL, NULL}};

static PyGetSetDef Fingerprint_getset[] = {
    GS("fingerprint_bits", bkpy_Filter_get_fingerprint_bits, "Bits per fingerprint.", 0),
    {NULL, NULL, NULL, NULL, NULL}};

static PyNumberMethods Filter_as_number = {
    .nb_bool = (inquiry)bkpy_Filter_bool,
    .nb_and = bkpy_Filter_and,
    .nb_or = bkpy_Filter_or,
    .nb_inplace_and = bkpy_Filter_iand,
    .nb_inplace_or = bkpy_Filter_ior,
};

static PySequenceMethods Filter_as_sequence = {
    .sq_length = (lenfunc)bkpy_Filter_len,
    .sq_contains = (objobjproc)bkpy_Filter_sq_contains,
};

static PyObject *Filter_base_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    (void)args;
    (void)kw;
    PyErr_Format(PyExc_TypeError, "%s cannot be created directly: use Bloom, Blocked, Counting, Scalable, "
                 "Cuckoo, Fuse, Aging, Quotient or Ribbon, or bloomkit.load / open / from_bytes", tp->tp_name);
    return NULL;
}

PyTypeObject bkpy_FilterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bloomkit.Filter",
    .tp_basicsize = sizeof(FilterObject),
    .tp_dealloc = (destructor)bkpy_Filter_dealloc,
    .tp_repr = (reprfunc)bkpy_Filter_repr,
    .tp_as_number = &Filter_as_number,
    .tp_as_sequence = &Filter_as_sequence,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The base class of every bloomkit filter: queries, statistics, files and set operations.\n\n"
              "`key in f` is True if the key is probably present and False if it is certainly absent. "
              "len(f) is the library's estimate of the keys held, not an exact count: from the fill for Bloom, "
              "Blocked, Counting and (per sub-filter) Scalable, from the distinct fingerprints for Quotient, "
              "and the count of stored entries for Cuckoo, Fuse and Aging; it reads the whole filter "
              "(O(size)). f.count is the O(1) count of insertions.",
    .tp_weaklistoffset = offsetof(FilterObject, weakrefs),
    .tp_methods = Filter_methods,
    .tp_getset = Filter_getset,
    .tp_new = Filter_base_new,
};

#define SUBTYPE(Var, pyname, newfn, methods, getset, doc)                                                  \
    PyTypeObject Var = {                                                                               \
        PyVarObject_HEAD_INIT(NULL, 0)                                                                     \
        .tp_name = "bloomkit." pyname,                                                                     \
        .tp_basicsize = sizeof(FilterObject),                                                              \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,                         \
        .tp_doc = doc,                                                                                     \
        .tp_methods = methods,                                                                             \
        .tp_getset = getset,                                                                               \
        .tp_base = &bkpy_FilterType,                                                                            \
        .tp_new = newfn,                                                                                   \
    }

SUBTYPE(bkpy_BloomType, "Bloom", bkpy_Bloom_new, Bloom_methods, Bloom_getset,
        "Bloom(capacity, error_rate=0.01, *, layout='standard', seed=0)\n--\n\n"
        "The classic Bloom filter: m bits and k probes, sized for `capacity` keys at `error_rate`. "
        "layout='partitioned' gives each probe its own slice of m/k bits.");
SUBTYPE(bkpy_BlockedType, "Blocked", bkpy_Blocked_new, Blocked_methods, Blocked_getset,
        "Blocked(capacity, error_rate=0.01, *, block_bits=256, seed=0)\n--\n\n"
        "The blocked Bloom filter: every probe of a key in one cache line (SIMD), the fastest type; about 10% "
        "more memory than Bloom at 1%. block_bits=512 is smaller at low error rates, slower to insert.");
SUBTYPE(bkpy_CountingType, "Counting", bkpy_Counting_new, Counting_methods, Counting_getset,
        "Counting(capacity, error_rate=0.01, *, counter_bits=4, seed=0)\n--\n\n"
        "The counting Bloom filter: keys can be removed. Counters of 4 (or 8) bits, sticky at their maximum so "
        "no removal causes a false negative; 4x (8x) the memory of Bloom.");
SUBTYPE(bkpy_ScalableType, "Scalable", bkpy_Scalable_new, Scalable_methods, Scalable_getset,
        "Scalable(capacity=100, error_rate=0.01, *, growth=" BKPY_STR(BK_SCALABLE_DEFAULT_GROWTH)
        ", tightening=" BKPY_STR(BK_SCALABLE_DEFAULT_TIGHTENING) ", max_bytes=None, "
        "nonscaling=False, classic=False, seed=0)\n--\n\n"
        "The scalable Bloom filter for sets of unknown size: a chain of sub-filters, each `growth` times larger "
        "and `tightening` times stricter, so the total error rate stays under error_rate. An add of a key "
        "already (probably) present changes nothing. Growing past max_bytes (default 4 GiB) raises FullError.");
SUBTYPE(bkpy_CuckooType, "Cuckoo", bkpy_Cuckoo_new, Cuckoo_methods, Fingerprint_getset,
        "Cuckoo(capacity, error_rate=0.01, *, bucket_size=4, fingerprint_bits=None, max_kicks=500, expansion=0, "
        "load_factor=None, seed=0)\n--\n\n"
        "The cuckoo filter: removal with less memory than Counting at error rates <= 1%. add stores one more copy "
        "of the key's fingerprint each time (as CF.ADD); add_if_absent does not. A full filter raises FullError "
        "unless expansion (a factor) lets it chain a larger table. Only remove keys you added.");
SUBTYPE(bkpy_FuseType, "Fuse", bkpy_Fuse_new, NULL, Fingerprint_getset,
        "Fuse(keys, error_rate=None, *, fingerprint_bits=None, seed=0, max_attempts=100)\n--\n\n"
        "The binary fuse filter, built once from all keys (any iterable of keys, or an array of them): the "
        "smallest and fastest to query, it cannot change afterwards. 8-bit fingerprints (error rate 2**-8, "
        "about 9 bits per key) unless fingerprint_bits=16 or an error_rate below 2**-8 asks for 16.");
SUBTYPE(bkpy_RibbonType, "Ribbon", bkpy_Ribbon_new, NULL, NULL,
        "Ribbon(keys, error_rate=0.01, *, seed=0, max_attempts=100)\n--\n\n"
        "The Ribbon filter, built once from all keys (any iterable of keys, or an array of them) at any error "
        "rate down to 1e-9: about 1.04 * log2(1/error_rate) bits per key (6.96 at 1%, 10.3 at 0.1%), the "
        "smallest static set; it cannot change afterwards. Duplicate keys are dropped.");

SUBTYPE(bkpy_AgingType, "Aging", bkpy_Aging_new, Aging_methods, Aging_getset,
        "Aging(window=None, error_rate=0.01, *, window_ms=None, capacity=None, generations=4, seed=0)\n--\n\n"
        "The aging filter: \"was this key seen recently?\". Aging(W) remembers the keys of the last W insertions; "
        "Aging(window_ms=T, capacity=n) those of the last T milliseconds (sized for n keys per window). Older keys "
        "are forgotten by themselves, so it never fills up; add_if_absent is the stream-dedup step.");
SUBTYPE(bkpy_QuotientType, "Quotient", bkpy_Quotient_new, Quotient_methods, Quotient_getset,
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
    if (PyType_Ready(&bkpy_FilterType) < 0) goto fail;
    PyTypeObject *subs[] = {&bkpy_BloomType,  &bkpy_BlockedType, &bkpy_CountingType, &bkpy_ScalableType,
                            &bkpy_CuckooType, &bkpy_FuseType,    &bkpy_AgingType,    &bkpy_QuotientType,
                            &bkpy_RibbonType};
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
        if (PyType_Ready(subs[i]) < 0) goto fail;
    if (PyModule_AddObjectRef(m, "Filter", (PyObject *)&bkpy_FilterType) < 0) goto fail;
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
        if (PyModule_AddObjectRef(m, subs[i]->tp_name + strlen("bloomkit."), (PyObject *)subs[i]) < 0) goto fail;

    if (!(Error = new_exc(m, "Error", NULL,
                          "Base of the errors the bloomkit library reports; `status` is the library's status code.")))
        goto fail;
    PyObject *b = PyTuple_Pack(2, Error, PyExc_ValueError);
    if (!b) goto fail;
    FileFormatError = new_exc(m, "FileFormatError", b, "The data is not a filter this library can use.");
    bkpy_IncompatibleError = new_exc(m, "IncompatibleError", b,
                                "The filters differ in type, geometry, layout or seed: they cannot be combined.");
    Py_DECREF(b);
    if (!FileFormatError || !bkpy_IncompatibleError) goto fail;
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
    bkpy_UnsupportedOperation = new_exc(m, "UnsupportedOperation", b,
                                   "The filter type (or a read-only mapping) cannot do this.");
    Py_DECREF(b);
    if (!bkpy_UnsupportedOperation) goto fail;

    /* the sketches (sketch.c): not filters, no Filter base */
    if (PyType_Ready(&bkpy_CmsType) < 0 || PyType_Ready(&bkpy_TopkType) < 0 ||
        PyModule_AddObjectRef(m, "CountMinSketch", (PyObject *)&bkpy_CmsType) < 0 ||
        PyModule_AddObjectRef(m, "TopK", (PyObject *)&bkpy_TopkType) < 0)
        goto fail;
    /* Parquet's filters (parquet.c), for bloomkit.compat */
    if (PyType_Ready(&bkpy_ParquetType) < 0 || PyModule_AddObjectRef(m, "_ParquetFilters", (PyObject *)&bkpy_ParquetType) < 0)
        goto fail;
    if (PyModule_AddStringConstant(m, "library_version", bk_version_string()) < 0) goto fail;
    if (PyModule_AddIntConstant(m, "FORMAT_VERSION_MAJOR", BK_FORMAT_VERSION_MAJOR) < 0) goto fail;
    bkpy_fork_install();
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}