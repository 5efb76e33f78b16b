/*
 * The value of a BF or CF key, and its persistence.
 *
 * Stored form. A key's filter is kept in RDB, AOF, DUMP/RESTORE, SCANDUMP chunks and BK.EXPORT as
 * bloomkit's own saved form (docs/FORMAT.md: versioned header, checksums, every field validated on
 * load), so one encoding serves every path and a filter moves between Redis and the CLI unchanged.
 *
 * RDB encoding, version 1 (the module type's encver):
 *     unsigned  kind        0 = a filter, 1 = a LOADCHUNK restore in progress,
 *                           2 = a cuckoo filter and its kick state
 *     unsigned  total       bytes of the saved form
 *     unsigned  received    (kind 1 only) bytes of it received so far, <= total
 *     unsigned  kick state  (kind 2 only) the filter's kick generator's state, never 0
 *     strings   the bytes (total of them, or received), in pieces of at most BKR_RDB_PIECE
 * Kind 2. A cuckoo filter's kick choices come from a generator state the saved form does not carry
 * (bk_cuckoo_kick_state): a copy loaded without it would restart from the seed and, after the next
 * kicks, place fingerprints differently from the filter that was saved. A replica after a full sync, a
 * server restarted from RDB, a RESTOREd or MIGRATEd key would then drift from their origin (other
 * bytes, another DEBUG DIGEST; a full filter without expansion could accept an add on one side and
 * refuse it on the other). So every CF value holding a filter is saved as kind 2 (packed ones too:
 * their header's state), and loading sets the state once the filter is built. Kind 0 CF values
 * (written before kind 2 existed) still load, with the state restarting from the seed; a module that
 * predates kind 2 refuses such a value (its "damaged value header" log line). BF values are kind 0.
 * (The AOF rewrite carries the state as BK.CF.KICKSTATE after the key's chunks; the digest includes it.)
 * Pieces keep a large filter from needing a second copy of itself in the saving (forked) process:
 * the saved form is streamed straight from the filter into the RDB. Loading appends pieces to a buffer
 * that grows with the data actually read (a damaged length cannot make it allocate more than the file
 * holds), then validates the whole saved form (bk_filter_load_buffer: structure and checksums).
 *
 * Chunks (SCANDUMP / LOADCHUNK / AOF rewrite). The saved form is cut into pieces of at most
 * BKR_CHUNK_MAX bytes. The iterator that comes with a piece is 1 + the offset of its end, so the next
 * SCANDUMP starts there and LOADCHUNK knows where the piece goes (offset = iter - 1 - length). A
 * restore must send the pieces in order; the first creates the key (its header gives the total size),
 * the last completes it and is validated like any load (a filter changed between two SCANDUMP calls
 * fails its checksum here instead of being restored torn).
 */
#include "module.h"

#include <stdio.h>
#include <string.h>

#define BKR_RDB_PIECE ((size_t)4 << 20)
/* Largest saved form accepted anywhere: the library's limit on one filter, plus its headers. */
#define BKR_MAX_SAVED (BK_MAX_FILTER_BYTES + ((uint64_t)1 << 20))

/* ---- values ---- */

void bkr_value_set_filter(bkr_value *v, bk_filter *f, size_t heap0)
{
    v->type = bk_filter_type(f);
    v->obj = f;
    if (bkr_bare(v->type)) bk_filter_unwrap(f, v->type, &v->obj); /* cannot fail: the type matches */
    v->heap = bkr_heap_now() - heap0;
}

bkr_value *bkr_value_from_filter(bk_filter *f, size_t heap0)
{
    void *cf;
    if (bk_filter_type(f) == BK_TYPE_CUCKOO) { /* a small one packs (module.h, BKR_CF_PACKED) */
        bk_filter_unwrap(f, BK_TYPE_CUCKOO, &cf);
        return bkr_value_wrap(BK_TYPE_CUCKOO, cf, heap0);
    }
    bkr_value *v = RedisModule_Calloc(1, sizeof *v);
    bkr_value_set_filter(v, f, heap0);
    return v;
}

static void free_typed(bk_type type, void *typed)
{
    switch (type) {
    case BK_TYPE_SCALABLE: bk_scalable_free(typed); break;
    case BK_TYPE_CUCKOO: bk_cuckoo_free(typed); break;
    default: break;
    }
}

