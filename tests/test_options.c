/*
 * The options-struct rule of common.h, for every type: NULL, a zeroed struct, BK_<TYPE>_OPTIONS_INIT
 * and a struct spelling out the documented defaults all make the same filter (same saved bytes); a
 * smaller struct_size (a program built against an older header) is accepted and the fields past it
 * take their defaults; a larger struct_size (a newer header) is accepted when the unknown tail is
 * zero and refused with BK_EINVAL otherwise.
 */
#include "testutil.h"
#include <bloomkit/bloomkit.h>

#define NKEYS 500

typedef bk_status (*make_fn)(const void *opts, bk_type *type, void **typed);

static bk_status make_bloom(const void *o, bk_type *t, void **f)
{
    *t = BK_TYPE_BLOOM;
    return bk_bloom_new(1000, 0.01, o, (bk_bloom **)f);
}
static bk_status make_blocked(const void *o, bk_type *t, void **f)
{
    *t = BK_TYPE_BLOCKED;
    return bk_blocked_new(1000, 0.01, o, (bk_blocked **)f);
}
static bk_status make_counting(const void *o, bk_type *t, void **f)
{
    *t = BK_TYPE_COUNTING;
    return bk_counting_new(1000, 0.01, o, (bk_counting **)f);
}
static bk_status make_scalable(const void *o, bk_type *t, void **f)
{
    *t = BK_TYPE_SCALABLE;
    return bk_scalable_new(100, 0.01, o, (bk_scalable **)f);
}
static bk_status make_cuckoo(const void *o, bk_type *t, void **f)
{
    *t = BK_TYPE_CUCKOO;
    return bk_cuckoo_new(1000, 0.01, o, (bk_cuckoo **)f);
}
static bk_status make_aging(const void *o, bk_type *t, void **f)
{
    *t = BK_TYPE_AGING;
    return bk_aging_new_count(1000, 0.01, o, (bk_aging **)f);
}
static bk_status make_quotient(const void *o, bk_type *t, void **f)
{
    *t = BK_TYPE_QUOTIENT;
    return bk_quotient_new(1000, 0.01, o, (bk_quotient **)f);
}
static bk_status make_fuse(const void *o, bk_type *t, void **f)
{
    static uint64_t h[NKEYS];
    uint64_t st = 5;
    for (size_t i = 0; i < NKEYS; i++) h[i] = tu_splitmix(&st);
    *t = BK_TYPE_FUSE;
    return bk_fuse_build_hashes(h, NKEYS, o, (bk_fuse **)f);
}
static bk_status make_ribbon(const void *o, bk_type *t, void **f)
{
    static uint64_t h[NKEYS];
    uint64_t st = 5;
    for (size_t i = 0; i < NKEYS; i++) h[i] = tu_splitmix(&st);
    *t = BK_TYPE_RIBBON;
    return bk_ribbon_build_hashes(h, NKEYS, o, (bk_ribbon **)f);
}

static bk_status make_cms(const void *o, bk_type *t, void **f)
{
    *t = BK_TYPE_CMS;
    return bk_cms_new(1000, 5, o, (bk_cms **)f);
}
static bk_status make_topk(const void *o, bk_type *t, void **f)
{
    *t = BK_TYPE_TOPK;
    return bk_topk_new(10, o, (bk_topk **)f);
}

/* Make a filter with these options, add NKEYS keys (types that take adds), and return its saved bytes
 * (NULL when the make call fails; *status says why). */
static uint8_t *saved(make_fn make, const void *opts, size_t *len, bk_status *status)
{
    bk_type t;
    void *typed = NULL;
    *status = make(opts, &t, &typed);
    if (*status != BK_OK) {
        assert_null(typed);
        return NULL;
    }
    bk_filter *f = NULL;
    assert_int_equal(bk_filter_wrap(t, typed, &f), BK_OK);
    if (t != BK_TYPE_FUSE && t != BK_TYPE_RIBBON) {
        uint64_t st = 9;
        for (int i = 0; i < NKEYS; i++) assert_int_equal(bk_filter_add_hash(f, tu_splitmix(&st)), BK_OK);
    }
    void *buf = NULL;
    assert_int_equal(bk_filter_save_alloc(f, &buf, len), BK_OK);
    uint8_t *copy = malloc(*len);
    assert_non_null(copy);
    memcpy(copy, buf, *len);
    bk_filter_buffer_free(buf);
    bk_filter_free(f);
    return copy;
}

