/*
 * bloomkit: the cuckoo filter. Deletion and counting with less memory than a counting Bloom filter
 * at every FPR <= 1%.
 *
 * A table of m buckets, each of b slots (b = 1 .. 255; 1, 2, 4 and 8 have the fastest queries)
 * holding f-bit fingerprints (f = 4 .. 32, bit-packed, so a slot costs exactly f bits; or, with
 * semi-sorted buckets, f - 1 bits). A key's fingerprint lives
 * in one of two buckets: i1 from the hash, and i2 = (H(fp) - i1) mod m. That alternate-bucket map is
 * its own inverse for ANY m (i1 = (H(fp) - i2) mod m), so the table needs no power-of-two size and
 * wastes no memory on rounding. Inserting into two full buckets evicts ("kicks") a resident
 * fingerprint to its other bucket, at most max_kicks times; when the kicks run out, the last evicted
 * fingerprint is kept in the table's victim stash (4 entries) that queries still check, so a failed
 * insert never loses a key. Below its capacity a table keeps taking keys while a stash entry is free;
 * at or over its capacity a non-empty stash makes it full, and the filter reports BK_EFULL for the
 * next insert -- or, with expansion, chains a new table `expansion` times larger (like RedisBloom's
 * EXPANSION); queries and removes check every table. The stash is saved with the table.
 *
 * FPR: a negative query compares its fingerprint with the 2b slots of two buckets, so
 * FPR <= 2 b alpha / (2^f - 1) per table at load factor alpha (summed over the tables of a chain):
 * about 2b / 2^f when full. Memory per key is f / alpha bits ((f - 1) / alpha semi-sorted): at p = 1%,
 * f = 10 (FPR bound 0.78%) takes 10.57 bits/key at 95% load, 9.51 semi-sorted.
 *
 * THE CUCKOO RULES (they come with deletion by fingerprint):
 *  - Removing a key that was never added can remove a different key that shares its fingerprint and
 *    buckets, which then becomes a false negative. Only remove keys you added.
 *  - Adding the same key more than 2b times fills both of its buckets with copies of one fingerprint:
 *    the next add of it runs out of kicks, and the filter (or, with expansion, that table) is full.
 *  - count() counts fingerprint copies, so it can over-count keys that collide with the one asked for.
 *  - Removing keys that were added never causes a false negative, also across an expansion chain: a
 *    key's buckets in a larger table refine its buckets in the smaller ones, and remove searches the
 *    newest table first, so a colliding copy it may take belongs to a key that still finds the
 *    remover's own copy.
 *
 * Thread-safety (legend in common.h). A filter created with options.concurrent (or switched with
 * bk_cuckoo_set_concurrent) serializes its writers with one internal lock and lets readers run
 * without locks: then add / add_if_absent / remove / contains / count / stats and their batch forms
 * are all safe alongside each other ([any] below is marked "[any] if concurrent"). A query that
 * races the insert of the same key may miss it; a key whose insert has completed is never missed,
 * even while other inserts move fingerprints around (see src/filters/cuckoo/concurrent.c for the reasoning). Without
 * the flag, writes need the caller's exclusion and queries are [query].
 *
 * The bytes form of every call equals the pre-hashed (`_hash`) form applied to
 * bk_hash64(key, len, seed).
 */
#ifndef BLOOMKIT_CUCKOO_H
#define BLOOMKIT_CUCKOO_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_cuckoo bk_cuckoo;

#define BK_CUCKOO_DEFAULT_BUCKET_SIZE 4
/* Largest bucket size (RedisBloom's limit). 1, 2, 4 and 8 are the sizes the query fast paths are
 * built for; other sizes work, and queries on buckets wider than 64 bits loop over them. */
#define BK_CUCKOO_MAX_BUCKET_SIZE 255
#define BK_CUCKOO_DEFAULT_FINGERPRINT_BITS 12 /* for bk_cuckoo_new_buckets; bk_cuckoo_new picks from p */
#define BK_CUCKOO_MIN_FINGERPRINT_BITS 4
#define BK_CUCKOO_MAX_FINGERPRINT_BITS 32
#define BK_CUCKOO_DEFAULT_MAX_KICKS 500
#define BK_CUCKOO_MAX_KICKS 65535       /* like RedisBloom's MAXITERATIONS limit */
#define BK_CUCKOO_MAX_EXPANSION 32768   /* like RedisBloom's EXPANSION limit */
#define BK_CUCKOO_MAX_TABLES 65535      /* tables in one expansion chain */

