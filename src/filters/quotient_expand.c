/* The expanding quotient filter (bk_xquotient): one quotient table that doubles in place without
 * losing its error rate. Each slot of w bits holds a fingerprint of L <= w - 1 bits followed by a 1
 * and w - 1 - L zeros (the length is the position of the lowest set bit); a doubling moves each
 * entry's first fingerprint bit into its quotient (L drops by one), an entry with no bits left (void)
 * is copied to both halves of its slot, and newer entries get the full w - 1 bits of the table's
 * current width, which a doubling may widen. The width schedule keeps the FPR bound within p at
 * every size (docs/MATH.md, "Expanding quotient filter"). The slots, runs, counters, insert and the
 * offsets are the quotient filter's own (quotient_slots.h, quotient.c); this file adds the
 * variable-length fingerprints, the query that matches them, and the rebuild that doubles. */
#include "filters/quotient_slots.h"

#include <math.h>

/* Cumulative FPR budget after g doublings: p (g + 1) / (g + 1 + XQ_K). It rises to p; generation g
 * may add at most the difference to what the filter already holds. */
#define XQ_K 6.0

static double budget(double p, uint32_t g) { return p * (g + 1.0) / (g + 1.0 + XQ_K); }

/* The narrowest width >= wmin whose new keys (up to n_new, L = w - 1, in S slots) keep the bound
 * within c; 0 when even BK_QUOTIENT_MAX_RBITS does not. */
static uint32_t width_for(double bound, uint64_t n_new, uint64_t slots, double c, uint32_t wmin)
{
    for (uint32_t w = wmin; w <= BK_QUOTIENT_MAX_RBITS; w++)
        if (bound + (double)n_new * ldexp(1.0, 1 - (int)w) / (double)slots <= c) return w;
    return 0;
}

/* Horizon: a filter whose first width (by the budget) is below XQ_HORIZON + 1 starts at that width
 * instead and narrows by one bit a doubling (keys added after g doublings keep at least
 * XQ_HORIZON - g bits) while the narrower width, kept up to the horizon, stays within the budget
 * there; so no entry runs out before the XQ_HORIZON-th doubling, and none is copied before the next
 * one (docs/MATH.md). */
#define XQ_HORIZON 10u

static uint32_t horizon_width(uint32_t g) { return g < XQ_HORIZON ? XQ_HORIZON + 1 - g : 0; }

/* The budget's first width for a table of `slots` home slots, up to max_used of them in use. */
static uint32_t first_budget_width(double p, uint64_t max_used, uint64_t slots)
{
    return width_for(0.0, max_used, slots, budget(p, 0), BK_QUOTIENT_MIN_RBITS);
}

/* The first width: the budget's, raised to the horizon's; 0 when the budget cannot be kept. */
static uint32_t first_width(double p, uint64_t max_used, uint64_t slots)
{
    uint32_t w = first_budget_width(p, max_used, slots);
    return w && w < horizon_width(0) ? horizon_width(0) : w;
}

/* The width of f's table at its next doubling g (to `slots` home slots, n_new keys still to come at
 * the load limit): the budget's narrowest width from the current one, or from one bit less while the
 * width is the horizon's and the narrower one, kept for every generation up to the horizon, would
 * keep the bound within the budget there (each later generation adds max_load 2^-w); the current one
 * when even the widest slots do not keep the budget. */
static uint32_t next_width(const bk_quotient *f, uint64_t n_new, uint64_t slots)
{
    uint32_t lo = f->rbits;
    const uint32_t g = f->xq_doublings + 1;
    if (lo > BK_QUOTIENT_MIN_RBITS && g < XQ_HORIZON && lo == horizon_width(g - 1)) {
        const uint64_t s0 = f->nslots >> (g - 1);
        const double one = ldexp(1.0, 2 - (int)lo); /* 2^(1 - (lo - 1)): a key at the narrower width */
        if (first_budget_width(f->fpr_target, (uint64_t)(f->max_load * (double)s0), s0) < horizon_width(0) &&
            f->xq_bound + (double)n_new * one / (double)slots + (double)(XQ_HORIZON - g) * f->max_load * one / 2 <=
                budget(f->fpr_target, XQ_HORIZON))
            lo--;
    }
    uint32_t nw = width_for(f->xq_bound, n_new, slots, budget(f->fpr_target, g), lo);
    return nw ? nw : f->rbits;
}

