/*
 * The hash spool of `bloomkit build`: the 64-bit hash of every key read, kept until the filter can be
 * sized, with bounded memory.
 *
 * Hashes are partitioned by their top 8 bits into 256 partitions (or, for a spool only read back as
 * runs, by their top 4 bits into 16: see below), and stored in chunks of 32 KiB
 * (4096 hashes), each chunk holding hashes of one partition in the order they came. A partition
 * writes into its current chunk; a full chunk is kept in memory as it is (the partition takes a fresh
 * chunk: no copy) while the spool's memory stays within a bound (64 MiB, and at most 1/8 of the RAM),
 * and beyond it is appended to an unlinked temporary file as one chunk and its memory reused, so
 * memory never exceeds the bound plus the current chunks (256: 8 MiB; 16: 512 KiB). Reading back goes
 * partition by partition, in the order of the hashes' top bits, which is the order of the filter's memory for every
 * type that picks a block or bucket by multiply-shift of the hash (blocked, cuckoo, the first probe of
 * the classic filter): inserts then walk the filter sequentially instead of at random. A partition can
 * also be read sorted with exact duplicates removed (equal 64-bit hashes: the same key), for the types
 * that count occurrences; that takes one partition in memory at a time, about 8 bytes x keys / 256
 * (times two while sorting).
 *
 * A spool whose hashes only set bits (bloom, partitioned, blocked: read back as runs, in any order
 * within a partition) takes 16 partitions: each hash then goes to one of 16 chunks being written
 * instead of one of 256, few enough streams for the CPU's prefetchers to follow (with 256, most
 * stores waited for their cache line: cli_spool_put took about 3.5x the CPU, 10M URL lines), and the
 * fill still walks the filter front to back, a sixteenth of it at a time.
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
#define PBUF 4096                    /* hashes per chunk: 32 KiB */
#define SLAB_CHUNKS 64               /* chunks are carved from 2 MiB slabs */
#define SLAB_BYTES ((size_t)SLAB_CHUNKS * PBUF * sizeof(uint64_t))
/* In-memory chunks: at most this, and at most 1/8 of the RAM. A constant, so that a build's peak memory
 * is its filter plus a constant: the rest goes to the file, which is page cache the kernel may write
 * out under pressure (a 10M-key build took 0.29 s with every chunk in memory, 0.30 s with all in the
 * file, the file never reaching the disk). */
#define MEM_MAX ((uint64_t)64 << 20)

typedef struct chunk {
    uint64_t *mem; /* the hashes, or NULL when they are in the file at off */
    uint64_t off;
    uint32_t next;
} chunk;

struct cli_spool {
    uint64_t *cur[NPART];     /* each partition's current chunk, fill[p] hashes in it */
    uint32_t fill[NPART];
    uint32_t nfull[NPART];    /* full chunks of the partition, listed from head[p] */
    uint32_t head[NPART], tail[NPART];
    chunk *chunks;
    size_t nchunks, chunk_cap;
    uint64_t **slabs;
    size_t nslabs, slab_cap, slab_used; /* chunks taken from the last slab */
    uint64_t mem_chunks_max;  /* full chunks that may stay in memory */
    int fd;
    char dir[PATH_MAX];
    uint64_t total, file_bytes;
    /* reading back */
    uint32_t next_part;
    unsigned shift, npart;    /* partition: hash >> shift, npart of them */
    uint64_t *work, *tmp;
    size_t work_cap;
    cli_spool_run *runs;
};

#define NO_CHUNK UINT32_MAX

