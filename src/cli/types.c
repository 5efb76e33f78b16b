/*
 * The per-type table of the bloomkit command: one entry per filter type, with its name on the
 * command line, the options it accepts, its sizing function (for calc) and its constructor (for
 * create and build). Adding a type to the command is adding one entry here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- classic Bloom: standard and partitioned layouts ---- */

static void bloom_sizing(const bk_geometry *g, cli_sizing *out)
{
    memset(out, 0, sizeof *out);
    out->bits = g->m;
    out->bytes = (g->m + 511) / 512 * 64;
    out->k = g->k;
    out->k_label = "k";
    out->bits_per_key = (double)out->bytes * 8.0 / (double)g->n;
    out->fpr = g->fpr;
}

static bk_status bloom_size(uint64_t n, double p, const cli_type_opts *o, cli_sizing *out)
{
    (void)o;
    bk_geometry g;
    bk_status s = bk_bloom_size(n, p, &g);
    if (s == BK_OK) bloom_sizing(&g, out);
    return s;
}

static bk_status partitioned_size(uint64_t n, double p, const cli_type_opts *o, cli_sizing *out)
{
    (void)o;
    bk_geometry g;
    bk_status s = bk_bloom_size_partitioned(n, p, &g);
    if (s == BK_OK) bloom_sizing(&g, out);
    return s;
}

static bk_status bloom_create_layout(uint64_t n, double p, const cli_type_opts *o, bk_layout layout,
                                     bk_filter **out)
{
    bk_bloom_options bo = { .layout = layout, .seed = o->seed };
    bk_bloom *b;
    bk_status s = bk_bloom_new(n, p, &bo, &b);
    if (s != BK_OK) return s;
    s = bk_filter_wrap(BK_TYPE_BLOOM, b, out);
    if (s != BK_OK) bk_bloom_free(b);
    return s;
}

static bk_status bloom_create(uint64_t n, double p, const cli_type_opts *o, bk_filter **out)
{
    return bloom_create_layout(n, p, o, BK_LAYOUT_STANDARD, out);
}

static bk_status partitioned_create(uint64_t n, double p, const cli_type_opts *o, bk_filter **out)
{
    return bloom_create_layout(n, p, o, BK_LAYOUT_PARTITIONED, out);
}

/* ---- blocked Bloom: all probes of a key in one block (256-bit split blocks, or 512-bit lines) ---- */

static bk_blocked_layout blocked_layout(const cli_type_opts *o)
{
    return o->block_bits == 512 ? BK_BLOCKED_512 : BK_BLOCKED_SPLIT256;
}

static bk_status blocked_size(uint64_t n, double p, const cli_type_opts *o, cli_sizing *out)
{
    bk_geometry g;
    bk_status s = bk_blocked_size(n, p, blocked_layout(o), &g);
    if (s != BK_OK) return s;
    memset(out, 0, sizeof *out);
    out->bits = g.m;
    out->bytes = g.m / 8;
    out->k = g.k;
    out->k_label = "k";
    out->bits_per_key = (double)g.m / (double)n;
    out->fpr = g.fpr;
    snprintf(out->note, sizeof out->note, "%s blocks", blocked_layout(o) == BK_BLOCKED_512 ? "512-bit" : "256-bit split");
    return BK_OK;
}

static bk_status blocked_create(uint64_t n, double p, const cli_type_opts *o, bk_filter **out)
{
    bk_blocked_options bo = BK_BLOCKED_OPTIONS_INIT;
    bo.layout = blocked_layout(o);
    bo.seed = o->seed;
    bk_blocked *b;
    bk_status s = bk_blocked_new(n, p, &bo, &b);
    if (s != BK_OK) return s;
    s = bk_filter_wrap(BK_TYPE_BLOCKED, b, out);
    if (s != BK_OK) bk_blocked_free(b);
    return s;
}

/* ---- counting Bloom: 4- or 8-bit counters, deletion ---- */

static bk_status counting_size(uint64_t n, double p, const cli_type_opts *o, cli_sizing *out)
{
    bk_geometry g;
    uint64_t bytes;
    uint32_t cb = o->counter_bits ? o->counter_bits : 4;
    bk_status s = bk_counting_size(n, p, cb, &g, &bytes);
    if (s != BK_OK) return s;
    memset(out, 0, sizeof *out);
    out->bits = g.m * cb;
    out->bytes = bytes;
    out->k = g.k;
    out->k_label = "k";
    out->bits_per_key = (double)bytes * 8.0 / (double)n;
    out->fpr = g.fpr;
    char m[32];
    snprintf(out->note, sizeof out->note, "%s counters of %u bits", cli_group(g.m, m, sizeof m), cb);
    return BK_OK;
}

static bk_status counting_create(uint64_t n, double p, const cli_type_opts *o, bk_filter **out)
{
    bk_counting_options co = { .counter_bits = o->counter_bits, .seed = o->seed };
    bk_counting *c;
    bk_status s = bk_counting_new(n, p, &co, &c);
    if (s != BK_OK) return s;
    s = bk_filter_wrap(BK_TYPE_COUNTING, c, out);
    if (s != BK_OK) bk_counting_free(c);
    return s;
}

