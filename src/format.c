/* The container format (docs/FORMAT.md): header and checksums, save, load, mmap, shared mappings. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#  include <linux/falloc.h>
#  include <sys/vfs.h>
#endif
#include "persist.h"

static const uint8_t MAGIC[8] = { 0x89, 'B', 'K', 'F', 0x0D, 0x0A, 0x1A, 0x0A };

enum {
    OFF_MAJOR = 8, OFF_MINOR = 10, OFF_TYPE = 12, OFF_FLAGS = 16, OFF_HASH = 20, OFF_HSIZE = 24,
    OFF_SEED = 32, OFF_BODY_SIZE = 40, OFF_BODY_SUM = 48, OFF_HDR_SUM = 56
};
#define HDR_MAX 4096u
#define BODY_MAX (BK_MAX_FILTER_BYTES + (UINT64_C(1) << 20))
#define FLAGS_MUST_UNDERSTAND 0xFFFFu
#define FLAGS_KNOWN (BK_FILE_FLAG_CHECKSUM_STALE | BK_FILE_FLAG_PROBES2)
_Static_assert(BK_FILE_FLAG_PROBES2 == 0x0002u, "bk__probe_mix_of_flags (internal.h) tests bit 1");

/* The types whose probes BK_FILE_FLAG_PROBES2 selects; on any other type the flag is corrupt. */
static bool uses_probe_flag(uint32_t type)
{
    return type == BK_TYPE_BLOOM || type == BK_TYPE_COUNTING || type == BK_TYPE_SCALABLE;
}

