/*
 * bench: every filter type on the same keys, in one run, next to libbloom.
 *
 *   bench [-n N] [-p P] [--keys u64|url] [--only a,b,...] [--no-batch] [--queries Q] [--capacity C]
 *         [--repeat R] [--csv] [--cpu-time]
 *
 * For each contender: build from N keys (one at a time, then again with the batch form where there is
 * one, then with the header-inline pre-hashed form where there is one), then query Q keys at hit
 * rates 100%, 50% and 0%. Prints ns per operation, bits per key, the FPR measured on the 0% run (Q
 * never-inserted keys), and the ratio of libbloom's time to ours (throughput multiple; > 1 means
 * faster than libbloom), and at the end each filter's time over the memory floor's in the same mode.
 * Keys are generated in chunks outside the timed regions, so N is not limited by memory.
 * --capacity C sizes every filter for C keys (C > N) but inserts only N: the way to measure a filter
 * far larger than the cache (C = 800M at 1% is about 1 GiB) without generating C keys; bits/key is
 * then per sized key (bytes * 8 / C) and the measured FPR is that of an underfilled filter.
 * --repeat R runs each row R times and keeps the fastest of each figure.
 * Figures only: nothing here passes or fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bloomkit/bloomkit.h>
#include "bench.h"
#include "benchutil.h"

#define CHUNK 4096
#define URL_SLOT 32

typedef enum { KEYS_U64, KEYS_URL } key_kind;

typedef struct {
    uint8_t buf[CHUNK * URL_SLOT];
    const void *ptrs[CHUNK];
    size_t lens[CHUNK];
    uint8_t res[CHUNK];
    uint64_t hashes[CHUNK]; /* bk_hash64(key, len, 0): the input of the pre-hashed inline forms */
} chunk_t;

/* --cpu-time: the process's CPU time instead of the wall clock, so time spent descheduled on a busy
 * shared machine is not charged to whichever contender was running (stalls on memory still count). */
