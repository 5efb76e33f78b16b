/*
 * bloomkit: sizing math for the classic Bloom filter. All functions are pure: [any].
 *
 * Sizing rounds nothing but to whole bits: m = ceil(-n ln p / (ln 2)^2), k = round((m / n) ln 2)
 * clamped to [1, BK_MAX_K]. Memory is then m rounded up to a multiple of 512 bits (one cache line).
 * Every sizing result carries the FPR that geometry really gives under the exact formula.
 */
#ifndef BLOOMKIT_MATH_H
#define BLOOMKIT_MATH_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BK_MAX_K 64

typedef struct bk_geometry {
    uint64_t m;        /* bits */
    uint32_t k;        /* probes */
    uint64_t n;        /* keys it is sized for */
    double fpr;        /* the FPR this (m, n, k) really gives (exact formula of the layout) */
    double bits_per_key;
} bk_geometry;

/* Optimal (m, k) for n keys at false-positive rate p in (0, 1). BK_EINVAL for n = 0, a bad p or out
 * NULL; BK_ETOOBIG when m would reach BK_MAX_FILTER_BYTES. */
BK_API bk_status bk_bloom_size(uint64_t n, double p, bk_geometry *out);
/* The same for the partitioned layout (m rounded up to a multiple of k; exact formula of slices). */
BK_API bk_status bk_bloom_size_partitioned(uint64_t n, double p, bk_geometry *out);

/* Exact FPR of a standard filter: (1 - (1 - 1/m)^(k n))^k. NaN for m = 0 or k = 0. */
BK_API double bk_bloom_fpr_exact(uint64_t m, uint64_t n, uint32_t k);
/* Exponential approximation: (1 - e^(-k n / m))^k. */
BK_API double bk_bloom_fpr_approx(uint64_t m, uint64_t n, uint32_t k);
/* Exact FPR of the partitioned layout: k slices of m/k bits, (1 - (1 - k/m)^n)^k. */
BK_API double bk_bloom_fpr_partitioned(uint64_t m, uint64_t n, uint32_t k);

/* The most keys (m, k) can hold with an exact FPR at most p (k = 0: the best k for each n). */
BK_API uint64_t bk_bloom_capacity(uint64_t m, uint32_t k, double p);

/* (Blocked filters size with their own exact formula: bk_blocked_size, bk_blocked_capacity and
 * bk_blocked_fpr in blocked.h.) */

/* Bits per key of the optimal classic filter at p: -ln p / (ln 2)^2. */
BK_API double bk_bloom_bits_per_key(double p);

/* Optimal k for a bits-per-key ratio: round(ratio * ln 2), clamped to [1, BK_MAX_K]. */
BK_API uint32_t bk_bloom_optimal_k(double bits_per_key);

#ifdef __cplusplus
}
#endif
#endif
