/* bloomkit filter: copy the input lines that are absent from (or present in) the filter, and with
 * --add, one-pass dedup: copy each line not seen before and add it. The hot loop of dedup and "new
 * URL" pipelines: big reads split with memchr, one batch of hashes per 1024 lines through the type's
 * batch query (prefetching), and output gathered in a 1 MiB buffer, written out after every batch
 * when the output is line-buffered (a terminal, or --line-buffered). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit filter FILE [--absent | --present] [INPUT...] [--null] [--keep-cr] [-q]\n"
    "       bloomkit filter --add [FILE] [INPUT...] [-n N] [-p P] [--window W] [--strict] [-v]\n"
    "\n"
    "Copies the lines of standard input (or of the INPUT files, in order) to standard output, keeping\n"
    "only those whose key is absent from the filter (--absent, the default: \"which of these are new?\")\n"
    "or present in it (--present). Lines are copied exactly as they were read (a CRLF line keeps its\n"
    "\\r); a last line without a final newline gets one. With --absent a line whose key is not in the\n"
    "set is wrongly dropped at the filter's false-positive rate. FILE is mapped (no copy) and checked.\n"
    "\n"
    "With --add (-a), dedup in one pass: each line whose key is not in the filter is copied and its\n"
    "key added, so a line repeated later in the input, or in a later run, is dropped (like\n"
    "awk '!seen[$0]++', in constant memory). Without FILE the filter lives in memory: a scalable\n"
    "filter that starts at -n keys (default 1M) and grows, keeping the FPR under -p (default 0.01%),\n"
    "the rate at which a new line is wrongly dropped, however many keys come. With FILE, the keys are\n"
    "added to it as add does: in place for bloom, partitioned, blocked and counting filters (safe\n"
    "alongside other writers; a key is in the file once its line is printed), else the file is loaded,\n"
    "stays locked, and is saved when the input ends (also after a read error; not after a signal).\n"
    "\n"
    "With --window W (without FILE), a line is dropped only when its key was seen within the window:\n"
    "the last W lines (--window 10M: holds W keys) or the last W of time (--window 1h, 30min, 90s):\n"
    "an aging filter for -n keys a window (default 1M) that grows (4x, at a tighter rate) when more\n"
    "come, keeping -p; what it grew by is freed a window later. Every occurrence of a key restarts its\n"
    "window. A key seen within the window is always dropped; one last seen up to a third of a window\n"
    "earlier may be dropped too. An aging FILE (create --type aging) keeps its window across runs.\n"
    "\n"
    "Never silent: when FILE passes the capacity it was sized for (an aging FILE: a window over its -n),\n"
    "a warning on stderr says so at once, with the FPR now (from then on new lines are dropped\n"
    "wrongly more often); with --strict that is an error: the line that would pass it is not added,\n"
    "nothing from it on is printed, exit status 2. -v ends with a summary on stderr: keys read, lines\n"
    "printed, the filter's fill and FPR now.\n"
    "\n"
    "Output is written after every batch of lines read when standard output is a terminal or with\n"
    "--line-buffered; otherwise in 1 MiB blocks.\n"
    "\n"
    "Options:\n"
    "      --absent         keep the keys certainly not in the filter (default)\n"
    "      --present        keep the keys probably in the filter\n"
    "  -a, --add            dedup: keep the keys not in the filter, and add them\n"
    "  -n, --keys N         --add without FILE: the in-memory filter's first size (default 1M)\n"
    "  -p, --fpr P          --add without FILE: its false-positive rate (default 0.01%)\n"
    "      --window W       --add without FILE: drop repeats within the last W lines or W of time\n"
    "      --strict         --add: passing FILE's capacity is an error (exit 2); stop there\n"
    "  -v, --verbose        a summary on stderr at the end: read, printed, fill, FPR now\n"
    "      --line-buffered  write each line out before reading more input (as on a terminal)\n"
    "  -0, --null           NUL-delimited keys in and out\n"
    "      --keep-cr        a trailing \\r is part of the key\n"
    "  -q, --quiet          no progress bar (it is shown only when stderr is a terminal)\n"
    "  -h, --help           this help\n"
    "\n"
    "Exit status: 0, also when no line was kept; 2 on an error (a full filter: the lines after it are\n"
    "not copied) and with --strict when FILE reached its capacity.\n"
    "\n"
    "Examples: crawl | bloomkit filter seen.bf | tee new.txt | bloomkit add seen.bf\n"
    "          tail -f access.log | cut -d' ' -f1 | bloomkit filter --add   # each client once\n"
    "          tail -f events | bloomkit filter --add --window 1h   # repeats within the hour dropped\n";

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    CLI_OPTS_KEYS,
    { "absent", 0, false, OPT_ABSENT },
    { "present", 0, false, OPT_PRESENT },
    { "add", 'a', false, OPT_ADD },
    { "keys", 'n', true, OPT_N },
    { "fpr", 'p', true, OPT_P },
    { "line-buffered", 0, false, OPT_LINE_BUFFERED },
    { "window", 0, true, OPT_WINDOW },
    { "strict", 0, false, OPT_STRICT },
    { "verbose", 'v', false, OPT_VERBOSE },
    { "quiet", 'q', false, OPT_QUIET },
    CLI_OPTS_END,
};

/* The command line; the options of a new mode go here and in parse(). */
typedef struct filter_args {
    const char *path;  /* the filter file; NULL: --add with an in-memory filter */
    char **inputs;     /* INPUT operands (pointers into argv); the array is malloc'd */
    size_t ninputs;
    bool want_present, add, line_buffered, quiet, strict, verbose;
    bool have_n, have_p;
    uint64_t n;        /* --add in memory: first size */
    double p;          /* --add in memory: total FPR */
    cli_type_opts window; /* --add in memory with --window: an aging filter's window */
    bool have_window;
    cli_reader_opts ro;
} filter_args;

