/*
 * conc: throughput of every filter type's concurrent form (the *_atomic inserts; the cuckoo filter's
 * concurrent mode) with 1, 2 and 4 threads, next to the single-threaded plain (non-atomic) form.
 * Figures only; the correctness checks print what they found and never stop the run.
 *
 *   conc [-n N] [-p P] [-r R] [--only bloom,partitioned,blocked,counting,scalable,cuckoo]
 *
 * Keys are N pre-hashed 64-bit values (the *_hash calls: the figures are the filters', not the hash
 * function's). Thread t of T owns keys [t N / T, (t + 1) N / T); the threads wait at a barrier and
 * the time of a phase is the wall clock from the first thread leaving the barrier to the last one
 * finishing, so throughput is total keys over all threads / that time. Each configuration gets a fresh
 * filter sized for N keys at P: insert all keys, then every thread queries its own keys (100% hits),
 * best of R runs. 4 threads on a 2-core machine is oversubscribed on purpose.
 *
 * Columns: plain = one thread, non-atomic insert (plain filter for cuckoo) and its query;
 * 1t/2t/4t = the concurrent form; cost = plain / concurrent-1-thread throughput (how much slower the
 * atomic form is on one thread: 1.00x is free); cpu = the same ratio measured with the thread's CPU
 * time (CLOCK_THREAD_CPUTIME_ID), which time spent descheduled on a busy machine does not inflate;
 * 2t/1t = speedup of two threads over one (wall clock).
 * The mixed rows: the concurrent filter already holds the first half of the keys; W writers insert the
 * second half while W readers query the first half over and over until the writers are done
 * (2t column: 1 writer + 1 reader, 4t column: 2 + 2). "ins" is the writers' throughput, "qry" the
 * readers'.
 *
 * Checks (the "check" column): fn = keys inserted but reported absent, summed over every run of the
 * row (must be 0; for mixed rows, also the readers' misses of first-half keys); count = the filter's
 * own count of keys after the run, which must equal N where the type keeps an exact count. The
 * scalable filter counts keys actually added: a key that is a false positive of the chain is not
 * added (BK_EEXISTS), so its count must equal the number of BK_OK returns, printed as N - skipped.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bloomkit/bloomkit.h>
#include "benchutil.h"

/* The scalable filter starts this small so that it grows many times during every insert run. */
#define SCALABLE_START 100

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the calling thread: time spent descheduled on a busy machine is not in it. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the types: one loop function per (type, operation), so nothing dispatches per key ---- */

/* Runs one operation over h[0..n); returns how many calls "succeeded" (BK_OK for adds, present for
 * queries). */
typedef size_t (*loop_fn)(void *f, const uint64_t *h, size_t n);

#define LOOP(name, T, expr)                                                                         \
    static size_t name(void *fv, const uint64_t *h, size_t n)                                      \
    {                                                                                               \
        T *f = fv;                                                                                  \
        size_t ok = 0;                                                                              \
        for (size_t i = 0; i < n; i++) ok += (expr);                                                \
        return ok;                                                                                  \
    }

LOOP(bloom_add, bk_bloom, bk_bloom_add_hash(f, h[i]) == BK_OK)
LOOP(bloom_add_atomic, bk_bloom, bk_bloom_add_hash_atomic(f, h[i]) == BK_OK)
LOOP(bloom_query, bk_bloom, bk_bloom_contains_hash(f, h[i]))
LOOP(blocked_add, bk_blocked, bk_blocked_add_hash(f, h[i]) == BK_OK)
LOOP(blocked_add_atomic, bk_blocked, bk_blocked_add_hash_atomic(f, h[i]) == BK_OK)
LOOP(blocked_query, bk_blocked, bk_blocked_contains_hash(f, h[i]))
LOOP(counting_add, bk_counting, bk_counting_add_hash(f, h[i]) == BK_OK)
LOOP(counting_add_atomic, bk_counting, bk_counting_add_hash_atomic(f, h[i]) == BK_OK)
LOOP(counting_query, bk_counting, bk_counting_contains_hash(f, h[i]))
/* The plain scalable add with the atomic add's semantics (add if absent), so the two count alike. */
LOOP(scalable_add, bk_scalable, bk_scalable_add_if_absent_hash(f, h[i]) == BK_OK)
LOOP(scalable_add_atomic, bk_scalable, bk_scalable_add_hash_atomic(f, h[i]) == BK_OK)
LOOP(scalable_query, bk_scalable, bk_scalable_contains_hash(f, h[i]))
/* Concurrent mode is a property of the cuckoo object, so the plain and concurrent adds are one call. */
LOOP(cuckoo_add, bk_cuckoo, bk_cuckoo_add_hash(f, h[i]) == BK_OK)
LOOP(cuckoo_query, bk_cuckoo, bk_cuckoo_contains_hash(f, h[i]))

