/*
 * Threads inserting through shared writable mappings (BK_OPEN_WRITE_SHARED): two threads on one
 * handle, and a thread on a second handle of the same file, insert disjoint keys while another thread
 * queries. Run under ThreadSanitizer by `make test-tsan` (label "concurrency"): the generic handle's
 * insert path on a shared mapping must be the atomic one.
 */
#include "testutil.h"
#include "factories.h"
#include <pthread.h>
#include <unistd.h>

#define M 200000

typedef struct {
    bk_filter *f;
    uint64_t lo, hi;
} job;

static void *inserter(void *arg)
{
    job *j = arg;
    for (uint64_t i = j->lo; i < j->hi; i++) {
        tf_key k = tf_make_key(1, i);
        if (bk_filter_add(j->f, k.b, sizeof k.b) != BK_OK) return (void *)1;
    }
    return NULL;
}

static void *querier(void *arg)
{
    job *j = arg;
    uint64_t found = 0;
    for (uint64_t i = j->lo; i < j->hi; i++) {
        tf_key k = tf_make_key(1, i);
        found += bk_filter_contains(j->f, k.b, sizeof k.b);
    }
    return (void *)(uintptr_t)(found > j->hi ? 1 : 0);
}

static void threads_share_a_mapping(void **state)
{
    (void)state;
    char dir[] = "/tmp/bk-conc-mmap.XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/f.bkf", dir);
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        if (!tf_factories[t].shared_writable) continue;
        bk_filter *f = tf_factories[t].make(M, 0, 3), *a, *b;
        assert_non_null(f);
        assert_int_equal(bk_filter_save_path(f, path), BK_OK);
        bk_filter_free(f);
        assert_int_equal(bk_filter_open_mmap(path, BK_OPEN_WRITE_SHARED, &a), BK_OK);
        assert_int_equal(bk_filter_open_mmap(path, BK_OPEN_WRITE_SHARED, &b), BK_OK);
        job jobs[4] = { { a, 0, M / 3 }, { a, M / 3, 2 * M / 3 }, { b, 2 * M / 3, M }, { a, 0, M } };
        pthread_t th[4];
        for (int i = 0; i < 3; i++) assert_int_equal(pthread_create(&th[i], NULL, inserter, &jobs[i]), 0);
        assert_int_equal(pthread_create(&th[3], NULL, querier, &jobs[3]), 0);
        for (int i = 0; i < 4; i++) {
            void *r;
            pthread_join(th[i], &r);
            assert_null(r);
        }
        assert_int_equal(bk_filter_close(b), BK_OK);
        for (uint64_t i = 0; i < M; i++) {
            tf_key k = tf_make_key(1, i);
            if (!bk_filter_contains(a, k.b, sizeof k.b)) fail_msg("key %llu lost", (unsigned long long)i);
        }
        assert_int_equal(bk_filter_close(a), BK_OK);
        bk_filter *g;
        assert_int_equal(bk_filter_load_path(path, BK_LOAD_REQUIRE_CLEAN, &g), BK_OK);
        bk_stats st;
        bk_filter_stats(g, &st);
        if (tf_factories[t].type == BK_TYPE_BLOOM) assert_int_equal(st.count, M);
        bk_filter_free(g);
    }
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threads_share_a_mapping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