bkr_value *bkr_value_wrap(bk_type type, void *typed, size_t heap0)
{
    if (type == BK_TYPE_CUCKOO) {
        bkr_value *pv = bkr_cf_pack_value(typed);
        if (pv) return pv;
    }
    if (bkr_bare(type)) {
        bkr_value *v = RedisModule_Calloc(1, sizeof *v);
        v->obj = typed;
        v->type = type;
        v->heap = bkr_heap_now() - heap0;
        return v;
    }
    bk_filter *f;
    if (bk_filter_wrap(type, typed, &f) != BK_OK) {
        free_typed(type, typed);
        return NULL;
    }
    return bkr_value_from_filter(f, heap0);
}

bk_filter *bkr_handle(const bkr_value *v)
{
    bk_filter *h;
    if (v->type == BKR_CF_PACKED) /* an ordinary copy, freed by bkr_handle_done */
        return bkr_clone_filter(v, &h) == BK_OK ? h : NULL;
    if (!bkr_bare(v->type)) return v->obj;
    return bk_filter_wrap(v->type, v->obj, &h) == BK_OK ? h : NULL;
}

void bkr_handle_done(const bkr_value *v, bk_filter *h)
{
    void *typed;
    if (h && v->type == BKR_CF_PACKED) bk_filter_free(h);
    else if (h && bkr_bare(v->type)) bk_filter_unwrap(h, v->type, &typed); /* frees the handle only */
}

void bkr_value_drop_filter(bkr_value *v)
{
    if (!v->obj || bkr_stage_of(v)) return;
    if (v->type == BKR_CF_PACKED)
        RedisModule_Free(v->obj);
    else if (bkr_bare(v->type))
        free_typed(v->type, v->obj);
    else
        bk_filter_free(v->obj);
    v->obj = NULL;
}

void bkr_stage_free(bkr_stage *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->nseg; i++) RedisModule_Free(s->seg[i]);
    RedisModule_Free(s->seg);
    RedisModule_Free(s);
}
#define stage_free bkr_stage_free

void bkr_value_free(void *p)
{
    bkr_value *v = p;
    if (!v) return;
    bkr_value_drop_filter(v);
    stage_free(bkr_stage_of(v));
    RedisModule_Free(v);
}

size_t bkr_value_memory(const bkr_value *v)
{
    /* What the allocator gave, not what was asked for: jemalloc's size classes round a 10 MB array
     * up by as much as a fifth, and used_memory counts the rounded size. */
    size_t n = RedisModule_MallocSize ? RedisModule_MallocSize((void *)v) : sizeof *v;
    const bkr_stage *st = bkr_stage_of(v);
    if (st) {
        n += RedisModule_MallocSize ? RedisModule_MallocSize((void *)st) : sizeof *st;
        if (st->seg) n += RedisModule_MallocSize ? RedisModule_MallocSize(st->seg) : st->nseg * sizeof *st->seg;
        for (size_t i = 0; i < st->nseg; i++)
            n += RedisModule_MallocSize ? RedisModule_MallocSize(st->seg[i]) : BKR_STAGE_SEGMENT;
        return n;
    }
    return n + v->heap;
}

/* MEMORY USAGE: the value's memory plus the two 16-byte blocks Redis keeps for every module value (its
 * object and the module value wrapper around our pointer), which Redis's MEMORY USAGE leaves to the
 * type's callback: with them the figure agrees with used_memory per key as a plain string key's does
 * (bench/redis_keymem.py prints both; tests/redis/test_memory.py checks it). */
#define BKR_REDIS_WRAPPER 32
size_t bkr_mem_usage(const void *value) { return bkr_value_memory(value) + BKR_REDIS_WRAPPER; }

/* ---- streaming the saved form ----
 * bk_filter_save_sink encodes the filter and hands the bytes here in order, without a buffer the size
 * of the filter and without allocating anything itself (a stdio stream would take its FILE from libc's
 * malloc, unseen by Redis). Two uses: cut them into pieces handed to `emit` (RDB, AOF, digest), or copy
 * out one window [lo, hi) and stop (SCANDUMP). */
typedef struct bkr_stream {
    /* pieces: a RedisModule_Alloc buffer */
    uint8_t *piece;
    size_t piece_cap, piece_len;
    int (*emit)(void *ctx, const uint8_t *p, size_t n);
    void *emit_ctx;
    /* window */
    uint64_t pos, lo, hi;
    uint8_t *window;
    bool failed;
} bkr_stream;

/* The window is complete: the sink's way to stop the encoder early (not an error for the caller). */
#define BKR_STREAM_DONE BK_EIO