static void assert_same(make_fn make, const void *a, const void *b, const char *what)
{
    size_t la, lb;
    bk_status sa, sb;
    uint8_t *x = saved(make, a, &la, &sa), *y = saved(make, b, &lb, &sb);
    if (sa != BK_OK || sb != BK_OK || la != lb || memcmp(x, y, la) != 0)
        fail_msg("%s: not the same filter (status %d/%d, %zu/%zu bytes)", what, (int)sa, (int)sb, la, lb);
    free(x);
    free(y);
}

/*
 * One type's checks. `init` is its BK_..._OPTIONS_INIT struct, `defaults` the documented defaults
 * spelled out, `older` a struct whose struct_size ends before a field set to a non-default value.
 */
static void check_type(make_fn make, size_t size, const void *init, const void *defaults, const void *older)
{
    unsigned char zero[512] = { 0 }, big[512] = { 0 };
    assert_true(size + 16 <= sizeof big);
    size_t sz;
    memcpy(&sz, init, sizeof sz);
    assert_int_equal(sz, size); /* the macro sets the header's size */

    assert_same(make, NULL, zero, "zeroed struct vs NULL");
    assert_same(make, NULL, init, "OPTIONS_INIT vs NULL");
    assert_same(make, NULL, defaults, "documented defaults vs NULL");
    assert_same(make, NULL, older, "older struct_size vs NULL");

    /* newer and larger, unknown tail zero: accepted, same filter */
    memcpy(big, init, size);
    sz = size + 16;
    memcpy(big, &sz, sizeof sz);
    assert_same(make, NULL, big, "larger struct, zero tail");
    /* unknown tail not zero: refused */
    big[size + 9] = 1;
    size_t len;
    bk_status s;
    assert_null(saved(make, big, &len, &s));
    assert_int_equal(s, BK_EINVAL);
    /* a struct_size too small to hold itself */
    memset(big, 0, sizeof big);
    sz = 3;
    memcpy(big, &sz, sizeof sz);
    assert_null(saved(make, big, &len, &s));
    assert_int_equal(s, BK_EINVAL);
}

static void bloom(void **st)
{
    (void)st;
    bk_bloom_options init = BK_BLOOM_OPTIONS_INIT;
    bk_bloom_options def = { .struct_size = sizeof def, .layout = BK_LAYOUT_STANDARD, .seed = 0 };
    bk_bloom_options old = { .struct_size = offsetof(bk_bloom_options, seed), .seed = 77 };
    check_type(make_bloom, sizeof init, &init, &def, &old);
}

static void blocked(void **st)
{
    (void)st;
    bk_blocked_options init = BK_BLOCKED_OPTIONS_INIT;
    bk_blocked_options def = { .struct_size = sizeof def, .layout = BK_BLOCKED_SPLIT256, .seed = 0 };
    bk_blocked_options old = { .struct_size = offsetof(bk_blocked_options, seed), .seed = 77 };
    check_type(make_blocked, sizeof init, &init, &def, &old);
}

static void counting(void **st)
{
    (void)st;
    bk_counting_options init = BK_COUNTING_OPTIONS_INIT;
    bk_counting_options def = { .struct_size = sizeof def, .counter_bits = 4, .seed = 0 };
    bk_counting_options old = { .struct_size = offsetof(bk_counting_options, seed), .counter_bits = 4, .seed = 77 };
    check_type(make_counting, sizeof init, &init, &def, &old);
}

static void scalable(void **st)
{
    (void)st;
    bk_scalable_options init = BK_SCALABLE_OPTIONS_INIT;
    bk_scalable_options def = { .struct_size = sizeof def, .growth = BK_SCALABLE_DEFAULT_GROWTH,
                                .tightening = BK_SCALABLE_DEFAULT_TIGHTENING,
                                .max_bytes = BK_SCALABLE_DEFAULT_MAX_BYTES, .seed = 0, .flags = 0 };
    bk_scalable_options old = { .struct_size = offsetof(bk_scalable_options, seed), .seed = 77 };
    check_type(make_scalable, sizeof init, &init, &def, &old);
    bk_scalable_options fn = bk_scalable_default_options();
    assert_same(make_scalable, NULL, &fn, "bk_scalable_default_options vs NULL");
}

