/*
 * bk_filter_load_pull: a saved filter decoded as its bytes arrive from a source, for every type of
 * tests/factories.h. The loaded filter saves to the same bytes as the original; a source that hands
 * out a few bytes at a time, ends early, fails, or holds a damaged byte anywhere gives the error a
 * buffer load gives (a damaged payload byte: BK_ECHECKSUM or BK_ECORRUPT, never a filter). The bytes
 * allocated at the peak of a pulled load stay near the loaded filter's own: the arrays go straight into
 * the filter, never through a copy of the body (the Redis module's RDB loads depend on it).
 */
#include "testutil.h"
#include "factories.h"

#define NSMALL 5000

typedef struct src {
    const uint8_t *p;
    size_t len, off;
    size_t step;      /* hand out at most this many bytes per call (0: as asked) */
    size_t fail_at;   /* report an error once off reaches this (SIZE_MAX: never) */
} src;

static ptrdiff_t pull(void *ctx, void *buf, size_t len)
{
    src *s = ctx;
    if (s->off >= s->fail_at) return -1;
    size_t n = s->len - s->off;
    if (n > len) n = len;
    if (s->step && n > s->step) n = s->step;
    if (n > s->fail_at - s->off) n = s->fail_at - s->off; /* the error comes at fail_at exactly */
    memcpy(buf, s->p + s->off, n);
    s->off += n;
    return (ptrdiff_t)n;
}

static bk_status load(const uint8_t *p, size_t len, size_t step, size_t fail_at, bk_filter **out, size_t *used)
{
    src s = { p, len, 0, step, fail_at };
    bk_status st = bk_filter_load_pull(pull, &s, 0, out);
    if (used) *used = s.off;
    return st;
}

static void save(const bk_filter *f, uint8_t **p, size_t *len)
{
    void *b;
    assert_int_equal(bk_filter_save_alloc(f, &b, len), BK_OK);
    *p = b;
}

/* Every type loads back to the same bytes, whatever the source's step, reading exactly its bytes. */
static void test_round_trip(void **state)
{
    (void)state;
    static const size_t steps[] = { 0, 1, 7, 64, 4096 };
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        bk_filter *f = tf_factories[t].make(NSMALL, NSMALL / 2, t + 1);
        assert_non_null(f);
        uint8_t *ref;
        size_t ref_len;
        save(f, &ref, &ref_len);
        /* trailing bytes after the filter stay in the source */
        uint8_t *more = malloc(ref_len + 100);
        memcpy(more, ref, ref_len);
        memset(more + ref_len, 0xAB, 100);
        for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
            bk_filter *g = NULL;
            size_t used;
            assert_int_equal(load(more, ref_len + 100, steps[i], SIZE_MAX, &g, &used), BK_OK);
            assert_int_equal(used, ref_len);
            assert_int_equal(bk_filter_type(g), tf_factories[t].type);
            uint8_t *again;
            size_t again_len;
            save(g, &again, &again_len);
            if (again_len != ref_len || memcmp(again, ref, ref_len) != 0)
                fail_msg("%s (step %zu): the pulled filter saves to other bytes", tf_factories[t].name, steps[i]);
            bk_filter_buffer_free(again);
            bk_filter_free(g);
        }
        free(more);
        bk_filter_buffer_free(ref);
        bk_filter_free(f);
    }
}

/* A source that ends early gives BK_ETRUNCATED; one that fails gives BK_EIO; never a filter. */
static void test_short_and_failing(void **state)
{
    (void)state;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        bk_filter *f = tf_factories[t].make(NSMALL, NSMALL / 2, t + 1);
        uint8_t *ref;
        size_t ref_len;
        save(f, &ref, &ref_len);
        size_t cuts[] = { 0, 10, 64, 100, ref_len / 2, ref_len - 1 };
        for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
            bk_filter *g = (bk_filter *)1;
            assert_int_equal(load(ref, cuts[i], 0, SIZE_MAX, &g, NULL), BK_ETRUNCATED);
            assert_null(g);
            g = (bk_filter *)1;
            assert_int_equal(load(ref, ref_len, 0, cuts[i], &g, NULL), BK_EIO);
            assert_null(g);
        }
        bk_filter_buffer_free(ref);
        bk_filter_free(f);
    }
    bk_filter *g;
    assert_int_equal(bk_filter_load_pull(NULL, NULL, 0, &g), BK_EINVAL);
    assert_int_equal(bk_filter_load_pull(pull, NULL, 0, NULL), BK_EINVAL);
}

