/* The header-inline readers (bloomkit/reader.h): the library's answer for every key, on the golden files
 * (loaded and mapped) and on filters built here, in every form (byte keys of 16 and 8 bytes, uint64
 * keys, hashes); BK_ENOTSUP for the filters no reader serves. */
#include "testutil.h"
#include "factories.h"
#include <bloomkit/reader.h>

#define PRESENT 500      /* the golden files' keys: set 1, 0 .. 499 */
#define ABSENT 100000    /* fixed absent keys: set 3 */

typedef struct answers {
    bool (*lib_bytes)(const void *f, const void *key, size_t len);
    bool (*lib_u64)(const void *f, uint64_t key);
    bool (*lib_hash)(const void *f, uint64_t h);
    bool (*rd_bytes)(const void *r, const void *key, size_t len);
    bool (*rd_u64)(const void *r, uint64_t key);
    bool (*rd_hash)(const void *r, uint64_t h);
} answers;

/* Adapters: the library's calls and the readers' inline ones behind one shape, for the comparison loop
 * (the readers' code is what is under test, not how fast it is called). */
static bool lb_bytes(const void *f, const void *k, size_t n) { return bk_blocked_contains(f, k, n); }
static bool lb_u64(const void *f, uint64_t k) { return bk_blocked_contains_u64(f, k); }
static bool lb_hash(const void *f, uint64_t h) { return bk_blocked_contains_hash(f, h); }
static bool rb_bytes(const void *r, const void *k, size_t n) { return bk_blocked_reader_contains(*(const bk_blocked_reader *)r, k, n); }
static bool rb_u64(const void *r, uint64_t k) { return bk_blocked_reader_contains_u64(*(const bk_blocked_reader *)r, k); }
static bool rb_hash(const void *r, uint64_t h) { return bk_blocked_reader_contains_hash(*(const bk_blocked_reader *)r, h); }
static const answers BLOCKED = { lb_bytes, lb_u64, lb_hash, rb_bytes, rb_u64, rb_hash };

static bool lf_bytes(const void *f, const void *k, size_t n) { return bk_fuse_contains(f, k, n); }
static bool lf_u64(const void *f, uint64_t k) { return bk_fuse_contains_u64(f, k); }
static bool lf_hash(const void *f, uint64_t h) { return bk_fuse_contains_hash(f, h); }
static bool rf_bytes(const void *r, const void *k, size_t n) { return bk_fuse_reader_contains(*(const bk_fuse_reader *)r, k, n); }
static bool rf_u64(const void *r, uint64_t k) { return bk_fuse_reader_contains_u64(*(const bk_fuse_reader *)r, k); }
static bool rf_hash(const void *r, uint64_t h)
{
    /* the width-specific forms too: they must agree with the generic one */
    const bk_fuse_reader *rd = r;
    bool a = bk_fuse_reader_contains_hash(*rd, h);
    bool b = rd->fp_bits == 8 ? bk_fuse8_reader_contains_hash(*rd, h) : bk_fuse16_reader_contains_hash(*rd, h);
    assert_int_equal(a, b);
    return a;
}
static const answers FUSE = { lf_bytes, lf_u64, lf_hash, rf_bytes, rf_u64, rf_hash };

static bool lc_bytes(const void *f, const void *k, size_t n) { return bk_cuckoo_contains(f, k, n); }
static bool lc_u64(const void *f, uint64_t k) { return bk_cuckoo_contains_u64(f, k); }
static bool lc_hash(const void *f, uint64_t h) { return bk_cuckoo_contains_hash(f, h); }
static bool rc_bytes(const void *r, const void *k, size_t n) { return bk_cuckoo_reader_contains(*(const bk_cuckoo_reader *)r, k, n); }
/* The 4-slot forms, with f a constant as a program written for its filter's geometry passes it: they
 * must agree with the generic form (-1: the reader's buckets are not of 4 slots). */
