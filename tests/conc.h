/* Shared by the concurrency tests (tests/test_conc_*.c): a group of threads started and joined
 * together, the stop flag that readers poll while writers run, and a start line where a group of
 * threads waits until all of them are up (so their calls overlap). Failures are cmocka assertions. */
#ifndef BK_TEST_CONC_H
#define BK_TEST_CONC_H

#include <pthread.h>
#include <stdbool.h>
#include "testutil.h"

#define TC_MAX_THREADS 16

typedef struct tc_threads {
    pthread_t t[TC_MAX_THREADS];
    int n;
} tc_threads;

/* Start fn(arg) on one more thread of the group. */
static inline void tc_start(tc_threads *g, void *(*fn)(void *), void *arg)
{
    assert_true(g->n < TC_MAX_THREADS);
    assert_int_equal(pthread_create(&g->t[g->n], NULL, fn, arg), 0);
    g->n++;
}

/* Start fn on each of the n elements of the array jobs: fn(&jobs[0]), ..., fn(&jobs[n - 1]). */
static inline void tc_start_each_(tc_threads *g, void *(*fn)(void *), void *jobs, size_t size, int n)
{
    for (int i = 0; i < n; i++) tc_start(g, fn, (char *)jobs + (size_t)i * size);
}
#define TC_START_EACH(g, fn, jobs, n) tc_start_each_((g), (fn), (jobs), sizeof *(jobs), (n))

/* Join the group's threads in the order they were started; rets (NULL: not wanted) gets what each
 * returned. The group is empty afterwards and can start threads again. */
static inline void tc_join_results(tc_threads *g, void **rets)
{
    for (int i = 0; i < g->n; i++) assert_int_equal(pthread_join(g->t[i], rets ? &rets[i] : NULL), 0);
    g->n = 0;
}
static inline void tc_join(tc_threads *g) { tc_join_results(g, NULL); }

/* The stop flag: raised (release) by the thread that ends a phase, polled (acquire) by the others. */
static inline void tc_raise(volatile int *flag) { __atomic_store_n(flag, 1, __ATOMIC_RELEASE); }
static inline bool tc_raised(const volatile int *flag) { return __atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0; }

/* A start line for `count` threads: each tc_line_wait returns once all of them have called it. */
typedef struct tc_line {
    pthread_barrier_t b;
} tc_line;
static inline void tc_line_init(tc_line *l, unsigned count)
{
    assert_int_equal(pthread_barrier_init(&l->b, NULL, count), 0);
}
static inline void tc_line_wait(tc_line *l) { pthread_barrier_wait(&l->b); }
static inline void tc_line_destroy(tc_line *l) { assert_int_equal(pthread_barrier_destroy(&l->b), 0); }

#endif
