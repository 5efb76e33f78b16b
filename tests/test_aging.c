/* The aging filter: no false negatives inside count and time windows (steady and bursty rates), the
 * FPR over the window, the slack, add_if_absent, batches and paths, statistics, persistence, union. */
#include "testutil.h"
#include <time.h>
#include <bloomkit/bloomkit.h>
#include "filters/internal.h"
#include "core/blocked_engine.h"

/* A clock the test moves by hand (ms). */
typedef struct { uint64_t now; } fake_clock;
static uint64_t fake_now(void *ctx) { return ((fake_clock *)ctx)->now; }

static uint64_t key_hash(uint64_t set, uint64_t i, uint64_t seed)
{
    tu_key k = tu_make_key(set, i);
    return bk_hash64(k.b, sizeof k.b, seed);
}

static bk_aging *count_filter(uint64_t w, double p, uint32_t g)
{
    bk_aging_options o = { .generations = g, .seed = 7 };
    bk_aging *f = NULL;
    assert_int_equal(bk_aging_new_count(w, p, &o, &f), BK_OK);
    return f;
}

/* Fraction of `trials` never-inserted keys (set 99) reported present. */
static double measure_fpr(const bk_aging *f, uint64_t trials, uint64_t salt)
{
    uint64_t fp = 0, h[1024];
    for (uint64_t i = 0; i < trials; i += 1024) {
        size_t n = trials - i < 1024 ? (size_t)(trials - i) : 1024;
        for (size_t j = 0; j < n; j++) h[j] = key_hash(99 + salt, i + j, bk_aging_seed(f));
        fp += TU_HITS(bk_aging_contains_hashes, f, h, n, NULL);
    }
    return (double)fp / (double)trials;
}

/* Every one of keys [from, to) of set 1 is reported present. */
static void assert_all_present(const bk_aging *f, uint64_t from, uint64_t to)
{
    uint64_t h[1024];
    for (uint64_t i = from; i < to; i += 1024) {
        size_t n = to - i < 1024 ? (size_t)(to - i) : 1024;
        for (size_t j = 0; j < n; j++) h[j] = key_hash(1, i + j, bk_aging_seed(f));
        size_t got = TU_HITS(bk_aging_contains_hashes, f, h, n, NULL);
        if (got != n) {
            print_error("false negative among keys [%llu, %llu)\n", (unsigned long long)i, (unsigned long long)(i + n));
            fail();
        }
    }
}

