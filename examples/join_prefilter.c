/*
 * Join prefilter (a "Bloom join" / semi-join reduction): the orders of premium customers.
 *
 * A small table (premium customers) lives on the join node; a large table (orders) is scanned on
 * other nodes, and every scanned row would cross the network to be probed against the small table's
 * hash map. Instead, the join node builds a blocked Bloom filter from the small table's join keys and
 * sends it to the scanners (a few hundred KB); they ship only the rows whose key may match. Rows
 * whose key is certainly absent never leave the scanner; a false positive costs one row shipped and
 * dropped at the join, and never changes the result.
 *
 * The program runs the same scan twice (the large table is generated on the fly from a fixed seed, as
 * a scan would read it): without the filter and with it. It reports the rows and bytes that would
 * cross the network each way (with the filter itself counted as traffic) and checks that the join
 * results are identical, row for row.
 *
 *   join_prefilter [--small N] [--large N] [--customers N] [--fpr P] [--seed S]
 *
 * --small: rows of the small table (distinct customer ids), --large: rows of the large table,
 * --customers: the id space the orders draw from (so the share of orders that match is about
 * small / customers). Exit status 0 when the results are identical and no matching row was dropped,
 * 1 otherwise, 2 on errors.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "ex_util.h"

static const char *prog = "join_prefilter";

/* A row of the large table as it is serialized on the wire: 32 bytes. */
typedef struct order_row {
    uint64_t order_id;
    uint64_t customer_id;
    uint64_t created_at;
    uint32_t amount_cents;
    uint16_t items;
    uint16_t status;
} order_row;

/* A row of the small table. */
typedef struct customer_row {
    uint64_t customer_id;
    uint32_t tier;
    char region[12];
} customer_row;

/* One row of the join result. */
typedef struct joined {
    uint64_t order_id;
    uint64_t customer_id;
    uint32_t amount_cents;
    uint32_t tier;
} joined;

/* The join key as bytes, little-endian whatever the machine: the filter's key. */
static void key_bytes(uint64_t id, uint8_t out[8])
{
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(id >> (8 * i));
}

/* ---- the join node's hash map: customer_id -> row of the small table (open addressing) ---- */
typedef struct idmap {
    uint64_t *ids; /* 0 = empty (ids are never 0) */
    uint32_t *rows;
    uint64_t nslots;
} idmap;

static uint64_t map_slot(const idmap *m, uint64_t id)
{
    return (uint64_t)(((ex_u128)ex_scramble(id) * m->nslots) >> 64);
}

static void map_init(idmap *m, uint64_t n)
{
    m->nslots = n + n / 3 + 1;
    m->ids = ex_xcalloc(prog, m->nslots, sizeof *m->ids);
    m->rows = ex_xcalloc(prog, m->nslots, sizeof *m->rows);
}

static int map_put(idmap *m, uint64_t id, uint32_t row)
{
    for (uint64_t i = map_slot(m, id);; i = i + 1 == m->nslots ? 0 : i + 1) {
        if (m->ids[i] == id) return 0;
        if (m->ids[i] == 0) {
            m->ids[i] = id;
            m->rows[i] = row;
            return 1;
        }
    }
}

static int64_t map_get(const idmap *m, uint64_t id)
{
    for (uint64_t i = map_slot(m, id);; i = i + 1 == m->nslots ? 0 : i + 1) {
        if (m->ids[i] == id) return m->rows[i];
        if (m->ids[i] == 0) return -1;
    }
}

/* Customer ids are the scrambled numbers 1..customers (random-looking, never 0). */
static uint64_t customer_id(uint64_t k) { return ex_scramble(k + 1) | 1; }

/* The scan of the large table: row i, the same on every pass. */
static void order_at(uint64_t seed, uint64_t i, uint64_t customers, order_row *r)
{
    uint64_t s = seed ^ ex_scramble(i);
    r->order_id = 1000000 + i;
    r->customer_id = customer_id(ex_below(&s, customers));
    r->created_at = 1700000000 + ex_below(&s, 86400 * 365);
    r->amount_cents = (uint32_t)ex_below(&s, 50000) + 100;
    r->items = (uint16_t)(ex_below(&s, 9) + 1);
    r->status = (uint16_t)ex_below(&s, 4);
}

