/* The Ribbon filter's body 3 (bumped Ribbon, width 64): no false negatives at any n and p, the FPR and
 * space near the bound, the vector and portable paths alike, duplicates building as the set, and the
 * older bodies still made when asked for. */
#include "ribbon_tests.h"
#include <math.h>

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
    static const double ps[] = { 0.3, 0.1, 0.006, 1.0 / 256, 0.0015, 1.0 / 65536, 1e-5, 1.0 / (1 << 24), 1e-8, 1.5e-9 };
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

/* The build's portable loop and the one for this CPU make the same bits where many chunks are built
 * side by side (layer 0 of 300,000 keys: ten chunks, four at a time, then fewer), also when a repeated
 * hash makes the build start over in the middle of a layer. */
static void builds_agree(void **state)
{
    (void)state;
    static const double ps[] = { 0.1, 0.004, 1e-7 };
    const size_t n = 300000;
    uint64_t *h = random_hashes(13, n + 1);
    h[n] = h[n / 3]; /* the repeat, for the second round */
    for (size_t b = 0; b < sizeof ps / sizeof *ps; b++) {
        bk_ribbon *ref = build3(h, n, ps[b], 7);
        assert_all_present(ref, h, n);
        for (int portable = 0; portable < 2; portable++)
            for (size_t m = n; m <= n + 1; m++) {
                bk__ribbon_portable = portable;
                bk_ribbon *f = build3(h, m, ps[b], 7);
                bk__ribbon_portable = false;
                assert_int_equal(bk_ribbon_count(f), n);
                assert_same_data(ref, f);
                bk_ribbon_free(f);
            }
        bk_ribbon_free(ref);
    }
    free(h);
}

/* A key's answer read from the layers bit by bit as the format states it (a reference the query paths
 * are checked against): each layer's x (the hash itself in layer 0 when its seed is 0, else remixed
 * with the seed), its start, its block's threshold, then the dot product of its 64 coefficients with
 * each column over slots [start, start + 64) against the fingerprint's bits. */
static bool ref_contains(const bk_ribbon *f, uint64_t h)
{
    for (uint32_t k = 0; k < f->nlayers; k++) {
        const rb3_layer *L = &f->layers[k];
        const uint64_t x = k == 0 && L->seed == 0 ? h : bk__remix(h + L->seed);
        const uint64_t st = bk__range64(x, (L->nblocks - 1) * 64), b = st / 64, o = st % 64;
        const unsigned field = (unsigned)(L->meta[b / 32] >> (2 * (b % 32))) & 3;
        if (o < ((R3_THR >> (8 * field)) & 0xff) && k + 1 < f->nlayers) continue;
        const u128 c = (u128)x * R3_ROW_MUL;
        const uint64_t cf = (uint64_t)c | 1, fp = (uint64_t)(c >> 64);
        const uint32_t cols = f->lo + (b >= L->upper);
        const uint64_t first = b * f->lo + (b > L->upper ? b - L->upper : 0); /* block b's first word */
        for (uint32_t j = 0; j < cols; j++) {
            unsigned dot = 0;
            for (unsigned t = 0; t < 64; t++) {
                const uint64_t s = o + t; /* slot s of block b, or s - 64 of block b + 1 (its words after b's) */
                const uint64_t w = s < 64 ? L->w[first + j] : L->w[first + cols + j];
                dot ^= (unsigned)((cf >> t) & (w >> (s % 64)) & 1);
            }
            if (dot != ((fp >> j) & 1)) return false;
        }
        return true;
    }
    return false;
}

/* Every path (the one-key call by hash, by uint64 and by 8-byte key, the batch, the portable paths)
 * answers as the reference on present and absent keys, for layer 0 of seed 0 (one to four rounds of
 * columns) and for a filter of one layer retried with a seed. */
