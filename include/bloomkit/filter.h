/*
 * bloomkit: the generic filter handle, and persistence (save, load, mmap) of every filter type.
 *
 * A bk_filter owns one filter of any type (bloom, blocked, counting, scalable, cuckoo, fuse, aging,
 * quotient) and forwards each call to that type's implementation: the type is looked up once per
 * call or per batch, never per key or per probe. It is the handle the CLI and the Redis module work with:
 *   - create a filter with the type's own constructor (bk_bloom_new, ...), then bk_filter_wrap it;
 *   - or load any file with bk_filter_load_* / bk_filter_open_mmap;
 *   - typed access stays available through bk_filter_get.
 *
 * The file format (header, checksums, each type's body) is specified in docs/FORMAT.md; a file is
 * validated completely (sizes, every parameter, consistency with the payload length, checksums)
 * before any pointer into it is used. Errors (in addition to those named per function):
 *   BK_ECORRUPT    not a bloomkit file (magic), or a field/parameter out of range or inconsistent
 *   BK_EVERSION    unknown major format version (or a newer minor version opened for shared writing)
 *   BK_ETYPE       a filter type this library does not know, or the wrong type for the call
 *   BK_ENOTSUP     a hash function id this library does not know
 *   BK_ECHECKSUM   header or payload checksum mismatch
 *   BK_ETRUNCATED  the data ends before its declared length
 *   BK_ETOOBIG     a declared length above BK_MAX_FILTER_BYTES (plus the header)
 *   BK_EIO         an operating-system call failed; errno is preserved for the caller
 * On any error *out is set to NULL and nothing is left half-made.
 *
 * Thread-safety: see the legend in common.h. A bk_filter follows the rules of the filter it holds.
 */
#ifndef BLOOMKIT_FILTER_H
#define BLOOMKIT_FILTER_H

#include <stdio.h>
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_filter bk_filter;

/* ------------------------------------------------------------------------------------------------
 * Wrapping typed filters
 * ---------------------------------------------------------------------------------------------- */

/* Wrap a typed filter (a bk_bloom *, bk_blocked *, ... matching `type`) in a generic handle, which
 * takes ownership: bk_filter_free frees the typed filter too, so do not free it yourself. The handle
 * is allocated with the typed filter's allocator (its options' allocator).
 * On error the typed filter is NOT taken (still yours). Errors: BK_EINVAL (typed or out NULL),
 * BK_ETYPE (type not registered in this build), BK_ENOMEM. [excl] on typed */
BK_API bk_status bk_filter_wrap(bk_type type, void *typed, bk_filter **out);

/* The typed filter inside, or NULL when f is NULL or holds another type than `expected`. The pointer
 * stays owned by f (valid until bk_filter_free); for a mapped handle it points into the mapping.
 * Use it for type-specific calls (bk_bloom_intersect, ...). [any] */
BK_API void *bk_filter_get(const bk_filter *f, bk_type expected);

/* Take the typed filter back out of an in-memory handle (one made by bk_filter_wrap or by a
 * bk_filter_load_* call), freeing only the handle: *typed receives the filter, now yours.
 * Errors: BK_EINVAL (NULL argument, or a mapped handle: its filter lives in the mapping),
 * BK_ETYPE (f holds another type; f is unchanged). [excl] */
BK_API bk_status bk_filter_unwrap(bk_filter *f, bk_type expected, void **typed);

/* Free the handle and the filter it owns; for mapped handles, also unmap (see bk_filter_close for
 * shared writable mappings, whose finalisation can fail). NULL is fine. [excl] */
BK_API void bk_filter_free(bk_filter *f);

/* Is this type compiled into the library (can it be wrapped, loaded, saved)? [any] */
BK_API bool bk_filter_type_registered(bk_type type);

/* ------------------------------------------------------------------------------------------------
 * Operations, dispatched by type
 *
 * Bytes keys are hashed with bk_hash64(key, len, bk_filter_seed(f)), so every bytes form equals the
 * pre-hashed form applied to that hash. Mutations on a read-only mapping return BK_ENOTSUP. On a
 * shared writable mapping (BK_OPEN_WRITE_SHARED) the add calls use the type's atomic insert, so
 * they are [query] there (safe alongside each other, in this and in other processes).
 * ---------------------------------------------------------------------------------------------- */

