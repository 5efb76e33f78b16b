/*
 * ribbon_rows: the query of other Ribbon rows and layouts than body 2's, timed on random solutions of
 * the size a filter of n keys at p would have, beside the library's Ribbon filter and fuse8 built from
 * the same keys (answers meaningless, times and memory traffic not), and how often a first attempt of
 * standard Ribbon insertion succeeds at a width, a set size and a slack.
 *
 *   ribbon_rows query N P        one-key ns (best of 3 rounds of 2e6 calls over present and absent keys
 *                                alike) and cache lines a key reads, for:
 *                                w128: width 128, body 2's three 64-slot segments and column split, one
 *                                      band (no shards), the start from one multiply-high of the hash,
 *                                      the coefficients the 128-bit product of the hash and a constant;
 *                                w128s: the same with a shard table (pick, rehash and the shard's
 *                                      geometry, as body 2 has them);
 *                                w64: width 64, two 64-slot segments, a 64-bit product as the row;
 *                                then body 2 and fuse8 (the library's).
 *   ribbon_rows insert W N E T   first attempts that succeed among T (W = 64 or 128, N keys, slots
 *                                N (1 + E) + W, random rows with the first bit set, every vanished
 *                                row a failure, as with many columns)
 *
 * The kernels need AVX-512 with VPOPCNTDQ (x86-64, GCC or Clang); elsewhere `query` prints only the
 * library's figures.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bloomkit/bloomkit.h>
#include "benchutil.h"

__extension__ typedef unsigned __int128 u128;
#define ROW_MUL UINT64_C(0xff51afd7ed558ccd)
#define SHARD_MUL UINT64_C(0xd6e8feb86659fd93)

static uint64_t mulhi(uint64_t a, uint64_t b) { return (uint64_t)(((u128)a * b) >> 64); }

/* A solution's layout: words in segments of 64 slots, segment g with lo columns below upper2, lo + 1
 * from there; starts in [0, nstarts). */
typedef struct {
    const uint64_t *w;
    uint64_t nstarts, upper2;
    uint32_t lo;
} layout;

typedef struct {
    uint64_t off, seed, nstarts, upper2;
} shard;

static const shard *g_shards;
static uint64_t g_nshards;

/* Segment g's first word and its columns, and the next segment's columns. */
static inline const uint64_t *seg_at(const layout *l, uint64_t base, uint64_t upper2, uint64_t g, uint64_t *cols,
                                     uint64_t *next_cols)
{
    const uint64_t d = g - upper2;
    const uint64_t neg = (uint64_t)((int64_t)d >> 63), neg1 = (uint64_t)((int64_t)(d + 1) >> 63);
    *cols = l->lo + 1 + neg;
    *next_cols = l->lo + 1 + neg1;
    return l->w + base + g * l->lo + (d & ~neg);
}

#if defined(__x86_64__) && defined(__GNUC__)
#  define HAVE_KERNELS 1
#  define T512 __attribute__((target("avx2,bmi2,popcnt,avx512f,avx512vpopcntdq")))
#  include <immintrin.h>

/* Parities of eight columns a round: the masked words of each segment XORed, each lane's parity. */
T512 static inline uint64_t dots(const uint64_t *const *s, const uint64_t *m, int nseg, unsigned rounds)
{
    uint64_t got = 0;
    for (unsigned r = 0; r < rounds; r++) {
        __m512i v = _mm512_and_si512(_mm512_loadu_si512((const void *)(s[0] + 8 * r)), _mm512_set1_epi64((long long)m[0]));
        for (int k = 1; k < nseg; k++)
            v = _mm512_ternarylogic_epi64(v, _mm512_loadu_si512((const void *)(s[k] + 8 * r)),
                                          _mm512_set1_epi64((long long)m[k]), 0x78);
        v = _mm512_slli_epi64(_mm512_popcnt_epi64(v), 63);
        got |= (uint64_t)_mm512_test_epi64_mask(v, v) << (8 * r);
    }
    return got;
}

/* Width 128 (sharded or not): three segments, three masks. */
T512 static inline int q128(const layout *l, uint64_t h, unsigned rounds, bool sharded)
{
    uint64_t x = h, nstarts = l->nstarts, upper2 = l->upper2, base = 0;
    if (sharded) {
        const shard *sh = &g_shards[mulhi(h, g_nshards)];
        x = (h ^ sh->seed) * SHARD_MUL;
        nstarts = sh->nstarts;
        upper2 = sh->upper2;
        base = sh->off;
    }
    const uint64_t st = mulhi(x, nstarts), r = st & 63;
    const u128 c = (u128)x * ROW_MUL;
    const uint64_t L = (uint64_t)c | 1, H = (uint64_t)(c >> 64);
    uint64_t cols, next;
    const uint64_t *s[3];
    s[0] = seg_at(l, base, upper2, st >> 6, &cols, &next);
    s[1] = s[0] + cols;
    s[2] = s[1] + next;
    const uint64_t m[3] = { L << r, (H << r) | ((L >> 1) >> (63 - r)), (H >> 1) >> (63 - r) };
    return ((dots(s, m, 3, rounds) ^ (x >> 32)) & ((UINT64_C(1) << cols) - 1)) == 0;
}

