/*
 * bloomkit's experimental tier: everything of bloomkit.h plus the parts whose layout or behaviour may
 * still change in a 1.x release, so a program that uses them must be rebuilt (and preferably linked
 * statically) with each new version:
 *   - SIMD controls: bk_simd, bk_simd_best/name/force, bk_blocked_simd/set_simd (blocked.h), the
 *     quotient filter's rank-and-select paths (quotient.h);
 *   - structs that expose a type's internals: bk_cuckoo_info (cuckoo.h), bk_scalable_layer
 *     (scalable.h), bk_aging_info (aging.h). They carry no ABI promise: a 1.x release may add,
 *     remove or reorder their fields (the stable statistics are bk_stats, common.h, which grows only
 *     through its reserved words);
 *   - the blocked filter's views: a struct filled by the library and header-inline probes, with AVX2
 *     code from <immintrin.h> (blocked.h);
 *   - the cuckoo filter's packed form and the views built over it (cuckoo.h, "Packed small filters"):
 *     the header's layout and the view's size may change with the struct they carry.
 *   - the readers of reader.h (header-inline queries of built blocked, fuse and cuckoo filters): not
 *     included here, since they bring <xxhash.h> in; include <bloomkit/reader.h> by name.
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
/* Again: their experimental parts sit outside the include guards, for a program that included
 * bloomkit.h before this header. */
#include "blocked.h"
#include "quotient.h"
#include "cuckoo.h"
#include "scalable.h"
#include "aging.h"

#endif