static bk_status sink_window(void *cookie, const void *data, size_t n)
{
    bkr_stream *s = cookie;
    const uint8_t *p = data;
    uint64_t a = s->pos, b = s->pos + n;
    uint64_t from = a > s->lo ? a : s->lo, to = b < s->hi ? b : s->hi;
    if (from < to) memcpy(s->window + (from - s->lo), p + (from - a), (size_t)(to - from));
    s->pos = b;
    return s->pos >= s->hi ? BKR_STREAM_DONE : BK_OK;
}

static bk_status sink_pieces(void *cookie, const void *data, size_t n)
{
    bkr_stream *s = cookie;
    const uint8_t *p = data;
    while (n) {
        size_t take = s->piece_cap - s->piece_len;
        if (take > n) take = n;
        memcpy(s->piece + s->piece_len, p, take);
        s->piece_len += take;
        p += take;
        n -= take;
        if (s->piece_len == s->piece_cap) {
            if (s->emit(s->emit_ctx, s->piece, s->piece_len) != 0) {
                s->failed = true;
                return BK_EIO;
            }
            s->pos += s->piece_len;
            s->piece_len = 0;
        }
    }
    return BK_OK;
}

/* Stream the saved form of f to emit() in pieces of at most `piece` bytes. 0 on success. */
static int stream_pieces(const bk_filter *f, size_t piece, int (*emit)(void *, const uint8_t *, size_t),
                         void *ctx)
{
    /* The piece buffer need not be larger than the whole saved form (most filters are small). */
    size_t total = 0;
    if (bk_filter_save_size(f, &total) == BK_OK && total > 0 && total < piece) piece = total;
    bkr_stream s = { .piece_cap = piece, .emit = emit, .emit_ctx = ctx };
    s.piece = RedisModule_Alloc(piece);
    bk_status st = bk_filter_save_sink(f, sink_pieces, &s);
    int rc = (st == BK_OK && !s.failed) ? 0 : -1;
    if (rc == 0 && s.piece_len) rc = emit(ctx, s.piece, s.piece_len);
    RedisModule_Free(s.piece);
    return rc;
}

/* Bytes [lo, lo + n) of the saved form of f into out. 0 on success. */
static int stream_window(const bk_filter *f, uint64_t lo, size_t n, uint8_t *out)
{
    bkr_stream s = { .lo = lo, .hi = lo + n, .window = out };
    bk_filter_save_sink(f, sink_window, &s); /* BKR_STREAM_DONE once past the window: expected */
    return s.pos >= s.hi ? 0 : -1;
}

/* The same cut into pieces for a restore in progress (its bytes are already in memory). */
static int stage_pieces(const bkr_stage *st, size_t piece, int (*emit)(void *, const uint8_t *, size_t),
                        void *ctx)
{
    /* a piece ends at the end of a segment at the latest */
    for (size_t off = 0; off < st->len;) {
        size_t in_seg = BKR_STAGE_SEGMENT - off % BKR_STAGE_SEGMENT;
        size_t n = st->len - off < piece ? st->len - off : piece;
        if (n > in_seg) n = in_seg;
        if (emit(ctx, st->seg[off / BKR_STAGE_SEGMENT] + off % BKR_STAGE_SEGMENT, n) != 0) return -1;
        off += n;
    }
    return 0;
}

bk_status bkr_save_alloc(const bk_filter *f, uint8_t **buf, size_t *len)
{
    size_t n;
    bk_status s = bk_filter_save_size(f, &n);
    if (s != BK_OK) return s;
    uint8_t *b = RedisModule_TryAlloc ? RedisModule_TryAlloc(n) : RedisModule_Alloc(n);
    if (!b) return BK_ENOMEM;
    size_t written;
    s = bk_filter_save_buffer(f, b, n, &written);
    if (s != BK_OK) {
        RedisModule_Free(b);
        return s;
    }
    *buf = b;
    *len = written;
    return BK_OK;
}

/* ---- a restore in progress: the bytes received so far, in segments ----
 * Segments of BKR_STAGE_SEGMENT bytes (the last one only as large as the saved form needs) are
 * allocated as data arrives, so a damaged declared size cannot allocate more than one segment beyond
 * the data, nothing is ever copied to grow, and the finished restore frees each segment as soon as
 * the filter has taken its bytes (stage_finish). */

