/* bloomkit parquet: query and inspect the split-block Bloom filters of a Parquet file's column. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit parquet query FILE --column C [KEY...] [--hex] [--null] [--keep-cr] [-q]\n"
    "       bloomkit parquet info FILE --column C [--json]\n"
    "\n"
    "Reads the split-block Bloom filters a Parquet file carries for column C (its names joined by\n"
    "'.'), one per row group, and answers as a Parquet reader's filter check does: a key is \"absent\"\n"
    "when every row group's filter excludes it, else \"present\" (a row group without a filter cannot\n"
    "exclude anything). Keys are the arguments, or else one per line from standard input, written as\n"
    "the column's type reads: decimal integers for INT32 and INT64, decimal numbers for FLOAT and\n"
    "DOUBLE (the value's exact bits are hashed: 0 and -0 differ), the bytes themselves for BYTE_ARRAY\n"
    "and FIXED_LEN_BYTE_ARRAY (a UUID as 8-4-4-4-12 hex digits for a 16-byte column); --hex reads\n"
    "byte keys in hexadecimal. info prints the column's physical type and each row group's filter.\n"
    "A file without a filter for the column, or with a damaged footer or filter, is an error.\n"
    "\n"
    "Options:\n"
    "  -c, --column C        the column (required)\n"
    "  -x, --hex             query: byte keys are hexadecimal\n"
    "  -0, --null            query: keys end at NUL bytes (and output records too)\n"
    "      --keep-cr         query: keep a trailing \\r on input lines\n"
    "  -q, --quiet           query: print nothing; only the exit status answers\n"
    "      --json            info: one JSON object\n"
    "  -h, --help            this help\n"
    "\n"
    "Exit status: 0 success (query: every key present); 1 query: some key absent; 2 an error.\n"
    "\n"
    "Example: bloomkit parquet query events.parquet --column url https://example.com/\n";

enum { P_HELP = 3000, P_COLUMN, P_HEX, P_NULL, P_KEEP_CR, P_QUIET, P_JSON };

static const cli_opt opts[] = {
    { "help", 'h', false, P_HELP },   { "column", 'c', true, P_COLUMN }, { "hex", 'x', false, P_HEX },
    { "null", '0', false, P_NULL },   { "keep-cr", 0, false, P_KEEP_CR }, { "quiet", 'q', false, P_QUIET },
    { "json", 0, false, P_JSON },     CLI_OPTS_END,
};

static const char *type_name(bk_parquet_type t)
{
    static const char *const n[] = { "BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
                                     "FIXED_LEN_BYTE_ARRAY" };
    return (unsigned)t < 8 ? n[t] : "unknown";
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Hex digits (dashes skipped when `dashes`) into out (cap bytes); -1 on a bad digit or overflow. */
static long unhex(const uint8_t *s, size_t len, bool dashes, uint8_t *out, size_t cap)
{
    size_t n = 0;
    int hi = -1;
    for (size_t i = 0; i < len; i++) {
        if (dashes && s[i] == '-') continue;
        int v = hexval(s[i]);
        if (v < 0) return -1;
        if (hi < 0) {
            hi = v;
            continue;
        }
        if (n >= cap) return -1;
        out[n++] = (uint8_t)(hi << 4 | v);
        hi = -1;
    }
    return hi < 0 ? (long)n : -1;
}

typedef struct {
    const bk_parquet_column *c;
    bool hex;
    uint8_t *buf;
    size_t cap;
} keyconv;

