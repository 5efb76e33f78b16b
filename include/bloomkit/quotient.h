/*
 * bloomkit: the quotient filter (rank-and-select layout, variable-length counters): a filter that
 * counts, deletes, grows, merges and lists its contents without the original keys.
 *
 * The filter has S home slots (any count from 128 to 2^31) of r remainder bits. Each key's 64-bit
 * hash h gives the fingerprint F = floor(h S 2^r / 2^64), the top bits of the product h x S: the
 * quotient F >> r = floor(h S / 2^64) is the key's home slot, the low r bits of F its remainder,
 * stored in a slot. F grows with h, so fingerprints keep the order of the hashes (enumeration, merge
 * and doubling rely on it); when S = 2^q, F is simply the top q + r bits of h. The remainders of one
 * quotient form a sorted run; runs are kept in quotient order, shifted right past their home slot
 * when slots before it are taken. Per 64 slots the filter keeps an "occupied" word (which quotients
 * have a run), a "run end" word (which slots end a run) and an 8-bit offset (how far the run of the
 * block's first quotient reaches past the block's start; 255 stands for 255 or more, the value then
 * found from the blocks before), so a query finds its run with one rank (popcount) and one select,
 * and a slot costs r + 2.125 bits. The remainder value 0 is stored as 1
 * (the counters below use 0 as a marker), which makes the fingerprint space S x (2^r - 1) with the
 * value 1 twice as likely as the others.
 *
 * False positives: a key that was not added is reported present when an added key has the same
 * fingerprint. With n keys added, the FPR is
 *     1 - exp(-(n / S) (2^r + 2) / 4^r)        (about load x 2^-r)
 * (bk_quotient_fpr_slots); with d distinct fingerprints stored it is d (2^r + 2) / (S 4^r)
 * (bk_stats.fpr_now; docs/MATH.md). Sizing picks the fewest slots S >= n / max_load (max_load 0.95 by
 * default) and the fewest remainder bits that keep this at most p with n keys: at p = 1% that is
 * r = 7 and 9.6 to 10.0 bits per key at any n from 10^4 (options.power_of_two_slots rounds S up
 * to a power of two, as 1.0 did: up to twice the memory, but a file that 1.0 readers load).
 *
 * Files: a filter of any slot count saves in body 4 (8-bit offsets, docs/FORMAT.md 6.8), one of the
 * 1.0 layout in the 1.0 body (32-bit offsets: r + 2.5 bits per slot on disk), one loaded from the
 * earlier body for any slot count in that body again. Files of the earlier bodies load as before
 * (converted to the 8-bit layout); a read-only mapping of such a file converts its array into
 * memory when it opens, one of body 4 is used in place.
 *
 * Counting: an entry is the remainder x once (count 1), twice (count 2), or x, 0, digits, x for
 * counts of 3 and more, the digits being count - 3 in base 2^r - 1 (most significant first; a digit
 * never equals x). A key added a million times costs 3 + log_(2^r - 1)(10^6) slots: 6 slots at r = 7.
 * Counts saturate at UINT64_MAX.
 *
 * Growth (bk_quotient_grow) doubles the slots without the keys: one remainder bit moves into the
 * quotient (2S slots, r - 1). The FPR at a given number of keys is unchanged (the fingerprint keeps its
 * q + r bits), but the doubled filter holds twice the keys at the same load, so at equal load each
 * doubling doubles the FPR: after g doublings, filled to the same load, the bound is that of r - g
 * remainder bits. A filter keeps its error rate through g doublings when it is made with g remainder
 * bits more than the fewest (options.remainder_bits; g bits per slot more); bk_quotient_grown_fpr
 * gives the bound a doubling leads to, and bk_quotient_grow_keep_fpr grows only while the error rate
 * holds and refuses beyond (as the Redis module's BK.QF.ADD and `bloomkit grow` do). Growth is
 * refused (BK_ETOOBIG) when r would drop below BK_QUOTIENT_MIN_RBITS or the slots exceed
 * 2^BK_QUOTIENT_MAX_QBITS.
 *
 * Growth past the planned room (bk_quotient_expand) keeps the error rate however often it runs: the
 * first table doubles in place while its bound at the load limit stays within p; after that each
 * expansion adds a stage, a new table as large as all before it together (the capacity doubles),
 * sized for the error rate 4 B / ((i + 3)(i + 4)) for stage i = 1, 2, ..., where B = 1.1 p - min(b0, p)
 * and b0 is the first table's bound at its load limit. Those targets sum to B, so the filter's bound
 * stays within 1.1 p at any size when b0 <= p (a filter filled to the capacity it was sized for), and
 * within b0 + 0.1 p otherwise (a small filter whose 128 slots take more keys than it was sized for,
 * or one bk_quotient_grow took past p: the stages add at most 0.1 p). Inserts go to the newest stage (constant time); queries, counts and removals
 * look in every stage: 1 + log2(N / N0) tables once past the planned room (N0: the capacity where it ran
 * out), the newest (about half the keys) first; a batch call goes stage by stage. A later stage needs more remainder bits (about 2 log2(i + 3.5) - 2 + log2(1 / B)): at p = 1%
 * a filter grown 2^10 times takes about 1.7 times the bits per key of one made for its size
 * (docs/MATH.md). A filter of stages saves as body 3 (docs/FORMAT.md), counts, removes, clones and
 * grows further; it cannot be merged (BK_ENOTSUP) or enumerated (foreach returns -1), having no
 * one fingerprint space. bk_quotient_grow (spend the error rate) and bk_quotient_grow_keep_fpr
 * (refuse past the planned room) keep their behaviour.
 *
 * Full load: inserts that would use more than max_load x S slots, or need a slot past the
 * physical end (the runs of the last quotients spill into a few hundred spare slots; docs/FORMAT.md), return
 * BK_EFULL and change nothing; every key added before stays present. An insert moves the slots
 * between its place and the next free slot, 64 at a time; that distance grows as the filter fills
 * (about 1 / (1 - load)^2): at max_load 0.95 an insert at 94-95% load costs about 2.6 times the
 * instructions of one at 45-50% (about 3 times the time; bench/README.md).
 *
 * Removal: remove only keys that were added (and not more often than they were added). Removing a
 * key that was never added but shares the fingerprint of an added key removes that key's evidence
 * (a false negative), as for the counting and cuckoo filters.
 *
 * Fast paths: select within a word by PDEP and TZCNT (BMI2) when the CPU has it, chosen when a filter
 * is made; the portable path is always built and gives the same answers and the same bytes.
 * BK_SIMD=scalar in the environment (read once per process), bk_simd_force(BK_SIMD_SCALAR) before the
 * filter is made, or bk_quotient_set_path (experimental tier, below) forces the portable path.
 *
 * Thread-safety: see the legend in common.h. There are no atomic inserts: writers need exclusion.
 */
