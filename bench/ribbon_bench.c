/*
 * ribbon_bench: the Ribbon filter beside the 8- and 16-bit fuse filters and the classic Bloom filter,
 * on the same pre-hashed keys (splitmix64 streams, fixed seeds), at each n and p asked for:
 * bits/key (and its ratio to log2(1/p)), the FPR measured on absent keys, build ns/key (the classic
 * filter: its inserts), one-key query ns (present and absent keys alike) and the batch form's ns per
 * key, and each figure's ratio to fuse8's. Times are the thread's CPU clock, the best of -r rounds.
 * Both filters are queried alike: the same keys (a pre-hashed key, the *_contains_hash call and the
 * batch form on the same array), the same loop; the query ratios are taken in the same rounds, fuse8's
 * loops (one fuse8 filter built per n) alternated with the other filter's in each round, so that a
 * change of the machine's load between rows does not enter them.
 *
 *   ribbon_bench [-n N,...] [-p P,...] [-q absent] [-r rounds] [--only ribbon,fuse8,fuse16,classic]
 *   defaults: -n 1e6,1e7  -p 0.1,0.01,0.001,0.0001  -q 1e6  -r 1
 *
 * Instruction counts per one-key call: bench/callgrind_calls.sh (exact, whatever the load).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bloomkit/bloomkit.h>
#include "benchutil.h"

enum { RIBBON, FUSE8, FUSE16, CLASSIC, NKINDS };
static const char *const kind_name[NKINDS] = { "ribbon", "fuse8", "fuse16", "classic" };

typedef struct {
    double bits, fpr, build, query, batch;
    double ref_query, ref_batch; /* fuse8's, in the same rounds */
    bool ok;
} row;

static void *make(int kind, const uint64_t *h, size_t n, double p)
{
    if (kind == RIBBON) {
        bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
        o.fpr = p;
        bk_ribbon *f;
        return bk_ribbon_build_hashes(h, n, &o, &f) == BK_OK ? f : NULL;
    }
    if (kind == FUSE8 || kind == FUSE16) {
        bk_fuse_options o = BK_FUSE_OPTIONS_INIT;
        o.fingerprint_bits = kind == FUSE8 ? 8 : 16;
        bk_fuse *f;
        return bk_fuse_build_hashes(h, n, &o, &f) == BK_OK ? f : NULL;
    }
    bk_bloom *f;
    if (bk_bloom_new(n, p, NULL, &f) != BK_OK) return NULL;
    if (bk_bloom_add_hashes(f, h, n) != BK_OK) {
        bk_bloom_free(f);
        return NULL;
    }
    return f;
}

static void drop(int kind, void *f)
{
    if (kind == RIBBON) bk_ribbon_free(f);
    else if (kind == CLASSIC) bk_bloom_free(f);
    else bk_fuse_free(f);
}

static __attribute__((noinline)) size_t one_by_one(int kind, const void *f, const uint64_t *q, size_t n)
{
    size_t hits = 0;
    if (kind == RIBBON)
        for (size_t i = 0; i < n; i++) hits += bk_ribbon_contains_hash(f, q[i]);
    else if (kind == CLASSIC)
        for (size_t i = 0; i < n; i++) hits += bk_bloom_contains_hash(f, q[i]);
    else
        for (size_t i = 0; i < n; i++) hits += bk_fuse_contains_hash(f, q[i]);
    return hits;
}

static size_t batched(int kind, const void *f, const uint64_t *q, size_t n, uint8_t *res)
{
    size_t hits = 0;
    bk_status s;
    if (kind == RIBBON) s = bk_ribbon_contains_hashes(f, q, n, res, &hits);
    else if (kind == CLASSIC) s = bk_bloom_contains_hashes(f, q, n, res, &hits);
    else s = bk_fuse_contains_hashes(f, q, n, res, &hits);
    return s == BK_OK ? hits : 0;
}

static size_t bytes_of(int kind, const void *f)
{
    bk_stats st;
    if (kind == RIBBON) bk_ribbon_stats(f, &st);
    else if (kind == CLASSIC) bk_bloom_stats(f, &st);
    else bk_fuse_stats(f, &st);
    return (size_t)st.memory_bytes;
}

/* One round of the one-key and the batch loop over mix, each time kept in *one / *batch when it is
 * the best so far; the two loops' answers must agree. */
static void time_loops(int kind, const void *f, const uint64_t *mix, size_t total, uint8_t *res, double *one,
                       double *batch)
{
    const double t0 = bu_cpu_ns();
    const size_t hits = one_by_one(kind, f, mix, total);
    const double t1 = bu_cpu_ns();
    const size_t hb = batched(kind, f, mix, total, res);
    const double t2 = bu_cpu_ns();
    if (t1 - t0 < *one) *one = t1 - t0;
    if (t2 - t1 < *batch) *batch = t2 - t1;
    if (hits != hb) fprintf(stderr, "%s: one-key and batch answers differ\n", kind_name[kind]);
}

