/*
 * LSM store guard: the filter every log-structured store keeps next to each immutable run file.
 *
 * A tiny key-value store: puts go to an in-memory table; when it is full it is flushed as a sorted,
 * immutable run file (4 KiB data blocks, an index of each block's first key, a footer), and a binary
 * fuse filter of the run's keys is saved beside it in bloomkit's file format (run-N.sst + run-N.bkf).
 * A get looks in the memory table, then in the runs from newest to oldest; before it reads a block
 * of a run it asks that run's filter, so a key that is not in the run costs no read at all (except at
 * the filter's false-positive rate, 2^-8 or 2^-16). Compaction is size-tiered: when the newest
 * `fanin` runs are of one tier (flushes are tier 0), they are merged into one run of the next tier
 * (newest value wins; deletions are dropped when the merge reaches the oldest run), and the new run
 * gets its own filter, built from its keys.
 *
 * The fuse filter fits because a run never changes: it is built once from all its keys, and is the
 * smallest filter for its FPR (about 9 bits per key at 0.39%). Deleted keys (tombstones) are in the
 * filter too: a get must find the tombstone to know that older runs' values are dead.
 *
 * The program writes a data set, reopens the store from its files (the filters are mapped with mmap,
 * no copy), then runs a read workload where 90% of the keys are absent, once without the filters and
 * once with them, and prints the run-file block reads and the latency of both. Every get is checked
 * against a reference model of what was written.
 *
 *   lsm_guard [--keys N] [--gets N] [--absent-share F] [--memtable N] [--fanin N]
 *             [--value-size N] [--fp-bits 8|16] [--seed S] [--dir DIR] [--keep]
 *
 * Exit status: 0 when every get returned exactly the right value and the filters cut the reads of
 * absent keys to within their bound, 1 when a check failed, 2 on errors.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ex_util.h"

static const char *prog = "lsm_guard";

#define BLOCK_SIZE 4096
#define MAX_KEY 255
#define MAX_VALUE 2048
#define TOMBSTONE 1
#define RUN_MAGIC UINT64_C(0x4e55524d534c4b42) /* "BKLSMRUN" little-endian */
#define FOOTER_SIZE 48
#define MAX_RUNS 64

static void die_errno(const char *what, const char *path)
{
    fprintf(stderr, "%s: %s %s: %s\n", prog, what, path, strerror(errno));
    exit(2);
}

static void put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static int key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

/* ------------------------------------------------------------------------------------------------
 * The memory table: entries in an arena, a hash index for gets and overwrites.
 * ---------------------------------------------------------------------------------------------- */

typedef struct mem_entry {
    uint32_t off; /* key bytes at arena[off], value right after */
    uint8_t klen;
    uint8_t flags;
    uint16_t vlen;
} mem_entry;

typedef struct memtable {
    mem_entry *e;
    uint32_t n, limit;
    uint8_t *arena;
    size_t used, cap;
    uint32_t *slots; /* index+1 into e, 0 = empty */
    uint64_t nslots;
} memtable;

static void mem_init(memtable *m, uint32_t limit)
{
    m->limit = limit;
    m->n = 0;
    m->e = ex_xmalloc(prog, (size_t)limit * sizeof *m->e);
    m->cap = (size_t)limit * 64;
    m->used = 0;
    m->arena = ex_xmalloc(prog, m->cap);
    m->nslots = 2 * (uint64_t)limit + 1;
    m->slots = ex_xcalloc(prog, m->nslots, sizeof *m->slots);
}

static void mem_free(memtable *m)
{
    free(m->e);
    free(m->arena);
    free(m->slots);
}

static uint64_t mem_slot(const memtable *m, const uint8_t *key, size_t klen)
{
    return (uint64_t)(((ex_u128)bk_hash64(key, klen, 0) * m->nslots) >> 64);
}

static const uint8_t *mem_key(const memtable *m, const mem_entry *e) { return m->arena + e->off; }

/* The entry of key, or NULL; *slot receives where it is or would go. */
static mem_entry *mem_find(const memtable *m, const uint8_t *key, size_t klen, uint64_t *slot)
{
    uint64_t i = mem_slot(m, key, klen);
    for (;; i = i + 1 == m->nslots ? 0 : i + 1) {
        if (!m->slots[i]) break;
        mem_entry *e = &m->e[m->slots[i] - 1];
        if (e->klen == klen && memcmp(mem_key(m, e), key, klen) == 0) {
            if (slot) *slot = i;
            return e;
        }
    }
    if (slot) *slot = i;
    return NULL;
}

