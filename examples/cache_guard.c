/*
 * Cache-penetration guard: a lookup service in front of a slow backing store, with Redis as its
 * cache and a Bloom filter of every existing key in Redis (the bloomkit module's BF.* commands).
 *
 * Cache penetration: requests for keys that do not exist miss the cache every time (there is nothing
 * to cache) and all fall through to the backing store. A flood of random never-existing keys, by
 * accident or by an attacker, puts the whole load on the slowest tier. Caching "not found" does not
 * help when the keys never repeat. The guard: BF.EXISTS on a filter of all existing keys, before the
 * cache and the store. "0" means certainly absent: answer "not found" at once. "1" goes the usual
 * way (cache, then store), and is wrong only at the filter's false-positive rate.
 *
 * The service keeps the filter current by BF.ADD-ing a key when it is created in the store (here:
 * BF.MADD of every existing key at start-up). A Bloom filter cannot forget: a deleted key keeps
 * costing a store lookup until the filter is rebuilt (or use a cuckoo filter, CF.*, which can delete).
 *
 * The program serves the same stream of requests twice, without and with the guard (each pass with
 * its own cold cache keys), and reports backend lookups, lookups avoided and requests per second.
 * The backing store is simulated in-process with a fixed delay per lookup. Every answer is checked:
 * an existing key must come back with its value (the guard never hides one), any other key "not found".
 *
 *   cache_guard [--host H] [--port P] [--keys N] [--requests N] [--real-share F] [--delay-us N]
 *               [--fpr P] [--seed S]
 *
 * Needs a redis-server with the bloomkit module loaded (redis-server --loadmodule build/redis/bloomkit.so).
 * Exit status: 0 when every answer was right and the guard let through no more absent keys than its
 * FPR allows, 1 when a check failed, 2 on errors (no server, no module, ...).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "ex_util.h"

static const char *prog = "cache_guard";

/* ---- the slow backing store: existing ids, a fixed delay per lookup ---- */

typedef struct backing_store {
    uint64_t *keys; /* sorted key codes of the existing rows */
    uint64_t n;
    long delay_ns;
    uint64_t lookups;
    double seconds; /* spent in lookups: the sleep really takes a little longer than asked */
} backing_store;

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The key of row id: "user:" and 16 hex digits of a bijective scramble (existing and never-existing
 * ids cannot collide). */
static uint64_t key_code(uint64_t id) { return ex_scramble(id + 1); }
static int key_text(uint64_t code, char *out) { return sprintf(out, "user:%016" PRIx64, code); }
static int value_text(uint64_t code, char *out) { return sprintf(out, "{\"user\":\"%016" PRIx64 "\",\"plan\":%u}", code, (unsigned)(code % 5)); }

/* 1 and the value if the row exists. Costs the store's delay whatever the answer. */
static int store_lookup(backing_store *st, uint64_t code, char *val)
{
    struct timespec ts = { 0, st->delay_ns };
    double t0 = ex_now();
    st->lookups++;
    if (st->delay_ns) nanosleep(&ts, NULL);
    int found = bsearch(&code, st->keys, (size_t)st->n, sizeof code, u64_cmp) != NULL;
    if (found) value_text(code, val);
    st->seconds += ex_now() - t0;
    return found;
}

/* ---- Redis ---- */

/* A reply holding text: a bulk string or a simple string (STATUS). */
static int is_text(const redisReply *r)
{
    return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS;
}

/* A reply of name, value pairs: RESP2's flat array, or RESP3's map. */
static int is_pairs(const redisReply *r)
{
#ifdef REDIS_REPLY_MAP
    if (r->type == REDIS_REPLY_MAP) return 1;
#endif
    return r->type == REDIS_REPLY_ARRAY;
}

