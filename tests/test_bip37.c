/* BIP 37 filters: Bitcoin Core's published vectors (bloom_tests, hash_tests), byte for byte; the
 * filters of an independent implementation (tests/foreign/bip37_bloom_filter.json, made by the npm
 * package bloom-filter 0.2.0 with tests/foreign/make_bip37.js) rebuilt and read identically; the
 * parser's refusals. */
#include "testutil.h"
#include <bloomkit/bloomkit.h>

static size_t unhex(const char *h, size_t n, uint8_t *out)
{
    for (size_t i = 0; i + 1 < n + 1 && i < n / 2; i++) {
        unsigned v;
        assert_int_equal(sscanf(h + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return n / 2;
}

static void assert_serialized(const bk_bip37 *f, const char *hex)
{
    uint8_t buf[40100], want[40100];
    size_t w = 0, n = unhex(hex, strlen(hex), want);
    assert_int_equal(bk_bip37_serialize(f, buf, sizeof buf, &w), BK_OK);
    assert_int_equal(w, bk_bip37_serialized_size(f));
    assert_int_equal(w, n);
    assert_memory_equal(buf, want, n);
}

static bool has_hex(const bk_bip37 *f, const char *hex)
{
    uint8_t k[128];
    size_t n = unhex(hex, strlen(hex), k);
    return bk_bip37_contains(f, k, n);
}

static void add_hex(bk_bip37 *f, const char *hex)
{
    uint8_t k[128];
    size_t n = unhex(hex, strlen(hex), k);
    assert_int_equal(bk_bip37_add(f, k, n), BK_OK);
}

/* Bitcoin Core's hash_tests: MurmurHash3 with the seeds BIP 37 uses. */
static void test_murmur3_vectors(void **state)
{
    (void)state;
    static const struct { uint32_t want, seed; const char *hex; } v[] = {
        { 0x00000000, 0x00000000, "" },
        { 0x6a396f08, 0xFBA4C795, "" },
        { 0x81f16f39, 0xffffffff, "" },
        { 0x514e28b7, 0x00000000, "00" },
        { 0xea3f0b17, 0xFBA4C795, "00" },
        { 0xfd6cf10d, 0x00000000, "ff" },
        { 0x16c6b7ab, 0x00000000, "0011" },
        { 0x8eb51c3d, 0x00000000, "001122" },
        { 0xb4471bf8, 0x00000000, "00112233" },
        { 0xe2301fa8, 0x00000000, "0011223344" },
        { 0xfc2e4a15, 0x00000000, "001122334455" },
        { 0xb074502c, 0x00000000, "00112233445566" },
        { 0x8034d2a0, 0x00000000, "0011223344556677" },
        { 0xb4698def, 0x00000000, "001122334455667788" },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint8_t k[16];
        size_t n = unhex(v[i].hex, strlen(v[i].hex), k);
        assert_int_equal(bk_murmur3_32(k, n, v[i].seed), v[i].want);
    }
}

/* bloom_tests: bloom_create_insert_serialize and _with_tweak. */
static void core_vector(uint32_t tweak, const char *want)
{
    bk_bip37 *f = NULL;
    assert_int_equal(bk_bip37_new(3, 0.01, tweak, BK_BIP37_UPDATE_ALL, NULL, &f), BK_OK);
    assert_int_equal(bk_bip37_bytes(f), 3);
    assert_int_equal(bk_bip37_hash_funcs(f), 5);
    add_hex(f, "99108ad8ed9bb6274d3980bab5a85c048f0950c8");
    assert_true(has_hex(f, "99108ad8ed9bb6274d3980bab5a85c048f0950c8"));
    assert_false(has_hex(f, "19108ad8ed9bb6274d3980bab5a85c048f0950c8")); /* one bit different */
    add_hex(f, "b5a2c786d9ef4658287ced5914b37a1b4aa32eee");
    assert_true(has_hex(f, "b5a2c786d9ef4658287ced5914b37a1b4aa32eee"));
    add_hex(f, "b9300670b4c5366e95b2699e8b18bc75e5f729c5");
    assert_true(has_hex(f, "b9300670b4c5366e95b2699e8b18bc75e5f729c5"));
    assert_serialized(f, want);

    /* parsed back: the same bytes and answers */
    uint8_t buf[64];
    size_t n = unhex(want, strlen(want), buf);
    bk_bip37 *g = NULL;
    assert_int_equal(bk_bip37_parse(buf, n, NULL, &g), BK_OK);
    assert_int_equal(bk_bip37_tweak(g), tweak);
    assert_int_equal(bk_bip37_flags(g), 1);
    assert_true(has_hex(g, "b9300670b4c5366e95b2699e8b18bc75e5f729c5"));
    assert_serialized(g, want);

    bk_bip37_clear(f);
    assert_false(has_hex(f, "99108ad8ed9bb6274d3980bab5a85c048f0950c8"));
    assert_int_equal(bk_bip37_popcount(f), 0);
    bk_bip37_free(f);
    bk_bip37_free(g);
}

static void test_core_vectors(void **state)
{
    (void)state;
    core_vector(0, "03614e9b050000000000000001");
    core_vector(2147483649u, "03ce4299050000000100008001");
}

/* Bitcoin Core's sizing: whole bytes rounded down, the integer division, both caps. */
static void test_sizing(void **state)
{
    (void)state;
    static const struct { uint32_t n; double p; size_t bytes; uint32_t k; } v[] = {
        { 3, 0.01, 3, 5 },             /* the bloom_tests filter */
        { 2, 0.001, 3, 8 },            /* bloom_create_insert_key: "038fc16b08..." */
        { 10, 0.000001, 35, 19 },      /* 287 bits -> 35 bytes; 280 / 10 = 28 -> 19.4 */
        { 1000, 0.0001, 2396, 13 },    /* 19170 bits -> 2396 bytes; 19168 / 1000 = 19 -> 13.2 */
        { 100000, 0.0001, 36000, 1 },  /* capped at 36,000 bytes; 288000 / 100000 = 2 -> 1.39 */
        { 1000, 1e-300, 36000, 50 },   /* both caps */
        { 1000, 0.9, 27, 0 },          /* 0 hash functions: matches everything */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        bk_bip37 *f = NULL;
        assert_int_equal(bk_bip37_new(v[i].n, v[i].p, 0, 0, NULL, &f), BK_OK);
        if (bk_bip37_bytes(f) != v[i].bytes || bk_bip37_hash_funcs(f) != v[i].k)
            fail_msg("n=%u p=%g: %zu bytes, %u hash functions; want %zu, %u", v[i].n, v[i].p, bk_bip37_bytes(f),
                     bk_bip37_hash_funcs(f), v[i].bytes, v[i].k);
        bk_bip37_free(f);
    }
    bk_bip37 *f = (bk_bip37 *)1;
    assert_int_equal(bk_bip37_new(0, 0.01, 0, 0, NULL, &f), BK_EINVAL);
    assert_null(f);
    assert_int_equal(bk_bip37_new(10, 0.0, 0, 0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_bip37_new(10, 1.0, 0, 0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_bip37_new(10, NAN, 0, 0, NULL, &f), BK_EINVAL);
    assert_int_equal(bk_bip37_new_sized(36001, 5, 0, 0, NULL, &f), BK_ETOOBIG);
    assert_int_equal(bk_bip37_new_sized(100, 51, 0, 0, NULL, &f), BK_ETOOBIG);
    assert_int_equal(bk_bip37_new_sized(36000, 50, 0, 0, NULL, &f), BK_OK);
    bk_bip37_free(f);
    /* the empty filter matches everything and stays empty */
    assert_int_equal(bk_bip37_new_sized(0, 5, 0, 0, NULL, &f), BK_OK);
    assert_int_equal(bk_bip37_add(f, "x", 1), BK_OK);
    assert_true(bk_bip37_contains(f, "y", 1));
    assert_serialized(f, "00050000000000000000");
    bk_bip37_free(f);
}

/* ---- the independent implementation's filters ---- */

static unsigned long long json_number(const char *obj, const char *name)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", name);
    const char *p = strstr(obj, pat);
    assert_non_null(p);
    return strtoull(p + strlen(pat), NULL, 10);
}

/* The next "..." string at or after *p (before `end`); NULL when none. */
static const char *json_string(const char **p, const char *end, size_t *len)
{
    const char *q = strchr(*p, '"');
    if (!q || q >= end) return NULL;
    const char *e = strchr(q + 1, '"');
    *len = (size_t)(e - q - 1);
    *p = e + 1;
    return q + 1;
}

static void test_independent_implementation(void **state)
{
    (void)state;
    size_t len;
    char *json = tu_read_file(BK_TEST_SOURCE_DIR "/foreign/bip37_bloom_filter.json", &len);
    static uint8_t wire[40100];
    size_t ncases = 0, nqueries = 0, npositive = 0;
    for (const char *c = strstr(json, "{\"bytes\":"); c; c = strstr(c + 1, "{\"bytes\":"), ncases++) {
        bk_bip37 *f = NULL;
        assert_int_equal(bk_bip37_new_sized(json_number(c, "bytes"), (uint32_t)json_number(c, "hash_funcs"),
                                            (uint32_t)json_number(c, "tweak"), (uint8_t)json_number(c, "flags"),
                                            NULL, &f),
                         BK_OK);
        const char *p = strstr(c, "\"added\":[") + 9, *end = strchr(p, ']'), *s;
        size_t n = 0;
        while ((s = json_string(&p, end, &n))) {
            uint8_t k[64];
            assert_int_equal(bk_bip37_add(f, k, unhex(s, n, k)), BK_OK);
        }
        p = strstr(c, "\"serialized\":") + 13;
        s = json_string(&p, json + len, &n);
        char *hex = strndup(s, n);
        assert_serialized(f, hex); /* built here == built there */

        bk_bip37 *g = NULL;
        size_t wn = unhex(hex, n, wire);
        assert_int_equal(bk_bip37_parse(wire, wn, NULL, &g), BK_OK);
        p = strstr(c, "\"added\":[") + 9;
        while ((s = json_string(&p, end, &n))) {
            uint8_t k[64];
            assert_true(bk_bip37_contains(g, k, unhex(s, n, k)));
        }
        /* "queried": [["hex", answer], ...]: the other implementation's answer for keys not added */
        p = strstr(c, "\"queried\":[") + 11;
        end = strstr(p, "]]");
        while ((s = json_string(&p, end + 1, &n))) {
            uint8_t k[64];
            bool want = strncmp(p, ",true", 5) == 0;
            assert_true(want || strncmp(p, ",false", 6) == 0);
            assert_int_equal(bk_bip37_contains(g, k, unhex(s, n, k)), want);
            assert_int_equal(bk_bip37_contains(f, k, unhex(s, n, k)), want);
            nqueries++;
            npositive += want;
        }
        free(hex);
        bk_bip37_free(f);
        bk_bip37_free(g);
    }
    assert_int_equal(ncases, 8);
    assert_int_equal(nqueries, 8 * 200);
    assert_true(npositive > 0 && npositive < nqueries); /* both answers occur */
    free(json);
}

static void refused(const char *hex, bk_status want, const char *words)
{
    static uint8_t b[40100];
    size_t n = unhex(hex, strlen(hex), b);
    bk_bip37 *f = (bk_bip37 *)1;
    assert_int_equal(bk_bip37_parse(b, n, NULL, &f), want);
    assert_null(f);
    char msg[200];
    assert_int_equal(bk_bip37_parse_problem(b, n, msg, sizeof msg), want);
    if (!strstr(msg, words)) fail_msg("%s: message \"%s\" lacks \"%s\"", hex, msg, words);
}

static void test_parse_refusals(void **state)
{
    (void)state;
    refused("", BK_ETRUNCATED, "empty");
    refused("03614e9b0500000000000000", BK_ETRUNCATED, "need 13 bytes");        /* one byte short */
    refused("03614e9b05000000000000000100", BK_ECORRUPT, "1 bytes follow");   /* one byte more */
    refused("04614e9b050000000000000001", BK_ETRUNCATED, "need 14 bytes");      /* length says 4 */
    refused("fd0300614e9b050000000000000001", BK_ECORRUPT, "shortest form");  /* 0xfd for 3 */
    refused("fd", BK_ETRUNCATED, "length field");
    refused("fe00000100", BK_ETOOBIG, "at most 36,000");                      /* 65536 bytes */
    refused("ff0000000000000001", BK_ETOOBIG, "at most 36,000");
    refused("03614e9b330000000000000001", BK_ETOOBIG, "at most 50");          /* 51 hash functions */
    refused("fda18c", BK_ETOOBIG, "36001 bytes");                             /* 36,001: limit first */
    /* the largest legal filter, assembled here */
    static char big[2 * 36012 + 1];
    strcpy(big, "fda08c");
    for (size_t i = 0; i < 36000; i++) memcpy(big + 6 + 2 * i, "ff", 2);
    strcpy(big + 6 + 72000, "320000000000000000");
    uint8_t *b = malloc(36012);
    size_t n = unhex(big, strlen(big), b);
    bk_bip37 *f = NULL;
    assert_int_equal(bk_bip37_parse(b, n, NULL, &f), BK_OK);
    assert_int_equal(bk_bip37_bytes(f), 36000);
    assert_int_equal(bk_bip37_hash_funcs(f), 50);
    assert_int_equal(bk_bip37_popcount(f), 288000);
    char msg[8] = "x";
    assert_int_equal(bk_bip37_parse_problem(b, n, msg, sizeof msg), BK_OK);
    assert_string_equal(msg, "");
    uint8_t small[8];
    size_t w = 0;
    assert_int_equal(bk_bip37_serialize(f, small, sizeof small, &w), BK_EBUFSIZE);
    assert_int_equal(w, 36012);
    bk_bip37_free(f);
    free(b);
}

/* Every prefix and every one-byte change of a valid payload: parse and parse_problem agree, and a
 * parsed filter serializes back to the input exactly. */
static void test_damaged_inputs(void **state)
{
    (void)state;
    uint8_t good[13], b[13];
    unhex("03ce4299050000000100008001", 26, good);
    for (size_t cut = 0; cut <= sizeof good; cut++) {
        for (size_t at = 0; at < cut; at++) {
            for (unsigned x = 0; x < 256; x += 17) {
                memcpy(b, good, sizeof good);
                b[at] ^= (uint8_t)x;
                bk_bip37 *f = NULL;
                bk_status s = bk_bip37_parse(b, cut, NULL, &f);
                char msg[160];
                assert_int_equal(bk_bip37_parse_problem(b, cut, msg, sizeof msg), s);
                assert_int_equal(s == BK_OK, msg[0] == '\0');
                if (s == BK_OK) {
                    uint8_t out[16];
                    size_t w;
                    assert_int_equal(bk_bip37_serialize(f, out, sizeof out, &w), BK_OK);
                    assert_int_equal(w, cut);
                    assert_memory_equal(out, b, cut);
                }
                bk_bip37_free(f);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_murmur3_vectors),
        cmocka_unit_test(test_core_vectors),
        cmocka_unit_test(test_sizing),
        cmocka_unit_test(test_independent_implementation),
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_damaged_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