static void mem_put(memtable *m, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen, int flags)
{
    uint64_t slot;
    mem_entry *e = mem_find(m, key, klen, &slot);
    if (m->used + klen + vlen > m->cap) {
        m->cap = 2 * m->cap + klen + vlen;
        uint8_t *grown = realloc(m->arena, m->cap);
        if (!grown) {
            fprintf(stderr, "%s: out of memory\n", prog);
            exit(2);
        }
        m->arena = grown;
    }
    if (!e) {
        e = &m->e[m->n++];
        m->slots[slot] = m->n;
    }
    e->off = (uint32_t)m->used;
    e->klen = (uint8_t)klen;
    e->flags = (uint8_t)flags;
    e->vlen = (uint16_t)vlen;
    memcpy(m->arena + m->used, key, klen);
    memcpy(m->arena + m->used + klen, val, vlen);
    m->used += klen + vlen;
}

static void mem_clear(memtable *m)
{
    m->n = 0;
    m->used = 0;
    memset(m->slots, 0, m->nslots * sizeof *m->slots);
}

/* ------------------------------------------------------------------------------------------------
 * Run files: [blocks][index][footer]. A block holds entries [klen u8][flags u8][vlen u16][key][value];
 * the index holds, per block, [offset u64][length u32][klen u8][first key]; the footer is
 * [index offset u64][index length u64][blocks u64][entries u64][tier u64][magic u64]. All little-endian.
 * ---------------------------------------------------------------------------------------------- */

typedef struct run {
    uint64_t id;
    uint32_t tier; /* 0: flushed from memory; t + 1: merged from runs of tier t */
    int fd;
    uint64_t nblocks, nentries;
    uint64_t *block_off;
    uint32_t *block_len;
    uint8_t *keys; /* first keys of the blocks, back to back */
    uint32_t *key_off;
    uint8_t *key_len;
    uint8_t last_key[MAX_KEY]; /* the run's largest key: gets above it need no read */
    size_t last_key_len;
    bk_filter *filter; /* the fuse filter mapped from run-N.bkf (NULL: none, read every time) */
    uint64_t file_bytes, filter_bytes;
} run;

typedef struct store {
    char dir[1024];
    uint64_t seed;       /* hash seed of every run's filter: one hash per get serves them all */
    uint32_t fp_bits;    /* 8 or 16 */
    uint32_t fanin;      /* runs of one tier merged at a time */
    memtable mem;
    run *runs[MAX_RUNS]; /* oldest first */
    uint32_t nruns;
    uint64_t next_id;
    int use_filters;
    /* counters of the read path */
    uint64_t block_reads, filter_skips, wasted_reads;
    uint64_t flushes, compactions;
    double build_seconds; /* spent building filters */
} store;

static void run_path(const store *s, uint64_t id, const char *ext, char *out, size_t cap)
{
    snprintf(out, cap, "%s/run-%06" PRIu64 ".%s", s->dir, id, ext);
}

/* Writing a run: blocks are cut at 4 KiB, the index and the key hashes collected on the way. */
typedef struct run_writer {
    FILE *fp;
    char tmp[1200], path[1100];
    uint8_t block[BLOCK_SIZE];
    size_t block_used;
    uint64_t off, nblocks, nentries;
    uint8_t *index;
    size_t index_used, index_cap;
    uint64_t *hashes;
    size_t nhashes, hashes_cap;
    uint64_t seed;
    uint32_t tier;
    uint8_t last_key[MAX_KEY];
    size_t last_key_len;
} run_writer;

