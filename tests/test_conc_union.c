/* Concurrency of the unions: src is [query], so one thread may union (or merge) src into its own dst
 * while another inserts into src with the *_atomic calls. Every key whose insert returned before a union
 * began must be in dst afterwards; ThreadSanitizer checks that the union's reads of src are not a race
 * with the inserts (classic, blocked, counting and scalable, the scalable chain growing meanwhile). */
#include <sched.h>
#include "conc.h"
#include <bloomkit/bloomkit.h>

/* Under ThreadSanitizer every atomic operation is an instrumented call, so that build runs the same
 * test on a tenth of the keys to keep `make check` within its time budget. */
#if defined(__SANITIZE_THREAD__)
#define KEYS 20000
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KEYS 20000
#endif
#endif
#ifndef KEYS
#define KEYS 200000
#endif
#define UNIONS 6 /* unions taken while the inserter runs */

/* One filter type behind four calls, so one driver serves every type. */
typedef struct {
    void *(*make)(int variant);
    void (*destroy)(void *f);
    bk_status (*add_atomic)(void *f, const void *key, size_t len);
    bool (*contains)(const void *f, const void *key, size_t len);
    void (*clear)(void *f);
    bk_status (*unite)(void *dst, const void *src);
} ops_t;

typedef struct {
    const ops_t *ops;
    void *src;
    uint64_t progress; /* keys 0..progress-1 are in src (release after each insert) */
    int stop;          /* set by the union thread once it took its unions */
    uint64_t failures;
} shared_t;

/* Inserts key 0, 1, 2 ... into src, publishing each after its insert returned, until told to stop
 * (or it inserted 2 * KEYS: it then waits, the filters being sized for that). */
