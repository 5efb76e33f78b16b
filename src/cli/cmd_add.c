/*
 * bloomkit add: insert keys into an existing filter file, safely alongside other writers.
 *
 * Two ways, chosen by the filter's type:
 * - in place: types with atomic inserts (the bit-array filters) are opened as a shared writable
 *   mapping and updated with atomic 64-bit ORs, so any number of `bloomkit add` processes (and
 *   threads of other programs using the same file) insert together and none loses another's keys;
 * - load, modify, save: the other types are loaded into memory under an exclusive lock on the file,
 *   modified, and saved atomically (temp + fsync + rename) before the lock is released, so
 *   concurrent writers take turns, each starting from the previous one's result.
 * See files.c for the locking protocol that makes the two work together with replacing commands.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit add FILE [KEY...] [--null] [--keep-cr] [--strict] [-q]\n"
    "\n"
    "Adds the KEY arguments, or else the keys read from standard input (one per line), to the filter\n"
    "in FILE. Use -- before keys that start with '-'. For filters that only set bits (bloom,\n"
    "partitioned, blocked) a key that is already present -- a duplicate, or a false positive -- is\n"
    "not added again, so the filter's count stays the number of distinct keys; counting and cuckoo\n"
    "filters count every occurrence (a key added twice needs two removes).\n"
    "\n"
    "Concurrent writers are safe: several `bloomkit add` processes may add to the same file at the\n"
    "same time and every key of every process is in the filter afterwards. Filters with atomic\n"
    "inserts (bloom, partitioned, blocked, counting) are updated in place through a shared writable\n"
    "mapping; the others are loaded, changed and saved atomically under an exclusive lock (flock) of\n"
    "the file, so writers take turns. Locks are advisory: use a local file system.\n"
    "\n"
    "If add fails part-way (an unreadable input, a cuckoo filter that fills up): an in-place update\n"
    "keeps the keys added before the failure; a load-change-save update saves nothing. Either way the\n"
    "file is never left damaged.\n"
    "\n"
    "When an add takes the filter past its capacity (info's \"saturated\": count past capacity, or\n"
    "fill past the fill expected at capacity), a warning on stderr says so and gives the FPR now;\n"
    "the exit status stays 0 unless --strict. On btrfs (copy-on-write) and where the file system\n"
    "cannot reserve the file's blocks, the in-place types are loaded, changed and saved instead.\n"
    "Through a symbolic link, the file it points to is changed and the link is kept.\n"
    "\n"
    "Options:\n"
    "  -0, --null      read NUL-delimited keys\n"
    "      --keep-cr   a trailing \\r is part of the key\n"
    "      --strict    crossing the capacity is an error (exit 2; the keys are added all the same)\n"
    "  -q, --quiet     no progress bar (it is shown only when stderr is a terminal)\n"
    "  -h, --help      this help\n";

/* Adds the keys (arguments, else the reader's); returns BK_OK or the first error. *read_failed is set
 * when the input could not be read (message printed). */
static bk_status add_keys(bk_filter *f, char **keys, size_t nkeys, const cli_reader_opts *ro, bool quiet,
                          bool *read_failed)
{
    *read_failed = false;
    const cli_type *t = cli_type_of(f);
    uint64_t seed = bk_filter_seed(f), h[CLI_BATCH], n = 0;
    if (nkeys) {
        for (size_t i = 0; i < nkeys; i += CLI_BATCH) {
            size_t c = nkeys - i < CLI_BATCH ? nkeys - i : CLI_BATCH;
            for (size_t j = 0; j < c; j++) h[j] = bk_hash64(keys[i + j], strlen(keys[i + j]), seed);
            bk_status s = cli_add_hashes(f, t, h, c);
            if (s != BK_OK) return s;
        }
        return BK_OK;
    }
    cli_reader *r = cli_reader_open(NULL, 0, ro);
    if (!r) {
        *read_failed = true;
        return BK_OK;
    }
    cli_progress prog;
    cli_progress_start(&prog, quiet, "add", cli_reader_total_bytes(r));
    cli_batch b;
    int more;
    bk_status s = BK_OK;
    while ((more = cli_reader_next(r, &b)) > 0) {
        cli_hash_batch(&b, seed, h);
        if ((s = cli_add_hashes(f, t, h, b.n)) != BK_OK) break;
        n += b.n;
        cli_progress_update(&prog, cli_reader_bytes_done(r), n);
    }
    cli_progress_end(&prog);
    if (more < 0) *read_failed = true;
    cli_reader_close(r);
    return s;
}

