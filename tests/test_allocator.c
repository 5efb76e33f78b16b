/*
 * Each object allocates and frees through the allocator of its options: for every type, a filter made
 * with options.allocator gets every byte from it (creation, inserts that grow or lazily allocate,
 * clone) and returns every byte to it on free, while the default allocator is never called. The same
 * for a filter loaded or opened with bk_load_options.allocator (every load and open form), for the
 * generic handle around either, and for saving through that handle. Large arrays made with a user
 * allocator keep its accounting exact: no 2 MiB huge-page padding is asked of it.
 */
#include <fcntl.h>
#include <unistd.h>
#include "testutil.h"
#include "factories.h"
#include <bloomkit/bloomkit.h>

typedef struct counter {
    long calls, live;
    size_t largest; /* the largest single request */
} counter;

static void *c_malloc(void *o, size_t n)
{
    counter *c = o;
    c->calls++;
    c->live++;
    if (n > c->largest) c->largest = n;
    return malloc(n);
}
static void *c_calloc(void *o, size_t k, size_t n)
{
    counter *c = o;
    c->calls++;
    c->live++;
    if (k * n > c->largest) c->largest = k * n;
    return calloc(k, n);
}
static void c_free(void *o, void *p)
{
    counter *c = o;
    c->live--;
    free(p);
}

static counter mine, dflt;
static const bk_allocator MINE = { c_malloc, c_calloc, c_free, &mine };
static const bk_allocator DFLT = { c_malloc, c_calloc, c_free, &dflt };

static void reset(void)
{
    memset(&mine, 0, sizeof mine);
    memset(&dflt, 0, sizeof dflt);
    bk_set_allocator(&DFLT); /* the default: must not be called */
}

static void done(void)
{
    assert_true(mine.calls > 0);
    assert_int_equal(mine.live, 0);
    assert_int_equal(dflt.calls, 0);
    bk_set_allocator(NULL);
}

#define KEYS 3000

/* ---- every type and layout of tests/factories.h, made with MINE ----
 * The factory makes the filter, fills it through the generic handle and wraps it; then the type's
 * own allocating calls run on it: inserts past its size where it grows, atomic inserts (their
 * striped counts), growth, union, and a clone. */

static void more_bloom(void *f)
{
    for (uint64_t i = 0; i < KEYS; i++) assert_int_equal(bk_bloom_add_atomic(f, &i, sizeof i), BK_OK);
    bk_bloom *c;
    assert_int_equal(bk_bloom_clone(f, &c), BK_OK);
    bk_bloom_free(c);
}
static void more_blocked(void *f)
{
    for (uint64_t i = 0; i < KEYS; i++) assert_int_equal(bk_blocked_add_atomic(f, &i, sizeof i), BK_OK);
    bk_blocked *c;
    assert_int_equal(bk_blocked_clone(f, &c), BK_OK);
    bk_blocked_free(c);
}
static void more_counting(void *f)
{
    for (uint64_t i = 0; i < KEYS; i++) assert_int_equal(bk_counting_add(f, &i, sizeof i), BK_OK);
    bk_counting *c;
    assert_int_equal(bk_counting_clone(f, &c), BK_OK);
    bk_counting_free(c);
}
static void more_scalable(void *f)
{
    for (uint64_t i = 0; i < KEYS; i++) assert_int_equal(bk_scalable_add(f, &i, sizeof i), BK_OK);
    assert_true(bk_scalable_filters(f) > 1); /* grew: new sub-filters came from MINE too */
    bk_scalable *c;
    assert_int_equal(bk_scalable_clone(f, &c), BK_OK);
    bk_scalable_free(c);
}
static void more_cuckoo(void *f)
{
    bk_cuckoo *c;
    assert_int_equal(bk_cuckoo_clone(f, &c), BK_OK);
    assert_int_equal(bk_cuckoo_set_concurrent(c, true), BK_OK);
    bk_cuckoo_free(c);
}
static void more_fuse(void *f)
{
    bk_fuse *c;
    assert_int_equal(bk_fuse_clone(f, &c), BK_OK);
    bk_fuse_free(c);
}
static void more_ribbon(void *f)
{
    bk_ribbon *c;
    assert_int_equal(bk_ribbon_clone(f, &c), BK_OK);
    bk_ribbon_free(c);
}
static void more_aging(void *f)
{
    for (uint64_t i = 0; i < KEYS; i++) assert_int_equal(bk_aging_add(f, &i, sizeof i), BK_OK);
    bk_aging *c;
    assert_int_equal(bk_aging_clone(f, &c), BK_OK);
    bk_aging_free(c);
}
static void more_quotient(void *f)
{
    /* rebuilds into a new array (an expanding filter doubles by expand) */
    assert_int_equal(bk_quotient_expanding(f) ? bk_quotient_expand(f) : bk_quotient_grow(f), BK_OK);
    bk_quotient *c;
    assert_int_equal(bk_quotient_clone(f, &c), BK_OK);
    /* a filter of stages, or an expanding one, has no one fingerprint space: merging it is refused */
    assert_int_equal(bk_quotient_union(f, c), bk_quotient_stages(f) > 1 || bk_quotient_expanding(f) ? BK_ENOTSUP : BK_OK);
    bk_quotient_free(c);
}

