/* Concurrency of the binary fuse filter: a built filter is read by several threads at once (single and
 * batch queries, and builds of other filters meanwhile); under ThreadSanitizer this shows the query
 * path has no hidden shared state. */
#include "conc.h"
#include <bloomkit/bloomkit.h>

#define N 200000
#define THREADS 4

typedef struct {
    const bk_fuse *f;
    const uint64_t *h;
    int id;
    size_t missing, present_fresh;
} job_t;

static void *querier(void *arg)
{
    job_t *j = arg;
    static __thread uint8_t res[N];
    for (int rep = 0; rep < 3; rep++) {
        for (size_t i = 0; i < N; i++) j->missing += !bk_fuse_contains_hash(j->f, j->h[i]);
        j->missing += N - TU_HITS(bk_fuse_contains_hashes, j->f, j->h, N, res);
        uint64_t st = 1000 + (uint64_t)j->id;
        for (size_t i = 0; i < N / 4; i++) j->present_fresh += bk_fuse_contains_hash(j->f, tu_splitmix(&st));
    }
    /* a build of its own meanwhile: construction shares nothing between calls either */
    bk_fuse *g = NULL;
    bk_fuse_options o = { .fingerprint_bits = 16, .max_attempts = 0, .seed = (uint64_t)j->id };
    if (bk_fuse_build_hashes(j->h, N / 2, &o, &g) != BK_OK) j->missing++;
    else {
        for (size_t i = 0; i < N / 2; i++) j->missing += !bk_fuse_contains_hash(g, j->h[i]);
        bk_fuse_free(g);
    }
    return NULL;
}

static void concurrent_queries(void **state)
{
    (void)state;
    uint64_t *h = malloc(N * sizeof *h), st = 7;
    assert_non_null(h);
    for (size_t i = 0; i < N; i++) h[i] = tu_splitmix(&st);
    bk_fuse *f = NULL;
    assert_int_equal(bk_fuse_build_hashes(h, N, NULL, &f), BK_OK);
    tc_threads t = { .n = 0 };
    job_t jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (job_t){ f, h, i, 0, 0 };
        tc_start(&t, querier, &jobs[i]);
    }
    tc_join(&t);
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(jobs[i].missing, 0);
        /* 3 * 50,000 fresh values at 2^-8: ~586 expected */
        assert_true(jobs[i].present_fresh > 300 && jobs[i].present_fresh < 900);
    }
    bk_fuse_free(f);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(concurrent_queries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
