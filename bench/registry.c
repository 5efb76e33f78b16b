/* Every contender of the bench program; add one line (and its bench/c_<type>.c) per filter type. */
#include "bench.h"

extern const bench_contender bench_libbloom, bench_bloom, bench_partitioned;
extern const bench_contender bench_blocked, bench_blocked512, bench_floor;
extern const bench_contender bench_counting, bench_counting8, bench_scalable, bench_scalable_classic, bench_scalable1;
extern const bench_contender bench_cuckoo, bench_cuckoo_p2;
extern const bench_contender bench_fuse, bench_fuse16;
extern const bench_contender bench_ribbon;
extern const bench_contender bench_quotient;
extern const bench_contender bench_aging;
/* uint64-key calls of the same filters (c_u64.c) */
extern const bench_contender bench_bloom_u64, bench_blocked_u64, bench_fuse_u64, bench_cuckoo_u64, bench_cuckoo_p2_u64;
/* peers: other designs, written in c_peers.c from their papers and specs */
extern const bench_contender bench_sbbf, bench_bfuse8, bench_cfpeer;

const bench_contender *const bench_contenders[] = {
    &bench_libbloom, /* the baseline: first */
    &bench_bloom,
    &bench_bloom_u64,
    &bench_partitioned,
    &bench_blocked,
    &bench_blocked_u64,
    &bench_blocked512,
    &bench_sbbf,
    &bench_floor,
    &bench_counting,
    &bench_counting8,
    &bench_scalable,
    &bench_scalable_classic,
    &bench_scalable1,
    &bench_cuckoo,
    &bench_cuckoo_p2,
    &bench_cuckoo_u64,
    &bench_cuckoo_p2_u64,
    &bench_cfpeer,
    &bench_quotient,
    &bench_aging,
    &bench_fuse,
    &bench_fuse16,
    &bench_fuse_u64,
    &bench_bfuse8,
    &bench_ribbon,
    NULL,
};
