/* Concurrency of the cuckoo filter (concurrent mode): writers insert disjoint key sets through the
 * writer lock while lock-free readers check that every key whose insert has completed is found, and
 * that no key disappears once seen -- with kick chains moving fingerprints all the time (load 94%),
 * then while writers remove half of their keys, and while an expansion chain grows. */
#include "conc.h"
#include <bloomkit/bloomkit.h>

/* ThreadSanitizer makes every atomic access and lock a call into its runtime (about 50x slower
 * here): it looks for races, which a tenth of the keys exercises just as well (kick chains at 94%
 * load, growth, removes), so that build runs a tenth of the work and `make check` stays short. */
#if defined(__SANITIZE_THREAD__)
#  define TSAN_SCALE 10
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define TSAN_SCALE 10
#  endif
#endif
#ifndef TSAN_SCALE
#  define TSAN_SCALE 1
#endif

#define TOTAL (2000000 / TSAN_SCALE) /* keys per run, split between the writers */
#ifndef READERS
#define READERS 2
#endif

static uint64_t key_hash(uint64_t i)
{
    uint64_t s = i * 2 + 12345;
    return tu_splitmix(&s);
}

typedef struct {
    bk_cuckoo *f;
    int id, writers;
    uint64_t total;
    uint64_t done;      /* keys id, id + writers, ... below done * writers + id are inserted (release) */
    uint64_t removed;   /* phase 2: odd-numbered keys j = 1, 3, ... below removed are removed */
    int phase;
    uint64_t failures;
} writer_t;

/* Key number j of writer w is key_hash(w + j * writers). */
static void *writer(void *arg)
{
    writer_t *w = arg;
    uint64_t per = w->total / (uint64_t)w->writers;
    if (w->phase == 1) {
        if (w->id & 1) {
            /* odd writers use the batch form: one lock hold per 32 keys */
            enum { B = 64 };
            uint64_t h[B];
            for (uint64_t j = 0; j < per; j += B) {
                size_t n = per - j < B ? (size_t)(per - j) : B;
                for (size_t k = 0; k < n; k++) h[k] = key_hash((uint64_t)w->id + (j + k) * (uint64_t)w->writers);
                size_t done = 0;
                if (bk_cuckoo_add_hashes(w->f, h, n, &done) != BK_OK || done != n) w->failures++;
                __atomic_store_n(&w->done, j + n, __ATOMIC_RELEASE);
            }
        } else {
            for (uint64_t j = 0; j < per; j++) {
                if (bk_cuckoo_add_hash(w->f, key_hash((uint64_t)w->id + j * (uint64_t)w->writers)) != BK_OK)
                    w->failures++;
                __atomic_store_n(&w->done, j + 1, __ATOMIC_RELEASE);
            }
        }
    } else {
        for (uint64_t j = 1; j < per; j += 2) {
            if (bk_cuckoo_remove_hash(w->f, key_hash((uint64_t)w->id + j * (uint64_t)w->writers)) != BK_OK)
                w->failures++;
            __atomic_store_n(&w->removed, j + 1, __ATOMIC_RELEASE);
        }
    }
    return NULL;
}

typedef struct {
    bk_cuckoo *f;
    writer_t *ws;
    int writers;
    int phase;
    uint64_t seed;
    int *stop;
    uint64_t checks, missing, disappeared, seen;
} reader_t;