#ifndef BLOOMKIT_QUOTIENT_H
#define BLOOMKIT_QUOTIENT_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BK_QUOTIENT_MIN_QBITS 7
#define BK_QUOTIENT_MAX_QBITS 31
#define BK_QUOTIENT_MIN_RBITS 2
#define BK_QUOTIENT_MAX_RBITS 32
#define BK_QUOTIENT_DEFAULT_MAX_LOAD 0.95
#define BK_QUOTIENT_MIN_MAX_LOAD 0.25 /* a max_load below it is refused (BK_EINVAL) */
#define BK_QUOTIENT_KEEP_FPR 1.1      /* bk_quotient_grow_keep_fpr: how far a doubling may raise the error rate */

typedef struct bk_quotient bk_quotient;

typedef struct bk_quotient_options {
    size_t struct_size;   /* BK_QUOTIENT_OPTIONS_INIT sets it; 0 means this header's size (common.h) */
    const bk_allocator *allocator; /* NULL: the default (malloc); see common.h */
    uint64_t seed;           /* hash seed; 0 is a fine default */
    double max_load;         /* fraction of the S slots inserts may use, in [0.25, 1]; 0 means 0.95 */
    uint32_t remainder_bits; /* 0: the fewest that give p at n keys; else 2..32 (more: room to grow) */
    uint32_t power_of_two_slots; /* nonzero: bk_quotient_new/size round S up to a power of two (the
                                    1.0 layout, which 1.0 readers load; since 1.1) */
} bk_quotient_options;
#define BK_QUOTIENT_OPTIONS_INIT BK_OPTIONS_INIT_(bk_quotient_options)

