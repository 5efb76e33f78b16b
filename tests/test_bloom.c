#include "testutil.h"
#include <bloomkit/bloomkit.h>

#define N 1000000

static bk_bloom *make(uint64_t n, double p, bk_layout layout, uint64_t seed)
{
    bk_bloom_options o = { .layout = layout, .seed = seed };
    bk_bloom *f = NULL;
    assert_int_equal(bk_bloom_new(n, p, &o, &f), BK_OK);
    assert_non_null(f);
    return f;
}

/* Fraction of `trials` never-inserted keys (set 99) reported present. */
static double measure_fpr(const bk_bloom *f, uint64_t trials)
{
    uint64_t fp = 0;
    for (uint64_t i = 0; i < trials; i++) {
        tu_key k = tu_make_key(99, i);
        fp += bk_bloom_contains(f, k.b, sizeof k.b);
    }
    return (double)fp / (double)trials;
}

static void no_false_negatives(void **state)
{
    (void)state;
    for (int layout = 0; layout <= 1; layout++) {
        /* bytes keys */
        bk_bloom *f = make(N, 0.01, (bk_layout)layout, 1);
        for (uint64_t i = 0; i < N; i++) {
            tu_key k = tu_make_key(1, i);
            assert_int_equal(bk_bloom_add(f, k.b, sizeof k.b), BK_OK);
        }
        for (uint64_t i = 0; i < N; i++) {
            tu_key k = tu_make_key(1, i);
            if (!bk_bloom_contains(f, k.b, sizeof k.b)) fail_msg("false negative: layout %d key %llu", layout, (unsigned long long)i);
        }
        assert_int_equal(bk_bloom_count(f), N);
        bk_bloom_free(f);
        /* pre-hashed keys, single and batch */
        f = make(N, 0.01, (bk_layout)layout, 1);
        uint64_t st = 42;
        uint64_t *h = malloc(N * sizeof *h);
        uint8_t *res = malloc(N);
        for (uint64_t i = 0; i < N; i++) h[i] = tu_splitmix(&st);
        for (uint64_t i = 0; i < N / 2; i++) bk_bloom_add_hash(f, h[i]);
        assert_int_equal(bk_bloom_add_hashes(f, h + N / 2, N - N / 2), BK_OK);
        for (uint64_t i = 0; i < N; i++) assert_true(bk_bloom_contains_hash(f, h[i]));
        assert_int_equal(TU_HITS(bk_bloom_contains_hashes, f, h, N, res), N);
        for (uint64_t i = 0; i < N; i++) assert_int_equal(res[i], 1);
        free(h);
        free(res);
        bk_bloom_free(f);
    }
}

