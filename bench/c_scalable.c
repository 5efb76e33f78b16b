/* Contenders: bloomkit's scalable Bloom filter, grown from 100 keys (RedisBloom's default BF.ADD case),
 * with its default blocked sub-filters and with classic ones (BK_SCALABLE_CLASSIC), and the
 * non-scaling form (BK_SCALABLE_NONSCALING, sized for n: RedisBloom's NONSCALING). */
#include <bloomkit/bloomkit.h>
#include "bench.h"

static void *create_grow(uint64_t n, double p)
{
    (void)n;
    bk_scalable *f;
    bk_scalable_options o = bk_scalable_default_options();
    o.max_bytes = BK_MAX_FILTER_BYTES;
    return bk_scalable_new(100, p, &o, &f) == BK_OK ? f : NULL;
}
static void *create_grow_classic(uint64_t n, double p)
{
    (void)n;
    bk_scalable *f;
    bk_scalable_options o = bk_scalable_default_options();
    o.max_bytes = BK_MAX_FILTER_BYTES;
    o.flags = BK_SCALABLE_CLASSIC;
    return bk_scalable_new(100, p, &o, &f) == BK_OK ? f : NULL;
}
static void *create_fixed(uint64_t n, double p)
{
    bk_scalable *f;
    bk_scalable_options o = bk_scalable_default_options();
    o.flags = BK_SCALABLE_NONSCALING;
    o.max_bytes = BK_MAX_FILTER_BYTES;
    return bk_scalable_new(n, p, &o, &f) == BK_OK ? f : NULL;
}
static void add(void *f, const void *k, size_t len) { bk_scalable_add(f, k, len); }
static bool contains(void *f, const void *k, size_t len) { return bk_scalable_contains(f, k, len); }
static void add_batch(void *f, const void *const *k, const size_t *l, size_t n) { bk_scalable_add_many(f, k, l, n, NULL); }
static size_t contains_batch(void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r)
{
    return BENCH_HITS(bk_scalable_contains_many, f, k, l, n, r);
}
static size_t bytes(void *f) { return (size_t)bk_scalable_bytes(f); }
static void destroy(void *f) { bk_scalable_free(f); }

const bench_contender bench_scalable = {
    .name = "scalable", .create = create_grow, .add = add, .contains = contains, .add_batch = add_batch,
    .contains_batch = contains_batch, .bytes = bytes, .destroy = destroy,
    .note = "bloomkit scalable, from 100 keys grown to n (growth 2, the default r; RedisBloom's default case), blocked sub-filters",
};
const bench_contender bench_scalable_classic = {
    .name = "scalable-classic", .create = create_grow_classic, .add = add, .contains = contains,
    .add_batch = add_batch, .contains_batch = contains_batch, .bytes = bytes, .destroy = destroy,
    .note = "the same with classic sub-filters (BK_SCALABLE_CLASSIC)",
};
const bench_contender bench_scalable1 = {
    .name = "scalable1", .create = create_fixed, .add = add, .contains = contains, .add_batch = add_batch,
    .contains_batch = contains_batch, .bytes = bytes, .destroy = destroy,
    .note = "bloomkit scalable, non-scaling, sized for n (RedisBloom's NONSCALING)",
};
