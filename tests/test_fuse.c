#include "testutil.h"
#include <bloomkit/bloomkit.h>
#include "filters/internal.h"

static uint64_t *random_hashes(uint64_t stream, size_t n)
{
    uint64_t *h = malloc((n ? n : 1) * sizeof *h);
    assert_non_null(h);
    for (size_t i = 0; i < n; i++) h[i] = tu_splitmix(&stream);
    return h;
}

static bk_fuse *build_h(const uint64_t *h, size_t n, uint32_t bits, uint64_t seed)
{
    bk_fuse_options o = { .fingerprint_bits = bits, .max_attempts = 0, .seed = seed };
    bk_fuse *f = NULL;
    assert_int_equal(bk_fuse_build_hashes(h, n, &o, &f), BK_OK);
    assert_non_null(f);
    return f;
}

/* Every value present, by the single and the batch form. */
static void assert_all_present(const bk_fuse *f, const uint64_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!bk_fuse_contains_hash(f, h[i])) fail_msg("false negative: value %zu of %zu", i, n);
    uint8_t *res = malloc(n ? n : 1);
    assert_non_null(res);
    memset(res, 0, n ? n : 1);
    assert_int_equal(TU_HITS(bk_fuse_contains_hashes, f, h, n, res), n);
    for (size_t i = 0; i < n; i++) assert_int_equal(res[i], 1);
    assert_int_equal(TU_HITS(bk_fuse_contains_hashes, f, h, n, NULL), n);
    free(res);
}

static void assert_same_data(const bk_fuse *a, const bk_fuse *b)
{
    size_t la, lb;
    const uint8_t *da = bk_fuse_data(a, &la), *db = bk_fuse_data(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
}

/* Input with duplicates: every value 1 to 3 times, one value 300 times (more than a cell's 8-bit key
 * count holds), in a shuffled order. */
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

/* ---- small sets, where construction bugs hide ---- */

static void small_sets_no_false_negatives(void **state)
{
    (void)state;
    static const size_t sizes[] = { 0, 1, 2, 3, 4, 5, 7, 8, 10, 16, 20, 33, 50, 100, 255, 256, 257, 300, 500, 1000, 4096 };
    for (int bits = 8; bits <= 16; bits += 8) {
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            size_t n = sizes[s];
            for (uint64_t stream = 1; stream <= 20; stream++) {
                uint64_t *h = random_hashes(stream * 1000 + n, n);
                bk_fuse *f = build_h(h, n, (uint32_t)bits, stream);
                assert_int_equal(bk_fuse_count(f), n);
                assert_int_equal(bk_fuse_fingerprint_bits(f), bits);
                assert_all_present(f, h, n);

                /* the same set with duplicates, shuffled: the very same filter */
                size_t m;
                uint64_t *d = with_duplicates(h, n, &m, stream);
                bk_fuse *g = build_h(d, m, (uint32_t)bits, stream);
                assert_int_equal(bk_fuse_count(g), n);
                assert_all_present(g, h, n);
                assert_same_data(f, g);
                bk_fuse_free(g);
                free(d);
                bk_fuse_free(f);
                free(h);
            }
        }
    }
}

static void empty_filter_says_absent(void **state)
{
    (void)state;
    for (int bits = 8; bits <= 16; bits += 8) {
        bk_fuse *f = build_h(NULL, 0, (uint32_t)bits, 0);
        uint64_t st = 5;
        for (int i = 0; i < 100000; i++) assert_false(bk_fuse_contains_hash(f, tu_splitmix(&st)));
        assert_false(bk_fuse_contains(f, "", 0));
        uint64_t h[3] = { 1, 2, 3 };
        uint8_t r[3] = { 9, 9, 9 };
        assert_int_equal(TU_HITS(bk_fuse_contains_hashes, f, h, 3, r), 0);
        assert_int_equal(r[0] | r[1] | r[2], 0);
        bk_stats st2;
        bk_fuse_stats(f, &st2);
        assert_int_equal(st2.count, 0);
        assert_true(st2.fpr_now == 0.0);
        bk_fuse_free(f);
        /* bytes form, n = 0 with NULL arrays */
        bk_fuse_options o = { .fingerprint_bits = (uint32_t)bits, .max_attempts = 0, .seed = 7 };
        assert_int_equal(bk_fuse_build(NULL, NULL, 0, &o, &f), BK_OK);
        assert_false(bk_fuse_contains(f, "x", 1));
        bk_fuse_free(f);
    }
}

