/* Transparent huge pages for large filters: arrays of 2 MiB or more are 2 MiB aligned (default
 * allocator) and advised (the kernel marks their mapping THP-eligible in "madvise" mode); BK_THP=0
 * turns both off and is read once per process; small arrays are left alone. Answers are the same
 * either way. */
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"
#include <bloomkit/bloomkit.h>
#include "core/hooks.h"

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

/* What a process saw of its first large filter. */
typedef struct {
    unsigned reads_before, reads_after; /* bk__thp_env_reads() before and after it */
    uintptr_t misalign;                 /* its array's address modulo 2 MiB */
    int eligible;                       /* THPeligible of its mapping (-1: not reported) */
    uint64_t digest;                    /* bk_hash64 of its array */
    int all_found;
} seen_t;

static seen_t first_large_filter(void)
{
    seen_t r = { .reads_before = bk__thp_env_reads() };
    bk_blocked *f = filled(4000000); /* ~5 MiB */
    size_t len;
    const uint8_t *d = bk_blocked_data(f, &len);
    r.reads_after = bk__thp_env_reads();
    r.misalign = (uintptr_t)d % (2 * MIB);
    r.eligible = thp_eligible(d);
    r.digest = bk_hash64(d, len, 0);
    r.all_found = 1;
    for (uint64_t i = 0; i < 1000; i++) r.all_found &= bk_blocked_contains_u64(f, i);
    assert_true(len >= 4 * MIB);
    bk_blocked_free(f);
    return r;
}

/* BK_THP=0 is read once per process, so its effect is seen in a child started with it: the child's
 * first large filter, sent back through a pipe. */
static seen_t in_child_with_thp_off(void)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        setenv("BK_THP", "0", 1);
        seen_t r = first_large_filter();
        _exit(write(fd[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    seen_t r;
    assert_int_equal(read(fd[0], &r, sizeof r), (ssize_t)sizeof r);
    close(fd[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return r;
}

static void test_large_arrays_aligned_and_advised(void **state)
{
    (void)state;
    char mode[32];
    thp_mode(mode, sizeof mode);
    /* before this process allocates anything large, so the child reads the variable itself */
    seen_t off = in_child_with_thp_off();
    unsetenv("BK_THP");
    seen_t on = first_large_filter();

    /* unset: 2 MiB aligned and advised; read once, on the first large array */
    assert_int_equal(on.reads_before, 0);
    assert_int_equal(on.reads_after, 1);
    assert_int_equal(on.misalign, 0);
    if (!strcmp(mode, "madvise") && on.eligible >= 0) assert_int_equal(on.eligible, 1);
    assert_true(on.all_found);

    /* BK_THP=0: no huge-page alignment asked for, no advice */
    assert_int_equal(off.reads_before, 0);
    assert_int_equal(off.reads_after, 1);
    assert_int_equal(off.misalign % 64, 0);
    if (!strcmp(mode, "madvise") && off.eligible >= 0) assert_int_equal(off.eligible, 0);
    assert_true(off.all_found);
    /* the same filter either way */
    assert_true(on.digest == off.digest);

    /* read once: setting it now changes nothing in this process */
    setenv("BK_THP", "0", 1);
    bk_blocked *g = filled(4000000);
    size_t len;
    assert_int_equal((uintptr_t)bk_blocked_data(g, &len) % (2 * MIB), 0);
    assert_int_equal(bk__thp_env_reads(), 1);
    bk_blocked_free(g);
    unsetenv("BK_THP");

    /* a small filter (< 2 MiB) is neither padded nor advised */
    bk_bloom *s;
    assert_int_equal(bk_bloom_new(10000, 0.01, NULL, &s), BK_OK);
    const uint8_t *ds = bk_bloom_data(s, &len);
    assert_true(len < 2 * MIB);
    assert_int_equal((uintptr_t)ds % 64, 0);
    bk_bloom_free(s);
    print_message("THP mode %s, THPeligible reported: %s\n", mode, on.eligible >= 0 ? "yes" : "no");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_arrays_aligned_and_advised),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
