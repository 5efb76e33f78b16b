/*
 * bloomkit's experimental tier: everything of bloomkit.h plus the parts whose layout or behaviour may
 * still change in a 1.x release, so a program that uses them must be rebuilt (and preferably linked
 * statically) with each new version: the blocked filter's views (a struct filled by the library and
 * header-inline probes, with AVX2 code from <immintrin.h>).
 *
 * Include this instead of bloomkit.h, or define BK_STATIC_LINKING_ONLY before including bloomkit.h.
 * The stable tier (bloomkit.h without the macro) keeps its API and ABI for every 1.x release.
 */
#ifndef BLOOMKIT_EXPERIMENTAL_H
#define BLOOMKIT_EXPERIMENTAL_H

#ifndef BK_STATIC_LINKING_ONLY
#  define BK_STATIC_LINKING_ONLY
#endif
#include "bloomkit.h"
#include "blocked.h"

#endif
