/* Option parsing and strict number parsing for the bloomkit command. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_getopt_init(cli_getopt *g, int argc, char **argv, const cli_opt *opts)
{
    g->argc = argc;
    g->argv = argv;
    g->i = 1; /* argv[0] is the subcommand */
    g->group = NULL;
    g->operands_only = false;
    g->opts = opts;
}

static const cli_opt *find_long(const cli_opt *opts, const char *name, size_t len)
{
    for (const cli_opt *o = opts; o->name || o->letter; o++)
        if (o->name && strlen(o->name) == len && memcmp(o->name, name, len) == 0) return o;
    return NULL;
}

static const cli_opt *find_short(const cli_opt *opts, char c)
{
    for (const cli_opt *o = opts; o->name || o->letter; o++)
        if (o->letter == c) return o;
    return NULL;
}

static int short_option(cli_getopt *g, const char **val)
{
    char c = *g->group++;
    const cli_opt *o = find_short(g->opts, c);
    if (!o) {
        g->group = NULL;
        cli_err("unknown option -%c (see: bloomkit %s --help)", c, cli_cmd);
        return CLI_OPT_ERROR;
    }
    if (o->has_arg) {
        if (*g->group) {
            *val = g->group;
        } else if (g->i < g->argc) {
            *val = g->argv[g->i++];
        } else {
            g->group = NULL;
            cli_err("option -%c needs a value (see: bloomkit %s --help)", c, cli_cmd);
            return CLI_OPT_ERROR;
        }
        g->group = NULL;
    } else {
        *val = NULL;
        if (!*g->group) g->group = NULL;
    }
    return o->id;
}

int cli_getopt_next(cli_getopt *g, const char **val)
{
    *val = NULL;
    if (g->group) return short_option(g, val);
    if (g->i >= g->argc) return CLI_OPT_END;
    const char *a = g->argv[g->i++];
    if (g->operands_only || a[0] != '-' || a[1] == '\0') {
        *val = a;
        return CLI_OPT_OPERAND;
    }
    if (a[1] == '-') {
        if (a[2] == '\0') {
            g->operands_only = true;
            return cli_getopt_next(g, val);
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const cli_opt *o = find_long(g->opts, name, len);
        if (!o) {
            cli_err("unknown option --%.*s (see: bloomkit %s --help)", (int)len, name, cli_cmd);
            return CLI_OPT_ERROR;
        }
        if (o->has_arg) {
            if (eq) {
                *val = eq + 1;
            } else if (g->i < g->argc) {
                *val = g->argv[g->i++];
            } else {
                cli_err("option --%s needs a value (see: bloomkit %s --help)", o->name, cli_cmd);
                return CLI_OPT_ERROR;
            }
        } else if (eq) {
            cli_err("option --%s takes no value", o->name);
            return CLI_OPT_ERROR;
        }
        return o->id;
    }
    g->group = a + 1;
    return short_option(g, val);
}

/* ---- numbers ---- */

static const char COUNT_FORMS[] = "write a whole number such as 1000000, 1,000,000, 10M, 2.5k or 1e7";

/* Digits with optional thousands separators (',' or '_', one kind, groups of three after the first
 * group of one to three). Copies the bare digits to dst; returns the characters consumed, 0 if the
 * grouping is wrong or there are no digits. */
static size_t scan_grouped_digits(const char *s, char *dst, size_t cap, size_t *ndigits)
{
    size_t i = 0, n = 0, group = 0;
    char sep = 0;
    bool seen_sep = false;
    while (s[i]) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            if (n + 1 >= cap) return 0;
            dst[n++] = c;
            group++;
            i++;
        } else if ((c == ',' || c == '_') && (sep == 0 || sep == c)) {
            if (group == 0 || (!seen_sep && group > 3) || (seen_sep && group != 3)) return 0;
            sep = c;
            seen_sep = true;
            group = 0;
            i++;
        } else {
            break;
        }
    }
    if (n == 0 || (seen_sep && group != 3)) return 0;
    dst[n] = '\0';
    *ndigits = n;
    return i;
}

