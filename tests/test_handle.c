/*
 * What programs ask of any filter through the generic handle, without switching on its type:
 * bk_filter_count, bk_filter_clone, bk_filter_compatible and bk_filter_add_if_absent, each checked
 * against the type's own answer (its statistics, its saved bytes, its own add_if_absent) for every
 * factory of tests/factories.h, in memory and mapped.
 */
#include "testutil.h"
#include "factories.h"
#include <unistd.h>

enum { CAP = 10000, NKEYS = 2000 };

static bk_filter *make(const tf_factory *t, uint64_t seed)
{
    bk_filter *f = t->make(CAP, NKEYS, seed);
    assert_non_null(f);
    return f;
}

/* The saved form of f, allocated (free with bk_filter_buffer_free). */
static uint8_t *saved(const bk_filter *f, size_t *len)
{
    void *buf = NULL;
    assert_int_equal(bk_filter_save_alloc(f, &buf, len), BK_OK);
    return buf;
}

/* A read-only handle on f's saved bytes, used in place (a mapping's backing). *buf is to be freed
 * after the handle. */
static bk_filter *mapped(const bk_filter *f, void **buf)
{
    size_t len = 0;
    assert_int_equal(bk_filter_save_size(f, &len), BK_OK);
    assert_int_equal(posix_memalign(buf, 64, len), 0);
    size_t w = 0;
    assert_int_equal(bk_filter_save_buffer(f, *buf, len, &w), BK_OK);
    bk_filter *m = NULL;
    assert_int_equal(bk_filter_open_buffer(*buf, w, 0, &m), BK_OK);
    assert_int_equal(bk_filter_backing(m), BK_BACKING_MAP_READONLY);
    return m;
}

static uint64_t stats_count(const bk_filter *f)
{
    bk_stats st;
    assert_int_equal(bk_filter_stats(f, &st), BK_OK);
    return st.count;
}

/* The count is the statistics' count, for every type, in memory and mapped, and follows inserts. */
static void count_is_the_stats_count(void **state)
{
    (void)state;
    for (size_t i = 0; i < TF_NFACTORIES; i++) {
        const tf_factory *t = &tf_factories[i];
        bk_filter *f = make(t, 7);
        uint64_t n = bk_filter_count(f);
        assert_int_equal(n, stats_count(f));
        assert_true(n > 0);
        if (!t->static_set) {
            tf_key k = tf_make_key(5, 1);
            assert_int_equal(bk_filter_add(f, k.b, sizeof k.b), BK_OK);
            assert_int_equal(bk_filter_count(f), stats_count(f));
        }
        void *buf;
        bk_filter *m = mapped(f, &buf);
        assert_int_equal(bk_filter_count(m), stats_count(f));
        bk_filter_free(m);
        free(buf);
        bk_filter_free(f);
    }
    assert_int_equal(bk_filter_count(NULL), 0);
}

/* A clone saves to the original's bytes, lives in owned memory (also when cloned from a mapping) and
 * is independent of it. */
static void clone_is_a_deep_copy(void **state)
{
    (void)state;
    for (size_t i = 0; i < TF_NFACTORIES; i++) {
        const tf_factory *t = &tf_factories[i];
        bk_filter *f = make(t, 11);
        size_t len0, len1, len2;
        uint8_t *b0 = saved(f, &len0);
        bk_filter *c = NULL;
        assert_int_equal(bk_filter_clone(f, &c), BK_OK);
        assert_int_equal(bk_filter_backing(c), BK_BACKING_MEMORY);
        assert_int_equal(bk_filter_type(c), t->type);
        uint8_t *b1 = saved(c, &len1);
        assert_int_equal(len0, len1);
        assert_memory_equal(b0, b1, len0);
        void *buf;
        bk_filter *m = mapped(f, &buf), *mc = NULL;
        assert_int_equal(bk_filter_clone(m, &mc), BK_OK);
        assert_int_equal(bk_filter_backing(mc), BK_BACKING_MEMORY);
        uint8_t *b2 = saved(mc, &len2);
        assert_int_equal(len0, len2);
        assert_memory_equal(b0, b2, len0);
        if (!t->static_set) { /* the copy takes keys; the original does not see them */
            uint64_t before = bk_filter_count(f);
            for (uint64_t j = 0; j < 100; j++) {
                tf_key k = tf_make_key(6, j);
                assert_int_equal(bk_filter_add(c, k.b, sizeof k.b), BK_OK);
            }
            assert_int_equal(bk_filter_count(f), before);
            assert_true(bk_filter_count(c) > before);
        }
        bk_filter_buffer_free(b0);
        bk_filter_buffer_free(b1);
        bk_filter_buffer_free(b2);
        bk_filter_free(mc);
        bk_filter_free(m);
        free(buf);
        bk_filter_free(c);
        bk_filter_free(f);
    }
    bk_filter *out = (bk_filter *)&out;
    assert_int_equal(bk_filter_clone(NULL, &out), BK_EINVAL);
    assert_null(out);
    assert_int_equal(bk_filter_clone(NULL, NULL), BK_EINVAL);
}