static row run(int kind, const uint64_t *h, size_t n, double p, const uint64_t *absent, size_t q, int rounds,
               const void *fuse8)
{
    row r = { 0 };
    double best = INFINITY;
    void *f = NULL;
    for (int i = 0; i < rounds; i++) {
        if (f) drop(kind, f);
        double t0 = bu_cpu_ns();
        f = make(kind, h, n, p);
        double t = bu_cpu_ns() - t0;
        if (!f) return r;
        if (t < best) best = t;
    }
    r.ok = true;
    r.build = best / (double)n;
    r.bits = (double)bytes_of(kind, f) * 8.0 / (double)n;
    /* queries: half present (the first keys), half absent */
    size_t m = q < n ? q : n, total = 2 * m;
    uint64_t *mix = malloc(total * sizeof *mix);
    uint8_t *res = malloc(total);
    for (size_t i = 0; i < m; i++) {
        mix[2 * i] = h[(i * 7919) % n];
        mix[2 * i + 1] = absent[i];
    }
    double tq = INFINITY, tb = INFINITY, rq = INFINITY, rb = INFINITY;
    size_t fp = 0;
    for (int i = 0; i < rounds; i++) {
        if (fuse8) time_loops(FUSE8, fuse8, mix, total, res, &rq, &rb); /* the reference's two loops first */
        time_loops(kind, f, mix, total, res, &tq, &tb);
    }
    fp = one_by_one(kind, f, absent, q);
    r.fpr = (double)fp / (double)q;
    r.query = tq / (double)total;
    r.batch = tb / (double)total;
    r.ref_query = fuse8 ? rq / (double)total : r.query;
    r.ref_batch = fuse8 ? rb / (double)total : r.batch;
    free(mix);
    free(res);
    drop(kind, f);
    return r;
}

static size_t parse_list(const char *s, double *out, size_t cap)
{
    size_t k = 0;
    while (s && *s && k < cap) {
        char *e;
        out[k++] = strtod(s, &e);
        s = *e == ',' ? e + 1 : NULL;
    }
    return k;
}

int main(int argc, char **argv)
{
    double ns[8] = { 1e6, 1e7 }, ps[8] = { 0.1, 0.01, 0.001, 0.0001 };
    size_t nn = 2, np = 4, q = 1000000;
    int rounds = 1;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) nn = parse_list(argv[++i], ns, 8);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) np = parse_list(argv[++i], ps, 8);
        else if (!strcmp(argv[i], "-q") && i + 1 < argc) q = (size_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr, "usage: ribbon_bench [-n N,...] [-p P,...] [-q absent] [-r rounds] [--only a,b]\n");
            return 2;
        }
    }
    if (rounds < 1) rounds = 1;
    bu_print_loadavg("at start");
    uint64_t *absent = malloc(q * sizeof *absent), st = 0xabcdef;
    for (size_t i = 0; i < q; i++) absent[i] = bu_splitmix64(&st);
    printf("%-9s %-8s %-8s %8s %7s %10s %9s %9s %9s %9s %9s %9s\n", "n", "p", "filter", "bits/key", "/bound",
           "FPR", "build ns", "x fuse8", "query ns", "x fuse8", "batch ns", "x fuse8");
    for (size_t a = 0; a < nn; a++) {
        size_t n = (size_t)ns[a];
        uint64_t *h = malloc(n * sizeof *h), s2 = 42;
        if (!h) return 1;
        for (size_t i = 0; i < n; i++) h[i] = bu_splitmix64(&s2);
        row fuse8 = { 0 };
        bool fuse_done = false;
        void *f8 = make(FUSE8, h, n, 0); /* the reference of every row's query ratios */
        for (size_t b = 0; b < np; b++) {
            double p = ps[b];
            static const int order[NKINDS] = { FUSE8, FUSE16, RIBBON, CLASSIC };
            for (int o = 0; o < NKINDS; o++) {
                int k = order[o];
                if (!bu_selected(only, kind_name[k]) && !(k == FUSE8)) continue;
                if ((k == FUSE8 || k == FUSE16) && fuse_done) continue; /* their p is fixed */
                row r = run(k, h, n, p, absent, q, rounds, k == FUSE8 ? NULL : f8);
                if (k == FUSE8) fuse8 = r;
                if (!r.ok) {
                    printf("%-9zu %-8g %-8s failed\n", n, p, kind_name[k]);
                    continue;
                }
                if (!bu_selected(only, kind_name[k])) continue;
                double bound = (k == FUSE8 || k == FUSE16) ? log2(1.0 / r.fpr) : log2(1.0 / p);
                printf("%-9zu %-8g %-8s %8.3f %7.3f %10.3g %9.1f %9.2f %9.1f %9.2f %9.1f %9.2f\n", n,
                       (k == FUSE8 || k == FUSE16) ? r.fpr : p, kind_name[k], r.bits, r.bits / bound, r.fpr, r.build,
                       r.build / fuse8.build, r.query, r.query / r.ref_query, r.batch, r.batch / r.ref_batch);
                fflush(stdout);
            }
            fuse_done = true;
        }
        if (f8) drop(FUSE8, f8);
        free(h);
    }
    bu_print_loadavg("at end");
    free(absent);
    return 0;
}
