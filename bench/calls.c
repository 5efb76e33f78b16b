/*
 * calls: plain one-key calls of bloomkit (the byte call and the uint64-key call) against the peer
 * designs, in one process, rounds interleaved, the fastest round of each cell kept (a busy shared
 * machine only ever adds time). 8-byte keys, p = 1%.
 *
 *   calls [-n N[,N...]] [-r ROUNDS] [-q QUERIES] [--only bloom,blocked,fuse,cuckoo,cuckoo-p2]
 *
 * For each n (default 1M and 10M) and each family, three contenders of the bench registry: bloomkit
 * with byte keys (bk_<type>_add / _contains on the key's 8 bytes), bloomkit with uint64 keys
 * (bk_<type>_add_u64 / _contains_u64), and the peer (c_peers.c, c_baseline.c), all called through the
 * same function-pointer interface. Every round inserts the n keys into a fresh filter of each contender
 * (static fuse filters: built once, outside the rounds) and queries Q keys (default min(n, 2M)) at 100%
 * and 0% hits; the contenders' order rotates from round to round. Figures are ns per call on the
 * thread's CPU clock; ratio = ours / peer's (above 1: slower). The load average is printed at the
 * start and end.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench.h"
#include "benchutil.h"

extern const bench_contender bench_libbloom, bench_bloom, bench_bloom_u64, bench_blocked, bench_blocked_u64,
    bench_sbbf, bench_fuse, bench_fuse_u64, bench_bfuse8, bench_cuckoo, bench_cuckoo_u64, bench_cfpeer,
    bench_cuckoo_p2, bench_cuckoo_p2_u64;

typedef struct family {
    const char *name;
    const bench_contender *c[3]; /* bytes, u64, peer */
} family;

static const family FAMILIES[] = {
    { "bloom", { &bench_bloom, &bench_bloom_u64, &bench_libbloom } },
    { "blocked", { &bench_blocked, &bench_blocked_u64, &bench_sbbf } },
    { "fuse", { &bench_fuse, &bench_fuse_u64, &bench_bfuse8 } },
    { "cuckoo", { &bench_cuckoo, &bench_cuckoo_u64, &bench_cfpeer } },
    /* the same load as the peer: its 12-bit tags and power-of-two bucket count (60% full at 10M) */
    { "cuckoo-p2", { &bench_cuckoo_p2, &bench_cuckoo_p2_u64, &bench_cfpeer } },
};

#define MIN_INTO(dst, v) ((dst) = (dst) < 0 || (v) < (dst) ? (v) : (dst))

