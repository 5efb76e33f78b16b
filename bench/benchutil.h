/* Small helpers the benchmark programs share: a CPU clock, fixed-seed keys, the machine's load. */
#ifndef BK_BENCHUTIL_H
#define BK_BENCHUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* This thread's CPU time in ns: time spent descheduled on a busy machine is not counted. */
static inline double bu_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* splitmix64's output for state z (the key generator every benchmark uses, so runs compare). */
static inline uint64_t bu_mix64(uint64_t z)
{
    z += UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* The next key of a splitmix64 stream. */
static inline uint64_t bu_splitmix64(uint64_t *s)
{
    uint64_t z = *s;
    *s += UINT64_C(0x9e3779b97f4a7c15);
    return bu_mix64(z);
}

/* Prints "load average WHEN: <the first line of /proc/loadavg>" (printed beside every figure). */
static inline void bu_print_loadavg(const char *when)
{
    char buf[128] = "?";
    FILE *fp = fopen("/proc/loadavg", "r");
    if (fp) {
        if (!fgets(buf, sizeof buf, fp)) strcpy(buf, "?");
        fclose(fp);
    }
    buf[strcspn(buf, "\n")] = 0;
    printf("load average %s: %s\n", when, buf);
}

/* Whether name is one of the comma-separated names of --only (every name when only is NULL). */
static inline bool bu_selected(const char *only, const char *name)
{
    if (!only) return true;
    size_t l = strlen(name);
    for (const char *s = only; *s;) {
        const char *e = strchr(s, ',');
        size_t sl = e ? (size_t)(e - s) : strlen(s);
        if (sl == l && !strncmp(s, name, l)) return true;
        if (!e) break;
        s = e + 1;
    }
    return false;
}

#endif