/* The quotient and the w - 1 fingerprint bits of h in table t; the stored value of a new key is
 * (e << 1) | 1. */
BK_INLINE void xq_split(const bk_quotient *t, uint64_t h, uint64_t *q, uint64_t *e)
{
    const unsigned fb = t->rbits - 1;
    uint64_t fp = (uint64_t)(((bk__u128)h * t->nslots) >> (64 - fb));
    *q = fb ? fp >> fb : fp;
    *e = fp & ((UINT64_C(1) << fb) - 1);
}

/* Whether stored value x (a fingerprint of L bits above its lowest set bit) is a prefix of the
 * query's value qv = (e << 1) | 1. */
BK_INLINE bool xq_match(uint64_t x, uint64_t qv)
{
    return x && ((x ^ qv) >> __builtin_ctzll(x)) <= 1;
}

/* The sum of the counts of the entries of q's run that match qv (0 when q has no run). */
BK_INLINE uint64_t xq_run_count(const bk_quotient *t, uint64_t q, uint64_t qv, bool first_only)
{
    if (!is_occ(t, q)) return 0;
    const bool bmi2 = t->bmi2;
    int64_t e64 = run_end_le(t, q, bmi2);
    if (e64 < (int64_t)q || e64 >= (int64_t)t->xslots) return 0;
    uint64_t e = (uint64_t)e64, i = run_start(t, q, e), sum = 0;
    while (i <= e) {
        uint64_t x, c;
        unsigned len = parse(t, i, e, &x, &c);
        if (!len) break;
        if (xq_match(x, qv)) {
            if (first_only) return 1;
            sum = sum > UINT64_MAX - c ? UINT64_MAX : sum + c;
        }
        i += len;
    }
    return sum;
}

/* The first table: bk_quotient_size's slots for the capacity, and the narrowest width whose keys at
 * the load limit keep the bound within the budget of generation 0 (the layout of later filters); *o
 * the options read, its max_load the load limit. */
static bk_status xq_first(uint64_t capacity, double p, const bk_quotient_options *opts, bk_quotient_options *o,
                          bk_quotient_geometry *g)
{
    if (bk__options_read(o, sizeof *o, opts) != BK_OK || o->remainder_bits) return BK_EINVAL;
    bk_status s = bk_quotient_size(capacity, p, opts, g);
    if (s) return s;
    if (!(o->max_load > 0)) o->max_load = BK_QUOTIENT_DEFAULT_MAX_LOAD;
    uint32_t w = first_width(p, g->max_slots_used, g->slots);
    if (!w) return BK_ETOOBIG;
    if ((s = bk__qf_geometry(g->slots, w, o->max_load, capacity, g)) != BK_OK) return s;
    g->fpr = (double)capacity * ldexp(1.0, 1 - (int)w) / (double)g->slots;
    return BK_OK;
}

bk_status bk_xquotient_size(uint64_t capacity, double p, const bk_quotient_options *opts, bk_quotient_geometry *out)
{
    bk_quotient_options o;
    bk_quotient_geometry g;
    bk_status s = xq_first(capacity, p, opts, &o, &g);
    if (s == BK_OK && out) *out = g;
    return s;
}

bk_status bk_xquotient_new(uint64_t capacity, double p, const bk_quotient_options *opts, bk_xquotient **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    bk_quotient_options o;
    bk_quotient_geometry g;
    bk_status s = xq_first(capacity, p, opts, &o, &g);
    if (s) return s;
    bk_quotient *f;
    if ((s = bk__qf_alloc(o.allocator, g.slots, g.remainder_bits, o.max_load, o.seed, false, 0, true, &f)) != BK_OK)
        return s;
    f->path_asked = BK_QUOTIENT_AUTO;
    f->bmi2 = bk__qf_resolve_path(BK_QUOTIENT_AUTO);
    f->capacity = capacity;
    f->fpr_target = p;
    f->xq = true;
    *out = f;
    return BK_OK;
}

void bk_xquotient_free(bk_xquotient *f) { bk_quotient_free(f); }

/* Writing a table by appending entries in fingerprint order (quotient, then value), the equal ones
 * merged into one entry of the summed count; the offsets are set at the end. */
