/* Contender: bloomkit's cuckoo filter (b = 4, fingerprint bits chosen from p: 12 at p = 1%), sized so
 * that the n keys fill it to 95% load. */
#include <bloomkit/bloomkit.h>
#include "bench.h"

static void *cf_create(uint64_t n, double p)
{
    bk_cuckoo *f;
    return bk_cuckoo_new(n, p, NULL, &f) == BK_OK ? f : NULL;
}
static void cf_add(void *f, const void *k, size_t len) { bk_cuckoo_add(f, k, len); }
static bool cf_contains(void *f, const void *k, size_t len) { return bk_cuckoo_contains(f, k, len); }
static bool cf_remove(void *f, const void *k, size_t len) { return bk_cuckoo_remove(f, k, len) == BK_OK; }
static void cf_add_batch(void *f, const void *const *k, const size_t *l, size_t n) { bk_cuckoo_add_many(f, k, l, n, NULL); }
static size_t cf_contains_batch(void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r)
{
    return bk_cuckoo_contains_many(f, k, l, n, r);
}
static size_t cf_bytes(void *f)
{
    bk_cuckoo_info in;
    bk_cuckoo_info_get(f, &in);
    return (size_t)in.memory_bytes;
}
static void cf_destroy(void *f) { bk_cuckoo_free(f); }

const bench_contender bench_cuckoo = {
    .name = "cuckoo", .create = cf_create, .add = cf_add, .contains = cf_contains, .remove = cf_remove,
    .add_batch = cf_add_batch, .contains_batch = cf_contains_batch, .bytes = cf_bytes, .destroy = cf_destroy,
    .note = "bloomkit cuckoo, b = 4, fingerprint bits from p (2b/2^f <= p), any bucket count, 95% load at n",
};
