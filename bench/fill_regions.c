/*
 * fill_regions: the classic filter's whole fill (bk_bloom_add_hashes, what `bloomkit build` runs on
 * one thread) against two ways of setting the same number of random bits by region of the bit array,
 * to see whether sorting the bit sets into cache-sized regions pays for itself.
 *
 *   fill_regions [-n N] [-p P] [-R REGION_BITS_LOG2] [-S STAGING_LOG2] [-r ROUNDS]
 *
 * The library's filter is sized for N keys (default 10M) at P (1%: 11.4 MiB, k = 7) and filled with N
 * random hashes. The rows below it set k bits per hash in an array of the same size from positions of
 * their own (k multiply-shift positions of a 64-bit mix of the hash: uniformly random, as the
 * library's are; the same positions in every row, so each row's array must equal the first's):
 * - prefetched: the library's scheme in this program: the positions of 16 hashes into a buffer, their
 *   lines prefetched, then the previous 16 hashes' bits set;
 * - regions: the positions of 256 hashes into a buffer, then each appended to its region's staging
 *   buffer (2^S 32-bit positions a region; regions of 2^R bits); a full staging buffer is applied at
 *   once (its region's lines then hit in L1/L2), the rest at the end;
 * - write-combining: the same, through a 64-byte line of positions per region that is copied whole
 *   into the staging buffer when full;
 * - scatter only: the regions row without applying (the cost of the sorting alone);
 * - apply only: applying full staging buffers of random positions, region after region (the cost of
 *   the bit sets once sorted).
 * Arrays are allocated and advised for transparent huge pages as the library's. Rounds are
 * interleaved, the fastest kept; times on the thread's CPU clock. Prints the load average.
 */
#define _DEFAULT_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <bloomkit/bloomkit.h>
#include "benchutil.h"

__extension__ typedef unsigned __int128 u128;

static uint64_t *words_alloc(size_t bytes)
{
    const size_t huge = (size_t)2 << 20, r = (bytes + huge - 1) / huge * huge;
    uint64_t *p = aligned_alloc(huge, r);
    if (!p) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, r, MADV_HUGEPAGE);
#endif
    memset(p, 0, r);
    return p;
}

/* k positions in [0, m) of hash h */
static inline void positions(uint64_t h, uint64_t m, uint32_t k, uint32_t *out)
{
    uint64_t a = bu_mix64(h), b = bu_mix64(h ^ UINT64_C(0x9e3779b97f4a7c15)) | 1;
    for (uint32_t i = 0; i < k; i++, a += b) out[i] = (uint32_t)(((u128)a * m) >> 64);
}

static inline void set_bits(uint64_t *w, const uint32_t *s, size_t n)
{
    for (size_t q = 0; q < n; q++) w[s[q] >> 6] |= UINT64_C(1) << (s[q] & 63);
}

static void fill_prefetched(uint64_t *w, uint64_t m, uint32_t k, const uint64_t *hs, size_t n)
{
    enum { B = 16 };
    uint32_t pos[2][B * 64];
    size_t c[2] = { 0, 0 };
    unsigned cur = 0;
    for (size_t i = 0; i < n + B; i += B) {
        const unsigned nx = cur ^ 1;
        size_t q = 0;
        for (size_t j = i; j < n && j < i + B; j++, q += k) positions(hs[j], m, k, pos[nx] + q);
        for (size_t x = 0; x < q; x++) __builtin_prefetch(&w[pos[nx][x] >> 6], 1, 3);
        c[nx] = q;
        set_bits(w, pos[cur], c[cur]);
        cur = nx;
    }
}

typedef struct regions {
    unsigned rb, sb;   /* region of 2^rb bits, staging of 2^sb positions */
    size_t nr;
    uint32_t *stage;   /* nr << sb */
    uint32_t *fill;    /* nr */
    uint32_t (*line)[16]; /* nr lines (write-combining) */
    uint8_t *lfill;
} regions;

/* mode 0: regions, 1: write-combining, 2: scatter only */
static void fill_regions(uint64_t *w, uint64_t m, uint32_t k, const uint64_t *hs, size_t n, regions *g, int mode)
{
    enum { B = 256 };
    uint32_t buf[B * 64];
    const uint32_t S = UINT32_C(1) << g->sb;
    memset(g->fill, 0, g->nr * sizeof *g->fill);
    memset(g->lfill, 0, g->nr);
    for (size_t i = 0; i < n; i += B) {
        size_t q = 0;
        for (size_t j = i; j < n && j < i + B; j++, q += k) positions(hs[j], m, k, buf + q);
        for (size_t x = 0; x < q; x++) {
            const uint32_t b = buf[x], r = b >> g->rb;
            uint32_t *st = g->stage + ((size_t)r << g->sb);
            if (mode == 1) {
                unsigned l = g->lfill[r];
                g->line[r][l] = b;
                g->lfill[r] = (uint8_t)((l + 1) & 15);
                if (l != 15) continue;
                memcpy(st + g->fill[r], g->line[r], sizeof g->line[r]);
                g->fill[r] += 16;
            } else {
                st[g->fill[r]++] = b;
            }
            if (g->fill[r] == S) {
                if (mode != 2) set_bits(w, st, S);
                g->fill[r] = 0;
            }
        }
    }
    if (mode == 2) return;
    for (size_t r = 0; r < g->nr; r++) {
        set_bits(w, g->stage + (r << g->sb), g->fill[r]);
        if (mode == 1) set_bits(w, g->line[r], g->lfill[r]);
    }
}

