/*
 * The hash spool of `bloomkit build`: the 64-bit hash of every key read, kept until the filter can be
 * sized, with bounded memory.
 *
 * Hashes are partitioned by their top 8 bits into 256 partitions, each with a 32 KiB buffer (8 MiB in
 * all). A full buffer is appended to an unlinked temporary file as one chunk; small inputs never touch
 * the disk. Reading back goes partition by partition, in the order of the hashes' top bits, which is
 * the order of the filter's memory for every type that picks a block or bucket by multiply-shift of
 * the hash (blocked, cuckoo, the first probe of the classic filter): inserts then walk the filter
 * sequentially instead of at random. A partition can also be read sorted with exact duplicates
 * removed (equal 64-bit hashes: the same key), for the types that count occurrences; that takes one
 * partition in memory at a time, about 8 bytes x keys / 256 (times two while sorting).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"

#define NPART 256
#define PBUF 4096 /* hashes per partition buffer: 32 KiB chunks */

struct cli_spool {
    uint64_t *buf;            /* NPART * PBUF */
    uint32_t fill[NPART];
    uint64_t part_total[NPART];
    int fd;
    char dir[PATH_MAX];
    uint64_t total, file_bytes;
    /* chunks in the file: offsets, linked per partition */
    uint64_t *chunk_off;
    uint32_t *chunk_next;
    size_t nchunks, chunk_cap;
    uint32_t head[NPART], tail[NPART];
    /* reading back */
    uint32_t next_part;
    uint64_t *work, *tmp;
    size_t work_cap;
    void *map;
    size_t map_len;
};

#define NO_CHUNK UINT32_MAX

cli_spool *cli_spool_new(const char *near_path)
{
    cli_spool *s = calloc(1, sizeof *s);
    if (!s) return cli_err("out of memory"), NULL;
    s->buf = malloc((size_t)NPART * PBUF * sizeof *s->buf);
    if (!s->buf) {
        free(s);
        return cli_err("out of memory"), NULL;
    }
    s->fd = -1;
    for (int p = 0; p < NPART; p++) s->head[p] = s->tail[p] = NO_CHUNK;
    const char *slash = strrchr(near_path, '/');
    if (!slash)
        snprintf(s->dir, sizeof s->dir, ".");
    else if (slash == near_path)
        snprintf(s->dir, sizeof s->dir, "/");
    else
        snprintf(s->dir, sizeof s->dir, "%.*s", (int)(slash - near_path), near_path);
    return s;
}

void cli_spool_free(cli_spool *s)
{
    if (!s) return;
    if (s->map) munmap(s->map, s->map_len);
    if (s->fd >= 0) close(s->fd);
    free(s->buf);
    free(s->chunk_off);
    free(s->chunk_next);
    free(s->work);
    free(s->tmp);
    free(s);
}

uint64_t cli_spool_count(const cli_spool *s) { return s->total; }

static int open_temp(const char *dir)
{
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
#endif
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/.bloomkit-build.XXXXXX", dir);
    int t = mkstemp(path);
    if (t >= 0) unlink(path);
    return t;
}

static bool write_at(cli_spool *s, const void *data, size_t len)
{
    if (s->fd < 0) {
        s->fd = open_temp(s->dir);
        if (s->fd < 0) {
            const char *tmp = getenv("TMPDIR");
            snprintf(s->dir, sizeof s->dir, "%s", tmp && *tmp ? tmp : "/tmp");
            s->fd = open_temp(s->dir);
        }
        if (s->fd < 0) return cli_err_errno(s->dir, "cannot create the temporary spool file"), false;
    }
    const uint8_t *p = data;
    while (len) {
        ssize_t w = pwrite(s->fd, p, len, (off_t)s->file_bytes);
        if (w < 0) {
            if (errno == EINTR) continue;
            return cli_err_errno(s->dir, "writing the temporary spool file failed"), false;
        }
        p += w;
        len -= (size_t)w;
        s->file_bytes += (uint64_t)w;
    }
    return true;
}

static bool spill(cli_spool *s, uint32_t p)
{
    if (s->nchunks == s->chunk_cap) {
        size_t cap = s->chunk_cap ? 2 * s->chunk_cap : 1024;
        uint64_t *o = realloc(s->chunk_off, cap * sizeof *o);
        if (!o) return cli_err("out of memory"), false;
        s->chunk_off = o;
        uint32_t *n = realloc(s->chunk_next, cap * sizeof *n);
        if (!n) return cli_err("out of memory"), false;
        s->chunk_next = n;
        s->chunk_cap = cap;
    }
    uint32_t c = (uint32_t)s->nchunks++;
    s->chunk_off[c] = s->file_bytes;
    s->chunk_next[c] = NO_CHUNK;
    if (s->tail[p] == NO_CHUNK)
        s->head[p] = c;
    else
        s->chunk_next[s->tail[p]] = c;
    s->tail[p] = c;
    if (!write_at(s, s->buf + (size_t)p * PBUF, PBUF * sizeof *s->buf)) return false;
    s->fill[p] = 0;
    return true;
}

