/*
 * bloomkit build: a filter sized for the real number of distinct keys of its input, and filled.
 *
 * One read of the input (it may be a pipe): each key is hashed once with the filter's seed; the hash
 * goes into a HyperLogLog sketch (64 KiB) that estimates the number of distinct keys, and into the
 * spool (spool.c: 8 bytes per key, in memory up to 64 MiB (at most 1/8 of the RAM), the rest in an
 * unlinked temporary file), or, when -n sizes a bit-setting filter (bloom, partitioned, blocked)
 * before the read, straight into that filter (no spool: the bits do not depend on the order of the
 * inserts). Otherwise the filter is created for that estimate and filled from the spool,
 * partition by partition in hash order (the bytes form of every insert equals the pre-hashed form on
 * these hashes, so the keys are not needed again). Large regular-file inputs are read and hashed on
 * one thread per usable CPU (cli_reader_hash_all), and blocked filters and classic filters larger than
 * 64 MiB are filled on one thread per usable CPU (below; usable: in the process's affinity mask): both
 * give exactly the file of a single thread. Peak memory: the filter, the spool, up to 33 MiB (mostly
 * untouched) and a 64 KiB sketch per reading thread, and for counting and cuckoo filters one spool
 * partition at a time (sorted to drop duplicates: about 16 bytes x keys / 256).
 *
 * Fuse and Ribbon filters are built from the whole key set at once: the spooled hashes are gathered
 * into one array and handed to the type's constructor, whose own memory is linear in the number of
 * keys (see fuse.h, ribbon.h); so such a build needs 8 bytes per input key on top of that.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
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
    "(an existing filter FILE is replaced; FILE may not be one of the inputs, nor, without --force,\n"
    "an existing file that is not a filter). This is the only way to make a fuse or Ribbon filter.\n"
    "\n"
    "The input is read once, in large blocks, and may be a pipe. Each key is hashed once; the hashes\n"
    "feed a distinct-count sketch (HyperLogLog, 64 KiB, standard error 0.41%) and are spooled, 8 bytes\n"
    "per key, in memory up to 64 MiB (and 1/8 of the RAM) and beyond that in an unlinked temporary\n"
    "file next to FILE (or in $TMPDIR). The filter is then created for the estimated distinct count\n"
    "plus a 3-sigma margin (+1.2%; never more than the keys read) and filled from the spool. With -n,\n"
    "bloom, partitioned and blocked filters are made first and filled as the keys are read, with no\n"
    "spool (their bits do not depend on the order the keys come in). Large\n"
    "regular files are read and hashed, and blocked filters (and bloom and partitioned filters over\n"
    "64 MiB) are filled, on one thread per CPU the command may run on (taskset limits them): the file\n"
    "is the same as with one thread.\n"
    "\n"
    "Duplicate keys make no difference: the filter holds the set of keys. Bloom, partitioned and\n"
    "blocked filters record the sketch's estimate of distinct keys (at most the keys read) as their count;\n"
    "counting, cuckoo and scalable filters get each distinct key once, exact duplicates being\n"
    "dropped before they are added; fuse and Ribbon filters drop them themselves.\n"
    "\n"
    "Memory: the filter, the spool (8 bytes per key up to the bound above; none for a bloom,\n"
    "partitioned or blocked filter given -n), up to 33 MiB per reading\n"
    "thread (about 1.5 MiB used unless the keys are very short); counting and cuckoo builds also sort\n"
    "one 256th of the keys at a time (16 bytes each).\n"
    "Temporary disk: 8 bytes per key beyond the bound.\n"
    "Fuse and Ribbon filters take every hash at once (8 bytes per key, in memory) plus their construction\n"
    "memory (about 24 bytes per key for fuse, 37 for Ribbon: fuse.h, ribbon.h).\n"
    "\n"
    "Options:\n"
    "  -p, --fpr P        target false-positive rate (default 1%): 0.01, 1%, 1e-3, 1/1000\n"
    "  -t, --type T       bloom (default), partitioned, blocked, counting, scalable, cuckoo, fuse,\n"
    "                     ribbon\n"
    "  -n, --keys N       size for N keys instead of the estimated distinct count (room to grow)\n"
    "      --seed S       hash seed (default 0)\n"
    "  type options       as for create (--counter-bits, --growth, --ratio, --fingerprint-bits, ...)\n"
    "  -0, --null         NUL-delimited keys\n"
    "      --keep-cr      a trailing \\r is part of the key\n"
    "  -f, --force        replace FILE even if it is not a bloomkit filter\n"
    "  -q, --quiet        no progress bar and no summary\n"
    "  -h, --help         this help\n"
    "\n"
    "A summary (keys read, distinct count, size, bits per key, keys per second) goes to stderr.\n"
    "\n"
    "Example: bloomkit build urls.bf urls.txt -p 0.1%\n";

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    CLI_OPTS_KEYS,
    { "keys", 'n', true, OPT_N },
    { "fpr", 'p', true, OPT_P },
    { "quiet", 'q', false, OPT_QUIET },
    { "force", 'f', false, OPT_FORCE },
    CLI_OPTS_TYPE,
    CLI_OPTS_END,
};

/* ---- the fill of classic and blocked filters on several threads ----
 *
 * Two ways, both without atomics on the filter and both giving exactly the bits of a single-threaded
 * fill:
 * - blocked filters: each thread takes the spool partitions of one range of hashes (the spool is in
 *   hash order, and a key's block is range(h, B) = (h * B) >> 64, FORMAT.md 6.2, which grows with h),
 *   so it reads only its own runs and sets bits only in its own range of blocks, which starts at an
 *   even block (two 256-bit blocks share a cache line). The few hashes of its first partition whose
 *   block lies below that (a block the previous thread's range may also reach) are kept aside and
 *   added after the threads have joined;
 * - classic filters larger than FILL_ONE_MAX: the bit array is cut into one range per thread (whole
 *   cache lines); every thread reads all the hashes and sets only the bits in its own range (the
 *   library's *_add_hashes_part), so no two threads write the same memory. Each thread computes every
 *   probe; only the memory traffic is divided.
 * A classic filter up to FILL_ONE_MAX is filled on one thread (by ranges only when BLOOMKIT_THREADS
 * asks for more: tests, benchmarks): the other ways cost more CPU time than they save in wall time
 * there. Private copies of the filter, one per thread, OR-ed into it at the end, took about 11% more
 * CPU time for the whole build of 10M URL lines (12 MiB filter) than one thread (the copies' fresh
 * memory, their union, and two copies sharing the last-level cache), and the ranges about 20% more. */

