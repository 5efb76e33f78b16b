/*
 * CDN one-hit-wonder admission: cache an object on its second request within a window.
 *
 * A CDN edge cache (here an LRU of --cache objects) writes every object it fetches from the origin
 * into its cache. In real request streams a large share of objects is requested once and never again
 * ("one-hit wonders"): each costs a cache write (SSD wear, write bandwidth) and evicts something
 * useful. The usual fix is to admit an object only when it was already requested recently: an aging
 * filter over the last --window requests answers "seen recently?" in constant memory, forgetting old
 * requests by itself. On a miss the edge calls bk_aging_add_if_absent: BK_OK (first request in the
 * window) serves the object from the origin without caching it; BK_EEXISTS admits it.
 *
 * The program replays one synthetic request stream (Zipf popularity with exponent --zipf over
 * --objects objects, a fixed seed) through two caches of the same size: one admitting everything, one
 * admitting on the second request. It prints the cache writes avoided and the hit ratio of each. It
 * also keeps the exact position of each object's last request and checks the filter against it:
 * every object requested again within the window must be admitted (no false negative); objects
 * admitted without a request in the window were requested in its slack, or are false positives.
 *
 *   cdn_admission [--objects N] [--requests N] [--cache N] [--window N] [--zipf S] [--fpr P] [--seed S]
 *
 * Exit status 0 when no object requested within the window was refused, 1 otherwise, 2 on errors.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "ex_util.h"

static const char *prog = "cdn_admission";

/* An LRU cache of object ids 0..n-1: a doubly linked list through two arrays (O(1) per request). */
typedef struct lru {
    uint32_t *prev, *next;
    uint8_t *in;
    uint32_t head, tail; /* most and least recently used; NIL when empty */
    uint64_t size, cap, hits, misses, writes;
} lru;
#define NIL UINT32_MAX

static void lru_init(lru *c, uint64_t objects, uint64_t cap)
{
    memset(c, 0, sizeof *c);
    c->prev = ex_xmalloc(prog, objects * sizeof *c->prev);
    c->next = ex_xmalloc(prog, objects * sizeof *c->next);
    c->in = ex_xcalloc(prog, objects, 1);
    c->head = c->tail = NIL;
    c->cap = cap;
}

static void lru_unlink(lru *c, uint32_t id)
{
    if (c->prev[id] != NIL) c->next[c->prev[id]] = c->next[id];
    else c->head = c->next[id];
    if (c->next[id] != NIL) c->prev[c->next[id]] = c->prev[id];
    else c->tail = c->prev[id];
}

static void lru_push_front(lru *c, uint32_t id)
{
    c->prev[id] = NIL;
    c->next[id] = c->head;
    if (c->head != NIL) c->prev[c->head] = id;
    c->head = id;
    if (c->tail == NIL) c->tail = id;
}

/* A request: true on a hit (moved to the front). */
static bool lru_get(lru *c, uint32_t id)
{
    if (!c->in[id]) {
        c->misses++;
        return false;
    }
    c->hits++;
    lru_unlink(c, id);
    lru_push_front(c, id);
    return true;
}

/* Write an object fetched from the origin into the cache, evicting the least recently used. */
static void lru_admit(lru *c, uint32_t id)
{
    if (c->size == c->cap) {
        uint32_t victim = c->tail;
        lru_unlink(c, victim);
        c->in[victim] = 0;
        c->size--;
    }
    lru_push_front(c, id);
    c->in[id] = 1;
    c->size++;
    c->writes++;
}

static void lru_free(lru *c)
{
    free(c->prev);
    free(c->next);
    free(c->in);
}

