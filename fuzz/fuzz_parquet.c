/*
 * libFuzzer target for the Parquet footer and Bloom filter header reader (bk_parquet_open). An input
 * is tried for the column "url" (the seed file's); whatever opens must answer queries for each of
 * its row groups, and a refusal must say why. A violated property traps.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
        filters += r != -1;
    }
    CHECK(filters == bk_parquet_filters(c) && filters > 0);
    bk_parquet_free(c);
    return 0;
}
