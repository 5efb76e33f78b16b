/*
 * Fuzz target for the Redis module's RDB loader (redis/value.c: bkr_rdb_load_bf / bkr_rdb_load_cf), run
 * outside Redis: the RedisModule_Load* / Save* calls are served by stubs that read and write a simple
 * record stream, so an input is exactly what a (damaged) RDB could hand the module.
 *
 * Input: byte 0 picks the family (bit 0: BF or CF) and the encoding version (bits 1-2: 1 + value, so
 * unknown versions are tried too); then records until the end: 'u' + 8 bytes little-endian (an
 * unsigned), 's' + 4 bytes little-endian length + bytes (a string). A read past the end, or a record of
 * the wrong kind, is an I/O error, as Redis reports it under REDISMODULE_OPTIONS_HANDLE_IO_ERRORS.
 *
 * Whatever loads must behave: memory usage, a save that loads again and saves to the very same records,
 * queries. A violated property traps, which the fuzzer reports as a crash.
 *
 * Without libFuzzer (fuzz_rdb_replay, a CTest test, also under ASan/UBSan): builds seed inputs from real
 * filters, runs them and thousands of deterministic mutations of them (bit flips, truncations, cut and
 * repeated records, changed numbers), and with `--write-seeds DIR` writes the seeds for a libFuzzer run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                    \
    do {                                                                                            \
        if (!(c)) __builtin_trap();                                                                 \
    } while (0)

/* ---- the fake RedisModuleIO: a record stream to read, or a growing one to write ---- */
typedef struct fake_io {
    const uint8_t *in;
    size_t len, pos;
    int error;
    uint8_t *out;
    size_t out_len, out_cap;
} fake_io;

static fake_io *io_of(RedisModuleIO *io) { return (fake_io *)(void *)io; }

static uint64_t stub_load_unsigned(RedisModuleIO *rio)
{
    fake_io *io = io_of(rio);
    if (io->error || io->len - io->pos < 9 || io->in[io->pos] != 'u') {
        io->error = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 8; i >= 1; i--) v = (v << 8) | io->in[io->pos + (size_t)i];
    io->pos += 9;
    return v;
}

static char *stub_load_string_buffer(RedisModuleIO *rio, size_t *lenptr)
{
    fake_io *io = io_of(rio);
    if (io->error || io->len - io->pos < 5 || io->in[io->pos] != 's') {
        io->error = 1;
        return NULL;
    }
    const uint8_t *p = io->in + io->pos + 1;
    size_t n = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
    if (n > io->len - io->pos - 5) {
        io->error = 1;
        return NULL;
    }
    char *s = malloc(n ? n : 1);
    memcpy(s, p + 4, n);
    io->pos += 5 + n;
    *lenptr = n;
    return s;
}

static int stub_is_io_error(RedisModuleIO *rio) { return io_of(rio)->error; }

static void out_put(fake_io *io, const void *p, size_t n)
{
    if (io->out_len + n > io->out_cap) {
        io->out_cap = (io->out_len + n) * 2;
        io->out = realloc(io->out, io->out_cap);
    }
    memcpy(io->out + io->out_len, p, n);
    io->out_len += n;
}

static void stub_save_unsigned(RedisModuleIO *rio, uint64_t v)
{
    uint8_t b[9] = { 'u' };
    for (int i = 0; i < 8; i++) b[1 + i] = (uint8_t)(v >> (8 * i));
    out_put(io_of(rio), b, 9);
}

static void stub_save_string_buffer(RedisModuleIO *rio, const char *s, size_t n)
{
    uint8_t b[5] = { 's', (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24) };
    out_put(io_of(rio), b, 5);
    out_put(io_of(rio), s, n);
}

static void stub_log_io_error(RedisModuleIO *io, const char *level, const char *fmt, ...)
{
    (void)io;
    (void)level;
    (void)fmt;
}

static void *stub_alloc(size_t n) { return malloc(n ? n : 1); }
static void *stub_calloc(size_t a, size_t b) { return calloc(a ? a : 1, b ? b : 1); }
static void *stub_realloc(void *p, size_t n) { return realloc(p, n ? n : 1); }
static void stub_free(void *p) { free(p); }

/* An RDB load outside a command: no context, so no maxmemory guard (as for the server's own loads). */
static RedisModuleCtx *stub_context_from_io(RedisModuleIO *io)
{
    (void)io;
    return NULL;
}