/* ---- bytes keys: equal to the pre-hashed form of bk_hash64(key, len, seed) ---- */

static void bytes_form_equals_prehashed(void **state)
{
    (void)state;
    enum { M = 20000 };
    static tu_key keys[M];
    static const void *ptrs[M + M / 2];
    static size_t lens[M + M / 2];
    static uint64_t h[M];
    static uint8_t res[M + M / 2];
    const uint64_t seed = 0x5eed;
    for (int i = 0; i < M; i++) {
        keys[i] = tu_make_key(3, (uint64_t)i);
        ptrs[i] = keys[i].b;
        lens[i] = (size_t)(i % 17); /* prefixes of various lengths: many duplicates, the empty key */
    }
    lens[M - 1] = sizeof keys[0].b;
    for (int i = 0; i < M; i++) h[i] = bk_hash64(ptrs[i], lens[i], seed);
    /* a second copy of half the keys */
    for (int i = 0; i < M / 2; i++) {
        ptrs[M + i] = ptrs[2 * i];
        lens[M + i] = lens[2 * i];
    }
    for (int bits = 8; bits <= 16; bits += 8) {
        bk_fuse_options o = { .fingerprint_bits = (uint32_t)bits, .max_attempts = 0, .seed = seed };
        bk_fuse *a = NULL, *b = NULL;
        assert_int_equal(bk_fuse_build(ptrs, lens, M + M / 2, &o, &a), BK_OK);
        assert_int_equal(bk_fuse_build_hashes(h, M, &o, &b), BK_OK);
        assert_same_data(a, b);
        assert_int_equal(bk_fuse_count(a), bk_fuse_count(b));
        assert_true(bk_fuse_count(a) < M); /* prefixes collide: duplicates were removed */
        assert_int_equal(bk_fuse_seed(a), seed);
        for (int i = 0; i < M; i++) assert_true(bk_fuse_contains(a, ptrs[i], lens[i]));
        assert_true(bk_fuse_contains(a, NULL, 0)); /* the empty key is a key */
        assert_int_equal(TU_HITS(bk_fuse_contains_many, a, ptrs, lens, M + M / 2, res), M + M / 2);
        bk_fuse_free(a);
        bk_fuse_free(b);
    }
}

/* ---- 10 million keys ---- */

static void ten_million_keys(void **state)
{
    (void)state;
    const size_t n = 10000000;
    uint64_t *h = random_hashes(77, n);

    bk_fuse *f = build_h(h, n, 8, 1);
    bk_stats st;
    bk_fuse_stats(f, &st);
    print_message("n=%zu 8-bit: %.3f bits/key\n", n, st.bits_per_key);
    assert_int_equal(st.count, n);
    assert_true(st.bits_per_key <= 9.1);
    assert_int_equal(st.type, BK_TYPE_FUSE);
    assert_int_equal(st.k, 8);
    assert_all_present(f, h, n);
    bk_fuse_free(f);

    /* 16-bit, from input with duplicates: the first 500,000 values once more, at the end */
    const size_t dup = 500000;
    uint64_t *d = realloc(h, (n + dup) * sizeof *d);
    assert_non_null(d);
    memcpy(d + n, d, dup * sizeof *d);
    f = build_h(d, n + dup, 16, 2);
    bk_fuse_stats(f, &st);
    print_message("n=%zu 16-bit (with %zu duplicates): %.3f bits/key\n", n, dup, st.bits_per_key);
    assert_int_equal(st.count, n);
    assert_true(st.bits_per_key <= 18.2);
    assert_int_equal(st.k, 16);
    assert_all_present(f, d, n + dup);
    bk_fuse_free(f);
    free(d);

    /* the sizing function agrees with what was built */
    bk_geometry g;
    assert_int_equal(bk_fuse_size(n, 8, &g), BK_OK);
    assert_true(g.bits_per_key <= 9.1);
    assert_int_equal(bk_fuse_size(n, 16, &g), BK_OK);
    assert_true(g.bits_per_key <= 18.2);
    assert_true(fabs(g.bits_per_key - st.bits_per_key) < 1e-9);
}

/* ---- false-positive rate ---- */

