/* Quotient filter rebuilds: iteration in fingerprint order, building a table by appending, and
 * the operations built on them (grow, merge, foreach, add_fingerprint). */
#include "filters/quotient_slots.h"

/* ---- iteration (in fingerprint order, without offsets) and building by appending ---- */

typedef struct qf_iter {
    const bk_quotient *f;
    uint64_t q;   /* current quotient; QF_NONE when done */
    uint64_t i;   /* next slot */
    uint64_t e;   /* end of the current run */
} qf_iter;

static void it_start_run(qf_iter *it, uint64_t from_q, uint64_t after)
{
    const bk_quotient *f = it->f;
    it->q = bk__qf_next_occ(f, from_q);
    if (it->q == QF_NONE) return;
    uint64_t st = it->q > after ? it->q : after;
    it->i = st;
    it->e = select_from(f, st, 1, false);
    if (it->e == QF_NONE) it->q = QF_NONE;
}

static void it_init(qf_iter *it, const bk_quotient *f)
{
    it->f = f;
    it_start_run(it, 0, 0);
}

/* Next entry; false at the end (or at malformed data). */
static bool it_next(qf_iter *it, uint64_t *q, uint64_t *x, uint64_t *c)
{
    if (it->q == QF_NONE) return false;
    unsigned len = parse(it->f, it->i, it->e, x, c);
    if (len == 0) {
        it->q = QF_NONE;
        return false;
    }
    *q = it->q;
    it->i += len;
    if (it->i > it->e) it_start_run(it, it->q + 1, it->e + 1);
    return true;
}

typedef struct qf_builder {
    bk_quotient *f;   /* empty target, same counters as zero */
    uint64_t cursor;  /* next free slot */
    uint64_t last_q;  /* quotient of the last written run; QF_NONE at first */
    uint64_t pq, px, pc; /* pending entry (pc 0: none) */
    bk_status err;
} qf_builder;

static void b_write(qf_builder *b, uint64_t q, uint64_t x, uint64_t c)
{
    bk_quotient *f = b->f;
    unsigned len = bk__qf_enc_len(c, f->rmask);
    uint64_t st;
    if (q == b->last_q) {
        st = b->cursor;
        set_rend(f, st - 1, false);
    } else {
        st = q > b->cursor ? q : b->cursor;
        set_occ(f, q, true);
    }
    if (st + len > f->xslots || f->used + len > f->max_used) {
        b->err = BK_EFULL;
        return;
    }
    bk__qf_enc_write(f, st, x, c);
    set_rend(f, st + len - 1, true);
    b->cursor = st + len;
    b->last_q = q;
    f->used += len;
    f->distinct++;
    f->total = f->total > UINT64_MAX - c ? UINT64_MAX : f->total + c;
}

static void b_add(qf_builder *b, uint64_t q, uint64_t x, uint64_t c)
{
    if (b->err) return;
    if (b->pc && b->pq == q && b->px == x) {
        b->pc = b->pc > UINT64_MAX - c ? UINT64_MAX : b->pc + c;
        return;
    }
    if (b->pc) b_write(b, b->pq, b->px, b->pc);
    b->pq = q;
    b->px = x;
    b->pc = c;
}

static bk_status b_finish(qf_builder *b)
{
    if (!b->err && b->pc) b_write(b, b->pq, b->px, b->pc);
    if (b->err) return b->err;
    bk__qf_fix_offsets(b->f, 0, b->f->nblocks - 1, b->f->bmi2);
    return BK_OK;
}

/* A fingerprint of a filter whose fingerprint space (S 2^r) is 2^cut times f's, cut to f's, as
 * (quotient, remainder): floor(h S' / 2^k) of the shorter space is the longer one's value shifted. */
BK_INLINE void convert(const bk_quotient *f, uint64_t fp, uint32_t cut, uint64_t *q, uint64_t *x)
{
    uint64_t g = fp >> cut;
    *q = g >> f->rbits;
    *x = remap(g & f->rmask);
}

/* Move the contents of `nf` (built) into f, keeping f's identity. */
static void adopt(bk_quotient *f, bk_quotient *nf)
{
    if (f->owns_words) bk__free_aligned(f->alloc, f->words);
    bk__free(f->alloc, f->sat);
    f->sat = nf->sat;
    f->sat_want = nf->sat_want;
    f->words = nf->words;
    f->owns_words = true;
    f->nwords = nf->nwords;
    f->qbits = nf->qbits;
    f->rbits = nf->rbits;
    f->fbits = nf->fbits;
    f->odd = nf->odd;
    f->layout10 = nf->layout10;
    f->group_words = nf->group_words;
    f->rmask = nf->rmask;
    f->nslots = nf->nslots;
    f->xslots = nf->xslots;
    f->nblocks = nf->nblocks;
    f->max_used = nf->max_used;
    f->used = nf->used;
    f->distinct = nf->distinct;
    f->total = nf->total;
    bk__free(nf->alloc, nf);
}

