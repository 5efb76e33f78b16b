/* bloomkit grow: double a quotient filter's slots without its keys, in place (saved atomically). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit grow FILE [-t TIMES] [--spend-fpr] [-q]\n"
    "\n"
    "Doubles the slots of the quotient filter FILE TIMES times (default 1) without its keys: each\n"
    "doubling moves one bit of every stored fingerprint from the remainder into the quotient, so the\n"
    "filter takes twice the keys. A filter made with --doublings D has D remainder bits of room: that\n"
    "many doublings keep its error rate at capacity within its target. A doubling that would raise it\n"
    "above 1.1 times the target is refused (nothing written) unless --spend-fpr is given: then, at the\n"
    "same load, each doubling doubles the false-positive rate. Growth stops at 2 remainder bits or\n"
    "2^31 slots. The summary gives the error rate at capacity before and after. FILE is locked and\n"
    "replaced atomically; on any error it is unchanged. Other filter types cannot grow this way\n"
    "(scalable and cuckoo filters grow by themselves).\n"
    "\n"
    "Options:\n"
    "  -t, --times N   double N times (1..24)\n"
    "      --spend-fpr grow even past the error rate the filter was made for\n"
    "  -q, --quiet     no summary on stderr\n"
    "  -h, --help      this help\n";

enum { OPT_TIMES = OPT_ADD + 100, OPT_SPEND_FPR }; /* past the shared option ids */

/* A doubling may raise the error rate at capacity to this factor of the target without --spend-fpr. */
#define GROW_KEEP_FPR BK_QUOTIENT_KEEP_FPR

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    { "quiet", 'q', false, OPT_QUIET },
    { "times", 't', true, OPT_TIMES },
    { "spend-fpr", 0, false, OPT_SPEND_FPR },
    CLI_OPTS_END,
};

static int run(int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    bool quiet = false, spend = false;
    const char *path = NULL, *val;
    uint64_t times = 1;
    int id;
    while ((id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: return CLI_EXIT_ERR;
        case OPT_HELP: return cli_help("grow");
        case OPT_QUIET: quiet = true; break;
        case OPT_SPEND_FPR: spend = true; break;
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
        for (uint64_t i = 0; i < times && rc == CLI_EXIT_OK; i++) {
            double then = bk_quotient_grown_fpr(q, 1);
            if (!spend && then > GROW_KEEP_FPR * target) {
                rc = cli_err("%s: %sdoubling would raise the error rate at capacity to %.3g, above the filter's "
                             "target %.3g; nothing was written (--spend-fpr grows anyway; create the filter with "
                             "--doublings D for room to grow at its error rate)",
                             path, i ? "a further " : "", then, target);
                break;
            }
            bk_status s = bk_quotient_grow(q);
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
            }
        }
    }
    cli_unlock(&l);
    bk_filter_free(f);
    return rc;
}

const cli_command cli_cmd_grow = { "grow", run, "FILE", "double a quotient filter's slots without its keys", help };