/* A damaged byte anywhere is refused as a buffer load refuses it: the same status. */
static void test_damage(void **state)
{
    (void)state;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        bk_filter *f = tf_factories[t].make(1000, 500, t + 1);
        uint8_t *ref;
        size_t ref_len;
        save(f, &ref, &ref_len);
        uint8_t *bad = malloc(ref_len);
        size_t stride = ref_len / 97 + 1;
        for (size_t off = 0; off < ref_len; off += stride) {
            memcpy(bad, ref, ref_len);
            bad[off] ^= 0x10;
            bk_filter *a = NULL, *b = NULL;
            bk_status sa = bk_filter_load_buffer(bad, ref_len, 0, &a);
            bk_status sb = load(bad, ref_len, 13, SIZE_MAX, &b, NULL);
            if (sa != BK_OK && sb == BK_OK)
                fail_msg("%s: byte %zu damaged: the buffer load refuses (%s), the pull load accepts",
                         tf_factories[t].name, off, bk_strerror(sa));
            if (sa != BK_OK) assert_null(b);
            bk_filter_free(a);
            bk_filter_free(b);
        }
        /* the payload checksum alone: a body byte changed and the structure still valid */
        memcpy(bad, ref, ref_len);
        bad[ref_len - 1] ^= 0x01;
        bk_filter *b = NULL;
        bk_status sb = load(bad, ref_len, 0, SIZE_MAX, &b, NULL);
        if (sb != BK_ECHECKSUM && sb != BK_ECORRUPT)
            fail_msg("%s: a damaged last byte gives %s", tf_factories[t].name, bk_strerror(sb));
        assert_null(b);
        /* ... which BK_LOAD_NO_CHECKSUM does not look at, as for a buffer */
        bk_filter *a = NULL;
        src s = { bad, ref_len, 0, 0, SIZE_MAX };
        assert_int_equal(bk_filter_load_pull(pull, &s, BK_LOAD_NO_CHECKSUM, &b),
                         bk_filter_load_buffer(bad, ref_len, BK_LOAD_NO_CHECKSUM, &a));
        bk_filter_free(a);
        bk_filter_free(b);
        free(bad);
        bk_filter_buffer_free(ref);
        bk_filter_free(f);
    }
}

/* An allocator counting the bytes it holds and their peak (a 16-byte prefix keeps each block's size). */
typedef struct counter {
    size_t now, peak;
} counter;

static void *c_malloc(void *opaque, size_t n)
{
    counter *c = opaque;
    uint8_t *p = malloc(n + 16);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    c->now += n;
    if (c->now > c->peak) c->peak = c->now;
    return p + 16;
}

static void *c_calloc(void *opaque, size_t count, size_t size)
{
    void *p = c_malloc(opaque, count * size);
    if (p) memset(p, 0, count * size);
    return p;
}

static void c_free(void *opaque, void *p)
{
    counter *c = opaque;
    if (!p) return;
    size_t n;
    memcpy(&n, (uint8_t *)p - 16, sizeof n);
    c->now -= n;
    free((uint8_t *)p - 16);
}

static void test_peak(void **state)
{
    (void)state;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        bk_filter *f = tf_factories[t].make(400000, 1000, t + 1);
        assert_non_null(f);
        uint8_t *ref;
        size_t ref_len;
        save(f, &ref, &ref_len);
        counter c = { 0, 0 };
        bk_allocator al = { c_malloc, c_calloc, c_free, &c };
        bk_load_options o = BK_LOAD_OPTIONS_INIT;
        o.allocator = &al;
        src s = { ref, ref_len, 0, 4096, SIZE_MAX };
        bk_filter *g = NULL;
        assert_int_equal(bk_filter_load_pull_ex(pull, &s, &o, &g), BK_OK);
        size_t held = c.now;
        if ((double)c.peak > 1.1 * (double)held + 65536)
            fail_msg("%s: a pulled load of %zu bytes peaked at %zu bytes allocated, the filter holds %zu",
                     tf_factories[t].name, ref_len, c.peak, held);
        bk_filter_free(g);
        assert_int_equal(c.now, 0);
        bk_filter_buffer_free(ref);
        bk_filter_free(f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_short_and_failing),
        cmocka_unit_test(test_damage),
        cmocka_unit_test(test_peak),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
