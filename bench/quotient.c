/*
 * quotient: the quotient filter's own figures, beside the cuckoo filter at the same n and p.
 *
 *   quotient [n ...]        (default n = 1000000 10000000; p = 1% and 0.1% each)
 *
 * For each n and p, on pre-hashed 64-bit keys (hashes made before the timer: the figures are the
 * filters'):
 *   - a quotient filter with load limit 0.96 sized for n (remainder bits from p at that load): ns per
 *     insert, per query of present and of absent keys (one call each, and in batches), per remove;
 *     measured FPR beside the bound; bits per key; load;
 *   - bits per key at 93% load: the same p, 2^q slots filled to 93% (q the largest with 0.93 * 2^q <= n);
 *   - the cuckoo filter (b = 4, 95% load at its capacity) for n at p: bits per key and measured FPR;
 *   - merge: two filters of n/2 different keys each, merged by one sweep: keys per second;
 *   - growth: a filter holding n keys doubled (one remainder bit into the quotient): ns per key;
 *   - insert cost by load band: S = 1M slots, r = 8, filled to max_load 0.95 (and 1.0): thread CPU ns
 *     per insert in each band over five filters, beside the band that ends at 50% (45-50%);
 *   - growth that keeps p, at 10%, 1%, 0.1% and 0.01%: a filter of stages made for 1,000 keys and filled to 2^10
 *     times that with bk_quotient_expand (11 stages), an expanding filter (bk_xquotient, one table)
 *     made for 1,000 keys and filled as far, and one quotient filter sized for the 1,024,000 keys:
 *     bits per key, measured FPR, thread CPU ns per insert (growth included) and per query of absent
 *     and present keys, one call each and one batch call.
 * The load average is printed at the start and end. Figures only: nothing here passes or fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bloomkit/bloomkit.h>
#include "bench.h"
#include "benchutil.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double qload(const bk_quotient *f)
{
    return (double)bk_quotient_slots_used(f) / (double)bk_quotient_slots(f);
}

static void run(uint64_t n, double p)
{
    uint64_t seed = 1;
    uint64_t *h = malloc(n * sizeof *h), *miss = malloc(n * sizeof *miss);
    uint8_t *res = malloc(n);
    if (!h || !miss || !res) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (uint64_t i = 0; i < n; i++) h[i] = bu_splitmix64(&seed);
    for (uint64_t i = 0; i < n; i++) miss[i] = bu_splitmix64(&seed);

    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.max_load = 0.96;
    bk_quotient *f;
    if (bk_quotient_new(n, p, &o, &f) != BK_OK) {
        fprintf(stderr, "cannot make a filter for n = %llu\n", (unsigned long long)n);
        exit(1);
    }
    double t0 = now_s();
    for (uint64_t i = 0; i < n; i++) bk_quotient_add_hash(f, h[i]);
    double t_ins = now_s() - t0;
    t0 = now_s();
    uint64_t hits = 0;
    for (uint64_t i = 0; i < n; i++) hits += bk_quotient_contains_hash(f, h[i]);
    double t_qh = now_s() - t0;
    t0 = now_s();
    uint64_t fps = 0;
    for (uint64_t i = 0; i < n; i++) fps += bk_quotient_contains_hash(f, miss[i]);
    double t_qm = now_s() - t0;
    t0 = now_s();
    uint64_t bh = BENCH_HITS(bk_quotient_contains_hashes, f, h, n, res);
    double t_bqh = now_s() - t0;
    t0 = now_s();
    (void)bk_quotient_contains_hashes(f, miss, n, res, NULL);
    double t_bqm = now_s() - t0;
    uint64_t q = bk_quotient_slots(f);
    uint32_t r = bk_quotient_remainder_bits(f);
    double bound = bk_quotient_fpr_slots(n, q, r); /* the formula of n keys added (docs/MATH.md) */
    double bpk = (double)bk_quotient_memory(f) * 8.0 / (double)n, load = qload(f);

    /* growth: the filter as it is, doubled */
    bk_quotient *g;
    bk_quotient_clone(f, &g);
    t0 = now_s();
    bk_status gs = bk_quotient_grow(g);
    double t_grow = now_s() - t0;
    uint64_t after = 0;
    for (uint64_t i = 0; i < n; i += 97) after += bk_quotient_contains_hash(g, h[i]);
    bk_quotient_free(g);

    t0 = now_s();
    uint64_t removed = 0;
    for (uint64_t i = 0; i < n; i++) removed += bk_quotient_remove_hash(f, h[i]) == BK_OK;
    double t_rem = now_s() - t0;
    bk_quotient_free(f);

    /* merge: two halves */
    bk_quotient *a, *b;
    bk_quotient_new(n, p, &o, &a);
    bk_quotient_new(n, p, &o, &b);
    bk_quotient_add_hashes(a, h, n / 2, NULL);
    bk_quotient_add_hashes(b, h + n / 2, n - n / 2, NULL);
    t0 = now_s();
    bk_status ms = bk_quotient_union(a, b);
    double t_merge = now_s() - t0;
    bk_quotient_free(a);
    bk_quotient_free(b);

    /* 93% load: S = n / 0.93 slots (any count) */
    uint64_t n93 = n;
    bk_quotient_geometry g93;
    bk_quotient_options o93 = BK_QUOTIENT_OPTIONS_INIT;
    o93.max_load = 0.93;
    bk_quotient_size(n93, p, &o93, &g93);
    bk_quotient *f93;
    bk_quotient_new_slots(g93.slots, g93.remainder_bits, &o93, &f93);
    bk_quotient_add_hashes(f93, h, n93, NULL);
    uint64_t fp93 = 0;
    for (uint64_t i = 0; i < n; i++) fp93 += bk_quotient_contains_hash(f93, miss[i]);
    double bpk93 = (double)bk_quotient_memory(f93) * 8.0 / (double)n93, load93 = qload(f93);
    bk_quotient_free(f93);

    /* the cuckoo filter at n and p */
    bk_cuckoo *c;
    bk_cuckoo_new(n, p, NULL, &c);
    bk_cuckoo_add_hashes(c, h, n, NULL);
    uint64_t cfp = 0;
    for (uint64_t i = 0; i < n; i++) cfp += bk_cuckoo_contains_hash(c, miss[i]);
    bk_cuckoo_info ci;
    bk_cuckoo_get_info(c, &ci);
    double cbpk = (double)ci.memory_bytes * 8.0 / (double)n;
    bk_cuckoo_free(c);

    double dn = (double)n;
    printf("\nn = %llu, p = %g: quotient S = %llu, r = %u, load %.3f, %.2f bits/key, FPR %.5f (bound %.5f), "
           "hits %llu/%llu\n",
           (unsigned long long)n, p, (unsigned long long)q, r, load, bpk, (double)fps / dn, bound, (unsigned long long)hits,
           (unsigned long long)n);
    printf("  insert %.1f ns, query present %.1f ns, absent %.1f ns; batch query present %.1f ns, absent %.1f ns; "
           "remove %.1f ns (%llu removed)\n",
           t_ins / dn * 1e9, t_qh / dn * 1e9, t_qm / dn * 1e9, t_bqh / dn * 1e9, t_bqm / dn * 1e9,
           t_rem / dn * 1e9, (unsigned long long)removed);
    (void)bh;
    printf("  merge of two halves: %.1f M keys/s (%s); growth: %.1f ns per key (%s, %llu/%llu sampled keys "
           "present after)\n",
           dn / t_merge / 1e6, bk_strerror(ms), t_grow / dn * 1e9, bk_strerror(gs), (unsigned long long)after,
           (unsigned long long)((n + 96) / 97));
    printf("  at 93%% load (S = %llu, r = %u, %llu keys, load %.3f): %.2f bits/key, FPR %.5f\n",
           (unsigned long long)g93.slots,
           g93.remainder_bits, (unsigned long long)n93, load93, bpk93, (double)fp93 / dn);
    printf("  cuckoo (b = 4, %u-bit fingerprints, load %.3f): %.2f bits/key, FPR %.5f\n", ci.fingerprint_bits,
           ci.load_factor, cbpk, (double)cfp / dn);
    free(h);
    free(miss);
    free(res);
}