int main(int argc, char **argv)
{
    uint64_t objects = 2000000, requests = 10000000, cache = 50000, window = 0, seed = 1;
    double zipf = 0.9, fpr = 0.01;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "%s: %s needs a value\n", prog, a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--objects")) objects = ex_count(prog, a, v);
        else if (!strcmp(a, "--requests")) requests = ex_count(prog, a, v);
        else if (!strcmp(a, "--cache")) cache = ex_count(prog, a, v);
        else if (!strcmp(a, "--window")) window = ex_count(prog, a, v);
        else if (!strcmp(a, "--zipf")) zipf = ex_double(prog, a, v);
        else if (!strcmp(a, "--fpr")) fpr = ex_double(prog, a, v);
        else if (!strcmp(a, "--seed")) seed = ex_count(prog, a, v);
        else {
            fprintf(stderr, "%s: unknown option %s\n", prog, a);
            return 2;
        }
    }
    if (!window) window = 4 * cache; /* a few cache lifetimes of requests */
    if (objects < 2 || objects >= NIL || cache < 1 || cache > objects || requests < 1 || window < 1 || !(zipf > 0) ||
        !(fpr > 0 && fpr < 1)) {
        fprintf(stderr, "%s: bad sizes (objects >= 2 and < 2^32, 1 <= cache <= objects, requests, window >= 1, "
                        "zipf > 0, 0 < fpr < 1)\n", prog);
        return 2;
    }

    /* Zipf popularity: object i (rank i + 1) has weight 1 / (i + 1)^s; draws by binary search of the
     * cumulative weights. Object ids are scrambled ranks, so popular objects are spread over the ids. */
    double *cdf = ex_xmalloc(prog, objects * sizeof *cdf), total = 0;
    for (uint64_t i = 0; i < objects; i++) cdf[i] = (total += pow((double)(i + 1), -zipf));
    uint32_t *id_of_rank = ex_xmalloc(prog, objects * sizeof *id_of_rank);
    for (uint64_t i = 0; i < objects; i++) id_of_rank[i] = (uint32_t)i;
    uint64_t rng = seed;
    for (uint64_t i = objects - 1; i > 0; i--) { /* Fisher-Yates */
        uint64_t j = ex_below(&rng, i + 1);
        uint32_t t = id_of_rank[i];
        id_of_rank[i] = id_of_rank[j];
        id_of_rank[j] = t;
    }

    bk_aging *seen;
    bk_aging_options o = BK_AGING_OPTIONS_INIT;
    o.seed = seed;
    EX_CHECK(prog, bk_aging_new_count(window, fpr, &o, &seen));
    lru all, second;
    lru_init(&all, objects, cache);
    lru_init(&second, objects, cache);
    /* exact reference: the request number of each object's last request (0: never) */
    uint64_t *last = ex_xcalloc(prog, objects, sizeof *last);
    uint64_t *times = ex_xcalloc(prog, objects, sizeof *times);
    uint64_t refused_recent = 0, admitted_stale = 0, stale_misses = 0, filter_calls = 0;

    double t0 = ex_now();
    for (uint64_t r = 1; r <= requests; r++) {
        double u = (double)(ex_rand(&rng) >> 11) * 0x1p-53 * total;
        uint64_t lo = 0, hi = objects - 1;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (cdf[mid] < u) lo = mid + 1;
            else hi = mid;
        }
        uint32_t id = id_of_rank[lo];
        times[id]++;
        /* The edge's window covers the requests that reached the filter: every miss asks it. The exact
         * reference counts in the same units (the filter's insertions). */
        if (!lru_get(&all, id)) lru_admit(&all, id);
        if (!lru_get(&second, id)) {
            filter_calls++;
            bk_status s = bk_aging_add_if_absent(seen, &id, sizeof id);
            if (s != BK_OK && s != BK_EEXISTS) {
                fprintf(stderr, "%s: bk_aging_add_if_absent: %s\n", prog, bk_strerror(s));
                return 2;
            }
            bool recent = last[id] && filter_calls - last[id] <= window;
            if (s == BK_EEXISTS) lru_admit(&second, id);
            if (recent && s != BK_EEXISTS) refused_recent++;
            if (!recent) {
                stale_misses++;
                admitted_stale += s == BK_EEXISTS;
            }
            last[id] = filter_calls;
        }
    }
    double secs = ex_now() - t0;

    uint64_t one_hit = 0, distinct = 0;
    for (uint64_t i = 0; i < objects; i++) {
        distinct += times[i] > 0;
        one_hit += times[i] == 1;
    }
    char mem[32];
    printf("%" PRIu64 " requests for %" PRIu64 " objects (Zipf %.2f; %" PRIu64 " distinct requested, %" PRIu64
           " of them once: %.1f%%), LRU cache of %" PRIu64 " objects\n",
           requests, objects, zipf, distinct, one_hit, 100.0 * (double)one_hit / (double)(distinct ? distinct : 1),
           cache);
    printf("admission filter: aging, the last %" PRIu64 " misses, FPR %.2g%%, %s (%.2f bits per window key)\n",
           window, fpr * 100, ex_bytes((double)bk_aging_memory(seen), mem, sizeof mem),
           (double)bk_aging_memory(seen) * 8.0 / (double)window);
    printf("%-28s %12s %12s %10s\n", "", "cache writes", "origin reads", "hit ratio");
    printf("%-28s %12" PRIu64 " %12" PRIu64 " %9.2f%%\n", "admit everything", all.writes, all.misses,
           100.0 * (double)all.hits / (double)requests);
    printf("%-28s %12" PRIu64 " %12" PRIu64 " %9.2f%%\n", "admit on 2nd request", second.writes, second.misses,
           100.0 * (double)second.hits / (double)requests);
    printf("cache writes avoided: %" PRIu64 " (%.1f%%); hit ratio %+.2f points\n", all.writes - second.writes,
           100.0 * (double)(all.writes - second.writes) / (double)(all.writes ? all.writes : 1),
           100.0 * ((double)second.hits - (double)all.hits) / (double)requests);
    printf("replay: %.2f s for all %" PRIu64 " requests (the Zipf draws, both LRU caches and the exact "
           "reference, not the filter alone)\n", secs, requests);
    printf("filter: %" PRIu64 " lookups (bk_aging_add_if_absent, one per miss of the second cache); admitted "
           "without a request in the window (the slack of a third of a window, or a false positive): %" PRIu64
           " of %" PRIu64 " (%.3f%%); requested in the window but refused: %" PRIu64 "\n",
           filter_calls, admitted_stale, stale_misses,
           100.0 * (double)admitted_stale / (double)(stale_misses ? stale_misses : 1), refused_recent);

    lru_free(&all);
    lru_free(&second);
    bk_aging_free(seen);
    free(cdf);
    free(id_of_rank);
    free(last);
    free(times);
    if (refused_recent) {
        fprintf(stderr, "%s: FAILED: %" PRIu64 " objects requested within the window were not admitted\n", prog,
                refused_recent);
        return 1;
    }
    return 0;
}