/* total bit sets from full staging buffers, region after region */
static void apply_only(uint64_t *w, size_t total, regions *g)
{
    const size_t S = (size_t)1 << g->sb;
    for (size_t done = 0, r = 0; done < total; done += S, r = (r + 1) % g->nr)
        set_bits(w, g->stage + (r << g->sb), S);
}

int main(int argc, char **argv)
{
    double n_d = 1e7, p = 0.01;
    unsigned rb = 20, sb = 15;
    int rounds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n")) n_d = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "-p")) p = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "-R")) rb = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-S")) sb = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-r")) rounds = atoi(argv[i + 1]);
        else return fprintf(stderr, "usage: fill_regions [-n N] [-p P] [-R BITS] [-S LOG2] [-r ROUNDS]\n"), 2;
    }
    const size_t n = (size_t)n_d;
    bk_bloom *f = NULL;
    if (n < 1 || rb < 9 || rb > 31 || sb < 4 || sb > 24 || bk_bloom_new(n, p, NULL, &f) != BK_OK)
        return fprintf(stderr, "fill_regions: bad arguments\n"), 2;
    bk_stats st;
    bk_bloom_stats(f, &st);
    const uint64_t m = st.bits;
    const uint32_t k = st.k;
    if (m >= (UINT64_C(1) << 32) || k > 64) return fprintf(stderr, "fill_regions: m must be below 2^32\n"), 2;
    regions g = { rb, sb, (size_t)((m + (UINT64_C(1) << rb) - 1) >> rb), NULL, NULL, NULL, NULL };
    const size_t bytes = (size_t)((m + 511) / 512 * 64);
    uint64_t *hs = malloc(n * sizeof *hs), *w0 = words_alloc(bytes), *w = words_alloc(bytes), s = 42;
    g.stage = (uint32_t *)(void *)words_alloc((g.nr << sb) * sizeof *g.stage);
    g.fill = calloc(g.nr, sizeof *g.fill);
    g.line = aligned_alloc(64, g.nr * sizeof *g.line);
    g.lfill = calloc(g.nr, 1);
    if (!hs || !w0 || !w || !g.stage || !g.fill || !g.line || !g.lfill) return fprintf(stderr, "out of memory\n"), 1;
    for (size_t i = 0; i < n; i++) hs[i] = bu_splitmix64(&s);
    printf("fill_regions: %zu hashes, m = %llu bits (%.1f MiB), k = %u; regions of 2^%u bits (%zu), staging "
           "2^%u positions a region (%.1f MiB in all)\n",
           n, (unsigned long long)m, bytes / 1048576.0, k, rb, g.nr, sb,
           (double)(g.nr << sb) * 4 / 1048576.0);
    bu_print_loadavg("start");
    const char *name[6] = { "library bk_bloom_add_hashes", "prefetched", "regions", "write-combining",
                            "scatter only", "apply only" };
    double best[6];
    for (int v = 0; v < 6; v++) best[v] = 1e300;
    for (int rd = 0; rd < rounds; rd++) {
        for (int v = 0; v < 5; v++) {
            bk_bloom_clear(f);
            memset(v == 1 ? w0 : w, 0, bytes);
            double t0 = bu_cpu_ns();
            switch (v) {
            case 0: bk_bloom_add_hashes(f, hs, n); break;
            case 1: fill_prefetched(w0, m, k, hs, n); break;
            default: fill_regions(w, m, k, hs, n, &g, v - 2); break;
            }
            double t = bu_cpu_ns() - t0;
            if (t < best[v]) best[v] = t;
            if ((v == 2 || v == 3) && memcmp(w0, w, bytes) != 0) {
                fprintf(stderr, "fill_regions: %s set other bits than prefetched\n", name[v]);
                return 1;
            }
        }
    }
    /* apply only, on staging buffers of random positions in their regions */
    for (size_t r = 0; r < g.nr; r++)
        for (size_t q = 0; q < ((size_t)1 << sb); q++)
            g.stage[(r << sb) + q] = (uint32_t)(((r << rb) + (bu_splitmix64(&s) & ((UINT64_C(1) << rb) - 1))) % m);
    for (int rd = 0; rd < rounds; rd++) {
        memset(w, 0, bytes);
        double t0 = bu_cpu_ns();
        apply_only(w, n * k, &g);
        double t = bu_cpu_ns() - t0;
        if (t < best[5]) best[5] = t;
    }
    printf("%-30s %10s %12s %10s\n", "fill", "ms", "ns a bit set", "x library");
    for (int v = 0; v < 6; v++)
        printf("%-30s %10.1f %12.2f %9.2fx\n", name[v], best[v] / 1e6, best[v] / ((double)n * k), best[v] / best[0]);
    bu_print_loadavg("end");
    bk_bloom_free(f);
    return 0;
}
