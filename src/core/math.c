#include <math.h>
#include <string.h>
#include "bloomkit/math.h"
#include "core/base.h"

#define BK_LN2 0.69314718055994530942

static bool bad_p(double p) { return !(p > 0.0 && p < 1.0); } /* also catches NaN */

double bk_bloom_bits_per_key(double p)
{
    if (bad_p(p)) return NAN;
    return -log(p) / (BK_LN2 * BK_LN2);
}

uint32_t bk_bloom_optimal_k(double bits_per_key)
{
    double k = nearbyint(bits_per_key * BK_LN2);
    if (!(k >= 1)) return 1;
    if (k > BK_MAX_K) return BK_MAX_K;
    return (uint32_t)k;
}

double bk_bloom_fpr_exact(uint64_t m, uint64_t n, uint32_t k)
{
    if (m == 0 || k == 0) return NAN;
    /* (1 - 1/m)^(kn) = exp(kn log1p(-1/m)); 1 - exp(x) = -expm1(x) keeps precision for tiny x. */
    double x = (double)k * (double)n * log1p(-1.0 / (double)m);
    return pow(-expm1(x), (double)k);
}

double bk_bloom_fpr_approx(uint64_t m, uint64_t n, uint32_t k)
{
    if (m == 0 || k == 0) return NAN;
    return pow(-expm1(-(double)k * (double)n / (double)m), (double)k);
}

double bk_bloom_fpr_partitioned(uint64_t m, uint64_t n, uint32_t k)
{
    if (m == 0 || k == 0) return NAN;
    double slice = (double)(m / k);
    if (slice < 1) return 1.0;
    double x = (double)n * log1p(-1.0 / slice);
    return pow(-expm1(x), (double)k);
}

static bk_status size_common(uint64_t n, double p, bool partitioned, bk_geometry *out)
{
    if (!out || n == 0 || bad_p(p)) return BK_EINVAL;
    double bits = ceil((double)n * bk_bloom_bits_per_key(p));
    if (!(bits < (double)BK_MAX_FILTER_BYTES * 8.0)) return BK_ETOOBIG;
    uint64_t m = (uint64_t)bits;
    if (m < 1) m = 1;
    uint32_t k = bk_bloom_optimal_k((double)m / (double)n);
    if (partitioned) m = (m + k - 1) / k * k;
    out->m = m;
    out->k = k;
    out->n = n;
    out->fpr = partitioned ? bk_bloom_fpr_partitioned(m, n, k) : bk_bloom_fpr_exact(m, n, k);
    out->bits_per_key = (double)m / (double)n;
    return BK_OK;
}

bk_status bk_bloom_size(uint64_t n, double p, bk_geometry *out) { return size_common(n, p, false, out); }
bk_status bk_bloom_size_partitioned(uint64_t n, double p, bk_geometry *out)
{
    return size_common(n, p, true, out);
}

uint64_t bk_bloom_capacity(uint64_t m, uint32_t k, double p)
{
    if (m == 0 || bad_p(p)) return 0;
    if (k == 0) {
        /* Best k for the n that fits: n = m (ln 2)^2 / -ln p, then refine with that k. */
        double n0 = (double)m / bk_bloom_bits_per_key(p);
        k = bk_bloom_optimal_k((double)m / (n0 > 1 ? n0 : 1));
    }
    /* Solve (1 - (1-1/m)^(kn))^k = p for n:  n = ln(1 - p^(1/k)) / (k ln(1 - 1/m)). */
    double q = 1.0 - pow(p, 1.0 / (double)k);
    if (!(q > 0)) return 0;
    double n = log(q) / ((double)k * log1p(-1.0 / (double)m));
    if (!(n >= 0)) return 0;
    uint64_t r = (uint64_t)floor(n);
    /* floating error at the boundary: step down until the exact FPR is within p */
    while (r > 0 && bk_bloom_fpr_exact(m, r, k) > p) r--;
    return r;
}

double bk__saturation_fill(double expected, double m)
{
    double q = expected > 0.6 ? 0.6 : expected;
    return q + 3.0 * sqrt(q * (1.0 - q) / (m > 1.0 ? m : 1.0));
}

void bk__stats_bits(bk_stats *out, bk_type type, uint32_t k, uint64_t capacity, uint64_t count, uint64_t bits,
                    uint64_t memory_bytes, uint64_t set)
{
    memset(out, 0, sizeof *out);
    out->type = type;
    out->k = k;
    out->capacity = capacity;
    out->count = count;
    out->bits = bits;
    out->memory_bytes = memory_bytes;
    out->bits_per_key = (double)memory_bytes * 8.0 / (double)(count ? count : 1);
    out->fill_ratio = (double)set / (double)bits;
}
