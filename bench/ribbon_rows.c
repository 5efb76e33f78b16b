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
 *   ribbon_rows burr W N P [OVER [T1 [T2 [ROUNDS [CHUNK [DUPS]]]]]]
 *                                a bumped Ribbon of width W (64, 32 or 16) built on N keys: space, FPR,
 *                                bumped share, build phases, and its one-key time beside body 2 and
 *                                fuse8; CHUNK > 0 solves layer 0 by chunks of CHUNK blocks; DUPS: that
 *                                share of the keys repeats earlier ones (see the section below and
 *                                bench/README.md)
 *
 * The kernels need AVX-512 with VPOPCNTDQ (x86-64, GCC or Clang; width 16 also BITALG and BW);
 * elsewhere `query` prints only the library's figures and `burr` its space and FPR.
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
#  define T512B __attribute__((target("avx2,bmi2,popcnt,avx512f,avx512vpopcntdq,avx512bw,avx512bitalg")))
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

/* ---- Bumped Ribbon, width 64 or 32 (the `burr` mode): a real construction on N keys ----
 *
 * Layer layout: blocks of w slots (w = 64 or 32), block b's columns stored one after the other as w-bit
 * words (bit t: slot t of the block), blocks [0, upper) with lo columns, [upper, nblocks) with lo + 1,
 * block b's words at b * lo + max(0, b - upper): a key's row (w slots from its start) covers its block
 * and the next one, 2 c words in a row (16 c bytes at width 64, 8 c at 32). Keys start in the first
 * nblocks - 1 blocks. A block is also a bucket: 2 bits a block pick a threshold among (0, t1, t2, w);
 * a key whose offset in its block is below its block's threshold is bumped: it is not in this layer's
 * system and is looked up in the next layer. Each layer is built bucket by bucket in order of the
 * blocks: the bucket's keys at or above the smallest threshold are inserted (standard Ribbon
 * insertion); if one of them is dependent on the rows so far, the bucket's insertions are undone and
 * the next threshold tried (w bumps the whole bucket and always succeeds). Layers have n (1 - over)
 * slots for their n keys (over > 0: overloaded, the bumped keys take the excess) until fewer than
 * 2,048 keys are left; the last layer bumps nothing (thresholds all 0), has n * 1.25 + 64 slots and
 * is retried with a new seed until its system solves. A query reads layer 0's 2-bit field and, unless
 * bumped, its row; only a bumped key (under 1% at over 0) goes on.
 *
 * Layer 0 takes the hash as x; layer k > 0 takes x = mix(h + seed_k). From x: the start is the high
 * half of x * nstarts, the 128-bit product x * ROW_MUL gives the coefficients (its low w bits, bit 0
 * set) and the fingerprint (its high half).
 */
#define BL_MAX 16
static double g_alloc_ns, g_sort_ns, g_insert_ns, g_back_ns; /* the build's phases, all layers */
typedef struct {
    void *w;       /* w-bit words */
    uint8_t *meta; /* 2 bits a block, four blocks a byte */
    uint64_t nblocks, nstarts, upper, seed, nwords;
    uint32_t lo;
} blayer;

typedef struct {
    blayer L[BL_MAX];
    int nl;
    unsigned w, sh; /* width and its log2 */
    uint32_t thr;   /* the four thresholds, a byte each */
} burr;

static inline uint64_t bl_x(const blayer *L, int k, uint64_t h) { return k ? bu_mix64(h + L->seed) : h; }

static inline uint64_t bl_base(const blayer *L, uint64_t b, uint32_t *cols)
{
    *cols = L->lo + (b >= L->upper);
    return b * L->lo + (b > L->upper ? b - L->upper : 0);
}

static inline uint64_t bl_word(const burr *B, const blayer *L, uint64_t i)
{
    return B->w == 64 ? ((const uint64_t *)L->w)[i]
                      : B->w == 32 ? ((const uint32_t *)L->w)[i] : ((const uint16_t *)L->w)[i];
}

static inline uint64_t bl_wmask(const burr *B) { return B->w == 64 ? ~UINT64_C(0) : (UINT64_C(1) << B->w) - 1; }

/* The lo + 1 share of a layer's blocks as the bits ask (p between 2^-(lo+1) and 2^-lo): upper = the
 * blocks with lo columns, so that the mean of 2^-cols over the starting blocks is at most p. */
