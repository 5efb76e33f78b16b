/* bloomkit count: a count-min sketch file counts the lines of streams (--add), and answers how often
 * each line was counted (the estimate: never below the truth). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit count SKETCH [KEY...] [--null] [--keep-cr]\n"
    "       bloomkit count --add SKETCH [INPUT...] [-e E] [-d D | --width W --depth D] [--conservative]\n"
    "                      [--seed S] [--null] [--keep-cr] [-q]\n"
    "\n"
    "A count-min sketch file (type cms) holds approximate counts of every line it was given, in fixed\n"
    "memory. Without --add, prints each KEY (or each line of standard input) as its estimated count, a\n"
    "tab and the key. An estimate is never below the key's true count, and with probability at least\n"
    "1 - D it exceeds it by at most E times the total of all counts (the sizing below).\n"
    "\n"
    "With --add, every line of standard input (or of the INPUT files, in order) counts once into\n"
    "SKETCH, which is made when it does not exist: sized by -e/-d (default 0.001 and 0.01: 2000 x 7\n"
    "counters, as CMS.INITBYPROB 0.001 0.01) or by --width and --depth. The file is saved once, at the\n"
    "end (temporary file and rename). Sketches of the same width, depth and seed merge with\n"
    "bloomkit merge (counts add up).\n"
    "\n"
    "Options:\n"
    "  -a, --add            count the input lines into SKETCH\n"
    "  -e, --error E        a new sketch's error, relative to the total count (default 0.001)\n"
    "  -d, --prob D         the probability of exceeding it (default 0.01)\n"
    "      --width W        a new sketch's counters per row (with --depth, instead of -e/-d)\n"
    "      --depth D        its rows (at most 64)\n"
    "      --conservative   a new sketch updates conservatively (lower estimates; no subtraction)\n"
    "      --seed S         a new sketch's hash seed (default 0)\n"
    "  -0, --null           NUL-delimited keys in and out\n"
    "      --keep-cr        a trailing \\r is part of the key\n"
    "  -q, --quiet          no progress bar (it is shown only when stderr is a terminal)\n"
    "  -h, --help           this help\n"
    "\n"
    "Exit status: 0 success; 2 an error (a file that is not a count-min sketch, ...).\n"
    "\n"
    "Example: zcat access.log.gz | cut -d' ' -f7 | bloomkit count --add hits.bkf\n"
    "         bloomkit count hits.bkf /index.html /favicon.ico\n";

enum { OPT_ERROR = 2000, OPT_PROB, OPT_CONSERVATIVE };
#define MAX_WIDTH (UINT64_C(1) << 36)
#define MAX_DEPTH BK_CMS_MAX_DEPTH

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    CLI_OPTS_KEYS,
    CLI_OPTS_SKETCH,
    { "add", 'a', false, OPT_ADD },
    { "error", 'e', true, OPT_ERROR },
    { "prob", 'd', true, OPT_PROB },
    { "conservative", 0, false, OPT_CONSERVATIVE },
    CLI_OPTS_END,
};

static void put_estimate(cli_out *o, uint64_t est, const void *key, size_t len, char end)
{
    char num[32];
    int w = snprintf(num, sizeof num, "%llu\t", (unsigned long long)est);
    cli_out_put(o, num, (size_t)w);
    cli_out_put(o, key, len);
    cli_out_put(o, &end, 1);
}

static int query(const char *path, char **keys, size_t nkeys, const cli_reader_opts *ro)
{
    bk_filter *f = cli_open_ro(path);
    if (!f) return CLI_EXIT_ERR;
    const bk_cms *c = bk_filter_get(f, BK_TYPE_CMS);
    if (!c) {
        bk_filter_free(f);
        return cli_err("%s: not a count-min sketch (bloomkit count --add makes one)", path);
    }
    cli_out o;
    if (!cli_out_init(&o, 1, (size_t)1 << 20)) {
        bk_filter_free(f);
        return cli_err("out of memory");
    }
    char end = ro->null_delim ? '\0' : '\n';
    int rc = CLI_EXIT_OK;
    if (nkeys) {
        for (size_t i = 0; i < nkeys; i++) put_estimate(&o, bk_cms_query(c, keys[i], strlen(keys[i])), keys[i], strlen(keys[i]), end);
    } else {
        cli_reader *r = cli_reader_open(NULL, 0, ro);
        if (!r) rc = CLI_EXIT_ERR;
        cli_batch b;
        uint64_t est[CLI_BATCH];
        int got = 0;
        while (r && (got = cli_reader_next(r, &b)) > 0) {
            bk_cms_query_many(c, (const void *const *)b.keys, b.lens, b.n, est);
            for (size_t i = 0; i < b.n; i++) put_estimate(&o, est[i], b.keys[i], b.lens[i], end);
        }
        if (got < 0) rc = CLI_EXIT_ERR;
        if (r) cli_reader_close(r);
    }
    if (!cli_out_flush(&o)) rc = CLI_EXIT_ERR;
    cli_out_free(&o);
    bk_filter_free(f);
    return rc;
}

/* A batch of lines counted (a counter saturates at its maximum: no error). */
static bk_status count_batch(void *cms, const cli_batch *b)
{
    bk_cms_incrby_many(cms, (const void *const *)b->keys, b->lens, NULL, b->n, NULL);
    return BK_OK;
}

