/*
 * conc_cuckoo: throughput of the cuckoo filter's concurrent mode (one writer lock, lock-free
 * readers) with 1, 2 and 4 threads, next to the single-threaded plain filter. Figures only.
 *
 *   conc_cuckoo [-n N]
 *
 * Each thread inserts its own N / threads pre-hashed keys (single-key calls, then the batch form:
 * one lock hold per 32 keys), then every thread queries its keys. Throughput is total operations /
 * wall time, in millions per second. The filter is sized for N keys at 1% (b = 4, 12-bit
 * fingerprints, 95% load when full), so the inserts end in long kick chains.
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
    bk_cuckoo *f;
    const uint64_t *h;
    size_t n;
    int mode; /* 0 add, 1 add in batches, 2 query */
    size_t done;
} job_t;

static void *work(void *arg)
{
    job_t *j = arg;
    if (j->mode == 0)
        for (size_t i = 0; i < j->n; i++) j->done += bk_cuckoo_add_hash(j->f, j->h[i]) == BK_OK;
    else if (j->mode == 1)
        for (size_t i = 0; i < j->n; i += 32)
            j->done += bk_cuckoo_add_hashes(j->f, j->h + i, j->n - i < 32 ? j->n - i : 32, NULL);
    else
        for (size_t i = 0; i < j->n; i++) j->done += bk_cuckoo_contains_hash(j->f, j->h[i]);
    return NULL;
}

/* Mops/s of `threads` threads splitting n keys, each running `mode`. */
static double run(bk_cuckoo *f, const uint64_t *h, size_t n, int threads, int mode)
{
    pthread_t t[8];
    job_t jobs[8];
    size_t per = n / (size_t)threads;
    double t0 = now_ns();
    for (int i = 0; i < threads; i++) {
        jobs[i] = (job_t){ f, h + (size_t)i * per, per, mode, 0 };
        pthread_create(&t[i], NULL, work, &jobs[i]);
    }
    size_t done = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        done += jobs[i].done;
    }
    double ns = now_ns() - t0;
    if (done != per * (size_t)threads) fprintf(stderr, "%s: %zu of %zu!\n", mode == 2 ? "false negatives" : "failed adds",
                                               per * (size_t)threads - done, per * (size_t)threads);
    return (double)(per * (size_t)threads) / ns * 1e3;
}

int main(int argc, char **argv)
{
    size_t n = 10000000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = (size_t)strtod(argv[++i], NULL);
        else {
            fprintf(stderr, "usage: conc_cuckoo [-n N]\n");
            return 2;
        }
    }
    n -= n % 4;
    uint64_t *h = malloc(n * sizeof *h);
    if (!h) return 1;
    for (size_t i = 0; i < n; i++) h[i] = mix(i);
    bk_cuckoo *f;
    if (bk_cuckoo_new(n, 0.01, NULL, &f) != BK_OK) return 1;
    printf("cuckoo b = 4, f = 12, n = %zu pre-hashed keys (95%% load when full); Mops/s (wall clock)\n\n", n);
    printf("%-30s %10s %10s %10s\n", "", "1 thread", "2 threads", "4 threads");
    printf("%-30s %10.2f %10s %10s\n", "insert (plain)", run(f, h, n, 1, 0), "-", "-");
    double q1 = run(f, h, n, 1, 2);
    printf("%-30s %10.2f %10s %10s\n", "query (plain)", q1, "-", "-");
    if (bk_cuckoo_set_concurrent(f, true) != BK_OK) return 1;
    const char *names[] = { "insert (concurrent)", "insert (concurrent, batch 32)" };
    for (int mode = 0; mode < 2; mode++) {
        printf("%-30s", names[mode]);
        for (int t = 1; t <= 4; t *= 2) {
            bk_cuckoo_clear(f);
            printf(" %10.2f", run(f, h, n, t, mode));
            fflush(stdout);
        }
        printf("\n");
    }
    printf("%-30s", "query (concurrent)");
    for (int t = 1; t <= 4; t *= 2) printf(" %10.2f", run(f, h, n, t, 2));
    printf("\n");
    bk_cuckoo_free(f);
    free(h);
    return 0;
}
