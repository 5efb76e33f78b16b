/*
 * aging_cache: one phase of bench/aging under a cache simulator, for last-level-cache misses per key
 * (a figure no other load on the machine changes).
 *
 *   valgrind --tool=callgrind --cache-sim=yes --collect-atstart=no --LL=4194304,16,64 \
 *       aging_cache FILTER PHASE [W] [p]
 *
 * FILTER: aging or blocked (one blocked filter sized for W keys at p, as bench/aging's reference).
 * PHASE: add (batch inserts), add1 (one key per call), in / out (batch queries of window keys / of
 * new keys), in1 / out1 (one-key queries), and for the aging filter only dedup / dedup1 (add-if-absent
 * of new keys, in batches / one key per call). The filter first takes 2W inserts in batches of 1024 (the
 * aging ring turns several times; the blocked filter is cleared every W as in bench/aging), and a
 * query phase also takes the third W; then only the measured phase (W keys) is collected
 * (CALLGRIND_TOGGLE_COLLECT): callgrind's D1/LL miss counts divided by W are the misses per key.
 * The cache simulation runs from the start, so the phase starts with the cache as the fill left it.
 * Keys and queries are those of bench/aging (bu_mix64 of the index). Figures only.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bloomkit/bloomkit.h>
#include "benchutil.h"
#if defined(__has_include)
#  if __has_include(<valgrind/callgrind.h>)
#    include <valgrind/callgrind.h>
#  endif
#endif
#ifndef CALLGRIND_TOGGLE_COLLECT
#  define CALLGRIND_TOGGLE_COLLECT
#endif

typedef struct filt {
    bk_aging *ag;
    bk_blocked *bl;
    uint64_t w, since_clear;
} filt;

static void add_batch(filt *f, const uint64_t *h, size_t n)
{
    if (f->ag) {
        bk_aging_add_hashes(f->ag, h, n);
        return;
    }
    while (n) {
        if (f->since_clear == f->w) {
            bk_blocked_clear(f->bl);
            f->since_clear = 0;
        }
        size_t take = f->w - f->since_clear < n ? (size_t)(f->w - f->since_clear) : n;
        bk_blocked_add_hashes(f->bl, h, take);
        f->since_clear += take;
        h += take;
        n -= take;
    }
}

static void add_one(filt *f, uint64_t h)
{
    if (f->ag) {
        bk_aging_add_hash(f->ag, h);
        return;
    }
    if (f->since_clear == f->w) {
        bk_blocked_clear(f->bl);
        f->since_clear = 0;
    }
    bk_blocked_add_hash(f->bl, h);
    f->since_clear++;
}

static size_t query_batch(filt *f, const uint64_t *h, size_t n, uint8_t *r)
{
    size_t hits = 0;
    if (f->ag)
        bk_aging_contains_hashes(f->ag, h, n, r, &hits);
    else
        bk_blocked_contains_hashes(f->bl, h, n, r, &hits);
    return hits;
}

static size_t dedup_batch(filt *f, const uint64_t *h, size_t n, uint8_t *r)
{
    size_t found = 0;
    bk_aging_add_if_absent_hashes(f->ag, h, n, r, NULL);
    for (size_t i = 0; i < n; i++) found += r[i];
    return found;
}

static bool query_one(filt *f, uint64_t h)
{
    return f->ag ? bk_aging_contains_hash(f->ag, h) : bk_blocked_contains_hash(f->bl, h);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: aging_cache aging|blocked add|add1|in|out|in1|out1|dedup|dedup1 [W] [p]\n");
        return 2;
    }
    const char *phase = argv[2];
    bool dedup = strncmp(phase, "dedup", 5) == 0;
    if (dedup && strcmp(argv[1], "aging") != 0) {
        fprintf(stderr, "dedup phases: the aging filter only\n");
        return 2;
    }
    uint64_t w = argc > 3 ? strtoull(argv[3], NULL, 10) : 2500000;
    double p = argc > 4 ? atof(argv[4]) : 0.01;
    filt f = { .w = w };
    if (strcmp(argv[1], "aging") == 0 ? bk_aging_new_count(w, p, NULL, &f.ag) != BK_OK
                                      : bk_blocked_new(w, p, NULL, &f.bl) != BK_OK) {
        fprintf(stderr, "cannot create the filter\n");
        return 1;
    }
    uint64_t n = 3 * w;
    uint64_t *keys = malloc(n * sizeof *keys), *q = malloc(w * sizeof *q);
    uint8_t r[1024];
    if (!keys || !q) return 1;
    for (uint64_t i = 0; i < n; i++) keys[i] = bu_mix64(i);
    bool adding = dedup || strncmp(phase, "add", 3) == 0, one = phase[strlen(phase) - 1] == '1';
    for (uint64_t i = 0; i < w; i++)
        q[i] = phase[0] == 'o' ? bu_mix64(i + (UINT64_C(1) << 60)) : keys[n - w + (i * UINT64_C(7919) + 13) % w];
    uint64_t fill = adding ? 2 * w : n;
    for (uint64_t i = 0; i < fill; i += 1024) add_batch(&f, keys + i, fill - i < 1024 ? (size_t)(fill - i) : 1024);
    size_t hits = 0;
    CALLGRIND_TOGGLE_COLLECT;
    if (dedup && one)
        for (uint64_t i = fill; i < n; i++) hits += bk_aging_add_if_absent_hash(f.ag, keys[i]) == BK_EEXISTS;
    else if (dedup)
        for (uint64_t i = fill; i < n; i += 1024) hits += dedup_batch(&f, keys + i, n - i < 1024 ? (size_t)(n - i) : 1024, r);
    else if (adding && one)
        for (uint64_t i = fill; i < n; i++) add_one(&f, keys[i]);
    else if (adding)
        for (uint64_t i = fill; i < n; i += 1024) add_batch(&f, keys + i, n - i < 1024 ? (size_t)(n - i) : 1024);
    else if (one)
        for (uint64_t i = 0; i < w; i++) hits += query_one(&f, q[i]);
    else
        for (uint64_t i = 0; i < w; i += 1024) hits += query_batch(&f, q + i, w - i < 1024 ? (size_t)(w - i) : 1024, r);
    CALLGRIND_TOGGLE_COLLECT;
    printf("%s %s W=%llu: %zu hits of %llu\n", argv[1], phase, (unsigned long long)w, hits, (unsigned long long)w);
    free(keys);
    free(q);
    if (f.ag) bk_aging_free(f.ag);
    if (f.bl) bk_blocked_free(f.bl);
    return 0;
}
