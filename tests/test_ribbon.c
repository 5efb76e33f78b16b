#include "ribbon_tests.h"

static bk_ribbon *build_h(const uint64_t *h, size_t n, double p, uint64_t seed)
{
    bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
    o.fpr = p;
    o.seed = seed;
    bk_ribbon *f = NULL;
    assert_int_equal(bk_ribbon_build_hashes(h, n, &o, &f), BK_OK);
    assert_non_null(f);
    return f;
}

/* Input with duplicates: every value 1 to 3 times, one value 300 times, in a shuffled order. */
static uint64_t *with_duplicates(const uint64_t *h, size_t n, size_t *out_n, uint64_t stream)
{
    size_t cap = 3 * n + 300 + 1, m = 0;
    uint64_t *d = malloc(cap * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++)
        for (size_t r = 0; r <= i % 3; r++) d[m++] = h[i];
    for (size_t r = 0; n && r < 300; r++) d[m++] = h[n / 2];
    for (size_t i = m; i > 1; i--) {
        size_t j = (size_t)(tu_splitmix(&stream) % i);
        uint64_t t = d[i - 1];
        d[i - 1] = d[j];
        d[j] = t;
    }
    *out_n = m;
    return d;
}

/* ---- small sets, where construction bugs hide; duplicates and order change no bit ---- */

static void small_sets_no_false_negatives(void **state)
{
    (void)state;
    static const size_t sizes[] = { 1, 2, 3, 5, 8, 33, 100, 127, 128, 129, 255, 256, 257, 500, 1000, 4096, 20000 };
    static const double rates[] = { 0.5, 0.1, 0.01, 0.0037, 1.0 / 1024, 1e-6, 1e-9 };
    for (size_t pi = 0; pi < sizeof rates / sizeof *rates; pi++) {
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            size_t n = sizes[s];
            for (uint64_t stream = 1; stream <= 4; stream++) {
                uint64_t *h = random_hashes(stream * 1000 + n, n);
                bk_ribbon *f = build_h(h, n, rates[pi], stream);
                assert_int_equal(bk_ribbon_count(f), n);
                assert_true(bk_ribbon_fpr(f) <= rates[pi]);
                assert_all_present(f, h, n);

                size_t m;
                uint64_t *d = with_duplicates(h, n, &m, stream);
                bk_ribbon *g = build_h(d, m, rates[pi], stream);
                assert_int_equal(bk_ribbon_count(g), n);
                assert_all_present(g, h, n);
                assert_same_data(f, g);
                bk_ribbon_free(g);
                free(d);
                bk_ribbon_free(f);
                free(h);
            }
        }
    }
}

static void empty_filter_says_absent(void **state)
{
    (void)state;
    bk_ribbon *f = build_h(NULL, 0, 0.01, 0);
    uint64_t st = 5;
    for (int i = 0; i < 100000; i++) assert_false(bk_ribbon_contains_hash(f, tu_splitmix(&st)));
    assert_false(bk_ribbon_contains(f, "", 0));
    assert_false(bk_ribbon_contains_u64(f, 42));
    uint64_t h[3] = { 1, 2, 3 };
    uint8_t r[3] = { 9, 9, 9 };
    assert_int_equal(TU_HITS(bk_ribbon_contains_hashes, f, h, 3, r), 0);
    assert_int_equal(r[0] | r[1] | r[2], 0);
    bk_stats s;
    bk_ribbon_stats(f, &s);
    assert_int_equal(s.type, BK_TYPE_RIBBON);
    assert_int_equal(s.count, 0);
    assert_true(s.fpr_now == 0.0);
    bk_ribbon_free(f);
    assert_int_equal(bk_ribbon_build(NULL, NULL, 0, NULL, &f), BK_OK);
    assert_false(bk_ribbon_contains(f, "x", 1));
    bk_ribbon_free(f);
}

/* ---- bytes and uint64 keys: equal to the pre-hashed form of bk_hash64(key, len, seed) ---- */

