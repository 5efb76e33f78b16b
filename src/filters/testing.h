/* The filter types' entry points for the unit tests only (the library itself never calls them); the
 * core's are in core/hooks.h. Not installed. */
#ifndef BK_TESTING_H
#define BK_TESTING_H

#include "core/base.h"

/* For tests: fingerprint and buckets of hash h in table t of a cuckoo chain. */
struct bk_cuckoo;
BK_HIDDEN void bk__cuckoo_place(const struct bk_cuckoo *f, uint32_t t, uint64_t h, uint32_t *fp, uint64_t *i1,
                                uint64_t *i2);
/* For tests: the semi-sorted bucket code of the non-decreasing nibbles n0..n3 (cuckoo_impl.h). */
BK_HIDDEN uint32_t bk__cuckoo_semi_code(uint32_t n0, uint32_t n1, uint32_t n2, uint32_t n3);
/* The quotient filter's full invariant check, and its slot array. */
struct bk_quotient;
BK_HIDDEN bk_status bk__quotient_check(const struct bk_quotient *f);
BK_HIDDEN const uint64_t *bk__quotient_words(const struct bk_quotient *f, size_t *nwords);
/* The Ribbon filter's slots per key minus 1, when nonzero (negative: none at all; body 3: a last layer
 * of one slot a key): the tests' way to make construction fail and take its retry and growth path. */
BK_HIDDEN extern double bk__ribbon_slack;
/* True: Ribbon filters made from now on query and solve without the POPCNT instruction (the tests
 * compare both paths bit for bit). */
BK_HIDDEN extern bool bk__ribbon_portable;
/* When nonzero, the keys per shard the Ribbon filter's sharded construction aims at (sets of twice as
 * many keys and more are sharded): the tests' way to make small sharded filters. */
BK_HIDDEN extern uint64_t bk__ribbon_shard_keys;
/* The Ribbon body new builds of n >= 1 keys get: 0 the default (body 3), 1 or 2 the older bodies as
 * before (body 1 below 2 * shard keys, else body 2): the tests' way to make the older bodies. */
BK_HIDDEN extern int bk__ribbon_body;

#endif
