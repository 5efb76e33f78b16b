/*
 * aging_dedup: the aging filter's add_if_absent (the stream-dedup step), one key per call and in
 * batches of 1024, on a stream where every other key repeats one of the last 100,000.
 *
 *   aging_dedup [W] [p]   (default W = 10,000,000, p = 0.01)
 *
 * Two count-window filters of window W take the stream's first 2W keys in batches (untimed, the ring
 * turns); then ROUNDS (3) rounds each time W/2 keys, one key per call into one filter and in
 * batches into the other (the same keys, so the two filters stay identical), and the fastest round
 * is printed in ns per key (CPU time of the thread), with the repeats found and the load average.
 * Figures only: nothing here passes or fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <bloomkit/bloomkit.h>
#include "benchutil.h"

#define ROUNDS 3
#define BATCH 1024
#define RECENT 100000

int main(int argc, char **argv)
{
    uint64_t w = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    double p = argc > 2 ? atof(argv[2]) : 0.01;
    if (w < 2 * RECENT) w = 2 * RECENT;
    uint64_t half = w / 2 / BATCH * BATCH, n = 2 * w + ROUNDS * half;
    uint64_t *k = malloc(n * sizeof *k);
    bk_aging *one, *bat;
    if (!k || bk_aging_new_count(w, p, NULL, &one) != BK_OK || bk_aging_new_count(w, p, NULL, &bat) != BK_OK) {
        fprintf(stderr, "cannot allocate\n");
        return 1;
    }
    for (uint64_t i = 0; i < n; i++)
        k[i] = i % 2 && i > RECENT ? k[i - 1 - bu_mix64(i) % RECENT] : bu_mix64(i + (UINT64_C(1) << 61));
    uint8_t r[BATCH];
    for (uint64_t i = 0; i < 2 * w; i += BATCH) {
        size_t c = 2 * w - i < BATCH ? (size_t)(2 * w - i) : BATCH;
        bk_aging_add_if_absent_hashes(one, k + i, c, r, NULL);
        bk_aging_add_if_absent_hashes(bat, k + i, c, r, NULL);
    }
    printf("W = %llu, p = %g, every other key a repeat of one of the last %d\n", (unsigned long long)w, p, RECENT);
    bu_print_loadavg("at start");
    double best1 = 1e300, bestb = 1e300;
    uint64_t found1 = 0, foundb = 0;
    for (int round = 0; round < ROUNDS; round++) {
        const uint64_t *h = k + 2 * w + (uint64_t)round * half;
        double t0 = bu_cpu_ns();
        for (uint64_t i = 0; i < half; i++) found1 += bk_aging_add_if_absent_hash(one, h[i]) == BK_EEXISTS;
        double t1 = bu_cpu_ns();
        for (uint64_t i = 0; i < half; i += BATCH) {
            size_t done = 0;
            bk_aging_add_if_absent_hashes(bat, h + i, BATCH, r, &done);
            for (size_t j = 0; j < done; j++) foundb += r[j];
        }
        double t2 = bu_cpu_ns();
        if (t1 - t0 < best1) best1 = t1 - t0;
        if (t2 - t1 < bestb) bestb = t2 - t1;
    }
    printf("add_if_absent ns/key: one key %.1f, batch %.1f (repeats found: %llu and %llu of %llu keys)\n",
           best1 / (double)half, bestb / (double)half, (unsigned long long)found1, (unsigned long long)foundb,
           (unsigned long long)(ROUNDS * half));
    bu_print_loadavg("at end");
    bk_aging_free(one);
    bk_aging_free(bat);
    free(k);
    return 0;
}