/* ---- little-endian fields ---- */
static void put16(uint8_t *b, uint16_t v) { b[0] = (uint8_t)v; b[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *b, uint32_t v)
{
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get16(const uint8_t *b) { return (uint16_t)(b[0] | b[1] << 8); }
static uint32_t get32(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t get64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
    return v;
}

/* XXH3-64 of the header with its own checksum field taken as zero. */
static uint64_t header_checksum(const uint8_t *h, uint32_t hsize)
{
    static const uint8_t zero[8];
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, h, OFF_HDR_SUM);
    XXH3_64bits_update(&st, zero, 8);
    if (hsize > 64) XXH3_64bits_update(&st, h + 64, hsize - 64);
    return XXH3_64bits_digest(&st);
}

/* Steps 1-7 of the validation order in docs/FORMAT.md (not the type, hash id, sizes or body). */
static bk_status parse_header(const uint8_t *b, size_t avail, bk_file_info *in)
{
    size_t n = avail < 8 ? avail : 8;
    if (n && memcmp(b, MAGIC, n) != 0) return BK_ECORRUPT;
    if (avail < 64) return BK_ETRUNCATED;
    if (get16(b + OFF_MAJOR) != BK_FORMAT_VERSION_MAJOR) return BK_EVERSION;
    uint32_t hsize = get32(b + OFF_HSIZE);
    if (hsize < 64 || hsize % 64 || hsize > HDR_MAX) return BK_ECORRUPT;
    if (avail < hsize) return BK_ETRUNCATED;
    if (header_checksum(b, hsize) != get64(b + OFF_HDR_SUM)) return BK_ECHECKSUM;
    uint32_t flags = get32(b + OFF_FLAGS);
    if (flags & FLAGS_MUST_UNDERSTAND & ~FLAGS_KNOWN) return BK_EVERSION;
    uint64_t body = get64(b + OFF_BODY_SIZE);
    if (body > BODY_MAX) return BK_ETOOBIG;
    in->version_major = BK_FORMAT_VERSION_MAJOR;
    in->version_minor = get16(b + OFF_MINOR);
    in->type = get32(b + OFF_TYPE);
    in->flags = flags;
    in->hash_id = get32(b + OFF_HASH);
    in->header_size = hsize;
    in->seed = get64(b + OFF_SEED);
    in->body_size = body;
    in->body_checksum = get64(b + OFF_BODY_SUM);
    in->total_size = hsize + body;
    return BK_OK;
}

bk_status bk_filter_peek_header(const void *buf, size_t len, bk_file_info *info)
{
    if (!info || !buf) return BK_EINVAL;
    bk_file_info in;
    bk_status s = parse_header(buf, len, &in);
    if (s == BK_OK) *info = in;
    return s;
}

/* The flags word of a live mapping, read while other processes may be writing the header. */
static uint32_t live_flags(const uint8_t *map)
{
    uint32_t v = __atomic_load_n((const uint32_t *)(const void *)(map + OFF_FLAGS), __ATOMIC_ACQUIRE);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

typedef enum { MODE_COPY, MODE_READONLY, MODE_SHARED } load_mode;

/*
 * Validate data[0..len) (exactly one saved filter) and decode it: copying, or in place (read-only or
 * shared writable). `live`: data is a mapping that writers may be changing, so a payload checksum
 * mismatch is forgiven when a writer has meanwhile set the stale flag. `body_sum`: the payload's
 * checksum when the caller computed it already (while reading), else NULL.
 */
static bk_status load_core(const uint8_t *data, size_t len, unsigned flags, load_mode mode, bool live,
                           const uint64_t *body_sum, bk_filter **out)
{
    bk_file_info in;
    bk_status s = parse_header(data, len, &in);
    if (s != BK_OK) return s;
    if (in.total_size > len) return BK_ETRUNCATED;
    if (in.total_size < len) return BK_ECORRUPT;
    const bk_vtable *vt = bk__vtable_of(in.type);
    if (!vt) return BK_ETYPE;
    if (in.hash_id != BK_HASH_XXH3_64) return BK_ENOTSUP;
    if ((in.flags & BK_FILE_FLAG_PROBES2) && !uses_probe_flag(in.type)) return BK_ECORRUPT;
    if (mode == MODE_SHARED) {
        if (in.version_minor > BK_FORMAT_VERSION_MINOR) return BK_EVERSION;
        if (!vt->add_hash_atomic) return BK_ENOTSUP;
    }
    const uint8_t *body = data + in.header_size;
    bool stale = in.flags & BK_FILE_FLAG_CHECKSUM_STALE;
    if (stale && (flags & BK_LOAD_REQUIRE_CLEAN)) return BK_ECHECKSUM;
    if (!stale && !(flags & BK_LOAD_NO_CHECKSUM) &&
        (body_sum ? *body_sum : XXH3_64bits(body, (size_t)in.body_size)) != in.body_checksum) {
        if (!live || (flags & BK_LOAD_REQUIRE_CLEAN) || !(live_flags(data) & BK_FILE_FLAG_CHECKSUM_STALE))
            return BK_ECHECKSUM;
    }
    bk_reader r = { .base = body, .len = (size_t)in.body_size, .off = 0, .borrow = mode != MODE_COPY,
                    .writable = mode == MODE_SHARED, .seed = in.seed, .flags = in.flags };
    void *obj = NULL;
    s = vt->decode(&r, &obj);
    if (s != BK_OK) return s;
    if (r.off != r.len) {
        vt->destroy(obj);
        return BK_ECORRUPT;
    }
    bk_backing backing = mode == MODE_COPY ? BK_BACKING_MEMORY
                         : mode == MODE_READONLY ? BK_BACKING_MAP_READONLY : BK_BACKING_MAP_SHARED;
    s = bk__filter_make(vt, obj, backing, out);
    if (s != BK_OK) vt->destroy(obj);
    return s;
}

bk_status bk_filter_load_buffer(const void *buf, size_t len, unsigned flags, bk_filter **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if ((!buf && len) || (flags & BK_OPEN_WRITE_SHARED)) return BK_EINVAL;
    return load_core(buf, len, flags, MODE_COPY, false, NULL, out);
}

bk_status bk_filter_open_buffer(const void *buf, size_t len, unsigned flags, bk_filter **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!buf || ((uintptr_t)buf & 63) || (flags & BK_OPEN_WRITE_SHARED)) return BK_EINVAL;
    bk_status s = load_core(buf, len, flags, MODE_READONLY, false, NULL, out);
    if (s == BK_OK) (*out)->map = (uint8_t *)(uintptr_t)buf; /* map_len 0: borrowed, nothing to unmap */
    return s;
}

/* ---- saving ---- */

typedef bk_status (*sink_fn)(void *ctx, const void *data, size_t len);

/* `flags`, when not NULL, receives the header flags the body needs. */
static bk_status encode_body(const bk_filter *f, sink_fn sink, void *ctx, uint64_t *size, uint32_t *flags)
{
    bk_writer w = { .sink = sink, .ctx = ctx, .offset = 0, .flags = 0 };
    bk_status s = f->vt->encode(f->obj, &w);
    *size = w.offset;
    if (flags) *flags = w.flags;
    return s;
}

static void build_header(uint8_t h[64], const bk_filter *f, uint32_t flags, uint64_t body_size, uint64_t body_sum)
{
    memset(h, 0, 64);
    memcpy(h, MAGIC, 8);
    put16(h + OFF_MAJOR, BK_FORMAT_VERSION_MAJOR);
    put16(h + OFF_MINOR, BK_FORMAT_VERSION_MINOR);
    put32(h + OFF_TYPE, (uint32_t)f->vt->type);
    put32(h + OFF_FLAGS, flags);
    put32(h + OFF_HASH, BK_HASH_XXH3_64);
    put32(h + OFF_HSIZE, 64);
    put64(h + OFF_SEED, f->vt->seed(f->obj));
    put64(h + OFF_BODY_SIZE, body_size);
    put64(h + OFF_BODY_SUM, body_sum);
    put64(h + OFF_HDR_SUM, header_checksum(h, 64));
}

static bk_status saved_size(const bk_filter *f, uint64_t *total)
{
    uint64_t body;
    bk_status s = encode_body(f, NULL, NULL, &body, NULL);
    if (s != BK_OK) return s;
    if (body > BODY_MAX || body + 64 > SIZE_MAX) return BK_ETOOBIG;
    *total = body + 64;
    return BK_OK;
}

bk_status bk_filter_save_size(const bk_filter *f, size_t *size)
{
    if (!f || !size) return BK_EINVAL;
    uint64_t total;
    bk_status s = saved_size(f, &total);
    if (s == BK_OK) *size = (size_t)total;
    return s;
}

typedef struct { uint8_t *p; size_t left; } buf_sink;
static bk_status sink_buf(void *ctx, const void *data, size_t len)
{
    buf_sink *b = ctx;
    if (len > b->left) return BK_EINVAL; /* the filter grew since it was measured: a caller's race */
    memcpy(b->p, data, len);
    b->p += len;
    b->left -= len;
    return BK_OK;
}

/* One encode pass straight into the buffer, then the checksum of what landed there: a consistent
 * snapshot even of a shared mapping that other processes keep inserting into. */
bk_status bk_filter_save_buffer(const bk_filter *f, void *buf, size_t cap, size_t *written)
{
    if (!f || !written) return BK_EINVAL;
    *written = 0;
    uint64_t total;
    bk_status s = saved_size(f, &total);
    if (s != BK_OK) return s;
    if (!buf || cap < total) {
        *written = (size_t)total;
        return BK_EINVAL;
    }
    buf_sink b = { (uint8_t *)buf + 64, (size_t)total - 64 };
    uint64_t body;
    uint32_t hflags;
    if ((s = encode_body(f, sink_buf, &b, &body, &hflags)) != BK_OK) return s;
    if (body != total - 64) return BK_EINVAL;
    build_header(buf, f, hflags, body, XXH3_64bits((uint8_t *)buf + 64, (size_t)body));
    *written = (size_t)total;
    return BK_OK;
}

bk_status bk_filter_save_alloc(const bk_filter *f, void **buf, size_t *len)
{
    if (!buf || !len) return BK_EINVAL;
    *buf = NULL;
    *len = 0;
    if (!f) return BK_EINVAL;
    uint64_t total;
    bk_status s = saved_size(f, &total);
    if (s != BK_OK) return s;
    uint8_t *p = bk__malloc((size_t)total);
    if (!p) return BK_ENOMEM;
    size_t n;
    if ((s = bk_filter_save_buffer(f, p, (size_t)total, &n)) != BK_OK) {
        bk__free(p);
        return s;
    }
    *buf = p;
    *len = n;
    return BK_OK;
}

void bk_filter_buffer_free(void *buf) { bk__free(buf); }

/* Output sinks: a descriptor (all bytes, EINTR retried) or a stdio stream. */
static bk_status write_all(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return BK_EIO;
        }
        if (n == 0) {
            errno = EIO;
            return BK_EIO;
        }
        p += n;
        len -= (size_t)n;
    }
    return BK_OK;
}
static bk_status sink_fd(void *ctx, const void *data, size_t len) { return write_all(*(int *)ctx, data, len); }
static bk_status sink_file(void *ctx, const void *data, size_t len)
{
    if (fwrite(data, 1, len, (FILE *)ctx) != len) {
        if (!errno) errno = EIO;
        return BK_EIO;
    }
    return BK_OK;
}
static bk_status sink_hash(void *ctx, const void *data, size_t len)
{
    XXH3_64bits_update(ctx, data, len);
    return BK_OK;
}

