/* The blocked filter's header-inline view: the same bits and answers as the library, on every form. */
#include "testutil.h"
#include <bloomkit/experimental.h>

#define N 1000000

static uint64_t *hashes(uint64_t set, size_t n, uint64_t seed)
{
    uint64_t *h = malloc(n * sizeof *h);
    assert_non_null(h);
    for (size_t i = 0; i < n; i++) {
        tu_key k = tu_make_key(set, i);
        h[i] = bk_hash64(k.b, sizeof k.b, seed);
    }
    return h;
}

static void add_scalar(bk_blocked_view v, const uint64_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++) bk_blocked_view_add_scalar(v, h[i]);
}
static void query_scalar(bk_blocked_view v, const uint64_t *h, size_t n, uint8_t *res)
{
    for (size_t i = 0; i < n; i++) res[i] = bk_blocked_view_contains_scalar(v, h[i]);
}
static void add_auto(bk_blocked_view v, const uint64_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++) bk_blocked_view_add(v, h[i]);
}
static void query_auto(bk_blocked_view v, const uint64_t *h, size_t n, uint8_t *res)
{
    for (size_t i = 0; i < n; i++) res[i] = bk_blocked_view_contains(v, h[i]);
}
#ifdef BK_BLOCKED_VIEW_HAVE_AVX2
__attribute__((target("avx2"))) static void add_avx2(bk_blocked_view v, const uint64_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++) bk_blocked_view_add_avx2(v, h[i]);
}
__attribute__((target("avx2"))) static void query_avx2(bk_blocked_view v, const uint64_t *h, size_t n,
                                                       uint8_t *res)
{
    for (size_t i = 0; i < n; i++) res[i] = bk_blocked_view_contains_avx2(v, h[i]);
}
#endif

typedef struct {
    const char *name;
    void (*add)(bk_blocked_view, const uint64_t *, size_t);
    void (*query)(bk_blocked_view, const uint64_t *, size_t, uint8_t *);
} view_form;

static int forms(view_form out[3])
{
    int n = 0;
    out[n++] = (view_form){ "scalar", add_scalar, query_scalar };
    out[n++] = (view_form){ "auto", add_auto, query_auto };
#ifdef BK_BLOCKED_VIEW_HAVE_AVX2
    if (bk_simd_best() >= BK_SIMD_AVX2) out[n++] = (view_form){ "avx2", add_avx2, query_avx2 };
#endif
    return n;
}

static bk_blocked *make_mk(uint64_t m, bk_simd simd)
{
    bk_blocked_options o = { .layout = BK_BLOCKED_SPLIT256, .seed = 5 };
    bk_blocked *f = NULL;
    assert_int_equal(bk_blocked_new_mk(m, 8, 1000, &o, &f), BK_OK);
    if (simd != BK_SIMD_AUTO) assert_int_equal(bk_blocked_set_simd(f, simd), BK_OK);
    return f;
}

/* Filters of 1, 3, 1021 and 2^20 + 7 blocks (the last one 32 MiB: the block index's high bits) filled
 * through each view form and through every library path hold the same bytes; every form answers
 * the same as the library on present and absent keys. */
