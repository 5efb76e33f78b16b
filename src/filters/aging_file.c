/* The aging filter's statistics and its file body (docs/FORMAT.md, "aging"); the ring itself is
 * in aging.c. */
#include <math.h>
#include "filters/aging_impl.h"
#include "bloomkit/blocked.h"

/* ================= statistics ================= */

static uint64_t slot_bits_set(const bk_aging *f, uint32_t slot)
{
    uint64_t bw = f->bw, stride = (uint64_t)f->g * bw, set = 0;
    const uint64_t *w = f->words;
    const bool hw = (bk__cpu_usable() & BK_CPU_POPCNT) != 0;
    for (uint64_t b = 0; b < f->blocks; b++, w += stride) {
        const uint64_t *x = w + bw * slot_pos(slot, b, f->g);
        for (uint64_t i = 0; i < bw; i++) set += (uint64_t)bk__popcount64(x[i], hw);
    }
    return set;
}

/* FPR of the live slots from their key counts (per generation: the exact split-block formula, or
 * the wide blocks' Poisson sum). */
static double fpr_of(const bk_aging *f, slot_set live)
{
    double log_miss = 0;
    for (uint32_t j = 0; j < f->g; j++)
        if ((live >> j & 1) && f->count[j]) log_miss += log1p(-bk__aging_gen_fpr(f->blocks, f->count[j], f->bw, f->k));
    return log_miss < 0 ? -expm1(log_miss) : 0.0;
}

bk_status bk_aging_get_info(const bk_aging *f, bk_aging_info *out)
{
    if (!f || !out) return BK_EINVAL;
    memset(out, 0, sizeof *out);
    uint64_t now = f->mode == BK_AGING_TIME ? now_ms(f) : 0;
    slot_set live = f->mode == BK_AGING_TIME ? live_at(f, epoch_at(f, now)) : all_slots(f);
    out->mode = f->mode;
    out->generations = f->g;
    out->window = f->window;
    out->gen_capacity = f->gen_cap;
    out->period_ms = f->period;
    out->inserted = f->inserted;
    for (uint32_t a = 0; a < f->g; a++) {
        uint32_t slot = (uint32_t)((f->epoch - a) % f->g);
        if (!(live >> slot & 1)) continue;
        out->live++;
        out->gen_count[a] = f->count[slot];
        out->gen_fill[a] = (double)slot_bits_set(f, slot) / ((double)f->blocks * 64.0 * f->bw);
    }
    if (f->mode == BK_AGING_COUNT) {
        out->slack = f->g * f->gen_cap - 1 - f->window;
        /* The current generation and the g - 1 complete ones before it. */
        uint64_t held = (f->g - 1) * f->gen_cap + f->count[cur_slot(f)];
        out->covered = f->inserted < held ? f->inserted : held;
    } else {
        out->slack = f->period;
        uint64_t e = epoch_at(f, now);
        /* The oldest live epoch began at (e - live + 1) * period; nothing before the creation. */
        uint64_t from = out->live ? (e - out->live + 1) * f->period : now;
        if (from < f->start) from = f->start;
        out->covered = now > from ? now - from : 0;
    }
    out->fpr_now = fpr_of(f, live);
    return BK_OK;
}

void bk_aging_stats(const bk_aging *f, bk_stats *out)
{
    slot_set live = live_now(f);
    uint64_t set = 0, count = 0;
    bool over = false;
    for (uint32_t j = 0; j < f->g; j++) {
        if (!(live >> j & 1)) continue;
        set += slot_bits_set(f, j);
        count += f->count[j];
        over |= f->count[j] > f->gen_cap;
    }
    bk__stats_bits(out, BK_TYPE_AGING, f->k, f->capacity, count, f->nwords * 64, f->nwords * 8, set);
    out->est_cardinality = (double)count;
    out->fpr_target = f->fpr_target;
    out->fpr_now = fpr_of(f, live);
    out->saturated = over;
    out->subfilters = f->g;
    out->seed = f->seed;
}

