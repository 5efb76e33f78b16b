/* The cuckoo filter: no false negatives, load, FPR, serialization, bad input. */
#include "testutil.h"
#include <bloomkit/bloomkit.h>
#include "filters/internal.h"
#include "filters/testing.h"

static bk_cuckoo *make_buckets(uint64_t buckets, uint32_t b, uint32_t f, uint32_t expansion, uint64_t seed)
{
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.bucket_size = b;
    o.fingerprint_bits = f;
    o.expansion = expansion;
    o.seed = seed;
    bk_cuckoo *c = NULL;
    assert_int_equal(bk_cuckoo_new_buckets(buckets, &o, &c), BK_OK);
    assert_non_null(c);
    return c;
}

static bk_cuckoo *make_cap(uint64_t capacity, uint32_t b, uint32_t f, uint64_t seed)
{
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.bucket_size = b;
    o.fingerprint_bits = f;
    o.seed = seed;
    bk_cuckoo *c = NULL;
    assert_int_equal(bk_cuckoo_new(capacity, 0, &o, &c), BK_OK);
    assert_non_null(c);
    return c;
}

/* ---- serialization through the vtable, into a malloc'd buffer ---- */

static tu_membuf encode(const bk_cuckoo *c)
{
    tu_membuf m = { NULL, 0, 0 };
    bk_writer w = { tu_mem_sink, &m, 0 };
    assert_int_equal(bk__cuckoo_vtable.encode(c, &w), BK_OK);
    assert_int_equal(w.offset, m.len);
    /* a size query (no sink) gives the same length */
    bk_writer count = { NULL, NULL, 0 };
    assert_int_equal(bk__cuckoo_vtable.encode(c, &count), BK_OK);
    assert_int_equal(count.offset, m.len);
    return m;
}

static bk_status decode(const uint8_t *buf, size_t len, uint64_t seed, bool borrow, bk_cuckoo **out)
{
    bk_reader r = { buf, len, 0, borrow, false, seed, NULL, NULL };
    void *f = NULL;
    bk_status s = bk__cuckoo_vtable.decode(&r, &f);
    *out = f;
    if (s == BK_OK) assert_int_equal(r.off, len);
    return s;
}

/* Encodes c, decodes the bytes (copied) and checks the decoded filter encodes to the same bytes:
 * returns the decoded filter, and the bytes in *m (the caller frees m->buf). */
static bk_cuckoo *round_trip(const bk_cuckoo *c, uint64_t seed, tu_membuf *m)
{
    *m = encode(c);
    bk_cuckoo *d = NULL;
    assert_int_equal(decode(m->buf, m->len, seed, false, &d), BK_OK);
    tu_membuf m2 = encode(d);
    assert_int_equal(m->len, m2.len);
    assert_memory_equal(m->buf, m2.buf, m->len);
    free(m2.buf);
    return d;
}

/* ---- What must hold: no false negatives at 95% load, b = 4, f = 16 ---- */

static void million_keys_at_95_percent(void **state)
{
    (void)state;
    enum { N = 1000000 };
    /* load_factor set: exactly 95% at N (the default adds the small-table slack, 0.4% at this N) */
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.bucket_size = 4;
    o.fingerprint_bits = 16;
    o.seed = 1;
    o.load_factor = 0.95;
    bk_cuckoo *c = NULL;
    assert_int_equal(bk_cuckoo_new(N, 0, &o, &c), BK_OK);
    for (uint64_t i = 0; i < N; i++) {
        tu_key k = tu_make_key(1, i);
        if (bk_cuckoo_add(c, k.b, sizeof k.b) != BK_OK) fail_msg("add %llu failed", (unsigned long long)i);
    }
    bk_cuckoo_info in;
    bk_cuckoo_get_info(c, &in);
    print_message("b=4 f=16: %llu keys, load %.4f, %.2f bits/key, %.2f kicks/key, victims %u\n",
                  (unsigned long long)in.items, in.load_factor, in.memory_bytes * 8.0 / in.items,
                  (double)in.kicks / in.items, in.victims);
    assert_true(in.load_factor >= 0.9499);
    assert_int_equal(in.items, N);
    assert_int_equal(in.inserted, N);
    assert_int_equal(in.tables, 1);
    for (uint64_t i = 0; i < N; i++) {
        tu_key k = tu_make_key(1, i);
        if (!bk_cuckoo_contains(c, k.b, sizeof k.b)) fail_msg("false negative: key %llu", (unsigned long long)i);
    }
    /* the batch query agrees, and finds everything */
    uint64_t *h = malloc(N * sizeof *h);
    uint8_t *res = malloc(N);
    for (uint64_t i = 0; i < N; i++) {
        tu_key k = tu_make_key(1, i);
        h[i] = bk_hash64(k.b, sizeof k.b, 1);
    }
    assert_int_equal(TU_HITS(bk_cuckoo_contains_hashes, c, h, N, res), N);
    free(h);
    free(res);
    bk_cuckoo_free(c);
}

/* Random interleavings of add and remove: every key added and not yet removed is found. */
static void interleaved_add_remove(void **state)
{
    (void)state;
    enum { CAP = 200000, OPS = 1500000 };
    const uint32_t fs[] = { 8, 12, 16 };
    for (int fi = 0; fi < 3; fi++) {
        bk_cuckoo *c = make_cap(CAP, 4, fs[fi], 9);
        uint64_t *live = malloc(CAP * sizeof *live); /* hashes of keys present, with duplicates */
        size_t nlive = 0;
        uint64_t st = 77 + fs[fi], next = 0, added = 0, removed = 0;
        for (uint64_t op = 0; op < OPS; op++) {
            uint64_t r = tu_splitmix(&st);
            /* aim near 90-95% load: add while below, else mostly remove */
            bool add = nlive < CAP * 9 / 10 ? (r % 100) < 70 : (r % 100) < 45;
            if (nlive >= CAP) add = false;
            if (add) {
                uint64_t h;
                if (nlive && (r >> 40) % 20 == 0) {
                    h = live[(r >> 8) % nlive]; /* a duplicate of a present key */
                } else {
                    tu_key k = tu_make_key(4, next++);
                    h = bk_hash64(k.b, sizeof k.b, 9);
                }
                bk_status s = bk_cuckoo_add_hash(c, h);
                if (s == BK_OK) {
                    live[nlive++] = h;
                    added++;
                } else {
                    assert_int_equal(s, BK_EFULL);
                }
            } else if (nlive) {
                size_t j = (size_t)((r >> 8) % nlive);
                assert_int_equal(bk_cuckoo_remove_hash(c, live[j]), BK_OK);
                live[j] = live[--nlive];
                removed++;
            }
            if (op % 250000 == 0 || op == OPS - 1)
                for (size_t j = 0; j < nlive; j++)
                    if (!bk_cuckoo_contains_hash(c, live[j])) fail_msg("f=%u op %llu: false negative", fs[fi], (unsigned long long)op);
        }
        bk_cuckoo_info in;
        bk_cuckoo_get_info(c, &in);
        assert_int_equal(in.items, nlive);
        assert_int_equal(in.inserted, added);
        assert_int_equal(in.deleted, removed);
        print_message("f=%u: %llu adds, %llu removes, load %.3f at the end\n", fs[fi], (unsigned long long)added,
                      (unsigned long long)removed, in.load_factor);
        /* removing everything that is left empties the filter */
        for (size_t j = 0; j < nlive; j++) assert_int_equal(bk_cuckoo_remove_hash(c, live[j]), BK_OK);
        bk_cuckoo_get_info(c, &in);
        assert_int_equal(in.items, 0);
        assert_int_equal(in.victims, 0);
        free(live);
        bk_cuckoo_free(c);
    }
}

/* ---- fill until BK_EFULL: every successful key is still found; load reached ---- */

