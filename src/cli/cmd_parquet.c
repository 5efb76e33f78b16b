/* bloomkit parquet: query and inspect the split-block Bloom filters of a Parquet file's column, or a
 * filter blob, and export keys as a blob a Parquet writer can embed. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit parquet query FILE --column C [KEY...] [--hex] [--null] [--keep-cr] [-q]\n"
    "       bloomkit parquet query BLOB --type T [KEY...] [...]\n"
    "       bloomkit parquet info FILE --column C [--json]\n"
    "       bloomkit parquet info BLOB [--json]\n"
    "       bloomkit parquet export OUT --type T [-n N] [-p P | --bytes B] [--bits-only] [-f] [KEY...]\n"
    "\n"
    "Reads the split-block Bloom filters a Parquet file carries for column C (its names joined by\n"
    "'.'), one per row group, and answers as a Parquet reader's filter check does: a key is \"absent\"\n"
    "when every row group's filter excludes it, else \"present\" (a row group without a filter cannot\n"
    "exclude anything). Keys are the arguments, or else one per line from standard input, written as\n"
    "the column's type reads: decimal integers for INT32 and INT64, decimal numbers for FLOAT and\n"
    "DOUBLE (the value's exact bits are hashed: 0 and -0 differ), the bytes themselves for BYTE_ARRAY\n"
    "and FIXED_LEN_BYTE_ARRAY (a UUID as 8-4-4-4-12 hex digits for a 16-byte column); --hex reads\n"
    "byte keys in hexadecimal. info prints the column's physical type and each row group's filter:\n"
    "its size, the bits set, the distinct values and bits per value its fill suggests, and the\n"
    "false-positive rate it gives. A file without a filter for the column, or with a damaged footer or\n"
    "filter, is an error.\n"
    "\n"
    "export makes a filter blob a Parquet writer can embed: the Thrift BloomFilterHeader and the\n"
    "bitset (with --bits-only the bitset alone), holding the keys as values of physical type T,\n"
    "hashed with XXH64 of their plain encoding. It is sized as Parquet's writers size one: for N\n"
    "distinct values (default: the distinct keys given, counted first) at false-positive rate P\n"
    "(default 0.01), or exactly B bytes (a multiple of 32); with -n or --bytes the keys go straight\n"
    "into the filter, unkept. query and info read such a blob (a file that is not Parquet) as one\n"
    "filter; query needs its --type.\n"
    "\n"
    "Options:\n"
    "  -c, --column C        the column of a Parquet file\n"
    "  -t, --type T          the values' physical type: BYTE_ARRAY, INT32, INT64, FLOAT, DOUBLE,\n"
    "                        FIXED_LEN_BYTE_ARRAY:L (L bytes each)\n"
    "  -x, --hex             byte keys are hexadecimal\n"
    "  -0, --null            keys end at NUL bytes (and query's output records too)\n"
    "      --keep-cr         keep a trailing \\r on input lines\n"
    "  -q, --quiet           query: print nothing; only the exit status answers\n"
    "      --json            info: one JSON object\n"
    "  -n, --values N        export: size for N distinct values\n"
    "  -p, --fpr P           export: size for false-positive rate P (default 0.01)\n"
    "      --bytes B         export: a bitset of exactly B bytes\n"
    "      --bits-only       export: write the bitset without its header\n"
    "  -f, --force           export: replace OUT\n"
    "  -h, --help            this help\n"
    "\n"
    "Exit status: 0 success (query: every key present); 1 query: some key absent; 2 an error.\n"
    "\n"
    "Examples: bloomkit parquet query events.parquet --column url https://example.com/\n"
    "          cut -f1 urls.tsv | bloomkit parquet export url.sbbf --type BYTE_ARRAY\n";

enum { P_HELP = 3000, P_COLUMN, P_HEX, P_NULL, P_KEEP_CR, P_QUIET, P_JSON, P_TYPE, P_VALUES, P_FPR, P_BYTES,
       P_BITS_ONLY, P_FORCE };

static const cli_opt opts[] = {
    { "help", 'h', false, P_HELP },     { "column", 'c', true, P_COLUMN },   { "hex", 'x', false, P_HEX },
    { "null", '0', false, P_NULL },     { "keep-cr", 0, false, P_KEEP_CR }, { "quiet", 'q', false, P_QUIET },
    { "json", 0, false, P_JSON },       { "type", 't', true, P_TYPE },      { "values", 'n', true, P_VALUES },
    { "fpr", 'p', true, P_FPR },        { "bytes", 0, true, P_BYTES },      { "bits-only", 0, false, P_BITS_ONLY },
    { "force", 'f', false, P_FORCE },   CLI_OPTS_END,
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
    bk_parquet_type type;
    uint32_t type_length;
    bool hex;
    uint8_t *buf;
    size_t cap;
} keyconv;

/* The key's PLAIN encoding, or NULL after printing why (index: the key's number, from 1). */
static const uint8_t *to_plain(keyconv *k, const uint8_t *s, size_t len, size_t *out, uint64_t index)
{
    bk_parquet_type t = k->type;
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
    uint32_t tl = k->type_length;
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

/* Maps a whole file read-only; NULL after printing why. An empty file maps to "" with *len 0. */
static uint8_t *map_file(const char *path, size_t *len)
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
    *len = (size_t)st.st_size;
    void *m = *len ? mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0) : (void *)"";
    close(fd);
    if (m == MAP_FAILED) return cli_err_errno(path, "cannot map"), NULL;
    return m;
}