/* Width 64: two segments, two masks. */
T512 static inline int q64(const layout *l, uint64_t h, unsigned rounds)
{
    const uint64_t st = mulhi(h, l->nstarts), r = st & 63, c = (h * ROW_MUL) | 1;
    uint64_t cols, next;
    const uint64_t *s[2];
    s[0] = seg_at(l, 0, l->upper2, st >> 6, &cols, &next);
    s[1] = s[0] + cols;
    const uint64_t m[2] = { c << r, (c >> 1) >> (63 - r) };
    return ((dots(s, m, 2, rounds) ^ (h >> 32)) & ((UINT64_C(1) << cols) - 1)) == 0;
}

typedef int kernel(const layout *, uint64_t);
#  define KERNELS(r)                                                                                        \
    T512 __attribute__((noinline)) static int k128_##r(const layout *l, uint64_t h) { return q128(l, h, r, false); } \
    T512 __attribute__((noinline)) static int k128s_##r(const layout *l, uint64_t h) { return q128(l, h, r, true); } \
    T512 __attribute__((noinline)) static int k64_##r(const layout *l, uint64_t h) { return q64(l, h, r); }
KERNELS(1)
KERNELS(2)
KERNELS(3)
static kernel *const kernels[3][3] = {
    { k128_1, k128_2, k128_3 },
    { k128s_1, k128s_2, k128s_3 },
    { k64_1, k64_2, k64_3 },
};
#endif

/* Lines of 64 bytes a key reads: its segments' columns, in a row from the first. */
static double lines_per_key(const layout *l, const uint64_t *q, size_t n, int nseg)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t st = mulhi(q[i], l->nstarts), cols, next;
        const uint64_t *s0 = seg_at(l, 0, l->upper2, st >> 6, &cols, &next);
        uintptr_t a = (uintptr_t)s0, e = a + 8 * (cols + (nseg == 3 ? cols + next : next));
        sum += (double)(((e - 1) >> 6) - (a >> 6) + 1);
    }
    return sum / (double)n;
}

static int query(size_t n, double p)
{
    const size_t q = 2000000;
    uint64_t *keys = malloc(n * sizeof *keys), *mix = malloc(q * sizeof *mix), s = 42, s2 = 0xabcdef;
    if (!keys || !mix) return 1;
    for (size_t i = 0; i < n; i++) keys[i] = bu_splitmix64(&s);
    for (size_t i = 0; i < q; i++) mix[i] = (i & 1) ? bu_splitmix64(&s2) : keys[(i * 7919) % n];
    bu_print_loadavg("at start");
    const double bits = log2(1.0 / p);
    const uint32_t lo = (uint32_t)floor(bits);
#ifdef HAVE_KERNELS
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq")) {
        static const char *const name[3] = { "w128", "w128s", "w64" };
        for (int v = 0; v < 3; v++) {
            const int w = v == 2 ? 64 : 128;
            /* slots per key as the widths need them (1.02 and 1.05), the lo + 1 share as the bits ask */
            const uint64_t segs = (uint64_t)((double)n * (w == 128 ? 1.02 : 1.05)) / 64 + 2;
            layout l = { NULL, (segs - (uint64_t)w / 64) * 64, (uint64_t)((double)segs * (1.0 - (bits - lo))), lo };
            const uint64_t nw = segs * (lo + 1) + 64; /* a multiple of 8: 64-byte lines from a 64-byte start */
            uint64_t *words = aligned_alloc(64, ((nw + 7) / 8) * 64);
            shard *sh = NULL;
            if (!words) return 1;
            for (uint64_t i = 0; i < nw; i++) words[i] = bu_mix64(i);
            l.w = words;
            if (v == 1) {
                g_nshards = n / 32768 ? n / 32768 : 1;
                sh = malloc(g_nshards * sizeof *sh);
                if (!sh) return 1;
                const uint64_t per = segs / g_nshards, up = (uint64_t)((double)per * (1.0 - (bits - lo)));
                for (uint64_t i = 0; i < g_nshards; i++)
                    sh[i] = (shard){ i * (per * lo + (per - up)), bu_mix64(i + 7), (per - 2) * 64, up };
                g_shards = sh;
            }
            kernel *k = kernels[v][(lo + 1 + 7) / 8 - 1];
            double best = INFINITY;
            size_t hits = 0;
            for (int r = 0; r < 3; r++) {
                double t0 = bu_cpu_ns();
                hits = 0;
                for (size_t i = 0; i < q; i++) hits += (size_t)k(&l, mix[i]);
                double t = bu_cpu_ns() - t0;
                if (t < best) best = t;
            }
            printf("%-7s n %zu p %g: %.1f ns a key, %.2f lines a key, %.1f MB (%zu hits)\n", name[v], n, p,
                   best / (double)q, lines_per_key(&l, mix, 100000, w == 128 ? 3 : 2), (double)nw * 8 / 1e6, hits);
            free(sh);
            free(words);
        }
    } else
