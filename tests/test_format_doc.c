/*
 * The worked example of docs/FORMAT.md (section 8) is the saved bytes of a real filter: this test
 * builds that filter, renders its bytes the way the document shows them, and fails when the block
 * between the document's "example:begin" and "example:end" markers differs. To refresh the block
 * after a deliberate change, run the test with BK_WRITE_DOC=1 (it rewrites the block in place).
 */
#include "testutil.h"
#include <bloomkit/bloomkit.h>

#define DOC BK_TEST_SOURCE_DIR "/../docs/FORMAT.md"
#define BEGIN "<!-- example:begin (written by tests/test_format_doc.c) -->\n"
#define END "<!-- example:end -->\n"

/* What each 16-byte row of the example holds (header, then the classic body of section 6.1). */
static const char *row_note(size_t row, size_t rows)
{
    static const char *notes[] = {
        "magic; version_major 1, minor 0; type 1 (classic)",
        "flags 0; hash_id 1 (XXH3-64); header_size 64; reserved",
        "seed 42; body_size",
        "body_checksum; header_checksum",
        "layout 0 (standard); k; m",
        "capacity 100; count 3",
        "fpr_target 0.01 (f64); padding",
        "padding",
    };
    if (row < sizeof notes / sizeof notes[0]) return notes[row];
    return row == 8 ? "bit array: u64 words, bit i = bit i mod 64 of word i / 64" : row + 1 == rows ? "(end)" : "";
}

static char *render(const uint8_t *b, size_t len)
{
    size_t cap = len / 16 * 160 + 256, used = 0;
    char *out = malloc(cap);
    used += (size_t)snprintf(out + used, cap - used, "```\n");
    for (size_t row = 0; row * 16 < len; row++) {
        used += (size_t)snprintf(out + used, cap - used, "%04zx:", row * 16);
        for (size_t i = 0; i < 16 && row * 16 + i < len; i++)
            used += (size_t)snprintf(out + used, cap - used, "%s%02x", i == 8 ? "  " : " ", b[row * 16 + i]);
        const char *note = row_note(row, len / 16);
        used += (size_t)snprintf(out + used, cap - used, "%s%s\n", *note ? "   " : "", note);
    }
    used += (size_t)snprintf(out + used, cap - used, "```\n");
    return out;
}

static void format_doc_example_is_current(void **state)
{
    (void)state;
    bk_bloom_options o = { .layout = BK_LAYOUT_STANDARD, .seed = 42 };
    bk_bloom *bf;
    assert_int_equal(bk_bloom_new(100, 0.01, &o, &bf), BK_OK);
    assert_int_equal(bk_bloom_add(bf, "apple", 5), BK_OK);
    assert_int_equal(bk_bloom_add(bf, "banana", 6), BK_OK);
    assert_int_equal(bk_bloom_add(bf, "cherry", 6), BK_OK);
    bk_filter *f;
    assert_int_equal(bk_filter_wrap(BK_TYPE_BLOOM, bf, &f), BK_OK);
    void *buf;
    size_t len;
    assert_int_equal(bk_filter_save_alloc(f, &buf, &len), BK_OK);
    char *want = render(buf, len);

    size_t dlen;
    char *doc = tu_read_file(DOC, &dlen);
    char *b = strstr(doc, BEGIN), *e = b ? strstr(b, END) : NULL;
    if (!b || !e) fail_msg("%s: the example markers are missing", DOC);
    b += strlen(BEGIN);
    bool same = (size_t)(e - b) == strlen(want) && memcmp(b, want, strlen(want)) == 0;
    if (!same && getenv("BK_WRITE_DOC")) {
        FILE *fp = fopen(DOC, "wb");
        assert_non_null(fp);
        fwrite(doc, 1, (size_t)(b - doc), fp);
        fputs(want, fp);
        fputs(e, fp);
        assert_int_equal(fclose(fp), 0);
        same = true;
    }
    if (!same) fail_msg("docs/FORMAT.md's example differs from the saved bytes; they are now:\n%s", want);
    free(doc);
    free(want);
    bk_filter_buffer_free(buf);
    bk_filter_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(format_doc_example_is_current),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
