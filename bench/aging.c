/*
 * aging: the aging filter against the sliding windows users build by hand, at one window W and FPR p.
 *
 *   aging [W] [p] [ONLY]   (default W = 10,000,000, p = 0.01; ONLY: a comma-separated list of
 *                          contenders by first word, e.g. aging,blocked; default all)
 *
 * Contenders, all with no false negatives inside the last W insertions:
 *   aging            bk_aging, g = 4 generations sharing a bucket (include/bloomkit/aging.h)
 *   2 x classic      two classic filters, each sized for W keys at p / 2: insert into the active one;
 *                    after W inserts the older one is cleared and becomes active; queries ask both
 *   4 x blocked      a ring of 4 separate blocked (SPLIT256) filters, each sized for W / 3 keys at
 *                    1 - (1 - p)^(1/4): the aging filter's generations, but each in its own array
 *   blocked (ref.)   one blocked filter sized for W keys at p, cleared every W inserts: no window
 *                    guarantee (a key just before a clear is lost), the speed reference
 *
 * Each contender first takes W inserts in batches (untimed); then ROUNDS (5) rounds, each visiting
 * every contender in turn, time W/2 inserts one key per call and W/2 in batches of 1024 (the same
 * keys each round: the ring keeps turning); then the last W keys go in (untimed) and W queries of
 * keys from that window and W of never-inserted keys are timed, one key per call and in batches of
 * 1024, again in ROUNDS rounds (hash arrays made beforehand: the figures are the filters', not the
 * hash function's). Each figure is the fastest round of its phase. It prints
 * memory, ns per insert and per query, the FPR measured at the end (every generation full: the worst
 * point) and the aging filter's times over the blocked filter's.
 * Times are CPU time of the process (one thread). Figures only: nothing here passes or fails. Report
 * the load average beside them.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <bloomkit/bloomkit.h>
#include "bench.h"
#include "benchutil.h"

/* The process's CPU time: on a loaded machine, time spent descheduled is not charged to the
 * contender that happened to run (memory stalls are on-CPU time and still count). */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#ifndef ROUNDS
#  define ROUNDS 5
#endif

/* ---- the contenders behind one interface ---- */

typedef struct contender {
    const char *name;
    void *state;
    void (*add)(void *s, uint64_t h);
    bool (*contains)(void *s, uint64_t h);
    void (*add_batch)(void *s, const uint64_t *h, size_t n);
    size_t (*contains_batch)(void *s, const uint64_t *h, size_t n, uint8_t *r);
    uint64_t (*memory)(void *s);
    void (*destroy)(void *s);
} contender;

/* aging */
static void ag_add(void *s, uint64_t h) { bk_aging_add_hash(s, h); }
static bool ag_contains(void *s, uint64_t h) { return bk_aging_contains_hash(s, h); }
static void ag_add_batch(void *s, const uint64_t *h, size_t n) { bk_aging_add_hashes(s, h, n); }
static size_t ag_contains_batch(void *s, const uint64_t *h, size_t n, uint8_t *r)
{
    return BENCH_HITS(bk_aging_contains_hashes, s, h, n, r);
}
static uint64_t ag_memory(void *s) { return bk_aging_memory(s); }
static void ag_destroy(void *s) { bk_aging_free(s); }