typedef struct fill_job {
    struct bk_bloom *bloom; /* one of these two */
    struct bk_blocked *blocked;
    const cli_spool_run *runs;
    size_t nruns;
    unsigned part, nparts;  /* the range of the filter (1 of 1: the whole) */
    cli_progress *prog;     /* the caller's thread shows the progress */
    size_t scale;           /* its share of the hashes is about 1 / scale of them */
    cli_spool *sp;
    bool failed;            /* a run could not be read from the spool's file (message printed) */
    /* blocked filters by spool partition (owned): */
    bool owned;
    uint64_t blocks;        /* B */
    uint64_t own_lo;        /* the first block of the thread's range (it ends where the next begins) */
    unsigned spool_parts;
    uint64_t *aside;        /* hashes whose block is below own_lo, added after the join */
    size_t naside, aside_cap;
} fill_job;

__extension__ typedef unsigned __int128 u128; /* (the library's range() takes it too) */
static uint64_t block_of(uint64_t h, uint64_t blocks) { return (uint64_t)(((u128)h * blocks) >> 64); }

/* Blocked, owned: the run's hashes whose block is in the thread's range go to the filter, the others
 * aside (only in a partition that starts below the range). */
static bool fill_owned(fill_job *j, const cli_spool_run *run, const uint64_t *h)
{
    /* the lowest block a hash of the partition can have: that of its lowest hash */
    const uint64_t first = run->part * j->blocks / j->spool_parts; /* (blocks < 2^36, part < 256) */
    if (first >= j->own_lo) {
        /* the first thread's range starts at block 0: it alone uses the plain batch insert, which also
         * adds to the filter's count (replaced after the fill); the others leave the count alone
         * through the ranged insert of the whole filter (one range test per hash) */
        if (j->own_lo == 0)
            bk_blocked_add_hashes(j->blocked, h, run->n);
        else
            bk_blocked_add_hashes_part(j->blocked, h, run->n, 0, 1);
        return true;
    }
    uint64_t mine[256];
    size_t c = 0;
    for (size_t i = 0; i < run->n; i++) {
        if (block_of(h[i], j->blocks) >= j->own_lo) {
            mine[c++] = h[i];
            if (c == 256) {
                bk_blocked_add_hashes_part(j->blocked, mine, c, 0, 1);
                c = 0;
            }
            continue;
        }
        if (j->naside == j->aside_cap) {
            size_t cap = j->aside_cap ? 2 * j->aside_cap : 256;
            uint64_t *a = realloc(j->aside, cap * sizeof *a);
            if (!a) return cli_err("out of memory"), false;
            j->aside = a;
            j->aside_cap = cap;
        }
        j->aside[j->naside++] = h[i];
    }
    if (c) bk_blocked_add_hashes_part(j->blocked, mine, c, 0, 1);
    return true;
}

