/* The registry of filter types, and the generic handle's lifetime: make, wrap, unwrap, close. */
#include "registry/registry.h"

/* The types compiled into the library. Adding a type is one line here (and its vtable in its own
 * source file, declared in filters/vtable.h). */
static const bk_vtable *const registry[] = {
    &bk__bloom_vtable,
    &bk__blocked_vtable,
    &bk__counting_vtable,
    &bk__scalable_vtable,
    &bk__cuckoo_vtable,
    &bk__fuse_vtable,
    &bk__aging_vtable,
    &bk__quotient_vtable,
    &bk__ribbon_vtable,
    &bk__cms_vtable,  /* the sketches: in the registry for files, not membership filters */
    &bk__topk_vtable,
};

const bk_vtable *bk__vtable_of(uint32_t type)
{
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if ((uint32_t)registry[i]->type == type) return registry[i];
    return NULL;
}

bool bk_filter_type_registered(bk_type type) { return bk__vtable_of((uint32_t)type) != NULL; }

bk_status bk__filter_make(const bk_vtable *vt, void *obj, bk_backing backing, const bk_allocator *a,
                         bk_filter **out)
{
    const bk_allocator *al = bk__allocator(a);
    bk_filter *f = bk__calloc(al, 1, sizeof *f);
    if (!f) return BK_ENOMEM;
    f->alloc = al;
    f->vt = vt;
    f->obj = obj;
    f->backing = backing;
    f->fd = -1;
    if (backing == BK_BACKING_MEMORY) {
        f->add_one = vt->add_hash;
        f->add_batch = vt->add_hashes;
    } else if (backing == BK_BACKING_MAP_SHARED) {
        f->add_one = vt->add_hash_atomic;
        f->add_batch = vt->add_hashes_atomic; /* NULL: add_one per key */
    }
    *out = f;
    return BK_OK;
}

/* ---- wrapping ---- */

bk_status bk_filter_wrap(bk_type type, void *typed, bk_filter **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!typed) return BK_EINVAL;
    const bk_vtable *vt = bk__vtable_of((uint32_t)type);
    if (!vt) return BK_ETYPE;
    return bk__filter_make(vt, typed, BK_BACKING_MEMORY, vt->allocator(typed), out);
}

void *bk_filter_get(const bk_filter *f, bk_type expected)
{
    if (!f || f->vt->type != expected) return NULL;
    return f->obj;
}

bk_status bk_filter_unwrap(bk_filter *f, bk_type expected, void **typed)
{
    if (!f || !typed || f->backing != BK_BACKING_MEMORY) return BK_EINVAL;
    if (f->vt->type != expected) return BK_ETYPE;
    *typed = f->obj;
    bk__free(f->alloc, f);
    return BK_OK;
}

bk_status bk_filter_close(bk_filter *f)
{
    if (!f) return BK_OK;
    if (f->obj) f->vt->destroy(f->obj);
    f->obj = NULL;
    bk_status s = f->release ? f->release(f) : BK_OK;
    bk__free(f->alloc, f);
    return s;
}

void bk_filter_free(bk_filter *f) { (void)bk_filter_close(f); }
