/*
 * bloomkit build: a filter sized for the real number of distinct keys of its input, and filled.
 *
 * One read of the input (it may be a pipe): each key is hashed once with the filter's seed; the hash
 * goes into a HyperLogLog sketch (64 KiB) that estimates the number of distinct keys, and into a
 * spool of 8 bytes per key. Then the filter is created for that estimate and filled from the spool
 * (the bytes form of every insert equals the pre-hashed form on these hashes, so the keys are not
 * needed again). The spool stays in memory up to 8 MiB (1,048,576 keys) and beyond that goes to an
 * unlinked temporary file next to the output (or in $TMPDIR), read back in 8 MiB chunks: peak
 * memory is the filter plus about 4 MiB of read buffer, 8 MiB of spool buffer and 64 KiB of sketch.
 *
 * Fuse filters are built from the whole key set at once: the spooled hashes are mapped (or, when
 * they fit, used from memory) and handed to the fuse constructor, whose own memory is linear in the
 * number of keys (see fuse.h); so a fuse build needs 8 bytes per input key on top of that.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit build FILE [INPUT...] [-p P] [--type T] [-n N] [--seed S] [type options]\n"
    "                      [--null] [--keep-cr] [-q]\n"
    "\n"
    "Builds a filter from the keys of the INPUT files (or standard input; \"-\" also means standard\n"
    "input), sized for the number of DISTINCT keys they hold, and saves it to FILE atomically\n"
    "(an existing FILE is replaced). This is the only way to make a fuse filter.\n"
    "\n"
    "The input is read once, in large blocks, and may be a pipe. Each key is hashed once; the hashes\n"
    "feed a distinct-count sketch (HyperLogLog, 64 KiB, standard error 0.41%) and are spooled, 8 bytes\n"
    "per key, in memory up to 8 MiB and beyond that in an unlinked temporary file next to FILE (or in\n"
    "$TMPDIR). The filter is then created for the estimated distinct count plus a 3-sigma margin\n"
    "(+1.2%) and filled from the spool. Duplicate keys: bloom, partitioned and blocked filters\n"
    "record the estimated number of distinct keys (from the fill) as their count; counting and\n"
    "cuckoo filters count every occurrence (a key listed twice is added twice). Peak memory: the\n"
    "filter plus about 12 MiB. Temporary disk: 8 bytes per input key. Fuse filters take the whole spool at once (8 bytes per key in memory,\n"
    "mapped from the temporary file) plus their construction memory.\n"
    "\n"
    "Options:\n"
    "  -p, --fpr P        target false-positive rate (default 1%): 0.01, 1%, 1e-3, 1/1000\n"
    "  -t, --type T       bloom (default), partitioned, blocked, counting, scalable, cuckoo, fuse\n"
    "  -n, --keys N       size for N keys instead of the estimated distinct count (room to grow)\n"
    "      --seed S       hash seed (default 0)\n"
    "  type options       as for create (--counter-bits, --growth, --ratio, --fingerprint-bits, ...)\n"
    "  -0, --null         NUL-delimited keys\n"
    "      --keep-cr      a trailing \\r is part of the key\n"
    "  -q, --quiet        no progress bar and no summary\n"
    "  -h, --help         this help\n"
    "\n"
    "A summary (keys read, distinct estimate, size, bits per key, keys per second) goes to stderr.\n"
    "\n"
    "Example: bloomkit build urls.bf urls.txt -p 0.1%\n";

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    CLI_OPTS_KEYS,
    { "keys", 'n', true, OPT_N },
    { "fpr", 'p', true, OPT_P },
    { "quiet", 'q', false, OPT_QUIET },
    CLI_OPTS_TYPE,
    CLI_OPTS_END,
};

/* ---- the hash spool ---- */

#define SPOOL_MEM ((size_t)1 << 20) /* hashes kept in memory (8 MiB) before spilling to a file */

typedef struct spool {
    uint64_t *buf;
    size_t n;      /* hashes in buf */
    int fd;        /* -1 until the first spill */
    uint64_t total;
    char dir[PATH_MAX];
    void *map;
    size_t map_len;
} spool;

static bool spool_init(spool *s, const char *out_path)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->buf = malloc(SPOOL_MEM * sizeof *s->buf);
    if (!s->buf) return cli_err("out of memory"), false;
    const char *slash = strrchr(out_path, '/');
    if (!slash)
        snprintf(s->dir, sizeof s->dir, ".");
    else if (slash == out_path)
        snprintf(s->dir, sizeof s->dir, "/");
    else
        snprintf(s->dir, sizeof s->dir, "%.*s", (int)(slash - out_path), out_path);
    return true;
}

