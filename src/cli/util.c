/* Messages, clocks, human-readable numbers and the buffered output shared by the subcommands. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char *cli_cmd = NULL;

static void vmsg(const char *fmt, va_list ap)
{
    char line[4096];
    int n;
    if (cli_cmd)
        n = snprintf(line, sizeof line, "bloomkit %s: ", cli_cmd);
    else
        n = snprintf(line, sizeof line, "bloomkit: ");
    if (n < 0) n = 0;
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    size_t len = strlen(line);
    if (len == sizeof line - 1) len--;
    line[len++] = '\n';
    /* one write, so messages of concurrent processes do not interleave mid-line */
    ssize_t w = write(2, line, len);
    (void)w;
}

int cli_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
    return CLI_EXIT_ERR;
}

void cli_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
}

int cli_err_errno(const char *path, const char *what)
{
    int e = errno;
    return cli_err("%s: %s: %s", path, what, strerror(e));
}

const char *cli_full_advice(const bk_filter *f, const char *path, char *buf, size_t len)
{
    if (f && path && bk_filter_type(f) == BK_TYPE_QUOTIENT) {
        snprintf(buf, len, "double its slots with bloomkit grow %s (every key stays in), or rebuild it larger", path);
        return buf;
    }
    return "rebuild it larger, or use a filter that grows (--type scalable, or cuckoo with --expansion)";
}

const char *cli_status_words(bk_status s)
{
    switch (s) {
    case BK_OK: return "ok";
    case BK_EINVAL: return "invalid argument";
    case BK_ENOMEM: return "out of memory";
    case BK_ETOOBIG: return "the filter would be too large (over 256 GiB); use a larger -p or a smaller -n";
    case BK_EINCOMPAT: return "the filters are not compatible (type, geometry, layout, seed or probe scheme differ)";
    case BK_ENOTFOUND: return "the key is not in the filter";
    case BK_EFULL: return "the filter is full; rebuild it larger, or use a scalable filter";
    case BK_ECORRUPT: return "damaged file: inconsistent contents";
    case BK_EVERSION: return "the file was written by a newer, incompatible version of bloomkit";
    case BK_ETYPE: return "not a filter of a type this operation accepts";
    case BK_ENOTSUP: return "this filter type does not support the operation";
    case BK_EIO: return strerror(errno ? errno : EIO);
    case BK_ECHECKSUM: return "damaged file: checksum mismatch";
    case BK_ETRUNCATED: return "damaged file: truncated";
    case BK_EEXISTS: return "the key is already present";
    case BK_EBUFSIZE: return "an output buffer is too small";
    }
    return bk_strerror(s);
}

int cli_err_status(const char *path, bk_status s)
{
    return cli_err("%s: %s", path, cli_status_words(s));
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *cli_human_count(double v, char *buf, size_t len)
{
    if (v >= 1e9)
        snprintf(buf, len, "%.2fG", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, len, "%.2fM", v / 1e6);
    else if (v >= 1e4)
        snprintf(buf, len, "%.1fk", v / 1e3);
    else
        snprintf(buf, len, "%.0f", v);
    return buf;
}

const char *cli_human_bytes(double v, char *buf, size_t len)
{
    static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%.0f B", v);
    else
        snprintf(buf, len, "%.2f %s", v, units[u]);
    return buf;
}

/* ---- buffered output ---- */

bool cli_out_init(cli_out *o, int fd, size_t cap)
{
    o->fd = fd;
    o->len = 0;
    o->cap = cap;
    o->failed = false;
    o->buf = malloc(cap);
    if (!o->buf) {
        cli_err("out of memory");
        return false;
    }
    return true;
}

static bool write_all(cli_out *o, const uint8_t *p, size_t len)
{
    while (len) {
        ssize_t w = write(o->fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (!o->failed) cli_err_errno("standard output", "write failed");
            o->failed = true;
            return false;
        }
        p += w;
        len -= (size_t)w;
    }
    return true;
}

bool cli_out_flush(cli_out *o)
{
    if (o->failed) return false;
    bool ok = write_all(o, o->buf, o->len);
    o->len = 0;
    return ok;
}

bool cli_out_write(cli_out *o, const void *data, size_t len)
{
    if (o->failed) return false;
    if (o->cap - o->len >= len) {
        memcpy(o->buf + o->len, data, len);
        o->len += len;
        return true;
    }
    if (!cli_out_flush(o)) return false;
    if (len >= o->cap) return write_all(o, data, len);
    memcpy(o->buf, data, len);
    o->len = len;
    return true;
}

void cli_out_free(cli_out *o)
{
    free(o->buf);
    o->buf = NULL;
}

const char *cli_group(uint64_t v, char *buf, size_t len)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < len; i++) {
        if (i && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = '\0';
    return buf;
}

void cli_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

const char *cli_percent(double p, char *buf, size_t len)
{
    /* enough significant digits to tell 1% from 1.004% and to show 1e-7 */
    if (p >= 0.001)
        snprintf(buf, len, "%.4g%%", p * 100);
    else
        snprintf(buf, len, "%.3g%%", p * 100);
    return buf;
}
