/*
 * libFuzzer target for the file loader, buffer form (every load path ends in the same validation).
 * Each input is tried as it is, without its payload checksum, zero-copy, and with both checksums
 * recomputed (so that mutations reach the type's body decoder instead of stopping at a checksum).
 * Whatever loads must behave: queries, stats, an insert that is then found, and a save that reloads
 * to the very same bytes. A violated property traps, which the fuzzer reports as a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <bloomkit/bloomkit.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                    \
    do {                                                                                            \
        if (!(c)) __builtin_trap();                                                                 \
    } while (0)

static void queries(const bk_filter *f)
{
    uint64_t h[64];
    uint8_t r[64];
    for (int i = 0; i < 64; i++) h[i] = (uint64_t)i * UINT64_C(0x9e3779b97f4a7c15);
    size_t n = 0;
    CHECK(bk_filter_contains_hashes(f, h, 64, r, &n) == BK_OK);
    size_t m = 0;
    for (int i = 0; i < 64; i++) {
        CHECK(r[i] == bk_filter_contains_hash(f, h[i]));
        m += r[i];
    }
    CHECK(n == m);
    (void)bk_filter_contains(f, "key", 3);
    bk_stats st;
    CHECK(bk_filter_stats(f, &st) == BK_OK);
    CHECK(st.type == bk_filter_type(f));
}

/* Saving what loaded must work, and reloading that must give the same bytes again. */
static void resave(const bk_filter *f)
{
    void *b, *b2;
    size_t n, n2;
    bk_status s = bk_filter_save_alloc(f, &b, &n);
    if (s == BK_ENOMEM) return;
    CHECK(s == BK_OK);
    bk_filter *g;
    CHECK(bk_filter_load_buffer(b, n, BK_LOAD_REQUIRE_CLEAN, &g) == BK_OK);
    CHECK(bk_filter_save_alloc(g, &b2, &n2) == BK_OK);
    CHECK(n2 == n && memcmp(b, b2, n) == 0);
    bk_filter_buffer_free(b2);
    bk_filter_free(g);
    bk_filter_buffer_free(b);
}

static void exercise(bk_filter *f, bool mutable_)
{
    queries(f);
    resave(f);
    if (mutable_) {
        bk_status s = bk_filter_add(f, "fuzz", 4);
        /* a key added is found: every membership filter, and the count-min sketch (its estimate > 0);
         * Top-K's contains is "among the k heaviest now", which one add need not make a key */
        if (s == BK_OK && bk_filter_type(f) != BK_TYPE_TOPK) CHECK(bk_filter_contains(f, "fuzz", 4));
    }
}

static void put64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bk_file_info info;
    bk_status ps = bk_filter_peek_header(data, size, &info);
    bk_filter *f;
    bk_status s = bk_filter_load_buffer(data, size, 0, &f);
    CHECK((s == BK_OK) == (f != NULL));
    if (s == BK_OK) {
        CHECK(ps == BK_OK);
        exercise(f, true);
        bk_filter_free(f);
    }
    if (bk_filter_load_buffer(data, size, BK_LOAD_NO_CHECKSUM, &f) == BK_OK) {
        exercise(f, true);
        bk_filter_free(f);
    }
    /* zero-copy, read-only, from an aligned copy */
    size_t cap = (size + 63) / 64 * 64 + 64;
    uint8_t *al = aligned_alloc(64, cap);
    if (!al) return 0;
    memcpy(al, data, size);
    if (bk_filter_open_buffer(al, size, BK_LOAD_NO_CHECKSUM, &f) == BK_OK) {
        CHECK(bk_filter_add(f, "x", 1) == BK_ENOTSUP);
        queries(f);
        resave(f);
        bk_filter_free(f);
    }
    /* both checksums recomputed: the mutation reaches the body decoder */
    if (size >= 64) {
        uint32_t hs = (uint32_t)al[24] | (uint32_t)al[25] << 8 | (uint32_t)al[26] << 16 | (uint32_t)al[27] << 24;
        uint64_t body = get64(al + 40);
        if (hs >= 64 && hs <= size) {
            if (body <= size - hs) put64(al + 48, XXH3_64bits(al + hs, (size_t)body));
            put64(al + 56, 0);
            put64(al + 56, XXH3_64bits(al, hs));
            if (bk_filter_load_buffer(al, size, 0, &f) == BK_OK) {
                exercise(f, true);
                bk_filter_free(f);
            }
        }
    }
    free(al);
    return 0;
}