static void bytes_and_u64_forms_equal_prehashed(void **state)
{
    (void)state;
    enum { M = 20000 };
    static tu_key keys[M];
    static const void *ptrs[M + M / 2];
    static size_t lens[M + M / 2];
    static uint64_t h[M], ints[M], ih[M];
    static uint8_t res[M + M / 2];
    const uint64_t seed = 0x5eed;
    for (int i = 0; i < M; i++) {
        keys[i] = tu_make_key(3, (uint64_t)i);
        ptrs[i] = keys[i].b;
        lens[i] = (size_t)(i % 17); /* prefixes of various lengths: many duplicates, the empty key */
    }
    lens[M - 1] = sizeof keys[0].b;
    for (int i = 0; i < M; i++) h[i] = bk_hash64(ptrs[i], lens[i], seed);
    for (int i = 0; i < M / 2; i++) {
        ptrs[M + i] = ptrs[2 * i];
        lens[M + i] = lens[2 * i];
    }
    bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
    o.fpr = 0.003;
    o.seed = seed;
    bk_ribbon *a = NULL, *b = NULL;
    assert_int_equal(bk_ribbon_build(ptrs, lens, M + M / 2, &o, &a), BK_OK);
    assert_int_equal(bk_ribbon_build_hashes(h, M, &o, &b), BK_OK);
    assert_same_data(a, b);
    assert_int_equal(bk_ribbon_count(a), bk_ribbon_count(b));
    assert_true(bk_ribbon_count(a) < M);
    assert_int_equal(bk_ribbon_seed(a), seed);
    for (int i = 0; i < M; i++) assert_true(bk_ribbon_contains(a, ptrs[i], lens[i]));
    assert_true(bk_ribbon_contains(a, NULL, 0));
    assert_int_equal(TU_HITS(bk_ribbon_contains_many, a, ptrs, lens, M + M / 2, res), M + M / 2);
    bk_ribbon_free(a);
    bk_ribbon_free(b);

    /* uint64 keys: built and queried as their 8 little-endian bytes */
    uint64_t st = 9;
    for (int i = 0; i < M; i++) {
        ints[i] = tu_splitmix(&st);
        ih[i] = bk_hash64(&ints[i], 8, seed);
    }
    assert_int_equal(bk_ribbon_build_u64(ints, M, &o, &a), BK_OK);
    assert_int_equal(bk_ribbon_build_hashes(ih, M, &o, &b), BK_OK);
    assert_same_data(a, b);
    for (int i = 0; i < M; i++) {
        assert_true(bk_ribbon_contains_u64(a, ints[i]));
        assert_true(bk_ribbon_contains(a, &ints[i], 8));
    }
    /* absent integers: the two forms answer alike */
    for (int i = 0; i < 100000; i++) {
        uint64_t k = tu_splitmix(&st);
        assert_int_equal(bk_ribbon_contains_u64(a, k), bk_ribbon_contains(a, &k, 8));
    }
    bk_ribbon_free(a);
    bk_ribbon_free(b);
}

/* ---- the FPR asked for, measured: within 1.05x of p, and as the geometry's formula says ---- */

static void fpr_at_rates(void **state)
{
    (void)state;
    static const double rates[] = { 0.1, 0.01, 0.0037, 0.001, 1e-4 };
    const size_t n = 200000;
    uint64_t *h = random_hashes(1234, n);
    for (size_t pi = 0; pi < sizeof rates / sizeof *rates; pi++) {
        double p = rates[pi];
        bk_ribbon *f = build_h(h, n, p, 7);
        double geo = bk_ribbon_fpr(f);
        assert_true(geo <= p);
        assert_true(geo >= 0.995 * p); /* the mixture is tight: no bits wasted on a lower FPR */
        /* at least 1e6 absent keys, and enough that about 4,000 false positives are expected */
        size_t trials = (size_t)(4000.0 / p);
        if (trials < 1000000) trials = 1000000;
        uint64_t st = 0xfeed + pi, fp = 0;
        uint64_t batch[1024];
        for (size_t t = 0; t < trials; t += 1024) {
            for (int i = 0; i < 1024; i++) batch[i] = tu_splitmix(&st);
            fp += TU_HITS(bk_ribbon_contains_hashes, f, batch, 1024, NULL);
        }
        double measured = (double)fp / (double)trials;
        bk_stats s;
        bk_ribbon_stats(f, &s);
        print_message("p=%g: formula %.4g, measured %.4g (%zu absent keys), %.3f bits/key, k=%u\n", p, geo,
                      measured, trials, s.bits_per_key, s.k);
        assert_true(measured <= 1.05 * p);
        TU_ASSERT_WITHIN(measured, geo, 0.05);
        bk_ribbon_free(f);
    }
    free(h);
}