/* ---- scalable Bloom: a chain of classic sub-filters that grows ---- */

static bk_scalable_options scalable_opts(const cli_type_opts *o)
{
    bk_scalable_options so = bk_scalable_default_options();
    if (o->growth) so.growth = o->growth;
    if (o->nonscaling) so.flags |= BK_SCALABLE_NONSCALING;
    if (o->classic_layers) so.flags |= BK_SCALABLE_CLASSIC;
    if (o->ratio > 0) so.tightening = o->ratio;
    so.seed = o->seed;
    return so;
}

static bk_status scalable_size(uint64_t n, double p, const cli_type_opts *o, cli_sizing *out)
{
    bk_scalable_options so = scalable_opts(o);
    bk_geometry g;
    bk_status s = bk_scalable_layer_size(n, p, &so, 0, &g);
    if (s != BK_OK) return s;
    memset(out, 0, sizeof *out);
    out->bits = g.m;
    out->bytes = (g.m + 511) / 512 * 64;
    out->k = g.k;
    out->k_label = "k";
    out->bits_per_key = (double)out->bytes * 8.0 / (double)n;
    out->fpr = g.fpr;
    if (so.flags & BK_SCALABLE_NONSCALING)
        snprintf(out->note, sizeof out->note, "one sub-filter, never grows");
    else
        snprintf(out->note, sizeof out->note, "first sub-filter (p0 = p x %.2g); grows x%u, FPR stays < p",
                 1 - so.tightening, so.growth);
    return BK_OK;
}

static bk_status scalable_create(uint64_t n, double p, const cli_type_opts *o, bk_filter **out)
{
    bk_scalable_options so = scalable_opts(o);
    bk_scalable *f;
    bk_status s = bk_scalable_new(n, p, &so, &f);
    if (s != BK_OK) return s;
    s = bk_filter_wrap(BK_TYPE_SCALABLE, f, out);
    if (s != BK_OK) bk_scalable_free(f);
    return s;
}

/* ---- cuckoo: fingerprints in buckets, deletion ---- */

static bk_cuckoo_options cuckoo_opts(const cli_type_opts *o)
{
    bk_cuckoo_options co = BK_CUCKOO_OPTIONS_INIT;
    co.bucket_size = o->bucket_size;
    co.fingerprint_bits = o->fingerprint_bits;
    co.max_kicks = o->max_kicks;
    co.expansion = o->expansion;
    co.seed = o->seed;
    return co;
}

/* The library sizes a cuckoo table when it creates one: create it (the zeroed table is not touched,
 * so this costs address space, not memory) and read the geometry back. */
static bk_status cuckoo_size(uint64_t n, double p, const cli_type_opts *o, cli_sizing *out)
{
    bk_cuckoo_options co = cuckoo_opts(o);
    bk_cuckoo *c;
    bk_status s = bk_cuckoo_new(n, p, &co, &c);
    if (s != BK_OK) return s;
    bk_cuckoo_info ci;
    bk_cuckoo_get_info(c, &ci);
    bk_cuckoo_free(c);
    memset(out, 0, sizeof *out);
    out->bits = ci.slots * ci.fingerprint_bits;
    out->bytes = ci.memory_bytes;
    out->k = ci.fingerprint_bits;
    out->k_label = "fingerprint bits";
    out->bits_per_key = (double)ci.memory_bytes * 8.0 / (double)n;
    double alpha = (double)n / (double)ci.slots;
    out->fpr = -expm1(2.0 * ci.bucket_size * alpha * log1p(-1.0 / (ldexp(1.0, (int)ci.fingerprint_bits) - 1)));
    char b[32];
    snprintf(out->note, sizeof out->note, "%s buckets of %u, load %.2f at n", cli_group(ci.buckets, b, sizeof b),
             ci.bucket_size, alpha);
    return BK_OK;
}

static bk_status cuckoo_create(uint64_t n, double p, const cli_type_opts *o, bk_filter **out)
{
    bk_cuckoo_options co = cuckoo_opts(o);
    bk_cuckoo *c;
    bk_status s = bk_cuckoo_new(n, p, &co, &c);
    if (s != BK_OK) return s;
    s = bk_filter_wrap(BK_TYPE_CUCKOO, c, out);
    if (s != BK_OK) bk_cuckoo_free(c);
    return s;
}

/* ---- binary fuse: static, built from the whole key set ---- */

static bk_status fuse_geometry(uint64_t n, double p, const cli_type_opts *o, bk_geometry *g)
{
    if (o->fingerprint_bits && o->fingerprint_bits != 8 && o->fingerprint_bits != 16) return BK_EINVAL;
    return o->fingerprint_bits ? bk_fuse_size(n, o->fingerprint_bits, g) : bk_fuse_size_for_fpr(n, p, g);
}

