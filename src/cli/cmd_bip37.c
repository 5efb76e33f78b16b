/* bloomkit bip37: Bitcoin BIP 37 (filterload) filters in files holding the message's payload. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit bip37 create FILE (-n N -p P | --bytes B --hash-funcs K) [--tweak T] [--flags F] [--force]\n"
    "       bloomkit bip37 add FILE [KEY...] [--hex] [--null] [--keep-cr]\n"
    "       bloomkit bip37 query FILE [KEY...] [--hex] [--null] [--keep-cr] [-q]\n"
    "       bloomkit bip37 info FILE [--json]\n"
    "\n"
    "Bitcoin BIP 37 filters, as a light client sends them in a filterload message. FILE holds the\n"
    "message's payload exactly (Bitcoin Core's serialized CBloomFilter: a compact-size length, the\n"
    "filter's bytes, nHashFuncs and nTweak as 32-bit little-endian, the nFlags byte), not bloomkit's\n"
    "file format: keys are hashed with MurmurHash3 as Bitcoin does, so the file can be sent to a node\n"
    "as it is, and a payload taken from the network can be queried.\n"
    "\n"
    "create sizes the filter for N keys at rate P by Bitcoin Core's rules (whole bytes, at most 36,000\n"
    "bytes and 50 hash functions), or takes the size as given. add and query take keys as the other\n"
    "commands do (arguments, or lines of standard input); with --hex each key is written in hex (a\n"
    "public key, a script, a transaction id as its bytes are hashed) and decoded first. info prints\n"
    "the header, the bits set and the FPR the filter gives now. A payload whose lengths do not add up,\n"
    "or over the protocol's limits, is refused with the reason.\n"
    "\n"
    "Options:\n"
    "  -n, --keys N          create: number of keys the filter is for\n"
    "  -p, --fpr P           create: target false-positive rate (0.01, 1%, 1e-3)\n"
    "      --bytes B         create: exactly B bytes (0 .. 36000) instead of -n/-p\n"
    "      --hash-funcs K    create: exactly K hash functions (0 .. 50), with --bytes\n"
    "      --tweak T         create: nTweak, 0 .. 4294967295 (decimal or 0x hex; default 0)\n"
    "      --flags F         create: nFlags: none, all, p2pubkey-only or 0 .. 255 (default none)\n"
    "  -f, --force           create: replace an existing FILE\n"
    "  -x, --hex             keys are hexadecimal (two digits a byte, either case)\n"
    "  -0, --null            keys end at NUL bytes (query: output records too)\n"
    "      --keep-cr         keep a trailing \\r on input lines\n"
    "  -q, --quiet           query: print nothing; only the exit status answers\n"
    "      --json            info: one JSON object\n"
    "  -h, --help            this help\n"
    "\n"
    "Exit status: 0 success (query: every key present); 1 query: some key absent; 2 an error.\n"
    "\n"
    "Example: bloomkit bip37 create wallet.bip37 -n 100 -p 0.0001 --tweak 0x5eed --flags all\n";

enum {
    B_HELP = 2000, B_N, B_P, B_BYTES, B_HASHES, B_TWEAK, B_FLAGS, B_FORCE, B_HEX, B_NULL, B_KEEP_CR, B_QUIET,
    B_JSON,
};

static const cli_opt opts[] = {
    { "help", 'h', false, B_HELP },
    { "keys", 'n', true, B_N },
    { "fpr", 'p', true, B_P },
    { "bytes", 0, true, B_BYTES },
    { "hash-funcs", 0, true, B_HASHES },
    { "tweak", 0, true, B_TWEAK },
    { "flags", 0, true, B_FLAGS },
    { "force", 'f', false, B_FORCE },
    { "hex", 'x', false, B_HEX },
    { "null", '0', false, B_NULL },
    { "keep-cr", 0, false, B_KEEP_CR },
    { "quiet", 'q', false, B_QUIET },
    { "json", 0, false, B_JSON },
    CLI_OPTS_END,
};

typedef struct {
    const char *action, *path;
    char **keys;
    size_t nkeys;
    bool have_n, have_p, have_bytes, have_hashes, force, hex, quiet, json;
    uint64_t n, bytes, hashes, tweak, flags;
    double p;
    cli_reader_opts ro;
} b_args;

/* The largest payload: a 3-byte length, 36,000 bytes, 9 bytes of fields. */
#define B_MAX_PAYLOAD (3 + BK_BIP37_MAX_BYTES + 9)

