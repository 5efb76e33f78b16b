/* Ribbon filter: the file bodies (docs/FORMAT.md 6.9) and the type's table. */
#include "filters/ribbon_impl.h"

/* ---- serialization (body layouts in docs/FORMAT.md) ----
 * Body 1 (one system):
 * offset 0  u32 ribbon width (128), u32 lo (columns of the first blocks), u64 blocks, u64 upper (first
 *           block with lo + 1 columns; = blocks when none), u64 count (distinct keys), u64 mix_seed
 *           (internal seed of the construction)                                          (40 bytes)
 * then zero padding to 64, then the words: (blocks * lo + blocks - upper) * 16 bytes.
 * Body 2 (shards):
 * offset 0  u32 2 (body 1's width field: body 1 readers refuse it), u32 lo, u64 shards S, u64 count,
 *           u64 words N                                                                   (32 bytes)
 * then zero padding to 64, then S records of 16 bytes (u32 blocks, u32 upper, u64 mix_seed), zero
 * padding to 64, then the words: N * 16 bytes, shard after shard, a block's first 64 slots of each
 * column (one u64 each), then its last 64; then 64 zero bytes.
 * Body 3 (bumped Ribbon, width 64):
 * offset 0  u32 3, u32 lo, u64 count, u32 layers L, u32 thresholds (R3_THR), u64 words N    (32 bytes)
 * then zero padding to 64, then L records of 24 bytes (u64 blocks, u64 upper, u64 seed), zero
 * padding to 64, then the N u64 words: each layer's fields, words and R3_TAIL zero
 * words, layer after layer (the filter's array as the query reads it). */

/* The words of a body (bytes of them, at the next 64-byte boundary): borrowed from a mapping or
 * copied into the filter's own array. */
static bk_status read_words(bk_reader *r, bk_ribbon *f, uint64_t bytes)
{
    const uint8_t *data = NULL;
    bk_status s;
    if ((s = bk__r_align(r, 64)) || (s = bk__r_array_begin(r, bytes, &data))) return s;
    if (!r->borrow) {
        f->words = bk__calloc_aligned(f->alloc, (size_t)bytes);
        f->owns_words = f->words != NULL;
        if (!f->words) return BK_ENOMEM;
    }
    uint64_t *words = (uint64_t *)(void *)f->words;
    if ((s = bk__r_array_end(r, bytes, data, &words))) return s;
    f->words = (u128 *)(void *)words;
    return BK_OK;
}

static bk_status encode_bumped(const bk_ribbon *f, bk_writer *w)
{
    bk_status s;
    if ((s = bk__w_u32(w, BODY3)) || (s = bk__w_u32(w, f->lo)) || (s = bk__w_u64(w, f->count)) ||
        (s = bk__w_u32(w, f->nlayers)) || (s = bk__w_u32(w, R3_THR)) || (s = bk__w_u64(w, f->ndata)) ||
        (s = bk__w_align(w, 64)))
        return s;
    for (uint32_t k = 0; k < f->nlayers; k++) {
        const rb3_layer *L = &f->layers[k];
        if ((s = bk__w_u64(w, L->nblocks)) || (s = bk__w_u64(w, L->upper)) || (s = bk__w_u64(w, L->seed))) return s;
    }
    if ((s = bk__w_align(w, 64))) return s;
    return bk__w_bytes(w, f->words, (size_t)f->ndata * 8);
}

/* Whether layer L's array is one the build writes: its fields past its blocks zero (all of them in
 * the last layer, which bumps nothing) and its tail zero. */
static bool bumped_layer_ok(const rb3_layer *L, uint32_t lo, bool last)
{
    const uint64_t mw = R3_META(L->nblocks), nw = r3_words_of(L->nblocks, L->upper, lo);
    if (!bk__tail_zero(L->meta, mw, last ? 0 : 2 * L->nblocks)) return false;
    return bk__tail_zero(L->w, nw + R3_TAIL, nw * 64);
}

/* Body 3 after its leading field: every layer's geometry checked and the words summed before the
 * words are read. */
