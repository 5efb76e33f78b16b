/* Contenders: bloomkit's binary fuse filter, built in one call from every key. */
#include <bloomkit/bloomkit.h>
#include "bench.h"

/* `fuse`: the fingerprint width that meets p (8 bits for p >= 2^-8, else 16); `fuse16`: 16 bits. */
static void *fu_build_bits(const void *const *keys, const size_t *lens, size_t n, uint32_t bits)
{
    bk_fuse *f;
    bk_fuse_options o = { .fingerprint_bits = bits, .max_attempts = 0, .seed = 0 };
    return bk_fuse_build(keys, lens, n, &o, &f) == BK_OK ? f : NULL;
}
void *bench_fuse_build(const void *const *keys, const size_t *lens, size_t n, double p)
{
    bk_geometry g;
    if (bk_fuse_size_for_fpr(n, p, &g) != BK_OK) return NULL;
    return fu_build_bits(keys, lens, n, g.k);
}
static void *fu16_build(const void *const *keys, const size_t *lens, size_t n, double p)
{
    (void)p;
    return fu_build_bits(keys, lens, n, 16);
}
static bool fu_contains(void *f, const void *k, size_t len) { return bk_fuse_contains(f, k, len); }
static size_t fu_contains_batch(void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r)
{
    return BENCH_HITS(bk_fuse_contains_many, f, k, l, n, r);
}
size_t bench_fuse_bytes(void *f)
{
    size_t len;
    bk_fuse_data(f, &len);
    return len;
}
void bench_fuse_destroy(void *f) { bk_fuse_free(f); }
static double fu_fpr(void *f, uint64_t n)
{
    (void)n;
    bk_stats st;
    bk_fuse_stats(f, &st);
    return st.fpr_now;
}

const bench_contender bench_fuse = {
    .name = "fuse", .build = bench_fuse_build, .contains = fu_contains, .contains_batch = fu_contains_batch,
    .bytes = bench_fuse_bytes, .destroy = bench_fuse_destroy, .expected_fpr = fu_fpr, .peer = "bfuse8",
    .note = "bloomkit binary fuse, 8-bit fingerprints (16 when p < 2^-8); insert = build time per key",
};
const bench_contender bench_fuse16 = {
    .name = "fuse16", .build = fu16_build, .contains = fu_contains, .contains_batch = fu_contains_batch,
    .bytes = bench_fuse_bytes, .destroy = bench_fuse_destroy,
    .note = "bloomkit binary fuse, 16-bit fingerprints; insert = build time per key",
};