static void more_cms(void *f)
{
    for (uint64_t i = 0; i < KEYS; i++) assert_int_equal(bk_cms_incrby(f, &i, sizeof i, 2, NULL), BK_OK);
    bk_cms *c;
    assert_int_equal(bk_cms_clone(f, &c), BK_OK);
    const bk_cms *src[1] = { f };
    assert_int_equal(bk_cms_merge(c, src, NULL, 1), BK_OK);
    bk_cms_free(c);
}
static void more_topk(void *f)
{
    /* byte keys: the heap copies them */
    for (uint64_t i = 0; i < KEYS; i++) assert_int_equal(bk_topk_incrby(f, &i, sizeof i, 1 + (uint32_t)(i % 7), NULL), BK_OK);
    bk_topk *c;
    assert_int_equal(bk_topk_clone(f, &c), BK_OK);
    bk_topk_free(c);
}

static void (*const more[])(void *) = {
    [BK_TYPE_BLOOM] = more_bloom,       [BK_TYPE_BLOCKED] = more_blocked, [BK_TYPE_COUNTING] = more_counting,
    [BK_TYPE_SCALABLE] = more_scalable, [BK_TYPE_CUCKOO] = more_cuckoo,   [BK_TYPE_FUSE] = more_fuse,
    [BK_TYPE_AGING] = more_aging,       [BK_TYPE_QUOTIENT] = more_quotient, [BK_TYPE_RIBBON] = more_ribbon,
    [BK_TYPE_CMS] = more_cms,           [BK_TYPE_TOPK] = more_topk,
};

static void every_factory(void **st)
{
    (void)st;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        const tf_factory *fa = &tf_factories[t];
        reset();
        tf_allocator = &MINE;
        bk_filter *f = fa->make(1000, 1000, 7);
        tf_allocator = NULL;
        if (!f) print_message("%s: not made\n", fa->name);
        assert_non_null(f);
        assert_true((size_t)fa->type < sizeof more / sizeof more[0] && more[fa->type]);
        more[fa->type](bk_filter_get(f, fa->type));
        bk_filter_free(f);
        if (mine.calls == 0 || mine.live != 0 || dflt.calls != 0)
            print_message("%s: mine %ld calls %ld live, default %ld calls\n", fa->name, mine.calls, mine.live,
                          dflt.calls);
        done();
    }
}

/* The cuckoo filter's expansion chain and concurrent mode, which no factory makes: new tables and
 * the writer lock come from MINE too. */
static void cuckoo_chain(void **st)
{
    (void)st;
    reset();
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.allocator = &MINE;
    o.expansion = 2;
    o.concurrent = true;
    bk_cuckoo *f, *c;
    assert_int_equal(bk_cuckoo_new(500, 0.01, &o, &f), BK_OK);
    for (uint64_t i = 0; i < KEYS; i++) assert_int_equal(bk_cuckoo_add(f, &i, sizeof i), BK_OK);
    assert_true(bk_cuckoo_tables(f) > 1); /* grew */
    assert_int_equal(bk_cuckoo_clone(f, &c), BK_OK);
    assert_int_equal(bk_cuckoo_set_concurrent(c, false), BK_OK);
    bk_cuckoo_free(f);
    bk_cuckoo_free(c);
    done();
}

/* ---- loads: every form, every type, with the load options' allocator ---- */

#define LOAD_KEYS 2000

typedef struct pull_src {
    const uint8_t *p;
    size_t len, off;
} pull_src;

static ptrdiff_t pull_fn(void *ctx, void *buf, size_t len)
{
    pull_src *s = ctx;
    size_t n = s->len - s->off < len ? s->len - s->off : len;
    if (n > 777) n = 777; /* pieces of odd sizes */
    memcpy(buf, s->p + s->off, n);
    s->off += n;
    return (ptrdiff_t)n;
}

