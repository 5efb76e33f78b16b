/*
 * space_table: bits per key and measured FPR by n and p, in one run, for the dynamic filters and
 * the references they are weighed against:
 *   quotient        bk_quotient_new(n, p), filled with n keys
 *   quotient grown  made for n/8 keys with 3 remainder bits of room, grown 3 times while filled to n
 *                   (the error rate kept), and made for n/1024 with 10 bits of room, grown 10 times;
 *                   "spent": made for n/8 without room, grown 3 times (the old growth)
 *   expanding       bk_xquotient_new(n/1024, p): one table that doubles itself 10 times while
 *                   filled to n, keeping p (docs/MATH.md, "Expanding quotient filter")
 *   aging           a count window of n keys, after 2n insertions (every generation in use)
 *   (second table)  growth past the planned room (bk_quotient_expand, stages): made for 1,000 keys
 *                   with no room, filled to 2^10 times that (expanding whenever full), FPR measured;
 *                   and 2^20 growth from 121 keys (128 slots) by geometry alone (the stages made
 *                   empty: bits per key at capacity and the FPR bound); beside a filter sized right
 *   cuckoo          bk_cuckoo_new(n, p), filled with n keys
 *   classic         bk_bloom_new(n, p), filled with n keys
 * Memory is the filter's arrays (bk_stats.memory_bytes) over n (for aging: over the window's n keys);
 * the FPR is measured on ABSENT_KEYS keys never added. Then the quotient filter's insert cost by load
 * band (thread CPU ns per insert; at max_load 0.95 and 1.0): the figures of docs/MATH.md and
 * bench/README.md. A benchmark: it prints, never gates.
 *
 * Usage: space_table [n ...]     (default 10000 100000 1000000)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>

#include <bloomkit/bloomkit.h>

#include "benchutil.h"

#define ABSENT_KEYS 1000000

static uint64_t key_hash(uint64_t set, uint64_t i)
{
    return bu_mix64(bu_mix64(set) ^ (i * UINT64_C(0x9e3779b97f4a7c15)));
}

typedef struct {
    double bpk, fpr;
    bool ok;
    double qns; /* thread CPU ns per absent-key query (where measured) */
} cell;

/* FPR of a contains-by-hash function over the absent keys (set 999). */
#define MEASURE_FPR(fn, f)                                                                          \
    do {                                                                                            \
        uint64_t fp_ = 0;                                                                           \
        double t0_ = bu_cpu_ns();                                                                   \
        for (uint64_t i_ = 0; i_ < ABSENT_KEYS; i_++) fp_ += fn(f, key_hash(999, i_));              \
        c.qns = (bu_cpu_ns() - t0_) / ABSENT_KEYS;                                                  \
        c.fpr = (double)fp_ / ABSENT_KEYS;                                                          \
    } while (0)

static cell run_quotient(uint64_t n, double p)
{
    cell c = { 0, 0, false, 0 };
    bk_quotient *f;
    if (bk_quotient_new(n, p, NULL, &f) != BK_OK) return c;
    for (uint64_t i = 0; i < n; i++)
        if (bk_quotient_add_hash(f, key_hash(1, i)) != BK_OK) return bk_quotient_free(f), c;
    c.bpk = (double)bk_quotient_memory(f) * 8.0 / (double)n;
    MEASURE_FPR(bk_quotient_contains_hash, f);
    c.ok = true;
    bk_quotient_free(f);
    return c;
}

/* Made for n >> times keys, grown on the way to n (each time it is full). room: remainder bits
 * planned for the doublings (times: the error rate kept; 0: the old growth, spent). */
static cell run_grown(uint64_t n, double p, uint32_t times, uint32_t room)
{
    cell c = { 0, 0, false, 0 };
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    bk_quotient_geometry g;
    uint64_t first = n >> times ? n >> times : 1;
    if (bk_quotient_size(first, p, &o, &g) != BK_OK) return c;
    if (room) o.remainder_bits = g.remainder_bits + room;
    bk_quotient *f;
    if (bk_quotient_new(first, p, &o, &f) != BK_OK) return c;
    for (uint64_t i = 0; i < n; i++) {
        bk_status s = bk_quotient_add_hash(f, key_hash(1, i));
        if (s == BK_EFULL) {
            if (bk_quotient_grow(f) != BK_OK) return bk_quotient_free(f), c;
            s = bk_quotient_add_hash(f, key_hash(1, i));
        }
        if (s != BK_OK) return bk_quotient_free(f), c;
    }
    c.bpk = (double)bk_quotient_memory(f) * 8.0 / (double)n;
    MEASURE_FPR(bk_quotient_contains_hash, f);
    c.ok = true;
    bk_quotient_free(f);
    return c;
}