/* A quotient filter of stages, or an expanding one, neither merges nor says it could
 * (bk_quotient_union refuses them). */
static bool has_union_test(const tf_factory *f)
{
    const bk_type t = f->type;
    if (strcmp(f->name, "quotient-stages") == 0 || strcmp(f->name, "quotient-expanding") == 0) return false;
    return t == BK_TYPE_BLOOM || t == BK_TYPE_BLOCKED || t == BK_TYPE_COUNTING || t == BK_TYPE_SCALABLE ||
           t == BK_TYPE_QUOTIENT;
}

/* compatible answers as the type's own test, and a compatible pair merges. */
static void compatible_answers_as_the_type(void **state)
{
    (void)state;
    for (size_t i = 0; i < TF_NFACTORIES; i++) {
        const tf_factory *t = &tf_factories[i];
        bk_filter *f = make(t, 13), *g = make(t, 13), *other_seed = make(t, 14);
        if (has_union_test(t)) {
            assert_int_equal(bk_filter_compatible(f, g), BK_OK);
            assert_int_equal(bk_filter_compatible(f, f), BK_OK);
            assert_int_equal(bk_filter_compatible(f, other_seed), BK_EINCOMPAT);
            assert_int_equal(bk_filter_merge(g, f), BK_OK);
            void *buf;
            bk_filter *m = mapped(f, &buf); /* the filters are compared, not their backing */
            assert_int_equal(bk_filter_compatible(m, f), BK_OK);
            bk_filter_free(m);
            free(buf);
        } else {
            assert_int_equal(bk_filter_compatible(f, g), BK_ENOTSUP);
        }
        for (size_t j = 0; j < TF_NFACTORIES; j++)
            if (tf_factories[j].type != t->type) {
                bk_filter *h = make(&tf_factories[j], 13);
                assert_int_equal(bk_filter_compatible(f, h), BK_EINCOMPAT);
                bk_filter_free(h);
            }
        assert_int_equal(bk_filter_compatible(f, NULL), BK_EINVAL);
        assert_int_equal(bk_filter_compatible(NULL, f), BK_EINVAL);
        bk_filter_free(other_seed);
        bk_filter_free(g);
        bk_filter_free(f);
    }
}

/* A key certainly absent from f (a false positive is skipped). */
static tf_key absent_key(const bk_filter *f, uint64_t set)
{
    for (uint64_t j = 0;; j++) {
        tf_key k = tf_make_key(set, j);
        if (!bk_filter_contains(f, k.b, sizeof k.b)) return k;
    }
}

/* add_if_absent: the type's own one-pass call where it has one (same answers, same bytes), else a
 * query then an add; on a static set or a read-only mapping, EEXISTS for a present key and ENOTSUP
 * for an absent one. */