typedef struct bk_quotient_geometry {
    uint32_t quotient_bits;  /* bits of a quotient: ceil(log2 S) (q when S = 2^q) */
    uint32_t remainder_bits; /* r */
    uint64_t slots;          /* S, the home slots */
    uint64_t physical_slots; /* S plus the spare slots runs may spill into */
    uint64_t max_slots_used; /* floor(max_load * S) */
    uint64_t bytes;          /* the slot array */
    double fpr;              /* the FPR at n distinct keys (formula in the header comment) */
    double bits_per_key;     /* bytes * 8 / n */
} bk_quotient_geometry;

/* Geometry for n keys at false-positive rate p (opts may be NULL). Errors: BK_EINVAL (n = 0, p not
 * in (0,1), bad options), BK_ETOOBIG (more than 2^31 slots, or more than 32 remainder bits needed,
 * or above BK_MAX_FILTER_BYTES). [any] */
BK_API bk_status bk_quotient_size(uint64_t n, double p, const bk_quotient_options *opts,
                                  bk_quotient_geometry *out);
/* Geometry of the table an expanding filter (bk_xquotient_new, below) starts as for `capacity` keys at
 * p: the table bk_xquotient_new makes. slots as bk_quotient_size gives them; remainder_bits the slot
 * width w, the narrowest whose keys at the load limit keep the bound within the share of p the width
 * schedule gives the table before any doubling; fpr the bound at `capacity` keys, capacity 2^(1 - w) / S.
 * opts as for bk_xquotient_new (may be NULL; remainder_bits must be 0); out may be NULL. Errors:
 * BK_EINVAL (capacity 0, p not in (0,1), bad options), BK_ETOOBIG. [any] (since 1.1) */
BK_API bk_status bk_xquotient_size(uint64_t capacity, double p, const bk_quotient_options *opts,
                                   bk_quotient_geometry *out);
/* The FPR with d keys added (the formula above) in 2^q slots of r remainder bits. [any] */
BK_API double bk_quotient_fpr(uint64_t d, uint32_t quotient_bits, uint32_t remainder_bits);
/* The same for S slots (any count; NAN for 0 slots or r outside 1..63). [any] (since 1.1) */
BK_API double bk_quotient_fpr_slots(uint64_t d, uint64_t slots, uint32_t remainder_bits);

/* Create for n keys at p. Errors as bk_quotient_size, plus BK_ENOMEM; on error *out is NULL. [any] */
BK_API bk_status bk_quotient_new(uint64_t n, double p, const bk_quotient_options *opts, bk_quotient **out);
/* Create with explicit q and r (opts->remainder_bits is ignored). Errors: BK_EINVAL (out NULL, bad
 * options, q below BK_QUOTIENT_MIN_QBITS, r outside BK_QUOTIENT_MIN_RBITS..BK_QUOTIENT_MAX_RBITS),
 * BK_ETOOBIG (q above BK_QUOTIENT_MAX_QBITS, or above BK_MAX_FILTER_BYTES), BK_ENOMEM; on error
 * *out is NULL. [any] */
BK_API bk_status bk_quotient_new_qr(uint32_t quotient_bits, uint32_t remainder_bits,
                                    const bk_quotient_options *opts, bk_quotient **out);
/* Create with S = `slots` home slots (128 .. 2^31, any count) and r remainder bits; errors as
 * bk_quotient_new_qr. A filter of 2^q slots made here saves in body 4 (docs/FORMAT.md 6.8),
 * bk_quotient_new_qr's in the 1.0 body. [any] (since 1.1) */
BK_API bk_status bk_quotient_new_slots(uint64_t slots, uint32_t remainder_bits, const bk_quotient_options *opts,
                                       bk_quotient **out);
/* Free; NULL is fine. [excl] */
BK_API void bk_quotient_free(bk_quotient *f);
/* A deep copy (always in memory), made with f's allocator. BK_EINVAL if f or out is NULL, BK_ENOMEM.
 * [query] */
BK_API bk_status bk_quotient_clone(const bk_quotient *f, bk_quotient **out);

/* Insert one occurrence. BK_EFULL (nothing changed) when the filter is full; BK_EINVAL for a NULL f or
 * a NULL key with len > 0. [excl] */
BK_API bk_status bk_quotient_add(bk_quotient *f, const void *key, size_t len);
BK_API bk_status bk_quotient_add_hash(bk_quotient *f, uint64_t hash);
/* Insert `count` occurrences at once (count 0: BK_EINVAL). [excl] */
BK_API bk_status bk_quotient_add_count_hash(bk_quotient *f, uint64_t hash, uint64_t count);

/* Remove one occurrence: BK_ENOTFOUND (nothing changed) when the fingerprint is absent. Only remove
 * keys that were added: see the header comment. [excl] */