/* -1: parsed, go on; otherwise the exit status to return. */
static int parse(int argc, char **argv, filter_args *a)
{
    memset(a, 0, sizeof *a);
    a->n = 1000000;
    a->p = 1e-4;
    if (!(a->inputs = calloc((size_t)argc, sizeof *a->inputs))) return cli_err("out of memory");
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    const char *val, *first = NULL;
    int id;
    bool have_first = false;
    while ((id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: return CLI_EXIT_ERR;
        case OPT_HELP: return cli_help("filter");
        case OPT_NULL: a->ro.null_delim = true; break;
        case OPT_KEEP_CR: a->ro.keep_cr = true; break;
        case OPT_QUIET: a->quiet = true; break;
        case OPT_ABSENT: a->want_present = false; break;
        case OPT_PRESENT: a->want_present = true; break;
        case OPT_ADD: a->add = true; break;
        case OPT_LINE_BUFFERED: a->line_buffered = true; break;
        case OPT_STRICT: a->strict = true; break;
        case OPT_VERBOSE: a->verbose = true; break;
        case OPT_WINDOW: {
            unsigned given = 0;
            if (cli_type_option(OPT_WINDOW, val, &a->window, &given) < 0) return CLI_EXIT_ERR;
            a->have_window = true;
            break;
        }
        case OPT_N:
            if (!cli_parse_count("-n", val, 1, (uint64_t)1 << 40, &a->n)) return CLI_EXIT_ERR;
            a->have_n = true;
            break;
        case OPT_P:
            if (!cli_parse_prob("-p", val, &a->p)) return CLI_EXIT_ERR;
            a->have_p = true;
            break;
        case CLI_OPT_OPERAND:
            if (!have_first) {
                first = val;
                have_first = true;
            } else {
                a->inputs[a->ninputs++] = (char *)val;
            }
            break;
        }
    }
    a->path = first;
    if (a->add && a->want_present) return cli_err("--add and --present do not go together (see: bloomkit filter --help)");
    if (!a->path && !a->add) return cli_err("needs a FILE (see: bloomkit filter --help)");
    if (a->path && (a->have_n || a->have_p))
        return cli_err("-n and -p size the in-memory filter of --add without FILE; FILE has its own size");
    if (!a->add && (a->have_n || a->have_p)) return cli_err("-n and -p go with --add (see: bloomkit filter --help)");
    if (!a->add && a->strict) return cli_err("--strict goes with --add (see: bloomkit filter --help)");
    if (a->have_window && (!a->add || a->path))
        return cli_err("--window goes with --add without FILE (an aging filter FILE has its own window)");
    if (a->have_window && a->have_n && !a->window.window_ms)
        return cli_err("-n goes with a time --window (a window of W lines holds W keys)");
    return -1;
}

/* The filter --add writes to: in place (shared mapping), or loaded under the exclusive lock l (saved
 * at the end), or in memory. NULL with a message. */