static void unmap_file(uint8_t *m, size_t len)
{
    if (len) munmap(m, len);
}

/* The filters a command reads: a Parquet file's column (one per row group), or one filter blob. */
typedef struct {
    bk_parquet_column *col;
    uint8_t *blob; /* the blob's bitset (a copy) */
    size_t blob_bytes, header_bytes;
} source;

static size_t src_count(const source *s)
{
    return s->col ? bk_parquet_row_groups(s->col) : 1;
}

static const uint8_t *src_bits(const source *s, size_t i, size_t *bytes)
{
    if (!s->col) {
        *bytes = s->blob_bytes;
        return s->blob;
    }
    *bytes = bk_parquet_filter_bytes(s->col, i);
    return bk_parquet_filter_bits(s->col, i);
}

static void src_free(source *s)
{
    bk_parquet_free(s->col);
    free(s->blob);
}

/* Opens path: column C of a Parquet file, or (column NULL) a filter blob. False after printing why. */
static bool src_open(source *src, const char *path, const char *column)
{
    memset(src, 0, sizeof *src);
    size_t len;
    uint8_t *m = map_file(path, &len);
    if (!m) return false;
    char why[256];
    bk_status s;
    if (column) {
        s = bk_parquet_open(m, len, column, NULL, &src->col, why, sizeof why);
        unmap_file(m, len);
        if (s != BK_OK) return cli_err("%s: %s", path, why), false;
        return true;
    }
    if (len >= 4 && memcmp(m, "PAR1", 4) == 0) {
        unmap_file(m, len);
        return cli_err("%s: a Parquet file: name the column with --column C", path), false;
    }
    size_t off = 0, bytes = 0;
    s = bk_parquet_sbbf_parse(m, len, &off, &bytes, why, sizeof why);
    if (s == BK_OK) {
        src->blob = malloc(bytes);
        if (src->blob) memcpy(src->blob, m + off, bytes);
        src->blob_bytes = bytes;
        src->header_bytes = off;
    }
    unmap_file(m, len);
    if (s != BK_OK)
        return cli_err("%s: neither a Parquet file (no PAR1 magic) nor a Parquet filter blob: %s", path, why), false;
    if (!src->blob) return cli_err("out of memory"), false;
    return true;
}

/* "BYTE_ARRAY", "int64", "FIXED_LEN_BYTE_ARRAY:16", ... False after printing why. */
static bool parse_type(const char *s, bk_parquet_type *t, uint32_t *len)
{
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);
    for (int i = BK_PARQUET_INT32; i <= BK_PARQUET_FIXED_LEN_BYTE_ARRAY; i++) {
        if (i == BK_PARQUET_INT96) continue;
        const char *name = type_name((bk_parquet_type)i);
        if (strlen(name) != n || strncasecmp(s, name, n) != 0) continue;
        *t = (bk_parquet_type)i;
        *len = 0;
        if (i == BK_PARQUET_FIXED_LEN_BYTE_ARRAY) {
            uint64_t l;
            if (!colon) return cli_err("--type FIXED_LEN_BYTE_ARRAY needs its length: FIXED_LEN_BYTE_ARRAY:L"), false;
            if (!cli_parse_count("--type's length", colon + 1, 1, INT32_MAX, &l)) return false;
            *len = (uint32_t)l;
        } else if (colon) {
            return cli_err("--type %s takes no length", name), false;
        }
        return true;
    }
    return cli_err("unknown --type '%s': BYTE_ARRAY, INT32, INT64, FLOAT, DOUBLE or FIXED_LEN_BYTE_ARRAY:L", s),
           false;
}

