/*
 * sizing: the cost of one blocked sizing call (for the split and 512-bit layouts what bk_blocked_new
 * sizes with, and bk_blocked_size, which also sums the mixture once for its exact FPR; the scalable
 * chain's 1024-bit sizing) against the search over the summed mixture alone, which the library used
 * before and now calls only where the fast path's bounds cannot decide.
 *
 *   sizing [-r rounds]
 *
 * For each (layout, n, p): CPU microseconds per call of the fast search, of bk_blocked_size, of the
 * summed mixture's search (the thread's CPU clock), and whether all give the same geometry. Figures only: nothing here passes or fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bloomkit/bloomkit.h>
#include "benchutil.h"

/* Internal entry points (hidden in the shared library; the static one links them). */
bk_status bk__blocked1024_size(uint64_t n, double p, bk_geometry *out);
bk_status bk__blocked_size_summed(uint64_t n, double p, int layout_code, bk_geometry *out);
bk_status bk__blocked_size_mk(uint64_t n, double p, int layout_code, bk_geometry *out);

static bk_status fast(uint64_t n, double p, int code, bk_geometry *g)
{
    return code == 2 ? bk__blocked1024_size(n, p, g) : bk__blocked_size_mk(n, p, code, g);
}

static bk_status public_size(uint64_t n, double p, int code, bk_geometry *g)
{
    return code == 2 ? bk__blocked1024_size(n, p, g) : bk_blocked_size(n, p, (bk_blocked_layout)code, g);
}

static double per_call_us(int which, uint64_t n, double p, int code, int rounds, bk_geometry *g)
{
    double t0 = bu_cpu_ns();
    for (int i = 0; i < rounds; i++) {
        if (which == 2)
            bk__blocked_size_summed(n, p, code, g);
        else if (which == 1)
            public_size(n, p, code, g);
        else
            fast(n, p, code, g);
    }
    return (bu_cpu_ns() - t0) / 1e3 / rounds;
}

int main(int argc, char **argv)
{
    int rounds = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: sizing [-r rounds]\n");
            return 2;
        }
    }
    static const char *names[3] = { "split", "512", "1024" };
    static const uint64_t ns[] = { 1000, 100000, 10000000, 1000000000 };
    static const double ps[] = { 0.01, 0.001, 1e-4, 1e-6 };
    bu_print_loadavg("before");
    printf("%-5s %11s %7s %10s %10s %12s %8s %s\n", "block", "n", "p", "fast us", "size() us", "summed us", "ratio",
           "geometry");
    for (int code = 0; code < 3; code++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            for (size_t j = 0; j < sizeof ps / sizeof ps[0]; j++) {
                bk_geometry a, b, c;
                memset(&a, 0, sizeof a);
                memset(&b, 0, sizeof b);
                memset(&c, 0, sizeof c);
                double tf = per_call_us(0, ns[i], ps[j], code, rounds * 50, &a);
                double tp = per_call_us(1, ns[i], ps[j], code, rounds * 10, &c);
                double ts = per_call_us(2, ns[i], ps[j], code, rounds, &b);
                printf("%-5s %11llu %7g %10.2f %10.2f %12.1f %8.0f %s\n", names[code], (unsigned long long)ns[i], ps[j], tf,
                       tp, ts, ts / tf, a.m == b.m && a.k == b.k && c.m == b.m && c.k == b.k ? "same" : "DIFFERENT");
            }
    bu_print_loadavg("after");
    return 0;
}
