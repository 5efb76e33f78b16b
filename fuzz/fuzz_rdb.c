/*
 * Fuzz target for the Redis module's RDB loaders, run outside Redis: every data type the module
 * registers, each through the methods Redis itself would call (rdb_load, rdb_save, mem_usage, copy,
 * free). The RedisModule_Load* / Save* calls are served by stubs that read and write a simple record
 * stream, so an input is exactly what a (damaged) RDB could hand the module.
 *
 *   bloomkitB, bloomkitC   Bloom-family and cuckoo values (redis/value.c): every filter type of the
 *                          library, restores in progress, packed cuckoo filters
 *   bloomkitS, bloomkitK   the count-min sketch and Top-K (redis/cms.c)
 *   MBbloom--, MBbloomCF   RedisBloom's Bloom chain and cuckoo filter, encodings 0 to 4 (rb_bloom.c,
 *                          rb_cuckoo.c)
 *   CMSk-TYPE, TopK-TYPE   RedisBloom's count-min sketch and Top-K (rb_sketch.c)
 *
 * Input: byte 0 picks the data type (bits 0-2, in the order above) and the encoding version handed to
 * rdb_load (bits 3-5, so unknown versions are tried too); then records until the end: 'u' + 8 bytes
 * little-endian (an unsigned), 'd' + 8 bytes (a double's bits, little-endian), 's' + 4 bytes
 * little-endian length + bytes (a string). A read past the end, or a record of the wrong kind, is an
 * I/O error, as Redis reports it under REDISMODULE_OPTIONS_HANDLE_IO_ERRORS.
 *
 * Whatever loads must behave: memory usage, queries, a save that loads again (at the type's current
 * version) and saves to the very same records, a copy that saves to those records too. A violated
 * property traps, which the fuzzer reports as a crash.
 *
 * Without libFuzzer (fuzz_rdb_replay, a CTest test, also under ASan/UBSan): builds seed inputs from real
 * values of every type, runs them and deterministic mutations of them (bit flips, truncations, cut and
 * repeated records, changed numbers), then replays the files of any folders named (fuzz/corpus/rdb).
 * `--write-seeds DIR` writes the seeds for a libFuzzer run; a number sets the mutations per seed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "module.h"
#include "rb_compat.h"
#include "sketch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                    \
    do {                                                                                            \
        if (!(c)) __builtin_trap();                                                                 \
    } while (0)

/* ---- the module's data types, as registered ---- */
enum { T_BF, T_CF, T_CMS, T_TOPK, T_RB_BF, T_RB_CF, T_RB_CMS, T_RB_TOPK, NTYPES };
static const char *const type_names[NTYPES] = { "bloomkitB", "bloomkitC", "bloomkitS", "bloomkitK",
                                                "MBbloom--", "MBbloomCF", "CMSk-TYPE", "TopK-TYPE" };
typedef struct fake_type {
    int encver; /* the version the type saves */
    RedisModuleTypeMethods m;
} fake_type;
static fake_type types[NTYPES];

/* ---- the fake RedisModuleIO: a record stream to read, or a growing one to write ---- */
typedef struct fake_io {
    const uint8_t *in;
    size_t len, pos;
    int error;
    uint8_t *out;
    size_t out_len, out_cap;
} fake_io;

static fake_io *io_of(RedisModuleIO *io) { return (fake_io *)(void *)io; }

static uint64_t load_u64(RedisModuleIO *rio, uint8_t tag)
{
    fake_io *io = io_of(rio);
    if (io->error || io->len - io->pos < 9 || io->in[io->pos] != tag) {
        io->error = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 8; i >= 1; i--) v = (v << 8) | io->in[io->pos + (size_t)i];
    io->pos += 9;
    return v;
}

static uint64_t stub_load_unsigned(RedisModuleIO *rio) { return load_u64(rio, 'u'); }

