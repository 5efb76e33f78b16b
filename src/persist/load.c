/* Loading a saved filter: validation of the whole file (docs/FORMAT.md section 2) and decoding by
 * copy or in place, from a buffer, a descriptor, a stdio stream or a path. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "persist/persist.h"

/* The flags word of a live mapping, read while other processes may be writing the header. */
static uint32_t live_flags(const uint8_t *map)
{
    return __atomic_load_n((const uint32_t *)(const void *)(map + OFF_FLAGS), __ATOMIC_ACQUIRE);
}


/*
 * Validate data[0..len) (exactly one saved filter) and decode it: copying, or in place (read-only or
 * shared writable). `live`: data is a mapping that writers may be changing, so a payload checksum
 * mismatch is forgiven when a writer has meanwhile set the stale flag. `body_sum`: the payload's
 * checksum when the caller computed it already (while reading), else NULL.
 */
bk_status bk__load_core(const uint8_t *data, size_t len, unsigned flags, bk__load_mode mode, bool live,
                        const uint64_t *body_sum, const bk_allocator *a, bk_filter **out)
{
    bk_file_info in;
    bk_status s = bk__header_parse(data, len, &in);
    if (s != BK_OK) return s;
    if (in.total_size > len) return BK_ETRUNCATED;
    if (in.total_size < len) return BK_ECORRUPT;
    const bk_vtable *vt = bk__vtable_of(in.type);
    if (!vt) return BK_ETYPE;
    if (in.hash_id != BK_HASH_XXH3_64) return BK_ENOTSUP;
    if (mode == BK__LOAD_SHARED) {
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
    bk_reader r = { .alloc = bk__allocator(a), .base = body, .len = (size_t)in.body_size, .off = 0, .borrow = mode != BK__LOAD_COPY,
                    .writable = mode == BK__LOAD_SHARED, .seed = in.seed };
    void *obj = NULL;
    s = vt->decode(&r, &obj);
    if (s != BK_OK) return s;
    if (r.off != r.len) {
        vt->destroy(obj);
        return BK_ECORRUPT;
    }
    bk_backing backing = mode == BK__LOAD_COPY ? BK_BACKING_MEMORY
                         : mode == BK__LOAD_READONLY ? BK_BACKING_MAP_READONLY : BK_BACKING_MAP_SHARED;
    s = bk__filter_make(vt, obj, backing, r.alloc, out);
    if (s != BK_OK) vt->destroy(obj);
    else if (backing != BK_BACKING_MEMORY) (*out)->release = bk__filter_unmap;
    return s;
}

bk_status bk__load_begin(const bk_load_options *o, bool allow_shared, bk_filter **out, unsigned *flags,
                         const bk_allocator **a)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_load_options lo = { 0 };
    bk_status s = bk__options_read(&lo, sizeof lo, o);
    if (s != BK_OK) return s;
    if ((lo.flags & BK_OPEN_WRITE_SHARED) && !allow_shared) return BK_EINVAL;
    *flags = lo.flags;
    *a = bk__allocator(lo.allocator);
    return BK_OK;
}

/* The plain forms: the _ex forms with these flags and the default allocator. */
static const bk_load_options *plain(bk_load_options *o, unsigned flags)
{
    *o = (bk_load_options)BK_LOAD_OPTIONS_INIT;
    o->flags = flags;
    return o;
}

bk_status bk_filter_load_buffer_ex(const void *buf, size_t len, const bk_load_options *o, bk_filter **out)
{
    unsigned flags;
    const bk_allocator *a;
    bk_status s = bk__load_begin(o, false, out, &flags, &a);
    if (s != BK_OK) return s;
    if (!buf && len) return BK_EINVAL;
    return bk__load_core(buf, len, flags, BK__LOAD_COPY, false, NULL, a, out);
}

bk_status bk_filter_load_buffer(const void *buf, size_t len, unsigned flags, bk_filter **out)
{
    bk_load_options o;
    return bk_filter_load_buffer_ex(buf, len, plain(&o, flags), out);
}

bk_status bk_filter_open_buffer_ex(const void *buf, size_t len, const bk_load_options *o, bk_filter **out)
{
    unsigned flags;
    const bk_allocator *a;
    bk_status s = bk__load_begin(o, false, out, &flags, &a);
    if (s != BK_OK) return s;
    if (!buf || ((uintptr_t)buf & 63)) return BK_EINVAL;
    s = bk__load_core(buf, len, flags, BK__LOAD_READONLY, false, NULL, a, out);
    if (s == BK_OK) (*out)->map = (uint8_t *)(uintptr_t)buf; /* map_len 0: borrowed, nothing to unmap */
    return s;
}

bk_status bk_filter_open_buffer(const void *buf, size_t len, unsigned flags, bk_filter **out)
{
    bk_load_options o;
    return bk_filter_open_buffer_ex(buf, len, plain(&o, flags), out);
}

/* ---- loading from streams ---- */

/* Reads up to len bytes; returns the count (short only at end of stream), or -1 with errno set. */
typedef ptrdiff_t (*read_fn)(void *ctx, void *buf, size_t len);