static bk_status fuse_size(uint64_t n, double p, const cli_type_opts *o, cli_sizing *out)
{
    bk_geometry g;
    bk_status s = fuse_geometry(n, p, o, &g);
    if (s != BK_OK) return s;
    memset(out, 0, sizeof *out);
    out->bits = g.m;
    out->bytes = g.m / 8;
    out->k = g.k;
    out->k_label = "fingerprint bits";
    out->bits_per_key = g.bits_per_key;
    out->fpr = g.fpr;
    snprintf(out->note, sizeof out->note, "static (bloomkit build); FPR fixed by the fingerprint: 2^-%u", g.k);
    return BK_OK;
}

static bk_status fuse_build(const uint64_t *hashes, size_t n, double p, const cli_type_opts *o, bk_filter **out)
{
    bk_geometry g;
    bk_status s = fuse_geometry(n ? n : 1, p, o, &g);
    if (s != BK_OK) return s;
    bk_fuse_options fo = BK_FUSE_OPTIONS_INIT;
    fo.fingerprint_bits = g.k;
    fo.seed = o->seed;
    bk_fuse *f;
    s = bk_fuse_build_hashes(hashes, n, &fo, &f);
    if (s != BK_OK) return s;
    s = bk_filter_wrap(BK_TYPE_FUSE, f, out);
    if (s != BK_OK) bk_fuse_free(f);
    return s;
}

/* ---- Ribbon: static, built from the whole key set, any p ---- */

static bk_status ribbon_size(uint64_t n, double p, const cli_type_opts *o, cli_sizing *out)
{
    (void)o;
    bk_geometry g;
    bk_status s = bk_ribbon_size(n, p, &g);
    if (s != BK_OK) return s;
    memset(out, 0, sizeof *out);
    out->bits = g.m;
    out->bytes = g.m / 8;
    out->k = g.k;
    out->k_label = "fingerprint bits";
    out->bits_per_key = g.bits_per_key;
    out->fpr = g.fpr;
    snprintf(out->note, sizeof out->note, "static (bloomkit build); %u or %u fingerprint bits per key", g.k - 1, g.k);
    return BK_OK;
}

static bk_status ribbon_build(const uint64_t *hashes, size_t n, double p, const cli_type_opts *o, bk_filter **out)
{
    bk_ribbon_options ro = BK_RIBBON_OPTIONS_INIT;
    ro.fpr = p;
    ro.seed = o->seed;
    bk_ribbon *f;
    bk_status s = bk_ribbon_build_hashes(hashes, n, &ro, &f);
    if (s != BK_OK) return s;
    s = bk_filter_wrap(BK_TYPE_RIBBON, f, out);
    if (s != BK_OK) bk_ribbon_free(f);
    return s;
}

/* ---- aging: a sliding window by count (--window 10M) or by time (--window 1h) ---- */

/* The keys per window and the window itself: a count window of W insertions holds W keys (-n is then
 * only the default W); a time window is sized for n keys per window. */
static bk_status aging_size(uint64_t n, double p, const cli_type_opts *o, cli_sizing *out)
{
    uint64_t keys = o->window && !o->window_ms ? o->window : n;
    bk_aging_geometry g;
    bk_status s = bk_aging_size(keys, p, 0, &g);
    if (s != BK_OK) return s;
    memset(out, 0, sizeof *out);
    out->bits = g.bytes * 8;
    out->bytes = g.bytes;
    out->k = 8;
    out->k_label = "k";
    out->bits_per_key = g.bits_per_key;
    out->fpr = g.fpr;
    char b[32];
    if (o->window_ms)
        snprintf(out->note, sizeof out->note, "the last %.10g s, up to %s keys; %u generations", o->window / 1000.0,
                 cli_group(keys, b, sizeof b), g.generations);
    else
        snprintf(out->note, sizeof out->note, "the last %s insertions; %u generations", cli_group(keys, b, sizeof b),
                 g.generations);
    return BK_OK;
}

static bk_status aging_create(uint64_t n, double p, const cli_type_opts *o, bk_filter **out)
{
    bk_aging_options ao = BK_AGING_OPTIONS_INIT;
    ao.seed = o->seed;
    bk_aging *a;
    bk_status s = o->window_ms ? bk_aging_new_time(o->window, n, p, &ao, &a)
                               : bk_aging_new_count(o->window ? o->window : n, p, &ao, &a);
    if (s != BK_OK) return s;
    s = bk_filter_wrap(BK_TYPE_AGING, a, out);
    if (s != BK_OK) bk_aging_free(a);
    return s;
}

/* "1h", "30min", "90s", "1.5d", "250ms": a duration in ms; false if s has no time unit. A bare "m" is
 * refused: it means million for counts ("10M") and would be read as minutes by some. */
static int parse_duration(const char *s, uint64_t *ms)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v > 0)) return 0;
    static const struct {
        const char *unit;
        double ms;
    } units[] = { { "ms", 1 }, { "s", 1e3 }, { "min", 6e4 }, { "h", 3.6e6 }, { "d", 8.64e7 } };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit) == 0) {
            double t = v * units[i].ms;
            if (t < 1 || t > 1e15) return -1;
            *ms = (uint64_t)(t + 0.5);
            return 1;
        }
    }
    return 0;
}

