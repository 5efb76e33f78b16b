/* The Ribbon filter's private layout, shared by ribbon.c (geometry, construction, lifetime),
 * ribbon_query.c (the query paths of bodies 1 and 2), ribbon3.c (body 3) and ribbon_file.c (the three
 * bodies). */
#ifndef BLOOMKIT_RIBBON_IMPL_H
#define BLOOMKIT_RIBBON_IMPL_H

#include <math.h>
#include "filters/internal.h"
#include "core/simd.h"
#include "bloomkit/ribbon.h"
#include "filters/testing.h"

/*
 * Geometry. The slots are cut into blocks of 128 (the ribbon width). A key's row starts at a slot of
 * the first nblocks - 1 blocks and covers 128 slots, so it reaches at most into the next block. Blocks
 * [0, upper) store `lo` columns of the solution, blocks [upper, nblocks) lo + 1 (upper = nblocks: all
 * lo). Columns only grow from one block to the next, so a key starting in a block with c columns
 * finds c columns in the next block too and is checked on c bits.
 *
 * A block's columns are stored one after the other, each as one 128-bit word (bit t: slot t of the
 * block, as two little-endian 64-bit halves); block b's words start at word b * lo + max(0, b - upper).
 */
#define W 128
#define MAX_COLS 30 /* lo + 1 at BK_RIBBON_MIN_FPR */

#ifdef BK_X86
#  define RB_T_AVX2 __attribute__((target("avx2,bmi2,popcnt")))
#  define RB_T_AVX512 __attribute__((target("avx2,bmi2,popcnt,avx512f,avx512vpopcntdq")))
#endif

/*
 * Shards. The slots a standard Ribbon needs per key grow with log n (more stretches where rows can
 * pile up past the band), so a large set is cut into S independent systems by the high bits of the
 * hash (shard = range(h, S)), about SHARD_KEYS keys each, each with its own blocks, columns split and
 * internal seed: the overhead stays the small-n value at any n, and a failed attempt retries one
 * shard, not the whole set. Measured with width 128 (first attempts that succeed): 32,768 keys at
 * slack 0.0125, about 72%; the spare block and the rounding add 0.6%, so the slots are about 1.019
 * per key. Below 2 * SHARD_KEYS keys one system (body 1).
 */
#define SHARD_KEYS 32768
#define SHARD_SLACK 0.0125
#define BODY2 2u /* body 2's leading field, where body 1 has its width (128) */
/* Body 2's words end with 64 zero bytes, so the vector query may read a few words past a shard's end
 * (into the next shard or the tail) and mask them away. */
#define TAIL_WORDS 4

/* A shard as the query reads it: its first word, internal seed, the range of its rows' first slots
 * ((blocks - 1) * 128) and its first block with lo + 1 columns. */
typedef struct rb_shard {
    uint64_t off, seed, nstarts, upper;
} rb_shard;

__extension__ typedef unsigned __int128 u128;

/*
 * Body 3: a bumped Ribbon of width 64 (BuRR). Layers of blocks of 64 slots; a block is also a bucket
 * whose 2-bit field picks one of four thresholds (R3_THR, a byte each: 0, 8, 24, 64): a key whose
 * offset in its block is below its block's threshold is bumped, left out of this layer and looked up
 * in the next one. A layer's columns split as body 1's (lo below upper, lo + 1 from there); block b's
 * columns are 64-bit words at b * lo + max(0, b - upper), so a key's row (64 slots from its start)
 * is 2c words in a row. The last layer bumps nothing (every field 0). Layer k's array: its fields
 * (R3_META(nblocks) words, 32 blocks a word), its words, then R3_TAIL zero words (the vector query
 * reads whole rounds of eight columns: at most 8 words past a layer's last).
 */
#define W3 64
#define R3_MAX_LAYERS 16
#define R3_TAIL 8
#define R3_THR UINT32_C(0x40180800)
#define R3_ROW_MUL UINT64_C(0xff51afd7ed558ccd)
#define BODY3 3u
#define R3_META(nb) (((nb) + 31) / 32)

typedef struct rb3_layer {
    const uint64_t *meta, *w; /* into the filter's array */
    uint64_t nblocks, nstarts, upper, seed;
    /* per threshold index, the offsets in a block it bumps: bits [0, threshold) (the AVX-512 queries'
     * one load and bit test) */
    uint64_t bump[4];
    uintptr_t wu; /* the address of w less upper words: blocks from upper on start at wu + 8 b (lo + 1) */
    uint64_t lo;  /* the filter's lo, so that the AVX-512 query reads all it needs from the layer */
} rb3_layer;

BK_INLINE uint64_t r3_words_of(uint64_t nblocks, uint64_t upper, uint32_t lo)
{
    return nblocks * lo + (nblocks - upper);
}
/* A layer's span in the filter's array (fields, words, tail) */
BK_INLINE uint64_t r3_span(uint64_t nblocks, uint64_t upper, uint32_t lo)
{
    return R3_META(nblocks) + r3_words_of(nblocks, upper, lo) + R3_TAIL;
}
/* x of hash h in a layer of that seed: seed 0 (layer 0's first try) the hash itself, else remixed
 * (the later layers, and layer 0 retried when it is the only one) */
