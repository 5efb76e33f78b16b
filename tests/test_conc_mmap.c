/*
 * Threads inserting through shared writable mappings (BK_OPEN_WRITE_SHARED): two threads on one
 * handle, and a thread on a second handle of the same file, insert disjoint keys while another thread
 * queries. Run under ThreadSanitizer by `make test-tsan` (label "concurrency"): the generic handle's
 * insert path on a shared mapping must be the atomic one. A forked child that frees an inherited
 * writable handle leaves the file to its parent, and a writer whose file was overwritten in place does
 * not finalise it.
 */
#include "conc.h"
#include "factories.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
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
        tc_threads th = { .n = 0 };
        for (int i = 0; i < 3; i++) tc_start(&th, inserter, &jobs[i]);
        tc_start(&th, querier, &jobs[3]);
        void *r[4];
        tc_join_results(&th, r);
        for (int i = 0; i < 4; i++) assert_null(r[i]);
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

static uint32_t header_flags(const char *path)
{
    uint8_t h[64];
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, h, sizeof h), (ssize_t)sizeof h);
    close(fd);
    bk_file_info fi;
    assert_int_equal(bk_filter_peek_header(h, sizeof h, &fi), BK_OK);
    return fi.flags;
}

static void a_child_leaves_the_mapping_to_its_parent(void **state)
{
    (void)state;
    char dir[] = "/tmp/bk-conc-mmap.XXXXXX", path[64], other[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/f.bkf", dir);
    snprintf(other, sizeof other, "%s/o.bkf", dir);
    bk_blocked *b;
    assert_int_equal(bk_blocked_new(100000, 0.01, NULL, &b), BK_OK);
    bk_filter *f, *a, *g;
    assert_int_equal(bk_filter_wrap(BK_TYPE_BLOCKED, b, &f), BK_OK);
    assert_int_equal(bk_filter_save_path(f, path), BK_OK);
    const void *addr;
    size_t len;
    assert_int_equal(bk_filter_mapping(f, &addr, &len), BK_EINVAL); /* in memory */
    bk_filter_free(f);

    assert_int_equal(bk_filter_open_mmap(path, BK_OPEN_WRITE_SHARED, &a), BK_OK);
    assert_int_equal(bk_filter_mapping(a, &addr, &len), BK_OK);
    assert_non_null(addr);
    assert_int_equal(bk_filter_add(a, "before", 6), BK_OK);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(bk_filter_close(a) == BK_OK ? 0 : 1); /* unmaps only */
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* the parent still writes: the flag is still set, a clean load is still refused */
    assert_true(header_flags(path) & BK_FILE_FLAG_CHECKSUM_STALE);
    assert_int_equal(bk_filter_load_path(path, BK_LOAD_REQUIRE_CLEAN, &g), BK_ECHECKSUM);
    assert_int_equal(bk_filter_add(a, "after", 5), BK_OK);
    assert_int_equal(bk_filter_close(a), BK_OK); /* the opener finalises */
    assert_false(header_flags(path) & BK_FILE_FLAG_CHECKSUM_STALE);
    assert_int_equal(bk_filter_load_path(path, BK_LOAD_REQUIRE_CLEAN, &g), BK_OK);
    assert_true(bk_filter_contains(g, "before", 6) && bk_filter_contains(g, "after", 5));
    bk_filter_free(g);

    /* another filter of the same size written over the file in place: the writer leaves it alone */
    bk_blocked *b2;
    bk_blocked_options o = BK_BLOCKED_OPTIONS_INIT;
    o.seed = 99;
    assert_int_equal(bk_blocked_new(100000, 0.01, &o, &b2), BK_OK);
    assert_int_equal(bk_filter_wrap(BK_TYPE_BLOCKED, b2, &f), BK_OK);
    void *bytes;
    size_t n;
    assert_int_equal(bk_filter_save_alloc(f, &bytes, &n), BK_OK);
    bk_filter_free(f);
    assert_int_equal(bk_filter_open_mmap(path, BK_OPEN_WRITE_SHARED, &a), BK_OK);
    assert_int_equal(bk_filter_mapping(a, &addr, &len), BK_OK);
    assert_int_equal(len, n);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, bytes, n, 0), (ssize_t)n);
    close(fd);
    errno = 0;
    assert_int_equal(bk_filter_close(a), BK_EIO);
    assert_int_equal(errno, ESTALE);
    assert_int_equal(bk_filter_load_path(path, BK_LOAD_REQUIRE_CLEAN, &g), BK_OK); /* as written */
    assert_int_equal(bk_filter_seed(g), 99);
    bk_filter_free(g);
    bk_filter_buffer_free(bytes);
    unlink(path);
    unlink(other);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threads_share_a_mapping),
        cmocka_unit_test(a_child_leaves_the_mapping_to_its_parent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