static void check_answers(const bk_filter *f)
{
    if (bk_filter_type(f) == BK_TYPE_TOPK) return; /* "in the top k", not membership: test_persist compares answers */
    for (uint64_t i = 0; i < LOAD_KEYS; i++) {
        tf_key k = tf_make_key(1, i);
        assert_true(bk_filter_contains(f, k.b, sizeof k.b));
    }
}

enum { L_BUFFER, L_OPEN_BUFFER, L_PATH, L_FD, L_FILE, L_PULL, L_MMAP, L_MMAP_SHARED, L_FORMS };
static const char *const form_names[L_FORMS] = { "load_buffer", "open_buffer", "load_path", "load_fd",
                                                  "load_file", "load_pull", "open_mmap", "open_mmap shared" };

static void loads(void **st)
{
    (void)st;
    char dir[] = "/tmp/bk-alloc.XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/f.bkf", dir);
    for (size_t t = 0; t < sizeof tf_factories / sizeof tf_factories[0]; t++) {
        const tf_factory *fa = &tf_factories[t];
        bk_set_allocator(NULL);
        bk_filter *src = fa->make(LOAD_KEYS, LOAD_KEYS, 7);
        assert_non_null(src);
        void *saved;
        size_t len;
        assert_int_equal(bk_filter_save_alloc(src, &saved, &len), BK_OK);
        assert_int_equal(bk_filter_save_path(src, path), BK_OK);
        bk_filter_free(src);
        void *aligned = aligned_alloc(64, (len + 63) & ~(size_t)63);
        assert_non_null(aligned);
        memcpy(aligned, saved, len);
        for (int form = 0; form < L_FORMS; form++) {
            if (form == L_MMAP_SHARED && !fa->shared_writable) continue;
            reset();
            bk_load_options o = BK_LOAD_OPTIONS_INIT;
            o.allocator = &MINE;
            o.flags = form == L_MMAP_SHARED ? BK_OPEN_WRITE_SHARED : 0;
            bk_filter *f = NULL;
            bk_status s = BK_EINVAL;
            int fd = -1;
            FILE *fp = NULL;
            pull_src ps = { saved, len, 0 };
            switch (form) {
            case L_BUFFER: s = bk_filter_load_buffer_ex(saved, len, &o, &f); break;
            case L_OPEN_BUFFER: s = bk_filter_open_buffer_ex(aligned, len, &o, &f); break;
            case L_PATH: s = bk_filter_load_path_ex(path, &o, &f); break;
            case L_FD:
                fd = open(path, O_RDONLY);
                s = bk_filter_load_fd_ex(fd, &o, &f);
                close(fd);
                break;
            case L_FILE:
                fp = fopen(path, "rb");
                s = bk_filter_load_file_ex(fp, &o, &f);
                fclose(fp);
                break;
            case L_PULL: s = bk_filter_load_pull_ex(pull_fn, &ps, &o, &f); break;
            case L_MMAP:
            case L_MMAP_SHARED: s = bk_filter_open_mmap_ex(path, &o, &f); break;
            }
            if (s != BK_OK) print_message("%s %s: %s\n", fa->name, form_names[form], bk_strerror(s));
            assert_int_equal(s, BK_OK);
            check_answers(f);
            if (!fa->static_set && form != L_OPEN_BUFFER && form != L_MMAP) {
                tf_key k = tf_make_key(2, 0);
                assert_int_equal(bk_filter_add(f, k.b, sizeof k.b), BK_OK);
            }
            if (form == L_BUFFER) { /* saving through the handle: its temporary names and buffers */
                char p2[80];
                snprintf(p2, sizeof p2, "%s/g.bkf", dir);
                assert_int_equal(bk_filter_save_path(f, p2), BK_OK);
                unlink(p2);
            }
            assert_int_equal(bk_filter_close(f), BK_OK);
            if (mine.calls == 0 || mine.live != 0 || dflt.calls != 0)
                print_message("%s %s: mine %ld calls %ld live, default %ld calls\n", fa->name, form_names[form],
                              mine.calls, mine.live, dflt.calls);
            done();
        }
        free(aligned);
        bk_filter_buffer_free(saved);
    }
    unlink(path);
    rmdir(dir);
}

/* A typed filter taken out of a loaded handle keeps the load's allocator; a handle around a filter
 * made with its own allocator is allocated with it. */