/* A stream gets the header first, so the checksum is needed before the body is written: one pass to
 * hash, one to write (nothing the size of the filter is buffered). A shared mapping changes between
 * passes, so it is copied to a snapshot first. */
static bk_status save_stream(const bk_filter *f, sink_fn out, void *ctx)
{
    bk_status s;
    if (f->backing == BK_BACKING_MAP_SHARED) {
        void *snap;
        size_t n;
        if ((s = bk_filter_save_alloc(f, &snap, &n)) != BK_OK) return s;
        s = out(ctx, snap, n);
        bk__free(snap);
        return s;
    }
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    uint64_t body, body2;
    uint32_t hflags;
    if ((s = encode_body(f, sink_hash, &st, &body, &hflags)) != BK_OK) return s;
    if (body > BODY_MAX) return BK_ETOOBIG;
    uint8_t h[64];
    build_header(h, f, hflags, body, XXH3_64bits_digest(&st));
    if ((s = out(ctx, h, 64)) != BK_OK) return s;
    if ((s = encode_body(f, out, ctx, &body2, NULL)) != BK_OK) return s;
    return body2 == body ? BK_OK : BK_EINVAL;
}

bk_status bk_filter_save_fd(const bk_filter *f, int fd)
{
    if (!f || fd < 0) return BK_EINVAL;
    return save_stream(f, sink_fd, &fd);
}