BK_API bk_status bk_quotient_remove(bk_quotient *f, const void *key, size_t len);
BK_API bk_status bk_quotient_remove_hash(bk_quotient *f, uint64_t hash);
/* Remove `count` occurrences: BK_ENOTFOUND (nothing changed) when fewer are present. [excl] */
BK_API bk_status bk_quotient_remove_count_hash(bk_quotient *f, uint64_t hash, uint64_t count);

/* Query: true if probably present. f must not be NULL; key may be NULL only when len is 0. [query] */
BK_API bool bk_quotient_contains(const bk_quotient *f, const void *key, size_t len);
BK_API bool bk_quotient_contains_hash(const bk_quotient *f, uint64_t hash);

/* uint64 keys: the same answers as the byte forms on the key's 8 little-endian bytes
 * (bk_quotient_add_u64(f, k) is bk_quotient_add(f, &k_le, 8)), so the two forms mix on one filter
 * and in files. The hash is XXH3 at the constant length 8 (bk_hash64 of those bytes) without the
 * byte forms' length dispatch. Errors and thread-safety as the byte forms: add [excl], remove
 * [excl], contains [query]. */
BK_API bk_status bk_quotient_add_u64(bk_quotient *f, uint64_t key);
BK_API bk_status bk_quotient_remove_u64(bk_quotient *f, uint64_t key);
BK_API bool bk_quotient_contains_u64(const bk_quotient *f, uint64_t key);
/* How many times the key's fingerprint was added (0: certainly absent). Never below the true count
 * of an added key; above it only when other keys share its fingerprint. 0 for f NULL, or key NULL
 * with len > 0. [query] */
BK_API uint64_t bk_quotient_count(const bk_quotient *f, const void *key, size_t len);
BK_API uint64_t bk_quotient_count_hash(const bk_quotient *f, uint64_t hash);

/* Batches (common.h, "Batches"): hash all keys first, prefetch, then probe. add stops at the first
 * key that does not fit (BK_EFULL), remove at the first key that is certainly absent (BK_ENOTFOUND),
 * each with *done = that key's index. count_hashes writes counts[i] = bk_quotient_count_hash(f,
 * hashes[i]) (BK_EINVAL for f NULL, or a NULL array with n > 0). [excl] for adds and removes, [query]
 * for contains and counts. */
BK_API bk_status bk_quotient_add_many(bk_quotient *f, const void *const *keys, const size_t *lens, size_t n,
                                      size_t *done);
BK_API bk_status bk_quotient_add_hashes(bk_quotient *f, const uint64_t *hashes, size_t n, size_t *done);
BK_API bk_status bk_quotient_remove_many(bk_quotient *f, const void *const *keys, const size_t *lens, size_t n,
                                         size_t *done);
BK_API bk_status bk_quotient_remove_hashes(bk_quotient *f, const uint64_t *hashes, size_t n, size_t *done);
BK_API bk_status bk_quotient_contains_many(const bk_quotient *f, const void *const *keys, const size_t *lens,
                                           size_t n, uint8_t *results, size_t *hits);
BK_API bk_status bk_quotient_contains_hashes(const bk_quotient *f, const uint64_t *hashes, size_t n,
                                             uint8_t *results, size_t *hits);
BK_API bk_status bk_quotient_count_hashes(const bk_quotient *f, const uint64_t *hashes, size_t n,
                                          uint64_t *counts);

/* Remove everything; NULL is fine. [excl] */
BK_API void bk_quotient_clear(bk_quotient *f);

/* Double the slots without the keys (2S, r - 1; see the header comment for the FPR cost). The
 * capacity doubles; the FPR target stays the one the filter was made for, so when the doubled filter
 * fills past it, bk_quotient_stats says so (fpr_now above fpr_target, saturated). To grow only while
 * the error rate holds, compare bk_quotient_grown_fpr(f, 1) with the target first.
 * Errors: BK_ETOOBIG (the limits above, or too many bytes), BK_ENOMEM; on error f is unchanged. [excl] */
BK_API bk_status bk_quotient_grow(bk_quotient *f);
/* The FPR bound at the load limit after `doublings` more doublings in place (0: at the load limit now):
 * bk_quotient_fpr_slots(floor(max_load 2^g S), 2^g S, r - g), plus, for a filter of stages, the
 * earlier stages' bounds at their load limits. NAN when g >= r. Remainder bits planned beyond the
 * fewest (options.remainder_bits) keep it within the target for as many doublings. For an
 * expanding filter: the bound filled at its width now (g = 0), or the bound its width schedule keeps
 * after g more doublings (p (d + 1) / (d + 7), d the doublings then), within p either way.
 * [query] (since 1.1) */
