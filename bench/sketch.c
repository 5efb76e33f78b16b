/* Sketches: the count-min sketch's increments (one key, batches; sketches in and out of cache) against
 * a plain random-counter-increment floor, and Top-K's accuracy on Zipf(1.0) streams (1e7 items over 1e6
 * distinct keys: how many of the true top 100 the reported top 100 holds) at RedisBloom's TOPK.RESERVE
 * defaults, at its rule of thumb and at the library's default geometry. Prints figures; never gates.
 * Usage: bench_sketch [cms|topk] [items] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomkit/bloomkit.h>
#include "benchutil.h"
#include "../tests/sketchutil.h"

/* The best of three runs of each loop (the machine is shared: the least disturbed run is the figure). */
#define CMS_ROUNDS 3

static void cms_bench(void)
{
    const size_t n = (size_t)1 << 22;
    uint64_t *h = malloc(n * sizeof *h), s = 1;
    for (size_t i = 0; i < n; i++) h[i] = bu_splitmix64(&s);
    static const struct { uint64_t w; uint32_t d; } dims[] = { { 2000, 7 }, { 1 << 20, 5 }, { 1 << 24, 5 } };
    for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++) {
        for (int cons = 0; cons < 2; cons++) {
            bk_cms_options o = BK_CMS_OPTIONS_INIT;
            o.conservative = cons;
            bk_cms *c = NULL;
            if (bk_cms_new(dims[t].w, dims[t].d, &o, &c) != BK_OK) return;
            double one = 1e300, batch = 1e300;
            for (int round = 0; round < CMS_ROUNDS; round++) {
                double t0 = bu_cpu_ns();
                for (size_t i = 0; i < n; i++) bk_cms_incrby_hash(c, h[i], 1, NULL);
                double t1 = bu_cpu_ns();
                bk_cms_incrby_hashes(c, h, NULL, n, NULL);
                double t2 = bu_cpu_ns();
                if (t1 - t0 < one) one = t1 - t0;
                if (t2 - t1 < batch) batch = t2 - t1;
            }
            printf("cms %8llu x %u (%7.1f MiB) %-12s one key %6.1f ns/op   batch %6.1f ns/op\n",
                   (unsigned long long)dims[t].w, dims[t].d, (double)bk_cms_bytes(dims[t].w, dims[t].d) / 1048576,
                   cons ? "conservative" : "plain", one / n, batch / n);
            bk_cms_free(c);
        }
        /* the floor: depth random 32-bit increments per key in an array of the same size, prefetched 16
         * keys ahead, the positions from a cheaper mix than the sketch's probe sequence */
        uint64_t cells = dims[t].w * dims[t].d;
        __extension__ typedef unsigned __int128 u128;
        uint32_t *a = malloc(cells * 4);
        memset(a, 0, cells * 4); /* touched first, as the sketch is */
        double best = 1e300;
        for (int round = 0; round < CMS_ROUNDS; round++) {
            double t0 = bu_cpu_ns();
            for (size_t i = 0; i < n; i++) {
                uint64_t x = h[i];
                for (uint32_t r = 0; r < dims[t].d; r++) {
                    if (i + 16 < n)
                        __builtin_prefetch(&a[(uint64_t)(((u128)(h[i + 16] + r * 0x9e3779b97f4a7c15ULL) * cells) >> 64)], 1);
                    a[(uint64_t)(((u128)(x + r * 0x9e3779b97f4a7c15ULL) * cells) >> 64)]++;
                }
            }
            double t1 = bu_cpu_ns();
            if (t1 - t0 < best) best = t1 - t0;
        }
        printf("    floor: %u prefetched random increments per key in the same array %6.1f ns/op\n", dims[t].d,
               best / n);
        free(a);
    }
    free(h);
}

static int cmp_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The Zipf(1.0) stream of `items` ranks over 1e6 keys (seed 2024), its exact counts and the count of the
 * 100th heaviest (every key at or above it is in the true top 100). */
typedef struct zstream {
    uint64_t *rank, *count, items, distinct, threshold;
} zstream;

static int zstream_make(zstream *z, uint64_t items)
{
    z->distinct = 1000000;
    z->items = items;
    su_zipf zz;
    if (!su_zipf_init(&zz, z->distinct, 1.0, 2024)) return 0;
    z->rank = malloc(items * sizeof *z->rank);
    z->count = calloc(z->distinct, sizeof *z->count);
    uint64_t *sorted = malloc(z->distinct * sizeof *sorted);
    if (!z->rank || !z->count || !sorted) return 0;
    for (uint64_t i = 0; i < items; i++) z->count[z->rank[i] = su_zipf_next(&zz)]++;
    memcpy(sorted, z->count, z->distinct * sizeof *sorted);
    qsort(sorted, z->distinct, sizeof *sorted, cmp_desc);
    z->threshold = sorted[99];
    free(sorted);
    su_zipf_free(&zz);
    return 1;
}