bk_status bk_filter_save_sink(const bk_filter *f, bk_save_sink sink, void *ctx)
{
    if (!f || !sink) return BK_EINVAL;
    return save_stream(f, sink, ctx);
}

bk_status bk_filter_save_file(const bk_filter *f, FILE *fp)
{
    if (!f || !fp) return BK_EINVAL;
    errno = 0;
    return save_stream(f, sink_file, fp);
}

/* Saving to a path: the body is written once to the temporary file and hashed on the way; the
 * header, with the checksum, is written last at offset 0. Bytes from a shared mapping are copied to
 * a bounce buffer first, so the bytes hashed are the bytes written. */
typedef struct {
    int fd;
    XXH3_state_t *st;
    uint8_t *bounce; /* NULL: hash and write the caller's bytes directly */
    size_t bounce_len;
    uint64_t off;    /* bytes written so far */
} file_sink;

/* Large bodies are written in pieces, and (on Linux) the write-back of each piece to the disk is
 * started as soon as it is written, so the final fsync waits for the last pieces only. */
#define WRITE_PIECE ((size_t)4 << 20)

static bk_status sink_tmpfile(void *ctx, const void *data, size_t len)
{
    file_sink *t = ctx;
    const uint8_t *p = data;
    while (len) {
        size_t n = len < WRITE_PIECE ? len : WRITE_PIECE;
        const uint8_t *q = p;
        if (t->bounce) {
            n = n < t->bounce_len ? n : t->bounce_len;
            memcpy(t->bounce, p, n);
            q = t->bounce;
        }
        XXH3_64bits_update(t->st, q, n);
        bk_status s = write_all(t->fd, q, n);
        if (s != BK_OK) return s;
#ifdef SYNC_FILE_RANGE_WRITE
        if (n == WRITE_PIECE) (void)sync_file_range(t->fd, (off_t)t->off, (off_t)n, SYNC_FILE_RANGE_WRITE);
#endif
        t->off += n;
        p += n;
        len -= n;
    }
    return BK_OK;
}

static bk_status pwrite_all(int fd, const uint8_t *p, size_t len, off_t off)
{
    while (len) {
        ssize_t n = pwrite(fd, p, len, off);
        if (n < 0) {
            if (errno == EINTR) continue;
            return BK_EIO;
        }
        if (n == 0) {
            errno = EIO;
            return BK_EIO;
        }
        p += n;
        len -= (size_t)n;
        off += n;
    }
    return BK_OK;
}

static uint64_t tmp_counter;