static void add_if_absent_as_the_type(void **state)
{
    (void)state;
    for (size_t i = 0; i < TF_NFACTORIES; i++) {
        const tf_factory *t = &tf_factories[i];
        if (!tf_membership(t)) continue; /* Top-K answers "listed", not "added": its keys need not be */
        bk_filter *f = make(t, 17);
        tf_key present = tf_make_key(1, 3);
        assert_int_equal(bk_filter_add_if_absent(f, present.b, sizeof present.b), BK_EEXISTS);
        void *buf;
        bk_filter *m = mapped(f, &buf);
        tf_key gone = absent_key(f, 8);
        assert_int_equal(bk_filter_add_if_absent(m, present.b, sizeof present.b), BK_EEXISTS);
        assert_int_equal(bk_filter_add_if_absent(m, gone.b, sizeof gone.b), BK_ENOTSUP);
        bk_filter_free(m);
        free(buf);
        if (t->static_set) {
            assert_int_equal(bk_filter_add_if_absent(f, gone.b, sizeof gone.b), BK_ENOTSUP);
            bk_filter_free(f);
            continue;
        }
        bk_filter *c = NULL;
        assert_int_equal(bk_filter_clone(f, &c), BK_OK);
        void *typed = bk_filter_get(c, t->type);
        for (uint64_t j = 0; j < 300; j++) {
            tf_key k = tf_make_key(9, j % 200); /* the last 100 repeat */
            bk_status a = bk_filter_add_if_absent(f, k.b, sizeof k.b), b;
            switch (t->type) {
            case BK_TYPE_SCALABLE: b = bk_scalable_add_if_absent(typed, k.b, sizeof k.b); break;
            case BK_TYPE_CUCKOO: b = bk_cuckoo_add_if_absent(typed, k.b, sizeof k.b); break;
            case BK_TYPE_AGING: b = bk_aging_add_if_absent(typed, k.b, sizeof k.b); break;
            default:
                b = bk_filter_contains(c, k.b, sizeof k.b) ? BK_EEXISTS : bk_filter_add(c, k.b, sizeof k.b);
                break;
            }
            assert_int_equal(a, b);
            if (j >= 200) assert_int_equal(a, BK_EEXISTS);
            assert_true(bk_filter_contains(f, k.b, sizeof k.b));
        }
        size_t la, lb;
        uint8_t *sa = saved(f, &la), *sb = saved(c, &lb);
        assert_int_equal(la, lb);
        if (strcmp(t->name, "aging-time-long") != 0) /* (its file records the clock) */
            assert_memory_equal(sa, sb, la);
        bk_filter_buffer_free(sa);
        bk_filter_buffer_free(sb);
        uint64_t h = bk_hash64(gone.b, sizeof gone.b, bk_filter_seed(c));
        if (!bk_filter_contains(c, gone.b, sizeof gone.b)) {
            assert_int_equal(bk_filter_add_if_absent_hash(c, h), BK_OK);
            assert_int_equal(bk_filter_add_if_absent_hash(c, h), BK_EEXISTS);
            assert_true(bk_filter_contains(c, gone.b, sizeof gone.b));
        }
        bk_filter_free(c);
        bk_filter_free(f);
    }
    assert_int_equal(bk_filter_add_if_absent(NULL, "k", 1), BK_EINVAL);
    assert_int_equal(bk_filter_add_if_absent_hash(NULL, 1), BK_EINVAL);
}

/* On a shared writable mapping: the query, then the atomic insert. */
static void add_if_absent_shared_mapping(void **state)
{
    (void)state;
    bk_filter *f = make(&tf_factories[0], 19);
    const char *path = "test_handle.bkf";
    assert_int_equal(bk_filter_save_path(f, path), BK_OK);
    bk_filter *m = NULL;
    assert_int_equal(bk_filter_open_mmap(path, BK_OPEN_WRITE_SHARED, &m), BK_OK);
    tf_key k = absent_key(f, 10);
    uint64_t n = bk_filter_count(m);
    assert_int_equal(bk_filter_add_if_absent(m, k.b, sizeof k.b), BK_OK);
    assert_int_equal(bk_filter_add_if_absent(m, k.b, sizeof k.b), BK_EEXISTS);
    assert_int_equal(bk_filter_count(m), n + 1);
    assert_int_equal(bk_filter_close(m), BK_OK);
    bk_filter_free(f);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(count_is_the_stats_count),
        cmocka_unit_test(clone_is_a_deep_copy),
        cmocka_unit_test(compatible_answers_as_the_type),
        cmocka_unit_test(add_if_absent_as_the_type),
        cmocka_unit_test(add_if_absent_shared_mapping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