static void fill_until_full(void **state)
{
    (void)state;
    const struct {
        uint32_t b, f;
        uint64_t buckets;
        double min_load;
    } cases[] = {
        { 4, 16, 100003, 0.94 }, { 4, 12, 100003, 0.94 }, { 4, 8, 100003, 0.94 }, /* the bound */
        { 2, 12, 100003, 0.84 }, { 8, 12, 50021, 0.97 }, { 1, 16, 100003, 0.45 },
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        bk_cuckoo *c = make_buckets(cases[ci].buckets, cases[ci].b, cases[ci].f, 0, 3);
        uint64_t slots = cases[ci].buckets * cases[ci].b;
        uint64_t *h = malloc((slots + 1) * sizeof *h);
        uint64_t n = 0, st = 1000 + ci;
        bk_status s;
        for (;;) {
            uint64_t x = tu_splitmix(&st);
            s = bk_cuckoo_add_hash(c, x);
            if (s != BK_OK) break;
            h[n++] = x;
            assert_true(n <= slots + 1);
        }
        assert_int_equal(s, BK_EFULL);
        bk_cuckoo_info in;
        bk_cuckoo_get_info(c, &in);
        print_message("b=%u f=%u m=%llu: full at load %.4f (%llu keys), %.2f kicks/key\n", cases[ci].b, cases[ci].f,
                      (unsigned long long)cases[ci].buckets, in.load_factor, (unsigned long long)n,
                      (double)in.kicks / (double)n);
        assert_true(in.full);
        assert_int_equal(in.victims, 1);
        assert_int_equal(in.items, n);
        assert_true(in.load_factor >= cases[ci].min_load);
        /* the refused insert changed nothing: same bytes before and after another refusal */
        tu_membuf before = encode(c);
        assert_int_equal(bk_cuckoo_add(c, "refused", 7), BK_EFULL);
        bk_status s2 = bk_cuckoo_add_if_absent_hash(c, tu_splitmix(&st));
        assert_true(s2 == BK_EFULL || s2 == BK_EEXISTS);
        tu_membuf after = encode(c);
        assert_int_equal(before.len, after.len);
        assert_memory_equal(before.buf, after.buf, before.len);
        free(before.buf);
        free(after.buf);
        for (uint64_t i = 0; i < n; i++)
            if (!bk_cuckoo_contains_hash(c, h[i])) fail_msg("false negative after EFULL: key %llu", (unsigned long long)i);
        assert_int_equal(TU_HITS(bk_cuckoo_contains_hashes, c, h, n, NULL), n); /* the batch path with a victim */
        /* removing keys frees slots: the victim goes back into the table and inserts work again */
        for (uint64_t i = 0; i < n / 100; i++) assert_int_equal(bk_cuckoo_remove_hash(c, h[n - 1 - i]), BK_OK);
        bk_cuckoo_get_info(c, &in);
        assert_int_equal(in.victims, 0);
        assert_false(in.full);
        assert_int_equal(bk_cuckoo_add_hash(c, tu_splitmix(&st)), BK_OK);
        for (uint64_t i = 0; i < n - n / 100; i++)
            if (!bk_cuckoo_contains_hash(c, h[i])) fail_msg("false negative after removes: key %llu", (unsigned long long)i);
        free(h);
        bk_cuckoo_free(c);
    }
}

/* ---- Every filter holds the capacity it was created for ---- */

/* bk_cuckoo_new(N, p) then N distinct keys: every add is BK_OK, at every small N, over many seeds (the
 * spread of keys over a small table's few buckets is what used to refuse keys: 0.15-4% of filters
 * for N = 16..257). b = 4 at p = 1% and 0.1% (12 and 16-bit fingerprints), and b = 8 with 8-bit
 * fingerprints; 15,000 filters in all, a few seconds. */
static void small_filters_hold_their_capacity(void **state)
{
    (void)state;
    const struct {
        double p;
        uint32_t b;
    } cases[] = { { 0.01, 0 }, { 0.001, 0 }, { 0.05, 8 } };
    uint64_t filters = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        for (uint64_t n = 1; n <= 300; n++) {
            for (uint64_t seed = 0; seed < 17; seed++) {
                bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
                o.bucket_size = cases[ci].b;
                o.seed = seed * 7919 + n;
                bk_cuckoo *c = NULL;
                assert_int_equal(bk_cuckoo_new(n, cases[ci].p, &o, &c), BK_OK);
                uint64_t st = n * 1000003 + seed + ci * 77;
                for (uint64_t i = 0; i < n; i++) {
                    uint64_t k = tu_splitmix(&st);
                    if (bk_cuckoo_add(c, &k, sizeof k) != BK_OK)
                        fail_msg("p=%g b=%u capacity %llu seed %llu: key %llu refused", cases[ci].p, cases[ci].b,
                                 (unsigned long long)n, (unsigned long long)seed, (unsigned long long)i + 1);
                }
                st = n * 1000003 + seed + ci * 77;
                for (uint64_t i = 0; i < n; i++) {
                    uint64_t k = tu_splitmix(&st);
                    assert_true(bk_cuckoo_contains(c, &k, sizeof k));
                }
                bk_cuckoo_free(c);
                filters++;
            }
        }
    }
    print_message("%llu filters, every key stored\n", (unsigned long long)filters);
}

/* Four size classes at p = 1%, 0.1% and 0.01% (10, 13 and 17-bit fingerprints), 2,000 filters each:
 * 24,000 filters, every one takes its N keys. */
static void small_filters_every_p(void **state)
{
    (void)state;
    const double ps[] = { 0.01, 0.001, 0.0001 };
    const uint64_t ns[] = { 16, 64, 128, 257 };
    const uint32_t bs[] = { 4, 2 }; /* the same seeds for both: 2-slot buckets lean on the stash */
    uint64_t filters = 0, stashing = 0;
    for (size_t bi = 0; bi < 2; bi++)
        for (size_t pi = 0; pi < 3; pi++)
            for (size_t ni = 0; ni < 4; ni++)
                for (uint64_t seed = 0; seed < 2000; seed++) {
                    uint64_t n = ns[ni];
                    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
                    o.bucket_size = bs[bi];
                    o.seed = seed * 104729 + n + pi;
                    bk_cuckoo *c = NULL;
                    assert_int_equal(bk_cuckoo_new(n, ps[pi], &o, &c), BK_OK);
                    uint64_t st = seed * 1000003 + n * 31 + pi;
                    for (uint64_t i = 0; i < n; i++) {
                        uint64_t k = tu_splitmix(&st);
                        if (bk_cuckoo_add(c, &k, sizeof k) != BK_OK)
                            fail_msg("b=%u p=%g capacity %llu seed %llu: key %llu refused", bs[bi], ps[pi],
                                     (unsigned long long)n, (unsigned long long)seed, (unsigned long long)i + 1);
                    }
                    /* every key stored is found, the stashed ones too */
                    st = seed * 1000003 + n * 31 + pi;
                    for (uint64_t i = 0; i < n; i++) {
                        uint64_t k = tu_splitmix(&st);
                        assert_true(bk_cuckoo_contains(c, &k, sizeof k));
                    }
                    bk_cuckoo_info in;
                    bk_cuckoo_get_info(c, &in);
                    assert_int_equal(in.items, n);
                    stashing += in.victims != 0;
                    bk_cuckoo_free(c);
                    filters++;
                }
    print_message("%llu filters (b = 4 and 2, p = 1%%, 0.1%%, 0.01%%), every key stored; %llu with a non-empty stash\n",
                  (unsigned long long)filters, (unsigned long long)stashing);
}

/* Small filters of 2-slot buckets that refused a key below their capacity when a table had one victim
 * slot (found by `cuckoo_capacity --small -b 2`, the seeds of small_filters_every_p): with the stash
 * they store every key, find every key, save and load with their stash, and empty out again. */
static void small_filters_that_need_the_stash(void **state)
{
    (void)state;
    static const struct { double p; uint64_t n, seed; } cases[] = {
        { 0.01, 31, 764 },    { 0.01, 67, 1095 },   { 0.01, 71, 739 },    { 0.01, 75, 727 },   { 0.01, 77, 114 },
        { 0.001, 69, 420 },   { 0.001, 72, 1736 },  { 0.001, 76, 1129 },  { 0.001, 77, 1901 }, { 0.001, 88, 1279 },
        { 0.0001, 67, 1208 }, { 0.0001, 76, 1066 }, { 0.0001, 79, 857 },  { 0.0001, 87, 482 }, { 0.0001, 95, 1921 },
    };
    uint32_t most = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        uint64_t n = cases[ci].n, seed = cases[ci].seed;
        bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
        o.bucket_size = 2;
        o.seed = seed * 104729 + n;
        bk_cuckoo *c = NULL;
        assert_int_equal(bk_cuckoo_new(n, cases[ci].p, &o, &c), BK_OK);
        uint64_t *k = malloc(n * sizeof *k);
        assert_non_null(k);
        uint64_t st = seed * 1000003 + n * 31;
        uint32_t peak = 0;
        for (uint64_t i = 0; i < n; i++) {
            k[i] = tu_splitmix(&st);
            assert_int_equal(bk_cuckoo_add(c, &k[i], sizeof k[i]), BK_OK);
            /* stash entries in use: the table header's words 24, 40, 48, 56 (body offset 64 on) */
            tu_membuf m = encode(c);
            uint32_t used = 0;
            for (int w = 0; w < 4; w++) {
                uint64_t v;
                memcpy(&v, m.buf + 64 + (w ? 32 + 8 * w : 24), 8);
                used += v != 0;
            }
            if (used > peak) peak = used;
            free(m.buf);
        }
        assert_true(peak >= 1);
        if (peak > most) most = peak;
        for (uint64_t i = 0; i < n; i++) assert_true(bk_cuckoo_contains(c, &k[i], sizeof k[i]));
        /* saved and loaded: the same bytes and answers, stash included */
        tu_membuf m;
        bk_cuckoo *d = round_trip(c, o.seed, &m);
        for (uint64_t i = 0; i < n; i++) assert_true(bk_cuckoo_contains(d, &k[i], sizeof k[i]));
        /* a stash word's fingerprint or bucket out of range, or items not counting it: corrupt */
        uint64_t bad;
        memcpy(&bad, m.buf + 64 + 40, 8);
        uint64_t junk = UINT64_C(0xffffffff00000001);
        memcpy(m.buf + 64 + 40, &junk, 8);
        bk_cuckoo *x = NULL;
        assert_int_equal(decode(m.buf, m.len, o.seed, false, &x), BK_ECORRUPT);
        assert_null(x);
        memcpy(m.buf + 64 + 40, &bad, 8);
        free(m.buf);
        /* every key removed: empty, stash included */
        for (uint64_t i = 0; i < n; i++) assert_int_equal(bk_cuckoo_remove(d, &k[i], sizeof k[i]), BK_OK);
        bk_cuckoo_info in;
        bk_cuckoo_get_info(d, &in);
        assert_int_equal(in.items, 0);
        assert_int_equal(in.victims, 0);
        free(k);
        bk_cuckoo_free(c);
        bk_cuckoo_free(d);
    }
    print_message("15 filters of 2-slot buckets: every key stored and found, at most %u stash entries in use\n", most);
}

