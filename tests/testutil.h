/* Shared by the unit tests: deterministic keys and FPR measurement. */
#ifndef BK_TESTUTIL_H
#define BK_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>
#include <bloomkit/common.h>

/* splitmix64: a fixed-seed stream of distinct-looking 64-bit values. */
static inline uint64_t tu_splitmix(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* A growing buffer, 64-byte aligned (as a loaded file's body is), that a save or an encode writes into
 * through tu_mem_sink (a bk_writer's or bk_filter_save's sink); free buf after. */
typedef struct {
    uint8_t *buf;
    size_t len, cap;
} tu_membuf;
static inline bk_status tu_mem_sink(void *ctx, const void *data, size_t len)
{
    tu_membuf *m = ctx;
    if (m->len + len > m->cap) {
        size_t cap = ((m->len + len) * 2 + 64 + 63) / 64 * 64;
        uint8_t *nb = aligned_alloc(64, cap);
        if (!nb) return BK_ENOMEM;
        if (m->len) memcpy(nb, m->buf, m->len);
        free(m->buf);
        m->buf = nb;
        m->cap = cap;
    }
    memcpy(m->buf + m->len, data, len);
    m->len += len;
    return BK_OK;
}

/* An allocator (opaque: a tu_alloc_count) that counts the blocks it has live and, once `budget`
 * allocations have been made, fails every further one (budget < 0: never fails), for tests of the
 * out-of-memory paths: every allocation failing in turn, and nothing left live after. */
typedef struct {
    long live, budget;
} tu_alloc_count;
static inline void *tu_count_malloc(void *o, size_t n)
{
    tu_alloc_count *c = o;
    if (c->budget == 0) return NULL;
    if (c->budget > 0) c->budget--;
    c->live++;
    return malloc(n);
}
static inline void *tu_count_calloc(void *o, size_t k, size_t n)
{
    tu_alloc_count *c = o;
    if (c->budget == 0) return NULL;
    if (c->budget > 0) c->budget--;
    c->live++;
    return calloc(k, n);
}
static inline void tu_count_free(void *o, void *p)
{
    tu_alloc_count *c = o;
    if (p) c->live--;
    free(p);
}

/* The whole file at `path` in a malloc'd buffer, with a NUL after its *len bytes (so a text file reads as a
 * string); fails the test when the file cannot be opened. Free it after. */
static inline void *tu_read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) fail_msg("cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, fp), (size_t)n);
    b[n] = 0;
    fclose(fp);
    *len = (size_t)n;
    return b;
}

/* Key i of set `set` as bytes: "set-i" style but binary, 16 bytes, distinct across sets and i. */
typedef struct { uint8_t b[16]; } tu_key;
static inline tu_key tu_make_key(uint64_t set, uint64_t i)
{
    tu_key k;
    uint64_t a = set * UINT64_C(0x100000001b3) + 0x5bd1e995, c = i;
    memcpy(k.b, &a, 8);
    memcpy(k.b + 8, &c, 8);
    return k;
}

/* The hits of a query batch: TU_HITS(bk_bloom_contains_many, f, keys, lens, n, results) calls it with
 * a last argument `size_t *hits`, asserts BK_OK and gives the hits. */
#define TU_HITS(fn, ...)                                                                            \
    (__extension__({                                                                               \
        size_t tu_hits_ = 0;                                                                       \
        assert_int_equal(fn(__VA_ARGS__, &tu_hits_), BK_OK);                                       \
        tu_hits_;                                                                                  \
    }))

/* |measured - expected| <= tol * expected, with a message. */
#define TU_ASSERT_WITHIN(measured, expected, tol)                                                   \
    do {                                                                                           \
        double m_ = (measured), e_ = (expected), t_ = (tol);                                       \
        if (!(fabs(m_ - e_) <= t_ * e_)) {                                                         \
            print_error("%s = %g not within %.0f%% of %g\n", #measured, m_, t_ * 100, e_);          \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

#endif