BK_API double bk_quotient_grown_fpr(const bk_quotient *f, uint32_t doublings);
/* Growth that keeps the error rate: doubles as bk_quotient_grow only when the doubled filter's bound
 * at the load limit stays within BK_QUOTIENT_KEEP_FPR x the target (bk_quotient_grown_fpr(f, 1) <=
 * 1.1 bk_quotient_fpr_target(f)), which holds for as many doublings as remainder bits were planned;
 * else BK_EFULL and f unchanged (full at its error rate: bk_quotient_grow spends it). Other errors as
 * bk_quotient_grow. [excl] (since 1.1) */
BK_API bk_status bk_quotient_grow_keep_fpr(bk_quotient *f);

/* Double the capacity keeping the FPR bound within 1.1 x the target at any size (the header
 * comment): in place while the first table's planned remainder bits last, else a new stage. Errors:
 * BK_ETOOBIG (64 stages, or a stage beyond the slot and remainder-bit limits), BK_ENOMEM; on error f
 * is unchanged. [excl] (since 1.1) */
BK_API bk_status bk_quotient_expand(bk_quotient *f);
/* The tables a query looks in: 1, or 1 + the stages bk_quotient_expand added. [query] (since 1.1) */
BK_API uint32_t bk_quotient_stages(const bk_quotient *f);

/* dst += src by one linear sweep over both: counts of equal fingerprints add up. Both need the same
 * seed; src's fingerprints are converted to dst's, which needs src's fingerprint space S_s 2^r_s to
 * be dst's S 2^r times a power of two (filters sized alike, or one grown from the other), and
 * r_s >= r when the spaces are equal: a grown filter takes the contents of
 * the filter it grew from (or a copy of it), not the other way round (the stored remainder 1 may
 * stand for 0, and that last bit cannot move into a longer remainder). To merge two filters grown a
 * different number of times, merge into the more grown one. Errors: BK_EINCOMPAT (seed, fingerprint
 * lengths), BK_ENOTSUP (either is a filter of stages), BK_EFULL (the union does not fit in dst's load limit: grow dst first), BK_ENOMEM; on
 * error dst is unchanged. [excl] on dst, [query] on src. */
BK_API bk_status bk_quotient_union(bk_quotient *dst, const bk_quotient *src);
/* BK_OK if src could be merged into dst, else BK_EINCOMPAT (BK_ENOTSUP for a filter of stages,
 * BK_EINVAL for NULL). [query] */
BK_API bk_status bk_quotient_compatible(const bk_quotient *dst, const bk_quotient *src);

/* Enumeration in increasing fingerprint order: fn(fingerprint, count, ctx) once per distinct
 * fingerprint, where fingerprint = quotient << r | remainder (floor(h S 2^r / 2^64) for the key's hash
 * h: the top q + r bits of h when S = 2^q; a remainder of 0 stored as 1). fn returns 0 to go on,
 * anything else to stop (returned). 0, with nothing visited, when f or fn is NULL; -1, with nothing
 * visited, for a filter of stages (bk_quotient_stages above 1).
 * [query] */
typedef int (*bk_quotient_visit_fn)(uint64_t fingerprint, uint64_t count, void *ctx);
BK_API int bk_quotient_foreach(const bk_quotient *f, bk_quotient_visit_fn fn, void *ctx);
/* Insert, `count` times, a fingerprint as foreach gives it from a filter of qbits and rbits (with the
 * same seed); with foreach this converts, resizes or merges filters offline. The conversion rule is
 * merge's: BK_EINCOMPAT when the fingerprint cannot be converted; BK_EINVAL for count 0, bits above
 * qbits + rbits, qbits + rbits > 64; BK_EFULL as for add. [excl] */
BK_API bk_status bk_quotient_add_fingerprint(bk_quotient *f, uint64_t fingerprint, uint32_t qbits, uint32_t rbits,
                                             uint64_t count);
/* The same for a fingerprint of a filter of `slots` home slots (any count) and rbits: bits past
 * slots x 2^rbits, or slots x 2^rbits above 2^64, are BK_EINVAL. [excl] (since 1.1) */