/* The expanding quotient filter made for n >> times keys and filled to n (it doubles itself). */
static cell run_expanding(uint64_t n, double p, uint32_t times)
{
    cell c = { 0, 0, false, 0 };
    bk_xquotient *f;
    if (bk_xquotient_new(n >> times ? n >> times : 1, p, NULL, &f) != BK_OK) return c;
    for (uint64_t i = 0; i < n; i++)
        if (bk_xquotient_add_hash(f, key_hash(1, i)) != BK_OK) return bk_xquotient_free(f), c;
    c.bpk = (double)bk_xquotient_memory(f) * 8.0 / (double)n;
    MEASURE_FPR(bk_xquotient_contains_hash, f);
    c.ok = true;
    bk_xquotient_free(f);
    return c;
}

static cell run_aging(uint64_t n, double p)
{
    cell c = { 0, 0, false, 0 };
    bk_aging *f;
    if (bk_aging_new_count(n, p, NULL, &f) != BK_OK) return c;
    for (uint64_t i = 0; i < 2 * n; i++) (void)bk_aging_add_hash(f, key_hash(1, i));
    bk_stats st;
    bk_aging_stats(f, &st);
    c.bpk = (double)st.memory_bytes * 8.0 / (double)n;
    MEASURE_FPR(bk_aging_contains_hash, f);
    c.ok = true;
    bk_aging_free(f);
    return c;
}

static cell run_cuckoo(uint64_t n, double p)
{
    cell c = { 0, 0, false, 0 };
    bk_cuckoo *f;
    if (bk_cuckoo_new(n, p, NULL, &f) != BK_OK) return c;
    for (uint64_t i = 0; i < n; i++)
        if (bk_cuckoo_add_hash(f, key_hash(1, i)) != BK_OK) return bk_cuckoo_free(f), c;
    bk_stats st;
    bk_cuckoo_stats(f, &st);
    c.bpk = (double)st.memory_bytes * 8.0 / (double)n;
    MEASURE_FPR(bk_cuckoo_contains_hash, f);
    c.ok = true;
    bk_cuckoo_free(f);
    return c;
}

static cell run_classic(uint64_t n, double p)
{
    cell c = { 0, 0, false, 0 };
    bk_bloom *f;
    if (bk_bloom_new(n, p, NULL, &f) != BK_OK) return c;
    for (uint64_t i = 0; i < n; i++) (void)bk_bloom_add_hash(f, key_hash(1, i));
    bk_stats st;
    bk_bloom_stats(f, &st);
    c.bpk = (double)st.memory_bytes * 8.0 / (double)n;
    MEASURE_FPR(bk_bloom_contains_hash, f);
    c.ok = true;
    bk_bloom_free(f);
    return c;
}

/* Growth past the planned room: made for n0 keys at p without room, expanded `times` times; with
 * `fill`, the n0 2^times keys added (expanding whenever full) and the FPR measured; else the stages
 * made empty and the FPR the bound at capacity. Bits per key at capacity. */
static void print_cell(cell c);
static cell run_expand(uint64_t n0, double p, uint32_t times, bool fill, uint32_t *stages)
{
    cell c = { 0, 0, false, 0 };
    bk_quotient *f;
    if (bk_quotient_new(n0, p, NULL, &f) != BK_OK) return c;
    uint64_t n = n0 << times;
    if (fill) {
        for (uint64_t i = 0; i < n; i++) {
            bk_status s = bk_quotient_add_hash(f, key_hash(1, i));
            if (s == BK_EFULL) {
                if (bk_quotient_expand(f) != BK_OK) return bk_quotient_free(f), c;
                s = bk_quotient_add_hash(f, key_hash(1, i));
            }
            if (s != BK_OK) return bk_quotient_free(f), c;
        }
        MEASURE_FPR(bk_quotient_contains_hash, f);
    } else {
        for (uint32_t i = 0; i < times; i++)
            if (bk_quotient_expand(f) != BK_OK) return bk_quotient_free(f), c;
        c.fpr = bk_quotient_grown_fpr(f, 0);
    }
    bk_stats st;
    bk_quotient_stats(f, &st);
    c.bpk = (double)bk_quotient_memory(f) * 8.0 / (double)st.capacity;
    *stages = bk_quotient_stages(f);
    c.ok = true;
    bk_quotient_free(f);
    return c;
}

