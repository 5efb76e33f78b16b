/*
 * conc_countscal: throughput of the counting and scalable filters' atomic forms with 1, 2 and 4
 * threads, next to the single-threaded plain (non-atomic) forms. Figures only.
 *
 *   conc_countscal [-n N]
 *
 * counting: sized for N keys at 1%; each thread adds its own N / threads pre-hashed keys with
 * bk_counting_add_hash_atomic, then queries them, then removes them with
 * bk_counting_remove_hash_atomic ("plain": one thread, bk_counting_add_hash / remove_hash).
 * scalable: starts at 100 keys (RedisBloom's default) and grows to N with bk_scalable_add_hash_atomic
 * ("plain": bk_scalable_add_hash_if_absent), then every thread queries its keys. Throughput is total
 * operations / wall time, in millions per second.
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

enum { PLAIN_ADD, ATOMIC_ADD, QUERY, PLAIN_REMOVE, ATOMIC_REMOVE };

typedef struct {
    void *f;
    bool scalable;
    const uint64_t *h;
    size_t n;
    int mode;
    size_t ok;
} job_t;

static void *work(void *arg)
{
    job_t *j = arg;
    size_t ok = 0;
    if (j->scalable) {
        bk_scalable *f = j->f;
        for (size_t i = 0; i < j->n; i++) {
            if (j->mode == PLAIN_ADD) ok += bk_scalable_add_hash_if_absent(f, j->h[i]) == BK_OK;
            else if (j->mode == ATOMIC_ADD) ok += bk_scalable_add_hash_atomic(f, j->h[i]) == BK_OK;
            else ok += bk_scalable_contains_hash(f, j->h[i]);
        }
    } else {
        bk_counting *f = j->f;
        for (size_t i = 0; i < j->n; i++) {
            switch (j->mode) {
            case PLAIN_ADD: ok += bk_counting_add_hash(f, j->h[i]) == BK_OK; break;
            case ATOMIC_ADD: ok += bk_counting_add_hash_atomic(f, j->h[i]) == BK_OK; break;
            case QUERY: ok += bk_counting_contains_hash(f, j->h[i]); break;
            case PLAIN_REMOVE: ok += bk_counting_remove_hash(f, j->h[i]) == BK_OK; break;
            default: ok += bk_counting_remove_hash_atomic(f, j->h[i]) == BK_OK; break;
            }
        }
    }
    j->ok = ok;
    return NULL;
}

/* Millions of operations per second with `threads` threads splitting h[0..n). */
static double run(void *f, bool scalable, const uint64_t *h, size_t n, int threads, int mode, size_t *ok)
{
    pthread_t t[4];
    job_t jobs[4];
    size_t per = n / (size_t)threads;
    double t0 = now_ns();
    for (int i = 0; i < threads; i++) {
        jobs[i] = (job_t){ f, scalable, h + (size_t)i * per, i == threads - 1 ? n - (size_t)i * per : per, mode, 0 };
        pthread_create(&t[i], NULL, work, &jobs[i]);
    }
    *ok = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        *ok += jobs[i].ok;
    }
    return (double)n / ((now_ns() - t0) / 1e3);
}

int main(int argc, char **argv)
{
    size_t n = 4000000;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = (size_t)strtod(argv[++i], NULL);
    uint64_t *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = mix(i);
    printf("n = %zu pre-hashed keys, p = 1%%; Mops/s (total over threads)\n\n", n);
    printf("%-10s %-8s %7s %9s %9s %9s %s\n", "filter", "form", "threads", "add", "query", "remove", "check");
    const int modes[] = { 0, 1, 1, 1 }, threads[] = { 1, 1, 2, 4 };
    for (int s = 0; s < 2; s++) {
        for (int c = 0; c < 4; c++) {
            void *f;
            if (s) {
                bk_scalable_options o = bk_scalable_default_options();
                o.max_bytes = BK_MAX_FILTER_BYTES;
                if (bk_scalable_new(100, 0.01, &o, (bk_scalable **)&f) != BK_OK) return 1;
            } else if (bk_counting_new(n, 0.01, NULL, (bk_counting **)&f) != BK_OK) {
                return 1;
            }
            size_t added, found, removed = 0;
            double a = run(f, s, h, n, threads[c], modes[c] ? ATOMIC_ADD : PLAIN_ADD, &added);
            double q = run(f, s, h, n, threads[c], QUERY, &found);
            double r = 0;
            if (!s) r = run(f, s, h, n, threads[c], modes[c] ? ATOMIC_REMOVE : PLAIN_REMOVE, &removed);
            uint64_t count = s ? bk_scalable_count(f) : bk_counting_count(f);
            char rs[16] = "-";
            if (!s) snprintf(rs, sizeof rs, "%.2f", r);
            printf("%-10s %-8s %7d %9.2f %9.2f %9s %s\n", s ? "scalable" : "counting", modes[c] ? "atomic" : "plain",
                   threads[c], a, q, rs,
                   found == n && (s ? count == added : (added == n && removed == n && count == 0)) ? "ok" : "MISMATCH");
            if (s) bk_scalable_free(f);
            else bk_counting_free(f);
        }
    }
    free(h);
    return 0;
}