/* The key's PLAIN encoding, or NULL after printing why (index: the key's number, from 1). */
static const uint8_t *to_plain(keyconv *k, const uint8_t *s, size_t len, size_t *out, uint64_t index)
{
    bk_parquet_type t = bk_parquet_physical_type(k->c);
    char tmp[128];
    if (t == BK_PARQUET_INT32 || t == BK_PARQUET_INT64 || t == BK_PARQUET_FLOAT || t == BK_PARQUET_DOUBLE) {
        if (len == 0 || len >= sizeof tmp)
            return cli_err("key %llu: not a number for a %s column", (unsigned long long)index, type_name(t)), NULL;
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        char *end;
        errno = 0;
        if (t == BK_PARQUET_INT32 || t == BK_PARQUET_INT64) {
            long long v = strtoll(tmp, &end, 10);
            if (*end || errno || (t == BK_PARQUET_INT32 && (v < INT32_MIN || v > INT32_MAX)))
                return cli_err("key %llu: '%s' is not a %s", (unsigned long long)index, tmp,
                               t == BK_PARQUET_INT32 ? "32-bit integer" : "64-bit integer"),
                       NULL;
            if (t == BK_PARQUET_INT32) {
                int32_t x = (int32_t)v;
                memcpy(k->buf, &x, 4);
                *out = 4;
            } else {
                int64_t x = v;
                memcpy(k->buf, &x, 8);
                *out = 8;
            }
        } else {
            double v = strtod(tmp, &end);
            if (*end || end == tmp)
                return cli_err("key %llu: '%s' is not a number", (unsigned long long)index, tmp), NULL;
            if (t == BK_PARQUET_FLOAT) {
                float x = (float)v;
                memcpy(k->buf, &x, 4);
                *out = 4;
            } else {
                memcpy(k->buf, &v, 8);
                *out = 8;
            }
        }
        return k->buf;
    }
    if (t != BK_PARQUET_BYTE_ARRAY && t != BK_PARQUET_FIXED_LEN_BYTE_ARRAY)
        return cli_err("a %s column has no Bloom filter a key can be checked against", type_name(t)), NULL;
    const uint8_t *p = s;
    size_t n = len;
    uint32_t tl = bk_parquet_type_length(k->c);
    bool uuid = t == BK_PARQUET_FIXED_LEN_BYTE_ARRAY && tl == 16 && !k->hex && len == 36 && s[8] == '-' &&
                s[13] == '-' && s[18] == '-' && s[23] == '-';
    if (k->hex || uuid) {
        if (len / 2 + 1 > k->cap) {
            uint8_t *nb = realloc(k->buf, len / 2 + 1);
            if (!nb) return cli_err("out of memory"), NULL;
            k->buf = nb;
            k->cap = len / 2 + 1;
        }
        long r = unhex(s, len, uuid, k->buf, k->cap);
        if (r < 0) return cli_err("key %llu: not hexadecimal", (unsigned long long)index), NULL;
        p = k->buf;
        n = (size_t)r;
    }
    if (t == BK_PARQUET_FIXED_LEN_BYTE_ARRAY && n != tl)
        return cli_err("key %llu: %zu bytes; the column's values have %u%s", (unsigned long long)index, n, tl,
                       tl == 16 ? " (a UUID: 8-4-4-4-12 hex digits)" : ""),
               NULL;
    *out = n;
    return p;
}

static bk_parquet_column *open_column(const char *path, const char *column)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cli_err_errno(path, "cannot open"), NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        cli_err_errno(path, "cannot stat");
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return cli_err("%s: not a regular file", path), NULL;
    }
    size_t len = (size_t)st.st_size;
    void *m = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (len && m == MAP_FAILED) return cli_err_errno(path, "cannot map"), NULL;
    bk_parquet_column *c = NULL;
    char why[256];
    bk_status s = bk_parquet_open(len ? m : "", len, column, NULL, &c, why, sizeof why);
    if (len) munmap(m, len);
    if (s != BK_OK) return cli_err("%s: %s", path, why), NULL;
    return c;
}

static int query_key(const bk_parquet_column *c, keyconv *kc, cli_out *out, bool quiet, char end,
                     const uint8_t *raw, size_t raw_len, uint64_t index, uint64_t *absent)
{
    size_t n;
    const uint8_t *p = to_plain(kc, raw, raw_len, &n, index);
    if (!p) return -1;
    uint64_t h = bk_parquet_hash(p, n);
    bool present = false;
    for (size_t rg = 0; rg < bk_parquet_row_groups(c) && !present; rg++)
        present = bk_parquet_contains_hash(c, rg, h) != 0;
    *absent += !present;
    if (!quiet) {
        cli_out_put(out, raw, raw_len);
        if (present) cli_out_put(out, "\tpresent", 8);
        else cli_out_put(out, "\tabsent", 7);
        cli_out_put(out, &end, 1);
    }
    return 0;
}

