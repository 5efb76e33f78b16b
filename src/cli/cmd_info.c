/* bloomkit info: what a filter file holds, how full it is, and whether it needs rebuilding. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit info FILE [--json]\n"
    "       bloomkit info FILE.parquet --column C [--json]\n"
    "\n"
    "Shows a filter file's type, parameters, memory, inserted count, fill ratio, estimated number of\n"
    "distinct keys, the false-positive rate it was sized for and the one expected at its current fill.\n"
    "The file is opened by mmap and fully validated (structure and checksums) first.\n"
    "\n"
    "A filter is saturated when its count is past its capacity or its fill ratio past about 50%\n"
    "(the fill an optimally sized filter has at capacity): its false-positive rate is then above\n"
    "the target and rises with every key. info says so in words (and \"saturated\": true with a\n"
    "\"warning\" in the JSON): rebuild it larger, or use a scalable filter. A quotient filter is\n"
    "saturated when its false-positive rate is past its target or its slots are nearly full. An\n"
    "expanding quotient filter (create --type quotient --expanding) shows its doublings so far, its\n"
    "slot width and its false-positive bound (the sum over its keys, which it keeps under the target).\n"
    "\n"
    "With --column, FILE is a Parquet file: info describes column C's split-block Bloom filters, one\n"
    "per row group (see: bloomkit parquet --help).\n"
    "\n"
    "Options:\n"
    "  -c, --column C  FILE is a Parquet file: its column C's filters\n"
    "      --json      one JSON object with the same fields (numbers unformatted)\n"
    "  -h, --help      this help\n"
    "\n"
    "Exit status: 0 (also for a saturated filter); 2 if FILE is missing, unreadable or damaged.\n";

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    { "json", 0, false, OPT_JSON },
    CLI_OPTS_END,
};

static bool read_header(const char *path, bk_file_info *fi, uint64_t *file_bytes)
{
    uint8_t h[BK_FILE_HEADER_SIZE];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && read(fd, h, sizeof h) == (ssize_t)sizeof h &&
              bk_filter_peek_header(h, sizeof h, fi) == BK_OK;
    *file_bytes = ok ? (uint64_t)st.st_size : 0;
    close(fd);
    return ok;
}

static void warning_text(const bk_stats *st, const char *type, char *buf, size_t len)
{
    char a[32], b[32], pct[32], tgt[32];
    size_t o = 0;
    if (st->type == BK_TYPE_AGING) { /* a time window receiving keys faster than it was sized for */
        snprintf(buf, len,
                 "saturated: a generation holds more keys than the window was sized for (%s keys per window); "
                 "no key of the window is lost, but the false-positive rate is now about %s (target %s). "
                 "Create it with a larger -n",
                 cli_group(st->capacity, a, sizeof a), cli_percent(st->fpr_now, pct, sizeof pct),
                 cli_percent(st->fpr_target, tgt, sizeof tgt));
        return;
    }
    o += (size_t)snprintf(buf + o, len - o, "saturated: ");
    if (st->type == BK_TYPE_QUOTIENT && st->count <= st->capacity) {
        /* a quotient filter is saturated by its false-positive rate or its slots, not by a 50% fill */
        if (st->fpr_now > st->fpr_target)
            snprintf(buf + o, len - o,
                     "its false-positive rate (now about %s) is past its target of %s; it rises with every key. "
                     "Rebuild it from the full key set with a larger -n or a smaller -p (growing would not help: "
                     "each doubling costs a remainder bit)",
                     cli_percent(st->fpr_now, pct, sizeof pct), cli_percent(st->fpr_target, tgt, sizeof tgt));
        else
            snprintf(buf + o, len - o,
                     "its slots are nearly full (fill ratio %.1f%%): the next keys may not fit. Grow it "
                     "(bloomkit grow) or rebuild it larger", st->fill_ratio * 100);
        return;
    }
    bool both = st->count > st->capacity && st->fill_ratio > 0.5;
    if (st->count > st->capacity)
        o += (size_t)snprintf(buf + o, len - o, "%s keys inserted, past its capacity of %s",
                              cli_group(st->count, a, sizeof a), cli_group(st->capacity, b, sizeof b));
    if (both) o += (size_t)snprintf(buf + o, len - o, ", and ");
    if (st->fill_ratio > 0.5 || st->count <= st->capacity)
        o += (size_t)snprintf(buf + o, len - o, "fill ratio %.1f%% is past 50%%", st->fill_ratio * 100);
    if (o < len)
        snprintf(buf + o, len - o,
                 "; the false-positive rate (now about %s, target %s) rises with every key. Rebuild it larger "
                 "(bloomkit build from the full key set, or bloomkit create with a larger -n)%s",
                 cli_percent(st->fpr_now, pct, sizeof pct), cli_percent(st->fpr_target, tgt, sizeof tgt),
                 strcmp(type, "scalable") == 0 ? "" : ", or use a scalable filter (--type scalable)");
}

