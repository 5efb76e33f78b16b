/* The blocked sizing's per-process constants (blocked_math.c), made by tests/test_blocked_tables.c and
 * kept in blocked_tables.c, so that no sizing call computes them: the weights of the in-block FPR,
 * its closed-form series, and the in-block FPR at the loads below 256 of the 512-bit layout (at small
 * loads from the distribution of the bits set, positive terms only: the weights' alternating sum
 * cancels there), of the split layout and of the 1024-bit mean form. Private. */
#ifndef BK_CORE_BLOCKED_TABLES_H
#define BK_CORE_BLOCKED_TABLES_H

#include "core/base.h"
#include "bloomkit/blocked.h"

/* The weights w_i of inner() for one (layout, k). */
typedef struct {
    bk_blocked_layout layout;
    uint32_t k;
    long double w[BK_BLOCKED_MAX_K + 1];
    long double lq[BK_BLOCKED_MAX_K + 1]; /* log(1 - i/B) */
} bk__inner_terms;

/* inner(L) = sum_j c_j (1 - d_j)^L (blocked_math.c: the closed form of the mixture). */
typedef struct {
    long double c[BK_BLOCKED_MAX_K + 1], d[BK_BLOCKED_MAX_K + 1];
    double cd[BK_BLOCKED_MAX_K + 1], dd[BK_BLOCKED_MAX_K + 1]; /* c and d rounded to double */
    long double inner_err; /* the summed mixture's absolute error in inner() (0: relative only, inner_rel) */
    long double inner_rel; /* ... and relative to its value */
    uint32_t terms;
} bk__inner_series;

#define BK__TAB_ROWS (1 + 3 * BK_BLOCKED_MAX_K)
/* Rows: the split layout (k = 8), then k = 1 .. BK_BLOCKED_MAX_K of the 512-bit, the 1024-bit (mean
 * form) and the 1024-bit exact layouts. */
BK_HIDDEN extern const bk__inner_terms bk__blocked_terms[BK__TAB_ROWS];
/* Index: 0 split, 1 512, 2 1024 (mean form); k. */
BK_HIDDEN extern const bk__inner_series bk__blocked_series[3][BK_BLOCKED_MAX_K + 1];
/* The 512-bit layout's inner(L) = E[(X/512)^k] for L < BK__TAB512_LOADS: bk__blocked_tab512[k - 1][L]
 * (the value blocked_math.c's inner_fpr gives: from the distribution of X where the alternating sum
 * could be off by more than 2^-40 of the value, that sum above). */
#define BK__TAB512_LOADS 256
BK_HIDDEN extern const double bk__blocked_tab512[BK_BLOCKED_MAX_K][BK__TAB512_LOADS];

/* The split layout's and the 1024-bit mean form's inner(L) for L < BK__TABMEAN_LOADS: row 0 the split
 * layout (k = 8), row k the 1024-bit mean form at k; the values blocked_math.c's inner_fpr gives by pow
 * and expm1, kept so that no process's first sizings compute them (the loads of every p up to a few
 * percent). */
#define BK__TABMEAN_LOADS 256
BK_HIDDEN extern const double bk__blocked_tabmean[BK_BLOCKED_MAX_K + 1][BK__TABMEAN_LOADS];

#endif