static int run(int argc, char **argv)
{
    const char *action = NULL, *path = NULL, *column = NULL, *val;
    char **keys = calloc((size_t)argc, sizeof *keys);
    if (!keys) return cli_err("out of memory");
    size_t nkeys = 0;
    bool hex = false, quiet = false, json = false, key_opts = false;
    cli_reader_opts ro = { 0 };
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    int id, rc = -1;
    while (rc < 0 && (id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: rc = CLI_EXIT_ERR; break;
        case P_HELP: rc = cli_help("parquet"); break;
        case P_COLUMN: column = val; break;
        case P_HEX: hex = key_opts = true; break;
        case P_NULL: ro.null_delim = key_opts = true; break;
        case P_KEEP_CR: ro.keep_cr = key_opts = true; break;
        case P_QUIET: quiet = key_opts = true; break;
        case P_JSON: json = true; break;
        case CLI_OPT_OPERAND:
            if (!action) action = val;
            else if (!path) path = val;
            else keys[nkeys++] = (char *)val;
            break;
        }
    }
    if (rc >= 0) goto out;
    if (!action || (strcmp(action, "query") != 0 && strcmp(action, "info") != 0)) {
        rc = action ? cli_err("unknown action '%s': query or info (see: bloomkit parquet --help)", action)
                    : cli_err("needs an action: query or info (see: bloomkit parquet --help)");
        goto out;
    }
    bool is_query = strcmp(action, "query") == 0;
    if (!path) {
        rc = cli_err("%s needs a FILE (see: bloomkit parquet --help)", action);
        goto out;
    }
    if (!column) {
        rc = cli_err("%s needs --column C", action);
        goto out;
    }
    if (!is_query && (nkeys || key_opts)) {
        rc = cli_err("info takes no keys and no key options");
        goto out;
    }
    if (is_query && json) {
        rc = cli_err("--json is an option of info");
        goto out;
    }
    bk_parquet_column *c = open_column(path, column);
    if (!c) {
        rc = CLI_EXIT_ERR;
        goto out;
    }
    if (!is_query) {
        size_t rgs = bk_parquet_row_groups(c);
        if (json) {
            printf("{\"file\":");
            cli_json_string(stdout, path);
            printf(",\"column\":");
            cli_json_string(stdout, column);
            printf(",\"physical_type\":\"%s\",\"type_length\":%u,\"row_groups\":%zu,\"filters\":%zu,"
                   "\"filter_bytes\":[", type_name(bk_parquet_physical_type(c)), bk_parquet_type_length(c), rgs,
                   bk_parquet_filters(c));
            for (size_t i = 0; i < rgs; i++) printf("%s%zu", i ? "," : "", bk_parquet_filter_bytes(c, i));
            printf("]}\n");
        } else {
            printf("file:            %s\n", path);
            printf("format:          Parquet split-block Bloom filters (XXH64 of the plain encoding)\n");
            printf("column:          %s\n", column);
            printf("physical type:   %s", type_name(bk_parquet_physical_type(c)));
            if (bk_parquet_type_length(c)) printf(" (%u bytes)", bk_parquet_type_length(c));
            printf("\nrow groups:      %zu, %zu with a filter\n", rgs, bk_parquet_filters(c));
            for (size_t i = 0; i < rgs; i++) {
                size_t b = bk_parquet_filter_bytes(c, i);
                if (b) printf("  row group %zu:   %zu bytes (%zu blocks)\n", i, b, b / 32);
                else printf("  row group %zu:   no filter\n", i);
            }
        }
        bk_parquet_free(c);
        rc = CLI_EXIT_OK;
        goto out;
    }
    cli_out o;
    if (!cli_out_init(&o, 1, (size_t)1 << 16)) {
        bk_parquet_free(c);
        rc = CLI_EXIT_ERR;
        goto out;
    }
    keyconv kc = { c, hex, malloc(64), 64 };
    uint64_t absent = 0, index = 0;
    char end = ro.null_delim ? '\0' : '\n';
    rc = kc.buf ? 0 : cli_err("out of memory");
    if (!rc && nkeys) {
        for (size_t i = 0; i < nkeys && !rc; i++)
            if (query_key(c, &kc, &o, quiet, end, (const uint8_t *)keys[i], strlen(keys[i]), ++index, &absent) < 0)
                rc = CLI_EXIT_ERR;
    } else if (!rc) {
        cli_reader *r = cli_reader_open(NULL, 0, &ro);
        if (!r) {
            rc = CLI_EXIT_ERR;
        } else {
            cli_batch b;
            int more;
            while (!rc && (more = cli_reader_next(r, &b)) > 0)
                for (size_t i = 0; i < b.n && !rc; i++)
                    if (query_key(c, &kc, &o, quiet, end, b.keys[i], b.lens[i], ++index, &absent) < 0)
                        rc = CLI_EXIT_ERR;
            if (!rc && more < 0) rc = CLI_EXIT_ERR;
            cli_reader_close(r);
        }
    }
    if (!cli_out_flush(&o) && !rc) rc = CLI_EXIT_ERR;
    cli_out_free(&o);
    free(kc.buf);
    bk_parquet_free(c);
    if (!rc) rc = absent ? CLI_EXIT_NO : CLI_EXIT_OK;
out:
    free(keys);
    return rc;
}

int cli_parquet_query(int argc, char **argv)
{
    char **v = calloc((size_t)argc + 2, sizeof *v);
    if (!v) return cli_err("out of memory");
    v[0] = (char *)"parquet";
    v[1] = (char *)"query";
    for (int i = 1; i < argc; i++) v[i + 1] = argv[i];
    int rc = run(argc + 1, v);
    free(v);
    return rc;
}

const cli_command cli_cmd_parquet = {
    "parquet", run, "query|info FILE --column C ...", "Bloom filters of a Parquet file's column", help,
};
