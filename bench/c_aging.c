/* Contender: bloomkit's aging filter as a count window of the last n insertions (4 generations), so
 * every key of the run is inside its window: the FPR and speed of the sliding-window type when it
 * holds a full window. Its memory covers the window plus the slack of a third of a window that the
 * generations need, which is what a user pays for "the last n keys". */
#include <bloomkit/bloomkit.h>
#include "bench.h"

static void *ag_create(uint64_t n, double p)
{
    bk_aging *f;
    return bk_aging_new_count(n, p, NULL, &f) == BK_OK ? f : NULL;
}
static void ag_add(void *f, const void *k, size_t len) { bk_aging_add(f, k, len); }
static bool ag_contains(void *f, const void *k, size_t len) { return bk_aging_contains(f, k, len); }
static void ag_add_batch(void *f, const void *const *k, const size_t *l, size_t n) { bk_aging_add_many(f, k, l, n); }
static size_t ag_contains_batch(void *f, const void *const *k, const size_t *l, size_t n, uint8_t *r)
{
    return BENCH_HITS(bk_aging_contains_many, f, k, l, n, r);
}
static void ag_add_hashed(void *f, const uint64_t *h, size_t n) { bk_aging_add_hashes(f, h, n); }
static size_t ag_contains_hashed(void *f, const uint64_t *h, size_t n, uint8_t *r)
{
    return BENCH_HITS(bk_aging_contains_hashes, f, h, n, r);
}
static size_t ag_bytes(void *f) { return (size_t)bk_aging_memory(f); }
static double ag_fpr(void *f, uint64_t n)
{
    (void)n;
    bk_stats st;
    bk_aging_stats(f, &st);
    return st.fpr_now;
}
static void ag_clear(void *f) { bk_aging_clear(f); }
static void ag_destroy(void *f) { bk_aging_free(f); }

const bench_contender bench_aging = {
    .name = "aging", .create = ag_create, .add = ag_add, .contains = ag_contains, .add_batch = ag_add_batch,
    .contains_batch = ag_contains_batch, .add_hashed = ag_add_hashed, .contains_hashed = ag_contains_hashed,
    .clear = ag_clear, .bytes = ag_bytes, .destroy = ag_destroy, .expected_fpr = ag_fpr,
    .note = "bloomkit aging filter, a count window of the last n insertions (4 generations, split-block buckets)",
};
