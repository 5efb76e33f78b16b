/*
 * Persistence: the file format, save/load through every form, mmap (read-only and shared writable),
 * corruption, crash safety of saves, and the generic handle. Every test loops over the factories of
 * tests/factories.h, so a new type is covered by adding its entry there.
 */
#include "testutil.h"
#include "factories.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <dirent.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#define N 1000000
#define NSMALL 20000

static char g_dir[64];

/* ---- helpers ---- */

static void put32(uint8_t *b, uint32_t v)
{
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t get64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
    return v;
}

static void fix_header_sum(uint8_t *b)
{
    put64(b + 56, 0);
    put64(b + 56, XXH3_64bits(b, 64));
}

/* Recompute both checksums after a deliberate edit, so the edit reaches the check behind them. */
static void fix_sums(uint8_t *b, size_t len)
{
    uint32_t hs = get32(b + 24);
    uint64_t body = get64(b + 40);
    if (hs >= 64 && hs <= len && body <= len - hs) put64(b + 48, XXH3_64bits(b + hs, (size_t)body));
    if (hs >= 64 && hs <= len) {
        put64(b + 56, 0);
        put64(b + 56, XXH3_64bits(b, hs));
    }
}

static char *path_in_dir(const char *name)
{
    static char p[4][400];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%s/%s", g_dir, name);
    return p[i];
}

