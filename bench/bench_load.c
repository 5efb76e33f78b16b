/*
 * Loading a large filter: read+copy (bk_filter_load_path) against mmap (bk_filter_open_mmap, with
 * and without the payload checksum), and the latency of the first queries after an mmap open.
 * Figures only, never pass/fail.
 *
 * usage: bench_load [size_MiB (default 1024)] [directory (default /tmp)]
 * "cold" means the file's pages were dropped from the page cache first (posix_fadvise DONTNEED on
 * this file only, after fsync), so the figures include reading from the disk; "warm" means the
 * file is in the page cache.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <bloomkit/bloomkit.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void drop_cache(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static long major_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_majflt;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define REPS 3

static void report(const char *what, double *t, int n, double bytes)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("%-46s median %9.3f ms  min %9.3f ms", what, t[n / 2] * 1e3, t[0] * 1e3);
    if (bytes > 0) printf("  (%.2f GB/s at the median)", bytes / t[n / 2] / 1e9);
    printf("\n");
}

int main(int argc, char **argv)
{
    uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 1024;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_load.%d.bkf", dir, (int)getpid());

    bk_bloom *b;
    bk_bloom_options o = { .layout = BK_LAYOUT_STANDARD, .seed = 1 };
    uint64_t m = mib * 1024 * 1024 * 8;
    if (bk_bloom_new_mk(m, 7, 0, &o, &b) != BK_OK) {
        fprintf(stderr, "cannot allocate a %llu MiB filter\n", (unsigned long long)mib);
        return 1;
    }
    bk_filter *f;
    bk_filter_wrap(BK_TYPE_BLOOM, b, &f);
    enum { KEYS = 1000000 };
    for (uint64_t i = 0; i < KEYS; i++) bk_filter_add_hash(f, bk_hash64(&i, sizeof i, 1));
    size_t size;
    bk_filter_save_size(f, &size);
    printf("filter: classic Bloom, %llu MiB bit array, k = 7, %d keys; file %zu bytes\n",
           (unsigned long long)mib, KEYS, size);

    double t0 = now();
    if (bk_filter_save_path(f, path) != BK_OK) {
        perror("save");
        return 1;
    }
    double ts = now() - t0;
    printf("%-46s %9.3f ms  (%.2f GB/s)\n", "save_path (write + fsync + rename)", ts * 1e3, (double)size / ts / 1e9);
    bk_filter_free(f);

    double t[REPS];
    for (int cold = 1; cold >= 0; cold--) {
        const char *c = cold ? "cold" : "warm";
        char what[128];
        if (!cold) { /* warm the cache */
            bk_filter *g;
            bk_filter_load_path(path, 0, &g);
            bk_filter_free(g);
        }
        for (int r = 0; r < REPS; r++) {
            if (cold) drop_cache(path);
            bk_filter *g;
            t0 = now();
            bk_status s = bk_filter_load_path(path, 0, &g);
            t[r] = now() - t0;
            if (s != BK_OK) {
                fprintf(stderr, "load: %s\n", bk_strerror(s));
                return 1;
            }
            bk_filter_free(g);
        }
        snprintf(what, sizeof what, "load_path, read+copy, checksum (%s)", c);
        report(what, t, REPS, (double)size);

        for (int r = 0; r < REPS; r++) {
            if (cold) drop_cache(path);
            bk_filter *g;
            t0 = now();
            bk_filter_open_mmap(path, 0, &g);
            t[r] = now() - t0;
            bk_filter_free(g);
        }
        snprintf(what, sizeof what, "open_mmap, checksum verified (%s)", c);
        report(what, t, REPS, (double)size);

        for (int r = 0; r < REPS; r++) {
            if (cold) drop_cache(path);
            bk_filter *g;
            t0 = now();
            bk_filter_open_mmap(path, BK_LOAD_NO_CHECKSUM, &g);
            t[r] = now() - t0;
            bk_filter_free(g);
        }
        snprintf(what, sizeof what, "open_mmap, BK_LOAD_NO_CHECKSUM (%s)", c);
        report(what, t, REPS, 0);

        /* first queries after an open without the checksum: each probe may fault a page in */
        double first[REPS], absent[REPS], next[REPS];
        long faults = 0;
        for (int r = 0; r < REPS; r++) {
            if (cold) drop_cache(path);
            bk_filter *g;
            bk_filter_open_mmap(path, BK_LOAD_NO_CHECKSUM, &g);
            uint64_t key = (uint64_t)r * 7919;
            long f0 = major_faults();
            t0 = now();
            bool hit = bk_filter_contains(g, &key, sizeof key); /* inserted: all 7 probes read */
            first[r] = now() - t0;
            faults += major_faults() - f0;
            if (!hit) fprintf(stderr, "false negative!\n");
            uint64_t miss = UINT64_C(1) << 40 | (uint64_t)r;
            t0 = now();
            (void)bk_filter_contains(g, &miss, sizeof miss);
            absent[r] = now() - t0;
            t0 = now();
            unsigned found = 0;
            for (uint64_t i = 1000; i < 2000; i++) found += bk_filter_contains(g, &i, sizeof i);
            next[r] = (now() - t0) / 1000;
            if (found != 1000) fprintf(stderr, "false negatives!\n");
            bk_filter_free(g);
        }
        snprintf(what, sizeof what, "first query after open, present key (%s)", c);
        report(what, first, REPS, 0);
        snprintf(what, sizeof what, "second query, absent key (%s)", c);
        report(what, absent, REPS, 0);
        snprintf(what, sizeof what, "next 1000 present keys, per query (%s)", c);
        report(what, next, REPS, 0);
        printf("%-46s %.1f per first query\n", "  major page faults", (double)faults / REPS);

        for (int r = 0; r < REPS; r++) {
            if (cold) drop_cache(path);
            bk_filter *g;
            t0 = now();
            bk_filter_open_mmap(path, BK_LOAD_NO_CHECKSUM | BK_OPEN_POPULATE, &g);
            t[r] = now() - t0;
            uint64_t key = (uint64_t)r * 7919 + 1;
            t0 = now();
            bool hit = bk_filter_contains(g, &key, sizeof key);
            first[r] = now() - t0;
            t0 = now();
            unsigned found = 0;
            for (uint64_t i = 1000; i < 2000; i++) found += bk_filter_contains(g, &i, sizeof i);
            next[r] = (now() - t0) / 1000;
            if (!hit || found != 1000) fprintf(stderr, "false negatives!\n");
            bk_filter_free(g);
        }
        snprintf(what, sizeof what, "open_mmap, NO_CHECKSUM | POPULATE (%s)", c);
        report(what, t, REPS, 0);
        snprintf(what, sizeof what, "  then first query, present key (%s)", c);
        report(what, first, REPS, 0);
        snprintf(what, sizeof what, "  then next 1000 present keys, per query (%s)", c);
        report(what, next, REPS, 0);
    }
    unlink(path);
    return 0;
}