/* two rotating classic filters */
typedef struct two_classic {
    bk_bloom *f[2];
    int active;
    uint64_t in_active, window;
} two_classic;
static void tc_turn(two_classic *t)
{
    if (t->in_active < t->window) return;
    t->active ^= 1;
    bk_bloom_clear(t->f[t->active]);
    t->in_active = 0;
}
static void tc_add(void *s, uint64_t h)
{
    two_classic *t = s;
    tc_turn(t);
    bk_bloom_add_hash(t->f[t->active], h);
    t->in_active++;
}
static bool tc_contains(void *s, uint64_t h)
{
    two_classic *t = s;
    return bk_bloom_contains_hash(t->f[0], h) || bk_bloom_contains_hash(t->f[1], h);
}
static void tc_add_batch(void *s, const uint64_t *h, size_t n)
{
    two_classic *t = s;
    while (n) {
        tc_turn(t);
        size_t room = (size_t)(t->window - t->in_active), take = n < room ? n : room;
        bk_bloom_add_hashes(t->f[t->active], h, take);
        t->in_active += take;
        h += take;
        n -= take;
    }
}
static size_t tc_contains_batch(void *s, const uint64_t *h, size_t n, uint8_t *r)
{
    two_classic *t = s;
    uint8_t r2[1024];
    size_t present = 0;
    bk_bloom_contains_hashes(t->f[0], h, n, r, NULL);
    bk_bloom_contains_hashes(t->f[1], h, n, r2, NULL);
    for (size_t i = 0; i < n; i++) present += (r[i] |= r2[i]);
    return present;
}
static uint64_t tc_memory(void *s)
{
    two_classic *t = s;
    size_t a, b;
    bk_bloom_data(t->f[0], &a);
    bk_bloom_data(t->f[1], &b);
    return a + b;
}
static void tc_destroy(void *s)
{
    two_classic *t = s;
    bk_bloom_free(t->f[0]);
    bk_bloom_free(t->f[1]);
    free(t);
}

/* a ring of g separate blocked filters (the reference single blocked filter: g = 1) */
#define RING_MAX 8
typedef struct blocked_ring {
    bk_blocked *f[RING_MAX];
    int g, cur;
    uint64_t in_cur, per_gen;
} blocked_ring;
static void br_turn(blocked_ring *t)
{
    if (t->in_cur < t->per_gen) return;
    t->cur = (t->cur + 1) % t->g;
    bk_blocked_clear(t->f[t->cur]);
    t->in_cur = 0;
}
static void br_add(void *s, uint64_t h)
{
    blocked_ring *t = s;
    br_turn(t);
    bk_blocked_add_hash(t->f[t->cur], h);
    t->in_cur++;
}
static bool br_contains(void *s, uint64_t h)
{
    blocked_ring *t = s;
    bool any = false;
    for (int i = 0; i < t->g; i++) any |= bk_blocked_contains_hash(t->f[i], h);
    return any;
}
static void br_add_batch(void *s, const uint64_t *h, size_t n)
{
    blocked_ring *t = s;
    while (n) {
        br_turn(t);
        size_t room = (size_t)(t->per_gen - t->in_cur), take = n < room ? n : room;
        bk_blocked_add_hashes(t->f[t->cur], h, take);
        t->in_cur += take;
        h += take;
        n -= take;
    }
}
static size_t br_contains_batch(void *s, const uint64_t *h, size_t n, uint8_t *r)
{
    blocked_ring *t = s;
    uint8_t r2[1024];
    size_t present = 0;
    bk_blocked_contains_hashes(t->f[0], h, n, r, NULL);
    for (int i = 1; i < t->g; i++) {
        bk_blocked_contains_hashes(t->f[i], h, n, r2, NULL);
        for (size_t j = 0; j < n; j++) r[j] |= r2[j];
    }
    for (size_t j = 0; j < n; j++) present += r[j];
    return present;
}
static uint64_t br_memory(void *s)
{
    blocked_ring *t = s;
    uint64_t m = 0;
    for (int i = 0; i < t->g; i++) m += bk_blocked_bits(t->f[i]) / 8;
    return m;
}
static void br_destroy(void *s)
{
    blocked_ring *t = s;
    for (int i = 0; i < t->g; i++) bk_blocked_free(t->f[i]);
    free(t);
}

static int make_contenders(uint64_t w, double p, contender *c)
{
    bk_aging *a;
    if (bk_aging_new_count(w, p, NULL, &a) != BK_OK) return -1;
    c[0] = (contender){ "aging (g = 4)", a, ag_add, ag_contains, ag_add_batch, ag_contains_batch, ag_memory,
                        ag_destroy };

    two_classic *t = calloc(1, sizeof *t);
    if (!t || bk_bloom_new(w, p / 2, NULL, &t->f[0]) != BK_OK || bk_bloom_new(w, p / 2, NULL, &t->f[1]) != BK_OK)
        return -1;
    t->window = w;
    c[1] = (contender){ "2 x classic", t, tc_add, tc_contains, tc_add_batch, tc_contains_batch, tc_memory,
                        tc_destroy };

    blocked_ring *r = calloc(1, sizeof *r);
    if (!r) return -1;
    r->g = 4;
    r->per_gen = (w + 2) / 3;
    double pg = -expm1(log1p(-p) / 4);
    for (int i = 0; i < 4; i++)
        if (bk_blocked_new(r->per_gen, pg, NULL, &r->f[i]) != BK_OK) return -1;
    c[2] = (contender){ "4 x blocked", r, br_add, br_contains, br_add_batch, br_contains_batch, br_memory,
                        br_destroy };

    blocked_ring *one = calloc(1, sizeof *one);
    if (!one || bk_blocked_new(w, p, NULL, &one->f[0]) != BK_OK) return -1;
    one->g = 1;
    one->per_gen = w; /* cleared every W inserts, so its fill stays realistic */
    c[3] = (contender){ "blocked (ref.)", one, br_add, br_contains, br_add_batch, br_contains_batch, br_memory,
                        br_destroy };
    return 4;
}