/* A fresh chunk from the current slab (a new 2 MiB slab when it is used up); NULL when out of memory. */
static uint64_t *new_chunk(cli_spool *s)
{
    if (s->nslabs == 0 || s->slab_used == SLAB_CHUNKS) {
        if (s->nslabs == s->slab_cap) {
            size_t cap = s->slab_cap ? 2 * s->slab_cap : 16;
            uint64_t **v = realloc(s->slabs, cap * sizeof *v);
            if (!v) return NULL;
            s->slabs = v;
            s->slab_cap = cap;
        }
        void *p = NULL;
        if (posix_memalign(&p, (size_t)2 << 20, SLAB_BYTES) != 0) return NULL;
#ifdef MADV_HUGEPAGE
        madvise(p, SLAB_BYTES, MADV_HUGEPAGE); /* fewer page faults; only a hint */
#endif
        s->slabs[s->nslabs++] = p;
        s->slab_used = 0;
    }
    return s->slabs[s->nslabs - 1] + (size_t)PBUF * s->slab_used++;
}

cli_spool *cli_spool_new(const char *near_path, bool runs_only)
{
    cli_spool *s = calloc(1, sizeof *s);
    if (!s) return cli_err("out of memory"), NULL;
    s->fd = -1;
    s->npart = runs_only ? 16 : NPART;
    s->shift = runs_only ? 60 : 56;
    for (int p = 0; p < NPART; p++) {
        s->head[p] = s->tail[p] = NO_CHUNK;
        if ((unsigned)p < s->npart && !(s->cur[p] = new_chunk(s))) {
            cli_spool_free(s);
            return cli_err("out of memory"), NULL;
        }
    }
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
    uint64_t bound = ram / 8 < MEM_MAX ? ram / 8 : MEM_MAX;
    s->mem_chunks_max = bound / (PBUF * sizeof(uint64_t));
    const char *env = getenv("BLOOMKIT_SPOOL_MEM"); /* tests: the bound in chunks (0: always the file) */
    if (env && *env) s->mem_chunks_max = strtoull(env, NULL, 10);
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
    if (s->fd >= 0) close(s->fd);
    for (size_t i = 0; i < s->nslabs; i++) free(s->slabs[i]);
    free(s->slabs);
    free(s->chunks);
    free(s->work);
    free(s->tmp);
    free(s->runs);
    free(s);
}

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

/* Partition p's current chunk is full: list it (kept in memory, or written to the file) and start
 * another. */
static bool spill(cli_spool *s, uint32_t p)
{
    if (s->nchunks == s->chunk_cap) {
        size_t cap = s->chunk_cap ? 2 * s->chunk_cap : 1024;
        chunk *c = realloc(s->chunks, cap * sizeof *c);
        if (!c) return cli_err("out of memory"), false;
        s->chunks = c;
        s->chunk_cap = cap;
    }
    chunk *c = &s->chunks[s->nchunks];
    uint64_t *fresh = s->nchunks < s->mem_chunks_max ? new_chunk(s) : NULL;
    if (fresh) {
        c->mem = s->cur[p];
        c->off = 0;
        s->cur[p] = fresh;
    } else {
        c->mem = NULL;
        c->off = s->file_bytes;
        if (!write_at(s, s->cur[p], PBUF * sizeof *s->cur[p])) return false;
    }
    c->next = NO_CHUNK;
    uint32_t i = (uint32_t)s->nchunks++;
    if (s->tail[p] == NO_CHUNK)
        s->head[p] = i;
    else
        s->chunks[s->tail[p]].next = i;
    s->tail[p] = i;
    s->nfull[p]++;
    s->fill[p] = 0;
    return true;
}

void cli_spool_group(const uint64_t *h, size_t n, uint64_t *out, uint32_t count[256])
{
    uint32_t at[NPART];
    memset(count, 0, NPART * sizeof *count);
    for (size_t i = 0; i < n; i++) count[h[i] >> 56]++;
    uint32_t sum = 0;
    for (int p = 0; p < NPART; p++) {
        at[p] = sum;
        sum += count[p];
    }
    for (size_t i = 0; i < n; i++) out[at[h[i] >> 56]++] = h[i];
}

bool cli_spool_put(cli_spool *s, const uint64_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const uint32_t p = (uint32_t)(h[i] >> s->shift);
        s->cur[p][s->fill[p]++] = h[i];
        if (CLI_UNLIKELY(s->fill[p] == PBUF) && !spill(s, p)) return false;
    }
    s->total += n;
    return true;
}

