/* The blocked sizing's constants (src/core/blocked_tables.c): this program makes them with the
 * library's own code (blocked_math.c compiled to compute them, as every process once did on its first
 * sizing) and checks that the file holds exactly them, bit for bit. To write the file anew:
 *   BK_WRITE_BLOCKED_TABLES=src/core/blocked_tables.c build/tests/test_blocked_tables
 * Part of them is the 512-bit layout's in-block FPR E[(X/512)^k] at loads below 256, at small ones
 * from the distribution of X (the bits set by the block's kL probes) step by step: positive terms
 * only, where the weights' alternating sum cancels to few digits; the test also checks that at every
 * larger load up to 2047 the alternating sum agrees with that distribution within the bound the sizing counts on. */
#define BK_BLOCKED_TABLES_GEN 1
#include "core/blocked_math.c"

#include "testutil.h"
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#define B512 512

/* The distribution of X after t probes, stepped one probe at a time (every term positive). */
typedef struct {
    long double dist[B512 + 1];
    uint32_t t;
} occupancy;

static void occ_init(occupancy *o)
{
    memset(o, 0, sizeof *o);
    o->dist[0] = 1;
}

static void occ_step(occupancy *o)
{
    const uint32_t hi = o->t < B512 ? o->t + 1 : B512;
    for (uint32_t x = hi; x >= 1; x--)
        o->dist[x] = o->dist[x] * ((long double)x / B512) + o->dist[x - 1] * ((long double)(B512 - x + 1) / B512);
    o->dist[0] = 0; /* after one probe or more */
    o->t++;
}

/* E[(X/512)^k] */
static long double occ_moment(const occupancy *o, uint32_t k)
{
    long double sum = 0;
    for (uint32_t x = 1; x <= B512; x++) {
        long double pw = 1, r = (long double)x / B512;
        for (uint32_t j = 0; j < k; j++) pw *= r;
        sum += o->dist[x] * pw;
    }
    return sum;
}

/* The loads where the distribution's values are kept: below the first load whose value is at least
 * the alternating sum's error bound over LOW512_REL (inner() grows with the load). */
static uint32_t g_loads[BK_BLOCKED_MAX_K + 1];
static double g_low[BK_BLOCKED_MAX_K + 1][TAB_LOADS];

static void low512_build(void)
{
    TERMS_READY();
    occupancy o;
    occ_init(&o);
    bool done[BK_BLOCKED_MAX_K + 1] = { true };
    uint32_t left = BK_BLOCKED_MAX_K;
    for (uint32_t k = 1; k <= BK_BLOCKED_MAX_K; k++) g_low[k][0] = 0;
    while (left > 0) {
        occ_step(&o);
        for (uint32_t k = 1; k <= BK_BLOCKED_MAX_K; k++) {
            if (done[k] || o.t % k) continue;
            const uint32_t L = o.t / k;
            const long double v = occ_moment(&o, k);
            if (L >= TAB_LOADS || v * LOW512_REL >= alt_err512(k)) {
                g_loads[k] = L;
                done[k] = true;
                left--;
            } else {
                g_low[k][L] = (double)v;
            }
        }
    }
}