/* ---- FPR within the formula for fingerprints of 4 to 32 bits, plain and semi-sorted ---- */

static void check_fpr(uint32_t f, bool semi, uint64_t n, uint64_t neg)
{
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.bucket_size = 4;
    o.fingerprint_bits = f;
    o.semi_sorted = semi;
    o.seed = 21;
    bk_cuckoo *c = NULL;
    assert_int_equal(bk_cuckoo_new(n, 0, &o, &c), BK_OK);
    for (uint64_t i = 0; i < n; i++) {
        tu_key k = tu_make_key(7, i);
        assert_int_equal(bk_cuckoo_add(c, k.b, sizeof k.b), BK_OK);
    }
    for (uint64_t i = 0; i < n; i++) {
        tu_key k = tu_make_key(7, i);
        assert_true(bk_cuckoo_contains(c, k.b, sizeof k.b));
    }
    uint64_t fp = 0;
    for (uint64_t i = 0; i < neg; i++) {
        tu_key k = tu_make_key(99, i);
        fp += bk_cuckoo_contains(c, k.b, sizeof k.b);
    }
    double measured = (double)fp / (double)neg;
    bk_cuckoo_info in;
    bk_cuckoo_get_info(c, &in);
    double bound = bk_cuckoo_fpr_bound(4, f);
    double sigma = sqrt(in.fpr_now / (double)neg) + 1.0 / (double)neg;
    print_message("f=%u%s: measured FPR %.6f, formula at load %.3f %.6f, full-table bound %.6f, %.2f bits/key\n", f,
                  semi ? " semi-sorted" : "", measured, in.load_factor, in.fpr_now, bound,
                  (double)in.memory_bytes * 8.0 / (double)n);
    assert_int_equal(in.fingerprint_bits, f);
    assert_true(in.fpr_now <= bound);
    assert_true(fabs(in.fpr_full - bound) < 1e-12);
    /* the measurement is under the formula at the current load (4 sigma), so under the bound; from 8
     * bits on it agrees with it (fewer bits: copies of one fingerprint share buckets more often than
     * independent slots would, so fewer distinct values are compared) */
    assert_true(measured <= in.fpr_now + 4 * sigma);
    if (f >= 8) assert_true(fabs(measured - in.fpr_now) <= 4 * sigma);
    assert_true(measured <= bound + 4 * sigma);
    /* every key still there after a save and load, and the bytes saved again equal */
    tu_membuf a = encode(c);
    bk_cuckoo *d = NULL;
    assert_int_equal(decode(a.buf, a.len, 21, false, &d), BK_OK);
    for (uint64_t i = 0; i < n; i++) {
        tu_key k = tu_make_key(7, i);
        assert_true(bk_cuckoo_contains(d, k.b, sizeof k.b));
    }
    tu_membuf b2 = encode(d);
    assert_int_equal(a.len, b2.len);
    assert_memory_equal(a.buf, b2.buf, a.len);
    free(a.buf);
    free(b2.buf);
    /* removing every key empties it */
    for (uint64_t i = 0; i < n; i++) {
        tu_key k = tu_make_key(7, i);
        assert_int_equal(bk_cuckoo_remove(d, k.b, sizeof k.b), BK_OK);
    }
    bk_cuckoo_get_info(d, &in);
    assert_int_equal(in.items, 0);
    bk_cuckoo_free(d);
    bk_cuckoo_free(c);
}

static void fpr_within_formula(void **state)
{
    (void)state;
    const uint32_t plain[] = { 4, 5, 7, 8, 10, 11, 12, 13, 15, 16, 17, 19, 24, 31, 32 };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) check_fpr(plain[i], false, 50000, 400000);
    const uint32_t semi[] = { 5, 6, 8, 9, 10, 12, 13, 16 };
    for (size_t i = 0; i < sizeof semi / sizeof semi[0]; i++) check_fpr(semi[i], true, 50000, 400000);
    /* bk_cuckoo_new picks the fingerprint from p: the smallest whose bound is <= p, with 4 slots */
    const struct {
        double p;
        uint32_t f;
    } pick[] = { { 0.5, 4 }, { 0.05, 8 }, { 0.01, 10 }, { 0.001, 13 }, { 1e-4, 17 }, { 1e-6, 23 }, { 2e-9, 32 } };
    for (size_t i = 0; i < sizeof pick / sizeof pick[0]; i++) {
        for (int ss = 0; ss < 2; ss++) {
            bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
            o.semi_sorted = ss;
            bk_cuckoo *c = NULL;
            bk_status st = bk_cuckoo_new(1000, pick[i].p, &o, &c);
            if (ss && (pick[i].f > 16 || pick[i].f < 5)) {
                /* semi-sorted buckets need 5..16 bits: p = 0.5 still gets 5, p below 1.22e-4 is refused */
                if (pick[i].f > 16) {
                    assert_int_equal(st, BK_EINVAL);
                    continue;
                }
            }
            assert_int_equal(st, BK_OK);
            bk_cuckoo_info in;
            bk_cuckoo_get_info(c, &in);
            assert_int_equal(in.fingerprint_bits, ss && pick[i].f < 5 ? 5 : pick[i].f);
            assert_int_equal(in.bucket_size, 4);
            assert_true(in.fpr_full <= pick[i].p);
            bk_cuckoo_free(c);
        }
    }
}

/* The semi-sorted code: every non-decreasing nibble sequence has its own code below 3,876, in order. */
static void semi_sorted_codes(void **state)
{
    (void)state;
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.semi_sorted = true;
    o.fingerprint_bits = 8;
    bk_cuckoo *c = NULL;
    assert_int_equal(bk_cuckoo_new_buckets(1, &o, &c), BK_OK);
    uint32_t code = 0;
    for (uint32_t n0 = 0; n0 < 16; n0++)
        for (uint32_t n1 = n0; n1 < 16; n1++)
            for (uint32_t n2 = n1; n2 < 16; n2++)
                for (uint32_t n3 = n2; n3 < 16; n3++, code++)
                    assert_int_equal(bk__cuckoo_semi_code(n0, n1, n2, n3), code);
    assert_int_equal(code, 3876);
    /* one bucket, the same fingerprint four times and removed again; a fifth copy does not fit */
    for (int i = 0; i < 4; i++) assert_int_equal(bk_cuckoo_add_hash(c, 5), BK_OK);
    assert_int_equal(bk_cuckoo_count_hash(c, 5), 4);
    for (int i = 0; i < 4; i++) assert_int_equal(bk_cuckoo_remove_hash(c, 5), BK_OK);
    assert_int_equal(bk_cuckoo_remove_hash(c, 5), BK_ENOTFOUND);
    bk_cuckoo_free(c);
}

/* ---- remove semantics ---- */

typedef struct {
    uint32_t fp;
    uint64_t lo, hi;
} placement;

static int cmp_place(const void *a, const void *b)
{
    const placement *x = a, *y = b;
    if (x->fp != y->fp) return x->fp < y->fp ? -1 : 1;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
    return 0;
}

static placement place_of(const bk_cuckoo *c, uint64_t h)
{
    placement p;
    uint64_t i1, i2;
    bk__cuckoo_place(c, 0, h, &p.fp, &i1, &i2);
    p.lo = i1 < i2 ? i1 : i2;
    p.hi = i1 < i2 ? i2 : i1;
    return p;
}