/* A key's hash as Parquet computes it: XXH64 of its plain encoding in the column's type. False after
 * printing why the key is not a value of that type. */
static bool key_hash(keyconv *kc, const uint8_t *raw, size_t len, uint64_t index, uint64_t *h)
{
    size_t n;
    const uint8_t *p = to_plain(kc, raw, len, &n, index);
    if (!p) return false;
    *h = bk_parquet_hash(p, n);
    return true;
}

typedef int (*key_fn)(void *ctx, const uint8_t *raw, size_t len, uint64_t index);

/* Every key: the arguments, else standard input. 0, or CLI_EXIT_ERR (message printed). */
static int each_key(char **keys, size_t nkeys, const cli_reader_opts *ro, key_fn fn, void *ctx)
{
    uint64_t index = 0;
    if (nkeys) {
        for (size_t i = 0; i < nkeys; i++)
            if (fn(ctx, (const uint8_t *)keys[i], strlen(keys[i]), ++index) < 0) return CLI_EXIT_ERR;
        return 0;
    }
    cli_reader *r = cli_reader_open(NULL, 0, ro);
    if (!r) return CLI_EXIT_ERR;
    cli_batch b;
    int more, rc = 0;
    while (!rc && (more = cli_reader_next(r, &b)) > 0)
        for (size_t i = 0; i < b.n && !rc; i++)
            if (fn(ctx, b.keys[i], b.lens[i], ++index) < 0) rc = CLI_EXIT_ERR;
    if (!rc && more < 0) rc = CLI_EXIT_ERR;
    cli_reader_close(r);
    return rc;
}

typedef struct {
    const source *src;
    keyconv *kc;
    cli_out *out;
    bool quiet;
    char end;
    uint64_t absent;
} query_ctx;

static int query_one(void *ctx, const uint8_t *raw, size_t raw_len, uint64_t index)
{
    query_ctx *q = ctx;
    uint64_t h;
    if (!key_hash(q->kc, raw, raw_len, index, &h)) return -1;
    bool present = false;
    for (size_t i = 0; i < src_count(q->src) && !present; i++) {
        size_t bytes;
        const uint8_t *bits = src_bits(q->src, i, &bytes);
        present = !bits || bk_parquet_sbbf_check(bits, bytes, h) != 0; /* no filter: cannot exclude */
    }
    q->absent += !present;
    if (!q->quiet) {
        cli_out_put(q->out, raw, raw_len);
        if (present) cli_out_put(q->out, "\tpresent", 8);
        else cli_out_put(q->out, "\tabsent", 7);
        cli_out_put(q->out, &q->end, 1);
    }
    return 0;
}

static void print_stats_json(const bk_parquet_stats *st)
{
    printf("{\"bytes\":%llu,\"blocks\":%llu,\"bits_set\":%llu,\"fill\":%.6f,\"est_values\":%.1f,"
           "\"bits_per_value\":%.3f,\"fpr\":%.6g}",
           (unsigned long long)st->bytes, (unsigned long long)st->blocks, (unsigned long long)st->bits_set,
           st->fill, st->est_values, st->bits_per_value, st->fpr);
}

static void print_stats_text(const char *label, const bk_parquet_stats *st)
{
    char pct[32], fpr[32];
    printf("%s%llu bytes (%llu blocks), %s of the bits set, ~%.0f distinct values (%.1f bits each), "
           "false-positive rate %s\n",
           label, (unsigned long long)st->bytes, (unsigned long long)st->blocks, cli_percent(st->fill, pct, sizeof pct),
           st->est_values, st->bits_per_value, cli_percent(st->fpr, fpr, sizeof fpr));
}