static bk_status decode_bumped(bk_reader *r, void **out)
{
    uint32_t lo, L, thr;
    uint64_t count, ndata;
    bk_status s;
    if ((s = bk__r_u32(r, &lo)) || (s = bk__r_u64(r, &count)) || (s = bk__r_u32(r, &L)) || (s = bk__r_u32(r, &thr)) ||
        (s = bk__r_u64(r, &ndata)) || (s = bk__r_align(r, 64)))
        return s;
    if (lo >= MAX_COLS || L < 1 || L > R3_MAX_LAYERS || thr != R3_THR || count == 0 ||
        ndata > BK_MAX_FILTER_BYTES / 8)
        return BK_ECORRUPT;
    bk_ribbon *f;
    if ((s = bk__ribbon3_new(r->alloc, count, L, lo, r->seed, &f))) return s;
    uint64_t total = 0, slots = 0;
    for (uint32_t k = 0; k < L && s == BK_OK; k++) {
        rb3_layer *y = &f->layers[k];
        if ((s = bk__r_u64(r, &y->nblocks)) || (s = bk__r_u64(r, &y->upper)) || (s = bk__r_u64(r, &y->seed))) break;
        if (y->nblocks < 2 || y->nblocks > (UINT64_C(1) << 40) || y->upper > y->nblocks ||
            (lo == 0 && y->upper == y->nblocks))
            s = BK_ECORRUPT;
        else {
            total += r3_span(y->nblocks, y->upper, lo);
            slots += y->nblocks * W3;
            if (total > ndata) s = BK_ECORRUPT;
        }
    }
    if (s == BK_OK && (total != ndata || count > slots)) s = BK_ECORRUPT;
    if (s == BK_OK && (s = read_words(r, f, ndata * 8)) == BK_OK) {
        f->ndata = ndata;
        bk__ribbon3_totals(f);
        for (uint32_t k = 0; k < L && s == BK_OK; k++)
            if (!bumped_layer_ok(&f->layers[k], lo, k + 1 == L)) s = BK_ECORRUPT;
    }
    if (s != BK_OK) {
        bk_ribbon_free(f);
        return s;
    }
    bk__ribbon3_pick_paths(f);
    *out = f;
    return BK_OK;
}

static bk_status encode_sharded(const bk_ribbon *f, bk_writer *w)
{
    bk_status s;
    if ((s = bk__w_u32(w, BODY2)) || (s = bk__w_u32(w, f->lo)) || (s = bk__w_u64(w, f->nshards)) ||
        (s = bk__w_u64(w, f->count)) || (s = bk__w_u64(w, f->nwords)) || (s = bk__w_align(w, 64)))
        return s;
    for (uint64_t i = 0; i < f->nshards; i++) {
        const rb_shard *sh = &f->shards[i];
        if ((s = bk__w_u32(w, (uint32_t)(sh->nstarts / W + 1))) || (s = bk__w_u32(w, (uint32_t)sh->upper)) ||
            (s = bk__w_u64(w, sh->seed)))
            return s;
    }
    if ((s = bk__w_align(w, 64))) return s;
    return bk__w_bytes(w, f->words, (size_t)(f->nwords + TAIL_WORDS) * 16); /* the tail is zero */
}

static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_ribbon *f = vf;
    if (f->layers) return encode_bumped(f, w);
    if (f->shards) return encode_sharded(f, w);
    bk_status s;
    if ((s = bk__w_u32(w, W)) || (s = bk__w_u32(w, f->lo)) || (s = bk__w_u64(w, f->nblocks)) ||
        (s = bk__w_u64(w, f->upper)) || (s = bk__w_u64(w, f->count)) || (s = bk__w_u64(w, f->mix_seed)) ||
        (s = bk__w_align(w, 64)))
        return s;
    return bk__w_bytes(w, f->words, (size_t)f->nwords * 16);
}

/* Body 2 after its leading field: every shard's geometry checked and the words summed before the
 * words are touched. */
