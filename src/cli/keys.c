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
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys_impl.h"

#define READ_BLOCK ((size_t)4 << 20)

/*
 * Read-ahead (large inputs that are all regular files): a second thread reads the inputs and finds
 * the delimiters, block by block, while the caller hashes and inserts the keys of the previous
 * block. Each block holds whole keys only; the partial key at its end is carried to the next block.
 * Only regular files, whose reads never wait indefinitely, so stopping the thread early (an error
 * in the caller) is a flag and a join. Memory: RA_NBLOCKS blocks of RA_BLOCK bytes (each grows only
 * for a key longer than itself) plus 4 bytes per key of a block for the delimiter positions.
 */
#define RA_BLOCK ((size_t)2 << 20)
#define RA_NBLOCKS 3
#define RA_MIN_INPUT ((uint64_t)16 << 20) /* smaller inputs are read by the caller's thread */

typedef struct ra_block {
    uint8_t *data;
    size_t cap, len;
    uint32_t *ends;      /* offset of each key's delimiter (or of its end, for an unterminated last key) */
    size_t nends, ends_cap;
    bool unterminated;   /* the last key has no delimiter (the end of an input) */
    int status;          /* 0 keys, 1 end of all inputs, -1 error (message printed) */
    uint64_t bytes_done; /* input bytes read when the block was published */
} ra_block;

typedef struct ra {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ra_block blk[RA_NBLOCKS];
    unsigned head, tail, nfull; /* the caller takes blk[head]; the thread fills blk[tail] */
    bool stop;
    /* thread-owned */
    struct cli_reader *r;
    uint8_t *carry;
    size_t carry_len, carry_cap;
    uint64_t bytes;
    /* caller-owned */
    ra_block *cur;
    size_t cur_i;
} ra;

static bool ra_start(cli_reader *r);
static void ra_stop(cli_reader *r);
static int ra_next(cli_reader *r, cli_batch *b);

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
                if (pos > 0 && (uint64_t)pos <= total) {
                    total -= (uint64_t)pos;
                    r->stdin_base = (uint64_t)pos;
                }
            }
        } else {
            known = false;
        }
    }
    r->total_bytes = known ? total : 0;
    /* BLOOMKIT_READAHEAD=0 or 1 turns the read-ahead thread off or on (for any regular files): for
     * tests and benchmarks; by default it runs for regular-file inputs of RA_MIN_INPUT or more. */
    const char *env = getenv("BLOOMKIT_READAHEAD");
    bool want = env && *env ? strcmp(env, "0") != 0 : total >= RA_MIN_INPUT;
    if (known && want && o->hash_all) {
        r->parallel = true;
        return r;
    }
    if (known && want && !ra_start(r)) {
        cli_reader_close(r);
        return NULL;
    }
    return r;
}