static int window_option(const char *val, cli_type_opts *o)
{
    size_t len = strlen(val);
    if (len > 1 && val[len - 1] == 'm' && val[len - 2] >= '0' && val[len - 2] <= '9')
        return cli_err("--window: '%s' is ambiguous: say %.*smin for minutes or %.*sM for million insertions", val,
                       (int)(len - 1), val, (int)(len - 1), val), -1;
    int d = parse_duration(val, &o->window);
    if (d < 0) return cli_err("--window: '%s' is out of range", val), -1;
    if (d > 0) {
        o->window_ms = true;
        return 1;
    }
    o->window_ms = false;
    /* neither a duration nor shaped like a count ("1x", "1hour"): name both accepted forms */
    if (strspn(val, "0123456789.,_eE+-kKmMgGtTi") != len)
        return cli_err("--window: '%s' is neither a number of insertions (10M, 1,000,000, 2.5k) nor a duration "
                       "(a number with ms, s, min, h or d: 250ms, 90s, 30min, 1h, 7d)", val), -1;
    return cli_parse_count("--window", val, 1, UINT64_MAX, &o->window) ? 1 : -1;
}

/* ---- quotient: counts, deletion, growth by doubling, merge by sweep ---- */

/* The options for n keys at p: the fewest remainder bits, plus one per doubling asked for (--doublings):
 * each one keeps the error rate through one `bloomkit grow`. */
static bk_status quotient_opts(uint64_t n, double p, const cli_type_opts *o, bk_quotient_options *qo)
{
    *qo = (bk_quotient_options)BK_QUOTIENT_OPTIONS_INIT;
    qo->seed = o->seed;
    if (!o->doublings) return BK_OK;
    bk_quotient_geometry g;
    bk_status s = bk_quotient_size(n, p, qo, &g);
    if (s != BK_OK) return s;
    if (g.remainder_bits + o->doublings > BK_QUOTIENT_MAX_RBITS) return BK_ETOOBIG;
    qo->remainder_bits = g.remainder_bits + o->doublings;
    return BK_OK;
}

/* An expanding filter's first width: the narrowest slot (w >= BK_QUOTIENT_MIN_RBITS) whose keys at the
 * load limit keep the bound, max_used 2^(1 - w) / S, within p / 7, the share of p its width schedule
 * gives the table before any doubling, raised to 11 bits, the horizon's first width (docs/MATH.md,
 * "Expanding quotient filter"); 0 if none does. */
static uint32_t xquotient_width(const bk_quotient_geometry *g, double p)
{
    for (uint32_t w = BK_QUOTIENT_MIN_RBITS; w <= BK_QUOTIENT_MAX_RBITS; w++)
        if ((double)g->max_slots_used * ldexp(1.0, 1 - (int)w) / (double)g->slots <= p / 7.0) return w < 11 ? 11 : w;
    return 0;
}

/* calc for --expanding: the table it starts as (slots of w bits) and its bound at n keys. */
static bk_status xquotient_size(uint64_t n, double p, const cli_type_opts *o, cli_sizing *out)
{
    bk_quotient_options qo = BK_QUOTIENT_OPTIONS_INIT;
    qo.seed = o->seed;
    bk_quotient_geometry g;
    bk_status s = bk_quotient_size(n, p, &qo, &g);
    if (s != BK_OK) return s;
    uint32_t w = xquotient_width(&g, p);
    if (!w) return BK_ETOOBIG;
    qo.remainder_bits = w;
    if ((s = bk_quotient_size(n, p, &qo, &g)) != BK_OK) return s;
    memset(out, 0, sizeof *out);
    out->bits = g.slots * w;
    out->bytes = g.bytes;
    out->k = w;
    out->k_label = "slot bits";
    out->bits_per_key = g.bits_per_key;
    out->fpr = (double)n * ldexp(1.0, 1 - (int)w) / (double)g.slots;
    snprintf(out->note, sizeof out->note, "expanding: %llu slots, doubles at the load limit, FPR stays under P",
             (unsigned long long)g.slots);
    return BK_OK;
}

static bk_status quotient_size(uint64_t n, double p, const cli_type_opts *o, cli_sizing *out)
{
    if (o->expanding) return xquotient_size(n, p, o, out);
    bk_quotient_options qo;
    bk_status s = quotient_opts(n, p, o, &qo);
    if (s != BK_OK) return s;
    bk_quotient_geometry g;
    s = bk_quotient_size(n, p, &qo, &g);
    if (s != BK_OK) return s;
    memset(out, 0, sizeof *out);
    out->bits = g.slots * g.remainder_bits;
    out->bytes = g.bytes;
    out->k = g.remainder_bits;
    out->k_label = "remainder bits";
    out->bits_per_key = g.bits_per_key;
    out->fpr = g.fpr;
    if (o->doublings)
        snprintf(out->note, sizeof out->note, "%llu slots, load %.2f at n; keeps P through %u doublings (grow)",
                 (unsigned long long)g.slots, (double)n / (double)g.slots, o->doublings);
    else
        snprintf(out->note, sizeof out->note, "%llu slots, load %.2f at n; --doublings D: room to grow at P",
                 (unsigned long long)g.slots, (double)n / (double)g.slots);
    return BK_OK;
}

