/* bloomkit grow: double a quotient filter's capacity without its keys (saved atomically): in place
 * while its planned room lasts, then by stages that keep its error rate; --in-place and --spend-fpr
 * name the older behaviours. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit grow FILE [-t TIMES] [--in-place | --spend-fpr] [-q]\n"
    "\n"
    "Doubles the capacity of the quotient filter FILE TIMES times (default 1) without its keys, keeping\n"
    "its error rate at capacity within 1.1 times its target however often it grows. While the filter\n"
    "has room (made with --doublings D: D remainder bits of room), a doubling moves one bit of every\n"
    "stored fingerprint from the remainder into the quotient. Past that room, a doubling adds a stage:\n"
    "a new table as large as all before it, with longer fingerprints, that takes the new keys; queries\n"
    "look in every stage (1 + log2 of the growth past the room). The summary gives the error rate at\n"
    "capacity before and after and the stages. FILE is locked and replaced atomically; on any error it\n"
    "is unchanged. Other filter types cannot grow this way (scalable and cuckoo filters grow by\n"
    "themselves). A filter of stages cannot be merged.\n"
    "\n"
    "Options:\n"
    "  -t, --times N   double N times (1..24)\n"
    "      --in-place  only double in place: a doubling that would raise the error rate at capacity\n"
    "                  above 1.1 times the target is refused (nothing written)\n"
    "      --spend-fpr double in place even past the error rate the filter was made for (at the same\n"
    "                  load each such doubling doubles the false-positive rate)\n"
    "  -q, --quiet     no summary on stderr\n"
    "  -h, --help      this help\n";

enum { OPT_TIMES = OPT_ADD + 100, OPT_SPEND_FPR, OPT_IN_PLACE }; /* past the shared option ids */

/* A doubling may raise the error rate at capacity to this factor of the target without --spend-fpr. */
#define GROW_KEEP_FPR BK_QUOTIENT_KEEP_FPR

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    { "quiet", 'q', false, OPT_QUIET },
    { "times", 't', true, OPT_TIMES },
    { "spend-fpr", 0, false, OPT_SPEND_FPR },
    { "in-place", 0, false, OPT_IN_PLACE },
    CLI_OPTS_END,
};

static int run(int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    bool quiet = false, spend = false, in_place = false;
    const char *path = NULL, *val;
    uint64_t times = 1;
    int id;
    while ((id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: return CLI_EXIT_ERR;
        case OPT_HELP: return cli_help("grow");
        case OPT_QUIET: quiet = true; break;
        case OPT_SPEND_FPR: spend = true; break;
        case OPT_IN_PLACE: in_place = true; break;
        case OPT_TIMES:
            if (!cli_parse_count("--times", val, 1, 24, &times)) return CLI_EXIT_ERR;
            break;
        case CLI_OPT_OPERAND:
            if (path) return cli_err("grow takes one FILE (see: bloomkit grow --help)");
            path = val;
            break;
        }
    }
    if (!path) return cli_err("needs FILE (see: bloomkit grow --help)");
    if (spend && in_place) return cli_err("--in-place and --spend-fpr exclude each other (see: bloomkit grow --help)");
    cli_lock l;
    if (!cli_lock_path(path, LOCK_EX, &l, NULL)) return CLI_EXIT_ERR;
    int rc = CLI_EXIT_OK;
    bk_filter *f = cli_load_locked(&l, path);
    bk_quotient *q = f ? bk_filter_get(f, BK_TYPE_QUOTIENT) : NULL;
    if (!f) {
        rc = CLI_EXIT_ERR;
    } else if (!q) {
        const cli_type *t = cli_type_of(f);
        rc = cli_err("%s: a %s filter cannot grow by doubling (only quotient filters can); nothing was written",
                     path, t ? t->name : "non-quotient");
    } else {
        double target = bk_quotient_fpr_target(q), before = bk_quotient_grown_fpr(q, 0);
        uint32_t stages0 = bk_quotient_stages(q);
        for (uint64_t i = 0; i < times && rc == CLI_EXIT_OK; i++) {
            double then = bk_quotient_grown_fpr(q, 1);
            if (in_place && then > GROW_KEEP_FPR * target) {
                rc = cli_err("%s: %sdoubling in place would raise the error rate at capacity to %.3g, above the "
                             "filter's target %.3g; nothing was written (without --in-place it grows by a stage "
                             "at its error rate; --spend-fpr grows in place anyway)",
                             path, i ? "a further " : "", then, target);
                break;
            }
            bk_status s = spend || in_place ? bk_quotient_grow(q) : bk_quotient_expand(q);
            if (s != BK_OK)
                rc = cli_err("%s: cannot grow %s(%llu slots, %u remainder bits): %s; nothing was written", path,
                             i ? "further " : "", (unsigned long long)bk_quotient_slots(q),
                             bk_quotient_remainder_bits(q), cli_status_words(s));
        }
        if (rc == CLI_EXIT_OK) {
            if (!cli_save(f, path))
                rc = CLI_EXIT_ERR;
            else if (!quiet) {
                cli_describe(stderr, "grew", path, f);
                fprintf(stderr, "%s: error rate at capacity %.3g -> %.3g (target %.3g)%s\n", path, before,
                        bk_quotient_grown_fpr(q, 0), target,
                        bk_quotient_grown_fpr(q, 0) > GROW_KEEP_FPR * target ? ": above the target" : "");
                if (bk_quotient_stages(q) > 1)
                    fprintf(stderr, "%s: stages %u -> %u (a query looks in each)\n", path, stages0,
                            bk_quotient_stages(q));
            }
        }
    }
    cli_unlock(&l);
    bk_filter_free(f);
    return rc;
}

const cli_command cli_cmd_grow = { "grow", run, "FILE", "double a quotient filter's slots without its keys", help };