void bk__qf_adopt(bk_quotient *f, bk_quotient *nf) { adopt(f, nf); }

bk_status bk_quotient_grow(bk_quotient *f)
{
    if (!f) return BK_EINVAL;
    if (f->xq) return BK_ENOTSUP; /* an expanding filter doubles by bk_quotient_expand */
    if (f->nslots * 2 > (UINT64_C(1) << BK_QUOTIENT_MAX_QBITS) || f->rbits - 1 < BK_QUOTIENT_MIN_RBITS)
        return BK_ETOOBIG;
    bk_quotient *nf;
    bk_status s = bk__qf_alloc(f->alloc, f->nslots * 2, f->rbits - 1, f->max_load, f->seed, f->layout10, 0, true, &nf);
    if (s) return s;
    nf->bmi2 = f->bmi2;
    qf_builder b = { nf, 0, QF_NONE, 0, 0, 0, BK_OK };
    qf_iter it;
    it_init(&it, f);
    uint64_t q, x, c;
    while (it_next(&it, &q, &x, &c)) {
        uint64_t nq, nx;
        convert(nf, q << f->rbits | x, 0, &nq, &nx);
        b_add(&b, nq, nx, c);
    }
    if ((s = b_finish(&b)) != BK_OK) {
        bk_quotient_free(nf);
        return s;
    }
    uint64_t total = f->total;
    adopt(f, nf);
    f->total = total; /* the sum of counts is unchanged (saturated entries stay saturated) */
    if (f->capacity <= UINT64_MAX / 2) f->capacity *= 2;
    /* fpr_target stays what the filter was made for: once a doubling costs more than the remainder
     * bits planned for it, fpr_now passes it and the statistics say so (saturated) */
    return BK_OK;
}

