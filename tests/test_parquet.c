/* Parquet split-block Bloom filters read from a file DuckDB wrote (tests/foreign/parquet-duckdb/, made
 * by tests/foreign/make_parquet.mjs): every value written is found in every row group, and the
 * answers for values never written equal DuckDB's own filter check (duckdb_answers.json); a damaged
 * file is refused, never read out of bounds. */
#include "testutil.h"
#include <bloomkit/bloomkit.h>

#define DIR BK_TEST_SOURCE_DIR "/foreign/parquet-duckdb/"

static bk_parquet_column *open_col(const uint8_t *b, size_t len, const char *col)
{
    bk_parquet_column *c = NULL;
    char why[200];
    bk_status s = bk_parquet_open(b, len, col, NULL, &c, why, sizeof why);
    if (s != BK_OK) fail_msg("%s: %s (%s)", col, bk_strerror(s), why);
    return c;
}

/* The plain encoding of value j of a column (written: j < its distinct count; absent: the JSON's rule). */
static size_t plain(const char *col, bool absent, uint64_t j, uint8_t *out)
{
    if (strcmp(col, "url") == 0)
        return (size_t)sprintf((char *)out, absent ? "https://example.com/absent/%llu" : "https://example.com/page/%llu",
                               (unsigned long long)j);
    if (strcmp(col, "id") == 0) {
        int64_t v = absent ? 1000000 + (int64_t)j : (int64_t)j;
        memcpy(out, &v, 8);
        return 8;
    }
    if (strcmp(col, "n32") == 0) {
        int32_t v = absent ? -1000 - (int32_t)j : (int32_t)j;
        memcpy(out, &v, 4);
        return 4;
    }
    if (strcmp(col, "d") == 0) {
        double v = absent ? 1000000 + (double)j * 0.5 : (double)j * 0.5;
        memcpy(out, &v, 8);
        return 8;
    }
    if (strcmp(col, "f") == 0) {
        float v = absent ? 100000.0f + (float)j * 0.25f : (float)j * 0.25f;
        memcpy(out, &v, 4);
        return 4;
    }
    /* u: the UUID's 16 bytes, big-endian, as Parquet stores it */
    memset(out, 0, 16);
    out[6] = 0x40;
    out[8] = 0x80;
    uint64_t v = absent ? 500000 + j : j, dec = 0;
    for (uint64_t scale = 1; v; v /= 10, scale *= 16) dec += (v % 10) * scale; /* decimal digits as hex digits */
    for (int i = 0; i < 6; i++) out[15 - i] = (uint8_t)(dec >> (8 * i));
    return 16;
}