/* `bench_sketch topk-resp ITEMS KEY`: the stream as TOPK.ADD commands of 1,000 items (RESP, for
 * `redis-cli --pipe`), so that a server's Top-K sees exactly the items the library calls do. */
static void topk_resp(uint64_t items, const char *key)
{
    zstream z;
    if (!zstream_make(&z, items)) return;
    for (uint64_t i = 0; i < items; i += 1000) {
        uint64_t n = items - i < 1000 ? items - i : 1000;
        printf("*%llu\r\n$8\r\nTOPK.ADD\r\n$%zu\r\n%s\r\n", (unsigned long long)n + 2, strlen(key), key);
        for (uint64_t j = 0; j < n; j++) {
            char buf[12];
            int l = su_item(z.rank[i + j], buf);
            printf("$%d\r\n%s\r\n", l, buf);
        }
    }
    free(z.rank);
    free(z.count);
}

/* `bench_sketch topk-truth ITEMS`: the true top 100's items (every key whose count reaches the 100th's),
 * one a line. */
static void topk_truth(uint64_t items)
{
    zstream z;
    if (!zstream_make(&z, items)) return;
    for (uint64_t r = 0; r < z.distinct; r++) {
        char buf[12];
        if (z.count[r] >= z.threshold && su_item(r, buf) > 0) printf("%s\n", buf);
    }
    free(z.rank);
    free(z.count);
}

static void topk_bench(uint64_t items)
{
    zstream z;
    if (!zstream_make(&z, items)) return;
    /* the items' text, made once */
    char (*text)[12] = malloc(z.distinct * sizeof *text);
    uint8_t *tlen = malloc(z.distinct);
    for (uint64_t r = 0; r < z.distinct; r++) tlen[r] = (uint8_t)su_item(r, text[r]);
    static const struct { const char *what; uint32_t w, d; double decay; } geo[] = {
        { "TOPK.RESERVE's defaults (8 x 7)", 8, 7, 0.9 },
        { "k ln k x max(5, ln k) (RedisBloom's docs)", 461, 5, 0.9 },
        { "100 x 5", 100, 5, 0.9 },
        { "200 x 5", 200, 5, 0.9 },
        { "300 x 5", 300, 5, 0.9 },
        { "library default (k only)", 0, 0, 0 },
        { "2000 x 5", 2000, 5, 0.9 },
    };
    for (size_t g = 0; g < sizeof geo / sizeof geo[0]; g++) {
        bk_topk_options o = BK_TOPK_OPTIONS_INIT;
        o.width = geo[g].w;
        o.depth = geo[g].d;
        o.decay = geo[g].decay;
        bk_topk *t = NULL;
        if (bk_topk_new(100, &o, &t) != BK_OK) continue;
        double t0 = bu_cpu_ns();
        for (uint64_t i = 0; i < items; i++) bk_topk_incrby(t, text[z.rank[i]], tlen[z.rank[i]], 1, NULL);
        double t1 = bu_cpu_ns();
        bk_topk_item it[100];
        size_t n = bk_topk_list(t, it, 100), hit = 0;
        for (size_t i = 0; i < n; i++) {
            char buf[12] = { 0 };
            memcpy(buf, it[i].key, it[i].len < 11 ? it[i].len : 11);
            uint32_t v = (uint32_t)strtoul(buf, NULL, 10);
            uint64_t r = (uint32_t)(v * UINT32_C(0x0e8b2f51)); /* the scramble's inverse mod 2^32 */
            if (r < z.distinct && z.count[r] >= z.threshold) hit++;
        }
        printf("topk %-42s %4u x %u decay %.2f: %3zu of the true top 100 (%llu items over %llu keys), "
               "%6.1f ns/add, %llu bytes (bk_topk_memory)\n",
               geo[g].what, bk_topk_width(t), bk_topk_depth(t), bk_topk_decay(t), hit, (unsigned long long)items,
               (unsigned long long)z.distinct, (t1 - t0) / (double)items,
               (unsigned long long)bk_topk_memory(t));
        bk_topk_free(t);
    }
    free(text);
    free(tlen);
    free(z.rank);
    free(z.count);
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    uint64_t items = argc > 2 ? strtoull(argv[2], NULL, 10) : 10000000;
    if (!(only && !strncmp(only, "topk-", 5))) bu_print_loadavg("before");
    if (bu_selected(only, "cms")) cms_bench();
    if (only && !strcmp(only, "topk-resp")) {
        topk_resp(items, argc > 3 ? argv[3] : "topk");
        return 0;
    }
    if (only && !strcmp(only, "topk-truth")) {
        topk_truth(items);
        return 0;
    }
    if (bu_selected(only, "topk")) topk_bench(items);
    bu_print_loadavg("after");
    return 0;
}