static void cuckoo(void **st)
{
    (void)st;
    bk_cuckoo_options init = BK_CUCKOO_OPTIONS_INIT;
    bk_cuckoo_options def = { .struct_size = sizeof def, .bucket_size = BK_CUCKOO_DEFAULT_BUCKET_SIZE,
                              .max_kicks = BK_CUCKOO_DEFAULT_MAX_KICKS, .expansion = 0, .seed = 0,
                              .concurrent = false };
    bk_cuckoo_options old = { .struct_size = offsetof(bk_cuckoo_options, seed), .seed = 77 };
    check_type(make_cuckoo, sizeof init, &init, &def, &old);
}

static void fuse(void **st)
{
    (void)st;
    bk_fuse_options init = BK_FUSE_OPTIONS_INIT;
    bk_fuse_options def = { .struct_size = sizeof def, .fingerprint_bits = 8,
                            .max_attempts = BK_FUSE_DEFAULT_ATTEMPTS, .seed = 0 };
    bk_fuse_options old = { .struct_size = offsetof(bk_fuse_options, seed), .seed = 77 };
    check_type(make_fuse, sizeof init, &init, &def, &old);
}

static void ribbon(void **st)
{
    (void)st;
    bk_ribbon_options init = BK_RIBBON_OPTIONS_INIT;
    bk_ribbon_options def = { .struct_size = sizeof def, .fpr = BK_RIBBON_DEFAULT_FPR,
                              .max_attempts = BK_RIBBON_DEFAULT_ATTEMPTS, .seed = 0 };
    bk_ribbon_options old = { .struct_size = offsetof(bk_ribbon_options, seed), .seed = 77 };
    check_type(make_ribbon, sizeof init, &init, &def, &old);
}

static void cms(void **st)
{
    (void)st;
    bk_cms_options init = BK_CMS_OPTIONS_INIT;
    bk_cms_options def = { .struct_size = sizeof def, .seed = 0, .conservative = false };
    bk_cms_options old = { .struct_size = offsetof(bk_cms_options, conservative), .conservative = true };
    check_type(make_cms, sizeof init, &init, &def, &old);
}

static void topk(void **st)
{
    (void)st;
    bk_topk_options init = BK_TOPK_OPTIONS_INIT;
    /* k = 10: width max(8, ceil(10 ln 10)) = 24, depth max(5, ceil(ln 10)) = 5, decay 0.9 */
    bk_topk_options def = { .struct_size = sizeof def, .seed = 0, .width = 24, .depth = 5, .decay = 0.9 };
    bk_topk_options old = { .struct_size = offsetof(bk_topk_options, width), .width = 77 };
    check_type(make_topk, sizeof init, &init, &def, &old);
}

static void aging(void **st)
{
    (void)st;
    bk_aging_options init = BK_AGING_OPTIONS_INIT;
    bk_aging_options def = { .struct_size = sizeof def, .generations = BK_AGING_DEFAULT_GENERATIONS,
                             .seed = 0 };
    bk_aging_options old = { .struct_size = offsetof(bk_aging_options, seed), .seed = 77 };
    check_type(make_aging, sizeof init, &init, &def, &old);
}

static void quotient(void **st)
{
    (void)st;
    bk_quotient_options init = BK_QUOTIENT_OPTIONS_INIT;
    bk_quotient_options def = { .struct_size = sizeof def, .seed = 0, .max_load = BK_QUOTIENT_DEFAULT_MAX_LOAD,
                                .remainder_bits = 0 };
    bk_quotient_options old = { .struct_size = offsetof(bk_quotient_options, max_load), .max_load = 0.5 };
    check_type(make_quotient, sizeof init, &init, &def, &old);
}

/* A field set inside the caller's struct_size is honoured (the rule does not just ignore options). */
static void fields_are_read(void **st)
{
    (void)st;
    bk_bloom_options a = BK_BLOOM_OPTIONS_INIT;
    a.seed = 77;
    size_t la, lb;
    bk_status sa, sb;
    uint8_t *x = saved(make_bloom, NULL, &la, &sa), *y = saved(make_bloom, &a, &lb, &sb);
    assert_int_equal(sa, BK_OK);
    assert_int_equal(sb, BK_OK);
    assert_int_equal(la, lb);
    assert_memory_not_equal(x, y, la);
    free(x);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bloom),    cmocka_unit_test(blocked),  cmocka_unit_test(counting),
        cmocka_unit_test(scalable), cmocka_unit_test(cuckoo),   cmocka_unit_test(fuse),
        cmocka_unit_test(aging),    cmocka_unit_test(quotient), cmocka_unit_test(ribbon),
        cmocka_unit_test(cms), cmocka_unit_test(topk),
        cmocka_unit_test(fields_are_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
