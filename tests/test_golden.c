/*
 * The golden files of format 1.0 (tests/golden/<factory>-v1.0.bkf, one per type and layout of
 * tests/factories.h): every one keeps loading and answering exactly as when it was written, for as
 * long as the format is 1.x.
 *
 * Each file holds a filter sized for 1,000 keys at 1% with keys (set 1, 0..499), seed 42. For each
 * file the test checks: the header (version 1.0, its type, seed 42, no flag set); a clean load; all
 * 500 keys present; the answers for ANSWER_KEYS fixed absent keys (set 3) against the count of
 * positives and the XXH3-64 of the answer bytes recorded in tests/golden/answers.txt when the file
 * was written; that saving the loaded filter gives the file's bytes back; and that a filter built
 * today from the same keys saves to the same bytes.
 *
 * A type that now writes a newer body (the quotient filter's body 4) has its golden file under a
 * name of its own (the factory's `golden`); the file of the earlier body keeps the factory's name and
 * is checked the same way, except that a filter built today saves to the newer body: it must answer
 * the absent keys exactly as the earlier file does.
 *
 * Adding a type: add its factory, then run this test once with BK_WRITE_GOLDEN=<repo>/tests. Missing
 * golden files and missing answer lines are written then; existing ones are never rewritten.
 */
#include "testutil.h"
#include "factories.h"
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#define GOLDEN_KEYS 500
#define ANSWER_KEYS 100000

/* Positives among the ANSWER_KEYS absent keys, and the XXH3-64 of the answer bytes (0 or 1 each). */
static void absent_answers(const bk_filter *f, uint64_t *positives, uint64_t *digest)
{
    uint8_t *r = malloc(ANSWER_KEYS);
    uint64_t pos = 0;
    for (uint64_t i = 0; i < ANSWER_KEYS; i++) {
        tf_key k = tf_make_key(3, i);
        r[i] = bk_filter_contains(f, k.b, sizeof k.b) ? 1 : 0;
        pos += r[i];
    }
    *positives = pos;
    *digest = XXH3_64bits(r, ANSWER_KEYS);
    free(r);
}

/* The recorded answers of golden file `name`, false when answers.txt has no line for it. */
static bool recorded_answers(const char *dir, const char *name, uint64_t *positives, uint64_t *digest)
{
    char p[512], line[256], n[128];
    snprintf(p, sizeof p, "%s/golden/answers.txt", dir);
    FILE *fp = fopen(p, "r");
    if (!fp) return false;
    bool found = false;
    unsigned long long a, b;
    while (!found && fgets(line, sizeof line, fp))
        if (line[0] != '#' && sscanf(line, "%127s %llu %llx", n, &a, &b) == 3 && strcmp(n, name) == 0) {
            *positives = a;
            *digest = b;
            found = true;
        }
    fclose(fp);
    return found;
}

static void record_answers(const char *dir, const char *name, uint64_t positives, uint64_t digest)
{
    char p[512];
    snprintf(p, sizeof p, "%s/golden/answers.txt", dir);
    bool fresh = access(p, R_OK) != 0;
    FILE *fp = fopen(p, "a");
    assert_non_null(fp);
    if (fresh)
        fprintf(fp, "# golden file, positives among %d absent keys (set 3), XXH3-64 of the answer bytes\n",
                ANSWER_KEYS);
    fprintf(fp, "%s %llu %016llx\n", name, (unsigned long long)positives, (unsigned long long)digest);
    assert_int_equal(fclose(fp), 0);
}

