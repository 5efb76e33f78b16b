/*
 * line_floor: the classic filter's batch forms against the memory system's floor for the lines they
 * touch. The floor is random 64-byte line reads (and read-modify-writes) over a buffer of the
 * filter's size, batched and prefetched exactly like bk_bloom_contains_many (batches of 32 keys, every
 * line of a batch prefetched before any is read: 32 * k lines in flight; add_many's fill takes batches
 * of 16, and no prefetches for a filter of at most 4 MiB). The classic
 * filter touches k lines per key (k probes over m bits: two probes of one key share a line with
 * chance about k^2 / (2 * lines), negligible here), so its floor per key is k times the floor's ns
 * per line; the figure that matters is ours / (k * floor).
 *
 *   line_floor [-n N] [-p P] [-f FILL] [-q QUERIES] [-r ROUNDS]
 *
 * The filter is sized for N keys (default 200M) at P (1%) and FILL keys (default min(N, 20M)) are
 * inserted with bk_bloom_add_many (timed: the insert figure); the batch query time does not depend
 * on the fill (the query reads all k lines, branch-free). QUERIES (default 4M) present and absent keys
 * with bk_bloom_contains_many. The buffer of the floor is allocated and advised for transparent huge
 * pages the way the library allocates the filter (BK_THP=0 turns both off). Rounds are interleaved
 * (filter, floor), the fastest kept; times on the thread's CPU clock. Prints the load average.
 */
#define _DEFAULT_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <bloomkit/bloomkit.h>
#include "bench.h"
#include "benchutil.h"

#define BATCH 32 /* the classic filter's query batch (BK_BATCH in src/filters/bloom.c) */
#define CHUNK 4096

static bool thp_on(void)
{
    const char *e = getenv("BK_THP");
    return !(e && !strcmp(e, "0"));
}

/* The floor's buffer: zeroed and touched, 2 MiB aligned and advised as the library's arrays are. */
static uint64_t *floor_alloc(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    bool thp = bytes >= huge && thp_on();
    size_t align = thp ? huge : 64, r = (bytes + align - 1) / align * align;
    uint64_t *p = aligned_alloc(align, r);
    if (!p) return NULL;
#ifdef MADV_HUGEPAGE
    if (thp) (void)madvise(p, r, MADV_HUGEPAGE);
#endif
    memset(p, 0, r);
    return p;
}

/* `lines` random line reads (or RMWs) in batches of BATCH * k, each batch prefetched first. */
static uint64_t floor_run(uint64_t *buf, uint64_t nlines, uint64_t lines, uint32_t k, bool write, uint64_t seed)
{
    __extension__ typedef unsigned __int128 u128;
    const size_t per = (size_t)BATCH * k;
    uint64_t *idx = malloc(per * sizeof *idx), sum = 0, st = seed;
    if (!idx) return 0;
    for (uint64_t done = 0; done < lines; done += per) {
        size_t cnt = lines - done < per ? (size_t)(lines - done) : per;
        for (size_t j = 0; j < cnt; j++) {
            idx[j] = (uint64_t)(((u128)bu_splitmix64(&st) * nlines) >> 64) * 8;
            if (write) __builtin_prefetch(&buf[idx[j]], 1, 3);
            else __builtin_prefetch(&buf[idx[j]], 0, 3);
        }
        if (write)
            for (size_t j = 0; j < cnt; j++) buf[idx[j]] |= 1;
        else
            for (size_t j = 0; j < cnt; j++) sum += buf[idx[j]];
    }
    free(idx);
    return sum;
}

#define MIN_INTO(dst, v) ((dst) = (dst) < 0 || (v) < (dst) ? (v) : (dst))