/* Fraction of `trials` fresh values (a stream no key came from) reported present. */
static double measure_fpr(const bk_fuse *f, uint64_t stream, uint64_t trials)
{
    enum { B = 4096 };
    uint64_t buf[B], fp = 0;
    for (uint64_t done = 0; done < trials; done += B) {
        size_t c = trials - done < B ? (size_t)(trials - done) : B;
        for (size_t i = 0; i < c; i++) buf[i] = tu_splitmix(&stream);
        fp += TU_HITS(bk_fuse_contains_hashes, f, buf, c, NULL);
    }
    return (double)fp / (double)trials;
}

static void fpr_8_bits(void **state)
{
    (void)state;
    const size_t n = 1000000;
    uint64_t *h = random_hashes(11, n);
    bk_fuse *f = build_h(h, n, 8, 3);
    /* 4M trials: about 15,600 false positives expected, sd ~125 (0.8%): +-15% is ~19 sd */
    double fpr = measure_fpr(f, 12345, 4000000);
    print_message("8-bit: measured FPR %.6f, 2^-8 = %.6f\n", fpr, 1.0 / 256);
    TU_ASSERT_WITHIN(fpr, 1.0 / 256, 0.15);
    /* bytes keys, single calls */
    uint64_t fp = 0;
    for (uint64_t i = 0; i < 1000000; i++) {
        tu_key k = tu_make_key(99, i);
        fp += bk_fuse_contains(f, k.b, sizeof k.b);
    }
    print_message("8-bit, bytes keys: measured FPR %.6f\n", fp / 1e6);
    TU_ASSERT_WITHIN(fp / 1e6, 1.0 / 256, 0.15); /* ~3,900 expected, sd 1.6% */
    bk_stats st;
    bk_fuse_stats(f, &st);
    assert_true(st.fpr_target == 1.0 / 256 && st.fpr_now == 1.0 / 256);
    bk_fuse_free(f);
    free(h);
}

static void fpr_16_bits(void **state)
{
    (void)state;
    const size_t n = 1000000;
    uint64_t *h = random_hashes(21, n);
    bk_fuse *f = build_h(h, n, 16, 4);
    /* 50M trials: ~763 false positives expected, sd ~27.6 (3.6%): +-15% is ~4.1 sd. */
    uint64_t trials = 50000000;
    double fpr = measure_fpr(f, 54321, trials);
    print_message("16-bit: measured FPR %.3g over %llu trials, 2^-16 = %.3g\n", fpr,
                  (unsigned long long)trials, 1.0 / 65536);
    TU_ASSERT_WITHIN(fpr, 1.0 / 65536, 0.15);
    bk_fuse_free(f);
    free(h);
}

/* ---- serialization through the type's table ---- */

static tu_membuf encode(const bk_fuse *f)
{
    tu_membuf m = { 0 };
    bk_writer w = { tu_mem_sink, &m, 0 };
    assert_int_equal(bk__fuse_vtable.encode(f, &w), BK_OK);
    assert_int_equal(w.offset, m.len);
    return m;
}

static bk_status decode(const uint8_t *buf, size_t len, bool borrow, uint64_t seed, bk_fuse **out)
{
    bk_reader r = { buf, len, 0, borrow, false, seed, NULL, NULL };
    void *f = (void *)0x1;
    bk_status s = bk__fuse_vtable.decode(&r, &f);
    if (s == BK_OK) assert_int_equal(r.off, len);
    else assert_null(f);
    *out = f;
    return s;
}