static uint64_t bl_upper(uint64_t nblocks, uint32_t lo, double p)
{
    const uint64_t starts = nblocks - 1;
    const double a = ldexp(1.0, -(int)lo), b = ldexp(1.0, -(int)(lo + 1));
    double u = floor((double)starts * (p - b) / (a - b));
    if (!(u >= 0)) u = 0;
    if (u >= (double)starts) return nblocks;
    return (uint64_t)u;
}

/* The scalar query of one layer: -1 bumped, else whether the key's row matches. */
static int bl_query(const burr *B, int k, uint64_t h)
{
    const blayer *L = &B->L[k];
    const uint64_t x = bl_x(L, k, h), st = mulhi(x, L->nstarts), b = st >> B->sh, o = st & (B->w - 1);
    const unsigned ti = (L->meta[b >> 2] >> ((b & 3) * 2)) & 3;
    if (o < ((B->thr >> (8 * ti)) & 0xff)) return -1;
    const u128 c = (u128)x * ROW_MUL;
    const uint64_t wm = bl_wmask(B), cf = ((uint64_t)c | 1) & wm, fp = (uint64_t)(c >> 64);
    uint32_t cols;
    const uint64_t s0 = bl_base(L, b, &cols), s1 = s0 + cols;
    const uint64_t m0 = (cf << o) & wm, m1 = (cf >> 1) >> (B->w - 1 - o);
    for (uint32_t j = 0; j < cols; j++)
        if ((unsigned)__builtin_parityll((bl_word(B, L, s0 + j) & m0) ^ (bl_word(B, L, s1 + j) & m1)) !=
            ((fp >> j) & 1))
            return 0;
    return 1;
}

static int burr_contains(const burr *B, uint64_t h)
{
    for (int k = 0; k < B->nl; k++) {
        int r = bl_query(B, k, h);
        if (r >= 0) return r;
    }
    return 0; /* not reached: the last layer bumps nothing */
}

/* Back substitution of rows [0, rows) of layer L, whose row i is slot b0 * W + i: every column
 * (lo + 1) solved from the last row up, stored where the row's block has the column. */
static void bl_back(blayer *L, unsigned w, unsigned sh, uint32_t lo, const uint64_t *rc, const uint64_t *rf,
                    uint64_t rows, uint64_t b0)
{
    uint64_t win[32] = { 0 };
    for (uint64_t i = rows; i-- > 0;) {
        uint32_t cols;
        const uint64_t base = bl_base(L, b0 + (i >> sh), &cols);
        for (uint32_t j = 0; j <= lo; j++) {
            uint64_t s = 0;
            if (rc[i]) s = ((rf[i] >> j) & 1) ^ (uint64_t)__builtin_parityll((rc[i] >> 1) & win[j]);
            win[j] = (win[j] << 1) | s;
            if (j < cols) {
                if (w == 64)
                    ((uint64_t *)L->w)[base + j] |= s << (i & 63);
                else if (w == 32)
                    ((uint32_t *)L->w)[base + j] |= (uint32_t)(s << (i & 31));
                else
                    ((uint16_t *)L->w)[base + j] |= (uint16_t)(s << (i & 15));
            }
        }
    }
}

/* Inserts block b's keys keys[lo_i, hi_i) into layer k's system (rows rc/rf, slot s at index s - base)
 * at the smallest of the four thresholds under which they all go in: a bucket that fails is undone
 * (wr lists the rows it wrote) and tried at the next threshold. The keys under the threshold taken are
 * appended to out (*nb). The last layer bumps nothing: false if its keys do not all go in. */