/* ---- space: at most 1.05 log2(1/p) bits per key for n >= 1e5 (larger n: bench/ribbon_space) ---- */

static void space_near_the_bound(void **state)
{
    (void)state;
    static const size_t sizes[] = { 100000, 1000000 };
    /* 0.09: near the worst p of the columns' mixture (2^-(lo + 0.47)) */
    static const double rates[] = { 0.1, 0.09, 0.01, 0.001, 3e-5, 1e-6 };
    for (size_t si = 0; si < 2; si++) {
        uint64_t *h = random_hashes(99 + si, sizes[si]);
        for (size_t pi = 0; pi < sizeof rates / sizeof *rates; pi++) {
            double p = rates[pi], bound = 1.05 * log2(1.0 / p);
            bk_ribbon *f = build_h(h, sizes[si], p, 3);
            bk_stats s;
            bk_ribbon_stats(f, &s);
            print_message("n=%zu p=%g: %.3f bits/key (bound %.3f, 1.05x bound %.3f), %.4f slots/key\n", sizes[si],
                          p, s.bits_per_key, log2(1.0 / p), bound, 1.0 / s.fill_ratio);
            assert_true(s.bits_per_key <= bound);
            assert_true(bk_ribbon_fpr(f) <= p);
            assert_int_equal(s.count, sizes[si]);
            assert_all_present(f, h, sizes[si]);
            /* the sizing call agrees with the filter: a sharded filter's shards hold n / S keys each
             * only on average, so its size is within 0.5% of the sizing's */
            bk_geometry g;
            assert_int_equal(bk_ribbon_size(sizes[si], p, &g), BK_OK);
            assert_true(g.bits_per_key <= bound);
            TU_ASSERT_WITHIN((double)(g.m / 8), (double)s.memory_bytes, 0.005);
            bk_ribbon_free(f);
        }
        free(h);
    }
}

/* ---- sharded filters (body 2), made small by the test hook: duplicates, paths, round trips ---- */

static void sharded_small(void **state)
{
    (void)state;
    bk__ribbon_shard_keys = 700;
    static const size_t sizes[] = { 1399, 1400, 5000, 33333 };
    static const double rates[] = { 0.5, 0.1, 0.01, 1.0 / 1024, 1e-6, 1e-9 };
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        uint64_t *h = random_hashes(500 + n, n);
        for (size_t pi = 0; pi < sizeof rates / sizeof *rates; pi++) {
            bk_ribbon *f = build_h(h, n, rates[pi], si);
            assert_int_equal(bk_ribbon_count(f), n);
            assert_true(bk_ribbon_fpr(f) <= rates[pi]);
            assert_all_present(f, h, n);
            /* duplicates and their order change no bit */
            size_t m;
            uint64_t *d = with_duplicates(h, n, &m, 9 + pi);
            bk_ribbon *g = build_h(d, m, rates[pi], si);
            assert_int_equal(bk_ribbon_count(g), n);
            assert_same_data(f, g);
            free(d);
            bk_ribbon_free(g);
            /* the portable path solves and answers alike */
            bk__ribbon_portable = true;
            g = build_h(h, n, rates[pi], si);
            bk__ribbon_portable = false;
            assert_same_data(f, g);
            /* and the AVX2 back-substitution (f's is AVX-512's where the CPU has it) */
            {
                assert_int_equal(bk_simd_force(BK_SIMD_AVX2), BK_OK);
                bk_ribbon *a2 = build_h(h, n, rates[pi], si);
                assert_int_equal(bk_simd_force(BK_SIMD_AUTO), BK_OK);
                assert_same_data(f, a2);
                bk_ribbon_free(a2);
            }
            /* and the vector paths: the best this CPU has (f), AVX2 at most (a clone made under that
             * cap), the portable one (g), one key and batched */
            bk_ribbon *v;
            assert_int_equal(bk_simd_force(BK_SIMD_AVX2), BK_OK);
            assert_int_equal(bk_ribbon_clone(f, &v), BK_OK);
            assert_int_equal(bk_simd_force(BK_SIMD_AUTO), BK_OK);
            enum { Q = 20000 };
            static uint64_t q[Q];
            static uint8_t rf[Q], rg[Q], rv[Q];
            uint64_t st = 5 + pi;
            for (int i = 0; i < Q; i++) q[i] = tu_splitmix(&st);
            assert_int_equal(TU_HITS(bk_ribbon_contains_hashes, f, q, Q, rf),
                             TU_HITS(bk_ribbon_contains_hashes, g, q, Q, rg));
            assert_int_equal(TU_HITS(bk_ribbon_contains_hashes, v, q, Q, rv),
                             TU_HITS(bk_ribbon_contains_hashes, g, q, Q, rg));
            assert_memory_equal(rf, rg, Q);
            assert_memory_equal(rv, rg, Q);
            for (int i = 0; i < Q; i++) {
                bool a = bk_ribbon_contains_hash(g, q[i]);
                assert_int_equal(bk_ribbon_contains_hash(f, q[i]), a);
                assert_int_equal(bk_ribbon_contains_hash(v, q[i]), a);
                assert_int_equal(rg[i], a);
            }
            bk_ribbon_free(v);
            bk_ribbon_free(g);
            bk_ribbon_free(f);
        }
        free(h);
    }
    bk__ribbon_shard_keys = 0;
}