/* Append n bytes, up to s->total in all. false if that would pass it. */
static bool stage_append(bkr_stage *s, const void *p, size_t n)
{
    if (n > s->total - s->len) return false;
    const uint8_t *src = p;
    while (n) {
        size_t i = s->len / BKR_STAGE_SEGMENT, at = s->len % BKR_STAGE_SEGMENT;
        if (i == s->nseg) {
            size_t left = s->total - i * BKR_STAGE_SEGMENT;
            s->seg = RedisModule_Realloc(s->seg, (s->nseg + 1) * sizeof *s->seg);
            s->seg[s->nseg++] = RedisModule_Alloc(left < BKR_STAGE_SEGMENT ? left : BKR_STAGE_SEGMENT);
        }
        size_t take = BKR_STAGE_SEGMENT - at < n ? BKR_STAGE_SEGMENT - at : n;
        memcpy(s->seg[i] + at, src, take);
        s->len += take;
        src += take;
        n -= take;
    }
    return true;
}

bkr_stage *bkr_stage_make(size_t total, const void *p, size_t n)
{
    bkr_stage *s = RedisModule_Calloc(1, sizeof *s);
    s->total = total;
    if (!stage_append(s, p, n)) {
        stage_free(s);
        return NULL;
    }
    return s;
}

/* A new restore of a saved form whose first bytes are p[0..n): NULL if they are not a bloomkit header
 * of a filter of family `fam` (with *err saying why). */
static bkr_stage *stage_new(const uint8_t *p, size_t n, bkr_family fam, const char **err)
{
    bk_file_info info;
    if (n < BK_FILE_HEADER_SIZE || bk_filter_peek_header(p, n, &info) != BK_OK) {
        *err = "not the start of a saved bloomkit filter";
        return NULL;
    }
    if (info.total_size > BKR_MAX_SAVED || info.total_size < n) {
        *err = "declared size out of range";
        return NULL;
    }
    if (!bk_filter_type_registered((bk_type)info.type)) {
        *err = "unknown filter type";
        return NULL;
    }
    if (bkr_family_of((bk_type)info.type) != fam) {
        *err = fam == BKR_CF ? "not a cuckoo filter" : "a cuckoo filter (use CF.LOADCHUNK)";
        return NULL;
    }
    bkr_stage *s = bkr_stage_make((size_t)info.total_size, p, n);
    if (!s) *err = "declared size out of range";
    return s;
}

/* The filter's bytes pulled from a finished restore, each segment freed once it is read: the filter
 * fills while the restore empties, so the two never both stand whole (freed segments of
 * BKR_STAGE_SEGMENT bytes go straight back to the system: jemalloc purges such large extents at once). */
typedef struct stage_src {
    bkr_stage *s;
    size_t off;
} stage_src;

static ptrdiff_t stage_pull(void *ctx, void *buf, size_t len)
{
    stage_src *c = ctx;
    bkr_stage *s = c->s;
    size_t done = 0;
    while (done < len && c->off < s->len) {
        size_t i = c->off / BKR_STAGE_SEGMENT, at = c->off % BKR_STAGE_SEGMENT;
        size_t seg_end = (i + 1) * BKR_STAGE_SEGMENT < s->len ? (i + 1) * BKR_STAGE_SEGMENT : s->len;
        size_t take = seg_end - c->off < len - done ? seg_end - c->off : len - done;
        memcpy((uint8_t *)buf + done, s->seg[i] + at, take);
        done += take;
        c->off += take;
        if (c->off == seg_end) {
            RedisModule_Free(s->seg[i]);
            s->seg[i] = NULL;
        }
    }
    return (ptrdiff_t)done;
}

/* Turn a complete restore into a filter, consuming the restore (freed here, whatever the outcome). */
static bk_status stage_finish(bkr_stage *s, bkr_family fam, bk_filter **out)
{
    bk_filter *f;
    stage_src src = { s, 0 };
    bk_status st = bk_filter_load_pull(stage_pull, &src, BK_LOAD_DEFAULT, &f);
    if (st == BK_OK && src.off != s->len) { /* the saved form ends before the restore's declared size */
        bk_filter_free(f);
        st = BK_ECORRUPT;
    }
    for (size_t i = 0; i < s->nseg; i++) RedisModule_Free(s->seg[i]);
    RedisModule_Free(s->seg);
    RedisModule_Free(s);
    if (st != BK_OK) return st;
    if (bkr_family_of(bk_filter_type(f)) != fam) {
        bk_filter_free(f);
        return BK_ETYPE;
    }
    *out = f;
    return BK_OK;
}

/* ---- RDB ---- */

static int rdb_emit(void *ctx, const uint8_t *p, size_t n)
{
    RedisModule_SaveStringBuffer(ctx, (const char *)p, n);
    return 0;
}

