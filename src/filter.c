/* The generic handle: a registry of the filter types, and dispatch once per call or per batch. */
#include "persist.h"

/* The types compiled into the library. Adding a type is one line here (and its vtable in its own
 * source file, declared in internal.h). */
static const bk_vtable *const registry[] = {
    &bk__bloom_vtable,
    &bk__blocked_vtable,
    &bk__counting_vtable,
    &bk__scalable_vtable,
    &bk__cuckoo_vtable,
    &bk__fuse_vtable,
    &bk__aging_vtable,
    &bk__quotient_vtable,
    &bk__cms_vtable,
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
    bk_status s = f->backing == BK_BACKING_MEMORY ? BK_OK : bk__filter_unmap(f);
    bk__free(f->alloc, f);
    return s;
}

void bk_filter_free(bk_filter *f) { (void)bk_filter_close(f); }

/* ---- single keys ---- */

bk_status bk_filter_add_hash(bk_filter *f, uint64_t hash)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    if (BK_UNLIKELY(!f->add_one)) return BK_ENOTSUP;
    return f->add_one(f->obj, hash);
}

bk_status bk_filter_add(bk_filter *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    if (BK_UNLIKELY(!f->add_one)) return BK_ENOTSUP;
    return f->add_one(f->obj, bk__hash(key, len, f->vt->seed(f->obj)));
}

bool bk_filter_contains_hash(const bk_filter *f, uint64_t hash) { return f->vt->contains_hash(f->obj, hash); }

bool bk_filter_contains(const bk_filter *f, const void *key, size_t len)
{
    return f->vt->contains_hash(f->obj, bk__hash(key, len, f->vt->seed(f->obj)));
}

bk_status bk_filter_remove_hash(bk_filter *f, uint64_t hash)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    if (!f->vt->remove_hash || f->backing != BK_BACKING_MEMORY) return BK_ENOTSUP;
    return f->vt->remove_hash(f->obj, hash);
}

bk_status bk_filter_remove(bk_filter *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    if (!f->vt->remove_hash || f->backing != BK_BACKING_MEMORY) return BK_ENOTSUP;
    return f->vt->remove_hash(f->obj, bk__hash(key, len, f->vt->seed(f->obj)));
}

/* ---- uint64 keys: the byte forms on the key's 8 little-endian bytes ---- */

bk_status bk_filter_add_u64(bk_filter *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    if (BK_UNLIKELY(!f->add_one)) return BK_ENOTSUP;
    return f->add_one(f->obj, bk__hash_u64(key, f->vt->seed(f->obj)));
}

bool bk_filter_contains_u64(const bk_filter *f, uint64_t key)
{
    return f->vt->contains_hash(f->obj, bk__hash_u64(key, f->vt->seed(f->obj)));
}

bk_status bk_filter_remove_u64(bk_filter *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    if (!f->vt->remove_hash || f->backing != BK_BACKING_MEMORY) return BK_ENOTSUP;
    return f->vt->remove_hash(f->obj, bk__hash_u64(key, f->vt->seed(f->obj)));
}

/* ---- batches: bytes keys are hashed a chunk at a time, then handed to the type's batch code ---- */

#define BK_CHUNK 256

bk_status bk_filter_add_hashes(bk_filter *f, const uint64_t *hashes, size_t n, size_t *done)
{
    if (!f || (!hashes && n)) return bk__batch_refused(done);
    if (done) *done = 0;
    if (!f->add_one) return BK_ENOTSUP;
    size_t d = 0;
    if (f->add_batch) {
        bk_status s = f->add_batch(f->obj, hashes, n, &d);
        if (done) *done = d;
        return s;
    }
    for (; d < n; d++) {
        bk_status s = f->add_one(f->obj, hashes[d]);
        if (s != BK_OK) {
            if (done) *done = d;
            return s;
        }
    }
    return bk__batch_done(done, n);
}

bk_status bk_filter_add_many(bk_filter *f, const void *const *keys, const size_t *lens, size_t n, size_t *done)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return bk__batch_refused(done);
    if (done) *done = 0;
    if (!f->add_one) return BK_ENOTSUP;
    uint64_t seed = f->vt->seed(f->obj), h[BK_CHUNK];
    for (size_t i = 0, c = 0; i < n; i += c) {
        c = bk__hash_chunk(h, BK_CHUNK, keys, lens, i, n, seed);
        size_t d = 0;
        bk_status s = bk_filter_add_hashes(f, h, c, &d);
        if (s != BK_OK) {
            if (done) *done = i + d;
            return s;
        }
    }
    return bk__batch_done(done, n);
}

bk_status bk_filter_contains_hashes(const bk_filter *f, const uint64_t *hashes, size_t n, uint8_t *results,
                                    size_t *hits)
{
    if (!f || (!hashes && n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, n ? f->vt->contains_hashes(f->obj, hashes, n, results) : 0);
}

bk_status bk_filter_contains_many(const bk_filter *f, const void *const *keys, const size_t *lens, size_t n,
                                  uint8_t *results, size_t *hits)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return bk__batch_refused(hits);
    uint64_t seed = f->vt->seed(f->obj), h[BK_CHUNK];
    size_t present = 0;
    for (size_t i = 0, c = 0; i < n; i += c) {
        c = bk__hash_chunk(h, BK_CHUNK, keys, lens, i, n, seed);
        present += f->vt->contains_hashes(f->obj, h, c, results ? results + i : NULL);
    }
    return bk__batch_done(hits, present);
}

/* ---- whole-filter operations ---- */

bk_status bk_filter_stats(const bk_filter *f, bk_stats *out)
{
    if (!f || !out) return BK_EINVAL;
    f->vt->stats(f->obj, out);
    return BK_OK;
}

bk_status bk_filter_merge(bk_filter *dst, const bk_filter *src)
{
    if (!dst || !src) return BK_EINVAL;
    if (dst->vt != src->vt) return BK_EINCOMPAT;
    if (!dst->vt->merge || dst->backing != BK_BACKING_MEMORY) return BK_ENOTSUP;
    return dst->vt->merge(dst->obj, src->obj);
}

bk_status bk_filter_set_count(bk_filter *f, uint64_t n)
{
    if (!f) return BK_EINVAL;
    if (!f->vt->set_count || f->backing != BK_BACKING_MEMORY) return BK_ENOTSUP;
    f->vt->set_count(f->obj, n);
    return BK_OK;
}

bk_status bk_filter_clear(bk_filter *f)
{
    if (!f) return BK_EINVAL;
    if (!f->vt->clear || f->backing == BK_BACKING_MAP_READONLY) return BK_ENOTSUP;
    f->vt->clear(f->obj);
    return BK_OK;
}

bk_type bk_filter_type(const bk_filter *f) { return f->vt->type; }
uint64_t bk_filter_seed(const bk_filter *f) { return f->vt->seed(f->obj); }
bk_backing bk_filter_backing(const bk_filter *f) { return f->backing; }
