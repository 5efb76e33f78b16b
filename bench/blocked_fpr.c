/*
 * blocked_fpr: the FPR a blocked filter sized by bk_blocked_size delivers, against the p asked for.
 *
 *   blocked_fpr [-n N] [-q Q] [--layout 512|split|both] [p ...]      (default p: 0.01 0.001 0.0001)
 *
 * For each p: a filter for N keys (default 1,000,000) at p, N inserted hashes, then Q (default 4e8)
 * hashes never inserted, all from splitmix64 streams with fixed seeds, through the pre-hashed calls
 * (the filter uses a hash's bits as they are). Prints the geometry, the FPR its formula promises
 * (bk_geometry.fpr), the measured FPR, measured / p with its 95% interval, and measured / promised.
 * Figures only: nothing here passes or fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bloomkit/bloomkit.h>
#include "bench.h"
#include "benchutil.h"

static void run(bk_blocked_layout layout, uint64_t n, uint64_t q, double p)
{
    bk_geometry g;
    bk_blocked *f;
    bk_blocked_options o = { .layout = layout, .seed = 0 };
    if (bk_blocked_size(n, p, layout, &g) != BK_OK || bk_blocked_new(n, p, &o, &f) != BK_OK) {
        printf("%-6s p=%-8g cannot be created\n", layout == BK_BLOCKED_512 ? "512" : "split", p);
        return;
    }
    enum { CH = 4096 };
    static uint64_t h[CH];
    static uint8_t res[CH];
    uint64_t s = UINT64_C(0x1234567) ^ (uint64_t)(p * 1e12);
    for (uint64_t i = 0; i < n; i += CH) {
        size_t c = n - i < CH ? (size_t)(n - i) : CH;
        for (size_t j = 0; j < c; j++) h[j] = bu_splitmix64(&s);
        bk_blocked_add_hashes(f, h, c);
    }
    uint64_t t = UINT64_C(0xfeedbeef) ^ (uint64_t)(p * 1e12), fp = 0;
    for (uint64_t i = 0; i < q; i += CH) {
        size_t c = q - i < CH ? (size_t)(q - i) : CH;
        for (size_t j = 0; j < c; j++) h[j] = bu_splitmix64(&t);
        fp += BENCH_HITS(bk_blocked_contains_hashes, f, h, c, res);
    }
    double m = (double)fp / (double)q, half = 1.96 * sqrt((double)fp) / (double)q;
    printf("%-6s p=%-8g k=%-2u bits/key=%6.3f  promised=%.4e  measured=%.4e  measured/p=%.4f [%.4f, %.4f]  "
           "measured/promised=%.4f\n",
           layout == BK_BLOCKED_512 ? "512" : "split", p, g.k, g.bits_per_key, g.fpr, m, m / p, (m - half) / p,
           (m + half) / p, m / g.fpr);
    fflush(stdout);
    bk_blocked_free(f);
}

int main(int argc, char **argv)
{
    uint64_t n = 1000000, q = 400000000;
    int layouts = 1; /* 1: 512, 2: split, 3: both */
    double ps[16];
    int np = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-q") && i + 1 < argc) q = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--layout") && i + 1 < argc) {
            const char *l = argv[++i];
            layouts = !strcmp(l, "512") ? 1 : !strcmp(l, "split") ? 2 : 3;
        } else if (np < 16) ps[np++] = strtod(argv[i], NULL);
    }
    if (np == 0) {
        ps[0] = 0.01, ps[1] = 0.001, ps[2] = 0.0001;
        np = 3;
    }
    printf("n = %llu keys, %llu absent queries per p, fixed seeds\n", (unsigned long long)n, (unsigned long long)q);
    for (int i = 0; i < np; i++) {
        if (layouts & 1) run(BK_BLOCKED_512, n, q, ps[i]);
        if (layouts & 2) run(BK_BLOCKED_SPLIT256, n, q, ps[i]);
    }
    return 0;
}