typedef struct bk_cuckoo_options {
    size_t struct_size;   /* BK_CUCKOO_OPTIONS_INIT sets it; 0 means this header's size (common.h) */
    const bk_allocator *allocator; /* NULL: the default (malloc); see common.h */
    uint32_t bucket_size;      /* slots per bucket: 1 .. BK_CUCKOO_MAX_BUCKET_SIZE; 0 means 4 */
    uint32_t fingerprint_bits; /* 4 .. 32 (5 .. 16 semi-sorted); 0 means: chosen from p by bk_cuckoo_new
                                  (the smallest whose full-table bound 2b/(2^f - 1) is <= p), 12 for
                                  _new_buckets */
    uint32_t max_kicks;        /* evictions one insert may do before it gives up; 0 means 500;
                                  at most BK_CUCKOO_MAX_KICKS */
    uint32_t expansion;        /* growth when full: 0 = none (BK_EFULL); e >= 1 = chain a new table with
                                  e times the buckets of the last one, e rounded up to a power of two
                                  (as RedisBloom does; it keeps removes exact across the chain, see
                                  THE CUCKOO RULES); at most BK_CUCKOO_MAX_EXPANSION */
    double load_factor;        /* bk_cuckoo_new only: buckets = ceil(capacity / (b * load_factor));
                                  0 means the load b-slot buckets reliably reach (b=1: 0.45, b=2: 0.84,
                                  b=4: 0.95, b=8: 0.97; with f = 4, 5, 6: 0.6, 0.75, 0.88) plus the
                                  small-table slack (see bk_cuckoo_new);
                                  must be in (0, 1] */
    uint64_t seed;             /* hash seed; 0 is a fine default, a secret one resists crafted keys */
    bool concurrent;           /* writer lock + lock-free readers: see "Thread-safety" above */
    bool semi_sorted;          /* semi-sorted buckets: one bit per slot less for the same FPR (the 4
                                  high bits of the 4 sorted fingerprints of a bucket are stored as one
                                  12-bit code); needs bucket_size 4 (or 0) and 5..16 fingerprint bits
                                  (bk_cuckoo_new: p >= 1.22e-4). Slower: see bk_cuckoo_new. */
} bk_cuckoo_options;
#define BK_CUCKOO_OPTIONS_INIT BK_OPTIONS_INIT_(bk_cuckoo_options)

/* ---- create and destroy ---- */

/* Create for `capacity` keys at false-positive rate p. opts may be NULL (all defaults).
 * Buckets: ceil(capacity / (b * load_factor)) when opts->load_factor is set; with the default load,
 * ceil(max(capacity / load + 4 sqrt(capacity), 128) / b): a small table needs room for the spread of
 * its keys over few buckets (about one key in m buckets has both choices on the same bucket); the
 * slack costs 0.4% of the table at 1M keys, 0.03% at 200M. With the default load a filter of b = 2 or
 * b = 4 takes every key up to its capacity: a key that finds its group of buckets over-full waits in
 * the stash (measured figures in bench/README.md, "Cuckoo filter extras"). Below its capacity a table
 * gives its stashed fingerprints another walk before each insert, and after every remove.
 * Fingerprint bits: opts->fingerprint_bits, or when that is 0 the smallest f in 4..32 (5..16
 * semi-sorted) with 2b/(2^f - 1) <= p (bk_cuckoo_fpr_bound): the fewest bits per key for p, since the
 * load does not depend on f from 7 bits on. With 4 slots: p = 1% gives f = 10 (bound 0.78%), 0.1%
 * f = 13, 0.01% f = 17; p down to 1.86e-9 (f = 32) works, below that BK_EINVAL. A bucket_size of 0
 * means 4 (at every p 4 slots need the fewest bits per key: 2 save one bit but fill only 84%, 8 cost
 * one more for 97%). When opts->fingerprint_bits is set, p may be 0 (the target is then the bound of
 * those bits); otherwise p must be in (0, 1).
 * Semi-sorted buckets (opts->semi_sorted) store the same fingerprints in f - 1 bits per slot, so they
 * answer exactly as plain buckets of f bits would; every insert, remove and query decodes a bucket
 * first, which costs time (figures in bench/README.md).
 * Errors: BK_EINVAL (capacity 0, bad p, p below what 32-bit fingerprints give, bucket_size over
 * BK_CUCKOO_MAX_BUCKET_SIZE, fingerprint_bits outside 4..32, semi_sorted with a bucket size other than
 * 4 or a fingerprint outside 5..16 (so p below 1.22e-4), max_kicks or expansion over the limits,
 * load_factor outside (0,1], out NULL), BK_ETOOBIG (more than BK_MAX_FILTER_BYTES, or more than 2^32
 * buckets in a table), BK_ENOMEM.
 * On error *out is NULL and nothing stays allocated. [any] */