static void paths_match_reference(void **state)
{
    (void)state;
    static const double ps[] = { 0.1, 0.01, 1e-4, 1e-6, 1e-8 };
    const size_t q = 20000;
    uint64_t *keys = random_hashes(77, q);
    uint8_t *res = malloc(q);
    assert_non_null(res);
    static const double ones[] = { 0.1, 0.01 }; /* a retried single layer: the ymm and the halves form */
    const size_t nps = sizeof ps / sizeof *ps;
    for (size_t b = 0; b < nps + sizeof ones / sizeof *ones; b++) {
        const bool one = b >= nps; /* the retried single layer */
        const double p = one ? ones[b - nps] : ps[b];
        const size_t n = one ? 2000 : 20000;
        uint64_t *h = malloc(n * sizeof *h), sd = 0; /* the filter's seed: the keys' hashes */
        assert_non_null(h);
        bk_ribbon *f = NULL;
        if (one) {
            bk__ribbon_slack = -1; /* the hook: a last layer of one slot a key, which often fails */
            for (sd = 1; sd < 2000 && !f; sd++) {
                for (size_t i = 0; i < n; i++) h[i] = bk__hash_u64(keys[2 * i % q], sd); /* every other key */
                f = build3(h, n, p, sd);
                if (f->nlayers != 1 || f->layers[0].seed == 0) {
                    bk_ribbon_free(f);
                    f = NULL;
                }
            }
            sd--;
            bk__ribbon_slack = 0;
            assert_non_null(f);
        } else {
            for (size_t i = 0; i < n; i++) h[i] = bk__hash_u64(keys[2 * i % q], sd);
            f = build3(h, n, p, 0);
            assert_true(f->nlayers > 1);
            assert_int_equal(f->layers[0].seed, 0);
        }
        bk__ribbon_portable = true;
        bk_ribbon *port;
        assert_int_equal(bk_ribbon_clone(f, &port), BK_OK);
        bk__ribbon_portable = false;
        uint64_t *hq = malloc(q * sizeof *hq);
        assert_non_null(hq);
        for (size_t i = 0; i < q; i++) hq[i] = bk__hash_u64(keys[i], sd);
        size_t hits = 0;
        assert_int_equal(bk_ribbon_contains_hashes(f, hq, q, res, &hits), BK_OK);
        size_t want = 0;
        for (size_t i = 0; i < q; i++) {
            const bool r = ref_contains(f, hq[i]);
            want += r;
            if (i % 2 == 0 && i < 2 * n && !r) fail_msg("p %g, one layer %d: present key %zu not found", p, one, i);
            assert_int_equal(bk_ribbon_contains_hash(f, hq[i]), r);
            assert_int_equal(bk_ribbon_contains_hash(port, hq[i]), r);
            assert_int_equal(bk_ribbon_contains_u64(f, keys[i]), r);
            assert_int_equal(bk_ribbon_contains(f, &keys[i], 8), r);
            assert_int_equal(res[i], r);
        }
        assert_int_equal(hits, want);
        assert_true(want < q); /* absent keys answered false, not all true */
        bk_ribbon_free(port);
        bk_ribbon_free(f);
        free(hq);
        free(h);
    }
    free(res);
    free(keys);
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

/* ---- the file body ---- */

/* Saved and loaded (copied and borrowed): the same layers, data, count, FPR and answers; saved again,
 * the same bytes. */
static void round_trip(void **state)
{
    (void)state;
    static const size_t ns[] = { 1, 3000, 150000 };
    static const double ps[] = { 0.01, 1e-7, 0.002 };
    for (size_t a = 0; a < 3; a++) {
        uint64_t *h = random_hashes(51 + a, ns[a]);
        bk_ribbon *f = build3(h, ns[a], ps[a], 0xabc);
        tu_membuf m = encode(f);
        assert_int_equal(m.buf[0], 3);
        for (int borrow = 0; borrow <= 1; borrow++) {
            bk_ribbon *g;
            assert_int_equal(decode(m.buf, m.len, borrow, 0xabc, &g), BK_OK);
            assert_same_data(f, g);
            assert_int_equal(bk_ribbon_count(g), ns[a]);
            assert_true(bk_ribbon_fpr(g) == bk_ribbon_fpr(f));
            assert_all_present(g, h, ns[a]);
            uint64_t st = 3;
            for (int i = 0; i < 100000; i++) {
                uint64_t x = tu_splitmix(&st);
                assert_int_equal(bk_ribbon_contains_hash(f, x), bk_ribbon_contains_hash(g, x));
            }
            tu_membuf m2 = encode(g);
            assert_int_equal(m2.len, m.len);
            assert_memory_equal(m2.buf, m.buf, m.len);
            free(m2.buf);
            bk_ribbon_free(g);
        }
        free(m.buf);
        bk_ribbon_free(f);
        free(h);
    }
}

static void assert_refused(const uint8_t *b, size_t len, bool borrow, const char *what, size_t i)
{
    bk_ribbon *g;
    bk_status s = decode(b, len, borrow, 0, &g);
    if (s == BK_OK) {
        bk_ribbon_free(g);
        fail_msg("%s %zu accepted", what, i);
    }
    if (s != BK_ECORRUPT && s != BK_ETRUNCATED && s != BK_ETOOBIG) fail_msg("%s %zu gave %s", what, i, bk_strerror(s));
}

/* Truncations, each field out of range or inconsistent, a longer body: a clear status; a bit flipped
 * anywhere: a clear status or a filter that answers (never a crash). */
static void decode_refuses_damage(void **state)
{
    (void)state;
    const size_t n = 20000;
    uint64_t *h = random_hashes(61, n);
    bk_ribbon *f = build3(h, n, 0.01, 0);
    assert_true(f->nlayers >= 2);
    tu_membuf m = encode(f);
    uint8_t *b = aligned_alloc(64, (m.len + 128 + 63) / 64 * 64);
    bk_ribbon *g;
    for (size_t cut = 0; cut < m.len; cut += (cut < 256 ? 1 : 97))
        assert_int_equal(decode(m.buf, cut, cut & 1, 0, &g), BK_ETRUNCATED);
    const size_t rec = 64, L = f->nlayers, data = 64 + (24 * L + 63) / 64 * 64;
    const size_t last_meta = data + 8 * (size_t)(f->ndata - r3_span(f->layers[L - 1].nblocks, f->layers[L - 1].upper, f->lo));
    struct { size_t off; int width; uint64_t value; } bad[] = {
        { 0, 4, 4 }, { 0, 4, 0 },                                   /* no body */
        { 4, 4, 30 }, { 4, 4, 7 }, { 4, 4, 5 }, { 4, 4, UINT32_MAX }, /* columns */
        { 8, 8, 0 }, { 8, 8, UINT64_MAX },                          /* count: none, more than slots */
        { 16, 4, 0 }, { 16, 4, 17 }, { 16, 4, (uint32_t)L - 1 }, { 16, 4, (uint32_t)L + 1 }, /* layers */
        { 20, 4, 0 }, { 20, 4, R3_THR + 1 },                        /* thresholds */
        { 24, 8, 0 }, { 24, 8, f->ndata - 1 }, { 24, 8, f->ndata + 1 }, { 24, 8, UINT64_MAX }, /* words */
        { 32, 8, 1 }, { 56, 8, 1 },                                 /* padding */
        { rec, 8, 0 }, { rec, 8, 1 }, { rec, 8, UINT64_MAX }, { rec, 8, f->layers[0].nblocks + 1 }, /* blocks */
        { rec + 8, 8, UINT64_MAX },                                 /* upper past the blocks */
        { rec + 24, 8, 1 },                                         /* layer 1's blocks */
        { rec + 24 * L, 8, 1 },                                     /* padding after the records */
        { data + 8 * (size_t)(R3_META(f->layers[0].nblocks) + r3_words_of(f->layers[0].nblocks, f->layers[0].upper, f->lo)), 8, 1 }, /* a tail */
        { last_meta, 8, 1 },                                        /* the last layer bumping */
        { data + 8 * (size_t)R3_META(f->layers[0].nblocks) - 8, 8, UINT64_MAX }, /* fields past the blocks */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memcpy(b, m.buf, m.len);
        if (bad[i].width == 4) put32(b + bad[i].off, (uint32_t)bad[i].value);
        else put64(b + bad[i].off, bad[i].value);
        assert_refused(b, m.len, i & 1, "damage", i);
    }
    /* a longer body */
    memcpy(b, m.buf, m.len);
    memset(b + m.len, 0, 64);
    assert_refused(b, m.len + 64, false, "longer", 0);
    /* one bit flipped at a time: refused or answering; flips in the words change answers only */
    uint64_t st = 17;
    for (size_t i = 0; i < 3000; i++) {
        const size_t bit = i < 8 * data ? i : (size_t)(tu_splitmix(&st) % (8 * m.len));
        memcpy(b, m.buf, m.len);
        b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        bk_status s = decode(b, m.len, i & 1, 0, &g);
        if (s == BK_OK) {
            size_t hits = 0;
            for (size_t k = 0; k < 2000; k++) hits += bk_ribbon_contains_hash(g, h[k]);
            assert_true(hits <= 2000);
            bk_ribbon_free(g);
        } else if (s != BK_ECORRUPT && s != BK_ETRUNCATED && s != BK_ETOOBIG)
            fail_msg("flip %zu gave %s", bit, bk_strerror(s));
    }
    free(b);
    free(m.buf);
    bk_ribbon_free(f);
    free(h);
}

/* A last layer that fails is retried with a new seed (made to fail often by the test hook: one slot
 * a key): one attempt gives BK_EFULL for some sets, the default attempts build every set; a layer 0
 * that is the only layer and was retried is saved and loaded with its seed. */
static void last_layer_retries(void **state)
{
    (void)state;
    size_t efull = 0;
    bk__ribbon_slack = -1;
    for (uint64_t sd = 0; sd < 100; sd++) {
        const size_t n = sd & 1 ? 2000 : 30000; /* layer 0 the last, or a later layer */
        uint64_t *h = random_hashes(1000 + sd, n);
        bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
        o.fpr = 0.01;
        o.max_attempts = 1;
        bk_ribbon *f = (bk_ribbon *)0x1;
        bk__ribbon_body = 3;
        bk_status s = bk_ribbon_build_hashes(h, n, &o, &f);
        if (s == BK_EFULL) {
            efull++;
            assert_null(f);
        } else {
            assert_int_equal(s, BK_OK);
            bk_ribbon_free(f);
        }
        o.max_attempts = 0;
        assert_int_equal(bk_ribbon_build_hashes(h, n, &o, &f), BK_OK);
        bk__ribbon_body = 0;
        assert_all_present(f, h, n);
        {
            tu_membuf m = encode(f);
            bk_ribbon *g;
            assert_int_equal(decode(m.buf, m.len, false, 0, &g), BK_OK);
            assert_same_data(f, g);
            assert_all_present(g, h, n);
            bk_ribbon_free(g);
            free(m.buf);
        }
        bk_ribbon_free(f);
        free(h);
    }
    bk__ribbon_slack = 0;
    print_message("one attempt: %zu of 100 sets refused\n", efull);
    assert_true(efull > 0);
}

/* The sizing call agrees with the filter (within 0.5%) and states its FPR and checked bits. */
static void sizing_agrees(void **state)
{
    (void)state;
    static const size_t ns[] = { 1000, 100000, 1000000 };
    static const double ps[] = { 0.1, 0.01, 1e-4, 1e-6 };
    for (size_t a = 0; a < 3; a++) {
        uint64_t *h = random_hashes(71 + a, ns[a]);
        for (size_t c = 0; c < 4; c++) {
            bk_ribbon *f = build3(h, ns[a], ps[c], 1);
            bk_stats s;
            bk_ribbon_stats(f, &s);
            bk_geometry g;
            bk__ribbon_body = 3;
            assert_int_equal(bk_ribbon_size(ns[a], ps[c], &g), BK_OK);
            bk__ribbon_body = 0;
            TU_ASSERT_WITHIN((double)(g.m / 8), (double)s.memory_bytes, ns[a] >= 100000 ? 0.005 : 0.05);
            assert_int_equal(g.k, s.k);
            assert_true(g.fpr <= ps[c]);
            TU_ASSERT_WITHIN(g.fpr, bk_ribbon_fpr(f), 0.01);
            bk_ribbon_free(f);
        }
        free(h);
    }
}

/* ---- the allocator sees everything, also on failure paths ---- */

/* Every allocation failing in turn (with repeats in the input, so the start-over path runs too):
 * BK_ENOMEM and nothing left allocated, until the build succeeds. */
static void out_of_memory(void **state)
{
    (void)state;
    tu_alloc_count cnt = { 0, -1 };
    bk_allocator a = { tu_count_malloc, tu_count_calloc, tu_count_free, &cnt };
    const size_t n = 100000;
    uint64_t *h = random_hashes(81, n + 10);
    for (size_t i = 0; i < 10; i++) h[n + i] = h[i * 7];
    bool succeeded = false;
    bk__ribbon_body = 3;
    for (long budget = 0; budget < 200 && !succeeded; budget++) {
        cnt.budget = budget;
        bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
        o.allocator = &a;
        bk_ribbon *f = (bk_ribbon *)0x1;
        bk_status s = bk_ribbon_build_hashes(h, n + 10, &o, &f);
        cnt.budget = -1;
        if (s == BK_OK) {
            succeeded = true;
            assert_int_equal(bk_ribbon_count(f), n);
            assert_all_present(f, h, n);
            bk_ribbon_free(f);
        } else {
            assert_int_equal(s, BK_ENOMEM);
            assert_null(f);
        }
        assert_int_equal(cnt.live, 0);
    }
    bk__ribbon_body = 0;
    assert_true(succeeded);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_false_negatives),
        cmocka_unit_test(fpr_and_space),
        cmocka_unit_test(paths_agree),
        cmocka_unit_test(builds_agree),
        cmocka_unit_test(duplicates_build_the_set),
        cmocka_unit_test(key_forms),
        cmocka_unit_test(older_bodies_on_request),
        cmocka_unit_test(round_trip),
        cmocka_unit_test(decode_refuses_damage),
        cmocka_unit_test(sizing_agrees),
        cmocka_unit_test(last_layer_retries),
        cmocka_unit_test(paths_match_reference),
        cmocka_unit_test(out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