static bool fill_run(fill_job *j, const cli_spool_run *run, uint64_t *buf)
{
    const uint64_t *h = cli_spool_run_hashes(j->sp, run, buf);
    if (!h) return false;
    if (j->owned) return fill_owned(j, run, h);
    /* the whole filter: the plain batch insert, no range test (the count it keeps is replaced) */
    if (j->bloom && j->nparts == 1)
        bk_bloom_add_hashes(j->bloom, h, run->n);
    else if (j->bloom)
        bk_bloom_add_hashes_part(j->bloom, h, run->n, j->part, j->nparts);
    else if (j->nparts == 1)
        bk_blocked_add_hashes(j->blocked, h, run->n);
    else
        bk_blocked_add_hashes_part(j->blocked, h, run->n, j->part, j->nparts);
    return true;
}

static void *fill_part(void *arg)
{
    fill_job *j = arg;
    uint64_t buf[CLI_SPOOL_RUN_MAX];
    size_t done = 0;
    for (size_t i = 0; i < j->nruns; i++) {
        if (!fill_run(j, &j->runs[i], buf)) {
            j->failed = true;
            break;
        }
        done += j->runs[i].n;
        if (j->prog) cli_progress_update(j->prog, done * j->scale, done * j->scale);
    }
    return NULL;
}

/* A classic filter of at most this many bytes is filled on one thread (above). */
#define FILL_ONE_MAX ((uint64_t)64 << 20)

#define FILL_MAX_THREADS 8

/* The CPUs this process may run on: its affinity mask (taskset, a cpuset), else the online CPUs: two
 * threads on one allowed CPU only take turns. */
static long usable_cpus(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
    return sysconf(_SC_NPROCESSORS_ONLN);
}

/* Threads for reading and for the fill of `keys` keys (0: for reading): BLOOMKIT_THREADS when set
 * (tests, benchmarks), else one per CPU the process may run on (at most FILL_MAX_THREADS), and one for
 * a fill of fewer than a million keys (the filter then fits in the caches, and starting threads costs
 * more than it saves). */