static void round_trip(void **state)
{
    (void)state;
    for (int bits = 8; bits <= 16; bits += 8) {
        const size_t n = 100000;
        uint64_t *h = random_hashes(31, n);
        bk_fuse *f = build_h(h, n, (uint32_t)bits, 0xabc);
        tu_membuf m = encode(f);
        /* a copy, and a borrowed view into the buffer */
        for (int borrow = 0; borrow <= 1; borrow++) {
            bk_fuse *g = NULL;
            assert_int_equal(decode(m.buf, m.len, borrow, 0xabc, &g), BK_OK);
            assert_same_data(f, g);
            size_t len;
            const uint8_t *d = bk_fuse_data(g, &len);
            if (borrow) assert_ptr_equal(d, m.buf + 64);
            else assert_true(d < m.buf || d >= m.buf + m.len);
            assert_int_equal(bk_fuse_count(g), n);
            assert_int_equal(bk_fuse_seed(g), 0xabc);
            assert_all_present(g, h, n);
            uint64_t st = 99;
            for (int i = 0; i < 100000; i++) {
                uint64_t x = tu_splitmix(&st);
                assert_int_equal(bk_fuse_contains_hash(f, x), bk_fuse_contains_hash(g, x));
            }
            /* re-encoding gives the same bytes; a clone of a borrowed filter owns its memory */
            tu_membuf m2 = encode(g);
            assert_int_equal(m2.len, m.len);
            assert_memory_equal(m2.buf, m.buf, m.len);
            free(m2.buf);
            bk_fuse *c = NULL;
            assert_int_equal(bk_fuse_clone(g, &c), BK_OK);
            bk_fuse_free(g);
            assert_same_data(f, c);
            assert_all_present(c, h, n);
            bk_fuse_free(c);
        }
        free(m.buf);
        bk_fuse_free(f);
        free(h);
    }
    /* the empty filter round-trips too */
    bk_fuse *e = build_h(NULL, 0, 8, 0);
    tu_membuf m = encode(e);
    bk_fuse *g = NULL;
    assert_int_equal(decode(m.buf, m.len, false, 0, &g), BK_OK);
    assert_false(bk_fuse_contains(g, "a", 1));
    bk_fuse_free(g);
    free(m.buf);
    bk_fuse_free(e);
}

__extension__ typedef unsigned __int128 u128;

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* docs/FORMAT.md 6.6 computed here from the saved body: x = h when mix_seed is 0, else
 * remix(h + mix_seed); the cells and the fingerprint from x. */
static bool doc_query(const uint8_t *body, uint64_t h)
{
    uint32_t bits = (uint32_t)get64(body) & 0xffffffffu;
    uint64_t w = get64(body + 4) & 0xffffffffu, segs = get64(body + 8), count = get64(body + 24);
    uint64_t mix = get64(body + 32), x = h;
    if (mix != 0) {
        x = h + mix;
        x ^= x >> 33;
        x *= UINT64_C(0xff51afd7ed558ccd);
        x ^= x >> 33;
        x *= UINT64_C(0xc4ceb9fe1a85ec53);
        x ^= x >> 33;
    }
    uint64_t c0 = (uint64_t)(((u128)x * (segs * w)) >> 64);
    uint64_t c1 = (c0 + w) ^ ((x >> 18) & (w - 1)), c2 = (c0 + 2 * w) ^ (x & (w - 1));
    uint64_t mask = bits == 8 ? 0xff : 0xffff, fp = (x ^ (x >> 32)) & mask;
    const uint8_t *cells = body + 64;
    uint64_t v0 = bits == 8 ? cells[c0] : (uint64_t)(cells[2 * c0] | cells[2 * c0 + 1] << 8);
    uint64_t v1 = bits == 8 ? cells[c1] : (uint64_t)(cells[2 * c1] | cells[2 * c1 + 1] << 8);
    uint64_t v2 = bits == 8 ? cells[c2] : (uint64_t)(cells[2 * c2] | cells[2 * c2 + 1] << 8);
    return count > 0 && (v0 ^ v1 ^ v2) == fp;
}

/* A construction's first attempt takes the hashes as they are (mix_seed 0: one mix per query); when it
 * fails, the retry remixes with a nonzero seed. Both kinds of filter answer as the format says, have
 * no false negatives, and keep the FPR. Hashes 0..n-1 (not mixed at all: the first attempt puts every
 * key into the first segment and cannot peel) force the retry. */
static void first_attempt_unmixed_retry_remixed(void **state)
{
    (void)state;
    const size_t n = 20000;
    uint64_t *h = random_hashes(77, n), *seq = malloc(n * sizeof *seq);
    assert_non_null(seq);
    for (size_t i = 0; i < n; i++) seq[i] = i;
    for (int bits = 8; bits <= 16; bits += 8) {
        for (int form = 0; form < 2; form++) {
            const uint64_t *in = form ? seq : h;
            bk_fuse *f = build_h(in, n, (uint32_t)bits, 5);
            tu_membuf m = encode(f);
            uint64_t mix = get64(m.buf + 32);
            if (form) assert_true(mix != 0);
            else assert_int_equal(mix, 0);
            assert_all_present(f, in, n);
            for (size_t i = 0; i < n; i++) assert_true(doc_query(m.buf, in[i]));
            uint64_t st = 1234, pos = 0;
            const int q = 200000;
            for (int i = 0; i < q; i++) {
                uint64_t x = tu_splitmix(&st) | UINT64_C(1) << 63; /* never one of the inputs */
                bool a = bk_fuse_contains_hash(f, x);
                assert_int_equal(a, doc_query(m.buf, x));
                pos += a;
            }
            /* 2^-bits expected: 781 of 200,000 at 8 bits, 3 at 16; bounds far outside chance */
            if (bits == 8) assert_true(pos > 600 && pos < 980);
            else assert_true(pos < 20);
            free(m.buf);
            bk_fuse_free(f);
        }
    }
    free(seq);
    free(h);
}

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }

static void decode_refuses_damage(void **state)
{
    (void)state;
    const size_t n = 5000;
    uint64_t *h = random_hashes(41, n);
    bk_fuse *f = build_h(h, n, 16, 0);
    tu_membuf m = encode(f);
    uint8_t *b = aligned_alloc(64, (m.len + 63) / 64 * 64);
    bk_fuse *g;
    /* truncation anywhere */
    for (size_t cut = 0; cut < m.len; cut += (cut < 128 ? 1 : 97)) {
        assert_int_equal(decode(m.buf, cut, cut & 1, 0, &g), BK_ETRUNCATED);
    }
    /* each parameter out of range or inconsistent */
    struct { size_t off; int width; uint64_t value; } bad[] = {
        { 0, 4, 0 }, { 0, 4, 12 }, { 0, 4, 32 },                 /* fingerprint bits */
        { 4, 4, 0 }, { 4, 4, 2 }, { 4, 4, 3000 }, { 4, 4, 1u << 19 }, /* segment length */
        { 8, 8, 0 }, { 8, 8, UINT64_MAX }, { 8, 8, 1 },          /* segment count (1: cells disagree) */
        { 16, 8, 0 }, { 16, 8, UINT64_MAX }, { 16, 8, 12 },      /* cells */
        { 24, 8, UINT64_MAX },                                   /* count > cells */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memcpy(b, m.buf, m.len);
        if (bad[i].width == 4) put32(b + bad[i].off, (uint32_t)bad[i].value);
        else put64(b + bad[i].off, bad[i].value);
        bk_status s = decode(b, m.len, false, 0, &g);
        if (s != BK_ECORRUPT && s != BK_ETRUNCATED) fail_msg("damage %zu gave %s", i, bk_strerror(s));
    }
    /* a file claiming zero keys but holding fingerprints would answer "absent" for its keys */
    bk_fuse *e = build_h(NULL, 0, 8, 0);
    tu_membuf me = encode(e);
    me.buf[64 + 5] = 1;
    assert_int_equal(decode(me.buf, me.len, false, 0, &g), BK_ECORRUPT);
    memcpy(b, m.buf, m.len);
    put64(b + 24, 0);
    assert_int_equal(decode(b, m.len, false, 0, &g), BK_ECORRUPT);
    free(me.buf);
    bk_fuse_free(e);
    /* and the untouched buffer still decodes */
    assert_int_equal(decode(m.buf, m.len, true, 0, &g), BK_OK);
    bk_fuse_free(g);
    free(b);
    free(m.buf);
    bk_fuse_free(f);
    free(h);
}

static void static_set_has_no_updates(void **state)
{
    (void)state;
    /* the generic handle returns BK_ENOTSUP for NULL entries */
    assert_null(bk__fuse_vtable.add_hash);
    assert_null(bk__fuse_vtable.add_hashes);
    assert_null(bk__fuse_vtable.remove_hash);
    assert_null(bk__fuse_vtable.merge);
    assert_null(bk__fuse_vtable.clear);
    assert_int_equal(bk__fuse_vtable.type, BK_TYPE_FUSE);
    uint64_t h[2] = { 1, 2 };
    bk_fuse *f = build_h(h, 2, 8, 9);
    assert_true(bk__fuse_vtable.contains_hash(f, 1));
    assert_int_equal(bk__fuse_vtable.seed(f), 9);
    bk_stats st;
    bk__fuse_vtable.stats(f, &st);
    assert_int_equal(st.count, 2);
    bk__fuse_vtable.destroy(f);
}

/* ---- retries and the bound on them ---- */

