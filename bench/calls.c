/*
 * calls: one key per call, each contender called the way its users call it, in one process, rounds
 * interleaved. 8-byte (uint64) keys, p = 1%.
 *
 *   calls [-n N[,N...]] [-r ROUNDS] [-q QUERIES] [--only bloom,blocked,fuse,cuckoo,cuckoo-p2]
 *         [--col bytes,u64,reader,peer,rd-ph]
 *   calls --hashes [-r ROUNDS]
 *
 * --hashes: the hashes alone, ns per key on the thread's CPU clock, fastest of the rounds: bloomkit's
 * XXH3-64 of 8 bytes (bk_reader_hash_u64, the seed's part precomputed), fmix64 (libfilter's caller
 * here), fmix64(key + seed) (binary_fuse8) and cuckoofilter's 128-bit multiply-add; "throughput" over
 * independent keys (what a loop of queries overlaps), "latency" with each key the previous hash (the
 * chain a single query waits on before its first load).
 *
 * Every contender has its own query loop, compiled here, with the call written out in it (no function
 * pointer per key):
 *   bytes   bloomkit's byte call through the public API, on the key's 8 bytes (bk_<type>_contains), a
 *           call into the library as a user's program makes it;
 *   u64     bloomkit's uint64 call (bk_<type>_contains_u64), likewise;
 *   reader  bloomkit's header-inline reader (bloomkit/reader.h), compiled into the loop: the forms for
 *           the filter's geometry, as a program written for it calls them (bk_blocked_reader_contains_u64,
 *           bk_fuse8_reader_contains_u64, bk_cuckoo4_reader_contains_u64 with f = 10 or 12);
 *   peer    the peer as its users call it: libfilter's block filter, binary_fuse8 (xor_singleheader) and
 *           cuckoofilter are header code, so their query (peers.h) is compiled into the loop;
 *           libbloom is a shared library, called through its API (bloom_check);
 *   rd-ph   a diagnostic, not a way to call bloomkit: the reader's probe (bk_<type>_reader_contains_hash)
 *           on a second bloomkit filter of the same geometry built from the peer's hash of each key
 *           (fmix64(key) for blocked, fmix64(key + seed) for fuse, the 128-bit multiply-add for
 *           cuckoo), queried with that hash computed in the loop: the reader with the peer's hash in
 *           place of XXH3, i.e. what is left of the gap once the file format's hash is set aside.
 * --col runs only the named contenders (columns), e.g. one of them alone under `perf stat` or a
 * profiler; a ratio needs the peer's column ("-" without it).
 * Each round queries Q keys (default min(n, 2M)) at 100% and 0% hits with every contender, the order
 * rotating from round to round; each contender's two timed runs follow an untimed pass of its own loop
 * over the absent keys, so both start with its array as warm as the caches hold it (without it the
 * first run after another contender's started cold and the second warm: a peer's present keys looked
 * slower than its absent ones at 10M for no reason of its own). Figures: ns per query on the thread's CPU clock, the fastest round;
 * x/p = contender / peer of the fastest rounds (above 1: slower); "u64/p range" and "rd/p range": the
 * lowest and highest ratio of one round's two runs (the same round: the same load). The load average
 * is printed at the start, before each n and at the end, the core clock (a chain of dependent adds) at
 * the start and the end. Built with -march=native where the compiler
 * has it (bench/CMakeLists.txt): the inlined code of both sides gets the CPU's instructions.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bloom.h>
#include <bloomkit/reader.h>
#include "bench.h"
#include "benchutil.h"
#include "peers.h"

extern const bench_contender bench_sbbf, bench_bfuse8, bench_cfpeer;

/* The query loops: one function per contender, the call written out in the loop. */
#define QUERY_LOOP(name, T, setup, expr)                                                           \
    static __attribute__((noinline)) uint64_t name(const void *state, const uint64_t *k, size_t n) \
    {                                                                                              \
        T s = setup;                                                                               \
        uint64_t hits = 0;                                                                         \
        for (size_t i = 0; i < n; i++) hits += (expr);                                             \
        return hits;                                                                               \
    }