static bk_status quotient_create(uint64_t n, double p, const cli_type_opts *o, bk_filter **out)
{
    bk_quotient_options qo;
    bk_status s = quotient_opts(n, p, o, &qo);
    if (s != BK_OK) return s;
    bk_quotient *f;
    s = o->expanding ? bk_xquotient_new(n, p, &qo, &f) : bk_quotient_new(n, p, &qo, &f);
    if (s != BK_OK) return s;
    s = bk_filter_wrap(BK_TYPE_QUOTIENT, f, out);
    if (s != BK_OK) bk_quotient_free(f);
    return s;
}

/* ---- the table ---- */

const cli_type cli_types[] = {
    { "bloom", "classic Bloom filter: m bits, k probes anywhere", 0, false, false, true, bloom_size, bloom_create,
      NULL },
    { "partitioned", "classic Bloom filter with one slice of m/k bits per probe", 0, false, false, true,
      partitioned_size, partitioned_create, NULL },
    { "blocked", "blocked Bloom filter: every probe of a key in one cache-line block (fastest)", CLI_TOPT_BLOCK,
      false, false, true, blocked_size, blocked_create, NULL },
    { "counting", "counting Bloom filter: 4- or 8-bit counters, keys can be removed", CLI_TOPT_COUNTER_BITS, true,
      false, false, counting_size, counting_create, NULL },
    { "scalable", "scalable Bloom filter: a chain of filters that grows when full, FPR stays under p",
      CLI_TOPT_GROWTH | CLI_TOPT_RATIO | CLI_TOPT_NONSCALING | CLI_TOPT_CLASSIC_LAYERS, false, false, false, scalable_size, scalable_create, NULL },
    { "cuckoo", "cuckoo filter: fingerprints in buckets, keys can be removed, small at low p",
      CLI_TOPT_FINGERPRINT | CLI_TOPT_BUCKET | CLI_TOPT_KICKS | CLI_TOPT_EXPANSION, true, false, false, cuckoo_size,
      cuckoo_create, NULL },
    { "fuse", "binary fuse filter: static, built once from all keys, the smallest and fastest",
      CLI_TOPT_FINGERPRINT, false, true, false, fuse_size, NULL, fuse_build },
    { "ribbon", "Ribbon filter: static, built once from all keys, near the smallest possible at any p", 0,
      false, true, false, ribbon_size, NULL, ribbon_build },
    { "aging", "aging filter: keys seen in the last W insertions or T seconds (--window), old keys forgotten",
      CLI_TOPT_WINDOW, false, false, false, aging_size, aging_create, NULL },
    { "quotient", "quotient filter: counts, keys can be removed, grows without the keys (bloomkit grow)",
      CLI_TOPT_DOUBLINGS | CLI_TOPT_EXPANDING, true, false, false, quotient_size, quotient_create, NULL },
};
const size_t cli_ntypes = sizeof cli_types / sizeof cli_types[0];

const cli_type *cli_type_find(const char *name)
{
    for (size_t i = 0; i < cli_ntypes; i++)
        if (strcmp(cli_types[i].name, name) == 0) return &cli_types[i];
    char list[256] = "";
    for (size_t i = 0; i < cli_ntypes; i++) {
        if (i) strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, cli_types[i].name, sizeof list - strlen(list) - 1);
    }
    cli_err("--type: unknown filter type '%s' (known: %s)", name, list);
    return NULL;
}

const cli_type *cli_type_of(const bk_filter *f)
{
    const char *name = bk_type_name(bk_filter_type(f));
    if (bk_filter_type(f) == BK_TYPE_BLOOM) {
        const bk_bloom *b = bk_filter_get(f, BK_TYPE_BLOOM);
        if (b && bk_bloom_layout_of(b) == BK_LAYOUT_PARTITIONED) name = "partitioned";
    }
    if (!name) return NULL;
    for (size_t i = 0; i < cli_ntypes; i++)
        if (strcmp(cli_types[i].name, name) == 0) return &cli_types[i];
    return NULL;
}

static const struct {
    unsigned bit;
    const char *option;
} option_names[] = {
    { CLI_TOPT_COUNTER_BITS, "--counter-bits" }, { CLI_TOPT_GROWTH, "--growth" },
    { CLI_TOPT_RATIO, "--ratio" },               { CLI_TOPT_FINGERPRINT, "--fingerprint-bits" },
    { CLI_TOPT_BUCKET, "--bucket-size" },        { CLI_TOPT_KICKS, "--max-kicks" },
    { CLI_TOPT_EXPANSION, "--expansion" },      { CLI_TOPT_BLOCK, "--block-bits" },
    { CLI_TOPT_NONSCALING, "--nonscaling" },     { CLI_TOPT_CLASSIC_LAYERS, "--classic-layers" },
    { CLI_TOPT_WINDOW, "--window" },           { CLI_TOPT_DOUBLINGS, "--doublings" },
    { CLI_TOPT_EXPANDING, "--expanding" },
};