static void *reader(void *arg)
{
    reader_t *r = arg;
    enum { W = 2048 };
    uint8_t *seen = calloc(W, 1);
    uint64_t st = r->seed;
    while (!tc_raised(r->stop)) {
        /* 1. a random key whose insert has completed (and, in phase 2, that is never removed) */
        for (int rep = 0; rep < 64; rep++) {
            uint64_t x = tu_splitmix(&st);
            int w = (int)(x % (uint64_t)r->writers);
            uint64_t done = __atomic_load_n(&r->ws[w].done, __ATOMIC_ACQUIRE);
            if (!done) continue;
            uint64_t j = (x >> 16) % done;
            if (r->phase == 2) j &= ~UINT64_C(1); /* even keys stay */
            uint64_t h = key_hash((uint64_t)w + j * (uint64_t)r->writers);
            r->checks++;
            if (!bk_cuckoo_contains_hash(r->f, h)) r->missing++;
            if ((rep & 15) == 0 && bk_cuckoo_count_hash(r->f, h) == 0) r->missing++;
        }
        /* 2. a fixed window of (even, never removed) keys: once seen present, always present */
        uint64_t per = r->ws[0].total / (uint64_t)r->writers;
        for (uint64_t i = 0; i < W; i += 7) {
            uint64_t w = i % (uint64_t)r->writers, j = (i * 977) % (per / 2) * 2;
            bool p = bk_cuckoo_contains_hash(r->f, key_hash(w + j * (uint64_t)r->writers));
            if (seen[i] && !p) r->disappeared++;
            if (p && !seen[i]) r->seen++;
            seen[i] |= p;
        }
    }
    free(seen);
    return NULL;
}

static void run_phase(bk_cuckoo *f, writer_t *ws, int writers, int phase)
{
    tc_threads wt = { .n = 0 }, rt = { .n = 0 };
    reader_t rd[READERS];
    int stop = 0;
    for (int i = 0; i < READERS; i++) {
        rd[i] = (reader_t){ f, ws, writers, phase, 1000 + (uint64_t)i, &stop, 0, 0, 0, 0 };
        tc_start(&rt, reader, &rd[i]);
    }
    for (int i = 0; i < writers; i++) {
        ws[i].phase = phase;
        tc_start(&wt, writer, &ws[i]);
    }
    tc_join(&wt);
    tc_raise(&stop);
    tc_join(&rt);
    for (int i = 0; i < READERS; i++) {
        print_message("phase %d reader %d: %llu checks of completed keys, %llu window keys seen\n", phase, i,
                      (unsigned long long)rd[i].checks, (unsigned long long)rd[i].seen);
        assert_int_equal(rd[i].missing, 0);
        assert_int_equal(rd[i].disappeared, 0);
    }
    for (int i = 0; i < writers; i++) assert_int_equal(ws[i].failures, 0);
}

static void run(int writers, uint64_t total, uint64_t capacity, uint32_t expansion)
{
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.concurrent = true;
    o.bucket_size = 4;
    o.fingerprint_bits = 12;
    o.load_factor = 0.94;
    o.expansion = expansion;
    o.seed = 7;
    bk_cuckoo *f = NULL;
    assert_int_equal(bk_cuckoo_new(capacity, 0, &o, &f), BK_OK);
    writer_t ws[8];
    for (int i = 0; i < writers; i++) ws[i] = (writer_t){ f, i, writers, total, 0, 0, 0, 0 };

    run_phase(f, ws, writers, 1);
    bk_cuckoo_info in;
    bk_cuckoo_get_info(f, &in);
    print_message("%d writers: %llu keys, load %.4f, %llu kicks, %u tables\n", writers, (unsigned long long)in.items,
                  in.load_factor, (unsigned long long)in.kicks, in.tables);
    assert_int_equal(in.items, total);
    assert_int_equal(in.inserted, total);
    for (uint64_t i = 0; i < total; i++)
        if (!bk_cuckoo_contains_hash(f, key_hash(i))) fail_msg("false negative: key %llu", (unsigned long long)i);

    run_phase(f, ws, writers, 2);
    uint64_t per = total / (uint64_t)writers, removed = (uint64_t)writers * (per / 2);
    bk_cuckoo_get_info(f, &in);
    assert_int_equal(in.deleted, removed);
    assert_int_equal(in.items, total - removed);
    for (int w = 0; w < writers; w++)
        for (uint64_t j = 0; j < per; j += 2)
            if (!bk_cuckoo_contains_hash(f, key_hash((uint64_t)w + j * (uint64_t)writers)))
                fail_msg("false negative after removes: writer %d key %llu", w, (unsigned long long)j);
    bk_cuckoo_free(f);
}

static void two_writers(void **s) { (void)s; run(2, TOTAL, TOTAL, 0); }
static void four_writers(void **s) { (void)s; run(4, TOTAL, TOTAL, 0); }
/* growth under concurrent adds: a chain from 20,000 keys, doubling */
static void two_writers_growing_chain(void **s) { (void)s; run(2, TOTAL / 4, 20000, 2); }

