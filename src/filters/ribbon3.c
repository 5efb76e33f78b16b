/* Ribbon filter, body 3: the bumped Ribbon of width 64 (Dillinger, Huebschle-Schneider, Sanders and
 * Walzer, "Fast succinct retrieval and approximate membership using Ribbon", 2022). Construction by
 * chunks, the query paths (portable, POPCNT, AVX-512 with VPOPCNTDQ), the filter's struct. The layout
 * is in ribbon_impl.h, the file body in ribbon_file.c. */
#include "filters/ribbon_impl.h"

/*
 * Layers. Layer k of nk keys has ceil(nk (1 - R3_OVER) / 64) + 1 blocks (0.98 slots a key and a spare
 * block: overloaded, so that the bumped keys, about 2.4% of them, go to the next layer rather than
 * leave slots empty; at 10% and n = 1e5 this is 1.045x log2(1/p) bits a key where one slot a key
 * gives 1.051x). Below R3_SMALL keys (or at the
 * last layer the table has room for) a last layer bumps nothing, has 1.25 slots a key and 64 more,
 * and is retried with a new seed until its system solves. A layer is built by chunks of R3_CHUNK
 * blocks: a chunk's last block bumps every key starting in it, so no row crosses a chunk's end and
 * each chunk is solved alone in a window of R3_CHUNK * 64 slots (448 KB with its right-hand sides and
 * undo list) reused from chunk to chunk; up to four chunks at a time, in four windows (r3_run), so that
 * one row's wait on a load overlaps the others' (a row meets ~18 kept rows before a free slot, each
 * step a load, an XOR and a count of trailing zeros). Chunks of 512 blocks: 1,024 cost 0.07% less
 * space and were 20-30% slower to build (two windows past the 1 MB second-level cache), 256 neither.
 */
#define R3_SMALL 2048
#define R3_OVER 0.02
#define R3_CHUNK 512
/* A chunk's keys are sorted by their starting slot's group of 2^R3_GROUP slots (one counting sort,
 * so by block too): a bucket inserted nearly in order of start meets fewer kept rows, and the build
 * takes 6-8% less time than in hash order. The order changes which of a bucket's rows are kept, not
 * their span, so every key's answer on the columns it is checked on is the same; but block upper - 1's
 * rows reach block upper without being checked on column lo, and which of them are kept sets that
 * column there: absent keys of block upper can answer differently (the same FPR; at 10% and 1e6 keys
 * the file differs, the bits per key and bumped keys do not). */
#define R3_GROUP 3

/* ---- the filter's struct ---- */

bk_status bk__ribbon3_new(const bk_allocator *a, uint64_t n, uint32_t nlayers, uint32_t lo, uint64_t seed,
                          bk_ribbon **out)
{
    void *t;
    const bk_status s = bk__ribbon_new_table(a, n, lo, seed, nlayers, sizeof(rb3_layer), &t, out);
    if (s != BK_OK) return s;
    (*out)->layers = t;
    (*out)->nlayers = nlayers;
    return BK_OK;
}

/* Pointers of every layer into the array (from its geometry), the FPR and the slots. The FPR: an
 * absent key is checked in exactly one layer, in one block, and every layer's column split keeps its
 * mixture at or below p: the largest layer's mixture is stated (layer 0 takes nearly every key). */
void bk__ribbon3_totals(bk_ribbon *f)
{
    const uint64_t *d = (const uint64_t *)(const void *)f->words;
    uint64_t off = 0, slots = 0;
    double fpr = 0;
    for (uint32_t k = 0; k < f->nlayers; k++) {
        rb3_layer *L = &f->layers[k];
        L->meta = d + off;
        L->w = d + off + R3_META(L->nblocks);
        L->nstarts = (L->nblocks - 1) * W3;
        L->wu = (uintptr_t)L->w - 8 * L->upper;
        L->lo = f->lo;
        for (unsigned t = 0; t < 4; t++) L->bump[t] = r3_thr(t) >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << r3_thr(t)) - 1;
        off += r3_span(L->nblocks, L->upper, f->lo);
        slots += L->nblocks * W3;
        rb_geom g = { L->nblocks, L->upper, f->lo };
        double e = geom_fpr(&g);
        if (e > fpr) fpr = e;
    }
    f->fpr = fpr;
    f->nslots = slots;
}

/* ---- query ---- */

/* A key's row in layer L: its two segments (s0 in its block, s1 in the next, cols words each), the
 * masks of the row's coefficients in each and its fingerprint. */
typedef struct r3_row {
    const uint64_t *s0, *s1;
    uint64_t m0, m1, fp, cols;
} r3_row;

/* x's row in layer L, or false when its block's threshold bumps it. */
BK_INLINE bool r3_row_of(const rb3_layer *L, uint32_t lo, uint64_t x, r3_row *r)
{
    const uint64_t st = bk__range64(x, L->nstarts), b = st >> 6;
    const unsigned o = (unsigned)st & 63;
    if (BK_UNLIKELY(o < r3_thr_tab[r3_field(L->meta, b)])) return false;
    const u128 c = (u128)x * R3_ROW_MUL;
    const uint64_t cf = (uint64_t)c | 1;
    uint32_t cols;
    r->fp = (uint64_t)(c >> 64);
    r->s0 = L->w + rb_block_at(lo, L->upper, b, &cols);
    r->cols = cols;
    r->s1 = r->s0 + cols;
    r->m0 = cf << o;
    r->m1 = (cf >> 1) >> (~o & 63); /* ~o & 63 = 63 - o: one step fewer */
    return true;
}

/* Layer L's answer for x: -1 bumped, else whether the key's row matches its fingerprint. */
BK_INLINE int r3_match(const rb3_layer *L, uint32_t lo, uint64_t x)
{
    r3_row r;
    if (!r3_row_of(L, lo, x, &r)) return -1;
    uint64_t got = 0;
    for (uint32_t j = 0; j < r.cols; j++)
        got |= (uint64_t)__builtin_parityll((r.s0[j] & r.m0) ^ (r.s1[j] & r.m1)) << j;
    return ((got ^ r.fp) & ((UINT64_C(1) << r.cols) - 1)) == 0;
}

/* The layers after the first, for a key layer 0 bumped. */
typedef int r3_match_fn(const rb3_layer *L, uint32_t lo, uint64_t x);

BK_INLINE bool r3_rest(const bk_ribbon *f, uint64_t h, r3_match_fn *match)
{
    for (uint32_t k = 1; k < f->nlayers; k++) {
        const int r = match(&f->layers[k], f->lo, r3_x((int)k, h, f->layers[k].seed));
        if (r >= 0) return r;
    }
    return false; /* not reached: the last layer bumps nothing */
}

#ifdef BK_X86
#ifdef __x86_64__
static const uint64_t r3_row_mul = R3_ROW_MUL;

/* r3_row_of in assembly for the AVX-512 paths (the compiler keeps copies of st and o and saves
 * registers to hold them: a dozen instructions more). The same row; s1 is left as s0 + cols, which the
 * vector loads address themselves. x is kept in rdx for both multiplies (mulx). */