int main(int argc, char **argv)
{
    uint64_t ns[8] = { 1000000, 10000000 };
    int nn = 2, rounds = 5;
    uint64_t qmax = 2000000;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            nn = 0;
            for (char *s = argv[++i]; *s && nn < 8;) {
                char *e;
                ns[nn++] = (uint64_t)strtod(s, &e);
                s = *e == ',' ? e + 1 : e;
                if (e == s && *s) break;
            }
        } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-q") && i + 1 < argc) {
            qmax = (uint64_t)strtod(argv[++i], NULL);
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else {
            fprintf(stderr, "usage: calls [-n N[,N...]] [-r ROUNDS] [-q QUERIES] [--only bloom,blocked,fuse,cuckoo,cuckoo-p2]\n");
            return 2;
        }
    }
    if (rounds < 1) rounds = 1;
    bu_print_loadavg("at start");
    printf("8-byte keys, p = 1%%, ns per plain call on the thread's CPU clock, fastest of %d interleaved rounds\n",
           rounds);
    for (int ni = 0; ni < nn; ni++) {
        uint64_t n = ns[ni], q = n < qmax ? n : qmax;
        /* keys: [0, n) inserted, [n, n + q) absent */
        uint64_t *keys = malloc((n + q) * sizeof *keys), st = 12345;
        const void **ptrs = malloc(n * sizeof *ptrs);
        size_t *lens = malloc(n * sizeof *lens);
        uint8_t *res = malloc(q);
        if (!keys || !ptrs || !lens || !res) return 1;
        for (uint64_t i = 0; i < n + q; i++) keys[i] = bu_splitmix64(&st);
        for (uint64_t i = 0; i < n; i++) {
            ptrs[i] = &keys[i];
            lens[i] = 8;
        }
        printf("\nn = %llu (queries: %llu per hit rate)\n", (unsigned long long)n, (unsigned long long)q);
        printf("%-8s %-7s %9s %9s %9s %9s %9s  %s\n", "family", "op", "bytes", "u64", "peer", "bytes/p", "u64/p",
               "check");
        for (size_t fi = 0; fi < sizeof FAMILIES / sizeof FAMILIES[0]; fi++) {
            const family *fam = &FAMILIES[fi];
            if (!bu_selected(only, fam->name)) continue;
            double ins[3] = { -1, -1, -1 }, q100[3] = { -1, -1, -1 }, q0[3] = { -1, -1, -1 };
            uint64_t fn[3] = { 0 }, fp[3] = { 0 };
            void *stat[3] = { 0 };
            bool is_static = fam->c[0]->build != NULL;
            if (is_static)
                for (int c = 0; c < 3; c++) {
                    double t0 = bu_cpu_ns();
                    stat[c] = fam->c[c]->build(ptrs, lens, n, 0.01);
                    ins[c] = (bu_cpu_ns() - t0) / (double)n;
                    if (!stat[c]) return 1;
                }
            for (int r = 0; r < rounds; r++)
                for (int j = 0; j < 3; j++) {
                    int c = (j + r) % 3;
                    const bench_contender *k = fam->c[c];
                    void *f = stat[c];
                    double t0, t;
                    if (!is_static) {
                        f = k->create(n, 0.01);
                        if (!f) return 1;
                        if (k->clear) k->clear(f); /* first-touch page faults outside the timer */
                        t0 = bu_cpu_ns();
                        for (uint64_t i = 0; i < n; i++) k->add(f, &keys[i], 8);
                        t = bu_cpu_ns() - t0;
                        MIN_INTO(ins[c], t / (double)n);
                    }
                    uint64_t hits = 0;
                    t0 = bu_cpu_ns();
                    for (uint64_t i = 0; i < q; i++) res[i] = k->contains(f, &keys[i], 8);
                    t = bu_cpu_ns() - t0;
                    MIN_INTO(q100[c], t / (double)q);
                    for (uint64_t i = 0; i < q; i++) hits += res[i];
                    fn[c] = q - hits;
                    hits = 0;
                    t0 = bu_cpu_ns();
                    for (uint64_t i = 0; i < q; i++) res[i] = k->contains(f, &keys[n + i], 8);
                    t = bu_cpu_ns() - t0;
                    MIN_INTO(q0[c], t / (double)q);
                    for (uint64_t i = 0; i < q; i++) hits += res[i];
                    fp[c] = hits;
                    if (!is_static) k->destroy(f);
                }
            for (int c = 0; c < 3; c++)
                if (is_static) fam->c[c]->destroy(stat[c]);
            char check[96];
            snprintf(check, sizeof check, "FN %llu/%llu/%llu, FPR %.3f/%.3f/%.3f%%", (unsigned long long)fn[0],
                     (unsigned long long)fn[1], (unsigned long long)fn[2], 100.0 * (double)fp[0] / (double)q,
                     100.0 * (double)fp[1] / (double)q, 100.0 * (double)fp[2] / (double)q);
            const char *ops[3] = { is_static ? "build" : "insert", "q100%", "q0%" };
            double *rows[3] = { ins, q100, q0 };
            for (int o = 0; o < 3; o++)
                printf("%-8s %-7s %9.1f %9.1f %9.1f %9.2f %9.2f  %s\n", o ? "" : fam->name, ops[o], rows[o][0],
                       rows[o][1], rows[o][2], rows[o][0] / rows[o][2], rows[o][1] / rows[o][2], o ? "" : check);
        }
        free(keys);
        free(ptrs);
        free(lens);
        free(res);
    }
    bu_print_loadavg("at end");
    return 0;
}