static void *bloom_make(size_t n, double p, bool conc, bool partitioned)
{
    (void)conc; /* the atomic form is a call, not a mode */
    bk_bloom_options o = { .layout = partitioned ? BK_LAYOUT_PARTITIONED : BK_LAYOUT_STANDARD, .seed = 0 };
    bk_bloom *f;
    return bk_bloom_new(n, p, &o, &f) == BK_OK ? f : NULL;
}
static void *standard_make(size_t n, double p, bool conc) { return bloom_make(n, p, conc, false); }
static void *partitioned_make(size_t n, double p, bool conc) { return bloom_make(n, p, conc, true); }
static void bloom_destroy(void *f) { bk_bloom_free(f); }
static uint64_t bloom_count(const void *f) { return bk_bloom_count(f); }

static void *blocked_make(size_t n, double p, bool conc)
{
    (void)conc;
    bk_blocked *f;
    return bk_blocked_new(n, p, NULL, &f) == BK_OK ? f : NULL;
}
static void blocked_destroy(void *f) { bk_blocked_free(f); }
static uint64_t blocked_count(const void *f) { return bk_blocked_count(f); }

static void *counting_make(size_t n, double p, bool conc)
{
    (void)conc;
    bk_counting *f;
    return bk_counting_new(n, p, NULL, &f) == BK_OK ? f : NULL;
}
static void counting_destroy(void *f) { bk_counting_free(f); }
static uint64_t counting_count(const void *f) { return bk_counting_count(f); }

static void *scalable_make(size_t n, double p, bool conc)
{
    (void)n;
    (void)conc;
    bk_scalable_options o = bk_scalable_default_options();
    o.max_bytes = BK_MAX_FILTER_BYTES; /* -n large must grow, not stop at the 4 GiB default */
    bk_scalable *f;
    return bk_scalable_new(SCALABLE_START, p, &o, &f) == BK_OK ? f : NULL;
}
static void scalable_destroy(void *f) { bk_scalable_free(f); }
static uint64_t scalable_count(const void *f) { return bk_scalable_count(f); }

static void *cuckoo_make(size_t n, double p, bool conc)
{
    bk_cuckoo_options o = BK_CUCKOO_OPTIONS_INIT;
    o.concurrent = conc;
    bk_cuckoo *f;
    return bk_cuckoo_new(n, p, &o, &f) == BK_OK ? f : NULL;
}
static void cuckoo_destroy(void *f) { bk_cuckoo_free(f); }
static uint64_t cuckoo_count(const void *f) { return bk_cuckoo_items(f); }

typedef struct ftype {
    const char *name;
    void *(*make)(size_t n, double p, bool concurrent);
    void (*destroy)(void *f);
    loop_fn add, add_conc, query;
    uint64_t (*count)(const void *f);
    bool counts_if_absent; /* count = successful adds, not N (scalable) */
} ftype;