static void save_bytes(const bk_filter *f, uint8_t **buf, size_t *len)
{
    void *p;
    assert_int_equal(bk_filter_save_alloc(f, &p, len), BK_OK);
    *buf = p;
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

/* Answers for keys (set, 0..n-1), via the batch API. */
static uint8_t *answers(const bk_filter *f, uint64_t set, uint64_t n)
{
    uint8_t *r = malloc(n);
    enum { B = 4096 };
    static tf_key keys[B];
    const void *ptrs[B];
    size_t lens[B];
    for (uint64_t i = 0; i < n; i += B) {
        size_t m = n - i < B ? (size_t)(n - i) : B;
        for (size_t j = 0; j < m; j++) {
            keys[j] = tf_make_key(set, i + j);
            ptrs[j] = keys[j].b;
            lens[j] = sizeof keys[j].b;
        }
        bk_filter_contains_many(f, ptrs, lens, m, r + i, NULL);
    }
    return r;
}

/* g answers exactly like the reference answers, and every inserted key is present. */
static void assert_same_answers(const bk_filter *g, const uint8_t *ref_in, const uint8_t *ref_out, uint64_t n,
                                const char *what)
{
    uint8_t *in = answers(g, 1, n), *out = answers(g, 2, n);
    for (uint64_t i = 0; i < n; i++)
        /* (a Top-K's contains is "in the top k", not membership: only its answers' sameness counts) */
        if (!in[i] && bk_filter_type(g) != BK_TYPE_TOPK)
            fail_msg("%s: false negative for key %llu", what, (unsigned long long)i);
    if (memcmp(in, ref_in, n) || memcmp(out, ref_out, n)) fail_msg("%s: answers differ", what);
    free(in);
    free(out);
}

static void assert_same_bytes(const bk_filter *g, const uint8_t *ref, size_t ref_len, const char *what)
{
    uint8_t *b;
    size_t n;
    save_bytes(g, &b, &n);
    if (n != ref_len || memcmp(b, ref, n)) fail_msg("%s: saved bytes differ", what);
    bk_filter_buffer_free(b);
}

static bk_filter *make(const tf_factory *t, uint64_t cap, uint64_t n, uint64_t seed)
{
    bk_filter *f = t->make(cap, n, seed);
    if (!f) fail_msg("factory %s failed", t->name);
    return f;
}

static int setup(void **state)
{
    (void)state;
    strcpy(g_dir, "/tmp/bk-persist.XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}
static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- round trips ---- */

/* A save sink into a fixed buffer that fails (BK_EIO) once more than stop_after bytes would arrive. */
typedef struct { uint8_t *buf; size_t cap, len, stop_after; } sink_buf_t;
static bk_status sink_into(void *ctx, const void *data, size_t n)
{
    sink_buf_t *b = ctx;
    if (b->len + n > b->stop_after || b->len + n > b->cap) return BK_EIO;
    memcpy(b->buf + b->len, data, n);
    b->len += n;
    return BK_OK;
}

static void roundtrip_every_form(void **state)
{
    (void)state;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        const tf_factory *ft = &tf_factories[t];
        bk_filter *f = make(ft, N, N, 7), *g;
        uint8_t *ref_in = answers(f, 1, N), *ref_out = answers(f, 2, N);
        uint8_t *ref;
        size_t ref_len, n;
        save_bytes(f, &ref, &ref_len);
        assert_int_equal(bk_filter_save_size(f, &n), BK_OK);
        assert_int_equal(n, ref_len);

        /* buffer (copying) */
        assert_int_equal(bk_filter_load_buffer(ref, ref_len, 0, &g), BK_OK);
        assert_int_equal(bk_filter_type(g), ft->type);
        assert_int_equal(bk_filter_seed(g), 7);
        assert_int_equal(bk_filter_backing(g), BK_BACKING_MEMORY);
        assert_same_bytes(g, ref, ref_len, "buffer");
        assert_same_answers(g, ref_in, ref_out, N, "buffer");
        bk_stats a, b;
        bk_filter_stats(f, &a);
        bk_filter_stats(g, &b);
        assert_int_equal(a.count, b.count);
        assert_int_equal(a.bits, b.bits);
        assert_int_equal(a.memory_bytes, b.memory_bytes);
        bk_filter_free(g);

        /* path, then mmap of the same file */
        const char *p = path_in_dir("rt.bkf");
        assert_int_equal(bk_filter_save_path(f, p), BK_OK);
        size_t flen;
        uint8_t *fb = tu_read_file(p, &flen);
        assert_int_equal(flen, ref_len);
        assert_memory_equal(fb, ref, ref_len);
        free(fb);
        assert_int_equal(bk_filter_load_path(p, 0, &g), BK_OK);
        assert_same_bytes(g, ref, ref_len, "path");
        assert_same_answers(g, ref_in, ref_out, N, "path");
        bk_filter_free(g);
        for (unsigned fl = 0; fl < 2; fl++) {
            unsigned flags = fl ? BK_LOAD_NO_CHECKSUM | BK_OPEN_POPULATE : 0;
            assert_int_equal(bk_filter_open_mmap(p, flags, &g), BK_OK);
            assert_int_equal(bk_filter_backing(g), BK_BACKING_MAP_READONLY);
            assert_same_bytes(g, ref, ref_len, "mmap");
            assert_same_answers(g, ref_in, ref_out, N, "mmap");
            bk_filter_free(g);
        }

        /* a borrowed aligned buffer, in place */
        uint8_t *al = aligned_alloc(64, (ref_len + 63) / 64 * 64);
        memcpy(al, ref, ref_len);
        assert_int_equal(bk_filter_open_buffer(al, ref_len, 0, &g), BK_OK);
        assert_same_answers(g, ref_in, ref_out, N, "open_buffer");
        bk_filter_free(g);
        assert_int_equal(bk_filter_open_buffer(al + 1, ref_len - 1, 0, &g), BK_EINVAL);
        assert_null(g);
        free(al);

        /* descriptor and stdio stream */
        const char *q = path_in_dir("fd.bkf");
        int fd = open(q, O_RDWR | O_CREAT | O_TRUNC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(bk_filter_save_fd(f, fd), BK_OK);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        assert_int_equal(bk_filter_load_fd(fd, 0, &g), BK_OK);
        close(fd);
        assert_same_bytes(g, ref, ref_len, "fd");
        bk_filter_free(g);
        FILE *fp = fopen(q, "w+b");
        assert_non_null(fp);
        assert_int_equal(bk_filter_save_file(f, fp), BK_OK);
        rewind(fp);
        assert_int_equal(bk_filter_load_file(fp, 0, &g), BK_OK);
        fclose(fp);
        assert_same_bytes(g, ref, ref_len, "FILE");
        assert_same_answers(g, ref_in, ref_out, N, "FILE");
        bk_filter_free(g);

        /* a callback sink gets exactly the saved bytes; a sink's error stops the save and comes back */
        sink_buf_t sb = { malloc(ref_len), ref_len, 0, SIZE_MAX };
        assert_int_equal(bk_filter_save_sink(f, sink_into, &sb), BK_OK);
        assert_int_equal(sb.len, ref_len);
        assert_memory_equal(sb.buf, ref, ref_len);
        sb.len = 0;
        sb.stop_after = 100;
        assert_int_equal(bk_filter_save_sink(f, sink_into, &sb), BK_EIO);
        assert_true(sb.len <= 100);
        assert_int_equal(bk_filter_save_sink(f, NULL, &sb), BK_EINVAL);
        assert_int_equal(bk_filter_save_sink(NULL, sink_into, &sb), BK_EINVAL);
        free(sb.buf);

        free(ref_in);
        free(ref_out);
        bk_filter_buffer_free(ref);
        bk_filter_free(f);
    }
}

/* Several filters back to back in one stream (a pipe: not seekable, no size known). */
static void streams_back_to_back(void **state)
{
    (void)state;
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        FILE *w = fdopen(pfd[1], "wb");
        int ok = 1;
        for (size_t t = 0; t < TF_NFACTORIES; t++) {
            bk_filter *f = tf_factories[t].make(NSMALL, NSMALL / 2, t);
            ok &= f && bk_filter_save_file(f, w) == BK_OK && bk_filter_save_fd(f, -1) == BK_EINVAL;
            bk_filter_free(f);
        }
        ok &= fclose(w) == 0;
        _exit(ok ? 0 : 1);
    }
    close(pfd[1]);
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        bk_filter *f = make(&tf_factories[t], NSMALL, NSMALL / 2, t), *g;
        uint8_t *ref;
        size_t ref_len;
        save_bytes(f, &ref, &ref_len);
        assert_int_equal(bk_filter_load_fd(pfd[0], 0, &g), BK_OK);
        assert_same_bytes(g, ref, ref_len, tf_factories[t].name);
        bk_filter_free(g);
        bk_filter_buffer_free(ref);
        bk_filter_free(f);
    }
    bk_filter *g = (bk_filter *)1;
    assert_int_equal(bk_filter_load_fd(pfd[0], 0, &g), BK_ETRUNCATED); /* end of stream */
    assert_null(g);
    close(pfd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void save_buffer_size_query(void **state)
{
    (void)state;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        bk_filter *f = make(&tf_factories[t], 1000, 100, 1);
        size_t need, w = 12345;
        assert_int_equal(bk_filter_save_size(f, &need), BK_OK);
        assert_int_equal(bk_filter_save_buffer(f, NULL, 0, &w), BK_EBUFSIZE);
        assert_int_equal(w, need);
        uint8_t *b = malloc(need + 1);
        memset(b, 0xAB, need + 1);
        assert_int_equal(bk_filter_save_buffer(f, b, need - 1, &w), BK_EBUFSIZE);
        assert_int_equal(w, need);
        assert_int_equal(b[0], 0xAB); /* nothing written */
        assert_int_equal(bk_filter_save_buffer(f, b, need + 1, &w), BK_OK);
        assert_int_equal(w, need);
        assert_int_equal(b[need], 0xAB);
        bk_file_info in;
        assert_int_equal(bk_filter_peek_header(b, need, &in), BK_OK);
        assert_int_equal(in.version_major, BK_FORMAT_VERSION_MAJOR);
        assert_int_equal(in.version_minor, BK_FORMAT_VERSION_MINOR);
        assert_int_equal(in.type, tf_factories[t].type);
        assert_int_equal(in.header_size, BK_FILE_HEADER_SIZE);
        assert_int_equal(in.total_size, need);
        assert_int_equal(in.seed, 1);
        assert_int_equal(in.hash_id, BK_HASH_XXH3_64);
        assert_int_equal(in.flags, 0); /* writers set no flag (docs/FORMAT.md section 3) */
        assert_int_equal(bk_filter_save_buffer(NULL, b, need, &w), BK_EINVAL);
        assert_int_equal(bk_filter_save_buffer(f, b, need, NULL), BK_EINVAL);
        void *p = (void *)1;
        size_t l = 1;
        assert_int_equal(bk_filter_save_alloc(NULL, &p, &l), BK_EINVAL);
        assert_null(p);
        free(b);
        bk_filter_free(f);
    }
}

/* ---- corruption ---- */

/* The verdict each corrupted form must get, through the copying loader, the borrowing loader and
 * (as a file) mmap and the path loader. */
static void expect_everywhere(const uint8_t *b, size_t len, unsigned flags, bk_status want, const char *what)
{
    bk_filter *g = (bk_filter *)1;
    bk_status s = bk_filter_load_buffer(b, len, flags, &g);
    if (s != want) fail_msg("%s: load_buffer gave %s, want %s", what, bk_strerror(s), bk_strerror(want));
    if (s != BK_OK) assert_null(g);
    bk_filter_free(g);
    uint8_t *al = aligned_alloc(64, len / 64 * 64 + 64);
    memcpy(al, b, len);
    s = bk_filter_open_buffer(al, len, flags, &g);
    if (s != want) fail_msg("%s: open_buffer gave %s, want %s", what, bk_strerror(s), bk_strerror(want));
    bk_filter_free(g);
    free(al);
}
static void expect_file(const uint8_t *b, size_t len, unsigned flags, bk_status want, const char *what)
{
    const char *p = path_in_dir("corrupt.bkf");
    write_file(p, b, len);
    bk_filter *g = (bk_filter *)1;
    bk_status s = bk_filter_open_mmap(p, flags, &g);
    if (s != want) fail_msg("%s: open_mmap gave %s, want %s", what, bk_strerror(s), bk_strerror(want));
    if (s != BK_OK) assert_null(g);
    bk_filter_free(g);
    s = bk_filter_load_path(p, flags, &g);
    if (s != want) fail_msg("%s: load_path gave %s, want %s", what, bk_strerror(s), bk_strerror(want));
    bk_filter_free(g);
}

static void corrupt_truncation(void **state)
{
    (void)state;
    uint64_t rng = 11;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        bk_filter *f = make(&tf_factories[t], NSMALL, NSMALL, 3);
        uint8_t *b;
        size_t len;
        save_bytes(f, &b, &len);
        char what[96];
        for (size_t cut = 0; cut <= BK_FILE_HEADER_SIZE; cut++) {
            snprintf(what, sizeof what, "%s cut at header offset %zu", tf_factories[t].name, cut);
            expect_everywhere(b, cut, 0, BK_ETRUNCATED, what);
            if (cut % 8 == 0) expect_file(b, cut, 0, BK_ETRUNCATED, what);
        }
        for (int i = 0; i < 200; i++) {
            size_t cut = BK_FILE_HEADER_SIZE + 1 + (size_t)(tu_splitmix(&rng) % (len - BK_FILE_HEADER_SIZE - 1));
            snprintf(what, sizeof what, "%s cut at %zu of %zu", tf_factories[t].name, cut, len);
            expect_everywhere(b, cut, 0, BK_ETRUNCATED, what);
            expect_everywhere(b, cut, BK_LOAD_NO_CHECKSUM, BK_ETRUNCATED, what);
            if (i % 20 == 0) expect_file(b, cut, 0, BK_ETRUNCATED, what);
        }
        /* one byte too many: a file holds exactly one filter */
        uint8_t *longer = malloc(len + 1);
        memcpy(longer, b, len);
        longer[len] = 0;
        expect_everywhere(longer, len + 1, 0, BK_ECORRUPT, "trailing byte");
        expect_file(longer, len + 1, 0, BK_ECORRUPT, "trailing byte");
        free(longer);
        bk_filter_buffer_free(b);
        bk_filter_free(f);
    }
}

/* What a single-bit flip at header bit `bit` must give (docs/FORMAT.md, validation order). */
static bk_status header_flip_verdict(const uint8_t *b, unsigned bit)
{
    unsigned byte = bit / 8;
    if (byte < 8) return BK_ECORRUPT;              /* magic */
    if (byte < 10) return BK_EVERSION;             /* major version */
    if (byte >= 24 && byte < 28) {                 /* header size: range-checked before the checksum */
        uint32_t hs = get32(b + 24); /* already flipped */
        if (hs < 64 || hs % 64 || hs > 4096) return BK_ECORRUPT;
    }
    return BK_ECHECKSUM;
}

static void corrupt_header_bitflips(void **state)
{
    (void)state;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        bk_filter *f = make(&tf_factories[t], NSMALL, NSMALL, 3);
        uint8_t *b;
        size_t len;
        save_bytes(f, &b, &len);
        char what[96];
        for (unsigned bit = 0; bit < BK_FILE_HEADER_SIZE * 8; bit++) {
            b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            bk_status want = header_flip_verdict(b, bit);
            /* a header size flipped to a larger legal value runs past a small file first */
            if (bit / 8 >= 24 && bit / 8 < 28 && want == BK_ECHECKSUM && get32(b + 24) > len) want = BK_ETRUNCATED;
            snprintf(what, sizeof what, "%s header bit %u", tf_factories[t].name, bit);
            expect_everywhere(b, len, 0, want, what);
            expect_everywhere(b, len, BK_LOAD_NO_CHECKSUM, want, what);
            if (bit % 16 == 0) expect_file(b, len, 0, want, what);
            b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
        expect_everywhere(b, len, 0, BK_OK, "restored");
        bk_filter_buffer_free(b);
        bk_filter_free(f);
    }
}

static void corrupt_payload_flips(void **state)
{
    (void)state;
    uint64_t rng = 5;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        bk_filter *f = make(&tf_factories[t], NSMALL, NSMALL, 3);
        uint8_t *b;
        size_t len;
        save_bytes(f, &b, &len);
        char what[96];
        for (int i = 0; i < 300; i++) {
            size_t off = BK_FILE_HEADER_SIZE + (size_t)(tu_splitmix(&rng) % (len - BK_FILE_HEADER_SIZE));
            uint8_t x = (uint8_t)(1 + tu_splitmix(&rng) % 255);
            b[off] ^= x;
            snprintf(what, sizeof what, "%s payload byte %zu ^ %u", tf_factories[t].name, off, x);
            expect_everywhere(b, len, 0, BK_ECHECKSUM, what);
            if (i % 30 == 0) expect_file(b, len, 0, BK_ECHECKSUM, what);
            /* without the checksum, or with it recomputed, the body validation is all that stands:
             * any verdict, but no crash and no read outside the buffer (ASan) */
            bk_filter *g = NULL;
            bk_status s = bk_filter_load_buffer(b, len, BK_LOAD_NO_CHECKSUM, &g);
            assert_true(s == BK_OK || s == BK_ECORRUPT || s == BK_ETRUNCATED);
            bk_filter_free(g);
            uint8_t *c = malloc(len);
            memcpy(c, b, len);
            fix_sums(c, len);
            s = bk_filter_load_buffer(c, len, 0, &g);
            assert_true(s == BK_OK || s == BK_ECORRUPT || s == BK_ETRUNCATED);
            if (g) (void)bk_filter_contains(g, "x", 1);
            bk_filter_free(g);
            free(c);
            b[off] ^= x;
        }
        expect_everywhere(b, len, 0, BK_OK, "restored");
        bk_filter_buffer_free(b);
        bk_filter_free(f);
    }
}

