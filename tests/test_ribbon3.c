/* The Ribbon filter's body 3 (bumped Ribbon, width 64): no false negatives at any n and p, the FPR and
 * space near the bound, the vector and portable paths alike, duplicates building as the set, and the
 * older bodies still made when asked for. */
#include "testutil.h"
#include <math.h>
#include <bloomkit/bloomkit.h>
#include "filters/internal.h"
#include "filters/testing.h"
#include "filters/ribbon_impl.h"

static uint64_t *random_hashes(uint64_t stream, size_t n)
{
    uint64_t *h = malloc((n ? n : 1) * sizeof *h);
    assert_non_null(h);
    for (size_t i = 0; i < n; i++) h[i] = tu_splitmix(&stream);
    return h;
}

static bk_ribbon *build3(const uint64_t *h, size_t n, double p, uint64_t seed)
{
    bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
    o.fpr = p;
    o.seed = seed;
    bk_ribbon *f = NULL;
    const int was = bk__ribbon_body;
    bk__ribbon_body = 3;
    assert_int_equal(bk_ribbon_build_hashes(h, n, &o, &f), BK_OK);
    bk__ribbon_body = was;
    assert_non_null(f);
    assert_non_null(f->layers);
    return f;
}

static void assert_all_present(const bk_ribbon *f, const uint64_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!bk_ribbon_contains_hash(f, h[i])) fail_msg("false negative: value %zu of %zu", i, n);
    uint8_t *res = calloc(n ? n : 1, 1);
    assert_non_null(res);
    assert_int_equal(TU_HITS(bk_ribbon_contains_hashes, f, h, n, res), n);
    for (size_t i = 0; i < n; i++) assert_int_equal(res[i], 1);
    free(res);
}

static void assert_same_data(const bk_ribbon *a, const bk_ribbon *b)
{
    size_t la, lb;
    const uint8_t *da = bk_ribbon_data(a, &la), *db = bk_ribbon_data(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    assert_int_equal(a->nlayers, b->nlayers);
    for (uint32_t k = 0; k < a->nlayers; k++) {
        assert_int_equal(a->layers[k].nblocks, b->layers[k].nblocks);
        assert_int_equal(a->layers[k].upper, b->layers[k].upper);
        assert_int_equal(a->layers[k].seed, b->layers[k].seed);
    }
}

/* Every key found at many n (one layer, two, many chunks) and p (one to four rounds of columns). */
static void no_false_negatives(void **state)
{
    (void)state;
    static const size_t ns[] = { 1, 2, 63, 64, 65, 1000, 2047, 2048, 5000, 70000, 300000 };
    static const double ps[] = { 0.5, 0.1, 0.01, 3e-4, 1e-6, 1e-9 };
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof ps / sizeof *ps; b++) {
            if (ns[a] == 300000 && b > 2) continue;
            uint64_t *h = random_hashes(100 + a * 10 + b, ns[a]);
            bk_ribbon *f = build3(h, ns[a], ps[b], a);
            assert_int_equal(bk_ribbon_count(f), ns[a]);
            assert_true(bk_ribbon_fpr(f) <= ps[b]);
            assert_all_present(f, h, ns[a]);
            /* the last layer bumps nothing */
            const rb3_layer *L = &f->layers[f->nlayers - 1];
            for (uint64_t i = 0; i < R3_META(L->nblocks); i++) assert_int_equal(L->meta[i], 0);
            bk_ribbon_free(f);
            free(h);
        }
}

/* FPR on 1e6 absent keys within 1.1 p (and above 0.9 p), space at most 1.05 log2(1/p) bits a key
 * (n = 1e5 and more), fixed seeds. */
static void fpr_and_space(void **state)
{
    (void)state;
    static const double ps[] = { 0.1, 0.01, 0.001, 0.0003 };
    const size_t n = 200000, q = 1000000;
    uint64_t *h = random_hashes(7, n);
    for (size_t b = 0; b < sizeof ps / sizeof *ps; b++) {
        bk_ribbon *f = build3(h, n, ps[b], 3);
        uint64_t st = 99 + b;
        size_t fp = 0;
        for (size_t i = 0; i < q; i++) fp += bk_ribbon_contains_hash(f, tu_splitmix(&st));
        const double rate = (double)fp / (double)q;
        if (rate > 1.1 * ps[b] || rate < 0.9 * ps[b]) fail_msg("p %g: measured %g", ps[b], rate);
        bk_stats s;
        bk_ribbon_stats(f, &s);
        assert_int_equal(s.count, n);
        const double bound = log2(1.0 / ps[b]);
        if (s.bits_per_key > 1.05 * bound) fail_msg("p %g: %.3f bits a key (bound %.3f)", ps[b], s.bits_per_key, bound);
        assert_true(s.bits_per_key > bound);
        bk_ribbon_free(f);
    }
    free(h);
}

/* The portable path, the POPCNT one and the best for this CPU answer alike, one key and batched, at
 * every round count of the vector kernel and both sides of the columns split. */
