/* Quotient filter body format (docs/FORMAT.md): encode, decode with full validation of the
 * layout invariants, the vtable and the test hooks. */
#include "filters/quotient_slots.h"

/* ---- serialization (body layout in docs/FORMAT.md) ----
 * Body 4 (every table of any slot count made by this version):
 * offset 0   u32 0, u32 body version 4, u32 remainder_bits, u32 0, u64 slots, u64 physical slots,
 *            f64 max_load, u64 capacity, f64 fpr_target, u64 slots used, u64 distinct, u64 total,
 *            u64 array bytes, zeros up to 128
 * then the slot array (64-byte aligned): little-endian u64 words, the groups of eight blocks
 * described in quotient_slots.h.
 * Bodies 1 and 2 (earlier versions: 32-bit offsets, groups of two blocks):
 * Body 1 (2^q slots, the 1.0 rule's spare slots; still written for such a table, so that 1.0
 * readers load it):
 * offset 0   u32 quotient_bits, u32 remainder_bits, f64 max_load, u64 capacity, f64 fpr_target,
 *            u64 slots used, u64 distinct, u64 total, u64 array bytes            (64 bytes)
 * Body 2 (any slot count): as body 4 with body version 2 and u32 0 for the flags
 * then the array of groups of two blocks: one word of the two blocks' 32-bit offsets, then each
 * block's 2 + r words. Such a table is converted to the layout above when loaded (a mapping of such
 * a file gets its array converted into memory) and saved back in the body it came in.
 * Body 3 (a filter of stages, bk_quotient_expand):
 * offset 0   u32 0, u32 body version 3, u32 stages K (2..64), u32 0
 *            then K stage bodies, oldest first, each a whole body 1, 2 or 4 (the last takes inserts).
 * Body 5 (an expanding filter, bk_xquotient_new; quotient_expand.c):
 * offset 0   u32 0, u32 body version 5, u32 doublings (0..32), u32 0, f64 FPR bound, u64 keys added
 *            then its table as a whole body 4 (remainder_bits: the slot width).
 * Decoding checks every invariant listed in quotient_slots.h, and that the three counters match
 * the array, before the filter is used. */

/* Words of the array of bodies 1 and 2 for x physical slots. */
static uint64_t pairs_words(uint64_t x, uint32_t rb) { return x / 128 * (1 + 2 * (2 + (uint64_t)rb)); }


static bool slots_zero(const bk_quotient *f, uint64_t a, uint64_t b) /* [a, b) */
{
    for (uint64_t j = a; j < b; j++)
        if (get_slot(f, j) || is_rend(f, j)) return false;
    return true;
}

static bk_status validate(const bk_quotient *f, uint64_t used, uint64_t distinct, uint64_t total)
{
    uint64_t nocc = 0, nrend = 0, o = 0;
    for (uint64_t b = 0; b < f->nblocks; b++) {
        nocc += bk__popcount_swar(occ_word(f, b));
        nrend += bk__popcount_swar(rend_word(f, b));
        if ((b << 6) >= f->nslots && occ_word(f, b)) return BK_ECORRUPT;
        /* each block's offset from the one before (true values, carried), stored saturated */
        o = b == 0 ? off_first(f, false) : off_next(f, b, o, false);
        if (off_byte(f, b) != (o < QF_OFF_SAT ? o : QF_OFF_SAT)) return BK_ECORRUPT;
        if (f->sat && f->sat[b] != o) return BK_ECORRUPT; /* the table of true offsets (in memory) */
    }
    /* the offsets words of a group past the last block: a partial last group leaves its high bytes 0 */
    if (f->nblocks & 7) {
        unsigned k = (unsigned)(f->nblocks & 7);
        if (f->words[(f->nblocks >> QF_GROUP_SHIFT) * f->group_words] >> (8 * k)) return BK_ECORRUPT;
    }
    if (nocc != nrend) return BK_ECORRUPT;
    uint64_t cursor = 0, u = 0, d = 0, t = 0;
    for (uint64_t q = bk__qf_next_occ(f, 0); q != QF_NONE; q = bk__qf_next_occ(f, q + 1)) {
        uint64_t st = q > cursor ? q : cursor;
        if (!slots_zero(f, cursor, st)) return BK_ECORRUPT;
        uint64_t e = select_from(f, st, 1, false);
        if (e == QF_NONE) return BK_ECORRUPT;
        uint64_t prev = 0;
        for (uint64_t i = st; i <= e;) {
            uint64_t x, c;
            unsigned len = parse(f, i, e, &x, &c);
            if (len == 0 || x == 0 || x <= prev || bk__qf_enc_len(c, f->rmask) != len) return BK_ECORRUPT;
            prev = x;
            i += len;
            d++;
            t = t > UINT64_MAX - c ? UINT64_MAX : t + c;
        }
        u += e - st + 1;
        cursor = e + 1;
    }
    if (!slots_zero(f, cursor, f->xslots)) return BK_ECORRUPT;
    /* the unused bits of the last remainder word of each block are part of no slot: nothing to check */
    if (u != used || d != distinct || t != total || used > f->max_used) return BK_ECORRUPT;
    return BK_OK;
}