BK_API bk_status bk_quotient_add_fingerprint_slots(bk_quotient *f, uint64_t fingerprint, uint64_t slots,
                                                   uint32_t rbits, uint64_t count);

/* Statistics (for a filter of stages, sums over its stages: bits, capacity, count, memory, fill as
 * slots used over slots, fpr_now; k is the newest stage's): k = remainder bits, bits = S slots, fill_ratio the load (slots used / S), count the
 * occurrences added (sum of counts), est_cardinality the distinct keys estimated from the distinct
 * fingerprints, fpr_now the bound at the distinct fingerprints, saturated when the load is within 2%
 * of max_load or fpr_now is above the target. [query] */
BK_API void bk_quotient_stats(const bk_quotient *f, bk_stats *out);

/* Accessors; f must not be NULL. For a filter of stages the geometry (bits, slots, slots used) is the
 * newest stage's, distinct, total and memory the sums, fpr_target the first stage's. [query] */
BK_API uint32_t bk_quotient_quotient_bits(const bk_quotient *f);
BK_API uint32_t bk_quotient_remainder_bits(const bk_quotient *f);
BK_API uint64_t bk_quotient_slots(const bk_quotient *f); /* S, the home slots (since 1.1) */
BK_API uint64_t bk_quotient_slots_used(const bk_quotient *f);
BK_API uint64_t bk_quotient_distinct(const bk_quotient *f); /* distinct fingerprints */
BK_API uint64_t bk_quotient_total(const bk_quotient *f);    /* occurrences (sum of counts) */
BK_API uint64_t bk_quotient_seed(const bk_quotient *f);
BK_API double bk_quotient_max_load(const bk_quotient *f);
BK_API double bk_quotient_fpr_target(const bk_quotient *f); /* the FPR it was made for (since 1.1) */
/* Bytes of the slot array; once some block's offset has reached 255 (a cluster of 255 slots past a
 * block's start: load limits near 1), also the table of every block's true offset kept beside it (4
 * bytes per 64 slots, in memory only) */
BK_API uint64_t bk_quotient_memory(const bk_quotient *f);

/*
 * Expanding quotient filter (since 1.1): one quotient table that doubles without losing its error
 * rate, for a set whose final size is not known. Each slot of w bits holds a fingerprint of up to
 * w - 1 bits and its length (a 1 after the fingerprint, zeros below it); a doubling moves each
 * entry's first fingerprint bit into its quotient, so the entry keeps its place in the fingerprint
 * order and its share of false positives, while the table's new slots give later keys w - 1 bits
 * again. A doubling may widen the slots (w + 1 or more) so that the bound, the sum over stored keys
 * of 2^-L / S, stays within p (p (g + 1) / (g + 7) after g doublings) however often it doubles. A
 * filter whose p would give it slots narrower than 11 bits (p above about 1.3%) starts at 11 and
 * narrows one bit a doubling while the bound allows it, so no fingerprint runs out in its first ten
 * doublings. An entry whose fingerprint runs out matches any key of its home slot and is copied to
 * both halves at the next doubling; those copies are bounded by the bound itself (each adds 1 / S
 * to it: at most p S of them). A query reads one run of the one table, as a quotient filter sized for its keys;
 * an insert is one quotient-filter insert, and the insert that finds the table at its load limit
 * doubles it first (every entry moved once: constant time per key amortized, the doubling itself
 * linear, with the old and the new table both held while it runs). At p = 1% a filter made for N0
 * keys and grown to 2^10 N0 takes 1.44 times the bits per key of a quotient filter made for its
 * size (w = 11), at 0.1% 1.41 times (w = 15), at 10% 1.49 times (w = 7) (docs/MATH.md).
 * An expanding filter is a quotient filter (the same struct): the bk_quotient_* calls take it
 * (add, contains, count, batches, clone, clear, stats; bk_quotient_expand doubles it), and so does
 * bk_filter_wrap with BK_TYPE_QUOTIENT (saved in body 5, docs/FORMAT.md). Refused on it: removal
 * (BK_ENOTSUP: an entry may stand for many keys), bk_quotient_grow (BK_ENOTSUP), union
 * (BK_ENOTSUP), add_fingerprint (BK_ENOTSUP); foreach returns -1.
 */
typedef struct bk_quotient bk_xquotient;