/* Whether the contender's first word is in the comma-separated list. */
static bool selected(const char *only, const char *name)
{
    size_t len = strcspn(name, " ");
    for (const char *s = only; *s;) {
        size_t n = strcspn(s, ",");
        if (n == len && strncmp(s, name, n) == 0) return true;
        s += n + (s[n] == ',');
    }
    return false;
}

int main(int argc, char **argv)
{
    uint64_t w = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    double p = argc > 2 ? atof(argv[2]) : 0.01;
    const char *only = argc > 3 ? argv[3] : NULL;
    if (w < 1024 || !(p > 0 && p < 1)) {
        fprintf(stderr, "usage: aging [W >= 1024] [p in (0, 1)] [ONLY: aging,2,4,blocked]\n");
        return 2;
    }
    uint64_t nins = 3 * w;
    uint64_t *ins = malloc(nins * sizeof *ins), *qin = malloc(w * sizeof *qin), *qout = malloc(w * sizeof *qout);
    uint8_t *res = malloc(1024);
    if (!ins || !qin || !qout || !res) return 1;
    for (uint64_t i = 0; i < nins; i++) ins[i] = bu_mix64(i);
    /* queries: keys of the last W inserts in a shuffled order (a stride coprime to W), and new keys */
    for (uint64_t i = 0; i < w; i++) {
        qin[i] = ins[nins - w + (i * UINT64_C(7919) + 13) % w];
        qout[i] = bu_mix64(i + (UINT64_C(1) << 60));
    }
    contender c[4];
    int nc = make_contenders(w, p, c);
    if (nc < 0) {
        fprintf(stderr, "cannot create the filters\n");
        return 1;
    }
    FILE *la = fopen("/proc/loadavg", "r");
    char load[64] = "?";
    if (la) {
        if (!fgets(load, sizeof load, la)) strcpy(load, "?");
        fclose(la);
        load[strcspn(load, "\n")] = 0;
    }
    printf("W = %llu, p = %g; load average at start: %s\n", (unsigned long long)w, p, load);
    printf("%-15s %9s %8s | %8s %8s | %8s %8s %8s %8s | %9s %6s\n", "", "memory", "bits/key", "add", "add",
           "in", "in", "out", "out", "FPR", "FN");
    printf("%-15s %9s %8s | %8s %8s | %8s %8s %8s %8s | %9s %6s\n", "", "MiB", "(window)", "ns/1", "ns/batch",
           "ns/1", "ns/batch", "ns/1", "ns/batch", "(end)", "");
    /* The insert phases, then the query phases, each run in ROUNDS rounds that visit every contender
     * in turn, and each figure is the fastest round (on a shared machine a busy moment then slows one
     * round of one contender, not a contender's whole figure). */
    double tm[4][6];
    uint64_t hit1[4] = { 0 }, hitb[4] = { 0 }, fp1[4] = { 0 }, fpb[4] = { 0 };
    /* Inserts: a first window untimed, then rounds of W/2 one key per call and W/2 in batches (the
     * keys of the second W, again each round), then the last W (untimed: the window the queries ask
     * about). Every contender takes a multiple of W keys, so the ring ends where it would after 3W. */
    for (int k = 0; k < nc; k++) {
        for (int j = 0; j < 6; j++) tm[k][j] = 1e300;
        if (only && !selected(only, c[k].name)) continue;
        for (uint64_t i = 0; i < w; i += 1024) c[k].add_batch(c[k].state, ins + i, w - i < 1024 ? (size_t)(w - i) : 1024);
    }
    uint64_t half = w / 2;
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < nc; k++) {
            contender *x = &c[k];
            if (only && !selected(only, x->name)) continue;
            double t0 = now_s();
            for (uint64_t i = w; i < w + half; i++) x->add(x->state, ins[i]);
            double t1 = now_s();
            for (uint64_t i = w + half; i < 2 * w; i += 1024)
                x->add_batch(x->state, ins + i, 2 * w - i < 1024 ? (size_t)(2 * w - i) : 1024);
            double t2 = now_s();
            double d1 = (t1 - t0) * 1e9 / (double)half, d2 = (t2 - t1) * 1e9 / (double)(w - half);
            if (d1 < tm[k][0]) tm[k][0] = d1;
            if (d2 < tm[k][1]) tm[k][1] = d2;
        }
    }
    for (int k = 0; k < nc; k++) {
        if (only && !selected(only, c[k].name)) continue;
        for (uint64_t i = 2 * w; i < nins; i += 1024)
            c[k].add_batch(c[k].state, ins + i, nins - i < 1024 ? (size_t)(nins - i) : 1024);
    }
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < nc; k++) {
            contender *x = &c[k];
            if (only && !selected(only, x->name)) continue;
            uint64_t h1 = 0, hb = 0, f1 = 0, fb = 0;
            double t3 = now_s();
            for (uint64_t i = 0; i < w; i++) h1 += x->contains(x->state, qin[i]);
            double t4 = now_s();
            for (uint64_t i = 0; i < w; i += 1024)
                hb += x->contains_batch(x->state, qin + i, w - i < 1024 ? (size_t)(w - i) : 1024, res);
            double t5 = now_s();
            for (uint64_t i = 0; i < w; i++) f1 += x->contains(x->state, qout[i]);
            double t6 = now_s();
            for (uint64_t i = 0; i < w; i += 1024)
                fb += x->contains_batch(x->state, qout + i, w - i < 1024 ? (size_t)(w - i) : 1024, res);
            double t7 = now_s();
            double d[4] = { t4 - t3, t5 - t4, t6 - t5, t7 - t6 };
            for (int j = 0; j < 4; j++)
                if (d[j] * 1e9 / (double)w < tm[k][2 + j]) tm[k][2 + j] = d[j] * 1e9 / (double)w;
            hit1[k] = h1, hitb[k] = hb, fp1[k] = f1, fpb[k] = fb;
        }
    }
    for (int k = 0; k < nc; k++) {
        contender *x = &c[k];
        if (!(only && !selected(only, x->name))) {
            double mem = (double)x->memory(x->state);
            printf("%-15s %9.1f %8.2f | %8.1f %8.1f | %8.1f %8.1f %8.1f %8.1f | %8.4f%% %6s\n", x->name,
                   mem / 1048576.0, mem * 8 / (double)w, tm[k][0], tm[k][1], tm[k][2], tm[k][3], tm[k][4],
                   tm[k][5], 100.0 * (double)fp1[k] / (double)w, (hit1[k] == w && hitb[k] == w) ? "0" : "SOME");
            if (fpb[k] != fp1[k]) printf("  (single and batch queries answered differently)\n");
        }
        x->destroy(x->state);
    }
    /* the aging filter against the blocked filter, same run */
    if (!(only && (!selected(only, c[0].name) || !selected(only, c[3].name)))) {
        printf("aging / blocked (ref.):  add %.2fx %.2fx | in %.2fx %.2fx | out %.2fx %.2fx\n", tm[0][0] / tm[3][0],
               tm[0][1] / tm[3][1], tm[0][2] / tm[3][2], tm[0][3] / tm[3][3], tm[0][4] / tm[3][4],
               tm[0][5] / tm[3][5]);
    }
    fflush(stdout);
    la = fopen("/proc/loadavg", "r");
    if (la) {
        if (!fgets(load, sizeof load, la)) strcpy(load, "?");
        fclose(la);
        load[strcspn(load, "\n")] = 0;
    }
    printf("load average at end: %s\n", load);
    free(ins);
    free(qin);
    free(qout);
    free(res);
    return 0;
}