static void batch_bytes_forms_match_single(void **state)
{
    (void)state;
    enum { M = 10000 };
    bk_bloom *a = make(M, 0.01, BK_LAYOUT_STANDARD, 5), *b = make(M, 0.01, BK_LAYOUT_STANDARD, 5);
    static tu_key keys[M];
    const void *ptrs[M];
    size_t lens[M];
    for (int i = 0; i < M; i++) {
        keys[i] = tu_make_key(3, (uint64_t)i);
        ptrs[i] = keys[i].b;
        lens[i] = (size_t)(i % 17); /* prefixes of various lengths, including the empty key */
        bk_bloom_add(a, ptrs[i], lens[i]);
    }
    assert_int_equal(bk_bloom_add_many(b, ptrs, lens, M), BK_OK);
    size_t la, lb;
    const uint8_t *da = bk_bloom_data(a, &la), *db = bk_bloom_data(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    static uint8_t res[M];
    assert_int_equal(TU_HITS(bk_bloom_contains_many, b, ptrs, lens, M, res), M);
    bk_bloom_free(a);
    bk_bloom_free(b);
}

static void fpr_matches_target(void **state)
{
    (void)state;
    const double ps[] = { 0.1, 0.01, 0.001 };
    for (int layout = 0; layout <= 1; layout++) {
        for (size_t i = 0; i < 3; i++) {
            bk_bloom *f = make(N, ps[i], (bk_layout)layout, 7);
            for (uint64_t j = 0; j < N; j++) {
                tu_key k = tu_make_key(2, j);
                bk_bloom_add(f, k.b, sizeof k.b);
            }
            double fpr = measure_fpr(f, N);
            bk_stats st;
            bk_bloom_stats(f, &st);
            print_message("layout %d p=%g measured %.5f predicted-now %.5f\n", layout, ps[i], fpr, st.fpr_now);
            /* the sizing rounds k, so the real target is the geometry's exact FPR, within 15% of p */
            TU_ASSERT_WITHIN(fpr, ps[i], 0.15);
            TU_ASSERT_WITHIN(st.fpr_now, fpr, 0.15);
            bk_bloom_free(f);
        }
    }
}

static void fpr_matches_exact_formula_for_hand_picked_geometry(void **state)
{
    (void)state;
    /* m = 2^20, k = 4, n = 150,000: far from optimal, exact FPR = 0.0925... */
    const uint64_t m = 1 << 20, n = 150000;
    const uint32_t k = 4;
    bk_bloom *f = NULL;
    assert_int_equal(bk_bloom_new_mk(m, k, n, NULL, &f), BK_OK);
    for (uint64_t j = 0; j < n; j++) {
        tu_key key = tu_make_key(4, j);
        bk_bloom_add(f, key.b, sizeof key.b);
    }
    double expect = bk_bloom_fpr_exact(m, n, k);
    TU_ASSERT_WITHIN(measure_fpr(f, N), expect, 0.15);
    bk_bloom_free(f);
}

static void union_is_bit_identical(void **state)
{
    (void)state;
    for (int layout = 0; layout <= 1; layout++) {
        bk_bloom *a = make(100000, 0.01, (bk_layout)layout, 9), *b = make(100000, 0.01, (bk_layout)layout, 9),
                 *all = make(100000, 0.01, (bk_layout)layout, 9);
        for (uint64_t i = 0; i < 100000; i++) {
            tu_key k = tu_make_key(5, i);
            bk_bloom_add(i % 3 ? a : b, k.b, sizeof k.b);
            bk_bloom_add(all, k.b, sizeof k.b);
        }
        assert_int_equal(bk_bloom_union(a, b), BK_OK);
        size_t la, lall;
        const uint8_t *da = bk_bloom_data(a, &la), *dall = bk_bloom_data(all, &lall);
        assert_int_equal(la, lall);
        assert_memory_equal(da, dall, la);
        TU_ASSERT_WITHIN((double)bk_bloom_count(a), 100000, 0.05);

        /* intersection with a filter of a subset: every subset key survives */
        bk_bloom *sub = make(100000, 0.01, (bk_layout)layout, 9);
        for (uint64_t i = 0; i < 1000; i++) {
            tu_key k = tu_make_key(5, i);
            bk_bloom_add(sub, k.b, sizeof k.b);
        }
        assert_int_equal(bk_bloom_intersect(sub, all), BK_OK);
        for (uint64_t i = 0; i < 1000; i++) {
            tu_key k = tu_make_key(5, i);
            assert_true(bk_bloom_contains(sub, k.b, sizeof k.b));
        }
        bk_bloom_free(a);
        bk_bloom_free(b);
        bk_bloom_free(all);
        bk_bloom_free(sub);
    }
}

static void union_refuses_incompatible(void **state)
{
    (void)state;
    bk_bloom *a = make(1000, 0.01, BK_LAYOUT_STANDARD, 1);
    bk_bloom *others[4];
    others[0] = make(1000, 0.01, BK_LAYOUT_STANDARD, 2);    /* seed */
    others[1] = make(2000, 0.01, BK_LAYOUT_STANDARD, 1);    /* m */
    others[2] = make(1000, 0.01, BK_LAYOUT_PARTITIONED, 1); /* layout */
    assert_int_equal(bk_bloom_new_mk(bk_bloom_bits(a), 3, 1000, &(bk_bloom_options){ .layout = 0, .seed = 1 }, &others[3]), BK_OK);
    bk_bloom_add(a, "x", 1);
    size_t len;
    const uint8_t *d = bk_bloom_data(a, &len);
    uint8_t *before = malloc(len);
    memcpy(before, d, len);
    for (int i = 0; i < 4; i++) {
        bk_bloom_add(others[i], "y", 1);
        assert_int_equal(bk_bloom_union(a, others[i]), BK_EINCOMPAT);
        assert_int_equal(bk_bloom_intersect(a, others[i]), BK_EINCOMPAT);
        assert_memory_equal(bk_bloom_data(a, NULL), before, len);
        assert_int_equal(bk_bloom_count(a), 1);
        bk_bloom_free(others[i]);
    }
    free(before);
    bk_bloom_free(a);
}

static void cardinality_estimate(void **state)
{
    (void)state;
    for (int layout = 0; layout <= 1; layout++) {
        bk_bloom *f = make(N, 0.01, (bk_layout)layout, 3);
        for (uint64_t i = 0; i < N / 2; i++) {
            tu_key k = tu_make_key(6, i);
            for (int rep = 0; rep < 3; rep++) bk_bloom_add(f, k.b, sizeof k.b); /* duplicates: no new bits */
        }
        bk_stats st;
        bk_bloom_stats(f, &st);
        TU_ASSERT_WITHIN(st.est_cardinality, N / 2, 0.05);
        assert_int_equal(st.count, 3 * N / 2);
        assert_true(st.saturated); /* count passed capacity (duplicates) */
        assert_true(st.fill_ratio > 0.25 && st.fill_ratio < 0.35);
        assert_int_equal(st.type, BK_TYPE_BLOOM);
        assert_int_equal(st.k, 7);
        bk_bloom_clear(f);
        bk_bloom_stats(f, &st);
        assert_int_equal(st.count, 0);
        assert_true(st.fill_ratio == 0.0);
        assert_false(st.saturated);
        bk_bloom_free(f);
    }
}

/* Bit i of the filter's words (bk_bloom_data is the words in memory order). */
static unsigned bit_at(const uint8_t *data, uint64_t i)
{
    uint64_t w;
    memcpy(&w, data + (i >> 6) * 8, sizeof w);
    return (unsigned)(w >> (i & 63)) & 1;
}

/* The fill ratio and, for the partitioned layout, the per-slice FPR product, against a bit-by-bit
 * count: geometries whose slices start and end inside words, inside one word, and on word edges. */
static void stats_count_every_bit(void **state)
{
    (void)state;
    static const struct { uint64_t m; uint32_t k; } g[] = {
        { 100, 7 }, { 448, 7 }, { 1000, 3 }, { 4096, 4 }, { 99991, 7 }, { 640, 10 }, { 63, 1 },
    };
    for (int layout = 0; layout <= 1; layout++) {
        for (size_t gi = 0; gi < sizeof g / sizeof g[0]; gi++) {
            bk_bloom_options o = { .layout = (bk_layout)layout, .seed = 5 };
            bk_bloom *f = NULL;
            assert_int_equal(bk_bloom_new_mk(g[gi].m, g[gi].k, 0, &o, &f), BK_OK);
            uint64_t m = bk_bloom_bits(f), keys = m / 12 + 1;
            for (uint64_t i = 0; i < keys; i++) bk_bloom_add(f, &i, sizeof i);
            size_t len;
            const uint8_t *data = bk_bloom_data(f, &len);
            uint64_t set = 0;
            double product = 1.0;
            const uint64_t slice = layout ? m / g[gi].k : m;
            for (uint64_t s = 0; s < m / slice; s++) {
                uint64_t c = 0;
                for (uint64_t b = s * slice; b < (s + 1) * slice; b++) c += bit_at(data, b);
                set += c;
                product *= (double)c / (double)slice;
            }
            bk_stats st;
            bk_bloom_stats(f, &st);
            assert_true(st.fill_ratio == (double)set / (double)m);
            if (layout)
                TU_ASSERT_WITHIN(st.fpr_now, product, 1e-12);
            else
                TU_ASSERT_WITHIN(st.fpr_now, pow((double)set / (double)m, g[gi].k), 1e-12);
            bk_bloom_free(f);
        }
    }
}

static void saturation_flag(void **state)
{
    (void)state;
    bk_bloom *f = make(1000, 0.01, BK_LAYOUT_STANDARD, 0);
    bk_stats st;
    /* at 90% of capacity: fine (at exactly capacity the fill sits at the threshold, either side) */
    for (uint64_t i = 0; i < 900; i++) bk_bloom_add(f, &i, sizeof i);
    bk_bloom_stats(f, &st);
    assert_false(st.saturated);
    for (uint64_t i = 900; i < 3000; i++) bk_bloom_add(f, &i, sizeof i);
    bk_bloom_stats(f, &st);
    assert_true(st.saturated);
    assert_true(st.fill_ratio > 0.5);
    /* fill alone: the same bits with a count that says nothing (a union's estimate, say) */
    bk_bloom *g = NULL;
    assert_int_equal(bk_bloom_new_mk(bk_bloom_bits(f), bk_bloom_k(f), 100000, NULL, &g), BK_OK);
    for (uint64_t i = 0; i < 3000; i++) bk_bloom_add(g, &i, sizeof i);
    bk_bloom_stats(g, &st);
    assert_true(st.count < st.capacity);
    assert_true(st.saturated);
    bk_bloom_free(g);
    bk_bloom_free(f);
}

static void bad_input(void **state)
{
    (void)state;
    bk_bloom *f = (bk_bloom *)0x1;
    assert_int_equal(bk_bloom_new(0, 0.01, NULL, &f), BK_EINVAL);
    assert_null(f); /* nothing half-made */
    assert_int_equal(bk_bloom_new(10, 0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_bloom_new(10, -1, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_bloom_new(10, 1, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_bloom_new(10, NAN, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_bloom_new(10, 0.01, NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_bloom_new(10, 0.01, &(bk_bloom_options){ .layout = (bk_layout)7, .seed = 0 }, &f), BK_EINVAL);
    assert_int_equal(bk_bloom_new(UINT64_MAX, 0.01, NULL, &f), BK_ETOOBIG);
    assert_int_equal(bk_bloom_new((uint64_t)1e12, 1e-9, NULL, &f), BK_ETOOBIG);
    assert_int_equal(bk_bloom_new_mk(0, 3, 0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_bloom_new_mk(1000, 0, 0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_bloom_new_mk(1000, BK_MAX_K + 1, 0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_bloom_new_mk(UINT64_MAX, 3, 0, NULL, &f), BK_ETOOBIG);
    assert_int_equal(bk_bloom_new_mk(BK_MAX_FILTER_BYTES * 8 + 1, 3, 0, NULL, &f), BK_ETOOBIG);
    assert_null(f);
    assert_int_equal(bk_bloom_add(NULL, "x", 1), BK_EINVAL);
    assert_int_equal(bk_bloom_add_hash(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_bloom_add_many(NULL, NULL, NULL, 0), BK_EINVAL);
    assert_int_equal(bk_bloom_union(NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_bloom_clone(NULL, &f), BK_EINVAL);
    bk_bloom_free(NULL);

    assert_int_equal(bk_bloom_new(100, 0.01, NULL, &f), BK_OK);
    assert_int_equal(bk_bloom_add(f, NULL, 3), BK_EINVAL);
    assert_int_equal(bk_bloom_count(f), 0);
    assert_int_equal(bk_bloom_add(f, NULL, 0), BK_OK); /* the empty key is a key */
    assert_true(bk_bloom_contains(f, NULL, 0));
    assert_true(bk_bloom_contains(f, "", 0));
    bk_bloom *c = NULL;
    assert_int_equal(bk_bloom_clone(f, &c), BK_OK);
    assert_true(bk_bloom_contains(c, "", 0));
    assert_int_equal(bk_bloom_count(c), 1);
    bk_bloom_free(c);
    bk_bloom_free(f);
}

static void large_filter_past_2_32_bits(void **state)
{
    (void)state;
    /* 2^33 bits = 1 GiB: probes must reach the upper half (no 32-bit truncation). */
    bk_bloom *f = NULL;
    assert_int_equal(bk_bloom_new_mk(UINT64_C(1) << 33, 3, 0, NULL, &f), BK_OK);
    for (uint64_t i = 0; i < 20000; i++) bk_bloom_add(f, &i, sizeof i);
    size_t len;
    const uint8_t *d = bk_bloom_data(f, &len);
    assert_int_equal(len, (size_t)1 << 30);
    size_t upper = 0;
    for (size_t i = len / 2; i < len; i += 8) {
        uint64_t w;
        memcpy(&w, d + i, 8);
        upper += (size_t)__builtin_popcountll(w);
    }
    assert_true(upper > 20000); /* about half of the 60,000 set bits */
    for (uint64_t i = 0; i < 20000; i++) assert_true(bk_bloom_contains(f, &i, sizeof i));
    bk_bloom_free(f);
}

/* The one-key query and insert have a portable loop and, on x86 with BMI2, a second one, and with
 * AVX-512 a gather query for k <= 16 (chosen when the filter is made; BK_SIMD=scalar / bk_simd_force
 * keep the portable one, BK_SIMD=avx2 the BMI2 one): all set the same bits and answer the same for
 * present, absent and byte keys of other lengths. */
static void query_loops_agree(void **state)
{
    (void)state;
    /* k = 3 .. 12 (each has a loop of its own on BMI2; on AVX-512 k = 3, 4 and 9 .. 16 gather, 5 .. 8
     * read with scalar loads), 14 and 16 (two gathers) and 17 (the general loop) */
    static const double ps[] = { 0.1,    0.05,   0.03,    0.02,    0.01,   0.005,
                                 0.002,  0.001,  0.0005,  0.0002,  0.00005, 0.00002, 0.00001 };
    for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
    for (int layout = 0; layout <= 1; layout++) {
        assert_int_equal(bk_simd_force(BK_SIMD_SCALAR), BK_OK);
        bk_bloom *a = make(20000, ps[pi], (bk_layout)layout, 7);
        assert_int_equal(bk_simd_force(BK_SIMD_AUTO), BK_OK);
        bk_bloom *b = make(20000, ps[pi], (bk_layout)layout, 7);
        /* the BMI2 loops where the CPU has AVX2 (AUTO is then the gather query where it has AVX-512) */
        bk_bloom *c = NULL;
        if (bk_simd_force(BK_SIMD_AVX2) == BK_OK) {
            c = make(20000, ps[pi], (bk_layout)layout, 7);
            assert_int_equal(bk_simd_force(BK_SIMD_AUTO), BK_OK);
        }
        for (uint64_t i = 0; i < 20000; i++) {
            tu_key k = tu_make_key(3, i);
            assert_int_equal(bk_bloom_add(a, k.b, sizeof k.b), BK_OK);
            assert_int_equal(bk_bloom_add(b, k.b, sizeof k.b), BK_OK);
            if (c) assert_int_equal(bk_bloom_add(c, k.b, sizeof k.b), BK_OK);
        }
        /* the inserts (also one loop per CPU) set the same bits */
        size_t la, lb;
        const uint8_t *da = bk_bloom_data(a, &la), *db = bk_bloom_data(b, &lb);
        assert_int_equal(la, lb);
        assert_memory_equal(da, db, la);
        uint64_t hits = 0;
        for (uint64_t i = 0; i < 200000; i++) {
            tu_key k = tu_make_key(i < 20000 ? 3 : 4, i); /* the first 20,000: the added keys */
            bool ra = bk_bloom_contains(a, k.b, sizeof k.b);
            assert_int_equal(ra, bk_bloom_contains(b, k.b, sizeof k.b));
            if (c) assert_int_equal(ra, bk_bloom_contains(c, k.b, sizeof k.b));
            if (i < 20000) assert_true(ra);
            hits += ra;
            /* 8-byte keys (the uint64 path of the byte call) and a short key */
            uint64_t v;
            memcpy(&v, k.b, 8);
            bool r8 = bk_bloom_contains(a, k.b, 8);
            assert_int_equal(r8, bk_bloom_contains(b, k.b, 8));
            assert_int_equal(r8, bk_bloom_contains_u64(a, v));
            assert_int_equal(r8, bk_bloom_contains_u64(b, v));
            assert_int_equal(bk_bloom_contains(a, k.b, 5), bk_bloom_contains(b, k.b, 5));
            if (c) {
                assert_int_equal(r8, bk_bloom_contains_u64(c, v));
                assert_int_equal(bk_bloom_contains(a, k.b, 5), bk_bloom_contains(c, k.b, 5));
            }
        }
        assert_true(hits < 20000 + 180000 * 2 * ps[pi] + 20); /* the added keys and about p of the others */
        if (c) {
            const uint8_t *dc = bk_bloom_data(c, &lb);
            assert_memory_equal(da, dc, la);
        }
        /* the fill by parts (its positions from AVX-512 where the query gathers) sets the same bits */
        bk_bloom *d = make(20000, ps[pi], (bk_layout)layout, 7);
        uint64_t *hs = malloc(20000 * sizeof *hs);
        assert_non_null(hs);
        for (uint64_t i = 0; i < 20000; i++) {
            tu_key k = tu_make_key(3, i);
            hs[i] = bk_hash64(k.b, sizeof k.b, 7);
        }
        for (unsigned part = 0; part < 3; part++)
            assert_int_equal(bk_bloom_add_hashes_part(d, hs, 20000, part, 3), BK_OK);
        const uint8_t *dd = bk_bloom_data(d, &lb);
        assert_int_equal(la, lb);
        assert_memory_equal(da, dd, la);
        /* the batch insert of the whole filter (its positions likewise), in runs of odd lengths; it
         * counts every hash */
        bk_bloom *e = make(20000, ps[pi], (bk_layout)layout, 7);
        for (size_t i = 0; i < 20000; i += 1237)
            assert_int_equal(bk_bloom_add_hashes(e, hs + i, 20000 - i < 1237 ? 20000 - i : 1237), BK_OK);
        const uint8_t *de = bk_bloom_data(e, &lb);
        assert_int_equal(la, lb);
        assert_memory_equal(da, de, la);
        assert_int_equal(bk_bloom_count(e), 20000);
        /* and one part of one (a range that is the whole filter) */
        bk_bloom *g = make(20000, ps[pi], (bk_layout)layout, 7);
        assert_int_equal(bk_bloom_add_hashes_part(g, hs, 20000, 0, 1), BK_OK);
        const uint8_t *dg = bk_bloom_data(g, &lb);
        assert_int_equal(la, lb);
        assert_memory_equal(da, dg, la);
        bk_bloom_free(g);
        bk_bloom_free(e);
        free(hs);
        bk_bloom_free(d);
        bk_bloom_free(a);
        bk_bloom_free(b);
        bk_bloom_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_false_negatives),
        cmocka_unit_test(query_loops_agree),
        cmocka_unit_test(batch_bytes_forms_match_single),
        cmocka_unit_test(fpr_matches_target),
        cmocka_unit_test(fpr_matches_exact_formula_for_hand_picked_geometry),
        cmocka_unit_test(union_is_bit_identical),
        cmocka_unit_test(union_refuses_incompatible),
        cmocka_unit_test(cardinality_estimate),
        cmocka_unit_test(stats_count_every_bit),
        cmocka_unit_test(saturation_flag),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(large_filter_past_2_32_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