/* Deliberate edits with valid checksums: each must reach its own specific verdict. */
static void corrupt_fields(void **state)
{
    (void)state;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        bk_filter *f = make(&tf_factories[t], NSMALL, NSMALL / 2, 3);
        uint8_t *ref;
        size_t len;
        save_bytes(f, &ref, &len);
        uint8_t *b = malloc(len + 4096);
        bk_filter *g;
#define EDIT(stmt, want, what)                                                                        \
    do {                                                                                          \
        memcpy(b, ref, len);                                                                      \
        stmt;                                                                                     \
        expect_everywhere(b, len, 0, want, what);                                                 \
        expect_file(b, len, 0, want, what);                                                       \
    } while (0)
        EDIT(memcpy(b, "BLOOMKIT", 8), BK_ECORRUPT, "wrong magic");
        EDIT((b[0] = 0x88, fix_sums(b, len)), BK_ECORRUPT, "wrong magic, valid checksum");
        EDIT((b[8] = 2, fix_sums(b, len)), BK_EVERSION, "major 2");
        EDIT((b[8] = 0, fix_sums(b, len)), BK_EVERSION, "major 0");
        EDIT((b[9] = 1, fix_sums(b, len)), BK_EVERSION, "major 257");
        EDIT((b[10] = 7, fix_sums(b, len)), BK_OK, "newer minor version reads");
        EDIT((put32(b + 12, 99), fix_sums(b, len)), BK_ETYPE, "unknown type");
        EDIT((put32(b + 12, 0), fix_sums(b, len)), BK_ETYPE, "type 0");
        EDIT((put32(b + 20, 2), fix_sums(b, len)), BK_ENOTSUP, "unknown hash function");
        EDIT((put32(b + 16, 1u << 3), fix_sums(b, len)), BK_EVERSION, "unknown must-understand flag");
        EDIT((put32(b + 16, 1u << 20), fix_sums(b, len)), BK_OK, "unknown optional flag");
        EDIT((put32(b + 28, 0xdeadbeef), fix_sums(b, len)), BK_OK, "reserved field is ignored");
        EDIT((put32(b + 24, 0), fix_sums(b, len)), BK_ECORRUPT, "header size 0");
        EDIT((put32(b + 24, 65), fix_sums(b, len)), BK_ECORRUPT, "header size 65");
        EDIT((put32(b + 24, 0xFFFFFFC0u), fix_sums(b, len)), BK_ECORRUPT, "header size huge");
        EDIT((put64(b + 40, UINT64_MAX), fix_sums(b, len)), BK_ETOOBIG, "body size 2^64-1");
        EDIT((put64(b + 40, UINT64_MAX - 63), fix_sums(b, len)), BK_ETOOBIG, "body size wraps with the header");
        EDIT((put64(b + 40, (UINT64_C(1) << 38) + (UINT64_C(1) << 20)), fix_sums(b, len)), BK_ETRUNCATED,
             "body size at the limit, file short");
        EDIT((put64(b + 40, get64(b + 40) + 1), fix_sums(b, len)), BK_ETRUNCATED, "body size one too many");
        EDIT((put64(b + 40, get64(b + 40) - 1), fix_sums(b, len)), BK_ECORRUPT, "body size one too few");
        EDIT((put64(b + 48, get64(b + 48) ^ 1), fix_header_sum(b)), BK_ECHECKSUM, "body checksum, header fixed");
        /* with the body checksum wrong, skipping it loads fine: the body itself is intact */
        memcpy(b, ref, len);
        put64(b + 48, 1);
        fix_header_sum(b);
        assert_int_equal(bk_filter_load_buffer(b, len, BK_LOAD_NO_CHECKSUM, &g), BK_OK);
        bk_filter_free(g);

        /* a newer minor version with a 128-byte header: the extension is skipped */
        memset(b, 0, len + 64);
        memcpy(b, ref, 64);
        memcpy(b + 128, ref + 64, len - 64);
        b[10] = 3;
        put32(b + 24, 128);
        memset(b + 64, 0x5a, 64);
        fix_sums(b, len + 64);
        expect_everywhere(b, len + 64, 0, BK_OK, "128-byte header");
        expect_file(b, len + 64, 0, BK_OK, "128-byte header");
        assert_int_equal(bk_filter_load_buffer(b, len + 64, 0, &g), BK_OK);
        assert_same_bytes(g, ref, len, "128-byte header re-saved as 1.0");
        bk_filter_free(g);
        if (tf_factories[t].shared_writable) {
            const char *p = path_in_dir("minor.bkf");
            write_file(p, b, len + 64);
            assert_int_equal(bk_filter_open_mmap(p, BK_OPEN_WRITE_SHARED, &g), BK_EVERSION);
        }

        /* the body shorter or longer than the type's parameters say (sizes and checksums agree) */
        memcpy(b, ref, len);
        put64(b + 40, get64(b + 40) - 64);
        fix_sums(b, len - 64);
        bk_status s = bk_filter_load_buffer(b, len - 64, 0, &g);
        assert_true(s == BK_ETRUNCATED || s == BK_ECORRUPT);
        memcpy(b, ref, len);
        memset(b + len, 0, 64);
        put64(b + 40, get64(b + 40) + 64);
        fix_sums(b, len + 64);
        expect_everywhere(b, len + 64, 0, BK_ECORRUPT, "body longer than its parameters");

        /* not a filter at all */
        expect_everywhere((const uint8_t *)"hello, world\n", 13, 0, BK_ECORRUPT, "text");
        expect_file((const uint8_t *)"hello, world\n", 13, 0, BK_ECORRUPT, "text file");
        expect_file(ref, 0, 0, BK_ETRUNCATED, "empty file");
#undef EDIT
        free(b);
        bk_filter_buffer_free(ref);
        bk_filter_free(f);
    }
    bk_filter *g = (bk_filter *)1;
    assert_int_equal(bk_filter_open_mmap(path_in_dir("does-not-exist"), 0, &g), BK_EIO);
    assert_int_equal(errno, ENOENT);
    assert_null(g);
    assert_int_equal(bk_filter_load_path(path_in_dir("does-not-exist"), 0, &g), BK_EIO);
    assert_int_equal(bk_filter_open_mmap(g_dir, 0, &g), BK_EINVAL); /* a directory */
    bk_file_info in;
    assert_int_equal(bk_filter_peek_header(NULL, 0, &in), BK_EINVAL);
    assert_int_equal(bk_filter_peek_header("\x89" "BKF", 4, &in), BK_ETRUNCATED);
    assert_int_equal(bk_filter_peek_header("PK", 2, &in), BK_ECORRUPT);
}

