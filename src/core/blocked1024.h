/* The scalable chain's blocked sub-filters: 1024-bit blocks (two cache lines), k probes anywhere in
 * the block. Sizing and exact FPR with the blocked filter's mixture formula (blocked_math.c). Not
 * installed. */
#ifndef BK_BLOCKED1024_H
#define BK_BLOCKED1024_H

#include "core/base.h"

struct bk_geometry;
/* out->fpr: within 1e-6 of bk__blocked1024_fpr's value (the closed form's, see blocked_math.c). */
BK_HIDDEN bk_status bk__blocked1024_size(uint64_t n, double p, struct bk_geometry *out);
/* bk_blocked_size for callers that use only m and k: out->fpr as for bk__blocked1024_size. */
BK_HIDDEN bk_status bk__blocked_size_mk(uint64_t n, double p, int layout_code, struct bk_geometry *out);
BK_HIDDEN double bk__blocked1024_fpr(uint64_t m, uint64_t n, uint32_t k);
/* The same with the exact in-block term (blocked_math.c's inner()): 1-4% above bk__blocked1024_fpr,
 * which the sizing keeps (a chain's geometry is derived from it at load). The FPR a sub-filter of m
 * bits really has at n keys on average: what the chain reports as its error and bound. */
BK_HIDDEN double bk__blocked1024_fpr_exact(uint64_t m, uint64_t n, uint32_t k);
/* The FPR of a sub-filter's bits as they are: the mean over its blocks of (bits set / 1024)^k. */
BK_HIDDEN double bk__blocked1024_fpr_of_bits(const uint64_t *words, uint64_t blocks, uint32_t k);

#endif