void bkr_rdb_save(RedisModuleIO *io, void *value)
{
    bkr_value *v = value;
    const bkr_stage *st = bkr_stage_of(v);
    if (st) {
        RedisModule_SaveUnsigned(io, 1);
        RedisModule_SaveUnsigned(io, st->total);
        RedisModule_SaveUnsigned(io, st->len);
        stage_pieces(st, BKR_RDB_PIECE, rdb_emit, io);
        return;
    }
    /* (A handle of 64 bytes is small: Redis's allocator aborts rather than fail it, as for any small
     * allocation, so h is never NULL here.) */
    bk_filter *h = bkr_handle(v);
    size_t total = 0;
    bk_filter_save_size(h, &total);
    const bk_cuckoo *cf = bk_filter_get(h, BK_TYPE_CUCKOO);
    RedisModule_SaveUnsigned(io, cf ? 2 : 0);
    RedisModule_SaveUnsigned(io, total);
    if (cf) RedisModule_SaveUnsigned(io, bk_cuckoo_kick_state(cf));
    stream_pieces(h, BKR_RDB_PIECE, rdb_emit, io);
    bkr_handle_done(v, h);
}

/* A filter's saved form pulled from its RDB pieces: one piece in memory at a time. */
typedef struct rdb_src {
    RedisModuleIO *io;
    uint64_t left;  /* bytes of the value not yet read from the RDB */
    char *piece;    /* the current piece, [at, len) of it not yet handed out */
    size_t len, at;
    bool bad;       /* the RDB failed or held a damaged piece */
} rdb_src;

static ptrdiff_t rdb_pull(void *ctx, void *buf, size_t len)
{
    rdb_src *c = ctx;
    size_t done = 0;
    while (done < len) {
        if (c->at == c->len) {
            if (c->piece) RedisModule_Free(c->piece);
            c->piece = NULL;
            c->at = c->len = 0;
            if (c->left == 0) break; /* the end of the value */
            size_t n = 0;
            char *p = RedisModule_LoadStringBuffer(c->io, &n);
            if (RedisModule_IsIOError(c->io) || !p || n == 0 || n > c->left) {
                if (p) RedisModule_Free(p);
                c->bad = true;
                return -1;
            }
            c->piece = p;
            c->len = n;
            c->left -= n;
        }
        size_t take = c->len - c->at < len - done ? c->len - c->at : len - done;
        memcpy((uint8_t *)buf + done, c->piece + c->at, take);
        c->at += take;
        done += take;
    }
    return (ptrdiff_t)done;
}

static void *rdb_load(RedisModuleIO *io, int encver, bkr_family fam)
{
    if (encver != 1) {
        RedisModule_LogIOError(io, "warning", "bloomkit: unknown encoding version %d", encver);
        return NULL;
    }
    uint64_t kind = RedisModule_LoadUnsigned(io);
    uint64_t total = RedisModule_LoadUnsigned(io);
    uint64_t want = total, kick = 0;
    if (!RedisModule_IsIOError(io) && kind == 1) want = RedisModule_LoadUnsigned(io);
    if (!RedisModule_IsIOError(io) && kind == 2) kick = RedisModule_LoadUnsigned(io);
    if (RedisModule_IsIOError(io) || kind > 2 || total < BK_FILE_HEADER_SIZE || total > BKR_MAX_SAVED ||
        want > total || (kind == 1 && want < BK_FILE_HEADER_SIZE) ||
        (kind == 2 && (kick == 0 || fam != BKR_CF))) {
        RedisModule_LogIOError(io, "warning", "bloomkit: damaged value header in RDB");
        return NULL;
    }
    if (kind != 1) {
        /* A filter: decoded as its pieces are read, each piece freed once the filter has taken it (the
         * peak is the filter and one piece). */
        rdb_src src = { .io = io, .left = want };
        bk_filter *f;
        size_t heap0 = bkr_heap_now();
        bkr_guard_begin_restore(RedisModule_GetContextFromIO(io));
        bk_status st = bk_filter_load_pull(rdb_pull, &src, BK_LOAD_DEFAULT, &f);
        bool refused = bkr_guard_was_refused();
        bkr_guard_end();
        if (src.piece) RedisModule_Free(src.piece);
        if (st == BK_OK && (src.left || src.at != src.len)) { /* the saved form ends before the value */
            bk_filter_free(f);
            st = BK_ECORRUPT;
        }
        if (st == BK_OK && bkr_family_of(bk_filter_type(f)) != fam) {
            bk_filter_free(f);
            st = BK_ETYPE;
        }
        if (st == BK_OK && kind == 2) { /* before the value is made: packing copies the state */
            st = bk_cuckoo_set_kick_state(bk_filter_get(f, BK_TYPE_CUCKOO), kick);
            if (st != BK_OK) bk_filter_free(f);
        }
        if (st != BK_OK) {
            if (refused)
                RedisModule_LogIOError(io, "warning", "bloomkit: RESTORE refused: the filter (%llu bytes saved) "
                                       "would pass maxmemory", (unsigned long long)total);
            else if (src.bad)
                RedisModule_LogIOError(io, "warning", "bloomkit: damaged value data in RDB");
            else
                RedisModule_LogIOError(io, "warning", "bloomkit: filter in RDB refused: %s", bk_strerror(st));
            return NULL;
        }
        return bkr_value_from_filter(f, heap0);
    }
    bkr_stage *s = RedisModule_Calloc(1, sizeof *s);
    s->total = (size_t)total;
    while (s->len < want) {
        size_t n = 0;
        char *piece = RedisModule_LoadStringBuffer(io, &n);
        bool ok = !RedisModule_IsIOError(io) && piece && n > 0 && n <= want - s->len && stage_append(s, piece, n);
        if (piece) RedisModule_Free(piece);
        if (!ok) {
            RedisModule_LogIOError(io, "warning", "bloomkit: damaged value data in RDB");
            stage_free(s);
            return NULL;
        }
    }
    /* A restore in progress (kind 1): kept as it was. */
    bk_file_info info;
    size_t first = s->len < BKR_STAGE_SEGMENT ? s->len : BKR_STAGE_SEGMENT;
    if (bk_filter_peek_header(s->seg[0], first, &info) != BK_OK || info.total_size != total ||
        bkr_family_of((bk_type)info.type) != fam) {
        RedisModule_LogIOError(io, "warning", "bloomkit: damaged restore-in-progress in RDB");
        stage_free(s);
        return NULL;
    }
    bkr_value *v = RedisModule_Calloc(1, sizeof *v);
    bkr_value_set_stage(v, s);
    return v;
}

