#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "core/base.h"
#include "core/simd.h"
#include "core/hooks.h"

unsigned bk_version_number(void) { return BK_VERSION_NUMBER; }
const char *bk_version_string(void) { return BK_VERSION_STRING; }

const char *bk_strerror(bk_status s)
{
    switch (s) {
    case BK_OK: return "success";
    case BK_EINVAL: return "invalid argument";
    case BK_ENOMEM: return "out of memory";
    case BK_ETOOBIG: return "size too large";
    case BK_EINCOMPAT: return "incompatible filters (type, geometry, layout or seed differ)";
    case BK_ENOTFOUND: return "key not found";
    case BK_EFULL: return "filter is full";
    case BK_ECORRUPT: return "corrupt filter data";
    case BK_EVERSION: return "unsupported format version";
    case BK_ETYPE: return "wrong or unknown filter type";
    case BK_ENOTSUP: return "operation not supported by this filter type";
    case BK_EIO: return "I/O error";
    case BK_ECHECKSUM: return "checksum mismatch";
    case BK_ETRUNCATED: return "data truncated";
    case BK_EEXISTS: return "key already present";
    case BK_EBUFSIZE: return "output buffer too small";
    }
    return "unknown status";
}

const char *bk_type_name(bk_type t)
{
    switch (t) {
    case BK_TYPE_BLOOM: return "bloom";
    case BK_TYPE_BLOCKED: return "blocked";
    case BK_TYPE_COUNTING: return "counting";
    case BK_TYPE_SCALABLE: return "scalable";
    case BK_TYPE_CUCKOO: return "cuckoo";
    case BK_TYPE_FUSE: return "fuse";
    case BK_TYPE_AGING: return "aging";
    case BK_TYPE_QUOTIENT: return "quotient";
    case BK_TYPE_RIBBON: return "ribbon";
    case BK_TYPE_CMS: return "cms";
    case BK_TYPE_TOPK: return "topk";
    }
    return NULL;
}

uint64_t bk_hash64(const void *key, size_t len, uint64_t seed)
{
    return bk__hash(key, len, seed);
}

/* ---- bit counts ---- */

/* Two loops, each with its popcount folded to one form (bk__popcount64 with a constant). */
BK_INLINE uint64_t popcount_loop(const uint64_t *w, uint64_t n, bool hw)
{
    uint64_t c = 0;
    for (uint64_t i = 0; i < n; i++) c += bk__popcount64(__atomic_load_n(&w[i], __ATOMIC_RELAXED), hw);
    return c;
}

uint64_t bk__popcount_words(const uint64_t *w, uint64_t n)
{
    if (bk__cpu_usable() & BK_CPU_POPCNT) return popcount_loop(w, n, true);
    return popcount_loop(w, n, false);
}

/* ---- options structs ---- */
bk_status bk__options_read(void *dst, size_t dst_size, const void *src)
{
    memset(dst, 0, dst_size);
    if (src) {
        size_t size;
        memcpy(&size, src, sizeof size);
        if (size == 0) size = dst_size;
        if (size < sizeof(size_t)) return BK_EINVAL;
        const unsigned char *b = src;
        for (size_t i = dst_size; i < size; i++)
            if (b[i] != 0) return BK_EINVAL;
        memcpy(dst, src, size < dst_size ? size : dst_size);
    }
    memcpy(dst, &dst_size, sizeof dst_size);
    return BK_OK;
}

/* ---- allocator ---- */
static void *default_malloc(void *o, size_t n) { (void)o; return malloc(n); }
static void *default_calloc(void *o, size_t c, size_t n) { (void)o; return calloc(c, n); }
static void default_free(void *o, void *p) { (void)o; free(p); }

/* The default for objects whose options name no allocator. Objects keep a pointer to it: the malloc
 * default never changes; bk_set_allocator copies a caller's allocator into g_set and points g_default
 * at it (its contract: before any filter exists, so no object can still point at an older copy). */
static const bk_allocator g_malloc = { default_malloc, default_calloc, default_free, NULL };
static bk_allocator g_set;
static const bk_allocator *g_default = &g_malloc;

void bk_set_allocator(const bk_allocator *a)
{
    if (a && a->malloc_fn && a->calloc_fn && a->free_fn) {
        g_set = *a;
        g_default = &g_set;
    } else {
        g_default = &g_malloc;
    }
}

const bk_allocator *bk__allocator(const bk_allocator *user)
{
    if (user && user->malloc_fn && user->calloc_fn && user->free_fn) return user;
    return g_default;
}

void *bk__malloc(const bk_allocator *a, size_t size)
{
    if (!a || !a->free_fn) a = g_default; /* NULL or a zeroed allocator: the default */
    return a->malloc_fn(a->opaque, size ? size : 1);
}
void *bk__calloc(const bk_allocator *a, size_t count, size_t size)
{
    if (!a || !a->free_fn) a = g_default; /* NULL or a zeroed allocator: the default */
    return a->calloc_fn(a->opaque, count ? count : 1, size ? size : 1);
}
void bk__free(const bk_allocator *a, void *p)
{
    if (!a || !a->free_fn) a = g_default; /* NULL or a zeroed allocator: the default */
    if (p) a->free_fn(a->opaque, p);
}