static bk_status write_tmpfile(const bk_filter *f, int fd)
{
    static const uint8_t zero[64];
    bk_status s = write_all(fd, zero, 64);
    if (s != BK_OK) return s;
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    file_sink t = { fd, &st, NULL, 0, 64 };
    if (f->backing == BK_BACKING_MAP_SHARED) {
        t.bounce_len = 1 << 20;
        if (!(t.bounce = bk__malloc(t.bounce_len))) return BK_ENOMEM;
    }
    uint64_t body;
    uint32_t hflags;
    s = encode_body(f, sink_tmpfile, &t, &body, &hflags);
    bk__free(t.bounce);
    if (s != BK_OK) return s;
    if (body > BODY_MAX) return BK_ETOOBIG;
    uint8_t h[64];
    build_header(h, f, hflags, body, XXH3_64bits_digest(&st));
    if ((s = pwrite_all(fd, h, 64, 0)) != BK_OK) return s;
    while (fsync(fd) != 0)
        if (errno != EINTR) return BK_EIO;
    return BK_OK;
}

bk_status bk_filter_save_path(const bk_filter *f, const char *path)
{
    if (!f || !path || !*path) return BK_EINVAL;
    size_t plen = strlen(path);
    if (path[plen - 1] == '/') return BK_EINVAL;
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    const char *base = slash ? slash + 1 : path;
    /* "<dir>/.<base>.tmp.<16 hex>" */
    size_t tlen = plen + 2 + 5 + 16 + 1;
    char *tmp = bk__malloc(tlen), *dir = bk__malloc(dlen + 2);
    if (!tmp || !dir) {
        bk__free(tmp);
        bk__free(dir);
        return BK_ENOMEM;
    }
    if (!slash) strcpy(dir, ".");
    else if (dlen == 0) strcpy(dir, "/");
    else {
        memcpy(dir, path, dlen);
        dir[dlen] = 0;
    }
    struct stat old;
    bool have_old = stat(path, &old) == 0 && S_ISREG(old.st_mode);
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t r = bk__remix((uint64_t)getpid() ^ (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15u ^
                               __atomic_add_fetch(&tmp_counter, 1, __ATOMIC_RELAXED) << 32);
        snprintf(tmp, tlen, "%.*s%s.%s.tmp.%016llx", (int)dlen, path, slash ? "/" : "", base,
                 (unsigned long long)r);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    bk_status s = BK_OK;
    if (fd < 0) {
        s = BK_EIO;
        goto out;
    }
    if (have_old && fchmod(fd, old.st_mode & 07777) != 0) s = BK_EIO;
    if (s == BK_OK) s = write_tmpfile(f, fd);
    if (close(fd) != 0 && s == BK_OK) s = BK_EIO;
    if (s == BK_OK && rename(tmp, path) != 0) s = BK_EIO;
    if (s != BK_OK) {
        int e = errno;
        unlink(tmp);
        errno = e;
        goto out;
    }
    /* The rename is durable once the directory is synced. Some file systems refuse fsync on a
     * directory (EINVAL): nothing more can be done there. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        s = BK_EIO;
        goto out;
    }
    while (fsync(dfd) != 0) {
        if (errno == EINTR) continue;
        if (errno != EINVAL) s = BK_EIO;
        break;
    }
    int e = errno;
    close(dfd);
    errno = e;
out:
    bk__free(tmp);
    bk__free(dir);
    return s;
}

/* ---- loading from streams ---- */

/* Reads up to len bytes; returns the count (short only at end of stream), or -1 with errno set. */
typedef ptrdiff_t (*read_fn)(void *ctx, void *buf, size_t len);

static ptrdiff_t read_fd(void *ctx, void *buf, size_t len)
{
    int fd = *(int *)ctx;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, (uint8_t *)buf + got, len - got);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (n == 0) break;
        got += (size_t)n;
    }
    return (ptrdiff_t)got;
}

static ptrdiff_t read_file(void *ctx, void *buf, size_t len)
{
    FILE *fp = ctx;
    size_t n = fread(buf, 1, len, fp);
    if (n < len && ferror(fp)) {
        if (!errno) errno = EIO;
        return -1;
    }
    return (ptrdiff_t)n;
}

/*
 * Read exactly one saved filter from a stream and load it (copying). `avail`, when known (a regular
 * file), is how many bytes remain: a header declaring more is refused before allocating for it. The
 * buffer grows as data arrives, so a lying header cannot make us allocate more than twice what the
 * stream really holds. `exact`: the remaining bytes must be exactly one filter (a file), so trailing
 * bytes are refused (BK_ECORRUPT) before the body is read, as the buffer loader does.
 */
