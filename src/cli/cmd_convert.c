/* bloomkit convert: whether a filter another system made can become a bloomkit filter without its keys,
 * and, where it cannot, why and how to rebuild one. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit convert FILE [-o OUT] [--column C] [--from parquet|bip37|pybloom_live]\n"
    "\n"
    "Says whether a Bloom filter another system made can become a bloomkit filter without its keys.\n"
    "None of the filters bloomkit reads can: their bits were set by another hash (a Parquet\n"
    "split-block filter by XXH64 of the plain encoding, with Parquet's own salts; a BIP 37 filter by\n"
    "MurmurHash3; a pybloom_live file by MD5, XXH3-128 or the SHA family), and bloomkit's file format\n"
    "1.x hashes with XXH3-64 only. A filter cannot be re-hashed without its keys, and a file answering\n"
    "with the other hash would not be a bloomkit 1.x file. So convert checks FILE, says what it is and\n"
    "what a conversion would change, writes nothing, and exits 2 with the way to a bloomkit filter:\n"
    "rebuild it from the keys (`bloomkit build OUT < keys`; for a pybloom_live file,\n"
    "bloomkit.compat's to_bloomkit(keys) in Python), and meanwhile query it where it is (`bloomkit\n"
    "parquet query`, `bloomkit bip37 query`, bloomkit.compat.load_pybloom_live).\n"
    "\n"
    "FILE's format is recognised (a Parquet file by its magic, a Parquet filter blob as `bloomkit\n"
    "parquet export` writes, a bloomkit filter, a BIP 37 payload, a pybloom_live file by its layout);\n"
    "--from names it.\n"
    "\n"
    "Options:\n"
    "  -o, --output OUT   the bloomkit filter wanted (never written: see above)\n"
    "  -c, --column C     FILE is a Parquet file: its column C's filters\n"
    "      --from F       FILE's format: parquet, bip37 or pybloom_live\n"
    "  -h, --help         this help\n"
    "\n"
    "Exit status: 2: FILE cannot be converted (the reason and the way to rebuild on standard error),\n"
    "or it is missing or damaged.\n";

enum { V_HELP = 3100, V_OUTPUT, V_COLUMN, V_FROM };

static const cli_opt opts[] = {
    { "help", 'h', false, V_HELP }, { "output", 'o', true, V_OUTPUT }, { "column", 'c', true, V_COLUMN },
    { "from", 0, true, V_FROM },    CLI_OPTS_END,
};

enum fmt { F_UNKNOWN, F_PARQUET, F_BIP37, F_PYBLOOM, F_NATIVE };

/* The first bytes of FILE (up to cap) and its size; false after printing why. */
static bool read_head(const char *path, uint8_t *buf, size_t cap, size_t *got, uint64_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cli_err_errno(path, "cannot open"), false;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return cli_err("%s: not a regular file", path), false;
    }
    *size = (uint64_t)st.st_size;
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            cli_err_errno(path, "read failed");
            close(fd);
            return false;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    *got = n;
    return true;
}

/* pybloom_live's BloomFilter.tofile: "<dQQQQ" (error rate, slices, bits per slice, capacity, count),
 * then the bits, padded to whole bytes. */
static bool looks_pybloom(const uint8_t *b, size_t n, uint64_t size)
{
    if (n < 40) return false;
    double p;
    uint64_t k, bits;
    memcpy(&p, b, 8);
    memcpy(&k, b + 8, 8);
    memcpy(&bits, b + 16, 8);
    if (!(p > 0.0 && p < 1.0) || k == 0 || k > 1024 || bits == 0 || bits > (UINT64_C(1) << 40)) return false;
    return size == 40 + (k * bits + 7) / 8;
}

/* pybloom_live's ScalableBloomFilter.tofile: "<idQd" (scale, ratio, initial capacity, error rate), the
 * number of sub-filters ("<l"), their sizes ("<Q" each), then the sub-filters, to the end. */
static bool looks_pybloom_scalable(const uint8_t *b, size_t n, uint64_t size)
{
    if (n < 32) return false;
    int32_t scale, count;
    double ratio, p;
    memcpy(&scale, b, 4);
    memcpy(&ratio, b + 4, 8);
    memcpy(&p, b + 20, 8);
    memcpy(&count, b + 28, 4);
    if (scale < 1 || !(ratio > 0.0 && ratio <= 1.0) || !(p > 0.0 && p < 1.0) || count < 0) return false;
    uint64_t need = 32 + 8 * (uint64_t)count;
    if (need > n) return false; /* a size table longer than the head read: not told apart */
    for (int32_t i = 0; i < count; i++) {
        uint64_t sz;
        memcpy(&sz, b + 32 + 8 * (size_t)i, 8);
        if (sz > size) return false;
        need += sz;
    }
    return need == size;
}

static enum fmt parse_from(const char *s)
{
    if (strcmp(s, "parquet") == 0) return F_PARQUET;
    if (strcmp(s, "bip37") == 0) return F_BIP37;
    if (strcmp(s, "pybloom_live") == 0 || strcmp(s, "pybloom") == 0) return F_PYBLOOM;
    return F_UNKNOWN;
}

