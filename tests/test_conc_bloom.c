/* Concurrency of the classic filter: atomic inserts from several threads, readers alongside. */
#include "conc.h"
#include <bloomkit/bloomkit.h>

/* 2,000,000 keys per thread; under ThreadSanitizer (which checks the races, not the volume, and runs
 * some 10-20x slower) 250,000. */
#if defined(__SANITIZE_THREAD__)
#define PER_THREAD 250000
#else
#define PER_THREAD 2000000
#endif

typedef struct {
    bk_bloom *f;
    uint64_t set;
} job_t;

static void *inserter(void *arg)
{
    job_t *j = arg;
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        tu_key k = tu_make_key(j->set, i);
        bk_bloom_add_atomic(j->f, k.b, sizeof k.b);
    }
    return NULL;
}

typedef struct {
    bk_bloom *f;
    uint64_t set;
    volatile int *stop;
    uint64_t disappeared, seen, count_went_back, stats_calls;
} reader_t;

/* Re-reads a window of keys; once a key has been seen present it must stay present, in the filter
 * and in clones taken later. Between passes it calls the other [query] functions that read the whole
 * array (stats, clone) while the atomic inserts run (ThreadSanitizer checks those reads too): the
 * count they report never goes back. */
static void *reader(void *arg)
{
    reader_t *r = arg;
    enum { W = 4096 };
    static __thread uint8_t seen[W];
    memset(seen, 0, sizeof seen);
    uint64_t last_count = 0, pass = 0;
    for (bool first = true; first || !tc_raised(r->stop); first = false) {
        bk_stats st;
        bk_bloom_stats(r->f, &st);
        r->stats_calls++;
        if (st.count < last_count) r->count_went_back++;
        last_count = st.count;
        if (pass++ % 8 == 0) {
            bk_bloom *c = NULL;
            if (bk_bloom_clone(r->f, &c) == BK_OK) {
                for (uint64_t i = 0; i < W; i++) {
                    tu_key k = tu_make_key(r->set, i * (PER_THREAD / W));
                    if (seen[i] && !bk_bloom_contains(c, k.b, sizeof k.b)) r->disappeared++;
                }
                if (bk_bloom_count(c) < last_count) r->count_went_back++;
                bk_bloom_free(c);
            }
        }
        for (uint64_t i = 0; i < W; i++) {
            tu_key k = tu_make_key(r->set, i * (PER_THREAD / W));
            bool p = bk_bloom_contains(r->f, k.b, sizeof k.b);
            if (seen[i] && !p) r->disappeared++;
            if (p && !seen[i]) r->seen++;
            seen[i] |= p;
        }
    }
    return NULL;
}

static void run(int threads, bk_layout layout)
{
    bk_bloom *f = NULL;
    bk_bloom_options o = { .layout = layout, .seed = 11 };
    assert_int_equal(bk_bloom_new((uint64_t)threads * PER_THREAD, 0.01, &o, &f), BK_OK);
    tc_threads t = { .n = 0 }, rt = { .n = 0 };
    job_t jobs[8];
    volatile int stop = 0;
    reader_t rd = { f, 0, &stop, 0, 0, 0, 0 };
    tc_start(&rt, reader, &rd);
    for (int i = 0; i < threads; i++) {
        jobs[i] = (job_t){ f, (uint64_t)i };
        tc_start(&t, inserter, &jobs[i]);
    }
    tc_join(&t);
    tc_raise(&stop);
    tc_join(&rt);
    assert_int_equal(rd.disappeared, 0);
    assert_int_equal(rd.count_went_back, 0);
    assert_true(rd.stats_calls > 0);
    assert_int_equal(bk_bloom_count(f), (uint64_t)threads * PER_THREAD);
    for (int s = 0; s < threads; s++)
        for (uint64_t i = 0; i < PER_THREAD; i++) {
            tu_key k = tu_make_key((uint64_t)s, i);
            if (!bk_bloom_contains(f, k.b, sizeof k.b)) fail_msg("false negative: thread %d key %llu", s, (unsigned long long)i);
        }
    /* The atomic path sets exactly the bits the plain path sets. */
    bk_bloom *g = NULL;
    assert_int_equal(bk_bloom_new((uint64_t)threads * PER_THREAD, 0.01, &o, &g), BK_OK);
    for (int s = 0; s < threads; s++)
        for (uint64_t i = 0; i < PER_THREAD; i++) {
            tu_key k = tu_make_key((uint64_t)s, i);
            bk_bloom_add(g, k.b, sizeof k.b);
        }
    size_t len;
    const uint8_t *df = bk_bloom_data(f, &len);
    assert_true(memcmp(df, bk_bloom_data(g, NULL), len) == 0);
    bk_bloom_free(g);
    bk_bloom_free(f);
}

static void two_threads_standard(void **s) { (void)s; run(2, BK_LAYOUT_STANDARD); }
static void four_threads_standard(void **s) { (void)s; run(4, BK_LAYOUT_STANDARD); }
static void two_threads_partitioned(void **s) { (void)s; run(2, BK_LAYOUT_PARTITIONED); }
static void four_threads_partitioned(void **s) { (void)s; run(4, BK_LAYOUT_PARTITIONED); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_threads_standard), cmocka_unit_test(four_threads_standard),
        cmocka_unit_test(two_threads_partitioned), cmocka_unit_test(four_threads_partitioned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
