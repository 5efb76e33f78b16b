/*
 * profile_calls: one filter type, one operation, plain one-key calls with 8-byte keys, nothing else
 * in the loop -- the program to run under a profiler (perf record, valgrind --tool=callgrind).
 *
 *   profile_calls TYPE OP [-n N] [-r ROUNDS] [--u64]
 *     TYPE: blocked | fuse | fuse16 | ribbon | cuckoo | bloom   OP: query | insert   (fuse, ribbon: query only)
 *     --u64: the uint64-key calls (bk_<type>_contains_u64 / _add_u64) instead of the byte calls
 *
 * The filter is created for N keys (default 1,000,000) at p = 1% (-p P: another p, for the ribbon and the
 * classic filter) and filled with the N keys
 * (insert: that fill is the profiled part, ROUNDS times on a cleared filter); query asks the N keys
 * and N absent ones ROUNDS times (default 1). The keys are made before the profiled part. Prints the
 * ns per call (meaningless under a profiler that slows the code; kept to check the run).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bloomkit/bloomkit.h>
#include "benchutil.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* noinline: the profiled loops are their own functions in the profile */
static bool use_u64;

__attribute__((noinline)) static uint64_t query_loop(const char *type, void *f, const uint64_t *keys, size_t n)
{
    uint64_t hits = 0;
    if (use_u64) {
        if (!strcmp(type, "blocked"))
            for (size_t i = 0; i < n; i++) hits += bk_blocked_contains_u64(f, keys[i]);
        else if (!strncmp(type, "fuse", 4))
            for (size_t i = 0; i < n; i++) hits += bk_fuse_contains_u64(f, keys[i]);
        else if (!strcmp(type, "ribbon"))
            for (size_t i = 0; i < n; i++) hits += bk_ribbon_contains_u64(f, keys[i]);
        else if (!strcmp(type, "cuckoo"))
            for (size_t i = 0; i < n; i++) hits += bk_cuckoo_contains_u64(f, keys[i]);
        else
            for (size_t i = 0; i < n; i++) hits += bk_bloom_contains_u64(f, keys[i]);
        return hits;
    }
    if (!strcmp(type, "blocked"))
        for (size_t i = 0; i < n; i++) hits += bk_blocked_contains(f, &keys[i], 8);
    else if (!strncmp(type, "fuse", 4))
        for (size_t i = 0; i < n; i++) hits += bk_fuse_contains(f, &keys[i], 8);
    else if (!strcmp(type, "ribbon"))
        for (size_t i = 0; i < n; i++) hits += bk_ribbon_contains(f, &keys[i], 8);
    else if (!strcmp(type, "cuckoo"))
        for (size_t i = 0; i < n; i++) hits += bk_cuckoo_contains(f, &keys[i], 8);
    else
        for (size_t i = 0; i < n; i++) hits += bk_bloom_contains(f, &keys[i], 8);
    return hits;
}

__attribute__((noinline)) static void insert_loop(const char *type, void *f, const uint64_t *keys, size_t n)
{
    if (use_u64) {
        if (!strcmp(type, "blocked"))
            for (size_t i = 0; i < n; i++) bk_blocked_add_u64(f, keys[i]);
        else if (!strcmp(type, "cuckoo"))
            for (size_t i = 0; i < n; i++) bk_cuckoo_add_u64(f, keys[i]);
        else
            for (size_t i = 0; i < n; i++) bk_bloom_add_u64(f, keys[i]);
        return;
    }
    if (!strcmp(type, "blocked"))
        for (size_t i = 0; i < n; i++) bk_blocked_add(f, &keys[i], 8);
    else if (!strcmp(type, "cuckoo"))
        for (size_t i = 0; i < n; i++) bk_cuckoo_add(f, &keys[i], 8);
    else
        for (size_t i = 0; i < n; i++) bk_bloom_add(f, &keys[i], 8);
}

static double fpr = 0.01;