/* Insert. Errors: BK_EINVAL (f NULL; key NULL with len > 0), BK_ENOTSUP (a fuse filter, which
 * takes all its keys when it is built, or a read-only mapping), and the type's own errors (e.g. BK_EFULL from a cuckoo filter). [excl]; [query] on a shared mapping */
BK_API bk_status bk_filter_add(bk_filter *f, const void *key, size_t len);
BK_API bk_status bk_filter_add_hash(bk_filter *f, uint64_t hash);

/* Query: true if probably present, false if certainly absent. f must not be NULL; key may be NULL
 * only when len is 0. [query] */
BK_API bool bk_filter_contains(const bk_filter *f, const void *key, size_t len);
BK_API bool bk_filter_contains_hash(const bk_filter *f, uint64_t hash);

/* Delete one occurrence. Errors: BK_ENOTSUP (the type cannot delete: bloom, blocked, scalable, fuse,
 * aging; or a mapping), BK_ENOTFOUND (certainly absent; nothing changed), BK_EINVAL. [excl] */
BK_API bk_status bk_filter_remove(bk_filter *f, const void *key, size_t len);
BK_API bk_status bk_filter_remove_hash(bk_filter *f, uint64_t hash);

/* Insert unless the key is probably present: BK_OK (added) or BK_EEXISTS (probably present, nothing
 * changed; also on a filter that cannot take keys). In memory, a scalable, cuckoo or aging filter
 * uses its own add_if_absent (a scalable chain then tests every sub-filter, as a plain add does not);
 * every other type and every mapping, a query then an add. Errors: as bk_filter_add (BK_ENOTSUP for
 * an absent key on a fuse or Ribbon filter or a read-only mapping). [excl]; [query] on a shared
 * mapping (the query and the atomic insert are two steps: two racing callers may both add) */
BK_API bk_status bk_filter_add_if_absent(bk_filter *f, const void *key, size_t len);
BK_API bk_status bk_filter_add_if_absent_hash(bk_filter *f, uint64_t hash);

/* uint64 keys: the same answers as the byte forms on the key's 8 little-endian bytes
 * (bk_filter_add_u64(f, k) is bk_filter_add(f, &k_le, 8)), so the two forms mix on one filter and
 * in files. The hash is XXH3 at the constant length 8 (bk_hash64 of those bytes) without the byte
 * forms' length dispatch. Errors and thread-safety as the byte forms: add [excl], remove [excl],
 * contains [query] ([query] for add on a shared mapping). */
BK_API bk_status bk_filter_add_u64(bk_filter *f, uint64_t key);
BK_API bk_status bk_filter_remove_u64(bk_filter *f, uint64_t key);
BK_API bool bk_filter_contains_u64(const bk_filter *f, uint64_t key);

/* Batches (common.h, "Batches"), in the type's own batch code (hash all, prefetch, then probe). The
 * add forms stop at the first key the filter cannot take (a cuckoo or quotient filter full, a scalable
 * chain at its limit) and return its status, with *done = that key's index (keys before it are in);
 * BK_ENOTSUP for a fuse filter or a read-only mapping. [excl] for adds ([query] on a shared mapping), [query] for contains. */
BK_API bk_status bk_filter_add_many(bk_filter *f, const void *const *keys, const size_t *lens, size_t n,
                                    size_t *done);
BK_API bk_status bk_filter_add_hashes(bk_filter *f, const uint64_t *hashes, size_t n, size_t *done);
BK_API bk_status bk_filter_contains_many(const bk_filter *f, const void *const *keys, const size_t *lens,
                                         size_t n, uint8_t *results, size_t *hits);
BK_API bk_status bk_filter_contains_hashes(const bk_filter *f, const uint64_t *hashes, size_t n,
                                           uint8_t *results, size_t *hits);

/* Statistics of the filter inside (the type's own stats call). Errors: BK_EINVAL. [query] */
BK_API bk_status bk_filter_stats(const bk_filter *f, bk_stats *out);

/* Keys inserted: bk_stats.count without the rest of the statistics (no pass over the filter's
 * arrays: the type's own counter, e.g. bk_bloom_count, bk_cuckoo_items, bk_quotient_total). For
 * the bit-setting types after a union, the estimate the union left (see bk_filter_merge). 0 for a
 * NULL f. [query] */
BK_API uint64_t bk_filter_count(const bk_filter *f);

