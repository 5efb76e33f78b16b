/* Loading a saved filter whose bytes are pulled from a source in order (bk_filter_load_pull): the
 * body is decoded as it arrives, each large array read straight into the filter's own memory, so the
 * peak is the filter plus the source's own buffer instead of the saved form plus the filter.
 *
 * The validation is the one of bk__load_core, in another order: the header is parsed and checked
 * first; every parameter is checked by the type's decoder before anything is allocated for it (as
 * for any load), with sizes bounded by the header's body size; the payload checksum is computed over
 * the bytes as they arrive and compared once the whole body has been read, before the filter is
 * handed out. A damaged body is therefore refused exactly as a damaged buffer is, only after the
 * decode instead of before it. */
#include "persist/persist.h"


bk_status bk_filter_load_pull(bk_pull_fn fn, void *ctx, unsigned flags, bk_filter **out)
{
    bk_load_options o = BK_LOAD_OPTIONS_INIT;
    o.flags = flags;
    return bk_filter_load_pull_ex(fn, ctx, &o, out);
}

bk_status bk_filter_load_pull_ex(bk_pull_fn fn, void *ctx, const bk_load_options *o, bk_filter **out)
{
    unsigned flags;
    const bk_allocator *a;
    bk_status st = bk__load_begin(o, false, out, &flags, &a);
    if (st != BK_OK) return st;
    if (!fn) return BK_EINVAL;
    /* 64-byte aligned: the XXH3 state inside requires it (an allocator's blocks need only be 16-aligned) */
    struct bk__pull *p = bk__calloc_aligned(a, sizeof *p);
    if (!p) return BK_ENOMEM;
    p->fn = fn;
    p->ctx = ctx;
    XXH3_64bits_reset(&p->hash);

    uint8_t hdr[HDR_MAX];
    bk_file_info in;
    bk_status s = bk__pull_exact(p, hdr, 64);
    if (s == BK_OK) {
        s = bk__header_parse(hdr, 64, &in);
        if (s == BK_ETRUNCATED) {
            /* a longer header (newer minor version): its size field was checked by the parse */
            uint32_t hsize = bk__get_le32(hdr + OFF_HSIZE);
            if ((s = bk__pull_exact(p, hdr + 64, hsize - 64)) == BK_OK) s = bk__header_parse(hdr, hsize, &in);
        }
    }
    const bk_vtable *vt = NULL;
    if (s == BK_OK && !(vt = bk__vtable_of(in.type))) s = BK_ETYPE;
    if (s == BK_OK && in.hash_id != BK_HASH_XXH3_64) s = BK_ENOTSUP;
    if (s == BK_OK && in.body_size > SIZE_MAX) s = BK_ETOOBIG;
    bool stale = s == BK_OK && (in.flags & BK_FILE_FLAG_CHECKSUM_STALE);
    if (stale && (flags & BK_LOAD_REQUIRE_CLEAN)) s = BK_ECHECKSUM;

    void *obj = NULL;
    if (s == BK_OK) {
        bk_reader r = { .base = NULL, .len = (size_t)in.body_size, .off = 0, .seed = in.seed, .pull = p,
                         .alloc = a };
        s = vt->decode(&r, &obj);
        if (s == BK_OK && r.off != r.len) s = BK_ECORRUPT;
        if (s == BK_OK && !stale && !(flags & BK_LOAD_NO_CHECKSUM) &&
            XXH3_64bits_digest(&p->hash) != in.body_checksum)
            s = BK_ECHECKSUM;
        if (s != BK_OK && obj) {
            vt->destroy(obj);
            obj = NULL;
        }
    }
    if (s == BK_OK) {
        s = bk__filter_make(vt, obj, BK_BACKING_MEMORY, a, out);
        if (s != BK_OK) vt->destroy(obj);
    }
    if (p->failed && s != BK_OK) s = BK_EIO;
    bk__free(a, p->win);
    bk__free_aligned(a, p);
    return s;
}