static clockid_t g_clock = CLOCK_MONOTONIC;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(g_clock, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Key i of set s (s = 1: inserted, s = 2: never inserted). u64: 8 random-looking bytes;
 * url: a ~31-byte URL such as "https://h042.io/item/0001234567". */
static void make_key(key_kind kind, int set, uint64_t i, uint8_t *slot, size_t *len)
{
    uint64_t v = bu_mix64(i * 2 + (uint64_t)set);
    if (kind == KEYS_U64) {
        memcpy(slot, &v, 8);
        *len = 8;
    } else {
        int l = snprintf((char *)slot, URL_SLOT, "https://h%03u.%s/item/%010llu", (unsigned)(v % 1000),
                         set == 1 ? "io" : "to", (unsigned long long)(v % 10000000000ULL));
        *len = (size_t)l;
    }
}

/* Fill a chunk with keys [start, start+count): hit_pct percent from set 1, the rest from set 2. */
static void fill(chunk_t *c, key_kind kind, uint64_t start, size_t count, int hit_pct)
{
    for (size_t j = 0; j < count; j++) {
        uint64_t i = start + j;
        int set = hit_pct == 100 ? 1 : hit_pct == 0 ? 2 : ((i * (uint64_t)hit_pct) % 100 < (uint64_t)hit_pct ? 1 : 2);
        if (hit_pct == 50) set = (i & 1) ? 2 : 1;
        make_key(kind, set, i, c->buf + j * URL_SLOT, &c->lens[j]);
        c->ptrs[j] = c->buf + j * URL_SLOT;
    }
}

typedef enum { MODE_SINGLE, MODE_BATCH, MODE_INLINE, MODES } run_mode;
static const char *const MODE_LABEL[MODES] = { "", " (batch)", " (inline, pre-hashed)" };
static const char *const MODE_CSV[MODES] = { "single", "batch", "inline-prehashed" };

static void hash_chunk(chunk_t *c, size_t count)
{
    for (size_t j = 0; j < count; j++) c->hashes[j] = bk_hash64(c->ptrs[j], c->lens[j], 0);
}

typedef struct {
    double insert_ns, q_ns[3]; /* q at 100, 50, 0 % hits */
    double fpr, bits_per_key, mib;
    double remove_ns;          /* 0: the type has no remove (or batch mode) */
    double design_fpr, load;   /* the contender's expected_fpr and load hooks (-1: none) */
    uint64_t false_negatives, remove_misses;
    bool ok;
} result_t;

static const int HITS[3] = { 100, 50, 0 };

static result_t run(const bench_contender *c, key_kind kind, uint64_t n, uint64_t cap, uint64_t q, double p,
                    run_mode mode, chunk_t *ch)
{
    bool batch = mode == MODE_BATCH, inl = mode == MODE_INLINE;
    result_t r = { 0 };
    void *f = NULL;
    double t = 0;
    if (c->build) {
        /* static: all keys in memory at once (outside the timer), one build call */
        uint8_t *buf = malloc(n * URL_SLOT);
        const void **ptrs = malloc(n * sizeof *ptrs);
        size_t *lens = malloc(n * sizeof *lens);
        if (!buf || !ptrs || !lens) return r;
        for (uint64_t i = 0; i < n; i++) {
            make_key(kind, 1, i, buf + i * URL_SLOT, &lens[i]);
            ptrs[i] = buf + i * URL_SLOT;
        }
        double t0 = now_ns();
        f = c->build(ptrs, lens, n, p);
        t = now_ns() - t0;
        free(buf);
        free(ptrs);
        free(lens);
    } else {
        if ((batch && !c->add_batch) || (inl && !c->add_hashed)) return r;
        f = c->create(cap, p);
        if (!f) return r;
        if (c->clear) c->clear(f);
        for (uint64_t s = 0; s < n; s += CHUNK) {
            size_t cnt = n - s < CHUNK ? (size_t)(n - s) : CHUNK;
            fill(ch, kind, s, cnt, 100);
            if (inl) hash_chunk(ch, cnt);
            double t0 = now_ns();
            if (inl)
                c->add_hashed(f, ch->hashes, cnt);
            else if (batch)
                c->add_batch(f, ch->ptrs, ch->lens, cnt);
            else
                for (size_t j = 0; j < cnt; j++) c->add(f, ch->ptrs[j], ch->lens[j]);
            t += now_ns() - t0;
        }
    }
    if (!f) return r;
    r.insert_ns = t / (double)n;
    uint64_t qn = q < n ? q : n;
    for (int h = 0; h < 3; h++) {
        uint64_t present = 0, fn = 0;
        t = 0;
        for (uint64_t s = 0; s < qn; s += CHUNK) {
            size_t cnt = qn - s < CHUNK ? (size_t)(qn - s) : CHUNK;
            fill(ch, kind, s, cnt, HITS[h]);
            if (inl) hash_chunk(ch, cnt);
            double t0 = now_ns();
            if (inl && c->contains_hashed) {
                present += c->contains_hashed(f, ch->hashes, cnt, ch->res);
            } else if (batch && c->contains_batch) {
                present += c->contains_batch(f, ch->ptrs, ch->lens, cnt, ch->res);
            } else {
                for (size_t j = 0; j < cnt; j++) ch->res[j] = c->contains(f, ch->ptrs[j], ch->lens[j]);
            }
            t += now_ns() - t0;
            if (!(batch && c->contains_batch) && !(inl && c->contains_hashed))
                for (size_t j = 0; j < cnt; j++) present += ch->res[j];
            if (HITS[h] == 100)
                for (size_t j = 0; j < cnt; j++) fn += !ch->res[j];
        }
        r.q_ns[h] = t / (double)qn;
        if (HITS[h] == 0) r.fpr = (double)present / (double)qn;
        if (HITS[h] == 100) r.false_negatives = fn;
    }
    r.bits_per_key = (double)c->bytes(f) * 8.0 / (double)cap;
    r.design_fpr = c->expected_fpr ? c->expected_fpr(f, n) : -1;
    r.load = c->load ? c->load(f) : -1;
    r.mib = (double)c->bytes(f) / 1048576.0;
    if (c->remove && mode == MODE_SINGLE) {
        /* remove every inserted key (so from the full load down to empty); a miss is a false negative */
        t = 0;
        for (uint64_t s = 0; s < n; s += CHUNK) {
            size_t cnt = n - s < CHUNK ? (size_t)(n - s) : CHUNK;
            fill(ch, kind, s, cnt, 100);
            double t0 = now_ns();
            for (size_t j = 0; j < cnt; j++) ch->res[j] = c->remove(f, ch->ptrs[j], ch->lens[j]);
            t += now_ns() - t0;
            for (size_t j = 0; j < cnt; j++) r.remove_misses += !ch->res[j];
        }
        r.remove_ns = t / (double)n;
    }
    c->destroy(f);
    r.ok = true;
    return r;
}

/* Selected by --only, or the peer of a selected contender (so its comparison table is complete). */
static bool wanted(const char *only, const bench_contender *c)
{
    if (bu_selected(only, c->name)) return true;
    for (const bench_contender *const *cp = bench_contenders; *cp; cp++)
        if ((*cp)->peer && !strcmp((*cp)->peer, c->name) && bu_selected(only, (*cp)->name)) return true;
    return false;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench [-n N] [-p P] [--keys u64|url] [--only a,b] [--no-batch] [--queries Q] "
                    "[--capacity C] [--repeat R] [--csv] [--cpu-time]\n");
    exit(2);
}