static int rc4_u64(const bk_cuckoo_reader *rd, uint64_t k)
{
    uint32_t f = (uint32_t)__builtin_popcount(rd->fp_range);
    if (rd->bucket_bits != 4 * (uint64_t)f) return -1;
    switch (f) {
#define RC4(F) case F: return bk_cuckoo4_reader_contains_u64(*rd, F, k);
        RC4(4) RC4(5) RC4(6) RC4(7) RC4(8) RC4(9) RC4(10) RC4(11) RC4(12) RC4(13) RC4(14) RC4(15) RC4(16)
#undef RC4
    default: return -1;
    }
}
static bool rc_u64(const void *r, uint64_t k)
{
    const bk_cuckoo_reader *rd = r;
    bool a = bk_cuckoo_reader_contains_u64(*rd, k);
    int b = rc4_u64(rd, k);
    if (b >= 0) assert_int_equal(a, b);
    return a;
}
static bool rc_hash(const void *r, uint64_t h) { return bk_cuckoo_reader_contains_hash(*(const bk_cuckoo_reader *)r, h); }
static const answers CUCKOO = { lc_bytes, lc_u64, lc_hash, rc_bytes, rc_u64, rc_hash };

/* Every form, on the present keys (must be found) and the absent ones: the reader answers as the
 * library. `present_u64`: the uint64 keys 0 .. npresent-1 of `u64_set` were added (filters built here). */
static void compare(const char *what, const answers *a, const void *f, const void *r, uint64_t npresent,
                    bool golden, uint64_t u64_set)
{
    uint64_t st = 77, pos = 0;
    for (uint64_t i = 0; i < npresent + ABSENT; i++) {
        bool present = i < npresent;
        tf_key k = tf_make_key(present ? 1 : 3, present ? i : i - npresent);
        bool lib = a->lib_bytes(f, k.b, sizeof k.b), rd = a->rd_bytes(r, k.b, sizeof k.b);
        if (lib != rd) fail_msg("%s: 16-byte key %llu: library %d, reader %d", what, (unsigned long long)i, lib, rd);
        if (golden && present && !rd) fail_msg("%s: present key %llu not found", what, (unsigned long long)i);
        pos += rd && !present;
        /* 8-byte keys and the uint64 calls: the first 8 bytes of the key, and keys of u64_set */
        lib = a->lib_bytes(f, k.b, 8);
        rd = a->rd_bytes(r, k.b, 8);
        if (lib != rd) fail_msg("%s: 8-byte key %llu: library %d, reader %d", what, (unsigned long long)i, lib, rd);
        uint64_t u = present ? u64_set + i : tu_splitmix(&st);
        lib = a->lib_u64(f, u);
        rd = a->rd_u64(r, u);
        if (lib != rd) fail_msg("%s: uint64 key %llu: library %d, reader %d", what, (unsigned long long)u, lib, rd);
        if (!golden && present && !rd) fail_msg("%s: present uint64 key %llu not found", what, (unsigned long long)u);
        uint64_t h = tu_splitmix(&st);
        lib = a->lib_hash(f, h);
        rd = a->rd_hash(r, h);
        if (lib != rd) fail_msg("%s: hash %016llx: library %d, reader %d", what, (unsigned long long)h, lib, rd);
        /* other lengths: XXH3 of 0 .. 40 bytes */
        if (i % 97 == 0) {
            uint8_t buf[41];
            for (size_t j = 0; j < sizeof buf; j++) buf[j] = (uint8_t)(i * 31 + j);
            size_t len = (size_t)(i / 97) % sizeof buf;
            lib = a->lib_bytes(f, buf, len);
            rd = a->rd_bytes(r, buf, len);
            if (lib != rd) fail_msg("%s: %zu-byte key: library %d, reader %d", what, len, lib, rd);
        }
    }
    print_message("%-28s same answers; %llu / %d absent 16-byte keys positive\n", what, (unsigned long long)pos,
                  ABSENT);
}

