/* Body writer and bounds-checked reader for serialization (docs/FORMAT.md). Little-endian always. */
#include "core/body.h"

/* ---- a pulled body's source ---- */

bk_status bk__pull_exact(struct bk__pull *p, void *dst, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ptrdiff_t n = p->fn(p->ctx, (uint8_t *)dst + got, len - got);
        if (n < 0) {
            p->failed = true;
            return BK_EIO;
        }
        if (n == 0) return BK_ETRUNCATED;
        if ((size_t)n > len - got) { /* a source that claims more than it was asked for */
            p->failed = true;
            return BK_EIO;
        }
        got += (size_t)n;
    }
    return BK_OK;
}

static bk_status pull_take(bk_reader *r, size_t len, const uint8_t **out)
{
    struct bk__pull *p = r->pull;
    if (len > p->win_cap) {
        uint8_t *w = bk__malloc(r->alloc, len);
        if (!w) return BK_ENOMEM;
        bk__free(r->alloc, p->win);
        p->win = w;
        p->win_cap = len;
    }
    bk_status s = bk__pull_exact(p, p->win, len);
    if (s != BK_OK) return s;
    XXH3_64bits_update(&p->hash, p->win, len);
    r->off += len;
    *out = p->win;
    return BK_OK;
}

static bk_status pull_take_into(bk_reader *r, void *dst, size_t len)
{
    struct bk__pull *p = r->pull;
    /* In slices, each hashed while it is still in cache. */
    const size_t slice = (size_t)1 << 20;
    for (size_t done = 0; done < len;) {
        size_t n = len - done < slice ? len - done : slice;
        bk_status s = bk__pull_exact(p, (uint8_t *)dst + done, n);
        if (s != BK_OK) return s;
        XXH3_64bits_update(&p->hash, (uint8_t *)dst + done, n);
        done += n;
    }
    r->off += len;
    return BK_OK;
}

bk_status bk__w_bytes(bk_writer *w, const void *data, size_t len)
{
    if (len == 0) return BK_OK;
    if (w->sink) {
        bk_status s = w->sink(w->ctx, data, len);
        if (s != BK_OK) return s;
    }
    w->offset += len;
    return BK_OK;
}

bk_status bk__w_u64(bk_writer *w, uint64_t v)
{
    uint8_t b[8];
    bk__put_le64(b, v);
    return bk__w_bytes(w, b, 8);
}

bk_status bk__w_u32(bk_writer *w, uint32_t v)
{
    uint8_t b[4];
    bk__put_le32(b, v);
    return bk__w_bytes(w, b, 4);
}

bk_status bk__w_f64(bk_writer *w, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    return bk__w_u64(w, u);
}

bk_status bk__w_align(bk_writer *w, size_t align)
{
    static const uint8_t zeros[64];
    size_t pad = (size_t)((align - (w->offset & (align - 1))) & (align - 1));
    while (pad) {
        size_t n = pad < sizeof zeros ? pad : sizeof zeros;
        bk_status s = bk__w_bytes(w, zeros, n);
        if (s != BK_OK) return s;
        pad -= n;
    }
    return BK_OK;
}

bk_status bk__w_u64_array(bk_writer *w, const uint64_t *v, size_t count)
{
    return bk__w_bytes(w, v, count * 8);
}

bk_status bk__r_take(bk_reader *r, size_t len, const uint8_t **p)
{
    if (r->off > r->len || len > r->len - r->off) return BK_ETRUNCATED;
    if (r->pull) return pull_take(r, len, p);
    *p = r->base + r->off;
    r->off += len;
    return BK_OK;
}

bk_status bk__r_take_into(bk_reader *r, void *dst, size_t len)
{
    if (r->off > r->len || len > r->len - r->off) return BK_ETRUNCATED;
    if (r->pull) return pull_take_into(r, dst, len);
    if (len) memcpy(dst, r->base + r->off, len);
    r->off += len;
    return BK_OK;
}

bk_status bk__r_u64(bk_reader *r, uint64_t *v)
{
    const uint8_t *p;
    bk_status s = bk__r_take(r, 8, &p);
    if (s == BK_OK) *v = bk__get_le64(p);
    return s;
}