static void unwrap_and_wrap(void **st)
{
    (void)st;
    bk_set_allocator(NULL);
    bk_filter *src = tf_factories[0].make(LOAD_KEYS, LOAD_KEYS, 7);
    void *saved;
    size_t len;
    assert_int_equal(bk_filter_save_alloc(src, &saved, &len), BK_OK);
    bk_filter_free(src);
    reset();
    bk_load_options o = BK_LOAD_OPTIONS_INIT;
    o.allocator = &MINE;
    bk_filter *f;
    assert_int_equal(bk_filter_load_buffer_ex(saved, len, &o, &f), BK_OK);
    void *typed;
    assert_int_equal(bk_filter_unwrap(f, BK_TYPE_BLOOM, &typed), BK_OK);
    tf_key k = tf_make_key(1, 3);
    assert_true(bk_bloom_contains(typed, k.b, sizeof k.b));
    bk_bloom *c;
    assert_int_equal(bk_bloom_clone(typed, &c), BK_OK);
    bk_bloom_free(typed);
    assert_int_equal(bk_filter_wrap(BK_TYPE_BLOOM, c, &f), BK_OK);
    assert_true(bk_filter_contains(f, k.b, sizeof k.b));
    bk_filter_free(f);
    done();
    bk_filter_buffer_free(saved);
}

/* bk_load_options follows the options rule: NULL or zeroed means the defaults, a larger struct with
 * non-zero bytes past this header's size is refused. */
static void load_options_rule(void **st)
{
    (void)st;
    bk_set_allocator(NULL);
    bk_filter *src = tf_factories[0].make(100, 100, 7);
    void *saved;
    size_t len;
    assert_int_equal(bk_filter_save_alloc(src, &saved, &len), BK_OK);
    bk_filter_free(src);
    bk_filter *f;
    assert_int_equal(bk_filter_load_buffer_ex(saved, len, NULL, &f), BK_OK);
    bk_filter_free(f);
    bk_load_options z;
    memset(&z, 0, sizeof z);
    assert_int_equal(bk_filter_load_buffer_ex(saved, len, &z, &f), BK_OK);
    bk_filter_free(f);
    struct {
        bk_load_options o;
        uint64_t more;
    } big = { BK_LOAD_OPTIONS_INIT, 1 };
    big.o.struct_size = sizeof big;
    assert_int_equal(bk_filter_load_buffer_ex(saved, len, &big.o, &f), BK_EINVAL);
    assert_null(f);
    big.more = 0;
    assert_int_equal(bk_filter_load_buffer_ex(saved, len, &big.o, &f), BK_OK);
    bk_filter_free(f);
    bk_filter_buffer_free(saved);
}

/* Huge pages with a user allocator: a 2 MiB+ array is not padded to a 2 MiB alignment (the
 * allocator's accounting would count the padding), so no request exceeds the array by more than a
 * line; the default allocator's array is 2 MiB aligned. */
static void large_arrays(void **st)
{
    (void)st;
    unsetenv("BK_THP");
    reset();
    bk_blocked_options o = BK_BLOCKED_OPTIONS_INIT;
    o.allocator = &MINE;
    bk_blocked *f;
    assert_int_equal(bk_blocked_new(4000000, 0.01, &o, &f), BK_OK);
    size_t len;
    const uint8_t *d = bk_blocked_data(f, &len);
    assert_true(len >= ((size_t)4 << 20));
    assert_int_equal((uintptr_t)d % 64, 0);
    assert_true(mine.largest >= len && mine.largest <= len + 128);
    bk_blocked_free(f);
    done();
    bk_blocked *g;
    assert_int_equal(bk_blocked_new(4000000, 0.01, NULL, &g), BK_OK);
    d = bk_blocked_data(g, &len);
    assert_int_equal((uintptr_t)d % ((uintptr_t)2 << 20), 0);
    bk_blocked_free(g);
}

/* ---- allocation failures: the sketches' allocating calls, the allocator refusing its n-th request ----
 * Every n from the first request on: the call answers BK_ENOMEM (never crashes), what was made is
 * freed, and no block is left (a Top-K that could not copy a key keeps its count in the buckets and
 * its heap unchanged). */

static long g_budget; /* requests left before the allocator refuses; negative: no limit */
static counter lim;
static void *l_malloc(void *o, size_t n)
{
    if (g_budget == 0) return NULL;
    if (g_budget > 0) g_budget--;
    return c_malloc(o, n);
}
static void *l_calloc(void *o, size_t k, size_t n)
{
    if (g_budget == 0) return NULL;
    if (g_budget > 0) g_budget--;
    return c_calloc(o, k, n);
}
static const bk_allocator LIMITED = { l_malloc, l_calloc, c_free, &lim };