bool cli_type_check_opts(const cli_type *t, unsigned given)
{
    for (size_t i = 0; t && i < sizeof option_names / sizeof option_names[0]; i++) {
        if ((given & option_names[i].bit) && !(t->options & option_names[i].bit)) {
            cli_err("%s does not apply to %s filters%s (see: bloomkit %s --help)", option_names[i].option, t->name,
                    option_names[i].bit == CLI_TOPT_EXPANDING ? ": it makes an expanding quotient filter (--type "
                                                                "quotient --expanding)"
                                                              : "",
                    cli_cmd);
            return false;
        }
    }
    if ((given & CLI_TOPT_EXPANDING) && (given & CLI_TOPT_DOUBLINGS)) {
        cli_err("--doublings does not apply to an expanding filter: it doubles itself at its load limit and "
                "widens its slots so that P holds at any size (use one or the other; see: bloomkit %s --help)",
                cli_cmd);
        return false;
    }
    return true;
}

int cli_size_option(int id, const char *val, cli_size_args *a)
{
    switch (id) {
    case OPT_N:
        return (a->have_n = cli_parse_count("-n", val, 1, UINT64_MAX, &a->n)) ? 1 : -1;
    case OPT_P:
        return (a->have_p = cli_parse_prob("-p", val, &a->p)) ? 1 : -1;
    case OPT_TYPE:
        return (a->type = cli_type_find(val)) ? 1 : -1;
    }
    return cli_type_option(id, val, &a->to, &a->given);
}

int cli_type_option(int id, const char *val, cli_type_opts *o, unsigned *given)
{
    uint64_t v;
    switch (id) {
    case OPT_SEED:
        return cli_parse_u64("--seed", val, &o->seed) ? 1 : -1;
    case OPT_COUNTER_BITS:
        if (!cli_parse_count("--counter-bits", val, 4, 8, &v)) return -1;
        if (v != 4 && v != 8) return cli_err("--counter-bits: '%s' must be 4 or 8", val), -1;
        o->counter_bits = (uint32_t)v;
        *given |= CLI_TOPT_COUNTER_BITS;
        return 1;
    case OPT_GROWTH:
        if (!cli_parse_count("--growth", val, 1, 16, &v)) return -1;
        o->growth = (uint32_t)v;
        *given |= CLI_TOPT_GROWTH;
        return 1;
    case OPT_RATIO:
        if (!cli_parse_double("--ratio", val, 0, 1, &o->ratio)) return -1;
        if (o->ratio <= 0 || o->ratio >= 1)
            return cli_err("--ratio: '%s' must be strictly between 0 and 1", val), -1;
        *given |= CLI_TOPT_RATIO;
        return 1;
    case OPT_FINGERPRINT:
        if (!cli_parse_count("--fingerprint-bits", val, BK_CUCKOO_MIN_FINGERPRINT_BITS, BK_CUCKOO_MAX_FINGERPRINT_BITS,
                             &v))
            return -1;
        o->fingerprint_bits = (uint32_t)v;
        *given |= CLI_TOPT_FINGERPRINT;
        return 1;
    case OPT_BUCKET:
        if (!cli_parse_count("--bucket-size", val, 1, BK_CUCKOO_MAX_BUCKET_SIZE, &v)) return -1;
        o->bucket_size = (uint32_t)v;
        *given |= CLI_TOPT_BUCKET;
        return 1;
    case OPT_KICKS:
        if (!cli_parse_count("--max-kicks", val, 1, 1000000, &v)) return -1;
        o->max_kicks = (uint32_t)v;
        *given |= CLI_TOPT_KICKS;
        return 1;
    case OPT_BLOCK:
        if (!cli_parse_count("--block-bits", val, 256, 512, &v)) return -1;
        if (v != 256 && v != 512) return cli_err("--block-bits: '%s' must be 256 or 512", val), -1;
        o->block_bits = (uint32_t)v;
        *given |= CLI_TOPT_BLOCK;
        return 1;
    case OPT_NONSCALING:
        o->nonscaling = true;
        *given |= CLI_TOPT_NONSCALING;
        return 1;
    case OPT_CLASSIC_LAYERS:
        o->classic_layers = true;
        *given |= CLI_TOPT_CLASSIC_LAYERS;
        return 1;
    case OPT_WINDOW:
        if (window_option(val, o) < 0) return -1;
        *given |= CLI_TOPT_WINDOW;
        return 1;
    case OPT_EXPANSION:
        if (!cli_parse_count("--expansion", val, 0, 16, &v)) return -1;
        o->expansion = (uint32_t)v;
        *given |= CLI_TOPT_EXPANSION;
        return 1;
    case OPT_DOUBLINGS:
        if (!cli_parse_count("--doublings", val, 0, 24, &v)) return -1;
        o->doublings = (uint32_t)v;
        *given |= CLI_TOPT_DOUBLINGS;
        return 1;
    case OPT_EXPANDING:
        o->expanding = true;
        *given |= CLI_TOPT_EXPANDING;
        return 1;
    }
    return 0;
}