static char *make_file(size_t *len)
{
    TERMS_READY();
    SERIES_READY();
    low512_build();
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    fprintf(f, "/* Made by tests/test_blocked_tables.c, which checks that this file holds exactly what it makes: do\n"
               " * not edit (blocked_tables.h says what the tables are). */\n"
               "#include \"core/blocked_tables.h\"\n\n");
    fprintf(f, "const bk__inner_terms bk__blocked_terms[BK__TAB_ROWS] = {\n");
    for (int r = 0; r < TAB_ROWS; r++) {
        const inner_terms *T = &g_terms[r];
        fprintf(f, "    { (bk_blocked_layout)%d, %u,\n      {", (int)T->layout, T->k);
        for (int i = 0; i <= BK_BLOCKED_MAX_K; i++) fprintf(f, " %LaL,", T->w[i]);
        fprintf(f, " },\n      {");
        for (int i = 0; i <= BK_BLOCKED_MAX_K; i++) fprintf(f, " %LaL,", T->lq[i]);
        fprintf(f, " } },\n");
    }
    fprintf(f, "};\n\nconst bk__inner_series bk__blocked_series[3][BK_BLOCKED_MAX_K + 1] = {\n");
    for (int l = 0; l < 3; l++) {
        fprintf(f, "    {\n");
        for (int k = 0; k <= BK_BLOCKED_MAX_K; k++) {
            const series *S = &g_series[l][k];
            fprintf(f, "        {\n          {");
            for (int i = 0; i <= BK_BLOCKED_MAX_K; i++) fprintf(f, " %LaL,", S->c[i]);
            fprintf(f, " },\n          {");
            for (int i = 0; i <= BK_BLOCKED_MAX_K; i++) fprintf(f, " %LaL,", S->d[i]);
            fprintf(f, " },\n          {");
            for (int i = 0; i <= BK_BLOCKED_MAX_K; i++) fprintf(f, " %a,", S->cd[i]);
            fprintf(f, " },\n          {");
            for (int i = 0; i <= BK_BLOCKED_MAX_K; i++) fprintf(f, " %a,", S->dd[i]);
            fprintf(f, " },\n          %LaL, %LaL, %u },\n", S->inner_err, S->inner_rel, S->terms);
        }
        fprintf(f, "    },\n");
    }
    fprintf(f, "};\n\nconst double bk__blocked_tab512[BK_BLOCKED_MAX_K][BK__TAB512_LOADS] = {\n");
    for (uint32_t k = 1; k <= BK_BLOCKED_MAX_K; k++) {
        fprintf(f,
                "    {\n        /* k = %u: the distribution's values below load %u, the alternating sum's from it"
                " */\n",
                k, g_loads[k]);
        for (uint32_t L = 0; L < BK__TAB512_LOADS; L++)
            fprintf(f, "        %a,\n",
                    L < g_loads[k] ? g_low[k][L] : inner_fpr(&g_terms[tab_row(BK_BLOCKED_512, k)], (double)L));
        fprintf(f, "    },\n");
    }
    fprintf(f, "};\n\nconst double bk__blocked_tabmean[BK_BLOCKED_MAX_K + 1][BK__TABMEAN_LOADS] = {\n");
    for (uint32_t k = 0; k <= BK_BLOCKED_MAX_K; k++) {
        const inner_terms *T = &g_terms[k == 0 ? 0 : tab_row(LAYOUT_1024, k)];
        if (k == 0)
            fprintf(f, "    {\n        /* the split layout (k = 8) */\n");
        else
            fprintf(f, "    {\n        /* the 1024-bit mean form, k = %u */\n", k);
        for (uint32_t L = 0; L < BK__TABMEAN_LOADS; L++) fprintf(f, "        %a,\n", inner_fpr(T, (double)L));
        fprintf(f, "    },\n");
    }
    fprintf(f, "};\n");
    fclose(f);
    return buf;
}

/* The committed file is exactly what the library's code makes (or, with BK_WRITE_BLOCKED_TABLES set,
 * is written anew). */
