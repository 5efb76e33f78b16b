/*
 * IP blocklist: a gateway checks the source address of every connection against a blocklist of a
 * million IPv4 and IPv6 addresses. The filter answers "certainly not blocked" for almost all
 * traffic in a few nanoseconds from a structure small enough to stay in the CPU caches; only a
 * "maybe blocked" (a listed address, or a false positive at the filter's rate) goes on to the exact
 * list. The program compares, for the same list and the same traffic:
 *   - an exact open-addressing hash set of the 16-byte addresses (the usual baseline),
 *   - a blocked Bloom filter at 1% (one cache line per query),
 *   - binary fuse filters with 8- and 16-bit fingerprints (static: the list is published whole),
 * one address at a time and in batches of 256 (a gateway receives packets in bursts), and prints
 * lookups per second, memory and the false-positive rate measured on the traffic.
 *
 * Every address is stored in the 16-byte IPv6 form (IPv4 as ::ffff:a.b.c.d), so one structure holds
 * both families.
 *
 *   ip_blocklist [--list-size N] [--lookups N] [--blocked-share F] [--v6-share F] [--list FILE]
 *                [--set-load F] [--seed S]
 *
 * --list FILE reads the blocklist from a text file, one address per line (IPv4 or IPv6); otherwise a
 * random list is generated. --set-load is the hash set's maximum load factor (default 0.75; at 0.5
 * misses probe fewer slots, for 1.5x the memory). Exit status: 0 when every check held (no listed address ever answered
 * "absent", FPR within bound), 1 when one failed, 2 on errors.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <math.h>

#include "ex_util.h"

static const char *prog = "ip_blocklist";

typedef struct addr16 {
    uint8_t b[16];
} addr16;

static void addr_from_v4(addr16 *a, uint32_t v4)
{
    memset(a->b, 0, 10);
    a->b[10] = 0xff;
    a->b[11] = 0xff;
    a->b[12] = (uint8_t)(v4 >> 24);
    a->b[13] = (uint8_t)(v4 >> 16);
    a->b[14] = (uint8_t)(v4 >> 8);
    a->b[15] = (uint8_t)v4;
}

/* A random public-looking address: IPv4 (mapped) or global-unicast IPv6 (2000::/3). Never all zero,
 * which the hash set uses as its empty slot. */
static void addr_random(addr16 *a, uint64_t *rng, double v6_share)
{
    if ((double)ex_rand(rng) / 18446744073709551616.0 < v6_share) {
        uint64_t hi = ex_rand(rng), lo = ex_rand(rng);
        hi = (hi & ~(UINT64_C(7) << 61)) | (UINT64_C(1) << 61);
        for (int i = 0; i < 8; i++) {
            a->b[i] = (uint8_t)(hi >> (56 - 8 * i));
            a->b[8 + i] = (uint8_t)(lo >> (56 - 8 * i));
        }
    } else {
        uint32_t v4 = (uint32_t)ex_rand(rng);
        if (v4 == 0) v4 = 1;
        addr_from_v4(a, v4);
    }
}

/* ---- the baseline: an open-addressing hash set of 16-byte addresses ----
 * Linear probing, load factor at most max_load (0.75 by default), slot index by multiply-shift of the same 64-bit hash the
 * filters use; an all-zero slot is empty (:: is never a blocklist entry). */
typedef struct hashset {
    addr16 *slots;
    uint64_t nslots;
    uint64_t count;
} hashset;

static uint64_t hs_index(const hashset *hs, uint64_t h)
{
    return (uint64_t)(((ex_u128)h * hs->nslots) >> 64);
}

static int addr_is_zero(const addr16 *a)
{
    static const addr16 zero;
    return memcmp(a, &zero, sizeof zero) == 0;
}

static void hs_init(hashset *hs, uint64_t n, double max_load)
{
    hs->nslots = (uint64_t)((double)n / max_load) + 1;
    hs->slots = ex_xcalloc(prog, hs->nslots, sizeof(addr16));
    hs->count = 0;
}

/* Returns 1 if inserted, 0 if already there. */
static int hs_add(hashset *hs, const addr16 *a)
{
    uint64_t i = hs_index(hs, bk_hash64(a, 16, 0));
    for (;;) {
        if (addr_is_zero(&hs->slots[i])) {
            hs->slots[i] = *a;
            hs->count++;
            return 1;
        }
        if (memcmp(&hs->slots[i], a, 16) == 0) return 0;
        if (++i == hs->nslots) i = 0;
    }
}

