/*
 * sizing_first: the cost of a process's first blocked sizing, which the library pays on the caller's
 * thread (anything it prepares on first use included): one bk_blocked_new in a fresh process, timed
 * by the thread's CPU clock and the wall clock, then the same call again for comparison.
 *
 *   sizing_first [-m] [n [p [layout]]]   (defaults 1000, 0.01, 1 = the 512-bit layout; a small
 *                                       n, so that the allocation costs little next to the sizing)
 *
 * -m: call the libm functions the sizing uses once before the timed call, so that the figure leaves
 * out what any first call of them costs a fresh process (the dynamic linker binding each one, its
 * pages faulted in): what remains is the sizing's own first-call work.
 *
 * Run it several times: each run is a fresh process. Figures only.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <sys/resource.h>
#include <bloomkit/bloomkit.h>
#include "benchutil.h"

static double wall_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static long minor_faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt;
}

static volatile double sink_d = 0.3;
static volatile long double sink_l = 0.3L;

static void touch_libm(void)
{
    int sign;
    sink_d = exp(sink_d) + log(sink_d) + log1p(sink_d) + expm1(sink_d) + pow(sink_d, sink_d) +
             lgamma_r(sink_d + 1, &sign);
    sink_l = expl(sink_l) + logl(sink_l + 1) + log1pl(sink_l) + expm1l(sink_l);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "-m")) {
        touch_libm();
        argc--, argv++;
    }
    const unsigned long long n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000;
    const double p = argc > 2 ? atof(argv[2]) : 0.01;
    bk_blocked_options o = { .layout = argc > 3 ? (bk_blocked_layout)atoi(argv[3]) : BK_BLOCKED_512 };
    bk_blocked *f = NULL;
    long f0 = minor_faults();
    double w0 = wall_ns(), c0 = bu_cpu_ns();
    bk_status s = bk_blocked_new(n, p, &o, &f);
    double c1 = bu_cpu_ns(), w1 = wall_ns();
    long f1 = minor_faults();
    if (s != BK_OK) {
        fprintf(stderr, "bk_blocked_new: %d\n", (int)s);
        return 1;
    }
    bk_blocked_free(f);
    /* a different n, so the thread's memo of its last sizings does not answer */
    double c2 = bu_cpu_ns();
    s = bk_blocked_new(n + 1, p, &o, &f);
    double c3 = bu_cpu_ns();
    if (s == BK_OK) bk_blocked_free(f);
    printf("first bk_blocked_new(%llu, %g, layout %d): %.1f us CPU, %.1f us wall, %ld page faults; the next (n + 1): "
           "%.1f us CPU\n",
           n, p, (int)o.layout, (c1 - c0) / 1e3, (w1 - w0) / 1e3, f1 - f0, (c3 - c2) / 1e3);
    return 0;
}