bool cli_spool_put_grouped(cli_spool *s, const uint64_t *h, const uint32_t count[256])
{
    for (uint32_t p = 0; p < NPART; p++) {
        uint32_t left = count[p];
        while (left) {
            uint32_t k = PBUF - s->fill[p] < left ? PBUF - s->fill[p] : left;
            memcpy(s->cur[p] + s->fill[p], h, k * sizeof *h);
            s->fill[p] += k;
            h += k;
            left -= k;
            s->total += k;
            if (s->fill[p] == PBUF && !spill(s, p)) return false;
        }
    }
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

static bool read_chunk(const cli_spool *s, uint64_t off, uint64_t *dst)
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
/* Copies full chunk c (from memory or from the file) to dst. */
static bool copy_chunk(const cli_spool *s, uint32_t c, uint64_t *dst)
{
    if (!s->chunks[c].mem) return read_chunk(s, s->chunks[c].off, dst);
    memcpy(dst, s->chunks[c].mem, PBUF * sizeof *dst);
    return true;
}

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
    while (s->next_part < NPART && s->nfull[s->next_part] == 0 && s->fill[s->next_part] == 0) s->next_part++;
    if (s->next_part >= NPART) return 0;
    uint32_t p = s->next_part++;
    size_t total = (size_t)s->nfull[p] * PBUF + s->fill[p];
    if (!dedupe && s->nfull[p] == 0) { /* one chunk: no copy */
        *h = s->cur[p];
        *n = total;
        return 1;
    }
    if (!reserve_work(s, total, dedupe)) return -1;
    size_t k = 0;
    for (uint32_t c = s->head[p]; c != NO_CHUNK; c = s->chunks[c].next, k += PBUF)
        if (!copy_chunk(s, c, s->work + k)) return -1;
    memcpy(s->work + k, s->cur[p], s->fill[p] * sizeof *s->work);
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

bool cli_spool_runs(cli_spool *s, const cli_spool_run **runs, size_t *nruns)
{
    free(s->runs);
    s->runs = malloc((s->nchunks + NPART) * sizeof *s->runs);
    if (!s->runs) return cli_err("out of memory"), false;
    size_t k = 0;
    for (int p = 0; p < NPART; p++) {
        for (uint32_t c = s->head[p]; c != NO_CHUNK; c = s->chunks[c].next)
            s->runs[k++] = (cli_spool_run){ s->chunks[c].mem, s->chunks[c].off, PBUF, (unsigned)p };
        if (s->fill[p]) s->runs[k++] = (cli_spool_run){ s->cur[p], 0, s->fill[p], (unsigned)p };
    }
    *runs = s->runs;
    *nruns = k;
    return true;
}

unsigned cli_spool_parts(const cli_spool *s) { return s->npart; }

const uint64_t *cli_spool_run_hashes(cli_spool *s, const cli_spool_run *run, uint64_t *buf)
{
    if (run->h) return run->h;
    return read_chunk(s, run->off, buf) ? buf : NULL;
}

bool cli_spool_all(cli_spool *s, const uint64_t **h, size_t *n)
{
    /* the order of the file spool this replaced (fuse construction depends on it): the full chunks in
     * the order they filled, then each partition's partial chunk */
    *n = (size_t)s->total;
    if (!reserve_work(s, *n ? *n : 1, false)) return false;
    size_t k = 0;
    for (uint32_t c = 0; c < s->nchunks; c++, k += PBUF)
        if (!copy_chunk(s, c, s->work + k)) return false;
    for (int p = 0; p < NPART; p++) {
        if (!s->fill[p]) continue; /* (a partition a runs-only spool does not use has no chunk) */
        memcpy(s->work + k, s->cur[p], s->fill[p] * sizeof *s->work);
        k += s->fill[p];
    }
    *h = s->work;
    return true;
}
