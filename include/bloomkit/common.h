/*
 * bloomkit: approximate membership filters.
 * common.h: version, status codes, allocator, hashing and statistics shared by every filter type.
 *
 * Thread-safety legend used in every header of this library:
 *   [any]     safe with anything, from any thread.
 *   [query]   safe alongside other [query] calls (and alongside *_atomic inserts where the type has them).
 *   [excl]    needs the caller's exclusion: no other call on the same object may run at the same time.
 */
#ifndef BLOOMKIT_COMMON_H
#define BLOOMKIT_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The version, in this one place: CMake, the pkg-config file and the Debian packages read it from here.
 * Semantic versioning: a 1.x library runs every program built against an earlier 1.y header (the shared
 * library's SONAME is libbloomkit.so.1 for all of 1.x, and its ABI is checked against the recorded 1.0
 * ABI); a change that breaks the stable API or ABI makes 2.0 and libbloomkit.so.2. The experimental tier
 * carries no such promise. The file format has its own version (BK_FORMAT_VERSION_*).
 *
 * Structs the stable tier fills for the caller keep their size and fields for all of 1.x: bk_stats has
 * reserved words for later fields; the sizing and header structs (bk_geometry, bk_quotient_geometry,
 * bk_aging_geometry, bk_file_info) are complete as they are, and a 1.x release that needs to report
 * more adds a new call beside the old one rather than growing them. Options structs grow through
 * their leading struct_size.
 */
#define BK_VERSION_MAJOR 1
#define BK_VERSION_MINOR 1
#define BK_VERSION_PATCH 0
#define BK_VERSION_NUMBER (BK_VERSION_MAJOR * 10000 + BK_VERSION_MINOR * 100 + BK_VERSION_PATCH)
#define BK_VERSION_STR_(x) #x
#define BK_VERSION_STR(x) BK_VERSION_STR_(x)
#define BK_VERSION_STRING \
    BK_VERSION_STR(BK_VERSION_MAJOR) "." BK_VERSION_STR(BK_VERSION_MINOR) "." BK_VERSION_STR(BK_VERSION_PATCH)

#if defined(_WIN32)
#  define BK_API
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define BK_API __attribute__((visibility("default")))
#else
#  define BK_API
#endif

/* [any] The version of the library actually loaded (compare with BK_VERSION_NUMBER). */
BK_API unsigned bk_version_number(void);
/* [any] */
BK_API const char *bk_version_string(void);

/* Status codes. The numbers are stable: they are part of the ABI and of the CLI's messages. */
typedef enum bk_status {
    BK_OK = 0,
    BK_EINVAL = 1,      /* an argument is out of range, NaN, or a NULL the header forbids */
    BK_ENOMEM = 2,      /* the allocator returned NULL */
    BK_ETOOBIG = 3,     /* the requested size overflows or exceeds BK_MAX_FILTER_BYTES */
    BK_EINCOMPAT = 4,   /* filters differ in type, geometry, layout or seed */
    BK_ENOTFOUND = 5,   /* remove of a key that is certainly absent */
    BK_EFULL = 6,       /* the filter cannot take another key */
    BK_ECORRUPT = 7,    /* serialized data is malformed or inconsistent */
    BK_EVERSION = 8,    /* serialized data has an unknown major format version */
    BK_ETYPE = 9,       /* unknown filter type, or an operation on the wrong type */
    BK_ENOTSUP = 10,    /* the operation is not supported by this filter type */
    BK_EIO = 11,        /* an operating-system I/O call failed (errno is preserved) */
    BK_ECHECKSUM = 12,  /* a checksum does not match */
    BK_ETRUNCATED = 13, /* serialized data ends before its declared length */
    BK_EEXISTS = 14,    /* add-if-absent found the key (probably) present; nothing changed */
    BK_EBUFSIZE = 15    /* an output buffer is too small; the call says how large it must be */
} bk_status;

/* [any] A short English name for a status; never NULL. */
BK_API const char *bk_strerror(bk_status s);