static int do_info(const source *src, const char *path, const char *column, bool json)
{
    size_t n = src_count(src);
    bk_parquet_stats st;
    if (json) {
        printf("{\"file\":");
        cli_json_string(stdout, path);
        if (src->col) {
            printf(",\"column\":");
            cli_json_string(stdout, column);
            printf(",\"physical_type\":\"%s\",\"type_length\":%u,\"row_groups\":%zu,\"filters\":%zu,"
                   "\"filter_bytes\":[",
                   type_name(bk_parquet_physical_type(src->col)), bk_parquet_type_length(src->col), n,
                   bk_parquet_filters(src->col));
            for (size_t i = 0; i < n; i++) printf("%s%zu", i ? "," : "", bk_parquet_filter_bytes(src->col, i));
            printf("],\"row_group_filters\":[");
            for (size_t i = 0; i < n; i++) {
                size_t bytes;
                const uint8_t *bits = src_bits(src, i, &bytes);
                if (i) printf(",");
                if (bits && bk_parquet_sbbf_stats(bits, bytes, &st) == BK_OK) print_stats_json(&st);
                else printf("null");
            }
            printf("]}\n");
        } else {
            bk_parquet_sbbf_stats(src->blob, src->blob_bytes, &st);
            printf(",\"blob\":true,\"header_bytes\":%zu,\"filter\":", src->header_bytes);
            print_stats_json(&st);
            printf("}\n");
        }
        return CLI_EXIT_OK;
    }
    printf("file:            %s\n", path);
    printf("format:          Parquet split-block Bloom filter%s (XXH64 of the plain encoding)\n",
           src->col ? "s" : ", header and bitset");
    if (!src->col) {
        bk_parquet_sbbf_stats(src->blob, src->blob_bytes, &st);
        printf("header:          %zu bytes\n", src->header_bytes);
        print_stats_text("filter:          ", &st);
        return CLI_EXIT_OK;
    }
    printf("column:          %s\n", column);
    printf("physical type:   %s", type_name(bk_parquet_physical_type(src->col)));
    if (bk_parquet_type_length(src->col)) printf(" (%u bytes)", bk_parquet_type_length(src->col));
    printf("\nrow groups:      %zu, %zu with a filter\n", n, bk_parquet_filters(src->col));
    for (size_t i = 0; i < n; i++) {
        size_t bytes;
        const uint8_t *bits = src_bits(src, i, &bytes);
        char label[48];
        snprintf(label, sizeof label, "  row group %zu:   ", i);
        if (bits && bk_parquet_sbbf_stats(bits, bytes, &st) == BK_OK) print_stats_text(label, &st);
        else printf("%sno filter\n", label);
    }
    return CLI_EXIT_OK;
}

typedef struct {
    keyconv *kc;
    uint8_t *bits; /* the bitset, when its size is known before the keys (-n, --bytes) */
    size_t bytes;
    uint64_t *h;   /* else every key's hash, to count the distinct ones first */
    size_t n, cap;
} export_ctx;

static int export_one(void *ctx, const uint8_t *raw, size_t len, uint64_t index)
{
    export_ctx *e = ctx;
    uint64_t h;
    if (!key_hash(e->kc, raw, len, index, &h)) return -1;
    e->n++;
    if (e->bits) {
        bk_parquet_sbbf_insert(e->bits, e->bytes, h);
        return 0;
    }
    if (e->n > e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 4096;
        uint64_t *nh = realloc(e->h, cap * sizeof *nh);
        if (!nh) return cli_err("out of memory (-n N sizes the filter without keeping the keys)"), -1;
        e->h = nh;
        e->cap = cap;
    }
    e->h[e->n - 1] = h;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    uint64_t values;
    double fpr;
    uint64_t bytes;
    bool bits_only, force;
} export_opts;

