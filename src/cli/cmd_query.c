/* bloomkit query: is each key (probably) in the filter? */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit query FILE [KEY...] [--null] [--keep-cr] [-q]\n"
    "\n"
    "Prints each key followed by a tab and \"present\" (probably in the set: false positives happen at\n"
    "the filter's rate) or \"absent\" (certainly not in the set). Keys are the arguments, or else one\n"
    "per line from standard input. The file is opened by mmap (no copy) and validated first.\n"
    "Use -- before keys that start with '-'.\n"
    "\n"
    "Options:\n"
    "  -0, --null      read NUL-delimited keys, and end each output record with NUL instead of newline\n"
    "      --keep-cr   keep a trailing \\r on input lines\n"
    "  -q, --quiet     print nothing; only the exit status answers\n"
    "  -c, --column C  FILE is a Parquet file: query column C's Bloom filters (see: bloomkit parquet --help)\n"
    "  -h, --help      this help\n"
    "\n"
    "Exit status: 0 every key present; 1 some key absent; 2 an error (missing or damaged file, ...).\n"
    "\n";

static void print_result(cli_out *o, const void *key, size_t len, bool present, char end)
{
    static const char p[] = "\tpresent", a[] = "\tabsent";
    cli_out_put(o, key, len);
    if (present)
        cli_out_put(o, p, sizeof p - 1);
    else
        cli_out_put(o, a, sizeof a - 1);
    cli_out_put(o, &end, 1);
}

static int run(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--column") == 0 || strncmp(argv[i], "--column=", 9) == 0 || strcmp(argv[i], "-c") == 0)
            return cli_parquet_action("query", argc, argv); /* a Parquet file's column filters */
    cli_file_keys a; /* a.keys is freed here */
    int done = cli_parse_file_keys(argc, argv, "query", &a);
    if (done >= 0) return done;
    bk_filter *f = cli_open_ro(a.path);
    if (!f) {
        free(a.keys);
        return CLI_EXIT_ERR;
    }
    char end = a.ro.null_delim ? '\0' : '\n';
    cli_out out;
    if (!cli_out_init(&out, 1, (size_t)1 << 20)) {
        bk_filter_free(f);
        free(a.keys);
        return CLI_EXIT_ERR;
    }
    cli_mapguard_output(&out);
    uint64_t absent = 0;
    int rc = CLI_EXIT_OK;
    if (a.nkeys) {
        for (size_t i = 0; i < a.nkeys; i++) {
            bool present = bk_filter_contains(f, a.keys[i], strlen(a.keys[i]));
            absent += !present;
            if (!a.quiet) print_result(&out, a.keys[i], strlen(a.keys[i]), present, end);
        }
    } else {
        cli_reader *r = cli_reader_open(NULL, 0, &a.ro);
        if (!r) {
            rc = CLI_EXIT_ERR;
        } else {
            uint64_t seed = bk_filter_seed(f), h[CLI_BATCH];
            uint8_t res[CLI_BATCH];
            cli_batch b;
            int more;
            while ((more = cli_reader_next(r, &b)) > 0) {
                cli_hash_batch(&b, seed, h);
                size_t hits = 0;
                bk_filter_contains_hashes(f, h, b.n, res, &hits);
                absent += b.n - hits;
                if (!a.quiet)
                    for (size_t i = 0; i < b.n; i++) print_result(&out, b.keys[i], b.lens[i], res[i], end);
            }
            if (more < 0) rc = CLI_EXIT_ERR;
            cli_reader_close(r);
        }
    }
    if (!cli_out_flush(&out)) rc = CLI_EXIT_ERR;
    cli_mapguard_output(NULL);
    cli_out_free(&out);
    bk_filter_free(f);
    free(a.keys);
    if (rc == CLI_EXIT_OK && absent) rc = CLI_EXIT_NO;
    return rc;
}

const cli_command cli_cmd_query = { "query", run, "FILE [KEY...]",
                                    "print each key with present/absent (exit 1: some absent)", help };
