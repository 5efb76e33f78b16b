/* The cuckoo filter's packed form (cuckoo.h, "Packed small filters"): a view answers, changes and saves
 * exactly as the ordinary filter it was packed from; closing a view that no longer fits hands back an
 * ordinary filter with its state; pack / unpack round trips are byte-identical; what cannot pack is
 * refused. And the kick generator's state (bk_cuckoo_kick_state), which the saved form does not carry:
 * a filter loaded from a saved form and given the saved filter's state makes the same bytes from then on. */
#include "testutil.h"
#include <bloomkit/experimental.h>

/* The saved form of a cuckoo filter (the file the CLI writes, the bytes the Redis module stores). */
static uint8_t *saved(const bk_cuckoo *c, size_t *len)
{
    bk_filter *h = NULL;
    assert_int_equal(bk_filter_wrap(BK_TYPE_CUCKOO, (void *)(uintptr_t)c, &h), BK_OK);
    size_t n = 0, w = 0;
    assert_int_equal(bk_filter_save_size(h, &n), BK_OK);
    uint8_t *buf = malloc(n);
    assert_non_null(buf);
    assert_int_equal(bk_filter_save_buffer(h, buf, n, &w), BK_OK);
    assert_int_equal(w, n);
    void *typed;
    assert_int_equal(bk_filter_unwrap(h, BK_TYPE_CUCKOO, &typed), BK_OK);
    *len = n;
    return buf;
}