static unsigned build_threads(uint64_t keys)
{
    const char *env = getenv("BLOOMKIT_THREADS");
    long n;
    if (env && *env)
        n = strtol(env, NULL, 10);
    else
        n = keys && keys < ((uint64_t)1 << 20) ? 1 : usable_cpus();
    return n < 1 ? 1 : n > FILL_MAX_THREADS ? FILL_MAX_THREADS : (unsigned)n;
}

/* Pass 1: each worker adds its hashes to its own sketch (merged at the end: the same registers as one
 * sketch of every hash); then they go to the spool, one worker at a time. For a fuse or Ribbon build
 * (input order) the worker first groups them by spool partition and the groups are appended in input
 * order, so the spool holds every partition's hashes in input order and fills its chunks in the same
 * sequence as a single reader would; for the other types (which read the spool back by partition and
 * set bits, or sort each partition) each hash goes straight to its partition's chunk, as each worker
 * finishes a block: one pass over the hashes instead of a grouping pass and a copy. */
#define PASS1_SLOTS (CLI_READ_MAX_THREADS * CLI_READ_SLOTS)
typedef struct pass1 {
    cli_hll *hll[CLI_READ_MAX_THREADS]; /* by worker; hll[0]: the command's */
    uint64_t *grouped[PASS1_SLOTS];      /* by slot */
    size_t gcap[PASS1_SLOTS];
    uint32_t count[PASS1_SLOTS][256];
    cli_spool *sp;
    cli_reader *r;
    cli_progress *prog;
    uint64_t lines;
    bool in_order;
    bk_filter *direct;  /* sized before reading (-n, a bit-setting type): filled here, no spool */
} pass1;

static bool pass1_work(void *ctx, unsigned w, unsigned slot, const uint64_t *h, size_t n)
{
    pass1 *p = ctx;
    cli_hll_add(p->hll[w], h, n);
    if (!p->in_order) return true;
    if (n > p->gcap[slot]) {
        uint64_t *g = realloc(p->grouped[slot], n * sizeof *g);
        if (!g) return cli_err("out of memory"), false;
        p->grouped[slot] = g;
        p->gcap[slot] = n;
    }
    cli_spool_group(h, n, p->grouped[slot], p->count[slot]);
    return true;
}

static bool pass1_sink(void *ctx, unsigned w, unsigned slot, const uint64_t *h, size_t n)
{
    (void)w;
    pass1 *p = ctx;
    if (p->direct) {
        /* one worker at a time: the filter needs no atomics (a bit-setting type's add takes any hashes) */
        bk_status s = bk_filter_add_hashes(p->direct, h, n, NULL);
        if (s != BK_OK) return cli_err_status("the filter", s), false;
    } else if (!(p->in_order ? cli_spool_put_grouped(p->sp, p->grouped[slot], p->count[slot])
                             : cli_spool_put(p->sp, h, n))) {
        return false;
    }
    p->lines += n;
    cli_progress_update(p->prog, cli_reader_bytes_done(p->r), p->lines);
    return true;
}

/* Pass 1 with up to `threads` workers; false on error (message printed). The spool's runs keep input
 * order only when in_order (asked for the fuse filter, whose constructor takes all the hashes as one
 * array: its file did not depend on their order when measured, but its contract does not say so);
 * the other types read the spool back by partition and set bits, or sort each partition, so their
 * filter cannot depend on the order the blocks were sunk in. */
static bool run_pass1(pass1 *p, uint64_t seed, unsigned threads, bool in_order)
{
    if (threads > CLI_READ_MAX_THREADS) threads = CLI_READ_MAX_THREADS;
    p->in_order = in_order;
    bool ok = true;
    for (unsigned i = 1; i < threads && ok; i++) {
        if (!(p->hll[i] = malloc(sizeof *p->hll[i]))) {
            cli_err("out of memory");
            ok = false;
        } else {
            cli_hll_init(p->hll[i]);
        }
    }
    ok = ok && cli_reader_hash_all(p->r, seed, threads, in_order, pass1_work, pass1_sink, p) == 0;
    for (unsigned i = 1; i < CLI_READ_MAX_THREADS; i++) {
        if (p->hll[i]) cli_hll_merge(p->hll[0], p->hll[i]);
        free(p->hll[i]);
    }
    for (unsigned i = 0; i < PASS1_SLOTS; i++) free(p->grouped[i]);
    return ok;
}