/* A batch's small set of hashes already taken (open addressing; 2x the batch, cleared per batch). */
#define SEEN_SLOTS (2 * CLI_BATCH)

/* Adds the hashes of h that the filter does not hold yet, each once (a repeat within a batch is added
 * by its first occurrence only); is_new[i] (when not NULL) says whether h[i] was new. At most `room`
 * new ones: the hashes from the one that would be new number room + 1 on are left alone, and *used
 * (when not NULL) says how many of h were taken (n, unless room ran out); *added how many were new. */
static bk_status add_fresh(bk_filter *f, const uint64_t *h, size_t n, uint8_t *is_new, uint64_t room, size_t *used,
                           uint64_t *added)
{
    uint8_t res[CLI_BATCH];
    uint64_t fresh[CLI_BATCH], seen[SEEN_SLOTS];
    if (used) *used = n;
    if (added) *added = 0;
    for (size_t i = 0; i < n; i += CLI_BATCH) {
        size_t c = n - i < CLI_BATCH ? n - i : CLI_BATCH, m = 0;
        size_t hits = 0;
        bk_filter_contains_hashes(f, h + i, c, res, &hits);
        if (hits == c) { /* the common case of a dedup: all seen */
            if (is_new) memset(is_new + i, 0, c);
            continue;
        }
        /* 0 marks an empty slot; a hash of 0 (one in 2^64) is simply never deduplicated */
        memset(seen, 0, sizeof seen);
        for (size_t j = 0; j < c; j++) {
            if (is_new) is_new[i + j] = 0;
            if (res[j]) continue;
            uint64_t x = h[i + j];
            size_t slot = (size_t)((x * UINT64_C(0x9E3779B97F4A7C15)) >> 53) & (SEEN_SLOTS - 1);
            bool dup = false;
            while (seen[slot]) {
                if (seen[slot] == x) {
                    dup = true;
                    break;
                }
                slot = (slot + 1) & (SEEN_SLOTS - 1);
            }
            if (dup) continue; /* a repeat within the batch: seen */
            if (m == room) { /* the next new key would pass the room: stop before it */
                if (used) *used = i + j;
                bk_status s = bk_filter_add_hashes(f, fresh, m, NULL);
                if (s == BK_OK && added) *added += m;
                return s;
            }
            if (x) seen[slot] = x;
            fresh[m++] = x;
            if (is_new) is_new[i + j] = 1;
        }
        bk_status s = bk_filter_add_hashes(f, fresh, m, NULL);
        if (s != BK_OK) return s;
        if (added) *added += m;
        room -= m;
    }
    return BK_OK;
}

bk_status cli_add_hashes(bk_filter *f, const cli_type *t, const uint64_t *h, size_t n)
{
    if (!t || !t->sets_bits) return bk_filter_add_hashes(f, h, n, NULL);
    return add_fresh(f, h, n, NULL, UINT64_MAX, NULL, NULL);
}

bk_status cli_add_new_hashes(bk_filter *f, const uint64_t *h, size_t n, uint8_t *is_new, uint64_t room, size_t *used,
                             uint64_t *added)
{
    bk_aging *ag = bk_filter_get(f, BK_TYPE_AGING);
    if (ag) { /* a window: every line is an occurrence, and a repeat restarts its key's window */
        uint8_t res[CLI_BATCH];
        uint64_t a = 0;
        if (room < n) n = room ? (size_t)room : 1; /* here room counts lines, new or not */
        for (size_t i = 0; i < n; i += CLI_BATCH) {
            size_t c = n - i < CLI_BATCH ? n - i : CLI_BATCH;
            bk_aging_add_if_absent_hashes(ag, h + i, c, res, NULL);
            for (size_t j = 0; j < c; j++) a += is_new[i + j] = !res[j];
        }
        *used = n;
        *added = a;
        return BK_OK;
    }
    return add_fresh(f, h, n, is_new, room, used, added);
}

/* ---- the capacity watch of add and filter --add ---- */

void cli_capacity_warning(const char *path, const bk_stats *before, const bk_stats *st, bool strict)
{
    char a[32], b[32], now[32], tgt[32];
    cli_warn("%s: %s: the filter %s past its capacity (%s keys for %s%s; FPR now about %s, sized for %s): "
             "rebuild it larger (bloomkit build from all the keys, or create with a larger -n) or use "
             "--type scalable",
             path, strict ? "error" : "warning", before && before->saturated ? "is still" : "went",
             cli_group(st->count, a, sizeof a), cli_group(st->capacity, b, sizeof b),
             st->count <= st->capacity ? ", fill past the fill at capacity" : "",
             cli_percent(st->fpr_now, now, sizeof now), cli_percent(st->fpr_target, tgt, sizeof tgt));
}

