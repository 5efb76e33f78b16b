/* Helpers shared by the Ribbon filter's unit tests (test_ribbon.c: bodies 1 and 2; test_ribbon3.c: body 3). */
#ifndef BLOOMKIT_TESTS_RIBBON_TESTS_H
#define BLOOMKIT_TESTS_RIBBON_TESTS_H
#include "testutil.h"
#include <bloomkit/bloomkit.h>
#include "filters/internal.h"
#include "filters/testing.h"
#include "filters/ribbon_impl.h"

static inline uint64_t *random_hashes(uint64_t stream, size_t n)
{
    uint64_t *h = malloc((n ? n : 1) * sizeof *h);
    assert_non_null(h);
    for (size_t i = 0; i < n; i++) h[i] = tu_splitmix(&stream);
    return h;
}

/* Every value present, by the single and the batch form. */
static inline void assert_all_present(const bk_ribbon *f, const uint64_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!bk_ribbon_contains_hash(f, h[i])) fail_msg("false negative: value %zu of %zu", i, n);
    uint8_t *res = malloc(n ? n : 1);
    assert_non_null(res);
    memset(res, 0, n ? n : 1);
    assert_int_equal(TU_HITS(bk_ribbon_contains_hashes, f, h, n, res), n);
    for (size_t i = 0; i < n; i++) assert_int_equal(res[i], 1);
    assert_int_equal(TU_HITS(bk_ribbon_contains_hashes, f, h, n, NULL), n);
    free(res);
}

/* The same words (and for body 3 the same layers). */
static inline void assert_same_data(const bk_ribbon *a, const bk_ribbon *b)
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

static inline tu_membuf encode(const bk_ribbon *f)
{
    tu_membuf m = { 0 };
    bk_writer w = { tu_mem_sink, &m, 0 };
    assert_int_equal(bk__ribbon_vtable.encode(f, &w), BK_OK);
    assert_int_equal(w.offset, m.len);
    return m;
}

/* As the loader does: a body the decoder did not consume to its end is refused (BK_ECORRUPT). */
static inline bk_status decode(const uint8_t *buf, size_t len, bool borrow, uint64_t seed, bk_ribbon **out)
{
    bk_reader r = { buf, len, 0, borrow, false, seed, NULL, NULL };
    void *f = (void *)0x1;
    bk_status s = bk__ribbon_vtable.decode(&r, &f);
    if (s == BK_OK && r.off != len) {
        bk_ribbon_free(f);
        f = NULL;
        s = BK_ECORRUPT;
    }
    if (s != BK_OK) assert_null(f);
    *out = f;
    return s;
}

/* m (the encoding of f, built from the n distinct hashes h with seed), decoded borrowed or copied, is
 * f: the same data, count and FPR, every key present, the same answers on `probes` random hashes; it
 * encodes to m again, and its clone is f too. */
static inline void check_decoded(const tu_membuf *m, const bk_ribbon *f, const uint64_t *h, size_t n, uint64_t seed,
                          int borrow, int probes)
{
    bk_ribbon *g;
    assert_int_equal(decode(m->buf, m->len, borrow, seed, &g), BK_OK);
    assert_same_data(f, g);
    assert_int_equal(bk_ribbon_count(g), n);
    assert_true(bk_ribbon_fpr(g) == bk_ribbon_fpr(f));
    assert_all_present(g, h, n);
    uint64_t st = 3;
    for (int i = 0; i < probes; i++) {
        uint64_t x = tu_splitmix(&st);
        assert_int_equal(bk_ribbon_contains_hash(f, x), bk_ribbon_contains_hash(g, x));
    }
    tu_membuf m2 = encode(g);
    assert_int_equal(m2.len, m->len);
    assert_memory_equal(m2.buf, m->buf, m->len);
    free(m2.buf);
    bk_ribbon *c;
    assert_int_equal(bk_ribbon_clone(g, &c), BK_OK);
    bk_ribbon_free(g);
    assert_same_data(f, c);
    assert_all_present(c, h, n);
    bk_ribbon_free(c);
}

static inline void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }

#endif
