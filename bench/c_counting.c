/* Contenders: bloomkit's counting Bloom filter, 4-bit (default) and 8-bit counters. */
#include <bloomkit/bloomkit.h>
#include "bench.h"

static void *create(uint64_t n, double p, uint32_t bits)
{
    bk_counting *f;
    bk_counting_options o = { .counter_bits = bits, .seed = 0 };
    return bk_counting_new(n, p, &o, &f) == BK_OK ? f : NULL;
}
static void *create4(uint64_t n, double p) { return create(n, p, 4); }
static void *create8(uint64_t n, double p) { return create(n, p, 8); }
static void add(void *f, const void *k, size_t len) { bk_counting_add(f, k, len); }
static bool contains(void *f, const void *k, size_t len) { return bk_counting_contains(f, k, len); }
static bool rm(void *f, const void *k, size_t len) { return bk_counting_remove(f, k, len) == BK_OK; }
static void add_batch(void *f, const void *const *k, const size_t *l, size_t n) { bk_counting_add_many(f, k, l, n); }
static size_t contains_batch(void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r)
{
    return BENCH_HITS(bk_counting_contains_many, f, k, l, n, r);
}
static size_t bytes(void *f)
{
    size_t len;
    bk_counting_data(f, &len);
    return len;
}
static void destroy(void *f) { bk_counting_free(f); }

const bench_contender bench_counting = {
    .name = "counting", .create = create4, .add = add, .contains = contains, .add_batch = add_batch,
    .contains_batch = contains_batch, .remove = rm, .bytes = bytes, .destroy = destroy,
    .note = "bloomkit counting, 4-bit sticky counters (classic geometry for n, p)",
};
const bench_contender bench_counting8 = {
    .name = "counting8", .create = create8, .add = add, .contains = contains, .add_batch = add_batch,
    .contains_batch = contains_batch, .remove = rm, .bytes = bytes, .destroy = destroy,
    .note = "bloomkit counting, 8-bit sticky counters",
};