static const ftype types[] = {
    { "bloom", standard_make, bloom_destroy, bloom_add, bloom_add_atomic, bloom_query, bloom_count, false },
    { "partitioned", partitioned_make, bloom_destroy, bloom_add, bloom_add_atomic, bloom_query, bloom_count, false },
    { "blocked", blocked_make, blocked_destroy, blocked_add, blocked_add_atomic, blocked_query, blocked_count, false },
    { "counting", counting_make, counting_destroy, counting_add, counting_add_atomic, counting_query, counting_count,
      false },
    { "scalable", scalable_make, scalable_destroy, scalable_add, scalable_add_atomic, scalable_query, scalable_count,
      true },
    { "cuckoo", cuckoo_make, cuckoo_destroy, cuckoo_add, cuckoo_add, cuckoo_query, cuckoo_count, false },
};
#define NTYPES (sizeof types / sizeof types[0])

/* ---- the threads ---- */

#define MAX_THREADS 4

typedef struct job {
    void *f;
    loop_fn fn;
    const uint64_t *h;
    size_t n;
    bool repeat;             /* a mixed-run reader: go over h again and again until *stop */
    atomic_int *stop;        /* set by the last writer of a mixed run */
    atomic_int *writers_left;
    pthread_barrier_t *barrier;
    double start, end, cpu;
    size_t calls, ok;
} job;

static void *thread_main(void *arg)
{
    job *j = arg;
    pthread_barrier_wait(j->barrier);
    j->start = now_s();
    double c0 = cpu_s();
    if (!j->repeat) {
        j->ok = j->fn(j->f, j->h, j->n);
        j->calls = j->n;
        /* relaxed is enough: the flag only tells readers to stop counting; join orders the rest */
        if (j->writers_left && atomic_fetch_sub_explicit(j->writers_left, 1, memory_order_relaxed) == 1)
            atomic_store_explicit(j->stop, 1, memory_order_relaxed);
    } else {
        enum { CHUNK = 4096 };
        size_t i = 0;
        while (!atomic_load_explicit(j->stop, memory_order_relaxed)) {
            size_t c = j->n - i < CHUNK ? j->n - i : CHUNK;
            j->ok += j->fn(j->f, j->h + i, c);
            j->calls += c;
            i = i + c == j->n ? 0 : i + c;
        }
    }
    j->end = now_s();
    j->cpu = cpu_s() - c0;
    return NULL;
}

/* Wall time from the first start to the last end of jobs[0..nj). */
static double span(const job *jobs, int nj)
{
    double s = jobs[0].start, e = jobs[0].end;
    for (int i = 1; i < nj; i++) {
        if (jobs[i].start < s) s = jobs[i].start;
        if (jobs[i].end > e) e = jobs[i].end;
    }
    return e - s;
}

/* Run the jobs' threads together. */
static void run_jobs(job *jobs, int nj)
{
    pthread_t t[2 * MAX_THREADS];
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, (unsigned)nj);
    for (int i = 0; i < nj; i++) {
        jobs[i].barrier = &b;
        if (pthread_create(&t[i], NULL, thread_main, &jobs[i]) != 0) {
            /* the threads already started wait at the barrier forever: nothing sensible is left */
            fprintf(stderr, "conc: pthread_create failed\n");
            exit(1);
        }
    }
    for (int i = 0; i < nj; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&b);
}

/* `threads` threads each running fn over their share of h[0..n). Returns Mkeys/s; *ok gets the
 * successes summed over the threads, *cpu_ns (if not NULL) the threads' CPU time per key. */
static double phase(void *f, loop_fn fn, const uint64_t *h, size_t n, int threads, size_t *ok, double *cpu_ns)
{
    job jobs[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        size_t lo = n * (size_t)t / (size_t)threads, hi = n * (size_t)(t + 1) / (size_t)threads;
        jobs[t] = (job){ .f = f, .fn = fn, .h = h + lo, .n = hi - lo };
    }
    run_jobs(jobs, threads);
    *ok = 0;
    double cpu = 0;
    for (int t = 0; t < threads; t++) {
        *ok += jobs[t].ok;
        cpu += jobs[t].cpu;
    }
    if (cpu_ns) *cpu_ns = cpu / (double)n * 1e9;
    return (double)n / span(jobs, threads) / 1e6;
}