static void sketch_failures(void **st)
{
    (void)st;
    uint8_t *saved[2] = { NULL, NULL };
    size_t saved_len[2] = { 0, 0 };
    { /* what the loads below read: a count-min sketch and a Top-K with key copies */
        bk_cms *c;
        bk_topk *t;
        assert_int_equal(bk_cms_new(1000, 4, NULL, &c), BK_OK);
        bk_topk_options to = BK_TOPK_OPTIONS_INIT;
        to.decay = 0.8; /* not the default: the sketch makes its own power table */
        assert_int_equal(bk_topk_new(16, &to, &t), BK_OK);
        for (uint64_t i = 0; i < 500; i++) {
            assert_int_equal(bk_cms_incrby(c, &i, sizeof i, 1, NULL), BK_OK);
            assert_int_equal(bk_topk_incrby(t, &i, sizeof i, (uint32_t)(i % 13) + 1, NULL), BK_OK);
        }
        bk_filter *fc, *ft;
        assert_int_equal(bk_filter_wrap(BK_TYPE_CMS, c, &fc), BK_OK);
        assert_int_equal(bk_filter_wrap(BK_TYPE_TOPK, t, &ft), BK_OK);
        void *b;
        assert_int_equal(bk_filter_save_alloc(fc, &b, &saved_len[0]), BK_OK);
        saved[0] = b;
        assert_int_equal(bk_filter_save_alloc(ft, &b, &saved_len[1]), BK_OK);
        saved[1] = b;
        bk_filter_free(fc);
        bk_filter_free(ft);
    }
    size_t refused = 0;
    for (long n = 0; n < 40; n++) {
        memset(&lim, 0, sizeof lim);
        g_budget = n;
        bk_cms_options co = BK_CMS_OPTIONS_INIT;
        co.allocator = &LIMITED;
        bk_cms *c = NULL, *cc = NULL;
        bk_status s = bk_cms_new(1000, 4, &co, &c);
        if (s == BK_OK) {
            s = bk_cms_clone(c, &cc);
            if (s != BK_OK) assert_null(cc);
        } else {
            assert_null(c);
        }
        refused += s == BK_ENOMEM;
        assert_true(s == BK_OK || s == BK_ENOMEM);
        bk_cms_free(cc);
        bk_cms_free(c);

        bk_topk_options to = BK_TOPK_OPTIONS_INIT;
        to.allocator = &LIMITED;
        to.decay = 0.8;
        bk_topk *t = NULL, *tc = NULL;
        s = bk_topk_new(16, &to, &t);
        if (s == BK_OK) {
            for (uint64_t i = 0; i < 64 && s == BK_OK; i++) {
                size_t before = bk_topk_list(t, NULL, 0);
                s = bk_topk_incrby(t, &i, sizeof i, 5, NULL);
                if (s == BK_ENOMEM) assert_int_equal(bk_topk_list(t, NULL, 0), before);
            }
            assert_true(s == BK_OK || s == BK_ENOMEM);
            refused += s == BK_ENOMEM;
            s = bk_topk_clone(t, &tc);
            if (s != BK_OK) assert_null(tc);
        } else {
            assert_null(t);
        }
        refused += s == BK_ENOMEM;
        assert_true(s == BK_OK || s == BK_ENOMEM);
        bk_topk_free(tc);
        bk_topk_free(t);

        bk_load_options lo = BK_LOAD_OPTIONS_INIT;
        lo.allocator = &LIMITED;
        for (int k = 0; k < 2; k++) {
            bk_filter *f = NULL;
            s = bk_filter_load_buffer_ex(saved[k], saved_len[k], &lo, &f);
            assert_true(s == BK_OK || s == BK_ENOMEM);
            if (s != BK_OK) assert_null(f);
            refused += s == BK_ENOMEM;
            bk_filter_free(f);
        }
        if (lim.live != 0) print_message("budget %ld: %ld blocks left\n", n, lim.live);
        assert_int_equal(lim.live, 0);
    }
    g_budget = -1;
    assert_true(refused > 40); /* the budgets did reach the calls */
    free(saved[0]);
    free(saved[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_factory), cmocka_unit_test(cuckoo_chain), cmocka_unit_test(loads),
        cmocka_unit_test(unwrap_and_wrap), cmocka_unit_test(load_options_rule), cmocka_unit_test(large_arrays),
        cmocka_unit_test(sketch_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