/* A deep copy of the filter in a new handle, in owned memory (BK_BACKING_MEMORY) even when f is a
 * mapping, with f's allocator: the type's own clone (bk_bloom_clone, ...). Errors: BK_EINVAL (NULL;
 * *out is set to NULL on any error), BK_ENOMEM. [query] */
BK_API bk_status bk_filter_clone(const bk_filter *f, bk_filter **out);

/* Could a and b be merged (bk_filter_merge)? BK_OK when the type has a union and the two have the
 * same geometry, layout and seed (the type's own _compatible); BK_EINCOMPAT (different types or
 * geometry), BK_ENOTSUP (the type has no union test: cuckoo, fuse, Ribbon, aging and the sketches),
 * BK_EINVAL (NULL). It looks at the filters only, not at their backing (a mapped dst still refuses
 * the merge itself). [query] on both */
BK_API bk_status bk_filter_compatible(const bk_filter *a, const bk_filter *b);

/* dst becomes the union of dst and src. Errors: BK_EINVAL (NULL), BK_EINCOMPAT (different types, or
 * geometry/layout/seed differ: dst unchanged), BK_ENOTSUP (the type has no union: cuckoo filters (their
 * fingerprints cannot be merged without the keys) and fuse filters; a count-window aging filter
 * (bk_aging_union); or dst is a mapping: a plain OR into a shared mapping could lose another
 * process's concurrent insert). Quotient filters merge by rebuilding (bk_quotient_union: BK_EFULL when
 * the union does not fit dst's load limit).
 * The count after a union: the bit-setting types (bloom, partitioned, blocked, and each sub-filter
 * of a scalable chain) cannot know how far the two key sets overlap, so dst's inserted-key count
 * becomes the fill-based estimate of distinct keys (bk_stats.est_cardinality); counting and quotient
 * filters add their counts.
 * dst == src is allowed: for the bit-setting types it changes no bit and only replaces the count by
 * that estimate (bk_filter_set_count sets a count you know better); for counting filters it doubles
 * every key's multiplicity.
 * [excl] on dst, [query] on src: atomic inserts may run on src meanwhile (a key whose insert
 * returned before the merge began is in dst; one inserted during it may or may not be) */
BK_API bk_status bk_filter_merge(bk_filter *dst, const bk_filter *src);

/* Remove every key (the geometry and seed stay). Errors: BK_EINVAL, BK_ENOTSUP (a fuse filter, or a
 * read-only mapping). On a shared writable mapping the clear is visible to every process
 * but races with their inserts: only call it while no other process inserts. [excl] */
BK_API bk_status bk_filter_clear(bk_filter *f);

/* Replace the inserted-key count of a filter that only sets bits (bloom, partitioned, blocked),
 * whose adds count every call, a key added twice included. For builders that know how many
 * distinct keys they added (from a distinct-count sketch, or an exact count): statistics,
 * saturation and the saved file then report that number. Nothing else changes. Errors: BK_EINVAL
 * (NULL), BK_ENOTSUP (every other type: counting, scalable, cuckoo, fuse, aging, quotient; or a
 * mapping). [excl] */
BK_API bk_status bk_filter_set_count(bk_filter *f, uint64_t n);

/* The type and the hash seed of the filter inside. f must not be NULL. [any] */
BK_API bk_type bk_filter_type(const bk_filter *f);
BK_API uint64_t bk_filter_seed(const bk_filter *f);

/* Where the filter's memory lives. [any] */
typedef enum bk_backing {
    BK_BACKING_MEMORY = 0,       /* owned heap memory: every operation available */
    BK_BACKING_MAP_READONLY = 1, /* read-only mapping of a file (or a borrowed buffer): queries only */
    BK_BACKING_MAP_SHARED = 2    /* shared writable mapping: atomic inserts, queries */
} bk_backing;
BK_API bk_backing bk_filter_backing(const bk_filter *f);
/* The file mapping a handle of bk_filter_open_mmap uses in place (all of it). For a program that
 * handles SIGBUS (raised when a mapped file is truncated underneath it; the library installs no
 * handler) to tell its filters' faults from others'. BK_EINVAL for any other handle (in memory, a
 * borrowed buffer: its caller knows its bytes) or a NULL argument. [any] */
BK_API bk_status bk_filter_mapping(const bk_filter *f, const void **addr, size_t *len);