/* Create for `capacity` keys before the first doubling at error rate p. opts as for bk_quotient_new
 * (allocator, seed, max_load, power_of_two_slots); remainder_bits must be 0 (the width is chosen
 * from p). Errors: BK_EINVAL (capacity 0, p not in (0,1), bad options), BK_ETOOBIG, BK_ENOMEM; on
 * error *out is NULL. [any] */
BK_API bk_status bk_xquotient_new(uint64_t capacity, double p, const bk_quotient_options *opts,
                                  bk_xquotient **out);
/* Free; NULL is fine. [excl] */
BK_API void bk_xquotient_free(bk_xquotient *f);
/* Add a key (or its 64-bit hash with the filter's seed, as bk_hash64 gives it); a table at its load
 * limit doubles first. Errors: BK_EINVAL, BK_ETOOBIG (more than 2^31 slots), BK_ENOMEM; on error
 * the key is not added and the filter answers as before. [excl] */
BK_API bk_status bk_xquotient_add(bk_xquotient *f, const void *key, size_t len);
BK_API bk_status bk_xquotient_add_hash(bk_xquotient *f, uint64_t hash);
/* Double now (as an insert does at the load limit). Errors as add. [excl] */
BK_API bk_status bk_xquotient_expand(bk_xquotient *f);
/* Membership: never false for a key added. [query] */
BK_API bool bk_xquotient_contains(const bk_xquotient *f, const void *key, size_t len);
BK_API bool bk_xquotient_contains_hash(const bk_xquotient *f, uint64_t hash);
/* n hashes at once, prefetching ahead: results[i] (when results is not NULL) 1 or 0; returns the
 * hits. [query] */
BK_API size_t bk_xquotient_contains_hashes(const bk_xquotient *f, const uint64_t *hashes, size_t n,
                                           uint8_t *results);
/* How many times the hash may have been added: the counts of every entry it matches (at least its
 * true count). [query] */
BK_API uint64_t bk_xquotient_count_hash(const bk_xquotient *f, uint64_t hash);
/* Keys added; doublings; the slot width w; home slots; slots in use (entries, counters and copies);
 * the FPR bound now (the sum above); the error rate it was made for; bytes it holds. [query] */
BK_API uint64_t bk_xquotient_keys(const bk_xquotient *f);
BK_API uint32_t bk_xquotient_doublings(const bk_xquotient *f);
BK_API uint32_t bk_xquotient_slot_bits(const bk_xquotient *f);
BK_API uint64_t bk_xquotient_slots(const bk_xquotient *f);
BK_API uint64_t bk_xquotient_slots_used(const bk_xquotient *f);
BK_API double bk_xquotient_fpr_bound(const bk_xquotient *f);
BK_API double bk_xquotient_fpr_target(const bk_xquotient *f);
BK_API uint64_t bk_xquotient_memory(const bk_xquotient *f);
/* Whether f is an expanding filter (bk_xquotient_new, or loaded from body 5). [query] */
BK_API bool bk_quotient_expanding(const bk_quotient *f);

#ifdef __cplusplus
}
#endif
#endif

/*
 * Experimental tier: only with BK_STATIC_LINKING_ONLY defined before the first include, or through
 * <bloomkit/experimental.h>. It may change in any release (common.h, versioning).
 */
#if defined(BK_STATIC_LINKING_ONLY) && !defined(BLOOMKIT_QUOTIENT_H_STATIC)
#define BLOOMKIT_QUOTIENT_H_STATIC
#ifdef __cplusplus
extern "C" {
#endif

/* Code paths for rank and select. AUTO: BMI2 when the CPU has it, unless BK_SIMD=scalar. */
typedef enum bk_quotient_path {
    BK_QUOTIENT_AUTO = 0,
    BK_QUOTIENT_PORTABLE = 1,
    BK_QUOTIENT_BMI2 = 2
} bk_quotient_path;

/* The path a filter uses (never AUTO). [query] */
BK_API bk_quotient_path bk_quotient_path_of(const bk_quotient *f);
/* Change one filter's path (AUTO: the default choice). BK_ENOTSUP for BMI2 on a CPU without it,
 * BK_EINVAL for f NULL or an unknown value. [excl] */
BK_API bk_status bk_quotient_set_path(bk_quotient *f, bk_quotient_path path);
/* [any] true when this CPU can run the BMI2 path. */
BK_API bool bk_quotient_bmi2_available(void);

#ifdef __cplusplus
}
#endif
#endif /* BK_STATIC_LINKING_ONLY */