RB_T_AVX512 BK_INLINE bool r3_row_asm(const rb3_layer *L, uint32_t lo, uint64_t x, r3_row *r)
{
    uint64_t st, b, t, u;
    bool bumped;
    __asm__("mulx %[nst], %[t], %[st]\n\t"       /* st: the row's first slot */
            "mov %[st], %[b]\n\t"
            "shr $6, %[b]\n\t"                    /* its block */
            "mov %[st], %[t]\n\t"
            "shr $11, %[t]\n\t"
            "mov (%[meta],%[t],8), %[t]\n\t"      /* the block's field: word b / 32, */
            "lea (%[b],%[b]), %[u]\n\t"
            "shrx %[u], %[t], %[t]\n\t"           /* bit 2b mod 64 */
            "and $3, %k[t]\n\t"
            "mov %c[bump](%[L],%[t],8), %[t]\n\t"
            "bt %[st], %[t]"                       /* bumped: bit o of its threshold's mask */
            : "=@ccc"(bumped), [st] "=&r"(st), [b] "=&r"(b), [t] "=&r"(t), [u] "=&r"(u)
            : "d"(x), [nst] "m"(L->nstarts), [meta] "r"(L->meta), [L] "r"(L),
              [bump] "i"(offsetof(rb3_layer, bump)));
    if (BK_UNLIKELY(bumped)) return false;
    uint64_t cf, fp, m0, s0, cols;
    (void)lo; /* L->lo */
    __asm__("mulx %[mul], %[cf], %[fp]\n\t"      /* the coefficients (low half) and fingerprint */
            "mov %[lo], %[cols]\n\t"
            "or $1, %[cf]\n\t"
            "shlx %[st], %[cf], %[m0]\n\t"        /* m0 = cf << o */
            "shr %[cf]\n\t"
            "not %[st]\n\t"
            "shrx %[st], %[cf], %[cf]\n\t"        /* m1 = (cf >> 1) >> (63 - o) */
            "mov %[w], %[s0]\n\t"
            "cmp %[up], %[b]\n\t"
            "cmovae %[wu], %[s0]\n\t"             /* from upper on, blocks of lo + 1 from wu */
            "sbb $-1, %[cols]\n\t"                /* cols = lo + (b >= upper) */
            "imul %[cols], %[b]\n\t"
            "lea (%[s0],%[b],8), %[s0]"
            : [cf] "=&r"(cf), [fp] "=&r"(fp), [m0] "=&r"(m0), [s0] "=&r"(s0), [st] "+r"(st), [b] "+r"(b),
              [cols] "=&r"(cols)
            : "d"(x), [mul] "m"(r3_row_mul), [w] "m"(L->w), [up] "m"(L->upper), [wu] "m"(L->wu), [lo] "m"(L->lo)
            : "cc");
    r->s0 = (const uint64_t *)s0;
    r->s1 = r->s0 + cols;
    r->cols = cols;
    r->m0 = m0;
    r->m1 = cf;
    r->fp = fp;
    return true;
}
#endif

/* AVX-512 with VPOPCNTDQ: eight columns' words of each of the two segments in one vector, masked and
 * XORed (one ternary-logic step), each lane's popcount shifted to its sign bit and tested into a mask
 * register whose eight bits are the columns' parities; `rounds` rounds for the filter's widest key.
 * Words past a key's columns are read and masked away: 8 x rounds <= lo + 8 words from each segment's
 * start, at most 8 past the layer's last word, inside its zero tail. */
RB_T_AVX512 BK_INLINE int r3_match_avx512(const rb3_layer *L, uint32_t lo, uint64_t x, unsigned rounds)
{
    r3_row r;
#ifdef __x86_64__
    if (!r3_row_asm(L, lo, x, &r)) return -1;
#else
    if (!r3_row_of(L, lo, x, &r)) return -1;
#endif
    const uint64_t *s0 = r.s0, *s1 = r.s1, m0 = r.m0, m1 = r.m1;
    uint64_t got;
#ifdef __x86_64__
    /* in assembly on zmm16-zmm19 only, as body 2's kernel: no dirty upper state, no vzeroupper */
    uint64_t t, cols = r.cols;
    (void)s1; /* s0 + cols, addressed as such */
#define R3_512_ROUND(off)                                                                                   \
    "vpandq " off "(%[s0]), %%zmm16, %%zmm19\n\t"                                                           \
    "vpternlogq $0x78, " off "(%[s0],%[cols],8), %%zmm17, %%zmm19\n\t"                                      \
    "vpopcntq %%zmm19, %%zmm19\n\t"                                                                         \
    "vptestmq %[one]%{1to8%}, %%zmm19, %%k1\n\t" /* bit 0 of each popcount, against a broadcast 1 */
    static const uint64_t one = 1;
    bool eq; /* the parities against the fingerprint on the key's columns: bzhi sets ZF */
#define R3_512_ASM(text)                                                                                    \
    __asm__("vpbroadcastq %[m0], %%zmm16\n\t" "vpbroadcastq %[m1], %%zmm17\n\t" R3_512_ROUND("0")            \
            "kmovw %%k1, %k[got]\n\t" text "xor %[fp], %[got]\n\t" "bzhi %[cols], %[got], %[got]"              \
            : "=@ccz"(eq), [got] "=&r"(got), [t] "=&r"(t)                                                   \
            : [s0] "r"(s0), [cols] "r"(cols), [m0] "r"(m0), [m1] "r"(m1), [fp] "r"(r.fp), [one] "m"(one)    \
            : "xmm16", "xmm17", "xmm19", "k1", "memory")
    /* the ymm forms: the masks broadcast, `body` leaves the columns' parities in k1 */
#define R3_YMM_ASM(body)                                                                                    \
    __asm__("vpbroadcastq %[m0], %%ymm16\n\t" "vpbroadcastq %[m1], %%ymm17\n\t" body                        \
            "kmovw %%k1, %k[got]\n\t" "xor %[fp], %[got]\n\t" "bzhi %[cols], %[got], %[got]"                \
            : "=@ccz"(eq), [got] "=&r"(got)                                                                 \
            : [s0] "r"(s0), [cols] "r"(cols), [m0] "r"(m0), [m1] "r"(m1), [fp] "r"(r.fp), [one] "m"(one)    \
            : "xmm16", "xmm17", "xmm18", "xmm19", "k1", "memory")
    if (rounds == 0) /* up to four columns: the same on ymm16-ymm19 (AVX-512VL), half the words read */
        R3_YMM_ASM("vpandq (%[s0]), %%ymm16, %%ymm19\n\t"
                   "vpternlogq $0x78, (%[s0],%[cols],8), %%ymm17, %%ymm19\n\t"
                   "vpopcntq %%ymm19, %%ymm19\n\t"
                   "vptestmq %[one]%{1to4%}, %%ymm19, %%k1\n\t");
    else if (rounds == 1) /* each segment's eight words as two ymm halves (a 64-byte load at a word's
                             * offset crosses a line seven times in eight, a 32-byte one three), joined for
                             * one popcount and test */
        R3_YMM_ASM("vpandq (%[s0]), %%ymm16, %%ymm19\n\t"
                   "vpternlogq $0x78, (%[s0],%[cols],8), %%ymm17, %%ymm19\n\t"
                   "vpandq 32(%[s0]), %%ymm16, %%ymm18\n\t"
                   "vpternlogq $0x78, 32(%[s0],%[cols],8), %%ymm17, %%ymm18\n\t"
                   "vinserti64x4 $1, %%ymm18, %%zmm19, %%zmm19\n\t"
                   "vpopcntq %%zmm19, %%zmm19\n\t"
                   "vptestmq %[one]%{1to8%}, %%zmm19, %%k1\n\t");
    else
        RB_512_BY_ROUNDS(rounds, R3_512_ASM, R3_512_ROUND);
#undef R3_YMM_ASM
#undef R3_512_ASM
#undef R3_512_ROUND
    (void)t; /* k1's bits past the eight lanes are zero (vptestmq clears them) */
    return eq;
#else
    const __m512i M0 = _mm512_set1_epi64((long long)m0), M1 = _mm512_set1_epi64((long long)m1);
    got = 0;
#pragma GCC unroll 4
    for (unsigned i = 0; i < (rounds ? rounds : 1); i++) { /* rounds 0: the ymm path's four columns */
        __m512i v = _mm512_and_si512(_mm512_loadu_si512((const void *)(s0 + 8 * i)), M0);
        v = _mm512_ternarylogic_epi64(v, _mm512_loadu_si512((const void *)(s1 + 8 * i)), M1, 0x78);
        v = _mm512_slli_epi64(_mm512_popcnt_epi64(v), 63);
        got |= (uint64_t)_mm512_test_epi64_mask(v, v) << (8 * i);
    }
    return ((got ^ r.fp) & ((UINT64_C(1) << r.cols) - 1)) == 0;
#endif
}
#define R3_K512(r)                                                                                             \
    RB_T_AVX512 BK_INLINE int r3_match_avx512_##r(const rb3_layer *L, uint32_t lo, uint64_t x)                \
    {                                                                                                          \
        return r3_match_avx512(L, lo, x, r);                                                                   \
    }