/*
 * Options structs (bk_bloom_options, bk_cuckoo_options, ...) all follow one rule, so that a later 1.x
 * can add fields without breaking programs built against an earlier header:
 *   - the first member is `size_t struct_size`, the size of the struct the program was compiled with:
 *     BK_<TYPE>_OPTIONS_INIT sets it (bk_bloom_options o = BK_BLOOM_OPTIONS_INIT; o.seed = 7;), and 0
 *     means "the size of this header's struct";
 *   - every field's zero value is its default, so a zeroed struct (or a NULL pointer) gives the
 *     documented defaults for every type;
 *   - a library newer than the program reads the fields the program knows and takes the defaults for
 *     the others; a library older than the program accepts the larger struct only when every field it
 *     does not know is zero, and otherwise refuses the call with BK_EINVAL (it cannot honour them);
 *   - the `allocator` field (NULL: the default) is kept by the object as a pointer: the bk_allocator it
 *     points to must remain valid until every object made with it is freed ("Allocator" below).
 */
#ifdef __cplusplus
#  define BK_OPTIONS_INIT_(type) { sizeof(type) }
#else
#  define BK_OPTIONS_INIT_(type) { .struct_size = sizeof(type) }
#endif

/* Refused sizes: no single filter may need more than this many bytes (256 GiB). */
#define BK_MAX_FILTER_BYTES (UINT64_C(1) << 38)

/* Filter types. The numbers are stable: they are stored in files (docs/FORMAT.md). */
typedef enum bk_type {
    BK_TYPE_BLOOM = 1,     /* classic, standard or partitioned layout */
    BK_TYPE_BLOCKED = 2,
    BK_TYPE_COUNTING = 3,
    BK_TYPE_SCALABLE = 4,
    BK_TYPE_CUCKOO = 5,
    BK_TYPE_FUSE = 6,
    BK_TYPE_AGING = 7,     /* sliding window by count or time (aging.h) */
    BK_TYPE_QUOTIENT = 8,  /* counting quotient filter: grows, merges, lists (quotient.h) */
    BK_TYPE_RIBBON = 9,    /* static set, any FPR near the bound (ribbon.h) */
    BK_TYPE_CMS = 10,      /* count-min sketch: frequency estimates (cms.h); a sketch, not a filter */
    BK_TYPE_TOPK = 11      /* Top-K, HeavyKeeper: the k heaviest keys (topk.h); a sketch, not a filter */
} bk_type;

/* [any] "bloom", "blocked", ...; NULL for an unknown type. */
BK_API const char *bk_type_name(bk_type t);

/*
 * Allocator. Each object allocates and frees everything it owns through one allocator, chosen when it
 * is made: the `allocator` of its options struct (of bk_load_options for a loaded or mapped filter,
 * filter.h), so a host (a Redis module, an arena) can account for every byte. The object keeps a
 * POINTER to that bk_allocator, not a copy: the bk_allocator passed must remain valid (same address,
 * same contents) until every object made with it, and every filter loaded or mapped with it, is
 * freed; a static or long-lived one is the usual choice. A bk_filter handle is allocated with its
 * filter's allocator, a clone with its original's. All three functions must be set (else the default
 * is used). NULL means the default: malloc/calloc/free, unless bk_set_allocator replaced it.
 * Arrays of 2 MiB or more get huge-page advice either way; only the default allocator's are also
 * aligned to 2 MiB (the padding would count in a user allocator's accounting). BK_THP=0 in the
 * environment turns both off; it is read once per process, when the first such array is allocated.
 */
typedef struct bk_allocator {
    void *(*malloc_fn)(void *opaque, size_t size);
    void *(*calloc_fn)(void *opaque, size_t count, size_t size);
    void (*free_fn)(void *opaque, void *ptr);
    void *opaque;
} bk_allocator;
/* Deprecated: replaces the default for objects made afterwards whose options name no allocator (NULL
 * restores malloc). The allocator is copied, and objects made while it is the default point at that
 * copy: call it before any filter exists, and not again while one made with the previous default
 * lives. Process-wide state: prefer the options' allocator. [excl] */
