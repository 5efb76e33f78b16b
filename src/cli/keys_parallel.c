/*
 * cli_reader_hash_all: the keys of a build read, split and hashed on several threads (regular files),
 * or batch by batch on the caller's thread through cli_reader_next. What a key is, and the reader
 * itself, are in keys.c; what both files share is in keys_impl.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys_impl.h"
/* XXH3-64 inlined into the splitting loop: the very function bk_hash64 computes (the library's hash,
 * from the same header), without a call and its length dispatch per key. */
#define XXH_INLINE_ALL
#include <xxhash.h>
#if defined(__SSE2__)
#  include <emmintrin.h>
#endif

/* ---- build: read and hash on several threads ----
 *
 * Regular files only (their size is known, and pread reads any part of them). Each input is cut into
 * blocks of PH_BLOCK bytes; every worker (the caller's thread and the others) claims the next block,
 * reads it with pread together with up to PH_LOOK bytes before it, and hashes the keys whose delimiter
 * is in the block (the first of them starts in an earlier block: the bytes read before the block hold
 * its start, or for a longer key the start is looked for further back). At the end of an input the
 * last block also hashes the key without a delimiter, if any. The worker hands its hashes to `work`
 * at once and posts the block as ready; the sink sees every key's hash in input order, one block at a
 * time, from one thread at a time: whichever worker posts the block whose turn it is (or finds it
 * posted when it posts its own) sinks it and every ready block after it, while the others go on to
 * new blocks. A worker has PH_SLOTS hash buffers, so it waits only when all of them hold blocks still
 * waiting for an earlier one (a slow page fault in another worker's block). When the caller does not
 * need input order (every type but the fuse filter: their spool is read back by partition, and bits
 * or sorted partitions do not depend on the order the hashes came in), each worker sinks its own
 * block as soon as it is hashed, one worker at a time, and never waits for another: with input order,
 * a worker that lost its core for a while (a busy machine) stalled the other after PH_SLOTS blocks
 * (measured: one worker waiting 0.06-0.15 s of a 0.2-0.3 s read). The reading (the kernel's copy),
 * the splitting and the hashing are divided between the threads instead of
 * pipelined, so neither thread waits for the other. The sizes are taken when an input's first block
 * is claimed: a file that grows meanwhile is read up to that size, one that shrinks is an error
 * ("changed while it was read").
 */
#define PH_BLOCK ((size_t)1 << 20)
#define PH_LOOK ((size_t)4 << 10)
#define PH_SLOTS CLI_READ_SLOTS
#define PH_RING (CLI_READ_MAX_THREADS * PH_SLOTS) /* blocks hashed and not yet sunk: at most this many */

typedef struct ph_slot {
    uint64_t *h;       /* room for PH_BLOCK + 1 hashes (mostly untouched) */
    size_t n, len;     /* hashes and input bytes of the block it holds */
    unsigned id;       /* worker index x PH_SLOTS + its place: the callbacks' slot */
    bool busy;         /* holds a block not yet sunk */
} ph_slot;

typedef struct ph {
    cli_reader *r;
    uint64_t seed;
    cli_hash_fn work, sink;
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t file;       /* claiming: the input, its size, and the next block's offset and sequence number */
    uint64_t size, off, seq;
    bool sized;
    uint64_t turn;     /* the block whose hashes go to the sink next */
    bool sinking;      /* a worker is sinking blocks */
    bool any_order;    /* each worker sinks its own blocks (under sink_mu), in whatever order */
    pthread_mutex_t sink_mu;
    ph_slot *ready[PH_RING]; /* ready[seq % PH_RING]: the slot of a hashed block waiting for its turn */
    bool failed;
} ph;

typedef struct ph_worker {
    ph *p;
    unsigned index;
    uint8_t *buf;      /* PH_LOOK + PH_BLOCK */
    ph_slot slot[PH_SLOTS];
    uint8_t *big;      /* a key longer than the bytes read before its block */
    size_t bigcap;
    int fd;
    size_t fd_file;
} ph_worker;

static const char *ph_path(const ph *p, size_t file) { return p->r->paths[file]; }