typedef struct pass_result {
    joined *out;
    uint64_t nout, cap;
    uint64_t rows_shipped;
    double seconds;
} pass_result;

static void emit(pass_result *p, const order_row *r, const customer_row *c)
{
    if (p->nout == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 1024;
        joined *grown = realloc(p->out, p->cap * sizeof *grown);
        if (!grown) {
            fprintf(stderr, "%s: out of memory\n", prog);
            exit(2);
        }
        p->out = grown;
    }
    joined *j = &p->out[p->nout++];
    memset(j, 0, sizeof *j);
    j->order_id = r->order_id;
    j->customer_id = r->customer_id;
    j->amount_cents = r->amount_cents;
    j->tier = c->tier;
}

#define BATCH 1024

/* One pass: scan in batches; with a filter, ship only the rows that may match; the join node probes
 * its map with every shipped row. */
static void run_pass(const bk_blocked *filter, uint64_t seed, uint64_t large, uint64_t customers,
                     const idmap *map, const customer_row *small, pass_result *p)
{
    order_row batch[BATCH];
    uint64_t h[BATCH];
    uint8_t maybe[BATCH];
    uint8_t kb[8];
    const uint64_t fseed = filter ? bk_blocked_seed(filter) : 0;
    double t0 = ex_now();
    for (uint64_t base = 0; base < large; base += BATCH) {
        size_t n = (size_t)(large - base < BATCH ? large - base : BATCH);
        for (size_t i = 0; i < n; i++) order_at(seed, base + i, customers, &batch[i]);
        if (filter) {
            for (size_t i = 0; i < n; i++) {
                key_bytes(batch[i].customer_id, kb);
                h[i] = bk_hash64(kb, 8, fseed);
            }
            bk_blocked_contains_hashes(filter, h, n, maybe, NULL);
        } else {
            memset(maybe, 1, n);
        }
        for (size_t i = 0; i < n; i++) {
            if (!maybe[i]) continue; /* certainly no match: the row stays on the scanner */
            p->rows_shipped++;
            int64_t row = map_get(map, batch[i].customer_id);
            if (row >= 0) emit(p, &batch[i], &small[row]);
        }
    }
    p->seconds = ex_now() - t0;
}

