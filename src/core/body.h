/* The body writer and the bounds-checked body reader of the file format (docs/FORMAT.md section 6),
 * used by every type's encode and decode. Not installed. */
#ifndef BK_BODY_H
#define BK_BODY_H

#include "core/base.h"
#include "bloomkit/filter.h"

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
    /* Pulled bodies (struct bk__pull): the bytes arrive from a source in order instead of being in memory,
     * base is NULL, and bk__r_take hands out a window valid until the next read. NULL otherwise. */
    struct bk__pull *pull;
    const bk_allocator *alloc;  /* what the decoded filter allocates with (and keeps) */
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
/* A decoder's array of `bytes` bytes, in two steps around the allocation of its filter:
 * bk__r_array_begin checks that the body holds the bytes (BK_ETRUNCATED) and, when r borrows, takes
 * them (*data; NULL otherwise); the decoder then allocates its filter (with an array of its own only
 * when !r->borrow) and bk__r_array_end points *words at the borrowed bytes or copies the body's bytes
 * into *words (straight from the source: a pulled body never sits in memory whole). */
BK_HIDDEN bk_status bk__r_array_begin(bk_reader *r, uint64_t bytes, const uint8_t **data);
BK_HIDDEN bk_status bk__r_array_end(bk_reader *r, uint64_t bytes, const uint8_t *data, uint64_t **words);
/* Whether bits [bit, nwords * 64) of an array are all zero: the bits past a filter's last slot, which
 * bloomkit always writes as zero (a decoder refuses anything else, BK_ECORRUPT). */
BK_HIDDEN bool bk__tail_zero(const uint64_t *w, uint64_t nwords, uint64_t bit);

/* The parameter block that the bit-array bodies of the classic family open with (classic, blocked
 * and counting filters, docs/FORMAT.md): a 32-bit variant (the layout, or the counter width), k, m,
 * the capacity, the count and the target FPR, then zero padding to 64 bytes; the array follows.
 * bk__w_bits_body writes the whole body: the block, the padding and the nwords words of the array. */
typedef struct bk__bits_head {
    uint32_t variant, k;
    uint64_t m, capacity, count;
    double fpr;
    size_t at; /* the body offset the block was read at (where a mapped filter's count lives) */
} bk__bits_head;
BK_HIDDEN bk_status bk__w_bits_body(bk_writer *w, uint32_t variant, uint32_t k, uint64_t m, uint64_t capacity,
                                    uint64_t count, double fpr, const uint64_t *words, uint64_t nwords);
/* Reads the block, refusing (BK_ECORRUPT) what no type writes: m 0 or past BK_MAX_FILTER_BYTES * 8
 * bits, a capacity of 0, an FPR outside [0, 1]; the type checks the variant, k and m's fit. */
BK_HIDDEN bk_status bk__r_bits_head(bk_reader *r, bk__bits_head *h);
/* The end of a classic-family decode, once its filter is made (with an array of its own only when
 * !r->borrow): the array (bk__r_array_end: borrowed or copied into *words), refused (BK_ECORRUPT)
 * unless its bits from `used` on are zero; then the count: in a writable shared mapping *count points
 * at the count field of the parameter block h (read by bk__r_bits_head), so that inserts through the
 * mapping keep the file's count; otherwise *own takes the block's value. */
BK_HIDDEN bk_status bk__r_bits_end(bk_reader *r, const bk__bits_head *h, uint64_t bytes, const uint8_t *data,
                                   uint64_t used, uint64_t **words, uint64_t **count, uint64_t *own);

/* A pulled body's source (persist/pull.c sets it up): the bytes are read from fn in order, hashed as
 * they arrive; bk__r_take and bk__r_take_into read from it when the reader has one. */
struct bk__pull {
    bk_pull_fn fn;
    void *ctx;
    XXH3_state_t hash;  /* of the body bytes read so far */
    uint8_t *win;       /* bk__r_take's window */
    size_t win_cap;
    bool failed;        /* the source reported an error (BK_EIO rather than BK_ETRUNCATED) */
};
/* Exactly len bytes from the source into dst (not hashed): BK_OK, BK_ETRUNCATED (it ended) or BK_EIO. */
BK_HIDDEN bk_status bk__pull_exact(struct bk__pull *p, void *dst, size_t len);

#endif