void *bkr_rdb_load_bf(RedisModuleIO *io, int encver) { return rdb_load(io, encver, BKR_BF); }
void *bkr_rdb_load_cf(RedisModuleIO *io, int encver) { return rdb_load(io, encver, BKR_CF); }

/* ---- AOF rewrite: the chunk protocol, as LOADCHUNK commands ----
 * A cuckoo filter's chunks are followed by BK.CF.KICKSTATE with its kick state (see "Kind 2" above). */

typedef struct aof_ctx {
    RedisModuleIO *aof;
    RedisModuleString *key;
    const char *cmd;
    uint64_t end; /* offset of the end of the pieces emitted so far */
} aof_ctx;

static int aof_emit(void *ctx, const uint8_t *p, size_t n)
{
    aof_ctx *a = ctx;
    a->end += n;
    RedisModule_EmitAOF(a->aof, a->cmd, "slb", a->key, (long long)(a->end + 1), (const char *)p, n);
    return 0;
}

static void aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, bkr_value *v, const char *cmd)
{
    aof_ctx a = { aof, key, cmd, 0 };
    if (bkr_stage_of(v))
        stage_pieces(bkr_stage_of(v), BKR_CHUNK_MAX, aof_emit, &a);
    else {
        bk_filter *h = bkr_handle(v);
        stream_pieces(h, BKR_CHUNK_MAX, aof_emit, &a);
        const bk_cuckoo *cf = bk_filter_get(h, BK_TYPE_CUCKOO);
        if (cf) {
            char state[24];
            snprintf(state, sizeof state, "%llu", (unsigned long long)bk_cuckoo_kick_state(cf));
            RedisModule_EmitAOF(aof, "BK.CF.KICKSTATE", "sc", key, state);
        }
        bkr_handle_done(v, h);
    }
}

void bkr_aof_rewrite_bf(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
    aof_rewrite(aof, key, value, "BF.LOADCHUNK");
}
void bkr_aof_rewrite_cf(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
    aof_rewrite(aof, key, value, "CF.LOADCHUNK");
}

/* ---- DEBUG DIGEST-VALUE: the digest of the stored form ---- */

static int digest_emit(void *ctx, const uint8_t *p, size_t n)
{
    RedisModule_DigestAddStringBuffer(ctx, (const char *)p, n);
    return 0;
}