QUERY_LOOP(bloom_bytes, const bk_bloom *, state, bk_bloom_contains(s, &k[i], 8))
QUERY_LOOP(bloom_u64, const bk_bloom *, state, bk_bloom_contains_u64(s, k[i]))
QUERY_LOOP(libbloom_q, struct bloom *, (struct bloom *)(uintptr_t)state, bloom_check(s, &k[i], 8) == 1)
QUERY_LOOP(blocked_bytes, const bk_blocked *, state, bk_blocked_contains(s, &k[i], 8))
QUERY_LOOP(blocked_u64, const bk_blocked *, state, bk_blocked_contains_u64(s, k[i]))
QUERY_LOOP(blocked_reader, bk_blocked_reader, *(const bk_blocked_reader *)state,
           bk_blocked_reader_contains_u64(s, k[i]))
QUERY_LOOP(sbbf_q, const sbbf_t *, state, sbbf_contains_u64(s, k[i]))
QUERY_LOOP(fuse_bytes, const bk_fuse *, state, bk_fuse_contains(s, &k[i], 8))
QUERY_LOOP(fuse_u64, const bk_fuse *, state, bk_fuse_contains_u64(s, k[i]))
QUERY_LOOP(fuse_reader, bk_fuse_reader, *(const bk_fuse_reader *)state, bk_fuse8_reader_contains_u64(s, k[i]))
QUERY_LOOP(bfuse_q, const bfuse_t *, state, bfuse_contains_u64(s, k[i]))
QUERY_LOOP(cuckoo_bytes, const bk_cuckoo *, state, bk_cuckoo_contains(s, &k[i], 8))
QUERY_LOOP(cuckoo_u64, const bk_cuckoo *, state, bk_cuckoo_contains_u64(s, k[i]))
QUERY_LOOP(cuckoo_reader10, bk_cuckoo_reader, *(const bk_cuckoo_reader *)state,
           bk_cuckoo4_reader_contains_u64(s, 10, k[i]))
QUERY_LOOP(cuckoo_reader12, bk_cuckoo_reader, *(const bk_cuckoo_reader *)state,
           bk_cuckoo4_reader_contains_u64(s, 12, k[i]))
QUERY_LOOP(cuckoo_reader_any, bk_cuckoo_reader, *(const bk_cuckoo_reader *)state,
           bk_cuckoo_reader_contains_u64(s, k[i]))
/* the reader of the filter's geometry: 4 slots of 10 bits (bloomkit's choice for p = 1%) or of 12 (the
 * peer's), as a program written for its filter's geometry calls it */
static uint64_t cuckoo_reader(const void *state, const uint64_t *k, size_t n)
{
    const bk_cuckoo_reader *r = state;
    if (r->fp_range == 1023 && r->bucket_bits == 40) return cuckoo_reader10(state, k, n);
    if (r->fp_range == 4095 && r->bucket_bits == 48) return cuckoo_reader12(state, k, n);
    return cuckoo_reader_any(state, k, n);
}
QUERY_LOOP(cfp_q, const cfp_t *, state, cfp_contains_u64(s, k[i]))

/* rd-ph: the reader's probe on the peer's hash (a filter built from those hashes) */
typedef struct ph_state {
    union { bk_blocked_reader b; bk_fuse_reader f; bk_cuckoo_reader c; } rd;
    uint64_t seed;       /* fuse: the peer's seed */
    bench_u128 mul, add; /* cuckoo: the peer's multiply-add */
} ph_state;
static inline uint64_t cfp_hash(bench_u128 mul, bench_u128 add, uint64_t key)
{
    return (uint64_t)((add + mul * (bench_u128)key) >> 64);
}
QUERY_LOOP(blocked_rdph, bk_blocked_reader, ((const ph_state *)state)->rd.b,
           bk_blocked_reader_contains_hash(s, fmix64(k[i])))
QUERY_LOOP(fuse_rdph, ph_state, *(const ph_state *)state, bk_fuse8_reader_contains_hash(s.rd.f, fmix64(k[i] + s.seed)))
QUERY_LOOP(cuckoo_rdph10, ph_state, *(const ph_state *)state,
           bk_cuckoo4_reader_contains_hash(s.rd.c, 10, cfp_hash(s.mul, s.add, k[i])))
