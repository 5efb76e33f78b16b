/*
 * aging_space: the aging filter's bits per window key and measured FPR at p = 10%, 1%, 0.1%, 0.01%,
 * beside the two sliding-window filters it is weighed against, from their formulas:
 *   APBF     the Age-Partitioned Bloom Filter (Shtul, Baquero, Almeida 2020) in its best configuration
 *            for p: k + l slices of m bits, generations of m ln 2 / k keys (each slice half full when
 *            it leaves the k active ones), a window of l generations, so (k + l) k / (l ln 2) bits per
 *            window key; its FPR is the paper's recurrence F(k, l, 0, 0) (the probability that k
 *            consecutive slices of k + l, filled as (i + 1) / 2k for the i-th of the first k and 1/2
 *            after, all hold the key's bit); for each k the largest l with F <= p.
 *   rotating two classic filters that each hold the window at p / 2: 2 * log2(2 / p) / ln 2 bits per
 *            window key.
 * The aging filter is a count window of W keys filled to its worst moment, every generation full
 * (the next insert turns the ring), with keys of set 1; its FPR is measured on ABSENT absent keys
 * (set 999). Bits per window key: the ring's bytes * 8 / W. Then query cost: thread CPU ns per
 * absent-key query, one key at a time and in batches of 1024 (rough on a loaded machine: the load
 * average is printed). A benchmark: it prints, never gates.
 *
 * Usage: aging_space [W]     (default 1000000)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>

#include <bloomkit/bloomkit.h>

#include "benchutil.h"

#define ABSENT 1000000

static uint64_t key_hash(uint64_t set, uint64_t i) { return bu_mix64(bu_mix64(set) ^ (i * UINT64_C(0x9e3779b97f4a7c15))); }

/* APBF's F(k, l, a, i) by dynamic programming over i (from the last slice back). */
static double apbf_fpr(int k, int l)
{
    int n = k + l + 1;
    double *next = calloc((size_t)k + 1, sizeof *next), *cur = calloc((size_t)k + 1, sizeof *cur);
    if (!next || !cur) {
        free(next);
        free(cur);
        return 1;
    }
    /* next[a] = F(a, i + 1); at i = n every a < k has i > l + a, so 0; a = k is 1 */
    for (int a = 0; a <= k; a++) next[a] = a == k ? 1 : 0;
    for (int i = n - 1; i >= 0; i--) {
        double r = i < k ? (i + 1.0) / (2.0 * k) : 0.5;
        for (int a = 0; a <= k; a++) {
            if (a == k)
                cur[a] = 1;
            else if (i > l + a)
                cur[a] = 0;
            else
                cur[a] = r * next[a + 1] + (1 - r) * next[0];
        }
        double *t = next;
        next = cur;
        cur = t;
    }
    double f = next[0];
    free(next);
    free(cur);
    return f;
}

static double apbf_best(double p, int *bk, int *bl)
{
    double best = HUGE_VAL;
    for (int k = 1; k <= 40; k++) {
        int lo = 0, hi = 4096; /* F grows with l: the largest l with F <= p */
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (apbf_fpr(k, mid) <= p)
                lo = mid;
            else
                hi = mid;
        }
        if (!lo) continue;
        double bits = (double)(k + lo) * k / (lo * log(2.0));
        if (bits < best) {
            best = bits;
            *bk = k;
            *bl = lo;
        }
    }
    return best;
}

int main(int argc, char **argv)
{
    uint64_t w = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    static const double ps[] = { 0.1, 0.01, 0.001, 0.0001 };
    bu_print_loadavg("before");
    printf("count window W = %llu keys, filled until every generation is full; FPR on %d absent keys\n\n",
           (unsigned long long)w, ABSENT);
    printf("%-8s | %-22s | %-9s | %-32s | %s\n", "p", "APBF best (k, l)", "rotating", "aging: bits/key  FPR  (g, lines)",
           "query ns: one, batch");
    uint64_t *hs = malloc(ABSENT * sizeof *hs);
    uint8_t *res = malloc(1024);
    if (!hs || !res) return 1;
    for (uint64_t i = 0; i < ABSENT; i++) hs[i] = key_hash(999, i);
    for (size_t q = 0; q < sizeof ps / sizeof ps[0]; q++) {
        double p = ps[q];
        int ak = 0, al = 0;
        double apbf = apbf_best(p, &ak, &al);
        double rot = 2 * log2(2 / p) / log(2.0);
        bk_aging_geometry geo;
        bk_aging *f;
        if (bk_aging_size(w, p, 0, &geo) != BK_OK || bk_aging_new_count(w, p, NULL, &f) != BK_OK) {
            printf("%-8g | sizing failed\n", p);
            continue;
        }
        /* every generation full: g * C insertions (and more, a whole number of generations) */
        uint64_t fill = (uint64_t)geo.generations * geo.gen_capacity + geo.gen_capacity;
        for (uint64_t i = 0; i < fill; i++) (void)bk_aging_add_hash(f, key_hash(1, i));
        bk_stats st;
        bk_aging_stats(f, &st);
        double bits = (double)st.memory_bytes * 8.0 / (double)w;
        uint64_t fp = 0;
        double t0 = bu_cpu_ns();
        for (uint64_t i = 0; i < ABSENT; i++) fp += bk_aging_contains_hash(f, hs[i]);
        double one = (bu_cpu_ns() - t0) / ABSENT;
        size_t hits = 0, fpb = 0;
        t0 = bu_cpu_ns();
        for (uint64_t i = 0; i < ABSENT; i += 1024) {
            size_t n = ABSENT - i < 1024 ? ABSENT - i : 1024;
            (void)bk_aging_contains_hashes(f, hs + i, n, res, &hits);
            fpb += hits;
        }
        double batch = (bu_cpu_ns() - t0) / ABSENT;
        double lines = (double)geo.bytes / (double)geo.blocks / 64.0;
        char a[64], g[64];
        snprintf(a, sizeof a, "%.2f (%d, %d)", apbf, ak, al);
        snprintf(g, sizeof g, "%.2f  %.4f%%  (%u, %.0f)", bits, 100.0 * (double)fp / ABSENT, geo.generations, lines);
        printf("%-8g | %-22s | %-9.2f | %-32s | %.1f, %.1f%s\n", p, a, rot, g, one, batch,
               fpb == fp ? "" : "  (batch answers differ!)");
        fflush(stdout);
        bk_aging_free(f);
    }
    bu_print_loadavg("after");
    free(hs);
    free(res);
    return 0;
}