/* The classic filter's own parameters against its payload (docs/FORMAT.md 6.1). */
static void bloom_body_inconsistent(void **state)
{
    (void)state;
    for (int layout = 0; layout <= 1; layout++) {
        bk_filter *f = tf_make_bloom((bk_layout)layout, NSMALL, NSMALL / 2, 9);
        uint8_t *ref;
        size_t len;
        save_bytes(f, &ref, &len);
        uint8_t *b = malloc(len);
        const size_t B = BK_FILE_HEADER_SIZE; /* body offset */
        uint64_t m = get64(ref + B + 8);
        uint32_t k = get32(ref + B + 4);
#define BODY_EDIT(stmt, want, what)                                                                   \
    do {                                                                                          \
        memcpy(b, ref, len);                                                                      \
        stmt;                                                                                     \
        fix_sums(b, len);                                                                         \
        expect_everywhere(b, len, 0, want, what);                                                 \
    } while (0)
        BODY_EDIT(put64(b + B + 8, m * 2), BK_ETRUNCATED, "m twice the payload");
        BODY_EDIT(put64(b + B + 8, m / 2 / k * k), BK_ECORRUPT, "m half the payload");
        BODY_EDIT(put64(b + B + 8, UINT64_C(1) << 63), BK_ECORRUPT, "m 2^63");
        BODY_EDIT(put64(b + B + 8, UINT64_MAX), BK_ECORRUPT, "m 2^64-1");
        BODY_EDIT(put64(b + B + 8, 0), BK_ECORRUPT, "m 0");
        BODY_EDIT(put32(b + B + 4, 0), BK_ECORRUPT, "k 0");
        BODY_EDIT(put32(b + B + 4, 65), BK_ECORRUPT, "k 65");
        BODY_EDIT(put32(b + B, 2), BK_ECORRUPT, "layout 2");
        BODY_EDIT(put64(b + B + 16, 0), BK_ECORRUPT, "capacity 0");
        BODY_EDIT(put64(b + B + 32, UINT64_C(0x7ff8000000000000)), BK_ECORRUPT, "fpr NaN");
        if (m % 512) BODY_EDIT(b[len - 1] |= 0x80, BK_ECORRUPT, "a bit set past m");
        if (layout == 1) BODY_EDIT(put64(b + B + 8, m - 1), BK_ECORRUPT, "partitioned m not a multiple of k");
#undef BODY_EDIT
        free(b);
        bk_filter_buffer_free(ref);
        bk_filter_free(f);
    }
}