/* ---- a set the first sizing cannot hold: retries with new seeds, then more room ---- */

static void retries_and_growth(void **state)
{
    (void)state;
    const size_t n = 50000;
    uint64_t *h = random_hashes(5, n);
    bk__ribbon_slack = -1; /* no slack at all: the first attempts fail */
    bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
    o.fpr = 0.01;
    o.max_attempts = 1;
    bk_ribbon *f = (bk_ribbon *)0x1;
    assert_int_equal(bk_ribbon_build_hashes(h, n, &o, &f), BK_EFULL);
    assert_null(f);
    bk_geometry g;
    assert_int_equal(bk_ribbon_size(n, 0.01, &g), BK_OK);
    o.max_attempts = 0;
    assert_int_equal(bk_ribbon_build_hashes(h, n, &o, &f), BK_OK);
    bk__ribbon_slack = 0;
    bk_stats s;
    bk_ribbon_stats(f, &s);
    assert_true(s.bits > g.m); /* it grew */
    assert_true(bk_ribbon_fpr(f) <= 0.01);
    assert_all_present(f, h, n);
    bk_ribbon_free(f);
    free(h);
}

/* ---- the POPCNT path and the portable one: the same solution, the same answers ---- */

static void portable_path_agrees(void **state)
{
    (void)state;
    const size_t n = 30000;
    uint64_t *h = random_hashes(8, n);
    static const double rates[] = { 0.3, 0.01, 1e-5 };
    for (size_t pi = 0; pi < 3; pi++) {
        bk_ribbon *a = build_h(h, n, rates[pi], 1);
        bk__ribbon_portable = true;
        bk_ribbon *b = build_h(h, n, rates[pi], 1);
        bk_ribbon *c;
        assert_int_equal(bk_ribbon_clone(a, &c), BK_OK); /* made now: the portable query */
        bk__ribbon_portable = false;
        assert_same_data(a, b);
        assert_all_present(b, h, n);
        uint64_t st = 77 + pi;
        static uint64_t q[100000];
        static uint8_t ra[100000], rc[100000];
        for (size_t i = 0; i < 100000; i++) q[i] = tu_splitmix(&st);
        size_t ha = TU_HITS(bk_ribbon_contains_hashes, a, q, 100000, ra);
        size_t hc = TU_HITS(bk_ribbon_contains_hashes, c, q, 100000, rc);
        assert_int_equal(ha, hc);
        assert_memory_equal(ra, rc, 100000);
        for (size_t i = 0; i < 100000; i++)
            assert_int_equal(bk_ribbon_contains_hash(a, q[i]), bk_ribbon_contains_hash(c, q[i]));
        bk_ribbon_free(a);
        bk_ribbon_free(b);
        bk_ribbon_free(c);
    }
    free(h);
}

/* ---- the vector kernels' rounds: a filter takes one to four rounds of eight columns by its lo; at
 * each edge (lo 7: keys of 7 and 8 columns in one round; lo 8: 8 and 9 in two; and so on), with keys
 * on both sides of the columns split, the best path, AVX2 at most and the portable one answer alike,
 * one key and batched ---- */