/* Fails the whole read (the message is printed by the caller of this). */
static void ph_fail(ph *p)
{
    pthread_mutex_lock(&p->mu);
    p->failed = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* The input's descriptor for this worker, opened once per input. */
static int ph_fd(ph_worker *w, size_t file)
{
    if (w->fd >= 0 && w->fd_file == file) return w->fd;
    if (w->fd > 0) close(w->fd);
    w->fd = -1;
    const char *path = ph_path(w->p, file);
    int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cli_err_errno(display_name(path), "cannot open"), -1;
    w->fd = fd;
    w->fd_file = file;
    return fd;
}

/* Reads len bytes at off (relative to where the input starts); fewer only at the end of the file. */
static ssize_t ph_read(ph_worker *w, size_t file, uint8_t *dst, size_t len, uint64_t off)
{
    int fd = ph_fd(w, file);
    if (fd < 0) return -1;
    uint64_t base = strcmp(ph_path(w->p, file), "-") == 0 ? w->p->r->stdin_base : 0;
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, dst + got, len - got, (off_t)(base + off + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return cli_err_errno(display_name(ph_path(w->p, file)), "read failed"), -1;
        if (n == 0) break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* Reads exactly len bytes at off; false (message printed) on an error or when the file has shrunk. */
static bool ph_read_exact(ph_worker *w, size_t file, uint8_t *dst, size_t len, uint64_t off)
{
    ssize_t got = ph_read(w, file, dst, len, off);
    if (got == (ssize_t)len) return true;
    if (got >= 0) cli_err("%s: the file changed while it was read", display_name(ph_path(w->p, file)));
    return false;
}

static inline __attribute__((always_inline)) uint64_t ph_hash(const ph *p, const uint8_t *key, size_t len)
{
    len = key_len(p->r, key, len);
    /* the public call, compiled in (XXH_INLINE_ALL); ph_keys is flattened, so its length dispatch and
     * short and medium forms (URLs, ids) inline into the scan loop */
    return XXH3_64bits_withSeed(key, len, p->seed);
}

/* The hash (into *hash) of the key that ends at `end` (an offset in the input) and starts before
 * `from`, the first offset read: the start is looked for backwards, in growing steps. */
static bool ph_long_key(ph_worker *w, size_t file, uint64_t from, uint64_t end, uint64_t *hash)
{
    const uint8_t delim = w->p->r->delim;
    uint64_t start = from;
    size_t step = PH_LOOK;
    for (;;) {
        if (start == 0) break;
        size_t back = start < step ? (size_t)start : step;
        if (end - (start - back) > CLI_MAX_KEY) {
            cli_err("%s: the key that ends at byte %llu is longer than the limit of %zu MiB",
                    display_name(ph_path(w->p, file)), (unsigned long long)end, CLI_MAX_KEY >> 20);
            return false;
        }
        uint8_t tmp[4096];
        /* scan [start - back, start) backwards, 4 KiB at a time */
        bool found = false;
        for (uint64_t hi = start; hi > start - back && !found;) {
            size_t k = hi - (start - back) < sizeof tmp ? (size_t)(hi - (start - back)) : sizeof tmp;
            if (!ph_read_exact(w, file, tmp, k, hi - k)) return false;
            const uint8_t *q = memrchr(tmp, delim, k);
            if (q) {
                start = hi - k + (uint64_t)(q - tmp) + 1;
                found = true;
            }
            hi -= k;
        }
        if (found) break;
        start -= back;
        step *= 2;
    }
    size_t len = (size_t)(end - start);
    if (len > w->bigcap) {
        uint8_t *b = realloc(w->big, len);
        if (!b) return cli_err("out of memory for a key of %zu MiB", len >> 20), false;
        w->big = b;
        w->bigcap = len;
    }
    if (!ph_read_exact(w, file, w->big, len, start)) return false;
    *hash = ph_hash(w->p, w->big, len);
    return true;
}

/* Hashes the keys that end at the delimiters of [s, e) into h[k..] (s: where the first of them
 * starts) and returns the new count; *rest is where the bytes after the last delimiter start. With
 * SSE2 the delimiters are found 64 bytes at a time, as a bit mask from four 16-byte compares, then
 * one key per set bit: a memchr call per key cost about 30 instructions on URL-like lines, as many
 * as the rest of a key's reading (the hash aside), where the mask costs a few per key. */
/* Flattened: GCC keeps XXH3_64bits_withSeed (static under XXH_INLINE_ALL) a call of its own, about
 * 2.9 instructions a key more than the inlined forms; flattened, the public call costs 1.7 instructions
 * a key (1.0% of a blocked build's instructions, 0.5% of a classic one's: callgrind, 1M URL lines of
 * bench/cli_build_ratio.sh) more than calling XXH3's internal fixed-length forms, below what CPU time
 * shows. */
static __attribute__((flatten)) size_t ph_keys(const ph *p, const uint8_t *s, const uint8_t *e, uint8_t delim, uint64_t *h, size_t k,
                      const uint8_t **rest)
{
    const uint8_t *c = s; /* the scan's position: no delimiter in [s, c) */
#if defined(__SSE2__)
    const __m128i dv = _mm_set1_epi8((char)delim);
    for (; e - c >= 64; c += 64) {
        uint64_t m0 = (uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)c), dv));
        uint64_t m1 = (uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(c + 16)), dv));
        uint64_t m2 = (uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(c + 32)), dv));
        uint64_t m3 = (uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(c + 48)), dv));
        for (uint64_t m = m0 | m1 << 16 | m2 << 32 | m3 << 48; m; m &= m - 1) {
            const uint8_t *q = c + __builtin_ctzll(m);
            h[k++] = ph_hash(p, s, (size_t)(q - s));
            s = q + 1;
        }
    }