static double stub_load_double(RedisModuleIO *rio)
{
    uint64_t u = load_u64(rio, 'd');
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
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

static void save_u64(RedisModuleIO *rio, uint8_t tag, uint64_t v)
{
    uint8_t b[9] = { tag };
    for (int i = 0; i < 8; i++) b[1 + i] = (uint8_t)(v >> (8 * i));
    out_put(io_of(rio), b, 9);
}

static void stub_save_unsigned(RedisModuleIO *rio, uint64_t v) { save_u64(rio, 'u', v); }

static void stub_save_double(RedisModuleIO *rio, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    save_u64(rio, 'd', u);
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

static RedisModuleType *stub_create_data_type(RedisModuleCtx *ctx, const char *name, int encver,
                                              RedisModuleTypeMethods *methods)
{
    (void)ctx;
    for (int t = 0; t < NTYPES; t++)
        if (strcmp(name, type_names[t]) == 0) {
            CHECK(!types[t].m.rdb_load);
            types[t].encver = encver;
            types[t].m = *methods;
            return (RedisModuleType *)(void *)&types[t];
        }
    __builtin_trap(); /* a data type this target does not know: add it above */
}

static void stubs(void)
{
    static int ready;
    if (ready) return;
    ready = 1;
    RedisModule_Alloc = stub_alloc;
    RedisModule_TryAlloc = stub_alloc;
    RedisModule_Calloc = stub_calloc;
    RedisModule_Realloc = stub_realloc;
    RedisModule_Free = stub_free;
    RedisModule_LoadUnsigned = stub_load_unsigned;
    RedisModule_LoadDouble = stub_load_double;
    RedisModule_LoadStringBuffer = stub_load_string_buffer;
    RedisModule_IsIOError = stub_is_io_error;
    RedisModule_LogIOError = stub_log_io_error;
    RedisModule_SaveUnsigned = stub_save_unsigned;
    RedisModule_SaveDouble = stub_save_double;
    RedisModule_SaveStringBuffer = stub_save_string_buffer;
    RedisModule_GetContextFromIO = stub_context_from_io;
    RedisModule_CreateDataType = stub_create_data_type;
    /* every data type by the module's own registration calls: names, encoding versions, methods */
    CHECK(bkr_types_register(NULL) == REDISMODULE_OK);
    CHECK(bkr_sk_types_register(NULL) == REDISMODULE_OK);
    for (int t = 0; t < NTYPES; t++) CHECK(types[t].m.rdb_load && types[t].m.rdb_save && types[t].m.copy);
}

static void *load(int t, const uint8_t *data, size_t size, int encver)
{
    fake_io io = { .in = data, .len = size };
    return types[t].m.rdb_load((RedisModuleIO *)(void *)&io, encver);
}

static fake_io save(int t, void *v)
{
    fake_io io = { 0 };
    types[t].m.rdb_save((RedisModuleIO *)(void *)&io, v);
    return io;
}

#define RB_MAX_BYTES ((uint64_t)1 << 24) /* arrays an add may grow a RedisBloom value to */

/* Queries on a value as loaded (the commands' read paths). */
static void query(int t, void *v)
{
    switch (t) {
    case T_BF:
    case T_CF:
        if (!bkr_stage_of(v)) {
            bkr_value *bv = v;
            CHECK(bv->obj && bkr_family_of(bv->type) == (t == T_CF ? BKR_CF : BKR_BF));
            bk_filter *h = bkr_handle(bv);
            CHECK(h != NULL);
            (void)bk_filter_contains(h, "key", 3);
            bkr_handle_done(bv, h);
        } else {
            CHECK(bkr_stage_of(v)->len <= bkr_stage_of(v)->total);
        }
        break;
    case T_CMS:
        (void)bk_cms_query(v, "key", 3);
        break;
    case T_TOPK: {
        bk_topk_item items[8];
        (void)bk_topk_query(v, "key", 3);
        (void)bk_topk_count(v, "key", 3);
        CHECK(bk_topk_list(v, items, 8) <= bk_topk_k(v));
        break;
    }
    case T_RB_BF:
        (void)rb_chain_contains(v, "key", 3);
        break;
    case T_RB_CF:
        (void)rb_cuckoo_contains(v, "key", 3);
        (void)rb_cuckoo_count(v, "key", 3);
        break;
    case T_RB_CMS:
        (void)rb_cms_query(v, "key", 3);
        break;
    default: {
        const rb_topk *tk = v;
        const rb_tk_entry **out = malloc(((size_t)tk->k + 1) * sizeof *out);
        (void)rb_topk_query(tk, "key", 3);
        (void)rb_topk_count(tk, "key", 3);
        CHECK(rb_topk_list(tk, out) <= tk->k);
        free(out);
        break;
    }
    }
}

/* An add on a copy of a loaded sketch or RedisBloom value (the commands' write paths over what loaded). */
static void add(int t, void *v)
{
    switch (t) {
    case T_CMS:
        (void)bk_cms_incrby(v, "key", 3, 1, NULL);
        break;
    case T_TOPK:
        (void)bk_topk_incrby(v, "key", 3, 1, NULL);
        break;
    case T_RB_BF:
        (void)rb_chain_add(v, "key", 3, RB_MAX_BYTES);
        break;
    case T_RB_CF:
        (void)rb_cuckoo_add(v, "key", 3, false, RB_MAX_BYTES);
        (void)rb_cuckoo_remove(v, "key", 3);
        break;
    case T_RB_CMS:
        (void)rb_cms_incrby(v, "key", 3, 1);
        break;
    case T_RB_TOPK: {
        char *expelled = NULL;
        size_t elen = 0;
        rb_topk_add(v, "key", 3, 1, &expelled, &elen);
        RedisModule_Free(expelled);
        break;
    }
    default:
        break;
    }
}

static long accepted;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    stubs();
    if (size < 1) return 0;
    int t = data[0] & 7, encver = (data[0] >> 3) & 7;
    void *v = load(t, data + 1, size - 1, encver);
    if (!v) return 0;
    accepted++;
    CHECK(encver <= types[t].encver);
    CHECK(types[t].m.mem_usage(v) > 0);
    query(t, v);
    /* what loaded saves, loads again, and saves to the same records; so does a copy */
    fake_io a = save(t, v);
    void *w = load(t, a.out, a.out_len, types[t].encver);
    CHECK(w != NULL);
    fake_io b = save(t, w);
    CHECK(a.out_len == b.out_len && memcmp(a.out, b.out, a.out_len) == 0);
    free(b.out);
    void *c = types[t].m.copy(NULL, NULL, v);
    CHECK(c != NULL);
    b = save(t, c);
    CHECK(a.out_len == b.out_len && memcmp(a.out, b.out, a.out_len) == 0);
    add(t, c);
    query(t, c);
    free(a.out);
    free(b.out);
    types[t].m.free(c);
    types[t].m.free(w);
    types[t].m.free(v);
    return 0;
}

#ifndef BKR_LIBFUZZER
/* ---- the replay driver: seeds from real values, deterministic mutations of them, corpus files ---- */
#include <dirent.h>

#include "factories.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Byte 0 of an input: the data type and the encoding version. */
static uint8_t type_byte(int t, int encver) { return (uint8_t)(t | encver << 3); }

typedef struct seed {
    char name[64];
    uint8_t *data;
    size_t len;
} seed;

#define MAX_SEEDS 64
static seed seeds_[MAX_SEEDS];
static size_t nseeds;

/* A seed from records already written: byte 0, then the records. */
static void add_seed_io(const char *name, int t, int encver, fake_io *io)
{
    CHECK(nseeds < MAX_SEEDS);
    seed *s = &seeds_[nseeds++];
    snprintf(s->name, sizeof s->name, "%s-%s", type_names[t], name);
    s->len = io->out_len + 1;
    s->data = malloc(s->len);
    s->data[0] = type_byte(t, encver);
    memcpy(s->data + 1, io->out, io->out_len);
    free(io->out);
}

/* A seed of value v of type t as the type saves it; v is freed. */
static void add_seed(const char *name, int t, void *v)
{
    fake_io io = save(t, v);
    add_seed_io(name, t, types[t].encver, &io);
    types[t].m.free(v);
}

static RedisModuleIO *rio(fake_io *io) { return (RedisModuleIO *)(void *)io; }

/* A RedisBloom Bloom chain as RedisBloom wrote it at an older encoding (rb_bloom.c lists them). */
static void add_rb_chain_seed(const rb_chain *c, int encver)
{
    fake_io io = { 0 };
    RedisModule_SaveUnsigned(rio(&io), c->size);
    RedisModule_SaveUnsigned(rio(&io), c->nlinks);
    if (encver >= 2) RedisModule_SaveUnsigned(rio(&io), c->options);
    for (uint64_t i = 0; i < c->nlinks; i++) {
        const rb_link *l = &c->links[i];
        RedisModule_SaveUnsigned(rio(&io), l->entries);
        RedisModule_SaveDouble(rio(&io), l->error);
        RedisModule_SaveUnsigned(rio(&io), l->hashes);
        RedisModule_SaveDouble(rio(&io), l->bpe);
        if (encver >= 1) {
            RedisModule_SaveUnsigned(rio(&io), l->nbits);
            RedisModule_SaveUnsigned(rio(&io), l->n2);
        }
        RedisModule_SaveStringBuffer(rio(&io), (const char *)l->bits, (size_t)l->bytes);
        RedisModule_SaveUnsigned(rio(&io), l->size);
    }
    char name[32];
    snprintf(name, sizeof name, "v%d", encver);
    add_seed_io(name, T_RB_BF, encver, &io);
}

/* A RedisBloom cuckoo filter of tables of one size as RedisBloom wrote it before encoding 4. */
static void add_rb_cuckoo_v3_seed(const rb_cuckoo *cf)
{
    fake_io io = { 0 };
    RedisModule_SaveUnsigned(rio(&io), cf->ntables);
    RedisModule_SaveUnsigned(rio(&io), cf->nbuckets);
    RedisModule_SaveUnsigned(rio(&io), cf->items);
    for (uint16_t t = 0; t < cf->ntables; t++)
        RedisModule_SaveStringBuffer(rio(&io), (const char *)cf->tables[t].data,
                                     (size_t)(cf->tables[t].nbuckets * cf->bucket_size));
    add_seed_io("v3", T_RB_CF, 3, &io);
}

static void make_seeds(void)
{
    /* bloomkitB: a scalable filter of several sub-filters */
    bk_scalable_options so = bk_scalable_default_options();
    bk_scalable *sf;
    CHECK(bk_scalable_new(50, 0.01, &so, &sf) == BK_OK);
    for (int i = 0; i < 400; i++) bk_scalable_add(sf, &i, sizeof i);
    bkr_value *v = bkr_value_wrap(BK_TYPE_SCALABLE, sf, bkr_heap_now());
    /* a restore in progress: the first 100 bytes of that filter's saved form */
    uint8_t *buf;
    size_t len;
    bk_filter *h = bkr_handle(v);
    CHECK(h && bkr_save_alloc(h, &buf, &len) == BK_OK);
    bkr_handle_done(v, h);
    add_seed("scalable-chain", T_BF, v);
    bkr_value part = { 0 };
    bkr_value_set_stage(&part, bkr_stage_make(len, buf, 100));
    fake_io io = save(T_BF, &part);
    add_seed_io("restoring", T_BF, 1, &io);
    bkr_stage_free(bkr_stage_of(&part));
    free(buf);

    so.flags = BK_SCALABLE_NONSCALING;
    CHECK(bk_scalable_new(1000, 0.001, &so, &sf) == BK_OK);
    for (int i = 0; i < 100; i++) bk_scalable_add(sf, &i, sizeof i);
    add_seed("nonscaling", T_BF, bkr_value_wrap(BK_TYPE_SCALABLE, sf, bkr_heap_now()));

    /* bloomkitB: every other filter type of the library (BK.* keys: blocked, counting, fuse, aging,
     * quotient, ribbon, ...), and the sketches in their own types */
    for (size_t i = 0; i < TF_NFACTORIES; i++) {
        const tf_factory *fa = &tf_factories[i];
        if (fa->type == BK_TYPE_CUCKOO || !bk_filter_type_registered(fa->type)) continue;
        size_t heap0 = bkr_heap_now();
        bk_filter *f = fa->make(100, 50, 1);
        CHECK(f != NULL);
        if (!fa->sketch) {
            add_seed(fa->name, T_BF, bkr_value_from_filter(f, heap0));
            continue;
        }
        void *obj;
        CHECK(bk_filter_unwrap(f, fa->type, &obj) == BK_OK);
        add_seed(fa->name, fa->type == BK_TYPE_CMS ? T_CMS : T_TOPK, obj);
    }

    /* bloomkitC: a chain of tables with its kick state (kind 2) */
    bk_cuckoo_options co = BK_CUCKOO_OPTIONS_INIT;
    co.bucket_size = 2;
    co.fingerprint_bits = 8;
    co.max_kicks = 20;
    co.expansion = 2;
    bk_cuckoo *cf;
    CHECK(bk_cuckoo_new(64, 0, &co, &cf) == BK_OK);
    for (int i = 0; i < 300; i++) bk_cuckoo_add(cf, &i, sizeof i);
    add_seed("chain", T_CF, bkr_value_wrap(BK_TYPE_CUCKOO, cf, bkr_heap_now()));
    /* the same value as a module before kind 2 wrote it: kind 0, no kick state record */
    seed k2 = seeds_[nseeds - 1];
    CHECK(k2.len > 28 && k2.data[1] == 'u' && k2.data[2] == 2);
    io = (fake_io){ 0 };
    out_put(&io, k2.data + 1, 18);
    io.out[1] = 0;
    out_put(&io, k2.data + 28, k2.len - 28);
    add_seed_io("kind0", T_CF, 1, &io);
    /* a small filter that kicked, packed (module.h, BKR_CF_PACKED) */
    co.expansion = 0;
    CHECK(bk_cuckoo_new(64, 0, &co, &cf) == BK_OK);
    for (int i = 0; i < 60; i++) bk_cuckoo_add(cf, &i, sizeof i);
    add_seed("packed", T_CF, bkr_value_wrap(BK_TYPE_CUCKOO, cf, bkr_heap_now()));

    /* MBbloom--: a scaling chain of links, at encoding 4 and the older ones */
    rb_add_result why;
    rb_chain *rc = rb_chain_new(50, 0.01, 0, 2, RB_MAX_BYTES, &why);
    CHECK(rc != NULL);
    for (int i = 0; i < 200; i++) rb_chain_add(rc, &i, sizeof i, RB_MAX_BYTES);
    CHECK(rc->nlinks > 1);
    for (int e = 0; e < 4; e++) add_rb_chain_seed(rc, e);
    add_seed("v4", T_RB_BF, rc);

    /* MBbloomCF: tables of one size (expansion 1), at encoding 4 and 3 */
    rb_cuckoo *rcf = rb_cuckoo_new(64, 2, 20, 1, RB_MAX_BYTES, &why);
    CHECK(rcf != NULL);
    for (int i = 0; i < 200; i++) rb_cuckoo_add(rcf, &i, sizeof i, false, RB_MAX_BYTES);
    CHECK(rcf->ntables > 1);
    add_rb_cuckoo_v3_seed(rcf);
    add_seed("v4", T_RB_CF, rcf);

    /* CMSk-TYPE and TopK-TYPE: RedisBloom's sketches, counted */
    rb_cms *rcm = RedisModule_Calloc(1, sizeof *rcm);
    rcm->width = 32;
    rcm->depth = 4;
    rcm->cells = RedisModule_Calloc(32 * 4, 4);
    for (int i = 0; i < 100; i++) rb_cms_incrby(rcm, &i, sizeof i, 1 + (uint32_t)(i % 7));
    add_seed("counted", T_RB_CMS, rcm);
    rb_topk *tk = RedisModule_Calloc(1, sizeof *tk);
    tk->k = 4;
    tk->width = 16;
    tk->depth = 3;
    tk->decay = 0.9;
    tk->buckets = RedisModule_Calloc((size_t)tk->width * tk->depth, sizeof *tk->buckets);
    tk->heap = RedisModule_Calloc(tk->k, sizeof *tk->heap);
    for (int i = 0; i < 200; i++) {
        char item[16], *expelled = NULL;
        size_t elen = 0;
        int n = snprintf(item, sizeof item, "item%d", i % 23);
        rb_topk_add(tk, item, (size_t)n, 1 + (uint32_t)(i % 5), &expelled, &elen);
        RedisModule_Free(expelled);
    }
    add_seed("counted", T_RB_TOPK, tk);
}

static long runs;
static void run(const uint8_t *d, size_t n)
{
    LLVMFuzzerTestOneInput(d, n);
    runs++;
}

static void mutate_seed(const seed *s, long mutations, uint8_t *m)
{
    int t = s->data[0] & 7;
    run(s->data, s->len);
    for (size_t cut = 0; cut < s->len; cut += 1 + s->len / 64) run(s->data, cut); /* truncations */
    for (long k = 0; k < mutations; k++) {
        size_t n = s->len;
        memcpy(m, s->data, n);
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
        uint64_t r = rnd() % 16;
        if (r == 0) m[0] = (uint8_t)rnd();                           /* another type and version */
        else if (r == 1) m[0] = type_byte(t, (int)(rnd() % 8)); /* another version */
        run(m, n);
    }
}

/* Replays a corpus file, or every file of a folder. */
static int replay(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        int rc = d ? 0 : -1;
        while (rc == 0 && d && (e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            rc = replay(p);
        }
        if (d) closedir(d);
        return rc;
    }
    FILE *fp = fopen(path, "rb");
    uint8_t *b = malloc((size_t)st.st_size + 1);
    size_t n = fp ? fread(b, 1, (size_t)st.st_size, fp) : 0;
    if (fp) fclose(fp);
    if (!fp || n != (size_t)st.st_size) {
        fprintf(stderr, "%s: read failed\n", path);
        free(b);
        return -1;
    }
    run(b, n);
    free(b);
    return 0;
}

/* fuzz_rdb_replay [MUTATIONS] [FILE|DIR ...] | --write-seeds DIR */
int main(int argc, char **argv)
{
    stubs();
    make_seeds();
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) {
        int rc = chdir(argv[2]) != 0;
        for (size_t i = 0; i < nseeds && !rc; i++) {
            FILE *fp = fopen(seeds_[i].name, "wb");
            if (!fp || fwrite(seeds_[i].data, 1, seeds_[i].len, fp) != seeds_[i].len) rc = 1;
            if (fp && fclose(fp) != 0) rc = 1;
        }
        for (size_t i = 0; i < nseeds; i++) free(seeds_[i].data);
        return rc;
    }
    int first = 1;
    long mutations = 3000;
    if (argc > 1 && argv[1][0] >= '0' && argv[1][0] <= '9') mutations = atol(argv[first++]);
    uint8_t *m = malloc(1 << 20);
    for (size_t i = 0; i < nseeds; i++) {
        CHECK(seeds_[i].len < (1u << 19));
        mutate_seed(&seeds_[i], mutations, m);
    }
    free(m);
    for (size_t i = 0; i < nseeds; i++) free(seeds_[i].data);
    long from_seeds = runs;
    for (int i = first; i < argc; i++)
        if (replay(argv[i]) != 0) return 1;
    printf("fuzz_rdb_replay: %ld inputs from %zu seeds and %ld corpus files, %ld loaded (the rest refused)\n",
           runs, nseeds, runs - from_seeds, accepted);
    return 0;
}
#endif