static void vector_rounds_agree(void **state)
{
    (void)state;
    bk__ribbon_shard_keys = 700;
    const size_t n = 3000;
    uint64_t *h = random_hashes(31, n);
    static const int los[] = { 7, 8, 15, 16, 23, 24, 29 };
    for (size_t li = 0; li < sizeof los / sizeof *los; li++) {
        /* 2^-(lo + 0.5): lo columns in the first blocks, lo + 1 in the others */
        const double p = ldexp(1.0, -los[li]) * 0.7071;
        bk_ribbon *f = build_h(h, n, p, li), *v, *g;
        assert_all_present(f, h, n);
        assert_true(f->nshards > 2 && f->lo == (uint32_t)los[li]);
        for (uint64_t i = 0; i < f->nshards; i++) /* blocks of both widths in every shard */
            assert_true(f->shards[i].upper > 0 && f->shards[i].upper < f->shards[i].nstarts / 128 + 1);
        assert_int_equal(bk_simd_force(BK_SIMD_AVX2), BK_OK);
        assert_int_equal(bk_ribbon_clone(f, &v), BK_OK);
        assert_int_equal(bk_simd_force(BK_SIMD_AUTO), BK_OK);
        bk__ribbon_portable = true;
        assert_int_equal(bk_ribbon_clone(f, &g), BK_OK);
        bk__ribbon_portable = false;
        enum { Q = 30000 };
        static uint64_t q[Q];
        static uint8_t rf[Q], rv[Q], rg[Q];
        uint64_t st = 91 + li;
        for (int i = 0; i < Q; i++) q[i] = i % 3 ? tu_splitmix(&st) : h[(size_t)i % n];
        size_t hg = TU_HITS(bk_ribbon_contains_hashes, g, q, Q, rg);
        assert_true(hg >= Q / 3);
        assert_int_equal(TU_HITS(bk_ribbon_contains_hashes, f, q, Q, rf), hg);
        assert_int_equal(TU_HITS(bk_ribbon_contains_hashes, v, q, Q, rv), hg);
        assert_memory_equal(rf, rg, Q);
        assert_memory_equal(rv, rg, Q);
        for (int i = 0; i < Q; i++) {
            assert_int_equal(bk_ribbon_contains_hash(f, q[i]), rg[i]);
            assert_int_equal(bk_ribbon_contains_hash(v, q[i]), rg[i]);
            assert_int_equal(bk_ribbon_contains_hash(g, q[i]), rg[i]);
        }
        bk_ribbon_free(g);
        bk_ribbon_free(v);
        bk_ribbon_free(f);
    }
    free(h);
    bk__ribbon_shard_keys = 0;
}

/* ---- serialization through the type's table ---- */

static void round_trip(void **state)
{
    (void)state;
    const size_t n = 100000;
    uint64_t *h = random_hashes(31, n);
    bk_ribbon *f = build_h(h, n, 0.002, 0xabc);
    tu_membuf m = encode(f);
    for (int borrow = 0; borrow <= 1; borrow++) {
        check_decoded(&m, f, h, n, 0xabc, borrow, 200000);
    }
    free(m.buf);
    bk_ribbon_free(f);
    free(h);
}