static void *inserter(void *arg)
{
    shared_t *s = arg;
    uint64_t i = 0;
    while (!tc_raised(&s->stop)) {
        if (i == 2 * KEYS) {
            sched_yield();
            continue;
        }
        tu_key k = tu_make_key(7, i);
        /* a scalable chain's atomic add answers BK_EEXISTS for a key it (probably) holds already: the
         * key is then found in src, and so in a union taken later */
        bk_status st = s->ops->add_atomic(s->src, k.b, sizeof k.b);
        s->failures += st != BK_OK && st != BK_EEXISTS;
        __atomic_store_n(&s->progress, ++i, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void run(const ops_t *ops, int variant)
{
    shared_t s = { ops, ops->make(variant), 0, 0, 0 };
    void *dst = ops->make(variant);
    assert_non_null(s.src);
    assert_non_null(dst);
    tc_threads t = { .n = 0 };
    tc_start(&t, inserter, &s);
    uint64_t last = 0;
    for (int u = 0; u < UNIONS; u++) {
        /* wait for some more keys, so each union meets a different src */
        uint64_t want = (uint64_t)(u + 1) * KEYS / UNIONS;
        while (__atomic_load_n(&s.progress, __ATOMIC_ACQUIRE) < want) sched_yield();
        uint64_t before = __atomic_load_n(&s.progress, __ATOMIC_ACQUIRE);
        ops->clear(dst);
        assert_int_equal(ops->unite(dst, s.src), BK_OK);
        for (uint64_t i = 0; i < before; i++) {
            tu_key k = tu_make_key(7, i);
            if (!ops->contains(dst, k.b, sizeof k.b))
                fail_msg("union %d: key %llu of %llu inserted before it is missing", u, (unsigned long long)i,
                         (unsigned long long)before);
        }
        last = before;
    }
    tc_raise(&s.stop);
    tc_join(&t);
    assert_int_equal(s.failures, 0);
    assert_true(last >= KEYS);
    /* quiet now: a last union holds every key src holds */
    ops->clear(dst);
    assert_int_equal(ops->unite(dst, s.src), BK_OK);
    for (uint64_t i = 0; i < s.progress; i++) {
        tu_key k = tu_make_key(7, i);
        if (!ops->contains(dst, k.b, sizeof k.b)) fail_msg("key %llu missing after the last union", (unsigned long long)i);
    }
    ops->destroy(dst);
    ops->destroy(s.src);
}

/* ---- the four types ---- */

static void *bloom_make(int v)
{
    bk_bloom *f = NULL;
    bk_bloom_options o = { .seed = 21, .layout = v ? BK_LAYOUT_PARTITIONED : BK_LAYOUT_STANDARD };
    return bk_bloom_new(2 * KEYS, 0.01, &o, &f) == BK_OK ? f : NULL;
}
static void bloom_destroy(void *f) { bk_bloom_free(f); }
static bk_status bloom_add(void *f, const void *k, size_t n) { return bk_bloom_add_atomic(f, k, n); }
static bool bloom_has(const void *f, const void *k, size_t n) { return bk_bloom_contains(f, k, n); }
static void bloom_clear(void *f) { bk_bloom_clear(f); }
static bk_status bloom_unite(void *d, const void *s) { return bk_bloom_union(d, s); }
static const ops_t bloom_ops = { bloom_make, bloom_destroy, bloom_add, bloom_has, bloom_clear, bloom_unite };

static void *blocked_make(int v)
{
    bk_blocked *f = NULL;
    bk_blocked_options o = { .seed = 22, .layout = v ? BK_BLOCKED_512 : BK_BLOCKED_SPLIT256 };
    return bk_blocked_new(2 * KEYS, 0.01, &o, &f) == BK_OK ? f : NULL;
}
static void blocked_destroy(void *f) { bk_blocked_free(f); }
static bk_status blocked_add(void *f, const void *k, size_t n) { return bk_blocked_add_atomic(f, k, n); }
static bool blocked_has(const void *f, const void *k, size_t n) { return bk_blocked_contains(f, k, n); }
static void blocked_clear(void *f) { bk_blocked_clear(f); }
static bk_status blocked_unite(void *d, const void *s) { return bk_blocked_union(d, s); }
static const ops_t blocked_ops = { blocked_make, blocked_destroy, blocked_add, blocked_has, blocked_clear,
                                   blocked_unite };

static void *counting_make(int v)
{
    bk_counting *f = NULL;
    bk_counting_options o = { .seed = 23, .counter_bits = v ? 8 : 4 };
    return bk_counting_new(2 * KEYS, 0.01, &o, &f) == BK_OK ? f : NULL;
}
static void counting_destroy(void *f) { bk_counting_free(f); }
static bk_status counting_add(void *f, const void *k, size_t n) { return bk_counting_add_atomic(f, k, n); }
static bool counting_has(const void *f, const void *k, size_t n) { return bk_counting_contains(f, k, n); }
static void counting_clear(void *f) { bk_counting_clear(f); }
static bk_status counting_unite(void *d, const void *s) { return bk_counting_union(d, s); }
static const ops_t counting_ops = { counting_make, counting_destroy, counting_add, counting_has, counting_clear,
                                    counting_unite };

/* A small first sub-filter, so src's chain grows several times while the unions run. */
static void *scalable_make(int v)
{
    bk_scalable *f = NULL;
    bk_scalable_options o = { .seed = 24, .flags = v ? BK_SCALABLE_CLASSIC : 0 };
    return bk_scalable_new(KEYS / 16, 0.01, &o, &f) == BK_OK ? f : NULL;
}
static void scalable_destroy(void *f) { bk_scalable_free(f); }
static bk_status scalable_add(void *f, const void *k, size_t n) { return bk_scalable_add_atomic(f, k, n); }
static bool scalable_has(const void *f, const void *k, size_t n) { return bk_scalable_contains(f, k, n); }
static void scalable_clear(void *f) { bk_scalable_clear(f); }
static bk_status scalable_unite(void *d, const void *s) { return bk_scalable_union(d, s); }
static const ops_t scalable_ops = { scalable_make, scalable_destroy, scalable_add, scalable_has, scalable_clear,
                                    scalable_unite };

static void bloom_union_during_atomic_adds(void **st) { (void)st; run(&bloom_ops, 0); run(&bloom_ops, 1); }
static void blocked_union_during_atomic_adds(void **st) { (void)st; run(&blocked_ops, 0); run(&blocked_ops, 1); }
static void counting_union_during_atomic_adds(void **st) { (void)st; run(&counting_ops, 0); run(&counting_ops, 1); }
static void scalable_union_during_atomic_adds(void **st) { (void)st; run(&scalable_ops, 0); run(&scalable_ops, 1); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bloom_union_during_atomic_adds),
        cmocka_unit_test(blocked_union_during_atomic_adds),
        cmocka_unit_test(counting_union_during_atomic_adds),
        cmocka_unit_test(scalable_union_during_atomic_adds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