/* The array in the layout of bodies 1 and 2: for each pair of blocks, a word of their 32-bit
 * offsets (true values, carried block to block), then the two blocks' words (adjacent here too: a
 * group of eight starts at an even block). */
static bk_status encode_pairs(const bk_quotient *f, bk_writer *w)
{
    const uint64_t bw = 2 + f->rbits;
    uint64_t o = 0;
    bk_status s;
    for (uint64_t b = 0; b < f->nblocks; b += 2) {
        uint64_t o0 = b == 0 ? off_first(f, false) : off_next(f, b, o, false);
        o = off_next(f, b + 1, o0, false);
        if ((s = bk__w_u64(w, o0 | o << 32)) || (s = bk__w_u64_array(w, blk(f, b), (size_t)(2 * bw)))) return s;
    }
    return BK_OK;
}

static bk_status encode_table(const bk_quotient *f, bk_writer *w)
{
    bk_status s;
    if (f->body == 1) {
        if ((s = bk__w_u32(w, f->qbits)) || (s = bk__w_u32(w, f->rbits))) return s;
    } else {
        if ((s = bk__w_u32(w, 0)) || (s = bk__w_u32(w, f->body)) || (s = bk__w_u32(w, f->rbits)) ||
            (s = bk__w_u32(w, 0)) || (s = bk__w_u64(w, f->nslots)) || (s = bk__w_u64(w, f->xslots)))
            return s;
    }
    uint64_t bytes = f->body == 4 ? f->nwords * 8 : pairs_words(f->xslots, f->rbits) * 8;
    if ((s = bk__w_f64(w, f->max_load)) || (s = bk__w_u64(w, f->capacity)) || (s = bk__w_f64(w, f->fpr_target)) ||
        (s = bk__w_u64(w, f->used)) || (s = bk__w_u64(w, f->distinct)) || (s = bk__w_u64(w, f->total)) ||
        (s = bk__w_u64(w, bytes)) || (s = bk__w_align(w, 64)))
        return s;
    return f->body == 4 ? bk__w_u64_array(w, f->words, (size_t)f->nwords) : encode_pairs(f, w);
}

static bk_status v_encode(const void *vf, bk_writer *w)
{
    const bk_quotient *f = vf;
    bk_status s;
    if (f->xq) {
        if ((s = bk__w_u32(w, 0)) || (s = bk__w_u32(w, 5)) || (s = bk__w_u32(w, f->xq_doublings)) ||
            (s = bk__w_u32(w, 0)) || (s = bk__w_f64(w, f->xq_bound)) || (s = bk__w_u64(w, f->xq_keys)))
            return s;
        return encode_table(f, w);
    }
    if (!f->nolder) return encode_table(f, w);
    if ((s = bk__w_u32(w, 0)) || (s = bk__w_u32(w, 3)) || (s = bk__w_u32(w, f->nolder + 1)) || (s = bk__w_u32(w, 0)))
        return s;
    for (uint32_t i = 0; i < f->nolder; i++)
        if ((s = encode_table(f->older[i], w))) return s;
    return encode_table(f, w);
}