BK_INLINE uint64_t r3_x(int k, uint64_t h, uint64_t seed)
{
    (void)k;
    return BK_LIKELY(seed == 0) ? h : bk__remix(h + seed);
}
/* threshold index of block b (2 bits: bits 2 (b mod 32) and up of word b / 32; the shift count 2b taken
 * mod 64, as the machine's shifts take it) */
BK_INLINE unsigned r3_field(const uint64_t *meta, uint64_t b) { return (unsigned)(meta[b >> 5] >> ((2 * b) & 63)) & 3; }
BK_INLINE unsigned r3_thr(unsigned ti) { return (R3_THR >> (8 * ti)) & 0xff; }
/* The same thresholds as a table, for the portable queries (one load where the shifts of r3_thr take
 * four steps); the AVX-512 queries test the layer's masks (rb3_layer.bump) */
static const uint8_t r3_thr_tab[4] = { R3_THR & 0xff, (R3_THR >> 8) & 0xff, (R3_THR >> 16) & 0xff, R3_THR >> 24 };

typedef struct rb_geom {
    uint64_t nblocks;
    uint64_t upper;   /* first block with lo + 1 columns */
    uint32_t lo;
} rb_geom;

/* Block blk's first word (in u128 words from the system's start) and its column count: blk * lo +
 * max(0, blk - upper), written as blk * cols less upper from upper on (the same value, fewer steps) */
BK_INLINE uint64_t rb_block_at(uint32_t lo, uint64_t upper, uint64_t blk, uint32_t *cols)
{
    const bool hi = blk >= upper;
    *cols = lo + hi;
    return blk * *cols - (hi ? upper : 0);
}

struct bk_ribbon {
    /* What a one-key query reads first, together: body 3's layer 0 (a copy of layers[0], so that the
     * query reads its fields without loading the table's address first; at the struct's start, so that
     * the filter's address is the layer's), its path (bk__ribbon_pick_paths), the columns and the uint64
     * calls' seed part. */
    rb3_layer l0;
    bool (*has)(const struct bk_ribbon *f, uint64_t hash);
    uint32_t lo;
    uint64_t u64_fold;    /* bk__hash_u64_fold(u64_flip) */
    u128 *words;          /* the solution, interleaved */
    uint64_t nwords;
    uint64_t nblocks;
    uint64_t upper;
    uint64_t nstarts;     /* (nblocks - 1) * 128: the range of a row's first slot */
    uint64_t mix_seed;    /* the internal seed of the attempt that succeeded */
    uint64_t seed;        /* hash seed of bytes keys */
    uint64_t u64_flip;    /* bk__hash_u64_flip(seed) */
    uint64_t count;       /* distinct keys */
    rb_shard *shards;     /* body 2: nshards shards (owned); NULL for one system (body 1) */
    rb3_layer *layers;    /* body 3: nlayers layers (owned), into words (uint64_t ndata words) */
    uint32_t nlayers;
    uint64_t ndata;
    uint64_t nshards;
    uint64_t nslots;      /* slots of all blocks */
    double fpr;           /* the geometry's FPR */
    bool owns_words;
    /* The batch loop for this CPU (bk__ribbon_pick_paths) */
    size_t (*batch)(const struct bk_ribbon *f, const uint64_t *hashes, size_t n, uint8_t *results);
    const bk_allocator *alloc;
};

BK_INLINE uint64_t words_of(const rb_geom *g) { return g->nblocks * g->lo + (g->nblocks - g->upper); }

/* The FPR of a geometry: a key starts in each of the nblocks - 1 first blocks alike and is checked on
 * that block's columns. */
BK_INLINE double geom_fpr(const rb_geom *g)
{
    uint64_t starts = g->nblocks - 1, low = g->upper < starts ? g->upper : starts;
    return ((double)low * ldexp(1.0, -(int)g->lo) + (double)(starts - low) * ldexp(1.0, -(int)(g->lo + 1))) /
           (double)starts;
}

/* A shard's geometry as its table entry has it. */
BK_INLINE rb_geom shard_geom_of(const bk_ribbon *f, const rb_shard *sh)
{
    rb_geom g = { sh->nstarts / W + 1, sh->upper, f->lo };
    return g;
}

/* ---- a key's row ---- */

/* x of hash h: attempt 0 takes the hash as it is (already well mixed); later attempts remix it with
 * their own seed, which gives every key a new row. */
BK_INLINE uint64_t rb_mix(uint64_t h, uint64_t mix_seed)
{
    return BK_LIKELY(mix_seed == 0) ? h : bk__remix(h + mix_seed);
}