static void expand_table(const double *ps, size_t np)
{
    printf("growth past the planned room (bk_quotient_expand): bits/key at capacity and FPR, beside a filter "
           "sized right\n(query: thread CPU ns per absent key, filled rows only)\n\n"
           "| growth | n | p | stages | grown | right-sized | bits/key ratio | query grown / sized |\n"
           "|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < 2; k++)
        for (size_t j = 0; j < np; j++) {
            double p = ps[j];
            uint32_t times = k ? 20 : 10, stages = 0;
            uint64_t n0 = k ? 121 : 1000, n = n0 << times;
            cell g = run_expand(n0, p, times, k == 0, &stages), r = { 0, 0, false, 0 };
            if (k == 0) {
                r = run_quotient(n, p);
            } else {
                bk_quotient_geometry geo;
                if (bk_quotient_size(n, p, NULL, &geo) == BK_OK) r = (cell){ geo.bits_per_key, geo.fpr, true, 0 };
            }
            printf("| 2^%u%s | %llu | %g%% | %u |", times, k ? " (geometry, FPR bound)" : " (filled, FPR measured)",
                   (unsigned long long)n, p * 100, stages);
            print_cell(g);
            print_cell(r);
            if (g.ok && r.ok) printf(" %.2f |", g.bpk / r.bpk);
            if (g.qns > 0 && r.qns > 0) printf(" %.0f / %.0f ns |", g.qns, r.qns);
            printf("\n");
            fflush(stdout);
        }
    printf("\n");
}

static void print_cell(cell c)
{
    if (c.ok) printf(" %6.2f %8.4f%% |", c.bpk, c.fpr * 100);
    else printf(" %6s %9s |", "-", "-");
}

/* Thread CPU ns per insert in each load band of a filter of S slots at max_load ml. */
static void insert_bands(uint64_t slots, double ml)
{
    const double edges[] = { 0, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99 };
    const int nb = (int)(sizeof edges / sizeof edges[0]) - 1;
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.max_load = ml;
    bk_quotient *f;
    if (bk_quotient_new_slots(slots, 8, &o, &f) != BK_OK) return;
    printf("insert cost by load band, S = %llu slots, r = 8, max_load %.2f (thread CPU ns per insert):\n",
           (unsigned long long)slots, ml);
    uint64_t i = 0;
    double base = 0;
    for (int b = 0; b < nb; b++) {
        uint64_t to = (uint64_t)(edges[b + 1] * (double)slots);
        if (edges[b + 1] > ml + 1e-9) break;
        uint64_t from = bk_quotient_slots_used(f), k = 0;
        double t0 = bu_cpu_ns();
        while (bk_quotient_slots_used(f) < to) {
            if (bk_quotient_add_hash(f, key_hash(2, i++)) != BK_OK) break;
            k++;
        }
        double ns = (bu_cpu_ns() - t0) / (double)(k ? k : 1);
        if (b == 1) base = ns;
        printf("  load %4.0f%% - %3.0f%%: %8.1f ns (%llu inserts)", edges[b] * 100, edges[b + 1] * 100, ns,
               (unsigned long long)(to - from));
        if (base > 0) printf(", %.2fx the 25-50%% band", ns / base);
        printf("\n");
    }
    bk_quotient_free(f);
}

int main(int argc, char **argv)
{
    uint64_t ns[8] = { 10000, 100000, 1000000 };
    int nn = 3;
    if (argc > 1) {
        nn = 0;
        for (int i = 1; i < argc && nn < 8; i++) ns[nn++] = strtoull(argv[i], NULL, 10);
    }
    const double ps[] = { 0.1, 0.01, 0.001, 0.0001 };
    bu_print_loadavg("before");
    printf("bits/key and FPR (measured on %d absent keys), one run\n\n", ABSENT_KEYS);
    printf("| n | p | quotient | quotient grown x3, p kept | quotient grown x10, p kept | quotient grown x3, p spent "
           "| expanding x10, p kept | aging (window n) | cuckoo | classic |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nn; i++)
        for (size_t j = 0; j < sizeof ps / sizeof ps[0]; j++) {
            uint64_t n = ns[i];
            double p = ps[j];
            printf("| %llu | %g%% |", (unsigned long long)n, p * 100);
            print_cell(run_quotient(n, p));
            print_cell(run_grown(n, p, 3, 3));
            print_cell(run_grown(n, p, 10, 10));
            print_cell(run_grown(n, p, 3, 0));
            print_cell(run_expanding(n, p, 10));
            print_cell(run_aging(n, p));
            print_cell(run_cuckoo(n, p));
            print_cell(run_classic(n, p));
            printf("\n");
            fflush(stdout);
        }
    printf("\n(each cell: bits per key, FPR; aging: bits per window key)\n\n");
    expand_table(ps, sizeof ps / sizeof ps[0]);
    insert_bands(1000000, 0.95);
    insert_bands(1000000, 1.0);
    bu_print_loadavg("after");
    return 0;
}
