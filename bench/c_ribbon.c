/* Contenders: bloomkit's Ribbon filter, built in one call from every key at the p asked for. */
#include <bloomkit/bloomkit.h>
#include "bench.h"

static void *rb_build(const void *const *keys, const size_t *lens, size_t n, double p)
{
    bk_ribbon *f;
    bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
    o.fpr = p;
    return bk_ribbon_build(keys, lens, n, &o, &f) == BK_OK ? f : NULL;
}
static bool rb_contains(void *f, const void *k, size_t len) { return bk_ribbon_contains(f, k, len); }
static size_t rb_contains_batch(void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r)
{
    return BENCH_HITS(bk_ribbon_contains_many, f, k, l, n, r);
}
static size_t rb_bytes(void *f)
{
    size_t len;
    bk_ribbon_data(f, &len);
    return len;
}
static void rb_destroy(void *f) { bk_ribbon_free(f); }
static double rb_fpr(void *f, uint64_t n)
{
    (void)n;
    return bk_ribbon_fpr(f);
}

const bench_contender bench_ribbon = {
    .name = "ribbon", .build = rb_build, .contains = rb_contains, .contains_batch = rb_contains_batch,
    .bytes = rb_bytes, .destroy = rb_destroy, .expected_fpr = rb_fpr,
    .note = "bloomkit Ribbon (width 128, fractional bits per key); insert = build time per key",
};
