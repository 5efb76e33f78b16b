/*
 * The streaming key reader: inputs are read in large blocks (4 MiB to start), split with memchr,
 * and handed out as batches of pointers into the block, so no key is copied. Memory is the block,
 * which grows only to hold a key longer than itself (up to CLI_MAX_KEY).
 *
 * What a key is (documented in `bloomkit --help` and docs/CLI.md):
 * - line mode: the bytes up to each '\n'; one trailing '\r' is removed unless keep_cr;
 * - NUL mode: the bytes up to each '\0'; nothing is removed;
 * - keys are raw bytes: NULs (in line mode), invalid UTF-8 and so on are part of the key;
 * - an empty line is the empty key;
 * - the last key of an input needs no delimiter; a delimiter ends a key, it never starts one, so
 *   "a\nb\n" and "a\nb" both hold two keys; keys never continue across input files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define READ_BLOCK ((size_t)4 << 20)

struct cli_reader {
    char **paths;
    size_t npaths, next_path;
    char *stdin_path[1];
    int fd;
    const char *name;   /* of the open input, for messages */
    bool eof;
    uint64_t key_no;    /* keys read from the open input */
    uint8_t *buf;
    size_t cap, start, end;
    uint64_t bytes_done, total_bytes;
    uint8_t delim;
    bool strip_cr;
    const uint8_t *keys[CLI_BATCH];
    size_t lens[CLI_BATCH];
    size_t raw_lens[CLI_BATCH];
};

static const char *display_name(const char *path)
{
    return strcmp(path, "-") == 0 ? "standard input" : path;
}

cli_reader *cli_reader_open(char **paths, size_t npaths, const cli_reader_opts *o)
{
    cli_reader *r = calloc(1, sizeof *r);
    if (!r) {
        cli_err("out of memory");
        return NULL;
    }
    if (npaths == 0) {
        r->stdin_path[0] = (char *)"-";
        paths = r->stdin_path;
        npaths = 1;
    }
    r->paths = paths;
    r->npaths = npaths;
    r->fd = -1;
    r->delim = o->null_delim ? '\0' : '\n';
    r->strip_cr = !o->null_delim && !o->keep_cr;
    r->cap = READ_BLOCK;
    r->buf = malloc(r->cap);
    if (!r->buf) {
        free(r);
        cli_err("out of memory");
        return NULL;
    }
    /* Stat every input first: a missing file is reported before any work is done, and the total
     * size (when every input is a regular file) gives the progress bar its ETA. */
    uint64_t total = 0;
    bool known = true;
    for (size_t i = 0; i < npaths; i++) {
        struct stat st;
        int rc = strcmp(paths[i], "-") == 0 ? fstat(0, &st) : stat(paths[i], &st);
        if (rc != 0) {
            cli_err_errno(display_name(paths[i]), "cannot read");
            cli_reader_close(r);
            return NULL;
        }
        if (S_ISDIR(st.st_mode)) {
            cli_err("%s: cannot read: is a directory", paths[i]);
            cli_reader_close(r);
            return NULL;
        }
        if (S_ISREG(st.st_mode)) {
            total += (uint64_t)st.st_size;
            if (strcmp(paths[i], "-") == 0) {
                off_t pos = lseek(0, 0, SEEK_CUR);
                if (pos > 0 && (uint64_t)pos <= total) total -= (uint64_t)pos;
            }
        } else {
            known = false;
        }
    }
    r->total_bytes = known ? total : 0;
    return r;
}

void cli_reader_close(cli_reader *r)
{
    if (!r) return;
    if (r->fd > 0) close(r->fd);
    free(r->buf);
    free(r);
}

uint64_t cli_reader_total_bytes(const cli_reader *r) { return r->total_bytes; }
uint64_t cli_reader_bytes_done(const cli_reader *r) { return r->bytes_done; }

/* 1 opened, 0 no more inputs, -1 error. */
static int open_next(cli_reader *r)
{
    if (r->next_path >= r->npaths) return 0;
    const char *path = r->paths[r->next_path++];
    r->name = display_name(path);
    if (strcmp(path, "-") == 0) {
        r->fd = 0;
    } else {
        r->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (r->fd < 0) {
            cli_err_errno(r->name, "cannot open");
            return -1;
        }
#ifdef POSIX_FADV_SEQUENTIAL
        posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    }
    r->eof = false;
    r->key_no = 0;
    r->start = r->end = 0;
    return 1;
}

static void close_current(cli_reader *r)
{
    if (r->fd > 0) close(r->fd);
    r->fd = -1;
}

/* Reads more of the open input after the unconsumed bytes. -1 on error. */
static int refill(cli_reader *r)
{
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    if (r->end == r->cap) {
        /* one key fills the whole block: grow it */
        if (r->cap > CLI_MAX_KEY) {
            cli_err("%s: key %llu is longer than the limit of %zu MiB", r->name,
                    (unsigned long long)r->key_no + 1, CLI_MAX_KEY >> 20);
            return -1;
        }
        uint8_t *nb = realloc(r->buf, r->cap * 2);
        if (!nb) {
            cli_err("%s: out of memory for key %llu (longer than %zu MiB)", r->name,
                    (unsigned long long)r->key_no + 1, r->cap >> 20);
            return -1;
        }
        r->buf = nb;
        r->cap *= 2;
    }
    for (;;) {
        ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
        if (n < 0) {
            if (errno == EINTR) continue;
            cli_err_errno(r->name, "read failed");
            return -1;
        }
        if (n == 0) r->eof = true;
        r->end += (size_t)n;
        r->bytes_done += (uint64_t)n;
        return 0;
    }
}

int cli_reader_next(cli_reader *r, cli_batch *b)
{
    size_t n = 0;
    b->keys = r->keys;
    b->lens = r->lens;
    b->raw_lens = r->raw_lens;
    b->last_unterminated = false;
    for (;;) {
        if (r->fd < 0) {
            int o = open_next(r);
            if (o < 0) return -1;
            if (o == 0) {
                b->n = n;
                return n > 0;
            }
        }
        const uint8_t delim = r->delim;
        while (n < CLI_BATCH) {
            const uint8_t *s = r->buf + r->start;
            const uint8_t *p = memchr(s, delim, r->end - r->start);
            if (!p) break;
            size_t raw = (size_t)(p - s) + 1, len = raw - 1;
            if (r->strip_cr && len && s[len - 1] == '\r') len--;
            r->keys[n] = s;
            r->lens[n] = len;
            r->raw_lens[n] = raw;
            n++;
            r->start += raw;
        }
        if (n == CLI_BATCH) break;
        if (r->eof) {
            if (r->start < r->end) {
                const uint8_t *s = r->buf + r->start;
                size_t len = r->end - r->start;
                r->raw_lens[n] = len;
                if (r->strip_cr && s[len - 1] == '\r') len--;
                r->keys[n] = s;
                r->lens[n] = len;
                n++;
                r->start = r->end;
                b->last_unterminated = true;
            }
            close_current(r);
            if (n) break;
            continue;
        }
        if (n) break; /* hand these out before the block is compacted under them */
        if (refill(r) < 0) return -1;
    }
    r->key_no += n;
    b->n = n;
    return 1;
}