typedef struct {
    bk_quotient *t;
    uint64_t cursor, last_q; /* next free slot; quotient of the last run written (QF_NONE: none) */
    uint64_t pq, pv, pc;     /* the pending entry (pc 0: none) */
    bk_status err;
} xq_appender;

static void ap_write(xq_appender *a)
{
    bk_quotient *t = a->t;
    const uint64_t q = a->pq, c = a->pc;
    const unsigned len = bk__qf_enc_len(c, t->rmask);
    uint64_t st;
    if (q == a->last_q) {
        st = a->cursor;
        set_rend(t, st - 1, false);
    } else {
        st = q > a->cursor ? q : a->cursor;
    }
    if (st + len > t->xslots || t->used + len > t->max_used) {
        a->err = BK_EFULL;
        return;
    }
    if (q != a->last_q) set_occ(t, q, true);
    bk__qf_enc_write(t, st, a->pv, c);
    set_rend(t, st + len - 1, true);
    a->cursor = st + len;
    a->last_q = q;
    t->used += len;
    t->distinct++;
    t->total = t->total > UINT64_MAX - c ? UINT64_MAX : t->total + c; /* void copies count twice */
}

static void ap_add(xq_appender *a, uint64_t q, uint64_t v, uint64_t c)
{
    if (a->err) return;
    if (a->pc && a->pq == q && a->pv == v) {
        a->pc = a->pc > UINT64_MAX - c ? UINT64_MAX : a->pc + c;
        return;
    }
    if (a->pc) ap_write(a);
    a->pq = q;
    a->pv = v;
    a->pc = c;
}

#define XQ_WAIT 64 /* entries of half 0 a run's parse keeps until the void entry's count is known */

/* Half 0's end: the void entry (when the run has one), then the waiting entries, from the buffer or,
 * when there were more than it holds, read again from wait_at up to the void entry or half 1. */
static bk_status xq_flush_half0(xq_appender *a, const bk_quotient *t, uint64_t q, unsigned up, uint64_t void_v,
                                uint64_t vc, uint64_t *wx, uint64_t *wc, unsigned nwait,
                                uint64_t wait_at, uint64_t e)
{
    const uint64_t top = UINT64_C(1) << (t->rbits - 1);
    if (vc) ap_add(a, 2 * q, void_v, vc);
    if (nwait <= XQ_WAIT) {
        for (unsigned k = 0; k < nwait; k++) ap_add(a, 2 * q, wx[k] << up, wc[k]);
        return BK_OK;
    }
    for (uint64_t i = wait_at; i <= e;) {
        uint64_t x, c;
        unsigned len = parse(t, i, e, &x, &c);
        if (!len || !x) return BK_ECORRUPT;
        if (x >= top) break;
        ap_add(a, 2 * q, x << up, c);
        i += len;
    }
    return BK_OK;
}

/* One run [i, e] of table t, parsed once, moved to quotients 2q and 2q + 1 of the doubled table. The
 * run's values rise: first the entries whose first fingerprint bit is 0 (half 0, quotient 2q), then
 * the void entry (value top), then those whose first bit is 1 (half 1, quotient 2q + 1). An entry
 * moves as value (x mod top) << up; the void entry (count vc) goes to both halves at its place in
 * the order, value void_v (an entry of one fingerprint bit becomes void too and merges with it).
 * In half 0 its place is before the entries from top / 2 up, which come before the void entry in
 * the run, so those wait in wait_x, wait_c until its count is known (a run holding more of them than the
 * buffer has room for reads them a second time from `wait_at`). */
