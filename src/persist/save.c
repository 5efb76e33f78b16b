/* Saving a filter: to a buffer, a descriptor, a stdio stream, a sink, or a path (crash-safe:
 * docs/FORMAT.md section 7). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "persist/persist.h"

/* ---- saving ---- */

typedef bk_status (*sink_fn)(void *ctx, const void *data, size_t len);

static bk_status encode_body(const bk_filter *f, sink_fn sink, void *ctx, uint64_t *size)
{
    bk_writer w = { .sink = sink, .ctx = ctx, .offset = 0 };
    bk_status s = f->vt->encode(f->obj, &w);
    *size = w.offset;
    return s;
}


static bk_status saved_size(const bk_filter *f, uint64_t *total)
{
    uint64_t body;
    bk_status s = encode_body(f, NULL, NULL, &body);
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
        return BK_EBUFSIZE;
    }
    buf_sink b = { (uint8_t *)buf + 64, (size_t)total - 64 };
    uint64_t body;
    if ((s = encode_body(f, sink_buf, &b, &body)) != BK_OK) return s;
    if (body != total - 64) return BK_EINVAL;
    bk__header_build(buf, f, body, XXH3_64bits((uint8_t *)buf + 64, (size_t)body));
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
    uint8_t *p = bk__malloc(NULL, (size_t)total);
    if (!p) return BK_ENOMEM;
    size_t n;
    if ((s = bk_filter_save_buffer(f, p, (size_t)total, &n)) != BK_OK) {
        bk__free(NULL, p);
        return s;
    }
    *buf = p;
    *len = n;
    return BK_OK;
}

void bk_filter_buffer_free(void *buf) { bk__free(NULL, buf); }

/* All len bytes to a descriptor, EINTR retried: at its offset (write) when off < 0, else at off
 * (pwrite). */
static bk_status write_at(int fd, const void *data, size_t len, off_t off)
{
    const uint8_t *p = data;
    while (len) {
        ssize_t n = off < 0 ? write(fd, p, len) : pwrite(fd, p, len, off);
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
        if (off >= 0) off += n;
    }
    return BK_OK;
}
static bk_status write_all(int fd, const void *data, size_t len) { return write_at(fd, data, len, -1); }

/* Output sinks: a descriptor or a stdio stream. */
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
        bk__free(NULL, snap);
        return s;
    }
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    uint64_t body, body2;
    if ((s = encode_body(f, sink_hash, &st, &body)) != BK_OK) return s;
    if (body > BODY_MAX) return BK_ETOOBIG;
    uint8_t h[64];
    bk__header_build(h, f, body, XXH3_64bits_digest(&st));
    if ((s = out(ctx, h, 64)) != BK_OK) return s;
    if ((s = encode_body(f, out, ctx, &body2)) != BK_OK) return s;
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
        if (!(t.bounce = bk__malloc(f->alloc, t.bounce_len))) return BK_ENOMEM;
    }
    uint64_t body;
    s = encode_body(f, sink_tmpfile, &t, &body);
    bk__free(f->alloc, t.bounce);
    if (s != BK_OK) return s;
    if (body > BODY_MAX) return BK_ETOOBIG;
    uint8_t h[64];
    bk__header_build(h, f, body, XXH3_64bits_digest(&st));
    if ((s = write_at(fd, h, 64, 0)) != BK_OK) return s;
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
    char *tmp = bk__malloc(f->alloc, tlen), *dir = bk__malloc(f->alloc, dlen + 2);
    if (!tmp || !dir) {
        bk__free(f->alloc, tmp);
        bk__free(f->alloc, dir);
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
    bk__free(f->alloc, tmp);
    bk__free(f->alloc, dir);
    return s;
}