static void attempts_are_bounded(void **state)
{
    (void)state;
    /* Small sets fail a single attempt a few percent of the time: find one (fixed streams, so always
     * the same one), check the bounded build refuses it cleanly and the default build succeeds. */
    const size_t n = 8;
    bool seen = false;
    for (uint64_t stream = 1; stream < 5000 && !seen; stream++) {
        uint64_t *h = random_hashes(stream, n);
        bk_fuse_options one = { .fingerprint_bits = 8, .max_attempts = 1, .seed = stream };
        bk_fuse *f = (bk_fuse *)0x1;
        bk_status s = bk_fuse_build_hashes(h, n, &one, &f);
        if (s == BK_EFULL) {
            seen = true;
            assert_null(f);
            bk_fuse *g = build_h(h, n, 8, stream);
            assert_all_present(g, h, n);
            bk_fuse_free(g);
        } else {
            assert_int_equal(s, BK_OK);
            assert_all_present(f, h, n);
            bk_fuse_free(f);
        }
        free(h);
    }
    assert_true(seen);
}

/* ---- sizing ---- */

static void sizing(void **state)
{
    (void)state;
    bk_geometry g;
    assert_int_equal(bk_fuse_size(1000000, 8, &g), BK_OK);
    assert_int_equal(g.k, 8);
    assert_int_equal(g.n, 1000000);
    assert_true(g.fpr == 1.0 / 256);
    assert_true(g.bits_per_key > 8.9 && g.bits_per_key < 9.2);
    assert_int_equal(g.m % 8, 0);
    bk_fuse *f = build_h(NULL, 0, 8, 0);
    bk_fuse_free(f);
    /* what a build really allocates */
    uint64_t *h = random_hashes(51, 1000000);
    f = build_h(h, 1000000, 8, 0);
    size_t len;
    bk_fuse_data(f, &len);
    assert_int_equal(len, g.m / 8);
    bk_fuse_free(f);
    free(h);

    assert_int_equal(bk_fuse_size_for_fpr(1000, 0.01, &g), BK_OK);
    assert_int_equal(g.k, 8);
    assert_int_equal(bk_fuse_size_for_fpr(1000, 1.0 / 256, &g), BK_OK);
    assert_int_equal(g.k, 8);
    assert_int_equal(bk_fuse_size_for_fpr(1000, 0.001, &g), BK_OK);
    assert_int_equal(g.k, 16);
    assert_true(g.fpr == 1.0 / 65536);
    assert_int_equal(bk_fuse_size_for_fpr(1000, 1e-6, &g), BK_EINVAL);
    assert_int_equal(bk_fuse_size_for_fpr(1000, 0, &g), BK_EINVAL);
    assert_int_equal(bk_fuse_size_for_fpr(1000, 1, &g), BK_EINVAL);
    assert_int_equal(bk_fuse_size_for_fpr(1000, NAN, &g), BK_EINVAL);
    assert_int_equal(bk_fuse_size(0, 8, &g), BK_EINVAL);
    assert_int_equal(bk_fuse_size(10, 12, &g), BK_EINVAL);
    assert_int_equal(bk_fuse_size(10, 8, NULL), BK_EINVAL);
    assert_int_equal(bk_fuse_size(BK_FUSE_MAX_KEYS + 1, 8, &g), BK_ETOOBIG);
    assert_int_equal(bk_fuse_size(BK_FUSE_MAX_KEYS, 16, &g), BK_OK);

    /* bits per key fall towards 9 (18) as n grows */
    double prev = 1e9;
    for (uint64_t n = 1000; n <= 1000000000; n *= 10) {
        assert_int_equal(bk_fuse_size(n, 8, &g), BK_OK);
        assert_true(g.bits_per_key <= prev + 0.05);
        prev = g.bits_per_key;
    }
    assert_true(prev < 9.05);

    /* construction memory: about 24-25 bytes per key for large n */
    uint64_t m8 = bk_fuse_build_memory(10000000, 8), m16 = bk_fuse_build_memory(10000000, 16);
    print_message("build memory at 10M: %.2f (8-bit), %.2f (16-bit) bytes/key\n", m8 / 1e7, m16 / 1e7);
    assert_true(m8 > 23 * 10000000ull && m8 < 25 * 10000000ull);
    assert_true(m16 > 24 * 10000000ull && m16 < 26 * 10000000ull);
    assert_true(m16 > m8);
    assert_int_equal(bk_fuse_build_memory(10, 12), 0);
}

/* ---- bad arguments ---- */