static int hs_contains_at(const hashset *hs, const addr16 *a, uint64_t i)
{
    for (;;) {
        if (memcmp(&hs->slots[i], a, 16) == 0) return 1;
        if (addr_is_zero(&hs->slots[i])) return 0;
        if (++i == hs->nslots) i = 0;
    }
}

static int hs_contains(const hashset *hs, const addr16 *a)
{
    return hs_contains_at(hs, a, hs_index(hs, bk_hash64(a, 16, 0)));
}

/* The batch form, like the filters': hash the burst, prefetch each first slot, then probe. */
static size_t hs_contains_batch(const hashset *hs, const addr16 *a, size_t n, uint8_t *res)
{
    uint64_t idx[256];
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        idx[i] = hs_index(hs, bk_hash64(&a[i], 16, 0));
        __builtin_prefetch(&hs->slots[idx[i]]);
    }
    for (size_t i = 0; i < n; i++) {
        res[i] = (uint8_t)hs_contains_at(hs, &a[i], idx[i]);
        hits += res[i];
    }
    return hits;
}

/* ---- the blocklist ---- */

static addr16 *read_list(const char *path, uint64_t *n_out)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
        exit(2);
    }
    size_t cap = 1024, n = 0;
    addr16 *list = ex_xmalloc(prog, cap * sizeof *list);
    char line[256];
    unsigned long lineno = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        line[strcspn(line, " \t\r\n#")] = '\0';
        if (!line[0]) continue;
        addr16 a;
        struct in_addr v4;
        if (inet_pton(AF_INET, line, &v4) == 1) {
            addr_from_v4(&a, ntohl(v4.s_addr));
        } else if (inet_pton(AF_INET6, line, a.b) != 1) {
            fprintf(stderr, "%s: %s:%lu: not an IPv4 or IPv6 address: '%s'\n", prog, path, lineno, line);
            exit(2);
        }
        if (addr_is_zero(&a)) continue;
        if (n == cap) {
            cap *= 2;
            addr16 *grown = realloc(list, cap * sizeof *list);
            if (!grown) {
                fprintf(stderr, "%s: out of memory\n", prog);
                exit(2);
            }
            list = grown;
        }
        list[n++] = a;
    }
    fclose(fp);
    *n_out = n;
    return list;
}

/* ---- the structures under test, behind one pair of function pointers each ---- */

typedef struct contender {
    const char *name;
    uint64_t memory;  /* bytes of the structure's arrays */
    double fpr_bound; /* the FPR its geometry gives (0: exact) */
    int (*one)(const void *s, const addr16 *a);
    size_t (*batch)(const void *s, const addr16 *a, size_t n, uint8_t *res);
    const void *s;
} contender;

static int one_hs(const void *s, const addr16 *a) { return hs_contains(s, a); }
static size_t batch_hs(const void *s, const addr16 *a, size_t n, uint8_t *res)
{
    return hs_contains_batch(s, a, n, res);
}
static int one_blocked(const void *s, const addr16 *a) { return bk_blocked_contains(s, a, 16); }
static size_t batch_blocked(const void *s, const addr16 *a, size_t n, uint8_t *res)
{
    uint64_t h[256];
    const uint64_t seed = bk_blocked_seed(s);
    for (size_t i = 0; i < n; i++) h[i] = bk_hash64(&a[i], 16, seed);
    size_t hits = 0;
    bk_blocked_contains_hashes(s, h, n, res, &hits);
    return hits;
}
static int one_fuse(const void *s, const addr16 *a) { return bk_fuse_contains(s, a, 16); }
static size_t batch_fuse(const void *s, const addr16 *a, size_t n, uint8_t *res)
{
    uint64_t h[256];
    const uint64_t seed = bk_fuse_seed(s);
    for (size_t i = 0; i < n; i++) h[i] = bk_hash64(&a[i], 16, seed);
    size_t hits = 0;
    bk_fuse_contains_hashes(s, h, n, res, &hits);
    return hits;
}

#define BURST 256