void bkr_digest(RedisModuleDigest *md, void *value)
{
    bkr_value *v = value;
    if (bkr_stage_of(v)) {
        RedisModule_DigestAddLongLong(md, 1);
        stage_pieces(bkr_stage_of(v), (size_t)1 << 20, digest_emit, md);
    } else {
        RedisModule_DigestAddLongLong(md, 0);
        bk_filter *h = bkr_handle(v);
        stream_pieces(h, (size_t)1 << 20, digest_emit, md);
        /* a cuckoo filter's kick state, which decides its future bytes (see "Kind 2" above) */
        const bk_cuckoo *cf = bk_filter_get(h, BK_TYPE_CUCKOO);
        if (cf) RedisModule_DigestAddLongLong(md, (long long)bk_cuckoo_kick_state(cf));
        bkr_handle_done(v, h);
    }
    RedisModule_DigestEndSequence(md);
}

/* ---- COPY ---- */

bk_status bkr_clone_filter(const bkr_value *v, bk_filter **out)
{
    bk_status s;
    if (v->type == BKR_CF_PACKED) {
        bk_cuckoo *cf;
        if ((s = bkr_cf_unpack(v, &cf)) != BK_OK) return s;
        if ((s = bk_filter_wrap(BK_TYPE_CUCKOO, cf, out)) != BK_OK) bk_cuckoo_free(cf);
        return s;
    }
    if (bkr_bare(v->type)) { /* the library's clone, through a handle made for the call */
        bk_filter *h = bkr_handle(v);
        if (!h) return BK_ENOMEM;
        s = bk_filter_clone(h, out);
        bkr_handle_done(v, h);
        return s;
    }
    /* Any other type: through its saved form. */
    uint8_t *buf;
    size_t len;
    if ((s = bkr_save_alloc(v->obj, &buf, &len)) != BK_OK) return s;
    s = bk_filter_load_buffer(buf, len, BK_LOAD_DEFAULT, out);
    RedisModule_Free(buf);
    return s;
}

void *bkr_copy(RedisModuleString *fromkey, RedisModuleString *tokey, const void *value)
{
    (void)fromkey;
    (void)tokey;
    const bkr_value *v = value;
    const bkr_stage *vs = bkr_stage_of(v);
    if (vs) {
        bkr_value *c = RedisModule_Calloc(1, sizeof *c);
        bkr_stage *cs = RedisModule_Calloc(1, sizeof *cs);
        cs->total = vs->total;
        for (size_t off = 0; off < vs->len; off += BKR_STAGE_SEGMENT) {
            size_t n = vs->len - off < BKR_STAGE_SEGMENT ? vs->len - off : BKR_STAGE_SEGMENT;
            stage_append(cs, vs->seg[off / BKR_STAGE_SEGMENT], n);
        }
        bkr_value_set_stage(c, cs);
        return c;
    }
    bk_filter *f;
    size_t heap0 = bkr_heap_now();
    return bkr_clone_filter(v, &f) == BK_OK ? bkr_value_from_filter(f, heap0) : NULL;
}

/* ---- SCANDUMP / LOADCHUNK ---- */

static int reply_chunk_end(RedisModuleCtx *ctx, bkr_family fam)
{
    RedisModule_ReplyWithArray(ctx, 2);
    RedisModule_ReplyWithLongLong(ctx, 0);
    /* RedisBloom 2.4 ends a Bloom dump with an empty string and a cuckoo dump with a null. */
    if (fam == BKR_BF) return RedisModule_ReplyWithStringBuffer(ctx, "", 0);
    return RedisModule_ReplyWithNull(ctx);
}

int bkr_scandump(RedisModuleCtx *ctx, const bkr_value *v, long long iter, bkr_family fam)
{
    if (bkr_stage_of(v)) return bkr_reply_restoring(ctx);
    bk_filter *h = bkr_handle(v);
    if (!h) return bkr_reply_status(ctx, BK_ENOMEM);
    size_t total;
    bk_status s = bk_filter_save_size(h, &total);
    if (s != BK_OK || iter < 0 || (iter ? (uint64_t)iter - 1 : 0) >= total) {
        bkr_handle_done(v, h);
        return s != BK_OK ? bkr_reply_status(ctx, s) : reply_chunk_end(ctx, fam);
    }
    uint64_t start = iter == 0 ? 0 : (uint64_t)iter - 1;
    size_t n = total - start < BKR_CHUNK_MAX ? (size_t)(total - start) : BKR_CHUNK_MAX;
    uint8_t *buf = RedisModule_Alloc(n);
    int bad = stream_window(h, start, n, buf);
    bkr_handle_done(v, h);
    if (bad != 0) {
        RedisModule_Free(buf);
        return RedisModule_ReplyWithError(ctx, "ERR could not encode the filter");
    }
    RedisModule_ReplyWithArray(ctx, 2);
    RedisModule_ReplyWithLongLong(ctx, (long long)(start + n + 1));
    RedisModule_ReplyWithStringBuffer(ctx, (const char *)buf, n);
    RedisModule_Free(buf);
    return REDISMODULE_OK;
}

