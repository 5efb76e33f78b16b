/* The generic handle's layout, shared by src/filter.c (dispatch, registry) and src/persist/ (header,
 * load, save, mmap), and what the persist/ files share with each other. Not installed. */
#ifndef BK_PERSIST_H
#define BK_PERSIST_H

#include "internal.h"
#include "bloomkit/filter.h"

struct bk_filter {
    const bk_vtable *vt;
    void *obj;                 /* the typed filter */
    bk_backing backing;
    /* Inserts, chosen once when the handle is made: the plain or the atomic form, NULL when the
     * handle is read-only or the type cannot insert. add_batch may be NULL with add_one set (then
     * add_one is called per key). */
    bk_status (*add_one)(void *f, uint64_t h);
    bk_status (*add_batch)(void *f, const uint64_t *h, size_t n, size_t *done);
    /* Mappings (BK_BACKING_MAP_*): the mapped bytes, or the borrowed buffer (map_len == 0 then). */
    uint8_t *map;
    size_t map_len;
    int fd;                    /* shared writable mapping: holds the shared flock; else -1 */
    int owner;                 /* shared writable mapping: the pid that opened it (a forked child
                                * shares its flock but must never finalise the file) */
    const bk_allocator *alloc;        /* the typed filter's allocator: this handle is allocated with it */
};

/* A handle around obj (taken over). On error obj is not freed. */
BK_HIDDEN bk_status bk__filter_make(const bk_vtable *vt, void *obj, bk_backing backing, const bk_allocator *a,
                                    bk_filter **out);
/* Release what a mapping holds (finalising a shared writable one); called by bk_filter_close. */
BK_HIDDEN bk_status bk__filter_unmap(bk_filter *f);

/* ---- the container header (header.c; docs/FORMAT.md section 2) ---- */
enum {
    OFF_MAJOR = 8, OFF_MINOR = 10, OFF_TYPE = 12, OFF_FLAGS = 16, OFF_HASH = 20, OFF_HSIZE = 24,
    OFF_SEED = 32, OFF_BODY_SIZE = 40, OFF_BODY_SUM = 48, OFF_HDR_SUM = 56
};
#define HDR_MAX 4096u
/* The largest body a reader accepts: the library's size limit plus room for parameters. */
#define BODY_MAX (BK_MAX_FILTER_BYTES + (UINT64_C(1) << 20))
/* XXH3-64 of the header with its own checksum field taken as zero. */
BK_HIDDEN uint64_t bk__header_checksum(const uint8_t *h, uint32_t hsize);
/* Validation steps 1-7 (not the type, hash id, sizes against the data, or the body). */
BK_HIDDEN bk_status bk__header_parse(const uint8_t *b, size_t avail, bk_file_info *in);
/* The 64-byte header of f's body of body_size bytes with checksum body_sum. */
BK_HIDDEN void bk__header_build(uint8_t h[64], const bk_filter *f, uint64_t body_size, uint64_t body_sum);

/* ---- loading (load.c) ---- */
typedef enum { BK__LOAD_COPY, BK__LOAD_READONLY, BK__LOAD_SHARED } bk__load_mode;
/* Validate data[0..len) (exactly one saved filter) and decode it: copying, or in place (read-only or
 * shared writable). `live`: data is a mapping writers may be changing. `body_sum`: the payload's
 * checksum when the caller computed it already, else NULL. */
BK_HIDDEN bk_status bk__load_core(const uint8_t *data, size_t len, unsigned flags, bk__load_mode mode, bool live,
                                  const uint64_t *body_sum, const bk_allocator *a, bk_filter **out);
/* The opening step of every load and open call: out checked (BK_EINVAL when NULL) and cleared, then
 * the flags and allocator of a bk_load_options (NULL: 0 and the default; BK_EINVAL when refused), and
 * BK_OPEN_WRITE_SHARED refused (BK_EINVAL) unless the call maps a file (allow_shared). */
BK_HIDDEN bk_status bk__load_begin(const bk_load_options *o, bool allow_shared, bk_filter **out, unsigned *flags,
                                   const bk_allocator **a);
/* A shared flock for the duration of a validation (the last shared writer's finalisation holds it
 * exclusively while it rewrites the header). */
BK_HIDDEN void bk__lock_shared(int fd);
/* Up to len bytes from descriptor *(int *)ctx (EINTR retried; fewer only at end of file); -1 on error. */
BK_HIDDEN ptrdiff_t bk__read_fd(void *ctx, void *buf, size_t len);
/* Load (copying) the size-byte file open on fd, read from its current offset. */
BK_HIDDEN bk_status bk__load_fd_copy(int fd, uint64_t size, unsigned flags, const bk_allocator *a, bk_filter **out);

#endif
