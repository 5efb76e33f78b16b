/* Concurrency of the quotient filter. Its writers need exclusion ([excl]: no atomic inserts); every
 * [query] call may run alongside the others. Readers of a filled filter, all calls at once, must
 * give the answers a single thread gets; and with a read-write lock around the writer (the pattern
 * the header asks for) readers never miss a key the writer published. ThreadSanitizer checks that no
 * query writes to shared state. */
#include "conc.h"
#include <bloomkit/bloomkit.h>

/* Under ThreadSanitizer (which checks the races, not the volume, and runs some 10-20x slower)
 * fewer keys. */
#if defined(__SANITIZE_THREAD__)
#define NKEYS 20000
#else
#define NKEYS 200000
#endif
#define READERS 4

/* Key i of set 1 is added 1 + i % 3 times. */
static uint64_t times_of(uint64_t i) { return 1 + i % 3; }

typedef struct {
    const bk_quotient *f;
    tc_line *line;
    uint64_t total;  /* what a single thread saw before the readers started */
    bk_stats stats;
    uint64_t missing, count_low, batch_wrong, stats_differ, visit_wrong, clone_wrong;
} reader_t;

typedef struct {
    uint64_t visits, sum;
} visit_t;

static int visit(uint64_t fp, uint64_t count, void *ctx)
{
    (void)fp;
    visit_t *v = ctx;
    v->visits++;
    v->sum += count;
    return 0;
}

static void *reader(void *arg)
{
    reader_t *r = arg;
    tc_line_wait(r->line);
    enum { B = 256 };
    tu_key keys[B];
    const void *ptrs[B];
    size_t lens[B];
    uint64_t hashes[B], counts[B];
    for (uint64_t i = 0; i < NKEYS; i += B) {
        size_t n = NKEYS - i < B ? (size_t)(NKEYS - i) : B;
        for (size_t j = 0; j < n; j++) {
            keys[j] = tu_make_key(1, i + j);
            ptrs[j] = keys[j].b;
            lens[j] = sizeof keys[j].b;
            if (!bk_quotient_contains(r->f, keys[j].b, sizeof keys[j].b)) r->missing++;
            if (bk_quotient_count(r->f, keys[j].b, sizeof keys[j].b) < times_of(i + j)) r->count_low++;
            hashes[j] = (i + j) * UINT64_C(0x9e3779b97f4a7c15);
        }
        size_t hits = 0;
        if (bk_quotient_contains_many(r->f, ptrs, lens, n, NULL, &hits) != BK_OK || hits != n) r->batch_wrong++;
        /* the same hashes answer the same as one thread's single calls */
        if (bk_quotient_count_hashes(r->f, hashes, n, counts) != BK_OK) r->batch_wrong++;
        for (size_t j = 0; j < n; j++)
            if (counts[j] != bk_quotient_count_hash(r->f, hashes[j])) r->batch_wrong++;
    }
    bk_stats st;
    bk_quotient_stats(r->f, &st);
    if (memcmp(&st, &r->stats, sizeof st) != 0) r->stats_differ++;
    visit_t v = { 0, 0 };
    if (bk_quotient_foreach(r->f, visit, &v) != 0 || v.sum != r->total || v.visits != bk_quotient_distinct(r->f))
        r->visit_wrong++;
    bk_quotient *c = NULL;
    if (bk_quotient_clone(r->f, &c) != BK_OK || bk_quotient_total(c) != r->total ||
        bk_quotient_compatible(c, r->f) != BK_OK)
        r->clone_wrong++;
    bk_quotient_free(c);
    return NULL;
}

static void readers_of_a_filled_filter(void **state)
{
    (void)state;
    bk_quotient *f = NULL;
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.seed = 5;
    assert_int_equal(bk_quotient_new(2 * NKEYS, 0.001, &o, &f), BK_OK); /* counters take slots */
    uint64_t total = 0;
    for (uint64_t i = 0; i < NKEYS; i++) {
        tu_key k = tu_make_key(1, i);
        for (uint64_t t = 0; t < times_of(i); t++) assert_int_equal(bk_quotient_add(f, k.b, sizeof k.b), BK_OK);
        total += times_of(i);
    }
    assert_int_equal(bk_quotient_total(f), total);
    bk_stats st;
    memset(&st, 0, sizeof st);
    bk_quotient_stats(f, &st);
    tc_line line;
    tc_line_init(&line, READERS);
    reader_t rd[READERS];
    for (int i = 0; i < READERS; i++) rd[i] = (reader_t){ .f = f, .line = &line, .total = total, .stats = st };
    tc_threads g = { .n = 0 };
    TC_START_EACH(&g, reader, rd, READERS);
    tc_join(&g);
    tc_line_destroy(&line);
    for (int i = 0; i < READERS; i++) {
        assert_int_equal(rd[i].missing, 0);
        assert_int_equal(rd[i].count_low, 0);
        assert_int_equal(rd[i].batch_wrong, 0);
        assert_int_equal(rd[i].stats_differ, 0);
        assert_int_equal(rd[i].visit_wrong, 0);
        assert_int_equal(rd[i].clone_wrong, 0);
    }
    bk_quotient_free(f);
}

