/* Concurrency of the scalable filter: atomic adds from several threads through many growths, readers
 * alongside. */
#include <sched.h>
#include "conc.h"
#include <bloomkit/bloomkit.h>

/* 2,000,000 keys per thread. Under ThreadSanitizer every atomic operation is an instrumented call
 * (about 10 us per add here), so that build runs the same test on a tenth of the keys to keep
 * `make check` within its time budget; the interleavings it checks are the same. */
#if defined(__SANITIZE_THREAD__)
#define PER_THREAD 200000
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PER_THREAD 200000
#endif
#endif
#ifndef PER_THREAD
#define PER_THREAD 2000000
#endif

typedef struct {
    bk_scalable *f;
    uint64_t set;
    uint64_t added, exists, errors;
} job_t;

static void *inserter(void *arg)
{
    job_t *j = arg;
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        tu_key k = tu_make_key(j->set, i);
        bk_status s = bk_scalable_add_atomic(j->f, k.b, sizeof k.b);
        if (s == BK_OK) j->added++;
        else if (s == BK_EEXISTS) j->exists++;
        else j->errors++;
    }
    return NULL;
}

typedef struct {
    bk_scalable *f;
    uint64_t set;
    volatile int *stop;
    uint64_t disappeared, seen;
} reader_t;

/* Re-reads a window of keys (inserted early and late) while the chain grows under it; once seen
 * present, a key must stay present. */
static void *reader(void *arg)
{
    reader_t *r = arg;
    enum { W = 4096 };
    static __thread uint8_t seen[W];
    memset(seen, 0, sizeof seen);
    while (!tc_raised(r->stop)) {
        for (uint64_t i = 0; i < W; i++) {
            tu_key k = tu_make_key(r->set, i * (PER_THREAD / W));
            bool p = bk_scalable_contains(r->f, k.b, sizeof k.b);
            if (seen[i] && !p) r->disappeared++;
            if (p && !seen[i]) r->seen++;
            seen[i] |= p;
        }
        sched_yield(); /* leave the (two) cores to the inserters between passes */
        bk_scalable_filters(r->f);
        bk_scalable_count(r->f);
    }
    return NULL;
}

/* flags: 0 (blocked sub-filters, the default), BK_SCALABLE_CLASSIC or BK_SCALABLE_COMPACT */
static void run(int threads, uint32_t growth, uint32_t flags)
{
    bk_scalable *f = NULL;
    bk_scalable_options o = bk_scalable_default_options();
    o.growth = growth;
    o.flags = flags;
    o.seed = 21;
    /* about 10 growths; a compact chain from 100 keys, its small first sub-filter in the chain's block,
     * and the chain's array of sub-filters made by the first growth, while readers run */
    assert_int_equal(bk_scalable_new((flags & BK_SCALABLE_COMPACT) ? 100 : PER_THREAD / 200, 0.01, &o, &f), BK_OK);
    tc_threads t = { .n = 0 }, rt = { .n = 0 };
    job_t jobs[8];
    volatile int stop = 0;
    reader_t rd = { f, 0, &stop, 0, 0 };
    tc_start(&rt, reader, &rd);
    for (int i = 0; i < threads; i++) {
        jobs[i] = (job_t){ f, (uint64_t)i, 0, 0, 0 };
        tc_start(&t, inserter, &jobs[i]);
    }
    tc_join(&t);
    tc_raise(&stop);
    tc_join(&rt);
    assert_int_equal(rd.disappeared, 0);
    assert_true(rd.seen > 0);
    uint64_t added = 0, exists = 0;
    for (int i = 0; i < threads; i++) {
        assert_int_equal(jobs[i].errors, 0);
        added += jobs[i].added;
        exists += jobs[i].exists;
    }
    assert_int_equal(added + exists, (uint64_t)threads * PER_THREAD);
    /* counts exact: every BK_OK is one key in exactly one sub-filter, none past its capacity */
    assert_int_equal(bk_scalable_count(f), added);
    uint32_t L = bk_scalable_filters(f);
    uint64_t sum = 0, held = 0;
    for (uint32_t l = 0; l < L; l++) {
        bk_scalable_layer ls;
        assert_int_equal(bk_scalable_get_layer(f, l, &ls), BK_OK);
        assert_true(ls.count <= ls.capacity);
        if (l + 1 < L) assert_int_equal(ls.count, ls.capacity);
        sum += ls.count;
        held += ls.capacity;
    }
    assert_int_equal(sum, added);
    assert_true(held - bk_scalable_capacity(f) == 0);
    for (int s = 0; s < threads; s++)
        for (uint64_t i = 0; i < PER_THREAD; i++) {
            tu_key k = tu_make_key((uint64_t)s, i);
            if (!bk_scalable_contains(f, k.b, sizeof k.b))
                fail_msg("false negative: thread %d key %llu", s, (unsigned long long)i);
        }
    print_message("%d threads, growth %u: %llu added, %llu probably present already, %u sub-filters\n", threads,
                  growth, (unsigned long long)added, (unsigned long long)exists, L);
    bk_scalable_free(f);
}

static void two_threads(void **s) { (void)s; run(2, 2, 0); }
static void four_threads(void **s) { (void)s; run(4, 2, 0); }
static void two_threads_classic(void **s) { (void)s; run(2, 2, BK_SCALABLE_CLASSIC); }
static void two_threads_compact(void **s) { (void)s; run(2, 2, BK_SCALABLE_COMPACT); }

/* Growth 1 under races: exactly `capacity` keys get in, every other add says BK_EFULL (or BK_EEXISTS). */
static void *fill_nonscaling(void *arg)
{
    job_t *j = arg;
    for (uint64_t i = 0; i < 20000; i++) {
        tu_key k = tu_make_key(j->set, i);
        bk_status s = bk_scalable_add_atomic(j->f, k.b, sizeof k.b);
        if (s == BK_OK) j->added++;
        else if (s == BK_EEXISTS) j->exists++;
        else if (s != BK_EFULL) j->errors++;
    }
    return NULL;
}

static void nonscaling_races(void **state)
{
    (void)state;
    bk_scalable *f = NULL;
    bk_scalable_options o = { .growth = 2, .tightening = 0.5, .max_bytes = 0, .seed = 3, .flags = BK_SCALABLE_NONSCALING };
    assert_int_equal(bk_scalable_new(10000, 0.01, &o, &f), BK_OK);
    tc_threads t = { .n = 0 };
    job_t jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (job_t){ f, (uint64_t)(10 + i), 0, 0, 0 };
        tc_start(&t, fill_nonscaling, &jobs[i]);
    }
    tc_join(&t);
    uint64_t added = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(jobs[i].errors, 0);
        added += jobs[i].added;
    }
    assert_int_equal(added, 10000);
    assert_int_equal(bk_scalable_count(f), 10000);
    assert_int_equal(bk_scalable_filters(f), 1);
    bk_scalable_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_threads),
        cmocka_unit_test(four_threads),
        cmocka_unit_test(two_threads_classic),
        cmocka_unit_test(two_threads_compact),
        cmocka_unit_test(nonscaling_races),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