static bool bl_bucket(burr *B, int k, uint64_t b, const uint64_t *keys, size_t lo_i, size_t hi_i, uint64_t base,
                      bool last, uint64_t *rc, uint64_t *rf, uint64_t *wr, uint64_t *out, size_t *nb)
{
    blayer *L = &B->L[k];
    const unsigned w = B->w;
    const uint64_t wm = bl_wmask(B);
    for (unsigned ti = 0; ti < 4; ti++) {
        const uint64_t t = (B->thr >> (8 * ti)) & 0xff;
        size_t nw = 0;
        bool ok = true;
        for (size_t i = lo_i; i < hi_i && ok; i++) {
            const uint64_t x = bl_x(L, k, keys[i]), st = mulhi(x, L->nstarts);
            if ((st & (w - 1)) < t) continue;
            const u128 c128 = (u128)x * ROW_MUL;
            uint64_t c = ((uint64_t)c128 | 1) & wm, f = (uint64_t)(c128 >> 64), s = st - base;
            for (;;) {
                if (!rc[s]) {
                    rc[s] = c;
                    rf[s] = f;
                    wr[nw++] = s;
                    break;
                }
                c ^= rc[s];
                f ^= rf[s];
                if (!c) { /* dependent: fine if consistent on the columns its block checks (a duplicate) */
                    ok = (f & ((UINT64_C(1) << (L->lo + (b >= L->upper))) - 1)) == 0;
                    break;
                }
                const unsigned z = (unsigned)__builtin_ctzll(c);
                c >>= z;
                s += z;
            }
        }
        if (ok) {
            L->meta[b >> 2] |= (uint8_t)(ti << ((b & 3) * 2));
            for (size_t i = lo_i; i < hi_i; i++)
                if ((mulhi(bl_x(L, k, keys[i]), L->nstarts) & (w - 1)) < t) out[(*nb)++] = keys[i];
            return true;
        }
        for (size_t i = 0; i < nw; i++) rc[wr[i]] = rf[wr[i]] = 0;
        if (last) return false;
    }
    return true; /* not reached: the last threshold (W) bumps the whole bucket */
}

/* Builds layer k from keys h[0..n): nblocks blocks, bumping allowed unless last; the bumped keys are
 * written to out (*nout). Returns false if the system (last layer) did not solve. */
static bool bl_build(burr *B, int k, const uint64_t *h, size_t n, uint64_t nblocks, uint32_t lo, double p, bool last,
                     uint64_t *out, size_t *nout)
{
    blayer *L = &B->L[k];
    const unsigned w = B->w, sh = B->sh;
    const uint64_t m = nblocks * w;
    L->nblocks = nblocks;
    L->nstarts = (nblocks - 1) * w;
    L->lo = lo;
    L->upper = bl_upper(nblocks, lo, p);
    L->nwords = nblocks * lo + (nblocks - (L->upper < nblocks ? L->upper : nblocks));
    const size_t bytes = ((L->nwords * (w / 8) + 512 + 63) / 64) * 64;
    double t0 = bu_cpu_ns();
    uint64_t *rc = calloc(m, 8), *rf = calloc(m, 8), *hs = malloc(n * 8 + 8), *cnt = calloc(nblocks + 1, 8);
    uint64_t *wr = malloc(64 * 1024 * 8);
    const size_t wcap = 64 * 1024;
    L->meta = calloc((nblocks + 3) / 4 + 8, 1);
    L->w = aligned_alloc(64, bytes);
    if (!rc || !rf || !hs || !cnt || !wr || !L->meta || !L->w) exit(1);
    memset(L->w, 0, bytes);
    for (uint64_t i = 0; i < m; i += 512) rc[i] = rf[i] = 0; /* fault the pages in here (timed apart) */
    double t1 = bu_cpu_ns();
    g_alloc_ns += t1 - t0;
    /* keys by block (counting sort) */
    for (size_t i = 0; i < n; i++) cnt[(mulhi(bl_x(L, k, h[i]), L->nstarts) >> sh) + 1]++;
    for (uint64_t b = 0; b < nblocks; b++) cnt[b + 1] += cnt[b];
    for (size_t i = 0; i < n; i++) hs[cnt[mulhi(bl_x(L, k, h[i]), L->nstarts) >> sh]++] = h[i];
    /* cnt[b] is now the end of block b's keys */
    double t2 = bu_cpu_ns();
    g_sort_ns += t2 - t1;
    size_t nb = 0, lo_i = 0;
    for (uint64_t b = 0; b + 1 < nblocks; b++) {
        const size_t hi_i = cnt[b];
        if (hi_i - lo_i > wcap) exit(1);
        if (!bl_bucket(B, k, b, hs, lo_i, hi_i, 0, last, rc, rf, wr, out, &nb)) {
            free(rc), free(rf), free(hs), free(cnt), free(wr);
            free(L->meta), free(L->w);
            return false;
        }
        lo_i = hi_i;
    }
    /* back substitution, every column (lo + 1), stored where the block has the column */
    double t3 = bu_cpu_ns();
    g_insert_ns += t3 - t2;
    bl_back(L, w, sh, lo, rc, rf, m, 0);
    g_back_ns += bu_cpu_ns() - t3;
    free(rc), free(rf), free(hs), free(cnt), free(wr);
    *nout = nb;
    return true;
}