/* Runs the jobs, job[0] on the caller's thread; a thread that cannot be started leaves its job to the
 * caller's thread. */
static void run_jobs(fill_job *job, unsigned n)
{
    pthread_t tid[FILL_MAX_THREADS];
    bool started[FILL_MAX_THREADS] = { false };
    for (unsigned p = 1; p < n; p++) started[p] = pthread_create(&tid[p], NULL, fill_part, &job[p]) == 0;
    fill_part(&job[0]);
    for (unsigned p = 1; p < n; p++) {
        if (started[p])
            pthread_join(tid[p], NULL);
        else
            fill_part(&job[p]);
    }
}

/* Fills f (a classic or blocked filter) from the spool's runs on nparts threads (a classic filter up to
 * FILL_ONE_MAX on one, unless `forced`: BLOOMKIT_THREADS asked for nparts). False when the spool could
 * not be read (message printed). */
static bool fill_parallel(bk_filter *f, cli_spool *sp, const cli_spool_run *runs, size_t nruns, unsigned nparts,
                          bool forced, cli_progress *prog)
{
    fill_job job[FILL_MAX_THREADS];
    struct bk_bloom *bloom = bk_filter_get(f, BK_TYPE_BLOOM);
    struct bk_blocked *blocked = bloom ? NULL : bk_filter_get(f, BK_TYPE_BLOCKED);
    size_t bytes = 0;
    if (bloom) bk_bloom_data(bloom, &bytes); /* (bk_filter_stats would count every bit of the filter) */
    if (bloom && (uint64_t)bytes <= FILL_ONE_MAX && !forced) nparts = 1;
    if (blocked && nparts > 1) {
        const unsigned sparts = cli_spool_parts(sp);
        if (nparts > sparts) nparts = sparts;
        const bool split = bk_blocked_layout_of(blocked) == BK_BLOCKED_SPLIT256;
        const uint64_t blocks = bk_blocked_bits(blocked) / (split ? 256 : 512); /* B (FORMAT.md 6.2) */
        size_t r = 0;
        for (unsigned p = 0; p < nparts; p++) {
            /* partitions [first, upto): runs [r, e) */
            const unsigned first = sparts * p / nparts, upto = sparts * (p + 1) / nparts;
            size_t e = r;
            while (e < nruns && runs[e].part < upto) e++;
            /* the first block no hash of an earlier partition reaches, rounded up to even */
            uint64_t lo = (first * blocks + sparts - 1) / sparts;
            lo += lo & 1;
            job[p] = (fill_job){ NULL, blocked, runs + r, e - r, 0, 1, p == 0 ? prog : NULL, nparts, sp, false,
                                 true, blocks, lo < blocks ? lo : blocks, sparts, NULL, 0, 0 };
            r = e;
        }
        run_jobs(job, nparts);
        for (unsigned p = 0; p < nparts; p++)
            if (job[p].naside) bk_blocked_add_hashes_part(blocked, job[p].aside, job[p].naside, 0, 1);
    } else {
        for (unsigned p = 0; p < nparts; p++)
            job[p] = (fill_job){ bloom, blocked, runs, nruns, p, nparts,
                                 p == 0 ? prog : NULL, 1, sp, false, false, 0, 0, 0, NULL, 0, 0 };
        run_jobs(job, nparts);
    }
    bool ok = true;
    for (unsigned p = 0; p < nparts; p++) {
        ok = ok && !job[p].failed;
        free(job[p].aside);
    }
    return ok;
}

/* ---- the command ---- */