/* ---- one type ---- */

typedef struct result {
    double ins, qry;   /* best Mkeys/s over the runs */
    double ins_cpu, qry_cpu; /* least CPU ns per key over the runs (all threads together) */
    uint64_t fn;       /* false negatives, summed over the runs */
    bool count_ok;     /* the filter's count was right in every run */
    uint64_t skipped;  /* scalable: keys not added because the chain already (falsely) held them */
    uint32_t layers;   /* scalable: sub-filters at the end of the last run */
    bool failed;       /* could not create the filter */
} result;

static void check_count(const ftype *ty, void *f, size_t n, size_t added, result *r)
{
    uint64_t c = ty->count(f);
    if (ty->counts_if_absent) {
        r->count_ok &= c == added;
        r->skipped = n - added;
        r->layers = bk_scalable_filters(f);
    } else {
        r->count_ok &= c == n && added == n;
    }
}

/* Insert all keys with `threads` threads (plain: one thread, the non-atomic add), then query them. */
static result measure(const ftype *ty, const uint64_t *h, size_t n, double p, int threads, bool plain, int reps)
{
    result r = { .count_ok = true, .ins_cpu = 1e300, .qry_cpu = 1e300 };
    for (int rep = 0; rep < reps; rep++) {
        void *f = ty->make(n, p, !plain);
        if (!f) {
            r.failed = true;
            return r;
        }
        size_t added, found;
        double ins_cpu, qry_cpu;
        double ins = phase(f, plain ? ty->add : ty->add_conc, h, n, threads, &added, &ins_cpu);
        double qry = phase(f, ty->query, h, n, threads, &found, &qry_cpu);
        if (ins > r.ins) r.ins = ins;
        if (qry > r.qry) r.qry = qry;
        if (ins_cpu < r.ins_cpu) r.ins_cpu = ins_cpu;
        if (qry_cpu < r.qry_cpu) r.qry_cpu = qry_cpu;
        r.fn += n - found;
        check_count(ty, f, n, added, &r);
        ty->destroy(f);
    }
    return r;
}

typedef struct mixed {
    double ins, qry;
    uint64_t fn;
    bool count_ok, failed;
} mixed;

/* The concurrent filter holds h[0..n/2); `pairs` writers insert h[n/2..n) while `pairs` readers query
 * h[0..n/2) until the writers are done. Afterwards every key must be present. */
static mixed measure_mixed(const ftype *ty, const uint64_t *h, size_t n, double p, int pairs, int reps)
{
    mixed m = { .count_ok = true };
    size_t half = n / 2;
    for (int rep = 0; rep < reps; rep++) {
        void *f = ty->make(n, p, true);
        if (!f) {
            m.failed = true;
            return m;
        }
        size_t added = ty->add_conc(f, h, half);
        atomic_int stop = 0, writers_left = pairs;
        job jobs[2 * MAX_THREADS];
        for (int t = 0; t < pairs; t++) {
            size_t lo = half + (n - half) * (size_t)t / (size_t)pairs;
            size_t hi = half + (n - half) * (size_t)(t + 1) / (size_t)pairs;
            jobs[t] = (job){ .f = f, .fn = ty->add_conc, .h = h + lo, .n = hi - lo, .stop = &stop,
                             .writers_left = &writers_left };
            lo = half * (size_t)t / (size_t)pairs;
            hi = half * (size_t)(t + 1) / (size_t)pairs;
            jobs[pairs + t] = (job){ .f = f, .fn = ty->query, .h = h + lo, .n = hi - lo, .repeat = true, .stop = &stop };
        }
        run_jobs(jobs, 2 * pairs);
        size_t calls = 0;
        for (int t = 0; t < pairs; t++) {
            added += jobs[t].ok;
            calls += jobs[pairs + t].calls;
            m.fn += jobs[pairs + t].calls - jobs[pairs + t].ok;
        }
        double ins = (double)(n - half) / span(jobs, pairs) / 1e6;
        double qry = (double)calls / span(jobs + pairs, pairs) / 1e6;
        if (ins > m.ins) m.ins = ins;
        if (qry > m.qry) m.qry = qry;
        size_t found;
        phase(f, ty->query, h, n, 1, &found, NULL);
        m.fn += n - found;
        result r = { .count_ok = true };
        check_count(ty, f, n, added, &r);
        m.count_ok &= r.count_ok;
        ty->destroy(f);
    }
    return m;
}