R3_K512(0)
R3_K512(1)
R3_K512(2)
R3_K512(3)
R3_K512(4)
#endif

/* The layers after the first, out of line (a bumped key, about one in 40): the one-key path keeps
 * few registers and no frame for them. */
typedef bool r3_rest_fn(const bk_ribbon *f, uint64_t h);

/* Layer 0 from the struct's copy (f->l0). seeded: layer 0 has a seed (a filter of one layer, retried);
 * the one-key paths are made twice, with seeded a constant, so that the usual filter (layer 0's seed
 * 0: x is the hash itself) neither reads the seed nor tests it. */
BK_INLINE bool r3_has(const bk_ribbon *f, uint64_t h, r3_match_fn *match, r3_rest_fn *rest, bool seeded)
{
    const int a = match(&f->l0, f->lo, seeded ? bk__remix(h + f->l0.seed) : h);
    return BK_LIKELY(a >= 0) ? a : rest(f, h);
}

#define R3_BATCH 32

/* A batch: each chunk's keys' layer-0 fields and rows prefetched first (the row's 2c words from its
 * block's first), then answered. */
BK_INLINE size_t r3_batch(const bk_ribbon *f, const uint64_t *hashes, size_t n, uint8_t *results, r3_match_fn *match,
                          r3_rest_fn *rest)
{
    const rb3_layer *L = &f->l0;
    const bool seeded = L->seed != 0;
    const size_t span = (size_t)(f->lo + 1) * 16;
    size_t present = 0;
    for (size_t i = 0; i < n; i += R3_BATCH) {
        const size_t e = i + R3_BATCH < n ? i + R3_BATCH : n;
        for (size_t k = i; k < e; k++) {
            const uint64_t b = bk__range64(r3_x(0, hashes[k], L->seed), L->nstarts) >> 6;
            uint32_t cols;
            const uint8_t *p = (const uint8_t *)(const void *)(L->w + rb_block_at(f->lo, L->upper, b, &cols));
            BK_PREFETCH(L->meta + (b >> 5));
            for (size_t o = 0; o < span; o += 64) BK_PREFETCH(p + o);
            BK_PREFETCH(p + span - 1);
        }
        for (size_t k = i; k < e; k++) {
            const bool r = seeded ? r3_has(f, hashes[k], match, rest, true) : r3_has(f, hashes[k], match, rest, false);
            if (results) results[k] = r;
            present += r;
        }
    }
    return present;
}