/* ------------------------------------------------------------------------------------------------
 * Saving. The file is a 64-byte header followed by the type's body (docs/FORMAT.md). Saving reads
 * the filter ([query]: no non-atomic insert may run meanwhile). A shared writable mapping is first
 * copied to a snapshot, so concurrent atomic inserts by other processes cannot tear the checksum.
 * ---------------------------------------------------------------------------------------------- */

#define BK_FORMAT_VERSION_MAJOR 1
#define BK_FORMAT_VERSION_MINOR 0
#define BK_FILE_HEADER_SIZE 64 /* of this format version; newer minor versions may grow it */

/* Bytes the saved form of f takes (header + body): the capacity bk_filter_save_buffer needs.
 * Errors: BK_EINVAL, BK_ETOOBIG (does not fit in size_t). [query] */
BK_API bk_status bk_filter_save_size(const bk_filter *f, size_t *size);

/* Write the saved form into caller memory buf[0..cap). *written receives the bytes written; when cap
 * is too small, it receives the bytes needed and the call returns BK_EBUFSIZE without writing anything
 * (so a NULL buf with cap 0 is also a size query). Errors: BK_EINVAL (f or written NULL), BK_EBUFSIZE
 * (cap too small), BK_ETOOBIG. [query] */
BK_API bk_status bk_filter_save_buffer(const bk_filter *f, void *buf, size_t cap, size_t *written);

/* Write the saved form into a new buffer allocated with the default allocator (common.h; not the
 * filter's own, since the buffer outlives nothing of it); release it with bk_filter_buffer_free. Errors: BK_EINVAL, BK_ETOOBIG, BK_ENOMEM. [query] */
BK_API bk_status bk_filter_save_alloc(const bk_filter *f, void **buf, size_t *len);
/* Free a buffer from bk_filter_save_alloc; NULL is fine. [any] */
BK_API void bk_filter_buffer_free(void *buf);

/* Save to a file path, atomically: the bytes go to a new temporary file in the same directory
 * (".<name>.tmp.<random>", same permissions as the file it replaces, else 0666 & ~umask), which is
 * fsync'ed, renamed over `path`, and the directory is fsync'ed. A crash or kill at any moment leaves
 * `path` either as it was or completely new, never torn; a process killed mid-save may leave its
 * temporary file behind (safe to delete). A symbolic link at `path` is replaced by the new file,
 * not followed. Errors: BK_EINVAL, BK_ETOOBIG, BK_ENOMEM, BK_EIO (errno preserved;
 * the temporary file is removed and `path` is unchanged, except when only opening or fsyncing the
 * directory after the rename fails: then `path` is already the new file but its rename may not be
 * durable; a file system that refuses fsync on directories is not an error). [query] */
BK_API bk_status bk_filter_save_path(const bk_filter *f, const char *path);

/* Write the saved form to a stdio stream / descriptor at its current position (it may be a pipe or
 * socket: the body is encoded twice, once to checksum it and once to write it, so nothing the size
 * of the filter is buffered). Not atomic and not synced: the caller owns the stream, its fflush and
 * fsync. Several filters may follow each other in one stream. Errors: BK_EINVAL, BK_ETOOBIG, BK_EIO
 * (errno preserved; the stream may hold a partial filter). [query] */
BK_API bk_status bk_filter_save_file(const bk_filter *f, FILE *fp);
BK_API bk_status bk_filter_save_fd(const bk_filter *f, int fd);

/* The same stream of bytes handed to a callback, in order, in pieces of any size (for hosts that
 * move the bytes themselves: the Redis module's RDB, AOF and SCANDUMP paths). The library allocates
 * nothing for it. A sink status other than BK_OK stops the save and is returned as it is (a sink may
 * use that to stop early on purpose). Errors: BK_EINVAL (f or sink NULL), BK_ETOOBIG, the sink's.
 * [query] */
typedef bk_status (*bk_save_sink)(void *ctx, const void *data, size_t len);
BK_API bk_status bk_filter_save_sink(const bk_filter *f, bk_save_sink sink, void *ctx);

/* ------------------------------------------------------------------------------------------------
 * Loading (copies into owned heap memory: BK_BACKING_MEMORY)
 *
 * Every load and open call has an _ex form taking a bk_load_options (below): its flags, and the
 * allocator the loaded filter, its handle and the load's temporary buffers use. The plain forms are
 * the _ex forms with those flags and the default allocator (common.h).
 * ---------------------------------------------------------------------------------------------- */