BK_API bk_status bk_cuckoo_new(uint64_t capacity, double p, const bk_cuckoo_options *opts, bk_cuckoo **out);
/* Create with an explicit number of buckets (any number >= 1, no power of two needed), e.g. to mirror
 * another implementation's geometry. opts->load_factor is ignored; capacity for statistics is
 * floor(buckets * b * default load). Errors as bk_cuckoo_new (BK_EINVAL for buckets = 0). [any] */
BK_API bk_status bk_cuckoo_new_buckets(uint64_t buckets, const bk_cuckoo_options *opts, bk_cuckoo **out);
/* Free; NULL is fine. [excl] */
BK_API void bk_cuckoo_free(bk_cuckoo *f);
/* A deep copy (every table, the victims and counters; concurrent mode too), made with f's allocator.
 * Errors: BK_EINVAL (f or out NULL), BK_ENOMEM; on error *out is NULL (when out is not).
 * [query]; [any] if concurrent (it holds the writer lock while it copies). */
BK_API bk_status bk_cuckoo_clone(const bk_cuckoo *f, bk_cuckoo **out);
/* Switch concurrent mode on or off (allocates or frees the reader version stripes), e.g. after a
 * filter was loaded from a file. BK_EINVAL for NULL, BK_ENOMEM. [excl] */
BK_API bk_status bk_cuckoo_set_concurrent(bk_cuckoo *f, bool on);

/* ---- insert ---- */

/* Insert one copy of the key's fingerprint (duplicates are stored again, as RedisBloom's CF.ADD).
 * BK_OK: stored (possibly after kicks; if the kicks ran out, another fingerprint went to the victim
 * stash and is still found). BK_EFULL: the table is full (its stash full, or in use at or over its
 * capacity) and the filter may not grow
 * (no expansion, BK_CUCKOO_MAX_TABLES reached, or the next table would exceed BK_MAX_FILTER_BYTES);
 * nothing changed. BK_ENOMEM: growing failed; nothing changed. BK_EINVAL: f NULL, or key NULL with
 * len > 0. [excl]; [any] if concurrent. */
BK_API bk_status bk_cuckoo_add(bk_cuckoo *f, const void *key, size_t len);
BK_API bk_status bk_cuckoo_add_hash(bk_cuckoo *f, uint64_t hash);
/* Insert only if the key is not (probably) present, like CF.ADDNX: BK_EEXISTS when contains() is
 * true (nothing changed), otherwise as bk_cuckoo_add. In concurrent mode the check and the insert
 * are one step under the writer lock. [excl]; [any] if concurrent. */
BK_API bk_status bk_cuckoo_add_if_absent(bk_cuckoo *f, const void *key, size_t len);
BK_API bk_status bk_cuckoo_add_if_absent_hash(bk_cuckoo *f, uint64_t hash);

/* ---- query ---- */

/* true if the key is probably present, false if it is certainly absent (never false for a key added
 * and not removed). f must not be NULL; key may be NULL only when len is 0. [query]; [any] if concurrent. */
BK_API bool bk_cuckoo_contains(const bk_cuckoo *f, const void *key, size_t len);
BK_API bool bk_cuckoo_contains_hash(const bk_cuckoo *f, uint64_t hash);
/* Copies of the key's fingerprint in its buckets (and victim slots), summed over the chain, like
 * CF.COUNT: at least the number of times the key was added and not removed; colliding keys can add
 * to it. 0 for f NULL. [query]; [any] if concurrent. */
BK_API uint64_t bk_cuckoo_count(const bk_cuckoo *f, const void *key, size_t len);
BK_API uint64_t bk_cuckoo_count_hash(const bk_cuckoo *f, uint64_t hash);

/* ---- remove ---- */

/* Remove one copy of the key's fingerprint (newest table first). BK_OK, or BK_ENOTFOUND when no copy
 * is present (nothing changed), BK_EINVAL for bad arguments. Read THE CUCKOO RULES above: remove only
 * keys that were added. A removal that frees a slot next to a waiting victim moves the victim back
 * into the table, so the filter accepts inserts again. [excl]; [any] if concurrent. */