QUERY_LOOP(cuckoo_rdph12, ph_state, *(const ph_state *)state,
           bk_cuckoo4_reader_contains_hash(s.rd.c, 12, cfp_hash(s.mul, s.add, k[i])))
static uint64_t cuckoo_rdph(const void *state, const uint64_t *k, size_t n)
{
    const ph_state *p = state;
    return p->rd.c.fp_range == 1023 ? cuckoo_rdph10(state, k, n) : cuckoo_rdph12(state, k, n);
}


/* --hashes: each hash's throughput (independent keys) and latency (a chain of hashes). */
#define HASH_LOOPS(name, expr)                                                                     \
    static __attribute__((noinline)) uint64_t name##_tp(const uint64_t *k, size_t n, uint64_t a)   \
    {                                                                                              \
        uint64_t acc = 0;                                                                          \
        (void)a;                                                                                   \
        for (size_t i = 0; i < n; i++) {                                                           \
            uint64_t x = k[i];                                                                     \
            acc += (expr);                                                                         \
        }                                                                                          \
        return acc;                                                                                \
    }                                                                                              \
    static __attribute__((noinline)) uint64_t name##_lat(uint64_t x, size_t n, uint64_t a)         \
    {                                                                                              \
        (void)a;                                                                                   \
        for (size_t i = 0; i < n; i++) x = (expr);                                                 \
        return x;                                                                                  \
    }
HASH_LOOPS(h_xxh3, bk_reader_hash_u64(x, a))
HASH_LOOPS(h_fmix, fmix64(x))
HASH_LOOPS(h_fmixseed, fmix64(x + a))
HASH_LOOPS(h_muladd, cfp_hash((bench_u128)a << 64 | (a | 1), (bench_u128)a << 64 | ~a, x))

static volatile uint64_t hash_sink;

static int run_hashes(int rounds)
{
    enum { NH = 4 };
    static const char *const names[NH] = { "XXH3-64, 8 bytes (bloomkit)", "fmix64 (libfilter's caller)",
                                           "fmix64(key + seed) (binary_fuse8)",
                                           "128-bit multiply-add (cuckoofilter)" };
    uint64_t (*tp[NH])(const uint64_t *, size_t, uint64_t) = { h_xxh3_tp, h_fmix_tp, h_fmixseed_tp, h_muladd_tp };
    uint64_t (*lat[NH])(uint64_t, size_t, uint64_t) = { h_xxh3_lat, h_fmix_lat, h_fmixseed_lat, h_muladd_lat };
    const size_t n = 1 << 16; /* keys in L1/L2: the hashes, not the memory */
    uint64_t *k = malloc(n * sizeof *k), st = 99, a = UINT64_C(0x5851f42d4c957f2d);
    if (!k) return 1;
    for (size_t i = 0; i < n; i++) k[i] = bu_splitmix64(&st);
    double best[2][NH];
    for (int h = 0; h < NH; h++) best[0][h] = best[1][h] = -1;
    bu_print_loadavg("at start");
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < NH; j++) {
            int h = (j + r) % NH;
            for (int rep = 0; rep < 20; rep++) {
                double t0 = bu_cpu_ns();
                hash_sink += tp[h](k, n, a);
                double t1 = bu_cpu_ns();
                hash_sink += lat[h](k[rep], n, a);
                double t2 = bu_cpu_ns();
                double v[2] = { (t1 - t0) / (double)n, (t2 - t1) / (double)n };
                for (int o = 0; o < 2; o++)
                    if (best[o][h] < 0 || v[o] < best[o][h]) best[o][h] = v[o];
            }
        }
    printf("ns per key, fastest of %d rounds x 20 runs of %zu keys\n%-38s %10s %10s %8s %8s\n", rounds, n, "hash",
           "throughput", "latency", "tp/xxh3", "lat/xxh3");
    for (int h = 0; h < NH; h++)
        printf("%-38s %10.3f %10.3f %8.2f %8.2f\n", names[h], best[0][h], best[1][h], best[0][h] / best[0][0],
               best[1][h] / best[1][0]);
    bu_print_loadavg("at end");
    free(k);
    return 0;
}

