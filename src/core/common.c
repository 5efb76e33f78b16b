#include <stdlib.h>
#include <sys/mman.h>
#include "base.h"
#include "simd.h"

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
    }
    return NULL;
}

uint64_t bk_hash64(const void *key, size_t len, uint64_t seed)
{
    return bk__hash(key, len, seed);
}

/* ---- bit counts ---- */

#define POPCOUNT_LOOP(w, n, c)                                                               \
    for (uint64_t i_ = 0; i_ < (n); i_++)                                                    \
        (c) += (uint64_t)__builtin_popcountll(__atomic_load_n(&(w)[i_], __ATOMIC_RELAXED))

#ifdef BK_X86
__attribute__((target("popcnt"))) static uint64_t popcount_hw(const uint64_t *w, uint64_t n)
{
    uint64_t c = 0;
    POPCOUNT_LOOP(w, n, c);
    return c;
}
#endif

uint64_t bk__popcount_words(const uint64_t *w, uint64_t n)
{
#ifdef BK_X86
    if (__builtin_cpu_supports("popcnt")) return popcount_hw(w, n);
#endif
    uint64_t c = 0;
    POPCOUNT_LOOP(w, n, c);
    return c;
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

static bk_allocator g_alloc = { default_malloc, default_calloc, default_free, NULL };

void bk_set_allocator(const bk_allocator *a)
{
    if (a && a->malloc_fn && a->calloc_fn && a->free_fn)
        g_alloc = *a;
    else
        g_alloc = (bk_allocator){ default_malloc, default_calloc, default_free, NULL };
}

void *bk__malloc(size_t size) { return g_alloc.malloc_fn(g_alloc.opaque, size ? size : 1); }
void *bk__calloc(size_t count, size_t size)
{
    return g_alloc.calloc_fn(g_alloc.opaque, count ? count : 1, size ? size : 1);
}
void bk__free(void *p)
{
    if (p) g_alloc.free_fn(g_alloc.opaque, p);
}

/* Over-allocate by one line, align up past at least one byte, and keep the distance back to the
 * original pointer (1 to 64) in the byte just below the aligned one: 64 bytes of overhead, which
 * matters for the many tiny arrays of small filters (a 128-byte array takes a 192-byte block). */
void *bk__calloc_aligned(size_t size)
{
    if (size > SIZE_MAX - 128) return NULL;
    uint8_t *raw = bk__calloc(1, size + 64);
    if (!raw) return NULL;
    uintptr_t a = ((uintptr_t)raw + 64) & ~(uintptr_t)63;
    ((uint8_t *)a)[-1] = (uint8_t)(a - (uintptr_t)raw);
#ifdef MADV_HUGEPAGE
    /* Large filters are probed at random: with 4 KiB pages nearly every probe is also a TLB miss.
     * Ask for transparent huge pages on the 2 MiB-aligned interior (a hint; failure is harmless). */
    if (size >= ((size_t)4 << 20)) {
        uintptr_t lo = (a + ((uintptr_t)2 << 20) - 1) & ~(((uintptr_t)2 << 20) - 1);
        uintptr_t hi = (a + size) & ~(((uintptr_t)2 << 20) - 1);
        if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
    }
#endif
    return (void *)a;
}

void bk__free_aligned(void *p)
{
    if (!p) return;
    uint8_t back = ((uint8_t *)p)[-1];
    if (back) {
        bk__free((uint8_t *)p - back);
    } else { /* a larger alignment (fuse.c's scratch): the original pointer 16 bytes below */
        void *raw;
        memcpy(&raw, (uint8_t *)p - 16, sizeof raw);
        bk__free(raw);
    }
}

bk__stripes *bk__stripes_get(bk__stripes **slot)
{
    bk__stripes *s = bk__calloc_aligned(sizeof *s), *expected = NULL;
    if (!s) return NULL;
    if (__atomic_compare_exchange_n(slot, &expected, s, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return s;
    bk__free_aligned(s); /* another thread's first insert won */
    return expected;
}
