/* bloomkit filter: copy the input lines that are absent from (or present in) the filter. The hot
 * loop of dedup and "new URL" pipelines: big reads split with memchr, one batch of hashes per 1024
 * lines through the type's batch query (prefetching), and output gathered in a 1 MiB buffer. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit filter FILE [--absent | --present] [INPUT...] [--null] [--keep-cr] [-q]\n"
    "\n"
    "Copies the lines of standard input (or of the INPUT files, in order) to standard output, keeping\n"
    "only those whose key is absent from the filter (--absent, the default: \"which of these are new?\")\n"
    "or present in it (--present). Lines are copied exactly as they were read (a CRLF line keeps its\n"
    "\\r); a last line without a final newline gets one. With --absent every line whose key is in the\n"
    "set is dropped, and a line whose key is not in the set is wrongly dropped at the filter's\n"
    "false-positive rate. The file is opened by mmap (no copy) and validated first.\n"
    "\n"
    "Options:\n"
    "      --absent    keep the keys certainly not in the filter (default)\n"
    "      --present   keep the keys probably in the filter\n"
    "  -0, --null      NUL-delimited keys in and out\n"
    "      --keep-cr   a trailing \\r is part of the key\n"
    "  -q, --quiet     no progress bar (it is shown only when stderr is a terminal)\n"
    "  -h, --help      this help\n"
    "\n"
    "Example: crawl | bloomkit filter seen.bf | tee new.txt | bloomkit add seen.bf\n";

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    CLI_OPTS_KEYS,
    { "absent", 0, false, OPT_ABSENT },
    { "present", 0, false, OPT_PRESENT },
    { "quiet", 'q', false, OPT_QUIET },
    CLI_OPTS_END,
};

static int run(int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    bool quiet = false, want_present = false;
    cli_reader_opts ro = { false, false, false };
    const char *path = NULL, *val;
    char **inputs = calloc((size_t)argc, sizeof *inputs);
    size_t ninputs = 0;
    int id;
    if (!inputs) return cli_err("out of memory");
    while ((id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: free(inputs); return CLI_EXIT_ERR;
        case OPT_HELP: free(inputs); return cli_help("filter");
        case OPT_NULL: ro.null_delim = true; break;
        case OPT_KEEP_CR: ro.keep_cr = true; break;
        case OPT_QUIET: quiet = true; break;
        case OPT_ABSENT: want_present = false; break;
        case OPT_PRESENT: want_present = true; break;
        case CLI_OPT_OPERAND:
            if (!path)
                path = val;
            else
                inputs[ninputs++] = (char *)val;
            break;
        }
    }
    if (!path) {
        free(inputs);
        return cli_err("needs a FILE (see: bloomkit filter --help)");
    }
    int rc = CLI_EXIT_OK;
    bk_filter *f = cli_open_ro(path);
    cli_reader *r = f ? cli_reader_open(inputs, ninputs, &ro) : NULL;
    cli_out out;
    if (!r || !cli_out_init(&out, 1, (size_t)1 << 20)) {
        cli_reader_close(r);
        bk_filter_free(f);
        free(inputs);
        return CLI_EXIT_ERR;
    }
    const uint8_t want = want_present ? 1 : 0;
    const uint8_t delim = ro.null_delim ? '\0' : '\n';
    const uint64_t seed = bk_filter_seed(f);
    uint64_t h[CLI_BATCH], lines = 0;
    uint8_t res[CLI_BATCH];
    cli_progress prog;
    cli_progress_start(&prog, quiet, "filter", cli_reader_total_bytes(r));
    cli_batch b;
    int more;
    while ((more = cli_reader_next(r, &b)) > 0) {
        cli_hash_batch(&b, seed, h);
        bk_filter_contains_hashes(f, h, b.n, res);
        for (size_t i = 0; i < b.n; i++)
            if (res[i] == want) cli_out_put(&out, b.keys[i], b.raw_lens[i]);
        if (b.last_unterminated && res[b.n - 1] == want) cli_out_put(&out, &delim, 1);
        if (out.failed) break;
        lines += b.n;
        cli_progress_update(&prog, cli_reader_bytes_done(r), lines);
    }
    cli_progress_end(&prog);
    if (more < 0) rc = CLI_EXIT_ERR;
    if (!cli_out_flush(&out)) rc = CLI_EXIT_ERR;
    cli_out_free(&out);
    cli_reader_close(r);
    bk_filter_free(f);
    free(inputs);
    return rc;
}

const cli_command cli_cmd_filter = { "filter", run, "FILE [--absent|--present]",
                                     "copy stdin lines: only the absent (default) or present", help };
