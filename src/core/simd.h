/* x86 vector paths: built with per-function target attributes and chosen at run time (simd.c's
 * bk__simd_resolve, once per filter), so the library itself needs no -mavx2. */
#ifndef BLOOMKIT_SIMD_H
#define BLOOMKIT_SIMD_H

#include "core/base.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#  define BK_X86 1
#  include <immintrin.h>
#  define BK_T_AVX2 __attribute__((target("avx2")))
#  define BK_T_AVX512 __attribute__((target("avx2,avx512f")))
#endif

/* The code path a new filter asked for `want` (an enum bk_simd) gets: bk_simd_force, $BK_SIMD and
 * the CPU cap it; under ThreadSanitizer AUTO means scalar (simd.c). */
BK_HIDDEN int bk__simd_resolve(int want);

#endif
