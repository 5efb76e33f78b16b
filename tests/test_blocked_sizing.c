/* Blocked sizing: the fast search (closed-form mixture with error bounds, falling back to the summed
 * mixture where the bounds cannot decide) returns exactly the geometry of the search over the summed
 * mixture alone, for both public layouts and the scalable chain's 1024-bit blocks, over a wide grid of
 * (n, p) (n from 1 to 1e10, p from 0.5 to 1e-9; for few blocks, down to 1e-12; n from 10 to 1e10 at p
 * from 1e-10 to 1e-20; the 512-bit layout's smallest geometries down to 1e-30) and at the edges (one
 * block, the largest filter, p next to 1 and far below 1e-9). No cell differs: none is smaller or
 * larger. */
#include "testutil.h"
#include <bloomkit/bloomkit.h>
#include "filters/internal.h"
#include "core/blocked1024.h"
#include "core/hooks.h"

#define LAYOUT_1024 2

static bk_status fast_size(uint64_t n, double p, int code, bk_geometry *g)
{
    return code == LAYOUT_1024 ? bk__blocked1024_size(n, p, g) : bk_blocked_size(n, p, (bk_blocked_layout)code, g);
}

/* Same status; same m and k; the FPR: bk_blocked_size's exactly bk_blocked_fpr's, the 1024-bit and
 * bk_blocked_new's sizing within 1e-6 (it may come from the closed form). */
static void check_same(uint64_t n, double p, int code)
{
    bk_geometry a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    bk_status sa = fast_size(n, p, code, &a), sb = bk__blocked_size_summed(n, p, code, &b);
    double tol = code == LAYOUT_1024 ? 1e-6 * b.fpr : 0;
    if (sa != sb || a.m != b.m || a.k != b.k || fabs(a.fpr - b.fpr) > tol) {
        print_error("layout %d n=%llu p=%.17g: fast %d m=%llu k=%u fpr=%.17g, summed %d m=%llu k=%u fpr=%.17g\n",
                    code, (unsigned long long)n, p, (int)sa, (unsigned long long)a.m, a.k, a.fpr, (int)sb,
                    (unsigned long long)b.m, b.k, b.fpr);
        fail();
    }
    if (code != LAYOUT_1024) { /* what bk_blocked_new sizes with */
        bk_geometry c;
        memset(&c, 0, sizeof c);
        assert_int_equal(bk__blocked_size_mk(n, p, code, &c), sa);
        assert_true(c.m == a.m && c.k == a.k && fabs(c.fpr - a.fpr) <= 1e-6 * a.fpr);
    }
    if (sa == BK_OK) {
        assert_true(a.fpr <= p);
        assert_true(a.n == n && a.bits_per_key == (double)a.m / (double)n);
    }
}

static void grid(int code, const uint64_t *ns, size_t nn, const double *ps, size_t np)
{
    for (size_t i = 0; i < nn; i++)
        for (size_t j = 0; j < np; j++) check_same(ns[i], ps[j], code);
}

static const uint64_t NS[] = { 1, 2, 3, 7, 10, 31, 100, 333, 800, 1000, 1024, 4095, 10000, 54321, 100000,
                               1000000, 3141593, 10000000, 100000000, 1000000000, 3000000000,
                               UINT64_C(10000000000) };
static const double PS[] = { 0.5, 0.3, 0.1, 0.05, 0.02, 0.01, 0.005, 0.001, 3e-4, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9 };

static void split256_grid(void **state)
{
    (void)state;
    grid(BK_BLOCKED_SPLIT256, NS, sizeof NS / sizeof NS[0], PS, sizeof PS / sizeof PS[0]);
}

static void b512_grid(void **state)
{
    (void)state;
    grid(BK_BLOCKED_512, NS, sizeof NS / sizeof NS[0], PS, sizeof PS / sizeof PS[0]);
}

static void b1024_grid(void **state)
{
    (void)state;
    grid(LAYOUT_1024, NS, sizeof NS / sizeof NS[0], PS, sizeof PS / sizeof PS[0]);
}

/* What the scalable chain asks for: capacity0 * 2^i at p * 0.5 * 0.1 * 0.9^(i-1) and similar, and
 * random (n, p) pairs from a fixed seed. */
static void chain_and_random_points(void **state)
{
    (void)state;
    for (int i = 0; i < 24; i++) {
        uint64_t cap = UINT64_C(100) << i;
        double p = 0.01 * 0.5 * 0.1 * pow(0.9, i);
        check_same(cap, p, LAYOUT_1024);
        check_same(cap * 3, 0.001 * 0.5 * pow(0.5, i), LAYOUT_1024);
    }
    uint64_t s = 42;
    for (int i = 0; i < 300; i++) {
        uint64_t n = 1 + tu_splitmix(&s) % 50000000;
        double p = exp(-0.5 - (double)(tu_splitmix(&s) % 1000000) / 1000000.0 * 15.0);
        check_same(n, p, (int)(i % 3));
    }
    /* n log-uniform in [1, 1e10], p log-uniform in [1e-9, 0.5] */
    for (int i = 0; i < 300; i++) {
        double u = (double)(tu_splitmix(&s) % 1000000) / 1000000.0, v = (double)(tu_splitmix(&s) % 1000000) / 1000000.0;
        check_same((uint64_t)llround(pow(10.0, 10.0 * u)), 0.5 * pow(2e-9, v), (int)(i % 3));
    }
}