/* Types whose stats say "saturated" when the count passes the capacity (or the fill the fill at
 * capacity): the count of new keys tells the moment exactly. Aging time windows and quotient filters
 * saturate by what their statistics see (a generation over its share, the slots' use): they are
 * looked at after every eighth of their capacity in new keys (an aging filter's lines are taken that
 * many at a time, new or not), so the warning comes within that many keys of the moment. Scalable
 * filters and cuckoo filters with expansion grow, aging count windows never hold more than their
 * window: they are not watched. */
void cli_watch_start(cli_watch *w, const bk_filter *f, const char *path, bool strict)
{
    memset(w, 0, sizeof *w);
    w->path = path;
    w->strict = strict;
    if (bk_filter_stats(f, &w->start) != BK_OK) return;
    switch (bk_filter_type(f)) {
    case BK_TYPE_BLOOM:
    case BK_TYPE_BLOCKED:
    case BK_TYPE_COUNTING:
        w->mode = CLI_WATCH_COUNT;
        break;
    case BK_TYPE_CUCKOO: { /* one that expands adds a table when full: its capacity grows */
        const bk_cuckoo *c = bk_filter_get(f, BK_TYPE_CUCKOO);
        bk_cuckoo_info in;
        if (c) bk_cuckoo_get_info(c, &in);
        w->mode = c && in.expansion == 0 ? CLI_WATCH_COUNT : CLI_WATCH_NONE;
        break;
    }
    case BK_TYPE_QUOTIENT:
        w->mode = CLI_WATCH_STATS;
        break;
    case BK_TYPE_AGING: {
        const bk_aging *ag = bk_filter_get(f, BK_TYPE_AGING);
        w->mode = ag && bk_aging_mode_of(ag) == BK_AGING_TIME ? CLI_WATCH_STATS : CLI_WATCH_NONE;
        break;
    }
    default:
        w->mode = CLI_WATCH_NONE;
    }
    w->count = w->start.count;
    w->every = w->start.capacity / 8 ? w->start.capacity / 8 : 1; /* O(memory) a look: O(1) a key */
    w->crossed = w->start.saturated;
}

uint64_t cli_watch_room(const cli_watch *w)
{
    if (w->crossed || w->mode == CLI_WATCH_NONE) return UINT64_MAX;
    if (w->mode == CLI_WATCH_STATS) return w->every - w->since;
    return w->count < w->start.capacity ? w->start.capacity - w->count : 0;
}

bool cli_watch_added(cli_watch *w, const bk_filter *f, uint64_t added, bool room_ran_out)
{
    w->count += added;
    if (w->crossed) return false;
    if (w->mode == CLI_WATCH_COUNT) return room_ran_out;
    if (w->mode != CLI_WATCH_STATS) return false;
    w->since += added;
    if (w->since < w->every) return false;
    w->since = 0;
    bk_stats st;
    return bk_filter_stats(f, &st) == BK_OK && st.saturated;
}

int cli_watch_crossed(cli_watch *w, const bk_filter *f)
{
    bk_stats st;
    w->crossed = true;
    if (bk_filter_stats(f, &st) != BK_OK) return CLI_EXIT_OK;
    if (w->mode == CLI_WATCH_COUNT && st.count <= st.capacity) {
        char c[32], now[32], tgt[32];
        if (w->strict) {
            cli_warn("%s: error: the filter is at its capacity (%s keys; FPR now about %s, sized for %s); stopped "
                     "before the next new key: rebuild it larger (bloomkit build from all the keys, or create with a "
                     "larger -n) or use --type scalable",
                     w->path, cli_group(st.count, c, sizeof c), cli_percent(st.fpr_now, now, sizeof now),
                     cli_percent(st.fpr_target, tgt, sizeof tgt));
            return CLI_EXIT_ERR;
        }
        st.count = st.capacity + 1; /* the next new key, which goes in now, passes the capacity */
    }
    if (st.type == BK_TYPE_AGING) {
        char c[32], now[32], tgt[32];
        cli_warn("%s: %s: more keys came within the window than it is sized for (%s keys a window; FPR now about %s, "
                 "sized for %s)%s: give it a larger -n (keys a window)",
                 w->path, w->strict ? "error" : "warning", cli_group(st.capacity, c, sizeof c),
                 cli_percent(st.fpr_now, now, sizeof now), cli_percent(st.fpr_target, tgt, sizeof tgt),
                 w->strict ? "; stopped there" : ", and it rises while they keep coming");
        return w->strict ? CLI_EXIT_ERR : CLI_EXIT_OK;
    }
    cli_capacity_warning(w->path, &w->start, &st, w->strict);
    return w->strict ? CLI_EXIT_ERR : CLI_EXIT_OK;
}
