/*
 * small_fpr: measured FPR of small classic filters against the exact formula. The scalable chain's
 * first sub-filters are small (100, 200, ... keys) and get the largest share of its error budget, so
 * this is what decides how close to p a chain can be tuned (see docs/MATH.md, scalable section).
 *
 *   small_fpr
 *
 * For n in {100, 1000, 10000, 100000} and p in {1%, 0.1%}: up to 200 filters with different seeds,
 * each sized for (n, p) and holding n keys, each queried with 200,000 never-added 8-byte keys.
 */
#include <stdio.h>
#include <bloomkit/bloomkit.h>

int main(void)
{
    const int ns[] = { 100, 1000, 10000, 100000 };
    const double ps[] = { 0.01, 0.001 };
    printf("%7s %6s %8s %12s %12s %12s %7s\n", "n", "p", "filters", "queries", "measured", "exact", "ratio");
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 2; b++) {
            int n = ns[a], filters = 2000000 / n;
            double p = ps[b], formula = 0;
            if (filters > 200) filters = 200;
            if (filters < 2) filters = 2;
            uint64_t fp = 0, q = 0;
            for (int s = 0; s < filters; s++) {
                bk_bloom_options o = { .layout = BK_LAYOUT_STANDARD, .seed = (uint64_t)s + 1 };
                bk_bloom *f;
                if (bk_bloom_new((uint64_t)n, p, &o, &f) != BK_OK) return 1;
                for (uint64_t i = 0; i < (uint64_t)n; i++) {
                    uint64_t k = i * 2 + 1;
                    bk_bloom_add(f, &k, 8);
                }
                formula = bk_bloom_fpr_exact(bk_bloom_bits(f), (uint64_t)n, bk_bloom_k(f));
                for (uint64_t i = 0; i < 200000; i++, q++) {
                    uint64_t k = i * 2 + 2 + (UINT64_C(1) << 40);
                    fp += bk_bloom_contains(f, &k, 8);
                }
                bk_bloom_free(f);
            }
            double m = (double)fp / (double)q;
            printf("%7d %6.3f %8d %12llu %11.5f%% %11.5f%% %7.3f\n", n, p, filters, (unsigned long long)q, 100 * m,
                   100 * formula, m / formula);
        }
    return 0;
}