static void view_is_bit_identical_to_library(void **state)
{
    (void)state;
    enum { M = 300000 };
    const uint64_t blocks[] = { 1, 3, 1021, (UINT64_C(1) << 20) + 7 };
    uint64_t *ins = hashes(1, M, 5), *qs = hashes(2, 2 * M, 5);
    for (size_t i = 0; i < 2 * M; i += 2) qs[i] = ins[i / 2]; /* half the queries are present */
    uint8_t *ref = malloc(2 * M), *res = malloc(2 * M);
    view_form vf[3];
    int nf = forms(vf);
    for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
        uint64_t m = blocks[bi] * 256;
        size_t nins = blocks[bi] < 100 ? 20 : M; /* tiny filters: a few keys, not a saturated array */
        bk_blocked *lib = make_mk(m, BK_SIMD_SCALAR);
        assert_int_equal(bk_blocked_add_hashes(lib, ins, nins), BK_OK);
        size_t len;
        const uint8_t *want = bk_blocked_data(lib, &len);
        bk_blocked_contains_hashes(lib, qs, 2 * M, ref, NULL);
        /* every library path answers like the scalar one on the same filter */
        for (bk_simd s = BK_SIMD_SCALAR; s <= bk_simd_best(); s++) {
            assert_int_equal(bk_blocked_set_simd(lib, s), BK_OK);
            for (size_t i = 0; i < 2 * M; i += 7) assert_int_equal(bk_blocked_contains_hash(lib, qs[i]), ref[i]);
        }
        for (int fi = 0; fi < nf; fi++) {
            bk_blocked *f = make_mk(m, BK_SIMD_AUTO);
            bk_blocked_view v;
            assert_int_equal(bk_blocked_get_view(f, &v), BK_OK);
            assert_int_equal(v.blocks, blocks[bi]);
            vf[fi].add(v, ins, nins);
            bk_blocked_note_added(f, nins);
            assert_int_equal(bk_blocked_count(f), nins);
            assert_memory_equal(bk_blocked_data(f, NULL), want, len);
            /* the view answers as the library on the library-built filter, and vice versa */
            bk_blocked_view lv;
            assert_int_equal(bk_blocked_get_view(lib, &lv), BK_OK);
            vf[fi].query(lv, qs, 2 * M, res);
            assert_memory_equal(res, ref, 2 * M);
            vf[fi].query(v, qs, 2 * M, res);
            assert_memory_equal(res, ref, 2 * M);
            print_message("%llu blocks: view %s identical to the library\n", (unsigned long long)blocks[bi],
                          vf[fi].name);
            bk_blocked_free(f);
        }
        bk_blocked_free(lib);
    }
    free(ref);
    free(res);
    free(ins);
    free(qs);
}

/* No false negatives for 1,000,000 keys inserted through each view form (and found by each form and
 * by the library's single and batch queries). */
static void view_no_false_negatives(void **state)
{
    (void)state;
    uint64_t *h = hashes(3, N, 9);
    uint8_t *res = malloc(N);
    view_form vf[3];
    int nf = forms(vf);
    for (int fi = 0; fi < nf; fi++) {
        bk_blocked_options o = { .layout = BK_BLOCKED_SPLIT256, .seed = 9 };
        bk_blocked *f = NULL;
        assert_int_equal(bk_blocked_new(N, 0.01, &o, &f), BK_OK);
        bk_blocked_view v;
        assert_int_equal(bk_blocked_get_view(f, &v), BK_OK);
        vf[fi].add(v, h, N);
        for (int qi = 0; qi < nf; qi++) {
            memset(res, 0, N);
            vf[qi].query(v, h, N, res);
            for (size_t i = 0; i < N; i++)
                if (!res[i]) fail_msg("false negative: view %s/%s key %zu", vf[fi].name, vf[qi].name, i);
        }
        assert_int_equal(TU_HITS(bk_blocked_contains_hashes, f, h, N, NULL), N);
        for (size_t i = 0; i < N; i++) assert_true(bk_blocked_contains_hash(f, h[i]));
        bk_blocked_free(f);
    }
    free(res);
    free(h);
}

static void view_refusals(void **state)
{
    (void)state;
    bk_blocked_view v = { NULL, 0 };
    bk_blocked *f = NULL;
    bk_blocked_options o = { .layout = BK_BLOCKED_512, .seed = 0 };
    assert_int_equal(bk_blocked_new(1000, 0.01, &o, &f), BK_OK);
    assert_int_equal(bk_blocked_get_view(f, &v), BK_ENOTSUP);
    assert_null(v.words);
    assert_int_equal(bk_blocked_get_view(NULL, &v), BK_EINVAL);
    assert_int_equal(bk_blocked_get_view(f, NULL), BK_EINVAL);
    bk_blocked_note_added(NULL, 3); /* harmless */
    bk_blocked_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(view_is_bit_identical_to_library),
        cmocka_unit_test(view_no_false_negatives),
        cmocka_unit_test(view_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