/* Few blocks (the binomial mixture, where the best k is furthest from the many-key one), p down to
 * 1e-12, and cells where the closed form's bound settles the fewest comparisons. */
static void few_blocks_and_low_p(void **state)
{
    (void)state;
    uint64_t s = 7;
    for (int i = 0; i < 300; i++) {
        double u = (double)(tu_splitmix(&s) % 1000000) / 1000000.0, v = (double)(tu_splitmix(&s) % 1000000) / 1000000.0;
        check_same((uint64_t)llround(pow(10.0, 4.0 * u)), 0.5 * pow(2e-12, v), (int)(i % 3));
    }
    static const struct {
        int code;
        uint64_t n;
        double p;
    } cells[] = { { 1, 466, 6.57e-6 }, { 1, 276, 3.08e-9 }, { 1, 1032, 8.27e-9 }, { 1, 47, 0.000646 },
                  { 1, 2, 1.02e-8 },   { 1, 1119, 1.65e-5 }, { 2, 73, 2.64e-6 },  { 2, 168, 1.78e-5 },
                  { 2, 3745, 2.55e-8 }, { 2, 50978, 3.45e-8 }, { 2, 17783, 1.79e-5 }, { 0, 2433, 1.19e-9 } };
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) check_same(cells[i].n, cells[i].p, cells[i].code);
}

/* Far below 1e-9, down to 1e-20, where the closed form's terms cancel to no digits at all: every
 * layout against the summed search. */
static void very_low_p(void **state)
{
    (void)state;
    static const uint64_t ns[] = { 10, 100, 1000, 54321, 100000, 10000000, 1000000000 };
    static const double ps[] = { 1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16, 1e-17, 1e-18, 1e-20 };
    const size_t nn = sizeof ns / sizeof ns[0], np = sizeof ps / sizeof ps[0];
    grid(BK_BLOCKED_SPLIT256, ns, nn, ps, np);
    grid(LAYOUT_1024, ns, nn, ps, np);
    grid(BK_BLOCKED_512, ns, nn, ps, np);
    uint64_t s = 11;
    for (int i = 0; i < 90; i++) {
        double u = (double)(tu_splitmix(&s) % 1000000) / 1000000.0, v = (double)(tu_splitmix(&s) % 1000000) / 1000000.0;
        const int code = i % 3;
        check_same((uint64_t)llround(pow(10.0, 1.0 + 9.0 * u)), 1e-10 * pow(1e-10, v), code);
    }
}

/* The 512-bit layout far below 1e-12 (its in-block FPR from the distribution of the bits set where the
 * weights' alternating sum cancels: blocked_tables.c), where a filter's size depends on the digits of
 * FPRs of 1e-17 to 1e-30. The geometry recorded is the smallest whose FPR so computed is within p:
 * the same as the search over the summed mixture alone, within p, and one block fewer (at its best k)
 * is over p; a count too big for the largest filter is refused. (When that FPR was the alternating sum,
 * its rounding, some 1e-16 in absolute terms, made these geometries larger: 10 keys at 1e-17 took 24
 * blocks at k = 15 where 19 at k = 16 hold them within p, 11092 keys at 4.3e-20 three times the
 * blocks.) */