static bk_status load_stream(read_fn rd, void *ctx, uint64_t avail, bool exact, unsigned flags,
                             bk_filter **out)
{
    uint8_t hdr[HDR_MAX];
    ptrdiff_t n = rd(ctx, hdr, 64);
    if (n < 0) return BK_EIO;
    bk_file_info in;
    bk_status s = parse_header(hdr, (size_t)n, &in);
    if (s == BK_ETRUNCATED && n == 64) {
        /* a longer header (newer minor version): its size field was checked by parse_header */
        uint32_t hsize = get32(hdr + OFF_HSIZE);
        ptrdiff_t m = rd(ctx, hdr + 64, hsize - 64);
        if (m < 0) return BK_EIO;
        s = parse_header(hdr, (size_t)(64 + m), &in);
    }
    if (s != BK_OK) return s;
    if (in.total_size > avail) return BK_ETRUNCATED;
    if (exact && in.total_size < avail) return BK_ECORRUPT;
    if (in.total_size > SIZE_MAX) return BK_ETOOBIG;
    size_t want = (size_t)in.total_size, have = in.header_size;
    /* a known size was checked above: allocate it at once; else grow as the data arrives */
    size_t cap = avail != UINT64_MAX || want < (size_t)(4u << 20) ? want : (size_t)(4u << 20);
    uint8_t *buf = bk__calloc_aligned(cap);
    if (!buf) return BK_ENOMEM;
    memcpy(buf, hdr, in.header_size);
    /* The payload is hashed a piece at a time right after it is read, while it is still in cache,
     * instead of in a second pass over the whole buffer. */
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    while (have < want) {
        if (have == cap) {
            size_t ncap = cap > want / 2 ? want : cap * 2;
            uint8_t *nb = bk__calloc_aligned(ncap);
            if (!nb) {
                bk__free_aligned(buf);
                return BK_ENOMEM;
            }
            memcpy(nb, buf, have);
            bk__free_aligned(buf);
            buf = nb;
            cap = ncap;
        }
        size_t ask = cap - have < (size_t)(1u << 20) ? cap - have : (size_t)(1u << 20);
        ptrdiff_t m = rd(ctx, buf + have, ask);
        if (m < 0) {
            int e = errno;
            bk__free_aligned(buf);
            errno = e;
            return BK_EIO;
        }
        XXH3_64bits_update(&st, buf + have, (size_t)m);
        have += (size_t)m;
        if ((size_t)m < ask) break; /* end of stream */
    }
    uint64_t sum = XXH3_64bits_digest(&st);
    s = have < want ? BK_ETRUNCATED : load_core(buf, want, flags, MODE_COPY, false, &sum, out);
    bk__free_aligned(buf);
    return s;
}

static uint64_t fd_remaining(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return UINT64_MAX;
    off_t pos = lseek(fd, 0, SEEK_CUR);
    if (pos < 0 || pos > st.st_size) return UINT64_MAX;
    return (uint64_t)(st.st_size - pos);
}

bk_status bk_filter_load_fd(int fd, unsigned flags, bk_filter **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (fd < 0 || (flags & BK_OPEN_WRITE_SHARED)) return BK_EINVAL;
    return load_stream(read_fd, &fd, fd_remaining(fd), false, flags, out);
}

bk_status bk_filter_load_file(FILE *fp, unsigned flags, bk_filter **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!fp || (flags & BK_OPEN_WRITE_SHARED)) return BK_EINVAL;
    errno = 0;
    return load_stream(read_file, fp, UINT64_MAX, false, flags, out);
}

/* A shared flock for the duration of a validation, so that the last shared writer's finalisation
 * (which holds it exclusively while it rewrites the header) is never seen half-done. */
static void lock_shared(int fd)
{
    while (flock(fd, LOCK_SH) != 0 && errno == EINTR) {
    }
}

