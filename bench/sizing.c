/*
 * sizing: the cost of one blocked sizing call (for the split and 512-bit layouts what bk_blocked_new
 * sizes with, and bk_blocked_size, which also sums the mixture once for its exact FPR; the scalable
 * chain's 1024-bit sizing) against the search over the summed mixture alone, which the library used
 * before and now calls only where the fast path's bounds cannot decide; then what a scalable chain
 * pays for each new sub-filter.
 *
 *   sizing [-r rounds] [-L layers] [-w]
 *
 * For each (layout, n, p), n = 1e3 .. 1e10 and p = 0.5 .. 1e-9: CPU microseconds per call of the fast
 * search, of bk_blocked_size, of the summed mixture's search (the thread's CPU clock), and whether all
 * give the same geometry; then each layout's slowest cell. -w: the wide grid instead, n = 10 .. 1e10 in
 * decades and p = 0.5 .. 1e-300 (every p the sizing accepts; the smallest ones refused as too big for
 * most n), then only the grid (no chain). The first call of a process also pages in the sizing's
 * code and constants (a table chunk is filled only past load 256): printed apart, once.
 *
 * The chain (capacity 10, p = 1%, growth 2, the default blocked sub-filters; and compact, as the
 * Redis module's BF keys): for sub-filter i = 1 .. 32, the sizing of sub-filter i (one call, given the
 * budget spent so far), and the sum of the sizing errors of sub-filters 0 .. i-1 recomputed from their
 * geometry (one FPR mixture each, what every new sub-filter paid before the chain kept them; it now
 * adds i stored figures). Then a real chain grown from 1 key to `layers` (16) sub-filters by inserts:
 * the CPU time of each insert that appends a sub-filter (its sizing, its allocation, the insert).
 * Figures only: nothing here passes or fails.
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
bk_status bk__sc_layer_geometry(uint64_t capacity0, double p, uint32_t growth, double r, bool classic, bool carry,
                                bool compact, uint32_t i, double spent, bk_geometry *g, uint64_t *bytes, bool *small);
double bk__sc_layer_error(bool classic, const bk_geometry *g);
void bk__blocked_memo(bool on);

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

/* The chain's per-sub-filter costs for i = 1 .. 32 (see the header). */
static void chain_costs(bool compact, int rounds)
{
    const double p = 0.01, r = BK_SCALABLE_DEFAULT_TIGHTENING;
    bk_geometry g[33];
    bool small[33];
    double spent = 0, spent_at[33];
    uint32_t have = 0;
    for (uint32_t i = 0; i <= 32; i++, have++) {
        spent_at[i] = spent;
        if (bk__sc_layer_geometry(10, p, 2, r, false, true, compact, i, spent, &g[i], NULL, &small[i]) != BK_OK) break;
        spent += bk__sc_layer_error(small[i], &g[i]);
    }
    printf("\nchain: capacity 10, p = 1%%, growth 2, %s; per new sub-filter i (us)\n", compact ? "compact" : "default");
    printf("%4s %14s %10s %12s %12s\n", "i", "capacity", "sizing", "re-sum 0..i-1", "before/now");
    for (uint32_t i = 1; i < have; i++) {
        bk_geometry x;
        double t0 = bu_cpu_ns();
        for (int j = 0; j < rounds; j++)
            bk__sc_layer_geometry(10, p, 2, r, false, true, compact, i, spent_at[i], &x, NULL, NULL);
        double ts = (bu_cpu_ns() - t0) / 1e3 / rounds;
        volatile double sink = 0;
        t0 = bu_cpu_ns();
        for (int j = 0; j < rounds; j++)
            for (uint32_t q = 0; q < i; q++) sink += bk__sc_layer_error(small[q], &g[q]);
        double tr = (bu_cpu_ns() - t0) / 1e3 / rounds;
        printf("%4u %14llu %10.2f %12.2f %12.1f\n", i, (unsigned long long)g[i].n, ts, tr, (ts + tr) / ts);
    }
}

/* A real chain grown by inserts from 1 key: the CPU time of each insert that appends a sub-filter. */
static void chain_growth(uint32_t layers)
{
    bk_scalable_options o = bk_scalable_default_options();
    o.growth = 2;
    bk_scalable *f;
    if (bk_scalable_new(1, 0.01, &o, &f) != BK_OK) return;
    printf("\nchain grown from 1 key by inserts (p = 1%%, growth 2): us of the insert appending sub-filter i\n");
    uint64_t s = 1, k = 0;
    for (uint32_t have = bk_scalable_filters(f); have < layers;) {
        double t0 = bu_cpu_ns();
        if (bk_scalable_add_hash(f, bu_splitmix64(&s)) != BK_OK) break;
        double t = bu_cpu_ns() - t0;
        k++;
        uint32_t now = bk_scalable_filters(f);
        if (now != have) printf("  i = %2u after %10llu keys: %8.2f us\n", now - 1, (unsigned long long)k, t / 1e3);
        have = now;
    }
    bk_scalable_free(f);
}