/* The core clock, estimated: a chain of dependent adds (one cycle each on x86-64 cores) on the thread's
 * CPU clock, the fastest of 5 runs of 2^24 x 4 adds; 0 where not measured. Hardware counters are not
 * available everywhere (in a VM perf stat says <not supported>): cycles per query are then ns per
 * query x this. */
static double clock_ghz(void)
{
    double best = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    for (int r = 0; r < 5; r++) {
        uint64_t x = 0, n = UINT64_C(1) << 24;
        double t0 = bu_cpu_ns();
        for (uint64_t i = 0; i < n; i++) __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(x));
        double g = 4.0 * (double)n / (bu_cpu_ns() - t0);
        if (g > best) best = g;
    }
#endif
    return best;
}

typedef uint64_t (*query_loop)(const void *, const uint64_t *, size_t);

enum { C_BYTES, C_U64, C_READER, C_PEER, C_RDPH, NC };
static const char *const CNAME[NC] = { "bytes", "u64", "reader", "peer", "rd-ph" };

typedef struct family {
    const char *name, *peer_name;
    query_loop loop[NC];      /* NULL: no such contender (the classic filter has no reader) */
    const void *state[NC];
    double bits_per_key[2];   /* bloomkit's, the peer's */
} family;

/* Everything a family's build made, freed after its rounds. */
typedef struct built {
    void *bk;                 /* the bloomkit filter */
    void *bk_ph;              /* rd-ph's bloomkit filter, built from the peer's hashes */
    void *peer;
    ph_state ph;
    union { bk_blocked_reader b; bk_fuse_reader f; bk_cuckoo_reader c; } rd;
    void (*bk_free)(void *);
    void (*peer_free)(void *);
} built;

static void bloom_free_(void *f) { bk_bloom_free(f); }
static void blocked_free_(void *f) { bk_blocked_free(f); }
static void fuse_free_(void *f) { bk_fuse_free(f); }
static void cuckoo_free_(void *f) { bk_cuckoo_free(f); }
static void libbloom_free_(void *f)
{
    bloom_free(f);
    free(f);
}

static double bits_of(const bk_stats *s, uint64_t n) { return (double)s->memory_bytes * 8.0 / (double)n; }

