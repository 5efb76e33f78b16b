/*
 * Probe quality of the Bloom family on small filters: the measured FPR of many small classic,
 * partitioned, counting and scalable filters (fixed seeds, aggregated so the measurement is tight)
 * must match the exact formula. A plain increment (y += i) fails this: with multiply-shift only the
 * high bits of a probe value choose its bit, a small i leaves them alone, and the probes of a small
 * filter correlate (n = 100 at 0.1% measured 0.124%, 24% over the formula, well outside TOL). A
 * constant large increment is not enough for the partitioned layout (1.36x there: see bk__probe_step
 * in src/core/base.h).
 */
#include "testutil.h"
#include <bloomkit/bloomkit.h>
#include "filters/internal.h"
#include "core/blocked1024.h"

/* Relative tolerance of measured / exact. Each case expects about 5,000 false positives (binomial
 * sd 1.4%); the exact formula (bits treated as independent) sits within about 1% of the true mean at
 * these sizes. */
#define TOL 0.06
#define QUERIES_PER_CASE 5000000u

typedef struct { uint64_t fp, queries; double expected; } tally;

static void report(const char *what, const tally *t)
{
    double m = (double)t->fp / (double)t->queries, e = t->expected / (double)t->queries;
    printf("  %-40s measured %.5f%%  exact %.5f%%  ratio %.3f\n", what, 100 * m, 100 * e, m / e);
}

/* Keys: 8-byte integers, odd ones added, even ones (offset) queried, as bench/small_fpr.c. */
static uint64_t added_key(uint64_t i) { return 2 * i + 1; }
static uint64_t absent_key(uint64_t i) { return 2 * i + 2 + (UINT64_C(1) << 40); }

static tally bloom_case(uint64_t n, double p, bk_layout layout)
{
    tally t = { 0, 0, 0 };
    const uint64_t filters = n <= 100 ? 500 : 100, q = QUERIES_PER_CASE / filters;
    for (uint64_t s = 0; s < filters; s++) {
        bk_bloom_options o = { .layout = layout, .seed = s + 1 };
        bk_bloom *f;
        assert_int_equal(bk_bloom_new(n, p, &o, &f), BK_OK);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t k = added_key(i);
            assert_int_equal(bk_bloom_add(f, &k, 8), BK_OK);
        }
        for (uint64_t i = 0; i < n; i++) {
            uint64_t k = added_key(i);
            assert_true(bk_bloom_contains(f, &k, 8));
        }
        for (uint64_t i = 0; i < q; i++) {
            uint64_t k = absent_key(i);
            t.fp += bk_bloom_contains(f, &k, 8);
        }
        uint64_t m = bk_bloom_bits(f);
        uint32_t kk = bk_bloom_k(f);
        t.expected += (double)q * (layout == BK_LAYOUT_PARTITIONED ? bk_bloom_fpr_partitioned(m, n, kk)
                                                                    : bk_bloom_fpr_exact(m, n, kk));
        t.queries += q;
        bk_bloom_free(f);
    }
    return t;
}

static void assert_tally(const char *what, const tally *t)
{
    report(what, t);
    TU_ASSERT_WITHIN((double)t->fp, t->expected, TOL);
}

static void classic_small(void **state)
{
    (void)state;
    tally t = bloom_case(100, 0.001, BK_LAYOUT_STANDARD);
    assert_tally("classic n=100 p=0.1%", &t);
    t = bloom_case(1000, 0.001, BK_LAYOUT_STANDARD);
    assert_tally("classic n=1000 p=0.1%", &t);
    t = bloom_case(100, 0.01, BK_LAYOUT_STANDARD);
    assert_tally("classic n=100 p=1%", &t);
    t = bloom_case(100, 0.001, BK_LAYOUT_PARTITIONED);
    assert_tally("partitioned n=100 p=0.1%", &t);
}

static tally counting_case(uint64_t n, double p)
{
    tally t = { 0, 0, 0 };
    const uint64_t filters = 500, q = QUERIES_PER_CASE / filters;
    for (uint64_t s = 0; s < filters; s++) {
        bk_counting_options o = { .counter_bits = 4, .seed = s + 1 };
        bk_counting *f;
        assert_int_equal(bk_counting_new(n, p, &o, &f), BK_OK);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t k = added_key(i);
            assert_int_equal(bk_counting_add(f, &k, 8), BK_OK);
        }
        for (uint64_t i = 0; i < q; i++) {
            uint64_t k = absent_key(i);
            t.fp += bk_counting_contains(f, &k, 8);
        }
        t.expected += (double)q * bk_bloom_fpr_exact(bk_counting_counters(f), n, bk_counting_k(f));
        t.queries += q;
        bk_counting_free(f);
    }
    return t;
}

static void counting_small(void **state)
{
    (void)state;
    tally t = counting_case(100, 0.001);
    assert_tally("counting n=100 p=0.1%", &t);
}

/* Chains from capacity 100 grown to 700 keys (layers of 100, 200, 400): the expected FPR of a chain
 * is 1 - prod(1 - exact(m_i, count_i, k_i)) over its layers, with the exact formula of the layers'
 * kind (classic: flags BK_SCALABLE_CLASSIC; blocked: flags 0). */