static int open_temp(const char *dir)
{
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
#endif
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/.bloomkit-build.XXXXXX", dir);
    int t = mkstemp(path);
    if (t >= 0) unlink(path);
    return t;
}

static bool write_all(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += w;
        len -= (size_t)w;
    }
    return true;
}

static bool spool_spill(spool *s)
{
    if (s->fd < 0) {
        s->fd = open_temp(s->dir);
        if (s->fd < 0) {
            const char *tmp = getenv("TMPDIR");
            s->fd = open_temp(tmp && *tmp ? tmp : "/tmp");
        }
        if (s->fd < 0) return cli_err_errno(s->dir, "cannot create the temporary spool file"), false;
    }
    if (!write_all(s->fd, s->buf, s->n * sizeof *s->buf))
        return cli_err_errno(s->dir, "writing the temporary spool file failed"), false;
    s->n = 0;
    return true;
}

static bool spool_put(spool *s, const uint64_t *h, size_t n)
{
    while (n) {
        size_t room = SPOOL_MEM - s->n, c = n < room ? n : room;
        memcpy(s->buf + s->n, h, c * sizeof *h);
        s->n += c;
        s->total += c;
        h += c;
        n -= c;
        if (s->n == SPOOL_MEM && !spool_spill(s)) return false;
    }
    return true;
}

/* After the last put: everything in the file (if there is one), ready to read from the start. */
static bool spool_finish(spool *s)
{
    if (s->fd < 0) return true;
    if (s->n && !spool_spill(s)) return false;
    if (lseek(s->fd, 0, SEEK_SET) != 0) return cli_err_errno(s->dir, "temporary spool file"), false;
    return true;
}