/* ---- one writer under a write lock, readers under read locks ---- */

typedef struct {
    bk_quotient *f;
    pthread_rwlock_t *lock;
    uint64_t published; /* keys of set 2 added so far; read and written under the lock */
    volatile int stop;
    uint64_t refused;
} shared_t;

typedef struct {
    shared_t *s;
    uint64_t passes, missing, total_wrong;
} locked_reader_t;

static void *writer(void *arg)
{
    shared_t *s = arg;
    enum { CHUNK = 64 };
    for (uint64_t i = 0; i < NKEYS; i += CHUNK) {
        pthread_rwlock_wrlock(s->lock);
        for (uint64_t j = i; j < i + CHUNK && j < NKEYS; j++) {
            tu_key k = tu_make_key(2, j);
            if (bk_quotient_add(s->f, k.b, sizeof k.b) != BK_OK) s->refused++;
        }
        s->published = i + CHUNK < NKEYS ? i + CHUNK : NKEYS;
        pthread_rwlock_unlock(s->lock);
    }
    tc_raise(&s->stop);
    return NULL;
}

/* Under the read lock: the first and the latest keys published are present, and the filter holds
 * exactly the occurrences published. */
static void *locked_reader(void *arg)
{
    locked_reader_t *r = arg;
    shared_t *s = r->s;
    for (bool last = false; !last;) {
        last = tc_raised(&s->stop); /* one full pass after the writer ends */
        pthread_rwlock_rdlock(s->lock);
        uint64_t n = s->published;
        if (bk_quotient_total(s->f) != n) r->total_wrong++;
        uint64_t from = n > 512 ? n - 512 : 0;
        for (uint64_t i = 0; i < n && i < 512; i++) {
            tu_key k = tu_make_key(2, i);
            if (!bk_quotient_contains(s->f, k.b, sizeof k.b)) r->missing++;
        }
        for (uint64_t i = from; i < n; i++) {
            tu_key k = tu_make_key(2, i);
            if (bk_quotient_count(s->f, k.b, sizeof k.b) == 0) r->missing++;
        }
        pthread_rwlock_unlock(s->lock);
        r->passes++;
    }
    return NULL;
}

static void readers_beside_a_locked_writer(void **state)
{
    (void)state;
    /* writers first: readers that keep re-reading must not starve the writer */
    pthread_rwlockattr_t attr;
    assert_int_equal(pthread_rwlockattr_init(&attr), 0);
    assert_int_equal(pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP), 0);
    pthread_rwlock_t lock;
    assert_int_equal(pthread_rwlock_init(&lock, &attr), 0);
    pthread_rwlockattr_destroy(&attr);
    shared_t s = { .lock = &lock };
    assert_int_equal(bk_quotient_new(NKEYS, 0.001, NULL, &s.f), BK_OK);
    locked_reader_t rd[READERS - 1];
    for (int i = 0; i < READERS - 1; i++) rd[i] = (locked_reader_t){ .s = &s };
    tc_threads g = { .n = 0 };
    TC_START_EACH(&g, locked_reader, rd, READERS - 1);
    tc_start(&g, writer, &s);
    tc_join(&g);
    assert_int_equal(s.refused, 0);
    assert_int_equal(s.published, NKEYS);
    for (int i = 0; i < READERS - 1; i++) {
        assert_true(rd[i].passes > 0);
        assert_int_equal(rd[i].missing, 0);
        assert_int_equal(rd[i].total_wrong, 0);
    }
    for (uint64_t i = 0; i < NKEYS; i++) {
        tu_key k = tu_make_key(2, i);
        if (!bk_quotient_contains(s.f, k.b, sizeof k.b)) fail_msg("false negative: key %llu", (unsigned long long)i);
    }
    bk_quotient_free(s.f);
    assert_int_equal(pthread_rwlock_destroy(&lock), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(readers_of_a_filled_filter),
        cmocka_unit_test(readers_beside_a_locked_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
