/*
 * Contenders: bloomkit's uint64-key calls (bk_<type>_add_u64 / _contains_u64 / _remove_u64) on the same
 * filters as the byte-key contenders, set against the same peers. An 8-byte key is read as one
 * uint64 (as the peers in c_peers.c read it); other lengths take the byte call. The filters are
 * identical to the byte contenders' (the uint64 calls set the same bits), so the bits/key and FPR
 * columns match theirs; only the call differs.
 */
#include <string.h>
#include <bloomkit/bloomkit.h>
#include "bench.h"

static inline bool as_u64(const void *k, size_t len, uint64_t *v)
{
    if (len != 8) return false;
    memcpy(v, k, 8);
    return true;
}

/* ---- classic ---- */
static void bl_add(void *f, const void *k, size_t len)
{
    uint64_t v;
    if (as_u64(k, len, &v)) bk_bloom_add_u64(f, v);
    else bk_bloom_add(f, k, len);
}
static bool bl_contains(void *f, const void *k, size_t len)
{
    uint64_t v;
    return as_u64(k, len, &v) ? bk_bloom_contains_u64(f, v) : bk_bloom_contains(f, k, len);
}

const bench_contender bench_bloom_u64 = {
    .name = "bloom-u64", .create = bench_bloom_create, .add = bl_add, .contains = bl_contains,
    .clear = bench_bloom_clear, .bytes = bench_bloom_bytes, .destroy = bench_bloom_destroy, .peer = "libbloom",
    .note = "bloomkit classic, standard layout, uint64-key calls (bk_bloom_add_u64 / _contains_u64)",
};

/* ---- blocked ---- */
static void bb_add(void *f, const void *k, size_t len)
{
    uint64_t v;
    if (as_u64(k, len, &v)) bk_blocked_add_u64(f, v);
    else bk_blocked_add(f, k, len);
}
static bool bb_contains(void *f, const void *k, size_t len)
{
    uint64_t v;
    return as_u64(k, len, &v) ? bk_blocked_contains_u64(f, v) : bk_blocked_contains(f, k, len);
}

const bench_contender bench_blocked_u64 = {
    .name = "blocked-u64", .create = bench_blocked_create, .add = bb_add, .contains = bb_contains,
    .clear = bench_blocked_clear, .bytes = bench_blocked_bytes, .destroy = bench_blocked_destroy, .peer = "sbbf",
    .note = "bloomkit blocked, split-block layout, uint64-key calls (bk_blocked_add_u64 / _contains_u64)",
};

/* ---- binary fuse: built from the byte keys (the same filter as `fuse`), queried by uint64 ---- */
static bool fu_contains(void *f, const void *k, size_t len)
{
    uint64_t v;
    return as_u64(k, len, &v) ? bk_fuse_contains_u64(f, v) : bk_fuse_contains(f, k, len);
}

const bench_contender bench_fuse_u64 = {
    .name = "fuse-u64", .build = bench_fuse_build, .contains = fu_contains, .bytes = bench_fuse_bytes,
    .destroy = bench_fuse_destroy, .peer = "bfuse8",
    .note = "bloomkit binary fuse (as `fuse`), uint64-key queries (bk_fuse_contains_u64)",
};

/* ---- cuckoo, 95% load at n (as `cuckoo`) ---- */
static void cf_add(void *f, const void *k, size_t len)
{
    uint64_t v;
    if (as_u64(k, len, &v)) bk_cuckoo_add_u64(f, v);
    else bk_cuckoo_add(f, k, len);
}
static bool cf_contains(void *f, const void *k, size_t len)
{
    uint64_t v;
    return as_u64(k, len, &v) ? bk_cuckoo_contains_u64(f, v) : bk_cuckoo_contains(f, k, len);
}
static bool cf_remove(void *f, const void *k, size_t len)
{
    uint64_t v;
    return (as_u64(k, len, &v) ? bk_cuckoo_remove_u64(f, v) : bk_cuckoo_remove(f, k, len)) == BK_OK;
}

/* ---- cuckoo with the peer's geometry (as `cuckoo-p2`: 12-bit fingerprints, its bucket count) ---- */

const bench_contender bench_cuckoo_p2_u64 = {
    .name = "cuckoo-p2-u64", .create = bench_cuckoo_p2_create, .add = cf_add, .contains = cf_contains,
    .remove = cf_remove, .bytes = bench_cuckoo_bytes, .load = bench_cuckoo_load, .destroy = bench_cuckoo_destroy,
    .peer = "cfpeer",
    .note = "bloomkit cuckoo (as `cuckoo-p2`: the peer's load), uint64-key calls",
};

const bench_contender bench_cuckoo_u64 = {
    .name = "cuckoo-u64", .create = bench_cuckoo_create, .add = cf_add, .contains = cf_contains, .remove = cf_remove,
    .bytes = bench_cuckoo_bytes, .load = bench_cuckoo_load, .destroy = bench_cuckoo_destroy, .peer = "cfpeer",
    .note = "bloomkit cuckoo (as `cuckoo`), uint64-key calls (bk_cuckoo_add_u64 / _contains_u64 / _remove_u64)",
};