/* ---- the generic handle ---- */

static void handle_dispatch(void **state)
{
    (void)state;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        const tf_factory *ft = &tf_factories[t];
        if (ft->static_set) {
            /* built once from all keys: queries and stats work, every mutation is refused */
            bk_filter *s1 = make(ft, 1000, 1000, 77), *s2 = make(ft, 1000, 1000, 77);
            assert_non_null(bk_filter_get(s1, ft->type));
            uint64_t hk[2] = { 1, 2 };
            const void *kp[1] = { "k" };
            size_t kl[1] = { 1 };
            assert_int_equal(bk_filter_add(s1, "k", 1), BK_ENOTSUP);
            assert_int_equal(bk_filter_add_hash(s1, 1), BK_ENOTSUP);
            assert_int_equal(bk_filter_add_hashes(s1, hk, 2, NULL), BK_ENOTSUP);
            assert_int_equal(bk_filter_add_many(s1, kp, kl, 1, NULL), BK_ENOTSUP);
            assert_int_equal(bk_filter_remove(s1, "k", 1), BK_ENOTSUP);
            assert_int_equal(bk_filter_clear(s1), BK_ENOTSUP);
            assert_int_equal(bk_filter_merge(s1, s2), BK_ENOTSUP);
            for (uint64_t i = 0; i < 1000; i++) {
                tf_key k = tf_make_key(1, i);
                assert_true(bk_filter_contains(s1, k.b, sizeof k.b));
                assert_true(bk_filter_contains_hash(s1, bk_hash64(k.b, sizeof k.b, 77)));
            }
            bk_stats st;
            assert_int_equal(bk_filter_stats(s1, &st), BK_OK);
            assert_int_equal(st.type, ft->type);
            assert_int_equal(st.seed, 77);
            assert_int_equal(st.count, 1000);
            bk_filter_free(s1);
            bk_filter_free(s2);
            continue;
        }
        /* Top-K: every check below asserts membership (all added keys found, found after a merge),
         * which a Top-K's "in the top k" is not; its calls and forms are tests/test_topk.c's */
        if (!tf_membership(ft)) continue;
        bk_filter *a = make(ft, 10000, 0, 77), *b = make(ft, 10000, 0, 77);
        assert_non_null(bk_filter_get(a, ft->type));
        assert_null(bk_filter_get(a, (bk_type)(ft->type == BK_TYPE_BLOOM ? BK_TYPE_FUSE : BK_TYPE_BLOOM)));
        assert_null(bk_filter_get(NULL, ft->type));
        /* bytes forms == pre-hashed forms of bk_hash64(key, len, seed) */
        enum { M = 3000 };
        static tf_key keys[M];
        const void *ptrs[M];
        size_t lens[M];
        uint64_t h[M];
        for (int i = 0; i < M; i++) {
            /* keys of 8 to 16 bytes, the index first so all are distinct, and the empty key once: a
             * cuckoo filter holds at most 2b copies of one key */
            uint64_t idx = (uint64_t)i, set = 5;
            memcpy(keys[i].b, &idx, 8);
            memcpy(keys[i].b + 8, &set, 8);
            ptrs[i] = keys[i].b;
            lens[i] = i == 0 ? 0 : 8 + (size_t)(i % 9);
            h[i] = bk_hash64(ptrs[i], lens[i], 77);
            assert_int_equal(bk_filter_add(a, ptrs[i], lens[i]), BK_OK);
        }
        assert_int_equal(bk_filter_add_hashes(b, h, M, NULL), BK_OK);
        uint8_t *sa, *sb;
        size_t la, lb;
        save_bytes(a, &sa, &la);
        save_bytes(b, &sb, &lb);
        assert_int_equal(la, lb);
        assert_memory_equal(sa, sb, la);
        static uint8_t r[M];
        assert_int_equal(TU_HITS(bk_filter_contains_many, a, ptrs, lens, M, r), M);
        assert_int_equal(TU_HITS(bk_filter_contains_hashes, b, h, M, NULL), M);
        for (int i = 0; i < M; i++) {
            assert_true(bk_filter_contains(b, ptrs[i], lens[i]));
            assert_true(bk_filter_contains_hash(a, h[i]));
        }
        assert_int_equal(bk_filter_add_many(a, NULL, lens, 1, NULL), BK_EINVAL);
        assert_int_equal(bk_filter_add(a, NULL, 1), BK_EINVAL);
        assert_int_equal(bk_filter_add(NULL, "x", 1), BK_EINVAL);

        /* remove: BK_ENOTSUP when the type has no delete */
        bk_status s = bk_filter_remove(a, ptrs[0], lens[0]);
        if (ft->type == BK_TYPE_BLOOM) assert_int_equal(s, BK_ENOTSUP);
        if (s == BK_OK) assert_int_equal(bk_filter_add(a, ptrs[0], lens[0]), BK_OK); /* put it back */

        /* stats through the handle */
        bk_stats st;
        assert_int_equal(bk_filter_stats(a, &st), BK_OK);
        assert_int_equal(st.type, ft->type);
        assert_int_equal(st.seed, 77);
        assert_int_equal(bk_filter_stats(NULL, &st), BK_EINVAL);

        /* merge: union; incompatible geometry or seed refused, dst unchanged. Types without a union
         * (cuckoo: fingerprints cannot be re-placed without their keys) say BK_ENOTSUP. */
        bk_filter *c = make(ft, 10000, 0, 77), *d = make(ft, 20000, 0, 77), *e = make(ft, 10000, 0, 78);
        assert_int_equal(bk_filter_add(c, "only-in-c", 9), BK_OK);
        bk_status ms = bk_filter_merge(c, a);
        bool has_merge = ms != BK_ENOTSUP;
        uint8_t *sc;
        size_t lc;
        if (has_merge) {
            assert_int_equal(ms, BK_OK);
            assert_true(bk_filter_contains(c, "only-in-c", 9));
            for (int i = 0; i < M; i++) assert_true(bk_filter_contains_hash(c, h[i]));
        }
        save_bytes(c, &sc, &lc);
        assert_int_equal(bk_filter_merge(c, d), has_merge ? BK_EINCOMPAT : BK_ENOTSUP);
        assert_int_equal(bk_filter_merge(c, e), has_merge ? BK_EINCOMPAT : BK_ENOTSUP);
        assert_same_bytes(c, sc, lc, "unchanged after a refused merge");
        for (size_t u = 0; u < TF_NFACTORIES; u++) {
            if (tf_factories[u].type == ft->type) continue;
            bk_filter *o = make(&tf_factories[u], 10000, 0, 77);
            assert_int_equal(bk_filter_merge(c, o), BK_EINCOMPAT);
            bk_filter_free(o);
        }
        assert_int_equal(bk_filter_merge(NULL, c), BK_EINVAL);

        /* clear */
        assert_int_equal(bk_filter_clear(c), BK_OK);
        assert_int_equal(TU_HITS(bk_filter_contains_hashes, c, h, M, NULL) < M / 10, true);

        /* unwrap gives the typed filter back; wrapping an unknown type does not take it */
        void *typed = NULL;
        assert_int_equal(bk_filter_unwrap(d, (bk_type)99, &typed), BK_ETYPE);
        assert_int_equal(bk_filter_unwrap(d, ft->type, &typed), BK_OK);
        assert_non_null(typed);
        bk_filter *w = (bk_filter *)1;
        assert_int_equal(bk_filter_wrap((bk_type)99, typed, &w), BK_ETYPE);
        assert_null(w);
        assert_int_equal(bk_filter_wrap(ft->type, NULL, &w), BK_EINVAL);
        assert_int_equal(bk_filter_wrap(ft->type, typed, &w), BK_OK);
        assert_ptr_equal(bk_filter_get(w, ft->type), typed);
        bk_filter_free(w);

        /* a read-only mapping answers queries and refuses every mutation */
        const char *p = path_in_dir("ro.bkf");
        assert_int_equal(bk_filter_save_path(a, p), BK_OK);
        bk_filter *ro;
        assert_int_equal(bk_filter_open_mmap(p, 0, &ro), BK_OK);
        assert_int_equal(TU_HITS(bk_filter_contains_hashes, ro, h, M, NULL), M);
        assert_int_equal(bk_filter_add(ro, "k", 1), BK_ENOTSUP);
        assert_int_equal(bk_filter_add_hash(ro, 1), BK_ENOTSUP);
        assert_int_equal(bk_filter_add_hashes(ro, h, 2, NULL), BK_ENOTSUP);
        assert_int_equal(bk_filter_add_many(ro, ptrs, lens, 2, NULL), BK_ENOTSUP);
        assert_int_equal(bk_filter_remove(ro, "k", 1), BK_ENOTSUP);
        assert_int_equal(bk_filter_clear(ro), BK_ENOTSUP);
        assert_int_equal(bk_filter_merge(ro, a), BK_ENOTSUP);
        assert_int_equal(bk_filter_unwrap(ro, ft->type, &typed), BK_EINVAL);
        assert_int_equal(bk_filter_sync(ro), BK_OK);
        assert_int_equal(bk_filter_merge(c, ro), has_merge ? BK_OK : BK_ENOTSUP); /* a mapping is a fine source */
        assert_int_equal(bk_filter_close(ro), BK_OK);

        bk_filter_buffer_free(sa);
        bk_filter_buffer_free(sb);
        bk_filter_buffer_free(sc);
        bk_filter_free(a);
        bk_filter_free(b);
        bk_filter_free(c);
        bk_filter_free(e);
    }
    assert_true(bk_filter_type_registered(BK_TYPE_BLOOM));
    assert_false(bk_filter_type_registered((bk_type)0));
    assert_false(bk_filter_type_registered((bk_type)99));
    bk_filter_free(NULL);
    assert_int_equal(bk_filter_close(NULL), BK_OK);
}

