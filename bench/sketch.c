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
            double t0 = bu_cpu_ns();
            for (size_t i = 0; i < n; i++) bk_cms_incrby_hash(c, h[i], 1, NULL);
            double t1 = bu_cpu_ns();
            bk_cms_incrby_hashes(c, h, NULL, n, NULL);
            double t2 = bu_cpu_ns();
            printf("cms %8llu x %u (%7.1f MiB) %-12s one key %6.1f ns/op   batch %6.1f ns/op\n",
                   (unsigned long long)dims[t].w, dims[t].d, (double)bk_cms_bytes(dims[t].w, dims[t].d) / 1048576,
                   cons ? "conservative" : "plain", (t1 - t0) / n, (t2 - t1) / n);
            bk_cms_free(c);
        }
        /* the floor: depth random 32-bit increments per key in an array of the same size, prefetched */
        uint64_t cells = dims[t].w * dims[t].d;
        __extension__ typedef unsigned __int128 u128;
        uint32_t *a = malloc(cells * 4);
        memset(a, 0, cells * 4); /* touched first, as the sketch is */
        double t0 = bu_cpu_ns();
        for (size_t i = 0; i < n; i++) {
            uint64_t x = h[i];
            for (uint32_t r = 0; r < dims[t].d; r++) {
                if (i + 16 < n) __builtin_prefetch(&a[(uint64_t)(((u128)(h[i + 16] + r * 0x9e3779b97f4a7c15ULL) * cells) >> 64)], 1);
                a[(uint64_t)(((u128)(x + r * 0x9e3779b97f4a7c15ULL) * cells) >> 64)]++;
            }
        }
        double t1 = bu_cpu_ns();
        printf("    floor: %u prefetched random increments per key in the same array %6.1f ns/op\n", dims[t].d,
               (t1 - t0) / n);
        free(a);
    }
    free(h);
}

static int cmp_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void topk_bench(uint64_t items)
{
    const uint64_t distinct = 1000000;
    su_zipf z;
    if (!su_zipf_init(&z, distinct, 1.0, 2024)) return;
    uint64_t *stream = malloc(items * sizeof *stream), *count = calloc(distinct, sizeof *count);
    for (uint64_t i = 0; i < items; i++) {
        stream[i] = su_zipf_next(&z);
        count[stream[i]]++;
    }
    uint64_t *sorted = malloc(distinct * sizeof *sorted);
    memcpy(sorted, count, distinct * sizeof *sorted);
    qsort(sorted, distinct, sizeof *sorted, cmp_desc);
    uint64_t threshold = sorted[99];
    static const struct { const char *what; uint32_t w, d; double decay; } geo[] = {
        { "RedisBloom TOPK.RESERVE default", 8, 7, 0.9 },
        { "RedisBloom rule of thumb (k ln k, ln k)", 461, 5, 0.9 },
        { "library default", 0, 0, 0 },
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
        for (uint64_t i = 0; i < items; i++) bk_topk_incrby_u64(t, su_key(stream[i]), 1, NULL);
        double t1 = bu_cpu_ns();
        bk_topk_item it[100];
        size_t n = bk_topk_list(t, it, 100), hit = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t key;
            memcpy(&key, it[i].key, 8);
            uint64_t r = (key - 12345) * UINT64_C(0xf1de83e19937733d);
            if (r < distinct && count[r] >= threshold) hit++;
        }
        bk_stats st;
        bk_topk_stats(t, &st);
        printf("topk %-40s %4u x %u decay %.2f: %3zu of the true top 100 (%llu items over %llu keys), "
               "%6.1f ns/add, %llu bytes\n",
               geo[g].what, bk_topk_width(t), bk_topk_depth(t), bk_topk_decay(t), hit, (unsigned long long)items,
               (unsigned long long)distinct, (t1 - t0) / (double)items, (unsigned long long)st.memory_bytes);
        bk_topk_free(t);
    }
    free(stream);
    free(count);
    free(sorted);
    su_zipf_free(&z);
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    uint64_t items = argc > 2 ? strtoull(argv[2], NULL, 10) : 10000000;
    bu_print_loadavg("before");
    if (bu_selected(only, "cms")) cms_bench();
    if (bu_selected(only, "topk")) topk_bench(items);
    bu_print_loadavg("after");
    return 0;
}