static bk_status decode_sharded(bk_reader *r, void **out)
{
    uint32_t lo;
    uint64_t S, count, nwords;
    bk_status s;
    if ((s = bk__r_u32(r, &lo)) || (s = bk__r_u64(r, &S)) || (s = bk__r_u64(r, &count)) ||
        (s = bk__r_u64(r, &nwords)) || (s = bk__r_align(r, 64)))
        return s;
    if (lo >= MAX_COLS || S < 2 || count == 0 || nwords > BK_MAX_FILTER_BYTES / 16) return BK_ECORRUPT;
    /* the records must be there before the table is allocated */
    if (S > (r->len - r->off) / 16) return BK_ETRUNCATED;
    bk_ribbon *f;
    if ((s = bk__ribbon_new_sharded(r->alloc, count, S, lo, r->seed, &f))) return s;
    uint64_t off = 0, slots = 0;
    for (uint64_t i = 0; i < S; i++) {
        uint32_t nb, up;
        uint64_t seed;
        if ((s = bk__r_u32(r, &nb)) || (s = bk__r_u32(r, &up)) || (s = bk__r_u64(r, &seed))) break;
        rb_geom g = { nb, up, lo };
        if (nb < 2 || up > nb || (lo == 0 && up == nb) || off + words_of(&g) > nwords) {
            s = BK_ECORRUPT;
            break;
        }
        f->shards[i] = (rb_shard){ off, seed, (uint64_t)(nb - 1) * W, up };
        off += words_of(&g);
        slots += (uint64_t)nb * W;
    }
    if (s == BK_OK && (off != nwords || count > slots)) s = BK_ECORRUPT;
    const uint64_t bytes = (nwords + TAIL_WORDS) * 16;
    if (s == BK_OK && (s = read_words(r, f, bytes)) == BK_OK &&
        !bk__tail_zero((const uint64_t *)(const void *)f->words, bytes / 8, nwords * 128))
        s = BK_ECORRUPT;
    if (s != BK_OK) {
        bk_ribbon_free(f);
        return s;
    }
    f->nwords = nwords;
    bk__ribbon_sharded_totals(f);
    bk__ribbon_pick_paths(f);
    *out = f;
    return BK_OK;
}

static bk_status v_decode(bk_reader *r, void **out)
{
    uint32_t width, lo;
    uint64_t nblocks, upper, count, mix_seed;
    bk_status s;
    *out = NULL;
    if ((s = bk__r_u32(r, &width))) return s;
    if (width == BODY2) return decode_sharded(r, out);
    if (width == BODY3) return decode_bumped(r, out);
    if ((s = bk__r_u32(r, &lo)) || (s = bk__r_u64(r, &nblocks)) || (s = bk__r_u64(r, &upper)) ||
        (s = bk__r_u64(r, &count)) || (s = bk__r_u64(r, &mix_seed)) || (s = bk__r_align(r, 64)))
        return s;
    /* lo + 1 columns at most MAX_COLS; at least two blocks (a row starts in one and may reach the
     * next); upper a block index or the count; some column somewhere; no more keys than slots. */
    if (width != W || lo >= MAX_COLS || nblocks < 2 || nblocks > (UINT64_C(1) << 40) || upper > nblocks ||
        (lo == 0 && upper == nblocks) || count > nblocks * W)
        return BK_ECORRUPT;
    rb_geom g = { nblocks, upper, lo };
    if ((s = bk__ribbon_geom_check(&g)) != BK_OK) return s;
    uint64_t bytes = words_of(&g) * 16;
    const uint8_t *data;
    if ((s = bk__r_array_begin(r, bytes, &data))) return s;
    bk_ribbon *f;
    if ((s = bk__ribbon_new_filter(r->alloc, count, &g, r->seed, mix_seed, !r->borrow, &f))) return s;
    uint64_t *words = (uint64_t *)(void *)f->words;
    if ((s = bk__r_array_end(r, bytes, data, &words))) {
        bk_ribbon_free(f);
        return s;
    }
    f->words = (u128 *)(void *)words;
    /* The empty filter's solution is zero: a file claiming no keys with anything else is not ours. */
    if (count == 0 && !bk__tail_zero(words, bytes / 8, 0)) {
        bk_ribbon_free(f);
        return BK_ECORRUPT;
    }
    *out = f;
    return BK_OK;
}

BK__VT_ADAPTERS(ribbon)

/* A static set: no add, remove, merge or clear (NULL entries: BK_ENOTSUP through bk_filter). */
BK_HIDDEN const bk_vtable bk__ribbon_vtable = {
    .type = BK_TYPE_RIBBON,
    BK__VT_ENTRIES,
};