static redisReply *cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (!r) {
        fprintf(stderr, "%s: redis: %s\n", prog, c->errstr[0] ? c->errstr : "no reply");
        exit(2);
    }
    if (r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "%s: redis error: %s\n", prog, r->str);
        if (strstr(r->str, "unknown command"))
            fprintf(stderr, "%s: is the bloomkit module loaded? redis-server --loadmodule build/redis/bloomkit.so\n",
                    prog);
        exit(2);
    }
    return r;
}

typedef struct pass_stats {
    uint64_t requests, backend, guard_rejects, cache_hits, wrong, absent_backend;
    double seconds;
} pass_stats;

/* One request: 1 and the value in got if the key exists. */
static int handle(redisContext *c, const char *guard, const char *cache_prefix, uint64_t code, int exists,
                  backing_store *st, pass_stats *ps, char *got, size_t cap)
{
    char key[64];
    int klen = key_text(code, key);
    if (guard) {
        redisReply *r = cmd(c, "BF.EXISTS %s %b", guard, key, (size_t)klen);
        int maybe = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        freeReplyObject(r);
        if (!maybe) { /* certainly absent: neither the cache nor the store is asked */
            ps->guard_rejects++;
            return 0;
        }
    }
    redisReply *r = cmd(c, "GET %s%b", cache_prefix, key, (size_t)klen);
    if (r->type == REDIS_REPLY_STRING) {
        ps->cache_hits++;
        snprintf(got, cap, "%s", r->str);
        freeReplyObject(r);
        return 1;
    }
    freeReplyObject(r);
    if (!exists) ps->absent_backend++;
    if (!store_lookup(st, code, got)) return 0; /* nothing to cache: the next request pays again */
    freeReplyObject(cmd(c, "SET %s%b %s EX 600", cache_prefix, key, (size_t)klen, got));
    return 1;
}

/* Serve every request of the stream; guard NULL: no filter in front. */
static void serve(redisContext *c, const char *guard, const char *cache_prefix, const uint64_t *codes,
                  const uint8_t *exists, uint64_t n, backing_store *st, pass_stats *ps)
{
    char got[128], want[128];
    memset(ps, 0, sizeof *ps);
    uint64_t lookups0 = st->lookups;
    double t0 = ex_now();
    for (uint64_t i = 0; i < n; i++) {
        int found = handle(c, guard, cache_prefix, codes[i], exists[i], st, ps, got, sizeof got);
        /* The check: an existing key gets its value, any other key "not found". */
        if (exists[i]) {
            value_text(codes[i], want);
            ps->wrong += !found || strcmp(got, want) != 0;
        } else {
            ps->wrong += (uint64_t)found;
        }
    }
    ps->seconds = ex_now() - t0;
    ps->requests = n;
    ps->backend = st->lookups - lookups0;
}

