/* Mapped files: read-only mappings used in place, and shared writable mappings with the stale-flag
 * protocol of docs/FORMAT.md section 3. */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#  include <linux/falloc.h>
#  include <sys/vfs.h>
#endif
#include "persist/persist.h"

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* Set the stale flag of a shared writable mapping and make that durable before any insert. Writers
 * doing this at the same time write identical bytes. */
static bk_status mark_stale(uint8_t *map)
{
    __atomic_fetch_or((uint32_t *)(void *)(map + OFF_FLAGS), BK_FILE_FLAG_CHECKSUM_STALE, __ATOMIC_SEQ_CST);
    bk__put_le64(map + OFF_HDR_SUM, bk__header_checksum(map, bk__get_le32(map + OFF_HSIZE)));
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
    bk_load_options o = BK_LOAD_OPTIONS_INIT;
    o.flags = flags;
    return bk_filter_open_mmap_ex(path, &o, out);
}

bk_status bk_filter_open_mmap_ex(const char *path, const bk_load_options *o, bk_filter **out)
{
    unsigned flags;
    const bk_allocator *a;
    bk_status so = bk__load_begin(o, true, out, &flags, &a);
    if (so != BK_OK) return so;
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
    bk__lock_shared(fd);
    if (st.st_size < 64) {
        /* too short to map usefully: the same verdict the loader gives */
        uint8_t h[64];
        ptrdiff_t n = bk__read_fd(&fd, h, sizeof h);
        s = n < 0 ? BK_EIO : bk__header_parse(h, (size_t)n, &(bk_file_info){ 0 });
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
        s = bk__load_fd_copy(fd, (uint64_t)st.st_size, flags, a, out);
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
    /* Huge-page advice on a file mapping only takes effect where the page cache itself can hold huge
     * pages (tmpfs / shmem mounted with huge=advise or within_size); on ext4, xfs and the like a
     * mapped file stays on 4 KiB pages, and the advice is ignored (ARCHITECTURE.md). */
    if (bk__thp_wanted(len)) bk__thp_advise(map, len);
    /* A writer marking the file stale rewrites the header under our feet (both of us hold the
     * shared lock); a header checksum caught mid-rewrite is retried. */
    for (int attempt = 0;; attempt++) {
        s = bk__load_core(map, len, flags, shared ? BK__LOAD_SHARED : BK__LOAD_READONLY, true, NULL, a, out);
        bk_file_info again;
        if (s != BK_ECHECKSUM || attempt == 3 || bk__header_parse(map, len, &again) != BK_ECHECKSUM) break;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    if (s != BK_OK) goto fail;
    (*out)->map = map;
    (*out)->map_len = len;
    if (shared) {
        (*out)->fd = fd;
        (*out)->owner = (int)getpid();
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

/* Last writer out: recompute the payload checksum, make the body durable, then clear the flag. A file
 * that is no longer the one this writer marked (another copied over it in place, or truncated: its
 * size changed, or its header lost the stale flag every writer's open sets) is left alone: BK_EIO with
 * errno ESTALE, instead of a checksum that would vouch for bytes nobody wrote as a filter. */
static bk_status finalize_shared(int fd, uint8_t *map, size_t len)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != (uint64_t)len ||
        !(bk__get_le32(map + OFF_FLAGS) & BK_FILE_FLAG_CHECKSUM_STALE)) {
        errno = ESTALE;
        return BK_EIO;
    }
    uint32_t hsize = bk__get_le32(map + OFF_HSIZE);
    uint64_t body = bk__get_le64(map + OFF_BODY_SIZE);
    uint64_t sum = XXH3_64bits(map + hsize, (size_t)body);
    if (msync(map, len, MS_SYNC) != 0) return BK_EIO;
    bk__put_le64(map + OFF_BODY_SUM, sum);
    bk__put_le32(map + OFF_FLAGS, bk__get_le32(map + OFF_FLAGS) & ~(uint32_t)BK_FILE_FLAG_CHECKSUM_STALE);
    bk__put_le64(map + OFF_HDR_SUM, bk__header_checksum(map, hsize));
    return msync(map, page_size(), MS_SYNC) == 0 ? BK_OK : BK_EIO;
}

bk_status bk__filter_unmap(bk_filter *f)
{
    bk_status s = BK_OK;
    if (f->map_len == 0) return BK_OK; /* borrowed buffer */
    if (f->backing == BK_BACKING_MAP_SHARED && f->owner != (int)getpid()) {
        /* A child of fork() freeing the handle it inherited: its descriptor shares the open file
         * description, and so the flock, of the process that opened the file, which may still be
         * writing. Unlocking or finalising here would clear the stale flag under that process's
         * inserts: only unmap and close (the lock stays while the opener's descriptor is open). */
    } else if (f->backing == BK_BACKING_MAP_SHARED) {
        /* Drop our shared lock, then try exclusive without waiting: it succeeds only when no other
         * writer (or validating reader) holds the file. Of writers leaving together, the last to
         * try always succeeds (the others have dropped theirs); a writer arriving meanwhile keeps
         * the flag set and finalises when it leaves. */
        while (flock(f->fd, LOCK_UN) != 0 && errno == EINTR) {
        }
        if (flock(f->fd, LOCK_EX | LOCK_NB) == 0) s = finalize_shared(f->fd, f->map, f->map_len);
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