int main(int argc, char **argv)
{
    uint64_t small_n = 100000, large_n = 10000000, customers = 10000000, seed = 7;
    double fpr = 0.01;
    for (int i = 1; i < argc; i++) {
        if (EX_ARG("--small")) small_n = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--large")) large_n = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--customers")) customers = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--fpr")) fpr = ex_double(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--seed")) seed = ex_count(prog, argv[i], argv[i + 1]), i++;
        else {
            fprintf(stderr, "usage: %s [--small N] [--large N] [--customers N] [--fpr P] [--seed S]\n", prog);
            return 2;
        }
    }
    if (small_n == 0 || small_n > customers || small_n > UINT32_MAX || !(fpr > 0 && fpr < 1)) {
        fprintf(stderr, "%s: need 0 < small <= customers (and < 2^32), 0 < fpr < 1\n", prog);
        return 2;
    }

    /* The small table: distinct random customers, with the join node's map. */
    uint64_t rng = seed;
    customer_row *small = ex_xcalloc(prog, (size_t)small_n, sizeof *small);
    idmap map;
    map_init(&map, small_n);
    static const char *regions[] = { "eu-west", "eu-north", "us-east", "us-west", "ap-south" };
    for (uint64_t n = 0; n < small_n;) {
        uint64_t id = customer_id(ex_below(&rng, customers));
        if (!map_put(&map, id, (uint32_t)n)) continue;
        small[n].customer_id = id;
        small[n].tier = (uint32_t)ex_below(&rng, 3) + 1;
        snprintf(small[n].region, sizeof small[n].region, "%s", regions[ex_below(&rng, 5)]);
        n++;
    }

    /* The filter from the small table's join keys (a random seed: nobody can craft keys against it). */
    bk_blocked *filter;
    bk_blocked_options bo = { .layout = BK_BLOCKED_SPLIT256, .seed = ex_scramble(seed + 99) };
    EX_CHECK(prog, bk_blocked_new(small_n, fpr, &bo, &filter));
    uint8_t kb[8];
    for (uint64_t i = 0; i < small_n; i++) {
        key_bytes(small[i].customer_id, kb);
        EX_CHECK(prog, bk_blocked_add(filter, kb, 8));
    }
    bk_stats st;
    bk_blocked_stats(filter, &st);
    bk_geometry g;
    EX_CHECK(prog, bk_blocked_size(small_n, fpr, BK_BLOCKED_SPLIT256, &g));
    const uint64_t filter_bytes = st.memory_bytes;

    pass_result plain = { 0 }, guarded = { 0 };
    const uint64_t scan_seed = ex_scramble(seed * 31 + 5);
    run_pass(NULL, scan_seed, large_n, customers, &map, small, &plain);
    run_pass(filter, scan_seed, large_n, customers, &map, small, &guarded);

    const uint64_t row_bytes = sizeof(order_row);
    const uint64_t matches = plain.nout;
    const uint64_t bytes_plain = plain.rows_shipped * row_bytes;
    const uint64_t bytes_guarded = guarded.rows_shipped * row_bytes + filter_bytes;
    const uint64_t false_pos = guarded.rows_shipped - guarded.nout;
    const double fpr_measured = large_n > matches ? (double)false_pos / (double)(large_n - matches) : 0;

    printf("join prefilter: %" PRIu64 " premium customers (small table) x %" PRIu64
           " orders (large table), %" PRIu64 " orders match (%.2f%%)\n",
           small_n, large_n, matches, 100.0 * (double)matches / (double)large_n);
    printf("filter: blocked Bloom (split 256-bit blocks), %.1f KB, %.2f bits/key, target FPR %g, "
           "geometry FPR %.4f%%\n",
           filter_bytes / 1e3, st.bits_per_key, fpr, 100 * g.fpr);
    printf("%-16s %14s %16s %12s\n", "", "rows shipped", "bytes shipped", "scan+join s");
    printf("%-16s %14" PRIu64 " %13.1f MB %12.3f\n", "without filter", plain.rows_shipped, bytes_plain / 1e6,
           plain.seconds);
    printf("%-16s %14" PRIu64 " %13.1f MB %12.3f   (bytes include the filter)\n", "with filter",
           guarded.rows_shipped, bytes_guarded / 1e6, guarded.seconds);
    printf("%-16s %14" PRIu64 " %13.1f MB %12s   (a perfect filter: only the matching rows)\n", "floor",
           matches, (double)(matches * row_bytes) / 1e6, "");
    printf("network saved: %.1f%% of the rows, %.1f%% of the bytes (%.1fx less traffic)\n",
           100.0 * (1 - (double)guarded.rows_shipped / (double)plain.rows_shipped),
           100.0 * (1 - (double)bytes_guarded / (double)bytes_plain), (double)bytes_plain / (double)bytes_guarded);
    printf("false positives shipped: %" PRIu64 " (measured FPR %.4f%%, geometry %.4f%%)\n", false_pos,
           100 * fpr_measured, 100 * g.fpr);

    int failures = 0;
    if (guarded.nout != plain.nout ||
        (plain.nout && memcmp(guarded.out, plain.out, (size_t)plain.nout * sizeof(joined)) != 0)) {
        printf("FAIL: the join results differ (%" PRIu64 " rows with the filter, %" PRIu64 " without)\n",
               guarded.nout, plain.nout);
        failures++;
    }
    double expect = g.fpr * (double)(large_n - matches);
    if ((double)false_pos > expect + 4 * sqrt(expect) + 1) {
        printf("FAIL: measured FPR %.4f%% above the geometry's %.4f%%\n", 100 * fpr_measured, 100 * g.fpr);
        failures++;
    }
    if (!failures) printf("check: the join result is identical, row for row (%" PRIu64 " rows)\n", matches);

    free(plain.out);
    free(guarded.out);
    free(small);
    free(map.ids);
    free(map.rows);
    bk_blocked_free(filter);
    return failures ? 1 : 0;
}