int main(int argc, char **argv)
{
    uint64_t list_size = 1000000, lookups = 10000000, seed = 42;
    double blocked_share = 0.01, v6_share = 0.3, set_load = 0.75;
    const char *list_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (EX_ARG("--list-size")) list_size = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--lookups")) lookups = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--blocked-share")) blocked_share = ex_double(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--v6-share")) v6_share = ex_double(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--list")) list_path = argv[++i];
        else if (EX_ARG("--set-load")) set_load = ex_double(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--seed")) seed = ex_count(prog, argv[i], argv[i + 1]), i++;
        else {
            fprintf(stderr,
                    "usage: %s [--list-size N] [--lookups N] [--blocked-share F] [--v6-share F] "
                    "[--list FILE] [--set-load F] [--seed S]\n",
                    prog);
            return 2;
        }
    }
    if (blocked_share > 1 || v6_share > 1 || lookups == 0 || !(set_load >= 0.1 && set_load <= 0.95)) {
        fprintf(stderr, "%s: shares must be in [0, 1], lookups > 0, set load in [0.1, 0.95]\n", prog);
        return 2;
    }
    uint64_t rng = seed;

    /* The list, deduplicated through the exact set (which is also the reference for every answer). */
    addr16 *list;
    uint64_t n;
    if (list_path) {
        list = read_list(list_path, &n);
    } else {
        n = list_size;
        list = ex_xmalloc(prog, (size_t)n * sizeof *list);
        for (uint64_t i = 0; i < n; i++) addr_random(&list[i], &rng, v6_share);
    }
    if (n == 0) {
        fprintf(stderr, "%s: the blocklist is empty\n", prog);
        return 2;
    }
    hashset hs;
    hs_init(&hs, n, set_load);
    uint64_t distinct = 0;
    for (uint64_t i = 0; i < n; i++)
        if (hs_add(&hs, &list[i])) list[distinct++] = list[i];
    n = distinct;

    /* The filters, built from the list's hashes with a secret-style seed (see docs/GUIDE.md). */
    const uint64_t fseed = ex_scramble(seed ^ UINT64_C(0x1b1c));
    uint64_t *hashes = ex_xmalloc(prog, (size_t)n * sizeof *hashes);
    for (uint64_t i = 0; i < n; i++) hashes[i] = bk_hash64(&list[i], 16, fseed);
    double t0 = ex_now();
    bk_blocked *blocked;
    bk_blocked_options bo = { .layout = BK_BLOCKED_SPLIT256, .seed = fseed };
    EX_CHECK(prog, bk_blocked_new(n, 0.01, &bo, &blocked));
    EX_CHECK(prog, bk_blocked_add_hashes(blocked, hashes, n));
    double t_blocked = ex_now() - t0;
    bk_fuse *fuse8, *fuse16;
    bk_fuse_options fo8 = { .fingerprint_bits = 8, .max_attempts = 0, .seed = fseed }, fo16 = { .fingerprint_bits = 16, .max_attempts = 0, .seed = fseed };
    t0 = ex_now();
    EX_CHECK(prog, bk_fuse_build_hashes(hashes, n, &fo8, &fuse8));
    double t_fuse8 = ex_now() - t0;
    t0 = ex_now();
    EX_CHECK(prog, bk_fuse_build_hashes(hashes, n, &fo16, &fuse16));
    double t_fuse16 = ex_now() - t0;
    free(hashes);

    bk_stats st_b, st_f8, st_f16;
    bk_blocked_stats(blocked, &st_b);
    bk_fuse_stats(fuse8, &st_f8);
    bk_fuse_stats(fuse16, &st_f16);
    bk_geometry gb;
    EX_CHECK(prog, bk_blocked_size(n, 0.01, BK_BLOCKED_SPLIT256, &gb));

    char set_name[32];
    snprintf(set_name, sizeof set_name, "hash set, load %.2f", (double)n / (double)hs.nslots);
    contender cs[] = {
        { set_name, hs.nslots * sizeof(addr16), 0, one_hs, batch_hs, &hs },
        { "blocked Bloom 1%", st_b.memory_bytes, gb.fpr, one_blocked, batch_blocked, blocked },
        { "binary fuse 8-bit", st_f8.memory_bytes, st_f8.fpr_target, one_fuse, batch_fuse, fuse8 },
        { "binary fuse 16-bit", st_f16.memory_bytes, st_f16.fpr_target, one_fuse, batch_fuse, fuse16 },
    };
    const int ncs = (int)(sizeof cs / sizeof cs[0]);
    int failures = 0;

    /* No false negatives: every listed address answers "maybe", one at a time and in bursts. */
    uint8_t res[BURST];
    for (int c = 0; c < ncs; c++) {
        uint64_t missed = 0;
        for (uint64_t i = 0; i < n; i++) missed += !cs[c].one(cs[c].s, &list[i]);
        for (uint64_t i = 0; i < n; i += BURST) {
            size_t m = (size_t)(n - i < BURST ? n - i : BURST);
            missed += m - cs[c].batch(cs[c].s, &list[i], m, res);
        }
        if (missed) {
            printf("FAIL: %s answered 'absent' for %" PRIu64 " listed addresses\n", cs[c].name, missed);
            failures++;
        }
    }

    /* The traffic: mostly clean random sources, a share of them from the list. */
    addr16 *traffic = ex_xmalloc(prog, (size_t)lookups * sizeof *traffic);
    uint8_t *truth = ex_xmalloc(prog, (size_t)lookups);
    uint64_t listed = 0;
    for (uint64_t i = 0; i < lookups; i++) {
        if ((double)ex_rand(&rng) / 18446744073709551616.0 < blocked_share)
            traffic[i] = list[ex_below(&rng, n)];
        else
            addr_random(&traffic[i], &rng, v6_share);
        truth[i] = (uint8_t)hs_contains(&hs, &traffic[i]);
        listed += truth[i];
    }
    const uint64_t clean = lookups - listed;

    printf("IP blocklist: %" PRIu64 " distinct addresses (%.0f%% IPv6), %" PRIu64
           " lookups of which %" PRIu64 " listed\n",
           n, 100 * v6_share, lookups, listed);
    printf("built in: blocked %.0f ms, fuse-8 %.0f ms, fuse-16 %.0f ms\n", t_blocked * 1e3, t_fuse8 * 1e3,
           t_fuse16 * 1e3);
    printf("%-20s %11s %9s %13s %13s %10s %10s\n", "structure", "memory", "bits/addr", "single M/s",
           "batch M/s", "FPR", "bound");
    for (int c = 0; c < ncs; c++) {
        uint64_t maybe_single = 0, maybe_batch = 0, wrong = 0;
        double ts = ex_now();
        for (uint64_t i = 0; i < lookups; i++) maybe_single += (uint64_t)cs[c].one(cs[c].s, &traffic[i]);
        double t_single = ex_now() - ts;
        ts = ex_now();
        for (uint64_t i = 0; i < lookups; i += BURST) {
            size_t m = (size_t)(lookups - i < BURST ? lookups - i : BURST);
            maybe_batch += cs[c].batch(cs[c].s, &traffic[i], m, res);
        }
        double t_batch = ex_now() - ts;
        /* The answers themselves: a listed source must never pass as clean. */
        for (uint64_t i = 0; i < lookups; i += BURST) {
            size_t m = (size_t)(lookups - i < BURST ? lookups - i : BURST);
            cs[c].batch(cs[c].s, &traffic[i], m, res);
            for (size_t j = 0; j < m; j++) wrong += truth[i + j] && !res[j];
        }
        double fpr = clean ? (double)(maybe_batch - listed) / (double)clean : 0;
        char mem[32];
        printf("%-20s %11s %9.2f %13.1f %13.1f %9.4f%% %9.4f%%\n", cs[c].name,
               ex_bytes((double)cs[c].memory, mem, sizeof mem),
               cs[c].memory * 8.0 / (double)n, lookups / t_single / 1e6, lookups / t_batch / 1e6, 100 * fpr,
               100 * cs[c].fpr_bound);
        if (wrong || maybe_single != maybe_batch || maybe_batch < listed) {
            printf("FAIL: %s let %" PRIu64 " listed sources through (single %" PRIu64 ", batch %" PRIu64
                   " maybes)\n",
                   cs[c].name, wrong, maybe_single, maybe_batch);
            failures++;
        }
        /* The measured rate against the geometry's, with room for sampling noise (4 sigma). */
        double expect = cs[c].fpr_bound * (double)clean;
        if (clean && (double)(maybe_batch - listed) > expect + 4 * sqrt(expect) + 1) {
            printf("FAIL: %s measured FPR %.4f%% above its bound %.4f%%\n", cs[c].name, 100 * fpr,
                   100 * cs[c].fpr_bound);
            failures++;
        }
    }
    printf("memory of the exact hash set / each filter: blocked %.1fx, fuse-8 %.1fx, fuse-16 %.1fx\n",
           (double)cs[0].memory / (double)cs[1].memory, (double)cs[0].memory / (double)cs[2].memory,
           (double)cs[0].memory / (double)cs[3].memory);
    printf("%s\n", failures ? "some checks FAILED" : "checks: no listed address passed as clean; FPR within bound");

    free(traffic);
    free(truth);
    free(list);
    free(hs.slots);
    bk_blocked_free(blocked);
    bk_fuse_free(fuse8);
    bk_fuse_free(fuse16);
    return failures ? 1 : 0;
}