static void writer_open(run_writer *w, const store *s, uint64_t id, uint32_t tier)
{
    memset(w, 0, sizeof *w);
    w->tier = tier;
    run_path(s, id, "sst", w->path, sizeof w->path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp", w->path);
    w->fp = fopen(w->tmp, "wb");
    if (!w->fp) die_errno("cannot create", w->tmp);
    w->seed = s->seed;
}

static void writer_flush_block(run_writer *w)
{
    if (!w->block_used) return;
    if (fwrite(w->block, 1, w->block_used, w->fp) != w->block_used) die_errno("cannot write", w->tmp);
    uint8_t klen = w->block[0];
    size_t need = 13 + (size_t)klen;
    if (w->index_used + need > w->index_cap) {
        w->index_cap = 2 * w->index_cap + need + 4096;
        uint8_t *grown = realloc(w->index, w->index_cap);
        if (!grown) die_errno("out of memory for", "the index");
        w->index = grown;
    }
    uint8_t *p = w->index + w->index_used;
    put_u64(p, w->off);
    put_u32(p + 8, (uint32_t)w->block_used);
    p[12] = klen;
    memcpy(p + 13, w->block + 4, klen); /* the block's first key */
    w->index_used += need;
    w->off += w->block_used;
    w->nblocks++;
    w->block_used = 0;
}

static void writer_add(run_writer *w, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen, int flags)
{
    size_t need = 4 + klen + vlen;
    if (w->block_used + need > BLOCK_SIZE) writer_flush_block(w);
    uint8_t *p = w->block + w->block_used;
    p[0] = (uint8_t)klen;
    p[1] = (uint8_t)flags;
    put_u16(p + 2, (uint16_t)vlen);
    memcpy(p + 4, key, klen);
    memcpy(p + 4 + klen, val, vlen);
    w->block_used += need;
    w->nentries++;
    if (w->nhashes == w->hashes_cap) {
        w->hashes_cap = w->hashes_cap ? 2 * w->hashes_cap : 4096;
        uint64_t *grown = realloc(w->hashes, w->hashes_cap * sizeof *grown);
        if (!grown) die_errno("out of memory for", "the key hashes");
        w->hashes = grown;
    }
    /* Tombstones too: a get must find them to know that older runs' values are dead. */
    w->hashes[w->nhashes++] = bk_hash64(key, klen, w->seed);
    memcpy(w->last_key, key, klen);
    w->last_key_len = klen;
}

static run *run_open(store *s, uint64_t id);

/* Finish a run: the filter file first, then the run file itself (fsync + rename: its appearance
 * commits the run, so a run never exists without its filter unless the filter save failed). */
static run *writer_finish(run_writer *w, store *s, uint64_t id)
{
    writer_flush_block(w);
    uint8_t footer[FOOTER_SIZE];
    put_u64(footer, w->off);
    put_u64(footer + 8, w->index_used);
    put_u64(footer + 16, w->nblocks);
    put_u64(footer + 24, w->nentries);
    put_u64(footer + 32, w->tier);
    put_u64(footer + 40, RUN_MAGIC);
    if (fwrite(w->index, 1, w->index_used, w->fp) != w->index_used ||
        fwrite(footer, 1, FOOTER_SIZE, w->fp) != FOOTER_SIZE || fflush(w->fp) != 0 || fsync(fileno(w->fp)) != 0)
        die_errno("cannot write", w->tmp);
    fclose(w->fp);

    /* The run's filter: built once from all its keys, saved atomically in bloomkit's format. */
    double t0 = ex_now();
    bk_fuse *fuse;
    bk_fuse_options fo = { .fingerprint_bits = s->fp_bits, .max_attempts = 0, .seed = s->seed };
    EX_CHECK(prog, bk_fuse_build_hashes(w->hashes, w->nhashes, &fo, &fuse));
    bk_filter *h;
    bk_status st = bk_filter_wrap(BK_TYPE_FUSE, fuse, &h);
    if (st != BK_OK) {
        bk_fuse_free(fuse);
        fprintf(stderr, "%s: bk_filter_wrap: %s\n", prog, bk_strerror(st));
        exit(2);
    }
    char fpath[1100];
    run_path(s, id, "bkf", fpath, sizeof fpath);
    EX_CHECK(prog, bk_filter_save_path(h, fpath));
    bk_filter_free(h);
    s->build_seconds += ex_now() - t0;

    if (rename(w->tmp, w->path) != 0) die_errno("cannot rename", w->tmp);
    int dfd = open(s->dir, O_RDONLY | O_DIRECTORY); /* make the rename itself durable */
    if (dfd < 0 || fsync(dfd) != 0) die_errno("cannot sync the directory", s->dir);
    close(dfd);
    free(w->index);
    free(w->hashes);
    return run_open(s, id);
}

static void run_close(run *r)
{
    if (!r) return;
    close(r->fd);
    bk_filter_free(r->filter);
    free(r->block_off);
    free(r->block_len);
    free(r->keys);
    free(r->key_off);
    free(r->key_len);
    free(r);
}

static void read_exact(int fd, void *buf, size_t len, uint64_t off, const char *path)
{
    ssize_t got = pread(fd, buf, len, (off_t)off);
    if (got < 0) die_errno("cannot read", path);
    if ((size_t)got != len) {
        fprintf(stderr, "%s: %s: short read (damaged run file)\n", prog, path);
        exit(2);
    }
}

/* Open a run: footer and index into memory (they stay cached, as in every LSM store), the filter
 * mapped from its file: validated once here, then queried in place. */
static run *run_open(store *s, uint64_t id)
{
    char path[1100];
    run_path(s, id, "sst", path, sizeof path);
    run *r = ex_xcalloc(prog, 1, sizeof *r);
    r->id = id;
    r->fd = open(path, O_RDONLY);
    if (r->fd < 0) die_errno("cannot open", path);
    struct stat sb;
    if (fstat(r->fd, &sb) != 0) die_errno("cannot stat", path);
    r->file_bytes = (uint64_t)sb.st_size;
    uint8_t footer[FOOTER_SIZE];
    if (r->file_bytes < FOOTER_SIZE) die_errno("too short:", path);
    read_exact(r->fd, footer, FOOTER_SIZE, r->file_bytes - FOOTER_SIZE, path);
    uint64_t ioff = get_u64(footer), ilen = get_u64(footer + 8);
    r->nblocks = get_u64(footer + 16);
    r->nentries = get_u64(footer + 24);
    r->tier = (uint32_t)get_u64(footer + 32);
    if (get_u64(footer + 40) != RUN_MAGIC || get_u64(footer + 32) > 64 || ioff + ilen + FOOTER_SIZE != r->file_bytes || r->nblocks == 0 ||
        r->nblocks > ilen / 13) {
        fprintf(stderr, "%s: %s: not a run file, or damaged\n", prog, path);
        exit(2);
    }
    uint8_t *index = ex_xmalloc(prog, (size_t)ilen);
    read_exact(r->fd, index, (size_t)ilen, ioff, path);
    r->block_off = ex_xmalloc(prog, (size_t)r->nblocks * sizeof *r->block_off);
    r->block_len = ex_xmalloc(prog, (size_t)r->nblocks * sizeof *r->block_len);
    r->key_off = ex_xmalloc(prog, (size_t)r->nblocks * sizeof *r->key_off);
    r->key_len = ex_xmalloc(prog, (size_t)r->nblocks);
    r->keys = ex_xmalloc(prog, (size_t)ilen);
    size_t pos = 0, kused = 0;
    for (uint64_t b = 0; b < r->nblocks; b++) {
        if (pos + 13 > ilen || pos + 13 + index[pos + 12] > ilen) {
            fprintf(stderr, "%s: %s: damaged index\n", prog, path);
            exit(2);
        }
        r->block_off[b] = get_u64(index + pos);
        r->block_len[b] = get_u32(index + pos + 8);
        r->key_len[b] = index[pos + 12];
        r->key_off[b] = (uint32_t)kused;
        if (r->block_len[b] > BLOCK_SIZE || r->block_off[b] + r->block_len[b] > ioff) {
            fprintf(stderr, "%s: %s: damaged index\n", prog, path);
            exit(2);
        }
        memcpy(r->keys + kused, index + pos + 13, r->key_len[b]);
        kused += r->key_len[b];
        pos += 13 + (size_t)r->key_len[b];
    }
    free(index);
    /* The largest key: the last entry of the last block. */
    uint8_t block[BLOCK_SIZE];
    uint64_t lb = r->nblocks - 1;
    read_exact(r->fd, block, r->block_len[lb], r->block_off[lb], path);
    for (size_t p = 0; p + 4 <= r->block_len[lb];) {
        size_t kl = block[p], vl = get_u16(block + p + 2);
        memcpy(r->last_key, block + p + 4, kl);
        r->last_key_len = kl;
        p += 4 + kl + vl;
    }

    char fpath[1100];
    run_path(s, id, "bkf", fpath, sizeof fpath);
    bk_status st = bk_filter_open_mmap(fpath, BK_LOAD_DEFAULT, &r->filter);
    if (st != BK_OK) {
        /* No usable filter: the run is still correct, just read on every get. */
        fprintf(stderr, "%s: %s: %s (the run will be read without its filter)\n", prog, fpath, bk_strerror(st));
        r->filter = NULL;
    } else if (bk_filter_type(r->filter) != BK_TYPE_FUSE || bk_filter_seed(r->filter) != s->seed) {
        fprintf(stderr, "%s: %s: not this store's filter (type or seed)\n", prog, fpath);
        bk_filter_free(r->filter);
        r->filter = NULL;
    } else {
        bk_stats fs;
        bk_filter_stats(r->filter, &fs);
        r->filter_bytes = fs.memory_bytes;
    }
    return r;
}

/* Find key in a run. Returns 1 with the value, 2 for a tombstone, 0 if not in this run. */
static int run_get(store *s, run *r, const uint8_t *key, size_t klen, uint64_t hash, uint8_t *val, size_t *vlen)
{
    if (s->use_filters && r->filter && !bk_filter_contains_hash(r->filter, hash)) {
        s->filter_skips++; /* certainly not in this run: no read */
        return 0;
    }
    /* The key range: below the first key or above the last one, no read either. */
    if (key_cmp(key, klen, r->keys, r->key_len[0]) < 0 || key_cmp(key, klen, r->last_key, r->last_key_len) > 0)
        return 0;
    /* The last block whose first key is <= key. */
    uint64_t lo = 0, hi = r->nblocks;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (key_cmp(r->keys + r->key_off[mid], r->key_len[mid], key, klen) <= 0)
            lo = mid;
        else
            hi = mid;
    }
    uint8_t block[BLOCK_SIZE];
    read_exact(r->fd, block, r->block_len[lo], r->block_off[lo], "run file");
    s->block_reads++;
    for (size_t p = 0; p + 4 <= r->block_len[lo];) {
        size_t kl = block[p], vl = get_u16(block + p + 2);
        int c = key_cmp(block + p + 4, kl, key, klen);
        if (c == 0) {
            if (block[p + 1] & TOMBSTONE) return 2;
            memcpy(val, block + p + 4 + kl, vl);
            *vlen = vl;
            return 1;
        }
        if (c > 0) break;
        p += 4 + kl + vl;
    }
    s->wasted_reads++;
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * The store
 * ---------------------------------------------------------------------------------------------- */

/* qsort has no context argument in C11: the table being sorted is in a file-level pointer. */
static const memtable *sorting;
static int mem_order(const void *a, const void *b)
{
    const mem_entry *x = &sorting->e[*(const uint32_t *)a], *y = &sorting->e[*(const uint32_t *)b];
    return key_cmp(mem_key(sorting, x), x->klen, mem_key(sorting, y), y->klen);
}

static void compact(store *s, uint32_t first, uint32_t tier);

/* Size-tiered compaction: while the newest `fanin` runs share one tier, merge them into one run of
 * the next tier. Runs are kept oldest first, and tiers only fall from old to new, so the merged run
 * (the newest data) takes their place at the new end. A full run table merges everything. */
static void maybe_compact(store *s)
{
    while (s->nruns >= s->fanin) {
        uint32_t first = s->nruns - s->fanin, tier = s->runs[s->nruns - 1]->tier;
        int same = 1;
        for (uint32_t i = first; i < s->nruns; i++) same &= s->runs[i]->tier == tier;
        if (!same) break;
        compact(s, first, tier + 1);
    }
    if (s->nruns == MAX_RUNS) compact(s, 0, s->runs[0]->tier + 1);
}

static void flush(store *s)
{
    memtable *m = &s->mem;
    if (!m->n) return;
    uint32_t *order = ex_xmalloc(prog, (size_t)m->n * sizeof *order);
    for (uint32_t i = 0; i < m->n; i++) order[i] = i;
    sorting = m;
    qsort(order, m->n, sizeof *order, mem_order);
    run_writer w;
    uint64_t id = s->next_id++;
    writer_open(&w, s, id, 0);
    for (uint32_t i = 0; i < m->n; i++) {
        const mem_entry *e = &m->e[order[i]];
        writer_add(&w, mem_key(m, e), e->klen, mem_key(m, e) + e->klen, e->vlen, e->flags);
    }
    free(order);
    s->runs[s->nruns++] = writer_finish(&w, s, id);
    mem_clear(m);
    s->flushes++;
    maybe_compact(s);
}

/* A sequential reader of one run, for compaction. */
typedef struct run_iter {
    run *r;
    uint64_t b;
    uint8_t block[BLOCK_SIZE];
    size_t pos, len;
    const uint8_t *key, *val;
    size_t klen, vlen;
    int flags, done;
} run_iter;

static void iter_next(run_iter *it)
{
    while (it->pos + 4 > it->len) {
        if (it->b == it->r->nblocks) {
            it->done = 1;
            return;
        }
        it->len = it->r->block_len[it->b];
        read_exact(it->r->fd, it->block, it->len, it->r->block_off[it->b], "run file");
        it->b++;
        it->pos = 0;
    }
    uint8_t *p = it->block + it->pos;
    it->klen = p[0];
    it->flags = p[1];
    it->vlen = get_u16(p + 2);
    it->key = p + 4;
    it->val = p + 4 + it->klen;
    it->pos += 4 + it->klen + it->vlen;
}

/* Merge runs[first..] into one run of the given tier: for equal keys the newest run wins. A
 * tombstone is kept unless the merge reaches the oldest run (then nothing older is left for it to
 * hide). The new run gets its own filter, built from its keys. */
static void compact(store *s, uint32_t first, uint32_t tier)
{
    uint32_t n = s->nruns - first;
    const int drop_tombstones = first == 0;
    run_iter *its = ex_xcalloc(prog, n, sizeof *its);
    for (uint32_t i = 0; i < n; i++) {
        its[i].r = s->runs[first + i];
        iter_next(&its[i]);
    }
    run_writer w;
    uint64_t id = s->next_id++;
    writer_open(&w, s, id, tier);
    for (;;) {
        int best = -1;
        for (uint32_t i = 0; i < n; i++) {
            if (its[i].done) continue;
            /* '<=' with i rising: among equal keys the newest run (highest index) is chosen. */
            if (best < 0 || key_cmp(its[i].key, its[i].klen, its[best].key, its[best].klen) <= 0) best = (int)i;
        }
        if (best < 0) break;
        uint8_t key[MAX_KEY];
        size_t klen = its[best].klen;
        memcpy(key, its[best].key, klen);
        if (!(drop_tombstones && (its[best].flags & TOMBSTONE)))
            writer_add(&w, key, klen, its[best].val, its[best].vlen, its[best].flags);
        for (uint32_t i = 0; i < n; i++)
            while (!its[i].done && key_cmp(its[i].key, its[i].klen, key, klen) == 0) iter_next(&its[i]);
    }
    free(its);
    run *merged = NULL;
    if (w.nentries) {
        merged = writer_finish(&w, s, id);
    } else { /* everything was deleted */
        fclose(w.fp);
        unlink(w.tmp);
        free(w.index);
        free(w.hashes);
    }
    for (uint32_t i = first; i < s->nruns; i++) {
        char path[1100];
        run_path(s, s->runs[i]->id, "sst", path, sizeof path);
        unlink(path);
        run_path(s, s->runs[i]->id, "bkf", path, sizeof path);
        unlink(path);
        run_close(s->runs[i]);
    }
    s->nruns = first;
    if (merged) s->runs[s->nruns++] = merged;
    s->compactions++;
}

static void store_put(store *s, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen, int flags)
{
    mem_put(&s->mem, key, klen, val, vlen, flags);
    if (s->mem.n >= s->mem.limit) flush(s);
}

/* 1 and the value if key is live, else 0. */
static int store_get(store *s, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
    const mem_entry *e = mem_find(&s->mem, key, klen, NULL);
    if (e) {
        if (e->flags & TOMBSTONE) return 0;
        memcpy(val, mem_key(&s->mem, e) + e->klen, e->vlen);
        *vlen = e->vlen;
        return 1;
    }
    /* One hash for the whole get: every run's filter uses the store's seed. */
    const uint64_t h = bk_hash64(key, klen, s->seed);
    for (uint32_t i = s->nruns; i-- > 0;) {
        int r = run_get(s, s->runs[i], key, klen, h, val, vlen);
        if (r) return r == 1;
    }
    return 0;
}

static int id_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Open the runs found in the directory, oldest first. */
static void store_open(store *s, const char *dir, uint64_t seed, uint32_t fp_bits, uint32_t memtable_n,
                       uint32_t fanin)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    s->seed = seed;
    s->fp_bits = fp_bits;
    s->fanin = fanin;
    s->use_filters = 1;
    mem_init(&s->mem, memtable_n);
    DIR *d = opendir(dir);
    if (!d) die_errno("cannot open directory", dir);
    uint64_t ids[MAX_RUNS];
    uint32_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        unsigned long long id;
        char tail[8];
        if (sscanf(de->d_name, "run-%llu.%7s", &id, tail) == 2 && strcmp(tail, "sst") == 0) {
            if (n == MAX_RUNS) {
                fprintf(stderr, "%s: too many runs in %s\n", prog, dir);
                exit(2);
            }
            ids[n++] = id;
        }
    }
    closedir(d);
    qsort(ids, n, sizeof ids[0], id_cmp);
    for (uint32_t i = 0; i < n; i++) s->runs[s->nruns++] = run_open(s, ids[i]);
    s->next_id = n ? ids[n - 1] + 1 : 1;
}

