/* The CPU module: what the CPU offers (bk__cpu_features, the library's one feature detection), what
 * the user forced (bk_simd_force, $BK_SIMD), and what a new filter gets (bk__simd_resolve for the
 * vector kernels, bk__cpu_usable for every feature). */
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

/* The CPU's features, with BK_CPU_READ set once read (relaxed atomics: two threads reading at once
 * store the same value). */
#define BK_CPU_READ (1u << 31)
static unsigned g_features;

static unsigned g_cpu_reads;

static unsigned read_features(void)
{
    unsigned f = 0;
    __atomic_add_fetch(&g_cpu_reads, 1, __ATOMIC_RELAXED);
#ifdef BK_X86
    /* __builtin_cpu_supports checks the OS saves the vector state too (xgetbv); the init makes it
     * safe before libgcc's own constructor has run. */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("popcnt")) f |= BK_CPU_POPCNT;
    if (__builtin_cpu_supports("bmi")) f |= BK_CPU_BMI1;
    if (__builtin_cpu_supports("bmi2")) f |= BK_CPU_BMI2;
    if (__builtin_cpu_supports("avx2")) f |= BK_CPU_AVX2;
    if (__builtin_cpu_supports("avx512f")) f |= BK_CPU_AVX512F;
    if (__builtin_cpu_supports("avx512dq")) f |= BK_CPU_AVX512DQ;
    if (__builtin_cpu_supports("avx512vpopcntdq")) f |= BK_CPU_AVX512POPCNT;
    if (__builtin_cpu_supports("avx512vl")) f |= BK_CPU_AVX512VL;
#endif
    return f;
}

unsigned bk__cpu_reads(void) { return __atomic_load_n(&g_cpu_reads, __ATOMIC_RELAXED); }

unsigned bk__cpu_features(void)
{
    unsigned f = __atomic_load_n(&g_features, __ATOMIC_RELAXED);
    if (!(f & BK_CPU_READ)) {
        f = read_features() | BK_CPU_READ;
        __atomic_store_n(&g_features, f, __ATOMIC_RELAXED);
    }
    return f & ~BK_CPU_READ;
}

static bk_simd cpu_best(void)
{
    unsigned f = bk__cpu_features();
    if (f & BK_CPU_AVX2) return f & BK_CPU_AVX512F ? BK_SIMD_AVX512 : BK_SIMD_AVX2;
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

/* The cap of new filters: bk_simd_force, else $BK_SIMD (read once per process); AUTO for none. Under
 * ThreadSanitizer it is scalar: the scalar queries read with relaxed atomics, which TSan models; its
 * view of a vector load racing an atomic OR would be a false report (on x86 each aligned 8-byte part
 * of a vector load is atomic, and bits only ever go from 0 to 1). */
static bk_simd cap_now(void)
{
    bk_simd cap = (bk_simd)__atomic_load_n(&g_forced, __ATOMIC_RELAXED);
    if (cap == BK_SIMD_AUTO) {
        pthread_once(&g_env_once, read_env_cap);
        cap = g_env_cap;
    }
#ifdef BK_TSAN
    cap = BK_SIMD_SCALAR;
#endif
    return cap;
}

/* AUTO: the CPU's best, under the cap. */
int bk__simd_resolve(int want)
{
    if (want != BK_SIMD_AUTO) return want;
    bk_simd best = cpu_best(), cap = cap_now();
    return (int)(cap != BK_SIMD_AUTO && cap < best ? cap : best);
}

/* The cap, not the CPU's best vector path, decides: a CPU without AVX2 still has its POPCNT and BMI. */
unsigned bk__cpu_usable(void)
{
    unsigned f = bk__cpu_features();
    switch (cap_now()) {
    case BK_SIMD_SCALAR: return 0;
    case BK_SIMD_AVX2: return f & ~(unsigned)(BK_CPU_AVX512F | BK_CPU_AVX512DQ | BK_CPU_AVX512POPCNT | BK_CPU_AVX512VL);
    default: return f;
    }
}