bool cli_parse_count(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char digits[64];
    size_t nint = 0, nfrac = 0;
    size_t i = scan_grouped_digits(s, digits, sizeof digits, &nint);
    if (i == 0 && s[0] == '.') nint = 0, digits[0] = '\0';
    else if (i == 0) goto bad;
    int exp10 = 0;
    if (s[i] == '.') {
        i++;
        while (s[i] >= '0' && s[i] <= '9') {
            if (nint + nfrac + 1 >= sizeof digits) goto toolarge;
            digits[nint + nfrac++] = s[i++];
        }
        digits[nint + nfrac] = '\0';
        exp10 -= (int)nfrac;
    }
    if (nint + nfrac == 0) goto bad;
    if (s[i] == 'e' || s[i] == 'E') {
        i++;
        int sign = 1, e = 0, ne = 0;
        if (s[i] == '+' || s[i] == '-') sign = s[i++] == '-' ? -1 : 1;
        while (s[i] >= '0' && s[i] <= '9') {
            if (e < 1000) e = e * 10 + (s[i] - '0');
            i++;
            ne++;
        }
        if (ne == 0) goto bad;
        exp10 += sign * e;
    }
    unsigned bin = 0;
    switch (s[i]) {
    case 'k': case 'K': exp10 += 3; break;
    case 'm': case 'M': exp10 += 6; break;
    case 'g': case 'G': exp10 += 9; break;
    case 't': case 'T': exp10 += 12; break;
    case '\0': break;
    default: goto bad;
    }
    if (s[i]) {
        i++;
        if (s[i] == 'i') { /* Ki, Mi, Gi, Ti: binary multiples instead */
            char u = (char)toupper((unsigned char)s[i - 1]);
            bin = u == 'K' ? 10 : u == 'M' ? 20 : u == 'G' ? 30 : 40;
            exp10 -= (int)(bin / 10 * 3);
            i++;
        }
        if (s[i]) goto bad;
    }
    /* value = digits * 10^exp10 * 2^bin, computed exactly */
    {
        const char *d = digits;
        while (*d == '0' && d[1]) d++; /* leading zeros carry no value */
        size_t nd = strlen(d);
        /* trailing zeros of the fraction move into the exponent */
        while (nd > 1 && d[nd - 1] == '0') {
            nd--;
            exp10++;
        }
        if (nd > 20) goto notwhole_or_large; /* 10^20 > 2^64: fits the 128-bit product below */
        __extension__ unsigned __int128 v = 0;
        for (size_t j = 0; j < nd; j++) v = v * 10 + (unsigned)(d[j] - '0');
        if (v == 0) {
            *out = 0;
            goto range;
        }
        v <<= bin;
        if (exp10 > 0) {
            for (int j = 0; j < exp10; j++) {
                v *= 10;
                if (v > UINT64_MAX) goto toolarge;
            }
        } else {
            for (int j = 0; j < -exp10; j++) {
                if (v % 10) goto notwhole;
                v /= 10;
            }
        }
        if (v > UINT64_MAX) goto toolarge;
        *out = (uint64_t)v;
    }
range:
    if (*out < min) {
        cli_err("%s: '%s' is too small (the least allowed is %llu)", what, s, (unsigned long long)min);
        return false;
    }
    if (*out > max) {
        cli_err("%s: '%s' is too large (the most allowed is %llu)", what, s, (unsigned long long)max);
        return false;
    }
    return true;
notwhole_or_large:
    if (exp10 >= 0) goto toolarge;
notwhole:
    cli_err("%s: '%s' is not a whole number (%s)", what, s, COUNT_FORMS);
    return false;
toolarge:
    cli_err("%s: '%s' is too large (the most allowed is %llu)", what, s, (unsigned long long)max);
    return false;
bad:
    if (s[0] == '-')
        cli_err("%s: '%s' is negative (%s)", what, s, COUNT_FORMS);
    else
        cli_err("%s: '%s' is not a count (%s)", what, s, COUNT_FORMS);
    return false;
}