/* Build family `name` on keys[0, n); false if a build failed. */
static bool build(const char *name, const uint64_t *keys, const void *const *ptrs, const size_t *lens, uint64_t n,
                  family *fam, built *b)
{
    memset(fam, 0, sizeof *fam);
    memset(b, 0, sizeof *b);
    fam->name = name;
    bk_stats st;
    if (!strcmp(name, "bloom")) {
        bk_bloom *f;
        struct bloom *lb = calloc(1, sizeof *lb);
        if (!lb || bk_bloom_new(n, 0.01, NULL, &f) != BK_OK || bloom_init(lb, (int)n, 0.01) != 0) return false;
        for (uint64_t i = 0; i < n; i++) {
            bk_bloom_add_u64(f, keys[i]);
            bloom_add(lb, &keys[i], 8);
        }
        bk_bloom_stats(f, &st);
        *fam = (family){ name, "libbloom", { bloom_bytes, bloom_u64, NULL, libbloom_q }, { f, f, NULL, lb },
                         { bits_of(&st, n), (double)lb->bytes * 8.0 / (double)n } };
        *b = (built){ .bk = f, .peer = lb, .bk_free = bloom_free_, .peer_free = libbloom_free_ };
    } else if (!strcmp(name, "blocked")) {
        bk_blocked *f;
        if (bk_blocked_new(n, 0.01, NULL, &f) != BK_OK) return false;
        sbbf_t *p = bench_sbbf.create(n, 0.01);
        if (!p) return false;
        for (uint64_t i = 0; i < n; i++) {
            bk_blocked_add_u64(f, keys[i]);
            bench_sbbf.add(p, &keys[i], 8);
        }
        bk_blocked *g;
        if (bk_blocked_new(n, 0.01, NULL, &g) != BK_OK) return false;
        for (uint64_t i = 0; i < n; i++) bk_blocked_add_hash(g, fmix64(keys[i]));
        if (bk_blocked_get_reader(f, &b->rd.b) != BK_OK || bk_blocked_get_reader(g, &b->ph.rd.b) != BK_OK)
            return false;
        b->bk_ph = g;
        bk_blocked_stats(f, &st);
        *fam = (family){ name, "libfilter block (SBBF)",
                         { blocked_bytes, blocked_u64, blocked_reader, sbbf_q, blocked_rdph },
                         { f, f, &b->rd.b, p, &b->ph }, { bits_of(&st, n), (double)bench_sbbf.bytes(p) * 8.0 / (double)n } };
        b->bk = f;
        b->peer = p;
        b->bk_free = blocked_free_;
        b->peer_free = bench_sbbf.destroy;
    } else if (!strcmp(name, "fuse")) {
        bk_fuse *f;
        if (bk_fuse_build(ptrs, lens, n, NULL, &f) != BK_OK) return false;
        bfuse_t *p = bench_bfuse8.build(ptrs, lens, n, 0.01);
        if (!p) return false;
        uint64_t *hs = malloc(n * sizeof *hs);
        bk_fuse *g;
        if (!hs) return false;
        for (uint64_t i = 0; i < n; i++) hs[i] = fmix64(keys[i] + p->seed);
        bk_status gs = bk_fuse_build_hashes(hs, n, NULL, &g);
        free(hs);
        if (gs != BK_OK) return false;
        b->bk_ph = g;
        b->ph.seed = p->seed;
        if (bk_fuse_get_reader(f, &b->rd.f) != BK_OK || bk_fuse_get_reader(g, &b->ph.rd.f) != BK_OK) return false;
        bk_fuse_stats(f, &st);
        *fam = (family){ name, "binary_fuse8", { fuse_bytes, fuse_u64, fuse_reader, bfuse_q, fuse_rdph },
                         { f, f, &b->rd.f, p, &b->ph },
                         { bits_of(&st, n), (double)bench_bfuse8.bytes(p) * 8.0 / (double)n } };
        b->bk = f;
        b->peer = p;
        b->bk_free = fuse_free_;
        b->peer_free = bench_bfuse8.destroy;
    } else { /* cuckoo: bloomkit's own geometry for p = 1%; cuckoo-p2: the peer's (12-bit, its buckets) */
        bk_cuckoo *f = NULL, *g = NULL;
        if (!strcmp(name, "cuckoo")) {
            if (bk_cuckoo_new(n, 0.01, NULL, &f) != BK_OK || bk_cuckoo_new(n, 0.01, NULL, &g) != BK_OK) return false;
        } else {
            f = bench_cuckoo_p2_create(n, 0.01);
            g = bench_cuckoo_p2_create(n, 0.01);
        }
        cfp_t *p = bench_cfpeer.create(n, 0.01);
        if (!f || !g || !p) return false;
        b->ph.mul = p->mul;
        b->ph.add = p->add;
        for (uint64_t i = 0; i < n; i++) {
            if (bk_cuckoo_add_u64(f, keys[i]) != BK_OK) return false;
            if (bk_cuckoo_add_hash(g, cfp_hash(p->mul, p->add, keys[i])) != BK_OK) return false;
            bench_cfpeer.add(p, &keys[i], 8);
        }
        if (bk_cuckoo_get_reader(f, &b->rd.c) != BK_OK || bk_cuckoo_get_reader(g, &b->ph.rd.c) != BK_OK) return false;
        b->bk_ph = g;
        bk_cuckoo_stats(f, &st);
        *fam = (family){ name, "cuckoofilter", { cuckoo_bytes, cuckoo_u64, cuckoo_reader, cfp_q, cuckoo_rdph },
                         { f, f, &b->rd.c, p, &b->ph }, { bits_of(&st, n), (double)bench_cfpeer.bytes(p) * 8.0 / (double)n } };
        b->bk = f;
        b->peer = p;
        b->bk_free = cuckoo_free_;
        b->peer_free = bench_cfpeer.destroy;
    }
    return true;
}