static void test_types(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = tu_read_file(DIR "data.parquet", &len);
    static const struct { const char *col; bk_parquet_type t; uint32_t tl; } v[] = {
        { "url", BK_PARQUET_BYTE_ARRAY, 0 }, { "id", BK_PARQUET_INT64, 0 }, { "n32", BK_PARQUET_INT32, 0 },
        { "d", BK_PARQUET_DOUBLE, 0 },       { "f", BK_PARQUET_FLOAT, 0 },  { "b", BK_PARQUET_BYTE_ARRAY, 0 },
        { "u", BK_PARQUET_FIXED_LEN_BYTE_ARRAY, 16 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        bk_parquet_column *c = open_col(b, len, v[i].col);
        assert_int_equal(bk_parquet_physical_type(c), v[i].t);
        assert_int_equal(bk_parquet_type_length(c), v[i].tl);
        assert_int_equal(bk_parquet_row_groups(c), 2);
        assert_int_equal(bk_parquet_filters(c), 2);
        assert_true(bk_parquet_filter_bytes(c, 0) >= 32 && bk_parquet_filter_bytes(c, 0) % 32 == 0);
        assert_int_equal(bk_parquet_filter_bytes(c, 2), 0);
        assert_int_equal(bk_parquet_contains(c, 2, "x", 1), -1);
        bk_parquet_free(c);
    }
    char why[200];
    bk_parquet_column *c = (bk_parquet_column *)1;
    assert_int_equal(bk_parquet_open(b, len, "uniq", NULL, &c, why, sizeof why), BK_ENOTFOUND);
    assert_null(c);
    assert_non_null(strstr(why, "no Bloom filter"));
    assert_int_equal(bk_parquet_open(b, len, "nope", NULL, &c, why, sizeof why), BK_ENOTFOUND);
    assert_non_null(strstr(why, "no column 'nope'"));
    assert_int_equal(bk_parquet_open(b, len, "ur", NULL, &c, why, sizeof why), BK_ENOTFOUND);
    free(b);
}

/* The columns of data.parquet with a filter, and how many values were written to each (in both row
 * groups: the two hold the same values). */
typedef struct written_col {
    const char *col;
    uint64_t n;
} written_col;
static const written_col written[] = {
    { "url", 1000 }, { "id", 700 }, { "n32", 900 }, { "d", 800 }, { "f", 600 }, { "u", 400 },
};

/* Runs check on each written column, opened from data.parquet (b, len: the file's bytes). */
static void each_written_column(void (*check)(const written_col *w, bk_parquet_column *c, const uint8_t *b, size_t len))
{
    size_t len;
    uint8_t *b = tu_read_file(DIR "data.parquet", &len);
    for (size_t i = 0; i < sizeof written / sizeof written[0]; i++) {
        bk_parquet_column *c = open_col(b, len, written[i].col);
        check(&written[i], c, b, len);
        bk_parquet_free(c);
    }
    free(b);
}

static void check_values_found(const written_col *w, bk_parquet_column *c, const uint8_t *b, size_t len)
{
    (void)b;
    (void)len;
    for (uint64_t j = 0; j < w->n; j++) {
        uint8_t k[64];
        size_t kl = plain(w->col, false, j, k);
        for (size_t rg = 0; rg < 2; rg++)
            if (bk_parquet_contains(c, rg, k, kl) != 1)
                fail_msg("%s: written value %llu not found in row group %zu", w->col, (unsigned long long)j, rg);
    }
}

/* Every written value is in both row groups' filters. */
static void test_written_values_found(void **state)
{
    (void)state;
    each_written_column(check_values_found);
}

/* "col":{"absent_values":N,"not_excluded":[[j,...],[j,...]]} */
static void test_absent_values_as_duckdb(void **state)
{
    (void)state;
    size_t len, jlen;
    uint8_t *b = tu_read_file(DIR "data.parquet", &len);
    char *json = tu_read_file(DIR "duckdb_answers.json", &jlen);
    static const char *const cols[] = { "url", "id", "n32", "d", "f" };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        char pat[64];
        snprintf(pat, sizeof pat, "\"%s\":{\"absent_values\":", cols[i]);
        const char *p = strstr(json, pat);
        assert_non_null(p);
        p += strlen(pat);
        uint64_t n = strtoull(p, NULL, 10);
        p = strstr(p, "\"not_excluded\":[") + 16;
        bk_parquet_column *c = open_col(b, len, cols[i]);
        uint64_t positives = 0;
        for (size_t rg = 0; rg < 2; rg++) {
            assert_int_equal(*p, '[');
            p++;
            const char *end = strchr(p, ']');
            uint64_t next = *p == ']' ? UINT64_MAX : strtoull(p, NULL, 10);
            for (uint64_t j = 0; j < n; j++) {
                uint8_t k[64];
                size_t kl = plain(cols[i], true, j, k);
                int want = j == next;
                if (want) {
                    p = strchr(p, ',');
                    next = p && p < end ? strtoull(++p, NULL, 10) : UINT64_MAX;
                    positives++;
                }
                int got = bk_parquet_contains(c, rg, k, kl);
                if (got != want)
                    fail_msg("%s: absent value %llu, row group %zu: bloomkit %d, DuckDB %d", cols[i],
                             (unsigned long long)j, rg, got, want);
            }
            p = end + 1;
            if (*p == ',') p++;
        }
        assert_true(positives > 0); /* both answers occur */
        bk_parquet_free(c);
    }
    free(json);
    free(b);
}

/* Truncations and damaged bytes in the footer and the filters' headers: a refusal or a readable
 * column, never a read outside the buffer (the sanitizer builds check that). */
