/* The core's entry points for the unit tests only (the library itself never calls them); the filter
 * types' are in filters/testing.h. Not installed. */
#ifndef BK_CORE_HOOKS_H
#define BK_CORE_HOOKS_H

#include "core/base.h"

/* How many times the library has read $BK_SIMD (at most once per process). */
BK_HIDDEN unsigned bk__simd_env_reads(void);
/* How many times the library has read $BK_THP (at most once per process). */
BK_HIDDEN unsigned bk__thp_env_reads(void);

#endif
