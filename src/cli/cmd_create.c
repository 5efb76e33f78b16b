/* bloomkit create: an empty filter file sized for n keys at p. */
#include <string.h>
#include <sys/file.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit create FILE -n N -p P [--type T] [--seed S] [type options] [--force]\n"
    "\n"
    "Creates an empty filter for N keys at false-positive rate P and saves it to FILE (atomically: a\n"
    "temporary file in the same directory is written, synced and renamed). An existing FILE is kept\n"
    "unless --force is given. Fuse filters are made from their whole key set: use bloomkit build.\n"
    "\n"
    "Options:\n"
    "  -n, --keys N              keys the filter is sized for: 1000000, 1,000,000, 10M, 1e7\n"
    "  -p, --fpr P               target false-positive rate: 0.01, 1%, 1e-3, 1/1000\n"
    "  -t, --type T              bloom (default), partitioned, blocked, counting, scalable, cuckoo, aging,\n"
    "                            quotient\n"
    "      --seed S              hash seed (decimal or 0x hex; default 0). A secret seed resists\n"
    "                            crafted keys; filters can only be merged with the same seed\n"
    "      --counter-bits B      counting: 4 (default) or 8 bits per counter\n"
    "      --growth G            scalable: each new sub-filter G times larger (1..16; 1 = same size;\n"
    "                            default " BK_CLI_STR(BK_SCALABLE_DEFAULT_GROWTH) ")\n"
    "      --nonscaling          scalable: never add a sub-filter (adds fail once it holds N keys)\n"
    "      --classic-layers      scalable: classic sub-filters (about 6% less memory than the default\n"
    "                            blocked ones, queries about 1.5-2x slower once out of cache)\n"
    "      --ratio R             scalable: each new sub-filter's error R times the previous (0 < R < 1;\n"
    "                            default " BK_CLI_STR(BK_SCALABLE_DEFAULT_TIGHTENING) ")\n"
    "      --fingerprint-bits F  cuckoo: 4 to 32 (default: from P); fuse: 8 or 16\n"
    "      --bucket-size B       cuckoo: slots per bucket, 1 .. 255 (default 4; 1, 2, 4, 8 fastest)\n"
    "      --max-kicks K         cuckoo: relocations before an insert gives up\n"
    "      --expansion E         cuckoo: when full, chain a table E times larger (0: fail when full)\n"
    "      --doublings D         quotient: D more remainder bits, so D doublings (bloomkit grow) keep\n"
    "                            the error rate P (0..24; D bits per slot more)\n"
    "      --expanding           quotient: an expanding filter, one table that doubles itself when full\n"
    "                            (add) keeping P at any size by wider slots; N is the keys before its\n"
    "                            first doubling. Not with --doublings\n"
    "      --block-bits B        blocked: 256 (split blocks, default, fastest) or 512 (smaller at low P)\n"
    "      --window W            aging: remember the last W insertions (10M; -n may then be left out) or\n"
    "                            the last W of time (90s, 30min, 1h, 7d; -n is then the keys per window).\n"
    "                            No key inside the window is ever reported absent; older keys are\n"
    "                            forgotten after at most a third more (docs/MATH.md, aging filter)\n"
    "  -f, --force               replace an existing FILE\n"
    "  -q, --quiet               no summary on stderr\n"
    "  -h, --help                this help\n"
    "\n"
    "Example: bloomkit create seen.bf -n 10M -p 0.1% --type blocked\n"
    "         bloomkit create recent.bf --type aging --window 1h -n 50M -p 1%\n"
    "         bloomkit create seen.qf --type quotient --expanding -n 100k -p 1%\n";

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    { "keys", 'n', true, OPT_N },
    { "fpr", 'p', true, OPT_P },
    { "force", 'f', false, OPT_FORCE },
    { "quiet", 'q', false, OPT_QUIET },
    CLI_OPTS_TYPE,
    CLI_OPTS_END,
};

/* Prints "created FILE: ..." on stderr. Shared with build and merge through cli_describe. */
static int run(int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    cli_size_args a = { 0 };
    bool force = false, quiet = false;
    const char *path = NULL;
    const char *val;
    int id;
    while ((id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: return CLI_EXIT_ERR;
        case OPT_HELP: return cli_help("create");
        case OPT_FORCE: force = true; break;
        case OPT_QUIET: quiet = true; break;
        case CLI_OPT_OPERAND:
            if (path) return cli_err("unexpected argument '%s' (see: bloomkit create --help)", val);
            path = val;
            break;
        default:
            if (cli_size_option(id, val, &a) < 0) return CLI_EXIT_ERR;
        }
    }
    if (!path) return cli_err("needs a FILE to create (see: bloomkit create --help)");
    if (!a.have_n && (a.given & CLI_TOPT_WINDOW) && !a.to.window_ms) { /* a count window holds its W keys */
        a.n = a.to.window;
        a.have_n = true;
    }
    if (!a.have_n || !a.have_p) return cli_err("needs -n N and -p P (see: bloomkit create --help)");
    const cli_type *t = a.type ? a.type : &cli_types[0];
    const uint64_t n = a.n;
    const double p = a.p;
    if (!cli_type_check_opts(t, a.given)) return CLI_EXIT_ERR;
    if (t->is_static || !t->create)
        return cli_err("%s filters are made from their whole key set at once: use bloomkit build", t->name);

    cli_lock l;
    bool exists;
    if (!cli_lock_path(path, LOCK_EX, &l, &exists)) return CLI_EXIT_ERR;
    if (exists && !force) {
        cli_unlock(&l);
        return cli_err("%s: already exists (use --force to replace it)", path);
    }
    bk_filter *f = NULL;
    bk_status s = t->create(n, p, &a.to, &f);
    if (s != BK_OK) {
        cli_unlock(&l);
        char b[32];
        return cli_err("%s: cannot create a %s filter for %s keys at p = %g: %s", path, t->name,
                       cli_group(n, b, sizeof b), p, cli_status_words(s));
    }
    bool ok = cli_save(f, path);
    cli_unlock(&l);
    if (ok && !quiet) cli_describe(stderr, "created", path, f);
    bk_filter_free(f);
    return ok ? CLI_EXIT_OK : CLI_EXIT_ERR;
}

const cli_command cli_cmd_create = { "create", run, "FILE -n N -p P [--type T]",
                                     "an empty filter file for N keys at FPR P", help };
