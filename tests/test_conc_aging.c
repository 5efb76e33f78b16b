/* Concurrency of the aging filter: queries are [query], so several threads may query one filter at once
 * (one-key byte, hash and uint64 forms, and batches), of a count window and of a time window whose
 * clock they all read. Under ThreadSanitizer this shows the query paths share no hidden state (no
 * cache written by a query, no lazily chosen path); each thread also checks that every key of the
 * window is found and that fresh keys are found at about the rate p. */
#include <stdatomic.h>
#include "conc.h"
#include <bloomkit/bloomkit.h>

#define W 100000
#define THREADS 4

typedef struct {
    const bk_aging *f;
    const uint64_t *keys; /* keys of the window (uint64 form), n of them */
    size_t n;
    int id;
    size_t missing, fresh_hits, fresh;
} job_t;

static void *querier(void *arg)
{
    job_t *j = arg;
    uint8_t *res = malloc(j->n);
    uint64_t *h = malloc(j->n * sizeof *h);
    if (!res || !h) {
        j->missing = SIZE_MAX;
        free(res);
        free(h);
        return NULL;
    }
    for (size_t i = 0; i < j->n; i++) {
        uint64_t k = j->keys[i];
        uint8_t le[8];
        for (int b = 0; b < 8; b++) le[b] = (uint8_t)(k >> (8 * b));
        h[i] = bk_hash64(le, 8, bk_aging_seed(j->f));
    }
    for (int rep = 0; rep < 2; rep++) {
        for (size_t i = 0; i < j->n; i++) {
            uint64_t k = j->keys[i];
            uint8_t le[8];
            for (int b = 0; b < 8; b++) le[b] = (uint8_t)(k >> (8 * b));
            j->missing += !bk_aging_contains_u64(j->f, k);
            j->missing += !bk_aging_contains(j->f, le, 8);
            j->missing += !bk_aging_contains_hash(j->f, h[i]);
        }
        size_t hits = 0;
        if (bk_aging_contains_hashes(j->f, h, j->n, res, &hits) != BK_OK) j->missing++;
        j->missing += j->n - hits;
        uint64_t st = 5000 + (uint64_t)j->id * 77;
        for (size_t i = 0; i < W / 2; i++, j->fresh++)
            j->fresh_hits += bk_aging_contains_u64(j->f, tu_splitmix(&st) | 1);
    }
    free(res);
    free(h);
    return NULL;
}

/* THREADS threads query f at once; keys[0 .. n) must all be found. */
static void query_together(const bk_aging *f, const uint64_t *keys, size_t n, double p)
{
    tc_threads t = { .n = 0 };
    job_t jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (job_t){ f, keys, n, i, 0, 0, 0 };
        tc_start(&t, querier, &jobs[i]);
    }
    tc_join(&t);
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(jobs[i].missing, 0);
        /* fresh keys are odd, the inserted ones even: none of them was inserted */
        double rate = (double)jobs[i].fresh_hits / (double)jobs[i].fresh;
        assert_true(rate < 2.0 * p);
    }
}

static void count_window(void **state)
{
    (void)state;
    bk_aging *f = NULL;
    assert_int_equal(bk_aging_new_count(W, 0.01, NULL, &f), BK_OK);
    /* 3 W keys: the ring has turned several times; the last W are the window */
    uint64_t *all = malloc(3 * (size_t)W * sizeof *all), st = 11;
    assert_non_null(all);
    for (size_t i = 0; i < 3 * (size_t)W; i++) {
        all[i] = tu_splitmix(&st) & ~(uint64_t)1;
        assert_int_equal(bk_aging_add_u64(f, all[i]), BK_OK);
    }
    query_together(f, all + 2 * (size_t)W, W, 0.01);
    bk_aging_free(f);
    free(all);
}

static _Atomic uint64_t g_now_ms;
static uint64_t test_clock(void *ctx)
{
    (void)ctx;
    return atomic_load(&g_now_ms);
}

static void time_window(void **state)
{
    (void)state;
    bk_aging_options o = BK_AGING_OPTIONS_INIT;
    o.clock = test_clock;
    atomic_store(&g_now_ms, 1000000);
    bk_aging *f = NULL;
    /* a window of 10 s sized for W keys; they arrive 10 a millisecond, W a window */
    assert_int_equal(bk_aging_new_time(10000, W, 0.01, &o, &f), BK_OK);
    uint64_t *all = malloc(3 * (size_t)W * sizeof *all), st = 23;
    assert_non_null(all);
    for (size_t i = 0; i < 3 * (size_t)W; i++) {
        if (i % 10 == 0) atomic_fetch_add(&g_now_ms, 1);
        all[i] = tu_splitmix(&st) & ~(uint64_t)1;
        assert_int_equal(bk_aging_add_u64(f, all[i]), BK_OK);
    }
    /* 5 s after the last insert the window holds the keys of the last 5 s of inserts, W / 2 of them
     * (those inserted after the clock passed last - 5000 ms; the first of those ms is left out) */
    atomic_fetch_add(&g_now_ms, 5000);
    query_together(f, all + 3 * (size_t)W - (W / 2 - 10), W / 2 - 10, 0.01);
    bk_aging_free(f);
    free(all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(count_window),
        cmocka_unit_test(time_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