static void bad_input(void **state)
{
    (void)state;
    uint64_t h[2] = { 1, 2 };
    const void *keys[2] = { "a", NULL };
    size_t lens[2] = { 1, 3 };
    bk_fuse *f = (bk_fuse *)0x1;
    assert_int_equal(bk_fuse_build_hashes(h, 2, NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_fuse_build_hashes(NULL, 2, NULL, &f), BK_EINVAL);
    assert_null(f); /* nothing half-made */
    f = (bk_fuse *)0x1;
    assert_int_equal(bk_fuse_build_hashes(h, 2, &(bk_fuse_options){ .fingerprint_bits = 12, .max_attempts = 0, .seed = 0 }, &f), BK_EINVAL);
    assert_null(f);
    assert_int_equal(bk_fuse_build_hashes(h, 2, &(bk_fuse_options){ .fingerprint_bits = 32, .max_attempts = 0, .seed = 0 }, &f), BK_EINVAL);
    assert_int_equal(bk_fuse_build(keys, lens, 2, NULL, &f), BK_EINVAL); /* key NULL with len 3 */
    assert_null(f);
    assert_int_equal(bk_fuse_build(NULL, lens, 1, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_fuse_build(keys, NULL, 1, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_fuse_build(keys, lens, 1, &(bk_fuse_options){ .fingerprint_bits = 7, .max_attempts = 0, .seed = 0 }, &f), BK_EINVAL);
    assert_int_equal(bk_fuse_build(keys, lens, 1, NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_fuse_clone(NULL, &f), BK_EINVAL);
    assert_null(f);
    bk_fuse_free(NULL);
    lens[1] = 0; /* NULL with length 0 is the empty key */
    assert_int_equal(bk_fuse_build(keys, lens, 2, NULL, &f), BK_OK);
    assert_true(bk_fuse_contains(f, "a", 1));
    assert_true(bk_fuse_contains(f, NULL, 0));
    assert_true(bk_fuse_contains(f, "", 0));
    bk_fuse_free(f);
}

/* ---- the allocator sees everything, also on failure paths ---- */

static void allocator_and_out_of_memory(void **state)
{
    (void)state;
    tu_alloc_count cnt = { 0, -1 };
    bk_allocator a = { tu_count_malloc, tu_count_calloc, tu_count_free, &cnt };
    bk_set_allocator(&a);
    const size_t n = 3000;
    uint64_t *h = random_hashes(61, n);
    size_t m;
    uint64_t *d = with_duplicates(h, n, &m, 3);
    /* every allocation failing in turn: BK_ENOMEM, nothing made, nothing leaked */
    bool succeeded = false;
    for (long budget = 0; budget < 40 && !succeeded; budget++) {
        cnt.budget = budget;
        bk_fuse *f = (bk_fuse *)0x1;
        bk_status s = bk_fuse_build_hashes(d, m, NULL, &f);
        cnt.budget = -1;
        if (s == BK_OK) {
            succeeded = true;
            assert_all_present(f, h, n);
            bk_fuse_free(f);
        } else {
            assert_int_equal(s, BK_ENOMEM);
            assert_null(f);
        }
        assert_int_equal(cnt.live, 0);
    }
    assert_true(succeeded);
    /* the bytes path and a bounded failure free everything too */
    const void *ptrs[3] = { "x", "y", "z" };
    size_t lens[3] = { 1, 1, 1 };
    bk_fuse *f = NULL;
    assert_int_equal(bk_fuse_build(ptrs, lens, 3, NULL, &f), BK_OK);
    assert_true(cnt.live >= 2);
    bk_fuse_free(f);
    assert_int_equal(cnt.live, 0);
    bk_set_allocator(NULL);
    free(d);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_sets_no_false_negatives),
        cmocka_unit_test(empty_filter_says_absent),
        cmocka_unit_test(bytes_form_equals_prehashed),
        cmocka_unit_test(ten_million_keys),
        cmocka_unit_test(fpr_8_bits),
        cmocka_unit_test(fpr_16_bits),
        cmocka_unit_test(round_trip),
        cmocka_unit_test(first_attempt_unmixed_retry_remixed),
        cmocka_unit_test(decode_refuses_damage),
        cmocka_unit_test(static_set_has_no_updates),
        cmocka_unit_test(attempts_are_bounded),
        cmocka_unit_test(sizing),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(allocator_and_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