/* Thread CPU ns per insert in each load band of a filter of S slots (r = 8) filled to max_load ml:
 * five filters (other keys each), the time and inserts of a band summed over them. */
static void insert_bands(uint64_t slots, double ml)
{
    enum { REPS = 5, NB = 9 };
    const double edges[NB + 1] = { 0, 0.25, 0.45, 0.50, 0.75, 0.90, 0.94, 0.95, 0.99, 1.0 };
    double ns[NB] = { 0 };
    uint64_t count[NB] = { 0 };
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.max_load = ml;
    uint64_t seed = 99;
    for (int rep = 0; rep < REPS; rep++) {
        bk_quotient *f;
        if (bk_quotient_new_slots(slots, 8, &o, &f) != BK_OK) return;
        for (int b = 0; b < NB && edges[b + 1] <= ml + 1e-9; b++) {
            uint64_t to = (uint64_t)(edges[b + 1] * (double)slots), k = 0;
            double t0 = bu_cpu_ns();
            while (bk_quotient_slots_used(f) < to && bk_quotient_add_hash(f, bu_splitmix64(&seed)) == BK_OK) k++;
            ns[b] += bu_cpu_ns() - t0;
            count[b] += k;
        }
        bk_quotient_free(f);
    }
    printf("\ninsert cost by load band, S = %llu slots, r = 8, max_load %.2f (thread CPU ns per insert, %d "
           "filters):\n",
           (unsigned long long)slots, ml, REPS);
    double base = 0;
    for (int b = 0; b < NB && count[b]; b++) {
        double per = ns[b] / (double)count[b];
        if (edges[b + 1] == 0.50) base = per;
        printf("  load %3.0f%% - %3.0f%%: %7.1f ns (%llu inserts)", edges[b] * 100, edges[b + 1] * 100, per,
               (unsigned long long)count[b]);
        if (base > 0) printf(", %.2fx the 45-50%% band", per / base);
        printf("\n");
    }
}

