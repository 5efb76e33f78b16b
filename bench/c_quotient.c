/* Contender: bloomkit's quotient filter (rank-and-select, counters in the slots), sized with a load
 * limit of 0.96 (the fewest slots that hold n at that load, any slot count), remainder bits from p at
 * that load. */
#include <bloomkit/bloomkit.h>
#include "bench.h"

static void *qf_create(uint64_t n, double p)
{
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.max_load = 0.96;
    bk_quotient *f;
    return bk_quotient_new(n, p, &o, &f) == BK_OK ? f : NULL;
}
static void qf_add(void *f, const void *k, size_t len) { bk_quotient_add(f, k, len); }
static bool qf_contains(void *f, const void *k, size_t len) { return bk_quotient_contains(f, k, len); }
static bool qf_remove(void *f, const void *k, size_t len) { return bk_quotient_remove(f, k, len) == BK_OK; }
static void qf_add_batch(void *f, const void *const *k, const size_t *l, size_t n) { bk_quotient_add_many(f, k, l, n, NULL); }
static size_t qf_contains_batch(void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r)
{
    return BENCH_HITS(bk_quotient_contains_many, f, k, l, n, r);
}
static void qf_add_hashed(void *f, const uint64_t *h, size_t n) { bk_quotient_add_hashes(f, h, n, NULL); }
static size_t qf_contains_hashed(void *f, const uint64_t *h, size_t n, uint8_t *r)
{
    return BENCH_HITS(bk_quotient_contains_hashes, f, h, n, r);
}
static size_t qf_bytes(void *f) { return (size_t)bk_quotient_memory(f); }
static double qf_fpr(void *f, uint64_t n)
{
    (void)n;
    bk_stats st;
    bk_quotient_stats(f, &st); /* fpr_now: the chance an absent key meets a stored fingerprint */
    return st.fpr_now;
}
static double qf_load(void *f)
{
    return (double)bk_quotient_slots_used(f) / (double)bk_quotient_slots(f);
}
static void qf_clear(void *f) { bk_quotient_clear(f); }
static void qf_destroy(void *f) { bk_quotient_free(f); }

const bench_contender bench_quotient = {
    .name = "quotient", .create = qf_create, .add = qf_add, .contains = qf_contains, .remove = qf_remove,
    .add_batch = qf_add_batch, .contains_batch = qf_contains_batch, .add_hashed = qf_add_hashed,
    .contains_hashed = qf_contains_hashed, .clear = qf_clear, .bytes = qf_bytes, .destroy = qf_destroy,
    .expected_fpr = qf_fpr, .load = qf_load,
    .note = "bloomkit quotient filter, r + 2.125 bits per slot, any slot count, load limit 0.96, r from p at n",
};