static int run(int argc, char **argv)
{
    bool add = false, conservative = false;
    double error = 0.001, prob = 0.01;
    cli_sketch_args a;
    if (!cli_sketch_begin(&a, argc, argv, opts, MAX_WIDTH, MAX_DEPTH)) return CLI_EXIT_ERR;
    const char *val;
    int id, rc = CLI_EXIT_ERR;
    while ((id = cli_sketch_next(&a, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: goto out;
        case OPT_HELP: rc = cli_help("count"); goto out;
        case OPT_ADD: add = true; break;
        case OPT_CONSERVATIVE: conservative = true; break;
        case OPT_ERROR: if (!cli_parse_prob("-e", val, &error)) goto out; break;
        case OPT_PROB: if (!cli_parse_prob("-d", val, &prob)) goto out; break;
        default: break;
        }
    }
    if (a.n == 0) {
        rc = cli_err("a SKETCH file is needed (see: bloomkit count --help)");
        goto out;
    }
    if (!a.width != !a.depth) {
        rc = cli_err("--width and --depth go together");
        goto out;
    }
    if (!add) {
        rc = query(a.operands[0], a.operands + 1, a.n - 1, &a.ro);
        goto out;
    }
    const char *path = a.operands[0];
    bk_filter *f = NULL;
    struct stat st;
    if (stat(path, &st) == 0) {
        bk_status s = bk_filter_load_path(path, BK_LOAD_DEFAULT, &f);
        if (s != BK_OK) {
            rc = cli_err_status(path, s);
            goto out;
        }
        if (!bk_filter_get(f, BK_TYPE_CMS)) {
            bk_filter_free(f);
            rc = cli_err("%s: not a count-min sketch", path);
            goto out;
        }
    } else {
        if (!cli_may_replace(path, false, a.operands + 1, a.n - 1)) goto out;
        bk_cms_options co = BK_CMS_OPTIONS_INIT;
        co.seed = a.seed;
        co.conservative = conservative;
        bk_cms *c = NULL;
        bk_status s = (a.width || a.depth) ? bk_cms_new(a.width, (uint32_t)a.depth, &co, &c) : bk_cms_new_prob(error, prob, &co, &c);
        if (s == BK_OK && (s = bk_filter_wrap(BK_TYPE_CMS, c, &f)) != BK_OK) bk_cms_free(c);
        if (s != BK_OK) {
            rc = cli_err_status(path, s);
            goto out;
        }
    }
    bk_status s;
    if (cli_sketch_feed(&a, a.operands + 1, a.n - 1, "count", count_batch, bk_filter_get(f, BK_TYPE_CMS), &s) == 0 &&
        cli_save_locked(f, path))
        rc = CLI_EXIT_OK;
    bk_filter_free(f);
out:
    free(a.operands);
    return rc;
}

const cli_command cli_cmd_count = { "count", run, "[--add] SKETCH [KEY...]",
                                    "count lines in a count-min sketch, or ask their counts", help };