/* Thread CPU ns per key: one call each, then one batch call, over keys h. */
static void stage_queries(const char *name, const bk_quotient *f, const uint64_t *h, const uint64_t *miss, size_t n,
                          uint8_t *res)
{
    double t0 = bu_cpu_ns();
    size_t fa = 0, fb = 0, pa = 0, pb = 0;
    for (size_t i = 0; i < n; i++) fa += bk_quotient_contains_hash(f, miss[i]);
    double t1 = bu_cpu_ns();
    (void)bk_quotient_contains_hashes(f, miss, n, res, &fb);
    double t2 = bu_cpu_ns();
    for (size_t i = 0; i < n; i++) pa += bk_quotient_contains_hash(f, h[i]);
    double t3 = bu_cpu_ns();
    (void)bk_quotient_contains_hashes(f, h, n, res, &pb);
    double t4 = bu_cpu_ns();
    double dn = (double)n;
    printf("  %-22s %2u stages, %6.2f bits/key: absent %6.1f ns one, %6.1f ns batch (FPR %.4f%%); present %6.1f ns "
           "one, %6.1f ns batch (%zu/%zu found)\n",
           name, bk_quotient_stages(f), (double)bk_quotient_memory(f) * 8.0 / dn, (t1 - t0) / dn, (t2 - t1) / dn,
           100.0 * (double)fa / dn, (t3 - t2) / dn, (t4 - t3) / dn, pa, n);
    if (fa != fb || pa != pb) printf("  (the batch and the one-key calls disagree)\n");
}

/* The same for the expanding filter (one table). */
static void xq_queries(const char *name, const bk_xquotient *f, const uint64_t *h, const uint64_t *miss, size_t n,
                       uint8_t *res)
{
    double t0 = bu_cpu_ns();
    size_t fa = 0, fb, pa = 0, pb;
    for (size_t i = 0; i < n; i++) fa += bk_xquotient_contains_hash(f, miss[i]);
    double t1 = bu_cpu_ns();
    fb = bk_xquotient_contains_hashes(f, miss, n, res);
    double t2 = bu_cpu_ns();
    for (size_t i = 0; i < n; i++) pa += bk_xquotient_contains_hash(f, h[i]);
    double t3 = bu_cpu_ns();
    pb = bk_xquotient_contains_hashes(f, h, n, res);
    double t4 = bu_cpu_ns();
    double dn = (double)n;
    printf("  %-22s  1 table,  %6.2f bits/key: absent %6.1f ns one, %6.1f ns batch (FPR %.4f%%); present %6.1f ns "
           "one, %6.1f ns batch (%zu/%zu found)\n",
           name, (double)bk_xquotient_memory(f) * 8.0 / dn, (t1 - t0) / dn, (t2 - t1) / dn, 100.0 * (double)fa / dn,
           (t3 - t2) / dn, (t4 - t3) / dn, pa, n);
    if (fa != fb || pa != pb) printf("  (the batch and the one-key calls disagree)\n");
}

