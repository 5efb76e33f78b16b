/* x86 vector paths: built with per-function target attributes and chosen at run time (blocked.c's
 * dispatch, bk__simd_resolve), so the library itself needs no -mavx2. */
#ifndef BLOOMKIT_SIMD_H
#define BLOOMKIT_SIMD_H

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#  define BK_X86 1
#  include <immintrin.h>
#  define BK_T_AVX2 __attribute__((target("avx2")))
#  define BK_T_AVX512 __attribute__((target("avx2,avx512f")))
#endif

#endif