/* A damaged file may claim any size in its body's fields, but loading it must never allocate more than
 * the file could carry: every declared size is checked against the input before memory is taken for
 * it. The allocator refuses any block over twice the file's length plus 1 MiB, so a loader that
 * allocates from an unchecked field returns BK_ENOMEM here (and a fuzzer's allocation limit trips). */
static size_t g_cap;
static bool g_refused;
static void *cap_malloc(void *o, size_t n)
{
    (void)o;
    if (n > g_cap) {
        g_refused = true;
        return NULL;
    }
    return malloc(n);
}
static void *cap_calloc(void *o, size_t c, size_t n)
{
    (void)o;
    if (n && c > g_cap / n) {
        g_refused = true;
        return NULL;
    }
    return calloc(c, n);
}
static void cap_free(void *o, void *p) { (void)o; free(p); }

static void damaged_sizes_allocate_nothing_large(void **state)
{
    (void)state;
    static const uint64_t big[] = { 24, 31, 48, UINT64_C(1) << 20, UINT64_C(1) << 24, UINT64_C(0x7fffffff),
                                    UINT64_C(0xffffffff), UINT64_C(1) << 31,
                                    UINT64_C(1) << 40, UINT64_C(1) << 62 };
    bk_allocator al = { cap_malloc, cap_calloc, cap_free, NULL };
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        bk_filter *f = make(&tf_factories[t], 2000, 500, 7);
        void *buf;
        size_t len;
        assert_int_equal(bk_filter_save_alloc(f, &buf, &len), BK_OK);
        bk_filter_free(f);
        uint8_t *b = malloc(len);
        assert_non_null(b);
        uint32_t hs = get32((const uint8_t *)buf + 24);
        size_t tried = 0;
        bk_set_allocator(&al);
        g_cap = 2 * len + ((size_t)1 << 20);
        /* every 4-byte field of the body's parameter block, as a 32-bit and as a 64-bit value */
        for (size_t off = hs; off + 8 <= len && off < (size_t)hs + 128; off += 4) {
            for (size_t v = 0; v < sizeof big / sizeof big[0]; v++) {
                for (int wide = 0; wide < 2; wide++) {
                    memcpy(b, buf, len);
                    if (wide) put64(b + off, big[v]);
                    else put32(b + off, (uint32_t)big[v]);
                    fix_sums(b, len);
                    g_refused = false;
                    bk_filter *g = NULL;
                    bk_status s = bk_filter_load_buffer(b, len, 0, &g);
                    if (g_refused || s == BK_ENOMEM) {
                        bk_set_allocator(NULL);
                        fail_msg("%s: body offset %zu set to %#llx (%s): the loader asked for more than "
                                 "the file could carry (%s)",
                                 tf_factories[t].name, off - hs, (unsigned long long)big[v],
                                 wide ? "u64" : "u32", bk_strerror(s));
                    }
                    bk_filter_free(g);
                    tried++;
                }
            }
        }
        bk_set_allocator(NULL);
        assert_true(tried > 0);
        free(b);
        bk_filter_buffer_free(buf);
    }
}

/* ---- shared writable mappings ---- */

static int wait_child(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return st;
}

