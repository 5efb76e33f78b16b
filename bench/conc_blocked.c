/*
 * conc_blocked: throughput of the blocked filter's inserts and queries with 1, 2 and 4 threads, next
 * to the single-threaded plain (non-atomic) insert. Figures only.
 *
 *   conc_blocked [-n N] [--layout split|512]
 *
 * Each thread inserts its own N / threads pre-hashed keys with bk_blocked_add_hash_atomic (the
 * "plain" row: one thread, bk_blocked_add_hash), then every thread queries its keys. Throughput is
 * total operations / wall time, in millions per second. The filter is sized for N keys at 1%.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bloomkit/bloomkit.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t mix(uint64_t z)
{
    z += UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

typedef struct {
    bk_blocked *f;
    const uint64_t *h;
    size_t n;
    int mode; /* 0 plain add, 1 atomic add, 2 query */
    size_t found;
} job_t;

static void *work(void *arg)
{
    job_t *j = arg;
    if (j->mode == 0)
        for (size_t i = 0; i < j->n; i++) bk_blocked_add_hash(j->f, j->h[i]);
    else if (j->mode == 1)
        for (size_t i = 0; i < j->n; i++) bk_blocked_add_hash_atomic(j->f, j->h[i]);
    else
        for (size_t i = 0; i < j->n; i++) j->found += bk_blocked_contains_hash(j->f, j->h[i]);
    return NULL;
}

/* Mops/s of `threads` threads splitting n keys, each running `mode`. */
static double run(bk_blocked *f, const uint64_t *h, size_t n, int threads, int mode)
{
    pthread_t t[8];
    job_t jobs[8];
    size_t per = n / (size_t)threads;
    double t0 = now_ns();
    for (int i = 0; i < threads; i++) {
        jobs[i] = (job_t){ f, h + (size_t)i * per, per, mode, 0 };
        pthread_create(&t[i], NULL, work, &jobs[i]);
    }
    size_t found = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        found += jobs[i].found;
    }
    double ns = now_ns() - t0;
    if (mode == 2 && found != per * (size_t)threads) fprintf(stderr, "false negatives!\n");
    return (double)(per * (size_t)threads) / ns * 1e3;
}

int main(int argc, char **argv)
{
    size_t n = 10000000;
    bk_blocked_layout layout = BK_BLOCKED_SPLIT256;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = (size_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--layout") && i + 1 < argc)
            layout = !strcmp(argv[++i], "512") ? BK_BLOCKED_512 : BK_BLOCKED_SPLIT256;
        else {
            fprintf(stderr, "usage: conc_blocked [-n N] [--layout split|512]\n");
            return 2;
        }
    }
    uint64_t *h = malloc(n * sizeof *h);
    if (!h) return 1;
    for (size_t i = 0; i < n; i++) h[i] = mix(i);
    bk_blocked_options o = { layout, 0, BK_SIMD_AUTO };
    bk_blocked *f;
    if (bk_blocked_new(n, 0.01, &o, &f) != BK_OK) return 1;
    printf("blocked %s, n = %zu pre-hashed keys at 1%%, path %s; Mops/s (wall clock)\n\n",
           layout == BK_BLOCKED_512 ? "512" : "split256", n, bk_simd_name(bk_blocked_simd(f)));
    printf("%-26s %10s %10s %10s\n", "", "1 thread", "2 threads", "4 threads");
    printf("%-26s %10.1f %10s %10s\n", "insert (plain)", run(f, h, n, 1, 0), "-", "-");
    double q1 = run(f, h, n, 1, 2);
    printf("%-26s", "insert (atomic)");
    for (int t = 1; t <= 4; t *= 2) {
        bk_blocked_clear(f);
        printf(" %10.1f", run(f, h, n, t, 1));
    }
    printf("\n%-26s %10.1f", "query", q1);
    for (int t = 2; t <= 4; t *= 2) printf(" %10.1f", run(f, h, n, t, 2));
    printf("\n");
    bk_blocked_free(f);
    free(h);
    return 0;
}
