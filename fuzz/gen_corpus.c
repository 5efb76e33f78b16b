/* Writes the seed corpus of the loader fuzzer: small valid files of every registered type and
 * layout (tests/factories.h), in several sizes and seeds, plus the header variants a reader must
 * accept (a newer minor version with a longer header, the stale-checksum flag). Usage: gen_corpus DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "factories.h"
#define XXH_INLINE_ALL
#include <xxhash.h>

static void put32(uint8_t *b, uint32_t v)
{
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t fixed_clock(void *ctx) { return *(const uint64_t *)ctx; }

static int write_out(const char *dir, const char *name, const void *b, size_t n)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "wb");
    if (!fp || fwrite(b, 1, n, fp) != n || fclose(fp) != 0) {
        perror(p);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    static const struct { uint64_t cap, n, seed; } sizes[] = {
        { 100, 0, 0 }, { 100, 50, 1 }, { 1000, 500, 42 }, { 2000, 2000, 7 },
    };
    int files = 0;
    for (size_t t = 0; t < TF_NFACTORIES; t++) {
        if (!bk_filter_type_registered(tf_factories[t].type)) continue;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            bk_filter *f = tf_factories[t].make(sizes[s].cap, sizes[s].n, sizes[s].seed);
            void *buf;
            size_t len;
            if (!f || bk_filter_save_alloc(f, &buf, &len) != BK_OK) {
                fprintf(stderr, "%s: cannot make a filter\n", tf_factories[t].name);
                return 1;
            }
            char name[256];
            snprintf(name, sizeof name, "%s-%zu.bkf", tf_factories[t].name, s);
            if (write_out(argv[1], name, buf, len)) return 1;
            files++;
            if (s == 1) {
                uint8_t *b = buf;
                /* the stale flag (payload checksum not current) */
                put32(b + 16, 1);
                put64(b + 56, 0);
                put64(b + 56, XXH3_64bits(b, 64));
                snprintf(name, sizeof name, "%s-%zu-stale.bkf", tf_factories[t].name, s);
                if (write_out(argv[1], name, b, len)) return 1;
                put32(b + 16, 0);
                /* version 1.3 with a 128-byte header */
                uint8_t *c = calloc(1, len + 64);
                memcpy(c, b, 64);
                memcpy(c + 128, b + 64, len - 64);
                c[10] = 3;
                put32(c + 24, 128);
                memset(c + 64, 0x5a, 64);
                put64(c + 56, 0);
                put64(c + 56, XXH3_64bits(c, 128));
                snprintf(name, sizeof name, "%s-%zu-v1.3.bkf", tf_factories[t].name, s);
                if (write_out(argv[1], name, c, len + 64)) return 1;
                free(c);
                files += 2;
            }
            bk_filter_buffer_free(buf);
            bk_filter_free(f);
        }
    }
    /* A time window (not in the factories: it reads a clock), made with a fixed one, mid-window. */
    if (bk_filter_type_registered(BK_TYPE_AGING)) {
        static uint64_t now = UINT64_C(1700000000000);
        bk_aging_options o = BK_AGING_OPTIONS_INIT;
        o.seed = 5;
        o.clock = fixed_clock;
        o.clock_ctx = &now;
        bk_aging *a;
        bk_filter *f;
        void *buf;
        size_t len;
        if (bk_aging_new_time(60000, 300, 0.01, &o, &a) != BK_OK) return 1;
        for (uint64_t i = 0; i < 500; i++, now += 97) {
            tf_key k = tf_make_key(1, i);
            bk_aging_add(a, k.b, sizeof k.b);
        }
        if (bk_filter_wrap(BK_TYPE_AGING, a, &f) != BK_OK || bk_filter_save_alloc(f, &buf, &len) != BK_OK) return 1;
        if (write_out(argv[1], "aging-time.bkf", buf, len)) return 1;
        files++;
        bk_filter_buffer_free(buf);
        bk_filter_free(f);
    }
    /* A quotient filter (body 4) whose clusters push block offsets past 255: stored saturated, so a
     * loader must find their values from the blocks before. */
    if (bk_filter_type_registered(BK_TYPE_QUOTIENT)) {
        bk_quotient_options o = BK_QUOTIENT_OPTIONS_INIT;
        o.seed = 3;
        o.max_load = 0.95;
        bk_quotient *q;
        bk_filter *f;
        void *buf;
        size_t len;
        const uint64_t S = 1000, r = 5, M = S << r;
        if (bk_quotient_new_slots(S, (uint32_t)r, &o, &q) != BK_OK) return 1;
        /* quotients 10..24, 30 remainders each (slots 10..459): one hash of each fingerprint, ceil(fp 2^64 / M) */
        for (uint64_t qq = 10; qq < 25; qq++)
            for (uint64_t x = 1; x <= 30; x++) {
                uint64_t fp = qq << r | x;
                __extension__ typedef unsigned __int128 u128;
                (void)bk_quotient_add_hash(q, (uint64_t)((((u128)fp << 64) + M - 1) / M));
            }
        for (uint64_t i = 0; i < 300; i++) {
            tf_key k = tf_make_key(1, i);
            (void)bk_quotient_add(q, k.b, sizeof k.b);
        }
        if (bk_filter_wrap(BK_TYPE_QUOTIENT, q, &f) != BK_OK || bk_filter_save_alloc(f, &buf, &len) != BK_OK) return 1;
        if (write_out(argv[1], "quotient-saturated.bkf", buf, len)) return 1;
        files++;
        bk_filter_buffer_free(buf);
        bk_filter_free(f);
    }
    printf("wrote %d seed files to %s\n", files, argv[1]);
    return 0;
}