bool cli_spool_put(cli_spool *s, const uint64_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t p = (uint32_t)(h[i] >> 56);
        s->buf[(size_t)p * PBUF + s->fill[p]++] = h[i];
        s->part_total[p]++;
        if (CLI_UNLIKELY(s->fill[p] == PBUF) && !spill(s, p)) return false;
    }
    s->total += n;
    return true;
}

static bool reserve_work(cli_spool *s, size_t n, bool with_tmp)
{
    if (n <= s->work_cap && (!with_tmp || s->tmp)) return true;
    size_t cap = n > s->work_cap ? n + n / 4 : s->work_cap;
    uint64_t *w = realloc(s->work, cap * sizeof *w);
    if (!w) return cli_err("out of memory"), false;
    s->work = w;
    if (with_tmp || s->tmp) {
        uint64_t *t = realloc(s->tmp, cap * sizeof *t);
        if (!t) return cli_err("out of memory"), false;
        s->tmp = t;
    }
    s->work_cap = cap;
    return true;
}

static bool read_chunk(cli_spool *s, uint64_t off, uint64_t *dst)
{
    size_t want = PBUF * sizeof *dst, got = 0;
    while (got < want) {
        ssize_t r = pread(s->fd, (uint8_t *)dst + got, want - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = EIO;
            return cli_err_errno(s->dir, "reading the temporary spool file failed"), false;
        }
        got += (size_t)r;
    }
    return true;
}

/* Sorts by the low 56 bits (the top 8 are the partition's) with an LSD radix sort, 8 bits a pass. */
static uint64_t *radix_sort(uint64_t *a, uint64_t *t, size_t n)
{
    for (int shift = 0; shift < 56; shift += 8) {
        size_t count[256] = { 0 };
        for (size_t i = 0; i < n; i++) count[(a[i] >> shift) & 255]++;
        size_t sum = 0;
        for (int d = 0; d < 256; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) t[count[(a[i] >> shift) & 255]++] = a[i];
        uint64_t *x = a;
        a = t;
        t = x;
    }
    return a; /* 7 passes: the result is in the buffer that started as t */
}

int cli_spool_next(cli_spool *s, bool dedupe, const uint64_t **h, size_t *n)
{
    while (s->next_part < NPART && s->part_total[s->next_part] == 0) s->next_part++;
    if (s->next_part >= NPART) return 0;
    uint32_t p = s->next_part++;
    size_t total = (size_t)s->part_total[p];
    const uint64_t *mem = s->buf + (size_t)p * PBUF;
    if (!dedupe && s->head[p] == NO_CHUNK) { /* all in memory: no copy */
        *h = mem;
        *n = total;
        return 1;
    }
    if (!reserve_work(s, total, dedupe)) return -1;
    size_t k = 0;
    for (uint32_t c = s->head[p]; c != NO_CHUNK; c = s->chunk_next[c]) {
        if (!read_chunk(s, s->chunk_off[c], s->work + k)) return -1;
        k += PBUF;
    }
    memcpy(s->work + k, mem, s->fill[p] * sizeof *mem);
    k += s->fill[p];
    if (!dedupe) {
        *h = s->work;
        *n = k;
        return 1;
    }
    uint64_t *sorted = radix_sort(s->work, s->tmp, k);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (i == 0 || sorted[i] != sorted[u - 1]) sorted[u++] = sorted[i];
    *h = sorted;
    *n = u;
    return 1;
}

bool cli_spool_all(cli_spool *s, const uint64_t **h, size_t *n)
{
    *n = (size_t)s->total;
    if (s->fd < 0) {
        /* compact the partition buffers into one array, in place (each moves down or stays) */
        size_t k = 0;
        for (int p = 0; p < NPART; p++) {
            memmove(s->buf + k, s->buf + (size_t)p * PBUF, s->fill[p] * sizeof *s->buf);
            k += s->fill[p];
        }
        *h = s->buf;
        return true;
    }
    /* everything into the file (chunk order does not matter here), then map it */
    for (int p = 0; p < NPART; p++)
        if (s->fill[p] && !write_at(s, s->buf + (size_t)p * PBUF, s->fill[p] * sizeof *s->buf)) return false;
    s->map_len = (size_t)s->file_bytes;
    s->map = mmap(NULL, s->map_len, PROT_READ, MAP_PRIVATE, s->fd, 0);
    if (s->map == MAP_FAILED) {
        s->map = NULL;
        return cli_err_errno(s->dir, "cannot map the temporary spool file"), false;
    }
    *h = s->map;
    return true;
}
