/*
 * Sizing math of the blocked Bloom filter: the exact FPR as a mixture over block loads (Putze,
 * Sanders, Singler, "Cache-, Hash- and Space-Efficient Bloom Filters", 2007).
 *
 * A filter of B blocks holding n keys puts L keys in a given block, L ~ Binomial(n, 1/B) (Poisson
 * with mean n/B when B is large). A query for an absent key lands in a uniform block and is a false
 * positive when all its probes hit set bits of that block, whose chance given the load L is
 *   SPLIT256:  (1 - (31/32)^L)^8            (each 32-bit word holds one bit of each key)
 *   512:       E[(X/512)^k], X the bits set by k L probes anywhere in 512 bits
 *   1024:      (1 - (1023/1024)^(k L))^k    (the scalable chain's two-line blocks, internal)
 * FPR = sum over L of P(L) * inner(L). The classic formula replaces L by its mean, which is why it
 * underestimates: inner() is convex where it matters, so overfull blocks cost more than underfull
 * blocks save. For the same reason inner() is not (E[X]/B)^k = (1 - (1 - 1/B)^(kL))^k: the bits set
 * in a block vary around their mean too, and x^k is convex (that shortcut ran 1-4% under the FPR got).
 * The exact form, with the t = k L probes iid uniform over B bits and a query's k probes landing on
 * d distinct bits with probability S(k,d) B!/(B-d)! / B^k (S: Stirling numbers of the second kind):
 *   inner = sum_d P(d) P(d given bits all set),  P(d given bits all set) = sum_i (-1)^i C(d,i) (1 - i/B)^t
 * which regroups as inner = sum_{i=0..k} w_i (1 - i/B)^t with w_i = (-1)^i sum_{d>=i} P(d) C(d,i), w_0 = 1.
 * The alternating sum is evaluated in long double (|w_i| < 2^16 for k <= 16: the absolute error stays
 * near 1e-15, far below any FPR a blocked filter is sized for). SPLIT256 has one probe per 32-bit
 * word, so its mean form is already exact. The 1024-bit blocks keep the mean form on purpose: a
 * scalable filter's file stores only (capacity, p, growth, r) and its layers' geometry is derived
 * again from this function at load and when the chain grows, so changing it would refuse or fork
 * every saved chain.
 */
#include <math.h>
#include "core/base.h"
#include "core/blocked1024.h"
#include "bloomkit/blocked.h"

/* Not public layouts: the scalable chain's 1024-bit blocks, sized with the mean form of inner()
 * (bk__blocked1024_size below), and the same blocks with the exact inner() (bk__blocked1024_fpr_exact:
 * the figures the chain reports). */
#define LAYOUT_1024 ((bk_blocked_layout)2)
#define LAYOUT_1024_EXACT ((bk_blocked_layout)3)

static uint32_t layout_block_bits(bk_blocked_layout layout)
{
    return layout == BK_BLOCKED_SPLIT256 ? 256 : layout == LAYOUT_1024 || layout == LAYOUT_1024_EXACT ? 1024 : 512;
}

/* The weights w_i of inner() for one (layout, k), computed once per mixture. */
typedef struct {
    bk_blocked_layout layout;
    uint32_t k;
    long double w[BK_BLOCKED_MAX_K + 1];
    long double lq[BK_BLOCKED_MAX_K + 1]; /* log(1 - i/B) */
} inner_terms;

static void inner_init(inner_terms *T, bk_blocked_layout layout, uint32_t k)
{
    T->layout = layout;
    T->k = k;
    if ((layout != BK_BLOCKED_512 && layout != LAYOUT_1024_EXACT) || k == 0) return;
    const long double B = (long double)layout_block_bits(layout);
    /* S(k, d) by the recurrence S(n, d) = d S(n-1, d) + S(n-1, d-1): exact in long double for k <= 16 */
    long double S[BK_BLOCKED_MAX_K + 1] = { 1 };
    for (uint32_t n = 1; n <= k; n++) {
        for (uint32_t d = n; d >= 1; d--) S[d] = (long double)d * S[d] + S[d - 1]; /* S[d-1] still of n-1 */
        S[0] = 0;
    }
    long double pd[BK_BLOCKED_MAX_K + 1]; /* P(d distinct bits among k probes) */
    long double falling = 1;              /* B (B-1) ... (B-d+1) / B^d */
    pd[0] = 0;
    for (uint32_t d = 1; d <= k; d++) {
        falling *= (B - (long double)(d - 1)) / B;
        pd[d] = S[d] * falling / powl(B, (long double)(k - d));
    }
    for (uint32_t i = 0; i <= k; i++) {
        long double sum = 0, binom = 1; /* C(d, i) for d = i, i+1, ... */
        for (uint32_t d = i; d <= k; d++) {
            if (d > i) binom = binom * (long double)d / (long double)(d - i);
            sum += pd[d] * binom;
        }
        T->w[i] = (i & 1) ? -sum : sum;
        T->lq[i] = log1pl(-(long double)i / B);
    }
}