/* One table (body 1 or 2); with `staged`, a body 3 of stages is taken too. */
static bk_status decode_table(bk_reader *r, bool staged, bk_quotient **out);

static bk_status decode_stages(bk_reader *r, bk_quotient **out)
{
    uint32_t k, zero;
    bk_status s;
    if ((s = bk__r_u32(r, &k)) || (s = bk__r_u32(r, &zero))) return s;
    if (k < 2 || k > QF_MAX_STAGES || zero) return BK_ECORRUPT;
    bk_quotient *t[QF_MAX_STAGES] = { 0 };
    for (uint32_t i = 0; i < k && s == BK_OK; i++) {
        s = decode_table(r, false, &t[i]);
        /* every stage has the first one's seed (the reader's) and max_load */
        if (s == BK_OK && t[i]->max_load != t[0]->max_load) s = BK_ECORRUPT;
    }
    bk_quotient **arr = s ? NULL : bk__calloc(t[0]->alloc, k - 1, sizeof *arr);
    if (!s && !arr) s = BK_ENOMEM;
    if (s) {
        for (uint32_t i = 0; i < k; i++) bk_quotient_free(t[i]);
        return s;
    }
    for (uint32_t i = 0; i + 1 < k; i++) arr[i] = t[i];
    t[k - 1]->older = arr;
    t[k - 1]->nolder = k - 1;
    *out = t[k - 1];
    return BK_OK;
}

/* Body 5: the expanding filter's fields, then its table (a body 4). */
static bk_status decode_expanding(bk_reader *r, bk_quotient **out)
{
    uint32_t doublings, zero;
    double bound;
    uint64_t keys;
    bk_status s;
    if ((s = bk__r_u32(r, &doublings)) || (s = bk__r_u32(r, &zero)) || (s = bk__r_f64(r, &bound)) ||
        (s = bk__r_u64(r, &keys)))
        return s;
    if (doublings > 32 || zero || !(bound >= 0 && bound <= 1e300)) return BK_ECORRUPT;
    bk_quotient *f;
    if ((s = decode_table(r, false, &f))) return s;
    if (f->body != 4) {
        bk_quotient_free(f);
        return BK_ECORRUPT;
    }
    f->xq = true;
    f->xq_doublings = doublings;
    f->xq_bound = bound;
    f->xq_keys = keys;
    *out = f;
    return BK_OK;
}

static bk_status v_decode(bk_reader *r, void **out)
{
    bk_quotient *f = NULL;
    bk_status s = decode_table(r, true, &f);
    *out = f;
    return s;
}

/* The blocks of an array of bodies 1 and 2 (src) moved into f's layout, their stored offsets into
 * oo. src may be f->words: every word is written at or below where it was read, after its reading
 * (a group's offsets word lands at or below the pair offsets word read just before it). */
static void convert_pairs(bk_quotient *f, const uint64_t *src, uint32_t *oo)
{
    const uint64_t bw = 2 + f->rbits;
    for (uint64_t b = 0; b < f->nblocks; b++) {
        const uint64_t *ob = src + 1 + b * bw + (b >> 1);
        if (!(b & 1)) {
            oo[b] = (uint32_t)ob[-1];
            oo[b + 1] = (uint32_t)(ob[-1] >> 32);
        }
        if (!(b & 7)) f->words[(b >> QF_GROUP_SHIFT) * f->group_words] = 0;
        memmove(blk(f, b), ob, (size_t)bw * 8);
    }
}