static void remove_semantics(void **state)
{
    (void)state;
    enum { N = 100000 };
    /* 8-bit fingerprints: collisions are frequent enough to exercise the "unless" */
    bk_cuckoo *c = make_cap(N, 4, 8, 5);
    uint64_t *h = malloc(N * sizeof *h);
    uint64_t st = 5;
    for (uint64_t i = 0; i < N; i++) {
        h[i] = tu_splitmix(&st);
        assert_int_equal(bk_cuckoo_add_hash(c, h[i]), BK_OK);
    }
    /* remove the odd keys */
    for (uint64_t i = 1; i < N; i += 2) assert_int_equal(bk_cuckoo_remove_hash(c, h[i]), BK_OK);
    placement *keep = malloc(N / 2 * sizeof *keep);
    for (uint64_t i = 0; i < N / 2; i++) keep[i] = place_of(c, h[2 * i]);
    qsort(keep, N / 2, sizeof *keep, cmp_place);
    uint64_t still = 0;
    for (uint64_t i = 1; i < N; i += 2) {
        if (!bk_cuckoo_contains_hash(c, h[i])) continue;
        still++;
        placement p = place_of(c, h[i]);
        if (!bsearch(&p, keep, N / 2, sizeof *keep, cmp_place))
            fail_msg("removed key %llu still present with no colliding key", (unsigned long long)i);
    }
    print_message("%llu of %d removed keys still answered present, each by a colliding key\n",
                  (unsigned long long)still, N / 2);
    for (uint64_t i = 0; i < N; i += 2) assert_true(bk_cuckoo_contains_hash(c, h[i]));
    assert_int_equal(bk_cuckoo_items(c), N / 2);
    free(keep);

    /* a key that is certainly absent: BK_ENOTFOUND, nothing changed */
    bk_cuckoo *e = make_cap(1000, 4, 16, 5);
    assert_int_equal(bk_cuckoo_remove(e, "never", 5), BK_ENOTFOUND);
    assert_int_equal(bk_cuckoo_add(e, "k", 1), BK_OK);
    assert_int_equal(bk_cuckoo_remove(e, "k", 1), BK_OK);
    assert_false(bk_cuckoo_contains(e, "k", 1));
    assert_int_equal(bk_cuckoo_remove(e, "k", 1), BK_ENOTFOUND);

    /* counting copies: add 3 times, count 3, remove one, count 2 */
    for (int i = 0; i < 3; i++) assert_int_equal(bk_cuckoo_add(e, "dup", 3), BK_OK);
    assert_int_equal(bk_cuckoo_count(e, "dup", 3), 3);
    assert_int_equal(bk_cuckoo_remove(e, "dup", 3), BK_OK);
    assert_int_equal(bk_cuckoo_count(e, "dup", 3), 2);
    assert_int_equal(bk_cuckoo_count(e, "other", 5), 0);
    /* add-if-absent */
    assert_int_equal(bk_cuckoo_add_if_absent(e, "dup", 3), BK_EEXISTS);
    assert_int_equal(bk_cuckoo_count(e, "dup", 3), 2);
    assert_int_equal(bk_cuckoo_add_if_absent(e, "new", 3), BK_OK);
    assert_int_equal(bk_cuckoo_add_if_absent(e, "new", 3), BK_EEXISTS);
    assert_int_equal(bk_cuckoo_count(e, "new", 3), 1);
    bk_cuckoo_info in;
    bk_cuckoo_get_info(e, &in);
    assert_int_equal(in.inserted, 5);
    assert_int_equal(in.deleted, 2);
    assert_int_equal(in.items, 3);
    bk_cuckoo_free(e);

    /* the cuckoo rule: 2b copies of one key fill its buckets; below its capacity the table parks the
     * next copies in its stash (4 entries), every other key stays found, and with the stash full the
     * filter is full */
    bk_cuckoo *d = make_cap(10000, 4, 16, 5);
    for (int i = 0; i < 100; i++) assert_int_equal(bk_cuckoo_add_hash(d, h[i]), BK_OK);
    for (int i = 0; i < 8; i++) assert_int_equal(bk_cuckoo_add(d, "same", 4), BK_OK);
    assert_int_equal(bk_cuckoo_count(d, "same", 4), 8);
    bk_cuckoo_info di;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(bk_cuckoo_add(d, "same", 4), BK_OK); /* stored: one more copy in the stash */
        assert_int_equal(bk_cuckoo_count(d, "same", 4), 9 + i);
        bk_cuckoo_get_info(d, &di);
        assert_int_equal(di.victims, 1);
        assert_int_equal(di.full, i == 3);
    }
    assert_int_equal(bk_cuckoo_add(d, "another", 7), BK_EFULL);
    assert_int_equal(bk_cuckoo_add(d, "same", 4), BK_EFULL);
    for (int i = 0; i < 100; i++) assert_true(bk_cuckoo_contains_hash(d, h[i]));
    assert_true(bk_cuckoo_contains(d, "same", 4));
    /* the stash is saved and loaded with the table */
    tu_membuf md = encode(d);
    bk_cuckoo *dd = NULL;
    assert_int_equal(decode(md.buf, md.len, 5, false, &dd), BK_OK);
    assert_int_equal(bk_cuckoo_count(dd, "same", 4), 12);
    tu_membuf md2 = encode(dd);
    assert_int_equal(md.len, md2.len);
    assert_memory_equal(md.buf, md2.buf, md.len);
    free(md.buf);
    free(md2.buf);
    assert_int_equal(bk_cuckoo_add(dd, "another", 7), BK_EFULL);
    bk_cuckoo_free(dd);
    /* removing one copy makes room: a stashed copy returns, inserts work again */
    assert_int_equal(bk_cuckoo_remove(d, "same", 4), BK_OK);
    assert_int_equal(bk_cuckoo_count(d, "same", 4), 11);
    assert_int_equal(bk_cuckoo_add(d, "another", 7), BK_OK);
    assert_true(bk_cuckoo_contains(d, "another", 7));
    /* removing every copy empties the stash */
    for (int i = 0; i < 11; i++) assert_int_equal(bk_cuckoo_remove(d, "same", 4), BK_OK);
    assert_int_equal(bk_cuckoo_remove(d, "same", 4), BK_ENOTFOUND);
    bk_cuckoo_get_info(d, &di);
    assert_int_equal(di.victims, 0);
    assert_false(di.full);
    for (int i = 0; i < 100; i++) assert_true(bk_cuckoo_contains_hash(d, h[i]));
    free(h);
    bk_cuckoo_free(d);
    bk_cuckoo_free(c);
}

/* ---- expansion chain ---- */

static void expansion_chain(void **state)
{
    (void)state;
    const uint32_t exps[] = { 1, 2, 3, 4 }, rounded[] = { 1, 2, 4, 4 };
    for (int ei = 0; ei < 4; ei++) {
        bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
        o.expansion = exps[ei];
        o.bucket_size = 2;
        o.fingerprint_bits = 8; /* many collisions between tables: removes must still be exact */
        o.max_kicks = 20;       /* RedisBloom's defaults: b = 2, 20 kicks */
        o.seed = 31;
        bk_cuckoo *c = NULL;
        assert_int_equal(bk_cuckoo_new(1000, 0, &o, &c), BK_OK);
        enum { N = 40000 };
        static uint64_t h[N];
        uint64_t st = 99;
        for (uint64_t i = 0; i < N; i++) {
            h[i] = tu_splitmix(&st);
            assert_int_equal(bk_cuckoo_add_hash(c, h[i]), BK_OK);
        }
        bk_cuckoo_info in;
        bk_cuckoo_get_info(c, &in);
        print_message("expansion %u: %u tables, %llu buckets, load %.3f, FPR now %.5f\n", exps[ei], in.tables,
                      (unsigned long long)in.buckets, in.load_factor, in.fpr_now);
        assert_int_equal(in.expansion, rounded[ei]);
        assert_true(in.tables > 1);
        assert_int_equal(in.items, N);
        for (uint32_t t = 1; t < in.tables; t++)
            assert_int_equal(bk_cuckoo_table_buckets(c, t), bk_cuckoo_table_buckets(c, t - 1) * rounded[ei]);
        assert_int_equal(bk_cuckoo_table_buckets(c, in.tables), 0);
        assert_int_equal(in.first_buckets, bk_cuckoo_table_buckets(c, 0));
        for (uint64_t i = 0; i < N; i++) {
            assert_true(bk_cuckoo_contains_hash(c, h[i]));
            assert_true(bk_cuckoo_count_hash(c, h[i]) >= 1);
        }
        /* the chain round-trips, victims included */
        tu_membuf m;
        bk_cuckoo *d = round_trip(c, o.seed, &m);
        free(m.buf);
        /* remove every key in a shuffled order; the keys not yet removed are always found */
        for (uint64_t i = N - 1; i > 0; i--) {
            uint64_t j = tu_splitmix(&st) % (i + 1), t = h[i];
            h[i] = h[j];
            h[j] = t;
        }
        for (uint64_t i = 0; i < N; i++) {
            assert_int_equal(bk_cuckoo_remove_hash(d, h[i]), BK_OK);
            if (i % 4000 == 0)
                for (uint64_t k = i + 1; k < N; k++)
                    if (!bk_cuckoo_contains_hash(d, h[k])) fail_msg("expansion %u: false negative after %llu removes", exps[ei], (unsigned long long)i);
        }
        assert_int_equal(bk_cuckoo_items(d), 0);
        bk_cuckoo_free(d);
        bk_cuckoo_free(c);
    }
}

/* ---- the bytes form equals the pre-hashed form; batches equal single calls ---- */

/* ---- the one-key fast paths against the general ones ----
 * Without concurrent mode a plain table of one-group buckets takes the fast paths (constant-geometry
 * query and insert, the word-wide eviction walk); concurrent mode always takes the general ones. Both
 * filled with the same hashes to full, then half removed and refilled: the same answers, the same
 * statuses and the same bytes at every step. */
/* The alternate bucket is the one docs/FORMAT.md 6.5 states: with one key in a large table, a hash
 * whose first bucket is the key's second bucket (and whose fingerprint is the key's) finds it, since
 * its own second bucket is the key's first. Table sizes where a mapping off by a bucket would show. */
static uint64_t doc_alt(uint64_t m, uint64_t i, uint32_t fp)
{
    uint64_t hh = ((uint64_t)(uint32_t)(fp * UINT32_C(0x9e3779b9)) * m) >> 32;
    return hh >= i ? hh - i : hh + m - i;
}

