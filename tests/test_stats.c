/*
 * bk_stats is part of the stable ABI and grows through its reserved words (common.h): every type's
 * stats call writes them all zero, whatever the caller's struct held before, and fills the rest.
 */
#include "testutil.h"
#include "factories.h"

static void reserved_words_are_zero(void **state)
{
    (void)state;
    for (size_t i = 0; i < TF_NFACTORIES; i++) {
        const tf_factory *t = &tf_factories[i];
        bk_filter *f = t->make(2000, 1000, 17);
        assert_non_null(f);
        bk_stats s;
        memset(&s, 0xA5, sizeof s);
        assert_int_equal(bk_filter_stats(f, &s), BK_OK);
        print_message("%s: count %llu\n", t->name, (unsigned long long)s.count);
        for (size_t w = 0; w < sizeof s.reserved / sizeof s.reserved[0]; w++) assert_int_equal(s.reserved[w], 0);
        assert_int_equal(s.type, t->type);
        assert_int_equal(s.seed, 17);
        assert_true(s.count >= 990); /* filled: the rest of the struct is written too */
        bk_filter_free(f);
    }
}

/* The layout users compile against: the reserved words sit at the end, after every 1.0 field. */
static void layout_is_stable(void **state)
{
    (void)state;
    assert_int_equal(offsetof(bk_stats, reserved), offsetof(bk_stats, seed) + sizeof(uint64_t));
    assert_int_equal(sizeof(((bk_stats *)0)->reserved), 64);
    assert_int_equal(sizeof(bk_stats), offsetof(bk_stats, reserved) + 64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reserved_words_are_zero),
        cmocka_unit_test(layout_is_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