/* ---- output ---- */

static void print_load(const char *when)
{
    FILE *fp = fopen("/proc/loadavg", "r");
    char buf[128] = "unknown";
    if (fp) {
        if (!fgets(buf, sizeof buf, fp)) strcpy(buf, "unknown");
        fclose(fp);
    }
    buf[strcspn(buf, "\n")] = 0;
    printf("load average %s: %s\n", when, buf);
}

static void print_row(const char *type, const char *op, const char *plain, const double at[3], const char *cost,
                      const char *cpu_cost, const char *speedup, const char *check)
{
    char c[3][16];
    for (int i = 0; i < 3; i++) {
        if (at[i] > 0) snprintf(c[i], sizeof c[i], "%.2f", at[i]);
        else strcpy(c[i], "-");
    }
    printf("%-12s %-4s %7s %7s %7s %7s %6s %6s %6s  %s\n", type, op, plain, c[0], c[1], c[2], cost, cpu_cost, speedup,
           check);
}

static void report_type(const ftype *ty, const uint64_t *h, size_t n, double p, int reps)
{
    static const int nthreads[3] = { 1, 2, 4 };
    result plain = measure(ty, h, n, p, 1, true, reps);
    result at[3];
    for (int i = 0; i < 3; i++) at[i] = measure(ty, h, n, p, nthreads[i], false, reps);
    if (plain.failed || at[0].failed || at[1].failed || at[2].failed) {
        printf("%-12s could not create the filter (n = %zu, p = %g)\n", ty->name, n, p);
        return;
    }
    uint64_t fn = plain.fn + at[0].fn + at[1].fn + at[2].fn;
    bool count_ok = plain.count_ok && at[0].count_ok && at[1].count_ok && at[2].count_ok;
    char check[96], pl[16], cost[16], cc[16], sp[16];
    if (ty->counts_if_absent)
        snprintf(check, sizeof check, "fn %llu, count %s (N - %llu skipped), %u sub-filters",
                 (unsigned long long)fn, count_ok ? "ok" : "WRONG", (unsigned long long)at[2].skipped,
                 (unsigned)at[2].layers);
    else
        snprintf(check, sizeof check, "fn %llu, count %s", (unsigned long long)fn, count_ok ? "= N" : "WRONG");
    double ins[3] = { at[0].ins, at[1].ins, at[2].ins }, qry[3] = { at[0].qry, at[1].qry, at[2].qry };
    snprintf(pl, sizeof pl, "%.2f", plain.ins);
    snprintf(cost, sizeof cost, "%.2fx", plain.ins / at[0].ins);
    snprintf(cc, sizeof cc, "%.2fx", at[0].ins_cpu / plain.ins_cpu);
    snprintf(sp, sizeof sp, "%.2fx", at[1].ins / at[0].ins);
    print_row(ty->name, "ins", pl, ins, cost, cc, sp, check);
    snprintf(pl, sizeof pl, "%.2f", plain.qry);
    snprintf(cost, sizeof cost, "%.2fx", plain.qry / at[0].qry);
    snprintf(cc, sizeof cc, "%.2fx", at[0].qry_cpu / plain.qry_cpu);
    snprintf(sp, sizeof sp, "%.2fx", at[1].qry / at[0].qry);
    print_row("", "qry", pl, qry, cost, cc, sp, "");
    fflush(stdout);

    mixed mx[2];
    for (int i = 0; i < 2; i++) mx[i] = measure_mixed(ty, h, n, p, i + 1, reps);
    if (mx[0].failed || mx[1].failed) return;
    snprintf(check, sizeof check, "mixed: fn %llu, count %s", (unsigned long long)(mx[0].fn + mx[1].fn),
             mx[0].count_ok && mx[1].count_ok ? (ty->counts_if_absent ? "ok" : "= N") : "WRONG");
    double mi[3] = { 0, mx[0].ins, mx[1].ins }, mq[3] = { 0, mx[0].qry, mx[1].qry };
    print_row("", "m-in", "-", mi, "", "", "", check);
    print_row("", "m-qy", "-", mq, "", "", "", "");
    fflush(stdout);
}