/* A count-min sketch or Top-K file: no capacity, fill or FPR, but its dimensions and total count. */
static void sketch_info(const bk_filter *f, const bk_stats *st, const char *path, const char *type,
                        uint64_t file_bytes, const bk_file_info *fi, bool have_hdr, const char *cks, bool json)
{
    const bk_cms *cms = st->type == BK_TYPE_CMS ? bk_filter_get(f, BK_TYPE_CMS) : NULL;
    const bk_topk *tk = st->type == BK_TYPE_TOPK ? bk_filter_get(f, BK_TYPE_TOPK) : NULL;
    uint64_t width = cms ? bk_cms_width(cms) : tk ? bk_topk_width(tk) : 0;
    uint32_t depth = cms ? bk_cms_depth(cms) : tk ? bk_topk_depth(tk) : 0;
    if (json) {
        printf("{\"file\":");
        cli_json_string(stdout, path);
        printf(",\"file_bytes\":%llu,\"type\":\"%s\",\"format_version\":\"%u.%u\",\"checksum\":\"%s\"",
               (unsigned long long)file_bytes, type, have_hdr ? fi->version_major : 0,
               have_hdr ? fi->version_minor : 0, strcmp(cks, "ok") ? "stale" : "ok");
        printf(",\"seed\":%llu,\"width\":%llu,\"depth\":%u,\"count\":%llu,\"memory_bytes\":%llu",
               (unsigned long long)st->seed, (unsigned long long)width, depth, (unsigned long long)st->count,
               (unsigned long long)st->memory_bytes);
        if (cms) printf(",\"conservative\":%s", bk_cms_conservative(cms) ? "true" : "false");
        if (tk) printf(",\"k\":%u,\"decay\":%.6g", bk_topk_k(tk), bk_topk_decay(tk));
        printf("}\n");
        return;
    }
    char a[32], b[32];
    printf("file:               %s (%s)\n", path, cli_human_bytes((double)file_bytes, a, sizeof a));
    printf("type:               %s (%s: a sketch, not a membership filter)\n", type,
           cms ? "count-min sketch" : "Top-K, HeavyKeeper");
    if (have_hdr) printf("format:             version %u.%u, checksum %s\n", fi->version_major, fi->version_minor, cks);
    printf("seed:               %llu\n", (unsigned long long)st->seed);
    printf("geometry:           %s x %u counters%s\n", cli_group(width, a, sizeof a), depth,
           cms && bk_cms_conservative(cms) ? " (conservative update)" : "");
    if (tk) printf("top:                the %u heaviest keys, decay %.3g\n", bk_topk_k(tk), bk_topk_decay(tk));
    printf("count:              %s (the sum of all increments)\n", cli_group(st->count, a, sizeof a));
    printf("memory:             %s\n", cli_human_bytes((double)st->memory_bytes, b, sizeof b));
}