static void store_close(store *s)
{
    for (uint32_t i = 0; i < s->nruns; i++) run_close(s->runs[i]);
    s->nruns = 0;
    mem_free(&s->mem);
}

/* ------------------------------------------------------------------------------------------------
 * The workload and its reference model
 * ---------------------------------------------------------------------------------------------- */

#define DELETED 255

static size_t make_key(uint64_t id, uint8_t *out)
{
    return (size_t)snprintf((char *)out, MAX_KEY, "user:%016" PRIx64, ex_scramble(id));
}

/* The value of (id, generation): recognisable and checkable. */
static size_t make_value(uint64_t id, unsigned gen, size_t size, uint8_t *out)
{
    int n = snprintf((char *)out, MAX_VALUE, "{\"id\":%" PRIu64 ",\"gen\":%u,\"pad\":\"", id, gen);
    size_t len = (size_t)n;
    uint64_t x = ex_scramble(id * 131 + gen);
    while (len + 2 < size) {
        out[len++] = (uint8_t)('a' + x % 26);
        x = x / 26 ? x / 26 : ex_scramble(x + len);
    }
    out[len++] = '"';
    out[len++] = '}';
    return len;
}

typedef struct workload_result {
    uint64_t reads, absent_reads, wrong;
    double mean_us, p50_us, p99_us, absent_mean_us;
} workload_result;

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run_workload(store *s, const uint64_t *ids, uint64_t gets, uint64_t keys, const uint8_t *state,
                         size_t value_size, workload_result *out)
{
    double *lat = ex_xmalloc(prog, (size_t)gets * sizeof *lat);
    uint8_t key[MAX_KEY], val[MAX_VALUE], want[MAX_VALUE];
    uint64_t reads0 = s->block_reads, absent_reads = 0, wrong = 0, absent_n = 0;
    double absent_sum = 0, sum = 0;
    for (uint64_t g = 0; g < gets; g++) {
        uint64_t id = ids[g];
        size_t klen = make_key(id, key), vlen = 0;
        uint64_t before = s->block_reads;
        uint64_t t0 = ex_now_ns();
        int found = store_get(s, key, klen, val, &vlen);
        double us = (double)(ex_now_ns() - t0) / 1e3;
        lat[g] = us;
        sum += us;
        /* The reference: what was written last for this id. */
        int live = id < keys && state[id] != 0 && state[id] != DELETED;
        if (live) {
            size_t wlen = make_value(id, state[id], value_size, want);
            wrong += !found || vlen != wlen || memcmp(val, want, wlen) != 0;
        } else {
            wrong += found;
        }
        if (id >= keys) {
            absent_reads += s->block_reads - before;
            absent_sum += us;
            absent_n++;
        }
    }
    qsort(lat, (size_t)gets, sizeof *lat, dbl_cmp);
    out->reads = s->block_reads - reads0;
    out->absent_reads = absent_reads;
    out->wrong = wrong;
    out->mean_us = sum / (double)gets;
    out->p50_us = lat[gets / 2];
    out->p99_us = lat[gets - 1 - gets / 100];
    out->absent_mean_us = absent_n ? absent_sum / (double)absent_n : 0;
    free(lat);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    char path[1400];
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "run-", 4) != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    uint64_t keys = 1000000, gets = 200000, seed = 0, memtable_n = 50000, fanin = 4, value_size = 100,
             fp_bits = 8;
    double absent_share = 0.9;
    const char *dir_arg = NULL;
    int keep = 0, seeded = 0;
    for (int i = 1; i < argc; i++) {
        if (EX_ARG("--keys")) keys = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--gets")) gets = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--absent-share")) absent_share = ex_double(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--memtable")) memtable_n = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--fanin")) fanin = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--value-size")) value_size = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--fp-bits")) fp_bits = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--seed")) seed = ex_count(prog, argv[i], argv[i + 1]), seeded = 1, i++;
        else if (EX_ARG("--dir")) dir_arg = argv[++i];
        else if (strcmp(argv[i], "--keep") == 0) keep = 1;
        else {
            fprintf(stderr,
                    "usage: %s [--keys N] [--gets N] [--absent-share F] [--memtable N] [--fanin N]\n"
                    "       [--value-size N] [--fp-bits 8|16] [--seed S] [--dir DIR] [--keep]\n",
                    prog);
            return 2;
        }
    }
    if (keys == 0 || keys > 100000000 || gets == 0 || absent_share > 1 || memtable_n < 16 ||
        memtable_n > 1000000 || fanin < 2 || fanin > 16 || value_size < 48 || value_size > 1024 ||
        (fp_bits != 8 && fp_bits != 16)) {
        fprintf(stderr, "%s: out-of-range option (see the comment at the top of lsm_guard.c)\n", prog);
        return 2;
    }
    /* The store's filter seed: secret (random) unless given, so nobody outside can craft keys that are
     * false positives of every run (docs/GUIDE.md, "pollution"). */
    if (!seeded) {
        FILE *ur = fopen("/dev/urandom", "rb");
        if (!ur || fread(&seed, sizeof seed, 1, ur) != 1) seed = ex_now_ns();
        if (ur) fclose(ur);
    }

    char dir[1024];
    if (dir_arg && strlen(dir_arg) > 900) {
        fprintf(stderr, "%s: --dir path too long\n", prog);
        return 2;
    }
    if (dir_arg) {
        snprintf(dir, sizeof dir, "%s", dir_arg);
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) die_errno("cannot create", dir);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/lsm_guard.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) die_errno("cannot create a directory under", tmp && *tmp ? tmp : "/tmp");
    }

    /* ---- write: every key once (random key order), then overwrites and deletes ---- */
    store s;
    store_open(&s, dir, seed, (uint32_t)fp_bits, (uint32_t)memtable_n, (uint32_t)fanin);
    if (s.nruns) {
        fprintf(stderr, "%s: %s already holds runs: give an empty or new --dir\n", prog, dir);
        return 2;
    }
    uint8_t *state = ex_xcalloc(prog, (size_t)keys, 1);
    uint8_t key[MAX_KEY], val[MAX_VALUE];
    uint64_t rng = ex_scramble(seed ^ 0x5eed);
    const uint64_t overwrites = keys / 10, deletes = keys / 50;
    double t0 = ex_now();
    for (uint64_t id = 0; id < keys; id++) {
        state[id] = 1;
        store_put(&s, key, make_key(id, key), val, make_value(id, 1, value_size, val), 0);
    }
    for (uint64_t i = 0; i < overwrites + deletes; i++) {
        uint64_t id = ex_below(&rng, keys);
        size_t klen = make_key(id, key);
        if (i < overwrites) {
            unsigned gen = state[id] == DELETED ? 1 : (unsigned)state[id] % 250 + 1;
            state[id] = (uint8_t)gen;
            store_put(&s, key, klen, val, make_value(id, gen, value_size, val), 0);
        } else {
            state[id] = DELETED;
            store_put(&s, key, klen, val, 0, TOMBSTONE);
        }
    }
    flush(&s);
    double t_write = ex_now() - t0;
    const uint64_t flushes = s.flushes, compactions = s.compactions;
    const double build_s = s.build_seconds;
    store_close(&s);

    /* ---- reopen from the files: run indexes read, filters mapped ---- */
    t0 = ex_now();
    store_open(&s, dir, seed, (uint32_t)fp_bits, (uint32_t)memtable_n, (uint32_t)fanin);
    double t_open = ex_now() - t0;
    uint64_t run_bytes = 0, filter_bytes = 0, entries = 0, filtered_runs = 0;
    for (uint32_t i = 0; i < s.nruns; i++) {
        run_bytes += s.runs[i]->file_bytes;
        filter_bytes += s.runs[i]->filter_bytes;
        entries += s.runs[i]->nentries;
        filtered_runs += s.runs[i]->filter != NULL;
    }

    /* ---- the read workload: the same ids for both passes ---- */
    uint64_t *ids = ex_xmalloc(prog, (size_t)gets * sizeof *ids);
    uint64_t absent_gets = 0;
    for (uint64_t g = 0; g < gets; g++) {
        if ((double)ex_rand(&rng) / 18446744073709551616.0 < absent_share) {
            ids[g] = keys + ex_below(&rng, UINT64_C(1) << 40); /* never written */
            absent_gets++;
        } else {
            ids[g] = ex_below(&rng, keys);
        }
    }
    workload_result without, with;
    s.use_filters = 0;
    run_workload(&s, ids, gets, keys, state, (size_t)value_size, &without);
    s.use_filters = 1;
    s.filter_skips = s.wasted_reads = 0;
    run_workload(&s, ids, gets, keys, state, (size_t)value_size, &with);
    const uint64_t skips = s.filter_skips, wasted = s.wasted_reads;
    const double fpr_run = skips + wasted ? (double)wasted / (double)(skips + wasted) : 0;
    const double fpr_bound = fp_bits == 8 ? 1.0 / 256 : 1.0 / 65536;

    printf("LSM store: %" PRIu64 " keys written, then %" PRIu64 " overwrites and %" PRIu64
           " deletes, %.1f s (%" PRIu64 " flushes, %" PRIu64 " compactions, %.2f s building filters)\n",
           keys, overwrites, deletes, t_write, flushes, compactions, build_s);
    printf("on disk: %u runs (entries, oldest first:", s.nruns);
    for (uint32_t i = 0; i < s.nruns; i++) printf(" %" PRIu64, s.runs[i]->nentries);
    printf("), %.1f MB of run files\nfilters: binary fuse %u-bit, %.2f MB (%.2f bits/entry); store reopened in "
           "%.1f ms\n",
           run_bytes / 1e6, (unsigned)fp_bits, filter_bytes / 1e6, entries ? filter_bytes * 8.0 / (double)entries : 0,
           t_open * 1e3);
    printf("read workload: %" PRIu64 " gets, %.0f%% of them for absent keys (block reads come from the "
           "page cache here; on a cold disk each costs a device read)\n",
           gets, 100.0 * (double)absent_gets / (double)gets);
    printf("%-16s %12s %10s %17s %9s %9s %9s %16s\n", "", "block reads", "reads/get", "reads/absent get",
           "mean us", "p50 us", "p99 us", "absent mean us");
    const workload_result *rs[2] = { &without, &with };
    const char *names[2] = { "without filters", "with filters" };
    for (int i = 0; i < 2; i++)
        printf("%-16s %12" PRIu64 " %10.3f %17.4f %9.2f %9.2f %9.2f %16.2f\n", names[i], rs[i]->reads,
               (double)rs[i]->reads / (double)gets,
               absent_gets ? (double)rs[i]->absent_reads / (double)absent_gets : 0, rs[i]->mean_us,
               rs[i]->p50_us, rs[i]->p99_us, rs[i]->absent_mean_us);
    printf("filters avoided %" PRIu64 " of %" PRIu64 " block reads (%.1f%%); a run's filter let an absent key "
           "through %.4f%% of the time (2^-%u = %.4f%%)\n",
           without.reads - with.reads, without.reads,
           without.reads ? 100.0 * (double)(without.reads - with.reads) / (double)without.reads : 0, 100 * fpr_run,
           (unsigned)fp_bits, 100 * fpr_bound);

    int failures = 0;
    if (without.wrong || with.wrong) {
        printf("FAIL: wrong answers: %" PRIu64 " without filters, %" PRIu64 " with\n", without.wrong, with.wrong);
        failures++;
    }
    if (filtered_runs != s.nruns) {
        printf("FAIL: %" PRIu64 " of %u runs have no usable filter\n", s.nruns - filtered_runs, s.nruns);
        failures++;
    }
    /* Reads that found nothing happen only at the filters' rate (4 sigma of room for noise). */
    double expect = fpr_bound * (double)(skips + wasted);
    if ((double)wasted > expect + 4 * sqrt(expect) + 1) {
        printf("FAIL: %" PRIu64 " wasted reads, more than the filters' bound allows (%.1f expected)\n", wasted,
               expect);
        failures++;
    }
    if (!failures)
        printf("check: every get returned exactly the right value, with and without filters (%" PRIu64
               " x 2)\n",
               gets);

    store_close(&s);
    free(ids);
    free(state);
    if (!keep && !dir_arg) remove_dir(dir);
    else printf("store kept in %s\n", dir);
    return failures ? 1 : 0;
}