/* strtod over the whole string, refusing what strtod accepts but a user did not mean: leading
 * blanks, signs where none belong, hexadecimal, inf and nan. */
static bool strict_double(const char *s, double *out)
{
    if (!((s[0] >= '0' && s[0] <= '9') || s[0] == '.' || s[0] == '-' || s[0] == '+')) return false;
    for (const char *c = s; *c; c++)
        if (!strchr("0123456789.eE+-", *c)) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v)) return false;
    if (errno == ERANGE && v != 0) return false;
    *out = v;
    return true;
}

bool cli_parse_prob(const char *what, const char *s, double *out)
{
    static const char forms[] = "write a probability such as 0.01, 1%, 0.5%, 1e-3 or 1/1000";
    size_t len = strlen(s);
    double v;
    char buf[128];
    if (len == 0 || len >= sizeof buf) {
        cli_err("%s: '%s' is not a probability (%s)", what, s, forms);
        return false;
    }
    memcpy(buf, s, len + 1);
    const char *slash = strchr(buf, '/');
    if (buf[len - 1] == '%') {
        buf[len - 1] = '\0';
        if (!strict_double(buf, &v)) goto bad;
        v /= 100.0;
    } else if (slash) {
        buf[slash - buf] = '\0';
        double a, b;
        if (!strict_double(buf, &a) || !strict_double(slash + 1, &b) || b == 0) goto bad;
        v = a / b;
    } else {
        if (!strict_double(buf, &v)) goto bad;
    }
    if (!(v > 0)) {
        cli_err("%s: '%s' must be greater than 0 (%s)", what, s, forms);
        return false;
    }
    if (!(v < 1)) {
        if (v == 1 && !strchr(s, '%'))
            cli_err("%s: '%s' must be less than 1; for one percent write 1%% or 0.01", what, s);
        else
            cli_err("%s: '%s' must be less than 1 (100%%) (%s)", what, s, forms);
        return false;
    }
    *out = v;
    return true;
bad:
    cli_err("%s: '%s' is not a probability (%s)", what, s, forms);
    return false;
}

bool cli_parse_u64(const char *what, const char *s, uint64_t *out)
{
    int base = 10;
    const char *p = s;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    }
    bool ok = *p != '\0';
    for (const char *c = p; *c && ok; c++) ok = base == 16 ? isxdigit((unsigned char)*c) : isdigit((unsigned char)*c);
    if (!ok) {
        cli_err("%s: '%s' is not an unsigned integer (decimal, or hexadecimal with 0x)", what, s);
        return false;
    }
    errno = 0;
    unsigned long long v = strtoull(p, NULL, base);
    if (errno == ERANGE) {
        cli_err("%s: '%s' is too large (the most allowed is 2^64-1)", what, s);
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_double(const char *what, const char *s, double min, double max, double *out)
{
    double v;
    if (!strict_double(s, &v)) {
        cli_err("%s: '%s' is not a number", what, s);
        return false;
    }
    if (v < min || v > max) {
        cli_err("%s: '%s' is out of range (allowed: %g to %g)", what, s, min, max);
        return false;
    }
    *out = v;
    return true;
}

int cli_parse_file_keys(int argc, char **argv, const char *cmd, cli_file_keys *a)
{
    static const cli_opt opts[] = {
        CLI_OPTS_COMMON,
        CLI_OPTS_KEYS,
        { "quiet", 'q', false, OPT_QUIET },
        CLI_OPTS_END,
    };
    static const cli_opt add_opts[] = {
        CLI_OPTS_COMMON,
        CLI_OPTS_KEYS,
        { "quiet", 'q', false, OPT_QUIET },
        { "strict", 0, false, OPT_STRICT },
        CLI_OPTS_END,
    };
    memset(a, 0, sizeof *a);
    if (!(a->keys = calloc((size_t)argc, sizeof *a->keys))) return cli_err("out of memory");
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, strcmp(cmd, "add") == 0 ? add_opts : opts);
    const char *val;
    int id, rc = -1;
    while (rc < 0 && (id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: rc = CLI_EXIT_ERR; break;
        case OPT_HELP: rc = cli_help(cmd); break;
        case OPT_NULL: a->ro.null_delim = true; break;
        case OPT_KEEP_CR: a->ro.keep_cr = true; break;
        case OPT_QUIET: a->quiet = true; break;
        case OPT_STRICT: a->strict = true; break;
        case CLI_OPT_OPERAND:
            if (!a->path)
                a->path = val;
            else
                a->keys[a->nkeys++] = (char *)val;
            break;
        }
    }
    if (rc < 0 && !a->path) rc = cli_err("needs a FILE (see: bloomkit %s --help)", cmd);
    if (rc >= 0) {
        free(a->keys);
        a->keys = NULL;
    }
    return rc;
}