int main(int argc, char **argv)
{
    int rounds = 20, layers = 16;
    bool wide = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-L") && i + 1 < argc) layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-w")) wide = true;
        else {
            fprintf(stderr, "usage: sizing [-r rounds] [-L layers] [-w]\n");
            return 2;
        }
    }
    if (rounds < 1) rounds = 1;
    {
        bk_geometry g;
        double t0 = bu_cpu_ns();
        bk_blocked_size(1000000, 0.01, BK_BLOCKED_512, &g);
        printf("first sizing of the process (its code and constants paged in): %.1f us\n", (bu_cpu_ns() - t0) / 1e3);
        /* the same call again answers from the thread's memo of its last sizings; the figures below
         * time the search itself, with the memo off */
        t0 = bu_cpu_ns();
        for (int i = 0; i < 1000; i++) bk__blocked_size_mk(1000, 0.01, BK_BLOCKED_512, &g);
        printf("the same sizing again (the thread's memo): %.3f us\n", (bu_cpu_ns() - t0) / 1e3 / 1000);
        bk__blocked_memo(false);
    }
    static const char *names[3] = { "split", "512", "1024" };
    static const uint64_t ns_std[] = { 1000, 100000, 10000000, 1000000000, UINT64_C(10000000000) };
    static const double ps_std[] = { 0.5, 0.01, 0.001, 1e-4, 1e-6, 1e-9 };
    static const uint64_t ns_wide[] = { 10,       100,       1000,       10000,       100000,
                                        1000000,  10000000,  100000000,  1000000000, UINT64_C(10000000000) };
    static const double ps_wide[] = { 0.5,   0.01,  1e-4,  1e-6,  1e-9,  1e-12, 1e-13, 1e-14, 1e-15, 1e-16,
                                      1e-17, 1e-18, 1e-20, 1e-25, 1e-30, 1e-40, 1e-60, 1e-100, 1e-300 };
    const uint64_t *ns = wide ? ns_wide : ns_std;
    const double *ps = wide ? ps_wide : ps_std;
    const size_t nn = wide ? sizeof ns_wide / sizeof ns_wide[0] : sizeof ns_std / sizeof ns_std[0];
    const size_t np = wide ? sizeof ps_wide / sizeof ps_wide[0] : sizeof ps_std / sizeof ps_std[0];
    bu_print_loadavg("before");
    printf("%-5s %11s %7s %10s %10s %12s %8s %s\n", "block", "n", "p", "fast us", "size() us", "summed us", "ratio",
           "geometry");
    double worst[3] = { 0, 0, 0 };
    uint64_t worst_n[3] = { 0, 0, 0 };
    double worst_p[3] = { 0, 0, 0 };
    for (int code = 0; code < 3; code++)
        for (size_t i = 0; i < nn; i++)
            for (size_t j = 0; j < np; j++) {
                bk_geometry a, b, c;
                memset(&a, 0, sizeof a);
                memset(&b, 0, sizeof b);
                memset(&c, 0, sizeof c);
                double tf = per_call_us(0, ns[i], ps[j], code, rounds * 50, &a);
                double tp = per_call_us(1, ns[i], ps[j], code, rounds * 10, &c);
                double ts = per_call_us(2, ns[i], ps[j], code, rounds, &b);
                printf("%-5s %11llu %7g %10.2f %10.2f %12.1f %8.0f %s\n", names[code], (unsigned long long)ns[i], ps[j], tf,
                       tp, ts, ts / tf, a.m == b.m && a.k == b.k && c.m == b.m && c.k == b.k ? "same" : "DIFFERENT");
                if (tf > worst[code]) worst[code] = tf, worst_n[code] = ns[i], worst_p[code] = ps[j];
            }
    for (int code = 0; code < 3; code++)
        printf("slowest %-5s cell: n = %llu, p = %g: %.2f us (fast search)\n", names[code], (unsigned long long)worst_n[code],
               worst_p[code], worst[code]);
    if (wide) {
        bu_print_loadavg("after");
        return 0;
    }
    chain_costs(false, rounds * 10);
    chain_costs(true, rounds * 10);
    chain_growth((uint32_t)layers);
    bu_print_loadavg("after");
    return 0;
}
