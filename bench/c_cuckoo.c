/* Contenders: bloomkit's cuckoo filter (b = 4, fingerprint bits chosen from p: 12 at p = 1%), sized so
 * that the n keys fill it to 95% load; and `cuckoo-p2`, the same filter with 12-bit fingerprints and
 * the power-of-two bucket count the peer cuckoo filter (c_peers.c) picks for n, so that the two are
 * compared at the same load (at n = 10M that table is only 60% full). */
#include <bloomkit/bloomkit.h>
#include "bench.h"

void *bench_cuckoo_create(uint64_t n, double p)
{
    bk_cuckoo *f;
    return bk_cuckoo_new(n, p, NULL, &f) == BK_OK ? f : NULL;
}
/* the peer's rule: n / 4 rounded up to a power of two, doubled if n keys would fill it over 96% */
void *bench_cuckoo_p2_create(uint64_t n, double p)
{
    (void)p;
    uint64_t want = n / 4 ? n / 4 : 1, nb = 1;
    while (nb < want) nb <<= 1;
    if ((double)n / (double)nb / 4.0 > 0.96) nb <<= 1;
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.bucket_size = 4;
    o.fingerprint_bits = 12;
    bk_cuckoo *f;
    return bk_cuckoo_new_buckets(nb, &o, &f) == BK_OK ? f : NULL;
}
static void cf_add(void *f, const void *k, size_t len) { bk_cuckoo_add(f, k, len); }
static bool cf_contains(void *f, const void *k, size_t len) { return bk_cuckoo_contains(f, k, len); }
static bool cf_remove(void *f, const void *k, size_t len) { return bk_cuckoo_remove(f, k, len) == BK_OK; }
static void cf_add_batch(void *f, const void *const *k, const size_t *l, size_t n) { bk_cuckoo_add_many(f, k, l, n, NULL); }
static size_t cf_contains_batch(void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r)
{
    return BENCH_HITS(bk_cuckoo_contains_many, f, k, l, n, r);
}
size_t bench_cuckoo_bytes(void *f)
{
    bk_cuckoo_info in;
    bk_cuckoo_get_info(f, &in);
    return (size_t)in.memory_bytes;
}
static double cf_fpr(void *f, uint64_t n)
{
    (void)n;
    bk_cuckoo_info in;
    bk_cuckoo_get_info(f, &in);
    return in.fpr_now;
}
double bench_cuckoo_load(void *f)
{
    bk_cuckoo_info in;
    bk_cuckoo_get_info(f, &in);
    return in.load_factor;
}
void bench_cuckoo_destroy(void *f) { bk_cuckoo_free(f); }

const bench_contender bench_cuckoo = {
    .name = "cuckoo", .create = bench_cuckoo_create, .add = cf_add, .contains = cf_contains, .remove = cf_remove,
    .add_batch = cf_add_batch, .contains_batch = cf_contains_batch, .bytes = bench_cuckoo_bytes,
    .destroy = bench_cuckoo_destroy, .expected_fpr = cf_fpr, .load = bench_cuckoo_load, .peer = "cfpeer",
    .note = "bloomkit cuckoo, b = 4, fingerprint bits from p (2b/2^f <= p), any bucket count, 95% load at n",
};
const bench_contender bench_cuckoo_p2 = {
    .name = "cuckoo-p2", .create = bench_cuckoo_p2_create, .add = cf_add, .contains = cf_contains, .remove = cf_remove,
    .bytes = bench_cuckoo_bytes, .destroy = bench_cuckoo_destroy, .expected_fpr = cf_fpr, .load = bench_cuckoo_load,
    .peer = "cfpeer",
    .note = "bloomkit cuckoo, b = 4, 12-bit fingerprints, the peer's power-of-two bucket count (its load)",
};
