/*
 * The fill by parts behind `bloomkit build`'s threads (bk_bloom_add_hashes_part,
 * bk_blocked_add_hashes_part): nparts threads, each adding every hash but setting
 * only the bits of its own range of the filter, must give exactly the file that add_hashes gives on
 * one thread, for classic (standard and partitioned), blocked 256 and blocked 512 filters, large and
 * tiny (more parts than cache lines), with any number of parts. Under ThreadSanitizer this also shows
 * the parts never write the same memory.
 */
#include "conc.h"
#include <bloomkit/bloomkit.h>
#include "filters/internal.h"

#define NHASH 300000

typedef struct {
    void *typed;
    bool blocked;
    const uint64_t *h;
    size_t n;
    unsigned part, nparts;
} job;

static void *run_part(void *arg)
{
    job *j = arg;
    /* in slices, as the CLI hands them over */
    for (size_t i = 0; i < j->n; i += 4096) {
        size_t m = j->n - i < 4096 ? j->n - i : 4096;
        if (j->blocked)
            bk_blocked_add_hashes_part(j->typed, j->h + i, m, j->part, j->nparts);
        else
            bk_bloom_add_hashes_part(j->typed, j->h + i, m, j->part, j->nparts);
    }
    return NULL;
}

/* A new empty filter of the case's kind, wrapped. */
static bk_filter *make(int kind, uint64_t n)
{
    void *typed = NULL;
    bk_type type = BK_TYPE_BLOOM;
    if (kind < 2) {
        bk_bloom_options o = { .layout = kind == 0 ? BK_LAYOUT_STANDARD : BK_LAYOUT_PARTITIONED, .seed = 7 };
        assert_int_equal(bk_bloom_new(n, 0.01, &o, (bk_bloom **)&typed), BK_OK);
    } else {
        bk_blocked_options o = { .layout = kind == 2 ? BK_BLOCKED_SPLIT256 : BK_BLOCKED_512, .seed = 7 };
        assert_int_equal(bk_blocked_new(n, 0.01, &o, (bk_blocked **)&typed), BK_OK);
        type = BK_TYPE_BLOCKED;
    }
    bk_filter *f;
    assert_int_equal(bk_filter_wrap(type, typed, &f), BK_OK);
    return f;
}

static void check_kind(int kind)
{
    static const uint64_t sizes[] = { NHASH, 40 };
    static const unsigned parts[] = { 1, 2, 3, 5, 8 };
    uint64_t *h = malloc(NHASH * sizeof *h), st = 99;
    assert_non_null(h);
    for (size_t i = 0; i < NHASH; i++) h[i] = tu_splitmix(&st);
    for (size_t si = 0; si < 2; si++) {
        size_t n = (size_t)sizes[si];
        bk_filter *ref = make(kind, n);
        assert_int_equal(bk_filter_add_hashes(ref, h, n, NULL), BK_OK);
        void *want;
        size_t want_len;
        assert_int_equal(bk_filter_save_alloc(ref, &want, &want_len), BK_OK);
        for (size_t pi = 0; pi < sizeof parts / sizeof parts[0]; pi++) {
            unsigned np = parts[pi];
            bk_filter *f = make(kind, n);
            void *typed = bk_filter_get(f, kind < 2 ? BK_TYPE_BLOOM : BK_TYPE_BLOCKED);
            job jobs[8];
            tc_threads tid = { .n = 0 };
            for (unsigned p = 0; p < np; p++) {
                jobs[p] = (job){ typed, kind >= 2, h, n, p, np };
                tc_start(&tid, run_part, &jobs[p]);
            }
            tc_join(&tid);
            assert_int_equal(bk_filter_set_count(f, n), BK_OK); /* the parts leave the count alone */
            void *got;
            size_t got_len;
            assert_int_equal(bk_filter_save_alloc(f, &got, &got_len), BK_OK);
            if (got_len != want_len || memcmp(got, want, want_len) != 0)
                fail_msg("kind %d, %zu keys, %u parts: not the bytes of a single-threaded add", kind, n, np);
            bk_filter_buffer_free(got);
            bk_filter_free(f);
        }
        bk_filter_buffer_free(want);
        bk_filter_free(ref);
    }
    free(h);
}

static void classic_standard(void **state) { (void)state; check_kind(0); }
static void classic_partitioned(void **state) { (void)state; check_kind(1); }
static void blocked_256(void **state) { (void)state; check_kind(2); }
static void blocked_512(void **state) { (void)state; check_kind(3); }

/* Bad arguments are refused and change nothing. */
static void bad_arguments(void **state)
{
    (void)state;
    bk_bloom *b;
    bk_blocked *k;
    assert_int_equal(bk_bloom_new(1000, 0.01, NULL, &b), BK_OK);
    assert_int_equal(bk_blocked_new(1000, 0.01, NULL, &k), BK_OK);
    uint64_t h = 12345;
    assert_int_equal(bk_bloom_add_hashes_part(NULL, &h, 1, 0, 1), BK_EINVAL);
    assert_int_equal(bk_bloom_add_hashes_part(b, NULL, 1, 0, 1), BK_EINVAL);
    assert_int_equal(bk_bloom_add_hashes_part(b, &h, 1, 2, 2), BK_EINVAL);
    assert_int_equal(bk_bloom_add_hashes_part(b, &h, 1, 0, 0), BK_EINVAL);
    assert_int_equal(bk_blocked_add_hashes_part(NULL, &h, 1, 0, 1), BK_EINVAL);
    assert_int_equal(bk_blocked_add_hashes_part(k, NULL, 1, 0, 1), BK_EINVAL);
    assert_int_equal(bk_blocked_add_hashes_part(k, &h, 1, 3, 3), BK_EINVAL);
    assert_false(bk_bloom_contains_hash(b, h));
    assert_false(bk_blocked_contains_hash(k, h));
    assert_int_equal(bk_bloom_add_hashes_part(b, &h, 1, 0, 1), BK_OK);
    assert_int_equal(bk_blocked_add_hashes_part(k, &h, 1, 0, 1), BK_OK);
    assert_true(bk_bloom_contains_hash(b, h));
    assert_true(bk_blocked_contains_hash(k, h));
    bk_bloom_free(b);
    bk_blocked_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classic_standard),
        cmocka_unit_test(classic_partitioned),
        cmocka_unit_test(blocked_256),
        cmocka_unit_test(blocked_512),
        cmocka_unit_test(bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
