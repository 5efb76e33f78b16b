/*
 * cuckoo_capacity: does a cuckoo filter hold the capacity it was created for?
 *
 *   cuckoo_capacity [-n N] [-p P] [-s SEEDS]      (defaults: N = 200,000,000, p = 1%, 1 seed)
 *   cuckoo_capacity --small [-b B] [-p P] [-s SEEDS] (defaults: b = 4, p = 1%, 2,000 seeds)
 *
 * bk_cuckoo_new(N, p), then bk_cuckoo_add of N distinct 8-byte keys (a splitmix64 stream, fixed
 * seed per run); prints the first key refused (or that all N were stored), the load factor reached,
 * the kicks, whether the victim slot is in use, the bits per key and the time. Too long for the unit
 * tests at 200M (about a minute and 320 MiB); tests/test_cuckoo.c covers thousands of small filters.
 * --small: every capacity N = 16..257, SEEDS filters each (bucket size B, the seeds of the unit test
 * small_filters_every_p), N keys into each; prints how many filters refused a key below N (the
 * first few of them) and how many ended with fingerprints in their stash.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <time.h>
#include <bloomkit/bloomkit.h>
#include "benchutil.h"

static int small(uint32_t b, double p, int seeds)
{
    uint64_t filters = 0, refused = 0, stashing = 0;
    for (uint64_t n = 16; n <= 257; n++)
        for (uint64_t seed = 0; seed < (uint64_t)seeds; seed++) {
            bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
            o.bucket_size = b;
            o.seed = seed * 104729 + n;
            bk_cuckoo *c;
            bk_status s = bk_cuckoo_new(n, p, &o, &c);
            if (s != BK_OK) {
                printf("bk_cuckoo_new(%llu, %g): %s\n", (unsigned long long)n, p, bk_strerror(s));
                return 1;
            }
            uint64_t st = seed * 1000003 + n * 31;
            for (uint64_t i = 0; i < n; i++) {
                uint64_t k = bu_splitmix64(&st);
                if (bk_cuckoo_add(c, &k, sizeof k) != BK_OK) {
                    if (refused++ < 5)
                        printf("N = %llu seed %llu: key %llu refused\n", (unsigned long long)n,
                               (unsigned long long)seed, (unsigned long long)i + 1);
                    break;
                }
            }
            bk_cuckoo_info in;
            bk_cuckoo_get_info(c, &in);
            stashing += in.victims != 0;
            bk_cuckoo_free(c);
            filters++;
        }
    printf("b = %u, p = %g: %llu of %llu filters (N = 16..257, %d seeds each) refused a key below their capacity; "
           "%llu ended with a non-empty stash\n",
           b, p, (unsigned long long)refused, (unsigned long long)filters, seeds, (unsigned long long)stashing);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t n = 200000000;
    double p = 0.01;
    int seeds = 1;
    uint32_t b = 4;
    bool small_mode = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small")) {
            small_mode = true;
            continue;
        }
        if (!strcmp(argv[i], "-b") && i + 1 < argc) {
            b = (uint32_t)atoi(argv[++i]);
            continue;
        }
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) p = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) seeds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: cuckoo_capacity [-n N] [-p P] [-s SEEDS]\n");
            return 2;
        }
    }
    if (small_mode) return small(b, p, seeds > 1 ? seeds : 2000);
    int refused_runs = 0;
    for (int r = 0; r < seeds; r++) {
        bk_cuckoo *f;
        bk_status s = bk_cuckoo_new(n, p, NULL, &f);
        if (s != BK_OK) {
            printf("bk_cuckoo_new(%llu, %g): %s\n", (unsigned long long)n, p, bk_strerror(s));
            return 1;
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        uint64_t st = UINT64_C(0x5eed) + (uint64_t)r, refused = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t k = bu_splitmix64(&st);
            if (bk_cuckoo_add(f, &k, sizeof k) != BK_OK) {
                refused = i + 1;
                break;
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        bk_cuckoo_info in;
        bk_cuckoo_get_info(f, &in);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        if (refused) {
            printf("seed %d: n = %llu, p = %g: key %llu REFUSED (BK_EFULL) at load %.5f", r, (unsigned long long)n, p,
                   (unsigned long long)refused, in.load_factor);
            refused_runs++;
        } else {
            printf("seed %d: n = %llu, p = %g: all %llu keys stored, load %.5f", r, (unsigned long long)n, p,
                   (unsigned long long)n, in.load_factor);
        }
        printf(", b = %u, f = %u, %llu buckets, %.3f bits/key, %llu kicks, victim %s, %.1f s\n", in.bucket_size,
               in.fingerprint_bits, (unsigned long long)(in.slots / in.bucket_size),
               (double)in.memory_bytes * 8 / (double)n, (unsigned long long)in.kicks, in.victims ? "in use" : "free",
               secs);
        fflush(stdout);
        bk_cuckoo_free(f);
    }
    printf("%d of %d runs refused a key below the capacity\n", refused_runs, seeds);
    return 0;
}
