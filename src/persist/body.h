/* The body writer and the bounds-checked body reader of the file format (docs/FORMAT.md section 6),
 * used by every type's encode and decode. Not installed. */
#ifndef BK_BODY_H
#define BK_BODY_H

#include "base.h"

typedef struct bk_writer {
    /* Receives the bytes in order. NULL: only count them (size queries). */
    bk_status (*sink)(void *ctx, const void *data, size_t len);
    void *ctx;
    uint64_t offset; /* bytes of body written so far */
} bk_writer;

BK_HIDDEN bk_status bk__w_bytes(bk_writer *w, const void *data, size_t len);
BK_HIDDEN bk_status bk__w_u32(bk_writer *w, uint32_t v);
BK_HIDDEN bk_status bk__w_u64(bk_writer *w, uint64_t v);
BK_HIDDEN bk_status bk__w_f64(bk_writer *w, double v);
/* Zero bytes up to the next multiple of `align` (a power of two) of the body offset. */
BK_HIDDEN bk_status bk__w_align(bk_writer *w, size_t align);
/* An array of 64-bit words (stored little-endian, the host's order: one copy). */
BK_HIDDEN bk_status bk__w_u64_array(bk_writer *w, const uint64_t *v, size_t count);

typedef struct bk_reader {
    const uint8_t *base; /* start of the body; its address is 64-byte aligned when borrowing */
    size_t len;
    size_t off;
    bool borrow;         /* decoded filters point into base instead of copying (mmap) */
    bool writable;       /* borrowed memory may be written (shared writable mapping) */
    uint64_t seed;       /* the hash seed, from the container header */
    /* Pulled bodies (pull.c): the bytes arrive from a source in order instead of being in memory,
     * base is NULL, and bk__r_take hands out a window valid until the next read. NULL otherwise. */
    struct bk__pull *pull;
    bk_allocator alloc;  /* what the decoded filter allocates with (and keeps) */
} bk_reader;

BK_HIDDEN bk_status bk__r_u32(bk_reader *r, uint32_t *v);
BK_HIDDEN bk_status bk__r_u64(bk_reader *r, uint64_t *v);
BK_HIDDEN bk_status bk__r_f64(bk_reader *r, double *v);
/* Skip the padding up to the next multiple of `align` (a power of two) of the body offset. Padding is
 * written as zero bytes: any other byte there was not written by bloomkit (BK_ECORRUPT), for every
 * type alike. */
BK_HIDDEN bk_status bk__r_align(bk_reader *r, size_t align);
/* A pointer to the next len bytes (bounds-checked), advancing past them. From a pulled body the
 * bytes are in a window that the next read of r reuses. */
BK_HIDDEN bk_status bk__r_take(bk_reader *r, size_t len, const uint8_t **p);
/* Copy the next len bytes (bounds-checked) into dst, advancing past them: the way a decoder fills a
 * large array it owns, so that a pulled body goes straight from its source into the filter. */
BK_HIDDEN bk_status bk__r_take_into(bk_reader *r, void *dst, size_t len);
/* pull.c: the pulled forms of the two (bounds already checked). */
BK_HIDDEN bk_status bk__pull_take(bk_reader *r, size_t len, const uint8_t **p);
BK_HIDDEN bk_status bk__pull_take_into(bk_reader *r, void *dst, size_t len);

#endif