#endif
        printf("(no AVX-512 VPOPCNTDQ: the library's figures only)\n");
    bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
    o.fpr = p;
    bk_fuse_options fo = BK_FUSE_OPTIONS_INIT;
    bk_ribbon *rf;
    bk_fuse *ff;
    if (bk_ribbon_build_hashes(keys, n, &o, &rf) != BK_OK || bk_fuse_build_hashes(keys, n, &fo, &ff) != BK_OK) return 1;
    double br = INFINITY, bf = INFINITY;
    size_t hr = 0, hf = 0;
    for (int r = 0; r < 3; r++) {
        double t0 = bu_cpu_ns();
        hr = 0;
        for (size_t i = 0; i < q; i++) hr += bk_ribbon_contains_hash(rf, mix[i]);
        double t1 = bu_cpu_ns();
        hf = 0;
        for (size_t i = 0; i < q; i++) hf += bk_fuse_contains_hash(ff, mix[i]);
        double t2 = bu_cpu_ns();
        if (t1 - t0 < br) br = t1 - t0;
        if (t2 - t1 < bf) bf = t2 - t1;
    }
    printf("ribbon  n %zu p %g: %.1f ns a key (%zu hits)\nfuse8   n %zu: %.1f ns a key (%zu hits)\n", n, p,
           br / (double)q, hr, n, bf / (double)q, hf);
    bu_print_loadavg("at end");
    bk_ribbon_free(rf);
    bk_fuse_free(ff);
    free(keys);
    free(mix);
    return 0;
}

/* First attempts of standard insertion that succeed: each row XORs the row kept at its first slot
 * and moves to its new first one-bit until a free slot takes it; a row that vanishes fails it. */
static int insert(int w, size_t n, double eps, int trials)
{
    const size_t m = (size_t)((double)n * (1.0 + eps)) + (size_t)w, starts = m - (size_t)w + 1;
    u128 *row = malloc((m + 128) * sizeof *row);
    if (!row) return 1;
    uint64_t s = 12345;
    int ok = 0;
    for (int t = 0; t < trials; t++) {
        memset(row, 0, (m + 128) * sizeof *row);
        bool fail = false;
        for (size_t i = 0; i < n && !fail; i++) {
            size_t st = (size_t)mulhi(bu_splitmix64(&s), starts);
            uint64_t a = bu_splitmix64(&s), b = bu_splitmix64(&s);
            u128 c = w == 64 ? (u128)(a | 1) : (((u128)b << 64) | a | 1);
            for (;;) {
                if (!(row[st] & 1)) {
                    row[st] = c;
                    break;
                }
                c ^= row[st];
                if (!c) {
                    fail = true;
                    break;
                }
                unsigned k = (uint64_t)c ? (unsigned)__builtin_ctzll((uint64_t)c)
                                         : 64 + (unsigned)__builtin_ctzll((uint64_t)(c >> 64));
                c >>= k;
                st += k;
            }
        }
        ok += !fail;
    }
    printf("width %d, %zu keys, slack %.4f: %d of %d first attempts succeed\n", w, n, eps, ok, trials);
    free(row);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "query")) return query((size_t)strtod(argv[2], NULL), strtod(argv[3], NULL));
    if (argc == 6 && !strcmp(argv[1], "insert") && (atoi(argv[2]) == 64 || atoi(argv[2]) == 128))
        return insert(atoi(argv[2]), (size_t)strtod(argv[3], NULL), strtod(argv[4], NULL), atoi(argv[5]));
    fprintf(stderr, "usage: ribbon_rows query N P | ribbon_rows insert 64|128 N SLACK TRIALS\n");
    return 2;
}