static void test_damaged_files(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = tu_read_file(DIR "data.parquet", &len);
    uint8_t *d = malloc(len);
    assert_non_null(d);
    char why[200];
    bk_parquet_column *c;
    for (size_t cut = 0; cut < len; cut += cut < 64 ? 1 : 997) {
        memcpy(d, b, cut);
        assert_int_not_equal(bk_parquet_open(d, cut, "url", NULL, &c, why, sizeof why), BK_OK);
        assert_true(why[0] != '\0');
    }
    uint32_t flen = (uint32_t)b[len - 8] | (uint32_t)b[len - 7] << 8 | (uint32_t)b[len - 6] << 16 |
                    (uint32_t)b[len - 5] << 24;
    uint64_t seed = 1, ok = 0, refused = 0;
    for (int round = 0; round < 20000; round++) {
        memcpy(d, b, len);
        for (int e = 0; e < 1 + round % 3; e++) {
            size_t at = len - 8 - flen + (size_t)(tu_splitmix(&seed) % (flen + 8));
            if (round % 5 == 0) at = 288752 + (size_t)(tu_splitmix(&seed) % 64); /* url's first filter header */
            d[at] ^= (uint8_t)(1 + tu_splitmix(&seed) % 255);
        }
        c = NULL;
        bk_status s = bk_parquet_open(d, len, round % 2 ? "url" : "id", NULL, &c, why, sizeof why);
        if (s == BK_OK) {
            ok++;
            for (size_t rg = 0; rg < bk_parquet_row_groups(c); rg++) (void)bk_parquet_contains(c, rg, "x", 1);
            bk_parquet_free(c);
        } else {
            refused++;
            assert_null(c);
            assert_true(why[0] != '\0');
        }
    }
    assert_true(ok > 0 && refused > 0);
    memcpy(d, b, len);
    memcpy(d + len - 4, "PARE", 4);
    assert_int_equal(bk_parquet_open(d, len, "url", NULL, &c, why, sizeof why), BK_ENOTSUP);
    free(d);
    free(b);
}

/* The writer's side: a filter made from the same values, sized by Parquet's rule for their distinct
 * count at DuckDB's 0.01, is DuckDB's filter byte for byte, header included; both row groups. (Column b,
 * md5 bytes, is checked the same way by the CLI tests, where an MD5 is at hand.) */
static void check_export_equals(const written_col *w, bk_parquet_column *c, const uint8_t *b, size_t len)
{
    size_t bytes = bk_parquet_sbbf_bytes(w->n, 0.01);
    assert_int_equal(bytes, bk_parquet_filter_bytes(c, 0));
    uint8_t *blob = calloc(1, BK_PARQUET_HEADER_MAX + bytes);
    assert_non_null(blob);
    size_t h = bk_parquet_sbbf_header(bytes, blob, BK_PARQUET_HEADER_MAX);
    assert_true(h > 0);
    for (uint64_t j = 0; j < w->n; j++) {
        uint8_t k[64];
        size_t kl = plain(w->col, false, j, k);
        bk_parquet_sbbf_insert(blob + h, bytes, bk_parquet_hash(k, kl));
    }
    for (size_t rg = 0; rg < 2; rg++)
        if (memcmp(blob + h, bk_parquet_filter_bits(c, rg), bytes) != 0)
            fail_msg("%s: row group %zu: the exported bitset differs from DuckDB's", w->col, rg);
    /* the header too: header and bitset occur in the file as written, once per row group */
    size_t found = 0;
    for (size_t at = 0; at + h + bytes <= len; at++) found += memcmp(b + at, blob, h + bytes) == 0;
    assert_int_equal(found, 2);
    /* and read back as a blob */
    size_t off = 0, nb = 0;
    char why[200];
    assert_int_equal(bk_parquet_sbbf_parse(blob, h + bytes, &off, &nb, why, sizeof why), BK_OK);
    assert_int_equal(off, h);
    assert_int_equal(nb, bytes);
    free(blob);
}

static void test_export_equals_duckdb(void **state)
{
    (void)state;
    each_written_column(check_export_equals);
}