BK_API void bk_set_allocator(const bk_allocator *a);

/*
 * Hashing: XXH3-64 with a seed. Every bytes-key API hashes the key with this function and the
 * filter's seed; the pre-hashed APIs (`*_hash`) take such a value directly. A pre-hashed value must be
 * a well-mixed 64-bit hash (bk_hash64, or another good hash): the filters use its bits as they are.
 */
BK_API uint64_t bk_hash64(const void *key, size_t len, uint64_t seed); /* [any] */

/*
 * Batches: every *_many (byte keys) and *_hashes (pre-hashed keys) call has one shape, for every type:
 *     bk_status bk_T_OP_many(f, const void *const *keys, const size_t *lens, size_t n[, results][, count]);
 *     bk_status bk_T_OP_hashes(f, const uint64_t *hashes, size_t n[, results][, count]);
 *   - The return value is a status. BK_EINVAL, with nothing done, when f is NULL, an array is NULL with
 *     n > 0, or some keys[i] is NULL with lens[i] > 0 (checked before any key is touched). n = 0 is fine.
 *   - Per-key answers go to a caller's `uint8_t results[n]` (0 or 1 per key; results may be NULL):
 *     contains: 1 if the key is probably present; add_if_absent: 1 if it was (probably) present
 *     already, so nothing was added.
 *   - What a call counts goes to its last parameter, a `size_t *` that may be NULL: `hits` for the
 *     contains forms (keys probably present: the number of 1s in results), `done` for the calls that
 *     change the filter key by key and report it (add_if_absent, remove, and the adds of cuckoo,
 *     quotient and scalable filters and of bk_filter): how many keys were fully processed.
 *   - A batch that cannot finish (a cuckoo or quotient filter full, a scalable chain at its limit, a
 *     remove of a key that is certainly absent) stops at the key that failed and returns that key's
 *     status; *done is that key's index: keys[0..done) are processed (their results written), keys
 *     from `done` on are untouched. On BK_OK, *done = n.
 *   - The adds of types whose add cannot fail for one key (bloom, blocked, counting, aging) have no
 *     per-key answer and nothing to count: bk_status bk_T_add_many(f, keys, lens, n).
 *   - Each key gets the answer the one-key call would give it at its turn, in order: a key repeated
 *     within a batch is found present by its second add_if_absent.
 */

/*
 * Statistics common to every type. Fields a type does not have are zero. The struct is part of the
 * stable ABI: its size and the offsets below stay for every 1.x release. A later 1.x may give meaning
 * to words of `reserved` (in order, each documented where it is defined); this version writes them
 * all zero, and so does every later version for the words it does not use.
 */
typedef struct bk_stats {
    bk_type type;
    uint32_t k;                /* probes per key (Bloom family); fingerprint bits (cuckoo, fuse) */
    uint64_t capacity;         /* keys the filter was sized for */
    uint64_t count;            /* keys inserted (successful adds; for unions, an estimate) */
    uint64_t bits;             /* bits (or cells) addressed by the probes */
    uint64_t memory_bytes;     /* bytes of the filter's arrays */
    double bits_per_key;       /* memory_bytes * 8 / max(count, 1) */
    double fill_ratio;         /* fraction of bits set / cells non-zero / slots used */
    double est_cardinality;    /* distinct keys estimated from the fill */
    double fpr_target;         /* the FPR the filter was sized for */
    double fpr_now;            /* FPR expected at the current fill */
    bool saturated;            /* count past capacity, or fill past 50% (Bloom family: past the fill
                                  expected at capacity, at most 60%, plus a noise margin): rebuild larger */
    uint64_t saturated_cells;  /* counting filter: counters stuck at their maximum */
    uint32_t subfilters;       /* scalable and cuckoo chains: number of sub-filters */
    uint64_t seed;
    uint64_t reserved[8];      /* zero (see above) */
} bk_stats;

#ifdef __cplusplus
}
#endif
#endif
