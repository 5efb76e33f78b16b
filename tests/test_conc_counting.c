/* Concurrency of the counting filter: atomic increments and decrements from several threads (CAS on the
 * word), readers alongside; sticky saturation under contention. */
#include <sched.h>
#include "conc.h"
#include <bloomkit/bloomkit.h>

/* 2,000,000 keys per thread. Under ThreadSanitizer every atomic operation is an instrumented call
 * (about 10 us per add here), and under AddressSanitizer the reader's whole-filter clones and counts
 * are instrumented loads, so those builds run the same test on a tenth of the keys to keep `make
 * check` within its time budget; the interleavings it checks are the same. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define PER_THREAD 200000
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define PER_THREAD 200000
#endif
#endif
#ifndef PER_THREAD
#define PER_THREAD 2000000
#endif

typedef struct {
    bk_counting *f;
    uint64_t set, from, to;
    bool remove;
    uint64_t failures;
} job_t;

static void *worker(void *arg)
{
    job_t *j = arg;
    for (uint64_t i = j->from; i < j->to; i++) {
        tu_key k = tu_make_key(j->set, i);
        bk_status s = j->remove ? bk_counting_remove_atomic(j->f, k.b, sizeof k.b) : bk_counting_add_atomic(j->f, k.b, sizeof k.b);
        j->failures += s != BK_OK;
    }
    return NULL;
}

typedef struct {
    bk_counting *f;
    uint64_t set, stride;
    volatile int *stop;
    uint64_t disappeared, seen, clones;
} reader_t;

/* Re-reads a window of keys that are never removed; once seen present, a key must stay present, in
 * the filter and in clones taken later (clone is [query]: it reads the counters while the atomic
 * updates run, which ThreadSanitizer checks). */
static void *reader(void *arg)
{
    reader_t *r = arg;
    enum { W = 4096 };
    static __thread uint8_t seen[W];
    memset(seen, 0, sizeof seen);
    uint64_t pass = 0;
    while (!tc_raised(r->stop)) {
        if (pass++ % 16 == 0) {
            bk_counting *c = NULL;
            if (bk_counting_clone(r->f, &c) == BK_OK) {
                r->clones++;
                for (uint64_t i = 0; i < W; i++) {
                    tu_key k = tu_make_key(r->set, i * r->stride);
                    if (seen[i] && !bk_counting_contains(c, k.b, sizeof k.b)) r->disappeared++;
                }
                bk_counting_free(c);
            }
        }
        for (uint64_t i = 0; i < W; i++) {
            tu_key k = tu_make_key(r->set, i * r->stride);
            bool p = bk_counting_contains(r->f, k.b, sizeof k.b);
            if (seen[i] && !p) r->disappeared++;
            if (p && !seen[i]) r->seen++;
            seen[i] |= p;
        }
        sched_yield(); /* leave the (two) cores to the inserters between passes */
    }
    return NULL;
}

static void run_jobs(job_t *jobs, int n)
{
    tc_threads t = { .n = 0 };
    for (int i = 0; i < n; i++) tc_start(&t, worker, &jobs[i]);
    tc_join(&t);
    for (int i = 0; i < n; i++) assert_int_equal(jobs[i].failures, 0);
}

/* threads insert disjoint sets (then remove the odd half of each), a reader watches the even keys of
 * set 0, which are never removed. Counts exact, no false negatives, counters equal the plain path's. */