static int do_export(const char *out, keyconv *kc, const export_opts *o, char **keys, size_t nkeys,
                     const cli_reader_opts *ro)
{
    bool to_stdout = strcmp(out, "-") == 0;
    struct stat st;
    if (!to_stdout && !o->force && stat(out, &st) == 0)
        return cli_err("%s: exists; refusing to replace it (use --force)", out);
    /* sized by -n or --bytes: the keys go straight into the bitset; else they are counted first */
    size_t bytes = o->bytes ? (size_t)o->bytes : o->values ? bk_parquet_sbbf_bytes(o->values, o->fpr) : 0;
    uint8_t hdr[BK_PARQUET_HEADER_MAX];
    size_t hlen = 0;
    uint8_t *blob = NULL;
    export_ctx e = { kc, NULL, 0, NULL, 0, 0 };
    if (bytes) {
        hlen = o->bits_only ? 0 : bk_parquet_sbbf_header(bytes, hdr, sizeof hdr);
        if (!(blob = calloc(1, hlen + bytes))) return cli_err("out of memory");
        e.bits = blob + hlen;
        e.bytes = bytes;
    }
    int rc = each_key(keys, nkeys, ro, export_one, &e);
    if (rc) {
        free(e.h);
        free(blob);
        return rc;
    }
    char values[64];
    if (!blob) {
        if (e.n) qsort(e.h, e.n, sizeof *e.h, cmp_u64);
        size_t distinct = 0;
        for (size_t i = 0; i < e.n; i++)
            if (!i || e.h[i] != e.h[i - 1]) distinct++;
        bytes = bk_parquet_sbbf_bytes(distinct, o->fpr);
        hlen = o->bits_only ? 0 : bk_parquet_sbbf_header(bytes, hdr, sizeof hdr);
        if (!(blob = calloc(1, hlen + bytes))) {
            free(e.h);
            return cli_err("out of memory");
        }
        for (size_t i = 0; i < e.n; i++) bk_parquet_sbbf_insert(blob + hlen, bytes, e.h[i]);
        free(e.h);
        snprintf(values, sizeof values, "%zu distinct values", distinct);
    } else {
        snprintf(values, sizeof values, "%zu values", e.n);
    }
    memcpy(blob, hdr, hlen);
    bk_parquet_stats s;
    bk_parquet_sbbf_stats(blob + hlen, bytes, &s);
    bool ok = to_stdout ? cli_write_fd(1, blob, hlen + bytes, "standard output")
                        : cli_write_file(out, blob, hlen + bytes);
    free(blob);
    if (!ok) return CLI_EXIT_ERR;
    char fpr[32];
    fprintf(stderr, "bloomkit parquet: %s: %s of %s in %zu bytes (%zu blocks)%s; false-positive rate %s\n",
            to_stdout ? "standard output" : out, values, type_name(kc->type), bytes, bytes / 32,
            o->bits_only ? ", no header" : "", cli_percent(s.fpr, fpr, sizeof fpr));
    return CLI_EXIT_OK;
}