static int run(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--column") == 0 || strncmp(argv[i], "--column=", 9) == 0 || strcmp(argv[i], "-c") == 0)
            return cli_parquet_action("info", argc, argv); /* a Parquet file's column filters */
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    bool json = false;
    const char *path = NULL, *val;
    int id;
    while ((id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: return CLI_EXIT_ERR;
        case OPT_HELP: return cli_help("info");
        case OPT_JSON: json = true; break;
        case CLI_OPT_OPERAND:
            if (path) return cli_err("unexpected argument '%s' (one FILE; see: bloomkit info --help)", val);
            path = val;
            break;
        }
    }
    if (!path) return cli_err("needs a FILE (see: bloomkit info --help)");
    bk_filter *f = cli_open_ro(path);
    if (!f) return CLI_EXIT_ERR;
    bk_file_info fi;
    uint64_t file_bytes = 0;
    bool have_hdr = read_header(path, &fi, &file_bytes);
    bk_stats st;
    bk_status s = bk_filter_stats(f, &st);
    if (s != BK_OK) {
        bk_filter_free(f);
        return cli_err_status(path, s);
    }
    const cli_type *t = cli_type_of(f);
    const char *type = t ? t->name : bk_type_name(st.type) ? bk_type_name(st.type) : "unknown";
    bool stale = have_hdr && (fi.flags & BK_FILE_FLAG_CHECKSUM_STALE);
    /* a scalable chain's sub-filters: blocked (the default) or classic; a compact chain (the Redis
     * module's BF keys) may hold a small classic first sub-filter before blocked ones */
    const bk_scalable *sc = st.type == BK_TYPE_SCALABLE ? bk_filter_get(f, BK_TYPE_SCALABLE) : NULL;
    const char *layers = sc ? (bk_scalable_classic(sc) ? "classic" : "blocked") : NULL;
    bk_scalable_layer first;
    const char *first_kind = NULL;
    if (sc && bk_scalable_compact(sc) && bk_scalable_get_layer(sc, 0, &first) == BK_OK)
        first_kind = first.classic ? "classic" : "blocked";
    char layers_text[96] = "";
    if (layers)
        snprintf(layers_text, sizeof layers_text, "%s%s%s", layers,
                 first_kind && strcmp(first_kind, layers) ? ", the first " : "",
                 first_kind && strcmp(first_kind, layers) ? first_kind : "");
    const char *cks = stale ? "not current (the file is open for shared writing, or a writer stopped "
                              "before closing it); structure verified"
                            : "ok";
    if (st.type == BK_TYPE_CMS || st.type == BK_TYPE_TOPK) {
        sketch_info(f, &st, path, type, file_bytes, &fi, have_hdr, cks, json);
        bk_filter_free(f);
        return CLI_EXIT_OK;
    }
    bool fp = st.type == BK_TYPE_CUCKOO || st.type == BK_TYPE_FUSE || st.type == BK_TYPE_QUOTIENT ||
              st.type == BK_TYPE_RIBBON;
    /* an aging filter's window (read by this process's clock for a time window) */
    const bk_aging *ag = st.type == BK_TYPE_AGING ? bk_filter_get(f, BK_TYPE_AGING) : NULL;
    bk_aging_info ai;
    if (ag && bk_aging_get_info(ag, &ai) != BK_OK) ag = NULL;
    const char *unit = ag && ai.mode == BK_AGING_TIME ? "ms" : "insertions";
    /* a quotient filter's stats give its slots (bits) and remainder width (k) */
    const bk_quotient *qf = st.type == BK_TYPE_QUOTIENT ? bk_filter_get(f, BK_TYPE_QUOTIENT) : NULL;
    const bool xq = qf && bk_quotient_expanding(qf);
    char warn[512] = "";
    if (st.saturated) warning_text(&st, type, warn, sizeof warn);

    if (json) {
        printf("{\"file\":");
        cli_json_string(stdout, path);
        printf(",\"file_bytes\":%llu,\"type\":\"%s\",\"format_version\":\"%u.%u\",\"checksum\":\"%s\"",
               (unsigned long long)file_bytes, type, have_hdr ? fi.version_major : 0,
               have_hdr ? fi.version_minor : 0, stale ? "stale" : "ok");
        printf(",\"seed\":%llu,\"capacity\":%llu,\"count\":%llu,\"est_cardinality\":%.0f",
               (unsigned long long)st.seed, (unsigned long long)st.capacity, (unsigned long long)st.count,
               st.est_cardinality);
        printf(",\"bits\":%llu,\"%s\":%u,\"memory_bytes\":%llu,\"bits_per_key\":", (unsigned long long)st.bits,
               fp ? "fingerprint_bits" : "k", st.k, (unsigned long long)st.memory_bytes);
        if (st.count) /* per inserted key: none yet in an empty filter */
            printf("%.6g", st.bits_per_key);
        else
            printf("null");
        printf(",\"fill_ratio\":%.6g,\"fpr_target\":%.6g,\"fpr_now\":%.6g", st.fill_ratio, st.fpr_target,
               st.fpr_now);
        if (st.type == BK_TYPE_COUNTING) printf(",\"saturated_cells\":%llu", (unsigned long long)st.saturated_cells);
        if (st.subfilters) printf(",\"subfilters\":%u", st.subfilters);
        if (layers) printf(",\"subfilter_kind\":\"%s\"", layers);
        if (first_kind) printf(",\"compact\":true,\"first_subfilter_kind\":\"%s\"", first_kind);
        if (qf)
            printf(",\"slots\":%llu,\"quotient_bits\":%u,\"remainder_bits\":%u,\"stages\":%u",
                   (unsigned long long)st.bits, bk_quotient_quotient_bits(qf), st.k, bk_quotient_stages(qf));
        if (qf) printf(",\"expanding\":%s", xq ? "true" : "false");
        if (xq)
            printf(",\"slot_bits\":%u,\"doublings\":%u,\"fpr_bound\":%.6g", bk_xquotient_slot_bits(qf),
                   bk_xquotient_doublings(qf), bk_xquotient_fpr_bound(qf));
        if (ag)
            printf(",\"window\":%llu,\"window_unit\":\"%s\",\"generations\":%u,\"live_generations\":%u"
                   ",\"slack\":%llu,\"covered\":%llu,\"inserted\":%llu",
                   (unsigned long long)ai.window, unit, ai.generations, ai.live, (unsigned long long)ai.slack,
                   (unsigned long long)ai.covered, (unsigned long long)ai.inserted);
        printf(",\"saturated\":%s,\"warning\":", st.saturated ? "true" : "false");
        if (st.saturated)
            cli_json_string(stdout, warn);
        else
            printf("null");
        printf("}\n");
    } else {
        char a[32], b[32], c[32];
        printf("file:               %s (%s)\n", path, cli_human_bytes((double)file_bytes, a, sizeof a));
        printf("type:               %s\n", type);
        if (have_hdr)
            printf("format:             version %u.%u, checksum %s\n", fi.version_major, fi.version_minor, cks);
        printf("seed:               %llu\n", (unsigned long long)st.seed);
        printf("capacity:           %s keys\n", cli_group(st.capacity, a, sizeof a));
        if (ag) {
            /* an aging filter counts insertions (a key added twice counts twice) and has no distinct
             * estimate of its own: its est_cardinality is that count */
            printf("count:              %s insertions held (every add counts, repeats too)\n",
                   cli_group(st.count, a, sizeof a));
        } else {
            printf("count:              %s keys inserted\n", cli_group(st.count, a, sizeof a));
            printf("distinct (est.):    %s keys\n", cli_group((uint64_t)(st.est_cardinality + 0.5), a, sizeof a));
        }
        if (st.type == BK_TYPE_CUCKOO)
            printf("geometry:           %s slots for %u-bit fingerprints\n", cli_group(st.bits, a, sizeof a), st.k);
        else if (xq)
            printf("geometry:           %s slots of %u bits: fingerprints of up to %u bits past the quotient\n",
                   cli_group(bk_xquotient_slots(qf), a, sizeof a), bk_xquotient_slot_bits(qf),
                   bk_xquotient_slot_bits(qf) - 1);
        else if (st.type == BK_TYPE_QUOTIENT && qf && bk_quotient_stages(qf) > 1)
            printf("geometry:           %u stages, %s slots in all; the newest has %s slots of %u-bit remainders\n",
                   bk_quotient_stages(qf), cli_group(st.bits, a, sizeof a),
                   cli_group(bk_quotient_slots(qf), b, sizeof b), st.k);
        else if (st.type == BK_TYPE_QUOTIENT && qf)
            printf("geometry:           %s slots (2^%u) of %u-bit remainders: %u-bit fingerprints\n",
                   cli_group(st.bits, a, sizeof a), bk_quotient_quotient_bits(qf), st.k,
                   bk_quotient_quotient_bits(qf) + st.k);
        else if (st.type == BK_TYPE_RIBBON)
            printf("geometry:           %s bits of solution; a key is checked on %u or %u "
                   "fingerprint bits\n",
                   cli_group(st.bits, a, sizeof a), st.k ? st.k - 1 : 0, st.k);
        else if (fp)
            printf("geometry:           %s cells of %u-bit fingerprints\n",
                   cli_group(st.k ? st.bits / st.k : st.bits, a, sizeof a), st.k);
        else
            printf("geometry:           %s bits, k = %u probes per key\n", cli_group(st.bits, a, sizeof a), st.k);
        if (ag) {
            char w[32], sl[32], cv[32];
            printf("window:             the last %s %s (a key may be kept up to %s %s longer); %u generations\n",
                   cli_group(ai.window, w, sizeof w), unit, cli_group(ai.slack, sl, sizeof sl), unit, ai.generations);
            printf("covered now:        the last %s %s\n", cli_group(ai.covered, cv, sizeof cv), unit);
        }
        if (xq)
            printf("expanding:          yes: %u doubling%s so far (it doubles itself at its load limit), %u-bit "
                   "slots\n",
                   bk_xquotient_doublings(qf), bk_xquotient_doublings(qf) == 1 ? "" : "s", bk_xquotient_slot_bits(qf));
        if (st.subfilters && !ag) printf("sub-filters:        %u%s%s\n", st.subfilters, layers ? ", " : "", layers ? layers_text : "");
        if (st.count)
            printf("memory:             %s (%s bytes), %.2f bits per inserted key\n",
                   cli_human_bytes((double)st.memory_bytes, a, sizeof a), cli_group(st.memory_bytes, c, sizeof c),
                   st.bits_per_key);
        else /* bits per inserted key has no meaning yet: say what the capacity will cost */
            printf("memory:             %s (%s bytes), %.2f bits per key at capacity (no keys inserted yet)\n",
                   cli_human_bytes((double)st.memory_bytes, a, sizeof a), cli_group(st.memory_bytes, c, sizeof c),
                   st.capacity ? (double)st.memory_bytes * 8 / (double)st.capacity : 0.0);
        printf("fill ratio:         %.2f%%\n", st.fill_ratio * 100);
        if (st.type == BK_TYPE_COUNTING)
            printf("saturated counters: %s\n", cli_group(st.saturated_cells, a, sizeof a));
        printf("FPR target:         %s\n", cli_percent(st.fpr_target, a, sizeof a));
        if (xq)
            printf("FPR bound:          %s, %s the %s target\n", cli_percent(bk_xquotient_fpr_bound(qf), b, sizeof b),
                   bk_xquotient_fpr_bound(qf) <= bk_xquotient_fpr_target(qf) ? "within" : "above",
                   cli_percent(bk_xquotient_fpr_target(qf), a, sizeof a));
        else
            printf("FPR now (expected): %s\n", cli_percent(st.fpr_now, b, sizeof b));
        if (st.saturated)
            printf("WARNING:            %s\n", warn);
        else
            printf("status:             ok (not saturated)\n");
    }
    bk_filter_free(f);
    return CLI_EXIT_OK;
}

const cli_command cli_cmd_info = { "info", run, "FILE [--json]",
                                   "type, parameters, fill, FPR now, saturation warning", help };