#endif
    for (const uint8_t *q; (q = memchr(c, delim, (size_t)(e - c))); c = s = q + 1) h[k++] = ph_hash(p, s, (size_t)(q - s));
    *rest = s;
    return k;
}

/* Hashes the keys of the block at off (len bytes, the last of the input when last) into h (room for
 * len + 1 hashes: a block holds at most len delimiters, and one more key at the end of an input). */
static bool ph_block(ph_worker *w, size_t file, uint64_t off, size_t len, bool last, uint64_t *h, size_t *n)
{
    ph *p = w->p;
    const uint8_t delim = p->r->delim;
    size_t look = off < PH_LOOK ? (size_t)off : PH_LOOK;
    uint8_t *b = w->buf + PH_LOOK; /* the block's first byte */
    if (!ph_read_exact(w, file, b - look, look + len, off - look)) return false;
    *n = 0;
    const uint8_t *e = b + len, *q = memchr(b, delim, len);
    if (!q && !last) return true; /* inside a key that ends in a later block */
    /* the first key: it started before the block (or is the input's first) */
    const uint8_t *kend = q ? q : e, *d = look ? memrchr(b - look, delim, look) : NULL;
    const uint8_t *s = d ? d + 1 : look == off ? b - look : NULL;
    if (s)
        h[0] = ph_hash(p, s, (size_t)(kend - s));
    else if (!ph_long_key(w, file, off - look, off + (uint64_t)(kend - b), &h[0]))
        return false;
    *n = 1;
    if (!q) return true; /* the input ends inside that key */
    size_t k = ph_keys(p, q + 1, e, delim, h, 1, &s);
    if (last && s < e) h[k++] = ph_hash(p, s, (size_t)(e - s)); /* the last key, without a delimiter */
    *n = k;
    return true;
}

/* Claims the next block in input order: false when there is none left, or the read has failed. */
static bool ph_claim(ph *p, size_t *file, uint64_t *off, size_t *len, bool *last, uint64_t *seq)
{
    bool got = false;
    pthread_mutex_lock(&p->mu);
    while (!p->failed && p->file < p->r->npaths) {
        if (!p->sized) {
            const char *path = ph_path(p, p->file);
            struct stat st;
            bool std = strcmp(path, "-") == 0;
            if ((std ? fstat(0, &st) : stat(path, &st)) != 0) {
                cli_err_errno(display_name(path), "cannot read");
                p->failed = true;
                pthread_cond_broadcast(&p->cv);
                break;
            }
            uint64_t base = std ? p->r->stdin_base : 0;
            p->size = (uint64_t)st.st_size > base ? (uint64_t)st.st_size - base : 0;
            p->off = 0;
            p->sized = true;
        }
        if (p->off < p->size) {
            *file = p->file;
            *off = p->off;
            *len = p->size - p->off < PH_BLOCK ? (size_t)(p->size - p->off) : PH_BLOCK;
            *last = p->off + *len == p->size;
            *seq = p->seq++;
            p->off += *len;
            got = true;
            break;
        }
        p->file++;
        p->sized = false;
    }
    pthread_mutex_unlock(&p->mu);
    return got;
}

/* Sinks the ready blocks from p->turn on, while they are there; called and returns with p->mu held,
 * by the one worker that set p->sinking. */
static void ph_sink_ready(ph *p)
{
    ph_slot *sl;
    while (!p->failed && (sl = p->ready[p->turn % PH_RING])) {
        p->ready[p->turn % PH_RING] = NULL;
        pthread_mutex_unlock(&p->mu);
        p->r->bytes_done += sl->len;
        bool ok = !sl->n || p->sink(p->ctx, sl->id / PH_SLOTS, sl->id, sl->h, sl->n);
        pthread_mutex_lock(&p->mu);
        sl->busy = false;
        if (!ok) p->failed = true;
        p->turn++;
        pthread_cond_broadcast(&p->cv);
    }
}