static int run(int argc, char **argv)
{
    const char *action = NULL, *path = NULL, *column = NULL, *type = NULL, *val;
    char **keys = calloc((size_t)argc, sizeof *keys);
    if (!keys) return cli_err("out of memory");
    size_t nkeys = 0;
    bool hex = false, quiet = false, json = false, key_opts = false, export_only = false, fpr_given = false;
    export_opts eo = { 0, 0.01, 0, false, false };
    cli_reader_opts ro = { 0 };
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    int id, rc = -1;
    while (rc < 0 && (id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: rc = CLI_EXIT_ERR; break;
        case P_HELP: rc = cli_help("parquet"); break;
        case P_COLUMN: column = val; break;
        case P_TYPE: type = val; break;
        case P_HEX: hex = key_opts = true; break;
        case P_NULL: ro.null_delim = key_opts = true; break;
        case P_KEEP_CR: ro.keep_cr = key_opts = true; break;
        case P_QUIET: quiet = key_opts = true; break;
        case P_JSON: json = true; break;
        case P_VALUES:
            if (!cli_parse_count("--values", val, 1, UINT64_C(1) << 40, &eo.values)) rc = CLI_EXIT_ERR;
            export_only = true;
            break;
        case P_FPR:
            if (!cli_parse_prob("--fpr", val, &eo.fpr)) rc = CLI_EXIT_ERR;
            export_only = fpr_given = true;
            break;
        case P_BYTES:
            if (!cli_parse_count("--bytes", val, 32, (uint64_t)1 << 30, &eo.bytes)) rc = CLI_EXIT_ERR;
            else if (eo.bytes % 32)
                rc = cli_err("--bytes %llu is not a multiple of 32 (the 256-bit blocks)", (unsigned long long)eo.bytes);
            export_only = true;
            break;
        case P_BITS_ONLY: eo.bits_only = export_only = true; break;
        case P_FORCE: eo.force = export_only = true; break;
        case CLI_OPT_OPERAND:
            if (!action) action = val;
            else if (!path) path = val;
            else keys[nkeys++] = (char *)val;
            break;
        }
    }
    if (rc >= 0) goto out;
    if (!action || (strcmp(action, "query") != 0 && strcmp(action, "info") != 0 && strcmp(action, "export") != 0)) {
        rc = action ? cli_err("unknown action '%s': query, info or export (see: bloomkit parquet --help)", action)
                    : cli_err("needs an action: query, info or export (see: bloomkit parquet --help)");
        goto out;
    }
    bool is_query = strcmp(action, "query") == 0, is_export = strcmp(action, "export") == 0;
    if (!path) {
        rc = cli_err("%s needs %s (see: bloomkit parquet --help)", action, is_export ? "an OUT file" : "a FILE");
        goto out;
    }
    if (!is_export && export_only) {
        rc = cli_err("-n, -p, --bytes, --bits-only and --force are options of export");
        goto out;
    }
    if (is_export && (column || json || quiet)) {
        rc = cli_err("export takes --type, not %s", column ? "--column" : json ? "--json" : "--quiet");
        goto out;
    }
    if (is_export && fpr_given && eo.bytes) {
        rc = cli_err("--bytes gives the size; -p cannot also");
        goto out;
    }
    if (!is_query && !is_export && (nkeys || key_opts || type)) {
        rc = cli_err("info takes no keys, no key options and no --type");
        goto out;
    }
    if (is_query && json) {
        rc = cli_err("--json is an option of info");
        goto out;
    }
    if (column && type) {
        rc = cli_err("--type is for a filter blob or export; a column's type is the file's");
        goto out;
    }
    if (!column && !type && (is_query || is_export)) {
        rc = cli_err(is_export ? "export needs --type T (the values' physical type)"
                               : "query needs --column C (a Parquet file) or --type T (a filter blob)");
        goto out;
    }
    keyconv kc = { BK_PARQUET_BYTE_ARRAY, 0, hex, malloc(64), 64 };
    if (!kc.buf) {
        rc = cli_err("out of memory");
        goto out;
    }
    if (type && !parse_type(type, &kc.type, &kc.type_length)) {
        rc = CLI_EXIT_ERR;
        goto out_kc;
    }
    if (is_export) {
        rc = do_export(path, &kc, &eo, keys, nkeys, &ro);
        goto out_kc;
    }
    source src;
    if (!src_open(&src, path, column)) {
        rc = CLI_EXIT_ERR;
        goto out_kc;
    }
    if (src.col) {
        kc.type = bk_parquet_physical_type(src.col);
        kc.type_length = bk_parquet_type_length(src.col);
    }
    if (!is_query) {
        rc = do_info(&src, path, column, json);
        src_free(&src);
        goto out_kc;
    }
    cli_out o;
    if (!cli_out_init(&o, 1, (size_t)1 << 16)) {
        src_free(&src);
        rc = CLI_EXIT_ERR;
        goto out_kc;
    }
    query_ctx q = { &src, &kc, &o, quiet, ro.null_delim ? '\0' : '\n', 0 };
    rc = each_key(keys, nkeys, &ro, query_one, &q);
    if (!cli_out_flush(&o) && !rc) rc = CLI_EXIT_ERR;
    cli_out_free(&o);
    src_free(&src);
    if (!rc) rc = q.absent ? CLI_EXIT_NO : CLI_EXIT_OK;
out_kc:
    free(kc.buf);
out:
    free(keys);
    return rc;
}

/* `bloomkit query|info FILE --column C ...`: the same as `bloomkit parquet query|info FILE ...`. */
int cli_parquet_action(const char *action, int argc, char **argv)
{
    char **v = calloc((size_t)argc + 2, sizeof *v);
    if (!v) return cli_err("out of memory");
    v[0] = (char *)"parquet";
    v[1] = (char *)action;
    for (int i = 1; i < argc; i++) v[i + 1] = argv[i];
    int rc = run(argc + 1, v);
    free(v);
    return rc;
}

bool cli_parquet_check(const char *path, const char *column)
{
    source s;
    if (!src_open(&s, path, column)) return false;
    src_free(&s);
    return true;
}

const cli_command cli_cmd_parquet = {
    "parquet", run, "query|info|export FILE ...", "Bloom filters of Parquet files: read, inspect, make", help,
};