static void test_sizing(void **state)
{
    (void)state;
    /* The best Age-Partitioned Bloom Filter's bits per window key at each p (bench/aging_space.c
     * computes them from the paper's formulas). */
    const double ps[4] = { 0.1, 0.01, 0.001, 0.0001 };
    const double apbf[4] = { 12.37, 19.66, 25.72, 31.45 };
    for (int i = 0; i < 4; i++) {
        bk_aging_geometry geo;
        assert_int_equal(bk_aging_size(10000000, ps[i], 0, &geo), BK_OK);
        if (ps[i] >= 0.01) /* SPLIT256 blocks, the default g */
            assert_int_equal(geo.generations, BK_AGING_DEFAULT_GENERATIONS);
        else /* wide blocks: g chosen by p, 512 bits a block from 0.1%, 1024 below */
            assert_int_equal(geo.bytes, geo.blocks * geo.generations * (ps[i] >= 0.001 ? 64 : 128));
        assert_true(geo.gen_capacity * (geo.generations - 1) >= 10000000);
        assert_true(geo.fpr <= ps[i]);
        assert_true(geo.fpr > ps[i] * 0.8); /* not oversized */
        /* Less memory than two rotating classic filters, each sized for W keys at p / 2, and than the
         * best APBF. */
        bk_geometry two;
        assert_int_equal(bk_bloom_size(10000000, ps[i] / 2, &two), BK_OK);
        assert_true(geo.bytes * 8 < 2 * two.m);
        assert_true(geo.bits_per_key < apbf[i]);
        print_message("p = %g: %.2f bits per window key, g = %u (two classic filters: %.2f, APBF %.2f), FPR %.6f\n",
                      ps[i], geo.bits_per_key, geo.generations, 2.0 * (double)two.m / 1e7, apbf[i], geo.fpr);
    }
    bk_aging_geometry geo;
    assert_int_equal(bk_aging_size(0, 0.01, 0, &geo), BK_EINVAL);
    assert_int_equal(bk_aging_size(100, 0, 0, &geo), BK_EINVAL);
    assert_int_equal(bk_aging_size(100, 1, 0, &geo), BK_EINVAL);
    assert_int_equal(bk_aging_size(100, 0.01, 1, &geo), BK_EINVAL);
    assert_int_equal(bk_aging_size(100, 0.01, BK_AGING_MAX_GENERATIONS + 1, &geo), BK_EINVAL);
    assert_int_equal(bk_aging_size(UINT64_MAX / 2, 0.01, 0, &geo), BK_ETOOBIG);
    bk_aging *f = NULL;
    assert_int_equal(bk_aging_new_count(0, 0.01, NULL, &f), BK_EINVAL);
    assert_null(f);
    assert_int_equal(bk_aging_new_time(0, 100, 0.01, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_aging_new_time(2, 100, 0.01, NULL, &f), BK_EINVAL); /* < g - 1 ms */
    assert_int_equal(bk_aging_new_count(10, 0.01, NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_aging_add(NULL, "a", 1), BK_EINVAL);
    /* NULL filters: free, clear and advance accept them, the rest are BK_EINVAL (batches with
     * nothing done), as for the other types */
    bk_aging_free(NULL);
    bk_aging_clear(NULL);
    bk_aging_advance(NULL);
    bk_aging *c = (bk_aging *)0x1;
    assert_int_equal(bk_aging_clone(NULL, &c), BK_EINVAL);
    assert_null(c);
    assert_int_equal(bk_aging_set_clock(NULL, NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_aging_add_hash(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_aging_add_u64(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_aging_add_if_absent(NULL, "a", 1), BK_EINVAL);
    assert_int_equal(bk_aging_add_if_absent_hash(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_aging_add_if_absent_u64(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_aging_union(NULL, NULL), BK_EINVAL);
    bk_aging_info info;
    assert_int_equal(bk_aging_get_info(NULL, &info), BK_EINVAL);
    uint64_t h[2] = { 1, 2 };
    const void *keys[2] = { "a", NULL };
    size_t lens[2] = { 1, 3 };
    size_t n = 7;
    assert_int_equal(bk_aging_add_hashes(NULL, h, 2), BK_EINVAL);
    assert_int_equal(bk_aging_add_many(NULL, keys, lens, 1), BK_EINVAL);
    assert_int_equal(bk_aging_contains_hashes(NULL, h, 2, NULL, &n), BK_EINVAL);
    assert_int_equal(n, 0);
    n = 7;
    assert_int_equal(bk_aging_contains_many(NULL, keys, lens, 1, NULL, &n), BK_EINVAL);
    assert_int_equal(n, 0);
    n = 7;
    assert_int_equal(bk_aging_add_if_absent_hashes(NULL, h, 2, NULL, &n), BK_EINVAL);
    assert_int_equal(n, 0);
    n = 7;
    assert_int_equal(bk_aging_add_if_absent_many(NULL, keys, lens, 1, NULL, &n), BK_EINVAL);
    assert_int_equal(n, 0);
    /* a live filter: NULL arrays with n > 0, a NULL key with a length, a NULL out, all refused */
    assert_int_equal(bk_aging_new_count(100, 0.01, NULL, &f), BK_OK);
    assert_int_equal(bk_aging_add(f, NULL, 3), BK_EINVAL);
    assert_int_equal(bk_aging_add_if_absent(f, NULL, 3), BK_EINVAL);
    assert_int_equal(bk_aging_add_hashes(f, NULL, 2), BK_EINVAL);
    assert_int_equal(bk_aging_add_many(f, keys, lens, 2), BK_EINVAL);
    n = 7;
    assert_int_equal(bk_aging_contains_hashes(f, NULL, 2, NULL, &n), BK_EINVAL);
    assert_int_equal(n, 0);
    assert_int_equal(bk_aging_contains_many(f, keys, lens, 2, NULL, &n), BK_EINVAL);
    assert_int_equal(bk_aging_add_if_absent_many(f, keys, lens, 2, NULL, &n), BK_EINVAL);
    assert_int_equal(bk_aging_add_if_absent_hashes(f, NULL, 2, NULL, &n), BK_EINVAL);
    assert_int_equal(bk_aging_clone(f, NULL), BK_EINVAL);
    assert_int_equal(bk_aging_get_info(f, NULL), BK_EINVAL);
    assert_int_equal(bk_aging_union(f, NULL), BK_EINVAL);
    bk_stats st;
    bk_aging_stats(f, &st);
    assert_int_equal(st.count, 0); /* nothing refused above was added */
    bk_aging_free(f);
}

/* Count window: after each step of a long stream, the last W keys are all present; checked at
 * phases all around the ring's turns (just before, at and after each). */
static void test_count_no_false_negatives(void **state)
{
    (void)state;
    const uint32_t gs[3] = { 2, 4, 7 };
    for (int gi = 0; gi < 3; gi++) {
        const uint64_t w = 30000;
        bk_aging *f = count_filter(w, 0.01, gs[gi]);
        bk_aging_info info;
        assert_int_equal(bk_aging_get_info(f, &info), BK_OK);
        uint64_t c = info.gen_capacity, inserted = 0;
        /* Steps of varying length so the checks land at every phase of a generation. */
        uint64_t step = 1;
        while (inserted < 6 * w) {
            uint64_t n = step % (c + 3) + 1;
            for (uint64_t i = 0; i < n; i++) assert_int_equal(bk_aging_add_hash(f, key_hash(1, inserted + i, 7)), BK_OK);
            inserted += n;
            assert_all_present(f, inserted > w ? inserted - w : 0, inserted);
            step = step * 7 + 3;
        }
        assert_int_equal(bk_aging_get_info(f, &info), BK_OK);
        assert_true(info.covered >= w);
        assert_int_equal(info.inserted, inserted);
        bk_aging_free(f);
    }
}

/* The slack: a key is present for W further insertions and gone (but for false positives) after
 * g * C - 1. */
static void test_count_slack(void **state)
{
    (void)state;
    const uint64_t w = 40000, probe = 2000;
    bk_aging *f = count_filter(w, 0.01, 4);
    bk_aging_info info;
    bk_aging_get_info(f, &info);
    assert_int_equal(info.slack, 4 * info.gen_capacity - 1 - w);
    /* Fill a while, then insert the probe keys (set 2) at the start of a generation. */
    for (uint64_t i = 0; i < info.gen_capacity * 5; i++) bk_aging_add_hash(f, key_hash(3, i, 7));
    uint64_t h[2000];
    for (uint64_t i = 0; i < probe; i++) h[i] = key_hash(2, i, 7);
    assert_int_equal(bk_aging_add_hashes(f, h, probe), BK_OK);
    /* W - probe more: the first probe key has had W - 1 later insertions, so every probe key is inside
     * the window. */
    uint64_t more = 0;
    for (; more < w - probe; more++) bk_aging_add_hash(f, key_hash(4, more, 7));
    assert_int_equal(TU_HITS(bk_aging_contains_hashes, f, h, probe, NULL), probe);
    /* After the slack: insertions up to g * C since the first probe key. */
    for (; more < 4 * info.gen_capacity; more++) bk_aging_add_hash(f, key_hash(4, more, 7));
    size_t left = TU_HITS(bk_aging_contains_hashes, f, h, probe, NULL);
    print_message("probe keys still reported after g*C insertions: %zu of %llu\n", left, (unsigned long long)probe);
    assert_true(left <= 3 * 0.01 * probe + 5);
    bk_aging_free(f);
}

/* FPR over the window at p = 1% and 0.1%: at the worst point (every generation full) and on average
 * over a generation's phases, measured with never-inserted keys, within 1.15 p. */
static void test_count_fpr(void **state)
{
    (void)state;
    const double ps[2] = { 0.01, 0.001 };
    const uint64_t trials[2] = { 300000, 2000000 };
    for (int i = 0; i < 2; i++) {
        const uint64_t w = 100000;
        bk_aging *f = count_filter(w, ps[i], 4);
        bk_aging_info info;
        bk_aging_get_info(f, &info);
        uint64_t c = info.gen_capacity, id = 0;
        /* Steady state: 4 generations complete, then up to just before the next turn. */
        for (; id < 4 * c; id++) bk_aging_add_hash(f, key_hash(1, id, 7));
        double worst = measure_fpr(f, trials[i], 0);
        bk_aging_get_info(f, &info);
        print_message("p = %g: worst-point FPR %.5f (%.3f p), fpr_now %.5f\n", ps[i], worst, worst / ps[i],
                      info.fpr_now);
        assert_true(worst <= 1.15 * ps[i]);
        assert_true(info.fpr_now <= ps[i]);
        /* Average over 4 phases of the next generation. */
        double sum = 0;
        for (int ph = 0; ph < 4; ph++) {
            for (uint64_t j = 0; j < c / 4; j++, id++) bk_aging_add_hash(f, key_hash(1, id, 7));
            sum += measure_fpr(f, trials[i] / 4, 1 + (uint64_t)ph);
        }
        print_message("p = %g: FPR averaged over the window's phases %.5f\n", ps[i], sum / 4);
        assert_true(sum / 4 <= 1.15 * ps[i]);
        bk_aging_free(f);
    }
}

/* Every p from 10% to 0.01% (SPLIT256 blocks down to 1%, the wide blocks of 512 and 1024 bits
 * below): no false negative inside the window at any phase of a generation, and at the window's worst
 * moment (every generation full, the next insert turns the ring) the FPR measured on a million
 * never-inserted keys is at most 1.15 p (a window of 1e5 keys has few buckets: the spread of their
 * loads moves the rate more than at 1e6, where bench/aging_space measures it under p). */
static void test_fpr_by_p(void **state)
{
    (void)state;
    const double ps[4] = { 0.1, 0.01, 0.001, 0.0001 };
    for (int i = 0; i < 4; i++) {
        const uint64_t w = 100000;
        bk_aging *f = count_filter(w, ps[i], 0);
        bk_aging_info info;
        bk_aging_get_info(f, &info);
        uint64_t c = info.gen_capacity, id = 0, g = info.generations;
        /* g + 1 generations in steps of C / 3 + 1 keys: the checks land at every phase */
        uint64_t h[1024];
        while (id < (g + 1) * c) {
            uint64_t n = c / 3 + 1;
            if (n > (g + 1) * c - id) n = (g + 1) * c - id;
            for (uint64_t j = 0; j < n; j += 1024) {
                size_t m = n - j < 1024 ? (size_t)(n - j) : 1024;
                for (size_t x = 0; x < m; x++) h[x] = key_hash(1, id + j + x, 7);
                assert_int_equal(bk_aging_add_hashes(f, h, m), BK_OK);
            }
            id += n;
            assert_all_present(f, id > w ? id - w : 0, id);
        }
        double worst = measure_fpr(f, 1000000, 0);
        bk_aging_get_info(f, &info);
        bk_stats st;
        bk_aging_stats(f, &st);
        print_message("p = %g: g = %llu, %.2f bits per window key, worst-moment FPR %.6f (%.3f p), fpr_now %.6f\n",
                      ps[i], (unsigned long long)g, (double)st.memory_bytes * 8.0 / (double)w, worst, worst / ps[i],
                      info.fpr_now);
        assert_true(worst <= 1.15 * ps[i]);
        assert_true(info.fpr_now <= ps[i]);
        bk_aging_free(f);
    }
}

/* Time window with a hand-moved clock: steady rate, then 10x bursts; every key inserted within the
 * last T ms is present at every check; keys older than T + period are gone (but for false positives). */
static void test_time_no_false_negatives(void **state)
{
    (void)state;
    fake_clock clk = { 1000000 };
    bk_aging_options o = { .seed = 7, .clock = fake_now, .clock_ctx = &clk };
    /* 1 key per ms with 10x bursts (3.25 per ms on average): sized for 4 keys per ms. */
    const uint64_t t = 60000, cap = 240000;
    bk_aging *f = NULL;
    assert_int_equal(bk_aging_new_time(t, cap, 0.01, &o, &f), BK_OK);
    bk_aging_info info;
    bk_aging_get_info(f, &info);
    assert_int_equal(info.period_ms, 20000);
    assert_int_equal(info.slack, 20000);
    /* Insertion times, to know which keys must be present. Rate per ms: 1, with 10x bursts. */
    enum { NK = 600000 };
    uint64_t *at = malloc(NK * sizeof *at);
    assert_non_null(at);
    uint64_t nk = 0, start = clk.now;
    uint64_t h[64];
    while (nk < NK - 64 && clk.now < start + 5 * t) {
        uint64_t ms = clk.now - start;
        bool burst = (ms / 7000) % 4 == 3; /* 7 s of every 28 at 10x */
        uint64_t rate = burst ? 10 : 1;
        for (uint64_t j = 0; j < rate; j++) {
            h[j] = key_hash(1, nk + j, 7);
            at[nk + j] = clk.now;
        }
        if (ms % 2) {
            assert_int_equal(bk_aging_add_hashes(f, h, rate), BK_OK);
        } else {
            for (uint64_t j = 0; j < rate; j++) assert_int_equal(bk_aging_add_hash(f, h[j]), BK_OK);
        }
        nk += rate;
        clk.now += 1;
        if (ms % 3331 == 0) {
            /* Keys inserted in (now - T, now]: present. Keys older than T + period: gone. */
            uint64_t from = nk;
            while (from > 0 && at[from - 1] + t > clk.now) from--;
            assert_all_present(f, from, nk);
            uint64_t old = 0;
            while (old < nk && at[old] + t + info.period_ms <= clk.now) old++;
            if (old > 1000) {
                uint64_t fp = 0;
                for (uint64_t i = old - 1000; i < old; i++) fp += bk_aging_contains_hash(f, key_hash(1, i, 7));
                assert_true(fp <= 3 * 0.01 * 1000 + 5);
            }
        }
    }
    /* A pause longer than the window forgets everything, with no insert needed. */
    clk.now += t + info.period_ms;
    assert_false(bk_aging_contains_hash(f, key_hash(1, nk - 1, 7)));
    bk_stats st;
    bk_aging_stats(f, &st);
    assert_int_equal(st.count, 0);
    /* A clock going back neither forgets nor rejuvenates. */
    bk_aging_add_hash(f, key_hash(5, 0, 7));
    clk.now -= 3 * t;
    assert_true(bk_aging_contains_hash(f, key_hash(5, 0, 7)));
    bk_aging_add_hash(f, key_hash(5, 1, 7));
    clk.now += 3 * t + t;
    assert_true(bk_aging_contains_hash(f, key_hash(5, 1, 7)));
    clk.now += 2 * t;
    assert_false(bk_aging_contains_hash(f, key_hash(5, 1, 7)));
    free(at);
    bk_aging_free(f);
}

/* Time window at its sized rate: the FPR over the window at its worst point stays within 1.15 p. */
static void test_time_fpr(void **state)
{
    (void)state;
    fake_clock clk = { 0 };
    bk_aging_options o = { .seed = 7, .clock = fake_now, .clock_ctx = &clk };
    bk_aging *f = NULL;
    assert_int_equal(bk_aging_new_time(3000, 90000, 0.01, &o, &f), BK_OK); /* 30 keys per ms */
    uint64_t id = 0, h[30];
    for (; clk.now < 11000; clk.now++) { /* up to the end of a period: 4 full generations */
        for (int j = 0; j < 30; j++) h[j] = key_hash(1, id++, 7);
        bk_aging_add_hashes(f, h, 30);
    }
    clk.now--; /* the last ms of the period: generations 7 to 10 live and full */
    double fpr = measure_fpr(f, 300000, 0);
    bk_stats st;
    bk_aging_stats(f, &st);
    print_message("time window: FPR %.5f at the end of a period, fpr_now %.5f\n", fpr, st.fpr_now);
    assert_true(fpr <= 1.15 * 0.01);
    assert_false(st.saturated);
    bk_aging_free(f);
}

/* What a forward jump of the clock does to a time window (the wall clock stepped ahead): keys age by
 * the jump, a jump past the window and a period forgets them all; and the monotonic clock runs
 * with CLOCK_MONOTONIC and keeps a real window's keys. */
static void test_clock_jump_and_monotonic(void **state)
{
    (void)state;
    fake_clock clk = { 1000000 };
    bk_aging_options o = { .seed = 9, .clock = fake_now, .clock_ctx = &clk };
    bk_aging *f = NULL;
    assert_int_equal(bk_aging_new_time(3000, 10000, 0.01, &o, &f), BK_OK); /* T = 3 s, g = 4: P = 1 s */
    for (uint64_t i = 0; i < 1000; i++) assert_int_equal(bk_aging_add_hash(f, key_hash(2, i, 9)), BK_OK);
    clk.now += 1000; /* a real second later: inside the window */
    for (uint64_t i = 0; i < 1000; i++) assert_true(bk_aging_contains_hash(f, key_hash(2, i, 9)));
    clk.now += 3000; /* the clock jumps 3 s ahead: the keys, 1 s old, look 4 s old and are forgotten */
    uint64_t left = 0;
    for (uint64_t i = 0; i < 1000; i++) left += bk_aging_contains_hash(f, key_hash(2, i, 9));
    assert_true(left < 50); /* false positives only */
    bk_aging_free(f);
    /* the monotonic clock: CLOCK_MONOTONIC in ms */
    struct timespec ts;
    assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
    uint64_t before = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    uint64_t m = bk_aging_monotonic_ms(NULL);
    assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
    uint64_t after = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    assert_true(m >= before && m <= after);
    bk_aging_options om = { .seed = 9, .clock = bk_aging_monotonic_ms };
    assert_int_equal(bk_aging_new_time(60000, 10000, 0.01, &om, &f), BK_OK);
    for (uint64_t i = 0; i < 1000; i++) assert_int_equal(bk_aging_add_hash(f, key_hash(3, i, 9)), BK_OK);
    for (uint64_t i = 0; i < 1000; i++) assert_true(bk_aging_contains_hash(f, key_hash(3, i, 9)));
    bk_aging_free(f);
}

/* add_if_absent: the first occurrence within the window is new, repeats inside it are found (no
 * false negative), a repeat in an older generation restarts the key's window. */
static void test_add_if_absent(void **state)
{
    (void)state;
    const uint64_t w = 20000;
    bk_aging *f = count_filter(w, 0.001, 4);
    bk_aging_info info;
    bk_aging_get_info(f, &info);
    uint64_t c = info.gen_capacity;
    /* Stream: step s adds key s and repeats key s - d: 2d - 1 insertions lie between the two, inside
     * the window. */
    const uint64_t d = w / 2 - 2;
    uint64_t fresh = 0, found_new = 0;
    for (uint64_t s = 0; s < 5 * w; s++) {
        bk_status st = bk_aging_add_if_absent_hash(f, key_hash(1, s, 7));
        fresh += st == BK_OK;
        if (s >= d) assert_int_equal(bk_aging_add_if_absent_hash(f, key_hash(1, s - d, 7)), BK_EEXISTS);
    }
    found_new = 5 * w - fresh;
    print_message("new keys reported present (false positives): %llu of %llu\n", (unsigned long long)found_new,
                  (unsigned long long)(5 * w));
    assert_true(found_new <= 5 * w * 0.001 * 3 + 5);
    /* A key kept alive by repeats every 2C insertions is never forgotten. */
    bk_aging_clear(f);
    uint64_t alive = key_hash(9, 0, 7);
    bk_aging_add_if_absent_hash(f, alive);
    for (uint64_t s = 1; s < 10 * c; s++) {
        bk_aging_add_hash(f, key_hash(8, s, 7));
        if (s % (2 * c) == 0) assert_int_equal(bk_aging_add_if_absent_hash(f, alive), BK_EEXISTS);
    }
    assert_true(bk_aging_contains_hash(f, alive));
    /* Batches: a key repeated within one batch is found by its second occurrence. */
    bk_aging_clear(f);
    uint64_t h[6] = { key_hash(7, 1, 7), key_hash(7, 2, 7), key_hash(7, 1, 7), key_hash(7, 3, 7),
                      key_hash(7, 2, 7), key_hash(7, 4, 7) };
    uint8_t r[6];
    size_t done = 0;
    assert_int_equal(bk_aging_add_if_absent_hashes(f, h, 6, r, &done), BK_OK);
    assert_int_equal(done, 6);
    const uint8_t want[6] = { 0, 0, 1, 0, 1, 0 };
    assert_memory_equal(r, want, 6);
    const void *keys[2] = { "alpha", "beta" };
    size_t lens[2] = { 5, 4 };
    assert_int_equal(bk_aging_add_if_absent_many(f, keys, lens, 2, r, NULL), BK_OK);
    assert_int_equal(r[0] + r[1], 0);
    assert_int_equal(bk_aging_add_if_absent(f, "beta", 4), BK_EEXISTS);
    assert_int_equal(bk_aging_add_if_absent(f, "gamma", 5), BK_OK);
    assert_true(bk_aging_contains(f, "alpha", 5));
    bk_aging_free(f);
}

static void *save(const bk_aging *f, size_t *len)
{
    bk_aging *c = NULL;
    assert_int_equal(bk_aging_clone(f, &c), BK_OK);
    bk_filter *h = NULL;
    assert_int_equal(bk_filter_wrap(BK_TYPE_AGING, c, &h), BK_OK);
    void *buf = NULL;
    assert_int_equal(bk_filter_save_alloc(h, &buf, len), BK_OK);
    bk_filter_free(h);
    return buf;
}

/* Single, batched and bytes forms, and the scalar and AVX2 paths, set the same bits and answer alike. */
static void test_forms_and_paths_agree(void **state)
{
    (void)state;
    enum { N = 50000 };
    tu_key *k = malloc(N * sizeof *k);
    const void **ptrs = malloc(N * sizeof *ptrs);
    size_t *lens = malloc(N * sizeof *lens);
    uint64_t *h = malloc(N * sizeof *h);
    assert_true(k && ptrs && lens && h);
    for (size_t i = 0; i < N; i++) {
        k[i] = tu_make_key(1, i);
        ptrs[i] = k[i].b;
        lens[i] = sizeof k[i].b;
        h[i] = bk_hash64(k[i].b, sizeof k[i].b, 7);
    }
    /* SPLIT256 blocks, and the wide blocks of 512 and 1024 bits */
    const double ps[3] = { 0.01, 0.001, 0.0001 };
    for (int pi = 0; pi < 3; pi++) {
        void *ref = NULL, *ref_answers = NULL;
        size_t ref_len = 0;
        for (bk_simd s = BK_SIMD_SCALAR; s <= bk_simd_best() && s <= BK_SIMD_AVX2; s++) {
            assert_int_equal(bk_simd_force(s), BK_OK);
            bk_aging *a = count_filter(20000, ps[pi], 4), *b = count_filter(20000, ps[pi], 4),
                     *c = count_filter(20000, ps[pi], 4);
            for (size_t i = 0; i < N; i++) bk_aging_add(a, k[i].b, sizeof k[i].b);
            assert_int_equal(bk_aging_add_hashes(b, h, N), BK_OK);
            assert_int_equal(bk_aging_add_many(c, ptrs, lens, N), BK_OK);
            size_t la, lb, lc;
            void *sa = save(a, &la), *sb = save(b, &lb), *sc = save(c, &lc);
            assert_int_equal(la, lb);
            assert_memory_equal(sa, sb, la);
            assert_memory_equal(sa, sc, la);
            if (!ref) {
                ref = sa;
                ref_len = la;
            } else {
                assert_int_equal(ref_len, la);
                assert_memory_equal(ref, sa, la); /* scalar and AVX2 set identical bits */
                free(sa);
            }
            free(sb);
            free(sc);
            uint8_t *r1 = malloc(N), *r2 = malloc(N);
            size_t n1 = TU_HITS(bk_aging_contains_hashes, a, h, N, r1), n2 = TU_HITS(bk_aging_contains_many, a, ptrs, lens, N, r2);
            assert_int_equal(n1, n2);
            assert_memory_equal(r1, r2, N);
            for (size_t i = 0; i < N; i += 97) assert_int_equal(bk_aging_contains(a, k[i].b, sizeof k[i].b), r1[i]);
            for (size_t i = N - 20000; i < N; i++) assert_true(r1[i]);
            /* absent keys (the first ones aged out, and flipped hashes): both paths answer alike */
            for (size_t i = 0; i < N; i++) h[i] ^= UINT64_C(0x5bd1e995) << 20;
            (void)TU_HITS(bk_aging_contains_hashes, a, h, N, r1);
            for (size_t i = 0; i < N; i++) h[i] ^= UINT64_C(0x5bd1e995) << 20;
            if (!ref_answers) {
                ref_answers = r1;
                r1 = NULL;
            } else {
                assert_memory_equal(ref_answers, r1, N);
            }
            free(r1);
            free(r2);
            bk_aging_free(a);
            bk_aging_free(b);
            bk_aging_free(c);
        }
        assert_int_equal(bk_simd_force(BK_SIMD_AUTO), BK_OK);
        free(ref);
        free(ref_answers);
    }
    free(k);
    free(ptrs);
    free(lens);
    free(h);
}

/* Batches of every size, at several g (buckets of 2 to 16 blocks, 128-byte aligned or not), on both
 * paths: the batch forms set the same bits, count the same keys, turn the ring at the same key and
 * answer the same as one key at a time, including batches that end exactly where a generation is
 * full, start just after, or span several turns. */
static void test_batches_match_single_keys(void **state)
{
    (void)state;
    enum { N = 30000 };
    uint64_t *h = malloc(N * sizeof *h);
    uint8_t *r1 = malloc(N), *r2 = malloc(N);
    assert_true(h && r1 && r2);
    /* Half the stream repeats a key of the last ~800 (add_if_absent finds some, not all, of them). */
    for (size_t i = 0; i < N; i++) h[i] = i % 2 && i > 800 ? h[i - 1 - (i * 7919) % 800] : key_hash(1, i, 7);
    const uint32_t gs[] = { 2, 3, 4, 5, 16 };
    /* 1%: SPLIT256 blocks (scalar and AVX2 paths); 0.1% and 0.01%: the wide blocks of 512 and 1024 bits */
    const double ps[] = { 0.01, 0.001, 0.0001 };
    for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
    for (bk_simd s = BK_SIMD_SCALAR; s <= bk_simd_best() && s <= BK_SIMD_AVX2; s++) {
        assert_int_equal(bk_simd_force(s), BK_OK);
        const double bp = ps[pi];
        for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++) {
            uint32_t g = gs[gi];
            bk_aging *one = count_filter(3000, bp, g), *bat = count_filter(3000, bp, g);
            bk_aging *aone = count_filter(3000, bp, g), *abat = count_filter(3000, bp, g);
            bk_aging_info info;
            bk_aging_get_info(one, &info);
            uint64_t c = info.gen_capacity;
            /* Batch sizes: exactly one generation, one key, a generation minus one, then growing. */
            size_t sizes[] = { (size_t)c, 1, (size_t)c - 1, 2, 17, 1024, 3 * (size_t)c + 5, 255 };
            size_t at = 0;
            for (size_t b = 0; at < N; b++) {
                size_t n = sizes[b % (sizeof sizes / sizeof sizes[0])];
                if (n > N - at) n = N - at;
                for (size_t i = at; i < at + n; i++) {
                    assert_int_equal(bk_aging_add_hash(one, h[i]), BK_OK);
                    r1[i] = bk_aging_add_if_absent_hash(aone, h[i]) == BK_EEXISTS;
                }
                assert_int_equal(bk_aging_add_hashes(bat, h + at, n), BK_OK);
                size_t present = 0;
                for (size_t i = at; i < at + n; i++) present += r1[i];
                size_t done = 0;
                assert_int_equal(bk_aging_add_if_absent_hashes(abat, h + at, n, r2 + at, &done), BK_OK);
                assert_int_equal(done, n);
                for (size_t i = at; i < at + n; i++) present -= r2[i];
                assert_int_equal(present, 0);
                at += n;
            }
            assert_memory_equal(r1, r2, N);
            size_t l1, l2, l3, l4;
            void *s1 = save(one, &l1), *s2 = save(bat, &l2), *s3 = save(aone, &l3), *s4 = save(abat, &l4);
            assert_int_equal(l1, l2);
            assert_memory_equal(s1, s2, l1);
            assert_int_equal(l3, l4);
            assert_memory_equal(s3, s4, l3);
            free(s1), free(s2), free(s3), free(s4);
            /* Queries: present and absent keys, batch against one at a time. */
            for (size_t i = 0; i < N; i++) h[i] ^= i % 3 == 0 ? UINT64_C(0x5bd1e995) << 20 : 0;
            size_t n1 = TU_HITS(bk_aging_contains_hashes, one, h, N, r1), n2 = 0;
            for (size_t i = 0; i < N; i++) {
                r2[i] = bk_aging_contains_hash(one, h[i]);
                n2 += r2[i];
            }
            assert_int_equal(n1, n2);
            assert_memory_equal(r1, r2, N);
            /* Batches shorter than, equal to and just past the query loop's prefetch distance. */
            size_t qsizes[] = { 1, 2, 47, 48, 49, 64, 65, 17, 1000 };
            for (size_t b = 0, q = 0; q < N; b++) {
                size_t n = qsizes[b % (sizeof qsizes / sizeof qsizes[0])];
                if (n > N - q) n = N - q;
                size_t hits = TU_HITS(bk_aging_contains_hashes, one, h + q, n, r1 + q), want = 0;
                for (size_t i = q; i < q + n; i++) want += r2[i];
                assert_int_equal(hits, want);
                q += n;
            }
            assert_memory_equal(r1, r2, N);
            for (size_t i = 0; i < N; i++) h[i] ^= i % 3 == 0 ? UINT64_C(0x5bd1e995) << 20 : 0;
            /* The last W keys are all present (no false negative at any g). */
            assert_int_equal(TU_HITS(bk_aging_contains_hashes, bat, h + N - 3000, 3000, NULL), 3000);
            bk_aging_free(one), bk_aging_free(bat), bk_aging_free(aone), bk_aging_free(abat);
        }
        /* A time window with some generations expired: the batch tests only the live slots. */
        fake_clock clk = { 500000 };
        bk_aging_options o = { .seed = 7, .clock = fake_now, .clock_ctx = &clk, .generations = 5 };
        bk_aging *t = NULL;
        assert_int_equal(bk_aging_new_time(4000, 8000, bp, &o, &t), BK_OK); /* period 1000 ms */
        for (size_t i = 0; i < 6000; i += 100, clk.now += 100) bk_aging_add_hashes(t, h + i, 100);
        for (uint64_t later = 0; later <= 5000; later += 700) {
            clk.now += 700;
            size_t n1 = TU_HITS(bk_aging_contains_hashes, t, h, 6000, r1), n2 = 0;
            for (size_t i = 0; i < 6000; i++) {
                r2[i] = bk_aging_contains_hash(t, h[i]);
                n2 += r2[i];
            }
            assert_int_equal(n1, n2);
            assert_memory_equal(r1, r2, 6000);
        }
        assert_int_equal(TU_HITS(bk_aging_contains_hashes, t, h, 6000, NULL), 0); /* all aged out */
        bk_aging_free(t);
    }
    assert_int_equal(bk_simd_force(BK_SIMD_AUTO), BK_OK);
    free(h);
    free(r1);
    free(r2);
}

static void test_stats_and_info(void **state)
{
    (void)state;
    bk_aging *f = count_filter(30000, 0.01, 4);
    bk_aging_info info;
    bk_aging_get_info(f, &info);
    assert_int_equal(info.gen_capacity, 10000);
    assert_int_equal(info.covered, 0);
    for (uint64_t i = 0; i < 25000; i++) bk_aging_add_hash(f, key_hash(1, i, 7));
    assert_int_equal(bk_aging_get_info(f, &info), BK_OK);
    assert_int_equal(info.mode, BK_AGING_COUNT);
    assert_int_equal(info.generations, 4);
    assert_int_equal(info.gen_count[0], 5000);
    assert_int_equal(info.gen_count[1], 10000);
    assert_int_equal(info.gen_count[2], 10000);
    assert_int_equal(info.gen_count[3], 0);
    assert_int_equal(info.covered, 25000);
    assert_true(info.gen_fill[1] > info.gen_fill[0] && info.gen_fill[0] > 0 && info.gen_fill[3] == 0);
    for (uint64_t i = 25000; i < 100000; i++) bk_aging_add_hash(f, key_hash(1, i, 7));
    bk_aging_get_info(f, &info);
    assert_int_equal(info.covered, 30000 + info.gen_count[0]);
    bk_stats st;
    bk_aging_stats(f, &st);
    assert_int_equal(st.type, BK_TYPE_AGING);
    assert_int_equal(st.capacity, 30000);
    assert_int_equal(st.count, 30000 + info.gen_count[0]);
    assert_int_equal(st.subfilters, 4);
    assert_int_equal(st.memory_bytes, bk_aging_memory(f));
    assert_true(st.fpr_now > 0 && st.fpr_now <= 0.01);
    assert_false(st.saturated);
    assert_string_equal(bk_type_name(BK_TYPE_AGING), "aging");
    bk_aging_clear(f);
    bk_aging_stats(f, &st);
    assert_int_equal(st.count, 0);
    assert_true(st.fill_ratio == 0);
    bk_aging_free(f);
}

/* bk_aging_advance: a time window forgets the generations aged out by now even without an insert (a
 * clock that then goes back does not bring them back); a count window is left as it was. */
static void test_advance(void **state)
{
    (void)state;
    fake_clock clk = { 10000 };
    bk_aging_options o = { .seed = 5, .clock = fake_now, .clock_ctx = &clk };
    bk_aging *f = NULL, *kept = NULL;
    assert_int_equal(bk_aging_new_time(3000, 1000, 0.01, &o, &f), BK_OK);
    assert_int_equal(bk_aging_generations(f), 4);
    for (uint64_t i = 0; i < 500; i++) assert_int_equal(bk_aging_add_hash(f, key_hash(1, i, 5)), BK_OK);
    assert_int_equal(bk_aging_clone(f, &kept), BK_OK);
    clk.now += 10000; /* past the window */
    bk_aging_advance(f);
    clk.now -= 10000; /* the clock goes back */
    bk_stats st;
    bk_aging_stats(kept, &st);
    assert_int_equal(st.count, 500); /* not advanced: the keys answer again */
    assert_all_present(kept, 0, 500);
    bk_aging_stats(f, &st);
    assert_int_equal(st.count, 0);
    assert_true(st.fill_ratio == 0);
    bk_aging_free(kept);
    bk_aging_free(f);
    /* a count window: nothing to do */
    bk_aging *c = count_filter(3000, 0.01, 4);
    for (uint64_t i = 0; i < 2000; i++) bk_aging_add_hash(c, key_hash(4, i, 7));
    size_t l1, l2;
    void *b1 = save(c, &l1);
    bk_aging_advance(c);
    void *b2 = save(c, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    free(b1);
    free(b2);
    bk_aging_free(c);
}

/* Saved mid-window and loaded again: bit-identical, and the copy continues exactly as the original. */
static void test_persist_round_trip(void **state)
{
    (void)state;
    for (int run = 0; run < 6; run++) {
        int mode = run % 2;
        double p = run < 2 ? 0.01 : run < 4 ? 0.001 : 0.0001; /* body 1, body 2 of 512- and 1024-bit blocks */
        fake_clock clk = { 5000000 };
        bk_aging_options o = { .seed = 11, .clock = fake_now, .clock_ctx = &clk };
        bk_aging *f = NULL;
        if (mode == 0)
            assert_int_equal(bk_aging_new_count(9000, p, &o, &f), BK_OK);
        else
            assert_int_equal(bk_aging_new_time(9000, 9000, p, &o, &f), BK_OK);
        for (uint64_t i = 0; i < 16500; i++) {
            bk_aging_add_hash(f, key_hash(1, i, 11));
            if (i % 3 == 0) clk.now++;
        }
        size_t len;
        void *buf = save(f, &len);
        bk_filter *g = NULL;
        assert_int_equal(bk_filter_load_buffer(buf, len, 0, &g), BK_OK);
        assert_int_equal(bk_filter_type(g), BK_TYPE_AGING);
        bk_aging *l = bk_filter_get(g, BK_TYPE_AGING);
        assert_non_null(l);
        assert_int_equal(bk_aging_set_clock(l, fake_now, &clk), BK_OK);
        size_t len2;
        void *buf2 = save(l, &len2);
        assert_int_equal(len, len2);
        assert_memory_equal(buf, buf2, len);
        free(buf2);
        /* Both go on through more turns of the ring and stay identical. */
        for (uint64_t i = 16500; i < 40000; i++) {
            bk_aging_add_hash(f, key_hash(1, i, 11));
            assert_int_equal(bk_filter_add_hash(g, key_hash(1, i, 11)), BK_OK);
            if (i % 3 == 0) clk.now++;
        }
        void *a = save(f, &len), *b = save(l, &len2);
        assert_memory_equal(a, b, len);
        assert_true(bk_filter_contains_hash(g, key_hash(1, 39999, 11)));
        assert_int_equal(bk_filter_remove_hash(g, key_hash(1, 39999, 11)), BK_ENOTSUP);
        free(a);
        free(b);
        /* Corruptions of the body are refused, not trusted. */
        uint8_t *bad = malloc(len);
        memcpy(bad, buf, len);
        bad[64 + 4] = 1; /* g = 1 */
        bk_filter *x = NULL;
        assert_int_equal(bk_filter_load_buffer(bad, len, BK_LOAD_NO_CHECKSUM, &x), BK_ECORRUPT);
        assert_null(x);
        memcpy(bad, buf, len);
        bad[64] = 4; /* a mode no body has */
        assert_int_equal(bk_filter_load_buffer(bad, len, BK_LOAD_NO_CHECKSUM, &x), BK_ECORRUPT);
        memcpy(bad, buf, len);
        if (p < 0.01) {
            bad[64 + 208] = 0; /* block bits 0 (512 is 0x200, 1024 0x400: the low byte is 0 already) */
            bad[64 + 209] = 3;
            assert_int_equal(bk_filter_load_buffer(bad, len, BK_LOAD_NO_CHECKSUM, &x), BK_ECORRUPT);
            memcpy(bad, buf, len);
            bad[64 + 212] = 17; /* k above 16 */
            assert_int_equal(bk_filter_load_buffer(bad, len, BK_LOAD_NO_CHECKSUM, &x), BK_ECORRUPT);
            memcpy(bad, buf, len);
            bad[64] -= 2; /* a wide body read as body 1: its padding is not zero */
            assert_int_equal(bk_filter_load_buffer(bad, len, BK_LOAD_NO_CHECKSUM, &x), BK_ECORRUPT);
        } else {
            bad[64 + 212] = 1; /* body 1's padding must be zero */
            assert_int_equal(bk_filter_load_buffer(bad, len, BK_LOAD_NO_CHECKSUM, &x), BK_ECORRUPT);
        }
        assert_null(x);
        free(bad);
        free(buf);
        bk_filter_free(g);
        bk_aging_free(f);
    }
}

/* docs/FORMAT.md 6.7 computed here from the saved body: the key's bucket is b = range(h, B), the block
 * of its generation's slot j is block (j + popcount(b)) mod g of the bucket, and it holds the key's 8 SPLIT256
 * bits of 6.2. Over several turns of the ring and at g from 2 to 8 (buckets of one line to four). */
static void test_body_layout_as_documented(void **state)
{
    (void)state;
    static const uint32_t salt[8] = { 0x97406341u, 0x15649dadu, 0x84849edbu, 0x1a56b061u,
                                      0xbf9bf163u, 0x80554a9du, 0xef3d9061u, 0x3e112a0du };
    const uint32_t gs[] = { 2, 3, 4, 5, 8 };
    for (size_t t = 0; t < sizeof gs / sizeof gs[0]; t++) {
        uint32_t g = gs[t];
        bk_aging *f = count_filter(3000, 0.01, g);
        bk_aging_info in;
        assert_int_equal(bk_aging_get_info(f, &in), BK_OK);
        uint64_t c = in.gen_capacity, n = (2 * g + 3) * c / 2; /* g + 1.5 generations: the ring turned */
        for (uint64_t i = 0; i < n; i++) bk_aging_add_hash(f, key_hash(1, i, 7));
        size_t len;
        uint8_t *buf = save(f, &len);
        uint32_t header_size;
        memcpy(&header_size, buf + 24, 4);
        const uint8_t *body = buf + header_size;
        uint32_t bg;
        uint64_t blocks, epoch;
        memcpy(&bg, body + 4, 4);
        memcpy(&blocks, body + 8, 8);
        memcpy(&epoch, body + 56, 8);
        assert_int_equal(bg, g);
        assert_int_equal(epoch, (n - 1) / c);
        assert_int_equal(len, header_size + 256 + blocks * g * 32);
        const uint8_t *ring = body + 256;
        uint64_t checked = 0, moved = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t e = i / c; /* key i went into the generation of epoch i / C */
            if (e + g <= epoch) continue; /* cleared since */
            uint64_t h = key_hash(1, i, 7);
            uint64_t b = bk__range64(h, blocks); /* (h * B) >> 64 */
            uint32_t slot = (uint32_t)(e % g), pos = (uint32_t)((slot + (uint64_t)__builtin_popcountll(b)) % g);
            const uint8_t *block = ring + (b * g + pos) * 32;
            for (int k = 0; k < 8; k++) {
                uint32_t word, bit = ((uint32_t)h * salt[k]) >> 27;
                memcpy(&word, block + 4 * k, 4);
                if (!(word >> bit & 1)) fail_msg("g = %u: key %llu: bit %d of its block unset", g, (unsigned long long)i, k);
            }
            checked++;
            moved += pos != slot;
        }
        assert_true(checked >= (g - 1) * c);
        if (g > 2) assert_true(moved > checked / 2); /* most buckets' rotation is not 0 */
        free(buf);
        bk_aging_free(f);
    }
}

/* docs/FORMAT.md 6.7, body 2, computed here from the saved body: mode + 2 leads, block_bits and k sit
 * at 208 and 212, and the key's block (bucket range(h, B), slot j at block (j + popcount(b)) mod g)
 * holds its first k probes of the blocked engine's 512-bit (salt row 0, top 9 bits) or 1024-bit
 * (salt row 1, top 10 bits) mask. */
static void test_wide_body_layout_as_documented(void **state)
{
    (void)state;
    const double ps[2] = { 0.001, 0.0001 };
    for (int t = 0; t < 2; t++) {
        bk_aging *f = count_filter(5000, ps[t], 0);
        bk_aging_info in;
        assert_int_equal(bk_aging_get_info(f, &in), BK_OK);
        uint64_t c = in.gen_capacity, g = in.generations, n = (2 * g + 3) * c / 2;
        for (uint64_t i = 0; i < n; i++) bk_aging_add_hash(f, key_hash(1, i, 7));
        size_t len;
        uint8_t *buf = save(f, &len);
        uint32_t header_size, mode, bg, bits, k;
        memcpy(&header_size, buf + 24, 4);
        const uint8_t *body = buf + header_size;
        uint64_t blocks, epoch;
        memcpy(&mode, body, 4);
        memcpy(&bg, body + 4, 4);
        memcpy(&blocks, body + 8, 8);
        memcpy(&epoch, body + 56, 8);
        memcpy(&bits, body + 208, 4);
        memcpy(&k, body + 212, 4);
        assert_int_equal(mode, 2); /* a count window in body 2 */
        assert_int_equal(bg, g);
        assert_int_equal(bits, t == 0 ? 512 : 1024);
        assert_true(k >= 1 && k <= 16);
        for (int x = 216; x < 256; x++) assert_int_equal(body[x], 0);
        assert_int_equal(len, header_size + 256 + blocks * g * bits / 8);
        const uint8_t *ring = body + 256;
        const uint32_t *salt = bk__blk_salt[bits == 512 ? 0 : 1];
        unsigned top = bits == 512 ? 23 : 22;
        uint64_t checked = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t e = i / c;
            if (e + g <= epoch) continue;
            uint64_t h = key_hash(1, i, 7);
            uint64_t b = bk__range64(h, blocks);
            uint64_t slot = e % g, pos = (slot + (uint64_t)__builtin_popcountll(b)) % g;
            const uint8_t *block = ring + (b * g + pos) * (bits / 8);
            for (uint32_t q = 0; q < k; q++) {
                uint32_t bit = ((uint32_t)h * salt[q]) >> top;
                if (!(block[bit >> 3] >> (bit & 7) & 1))
                    fail_msg("%u-bit blocks: key %llu: probe %u unset", bits, (unsigned long long)i, q);
            }
            checked++;
        }
        assert_true(checked >= (g - 1) * c);
        free(buf);
        bk_aging_free(f);
    }
}

/* Union of time windows: keys of both hosts, period by period; count windows refuse. */
static void test_union(void **state)
{
    (void)state;
    /* SPLIT256 blocks, then the wide ones */
    for (int wide = 0; wide < 2; wide++) {
        fake_clock ca = { 100000 }, cb = { 100000 };
        bk_aging_options oa = { .seed = 3, .clock = fake_now, .clock_ctx = &ca };
        bk_aging_options ob = { .seed = 3, .clock = fake_now, .clock_ctx = &cb };
        bk_aging *a = NULL, *b = NULL, *other = NULL;
        double p = wide ? 0.0001 : 0.01;
        assert_int_equal(bk_aging_new_time(3000, 30000, p, &oa, &a), BK_OK);
        assert_int_equal(bk_aging_new_time(3000, 30000, p, &ob, &b), BK_OK);
        /* the other block shape, same window and g: not the same geometry */
        oa.generations = bk_aging_generations(a);
        assert_int_equal(bk_aging_new_time(3000, 30000, wide ? 0.01 : 0.0001, &oa, &other), BK_OK);
        assert_int_equal(bk_aging_union(a, other), BK_EINCOMPAT);
        bk_aging_free(other);
        for (uint64_t i = 0; i < 6000; i++) {
            bk_aging_add_hash(a, key_hash(1, i, 3));
            bk_aging_add_hash(b, key_hash(2, i, 3));
            ca.now++;
            cb.now++;
        }
        assert_int_equal(bk_aging_union(a, b), BK_OK);
        /* Keys of the last T ms of both are present. */
        for (uint64_t i = 3000; i < 6000; i++) {
            assert_true(bk_aging_contains_hash(a, key_hash(1, i, 3)));
            assert_true(bk_aging_contains_hash(a, key_hash(2, i, 3)));
        }
        bk_aging *c1 = count_filter(1000, 0.01, 4), *c2 = count_filter(1000, 0.01, 4), *c3 = count_filter(2000, 0.01, 4);
        assert_int_equal(bk_aging_union(c1, c2), BK_ENOTSUP);
        assert_int_equal(bk_aging_union(c1, c3), BK_ENOTSUP);
        assert_int_equal(bk_aging_union(a, c1), BK_EINCOMPAT);
        bk_aging_free(a);
        bk_aging_free(b);
        bk_aging_free(c1);
        bk_aging_free(c2);
        bk_aging_free(c3);
    }
}

/* The golden file of a time window (count windows have theirs in test_persist's list): made with a
 * fixed clock, it must keep loading to the same bytes and the same answers at the same times. */
static void test_golden_time_window(void **state)
{
    (void)state;
    const char *write_dir = getenv("BK_WRITE_GOLDEN");
    char p[512];
    snprintf(p, sizeof p, "%s/golden/aging-time-v1.0.bkf", write_dir ? write_dir : BK_TEST_SOURCE_DIR);
    const uint64_t t0 = UINT64_C(1700000000000), saved_at = t0 + 3 * 60000 + 50000;
    fake_clock clk = { t0 };
    bk_aging_options o = { .seed = 42, .clock = fake_now, .clock_ctx = &clk };
    FILE *fp = fopen(p, "rb");
    if (!fp && write_dir) {
        bk_aging *f = NULL;
        assert_int_equal(bk_aging_new_time(60000, 3000, 0.01, &o, &f), BK_OK);
        for (uint64_t i = 0; i < 500; i++) bk_aging_add(f, tu_make_key(3, i).b, 16); /* aged out when saved */
        clk.now = saved_at - 50000;
        for (uint64_t i = 0; i < 500; i++, clk.now += 100) bk_aging_add(f, tu_make_key(1, i).b, 16);
        clk.now = saved_at;
        bk_filter *h = NULL;
        assert_int_equal(bk_filter_wrap(BK_TYPE_AGING, f, &h), BK_OK);
        assert_int_equal(bk_filter_save_path(h, p), BK_OK);
        bk_filter_free(h);
        fp = fopen(p, "rb");
    }
    if (!fp) fail_msg("missing golden file %s: run test_aging with BK_WRITE_GOLDEN=<tests dir> once", p);
    static uint8_t gold[1 << 20];
    size_t len = fread(gold, 1, sizeof gold, fp);
    fclose(fp);
    bk_filter *g = NULL;
    assert_int_equal(bk_filter_load_buffer(gold, len, BK_LOAD_REQUIRE_CLEAN, &g), BK_OK);
    assert_int_equal(bk_filter_type(g), BK_TYPE_AGING);
    assert_int_equal(bk_filter_seed(g), 42);
    bk_aging *a = bk_filter_get(g, BK_TYPE_AGING);
    clk.now = saved_at;
    bk_aging_set_clock(a, fake_now, &clk);
    assert_int_equal(bk_aging_mode_of(a), BK_AGING_TIME);
    assert_int_equal(bk_aging_window(a), 60000);
    size_t old = 0;
    for (uint64_t i = 0; i < 500; i++) {
        assert_true(bk_filter_contains(g, tu_make_key(1, i).b, 16));
        old += bk_filter_contains(g, tu_make_key(3, i).b, 16);
    }
    assert_true(old <= 20);
    void *again = NULL;
    size_t alen = 0;
    assert_int_equal(bk_filter_save_alloc(g, &again, &alen), BK_OK);
    assert_int_equal(alen, len);
    assert_memory_equal(again, gold, len);
    bk_filter_buffer_free(again);
    /* One window and one period later, every key has aged out. */
    clk.now = saved_at + 60000 + 20000;
    size_t left = 0;
    for (uint64_t i = 0; i < 500; i++) left += bk_filter_contains(g, tu_make_key(1, i).b, 16);
    assert_int_equal(left, 0);
    bk_filter_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizing),
        cmocka_unit_test(test_count_no_false_negatives),
        cmocka_unit_test(test_count_slack),
        cmocka_unit_test(test_count_fpr),
        cmocka_unit_test(test_fpr_by_p),
        cmocka_unit_test(test_time_no_false_negatives),
        cmocka_unit_test(test_time_fpr),
        cmocka_unit_test(test_add_if_absent),
        cmocka_unit_test(test_clock_jump_and_monotonic),
        cmocka_unit_test(test_forms_and_paths_agree),
        cmocka_unit_test(test_batches_match_single_keys),
        cmocka_unit_test(test_stats_and_info),
        cmocka_unit_test(test_advance),
        cmocka_unit_test(test_persist_round_trip),
        cmocka_unit_test(test_body_layout_as_documented),
        cmocka_unit_test(test_wide_body_layout_as_documented),
        cmocka_unit_test(test_union),
        cmocka_unit_test(test_golden_time_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