static void file_is_current(void **state)
{
    (void)state;
    size_t len, have_len = 0;
    char *text = make_file(&len);
    const char *out = getenv("BK_WRITE_BLOCKED_TABLES");
    if (out && *out) {
        FILE *f = fopen(out, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
    }
    char *have = tu_read_file(BK_TEST_SOURCE_DIR "/../src/core/blocked_tables.c", &have_len);
#if LDBL_MANT_DIG != 64
    /* The file was made where long double is the x87 80-bit format; elsewhere the code's long double
     * sums round differently in the last digits, so only a platform of that format can remake it. */
    printf("SKIP file_is_current: long double has %d mantissa bits here, the file was made with 64\n", LDBL_MANT_DIG);
    free(have);
    free(text);
    skip();
#endif
    if (have_len != len || memcmp(have, text, len) != 0) {
        print_error("src/core/blocked_tables.c differs from what the code makes (%zu against %zu bytes)\n", have_len,
                    len);
        fail();
    }
    free(have);
    free(text);
}

/* Every load up to 2047: below the table's end the distribution's value is what the table holds;
 * from it on, the alternating sum is within LOW512_REL of the distribution's value (the bound the
 * sizing counts on); the values rise with the load; and the table ends where it must (its last value
 * below the threshold). Each k once, stepping the distribution up to 16 * 2047 probes. */
static void low512_against_distribution(void **state)
{
    (void)state;
    TERMS_READY();
    low512_build();
    occupancy o;
    occ_init(&o);
    double last[BK_BLOCKED_MAX_K + 1] = { 0 };
    for (uint32_t t = 1; t <= BK_BLOCKED_MAX_K * (TAB_LOADS - 1); t++) {
        occ_step(&o);
        for (uint32_t k = 1; k <= BK_BLOCKED_MAX_K; k++) {
            if (t % k || t / k >= TAB_LOADS) continue;
            const uint32_t L = t / k;
            const long double v = occ_moment(&o, k);
            assert_true(v > 0 && (double)v >= last[k]);
            last[k] = (double)v;
            const int row = tab_row(BK_BLOCKED_512, k);
            if (L < g_loads[k]) {
                assert_true(g_low[k][L] == (double)v);
                assert_true(v * LOW512_REL < alt_err512(k));
            } else {
                const double alt = inner_fpr(&g_terms[row], (double)L);
                if (!(fabsl((long double)alt - v) <= LOW512_REL * v + DBL_EPSILON * v)) {
                    print_error("k=%u L=%u: alternating sum %.17g, distribution %.17Lg\n", k, L, alt, v);
                    fail();
                }
            }
        }
    }
    for (uint32_t k = 1; k <= BK_BLOCKED_MAX_K; k++) assert_true(g_loads[k] >= 1 && g_loads[k] < BK__TAB512_LOADS);
}

/* mixture2 (two k in one walk, what the sizing's search sums where it needs two k at one block
 * count) gives bit for bit mixture()'s value of each k: binomial and Poisson loads, light to heavy,
 * the layouts with a k to choose, adjacent and distant k in either order. */
static void mixture2_equals_mixture(void **state)
{
    (void)state;
    TERMS_READY();
    static const double ns[] = { 1, 2, 10, 100, 1000, 54321, 1e6, 1e9, 1e10 };
    static const double per_block[] = { 0.5, 3, 17, 60, 250, 1500 };
    static const bk_blocked_layout layouts[] = { BK_BLOCKED_512, LAYOUT_1024, LAYOUT_1024_EXACT };
    static const uint32_t pairs[][2] = { { 1, 2 }, { 2, 1 }, { 7, 8 }, { 12, 11 }, { 15, 16 }, { 16, 15 }, { 3, 14 } };
    unsigned checked = 0;
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            for (size_t j = 0; j < sizeof per_block / sizeof per_block[0]; j++) {
                double blocks = floor(ns[i] / per_block[j]);
                if (blocks < 1) blocks = 1;
                for (size_t q = 0; q < sizeof pairs / sizeof pairs[0]; q++) {
                    double two[2];
                    const bool binomial = blocks < 4096;
                    mixture2(ns[i], 1.0 / blocks, binomial, layouts[l], pairs[q], two);
                    for (int h = 0; h < 2; h++) {
                        const double one = mixture(ns[i], 1.0 / blocks, binomial, layouts[l], pairs[q][h]);
                        if (memcmp(&one, &two[h], sizeof one) != 0) {
                            print_error("layout %d n=%g blocks=%g k=%u: mixture %.17g, mixture2 %.17g\n",
                                        (int)layouts[l], ns[i], blocks, pairs[q][h], one, two[h]);
                            fail();
                        }
                        checked++;
                    }
                }
            }
    assert_true(checked == 3 * 9 * 6 * 7 * 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(file_is_current),
        cmocka_unit_test(low512_against_distribution),
        cmocka_unit_test(mixture2_equals_mixture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