static int parse_flags(const char *s, uint64_t *out)
{
    if (strcmp(s, "none") == 0) *out = BK_BIP37_UPDATE_NONE;
    else if (strcmp(s, "all") == 0) *out = BK_BIP37_UPDATE_ALL;
    else if (strcmp(s, "p2pubkey-only") == 0) *out = BK_BIP37_UPDATE_P2PUBKEY_ONLY;
    else if (!cli_parse_u64("--flags", s, out)) return -1;
    else if (*out > 255) return cli_err("--flags: %s is over 255 (one byte)", s), -1;
    return 0;
}

static const char *flags_name(uint8_t f)
{
    return f == BK_BIP37_UPDATE_NONE ? "none" : f == BK_BIP37_UPDATE_ALL ? "all"
         : f == BK_BIP37_UPDATE_P2PUBKEY_ONLY ? "p2pubkey-only" : "other";
}

/* Reads and parses FILE; NULL after printing why. */
static bk_bip37 *load(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cli_err_errno(path, "cannot open"), NULL;
    static uint8_t buf[B_MAX_PAYLOAD + 1];
    size_t len = 0;
    while (len < sizeof buf) {
        ssize_t r = read(fd, buf + len, sizeof buf - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            cli_err_errno(path, "read failed");
            close(fd);
            return NULL;
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    close(fd);
    char why[200];
    bk_status s = bk_bip37_parse_problem(buf, len, why, sizeof why);
    if (s == BK_OK && len > B_MAX_PAYLOAD) s = BK_ETOOBIG; /* not reached: parse counts every byte */
    if (s != BK_OK) {
        if (len > B_MAX_PAYLOAD && s != BK_ETOOBIG)
            snprintf(why, sizeof why, "larger than the largest BIP 37 filter (%u bytes of payload)", B_MAX_PAYLOAD);
        cli_err("%s: not a valid BIP 37 filter: %s", path, why);
        return NULL;
    }
    bk_bip37 *f = NULL;
    s = bk_bip37_parse(buf, len, NULL, &f);
    if (s != BK_OK) return cli_err_status(path, s), NULL;
    return f;
}

/* Writes the payload to path through a temporary file, fsync and rename. */
static bool store(const bk_bip37 *f, const char *path)
{
    static uint8_t buf[B_MAX_PAYLOAD];
    size_t n = 0;
    if (bk_bip37_serialize(f, buf, sizeof buf, &n) != BK_OK) return cli_err("%s: cannot serialize", path), false;
    return cli_write_file(path, buf, n);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The key's bytes: as given, or decoded from hex into *buf (grown as needed). NULL on bad hex. */
static const uint8_t *key_bytes(const b_args *a, const uint8_t *k, size_t len, uint8_t **buf, size_t *cap,
                                size_t *out_len, uint64_t index)
{
    if (!a->hex) {
        *out_len = len;
        return k;
    }
    if (len % 2) return cli_err("key %llu: odd number of hex digits (%zu)", (unsigned long long)index, len), NULL;
    if (len / 2 > *cap) {
        uint8_t *nb = realloc(*buf, len / 2);
        if (!nb) return cli_err("out of memory"), NULL;
        *buf = nb;
        *cap = len / 2;
    }
    for (size_t i = 0; i < len / 2; i++) {
        int hi = hexval(k[2 * i]), lo = hexval(k[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return cli_err("key %llu: not hexadecimal at character %zu", (unsigned long long)index,
                           (size_t)(hi < 0 ? 2 * i + 1 : 2 * i + 2)),
                   NULL;
        (*buf)[i] = (uint8_t)(hi << 4 | lo);
    }
    *out_len = len / 2;
    return *buf;
}

/* Every key, from the arguments or standard input, to visit(); 0, or the exit status of an error. */
typedef bool (*visit_fn)(void *ctx, const uint8_t *raw, size_t raw_len, const uint8_t *key, size_t len);

static int each_key(const b_args *a, visit_fn visit, void *ctx)
{
    uint8_t *buf = NULL;
    size_t cap = 0, len;
    uint64_t index = 0;
    int rc = 0;
    if (a->nkeys) {
        for (size_t i = 0; i < a->nkeys && !rc; i++) {
            const uint8_t *raw = (const uint8_t *)a->keys[i];
            const uint8_t *k = key_bytes(a, raw, strlen(a->keys[i]), &buf, &cap, &len, ++index);
            if (!k || !visit(ctx, raw, strlen(a->keys[i]), k, len)) rc = CLI_EXIT_ERR;
        }
    } else {
        cli_reader *r = cli_reader_open(NULL, 0, &a->ro);
        if (!r) {
            free(buf);
            return CLI_EXIT_ERR;
        }
        cli_batch b;
        int more;
        while (!rc && (more = cli_reader_next(r, &b)) > 0)
            for (size_t i = 0; i < b.n && !rc; i++) {
                const uint8_t *k = key_bytes(a, b.keys[i], b.lens[i], &buf, &cap, &len, ++index);
                if (!k || !visit(ctx, b.keys[i], b.lens[i], k, len)) rc = CLI_EXIT_ERR;
            }
        if (!rc && more < 0) rc = CLI_EXIT_ERR;
        cli_reader_close(r);
    }
    free(buf);
    return rc;
}

static int do_create(const b_args *a)
{
    bool sized = a->have_bytes || a->have_hashes;
    if (sized && (a->have_n || a->have_p))
        return cli_err("give either -n and -p, or --bytes and --hash-funcs (see: bloomkit bip37 --help)");
    if (sized && !(a->have_bytes && a->have_hashes)) return cli_err("--bytes and --hash-funcs go together");
    if (!sized && !(a->have_n && a->have_p)) return cli_err("create needs -n N and -p P, or --bytes and --hash-funcs");
    if (!a->force && access(a->path, F_OK) == 0)
        return cli_err("%s: exists (use --force to replace it)", a->path);
    bk_bip37 *f = NULL;
    bk_status s = sized ? bk_bip37_new_sized((size_t)a->bytes, (uint32_t)a->hashes, (uint32_t)a->tweak,
                                             (uint8_t)a->flags, NULL, &f)
                        : bk_bip37_new((uint32_t)a->n, a->p, (uint32_t)a->tweak, (uint8_t)a->flags, NULL, &f);
    if (s != BK_OK) return cli_err("cannot make the filter: %s", bk_strerror(s));
    bool ok = store(f, a->path);
    bk_bip37_free(f);
    return ok ? CLI_EXIT_OK : CLI_EXIT_ERR;
}

static bool add_one(void *ctx, const uint8_t *raw, size_t raw_len, const uint8_t *key, size_t len)
{
    (void)raw;
    (void)raw_len;
    return bk_bip37_add(ctx, key, len) == BK_OK;
}

static int do_add(const b_args *a)
{
    bk_bip37 *f = load(a->path);
    if (!f) return CLI_EXIT_ERR;
    int rc = each_key(a, add_one, f);
    if (!rc && !store(f, a->path)) rc = CLI_EXIT_ERR; /* nothing is written when a key was bad */
    bk_bip37_free(f);
    return rc;
}

typedef struct {
    const bk_bip37 *f;
    const b_args *a;
    cli_out *out;
    uint64_t absent;
} query_ctx;

static bool query_one(void *ctx, const uint8_t *raw, size_t raw_len, const uint8_t *key, size_t len)
{
    query_ctx *q = ctx;
    bool present = bk_bip37_contains(q->f, key, len);
    q->absent += !present;
    if (!q->a->quiet) {
        char end = q->a->ro.null_delim ? '\0' : '\n';
        cli_out_put(q->out, raw, raw_len);
        if (present) cli_out_put(q->out, "\tpresent", 8);
        else cli_out_put(q->out, "\tabsent", 7);
        cli_out_put(q->out, &end, 1);
    }
    return true;
}

static int do_query(const b_args *a)
{
    bk_bip37 *f = load(a->path);
    if (!f) return CLI_EXIT_ERR;
    cli_out out;
    if (!cli_out_init(&out, 1, (size_t)1 << 16)) {
        bk_bip37_free(f);
        return CLI_EXIT_ERR;
    }
    query_ctx q = { f, a, &out, 0 };
    int rc = each_key(a, query_one, &q);
    if (!cli_out_flush(&out) && !rc) rc = CLI_EXIT_ERR;
    cli_out_free(&out);
    bk_bip37_free(f);
    if (rc) return rc;
    return q.absent ? CLI_EXIT_NO : CLI_EXIT_OK;
}

static int do_info(const b_args *a)
{
    bk_bip37 *f = load(a->path);
    if (!f) return CLI_EXIT_ERR;
    size_t bytes = bk_bip37_bytes(f);
    uint32_t k = bk_bip37_hash_funcs(f);
    uint64_t bits = (uint64_t)bytes * 8, set = bk_bip37_popcount(f);
    double fill = bits ? (double)set / (double)bits : 1.0;
    double fpr = bits ? pow(fill, k) : 1.0;
    /* the number of distinct keys that leaves this many bits set, on average */
    double est = (bits && k && set < bits) ? -(double)bits / k * log1p(-fill) : NAN;
    uint8_t fl = bk_bip37_flags(f);
    if (a->json) {
        printf("{\"file\":");
        cli_json_string(stdout, a->path);
        printf(",\"format\":\"bip37\",\"bytes\":%zu,\"bits\":%llu,\"hash_funcs\":%u,\"tweak\":%u,\"flags\":%u,"
               "\"flags_name\":\"%s\",\"bits_set\":%llu,\"fill\":%.6f,\"fpr_now\":%.6g,\"estimated_keys\":",
               bytes, (unsigned long long)bits, k, bk_bip37_tweak(f), fl, flags_name(fl), (unsigned long long)set,
               fill, fpr);
        if (isnan(est)) printf("null}\n");
        else printf("%.0f}\n", est);
    } else {
        char b1[32], b2[32];
        printf("file:            %s\n", a->path);
        printf("format:          BIP 37 filterload payload (MurmurHash3, Bitcoin's probes)\n");
        printf("bytes:           %zu (%s bits)\n", bytes, cli_group(bits, b1, sizeof b1));
        printf("hash functions:  %u\n", k);
        printf("tweak:           %u (0x%08x)\n", bk_bip37_tweak(f), bk_bip37_tweak(f));
        printf("flags:           %u (%s)\n", fl, flags_name(fl));
        printf("bits set:        %s (%s)\n", cli_group(set, b2, sizeof b2), cli_percent(fill, b1, sizeof b1));
        printf("fpr now:         %s%s\n", cli_percent(fpr, b1, sizeof b1),
               bits ? "" : " (an empty filter matches every key)");
        if (isnan(est)) printf("estimated keys:  unknown (filter full or empty)\n");
        else printf("estimated keys:  %.0f\n", est);
    }
    bk_bip37_free(f);
    return CLI_EXIT_OK;
}

static int run(int argc, char **argv)
{
    b_args a = { 0 };
    a.keys = calloc((size_t)argc, sizeof *a.keys);
    if (!a.keys) return cli_err("out of memory");
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    const char *val;
    int id, rc = -1;
    unsigned long given = 0;
    while (rc < 0 && (id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        if (id >= B_N && id <= B_JSON) given |= 1ul << (id - B_N);
        switch (id) {
        case CLI_OPT_ERROR: rc = CLI_EXIT_ERR; break;
        case B_HELP: rc = cli_help("bip37"); break;
        case B_N: a.have_n = true; if (!cli_parse_count("-n", val, 1, UINT32_MAX, &a.n)) rc = CLI_EXIT_ERR; break;
        case B_P: a.have_p = true; if (!cli_parse_prob("-p", val, &a.p)) rc = CLI_EXIT_ERR; break;
        case B_BYTES:
            a.have_bytes = true;
            if (!cli_parse_count("--bytes", val, 0, BK_BIP37_MAX_BYTES, &a.bytes)) rc = CLI_EXIT_ERR;
            break;
        case B_HASHES:
            a.have_hashes = true;
            if (!cli_parse_count("--hash-funcs", val, 0, BK_BIP37_MAX_HASH_FUNCS, &a.hashes)) rc = CLI_EXIT_ERR;
            break;
        case B_TWEAK:
            if (!cli_parse_u64("--tweak", val, &a.tweak)) rc = CLI_EXIT_ERR;
            else if (a.tweak > UINT32_MAX) rc = cli_err("--tweak: %s is over 4294967295 (32 bits)", val);
            break;
        case B_FLAGS: if (parse_flags(val, &a.flags) < 0) rc = CLI_EXIT_ERR; break;
        case B_FORCE: a.force = true; break;
        case B_HEX: a.hex = true; break;
        case B_NULL: a.ro.null_delim = true; break;
        case B_KEEP_CR: a.ro.keep_cr = true; break;
        case B_QUIET: a.quiet = true; break;
        case B_JSON: a.json = true; break;
        case CLI_OPT_OPERAND:
            if (!a.action) a.action = val;
            else if (!a.path) a.path = val;
            else a.keys[a.nkeys++] = (char *)val;
            break;
        }
    }
    if (rc >= 0) goto out;
    if (!a.action) {
        rc = cli_err("needs an action: create, add, query or info (see: bloomkit bip37 --help)");
        goto out;
    }
    /* which options each action takes (bits of B_N ..) */
    static const struct { const char *name; unsigned long allowed; int (*fn)(const b_args *); bool keys; } acts[] = {
        { "create", 0x7f, do_create, false },
        { "add", 0x380, do_add, true },
        { "query", 0x780, do_query, true },
        { "info", 0x800, do_info, false },
    };
    static const char *const names[] = { "-n", "-p", "--bytes", "--hash-funcs", "--tweak", "--flags", "--force",
                                         "--hex", "--null", "--keep-cr", "--quiet", "--json" };
    size_t i = 0;
    while (i < 4 && strcmp(acts[i].name, a.action) != 0) i++;
    if (i == 4) {
        rc = cli_err("unknown action '%s': create, add, query or info (see: bloomkit bip37 --help)", a.action);
        goto out;
    }
    if (!a.path) {
        rc = cli_err("%s needs a FILE (see: bloomkit bip37 --help)", a.action);
        goto out;
    }
    if (a.nkeys && !acts[i].keys) {
        rc = cli_err("%s takes no keys: unexpected argument '%s'", a.action, a.keys[0]);
        goto out;
    }
    unsigned long extra = given & ~acts[i].allowed;
    if (extra) {
        size_t b = 0;
        while (!(extra & (1ul << b))) b++;
        rc = cli_err("%s is not an option of %s (see: bloomkit bip37 --help)", names[b], a.action);
        goto out;
    }
    rc = acts[i].fn(&a);
out:
    free(a.keys);
    return rc;
}

const cli_command cli_cmd_bip37 = {
    "bip37", run, "create|add|query|info FILE ...", "Bitcoin BIP 37 (filterload) filters", help,
};