BK_API bk_status bk_cuckoo_remove(bk_cuckoo *f, const void *key, size_t len);
BK_API bk_status bk_cuckoo_remove_hash(bk_cuckoo *f, uint64_t hash);

/* uint64 keys: the same answers as the byte forms on the key's 8 little-endian bytes
 * (bk_cuckoo_add_u64(f, k) is bk_cuckoo_add(f, &k_le, 8)), so the two forms mix on one filter and
 * in files. The hash is XXH3 at the constant length 8 (bk_hash64 of those bytes) without the byte
 * forms' length dispatch. Errors and thread-safety as the byte forms: add [excl], add_if_absent
 * [excl], remove [excl], contains [query] ([any] for all four in concurrent mode). */
BK_API bk_status bk_cuckoo_add_u64(bk_cuckoo *f, uint64_t key);
BK_API bk_status bk_cuckoo_add_if_absent_u64(bk_cuckoo *f, uint64_t key);
BK_API bk_status bk_cuckoo_remove_u64(bk_cuckoo *f, uint64_t key);
BK_API bool bk_cuckoo_contains_u64(const bk_cuckoo *f, uint64_t key);

/* ---- batches (common.h, "Batches"): hash all keys first, prefetch both buckets of each, then work
 * in order ----
 * add and add_if_absent stop at the first key the filter cannot take (BK_EFULL: that key is not in,
 * keys before it are) and remove at the first key that is certainly absent (BK_ENOTFOUND), with *done
 * = that key's index. add_if_absent: results[i] = 1 if keys[i] was probably present (not inserted).
 * Thread-safety as the single-key forms: adds and removes [excl], queries [query]; all of them [any]
 * if concurrent (a changing batch takes the writer lock once per slice of 32 keys, not for the whole
 * batch: other threads' calls may run between slices). */
BK_API bk_status bk_cuckoo_add_many(bk_cuckoo *f, const void *const *keys, const size_t *lens, size_t n,
                                    size_t *done);
BK_API bk_status bk_cuckoo_add_hashes(bk_cuckoo *f, const uint64_t *hashes, size_t n, size_t *done);
BK_API bk_status bk_cuckoo_add_if_absent_many(bk_cuckoo *f, const void *const *keys, const size_t *lens,
                                              size_t n, uint8_t *results, size_t *done);
BK_API bk_status bk_cuckoo_add_if_absent_hashes(bk_cuckoo *f, const uint64_t *hashes, size_t n,
                                                uint8_t *results, size_t *done);
BK_API bk_status bk_cuckoo_remove_many(bk_cuckoo *f, const void *const *keys, const size_t *lens, size_t n,
                                       size_t *done);
BK_API bk_status bk_cuckoo_remove_hashes(bk_cuckoo *f, const uint64_t *hashes, size_t n, size_t *done);
BK_API bk_status bk_cuckoo_contains_many(const bk_cuckoo *f, const void *const *keys, const size_t *lens,
                                         size_t n, uint8_t *results, size_t *hits);
BK_API bk_status bk_cuckoo_contains_hashes(const bk_cuckoo *f, const uint64_t *hashes, size_t n,
                                           uint8_t *results, size_t *hits);

/* ---- whole filter ---- */

/* Empty every table and victim slot and zero the counters; the chain keeps its tables. [excl] */
BK_API void bk_cuckoo_clear(bk_cuckoo *f);

/* The common statistics (type BK_TYPE_CUCKOO; k = fingerprint bits; bits = slots; fill_ratio = load
 * factor; count = est_cardinality = items; subfilters = tables; saturated = full or items > capacity).
 * [query]; [any] if concurrent. */
BK_API void bk_cuckoo_stats(const bk_cuckoo *f, bk_stats *out);

/* Accessors; f must not be NULL. [query]; [any] if concurrent. */
BK_API uint64_t bk_cuckoo_items(const bk_cuckoo *f);
BK_API uint64_t bk_cuckoo_seed(const bk_cuckoo *f);
BK_API uint32_t bk_cuckoo_tables(const bk_cuckoo *f);
/* Buckets of table i of the chain (0 = the first); 0 when i is out of range. */
BK_API uint64_t bk_cuckoo_table_buckets(const bk_cuckoo *f, uint32_t i);

/* Sizing helpers, pure: [any].
 * The FPR bound of one full table: 1 - (1 - 1/(2^f - 1))^(2b) (about 2b / 2^f); NaN for bad b or f. */
