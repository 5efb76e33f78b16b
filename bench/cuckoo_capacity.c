/*
 * cuckoo_capacity: does a cuckoo filter hold the capacity it was created for?
 *
 *   cuckoo_capacity [-n N] [-p P] [-s SEEDS]      (defaults: N = 200,000,000, p = 1%, 1 seed)
 *
 * bk_cuckoo_new(N, p), then bk_cuckoo_add of N distinct 8-byte keys (a splitmix64 stream, fixed
 * seed per run); prints the first key refused (or that all N were stored), the load factor reached,
 * the kicks, whether the victim slot is in use, the bits per key and the time. Too long for the unit
 * tests at 200M (about a minute and 320 MiB); tests/test_cuckoo.c covers thousands of small filters.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bloomkit/bloomkit.h>

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    uint64_t n = 200000000;
    double p = 0.01;
    int seeds = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) p = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) seeds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: cuckoo_capacity [-n N] [-p P] [-s SEEDS]\n");
            return 2;
        }
    }
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
            uint64_t k = splitmix(&st);
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
