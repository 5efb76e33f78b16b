/*
 * Small helpers shared by the example programs (not part of the library): a clock, a seeded
 * generator, size arguments like "1M", and an exit helper for failed library calls.
 */
#ifndef BK_EX_UTIL_H
#define BK_EX_UTIL_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bloomkit/bloomkit.h>

static inline double ex_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t ex_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* splitmix64: a fixed seed gives the same workload on every run. */
static inline uint64_t ex_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* A uniform value in [0, n) (multiply-shift; n > 0). */
__extension__ typedef unsigned __int128 ex_u128;
static inline uint64_t ex_below(uint64_t *state, uint64_t n)
{
    return (uint64_t)(((ex_u128)ex_rand(state) * n) >> 64);
}

/* A bijection of 64-bit values (the splitmix64 finaliser is invertible): distinct ids give distinct,
 * random-looking keys, so "present" and "absent" key sets never collide. */
static inline uint64_t ex_scramble(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

/* "1000", "10k", "2M", "1e6" -> a count; exits with a message on anything else. */
static inline uint64_t ex_count(const char *prog, const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1e3, end++;
    else if (*end == 'm' || *end == 'M') mul = 1e6, end++;
    else if (*end == 'g' || *end == 'G') mul = 1e9, end++;
    if (errno || end == s || *end != '\0' || !(v >= 0) || v * mul > 1e15) {
        fprintf(stderr, "%s: %s wants a count like 1000, 10k or 2M, not '%s'\n", prog, opt, s);
        exit(2);
    }
    return (uint64_t)(v * mul + 0.5);
}

static inline double ex_double(const char *prog, const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || (*end != '\0' && strcmp(end, "%") != 0) || !(v >= 0)) {
        fprintf(stderr, "%s: %s wants a number, not '%s'\n", prog, opt, s);
        exit(2);
    }
    return *end == '%' ? v / 100 : v;
}

/* "12.3 KB" / "4.56 MB": sizes that read well from a few bytes to gigabytes. */
static inline const char *ex_bytes(double bytes, char *buf, size_t cap)
{
    if (bytes < 1e3) snprintf(buf, cap, "%.0f B", bytes);
    else if (bytes < 1e6) snprintf(buf, cap, "%.1f KB", bytes / 1e3);
    else if (bytes < 1e9) snprintf(buf, cap, "%.2f MB", bytes / 1e6);
    else snprintf(buf, cap, "%.2f GB", bytes / 1e9);
    return buf;
}

/* Library calls return a bk_status: an example stops at the first failure, naming the call. */
#define EX_CHECK(prog, call)                                                                         \
    do {                                                                                             \
        bk_status ex_s_ = (call);                                                                    \
        if (ex_s_ != BK_OK) {                                                                        \
            fprintf(stderr, "%s: %s: %s\n", (prog), #call, bk_strerror(ex_s_));                     \
            exit(2);                                                                                 \
        }                                                                                            \
    } while (0)

static inline void *ex_xmalloc(const char *prog, size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory (%zu bytes)\n", prog, n);
        exit(2);
    }
    return p;
}

static inline void *ex_xcalloc(const char *prog, size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory (%zu x %zu bytes)\n", prog, count, size);
        exit(2);
    }
    return p;
}

/* An argument loop helper: `--name value` options. */
#define EX_ARG(name) (strcmp(argv[i], (name)) == 0 && i + 1 < argc)

#endif