/* Flags for the load and open calls (bitwise OR). */
#define BK_LOAD_DEFAULT 0u
/* Do not verify the payload checksum (the header checksum and the complete structural validation
 * still run). Speeds up opening a large trusted file (a 1 GiB payload costs a full read of it); a
 * flipped bit in the payload then goes unnoticed, which can cause false negatives. */
#define BK_LOAD_NO_CHECKSUM 1u
/* Refuse (BK_ECHECKSUM) a file whose header says its payload checksum is not current (it is, or was
 * when its writer crashed, open for shared writing: docs/FORMAT.md "flags"). By default such a file
 * is accepted after the structural validation, since its payload checksum cannot be verified. */
#define BK_LOAD_REQUIRE_CLEAN 2u
/* bk_filter_open_mmap only (the load calls and bk_filter_open_buffer refuse it: BK_EINVAL): map
 * read-write and shared, so that inserts (atomic) by this and other
 * processes go into the file. Only for the types with an atomic insert (bloom, blocked, counting):
 * others return BK_ENOTSUP. See "Shared writable mappings" below. */
#define BK_OPEN_WRITE_SHARED 4u
/* bk_filter_open_mmap only: pre-fault the whole mapping (MAP_POPULATE) so the first queries do not
 * wait for page faults; costs the read of the whole file at open. */
#define BK_OPEN_POPULATE 8u

/* Options of the _ex load and open calls. Starts with struct_size like every options struct
 * (common.h): BK_LOAD_OPTIONS_INIT sets it, 0 means this header's size, a zeroed struct (or NULL)
 * means flags 0 and the default allocator. */
typedef struct bk_load_options {
    size_t struct_size;            /* BK_LOAD_OPTIONS_INIT sets it; 0 means this header's size */
    unsigned flags;                /* BK_LOAD_* and BK_OPEN_* as the plain call's flags */
    const bk_allocator *allocator; /* NULL: the default; the loaded filter keeps this pointer (as
                                    * options do): it must remain valid until the filter is freed */
} bk_load_options;
#define BK_LOAD_OPTIONS_INIT BK_OPTIONS_INIT_(bk_load_options)

/* Load from a file path (the file must hold exactly one filter). The bytes are read into a temporary
 * buffer, validated, then decoded into the filter's own memory: the peak is about twice the file's
 * size (bk_filter_open_mmap needs no copy at all). Errors: see the top of this file; BK_ECORRUPT
 * also for trailing bytes after the filter.
 * Locking: while it validates, this call (and bk_filter_open_mmap) holds a shared flock() on the
 * file, waiting if another open file description holds an exclusive one (a writer recomputing the
 * checksum of a shared mapping, or `bloomkit` replacing the file). That includes an exclusive flock
 * the calling process itself holds through another descriptor of the same file: the call would
 * then wait forever. Release your own exclusive lock first, or load from the locked descriptor
 * with bk_filter_load_fd (which takes no lock). [any] */
BK_API bk_status bk_filter_load_path(const char *path, unsigned flags, bk_filter **out);
BK_API bk_status bk_filter_load_path_ex(const char *path, const bk_load_options *o, bk_filter **out);

/* Load one filter from a stream / descriptor at its current position, reading exactly its bytes
 * (the stream is left just after it, so filters can be read back to back). A stream that ends
 * before the declared length gives BK_ETRUNCATED. [any] */
BK_API bk_status bk_filter_load_file(FILE *fp, unsigned flags, bk_filter **out);
BK_API bk_status bk_filter_load_fd(int fd, unsigned flags, bk_filter **out);
BK_API bk_status bk_filter_load_file_ex(FILE *fp, const bk_load_options *o, bk_filter **out);
BK_API bk_status bk_filter_load_fd_ex(int fd, const bk_load_options *o, bk_filter **out);

/* Load from memory buf[0..len), copying: buf may be freed afterwards and need not be aligned.
 * len must be exactly the saved size (shorter: BK_ETRUNCATED; longer: BK_ECORRUPT; use
 * bk_filter_peek_header to learn the size of a filter at the start of a longer buffer). [any] */