/* The same layer built chunk by chunk: chunks of cb blocks, the keys starting in a chunk's last block
 * all bumped (its threshold W), so that no row crosses a chunk's end and each chunk is a system of its
 * own, solved in a window of cb * W slots reused from chunk to chunk (in the cache), its solution
 * written as it is found. The query is unchanged (the last block's threshold says "bump all"). Layer 0
 * only: its x is the hash itself, so the bumped keys go on as the hashes they are. */
static bool bl_build_chunked(burr *B, int k, const uint64_t *h, size_t n, uint64_t nblocks, uint32_t lo, double p,
                             uint64_t cb, uint64_t *out, size_t *nout)
{
    blayer *L = &B->L[k];
    const unsigned w = B->w, sh = B->sh;
    const uint64_t nchunks = (nblocks + cb - 1) / cb;
    L->nblocks = nblocks;
    L->nstarts = (nblocks - 1) * w;
    L->lo = lo;
    L->upper = bl_upper(nblocks, lo, p);
    L->nwords = nblocks * lo + (nblocks - (L->upper < nblocks ? L->upper : nblocks));
    const size_t bytes = ((L->nwords * (w / 8) + 512 + 63) / 64) * 64;
    double t0 = bu_cpu_ns();
    uint64_t *rc = malloc(cb * w * 8), *rf = malloc(cb * w * 8), *xs = malloc(n * 8 + 8), *cntc = calloc(nchunks + 1, 8);
    uint64_t *cntb = malloc((cb + 1) * 8), *wr = malloc(cb * w * 8);
    L->meta = calloc((nblocks + 3) / 4 + 8, 1);
    L->w = aligned_alloc(64, bytes);
    if (!rc || !rf || !xs || !cntc || !cntb || !wr || !L->meta || !L->w) exit(1);
    memset(L->w, 0, bytes);
    double t1 = bu_cpu_ns();
    g_alloc_ns += t1 - t0;
    /* keys (as x) by chunk */
    for (size_t i = 0; i < n; i++) cntc[(mulhi(bl_x(L, k, h[i]), L->nstarts) >> sh) / cb + 1]++;
    for (uint64_t c = 0; c < nchunks; c++) cntc[c + 1] += cntc[c];
    for (size_t i = 0; i < n; i++) {
        const uint64_t x = bl_x(L, k, h[i]);
        xs[cntc[(mulhi(x, L->nstarts) >> sh) / cb]++] = x;
    }
    size_t maxc = 0;
    for (uint64_t c = 0; c < nchunks; c++) {
        const size_t a = c ? cntc[c - 1] : 0;
        if (cntc[c] - a > maxc) maxc = cntc[c] - a;
    }
    uint64_t *hb = malloc(maxc * 8 + 8);
    if (!hb) exit(1);
    double t2 = bu_cpu_ns();
    g_sort_ns += t2 - t1;
    size_t nb = 0;
    for (uint64_t c = 0; c < nchunks; c++) {
        const double c0 = bu_cpu_ns();
        const uint64_t b0 = c * cb, b1 = b0 + cb < nblocks ? b0 + cb : nblocks, nbl = b1 - b0, base_slot = b0 * w;
        const size_t a = c ? cntc[c - 1] : 0, e = cntc[c];
        /* the chunk's keys by block, into hb */
        memset(cntb, 0, (nbl + 1) * 8);
        for (size_t i = a; i < e; i++) cntb[(mulhi(xs[i], L->nstarts) >> sh) - b0 + 1]++;
        for (uint64_t b = 0; b < nbl; b++) cntb[b + 1] += cntb[b];
        for (size_t i = a; i < e; i++) hb[cntb[(mulhi(xs[i], L->nstarts) >> sh) - b0]++] = xs[i];
        memset(rc, 0, nbl * w * 8);
        memset(rf, 0, nbl * w * 8);
        const double c1 = bu_cpu_ns();
        g_sort_ns += c1 - c0;
        size_t lo_i = 0;
        for (uint64_t bl = 0; bl < nbl; bl++) {
            const size_t hi_i = cntb[bl];
            const uint64_t b = b0 + bl;
            if (bl == nbl - 1) { /* the chunk's last block: every key bumped (none at the layer's end) */
                if (hi_i > lo_i) L->meta[b >> 2] |= (uint8_t)(3u << ((b & 3) * 2));
                for (size_t i = lo_i; i < hi_i; i++) out[nb++] = hb[i];
                lo_i = hi_i;
                continue;
            }
            bl_bucket(B, k, b, hb, lo_i, hi_i, base_slot, false, rc, rf, wr, out, &nb);
            lo_i = hi_i;
        }
        const double c2 = bu_cpu_ns();
        g_insert_ns += c2 - c1;
        /* back substitution of the chunk (no row reaches past its end) */
        bl_back(L, w, sh, lo, rc, rf, nbl * w, b0);
        g_back_ns += bu_cpu_ns() - c2;
    }
    free(rc), free(rf), free(xs), free(cntc), free(cntb), free(wr), free(hb);
    *nout = nb;
    return true;
}

