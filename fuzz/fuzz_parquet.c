/*
 * libFuzzer target for the Parquet footer and Bloom filter header reader (bk_parquet_open) and the
 * filter blob reader (bk_parquet_sbbf_parse). An input is tried for the column "url" (the seed file's)
 * and as a blob; whatever opens must answer queries for each of its row groups and give statistics
 * within their bounds, and a refusal must say why. A violated property traps.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <bloomkit/bloomkit.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                    \
    do {                                                                                            \
        if (!(c)) __builtin_trap();                                                                 \
    } while (0)

static void check_stats(const uint8_t *bits, size_t bytes)
{
    bk_parquet_stats st;
    CHECK(bk_parquet_sbbf_stats(bits, bytes, &st) == BK_OK);
    CHECK(st.bytes == bytes && st.blocks * 32 == bytes && st.bits_set <= (uint64_t)bytes * 8);
    CHECK(st.fill >= 0.0 && st.fill <= 1.0 && st.fpr >= 0.0 && st.fpr <= 1.0 && st.est_values >= 0.0);
}

/* The input as a filter blob: a header and exactly its bitset. */
static void try_blob(const uint8_t *data, size_t size)
{
    size_t off = 0, bytes = 0;
    char why[256];
    bk_status s = bk_parquet_sbbf_parse(data, size, &off, &bytes, why, sizeof why);
    if (s != BK_OK) {
        CHECK(why[0] != '\0');
        return;
    }
    CHECK(bytes > 0 && bytes % 32 == 0 && off + bytes == size);
    int r = bk_parquet_sbbf_check(data + off, bytes, bk_parquet_hash("https://example.com/page/1", 26));
    CHECK(r == 0 || r == 1);
    check_stats(data + off, bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try_blob(data, size);
    bk_parquet_column *c = NULL;
    char why[256];
    bk_status s = bk_parquet_open(data, size, "url", NULL, &c, why, sizeof why);
    CHECK((s == BK_OK) == (c != NULL));
    if (s != BK_OK) {
        CHECK(why[0] != '\0');
        return 0;
    }
    size_t filters = 0;
    for (size_t rg = 0; rg < bk_parquet_row_groups(c); rg++) {
        int r = bk_parquet_contains(c, rg, "https://example.com/page/1", 26);
        CHECK(r >= -1 && r <= 1);
        CHECK((r == -1) == (bk_parquet_filter_bytes(c, rg) == 0));
        CHECK((r == -1) == (bk_parquet_filter_bits(c, rg) == NULL));
        if (r != -1) check_stats(bk_parquet_filter_bits(c, rg), bk_parquet_filter_bytes(c, rg));
        filters += r != -1;
    }
    CHECK(filters == bk_parquet_filters(c) && filters > 0);
    bk_parquet_free(c);
    return 0;
}