static void alternate_bucket_as_documented(void **state)
{
    (void)state;
    static const uint64_t sizes[] = { 7, 1001, 65536, 3000017 };
    static const uint32_t fbits[] = { 4, 12, 16, 20 };
    uint64_t st = 99;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t fi = 0; fi < sizeof fbits / sizeof fbits[0]; fi++) {
            uint64_t m = sizes[s];
            uint32_t f = fbits[fi];
            bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
            o.bucket_size = 4;
            o.fingerprint_bits = f;
            for (int t = 0; t < (m > 100000 ? 8 : 40); t++) {
                bk_cuckoo *c;
                assert_int_equal(bk_cuckoo_new_buckets(m, &o, &c), BK_OK);
                uint64_t h = tu_splitmix(&st);
                uint32_t fp = 1 + (uint32_t)(((h & 0xffffffffu) * ((UINT64_C(1) << f) - 1)) >> 32);
                uint64_t i1 = bk__range64(h, m), i2 = doc_alt(m, i1, fp);
                assert_int_equal(doc_alt(m, i2, fp), i1);
                /* a hash in the middle of bucket i2's range, with h's low 32 bits (its fingerprint) */
                bk__u128 mid = (((bk__u128)(2 * i2 + 1)) << 64) / (2 * m);
                uint64_t h2 = ((uint64_t)mid & ~UINT64_C(0xffffffff)) | (h & 0xffffffff);
                assert_int_equal(bk__range64(h2, m), i2);
                assert_int_equal(bk_cuckoo_add_hash(c, h), BK_OK);
                assert_true(bk_cuckoo_contains_hash(c, h2));
                bk_cuckoo_free(c);
            }
        }
}

static void fast_paths_agree(void **state)
{
    (void)state;
    static const uint32_t geo[][2] = { { 4, 4 },  { 4, 5 },  { 4, 6 },  { 4, 7 },  { 4, 8 },  { 4, 9 },
                                       { 4, 10 }, { 4, 11 }, { 4, 12 }, { 4, 13 }, { 4, 14 }, { 4, 15 },
                                       { 4, 16 }, { 4, 20 }, { 2, 8 },  { 2, 12 }, { 3, 9 },  { 1, 16 },
                                       { 8, 7 } };
    /* every geometry on the portable paths (BK_SIMD_SCALAR), then on the CPU's (BMI where it has it) */
    for (size_t g = 0; g < 2 * (sizeof geo / sizeof geo[0]); g++) {
        size_t gi = g % (sizeof geo / sizeof geo[0]);
        assert_int_equal(bk_simd_force(g == gi ? BK_SIMD_SCALAR : BK_SIMD_AUTO), BK_OK);
        bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
        o.bucket_size = geo[gi][0];
        o.fingerprint_bits = geo[gi][1];
        o.seed = 17 + g;
        bk_cuckoo *fast = NULL, *gen = NULL;
        assert_int_equal(bk_cuckoo_new_buckets(501, &o, &fast), BK_OK);
        o.concurrent = true;
        assert_int_equal(bk_cuckoo_new_buckets(501, &o, &gen), BK_OK);
        uint64_t slots = 501 * geo[gi][0], n = 0;
        uint64_t *h = malloc((slots + 8) * sizeof *h);
        assert_non_null(h);
        uint64_t st = 1000 + g;
        for (;;) {
            h[n] = tu_splitmix(&st);
            bk_status a = bk_cuckoo_add_hash(fast, h[n]), b = bk_cuckoo_add_hash(gen, h[n]);
            assert_int_equal(a, b);
            if (a != BK_OK) break;
            n++;
            assert_true(n <= slots + 1);
        }
        for (uint64_t i = 0; i < n; i++) {
            assert_true(bk_cuckoo_contains_hash(fast, h[i]));
            assert_true(bk_cuckoo_contains_u64(fast, h[i]) == bk_cuckoo_contains_u64(gen, h[i]));
        }
        for (uint64_t i = 0; i < 20000; i++) {
            uint64_t x = tu_splitmix(&st);
            assert_true(bk_cuckoo_contains_hash(fast, x) == bk_cuckoo_contains_hash(gen, x));
        }
        tu_membuf ma = encode(fast), mb = encode(gen);
        assert_int_equal(ma.len, mb.len);
        assert_memory_equal(ma.buf, mb.buf, ma.len);
        free(ma.buf);
        free(mb.buf);
        for (uint64_t i = 0; i < n; i += 2) {
            assert_int_equal(bk_cuckoo_remove_hash(fast, h[i]), BK_OK);
            assert_int_equal(bk_cuckoo_remove_hash(gen, h[i]), BK_OK);
        }
        for (uint64_t i = 0; i < n / 2; i++) {
            uint64_t x = tu_splitmix(&st);
            bk_status a = bk_cuckoo_add_hash(fast, x);
            assert_int_equal(a, bk_cuckoo_add_hash(gen, x));
            if (a == BK_OK) assert_true(bk_cuckoo_contains_hash(fast, x));
        }
        for (uint64_t i = 1; i < n; i += 2) assert_true(bk_cuckoo_contains_hash(fast, h[i]));
        ma = encode(fast);
        mb = encode(gen);
        assert_int_equal(ma.len, mb.len);
        assert_memory_equal(ma.buf, mb.buf, ma.len);
        free(ma.buf);
        free(mb.buf);
        free(h);
        bk_cuckoo_free(fast);
        bk_cuckoo_free(gen);
    }
    assert_int_equal(bk_simd_force(BK_SIMD_AUTO), BK_OK);
}

static void forms_agree(void **state)
{
    (void)state;
    enum { M = 20000 };
    bk_cuckoo *a = make_cap(M, 4, 12, 42), *b = make_cap(M, 4, 12, 42), *c = make_cap(M, 4, 12, 42);
    static tu_key keys[M];
    static const void *ptrs[M];
    static size_t lens[M];
    static uint64_t hs[M];
    static uint8_t res[M];
    for (int i = 0; i < M; i++) {
        /* the index first, so that every prefix length from 8 to 16 bytes is a distinct key */
        uint64_t idx = (uint64_t)i, set = 3;
        memcpy(keys[i].b, &idx, 8);
        memcpy(keys[i].b + 8, &set, 8);
        ptrs[i] = keys[i].b;
        lens[i] = 8 + (size_t)(i % 9);
        hs[i] = bk_hash64(ptrs[i], lens[i], 42);
        assert_int_equal(bk_cuckoo_add(a, ptrs[i], lens[i]), BK_OK);
        assert_int_equal(bk_cuckoo_add_hash(b, hs[i]), BK_OK);
    }
    size_t done = 0;
    assert_int_equal(bk_cuckoo_add_many(c, ptrs, lens, M, &done), BK_OK);
    assert_int_equal(done, M);
    tu_membuf ma = encode(a), mb = encode(b), mc = encode(c);
    assert_int_equal(ma.len, mb.len);
    assert_memory_equal(ma.buf, mb.buf, ma.len);
    assert_memory_equal(ma.buf, mc.buf, ma.len);
    free(ma.buf);
    free(mb.buf);
    free(mc.buf);
    assert_int_equal(TU_HITS(bk_cuckoo_contains_many, c, ptrs, lens, M, res), M);
    assert_int_equal(TU_HITS(bk_cuckoo_contains_hashes, c, hs, M, NULL), M);
    /* add-if-absent batch: everything is present now */
    assert_int_equal(bk_cuckoo_add_if_absent_many(c, ptrs, lens, M, res, &done), BK_OK);
    assert_int_equal(done, M);
    for (int i = 0; i < M; i++) assert_int_equal(res[i], 1);
    /* batch remove equals single removes */
    assert_int_equal(bk_cuckoo_remove_many(c, ptrs, lens, M, &done), BK_OK);
    assert_int_equal(done, M);
    for (int i = 0; i < M; i++) assert_int_equal(bk_cuckoo_remove_hash(b, hs[i]), BK_OK);
    assert_int_equal(bk_cuckoo_items(c), 0);
    /* a key certainly absent stops a batch remove at once */
    assert_int_equal(bk_cuckoo_remove_hashes(c, hs, 10, &done), BK_ENOTFOUND);
    assert_int_equal(done, 0);
    mb = encode(b);
    mc = encode(c);
    assert_memory_equal(mb.buf, mc.buf, mb.len);
    free(mb.buf);
    free(mc.buf);
    assert_int_equal(bk_cuckoo_add_if_absent_hashes(c, hs, M, NULL, &done), BK_OK);
    assert_int_equal(done, M);
    assert_int_equal(bk_cuckoo_add_hashes(c, hs, 5, NULL), BK_OK);
    /* a NULL key with len > 0 in a batch: the batch is refused before any key */
    const void *bad[2] = { "x", NULL };
    size_t blen[2] = { 1, 4 };
    uint64_t items = bk_cuckoo_items(c);
    done = 7;
    assert_int_equal(bk_cuckoo_add_many(c, bad, blen, 2, &done), BK_EINVAL);
    assert_int_equal(done, 0);
    assert_int_equal(bk_cuckoo_items(c), items);
    bk_cuckoo_free(a);
    bk_cuckoo_free(b);
    bk_cuckoo_free(c);
}

/* ---- bucket sizes other than 1, 2, 4, 8 (RedisBloom takes 1 .. 255): one group of lanes when the
 * bucket fits in 64 bits, several (the last one partial) when it does not ---- */