static void burr_build(burr *B, const uint64_t *keys, size_t n, double p, double over, size_t small, uint64_t cb)
{
    uint32_t lo = 0;
    while (ldexp(1.0, -(int)(lo + 1)) >= p) lo++;
    uint64_t *cur = malloc(n * 8 + 8), *nxt = malloc(n * 8 + 8);
    if (!cur || !nxt) exit(1);
    memcpy(cur, keys, n * 8);
    size_t nc = n;
    B->nl = 0;
    for (int k = 0; k < BL_MAX; k++) {
        B->L[k].seed = bu_mix64(UINT64_C(0x5eed) + (uint64_t)k);
        const bool last = nc < small || k == BL_MAX - 1;
        size_t nn = 0;
        if (last) {
            uint64_t nbk = (uint64_t)ceil(((double)nc * 1.25 + 64) / B->w) + 1;
            while (!bl_build(B, k, cur, nc, nbk, lo, p, true, nxt, &nn)) B->L[k].seed = bu_mix64(B->L[k].seed);
            B->nl = k + 1;
            break;
        }
        uint64_t nbk = (uint64_t)ceil((double)nc * (1.0 - over) / B->w) + 1;
        if (nbk < 2) nbk = 2;
        if (k == 0 && cb)
            bl_build_chunked(B, k, cur, nc, nbk, lo, p, cb, nxt, &nn);
        else
            bl_build(B, k, cur, nc, nbk, lo, p, false, nxt, &nn);
        uint64_t *t = cur;
        cur = nxt;
        nxt = t;
        nc = nn;
    }
    free(cur);
    free(nxt);
}

#ifdef HAVE_KERNELS
/* Width 32: parities of sixteen columns a round (32-bit lanes). */
T512 static inline uint64_t dots32(const uint32_t *s0, const uint32_t *s1, uint32_t m0, uint32_t m1, unsigned rounds)
{
    uint64_t got = 0;
    for (unsigned r = 0; r < rounds; r++) {
        __m512i v = _mm512_and_si512(_mm512_loadu_si512((const void *)(s0 + 16 * r)), _mm512_set1_epi32((int)m0));
        v = _mm512_ternarylogic_epi32(v, _mm512_loadu_si512((const void *)(s1 + 16 * r)), _mm512_set1_epi32((int)m1),
                                      0x78);
        v = _mm512_slli_epi32(_mm512_popcnt_epi32(v), 31);
        got |= (uint64_t)_mm512_test_epi32_mask(v, v) << (16 * r);
    }
    return got;
}

/* Width 16: parities of 32 columns in one round (16-bit lanes, VPOPCNTW). */
T512B static inline uint64_t dots16(const uint16_t *s0, const uint16_t *s1, uint16_t m0, uint16_t m1)
{
    __m512i v = _mm512_and_si512(_mm512_loadu_si512((const void *)s0), _mm512_set1_epi16((short)m0));
    v = _mm512_ternarylogic_epi32(v, _mm512_loadu_si512((const void *)s1), _mm512_set1_epi16((short)m1), 0x78);
    v = _mm512_slli_epi16(_mm512_popcnt_epi16(v), 15);
    return (uint64_t)(uint32_t)_mm512_test_epi16_mask(v, v);
}