/*
 * Transparent huge pages. Large filters are probed at random: with 4 KiB pages nearly every probe of a
 * filter larger than the TLB's reach is also a TLB miss (a page walk, itself often a cache miss). An
 * array of BK__THP_MIN bytes or more is advised with madvise(MADV_HUGEPAGE), which is what Debian's
 * default THP mode ("madvise") waits for. With the default allocator such an array is also aligned
 * to 2 MiB, over-allocating up to 2 MiB of address space that is never touched (no memory); with a
 * user allocator (whose accounting would count that padding) it stays 64-byte aligned and only its
 * 2 MiB-aligned interior is advised. BK_THP=0 in the environment (read once per process, when the first such array is
 * allocated) turns both off: the A/B switch of the benchmarks. The advice is a hint; failure is harmless.
 */
#define BK__HUGE ((uintptr_t)2 << 20)
#define BK__THP_MIN ((size_t)2 << 20)

#ifdef MADV_HUGEPAGE
/* $BK_THP, read once per process (the first time a large array is allocated), as $BK_SIMD is. */
static bool g_thp_off;
static unsigned g_thp_reads;
static pthread_once_t g_thp_once = PTHREAD_ONCE_INIT;
static void read_thp_env(void)
{
    const char *e = getenv("BK_THP");
    g_thp_off = e && e[0] == '0' && e[1] == 0;
    g_thp_reads++;
}
#endif

unsigned bk__thp_env_reads(void)
{
#ifdef MADV_HUGEPAGE
    return g_thp_reads;
#else
    return 0;
#endif
}

bool bk__thp_wanted(size_t size)
{
#ifdef MADV_HUGEPAGE
    if (size < BK__THP_MIN) return false;
    pthread_once(&g_thp_once, read_thp_env);
    return !g_thp_off;
#else
    (void)size;
    return false;
#endif
}

void bk__thp_advise(void *p, size_t size)
{
#ifdef MADV_HUGEPAGE
    uintptr_t lo = ((uintptr_t)p + BK__HUGE - 1) & ~(BK__HUGE - 1);
    uintptr_t hi = ((uintptr_t)p + size) & ~(BK__HUGE - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)size;
#endif
}

/* Over-allocate by one line (2 MiB for a huge-page array with the default allocator) and align up.
 * 64-byte alignment keeps the distance back to the allocator's block (1 to 64) in the byte just below
 * the aligned pointer: 64 bytes of overhead, which matters for the many tiny arrays of small filters
 * (a 128-byte array takes a 192-byte block). A 2 MiB alignment keeps the block's address 16 bytes
 * below and marks the byte just below 0. */
void *bk__calloc_aligned(const bk_allocator *al, size_t size)
{
    if (!al || !al->free_fn) al = g_default; /* NULL or a zeroed allocator: the default */
    if (size > SIZE_MAX - BK__HUGE * 2) return NULL;
    bool thp = bk__thp_wanted(size);
    uintptr_t align = thp && al->calloc_fn == default_calloc ? BK__HUGE : 64;
    size_t span = align == BK__HUGE ? (size + BK__HUGE - 1) & ~(size_t)(BK__HUGE - 1) : size;
    uint8_t *raw = bk__calloc(al, 1, span + (align == BK__HUGE ? align + 16 : 64));
    if (!raw) return NULL;
    uintptr_t a;
    if (align == BK__HUGE) {
        a = ((uintptr_t)raw + 16 + align - 1) & ~(align - 1);
        memcpy((void *)(a - 16), &raw, sizeof raw);
        ((uint8_t *)a)[-1] = 0;
    } else {
        a = ((uintptr_t)raw + 64) & ~(uintptr_t)63;
        ((uint8_t *)a)[-1] = (uint8_t)(a - (uintptr_t)raw);
    }
    if (thp) bk__thp_advise((void *)a, span);
    return (void *)a;
}

void *bk__new_with_array(const bk_allocator *a, size_t size, uint64_t bytes, bool with_array,
                         uint64_t **array, bk_status *status)
{
    *array = NULL;
    if (bytes == 0 || bytes > BK_MAX_FILTER_BYTES || bytes > SIZE_MAX / 2) {
        *status = BK_ETOOBIG;
        return NULL;
    }
    void *obj = bk__calloc(a, 1, size);
    if (obj && with_array && !(*array = bk__calloc_aligned(a, (size_t)bytes))) {
        bk__free(a, obj);
        obj = NULL;
    }
    *status = obj ? BK_OK : BK_ENOMEM;
    return obj;
}

void bk__free_aligned(const bk_allocator *a, void *p)
{
    if (!p) return;
    uint8_t back = ((uint8_t *)p)[-1];
    if (back) {
        bk__free(a, (uint8_t *)p - back);
    } else { /* a 2 MiB alignment: the original pointer 16 bytes below */
        void *raw;
        memcpy(&raw, (uint8_t *)p - 16, sizeof raw);
        bk__free(a, raw);
    }
}

void *bk__calloc_lines(const bk_allocator *a, size_t size, bool *plain)
{
    *plain = false;
    if (size && size <= BK__LINES_PLAIN_MAX && size % 64 == 0) {
        void *p = bk__calloc(a, 1, size);
        if (p && ((uintptr_t)p & 63) == 0) {
            *plain = true;
            return p;
        }
        bk__free(a, p); /* not aligned (glibc's blocks are 16-byte aligned): the general way */
    }
    return bk__calloc_aligned(a, size);
}

void bk__free_lines(const bk_allocator *a, void *p, bool plain)
{
    if (plain)
        bk__free(a, p);
    else
        bk__free_aligned(a, p);
}

bk__stripes *bk__stripes_get(const bk_allocator *a, bk__stripes **slot)
{
    bk__stripes *s = bk__calloc_aligned(a, sizeof *s), *expected = NULL;
    if (!s) return NULL;
    if (__atomic_compare_exchange_n(slot, &expected, s, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return s;
    bk__free_aligned(a, s); /* another thread's first insert won */
    return expected;
}