static void golden_one(const char *name, bk_type type, bool mapped)
{
    char p[1024], what[96];
    snprintf(p, sizeof p, "%s/golden/%s-v1.0.bkf", BK_TEST_SOURCE_DIR, name);
    snprintf(what, sizeof what, "%s (%s)", name, mapped ? "mapped" : "loaded");
    bk_filter *g;
    assert_int_equal(mapped ? bk_filter_open_mmap(p, 0, &g) : bk_filter_load_path(p, 0, &g), BK_OK);
    void *f = bk_filter_get(g, type);
    assert_non_null(f);
    if (type == BK_TYPE_BLOCKED) {
        bk_blocked_reader r;
        bk_status s = bk_blocked_get_reader(f, &r);
        if (bk_blocked_layout_of(f) != BK_BLOCKED_SPLIT256) {
            assert_int_equal(s, BK_ENOTSUP);
        } else {
            assert_int_equal(s, BK_OK);
            compare(what, &BLOCKED, f, &r, PRESENT, true, 0);
        }
    } else if (type == BK_TYPE_FUSE) {
        bk_fuse_reader r;
        assert_int_equal(bk_fuse_get_reader(f, &r), BK_OK);
        size_t len;
        assert_ptr_equal(r.cells, bk_fuse_data(f, &len)); /* the library's own bytes */
        compare(what, &FUSE, f, &r, PRESENT, true, 0);
    } else {
        bk_cuckoo_reader r;
        assert_int_equal(bk_cuckoo_get_reader(f, &r), BK_OK);
        compare(what, &CUCKOO, f, &r, PRESENT, true, 0);
    }
    bk_filter_free(g);
}

static void golden_files(void **state)
{
    (void)state;
    static const struct { const char *name; bk_type type; } files[] = {
        { "blocked-split256", BK_TYPE_BLOCKED }, { "blocked-512", BK_TYPE_BLOCKED },
        { "fuse8", BK_TYPE_FUSE }, { "fuse16", BK_TYPE_FUSE }, { "cuckoo", BK_TYPE_CUCKOO },
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        golden_one(files[i].name, files[i].type, false);
        golden_one(files[i].name, files[i].type, true);
    }
}

static const uint64_t U64_SET = UINT64_C(0x1234500000000);

/* The readers' inlined 8-byte hash is XXH3-64 of the key's little-endian bytes, for every seed's flip
 * (the reader of a filter of that seed supplies it). */
static void hash_is_xxh3(void **state)
{
    (void)state;
    const uint64_t seeds[] = { 0, 1, 0x5eed, UINT64_MAX, UINT64_C(0x8000000000000000), UINT64_C(0xffffffff) };
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        bk_blocked_options o = BK_BLOCKED_OPTIONS_INIT;
        o.seed = seeds[s];
        bk_blocked *f;
        assert_int_equal(bk_blocked_new(1000, 0.01, &o, &f), BK_OK);
        bk_blocked_reader r;
        assert_int_equal(bk_blocked_get_reader(f, &r), BK_OK);
        uint64_t st = s;
        for (uint64_t i = 0; i < 100000; i++) {
            uint64_t k = i < 64 ? (i < 32 ? UINT64_C(1) << i : ~(UINT64_C(1) << (i - 32))) : tu_splitmix(&st);
            uint8_t b[8];
            for (int j = 0; j < 8; j++) b[j] = (uint8_t)(k >> (8 * j));
            uint64_t want = XXH3_64bits_withSeed(b, 8, seeds[s]);
            assert_int_equal(bk_reader_hash_u64(k, r.flip), want);
            assert_int_equal(bk_reader_hash(b, 8, seeds[s], r.flip), want);
        }
        bk_blocked_free(f);
    }
}

static void blocked_built(void **state)
{
    (void)state;
    static const uint64_t ns[] = { 1, 1000, 200000 };
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        bk_blocked_options o = BK_BLOCKED_OPTIONS_INIT;
        o.seed = 1000 + t;
        bk_blocked *f;
        assert_int_equal(bk_blocked_new(2 * ns[t], 0.01, &o, &f), BK_OK); /* two sets of keys */
        for (uint64_t i = 0; i < ns[t]; i++) {
            tf_key k = tf_make_key(1, i);
            assert_int_equal(bk_blocked_add(f, k.b, sizeof k.b), BK_OK);
            assert_int_equal(bk_blocked_add_u64(f, U64_SET + i), BK_OK);
        }
        bk_blocked_reader r;
        assert_int_equal(bk_blocked_get_reader(f, &r), BK_OK);
        char what[64];
        snprintf(what, sizeof what, "blocked built, n = %llu", (unsigned long long)ns[t]);
        compare(what, &BLOCKED, f, &r, ns[t] < PRESENT ? ns[t] : PRESENT, false, U64_SET);
        bk_blocked_free(f);
    }
    bk_blocked_options o = BK_BLOCKED_OPTIONS_INIT;
    o.layout = BK_BLOCKED_512;
    bk_blocked *f;
    bk_blocked_reader r;
    assert_int_equal(bk_blocked_new(1000, 0.01, &o, &f), BK_OK);
    assert_int_equal(bk_blocked_get_reader(f, &r), BK_ENOTSUP);
    assert_int_equal(bk_blocked_get_reader(NULL, &r), BK_EINVAL);
    assert_int_equal(bk_blocked_get_reader(f, NULL), BK_EINVAL);
    bk_blocked_free(f);
}