static int run(int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    uint64_t n_override = 0;
    double p = 0.01;
    bool quiet = false, force = false;
    cli_reader_opts ro = { false, false, true };
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
        case OPT_FORCE: force = true; break;
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
    if (!cli_type_check_opts(t, given) || !cli_may_replace(path, force, inputs, ninputs))
        return free(inputs), CLI_EXIT_ERR;
    /* build sizes for a set and inserts it in hash order; an aging filter's generations would then
     * each hold one hash range of the keys, overloading its blocks. A window is fed as a stream. */
    if (strcmp(t->name, "aging") == 0)
        return free(inputs), cli_err("aging filters remember the recent keys of a stream: create one (bloomkit "
                                     "create FILE --type aging --window W) and feed it with bloomkit add");

    int rc = CLI_EXIT_ERR;
    double t0 = cli_now();
    /* With -n a bit-setting filter can be made before reading: it is filled as the keys are hashed,
     * with no spool (its bits do not depend on the order of the inserts, and its count is the
     * sketch's estimate either way). */
    const bool direct = n_override && t->sets_bits && !t->build_static;
    char b1[32], b2[32], b3[32];
    bk_status s;
    bk_filter *f = NULL;
    if (direct && (s = t->create(n_override, p, &to, &f)) != BK_OK) {
        cli_err("%s: cannot build a %s filter for %s keys at p = %g: %s (nothing was written)", path, t->name,
                cli_group(n_override, b1, sizeof b1), p, cli_status_words(s));
        free(inputs);
        return CLI_EXIT_ERR;
    }
    cli_reader *r = cli_reader_open(inputs, ninputs, &ro);
    /* the types that only set bits read the spool back as runs, in any order within a partition */
    const bool dedupe = t->can_remove || strcmp(t->name, "scalable") == 0;
    cli_spool *sp = r && !direct ? cli_spool_new(path, t->sets_bits && !dedupe && !t->build_static) : NULL;
    cli_hll *hll = malloc(sizeof *hll);
    if (!r || !hll || (!sp && !direct)) {
        bk_filter_free(f);
        if (!hll) cli_err("out of memory");
        cli_reader_close(r);
        cli_spool_free(sp);
        free(hll);
        free(inputs);
        return CLI_EXIT_ERR;
    }
    cli_hll_init(hll);

    /* pass 1: read, hash, count, spool */
    cli_progress prog;
    cli_progress_start(&prog, quiet, "read  ", cli_reader_total_bytes(r));
    pass1 p1;
    memset(&p1, 0, sizeof p1);
    p1.hll[0] = hll;
    p1.sp = sp;
    p1.r = r;
    p1.prog = &prog;
    p1.direct = direct ? f : NULL;
    bool read_ok = run_pass1(&p1, to.seed, build_threads(0), t->build_static != NULL);
    cli_progress_end(&prog);
    if (!read_ok) goto out;
    const double t_read = cli_now();
    const uint64_t lines = p1.lines;
    double est = cli_hll_estimate(hll);
    /* the sketch's distinct count, never more than the keys read */
    uint64_t est_n = est + 0.5 >= (double)lines ? lines : (uint64_t)(est + 0.5);
    uint64_t cap = n_override;
    if (!cap) {
        double c = ceil(est * (1.0 + 3.0 * cli_hll_stderr()));
        cap = c < 1 ? 1 : (uint64_t)c;
        if (cap > lines && lines > 0) cap = lines; /* never more distinct keys than keys */
    }

    /* pass 2: the filter */
    uint64_t distinct = 0;
    if (direct) {
        s = bk_filter_set_count(f, est_n); /* filled in pass 1 */
    } else if (t->build_static) {
        const uint64_t *all;
        size_t nall;
        if (!cli_spool_all(sp, &all, &nall)) goto out;
        s = t->build_static(all, nall, p, &to, &f);
    } else {
        s = t->create(cap, p, &to, &f);
        if (s == BK_OK) {
            /* Partition by partition, in hash order: the types that place a key by multiply-shift
             * of its hash then fill their memory front to back. The deleting types (counting,
             * cuckoo) count occurrences, so exact duplicates (equal hashes) are dropped first: the
             * filter holds the set of keys, as for the other types. */
            cli_progress_start(&prog, quiet, "insert", lines);
            size_t done = 0;
            if (dedupe) {
                const uint64_t *part;
                size_t n;
                int nx;
                while ((nx = cli_spool_next(sp, dedupe, &part, &n)) > 0) {
                    if ((s = bk_filter_add_hashes(f, part, n, NULL)) != BK_OK) break;
                    done += n;
                    cli_progress_update(&prog, done, done);
                }
                if (nx < 0) goto out;
                distinct = done;
            } else {
                const cli_spool_run *runs;
                size_t nruns;
                if (!cli_spool_runs(sp, &runs, &nruns)) goto out;
                if (bk_filter_get(f, BK_TYPE_BLOOM) || bk_filter_get(f, BK_TYPE_BLOCKED)) {
                    const char *env = getenv("BLOOMKIT_THREADS");
                    if (!fill_parallel(f, sp, runs, nruns, build_threads(lines), env && *env, &prog)) goto out;
                } else {
                    uint64_t buf[CLI_SPOOL_RUN_MAX];
                    for (size_t i = 0; i < nruns && s == BK_OK; i++) {
                        const uint64_t *h = cli_spool_run_hashes(sp, &runs[i], buf);
                        if (!h) goto out;
                        s = bk_filter_add_hashes(f, h, runs[i].n, NULL);
                        done += runs[i].n;
                        cli_progress_update(&prog, done, done);
                    }
                }
            }
            cli_progress_end(&prog);
            /* Bit-setting types count every add, duplicates included: record the sketch's distinct
             * count instead, never more than the keys read, so never more than the capacity sized
             * from it (a count a hair over capacity from estimation noise would read as saturated). */
            if (s == BK_OK && t->sets_bits) s = bk_filter_set_count(f, est_n);
        }
    }
    if (s != BK_OK) {
        cli_err("%s: cannot build a %s filter for %s keys at p = %g: %s (nothing was written)", path, t->name,
                cli_group(cap, b1, sizeof b1), p, cli_status_words(s));
        goto out;
    }
    const double t_fill = cli_now();
    if (!cli_save_locked(f, path)) goto out;
    rc = CLI_EXIT_OK;
    if (!quiet) {
        const double t_end = cli_now(), el = t_end - t0;
        cli_describe(stderr, "built", path, f);
        bk_stats st;
        if (bk_filter_stats(f, &st) == BK_OK && st.saturated)
            cli_warn("%s: warning: the filter is saturated (%s keys for a capacity of %s; FPR now about %s): "
                     "give a larger -n, or leave -n out",
                     path, cli_group(st.count, b1, sizeof b1), cli_group(st.capacity, b2, sizeof b2),
                     cli_percent(st.fpr_now, b3, sizeof b3));
        fprintf(stderr, "bloomkit: read %s keys (%s %s distinct%s) in %.2f s, %s keys/s "
                "(read and hash %.3f s, fill %.3f s, save %.3f s)\n",
                cli_group(lines, b1, sizeof b1), distinct ? "exactly" : "about",
                cli_group(distinct ? distinct : est_n, b2, sizeof b2), distinct ? "" : ", estimated",
                el, cli_human_count(el > 0 ? (double)lines / el : 0, b3, sizeof b3), t_read - t0,
                t_fill - t_read, t_end - t_fill);
    }
out:
    bk_filter_free(f);
    cli_spool_free(sp);
    cli_reader_close(r);
    free(hll);
    free(inputs);
    return rc;
}

const cli_command cli_cmd_build = { "build", run, "FILE [-p P] [--type T] [INPUT...]",
                                    "a filter sized for and filled with the input's keys", help };