static bk_filter *open_for_add(const filter_args *a, cli_lock *l, bool *save_at_end)
{
    *save_at_end = false;
    l->fd = -1;
    if (!a->path) {
        const cli_type *t = cli_type_find(a->have_window ? "aging" : "scalable");
        cli_type_opts o = { 0 };
        if (a->have_window) o = a->window;
        bk_filter *f = NULL;
        /* a chain of blocked sub-filters reaches up to 1.046 times the p it is made with (docs/MATH.md,
         * scalable): made with p / 1.046, it keeps the -p asked for however many keys come */
        double p = a->have_window ? a->p : a->p / 1.046;
        bk_status s = t ? t->create(a->n, p, &o, &f) : BK_EINVAL;
        if (s != BK_OK) cli_err("cannot make an in-memory filter for %llu keys at %g: %s", (unsigned long long)a->n,
                                a->p, cli_status_words(s));
        return s == BK_OK ? f : NULL;
    }
    if (!cli_lock_path(a->path, LOCK_SH, l, NULL)) return NULL;
    bk_filter *f = NULL;
    errno = 0;
    cli_mapguard_file(a->path);
    bk_status s = bk_filter_open_mmap(a->path, BK_OPEN_WRITE_SHARED, &f);
    cli_unlock(l);
    if (s == BK_OK) return f;
    if (s == BK_EIO && (errno == ENOSPC || errno == EDQUOT)) {
        cli_err("%s: cannot add in place: %s (the file is unchanged)", a->path, strerror(errno));
        return NULL;
    }
    if (s != BK_ENOTSUP) {
        cli_file_error(a->path, s);
        return NULL;
    }
    if (!cli_lock_path(a->path, LOCK_EX, l, NULL)) return NULL;
    if (!(f = cli_load_locked(l, a->path))) {
        cli_unlock(l);
        return NULL;
    }
    const cli_type *t = cli_type_of(f);
    if (t && t->is_static) {
        cli_err("%s: %s filters cannot take new keys; rebuild it with bloomkit build", a->path, t->name);
        bk_filter_free(f);
        cli_unlock(l);
        return NULL;
    }
    *save_at_end = true;
    return f;
}