/* A fuse filter of the n keys (16-byte keys of set 1 and the uint64 keys of U64_SET, hashed as the
 * library hashes them). */
static bk_fuse *fuse_of(uint64_t n, uint32_t bits, uint64_t seed)
{
    uint64_t *h = malloc((2 * n + 1) * sizeof *h);
    assert_non_null(h);
    for (uint64_t i = 0; i < n; i++) {
        tf_key k = tf_make_key(1, i);
        h[2 * i] = bk_hash64(k.b, sizeof k.b, seed);
        uint64_t u = U64_SET + i;
        h[2 * i + 1] = bk_hash64(&u, 8, seed);
    }
    bk_fuse_options o = BK_FUSE_OPTIONS_INIT;
    o.fingerprint_bits = bits;
    o.seed = seed;
    bk_fuse *f;
    assert_int_equal(bk_fuse_build_hashes(h, 2 * n, &o, &f), BK_OK);
    free(h);
    return f;
}

static void fuse_built(void **state)
{
    (void)state;
    static const uint64_t ns[] = { 0, 1, 1000, 300000 };
    for (uint32_t bits = 8; bits <= 16; bits += 8)
        for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
            bk_fuse *f = fuse_of(ns[t], bits, 50 + t);
            bk_fuse_reader r;
            assert_int_equal(bk_fuse_get_reader(f, &r), BK_OK);
            assert_int_equal(r.fp_bits, bits);
            char what[64];
            snprintf(what, sizeof what, "fuse%u built, n = %llu", bits, (unsigned long long)ns[t]);
            compare(what, &FUSE, f, &r, ns[t] < PRESENT ? ns[t] : PRESENT, false, U64_SET);
            bk_fuse_free(f);
        }
    /* filters whose first construction attempt failed query with a remixed hash: find some among small
     * builds (seeds are fixed, so the same ones every run) and hold them to the library too */
    int remixed = 0;
    for (uint64_t seed = 1; seed < 400 && remixed < 4; seed++) {
        bk_fuse *f = fuse_of(3 + seed % 20, seed % 2 ? 8 : 16, seed);
        bk_fuse_reader r;
        assert_int_equal(bk_fuse_get_reader(f, &r), BK_OK);
        if (r.mix_seed) {
            char what[64];
            snprintf(what, sizeof what, "fuse%u remixed, seed %llu", r.fp_bits, (unsigned long long)seed);
            compare(what, &FUSE, f, &r, 3 + seed % 20, false, U64_SET);
            remixed++;
        }
        bk_fuse_free(f);
    }
    print_message("%d remixed fuse filters compared\n", remixed);
    assert_int_equal(bk_fuse_get_reader(NULL, &(bk_fuse_reader){ 0 }), BK_EINVAL);
}

static void cuckoo_geometry(uint32_t b, uint32_t fbits, uint64_t n, double load)
{
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.bucket_size = b;
    o.fingerprint_bits = fbits;
    o.seed = b * 100 + fbits;
    if (load > 0) o.load_factor = load;
    bk_cuckoo *f;
    assert_int_equal(bk_cuckoo_new(n, 0, &o, &f), BK_OK);
    uint64_t added = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (bk_cuckoo_add_u64(f, U64_SET + i) != BK_OK) break;
        added++;
    }
    bk_cuckoo_info info;
    bk_cuckoo_get_info(f, &info);
    bk_cuckoo_reader r;
    assert_int_equal(bk_cuckoo_get_reader(f, &r), BK_OK);
    char what[96];
    snprintf(what, sizeof what, "cuckoo b=%u f=%u, %llu keys%s%s", b, fbits, (unsigned long long)added,
             r.stash_used ? ", stash" : "", r.early ? ", early" : "");
    /* tables over 4 MiB test the first bucket before loading the second, the reader as the library */
    assert_int_equal(r.early != 0, info.memory_bytes > ((uint64_t)4 << 20));
    compare(what, &CUCKOO, f, &r, added < PRESENT ? added : PRESENT, false, U64_SET);
    bk_cuckoo_free(f);
}