/* ---- churn in a small, nearly full table: every kick chain moves resident fingerprints ---- */

#define RESIDENT 3600      /* of 4096 slots: 88% before the churn */
#define CHURN_KEYS 160     /* per writer, added and removed again and again: up to 96% */
#define CHURN_ROUNDS (400 / TSAN_SCALE)

typedef struct {
    bk_cuckoo *f;
    int id;
    uint64_t failures;
} churn_t;

static void *churner(void *arg)
{
    churn_t *c = arg;
    for (int round = 0; round < CHURN_ROUNDS; round++) {
        /* fresh keys every round, so that they land in new buckets and kick residents around */
        uint64_t first = 1000000 + ((uint64_t)round * 2 + (uint64_t)c->id) * CHURN_KEYS;
        uint64_t added = 0;
        for (uint64_t k = 0; k < CHURN_KEYS; k++, added++) {
            bk_status s = bk_cuckoo_add_hash(c->f, key_hash(first + k));
            if (s != BK_OK && s != BK_EFULL) c->failures++;
            if (s == BK_EFULL) break;
        }
        for (uint64_t k = 0; k < added; k++)
            if (bk_cuckoo_remove_hash(c->f, key_hash(first + k)) != BK_OK) c->failures++;
    }
    return NULL;
}

typedef struct {
    bk_cuckoo *f;
    int *stop;
    uint64_t checks, missing;
} resident_reader_t;

static void *resident_reader(void *arg)
{
    resident_reader_t *r = arg;
    while (!tc_raised(r->stop))
        for (uint64_t i = 0; i < RESIDENT; i++) {
            r->checks++;
            if (!bk_cuckoo_contains_hash(r->f, key_hash(i))) r->missing++;
        }
    return NULL;
}

static void churn(uint32_t f_bits, bool semi)
{
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.concurrent = true;
    o.fingerprint_bits = f_bits;
    o.semi_sorted = semi;
    o.seed = 3;
    bk_cuckoo *f = NULL;
    assert_int_equal(bk_cuckoo_new_buckets(1024, &o, &f), BK_OK);
    for (uint64_t i = 0; i < RESIDENT; i++) assert_int_equal(bk_cuckoo_add_hash(f, key_hash(i)), BK_OK);
    tc_threads wt = { .n = 0 }, rt = { .n = 0 };
    churn_t cs[2];
    resident_reader_t rd[READERS];
    int stop = 0;
    for (int i = 0; i < READERS; i++) {
        rd[i] = (resident_reader_t){ f, &stop, 0, 0 };
        tc_start(&rt, resident_reader, &rd[i]);
    }
    for (int i = 0; i < 2; i++) {
        cs[i] = (churn_t){ f, i, 0 };
        tc_start(&wt, churner, &cs[i]);
    }
    tc_join(&wt);
    tc_raise(&stop);
    tc_join(&rt);
    for (int i = 0; i < READERS; i++) {
        print_message("churn reader %d: %llu checks of resident keys\n", i, (unsigned long long)rd[i].checks);
        assert_int_equal(rd[i].missing, 0);
    }
    for (int i = 0; i < 2; i++) assert_int_equal(cs[i].failures, 0);
    bk_cuckoo_info in;
    bk_cuckoo_get_info(f, &in);
    print_message("churn: %llu kicks\n", (unsigned long long)in.kicks);
    for (uint64_t i = 0; i < RESIDENT; i++) assert_true(bk_cuckoo_contains_hash(f, key_hash(i)));
    bk_cuckoo_free(f);
}

static void churn_small_table(void **state) { (void)state; churn(16, false); }
/* Semi-sorted buckets: every write rewrites a whole bucket (15 bits: 56-bit buckets, most of them
 * across two words), which moves the bucket's other fingerprints under the readers. */
static void churn_small_table_semi_sorted(void **state) { (void)state; churn(15, true); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_writers),
        cmocka_unit_test(four_writers),
        cmocka_unit_test(two_writers_growing_chain),
        cmocka_unit_test(churn_small_table),
        cmocka_unit_test(churn_small_table_semi_sorted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