static void decode_refuses_damage(void **state)
{
    (void)state;
    const size_t n = 5000;
    uint64_t *h = random_hashes(41, n);
    bk_ribbon *f = build_h(h, n, 0.01, 0);
    tu_membuf m = encode(f);
    uint8_t *b = aligned_alloc(64, (m.len + 63) / 64 * 64);
    bk_ribbon *g;
    for (size_t cut = 0; cut < m.len; cut += (cut < 128 ? 1 : 97))
        assert_int_equal(decode(m.buf, cut, cut & 1, 0, &g), BK_ETRUNCATED);
    /* each parameter out of range or inconsistent with the array's length */
    struct { size_t off; int width; uint64_t value; } bad[] = {
        { 0, 4, 0 }, { 0, 4, 64 }, { 0, 4, 256 },                 /* width */
        { 4, 4, 30 }, { 4, 4, UINT32_MAX }, { 4, 4, 7 }, { 4, 4, 5 }, /* columns (7, 5: length disagrees) */
        { 8, 8, 0 }, { 8, 8, 1 }, { 8, 8, UINT64_MAX }, { 8, 8, UINT64_C(1) << 41 }, /* blocks */
        { 16, 8, UINT64_MAX },                                    /* upper past the blocks */
        { 24, 8, UINT64_MAX },                                    /* count > slots */
        { 40, 8, 1 },                                             /* padding */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memcpy(b, m.buf, m.len);
        if (bad[i].width == 4) put32(b + bad[i].off, (uint32_t)bad[i].value);
        else put64(b + bad[i].off, bad[i].value);
        bk_status s = decode(b, m.len, false, 0, &g);
        if (s == BK_OK) {
            bk_ribbon_free(g);
            fail_msg("damage %zu accepted", i);
        }
        if (s != BK_ECORRUPT && s != BK_ETRUNCATED && s != BK_ETOOBIG)
            fail_msg("damage %zu gave %s", i, bk_strerror(s));
    }
    /* a file claiming zero keys but holding a solution */
    bk_ribbon *e = build_h(NULL, 0, 0.01, 0);
    tu_membuf me = encode(e);
    me.buf[64 + 5] = 1;
    assert_int_equal(decode(me.buf, me.len, false, 0, &g), BK_ECORRUPT);
    memcpy(b, m.buf, m.len);
    put64(b + 24, 0);
    assert_int_equal(decode(b, m.len, false, 0, &g), BK_ECORRUPT);
    free(me.buf);
    bk_ribbon_free(e);
    assert_int_equal(decode(m.buf, m.len, true, 0, &g), BK_OK);
    bk_ribbon_free(g);
    free(b);
    free(m.buf);
    bk_ribbon_free(f);
    free(h);
}

/* Body 2 (shards): truncation and each field out of range or inconsistent, refused before the words */
static void decode_refuses_damage_sharded(void **state)
{
    (void)state;
    const size_t n = 5000;
    uint64_t *h = random_hashes(43, n);
    bk__ribbon_shard_keys = 700;
    bk_ribbon *f = build_h(h, n, 0.01, 0);
    bk__ribbon_shard_keys = 0;
    tu_membuf m = encode(f);
    uint8_t *b = aligned_alloc(64, (m.len + 63) / 64 * 64);
    bk_ribbon *g;
    assert_int_equal(m.buf[0], 2);
    uint64_t S = 0;
    memcpy(&S, m.buf + 8, 8);
    assert_int_equal(S, 7);
    for (size_t cut = 0; cut < m.len; cut += (cut < 256 ? 1 : 97))
        assert_int_equal(decode(m.buf, cut, cut & 1, 0, &g), BK_ETRUNCATED);
    const size_t rec = 64;
    struct { size_t off; int width; uint64_t value; } bad[] = {
        { 0, 4, 1 }, { 0, 4, 4 }, { 0, 4, 3 },                      /* no body; body 3's fields on body 2's */
        { 4, 4, 30 }, { 4, 4, 7 }, { 4, 4, 5 },                     /* columns */
        { 8, 8, 0 }, { 8, 8, 1 }, { 8, 8, 6 }, { 8, 8, 8 }, { 8, 8, UINT64_MAX }, /* shards */
        { 16, 8, 0 }, { 16, 8, UINT64_MAX },                        /* count: none, more than slots */
        { 24, 8, 0 }, { 24, 8, 1 }, { 24, 8, UINT64_MAX },          /* words */
        { 32, 8, 1 }, { 56, 8, 1 },                                 /* padding */
        { rec, 4, 0 }, { rec, 4, 1 }, { rec, 4, UINT32_MAX },       /* a shard's blocks */
        { rec + 4, 4, UINT32_MAX },                                 /* its upper past its blocks */
        { rec + 16 * 6, 4, 2 },                                     /* the last shard's blocks */
        { 64 + 7 * 16, 8, 1 },                                      /* padding after the records */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memcpy(b, m.buf, m.len);
        if (bad[i].width == 4) put32(b + bad[i].off, (uint32_t)bad[i].value);
        else put64(b + bad[i].off, bad[i].value);
        bk_status s = decode(b, m.len, i & 1, 0, &g);
        if (s == BK_OK) {
            bk_ribbon_free(g);
            fail_msg("damage %zu accepted", i);
        }
        if (s != BK_ECORRUPT && s != BK_ETRUNCATED && s != BK_ETOOBIG)
            fail_msg("damage %zu gave %s", i, bk_strerror(s));
    }
    /* a longer body */
    uint8_t *l = aligned_alloc(64, (m.len + 64 + 63) / 64 * 64);
    memcpy(l, m.buf, m.len);
    memset(l + m.len, 0, 64);
    assert_int_equal(decode(l, m.len + 64, false, 0, &g), BK_ECORRUPT);
    free(l);
    /* borrowed and copied: the same answers */
    for (int borrow = 0; borrow <= 1; borrow++) {
        check_decoded(&m, f, h, n, 0, borrow, 1000);
    }
    free(b);
    free(m.buf);
    bk_ribbon_free(f);
    free(h);
}