static void paths_agree(void **state)
{
    (void)state;
    static const double ps[] = { 0.3, 0.006, 1.0 / 256, 0.0015, 1.0 / 65536, 1e-5, 1.0 / (1 << 24), 1e-8, 1.5e-9 };
    const size_t n = 20000, q = 100000;
    uint64_t *h = random_hashes(11, n), *qs = random_hashes(12, q);
    for (size_t i = 0; i < n; i += 2) qs[i] = h[i]; /* present and absent */
    uint8_t *ra = malloc(q), *rb = malloc(q);
    assert_non_null(ra);
    assert_non_null(rb);
    for (size_t b = 0; b < sizeof ps / sizeof *ps; b++) {
        bk_ribbon *best = build3(h, n, ps[b], 5), *port;
        bk__ribbon_portable = true;
        assert_int_equal(bk_ribbon_clone(best, &port), BK_OK);
        bk_ribbon *built = build3(h, n, ps[b], 5);
        bk__ribbon_portable = false;
        assert_same_data(best, port);
        assert_same_data(best, built);
        assert_int_equal(TU_HITS(bk_ribbon_contains_hashes, best, qs, q, ra),
                         TU_HITS(bk_ribbon_contains_hashes, port, qs, q, rb));
        assert_memory_equal(ra, rb, q);
        for (size_t i = 0; i < q; i++) {
            assert_int_equal(bk_ribbon_contains_hash(best, qs[i]), rb[i]);
            assert_int_equal(bk_ribbon_contains_hash(port, qs[i]), rb[i]);
        }
        bk_ribbon_free(best);
        bk_ribbon_free(port);
        bk_ribbon_free(built);
    }
    free(ra);
    free(rb);
    free(h);
    free(qs);
}

/* Repeated values build the set: the same filter, count the distinct values. */
static void duplicates_build_the_set(void **state)
{
    (void)state;
    static const size_t ns[] = { 10, 3000, 100000 };
    for (size_t a = 0; a < 3; a++) {
        const size_t n = ns[a];
        uint64_t *h = random_hashes(21 + a, n), *d = malloc((3 * n + 300) * 8), st = 5;
        assert_non_null(d);
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t r = 0; r <= i % 3; r++) d[m++] = h[i];
        for (size_t r = 0; r < 300; r++) d[m++] = h[n / 2];
        for (size_t i = m; i > 1; i--) {
            size_t j = (size_t)(tu_splitmix(&st) % i);
            uint64_t t = d[i - 1];
            d[i - 1] = d[j];
            d[j] = t;
        }
        bk_ribbon *f = build3(h, n, 0.01, 1), *g = build3(d, m, 0.01, 1);
        assert_int_equal(bk_ribbon_count(g), n);
        assert_same_data(f, g);
        assert_all_present(g, h, n);
        bk_ribbon_free(f);
        bk_ribbon_free(g);
        free(h);
        free(d);
    }
}

/* Byte keys and uint64 keys answer as their hashes do. */
static void key_forms(void **state)
{
    (void)state;
    const size_t n = 5000;
    uint64_t *k = random_hashes(31, n), *h = malloc(n * 8);
    const void **keys = malloc(n * sizeof *keys);
    size_t *lens = malloc(n * sizeof *lens);
    assert_non_null(h);
    assert_non_null(keys);
    assert_non_null(lens);
    for (size_t i = 0; i < n; i++) {
        keys[i] = &k[i];
        lens[i] = 8;
        h[i] = bk_hash64(&k[i], 8, 9);
    }
    bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
    o.fpr = 0.001;
    o.seed = 9;
    bk_ribbon *a, *b, *c;
    bk__ribbon_body = 3;
    assert_int_equal(bk_ribbon_build(keys, lens, n, &o, &a), BK_OK);
    assert_int_equal(bk_ribbon_build_u64(k, n, &o, &b), BK_OK);
    assert_int_equal(bk_ribbon_build_hashes(h, n, &o, &c), BK_OK);
    bk__ribbon_body = 0;
    assert_same_data(a, b);
    assert_same_data(a, c);
    uint64_t st = 3;
    for (size_t i = 0; i < 20000; i++) {
        uint64_t v = i < n ? k[i] : tu_splitmix(&st);
        const bool want = bk_ribbon_contains(a, &v, 8);
        assert_int_equal(bk_ribbon_contains_u64(a, v), want);
        assert_int_equal(bk_ribbon_contains_hash(a, bk_hash64(&v, 8, 9)), want);
        if (i < n) assert_true(want);
    }
    bk_ribbon_free(a);
    bk_ribbon_free(b);
    bk_ribbon_free(c);
    free(k);
    free(h);
    free(keys);
    free(lens);
}

/* Asked for, the older bodies are still made (body 1 below two shards' keys, body 2 above). */
static void older_bodies_on_request(void **state)
{
    (void)state;
    uint64_t *h = random_hashes(41, 70000);
    bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
    bk_ribbon *f;
    bk__ribbon_body = 1;
    assert_int_equal(bk_ribbon_build_hashes(h, 1000, &o, &f), BK_OK);
    assert_null(f->layers);
    assert_null(f->shards);
    assert_all_present(f, h, 1000);
    bk_ribbon_free(f);
    assert_int_equal(bk_ribbon_build_hashes(h, 70000, &o, &f), BK_OK);
    assert_null(f->layers);
    assert_non_null(f->shards);
    assert_all_present(f, h, 70000);
    bk_ribbon_free(f);
    bk__ribbon_body = 0;
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_false_negatives),
        cmocka_unit_test(fpr_and_space),
        cmocka_unit_test(paths_agree),
        cmocka_unit_test(duplicates_build_the_set),
        cmocka_unit_test(key_forms),
        cmocka_unit_test(older_bodies_on_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