static void fpr_cell(char *out, size_t len, const result_t *r)
{
    if (r->design_fpr >= 0)
        snprintf(out, len, "%.4f (%.4f)", 100 * r->fpr, 100 * r->design_fpr);
    else
        snprintf(out, len, "%.4f", 100 * r->fpr);
}

/* Each bloomkit contender with a peer against that peer, plain one-key calls of the same run. */
static void print_pairs(const result_t *rows, const bench_contender *const *row_c, const run_mode *row_m, int nrows)
{
    bool header = false;
    for (int i = 0; i < nrows; i++) {
        if (row_m[i] != MODE_SINGLE || !row_c[i]->peer) continue;
        int j = -1;
        for (int k = 0; k < nrows; k++)
            if (row_m[k] == MODE_SINGLE && !strcmp(row_c[k]->name, row_c[i]->peer)) j = k;
        if (j < 0) continue;
        if (!header) {
            printf("\nbloomkit vs peer, plain one-key calls (ns per call; ratio = ours / peer's: above 1 is slower)\n");
            printf("%-22s %6s %6s %6s  %6s %6s %6s  %6s %6s %6s  %-19s %-19s %5s %5s\n", "ours / peer", "ins", "peer",
                   "ratio", "q100%", "peer", "ratio", "q0%", "peer", "ratio", "FPR % (design)", "peer FPR % (design)",
                   "load", "peer");
            header = true;
        }
        const result_t *a = &rows[i], *b = &rows[j];
        char label[64], fa[32], fb[32], la[8] = "-", lb[8] = "-", ins[3][16] = { "-", "-", "-" };
        snprintf(label, sizeof label, "%s / %s", row_c[i]->name, row_c[j]->name);
        fpr_cell(fa, sizeof fa, a);
        fpr_cell(fb, sizeof fb, b);
        if (a->load >= 0) snprintf(la, sizeof la, "%.3f", a->load);
        if (b->load >= 0) snprintf(lb, sizeof lb, "%.3f", b->load);
        if (!row_c[i]->build && !row_c[j]->build) { /* a static filter's insert column is its build */
            snprintf(ins[0], sizeof ins[0], "%.1f", a->insert_ns);
            snprintf(ins[1], sizeof ins[1], "%.1f", b->insert_ns);
            snprintf(ins[2], sizeof ins[2], "%.2f", a->insert_ns / b->insert_ns);
        }
        printf("%-22s %6s %6s %6s  %6.1f %6.1f %6.2f  %6.1f %6.1f %6.2f  %-19s %-19s %5s %5s\n", label, ins[0], ins[1],
               ins[2], a->q_ns[0], b->q_ns[0], a->q_ns[0] / b->q_ns[0], a->q_ns[2], b->q_ns[2], a->q_ns[2] / b->q_ns[2],
               fa, fb, la, lb);
    }
}

