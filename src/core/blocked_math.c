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
#include <float.h>
#include <pthread.h>
#include <math.h>
#include <string.h>
#include "core/base.h"
#include "core/blocked1024.h"
#include "bloomkit/blocked.h"
#include "core/hooks.h"
#include "core/blocked_tables.h"

/* Not public layouts: the scalable chain's 1024-bit blocks, sized with the mean form of inner()
 * (bk__blocked1024_size below), and the same blocks with the exact inner() (bk__blocked1024_fpr_exact:
 * the figures the chain reports). */
#define LAYOUT_1024 ((bk_blocked_layout)2)
#define LAYOUT_1024_EXACT ((bk_blocked_layout)3)

static uint32_t layout_block_bits(bk_blocked_layout layout)
{
    return layout == BK_BLOCKED_SPLIT256 ? 256 : layout == LAYOUT_1024 || layout == LAYOUT_1024_EXACT ? 1024 : 512;
}

/* The weights w_i of inner() for one (layout, k) (blocked_tables.h). */
typedef bk__inner_terms inner_terms;

/* lq: log(1 - i/B) for i = 0 .. k (the same for every k of a layout), or NULL to compute them */
static void inner_init(inner_terms *T, bk_blocked_layout layout, uint32_t k, const long double *lq)
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
    const int log2_b = layout_block_bits(layout) == 1024 ? 10 : 9; /* B^(k-d) is a power of two: exact */
    pd[0] = 0;
    for (uint32_t d = 1; d <= k; d++) {
        falling *= (B - (long double)(d - 1)) / B;
        pd[d] = S[d] * falling / ldexpl(1.0L, log2_b * (int)(k - d));
    }
    for (uint32_t i = 0; i <= k; i++) {
        long double sum = 0, binom = 1; /* C(d, i) for d = i, i+1, ... */
        for (uint32_t d = i; d <= k; d++) {
            if (d > i) binom = binom * (long double)d / (long double)(d - i);
            sum += pd[d] * binom;
        }
        T->w[i] = (i & 1) ? -sum : sum;
        T->lq[i] = lq ? lq[i] : log1pl(-(long double)i / B);
    }
}