static void odd_bucket_sizes(void **state)
{
    (void)state;
    const struct { uint32_t b, f; double min_load; } cases[] = {
        { 3, 8, 0.85 },   { 3, 12, 0.85 },  { 5, 12, 0.93 },  { 6, 8, 0.93 },  { 7, 16, 0.93 },
        { 9, 8, 0.95 },   { 12, 12, 0.95 }, { 16, 16, 0.95 }, { 31, 12, 0.95 }, { 64, 8, 0.95 },
        { 255, 16, 0.95 }, { 255, 8, 0.95 },
    };
    enum { NEG = 100000 };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const uint32_t b = cases[ci].b, f = cases[ci].f;
        const uint64_t buckets = 20000 / b + 7;
        bk_cuckoo *c = make_buckets(buckets, b, f, 0, 5 + ci);
        uint64_t slots = buckets * b;
        uint64_t *h = malloc((slots + 2) * sizeof *h); /* every slot, the victim, and the refused one */
        uint64_t n = 0, st = 77 + ci;
        bk_status s;
        while ((s = bk_cuckoo_add_hash(c, h[n] = tu_splitmix(&st))) == BK_OK) n++;
        assert_int_equal(s, BK_EFULL);
        bk_cuckoo_info in;
        bk_cuckoo_get_info(c, &in);
        assert_int_equal(in.bucket_size, b);
        assert_int_equal(in.items, n);
        /* no false negatives, single and batch, with the victim set */
        for (uint64_t i = 0; i < n; i++)
            if (!bk_cuckoo_contains_hash(c, h[i])) fail_msg("b=%u f=%u: false negative %llu", b, f, (unsigned long long)i);
        assert_int_equal(TU_HITS(bk_cuckoo_contains_hashes, c, h, n, NULL), n);
        /* FPR at full load within the bound 2b / (2^f - 1) (plus sampling noise) */
        uint64_t fp = 0;
        for (uint64_t i = 0; i < NEG; i++) fp += bk_cuckoo_contains_hash(c, tu_splitmix(&st));
        double fpr = (double)fp / NEG, bound = bk_cuckoo_fpr_bound(b, f);
        print_message("b=%u f=%u: full at load %.4f, FPR %.5f (bound %.5f)\n", b, f, in.load_factor, fpr, bound);
        assert_true(in.load_factor >= cases[ci].min_load);
        assert_true(fpr <= bound + 4 * sqrt(bound / NEG) + 1e-5);
        /* counts and removes: a key's copies are counted, removes free slots, nothing else is lost */
        assert_true(bk_cuckoo_count_hash(c, h[0]) >= 1);
        for (uint64_t i = 0; i < n / 2; i++) assert_int_equal(bk_cuckoo_remove_hash(c, h[i]), BK_OK);
        for (uint64_t i = n / 2; i < n; i++)
            if (!bk_cuckoo_contains_hash(c, h[i])) fail_msg("b=%u f=%u: lost %llu after removes", b, f, (unsigned long long)i);
        for (uint64_t i = 0; i < n / 4; i++) assert_int_equal(bk_cuckoo_add_hash(c, h[i]), BK_OK);
        /* the saved form round-trips bit for bit */
        tu_membuf m;
        bk_cuckoo *d = round_trip(c, 5 + ci, &m);
        for (uint64_t i = n / 2; i < n; i++) assert_true(bk_cuckoo_contains_hash(d, h[i]));
        free(m.buf);
        bk_cuckoo_free(d);
        free(h);
        bk_cuckoo_free(c);
    }
    /* created by capacity, with an expansion chain */
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.bucket_size = 3;
    o.fingerprint_bits = 8;
    o.expansion = 2;
    bk_cuckoo *c = NULL;
    assert_int_equal(bk_cuckoo_new(1000, 0, &o, &c), BK_OK);
    for (uint64_t i = 0; i < 10000; i++) {
        tu_key k = tu_make_key(9, i);
        assert_int_equal(bk_cuckoo_add(c, k.b, sizeof k.b), BK_OK);
    }
    assert_true(bk_cuckoo_tables(c) > 1);
    for (uint64_t i = 0; i < 10000; i++) {
        tu_key k = tu_make_key(9, i);
        assert_true(bk_cuckoo_contains(c, k.b, sizeof k.b));
    }
    bk_cuckoo_free(c);
}

/* ---- serialization: round trip, borrow, and every kind of corruption ---- */

static void serialization(void **state)
{
    (void)state;
    const uint32_t fs[] = { 8, 12, 16 }, bs[] = { 1, 2, 4, 8 };
    for (int fi = 0; fi < 3; fi++)
        for (int bi = 0; bi < 4; bi++) {
            bk_cuckoo *c = make_buckets(1001, bs[bi], fs[fi], 0, 17);
            uint64_t st = 3, n = 0;
            while (bk_cuckoo_add_hash(c, tu_splitmix(&st)) == BK_OK) n++; /* full: the victim is set */
            tu_membuf m;
            bk_cuckoo *d = round_trip(c, 17, &m);
            bk_cuckoo_info ic, id;
            bk_cuckoo_get_info(c, &ic);
            bk_cuckoo_get_info(d, &id);
            assert_int_equal(id.items, n);
            assert_int_equal(id.victims, 1);
            assert_int_equal(ic.kicks, id.kicks);
            st = 3;
            for (uint64_t i = 0; i < n; i++) assert_true(bk_cuckoo_contains_hash(d, tu_splitmix(&st)));
            /* borrowed: the same answers from the caller's (64-byte aligned) memory */
            uint8_t *al = aligned_alloc(64, (m.len + 63) / 64 * 64);
            memcpy(al, m.buf, m.len);
            bk_cuckoo *e = NULL;
            assert_int_equal(decode(al, m.len, 17, true, &e), BK_OK);
            st = 3;
            for (uint64_t i = 0; i < n; i++) assert_true(bk_cuckoo_contains_hash(e, tu_splitmix(&st)));
            bk_cuckoo_free(e);
            free(al);
            free(m.buf);
            bk_cuckoo_free(d);
            bk_cuckoo_free(c);
        }

    /* corruption of a chain of two tables with a victim */
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.expansion = 2;
    o.fingerprint_bits = 12;
    bk_cuckoo *c = NULL;
    assert_int_equal(bk_cuckoo_new_buckets(100, &o, &c), BK_OK);
    uint64_t st = 9;
    while (bk_cuckoo_tables(c) < 2) assert_int_equal(bk_cuckoo_add_hash(c, tu_splitmix(&st)), BK_OK);
    tu_membuf m = encode(c);
    bk_cuckoo *d = (bk_cuckoo *)0x1;
    /* every truncation is refused */
    for (size_t len = 0; len < m.len; len += (len < 256 ? 1 : 61)) {
        bk_status s = decode(m.buf, len, 0, false, &d);
        assert_true(s == BK_ETRUNCATED || s == BK_ECORRUPT);
        assert_null(d);
    }
    /* each header field out of range or inconsistent */
    const struct {
        size_t off;
        unsigned width;
        uint64_t value;
    } bad[] = {
        { 0, 4, 3 }, { 0, 4, 0 }, { 0, 4, 16 },            /* bucket size */
        { 4, 4, 10 }, { 4, 4, 0 }, { 4, 4, 32 },           /* fingerprint bits */
        { 8, 4, 0 }, { 8, 4, BK_CUCKOO_MAX_KICKS + 1 },     /* max kicks */
        { 12, 4, 0 }, { 12, 4, 3 }, { 12, 4, BK_CUCKOO_MAX_EXPANSION + 1 }, /* expansion vs chain */
        { 16, 4, 0 }, { 16, 4, 3 },                        /* tables */
        { 20, 4, 1 },                                      /* reserved */
        { 24, 8, 0 }, { 32, 8, 1 },                        /* inserted - deleted != items */
        { 48, 8, 0 },                                      /* fpr target 0.0 */
        { 64, 8, 99 }, { 64, 8, 0 },                       /* table 0 buckets */
        { 72, 8, 0 },                                      /* table 0 capacity */
        { 80, 8, 0 },                                      /* table 0 items */
        { 96, 8, 64 },                                     /* table 0 array bytes */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t *b = malloc(m.len);
        memcpy(b, m.buf, m.len);
        for (unsigned k = 0; k < bad[i].width; k++) b[bad[i].off + k] = (uint8_t)(bad[i].value >> (8 * k));
        bk_status s = decode(b, m.len, 0, false, &d);
        if (s == BK_OK) fail_msg("corruption %zu (offset %zu) accepted", i, bad[i].off);
        assert_true(s == BK_ECORRUPT || s == BK_ETRUNCATED);
        assert_null(d);
        free(b);
    }
    /* a victim pointing past the table, a zero victim fingerprint, a slot flipped, tail bits */
    uint64_t victim;
    memcpy(&victim, m.buf + 88, 8);
    {
        uint8_t *b = malloc(m.len);
        memcpy(b, m.buf, m.len);
        uint64_t v = 0x1234 | (uint64_t)100 << 16; /* bucket 100 of a 100-bucket table */
        memcpy(b + 88, &v, 8);
        assert_int_equal(decode(b, m.len, 0, false, &d), BK_ECORRUPT);
        v = (uint64_t)5 << 16; /* fingerprint 0 */
        memcpy(b + 88, &v, 8);
        assert_int_equal(decode(b, m.len, 0, false, &d), BK_ECORRUPT);
        v = 0x2000 | (uint64_t)5 << 16; /* fingerprint past 12 bits */
        memcpy(b + 88, &v, 8);
        assert_int_equal(decode(b, m.len, 0, false, &d), BK_ECORRUPT);
        memcpy(b + 88, &victim, 8);
        assert_int_equal(decode(b, m.len, 0, false, &d), BK_OK);
        bk_cuckoo_free(d);
        /* empty two occupied 12-bit slots of table 0 (its array starts at offset 128): items no longer match */
        size_t at = 128;
        while (!(b[at] | b[at + 1] | b[at + 2])) at += 3;
        b[at] = b[at + 1] = b[at + 2] = 0;
        assert_int_equal(decode(b, m.len, 0, false, &d), BK_ECORRUPT);
        memcpy(b, m.buf, m.len);
        /* a bit past the last slot of table 0: 100 buckets * 4 * 12 = 4800 bits = 600 bytes */
        b[128 + 600] = 1;
        assert_int_equal(decode(b, m.len, 0, false, &d), BK_ECORRUPT);
        free(b);
    }
    free(m.buf);
    bk_cuckoo_free(c);
}