static void stages(double p)
{
    uint64_t n0 = 1000, n = n0 << 10, seed = 5;
    uint64_t *h = malloc(n * sizeof *h), *miss = malloc(n * sizeof *miss);
    uint8_t *res = malloc(n);
    bk_quotient *f = NULL, *g = NULL;
    bk_xquotient *x = NULL;
    if (!h || !miss || !res || bk_quotient_new(n0, p, NULL, &f) != BK_OK || bk_quotient_new(n, p, NULL, &g) != BK_OK ||
        bk_xquotient_new(n0, p, NULL, &x) != BK_OK) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (uint64_t i = 0; i < n; i++) h[i] = bu_splitmix64(&seed);
    for (uint64_t i = 0; i < n; i++) miss[i] = bu_splitmix64(&seed);
    double t0 = bu_cpu_ns();
    for (uint64_t i = 0; i < n; i++) {
        bk_status s = bk_quotient_add_hash(f, h[i]);
        if (s == BK_EFULL && bk_quotient_expand(f) == BK_OK) s = bk_quotient_add_hash(f, h[i]);
        if (s != BK_OK) {
            fprintf(stderr, "expand: %s\n", bk_strerror(s));
            exit(1);
        }
    }
    double t1 = bu_cpu_ns();
    for (uint64_t i = 0; i < n; i++) {
        bk_status s = bk_xquotient_add_hash(x, h[i]);
        if (s != BK_OK) {
            fprintf(stderr, "expanding add: %s\n", bk_strerror(s));
            exit(1);
        }
    }
    double t2 = bu_cpu_ns();
    bk_quotient_add_hashes(g, h, n, NULL);
    double t3 = bu_cpu_ns();
    printf("\nqueries of filters made for 1,000 keys at %g%% and grown 2^10 times (stages; one expanding table, "
           "width %u bits, %u doublings, bound %.4f%%) and of one sized for their %llu keys (thread CPU ns per key); "
           "inserts, growth included: stages %.1f ns, expanding %.1f ns, sized right %.1f ns a key:\n",
           100.0 * p, bk_xquotient_slot_bits(x), bk_xquotient_doublings(x), 100.0 * bk_xquotient_fpr_bound(x),
           (unsigned long long)n, (t1 - t0) / (double)n, (t2 - t1) / (double)n, (t3 - t2) / (double)n);
    stage_queries("grown 2^10 (stages)", f, h, miss, n, res);
    xq_queries("grown 2^10 (expanding)", x, h, miss, n, res);
    stage_queries("sized right", g, h, miss, n, res);
    bk_quotient_free(f);
    bk_quotient_free(g);
    bk_xquotient_free(x);
    free(h);
    free(miss);
    free(res);
}

int main(int argc, char **argv)
{
    uint64_t ns[8] = { 1000000, 10000000 };
    int nn = 2;
    if (argc > 1) {
        nn = 0;
        for (int i = 1; i < argc && nn < 8; i++) ns[nn++] = strtoull(argv[i], NULL, 10);
    }
    bu_print_loadavg("start");
    printf("quotient filter path: %s\n", bk_quotient_bmi2_available() ? "BMI2 (PDEP/TZCNT select)" : "portable");
    for (int i = 0; i < nn; i++) {
        run(ns[i], 0.01);
        run(ns[i], 0.001);
    }
    insert_bands(1000000, 0.95);
    insert_bands(1000000, 1.0);
    stages(0.1);
    stages(0.01);
    stages(0.001);
    stages(0.0001);
    bu_print_loadavg("end");
    return 0;
}