static void stubs(void)
{
    RedisModule_Alloc = stub_alloc;
    RedisModule_TryAlloc = stub_alloc;
    RedisModule_Calloc = stub_calloc;
    RedisModule_Realloc = stub_realloc;
    RedisModule_Free = stub_free;
    RedisModule_LoadUnsigned = stub_load_unsigned;
    RedisModule_LoadStringBuffer = stub_load_string_buffer;
    RedisModule_IsIOError = stub_is_io_error;
    RedisModule_LogIOError = stub_log_io_error;
    RedisModule_SaveUnsigned = stub_save_unsigned;
    RedisModule_SaveStringBuffer = stub_save_string_buffer;
    RedisModule_GetContextFromIO = stub_context_from_io;
}

static void *load(const uint8_t *data, size_t size, bkr_family fam, int encver)
{
    fake_io io = { .in = data, .len = size };
    return fam == BKR_CF ? bkr_rdb_load_cf((RedisModuleIO *)(void *)&io, encver)
                         : bkr_rdb_load_bf((RedisModuleIO *)(void *)&io, encver);
}

static fake_io save(void *v)
{
    fake_io io = { 0 };
    bkr_rdb_save((RedisModuleIO *)(void *)&io, v);
    return io;
}

static long accepted;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        stubs();
        ready = 1;
    }
    if (size < 1) return 0;
    bkr_family fam = (data[0] & 1) ? BKR_CF : BKR_BF;
    int encver = 1 + ((data[0] >> 1) & 3);
    bkr_value *v = load(data + 1, size - 1, fam, encver);
    if (!v) return 0;
    accepted++;
    CHECK(encver == 1);
    CHECK(bkr_mem_usage(v) > 0);
    if (!bkr_stage_of(v)) {
        CHECK(v->obj && bkr_family_of(v->type) == fam);
        bk_filter *h = bkr_handle(v);
        CHECK(h != NULL);
        (void)bk_filter_contains(h, "key", 3);
        bkr_handle_done(v, h);
    } else {
        CHECK(bkr_stage_of(v)->len <= bkr_stage_of(v)->total);
    }
    /* what loaded saves, loads again, and saves to the same records */
    fake_io a = save(v);
    bkr_value *w = load(a.out, a.out_len, fam, 1);
    CHECK(w != NULL);
    fake_io b = save(w);
    CHECK(a.out_len == b.out_len && memcmp(a.out, b.out, a.out_len) == 0);
    free(a.out);
    free(b.out);
    bkr_value_free(w);
    bkr_value_free(v);
    return 0;
}

#ifndef BKR_LIBFUZZER
/* ---- the replay driver: seeds from real filters, and deterministic mutations of them ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

typedef struct seed {
    uint8_t *data;
    size_t len;
} seed;

static seed make_seed(bkr_family fam, void *v)
{
    fake_io io = save(v);
    seed s = { malloc(io.out_len + 1), io.out_len + 1 };
    s.data[0] = (uint8_t)fam;
    memcpy(s.data + 1, io.out, io.out_len);
    free(io.out);
    return s;
}

static size_t seeds(seed *out)
{
    size_t n = 0;
    bk_scalable_options so = bk_scalable_default_options();
    bk_scalable *sf;
    CHECK(bk_scalable_new(50, 0.01, &so, &sf) == BK_OK);
    for (int i = 0; i < 400; i++) bk_scalable_add(sf, &i, sizeof i); /* several sub-filters */
    bkr_value *v = bkr_value_wrap(BK_TYPE_SCALABLE, sf, bkr_heap_now());
    out[n++] = make_seed(BKR_BF, v);
    /* a restore in progress: the first 100 bytes of that filter's saved form */
    uint8_t *buf;
    size_t len;
    bk_filter *h = bkr_handle(v);
    CHECK(h && bkr_save_alloc(h, &buf, &len) == BK_OK);
    bkr_handle_done(v, h);
    bkr_value part = { 0 };
    bkr_value_set_stage(&part, bkr_stage_make(len, buf, 100));
    out[n++] = make_seed(BKR_BF, &part);
    bkr_stage_free(bkr_stage_of(&part));
    free(buf);
    bkr_value_free(v);

    so.flags = BK_SCALABLE_NONSCALING;
    CHECK(bk_scalable_new(1000, 0.001, &so, &sf) == BK_OK);
    for (int i = 0; i < 100; i++) bk_scalable_add(sf, &i, sizeof i);
    v = bkr_value_wrap(BK_TYPE_SCALABLE, sf, bkr_heap_now());
    out[n++] = make_seed(BKR_BF, v);
    bkr_value_free(v);

    bk_cuckoo_options co = BK_CUCKOO_OPTIONS_INIT;
    co.bucket_size = 2;
    co.fingerprint_bits = 8;
    co.max_kicks = 20;
    co.expansion = 2;
    bk_cuckoo *cf;
    CHECK(bk_cuckoo_new(64, 0, &co, &cf) == BK_OK);
    for (int i = 0; i < 300; i++) bk_cuckoo_add(cf, &i, sizeof i); /* a chain of tables */
    v = bkr_value_wrap(BK_TYPE_CUCKOO, cf, bkr_heap_now());
    out[n++] = make_seed(BKR_CF, v); /* kind 2: the filter and its kick state */
    bkr_value_free(v);
    /* the same value as a module before kind 2 wrote it: kind 0, no kick state record */
    seed k2 = out[n - 1], k0 = { malloc(k2.len - 9), k2.len - 9 };
    CHECK(k2.len > 28 && k2.data[1] == 'u' && k2.data[2] == 2);
    memcpy(k0.data, k2.data, 19);
    k0.data[2] = 0;
    memcpy(k0.data + 19, k2.data + 28, k2.len - 28);
    out[n++] = k0;
    /* a small filter that kicked, packed (module.h, BKR_CF_PACKED) */
    co.expansion = 0;
    CHECK(bk_cuckoo_new(64, 0, &co, &cf) == BK_OK);
    for (int i = 0; i < 60; i++) bk_cuckoo_add(cf, &i, sizeof i);
    v = bkr_value_wrap(BK_TYPE_CUCKOO, cf, bkr_heap_now());
    out[n++] = make_seed(BKR_CF, v);
    bkr_value_free(v);
    return n;
}

