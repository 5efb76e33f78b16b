/* The generic handle: dispatch once per call or per batch (the registry of types and the handle's
 * lifetime are registry/registry.c). */
#include "registry/registry.h"

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

/* Insert unless probably present: the type's one pass where it has one (scalable, cuckoo, aging), in
 * memory; else (other types, mappings) a query, then an add. */
bk_status bk_filter_add_if_absent_hash(bk_filter *f, uint64_t hash)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    if (f->vt->add_if_absent_hash && f->backing == BK_BACKING_MEMORY) return f->vt->add_if_absent_hash(f->obj, hash);
    if (f->vt->contains_hash(f->obj, hash)) return BK_EEXISTS;
    if (BK_UNLIKELY(!f->add_one)) return BK_ENOTSUP;
    return f->add_one(f->obj, hash);
}

bk_status bk_filter_add_if_absent(bk_filter *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_filter_add_if_absent_hash(f, bk__hash(key, len, f->vt->seed(f->obj)));
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

uint64_t bk_filter_count(const bk_filter *f)
{
    if (!f) return 0;
    if (f->vt->count) return f->vt->count(f->obj);
    bk_stats st;
    f->vt->stats(f->obj, &st);
    return st.count;
}

bk_status bk_filter_clone(const bk_filter *f, bk_filter **out)
{
    if (!out) return BK_EINVAL;
    *out = NULL;
    if (!f) return BK_EINVAL;
    void *copy = NULL;
    bk_status s = f->vt->clone(f->obj, &copy);
    if (s != BK_OK) return s;
    s = bk__filter_make(f->vt, copy, BK_BACKING_MEMORY, f->vt->allocator(copy), out);
    if (s != BK_OK) f->vt->destroy(copy);
    return s;
}

bk_status bk_filter_compatible(const bk_filter *a, const bk_filter *b)
{
    if (!a || !b) return BK_EINVAL;
    if (a->vt != b->vt) return BK_EINCOMPAT;
    if (!a->vt->compatible) return BK_ENOTSUP;
    return a->vt->compatible(a->obj, b->obj);
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

bk_status bk_filter_mapping(const bk_filter *f, const void **addr, size_t *len)
{
    if (!f || !addr || !len || f->backing == BK_BACKING_MEMORY || !f->map || f->map_len == 0)
        return BK_EINVAL; /* (a borrowed buffer has map_len 0: the caller knows its bytes) */
    *addr = f->map;
    *len = f->map_len;
    return BK_OK;
}