#define COEF_MUL UINT64_C(0x9e3779b97f4a7c15)

/* x of hash h in a shard (body 2) with internal seed s: one multiply by an odd constant (h is a
 * well-mixed hash; its shard came from its high bits, and the product's high bits, the row's start,
 * depend on all of h's bits). */
#define SHARD_MUL UINT64_C(0xd6e8feb86659fd93)
BK_INLINE uint64_t rb_x2(uint64_t h, uint64_t s) { return (h ^ s) * SHARD_MUL; }

/* The row of x: 128 coefficient bits (bit 0, the row's first slot, always 1) from a full mix of x;
 * its first slot from the high bits of x (multiply-shift); its fingerprint from the low 32 bits. */
BK_INLINE u128 rb_coef(uint64_t x)
{
    uint64_t a = bk__remix(x);
    return ((u128)(a * COEF_MUL) << 64) | (a | 1);
}
BK_INLINE uint32_t rb_fp(uint64_t x) { return (uint32_t)x; }

BK_INLINE unsigned rb_parity(u128 v) { return (unsigned)__builtin_parityll((uint64_t)v ^ (uint64_t)(v >> 64)); }


/* Whether this CPU's POPCNT paths are taken (not when the tests ask for the portable ones). */
#if defined(__x86_64__) && defined(__GNUC__)
#  define RB_HW_POPCNT 1
#endif
BK_INLINE bool use_popcnt(void)
{
#ifdef RB_HW_POPCNT
    return !bk__ribbon_portable && (bk__cpu_usable() & BK_CPU_POPCNT);
#else
    return false;
#endif
}

/* ribbon.c */
BK_HIDDEN bk_status bk__ribbon_geom_check(const rb_geom *g);
BK_HIDDEN bk_status bk__ribbon_new_filter(const bk_allocator *a, uint64_t n, const rb_geom *g, uint64_t seed,
                                          uint64_t mix_seed, bool alloc_words, bk_ribbon **out);
BK_HIDDEN bk_status bk__ribbon_new_table(const bk_allocator *a, uint64_t n, uint32_t lo, uint64_t seed, uint64_t nrec,
                                         size_t size, void **table, bk_ribbon **out);
BK_HIDDEN bk_status bk__ribbon_new_sharded(const bk_allocator *a, uint64_t n, uint64_t S, uint32_t lo,
                                           uint64_t seed, bk_ribbon **out);
BK_HIDDEN void bk__ribbon_sharded_totals(bk_ribbon *f);
/* ribbon3.c: body 3 (build, its query paths, its table from a file's records) */
BK_HIDDEN size_t bk__ribbon_sort_unique(uint64_t *v, uint64_t *tmp, size_t n);
BK_HIDDEN uint32_t bk__ribbon_lo_for(double p);
BK_HIDDEN void bk__ribbon_set_upper(rb_geom *g, double p);
BK_HIDDEN bk_status bk__ribbon3_build(const uint64_t *h, size_t n, double p, uint32_t attempts,
                                      const bk_ribbon_options *o, bk_ribbon **out);
BK_HIDDEN void bk__ribbon3_pick_paths(bk_ribbon *f);
BK_HIDDEN bk_status bk__ribbon3_new(const bk_allocator *a, uint64_t n, uint32_t nlayers, uint32_t lo, uint64_t seed,
                                    bk_ribbon **out);
BK_HIDDEN void bk__ribbon3_totals(bk_ribbon *f);
BK_HIDDEN uint64_t bk__ribbon3_size(uint64_t n, double p, rb_geom *g0);
BK_HIDDEN uint64_t bk__ribbon3_build_memory(uint64_t n, double p);
/* ribbon_query.c: the query paths of f for this CPU (the empty filter's, one system's, shards') */
BK_HIDDEN void bk__ribbon_pick_paths(bk_ribbon *f);

/* The AVX-512 query kernels (bodies 2 and 3) in inline assembly, one to four rounds of eight columns:
 * ASM(text) emits the masks and the first round (its eight parities in the low bits of got) followed by
 * text; ROUND(off) is a further round at byte offset off, RB_512_MORE(shift) merges its parities into got
 * at bit shift. */
#define RB_512_MORE(shift) "kmovw %%k1, %k[t]\n\t" "shl $" shift ", %[t]\n\t" "or %[t], %[got]\n\t"
#define RB_512_BY_ROUNDS(rounds, ASM, ROUND)                                                                \
    do {                                                                                                    \
        if ((rounds) == 1) ASM("");                                                                         \
        else if ((rounds) == 2) ASM(ROUND("64") RB_512_MORE("8"));                                          \
        else if ((rounds) == 3) ASM(ROUND("64") RB_512_MORE("8") ROUND("128") RB_512_MORE("16"));          \
        else ASM(ROUND("64") RB_512_MORE("8") ROUND("128") RB_512_MORE("16") ROUND("192") RB_512_MORE("24")); \
    } while (0)

#endif