/* The array of a body 1 or 2 (A bytes at the reader) into f's layout, each stored offset checked
 * against the true one. */
static bk_status read_pairs(bk_reader *r, bk_quotient *f, uint64_t bytes)
{
    const uint8_t *data;
    bk_status s;
    uint32_t *oo = bk__calloc(f->alloc, (size_t)f->nblocks, sizeof *oo);
    if (!oo) return BK_ENOMEM;
    if ((s = bk__r_array_begin(r, bytes, &data))) goto out;
    /* a borrowed array is read in place into a new one; an owned one is read whole and converted in
     * place (the converted layout is smaller) */
    f->words = bk__calloc_aligned(f->alloc, (size_t)(r->borrow ? f->nwords * 8 : bytes));
    if (!f->words) {
        s = BK_ENOMEM;
        goto out;
    }
    f->owns_words = true;
    const uint64_t *src = (const uint64_t *)(const void *)data;
    if (!r->borrow) {
        uint64_t *w = f->words;
        if ((s = bk__r_array_end(r, bytes, data, &w))) goto out;
        src = f->words;
    }
    convert_pairs(f, src, oo);
    uint64_t o = 0;
    for (uint64_t b = 0; b < f->nblocks; b++) {
        o = b == 0 ? off_first(f, false) : off_next(f, b, o, false);
        if (o != oo[b]) {
            s = BK_ECORRUPT;
            goto out;
        }
        off_set(f, b, o);
    }
out:
    bk__free(f->alloc, oo);
    return s;
}

/* The array of a body 4: straight from the body into the filter's own (a pulled body never sits in
 * memory beside it), or used in place when borrowed. */
static bk_status read_words(bk_reader *r, bk_quotient *f, uint64_t bytes)
{
    const uint8_t *data;
    bk_status s;
    if ((s = bk__r_array_begin(r, bytes, &data))) return s;
    if (!r->borrow) {
        if (!(f->words = bk__calloc_aligned(f->alloc, (size_t)bytes))) return BK_ENOMEM;
        f->owns_words = true;
    }
    return bk__r_array_end(r, bytes, data, &f->words);
}