/* Delete this run's keys (the service's namespace on a shared server). */
static void cleanup(redisContext *c, const char *guard, const char *prefix_a, const char *prefix_b,
                    const uint64_t *codes, const uint8_t *exists, uint64_t n)
{
    char key[64];
    freeReplyObject(cmd(c, "DEL %s", guard));
    uint64_t pending = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (!exists[i]) continue;
        int klen = key_text(codes[i], key);
        redisAppendCommand(c, "DEL %s%b %s%b", prefix_a, key, (size_t)klen, prefix_b, key, (size_t)klen);
        pending++;
    }
    while (pending--) {
        void *r;
        if (redisGetReply(c, &r) != REDIS_OK) {
            fprintf(stderr, "%s: redis: %s\n", prog, c->errstr);
            exit(2);
        }
        freeReplyObject(r);
    }
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1";
    uint64_t port = 6379, keys = 100000, requests = 20000, delay_us = 200, seed = 1;
    double real_share = 0.1, fpr = 0.01;
    for (int i = 1; i < argc; i++) {
        if (EX_ARG("--host")) host = argv[++i];
        else if (EX_ARG("--port")) port = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--keys")) keys = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--requests")) requests = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--real-share")) real_share = ex_double(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--delay-us")) delay_us = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--fpr")) fpr = ex_double(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--seed")) seed = ex_count(prog, argv[i], argv[i + 1]), i++;
        else {
            fprintf(stderr,
                    "usage: %s [--host H] [--port P] [--keys N] [--requests N] [--real-share F] [--delay-us N]\n"
                    "       [--fpr P] [--seed S]\n",
                    prog);
            return 2;
        }
    }
    if (port == 0 || port > 65535 || keys == 0 || requests == 0 || real_share > 1 || !(fpr > 0 && fpr < 1) ||
        delay_us > 1000000) {
        fprintf(stderr, "%s: out-of-range option\n", prog);
        return 2;
    }
    struct timeval tv = { 5, 0 };
    redisContext *c = redisConnectWithTimeout(host, (int)port, tv);
    if (!c || c->err) {
        fprintf(stderr, "%s: cannot connect to %s:%" PRIu64 ": %s\n", prog, host, port, c ? c->errstr : "no memory");
        return 2;
    }

    /* The backing store's rows, and the request stream: a flood of never-existing keys with a share of
     * real ones. */
    backing_store st = { ex_xmalloc(prog, (size_t)keys * sizeof(uint64_t)), keys, (long)delay_us * 1000, 0, 0 };
    for (uint64_t i = 0; i < keys; i++) st.keys[i] = key_code(i);
    qsort(st.keys, (size_t)keys, sizeof *st.keys, u64_cmp);
    uint64_t rng = seed;
    uint64_t *codes = ex_xmalloc(prog, (size_t)requests * sizeof *codes);
    uint8_t *exists = ex_xmalloc(prog, (size_t)requests);
    uint64_t real = 0;
    for (uint64_t i = 0; i < requests; i++) {
        exists[i] = (double)ex_rand(&rng) / 18446744073709551616.0 < real_share;
        codes[i] = key_code(exists[i] ? ex_below(&rng, keys) : keys + ex_below(&rng, UINT64_C(1) << 40));
        real += exists[i];
    }

    /* The guard: one filter of every existing key, in a namespace of this run. */
    char ns[64], guard[96], prefix_plain[96], prefix_guarded[96];
    snprintf(ns, sizeof ns, "cg:%" PRIu64 ":%ld", seed, (long)getpid());
    snprintf(guard, sizeof guard, "%s:guard", ns);
    snprintf(prefix_plain, sizeof prefix_plain, "%s:cache-a:", ns);
    snprintf(prefix_guarded, sizeof prefix_guarded, "%s:cache-b:", ns);
    freeReplyObject(cmd(c, "DEL %s", guard));
    char fprs[32], caps[32];
    snprintf(fprs, sizeof fprs, "%g", fpr);
    snprintf(caps, sizeof caps, "%" PRIu64, keys);
    freeReplyObject(cmd(c, "BF.RESERVE %s %s %s", guard, fprs, caps));
    double t0 = ex_now();
    const uint64_t chunk = 1000;
    char (*kbuf)[32] = ex_xmalloc(prog, chunk * sizeof *kbuf);
    const char **argvs = ex_xmalloc(prog, (chunk + 2) * sizeof *argvs);
    size_t *argls = ex_xmalloc(prog, (chunk + 2) * sizeof *argls);
    for (uint64_t base = 0; base < keys; base += chunk) {
        uint64_t m = keys - base < chunk ? keys - base : chunk;
        argvs[0] = "BF.MADD";
        argls[0] = 7;
        argvs[1] = guard;
        argls[1] = strlen(guard);
        for (uint64_t j = 0; j < m; j++) {
            argls[j + 2] = (size_t)key_text(key_code(base + j), kbuf[j]);
            argvs[j + 2] = kbuf[j];
        }
        redisReply *r = redisCommandArgv(c, (int)(m + 2), argvs, argls);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "%s: BF.MADD: %s\n", prog, r ? r->str : c->errstr);
            return 2;
        }
        freeReplyObject(r);
    }
    double t_load = ex_now() - t0;
    free(kbuf);
    free(argvs);
    free(argls);

    pass_stats plain, guarded;
    serve(c, NULL, prefix_plain, codes, exists, requests, &st, &plain);
    serve(c, guard, prefix_guarded, codes, exists, requests, &st, &guarded);

    /* BF.INFO's field names are simple strings (a STATUS reply in RESP2, as RedisBloom sends them);
     * accept bulk strings too, and the RESP3 map. */
    redisReply *info = cmd(c, "BF.INFO %s", guard);
    long long bf_size = -1;
    if (is_pairs(info))
        for (size_t i = 0; i + 1 < info->elements; i += 2)
            if (is_text(info->element[i]) && strcmp(info->element[i]->str, "Size") == 0 &&
                info->element[i + 1]->type == REDIS_REPLY_INTEGER)
                bf_size = info->element[i + 1]->integer;
    freeReplyObject(info);
    cleanup(c, guard, prefix_plain, prefix_guarded, codes, exists, requests);

    const uint64_t absent = requests - real;
    printf("cache guard: %" PRIu64 " existing keys in the store (%.0f us per lookup asked, %.0f us measured), "
           "guard BF.RESERVE %g %" PRIu64 " loaded in %.2f s",
           keys, (double)delay_us, st.lookups ? st.seconds * 1e6 / (double)st.lookups : 0, fpr, keys, t_load);
    if (bf_size >= 0) printf(" (%.1f KB in Redis)", bf_size / 1e3);
    printf("\n%" PRIu64 " requests: %" PRIu64 " never-existing keys, %" PRIu64 " real ones\n", requests, absent, real);
    printf("%-15s %16s %14s %12s %12s %14s\n", "", "backend lookups", "guard rejects", "cache hits", "requests/s",
           "mean us/req");
    const pass_stats *ps[2] = { &plain, &guarded };
    const char *names[2] = { "without guard", "with guard" };
    for (int i = 0; i < 2; i++)
        printf("%-15s %16" PRIu64 " %14" PRIu64 " %12" PRIu64 " %12.0f %14.1f\n", names[i], ps[i]->backend,
               ps[i]->guard_rejects, ps[i]->cache_hits, (double)ps[i]->requests / ps[i]->seconds,
               ps[i]->seconds * 1e6 / (double)ps[i]->requests);
    printf("backend lookups avoided: %" PRIu64 " of %" PRIu64 " (%.1f%%); never-existing keys that still reached the "
           "store: %" PRIu64 " (%.3f%%: the filter's FPR, target %g%%)\n",
           plain.backend - guarded.backend, plain.backend,
           plain.backend ? 100.0 * (double)(plain.backend - guarded.backend) / (double)plain.backend : 0,
           guarded.absent_backend, absent ? 100.0 * (double)guarded.absent_backend / (double)absent : 0, 100 * fpr);
    printf("throughput: %.1fx the requests per second with the guard\n",
           (double)plain.seconds / (double)guarded.seconds);

    int failures = 0;
    if (plain.wrong || guarded.wrong) {
        printf("FAIL: wrong answers: %" PRIu64 " without the guard, %" PRIu64 " with it\n", plain.wrong,
               guarded.wrong);
        failures++;
    }
    double expect = fpr * (double)absent;
    if ((double)guarded.absent_backend > expect + 4 * sqrt(expect) + 1) {
        printf("FAIL: %" PRIu64 " never-existing keys passed the guard; its FPR allows about %.0f\n",
               guarded.absent_backend, expect);
        failures++;
    }
    if (!failures) printf("check: every answer right in both passes; no existing key was hidden by the guard\n");

    redisFree(c);
    free(st.keys);
    free(codes);
    free(exists);
    return failures ? 1 : 0;
}
