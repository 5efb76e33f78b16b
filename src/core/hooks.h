/* The core's entry points for the unit tests only (the library itself never calls them); the filter
 * types' are in filters/testing.h. Not installed. */
#ifndef BK_CORE_HOOKS_H
#define BK_CORE_HOOKS_H

#include "core/base.h"

/* How many times the library has read $BK_SIMD (at most once per process). */
BK_HIDDEN unsigned bk__simd_env_reads(void);
/* How many times the library has asked the CPU for its features (once per process, unless two threads
 * ask at the same first moment). */
BK_HIDDEN unsigned bk__cpu_reads(void);
/* How many times the library has read $BK_THP (at most once per process). */
BK_HIDDEN unsigned bk__thp_env_reads(void);
/* Blocked sizing by the summed mixture's search alone (blocked_math.c): what bk_blocked_size and the
 * scalable chain's 1024-bit sizing (layout_code 2) must equal. */
struct bk_geometry;
BK_HIDDEN bk_status bk__blocked_size_summed(uint64_t n, double p, int layout_code, struct bk_geometry *out);
/* Whether this thread's blocked sizings may answer from its memo of the last few (blocked_math.c;
 * on by default): off, every call runs the search, for the tests and the benchmark that time it. */
BK_HIDDEN void bk__blocked_memo(bool on);

#endif