static int run(int argc, char **argv)
{
    const char *path = NULL, *out = NULL, *column = NULL, *from = NULL, *val;
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    int id;
    while ((id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: return CLI_EXIT_ERR;
        case V_HELP: return cli_help("convert");
        case V_OUTPUT: out = val; break;
        case V_COLUMN: column = val; break;
        case V_FROM: from = val; break;
        case CLI_OPT_OPERAND:
            if (path) return cli_err("unexpected argument '%s' (one FILE; see: bloomkit convert --help)", val);
            path = val;
            break;
        }
    }
    if (!path) return cli_err("needs a FILE (see: bloomkit convert --help)");
    enum fmt f = F_UNKNOWN;
    if (from && (f = parse_from(from)) == F_UNKNOWN)
        return cli_err("unknown --from '%s': parquet, bip37 or pybloom_live", from);
    uint8_t head[4096];
    size_t n;
    uint64_t size;
    if (!read_head(path, head, sizeof head, &n, &size)) return CLI_EXIT_ERR;
    static const uint8_t magic[8] = { 0x89, 'B', 'K', 'F', '\r', '\n', 0x1a, '\n' };
    bool blob = false; /* a Parquet filter blob (bloomkit parquet export's output) */
    if (f == F_UNKNOWN) {
        if (n >= 4 && memcmp(head, "PAR1", 4) == 0) f = F_PARQUET;
        else if (n >= 8 && memcmp(head, magic, 8) == 0) f = F_NATIVE;
        else if (looks_pybloom(head, n, size) || looks_pybloom_scalable(head, n, size)) f = F_PYBLOOM;
    }
    if (f == F_UNKNOWN || (f == F_PARQUET && !column) || f == F_BIP37) {
        /* the whole file, for the BIP 37 parser and the Parquet blob's */
        if (size > ((uint64_t)1 << 30)) {
            if (f == F_UNKNOWN) return cli_err("%s: not a format convert knows; name it with --from", path);
        } else {
            uint8_t *buf = malloc(size ? (size_t)size : 1);
            if (!buf) return cli_err("out of memory");
            size_t got;
            uint64_t sz;
            if (!read_head(path, buf, (size_t)size, &got, &sz)) {
                free(buf);
                return CLI_EXIT_ERR;
            }
            char why[200];
            size_t off, bytes;
            bool is_blob = bk_parquet_sbbf_parse(buf, got, &off, &bytes, NULL, 0) == BK_OK;
            bk_status s = bk_bip37_parse_problem(buf, got, why, sizeof why);
            free(buf);
            if (is_blob && (f == F_UNKNOWN || f == F_PARQUET)) {
                f = F_PARQUET;
                blob = true;
            } else if (f == F_UNKNOWN && s == BK_OK) {
                f = F_BIP37;
            } else if (f == F_BIP37 && s != BK_OK) {
                return cli_err("%s: not a valid BIP 37 filter: %s", path, why);
            }
        }
    }
    if (column && f != F_PARQUET) return cli_err("%s: --column is for a Parquet file", path);
    const char *to = out ? out : "OUT";
    switch (f) {
    case F_PARQUET: {
        if (blob)
            return cli_err("%s: a Parquet split-block filter cannot become a bloomkit filter: its bits were set by "
                           "XXH64 of each value's plain encoding with Parquet's own salts, and bloomkit's file "
                           "format 1.x hashes with XXH3-64 only (the blocks are the same shape, the bits are not). "
                           "Rebuild from the values: bloomkit build %s --type blocked < values; query this filter "
                           "where it is: bloomkit parquet query %s --type T", path, to, path);
        if (!column) return cli_err("%s: a Parquet file: name the column with --column C", path);
        if (!cli_parquet_check(path, column)) return CLI_EXIT_ERR; /* no filter, or a damaged one */
        return cli_err("%s: column %s's split-block filters cannot become a bloomkit filter: their bits were set "
                       "by XXH64 of each value's plain encoding with Parquet's own salts, and bloomkit's file "
                       "format 1.x hashes with XXH3-64 only (the blocks are the same shape, the bits are not). "
                       "Rebuild from the column's values: bloomkit build %s --type blocked < values; query "
                       "these filters where they are: bloomkit parquet query %s --column %s",
                       path, column, to, path, column);
    }
    case F_BIP37:
        return cli_err("%s: a BIP 37 filter cannot become a bloomkit filter: its bits were set by MurmurHash3 "
                       "(seed i * 0xFBA4C795 + nTweak per hash function), and bloomkit's file format 1.x hashes "
                       "with XXH3-64 only. Rebuild from the keys: bloomkit build %s < keys; query it where it "
                       "is: bloomkit bip37 query %s", path, to, path);
    case F_PYBLOOM:
        if (!looks_pybloom(head, n, size) && !looks_pybloom_scalable(head, n, size))
            return cli_err("%s: not a pybloom_live file (neither a BloomFilter's nor a ScalableBloomFilter's layout)",
                           path);
        return cli_err("%s: a pybloom_live filter cannot become a bloomkit filter: its bits were set by "
                       "pybloom_live's hashes (MD5, XXH3-128 or the SHA family, by its size), and bloomkit's file "
                       "format 1.x hashes with XXH3-64 only. Rebuild from the keys: in Python, "
                       "bloomkit.compat.load_pybloom_live(path).to_bloomkit(keys) (the same capacity and error "
                       "rate), or bloomkit build %s < keys", path, to);
    case F_NATIVE:
        return cli_err("%s: already a bloomkit filter; nothing to convert (a Parquet filter of the same keys: "
                       "bloomkit parquet export)", path);
    case F_UNKNOWN: break;
    }
    return cli_err("%s: not a format convert knows (a Parquet file, a BIP 37 payload, a pybloom_live file); "
                   "name it with --from", path);
}

const cli_command cli_cmd_convert = {
    "convert", run, "FILE [-o OUT] [--column C]", "whether another system's filter can become a bloomkit one",
    help,
};