/* ---- bad input: clear errors, nothing allocated or changed ---- */

static int g_live;
static void *count_malloc(void *o, size_t n) { (void)o; g_live++; return malloc(n); }
static void *count_calloc(void *o, size_t c, size_t n) { (void)o; g_live++; return calloc(c, n); }
static void count_free(void *o, void *p) { (void)o; if (p) g_live--; free(p); }

static void bad_input(void **state)
{
    (void)state;
    bk_allocator al = { count_malloc, count_calloc, count_free, NULL };
    bk_set_allocator(&al);
    g_live = 0;
    bk_cuckoo *c = (bk_cuckoo *)0x1;
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    const uint32_t badf[] = { 1, 2, 3, 33, 64, UINT32_MAX };
    for (size_t i = 0; i < sizeof badf / sizeof badf[0]; i++) {
        o = (bk_cuckoo_options){ 0 };
        o.fingerprint_bits = badf[i];
        c = (bk_cuckoo *)0x1;
        assert_int_equal(bk_cuckoo_new(1000, 0.01, &o, &c), BK_EINVAL);
        assert_null(c);
        c = (bk_cuckoo *)0x1;
        assert_int_equal(bk_cuckoo_new_buckets(1000, &o, &c), BK_EINVAL);
        assert_null(c);
    }
    const uint32_t badb[] = { BK_CUCKOO_MAX_BUCKET_SIZE + 1, 1000, UINT32_MAX };
    for (size_t i = 0; i < sizeof badb / sizeof badb[0]; i++) {
        o = (bk_cuckoo_options){ 0 };
        o.bucket_size = badb[i];
        c = (bk_cuckoo *)0x1;
        assert_int_equal(bk_cuckoo_new(1000, 0.01, &o, &c), BK_EINVAL);
        assert_null(c);
    }
    o = (bk_cuckoo_options){ 0 };
    assert_int_equal(bk_cuckoo_new(0, 0.01, &o, &c), BK_EINVAL);        /* capacity 0 */
    assert_int_equal(bk_cuckoo_new_buckets(0, &o, &c), BK_EINVAL);       /* buckets 0 */
    assert_int_equal(bk_cuckoo_new(1000, 0, &o, &c), BK_EINVAL);         /* p needed without f */
    assert_int_equal(bk_cuckoo_new(1000, 1, &o, &c), BK_EINVAL);
    assert_int_equal(bk_cuckoo_new(1000, NAN, &o, &c), BK_EINVAL);
    assert_int_equal(bk_cuckoo_new(1000, 1e-10, &o, &c), BK_EINVAL);     /* below 32-bit fingerprints */
    o.semi_sorted = true;
    assert_int_equal(bk_cuckoo_new(1000, 1e-4, &o, &c), BK_EINVAL);      /* semi-sorted: 16 bits at most */
    o.bucket_size = 2;
    assert_int_equal(bk_cuckoo_new(1000, 0.01, &o, &c), BK_EINVAL);      /* semi-sorted: 4 slots only */
    o.bucket_size = 4;
    o.fingerprint_bits = 4;
    assert_int_equal(bk_cuckoo_new(1000, 0.01, &o, &c), BK_EINVAL);      /* semi-sorted: 5 bits at least */
    o.fingerprint_bits = 17;
    assert_int_equal(bk_cuckoo_new_buckets(1000, &o, &c), BK_EINVAL);
    o = (bk_cuckoo_options){ 0 };
    assert_int_equal(bk_cuckoo_new(1000, 0.01, &o, NULL), BK_EINVAL);
    o.max_kicks = BK_CUCKOO_MAX_KICKS + 1;
    assert_int_equal(bk_cuckoo_new(1000, 0.01, &o, &c), BK_EINVAL);
    o = (bk_cuckoo_options){ 0 };
    o.expansion = BK_CUCKOO_MAX_EXPANSION + 1;
    assert_int_equal(bk_cuckoo_new(1000, 0.01, &o, &c), BK_EINVAL);
    o = (bk_cuckoo_options){ 0 };
    o.load_factor = 1.5;
    assert_int_equal(bk_cuckoo_new(1000, 0.01, &o, &c), BK_EINVAL);
    o.load_factor = -0.5;
    assert_int_equal(bk_cuckoo_new(1000, 0.01, &o, &c), BK_EINVAL);
    o = (bk_cuckoo_options){ 0 };
    /* absurd sizes: refused before allocating */
    assert_int_equal(bk_cuckoo_new(UINT64_MAX, 0.01, &o, &c), BK_ETOOBIG);
    assert_int_equal(bk_cuckoo_new(UINT64_C(1) << 40, 0.01, &o, &c), BK_ETOOBIG);
    assert_int_equal(bk_cuckoo_new_buckets(UINT64_MAX, &o, &c), BK_ETOOBIG);
    assert_int_equal(bk_cuckoo_new_buckets(UINT64_C(1) << 36, &o, &c), BK_ETOOBIG);
    assert_null(c);
    assert_int_equal(g_live, 0);

    /* bad calls on a filter change nothing */
    assert_int_equal(bk_cuckoo_new(1000, 0.01, NULL, &c), BK_OK);
    assert_int_equal(bk_cuckoo_add(c, "a", 1), BK_OK);
    tu_membuf before = encode(c);
    assert_int_equal(bk_cuckoo_add(NULL, "a", 1), BK_EINVAL);
    assert_int_equal(bk_cuckoo_add(c, NULL, 3), BK_EINVAL);
    assert_int_equal(bk_cuckoo_add_hash(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_cuckoo_add_if_absent(c, NULL, 3), BK_EINVAL);
    assert_int_equal(bk_cuckoo_remove(c, NULL, 3), BK_EINVAL);
    assert_int_equal(bk_cuckoo_remove_hash(NULL, 1), BK_EINVAL);
    assert_int_equal(bk_cuckoo_count(NULL, "a", 1), 0);
    assert_int_equal(bk_cuckoo_count(c, NULL, 1), 0);
    size_t done = 5;
    assert_int_equal(bk_cuckoo_add_hashes(NULL, NULL, 3, &done), BK_EINVAL);
    assert_int_equal(done, 0);
    assert_int_equal(bk_cuckoo_add_many(c, NULL, NULL, 3, NULL), BK_EINVAL);
    assert_int_equal(bk_cuckoo_remove_hashes(c, NULL, 3, NULL), BK_EINVAL);
    assert_int_equal(bk_cuckoo_contains_hashes(c, NULL, 3, NULL, NULL), BK_EINVAL);
    assert_int_equal(bk_cuckoo_add_hashes(c, NULL, 0, &done), BK_OK);
    assert_int_equal(done, 0);
    assert_int_equal(bk_cuckoo_set_concurrent(NULL, true), BK_EINVAL);
    assert_int_equal(bk_cuckoo_clone(NULL, &c), BK_EINVAL);
    tu_membuf after = encode(c);
    assert_int_equal(before.len, after.len);
    assert_memory_equal(before.buf, after.buf, before.len);
    free(before.buf);
    free(after.buf);
    bk_cuckoo_free(NULL);
    bk_cuckoo_free(c);
    assert_int_equal(g_live, 0);
    bk_set_allocator(NULL);
}

/* ---- stats, clone, clear, concurrent switch ---- */

/* ---- small filters in one block ---- */


/* A filter of one small table is one allocator block (its exact array, then the table's record, the
 * struct and the first table vector); the file keeps the spare word and the rounding to 64 bytes, as
 * zeros that the loader checks whether it copies the array or borrows it. */
static void small_filter_one_block(void **state)
{
    (void)state;
    bk_allocator al = { count_malloc, count_calloc, count_free, NULL };
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.allocator = &al;
    o.bucket_size = 2;
    o.fingerprint_bits = 8;
    o.expansion = 1;
    bk_cuckoo *c = NULL;
    assert_int_equal(bk_cuckoo_new_buckets(64, &o, &c), BK_OK); /* 128 bytes of array */
    assert_int_equal(g_live, 1);
    uint64_t st = 5;
    for (int i = 0; i < 100; i++) assert_int_equal(bk_cuckoo_add_hash(c, tu_splitmix(&st)), BK_OK);
    assert_int_equal(bk_cuckoo_tables(c), 1);
    bk_cuckoo *k = NULL;
    assert_int_equal(bk_cuckoo_clone(c, &k), BK_OK);
    assert_int_equal(g_live, 2);
    tu_membuf m;
    bk_cuckoo *d = round_trip(c, 0, &m);
    /* header 64, table header 64, then the file's array: 128 exact bytes, the spare word, the rounding */
    const size_t arr = 128, file_arr = 192;
    assert_int_equal(m.len, arr + file_arr);
    st = 5;
    for (int i = 0; i < 100; i++) {
        uint64_t h = tu_splitmix(&st);
        assert_true(bk_cuckoo_contains_hash(d, h) && bk_cuckoo_contains_hash(k, h));
    }
    tu_membuf m2 = encode(k);
    assert_memory_equal(m.buf, m2.buf, m.len);
    free(m2.buf);
    bk_cuckoo_free(d);
    bk_cuckoo_free(k);
    /* a nonzero byte in the spare word or in the rounding: refused, copied or borrowed */
    uint8_t *al64 = aligned_alloc(64, m.len);
    const size_t spots[] = { arr + 128, arr + 135, arr + file_arr - 1 };
    for (int i = 0; i < 3; i++) {
        m.buf[spots[i]] = 1;
        memcpy(al64, m.buf, m.len);
        bk_cuckoo *e = (bk_cuckoo *)0x1;
        assert_int_equal(decode(m.buf, m.len, 0, false, &e), BK_ECORRUPT);
        assert_null(e);
        assert_int_equal(decode(al64, m.len, 0, true, &e), BK_ECORRUPT);
        assert_null(e);
        m.buf[spots[i]] = 0;
    }
    free(al64);
    free(m.buf);
    bk_cuckoo_free(c);
    assert_int_equal(g_live, 0);
}

static void stats_clone_clear(void **state)
{
    (void)state;
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.seed = 123;
    bk_cuckoo *c = NULL;
    assert_int_equal(bk_cuckoo_new(10000, 0.01, &o, &c), BK_OK);
    for (uint64_t i = 0; i < 5000; i++) assert_int_equal(bk_cuckoo_add(c, &i, sizeof i), BK_OK);
    bk_stats s;
    bk_cuckoo_stats(c, &s);
    assert_int_equal(s.type, BK_TYPE_CUCKOO);
    assert_int_equal(s.k, 10);
    assert_int_equal(s.capacity, 10000);
    assert_int_equal(s.count, 5000);
    assert_int_equal(s.subfilters, 1);
    assert_int_equal(s.seed, 123);
    assert_false(s.saturated);
    /* 5000 / (2732 buckets * 4): 10000 / 0.95 + 4 sqrt(10000) slots */
    assert_true(s.fill_ratio > 0.45 && s.fill_ratio < 0.46);
    assert_true(s.fpr_now < s.fpr_target);
    bk_cuckoo_info in;
    bk_cuckoo_get_info(c, &in);
    assert_int_equal(in.buckets, 2732);
    assert_int_equal(in.bucket_size, 4);
    assert_int_equal(in.max_kicks, 500);
    assert_int_equal(in.expansion, 0);
    assert_false(in.concurrent);
    assert_int_equal(bk_cuckoo_seed(c), 123);

    bk_cuckoo *d = NULL;
    assert_int_equal(bk_cuckoo_clone(c, &d), BK_OK);
    tu_membuf a = encode(c), b = encode(d);
    assert_memory_equal(a.buf, b.buf, a.len);
    free(a.buf);
    free(b.buf);
    /* concurrent mode gives the same answers */
    assert_int_equal(bk_cuckoo_set_concurrent(d, true), BK_OK);
    bk_cuckoo_get_info(d, &in);
    assert_true(in.concurrent);
    for (uint64_t i = 0; i < 5000; i++) assert_true(bk_cuckoo_contains(d, &i, sizeof i));
    for (uint64_t i = 5000; i < 6000; i++) assert_int_equal(bk_cuckoo_add(d, &i, sizeof i), BK_OK);
    for (uint64_t i = 0; i < 6000; i++) assert_int_equal(bk_cuckoo_count(d, &i, sizeof i) >= 1, true);
    assert_int_equal(bk_cuckoo_set_concurrent(d, false), BK_OK);
    bk_cuckoo_clear(d);
    bk_cuckoo_get_info(d, &in);
    assert_int_equal(in.items, 0);
    assert_int_equal(in.inserted, 0);
    for (uint64_t i = 0; i < 6000; i++) assert_false(bk_cuckoo_contains(d, &i, sizeof i));
    bk_cuckoo_free(d);
    /* sizing helpers */
    assert_true(fabs(bk_cuckoo_bits_per_key(12, 0.95) - 12.0 / 0.95) < 1e-12);
    assert_true(isnan(bk_cuckoo_bits_per_key(3, 0.95)));
    assert_true(isnan(bk_cuckoo_bits_per_key(33, 0.95)));
    assert_true(fabs(bk_cuckoo_fpr_bound(4, 32) - 8.0 / 4294967295.0) < 1e-15);
    assert_true(isnan(bk_cuckoo_fpr_bound(256, 12)));
    assert_true(fabs(bk_cuckoo_fpr_bound(4, 8) - 8.0 / 255) < 0.001);
    bk_cuckoo_free(c);
}

/* ---- space: fewer bits per key than the counting Bloom filter (4-bit cells: 4x the classic
 * filter's bits) at every FPR <= 1% the cuckoo filter can reach; and the FPR bound meets p ---- */

static void space_against_counting_bloom(void **state)
{
    (void)state;
    enum { CAP = 100000 };
    double worst = 0;
    for (double p = 0.01; p >= 1e-8; p *= 0.9) {
        bk_cuckoo *c = NULL;
        assert_int_equal(bk_cuckoo_new(CAP, p, NULL, &c), BK_OK);
        bk_cuckoo_info in;
        bk_cuckoo_get_info(c, &in);
        double cuckoo_bits = (double)in.memory_bytes * 8.0 / CAP, counting_bits = 4 * bk_bloom_bits_per_key(p);
        assert_true(in.fpr_full <= p);
        if (!(cuckoo_bits < counting_bits))
            fail_msg("p=%g: cuckoo %.2f bits/key, counting Bloom %.2f", p, cuckoo_bits, counting_bits);
        if (cuckoo_bits / counting_bits > worst) worst = cuckoo_bits / counting_bits;
        bk_cuckoo_free(c);
    }
    print_message("cuckoo bits/key over counting Bloom bits/key, worst over p in [1e-8, 1%%]: %.3f\n", worst);
    /* the fewest bits for p at 95% load: 10-bit fingerprints at p = 1% (10.6 bits/key at most), 9-bit
     * semi-sorted (9.6), 13-bit at 0.1% (14.0) */
    const struct {
        double p, max_bits;
        bool semi;
        uint32_t f;
    } goal[] = { { 0.01, 10.6, false, 10 }, { 0.01, 9.6, true, 10 }, { 0.001, 14.0, false, 13 },
                 { 0.001, 13.0, true, 13 } };
    for (size_t i = 0; i < sizeof goal / sizeof goal[0]; i++) {
        bk_cuckoo_options o = { 0 };
        o.semi_sorted = goal[i].semi;
        bk_cuckoo *c = NULL;
        assert_int_equal(bk_cuckoo_new(1000000, goal[i].p, &o, &c), BK_OK);
        bk_cuckoo_info in;
        bk_cuckoo_get_info(c, &in);
        double bits = (double)in.memory_bytes * 8.0 / 1000000;
        print_message("p=%g%s: f=%u, %.3f bits/key\n", goal[i].p, goal[i].semi ? " semi-sorted" : "", in.fingerprint_bits,
                      bits);
        assert_int_equal(in.fingerprint_bits, goal[i].f);
        assert_true(bits <= goal[i].max_bits);
        bk_cuckoo_free(c);
    }
    bk_cuckoo *c = NULL;
    /* below what 32 bits reach with 4 slots: refused */
    assert_int_equal(bk_cuckoo_new(CAP, 1.5e-9, NULL, &c), BK_EINVAL);
    assert_null(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(million_keys_at_95_percent),
        cmocka_unit_test(interleaved_add_remove),
        cmocka_unit_test(fill_until_full),
        cmocka_unit_test(small_filters_hold_their_capacity),
        cmocka_unit_test(small_filters_every_p),
        cmocka_unit_test(small_filters_that_need_the_stash),
        cmocka_unit_test(fpr_within_formula),
        cmocka_unit_test(semi_sorted_codes),
        cmocka_unit_test(remove_semantics),
        cmocka_unit_test(expansion_chain),
        cmocka_unit_test(forms_agree),
        cmocka_unit_test(fast_paths_agree),
        cmocka_unit_test(alternate_bucket_as_documented),
        cmocka_unit_test(odd_bucket_sizes),
        cmocka_unit_test(serialization),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(small_filter_one_block),
        cmocka_unit_test(stats_clone_clear),
        cmocka_unit_test(space_against_counting_bloom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
