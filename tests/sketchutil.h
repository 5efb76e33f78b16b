/* Shared by the sketch tests and benchmarks: a Zipf stream with fixed seeds and its exact counts. */
#ifndef BK_SKETCHUTIL_H
#define BK_SKETCHUTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct su_zipf {
    double *cdf;   /* cdf[i] = sum of 1 / (j + 1)^s for j <= i */
    uint64_t n;
    uint64_t rng;
} su_zipf;

static inline uint64_t su_splitmix(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* n distinct ranks, exponent s; 0 on allocation failure. */
static inline int su_zipf_init(su_zipf *z, uint64_t n, double s, uint64_t seed)
{
    z->n = n;
    z->rng = seed;
    z->cdf = malloc(n * sizeof *z->cdf);
    if (!z->cdf) return 0;
    double acc = 0;
    for (uint64_t i = 0; i < n; i++) z->cdf[i] = acc += pow((double)(i + 1), -s);
    z->n = n;
    z->rng = seed;
    return 1;
}
static inline void su_zipf_free(su_zipf *z) { free(z->cdf); }

/* The next rank, 0 the most frequent. */
static inline uint64_t su_zipf_next(su_zipf *z)
{
    double u = (double)(su_splitmix(&z->rng) >> 11) * 0x1.0p-53 * z->cdf[z->n - 1];
    uint64_t lo = 0, hi = z->n - 1;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (z->cdf[mid] < u) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The key of rank r: a fixed scramble, so that ranks do not sit next to each other as integers. */
static inline uint64_t su_key(uint64_t r) { return r * UINT64_C(0x9e3779b97f4a7c15) + 12345; }

/* The text item of rank r (the streams fed to servers and to the byte-key calls): the decimal digits of
 * a 32-bit scramble of r (a bijection on 32 bits, so distinct ranks give distinct items); returns its
 * length. buf holds at least 11 bytes. */
#include <stdio.h>
static inline int su_item(uint64_t r, char *buf)
{
    return snprintf(buf, 11, "%u", (unsigned)((uint32_t)r * UINT32_C(2654435761)));
}

/* The golden file `name` of tests/golden: with BK_WRITE_GOLDEN=<repo>/tests in the environment, write
 * bytes[0..n) there and return 1; else read it into a new buffer (*len its size; NULL if missing). */
#include <stdio.h>
static inline unsigned char *su_golden(const char *dir, const char *name, const void *bytes, size_t n, size_t *len,
                                       int *wrote)
{
    char path[1024];
    const char *w = getenv("BK_WRITE_GOLDEN");
    *wrote = w != NULL;
    snprintf(path, sizeof path, "%s/golden/%s", w ? w : dir, name);
    FILE *f = fopen(path, w ? "wb" : "rb");
    if (!f) return NULL;
    if (w) {
        fwrite(bytes, 1, n, f);
        fclose(f);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(sz > 0 ? (size_t)sz : 1);
    *len = fread(buf, 1, (size_t)sz, f);
    fclose(f);
    return buf;
}

/* The golden-file check both sketch tests make: `sketch` (of `type`, which the handle *h takes over) saved
 * now must be the bytes of tests/golden/<name>; *loaded is that recorded file loaded (NULL when the
 * environment asked for writing it instead). Returns NULL, or what went wrong. */
#include <string.h>
#include <bloomkit/bloomkit.h>
static inline const char *su_golden_sketch(const char *dir, const char *name, bk_type type, void *sketch,
                                           bk_filter **h, bk_filter **loaded)
{
    static char msg[256];
    *loaded = NULL;
    if (bk_filter_wrap(type, sketch, h) != BK_OK) return "the sketch cannot be wrapped";
    size_t size = 0, w = 0, len = 0;
    if (bk_filter_save_size(*h, &size) != BK_OK) return "no save size";
    unsigned char *now = malloc(size);
    if (!now || bk_filter_save_buffer(*h, now, size, &w) != BK_OK) {
        free(now);
        return "the sketch cannot be saved";
    }
    int wrote;
    unsigned char *rec = su_golden(dir, name, now, size, &len, &wrote);
    const char *err = NULL;
    if (!wrote) {
        if (!rec) {
            snprintf(msg, sizeof msg, "missing tests/golden/%s: run the test with BK_WRITE_GOLDEN=<tests dir>", name);
            err = msg;
        } else if (len != size || memcmp(rec, now, size) != 0) {
            snprintf(msg, sizeof msg, "%s: today's bytes differ from the recorded ones", name);
            err = msg;
        } else if (bk_filter_load_buffer(rec, len, 0, loaded) != BK_OK) {
            snprintf(msg, sizeof msg, "%s does not load", name);
            err = msg;
        }
    }
    free(rec);
    free(now);
    return err;
}

#endif