static bk_status xq_move_run(xq_appender *a, const bk_quotient *t, uint64_t i, uint64_t e, uint64_t q,
                             unsigned up, uint64_t void_v)
{
    const uint64_t top = UINT64_C(1) << (t->rbits - 1), low = top - 1, mid0 = top >> 1, mid1 = top + mid0;
    uint64_t wait_x[XQ_WAIT], wait_c[XQ_WAIT], wait_at = QF_NONE, vc = 0;
    unsigned nwait = 0;
    bool half0_done = false, void1_done = false;
    while (i <= e) {
        uint64_t x, c;
        unsigned len = parse(t, i, e, &x, &c);
        if (!len || !x) return BK_ECORRUPT;
        if (x < mid0) {
            ap_add(a, 2 * q, x << up, c);
        } else if (x < top) {
            if (wait_at == QF_NONE) wait_at = i;
            if (nwait < XQ_WAIT) {
                wait_x[nwait] = x;
                wait_c[nwait] = c;
            }
            nwait++;
        } else if (x == top) {
            vc = c;
        } else {
            if (!half0_done) {
                bk_status s = xq_flush_half0(a, t, q, up, void_v, vc, wait_x, wait_c, nwait, wait_at, e);
                if (s) return s;
                half0_done = true;
            }
            if (x >= mid1 && !void1_done) {
                if (vc) ap_add(a, 2 * q + 1, void_v, vc);
                void1_done = true;
            }
            ap_add(a, 2 * q + 1, (x & low) << up, c);
        }
        i += len;
    }
    if (!half0_done) {
        bk_status s = xq_flush_half0(a, t, q, up, void_v, vc, wait_x, wait_c, nwait, wait_at, e);
        if (s) return s;
    }
    if (!void1_done && vc) ap_add(a, 2 * q + 1, void_v, vc);
    return BK_OK;
}

bk_status bk_xquotient_expand(bk_xquotient *f)
{
    if (!f || !f->xq) return BK_EINVAL;
    const bk_quotient *t = f;
    if (t->nslots * 2 > (UINT64_C(1) << BK_QUOTIENT_MAX_QBITS) || f->xq_doublings == UINT32_MAX) return BK_ETOOBIG;
    const uint64_t slots = t->nslots * 2, max_used = (uint64_t)(t->max_load * (double)slots);
    const uint64_t n_new = max_used > t->used ? max_used - t->used : 0;
    const uint32_t w = t->rbits;
    const uint32_t nw = next_width(f, n_new, slots); /* w - 1, w or wider */
    bk_quotient *nt;
    bk_status s = bk__qf_alloc(t->alloc, slots, nw, t->max_load, t->seed, false, 0, true, &nt);
    if (s) return s;
    nt->path_asked = t->path_asked;
    nt->bmi2 = t->bmi2;
    nt->capacity = t->capacity <= UINT64_MAX / 2 ? t->capacity * 2 : UINT64_MAX;
    nt->fpr_target = t->fpr_target;
    const uint64_t void_v = UINT64_C(1) << (nw - 1);
    const unsigned up = 1 + nw - w;
    xq_appender a = { nt, 0, QF_NONE, 0, 0, 0, BK_OK };
    /* run by run in quotient order: each entry's first fingerprint bit picks the half (quotient 2q
     * or 2q + 1), the void entry, when the run has one, goes to both */
    for (uint64_t q = bk__qf_next_occ(t, 0), after = 0; q != QF_NONE && !s && !a.err;
         q = bk__qf_next_occ(t, q + 1)) {
        uint64_t i = q > after ? q : after, e = select_from(t, i, 1, false);
        if (e == QF_NONE) {
            s = BK_ECORRUPT;
            break;
        }
        s = xq_move_run(&a, t, i, e, q, up, void_v);
        after = e + 1;
    }
    if (!s && !a.err && a.pc) ap_write(&a);
    if (!s) s = a.err;
    if (s) {
        bk_quotient_free(nt);
        return s;
    }
    bk__qf_fix_offsets(nt, 0, nt->nblocks - 1, nt->bmi2);
    const uint64_t cap = nt->capacity;
    bk__qf_adopt(f, nt);
    f->capacity = cap;
    f->xq_doublings++;
    return BK_OK;
}

bk_status bk__xq_add(bk_quotient *f, uint64_t h, uint64_t count)
{
    for (int tries = 0;; tries++) {
        uint64_t q, e;
        xq_split(f, h, &q, &e);
        bk_status s = bk__qf_ops(f)->insert(f, q, (e << 1) | 1, count);
        if (s == BK_OK) {
            f->xq_bound += (double)count * ldexp(1.0, 1 - (int)f->rbits) / (double)f->nslots;
            f->xq_keys = f->xq_keys > UINT64_MAX - count ? UINT64_MAX : f->xq_keys + count;
            return BK_OK;
        }
        if (s != BK_EFULL || tries == 2) return s;
        if ((s = bk_xquotient_expand(f)) != BK_OK) return s;
    }
}