uint64_t bk_aging_seed(const bk_aging *f) { return f->seed; }
bk_aging_mode bk_aging_mode_of(const bk_aging *f) { return f->mode; }
uint64_t bk_aging_window(const bk_aging *f) { return f->window; }
uint32_t bk_aging_generations(const bk_aging *f) { return f->g; }
uint64_t bk_aging_memory(const bk_aging *f) { return f->nwords * 8; }

/* ================= serialization =================
 * Body (all little-endian; docs/FORMAT.md, "aging"):
 *   offset 0    u32 mode          0 = count window, 1 = time window
 *   offset 4    u32 generations   g in [2, 16]
 *   offset 8    u64 blocks        256-bit blocks per generation, >= 1
 *   offset 16   u64 window        W insertions or T ms, >= 1 (time: >= g - 1)
 *   offset 24   u64 capacity      keys per window it is sized for (count windows: = window)
 *   offset 32   u64 gen_capacity  C = ceil(capacity / (g - 1))
 *   offset 40   u64 period        time windows: ceil(window / (g - 1)) ms; count windows: 0
 *   offset 48   f64 fpr_target    in (0, 1)
 *   offset 56   u64 epoch         turns of the ring (time windows: ms / period of the current generation)
 *   offset 64   u64 inserted      insertions since creation or clear
 *   offset 72   u64 start         time windows: ms of creation or clear; count windows: 0
 *   offset 80   u64 count[16]     insertions per slot since it was cleared (slots >= g: 0; count
 *                                 windows: at most C)
 *   offset 208  zero padding to offset 256 (body 1)
 *   offset 256  the ring: blocks * g * 4 little-endian u64 words; bucket b is words [b*g*4, (b+1)*g*4),
 *               its 4-word block (j + popcount(b)) mod g is slot j (the generation of epoch e is slot
 *               e mod g);
 *               each slot holds the SPLIT256 bits of a blocked filter of `blocks` blocks.
 * Body 2 (the wide blocks) is body 1 with these differences:
 *   offset 0    u32 mode + 2      2 = count window, 3 = time window (body 1 readers refuse it)
 *   offset 208  u32 block_bits    512 or 1024
 *   offset 212  u32 k             probes per key, in [1, 16]
 *   offset 216  zero padding to offset 256
 *   offset 256  the ring: blocks * g * block_bits / 64 words, block q of bucket b at words
 *               [(b*g + q) * block_bits/64, ...), slot j in block (j + popcount(b)) mod g; a slot
 *               holds the first k probes of the blocked engine's 512-bit (salt row 0) or 1024-bit
 *               (salt row 1) mask of the low 32 bits of the hash.
 * The hash seed is in the container header.
 */
static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_aging *f = vf;
    bk_status s;
    bool wide = f->bw != 4;
    if ((s = bk__w_u32(w, (uint32_t)f->mode + (wide ? 2u : 0u))) || (s = bk__w_u32(w, f->g)) || (s = bk__w_u64(w, f->blocks)) ||
        (s = bk__w_u64(w, f->window)) || (s = bk__w_u64(w, f->capacity)) || (s = bk__w_u64(w, f->gen_cap)) ||
        (s = bk__w_u64(w, f->period)) || (s = bk__w_f64(w, f->fpr_target)) || (s = bk__w_u64(w, f->epoch)) ||
        (s = bk__w_u64(w, f->inserted)) || (s = bk__w_u64(w, f->start)))
        return s;
    for (uint32_t j = 0; j < BK_AGING_MAX_GENERATIONS; j++)
        if ((s = bk__w_u64(w, f->count[j]))) return s;
    if (wide && ((s = bk__w_u32(w, f->bw * 64)) || (s = bk__w_u32(w, f->k)))) return s;
    if ((s = bk__w_align(w, 256))) return s;
    return bk__w_u64_array(w, f->words, (size_t)f->nwords);
}