/* meta: read layer 0's threshold (false: time the row alone, answers wrong for bumped keys) */
/* One layer's query by the vector kernels: -1 bumped (when meta), else whether the row matches. */
T512B __attribute__((always_inline)) static inline int qlayer(const burr *B, const blayer *L, uint64_t x,
                                                             unsigned rounds, bool meta, unsigned w)
{
    const unsigned sh = w == 64 ? 6 : w == 32 ? 5 : 4;
    const uint64_t st = mulhi(x, L->nstarts), b = st >> sh, o = st & (w - 1);
    const unsigned ti = (L->meta[b >> 2] >> ((b & 3) * 2)) & 3;
    if (meta && __builtin_expect(o < ((B->thr >> (8 * ti)) & 0xff), 0)) return -1;
    const u128 c = (u128)x * ROW_MUL;
    const uint64_t cf = (uint64_t)c | 1;
    uint32_t cols;
    const uint64_t base = bl_base(L, b, &cols);
    uint64_t got;
    if (w == 64) {
        const uint64_t *s[2];
        s[0] = (const uint64_t *)L->w + base;
        s[1] = s[0] + cols;
        const uint64_t m[2] = { cf << o, (cf >> 1) >> (63 - o) };
        got = dots(s, m, 2, rounds);
    } else if (w == 32) {
        const uint32_t *s0 = (const uint32_t *)L->w + base, c32 = (uint32_t)cf;
        got = dots32(s0, s0 + cols, c32 << o, (c32 >> 1) >> (31 - o), rounds);
    } else {
        const uint16_t *s0 = (const uint16_t *)L->w + base, c16 = (uint16_t)cf;
        got = dots16(s0, s0 + cols, (uint16_t)(c16 << o), (uint16_t)((c16 >> 1) >> (15 - o)));
    }
    return ((got ^ (uint64_t)(c >> 64)) & ((UINT64_C(1) << cols) - 1)) == 0;
}

/* The layers after the first, for a key layer 0 bumped (out of line). */
T512B __attribute__((always_inline)) static inline int qrest(const burr *B, uint64_t h, unsigned rounds, unsigned w)
{
    for (int k = 1; k < B->nl; k++) {
        int r = qlayer(B, &B->L[k], bu_mix64(h + B->L[k].seed), rounds, true, w);
        if (r >= 0) return r;
    }
    return 0;
}

typedef int bkernel(const burr *, uint64_t);
#  define BKW(r, w, sfx)                                                                                     \
    T512B __attribute__((noinline)) static int rest##sfx##_##r(const burr *B, uint64_t h) { return qrest(B, h, r, w); } \
    T512B __attribute__((noinline)) static int kb##sfx##_##r(const burr *B, uint64_t h)                       \
    {                                                                                                         \
        const int a = qlayer(B, &B->L[0], h, r, true, w);                                                     \
        return __builtin_expect(a < 0, 0) ? rest##sfx##_##r(B, h) : a;                                        \
    }                                                                                                         \
    T512B __attribute__((noinline)) static int kn##sfx##_##r(const burr *B, uint64_t h) { return qlayer(B, &B->L[0], h, r, false, w); }
#  define BKERNELS(r) BKW(r, 64, ) BKW(r, 32, 32) BKW(r, 16, 16)
BKERNELS(1)
BKERNELS(2)
BKERNELS(3)
/* [width 64, 32, 16][with threshold, row alone][rounds - 1] */
static bkernel *const bkernels[3][2][3] = {
    { { kb_1, kb_2, kb_3 }, { kn_1, kn_2, kn_3 } },
    { { kb32_1, kb32_2, kb32_3 }, { kn32_1, kn32_2, kn32_3 } },
    { { kb16_1, kb16_2, kb16_3 }, { kn16_1, kn16_2, kn16_3 } },
};
#endif