/* Child: open the file shared-writable, wait for the go signal, insert keys [lo, hi), close. */
static void child_insert(const char *p, int go_fd, uint64_t lo, uint64_t hi, bool close_it)
{
    bk_filter *f;
    if (bk_filter_open_mmap(p, BK_OPEN_WRITE_SHARED, &f) != BK_OK) _exit(2);
    if (bk_filter_backing(f) != BK_BACKING_MAP_SHARED) _exit(3);
    char c;
    if (go_fd >= 0 && read(go_fd, &c, 1) != 1) _exit(4);
    enum { B = 512 };
    tf_key keys[B];
    const void *ptrs[B];
    size_t lens[B];
    for (uint64_t i = lo; i < hi; i += B) {
        size_t n = hi - i < B ? (size_t)(hi - i) : B;
        for (size_t j = 0; j < n; j++) {
            keys[j] = tf_make_key(1, i + j);
            ptrs[j] = keys[j].b;
            lens[j] = sizeof keys[j].b;
        }
        /* alternate the single and batch forms */
        if ((i / B) % 2) {
            if (bk_filter_add_many(f, ptrs, lens, n, NULL) != BK_OK) _exit(5);
        } else {
            for (size_t j = 0; j < n; j++)
                if (bk_filter_add(f, ptrs[j], lens[j]) != BK_OK) _exit(5);
        }
    }
    if (bk_filter_merge(f, f) != BK_ENOTSUP || bk_filter_remove(f, "k", 1) != BK_ENOTSUP) _exit(6);
    if (bk_filter_sync(f) != BK_OK) _exit(7);
    if (close_it && bk_filter_close(f) != BK_OK) _exit(8);
    _exit(0); /* without close_it: a crash, as far as the file is concerned */
}

static uint32_t file_flags(const char *p)
{
    size_t len;
    uint8_t *b = tu_read_file(p, &len);
    bk_file_info in;
    assert_int_equal(bk_filter_peek_header(b, len, &in), BK_OK);
    free(b);
    return in.flags;
}

static void assert_all_keys(const char *p, unsigned flags, uint64_t n, bool exact_count)
{
    bk_filter *g;
    assert_int_equal(bk_filter_open_mmap(p, flags, &g), BK_OK);
    uint8_t *in = answers(g, 1, n);
    for (uint64_t i = 0; i < n; i++)
        if (!in[i]) fail_msg("key %llu lost in the shared mapping", (unsigned long long)i);
    free(in);
    bk_stats st;
    bk_filter_stats(g, &st);
    if (exact_count) assert_int_equal(st.count, n);
    bk_filter_free(g);
}

static void shared_two_processes(void **state)
{
    (void)state;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        const tf_factory *ft = &tf_factories[t];
        bk_filter *f = make(ft, N, 0, 21);
        const char *p = path_in_dir("shared.bkf");
        assert_int_equal(bk_filter_save_path(f, p), BK_OK);
        bk_filter_free(f);
        if (!ft->shared_writable) {
            assert_int_equal(bk_filter_open_mmap(p, BK_OPEN_WRITE_SHARED, &f), BK_ENOTSUP);
            continue;
        }
        int go[2];
        assert_int_equal(pipe(go), 0);
        pid_t a = fork();
        if (a == 0) child_insert(p, go[0], 0, N / 2, true);
        pid_t b = fork();
        if (b == 0) child_insert(p, go[0], N / 2, N, true);
        /* both open before either inserts: they really run side by side */
        assert_int_equal(write(go[1], "gg", 2), 2);
        int sa = wait_child(a), sb = wait_child(b);
        close(go[0]);
        close(go[1]);
        if (!WIFEXITED(sa) || WEXITSTATUS(sa) || !WIFEXITED(sb) || WEXITSTATUS(sb))
            fail_msg("%s: writers exited with %d and %d", ft->name, sa, sb);
        /* the last writer out cleaned the flag and the checksum verifies */
        assert_int_equal(file_flags(p) & BK_FILE_FLAG_CHECKSUM_STALE, 0);
        assert_all_keys(p, BK_LOAD_REQUIRE_CLEAN, N, ft->type == BK_TYPE_BLOOM);
        bk_filter *g;
        assert_int_equal(bk_filter_load_path(p, BK_LOAD_REQUIRE_CLEAN, &g), BK_OK);
        bk_filter_free(g);
    }
}

static void shared_stale_flag_lifecycle(void **state)
{
    (void)state;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        const tf_factory *ft = &tf_factories[t];
        if (!ft->shared_writable) continue;
        enum { M = 50000 };
        bk_filter *f = make(ft, M, 0, 4), *w, *g;
        const char *p = path_in_dir("stale.bkf");
        assert_int_equal(bk_filter_save_path(f, p), BK_OK);
        bk_filter_free(f);

        /* we hold it open for writing; a child writes and closes: not the last, flag stays */
        assert_int_equal(bk_filter_open_mmap(p, BK_OPEN_WRITE_SHARED, &w), BK_OK);
        assert_int_equal(file_flags(p) & BK_FILE_FLAG_CHECKSUM_STALE, BK_FILE_FLAG_CHECKSUM_STALE);
        pid_t c = fork();
        if (c == 0) child_insert(p, -1, 0, M / 2, true);
        int st = wait_child(c);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_int_equal(file_flags(p) & BK_FILE_FLAG_CHECKSUM_STALE, BK_FILE_FLAG_CHECKSUM_STALE);
        /* our handle sees the child's keys (same pages) */
        for (uint64_t i = 0; i < M / 2; i++) {
            tf_key k = tf_make_key(1, i);
            assert_true(bk_filter_contains(w, k.b, sizeof k.b));
        }
        assert_int_equal(bk_filter_load_path(p, BK_LOAD_REQUIRE_CLEAN, &g), BK_ECHECKSUM);
        assert_int_equal(bk_filter_open_mmap(p, BK_LOAD_REQUIRE_CLEAN, &g), BK_ECHECKSUM);
        assert_all_keys(p, 0, M / 2, false);
        /* a snapshot saved from the live mapping is clean and consistent */
        void *snap;
        size_t sl;
        assert_int_equal(bk_filter_save_alloc(w, &snap, &sl), BK_OK);
        assert_int_equal(bk_filter_load_buffer(snap, sl, BK_LOAD_REQUIRE_CLEAN, &g), BK_OK);
        bk_filter_free(g);
        bk_filter_buffer_free(snap);
        assert_int_equal(bk_filter_save_path(w, path_in_dir("snap.bkf")), BK_OK);
        assert_int_equal(bk_filter_load_path(path_in_dir("snap.bkf"), BK_LOAD_REQUIRE_CLEAN, &g), BK_OK);
        bk_filter_free(g);
        /* we are the last: closing cleans */
        assert_int_equal(bk_filter_close(w), BK_OK);
        assert_int_equal(file_flags(p) & BK_FILE_FLAG_CHECKSUM_STALE, 0);
        assert_all_keys(p, BK_LOAD_REQUIRE_CLEAN, M / 2, ft->type == BK_TYPE_BLOOM);

        /* a writer that dies without closing leaves the flag: the file still loads with every key,
         * and the next writer to close cleans it */
        c = fork();
        if (c == 0) child_insert(p, -1, M / 2, M, false);
        st = wait_child(c);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_int_equal(file_flags(p) & BK_FILE_FLAG_CHECKSUM_STALE, BK_FILE_FLAG_CHECKSUM_STALE);
        assert_all_keys(p, 0, M, ft->type == BK_TYPE_BLOOM);
        assert_int_equal(bk_filter_open_mmap(p, BK_OPEN_WRITE_SHARED, &w), BK_OK);
        assert_int_equal(bk_filter_close(w), BK_OK);
        assert_int_equal(file_flags(p) & BK_FILE_FLAG_CHECKSUM_STALE, 0);
        assert_all_keys(p, BK_LOAD_REQUIRE_CLEAN, M, ft->type == BK_TYPE_BLOOM);
    }
}