/* Sizing as Parquet's writers do, the header's bytes, refusals of damaged blobs, statistics. */
static void test_sbbf(void **state)
{
    (void)state;
    assert_int_equal(bk_parquet_sbbf_bytes(0, 0.01), 32);
    assert_int_equal(bk_parquet_sbbf_bytes(1000, 0.01), 2048); /* 9,683 bits, rounded up to 2^14 */
    assert_int_equal(bk_parquet_sbbf_bytes(700, 0.01), 1024);
    assert_int_equal(bk_parquet_sbbf_bytes(UINT64_C(1) << 40, 0.01), (size_t)128 << 20);
    assert_int_equal(bk_parquet_sbbf_bytes(10, 0.0), 0);
    assert_int_equal(bk_parquet_sbbf_bytes(10, 1.0), 0);
    uint8_t hdr[BK_PARQUET_HEADER_MAX];
    static const uint8_t want[] = { 0x15, 0x80, 0x20, 0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0 };
    assert_int_equal(bk_parquet_sbbf_header(2048, hdr, sizeof hdr), sizeof want);
    assert_memory_equal(hdr, want, sizeof want);
    assert_int_equal(bk_parquet_sbbf_header(INT32_MAX - 31, hdr, sizeof hdr), 19);
    assert_int_equal(bk_parquet_sbbf_header(2048, hdr, 15), 0);
    assert_int_equal(bk_parquet_sbbf_header(2047, hdr, sizeof hdr), 0);
    assert_int_equal(bk_parquet_sbbf_header(0, hdr, sizeof hdr), 0);

    /* a blob of 64 blocks holding 2,000 keys; every key found, the statistics near the truth */
    size_t bytes = 2048, h = bk_parquet_sbbf_header(bytes, hdr, sizeof hdr);
    uint8_t *blob = calloc(1, h + bytes + 1);
    assert_non_null(blob);
    memcpy(blob, hdr, h);
    uint64_t seed = 7;
    for (int i = 0; i < 2000; i++) bk_parquet_sbbf_insert(blob + h, bytes, tu_splitmix(&seed));
    seed = 7;
    for (int i = 0; i < 2000; i++) assert_int_equal(bk_parquet_sbbf_check(blob + h, bytes, tu_splitmix(&seed)), 1);
    uint64_t fp = 0;
    for (int i = 0; i < 100000; i++) fp += (uint64_t)bk_parquet_sbbf_check(blob + h, bytes, tu_splitmix(&seed));
    bk_parquet_stats st;
    assert_int_equal(bk_parquet_sbbf_stats(blob + h, bytes, &st), BK_OK);
    assert_int_equal(st.blocks, 64);
    assert_true(st.est_values > 1800 && st.est_values < 2200);
    assert_true(st.bits_per_value > 7.0 && st.bits_per_value < 9.5);
    /* the estimated rate against the measured one (100,000 random hashes): within 25% */
    double measured = (double)fp / 100000.0;
    assert_true(measured > 0.0 && st.fpr > measured * 0.75 && st.fpr < measured * 1.25);
    memset(&st, 0xff, sizeof st);
    assert_int_equal(bk_parquet_sbbf_stats(blob + h, 33, &st), BK_EINVAL);
    assert_int_equal(bk_parquet_sbbf_stats(blob + h, 32, &st), BK_OK);

    size_t off, nb;
    char why[200];
    assert_int_equal(bk_parquet_sbbf_parse(blob, h + bytes, &off, &nb, why, sizeof why), BK_OK);
    assert_int_equal(bk_parquet_sbbf_parse(blob, h + bytes - 1, &off, &nb, why, sizeof why), BK_ETRUNCATED);
    assert_non_null(strstr(why, "run past the end"));
    assert_int_equal(bk_parquet_sbbf_parse(blob, h + bytes + 1, &off, &nb, why, sizeof why), BK_ECORRUPT);
    assert_non_null(strstr(why, "1 bytes follow"));
    for (size_t cut = 0; cut < h; cut++) {
        why[0] = '\0';
        assert_int_not_equal(bk_parquet_sbbf_parse(blob, cut, &off, &nb, why, sizeof why), BK_OK);
        assert_true(why[0] != '\0');
    }
    blob[8] = 0x2c; /* the hash union's member 2: not XXHASH */
    assert_int_equal(bk_parquet_sbbf_parse(blob, h + bytes, &off, &nb, why, sizeof why), BK_ENOTSUP);
    assert_non_null(strstr(why, "not split-block, XXH64 and uncompressed"));
    blob[8] = 0x1c;
    blob[1] = 0x82; /* numBytes 2049 */
    assert_int_equal(bk_parquet_sbbf_parse(blob, h + bytes, &off, &nb, why, sizeof why), BK_ECORRUPT);
    assert_non_null(strstr(why, "not a positive multiple of 32"));
    free(blob);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_written_values_found),
        cmocka_unit_test(test_absent_values_as_duckdb),
        cmocka_unit_test(test_damaged_files),
        cmocka_unit_test(test_export_equals_duckdb),
        cmocka_unit_test(test_sbbf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