static void *ph_main(void *arg)
{
    ph_worker *w = arg;
    ph *p = w->p;
    size_t file, len;
    uint64_t off, seq;
    bool last;
    for (;;) {
        /* a free slot first (so blocks in flight never exceed PH_RING), then a block */
        pthread_mutex_lock(&p->mu);
        unsigned j = 0;
        for (;;) {
            for (j = 0; j < PH_SLOTS && w->slot[j].busy; j++) {}
            if (j < PH_SLOTS || p->failed) break;
            pthread_cond_wait(&p->cv, &p->mu);
        }
        bool failed = p->failed;
        pthread_mutex_unlock(&p->mu);
        if (failed || !ph_claim(p, &file, &off, &len, &last, &seq)) break;
        ph_slot *sl = &w->slot[j];
        bool ok = ph_block(w, file, off, len, last, sl->h, &sl->n);
        if (!ok || (sl->n && !p->work(p->ctx, w->index, sl->id, sl->h, sl->n))) {
            ph_fail(p);
            break;
        }
        sl->len = len;
        if (p->any_order) {
            pthread_mutex_lock(&p->sink_mu);
            p->r->bytes_done += len;
            ok = !sl->n || p->sink(p->ctx, w->index, sl->id, sl->h, sl->n);
            pthread_mutex_unlock(&p->sink_mu);
            if (!ok) {
                ph_fail(p);
                break;
            }
            continue;
        }
        pthread_mutex_lock(&p->mu);
        sl->busy = true;
        p->ready[seq % PH_RING] = sl;
        if (!p->sinking) {
            p->sinking = true;
            ph_sink_ready(p);
            p->sinking = false;
        }
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* A worker's read buffer (PH_LOOK + PH_BLOCK bytes) on one 2 MiB page where the kernel gives one: a
 * single page fault instead of one per 4 KiB page, each of which cost about as much CPU as reading
 * 60 KiB of the file on the virtual machines measured (about half of a build's minor faults were
 * these buffers' before). */
static uint8_t *ph_buffer(void)
{
    const size_t huge = (size_t)2 << 20;
    void *p = NULL;
    if (PH_LOOK + PH_BLOCK > huge || posix_memalign(&p, huge, huge) != 0) return malloc(PH_LOOK + PH_BLOCK);
#ifdef MADV_HUGEPAGE
    madvise(p, huge, MADV_HUGEPAGE); /* only a hint */
#endif
    return p;
}

int cli_reader_hash_all(cli_reader *r, uint64_t seed, unsigned threads, bool in_order, cli_hash_fn work,
                        cli_hash_fn sink, void *ctx)
{
    if (!r->parallel) { /* one batch at a time, on the caller's thread */
        uint64_t h[CLI_BATCH];
        cli_batch b;
        int rc;
        while ((rc = cli_reader_next(r, &b)) > 0) {
            cli_hash_batch(&b, seed, h);
            if (!work(ctx, 0, 0, h, b.n) || !sink(ctx, 0, 0, h, b.n)) return -1;
        }
        return rc;
    }
    if (threads < 1) threads = 1;
    if (threads > CLI_READ_MAX_THREADS) threads = CLI_READ_MAX_THREADS;
    ph p;
    memset(&p, 0, sizeof p);
    p.r = r;
    p.seed = seed;
    p.work = work;
    p.sink = sink;
    p.ctx = ctx;
    p.any_order = !in_order;
    ph_worker w[CLI_READ_MAX_THREADS];
    pthread_t tid[CLI_READ_MAX_THREADS];
    bool started[CLI_READ_MAX_THREADS] = { false };
    memset(w, 0, sizeof w);
    bool ok = true;
    for (unsigned i = 0; i < threads; i++) {
        w[i].p = &p;
        w[i].index = i;
        w[i].fd = -1;
        w[i].buf = ph_buffer();
        if (!w[i].buf) ok = false;
        for (unsigned j = 0; j < PH_SLOTS; j++) {
            w[i].slot[j].id = i * PH_SLOTS + j;
            if (!(w[i].slot[j].h = malloc((PH_BLOCK + 1) * sizeof *w[i].slot[j].h))) ok = false;
        }
    }
    if (ok) {
        pthread_mutex_init(&p.mu, NULL);
        pthread_mutex_init(&p.sink_mu, NULL);
        pthread_cond_init(&p.cv, NULL);
        for (unsigned i = 1; i < threads; i++) started[i] = pthread_create(&tid[i], NULL, ph_main, &w[i]) == 0;
        ph_main(&w[0]); /* a worker that could not start leaves its blocks to the others */
        for (unsigned i = 1; i < threads; i++)
            if (started[i]) pthread_join(tid[i], NULL);
        pthread_mutex_destroy(&p.mu);
        pthread_mutex_destroy(&p.sink_mu);
        pthread_cond_destroy(&p.cv);
    } else {
        cli_err("out of memory");
        p.failed = true;
    }
    for (unsigned i = 0; i < threads; i++) {
        if (w[i].fd > 0) close(w[i].fd);
        free(w[i].buf);
        for (unsigned j = 0; j < PH_SLOTS; j++) free(w[i].slot[j].h);
        free(w[i].big);
    }
    return p.failed ? -1 : 0;
}