static int run(int argc, char **argv)
{
    filter_args a;
    int done = parse(argc, argv, &a);
    if (done >= 0) {
        free(a.inputs);
        return done;
    }
    int rc = CLI_EXIT_OK;
    cli_lock l = { -1 };
    bool save_at_end = false;
    /* an in-memory time window grows (window.c); the other filters are one bk_filter */
    cli_window window, *win = NULL;
    bk_filter *f = NULL;
    if (a.add && !a.path && a.have_window && a.window.window_ms) {
        bk_status ws = cli_window_new(&window, a.window.window, a.n, a.p);
        if (ws == BK_OK)
            win = &window;
        else
            cli_err("cannot make an in-memory window for %llu keys at %g: %s", (unsigned long long)a.n, a.p,
                    cli_status_words(ws));
    } else {
        f = a.add ? open_for_add(&a, &l, &save_at_end) : cli_open_ro(a.path);
    }
    cli_reader *r = f || win ? cli_reader_open(a.inputs, a.ninputs, &a.ro) : NULL;
    cli_out out;
    if (!r || !cli_out_init(&out, 1, (size_t)1 << 20)) {
        cli_reader_close(r);
        if (win) cli_window_free(win);
        bk_filter_free(f);
        cli_unlock(&l);
        free(a.inputs);
        return CLI_EXIT_ERR;
    }
    cli_mapguard_output(&out);
    const bool flush_each = a.line_buffered || isatty(1);
    const uint8_t want = a.want_present ? 1 : 0;
    const uint8_t delim = a.ro.null_delim ? '\0' : '\n';
    const uint64_t seed = win ? 0 : bk_filter_seed(f);
    uint64_t h[CLI_BATCH], lines = 0;
    uint8_t res[CLI_BATCH];
    bk_status s = BK_OK;
    cli_progress prog;
    cli_progress_start(&prog, a.quiet, "filter", cli_reader_total_bytes(r));
    const char *name = a.path ? a.path : "in-memory filter";
    cli_watch w;
    bool stop = false, window_said = false;
    uint64_t printed = 0;
    memset(&w, 0, sizeof w); /* CLI_WATCH_NONE: the window grows */
    if (a.add && !win) {
        cli_watch_start(&w, f, name, a.strict);
        if (w.crossed && w.mode != CLI_WATCH_NONE) { /* past its capacity before the first line */
            rc = cli_watch_crossed(&w, f);
            stop = a.strict;
        }
    }
    cli_batch b;
    int more = 0;
    while (!stop && (more = cli_reader_next(r, &b)) > 0) {
        cli_hash_batch(&b, seed, h);
        uint8_t keep = want;
        size_t taken = b.n;
        if (a.add) {
            /* up to the line whose key passes the filter's capacity, then say so (and with --strict,
             * stop before that line), then on */
            keep = 1; /* is_new */
            taken = 0;
            while (taken < b.n) {
                size_t used;
                uint64_t added;
                bool crossed_window = false;
                if (win) {
                    used = b.n - taken;
                    s = cli_window_add_new(win, h + taken, used, res + taken, &added);
                    crossed_window = win->stuck && !window_said;
                } else {
                    s = cli_add_new_hashes(f, h + taken, b.n - taken, res + taken, cli_watch_room(&w), &used, &added);
                }
                bool crossed = s == BK_OK && cli_watch_added(&w, f, added, taken + used < b.n);
                for (size_t i = taken; i < taken + used; i++)
                    if (res[i]) {
                        cli_out_put(&out, b.keys[i], b.raw_lens[i]);
                        printed++;
                    }
                if (b.last_unterminated && taken + used == b.n && res[b.n - 1]) cli_out_put(&out, &delim, 1);
                taken += used;
                if (s != BK_OK) break;
                if (crossed) {
                    cli_out_flush(&out); /* the lines before it, then the warning */
                    int c = cli_watch_crossed(&w, f);
                    if (c != CLI_EXIT_OK) rc = c;
                    if ((stop = a.strict)) break;
                }
                if (crossed_window) { /* it could not grow (memory, or its limit of filters) */
                    char k[32];
                    cli_out_flush(&out);
                    cli_warn("%s: %s: more keys came within the window than it could grow for (%u times, to %s keys a "
                             "window): its FPR may pass %g from here on",
                             name, a.strict ? "error" : "warning", win->grown,
                             cli_group(win->m[win->n - 1].keys, k, sizeof k), a.p);
                    window_said = true;
                    if (a.strict) {
                        rc = CLI_EXIT_ERR;
                        stop = true;
                        break;
                    }
                }
            }
        } else {
            bk_filter_contains_hashes(f, h, b.n, res, NULL);
            for (size_t i = 0; i < b.n; i++)
                if (res[i] == keep) {
                    cli_out_put(&out, b.keys[i], b.raw_lens[i]);
                    printed++;
                }
            if (b.last_unterminated && res[b.n - 1] == keep) cli_out_put(&out, &delim, 1);
        }
        if (flush_each) cli_out_flush(&out);
        lines += taken;
        if (out.failed || s != BK_OK) break;
        cli_progress_update(&prog, cli_reader_bytes_done(r), lines);
    }
    cli_progress_end(&prog);
    if (more < 0 || out.failed) rc = CLI_EXIT_ERR;
    if (a.add && !win && !w.crossed && w.mode != CLI_WATCH_NONE && s == BK_OK) {
        /* what the count of this run's keys cannot see: other writers' keys, a fill past the fill at
         * capacity (a union's estimated count) */
        bk_stats st;
        if (bk_filter_stats(f, &st) == BK_OK && st.saturated) {
            cli_out_flush(&out);
            int c = cli_watch_crossed(&w, f);
            if (c != CLI_EXIT_OK) rc = c;
        }
    }
    if (a.verbose) {
        bk_stats st;
        char rd[32], pr[32], fill[32], now[32], tgt[32];
        if (win) cli_window_stats(win, &st);
        if (win || bk_filter_stats(f, &st) == BK_OK)
            cli_warn("%s: read %s keys, printed %s%s; fill %s, FPR now about %s (sized for %s)%s", name,
                     cli_group(lines, rd, sizeof rd), cli_group(printed, pr, sizeof pr),
                     stop ? " (stopped at the capacity)" : "", cli_percent(st.fill_ratio, fill, sizeof fill),
                     cli_percent(st.fpr_now, now, sizeof now), cli_percent(a.add && !a.path ? a.p : st.fpr_target, tgt, sizeof tgt),
                     win && win->grown ? "; the window grew for more keys" : st.saturated ? "; past its capacity" : "");
    }
    if (s != BK_OK) {
        char advice[CLI_PATH_ADVICE];
        rc = s == BK_EFULL ? cli_err("%s: the filter is full; the lines after it were not copied; %s", name,
                                     cli_full_advice(f, a.path, advice, sizeof advice))
                           : cli_err("%s: add failed: %s", name, cli_status_words(s));
    }
    if (!cli_out_flush(&out)) rc = CLI_EXIT_ERR;
    cli_mapguard_output(NULL);
    cli_out_free(&out);
    cli_reader_close(r);
    /* what was printed was added: save it, also after a read error */
    if (save_at_end && !cli_save(f, a.path)) rc = CLI_EXIT_ERR;
    if (a.add && a.path && !save_at_end) {
        bk_status c = bk_filter_close(f);
        if (c != BK_OK && rc == CLI_EXIT_OK)
            rc = cli_close_error(a.path, c);
    } else {
        bk_filter_free(f);
    }
    if (win) cli_window_free(win);
    cli_unlock(&l);
    free(a.inputs);
    return rc;
}

const cli_command cli_cmd_filter = { "filter", run, "FILE [--absent|--present|--add]",
                                     "copy stdin lines: only the absent (default) or present; --add: dedup", help };
