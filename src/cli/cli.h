/*
 * The bloomkit command: declarations shared by the subcommands (one source file each, cmd_*.c).
 *
 * Exit codes, for every subcommand: 0 success; 1 a negative answer (query: some key absent; verify:
 * the file is damaged; remove: some key was not in the filter); 2 an error, with one line on stderr
 * that names the file (or argument) and what is wrong.
 */
#ifndef BK_CLI_H
#define BK_CLI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <bloomkit/bloomkit.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_NO 1
#define CLI_EXIT_ERR 2

#if defined(__GNUC__)
#  define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#  define CLI_LIKELY(x) __builtin_expect(!!(x), 1)
#  define CLI_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#  define CLI_PRINTF(a, b)
#  define CLI_LIKELY(x) (x)
#  define CLI_UNLIKELY(x) (x)
#endif

/* ---- messages (util.c) ---- */

/* The running subcommand's name, for messages ("bloomkit add: ..."). */
extern const char *cli_cmd;
/* "bloomkit CMD: <message>\n" on stderr. Returns CLI_EXIT_ERR so callers can `return cli_err(...)`. */
int cli_err(const char *fmt, ...) CLI_PRINTF(1, 2);
/* The same, without the exit-code convention (warnings). */
void cli_warn(const char *fmt, ...) CLI_PRINTF(1, 2);
/* "bloomkit CMD: PATH: <what failed>: <strerror(errno)>", for failed system calls. */
int cli_err_errno(const char *path, const char *what);
/* "bloomkit CMD: PATH: <library status in words>". */
int cli_err_status(const char *path, bk_status s);
/* A plain-words explanation of a status, longer than bk_strerror(), for messages about files. */
const char *cli_status_words(bk_status s);
/* What to do about a full filter (BK_EFULL from an add): "bloomkit grow PATH" for a quotient filter,
 * else rebuild larger or use a type that grows. May write into buf (len bytes) and return it. */
const char *cli_full_advice(const bk_filter *f, const char *path, char *buf, size_t len);
/* A macro's value as a string literal: library defaults quoted in --help follow the library. */
#define BK_CLI_STR_(x) #x
#define BK_CLI_STR(x) BK_CLI_STR_(x)
#define CLI_PATH_ADVICE 4352 /* room for a path (PATH_MAX) and the advice around it */

/* Seconds on a monotonic clock. */
double cli_now(void);
/* "12.3M", "950k", "42": a count in a short human form (buf of >= 16 bytes). */
const char *cli_human_count(double v, char *buf, size_t len);
/* "1.50 MiB": bytes in a short human form. */
const char *cli_human_bytes(double v, char *buf, size_t len);
/* "1,000,000" (buf of >= 32 bytes). */
const char *cli_group(uint64_t v, char *buf, size_t len);
/* "1.004%", "0.000123%". */
const char *cli_percent(double p, char *buf, size_t len);
/* A JSON string literal (quotes and escapes). */
void cli_json_string(FILE *out, const char *s);

/* ---- option parsing (args.c) ----
 * GNU style: options and operands in any order; "--" ends options; "--name=value", "--name value",
 * "-x value", "-xvalue"; single-letter flags may be grouped ("-q0"). Unknown options and missing
 * values are errors with a message naming the option and pointing to --help. */
typedef struct cli_opt {
    const char *name;  /* long name without "--" */
    char letter;       /* short name, 0 for none */
    bool has_arg;
    int id;            /* returned by cli_getopt_next */
} cli_opt;

enum { CLI_OPT_END = -1, CLI_OPT_ERROR = -2, CLI_OPT_OPERAND = -3 };

typedef struct cli_getopt {
    int argc;
    char **argv;
    int i;             /* next argv index */
    const char *group; /* rest of a group of short flags being parsed */
    bool operands_only;
    const cli_opt *opts;
} cli_getopt;

void cli_getopt_init(cli_getopt *g, int argc, char **argv, const cli_opt *opts);
/* Next option id, CLI_OPT_OPERAND (*val is the operand), CLI_OPT_END, or CLI_OPT_ERROR (message printed). */
int cli_getopt_next(cli_getopt *g, const char **val);