bk_status bk__r_u32(bk_reader *r, uint32_t *v)
{
    const uint8_t *p;
    bk_status s = bk__r_take(r, 4, &p);
    if (s == BK_OK) *v = bk__get_le32(p);
    return s;
}

bk_status bk__r_f64(bk_reader *r, double *v)
{
    uint64_t u;
    bk_status s = bk__r_u64(r, &u);
    if (s == BK_OK) memcpy(v, &u, 8);
    return s;
}

bk_status bk__r_align(bk_reader *r, size_t align)
{
    size_t pad = (align - (r->off & (align - 1))) & (align - 1);
    const uint8_t *p;
    bk_status s = bk__r_take(r, pad, &p);
    for (size_t i = 0; s == BK_OK && i < pad; i++)
        if (p[i]) s = BK_ECORRUPT;
    return s;
}

bk_status bk__r_array_begin(bk_reader *r, uint64_t bytes, const uint8_t **data)
{
    *data = NULL;
    if (r->off > r->len || bytes > r->len - r->off) return BK_ETRUNCATED;
    return r->borrow ? bk__r_take(r, (size_t)bytes, data) : BK_OK;
}

bk_status bk__r_array_end(bk_reader *r, uint64_t bytes, const uint8_t *data, uint64_t **words)
{
    if (!r->borrow) return bk__r_take_into(r, *words, (size_t)bytes);
    *words = (uint64_t *)(uintptr_t)data;
    return BK_OK;
}

bool bk__tail_zero(const uint64_t *w, uint64_t nwords, uint64_t bit)
{
    uint64_t k = bit >> 6;
    if (k >= nwords) return true;
    if ((bit & 63) && (w[k] >> (bit & 63))) return false;
    for (uint64_t i = (bit + 63) >> 6; i < nwords; i++)
        if (w[i]) return false;
    return true;
}

bk_status bk__w_bits_body(bk_writer *w, uint32_t variant, uint32_t k, uint64_t m, uint64_t capacity,
                          uint64_t count, double fpr, const uint64_t *words, uint64_t nwords)
{
    bk_status s;
    if ((s = bk__w_u32(w, variant)) || (s = bk__w_u32(w, k)) || (s = bk__w_u64(w, m)) ||
        (s = bk__w_u64(w, capacity)) || (s = bk__w_u64(w, count)) || (s = bk__w_f64(w, fpr)) ||
        (s = bk__w_align(w, 64)))
        return s;
    return bk__w_u64_array(w, words, (size_t)nwords);
}

bk_status bk__r_bits_head(bk_reader *r, bk__bits_head *h)
{
    bk_status s;
    h->at = r->off;
    if ((s = bk__r_u32(r, &h->variant)) || (s = bk__r_u32(r, &h->k)) || (s = bk__r_u64(r, &h->m)) ||
        (s = bk__r_u64(r, &h->capacity)) || (s = bk__r_u64(r, &h->count)) || (s = bk__r_f64(r, &h->fpr)) ||
        (s = bk__r_align(r, 64)))
        return s;
    if (h->m == 0 || h->m > BK_MAX_FILTER_BYTES * 8 || h->capacity == 0 || !(h->fpr >= 0 && h->fpr <= 1))
        return BK_ECORRUPT;
    return BK_OK;
}

/* The count's offset in the parameter block: after u32 variant, u32 k, u64 m, u64 capacity. */
#define BK__BITS_HEAD_COUNT_OFFSET 24

bk_status bk__r_bits_end(bk_reader *r, const bk__bits_head *h, uint64_t bytes, const uint8_t *data, uint64_t used,
                         uint64_t **words, uint64_t **count, uint64_t *own)
{
    bk_status s = bk__r_array_end(r, bytes, data, words);
    if (s != BK_OK) return s;
    if (!bk__tail_zero(*words, bytes / 8, used)) return BK_ECORRUPT;
    if (r->borrow && r->writable) *count = (uint64_t *)(uintptr_t)(r->base + h->at + BK__BITS_HEAD_COUNT_OFFSET);
    *own = h->count;
    return BK_OK;
}