static double inner_fpr(const inner_terms *T, double load)
{
    if (load <= 0) return 0.0;
    if (T->layout == BK_BLOCKED_SPLIT256) return pow(-expm1(load * log1p(-1.0 / 32.0)), 8.0);
    if (T->layout != BK_BLOCKED_512 && T->layout != LAYOUT_1024_EXACT)
        return pow(-expm1(load * (double)T->k * log1p(-1.0 / (double)layout_block_bits(T->layout))), (double)T->k);
    const long double t = (long double)load * (long double)T->k;
    long double sum = T->w[0];
    for (uint32_t i = 1; i <= T->k; i++) sum += T->w[i] * expl(t * T->lq[i]);
    return sum <= 0 ? 0.0 : sum >= 1 ? 1.0 : (double)sum;
}

/* ln Gamma(x) for x >= 1. lgamma writes the global signgam, a data race when two threads size
 * filters at once (every sizing call is [any]); lgamma_r returns the sign instead. */
static double log_gamma(double x)
{
    int sign;
    return lgamma_r(x, &sign);
}

/*
 * Sum of pmf(L) * inner(L), walking outwards from the mode with the pmf's ratio recurrence so that no
 * term needs a factorial. binomial: L ~ Binomial(n, q); otherwise L ~ Poisson(n * q).
 */
static double mixture(double n, double q, bool binomial, bk_blocked_layout layout, uint32_t k)
{
    double mean = n * q;
    if (mean <= 0) return 0.0;
    inner_terms T;
    inner_init(&T, layout, k);
    if (binomial && q >= 1.0) return inner_fpr(&T, n);
    /* Past ~20000 keys per block every bit is set: the FPR is 1 to double precision. */
    if (mean > 20000) return 1.0;
    double mode = floor(binomial ? (n + 1) * q : mean);
    if (binomial && mode > n) mode = n;
    double lp;
    if (binomial)
        lp = log_gamma(n + 1) - log_gamma(mode + 1) - log_gamma(n - mode + 1) + mode * log(q) + (n - mode) * log1p(-q);
    else
        lp = -mean + mode * log(mean) - log_gamma(mode + 1);
    double p0 = exp(lp), sum = 0.0, odds = binomial ? q / (1 - q) : 0.0;
    /* upwards: inner() <= 1, so stop once the pmf itself is negligible next to the sum */
    double p = p0;
    for (double i = mode; !binomial || i <= n; i += 1) {
        sum += p * inner_fpr(&T, i);
        p *= binomial ? (n - i) / (i + 1) * odds : mean / (i + 1);
        if (p < 1e-300 || (i > mode + 1 && p < 1e-17 * sum)) break;
    }
    /* downwards: inner() shrinks with the load, so the terms shrink faster than the pmf */
    p = p0;
    for (double i = mode; i > 0; i -= 1) {
        p *= binomial ? i / (n - i + 1) / odds : i / mean;
        double t = p * inner_fpr(&T, i - 1);
        sum += t;
        if (p < 1e-300 || t < 1e-17 * sum) break;
    }
    return sum > 1.0 ? 1.0 : sum;
}

/* Binomial for few blocks, where it differs from the Poisson limit; Poisson otherwise. */
static double fpr_blocks(uint64_t blocks, uint64_t n, bk_blocked_layout layout, uint32_t k)
{
    if (n == 0) return 0.0;
    return mixture((double)n, 1.0 / (double)blocks, blocks < 4096, layout, k);
}

/* FPR with the best k (512) for this load; *best_k receives that k. */
static double fpr_best_k(uint64_t blocks, uint64_t n, bk_blocked_layout layout, uint32_t *best_k)
{
    if (layout == BK_BLOCKED_SPLIT256) {
        *best_k = 8;
        return fpr_blocks(blocks, n, layout, 8);
    }
    double best = 2.0;
    uint32_t bk = 1;
    for (uint32_t k = 1; k <= BK_BLOCKED_MAX_K; k++) {
        double f = fpr_blocks(blocks, n, layout, k);
        if (f < best) {
            best = f;
            bk = k;
        } else if (f > best) {
            break; /* unimodal in k */
        }
    }
    *best_k = bk;
    return best;
}

static bool bad_p(double p) { return !(p > 0.0 && p < 1.0); }

static bool bad_k(bk_blocked_layout layout, uint32_t k)
{
    if (layout == BK_BLOCKED_SPLIT256) return k != 0 && k != 8;
    if (layout == BK_BLOCKED_512 || layout == LAYOUT_1024 || layout == LAYOUT_1024_EXACT) return k > BK_BLOCKED_MAX_K;
    return true;
}

static bool bad_public_layout(bk_blocked_layout layout)
{
    return layout != BK_BLOCKED_SPLIT256 && layout != BK_BLOCKED_512;
}

