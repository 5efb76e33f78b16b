/* bloomkit remove: delete keys from a counting, cuckoo or quotient filter (load, change, save under an
 * exclusive lock, like add for types without in-place inserts). */
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit remove FILE [KEY...] [--null] [--keep-cr] [-q]\n"
    "\n"
    "Removes one occurrence of each KEY (or of each key read from standard input) from a counting,\n"
    "cuckoo or quotient filter; other types cannot delete. A key that is certainly not in the filter\n"
    "is printed as \"KEY<tab>absent\" and changes nothing. The file is loaded, changed and saved\n"
    "atomically under an exclusive lock (flock), so concurrent add and remove commands take turns.\n"
    "\n"
    "Caution, as with every deleting filter: removing a key that was never added but tests present\n"
    "(a false positive) removes part of another key's evidence and can make that key absent. Only\n"
    "remove keys you know were added.\n"
    "\n"
    "Options:\n"
    "  -0, --null      read NUL-delimited keys (and print NUL-terminated records)\n"
    "      --keep-cr   a trailing \\r is part of the key\n"
    "  -q, --quiet     do not print the absent keys\n"
    "  -h, --help      this help\n"
    "\n"
    "Exit status: 0 every key removed; 1 some key was absent; 2 an error (nothing saved).\n";

static bool report_absent(cli_out *o, bool quiet, const void *key, size_t len, char end)
{
    if (quiet) return true;
    cli_out_put(o, key, len);
    cli_out_put(o, "\tabsent", 7);
    return cli_out_put(o, &end, 1);
}

static int run(int argc, char **argv)
{
    cli_file_keys a; /* a.keys is freed here */
    int done = cli_parse_file_keys(argc, argv, "remove", &a);
    if (done >= 0) return done;
    cli_lock l;
    if (!cli_lock_path(a.path, LOCK_EX, &l, NULL)) {
        free(a.keys);
        return CLI_EXIT_ERR;
    }
    int rc = CLI_EXIT_OK;
    bk_filter *f = cli_load_locked(&l, a.path);
    cli_out out;
    if (!f || !cli_out_init(&out, 1, (size_t)1 << 16)) {
        bk_filter_free(f);
        cli_unlock(&l);
        free(a.keys);
        return CLI_EXIT_ERR;
    }
    const cli_type *t = cli_type_of(f);
    char end = a.ro.null_delim ? '\0' : '\n';
    uint64_t absent = 0, removed = 0;
    bk_status s = BK_OK;
    if (!t || !t->can_remove) {
        rc = cli_err("%s: %s filters cannot remove keys (only counting, cuckoo and quotient filters can)", a.path,
                     t ? t->name : "this");
        goto done;
    }
    if (a.nkeys) {
        for (size_t i = 0; i < a.nkeys && s == BK_OK; i++) {
            s = bk_filter_remove(f, a.keys[i], strlen(a.keys[i]));
            removed += s == BK_OK;
            if (s == BK_ENOTFOUND) {
                absent++;
                s = BK_OK;
                report_absent(&out, a.quiet, a.keys[i], strlen(a.keys[i]), end);
            }
        }
    } else {
        cli_reader *r = cli_reader_open(NULL, 0, &a.ro);
        if (!r) {
            rc = CLI_EXIT_ERR;
            goto done;
        }
        uint64_t seed = bk_filter_seed(f), h[CLI_BATCH];
        cli_batch b;
        int more = 0;
        while (s == BK_OK && (more = cli_reader_next(r, &b)) > 0) {
            cli_hash_batch(&b, seed, h);
            for (size_t i = 0; i < b.n && s == BK_OK; i++) {
                s = bk_filter_remove_hash(f, h[i]);
                removed += s == BK_OK;
                if (s == BK_ENOTFOUND) {
                    absent++;
                    s = BK_OK;
                    report_absent(&out, a.quiet, b.keys[i], b.lens[i], end);
                }
            }
        }
        cli_reader_close(r);
        if (more < 0) {
            rc = cli_err("%s: nothing was saved", a.path);
            goto done;
        }
    }
    if (s != BK_OK) {
        rc = cli_err("%s: remove failed: %s (nothing was saved)", a.path, cli_status_words(s));
        goto done;
    }
    if (removed && !cli_save(f, a.path)) rc = CLI_EXIT_ERR;
done:
    if (!cli_out_flush(&out) && rc == CLI_EXIT_OK) rc = CLI_EXIT_ERR;
    cli_out_free(&out);
    bk_filter_free(f);
    cli_unlock(&l);
    free(a.keys);
    if (rc == CLI_EXIT_OK && absent) rc = CLI_EXIT_NO;
    return rc;
}

const cli_command cli_cmd_remove = { "remove", run, "FILE [KEY...]",
                                     "remove keys (counting, cuckoo, quotient filters)", help };