bool cli_sketch_begin(cli_sketch_args *a, int argc, char **argv, const cli_opt *opts, uint64_t max_width,
                      uint64_t max_depth)
{
    memset(a, 0, sizeof *a);
    a->max_width = max_width;
    a->max_depth = max_depth;
    if (!(a->operands = calloc((size_t)argc, sizeof *a->operands))) {
        cli_err("out of memory");
        return false;
    }
    cli_getopt_init(&a->g, argc, argv, opts);
    return true;
}

/* One option of CLI_OPTS_SKETCH (or an operand): 1 taken, 0 not one of them, -1 bad value (said). */
static int sketch_option(cli_sketch_args *a, int id, const char *val)
{
    switch (id) {
    case OPT_NULL: a->ro.null_delim = true; return 1;
    case OPT_KEEP_CR: a->ro.keep_cr = true; return 1;
    case OPT_QUIET: a->quiet = true; return 1;
    case OPT_SK_WIDTH: return cli_parse_count("--width", val, 1, a->max_width, &a->width) ? 1 : -1;
    case OPT_SK_DEPTH: return cli_parse_count("--depth", val, 1, a->max_depth, &a->depth) ? 1 : -1;
    case OPT_SEED: return cli_parse_u64("--seed", val, &a->seed) ? 1 : -1;
    case CLI_OPT_OPERAND: a->operands[a->n++] = (char *)val; return 1;
    default: return 0;
    }
}

int cli_sketch_next(cli_sketch_args *a, const char **val)
{
    for (;;) {
        int id = cli_getopt_next(&a->g, val);
        if (id == CLI_OPT_END || id == CLI_OPT_ERROR) return id;
        int took = sketch_option(a, id, *val);
        if (took < 0) return CLI_OPT_ERROR;
        if (took == 0) return id;
    }
}

int cli_sketch_feed(const cli_sketch_args *a, char **files, size_t n, const char *label, cli_batch_fn fn, void *ctx,
                    bk_status *st)
{
    *st = BK_OK;
    cli_reader *r = cli_reader_open(files, n, &a->ro);
    if (!r) return -1;
    cli_progress pr;
    cli_progress_start(&pr, a->quiet, label, cli_reader_total_bytes(r));
    cli_batch b;
    int got;
    uint64_t lines = 0;
    while ((got = cli_reader_next(r, &b)) > 0) {
        if ((*st = fn(ctx, &b)) != BK_OK) break;
        lines += b.n;
        cli_progress_update(&pr, cli_reader_bytes_done(r), lines);
    }
    cli_progress_end(&pr);
    cli_reader_close(r);
    return got < 0 ? -1 : 0;
}