BK_API double bk_cuckoo_fpr_bound(uint32_t bucket_size, uint32_t fingerprint_bits);
/* Bits per key of a cuckoo table at load factor alpha: f / alpha; NaN for bad f or alpha. */
BK_API double bk_cuckoo_bits_per_key(uint32_t fingerprint_bits, double alpha);

#ifdef __cplusplus
}
#endif
#endif

/*
 * Experimental tier: only with BK_STATIC_LINKING_ONLY defined before the first include, or through
 * <bloomkit/experimental.h>. It may change in any release (common.h, versioning).
 */
#if defined(BK_STATIC_LINKING_ONLY) && !defined(BLOOMKIT_CUCKOO_H_STATIC)
#define BLOOMKIT_CUCKOO_H_STATIC
#ifdef __cplusplus
extern "C" {
#endif

/* Everything CF.INFO and a capacity planner want to know. */
typedef struct bk_cuckoo_info {
    uint64_t capacity;          /* keys the chain is sized for (sum over tables) */
    uint64_t items;             /* fingerprints stored now: inserted - deleted */
    uint64_t inserted;          /* successful adds since creation or clear */
    uint64_t deleted;           /* successful removes since creation or clear */
    uint64_t buckets;           /* buckets of all tables together */
    uint64_t first_buckets;     /* buckets of the first table (RedisBloom's "Number of buckets") */
    uint64_t slots;             /* buckets * bucket_size */
    uint64_t memory_bytes;      /* bytes of the tables' arrays (the serialized body is a bit larger) */
    uint64_t kicks;             /* evictions done since creation or clear */
    uint32_t tables;            /* tables in the chain (RedisBloom's "Number of filters") */
    uint32_t victims;           /* tables with fingerprints in their victim stash */
    uint32_t bucket_size;
    uint32_t fingerprint_bits;
    uint32_t max_kicks;
    uint32_t expansion;
    double load_factor;         /* items / slots */
    double fpr_target;          /* the p the filter was created for (or the bound of its bits) */
    double fpr_now;             /* expected FPR now: sum over tables of 1 - (1 - 1/(2^f - 1))^(2 b alpha_t) */
    double fpr_full;            /* the same with every table full: the bound 2b/(2^f - 1) per table */
    bool full;                  /* the next insert fails or grows the chain: the last table's stash is
                                   full, or in use at or over its capacity */
    bool concurrent;
    uint64_t seed;
} bk_cuckoo_info;

/* Fill *out. O(tables). [query]; [any] if concurrent. */
BK_API void bk_cuckoo_get_info(const bk_cuckoo *f, bk_cuckoo_info *out);

/*
 * The kick generator's state. An insert that has to evict picks its victims with a generator whose
 * state starts from the seed and moves on with every kick; the saved form (docs/FORMAT.md) does not
 * carry it, so a filter loaded from a file kicks differently from the one that was saved once both see
 * more inserts (answers stay right, the bytes differ, and a full filter without expansion may accept an
 * insert in one and refuse it in the other). A host that must keep two copies byte-identical (a
 * replica's, a restarted server's) stores the state beside the saved form and sets it after loading:
 * two filters with the same saved form and the same state make the same bytes for the same calls.
 *
 * bk_cuckoo_kick_state: the state now (never 0). [query]; not while a writer runs in concurrent mode.
 * bk_cuckoo_set_kick_state: set it. BK_EINVAL for a NULL filter or a zero state (the generator, a
 * xorshift, would stay at 0 for ever). [excl]
 */
BK_API uint64_t bk_cuckoo_kick_state(const bk_cuckoo *f);
BK_API bk_status bk_cuckoo_set_kick_state(bk_cuckoo *f, uint64_t state);

/*
 * Packed small filters: for a host that keeps thousands of small filters (the Redis module's CF keys)
 * and wants each to cost little more than its slot array. A filter of one table whose array is at most
 * BK_CUCKOO_PACKED_MAX_BYTES, made with seed 0, no concurrent mode and the FPR target of its bits (as
 * bk_cuckoo_new with fingerprint_bits set and p = 0, or bk_cuckoo_new_buckets, make it), with
 * fingerprints of at most 16 bits, at most 65,535 buckets and capacity, at most one stash entry in use
 * and fewer than 2^32 kicks and removes, packs into two parts the caller stores where it likes: a
 * 32-byte header (geometry, counts, the kick generator's state, the stash) and the exact slot array
 * (bk_cuckoo_packed_size bytes, no spare word). The packed form holds everything the filter's calls
 * and its saved form depend on: a view of it answers, changes and saves exactly as the filter it was
 * packed from (same bytes for the same calls).
 *
 * A view is a working filter built over a packed filter in caller memory (a bk_cuckoo_view, e.g. on
 * the stack): bk_cuckoo_view_open copies the array into the view (the library's bucket reads may load
 * a few bytes past an array's end, which the view provides, so the caller's array needs no spare
 * bytes) and returns a bk_cuckoo on which every call but bk_cuckoo_free and bk_cuckoo_set_concurrent
 * works. After a change, bk_cuckoo_view_close writes the view back into the packed form, or, when the
 * filter no longer fits it (it grew a second table, its stash holds more, a counter passed its width),
 * hands back an ordinary filter holding the view's state. After queries only, a view needs no closing.
 */
#define BK_CUCKOO_PACKED_MAX_BYTES 4096
#define BK_CUCKOO_PACKED_HEADER 32
typedef struct bk_cuckoo_packed {
    unsigned char bytes[BK_CUCKOO_PACKED_HEADER]; /* little-endian fields, described in packed.c */
} bk_cuckoo_packed;
/* Room for the working struct, its table record and vector, and a copy of the array with spare bytes. */
#define BK_CUCKOO_VIEW_BYTES (BK_CUCKOO_PACKED_MAX_BYTES + 512)
typedef struct bk_cuckoo_view {
    union {
        uint64_t align_;
        unsigned char space[BK_CUCKOO_VIEW_BYTES];
    } u;
} bk_cuckoo_view;

/* Bytes of f's packed array (its exact slot array), or 0 when f cannot be packed (see above). [query] */
BK_API size_t bk_cuckoo_packed_size(const bk_cuckoo *f);
/* Bytes of the packed array a header describes (what bk_cuckoo_packed_size said when it was packed), 0
 * for a header bk_cuckoo_pack did not write. [any] */
BK_API size_t bk_cuckoo_packed_array_size(const bk_cuckoo_packed *hdr);
/* Pack f into *hdr and words[0 .. len), len = bk_cuckoo_packed_size(f). f is unchanged (free it when
 * the packed form replaces it). BK_EINVAL: NULL arguments, f cannot be packed, or len is not its size.
 * [query] */
BK_API bk_status bk_cuckoo_pack(const bk_cuckoo *f, bk_cuckoo_packed *hdr, void *words, size_t len);
/* Build a view of the packed filter (hdr, words[0 .. len)) in *view and return its filter; allocator:
 * what a change that grows the filter allocates with (NULL: the default). NULL when the header is not
 * one bk_cuckoo_pack wrote or len is not its array's size. The view lives in *view: it must not move
 * while used. [any] (it reads hdr and words) */
BK_API bk_cuckoo *bk_cuckoo_view_open(bk_cuckoo_view *view, const bk_cuckoo_packed *hdr, const void *words,
                                      size_t len, const bk_allocator *allocator);
/* End a view after changes. When its filter still fits the packed form: *hdr and words[0 .. len) (the
 * view's own packed filter) are rewritten, *full = NULL. Otherwise *full is a new ordinary filter with
 * the view's state (it takes over the tables the view grew), and the caller's packed storage is no
 * longer used. BK_OK either way; BK_EINVAL for NULL arguments; BK_ENOMEM: the ordinary filter could not
 * be allocated, nothing changed, the view is still open (close it again, or bk_cuckoo_view_discard it,
 * losing its changes). [excl] */
BK_API bk_status bk_cuckoo_view_close(bk_cuckoo_view *view, bk_cuckoo_packed *hdr, void *words, size_t len,
                                      bk_cuckoo **full);
/* End a view without keeping its changes: frees what it grew. [excl] */
BK_API void bk_cuckoo_view_discard(bk_cuckoo_view *view);
/* A new ordinary filter from a packed one (a view's state, allocated with `allocator`). BK_EINVAL for a
 * header bk_cuckoo_pack did not write or a wrong len, BK_ENOMEM. [any] */
BK_API bk_status bk_cuckoo_unpack(const bk_cuckoo_packed *hdr, const void *words, size_t len,
                                  const bk_allocator *allocator, bk_cuckoo **out);

#ifdef __cplusplus
}
#endif
#endif /* BK_STATIC_LINKING_ONLY */