static void cuckoo_built(void **state)
{
    (void)state;
    cuckoo_geometry(4, 12, 100000, 0);
    cuckoo_geometry(4, 8, 100000, 0);
    cuckoo_geometry(4, 13, 50000, 0);
    cuckoo_geometry(4, 16, 50000, 0);
    cuckoo_geometry(2, 16, 50000, 0);
    cuckoo_geometry(8, 8, 50000, 0);
    cuckoo_geometry(1, 20, 20000, 0);
    cuckoo_geometry(4, 10, 1000, 0);
    cuckoo_geometry(4, 16, 2500000, 0); /* 5.3 MB: the first-bucket-first form */
    cuckoo_geometry(2, 13, 3000000, 0);
    /* past what the table holds: keys wait in the stash, which the reader answers as the library */
    int stashed = 0;
    for (uint32_t s = 0; s < 8 && !stashed; s++) {
        bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
        o.fingerprint_bits = 12;
        o.max_kicks = 20;
        o.seed = s;
        bk_cuckoo *f;
        assert_int_equal(bk_cuckoo_new_buckets(64, &o, &f), BK_OK);
        uint64_t added = 0;
        for (uint64_t i = 0; i < 256; i++) {
            if (bk_cuckoo_add_u64(f, U64_SET + i) != BK_OK) break;
            added++;
        }
        bk_cuckoo_reader r;
        assert_int_equal(bk_cuckoo_get_reader(f, &r), BK_OK);
        if (r.stash_used) {
            stashed = 1;
            compare("cuckoo with a stash", &CUCKOO, f, &r, added, false, U64_SET);
        }
        bk_cuckoo_free(f);
    }
    assert_true(stashed);
    /* what no reader serves */
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    bk_cuckoo *f;
    bk_cuckoo_reader r;
    o.semi_sorted = true;
    assert_int_equal(bk_cuckoo_new(1000, 0.01, &o, &f), BK_OK);
    assert_int_equal(bk_cuckoo_get_reader(f, &r), BK_ENOTSUP);
    bk_cuckoo_free(f);
    o = (bk_cuckoo_options)BK_CUCKOO_OPTIONS_INIT;
    o.concurrent = true;
    assert_int_equal(bk_cuckoo_new(1000, 0.01, &o, &f), BK_OK);
    assert_int_equal(bk_cuckoo_get_reader(f, &r), BK_ENOTSUP);
    bk_cuckoo_free(f);
    o = (bk_cuckoo_options)BK_CUCKOO_OPTIONS_INIT;
    o.expansion = 2;
    assert_int_equal(bk_cuckoo_new(100, 0.01, &o, &f), BK_OK);
    for (uint64_t i = 0; i < 1000; i++) assert_int_equal(bk_cuckoo_add_u64(f, i), BK_OK);
    assert_true(bk_cuckoo_tables(f) > 1);
    assert_int_equal(bk_cuckoo_get_reader(f, &r), BK_ENOTSUP);
    bk_cuckoo_free(f);
    o = (bk_cuckoo_options)BK_CUCKOO_OPTIONS_INIT;
    o.bucket_size = 8;
    o.fingerprint_bits = 12;
    assert_int_equal(bk_cuckoo_new(1000, 0, &o, &f), BK_OK);
    assert_int_equal(bk_cuckoo_get_reader(f, &r), BK_ENOTSUP); /* 96-bit buckets: two loads */
    assert_int_equal(bk_cuckoo_get_reader(NULL, &r), BK_EINVAL);
    assert_int_equal(bk_cuckoo_get_reader(f, NULL), BK_EINVAL);
    bk_cuckoo_free(f);
}

int main(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && defined(__BMI2__) && defined(__AVX2__)
    /* built for x86-64-v3 (test_reader_v3): runs where the CPU has its instructions */
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("bmi2") || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        print_message("this CPU has not the instructions of x86-64-v3: skipped\n");
        return 77;
    }
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hash_is_xxh3),
        cmocka_unit_test(golden_files),
        cmocka_unit_test(blocked_built),
        cmocka_unit_test(fuse_built),
        cmocka_unit_test(cuckoo_built),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