void cli_reader_close(cli_reader *r)
{
    if (!r) return;
    ra_stop(r);
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
    if (r->ra) return ra_next(r, b);
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
            r->keys[n] = s;
            r->lens[n] = key_len(r, s, len);
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
                r->keys[n] = s;
                r->lens[n] = key_len(r, s, len);
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

/* ---- read-ahead thread ---- */

static bool grow(void **p, size_t *cap, size_t want, size_t elem)
{
    size_t c = *cap;
    while (c < want) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

/* Waits for a free block (NULL when told to stop). */
static ra_block *ra_acquire(ra *a)
{
    pthread_mutex_lock(&a->mu);
    while (a->nfull == RA_NBLOCKS && !a->stop) pthread_cond_wait(&a->cv, &a->mu);
    ra_block *b = a->stop ? NULL : &a->blk[a->tail];
    pthread_mutex_unlock(&a->mu);
    return b;
}

static void ra_publish(ra *a, ra_block *b)
{
    pthread_mutex_lock(&a->mu);
    b->bytes_done = a->bytes;
    a->tail = (a->tail + 1) % RA_NBLOCKS;
    a->nfull++;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* Fills blocks from one open input. 0 at its end, -1 on error (message printed), 1 when stopped. */
static int ra_file(ra *a, int fd, const char *name)
{
    cli_reader *r = a->r;
    const uint8_t delim = r->delim;
    uint64_t keys = 0;
    bool eof = false;
    a->carry_len = 0;
    while (!eof) {
        ra_block *b = ra_acquire(a);
        if (!b) return 1;
        b->status = 0;
        b->nends = 0;
        b->unterminated = false;
        if (a->carry_len > b->cap && !grow((void **)&b->data, &b->cap, a->carry_len, 1))
            return cli_err("%s: out of memory for key %llu", name, (unsigned long long)keys + 1), -1;
        memcpy(b->data, a->carry, a->carry_len);
        b->len = a->carry_len;
        size_t scan = b->len; /* the carried bytes hold no delimiter */
        for (;;) {
            if (b->len == b->cap) {
                if (b->nends) break;
                if (b->cap > CLI_MAX_KEY)
                    return cli_err("%s: key %llu is longer than the limit of %zu MiB", name,
                                   (unsigned long long)keys + 1, CLI_MAX_KEY >> 20), -1;
                if (!grow((void **)&b->data, &b->cap, b->cap * 2, 1))
                    return cli_err("%s: out of memory for key %llu", name, (unsigned long long)keys + 1), -1;
            }
            ssize_t n = read(fd, b->data + b->len, b->cap - b->len);
            if (n < 0) {
                if (errno == EINTR) continue;
                return cli_err_errno(name, "read failed"), -1;
            }
            if (n == 0) {
                eof = true;
                break;
            }
            b->len += (size_t)n;
            a->bytes += (uint64_t)n;
            for (const uint8_t *p = b->data + scan, *e = b->data + b->len, *q; (q = memchr(p, delim, (size_t)(e - p)));
                 p = q + 1) {
                if (b->nends == b->ends_cap && !grow((void **)&b->ends, &b->ends_cap, b->nends + 1, sizeof *b->ends))
                    return cli_err("out of memory"), -1;
                b->ends[b->nends++] = (uint32_t)(q - b->data);
            }
            scan = b->len;
        }
        size_t used = b->nends ? (size_t)b->ends[b->nends - 1] + 1 : 0;
        if (eof) {
            if (used < b->len) { /* the last key, without a delimiter */
                if (b->nends == b->ends_cap && !grow((void **)&b->ends, &b->ends_cap, b->nends + 1, sizeof *b->ends))
                    return cli_err("out of memory"), -1;
                b->ends[b->nends++] = (uint32_t)b->len;
                b->unterminated = true;
            }
            a->carry_len = 0;
        } else {
            a->carry_len = b->len - used;
            if (a->carry_len > a->carry_cap && !grow((void **)&a->carry, &a->carry_cap, a->carry_len, 1))
                return cli_err("out of memory"), -1;
            memcpy(a->carry, b->data + used, a->carry_len);
            b->len = used;
        }
        keys += b->nends;
        ra_publish(a, b);
    }
    return 0;
}

static void *ra_main(void *arg)
{
    ra *a = arg;
    cli_reader *r = a->r;
    int rc = 0;
    for (size_t i = 0; i < r->npaths && rc == 0; i++) {
        const char *path = r->paths[i], *name = display_name(path);
        int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            cli_err_errno(name, "cannot open");
            rc = -1;
            break;
        }
#ifdef POSIX_FADV_SEQUENTIAL
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
        rc = ra_file(a, fd, name);
        if (fd > 0) close(fd);
    }
    if (rc == 1) return NULL; /* stopped */
    ra_block *b = ra_acquire(a);
    if (b) {
        b->status = rc < 0 ? -1 : 1;
        b->nends = 0;
        ra_publish(a, b);
    }
    return NULL;
}

static bool ra_start(cli_reader *r)
{
    ra *a = calloc(1, sizeof *a);
    if (!a) return cli_err("out of memory"), false;
    a->r = r;
    a->carry_cap = 4096;
    a->carry = malloc(a->carry_cap);
    bool ok = a->carry != NULL;
    for (int i = 0; i < RA_NBLOCKS && ok; i++) {
        a->blk[i].cap = RA_BLOCK;
        a->blk[i].data = malloc(RA_BLOCK);
        a->blk[i].ends_cap = RA_BLOCK / 32;
        a->blk[i].ends = malloc(a->blk[i].ends_cap * sizeof *a->blk[i].ends);
        ok = a->blk[i].data && a->blk[i].ends;
    }
    if (ok) {
        pthread_mutex_init(&a->mu, NULL);
        pthread_cond_init(&a->cv, NULL);
        if (pthread_create(&a->thread, NULL, ra_main, a) != 0) {
            pthread_mutex_destroy(&a->mu);
            pthread_cond_destroy(&a->cv);
            ok = false;
        }
    }
    if (!ok) {
        for (int i = 0; i < RA_NBLOCKS; i++) {
            free(a->blk[i].data);
            free(a->blk[i].ends);
        }
        free(a->carry);
        free(a);
        return true; /* fall back to reading in the caller's thread */
    }
    r->ra = a;
    return true;
}

static void ra_stop(cli_reader *r)
{
    ra *a = r->ra;
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    for (int i = 0; i < RA_NBLOCKS; i++) {
        free(a->blk[i].data);
        free(a->blk[i].ends);
    }
    free(a->carry);
    free(a);
    r->ra = NULL;
}

/* The block being handed out, waiting for the thread to publish one if needed. */
static ra_block *ra_current(cli_reader *r)
{
    ra *a = r->ra;
    if (!a->cur) {
        pthread_mutex_lock(&a->mu);
        while (a->nfull == 0) pthread_cond_wait(&a->cv, &a->mu);
        a->cur = &a->blk[a->head];
        pthread_mutex_unlock(&a->mu);
        a->cur_i = 0;
        r->bytes_done = a->cur->bytes_done;
    }
    return a->cur;
}

/* The current block is done (the caller has finished with its keys): give it back. */
static void ra_release(ra *a)
{
    pthread_mutex_lock(&a->mu);
    a->head = (a->head + 1) % RA_NBLOCKS;
    a->nfull--;
    a->cur = NULL;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static int ra_next(cli_reader *r, cli_batch *b)
{
    ra *a = r->ra;
    for (;;) {
        ra_block *k = ra_current(r);
        if (k->status < 0) return -1;
        if (k->status > 0) {
            b->n = 0;
            return 0; /* the end block stays current: later calls say "end" again */
        }
        if (a->cur_i < k->nends) {
            size_t i = a->cur_i, e = i + CLI_BATCH < k->nends ? i + CLI_BATCH : k->nends, n = 0;
            size_t start = i ? (size_t)k->ends[i - 1] + 1 : 0;
            for (; i < e; i++, n++) {
                size_t end = k->ends[i], len = end - start;
                const uint8_t *s = k->data + start;
                r->keys[n] = s;
                r->raw_lens[n] = len + 1;
                r->lens[n] = key_len(r, s, len);
                start = end + 1;
            }
            if (e == k->nends && k->unterminated) {
                r->raw_lens[n - 1]--;
                b->last_unterminated = true;
            }
            a->cur_i = e;
            b->n = n;
            return 1;
        }
        ra_release(a);
    }
}
