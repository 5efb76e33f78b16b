/*
 * The distinct-count sketch `build` uses to size a filter for the real number of distinct keys:
 * HyperLogLog with 2^16 one-byte registers (64 KiB, relative standard error 1.04 / 256 = 0.41%),
 * fed with the keys' filter hashes (already computed for the filter, so the sketch costs one
 * register update per key). The estimate is Ertl's "improved" estimator (O. Ertl, New cardinality
 * estimation algorithms for HyperLogLog sketches, 2017), which needs no bias tables and stays
 * unbiased from a handful of keys to far beyond 2^40.
 */
#include <math.h>
#include <string.h>

#include "cli.h"

#define M (1u << CLI_HLL_P)
#define Q (64 - CLI_HLL_P)

void cli_hll_init(cli_hll *h) { memset(h->reg, 0, sizeof h->reg); }

void cli_hll_add(cli_hll *h, const uint64_t *hashes, size_t n)
{
    uint8_t *reg = h->reg;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = hashes[i];
        uint32_t idx = (uint32_t)(x >> Q);
        /* the other Q bits at the top, and a stop bit just below them: the rank of the first one bit,
         * Q + 1 when the Q bits are all zero, without a branch */
        uint64_t w = x << CLI_HLL_P | (UINT64_C(1) << (CLI_HLL_P - 1));
        uint8_t rho = (uint8_t)(__builtin_clzll(w) + 1), r = reg[idx];
        reg[idx] = rho > r ? rho : r;
    }
}

void cli_hll_merge(cli_hll *dst, const cli_hll *src)
{
    for (uint32_t i = 0; i < M; i++)
        if (src->reg[i] > dst->reg[i]) dst->reg[i] = src->reg[i];
}

/* sigma(x) = x + sum_{k>=1} x^(2^k) 2^(k-1), for the share of empty registers. */
static double sigma(double x)
{
    if (x == 1.0) return INFINITY;
    double y = 1.0, z = x, prev;
    do {
        x *= x;
        prev = z;
        z += x * y;
        y += y;
    } while (z != prev);
    return z;
}

/* tau(x) = (1 - x - sum_{k>=1} (1 - x^(2^-k))^2 2^-k) / 3, for the share of saturated registers. */
static double tau(double x)
{
    if (x == 0.0 || x == 1.0) return 0.0;
    double y = 1.0, z = 1.0 - x, prev;
    do {
        x = sqrt(x);
        prev = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
    } while (z != prev);
    return z / 3.0;
}

double cli_hll_estimate(const cli_hll *h)
{
    uint32_t c[Q + 2];
    memset(c, 0, sizeof c);
    for (uint32_t i = 0; i < M; i++) c[h->reg[i]]++;
    double m = (double)M;
    double z = m * tau(1.0 - (double)c[Q + 1] / m);
    for (int k = Q; k >= 1; k--) z = 0.5 * (z + (double)c[k]);
    z += m * sigma((double)c[0] / m);
    if (isinf(z)) return 0.0; /* every register empty: nothing was added */
    return m * m / (2.0 * log(2.0)) / z;
}

double cli_hll_stderr(void) { return 1.04 / sqrt((double)M); }