static double fpr_k(uint64_t blocks, uint64_t n, bk_blocked_layout layout, uint32_t k)
{
    uint32_t unused;
    return k == 0 ? fpr_best_k(blocks, n, layout, &unused) : fpr_blocks(blocks, n, layout, k);
}

static double fpr_of_m(uint64_t m, uint64_t n, bk_blocked_layout layout, uint32_t k)
{
    if (bad_k(layout, k)) return NAN;
    uint64_t blocks = m / layout_block_bits(layout);
    if (blocks == 0) return NAN;
    return fpr_k(blocks, n, layout, k);
}

double bk_blocked_fpr(uint64_t m, uint64_t n, bk_blocked_layout layout, uint32_t k)
{
    return bad_public_layout(layout) ? NAN : fpr_of_m(m, n, layout, k);
}

double bk__blocked1024_fpr(uint64_t m, uint64_t n, uint32_t k) { return fpr_of_m(m, n, LAYOUT_1024, k); }
double bk__blocked1024_fpr_exact(uint64_t m, uint64_t n, uint32_t k)
{
    return k == 0 ? NAN : fpr_of_m(m, n, LAYOUT_1024_EXACT, k);
}

double bk__blocked1024_fpr_of_bits(const uint64_t *words, uint64_t blocks, uint32_t k)
{
    if (blocks == 0) return 0.0;
    double table[1025], sum = 0.0;
    for (int c = 0; c <= 1024; c++) table[c] = pow(c / 1024.0, (double)k);
    for (uint64_t b = 0; b < blocks; b++) sum += table[bk__popcount_words(words + b * 16, 16)];
    return sum / (double)blocks;
}

uint32_t bk_blocked_optimal_k(bk_blocked_layout layout, double bits_per_key)
{
    if (layout != BK_BLOCKED_512) return 8;
    if (!(bits_per_key > 0)) return 1;
    double mean = 512.0 / bits_per_key, best = 2.0;
    uint32_t bk = 1;
    for (uint32_t k = 1; k <= BK_BLOCKED_MAX_K; k++) {
        double f = mixture(mean, 1.0, false, layout, k);
        if (f < best) {
            best = f;
            bk = k;
        } else if (f > best) {
            break;
        }
    }
    return bk;
}

static bk_status size_for(uint64_t n, double p, bk_blocked_layout layout, bk_geometry *out)
{
    if (!out || n == 0 || bad_p(p) || bad_k(layout, 0)) return BK_EINVAL;
    const uint64_t bbits = layout_block_bits(layout);
    const uint64_t max_blocks = BK_MAX_FILTER_BYTES * 8 / bbits;
    uint32_t k;
    /* Start from the classic size (a lower bound: blocking only costs space), double until the FPR
     * is within p, then bisect for the smallest block count that is. The FPR falls with every added
     * block, so the bisection is exact. */
    double classic = ceil((double)n * bk_bloom_bits_per_key(p) / (double)bbits);
    uint64_t hi = classic < 1 ? 1 : classic > (double)max_blocks ? max_blocks : (uint64_t)classic;
    uint64_t lo = 0; /* invariant: lo blocks are not enough (0 blocks never are) */
    while (fpr_best_k(hi, n, layout, &k) > p) {
        if (hi >= max_blocks) return BK_ETOOBIG;
        lo = hi;
        hi = hi > max_blocks / 2 ? max_blocks : hi * 2;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (fpr_best_k(mid, n, layout, &k) <= p)
            hi = mid;
        else
            lo = mid;
    }
    out->fpr = fpr_best_k(hi, n, layout, &k);
    out->m = hi * bbits;
    out->k = k;
    out->n = n;
    out->bits_per_key = (double)out->m / (double)n;
    return BK_OK;
}

bk_status bk_blocked_size(uint64_t n, double p, bk_blocked_layout layout, bk_geometry *out)
{
    return bad_public_layout(layout) ? BK_EINVAL : size_for(n, p, layout, out);
}

bk_status bk__blocked1024_size(uint64_t n, double p, bk_geometry *out) { return size_for(n, p, LAYOUT_1024, out); }

uint64_t bk_blocked_capacity(uint64_t m, bk_blocked_layout layout, uint32_t k, double p)
{
    if (bad_p(p) || bad_public_layout(layout) || bad_k(layout, k)) return 0;
    uint64_t blocks = m / layout_block_bits(layout);
    if (blocks == 0 || fpr_k(blocks, 1, layout, k) > p) return 0;
    /* The FPR rises with every added key: find a failing n by doubling, then bisect. */
    uint64_t lo = 1, hi = 2;
    while (fpr_k(blocks, hi, layout, k) <= p) {
        if (hi >= (UINT64_C(1) << 62)) return hi;
        lo = hi;
        hi *= 2;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (fpr_k(blocks, mid, layout, k) <= p)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}