/* ---- crash safety of saves ---- */

static int count_tmpfiles(void)
{
    DIR *d = opendir(g_dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}
static void remove_tmpfiles(void)
{
    DIR *d = opendir(g_dir);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) unlink(path_in_dir(e->d_name));
    closedir(d);
}

/* The previous file: loads, and its bytes are exactly the old ones. */
static void assert_old_intact(const char *p, const uint8_t *old, size_t old_len)
{
    size_t len;
    uint8_t *b = tu_read_file(p, &len);
    assert_int_equal(len, old_len);
    assert_memory_equal(b, old, len);
    free(b);
    bk_filter *g;
    assert_int_equal(bk_filter_load_path(p, BK_LOAD_REQUIRE_CLEAN, &g), BK_OK);
    bk_filter_free(g);
}

static void save_failure_keeps_old_file(void **state)
{
    (void)state;
    const tf_factory *ft = &tf_factories[0];
    bk_filter *small = make(ft, 1000, 100, 1), *big = make(ft, 10 * N, 1000, 1);
    const char *p = path_in_dir("keep.bkf");
    assert_int_equal(bk_filter_save_path(small, p), BK_OK);
    assert_int_equal(chmod(p, 0640), 0);
    uint8_t *old;
    size_t old_len;
    save_bytes(small, &old, &old_len);

    /* the write fails half-way (file size limit: EFBIG): BK_EIO, old file intact, no temp left */
    pid_t c = fork();
    if (c == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = { 1 << 20, 1 << 20 };
        setrlimit(RLIMIT_FSIZE, &rl);
        bk_status s = bk_filter_save_path(big, p);
        _exit(s == BK_EIO && errno == EFBIG ? 0 : 1);
    }
    int st = wait_child(c);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_old_intact(p, old, old_len);
    assert_int_equal(count_tmpfiles(), 0);

    /* the same limit with its default action: the kernel kills the saver mid-write (SIGXFSZ) */
    c = fork();
    if (c == 0) {
        struct rlimit rl = { 1 << 20, 1 << 20 }, core = { 0, 0 };
        setrlimit(RLIMIT_CORE, &core);
        setrlimit(RLIMIT_FSIZE, &rl);
        bk_filter_save_path(big, p);
        _exit(0);
    }
    st = wait_child(c);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGXFSZ);
    assert_old_intact(p, old, old_len);
    assert_int_equal(count_tmpfiles(), 1); /* died with its temp file: proof it was mid-save */
    remove_tmpfiles();

    /* a full device, through the descriptor and stream forms */
    int fd = open("/dev/full", O_WRONLY);
    if (fd >= 0) {
        assert_int_equal(bk_filter_save_fd(big, fd), BK_EIO);
        assert_int_equal(errno, ENOSPC);
        close(fd);
        FILE *fp = fopen("/dev/full", "wb");
        assert_int_equal(bk_filter_save_file(big, fp), BK_EIO);
        fclose(fp);
    }
    /* a directory that does not exist */
    assert_int_equal(bk_filter_save_path(small, path_in_dir("no/such/dir.bkf")), BK_EIO);
    assert_int_equal(bk_filter_save_path(small, path_in_dir("dir/")), BK_EINVAL);
    /* the permissions of the replaced file are kept */
    assert_int_equal(bk_filter_save_path(small, p), BK_OK);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640);

    bk_filter_buffer_free(old);
    bk_filter_free(small);
    bk_filter_free(big);
}

/* SIGKILL of a child saving a large filter, as soon as its temporary file starts to grow. */
static void save_killed_keeps_old_file(void **state)
{
    (void)state;
    const tf_factory *ft = &tf_factories[0];
    bk_filter *small = make(ft, 1000, 100, 1), *big = make(ft, 40 * N, 1000, 1); /* ~48 MB */
    const char *p = path_in_dir("killed.bkf");
    assert_int_equal(bk_filter_save_path(small, p), BK_OK);
    uint8_t *old;
    size_t old_len;
    save_bytes(small, &old, &old_len);
    int mid_save = 0;
    for (int attempt = 0; attempt < 10 && !mid_save; attempt++) {
        int in = inotify_init1(IN_CLOEXEC);
        assert_true(in >= 0);
        assert_true(inotify_add_watch(in, g_dir, IN_MODIFY) >= 0);
        pid_t c = fork();
        if (c == 0) _exit(bk_filter_save_path(big, p) == BK_OK ? 0 : 1);
        char ev[4096] __attribute__((aligned(8)));
        for (;;) {
            struct pollfd pf = { in, POLLIN, 0 };
            if (poll(&pf, 1, 20000) != 1) break; /* the child never wrote: kill it anyway */
            ssize_t n = read(in, ev, sizeof ev);
            assert_true(n > 0);
            struct inotify_event *e = (struct inotify_event *)ev;
            if (e->len && strstr(e->name, ".tmp.")) break;
        }
        kill(c, SIGKILL);
        int st = wait_child(c);
        close(in);
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
            mid_save = count_tmpfiles() == 1;
            assert_old_intact(p, old, old_len);
        } else {
            /* it finished first: the file is the new one, complete */
            assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
            bk_filter *g;
            assert_int_equal(bk_filter_load_path(p, BK_LOAD_REQUIRE_CLEAN, &g), BK_OK);
            bk_filter_free(g);
            assert_int_equal(bk_filter_save_path(small, p), BK_OK);
        }
        remove_tmpfiles();
    }
    assert_true(mid_save); /* at least one kill landed in the middle of a save */
    bk_filter_buffer_free(old);
    bk_filter_free(small);
    bk_filter_free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(roundtrip_every_form),
        cmocka_unit_test(streams_back_to_back),
        cmocka_unit_test(save_buffer_size_query),
        cmocka_unit_test(corrupt_truncation),
        cmocka_unit_test(corrupt_header_bitflips),
        cmocka_unit_test(corrupt_payload_flips),
        cmocka_unit_test(corrupt_fields),
        cmocka_unit_test(bloom_body_inconsistent),
        cmocka_unit_test(handle_dispatch),
        cmocka_unit_test(damaged_sizes_allocate_nothing_large),
        cmocka_unit_test(shared_two_processes),
        cmocka_unit_test(shared_stale_flag_lifecycle),
        cmocka_unit_test(save_failure_keeps_old_file),
        cmocka_unit_test(save_killed_keeps_old_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