#define MAXR 64

static volatile uint64_t warm_sink; /* the warm-up passes' answers, kept */

/* MiB of this process's memory on transparent huge pages (both sides' large arrays ask for them). */
static double huge_mib(void)
{
    char line[256];
    double kb = -1;
    FILE *fp = fopen("/proc/self/smaps_rollup", "r");
    if (!fp) return -1;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "AnonHugePages: %lf kB", &kb) == 1) break;
    fclose(fp);
    return kb / 1024.0;
}

/* Contender c's column and its ratio to the peer's: its best ns per query ("%.1f") and best / the peer's
 * best ("%.2f"); "-" where it did not run (best < 0), and for the ratio also where the peer did not. */
static void best_cell(const double *best, int c, char ns[16], char ratio[16])
{
    strcpy(ns, "-");
    strcpy(ratio, "-");
    if (best[c] < 0) return;
    snprintf(ns, 16, "%.1f", best[c]);
    if (best[C_PEER] >= 0) snprintf(ratio, 16, "%.2f", best[c] / best[C_PEER]);
}

int main(int argc, char **argv)
{
    uint64_t ns[8] = { 1000000, 10000000 };
    int nn = 2, rounds = 5;
    uint64_t qmax = 2000000;
    const char *only = NULL, *cols = NULL;
    bool hashes = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            nn = 0;
            for (char *s = argv[++i]; *s && nn < 8;) {
                char *e;
                ns[nn++] = (uint64_t)strtod(s, &e);
                s = *e == ',' ? e + 1 : e;
                if (e == s && *s) break;
            }
        } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-q") && i + 1 < argc) {
            qmax = (uint64_t)strtod(argv[++i], NULL);
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--col") && i + 1 < argc) {
            cols = argv[++i];
        } else if (!strcmp(argv[i], "--hashes")) {
            hashes = true;
        } else {
            fprintf(stderr, "usage: calls [-n N[,N...]] [-r ROUNDS] [-q QUERIES] "
                            "[--only bloom,blocked,fuse,cuckoo,cuckoo-p2] [--col bytes,u64,reader,peer,rd-ph] "
                            "| --hashes [-r ROUNDS]\n");
            return 2;
        }
    }
    if (rounds < 1) rounds = 1;
    if (rounds > MAXR) rounds = MAXR;
    if (hashes) return run_hashes(rounds);
    static const char *const FAMILIES[] = { "bloom", "blocked", "fuse", "cuckoo", "cuckoo-p2" };
    bu_print_loadavg("at start");
    printf("clock at start: %.2f GHz (a chain of dependent adds; cycles per query = ns x GHz)\n", clock_ghz());
    printf("8-byte keys, p = 1%%, ns per query on the thread's CPU clock, fastest of %d interleaved rounds; "
           "x/p = ours / peer's\n", rounds);
    for (int ni = 0; ni < nn; ni++) {
        uint64_t n = ns[ni], q = n < qmax ? n : qmax;
        /* keys: [0, n) inserted, [n, n + q) absent */
        uint64_t *keys = malloc((n + q) * sizeof *keys), st = 12345;
        const void **ptrs = malloc(n * sizeof *ptrs);
        size_t *lens = malloc(n * sizeof *lens);
        if (!keys || !ptrs || !lens) return 1;
        for (uint64_t i = 0; i < n + q; i++) keys[i] = bu_splitmix64(&st);
        for (uint64_t i = 0; i < n; i++) {
            ptrs[i] = &keys[i];
            lens[i] = 8;
        }
        printf("\nn = %llu (queries: %llu per hit rate)\n", (unsigned long long)n, (unsigned long long)q);
        bu_print_loadavg("before n");
        printf("%-9s %-5s %7s %7s %7s %7s %7s %7s %7s %7s %11s %11s %7s\n", "family", "op", "bytes", "u64", "reader",
               "peer", "bytes/p", "u64/p", "rd/p", "rd-ph/p", "u64/p range", "rd/p range", "rd-ph");
        for (size_t fi = 0; fi < sizeof FAMILIES / sizeof FAMILIES[0]; fi++) {
            if (!bu_selected(only, FAMILIES[fi])) continue;
            family fam;
            built b;
            if (!build(FAMILIES[fi], keys, (const void *const *)ptrs, lens, n, &fam, &b)) {
                fprintf(stderr, "%s: build failed\n", FAMILIES[fi]);
                return 1;
            }
            for (int c = 0; c < NC; c++)
                if (!bu_selected(cols, CNAME[c])) fam.loop[c] = NULL;
            static double t[2][NC][MAXR];
            uint64_t hits[2][NC] = { { 0 } };
            for (int r = 0; r < rounds; r++)
                for (int j = 0; j < NC; j++) {
                    int c = (j + r) % NC;
                    if (!fam.loop[c]) continue;
                    /* warm-up, untimed: the contender's own array into the caches as far as it fits,
                     * so that no timed run pays for the array the previous contender left there (the
                     * run after another side's would start cold, the next one warm) */
                    warm_sink += fam.loop[c](fam.state[c], keys + n, q);
                    for (int o = 0; o < 2; o++) {
                        const uint64_t *qk = o == 0 ? keys : keys + n;
                        double t0 = bu_cpu_ns();
                        hits[o][c] = fam.loop[c](fam.state[c], qk, q);
                        t[o][c][r] = (bu_cpu_ns() - t0) / (double)q;
                    }
                }
            const char *ops[2] = { "q100%", "q0%" };
            for (int o = 0; o < 2; o++) {
                double best[NC], lo[2] = { 1e9, 1e9 }, hi[2] = { 0, 0 };
                for (int c = 0; c < NC; c++) {
                    best[c] = -1;
                    if (!fam.loop[c]) continue;
                    for (int r = 0; r < rounds; r++)
                        if (best[c] < 0 || t[o][c][r] < best[c]) best[c] = t[o][c][r];
                }
                for (int r = 0; r < rounds; r++)
                    for (int x = 0; x < 2; x++) {
                        int c = x ? C_READER : C_U64;
                        if (!fam.loop[c] || !fam.loop[C_PEER]) continue;
                        double v = t[o][c][r] / t[o][C_PEER][r];
                        if (v < lo[x]) lo[x] = v;
                        if (v > hi[x]) hi[x] = v;
                    }
                char rng[2][24];
                for (int x = 0; x < 2; x++) {
                    if (hi[x] > 0)
                        snprintf(rng[x], sizeof rng[x], "%.2f-%.2f", lo[x], hi[x]);
                    else
                        snprintf(rng[x], sizeof rng[x], "-");
                }
                char cell[NC][16], ratio[NC][16];
                for (int c = 0; c < NC; c++) best_cell(best, c, cell[c], ratio[c]);
                printf("%-9s %-5s %7s %7s %7s %7s %7s %7s %7s %7s %11s %11s %7s\n", o ? "" : fam.name, ops[o],
                       cell[C_BYTES], cell[C_U64], cell[C_READER], cell[C_PEER], ratio[C_BYTES], ratio[C_U64],
                       ratio[C_READER], ratio[C_RDPH], rng[0], rng[1], cell[C_RDPH]);
            }
            /* the fairness check: no false negatives anywhere, and each side's FPR and bits per key */
            printf("          peer: %s; bits/key ours %.2f, peer %.2f; huge pages %.0f MiB; FN", fam.peer_name,
                   fam.bits_per_key[0], fam.bits_per_key[1], huge_mib());
            for (int c = 0; c < NC; c++)
                if (fam.loop[c]) printf(" %s %llu", CNAME[c], (unsigned long long)(q - hits[0][c]));
            printf("; FPR");
            for (int c = 0; c < NC; c++)
                if (fam.loop[c]) printf(" %s %.3f%%", CNAME[c], 100.0 * (double)hits[1][c] / (double)q);
            printf("\n");
            b.bk_free(b.bk);
            if (b.bk_ph) b.bk_free(b.bk_ph);
            b.peer_free(b.peer);
        }
        free(keys);
        free(ptrs);
        free(lens);
    }
    bu_print_loadavg("at end");
    printf("clock at end: %.2f GHz\n", clock_ghz());
    return 0;
}
