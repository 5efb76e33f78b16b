/*
 * scalable_add: what an insert into a growing scalable chain costs against an insert into one blocked
 * filter sized for all the keys, in one process (figures only).
 *
 *   scalable_add [-n N] [-c START] [-m MORE] [-b BATCH]
 *
 * A chain starting at START (100) keys, growth 2, p = 1%, grown by N (10,000,000) distinct pre-hashed
 * 8-byte keys through bk_scalable_add_hashes in batches of BATCH (1024), then MORE (1,000,000) further
 * keys into the grown chain; the same for one blocked filter made for N + MORE keys (its array touched
 * beforehand, so only the chain pays first-touch page faults), and the same N keys one per call
 * (bk_scalable_add_hash against bk_blocked_add_hash). ns per key on the thread's CPU clock; ratio =
 * chain / blocked. The batch's growing row also gives a fresh blocked filter's time for the same N
 * keys (`fresh`: its array's first-touch page faults included, as a new filter pays them, and as the
 * chain pays them for each sub-filter it appends) and that ratio; only there, since the later forms'
 * arrays may reuse memory the earlier ones freed. The load average is printed at the start and end.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bloomkit/bloomkit.h>
#include "benchutil.h"

/* ns per key of adding h[0..n) in batches (batch > 1) or one per call (batch == 1) */
static double add_chain(bk_scalable *s, const uint64_t *h, size_t n, size_t batch)
{
    double t0 = bu_cpu_ns();
    if (batch > 1) {
        for (size_t i = 0; i < n; i += batch) {
            size_t added;
            if (bk_scalable_add_hashes(s, h + i, i + batch < n ? batch : n - i, &added) != BK_OK) return -1;
        }
    } else {
        for (size_t i = 0; i < n; i++)
            if (bk_scalable_add_hash(s, h[i]) != BK_OK) return -1;
    }
    return (bu_cpu_ns() - t0) / (double)n;
}

static double add_blocked(bk_blocked *b, const uint64_t *h, size_t n, size_t batch)
{
    double t0 = bu_cpu_ns();
    if (batch > 1) {
        for (size_t i = 0; i < n; i += batch)
            if (bk_blocked_add_hashes(b, h + i, i + batch < n ? batch : n - i) != BK_OK) return -1;
    } else {
        for (size_t i = 0; i < n; i++)
            if (bk_blocked_add_hash(b, h[i]) != BK_OK) return -1;
    }
    return (bu_cpu_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
    uint64_t n = 10000000, start = 100, more = 1000000, batch = 1024;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) start = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) more = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-b") && i + 1 < argc) batch = (uint64_t)strtod(argv[++i], NULL);
        else {
            fprintf(stderr, "usage: scalable_add [-n N] [-c START] [-m MORE] [-b BATCH]\n");
            return 2;
        }
    }
    if (batch < 2) batch = 2;
    uint64_t *h = malloc((n + more) * sizeof *h);
    if (!h) return 1;
    for (uint64_t i = 0; i < n + more; i++) h[i] = bu_mix64(i);
    bu_print_loadavg("at start");
    printf("chain from %llu keys (growth 2, p = 1%%) grown by %llu pre-hashed keys, then %llu more; one blocked filter "
           "for all of them; ns per key, thread CPU time\n",
           (unsigned long long)start, (unsigned long long)n, (unsigned long long)more);
    printf("%-34s %10s %10s %8s %10s %8s\n", "form", "chain", "blocked", "ratio", "fresh", "ratio");
    for (int form = 0; form < 2; form++) {
        size_t bt = form == 0 ? batch : 1;
        bk_scalable_options so = { .growth = 2 };
        bk_scalable *s;
        bk_blocked *b, *fresh = NULL;
        if (bk_scalable_new(start, 0.01, &so, &s) != BK_OK || bk_blocked_new(n + more, 0.01, NULL, &b) != BK_OK ||
            (form == 0 && bk_blocked_new(n + more, 0.01, NULL, &fresh) != BK_OK))
            return 1;
        /* touch the blocked filter's array: its first-touch faults are not an insert's cost */
        bk_blocked_add_hashes(b, h, n + more);
        bk_blocked_clear(b);
        double sg = add_chain(s, h, n, bt), bg = add_blocked(b, h, n, bt);
        double fg = fresh ? add_blocked(fresh, h, n, bt) : 0;
        bk_blocked_free(fresh);
        double sm = add_chain(s, h + n, more, bt), bm = add_blocked(b, h + n, more, bt);
        char label[64];
        snprintf(label, sizeof label, "%s, growing (%u sub-filters)", form == 0 ? "batch" : "one per call",
                 (unsigned)bk_scalable_filters(s));
        if (fresh)
            printf("%-34s %10.1f %10.1f %8.2f %10.1f %8.2f\n", label, sg, bg, sg / bg, fg, sg / fg);
        else
            printf("%-34s %10.1f %10.1f %8.2f\n", label, sg, bg, sg / bg);
        printf("%-34s %10.1f %10.1f %8.2f\n", form == 0 ? "batch, grown chain" : "one per call, grown chain", sm, bm,
               sm / bm);
        bk_scalable_free(s);
        bk_blocked_free(b);
    }
    bu_print_loadavg("at end");
    free(h);
    return 0;
}