/* Next chunk of hashes in order: 1, 0 at the end, -1 on error. */
static int spool_next(spool *s, const uint64_t **h, size_t *n, bool *first)
{
    if (s->fd < 0) {
        if (!*first || s->n == 0) return 0;
        *first = false;
        *h = s->buf;
        *n = s->n;
        return 1;
    }
    *first = false;
    size_t want = SPOOL_MEM * sizeof *s->buf, got = 0;
    uint8_t *dst = (uint8_t *)s->buf;
    while (got < want) {
        ssize_t r = read(s->fd, dst + got, want - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            cli_err_errno(s->dir, "reading the temporary spool file failed");
            return -1;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    if (got % sizeof *s->buf) {
        cli_err("%s: the temporary spool file is short", s->dir);
        return -1;
    }
    *h = s->buf;
    *n = got / sizeof *s->buf;
    return *n > 0;
}

/* Every hash at once (fuse). */
static bool spool_all(spool *s, const uint64_t **h, size_t *n)
{
    *n = (size_t)s->total;
    if (s->fd < 0) {
        *h = s->buf;
        return true;
    }
    s->map_len = (size_t)s->total * sizeof(uint64_t);
    s->map = mmap(NULL, s->map_len, PROT_READ, MAP_PRIVATE, s->fd, 0);
    if (s->map == MAP_FAILED) {
        s->map = NULL;
        return cli_err_errno(s->dir, "cannot map the temporary spool file"), false;
    }
    *h = s->map;
    return true;
}

static void spool_free(spool *s)
{
    if (s->map) munmap(s->map, s->map_len);
    if (s->fd >= 0) close(s->fd);
    free(s->buf);
}

/* ---- the command ---- */

static int run(int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    uint64_t n_override = 0;
    double p = 0.01;
    bool quiet = false;
    cli_reader_opts ro = { false, false };
    const cli_type *t = &cli_types[0];
    const char *path = NULL, *val;
    char **inputs = calloc((size_t)argc, sizeof *inputs);
    size_t ninputs = 0;
    cli_type_opts to;
    memset(&to, 0, sizeof to);
    unsigned given = 0;
    int id;
    if (!inputs) return cli_err("out of memory");
    while ((id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: free(inputs); return CLI_EXIT_ERR;
        case OPT_HELP: free(inputs); return cli_help("build");
        case OPT_NULL: ro.null_delim = true; break;
        case OPT_KEEP_CR: ro.keep_cr = true; break;
        case OPT_QUIET: quiet = true; break;
        case OPT_N:
            if (!cli_parse_count("-n", val, 1, UINT64_MAX, &n_override)) return free(inputs), CLI_EXIT_ERR;
            break;
        case OPT_P:
            if (!cli_parse_prob("-p", val, &p)) return free(inputs), CLI_EXIT_ERR;
            break;
        case OPT_TYPE:
            if (!(t = cli_type_find(val))) return free(inputs), CLI_EXIT_ERR;
            break;
        case CLI_OPT_OPERAND:
            if (!path)
                path = val;
            else
                inputs[ninputs++] = (char *)val;
            break;
        default:
            if (cli_type_option(id, val, &to, &given) < 0) return free(inputs), CLI_EXIT_ERR;
        }
    }
    if (!path) {
        free(inputs);
        return cli_err("needs a FILE to build (see: bloomkit build --help)");
    }
    if (!cli_type_check_opts(t, given)) return free(inputs), CLI_EXIT_ERR;

    int rc = CLI_EXIT_ERR;
    double t0 = cli_now();
    cli_reader *r = cli_reader_open(inputs, ninputs, &ro);
    spool sp;
    cli_hll *hll = malloc(sizeof *hll);
    bk_filter *f = NULL;
    if (!r || !hll || !spool_init(&sp, path)) {
        if (!hll) cli_err("out of memory");
        cli_reader_close(r);
        free(hll);
        free(inputs);
        return CLI_EXIT_ERR;
    }
    cli_hll_init(hll);

    /* pass 1: read, hash, count, spool */
    uint64_t h[CLI_BATCH], lines = 0;
    cli_progress prog;
    cli_progress_start(&prog, quiet, "read  ", cli_reader_total_bytes(r));
    cli_batch b;
    int more;
    while ((more = cli_reader_next(r, &b)) > 0) {
        cli_hash_batch(&b, to.seed, h);
        cli_hll_add(hll, h, b.n);
        if (!spool_put(&sp, h, b.n)) goto out;
        lines += b.n;
        cli_progress_update(&prog, cli_reader_bytes_done(r), lines);
    }
    cli_progress_end(&prog);
    if (more < 0 || !spool_finish(&sp)) goto out;
    double est = cli_hll_estimate(hll);
    uint64_t cap = n_override;
    if (!cap) {
        double c = ceil(est * (1.0 + 3.0 * cli_hll_stderr()));
        cap = c < 1 ? 1 : (uint64_t)c;
        if (cap > lines && lines > 0) cap = lines; /* never more distinct keys than keys */
    }

    /* pass 2: the filter */
    char b1[32], b2[32], b3[32];
    bk_status s;
    if (t->build_static) {
        const uint64_t *all;
        size_t nall;
        if (!spool_all(&sp, &all, &nall)) goto out;
        s = t->build_static(all, nall, p, &to, &f);
    } else {
        s = t->create(cap, p, &to, &f);
        if (s == BK_OK) {
            cli_progress_start(&prog, quiet, "insert", lines);
            const uint64_t *chunk;
            size_t n, done = 0;
            bool first = true;
            int nx;
            while ((nx = spool_next(&sp, &chunk, &n, &first)) > 0) {
                if ((s = bk_filter_add_hashes(f, chunk, n)) != BK_OK) break;
                done += n;
                cli_progress_update(&prog, done, done);
            }
            cli_progress_end(&prog);
            if (nx < 0) goto out;
            /* Bit-setting types count every add, duplicates included. A union sets the count to the
             * fill-based estimate of distinct keys; the union of a filter with itself changes no bit,
             * so this gives the count that info's saturation check needs, for one pass over the
             * array (cheaper than testing every key before adding it). */
            if (s == BK_OK && t->sets_bits) (void)bk_filter_merge(f, f);
        }
    }
    if (s != BK_OK) {
        cli_err("%s: cannot build a %s filter for %s keys at p = %g: %s (nothing was written)", path, t->name,
                cli_group(cap, b1, sizeof b1), p, cli_status_words(s));
        goto out;
    }
    if (!cli_save_locked(f, path)) goto out;
    rc = CLI_EXIT_OK;
    if (!quiet) {
        double el = cli_now() - t0;
        cli_describe(stderr, "built", path, f);
        fprintf(stderr, "bloomkit: read %s keys (about %s distinct, estimated) in %.2f s, %s keys/s\n",
                cli_group(lines, b1, sizeof b1), cli_group((uint64_t)(est + 0.5), b2, sizeof b2), el,
                cli_human_count(el > 0 ? (double)lines / el : 0, b3, sizeof b3));
    }
out:
    bk_filter_free(f);
    spool_free(&sp);
    cli_reader_close(r);
    free(hll);
    free(inputs);
    return rc;
}

const cli_command cli_cmd_build = { "build", run,
                                    "FILE [-p P] [--type T] [INPUT...]  a filter sized for and filled with the input's keys",
                                    help };
