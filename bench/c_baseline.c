/* Contenders: libbloom (Debian's libbloom-dev, the baseline) and bloomkit's classic filter. */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <bloom.h>
#include <bloomkit/bloomkit.h>
#include "bench.h"

/* libbloom 1.6 keeps the bit count in an int: at most 2^31 - 1 bits (256 MiB). Larger requests (the
 * out-of-cache runs) are clamped to the most entries that fit, still far larger than the cache. */
static void *lb_create(uint64_t n, double p)
{
    double bpe = -log(p) / (0.69314718055994530942 * 0.69314718055994530942);
    double max_entries = floor(2147000000.0 / bpe);
    if ((double)n > max_entries) n = (uint64_t)max_entries;
    struct bloom *b = calloc(1, sizeof *b);
    if (!b || bloom_init(b, (int)n, p) != 0) { free(b); return NULL; }
#ifdef MADV_HUGEPAGE
    /* its bit array comes from calloc: advise the 2 MiB-aligned interior for transparent huge pages
     * (unless BK_THP=0), as bloomkit does with a user allocator */
    const char *e = getenv("BK_THP");
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t lo = ((uintptr_t)b->bf + huge - 1) & ~(huge - 1), hi = ((uintptr_t)b->bf + (uintptr_t)b->bytes) & ~(huge - 1);
    if (!(e && !strcmp(e, "0")) && hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#endif
    return b;
}
static void lb_add(void *f, const void *k, size_t len) { bloom_add(f, k, (int)len); }
static bool lb_contains(void *f, const void *k, size_t len) { return bloom_check(f, k, (int)len) == 1; }
static size_t lb_bytes(void *f) { return (size_t)((struct bloom *)f)->bytes; }
static void lb_destroy(void *f) { bloom_free(f); free(f); }
static void lb_clear(void *f) { memset(((struct bloom *)f)->bf, 0, (size_t)((struct bloom *)f)->bytes); }

const bench_contender bench_libbloom = {
    .name = "libbloom", .create = lb_create, .add = lb_add, .contains = lb_contains,
    .clear = lb_clear, .bytes = lb_bytes, .destroy = lb_destroy,
    .note = "libbloom 1.6 (Debian libbloom-dev): the baseline of the ratio columns (at most 256 MiB: "
            "larger sizes are clamped to that)",
};

static void *bl_create(uint64_t n, double p, bk_layout layout)
{
    bk_bloom *f;
    bk_bloom_options o = { .layout = layout, .seed = 0 };
    return bk_bloom_new(n, p, &o, &f) == BK_OK ? f : NULL;
}
void *bench_bloom_create(uint64_t n, double p) { return bl_create(n, p, BK_LAYOUT_STANDARD); }
static void *part_create(uint64_t n, double p) { return bl_create(n, p, BK_LAYOUT_PARTITIONED); }
static void bl_add(void *f, const void *k, size_t len) { bk_bloom_add(f, k, len); }
static bool bl_contains(void *f, const void *k, size_t len) { return bk_bloom_contains(f, k, len); }
static void bl_add_batch(void *f, const void *const *k, const size_t *l, size_t n) { bk_bloom_add_many(f, k, l, n); }
static size_t bl_contains_batch(void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r)
{
    return BENCH_HITS(bk_bloom_contains_many, f, k, l, n, r);
}
size_t bench_bloom_bytes(void *f)
{
    size_t len;
    bk_bloom_data(f, &len);
    return len;
}
void bench_bloom_destroy(void *f) { bk_bloom_free(f); }
void bench_bloom_clear(void *f) { bk_bloom_clear(f); }
static double bl_fpr(void *f, uint64_t n)
{
    (void)n;
    bk_stats st;
    bk_bloom_stats(f, &st);
    return st.fpr_now;
}

const bench_contender bench_bloom = {
    .name = "bloom", .create = bench_bloom_create, .add = bl_add, .contains = bl_contains,
    .add_batch = bl_add_batch, .contains_batch = bl_contains_batch, .clear = bench_bloom_clear,
    .bytes = bench_bloom_bytes, .destroy = bench_bloom_destroy, .expected_fpr = bl_fpr, .peer = "libbloom",
    .note = "bloomkit classic, standard layout",
};
const bench_contender bench_partitioned = {
    .name = "partitioned", .create = part_create, .add = bl_add, .contains = bl_contains,
    .add_batch = bl_add_batch, .contains_batch = bl_contains_batch, .clear = bench_bloom_clear,
    .bytes = bench_bloom_bytes, .destroy = bench_bloom_destroy,
    .note = "bloomkit classic, partitioned layout",
};
