/* The demo `make demo` runs: build a filter from a generated key set, query it, print statistics. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <bloomkit/bloomkit.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
    const uint64_t n = 1000000;
    const double p = 0.01;
    char key[64];
    bk_bloom *f;
    bk_status s = bk_bloom_new(n, p, NULL, &f);
    if (s != BK_OK) {
        fprintf(stderr, "demo: %s\n", bk_strerror(s));
        return 1;
    }
    double t0 = now();
    for (uint64_t i = 0; i < n; i++) {
        int len = snprintf(key, sizeof key, "https://example.com/page/%llu", (unsigned long long)i);
        bk_bloom_add(f, key, (size_t)len);
    }
    double t1 = now();
    uint64_t missing = 0, fp = 0;
    for (uint64_t i = 0; i < n; i++) {
        int len = snprintf(key, sizeof key, "https://example.com/page/%llu", (unsigned long long)i);
        missing += !bk_bloom_contains(f, key, (size_t)len);
    }
    for (uint64_t i = 0; i < n; i++) {
        int len = snprintf(key, sizeof key, "https://example.org/never/%llu", (unsigned long long)i);
        fp += bk_bloom_contains(f, key, (size_t)len);
    }
    double t2 = now();
    bk_stats st;
    bk_bloom_stats(f, &st);
    printf("bloomkit %s demo: classic Bloom filter, n = %llu, target p = %g\n", bk_version_string(),
           (unsigned long long)n, p);
    printf("  bits m = %llu, k = %u, memory = %.2f MiB, %.2f bits/key\n", (unsigned long long)st.bits, st.k,
           st.memory_bytes / 1048576.0, st.memory_bytes * 8.0 / n);
    printf("  inserted %llu keys at %.1f M keys/s; %llu queries at %.1f M/s\n", (unsigned long long)n,
           n / (t1 - t0) / 1e6, (unsigned long long)(2 * n), 2 * n / (t2 - t1) / 1e6);
    printf("  false negatives: %llu (must be 0)\n", (unsigned long long)missing);
    printf("  measured FPR: %.4f%% (target %.4f%%, expected now %.4f%%)\n", 100.0 * fp / n, 100 * p,
           100 * st.fpr_now);
    printf("  fill ratio %.3f, estimated cardinality %.0f, saturated: %s\n", st.fill_ratio, st.est_cardinality,
           st.saturated ? "yes" : "no");
    bk_bloom_free(f);
    return missing ? 1 : 0;
}