static double inner_fpr(const inner_terms *T, double load)
{
    if (load <= 0) return 0.0;
#ifndef BK_BLOCKED_TABLES_GEN
    /* the split layout's and the 1024-bit mean form's values below load 256: the constants, made once
     * by the lines below */
    if ((T->layout == BK_BLOCKED_SPLIT256 || (T->layout == LAYOUT_1024 && T->k >= 1 && T->k <= BK_BLOCKED_MAX_K)) &&
        load < BK__TABMEAN_LOADS && load == floor(load))
        return bk__blocked_tabmean[T->layout == BK_BLOCKED_SPLIT256 ? 0 : T->k][(uint32_t)load];
#endif
    if (T->layout == BK_BLOCKED_SPLIT256) return pow(-expm1(load * log1p(-1.0 / 32.0)), 8.0);
    if (T->layout != BK_BLOCKED_512 && T->layout != LAYOUT_1024_EXACT)
        return pow(-expm1(load * (double)T->k * log1p(-1.0 / (double)layout_block_bits(T->layout))), (double)T->k);
#ifndef BK_BLOCKED_TABLES_GEN
    /* the loads below 256 from the constants: where the alternating sum below cancels, its value from
     * the distribution of the bits set; elsewhere that sum's value, made once */
    if (T->layout == BK_BLOCKED_512 && load < BK__TAB512_LOADS && load == floor(load))
        return bk__blocked_tab512[T->k - 1][(uint32_t)load];
#endif
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
 * inner(L) at whole loads L, tabulated. The summed mixture asks for the same (layout, k, L) values over
 * and over (every sizing's fallback, every FPR it reports), and each costs k exponentials of long
 * double; the table keeps what inner_fpr returned, so every sum is bit for bit what it was without
 * the table. Rows: the split layout (k is always 8), then k = 1 .. BK_BLOCKED_MAX_K of the 512-bit,
 * the 1024-bit (mean form) and the 1024-bit exact layouts. Each row is filled in chunks on first use:
 * a chunk's state goes 0 (empty) -> 1 (one thread filling it) -> 2 (ready, release); a thread that
 * finds a chunk being filled computes its value itself rather than wait. The weights of inner() of
 * every row are constants (blocked_tables.c, made by terms_build_all in the test that checks that
 * file: no sizing call computes them).
 */
#define TAB_LOADS 2048
#define TAB_CHUNK 16
#define TAB_ROWS BK__TAB_ROWS
static double g_tab[TAB_ROWS][TAB_LOADS];
static int g_tab_state[TAB_ROWS][TAB_LOADS / TAB_CHUNK];
#ifdef BK_BLOCKED_TABLES_GEN
static inner_terms g_terms[TAB_ROWS];
static pthread_once_t g_terms_once = PTHREAD_ONCE_INIT;
static void terms_build_all(void);
#define TERMS_READY() pthread_once(&g_terms_once, terms_build_all)
#else
#define g_terms bk__blocked_terms
#define TERMS_READY() ((void)0)
#endif

static int tab_row(bk_blocked_layout layout, uint32_t k)
{
    if (layout == BK_BLOCKED_SPLIT256) return 0;
    if (k < 1 || k > BK_BLOCKED_MAX_K) return -1;
    int base = layout == BK_BLOCKED_512 ? 0 : layout == LAYOUT_1024 ? 1 : layout == LAYOUT_1024_EXACT ? 2 : -1;
    return base < 0 ? -1 : 1 + base * BK_BLOCKED_MAX_K + (int)k - 1;
}

#ifdef BK_BLOCKED_TABLES_GEN
/* The logarithms log(1 - i/B) are the same for every k: made once per layout, not once per row. */
static void terms_build_all(void)
{
    long double lq512[BK_BLOCKED_MAX_K + 1], lq1024[BK_BLOCKED_MAX_K + 1];
    for (uint32_t i = 0; i <= BK_BLOCKED_MAX_K; i++) {
        lq512[i] = log1pl(-(long double)i / 512.0L);
        lq1024[i] = log1pl(-(long double)i / 1024.0L);
    }
    inner_init(&g_terms[0], BK_BLOCKED_SPLIT256, 8, NULL);
    for (uint32_t k = 1; k <= BK_BLOCKED_MAX_K; k++) {
        inner_init(&g_terms[tab_row(BK_BLOCKED_512, k)], BK_BLOCKED_512, k, lq512);
        inner_init(&g_terms[tab_row(LAYOUT_1024, k)], LAYOUT_1024, k, NULL);
        inner_init(&g_terms[tab_row(LAYOUT_1024_EXACT, k)], LAYOUT_1024_EXACT, k, lq1024);
    }
}
#endif

/* tab_inner's way when the chunk is not ready: fill it, or compute the value if another thread is */
static __attribute__((noinline)) double tab_fill(int row, const inner_terms *T, double load)
{
    if (row < 0 || !(load >= 0 && load < TAB_LOADS)) return inner_fpr(T, load);
    const uint32_t L = (uint32_t)load, c = L / TAB_CHUNK;
    int *state = &g_tab_state[row][c], expect = 0;
    if (!__atomic_compare_exchange_n(state, &expect, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
        return expect == 2 ? g_tab[row][L] : inner_fpr(T, load);
    for (uint32_t j = 0; j < TAB_CHUNK; j++) g_tab[row][c * TAB_CHUNK + j] = inner_fpr(T, (double)(c * TAB_CHUNK + j));
    __atomic_store_n(state, 2, __ATOMIC_RELEASE);
    return g_tab[row][L];
}

#ifndef BK_BLOCKED_TABLES_GEN
/* Each row's constants below load 256 (blocked_tables.c; none for the 1024-bit exact layout): what
 * inner_fpr returns there, read straight from them, so that the loads most sizings walk need neither
 * a chunk filled nor the table's pages touched. */
_Static_assert(BK__TAB512_LOADS == BK__TABMEAN_LOADS, "one bound for the rows' constants");
#define TAB_CONST_LOADS BK__TAB512_LOADS
#define TC512(k) bk__blocked_tab512[(k) - 1]
#define TCMEAN(k) bk__blocked_tabmean[k]
static const double *const g_tab_const[TAB_ROWS] = {
    TCMEAN(0),
    TC512(1), TC512(2), TC512(3), TC512(4), TC512(5), TC512(6), TC512(7), TC512(8),
    TC512(9), TC512(10), TC512(11), TC512(12), TC512(13), TC512(14), TC512(15), TC512(16),
    TCMEAN(1), TCMEAN(2), TCMEAN(3), TCMEAN(4), TCMEAN(5), TCMEAN(6), TCMEAN(7), TCMEAN(8),
    TCMEAN(9), TCMEAN(10), TCMEAN(11), TCMEAN(12), TCMEAN(13), TCMEAN(14), TCMEAN(15), TCMEAN(16),
};
_Static_assert(BK_BLOCKED_MAX_K == 16 && TAB_ROWS == 49, "g_tab_const lists the rows of tab_row");
#endif

/* inner_fpr(T, load) for a whole load, from the constants or the table where it can */
static inline double tab_inner(int row, const inner_terms *T, double load)
{
    if (row >= 0 && load >= 0 && load < TAB_LOADS) {
        const uint32_t L = (uint32_t)load;
#ifndef BK_BLOCKED_TABLES_GEN
        if (L < TAB_CONST_LOADS && g_tab_const[row]) return g_tab_const[row][L];
#endif
        if (__atomic_load_n(&g_tab_state[row][L / TAB_CHUNK], __ATOMIC_ACQUIRE) == 2) return g_tab[row][L];
    }
    return tab_fill(row, T, load);
}

/* The load's mode and its pmf there: Binomial(n, q) or (binomial false) Poisson(mean), from
 * log-gamma so that no factorial overflows; mixture() and mixture2() walk outwards from it. */
static double pmf_at_mode(double n, double q, bool binomial, double mean, double *mode_out)
{
    double mode = floor(binomial ? (n + 1) * q : mean);
    if (binomial && mode > n) mode = n;
    double lp;
    if (binomial)
        lp = log_gamma(n + 1) - log_gamma(mode + 1) - log_gamma(n - mode + 1) + mode * log(q) + (n - mode) * log1p(-q);
    else
        lp = -mean + mode * log(mean) - log_gamma(mode + 1);
    *mode_out = mode;
    return exp(lp);
}

/*
 * Sum of pmf(L) * inner(L), walking outwards from the mode with the pmf's ratio recurrence so that no
 * term needs a factorial. binomial: L ~ Binomial(n, q); otherwise L ~ Poisson(n * q).
 */
static double mixture(double n, double q, bool binomial, bk_blocked_layout layout, uint32_t k)
{
    double mean = n * q;
    if (mean <= 0) return 0.0;
    const int row = tab_row(layout, k);
    inner_terms own;
    const inner_terms *T = &own;
    if (row >= 0) {
        TERMS_READY();
        T = &g_terms[row];
    } else {
        inner_init(&own, layout, k, NULL);
    }
    if (binomial && q >= 1.0) return tab_inner(row, T, n);
    /* Past ~20000 keys per block every bit is set: the FPR is 1 to double precision. */
    if (mean > 20000) return 1.0;
    double mode;
    const double p0 = pmf_at_mode(n, q, binomial, mean, &mode);
    double sum = 0.0, odds = binomial ? q / (1 - q) : 0.0;
    /* upwards: inner() <= 1, so stop once the pmf itself is negligible next to the sum */
    double p = p0;
    for (double i = mode; !binomial || i <= n; i += 1) {
        sum += p * tab_inner(row, T, i);
        p *= binomial ? (n - i) / (i + 1) * odds : mean / (i + 1);
        if (p < 1e-300 || (i > mode + 1 && p < 1e-17 * sum)) break;
    }
    /* downwards: inner() shrinks with the load, so the terms shrink faster than the pmf */
    p = p0;
    for (double i = mode; i > 0; i -= 1) {
        p *= binomial ? i / (n - i + 1) / odds : i / mean;
        double t = p * tab_inner(row, T, i - 1);
        sum += t;
        if (p < 1e-300 || t < 1e-17 * sum) break;
    }
    return sum > 1.0 ? 1.0 : sum;
}

/* mixture() at two k of one layout in one walk: the load's pmf is the same for both, so each term's
 * pmf is made once; each k's sum takes exactly the terms, in the order and with the stops, that
 * mixture() takes for it alone, so both values are bit for bit mixture()'s (test_blocked_tables
 * checks it). */
static void mixture2(double n, double q, bool binomial, bk_blocked_layout layout, const uint32_t k[2], double out[2])
{
    double mean = n * q;
    if (mean <= 0 || (binomial && q >= 1.0) || mean > 20000) {
        out[0] = mixture(n, q, binomial, layout, k[0]);
        out[1] = mixture(n, q, binomial, layout, k[1]);
        return;
    }
    int row[2];
    const inner_terms *T[2];
    inner_terms own[2];
    for (int j = 0; j < 2; j++) {
        row[j] = tab_row(layout, k[j]);
        if (row[j] >= 0) {
            TERMS_READY();
            T[j] = &g_terms[row[j]];
        } else {
            inner_init(&own[j], layout, k[j], NULL);
            T[j] = &own[j];
        }
    }
    double mode;
    const double p0 = pmf_at_mode(n, q, binomial, mean, &mode);
    double sum[2] = { 0.0, 0.0 }, odds = binomial ? q / (1 - q) : 0.0;
    bool on[2] = { true, true };
    double p = p0;
    for (double i = mode; !binomial || i <= n; i += 1) {
        for (int j = 0; j < 2; j++)
            if (on[j]) sum[j] += p * tab_inner(row[j], T[j], i);
        p *= binomial ? (n - i) / (i + 1) * odds : mean / (i + 1);
        if (p < 1e-300) break;
        for (int j = 0; j < 2; j++)
            if (i > mode + 1 && p < 1e-17 * sum[j]) on[j] = false;
        if (!on[0] && !on[1]) break;
    }
    p = p0;
    on[0] = on[1] = true;
    for (double i = mode; i > 0; i -= 1) {
        p *= binomial ? i / (n - i + 1) / odds : i / mean;
        for (int j = 0; j < 2; j++) {
            if (!on[j]) continue;
            double t = p * tab_inner(row[j], T[j], i - 1);
            sum[j] += t;
            if (t < 1e-17 * sum[j]) on[j] = false;
        }
        if (p < 1e-300 || (!on[0] && !on[1])) break;
    }
    for (int j = 0; j < 2; j++) out[j] = sum[j] > 1.0 ? 1.0 : sum[j];
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

/* The search over the summed mixture alone: every block count it tries costs fpr_best_k. The unit
 * tests check size_for against it (core/hooks.h); the library does not call it. Doubling from the classic
 * size until the FPR is within p, then bisection. */
bk_status bk__blocked_size_summed(uint64_t n, double p, int layout_code, bk_geometry *out)
{
    bk_blocked_layout layout = (bk_blocked_layout)layout_code;
    if (!out || n == 0 || bad_p(p) || bad_k(layout, 0)) return BK_EINVAL;
    const uint64_t bbits = layout_block_bits(layout);
    const uint64_t max_blocks = BK_MAX_FILTER_BYTES * 8 / bbits;
    uint32_t k;
    double classic = ceil((double)n * bk_bloom_bits_per_key(p) / (double)bbits);
    uint64_t hi = classic < 1 ? 1 : classic > (double)max_blocks ? max_blocks : (uint64_t)classic;
    uint64_t lo = 0;
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

/*
 * Sizing's fast path. For every layout inner(L) is a short sum of geometric terms in the load L,
 *   inner(L) = sum_j c_j (1 - d_j)^L,
 *   SPLIT256: (1 - (31/32)^L)^8 by the binomial theorem, c_j = C(8,j) (-1)^j, 1 - d_j = (31/32)^j
 *   1024:     (1 - a^L)^k, a = (1023/1024)^k:         c_j = C(k,j) (-1)^j, 1 - d_j = a^j
 *   512:      the weights above,                     c_i = w_i,           1 - d_i = (1 - i/512)^k
 * so the mixture over L has a closed form through the load's generating function E[(1-d)^L]:
 * exp(-mean d) for Poisson(mean), (1 - q d)^n for Binomial(n, q). That is k + 1 exponentials where the
 * summed mixture takes a few hundred terms (of pow and expm1 before the table above: 0.6-3.9 ms per
 * sizing with its bisection). The closed form alternates and loses digits to cancellation, and the
 * summed mixture has rounding errors of its own, so each fast value carries a bound covering both; a
 * decision of the search (is the FPR within p, which k is better) that the bounds cannot settle is
 * taken with the summed mixture of the k it compares (the value fpr_best_k would use). So size_for
 * returns exactly the blocks and k the summed mixture's search gives, as long as that FPR falls with
 * every added block and is unimodal in k (which that search assumes too).
 */
typedef bk__inner_series series;

/* The 512-bit layout's inner() is taken from the distribution of the bits set (blocked_tables.c) at
 * every load where the weights' alternating sum could be off by more than this fraction of its value
 * (its absolute error: up to 16 ulps of long double times the weights' sizes summed); above those
 * loads, from the alternating sum. */
#define LOW512_REL 0x1p-40L

#ifdef BK_BLOCKED_TABLES_GEN
/* Every (layout, k)'s series: constants (blocked_tables.c), made here in the test that checks that
 * file. Index: 0 split, 1 512, 2 1024; k. */
static series g_series[3][BK_BLOCKED_MAX_K + 1];
static pthread_once_t g_series_once = PTHREAD_ONCE_INIT;

/* The alternating sum's absolute error bound in the 512-bit layout's inner() at k */
static long double alt_err512(uint32_t k)
{
    const inner_terms *T = &g_terms[tab_row(BK_BLOCKED_512, k)];
    long double e = 0;
    for (uint32_t i = 0; i <= k; i++) e += fabsl(T->w[i]) * 16.0L * LDBL_EPSILON;
    return e;
}

static void series_build(series *S, bk_blocked_layout layout, uint32_t k)
{
    S->inner_rel = 0;
    if (layout == BK_BLOCKED_512) {
        const inner_terms *T = &g_terms[tab_row(layout, k)];
        S->inner_err = 0;
        /* the alternating sum within LOW512_REL of the value where it is used, the distribution's
         * values (long double, positive terms) rounded to double */
        S->inner_rel = LOW512_REL + DBL_EPSILON;
        for (uint32_t i = 0; i <= k; i++) {
            S->c[i] = T->w[i];
            S->d[i] = -expm1l((long double)k * T->lq[i]);
        }
    } else {
        S->inner_err = 0; /* pow and expm1 of double: relative errors, in the summed mixture's bound */
        const long double lq = layout == BK_BLOCKED_SPLIT256 ? log1pl(-1.0L / 32.0L)
                                                             : (long double)k * log1pl(-1.0L / 1024.0L);
        long double binom = 1; /* C(k, j) */
        for (uint32_t j = 0; j <= k; j++) {
            S->c[j] = (j & 1) ? -binom : binom;
            S->d[j] = -expm1l((long double)j * lq);
            binom = binom * (long double)(k - j) / (long double)(j + 1);
        }
    }
    S->terms = k + 1;
    for (uint32_t j = 0; j <= k; j++) S->cd[j] = (double)S->c[j], S->dd[j] = (double)S->d[j];
}

static void series_build_all(void)
{
    pthread_once(&g_terms_once, terms_build_all);
    series_build(&g_series[0][8], BK_BLOCKED_SPLIT256, 8);
    for (uint32_t k = 1; k <= BK_BLOCKED_MAX_K; k++) {
        series_build(&g_series[1][k], BK_BLOCKED_512, k);
        series_build(&g_series[2][k], LAYOUT_1024, k);
    }
}
#define SERIES_READY() pthread_once(&g_series_once, series_build_all)
#else
#define g_series bk__blocked_series
#define SERIES_READY() ((void)0)
#endif

typedef struct {
    bk_blocked_layout layout;
    uint64_t n;
    const series *S; /* the layout's row of g_series */
    double max_blocks; /* the most blocks a filter may have */
    /* the closed form's rounding near the answer is over 1% of it: its bound settles nothing there */
    bool summed_first;
} sizing;

/* a < b, a > b or undecided (0) given both values' bounds */
static int certain_cmp(long double a, long double ta, long double b, long double tb)
{
    if (a + ta < b - tb) return -1;
    if (a - ta > b + tb) return 1;
    return 0;
}

/* The FPR at (blocks, k) by the closed form in double precision, and *tol: a bound on its distance
 * from the summed mixture's value, of two parts. The closed form's own rounding: each exponent x_j off
 * by up to 6 ulps of |x_j| (n, 1/blocks, d_j and their product or log1p rounded), exp by one, the
 * product and the k + 1 additions by one each, all terms' sizes summed (the cancellation), taken 8
 * times over. The summed mixture's: its first term comes from log-gamma values and logarithms of size
 * up to about 3 (x + 2)(ln(x + 2) + 1) (x: n for the binomial, the mean for Poisson), its pmf
 * recurrence and sum run over up to some thousand terms, its tails stop at 1e-17 of the sum; for the
 * 512-bit layout its inner() is an alternating sum in long double, off by up to its weights' sizes in
 * ulps; taken 8 times over. Where the terms cancel to fewer digits than a comparison needs (low p, or
 * two block counts or k whose FPRs are close), the bound does not settle it and the search takes the
 * summed mixture itself: a few dozen to a few hundred positive terms with inner() from the table, all
 * in double, cheaper than the k + 1 exponentials of the closed form in long double that it once tried
 * first. */
static double series_fpr_bounded(const sizing *z, uint64_t blocks, uint32_t k, double *tol)
{
    const series *S = &z->S[k];
    const bool binomial = blocks < 4096;
    const double q = 1.0 / (double)blocks, n = (double)z->n, mean = n * q;
    double sum = 0, err = 0;
    for (uint32_t j = 0; j < S->terms; j++) {
        double x = binomial ? n * log1p(-q * S->dd[j]) : -mean * S->dd[j];
        double t = S->cd[j] * exp(x);
        sum += t;
        err += fabs(t) * (6.0 * fabs(x) + (double)S->terms + 4.0);
    }
    double x = binomial ? n : mean;
    double old_digits = 3.0 * (x + 2.0) * (log(x + 2.0) + 1.0) + 4096.0;
    *tol = err * 8.0 * DBL_EPSILON + fabs(sum) * (old_digits * 8.0 * DBL_EPSILON + 8.0 * (double)S->inner_rel) +
           (double)S->inner_err + 1e-300;
    return sum;
}

/* A bound on the summed mixture's distance from the exact FPR f at (blocks, k): series_fpr_bounded's
 * part for it (its first term from log-gamma values, its recurrence, its truncated tails, its inner()). */
static long double summed_err(const sizing *z, uint64_t blocks, uint32_t k, long double f)
{
    const long double x = blocks < 4096 ? (long double)z->n : (long double)z->n / (long double)blocks;
    const long double old_digits = 3.0L * (x + 2.0L) * (logl(x + 2.0L) + 1.0L) + 4096.0L;
    return fabsl(f) * (old_digits * 8.0L * DBL_EPSILON + 8.0L * z->S[k].inner_rel) + z->S[k].inner_err + 1e-300L;
}

/* The FPR of one block count at each k asked for, at one of two levels: 1 the closed form in double
 * (series_fpr_bounded) with a bound on its distance from the summed mixture's value, 2 the summed
 * mixture's value itself (tol 0). A comparison the bounds cannot settle raises the level of the values
 * compared. */
typedef struct {
    sizing *z;
    uint64_t blocks;
    uint32_t have[BK_BLOCKED_MAX_K + 1]; /* 0 none, else the level */
    long double f[BK_BLOCKED_MAX_K + 1], t[BK_BLOCKED_MAX_K + 1];
    long double e[BK_BLOCKED_MAX_K + 1]; /* level 2: a bound on the summed value's own distance from the exact FPR */
} kvals;

/* Raise k's value one level (from none to 1); a value of no use (out of [0, 1], or its bound) goes up
 * again. */
static void kv_up(kvals *v, uint32_t k)
{
    if (v->have[k] == 0) {
        double t;
        const double f = series_fpr_bounded(v->z, v->blocks, k, &t);
        v->f[k] = f, v->t[k] = t, v->have[k] = 1;
        if (f >= 0 && f <= 1 && t >= 0 && t < 1) return;
    }
    v->f[k] = fpr_blocks(v->blocks, v->z->n, v->z->layout, k);
    v->t[k] = 0;
    v->e[k] = summed_err(v->z, v->blocks, k, v->f[k]);
    v->have[k] = 2;
}

/* Both a and b (a != b) to the summed mixture's value (level 2) at once: kv_up's values, one walk. */
static void kv_sum2(kvals *v, uint32_t a, uint32_t b)
{
    const uint32_t k[2] = { a, b };
    double f[2];
    mixture2((double)v->z->n, 1.0 / (double)v->blocks, v->blocks < 4096, v->z->layout, k, f);
    for (int j = 0; j < 2; j++) {
        v->f[k[j]] = f[j];
        v->t[k[j]] = 0;
        v->e[k[j]] = summed_err(v->z, v->blocks, k[j], f[j]);
        v->have[k[j]] = 2;
    }
}

static void kv_get(kvals *v, uint32_t k)
{
    if (v->have[k]) return;
    /* straight to the summed mixture: where the closed form is too noisy, or with one block (every
     * key in it: the summed value is inner(n), one table value) */
    if (v->z->summed_first || v->blocks == 1) v->have[k] = 1;
    kv_up(v, k);
}

/* FPR(a) against FPR(b) by the bounds, raising the levels (the lower one first) until they settle it:
 * -1 or 1, or 0 when they do not with both values summed (the summed values are equal; with margin,
 * each summed value counts with its own error bound). */
static int kv_order(kvals *v, uint32_t a, uint32_t b, bool margin)
{
    if (v->z->summed_first && !v->have[a] && !v->have[b]) kv_sum2(v, a, b);
    kv_get(v, a);
    kv_get(v, b);
    for (;;) {
        const long double ta = margin && v->have[a] == 2 ? v->e[a] : v->t[a];
        const long double tb = margin && v->have[b] == 2 ? v->e[b] : v->t[b];
        int c = certain_cmp(v->f[a], ta, v->f[b], tb);
        if (c != 0) return c;
        uint32_t la = v->have[a], lb = v->have[b];
        if (la >= 2 && lb >= 2) return 0;
        if (la == 1 && lb == 1) { /* both go up to the summed mixture: in one walk */
            kv_sum2(v, a, b);
            continue;
        }
        if (la <= lb && la < 2) kv_up(v, a);
        if (lb <= la && lb < 2) kv_up(v, b);
    }
}

/* FPR(a) against FPR(b) as the summed mixture orders them: -1, 1, or 0 when they are equal. By the
 * bounds where they settle it (the summed values then differ the same way), else by the summed values
 * themselves. */
static int kv_cmp(kvals *v, uint32_t a, uint32_t b) { return kv_order(v, a, b, false); }

/* FPR(a) against FPR(b) for the walk from the guess: -1 or 1 when the bounds settle it for the exact
 * FPRs as well as for the summed values (a summed value counts with its own error bound), 0 when they
 * do not even with both values summed. */
static int kv_settled(kvals *v, uint32_t a, uint32_t b) { return kv_order(v, a, b, true); }

/* Whether `blocks` blocks hold n keys within p, with the best k (*k: in, a guess; out, the k fpr_best_k
 * gives) and its FPR (*fpr, within *tol of the summed mixture's). First a walk from the guess to the
 * nearest local minimum, every step settled by the bounds (a summed value counting with its own error
 * bound, so the step holds for the exact FPRs too): that is fpr_best_k's k, which walks up from k = 1
 * to the first local minimum, because the FPR is unimodal in k. A step that not even the summed values
 * settle (two k with nearly the same FPR, or FPRs within rounding of 0) replays fpr_best_k's own walk, each of
 * its comparisons taken by the bounds where they settle it and by the summed mixture of just the two k
 * compared otherwise, so it gives fpr_best_k's k whatever the shape of the FPR in k. Then FPR <= p, by
 * the bounds or by the summed mixture (a few hundred terms, inner() from the table). */
static bool blocks_ok(sizing *z, uint64_t blocks, double p, uint32_t *k, double *fpr, double *tol)
{
    const double mean = (double)z->n / (double)blocks;
    if (mean > 20000) { /* every k's FPR is 1 */
        *fpr = fpr_best_k(blocks, z->n, z->layout, k);
        *tol = 0;
        return *fpr <= p;
    }
    kvals v;
    v.z = z;
    v.blocks = blocks;
    memset(v.have, 0, sizeof v.have);
    uint32_t kk = z->layout == BK_BLOCKED_SPLIT256 ? 8 : *k < 1 ? 1 : *k > BK_BLOCKED_MAX_K ? BK_BLOCKED_MAX_K : *k;
    if (z->layout != BK_BLOCKED_SPLIT256) {
        bool moved = false, settled = true;
        int c;
        while (kk > 1) { /* downhill towards smaller k */
            if ((c = kv_settled(&v, kk - 1, kk)) == 0) settled = false;
            if (c != -1) break;
            kk--, moved = true;
        }
        while (settled && !moved && kk < BK_BLOCKED_MAX_K) { /* or towards larger k */
            if ((c = kv_settled(&v, kk + 1, kk)) == 0) settled = false;
            if (c != -1) break;
            kk++;
        }
        if (!settled) { /* fpr_best_k's walk */
            kk = 1;
            for (uint32_t j = 2; j <= BK_BLOCKED_MAX_K; j++) {
                if ((c = kv_cmp(&v, j, kk)) < 0) kk = j;
                else if (c > 0) break;
            }
        }
    }
    kv_get(&v, kk);
    int c;
    while ((c = certain_cmp(v.f[kk], v.t[kk], (long double)p, 0)) == 0 && v.have[kk] < 2) kv_up(&v, kk);
    *k = kk;
    *fpr = (double)v.f[kk];
    *tol = (double)v.t[kk];
    return c <= 0;
}

/* The FPR at (blocks, k) by the closed form in double precision, for the guess only (no bound);
 * *noise (may be NULL): its rounding relative to its value, roughly (the terms' sizes times their
 * exponents' size, in ulps, over the sum); *slope (may be NULL): dFPR/dblocks. */
static double series_fpr_d(const sizing *z, double blocks, uint32_t k, double *noise, double *slope)
{
    const series *S = &z->S[k];
    const double n = (double)z->n, q = 1.0 / blocks, mean = n * q;
    const bool binomial = blocks < 4096;
    double sum = 0, mag = 0, dsum = 0;
    for (uint32_t j = 0; j < S->terms; j++) {
        const double d = S->dd[j];
        const double qd = q * d; /* n ln(1 - qd) by its series where qd is small (the guess only) */
        double t = S->cd[j] * (!binomial ? exp(-mean * d)
                               : qd < 1e-3 ? exp(-n * qd * (1 + qd * (0.5 + qd * (1.0 / 3 + qd * 0.25))))
                                           : exp(n * log1p(-qd)));
        sum += t;
        mag += fabs(t);
        /* d/dblocks of (1 - d / blocks)^n and of exp(-n d / blocks) */
        dsum += t * (binomial ? n * d / (blocks * (blocks - d)) : mean * d / blocks);
    }
    if (noise) *noise = mag * (mean + 16.0) * DBL_EPSILON / fabs(sum);
    if (slope) *slope = dsum;
    return sum;
}

/* The k with the least closed-form FPR near k at `blocks` (a local walk; the guess only). Where the
 * closed form cancels to a few digits (low p: both values' rounding over 1e-3 of them), a step needs
 * the FPR to fall by more than that rounding, or the noise would pick a k far from the best and the
 * guess with it; elsewhere any fall will do (two k near a tie: the better one's block count). */
static bool k_better(double f_new, double noise_new, double f, double noise)
{
    const double n = noise_new + noise;
    return f_new < f * (n > 1e-3 ? 1 - 4 * n : 1);
}

static uint32_t guess_k(const sizing *z, double blocks, uint32_t k)
{
    if (z->layout == BK_BLOCKED_SPLIT256) return 8;
    double nf, nx, f = series_fpr_d(z, blocks, k, &nf, NULL);
    bool moved = false;
    while (k > 1) {
        double fm = series_fpr_d(z, blocks, k - 1, &nx, NULL);
        if (!k_better(fm, nx, f, nf)) break;
        k--, f = fm, nf = nx, moved = true;
    }
    while (!moved && k < BK_BLOCKED_MAX_K) {
        double fp = series_fpr_d(z, blocks, k + 1, &nx, NULL);
        if (!k_better(fp, nx, f, nf)) break;
        k++, f = fp, nf = nx;
    }
    return k;
}

/* The Poisson mixture at `mean` and its derivative in the mean, dF/dmean = E[inner(L + 1) - inner(L)]
 * (for the guess only): every term positive, so no digits lost however small the FPR. */
static double mixture_slope(double mean, bk_blocked_layout layout, uint32_t k, double *dfdmean)
{
    const int row = tab_row(layout, k);
    *dfdmean = 0;
    if (row < 0 || !(mean > 0) || mean > 20000) return NAN;
    const inner_terms *T = &g_terms[row];
    double mode;
    const double p0 = pmf_at_mode(0, 0, false, mean, &mode);
    double f = 0, d = 0, p = p0, cur = tab_inner(row, T, mode);
    for (double i = mode;; i += 1) {
        double next = tab_inner(row, T, i + 1);
        f += p * cur;
        d += p * (next - cur);
        cur = next;
        p *= mean / (i + 1);
        if (p < 1e-300 || (i > mode + 1 && p < 1e-17 * f)) break;
    }
    p = p0;
    cur = tab_inner(row, T, mode);
    for (double i = mode; i > 0; i -= 1) {
        p *= i / mean;
        double prev = tab_inner(row, T, i - 1);
        f += p * prev;
        d += p * (cur - prev);
        if (p < 1e-300 || p * cur < 1e-17 * f) break;
        cur = prev;
    }
    *dfdmean = d;
    return f;
}

/* The binomial mixture at x blocks (q = 1/x) and its derivative in x, for the guess only: the same
 * walk as mixture(), with dP(L)/dq = P(L) (L/q - (n - L)/(1 - q)). */
static double binomial_slope(double n, double x, bk_blocked_layout layout, uint32_t k, double *dfdx)
{
    const int row = tab_row(layout, k);
    const double q = 1.0 / x;
    *dfdx = 0;
    if (row < 0 || !(q > 0 && q < 1) || n * q > 20000) return NAN;
    const inner_terms *T = &g_terms[row];
    double mode;
    const double p0 = pmf_at_mode(n, q, true, n * q, &mode);
    const double odds = q / (1 - q);
    double f = 0, dq = 0, p = p0;
    for (double i = mode; i <= n; i += 1) {
        const double t = p * tab_inner(row, T, i);
        f += t;
        dq += t * (i / q - (n - i) / (1 - q));
        p *= (n - i) / (i + 1) * odds;
        if (p < 1e-300 || (i > mode + 1 && p < 1e-17 * f)) break;
    }
    p = p0;
    for (double i = mode; i > 0; i -= 1) {
        p *= i / (n - i + 1) / odds;
        const double t = p * tab_inner(row, T, i - 1);
        f += t;
        dq += t * ((i - 1) / q - (n - i + 1) / (1 - q));
        if (p < 1e-300 || t < 1e-17 * f) break;
    }
    *dfdx = -dq / (x * x);
    return f;
}

/* The summed mixture's own form at x blocks (binomial below 4096 blocks, Poisson above) and its
 * derivative in x (the guess only). */
static double summed_slope(const sizing *z, double x, uint32_t k, double *dfdx)
{
    const double n = (double)z->n;
    if (x < 4096) return binomial_slope(n, x, z->layout, k, dfdx);
    double d, mean = n / x;
    const double f = mixture_slope(mean, z->layout, k, &d);
    *dfdx = -(mean / x) * d;
    return f;
}

/* Newton steps on ln FPR - ln p in ln(blocks) with the summed mixture's own form at k (the guess
 * only), from x, until the next step's error is under a quarter of a block; a step grows x eightfold
 * at most, and never past the most blocks allowed. Every term of that form is positive, so it keeps
 * its digits where the closed form's cancel (low p). In ln(blocks) because ln FPR is nearly linear
 * there (about -k ln(blocks) at light loads): from the classic size (a lower bound) the steps reach
 * the root in a few, where steps in the block count took a dozen at low p. k stays: the search's
 * first block count compares k with its neighbours anyway (by the summed mixture where the closed
 * form is this noisy), and trying them here as well cost more than the few block counts a guess
 * made with the second best k adds. */
static double refine_guess(const sizing *z, double x, double p, uint32_t k)
{
    const double lp = log(p);
    for (int it = 0; it < 48; it++) {
        double dfdx, f = summed_slope(z, x, k, &dfdx);
        if (!(f > 0) || !(dfdx < 0)) break;
        /* not within p even at the most blocks allowed: the search refuses it, the guess stays there */
        if (x >= z->max_blocks && f > p) break;
        /* the step in ln x: ln FPR is nearly linear in ln x (about -k ln x at light loads) */
        double du = -(log(f) - lp) * f / (dfdx * x);
        if (!(du >= -0.693)) du = -0.693;
        if (du > 2.079) du = 2.079;
        double x2 = x * exp(du);
        if (!(x2 >= 1)) x2 = 1;
        if (x2 > z->max_blocks) x2 = z->max_blocks;
        const double dx = fabs(x2 - x);
        x = x2;
        /* Newton's error after a step of du = dx / x in ln x is about |h'' / 2h'| du^2 (h: ln FPR in
         * ln x, h' about -k, h'' no larger): under dx^2 / x blocks, a quarter of a block here */
        if (dx < 1 || dx * dx < 0.25 * x) break;
    }
    return x;
}

/* The k that sizing at p gives for many keys (the Poisson limit), a first guess for any n: where k
 * steps up as p falls (k = 2 from p = 0.38, 3 from 0.182, ...; measured with the search below at
 * n = 1e8). Only a starting point: the guess and the search walk from it to the best k. */
static uint32_t first_k(bk_blocked_layout layout, double p)
{
    static const double k512[BK_BLOCKED_MAX_K - 1] = { 0.38,    0.182,   0.0871,  0.0427,  0.02,
                                                       0.00933, 0.00427, 0.00186, 7.94e-4, 3.31e-4,
                                                       1.32e-4, 5.01e-5, 1.86e-5, 6.61e-6, 2.24e-6 };
    static const double k1024[BK_BLOCKED_MAX_K - 1] = { 0.38,    0.182,   0.0891,  0.0437,  0.0214,
                                                        0.0102,  0.0049,  0.00229, 0.00107, 4.9e-4,
                                                        2.19e-4, 9.55e-5, 4.07e-5, 1.7e-5,  7.08e-6 };
    if (layout == BK_BLOCKED_SPLIT256) return 8;
    const double *t = layout == BK_BLOCKED_512 ? k512 : k1024;
    uint32_t k = 1;
    while (k < BK_BLOCKED_MAX_K && p <= t[k - 1]) k++;
    return k;
}

/* A first guess of the block count: Newton's method on ln FPR - ln p in ln(blocks) by the closed form
 * in double precision, from the classic size (a lower bound), with k fixed (first_k's) until the steps
 * settle, then the best k there (and more steps if it moved). The search below corrects the guess.
 * *noise_out: the closed form's rounding at the guess, relative to its value. Where that rounding
 * passes 5% of its value, the steps stop there (a step is off by at most that over k of the block
 * count), and where it passes 1%, or its rough estimate in blocks passes 128 (an estimate that runs
 * tens of times over the guess's real error), they go on from there on the summed mixture until they
 * settle, rather than on with the closed form's, which wander off by up to a factor
 * of several (low p). A guess off by a few blocks costs the search a few more block counts, each
 * about what one step on the summed mixture costs. */
static double guess_blocks(const sizing *z, double classic, double p, uint32_t *kg, double *noise_out)
{
    uint32_t k = first_k(z->layout, p);
    /* a classic size rounded up to whole blocks (few keys: one block for 10 keys) may leave far more
     * bits per key than p needs, and the best k grows with them, roughly in proportion: start there
     * rather than walk up one k at a time */
    const double more = classic * (double)layout_block_bits(z->layout) / ((double)z->n * bk_bloom_bits_per_key(p));
    if (z->layout != BK_BLOCKED_SPLIT256 && more > 1.5) {
        const double ks = floor((double)k * more + 0.5);
        k = ks >= BK_BLOCKED_MAX_K ? BK_BLOCKED_MAX_K : (uint32_t)ks;
    }
    const double lp = log(p);
    double x = classic, noise = 0, last_dx = INFINITY, noise_blocks = INFINITY;
    bool any = false;
    int moves = 0;
    for (int it = 0; it < 32; it++) {
        double slope, f = series_fpr_d(z, x, k, &noise, &slope);
        if (!(f > 0) || !(slope < 0) || !isfinite(f)) break;
        any = true;
        if (noise > 0.05) break; /* over 5% of rounding: steps on the closed form would wander */
        const double hp = slope / f; /* d ln FPR / d blocks */
        noise_blocks = noise / -hp;
        double du = -(log(f) - lp) / (hp * x); /* the step in ln x, as in refine_guess */
        if (!(du >= -0.693)) du = -0.693;
        if (du > 1.386) du = 1.386;
        double x2 = x * exp(du);
        if (x2 > z->max_blocks) x2 = z->max_blocks;
        if (x2 < 1) x2 = 1;
        const double dx = fabs(x2 - x);
        x = x2;
        /* settled; or within the closed form's rounding, or its steps no longer shrink (its slope
         * cancels more than its value: the steps go to and fro at the rounding's scale) */
        const bool stuck = dx > 0.5 * last_dx && dx < 64 * noise / -hp;
        last_dx = dx;
        if (dx < 0.25 || dx < 4 * noise / -hp || stuck) {
            uint32_t k2 = guess_k(z, x, k);
            if (k2 == k || ++moves > 2) break; /* (two k within the rounding: either will do) */
            k = k2;
        }
    }
    *kg = k;
    if (!any) { /* no use even at the classic size (its terms cancel to nothing) */
        *noise_out = 1;
        return refine_guess(z, classic, p, *kg);
    }
    /* Where the closed form's rounding is worth many blocks (low p: its terms cancel to many digits),
     * Newton steps on the summed mixture, whose terms are all positive. */
    *noise_out = noise;
    if (noise > 0.01 || noise_blocks > 128) x = refine_guess(z, x, p, k);
    return x;
}

/* blocks_ok, its k walk starting from *k scaled from the block count *from it belongs to (the best k
 * grows with the bits per key, roughly in proportion: where the search jumps between few blocks, 2 to
 * 3 say, the best k moves by several; a k at the largest k stays there for fewer blocks, since the
 * best k without that limit may be far above it); then *from = blocks. */
static bool blocks_ok_from(sizing *z, uint64_t blocks, double p, uint32_t *k, double *from, double *fpr, double *tol)
{
    const double ks = floor((double)*k * (double)blocks / *from + 0.5);
    if (*k < BK_BLOCKED_MAX_K || (double)blocks > *from)
        *k = !(ks >= 1) ? 1 : ks > BK_BLOCKED_MAX_K ? BK_BLOCKED_MAX_K : (uint32_t)ks;
    *from = (double)blocks;
    return blocks_ok(z, blocks, p, k, fpr, tol);
}

/* The last few sizings of this thread (the function is pure): a server making many filters of the
 * same size, or scalable chains of the same parameters growing, asks for the same (n, p) again and
 * again. Per thread, so no lock and nothing shared. */
#define MEMO_SLOTS 4
static _Thread_local struct {
    uint64_t n;
    double p;
    int layout;
    bool exact, used;
    bk_status status;
    bk_geometry g;
} g_memo[MEMO_SLOTS];
static _Thread_local unsigned g_memo_next;
static _Thread_local bool g_memo_off;

void bk__blocked_memo(bool on) { g_memo_off = !on; }

static bk_status size_search(uint64_t n, double p, bk_blocked_layout layout, bool exact_fpr, bk_geometry *out);

static bk_status size_for(uint64_t n, double p, bk_blocked_layout layout, bool exact_fpr, bk_geometry *out)
{
    if (!out || n == 0 || bad_p(p) || bad_k(layout, 0)) return BK_EINVAL;
    if (g_memo_off) return size_search(n, p, layout, exact_fpr, out);
    for (unsigned i = 0; i < MEMO_SLOTS; i++)
        if (g_memo[i].used && g_memo[i].n == n && g_memo[i].p == p && g_memo[i].layout == (int)layout &&
            g_memo[i].exact == exact_fpr) {
            if (g_memo[i].status == BK_OK) *out = g_memo[i].g;
            return g_memo[i].status;
        }
    bk_geometry g;
    memset(&g, 0, sizeof g);
    bk_status s = size_search(n, p, layout, exact_fpr, &g);
    if (s == BK_OK) *out = g;
    const unsigned i = g_memo_next++ % MEMO_SLOTS;
    g_memo[i].n = n, g_memo[i].p = p, g_memo[i].layout = (int)layout, g_memo[i].exact = exact_fpr;
    g_memo[i].status = s, g_memo[i].g = g, g_memo[i].used = true;
    return s;
}

/* size_for's search: the smallest block count within p and its k (the arguments checked). */
static bk_status size_search(uint64_t n, double p, bk_blocked_layout layout, bool exact_fpr, bk_geometry *out)
{
    const uint64_t bbits = layout_block_bits(layout);
    const uint64_t max_blocks = BK_MAX_FILTER_BYTES * 8 / bbits;
    SERIES_READY();
    sizing z;
    z.layout = layout;
    z.n = n;
    z.S = g_series[layout == BK_BLOCKED_SPLIT256 ? 0 : layout == BK_BLOCKED_512 ? 1 : 2];
    z.max_blocks = (double)max_blocks;
    /* The classic size is a lower bound (blocking only costs space); the guess starts from it. Then
     * the smallest block count within p, found from the guess by steps of 1, 2, 4, ... and a
     * bisection: the FPR falls with every added block, so it is the one the search from any start
     * finds. */
    double classic = ceil((double)n * bk_bloom_bits_per_key(p) / (double)bbits);
    if (classic < 1) classic = 1;
    if (classic > (double)max_blocks) classic = (double)max_blocks;
    uint32_t k;
    double noise = 0;
    z.summed_first = false;
    double g = guess_blocks(&z, classic, p, &k, &noise);
    z.summed_first = noise > 0.01;
    uint64_t start = !(g >= 1) ? 1 : g >= (double)max_blocks ? max_blocks : (uint64_t)ceil(g);
    double f, fhi, t, thi, from = !(g >= 1) ? 1 : g; /* k belongs to the guess's block count */
    uint64_t lo, hi; /* invariant: lo blocks are not enough (0 never is), hi are */
    uint32_t khi;
    if (blocks_ok_from(&z, start, p, &k, &from, &f, &t)) {
        hi = start, khi = k, fhi = f, thi = t;
        uint64_t step = 1;
        for (;;) {
            lo = hi > step ? hi - step : 0;
            if (lo == 0 || !blocks_ok_from(&z, lo, p, &k, &from, &f, &t)) break;
            hi = lo, khi = k, fhi = f, thi = t;
            step *= 2;
        }
    } else {
        lo = start;
        uint64_t step = 1;
        for (;;) {
            if (lo >= max_blocks) return BK_ETOOBIG;
            hi = lo + step > max_blocks || lo + step < lo ? max_blocks : lo + step;
            if (blocks_ok_from(&z, hi, p, &k, &from, &f, &t)) break;
            lo = hi;
            step *= 2;
        }
        khi = k, fhi = f, thi = t;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (blocks_ok_from(&z, mid, p, &k, &from, &f, &t))
            hi = mid, khi = k, fhi = f, thi = t;
        else
            lo = mid;
    }
    /* The FPR reported: bk_blocked_size's is bk_blocked_fpr's value exactly (one summed mixture);
     * the library's own callers, which use only m and k, take the closed form's when its bound is
     * within 1e-6 of it (below p either way). */
    out->fpr = !exact_fpr && thi <= 1e-6 * fhi ? fhi : fpr_blocks(hi, n, layout, khi);
    out->m = hi * bbits;
    out->k = khi;
    out->n = n;
    out->bits_per_key = (double)out->m / (double)n;
    return BK_OK;
}

bk_status bk_blocked_size(uint64_t n, double p, bk_blocked_layout layout, bk_geometry *out)
{
    return bad_public_layout(layout) ? BK_EINVAL : size_for(n, p, layout, true, out);
}

bk_status bk__blocked_size_mk(uint64_t n, double p, int layout_code, bk_geometry *out)
{
    bk_blocked_layout layout = (bk_blocked_layout)layout_code;
    return bad_public_layout(layout) ? BK_EINVAL : size_for(n, p, layout, false, out);
}

bk_status bk__blocked1024_size(uint64_t n, double p, bk_geometry *out)
{
    return size_for(n, p, LAYOUT_1024, false, out);
}

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