int bkr_loadchunk(RedisModuleCtx *ctx, RedisModuleKey *key, bkr_lookup st, bkr_value *v, long long iter,
                  RedisModuleString *data, bkr_family fam)
{
    size_t n;
    const uint8_t *p = (const uint8_t *)RedisModule_StringPtrLen(data, &n);
    const char *bad = fam == BKR_BF ? "ERR received bad data" : "Couldn't load chunk!";
    if (st == BKR_WRONGTYPE) return bkr_reply_wrongtype(ctx);
    if (n == 0 || iter < 1 || (unsigned long long)(iter - 1) < n) return RedisModule_ReplyWithError(ctx, bad);
    uint64_t offset = (uint64_t)iter - 1 - n;

    if (offset == 0) {
        /* The first piece starts a restore: into an empty key, or over an unfinished restore. */
        if (st == BKR_OK && !bkr_stage_of(v)) return RedisModule_ReplyWithError(ctx, "ERR item exists");
        bk_file_info hdr;
        /* The restore will hold the whole saved form, then the filter made from it. */
        if (bk_filter_peek_header(p, n, &hdr) == BK_OK && hdr.total_size < SIZE_MAX / 2 &&
            bkr_guard_refuses(2 * (size_t)hdr.total_size))
            return bkr_reply_status(ctx, BK_ENOMEM);
        const char *why;
        bkr_stage *s = stage_new(p, n, fam, &why);
        if (!s) {
            /* RedisBloom: "Invalid header" for a first chunk of the wrong size, "Couldn't create filter!" for
             * one whose contents it refuses */
            return bkr_reply_error_why(ctx, fam == BKR_BF               ? "ERR received bad data"
                                            : n < BK_FILE_HEADER_SIZE ? "Invalid header"
                                                                      : "Couldn't create filter!",
                                       "%s", why);
        }
        if (st == BKR_OK) {
            stage_free(bkr_stage_of(v));
            bkr_value_set_stage(v, s);
        } else {
            v = RedisModule_Calloc(1, sizeof *v);
            bkr_value_set_stage(v, s);
            bkr_set(key, fam, v);
        }
    } else {
        if (st == BKR_EMPTY) {
            return bkr_reply_error_why(ctx, bad,
                                       "no restore in progress for this key: the chunk at offset %llu was sent "
                                       "before the first chunk, which starts the restore; send the chunks in the "
                                       "order SCANDUMP returned them", (unsigned long long)offset);
        }
        if (!bkr_stage_of(v)) return bkr_reply_error_why(ctx, bad, "the filter is complete");
        if (offset != bkr_stage_of(v)->len) {
            return bkr_reply_error_why(ctx, fam == BKR_BF ? "ERR invalid offset - no link found" : bad,
                                       "chunks must be loaded in order: this chunk starts at offset %llu, the "
                                       "restore expects the one at offset %llu", (unsigned long long)offset,
                                       (unsigned long long)bkr_stage_of(v)->len);
        }
        if (!stage_append(bkr_stage_of(v), p, n))
            return bkr_reply_error_why(ctx, fam == BKR_BF ? "ERR invalid chunk - Too big for current filter" : bad,
                                       "the chunk is too big for the filter");
    }
    if (bkr_stage_of(v)->len == bkr_stage_of(v)->total) {
        bk_filter *f;
        size_t heap0 = bkr_heap_now();
        bk_status s = stage_finish(bkr_stage_of(v), fam, &f);
        v->obj = NULL; /* the restore, consumed by stage_finish */
        v->type = 0;
        if (s != BK_OK) {
            /* The restore is useless now: drop the key rather than keep a filter that cannot answer. */
            RedisModule_DeleteKey(key);
            RedisModule_ReplicateVerbatim(ctx);
            return bkr_reply_error_why(ctx, bad, "restored filter refused: %s", bk_strerror(s));
        }
        bkr_value_set_filter(v, f, heap0);
        bkr_value *pv = v->type == BK_TYPE_CUCKOO ? bkr_cf_pack_value(v->obj) : NULL; /* a small one packs */
        bkr_value *old = NULL;
        if (pv && RedisModule_ModuleTypeReplaceValue(key, bkr_type[BKR_CF], pv, (void **)&old) == REDISMODULE_OK)
            RedisModule_Free(old); /* (its filter is pv's now; the key holds v, of this type: no failure) */
    }
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}
