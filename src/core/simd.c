/* The code path of the vector kernels: what the CPU offers, what the user forced (bk_simd_force,
 * $BK_SIMD), and what a new filter gets (bk__simd_resolve). */
#include <pthread.h>
#include <stdlib.h>
#include "core/simd.h"
#include "core/hooks.h"
#include "bloomkit/blocked.h"

#if defined(__SANITIZE_THREAD__)
#  define BK_TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define BK_TSAN 1
#  endif
#endif

static int g_forced; /* a bk_simd, 0 = none; atomic accesses */

static bk_simd cpu_best(void)
{
#ifdef BK_X86
    /* __builtin_cpu_supports checks the OS saves the vector state too (xgetbv). */
    if (__builtin_cpu_supports("avx2")) {
        if (__builtin_cpu_supports("avx512f")) return BK_SIMD_AVX512;
        return BK_SIMD_AVX2;
    }
#endif
    return BK_SIMD_SCALAR;
}

bk_simd bk_simd_best(void) { return cpu_best(); }

const char *bk_simd_name(bk_simd s)
{
    switch (s) {
    case BK_SIMD_AUTO: return "auto";
    case BK_SIMD_SCALAR: return "scalar";
    case BK_SIMD_AVX2: return "avx2";
    case BK_SIMD_AVX512: return "avx512";
    }
    return NULL;
}

bk_status bk_simd_force(bk_simd s)
{
    if (s < BK_SIMD_AUTO || s > BK_SIMD_AVX512) return BK_EINVAL;
    if (s != BK_SIMD_AUTO && s > cpu_best()) return BK_ENOTSUP;
    __atomic_store_n(&g_forced, (int)s, __ATOMIC_RELAXED);
    return BK_OK;
}

static bk_simd parse_simd(const char *v)
{
    if (!v) return BK_SIMD_AUTO;
    for (bk_simd s = BK_SIMD_SCALAR; s <= BK_SIMD_AVX512; s++)
        if (strcmp(v, bk_simd_name(s)) == 0) return s;
    return BK_SIMD_AUTO;
}

/* $BK_SIMD, read once per process (the first time a filter resolves AUTO), never per creation. */
static bk_simd g_env_cap;
static unsigned g_env_reads;
static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;
static void read_env_cap(void)
{
    g_env_cap = parse_simd(getenv("BK_SIMD"));
    g_env_reads++;
}

unsigned bk__simd_env_reads(void) { return g_env_reads; }

/*
 * AUTO: the CPU's best, capped by bk_simd_force or else by $BK_SIMD (read once per process). Under
 * ThreadSanitizer AUTO means scalar: the scalar queries read with relaxed atomics, which TSan models;
 * its view of a vector load racing an atomic OR would be a false report (on x86 each aligned 8-byte
 * part of a vector load is atomic, and bits only ever go from 0 to 1).
 */
int bk__simd_resolve(int want)
{
    bk_simd best = cpu_best();
    if (want != BK_SIMD_AUTO) return want;
#ifdef BK_TSAN
    best = BK_SIMD_SCALAR;
#endif
    bk_simd cap = (bk_simd)__atomic_load_n(&g_forced, __ATOMIC_RELAXED);
    if (cap == BK_SIMD_AUTO) {
        pthread_once(&g_env_once, read_env_cap);
        cap = g_env_cap;
    }
    return (int)(cap != BK_SIMD_AUTO && cap < best ? cap : best);
}