static void static_set_has_no_updates(void **state)
{
    (void)state;
    assert_null(bk__ribbon_vtable.add_hash);
    assert_null(bk__ribbon_vtable.add_hashes);
    assert_null(bk__ribbon_vtable.remove_hash);
    assert_null(bk__ribbon_vtable.merge);
    assert_null(bk__ribbon_vtable.clear);
    assert_int_equal(bk__ribbon_vtable.type, BK_TYPE_RIBBON);
    assert_string_equal(bk_type_name(BK_TYPE_RIBBON), "ribbon");
    uint64_t h[2] = { 1, 2 };
    bk_ribbon *f = build_h(h, 2, 0.01, 9);
    bk_filter *gf;
    assert_int_equal(bk_filter_wrap(BK_TYPE_RIBBON, f, &gf), BK_OK);
    assert_true(bk_filter_contains_hash(gf, 1));
    assert_int_equal(bk_filter_add_hash(gf, 3), BK_ENOTSUP);
    bk_filter_free(gf);
}

/* ---- bad input: a clear status, nothing made ---- */

static void bad_input(void **state)
{
    (void)state;
    bk_geometry g;
    assert_int_equal(bk_ribbon_size(0, 0.01, &g), BK_EINVAL);
    assert_int_equal(bk_ribbon_size(10, 0.0, &g), BK_EINVAL);
    assert_int_equal(bk_ribbon_size(10, 1.0, &g), BK_EINVAL);
    assert_int_equal(bk_ribbon_size(10, -0.5, &g), BK_EINVAL);
    assert_int_equal(bk_ribbon_size(10, NAN, &g), BK_EINVAL);
    assert_int_equal(bk_ribbon_size(10, 1e-10, &g), BK_EINVAL);
    assert_int_equal(bk_ribbon_size(10, 0.01, NULL), BK_EINVAL);
    assert_int_equal(bk_ribbon_size(BK_RIBBON_MAX_KEYS + 1, 0.01, &g), BK_ETOOBIG);
    assert_int_equal(bk_ribbon_build_memory(10, 2.0), 0);
    /* at least the hashes twice (byte keys), not much more: the shards' scratch is small */
    assert_true(bk_ribbon_build_memory(1000000, 0.01) > 16000000);
    assert_true(bk_ribbon_build_memory(1000000, 0.01) < 22000000);
    assert_int_equal(bk_ribbon_size(1000000, 0.01, &g), BK_OK);
    assert_int_equal(g.k, 7);
    assert_true(g.fpr <= 0.01 && g.fpr > 0.0099);

    uint64_t h[4] = { 1, 2, 3, 4 };
    bk_ribbon *f = (bk_ribbon *)0x1;
    bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
    static const double badp[] = { -1, 1, 1.5, 1e-10 };
    for (size_t i = 0; i < sizeof badp / sizeof *badp; i++) {
        o.fpr = badp[i];
        f = (bk_ribbon *)0x1;
        assert_int_equal(bk_ribbon_build_hashes(h, 4, &o, &f), BK_EINVAL);
        assert_null(f);
    }
    o.fpr = NAN;
    assert_int_equal(bk_ribbon_build_hashes(h, 4, &o, &f), BK_EINVAL);
    assert_int_equal(bk_ribbon_build_hashes(NULL, 4, NULL, &f), BK_EINVAL);
    assert_null(f);
    assert_int_equal(bk_ribbon_build_hashes(h, 4, NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_ribbon_build_u64(NULL, 4, NULL, &f), BK_EINVAL);
    const void *keys[2] = { "a", NULL };
    size_t lens[2] = { 1, 3 };
    assert_int_equal(bk_ribbon_build(keys, lens, 2, NULL, &f), BK_EINVAL);
    assert_null(f);
    /* default options: 1% */
    assert_int_equal(bk_ribbon_build_hashes(h, 4, NULL, &f), BK_OK);
    assert_true(bk_ribbon_fpr(f) <= 0.01 && bk_ribbon_fpr(f) > 0.005);
    bk_ribbon_free(f);
    bk_ribbon_free(NULL);
    assert_int_equal(bk_ribbon_clone(NULL, &f), BK_EINVAL);
    size_t hits = 7;
    assert_int_equal(bk_ribbon_contains_hashes(NULL, h, 4, NULL, &hits), BK_EINVAL);
    assert_int_equal(hits, 0);
    hits = 7;
    assert_int_equal(bk_ribbon_contains_many(NULL, keys, lens, 1, NULL, &hits), BK_EINVAL);
    assert_int_equal(hits, 0);
    /* a live filter: a NULL array with n > 0, a NULL key with a length, a NULL out, all refused */
    assert_int_equal(bk_ribbon_build_hashes(h, 4, NULL, &f), BK_OK);
    hits = 7;
    assert_int_equal(bk_ribbon_contains_hashes(f, NULL, 4, NULL, &hits), BK_EINVAL);
    assert_int_equal(hits, 0);
    hits = 7;
    assert_int_equal(bk_ribbon_contains_many(f, keys, lens, 2, NULL, &hits), BK_EINVAL);
    assert_int_equal(hits, 0);
    assert_int_equal(bk_ribbon_clone(f, NULL), BK_EINVAL);
    bk_ribbon_free(f);
}

/* ---- the allocator sees everything, also on failure paths ---- */

static void allocator_and_out_of_memory(void **state)
{
    (void)state;
    tu_alloc_count cnt = { 0, -1 };
    bk_allocator a = { tu_count_malloc, tu_count_calloc, tu_count_free, &cnt };
    const size_t n = 3000;
    uint64_t *h = random_hashes(61, n);
    size_t m;
    uint64_t *d = with_duplicates(h, n, &m, 3);
    /* one system, then shards (the test hook: about 700 keys a shard) */
    for (int sharded = 0; sharded <= 1; sharded++) {
    bk__ribbon_shard_keys = sharded ? 700 : 0;
    bool succeeded = false;
    for (long budget = 0; budget < 60 && !succeeded; budget++) {
        cnt.budget = budget;
        bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
        o.allocator = &a;
        bk_ribbon *f = (bk_ribbon *)0x1;
        bk_status s = bk_ribbon_build_hashes(d, m, &o, &f);
        cnt.budget = -1;
        if (s == BK_OK) {
            succeeded = true;
            assert_all_present(f, h, n);
            bk_ribbon_free(f);
        } else {
            assert_int_equal(s, BK_ENOMEM);
            assert_null(f);
        }
        assert_int_equal(cnt.live, 0);
    }
    assert_true(succeeded);
    }
    bk__ribbon_shard_keys = 0;
    free(d);
    free(h);
}

int main(void)
{
    /* the older bodies (1 below two shards' keys, 2 above), as new builds made them before body 3
     * (test_ribbon3) */
    bk__ribbon_body = 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_sets_no_false_negatives),
        cmocka_unit_test(empty_filter_says_absent),
        cmocka_unit_test(bytes_and_u64_forms_equal_prehashed),
        cmocka_unit_test(fpr_at_rates),
        cmocka_unit_test(space_near_the_bound),
        cmocka_unit_test(sharded_small),
        cmocka_unit_test(retries_and_growth),
        cmocka_unit_test(portable_path_agrees),
        cmocka_unit_test(vector_rounds_agree),
        cmocka_unit_test(round_trip),
        cmocka_unit_test(decode_refuses_damage),
        cmocka_unit_test(decode_refuses_damage_sharded),
        cmocka_unit_test(static_set_has_no_updates),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(allocator_and_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