/* earlier: the file of the factory's earlier body (the factory's name) rather than its own */
static void check_one(const tf_factory *ft, const char *dir, bool write, bool earlier)
{
    char p[512];
    const char *name = ft->golden && !earlier ? ft->golden : ft->name;
    if (earlier) write = false; /* an earlier body's file is never written again */
    snprintf(p, sizeof p, "%s/golden/%s-v1.0.bkf", dir, name);
    if (write && access(p, R_OK) != 0) {
        bk_filter *f = ft->make(1000, GOLDEN_KEYS, 42);
        assert_non_null(f);
        assert_int_equal(bk_filter_save_path(f, p), BK_OK);
        bk_filter_free(f);
    }
    if (access(p, R_OK) != 0)
        fail_msg("missing golden file %s: run test_golden with BK_WRITE_GOLDEN=<tests dir> once", p);
    size_t len;
    uint8_t *gold = tu_read_file(p, &len);
    bk_file_info in;
    assert_int_equal(bk_filter_peek_header(gold, len, &in), BK_OK);
    assert_int_equal(in.version_major, 1);
    assert_int_equal(in.version_minor, 0);
    assert_int_equal(in.type, ft->type);
    assert_int_equal(in.flags, 0);
    assert_int_equal(in.seed, 42);
    assert_int_equal(in.total_size, len);
    bk_filter *g;
    assert_int_equal(bk_filter_load_buffer(gold, len, BK_LOAD_REQUIRE_CLEAN, &g), BK_OK);
    assert_int_equal(bk_filter_type(g), ft->type);
    /* (a Top-K answers "in the top k", not membership: its answers are held by the digest below) */
    for (uint64_t i = 0; i < GOLDEN_KEYS && tf_membership(ft); i++) {
        tf_key k = tf_make_key(1, i);
        if (!bk_filter_contains(g, k.b, sizeof k.b)) fail_msg("%s: key %llu missing", p, (unsigned long long)i);
    }
    uint64_t pos, dig, want_pos, want_dig;
    absent_answers(g, &pos, &dig);
    if (!recorded_answers(dir, name, &want_pos, &want_dig)) {
        if (!write) fail_msg("%s: no line in golden/answers.txt: run test_golden with BK_WRITE_GOLDEN", name);
        record_answers(dir, name, pos, dig);
        want_pos = pos;
        want_dig = dig;
    }
    print_message("%-22s %7zu bytes, %5llu / %d absent keys positive\n", name, len, (unsigned long long)pos,
                  ANSWER_KEYS);
    if (pos != want_pos || dig != want_dig)
        fail_msg("%s answers differently: %llu positives (recorded %llu), digest %016llx (recorded %016llx)", p,
                 (unsigned long long)pos, (unsigned long long)want_pos, (unsigned long long)dig,
                 (unsigned long long)want_dig);
    void *b;
    size_t n;
    assert_int_equal(bk_filter_save_alloc(g, &b, &n), BK_OK);
    if (n != len || memcmp(b, gold, len)) fail_msg("%s: the loaded filter saves to other bytes", p);
    bk_filter_buffer_free(b);
    bk_filter_free(g);
    /* the writers are deterministic: the same inputs today give the file's bytes */
    bk_filter *fresh = ft->make(1000, GOLDEN_KEYS, 42);
    assert_non_null(fresh);
    if (earlier) { /* written in the newer body today: the same answers */
        absent_answers(fresh, &pos, &dig);
        if (pos != want_pos || dig != want_dig)
            fail_msg("%s: a filter built from the same keys answers differently (%llu positives)", p,
                     (unsigned long long)pos);
    } else {
        assert_int_equal(bk_filter_save_alloc(fresh, &b, &n), BK_OK);
        if (n != len || memcmp(b, gold, len))
            fail_msg("%s: a filter built from the same keys saves to other bytes", p);
        bk_filter_buffer_free(b);
    }
    bk_filter_free(fresh);
    free(gold);
}

static void golden_files_answer_as_recorded(void **state)
{
    (void)state;
    const char *write_dir = getenv("BK_WRITE_GOLDEN");
    const char *dir = write_dir ? write_dir : BK_TEST_SOURCE_DIR;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        check_one(&tf_factories[t], dir, write_dir != NULL, false);
        if (tf_factories[t].golden) check_one(&tf_factories[t], dir, false, true);
    }
}

/* A file that sets flag bit 1 (a must-understand bit 1.0 does not define) is refused as a newer
 * version, not read with a guess. */
static void unknown_must_understand_flag_refused(void **state)
{
    (void)state;
    size_t len;
    uint8_t *gold = tu_read_file(BK_TEST_SOURCE_DIR "/golden/bloom-standard-v1.0.bkf", &len);
    gold[16] |= 0x02;
    /* header checksum over the header with its own field as zero */
    uint8_t h[64];
    memcpy(h, gold, 64);
    memset(h + 56, 0, 8);
    uint64_t sum = XXH3_64bits(h, 64);
    memcpy(gold + 56, &sum, 8);
    bk_filter *g = NULL;
    assert_int_equal(bk_filter_load_buffer(gold, len, 0, &g), BK_EVERSION);
    assert_null(g);
    free(gold);
}

/* The zero padding after a body's parameters is checked by every type alike: a non-zero byte there
 * (with both checksums made right again) is refused as corrupt. */
static void nonzero_padding_refused(void **state)
{
    (void)state;
    const struct { const char *name; size_t pad_off; } cases[] = {
        { "bloom-standard", 40 }, { "blocked-512", 63 }, { "counting-4bit", 50 }, { "scalable", 44 },
        { "cuckoo", 56 },         { "fuse8", 40 },         { "ribbon", 40 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char p[512];
        snprintf(p, sizeof p, "%s/golden/%s-v1.0.bkf", BK_TEST_SOURCE_DIR, cases[c].name);
        size_t len;
        uint8_t *b = tu_read_file(p, &len);
        b[64 + cases[c].pad_off] = 0x01;
        uint64_t sum = XXH3_64bits(b + 64, len - 64);
        memcpy(b + 48, &sum, 8);
        uint8_t h[64];
        memcpy(h, b, 64);
        memset(h + 56, 0, 8);
        sum = XXH3_64bits(h, 64);
        memcpy(b + 56, &sum, 8);
        bk_filter *g = NULL;
        bk_status s = bk_filter_load_buffer(b, len, 0, &g);
        if (s != BK_ECORRUPT) fail_msg("%s: a padding byte set: %s", cases[c].name, bk_strerror(s));
        assert_null(g);
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden_files_answer_as_recorded),
        cmocka_unit_test(unknown_must_understand_flag_refused),
        cmocka_unit_test(nonzero_padding_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