bk_status bk_filter_load_path(const char *path, unsigned flags, bk_filter **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!path || (flags & BK_OPEN_WRITE_SHARED)) return BK_EINVAL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return BK_EIO;
    lock_shared(fd);
    bk_status s = BK_EIO;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (lseek(fd, 0, SEEK_SET) != 0) break;
        uint64_t size = fd_remaining(fd);
        s = load_stream(read_fd, &fd, size, size != UINT64_MAX, flags, out);
        /* A payload checksum that changed under us because a shared writer opened the file
         * meanwhile: its flag is set now, and the second read skips the check. */
        uint8_t h[64];
        if (s != BK_ECHECKSUM || (flags & BK_LOAD_REQUIRE_CLEAN) || pread(fd, h, 64, 0) != 64 ||
            !(get32(h + OFF_FLAGS) & BK_FILE_FLAG_CHECKSUM_STALE))
            break;
    }
    int e = errno;
    close(fd);
    errno = e;
    return s;
}

/* ---- mmap ---- */

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* Set the stale flag of a shared writable mapping and make that durable before any insert. Writers
 * doing this at the same time write identical bytes. */
static bk_status mark_stale(uint8_t *map)
{
    uint32_t bit = BK_FILE_FLAG_CHECKSUM_STALE;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    bit = __builtin_bswap32(bit);
#endif
    __atomic_fetch_or((uint32_t *)(void *)(map + OFF_FLAGS), bit, __ATOMIC_SEQ_CST);
    put64(map + OFF_HDR_SUM, header_checksum(map, get32(map + OFF_HSIZE)));
    return msync(map, page_size(), MS_SYNC) == 0 ? BK_OK : BK_EIO;
}

/* Does the file have a hole (a range with no blocks) before len? */
static bool has_hole(int fd, off_t len)
{
#ifdef SEEK_HOLE
    off_t h = lseek(fd, 0, SEEK_HOLE); /* moves the offset: put it back */
    return lseek(fd, 0, SEEK_SET) == 0 && h >= 0 && h < len;
#else
    (void)fd;
    (void)len;
    return false;
#endif
}

/*
 * A write through a shared mapping that needs a new block on a full file system cannot fail: the
 * kernel raises SIGBUS. So before a file is mapped for writing, every block it will need is reserved
 * here, where running out of space is an error (errno ENOSPC): blocks shared with another file
 * (an XFS reflink copy) are unshared, and holes (a sparse file) are allocated. Copy-on-write file
 * systems need a new block for every write to a written block, which no reservation covers: btrfs
 * is refused (BK_ENOTSUP), chattr +C files included, whose writes through a mapping were measured
 * hundreds of times slower than writes to the same file on ext4.
 */
static bk_status reserve_for_writing(int fd, off_t len)
{
#ifdef __linux__
    struct statfs sf;
    if (fstatfs(fd, &sf) == 0 && (unsigned long)sf.f_type == 0x9123683EUL /* BTRFS_SUPER_MAGIC */) {
        errno = EOPNOTSUPP;
        return BK_ENOTSUP;
    }
#  ifdef FALLOC_FL_UNSHARE_RANGE
    if (fallocate(fd, FALLOC_FL_UNSHARE_RANGE, 0, len) != 0 && (errno == ENOSPC || errno == EDQUOT))
        return BK_EIO;
#  endif
    if (fallocate(fd, 0, 0, len) == 0) return BK_OK;
    if (errno != EOPNOTSUPP && errno != ENOSYS) return BK_EIO;
#endif
    if (!has_hole(fd, len)) return BK_OK;
    errno = EOPNOTSUPP;
    return BK_ENOTSUP;
}

