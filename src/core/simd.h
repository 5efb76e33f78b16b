/* The CPU module: the one place the library asks the CPU what it has (simd.c, read once per process)
 * and applies the path cap (bk_simd_force, $BK_SIMD, ThreadSanitizer). Every type picks its code
 * paths from bk__cpu_usable() when a filter is made; the x86 paths are built with per-function target
 * attributes, so the library itself needs no -mavx2, -mbmi2 or -mpopcnt. */
#ifndef BLOOMKIT_SIMD_H
#define BLOOMKIT_SIMD_H

#include "core/base.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#  define BK_X86 1
#  include <immintrin.h>
#  define BK_T_AVX2 __attribute__((target("avx2")))
#  define BK_T_AVX512 __attribute__((target("avx2,avx512f")))
#endif

/* Instruction-set features, one bit each (bk__cpu_features, bk__cpu_usable). */
enum {
    BK_CPU_POPCNT = 1u << 0,
    BK_CPU_BMI1 = 1u << 1,
    BK_CPU_BMI2 = 1u << 2,
    BK_CPU_AVX2 = 1u << 3,
    BK_CPU_AVX512F = 1u << 4,
    BK_CPU_AVX512DQ = 1u << 5,
    BK_CPU_AVX512POPCNT = 1u << 6, /* AVX512_VPOPCNTDQ: a popcount per 64-bit lane */
    BK_CPU_AVX512VL = 1u << 7,     /* the AVX-512 instructions on 256-bit registers (ymm16-31 among them) */
};

/* The features this CPU (and OS: the vector state is saved) has, read once per process. */
BK_HIDDEN unsigned bk__cpu_features(void);
/* The features a filter made now may use: bk__cpu_features() under the cap of bk__simd_resolve(AUTO):
 * scalar gives none (every type on its portable code), avx2 all but the AVX-512 ones. */
BK_HIDDEN unsigned bk__cpu_usable(void);

/* The code path a new filter asked for `want` (an enum bk_simd) gets: bk_simd_force, $BK_SIMD and
 * the CPU cap it; under ThreadSanitizer AUTO means scalar (simd.c). */
BK_HIDDEN int bk__simd_resolve(int want);

/* ---- bit counts: the one popcount of the library ---- */

/* Bits set in x by shifts and masks: no library call on the baseline x86-64 target (where
 * __builtin_popcountll is a libgcc call). */
BK_INLINE unsigned bk__popcount_swar(uint64_t x)
{
    x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
    return (unsigned)((x * UINT64_C(0x0101010101010101)) >> 56);
}

/* Bits set in x: the POPCNT instruction when hw (the caller checked BK_CPU_POPCNT in
 * bk__cpu_usable()), else bk__popcount_swar. Inline assembly needs no target attribute, so one body
 * serves both paths; a constant hw folds the test away. */
BK_INLINE unsigned bk__popcount64(uint64_t x, bool hw)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (hw) {
        uint64_t r;
        __asm__("popcntq %1, %0" : "=r"(r) : "rm"(x));
        return (unsigned)r;
    }
#endif
    (void)hw;
    return bk__popcount_swar(x);
}

#endif