bk_status bk_quotient_grow_keep_fpr(bk_quotient *f)
{
    if (!f) return BK_EINVAL;
    if (!(bk_quotient_grown_fpr(f, 1) <= BK_QUOTIENT_KEEP_FPR * f->fpr_target)) return BK_EFULL;
    return bk_quotient_grow(f);
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

bk_status bk_quotient_expand(bk_quotient *f)
{
    if (!f) return BK_EINVAL;
    if (f->xq) return bk_xquotient_expand(f); /* an expanding filter doubles in place */
    double p = bk_quotient_fpr_target(f);
    bk_status s;
    /* the first table doubles in place while its bound at the load limit stays within p (the
     * remainder bits planned for growth); past that, a new stage */
    if (!f->nolder && bk_quotient_grown_fpr(f, 1) <= p && (s = bk_quotient_grow(f)) != BK_ETOOBIG) return s;
    if (f->nolder + 1 >= QF_MAX_STAGES) return BK_ETOOBIG;
    double t = bk__qf_stage_target(p, bk__qf_bound(f->nolder ? f->older[0] : f), f->nolder + 1);
    if (!(t > 0)) return BK_EINVAL; /* only for a target outside (0, 1], which no filter has */
    uint64_t cap = f->capacity;
    for (uint32_t i = 0; i < f->nolder; i++) cap = sat_add(cap, f->older[i]->capacity);
    bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
    o.allocator = f->alloc;
    o.seed = f->seed;
    o.max_load = f->max_load;
    bk_quotient *nf, *old;
    if ((s = bk_quotient_new(cap, t, &o, &nf))) return s;
    bk_quotient **arr = bk__calloc(f->alloc, f->nolder + 1, sizeof *arr);
    old = bk__calloc(f->alloc, 1, sizeof *old);
    if (!arr || !old) {
        bk__free(f->alloc, arr);
        bk__free(f->alloc, old);
        bk_quotient_free(nf);
        return BK_ENOMEM;
    }
    nf->path_asked = f->path_asked;
    nf->bmi2 = f->bmi2;
    /* f's table becomes the newest full stage; f takes the new table */
    for (uint32_t i = 0; i < f->nolder; i++) arr[i] = f->older[i];
    uint32_t n = f->nolder;
    bk__free(f->alloc, f->older);
    *old = *f;
    old->older = NULL;
    old->nolder = 0;
    arr[n] = old;
    *f = *nf;
    f->older = arr;
    f->nolder = n + 1;
    bk__free(nf->alloc, nf);
    return BK_OK;
}

/* Fingerprints of a filter of S_s = odd_s 2^t_s slots and r_s remainder bits (fbits_s = t_s + r_s)
 * convert to one of odd 2^t slots and r bits when the source's fingerprint space S_s 2^r_s is the
 * target's times a power of two 2^cut (the same odd part, fbits_s >= fbits), and either at least one
 * low bit is cut (which drops the ambiguity of a stored remainder 1: it may have been 0) or all of
 * the remainder stays in the remainder (r <= r_s). *cut receives fbits_s - fbits. */
static bool convertible(uint64_t s_odd, uint32_t s_fbits, uint32_t s_rbits, const bk_quotient *f, uint32_t *cut)
{
    if (s_odd != f->odd || s_fbits < f->fbits || (s_fbits == f->fbits && f->rbits > s_rbits)) return false;
    *cut = s_fbits - f->fbits;
    return true;
}

bk_status bk_quotient_compatible(const bk_quotient *dst, const bk_quotient *src)
{
    if (!dst || !src) return BK_EINVAL;
    if (dst->xq || src->xq) return BK_ENOTSUP; /* fingerprints of many lengths: no merge yet */
    uint32_t cut;
    /* a filter of stages has no one fingerprint space */
    if (dst->nolder || src->nolder) return BK_ENOTSUP;
    if (dst->seed != src->seed || !convertible(src->odd, src->fbits, src->rbits, dst, &cut)) return BK_EINCOMPAT;
    return BK_OK;
}

bk_status bk_quotient_union(bk_quotient *dst, const bk_quotient *src)
{
    bk_status s = bk_quotient_compatible(dst, src);
    if (s) return s;
    bk_quotient *nf;
    if ((s = bk__qf_alloc(dst->alloc, dst->nslots, dst->rbits, dst->max_load, dst->seed, dst->layout10, dst->xslots,
                          true, &nf)))
        return s;
    nf->bmi2 = dst->bmi2;
    qf_builder b = { nf, 0, QF_NONE, 0, 0, 0, BK_OK };
    qf_iter a, o;
    it_init(&a, dst);
    it_init(&o, src);
    uint32_t cut = src->fbits - dst->fbits;
    uint64_t aq, ax, ac, oq, ox, oc;
    bool ha = it_next(&a, &aq, &ax, &ac), ho = false;
    if (it_next(&o, &oq, &ox, &oc)) {
        convert(dst, oq << src->rbits | ox, cut, &oq, &ox);
        ho = true;
    }
    while (ha || ho) {
        if (ha && (!ho || aq < oq || (aq == oq && ax <= ox))) {
            b_add(&b, aq, ax, ac);
            ha = it_next(&a, &aq, &ax, &ac);
        } else {
            b_add(&b, oq, ox, oc);
            ho = it_next(&o, &oq, &ox, &oc);
            if (ho) convert(dst, oq << src->rbits | ox, cut, &oq, &ox);
        }
    }
    if ((s = b_finish(&b)) != BK_OK) {
        bk_quotient_free(nf);
        return s;
    }
    adopt(dst, nf);
    return BK_OK;
}

int bk_quotient_foreach(const bk_quotient *f, bk_quotient_visit_fn fn, void *ctx)
{
    if (!f || !fn) return 0;
    if (f->nolder || f->xq) return -1; /* no one fingerprint space */
    qf_iter it;
    it_init(&it, f);
    uint64_t q, x, c;
    while (it_next(&it, &q, &x, &c)) {
        int r = fn(q << f->rbits | x, c, ctx);
        if (r) return r;
    }
    return 0;
}

bk_status bk_quotient_add_fingerprint_slots(bk_quotient *f, uint64_t fp, uint64_t slots, uint32_t rbits,
                                            uint64_t count)
{
    if (!f || count == 0 || slots == 0 || rbits == 0 || rbits > 63) return BK_EINVAL;
    if (f->xq) return BK_ENOTSUP;
    unsigned tz = (unsigned)__builtin_ctzll(slots);
    unsigned qlen = slots > 1 ? 64 - (unsigned)__builtin_clzll(slots - 1) : 0; /* bits of a quotient */
    if (qlen + rbits > 64) return BK_EINVAL;
    if ((fp >> rbits) >= slots) return BK_EINVAL;
    uint32_t cut;
    if (!convertible(slots >> tz, tz + rbits, rbits, f, &cut)) return BK_EINCOMPAT;
    uint64_t q, x;
    convert(f, fp, cut, &q, &x);
    return bk__qf_ops(f)->insert(f, q, x, count);
}

bk_status bk_quotient_add_fingerprint(bk_quotient *f, uint64_t fp, uint32_t qbits, uint32_t rbits, uint64_t count)
{
    if (!f || count == 0 || rbits == 0 || qbits + rbits > 64 || qbits > 63) return BK_EINVAL;
    return bk_quotient_add_fingerprint_slots(f, fp, UINT64_C(1) << qbits, rbits, count);
}