static tally scalable_case(double p, uint32_t flags)
{
    tally t = { 0, 0, 0 };
    const uint64_t filters = 300, q = QUERIES_PER_CASE / filters, n = 700;
    for (uint64_t s = 0; s < filters; s++) {
        bk_scalable_options o = bk_scalable_default_options();
        o.seed = s + 1;
        o.flags = flags;
        bk_scalable *f;
        assert_int_equal(bk_scalable_new(100, p, &o, &f), BK_OK);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t k = added_key(i);
            assert_int_equal(bk_scalable_add(f, &k, 8), BK_OK);
        }
        assert_int_equal(bk_scalable_filters(f), 3);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t k = added_key(i);
            assert_true(bk_scalable_contains(f, &k, 8));
        }
        uint64_t batch[64];
        uint8_t res[64];
        for (uint64_t i = 0; i < q; i += 64) {
            size_t c = q - i < 64 ? (size_t)(q - i) : 64;
            /* half single-key, half batch queries: both paths are measured */
            if ((i / 64) % 2 == 0) {
                for (size_t j = 0; j < c; j++) {
                    uint64_t k = absent_key(i + j);
                    t.fp += bk_scalable_contains(f, &k, 8);
                }
            } else {
                for (size_t j = 0; j < c; j++) {
                    uint64_t k = absent_key(i + j);
                    batch[j] = bk_hash64(&k, 8, s + 1);
                }
                size_t got = TU_HITS(bk_scalable_contains_hashes, f, batch, c, res);
                for (size_t j = 0; j < c; j++)
                    assert_int_equal(res[j], bk_scalable_contains_hash(f, batch[j]));
                t.fp += got;
            }
        }
        double pass = 1.0;
        for (uint32_t l = 0; l < bk_scalable_filters(f); l++) {
            bk_scalable_layer ls;
            assert_int_equal(bk_scalable_get_layer(f, l, &ls), BK_OK);
            pass *= 1.0 - ((flags & BK_SCALABLE_CLASSIC) ? bk_bloom_fpr_exact(ls.bits, ls.count, ls.k)
                                                          : bk__blocked1024_fpr(ls.bits, ls.count, ls.k));
        }
        t.expected += (double)q * (1.0 - pass);
        t.queries += q;
        bk_scalable_free(f);
    }
    return t;
}

static void scalable_small(void **state)
{
    (void)state;
    tally t = scalable_case(0.001, BK_SCALABLE_CLASSIC);
    assert_tally("scalable 100 -> 700 keys p=0.1%", &t);
    /* the default blocked sub-filters against the blocked mixture formula (at 1%, where a 100-key
     * layer is more than one block) */
    t = scalable_case(0.01, 0);
    assert_tally("scalable blocked 100 -> 700 keys p=1%", &t);
    t = scalable_case(0.001, 0);
    assert_tally("scalable blocked 100 -> 700 keys p=0.1%", &t);
}

/* The scalable batch query (a pipeline that prefetches the big layers) gives exactly the single-key
 * answers, for a classic chain and for a blocked chain, on a chain with layers
 * past the prefetch threshold; no false negatives; batch sizes that do not fill the pipeline. */
static void scalable_batch_equals_single(void **state)
{
    (void)state;
    const uint64_t n = 300000, q = 200000;
    uint64_t *h = malloc((n + q) * sizeof *h);
    uint8_t *res = malloc(n + q);
    for (int s = 0; s < 2; s++) {
        bk_scalable_options o = bk_scalable_default_options();
        o.seed = 5;
        const bool cls = s == 0;
        o.flags = cls ? BK_SCALABLE_CLASSIC : 0;
        bk_scalable *f;
        assert_int_equal(bk_scalable_new(1000, 0.01, &o, &f), BK_OK);
        for (uint64_t i = 0; i < n + q; i++) {
            uint64_t k = i < n ? added_key(i) : absent_key(i);
            h[i] = bk_hash64(&k, 8, 5);
        }
        size_t done = 0;
        assert_int_equal(bk_scalable_add_hashes(f, h, n, &done), BK_OK);
        assert_int_equal(done, n);
        assert_true(bk_scalable_filters(f) >= 8);
        size_t present = 0;
        for (uint64_t i = 0; i < n + q;) {
            size_t c = (size_t)(i % 7 == 0 ? 1 : i % 5 == 0 ? 3 : 1000);
            if (c > n + q - i) c = (size_t)(n + q - i);
            present += TU_HITS(bk_scalable_contains_hashes, f, h + i, c, res + i);
            i += c;
        }
        size_t single = 0;
        for (uint64_t i = 0; i < n + q; i++) {
            bool r = bk_scalable_contains_hash(f, h[i]);
            if (r != (res[i] != 0)) fail_msg("scheme %d key %llu: batch %d, single %d", s, (unsigned long long)i, res[i], r);
            if (i < n) assert_true(r);
            single += r;
        }
        assert_int_equal(present, single);
        print_message("scheme %d (%s): %u sub-filters, %.1f bits/key, absent-key FPR %.4f%%\n", s,
                      cls ? "classic" : "blocked", bk_scalable_filters(f), 8.0 * (double)bk_scalable_bytes(f) / (double)n,
                      100.0 * (double)(single - n) / (double)q);
        bk_scalable_free(f);
    }
    free(h);
    free(res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classic_small),
        cmocka_unit_test(counting_small),
        cmocka_unit_test(scalable_small),
        cmocka_unit_test(scalable_batch_equals_single),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