BK_API bk_status bk_filter_load_buffer(const void *buf, size_t len, unsigned flags, bk_filter **out);
BK_API bk_status bk_filter_load_buffer_ex(const void *buf, size_t len, const bk_load_options *o, bk_filter **out);

/* A source of a saved filter's bytes for bk_filter_load_pull: reads up to len bytes into buf and
 * returns how many (fewer only at the end of the data, 0 at the end), or -1 on error. */
typedef ptrdiff_t (*bk_pull_fn)(void *ctx, void *buf, size_t len);
/* Load one filter whose saved bytes come from fn, in order, asking it for exactly the filter's
 * bytes (a source that holds more keeps the rest). The body is decoded as it arrives, the large
 * arrays of bloom, blocked, scalable and cuckoo filters read straight into the filter's own memory:
 * the peak is the filter plus fn's own buffer, not the saved form plus the filter (the other types
 * keep one temporary copy of their largest array). Validation as bk_filter_load_buffer, the payload
 * checksum computed as the bytes arrive and compared before the filter is returned. Errors as
 * bk_filter_load_buffer, BK_ETRUNCATED when fn ends early, BK_EIO when it reports an error. [any] */
BK_API bk_status bk_filter_load_pull(bk_pull_fn fn, void *ctx, unsigned flags, bk_filter **out);
BK_API bk_status bk_filter_load_pull_ex(bk_pull_fn fn, void *ctx, const bk_load_options *o, bk_filter **out);

/* ------------------------------------------------------------------------------------------------
 * Zero-copy: mapped files and borrowed buffers
 * ---------------------------------------------------------------------------------------------- */

/* Open a file by mmap. The whole file is validated once here (header, sizes, every parameter, and
 * the payload checksum unless BK_LOAD_NO_CHECKSUM); queries then read the mapped pages directly,
 * with no copy and no per-query check. Without BK_OPEN_WRITE_SHARED the mapping is read-only
 * (BK_BACKING_MAP_READONLY): mutating calls return BK_ENOTSUP. The mapping is MAP_SHARED, so a
 * read-only handle also sees inserts made through shared writable handles of the same file.
 * If the file is replaced (bk_filter_save_path renames a new one over it) the handle keeps the old
 * contents; if it is truncated by someone else, touching the lost pages raises SIGBUS: do not
 * truncate mapped files. Handles should not be carried across fork(): open again in the child. A
 * child that frees (or closes) a shared writable handle it inherited only unmaps it: the flock it
 * shares with its parent, the checksum and the stale flag stay the parent's to finalise.
 * Without BK_OPEN_WRITE_SHARED a file with holes (sparse) is read into memory instead of mapped
 * (reading a hole through a mapping allocates a page on tmpfs, and a full tmpfs answers that with
 * SIGBUS): the handle is then BK_BACKING_MEMORY, an ordinary loaded filter.
 * With BK_OPEN_WRITE_SHARED the blocks the writes may need are reserved first (fallocate: holes
 * allocated, reflinked blocks unshared), so a full file system is BK_EIO with errno ENOSPC here and
 * never SIGBUS later; on btrfs, where every write to a mapping is a copy-on-write no reservation
 * covers (and is very slow), and on a sparse file whose file system cannot allocate its holes
 * (no fallocate), it is BK_ENOTSUP: load, change and save the filter instead.
 * Errors: as the loads, plus BK_ENOTSUP (BK_OPEN_WRITE_SHARED on a type without atomic inserts, on
 * btrfs, or on such a sparse file), BK_EIO (errno ENOSPC or EDQUOT when the reservation fails),
 * BK_ETOOBIG (a file larger than any filter can be), BK_EVERSION (BK_OPEN_WRITE_SHARED on a file of a newer minor version), BK_EINVAL (not a
 * regular file: a FIFO is refused without blocking). [any] */
BK_API bk_status bk_filter_open_mmap(const char *path, unsigned flags, bk_filter **out);
/* The mapped bytes are the file's; the allocator gives the handle and the filter's small parts. */
BK_API bk_status bk_filter_open_mmap_ex(const char *path, const bk_load_options *o, bk_filter **out);