static void assert_same_saved(const bk_cuckoo *a, const bk_cuckoo *b)
{
    size_t la, lb;
    uint8_t *sa = saved(a, &la), *sb = saved(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(sa, sb, la);
    free(sa);
    free(sb);
}

/* As the Redis module makes its filters: the fingerprint bits given, p = 0 (the bound of those bits). */
static bk_cuckoo *make(uint64_t capacity, uint32_t b, uint32_t f, bool semi, uint32_t kicks, uint32_t expansion,
                       uint64_t seed)
{
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.bucket_size = b;
    o.fingerprint_bits = f;
    o.semi_sorted = semi;
    o.max_kicks = kicks;
    o.expansion = expansion;
    o.load_factor = 1.0;
    o.seed = seed;
    bk_cuckoo *c = NULL;
    assert_int_equal(bk_cuckoo_new(capacity, 0, &o, &c), BK_OK);
    return c;
}

/* A packed filter kept as a host keeps one: the header and an exact array of its own (malloc'd to the
 * byte, so ASan sees any read past it), or the ordinary filter once it no longer fits. */
typedef struct host {
    bk_cuckoo_packed hdr;
    uint8_t *words;
    size_t len;
    bk_cuckoo *full;
} host;

static void host_pack(host *h, bk_cuckoo *c)
{
    memset(h, 0, sizeof *h);
    h->len = bk_cuckoo_packed_size(c);
    assert_true(h->len > 0);
    h->words = malloc(h->len);
    assert_int_equal(bk_cuckoo_pack(c, &h->hdr, h->words, h->len), BK_OK);
    assert_int_equal(bk_cuckoo_packed_array_size(&h->hdr), h->len);
}

/* One change through a view (or on the ordinary filter once converted). */
typedef enum { OP_ADD, OP_ADD_NX, OP_DEL } op_kind;
static bk_status host_op(host *h, op_kind op, const tu_key *k)
{
    bk_cuckoo_view view;
    bk_cuckoo *c = h->full ? h->full : bk_cuckoo_view_open(&view, &h->hdr, h->words, h->len, NULL);
    assert_non_null(c);
    bk_status s = op == OP_ADD ? bk_cuckoo_add(c, k->b, sizeof k->b)
                : op == OP_ADD_NX ? bk_cuckoo_add_if_absent(c, k->b, sizeof k->b)
                : bk_cuckoo_remove(c, k->b, sizeof k->b);
    if (!h->full) {
        bk_cuckoo *full = NULL;
        assert_int_equal(bk_cuckoo_view_close(&view, &h->hdr, h->words, h->len, &full), BK_OK);
        if (full) {
            h->full = full;
            free(h->words);
            h->words = NULL;
        }
    }
    return s;
}

/* The host's filter against its ordinary twin: saved bytes, one-key and batch answers, and (packed) the
 * unpack / pack round trip. */
static void host_check(host *h, const bk_cuckoo *twin, uint64_t nkeys)
{
    bk_cuckoo_view view;
    const bk_cuckoo *c = h->full ? h->full : bk_cuckoo_view_open(&view, &h->hdr, h->words, h->len, NULL);
    assert_non_null(c);
    assert_same_saved(c, twin);
    for (uint64_t i = 0; i < nkeys; i++) {
        tu_key k = tu_make_key(7, i);
        assert_int_equal(bk_cuckoo_contains(c, k.b, sizeof k.b), bk_cuckoo_contains(twin, k.b, sizeof k.b));
        assert_int_equal(bk_cuckoo_count(c, k.b, sizeof k.b), bk_cuckoo_count(twin, k.b, sizeof k.b));
    }
    /* batch queries over the view give the one-key answers */
    enum { N = 300 };
    const void *keys[N];
    size_t lens[N];
    tu_key ks[N];
    uint8_t r1[N], r2[N];
    for (int i = 0; i < N; i++) {
        ks[i] = tu_make_key(8, (uint64_t)i);
        keys[i] = ks[i].b;
        lens[i] = sizeof ks[i].b;
    }
    assert_int_equal(bk_cuckoo_contains_many(c, keys, lens, N, r1, NULL), BK_OK);
    assert_int_equal(bk_cuckoo_contains_many(twin, keys, lens, N, r2, NULL), BK_OK);
    assert_memory_equal(r1, r2, N);
    if (!h->full) {
        /* unpack gives the same filter; packing that again gives the same header and array */
        bk_cuckoo *u = NULL;
        assert_int_equal(bk_cuckoo_unpack(&h->hdr, h->words, h->len, NULL, &u), BK_OK);
        assert_same_saved(u, twin);
        bk_cuckoo_packed hdr2;
        uint8_t *w2 = malloc(h->len);
        assert_int_equal(bk_cuckoo_pack(u, &hdr2, w2, h->len), BK_OK);
        assert_memory_equal(&hdr2, &h->hdr, sizeof hdr2);
        assert_memory_equal(w2, h->words, h->len);
        free(w2);
        bk_cuckoo_free(u);
    }
}

static void host_free(host *h)
{
    free(h->words);
    bk_cuckoo_free(h->full);
}

/* Every geometry: the same calls on the packed filter (through views) and on an ordinary twin give the
 * same answers and the same saved bytes, through kicks, the stash, removes, and growth past the packed
 * form (after which the host holds the ordinary filter view_close handed back). */
static void view_equals_filter(void **state)
{
    (void)state;
    static const struct { uint64_t cap; uint32_t b, f; bool semi; uint32_t kicks, exp; } g[] = {
        { 128, 2, 8, false, 20, 1 },   /* CF.RESERVE k 100 in the Redis module */
        { 1024, 2, 8, false, 20, 1 },  /* CF.ADD's filter */
        { 200, 4, 12, false, 500, 2 }, { 100, 4, 13, true, 100, 1 }, { 60, 1, 16, false, 30, 4 },
        { 90, 3, 7, false, 20, 0 },    /* no expansion: full is BK_EFULL */
        { 2000, 8, 16, false, 50, 1 }, /* the largest packed array: 4000 bytes */
    };
    for (size_t t = 0; t < sizeof g / sizeof g[0]; t++) {
        bk_cuckoo *twin = make(g[t].cap, g[t].b, g[t].f, g[t].semi, g[t].kicks, g[t].exp, 0);
        bk_cuckoo *src = make(g[t].cap, g[t].b, g[t].f, g[t].semi, g[t].kicks, g[t].exp, 0);
        host h;
        host_pack(&h, src);
        bk_cuckoo_free(src);
        host_check(&h, twin, 50);
        uint64_t n = g[t].cap * 3 / 2, next = 0;
        uint64_t seed = t + 1;
        bool grew = false;
        for (uint64_t step = 0; step < 3 * n; step++) {
            uint64_t r = tu_splitmix(&seed) % 10;
            op_kind op = r < 6 ? OP_ADD : r < 8 ? OP_ADD_NX : OP_DEL;
            /* removes take keys added before (THE CUCKOO RULES), adds repeat a few keys */
            tu_key k = tu_make_key(7, op == OP_DEL ? (next ? tu_splitmix(&seed) % next : 0) : next++);
            if (op != OP_DEL && r == 5 && next > 3) k = tu_make_key(7, next - 3);
            bk_status a = op == OP_ADD ? bk_cuckoo_add(twin, k.b, sizeof k.b)
                        : op == OP_ADD_NX ? bk_cuckoo_add_if_absent(twin, k.b, sizeof k.b)
                        : bk_cuckoo_remove(twin, k.b, sizeof k.b);
            bk_status b = host_op(&h, op, &k);
            assert_int_equal(a, b);
            grew |= bk_cuckoo_tables(twin) > 1;
            if (step % 97 == 0) host_check(&h, twin, next + 10);
        }
        host_check(&h, twin, next + 10);
        /* a chain cannot be packed: the host holds the ordinary filter then */
        if (grew) assert_non_null(h.full);
        if (g[t].exp) assert_true(grew);
        host_free(&h);
        bk_cuckoo_free(twin);
    }
}

/* A view that grew a table and is discarded frees what it grew (LeakSanitizer checks), and leaves the
 * packed filter as it was. */
static void discard_and_stash(void **state)
{
    (void)state;
    bk_cuckoo *c = make(16, 2, 8, false, 5, 1, 0);
    host h;
    host_pack(&h, c);
    bk_cuckoo_packed before = h.hdr;
    bk_cuckoo_view view;
    bk_cuckoo *v = bk_cuckoo_view_open(&view, &h.hdr, h.words, h.len, NULL);
    for (uint64_t i = 0; i < 200; i++) {
        tu_key k = tu_make_key(3, i);
        assert_int_equal(bk_cuckoo_add(v, k.b, sizeof k.b), BK_OK);
    }
    assert_true(bk_cuckoo_tables(v) > 2); /* past the view's own two-entry vector */
    bk_cuckoo_view_discard(&view);
    assert_memory_equal(&before, &h.hdr, sizeof before);
    /* after the discard the packed filter is untouched: a new view is the empty filter */
    v = bk_cuckoo_view_open(&view, &h.hdr, h.words, h.len, NULL);
    assert_int_equal(bk_cuckoo_items(v), 0);
    assert_same_saved(v, c);
    bk_cuckoo_free(c);
    host_free(&h);
}

/* What the packed form cannot hold is refused, and damaged headers do not open. */
static void refusals(void **state)
{
    (void)state;
    bk_cuckoo_packed hdr;
    uint8_t words[BK_CUCKOO_PACKED_MAX_BYTES];
    bk_cuckoo *seeded = make(100, 2, 8, false, 20, 1, 42);
    assert_int_equal(bk_cuckoo_packed_size(seeded), 0);
    assert_int_equal(bk_cuckoo_pack(seeded, &hdr, words, sizeof words), BK_EINVAL);
    bk_cuckoo_free(seeded);
    bk_cuckoo *big = make(4000, 2, 8, false, 20, 1, 0); /* 4000 bytes: packs; 4100 do not */
    assert_int_equal(bk_cuckoo_packed_size(big), 4000);
    bk_cuckoo_free(big);
    big = make(4100, 2, 8, false, 20, 1, 0);
    assert_int_equal(bk_cuckoo_packed_size(big), 0);
    bk_cuckoo_free(big);
    bk_cuckoo *wide = make(100, 2, 20, false, 20, 1, 0); /* fingerprints over 16 bits */
    assert_int_equal(bk_cuckoo_packed_size(wide), 0);
    bk_cuckoo_free(wide);
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.fingerprint_bits = 8;
    o.concurrent = true;
    bk_cuckoo *conc = NULL;
    assert_int_equal(bk_cuckoo_new(100, 0, &o, &conc), BK_OK);
    assert_int_equal(bk_cuckoo_packed_size(conc), 0);
    bk_cuckoo_free(conc);
    bk_cuckoo *p1 = NULL;
    assert_int_equal(bk_cuckoo_new(100, 0.01, NULL, &p1), BK_OK); /* an FPR target other than the bound */
    assert_int_equal(bk_cuckoo_packed_size(p1), 0);
    bk_cuckoo_free(p1);

    bk_cuckoo *c = make(128, 2, 8, false, 20, 1, 0);
    size_t len = bk_cuckoo_packed_size(c);
    assert_int_equal(len, 128);
    assert_int_equal(bk_cuckoo_pack(c, &hdr, words, len - 1), BK_EINVAL);
    assert_int_equal(bk_cuckoo_pack(c, &hdr, words, len), BK_OK);
    bk_cuckoo_view view;
    assert_null(bk_cuckoo_view_open(&view, &hdr, words, len + 8, NULL));
    bk_cuckoo_packed bad = hdr;
    bad.bytes[31] ^= 0x80; /* the tag */
    assert_null(bk_cuckoo_view_open(&view, &bad, words, len, NULL));
    assert_int_equal(bk_cuckoo_packed_array_size(&bad), 0);
    bad = hdr;
    bad.bytes[28] = 0; /* no slots per bucket */
    assert_null(bk_cuckoo_view_open(&view, &bad, words, len, NULL));
    bk_cuckoo *u = NULL;
    assert_int_equal(bk_cuckoo_unpack(&bad, words, len, NULL, &u), BK_EINVAL);
    assert_null(u);
    assert_non_null(bk_cuckoo_view_open(&view, &hdr, words, len, NULL));
    bk_cuckoo_free(c);
}

/* A filter loaded from a saved form kicks as the one that was saved only once it has the same kick
 * state: then every later call answers alike and the saved forms stay byte-identical; without it they
 * part (the reason a host stores the state beside the saved form). */
static bk_cuckoo *reload(const bk_cuckoo *c)
{
    size_t n;
    uint8_t *buf = saved(c, &n);
    bk_filter *h = NULL;
    assert_int_equal(bk_filter_load_buffer(buf, n, BK_LOAD_DEFAULT, &h), BK_OK);
    void *typed = NULL;
    assert_int_equal(bk_filter_unwrap(h, BK_TYPE_CUCKOO, &typed), BK_OK);
    free(buf);
    return typed;
}

/* Churn near full: removes and adds (each add kicking); the same calls on a and b answer alike. */
static void churn(bk_cuckoo *a, bk_cuckoo *b, uint64_t from, uint64_t n, bool same_answers)
{
    for (uint64_t i = from; i < from + n; i++) {
        uint64_t old = UINT64_C(1) << 40 | (i - from); /* the fill's keys, oldest first */
        bk_status ra = bk_cuckoo_remove_u64(a, old), rb = bk_cuckoo_remove_u64(b, old);
        bk_status aa = bk_cuckoo_add_u64(a, i), ab = bk_cuckoo_add_u64(b, i);
        if (same_answers) {
            assert_int_equal(ra, rb);
            assert_int_equal(aa, ab);
        }
    }
}

static bool same_saved(const bk_cuckoo *a, const bk_cuckoo *b)
{
    size_t la, lb;
    uint8_t *sa = saved(a, &la), *sb = saved(b, &lb);
    bool same = la == lb && memcmp(sa, sb, la) == 0;
    free(sa);
    free(sb);
    return same;
}

static void kick_state(void **state)
{
    (void)state;
    /* no expansion (a full filter refuses) and growing ones; packable and not */
    const struct {
        uint64_t cap;
        uint32_t b, f, expansion;
        uint64_t seed;
    } cases[] = { { 200, 4, 8, 0, 0 }, { 200, 2, 12, 1, 0 }, { 3000, 4, 16, 0, 7 }, { 100, 4, 8, 2, 0 } };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bk_cuckoo *a = make(cases[k].cap, cases[k].b, cases[k].f, false, 50, cases[k].expansion, cases[k].seed);
        uint64_t s0 = bk_cuckoo_kick_state(a);
        assert_true(s0 != 0);
        uint64_t fill = cases[k].cap * 97 / 100, done = 0;
        for (uint64_t i = 0; i < fill; i++) done += bk_cuckoo_add_u64(a, UINT64_C(1) << 40 | i) == BK_OK;
        assert_true(done > cases[k].cap * 9 / 10);
        bk_cuckoo_info info;
        bk_cuckoo_get_info(a, &info);
        assert_true(info.kicks > 0);
        assert_true(bk_cuckoo_kick_state(a) != s0); /* the kicks moved it */

        /* b, reloaded without the state, restarts from the seed; c is given the original's state */
        bk_cuckoo *b = reload(a), *c = reload(a);
        assert_int_equal(bk_cuckoo_kick_state(b), s0);
        assert_true(same_saved(a, b));
        assert_int_equal(bk_cuckoo_set_kick_state(c, bk_cuckoo_kick_state(a)), BK_OK);
        assert_int_equal(bk_cuckoo_kick_state(c), bk_cuckoo_kick_state(a));
        /* the same calls on all three: c answers as a and keeps its bytes, b parts from it */
        bk_cuckoo *a2 = reload(a);
        assert_int_equal(bk_cuckoo_set_kick_state(a2, bk_cuckoo_kick_state(a)), BK_OK);
        churn(a, c, UINT64_C(1) << 41, cases[k].cap, true);
        churn(a2, b, UINT64_C(1) << 41, cases[k].cap, false);
        assert_true(same_saved(a, c));
        assert_true(same_saved(a, a2));
        assert_int_equal(bk_cuckoo_kick_state(a), bk_cuckoo_kick_state(c));
        assert_false(same_saved(a, b));
        bk_cuckoo_free(a);
        bk_cuckoo_free(a2);
        bk_cuckoo_free(b);
        bk_cuckoo_free(c);
    }
    /* a zero state is refused (the generator would stay at 0), the filter unchanged */
    bk_cuckoo *e = make(100, 4, 8, false, 50, 1, 0);
    uint64_t s = bk_cuckoo_kick_state(e);
    assert_int_equal(bk_cuckoo_set_kick_state(e, 0), BK_EINVAL);
    assert_int_equal(bk_cuckoo_kick_state(e), s);
    assert_int_equal(bk_cuckoo_set_kick_state(NULL, 5), BK_EINVAL);
    assert_int_equal(bk_cuckoo_set_kick_state(e, 2), BK_OK);
    assert_int_equal(bk_cuckoo_kick_state(e), 2);
    bk_cuckoo_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(view_equals_filter),
        cmocka_unit_test(discard_and_stash),
        cmocka_unit_test(refusals),
        cmocka_unit_test(kick_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
