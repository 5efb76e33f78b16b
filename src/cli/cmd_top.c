/* bloomkit top: the k most frequent lines of a stream, with their estimated counts, in constant memory
 * (a Top-K sketch, HeavyKeeper: the streaming `sort | uniq -c | sort -rn | head`). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit top [-k K] [INPUT...] [--width W] [--depth D] [--decay X] [--seed S] [--null]\n"
    "                    [--keep-cr] [-q]\n"
    "\n"
    "Prints the K (default 10) most frequent lines of standard input (or of the INPUT files, in order),\n"
    "heaviest first, each as its estimated count right-aligned in 7 columns, a space and the line, as\n"
    "`sort | uniq -c | sort -rn | head -K` would, but in one pass and in constant memory: a Top-K sketch\n"
    "(HeavyKeeper) of W x D counters keeps the heavy lines and lets the light ones decay. Counts are\n"
    "estimates: never above the true count of a line that kept its counters, and close to it for the\n"
    "heavy lines; a line much lighter than the K-th may be missing where sort would list it (ties).\n"
    "The same input and seed give the same output.\n"
    "\n"
    "Options:\n"
    "  -k, --top K       how many lines to print (default 10)\n"
    "      --width W     counters per row (default max(8, K ln K), at least 64); more: more accurate\n"
    "      --depth D     rows (default max(5, ln K); at most 64)\n"
    "      --decay X     the decay base in (0, 1] (default 0.9)\n"
    "      --seed S      hash seed (default 0)\n"
    "  -0, --null        NUL-delimited lines in and out\n"
    "      --keep-cr     a trailing \\r is part of the line\n"
    "  -q, --quiet       no progress bar (it is shown only when stderr is a terminal)\n"
    "  -h, --help        this help\n"
    "\n"
    "Exit status: 0 success; 2 an error.\n"
    "\n"
    "Example: cut -d' ' -f1 access.log | bloomkit top -k 20   # the 20 busiest clients\n";

enum { OPT_TOP = 2000, OPT_DECAY };
#define MAX_WIDTH UINT32_MAX
#define MAX_DEPTH BK_TOPK_MAX_DEPTH

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    CLI_OPTS_KEYS,
    CLI_OPTS_SKETCH,
    { "top", 'k', true, OPT_TOP },
    { "decay", 0, true, OPT_DECAY },
    CLI_OPTS_END,
};

static bk_status top_batch(void *topk, const cli_batch *b)
{
    return bk_topk_incrby_many(topk, (const void *const *)b->keys, b->lens, NULL, b->n, NULL);
}

static int run(int argc, char **argv)
{
    uint64_t k = 10;
    double decay = 0.9;
    cli_sketch_args a;
    if (!cli_sketch_begin(&a, argc, argv, opts, MAX_WIDTH, MAX_DEPTH)) return CLI_EXIT_ERR;
    const char *val;
    int id, rc = CLI_EXIT_ERR;
    while ((id = cli_sketch_next(&a, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: goto out;
        case OPT_HELP: rc = cli_help("top"); goto out;
        case OPT_TOP: if (!cli_parse_count("-k", val, 1, 1000000, &k)) goto out; break;
        case OPT_DECAY: if (!cli_parse_double("--decay", val, 1e-9, 1, &decay)) goto out; break;
        default: break;
        }
    }
    bk_topk_options to = BK_TOPK_OPTIONS_INIT;
    to.width = (uint32_t)a.width;
    if (!a.width) {
        bk_topk *probe = NULL;
        if (bk_topk_new((uint32_t)k, NULL, &probe) == BK_OK) to.width = bk_topk_width(probe);
        bk_topk_free(probe);
        if (to.width < 64) to.width = 64;
    }
    to.depth = (uint32_t)a.depth;
    to.decay = decay;
    to.seed = a.seed;
    bk_topk *t = NULL;
    bk_status s = bk_topk_new((uint32_t)k, &to, &t);
    if (s != BK_OK) {
        rc = cli_err_status("top", s);
        goto out;
    }
    if (cli_sketch_feed(&a, a.operands, a.n, "top", top_batch, t, &s) < 0) goto out_t;
    if (s != BK_OK) {
        rc = cli_err_status("top", s);
        goto out_t;
    }
    size_t n = bk_topk_list(t, NULL, 0);
    bk_topk_item *items = calloc(n ? n : 1, sizeof *items);
    cli_out o;
    if (!items || !cli_out_init(&o, 1, (size_t)1 << 16)) {
        free(items);
        rc = cli_err("out of memory");
        goto out_t;
    }
    n = bk_topk_list(t, items, n);
    char end = a.ro.null_delim ? '\0' : '\n';
    for (size_t i = 0; i < n; i++) {
        char num[32];
        int w = snprintf(num, sizeof num, "%7llu ", (unsigned long long)items[i].count);
        cli_out_put(&o, num, (size_t)w);
        cli_out_put(&o, items[i].key, items[i].len);
        cli_out_put(&o, &end, 1);
    }
    rc = cli_out_flush(&o) ? CLI_EXIT_OK : CLI_EXIT_ERR;
    cli_out_free(&o);
    free(items);
out_t:
    bk_topk_free(t);
out:
    free(a.operands);
    return rc;
}

const cli_command cli_cmd_top = { "top", run, "[-k K] [INPUT...]",
                                  "the K most frequent lines with their counts (constant memory)", help };