bk_status bk_filter_open_mmap(const char *path, unsigned flags, bk_filter **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!path) return BK_EINVAL;
    bool shared = flags & BK_OPEN_WRITE_SHARED;
    /* O_NONBLOCK: a FIFO (or a device) must not block the open; it is refused below. */
    int fd = open(path, (shared ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return BK_EIO;
    bk_status s;
    uint8_t *map = MAP_FAILED;
    size_t len = 0;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        s = BK_EIO;
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        s = BK_EINVAL;
        goto fail;
    }
    lock_shared(fd);
    if (st.st_size < 64) {
        /* too short to map usefully: the same verdict the loader gives */
        uint8_t h[64];
        ptrdiff_t n = read_fd(&fd, h, sizeof h);
        s = n < 0 ? BK_EIO : parse_header(h, (size_t)n, &(bk_file_info){ 0 });
        goto fail;
    }
    if ((uint64_t)st.st_size > SIZE_MAX || (uint64_t)st.st_size > BODY_MAX + HDR_MAX) {
        s = BK_ETOOBIG;
        goto fail;
    }
    len = (size_t)st.st_size;
    if (shared && (s = reserve_for_writing(fd, st.st_size)) != BK_OK) goto fail;
    if (!shared && has_hole(fd, st.st_size)) {
        /* Reading a hole through a shared mapping of a tmpfs file allocates a page, and raises
         * SIGBUS when the tmpfs is full; read() returns zeros without allocating. So a sparse file
         * is read into memory instead (BK_BACKING_MEMORY). */
        s = load_stream(read_fd, &fd, (uint64_t)st.st_size, true, flags, out);
        goto fail; /* closes fd; *out is the copy when s is BK_OK */
    }
    int mflags = MAP_SHARED;
#ifdef MAP_POPULATE
    if (flags & BK_OPEN_POPULATE) mflags |= MAP_POPULATE;
#endif
    map = mmap(NULL, len, PROT_READ | (shared ? PROT_WRITE : 0), mflags, fd, 0);
    if (map == MAP_FAILED) {
        s = BK_EIO;
        goto fail;
    }
    /* A writer marking the file stale rewrites the header under our feet (both of us hold the
     * shared lock); a header checksum caught mid-rewrite is retried. */
    for (int attempt = 0;; attempt++) {
        s = load_core(map, len, flags, shared ? MODE_SHARED : MODE_READONLY, true, NULL, out);
        bk_file_info again;
        if (s != BK_ECHECKSUM || attempt == 3 || parse_header(map, len, &again) != BK_ECHECKSUM) break;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    if (s != BK_OK) goto fail;
    (*out)->map = map;
    (*out)->map_len = len;
    if (shared) {
        (*out)->fd = fd;
        if ((s = mark_stale(map)) != BK_OK) {
            int e = errno;
            bk_filter_free(*out);
            *out = NULL;
            errno = e;
            return s;
        }
        return BK_OK;
    }
    close(fd); /* the mapping stays; the lock goes */
    return BK_OK;
fail:;
    int e = errno;
    if (map != MAP_FAILED) munmap(map, len);
    close(fd);
    errno = e;
    return s;
}

/* Last writer out: recompute the payload checksum, make the body durable, then clear the flag. */
static bk_status finalize_shared(uint8_t *map, size_t len)
{
    uint32_t hsize = get32(map + OFF_HSIZE);
    uint64_t body = get64(map + OFF_BODY_SIZE);
    uint64_t sum = XXH3_64bits(map + hsize, (size_t)body);
    if (msync(map, len, MS_SYNC) != 0) return BK_EIO;
    put64(map + OFF_BODY_SUM, sum);
    put32(map + OFF_FLAGS, get32(map + OFF_FLAGS) & ~(uint32_t)BK_FILE_FLAG_CHECKSUM_STALE);
    put64(map + OFF_HDR_SUM, header_checksum(map, hsize));
    return msync(map, page_size(), MS_SYNC) == 0 ? BK_OK : BK_EIO;
}

bk_status bk__filter_unmap(bk_filter *f)
{
    bk_status s = BK_OK;
    if (f->map_len == 0) return BK_OK; /* borrowed buffer */
    if (f->backing == BK_BACKING_MAP_SHARED) {
        /* Drop our shared lock, then try exclusive without waiting: it succeeds only when no other
         * writer (or validating reader) holds the file. Of writers leaving together, the last to
         * try always succeeds (the others have dropped theirs); a writer arriving meanwhile keeps
         * the flag set and finalises when it leaves. */
        while (flock(f->fd, LOCK_UN) != 0 && errno == EINTR) {
        }
        if (flock(f->fd, LOCK_EX | LOCK_NB) == 0) s = finalize_shared(f->map, f->map_len);
    }
    int e = errno;
    munmap(f->map, f->map_len);
    if (f->fd >= 0) close(f->fd);
    errno = e;
    f->map = NULL;
    f->map_len = 0;
    f->fd = -1;
    return s;
}

bk_status bk_filter_sync(bk_filter *f)
{
    if (!f) return BK_EINVAL;
    if (f->backing != BK_BACKING_MAP_SHARED) return BK_OK;
    return msync(f->map, f->map_len, MS_SYNC) == 0 ? BK_OK : BK_EIO;
}