int main(int argc, char **argv)
{
    uint64_t n = 10000000, q = 0, cap = 0;
    double p = 0.01;
    key_kind kind = KEYS_U64;
    const char *only = NULL;
    bool do_batch = true, csv = false;
    int repeat = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-n") && i + 1 < argc) n = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(a, "-p") && i + 1 < argc) p = strtod(argv[++i], NULL);
        else if (!strcmp(a, "--queries") && i + 1 < argc) q = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(a, "--capacity") && i + 1 < argc) cap = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(a, "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (!strcmp(a, "--keys") && i + 1 < argc) {
            const char *k = argv[++i];
            if (!strcmp(k, "u64")) kind = KEYS_U64;
            else if (!strcmp(k, "url")) kind = KEYS_URL;
            else usage();
        } else if (!strcmp(a, "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(a, "--no-batch")) do_batch = false;
        else if (!strcmp(a, "--csv")) csv = true;
        else if (!strcmp(a, "--cpu-time")) g_clock = CLOCK_PROCESS_CPUTIME_ID;
        else usage();
    }
    if (n == 0 || !(p > 0 && p < 1) || repeat < 1) usage();
    if (q == 0) q = n;
    if (cap < n) cap = n;
    static chunk_t ch;
    if (csv)
        printf("name,mode,keys,n,p,bits_per_key,fpr,insert_ns,q100_ns,q50_ns,q0_ns,false_negatives,remove_ns\n");
    else {
        printf("n = %llu keys (%s), target p = %g, %llu queries per hit rate; x = libbloom time / ours%s",
               (unsigned long long)n, kind == KEYS_U64 ? "8-byte" : "~31-byte URL", p, (unsigned long long)q,
               g_clock == CLOCK_MONOTONIC ? "" : " (CPU time)");
        if (repeat > 1) printf("; fastest of %d runs", repeat);
        printf("\n");
        bu_print_loadavg("at start");
        if (cap > n)
            printf("filters sized for %llu keys (--capacity), %llu inserted: bits/key per sized key, FPR of an "
                   "underfilled filter\n", (unsigned long long)cap, (unsigned long long)n);
        printf("\n%-30s %8s %8s %8s %9s %6s %9s %6s %9s %6s %9s %6s %9s\n", "filter", "MiB", "bits/key", "FPR %",
               "insert ns", "x", "q100% ns", "x", "q50% ns", "x", "q0% ns", "x", "remove ns");
    }
    result_t base = { 0 };
    /* every row, kept for the ratios to the floor printed at the end */
    enum { MAX_ROWS = 64 };
    static result_t rows[MAX_ROWS];
    static const bench_contender *row_c[MAX_ROWS];
    static run_mode row_m[MAX_ROWS];
    int nrows = 0;
    for (const bench_contender *const *cp = bench_contenders; *cp; cp++) {
        const bench_contender *c = *cp;
        bool is_base = cp == bench_contenders;
        if (!is_base && !wanted(only, c)) continue;
        for (run_mode m = MODE_SINGLE; m < MODES; m++) {
            if (m == MODE_BATCH && (!do_batch || !(c->add_batch || c->contains_batch))) continue;
            if (m == MODE_INLINE && (!do_batch || !(c->add_hashed || c->contains_hashed))) continue;
            result_t r = run(c, kind, n, cap, q, p, m, &ch);
            /* --repeat: the fastest of each figure over the runs (a loaded machine only adds time) */
            for (int k = 1; k < repeat && r.ok; k++) {
                result_t r2 = run(c, kind, n, cap, q, p, m, &ch);
                if (!r2.ok) break;
                if (r2.insert_ns < r.insert_ns) r.insert_ns = r2.insert_ns;
                for (int h = 0; h < 3; h++)
                    if (r2.q_ns[h] < r.q_ns[h]) r.q_ns[h] = r2.q_ns[h];
                if (r2.remove_ns > 0 && r2.remove_ns < r.remove_ns) r.remove_ns = r2.remove_ns;
                r.false_negatives += r2.false_negatives;
                r.remove_misses += r2.remove_misses;
            }
            if (!r.ok) {
                fprintf(stderr, "%s: could not be created\n", c->name);
                continue;
            }
            if (is_base) base = r;
            if (nrows < MAX_ROWS) {
                rows[nrows] = r;
                row_c[nrows] = c;
                row_m[nrows++] = m;
            }
            char label[64];
            snprintf(label, sizeof label, "%s%s", c->name, MODE_LABEL[m]);
            if (csv) {
                printf("%s,%s,%s,%llu,%g,%.3f,%.6f,%.2f,%.2f,%.2f,%.2f,%llu,%.2f\n", c->name, MODE_CSV[m],
                       kind == KEYS_U64 ? "u64" : "url", (unsigned long long)n, p, r.bits_per_key, r.fpr,
                       r.insert_ns, r.q_ns[0], r.q_ns[1], r.q_ns[2],
                       (unsigned long long)(r.false_negatives + r.remove_misses), r.remove_ns);
            } else {
                char rm[16] = "-";
                if (r.remove_ns > 0) snprintf(rm, sizeof rm, "%.1f", r.remove_ns);
                printf("%-30s %8.1f %8.2f %8.4f %9.1f %6.2f %9.1f %6.2f %9.1f %6.2f %9.1f %6.2f %9s%s\n", label, r.mib,
                       r.bits_per_key,
                       100 * r.fpr, r.insert_ns, base.insert_ns / r.insert_ns, r.q_ns[0], base.q_ns[0] / r.q_ns[0],
                       r.q_ns[1], base.q_ns[1] / r.q_ns[1], r.q_ns[2], base.q_ns[2] / r.q_ns[2], rm,
                       r.false_negatives || r.remove_misses ? "  FALSE NEGATIVES!" : "");
            }
            fflush(stdout);
        }
    }
    if (!csv) {
        /* time over the floor's in the same mode (1.00 = as fast as one random line read per key) */
        int fl[MODES] = { -1, -1, -1 };
        for (int i = 0; i < nrows; i++)
            if (!strcmp(row_c[i]->name, "floor")) fl[row_m[i]] = i;
        bool header = false;
        for (int i = 0; i < nrows; i++) {
            int f = fl[row_m[i]];
            if (f < 0 || i == f || row_c[i] == bench_contenders[0]) continue;
            if (!header) {
                printf("\n%-30s %9s %9s %9s %9s   (ns / floor's ns in the same mode)\n", "over the floor", "insert",
                       "q100%", "q50%", "q0%");
                header = true;
            }
            char label[64];
            snprintf(label, sizeof label, "%s%s", row_c[i]->name, MODE_LABEL[row_m[i]]);
            printf("%-30s %9.2f %9.2f %9.2f %9.2f\n", label, rows[i].insert_ns / rows[f].insert_ns,
                   rows[i].q_ns[0] / rows[f].q_ns[0], rows[i].q_ns[1] / rows[f].q_ns[1],
                   rows[i].q_ns[2] / rows[f].q_ns[2]);
        }
        print_pairs(rows, row_c, row_m, nrows);
        printf("\n");
        bu_print_loadavg("at end");
        for (const bench_contender *const *cp = bench_contenders; *cp; cp++)
            if ((cp == bench_contenders || wanted(only, *cp)) && (*cp)->note)
                printf("  %-12s %s\n", (*cp)->name, (*cp)->note);
    }
    return 0;
}