/* Strict number parsers. Each prints "bloomkit CMD: WHAT: <problem> (<what is accepted>)" and returns
 * false on any bad input (trailing junk, out of range, empty). */
/* Counts: "1000000", "1,000,000", "1_000_000", "10M", "2.5k", "1e7", "1G"; suffixes k M G T are decimal
 * (10^3 ...); Ki Mi Gi Ti binary (2^10 ...). The value must be a whole number in [min, max]. */
bool cli_parse_count(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Probabilities strictly between 0 and 1: "0.01", "1%", "0.5%", "1e-3", "1/1000". */
bool cli_parse_prob(const char *what, const char *s, double *out);
/* Unsigned 64-bit integers: decimal or 0x hexadecimal. */
bool cli_parse_u64(const char *what, const char *s, uint64_t *out);
/* A real number in [min, max] (plain or scientific notation). */
bool cli_parse_double(const char *what, const char *s, double min, double max, double *out);

/* ---- per-type table (types.c) ---- */

/* Options of specific types; 0 (or 0.0) means the type's default. */
typedef struct cli_type_opts {
    uint64_t seed;
    uint32_t counter_bits;     /* counting: 4 or 8 */
    uint32_t growth;           /* scalable: 1..16 (1: sub-filters of the same size) */
    bool nonscaling;           /* scalable: never grow (one sub-filter) */
    bool classic_layers;       /* scalable: classic sub-filters instead of blocked ones */
    double ratio;              /* scalable: tightening ratio r in (0, 1) */
    uint32_t fingerprint_bits; /* cuckoo: 4 .. 32; fuse: 8, 16 */
    uint32_t bucket_size;      /* cuckoo: 1 .. 255 */
    uint32_t max_kicks;        /* cuckoo */
    uint32_t expansion;        /* cuckoo: growth of the chain when full (0: no growth) */
    uint32_t block_bits;       /* blocked: 256 (split block) or 512 */
    uint64_t window;           /* aging: the window, insertions (or ms when window_ms); 0: -n insertions */
    bool window_ms;            /* aging: window is a duration in milliseconds */
    uint32_t doublings;        /* quotient: remainder bits of room for this many doublings at P */
    bool expanding;            /* quotient: an expanding filter (doubles itself at its load limit, keeps P) */
} cli_type_opts;

/* Which options a type accepts (cli_type.options). */
enum {
    CLI_TOPT_COUNTER_BITS = 1u << 0,
    CLI_TOPT_GROWTH = 1u << 1,
    CLI_TOPT_RATIO = 1u << 2,
    CLI_TOPT_FINGERPRINT = 1u << 3,
    CLI_TOPT_BUCKET = 1u << 4,
    CLI_TOPT_KICKS = 1u << 5,
    CLI_TOPT_EXPANSION = 1u << 6,
    CLI_TOPT_BLOCK = 1u << 7,
    CLI_TOPT_NONSCALING = 1u << 8,
    CLI_TOPT_CLASSIC_LAYERS = 1u << 9,
    CLI_TOPT_WINDOW = 1u << 10,
    CLI_TOPT_DOUBLINGS = 1u << 11,
    CLI_TOPT_EXPANDING = 1u << 12,
};

/* What a sizing function reports for calc: the geometry (n, p, options) really gives. */
typedef struct cli_sizing {
    uint64_t bits;       /* bits (or cells x cell bits) addressed */
    uint64_t bytes;      /* memory of the arrays */
    uint32_t k;          /* probes per key (Bloom family) or fingerprint bits (cuckoo, fuse) */
    const char *k_label; /* "k" or "fp bits" */
    double bits_per_key;
    double fpr;          /* the FPR this geometry gives at n keys */
    char note[96];       /* anything the user must know (e.g. "FPR fixed by fingerprint size") */
} cli_sizing;

struct bk_filter;

typedef struct cli_type {
    const char *name;
    const char *summary;
    unsigned options; /* CLI_TOPT_* accepted */
    bool can_remove;
    bool is_static;   /* built from the whole key set (fuse): no create, no add */
    bool sets_bits;   /* an insert only sets bits: adding a present key changes nothing but the count */
    /* Sizing for calc. */
    bk_status (*size)(uint64_t n, double p, const cli_type_opts *o, cli_sizing *out);
    /* An empty filter for n keys at p (NULL for static types). */
    bk_status (*create)(uint64_t n, double p, const cli_type_opts *o, struct bk_filter **out);
    /* A static filter from all key hashes (NULL for dynamic types). */
    bk_status (*build_static)(const uint64_t *hashes, size_t n, double p, const cli_type_opts *o,
                              struct bk_filter **out);
} cli_type;

extern const cli_type cli_types[];
extern const size_t cli_ntypes;
/* The entry named `name`, or NULL with a message listing the known names. */
const cli_type *cli_type_find(const char *name);
/* The entry for a stored filter's type (and layout: bloom vs partitioned). */
const cli_type *cli_type_of(const struct bk_filter *f);
/* Check that every option set in o (per `given`, a CLI_TOPT_* mask) is accepted by t (any type when t is
 * NULL) and that they go together; message if not. */
bool cli_type_check_opts(const cli_type *t, unsigned given);

/* Inserts a batch of hashes (any n). For types that only set bits (t->sets_bits), keys already
 * present -- duplicates, in the filter or earlier in the batch, and false positives -- are skipped:
 * the bits are the same either way, and the filter's count then tracks distinct keys, so info's
 * saturation check is not fooled by duplicate input. Other types (counters, fingerprints) count
 * every occurrence. */
bk_status cli_add_hashes(bk_filter *f, const cli_type *t, const uint64_t *h, size_t n);
/* One-pass dedup of a batch of hashes (any n): is_new[i] = 1 when hash i is absent from f and not
 * earlier in h (a repeat within the batch is seen), else 0; the new ones are added, once each.
 * BK_OK, or the first add's error (e.g. BK_EFULL; the batch's earlier adds stay). */
bk_status cli_add_new_hashes(bk_filter *f, const uint64_t *h, size_t n, uint8_t *is_new, uint64_t room, size_t *used,
                             uint64_t *added);
/* (room: at most that many new keys go in; the hashes from the next new one on are left alone and
 * *used says how many of h were taken, n unless the room ran out. *added: the new keys added. An
 * aging filter takes at most room hashes, new or not.) */

/* The capacity watch of a run of adds (add, filter --add): when the filter passes its capacity
 * (bk_stats.saturated), a warning on stderr with the FPR now, or with strict an error. */
enum { CLI_WATCH_NONE, CLI_WATCH_COUNT, CLI_WATCH_STATS };
typedef struct cli_watch {
    const char *path;
    bool strict;
    int mode;          /* CLI_WATCH_*: by the count of new keys, or by statistics now and then */
    bk_stats start;    /* the statistics when the run began */
    uint64_t count;    /* the filter's count, as the run's adds move it */
    uint64_t since, every; /* CLI_WATCH_STATS: new keys since the last look, and between looks */
    bool crossed;      /* past its capacity (already at the start, or warned) */
} cli_watch;
/* "PATH: warning: the filter went past its capacity (...; FPR now about X, sized for Y): ..." on
 * stderr ("error" with strict; "is still" when `before` was saturated already). */
void cli_capacity_warning(const char *path, const bk_stats *before, const bk_stats *now, bool strict);
void cli_watch_start(cli_watch *w, const bk_filter *f, const char *path, bool strict);
/* How many new keys may go in before the one that passes the capacity, or before the next look at
 * the statistics (UINT64_MAX: no limit). */
uint64_t cli_watch_room(const cli_watch *w);
/* Counts `added` new keys; true when the filter has just passed its capacity (room_ran_out: the add
 * stopped at the room of cli_watch_room). */
bool cli_watch_added(cli_watch *w, const bk_filter *f, uint64_t added, bool room_ran_out);
/* Says so (cli_capacity_warning) once; returns the exit status it calls for (2 with strict). */
int cli_watch_crossed(cli_watch *w, const bk_filter *f);

/* ---- the growing time window of filter --add --window T (window.c) ---- */

#define CLI_WINDOW_MAX 16
typedef struct cli_window_member {
    struct bk_aging *f;
    double p;            /* the FPR it is sized for */
    uint64_t keys;       /* keys a window it is sized for */
    uint64_t retired_ms; /* when a newer one took over (0: the newest) */
    uint64_t slack_ms;   /* how much longer than the window a key may stay */
} cli_window_member;
typedef struct cli_window {
    uint64_t window_ms;
    double p;            /* the FPR the whole keeps under */
    cli_window_member m[CLI_WINDOW_MAX]; /* oldest first; the last takes the inserts */
    uint32_t n;
    uint64_t since, every; /* lines since the newest's statistics were looked at, and between looks */
    uint32_t grown;      /* times it grew */
    bool stuck;          /* it should have grown and could not: its FPR may pass p */
} cli_window;
/* One aging filter for `keys` keys a window of window_ms at p / 2; grows as more come (window.c). */
bk_status cli_window_new(cli_window *w, uint64_t window_ms, uint64_t keys, double p);
void cli_window_free(cli_window *w);
/* cli_add_new_hashes for the window: is_new[i] = 1 when h[i] was not seen within the window (nor
 * earlier in h); every hash is inserted (a repeat restarts its window). *added: the new ones. */
bk_status cli_window_add_new(cli_window *w, const uint64_t *h, size_t n, uint8_t *is_new, uint64_t *added);
/* The whole's statistics: count, memory and FPR now of all its filters; capacity and fill of the newest. */
void cli_window_stats(const cli_window *w, bk_stats *out);

/* ---- streaming key reader (keys.c; cli_reader_hash_all in keys_parallel.c) ---- */

typedef struct cli_reader cli_reader;

typedef struct cli_reader_opts {
    bool null_delim; /* keys end at NUL instead of newline */
    bool keep_cr;    /* keep a trailing \r (line mode only) */
    bool hash_all;   /* the keys are read with cli_reader_hash_all only (no read-ahead thread: its
                        workers read the regular-file inputs that the read-ahead thread would) */
} cli_reader_opts;

/* One batch of keys. Pointers stay valid until the next cli_reader_next call. */
typedef struct cli_batch {
    size_t n;
    const uint8_t **keys;
    size_t *lens;
    size_t *raw_lens; /* key plus the stripped \r and the delimiter, as they were in the input */
    bool last_unterminated; /* the batch's last key had no delimiter (end of a file without one) */
} cli_batch;

/* Opens paths in order ("-" or an empty list: standard input). NULL on error (message printed). */
cli_reader *cli_reader_open(char **paths, size_t npaths, const cli_reader_opts *o);
void cli_reader_close(cli_reader *r);
/* Next batch of up to CLI_BATCH keys: 1 with a batch, 0 at the end of all inputs, -1 on error
 * (message printed: the input's name and line). */
int cli_reader_next(cli_reader *r, cli_batch *b);
/* Total bytes of the inputs when they are all regular files, else 0 (unknown). */
uint64_t cli_reader_total_bytes(const cli_reader *r);
uint64_t cli_reader_bytes_done(const cli_reader *r);

#define CLI_BATCH 1024


/* Receive the hashes of a run of keys; false stops the read (the callback has printed why). `worker`
 * (below CLI_READ_MAX_THREADS) names the thread that hashed them, `slot` (below CLI_READ_MAX_THREADS x
 * CLI_READ_SLOTS) the buffer that holds them until they are sunk. */
typedef bool (*cli_hash_fn)(void *ctx, unsigned worker, unsigned slot, const uint64_t *h, size_t n);
#define CLI_READ_MAX_THREADS 4
#define CLI_READ_SLOTS 2 /* runs a worker may have hashed ahead of the sink */
/* Hashes every key of the inputs (seed). Each run of hashes goes first to work, on the thread that
 * hashed it (workers call it at the same time, each with its own index), then to sink, from one
 * thread at a time (the sink needs no lock, and may call cli_reader_bytes_done): with in_order, in
 * input order and not always on the worker's own thread; without it, in any order, each run on the
 * thread that hashed it; both get the same run and slot, and between the two calls the slot belongs
 * to that run (state the work call keeps for the sink goes by slot). When the reader was opened
 * with hash_all for inputs the read-ahead thread would read (regular files), `threads` workers (the
 * caller's thread among them, at most CLI_READ_MAX_THREADS) each read, split and hash whole blocks;
 * otherwise the caller's thread does it all, as worker 0. 0 at the end of the inputs, -1 on error
 * (message printed) or when a callback said stop. */
int cli_reader_hash_all(cli_reader *r, uint64_t seed, unsigned threads, bool in_order, cli_hash_fn work,
                        cli_hash_fn sink, void *ctx);
/* The longest key accepted (the read buffer grows to hold it). */
#define CLI_MAX_KEY ((size_t)1 << 30)

/* ---- the hash spool of build (spool.c) ---- */

typedef struct cli_spool cli_spool;
/* A spool whose temporary file (if it needs one) goes in the directory of near_path, else $TMPDIR.
 * runs_only: its hashes will only be read back with cli_spool_runs (or cli_spool_next without
 * dedupe), in any order within a partition (the types that only set bits); it then has 16 partitions
 * (the top 4 bits) instead of 256, which makes cli_spool_put cheaper. cli_spool_put_grouped and
 * cli_spool_group, and cli_spool_next's sorted partitions (their memory bound), take the 256 form. */
cli_spool *cli_spool_new(const char *near_path, bool runs_only);
void cli_spool_free(cli_spool *s);
/* Adds hashes grouped by partition (their top 8 bits): count[p] of partition p, in order p = 0..255,
 * each group in input order (cli_spool_group makes the groups). */
bool cli_spool_put_grouped(cli_spool *s, const uint64_t *h, const uint32_t count[256]);
/* Appends n hashes, each to its partition's current chunk; false on error (message printed). The
 * chunks then fill in another sequence than with cli_spool_put_grouped (so cli_spool_all's order
 * differs); each partition keeps its hashes in the order they were put. */
bool cli_spool_put(cli_spool *s, const uint64_t *h, size_t n);
/* Groups n hashes by partition into out (stable: each group keeps the input order); count[p] gets the
 * size of group p. Needs no spool: threads may group at the same time. */
void cli_spool_group(const uint64_t *h, size_t n, uint64_t *out, uint32_t count[256]);
/* The next partition of hashes (in the order of their top 8 bits); with dedupe, sorted and without
 * exact duplicates. 1 with a partition, 0 after the last, -1 on error (message printed). */
int cli_spool_next(cli_spool *s, bool dedupe, const uint64_t **h, size_t *n);
/* Every hash in one array (for static filters; 8 bytes per key in memory). Call instead of
 * cli_spool_next. */
bool cli_spool_all(cli_spool *s, const uint64_t **h, size_t *n);
/* Every hash as runs of at most CLI_SPOOL_RUN_MAX hashes, in the order cli_spool_next gives them
 * (partitions in the order of the hashes' top bits, each in input order): a run is in memory (h) or
 * in the temporary file (at off). Valid until cli_spool_free. */
typedef struct cli_spool_run {
    const uint64_t *h; /* NULL: in the file */
    uint64_t off;
    size_t n;
    unsigned part;     /* its partition: every hash of it has h >> (64 - log2(cli_spool_parts)) == part */
} cli_spool_run;
/* The spool's number of partitions: 256, or 16 for a runs_only spool. */
unsigned cli_spool_parts(const cli_spool *s);
#define CLI_SPOOL_RUN_MAX 4096
bool cli_spool_runs(cli_spool *s, const cli_spool_run **runs, size_t *nruns);
/* A run's hashes: in memory, or read from the file into buf (room for CLI_SPOOL_RUN_MAX). NULL on a
 * read error (message printed). Threads may read runs at the same time, each into its own buf. */
const uint64_t *cli_spool_run_hashes(cli_spool *s, const cli_spool_run *run, uint64_t *buf);

/* ---- buffered output (util.c) ---- */

typedef struct cli_out {
    int fd;
    uint8_t *buf;
    size_t len, cap;
    bool failed;
} cli_out;

bool cli_out_init(cli_out *o, int fd, size_t cap);
/* mapguard.c: a mapped filter file changed underneath (truncated, copied over in place) raises SIGBUS:
 * the handler writes out the pending output of the registered cli_out, says which file changed and
 * exits 2. cli_mapguard_file before a file is mapped (installs the handler once); cli_mapguard_output
 * for the command's output (NULL: none). */
void cli_mapguard_file(const char *path);
void cli_mapguard_output(cli_out *out);
/* The error of bk_filter_close on a shared writable mapping (call with errno as the close left it). */
int cli_close_error(const char *path, bk_status s);
/* Writes everything; false (message printed once) on a write error. */
bool cli_out_write(cli_out *o, const void *data, size_t len);
bool cli_out_flush(cli_out *o);
void cli_out_free(cli_out *o);
static inline bool cli_out_put(cli_out *o, const void *data, size_t len)
{
    if (CLI_LIKELY(o->cap - o->len >= len)) {
        __builtin_memcpy(o->buf + o->len, data, len);
        o->len += len;
        return true;
    }
    return cli_out_write(o, data, len);
}

/* ---- progress bar on stderr (progress.c) ----
 * Shown only when stderr is a terminal and --quiet was not given; redrawn at most 8 times a second. */
typedef struct cli_progress {
    bool on;
    const char *label;
    uint64_t total;       /* bytes expected, 0 if unknown */
    double t0, next;
    uint64_t items;
    bool drawn;
} cli_progress;

void cli_progress_start(cli_progress *p, bool quiet, const char *label, uint64_t total_bytes);
void cli_progress_draw(cli_progress *p, uint64_t bytes, uint64_t items, double now);
static inline void cli_progress_update(cli_progress *p, uint64_t bytes, uint64_t items)
{
    if (CLI_UNLIKELY(p->on)) {
        double t = cli_now();
        if (t >= p->next) cli_progress_draw(p, bytes, items, t);
    }
}
/* Erases the bar. */
void cli_progress_end(cli_progress *p);

/* ---- distinct-count sketch (hll.c): HyperLogLog, 2^16 one-byte registers (64 KiB) ---- */

#define CLI_HLL_P 16
typedef struct cli_hll {
    uint8_t reg[1u << CLI_HLL_P];
} cli_hll;

void cli_hll_init(cli_hll *h);
/* Adds well-mixed 64-bit hashes. */
void cli_hll_add(cli_hll *h, const uint64_t *hashes, size_t n);
/* dst becomes the sketch of both inputs (the register-wise maximum): the same as adding src's hashes. */
void cli_hll_merge(cli_hll *dst, const cli_hll *src);
double cli_hll_estimate(const cli_hll *h);
/* Relative standard error of the estimate: 1.04 / sqrt(2^p). */
double cli_hll_stderr(void);

/* ---- filter files (files.c) ---- */

typedef struct cli_lock {
    int fd;
} cli_lock;

/* Takes an advisory flock (mode LOCK_EX or LOCK_SH) on the file at path, waiting for other writers;
 * once held, re-checks that path still names the locked file (else locks what it names now). When
 * the file does not exist and `exists` is not NULL, *exists is false and nothing is locked (fd -1);
 * with `exists` NULL a missing file is an error. False with a message on error. */
bool cli_lock_path(const char *path, int mode, cli_lock *l, bool *exists);
/* Writes n bytes to path through a temporary file beside it, fsync and rename (a file of another
 * format: a BIP 37 payload, a Parquet filter blob). False with a message naming path. */
bool cli_write_file(const char *path, const void *buf, size_t n);
/* Writes n bytes to fd (what: its name in a message). False with a message. */
bool cli_write_fd(int fd, const void *buf, size_t n, const char *what);
void cli_unlock(cli_lock *l);

/* What is wrong with the file at path, given the status of opening or loading it (errno for BK_EIO). */
const char *cli_file_problem(const char *path, bk_status s);
/* Prints the error of opening/loading path with status s, in words; returns CLI_EXIT_ERR. */
int cli_file_error(const char *path, bk_status s);
/* Opens a filter by mmap, read-only and validated (checksums included). NULL with a message. */
bk_filter *cli_open_ro(const char *path);
/* Loads a filter into memory. NULL with a message. */
bk_filter *cli_load(const char *path);
/* Loads the file locked by l (exclusively, for load-modify-save) through the locked descriptor.
 * (The library's loaders take a shared lock of their own, which would wait for ours forever.) */
bk_filter *cli_load_locked(const cli_lock *l, const char *path);
/* Does path name the file locked by l? */
bool cli_same_file(const cli_lock *l, const char *path);
/* Saves atomically (temp + fsync + rename). False with a message; the old file is then unchanged.
 * When path is a symbolic link, the file it points to is replaced and the link is kept. */
bool cli_save(const bk_filter *f, const char *path);
/* May a command write a new filter to path? Not if path is one of the inputs (a typo would destroy
 * the input), nor, without force, if it exists and is not a bloomkit filter. Message if not. */
bool cli_may_replace(const char *path, bool force, char *const *inputs, size_t ninputs);
/* The same under an exclusive lock of the existing file (for commands that replace a file). */
bool cli_save_locked(const bk_filter *f, const char *path);
/* One summary line: "bloomkit: VERB PATH: bloom filter for N keys at P, SIZE (...), k = K". */
void cli_describe(FILE *out, const char *verb, const char *path, const bk_filter *f);

/* ---- options shared by several subcommands ---- */

enum {
    OPT_HELP = 1000,
    OPT_QUIET,
    OPT_NULL,
    OPT_KEEP_CR,
    OPT_N,
    OPT_P,
    OPT_TYPE,
    OPT_SEED,
    OPT_JSON,
    OPT_FORCE,
    OPT_ABSENT,
    OPT_PRESENT,
    OPT_COUNTER_BITS,
    OPT_GROWTH,
    OPT_RATIO,
    OPT_FINGERPRINT,
    OPT_BUCKET,
    OPT_KICKS,
    OPT_EXPANSION,
    OPT_BLOCK,
    OPT_NONSCALING,
    OPT_CLASSIC_LAYERS,
    OPT_STRICT,
    OPT_LINE_BUFFERED,
    OPT_ADD,
    OPT_WINDOW,
    OPT_VERBOSE,
    OPT_DOUBLINGS,
    OPT_EXPANDING,
};

#define CLI_OPTS_COMMON { "help", 'h', false, OPT_HELP }
#define CLI_OPTS_KEYS { "null", '0', false, OPT_NULL }, { "keep-cr", 0, false, OPT_KEEP_CR }
#define CLI_OPTS_TYPE                                                                               \
    { "type", 't', true, OPT_TYPE }, { "seed", 0, true, OPT_SEED },                                 \
    { "counter-bits", 0, true, OPT_COUNTER_BITS }, { "growth", 0, true, OPT_GROWTH },               \
    { "ratio", 0, true, OPT_RATIO }, { "fingerprint-bits", 0, true, OPT_FINGERPRINT },              \
    { "bucket-size", 0, true, OPT_BUCKET }, { "max-kicks", 0, true, OPT_KICKS },                    \
    { "expansion", 0, true, OPT_EXPANSION }, { "block-bits", 0, true, OPT_BLOCK },                  \
    { "nonscaling", 0, false, OPT_NONSCALING }, { "classic-layers", 0, false, OPT_CLASSIC_LAYERS }, \
    { "window", 0, true, OPT_WINDOW }, { "doublings", 0, true, OPT_DOUBLINGS },                     \
    { "expanding", 0, false, OPT_EXPANDING }
#define CLI_OPTS_END { NULL, 0, false, 0 }

/* Handles --seed and the type options (OPT_SEED .. OPT_EXPANSION): 1 handled, 0 not a type option,
 * -1 bad value (message printed). `given` collects the CLI_TOPT_* bits of the options seen. */
int cli_type_option(int id, const char *val, cli_type_opts *o, unsigned *given);

/* What the sketch commands (count, top) read alike: the key reader's options (-0, --keep-cr), -q,
 * --width, --depth and --seed of a new sketch, and the operands. */
enum { OPT_SK_WIDTH = 1900, OPT_SK_DEPTH };
typedef struct {
    cli_reader_opts ro;
    bool quiet;
    uint64_t width, depth, seed; /* 0: not given */
    uint64_t max_width, max_depth;
    char **operands;             /* argc of them allocated */
    size_t n;
    cli_getopt g;
} cli_sketch_args;
/* Starts reading argv with the command's options (which include CLI_OPTS_SKETCH); false: out of
 * memory (said). Free a->operands after. */
bool cli_sketch_begin(cli_sketch_args *a, int argc, char **argv, const cli_opt *opts, uint64_t max_width,
                      uint64_t max_depth);
/* The next option of the command's own (CLI_OPT_END at the end, CLI_OPT_ERROR after a message), those
 * of CLI_OPTS_SKETCH and the operands taken into *a on the way. */
int cli_sketch_next(cli_sketch_args *a, const char **val);
/* Reads the keys of files (standard input when n is 0) with a's reader options, batch by batch into
 * fn, behind a progress line labelled `label` (none with -q); a batch fn refuses stops the reading,
 * with its status in *st (BK_OK when none did). -1 when the keys could not be read (said), else 0. */
typedef bk_status (*cli_batch_fn)(void *ctx, const cli_batch *b);
int cli_sketch_feed(const cli_sketch_args *a, char **files, size_t n, const char *label, cli_batch_fn fn, void *ctx,
                    bk_status *st);
#define CLI_OPTS_SKETCH                                                                             \
    { "quiet", 'q', false, OPT_QUIET }, { "width", 0, true, OPT_SK_WIDTH },                         \
    { "depth", 0, true, OPT_SK_DEPTH }, { "seed", 0, true, OPT_SEED }

/* What calc and create read to size a filter: -n, -p, --type and the type options. */
typedef struct {
    uint64_t n;
    double p;
    bool have_n, have_p;
    const cli_type *type; /* NULL until --type */
    cli_type_opts to;
    unsigned given;       /* CLI_TOPT_* bits of the type options seen */
} cli_size_args;

/* Handles -n, -p, --type and cli_type_option's options: 1 handled, 0 not one of them, -1 bad value
 * (message printed). */
int cli_size_option(int id, const char *val, cli_size_args *a);

/* Help text of the key input rules, shared by the commands that read keys. */
extern const char cli_keys_help[];

/* Hashes a batch with the filter's seed (the bytes form of every call is the pre-hashed form applied
 * to these hashes). */
static inline void cli_hash_batch(const cli_batch *b, uint64_t seed, uint64_t *out)
{
    for (size_t i = 0; i < b->n; i++) out[i] = bk_hash64(b->keys[i], b->lens[i], seed);
}

/* ---- subcommands ---- */

typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand's name */
    const char *args;                  /* "FILE [KEY...]", for the overview */
    const char *summary;               /* what it does, for the overview */
    const char *help;                  /* the full --help text */
} cli_command;