static int burr_mode(unsigned w, size_t n, double p, double over, unsigned t1, unsigned t2, int rounds, uint64_t cb,
                     double dups)
{
    const size_t q = 2000000, nabs = 2000000;
    uint64_t *keys = malloc(n * sizeof *keys), *mix = malloc(q * sizeof *mix), s = 42, s2 = 0xabcdef;
    if (!keys || !mix) return 1;
    for (size_t i = 0; i < n; i++) keys[i] = bu_splitmix64(&s);
    for (size_t i = 1; i < n; i++) /* a share of the keys repeated (dups: a key every 1/dups repeats one before) */
        if (dups > 0 && (double)(bu_mix64(i ^ 0xd0) >> 11) * 0x1p-53 < dups) keys[i] = keys[bu_mix64(i) % i];
    for (size_t i = 0; i < q; i++) mix[i] = (i & 1) ? bu_splitmix64(&s2) : keys[(i * 7919) % n];
    bu_print_loadavg("at start");
    burr B;
    memset(&B, 0, sizeof B);
    B.w = w;
    B.sh = w == 64 ? 6 : w == 32 ? 5 : 4;
    B.thr = 0u | (t1 << 8) | (t2 << 16) | (w << 24);
    double t0 = bu_cpu_ns();
    burr_build(&B, keys, n, p, over, 2048, cb);
    const double tb = bu_cpu_ns() - t0;
    /* space: every layer's words and metadata, and a layer's header (4 words) */
    double bits = 0;
    for (int k = 0; k < B.nl; k++) bits += (double)w * (double)B.L[k].nwords + 2.0 * (double)B.L[k].nblocks + 4 * 64;
    const double bpk = bits / (double)n, bound = log2(1.0 / p);
    printf("burr w%u n %zu p %g over %.3f thresholds 0,%u,%u,%u: %d layers, %.3f bits/key (%.4fx log2(1/p) %.3f), "
           "build %.1f ns a key (prototype%s)\n",
           w, n, p, over, t1, t2, w, B.nl, bpk, bpk / bound, bound, tb / (double)n, cb ? ", layer 0 by chunks" : "");
    printf("  build phases, ns a key: allocation and first touch %.1f, hashing and sort by block %.1f, insertion with "
           "bumping %.1f, back substitution %.1f\n",
           g_alloc_ns / (double)n, g_sort_ns / (double)n, g_insert_ns / (double)n, g_back_ns / (double)n);
    for (int k = 0; k < B.nl; k++) {
        size_t cnt[4] = { 0 };
        for (uint64_t b = 0; b + 1 < B.L[k].nblocks; b++) cnt[(B.L[k].meta[b >> 2] >> ((b & 3) * 2)) & 3]++;
        printf("  layer %d: %llu blocks, %llu words, thresholds used %zu/%zu/%zu/%zu\n", k,
               (unsigned long long)B.L[k].nblocks, (unsigned long long)B.L[k].nwords, cnt[0], cnt[1], cnt[2], cnt[3]);
    }
    size_t fn = 0, fp = 0, bumped = 0;
    double expect = 0;
    for (size_t i = 0; i < n; i++) fn += !burr_contains(&B, keys[i]);
    for (size_t i = 0; i < nabs; i++) {
        uint64_t a = bu_splitmix64(&s2);
        fp += (size_t)burr_contains(&B, a);
        bumped += bl_query(&B, 0, a) < 0;
        for (int k = 0; k < B.nl; k++) { /* the columns the key meets where it ends: its expected FPR */
            const blayer *L = &B.L[k];
            const uint64_t st = mulhi(bl_x(L, k, a), L->nstarts), bb = st >> B.sh;
            const unsigned ti = (L->meta[bb >> 2] >> ((bb & 3) * 2)) & 3;
            if ((st & (w - 1)) < ((B.thr >> (8 * ti)) & 0xff) && k + 1 < B.nl) continue;
            expect += ldexp(1.0, -(int)(L->lo + (bb >= L->upper)));
            break;
        }
    }
    printf("  false negatives %zu of %zu; FPR %.3g on %zu absent keys (%.4fx p; their columns' 2^-c: %.4fx p); absent "
           "keys bumped %.2f%%\n",
           fn, n, (double)fp / (double)nabs, nabs, (double)fp / (double)nabs / p, expect / (double)nabs / p,
           100.0 * (double)bumped / (double)nabs);
#ifdef HAVE_KERNELS
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq") &&
        __builtin_cpu_supports("avx512bitalg") && __builtin_cpu_supports("avx512bw")) {
        const unsigned per = 512 / w, rr = (B.L[0].lo + 1 + per - 1) / per - 1, wi = w == 64 ? 0 : w == 32 ? 1 : 2;
        if (rr > 2) return 1;
        bkernel *kq = bkernels[wi][0][rr], *kn = bkernels[wi][1][rr];
        size_t fnk = 0;
        for (size_t i = 0; i < n; i++) fnk += !kq(&B, keys[i]);
        bk_ribbon_options o = BK_RIBBON_OPTIONS_INIT;
        o.fpr = p;
        bk_fuse_options fo = BK_FUSE_OPTIONS_INIT;
        bk_ribbon *rf;
        bk_fuse *ff;
        if (bk_ribbon_build_hashes(keys, n, &o, &rf) != BK_OK || bk_fuse_build_hashes(keys, n, &fo, &ff) != BK_OK) return 1;
        double bb = INFINITY, br = INFINITY, bf = INFINITY, bn = INFINITY;
        size_t hb = 0, hr = 0, hf = 0, hn = 0;
        for (int r = 0; r < rounds; r++) { /* the four alternated in each round */
            double a0 = bu_cpu_ns();
            hb = 0;
            for (size_t i = 0; i < q; i++) hb += (size_t)kq(&B, mix[i]);
            double a1 = bu_cpu_ns();
            hr = 0;
            for (size_t i = 0; i < q; i++) hr += bk_ribbon_contains_hash(rf, mix[i]);
            double a2 = bu_cpu_ns();
            hf = 0;
            for (size_t i = 0; i < q; i++) hf += bk_fuse_contains_hash(ff, mix[i]);
            double a3 = bu_cpu_ns();
            hn = 0;
            for (size_t i = 0; i < q; i++) hn += (size_t)kn(&B, mix[i]);
            double a4 = bu_cpu_ns();
            if (a4 - a3 < bn) bn = a4 - a3;
            if (a1 - a0 < bb) bb = a1 - a0;
            if (a2 - a1 < br) br = a2 - a1;
            if (a3 - a2 < bf) bf = a3 - a2;
        }
        double ln = 0;
        for (size_t i = 0; i < 100000; i++) {
            const blayer *L = &B.L[0];
            uint64_t st = mulhi(mix[i], L->nstarts);
            uint32_t cols;
            uintptr_t a = (uintptr_t)L->w + (w / 8) * bl_base(L, st >> B.sh, &cols), e = a + 2 * cols * (w / 8);
            ln += (double)(((e - 1) >> 6) - (a >> 6) + 1);
        }
        printf("  one key (best of %d rounds of %zu, present and absent alike): burr %.2f ns (%zu hits, kernel false "
               "negatives %zu, %.2f lines a key in layer 0), body 2 %.2f ns (%zu hits), fuse8 %.2f ns (%zu hits): "
               "burr/fuse8 %.2fx, body2/fuse8 %.2fx; layer 0's row alone (no threshold read) %.2f ns (%.2fx)\n",
               rounds, q, bb / (double)q, hb, fnk, ln / 1e5, br / (double)q, hr, bf / (double)q, hf, bb / bf, br / bf,
               bn / (double)q, bn / bf);
        bk_ribbon_free(rf);
        bk_fuse_free(ff);
    }