static long runs;
static void run(const uint8_t *d, size_t n)
{
    LLVMFuzzerTestOneInput(d, n);
    runs++;
}

int main(int argc, char **argv)
{
    stubs();
    seed s[8];
    size_t ns = seeds(s);
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) {
        int rc = 0;
        for (size_t i = 0; i < ns; i++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/seed-%zu", argv[2], i);
            FILE *fp = fopen(p, "wb");
            if (!fp || fwrite(s[i].data, 1, s[i].len, fp) != s[i].len) rc = 1;
            if (fp && fclose(fp) != 0) rc = 1;
        }
        for (size_t i = 0; i < ns; i++) free(s[i].data);
        return rc;
    }
    long mutations = argc == 2 ? atol(argv[1]) : 3000;
    uint8_t *m = malloc(1 << 20);
    for (size_t i = 0; i < ns; i++) {
        run(s[i].data, s[i].len);
        for (size_t cut = 0; cut < s[i].len; cut += 1 + s[i].len / 64) run(s[i].data, cut); /* truncations */
        for (long k = 0; k < mutations; k++) {
            size_t n = s[i].len;
            memcpy(m, s[i].data, n);
            switch (rnd() % 4) {
            case 0: /* flip bits */
                for (int j = 1 + (int)(rnd() % 4); j > 0; j--) m[1 + rnd() % (n - 1)] ^= (uint8_t)(1u << (rnd() % 8));
                break;
            case 1: { /* overwrite one 8-byte number or length with an extreme value */
                size_t at = 1 + rnd() % (n - 9);
                uint64_t vals[] = { 0, 1, 63, 64, UINT64_MAX, UINT64_C(1) << 37, UINT64_C(1) << 63, rnd() };
                uint64_t x = vals[rnd() % 8];
                memcpy(m + at, &x, 8);
                break;
            }
            case 2: { /* cut a piece out of the middle */
                size_t a = 1 + rnd() % (n - 1), b = a + rnd() % (n - a);
                memmove(m + a, m + b, n - b);
                n -= b - a;
                break;
            }
            default: { /* repeat a piece */
                size_t a = 1 + rnd() % (n - 1), l = rnd() % (n - a);
                if (n + l < (1u << 20)) {
                    memmove(m + a + l, m + a, n - a);
                    n += l;
                }
                break;
            }
            }
            if (rnd() % 8 == 0) m[0] = (uint8_t)rnd(); /* other family / version */
            run(m, n);
        }
    }
    free(m);
    for (size_t i = 0; i < ns; i++) free(s[i].data);
    printf("fuzz_rdb_replay: %ld inputs from %zu seeds, %ld loaded (the rest refused)\n", runs, ns, accepted);
    return 0;
}
#endif