static void b512_floor(void **state)
{
    (void)state;
    static const struct {
        uint64_t n;
        double p;
        uint64_t m; /* 0: refused as too big */
        uint32_t k;
    } cells[] = {
        { 10, 1e-17, 9728, 16 },
        { 100, 1e-17, 118784, 16 },
        { 1000, 1e-17, 1210880, 16 },
        { 54321, 1e-17, 65908736, 16 },
        { 100000, 1e-17, 121331712, 16 },
        { 10000000, 1e-17, UINT64_C(12133168640), 16 },
        { 10, 1e-18, 15360, 16 },
        { 100, 1e-18, 187392, 16 },
        { 1000, 1e-18, 1904128, 16 },
        { 54321, 1e-18, 103632384, 16 },
        { 100000, 1e-18, 190777344, 16 },
        { 10000000, 1e-18, UINT64_C(19077712896), 16 },
        { UINT64_C(1000000000), 1e-18, UINT64_C(1907771287040), 16 },
        { 10, 1e-19, 25600, 16 },
        { 100, 1e-19, 308224, 16 },
        { 1000, 1e-19, 3134464, 16 },
        { 54321, 1e-19, 170252800, 16 },
        { 100000, 1e-19, 313419776, 16 },
        { 10000000, 1e-19, UINT64_C(31341934080), 16 },
        { 629, 1.0202579792597404e-17, 757760, 16 },
        { 196515, 5.9772304468869881e-18, 262902784, 16 },
        { 92774, 1.7086377607330069e-16, 67805696, 16 },
        { 10, 2.2962015194975462e-16, 5120, 16 },
        { 11092, 4.3134026419528621e-20, 42192384, 16 },
        { 10, 1e-30, UINT64_C(3767460864), 16 },
        { 1000, 1e-30, UINT64_C(376746070016), 16 },
        { 10000000, 1e-30, 0, 0 },
        { 10, 1e-60, 0, 0 },
        { 1000, 1e-100, 0, 0 },
        { 1, 1e-300, 0, 0 },
    };
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        bk_geometry a, c;
        memset(&a, 0, sizeof a);
        memset(&c, 0, sizeof c);
        check_same(cells[i].n, cells[i].p, BK_BLOCKED_512);
        bk_status sa = bk_blocked_size(cells[i].n, cells[i].p, BK_BLOCKED_512, &a);
        bk_status sc = bk__blocked_size_mk(cells[i].n, cells[i].p, BK_BLOCKED_512, &c);
        if (cells[i].m == 0) {
            assert_int_equal(sa, BK_ETOOBIG);
            assert_int_equal(sc, BK_ETOOBIG);
            continue;
        }
        if (sa != BK_OK || a.m != cells[i].m || a.k != cells[i].k) {
            print_error("n=%llu p=%.17g: m=%llu k=%u, recorded m=%llu k=%u\n", (unsigned long long)cells[i].n,
                        cells[i].p, (unsigned long long)a.m, a.k, (unsigned long long)cells[i].m, cells[i].k);
            fail();
        }
        assert_int_equal(sc, BK_OK);
        assert_true(c.m == a.m && c.k == a.k);
        assert_true(a.fpr == bk_blocked_fpr(a.m, a.n, BK_BLOCKED_512, a.k) && a.fpr <= cells[i].p);
        if (a.m > 512) assert_true(bk_blocked_fpr(a.m - 512, a.n, BK_BLOCKED_512, 0) > cells[i].p);
    }
}

/* The thread's memo of its last sizings answers exactly as the search: repeated cells, cells that
 * push others out of it, a refused one, with the memo on and off. */
static void memo(void **state)
{
    (void)state;
    static const struct {
        int code;
        uint64_t n;
        double p;
    } cells[] = { { 0, 1000, 0.01 }, { 1, 1000, 0.01 }, { 2, 1000, 0.01 }, { 1, 1000, 0.001 },
                  { 1, 1001, 0.01 }, { 2, UINT64_C(1) << 40, 1e-6 }, { 1, 5, 0.3 } };
    const size_t nc = sizeof cells / sizeof cells[0];
    bk_geometry want[sizeof cells / sizeof cells[0]];
    bk_status wst[sizeof cells / sizeof cells[0]];
    bk__blocked_memo(false);
    for (size_t i = 0; i < nc; i++) {
        memset(&want[i], 0, sizeof want[i]);
        wst[i] = fast_size(cells[i].n, cells[i].p, cells[i].code, &want[i]);
    }
    bk__blocked_memo(true);
    for (int round = 0; round < 3; round++)
        for (size_t j = 0; j < 2 * nc; j++) {
            size_t i = (j * 3 + (size_t)round) % nc;
            bk_geometry g;
            memset(&g, 0, sizeof g);
            bk_status s = fast_size(cells[i].n, cells[i].p, cells[i].code, &g);
            assert_int_equal(s, wst[i]);
            if (s == BK_OK)
                assert_true(g.m == want[i].m && g.k == want[i].k && g.fpr == want[i].fpr && g.n == want[i].n &&
                            g.bits_per_key == want[i].bits_per_key);
            if (s == BK_OK && cells[i].code != LAYOUT_1024) { /* the other entry point, its own memo entries */
                bk_geometry c;
                assert_int_equal(bk__blocked_size_mk(cells[i].n, cells[i].p, cells[i].code, &c), BK_OK);
                assert_true(c.m == want[i].m && c.k == want[i].k);
            }
        }
}

/* Too big for the largest filter, and p at the ends. */
static void edges(void **state)
{
    (void)state;
    check_same(UINT64_C(1) << 40, 1e-6, BK_BLOCKED_512);
    check_same(UINT64_C(1) << 36, 0.01, LAYOUT_1024);
    check_same(5, 0.9999, BK_BLOCKED_SPLIT256);
    check_same(5, 0.9999, LAYOUT_1024);
    check_same(1, 1e-300, BK_BLOCKED_512);
    bk_geometry g;
    assert_int_equal(bk_blocked_size(0, 0.01, BK_BLOCKED_512, &g), BK_EINVAL);
    assert_int_equal(bk_blocked_size(10, 1.0, BK_BLOCKED_512, &g), BK_EINVAL);
    assert_int_equal(bk_blocked_size(10, 0.0, BK_BLOCKED_SPLIT256, &g), BK_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split256_grid),
        cmocka_unit_test(b512_grid),
        cmocka_unit_test(b1024_grid),
        cmocka_unit_test(chain_and_random_points),
        cmocka_unit_test(few_blocks_and_low_p),
        cmocka_unit_test(very_low_p),
        cmocka_unit_test(b512_floor),
        cmocka_unit_test(memo),
        cmocka_unit_test(edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