/* One per source file cmd_<name>.c. */
extern const cli_command cli_cmd_calc, cli_cmd_create, cli_cmd_build, cli_cmd_add, cli_cmd_query,
    cli_cmd_filter, cli_cmd_remove, cli_cmd_info, cli_cmd_merge, cli_cmd_verify, cli_cmd_grow;
/* The sketches (count-min, Top-K): cmd_count.c, cmd_top.c; their option ids start at 2000. */
extern const cli_command cli_cmd_count, cli_cmd_top;
extern const cli_command cli_cmd_bip37, cli_cmd_parquet, cli_cmd_convert;
/* `bloomkit query|info FILE --column C ...` handed to `bloomkit parquet query|info` (action). */
int cli_parquet_action(const char *action, int argc, char **argv);
/* Whether path is a Parquet file whose column has a filter that reads; false after printing why. */
bool cli_parquet_check(const char *path, const char *column);

/* Prints the command's help on stdout and returns 0. */
int cli_help(const char *name);

/* The command line of add, query and remove: FILE [KEY...] with --null, --keep-cr, -q and --help
 * (and --strict for add). */
typedef struct {
    const char *path;
    char **keys; /* the KEY arguments (pointers into argv), nkeys of them; the caller frees the array */
    size_t nkeys;
    bool quiet;
    bool strict; /* add only: crossing the capacity is an error */
    cli_reader_opts ro;
} cli_file_keys;
/* -1: parsed, go on; otherwise the exit status to return (help printed, or the error reported). */
int cli_parse_file_keys(int argc, char **argv, const char *cmd, cli_file_keys *a);

#endif
