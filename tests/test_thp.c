/* Transparent huge pages for large filters: arrays of 2 MiB or more are 2 MiB aligned (default
 * allocator) and advised (the kernel marks their mapping THP-eligible in "madvise" mode); BK_THP=0
 * turns both off; small arrays are left alone. Answers are the same either way. */
#include "testutil.h"
#include <bloomkit/bloomkit.h>

#define MIB ((uintptr_t)1 << 20)

/* The system's THP mode: the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled. */
static void thp_mode(char *out, size_t len)
{
    snprintf(out, len, "?");
    FILE *fp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!fp) return;
    char buf[128];
    if (fgets(buf, sizeof buf, fp)) {
        char *a = strchr(buf, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b) snprintf(out, len, "%.*s", (int)(b - a - 1), a + 1);
    }
    fclose(fp);
}

/* THPeligible of the mapping holding p in /proc/self/smaps: 1, 0, or -1 when not reported. */
static int thp_eligible(const void *p)
{
    FILE *fp = fopen("/proc/self/smaps", "r");
    if (!fp) return -1;
    char line[512];
    bool inside = false;
    int r = -1;
    while (fgets(line, sizeof line, fp)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            continue;
        }
        int v;
        if (inside && sscanf(line, "THPeligible: %d", &v) == 1) {
            r = v;
            break;
        }
    }
    fclose(fp);
    return r;
}

static bk_blocked *filled(uint64_t n)
{
    bk_blocked *f;
    assert_int_equal(bk_blocked_new(n, 0.01, NULL, &f), BK_OK);
    for (uint64_t i = 0; i < 1000; i++) assert_int_equal(bk_blocked_add_u64(f, i), BK_OK);
    return f;
}

static void test_large_arrays_aligned_and_advised(void **state)
{
    (void)state;
    char mode[32];
    thp_mode(mode, sizeof mode);
    unsetenv("BK_THP");
    bk_blocked *f = filled(4000000); /* ~5 MiB */
    size_t len;
    const uint8_t *d = bk_blocked_data(f, &len);
    assert_true(len >= 4 * MIB);
    assert_int_equal((uintptr_t)d % (2 * MIB), 0);
    int e = thp_eligible(d);
    if (!strcmp(mode, "madvise") && e >= 0) assert_int_equal(e, 1);

    /* BK_THP=0: no huge-page alignment asked for, no advice */
    setenv("BK_THP", "0", 1);
    bk_blocked *g = filled(4000000);
    const uint8_t *dg = bk_blocked_data(g, &len);
    assert_int_equal((uintptr_t)dg % 64, 0);
    e = thp_eligible(dg);
    if (!strcmp(mode, "madvise") && e >= 0) assert_int_equal(e, 0);
    unsetenv("BK_THP");
    /* the same filter either way */
    assert_memory_equal(d, dg, len);
    for (uint64_t i = 0; i < 1000; i++) assert_true(bk_blocked_contains_u64(g, i));
    bk_blocked_free(f);
    bk_blocked_free(g);

    /* a small filter (< 2 MiB) is neither padded nor advised */
    bk_bloom *s;
    assert_int_equal(bk_bloom_new(10000, 0.01, NULL, &s), BK_OK);
    const uint8_t *ds = bk_bloom_data(s, &len);
    assert_true(len < 2 * MIB);
    assert_int_equal((uintptr_t)ds % 64, 0);
    bk_bloom_free(s);
    print_message("THP mode %s, THPeligible reported: %s\n", mode, e >= 0 ? "yes" : "no");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_arrays_aligned_and_advised),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