static void *create(const char *type, uint64_t n, const uint64_t *keys)
{
    if (!strcmp(type, "ribbon")) {
        bk_ribbon *f;
        bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
        o.fpr = fpr;
        return bk_ribbon_build_u64(keys, n, &o, &f) == BK_OK ? f : NULL;
    }
    if (!strcmp(type, "blocked")) {
        bk_blocked *f;
        return bk_blocked_new(n, 0.01, NULL, &f) == BK_OK ? f : NULL;
    }
    if (!strcmp(type, "cuckoo")) {
        bk_cuckoo *f;
        return bk_cuckoo_new(n, 0.01, NULL, &f) == BK_OK ? f : NULL;
    }
    if (!strcmp(type, "bloom")) {
        bk_bloom *f;
        return bk_bloom_new(n, fpr, NULL, &f) == BK_OK ? f : NULL;
    }
    if (!strncmp(type, "fuse", 4)) {
        const void **ptrs = malloc(n * sizeof *ptrs);
        size_t *lens = malloc(n * sizeof *lens);
        bk_fuse *f = NULL;
        if (ptrs && lens) {
            for (uint64_t i = 0; i < n; i++) {
                ptrs[i] = &keys[i];
                lens[i] = 8;
            }
            bk_fuse_options o = { .fingerprint_bits = strcmp(type, "fuse16") ? 8 : 16, .max_attempts = 0, .seed = 0 };
            if (bk_fuse_build(ptrs, lens, n, &o, &f) != BK_OK) f = NULL;
        }
        free(ptrs);
        free(lens);
        return f;
    }
    return NULL;
}

static void destroy(const char *type, void *f)
{
    if (!strcmp(type, "blocked")) bk_blocked_free(f);
    else if (!strcmp(type, "cuckoo")) bk_cuckoo_free(f);
    else if (!strcmp(type, "bloom")) bk_bloom_free(f);
    else if (!strcmp(type, "ribbon")) bk_ribbon_free(f);
    else bk_fuse_free(f);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: profile_calls blocked|fuse|fuse16|ribbon|cuckoo|bloom query|insert [-n N] [-r ROUNDS] [-p P] [--u64]\n");
        return 2;
    }
    const char *type = argv[1], *op = argv[2];
    uint64_t n = 1000000;
    int rounds = 1;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) fpr = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--u64")) use_u64 = true;
    }
    bool insert = !strcmp(op, "insert");
    bool is_static = !strncmp(type, "fuse", 4) || !strcmp(type, "ribbon");
    if (insert && is_static) {
        fprintf(stderr, "%s: query only (a static filter)\n", type);
        return 2;
    }
    uint64_t *keys = malloc(2 * n * sizeof *keys), st = 42;
    if (!keys) return 1;
    for (uint64_t i = 0; i < 2 * n; i++) keys[i] = bu_splitmix64(&st); /* [0, n): members, [n, 2n): absent */
    void *f = create(type, n, keys);
    if (!f) {
        fprintf(stderr, "%s: cannot be created\n", type);
        return 1;
    }
    double t = 0, calls = 0;
    uint64_t hits = 0;
    if (insert) {
        for (int r = 0; r < rounds; r++) {
            if (r) { /* a fresh filter each round (the cuckoo filter cannot take the keys twice) */
                destroy(type, f);
                f = create(type, n, keys);
            }
            double t0 = now();
            insert_loop(type, f, keys, n);
            t += now() - t0;
            calls += (double)n;
        }
    } else {
        if (!is_static) insert_loop(type, f, keys, n);
        for (int r = 0; r < rounds; r++) {
            double t0 = now();
            hits += query_loop(type, f, keys, 2 * n);
            t += now() - t0;
            calls += 2.0 * (double)n;
        }
    }
    printf("%s %s%s: n = %llu, %.0f calls, %.1f ns per call, %llu hits\n", type, op, use_u64 ? " (u64)" : "", (unsigned long long)n, calls,
           t / calls, (unsigned long long)hits);
    destroy(type, f);
    free(keys);
    return 0;
}