#define R3_PATH(name, attr, match)                                                                           \
    attr __attribute__((noinline)) static bool rest3_##name(const bk_ribbon *f, uint64_t h)                  \
    {                                                                                                        \
        return r3_rest(f, h, match);                                                                         \
    }                                                                                                        \
    attr static bool has3_##name(const bk_ribbon *f, uint64_t h) { return r3_has(f, h, match, rest3_##name, false); } \
    attr static bool has3s_##name(const bk_ribbon *f, uint64_t h) { return r3_has(f, h, match, rest3_##name, true); } \
    attr static size_t batch3_##name(const bk_ribbon *f, const uint64_t *h, size_t n, uint8_t *r)             \
    {                                                                                                        \
        return r3_batch(f, h, n, r, match, rest3_##name);                                                    \
    }
R3_PATH(portable, , r3_match)
#ifdef RB_HW_POPCNT
R3_PATH(popcnt, __attribute__((target("popcnt"))), r3_match)
#endif
#ifdef BK_X86
R3_PATH(avx512_0, RB_T_AVX512, r3_match_avx512_0)
R3_PATH(avx512_1, RB_T_AVX512, r3_match_avx512_1)
R3_PATH(avx512_2, RB_T_AVX512, r3_match_avx512_2)
R3_PATH(avx512_3, RB_T_AVX512, r3_match_avx512_3)
R3_PATH(avx512_4, RB_T_AVX512, r3_match_avx512_4)
#endif

/* The paths for this CPU; first layer 0's fields copied into the struct (f->l0, what the queries read). */
void bk__ribbon3_pick_paths(bk_ribbon *f)
{
    f->l0 = f->layers[0];
    const int s = f->l0.seed != 0;
    f->has = s ? has3s_portable : has3_portable;
    f->batch = batch3_portable;
#ifdef RB_HW_POPCNT
    if (use_popcnt()) {
        f->has = s ? has3s_popcnt : has3_popcnt;
        f->batch = batch3_popcnt;
    }
#endif
#ifdef BK_X86
    const unsigned cpu = bk__ribbon_portable ? 0 : bk__cpu_usable();
    const unsigned avx512 = BK_CPU_AVX2 | BK_CPU_BMI2 | BK_CPU_POPCNT | BK_CPU_AVX512F | BK_CPU_AVX512POPCNT;
    static bool (*const has_v[2][4])(const bk_ribbon *, uint64_t) = {
        { has3_avx512_1, has3_avx512_2, has3_avx512_3, has3_avx512_4 },
        { has3s_avx512_1, has3s_avx512_2, has3s_avx512_3, has3s_avx512_4 },
    };
    static size_t (*const batch_v[4])(const bk_ribbon *, const uint64_t *, size_t, uint8_t *) = {
        batch3_avx512_1, batch3_avx512_2, batch3_avx512_3, batch3_avx512_4
    };
    if ((cpu & avx512) == avx512) {
        f->has = has_v[s][f->lo / 8]; /* rounds of eight columns for lo + 1 columns */
        f->batch = batch_v[f->lo / 8];
        if (f->lo + 1 <= 4 && (cpu & BK_CPU_AVX512VL)) { /* one ymm */
            f->has = s ? has3s_avx512_0 : has3_avx512_0;
            f->batch = batch3_avx512_0;
        }
    }
#endif
}

/* ---- construction ---- */

/* A layer under construction: its geometry, its own fields and words (copied into the filter's
 * array at the end). */
typedef struct r3_tmp {
    uint64_t nblocks, upper, seed;
    uint64_t *meta, *w;
} r3_tmp;

/* A lane: one chunk under construction, in its own window; R3_LANES lanes take turns a step at a time
 * (r3_run), so that each one's wait on the load of the row its row meets overlaps the others'. */
typedef struct r3_lane {
    uint64_t *rc;       /* the chunk's window: each slot's row (0: free) */
    uint32_t *rf;       /* and its right-hand side (the lo + 1 bits the columns use) */
    uint16_t *wr;       /* slots written by the current bucket's attempt */
    const uint64_t *hb; /* the chunk's keys by block (its part of the layer's keys) */
    uint16_t *ks;       /* and their starting slots in the chunk */
    uint64_t *cntb;     /* the end of each group's keys in hb (64 >> R3_GROUP groups a block) */
    size_t cap_ks;
    uint64_t woff;      /* the window's first slot in the windows of all lanes */
    uint64_t b0, nbl;   /* the chunk's first block and its blocks */
    uint64_t bl;        /* the bucket (block) being inserted */
    size_t lo_i, hi_i, i, nw; /* its keys in hb, the next one, the slots its attempt wrote */
    unsigned ti, t;     /* its threshold */
    uint64_t cmask;     /* the columns its block checks */
    uint64_t cf, f, s;  /* the row in flight (busy; s among all lanes' slots) */
    bool busy, live;
} r3_lane;

#define R3_LANES 4

typedef struct r3_build {
    const bk_allocator *al;
    uint32_t lo;
    r3_lane lane[R3_LANES];
    int nlanes;         /* the lanes the build uses (no more than layer 0 has chunks) */
    uint64_t wblocks;   /* a window's blocks: the largest chunk of the build */
    uint64_t *rc;       /* the lanes' windows, one after the other (wblocks * W3 slots each) */
    uint32_t *rf;
    uint64_t *hs;       /* a layer's keys (as hashes) grouped by chunk, each chunk's by block */
    uint64_t *cnt;      /* counts by chunk */
    size_t cap_cnt;
    uint64_t *sorted;   /* a chunk's keys by block, before they go back to hs */
    uint16_t *so;       /* a chunk's keys' starting slots, in hs order */
    size_t cap_sorted;
    uint64_t *bump[2];  /* the bumped keys of the layers (alternately: one read, the next written) */
    size_t cap_bump[2];
} r3_build;

/* Room for `need` bumped keys in list j (grown by half again; the first size a guess of 1/16). */
static bool r3_bump_room(r3_build *B, int j, size_t need)
{
    if (need <= B->cap_bump[j]) return true;
    size_t cap = B->cap_bump[j] + B->cap_bump[j] / 2;
    if (cap < need) cap = need;
    uint64_t *nb = bk__calloc_aligned(B->al, cap * 8); /* advised for huge pages from 2 MiB */
    if (!nb) return false;
    if (B->bump[j]) memcpy(nb, B->bump[j], B->cap_bump[j] * 8);
    bk__free_aligned(B->al, B->bump[j]);
    B->bump[j] = nb;
    B->cap_bump[j] = cap;
    return true;
}

enum { R3_OK, R3_FAILED, R3_DUPLICATE, R3_NOMEM };

/* Back substitution of the window's rows [0, rows) (row i: slot b0 * 64 + i), every column solved
 * from the last row up: win[j] holds column j's values of the 64 slots from the current one on, so a
 * row's value is its right-hand side's bit j XOR the parity of its coefficients past the first with
 * win[j], and at a block's first slot win[j] is the block's word of column j (stored where the block
 * has that column). Each slot is cleared once read, so the window is ready for the lane's next chunk.
 * The same bits on every path. */
BK_INLINE void r3_back_body(r3_lane *B, uint32_t lo, r3_tmp *L, uint64_t rows, uint64_t b0)
{
    uint64_t win[MAX_COLS + 1] = { 0 };
    for (uint64_t i = rows; i-- > 0;) {
        const uint64_t c = B->rc[i] >> 1, f = B->rf[i], on = B->rc[i] ? ~UINT64_C(0) : 0;
        B->rc[i] = B->rf[i] = 0;
        for (uint32_t j = 0; j <= lo; j++)
            win[j] = (win[j] << 1) | ((((f >> j) ^ (uint64_t)__builtin_parityll(c & win[j])) & 1) & on);
        if ((i & 63) == 0) {
            uint32_t cols;
            uint64_t *dst = L->w + rb_block_at(lo, L->upper, b0 + (i >> 6), &cols);
            memcpy(dst, win, cols * sizeof *win);
        }
    }
}
static void r3_back_portable(r3_lane *B, uint32_t lo, r3_tmp *L, uint64_t rows, uint64_t b0)
{
    r3_back_body(B, lo, L, rows, b0);
}
#ifdef RB_HW_POPCNT
__attribute__((target("popcnt"))) static void r3_back_popcnt(r3_lane *B, uint32_t lo, r3_tmp *L, uint64_t rows,
                                                              uint64_t b0)
{
    r3_back_body(B, lo, L, rows, b0);
}
#endif
#ifdef BK_X86
/* AVX-512: eight columns a vector (lane j of vector v: column 8 v + j), nv vectors (a constant: the
 * vectors stay in registers). */
RB_T_AVX512 BK_INLINE void r3_back_avx512_body(r3_lane *B, uint32_t lo, r3_tmp *L, uint64_t rows, uint64_t b0,
                                               const unsigned nv)
{
    const __m512i one = _mm512_set1_epi64(1);
    __m512i win[4] = { _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                       _mm512_setzero_si512() };
    for (uint64_t i = rows; i-- > 0;) {
        /* a free slot's row and right-hand side are 0: its values come out 0 with no test */
        const __m512i C = _mm512_set1_epi64((long long)(B->rc[i] >> 1));
        const uint32_t f = B->rf[i];
        B->rc[i] = B->rf[i] = 0;
#pragma GCC unroll 4
        for (unsigned v = 0; v < 4; v++) {
            if (v >= nv) break;
            /* the new bit 0: the right-hand side's bit (bits 8 v to 8 v + 7 of f, a mask of lanes) XOR
             * the parity (the popcount's bit 0), the first put in beside the shift, the second by one
             * ternary-logic step (A ^ (B & C)): the chain from win[v] to win[v] is AND, popcount,
             * ternary logic */
            const __m512i par = _mm512_popcnt_epi64(_mm512_and_si512(C, win[v]));
            const __m512i w = _mm512_slli_epi64(win[v], 1);
            win[v] = _mm512_ternarylogic_epi64(_mm512_mask_xor_epi64(w, (__mmask8)(f >> (8 * v)), w, one), par, one,
                                               0x78);
        }
        if ((i & 63) == 0) {
            uint32_t cols;
            uint64_t *dst = L->w + rb_block_at(lo, L->upper, b0 + (i >> 6), &cols);
            for (unsigned v = 0; v < nv && 8 * v < cols; v++) {
                const unsigned left = cols - 8 * v;
                _mm512_mask_storeu_epi64(dst + 8 * v, (__mmask8)(left >= 8 ? 0xff : (1u << left) - 1), win[v]);
            }
        }
    }
}
RB_T_AVX512 static void r3_back_avx512(r3_lane *B, uint32_t lo, r3_tmp *L, uint64_t rows, uint64_t b0)
{
    switch (lo / 8) {
    case 0: r3_back_avx512_body(B, lo, L, rows, b0, 1); break;
    case 1: r3_back_avx512_body(B, lo, L, rows, b0, 2); break;
    case 2: r3_back_avx512_body(B, lo, L, rows, b0, 3); break;
    default: r3_back_avx512_body(B, lo, L, rows, b0, 4); break;
    }
}
#endif

/* The back substitution of this CPU (bk__ribbon_portable: the portable one). */
static void r3_back(r3_lane *B, uint32_t lo, r3_tmp *L, uint64_t rows, uint64_t b0)
{
#ifdef BK_X86
    const unsigned want = BK_CPU_AVX2 | BK_CPU_BMI2 | BK_CPU_POPCNT | BK_CPU_AVX512F | BK_CPU_AVX512POPCNT;
    if (!bk__ribbon_portable && (bk__cpu_usable() & want) == want) {
        r3_back_avx512(B, lo, L, rows, b0);
        return;
    }
#endif
#ifdef RB_HW_POPCNT
    if (use_popcnt()) {
        r3_back_popcnt(B, lo, L, rows, b0);
        return;
    }
#endif
    r3_back_portable(B, lo, L, rows, b0);
}

/* Room for the counts by chunk (ncnt), and for a chunk's keys (nk: the sort's and every lane's). */
static bool r3_room(r3_build *B, size_t ncnt, size_t nk)
{
    if (ncnt > B->cap_cnt) {
        bk__free(B->al, B->cnt);
        B->cnt = bk__malloc(B->al, ncnt * 8);
        B->cap_cnt = B->cnt ? ncnt : 0;
        if (!B->cnt) return false;
    }
    if (nk > B->cap_sorted) {
        bk__free(B->al, B->sorted);
        bk__free(B->al, B->so);
        B->sorted = bk__malloc(B->al, nk * 8);
        B->so = bk__malloc(B->al, nk * sizeof *B->so);
        B->cap_sorted = B->sorted && B->so ? nk : 0;
        if (!B->cap_sorted) return false;
    }
    for (int z = 0; z < B->nlanes; z++) {
        r3_lane *l = &B->lane[z];
        if (nk <= l->cap_ks) continue;
        bk__free(B->al, l->ks);
        l->ks = bk__malloc(B->al, nk * sizeof *l->ks);
        l->cap_ks = l->ks ? nk : 0;
        if (!l->ks) return false;
    }
    return true;
}

/* One layer's construction (below): its constants, and the next chunk to take. */
typedef struct r3_ctx {
    r3_build *B;
    r3_tmp *L;
    int k, outj;
    uint64_t nstarts, seed;
    bool last;
    size_t bumped;
    int res;
    uint64_t cb, nchunks, c;
} r3_ctx;

/* Whether lane l's next bucket is ready (false: the chunk is done, solved into the layer). The
 * chunk's last block bumps every key starting in it (none start in a layer's last block). */
static bool r3_next_bucket(r3_ctx *C, r3_lane *l)
{
    r3_build *B = C->B;
    for (; l->bl < l->nbl; l->bl++) {
        l->hi_i = l->cntb[((l->bl + 1) << (6 - R3_GROUP)) - 1];
        const uint64_t b = l->b0 + l->bl;
        if (l->bl + 1 < l->nbl) {
            l->ti = 0;
            l->t = r3_thr(0);
            l->i = l->lo_i;
            l->nw = 0;
            l->cmask = (UINT64_C(1) << (B->lo + (b >= C->L->upper))) - 1;
            /* the window's lines the bucket after next reaches first (the lines are cold: cleared a
             * chunk ago) */
            if (l->bl + 2 < l->nbl) {
                for (unsigned o = 0; o < W3; o += 8) BK_PREFETCH(l->rc + (l->bl + 2) * W3 + o);
                for (unsigned o = 0; o < W3; o += 16) BK_PREFETCH(l->rf + (l->bl + 2) * W3 + o);
            }
            return true;
        }
        if (l->hi_i > l->lo_i) {
            if (!r3_bump_room(B, C->outj, C->bumped + (l->hi_i - l->lo_i))) {
                C->res = R3_NOMEM;
                return false;
            }
            C->L->meta[b >> 5] |= UINT64_C(3) << ((b & 31) * 2);
            for (size_t i = l->lo_i; i < l->hi_i; i++) B->bump[C->outj][C->bumped++] = l->hb[i];
        }
        l->lo_i = l->hi_i;
    }
    r3_back(l, B->lo, C->L, l->nbl * W3, l->b0);
    l->live = false;
    return false;
}

/* Lane l takes the next chunk (keys hs[a, e), cnt[c] their end): its keys sorted by group in place
 * (hb) with their starting slots (ks); its window is clear (zeroed when made, then by each chunk's
 * back substitution, r3_layer's end when a layer stops short). */
static void r3_take_chunk(r3_ctx *C, r3_lane *l)
{
    r3_build *B = C->B;
    const uint64_t c = C->c++, cb = C->cb, nb = C->L->nblocks, b0 = c * cb, nbl = b0 + cb < nb ? cb : nb - b0;
    const size_t a = c ? B->cnt[c - 1] : 0, e = B->cnt[c];
    const uint64_t first = b0 * W3;
    uint16_t *const so = B->so;
    l->b0 = b0;
    l->nbl = nbl;
    const uint64_t nq = nbl << (6 - R3_GROUP);
    memset(l->cntb, 0, ((size_t)nq + 1) * 8);
    for (size_t i = a; i < e; i++) {
        const uint64_t s = bk__range64(r3_x(C->k, B->hs[i], C->seed), C->nstarts) - first;
        so[i - a] = (uint16_t)s;
        l->cntb[(s >> R3_GROUP) + 1]++;
    }
    for (uint64_t q = 0; q < nq; q++) l->cntb[q + 1] += l->cntb[q];
    for (size_t i = a; i < e; i++) {
        const size_t d = l->cntb[so[i - a] >> R3_GROUP]++;
        B->sorted[d] = B->hs[i];
        l->ks[d] = so[i - a];
    }
    memcpy(B->hs + a, B->sorted, (e - a) * 8);
    l->hb = B->hs + a;
    l->bl = 0;
    l->lo_i = 0;
    l->live = true;
    r3_next_bucket(C, l);
}

/* The end of lane l's bucket attempt: kept (its field set, its bumped keys out, the next bucket) or
 * undone (the next threshold; in the last layer, which bumps nothing, the layer fails). */
static void r3_bucket_end(r3_ctx *C, r3_lane *l, bool ok)
{
    r3_build *B = C->B;
    if (ok) {
        const uint64_t b = l->b0 + l->bl;
        C->L->meta[b >> 5] |= (uint64_t)l->ti << ((b & 31) * 2);
        if (l->t) {
            if (!r3_bump_room(B, C->outj, C->bumped + (l->hi_i - l->lo_i))) {
                C->res = R3_NOMEM;
                return;
            }
            for (size_t i = l->lo_i; i < l->hi_i; i++)
                if ((l->ks[i] & 63) < l->t) B->bump[C->outj][C->bumped++] = l->hb[i];
        }
        l->lo_i = l->hi_i;
        l->bl++;
        r3_next_bucket(C, l);
        return;
    }
    for (size_t i = 0; i < l->nw; i++) l->rc[l->wr[i]] = l->rf[l->wr[i]] = 0;
    if (C->last) {
        C->res = R3_FAILED;
        return;
    }
    l->ti++;
    l->t = r3_thr(l->ti);
    l->i = l->lo_i;
    l->nw = 0;
}

/* Key i of lane l's chunk as the row in flight: its coefficients (bit 0 set), right-hand side and
 * starting slot. */
BK_INLINE void r3_row_in(const r3_ctx *C, r3_lane *l, size_t i, uint64_t *cf, uint64_t *f, uint64_t *s)
{
    const u128 c = (u128)r3_x(C->k, l->hb[i], C->seed) * R3_ROW_MUL;
    *cf = (uint64_t)c | 1;
    *f = (uint64_t)(c >> 64);
    *s = l->ks[i] + l->woff;
    l->i = i + 1;
}

/* Lane l's next row in flight (true), taking buckets and chunks as they end; false: no chunk left (or
 * the layer stopped: C->res). */
static bool r3_next_row(r3_ctx *C, r3_lane *l)
{
    for (;;) {
        if (C->res != R3_OK) return false;
        if (!l->live) {
            if (C->c >= C->nchunks) return false;
            r3_take_chunk(C, l);
            continue;
        }
        size_t i = l->i;
        while (i < l->hi_i && (l->ks[i] & 63) < l->t) i++;
        if (i < l->hi_i) {
            r3_row_in(C, l, i, &l->cf, &l->f, &l->s);
            l->busy = true;
            return true;
        }
        r3_bucket_end(C, l, true);
    }
}

/* Lane l's row vanished at its slot: accepted when its right-hand side vanishes too on the columns
 * its block checks (a repeated hash, which always vanishes consistently, is found among the bucket's
 * keys: R3_DUPLICATE), else the bucket is undone. */
static void r3_vanished(r3_ctx *C, r3_lane *l)
{
    const uint64_t s = l->s - l->woff;
    l->busy = false;
    if (((l->f ^ l->rf[s]) & l->cmask) != 0) {
        r3_bucket_end(C, l, false);
        return;
    }
    for (size_t j = l->lo_i; j + 1 < l->i; j++)
        if (l->hb[j] == l->hb[l->i - 1]) {
            C->res = R3_DUPLICATE;
            return;
        }
}

/*
 * The rows in flight of n lanes (n constant, 1 to R3_LANES; every lane busy), stepped in turn: a row
 * XORs the row kept at its slot and moves to its next one-bit until a free slot takes it, and the
 * lane's next key in the bucket comes in. Returns the first lane whose row vanished (its state stored
 * at that slot) or that needs r3_next_row (not busy); the others' rows are stored as they stand.
 * tz: the step's two tests (a free slot: the XOR is odd; a vanished row: it is zero) as one branch on
 * the flags of BMI1's count of trailing zeros (x86-64; the function is built for BMI1 and BMI2).
 */
#if defined(__x86_64__) && defined(__GNUC__)
#  define R3_TZCNT 1
#endif
BK_INLINE int r3_run(const r3_ctx *C, r3_lane *const *ln, const int n, const bool tz)
{
    uint64_t *const rc = C->B->rc;
    uint32_t *const rf = C->B->rf;
    uint64_t cf[R3_LANES], f[R3_LANES], s[R3_LANES];
    for (int z = 0; z < n; z++) cf[z] = ln[z]->cf, f[z] = ln[z]->f, s[z] = ln[z]->s;
    int who = -1;
    while (who < 0) {
#pragma GCC unroll 4
        for (int z = 0; z < R3_LANES; z++) {
            if (z >= n) break;
            /* xn: the row XORed with the slot's (the row itself at a free slot, 0 when it vanishes) */
            uint64_t xn = cf[z] ^ rc[s[z]], sh = 0;
            bool ev;
#ifdef R3_TZCNT
            if (tz) /* TZCNT sets CF for a zero source and ZF for a zero count: "be" is either event */
                __asm__("tzcntq %[x], %[sh]" : [sh] "=r"(sh), "=@ccbe"(ev) : [x] "r"(xn));
            else
#endif
                ev = !rc[s[z]] || !xn;
            if (BK_UNLIKELY(ev)) {
                if (rc[s[z]]) {
                    who = z; /* vanished */
                    break;
                }
                /* a free slot: the row goes in, the bucket's next key comes in (unless bumped or
                 * past the bucket: r3_next_row) */
                r3_lane *l = ln[z];
                rc[s[z]] = xn;
                rf[s[z]] = (uint32_t)f[z];
                l->wr[l->nw++] = (uint16_t)(s[z] - l->woff);
                const size_t i = l->i;
                if (BK_LIKELY(i < l->hi_i && (l->ks[i] & 63) >= l->t)) {
                    r3_row_in(C, l, i, &cf[z], &f[z], &s[z]);
                    continue;
                }
                l->busy = false;
                who = z;
                break;
            }
            if (!tz) sh = (uint64_t)__builtin_ctzll(xn);
            f[z] ^= rf[s[z]];
            cf[z] = xn >> sh;
            s[z] += sh;
        }
    }
    for (int z = 0; z < n; z++) ln[z]->cf = cf[z], ln[z]->f = f[z], ln[z]->s = s[z];
    return who;
}

/* r3_run for 1 to R3_LANES lanes, portable and with BMI1 and BMI2 */
typedef int r3_run_fn(const r3_ctx *C, r3_lane *const *ln);
#define R3_RUN(name, attr, n, tz)                                                                          \
    attr __attribute__((noinline)) static int name(const r3_ctx *C, r3_lane *const *ln) { return r3_run(C, ln, n, tz); }
R3_RUN(r3_run1, , 1, false)
R3_RUN(r3_run2, , 2, false)
R3_RUN(r3_run3, , 3, false)
R3_RUN(r3_run4, , 4, false)
static r3_run_fn *const r3_runs[R3_LANES] = { r3_run1, r3_run2, r3_run3, r3_run4 };
#ifdef R3_TZCNT
#  define R3_T_BMI __attribute__((target("bmi,bmi2")))
R3_RUN(r3_run1_bmi, R3_T_BMI, 1, true)
R3_RUN(r3_run2_bmi, R3_T_BMI, 2, true)
R3_RUN(r3_run3_bmi, R3_T_BMI, 3, true)
R3_RUN(r3_run4_bmi, R3_T_BMI, 4, true)
static r3_run_fn *const r3_runs_bmi[R3_LANES] = { r3_run1_bmi, r3_run2_bmi, r3_run3_bmi, r3_run4_bmi };
#endif

/* The runs of this CPU (bk__ribbon_portable: the portable ones). */
static r3_run_fn *const *r3_runs_here(void)
{
#ifdef R3_TZCNT
    const unsigned want = BK_CPU_BMI1 | BK_CPU_BMI2;
    if (!bk__ribbon_portable && (bk__cpu_usable() & want) == want) return r3_runs_bmi;
#endif
    return r3_runs;
}

/*
 * Layer k of L's geometry from the n hashes h: by chunks of R3_CHUNK blocks (the last layer: one
 * chunk), each chunk's keys sorted by block (and group) and inserted bucket by bucket at the smallest threshold
 * that lets every non-bumped key in, R3_LANES chunks at a time (r3_run); each chunk back-substituted
 * when done. The bumped keys are appended to bumped list outj. R3_DUPLICATE: a vanished row was a
 * repeated hash (the caller deduplicates and starts over).
 */
static int r3_layer(r3_build *B, r3_tmp *L, int k, const uint64_t *h, size_t n, bool last, int outj,
                    size_t *nout)
{
    const uint64_t nb = L->nblocks, nstarts = (nb - 1) * W3, seed = L->seed;
    const uint64_t cb = last ? nb : R3_CHUNK, nchunks = (nb + cb - 1) / cb;
    /* a chunk past the window: a last layer of more than R3_CHUNK blocks (not with R3_MAX_LAYERS layers) */
    if ((cb < nb ? cb : nb) > B->wblocks) return R3_FAILED;
    if (!r3_room(B, (size_t)nchunks + 1, 0)) return R3_NOMEM;
    /* keys by chunk (counting sort), as hashes; the last layer is one chunk */
    uint64_t *cnt = B->cnt;
    memset(cnt, 0, ((size_t)nchunks + 1) * 8);
    if (last) cnt[1] = n;
    else
        for (size_t i = 0; i < n; i++) cnt[bk__range64(r3_x(k, h[i], seed), nstarts) / (R3_CHUNK * W3) + 1]++;
    size_t most = 0;
    for (uint64_t c = 0; c < nchunks; c++) {
        if (cnt[c + 1] > most) most = cnt[c + 1];
        cnt[c + 1] += cnt[c];
    }
    if (last) {
        memcpy(B->hs, h, n * 8);
        cnt[0] = n;
    } else
        for (size_t i = 0; i < n; i++) B->hs[cnt[bk__range64(r3_x(k, h[i], seed), nstarts) / (R3_CHUNK * W3)]++] = h[i];
    /* cnt[c] is now the end of chunk c's keys */
    if (!r3_room(B, 0, most + 1)) return R3_NOMEM;
    r3_ctx C = { B, L, k, outj, nstarts, seed, last, *nout, R3_OK, cb, nchunks, 0 };
    for (int z = 0; z < B->nlanes; z++) B->lane[z].live = B->lane[z].busy = false;
    r3_run_fn *const *run = r3_runs_here();
    for (;;) {
        r3_lane *act[R3_LANES];
        int na = 0;
        for (int z = 0; z < B->nlanes; z++)
            if (B->lane[z].busy || r3_next_row(&C, &B->lane[z])) act[na++] = &B->lane[z];
        if (C.res != R3_OK || na == 0) break;
        const int who = run[na - 1](&C, act);
        if (act[who]->busy) r3_vanished(&C, act[who]);
    }
    if (C.res != R3_OK) /* chunks left unsolved: their windows cleared for the next try */
        for (int z = 0; z < B->nlanes; z++)
            if (B->lane[z].live) {
                memset(B->lane[z].rc, 0, (size_t)B->lane[z].nbl * W3 * 8);
                memset(B->lane[z].rf, 0, (size_t)B->lane[z].nbl * W3 * 4);
            }
    *nout = C.bumped;
    return C.res;
}

static void r3_tmp_free(const bk_allocator *al, r3_tmp *L)
{
    bk__free_aligned(al, L->meta);
    L->meta = L->w = NULL;
}

/* The blocks of a layer of n keys (last: the last layer's). */
static uint64_t r3_blocks(uint64_t n, bool last)
{
    /* the tests' hook (bk__ribbon_slack < 0): a last layer of one slot a key, which often fails */
    const double room = bk__ribbon_slack < 0 ? (double)n : (double)n * 1.25 + 64;
    const double want = last ? ceil(room / W3) : ceil((double)n * (1.0 - R3_OVER) / W3);
    return want + 1 < 2 ? 2 : (uint64_t)want + 1;
}

/* A layer's geometry for n keys and its zeroed array (fields and words in one allocation). */
static bk_status r3_tmp_make(const bk_allocator *al, r3_tmp *L, uint64_t n, bool last, uint32_t lo, double p)
{
    rb_geom g = { r3_blocks(n, last), 0, lo };
    bk__ribbon_set_upper(&g, p);
    if (r3_span(g.nblocks, g.upper, lo) > BK_MAX_FILTER_BYTES / 8) return BK_ETOOBIG;
    L->nblocks = g.nblocks;
    L->upper = g.upper;
    L->meta = bk__calloc_aligned(al, (size_t)r3_span(g.nblocks, g.upper, lo) * 8);
    if (!L->meta) return BK_ENOMEM;
    L->w = L->meta + R3_META(g.nblocks);
    return BK_OK;
}

/* The seed of layer k (its i-th try for the last layer): a splitmix64 stream from the hash seed. */
static uint64_t r3_seed(uint64_t seed, uint32_t k, uint32_t i)
{
    return bk__splitmix64_at(seed, (uint64_t)k * 1000003 + i + 1);
}

/* Builds the layers of the n hashes h (distinct, or R3_DUPLICATE); tmp gets them, *nl their count. */
static int r3_layers(r3_build *B, const uint64_t *h, size_t n, double p, uint32_t attempts, uint64_t seed,
                     r3_tmp *tmp, uint32_t *nl, bk_status *err)
{
    const uint64_t *cur = h;
    size_t nc = n;
    for (uint32_t k = 0; k < R3_MAX_LAYERS; k++) {
        const bool last = nc < R3_SMALL || k == R3_MAX_LAYERS - 1;
        for (uint32_t i = 0;; i++) {
            tmp[k].seed = k || i ? r3_seed(seed, k, i) | 1 : 0; /* nonzero: remixed */
            if ((*err = r3_tmp_make(B->al, &tmp[k], nc, last, B->lo, p)) != BK_OK) return R3_NOMEM;
            *nl = k + 1;
            size_t nn = 0;
            const int r = r3_layer(B, &tmp[k], (int)k, cur, nc, last, (int)(k & 1), &nn);
            if (r == R3_OK && last) return R3_OK;
            if (r == R3_OK) {
                cur = B->bump[k & 1];
                nc = nn;
                break;
            }
            if (r != R3_FAILED) {
                if (r == R3_NOMEM) *err = BK_ENOMEM;
                return r;
            }
            r3_tmp_free(B->al, &tmp[k]);
            if (i + 1 >= attempts) {
                *err = BK_EFULL;
                return R3_FAILED;
            }
        }
    }
    return R3_FAILED; /* not reached: the last layer returns */
}

/* Body 3 from n hashes (duplicates allowed: a repeat found while building makes the build start over
 * from the distinct hashes, so the filter is the set's). */
bk_status bk__ribbon3_build(const uint64_t *h, size_t n, double p, uint32_t attempts, const bk_ribbon_options *o,
                            bk_ribbon **out)
{
    r3_build B;
    memset(&B, 0, sizeof B);
    B.al = bk__allocator(o->allocator);
    B.lo = bk__ribbon_lo_for(p);
    r3_tmp tmp[R3_MAX_LAYERS];
    memset(tmp, 0, sizeof tmp);
    uint32_t nl = 0;
    bk_status s = BK_OK;
    uint64_t *uniq = NULL;
    B.hs = bk__calloc_aligned(B.al, n * 8 + 8); /* advised for huge pages: fewer first-touch faults */
    /* the windows: as many as layer 0 has chunks (up to R3_LANES), of R3_CHUNK blocks or fewer when
     * any layer, even a last layer of all n keys, has fewer: a small build takes no more than it needs */
    const uint64_t b0 = r3_blocks(n, n < R3_SMALL), bl = r3_blocks(n, true);
    B.wblocks = bl < R3_CHUNK ? bl : R3_CHUNK;
    const uint64_t chunks0 = (b0 + R3_CHUNK - 1) / R3_CHUNK;
    B.nlanes = chunks0 < R3_LANES ? (int)chunks0 : R3_LANES;
    const size_t wslots = (size_t)B.wblocks * W3;
    B.rc = bk__calloc_aligned(B.al, B.nlanes * wslots * 8);
    B.rf = bk__calloc_aligned(B.al, B.nlanes * wslots * 4);
    bool room = B.rc && B.rf;
    for (int z = 0; z < B.nlanes && room; z++) {
        r3_lane *l = &B.lane[z];
        l->woff = (uint64_t)z * wslots;
        l->rc = B.rc + l->woff;
        l->rf = B.rf + l->woff;
        l->wr = bk__malloc(B.al, wslots * sizeof *l->wr); /* wblocks <= R3_CHUNK: slots below 2^15 */
        l->cntb = bk__malloc(B.al, ((size_t)B.wblocks * (64 >> R3_GROUP) + 1) * 8);
        room = l->wr && l->cntb;
    }
    if (!room || !r3_bump_room(&B, 0, n / 16 + 64) || !r3_bump_room(&B, 1, n / 256 + 64) || !B.hs) s = BK_ENOMEM;
    for (int round = 0; s == BK_OK; round++) {
        const int r = r3_layers(&B, h, n, p, attempts, o->seed, tmp, &nl, &s);
        if (r == R3_OK || r != R3_DUPLICATE || round > 0) {
            if (r == R3_DUPLICATE) s = BK_EFULL; /* not reached: the hashes are distinct */
            break;
        }
        for (uint32_t k = 0; k < nl; k++) r3_tmp_free(B.al, &tmp[k]);
        nl = 0;
        /* the distinct hashes, sorted */
        uniq = bk__calloc_aligned(B.al, n * 8 + 8);
        if (!uniq) {
            s = BK_ENOMEM;
            break;
        }
        memcpy(uniq, h, n * 8);
        n = bk__ribbon_sort_unique(uniq, B.hs, n); /* B.hs: n values of scratch */
        h = uniq;
    }
    /* a lane's window is also the room of the last layer's: a last layer is one chunk of up to
     * (R3_SMALL * 1.25 + 64) / 64 + 2 blocks, at most R3_CHUNK */
    bk_ribbon *f = NULL;
    if (s == BK_OK) s = bk__ribbon3_new(o->allocator, n, nl, B.lo, o->seed, &f);
    if (s == BK_OK) {
        uint64_t total = 0;
        for (uint32_t k = 0; k < nl; k++) total += r3_span(tmp[k].nblocks, tmp[k].upper, B.lo);
        if (total > BK_MAX_FILTER_BYTES / 8) s = BK_ETOOBIG;
        else if (!(f->words = bk__calloc_aligned(f->alloc, (size_t)total * 8)))
            s = BK_ENOMEM;
        if (s == BK_OK) {
            f->owns_words = true;
            f->ndata = total;
            uint64_t *d = (uint64_t *)(void *)f->words;
            for (uint32_t k = 0; k < nl; k++) {
                const uint64_t span = r3_span(tmp[k].nblocks, tmp[k].upper, B.lo);
                memcpy(d, tmp[k].meta, (size_t)(span - R3_TAIL) * 8);
                d += span;
                f->layers[k].nblocks = tmp[k].nblocks;
                f->layers[k].upper = tmp[k].upper;
                f->layers[k].seed = tmp[k].seed;
            }
            bk__ribbon3_totals(f);
            bk__ribbon3_pick_paths(f);
        }
    }
    for (uint32_t k = 0; k < nl; k++) r3_tmp_free(B.al, &tmp[k]);
    bk__free_aligned(B.al, uniq);
    bk__free_aligned(B.al, B.bump[0]);
    bk__free_aligned(B.al, B.bump[1]);
    bk__free_aligned(B.al, B.hs);
    for (int z = 0; z < R3_LANES; z++) {
        bk__free(B.al, B.lane[z].ks);
        bk__free(B.al, B.lane[z].wr);
        bk__free(B.al, B.lane[z].cntb);
    }
    bk__free_aligned(B.al, B.rc);
    bk__free_aligned(B.al, B.rf);
    bk__free(B.al, B.cnt);
    bk__free(B.al, B.sorted);
    bk__free(B.al, B.so);
    if (s != BK_OK) {
        bk_ribbon_free(f);
        return s;
    }
    *out = f;
    return BK_OK;
}

/* ---- sizing ---- */

/* Keys a layer of n keys bumps, as measured at 0.98 slots a key (chunks of 512 blocks): 2.38% */
#define R3_BUMPED 0.0238

/* The words (all layers' spans) of a filter of n distinct keys at p, with layer 0's geometry in *g0;
 * the later layers' sizes as the measured bumped share makes them. */
uint64_t bk__ribbon3_size(uint64_t n, double p, rb_geom *g0)
{
    const uint32_t lo = bk__ribbon_lo_for(p);
    uint64_t total = 0;
    double nc = (double)n;
    for (uint32_t k = 0; k < R3_MAX_LAYERS; k++) {
        const bool last = nc < R3_SMALL || k == R3_MAX_LAYERS - 1;
        const double want = last ? ceil((nc * 1.25 + 64) / W3) : ceil(nc * (1.0 - R3_OVER) / W3);
        rb_geom g = { (uint64_t)want + 1, 0, lo };
        if (g.nblocks < 2) g.nblocks = 2;
        bk__ribbon_set_upper(&g, p);
        if (k == 0) *g0 = g;
        total += r3_span(g.nblocks, g.upper, lo);
        if (last) break;
        nc = ceil(nc * R3_BUMPED);
    }
    return total;
}

/* Peak bytes of a build from n values: the byte keys' hashes and the keys by chunk (8 n each), the
 * bumped lists (n / 16 and n / 256 to start with, grown when a layer bumps more), the lanes' windows
 * (14 bytes a slot of a chunk: row, right-hand side, undo list) and chunk keys' starts (room for two a
 * slot, 2 bytes each), the chunk sort's room (two keys a slot, 10 bytes each), counts, the layers under
 * construction and the finished filter (the layers twice). With repeats in the input, 8 n more for the
 * distinct values. */
uint64_t bk__ribbon3_build_memory(uint64_t n, double p)
{
    rb_geom g0;
    const uint64_t words = bk__ribbon3_size(n, p, &g0);
    return 16 * n + (n / 16 + n / 256 + 128) * 8 + (uint64_t)R3_CHUNK * W3 * (R3_LANES * (14 + 2 * 2) + 2 * 10) +
           2 * words * 8 + (n / (R3_CHUNK * W3) + R3_CHUNK + 2) * 8 * 2 + R3_MAX_LAYERS * sizeof(rb3_layer) +
           sizeof(bk_ribbon) + 4 * 64;
}