ptrdiff_t bk__read_fd(void *ctx, void *buf, size_t len)
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
                             const bk_allocator *a, bk_filter **out)
{
    uint8_t hdr[HDR_MAX];
    ptrdiff_t n = rd(ctx, hdr, 64);
    if (n < 0) return BK_EIO;
    bk_file_info in;
    bk_status s = bk__header_parse(hdr, (size_t)n, &in);
    if (s == BK_ETRUNCATED && n == 64) {
        /* a longer header (newer minor version): its size field was checked by parse_header */
        uint32_t hsize = bk__get_le32(hdr + OFF_HSIZE);
        ptrdiff_t m = rd(ctx, hdr + 64, hsize - 64);
        if (m < 0) return BK_EIO;
        s = bk__header_parse(hdr, (size_t)(64 + m), &in);
    }
    if (s != BK_OK) return s;
    if (in.total_size > avail) return BK_ETRUNCATED;
    if (exact && in.total_size < avail) return BK_ECORRUPT;
    if (in.total_size > SIZE_MAX) return BK_ETOOBIG;
    size_t want = (size_t)in.total_size, have = in.header_size;
    /* a known size was checked above: allocate it at once; else grow as the data arrives */
    size_t cap = avail != UINT64_MAX || want < (size_t)(4u << 20) ? want : (size_t)(4u << 20);
    uint8_t *buf = bk__calloc_aligned(a, cap);
    if (!buf) return BK_ENOMEM;
    memcpy(buf, hdr, in.header_size);
    /* The payload is hashed a piece at a time right after it is read, while it is still in cache,
     * instead of in a second pass over the whole buffer. */
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    while (have < want) {
        if (have == cap) {
            size_t ncap = cap > want / 2 ? want : cap * 2;
            uint8_t *nb = bk__calloc_aligned(a, ncap);
            if (!nb) {
                bk__free_aligned(a, buf);
                return BK_ENOMEM;
            }
            memcpy(nb, buf, have);
            bk__free_aligned(a, buf);
            buf = nb;
            cap = ncap;
        }
        size_t ask = cap - have < (size_t)(1u << 20) ? cap - have : (size_t)(1u << 20);
        ptrdiff_t m = rd(ctx, buf + have, ask);
        if (m < 0) {
            int e = errno;
            bk__free_aligned(a, buf);
            errno = e;
            return BK_EIO;
        }
        XXH3_64bits_update(&st, buf + have, (size_t)m);
        have += (size_t)m;
        if ((size_t)m < ask) break; /* end of stream */
    }
    uint64_t sum = XXH3_64bits_digest(&st);
    s = have < want ? BK_ETRUNCATED : bk__load_core(buf, want, flags, BK__LOAD_COPY, false, &sum, a, out);
    bk__free_aligned(a, buf);
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

bk_status bk__load_fd_copy(int fd, uint64_t size, unsigned flags, const bk_allocator *a, bk_filter **out)
{
    return load_stream(bk__read_fd, &fd, size, true, flags, a, out);
}

bk_status bk_filter_load_fd_ex(int fd, const bk_load_options *o, bk_filter **out)
{
    unsigned flags;
    const bk_allocator *a;
    bk_status s = bk__load_begin(o, false, out, &flags, &a);
    if (s != BK_OK) return s;
    if (fd < 0) return BK_EINVAL;
    return load_stream(bk__read_fd, &fd, fd_remaining(fd), false, flags, a, out);
}

bk_status bk_filter_load_fd(int fd, unsigned flags, bk_filter **out)
{
    bk_load_options o;
    return bk_filter_load_fd_ex(fd, plain(&o, flags), out);
}

bk_status bk_filter_load_file_ex(FILE *fp, const bk_load_options *o, bk_filter **out)
{
    unsigned flags;
    const bk_allocator *a;
    bk_status s = bk__load_begin(o, false, out, &flags, &a);
    if (s != BK_OK) return s;
    if (!fp) return BK_EINVAL;
    errno = 0;
    return load_stream(read_file, fp, UINT64_MAX, false, flags, a, out);
}

bk_status bk_filter_load_file(FILE *fp, unsigned flags, bk_filter **out)
{
    bk_load_options o;
    return bk_filter_load_file_ex(fp, plain(&o, flags), out);
}

/* A shared flock for the duration of a validation, so that the last shared writer's finalisation
 * (which holds it exclusively while it rewrites the header) is never seen half-done. */
void bk__lock_shared(int fd)
{
    while (flock(fd, LOCK_SH) != 0 && errno == EINTR) {
    }
}

bk_status bk_filter_load_path(const char *path, unsigned flags, bk_filter **out)
{
    bk_load_options o;
    return bk_filter_load_path_ex(path, plain(&o, flags), out);
}

bk_status bk_filter_load_path_ex(const char *path, const bk_load_options *o, bk_filter **out)
{
    unsigned flags;
    const bk_allocator *a;
    bk_status st = bk__load_begin(o, false, out, &flags, &a);
    if (st != BK_OK) return st;
    if (!path) return BK_EINVAL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return BK_EIO;
    bk__lock_shared(fd);
    bk_status s = BK_EIO;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (lseek(fd, 0, SEEK_SET) != 0) break;
        uint64_t size = fd_remaining(fd);
        s = load_stream(bk__read_fd, &fd, size, size != UINT64_MAX, flags, a, out);
        /* A payload checksum that changed under us because a shared writer opened the file
         * meanwhile: its flag is set now, and the second read skips the check. */
        uint8_t h[64];
        if (s != BK_ECHECKSUM || (flags & BK_LOAD_REQUIRE_CLEAN) || pread(fd, h, 64, 0) != 64 ||
            !(bk__get_le32(h + OFF_FLAGS) & BK_FILE_FLAG_CHECKSUM_STALE))
            break;
    }
    int e = errno;
    close(fd);
    errno = e;
    return s;
}