static bk_status v_decode(bk_reader *r, void **out)
{
    uint32_t mode, g;
    uint64_t blocks, window, cap, gen_cap, period, epoch, inserted, start, count[BK_AGING_MAX_GENERATIONS];
    double fpr;
    bk_status s;
    *out = NULL;
    if ((s = bk__r_u32(r, &mode)) || (s = bk__r_u32(r, &g)) || (s = bk__r_u64(r, &blocks)) ||
        (s = bk__r_u64(r, &window)) || (s = bk__r_u64(r, &cap)) || (s = bk__r_u64(r, &gen_cap)) ||
        (s = bk__r_u64(r, &period)) || (s = bk__r_f64(r, &fpr)) || (s = bk__r_u64(r, &epoch)) ||
        (s = bk__r_u64(r, &inserted)) || (s = bk__r_u64(r, &start)))
        return s;
    for (uint32_t j = 0; j < BK_AGING_MAX_GENERATIONS; j++)
        if ((s = bk__r_u64(r, &count[j]))) return s;
    uint32_t bw = 4, k = 8;
    if (mode >= 2 && mode <= 3) { /* body 2: wide blocks */
        uint32_t bits;
        if ((s = bk__r_u32(r, &bits)) || (s = bk__r_u32(r, &k))) return s;
        if ((bits != 512 && bits != 1024) || k < 1 || k > 16) return BK_ECORRUPT;
        bw = bits / 64;
        mode -= 2;
    }
    if ((s = bk__r_align(r, 256))) return s;
    if (mode > BK_AGING_TIME || g < 2 || g > BK_AGING_MAX_GENERATIONS || blocks == 0 || window == 0 || cap == 0 ||
        !(fpr > 0 && fpr < 1))
        return BK_ECORRUPT;
    if (blocks > BK_MAX_FILTER_BYTES / (8 * bw) / g) return BK_ECORRUPT;
    if (gen_cap != cap / (g - 1) + (cap % (g - 1) != 0)) return BK_ECORRUPT;
    if (mode == BK_AGING_COUNT) {
        if (window != cap || period != 0 || start != 0) return BK_ECORRUPT;
        for (uint32_t j = 0; j < g; j++)
            if (count[j] > gen_cap) return BK_ECORRUPT;
    } else if (window < g - 1 || period != window / (g - 1) + (window % (g - 1) != 0)) {
        return BK_ECORRUPT;
    }
    for (uint32_t j = g; j < BK_AGING_MAX_GENERATIONS; j++)
        if (count[j]) return BK_ECORRUPT;
    uint64_t bytes = blocks * g * bw * 8;
    if (bytes > r->len - r->off) return BK_ETRUNCATED;
    /* the ring goes straight from the body into the filter's own array (a pulled body, an RDB load,
     * never sits in memory beside it) */
    const uint8_t *data;
    if ((s = bk__r_array_begin(r, bytes, &data))) return s;
    bk_aging *f;
    if ((s = bk__aging_alloc(r->alloc, (bk_aging_mode)mode, g, blocks, bw, k, !r->borrow, &f)) != BK_OK) return s;
    if ((s = bk__r_array_end(r, bytes, data, &f->words)) != BK_OK) {
        bk_aging_free(f);
        return s;
    }
    f->mode = (bk_aging_mode)mode;
    f->seed = r->seed;
    f->flip = bk__hash_u64_flip(f->seed);
    f->window = window;
    f->capacity = cap;
    f->gen_cap = gen_cap;
    f->period = period;
    f->fpr_target = fpr;
    set_epoch(f, epoch);
    f->inserted = inserted;
    f->start = start;
    memcpy(f->count, count, sizeof count);
    *out = f;
    return BK_OK;
}

BK__VT_ADAPTERS(aging)
BK__VT_WRITE_ADAPTERS(aging)
static bk_status v_add_if_absent_hash(void *f, uint64_t h) { return bk_aging_add_if_absent_hash(f, h); }
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n, size_t *done)
{
    return bk__vt_all_or_none(bk_aging_add_hashes(f, h, n), n, done);
}
static bk_status v_merge(void *d, const void *s) { return bk_aging_union(d, s); }

BK_HIDDEN const bk_vtable bk__aging_vtable = {
    .type = BK_TYPE_AGING,
    BK__VT_ENTRIES,
    BK__VT_WRITE_ENTRIES,
    .add_hashes = v_add_hashes,
    .merge = v_merge,
    .add_if_absent_hash = v_add_if_absent_hash,
};
