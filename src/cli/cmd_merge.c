/* bloomkit merge: the union of compatible filters (same type, geometry and seed), saved atomically. */
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit merge OUT IN... [-q]\n"
    "\n"
    "Writes to OUT the union of the IN filters: a key is present in OUT if it is present in any IN.\n"
    "The inputs must be compatible: the same type, the same geometry (built with the same -n, -p and\n"
    "type options) and the same seed; otherwise nothing is written and the message says what differs.\n"
    "For filters built on several hosts, create them all with the same bloomkit create (or build -n)\n"
    "parameters. OUT may be one of the inputs; it is replaced atomically (an existing filter OUT is\n"
    "overwritten; an existing file that is not a filter only with --force). Fuse filters cannot be\n"
    "merged (rebuild from the union of the keys).\n"
    "\n"
    "The merged count is an estimate from the fill (keys in both inputs are counted once), never more\n"
    "than the sum of the inputs' counts.\n"
    "\n"
    "Options:\n"
    "  -f, --force     replace OUT even if it is not a bloomkit filter\n"
    "  -q, --quiet     no summary on stderr\n"
    "  -h, --help      this help\n";

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    { "quiet", 'q', false, OPT_QUIET },
    { "force", 'f', false, OPT_FORCE },
    CLI_OPTS_END,
};

/* Says in words why two filters cannot be merged. */
static int incompatible(const char *a_path, const bk_filter *a, const char *b_path, const bk_filter *b)
{
    bk_stats sa, sb;
    bk_filter_stats(a, &sa);
    bk_filter_stats(b, &sb);
    const cli_type *ta = cli_type_of(a), *tb = cli_type_of(b);
    char why[256];
    char x[32], y[32];
    if (ta != tb)
        snprintf(why, sizeof why, "different types (%s and %s)", ta ? ta->name : "?", tb ? tb->name : "?");
    else if (sa.seed != sb.seed)
        snprintf(why, sizeof why, "different seeds (%llu and %llu)", (unsigned long long)sa.seed,
                 (unsigned long long)sb.seed);
    else if (sa.type == BK_TYPE_SCALABLE &&
             bk_scalable_classic(bk_filter_get(a, BK_TYPE_SCALABLE)) != bk_scalable_classic(bk_filter_get(b, BK_TYPE_SCALABLE)))
        snprintf(why, sizeof why, "different sub-filter kinds (blocked and classic: --classic-layers)");
    else if (sa.type == BK_TYPE_SCALABLE &&
             bk_scalable_compact(bk_filter_get(a, BK_TYPE_SCALABLE)) != bk_scalable_compact(bk_filter_get(b, BK_TYPE_SCALABLE)))
        snprintf(why, sizeof why, "different error schedules (one is a compact chain, as the Redis module's BF "
                 "keys are)");
    else if (sa.bits != sb.bits || sa.k != sb.k || sa.memory_bytes != sb.memory_bytes)
        snprintf(why, sizeof why, "different geometry (%s bits, k = %u and %s bits, k = %u); build both with the "
                 "same -n and -p", cli_group(sa.bits, x, sizeof x), sa.k, cli_group(sb.bits, y, sizeof y), sb.k);
    else
        snprintf(why, sizeof why, "different parameters");
    return cli_err("%s: cannot be merged with %s: %s; nothing was written", b_path, a_path, why);
}

static int run(int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    bool quiet = false, force = false;
    const char *out = NULL, *val;
    const char **in = calloc((size_t)argc, sizeof *in);
    size_t nin = 0;
    int id;
    if (!in) return cli_err("out of memory");
    while ((id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: free(in); return CLI_EXIT_ERR;
        case OPT_HELP: free(in); return cli_help("merge");
        case OPT_QUIET: quiet = true; break;
        case OPT_FORCE: force = true; break;
        case CLI_OPT_OPERAND:
            if (!out)
                out = val;
            else
                in[nin++] = val;
            break;
        }
    }
    if (!out || nin == 0) {
        free(in);
        return cli_err("needs OUT and at least one IN (see: bloomkit merge --help)");
    }
    if (!force && !cli_may_replace(out, false, NULL, 0)) {
        free(in);
        return CLI_EXIT_ERR;
    }
    /* OUT is locked before any input is read: if OUT is also an input that others add to, their
     * keys cannot slip in between our read and our rename. */
    cli_lock l;
    bool exists;
    if (!cli_lock_path(out, LOCK_EX, &l, &exists)) {
        free(in);
        return CLI_EXIT_ERR;
    }
    int rc = CLI_EXIT_OK;
    bk_filter *acc = exists && cli_same_file(&l, in[0]) ? cli_load_locked(&l, in[0]) : cli_load(in[0]);
    if (!acc) rc = CLI_EXIT_ERR;
    for (size_t i = 1; i < nin && rc == CLI_EXIT_OK; i++) {
        bk_filter *src = exists && cli_same_file(&l, in[i]) ? cli_load_locked(&l, in[i]) : cli_open_ro(in[i]);
        if (!src) {
            rc = CLI_EXIT_ERR;
            break;
        }
        /* quotient filters: the typed merge also takes a filter that another has grown from */
        bk_quotient *qa = bk_filter_get(acc, BK_TYPE_QUOTIENT);
        const bk_quotient *qs = bk_filter_get(src, BK_TYPE_QUOTIENT);
        bk_status s = qa && qs ? bk_quotient_union(qa, qs) : bk_filter_merge(acc, src);
        if (s == BK_EFULL && qa)
            rc = cli_err("%s: the union does not fit in %s's size: grow it first (bloomkit grow); nothing was "
                         "written", in[i], in[0]);
        else
        if (s == BK_EINCOMPAT) {
            rc = incompatible(in[0], acc, in[i], src);
        } else if (s == BK_ENOTSUP && qa && qs) {
            rc = cli_err("%s: a quotient filter grown by stages (bloomkit grow past its planned room) cannot be "
                         "merged; nothing was written", bk_quotient_stages(qs) > 1 ? in[i] : in[0]);
        } else if (s == BK_ENOTSUP) {
            const cli_type *t = cli_type_of(acc);
            rc = cli_err("%s: %s filters cannot be merged; nothing was written", in[i], t ? t->name : "these");
        } else if (s != BK_OK) {
            rc = cli_err("%s: merge failed: %s; nothing was written", in[i], cli_status_words(s));
        }
        bk_filter_free(src);
    }
    if (rc == CLI_EXIT_OK) {
        if (!cli_save(acc, out))
            rc = CLI_EXIT_ERR;
        else if (!quiet)
            cli_describe(stderr, "merged into", out, acc);
    }
    cli_unlock(&l);
    bk_filter_free(acc);
    free(in);
    return rc;
}

const cli_command cli_cmd_merge = { "merge", run, "OUT IN...", "union of compatible filters into OUT", help };