/*
 * Shared writable mappings (BK_OPEN_WRITE_SHARED):
 * - Several processes (and threads, with one handle or several) may open the same file this way and
 *   insert at the same time; inserts are atomic 64-bit ORs (the type's *_add_hash_atomic), so every
 *   key inserted by anyone is found by everyone once its add call has returned. The inserted-key
 *   count lives in the file and is incremented atomically, so it stays exact.
 * - The payload checksum cannot be kept current under concurrent atomic inserts. On open the header
 *   flag BK_FILE_FLAG_CHECKSUM_STALE is set (header checksum rewritten, header page msync'ed before
 *   any insert), and loaders skip the payload check of a file with that flag (unless
 *   BK_LOAD_REQUIRE_CLEAN). Each writer holds a shared flock() on the file; the writer that closes
 *   last (its non-blocking exclusive flock succeeds) recomputes the payload checksum, clears the
 *   flag and msyncs. Loaders of a path also take the shared flock while they validate, so they never
 *   see that rewrite half-done (they wait for it; a writer that closes while a loader validates
 *   leaves the flag for the next writer). A writer that crashes leaves the flag set: the file still loads (and the next
 *   last writer to close cleans it). flock is advisory and local: use local file systems, not NFS.
 * - bk_filter_merge and bk_filter_remove on such a handle return BK_ENOTSUP.
 */

/* Flush a shared writable mapping to disk (msync); for other handles, BK_OK and nothing to do.
 * Does not clear BK_FILE_FLAG_CHECKSUM_STALE (other writers may be active): bk_filter_close does.
 * Errors: BK_EINVAL, BK_EIO. [query] */
BK_API bk_status bk_filter_sync(bk_filter *f);

/* Free the handle like bk_filter_free, reporting the outcome of finalising a shared writable mapping
 * (checksum recomputed and flag cleared if this was the last writer, msync). The handle is freed
 * even when this returns an error (BK_EIO). A file changed underneath the mapping (truncated, or
 * another file copied over it in place: its size differs, or its header lost the stale flag) is not
 * finalised: BK_EIO with errno ESTALE. [excl] */
BK_API bk_status bk_filter_close(bk_filter *f);

/* Use caller memory in place, read-only, like a mapping (BK_BACKING_MAP_READONLY): buf must be
 * 64-byte aligned, hold exactly one saved filter, and stay valid and unchanged until the handle is
 * freed. Validated once here, as bk_filter_open_mmap. Errors: as the loads, plus BK_EINVAL (buf not
 * 64-byte aligned). [any] */
BK_API bk_status bk_filter_open_buffer(const void *buf, size_t len, unsigned flags, bk_filter **out);
BK_API bk_status bk_filter_open_buffer_ex(const void *buf, size_t len, const bk_load_options *o, bk_filter **out);

/* ------------------------------------------------------------------------------------------------
 * Header inspection
 * ---------------------------------------------------------------------------------------------- */

/* Header flags (docs/FORMAT.md). */
#define BK_FILE_FLAG_CHECKSUM_STALE 0x0001u /* payload checksum not maintained: open for shared writing */

/* Hash function ids (docs/FORMAT.md). */
#define BK_HASH_XXH3_64 1u /* XXH3-64 with the header's seed */

typedef struct bk_file_info {
    uint16_t version_major;
    uint16_t version_minor;
    uint32_t type;          /* a bk_type value (possibly one this build does not know) */
    uint32_t flags;         /* BK_FILE_FLAG_* */
    uint32_t hash_id;       /* BK_HASH_* */
    uint32_t header_size;   /* bytes before the body (64 in version 1.0) */
    uint64_t seed;
    uint64_t body_size;
    uint64_t body_checksum; /* XXH3-64 (seed 0) of the body, as stored */
    uint64_t total_size;    /* header_size + body_size: the saved filter's length */
} bk_file_info;

/* Read and validate the header at the start of buf[0..len) (len >= BK_FILE_HEADER_SIZE; the body is
 * not read), e.g. to learn total_size before receiving the rest, or for an `info` command. A known
 * type is not required (info.type may be one this build does not know; loading it gives BK_ETYPE).
 * Errors: BK_EINVAL (NULL), BK_ETRUNCATED (len < header), BK_ECORRUPT (magic, header size),
 * BK_EVERSION, BK_ECHECKSUM (header checksum), BK_ETOOBIG (body size). [any] */
BK_API bk_status bk_filter_peek_header(const void *buf, size_t len, bk_file_info *info);

#ifdef __cplusplus
}
#endif
#endif