static void usage(void)
{
    fprintf(stderr, "usage: conc [-n N] [-p P] [-r R] [--only bloom,partitioned,blocked,counting,scalable,cuckoo]\n"
                    "  -n N   total keys over all threads (default 4000000)\n"
                    "  -p P   target false-positive rate (default 0.01)\n"
                    "  -r R   runs per figure, the best is printed (default 1)\n");
}

static bool selected(const char *only, const char *name)
{
    if (!only) return true;
    size_t len = strlen(name);
    for (const char *s = only; *s;) {
        size_t l = strcspn(s, ",");
        if (l == len && !strncmp(s, name, l)) return true;
        s += l + (s[l] == ',');
    }
    return false;
}

int main(int argc, char **argv)
{
    size_t n = 4000000;
    double p = 0.01;
    int reps = 1;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = (size_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) p = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else {
            usage();
            return 2;
        }
    }
    if (n < 16 || !(p > 0 && p < 1) || reps < 1) {
        usage();
        return 2;
    }
    if (only) {
        for (const char *s = only; *s;) {
            size_t l = strcspn(s, ",");
            bool known = false;
            for (size_t t = 0; t < NTYPES; t++)
                known |= strlen(types[t].name) == l && !strncmp(s, types[t].name, l);
            if (!known) {
                fprintf(stderr, "conc: unknown type '%.*s'\n", (int)l, s);
                usage();
                return 2;
            }
            s += l + (s[l] == ',');
        }
    }
    uint64_t *h = malloc(n * sizeof *h);
    if (!h) {
        fprintf(stderr, "conc: out of memory for %zu keys\n", n);
        return 1;
    }
    for (size_t i = 0; i < n; i++) h[i] = bu_mix64(i);

    printf("conc: N = %zu pre-hashed keys in total, p = %g, best of %d run%s, %ld online CPUs\n", n, p, reps,
           reps == 1 ? "" : "s", sysconf(_SC_NPROCESSORS_ONLN));
    print_load("at start");
    printf("Mkeys/s over all threads (wall clock). plain: 1 thread, non-atomic form. 1t/2t/4t: concurrent form\n"
           "(bloom/partitioned/blocked/counting/scalable: *_add_hash_atomic; cuckoo: concurrent mode, one\n"
           "writer lock + lock-free readers). cost = plain / 1t (wall clock); cpu = the same ratio of the\n"
           "threads' CPU time per key (steadier on a busy machine); 2t/1t = speedup. m-in / m-qy: writers /\n"
           "readers of the mixed run (2t: 1 writer + 1 reader, 4t: 2 + 2) on a filter holding half the keys.\n"
           "scalable starts at %d keys (growth 2) and grows during every insert run; cuckoo is sized for N\n"
           "keys at 95%% load, so its inserts end in long kick chains.\n\n",
           SCALABLE_START);
    printf("%-12s %-4s %7s %7s %7s %7s %6s %6s %6s  %s\n", "type", "op", "plain", "1t", "2t", "4t", "cost", "cpu",
           "2t/1t", "check");
    for (size_t t = 0; t < NTYPES; t++)
        if (selected(only, types[t].name)) report_type(&types[t], h, n, p, reps);
    printf("\n");
    print_load("at end");
    free(h);
    return 0;
}