uint64_t bk__xq_count(const bk_quotient *f, uint64_t h, bool any)
{
    uint64_t q, e;
    xq_split(f, h, &q, &e);
    return xq_run_count(f, q, (e << 1) | 1, any);
}

#define XQ_PREFETCH_AHEAD 8

size_t bk__xq_contains_hashes(const bk_quotient *t, const uint64_t *h, size_t n, uint8_t *res)
{
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + XQ_PREFETCH_AHEAD < n) {
            uint64_t pq = (uint64_t)(((bk__u128)h[i + XQ_PREFETCH_AHEAD] * t->nslots) >> 64);
            BK_PREFETCH(blk(t, pq >> 6));
            BK_PREFETCH(&t->words[((pq >> 6) >> QF_GROUP_SHIFT) * t->group_words]);
        }
        uint64_t q, e;
        xq_split(t, h[i], &q, &e);
        bool hit = xq_run_count(t, q, (e << 1) | 1, true) != 0;
        hits += hit;
        if (res) res[i] = hit;
    }
    return hits;
}

/* The statistics of a quotient filter, with the expanding filter's own: keys added, the bound. */
void bk__xq_stats(const bk_quotient *f, bk_stats *out)
{
    out->count = f->xq_keys;
    out->fpr_now = f->xq_bound;
    out->bits_per_key = (double)out->memory_bytes * 8.0 / (double)(f->xq_keys ? f->xq_keys : 1);
    out->saturated = f->xq_bound > f->fpr_target;
}

/* The FPR bound at the load limit: filled at the current width now (doublings 0), or after more
 * doublings the schedule's budget, which the width it picks then keeps. */
double bk__xq_grown_fpr(const bk_quotient *f, uint32_t doublings)
{
    if (doublings == 0) {
        uint64_t room = f->max_used > f->used ? f->max_used - f->used : 0;
        return f->xq_bound + (double)room * ldexp(1.0, 1 - (int)f->rbits) / (double)f->nslots;
    }
    return budget(f->fpr_target, f->xq_doublings + doublings);
}

/* ---- the public calls (quotient.h): an expanding filter is a quotient filter ---- */

bk_status bk_xquotient_add_hash(bk_xquotient *f, uint64_t h) { return bk_quotient_add_hash(f, h); }
bk_status bk_xquotient_add(bk_xquotient *f, const void *key, size_t len) { return bk_quotient_add(f, key, len); }
bool bk_xquotient_contains_hash(const bk_xquotient *f, uint64_t h) { return f && bk_quotient_contains_hash(f, h); }
bool bk_xquotient_contains(const bk_xquotient *f, const void *key, size_t len)
{
    return f && (key || !len) && bk_quotient_contains(f, key, len);
}
uint64_t bk_xquotient_count_hash(const bk_xquotient *f, uint64_t h) { return bk_quotient_count_hash(f, h); }
size_t bk_xquotient_contains_hashes(const bk_xquotient *f, const uint64_t *h, size_t n, uint8_t *res)
{
    size_t hits = 0;
    if (!f || (!h && n)) return 0;
    bk_quotient_contains_hashes(f, h, n, res, &hits);
    return hits;
}
uint64_t bk_xquotient_keys(const bk_xquotient *f) { return f ? f->xq_keys : 0; }
uint32_t bk_xquotient_doublings(const bk_xquotient *f) { return f ? f->xq_doublings : 0; }
uint32_t bk_xquotient_slot_bits(const bk_xquotient *f) { return f ? f->rbits : 0; }
uint64_t bk_xquotient_slots(const bk_xquotient *f) { return f ? f->nslots : 0; }
uint64_t bk_xquotient_slots_used(const bk_xquotient *f) { return f ? f->used : 0; }
double bk_xquotient_fpr_bound(const bk_xquotient *f) { return f ? f->xq_bound : NAN; }
double bk_xquotient_fpr_target(const bk_xquotient *f) { return f ? f->fpr_target : NAN; }
uint64_t bk_xquotient_memory(const bk_xquotient *f) { return f ? bk_quotient_memory(f) : 0; }
bool bk_quotient_expanding(const bk_quotient *f) { return f && f->xq; }