int main(int argc, char **argv)
{
    uint64_t n = 200000000, fill = 0, q = 4000000;
    double p = 0.01;
    int rounds = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) p = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-f") && i + 1 < argc) fill = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-q") && i + 1 < argc) q = (uint64_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: line_floor [-n N] [-p P] [-f FILL] [-q QUERIES] [-r ROUNDS]\n");
            return 2;
        }
    }
    if (!fill) fill = n < 20000000 ? n : 20000000;
    if (fill > n) fill = n;
    if (q > fill) q = fill;
    if (rounds < 1) rounds = 1;
    bu_print_loadavg("at start");
    bk_bloom *f;
    if (bk_bloom_new(n, p, NULL, &f) != BK_OK) {
        fprintf(stderr, "cannot create the filter\n");
        return 1;
    }
    size_t bytes;
    bk_bloom_data(f, &bytes);
    uint32_t k = bk_bloom_k(f);
    uint64_t nlines = bytes / 64;
    uint64_t *buf = floor_alloc(bytes);
    if (!buf) return 1;
    printf("classic filter for n = %llu at p = %g: %.1f MiB, k = %u, %llu keys inserted; THP %s; "
           "batches of %d keys (%u lines) prefetched\n",
           (unsigned long long)n, p, (double)bytes / 1048576.0, k, (unsigned long long)fill,
           thp_on() ? "advised (BK_THP unset)" : "off (BK_THP=0)", BATCH, BATCH * k);
    /* keys as uint64 values, passed to the batch forms as 8-byte keys */
    uint64_t *keys = malloc(CHUNK * sizeof *keys);
    const void **ptrs = malloc(CHUNK * sizeof *ptrs);
    size_t *lens = malloc(CHUNK * sizeof *lens);
    uint8_t *res = malloc(CHUNK);
    if (!keys || !ptrs || !lens || !res) return 1;
    for (size_t j = 0; j < CHUNK; j++) {
        ptrs[j] = &keys[j];
        lens[j] = 8;
    }
    double ins = -1, qin = -1, qout = -1, fr = -1, fw = -1;
    uint64_t present = 0, fpos = 0, sink = 0;
    for (int r = 0; r < rounds; r++) {
        /* insert: the first round fills the filter; later rounds insert the same keys again (the same
         * lines, the same work) */
        uint64_t st = 1;
        double t = 0;
        for (uint64_t s = 0; s < fill; s += CHUNK) {
            size_t cnt = fill - s < CHUNK ? (size_t)(fill - s) : CHUNK;
            for (size_t j = 0; j < cnt; j++) keys[j] = bu_splitmix64(&st);
            double t0 = bu_cpu_ns();
            bk_bloom_add_many(f, ptrs, lens, cnt);
            t += bu_cpu_ns() - t0;
        }
        MIN_INTO(ins, t / (double)fill);
        for (int hit = 1; hit >= 0; hit--) {
            uint64_t qs = hit ? 1 : 2, got = 0;
            t = 0;
            for (uint64_t s = 0; s < q; s += CHUNK) {
                size_t cnt = q - s < CHUNK ? (size_t)(q - s) : CHUNK;
                for (size_t j = 0; j < cnt; j++) keys[j] = bu_splitmix64(&qs);
                double t0 = bu_cpu_ns();
                got += BENCH_HITS(bk_bloom_contains_many, f, ptrs, lens, cnt, res);
                t += bu_cpu_ns() - t0;
            }
            if (hit) {
                MIN_INTO(qin, t / (double)q);
                present = got;
            } else {
                MIN_INTO(qout, t / (double)q);
                fpos = got;
            }
        }
        double t0 = bu_cpu_ns();
        sink += floor_run(buf, nlines, q * k, k, false, 77 + (uint64_t)r);
        MIN_INTO(fr, (bu_cpu_ns() - t0) / (double)(q * k));
        t0 = bu_cpu_ns();
        sink += floor_run(buf, nlines, q * k, k, true, 99 + (uint64_t)r);
        MIN_INTO(fw, (bu_cpu_ns() - t0) / (double)(q * k));
    }
    printf("fastest of %d interleaved rounds, ns on the thread's CPU clock:\n", rounds);
    printf("  floor: random line read %.2f ns, read-modify-write %.2f ns (per line, batched)\n", fr, fw);
    printf("  %-30s %8s %12s %8s\n", "classic batch form", "ns/key", "k * floor", "ratio");
    printf("  %-30s %8.1f %12.1f %8.2f\n", "add_many", ins, k * fw, ins / (k * fw));
    printf("  %-30s %8.1f %12.1f %8.2f\n", "contains_many (present)", qin, k * fr, qin / (k * fr));
    printf("  %-30s %8.1f %12.1f %8.2f\n", "contains_many (absent)", qout, k * fr, qout / (k * fr));
    printf("  check: %llu of %llu present keys found, %llu of %llu absent keys reported (%.3f%%)%s\n",
           (unsigned long long)present, (unsigned long long)q, (unsigned long long)fpos, (unsigned long long)q,
           100.0 * (double)fpos / (double)q, sink == 1 ? " " : "");
    bu_print_loadavg("at end");
    bk_bloom_free(f);
    free(buf);
    free(keys);
    free(ptrs);
    free(lens);
    free(res);
    return present == q ? 0 : 1;
}
