/*
 * scalable_r: how the scalable filter's tightening ratio r trades memory for FPR.
 *
 *   scalable_r [-n N] [-c CAPACITY] [-p P] [-g GROWTH] [--queries Q] [--classic] [r ...]
 *
 * For each r (default 0.5 0.7 0.8 0.85 0.9 0.95): a chain starting at CAPACITY (100) keys with growth
 * GROWTH (2), target p (1%), blocked sub-filters (classic ones with --classic), grown by adding N (10,000,000) distinct 8-byte keys; prints the number of
 * sub-filters, bits per added key, the compound bound, the FPR measured on Q (1,000,000) never-added
 * keys, and ns per add and per absent-key query (single key, then batched). Times are this thread's
 * CPU time (CLOCK_THREAD_CPUTIME_ID), so that a busy machine's time slicing does not inflate them
 * (its cache and memory-bandwidth contention still does). Last, the machine's memory latency: one
 * dependent random load at a time (a pointer chase) over 64 MiB, the time a one-key query of a chain
 * larger than the caches waits at least once. Figures only.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bloomkit/bloomkit.h>
#include "bench.h"
#include "benchutil.h"

int main(int argc, char **argv)
{
    uint64_t n = 10000000, cap = 100, q = 1000000;
    double p = 0.01;
    uint32_t growth = 2, flags = 0;
    double rs[32];
    int nr = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) cap = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) p = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-g") && i + 1 < argc) growth = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--queries") && i + 1 < argc) q = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--classic")) flags = BK_SCALABLE_CLASSIC;
        else if (nr < 32) rs[nr++] = strtod(argv[i], NULL);
    }
    if (nr == 0) {
        const double def[] = { 0.5, 0.7, 0.8, 0.85, 0.9, 0.95 };
        nr = 6;
        memcpy(rs, def, sizeof def);
    }
    printf("scalable chain (%s sub-filters): start %llu keys, growth %u, p = %g, %llu keys added (8-byte), FPR over "
           "%llu absent keys\n",
           flags ? "classic" : "blocked", (unsigned long long)cap, growth, p, (unsigned long long)n, (unsigned long long)q);
    printf("%6s %8s %9s %8s %9s %9s %8s %10s %10s\n", "r", "filters", "bits/key", "bound %", "FPR %", "count",
           "add ns", "q0 ns", "q0 batch");
    enum { B = 4096 };
    static uint8_t keys[B][8];
    static const void *ptrs[B];
    static size_t lens[B];
    static uint8_t res[B];
    for (int j = 0; j < B; j++) {
        ptrs[j] = keys[j];
        lens[j] = 8;
    }
    for (int ri = 0; ri < nr; ri++) {
        bk_scalable_options o = bk_scalable_default_options();
        o.growth = growth;
        o.tightening = rs[ri];
        o.flags = flags;
        o.max_bytes = BK_MAX_FILTER_BYTES;
        bk_scalable *f;
        bk_status s = bk_scalable_new(cap, p, &o, &f);
        if (s != BK_OK) {
            printf("%6.3f: %s\n", rs[ri], bk_strerror(s));
            continue;
        }
        double t0 = bu_cpu_ns();
        for (uint64_t i = 0; i < n && s == BK_OK; i++) {
            uint64_t v = bu_mix64(2 * i + 1);
            s = bk_scalable_add(f, &v, 8);
        }
        double add_ns = (bu_cpu_ns() - t0) / (double)n;
        if (s != BK_OK) printf("add failed: %s\n", bk_strerror(s));
        uint64_t fp = 0;
        t0 = bu_cpu_ns();
        for (uint64_t i = 0; i < q; i++) {
            uint64_t v = bu_mix64(2 * i + 2);
            fp += bk_scalable_contains(f, &v, 8);
        }
        double q_ns = (bu_cpu_ns() - t0) / (double)q;
        uint64_t fpb = 0;
        double tb = 0;
        for (uint64_t i = 0; i < q; i += B) {
            size_t c = q - i < B ? (size_t)(q - i) : B;
            for (size_t j = 0; j < c; j++) {
                uint64_t v = bu_mix64(2 * (i + j) + 2);
                memcpy(keys[j], &v, 8);
            }
            t0 = bu_cpu_ns();
            fpb += BENCH_HITS(bk_scalable_contains_many, f, ptrs, lens, c, res);
            tb += bu_cpu_ns() - t0;
        }
        if (fpb != fp) printf("batch and single disagree: %llu vs %llu\n", (unsigned long long)fpb, (unsigned long long)fp);
        printf("%6.3f %8u %9.2f %8.4f %9.4f %9llu %8.1f %10.1f %10.1f\n", rs[ri], bk_scalable_filters(f),
               (double)bk_scalable_bytes(f) * 8.0 / (double)n, 100 * bk_scalable_fpr_bound(f), 100.0 * (double)fp / (double)q,
               (unsigned long long)bk_scalable_count(f), add_ns, q_ns, tb / (double)q);
        fflush(stdout);
        bk_scalable_free(f);
    }
    /* pointer chase: a random cyclic permutation (Sattolo), each load's address from the one before */
    size_t words = (size_t)64 << 17;
    uint64_t *chain = malloc(words * sizeof *chain);
    if (!chain) return 1;
    for (size_t i = 0; i < words; i++) chain[i] = i;
    for (size_t i = words - 1; i > 0; i--) {
        size_t j = (size_t)(bu_mix64(i) % i);
        uint64_t t = chain[i];
        chain[i] = chain[j];
        chain[j] = t;
    }
    enum { HOPS = 2000000 };
    uint64_t at = 0;
    double t0 = bu_cpu_ns();
    for (int i = 0; i < HOPS; i++) at = chain[at];
    printf("memory latency: %.1f ns per dependent random load over 64 MiB (%llu)\n", (bu_cpu_ns() - t0) / HOPS,
           (unsigned long long)(at & 1));
    free(chain);
    return 0;
}