static void run(int threads, uint32_t bits)
{
    bk_counting *f = NULL, *g = NULL;
    bk_counting_options o = { .counter_bits = bits, .seed = 11 };
    assert_int_equal(bk_counting_new((uint64_t)threads * PER_THREAD, 0.01, &o, &f), BK_OK);
    job_t jobs[8];
    volatile int stop = 0;
    reader_t rd = { f, 0, PER_THREAD / 2 / 4096, &stop, 0, 0, 0 };
    tc_threads rt = { .n = 0 };
    tc_start(&rt, reader, &rd);
    for (int i = 0; i < threads; i++) jobs[i] = (job_t){ f, (uint64_t)i, 0, PER_THREAD, false, 0 };
    run_jobs(jobs, threads);
    assert_int_equal(bk_counting_count(f), (uint64_t)threads * PER_THREAD);
    for (int s = 0; s < threads; s++)
        for (uint64_t i = 0; i < PER_THREAD; i++) {
            tu_key k = tu_make_key((uint64_t)s, i);
            if (!bk_counting_contains(f, k.b, sizeof k.b)) fail_msg("false negative: thread %d key %llu", s, (unsigned long long)i);
        }
    /* now remove the second half of every set, concurrently, while the reader goes on */
    for (int i = 0; i < threads; i++) jobs[i] = (job_t){ f, (uint64_t)i, PER_THREAD / 2, PER_THREAD, true, 0 };
    run_jobs(jobs, threads);
    tc_raise(&stop);
    tc_join(&rt);
    assert_int_equal(rd.disappeared, 0);
    assert_true(rd.seen > 0);
    assert_true(rd.clones > 0);
    assert_int_equal(bk_counting_count(f), (uint64_t)threads * (PER_THREAD / 2));
    for (int s = 0; s < threads; s++)
        for (uint64_t i = 0; i < PER_THREAD / 2; i++) {
            tu_key k = tu_make_key((uint64_t)s, i);
            if (!bk_counting_contains(f, k.b, sizeof k.b)) fail_msg("false negative after removes: thread %d key %llu", s, (unsigned long long)i);
        }
    /* the same counters as the plain path */
    assert_int_equal(bk_counting_new((uint64_t)threads * PER_THREAD, 0.01, &o, &g), BK_OK);
    for (int s = 0; s < threads; s++)
        for (uint64_t i = 0; i < PER_THREAD / 2; i++) {
            tu_key k = tu_make_key((uint64_t)s, i);
            bk_counting_add(g, k.b, sizeof k.b);
        }
    size_t len;
    const uint8_t *df = bk_counting_data(f, &len);
    assert_true(memcmp(df, bk_counting_data(g, NULL), len) == 0);
    bk_counting_free(g);
    bk_counting_free(f);
}

/* All threads hammer a tiny filter: every counter saturates, and removing every key afterwards (from
 * all threads at once) leaves every saturated counter where it was and every key present. */
static void saturation_under_races(void **state)
{
    (void)state;
    enum { T = 4, KEYS = 50000 };
    for (uint32_t bits = 4; bits <= 8; bits += 4) {
        bk_counting *f = NULL;
        bk_counting_options o = { .counter_bits = bits, .seed = 12 };
        assert_int_equal(bk_counting_new_mk(64, 3, 0, &o, &f), BK_OK);
        job_t jobs[T];
        for (int i = 0; i < T; i++) jobs[i] = (job_t){ f, (uint64_t)(100 + i), 0, KEYS, false, 0 };
        run_jobs(jobs, T);
        bk_stats st;
        bk_counting_stats(f, &st);
        assert_int_equal(st.saturated_cells, 64);
        assert_int_equal(bk_counting_count(f), (uint64_t)T * KEYS);
        for (int i = 0; i < T; i++) jobs[i].remove = true;
        run_jobs(jobs, T);
        bk_counting_stats(f, &st);
        assert_int_equal(st.saturated_cells, 64);
        assert_int_equal(bk_counting_count(f), 0);
        for (int i = 0; i < T; i++)
            for (uint64_t k = 0; k < KEYS; k += 97) {
                tu_key key = tu_make_key((uint64_t)(100 + i), k);
                assert_true(bk_counting_contains(f, key.b, sizeof key.b));
            }
        bk_counting_free(f);
    }
}

static void two_threads_4bit(void **s) { (void)s; run(2, 4); }
static void four_threads_4bit(void **s) { (void)s; run(4, 4); }
static void two_threads_8bit(void **s) { (void)s; run(2, 8); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_threads_4bit),
        cmocka_unit_test(four_threads_4bit),
        cmocka_unit_test(two_threads_8bit),
        cmocka_unit_test(saturation_under_races),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