#endif
    bu_print_loadavg("at end");
    for (int k = 0; k < B.nl; k++) {
        free(B.L[k].w);
        free(B.L[k].meta);
    }
    free(keys);
    free(mix);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "query")) return query((size_t)strtod(argv[2], NULL), strtod(argv[3], NULL));
    if (argc == 6 && !strcmp(argv[1], "insert") && (atoi(argv[2]) == 64 || atoi(argv[2]) == 128))
        return insert(atoi(argv[2]), (size_t)strtod(argv[3], NULL), strtod(argv[4], NULL), atoi(argv[5]));
    if (argc >= 5 && argc <= 11 && !strcmp(argv[1], "burr") &&
        (atoi(argv[2]) == 64 || atoi(argv[2]) == 32 || atoi(argv[2]) == 16)) {
        const unsigned w = (unsigned)atoi(argv[2]);
        return burr_mode(w, (size_t)strtod(argv[3], NULL), strtod(argv[4], NULL), argc > 5 ? strtod(argv[5], NULL) : 0.0,
                         argc > 6 ? (unsigned)atoi(argv[6]) : w / 8, argc > 7 ? (unsigned)atoi(argv[7]) : w * 3 / 8,
                         argc > 8 ? atoi(argv[8]) : 3, argc > 9 ? (uint64_t)atoll(argv[9]) : 0,
                         argc > 10 ? strtod(argv[10], NULL) : 0.0);
    }
    fprintf(stderr, "usage: ribbon_rows query N P | ribbon_rows insert 64|128 N SLACK TRIALS |\n"
                    "       ribbon_rows burr 64|32|16 N P [OVER [T1 [T2 [ROUNDS [CHUNK [DUPS]]]]]]\n");
    return 2;
}
