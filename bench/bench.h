/* The shared benchmark harness: every filter type is a "contender" run on the same keys in one run. */
#ifndef BK_BENCH_H
#define BK_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The hits of a query batch (its last argument, `size_t *hits`): BENCH_HITS(bk_bloom_contains_many,
 * f, keys, lens, n, res). */
#define BENCH_HITS(fn, ...)                                                                         \
    (__extension__({                                                                               \
        size_t bench_hits_ = 0;                                                                    \
        (void)fn(__VA_ARGS__, &bench_hits_);                                                       \
        bench_hits_;                                                                               \
    }))

typedef struct bench_contender {
    const char *name;   /* short, unique: printed in the first column and matched by --only */
    /* Dynamic filters: create for n keys at p, then add keys one at a time (or in batches). */
    void *(*create)(uint64_t n, double p);
    void (*add)(void *f, const void *key, size_t len);
    bool (*contains)(void *f, const void *key, size_t len);
    /* Optional batch forms (NULL when the type has none). */
    void (*add_batch)(void *f, const void *const *keys, const size_t *lens, size_t n);
    size_t (*contains_batch)(void *f, const void *const *keys, const size_t *lens, size_t n, uint8_t *res);
    /* Optional: remove one key (counting, cuckoo). */
    bool (*remove)(void *f, const void *key, size_t len);
    /* Static filters (fuse): built in one call from every key; create/add are NULL then. */
    void *(*build)(const void *const *keys, const size_t *lens, size_t n, double p);
    /* Optional: one key at a time through a header-inline form, on 64-bit hashes of the keys
     * (bk_hash64(key, len, 0)) computed before the timer starts: the "(inline, pre-hashed)" rows. */
    void (*add_hashed)(void *f, const uint64_t *h, size_t n);
    size_t (*contains_hashed)(void *f, const uint64_t *h, size_t n, uint8_t *res);
    /* Optional: zero the arrays (touching every page), called before the timed inserts so the insert
     * column does not include the kernel's first-touch page faults of a large filter. */
    void (*clear)(void *f);
    size_t (*bytes)(void *f);   /* memory of the filter's arrays */
    /* Optional: the FPR the design gives at the filter's fill with n keys (its own formula), printed
     * beside the measured one; and the load factor (items / slots) of a slotted filter (cuckoo). */
    double (*expected_fpr)(void *f, uint64_t n);
    double (*load)(void *f);
    /* Optional, on a bloomkit contender: the name of the peer whose plain one-key calls it is set
     * against in the "bloomkit vs peer" table at the end (same n, p and keys, same run). */
    const char *peer;
    void (*destroy)(void *f);
    const char *note;           /* what the row is, printed under the table */
} bench_contender;

/* The registry (bench/registry.c): every contender, the baseline (libbloom) first. */
extern const bench_contender *const bench_contenders[];

/* A cuckoo filter with the peer's geometry (12-bit fingerprints, buckets of 4, its power-of-two
 * bucket count): the create of `cuckoo-p2` and `cuckoo-p2-u64` (c_cuckoo.c). */
void *bench_cuckoo_p2_create(uint64_t n, double p);

/* The byte-key contenders' adapters the uint64-key ones (c_u64.c) share, so both run on the same
 * filters: `bloom` (c_baseline.c), `blocked` (c_blocked.c), `fuse` (c_fuse.c), `cuckoo` (c_cuckoo.c). */
void *bench_bloom_create(uint64_t n, double p);
size_t bench_bloom_bytes(void *f);
void bench_bloom_clear(void *f);
void bench_bloom_destroy(void *f);
void *bench_blocked_create(uint64_t n, double p);
size_t bench_blocked_bytes(void *f);
void bench_blocked_clear(void *f);
void bench_blocked_destroy(void *f);
void *bench_fuse_build(const void *const *keys, const size_t *lens, size_t n, double p);
size_t bench_fuse_bytes(void *f);
void bench_fuse_destroy(void *f);
void *bench_cuckoo_create(uint64_t n, double p);
size_t bench_cuckoo_bytes(void *f);
double bench_cuckoo_load(void *f);
void bench_cuckoo_destroy(void *f);

#endif