static bk_status decode_table(bk_reader *r, bool staged, bk_quotient **out)
{
    uint32_t qb, rb, version = 1, zero = 0;
    double ml, fpr;
    uint64_t slots, xslots = 0, cap, used, distinct, total, bytes;
    bk_status s;
    *out = NULL;
    if ((s = bk__r_u32(r, &qb))) return s;
    if (qb == 0) { /* a later body: its version, then its fields */
        if ((s = bk__r_u32(r, &version))) return s;
        if (version == 3 && staged) return decode_stages(r, out);
        if (version == 5 && staged) return decode_expanding(r, out);
        if ((s = bk__r_u32(r, &rb)) || (s = bk__r_u32(r, &zero)) ||
            (s = bk__r_u64(r, &slots)) || (s = bk__r_u64(r, &xslots)))
            return s;
        if ((version != 2 && version != 4) || zero != 0 || slots < (UINT64_C(1) << BK_QUOTIENT_MIN_QBITS) ||
            slots > (UINT64_C(1) << BK_QUOTIENT_MAX_QBITS))
            return BK_ECORRUPT;
    } else {
        if ((s = bk__r_u32(r, &rb))) return s;
        if (qb < BK_QUOTIENT_MIN_QBITS || qb > BK_QUOTIENT_MAX_QBITS) return BK_ECORRUPT;
        slots = UINT64_C(1) << qb;
    }
    if ((s = bk__r_f64(r, &ml)) || (s = bk__r_u64(r, &cap)) || (s = bk__r_f64(r, &fpr)) ||
        (s = bk__r_u64(r, &used)) || (s = bk__r_u64(r, &distinct)) || (s = bk__r_u64(r, &total)) ||
        (s = bk__r_u64(r, &bytes)) || (s = bk__r_align(r, 64)))
        return s;
    if (rb < BK_QUOTIENT_MIN_RBITS || rb > BK_QUOTIENT_MAX_RBITS || !(ml > 0 && ml <= 1) || !(fpr > 0 && fpr <= 1) ||
        cap == 0)
        return BK_ECORRUPT;
    /* the shell first, the array only once the input is known to hold it: a damaged header must not
     * make the loader allocate more than the file could carry */
    /* the physical slots as saved: whole groups, room past the home slots, no more than the 1.0 rule
     * gives */
    if (version != 1 && (xslots % 128 || xslots < slots + 64 || xslots > bk__qf_xslots(slots, 1.0, true)))
        return BK_ECORRUPT;
    bk_quotient *f;
    if ((s = bk__qf_alloc(r->alloc, slots, rb, ml, r->seed, version == 1, xslots, false, &f)))
        return s == BK_ETOOBIG ? BK_ECORRUPT : s;
    f->body = (uint8_t)version;
    if (bytes != (version == 4 ? f->nwords : pairs_words(f->xslots, rb)) * 8) {
        bk_quotient_free(f);
        return BK_ECORRUPT;
    }
    if (bytes > r->len - r->off) {
        bk_quotient_free(f);
        return BK_ETRUNCATED;
    }
    if ((s = version == 4 ? read_words(r, f, bytes) : read_pairs(r, f, bytes))) {
        bk_quotient_free(f);
        return s;
    }
    f->capacity = cap;
    f->fpr_target = fpr;
    f->used = used;
    f->distinct = distinct;
    f->total = total;
    f->path_asked = BK_QUOTIENT_AUTO;
    f->bmi2 = bk__qf_resolve_path(BK_QUOTIENT_AUTO);
    if ((s = validate(f, used, distinct, total)) != BK_OK) {
        bk_quotient_free(f);
        return s;
    }
    /* a saturated offset: the table of true offsets, built here as a filter that stored it has it */
    for (uint64_t b = 0; b < f->nblocks && !f->sat_want; b++) f->sat_want = off_byte(f, b) == QF_OFF_SAT;
    bk__qf_sat_sync(f);
    *out = f;
    return BK_OK;
}

BK__VT_ADAPTERS(quotient)
BK__VT_WRITE_ADAPTERS(quotient)
static bk_status v_compatible(const void *a, const void *b) { return bk_quotient_compatible(a, b); }
static bk_status v_remove_hash(void *f, uint64_t h) { return bk_quotient_remove_hash(f, h); }
static bk_status v_add_hashes(void *f, const uint64_t *h, size_t n, size_t *done)
{
    return bk_quotient_add_hashes(f, h, n, done);
}
/* Through the generic handle, as for every type: only filters of identical geometry (slots and r)
 * and seed. bk_quotient_union also takes filters whose fingerprints convert. */
static bk_status v_merge(void *d, const void *s)
{
    const bk_quotient *a = d, *b = s;
    if (a->nolder || b->nolder || a->xq || b->xq) return BK_ENOTSUP; /* no one fingerprint space */
    if (a->nslots != b->nslots || a->rbits != b->rbits) return BK_EINCOMPAT;
    return bk_quotient_union(d, s);
}

BK_HIDDEN const bk_vtable bk__quotient_vtable = {
    .type = BK_TYPE_QUOTIENT,
    BK__VT_ENTRIES,
    BK__VT_WRITE_ENTRIES,
    .remove_hash = v_remove_hash,
    .add_hashes = v_add_hashes,
    .merge = v_merge,
    .compatible = v_compatible,
};

/* For tests: every invariant of the layout and the counters (BK_OK or BK_ECORRUPT), and the array. */
bk_status bk__quotient_check(const bk_quotient *f) { return validate(f, f->used, f->distinct, f->total); }
const uint64_t *bk__quotient_words(const bk_quotient *f, size_t *nwords)
{
    *nwords = (size_t)f->nwords;
    return f->words;
}