static int add_error(const char *path, const bk_filter *f, bk_status s, bool saved_nothing)
{
    const char *after = saved_nothing ? "nothing was saved" : "the keys before it were added";
    char advice[CLI_PATH_ADVICE];
    if (s == BK_EFULL)
        return cli_err("%s: the filter is full (%s); %s", path, after,
                       cli_full_advice(f, path, advice, sizeof advice));
    return cli_err("%s: add failed: %s (%s)", path, cli_status_words(s), after);
}

/* The capacity check after an add: a warning when the add took the filter past its capacity (or added
 * to one already past it); with strict, an error. Returns the exit status. */
static int check_capacity(const char *path, const bk_stats *before, const bk_filter *f, bool strict)
{
    bk_stats st;
    if (bk_filter_stats(f, &st) != BK_OK || !st.saturated) return CLI_EXIT_OK;
    if (before->saturated && st.count == before->count) return CLI_EXIT_OK; /* nothing new went in */
    cli_capacity_warning(path, before, &st, strict);
    return strict ? CLI_EXIT_ERR : CLI_EXIT_OK;
}

static int run(int argc, char **argv)
{
    cli_file_keys a; /* a.keys is freed here */
    int done = cli_parse_file_keys(argc, argv, "add", &a);
    if (done >= 0) return done;
    int rc = CLI_EXIT_OK;
    bool read_failed;
    bk_status s;

    /* In place: hold a shared lock while the mapping is opened (the library then holds its own). */
    cli_lock l;
    if (!cli_lock_path(a.path, LOCK_SH, &l, NULL)) {
        free(a.keys);
        return CLI_EXIT_ERR;
    }
    bk_filter *f = NULL;
    errno = 0;
    cli_mapguard_file(a.path);
    s = bk_filter_open_mmap(a.path, BK_OPEN_WRITE_SHARED, &f);
    cli_unlock(&l);
    bk_stats before;
    if (s == BK_OK) {
        if (bk_filter_stats(f, &before) != BK_OK) memset(&before, 0, sizeof before);
        s = add_keys(f, a.keys, a.nkeys, &a.ro, a.quiet, &read_failed);
        if (s == BK_OK && !read_failed) rc = check_capacity(a.path, &before, f, a.strict);
        bk_status c = bk_filter_close(f);
        if (s != BK_OK)
            rc = add_error(a.path, NULL, s, false); /* f is closed; in-place types never grow */
        else if (read_failed)
            rc = cli_err("%s: the keys read before the error were added", a.path);
        else if (c != BK_OK)
            rc = cli_close_error(a.path, c);
        free(a.keys);
        return rc;
    }
    if (s == BK_EIO && (errno == ENOSPC || errno == EDQUOT)) {
        /* the blocks of the file could not be reserved for the in-place update */
        free(a.keys);
        return cli_err("%s: cannot add in place: %s (the file is unchanged)", a.path, strerror(errno));
    }
    if (s != BK_ENOTSUP) {
        free(a.keys);
        return cli_file_error(a.path, s);
    }

    /* Load, modify, save, under an exclusive lock held until the new file is in place. */
    if (!cli_lock_path(a.path, LOCK_EX, &l, NULL)) {
        free(a.keys);
        return CLI_EXIT_ERR;
    }
    f = cli_load_locked(&l, a.path);
    if (!f) {
        rc = CLI_EXIT_ERR;
    } else {
        const cli_type *t = cli_type_of(f);
        if (t && t->is_static) {
            rc = cli_err("%s: %s filters cannot take new keys; rebuild it with bloomkit build", a.path, t->name);
        } else {
            if (bk_filter_stats(f, &before) != BK_OK) memset(&before, 0, sizeof before);
            s = add_keys(f, a.keys, a.nkeys, &a.ro, a.quiet, &read_failed);
            if (s != BK_OK)
                rc = add_error(a.path, f, s, true);
            else if (read_failed)
                rc = cli_err("%s: nothing was saved", a.path);
            else if (!cli_save(f, a.path))
                rc = CLI_EXIT_ERR;
            else
                rc = check_capacity(a.path, &before, f, a.strict);
        }
        bk_filter_free(f);
    }
    cli_unlock(&l);
    free(a.keys);
    return rc;
}

const cli_command cli_cmd_add = { "add", run, "FILE [KEY...]",
                                  "add keys (arguments, else stdin lines)", help };
