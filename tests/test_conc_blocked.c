/* Concurrency of the blocked filter: atomic inserts from 2 and 4 threads, a reader alongside. */
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
    bk_blocked *f;
    uint64_t set;
} job_t;

/* Even writers insert one key at a time, odd ones in batches (bk_blocked_add_many_atomic). */
static void *inserter(void *arg)
{
    job_t *j = arg;
    if (j->set % 2 == 0) {
        for (uint64_t i = 0; i < PER_THREAD; i++) {
            tu_key k = tu_make_key(j->set, i);
            bk_blocked_add_atomic(j->f, k.b, sizeof k.b);
        }
        return NULL;
    }
    enum { B = 500 };
    tu_key keys[B];
    const void *ptrs[B];
    size_t lens[B];
    for (uint64_t i = 0; i < PER_THREAD; i += B) {
        for (uint64_t b = 0; b < B; b++) {
            keys[b] = tu_make_key(j->set, i + b);
            ptrs[b] = keys[b].b;
            lens[b] = sizeof keys[b].b;
        }
        bk_blocked_add_many_atomic(j->f, ptrs, lens, B);
    }
    return NULL;
}

typedef struct {
    bk_blocked *f;
    int sets;
    int *stop;
    uint64_t disappeared, seen, rounds, last_count;
} reader_t;

/* Re-reads a sample of every writer's keys, one at a time and as a batch; once a key has been seen
 * present it must stay present. */
static void *reader(void *arg)
{
    reader_t *r = arg;
    enum { W = 2048 };
    uint8_t *seen = calloc((size_t)r->sets * W, 1), *res = malloc(W);
    tu_key *keys = malloc(W * sizeof *keys);
    const void **ptrs = malloc(W * sizeof *ptrs);
    size_t *lens = malloc(W * sizeof *lens);
    bool last = false;
    while (!last) {
        last = tc_raised(r->stop); /* one full pass after the writers end */
        for (int s = 0; s < r->sets; s++) {
            uint8_t *sn = seen + (size_t)s * W;
            for (uint64_t i = 0; i < W; i++) {
                keys[i] = tu_make_key((uint64_t)s, i * (PER_THREAD / W));
                ptrs[i] = keys[i].b;
                lens[i] = sizeof keys[i].b;
            }
            bk_blocked_contains_many(r->f, ptrs, lens, W, res, NULL);
            for (uint64_t i = 0; i < W; i++) {
                if (sn[i] && !res[i]) r->disappeared++;
                if (res[i] && !sn[i]) r->seen++;
                sn[i] |= res[i];
                bool p = bk_blocked_contains(r->f, ptrs[i], lens[i]);
                if (sn[i] && !p) r->disappeared++;
                if (p && !sn[i]) r->seen++;
                sn[i] |= p;
                if (last && !p) r->disappeared++; /* after the writers: everything is there */
            }
        }
        /* The whole-array [query] calls alongside the atomic inserts (ThreadSanitizer checks their
         * reads): a clone holds every key seen so far, and the count never goes back. */
        bk_blocked *c = NULL;
        if (bk_blocked_clone(r->f, &c) == BK_OK) {
            for (int s = 0; s < r->sets; s++)
                for (uint64_t i = 0; i < W; i++) {
                    tu_key k = tu_make_key((uint64_t)s, i * (PER_THREAD / W));
                    if (seen[(size_t)s * W + i] && !bk_blocked_contains(c, k.b, sizeof k.b)) r->disappeared++;
                }
            bk_stats st;
            bk_blocked_stats(r->f, &st);
            if (st.count < r->last_count || bk_blocked_count(c) > st.count) r->disappeared++;
            r->last_count = st.count;
            bk_blocked_free(c);
        }
        r->rounds++;
    }
    free(seen);
    free(res);
    free(keys);
    free(ptrs);
    free(lens);
    return NULL;
}

static void run(int threads, bk_blocked_layout layout, bk_simd reader_path)
{
    bk_blocked *f = NULL;
    bk_blocked_options o = { .layout = layout, .seed = 11 };
    assert_int_equal(bk_blocked_new((uint64_t)threads * PER_THREAD, 0.01, &o, &f), BK_OK);
    if (reader_path != BK_SIMD_AUTO) assert_int_equal(bk_blocked_set_simd(f, reader_path), BK_OK);
    tc_threads t = { .n = 0 }, rt = { .n = 0 };
    job_t jobs[8];
    int stop = 0;
    reader_t rd = { f, threads, &stop, 0, 0, 0, 0 };
    tc_start(&rt, reader, &rd);
    for (int i = 0; i < threads; i++) {
        jobs[i] = (job_t){ f, (uint64_t)i };
        tc_start(&t, inserter, &jobs[i]);
    }
    tc_join(&t);
    tc_raise(&stop);
    tc_join(&rt);
    print_message("%d writers, layout %d, reader path %s: reader saw %llu keys appear in %llu rounds\n", threads,
                  (int)layout, bk_simd_name(bk_blocked_simd(f)), (unsigned long long)rd.seen,
                  (unsigned long long)rd.rounds);
    assert_int_equal(rd.disappeared, 0);
    assert_int_equal(bk_blocked_count(f), (uint64_t)threads * PER_THREAD);
    for (int s = 0; s < threads; s++)
        for (uint64_t i = 0; i < PER_THREAD; i++) {
            tu_key k = tu_make_key((uint64_t)s, i);
            if (!bk_blocked_contains(f, k.b, sizeof k.b))
                fail_msg("false negative: thread %d key %llu", s, (unsigned long long)i);
        }
    /* The atomic inserts set exactly the bits the plain inserts set. */
    bk_blocked *g = NULL;
    assert_int_equal(bk_blocked_new((uint64_t)threads * PER_THREAD, 0.01, &o, &g), BK_OK);
    for (int s = 0; s < threads; s++)
        for (uint64_t i = 0; i < PER_THREAD; i++) {
            tu_key k = tu_make_key((uint64_t)s, i);
            bk_blocked_add(g, k.b, sizeof k.b);
        }
    size_t len;
    const uint8_t *df = bk_blocked_data(f, &len);
    assert_true(memcmp(df, bk_blocked_data(g, NULL), len) == 0);
    bk_blocked_free(g);
    bk_blocked_free(f);
}

/* Under ThreadSanitizer AUTO is the scalar path (relaxed atomic loads, which TSan models); elsewhere
 * the reader runs on the CPU's best path, so the vector loads are exercised against atomic ORs too. */
static void two_threads_split(void **s) { (void)s; run(2, BK_BLOCKED_SPLIT256, BK_SIMD_AUTO); }
static void four_threads_split(void **s) { (void)s; run(4, BK_BLOCKED_SPLIT256, BK_SIMD_AUTO); }
static void two_threads_512(void **s) { (void)s; run(2, BK_BLOCKED_512, BK_SIMD_AUTO); }
static void four_threads_512(void **s) { (void)s; run(4, BK_BLOCKED_512, BK_SIMD_AUTO); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_threads_split), cmocka_unit_test(four_threads_split),
        cmocka_unit_test(two_threads_512), cmocka_unit_test(four_threads_512),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
